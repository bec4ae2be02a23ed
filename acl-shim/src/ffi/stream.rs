//! C exports of streams, events, contexts, host functions and callbacks, and the thread's last
//! error.
//!
//! Handles (`aclrtStream`, `aclrtEvent`, `aclrtContext`) are opaque numbers made by
//! [`crate::stream`] and cast to pointers; C owns none of them and this module never
//! dereferences one. The host functions C hands in are called here, and only here, when the
//! device reaches them.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Arc, Once};

use super::{guard, out_ptr, put, AclErrorCode};
use crate::codes::*;
use crate::error::AclError;
use crate::runtime::{self, Runtime};
use crate::stream::{HostCall, Report, Timeout};

thread_local! {
    /// The calling thread's last runtime error (`aclrtGetLastError`).
    static LAST_ERROR: Cell<i32> = const { Cell::new(0) };
}

/// Notes a failed call's code as the thread's last error (called from the one conversion
/// point in [`super`]).
pub(crate) fn note_error(code: i32) {
    LAST_ERROR.with(|l| l.set(code));
}

/// A handle as the number it stands for.
pub(crate) fn handle(p: *mut c_void) -> u64 {
    // CAST: handles are numbers cast to pointers; this never dereferences them.
    p as usize as u64
}

/// A number as the handle C sees.
pub(crate) fn to_ptr(h: u64) -> *mut c_void {
    // CAST: the inverse of `handle`; the pointer is never dereferenced by anyone.
    h as usize as *mut c_void
}

/// The calling thread's id, as `aclrtSubscribeReport` takes it (`pthread_self`).
fn this_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions and always succeeds.
    let t = unsafe { libc::pthread_self() };
    // CAST: pthread_t is an integer id on Linux.
    t as u64
}

/// The host call a task carries, with its C function back as a function pointer.
fn from_task(call: hal::HostCall) -> Option<HostCall> {
    let addr = usize::try_from(call.func).ok().filter(|&a| a != 0)?;
    // SAFETY: the address was made from an `unsafe extern "C" fn(*mut c_void)` by
    // `HostCall::to_task` when the call was launched, and travels unchanged in the task.
    let func = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(addr) };
    // CAST: the data address round-trips through u64.
    Some(HostCall { func, data: call.data as usize, report: call.report })
}

/// Runs a host call for the device (the hook installed on the loader).
fn run_host_call(task: hal::HostCall) -> i32 {
    let Some(call) = from_task(task) else { return ACL_ERROR_RT_INTERNAL_ERROR };
    match call.report {
        None => {
            // SAFETY: `func` and `data` were given by the C caller of aclrtLaunchHostFunc, whose
            // contract is that `func(data)` may be called once, on a runtime thread, when the
            // stream reaches it. A panic cannot cross: the function is C.
            unsafe { (call.func)(crate::ffi::stream::to_ptr(call.data as u64)) };
            0
        }
        Some((thread, block)) => {
            let done = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
            let Ok(rt) = runtime::runtime("aclrtLaunchCallback") else {
                return crate::stream::ACL_ERROR_RT_STREAM_NO_CB_REG;
            };
            if rt.post_report(thread, Report { call, done: Arc::clone(&done) }).is_err() {
                return crate::stream::ACL_ERROR_RT_STREAM_NO_CB_REG;
            }
            if block {
                let (m, cv) = &*done;
                let mut finished = m.lock().unwrap_or_else(|p| p.into_inner());
                while !*finished {
                    finished = cv.wait(finished).unwrap_or_else(|p| p.into_inner());
                }
            }
            0
        }
    }
}

fn ensure_hook(rt: &Runtime) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        if let Some(loader) = rt.backend().driver().loader() {
            loader.set_host_hook(Arc::new(run_host_call));
        }
    });
}

/// `aclError aclrtCreateStream(aclrtStream *stream);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateStream(stream: *mut *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtCreateStream";
    trace_args!(stream);
    guard(API, || {
        let out = out_ptr(API, "stream", stream)?;
        let h = runtime::runtime(API)?.create_stream(API, 0)?;
        put(out, to_ptr(h));
        Ok(())
    })
}

/// `aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateStreamWithConfig(
    stream: *mut *mut c_void,
    priority: u32,
    flag: u32,
) -> AclErrorCode {
    const API: &str = "aclrtCreateStreamWithConfig";
    trace_args!(stream, priority, flag);
    guard(API, || {
        let out = out_ptr(API, "stream", stream)?;
        let _reserved = priority;
        let h = runtime::runtime(API)?.create_stream(API, flag)?;
        put(out, to_ptr(h));
        Ok(())
    })
}

