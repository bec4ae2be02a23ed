/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/mem_agent.c - a device-memory test agent: a process on device 0 of a shared software
 * NPU that obeys one command per line on standard input and answers one line on standard
 * output, so a test can drive several real processes allocating on one machine.
 *
 *   pid                       -> "pid <bare tgid>"
 *   malloc <bytes> <policy>   -> "ok <slot>" aclrtMalloc (policy as the aclrtMemMallocPolicy
 *                                number), or "rc <code>"
 *   fill <slot> <byte>        -> "rc <code>" aclrtMemset of the whole slot
 *   check <slot> <byte>       -> "rc 0" when every byte is <byte>, "bad <n>" with the number of
 *                                other bytes, or "rc <code>"
 *   free <slot>               -> "rc <code>" aclrtFree
 *   mem                       -> "free <bytes>" aclrtGetMemInfo(ACL_HBM_MEM)
 *   churn <ops> <seed>        -> allocates and frees at random (at most 24 live, 4 KiB to 3 MiB,
 *                                HUGE_FIRST / HUGE_ONLY / NORMAL_ONLY), stamping each
 *                                allocation's first and last 4 KiB with its own byte and
 *                                checking them before freeing it; prints "tick <n>" every 25
 *                                operations and finally "done <failures>"
 *   fillall <byte>            -> "ok <n>": allocates 64 MiB HUGE_ONLY, then NORMAL_ONLY, until
 *                                the device is full (207001), filling each with <byte>
 *   freeall                   -> "rc <first failing code or 0>" frees every live allocation,
 *                                then aclrtSynchronizeDevice (which gives back kept spares)
 *   quit                      -> exits 0 after aclrtResetDevice and aclFinalize
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

#define SLOTS 64
#define STAMP 4096

static void *slot_ptr[SLOTS];
static size_t slot_len[SLOTS];
static unsigned char slot_tag[SLOTS];

static int add_slot(void *p, size_t len)
{
    for (int i = 0; i < SLOTS; i++) {
        if (slot_ptr[i] == NULL) {
            slot_ptr[i] = p;
            slot_len[i] = len;
            return i;
        }
    }
    return -1;
}

/* Counts the bytes of [p, p + len) that are not `value`; -1 when the copy fails. */
static long count_other(const void *p, size_t len, unsigned char value)
{
    unsigned char *buf = malloc(len);
    long other = 0;
    if (buf == NULL || aclrtMemcpy(buf, len, p, len, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
        free(buf);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        other += buf[i] != value;
    }
    free(buf);
    return other;
}

static unsigned long long rng_state;

static unsigned next_rand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng_state >> 33);
}

static int stamp_ok(int s)
{
    size_t n = slot_len[s] < STAMP ? slot_len[s] : STAMP;
    const unsigned char *p = slot_ptr[s];
    return count_other(p, n, slot_tag[s]) == 0 && count_other(p + slot_len[s] - n, n, slot_tag[s]) == 0;
}

