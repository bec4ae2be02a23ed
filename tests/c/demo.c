/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demo.c - the program `cargo xtask demo` runs: the seed flow of a CANN memory
 * program on the software NPU, one table row per step with the call, the bytes
 * it moved or allocated, its result and its wall time.
 *
 * Exits 0 and prints "demo: OK (N steps)" only when every step succeeded.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/acl.h"

#define MIB ((size_t)1 << 20)
#define BYTES (64 * MIB)

static int steps = 0;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void header(void)
{
    /* "time (µs)" is typed out: printf pads by bytes and µ takes two. */
    printf("%4s | %-32s | %9s | %-11s |   time (µs) | %s\n", "step", "call", "bytes", "result",
           "detail");
    printf("-----+----------------------------------+-----------+-------------+-------------+"
           "------------------------------\n");
}

/* Prints one row; returns 1 when rc is success. */
static int row(const char *call, size_t bytes, int rc, double us, const char *detail)
{
    char b[32], r[32];

    steps++;
    if (bytes == 0) {
        snprintf(b, sizeof b, "-");
    } else if (bytes % MIB == 0) {
        snprintf(b, sizeof b, "%zu MiB", bytes / MIB);
    } else {
        snprintf(b, sizeof b, "%zu", bytes);
    }
    if (rc == 0) {
        snprintf(r, sizeof r, "ok");
    } else {
        snprintf(r, sizeof r, "FAIL %d", rc);
    }
    printf("%4d | %-32s | %9s | %-11s | %11.1f | %s\n", steps, call, b, r, us,
           detail != NULL ? detail : "");
    if (rc != 0) {
        const char *msg = aclGetRecentErrMsg();
        printf("     | %s\n", msg != NULL ? msg : "(no message)");
    }
    return rc == 0;
}

static void rate(char *out, size_t n, size_t bytes, double us)
{
    if (us > 0.0) {
        snprintf(out, n, "%.2f GB/s", (double)bytes / (us * 1e-6) / 1e9);
    } else {
        snprintf(out, n, "-");
    }
}

/* Runs `call` (an expression yielding aclError), times it and prints its row;
 * leaves the function through `fail` when it did not succeed. */
