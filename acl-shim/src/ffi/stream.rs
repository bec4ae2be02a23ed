//! C exports of streams, events, contexts, host functions and callbacks, and the thread's last
//! error.
//!
//! Handles (`aclrtStream`, `aclrtEvent`, `aclrtContext`) are opaque numbers made by
//! [`crate::state::stream`] and cast to pointers; C owns none of them and this module never
//! dereferences one. The host functions C hands in are called here, and only here, when the
//! device reaches them.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Arc, Once};

use super::{guard, put, AclErrorCode, Call, LAST_ERROR};
use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::stream::{HostCall, Report, Timeout};

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
    if let Some(code) = crate::api::stream_ctl::run_internal(task.func, task.data) {
        return code;
    }
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
            let Ok(rt) = super::Call::new("aclrtLaunchCallback").rt() else {
                return crate::state::stream::ACL_ERROR_RT_STREAM_NO_CB_REG;
            };
            if rt.post_report(thread, Report { call, done: Arc::clone(&done) }).is_err() {
                return crate::state::stream::ACL_ERROR_RT_STREAM_NO_CB_REG;
            }
            if block {
                let (m, cv) = &*done;
                // Relock: the flag is a bool its one writer sets in a single store.
                let mut finished = crate::sync::relock(m);
                while !*finished {
                    finished = cv.wait(finished).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
            0
        }
    }
}

pub(crate) fn ensure_hook(rt: &Runtime) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        if let Some(loader) = rt.backend().driver().loader() {
            loader.set_host_hook(Arc::new(run_host_call));
        }
    });
}

export! {
    /// `aclError aclrtCreateStream(aclrtStream *stream);`
    pub unsafe fn aclrtCreateStream(stream: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("stream", stream)?;
        let h = cx.rt()?.create_stream(API, 0)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);`
    pub unsafe fn aclrtCreateStreamWithConfig(
        stream: *mut *mut c_void,
        priority: u32,
        flag: u32,
    ) -> AclErrorCode |cx| {
        let out = cx.out("stream", stream)?;
        let h = cx.rt()?.create_stream_with(API, flag, priority)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtDestroyStream(aclrtStream stream);`
    pub fn aclrtDestroyStream(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.destroy_stream(API, handle(stream), false)
    }
}

export! {
    /// `aclError aclrtDestroyStreamForce(aclrtStream stream);`
    pub fn aclrtDestroyStreamForce(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.destroy_stream(API, handle(stream), true)
    }
}

export! {
    /// `aclError aclrtSynchronizeStream(aclrtStream stream);`
    pub fn aclrtSynchronizeStream(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.synchronize_stream(API, handle(stream), Timeout::Forever)
    }
}

export! {
    /// `aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);`
    pub fn aclrtSynchronizeStreamWithTimeout(stream: *mut c_void, timeout: i32) -> AclErrorCode |cx| {
        let t = Timeout::from_api(API, timeout)?;
        cx.rt()?.synchronize_stream(API, handle(stream), t)
    }
}

export! {
    /// `aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);`
    pub unsafe fn aclrtStreamQuery(stream: *mut c_void, status: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("status", status)?;
        let done = cx.rt()?.stream_is_complete(API, handle(stream))?;
        put(out, if done { 0 } else { 1 });
        Ok(())
    }
}

export! {
    /// `aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);`
    pub fn aclrtStreamWaitEvent(stream: *mut c_void, event: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.stream_wait_event(API, handle(stream), handle(event))
    }
}

export! {
    /// `aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode);`
    pub fn aclrtSetStreamFailureMode(stream: *mut c_void, mode: u64) -> AclErrorCode |cx| {
        cx.rt()?.set_failure_mode(API, handle(stream), mode)
    }
}

export! {
    /// `aclError aclrtSynchronizeDevice(void);`
    pub fn aclrtSynchronizeDevice() -> AclErrorCode |cx| {
        cx.rt()?.synchronize_device(API, Timeout::Forever)
    }
}

export! {
    /// `aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout);`
    pub fn aclrtSynchronizeDeviceWithTimeout(timeout: i32) -> AclErrorCode |cx| {
        let t = Timeout::from_api(API, timeout)?;
        cx.rt()?.synchronize_device(API, t)
    }
}

