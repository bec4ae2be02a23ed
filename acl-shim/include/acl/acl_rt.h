/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt.h - runtime API of the aclrs implementation of CANN's ACL.
 *
 * Type names, enum and macro values, struct layouts and function signatures
 * follow CANN 1.17.0 (include/external/acl/acl_rt.h), so that C and C++
 * programs written for CANN compile unchanged against libascendcl.
 *
 * Functions declared here are the ones libascendcl exports today:
 *
 *   devices   aclrtSetDevice, aclrtResetDevice, aclrtResetDeviceForce,
 *             aclrtGetDevice, aclrtGetDeviceCount, aclrtGetRunMode
 *   memory    aclrtMalloc, aclrtMallocAlign32, aclrtMallocCached,
 *             aclrtMallocWithCfg, aclrtMallocForTaskScheduler, aclrtFree,
 *             aclrtFreeWithDevSync, aclrtMallocHost, aclrtMallocHostWithCfg,
 *             aclrtFreeHost, aclrtFreeHostWithDevSync,
 *             aclrtMemFlush, aclrtMemInvalidate, aclrtMemcpy, aclrtMemset
 *   queries   aclrtGetMemInfo, aclrtGetMemUsageInfo, aclrtCheckMemType,
 *             aclrtPointerGetAttributes, aclrtMemGetAddressRange
 *   VMM       aclrtMallocPhysical, aclrtFreePhysical, aclrtReserveMemAddress,
 *             aclrtReleaseMemAddress, aclrtMapMem, aclrtUnmapMem,
 *             aclrtMemSetAccess, aclrtMemGetAccess,
 *             aclrtMemGetAllocationGranularity, aclrtMemRetainAllocationHandle,
 *             aclrtMemGetAllocationPropertiesFromHandle,
 *             aclrtMemExportToShareableHandle(V2),
 *             aclrtMemImportFromShareableHandle(V2),
 *             aclrtMemSetPidToShareableHandle(V2), aclrtDeviceGetBareTgid
 *   IPC       aclrtIpcMemGetExportKey, aclrtIpcMemImportByKey,
 *             aclrtIpcMemSetImportPid, aclrtIpcMemSetAttr, aclrtIpcMemClose
 *   host reg  aclrtHostRegister(V2), aclrtHostUnregister,
 *             aclrtHostGetDevicePointer
 *   peers     aclrtDeviceCanAccessPeer, aclrtDeviceEnablePeerAccess,
 *             aclrtDeviceDisablePeerAccess
 *   streams   aclrtCreateStream(WithConfig), aclrtDestroyStream(Force),
 *             aclrtSynchronizeStream(WithTimeout), aclrtStreamQuery,
 *             aclrtStreamWaitEvent, aclrtSetStreamFailureMode,
 *             aclrtSynchronizeDevice(WithTimeout)
 *   events    aclrtCreateEvent(WithFlag), aclrtCreateEventExWithFlag,
 *             aclrtDestroyEvent, aclrtRecordEvent, aclrtResetEvent,
 *             aclrtQueryEvent, aclrtQueryEventStatus,
 *             aclrtSynchronizeEvent(WithTimeout), aclrtEventElapsedTime,
 *             aclrtEventGetTimestamp
 *   async     aclrtMemcpyAsync, aclrtMemcpy2d(Async), aclrtMemcpyBatch(V2),
 *             aclrtMemcpyBatchAsync(V2), aclrtMemsetAsync,
 *             aclrtMemsetD32(Async), aclrtValueWrite, aclrtValueWait
 *   host      aclrtLaunchHostFunc, aclrtLaunchCallback, aclrtSubscribeReport,
 *             aclrtProcessReport, aclrtUnSubscribeReport
 *   kernels   aclrtBinaryLoadFromFile, aclrtBinaryGetFunction,
 *             aclrtBinaryUnLoad, aclrtLaunchKernel(V2),
 *             aclrtLaunchKernelWithHostArgs (the sim kernel ABI: acl/acl_sim.h)
 *   contexts  aclrtCreateContext, aclrtDestroyContext,
 *             aclrtSetCurrentContext, aclrtGetCurrentContext
 *   errors    aclrtGetLastError, aclrtPeekAtLastError
 *   versions  aclsysGetVersionStr, aclsysGetVersionNum, aclsysGetCANNVersion,
 *             aclrtGetVersion
 *
 * acl/acl_rt_unsupported.h, included at the end, declares the rest of CANN's
 * device, context, stream, event, memory and kernel calls that aclrs exports
 * but does not implement: each returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
 *
 * (aclInit and aclFinalize are in acl/acl.h, aclGetRecentErrMsg in
 * acl/acl_base.h.) Four more headers included at the end declare the rest:
 * acl/acl_rt_memory_ext.h (managed memory, descriptor, offset and symbol
 * copies, cache maintenance, the mapping variants, aclFinalizeReference, and
 * the device, context and exception-information calls of sec. 11 that aclrs
 * implements), acl/acl_rt_kernel_args.h (kernel arguments, config launches,
 * binaries from data, function queries), acl/acl_rt_device_facts.h (resource
 * limits, aclrtGetDeviceInfo, aclrtGetDeviceCapability, aclrtGetErrorVerbose)
 * and acl/acl_rt_notify_stream.h (notifies, IPC events, stream
 * stop/abort/attributes/config, host-function threads).
 *
 * Unlike CANN's acl_rt.h, this header also includes acl/acl_rt_memory_soma.h,
 * so programs that use the pool types after including only acl/acl.h compile,
 * and acl/acl_rt_unsupported.h.
 */