/// `aclError aclrtDestroyStream(aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtDestroyStream(stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtDestroyStream";
    trace_args!(stream);
    guard(API, || runtime::runtime(API)?.destroy_stream(API, handle(stream), false))
}

/// `aclError aclrtDestroyStreamForce(aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtDestroyStreamForce(stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtDestroyStreamForce";
    trace_args!(stream);
    guard(API, || runtime::runtime(API)?.destroy_stream(API, handle(stream), true))
}

/// `aclError aclrtSynchronizeStream(aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtSynchronizeStream(stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtSynchronizeStream";
    trace_args!(stream);
    guard(API, || runtime::runtime(API)?.synchronize_stream(API, handle(stream), Timeout::Forever))
}

/// `aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtSynchronizeStreamWithTimeout(stream: *mut c_void, timeout: i32) -> AclErrorCode {
    const API: &str = "aclrtSynchronizeStreamWithTimeout";
    trace_args!(stream, timeout);
    guard(API, || {
        let t = Timeout::from_api(API, timeout)?;
        runtime::runtime(API)?.synchronize_stream(API, handle(stream), t)
    })
}

/// `aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);`
#[no_mangle]
pub unsafe extern "C" fn aclrtStreamQuery(stream: *mut c_void, status: *mut i32) -> AclErrorCode {
    const API: &str = "aclrtStreamQuery";
    trace_args!(stream, status);
    guard(API, || {
        let out = out_ptr(API, "status", status)?;
        let done = runtime::runtime(API)?.stream_is_complete(API, handle(stream))?;
        put(out, if done { 0 } else { 1 });
        Ok(())
    })
}

/// `aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);`
#[no_mangle]
pub extern "C" fn aclrtStreamWaitEvent(stream: *mut c_void, event: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtStreamWaitEvent";
    trace_args!(stream, event);
    guard(API, || runtime::runtime(API)?.stream_wait_event(API, handle(stream), handle(event)))
}

/// `aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode);`
#[no_mangle]
pub extern "C" fn aclrtSetStreamFailureMode(stream: *mut c_void, mode: u64) -> AclErrorCode {
    const API: &str = "aclrtSetStreamFailureMode";
    trace_args!(stream, mode);
    guard(API, || runtime::runtime(API)?.set_failure_mode(API, handle(stream), mode))
}

/// `aclError aclrtSynchronizeDevice(void);`
#[no_mangle]
pub extern "C" fn aclrtSynchronizeDevice() -> AclErrorCode {
    const API: &str = "aclrtSynchronizeDevice";
    trace_args!();
    guard(API, || runtime::runtime(API)?.synchronize_device(API, Timeout::Forever))
}

/// `aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtSynchronizeDeviceWithTimeout(timeout: i32) -> AclErrorCode {
    const API: &str = "aclrtSynchronizeDeviceWithTimeout";
    trace_args!(timeout);
    guard(API, || {
        let t = Timeout::from_api(API, timeout)?;
        runtime::runtime(API)?.synchronize_device(API, t)
    })
}

fn create_event(api: &'static str, event: *mut *mut c_void, flags: u32, ex: bool) -> AclErrorCode {
    trace_args!(event, flags, ex);
    guard(api, || {
        let out = out_ptr(api, "event", event)?;
        let h = runtime::runtime(api)?.create_event(api, flags, ex)?;
        put(out, to_ptr(h));
        Ok(())
    })
}

/// `aclError aclrtCreateEvent(aclrtEvent *event);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateEvent(event: *mut *mut c_void) -> AclErrorCode {
    create_event(
        "aclrtCreateEvent",
        event,
        crate::stream::event_flag::SYNC | crate::stream::event_flag::TIME_LINE,
        false,
    )
}

/// `aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateEventWithFlag(event: *mut *mut c_void, flag: u32) -> AclErrorCode {
    create_event("aclrtCreateEventWithFlag", event, flag, false)
}

/// `aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateEventExWithFlag(event: *mut *mut c_void, flag: u32) -> AclErrorCode {
    create_event("aclrtCreateEventExWithFlag", event, flag, true)
}

/// `aclError aclrtDestroyEvent(aclrtEvent event);`
#[no_mangle]
pub extern "C" fn aclrtDestroyEvent(event: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtDestroyEvent";
    trace_args!(event);
    guard(API, || runtime::runtime(API)?.destroy_event(API, handle(event)))
}

/// `aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtRecordEvent(event: *mut c_void, stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtRecordEvent";
    trace_args!(event, stream);
    guard(API, || runtime::runtime(API)?.record_event(API, handle(event), handle(stream)))
}

/// `aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtResetEvent(event: *mut c_void, stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtResetEvent";
    trace_args!(event, stream);
    guard(API, || runtime::runtime(API)?.reset_event(API, handle(event), handle(stream)))
}