#define STEP(text, bytes, call, detail_fmt_call)                                                   \
    do {                                                                                           \
        double t0_ = now_us();                                                                     \
        int rc_ = (int)(call);                                                                     \
        double dt_ = now_us() - t0_;                                                               \
        detail[0] = '\0';                                                                          \
        if (rc_ == 0) {                                                                            \
            detail_fmt_call;                                                                       \
        }                                                                                          \
        if (!row((text), (bytes), rc_, dt_, detail)) {                                             \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

int main(void)
{
    char detail[96];
    unsigned char *src = (unsigned char *)malloc(BYTES);
    unsigned char *dst = (unsigned char *)malloc(BYTES);
    void *dev = NULL;
    size_t free_before = 0, total = 0, free_alloc = 0, free_after = 0, i;
    int inited = 0, device_set = 0;
    double t0, dt;
    int ok;

    if (src == NULL || dst == NULL) {
        printf("demo: host malloc of 2 x 64 MiB failed\n");
        return 1;
    }
    for (i = 0; i < BYTES; i++) {
        src[i] = (unsigned char)((i * 2654435761u) >> 13);
    }
    memset(dst, 0, BYTES);

    printf("aclrs demo: the seed flow on the software NPU (device 0)\n\n");
    header();

    STEP("aclInit(NULL)", 0, aclInit(NULL), (void)0);
    inited = 1;
    STEP("aclrtSetDevice(0)", 0, aclrtSetDevice(0), (void)0);
    device_set = 1;
    STEP("aclrtGetMemInfo(ACL_HBM_MEM)", 0, aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total),
         snprintf(detail, sizeof detail, "before: free %zu MiB of %zu MiB", free_before / MIB,
                  total / MIB));
    STEP("aclrtMalloc HUGE_FIRST", BYTES, aclrtMalloc(&dev, BYTES, ACL_MEM_MALLOC_HUGE_FIRST),
         snprintf(detail, sizeof detail, "devPtr %p", dev));

    t0 = now_us();
    ok = (int)aclrtMemcpy(dev, BYTES, src, BYTES, ACL_MEMCPY_HOST_TO_DEVICE);
    dt = now_us() - t0;
    rate(detail, sizeof detail, BYTES, dt);
    if (!row("aclrtMemcpy HOST_TO_DEVICE", BYTES, ok, dt, ok == 0 ? detail : "")) {
        goto fail;
    }

    t0 = now_us();
    ok = (int)aclrtMemcpy(dst, BYTES, dev, BYTES, ACL_MEMCPY_DEVICE_TO_HOST);
    dt = now_us() - t0;
    rate(detail, sizeof detail, BYTES, dt);
    if (!row("aclrtMemcpy DEVICE_TO_HOST", BYTES, ok, dt, ok == 0 ? detail : "")) {
        goto fail;
    }

    t0 = now_us();
    ok = memcmp(src, dst, BYTES) == 0;
    dt = now_us() - t0;
    if (!row("verify (memcmp)", BYTES, ok ? 0 : -1, dt,
             ok ? "copy round trip is exact" : "data differs")) {
        goto fail;
    }

    STEP("aclrtMemset(value 0)", BYTES, aclrtMemset(dev, BYTES, 0, BYTES), (void)0);

    memset(dst, 0xFF, BYTES);
    t0 = now_us();
    ok = (int)aclrtMemcpy(dst, BYTES, dev, BYTES, ACL_MEMCPY_DEVICE_TO_HOST);
    if (ok == 0) {
        for (i = 0; i < BYTES && dst[i] == 0; i++) {
        }
        if (i != BYTES) {
            ok = -1;
        }
    }
    dt = now_us() - t0;
    if (!row("verify memset (D2H + scan)", BYTES, ok, dt,
             ok == 0 ? "all bytes zero" : "memset not visible")) {
        goto fail;
    }

    STEP("aclrtGetMemInfo(ACL_HBM_MEM)", 0, aclrtGetMemInfo(ACL_HBM_MEM, &free_alloc, &total),
         snprintf(detail, sizeof detail, "after malloc: free %zu MiB (-%zu MiB)", free_alloc / MIB,
                  (free_before - free_alloc) / MIB));
    if (free_before - free_alloc < BYTES) {
        printf("demo: free memory dropped by only %zu bytes for a %zu-byte allocation\n",
               free_before - free_alloc, BYTES);
        goto fail;
    }

    STEP("aclrtFree", BYTES, aclrtFree(dev), (void)0);
    dev = NULL;
    STEP("aclrtGetMemInfo(ACL_HBM_MEM)", 0, aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total),
         snprintf(detail, sizeof detail, "after free: free %zu MiB (%s)", free_after / MIB,
                  free_after == free_before ? "restored" : "NOT restored"));
    if (free_after != free_before) {
        printf("demo: free memory not restored: %zu before, %zu after\n", free_before, free_after);
        goto fail;
    }

    STEP("aclrtResetDevice(0)", 0, aclrtResetDevice(0), (void)0);
    device_set = 0;
    STEP("aclFinalize()", 0, aclFinalize(), (void)0);
    inited = 0;

    printf("\ndemo: OK (%d steps)\n", steps);
    free(src);
    free(dst);
    return 0;

fail:
    if (dev != NULL) {
        (void)aclrtFree(dev);
    }
    if (device_set) {
        (void)aclrtResetDevice(0);
    }
    if (inited) {
        (void)aclFinalize();
    }
    printf("\ndemo: FAILED at step %d\n", steps);
    free(src);
    free(dst);
    return 1;
}
