//! The exports of `acl/acl_rt_unsupported.h`: the rest of CANN's device, context, stream,
//! event, memory and kernel calls (fact sheet §11), declared and exported so that programs
//! written for CANN compile and link, each failing with `ACL_ERROR_RT_FEATURE_NOT_SUPPORT`.
//!
//! Owns nothing: every export records its arguments for the API trace and fails through
//! `unsupported`, whatever the arguments; it reads no pointer and changes no state. Arguments
//! whose C types are enums are `i32` (C enums are `int`-sized), callbacks and typed pointers
//! are `void` pointers of the same size. A call that aclrs implements moves out of this file
//! and out of the header.

use std::ffi::{c_char, c_void};

use super::{guard, AclErrorCode};
use crate::codes::ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
use crate::error::AclError;

/// Fails the call `api` with `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` and a message naming it.
fn unsupported(api: &'static str) -> AclErrorCode {
    guard(api, || {
        Err(AclError::new(
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            format!("{api}: not supported by aclrs (the call is declared and exported only so that programs build)"),
        ))
    })
}

/// `aclError aclInitCallbackRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc, void* userData);`
#[no_mangle]
pub extern "C" fn aclInitCallbackRegister(
    reg_type: i32,
    cb_func: *const c_void,
    user_data: *mut c_void,
) -> AclErrorCode {
    trace_args!(reg_type, cb_func, user_data);
    unsupported("aclInitCallbackRegister")
}

/// `aclError aclInitCallbackUnRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc);`
#[no_mangle]
pub extern "C" fn aclInitCallbackUnRegister(reg_type: i32, cb_func: *const c_void) -> AclErrorCode {
    trace_args!(reg_type, cb_func);
    unsupported("aclInitCallbackUnRegister")
}

/// `aclError aclFinalizeCallbackRegister(aclRegisterCallbackType type, aclFinalizeCallbackFunc cbFunc, void* userData);`
#[no_mangle]
pub extern "C" fn aclFinalizeCallbackRegister(
    reg_type: i32,
    cb_func: *const c_void,
    user_data: *mut c_void,
) -> AclErrorCode {
    trace_args!(reg_type, cb_func, user_data);
    unsupported("aclFinalizeCallbackRegister")
}

/// `aclError aclFinalizeCallbackUnRegister(aclRegisterCallbackType type, aclFinalizeCallbackFunc cbFunc);`
#[no_mangle]
pub extern "C" fn aclFinalizeCallbackUnRegister(reg_type: i32, cb_func: *const c_void) -> AclErrorCode {
    trace_args!(reg_type, cb_func);
    unsupported("aclFinalizeCallbackUnRegister")
}

/// `aclError aclrtGetPrimaryCtxState(int32_t deviceId, uint32_t* flags, int32_t* active);`
#[no_mangle]
pub extern "C" fn aclrtGetPrimaryCtxState(
    device_id: i32,
    flags: *mut c_void,
    active: *mut c_void,
) -> AclErrorCode {
    trace_args!(device_id, flags, active);
    unsupported("aclrtGetPrimaryCtxState")
}

/// `aclError aclrtCtxGetFloatOverflowAddr(void** overflowAddr);`
#[no_mangle]
pub extern "C" fn aclrtCtxGetFloatOverflowAddr(overflow_addr: *mut *mut c_void) -> AclErrorCode {
    trace_args!(overflow_addr);
    unsupported("aclrtCtxGetFloatOverflowAddr")
}

/// `aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);`
#[no_mangle]
pub extern "C" fn aclrtCtxSetSysParamOpt(opt: i32, value: i64) -> AclErrorCode {
    trace_args!(opt, value);
    unsupported("aclrtCtxSetSysParamOpt")
}

/// `aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t* value);`
#[no_mangle]
pub extern "C" fn aclrtCtxGetSysParamOpt(opt: i32, value: *mut c_void) -> AclErrorCode {
    trace_args!(opt, value);
    unsupported("aclrtCtxGetSysParamOpt")
}

/// `aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value);`
#[no_mangle]
pub extern "C" fn aclrtSetSysParamOpt(opt: i32, value: i64) -> AclErrorCode {
    trace_args!(opt, value);
    unsupported("aclrtSetSysParamOpt")
}

