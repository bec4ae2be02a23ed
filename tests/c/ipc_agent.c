/* An IPC test agent: a process on device 0 of a shared software NPU that obeys one command per
 * line on standard input and answers one line on standard output, so a test can drive several
 * real processes through an IPC scenario step by step.
 *
 *   pid                      -> "pid <bare tgid>"
 *   alloc <MiB> <byte>       -> "ok <slot>"   aclrtMalloc + aclrtMemset to <byte>
 *   export <slot> <flags>    -> "key <key>"  aclrtIpcMemGetExportKey (or "rc <code>")
 *   allow <key> <pid>        -> "rc <code>"  aclrtIpcMemSetImportPid
 *   import <key> <MiB>       -> "ok <slot>"  aclrtIpcMemImportByKey (or "rc <code>")
 *   check <slot> <byte>      -> "rc 0" when every byte is <byte>, else "rc <code>" / "bad"
 *   fill <slot> <byte>       -> "rc <code>"  aclrtMemset
 *   close <key>              -> "rc <code>"  aclrtIpcMemClose
 *   free <slot>              -> "rc <code>"  aclrtFree
 *   mem                      -> "free <bytes>" (aclrtGetMemInfo, ACL_HBM_MEM)
 *   quit                     -> exits 0 after aclrtResetDevice and aclFinalize
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

#define SLOTS 16

static void *slot_ptr[SLOTS];
static size_t slot_len[SLOTS];
static int slots_used = 0;

static int add_slot(void *p, size_t len)
{
    if (slots_used == SLOTS) {
        return -1;
    }
    slot_ptr[slots_used] = p;
    slot_len[slots_used] = len;
    return slots_used++;
}

static int check_bytes(int slot, unsigned value)
{
    size_t len = slot_len[slot];
    unsigned char *buf = malloc(len);
    if (buf == NULL) {
        return -1;
    }
    aclError rc = aclrtMemcpy(buf, len, slot_ptr[slot], len, ACL_MEMCPY_DEVICE_TO_HOST);
    if (rc != ACL_SUCCESS) {
        free(buf);
        return rc;
    }
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != (unsigned char)value) {
            free(buf);
            return -2;
        }
    }
    free(buf);
    return 0;
}

int main(void)
{
    char line[256];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        printf("init failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    printf("ready\n");
    while (fgets(line, sizeof line, stdin) != NULL) {
        char cmd[32] = {0}, key[80] = {0};
        unsigned a = 0, b = 0;
        if (sscanf(line, "%31s", cmd) != 1) {
            continue;
        }
        if (strcmp(cmd, "pid") == 0) {
            int32_t pid = 0;
            aclError rc = aclrtDeviceGetBareTgid(&pid);
            printf(rc == ACL_SUCCESS ? "pid %d\n" : "rc %d\n", rc == ACL_SUCCESS ? pid : rc);
        } else if (strcmp(cmd, "alloc") == 0 && sscanf(line, "%*s %u %u", &a, &b) == 2) {
            void *p = NULL;
            size_t len = (size_t)a << 20;
            aclError rc = aclrtMalloc(&p, len, ACL_MEM_MALLOC_HUGE_FIRST);
            if (rc == ACL_SUCCESS) {
                rc = aclrtMemset(p, len, (int32_t)b, len);
            }
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                printf("ok %d\n", add_slot(p, len));
            }
        } else if (strcmp(cmd, "export") == 0 && sscanf(line, "%*s %u %u", &a, &b) == 2) {
            char k[65] = {0};
            aclError rc = aclrtIpcMemGetExportKey(slot_ptr[a], slot_len[a], k, sizeof k, b);
            if (rc == ACL_SUCCESS) {
                printf("key %s\n", k);
            } else {
                printf("rc %d\n", rc);
            }
        } else if (strcmp(cmd, "allow") == 0 && sscanf(line, "%*s %79s %u", key, &a) == 2) {
            int32_t pid = (int32_t)a;
            printf("rc %d\n", aclrtIpcMemSetImportPid(key, &pid, 1));
        } else if (strcmp(cmd, "import") == 0 && sscanf(line, "%*s %79s %u", key, &a) == 2) {
            void *p = NULL;
            aclError rc = aclrtIpcMemImportByKey(&p, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT);
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                printf("ok %d\n", add_slot(p, (size_t)a << 20));
            }
        } else if (strcmp(cmd, "check") == 0 && sscanf(line, "%*s %u %u", &a, &b) == 2) {
            int rc = check_bytes((int)a, b);
            if (rc == -2) {
                printf("bad\n");
            } else {
                printf("rc %d\n", rc);
            }
        } else if (strcmp(cmd, "fill") == 0 && sscanf(line, "%*s %u %u", &a, &b) == 2) {
            printf("rc %d\n", aclrtMemset(slot_ptr[a], slot_len[a], (int32_t)b, slot_len[a]));
        } else if (strcmp(cmd, "close") == 0 && sscanf(line, "%*s %79s", key) == 1) {
            printf("rc %d\n", aclrtIpcMemClose(key));
        } else if (strcmp(cmd, "free") == 0 && sscanf(line, "%*s %u", &a) == 1) {
            printf("rc %d\n", aclrtFree(slot_ptr[a]));
        } else if (strcmp(cmd, "mem") == 0) {
            size_t free_b = 0, total = 0;
            aclError rc = aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total);
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                printf("free %zu\n", free_b);
            }
        } else if (strcmp(cmd, "quit") == 0) {
            break;
        } else {
            printf("unknown command: %s", line);
        }
    }
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