#ifndef ACLRS_ACL_ACL_RT_H
#define ACLRS_ACL_ACL_RT_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "acl_base.h"

#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 17
#define ACL_PATCH_VERSION 0

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Opaque handles declared by CANN's acl_rt.h (all plain pointers).          */
/* ------------------------------------------------------------------------ */
typedef void *aclrtDrvMemHandle;
typedef void *aclrtBinary;
typedef void *aclrtBinHandle;
typedef void *aclrtFuncHandle;
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;
typedef void *aclmdlRI;

/* Host callbacks (aclrtLaunchCallback, aclrtLaunchHostFunc). */
typedef void (*aclrtCallback)(void *userData);
typedef void (*aclrtHostFunc)(void *args);

/* ------------------------------------------------------------------------ */
/* Device memory allocation                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Page policy of aclrtMalloc and friends. Values 0-7 are base policies; the
 * last three are flags that aclrtMallocWithCfg accepts ORed with one base
 * policy.
 */
typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

/* Direction of a copy. aclrtMemcpy accepts 0-5. */
typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,                /* inferred from the addresses */
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,  /* host data staged; source reusable on return */
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6, /* descriptor / offset copies only */
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/*
 * Memory class queried by aclrtGetMemInfo (and used by
 * aclrtPhysicalMemProp.memAttr). 0-11 name DDR or HBM explicitly; 12-17 let the
 * runtime choose and are the recommended ones.
 */
typedef enum aclrtMemAttr {
    ACL_DDR_MEM = 0,
    ACL_HBM_MEM = 1,
    ACL_DDR_MEM_HUGE = 2,
    ACL_DDR_MEM_NORMAL = 3,
    ACL_HBM_MEM_HUGE = 4,
    ACL_HBM_MEM_NORMAL = 5,
    ACL_DDR_MEM_P2P_HUGE = 6,
    ACL_DDR_MEM_P2P_NORMAL = 7,
    ACL_HBM_MEM_P2P_HUGE = 8,
    ACL_HBM_MEM_P2P_NORMAL = 9,
    ACL_HBM_MEM_HUGE1G = 10,
    ACL_HBM_MEM_P2P_HUGE1G = 11,
    ACL_MEM_NORMAL = 12,
    ACL_MEM_HUGE = 13,
    ACL_MEM_HUGE1G = 14,
    ACL_MEM_P2P_NORMAL = 15,
    ACL_MEM_P2P_HUGE = 16,
    ACL_MEM_P2P_HUGE1G = 17
} aclrtMemAttr;

/* Page and memory kinds (CANN declares these enums without typedefs). */
enum aclrtMemPgType {
    NORMAL_PAGE_TYPE = 0,
    HUGE_PAGE_TYPE = 1,
    HUGE1G_PAGE_TYPE = 2
};

enum aclrtMemType {
    HBM_TYPE = 0,
    DDR_TYPE = 1,
    P2P_HBM_TYPE = 2,
    P2P_DDR_TYPE = 3
};

/* One row of the (page type, memory type, host?) -> aclrtMemAttr table. */
struct MemAttrMapping {
    uint32_t pgType;
    uint32_t memType;
    bool isHostAlloc;
    aclrtMemAttr memAttr;
};

/* ------------------------------------------------------------------------ */
/* Locations, physical allocations and handles                               */
/* ------------------------------------------------------------------------ */
typedef enum aclrtMemLocationType {
    ACL_MEM_LOCATION_TYPE_HOST = 0,         /* host memory from ACL allocators */
    ACL_MEM_LOCATION_TYPE_DEVICE = 1,       /* device memory from ACL allocators */
    ACL_MEM_LOCATION_TYPE_UNREGISTERED = 2, /* memory not allocated through ACL */
    ACL_MEM_LOCATION_TYPE_MANAGED = 3,      /* unified (managed) memory */
    ACL_MEM_LOCATION_TYPE_HOST_NUMA = 4     /* host memory on a NUMA node */
} aclrtMemLocationType;

typedef enum aclrtMemAllocationType {
    ACL_MEM_ALLOCATION_TYPE_PINNED = 0
} aclrtMemAllocationType;

typedef enum aclrtMemHandleType {
    ACL_MEM_HANDLE_TYPE_NONE = 0,
    ACL_MEM_HANDLE_TYPE_POSIX = 2
} aclrtMemHandleType;

typedef enum aclrtMemSharedHandleType {
    ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT = 0x1,
    ACL_MEM_SHARE_HANDLE_TYPE_FABRIC = 0x2
} aclrtMemSharedHandleType;

typedef enum aclrtMemGranularityOptions {
    ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
    ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1,
    ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF = 0xFFFF
} aclrtMemGranularityOptions;

typedef enum aclrtMemAccessFlags {
    ACL_RT_MEM_ACCESS_FLAGS_NONE = 0x0,
    ACL_RT_MEM_ACCESS_FLAGS_READ = 0x1,
    ACL_RT_MEM_ACCESS_FLAGS_READWRITE = 0x3
} aclrtMemAccessFlags;

typedef enum aclrtMemLinkType {
    ACL_RT_MEM_ACCESS_LINK_SIO = 0,
    ACL_RT_MEM_ACCESS_LINK_HCCS = 1,
    ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH = 2,
    ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH = 3
} aclrtMemLinkType;

/* ------------------------------------------------------------------------ */
/* Host memory registration                                                  */
/* ------------------------------------------------------------------------ */

