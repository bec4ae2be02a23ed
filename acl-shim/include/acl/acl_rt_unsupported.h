/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_unsupported.h - the rest of CANN's acl_rt.h surface for devices,
 * contexts, streams, events, memory and kernels, which aclrs declares and
 * exports but does not implement.
 *
 * Names, signatures, enum values and struct layouts follow CANN 1.17.0
 * (include/external/acl/acl_rt.h), so that programs written for CANN compile
 * and link unchanged. Every function declared here returns
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) and leaves a message naming
 * itself for aclGetRecentErrMsg, whatever its arguments; aclrtCreateGroupInfo
 * returns NULL. A call that aclrs implements moves from here to acl/acl_rt.h.
 *
 * acl/acl_rt.h includes this header (and this one includes acl/acl_rt.h for the
 * types it uses), so either may be included first.
 */
#ifndef ACLRS_ACL_ACL_RT_UNSUPPORTED_H
#define ACLRS_ACL_ACL_RT_UNSUPPORTED_H

#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Types of these calls (CANN 1.17.0 names, values and layouts)              */
/* ------------------------------------------------------------------------ */

typedef enum aclrtTsId { ACL_TS_ID_AICORE = 0, ACL_TS_ID_AIVECTOR = 1, ACL_TS_ID_RESERVED = 2 } aclrtTsId;

typedef enum aclrtGroupAttr {
    ACL_GROUP_AICORE_INT,
    ACL_GROUP_AIV_INT,
    ACL_GROUP_AIC_INT,
    ACL_GROUP_SDMANUM_INT,
    ACL_GROUP_ASQNUM_INT,
    ACL_GROUP_GROUPID_INT
} aclrtGroupAttr;

typedef enum aclrtFloatOverflowMode {
    ACL_RT_OVERFLOW_MODE_SATURATION = 0,
    ACL_RT_OVERFLOW_MODE_INFNAN,
    ACL_RT_OVERFLOW_MODE_UNDEF
} aclrtFloatOverflowMode;

typedef struct tagRtGroupInfo aclrtGroupInfo;

typedef enum {
    ACL_RT_DEVICE_STATE_SET_PRE = 0,
    ACL_RT_DEVICE_STATE_SET_POST,
    ACL_RT_DEVICE_STATE_RESET_PRE,
    ACL_RT_DEVICE_STATE_RESET_POST
} aclrtDeviceState;

typedef void (*aclrtDeviceStateCallback)(int32_t deviceId, aclrtDeviceState state, void *args);

typedef enum { ACL_RT_DEVICE_TASK_ABORT_PRE = 0, ACL_RT_DEVICE_TASK_ABORT_POST } aclrtDeviceTaskAbortStage;

typedef int32_t (*aclrtDeviceTaskAbortCallback)(int32_t deviceId, aclrtDeviceTaskAbortStage stage, uint32_t timeout,
                                                void *args);

typedef enum {
    ACL_RT_EQUAL = 0,
    ACL_RT_NOT_EQUAL,
    ACL_RT_GREATER,
    ACL_RT_GREATER_OR_EQUAL,
    ACL_RT_LESS,
    ACL_RT_LESS_OR_EQUAL
} aclrtCondition;

typedef enum { ACL_RT_SWITCH_INT32 = 0, ACL_RT_SWITCH_INT64 = 1 } aclrtCompareDataType;

typedef enum aclrtDeviceLimit {
    ACL_RT_DEV_LIMIT_SIMT_STACK_SIZE = 0,
    ACL_RT_DEV_LIMIT_SIMT_DVG_WARP_STACK_SIZE = 1,
    ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE = 2,
    ACL_RT_DEV_LIMIT_SIMD_PRINTF_FIFO_SIZE_PER_CORE = 3,
    ACL_RT_DEV_LIMIT_SIMT_PRINTF_FIFO_SIZE = 4,
} aclrtDeviceLimit;

typedef struct aclrtUuid {
    char bytes[16];
} aclrtUuid;

typedef enum {
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM = 10,
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX = 11,
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN = 12,
    ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL = 13
} aclrtReduceKind;

