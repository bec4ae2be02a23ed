/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork_child.c - a child fork()ed after aclInit cannot use the runtime.
 *
 * CANN does not support fork after aclInit. An exporter process (forked
 * before aclInit, so it may initialise on its own) exports device memory by
 * key and allows only the parent's pid to import it. A child the parent forks
 * after its aclInit must not act as its parent: every call it makes (the
 * import, a malloc, queries, aclInit, reset and finalize) fails with
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT and a message that says why. The child
 * leaves with exit(), so the library's exit hooks run in it, and reports
 * through its exit status, which the parent checks. The parent's memory must
 * survive the child's exit (the shared machine still counts it, and a new
 * allocation does not reuse its frames); the parent then imports the key (so
 * the child was refused for being forked, not by the whitelist) and keeps
 * working. A watchdog alarm fails the program if any process hangs.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "check.h"

#define SZ ((size_t)2 << 20)
#define HELD ((size_t)64 << 20)

/* Checks that `rc` is the fork refusal and that the message says so. */
static void refused(const char *what, aclError rc)
{
    const char *msg = aclGetRecentErrMsg();

    printf("  child %s -> %d [%s]\n", what, (int)rc, msg != NULL ? msg : "(null)");
    CHECK(rc == ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(msg != NULL && strstr(msg, "forked") != NULL && strstr(msg, what) != NULL);
}

static int child(const char *key)
{
    void *p = NULL;
    int32_t dev = -1;
    size_t free_b = 0, total_b = 0;
    aclrtStream s = NULL;

    alarm(20);
    check_section("child: every call is refused");
    refused("aclrtIpcMemImportByKey", aclrtIpcMemImportByKey(&p, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT));
    CHECK(p == NULL);
    refused("aclrtMalloc", aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(p == NULL);
    refused("aclrtGetDevice", aclrtGetDevice(&dev));
    refused("aclrtGetMemInfo", aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b));
    refused("aclrtCreateStream", aclrtCreateStream(&s));
    refused("aclrtSetDevice", aclrtSetDevice(0));
    refused("aclrtResetDevice", aclrtResetDevice(0));
    refused("aclInit", aclInit(NULL));
    refused("aclFinalize", aclFinalize());
    return check_summary("fork_child (child)");
}

/* The exporter: initialises, exports SZ bytes of 0x5A for `allowed`, writes the key to `out`,
 * waits for a byte on `in`, then cleans up. Returns its exit status. */
static int exporter(int32_t allowed, int out, int in)
{
    void *dev = NULL;
    char key[128];
    char c;
    int ok;

    alarm(60);
    memset(key, 0, sizeof key);
    ok = aclInit(NULL) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS &&
         aclrtMalloc(&dev, SZ, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS &&
         aclrtMemset(dev, SZ, 0x5A, SZ) == ACL_SUCCESS &&
         aclrtIpcMemGetExportKey(dev, SZ, key, sizeof key, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT) == ACL_SUCCESS &&
         aclrtIpcMemSetImportPid(key, &allowed, 1) == ACL_SUCCESS;
    if (!ok) {
        printf("  exporter failed: %s\n", aclGetRecentErrMsg());
        key[0] = '\0';
    }
    if (write(out, key, sizeof key) != (ssize_t)sizeof key || read(in, &c, 1) != 1) {
        return 2;
    }
    if (ok) {
        ok = aclrtFree(dev) == ACL_SUCCESS && aclrtResetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS;
    }
    return ok ? 0 : 1;
}

/* 1 when the `len` device bytes at p all equal `v` (read back through `buf`, len bytes). */
static int device_holds(void *p, size_t len, unsigned char v, unsigned char *buf)
{
    memset(buf, ~v, len);
    return aclrtMemcpy(buf, len, p, len, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS && all_bytes(buf, len, v);
}

int main(void)
{
    void *imported = NULL, *held = NULL, *fresh = NULL;
    size_t free_before = 0, free_after = 0, total = 0;
    unsigned char *host = (unsigned char *)malloc(HELD);
    char key[128];
    int32_t me = 0;
    int to_parent[2], to_exporter[2];
    pid_t exp, pid;
    int st = 0;

    alarm(60);
    check_section("exporter, forked before aclInit");
    if (host == NULL || pipe(to_parent) != 0 || pipe(to_exporter) != 0) {
        return 1;
    }
    fflush(stdout);
    exp = fork();
    if (exp == 0) {
        int rc = exporter((int32_t)getppid(), to_parent[1], to_exporter[0]);
        fflush(stdout);
        _exit(rc);
    }
    CHECK(exp > 0);
    CHECK(read(to_parent[0], key, sizeof key) == (ssize_t)sizeof key);
    CHECK(key[0] != '\0');
    printf("  key %s, allowed for pid %d\n", key, (int)getpid());

    check_section("parent: aclInit");
    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("fork_child");
    }
    CHECK_OK(aclrtDeviceGetBareTgid(&me));
    CHECK(me == (int32_t)getpid());
    CHECK_OK(aclrtMalloc(&held, HELD, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(held, HELD, 0x3C, HELD));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total));

    check_section("fork after aclInit");
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        /* exit(), not _exit(): the library's exit hooks run in the child too, and must not
         * release the parent's memory in the shared machine. */
        exit(child(key));
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    printf("  child status: exited=%d code=%d signalled=%d\n", WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    check_section("parent: its memory survived the child's exit, the key was the parent's to import");
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total));
    printf("  free before the fork %zu, after the child's exit %zu\n", free_before, free_after);
    CHECK(free_after == free_before); /* the child's exit released nothing of the parent's */
    CHECK_OK(aclrtMalloc(&fresh, HELD, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemset(fresh, HELD, 0xC3, HELD));
    CHECK(device_holds(held, HELD, 0x3C, host)); /* a new allocation did not reuse its frames */
    CHECK_OK(aclrtFree(fresh));
    CHECK_OK(aclrtFree(held));
    if (CHECK_OK(aclrtIpcMemImportByKey(&imported, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT))) {
        memset(host, 0, SZ);
        CHECK_OK(aclrtMemcpy(host, SZ, imported, SZ, ACL_MEMCPY_DEVICE_TO_HOST));
        CHECK(all_bytes(host, SZ, 0x5A));
        CHECK_OK(aclrtIpcMemClose(key));
    }
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());

    check_section("exporter exits");
    CHECK(write(to_exporter[1], "q", 1) == 1);
    CHECK(waitpid(exp, &st, 0) == exp);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(host);
    return check_summary("fork_child");
}
