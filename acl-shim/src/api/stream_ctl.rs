//! Stream control (fact sheet §8) and host-function threads (§9): stop, abort, stream-state
//! callbacks, waits with a timeout, attributes, id/flag/priority queries, the stream-config
//! creation, and `aclrtSubscribeHostFunc` / `aclrtProcessHostFunc` / `aclrtUnSubscribeHostFunc`.
//!
//! This module owns those calls' checks and their work on the backend, and the runtime's
//! *internal host operations*: work that a stream runs in order on a device thread and that
//! may fail the stream (a timed wait that expires) or hand a host function to a subscribed
//! thread. An internal operation is a host-function task whose function is `internal_op` and
//! whose argument is a boxed `InternalOp`; the host-call hook (`crate::ffi::stream`) runs it
//! through `run_internal` and turns its code into the task's status, so an expired wait
//! surfaces at the stream's next synchronisation, as CANN reports it.
//!
//! It sits beside `crate::api::stream`, above `crate::state::stream` and
//! `crate::state::stream_ctl`.
//!
//! # Limits
//!
//! An internal operation dropped before it ran (`aclrtStreamAbort`, `aclrtDestroyStreamForce`,
//! a forced reset) leaks its small box. A host function handed to a host-function thread holds
//! its stream (and an abort of it) until that thread processes it, as CANN's does.
//!
//! # Locking
//!
//! The host-function queues (`HOST_FUNC_QUEUES`, process-wide, not on a per-task hot path: only
//! streams with a subscribed host-function thread use it) and one queue's mutex, in that order;
//! no lock is held across a backend call or a user function.

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hal::{DeviceAddr, DeviceId, TaskDesc};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::notify::CntNotify;
use crate::state::stream::{event_flag, same_device, HostCall, StreamObj, ACL_ERROR_RT_REPORT_TIMEOUT};
use crate::state::stream_ctl::{
    self as ctl, ACL_ERROR_RT_STREAM_ABORT, ACL_ERROR_RT_STREAM_NOT_CAPTURED, ACL_ERROR_RT_STREAM_SUBSCRIBE,
    LEAST_PRIORITY,
};

/// `aclrtStreamAttr` values.
pub mod attr {
    /// `ACL_STREAM_ATTR_FAILURE_MODE`.
    pub const FAILURE_MODE: u32 = 1;
    /// `ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK`.
    pub const FLOAT_OVERFLOW_CHECK: u32 = 2;
    /// `ACL_STREAM_ATTR_USER_CUSTOM_TAG`.
    pub const USER_CUSTOM_TAG: u32 = 3;
    /// `ACL_STREAM_ATTR_CACHE_OP_INFO`.
    pub const CACHE_OP_INFO: u32 = 4;
    /// `ACL_STREAM_ATTR_PRIORITY`.
    pub const PRIORITY: u32 = 5;
}

/// The value of one stream attribute (`aclrtStreamAttrValue`'s member for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrValue {
    /// `failureMode` (a 64-bit word).
    Mode(u64),
    /// One of the 32-bit members.
    Word(u32),
}

/// Work a stream runs in order on a device thread for the runtime (see the module docs).
#[derive(Debug)]
pub(crate) enum InternalOp {
    /// Wait (at most `timeout_ms`) for point `seq` of queue `queue` of `dev`: an event wait
    /// with a timeout.
    WaitPoint { dev: u32, queue: hal::QueueId, seq: u64, timeout_ms: u32 },
    /// Hand `call` to host-function thread `thread` and wait until it ran.
    HostFunc { thread: u64, call: HostCall },
    /// Wait (at most `timeout_ms`) for the 64-bit word at `addr` of `dev` to become non-zero,
    /// then clear it: a notify wait with a timeout.
    NotifyWait { dev: u32, addr: u64, timeout_ms: u64 },
    /// Change a count notify's count: `mode` 0 set, 1 add, 2 or, 4 and, with `value`.
    CntRecord { obj: Arc<CntNotify>, mode: u32, value: u32 },
    /// Wait (at most `timeout_ms`, 0: forever) until the count compares with `value` as `mode`
    /// says (0 <, 1 ==, 2 >, 3 >=, 4 all bits of `value`), then clear it when `clear`.
    CntWait { obj: Arc<CntNotify>, mode: u32, value: u32, timeout_ms: u64, clear: bool },
}

