/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/alloc_bench.c - the cost of aclrtMalloc + aclrtFree through the C ABI on the software
 * NPU, driven by tests/benches/c_alloc.rs. Prints one line of numbers per mode; asserts
 * nothing about time.
 *
 *   pairs <bytes> <policy> <live> <pairs> <rounds>
 *       makes <live> allocations of <bytes> with <policy> and keeps them, then times <rounds>
 *       batches of <pairs> aclrtMalloc + aclrtFree pairs of the same kind; prints
 *       "pair <median ns> <min ns> <max ns>" (per pair, over the batches)
 *   mmap <bytes> <pairs> <rounds>
 *       the same for a bare mmap + munmap of <bytes> of anonymous memory (the floor: what the
 *       host kernel takes to give and take back a range of memory); prints "pair ..."
 *   hold <bytes> <policy> <count>
 *       attaches, makes <count> allocations, prints "ready" and waits for a line on stdin
 *       (a second process attached to the same machine)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "acl/acl.h"

#define MAX_ROUNDS 64

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(double *per_pair, int rounds)
{
    qsort(per_pair, (size_t)rounds, sizeof *per_pair, cmp_double);
    printf("pair %.0f %.0f %.0f\n", per_pair[rounds / 2], per_pair[0], per_pair[rounds - 1]);
}

static int init(void)
{
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        fprintf(stderr, "init failed: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    return 0;
}

static void **hold(size_t bytes, aclrtMemMallocPolicy policy, long count)
{
    void **ptrs = calloc((size_t)count + 1, sizeof *ptrs);
    for (long i = 0; ptrs != NULL && i < count; i++) {
        aclError rc = aclrtMalloc(&ptrs[i], bytes, policy);
        if (rc != ACL_SUCCESS) {
            fprintf(stderr, "allocation %ld of %zu failed: %d %s\n", i, bytes, rc, aclGetRecentErrMsg());
            return NULL;
        }
    }
    return ptrs;
}

static int pairs(size_t bytes, aclrtMemMallocPolicy policy, long live, long n, int rounds)
{
    double per_pair[MAX_ROUNDS];
    void **kept;
    if (init() != 0 || (kept = hold(bytes, policy, live)) == NULL) {
        return 1;
    }
    for (int w = 0; w < 2; w++) {
        /* Warm-up: first-use costs (page tables, caches) are not the steady state. */
        for (long i = 0; i < n; i++) {
            void *p = NULL;
            if (aclrtMalloc(&p, bytes, policy) != ACL_SUCCESS || aclrtFree(p) != ACL_SUCCESS) {
                fprintf(stderr, "pair failed: %s\n", aclGetRecentErrMsg());
                return 1;
            }
        }
    }
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            void *p = NULL;
            if (aclrtMalloc(&p, bytes, policy) != ACL_SUCCESS || aclrtFree(p) != ACL_SUCCESS) {
                fprintf(stderr, "pair failed: %s\n", aclGetRecentErrMsg());
                return 1;
            }
        }
        per_pair[r] = (now_ns() - t0) / (double)n;
    }
    report(per_pair, rounds);
    for (long i = 0; i < live; i++) {
        if (aclrtFree(kept[i]) != ACL_SUCCESS) {
            return 1;
        }
    }
    free(kept);
    return aclrtResetDevice(0) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS;
}

static int bare_mmap(size_t bytes, long n, int rounds)
{
    double per_pair[MAX_ROUNDS];
    for (int r = -1; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED || munmap(p, bytes) != 0) {
                perror("mmap");
                return 1;
            }
        }
        if (r >= 0) {
            per_pair[r] = (now_ns() - t0) / (double)n;
        }
    }
    report(per_pair, rounds);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 7 && strcmp(argv[1], "pairs") == 0) {
        int rounds = atoi(argv[6]);
        if (rounds < 1 || rounds > MAX_ROUNDS) {
            return 2;
        }
        return pairs((size_t)strtoull(argv[2], NULL, 0), (aclrtMemMallocPolicy)atoi(argv[3]), atol(argv[4]),
                     atol(argv[5]), rounds);
    }
    if (argc == 5 && strcmp(argv[1], "mmap") == 0) {
        int rounds = atoi(argv[4]);
        if (rounds < 1 || rounds > MAX_ROUNDS) {
            return 2;
        }
        return bare_mmap((size_t)strtoull(argv[2], NULL, 0), atol(argv[3]), rounds);
    }
    if (argc == 5 && strcmp(argv[1], "hold") == 0) {
        char line[16];
        if (init() != 0 ||
            hold((size_t)strtoull(argv[2], NULL, 0), (aclrtMemMallocPolicy)atoi(argv[3]), atol(argv[4])) == NULL) {
            return 1;
        }
        printf("ready\n");
        if (fgets(line, sizeof line, stdin) == NULL) {
            /* The bench closed our stdin: leave as well. */
        }
        return aclrtResetDevice(0) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS;
    }
    fprintf(stderr, "usage: see the comment at the top of alloc_bench.c\n");
    return 2;
}