/// `aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t* value);`
#[no_mangle]
pub extern "C" fn aclrtGetSysParamOpt(opt: i32, value: *mut c_void) -> AclErrorCode {
    trace_args!(opt, value);
    unsupported("aclrtGetSysParamOpt")
}

/// `aclError aclrtSetTsDevice(aclrtTsId tsId);`
#[no_mangle]
pub extern "C" fn aclrtSetTsDevice(ts_id: i32) -> AclErrorCode {
    trace_args!(ts_id);
    unsupported("aclrtSetTsDevice")
}

/// `aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode);`
#[no_mangle]
pub extern "C" fn aclrtSetDeviceSatMode(mode: i32) -> AclErrorCode {
    trace_args!(mode);
    unsupported("aclrtSetDeviceSatMode")
}

/// `aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode* mode);`
#[no_mangle]
pub extern "C" fn aclrtGetDeviceSatMode(mode: *mut c_void) -> AclErrorCode {
    trace_args!(mode);
    unsupported("aclrtGetDeviceSatMode")
}

/// `aclError aclrtGetOverflowStatus(void* outputAddr, size_t outputSize, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtGetOverflowStatus(
    output_addr: *mut c_void,
    output_size: usize,
    stream: *mut c_void,
) -> AclErrorCode {
    trace_args!(output_addr, output_size, stream);
    unsupported("aclrtGetOverflowStatus")
}

/// `aclError aclrtResetOverflowStatus(aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtResetOverflowStatus(stream: *mut c_void) -> AclErrorCode {
    trace_args!(stream);
    unsupported("aclrtResetOverflowStatus")
}

/// `aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId, int32_t* status);`
#[no_mangle]
pub extern "C" fn aclrtDevicePeerAccessStatus(
    device_id: i32,
    peer_device_id: i32,
    status: *mut c_void,
) -> AclErrorCode {
    trace_args!(device_id, peer_device_id, status);
    unsupported("aclrtDevicePeerAccessStatus")
}

/// `aclError aclrtGetDevicesTopo(uint32_t deviceId, uint32_t otherDeviceId, uint64_t* value);`
#[no_mangle]
pub extern "C" fn aclrtGetDevicesTopo(
    device_id: u32,
    other_device_id: u32,
    value: *mut c_void,
) -> AclErrorCode {
    trace_args!(device_id, other_device_id, value);
    unsupported("aclrtGetDevicesTopo")
}

/// `aclError aclrtRegDeviceStateCallback(const char* regName, aclrtDeviceStateCallback callback, void* args);`
#[no_mangle]
pub extern "C" fn aclrtRegDeviceStateCallback(
    reg_name: *const c_char,
    callback: *const c_void,
    args: *mut c_void,
) -> AclErrorCode {
    trace_args!(reg_name, callback, args);
    unsupported("aclrtRegDeviceStateCallback")
}

/// `aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t* const logicDevId);`
#[no_mangle]
pub extern "C" fn aclrtGetLogicDevIdByUserDevId(user_devid: i32, logic_dev_id: *mut c_void) -> AclErrorCode {
    trace_args!(user_devid, logic_dev_id);
    unsupported("aclrtGetLogicDevIdByUserDevId")
}

/// `aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId, int32_t* const userDevid);`
#[no_mangle]
pub extern "C" fn aclrtGetUserDevIdByLogicDevId(logic_dev_id: i32, user_devid: *mut c_void) -> AclErrorCode {
    trace_args!(logic_dev_id, user_devid);
    unsupported("aclrtGetUserDevIdByLogicDevId")
}

/// `aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId, int32_t* const logicDevId);`
#[no_mangle]
pub extern "C" fn aclrtGetLogicDevIdByPhyDevId(phy_dev_id: i32, logic_dev_id: *mut c_void) -> AclErrorCode {
    trace_args!(phy_dev_id, logic_dev_id);
    unsupported("aclrtGetLogicDevIdByPhyDevId")
}

/// `aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t* const phyDevId);`
#[no_mangle]
pub extern "C" fn aclrtGetPhyDevIdByLogicDevId(logic_dev_id: i32, phy_dev_id: *mut c_void) -> AclErrorCode {
    trace_args!(logic_dev_id, phy_dev_id);
    unsupported("aclrtGetPhyDevIdByLogicDevId")
}

