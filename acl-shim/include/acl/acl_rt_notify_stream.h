/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl/acl_rt_notify_stream.h - notifies, IPC notifies, count notifies, IPC
 * events, stream control and host-function threads: the parts of CANN's
 * acl_rt.h that aclrs keeps in this file (fact sheet sections 3, 6, 8, 9).
 *
 * Names, signatures, enum values and struct layouts follow CANN 1.17.0
 * (include/external/acl/acl_rt.h), so programs written for CANN compile
 * unchanged. acl/acl_rt.h includes this header (and this one includes
 * acl/acl_rt.h for the types it uses), so either may be included first.
 *
 * Units as CANN's implementation uses them: the timeout of
 * aclrtWaitAndResetNotify, aclrtStreamWaitEventWithTimeout and
 * aclrtStreamWaitEventWithFlag is in SECONDS (0 = no timeout; for the notify
 * wait UINT32_MAX too); an expired wait fails the waiting stream's next
 * synchronisation with ACL_ERROR_RT_WAIT_TIMEOUT. aclrtProcessHostFunc's
 * timeout is in milliseconds (-1 = forever).
 *
 * Count notifies (aclrtCntNotify*) work on the Ascend950PR profile only, as
 * in CANN; elsewhere every call returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
 */
#ifndef ACLRS_ACL_ACL_RT_NOTIFY_STREAM_H
#define ACLRS_ACL_ACL_RT_NOTIFY_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "acl_base.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Notifies (section 3)                                                      */
/* ------------------------------------------------------------------------ */
#define ACL_NOTIFY_DEFAULT 0x00000000U
#define ACL_NOTIFY_DEVICE_USE_ONLY 0x00000001U
#define ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT 0x0UL
#define ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT 0x0UL