/* aclrtHostRegister (V1). MAPPED is 0 here but 0x2 in the V2 flags below. */
typedef enum aclrtHostRegisterType {
    ACL_HOST_REGISTER_MAPPED = 0,
    ACL_HOST_REGISTER_IOMEMORY = 0x04,
    ACL_HOST_REGISTER_READONLY = 0x08
} aclrtHostRegisterType;

/* aclrtHostRegisterV2 flags. */
#define ACL_HOST_REG_MAPPED 0x2UL
#define ACL_HOST_REG_IOMEMORY 0x4UL
#define ACL_HOST_REG_READONLY 0x8UL
#define ACL_HOST_REG_PINNED 0x10000000UL

typedef enum aclrtHostMemMapCapability {
    ACL_RT_HOST_MEM_MAP_NOT_SUPPORTED = 0,
    ACL_RT_HOST_MEM_MAP_SUPPORTED = 1
} aclrtHostMemMapCapability;

typedef enum aclrtHacType {
    ACL_RT_HAC_TYPE_STARS = 0,
    ACL_RT_HAC_TYPE_AICPU = 1,
    ACL_RT_HAC_TYPE_AIC = 2,
    ACL_RT_HAC_TYPE_AIV = 3,
    ACL_RT_HAC_TYPE_PCIEDMA = 4,
    ACL_RT_HAC_TYPE_RDMA = 5,
    ACL_RT_HAC_TYPE_SDMA = 6,
    ACL_RT_HAC_TYPE_DVPP = 7,
    ACL_RT_HAC_TYPE_UDMA = 8,
    ACL_RT_HAC_TYPE_CCU = 9
} aclrtHacType;

/* ------------------------------------------------------------------------ */
/* Allocation configuration, type checks, IPC                                */
/* ------------------------------------------------------------------------ */
typedef enum aclrtMallocAttrType {
    ACL_RT_MEM_ATTR_RSV = 0,
    ACL_RT_MEM_ATTR_MODULE_ID = 1,
    ACL_RT_MEM_ATTR_DEVICE_ID = 2,
    ACL_RT_MEM_ATTR_VA_FLAG = 3
} aclrtMallocAttrType;

/* aclrtCheckMemType memType bits. */
#define ACL_RT_MEM_TYPE_DEV (0X2U)
#define ACL_RT_MEM_TYPE_DVPP (0X8U)
#define ACL_RT_MEM_TYPE_RSVD (0X10U)

/* aclrtIpcMemGetExportKey / aclrtIpcMemImportByKey flags. */
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS 0x1UL

typedef enum aclrtIpcMemAttrType {
    ACL_RT_IPC_MEM_ATTR_ACCESS_LINK = 0
} aclrtIpcMemAttrType;

/* Values of ACL_RT_IPC_MEM_ATTR_ACCESS_LINK. */
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_SIO 0
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_HCCS 1
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_ONE_PORT_PATH 2
#define ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_MULTI_PORT_PATH 3

/* aclrtMemExportToShareableHandle(V2) flags. */
#define ACL_RT_VMM_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL

/* Notify IPC flags: note 0x02, unlike the memory flags above. */
#define ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x02UL
#define ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS 0x02UL

#define ACL_IPC_EVENT_HANDLE_SIZE 64U

/* aclrtMemMapSelectedLink link indices. */
#define ACL_RT_MEM_LINK_IDX_0 0U /* SIO */
#define ACL_RT_MEM_LINK_IDX_1 1U /* HCCS */

/* ------------------------------------------------------------------------ */
/* Managed memory, cache maintenance, value wait, UCE                        */
/* ------------------------------------------------------------------------ */
#define ACL_RT_MEM_ATTACH_GLOBAL 0x01U

typedef enum aclrtMemManagedLocationType {
    ACL_MEM_LOCATIONTYPE_INVALID = 0,
    ACL_MEM_LOCATIONTYPE_DEVICE = 1,
    ACL_MEM_LOCATIONTYPE_HOST = 2,
    ACL_MEM_LOCATIONTYPE_HOST_NUMA = 3,
    ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT = 4
} aclrtMemManagedLocationType;

typedef enum aclrtMemManagedAdviseType {
    ACL_MEM_ADVISE_SET_READ_MOSTLY = 0,
    ACL_MEM_ADVISE_UNSET_READ_MOSTLY = 1,
    ACL_MEM_ADVISE_SET_PREFERRED_LOCATION = 2,
    ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 3,
    ACL_MEM_ADVISE_SET_ACCESSED_BY = 4,
    ACL_MEM_ADVISE_UNSET_ACCESSED_BY = 5
} aclrtMemManagedAdviseType;

typedef enum aclrtMemManagedRangeAttribute {
    ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY = 1,
    ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION = 2,
    ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY = 3,
    ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE = 4,
    ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID = 5,
    ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION = 6,
    ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE = 7,
    ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID = 8
} aclrtMemManagedRangeAttribute;

typedef enum aclrtCmoType {
    ACL_RT_CMO_TYPE_PREFETCH = 0,
    ACL_RT_CMO_TYPE_WRITEBACK = 1,
    ACL_RT_CMO_TYPE_INVALID = 2,
    ACL_RT_CMO_TYPE_FLUSH = 3
} aclrtCmoType;

#define ACL_RT_CMO_MAX_BARRIER_NUM 6U

/* aclrtValueWait comparison. */
#define ACL_STREAM_WAIT_VALUE_GEQ 0x0
#define ACL_STREAM_WAIT_VALUE_EQ 0x1
#define ACL_STREAM_WAIT_VALUE_AND 0x2
#define ACL_STREAM_WAIT_VALUE_NOR 0x3