/// `aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId, int32_t* const phyDevId);`
#[no_mangle]
pub extern "C" fn aclrtGetPhyDevIdByUserDevId(user_dev_id: i32, phy_dev_id: *mut c_void) -> AclErrorCode {
    trace_args!(user_dev_id, phy_dev_id);
    unsupported("aclrtGetPhyDevIdByUserDevId")
}

/// `aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId, int32_t* const userDevId);`
#[no_mangle]
pub extern "C" fn aclrtGetUserDevIdByPhyDevId(phy_dev_id: i32, user_dev_id: *mut c_void) -> AclErrorCode {
    trace_args!(phy_dev_id, user_dev_id);
    unsupported("aclrtGetUserDevIdByPhyDevId")
}

/// `aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid* uuid);`
#[no_mangle]
pub extern "C" fn aclrtDeviceGetUuid(device_id: i32, uuid: *mut c_void) -> AclErrorCode {
    trace_args!(device_id, uuid);
    unsupported("aclrtDeviceGetUuid")
}

/// `aclError aclrtDeviceGetPCIBusId(int32_t deviceId, char *pciBusId, int32_t len);`
#[no_mangle]
pub extern "C" fn aclrtDeviceGetPCIBusId(device_id: i32, pci_bus_id: *mut c_char, len: i32) -> AclErrorCode {
    trace_args!(device_id, pci_bus_id, len);
    unsupported("aclrtDeviceGetPCIBusId")
}

/// `aclError aclrtDeviceGetByPCIBusId(const char *pciBusId, int32_t *deviceId);`
#[no_mangle]
pub extern "C" fn aclrtDeviceGetByPCIBusId(
    pci_bus_id: *const c_char,
    device_id: *mut c_void,
) -> AclErrorCode {
    trace_args!(pci_bus_id, device_id);
    unsupported("aclrtDeviceGetByPCIBusId")
}

/// `aclError aclrtDeviceGetHostAtomicCapabilities(uint32_t* capabilities, const aclrtAtomicOperation* operations, const uint32_t count, int32_t deviceId);`
#[no_mangle]
pub extern "C" fn aclrtDeviceGetHostAtomicCapabilities(
    capabilities: *mut c_void,
    operations: *const c_void,
    count: u32,
    device_id: i32,
) -> AclErrorCode {
    trace_args!(capabilities, operations, count, device_id);
    unsupported("aclrtDeviceGetHostAtomicCapabilities")
}

/// `aclError aclrtDeviceGetP2PAtomicCapabilities(uint32_t* capabilities, const aclrtAtomicOperation* operations, const uint32_t count, int32_t srcDeviceId, int32_t dstDeviceId);`
#[no_mangle]
pub extern "C" fn aclrtDeviceGetP2PAtomicCapabilities(
    capabilities: *mut c_void,
    operations: *const c_void,
    count: u32,
    src_device_id: i32,
    dst_device_id: i32,
) -> AclErrorCode {
    trace_args!(capabilities, operations, count, src_device_id, dst_device_id);
    unsupported("aclrtDeviceGetP2PAtomicCapabilities")
}

/// `aclError aclrtDeviceSetLimit(aclrtDeviceLimit limit, size_t value);`
#[no_mangle]
pub extern "C" fn aclrtDeviceSetLimit(limit: i32, value: usize) -> AclErrorCode {
    trace_args!(limit, value);
    unsupported("aclrtDeviceSetLimit")
}

/// `aclError aclrtDeviceGetLimit(aclrtDeviceLimit limit, size_t* value);`
#[no_mangle]
pub extern "C" fn aclrtDeviceGetLimit(limit: i32, value: *mut c_void) -> AclErrorCode {
    trace_args!(limit, value);
    unsupported("aclrtDeviceGetLimit")
}

/// `aclError aclrtDeviceTaskAbort(int32_t deviceId, uint32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtDeviceTaskAbort(device_id: i32, timeout: u32) -> AclErrorCode {
    trace_args!(device_id, timeout);
    unsupported("aclrtDeviceTaskAbort")
}

/// `aclError aclrtSetDeviceTaskAbortCallback(const char* regName, aclrtDeviceTaskAbortCallback callback, void* args);`
#[no_mangle]
pub extern "C" fn aclrtSetDeviceTaskAbortCallback(
    reg_name: *const c_char,
    callback: *const c_void,
    args: *mut c_void,
) -> AclErrorCode {
    trace_args!(reg_name, callback, args);
    unsupported("aclrtSetDeviceTaskAbortCallback")
}