typedef enum aclRegisterCallbackType {
    ACL_REG_TYPE_ACL_MODEL,
    ACL_REG_TYPE_ACL_OP_EXECUTOR,
    ACL_REG_TYPE_ACL_OP_CBLAS,
    ACL_REG_TYPE_ACL_OP_COMPILER,
    ACL_REG_TYPE_ACL_TDT_CHANNEL,
    ACL_REG_TYPE_ACL_TDT_QUEUE,
    ACL_REG_TYPE_ACL_DVPP,
    ACL_REG_TYPE_ACL_RETR,
    ACL_REG_TYPE_OTHER = 0xFFFF,
} aclRegisterCallbackType;

typedef aclError (*aclInitCallbackFunc)(const char *configStr, size_t len, void *userData);

typedef aclError (*aclFinalizeCallbackFunc)(void *userData);

typedef enum {
    ACL_RT_SNAPSHOT_LOCK_PRE = 0,
    ACL_RT_SNAPSHOT_BACKUP_PRE,
    ACL_RT_SNAPSHOT_BACKUP_POST,
    ACL_RT_SNAPSHOT_RESTORE_PRE,
    ACL_RT_SNAPSHOT_RESTORE_POST,
    ACL_RT_SNAPSHOT_UNLOCK_POST
} aclrtSnapShotStage;

typedef uint32_t (*aclrtSnapShotCallBack)(int32_t deviceId, void *args);

typedef enum aclrtProcessState { ACL_RT_PROCESS_STATE_RUNNING = 0, ACL_RT_PROCESS_STATE_LOCKED } aclrtProcessState;

typedef struct aclrtSnapShotBackupArgs {
    uint32_t backupFlags;
    char reserved[60];
} aclrtSnapShotBackupArgs;

typedef struct aclrtSnapShotRestoreArgs {
    uint32_t restoreFlags;
    char reserved[60];
} aclrtSnapShotRestoreArgs;

/* Link types between two devices (aclrtGetDevicesTopo). */
#define ACL_RT_DEVS_TOPOLOGY_HCCS 0x01ULL
#define ACL_RT_DEVS_TOPOLOGY_PIX 0x02ULL
#define ACL_RT_DEVS_TOPOLOGY_PIB 0x04ULL /* reserved, not reported */
#define ACL_RT_DEVS_TOPOLOGY_PHB 0x08ULL
#define ACL_RT_DEVS_TOPOLOGY_SYS 0x10ULL
#define ACL_RT_DEVS_TOPOLOGY_SIO 0x20ULL
#define ACL_RT_DEVS_TOPOLOGY_HCCS_SW 0x40ULL

typedef enum {
    ACL_RT_ATOMIC_OPERATION_INTEGER_ADD = 0,
    ACL_RT_ATOMIC_OPERATION_INTEGER_MIN = 1,
    ACL_RT_ATOMIC_OPERATION_INTEGER_MAX = 2,
    ACL_RT_ATOMIC_OPERATION_INTEGER_INCREMENT = 3,
    ACL_RT_ATOMIC_OPERATION_INTEGER_DECREMENT = 4,
    ACL_RT_ATOMIC_OPERATION_AND = 5,
    ACL_RT_ATOMIC_OPERATION_OR = 6,
    ACL_RT_ATOMIC_OPERATION_XOR = 7,
    ACL_RT_ATOMIC_OPERATION_EXCHANGE = 8,
    ACL_RT_ATOMIC_OPERATION_CAS = 9,
    ACL_RT_ATOMIC_OPERATION_FLOAT_ADD = 10,
    ACL_RT_ATOMIC_OPERATION_FLOAT_MIN = 11,
    ACL_RT_ATOMIC_OPERATION_FLOAT_MAX = 12,
    ACL_RT_ATOMIC_OPERATION_DMA_ADD = 30,
    ACL_RT_ATOMIC_OPERATION_DMA_MIN = 31,
    ACL_RT_ATOMIC_OPERATION_DMA_MAX = 32,
    ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_ADD = 40,
    ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_MIN = 41,
    ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_MAX = 42,
    ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_CAS = 43,
    ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_EXCH = 44
} aclrtAtomicOperation;

