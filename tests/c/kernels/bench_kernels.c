/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernels/bench_kernels.c - kernels for the benches on the software
 * NPU (tests/c/stream_bench.c), built into a host shared object with
 * `cc -shared -fPIC`. The sim kernel ABI of acl/acl_sim.h:
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 */
#define _POSIX_C_SOURCE 199309L
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "acl/acl_sim.h"

/* stamp_start: its first instructions read CLOCK_MONOTONIC (ns) and store it in *at (block 0
 * only), for a launch-to-start latency: `at` points to pinned host memory the launching
 * thread watches. */
typedef struct {
    _Atomic int64_t *at;
} StampArgs;

void stamp_start(uint32_t block_idx, uint32_t block_dim, void *args)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    (void)block_dim;
    if (block_idx == 0) {
        atomic_store(((const StampArgs *)args)->at, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    }
}
