/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernels/args_kernels.c - kernels that report what they were given,
 * for the kernel-argument, resource-limit, error-detail and binary-loading
 * tests; built into a host shared object with `cc -shared -fPIC`.
 *
 * Every kernel has the sim kernel ABI of acl/acl_sim.h:
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 */
#include <stdint.h>
#include <string.h>

#include "acl/acl_sim.h"

/*
 * echo_args: args begin with { uint8_t *out; uint64_t len; }. Block 0 writes
 * the address of its argument copy to out[0..8] and the first len bytes of
 * that copy to out[8..8+len].
 */
void echo_args(uint32_t block_idx, uint32_t block_dim, void *args)
{
    uint8_t *out;
    uint64_t len, self = (uint64_t)(uintptr_t)args;

    (void)block_dim;
    if (block_idx != 0) {
        return;
    }
    memcpy(&out, args, sizeof out);
    memcpy(&len, (const uint8_t *)args + 8, sizeof len);
    memcpy(out, &self, sizeof self);
    memcpy(out + 8, args, (size_t)len);
}

/*
 * deref2: args are { int32_t *out; int32_t *a; int32_t *b; }: out[0] = *a,
 * out[1] = *b (a and b are placeholders: they point into the argument copy).
 */
void deref2(uint32_t block_idx, uint32_t block_dim, void *args)
{
    int32_t *const *p = (int32_t *const *)args;

    (void)block_dim;
    if (block_idx == 0) {
        p[0][0] = *p[1];
        p[0][1] = *p[2];
    }
}

/* mark_blocks: args are { int32_t *out; }: out[block_idx] = block_dim. */
void mark_blocks(uint32_t block_idx, uint32_t block_dim, void *args)
{
    int32_t *out = *(int32_t *const *)args;

    out[block_idx] = (int32_t)block_dim;
}

/* fault_kernel: reports the code in *args (0: the default AI-core exception). */
void fault_kernel(uint32_t block_idx, uint32_t block_dim, void *args)
{
    (void)block_dim;
    if (block_idx == 0) {
        aclrsKernelFail(*(const int32_t *)args);
    }
}