/// The marker function of internal operations: never called as such (the hook recognises its
/// address and calls [`run_internal`]); if it ever is, it drops its argument.
pub(crate) unsafe extern "C" fn internal_op(data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` is the `Box<InternalOp>` `submit_internal` leaked for this task.
        drop(unsafe { Box::from_raw(data.cast::<InternalOp>()) });
    }
}

/// The address of [`internal_op`] as a task carries it.
fn internal_op_addr() -> u64 {
    let f: unsafe extern "C" fn(*mut c_void) = internal_op;
    // CAST: a function's address as the task carries it.
    f as *const () as usize as u64
}

/// Runs the internal operation a host-call task carries, if it is one: `Some(code)` (0 when it
/// succeeded), `None` for a user's host function.
pub(crate) fn run_internal(func: u64, data: u64) -> Option<i32> {
    if func != internal_op_addr() || data == 0 {
        return None;
    }
    // SAFETY: tasks whose function is `internal_op` are made only by `submit_internal`, whose
    // argument is a leaked `Box<InternalOp>`, and each task runs once.
    let op = unsafe { Box::from_raw(data as usize as *mut InternalOp) };
    Some(match *op {
        InternalOp::WaitPoint { dev, queue, seq, timeout_ms } => wait_point(dev, queue, seq, timeout_ms),
        InternalOp::HostFunc { thread, call } => deliver_host_func(thread, call),
        InternalOp::NotifyWait { dev, addr, timeout_ms } => timed_wait(dev, addr, timeout_ms),
        InternalOp::CntRecord { obj, mode, value } => {
            let mut c = crate::sync::relock(&obj.count);
            *c = match mode {
                0 => value,
                1 => c.wrapping_add(value),
                2 => *c | value,
                _ => *c & value,
            };
            obj.changed.notify_all();
            0
        }
        InternalOp::CntWait { obj, mode, value, timeout_ms, clear } => {
            cnt_wait(&obj, mode, value, timeout_ms, clear)
        }
    })
}

fn wait_point(dev: u32, queue: hal::QueueId, seq: u64, timeout_ms: u32) -> i32 {
    let Ok(rt) = crate::runtime::runtime("aclrtStreamWaitEventWithTimeout") else { return 0 };
    match rt.backend().driver().wait(DeviceId(dev), queue, seq, Some(timeout_ms)) {
        Ok(()) => 0,
        Err(e) if e.kind() == hal::ErrorKind::Timeout => ACL_ERROR_RT_WAIT_TIMEOUT,
        // The recorded stream is gone: it finished everything first.
        Err(_) => 0,
    }
}

/// Polls the word at `addr` of `dev` until it is non-zero (then clears it and returns 0) or
/// `timeout_ms` passes (`ACL_ERROR_RT_WAIT_TIMEOUT`): the body of a notify wait with a
/// timeout, run on a device thread.
pub(crate) fn timed_wait(dev: u32, addr: u64, timeout_ms: u64) -> i32 {
    let Ok(rt) = crate::runtime::runtime("aclrtWaitAndResetNotify") else {
        return ACL_ERROR_RT_INTERNAL_ERROR;
    };
    let drv = rt.backend().driver();
    // TIMEOUT: the caller's timeout, in seconds, converted to a deadline.
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut polls = 0u32;
    loop {
        let mut w = [0u8; 8];
        if drv.copy_from_device(DeviceId(dev), &mut w, DeviceAddr(addr)).is_err() {
            return ACL_ERROR_RT_PARAM_INVALID;
        }
        if u64::from_le_bytes(w) != 0 {
            return match drv.copy_to_device(DeviceId(dev), DeviceAddr(addr), &[0u8; 8]) {
                Ok(()) => 0,
                Err(_) => ACL_ERROR_RT_PARAM_INVALID,
            };
        }
        if Instant::now() >= deadline {
            return ACL_ERROR_RT_WAIT_TIMEOUT;
        }
        polls = polls.saturating_add(1);
        if polls < 64 {
            std::hint::spin_loop();
        } else {
            // TIMEOUT: re-read the word every 200 µs, as the device re-checks value waits.
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// The body of a count-notify wait, run on a device thread.
fn cnt_wait(obj: &CntNotify, mode: u32, value: u32, timeout_ms: u64, clear: bool) -> i32 {
    let holds = |c: u32| match mode {
        0 => c < value,
        1 => c == value,
        2 => c > value,
        3 => c >= value,
        _ => c & value == value,
    };
    // TIMEOUT: the caller's timeout, in seconds, converted to a deadline (0: none).
    let deadline = (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms));
    // Lock order: the count alone.
    let mut c = crate::sync::relock(&obj.count);
    while !holds(*c) {
        c = match deadline {
            None => obj.changed.wait(c).unwrap_or_else(std::sync::PoisonError::into_inner),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return ACL_ERROR_RT_WAIT_TIMEOUT;
                }
                obj.changed.wait_timeout(c, d - now).unwrap_or_else(std::sync::PoisonError::into_inner).0
            }
        };
    }
    if clear {
        *c = 0;
        obj.changed.notify_all();
    }
    0
}

/// One host function handed to a host-function thread, and its completion flag.
#[derive(Debug)]
struct Job {
    call: HostCall,
    done: Arc<(Mutex<bool>, Condvar)>,
}

/// The host functions waiting for one thread's `aclrtProcessHostFunc`.
#[derive(Debug, Default)]
struct HostFuncQueue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

/// The queues of every thread that processes (or is subscribed to process) host functions.
static HOST_FUNC_QUEUES: Mutex<Option<HashMap<u64, Arc<HostFuncQueue>>>> = Mutex::new(None);

fn queue_of(thread: u64) -> Arc<HostFuncQueue> {
    // Lock order: HOST_FUNC_QUEUES (alone). An insert: all or nothing.
    let mut m = crate::sync::relock(&HOST_FUNC_QUEUES);
    Arc::clone(m.get_or_insert_with(HashMap::new).entry(thread).or_default())
}

fn deliver_host_func(thread: u64, call: HostCall) -> i32 {
    let q = queue_of(thread);
    let done = Arc::new((Mutex::new(false), Condvar::new()));
    // Lock order: the thread's queue alone. A push: all or nothing.
    crate::sync::relock(&q.jobs).push_back(Job { call, done: Arc::clone(&done) });
    q.ready.notify_all();
    let (m, cv) = &*done;
    // Relock: the flag is a bool its one writer sets in a single store.
    let mut finished = crate::sync::relock(m);
    while !*finished {
        finished = cv.wait(finished).unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    0
}

/// The calling thread's id as `aclrtSubscribeHostFunc` takes it (`pthread_self`).
pub(crate) fn this_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions and always succeeds.
    let t = unsafe { libc::pthread_self() };
    // CAST: pthread_t is an integer id on Linux.
    t as u64
}

impl Runtime {
    /// Submits internal operation `op` to stream `s` as a host-function task.
    fn submit_internal(&self, api: &str, s: &StreamObj, op: InternalOp) -> Result<()> {
        if self.backend().driver().loader().is_none() {
            return Err(crate::state::stream::no_loader(api));
        }
        let data = Box::into_raw(Box::new(op));
        // CAST: the function and its boxed argument as the addresses a task carries.
        let call = hal::HostCall { func: internal_op_addr(), data: data as usize as u64, report: None };
        match self.submit_task(api, s, TaskDesc::HostFunc { call }) {
            Ok(_) => Ok(()),
            Err(e) => {
                // SAFETY: the task was not queued, so this is the only owner of the box.
                drop(unsafe { Box::from_raw(data) });
                Err(e)
            }
        }
    }

    /// Submits a count-notify operation (see [`InternalOp::CntRecord`], [`InternalOp::CntWait`]).
    pub(crate) fn submit_cnt_op(&self, api: &str, s: &StreamObj, op: InternalOp) -> Result<()> {
        self.submit_internal(api, s, op)
    }

    /// Submits a notify wait with a timeout (see [`InternalOp::NotifyWait`]).
    pub(crate) fn submit_notify_wait(
        &self,
        api: &str,
        s: &StreamObj,
        addr: u64,
        timeout_ms: u64,
    ) -> Result<()> {
        self.submit_internal(api, s, InternalOp::NotifyWait { dev: s.device, addr, timeout_ms })
    }

    /// `aclrtLaunchHostFunc` on a stream with a host-function thread: the call goes to that
    /// thread's `aclrtProcessHostFunc`; `None` when the stream has none (the device thread
    /// calls it).
    pub(crate) fn route_host_func(&self, api: &str, s: &StreamObj, call: HostCall) -> Option<Result<()>> {
        let thread = s.ext.host_func_thread();
        if thread == 0 || call.report.is_some() {
            return None;
        }
        Some(self.submit_internal(api, s, InternalOp::HostFunc { thread, call }))
    }

    /// Fails with 107023 while stream `s` is being aborted.
    pub(crate) fn check_not_aborting(api: &str, s: &StreamObj) -> Result<()> {
        if s.ext.aborting() {
            return Err(aborted(api));
        }
        Ok(())
    }

    /// `aclrtStreamStop`: the stream must be named (not NULL) and be the current device's.
    ///
    /// The software NPU cannot pre-empt a task that is running; its tasks are short host
    /// work, so stopping is complete once the call returns and queued tasks stay queued, as
    /// CANN documents.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for NULL; `ACL_ERROR_RT_STREAM_CONTEXT` for another
    /// device's stream; `ACL_ERROR_RT_INVALID_HANDLE` for a dead one.
    pub fn stream_stop(&self, api: &str, handle: u64) -> Result<()> {
        if handle == 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: stream is NULL (the default stream cannot be stopped)"
            )));
        }
        let s = self.submit_stream(api, handle)?;
        Self::check_not_aborting(api, &s)
    }

    /// `aclrtStreamAbort`: drops every queued task of the stream (NULL: the default stream),
    /// waits for the one running, clears the stream's failures and leaves it usable. From the
    /// drop until it returns, submissions and synchronisations of the stream fail with 107023.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_CONTEXT` for another device's stream;
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` when the backend cannot drop queued tasks.
    pub fn stream_abort(&self, api: &str, handle: u64) -> Result<()> {
        let s = self.submit_stream(api, handle)?;
        if !s.ext.begin_abort() {
            // Another thread aborts it: that abort's outcome is this one's.
            return Ok(());
        }
        let drv = self.backend().driver();
        let dev = DeviceId(s.device);
        let r = drv
            .abort_queue(dev, s.queue, hal::AbortHead::Cancel)
            .map_err(|e| AclError::from_hal(e, api))
            .and_then(|_| {
                // Seen by others only now: whoever sees 107023 knows the tasks queued before
                // the abort will not start (a task that started before the drop still runs).
                s.ext.publish_abort();
                let last = drv.progress(dev, s.queue).map_err(|e| AclError::from_hal(e, api))?.submitted;
                drv.wait(dev, s.queue, last, None).map_err(|e| AclError::from_hal(e, api))?;
                // The dropped tasks' failures belong to the abort, not to the next sync.
                let _ = drv.take_error(dev, s.queue);
                Ok(())
            });
        s.ext.end_abort();
        r
    }

    /// `aclrtStreamWaitEventWithTimeout` / `aclrtStreamWaitEventWithFlag(DEFAULT)`: as
    /// `aclrtStreamWaitEvent`, and when the event's record has not finished `timeout_s`
    /// seconds after the wait started, the stream's next synchronisation fails with
    /// `ACL_ERROR_RT_WAIT_TIMEOUT` (0: no timeout).
    ///
    /// # Errors
    ///
    /// As `aclrtStreamWaitEvent`.
    pub fn stream_wait_event_timeout(
        &self,
        api: &str,
        stream: u64,
        event: u64,
        timeout_s: u32,
    ) -> Result<()> {
        if timeout_s == 0 {
            return self.stream_wait_event(api, stream, event);
        }
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        same_device(api, &e, &s)?;
        if e.flags & event_flag::IPC != 0 {
            return self.stream_wait_event(api, stream, event);
        }
        if e.flags & (event_flag::SYNC | event_flag::EXTERNAL) == 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: the event was created without ACL_EVENT_SYNC (flags {:#x}), so streams cannot wait on it",
                e.flags
            )));
        }
        Self::check_not_aborting(api, &s)?;
        let drv = self.backend().driver();
        let info = drv.event_info(DeviceId(e.device), e.hw).map_err(|er| AclError::from_hal(er, api))?;
        let Some((queue, seq)) = info.point else { return Ok(()) };
        if info.is_complete {
            return Ok(());
        }
        let timeout_ms = timeout_s.saturating_mul(1000);
        self.submit_internal(api, &s, InternalOp::WaitPoint { dev: s.device, queue, seq, timeout_ms })
    }

    /// `aclrtStreamWaitEventWithFlag`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a flag other than DEFAULT (0) / EXTERNAL (1) or EXTERNAL
    /// with a timeout; `ACL_ERROR_RT_STREAM_NOT_CAPTURED` for EXTERNAL (aclrs captures no
    /// stream).
    pub fn stream_wait_event_flag(
        &self,
        api: &str,
        stream: u64,
        event: u64,
        timeout_s: u32,
        flag: u32,
    ) -> Result<()> {
        match flag {
            0 => self.stream_wait_event_timeout(api, stream, event, timeout_s),
            1 if timeout_s != 0 => Err(AclError::invalid(format!(
                "{api}: ACL_EVENT_WAIT_EXTERNAL takes timeout 0, not {timeout_s}"
            ))),
            1 => {
                let _ = self.event(api, event)?;
                let _ = self.stream(api, stream)?;
                Err(AclError::new(
                    ACL_ERROR_RT_STREAM_NOT_CAPTURED,
                    format!("{api}: ACL_EVENT_WAIT_EXTERNAL needs a capturing stream, and aclrs captures no stream"),
                ))
            }
            f => Err(AclError::invalid(format!(
                "{api}: flag {f} must be ACL_EVENT_WAIT_DEFAULT (0) or ACL_EVENT_WAIT_EXTERNAL (1)"
            ))),
        }
    }

    /// `aclrtSetStreamAttribute`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an attribute outside 1..5 or a NULL stream with
    /// PRIORITY; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for stop → continue or FAILURE_MODE on a
    /// device-use-only stream.
    pub fn set_stream_attr(&self, api: &str, stream: u64, which: u32, value: AttrValue) -> Result<()> {
        if !(attr::FAILURE_MODE..=attr::PRIORITY).contains(&which) {
            return Err(bad_attr(api, which));
        }
        if which == attr::PRIORITY && stream == 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: ACL_STREAM_ATTR_PRIORITY needs a stream, not NULL"
            )));
        }
        let (h, s) = self.stream(api, stream)?;
        match (which, value) {
            (attr::FAILURE_MODE, AttrValue::Mode(m)) => {
                use crate::state::stream::stream_flag;
                if s.flags & stream_flag::DEVICE_USE_ONLY != 0 {
                    return Err(AclError::new(
                        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        format!(
                            "{api}: stream {h:#x} is ACL_STREAM_DEVICE_USE_ONLY; its failure mode is fixed"
                        ),
                    ));
                }
                let mode = m & 1;
                if s.ext.failure_mode() & 1 == 1 && mode == 0 {
                    return Err(AclError::new(
                        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        format!(
                            "{api}: stream {h:#x} is in ACL_STOP_ON_FAILURE; it cannot go back to continue"
                        ),
                    ));
                }
                self.set_failure_mode(api, h, mode)?;
                s.ext.set_failure_mode(mode);
                Ok(())
            }
            (attr::PRIORITY, AttrValue::Word(p)) => {
                use crate::state::stream::stream_flag;
                if s.flags & (stream_flag::CPU_SCHEDULE | stream_flag::DEVICE_USE_ONLY) != 0 {
                    return Err(AclError::new(
                        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        format!(
                            "{api}: stream {h:#x} has reserved flags {:#x}; its priority is fixed",
                            s.flags
                        ),
                    ));
                }
                s.ext.set_priority(p);
                Ok(())
            }
            (w, AttrValue::Word(v)) => {
                s.ext.set_attr_u32(w, v);
                Ok(())
            }
            (w, AttrValue::Mode(v)) => {
                // CAST: the union's 32-bit members are its low word (little endian).
                s.ext.set_attr_u32(w, v as u32);
                Ok(())
            }
        }
    }

    /// `aclrtGetStreamAttribute`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an attribute outside 1..5.
    pub fn get_stream_attr(&self, api: &str, stream: u64, which: u32) -> Result<AttrValue> {
        if !(attr::FAILURE_MODE..=attr::PRIORITY).contains(&which) {
            return Err(bad_attr(api, which));
        }
        let (_, s) = self.stream(api, stream)?;
        if which == attr::FAILURE_MODE {
            return Ok(AttrValue::Mode(s.ext.failure_mode()));
        }
        Ok(AttrValue::Word(s.ext.attr_u32(which).unwrap_or(0)))
    }

    /// `aclrtStreamGetId`, `aclrtStreamGetFlags`, `aclrtStreamGetPriority` (NULL: the default
    /// stream): the device-wide id, the creation flags, the priority.
    ///
    /// # Errors
    ///
    /// Dead handles; no current device for NULL.
    pub fn stream_facts(&self, api: &str, stream: u64) -> Result<(i32, u32, u32)> {
        let (_, s) = self.stream(api, stream)?;
        let id = i32::try_from(s.queue.0).unwrap_or(i32::MAX);
        Ok((id, s.flags, s.ext.priority()))
    }

    /// `aclrtGetStreamAvailableNum`: streams the current device can still create.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device.
    pub fn streams_available(&self, api: &str) -> Result<u32> {
        let d = self.current_device(api)?;
        let ds = self.streams_of(d);
        // The default stream counts once it exists.
        let _ = ds.default_stream(api, self.backend().driver())?;
        Ok(ds.stream_room())
    }

    /// `aclrtCreateStreamWithConfig` / `aclrtCreateStreamV2`: a stream with `flags` and
    /// `priority` (clamped into [0, 7]).
    ///
    /// # Errors
    ///
    /// As [`Runtime::create_stream`].
    pub fn create_stream_with(&self, api: &str, flags: u32, priority: u32) -> Result<u64> {
        let h = self.create_stream(api, flags)?;
        if let Ok((_, s)) = self.stream(api, h) {
            s.ext.set_priority(priority.min(LEAST_PRIORITY));
        }
        Ok(h)
    }

    /// `aclrtRegStreamStateCallback(name, callback, args)`: `None` unregisters.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `name` is registered already.
    pub fn reg_stream_state_callback(
        api: &str,
        name: &[u8],
        cb: Option<(unsafe extern "C" fn(*mut c_void, i32, *mut c_void), usize)>,
    ) -> Result<()> {
        if ctl::register_callback(name, cb) {
            return Ok(());
        }
        Err(AclError::rt_invalid(format!(
            "{api}: a callback named {:?} is registered already (unregister it with a NULL callback first)",
            String::from_utf8_lossy(name)
        )))
    }

    /// `aclrtSubscribeHostFunc(thread, stream)`: the stream's host functions go to `thread`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a NULL stream; `ACL_ERROR_RT_STREAM_SUBSCRIBE` when the
    /// stream has a host-function thread already.
    pub fn subscribe_host_func(&self, api: &str, thread: u64, stream: u64) -> Result<()> {
        if stream == 0 {
            return Err(AclError::rt_invalid(format!("{api}: exeStream is NULL")));
        }
        let (h, s) = self.stream(api, stream)?;
        s.ext.claim_host_func(thread).map_err(|holder| {
            AclError::new(
                ACL_ERROR_RT_STREAM_SUBSCRIBE,
                format!("{api}: stream {h:#x} already has host-function thread {holder}"),
            )
        })?;
        let _ = queue_of(thread);
        Ok(())
    }

    /// `aclrtUnSubscribeHostFunc(thread, stream)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a NULL stream; `ACL_ERROR_RT_STREAM_SUBSCRIBE` when
    /// `thread` is not the stream's host-function thread.
    pub fn unsubscribe_host_func(&self, api: &str, thread: u64, stream: u64) -> Result<()> {
        if stream == 0 {
            return Err(AclError::rt_invalid(format!("{api}: exeStream is NULL")));
        }
        let (h, s) = self.stream(api, stream)?;
        if !s.ext.release_host_func(thread) {
            return Err(AclError::new(
                ACL_ERROR_RT_STREAM_SUBSCRIBE,
                format!("{api}: thread {thread} is not the host-function thread of stream {h:#x}"),
            ));
        }
        Ok(())
    }
}