/// `aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status);` (deprecated:
/// COMPLETE is 0, NOT_READY 1).
#[no_mangle]
pub unsafe extern "C" fn aclrtQueryEvent(event: *mut c_void, status: *mut i32) -> AclErrorCode {
    const API: &str = "aclrtQueryEvent";
    trace_args!(event, status);
    guard(API, || {
        let out = out_ptr(API, "status", status)?;
        let done = runtime::runtime(API)?.event_is_complete(API, handle(event))?;
        put(out, if done { 0 } else { 1 });
        Ok(())
    })
}

/// `aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);`
/// (COMPLETE is 1, NOT_READY 0).
#[no_mangle]
pub unsafe extern "C" fn aclrtQueryEventStatus(event: *mut c_void, status: *mut i32) -> AclErrorCode {
    const API: &str = "aclrtQueryEventStatus";
    trace_args!(event, status);
    guard(API, || {
        let out = out_ptr(API, "status", status)?;
        let done = runtime::runtime(API)?.event_is_complete(API, handle(event))?;
        put(out, i32::from(done));
        Ok(())
    })
}

/// `aclError aclrtSynchronizeEvent(aclrtEvent event);`
#[no_mangle]
pub extern "C" fn aclrtSynchronizeEvent(event: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtSynchronizeEvent";
    trace_args!(event);
    guard(API, || runtime::runtime(API)?.synchronize_event(API, handle(event), Timeout::Forever))
}

/// `aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);`
#[no_mangle]
pub extern "C" fn aclrtSynchronizeEventWithTimeout(event: *mut c_void, timeout: i32) -> AclErrorCode {
    const API: &str = "aclrtSynchronizeEventWithTimeout";
    trace_args!(event, timeout);
    guard(API, || {
        let t = Timeout::from_api(API, timeout)?;
        runtime::runtime(API)?.synchronize_event(API, handle(event), t)
    })
}

/// `aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);`
#[no_mangle]
pub unsafe extern "C" fn aclrtEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    end: *mut c_void,
) -> AclErrorCode {
    const API: &str = "aclrtEventElapsedTime";
    trace_args!(ms, start, end);
    guard(API, || {
        let out = out_ptr(API, "ms", ms)?;
        let v = runtime::runtime(API)?.elapsed_ms(API, handle(start), handle(end))?;
        put(out, v);
        Ok(())
    })
}

/// `aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp);` — microseconds of
/// the device's monotonic clock at which the event's record ran.
#[no_mangle]
pub unsafe extern "C" fn aclrtEventGetTimestamp(event: *mut c_void, timestamp: *mut u64) -> AclErrorCode {
    const API: &str = "aclrtEventGetTimestamp";
    trace_args!(event, timestamp);
    guard(API, || {
        let out = out_ptr(API, "timestamp", timestamp)?;
        let ns = runtime::runtime(API)?.event_timestamp_ns(API, handle(event))?;
        put(out, ns / 1000);
        Ok(())
    })
}

/// `aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);`
#[no_mangle]
pub unsafe extern "C" fn aclrtLaunchHostFunc(
    stream: *mut c_void,
    func: Option<unsafe extern "C" fn(*mut c_void)>,
    args: *mut c_void,
) -> AclErrorCode {
    const API: &str = "aclrtLaunchHostFunc";
    trace_args!(stream, func, args);
    guard(API, || {
        let func = func.ok_or_else(|| AclError::invalid(format!("{API}: fn is NULL")))?;
        let rt = runtime::runtime(API)?;
        ensure_hook(&rt);
        // CAST: the argument travels as an address.
        rt.launch_host_call(API, handle(stream), HostCall { func, data: args as usize, report: None })
    })
}

/// `aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream);`
#[no_mangle]
pub unsafe extern "C" fn aclrtLaunchCallback(
    func: Option<unsafe extern "C" fn(*mut c_void)>,
    user_data: *mut c_void,
    block_type: u32,
    stream: *mut c_void,
) -> AclErrorCode {
    const API: &str = "aclrtLaunchCallback";
    trace_args!(func, user_data, block_type, stream);
    guard(API, || {
        let func = func.ok_or_else(|| AclError::invalid(format!("{API}: fn is NULL")))?;
        let block = match block_type {
            0 => false,
            1 => true,
            b => {
                return Err(AclError::invalid(format!(
                    "{API}: blockType {b} is neither ACL_CALLBACK_NO_BLOCK (0) nor ACL_CALLBACK_BLOCK (1)"
                )))
            }
        };
        let rt = runtime::runtime(API)?;
        ensure_hook(&rt);
        // CAST: the argument travels as an address.
        rt.launch_host_call(
            API,
            handle(stream),
            HostCall { func, data: user_data as usize, report: Some((0, block)) },
        )
    })
}