static int churn(unsigned ops, unsigned seed)
{
    static const size_t sizes[] = {4096, 100 << 10, 128 << 10, 1 << 20, 2 << 20, 3 << 20};
    static const aclrtMemMallocPolicy policies[] = {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY,
                                                    ACL_MEM_MALLOC_NORMAL_ONLY};
    int failures = 0, live = 0;
    rng_state = seed;
    for (unsigned op = 1; op <= ops; op++) {
        int s = (int)(next_rand() % 24);
        if (slot_ptr[s] == NULL) {
            size_t len = sizes[next_rand() % 6];
            void *p = NULL;
            aclError rc = aclrtMalloc(&p, len, policies[next_rand() % 3]);
            if (rc == ACL_ERROR_RT_MEMORY_ALLOCATION) {
                /* Processes share 1 GiB: a HUGE_ONLY request may find no free 2 MiB page. */
            } else if (rc != ACL_SUCCESS) {
                fprintf(stderr, "churn: aclrtMalloc(%zu) -> %d: %s\n", len, rc, aclGetRecentErrMsg());
                failures++;
            } else {
                slot_ptr[s] = p;
                slot_len[s] = len;
                slot_tag[s] = (unsigned char)(next_rand() | 1);
                size_t n = len < STAMP ? len : STAMP;
                if (aclrtMemset(p, n, slot_tag[s], n) != ACL_SUCCESS ||
                    aclrtMemset((unsigned char *)p + len - n, n, slot_tag[s], n) != ACL_SUCCESS) {
                    failures++;
                }
                live++;
            }
        } else {
            if (!stamp_ok(s)) {
                fprintf(stderr, "churn: slot %d lost its stamp\n", s);
                failures++;
            }
            if (aclrtFree(slot_ptr[s]) != ACL_SUCCESS) {
                failures++;
            }
            slot_ptr[s] = NULL;
            live--;
        }
        if (op % 25 == 0) {
            printf("tick %u\n", op);
        }
    }
    return failures;
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
        char cmd[32] = {0};
        unsigned long long a = 0, b = 0;
        if (sscanf(line, "%31s", cmd) != 1) {
            continue;
        }
        if (strcmp(cmd, "pid") == 0) {
            int32_t pid = 0;
            aclError rc = aclrtDeviceGetBareTgid(&pid);
            printf(rc == ACL_SUCCESS ? "pid %d\n" : "rc %d\n", rc == ACL_SUCCESS ? pid : rc);
        } else if (strcmp(cmd, "malloc") == 0 && sscanf(line, "%*s %llu %llu", &a, &b) == 2) {
            void *p = NULL;
            aclError rc = aclrtMalloc(&p, (size_t)a, (aclrtMemMallocPolicy)b);
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                printf("ok %d\n", add_slot(p, (size_t)a));
            }
        } else if (strcmp(cmd, "fill") == 0 && sscanf(line, "%*s %llu %llu", &a, &b) == 2 && a < SLOTS) {
            printf("rc %d\n", aclrtMemset(slot_ptr[a], slot_len[a], (int32_t)b, slot_len[a]));
        } else if (strcmp(cmd, "check") == 0 && sscanf(line, "%*s %llu %llu", &a, &b) == 2 && a < SLOTS) {
            long other = count_other(slot_ptr[a], slot_len[a], (unsigned char)b);
            if (other == 0) {
                printf("rc 0\n");
            } else if (other > 0) {
                printf("bad %ld\n", other);
            } else {
                printf("rc -1\n");
            }
        } else if (strcmp(cmd, "free") == 0 && sscanf(line, "%*s %llu", &a) == 1 && a < SLOTS) {
            aclError rc = aclrtFree(slot_ptr[a]);
            slot_ptr[a] = NULL;
            printf("rc %d\n", rc);
        } else if (strcmp(cmd, "mem") == 0) {
            size_t free_b = 0, total = 0;
            aclError rc = aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total);
            if (rc != ACL_SUCCESS) {
                printf("rc %d\n", rc);
            } else {
                printf("free %zu\n", free_b);
            }
        } else if (strcmp(cmd, "churn") == 0 && sscanf(line, "%*s %llu %llu", &a, &b) == 2) {
            printf("done %d\n", churn((unsigned)a, (unsigned)b));
        } else if (strcmp(cmd, "fillall") == 0 && sscanf(line, "%*s %llu", &a) == 1) {
            static const aclrtMemMallocPolicy order[] = {ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY};
            size_t len = 64u << 20;
            int n = 0;
            aclError rc = ACL_SUCCESS;
            for (int k = 0; k < 2 && rc == ACL_SUCCESS; k++) {
                for (;;) {
                    void *p = NULL;
                    aclError got = aclrtMalloc(&p, len, order[k]);
                    if (got == ACL_ERROR_RT_MEMORY_ALLOCATION) {
                        break;
                    }
                    int s = got == ACL_SUCCESS ? add_slot(p, len) : -1;
                    if (s < 0) {
                        rc = got != ACL_SUCCESS ? got : -1;
                        break;
                    }
                    rc = aclrtMemset(p, len, (int32_t)a, len);
                    if (rc != ACL_SUCCESS) {
                        break;
                    }
                    n++;
                }
            }
            if (rc == ACL_SUCCESS) {
                printf("ok %d\n", n);
            } else {
                printf("rc %d\n", rc);
            }
        } else if (strcmp(cmd, "freeall") == 0) {
            aclError first = ACL_SUCCESS;
            for (int i = 0; i < SLOTS; i++) {
                if (slot_ptr[i] != NULL) {
                    aclError rc = aclrtFree(slot_ptr[i]);
                    if (first == ACL_SUCCESS) {
                        first = rc;
                    }
                    slot_ptr[i] = NULL;
                }
            }
            /* What the allocator keeps for reuse (a spare slab chunk per class, an empty top
             * segment) is this process's until a synchronize or aclrtGetMemInfo gives it back:
             * give it back, so other processes see everything freed. */
            aclError rc = aclrtSynchronizeDevice();
            if (first == ACL_SUCCESS) {
                first = rc;
            }
            printf("rc %d\n", first);
        } else if (strcmp(cmd, "quit") == 0) {
            break;
        } else {
            printf("unknown command\n");
        }
    }
    if (aclrtResetDevice(0) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS) {
        return 1;
    }
    return 0;
}
