/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/pool_bench.c - the stream-ordered pool benchmark, through the C ABI as a user calls it.
 *
 *   pool_bench contrast [N]      the seed's contrast: N kernel launches, each with a temporary
 *                                buffer, done with aclrtMalloc / synchronize / aclrtFree versus
 *                                aclrtMemPoolMallocAsync / aclrtMemPoolFreeAsync
 *   pool_bench pairs [N]         host cost of one MallocAsync + FreeAsync pair at steady state,
 *                                against one aclrtMalloc + aclrtFree pair measured in the same run
 *   pool_bench live [N]          the same pair with 0 and with 10,000 other live pool blocks (of
 *                                other pools of the device, and of its own), in one run
 *   pool_bench traces FILE...    replays of allocation traces through a pool: peak reserved over
 *                                peak live bytes, and the host time per event of a second replay
 *                                from memory (no reserved-bytes queries)
 *
 * Needs ACLRS_TEST_KERNELS (tests/c/kernels/pool_kernels.c built as a shared object) for
 * `contrast`. Prints Markdown tables. Asserts nothing about time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"

#define MIB ((size_t)1 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static aclrtMemPool new_pool(size_t max)
{
    aclrtMemPoolProps props;
    aclrtMemPool pool = NULL;
    memset(&props, 0, sizeof props);
    props.allocType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    props.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    props.maxSize = max;
    return aclrtMemPoolCreate(&pool, &props) == ACL_SUCCESS ? pool : NULL;
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        aclError rc_ = (call);                                                                     \
        if (rc_ != ACL_SUCCESS) {                                                                  \
            const char *m_ = aclGetRecentErrMsg();                                                 \
            fprintf(stderr, "%s:%d: %s = %d: %s\n", __FILE__, __LINE__, #call, (int)rc_,           \
                    m_ ? m_ : "");                                                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

typedef struct {
    uint32_t *p;
    uint64_t n;
    uint32_t value;
    uint32_t ms;
} FillArgs;

static int contrast(int n)
{
    const char *lib = getenv("ACLRS_TEST_KERNELS");
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle fill;
    aclrtStream s = NULL;
    aclrtMemPool pool = new_pool(256 * MIB);
    const size_t SZ = 64 * 1024;
    double t0, sync_s, pool_s;
    int i;

    if (lib == NULL || pool == NULL) {
        fprintf(stderr, "contrast: set ACLRS_TEST_KERNELS; pools need the A2 profile\n");
        return 1;
    }
    TRY(aclrtBinaryLoadFromFile(lib, NULL, &bin));
    TRY(aclrtBinaryGetFunction(bin, "slow_fill", &fill));
    TRY(aclrtCreateStream(&s));
    /* Warm both paths. */
    for (i = 0; i < 16; i++) {
        void *p = NULL;
        TRY(aclrtMalloc(&p, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
        TRY(aclrtFree(p));
        TRY(aclrtMemPoolMallocAsync(&p, SZ, pool, s));
        TRY(aclrtMemPoolFreeAsync(p, s));
    }
    TRY(aclrtSynchronizeStream(s));

    t0 = now_s();
    for (i = 0; i < n; i++) {
        void *p = NULL;
        FillArgs a;
        TRY(aclrtMalloc(&p, SZ, ACL_MEM_MALLOC_HUGE_FIRST));
        a.p = p;
        a.n = SZ / 4;
        a.value = (uint32_t)i;
        a.ms = 0;
        TRY(aclrtLaunchKernelV2(fill, 1, &a, sizeof a, NULL, s));
        TRY(aclrtSynchronizeStream(s)); /* the buffer may only be freed once the kernel is done */
        TRY(aclrtFree(p));
    }
    sync_s = now_s() - t0;

    t0 = now_s();
    for (i = 0; i < n; i++) {
        void *p = NULL;
        FillArgs a;
        TRY(aclrtMemPoolMallocAsync(&p, SZ, pool, s));
        a.p = p;
        a.n = SZ / 4;
        a.value = (uint32_t)i;
        a.ms = 0;
        TRY(aclrtLaunchKernelV2(fill, 1, &a, sizeof a, NULL, s));
        TRY(aclrtMemPoolFreeAsync(p, s)); /* in stream order: no synchronisation */
    }
    TRY(aclrtSynchronizeStream(s));
    pool_s = now_s() - t0;

    printf("### The seed's contrast: %d kernel launches, each with a 64 KiB temporary buffer\n\n", n);
    printf("| way | total ms | us per launch | speedup |\n|---|---|---|---|\n");
    printf("| aclrtMalloc, launch, aclrtSynchronizeStream, aclrtFree | %.1f | %.2f | 1.00x |\n", sync_s * 1e3,
           sync_s * 1e6 / n);
    printf("| aclrtMemPoolMallocAsync, launch, aclrtMemPoolFreeAsync | %.1f | %.2f | %.2fx |\n\n", pool_s * 1e3,
           pool_s * 1e6 / n, sync_s / pool_s);
    TRY(aclrtMemPoolDestroy(pool));
    TRY(aclrtDestroyStream(s));
    TRY(aclrtBinaryUnLoad(bin));
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int pairs(int n)
{
    enum { ROUNDS = 15 };
    aclrtStream s = NULL;
    aclrtMemPool pool = new_pool(256 * MIB);
    double pool_ns[ROUNDS], plain_ns[ROUNDS];
    int r, i;

    if (pool == NULL) {
        fprintf(stderr, "pairs: pools need the A2 profile\n");
        return 1;
    }
    TRY(aclrtCreateStream(&s));
    for (r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (i = 0; i < n; i++) {
            void *p = NULL;
            TRY(aclrtMemPoolMallocAsync(&p, 4096, pool, s));
            TRY(aclrtMemPoolFreeAsync(p, s));
        }
        pool_ns[r] = (now_s() - t0) * 1e9 / n;
        t0 = now_s();
        for (i = 0; i < n / 10; i++) {
            void *p = NULL;
            TRY(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
            TRY(aclrtFree(p));
        }
        plain_ns[r] = (now_s() - t0) * 1e9 / (n / 10);
    }
    TRY(aclrtSynchronizeStream(s));
    qsort(pool_ns, ROUNDS, sizeof(double), cmp_double);
    qsort(plain_ns, ROUNDS, sizeof(double), cmp_double);
    printf("### Host cost per allocation + free pair (4 KiB, one stream, steady state; median of %d rounds)\n\n",
           ROUNDS);
    printf("| pair | median ns | spread ns | target |\n|---|---|---|---|\n");
    printf("| aclrtMemPoolMallocAsync + aclrtMemPoolFreeAsync | %.0f | %.0f-%.0f | <= 100 (CUDA: ~1000) |\n",
           pool_ns[ROUNDS / 2], pool_ns[0], pool_ns[ROUNDS - 1]);
    printf("| aclrtMalloc + aclrtFree (same run) | %.0f | %.0f-%.0f | - |\n\n", plain_ns[ROUNDS / 2], plain_ns[0],
           plain_ns[ROUNDS - 1]);
    TRY(aclrtMemPoolDestroy(pool));
    TRY(aclrtDestroyStream(s));
    return 0;
}

/* Median ns of one MallocAsync + FreeAsync pair of 4 KiB on `pool`, over `rounds` rounds of n. */
static double pair_median(aclrtMemPool pool, aclrtStream s, int n, int rounds, double *lo, double *hi)
{
    double ns[32];
    int r, i;
    for (r = 0; r < rounds; r++) {
        double t0 = now_s();
        for (i = 0; i < n; i++) {
            void *p = NULL;
            if (aclrtMemPoolMallocAsync(&p, 4096, pool, s) != ACL_SUCCESS || aclrtMemPoolFreeAsync(p, s) != ACL_SUCCESS) {
                return -1.0;
            }
        }
        ns[r] = (now_s() - t0) * 1e9 / n;
    }
    qsort(ns, (size_t)rounds, sizeof(double), cmp_double);
    *lo = ns[0];
    *hi = ns[rounds - 1];
    return ns[rounds / 2];
}

static int live(int n)
{
    enum { ROUNDS = 15, OTHERS = 10000, POOLS = 8 };
    aclrtStream s = NULL;
    aclrtMemPool pool = new_pool(256 * MIB), others[POOLS];
    void **blocks = calloc(OTHERS, sizeof(void *));
    double lo0, hi0, lo1, hi1, none, many;
    int i;

    if (pool == NULL || blocks == NULL) {
        fprintf(stderr, "live: pools need the A2 profile\n");
        return 1;
    }
    TRY(aclrtCreateStream(&s));
    for (i = 0; i < POOLS; i++) {
        others[i] = new_pool(256 * MIB);
        if (others[i] == NULL) {
            return 1;
        }
    }
    none = pair_median(pool, s, n, ROUNDS, &lo0, &hi0);
    /* 10,000 other live blocks: most in other pools of the device, some in this pool. */
    for (i = 0; i < OTHERS; i++) {
        aclrtMemPool into = (i % 10 == 0) ? pool : others[i % POOLS];
        TRY(aclrtMemPoolMallocAsync(&blocks[i], 4096, into, s));
    }
    many = pair_median(pool, s, n, ROUNDS, &lo1, &hi1);
    if (none < 0 || many < 0) {
        fprintf(stderr, "live: a pair failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    printf("### Pool pair with other live pool blocks (4 KiB, one stream, C ABI; median of %d rounds)\n\n", ROUNDS);
    printf("| other live blocks | median ns | spread ns | vs 0 live | target |\n|---|---|---|---|---|\n");
    printf("| 0 | %.0f | %.0f-%.0f | 1.00× | - |\n", none, lo0, hi0);
    printf("| %d | %.0f | %.0f-%.0f | %.2f× | <= 1.2× |\n\n", OTHERS, many, lo1, hi1, many / none);
    for (i = 0; i < OTHERS; i++) {
        TRY(aclrtMemPoolFreeAsync(blocks[i], s));
    }
    TRY(aclrtSynchronizeStream(s));
    for (i = 0; i < POOLS; i++) {
        TRY(aclrtMemPoolDestroy(others[i]));
    }
    TRY(aclrtMemPoolDestroy(pool));
    TRY(aclrtDestroyStream(s));
    free(blocks);
    return 0;
}

static int replay(const char *path, double *ratio, size_t *peak_live_out, size_t *peak_res_out, long *events)
{
    FILE *f = fopen(path, "r");
    char line[256];
    void **ptrs = NULL;
    size_t *sizes = NULL, cap = 0, live = 0, peak_live = 0, peak_res = 0;
    aclrtStream s = NULL;
    aclrtMemPool pool = new_pool(0);

    *events = 0;
    if (f == NULL || pool == NULL) {
        if (f) {
            fclose(f);
        }
        return 1;
    }
    TRY(aclrtCreateStream(&s));
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long id, bytes;
        if (line[0] == 'a' && sscanf(line, "a %lu %lu", &id, &bytes) == 2) {
            uint64_t res = 0;
            if (id >= cap) {
                size_t ncap = (id + 1) * 2;
                ptrs = realloc(ptrs, ncap * sizeof *ptrs);
                sizes = realloc(sizes, ncap * sizeof *sizes);
                memset(ptrs + cap, 0, (ncap - cap) * sizeof *ptrs);
                cap = ncap;
            }
            TRY(aclrtMemPoolMallocAsync(&ptrs[id], bytes, pool, s));
            sizes[id] = bytes;
            live += bytes;
            peak_live = live > peak_live ? live : peak_live;
            TRY(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT, &res));
            peak_res = res > peak_res ? res : peak_res;
            (*events)++;
        } else if (line[0] == 'f' && sscanf(line, "f %lu", &id) == 1 && id < cap && ptrs[id] != NULL) {
            TRY(aclrtMemPoolFreeAsync(ptrs[id], s));
            ptrs[id] = NULL;
            live -= sizes[id];
            (*events)++;
        }
    }
    fclose(f);
    /* Blocks the trace never freed: free them, so that destroying the pool gives everything back
     * (a destroyed pool keeps blocks still allocated valid until they are freed). */
    {
        size_t i;
        for (i = 0; i < cap; i++) {
            if (ptrs[i] != NULL) {
                TRY(aclrtMemPoolFreeAsync(ptrs[i], s));
            }
        }
    }
    TRY(aclrtSynchronizeStream(s));
    TRY(aclrtMemPoolDestroy(pool));
    TRY(aclrtDestroyStream(s));
    free(ptrs);
    free(sizes);
    *ratio = (double)peak_res / (double)peak_live;
    *peak_live_out = peak_live;
    *peak_res_out = peak_res;
    return 0;
}

/* Replays the trace at `path` again on a fresh pool, from memory and without the reserved-bytes
 * queries, and reports the host time per event (MallocAsync or FreeAsync). */
static int timed_replay(const char *path, double *ns_per_event)
{
    FILE *f = fopen(path, "r");
    char line[256];
    unsigned long *ev_id = NULL, *ev_bytes = NULL;
    char *ev_op = NULL;
    void **ptrs = NULL;
    size_t n = 0, cap = 0, ids = 0, i;
    aclrtStream s = NULL;
    aclrtMemPool pool;
    double t0;

    if (f == NULL) {
        return 1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long id = 0, bytes = 0;
        char op = line[0];
        if (!((op == 'a' && sscanf(line, "a %lu %lu", &id, &bytes) == 2) ||
              (op == 'f' && sscanf(line, "f %lu", &id) == 1))) {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            ev_id = realloc(ev_id, cap * sizeof *ev_id);
            ev_bytes = realloc(ev_bytes, cap * sizeof *ev_bytes);
            ev_op = realloc(ev_op, cap);
        }
        ev_op[n] = op;
        ev_id[n] = id;
        ev_bytes[n] = bytes;
        ids = id + 1 > ids ? id + 1 : ids;
        n++;
    }
    fclose(f);
    ptrs = calloc(ids + 1, sizeof *ptrs);
    pool = new_pool(0);
    if (pool == NULL || ptrs == NULL) {
        return 1;
    }
    TRY(aclrtCreateStream(&s));
    t0 = now_s();
    for (i = 0; i < n; i++) {
        if (ev_op[i] == 'a') {
            TRY(aclrtMemPoolMallocAsync(&ptrs[ev_id[i]], ev_bytes[i], pool, s));
        } else if (ptrs[ev_id[i]] != NULL) {
            TRY(aclrtMemPoolFreeAsync(ptrs[ev_id[i]], s));
            ptrs[ev_id[i]] = NULL;
        }
    }
    *ns_per_event = n ? (now_s() - t0) * 1e9 / (double)n : 0;
    for (i = 0; i < ids; i++) {
        if (ptrs[i] != NULL) {
            TRY(aclrtMemPoolFreeAsync(ptrs[i], s));
        }
    }
    TRY(aclrtSynchronizeStream(s));
    TRY(aclrtMemPoolDestroy(pool));
    TRY(aclrtDestroyStream(s));
    free(ptrs);
    free(ev_id);
    free(ev_bytes);
    free(ev_op);
    return 0;
}

static int traces(int argc, char **argv)
{
    int i;
    printf("### Trace replays through a pool on the software NPU (one stream)\n\n");
    printf("| trace | events | ns per event | peak live MiB | peak reserved MiB | reserved/live | PyTorch | target "
           "|\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (i = 0; i < argc; i++) {
        double ratio = 0;
        size_t live = 0, res = 0;
        long events = 0;
        double ns = 0;
        const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        const char *peer = strcmp(name, "ctx128_forward.trace") == 0    ? "1.031"
                           : strcmp(name, "ctx128_fullstep.trace") == 0 ? "1.150"
                                                                         : "-";
        if (replay(argv[i], &ratio, &live, &res, &events) != 0 || timed_replay(argv[i], &ns) != 0) {
            fprintf(stderr, "traces: cannot replay %s\n", argv[i]);
            return 1;
        }
        printf("| %s | %ld | %.0f | %.1f | %.1f | %.4f | %s | <= 1.01 |\n", name, events, ns, (double)live / MIB,
               (double)res / MIB, ratio, peer);
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc < 2) {
        fprintf(stderr, "usage: pool_bench contrast [N] | pairs [N] | traces FILE...\n");
        return 2;
    }
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        fprintf(stderr, "pool_bench: cannot start: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    if (strcmp(argv[1], "contrast") == 0) {
        rc = contrast(argc > 2 ? atoi(argv[2]) : 2000);
    } else if (strcmp(argv[1], "pairs") == 0) {
        rc = pairs(argc > 2 ? atoi(argv[2]) : 100000);
    } else if (strcmp(argv[1], "live") == 0) {
        rc = live(argc > 2 ? atoi(argv[2]) : 100000);
    } else if (strcmp(argv[1], "traces") == 0) {
        rc = traces(argc - 2, argv + 2);
    } else {
        fprintf(stderr, "pool_bench: unknown mode %s\n", argv[1]);
        rc = 2;
    }
    aclrtResetDevice(0);
    aclFinalize();
    return rc;
}
