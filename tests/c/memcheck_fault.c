/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/memcheck_fault.c - kernel faults are contained (no ACLRS_SANITIZE needed).
 *
 * A sim kernel that touches unmapped device memory fails its launch with
 * ACL_ERROR_RT_AICORE_EXCEPTION (507015) at the next synchronisation, with an
 * aclGetRecentErrMsg naming the faulting address and the allocation it lies in
 * or next to; the process, the faulting stream and every other stream go on:
 *   - a 64 MiB overrun of a 256-byte aclrtMalloc buffer;
 *   - a read far past an allocation, reported by aclrtSynchronizeDevice;
 *   - a write to memory imported by key after aclrtIpcMemClose (in a child
 *     process forked before aclInit: an export is imported by another process);
 *   - a fault in one block of a many-block launch while another stream works.
 *
 * Needs ACLRS_TEST_KERNELS = the shared object built from
 * tests/c/kernels/memcheck_kernels.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "check.h"

#define MIB (1024u * 1024u)

typedef struct {
    volatile uint8_t *p;
    uint64_t off;
    uint64_t len;
    uint32_t value;
} PokeArgs;

typedef struct {
    volatile const uint8_t *p;
    uint64_t off;
    volatile uint8_t *out;
} PeekArgs;

typedef struct {
    volatile uint8_t *p;
    uint64_t n;
    uint32_t value;
} FillArgs;

static aclrtFuncHandle poke_f, peek_f, fill_f;

/* The message of the last failure, kept by sync_fails (aclGetRecentErrMsg is read once). */
static char last_msg[1024];

/* Runs a synchronisation that must fail with 507015 and keeps its message. */
static int sync_fails(aclError r)
{
    const char *m = aclGetRecentErrMsg();
    snprintf(last_msg, sizeof last_msg, "%s", m != NULL ? m : "");
    printf("  (returned %d: %s)\n", (int)r, last_msg);
    return r == ACL_ERROR_RT_AICORE_EXCEPTION && last_msg[0] != '\0';
}

static int msg_has(const char *needle)
{
    int ok = strstr(last_msg, needle) != NULL;
    if (!ok) {
        printf("  (message lacks \"%s\")\n", needle);
    }
    return ok;
}