/// `aclError aclrtGetMemUceInfo(int32_t deviceId, aclrtMemUceInfo* memUceInfoArray, size_t arraySize, size_t* retSize);`
#[no_mangle]
pub extern "C" fn aclrtGetMemUceInfo(
    device_id: i32,
    mem_uce_info_array: *mut c_void,
    array_size: usize,
    ret_size: *mut c_void,
) -> AclErrorCode {
    trace_args!(device_id, mem_uce_info_array, array_size, ret_size);
    unsupported("aclrtGetMemUceInfo")
}

/// `aclError aclrtMemUceRepair(int32_t deviceId, aclrtMemUceInfo* memUceInfoArray, size_t arraySize);`
#[no_mangle]
pub extern "C" fn aclrtMemUceRepair(
    device_id: i32,
    mem_uce_info_array: *mut c_void,
    array_size: usize,
) -> AclErrorCode {
    trace_args!(device_id, mem_uce_info_array, array_size);
    unsupported("aclrtMemUceRepair")
}

/// `aclError aclrtCheckArchCompatibility(const char* socVersion, int32_t* canCompatible);`
#[no_mangle]
pub extern "C" fn aclrtCheckArchCompatibility(
    soc_version: *const c_char,
    can_compatible: *mut c_void,
) -> AclErrorCode {
    trace_args!(soc_version, can_compatible);
    unsupported("aclrtCheckArchCompatibility")
}

/// `aclError aclrtDeviceL2CacheFlush(void* rsv);`
#[no_mangle]
pub extern "C" fn aclrtDeviceL2CacheFlush(rsv: *mut c_void) -> AclErrorCode {
    trace_args!(rsv);
    unsupported("aclrtDeviceL2CacheFlush")
}

/// `aclError aclrtGetFloatOverflowStatus(void* outputAddr, uint64_t outputSize, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtGetFloatOverflowStatus(
    output_addr: *mut c_void,
    output_size: u64,
    stream: *mut c_void,
) -> AclErrorCode {
    trace_args!(output_addr, output_size, stream);
    unsupported("aclrtGetFloatOverflowStatus")
}

/// `aclError aclrtResetFloatOverflowStatus(aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtResetFloatOverflowStatus(stream: *mut c_void) -> AclErrorCode {
    trace_args!(stream);
    unsupported("aclrtResetFloatOverflowStatus")
}

/// `aclError aclrtNpuGetFloatOverFlowStatus(void* outputAddr, uint64_t outputSize, uint32_t checkMode, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtNpuGetFloatOverFlowStatus(
    output_addr: *mut c_void,
    output_size: u64,
    check_mode: u32,
    stream: *mut c_void,
) -> AclErrorCode {
    trace_args!(output_addr, output_size, check_mode, stream);
    unsupported("aclrtNpuGetFloatOverFlowStatus")
}

/// `aclError aclrtNpuClearFloatOverFlowStatus(uint32_t checkMode, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtNpuClearFloatOverFlowStatus(check_mode: u32, stream: *mut c_void) -> AclErrorCode {
    trace_args!(check_mode, stream);
    unsupported("aclrtNpuClearFloatOverFlowStatus")
}

/// `aclError aclrtSetStreamOverflowSwitch(aclrtStream stream, uint32_t flag);`
#[no_mangle]
pub extern "C" fn aclrtSetStreamOverflowSwitch(stream: *mut c_void, flag: u32) -> AclErrorCode {
    trace_args!(stream, flag);
    unsupported("aclrtSetStreamOverflowSwitch")
}

/// `aclError aclrtGetStreamOverflowSwitch(aclrtStream stream, uint32_t* flag);`
#[no_mangle]
pub extern "C" fn aclrtGetStreamOverflowSwitch(stream: *mut c_void, flag: *mut c_void) -> AclErrorCode {
    trace_args!(stream, flag);
    unsupported("aclrtGetStreamOverflowSwitch")
}

/// `aclError aclrtActiveStream(aclrtStream activeStream, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtActiveStream(active_stream: *mut c_void, stream: *mut c_void) -> AclErrorCode {
    trace_args!(active_stream, stream);
    unsupported("aclrtActiveStream")
}

