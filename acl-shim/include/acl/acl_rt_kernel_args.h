/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_kernel_args.h - kernel arguments, config launches and kernel
 * binaries beyond files, as CANN 1.17.0 declares them in acl/acl_rt.h
 * (acl/acl_rt.h includes this header; a program may include either).
 *
 * On the software NPU a binary is a host shared object and a kernel an
 * exported function of the sim kernel ABI (acl/acl_sim.h).
 *
 * Argument lists (aclrtKernelArgs*): parameters are appended in the kernel's
 * parameter order; each parameter, placeholder slot and placeholder data area
 * starts at the next multiple of 8 bytes. aclrtKernelArgsInit resets and
 * returns the calling thread's one list (room for 128 parameters, 64 KiB);
 * aclrtKernelArgsInitByUserMem builds a list in the caller's memory. Nothing
 * may be appended after the first placeholder buffer is taken or after
 * Finalize (ACL_ERROR_RT_FEATURE_NOT_SUPPORT); ParaUpdate changes a value
 * parameter (exactly its size) and needs a new Finalize before the next
 * launch. A launch copies the bytes and points every placeholder slot at its
 * data in the copy. Overflow of the 128 parameters or of the buffer, a
 * placeholder used as a value or the reverse: ACL_ERROR_RT_PARAM_INVALID; a
 * parameter handle of an earlier Init: ACL_ERROR_RT_INVALID_HANDLE.
 */
#ifndef ACLRS_ACL_ACL_RT_KERNEL_ARGS_H
#define ACLRS_ACL_ACL_RT_KERNEL_ARGS_H

#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef __BISHENG_CCEC__
#ifdef __cplusplus
struct dim3 {
    uint32_t x;
    uint32_t y;
    uint32_t z;
    dim3(uint32_t vx = 1, uint32_t vy = 1, uint32_t vz = 1) : x(vx), y(vy), z(vz) {}
};
#else
typedef struct dim3 {
    uint32_t x;
    uint32_t y;
    uint32_t z;
} dim3;
#endif
#endif

/* struct rtExceptionInfo is aclrtExceptionInfo (acl/acl_rt_unsupported.h), which may be
 * declared after this header when that header is included first. */
struct rtExceptionInfo;
typedef void (*aclrtOpExceptionCallback)(struct rtExceptionInfo *exceptionInfo, void *userData);

typedef enum {
    ACL_FUNC_ATTR_KERNEL_TYPE = 1,
    ACL_FUNC_ATTR_KERNEL_RATIO = 2,
    ACL_FUNC_ATTR_KERNEL_SCHED_MODE = 3
} aclrtFuncAttribute;

typedef enum {
    ACL_KERNEL_TYPE_AICORE = 0,
    ACL_KERNEL_TYPE_CUBE = 1,
    ACL_KERNEL_TYPE_VECTOR = 2,
    ACL_KERNEL_TYPE_MIX = 3,
    ACL_KERNEL_TYPE_AICPU = 100
} aclrtKernelType;

/* The bytes of a list's handle: the header and 128 parameter records. */
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsGetHandleMemSize(aclrtFuncHandle funcHandle, size_t *memSize);
/* userArgsSize (each parameter rounded up to 8) plus 64 bytes. */
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsGetMemSize(aclrtFuncHandle funcHandle, size_t userArgsSize,
                                                       size_t *actualArgsSize);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsInitByUserMem(aclrtFuncHandle funcHandle, aclrtArgsHandle argsHandle,
                                                          void *userHostMem, size_t actualArgsSize);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize,
                                                   aclrtParamHandle *paramHandle);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsAppendPlaceHolder(aclrtArgsHandle argsHandle,
                                                              aclrtParamHandle *paramHandle);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsGetPlaceHolderBuffer(aclrtArgsHandle argsHandle,
                                                                 aclrtParamHandle paramHandle, size_t dataSize,
                                                                 void **bufferAddr);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsParaUpdate(aclrtArgsHandle argsHandle, aclrtParamHandle paramHandle,
                                                       void *param, size_t paramSize);
ACL_FUNC_VISIBILITY aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle);
/*
 * Launches a finalized list. reserve must be NULL; cfg may be NULL. Checks of
 * cfg: attrs NULL, TIMEOUT with TIMEOUT_US, schemMode >= 2, a flag not 0/1:
 * ACL_ERROR_RT_PARAM_INVALID; unknown attribute ids are ignored.
 */
ACL_FUNC_VISIBILITY aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks,
                                                         aclrtStream stream, aclrtLaunchKernelCfg *cfg,
                                                         aclrtArgsHandle argsHandle, void *reserve);
/* Needs the kernel's parameter list, which sim kernels do not carry: ACL_ERROR_RT_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclError aclrtLaunchKernelWithArgsArray(void *func, uint32_t numBlocks, aclrtStream stream,
                                                            aclrtLaunchKernelCfg *cfg, void **args);
/* SIMT launches: ACL_ERROR_RT_FEATURE_NOT_SUPPORT (the sim has no SIMT threads). */
ACL_FUNC_VISIBILITY aclError aclrtLaunchSIMTKernelWithArgsArray(void *func, dim3 gridDim, dim3 blockDim,
                                                                size_t dynUbufSize, aclrtStream stream,
                                                                aclrtLaunchKernelCfg *cfg, void **args);
