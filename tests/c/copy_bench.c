/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/copy_bench.c - copy bandwidth through the C ABI against memcpy (the physical limit of
 * this machine), measured in the same run on buffers of the same size.
 *
 *   copy_bench [MiB] [ROUNDS]    aclrtMemcpy host-to-device, device-to-host and device-to-device,
 *                                and aclrtMemcpyAsync host-to-device + synchronize, each against
 *                                memcpy between two host buffers of the same size (the faster
 *                                of one call and 2 MiB chunks)
 *
 * Prints one Markdown table (median and spread over ROUNDS after one warm-up). Asserts nothing
 * about time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"

#define MIB ((size_t)1 << 20)
#define MAX_ROUNDS 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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

enum { WAY_H2D, WAY_D2H, WAY_D2D, WAY_H2D_ASYNC, WAYS };

static const char *const NAMES[WAYS] = {
    "aclrtMemcpy host-to-device",
    "aclrtMemcpy device-to-host",
    "aclrtMemcpy device-to-device",
    "aclrtMemcpyAsync host-to-device + synchronize",
};

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    size_t n = mib * MIB;
    double gbs[WAYS][MAX_ROUNDS], ref[MAX_ROUNDS];
    char *h1, *h2;
    void *d1 = NULL, *d2 = NULL;
    aclrtStream s = NULL;
    int r, w;

    if (rounds < 1 || rounds > MAX_ROUNDS || mib == 0) {
        fprintf(stderr, "usage: copy_bench [MiB] [ROUNDS <= %d]\n", MAX_ROUNDS);
        return 2;
    }
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        fprintf(stderr, "copy_bench: cannot start: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    h1 = malloc(n);
    h2 = malloc(n);
    if (h1 == NULL || h2 == NULL) {
        fprintf(stderr, "copy_bench: out of host memory\n");
        return 1;
    }
    memset(h1, 0x5a, n);
    memset(h2, 0xa5, n);
    TRY(aclrtMalloc(&d1, n, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtMalloc(&d2, n, ACL_MEM_MALLOC_HUGE_FIRST));
    TRY(aclrtCreateStream(&s));
    /* Round 0 is the warm-up (first touch of every page); it is not reported. */
    for (r = 0; r <= rounds; r++) {
        double t0, t[WAYS], m;
        size_t off;
        double m2;
        t0 = now_s();
        memcpy(h2, h1, n);
        m = now_s() - t0;
        /* Chunked copies can beat one large memcpy (which may switch to non-temporal stores):
         * the floor is the faster of the two. */
        t0 = now_s();
        for (off = 0; off < n; off += 2 * MIB) {
            memcpy(h2 + off, h1 + off, n - off < 2 * MIB ? n - off : 2 * MIB);
        }
        m2 = now_s() - t0;
        m = m2 < m ? m2 : m;
        t0 = now_s();
        TRY(aclrtMemcpy(d1, n, h1, n, ACL_MEMCPY_HOST_TO_DEVICE));
        t[WAY_H2D] = now_s() - t0;
        t0 = now_s();
        TRY(aclrtMemcpy(h2, n, d1, n, ACL_MEMCPY_DEVICE_TO_HOST));
        t[WAY_D2H] = now_s() - t0;
        t0 = now_s();
        TRY(aclrtMemcpy(d2, n, d1, n, ACL_MEMCPY_DEVICE_TO_DEVICE));
        t[WAY_D2D] = now_s() - t0;
        t0 = now_s();
        TRY(aclrtMemcpyAsync(d2, n, h1, n, ACL_MEMCPY_HOST_TO_DEVICE, s));
        TRY(aclrtSynchronizeStream(s));
        t[WAY_H2D_ASYNC] = now_s() - t0;
        if (r > 0) {
            ref[r - 1] = (double)n / m / 1e9;
            for (w = 0; w < WAYS; w++) {
                gbs[w][r - 1] = (double)n / t[w] / 1e9;
            }
        }
    }
    if (memcmp(h1, h2, n) != 0) {
        fprintf(stderr, "copy_bench: the device-to-host copy returned other bytes\n");
        return 1;
    }
    qsort(ref, (size_t)rounds, sizeof(double), cmp_double);
    printf("### Copies on the software NPU: bandwidth against memcpy (%zu MiB, median of %d rounds)\n\n", mib,
           rounds);
    printf("| copy | median GB/s | spread GB/s | memcpy GB/s (same run) | vs memcpy | target |\n");
    printf("|---|---|---|---|---|---|\n");
    printf("| memcpy host-to-host, best of one call and 2 MiB chunks (the floor) | %.2f | %.2f-%.2f | %.2f | 100.0%% | - |\n", ref[rounds / 2], ref[0],
           ref[rounds - 1], ref[rounds / 2]);
    for (w = 0; w < WAYS; w++) {
        qsort(gbs[w], (size_t)rounds, sizeof(double), cmp_double);
        printf("| %s | %.2f | %.2f-%.2f | %.2f | %.1f%% | >= 90%% |\n", NAMES[w], gbs[w][rounds / 2], gbs[w][0],
               gbs[w][rounds - 1], ref[rounds / 2], 100.0 * gbs[w][rounds / 2] / ref[rounds / 2]);
    }
    printf("\n");
    TRY(aclrtDestroyStream(s));
    TRY(aclrtFree(d1));
    TRY(aclrtFree(d2));
    free(h1);
    free(h2);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
