/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_memory_soma.h - stream-ordered memory pools ("SOMA").
 *
 * Types and functions follow CANN 1.17.0 (include/external/acl/acl_rt_memory_soma.h).
 * Pools are supported on the A2 profile (the default), as in CANN; on A3 and 950 the
 * functions return ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
 *
 * CANN's acl_rt.h does not include this header; aclrs's acl_rt.h does.
 */
#ifndef ACLRS_ACL_ACL_RT_MEMORY_SOMA_H
#define ACLRS_ACL_ACL_RT_MEMORY_SOMA_H

/* Needs aclrtMemLocation and friends. acl_rt.h includes this header only at
 * its very end, so the mutual inclusion resolves in either order. */
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void *aclrtMemPool;

/*
 * Pool attributes (aclrtMemPoolSetAttr / aclrtMemPoolGetAttr). The three
 * REUSE_* attributes take a uint32_t (1 on, 0 off); the others a uint64_t.
 * RESERVED_MEM_CURRENT and USED_MEM_CURRENT are read-only; the *_HIGH ones may
 * only be set to 0 (reset).
 */
typedef enum aclrtMemPoolAttr {
    ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES = 0x1,
    ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC = 0x2,
    ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 0x3,
    ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD = 0x4,
    ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT = 0x5,
    ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH = 0x6,
    ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT = 0x7,
    ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH = 0x8
} aclrtMemPoolAttr;

/* Pool properties: PINNED, a DEVICE location, maxSize bytes, reserved all 0. */
typedef struct aclrtMemPoolProps {
    aclrtMemAllocationType allocType;
    aclrtMemHandleType handleType;
    aclrtMemLocation location;
    size_t maxSize;
    unsigned char reserved[32];
} aclrtMemPoolProps;

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64))
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemPoolAttr) == 4, "enum size")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemPoolProps) == 56, "aclrtMemPoolProps")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemPoolProps) == 8, "aclrtMemPoolProps")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemPoolProps, handleType) == 4, "aclrtMemPoolProps.handleType")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemPoolProps, location) == 8, "aclrtMemPoolProps.location")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemPoolProps, maxSize) == 16, "aclrtMemPoolProps.maxSize")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemPoolProps, reserved) == 24, "aclrtMemPoolProps.reserved")
#endif

/* Creates a pool on poolProps->location.id; maxSize 0 means the device's whole HBM. */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolCreate(aclrtMemPool *memPool, const aclrtMemPoolProps *poolProps);
/* Destroys a pool; blocks still allocated stay valid until freed, then their memory goes. */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolDestroy(const aclrtMemPool memPool);
/* Sets an attribute; value points to a uint32_t (REUSE_*) or a uint64_t (the others). */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolSetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void *value);
/* Reads an attribute into *value (uint32_t or uint64_t, as for SetAttr). */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolGetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void *value);
/* Allocates size bytes from memPool in the order of stream (not NULL); size 0 does nothing. */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolMallocAsync(void **ptr, size_t size, aclrtMemPool memPool,
                                                     aclrtStream stream);
/* Frees ptr (pool memory, or memory from aclrtMalloc) in the order of stream (not NULL). */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolFreeAsync(void *ptr, aclrtStream stream);
/* Releases unused memory of memPool while keeping at least minBytesToKeep reserved. */
ACL_FUNC_VISIBILITY aclError aclrtMemPoolTrimTo(aclrtMemPool memPool, size_t minBytesToKeep);

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_RT_MEMORY_SOMA_H */