/// `aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtSubscribeReport(thread_id: u64, stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtSubscribeReport";
    trace_args!(thread_id, stream);
    guard(API, || runtime::runtime(API)?.subscribe_report(API, thread_id, handle(stream)))
}

/// `aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);`
#[no_mangle]
pub extern "C" fn aclrtUnSubscribeReport(thread_id: u64, stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtUnSubscribeReport";
    trace_args!(thread_id, stream);
    guard(API, || runtime::runtime(API)?.unsubscribe_report(API, thread_id, handle(stream)))
}

/// `aclError aclrtProcessReport(int32_t timeout);` — runs one callback for the calling thread.
#[no_mangle]
pub extern "C" fn aclrtProcessReport(timeout: i32) -> AclErrorCode {
    const API: &str = "aclrtProcessReport";
    trace_args!(timeout);
    guard(API, || {
        let t = match timeout {
            -1 => Timeout::Forever,
            // CAST: positive, checked by the guard.
            t if t > 0 => Timeout::Millis(t as u32),
            t => {
                return Err(AclError::invalid(format!(
                    "{API}: timeout {t} must be -1 (forever) or > 0 milliseconds"
                )))
            }
        };
        let report = runtime::runtime(API)?.next_report(API, this_thread(), t)?;
        // SAFETY: the callback and its data were given by the C caller of aclrtLaunchCallback,
        // whose contract is that `fn(userData)` runs once on the subscribed thread — this one.
        unsafe { (report.call.func)(to_ptr(report.call.data as u64)) };
        let (m, cv) = &*report.done;
        *m.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
        Ok(())
    })
}

/// `aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateContext(context: *mut *mut c_void, device_id: i32) -> AclErrorCode {
    const API: &str = "aclrtCreateContext";
    trace_args!(context, device_id);
    guard(API, || {
        let out = out_ptr(API, "context", context)?;
        let h = runtime::runtime(API)?.create_context(API, device_id)?;
        put(out, to_ptr(h));
        Ok(())
    })
}

/// `aclError aclrtDestroyContext(aclrtContext context);`
#[no_mangle]
pub extern "C" fn aclrtDestroyContext(context: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtDestroyContext";
    trace_args!(context);
    guard(API, || runtime::runtime(API)?.destroy_context(API, handle(context)))
}

/// `aclError aclrtSetCurrentContext(aclrtContext context);`
#[no_mangle]
pub extern "C" fn aclrtSetCurrentContext(context: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtSetCurrentContext";
    trace_args!(context);
    guard(API, || runtime::runtime(API)?.set_current_context(API, handle(context)))
}

/// `aclError aclrtGetCurrentContext(aclrtContext *context);`
#[no_mangle]
pub unsafe extern "C" fn aclrtGetCurrentContext(context: *mut *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtGetCurrentContext";
    trace_args!(context);
    guard(API, || {
        let out = out_ptr(API, "context", context)?;
        let h = runtime::runtime(API)?.current_context(API)?;
        put(out, to_ptr(h));
        Ok(())
    })
}

fn check_level(level: i32) -> bool {
    level == 0
}

/// Refuses a level other than `ACL_RT_THREAD_LEVEL` as the ACL layer does: 100000 with a
/// message, and the thread's last error left as it was (ACL-layer refusals are not recorded).
fn bad_level(api: &'static str, level: i32) -> AclErrorCode {
    let kept = LAST_ERROR.with(Cell::get);
    let code = guard(api, || {
        Err(AclError::invalid(format!("{api}: level {level} is not ACL_RT_THREAD_LEVEL (0), the only level")))
    });
    LAST_ERROR.with(|l| l.set(kept));
    code
}

/// `aclError aclrtGetLastError(aclrtLastErrLevel level);` — the thread's last error, cleared.
#[no_mangle]
pub extern "C" fn aclrtGetLastError(level: i32) -> AclErrorCode {
    if !check_level(level) {
        return bad_level("aclrtGetLastError", level);
    }
    LAST_ERROR.with(|l| l.replace(0))
}

/// `aclError aclrtPeekAtLastError(aclrtLastErrLevel level);` — the thread's last error, kept.
#[no_mangle]
pub extern "C" fn aclrtPeekAtLastError(level: i32) -> AclErrorCode {
    if !check_level(level) {
        return bad_level("aclrtPeekAtLastError", level);
    }
    LAST_ERROR.with(Cell::get)
}

/// `void aclrsKernelFail(int32_t code);` — a kernel on the software NPU reports a fault.
#[no_mangle]
pub extern "C" fn aclrsKernelFail(code: i32) {
    hal_sim::kernel_fail(code);
}