ACL_FUNC_VISIBILITY aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyNotify(aclrtNotify notify);
ACL_FUNC_VISIBILITY aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream);
/* timeout in seconds; 0 and UINT32_MAX wait forever. */
ACL_FUNC_VISIBILITY aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtGetNotifyId(aclrtNotify notify, uint32_t *notifyId);
ACL_FUNC_VISIBILITY aclError aclrtNotifyBatchReset(aclrtNotify *notifies, size_t num);
/* len >= 65; flags ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT or _DISABLE_PID_VALIDATION. */
ACL_FUNC_VISIBILITY aclError aclrtNotifyGetExportKey(aclrtNotify notify, char *key, size_t len, uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtNotifyImportByKey(aclrtNotify *notify, const char *key, uint64_t flags);
ACL_FUNC_VISIBILITY aclError aclrtNotifySetImportPid(aclrtNotify notify, int32_t *pid, size_t num);
ACL_FUNC_VISIBILITY aclError aclrtNotifySetImportPidInterServer(aclrtNotify notify, aclrtServerPid *serverPids,
                                                                size_t num);

/* Count notifies (Ascend 950 only; 207000 on the other profiles). */
typedef enum {
    ACL_RT_CNT_NOTIFY_RECORD_SET_VALUE_MODE = 0,
    ACL_RT_CNT_NOTIFY_RECORD_ADD_MODE = 1,
    ACL_RT_CNT_NOTIFY_RECORD_BIT_OR_MODE = 2,
    ACL_RT_CNT_NOTIFY_RECORD_BIT_AND_MODE = 4
} aclrtCntNotifyRecordMode;

typedef struct {
    aclrtCntNotifyRecordMode mode;
    uint32_t value;
} aclrtCntNotifyRecordInfo;

typedef enum {
    ACL_RT_CNT_NOTIFY_WAIT_LESS_MODE = 0,
    ACL_RT_CNT_NOTIFY_WAIT_EQUAL_MODE = 1,
    ACL_RT_CNT_NOTIFY_WAIT_BIGGER_MODE = 2,
    ACL_RT_CNT_NOTIFY_WAIT_BIGGER_OR_EQUAL_MODE = 3,
    ACL_RT_CNT_NOTIFY_WAIT_EQUAL_WITH_BITMASK_MODE = 4
} aclrtCntNotifyWaitMode;

typedef struct {
    aclrtCntNotifyWaitMode mode;
    uint32_t value;
    uint32_t timeout;
    uint8_t isClear;
    uint8_t rsv[3];
} aclrtCntNotifyWaitInfo;

ACL_FUNC_VISIBILITY aclError aclrtCntNotifyCreate(aclrtCntNotify *cntNotify, uint64_t flag);
ACL_FUNC_VISIBILITY aclError aclrtCntNotifyDestroy(aclrtCntNotify cntNotify);
ACL_FUNC_VISIBILITY aclError aclrtCntNotifyRecord(aclrtCntNotify cntNotify, aclrtStream stream,
                                                  aclrtCntNotifyRecordInfo *info);
ACL_FUNC_VISIBILITY aclError aclrtCntNotifyWaitWithTimeout(aclrtCntNotify cntNotify, aclrtStream stream,
                                                           aclrtCntNotifyWaitInfo *info);
ACL_FUNC_VISIBILITY aclError aclrtCntNotifyReset(aclrtCntNotify cntNotify, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtCntNotifyGetId(aclrtCntNotify cntNotify, uint32_t *notifyId);

/* ------------------------------------------------------------------------ */
/* IPC events (section 6): events made with aclrtCreateEventExWithFlag(     */
/* &e, ACL_EVENT_IPC); the handle is 64 plain bytes, passed by value.        */
/* ------------------------------------------------------------------------ */
ACL_FUNC_VISIBILITY aclError aclrtIpcGetEventHandle(aclrtEvent event, aclrtIpcEventHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtIpcOpenEventHandle(aclrtIpcEventHandle handle, aclrtEvent *event);

/* ------------------------------------------------------------------------ */
/* Stream control (section 8)                                                */
/* ------------------------------------------------------------------------ */
typedef enum {
    ACL_RT_STREAM_STATE_CREATE_POST = 1,
    ACL_RT_STREAM_STATE_DESTROY_PRE
} aclrtStreamState;

typedef void (*aclrtStreamStateCallback)(aclrtStream stm, aclrtStreamState state, void *args);

typedef enum {
    ACL_RT_STREAM_WORK_ADDR_PTR = 0,
    ACL_RT_STREAM_WORK_SIZE,
    ACL_RT_STREAM_FLAG,
    ACL_RT_STREAM_PRIORITY
} aclrtStreamConfigAttr;

typedef struct aclrtStreamConfigHandle {
    void *workptr;
    size_t workSize;
    size_t flag;
    uint32_t priority;
} aclrtStreamConfigHandle;

ACL_FUNC_VISIBILITY aclError aclrtStreamStop(aclrtStream stream);
/* Drops the stream's queued tasks; a synchronize waiting meanwhile returns
 * ACL_ERROR_RT_STREAM_ABORT. The stream is usable afterwards. */
ACL_FUNC_VISIBILITY aclError aclrtStreamAbort(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtRegStreamStateCallback(const char *regName, aclrtStreamStateCallback callback,
                                                         void *args);
/* timeout in seconds, >= 0 (0: no timeout). */
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event, int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, uint32_t timeout,
                                                          uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtSetStreamAttribute(aclrtStream stream, aclrtStreamAttr stmAttrType,
                                                     aclrtStreamAttrValue *value);
ACL_FUNC_VISIBILITY aclError aclrtGetStreamAttribute(aclrtStream stream, aclrtStreamAttr stmAttrType,
                                                     aclrtStreamAttrValue *value);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t *flags);
ACL_FUNC_VISIBILITY aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t *priority);
ACL_FUNC_VISIBILITY aclError aclrtGetStreamAvailableNum(uint32_t *streamCount);
ACL_FUNC_VISIBILITY aclError aclrtDeviceGetStreamPriorityRange(int32_t *leastPriority, int32_t *greatestPriority);
ACL_FUNC_VISIBILITY aclrtStreamConfigHandle *aclrtCreateStreamConfigHandle(void);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamConfigHandle(aclrtStreamConfigHandle *handle);
ACL_FUNC_VISIBILITY aclError aclrtSetStreamConfigOpt(aclrtStreamConfigHandle *handle, aclrtStreamConfigAttr attr,
                                                     const void *attrValue, size_t valueSize);
ACL_FUNC_VISIBILITY aclError aclrtCreateStreamV2(aclrtStream *stream, const aclrtStreamConfigHandle *handle);

/* ------------------------------------------------------------------------ */
/* Host-function threads (section 9). hostFuncThreadId is the processing    */
/* thread's pthread_self(); aclrtLaunchHostFunc on a stream with such a      */
/* thread hands the function to that thread's aclrtProcessHostFunc.          */
/* ------------------------------------------------------------------------ */
ACL_FUNC_VISIBILITY aclError aclrtSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream);
/* timeout in milliseconds: -1 forever, > 0 that long. */
ACL_FUNC_VISIBILITY aclError aclrtProcessHostFunc(int32_t timeout);
ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream);

#if defined(ACLRS_LAYOUT_ASSERT) && (defined(__LP64__) || defined(_LP64))
ACLRS_LAYOUT_ASSERT(sizeof(aclrtCntNotifyRecordInfo) == 8, "aclrtCntNotifyRecordInfo")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtCntNotifyWaitInfo) == 16, "aclrtCntNotifyWaitInfo")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtStreamConfigHandle) == 32, "aclrtStreamConfigHandle")
ACLRS_LAYOUT_ASSERT(sizeof(aclrtStreamState) == 4, "aclrtStreamState")
#endif

#ifdef __cplusplus
}
#endif

#endif /* ACLRS_ACL_ACL_RT_NOTIFY_STREAM_H */
