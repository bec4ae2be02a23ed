//! C exports of resource limits (`aclrt*ResLimit*`), device information and capabilities
//! (`aclrtGetDeviceInfo`, `aclrtGetDeviceCapability`, `aclGetDeviceCapability`) and error
//! details (`aclrtGetErrorVerbose`, `aclrtRepairError`): argument checks of the ACL layer
//! (100000), then [`crate::api::device_info`].
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::put;
use super::stream::handle;
use crate::error::AclError;
use crate::state::task_fault::TaskKind;

export! {
    /// `aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t *value);`
    pub unsafe fn aclrtGetDeviceResLimit(device_id: i32, ty: i32, value: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        put(out, cx.rt()?.device_res_limit(API, device_id, ty)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t value);`
    pub fn aclrtSetDeviceResLimit(device_id: i32, ty: i32, value: u32) -> AclErrorCode |cx| {
        cx.rt()?.set_device_res_limit(API, device_id, ty, value)
    }
}

export! {
    /// `aclError aclrtResetDeviceResLimit(int32_t deviceId);`
    pub fn aclrtResetDeviceResLimit(device_id: i32) -> AclErrorCode |cx| {
        cx.rt()?.reset_device_res_limit(API, device_id)
    }
}

export! {
    /// `aclError aclrtGetStreamResLimit(aclrtStream stream, aclrtDevResLimitType type, uint32_t *value);`
    pub unsafe fn aclrtGetStreamResLimit(stream: *mut c_void, ty: i32, value: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        put(out, cx.rt()?.stream_res_limit(API, handle(stream), ty)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtSetStreamResLimit(aclrtStream stream, aclrtDevResLimitType type, uint32_t value);`
    pub fn aclrtSetStreamResLimit(stream: *mut c_void, ty: i32, value: u32) -> AclErrorCode |cx| {
        cx.rt()?.set_stream_res_limit(API, handle(stream), ty, value)
    }
}

export! {
    /// `aclError aclrtResetStreamResLimit(aclrtStream stream);`
    pub fn aclrtResetStreamResLimit(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.reset_stream_res_limit(API, handle(stream))
    }
}

export! {
    /// `aclError aclrtUseStreamResInCurrentThread(aclrtStream stream);`
    pub fn aclrtUseStreamResInCurrentThread(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.use_stream_res(API, handle(stream), true)
    }
}

export! {
    /// `aclError aclrtUnuseStreamResInCurrentThread(aclrtStream stream);`
    pub fn aclrtUnuseStreamResInCurrentThread(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.use_stream_res(API, handle(stream), false)
    }
}

export! {
    /// `aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, uint32_t *value);`
    pub unsafe fn aclrtGetResInCurrentThread(ty: i32, value: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        put(out, cx.rt()?.res_in_current_thread(API, ty)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value);`
    pub unsafe fn aclrtGetDeviceInfo(device_id: u32, attr: i32, value: *mut i64) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        put(out, cx.rt()?.device_attr(API, device_id, attr)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetDeviceCapability(int32_t deviceId, aclrtDevFeatureType devFeatureType, int32_t *value);`
    pub unsafe fn aclrtGetDeviceCapability(device_id: i32, feature: i32, value: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        put(out, cx.rt()?.device_feature(API, device_id, feature)?);
        Ok(())
    }
}

export! {
    /// `aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t *value);`
    pub unsafe fn aclGetDeviceCapability(device_id: u32, info: i32, value: *mut i64) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        put(out, cx.rt()?.acl_device_capability(API, device_id, info)?);
        Ok(())
    }
}

/// The fields of `aclrtErrorInfo` the ACL layer writes (its first 12 bytes; `reserved` is
/// never written).
#[repr(C)]
#[derive(Debug)]
struct ErrorInfoHead {
    try_repair: u8,
    has_detail: u8,
    reserved: [u8; 2],
    error_type: u32,
    aicore_err_type: u32,
}

/// `ACL_RT_NO_ERROR`, `ACL_RT_ERROR_AICORE`, `ACL_RT_ERROR_OTHERS`.
const NO_ERROR: u32 = 0;
const ERROR_AICORE: u32 = 3;
const ERROR_OTHERS: u32 = 0xFFFF;
/// `ACL_RT_AICORE_ERROR_UNKNOWN`, `ACL_RT_AICORE_ERROR_SW`.
const AICORE_UNKNOWN: u32 = 0;
const AICORE_SW: u32 = 1;

export! {
    /// `aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo *errorInfo);` — the
    /// newest failed task of the device: a kernel's fault is `ACL_RT_ERROR_AICORE` with the
    /// software cause (`ACL_RT_AICORE_ERROR_SW`, the kernel reported it), any other task's is
    /// `ACL_RT_ERROR_OTHERS`; the stream, the task, the code and the kernel's name go to the
    /// log at INFO.
    pub unsafe fn aclrtGetErrorVerbose(device_id: i32, error_info: *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("errorInfo", error_info.cast::<u64>())?;
        let head = out.0.cast::<ErrorInfoHead>();
        let found = cx.rt()?.error_verbose(API, device_id)?;
        let (error_type, has_detail, aicore) = match &found {
            None => (NO_ERROR, 0, AICORE_UNKNOWN),
            Some((f, name)) => {
                let kind = match f.kind {
                    TaskKind::Kernel => "kernel",
                    TaskKind::Other => "task",
                };
                tracing::info!(
                    "{API}: device {device_id}: a {kind} on stream queue {} failed with {}{}",
                    f.queue,
                    f.code,
                    name.as_deref().map(|n| format!(" (kernel {n:?})")).unwrap_or_default()
                );
                match f.kind {
                    TaskKind::Kernel => (ERROR_AICORE, 1, AICORE_SW),
                    TaskKind::Other => (ERROR_OTHERS, 0, AICORE_UNKNOWN),
                }
            }
        };
        // SAFETY: `head` is non-null and 8-aligned (checked); the caller's `aclrtErrorInfo`
        // (2576 bytes) holds these first 12 bytes; `reserved` is left as it is.
        unsafe {
            std::ptr::addr_of_mut!((*head).try_repair).write(0);
            std::ptr::addr_of_mut!((*head).has_detail).write(has_detail);
            std::ptr::addr_of_mut!((*head).error_type).write(error_type);
            std::ptr::addr_of_mut!((*head).aicore_err_type).write(aicore);
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtRepairError(int32_t deviceId, const aclrtErrorInfo *errorInfo);`
    pub unsafe fn aclrtRepairError(device_id: i32, error_info: *const c_void) -> AclErrorCode |cx| {
        let p = cx.input("errorInfo", error_info.cast::<u64>())?;
        // SAFETY: non-null and aligned (checked); the caller's struct holds the head.
        let error_type = unsafe { std::ptr::addr_of!((*p.cast::<ErrorInfoHead>()).error_type).read() };
        let error_type = i32::try_from(error_type).map_err(|_| AclError::rt_invalid(format!("{API}: errorType {error_type} is out of range")))?;
        cx.rt()?.repair_error(API, device_id, error_type)
    }
}