/* A stream that still works: fill, copy back, compare. */
static int stream_works(aclrtStream s, unsigned value)
{
    void *d = NULL;
    unsigned char host[4096];
    FillArgs fa;
    int ok = 1;
    size_t i;

    if (aclrtMalloc(&d, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        return 0;
    }
    fa.p = (volatile uint8_t *)d;
    fa.n = sizeof host;
    fa.value = value;
    ok &= aclrtLaunchKernel(fill_f, 4, &fa, sizeof fa, s) == ACL_SUCCESS;
    ok &= aclrtSynchronizeStream(s) == ACL_SUCCESS;
    ok &= aclrtMemcpy(host, sizeof host, d, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS;
    for (i = 0; i < sizeof host; i++) {
        ok &= host[i] == (unsigned char)value;
    }
    aclrtFree(d);
    return ok;
}

/* The importer: maps the parent's buffer by key, writes it, closes it, writes again. */
static int importer(int from_parent)
{
    char key[65];
    void *imported = NULL;
    aclrtStream s = NULL;
    aclrtBinHandle bin = NULL;
    PokeArgs pa;

    if (read(from_parent, key, sizeof key) != (ssize_t)sizeof key) {
        printf("importer: no key\n");
        return 2;
    }
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s));
    if (!CHECK_OK(aclrtBinaryLoadFromFile(getenv("ACLRS_TEST_KERNELS"), NULL, &bin)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "poke", &poke_f)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "fill", &fill_f)) ||
        !CHECK_OK(aclrtIpcMemImportByKey(&imported, key, 0))) {
        return check_summary("memcheck_fault (importer)");
    }
    pa.p = (volatile uint8_t *)imported;
    pa.off = 0;
    pa.len = 64;
    pa.value = 0x5A;
    /* Mapped: the write lands in the exporter's buffer. */
    CHECK_OK(aclrtLaunchKernel(poke_f, 1, &pa, sizeof pa, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_OK(aclrtIpcMemClose(key));
    CHECK_OK(aclrtLaunchKernel(poke_f, 1, &pa, sizeof pa, s));
    CHECK(sync_fails(aclrtSynchronizeStream(s)));
    {
        char want[128];
        snprintf(want, sizeof want, "touched unmapped memory at %p", imported);
        CHECK(msg_has(want));
    }
    CHECK(stream_works(s, 0x44));
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_OK(aclFinalize());
    return check_summary("memcheck_fault (importer)");
}

int main(void)
{
    int to_child[2];
    pid_t child;
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtBinHandle bin = NULL;
    aclrtStream s1 = NULL, s2 = NULL;
    void *buf = NULL;
    char want[128];

    if (lib == NULL) {
        printf("ACLRS_TEST_KERNELS is not set\n");
        return 2;
    }
    /* The importer is forked before aclInit (a child forked after it is refused). */
    if (pipe(to_child) != 0) {
        return 2;
    }
    fflush(stdout);
    child = fork();
    if (child < 0) {
        return 2;
    }
    if (child == 0) {
        close(to_child[1]);
        exit(importer(to_child[0]));
    }
    close(to_child[0]);
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s1));
    CHECK_OK(aclrtCreateStream(&s2));
    if (!CHECK_OK(aclrtBinaryLoadFromFile(lib, NULL, &bin)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "poke", &poke_f)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "peek", &peek_f)) ||
        !CHECK_OK(aclrtBinaryGetFunction(bin, "fill", &fill_f))) {
        return check_summary("memcheck_fault");
    }

    check_section("a 64 MiB overrun of a 256-byte buffer fails the launch, not the process");
    CHECK_OK(aclrtMalloc(&buf, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    {
        PokeArgs pa;
        pa.p = (volatile uint8_t *)buf;
        pa.off = 0;
        pa.len = 64ull * MIB;
        pa.value = 0xAB;
        CHECK_OK(aclrtLaunchKernel(poke_f, 1, &pa, sizeof pa, s1));
        CHECK(sync_fails(aclrtSynchronizeStream(s1)));
        CHECK(msg_has("touched unmapped memory at 0x"));
        CHECK(msg_has("past the end of the allocation"));
        snprintf(want, sizeof want, "(device 0, base %p, size ", buf);
        CHECK(msg_has(want));
        /* The failure was reported once; the stream and the others go on. */
        CHECK_OK(aclrtSynchronizeStream(s1));
        CHECK(stream_works(s1, 0x11));
        CHECK(stream_works(s2, 0x22));
    }
    CHECK_OK(aclrtFree(buf));

    check_section("a read far from any allocation, reported by aclrtSynchronizeDevice");
    CHECK_OK(aclrtMalloc(&buf, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    {
        PeekArgs pk;
        pk.p = (volatile const uint8_t *)buf;
        pk.off = 512ull * MIB;
        pk.out = (volatile uint8_t *)buf;
        CHECK_OK(aclrtLaunchKernel(peek_f, 1, &pk, sizeof pk, s2));
        CHECK(sync_fails(aclrtSynchronizeDevice()));
        snprintf(want, sizeof want, "touched unmapped memory at %p", (void *)((char *)buf + 512ull * MIB));
        CHECK(msg_has(want));
        CHECK(msg_has("device 0"));
        CHECK_OK(aclrtSynchronizeDevice());
        CHECK(stream_works(s2, 0x33));
    }
    CHECK_OK(aclrtFree(buf));

    check_section("a write after aclrtIpcMemClose of an imported buffer (in a child process)");
    CHECK_OK(aclrtMalloc(&buf, 2 * MIB, ACL_MEM_MALLOC_HUGE_ONLY));
    {
        char key[65];
        int32_t pid = (int32_t)child;
        int status = 0;
        memset(key, 0, sizeof key);
        if (CHECK_OK(aclrtIpcMemGetExportKey(buf, 2 * MIB, key, sizeof key, 0)) &&
            CHECK_OK(aclrtIpcMemSetImportPid(key, &pid, 1))) {
            CHECK(write(to_child[1], key, sizeof key) == (ssize_t)sizeof key);
        }
        close(to_child[1]);
        CHECK(waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK_OK(aclrtIpcMemClose(key));
    }
    CHECK_OK(aclrtFree(buf));

    check_section("one faulting block of 32 fails the launch; the other stream is untouched");
    CHECK_OK(aclrtMalloc(&buf, 256, ACL_MEM_MALLOC_HUGE_FIRST));
    {
        PokeArgs pa;
        pa.p = (volatile uint8_t *)buf;
        pa.off = 1024ull * MIB;
        pa.len = 1;
        pa.value = 1;
        CHECK_OK(aclrtLaunchKernel(poke_f, 32, &pa, sizeof pa, s1));
        CHECK(stream_works(s2, 0x55));
        CHECK(sync_fails(aclrtSynchronizeStream(s1)));
        CHECK(msg_has("block 0/32"));
    }
    CHECK_OK(aclrtFree(buf));

    CHECK_OK(aclrtDestroyStream(s1));
    CHECK_OK(aclrtDestroyStream(s2));
    CHECK_OK(aclrtBinaryUnLoad(bin));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("memcheck_fault");
}