/* Uncorrectable-error (UCE) reporting. */
#define MAX_MEM_UCE_INFO_ARRAY_SIZE 128
#define UCE_INFO_RESERVED_SIZE 14
#define ACL_RT_MEM_UCE_INFO_MAX_NUM 20
#define ACL_RT_MAX_RECORD_PA_NUM_PER_DEV 20U

/* ------------------------------------------------------------------------ */
/* Events and streams                                                        */
/* ------------------------------------------------------------------------ */

/* aclrtCreateEventWithFlag / aclrtCreateEventExWithFlag flags. */
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010U
#define ACL_EVENT_EXTERNAL 0x00000020U
#define ACL_EVENT_IPC 0x00000040U

#define ACL_EVENT_RECORD_DEFAULT 0x0U
#define ACL_EVENT_RECORD_EXTERNAL 0x01U
#define ACL_EVENT_WAIT_DEFAULT 0x0U
#define ACL_EVENT_WAIT_EXTERNAL 0x01U

/* aclrtQueryEventStatus. Note: 0 means NOT ready here. */
typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

/* aclrtQueryEvent (deprecated). */
typedef enum aclrtEventStatus {
    ACL_EVENT_STATUS_COMPLETE = 0,
    ACL_EVENT_STATUS_NOT_READY = 1,
    ACL_EVENT_STATUS_RESERVED = 2
} aclrtEventStatus;

typedef enum aclrtEventWaitStatus {
    ACL_EVENT_WAIT_STATUS_COMPLETE = 0,
    ACL_EVENT_WAIT_STATUS_NOT_READY = 1,
    ACL_EVENT_WAIT_STATUS_RESERVED = 0xFFFF
} aclrtEventWaitStatus;

/* aclrtCreateStreamWithConfig flags. */
#define ACL_STREAM_FAST_LAUNCH 0x00000001U
#define ACL_STREAM_FAST_SYNC 0x00000002U
#define ACL_STREAM_PERSISTENT 0x00000004U
#define ACL_STREAM_HUGE 0x00000008U
#define ACL_STREAM_CPU_SCHEDULE 0x00000010U
#define ACL_STREAM_DEVICE_USE_ONLY 0x00000020U

/* Stream failure modes (aclrtSetStreamFailureMode). */
#define ACL_CONTINUE_ON_FAILURE 0x0U
#define ACL_STOP_ON_FAILURE 0x1U

typedef enum aclrtStreamStatus {
    ACL_STREAM_STATUS_COMPLETE = 0,
    ACL_STREAM_STATUS_NOT_READY = 1,
    ACL_STREAM_STATUS_RESERVED = 0xFFFF
} aclrtStreamStatus;

typedef enum aclrtCallbackBlockType {
    ACL_CALLBACK_NO_BLOCK = 0,
    ACL_CALLBACK_BLOCK = 1
} aclrtCallbackBlockType;

typedef enum aclrtStreamAttr {
    ACL_STREAM_ATTR_FAILURE_MODE = 1,
    ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK = 2,
    ACL_STREAM_ATTR_USER_CUSTOM_TAG = 3,
    ACL_STREAM_ATTR_CACHE_OP_INFO = 4,
    ACL_STREAM_ATTR_PRIORITY = 5
} aclrtStreamAttr;

typedef union aclrtStreamAttrValue {
    uint64_t failureMode;
    uint32_t overflowSwitch;
    uint32_t userCustomTag;
    uint32_t cacheOpInfoSwitch;
    uint32_t streamPriority;
    uint32_t reserve[4];
} aclrtStreamAttrValue;

/* ------------------------------------------------------------------------ */
/* Run mode, error level, connection type                                    */
/* ------------------------------------------------------------------------ */
typedef enum aclrtRunMode {
    ACL_DEVICE = 0,
    ACL_HOST = 1
} aclrtRunMode;

typedef enum aclrtLastErrLevel {
    ACL_RT_THREAD_LEVEL = 0
} aclrtLastErrLevel;

#define ACL_HOST_DEVICE_CONNECT_TYPE_PCIE 0
#define ACL_HOST_DEVICE_CONNECT_TYPE_HCCS 1
#define ACL_HOST_DEVICE_CONNECT_TYPE_UB 2

/* ------------------------------------------------------------------------ */
/* Kernel binaries and launches (types only; functions arrive later)         */
/* ------------------------------------------------------------------------ */
typedef enum aclrtBinaryLoadOptionType {
    ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD = 1,
    ACL_RT_BINARY_LOAD_OPT_LAZY_MAGIC = 2,
    ACL_RT_BINARY_LOAD_OPT_MAGIC = 2,
    ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE = 3
} aclrtBinaryLoadOptionType;

typedef union aclrtBinaryLoadOptionValue {
    uint32_t isLazyLoad;
    uint32_t magic;
    int32_t cpuKernelMode;
    uint32_t rsv[4];
} aclrtBinaryLoadOptionValue;

typedef struct aclrtBinaryLoadOption {
    aclrtBinaryLoadOptionType type;
    aclrtBinaryLoadOptionValue value;
} aclrtBinaryLoadOption;

typedef struct aclrtBinaryLoadOptions {
    aclrtBinaryLoadOption *options; /* may be NULL */
    size_t numOpt;
} aclrtBinaryLoadOptions;

#define ACL_RT_BINARY_MAGIC_ELF_AICORE 0x43554245
#define ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE 0x41415246
#define ACL_RT_BINARY_MAGIC_ELF_CUBE_CORE 0x41494343

