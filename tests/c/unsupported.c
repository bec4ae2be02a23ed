/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unsupported.c - every call of acl/acl_rt_unsupported.h (the rest of CANN's
 * device, context, stream, event, memory and kernel surface, fact sheet §11)
 * compiles, links, returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) and
 * leaves a message naming the call, and changes nothing: outputs stay as they
 * were and the runtime keeps working afterwards.
 */
#include <stdint.h>
#include <string.h>

#include "acl/acl.h"
#include "check.h"

/* rc must be 207000 and the recent message must name the call. */
static int check_unsupported_(const char *name, int rc)
{
    const char *msg = aclGetRecentErrMsg();
    int ok = rc == ACL_ERROR_RT_FEATURE_NOT_SUPPORT && msg != NULL && strstr(msg, name) != NULL;
    if (!ok) {
        printf("  %s returned %d, message %s\n", name, rc, msg != NULL ? msg : "(null)");
    }
    return check_cond_(__FILE__, __LINE__, name, ok);
}

#define UNSUPPORTED(name, ...) check_unsupported_(#name, name(__VA_ARGS__))

static void every_call_with_zero_arguments(void)
{
    check_section("every unsupported call, zero arguments: 207000 and a message naming it");
    UNSUPPORTED(aclInitCallbackRegister, 0, 0, 0);
    UNSUPPORTED(aclInitCallbackUnRegister, 0, 0);
    UNSUPPORTED(aclFinalizeCallbackRegister, 0, 0, 0);
    UNSUPPORTED(aclFinalizeCallbackUnRegister, 0, 0);
    UNSUPPORTED(aclrtGetPrimaryCtxState, 0, 0, 0);
    UNSUPPORTED(aclrtCtxGetFloatOverflowAddr, 0);
    UNSUPPORTED(aclrtCtxSetSysParamOpt, 0, 0);
    UNSUPPORTED(aclrtCtxGetSysParamOpt, 0, 0);
    UNSUPPORTED(aclrtSetSysParamOpt, 0, 0);
    UNSUPPORTED(aclrtGetSysParamOpt, 0, 0);
    UNSUPPORTED(aclrtSetTsDevice, 0);
    UNSUPPORTED(aclrtSetDeviceSatMode, 0);
    UNSUPPORTED(aclrtGetDeviceSatMode, 0);
    UNSUPPORTED(aclrtGetOverflowStatus, 0, 0, 0);
    UNSUPPORTED(aclrtResetOverflowStatus, 0);
    UNSUPPORTED(aclrtDevicePeerAccessStatus, 0, 0, 0);
    UNSUPPORTED(aclrtGetDevicesTopo, 0, 0, 0);
    UNSUPPORTED(aclrtRegDeviceStateCallback, 0, 0, 0);
    UNSUPPORTED(aclrtGetLogicDevIdByUserDevId, 0, 0);
    UNSUPPORTED(aclrtGetUserDevIdByLogicDevId, 0, 0);
    UNSUPPORTED(aclrtGetLogicDevIdByPhyDevId, 0, 0);
    UNSUPPORTED(aclrtGetPhyDevIdByLogicDevId, 0, 0);
    UNSUPPORTED(aclrtGetPhyDevIdByUserDevId, 0, 0);
    UNSUPPORTED(aclrtGetUserDevIdByPhyDevId, 0, 0);
    UNSUPPORTED(aclrtDeviceGetUuid, 0, 0);
    UNSUPPORTED(aclrtDeviceGetPCIBusId, 0, 0, 0);
    UNSUPPORTED(aclrtDeviceGetByPCIBusId, 0, 0);
    UNSUPPORTED(aclrtDeviceGetHostAtomicCapabilities, 0, 0, 0, 0);
    UNSUPPORTED(aclrtDeviceGetP2PAtomicCapabilities, 0, 0, 0, 0, 0);
    UNSUPPORTED(aclrtDeviceSetLimit, 0, 0);
    UNSUPPORTED(aclrtDeviceGetLimit, 0, 0);
    UNSUPPORTED(aclrtDeviceTaskAbort, 0, 0);
    UNSUPPORTED(aclrtSetDeviceTaskAbortCallback, 0, 0, 0);
    UNSUPPORTED(aclrtGetMemUceInfo, 0, 0, 0, 0);
    UNSUPPORTED(aclrtMemUceRepair, 0, 0, 0);
    UNSUPPORTED(aclrtCheckArchCompatibility, 0, 0);
    UNSUPPORTED(aclrtDeviceL2CacheFlush, 0);
    UNSUPPORTED(aclrtGetFloatOverflowStatus, 0, 0, 0);
    UNSUPPORTED(aclrtResetFloatOverflowStatus, 0);
    UNSUPPORTED(aclrtNpuGetFloatOverFlowStatus, 0, 0, 0, 0);
    UNSUPPORTED(aclrtNpuClearFloatOverFlowStatus, 0, 0);
    UNSUPPORTED(aclrtSetStreamOverflowSwitch, 0, 0);
    UNSUPPORTED(aclrtGetStreamOverflowSwitch, 0, 0);
    UNSUPPORTED(aclrtActiveStream, 0, 0);
    UNSUPPORTED(aclrtSwitchStream, 0, 0, 0, 0, 0, 0, 0);
    UNSUPPORTED(aclrtPersistentTaskClean, 0);
    UNSUPPORTED(aclrtGetThreadLastTaskId, 0);
    UNSUPPORTED(aclrtRecordEventWithFlag, 0, 0, 0);
    UNSUPPORTED(aclrtQueryEventWaitStatus, 0, 0);
    UNSUPPORTED(aclrtGetEventId, 0, 0);
    UNSUPPORTED(aclrtGetEventAvailNum, 0);
    UNSUPPORTED(aclrtSetOpWaitTimeout, 0);
    UNSUPPORTED(aclrtSetOpExecuteTimeOut, 0);
    UNSUPPORTED(aclrtSetOpExecuteTimeOutWithMs, 0);
    UNSUPPORTED(aclrtSetOpExecuteTimeOutV2, 0, 0);
    UNSUPPORTED(aclrtGetOpTimeOutInterval, 0);
    UNSUPPORTED(aclrtGetOpExecuteTimeout, 0);
    UNSUPPORTED(aclrtReduceAsync, 0, 0, 0, 0, 0, 0, 0);
    UNSUPPORTED(aclrtRandomNumAsync, 0, 0, 0);
    UNSUPPORTED(aclrtTaskUpdateAsync, 0, 0, 0, 0);
    UNSUPPORTED(aclrtCacheLastTaskOpInfo, 0, 0);
    UNSUPPORTED(aclrtCacheLastTaskExtendInfo, 0, 0);
    UNSUPPORTED(aclrtSetGroup, 0);
    UNSUPPORTED(aclrtGetGroupCount, 0);
    UNSUPPORTED(aclrtDestroyGroupInfo, 0);
    UNSUPPORTED(aclrtGetAllGroupInfo, 0);
    UNSUPPORTED(aclrtGetGroupInfoDetail, 0, 0, 0, 0, 0, 0);
    UNSUPPORTED(aclrtGetHardwareSyncAddr, 0);
    UNSUPPORTED(aclrtCreateLabel, 0);
    UNSUPPORTED(aclrtSetLabel, 0, 0);
    UNSUPPORTED(aclrtDestroyLabel, 0);
    UNSUPPORTED(aclrtCreateLabelList, 0, 0, 0);
    UNSUPPORTED(aclrtDestroyLabelList, 0);
    UNSUPPORTED(aclrtSwitchLabelByIndex, 0, 0, 0, 0);
    UNSUPPORTED(aclrtAllocBuf, 0, 0);
    UNSUPPORTED(aclrtFreeBuf, 0);
    UNSUPPORTED(aclrtGetBufData, 0, 0, 0);
    UNSUPPORTED(aclrtGetBufDataLen, 0, 0);
    UNSUPPORTED(aclrtSetBufDataLen, 0, 0);
    UNSUPPORTED(aclrtGetBufUserData, 0, 0, 0, 0);
    UNSUPPORTED(aclrtSetBufUserData, 0, 0, 0, 0);
    UNSUPPORTED(aclrtCopyBufRef, 0, 0);
    UNSUPPORTED(aclrtAppendBufChain, 0, 0);
    UNSUPPORTED(aclrtGetBufChainNum, 0, 0);
    UNSUPPORTED(aclrtGetBufFromChain, 0, 0, 0);
    UNSUPPORTED(aclrtSnapShotProcessLock, 0, 0);
    UNSUPPORTED(aclrtSnapShotProcessUnlock, 0, 0);
    UNSUPPORTED(aclrtSnapShotProcessBackup, 0, 0);
    UNSUPPORTED(aclrtSnapShotProcessRestore, 0, 0);
    UNSUPPORTED(aclrtSnapShotCallbackRegister, 0, 0, 0);
    UNSUPPORTED(aclrtSnapShotCallbackUnregister, 0, 0);
    {
        aclrtGroupInfo *info = aclrtCreateGroupInfo();
        const char *msg = aclGetRecentErrMsg();
        CHECK(info == NULL);
        CHECK(msg != NULL && strstr(msg, "aclrtCreateGroupInfo") != NULL);
    }
}

