//! C exports of exception information (§11.10): the callback registration calls and the
//! accessors of `aclrtExceptionInfo` (an opaque pointer to [`ExceptionInfo`], handed to a
//! callback by [`crate::api::exception::report`]). The callback list is
//! [`crate::api::exception`]'s.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;
use std::sync::Arc;

use super::{put, Call};
use crate::api::exception::{self, Callback, ExceptionInfo};
use crate::error::{AclError, Result};

/// What the accessors return for a NULL `info`, and `aclrtGetArgsFromExceptionInfo` for an
/// exception without arguments.
const NONE: u32 = 0xFFFF_FFFF;

/// The C callback `void (*)(aclrtExceptionInfo *)`.
type CCallback = Option<unsafe extern "C" fn(*mut c_void)>;

/// A registry entry for the C function `f`.
fn callback(f: CCallback) -> Option<Callback> {
    let f = f?;
    Some(Callback {
        // CAST: the function's address identifies it.
        key: f as usize,
        call: Arc::new(move |info: &ExceptionInfo| {
            let mut copy = *info;
            // SAFETY: `f` is the C callback the program registered; by its contract it reads
            // the record during the call only.
            unsafe { f((&raw mut copy).cast()) };
        }),
    })
}

/// Reads a non-null `info`.
fn read(info: *const ExceptionInfo) -> Option<ExceptionInfo> {
    if info.is_null() || !info.is_aligned() {
        return None;
    }
    // SAFETY: non-null and aligned; an `aclrtExceptionInfo` pointer the runtime handed to a
    // callback, valid during it (the API's contract).
    Some(unsafe { info.read() })
}

export! {
    /// `aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback);` — the
    /// deprecated single callback (NULL removes it).
    pub unsafe fn aclrtSetExceptionInfoCallback(cb: CCallback) -> AclErrorCode |cx| {
        exception::set_legacy(callback(cb));
        Ok(())
    }
}

export! {
    /// `aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback);`
    pub unsafe fn aclrtExceptionInfoCallbackRegister(cb: CCallback) -> AclErrorCode |cx| {
        exception::register(API, callback(cb))
    }
}

export! {
    /// `aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback);`
    pub unsafe fn aclrtExceptionInfoCallbackUnregister(cb: CCallback) -> AclErrorCode |cx| {
        // CAST: the function's address identifies it (0 for NULL).
        exception::unregister(API, cb.map_or(0, |f| f as usize))
    }
}

export! {
    /// `uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info);`
    pub unsafe fn aclrtGetTaskIdFromExceptionInfo(info: *const ExceptionInfo) -> u32 = NONE, |cx| {
        Ok(read(info).map_or(NONE, |i| i.task_id))
    }
}

export! {
    /// `uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info);`
    pub unsafe fn aclrtGetStreamIdFromExceptionInfo(info: *const ExceptionInfo) -> u32 = NONE, |cx| {
        Ok(read(info).map_or(NONE, |i| i.stream_id))
    }
}

export! {
    /// `uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info);`
    pub unsafe fn aclrtGetThreadIdFromExceptionInfo(info: *const ExceptionInfo) -> u32 = NONE, |cx| {
        Ok(read(info).map_or(NONE, |i| i.thread_id))
    }
}

export! {
    /// `uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info);`
    pub unsafe fn aclrtGetDeviceIdFromExceptionInfo(info: *const ExceptionInfo) -> u32 = NONE, |cx| {
        Ok(read(info).map_or(NONE, |i| i.device_id))
    }
}

export! {
    /// `uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info);`
    pub unsafe fn aclrtGetErrorCodeFromExceptionInfo(info: *const ExceptionInfo) -> u32 = NONE, |cx| {
        Ok(read(info).map_or(NONE, |i| i.error_code))
    }
}

/// The kernel details of `info` for the two launch accessors: `Err(0xFFFFFFFF)` for NULL or
/// a task that was no kernel launch.
fn kernel_info(cx: &Call, info: *const ExceptionInfo) -> std::result::Result<ExceptionInfo, i32> {
    let _ = cx;
    match read(info) {
        // CAST: the documented (aclError)0xFFFFFFFF.
        Some(i) if i.is_kernel => Ok(i),
        _ => Err(NONE as i32),
    }
}

export! {
    /// `aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo *info, void **devArgsPtr, uint32_t *devArgsLen);`
    pub unsafe fn aclrtGetArgsFromExceptionInfo(
        info: *const ExceptionInfo,
        dev_args_ptr: *mut *mut c_void,
        dev_args_len: *mut u32,
    ) -> i32 = NONE as i32, |cx| {
        let i = match kernel_info(cx, info) {
            Ok(i) => i,
            Err(code) => return Ok(code),
        };
        let (p, l) = match (cx.out("devArgsPtr", dev_args_ptr), cx.out("devArgsLen", dev_args_len)) {
            (Ok(p), Ok(l)) => (p, l),
            (Err(e), _) | (_, Err(e)) => return invalid(e),
        };
        // CAST: device addresses lie in the host's address space on this backend.
        put(p, i.args as usize as *mut c_void);
        put(l, i.args_len);
        Ok(0)
    }
}

export! {
    /// `aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo *info, aclrtFuncHandle *func);`
    pub unsafe fn aclrtGetFuncHandleFromExceptionInfo(
        info: *const ExceptionInfo,
        func: *mut *mut c_void,
    ) -> i32 = NONE as i32, |cx| {
        let i = match kernel_info(cx, info) {
            Ok(i) => i,
            Err(code) => return Ok(code),
        };
        let out = match cx.out("func", func) {
            Ok(o) => o,
            Err(e) => return invalid(e),
        };
        put(out, super::stream::to_ptr(i.func));
        Ok(0)
    }
}

/// A failed output check as the call's return value (its message recorded).
fn invalid(e: AclError) -> Result<i32> {
    super::record(&e);
    Ok(e.code())
}
