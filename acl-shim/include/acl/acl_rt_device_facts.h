/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_device_facts.h - resource limits, device information and
 * capabilities, and error details, as CANN 1.17.0 declares them in
 * acl/acl_rt.h (acl/acl_rt.h includes this header; a program may include
 * either).
 *
 * Every number comes from the device's SoC profile (ACLRS_SIM_SOC on the
 * software NPU); the README has the table.
 */
#ifndef ACLRS_ACL_ACL_RT_DEVICE_FACTS_H
#define ACLRS_ACL_ACL_RT_DEVICE_FACTS_H

#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Resource limits                                                           */
/* ------------------------------------------------------------------------ */
typedef enum {
    ACL_RT_DEV_RES_CUBE_CORE = 0,
    ACL_RT_DEV_RES_VECTOR_CORE
} aclrtDevResLimitType;

/*
 * Core counts the process (or a stream) may use. Resolution: stream limit >
 * process limit > the profile's core count. A type other than 0/1 or a value
 * above the core count: ACL_ERROR_RT_PARAM_INVALID; a bad device id:
 * ACL_ERROR_RT_INVALID_DEVICEID; a device not set in this process:
 * ACL_ERROR_RT_DEV_SETUP_ERROR (507033). NULL stream: the default stream.
 * Limits are advisory: a launch is not clamped to them.
 */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t value);