typedef enum aclrtEngineType {
    ACL_RT_ENGINE_TYPE_AIC = 0,
    ACL_RT_ENGINE_TYPE_AIV = 1
} aclrtEngineType;

typedef enum aclrtLaunchKernelAttrId {
    ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE = 1,
    ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE = 2,
    ACL_RT_LAUNCH_KERNEL_ATTR_LOCAL_MEMORY_SIZE = 2, /* deprecated */
    ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE = 3,
    ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET = 4,
    ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH = 5,
    ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP = 6,
    ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7,    /* seconds, uint16 */
    ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US = 8, /* aclrtTimeoutUs */
    ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING = 9
} aclrtLaunchKernelAttrId;

typedef struct aclrtTimeoutUs {
    uint32_t timeoutLow;
    uint32_t timeoutHigh;
} aclrtTimeoutUs;

typedef union aclrtLaunchKernelAttrValue {
    uint8_t schemMode;
    uint32_t localMemorySize;
    uint32_t dynUBufSize;
    aclrtEngineType engineType;
    uint32_t blockDimOffset;
    uint8_t isBlockTaskPrefetch;
    uint8_t isDataDump;
    uint16_t timeout;
    aclrtTimeoutUs timeoutUs;
    uint8_t enableProfiling;
    uint32_t rsv[4];
} aclrtLaunchKernelAttrValue;

typedef struct aclrtLaunchKernelAttr {
    aclrtLaunchKernelAttrId id;
    aclrtLaunchKernelAttrValue value;
} aclrtLaunchKernelAttr;

typedef struct aclrtLaunchKernelCfg {
    aclrtLaunchKernelAttr *attrs; /* the whole cfg may be NULL */
    size_t numAttrs;
} aclrtLaunchKernelCfg;

typedef struct aclrtPlaceHolderInfo {
    uint32_t addrOffset;
    uint32_t dataOffset;
} aclrtPlaceHolderInfo;

/* ------------------------------------------------------------------------ */
/* Structs of the memory API                                                 */
/* ------------------------------------------------------------------------ */
typedef struct aclrtMemLocation {
    uint32_t id; /* device id; ignored for HOST */
    aclrtMemLocationType type;
} aclrtMemLocation;

typedef struct aclrtPtrAttributes {
    aclrtMemLocation location;
    uint32_t pageSize; /* page-table granule in bytes */
    uint32_t rsv[4];
} aclrtPtrAttributes;

typedef struct aclrtMemUsageInfo {
    char name[32];
    uint64_t curMemSize;
    uint64_t memPeakSize;
    size_t reserved[8];
} aclrtMemUsageInfo;

typedef struct aclrtPhysicalMemProp {
    aclrtMemHandleType handleType;
    aclrtMemAllocationType allocationType;
    aclrtMemAttr memAttr;
    aclrtMemLocation location;
    uint64_t reserve;
} aclrtPhysicalMemProp;

typedef union aclrtMallocAttrValue {
    uint16_t moduleId;
    uint32_t deviceId;
    uint32_t vaFlag;
    uint8_t rsv[8];
} aclrtMallocAttrValue;

typedef struct aclrtMallocAttribute {
    aclrtMallocAttrType attr;
    aclrtMallocAttrValue value;
} aclrtMallocAttribute;

typedef struct aclrtMallocConfig {
    aclrtMallocAttribute *attrs; /* numAttrs entries */
    size_t numAttrs;
} aclrtMallocConfig;

typedef struct aclrtMemcpyBatchAttr {
    aclrtMemLocation dstLoc;
    aclrtMemLocation srcLoc;
    uint8_t rsv[16];
} aclrtMemcpyBatchAttr;

typedef struct aclrtMemAccessDesc {
    aclrtMemAccessFlags flags;
    aclrtMemLocation location;
    uint8_t rsv[12];
} aclrtMemAccessDesc;

typedef struct aclrtServerPid {
    uint32_t sdid;
    int32_t *pid;
    size_t num;
} aclrtServerPid;

typedef struct aclrtMemFabricHandle {
    uint8_t data[128];
} aclrtMemFabricHandle;

typedef struct aclrtMemManagedLocation {
    aclrtMemManagedLocationType type;
    int32_t id;
} aclrtMemManagedLocation;

typedef struct aclrtMemUceInfo {
    void *addr;
    size_t len;
    size_t reserved[UCE_INFO_RESERVED_SIZE];
} aclrtMemUceInfo;

typedef struct aclrtIpcEventHandle {
    char reserved[ACL_IPC_EVENT_HANDLE_SIZE];
} aclrtIpcEventHandle;

typedef struct aclrtBarrierCmoInfo {
    aclrtCmoType cmoType;
    uint32_t barrierId;
} aclrtBarrierCmoInfo;

typedef struct aclrtBarrierTaskInfo {
    size_t barrierNum;
    aclrtBarrierCmoInfo cmoInfo[ACL_RT_CMO_MAX_BARRIER_NUM];
} aclrtBarrierTaskInfo;

/* ------------------------------------------------------------------------ */
/* Layout checks (LP64 numbers of CANN's headers; C11 and C++11 only)        */
/* ------------------------------------------------------------------------ */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define ACLRS_LAYOUT_ASSERT(cond, what) static_assert(cond, "aclrs ABI layout: " what);
#define ACLRS_ALIGNOF(type) alignof(type)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ACLRS_LAYOUT_ASSERT(cond, what) _Static_assert(cond, "aclrs ABI layout: " what);
#define ACLRS_ALIGNOF(type) _Alignof(type)
#endif

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64))
ACLRS_LAYOUT_ASSERT(sizeof(aclError) == 4, "aclError")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemMallocPolicy) == 4, "enum size")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemcpyKind) == 4, "enum size")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemAttr) == 4, "enum size")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemLocationType) == 4, "enum size")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtRunMode) == 4, "enum size")