/// `aclError aclrtSwitchStream(void* leftValue, aclrtCondition cond, void* rightValue, aclrtCompareDataType dataType, aclrtStream trueStream, aclrtStream falseStream, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtSwitchStream(
    left_value: *mut c_void,
    cond: i32,
    right_value: *mut c_void,
    data_type: i32,
    true_stream: *mut c_void,
    false_stream: *mut c_void,
    stream: *mut c_void,
) -> AclErrorCode {
    trace_args!(left_value, cond, right_value, data_type, true_stream, false_stream, stream);
    unsupported("aclrtSwitchStream")
}

/// `aclError aclrtPersistentTaskClean(aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtPersistentTaskClean(stream: *mut c_void) -> AclErrorCode {
    trace_args!(stream);
    unsupported("aclrtPersistentTaskClean")
}

/// `aclError aclrtGetThreadLastTaskId(uint32_t* taskId);`
#[no_mangle]
pub extern "C" fn aclrtGetThreadLastTaskId(task_id: *mut c_void) -> AclErrorCode {
    trace_args!(task_id);
    unsupported("aclrtGetThreadLastTaskId")
}

/// `aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, uint32_t flag);`
#[no_mangle]
pub extern "C" fn aclrtRecordEventWithFlag(
    event: *mut c_void,
    stream: *mut c_void,
    flag: u32,
) -> AclErrorCode {
    trace_args!(event, stream, flag);
    unsupported("aclrtRecordEventWithFlag")
}

/// `aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus* status);`
#[no_mangle]
pub extern "C" fn aclrtQueryEventWaitStatus(event: *mut c_void, status: *mut c_void) -> AclErrorCode {
    trace_args!(event, status);
    unsupported("aclrtQueryEventWaitStatus")
}

/// `aclError aclrtGetEventId(aclrtEvent event, uint32_t* eventId);`
#[no_mangle]
pub extern "C" fn aclrtGetEventId(event: *mut c_void, event_id: *mut c_void) -> AclErrorCode {
    trace_args!(event, event_id);
    unsupported("aclrtGetEventId")
}

/// `aclError aclrtGetEventAvailNum(uint32_t* eventCount);`
#[no_mangle]
pub extern "C" fn aclrtGetEventAvailNum(event_count: *mut c_void) -> AclErrorCode {
    trace_args!(event_count);
    unsupported("aclrtGetEventAvailNum")
}

/// `aclError aclrtSetOpWaitTimeout(uint32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtSetOpWaitTimeout(timeout: u32) -> AclErrorCode {
    trace_args!(timeout);
    unsupported("aclrtSetOpWaitTimeout")
}

/// `aclError aclrtSetOpExecuteTimeOut(uint32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtSetOpExecuteTimeOut(timeout: u32) -> AclErrorCode {
    trace_args!(timeout);
    unsupported("aclrtSetOpExecuteTimeOut")
}

/// `aclError aclrtSetOpExecuteTimeOutWithMs(uint32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtSetOpExecuteTimeOutWithMs(timeout: u32) -> AclErrorCode {
    trace_args!(timeout);
    unsupported("aclrtSetOpExecuteTimeOutWithMs")
}

/// `aclError aclrtSetOpExecuteTimeOutV2(uint64_t timeout, uint64_t* actualTimeout);`
#[no_mangle]
pub extern "C" fn aclrtSetOpExecuteTimeOutV2(timeout: u64, actual_timeout: *mut c_void) -> AclErrorCode {
    trace_args!(timeout, actual_timeout);
    unsupported("aclrtSetOpExecuteTimeOutV2")
}

/// `aclError aclrtGetOpTimeOutInterval(uint64_t* interval);`
#[no_mangle]
pub extern "C" fn aclrtGetOpTimeOutInterval(interval: *mut c_void) -> AclErrorCode {
    trace_args!(interval);
    unsupported("aclrtGetOpTimeOutInterval")
}

/// `aclError aclrtGetOpExecuteTimeout(uint32_t* const timeoutMs);`
#[no_mangle]
pub extern "C" fn aclrtGetOpExecuteTimeout(timeout_ms: *mut c_void) -> AclErrorCode {
    trace_args!(timeout_ms);
    unsupported("aclrtGetOpExecuteTimeout")
}