ACL_FUNC_VISIBILITY aclError aclrtResetDeviceResLimit(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetStreamResLimit(aclrtStream stream, aclrtDevResLimitType type, uint32_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetStreamResLimit(aclrtStream stream, aclrtDevResLimitType type, uint32_t value);
ACL_FUNC_VISIBILITY aclError aclrtResetStreamResLimit(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtUseStreamResInCurrentThread(aclrtStream stream);
/* Unbinds only when stream is the one bound; otherwise does nothing. */
ACL_FUNC_VISIBILITY aclError aclrtUnuseStreamResInCurrentThread(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, uint32_t *value);

/* ------------------------------------------------------------------------ */
/* Device information and capabilities                                       */
/* ------------------------------------------------------------------------ */
typedef enum {
    ACL_DEV_ATTR_AICPU_CORE_NUM = 1,
    ACL_DEV_ATTR_AICORE_CORE_NUM = 101,
    ACL_DEV_ATTR_CUBE_CORE_NUM = 102,
    ACL_DEV_ATTR_VECTOR_CORE_NUM = 201,
    ACL_DEV_ATTR_WARP_SIZE = 202,
    ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE = 203,
    ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE = 204,
    ACL_DEV_ATTR_LOCAL_MEM_PER_VECTOR_CORE = 204, /* deprecated */
    ACL_DEV_ATTR_MAX_GRID_DIM_X = 205,
    ACL_DEV_ATTR_MAX_GRID_DIM_Y = 206,
    ACL_DEV_ATTR_MAX_GRID_DIM_Z = 207,
    ACL_DEV_ATTR_MAX_BLOCK_PER_GRID = 208,
    ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK = 209,
    ACL_DEV_ATTR_MAX_BLOCK_DIM_X = 210,
    ACL_DEV_ATTR_MAX_BLOCK_DIM_Y = 211,
    ACL_DEV_ATTR_MAX_BLOCK_DIM_Z = 212,
    ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE = 301,
    ACL_DEV_ATTR_L2_CACHE_SIZE = 302,
    ACL_DEV_ATTR_SMP_ID = 401,
    ACL_DEV_ATTR_PHY_CHIP_ID = 402,
    ACL_DEV_ATTR_SUPER_POD_DEVICE_ID = 403,
    ACL_DEV_ATTR_SUPER_POD_DEVIDE_ID = 403, /* deprecated spelling */
    ACL_DEV_ATTR_SUPER_POD_SERVER_ID = 404,
    ACL_DEV_ATTR_SUPER_POD_ID = 405,
    ACL_DEV_ATTR_CUST_OP_PRIVILEGE = 406,
    ACL_DEV_ATTR_MAINBOARD_ID = 407,
    ACL_DEV_ATTR_HD_CONNECT_TYPE = 408,
    ACL_DEV_ATTR_DEVICE_FORM_FACTOR = 409,
    ACL_DEV_ATTR_IS_VIRTUAL = 501,
    ACL_DEV_ATTR_NPU_ARCH = 601
} aclrtDevAttr;

#define ACL_DEVICE_FORM_FACTOR_POD 0
#define ACL_DEVICE_FORM_FACTOR_A_K 1
#define ACL_DEVICE_FORM_FACTOR_A_X 2
#define ACL_DEVICE_FORM_FACTOR_PCIE_CARD 3

/*
 * No device need be set. A deviceId out of range or an unknown attr:
 * ACL_ERROR_RT_PARAM_INVALID. SIMT attributes (202-212) read 0 except on
 * Ascend 950; HD_CONNECT_TYPE and DEVICE_FORM_FACTOR are reported on 950 only
 * and CUST_OP_PRIVILEGE everywhere but 950 (elsewhere:
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT).
 */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value);

#define ACL_DEV_FEATURE_SUPPORT 0x00000001
#define ACL_DEV_FEATURE_NOT_SUPPORT 0x00000000

typedef enum {
    ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV = 1,
    ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV = 21
} aclrtDevFeatureType;

/* *value is ACL_DEV_FEATURE_SUPPORT or _NOT_SUPPORT; a type out of range: ACL_ERROR_RT_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCapability(int32_t deviceId, aclrtDevFeatureType devFeatureType,
                                                      int32_t *value);

/* ------------------------------------------------------------------------ */
/* Error details                                                             */
/* ------------------------------------------------------------------------ */
typedef enum {
    ACL_RT_NO_ERROR = 0,
    ACL_RT_ERROR_MEMORY = 1,
    ACL_RT_ERROR_L2 = 2,
    ACL_RT_ERROR_AICORE = 3,
    ACL_RT_ERROR_LINK = 4,
    ACL_RT_ERROR_L3_PORT = 5,
    ACL_RT_ERROR_OTHERS = 0xFFFF
} aclrtErrorType;

typedef enum aclrtAicoreErrorType {
    ACL_RT_AICORE_ERROR_UNKNOWN,
    ACL_RT_AICORE_ERROR_SW,
    ACL_RT_AICORE_ERROR_HW_LOCAL
} aclrtAicoreErrorType;

typedef struct {
    size_t arraySize;
    aclrtMemUceInfo memUceInfoArray[ACL_RT_MEM_UCE_INFO_MAX_NUM];
} aclrtMemUceInfoArray;

typedef union aclrtErrorInfoDetail {
    aclrtMemUceInfoArray uceInfo;
    aclrtAicoreErrorType aicoreErrType;
} aclrtErrorInfoDetail;

typedef struct aclrtErrorInfo {
    uint8_t tryRepair;
    uint8_t hasDetail;
    uint8_t reserved[2];
    aclrtErrorType errorType;
    aclrtErrorInfoDetail detail;
} aclrtErrorInfo;

/*
 * The newest failed task of the device since its last repair or reset: a
 * kernel's fault gives ACL_RT_ERROR_AICORE with hasDetail = 1 and
 * detail.aicoreErrType = ACL_RT_AICORE_ERROR_SW; another task's failure
 * ACL_RT_ERROR_OTHERS; none (or a device not set) ACL_RT_NO_ERROR. Writes
 * tryRepair, hasDetail, errorType and detail.aicoreErrType only. The stream,
 * task, code and kernel name are logged at INFO.
 */
ACL_FUNC_VISIBILITY aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo *errorInfo);
/* ACL_RT_NO_ERROR / ACL_RT_ERROR_MEMORY clear the record; other types: ACL_ERROR_RT_PARAM_INVALID. */
ACL_FUNC_VISIBILITY aclError aclrtRepairError(int32_t deviceId, const aclrtErrorInfo *errorInfo);

#ifdef __cplusplus
}
#endif

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64))
ACLRS_LAYOUT_ASSERT(sizeof(aclrtMemUceInfoArray) == 2568, "aclrtMemUceInfoArray")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtErrorInfoDetail) == 2568, "aclrtErrorInfoDetail")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtErrorInfo) == 2576, "aclrtErrorInfo")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtErrorInfo) == 8, "aclrtErrorInfo")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtErrorInfo, errorType) == 4, "aclrtErrorInfo.errorType")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtErrorInfo, detail) == 8, "aclrtErrorInfo.detail")
#endif

#endif /* ACLRS_ACL_ACL_RT_DEVICE_FACTS_H */
