/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernels/sim_kernels.c - kernels for the software NPU, built by the
 * tests into a host shared object with `cc -shared -fPIC`.
 *
 * Every kernel has the sim kernel ABI of acl/acl_sim.h:
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <time.h>

#include "acl/acl_sim.h"

/* add_custom: z[i] = x[i] + y[i]; each block takes a contiguous share. */
typedef struct {
    float *x;
    float *y;
    float *z;
    uint32_t n;
} AddArgs;

void add_custom(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const AddArgs *a = (const AddArgs *)args;
    uint32_t per = (a->n + block_dim - 1) / block_dim;
    uint32_t begin = block_idx * per;
    uint32_t end = begin + per > a->n ? a->n : begin + per;
    uint32_t i;

    for (i = begin; i < end; i++) {
        a->z[i] = a->x[i] + a->y[i];
    }
}

/* slow_inc: sleeps ms milliseconds (block 0 only), then p[block] += 1. */
typedef struct {
    int32_t *p;
    uint32_t ms;
} SlowArgs;

void slow_inc(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const SlowArgs *a = (const SlowArgs *)args;
    (void)block_dim;
    if (block_idx == 0 && a->ms > 0) {
        struct timespec ts;
        ts.tv_sec = a->ms / 1000;
        ts.tv_nsec = (long)(a->ms % 1000) * 1000000L;
        nanosleep(&ts, NULL);
    }
    a->p[block_idx] += 1;
}

/* fail: reports code (0: the default AI-core exception). */
void fail(uint32_t block_idx, uint32_t block_dim, void *args)
{
    (void)block_dim;
    if (block_idx == 0) {
        aclrsKernelFail(*(const int32_t *)args);
    }
}