ACL_FUNC_VISIBILITY aclError aclrtLaunchSIMTKernelWithHostArgs(void *func, dim3 gridDim, dim3 blockDim,
                                                               size_t dynUbufSize, aclrtStream stream,
                                                               aclrtLaunchKernelCfg *cfg, void *hostArgs,
                                                               size_t argsSize,
                                                               aclrtPlaceHolderInfo *placeHolderArray,
                                                               size_t placeHolderNum);

/*
 * Loads a binary (a host shared object) from bytes in host memory. Options:
 * LAZY_LOAD 0/1, MAGIC one of ACL_RT_BINARY_MAGIC_ELF_*, CPU_KERNEL_MODE 2
 * (kernels then come from aclrtRegisterCpuFunc only); anything else, a NULL
 * options->options, length 0 or bytes that are not a shared object:
 * ACL_ERROR_RT_PARAM_INVALID.
 */
ACL_FUNC_VISIBILITY aclError aclrtBinaryLoadFromData(const void *data, size_t length,
                                                     const aclrtBinaryLoadOptions *options,
                                                     aclrtBinHandle *binHandle);
/* Keeps the pointer: data must stay valid until aclrtBinaryLoad has run. NULL for NULL data. */
ACL_FUNC_VISIBILITY aclrtBinary aclrtCreateBinary(const void *data, size_t dataLen);
ACL_FUNC_VISIBILITY aclError aclrtDestroyBinary(aclrtBinary binary);
ACL_FUNC_VISIBILITY aclError aclrtBinaryLoad(const aclrtBinary binary, aclrtBinHandle *binHandle);
ACL_FUNC_VISIBILITY aclError aclrtRegisterCpuFunc(const aclrtBinHandle handle, const char *funcName,
                                                  const char *kernelName, aclrtFuncHandle *funcHandle);
/* Sim binaries have no tiling keys: ACL_ERROR_RT_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclError aclrtBinaryGetFunctionByEntry(aclrtBinHandle binHandle, uint64_t funcEntry,
                                                           aclrtFuncHandle *funcHandle);
/* No device image on the software NPU: ACL_ERROR_RT_FEATURE_NOT_SUPPORT. */
ACL_FUNC_VISIBILITY aclError aclrtBinaryGetDevAddress(const aclrtBinHandle binHandle, void **binAddr,
                                                      size_t *binSize);
/* No device image on the software NPU: ACL_ERROR_RT_FEATURE_NOT_SUPPORT. */
ACL_FUNC_VISIBILITY aclError aclrtBinaryGetGlobal(aclrtBinHandle binHandle, const char *name, void **dptr,
                                                  size_t *size);
/* ACL_ERROR_RT_FEATURE_NOT_SUPPORT: faults surface at synchronisation and in aclrtGetErrorVerbose. */
ACL_FUNC_VISIBILITY aclError aclrtBinarySetExceptionCallback(aclrtBinHandle binHandle,
                                                             aclrtOpExceptionCallback callback, void *userData);
/* No compiler registers kernel symbols with the sim: ACL_ERROR_RT_INVALID_DEVICE_FUNCTION. */
ACL_FUNC_VISIBILITY aclError aclrtGetFuncBySymbol(const void *symbol, aclrtFuncHandle *funcHandle);
ACL_FUNC_VISIBILITY aclError aclrtFunctionGetBinary(const aclrtFuncHandle funcHandle, aclrtBinHandle *binHandle);
/* No device image on the software NPU: ACL_ERROR_RT_FEATURE_NOT_SUPPORT. */
ACL_FUNC_VISIBILITY aclError aclrtGetFunctionAddr(aclrtFuncHandle funcHandle, void **aicAddr, void **aivAddr);
/* No device image on the software NPU: ACL_ERROR_RT_FEATURE_NOT_SUPPORT. */
ACL_FUNC_VISIBILITY aclError aclrtGetFunctionSize(aclrtFuncHandle funcHandle, size_t *aicSize, size_t *aivSize);
ACL_FUNC_VISIBILITY aclError aclrtGetFunctionName(aclrtFuncHandle funcHandle, uint32_t maxLen, char *name);
ACL_FUNC_VISIBILITY aclError aclrtGetFunctionAttribute(aclrtFuncHandle funcHandle, aclrtFuncAttribute attrType,
                                                       int64_t *attrValue);
/* Sim kernels carry no parameter metadata: ACL_ERROR_RT_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclError aclrtFunctionGetParamCount(const void *func, size_t *paramCount);
ACL_FUNC_VISIBILITY aclError aclrtFunctionGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset,
                                                       size_t *paramSize);
/* 0: sim kernels are not SIMT kernels. flags must be 0. */
ACL_FUNC_VISIBILITY aclError aclrtFunctionGetAvailDynUbufPerBlock(void *func, uint32_t flags,
                                                                  size_t *dynamicUbufSize);

#ifdef __cplusplus
}
#endif

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64)) && !defined(__BISHENG_CCEC__)
ACLRS_LAYOUT_ASSERT(sizeof(struct dim3) == 12, "dim3")
#endif

#endif /* ACLRS_ACL_ACL_RT_KERNEL_ARGS_H */
