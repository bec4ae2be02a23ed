/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_allocator.h - custom allocator hooks.
 *
 * Callback types follow CANN 1.17.0 (include/external/acl/acl_rt_allocator.h).
 * The descriptor functions (aclrtAllocatorCreateDesc, aclrtAllocatorDestroyDesc,
 * aclrtAllocatorSet*ToDesc, aclrtAllocatorRegister, aclrtAllocatorGetByStream,
 * aclrtAllocatorUnregister) are declared here when they are implemented.
 */
#ifndef ACLRS_ACL_ACL_RT_ALLOCATOR_H
#define ACLRS_ACL_ACL_RT_ALLOCATOR_H

#include <stddef.h>

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates size bytes; returns the block. */
typedef void *(*aclrtAllocatorAllocFunc)(aclrtAllocator allocator, size_t size);
/* Returns a block to the allocator. */
typedef void (*aclrtAllocatorFreeFunc)(aclrtAllocator allocator, aclrtAllocatorBlock block);
/* Allocates size bytes at the suggested address addr (used for reuse). */
typedef void *(*aclrtAllocatorAllocAdviseFunc)(aclrtAllocator allocator, size_t size,
                                               aclrtAllocatorAddr addr);
/* Device address of a block. */
typedef void *(*aclrtAllocatorGetAddrFromBlockFunc)(aclrtAllocatorBlock block);

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_RT_ALLOCATOR_H */
