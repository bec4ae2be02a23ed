/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/c/kernels/memcheck_kernels.c - kernels that misuse device memory, for the fault
 * containment and memcheck tests (tests/c/memcheck_*.c). Built like sim_kernels.c.
 *
 * Every kernel has the sim kernel ABI of acl/acl_sim.h:
 *     void NAME(uint32_t block_idx, uint32_t block_dim, void *args);
 */
#include <stdint.h>

#include "acl/acl_sim.h"

/* poke: block 0 writes `len` bytes of `value` at p + off (off may run past p's buffer). */
typedef struct {
    volatile uint8_t *p;
    uint64_t off;
    uint64_t len;
    uint32_t value;
} PokeArgs;

void poke(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const PokeArgs *a = (const PokeArgs *)args;
    uint64_t i;

    (void)block_dim;
    if (block_idx != 0) {
        return;
    }
    for (i = 0; i < a->len; i++) {
        a->p[a->off + i] = (uint8_t)a->value;
    }
}

/* peek: block 0 reads the byte at p + off into *out (a host-visible device word). */
typedef struct {
    volatile const uint8_t *p;
    uint64_t off;
    volatile uint8_t *out;
} PeekArgs;

void peek(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const PeekArgs *a = (const PeekArgs *)args;

    (void)block_dim;
    if (block_idx == 0) {
        *a->out = a->p[a->off];
    }
}

/* fill: every block writes `value` to its share of p[0..n). */
typedef struct {
    volatile uint8_t *p;
    uint64_t n;
    uint32_t value;
} FillArgs;

void fill(uint32_t block_idx, uint32_t block_dim, void *args)
{
    const FillArgs *a = (const FillArgs *)args;
    uint64_t per = (a->n + block_dim - 1) / block_dim;
    uint64_t begin = (uint64_t)block_idx * per;
    uint64_t end = begin + per > a->n ? a->n : begin + per;
    uint64_t i;

    for (i = begin; i < end; i++) {
        a->p[i] = (uint8_t)a->value;
    }
}
