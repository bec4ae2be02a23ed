//! The C ABI of `libascendcl`: the only module of this crate with `unsafe`.
//!
//! Every export follows one pattern: catch panics (a panic becomes `ACL_ERROR_INTERNAL_ERROR`
//! with a message, never an abort across the C boundary), check every pointer argument for null
//! and alignment before use, call the safe runtime, convert its `Result` to an `aclError` in
//! `status` (the one conversion point), and record the message of a failure for
//! `aclGetRecentErrMsg`.
//!
//! Ownership: no handle is owned by C in this set of calls; pointers passed in are borrowed for
//! the call only. Raw host pointers become slices here and nowhere else, only for ordinary host
//! memory, and only after the runtime checked the range lies outside every runtime window.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime;

pub mod allocator;
pub mod async_copy;
pub mod base;
pub mod kernel;
pub mod memory;
pub mod obs;
pub mod pool;
pub mod stream;
pub mod stubs;
pub mod vmm;

/// `aclError` as the C headers define it.
pub type AclErrorCode = i32;

thread_local! {
    /// The newest error message not yet fetched.
    static PENDING: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Storage behind the pointer the last `aclGetRecentErrMsg` returned.
    static RETURNED: RefCell<Option<CString>> = const { RefCell::new(None) };
}

pub(crate) fn record(e: &AclError) {
    let text = e.message().replace('\0', " ");
    let msg = CString::new(text).unwrap_or_default();
    stream::note_error(e.code());
    PENDING.with(|p| *p.borrow_mut() = Some(msg));
}

/// The single conversion point from a runtime result to an `aclError`; a failure is logged at
/// ERROR with its code and message (which names the call).
fn status(r: Result<()>) -> AclErrorCode {
    match r {
        Ok(()) => ACL_SUCCESS,
        Err(e) => {
            crate::log::api_error(e.code(), e.message());
            record(&e);
            e.code()
        }
    }
}

/// Runs `body` behind the panic wall and converts its result. The log is installed on the
/// first call; at DEBUG the call is logged with the arguments `trace_args!` recorded and its
/// result.
pub(crate) fn guard(api: &'static str, body: impl FnOnce() -> Result<()>) -> AclErrorCode {
    crate::log::init();
    if let Err(e) = runtime::refuse_in_forked_child(api) {
        let code = status(Err(e));
        crate::log::api_return(api, code);
        return code;
    }
    let code = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => status(r),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            status(Err(AclError::new(ACL_ERROR_INTERNAL_ERROR, format!("{api}: internal error: {what}"))))
        }
    };
    crate::log::api_return(api, code);
    code
}

/// Registers (once per process) the `fork()` child handler that makes every call of a child
/// forked after `aclInit` fail ([`runtime::refuse_in_forked_child`]). Returns whether the
/// handler is registered.
pub(crate) fn watch_forks() -> bool {
    extern "C" fn in_child() {
        runtime::note_forked();
    }
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: registers a child handler only; `in_child` stores to an atomic and touches
        // nothing else, which is safe in the single-threaded child right after `fork()`.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) == 0 }
    })
}

/// Checks an output pointer: non-null and aligned for `T`.
pub(crate) fn out_ptr<T>(api: &str, name: &str, p: *mut T) -> Result<*mut T> {
    if p.is_null() {
        return Err(AclError::invalid(format!("{api}: {name} is NULL")));
    }
    if !p.is_aligned() {
        return Err(AclError::invalid(format!("{api}: {name} {p:p} is not aligned for its type")));
    }
    Ok(p)
}

/// Writes `value` through a checked output pointer.
pub(crate) fn put<T>(p: *mut T, value: T) {
    // SAFETY: `p` passed `out_ptr` (non-null, aligned); the C caller guarantees it points to
    // writable storage of `T`, per the API's documented contract.
    unsafe { p.write(value) };
}

pub(crate) fn addr(p: *const c_void) -> u64 {
    // CAST: a pointer's address as a number; usize fits in u64 on every supported host.
    p as usize as u64
}