/// The body of the `aclrtCreateEvent*` exports (the API trace shows the flags and the form).
fn create_event(cx: &Call, api: &'static str, event: *mut *mut c_void, flags: u32, ex: bool) -> Result<()> {
    trace_args!(event, flags, ex);
    let out = cx.out("event", event)?;
    let h = cx.rt()?.create_event(api, flags, ex)?;
    put(out, to_ptr(h));
    Ok(())
}

export! {
    /// `aclError aclrtCreateEvent(aclrtEvent *event);`
    pub unsafe fn aclrtCreateEvent(event: *mut *mut c_void) -> AclErrorCode |cx| {
        create_event(
            cx,
            API,
            event,
            crate::state::stream::event_flag::SYNC | crate::state::stream::event_flag::TIME_LINE,
            false,
        )
    }
}

export! {
    /// `aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);`
    pub unsafe fn aclrtCreateEventWithFlag(event: *mut *mut c_void, flag: u32) -> AclErrorCode |cx| {
        create_event(cx, API, event, flag, false)
    }
}

export! {
    /// `aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag);`
    pub unsafe fn aclrtCreateEventExWithFlag(event: *mut *mut c_void, flag: u32) -> AclErrorCode |cx| {
        if flag & crate::state::stream::event_flag::IPC != 0 && flag != crate::state::stream::event_flag::IPC {
            return Err(AclError::rt_invalid(format!(
                "{API}: ACL_EVENT_IPC must be the only flag (flag {flag:#x})"
            )));
        }
        create_event(cx, API, event, flag, true)
    }
}

export! {
    /// `aclError aclrtDestroyEvent(aclrtEvent event);`
    pub fn aclrtDestroyEvent(event: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.destroy_event(API, handle(event))
    }
}

export! {
    /// `aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);`
    pub fn aclrtRecordEvent(event: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.record_event(API, handle(event), handle(stream))
    }
}

export! {
    /// `aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);`
    pub fn aclrtResetEvent(event: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.reset_event(API, handle(event), handle(stream))
    }
}

export! {
    /// `aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status);` (deprecated:
    /// COMPLETE is 0, NOT_READY 1).
    pub unsafe fn aclrtQueryEvent(event: *mut c_void, status: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("status", status)?;
        let done = cx.rt()?.event_is_complete(API, handle(event))?;
        put(out, if done { 0 } else { 1 });
        Ok(())
    }
}

export! {
    /// `aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);`
    /// (COMPLETE is 1, NOT_READY 0).
    pub unsafe fn aclrtQueryEventStatus(event: *mut c_void, status: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("status", status)?;
        let done = cx.rt()?.event_is_complete(API, handle(event))?;
        put(out, i32::from(done));
        Ok(())
    }
}

export! {
    /// `aclError aclrtSynchronizeEvent(aclrtEvent event);`
    pub fn aclrtSynchronizeEvent(event: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.synchronize_event(API, handle(event), Timeout::Forever)
    }
}

export! {
    /// `aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);`
    pub fn aclrtSynchronizeEventWithTimeout(event: *mut c_void, timeout: i32) -> AclErrorCode |cx| {
        let t = Timeout::from_api(API, timeout)?;
        cx.rt()?.synchronize_event(API, handle(event), t)
    }
}

export! {
    /// `aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);`
    pub unsafe fn aclrtEventElapsedTime(
        ms: *mut f32,
        start: *mut c_void,
        end: *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("ms", ms)?;
        let v = cx.rt()?.elapsed_ms(API, handle(start), handle(end))?;
        put(out, v);
        Ok(())
    }
}

export! {
    /// `aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp);` — microseconds of
    /// the device's monotonic clock at which the event's record ran.
    pub unsafe fn aclrtEventGetTimestamp(event: *mut c_void, timestamp: *mut u64) -> AclErrorCode |cx| {
        let out = cx.out("timestamp", timestamp)?;
        let ns = cx.rt()?.event_timestamp_ns(API, handle(event))?;
        put(out, ns / 1000);
        Ok(())
    }
}

export! {
    /// `aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);`
    pub unsafe fn aclrtLaunchHostFunc(
        stream: *mut c_void,
        func: Option<unsafe extern "C" fn(*mut c_void)>,
        args: *mut c_void,
    ) -> AclErrorCode |cx| {
        let func = func.ok_or_else(|| AclError::invalid(format!("{API}: fn is NULL")))?;
        // One thread-local access for the runtime, the stream's lookup and the submission.
        cx.with_rt(|rt, l| {
            ensure_hook(rt);
            // CAST: the argument travels as an address.
            rt.launch_host_call(l, API, handle(stream), HostCall { func, data: args as usize, report: None })
        })
    }
}