typedef enum {
    ACL_RT_ATOMIC_CAPABILITY_SIGNED = 1U << 0,
    ACL_RT_ATOMIC_CAPABILITY_UNSIGNED = 1U << 1,
    ACL_RT_ATOMIC_CAPABILITY_REDUCTION = 1U << 2,
    ACL_RT_ATOMIC_CAPABILITY_REDUCATION = 1U << 2, /* deprecated spelling */
    ACL_RT_ATOMIC_CAPABILITY_SCALAR8 = 1U << 3,
    ACL_RT_ATOMIC_CAPABILITY_SCALAR16 = 1U << 4,
    ACL_RT_ATOMIC_CAPABILITY_SCALAR32 = 1U << 5,
    ACL_RT_ATOMIC_CAPABILITY_SCALAR64 = 1U << 6,
    ACL_RT_ATOMIC_CAPABILITY_SCALAR128 = 1U << 7,
    ACL_RT_ATOMIC_CAPABILITY_VECTOR32X4 = 1U << 8
} aclrtAtomicOperationCapability;

/* Random-number tasks (aclrtRandomNumAsync). */
typedef struct {
    uint8_t isAddr;
    uint8_t valueOrAddr[8];
    uint8_t size;
    uint8_t rsv[6];
} aclrtRandomParaInfo;

typedef enum {
    ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK = 0,
    ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS,
    ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS,
    ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS
} aclrtRandomNumFuncType;

typedef struct {
    aclrtRandomParaInfo dropoutRation;
} aclrtDropoutBitmaskInfo;

typedef struct {
    aclrtRandomParaInfo min;
    aclrtRandomParaInfo max;
} aclrtUniformDisInfo;

typedef struct {
    aclrtRandomParaInfo mean;
    aclrtRandomParaInfo stddev;
} aclrtNormalDisInfo;

typedef struct {
    aclrtRandomNumFuncType funcType;
    union {
        aclrtDropoutBitmaskInfo dropoutBitmaskInfo;
        aclrtUniformDisInfo uniformDisInfo;
        aclrtNormalDisInfo normalDisInfo;
    } paramInfo;
} aclrtRandomNumFuncParaInfo;

typedef struct {
    aclDataType dataType;
    aclrtRandomNumFuncParaInfo randomNumFuncParaInfo;
    void *randomParaAddr;
    void *randomResultAddr;
    void *randomCounterAddr;
    aclrtRandomParaInfo randomSeed;
    aclrtRandomParaInfo randomNum;
    uint8_t rsv[8];
} aclrtRandomNumTaskInfo;

/* Task updates (aclrtTaskUpdateAsync). */
typedef enum { ACL_RT_UPDATE_RANDOM_TASK = 1, ACL_RT_UPDATE_AIC_AIV_TASK } aclrtUpdateTaskAttrId;

typedef struct {
    void *srcAddr;
    size_t size;
    uint32_t rsv[4];
} aclrtRandomTaskUpdateAttr;

typedef struct {
    void *binHandle;
    void *funcEntryAddr;
    void *blockDimAddr;
    uint32_t rsv[4];
} aclrtAicAivTaskUpdateAttr;

typedef union {
    aclrtRandomTaskUpdateAttr randomTaskAttr;
    aclrtAicAivTaskUpdateAttr aicAivTaskAttr;
} aclrtUpdateTaskAttrVal;

