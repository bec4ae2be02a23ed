/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernels/pool_kernels.c - kernels for the stream-ordered pool tests, built into a host
 * shared object with `cc -shared -fPIC` (the sim kernel ABI of acl/acl_sim.h).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <time.h>

#include "acl/acl_sim.h"

/* slow_fill: block 0 sleeps ms milliseconds, then every block fills its share of p[0..n) with
 * value. A stand-in for a long kernel that still writes its buffer when it ends. */
typedef struct {
    uint32_t *p;
    uint64_t n;
    uint32_t value;
    uint32_t ms;
} FillArgs;

void slow_fill(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const FillArgs *a = (const FillArgs *)args;
    uint64_t per = (a->n + block_dim - 1) / block_dim;
    uint64_t begin = block_idx * per;
    uint64_t end = begin + per > a->n ? a->n : begin + per;
    uint64_t i;

    if (block_idx == 0 && a->ms > 0) {
        struct timespec ts;
        ts.tv_sec = a->ms / 1000;
        ts.tv_nsec = (long)(a->ms % 1000) * 1000000L;
        nanosleep(&ts, NULL);
    }
    for (i = begin; i < end; i++) {
        a->p[i] = a->value;
    }
}

/* add_custom with the seed's argument block: three device pointers, each to one uint64_t
 * worth (two floats) of data; block b < 2 computes z[b] = x[b] + y[b]. */
typedef struct {
    float *input_x;
    float *input_y;
    float *output_z;
} SeedArgs;

void add_custom(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const SeedArgs *a = (const SeedArgs *)args;
    (void)block_dim;
    if (block_idx < 2) {
        a->output_z[block_idx] = a->input_x[block_idx] + a->input_y[block_idx];
    }
}