export! {
    /// `aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream);`
    pub unsafe fn aclrtLaunchCallback(
        func: Option<unsafe extern "C" fn(*mut c_void)>,
        user_data: *mut c_void,
        block_type: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
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
        cx.with_rt(|rt, l| {
            ensure_hook(rt);
            // CAST: the argument travels as an address.
            rt.launch_host_call(
                l,
                API,
                handle(stream),
                HostCall { func, data: user_data as usize, report: Some((0, block)) },
            )
        })
    }
}

export! {
    /// `aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);`
    pub fn aclrtSubscribeReport(thread_id: u64, stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.subscribe_report(API, thread_id, handle(stream))
    }
}

export! {
    /// `aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);`
    pub fn aclrtUnSubscribeReport(thread_id: u64, stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.unsubscribe_report(API, thread_id, handle(stream))
    }
}

export! {
    /// `aclError aclrtProcessReport(int32_t timeout);` — runs one callback for the calling thread.
    pub fn aclrtProcessReport(timeout: i32) -> AclErrorCode |cx| {
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
        let report = cx.rt()?.next_report(API, this_thread(), t)?;
        // SAFETY: the callback and its data were given by the C caller of aclrtLaunchCallback,
        // whose contract is that `fn(userData)` runs once on the subscribed thread — this one.
        unsafe { (report.call.func)(to_ptr(report.call.data as u64)) };
        let (m, cv) = &*report.done;
        // Relock: a single store of a bool (see `run_host_call`).
        *crate::sync::relock(m) = true;
        cv.notify_all();
        Ok(())
    }
}

export! {
    /// `aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);`
    pub unsafe fn aclrtCreateContext(context: *mut *mut c_void, device_id: i32) -> AclErrorCode |cx| {
        let out = cx.out("context", context)?;
        let h = cx.rt()?.create_context(API, device_id)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtDestroyContext(aclrtContext context);`
    pub fn aclrtDestroyContext(context: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.destroy_context(API, handle(context))
    }
}

export! {
    /// `aclError aclrtSetCurrentContext(aclrtContext context);`
    pub fn aclrtSetCurrentContext(context: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.set_current_context(API, handle(context))
    }
}

export! {
    /// `aclError aclrtGetCurrentContext(aclrtContext *context);`
    pub unsafe fn aclrtGetCurrentContext(context: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("context", context)?;
        let h = cx.rt()?.current_context(API)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

fn check_level(level: i32) -> bool {
    level == 0
}

/// Refuses a level other than `ACL_RT_THREAD_LEVEL` as the ACL layer does: 100000 with a
/// message, and the thread's last error left as it was (ACL-layer refusals are not recorded).
fn bad_level(api: &'static str, level: i32) -> AclErrorCode {
    let kept = LAST_ERROR.with(Cell::get);
    let code = guard(api, crate::log::api_trace_enabled(), || {
        Err(AclError::invalid(format!("{api}: level {level} is not ACL_RT_THREAD_LEVEL (0), the only level")))
    });
    LAST_ERROR.with(|l| l.set(kept));
    code
}

export! {
    /// `aclError aclrtGetLastError(aclrtLastErrLevel level);` — the thread's last error,
    /// cleared. It returns that error rather than a status of its own, so it has the second
    /// form of `export!` (a panic returns `ACL_ERROR_INTERNAL_ERROR`).
    pub fn aclrtGetLastError(level: i32) -> AclErrorCode = ACL_ERROR_INTERNAL_ERROR, |cx| {
        if !check_level(level) {
            return Ok(bad_level(API, level));
        }
        Ok(LAST_ERROR.with(|l| l.replace(0)))
    }
}

export! {
    /// `aclError aclrtPeekAtLastError(aclrtLastErrLevel level);` — the thread's last error, kept
    /// (the second form of `export!`, as `aclrtGetLastError`).
    pub fn aclrtPeekAtLastError(level: i32) -> AclErrorCode = ACL_ERROR_INTERNAL_ERROR, |cx| {
        if !check_level(level) {
            return Ok(bad_level(API, level));
        }
        Ok(LAST_ERROR.with(Cell::get))
    }
}

export! {
    /// `void aclrsKernelFail(int32_t code);` — a kernel on the software NPU reports a fault.
    pub fn aclrsKernelFail(code: i32) -> () = (), |cx| {
        hal_sim::kernel_fail(code);
        Ok(())
    }
}