pub(crate) fn size(api: &str, name: &str, v: usize) -> Result<u64> {
    if v > isize::MAX as usize {
        return Err(AclError::invalid(format!("{api}: {name} {v} is larger than any object can be")));
    }
    // CAST: checked above to fit.
    Ok(v as u64)
}

/// `aclError aclInit(const char *configPath);`
#[no_mangle]
pub unsafe extern "C" fn aclInit(config_path: *const c_char) -> AclErrorCode {
    trace_args!(config_path);
    guard("aclInit", || {
        let path = if config_path.is_null() {
            None
        } else {
            // SAFETY: non-null (checked); the caller passes a NUL-terminated string per the API.
            let c = unsafe { CStr::from_ptr(config_path) };
            Some(c.to_str().map_err(|_| AclError::invalid("aclInit: configPath is not valid UTF-8"))?)
        };
        runtime::remember_init(runtime::init(path))
    })
}

/// `aclError aclFinalize();`
#[no_mangle]
pub extern "C" fn aclFinalize() -> AclErrorCode {
    trace_args!();
    guard("aclFinalize", runtime::finalize)
}

/// `const char *aclGetRecentErrMsg();` — the newest message, cleared once returned.
#[no_mangle]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    catch_unwind(|| {
        let msg = PENDING.with(|p| p.borrow_mut().take());
        RETURNED.with(|r| {
            let mut r = r.borrow_mut();
            *r = msg;
            r.as_ref().map_or(std::ptr::null(), |m| m.as_ptr())
        })
    })
    .unwrap_or(std::ptr::null())
}

/// `aclError aclrtSetDevice(int32_t deviceId);`
#[no_mangle]
pub extern "C" fn aclrtSetDevice(device_id: i32) -> AclErrorCode {
    trace_args!(device_id);
    guard("aclrtSetDevice", || runtime::runtime("aclrtSetDevice")?.set_device(device_id))
}

/// `aclError aclrtResetDevice(int32_t deviceId);`
#[no_mangle]
pub extern "C" fn aclrtResetDevice(device_id: i32) -> AclErrorCode {
    trace_args!(device_id);
    guard("aclrtResetDevice", || runtime::runtime("aclrtResetDevice")?.reset_device(device_id, false))
}

/// `aclError aclrtResetDeviceForce(int32_t deviceId);`
#[no_mangle]
pub extern "C" fn aclrtResetDeviceForce(device_id: i32) -> AclErrorCode {
    trace_args!(device_id);
    guard("aclrtResetDeviceForce", || {
        runtime::runtime("aclrtResetDeviceForce")?.reset_device(device_id, true)
    })
}

/// `aclError aclrtGetDevice(int32_t *deviceId);`
#[no_mangle]
pub unsafe extern "C" fn aclrtGetDevice(device_id: *mut i32) -> AclErrorCode {
    const API: &str = "aclrtGetDevice";
    trace_args!(device_id);
    guard(API, || {
        let out = out_ptr(API, "deviceId", device_id)?;
        let d = runtime::runtime(API)?.current_device(API)?;
        // CAST: device ids are below MAX_DEVICES.
        put(out, d as i32);
        Ok(())
    })
}

/// `aclError aclrtGetDeviceCount(uint32_t *count);`
#[no_mangle]
pub unsafe extern "C" fn aclrtGetDeviceCount(count: *mut u32) -> AclErrorCode {
    const API: &str = "aclrtGetDeviceCount";
    trace_args!(count);
    guard(API, || {
        let out = out_ptr(API, "count", count)?;
        put(out, runtime::runtime(API)?.device_count());
        Ok(())
    })
}

/// `aclError aclrtGetRunMode(aclrtRunMode *runMode);` — always `ACL_HOST` (1).
#[no_mangle]
pub unsafe extern "C" fn aclrtGetRunMode(run_mode: *mut i32) -> AclErrorCode {
    const API: &str = "aclrtGetRunMode";
    trace_args!(run_mode);
    guard(API, || {
        let out = out_ptr(API, "runMode", run_mode)?;
        runtime::runtime(API)?;
        put(out, 1);
        Ok(())
    })
}
