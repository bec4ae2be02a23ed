/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernels/symbol_kernels.c - a kernel binary with a device variable,
 * for the symbol calls (aclrtGetSymbolAddress, aclrtMemcpyTo/FromSymbol) and
 * a kernel that fails, for the exception callbacks. Built by the tests into a
 * host shared object with `cc -shared -fPIC`.
 *
 * Every kernel has the sim kernel ABI of acl/acl_sim.h:
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 */
#include <stdint.h>

#include "acl/acl_sim.h"

/* The device variable: 16 counters. */
int32_t aclrs_counters[16];

/* bump: aclrs_counters[block] += 1 for each of up to 16 blocks. */
void bump(uint32_t block_idx, uint32_t block_dim, void *args)
{
    (void)block_dim;
    (void)args;
    if (block_idx < 16) {
        aclrs_counters[block_idx] += 1;
    }
}

/* fail_now: reports an AI-core exception (507015) from inside the kernel. */
void fail_now(uint32_t block_idx, uint32_t block_dim, void *args)
{
    (void)block_idx;
    (void)block_dim;
    (void)args;
    aclrsKernelFail(507015);
}