/// `aclError aclrtReduceAsync(void* dst, const void* src, uint64_t count, aclrtReduceKind kind, aclDataType type, aclrtStream stream, void* reserve);`
#[no_mangle]
pub extern "C" fn aclrtReduceAsync(
    dst: *mut c_void,
    src: *const c_void,
    count: u64,
    kind: i32,
    data_type: i32,
    stream: *mut c_void,
    reserve: *mut c_void,
) -> AclErrorCode {
    trace_args!(dst, src, count, kind, data_type, stream, reserve);
    unsupported("aclrtReduceAsync")
}

/// `aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo* taskInfo, const aclrtStream stream, void* reserve);`
#[no_mangle]
pub extern "C" fn aclrtRandomNumAsync(
    task_info: *const c_void,
    stream: *mut c_void,
    reserve: *mut c_void,
) -> AclErrorCode {
    trace_args!(task_info, stream, reserve);
    unsupported("aclrtRandomNumAsync")
}

/// `aclError aclrtTaskUpdateAsync(aclrtStream taskStream, uint32_t taskId, aclrtTaskUpdateInfo* info, aclrtStream execStream);`
#[no_mangle]
pub extern "C" fn aclrtTaskUpdateAsync(
    task_stream: *mut c_void,
    task_id: u32,
    info: *mut c_void,
    exec_stream: *mut c_void,
) -> AclErrorCode {
    trace_args!(task_stream, task_id, info, exec_stream);
    unsupported("aclrtTaskUpdateAsync")
}

/// `aclError aclrtCacheLastTaskOpInfo(const void* const infoPtr, const size_t infoSize);`
#[no_mangle]
pub extern "C" fn aclrtCacheLastTaskOpInfo(info_ptr: *const c_void, info_size: usize) -> AclErrorCode {
    trace_args!(info_ptr, info_size);
    unsupported("aclrtCacheLastTaskOpInfo")
}

/// `aclError aclrtCacheLastTaskExtendInfo(const char* const extendInfoPtr, const size_t infoSize);`
#[no_mangle]
pub extern "C" fn aclrtCacheLastTaskExtendInfo(
    extend_info_ptr: *const c_char,
    info_size: usize,
) -> AclErrorCode {
    trace_args!(extend_info_ptr, info_size);
    unsupported("aclrtCacheLastTaskExtendInfo")
}

/// `aclError aclrtSetGroup(int32_t groupId);`
#[no_mangle]
pub extern "C" fn aclrtSetGroup(group_id: i32) -> AclErrorCode {
    trace_args!(group_id);
    unsupported("aclrtSetGroup")
}

/// `aclError aclrtGetGroupCount(uint32_t* count);`
#[no_mangle]
pub extern "C" fn aclrtGetGroupCount(count: *mut c_void) -> AclErrorCode {
    trace_args!(count);
    unsupported("aclrtGetGroupCount")
}

/// `aclrtGroupInfo* aclrtCreateGroupInfo();`
#[no_mangle]
pub extern "C" fn aclrtCreateGroupInfo() -> *mut c_void {
    trace_args!();
    unsupported("aclrtCreateGroupInfo");
    std::ptr::null_mut()
}

/// `aclError aclrtDestroyGroupInfo(aclrtGroupInfo* groupInfo);`
#[no_mangle]
pub extern "C" fn aclrtDestroyGroupInfo(group_info: *mut c_void) -> AclErrorCode {
    trace_args!(group_info);
    unsupported("aclrtDestroyGroupInfo")
}

/// `aclError aclrtGetAllGroupInfo(aclrtGroupInfo* groupInfo);`
#[no_mangle]
pub extern "C" fn aclrtGetAllGroupInfo(group_info: *mut c_void) -> AclErrorCode {
    trace_args!(group_info);
    unsupported("aclrtGetAllGroupInfo")
}

/// `aclError aclrtGetGroupInfoDetail(const aclrtGroupInfo* groupInfo, int32_t groupIndex, aclrtGroupAttr attr, void* attrValue, size_t valueLen, size_t* paramRetSize);`
#[no_mangle]
pub extern "C" fn aclrtGetGroupInfoDetail(
    group_info: *const c_void,
    group_index: i32,
    attr: i32,
    attr_value: *mut c_void,
    value_len: usize,
    param_ret_size: *mut c_void,
) -> AclErrorCode {
    trace_args!(group_info, group_index, attr, attr_value, value_len, param_ret_size);
    unsupported("aclrtGetGroupInfoDetail")
}

