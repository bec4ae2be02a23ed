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
 *
 * Shareable handles (VMM):
 *   palloc <MiB> <byte>      -> "ok <slot>"   aclrtMallocPhysical (2 MiB pages), reserve, map, memset
 *   hexport <slot> <flags>   -> "handle <u64>" aclrtMemExportToShareableHandle (or "rc <code>")
 *   hallow <u64> <pid>       -> "rc <code>"  aclrtMemSetPidToShareableHandle
 *   himport <u64> <MiB>      -> "ok <slot>"  aclrtMemImportFromShareableHandle, reserve, map
 *                               (or "rc <code>")
 *   hfree <slot>             -> "rc <code>"  aclrtUnmapMem, aclrtFreePhysical, aclrtReleaseMemAddress
 *   quit                     -> exits 0 after aclrtResetDevice and aclFinalize
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

#define SLOTS 16

static void *slot_ptr[SLOTS];
static size_t slot_len[SLOTS];
static aclrtDrvMemHandle slot_handle[SLOTS];
static int slots_used = 0;

static int add_slot(void *p, size_t len)
{
    if (slots_used == SLOTS) {
        return -1;
    }
    slot_ptr[slots_used] = p;
    slot_len[slots_used] = len;
    slot_handle[slots_used] = NULL;
    return slots_used++;
}

/* Reserves `len` bytes of VA and maps `h` there; on failure nothing stays reserved. */
static aclError map_handle(aclrtDrvMemHandle h, size_t len, void **va)
{
    aclError rc = aclrtReserveMemAddress(va, len, 0, NULL, 0);
    if (rc != ACL_SUCCESS) {
        return rc;
    }
    rc = aclrtMapMem(*va, len, 0, h, 0);
    if (rc != ACL_SUCCESS) {
        (void)aclrtReleaseMemAddress(*va);
    }
    return rc;
}

static aclrtPhysicalMemProp device_prop(void)
{
    aclrtPhysicalMemProp p;
    memset(&p, 0, sizeof p);
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
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
        unsigned long long sh_arg = 0;
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
        } else if (strcmp(cmd, "palloc") == 0 && sscanf(line, "%*s %u %u", &a, &b) == 2) {
            aclrtPhysicalMemProp prop = device_prop();
            aclrtDrvMemHandle h = NULL;
            void *va = NULL;
            size_t len = (size_t)a << 20;
            aclError rc = aclrtMallocPhysical(&h, len, &prop, 0);
            if (rc == ACL_SUCCESS) {
                rc = map_handle(h, len, &va);
                if (rc != ACL_SUCCESS) {
                    (void)aclrtFreePhysical(h);
                }
            }
            if (rc == ACL_SUCCESS) {
                rc = aclrtMemset(va, len, (int32_t)b, len);
            }
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                int slot = add_slot(va, len);
                slot_handle[slot] = h;
                printf("ok %d\n", slot);
            }
        } else if (strcmp(cmd, "hexport") == 0 && sscanf(line, "%*s %u %u", &a, &b) == 2) {
            uint64_t sh = 0;
            aclError rc = aclrtMemExportToShareableHandle(slot_handle[a], ACL_MEM_HANDLE_TYPE_NONE, b, &sh);
            if (rc == ACL_SUCCESS) {
                printf("handle %llu\n", (unsigned long long)sh);
            } else {
                printf("rc %d\n", rc);
            }
        } else if (strcmp(cmd, "hallow") == 0 && sscanf(line, "%*s %llu %u", &sh_arg, &a) == 2) {
            int32_t pid = (int32_t)a;
            printf("rc %d\n", aclrtMemSetPidToShareableHandle((uint64_t)sh_arg, &pid, 1));
        } else if (strcmp(cmd, "himport") == 0 && sscanf(line, "%*s %llu %u", &sh_arg, &a) == 2) {
            aclrtDrvMemHandle h = NULL;
            void *va = NULL;
            size_t len = (size_t)a << 20;
            aclError rc = aclrtMemImportFromShareableHandle((uint64_t)sh_arg, 0, &h);
            if (rc == ACL_SUCCESS) {
                rc = map_handle(h, len, &va);
                if (rc != ACL_SUCCESS) {
                    (void)aclrtFreePhysical(h);
                }
            }
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                int slot = add_slot(va, len);
                slot_handle[slot] = h;
                printf("ok %d\n", slot);
            }
        } else if (strcmp(cmd, "hfree") == 0 && sscanf(line, "%*s %u", &a) == 1) {
            aclError rc = aclrtUnmapMem(slot_ptr[a]);
            if (rc == ACL_SUCCESS) {
                rc = aclrtFreePhysical(slot_handle[a]);
            }
            if (rc == ACL_SUCCESS) {
                rc = aclrtReleaseMemAddress(slot_ptr[a]);
            }
            printf("rc %d\n", rc);
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