ACLRS_LAYOUT_ASSERT(sizeof(struct MemAttrMapping) == 16, "MemAttrMapping")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(struct MemAttrMapping) == 4, "MemAttrMapping")
ACLRS_LAYOUT_ASSERT(offsetof(struct MemAttrMapping, memAttr) == 12, "MemAttrMapping.memAttr")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemLocation) == 8, "aclrtMemLocation")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemLocation) == 4, "aclrtMemLocation")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemLocation, id) == 0, "aclrtMemLocation.id")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemLocation, type) == 4, "aclrtMemLocation.type")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtPtrAttributes) == 28, "aclrtPtrAttributes")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtPtrAttributes) == 4, "aclrtPtrAttributes")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtPtrAttributes, pageSize) == 8, "aclrtPtrAttributes.pageSize")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtPtrAttributes, rsv) == 12, "aclrtPtrAttributes.rsv")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemUsageInfo) == 112, "aclrtMemUsageInfo")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemUsageInfo) == 8, "aclrtMemUsageInfo")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemUsageInfo, curMemSize) == 32, "aclrtMemUsageInfo.curMemSize")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemUsageInfo, memPeakSize) == 40, "aclrtMemUsageInfo.memPeakSize")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemUsageInfo, reserved) == 48, "aclrtMemUsageInfo.reserved")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtPhysicalMemProp) == 32, "aclrtPhysicalMemProp")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtPhysicalMemProp) == 8, "aclrtPhysicalMemProp")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtPhysicalMemProp, allocationType) == 4, "aclrtPhysicalMemProp.allocationType")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtPhysicalMemProp, memAttr) == 8, "aclrtPhysicalMemProp.memAttr")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtPhysicalMemProp, location) == 12, "aclrtPhysicalMemProp.location")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtPhysicalMemProp, reserve) == 24, "aclrtPhysicalMemProp.reserve")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMallocAttrValue) == 8, "aclrtMallocAttrValue")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMallocAttrValue) == 4, "aclrtMallocAttrValue")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMallocAttribute) == 12, "aclrtMallocAttribute")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMallocAttribute) == 4, "aclrtMallocAttribute")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMallocAttribute, value) == 4, "aclrtMallocAttribute.value")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMallocConfig) == 16, "aclrtMallocConfig")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMallocConfig) == 8, "aclrtMallocConfig")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMallocConfig, numAttrs) == 8, "aclrtMallocConfig.numAttrs")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemcpyBatchAttr) == 32, "aclrtMemcpyBatchAttr")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemcpyBatchAttr) == 4, "aclrtMemcpyBatchAttr")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemcpyBatchAttr, srcLoc) == 8, "aclrtMemcpyBatchAttr.srcLoc")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemcpyBatchAttr, rsv) == 16, "aclrtMemcpyBatchAttr.rsv")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemAccessDesc) == 24, "aclrtMemAccessDesc")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemAccessDesc) == 4, "aclrtMemAccessDesc")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemAccessDesc, location) == 4, "aclrtMemAccessDesc.location")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemAccessDesc, rsv) == 12, "aclrtMemAccessDesc.rsv")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtServerPid) == 24, "aclrtServerPid")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtServerPid) == 8, "aclrtServerPid")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtServerPid, pid) == 8, "aclrtServerPid.pid")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtServerPid, num) == 16, "aclrtServerPid.num")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemFabricHandle) == 128, "aclrtMemFabricHandle")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemFabricHandle) == 1, "aclrtMemFabricHandle")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemManagedLocation) == 8, "aclrtMemManagedLocation")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtMemManagedLocation, id) == 4, "aclrtMemManagedLocation.id")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemUceInfo) == 128, "aclrtMemUceInfo")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtMemUceInfo) == 8, "aclrtMemUceInfo")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtIpcEventHandle) == 64, "aclrtIpcEventHandle")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtIpcEventHandle) == 1, "aclrtIpcEventHandle")

ACLRS_LAYOUT_ASSERT(sizeof(aclrtBinaryLoadOptionValue) == 16, "aclrtBinaryLoadOptionValue")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtBinaryLoadOption) == 20, "aclrtBinaryLoadOption")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtLaunchKernelAttrValue) == 16, "aclrtLaunchKernelAttrValue")
#endif

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

/* Binds deviceId to the calling thread (reference counted per device). */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
/* Drops one reference; the device's default resources go at zero. */
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
/* Releases the device's default resources whatever the reference count. */
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId);
/* The calling thread's current device. */
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);
/* Number of usable devices; valid ids are 0 .. count-1. */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);
/* Where the software stack runs; always ACL_HOST on supported products. */
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

/* Allocates size bytes on the current device; *devPtr is 64-byte aligned. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
/* Frees memory from aclrtMalloc at once, without synchronising anything. */
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
/* Allocates pinned host memory; *hostPtr is 64-byte aligned. */
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
/* Frees memory from aclrtMallocHost at once. */
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);
/* Synchronous copy of count bytes; destMax bounds the destination. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
/* Synchronous fill of count bytes with the low byte of value. */
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
/* Free and total bytes of memory class attr on the current device. */
ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);
/* As aclrtMalloc, rounding size up to 32 bytes only (no padding on any SoC). */
ACL_FUNC_VISIBILITY aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
/* As aclrtMalloc; policy is one of HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY, HUGE1G_ONLY. */
ACL_FUNC_VISIBILITY aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
/* Allocates with a policy that may OR a bandwidth flag, USER_SPACE_READONLY and a base
 * policy, and optional attributes (cfg may be NULL). */