/// `aclError aclrtGetHardwareSyncAddr(void** addr);`
#[no_mangle]
pub extern "C" fn aclrtGetHardwareSyncAddr(addr: *mut *mut c_void) -> AclErrorCode {
    trace_args!(addr);
    unsupported("aclrtGetHardwareSyncAddr")
}

/// `aclError aclrtCreateLabel(aclrtLabel* label);`
#[no_mangle]
pub extern "C" fn aclrtCreateLabel(label: *mut *mut c_void) -> AclErrorCode {
    trace_args!(label);
    unsupported("aclrtCreateLabel")
}

/// `aclError aclrtSetLabel(aclrtLabel label, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtSetLabel(label: *mut c_void, stream: *mut c_void) -> AclErrorCode {
    trace_args!(label, stream);
    unsupported("aclrtSetLabel")
}

/// `aclError aclrtDestroyLabel(aclrtLabel label);`
#[no_mangle]
pub extern "C" fn aclrtDestroyLabel(label: *mut c_void) -> AclErrorCode {
    trace_args!(label);
    unsupported("aclrtDestroyLabel")
}

/// `aclError aclrtCreateLabelList(aclrtLabel* labels, size_t num, aclrtLabelList* labelList);`
#[no_mangle]
pub extern "C" fn aclrtCreateLabelList(
    labels: *mut *mut c_void,
    num: usize,
    label_list: *mut *mut c_void,
) -> AclErrorCode {
    trace_args!(labels, num, label_list);
    unsupported("aclrtCreateLabelList")
}

/// `aclError aclrtDestroyLabelList(aclrtLabelList labelList);`
#[no_mangle]
pub extern "C" fn aclrtDestroyLabelList(label_list: *mut c_void) -> AclErrorCode {
    trace_args!(label_list);
    unsupported("aclrtDestroyLabelList")
}

/// `aclError aclrtSwitchLabelByIndex(void* ptr, uint32_t maxValue, aclrtLabelList labelList, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtSwitchLabelByIndex(
    ptr: *mut c_void,
    max_value: u32,
    label_list: *mut c_void,
    stream: *mut c_void,
) -> AclErrorCode {
    trace_args!(ptr, max_value, label_list, stream);
    unsupported("aclrtSwitchLabelByIndex")
}

/// `aclError aclrtAllocBuf(aclrtMbuf* buf, size_t size);`
#[no_mangle]
pub extern "C" fn aclrtAllocBuf(buf: *mut *mut c_void, size: usize) -> AclErrorCode {
    trace_args!(buf, size);
    unsupported("aclrtAllocBuf")
}

/// `aclError aclrtFreeBuf(aclrtMbuf buf);`
#[no_mangle]
pub extern "C" fn aclrtFreeBuf(buf: *mut c_void) -> AclErrorCode {
    trace_args!(buf);
    unsupported("aclrtFreeBuf")
}

/// `aclError aclrtGetBufData(const aclrtMbuf buf, void** dataPtr, size_t* size);`
#[no_mangle]
pub extern "C" fn aclrtGetBufData(
    buf: *mut c_void,
    data_ptr: *mut *mut c_void,
    size: *mut c_void,
) -> AclErrorCode {
    trace_args!(buf, data_ptr, size);
    unsupported("aclrtGetBufData")
}

/// `aclError aclrtGetBufDataLen(aclrtMbuf buf, size_t* len);`
#[no_mangle]
pub extern "C" fn aclrtGetBufDataLen(buf: *mut c_void, len: *mut c_void) -> AclErrorCode {
    trace_args!(buf, len);
    unsupported("aclrtGetBufDataLen")
}

/// `aclError aclrtSetBufDataLen(aclrtMbuf buf, size_t len);`
#[no_mangle]
pub extern "C" fn aclrtSetBufDataLen(buf: *mut c_void, len: usize) -> AclErrorCode {
    trace_args!(buf, len);
    unsupported("aclrtSetBufDataLen")
}

/// `aclError aclrtGetBufUserData(const aclrtMbuf buf, void* dataPtr, size_t size, size_t offset);`
#[no_mangle]
pub extern "C" fn aclrtGetBufUserData(
    buf: *mut c_void,
    data_ptr: *mut c_void,
    size: usize,
    offset: usize,
) -> AclErrorCode {
    trace_args!(buf, data_ptr, size, offset);
    unsupported("aclrtGetBufUserData")
}

