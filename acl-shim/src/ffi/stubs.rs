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

use crate::codes::ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
use crate::error::{AclError, Result};

/// The failure of the call `api`: `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` with a message naming it.
fn unsupported<T>(api: &'static str) -> Result<T> {
    Err(AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!(
            "{api}: not supported by aclrs (the call is declared and exported only so that programs build)"
        ),
    ))
}

export! {
    /// `aclError aclInitCallbackRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc, void* userData);`
    pub fn aclInitCallbackRegister(reg_type: i32, cb_func: *const c_void, user_data: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclInitCallbackUnRegister(aclRegisterCallbackType type, aclInitCallbackFunc cbFunc);`
    pub fn aclInitCallbackUnRegister(reg_type: i32, cb_func: *const c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclFinalizeCallbackRegister(aclRegisterCallbackType type, aclFinalizeCallbackFunc cbFunc, void* userData);`
    pub fn aclFinalizeCallbackRegister(reg_type: i32, cb_func: *const c_void, user_data: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclFinalizeCallbackUnRegister(aclRegisterCallbackType type, aclFinalizeCallbackFunc cbFunc);`
    pub fn aclFinalizeCallbackUnRegister(reg_type: i32, cb_func: *const c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetPrimaryCtxState(int32_t deviceId, uint32_t* flags, int32_t* active);`
    pub fn aclrtGetPrimaryCtxState(device_id: i32, flags: *mut c_void, active: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCtxGetFloatOverflowAddr(void** overflowAddr);`
    pub fn aclrtCtxGetFloatOverflowAddr(overflow_addr: *mut *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);`
    pub fn aclrtCtxSetSysParamOpt(opt: i32, value: i64) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t* value);`
    pub fn aclrtCtxGetSysParamOpt(opt: i32, value: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value);`
    pub fn aclrtSetSysParamOpt(opt: i32, value: i64) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t* value);`
    pub fn aclrtGetSysParamOpt(opt: i32, value: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetTsDevice(aclrtTsId tsId);`
    pub fn aclrtSetTsDevice(ts_id: i32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode);`
    pub fn aclrtSetDeviceSatMode(mode: i32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode* mode);`
    pub fn aclrtGetDeviceSatMode(mode: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetOverflowStatus(void* outputAddr, size_t outputSize, aclrtStream stream);`
    pub fn aclrtGetOverflowStatus(output_addr: *mut c_void, output_size: usize, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtResetOverflowStatus(aclrtStream stream);`
    pub fn aclrtResetOverflowStatus(stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId, int32_t* status);`
    pub fn aclrtDevicePeerAccessStatus(device_id: i32, peer_device_id: i32, status: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetDevicesTopo(uint32_t deviceId, uint32_t otherDeviceId, uint64_t* value);`
    pub fn aclrtGetDevicesTopo(device_id: u32, other_device_id: u32, value: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtRegDeviceStateCallback(const char* regName, aclrtDeviceStateCallback callback, void* args);`
    pub fn aclrtRegDeviceStateCallback(reg_name: *const c_char, callback: *const c_void, args: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t* const logicDevId);`
    pub fn aclrtGetLogicDevIdByUserDevId(user_devid: i32, logic_dev_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId, int32_t* const userDevid);`
    pub fn aclrtGetUserDevIdByLogicDevId(logic_dev_id: i32, user_devid: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId, int32_t* const logicDevId);`
    pub fn aclrtGetLogicDevIdByPhyDevId(phy_dev_id: i32, logic_dev_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t* const phyDevId);`
    pub fn aclrtGetPhyDevIdByLogicDevId(logic_dev_id: i32, phy_dev_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId, int32_t* const phyDevId);`
    pub fn aclrtGetPhyDevIdByUserDevId(user_dev_id: i32, phy_dev_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId, int32_t* const userDevId);`
    pub fn aclrtGetUserDevIdByPhyDevId(phy_dev_id: i32, user_dev_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid* uuid);`
    pub fn aclrtDeviceGetUuid(device_id: i32, uuid: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceGetPCIBusId(int32_t deviceId, char *pciBusId, int32_t len);`
    pub fn aclrtDeviceGetPCIBusId(device_id: i32, pci_bus_id: *mut c_char, len: i32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceGetByPCIBusId(const char *pciBusId, int32_t *deviceId);`
    pub fn aclrtDeviceGetByPCIBusId(pci_bus_id: *const c_char, device_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceGetHostAtomicCapabilities(uint32_t* capabilities, const aclrtAtomicOperation* operations, const uint32_t count, int32_t deviceId);`
    pub fn aclrtDeviceGetHostAtomicCapabilities(capabilities: *mut c_void, operations: *const c_void, count: u32, device_id: i32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceGetP2PAtomicCapabilities(uint32_t* capabilities, const aclrtAtomicOperation* operations, const uint32_t count, int32_t srcDeviceId, int32_t dstDeviceId);`
    pub fn aclrtDeviceGetP2PAtomicCapabilities(capabilities: *mut c_void, operations: *const c_void, count: u32, src_device_id: i32, dst_device_id: i32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceSetLimit(aclrtDeviceLimit limit, size_t value);`
    pub fn aclrtDeviceSetLimit(limit: i32, value: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceGetLimit(aclrtDeviceLimit limit, size_t* value);`
    pub fn aclrtDeviceGetLimit(limit: i32, value: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceTaskAbort(int32_t deviceId, uint32_t timeout);`
    pub fn aclrtDeviceTaskAbort(device_id: i32, timeout: u32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetDeviceTaskAbortCallback(const char* regName, aclrtDeviceTaskAbortCallback callback, void* args);`
    pub fn aclrtSetDeviceTaskAbortCallback(reg_name: *const c_char, callback: *const c_void, args: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetMemUceInfo(int32_t deviceId, aclrtMemUceInfo* memUceInfoArray, size_t arraySize, size_t* retSize);`
    pub fn aclrtGetMemUceInfo(device_id: i32, mem_uce_info_array: *mut c_void, array_size: usize, ret_size: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtMemUceRepair(int32_t deviceId, aclrtMemUceInfo* memUceInfoArray, size_t arraySize);`
    pub fn aclrtMemUceRepair(device_id: i32, mem_uce_info_array: *mut c_void, array_size: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCheckArchCompatibility(const char* socVersion, int32_t* canCompatible);`
    pub fn aclrtCheckArchCompatibility(soc_version: *const c_char, can_compatible: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDeviceL2CacheFlush(void* rsv);`
    pub fn aclrtDeviceL2CacheFlush(rsv: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetFloatOverflowStatus(void* outputAddr, uint64_t outputSize, aclrtStream stream);`
    pub fn aclrtGetFloatOverflowStatus(output_addr: *mut c_void, output_size: u64, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtResetFloatOverflowStatus(aclrtStream stream);`
    pub fn aclrtResetFloatOverflowStatus(stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtNpuGetFloatOverFlowStatus(void* outputAddr, uint64_t outputSize, uint32_t checkMode, aclrtStream stream);`
    pub fn aclrtNpuGetFloatOverFlowStatus(output_addr: *mut c_void, output_size: u64, check_mode: u32, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtNpuClearFloatOverFlowStatus(uint32_t checkMode, aclrtStream stream);`
    pub fn aclrtNpuClearFloatOverFlowStatus(check_mode: u32, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetStreamOverflowSwitch(aclrtStream stream, uint32_t flag);`
    pub fn aclrtSetStreamOverflowSwitch(stream: *mut c_void, flag: u32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetStreamOverflowSwitch(aclrtStream stream, uint32_t* flag);`
    pub fn aclrtGetStreamOverflowSwitch(stream: *mut c_void, flag: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtActiveStream(aclrtStream activeStream, aclrtStream stream);`
    pub fn aclrtActiveStream(active_stream: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSwitchStream(void* leftValue, aclrtCondition cond, void* rightValue, aclrtCompareDataType dataType, aclrtStream trueStream, aclrtStream falseStream, aclrtStream stream);`
    pub fn aclrtSwitchStream(left_value: *mut c_void, cond: i32, right_value: *mut c_void, data_type: i32, true_stream: *mut c_void, false_stream: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtPersistentTaskClean(aclrtStream stream);`
    pub fn aclrtPersistentTaskClean(stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetThreadLastTaskId(uint32_t* taskId);`
    pub fn aclrtGetThreadLastTaskId(task_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtRecordEventWithFlag(aclrtEvent event, aclrtStream stream, uint32_t flag);`
    pub fn aclrtRecordEventWithFlag(event: *mut c_void, stream: *mut c_void, flag: u32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus* status);`
    pub fn aclrtQueryEventWaitStatus(event: *mut c_void, status: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetEventId(aclrtEvent event, uint32_t* eventId);`
    pub fn aclrtGetEventId(event: *mut c_void, event_id: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetEventAvailNum(uint32_t* eventCount);`
    pub fn aclrtGetEventAvailNum(event_count: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetOpWaitTimeout(uint32_t timeout);`
    pub fn aclrtSetOpWaitTimeout(timeout: u32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetOpExecuteTimeOut(uint32_t timeout);`
    pub fn aclrtSetOpExecuteTimeOut(timeout: u32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetOpExecuteTimeOutWithMs(uint32_t timeout);`
    pub fn aclrtSetOpExecuteTimeOutWithMs(timeout: u32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetOpExecuteTimeOutV2(uint64_t timeout, uint64_t* actualTimeout);`
    pub fn aclrtSetOpExecuteTimeOutV2(timeout: u64, actual_timeout: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetOpTimeOutInterval(uint64_t* interval);`
    pub fn aclrtGetOpTimeOutInterval(interval: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetOpExecuteTimeout(uint32_t* const timeoutMs);`
    pub fn aclrtGetOpExecuteTimeout(timeout_ms: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtReduceAsync(void* dst, const void* src, uint64_t count, aclrtReduceKind kind, aclDataType type, aclrtStream stream, void* reserve);`
    pub fn aclrtReduceAsync(dst: *mut c_void, src: *const c_void, count: u64, kind: i32, data_type: i32, stream: *mut c_void, reserve: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo* taskInfo, const aclrtStream stream, void* reserve);`
    pub fn aclrtRandomNumAsync(task_info: *const c_void, stream: *mut c_void, reserve: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtTaskUpdateAsync(aclrtStream taskStream, uint32_t taskId, aclrtTaskUpdateInfo* info, aclrtStream execStream);`
    pub fn aclrtTaskUpdateAsync(task_stream: *mut c_void, task_id: u32, info: *mut c_void, exec_stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCacheLastTaskOpInfo(const void* const infoPtr, const size_t infoSize);`
    pub fn aclrtCacheLastTaskOpInfo(info_ptr: *const c_void, info_size: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCacheLastTaskExtendInfo(const char* const extendInfoPtr, const size_t infoSize);`
    pub fn aclrtCacheLastTaskExtendInfo(extend_info_ptr: *const c_char, info_size: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetGroup(int32_t groupId);`
    pub fn aclrtSetGroup(group_id: i32) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetGroupCount(uint32_t* count);`
    pub fn aclrtGetGroupCount(count: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclrtGroupInfo* aclrtCreateGroupInfo();`
    pub fn aclrtCreateGroupInfo() -> *mut c_void = std::ptr::null_mut(), |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDestroyGroupInfo(aclrtGroupInfo* groupInfo);`
    pub fn aclrtDestroyGroupInfo(group_info: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetAllGroupInfo(aclrtGroupInfo* groupInfo);`
    pub fn aclrtGetAllGroupInfo(group_info: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetGroupInfoDetail(const aclrtGroupInfo* groupInfo, int32_t groupIndex, aclrtGroupAttr attr, void* attrValue, size_t valueLen, size_t* paramRetSize);`
    pub fn aclrtGetGroupInfoDetail(group_info: *const c_void, group_index: i32, attr: i32, attr_value: *mut c_void, value_len: usize, param_ret_size: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetHardwareSyncAddr(void** addr);`
    pub fn aclrtGetHardwareSyncAddr(addr: *mut *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtProfTrace(void* userdata, int32_t length, aclrtStream stream);`
    pub fn aclrtProfTrace(userdata: *mut c_void, length: i32, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCreateLabel(aclrtLabel* label);`
    pub fn aclrtCreateLabel(label: *mut *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetLabel(aclrtLabel label, aclrtStream stream);`
    pub fn aclrtSetLabel(label: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDestroyLabel(aclrtLabel label);`
    pub fn aclrtDestroyLabel(label: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCreateLabelList(aclrtLabel* labels, size_t num, aclrtLabelList* labelList);`
    pub fn aclrtCreateLabelList(labels: *mut *mut c_void, num: usize, label_list: *mut *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtDestroyLabelList(aclrtLabelList labelList);`
    pub fn aclrtDestroyLabelList(label_list: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSwitchLabelByIndex(void* ptr, uint32_t maxValue, aclrtLabelList labelList, aclrtStream stream);`
    pub fn aclrtSwitchLabelByIndex(ptr: *mut c_void, max_value: u32, label_list: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtAllocBuf(aclrtMbuf* buf, size_t size);`
    pub fn aclrtAllocBuf(buf: *mut *mut c_void, size: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtFreeBuf(aclrtMbuf buf);`
    pub fn aclrtFreeBuf(buf: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetBufData(const aclrtMbuf buf, void** dataPtr, size_t* size);`
    pub fn aclrtGetBufData(buf: *mut c_void, data_ptr: *mut *mut c_void, size: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetBufDataLen(aclrtMbuf buf, size_t* len);`
    pub fn aclrtGetBufDataLen(buf: *mut c_void, len: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetBufDataLen(aclrtMbuf buf, size_t len);`
    pub fn aclrtSetBufDataLen(buf: *mut c_void, len: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetBufUserData(const aclrtMbuf buf, void* dataPtr, size_t size, size_t offset);`
    pub fn aclrtGetBufUserData(buf: *mut c_void, data_ptr: *mut c_void, size: usize, offset: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSetBufUserData(aclrtMbuf buf, const void* dataPtr, size_t size, size_t offset);`
    pub fn aclrtSetBufUserData(buf: *mut c_void, data_ptr: *const c_void, size: usize, offset: usize) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtCopyBufRef(const aclrtMbuf buf, aclrtMbuf* newBuf);`
    pub fn aclrtCopyBufRef(buf: *mut c_void, new_buf: *mut *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtAppendBufChain(aclrtMbuf headBuf, aclrtMbuf buf);`
    pub fn aclrtAppendBufChain(head_buf: *mut c_void, buf: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetBufChainNum(aclrtMbuf headBuf, uint32_t* num);`
    pub fn aclrtGetBufChainNum(head_buf: *mut c_void, num: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtGetBufFromChain(aclrtMbuf headBuf, uint32_t index, aclrtMbuf* buf);`
    pub fn aclrtGetBufFromChain(head_buf: *mut c_void, index: u32, buf: *mut *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSnapShotProcessLock(int pid, void* reserve);`
    pub fn aclrtSnapShotProcessLock(pid: i32, reserve: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSnapShotProcessUnlock(int pid, void* reserve);`
    pub fn aclrtSnapShotProcessUnlock(pid: i32, reserve: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSnapShotProcessBackup(int pid, aclrtSnapShotBackupArgs* args);`
    pub fn aclrtSnapShotProcessBackup(pid: i32, args: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSnapShotProcessRestore(int pid, aclrtSnapShotRestoreArgs* args);`
    pub fn aclrtSnapShotProcessRestore(pid: i32, args: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSnapShotCallbackRegister(aclrtSnapShotStage stage, aclrtSnapShotCallBack callback, void* args);`
    pub fn aclrtSnapShotCallbackRegister(stage: i32, callback: *const c_void, args: *mut c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}

export! {
    /// `aclError aclrtSnapShotCallbackUnregister(aclrtSnapShotStage stage, aclrtSnapShotCallBack callback);`
    pub fn aclrtSnapShotCallbackUnregister(stage: i32, callback: *const c_void) -> AclErrorCode |cx| {
        unsupported(API)
    }
}