ACL_FUNC_VISIBILITY aclError aclrtMallocWithCfg(void **devPtr, size_t size, aclrtMemMallocPolicy policy,
                                                aclrtMallocConfig *cfg);
/* Memory the on-chip task scheduler can use; as aclrtMallocWithCfg. */
ACL_FUNC_VISIBILITY aclError aclrtMallocForTaskScheduler(void **devPtr, size_t size,
                                                         aclrtMemMallocPolicy policy,
                                                         aclrtMallocConfig *cfg);
/* Pinned host memory with optional attributes (MODULE_ID, VA_FLAG); cfg may be NULL. */
ACL_FUNC_VISIBILITY aclError aclrtMallocHostWithCfg(void **ptr, uint64_t size, aclrtMallocConfig *cfg);
/* Waits for every task of the pointer's device (or, for pinned host memory, of every device in
 * use), then frees. */
ACL_FUNC_VISIBILITY aclError aclrtFreeWithDevSync(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtFreeHostWithDevSync(void *hostPtr);
/* Caches are coherent: both check the range and return. size must not be 0. */
ACL_FUNC_VISIBILITY aclError aclrtMemFlush(void *devPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtMemInvalidate(void *devPtr, size_t size);
/* Per-component current and peak usage of deviceId, largest first. */
ACL_FUNC_VISIBILITY aclError aclrtGetMemUsageInfo(int32_t deviceId, aclrtMemUsageInfo *memUsageInfo,
                                                  size_t inputNum, size_t *outputNum);
/* *checkResult = 1 when every address is of a type in memType (ACL_RT_MEM_TYPE_*). */
ACL_FUNC_VISIBILITY aclError aclrtCheckMemType(void **addrList, uint32_t size, uint32_t memType,
                                               uint32_t *checkResult, uint32_t reserve);
/* Where ptr lives (host, device, unregistered) and its page size. */
ACL_FUNC_VISIBILITY aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes);
/* Base and size of the allocation containing ptr (either output may be NULL). */
ACL_FUNC_VISIBILITY aclError aclrtMemGetAddressRange(void *ptr, void **pbase, size_t *psize);

/* Virtual memory management, shareable handles, IPC memory, host registration
 * and peer access. */
ACL_FUNC_VISIBILITY aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size,
                                                 const aclrtPhysicalMemProp *prop, uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtFreePhysical(aclrtDrvMemHandle handle);
ACL_FUNC_VISIBILITY aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment,
                                                    void *expectPtr, uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtReleaseMemAddress(void *virPtr);
ACL_FUNC_VISIBILITY aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                                         uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtUnmapMem(void *virPtr);
ACL_FUNC_VISIBILITY aclError aclrtMemSetAccess(void *virPtr, size_t size, aclrtMemAccessDesc *desc, size_t count);
ACL_FUNC_VISIBILITY aclError aclrtMemGetAccess(void *virPtr, aclrtMemLocation *location, uint64_t *flag);
ACL_FUNC_VISIBILITY aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop,
                                                              aclrtMemGranularityOptions option,
                                                              size_t *granularity);
ACL_FUNC_VISIBILITY aclError aclrtMemRetainAllocationHandle(void *virPtr, aclrtDrvMemHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtMemGetAllocationPropertiesFromHandle(aclrtDrvMemHandle handle,
                                                                       aclrtPhysicalMemProp *prop);
ACL_FUNC_VISIBILITY aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle,
                                                             aclrtMemHandleType handleType, uint64_t flags,
                                                             uint64_t *shareableHandle);
ACL_FUNC_VISIBILITY aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags,
                                                               aclrtMemSharedHandleType shareType,
                                                               void *shareableHandle);
ACL_FUNC_VISIBILITY aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                                               aclrtDrvMemHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtMemImportFromShareableHandleV2(void *shareableHandle,
                                                                 aclrtMemSharedHandleType shareType,
                                                                 uint64_t flags, aclrtDrvMemHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid,
                                                             size_t pidNum);
ACL_FUNC_VISIBILITY aclError aclrtMemSetPidToShareableHandleV2(void *shareableHandle,
                                                               aclrtMemSharedHandleType shareType, int32_t *pid,
                                                               size_t pidNum);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetBareTgid(int32_t *pid);
ACL_FUNC_VISIBILITY aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len,
                                                     uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtIpcMemClose(const char *key);
ACL_FUNC_VISIBILITY aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);
ACL_FUNC_VISIBILITY aclError aclrtIpcMemSetAttr(const char *key, aclrtIpcMemAttrType type, uint64_t attr);
ACL_FUNC_VISIBILITY aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type, void **devPtr);
ACL_FUNC_VISIBILITY aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtHostUnregister(void *ptr);
ACL_FUNC_VISIBILITY aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);
ACL_FUNC_VISIBILITY aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId);

/* ------------------------------------------------------------------------ */
/* Streams, events, host calls, kernels, asynchronous memory operations      */
/* (a NULL stream means the current device's default stream)                 */
/* ------------------------------------------------------------------------ */

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);
/* Waits for the stream's tasks; the default stream cannot be destroyed. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
/* Drops the stream's queued tasks instead of waiting for them. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream);
/* Returns the code of the first failed task since the last synchronisation. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
/* timeout: -1 forever, 0 check only, > 0 milliseconds; 507046 on timeout. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);
/* Microseconds of the device's monotonic clock at which the record ran. */
ACL_FUNC_VISIBILITY aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp);

