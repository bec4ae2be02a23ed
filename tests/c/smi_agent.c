/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/smi_agent.c - a process on device 0 of a shared software NPU for the aclrs-smi
 * tests. It obeys one command per line on standard input and answers one line:
 *
 *   pid                  -> "pid <bare tgid>"
 *   alloc <MiB>          -> "ok <slot>"  aclrtMalloc (HUGE_FIRST), or "rc <code>"
 *   pool <MiB>           -> "ok <slot>"  aclrtMemPoolMallocAsync from this process's pool
 *                           (created on first use, 256 MiB at most) on its stream, then a
 *                           stream synchronize; or "rc <code>"
 *   export <slot>        -> "key <key>"  aclrtIpcMemGetExportKey (whitelist on), or "rc <code>"
 *   allow <key> <pid>    -> "rc <code>"  aclrtIpcMemSetImportPid
 *   import <key> <MiB>   -> "ok <slot>"  aclrtIpcMemImportByKey, or "rc <code>"
 *   mem                  -> "free <bytes>" aclrtGetMemInfo(ACL_HBM_MEM) (also reaps the dead)
 *   quit                 -> exits 0 after aclrtResetDevice and aclFinalize
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

#define SLOTS 16

static void *slots[SLOTS];
static size_t lens[SLOTS];
static int used = 0;

static int add(void *p, size_t len)
{
    if (used == SLOTS) {
        return -1;
    }
    slots[used] = p;
    lens[used] = len;
    return used++;
}

int main(void)
{
    char line[256];
    aclrtStream stream = NULL;
    aclrtMemPool pool = NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
        aclrtCreateStream(&stream) != ACL_SUCCESS) {
        printf("init failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    printf("ready\n");
    while (fgets(line, sizeof line, stdin) != NULL) {
        char cmd[32] = {0}, key[80] = {0};
        unsigned a = 0;
        void *p = NULL;
        aclError rc;
        if (sscanf(line, "%31s", cmd) != 1) {
            continue;
        }
        if (strcmp(cmd, "pid") == 0) {
            int32_t pid = 0;
            rc = aclrtDeviceGetBareTgid(&pid);
            printf(rc == ACL_SUCCESS ? "pid %d\n" : "rc %d\n", rc == ACL_SUCCESS ? pid : rc);
        } else if (strcmp(cmd, "alloc") == 0 && sscanf(line, "%*s %u", &a) == 1) {
            rc = aclrtMalloc(&p, (size_t)a << 20, ACL_MEM_MALLOC_HUGE_FIRST);
            printf(rc == ACL_SUCCESS ? "ok %d\n" : "rc %d\n", rc == ACL_SUCCESS ? add(p, (size_t)a << 20) : rc);
        } else if (strcmp(cmd, "pool") == 0 && sscanf(line, "%*s %u", &a) == 1) {
            rc = ACL_SUCCESS;
            if (pool == NULL) {
                aclrtMemPoolProps props;
                memset(&props, 0, sizeof props);
                props.allocType = ACL_MEM_ALLOCATION_TYPE_PINNED;
                props.handleType = ACL_MEM_HANDLE_TYPE_NONE;
                props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
                props.location.id = 0;
                props.maxSize = (size_t)256 << 20;
                rc = aclrtMemPoolCreate(&pool, &props);
            }
            if (rc == ACL_SUCCESS) {
                rc = aclrtMemPoolMallocAsync(&p, (size_t)a << 20, pool, stream);
            }
            if (rc == ACL_SUCCESS) {
                rc = aclrtSynchronizeStream(stream);
            }
            printf(rc == ACL_SUCCESS ? "ok %d\n" : "rc %d\n", rc == ACL_SUCCESS ? add(p, (size_t)a << 20) : rc);
        } else if (strcmp(cmd, "export") == 0 && sscanf(line, "%*s %u", &a) == 1 && a < (unsigned)used) {
            char k[65] = {0};
            rc = aclrtIpcMemGetExportKey(slots[a], lens[a], k, sizeof k, 0);
            if (rc == ACL_SUCCESS) {
                printf("key %s\n", k);
            } else {
                printf("rc %d\n", rc);
            }
        } else if (strcmp(cmd, "allow") == 0 && sscanf(line, "%*s %79s %u", key, &a) == 2) {
            int32_t pid = (int32_t)a;
            printf("rc %d\n", aclrtIpcMemSetImportPid(key, &pid, 1));
        } else if (strcmp(cmd, "import") == 0 && sscanf(line, "%*s %79s %u", key, &a) == 2) {
            rc = aclrtIpcMemImportByKey(&p, key, ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT);
            printf(rc == ACL_SUCCESS ? "ok %d\n" : "rc %d\n", rc == ACL_SUCCESS ? add(p, (size_t)a << 20) : rc);
        } else if (strcmp(cmd, "mem") == 0) {
            size_t fr = 0, total = 0;
            rc = aclrtGetMemInfo(ACL_HBM_MEM, &fr, &total);
            if (rc == ACL_SUCCESS) {
                printf("free %zu\n", fr);
            } else {
                printf("rc %d\n", rc);
            }
        } else if (strcmp(cmd, "quit") == 0) {
            break;
        } else {
            printf("unknown command\n");
        }
    }
    (void)aclrtDestroyStream(stream);
    (void)aclrtResetDevice(0);
    (void)aclFinalize();
    return 0;
}