/// `aclError aclrtSetBufUserData(aclrtMbuf buf, const void* dataPtr, size_t size, size_t offset);`
#[no_mangle]
pub extern "C" fn aclrtSetBufUserData(
    buf: *mut c_void,
    data_ptr: *const c_void,
    size: usize,
    offset: usize,
) -> AclErrorCode {
    trace_args!(buf, data_ptr, size, offset);
    unsupported("aclrtSetBufUserData")
}

/// `aclError aclrtCopyBufRef(const aclrtMbuf buf, aclrtMbuf* newBuf);`
#[no_mangle]
pub extern "C" fn aclrtCopyBufRef(buf: *mut c_void, new_buf: *mut *mut c_void) -> AclErrorCode {
    trace_args!(buf, new_buf);
    unsupported("aclrtCopyBufRef")
}

/// `aclError aclrtAppendBufChain(aclrtMbuf headBuf, aclrtMbuf buf);`
#[no_mangle]
pub extern "C" fn aclrtAppendBufChain(head_buf: *mut c_void, buf: *mut c_void) -> AclErrorCode {
    trace_args!(head_buf, buf);
    unsupported("aclrtAppendBufChain")
}

/// `aclError aclrtGetBufChainNum(aclrtMbuf headBuf, uint32_t* num);`
#[no_mangle]
pub extern "C" fn aclrtGetBufChainNum(head_buf: *mut c_void, num: *mut c_void) -> AclErrorCode {
    trace_args!(head_buf, num);
    unsupported("aclrtGetBufChainNum")
}

/// `aclError aclrtGetBufFromChain(aclrtMbuf headBuf, uint32_t index, aclrtMbuf* buf);`
#[no_mangle]
pub extern "C" fn aclrtGetBufFromChain(
    head_buf: *mut c_void,
    index: u32,
    buf: *mut *mut c_void,
) -> AclErrorCode {
    trace_args!(head_buf, index, buf);
    unsupported("aclrtGetBufFromChain")
}

/// `aclError aclrtSnapShotProcessLock(int pid, void* reserve);`
#[no_mangle]
pub extern "C" fn aclrtSnapShotProcessLock(pid: i32, reserve: *mut c_void) -> AclErrorCode {
    trace_args!(pid, reserve);
    unsupported("aclrtSnapShotProcessLock")
}

/// `aclError aclrtSnapShotProcessUnlock(int pid, void* reserve);`
#[no_mangle]
pub extern "C" fn aclrtSnapShotProcessUnlock(pid: i32, reserve: *mut c_void) -> AclErrorCode {
    trace_args!(pid, reserve);
    unsupported("aclrtSnapShotProcessUnlock")
}

/// `aclError aclrtSnapShotProcessBackup(int pid, aclrtSnapShotBackupArgs* args);`
#[no_mangle]
pub extern "C" fn aclrtSnapShotProcessBackup(pid: i32, args: *mut c_void) -> AclErrorCode {
    trace_args!(pid, args);
    unsupported("aclrtSnapShotProcessBackup")
}

/// `aclError aclrtSnapShotProcessRestore(int pid, aclrtSnapShotRestoreArgs* args);`
#[no_mangle]
pub extern "C" fn aclrtSnapShotProcessRestore(pid: i32, args: *mut c_void) -> AclErrorCode {
    trace_args!(pid, args);
    unsupported("aclrtSnapShotProcessRestore")
}

/// `aclError aclrtSnapShotCallbackRegister(aclrtSnapShotStage stage, aclrtSnapShotCallBack callback, void* args);`
#[no_mangle]
pub extern "C" fn aclrtSnapShotCallbackRegister(
    stage: i32,
    callback: *const c_void,
    args: *mut c_void,
) -> AclErrorCode {
    trace_args!(stage, callback, args);
    unsupported("aclrtSnapShotCallbackRegister")
}

/// `aclError aclrtSnapShotCallbackUnregister(aclrtSnapShotStage stage, aclrtSnapShotCallBack callback);`
#[no_mangle]
pub extern "C" fn aclrtSnapShotCallbackUnregister(stage: i32, callback: *const c_void) -> AclErrorCode {
    trace_args!(stage, callback);
    unsupported("aclrtSnapShotCallbackUnregister")
}
