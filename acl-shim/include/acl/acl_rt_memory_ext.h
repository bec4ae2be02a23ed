/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_memory_ext.h - the rest of CANN's acl_rt.h memory module
 * (managed memory, descriptor / offset / conditional copies, device symbols,
 * cache maintenance, mapping variants, aclFinalizeReference) and the device,
 * context and exception-information calls of sec. 11 that aclrs implements.
 *
 * Names, signatures, enum values and struct layouts follow CANN 1.17.0
 * (include/external/acl/acl_rt.h); the types are in acl/acl_rt.h, which
 * includes this header at its end (and this one includes acl/acl_rt.h), so
 * either may be included first. What each call does on the software NPU, and
 * where it answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) because the SoC
 * profile lacks the feature, is in the README ("Memory module: the remaining
 * calls").
 */
#ifndef ACLRS_ACL_ACL_RT_MEMORY_EXT_H
#define ACLRS_ACL_ACL_RT_MEMORY_EXT_H

#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Types of the sec. 11 calls declared here (CANN 1.17.0 names, values and layouts). */
typedef struct aclrtUtilizationExtendInfo aclrtUtilizationExtendInfo;

typedef struct aclrtUtilizationInfo {
    int32_t cubeUtilization;
    int32_t vectorUtilization;
    int32_t aicpuUtilization;
    int32_t memoryUtilization;
    aclrtUtilizationExtendInfo *utilizationExtend; /* must be NULL */
} aclrtUtilizationInfo;

typedef struct rtExceptionInfo aclrtExceptionInfo;

typedef void (*aclrtExceptionInfoCallback)(aclrtExceptionInfo *exceptionInfo);

typedef enum aclrtDeviceStatus {
    ACL_RT_DEVICE_STATUS_NORMAL = 0,
    ACL_RT_DEVICE_STATUS_ABNORMAL,
    ACL_RT_DEVICE_STATUS_END = 0xFFFF
} aclrtDeviceStatus;

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64))
ACLRS_LAYOUT_ASSERT(sizeof(aclrtUtilizationInfo) == 24, "aclrtUtilizationInfo")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtUtilizationInfo, utilizationExtend) == 16, "aclrtUtilizationInfo.utilizationExtend")
#endif

/* Reference-counted finalize: *refCount receives the references left. */
ACL_FUNC_VISIBILITY aclError aclFinalizeReference(uint64_t *refCount);

/* Managed (unified) memory: one pointer valid on the host and in kernels. */
ACL_FUNC_VISIBILITY aclError aclrtMemAllocManaged(void **ptr, uint64_t size, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtMemManagedAdvise(const void *const ptr, uint64_t size,
                                                   aclrtMemManagedAdviseType advise,
                                                   aclrtMemManagedLocation location);
ACL_FUNC_VISIBILITY aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute attribute, const void *ptr,
                                                    size_t size, void *data, size_t dataSize);
ACL_FUNC_VISIBILITY aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute *attributes, size_t numAttributes,
                                                     const void *ptr, size_t size, void **data, size_t *dataSizes);
ACL_FUNC_VISIBILITY aclError aclrtMemManagedPrefetchAsync(const void *ptr, size_t size,
                                                          aclrtMemManagedLocation location, uint32_t flags,
                                                          aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemManagedPrefetchBatchAsync(const void **ptrs, size_t *sizes, size_t count,
                                                               aclrtMemManagedLocation *prefetchLocs,
                                                               size_t *prefetchLocIdxs, size_t numPrefetchLocs,
                                                               uint64_t flags, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemP2PMap(void *devPtr, size_t size, int32_t dstDevId, uint64_t flags);

/* Descriptor, offset and conditional copies (kind ACL_MEMCPY_INNER_DEVICE_TO_DEVICE). */
ACL_FUNC_VISIBILITY aclError aclrtGetMemcpyDescSize(aclrtMemcpyKind kind, size_t *descSize);
ACL_FUNC_VISIBILITY aclError aclrtSetMemcpyDesc(void *desc, aclrtMemcpyKind kind, void *srcAddr, void *dstAddr,
                                                size_t count, void *config);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsyncWithDesc(void *desc, aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsyncWithOffset(void **dst, size_t destMax, size_t dstDataOffset,
                                                        const void **src, size_t count, size_t srcDataOffset,
                                                        aclrtMemcpyKind kind, aclrtStream stream);
/* Deprecated: aclrtMemcpyAsync. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsyncWithCondition(void *dst, size_t destMax, const void *src, size_t count,
                                                           aclrtMemcpyKind kind, aclrtStream stream);

/* Device variables of a loaded kernel binary. */
ACL_FUNC_VISIBILITY aclError aclrtGetSymbolAddress(const void *symbol, void **devPtr);
ACL_FUNC_VISIBILITY aclError aclrtGetSymbolSize(const void *symbol, size_t *size);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyFromSymbol(void *dst, size_t dstMax, const void *symbol, size_t count,
                                                   size_t offset, aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyFromSymbolAsync(void *dst, size_t dstMax, const void *symbol, size_t count,
                                                        size_t offset, aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                                                 aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count,
                                                      size_t offset, aclrtMemcpyKind kind, aclrtStream stream);

/* Cache maintenance (stream-ordered; caches are coherent on the software NPU). */
ACL_FUNC_VISIBILITY aclError aclrtCmoAsync(void *src, size_t size, aclrtCmoType cmoType, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtCmoAsyncWithBarrier(void *src, size_t size, aclrtCmoType cmoType,
                                                      uint32_t barrierId, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtCmoWaitBarrier(aclrtBarrierTaskInfo *taskInfo, aclrtStream stream, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtCmoGetDescSize(size_t *size);
ACL_FUNC_VISIBILITY aclError aclrtCmoSetDesc(void *cmoDesc, void *src, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtCmoAsyncWithDesc(void *cmoDesc, aclrtCmoType cmoType, aclrtStream stream,
                                                   const void *reserve);

/* Mapping variants. */
ACL_FUNC_VISIBILITY aclError aclrtReserveMemAddressNoUCMemory(void **virPtr, size_t size, size_t alignment,
                                                              void *expectPtr, uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtMemMapNoAccess(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                                                 uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtMemMapSelectedLink(void *virPtrDst, size_t size, void *virPtrSrc, uint32_t linkIdx);
ACL_FUNC_VISIBILITY aclError aclrtMemMapSetLink(aclrtDrvMemHandle handle, aclrtMemLinkType adviceLink);
ACL_FUNC_VISIBILITY aclError aclrtHostMemMapCapabilities(uint32_t deviceId, aclrtHacType hacType,
                                                         aclrtHostMemMapCapability *capabilities);
ACL_FUNC_VISIBILITY aclError aclrtIpcMemImportPidInterServer(const char *key, aclrtServerPid *serverPids, size_t num);

/* Devices and contexts (sec. 11.3, 11.4). */
ACL_FUNC_VISIBILITY aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus *deviceStatus);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceUtilizationRate(int32_t deviceId, aclrtUtilizationInfo *utilizationInfo);

/* Exception information (sec. 11.10). */
ACL_FUNC_VISIBILITY aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback);
ACL_FUNC_VISIBILITY uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info);
ACL_FUNC_VISIBILITY aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo *info, void **devArgsPtr,
                                                           uint32_t *devArgsLen);
ACL_FUNC_VISIBILITY aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo *info,
                                                                 aclrtFuncHandle *func);

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_RT_MEMORY_EXT_H */