ACL_FUNC_VISIBILITY aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);
ACL_FUNC_VISIBILITY aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                                 aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtProcessReport(int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);

ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext *context);
ACL_FUNC_VISIBILITY aclError aclrtGetLastError(aclrtLastErrLevel level);
ACL_FUNC_VISIBILITY aclError aclrtPeekAtLastError(aclrtLastErrLevel level);

/* On the software NPU a binary is a host shared object (see acl/acl_sim.h). */
ACL_FUNC_VISIBILITY aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions *options,
                                                     aclrtBinHandle *binHandle);
ACL_FUNC_VISIBILITY aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                                    aclrtFuncHandle *funcHandle);
ACL_FUNC_VISIBILITY aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle);
ACL_FUNC_VISIBILITY aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData,
                                               size_t argsSize, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtLaunchKernelV2(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData,
                                                 size_t argsSize, aclrtLaunchKernelCfg *cfg, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                                           aclrtStream stream, aclrtLaunchKernelCfg *cfg,
                                                           void *hostArgs, size_t argsSize,
                                                           aclrtPlaceHolderInfo *placeHolderArray,
                                                           size_t placeHolderNum);

/* Enqueued when both ends are device or pinned memory; with pageable host
 * memory the stream is synchronised and the copy done before returning. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t height, aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                size_t width, size_t height, aclrtMemcpyKind kind,
                                                aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyBatch(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                              size_t numBatches, aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes,
                                              size_t numAttrs, size_t *failIndex);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyBatchV2(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                                size_t numBatches, aclrtMemcpyBatchAttr *attrs,
                                                size_t *attrsIndexes, size_t numAttrs);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyBatchAsync(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                                   size_t numBatches, aclrtMemcpyBatchAttr *attrs,
                                                   size_t *attrsIndexes, size_t numAttrs, size_t *failIndex,
                                                   aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemcpyBatchAsyncV2(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                                     size_t numBatches, aclrtMemcpyBatchAttr *attrs,
                                                     size_t *attrsIndexes, size_t numAttrs, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                                              aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemsetD32(void *ptr, size_t memSize, uint32_t value, size_t N);
ACL_FUNC_VISIBILITY aclError aclrtMemsetD32Async(void *ptr, size_t memSize, uint32_t value, size_t N,
                                                 aclrtStream stream);
/* flag must be 0. */
ACL_FUNC_VISIBILITY aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);
/* flag: ACL_STREAM_WAIT_VALUE_GEQ / _EQ / _AND / _NOR. */
ACL_FUNC_VISIBILITY aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

#define ACL_PKG_VERSION_MAX_SIZE 128
#define ACL_PKG_VERSION_PARTS_MAX_SIZE 64

/* Packages aclsysGetCANNVersion knows. */
typedef enum aclCANNPackageName {
    ACL_PKG_NAME_CANN,
    ACL_PKG_NAME_RUNTIME,
    ACL_PKG_NAME_COMPILER,
    ACL_PKG_NAME_HCCL,
    ACL_PKG_NAME_TOOLKIT,
    ACL_PKG_NAME_OPP,
    ACL_PKG_NAME_OPP_KERNEL,
    ACL_PKG_NAME_DRIVER
} aclCANNPackageName;

/* A package version split into its parts (512 bytes). */
typedef struct aclCANNPackageVersion {
    char version[ACL_PKG_VERSION_MAX_SIZE];
    char majorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char minorVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];
    char releaseVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE]; /* "0" if absent */
    char patchVersion[ACL_PKG_VERSION_PARTS_MAX_SIZE];   /* "0" if absent */
    char reserved[ACL_PKG_VERSION_MAX_SIZE];
} aclCANNPackageVersion;

/*
 * The version string of package pkgName (for example "runtime") into
 * versionStr, a char[ACL_PKG_VERSION_MAX_SIZE]. "runtime" is aclrs itself;
 * other packages are read from $ASCEND_HOME_PATH/share/info/<pkgName>/version.info
 * ("driver" and "firmware" from the directories /etc/ascend_install.info names).
 * NULL: ACL_ERROR_INVALID_PARAM; no such package: ACL_ERROR_INVALID_FILE.
 */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionStr(char *pkgName, char *versionStr);

/*
 * The same version as a number that orders releases:
 * MAJOR*10000000 + MINOR*100000 + PATCH*1000, minus 300/200/100 for an
 * alpha/beta/rc suffix, plus the suffix's number (9.0.0-rc.1 -> 89999901).
 */
ACL_FUNC_VISIBILITY aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum);

/* Deprecated: the version of a named package, split into its parts. */
ACL_FUNC_VISIBILITY aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version);

/* Deprecated: the API version of these headers (ACL_MAJOR/MINOR/PATCH_VERSION). */
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);

#ifdef __cplusplus
}
#endif

/* Included last: they use the types above (see the file comment). */
#include "acl_rt_allocator.h"
#include "acl_rt_memory_soma.h"
#include "acl_rt_unsupported.h"
#include "acl_rt_kernel_args.h"
#include "acl_rt_device_facts.h"
#include "acl_rt_memory_ext.h"
#include "acl_rt_notify_stream.h"

#endif /* ACLRS_ACL_ACL_RT_H */