typedef struct {
    aclrtUpdateTaskAttrId id;
    aclrtUpdateTaskAttrVal val;
} aclrtTaskUpdateInfo;

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64))
ACLRS_LAYOUT_ASSERT(sizeof(aclrtUuid) == 16, "aclrtUuid")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtUuid) == 1, "aclrtUuid")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtSnapShotBackupArgs) == 64, "aclrtSnapShotBackupArgs")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtSnapShotRestoreArgs) == 64, "aclrtSnapShotRestoreArgs")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtRandomParaInfo) == 16, "aclrtRandomParaInfo")
ACLRS_LAYOUT_ASSERT(ACLRS_ALIGNOF(aclrtRandomParaInfo) == 1, "aclrtRandomParaInfo")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtRandomNumFuncParaInfo) == 36, "aclrtRandomNumFuncParaInfo")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtRandomNumFuncParaInfo, paramInfo) == 4, "aclrtRandomNumFuncParaInfo.paramInfo")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtRandomNumTaskInfo) == 104, "aclrtRandomNumTaskInfo")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtRandomNumTaskInfo, randomParaAddr) == 40, "aclrtRandomNumTaskInfo.randomParaAddr")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtRandomNumTaskInfo, randomSeed) == 64, "aclrtRandomNumTaskInfo.randomSeed")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtRandomNumTaskInfo, rsv) == 96, "aclrtRandomNumTaskInfo.rsv")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtRandomTaskUpdateAttr) == 32, "aclrtRandomTaskUpdateAttr")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtAicAivTaskUpdateAttr) == 40, "aclrtAicAivTaskUpdateAttr")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtUpdateTaskAttrVal) == 40, "aclrtUpdateTaskAttrVal")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtTaskUpdateInfo) == 48, "aclrtTaskUpdateInfo")
ACLRS_LAYOUT_ASSERT(offsetof(aclrtTaskUpdateInfo, val) == 8, "aclrtTaskUpdateInfo.val")
#endif

/* ------------------------------------------------------------------------ */
/* Functions: each returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT                  */
/* ------------------------------------------------------------------------ */

/* Init and finalize hooks (sec. 11.2) */
ACL_FUNC_VISIBILITY aclError aclInitCallbackRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc,
                                                     void *userData);
ACL_FUNC_VISIBILITY aclError aclInitCallbackUnRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc);
ACL_FUNC_VISIBILITY aclError aclFinalizeCallbackRegister(aclRegisterCallbackType type, aclFinalizeCallbackFunc cbFunc,
                                                         void *userData);
ACL_FUNC_VISIBILITY aclError aclFinalizeCallbackUnRegister(aclRegisterCallbackType type,
                                                           aclFinalizeCallbackFunc cbFunc);

/* Contexts and runtime parameters (sec. 11.3) */
ACL_FUNC_VISIBILITY aclError aclrtGetPrimaryCtxState(int32_t deviceId, uint32_t *flags, int32_t *active);
ACL_FUNC_VISIBILITY aclError aclrtCtxGetFloatOverflowAddr(void **overflowAddr);
ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value);
ACL_FUNC_VISIBILITY aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value);