/// `aclrtProcessHostFunc(timeout)`: runs the next host function handed to the calling thread,
/// waiting at most `timeout` ms (-1: forever).
///
/// # Errors
///
/// `ACL_ERROR_RT_PARAM_INVALID` for 0 or below -1; `ACL_ERROR_RT_REPORT_TIMEOUT` when none
/// arrives in time.
pub fn process_host_func(api: &str, timeout: i32) -> Result<()> {
    if timeout == 0 || timeout < -1 {
        return Err(AclError::rt_invalid(format!(
            "{api}: timeout {timeout} must be -1 (forever) or > 0 milliseconds"
        )));
    }
    let thread = this_thread();
    let q = queue_of(thread);
    // TIMEOUT: bounded by the caller's timeout, or forever for -1.
    let deadline = u64::try_from(timeout).ok().map(|ms| Instant::now() + Duration::from_millis(ms));
    // Lock order: the thread's queue alone.
    let mut g = crate::sync::relock(&q.jobs);
    let job = loop {
        if let Some(j) = g.pop_front() {
            break j;
        }
        g = match deadline {
            None => q.ready.wait(g).unwrap_or_else(std::sync::PoisonError::into_inner),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Err(AclError::new(
                        ACL_ERROR_RT_REPORT_TIMEOUT,
                        format!(
                            "{api}: no host function arrived for this thread ({thread}) within {timeout} ms"
                        ),
                    ));
                }
                q.ready.wait_timeout(g, d - now).unwrap_or_else(std::sync::PoisonError::into_inner).0
            }
        };
    };
    drop(g);
    // SAFETY: `func` and `data` were given by the C caller of aclrtLaunchHostFunc, whose
    // contract is that `func(data)` may be called once, on a runtime thread, when the stream
    // reaches it; the stream's host-function thread is such a thread.
    unsafe { (job.call.func)(job.call.data as *mut c_void) };
    let (m, cv) = &*job.done;
    *crate::sync::relock(m) = true;
    cv.notify_all();
    Ok(())
}

fn bad_attr(api: &str, which: u32) -> AclError {
    AclError::rt_invalid(format!("{api}: stmAttrType {which} is not an aclrtStreamAttr (1 to 5)"))
}

/// The error of a stream being aborted.
pub(crate) fn aborted(api: &str) -> AclError {
    AclError::new(
        ACL_ERROR_RT_STREAM_ABORT,
        format!("{api}: the stream is being aborted (aclrtStreamAbort); its tasks were dropped"),
    )
}