static void outputs_are_left_alone(void)
{
    int64_t value = 12345;
    uint32_t count = 77;
    int32_t dev = -5;
    aclrtUuid uuid;
    char bus[16] = "unchanged";
    aclrtFloatOverflowMode mode = ACL_RT_OVERFLOW_MODE_UNDEF;
    aclrtLabel label = (aclrtLabel)&value;
    void *addr = &count;

    check_section("unsupported calls with real arguments write nothing");
    memset(&uuid, 0xA5, sizeof uuid);
    CHECK_FAIL(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(value == 12345);
    CHECK_FAIL(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_FAIL(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(value == 12345);
    CHECK_FAIL(aclrtGetEventAvailNum(&count), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(count == 77);
    CHECK_FAIL(aclrtGetLogicDevIdByUserDevId(0, &dev), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(dev == -5);
    CHECK_FAIL(aclrtDeviceGetUuid(0, &uuid), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(all_bytes(&uuid, sizeof uuid, 0xA5));
    CHECK_FAIL(aclrtDeviceGetPCIBusId(0, bus, (int32_t)sizeof bus), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(strcmp(bus, "unchanged") == 0);
    CHECK_FAIL(aclrtGetDeviceSatMode(&mode), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(mode == ACL_RT_OVERFLOW_MODE_UNDEF);
    CHECK_FAIL(aclrtCreateLabel(&label), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(label == (aclrtLabel)&value);
    CHECK_FAIL(aclrtGetHardwareSyncAddr(&addr), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(addr == (void *)&count);
    CHECK_FAIL(aclrtAllocBuf(&addr, 64), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(addr == (void *)&count);
}

static void the_runtime_still_works(void)
{
    void *dev = NULL;
    unsigned char host[256];
    unsigned char back[256];

    check_section("the runtime is unaffected");
    fill_pattern(host, sizeof host, 7);
    if (!CHECK_OK(aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST))) {
        return;
    }
    CHECK_OK(aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(back, sizeof back, dev, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(host, back, sizeof host) == 0);
    CHECK_OK(aclrtFree(dev));
}

int main(void)
{
    check_section("before aclInit: still 207000");
    UNSUPPORTED(aclrtSetOpWaitTimeout, 5);
    UNSUPPORTED(aclInitCallbackRegister, ACL_REG_TYPE_OTHER, 0, 0);

    if (!CHECK_OK(aclInit(NULL)) || !CHECK_OK(aclrtSetDevice(0))) {
        return check_summary("unsupported");
    }
    every_call_with_zero_arguments();
    outputs_are_left_alone();
    the_runtime_still_works();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    return check_summary("unsupported");
}