/* Devices: modes, topology, ids, limits, faults (sec. 11.4) */
ACL_FUNC_VISIBILITY aclError aclrtSetTsDevice(aclrtTsId tsId);
ACL_FUNC_VISIBILITY aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode);
ACL_FUNC_VISIBILITY aclError aclrtGetOverflowStatus(void *outputAddr, size_t outputSize, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtResetOverflowStatus(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId, int32_t *status);
ACL_FUNC_VISIBILITY aclError aclrtGetDevicesTopo(uint32_t deviceId, uint32_t otherDeviceId, uint64_t *value);
ACL_FUNC_VISIBILITY aclError aclrtRegDeviceStateCallback(const char *regName, aclrtDeviceStateCallback callback,
                                                         void *args);
ACL_FUNC_VISIBILITY aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t *const logicDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId, int32_t *const userDevid);
ACL_FUNC_VISIBILITY aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId, int32_t *const logicDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t *const phyDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId, int32_t *const phyDevId);
ACL_FUNC_VISIBILITY aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId, int32_t *const userDevId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid *uuid);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetPCIBusId(int32_t deviceId, char *pciBusId, int32_t len);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetByPCIBusId(const char *pciBusId, int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetHostAtomicCapabilities(uint32_t *capabilities,
                                                                  const aclrtAtomicOperation *operations,
                                                                  const uint32_t count, int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetP2PAtomicCapabilities(uint32_t *capabilities,
                                                                 const aclrtAtomicOperation *operations,
                                                                 const uint32_t count, int32_t srcDeviceId,
                                                                 int32_t dstDeviceId);
ACL_FUNC_VISIBILITY aclError aclrtDeviceSetLimit(aclrtDeviceLimit limit, size_t value);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetLimit(aclrtDeviceLimit limit, size_t *value);
ACL_FUNC_VISIBILITY aclError aclrtDeviceTaskAbort(int32_t deviceId, uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSetDeviceTaskAbortCallback(const char *regName,
                                                             aclrtDeviceTaskAbortCallback callback, void *args);
ACL_FUNC_VISIBILITY aclError aclrtGetMemUceInfo(int32_t deviceId, aclrtMemUceInfo *memUceInfoArray, size_t arraySize,
                                                size_t *retSize);
ACL_FUNC_VISIBILITY aclError aclrtMemUceRepair(int32_t deviceId, aclrtMemUceInfo *memUceInfoArray, size_t arraySize);
ACL_FUNC_VISIBILITY aclError aclrtCheckArchCompatibility(const char *socVersion, int32_t *canCompatible);
ACL_FUNC_VISIBILITY aclError aclrtDeviceL2CacheFlush(void *rsv);
ACL_FUNC_VISIBILITY aclError aclrtGetFloatOverflowStatus(void *outputAddr, uint64_t outputSize, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtResetFloatOverflowStatus(aclrtStream stream);

/* Float-overflow tasks (sec. 11.5) */
ACL_FUNC_VISIBILITY aclError aclrtNpuGetFloatOverFlowStatus(void *outputAddr, uint64_t outputSize, uint32_t checkMode,
                                                            aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtNpuClearFloatOverFlowStatus(uint32_t checkMode, aclrtStream stream);

/* Streams: overflow switch, activation, switch, persistent clean (sec. 11.6) */
ACL_FUNC_VISIBILITY aclError aclrtSetStreamOverflowSwitch(aclrtStream stream, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtGetStreamOverflowSwitch(aclrtStream stream, uint32_t *flag);
ACL_FUNC_VISIBILITY aclError aclrtActiveStream(aclrtStream activeStream, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSwitchStream(void *leftValue, aclrtCondition cond, void *rightValue,
                                               aclrtCompareDataType dataType, aclrtStream trueStream,
                                               aclrtStream falseStream, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtPersistentTaskClean(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtGetThreadLastTaskId(uint32_t *taskId);

/* Events (sec. 11.7) */
ACL_FUNC_VISIBILITY aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtGetEventId(aclrtEvent event, uint32_t *eventId);
ACL_FUNC_VISIBILITY aclError aclrtGetEventAvailNum(uint32_t *eventCount);
ACL_FUNC_VISIBILITY aclError aclrtSetOpWaitTimeout(uint32_t timeout);

/* Execution control (sec. 11.8) */
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOut(uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOutWithMs(uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOutV2(uint64_t timeout, uint64_t *actualTimeout);
ACL_FUNC_VISIBILITY aclError aclrtGetOpTimeOutInterval(uint64_t *interval);
ACL_FUNC_VISIBILITY aclError aclrtGetOpExecuteTimeout(uint32_t *const timeoutMs);
ACL_FUNC_VISIBILITY aclError aclrtReduceAsync(void *dst, const void *src, uint64_t count, aclrtReduceKind kind,
                                              aclDataType type, aclrtStream stream, void *reserve);
ACL_FUNC_VISIBILITY aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo *taskInfo, const aclrtStream stream,
                                                 void *reserve);
ACL_FUNC_VISIBILITY aclError aclrtTaskUpdateAsync(aclrtStream taskStream, uint32_t taskId, aclrtTaskUpdateInfo *info,
                                                  aclrtStream execStream);
ACL_FUNC_VISIBILITY aclError aclrtCacheLastTaskOpInfo(const void *const infoPtr, const size_t infoSize);
ACL_FUNC_VISIBILITY aclError aclrtCacheLastTaskExtendInfo(const char *const extendInfoPtr, const size_t infoSize);

/* Groups (sec. 11.9) */
ACL_FUNC_VISIBILITY aclError aclrtSetGroup(int32_t groupId);
ACL_FUNC_VISIBILITY aclError aclrtGetGroupCount(uint32_t *count);
ACL_FUNC_VISIBILITY aclrtGroupInfo *aclrtCreateGroupInfo();
ACL_FUNC_VISIBILITY aclError aclrtDestroyGroupInfo(aclrtGroupInfo *groupInfo);
ACL_FUNC_VISIBILITY aclError aclrtGetAllGroupInfo(aclrtGroupInfo *groupInfo);
ACL_FUNC_VISIBILITY aclError aclrtGetGroupInfoDetail(const aclrtGroupInfo *groupInfo, int32_t groupIndex,
                                                     aclrtGroupAttr attr, void *attrValue, size_t valueLen,
                                                     size_t *paramRetSize);

/* Kernels (sec. 11.10) */
ACL_FUNC_VISIBILITY aclError aclrtGetHardwareSyncAddr(void **addr);

/* Profiling markers (sec. 11.14) */
ACL_FUNC_VISIBILITY aclError aclrtProfTrace(void *userdata, int32_t length, aclrtStream stream);

/* Labels (sec. 11.11) */
ACL_FUNC_VISIBILITY aclError aclrtCreateLabel(aclrtLabel *label);
ACL_FUNC_VISIBILITY aclError aclrtSetLabel(aclrtLabel label, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyLabel(aclrtLabel label);
ACL_FUNC_VISIBILITY aclError aclrtCreateLabelList(aclrtLabel *labels, size_t num, aclrtLabelList *labelList);
ACL_FUNC_VISIBILITY aclError aclrtDestroyLabelList(aclrtLabelList labelList);
ACL_FUNC_VISIBILITY aclError aclrtSwitchLabelByIndex(void *ptr, uint32_t maxValue, aclrtLabelList labelList,
                                                     aclrtStream stream);

/* Shared buffers, Mbuf (sec. 11.12) */
ACL_FUNC_VISIBILITY aclError aclrtAllocBuf(aclrtMbuf *buf, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeBuf(aclrtMbuf buf);
ACL_FUNC_VISIBILITY aclError aclrtGetBufData(const aclrtMbuf buf, void **dataPtr, size_t *size);
ACL_FUNC_VISIBILITY aclError aclrtGetBufDataLen(aclrtMbuf buf, size_t *len);
ACL_FUNC_VISIBILITY aclError aclrtSetBufDataLen(aclrtMbuf buf, size_t len);
ACL_FUNC_VISIBILITY aclError aclrtGetBufUserData(const aclrtMbuf buf, void *dataPtr, size_t size, size_t offset);
ACL_FUNC_VISIBILITY aclError aclrtSetBufUserData(aclrtMbuf buf, const void *dataPtr, size_t size, size_t offset);
ACL_FUNC_VISIBILITY aclError aclrtCopyBufRef(const aclrtMbuf buf, aclrtMbuf *newBuf);
ACL_FUNC_VISIBILITY aclError aclrtAppendBufChain(aclrtMbuf headBuf, aclrtMbuf buf);
ACL_FUNC_VISIBILITY aclError aclrtGetBufChainNum(aclrtMbuf headBuf, uint32_t *num);
ACL_FUNC_VISIBILITY aclError aclrtGetBufFromChain(aclrtMbuf headBuf, uint32_t index, aclrtMbuf *buf);

/* Process snapshots (sec. 11.13) */
ACL_FUNC_VISIBILITY aclError aclrtSnapShotProcessLock(int pid, void *reserve);
ACL_FUNC_VISIBILITY aclError aclrtSnapShotProcessUnlock(int pid, void *reserve);
ACL_FUNC_VISIBILITY aclError aclrtSnapShotProcessBackup(int pid, aclrtSnapShotBackupArgs *args);
ACL_FUNC_VISIBILITY aclError aclrtSnapShotProcessRestore(int pid, aclrtSnapShotRestoreArgs *args);
ACL_FUNC_VISIBILITY aclError aclrtSnapShotCallbackRegister(aclrtSnapShotStage stage, aclrtSnapShotCallBack callback,
                                                           void *args);
ACL_FUNC_VISIBILITY aclError aclrtSnapShotCallbackUnregister(aclrtSnapShotStage stage,
                                                             aclrtSnapShotCallBack callback);

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_RT_UNSUPPORTED_H */
