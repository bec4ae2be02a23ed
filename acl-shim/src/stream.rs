//! Streams, events, contexts, host calls and report subscriptions: the runtime's side of the
//! stream API, over the backend's task queues.
//!
//! Safe Rust. Handles given to C are opaque numbers (a tag in the top bits and a counter that
//! never repeats), looked up in the tables of this module; a handle that was destroyed, belongs
//! to an earlier `aclInit`, or was never made fails the lookup with a code and a message, never
//! undefined behaviour. The C edge ([`crate::ffi::stream`]) turns pointers into these numbers and
//! calls the host functions.
//!
//! # Locking
//!
//! One mutex guards the tables of live handles; it is never held while waiting on a device or
//! while calling into the backend's queues, except for the short, non-blocking submit calls. A
//! report queue has its own mutex. Order: tables, then a report queue.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use hal::{DeviceId, EventId, QueueId, TaskDesc, TaskStatus};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::idmap::IdMap;
use crate::runtime::Runtime;

/// `ACL_ERROR_RT_STREAM_CONTEXT`: the stream or event belongs to another device or context.
pub const ACL_ERROR_RT_STREAM_CONTEXT: i32 = 107_003;
/// `ACL_ERROR_RT_THREAD_SUBSCRIBE`: the thread is not subscribed (or cannot be).
pub const ACL_ERROR_RT_THREAD_SUBSCRIBE: i32 = 107_012;
/// `ACL_ERROR_RT_STREAM_NO_CB_REG`: no callback thread is subscribed to the stream.
pub const ACL_ERROR_RT_STREAM_NO_CB_REG: i32 = 107_015;
/// `ACL_ERROR_RT_REPORT_TIMEOUT`: `aclrtProcessReport` found no callback in time.
pub const ACL_ERROR_RT_REPORT_TIMEOUT: i32 = 507_012;
/// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT`: a stream or device synchronisation timed out.
pub const ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: i32 = 507_046;
/// `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT`: an event synchronisation timed out.
pub const ACL_ERROR_RT_EVENT_SYNC_TIMEOUT: i32 = 507_047;
/// `ACL_ERROR_REPEAT_SUBSCRIBE`: the stream already has a callback thread.
pub const ACL_ERROR_REPEAT_SUBSCRIBE: i32 = 100_033;

/// Unfinished tasks one stream's ring holds before submission waits (back-pressure).
pub const STREAM_DEPTH: u32 = 1024;
/// The most streams of one device, the default stream included (A2/A3/950).
pub const MAX_STREAMS: usize = 1984;
/// The most events of one device (A2/A3/950), as the device's scheduler holds them.
pub const MAX_EVENTS: usize = 65_536;
/// `ACL_ERROR_RT_NO_EVENT_RESOURCE`: the device has no event left.
pub const ACL_ERROR_RT_NO_EVENT_RESOURCE: i32 = 207_007;
/// `ACL_ERROR_RT_NO_STREAM_RESOURCE`: the device has no stream left.
pub const ACL_ERROR_RT_NO_STREAM_RESOURCE: i32 = 207_008;

/// Handle tags (top 16 bits of a handle).
const TAG_STREAM: u64 = 0xac51 << 48;
const TAG_EVENT: u64 = 0xac5e << 48;
const TAG_CONTEXT: u64 = 0xac5c << 48;
const TAG_MASK: u64 = 0xffff << 48;

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

fn new_handle(tag: u64) -> u64 {
    tag | (NEXT_HANDLE.fetch_add(1, Ordering::Relaxed) & !TAG_MASK)
}

/// `aclrtCreateStreamWithConfig` flags this runtime accepts.
pub mod stream_flag {
    /// `ACL_STREAM_FAST_LAUNCH`.
    pub const FAST_LAUNCH: u32 = 0x1;
    /// `ACL_STREAM_FAST_SYNC`.
    pub const FAST_SYNC: u32 = 0x2;
    /// `ACL_STREAM_PERSISTENT`.
    pub const PERSISTENT: u32 = 0x4;
    /// `ACL_STREAM_HUGE`.
    pub const HUGE: u32 = 0x8;
    /// `ACL_STREAM_CPU_SCHEDULE`.
    pub const CPU_SCHEDULE: u32 = 0x10;
    /// `ACL_STREAM_DEVICE_USE_ONLY`.
    pub const DEVICE_USE_ONLY: u32 = 0x20;
    /// Every flag.
    pub const ALL: u32 = 0x3f;
}

/// Event flags.
pub mod event_flag {
    /// `ACL_EVENT_SYNC`.
    pub const SYNC: u32 = 0x1;
    /// `ACL_EVENT_CAPTURE_STREAM_PROGRESS`.
    pub const CAPTURE_STREAM_PROGRESS: u32 = 0x2;
    /// `ACL_EVENT_TIME_LINE`.
    pub const TIME_LINE: u32 = 0x8;
    /// `ACL_EVENT_DEVICE_USE_ONLY`.
    pub const DEVICE_USE_ONLY: u32 = 0x10;
    /// `ACL_EVENT_EXTERNAL`.
    pub const EXTERNAL: u32 = 0x20;
    /// `ACL_EVENT_IPC`.
    pub const IPC: u32 = 0x40;
    /// Every flag.
    pub const ALL: u32 = 0x7b;
}

/// One live stream.
#[derive(Debug)]
pub(crate) struct StreamObj {
    pub(crate) device: u32,
    pub(crate) queue: QueueId,
    pub(crate) flags: u32,
    pub(crate) is_default: bool,
}

/// One live event.
#[derive(Debug)]
pub(crate) struct EventObj {
    pub(crate) device: u32,
    pub(crate) hw: EventId,
    pub(crate) flags: u32,
    /// Made by `aclrtCreateEventExWithFlag` (complete before the first record).
    pub(crate) ex: bool,
}

/// A host function or callback waiting for its turn in a stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostCall {
    /// The C function.
    pub(crate) func: unsafe extern "C" fn(*mut c_void),
    /// Its argument, as an address.
    pub(crate) data: usize,
    /// `Some((thread, block))` for an `aclrtLaunchCallback` delivered to a subscribed thread.
    pub(crate) report: Option<(u64, bool)>,
}

/// A callback handed to a subscribed thread, and its completion flag.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) call: HostCall,
    pub(crate) done: Arc<(Mutex<bool>, Condvar)>,
}

/// The callbacks waiting for one subscribed thread.
#[derive(Debug, Default)]
pub(crate) struct ReportQueue {
    pub(crate) queue: Mutex<VecDeque<Report>>,
    pub(crate) ready: Condvar,
}

/// Every table of live handles.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    /// The `aclInit` generation the tables belong to.
    generation: u64,
    streams: IdMap<u64, Arc<StreamObj>>,
    defaults: IdMap<u32, u64>,
    events: IdMap<u64, Arc<EventObj>>,
    contexts: IdMap<u64, u32>,
    /// Pending host calls by ticket.
    calls: IdMap<u64, HostCall>,
    next_call: u64,
    /// Subscribed threads by thread id, and the streams each serves.
    subscribers: IdMap<u64, (u32, Arc<ReportQueue>)>,
    /// The subscribed thread of each stream handle.
    stream_subscriber: IdMap<u64, u64>,
}

fn tables() -> MutexGuard<'static, Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Tables::default())).lock().unwrap_or_else(|p| p.into_inner())
}

/// The tables for runtime `rt`, emptied first if they belong to an earlier `aclInit`.
fn tables_for(rt: &Runtime) -> MutexGuard<'static, Tables> {
    let mut t = tables();
    if t.generation != rt.generation {
        *t = Tables { generation: rt.generation, next_call: 1, ..Tables::default() };
    }
    t
}

fn bad_handle(api: &str, what: &str, h: u64) -> AclError {
    AclError::new(
        ACL_ERROR_RT_INVALID_HANDLE,
        format!("{api}: {what} {h:#x} is not a live {what} of this process (destroyed, or never created)"),
    )
}

fn hal_err(api: &str, e: hal::Error) -> AclError {
    AclError::from_hal(e, api)
}

/// How a synchronisation waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// Forever.
    Forever,
    /// At most this many milliseconds (0: only check).
    Millis(u32),
}

impl Timeout {
    /// Parses an API `timeout` (-1 forever, ≥ 0 milliseconds).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for values below -1.
    pub fn from_api(api: &str, timeout: i32) -> Result<Self> {
        match timeout {
            -1 => Ok(Self::Forever),
            // CAST: non-negative, checked by the guard.
            t if t >= 0 => Ok(Self::Millis(t as u32)),
            t => Err(AclError::invalid(format!(
                "{api}: timeout {t} must be -1 (forever) or >= 0 milliseconds"
            ))),
        }
    }

    fn as_option(self) -> Option<u32> {
        match self {
            Self::Forever => None,
            Self::Millis(ms) => Some(ms),
        }
    }
}

impl Runtime {
    fn sim_driver(&self) -> &dyn hal::Driver {
        self.backend().driver()
    }

    /// The default stream of device `d`, created on first use (it stands for the stream
    /// `aclrtSetDevice` makes; it goes away with the device's reset).
    fn default_stream(&self, api: &str, d: u32) -> Result<(u64, Arc<StreamObj>)> {
        let mut t = tables_for(self);
        if let Some(&h) = t.defaults.get(&d) {
            if let Some(s) = t.streams.get(&h) {
                return Ok((h, Arc::clone(s)));
            }
        }
        let queue = self.sim_driver().create_queue(DeviceId(d), STREAM_DEPTH).map_err(|e| hal_err(api, e))?;
        let h = new_handle(TAG_STREAM);
        let s = Arc::new(StreamObj { device: d, queue, flags: 0, is_default: true });
        t.streams.insert(h, Arc::clone(&s));
        t.defaults.insert(d, h);
        Ok((h, s))
    }

    /// Resolves a stream handle (0: the current device's default stream).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device; `ACL_ERROR_RT_INVALID_HANDLE`
    /// for a handle that is not live.
    pub(crate) fn stream(&self, api: &str, handle: u64) -> Result<(u64, Arc<StreamObj>)> {
        if handle == 0 {
            let d = self.current_device(api)?;
            return self.default_stream(api, d);
        }
        let t = tables_for(self);
        t.streams
            .get(&handle)
            .map(|s| (handle, Arc::clone(s)))
            .ok_or_else(|| bad_handle(api, "stream", handle))
    }

    /// Resolves a stream that work is submitted to: it must belong to the current device.
    pub(crate) fn submit_stream(&self, api: &str, handle: u64) -> Result<Arc<StreamObj>> {
        let d = self.current_device(api)?;
        let (_, s) = self.stream(api, handle)?;
        if s.device != d {
            return Err(AclError::new(
                ACL_ERROR_RT_STREAM_CONTEXT,
                format!(
                    "{api}: stream {handle:#x} belongs to device {}, but the current device is {d}",
                    s.device
                ),
            ));
        }
        Ok(s)
    }

    /// Submits `task` to stream `s`.
    pub(crate) fn submit_task(&self, api: &str, s: &StreamObj, task: TaskDesc) -> Result<u64> {
        self.sim_driver().submit(DeviceId(s.device), s.queue, task).map_err(|e| hal_err(api, e))
    }

    /// Queues a kernel launch: the arguments go to the device's loader as a staged ticket,
    /// then the launch task names it.
    pub(crate) fn launch_kernel(
        &self,
        api: &str,
        s: &StreamObj,
        func: u64,
        blocks: u32,
        args: Vec<u8>,
        timeout_us: u64,
    ) -> Result<u64> {
        let sim = self.backend.loader(api)?;
        let dev = DeviceId(s.device);
        let args = sim.stage_args(dev, args).map_err(|e| hal_err(api, e))?;
        let r = self.submit_task(api, s, TaskDesc::Kernel { func, blocks, args, timeout_us });
        if r.is_err() {
            let _ = sim.unstage(dev, args);
        }
        r
    }

    /// Queues a batch of (destination, source, length) copies as one task, staged like a
    /// kernel's arguments.
    pub(crate) fn submit_batch(
        &self,
        api: &str,
        s: &StreamObj,
        entries: Vec<(u64, u64, u64)>,
    ) -> Result<u64> {
        let sim = self.backend.loader(api)?;
        let dev = DeviceId(s.device);
        let batch = sim.stage_batch(dev, entries).map_err(|e| hal_err(api, e))?;
        let r = self.submit_task(api, s, TaskDesc::CopyBatch { batch });
        if r.is_err() {
            let _ = sim.unstage(dev, batch);
        }
        r
    }

    /// `aclrtCreateStream` / `aclrtCreateStreamWithConfig`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for unknown flags; `ACL_ERROR_RT_CONTEXT_NULL` without a
    /// current device; `ACL_ERROR_RT_NO_STREAM_RESOURCE` when the device has no stream left.
    pub fn create_stream(&self, api: &str, flags: u32) -> Result<u64> {
        if flags & !stream_flag::ALL != 0 {
            return Err(AclError::invalid(format!(
                "{api}: flag {flags:#x} has bits outside ACL_STREAM_* (0x3f)"
            )));
        }
        let d = self.current_device(api)?;
        let _ = self.default_stream(api, d)?;
        let mut t = tables_for(self);
        let count = t.streams.values().filter(|s| s.device == d).count();
        if count >= MAX_STREAMS {
            return Err(AclError::new(
                ACL_ERROR_RT_NO_STREAM_RESOURCE,
                format!("{api}: device {d} already has {MAX_STREAMS} streams (the default stream included)"),
            ));
        }
        let queue = self.sim_driver().create_queue(DeviceId(d), STREAM_DEPTH).map_err(|e| hal_err(api, e))?;
        let h = new_handle(TAG_STREAM);
        t.streams.insert(h, Arc::new(StreamObj { device: d, queue, flags, is_default: false }));
        Ok(h)
    }

    /// `aclrtDestroyStream` (waits for the stream's tasks) / `aclrtDestroyStreamForce` (drops
    /// its queued tasks).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL or the default stream; `ACL_ERROR_RT_INVALID_HANDLE`
    /// for a stream that is not live; `ACL_ERROR_RT_STREAM_CONTEXT` for a stream of another
    /// device.
    pub fn destroy_stream(&self, api: &str, handle: u64, force: bool) -> Result<()> {
        if handle == 0 {
            return Err(AclError::invalid(format!("{api}: stream is NULL")));
        }
        let d = self.current_device(api)?;
        let s = {
            let mut t = tables_for(self);
            let s = t.streams.get(&handle).cloned().ok_or_else(|| bad_handle(api, "stream", handle))?;
            if s.is_default {
                return Err(AclError::invalid(format!(
                    "{api}: stream {handle:#x} is the default stream; it goes away with aclrtResetDevice"
                )));
            }
            if s.device != d {
                return Err(AclError::new(
                    ACL_ERROR_RT_STREAM_CONTEXT,
                    format!(
                        "{api}: stream {handle:#x} belongs to device {}, not the current device {d}",
                        s.device
                    ),
                ));
            }
            // From here on the handle is dead for every other call.
            t.streams.remove(&handle);
            t.stream_subscriber.remove(&handle);
            s
        };
        let drv = self.sim_driver();
        if force {
            let _ = drv.abort_queue(DeviceId(s.device), s.queue);
        }
        drv.destroy_queue(DeviceId(s.device), s.queue).map_err(|e| hal_err(api, e))
    }

    /// Waits for stream `s` to finish what was submitted so far, then reports its first
    /// failure since the last synchronisation.
    fn sync_queue(&self, api: &str, s: &StreamObj, timeout: Timeout, timeout_code: i32) -> Result<()> {
        let drv = self.sim_driver();
        let dev = DeviceId(s.device);
        let last = drv.submitted(dev, s.queue).map_err(|e| hal_err(api, e))?;
        match drv.wait(dev, s.queue, last, timeout.as_option()) {
            Ok(()) => {}
            Err(e) if e.kind() == hal::ErrorKind::Timeout => {
                return Err(AclError::new(
                    timeout_code,
                    format!("{api}: the stream's tasks did not finish within {:?}", timeout),
                ));
            }
            Err(e) => return Err(hal_err(api, e)),
        }
        self.take_stream_error(api, s)
    }

    /// Reports (and clears) the first failure of stream `s` since the last report.
    pub(crate) fn take_stream_error(&self, api: &str, s: &StreamObj) -> Result<()> {
        let (_, status) =
            self.sim_driver().completed(DeviceId(s.device), s.queue).map_err(|e| hal_err(api, e))?;
        let status = Self::take_put_back(s).unwrap_or(status);
        match status {
            TaskStatus::Ok => Ok(()),
            TaskStatus::Fault(code) => Err(AclError::new(
                code,
                format!("{api}: a task of the stream failed on the device with error {code} (a kernel fault or a host function's error)"),
            )),
            TaskStatus::Failed(kind) => {
                let code = match kind {
                    hal::ErrorKind::InvalidHandle => ACL_ERROR_RT_AICORE_EXCEPTION,
                    _ => AclError::from_hal(hal::Error::new(kind, ""), api).code(),
                };
                Err(AclError::new(
                    code,
                    format!("{api}: a task of the stream failed on the device: {}", kind.as_str()),
                ))
            }
        }
    }

    /// `aclrtSynchronizeStream(WithTimeout)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT` on timeout; the code of the first failed task.
    pub fn synchronize_stream(&self, api: &str, handle: u64, timeout: Timeout) -> Result<()> {
        let (_, s) = self.stream(api, handle)?;
        if s.flags & (stream_flag::PERSISTENT | stream_flag::DEVICE_USE_ONLY | stream_flag::CPU_SCHEDULE) != 0
        {
            return Ok(());
        }
        let r = self.sync_queue(api, &s, timeout, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
        // Stream-ordered frees that are now complete, and pool memory above the threshold.
        self.pools_on_sync(s.device);
        r
    }

    /// Synchronises a stream before a synchronous copy that replaces an asynchronous one.
    pub(crate) fn sync_stream_obj(&self, api: &str, s: &StreamObj) -> Result<()> {
        self.sync_queue(api, s, Timeout::Forever, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT)
    }

    /// `aclrtSynchronizeDevice(WithTimeout)`: every stream of the current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT` on timeout; the first failure of any stream.
    pub fn synchronize_device(&self, api: &str, timeout: Timeout) -> Result<()> {
        let d = self.current_device(api)?;
        let streams: Vec<Arc<StreamObj>> =
            tables_for(self).streams.values().filter(|s| s.device == d).cloned().collect();
        let start = Instant::now();
        let mut first: Option<AclError> = None;
        for s in streams {
            let left = match timeout {
                Timeout::Forever => Timeout::Forever,
                Timeout::Millis(ms) => {
                    // CAST: elapsed milliseconds of a bounded wait fit in u32.
                    Timeout::Millis(ms.saturating_sub(start.elapsed().as_millis() as u32))
                }
            };
            if let Err(e) = self.sync_queue(api, &s, left, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
                if e.code() == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT {
                    return Err(e);
                }
                first.get_or_insert(e);
            }
        }
        self.pools_on_sync(d);
        self.trim_spares(d);
        first.map_or(Ok(()), Err)
    }

    /// `aclrtStreamQuery`: whether every task submitted so far has finished.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a stream that is not live.
    pub fn stream_is_complete(&self, api: &str, handle: u64) -> Result<bool> {
        let (_, s) = self.stream(api, handle)?;
        let drv = self.sim_driver();
        let dev = DeviceId(s.device);
        let submitted = drv.submitted(dev, s.queue).map_err(|e| hal_err(api, e))?;
        let (done, status) = drv.completed(dev, s.queue).map_err(|e| hal_err(api, e))?;
        if status != TaskStatus::Ok {
            // `completed` took the error: keep it for the next synchronisation.
            self.put_back_error(s.device, s.queue, status);
        }
        Ok(done >= submitted)
    }

    fn put_back_error(&self, device: u32, queue: QueueId, status: TaskStatus) {
        PENDING_ERRORS.lock().unwrap_or_else(|p| p.into_inner()).entry((device, queue.0)).or_insert(status);
    }

    /// `aclrtSetStreamFailureMode`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a mode other than 0 or 1.
    pub fn set_failure_mode(&self, api: &str, handle: u64, mode: u64) -> Result<()> {
        let stop = match mode {
            0 => false,
            1 => true,
            m => {
                return Err(AclError::invalid(format!(
                    "{api}: mode {m} is neither ACL_CONTINUE_ON_FAILURE (0) nor ACL_STOP_ON_FAILURE (1)"
                )))
            }
        };
        let (_, s) = self.stream(api, handle)?;
        self.sim_driver().set_stop_on_failure(DeviceId(s.device), s.queue, stop).map_err(|e| hal_err(api, e))
    }

    /// `aclrtCreateEvent(WithFlag)` / `aclrtCreateEventExWithFlag`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for unknown flags or EXTERNAL combined with others;
    /// `ACL_ERROR_RT_NO_EVENT_RESOURCE` when the device has no event left.
    pub fn create_event(&self, api: &str, flags: u32, ex: bool) -> Result<u64> {
        if flags & !event_flag::ALL != 0 {
            return Err(AclError::invalid(format!("{api}: flag {flags:#x} has bits outside ACL_EVENT_*")));
        }
        if flags & event_flag::EXTERNAL != 0 && flags != event_flag::EXTERNAL {
            return Err(AclError::invalid(format!(
                "{api}: ACL_EVENT_EXTERNAL must stand alone (flag {flags:#x})"
            )));
        }
        let d = self.current_device(api)?;
        let hw = self.sim_driver().create_event(DeviceId(d)).map_err(|e| {
            if e.kind() == hal::ErrorKind::OutOfMemory {
                // The device's events are used up (65536 on 950/A3/A2): CANN's code for that.
                AclError::new(
                    ACL_ERROR_RT_NO_EVENT_RESOURCE,
                    format!("{api}: device {d} has no event left (at most {MAX_EVENTS} per device)"),
                )
            } else {
                hal_err(api, e)
            }
        })?;
        let h = new_handle(TAG_EVENT);
        tables_for(self).events.insert(h, Arc::new(EventObj { device: d, hw, flags, ex }));
        Ok(h)
    }

    fn event(&self, api: &str, handle: u64) -> Result<Arc<EventObj>> {
        if handle == 0 {
            return Err(AclError::invalid(format!("{api}: event is NULL")));
        }
        tables_for(self).events.get(&handle).cloned().ok_or_else(|| bad_handle(api, "event", handle))
    }

    /// `aclrtDestroyEvent`: never blocks.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL; `ACL_ERROR_RT_INVALID_HANDLE` for a dead event.
    pub fn destroy_event(&self, api: &str, handle: u64) -> Result<()> {
        let e = self.event(api, handle)?;
        tables_for(self).events.remove(&handle);
        let _ = self.sim_driver().destroy_event(DeviceId(e.device), e.hw);
        Ok(())
    }

    fn same_device(api: &str, e: &EventObj, s: &StreamObj) -> Result<()> {
        if e.device != s.device {
            return Err(AclError::new(
                ACL_ERROR_RT_STREAM_CONTEXT,
                format!(
                    "{api}: the event belongs to device {} and the stream to device {}",
                    e.device, s.device
                ),
            ));
        }
        Ok(())
    }

    fn needs_sync_flag(api: &str, e: &EventObj) -> Result<()> {
        if e.flags & (event_flag::SYNC | event_flag::EXTERNAL) == 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: the event was created without ACL_EVENT_SYNC (flags {:#x}), so streams cannot wait on or reset it",
                e.flags
            )));
        }
        Ok(())
    }

    /// `aclrtRecordEvent`.
    ///
    /// # Errors
    ///
    /// Dead handles; an event and stream of different devices.
    pub fn record_event(&self, api: &str, event: u64, stream: u64) -> Result<()> {
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        Self::same_device(api, &e, &s)?;
        self.sim_driver()
            .record_event(DeviceId(s.device), s.queue, e.hw)
            .map(|_| ())
            .map_err(|er| hal_err(api, er))
    }

    /// `aclrtStreamWaitEvent`.
    ///
    /// # Errors
    ///
    /// Dead handles; an event and stream of different devices.
    pub fn stream_wait_event(&self, api: &str, stream: u64, event: u64) -> Result<()> {
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        Self::same_device(api, &e, &s)?;
        Self::needs_sync_flag(api, &e)?;
        self.sim_driver().wait_event(DeviceId(s.device), s.queue, e.hw).map_err(|er| hal_err(api, er))
    }

    /// `aclrtResetEvent`.
    ///
    /// # Errors
    ///
    /// Dead handles; an event and stream of different devices.
    pub fn reset_event(&self, api: &str, event: u64, stream: u64) -> Result<()> {
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        Self::same_device(api, &e, &s)?;
        Self::needs_sync_flag(api, &e)?;
        self.sim_driver().reset_event(DeviceId(s.device), s.queue, e.hw).map_err(|er| hal_err(api, er))
    }

    /// Whether the event's captured tasks have all finished (`aclrtQueryEventStatus`): an
    /// event that was never recorded is complete only if made by `aclrtCreateEventExWithFlag`.
    ///
    /// # Errors
    ///
    /// Dead handles.
    pub fn event_is_complete(&self, api: &str, event: u64) -> Result<bool> {
        let e = self.event(api, event)?;
        let info = self.sim_driver().event_info(DeviceId(e.device), e.hw).map_err(|er| hal_err(api, er))?;
        Ok(match info.point {
            None => e.ex,
            Some(_) => info.is_complete,
        })
    }

    /// `aclrtSynchronizeEvent(WithTimeout)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT` on timeout; dead handles.
    pub fn synchronize_event(&self, api: &str, event: u64, timeout: Timeout) -> Result<()> {
        let e = self.event(api, event)?;
        let drv = self.sim_driver();
        let info = drv.event_info(DeviceId(e.device), e.hw).map_err(|er| hal_err(api, er))?;
        let Some((queue, seq)) = info.point else { return Ok(()) };
        match drv.wait(DeviceId(e.device), queue, seq, timeout.as_option()) {
            Ok(()) => {
                self.pools_on_sync(e.device);
                Ok(())
            }
            Err(er) if er.kind() == hal::ErrorKind::Timeout => Err(AclError::new(
                ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                format!("{api}: the event's tasks did not finish within {timeout:?}"),
            )),
            // The recorded stream was destroyed: it finished everything first.
            Err(er) if er.kind() == hal::ErrorKind::InvalidHandle => Ok(()),
            Err(er) => Err(hal_err(api, er)),
        }
    }

    /// The device-clock time (nanoseconds) at which the event's latest record ran.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID`-class codes when the event has not completed a record.
    pub fn event_timestamp_ns(&self, api: &str, event: u64) -> Result<u64> {
        let e = self.event(api, event)?;
        let info = self.sim_driver().event_info(DeviceId(e.device), e.hw).map_err(|er| hal_err(api, er))?;
        info.timestamp_ns.ok_or_else(|| {
            AclError::new(
                ACL_ERROR_RT_PARAM_INVALID,
                format!(
                    "{api}: event {event:#x} has not completed a record (record it and synchronise first)"
                ),
            )
        })
    }

    /// `aclrtEventElapsedTime`: milliseconds from `start` to `end`.
    ///
    /// # Errors
    ///
    /// When either event has not completed a record.
    pub fn elapsed_ms(&self, api: &str, start: u64, end: u64) -> Result<f32> {
        let a = self.event_timestamp_ns(api, start)?;
        let b = self.event_timestamp_ns(api, end)?;
        // CAST: a signed difference of two nanosecond readings, shown as float milliseconds.
        Ok(((b as i128 - a as i128) as f64 / 1e6) as f32)
    }

    /// Registers a host call and returns its ticket.
    pub(crate) fn add_host_call(&self, call: HostCall) -> u64 {
        let mut t = tables_for(self);
        let id = t.next_call.max(1);
        t.next_call = id + 1;
        t.calls.insert(id, call);
        id
    }

    /// `aclrtLaunchHostFunc` / `aclrtLaunchCallback` after the C edge checked the pointers.
    ///
    /// # Errors
    ///
    /// Dead stream; `ACL_ERROR_RT_STREAM_NO_CB_REG` for a callback on a stream without a
    /// subscribed thread.
    pub(crate) fn launch_host_call(&self, api: &str, stream: u64, mut call: HostCall) -> Result<()> {
        let s = self.submit_stream(api, stream)?;
        if let Some((_, block)) = call.report {
            let (h, _) = self.stream(api, stream)?;
            let thread = tables_for(self).stream_subscriber.get(&h).copied().ok_or_else(|| {
                AclError::new(
                    ACL_ERROR_RT_STREAM_NO_CB_REG,
                    format!(
                        "{api}: no thread is subscribed to stream {h:#x}; call aclrtSubscribeReport first"
                    ),
                )
            })?;
            call.report = Some((thread, block));
        }
        // Host calls need the device's loader to reach this process's hook.
        self.backend.loader(api)?;
        let ticket = self.add_host_call(call);
        let r = self.submit_task(api, &s, TaskDesc::HostFunc { call: ticket });
        if r.is_err() {
            tables_for(self).calls.remove(&ticket);
        }
        r.map(|_| ())
    }

    /// Takes the host call of `ticket` (the device is about to run it).
    pub(crate) fn take_host_call(ticket: u64) -> Option<HostCall> {
        tables().calls.remove(&ticket)
    }

    /// Queues `report` for subscribed thread `thread` and wakes it; the report back when the
    /// thread is not subscribed. Done under the tables' lock, so an unsubscribe either sees the
    /// report (and keeps the thread's queue until it is processed) or came first.
    pub(crate) fn post_report(thread: u64, report: Report) -> std::result::Result<(), Report> {
        let t = tables();
        let Some((_, q)) = t.subscribers.get(&thread) else { return Err(report) };
        q.queue.lock().unwrap_or_else(|p| p.into_inner()).push_back(report);
        q.ready.notify_all();
        Ok(())
    }

    /// `aclrtSubscribeReport(threadId, stream)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_REPEAT_SUBSCRIBE` when the stream has a thread already;
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread serves another device.
    pub fn subscribe_report(&self, api: &str, thread: u64, stream: u64) -> Result<()> {
        let (h, s) = self.stream(api, stream)?;
        let mut t = tables_for(self);
        if t.stream_subscriber.contains_key(&h) {
            return Err(AclError::new(
                ACL_ERROR_REPEAT_SUBSCRIBE,
                format!("{api}: stream {h:#x} already has a callback thread"),
            ));
        }
        if let Some((dev, _)) = t.subscribers.get(&thread) {
            if *dev != s.device {
                return Err(AclError::new(
                    ACL_ERROR_RT_THREAD_SUBSCRIBE,
                    format!("{api}: thread {thread} already serves device {dev}, not device {}", s.device),
                ));
            }
        } else {
            if t.subscribers.len() >= 1024 {
                return Err(AclError::new(
                    ACL_ERROR_RT_THREAD_SUBSCRIBE,
                    format!("{api}: 1024 threads are subscribed already"),
                ));
            }
            t.subscribers.insert(thread, (s.device, Arc::new(ReportQueue::default())));
        }
        t.stream_subscriber.insert(h, thread);
        Ok(())
    }

    /// `aclrtUnSubscribeReport(threadId, stream)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread does not serve the stream.
    pub fn unsubscribe_report(&self, api: &str, thread: u64, stream: u64) -> Result<()> {
        let (h, _) = self.stream(api, stream)?;
        let mut t = tables_for(self);
        if t.stream_subscriber.get(&h) != Some(&thread) {
            return Err(AclError::new(
                ACL_ERROR_RT_THREAD_SUBSCRIBE,
                format!("{api}: thread {thread} is not subscribed to stream {h:#x}"),
            ));
        }
        t.stream_subscriber.remove(&h);
        Self::retire_idle_subscriber(&mut t, thread);
        Ok(())
    }

    /// Forgets `thread` as a callback thread once it serves no stream and has no callback
    /// left to process: a callback that already reached its queue (a `NO_BLOCK` one can still
    /// be there after the stream synchronised) stays deliverable by `aclrtProcessReport`, and a
    /// `BLOCK` one is never dropped with its stream still waiting on it.
    fn retire_idle_subscriber(t: &mut Tables, thread: u64) {
        if t.stream_subscriber.values().any(|&th| th == thread) {
            return;
        }
        let idle = t
            .subscribers
            .get(&thread)
            .is_some_and(|(_, q)| q.queue.lock().unwrap_or_else(|p| p.into_inner()).is_empty());
        if idle {
            t.subscribers.remove(&thread);
        }
    }

    /// Waits for a callback for `thread` (`aclrtProcessReport`) and returns it.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread is not subscribed;
    /// `ACL_ERROR_RT_REPORT_TIMEOUT` when none arrives in time.
    pub(crate) fn next_report(&self, api: &str, thread: u64, timeout: Timeout) -> Result<Report> {
        let q = {
            let t = tables_for(self);
            t.subscribers.get(&thread).map(|(_, q)| Arc::clone(q))
        }
        .ok_or_else(|| {
            AclError::new(
                ACL_ERROR_RT_THREAD_SUBSCRIBE,
                format!("{api}: this thread ({thread}) is not subscribed to any stream"),
            )
        })?;
        // TIMEOUT: bounded by the caller's timeout, or forever for -1.
        let deadline = timeout.as_option().map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        let mut g = q.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(r) = g.pop_front() {
                drop(g);
                // The last callback of a thread that was unsubscribed meanwhile.
                Self::retire_idle_subscriber(&mut tables_for(self), thread);
                return Ok(r);
            }
            g = match deadline {
                None => q.ready.wait(g).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(AclError::new(
                            ACL_ERROR_RT_REPORT_TIMEOUT,
                            format!("{api}: no callback arrived within {timeout:?}"),
                        ));
                    }
                    q.ready.wait_timeout(g, d - now).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    /// `aclrtCreateContext`: a context on `device_id`, made current.
    ///
    /// # Errors
    ///
    /// As `aclrtSetDevice`.
    pub fn create_context(&self, api: &str, device_id: i32) -> Result<u64> {
        self.set_device(device_id)?;
        // CAST: checked by set_device.
        let d = device_id as u32;
        let h = new_handle(TAG_CONTEXT);
        tables_for(self).contexts.insert(h, d);
        CURRENT_CONTEXT.with(|c| c.set(Some((self.generation, h))));
        let _ = api;
        Ok(h)
    }

    /// The device of context `ctx` (explicit or a device's default context).
    fn context_device(&self, api: &str, ctx: u64) -> Result<u32> {
        if ctx == 0 {
            return Err(AclError::invalid(format!("{api}: context is NULL")));
        }
        if let Some(&d) = tables_for(self).contexts.get(&ctx) {
            return Ok(d);
        }
        if ctx & TAG_MASK == TAG_CONTEXT && ctx & 0x8000_0000_0000 != 0 {
            // CAST: the default-context handle carries the device id in its low bits.
            let d = (ctx & 0xffff) as u32;
            if d < self.device_count() && self.device(d).is_open() {
                return Ok(d);
            }
        }
        Err(bad_handle(api, "context", ctx))
    }

    /// `aclrtDestroyContext`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL or a device's default context;
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a dead context.
    pub fn destroy_context(&self, api: &str, ctx: u64) -> Result<()> {
        let d = self.context_device(api, ctx)?;
        if tables_for(self).contexts.remove(&ctx).is_none() {
            return Err(AclError::invalid(format!(
                "{api}: context {ctx:#x} is a default context; aclrtResetDevice releases it"
            )));
        }
        CURRENT_CONTEXT.with(|c| {
            if c.get().map(|(_, h)| h) == Some(ctx) {
                c.set(None);
            }
        });
        // CAST: device ids are small.
        self.reset_device(d as i32, false)
    }

    /// `aclrtSetCurrentContext`: makes the context's device current on this thread.
    ///
    /// # Errors
    ///
    /// Dead or NULL contexts.
    pub fn set_current_context(&self, api: &str, ctx: u64) -> Result<()> {
        let d = self.context_device(api, ctx)?;
        // Making a device current without changing its reference count: take one more
        // reference (this makes it current) and give it back (the context holds another, so
        // this never releases the device).
        // CAST: device ids are small.
        self.set_device(d as i32)?;
        self.reset_device(d as i32, false)?;
        let generation = self.generation;
        let _ = self.current_device(api)?;
        CURRENT_CONTEXT.with(|c| c.set(Some((generation, ctx))));
        Ok(())
    }

    /// `aclrtGetCurrentContext`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device.
    pub fn current_context(&self, api: &str) -> Result<u64> {
        let d = self.current_device(api)?;
        let generation = self.generation;
        if let Some((g, h)) = CURRENT_CONTEXT.with(std::cell::Cell::get) {
            if g == generation && tables_for(self).contexts.get(&h) == Some(&d) {
                return Ok(h);
            }
        }
        Ok(TAG_CONTEXT | 0x8000_0000_0000 | u64::from(d))
    }

    /// Waits until every task submitted to a stream of device `d` has finished (device reset:
    /// the device's memory may go only after that).
    pub(crate) fn wait_device_idle(&self, d: u32) {
        let streams: Vec<Arc<StreamObj>> =
            tables_for(self).streams.values().filter(|s| s.device == d).cloned().collect();
        let drv = self.sim_driver();
        for s in streams {
            if let Ok(last) = drv.submitted(DeviceId(d), s.queue) {
                let _ = drv.wait(DeviceId(d), s.queue, last, None);
            }
        }
    }

    /// Lets the tasks of device `d` settle before its reset by `api`.
    ///
    /// The forced forms (`aclrtResetDeviceForce`, and `aclFinalize`, which resets every device
    /// that way) first drop every queued task of the device's streams, as
    /// `aclrtDestroyStreamForce` does, so that a task that can never run (an `aclrtValueWait` on
    /// a word nobody writes) cannot hold them; a task already running finishes. The plain reset
    /// waits for every task, as CANN's does; when a stream is still busy after
    /// [`RESET_NOTE_AFTER_MS`] it says on stderr which stream it waits for, then waits on.
    pub(crate) fn settle_device(&self, api: &str, d: u32, force: bool) {
        let streams: Vec<(u64, Arc<StreamObj>)> = tables_for(self)
            .streams
            .iter()
            .filter(|(_, s)| s.device == d)
            .map(|(&h, s)| (h, Arc::clone(s)))
            .collect();
        let drv = self.sim_driver();
        let dev = DeviceId(d);
        for (h, s) in streams {
            // A backend that cannot drop queued tasks (NotSupported) waits like a plain reset.
            let dropped = force && drv.abort_queue(dev, s.queue).is_ok();
            let Ok(last) = drv.submitted(dev, s.queue) else { continue };
            let grace = if dropped { None } else { Some(RESET_NOTE_AFTER_MS) };
            if let Err(e) = drv.wait(dev, s.queue, last, grace) {
                if e.kind() == hal::ErrorKind::Timeout {
                    let done = drv.completed(dev, s.queue).map_or(0, |(seq, _)| seq);
                    note_reset_wait(api, d, h, last, done);
                    let _ = drv.wait(dev, s.queue, last, None);
                }
            }
        }
    }

    /// Forgets every stream, event and subscription of device `d` (its reset or
    /// `aclFinalize`); the device's queues go with the device.
    pub(crate) fn forget_device_handles(&self, d: u32) {
        let mut t = tables_for(self);
        let dead: Vec<u64> = t.streams.iter().filter(|(_, s)| s.device == d).map(|(&h, _)| h).collect();
        for h in &dead {
            t.streams.remove(h);
            t.stream_subscriber.remove(h);
        }
        t.defaults.remove(&d);
        t.events.retain(|_, e| e.device != d);
        t.contexts.retain(|_, &mut dev| dev != d);
        t.subscribers.retain(|_, (dev, _)| *dev != d);
        PENDING_ERRORS.lock().unwrap_or_else(|p| p.into_inner()).retain(|&(dev, _), _| dev != d);
    }
}

/// How long a plain device reset waits for a stream before it says what it is waiting for.
pub(crate) const RESET_NOTE_AFTER_MS: u32 = 1000;

/// The one place a reset reports that it is still waiting (stderr, until the crate has a log
/// facility): which stream, how far its tasks got, and how to stop waiting.
fn note_reset_wait(api: &str, d: u32, stream: u64, last: u64, done: u64) {
    eprintln!(
        "aclrs: {api}({d}) is waiting for stream {stream:#x}: tasks up to #{last} were submitted, #{done} finished; \
         a task that can never finish (such as an aclrtValueWait on a word nothing writes) keeps this reset waiting \
         forever; aclrtResetDeviceForce drops queued tasks instead"
    );
}

/// Errors taken by `aclrtStreamQuery` and kept for the next synchronisation, by (device, queue).
static PENDING_ERRORS: Mutex<std::collections::BTreeMap<(u32, u32), TaskStatus>> =
    Mutex::new(std::collections::BTreeMap::new());

impl Runtime {
    /// The error `aclrtStreamQuery` put aside for stream `s`, if any.
    pub(crate) fn take_put_back(s: &StreamObj) -> Option<TaskStatus> {
        PENDING_ERRORS.lock().unwrap_or_else(|p| p.into_inner()).remove(&(s.device, s.queue.0))
    }
}

thread_local! {
    /// The context this thread made current with `aclrtCreateContext`/`aclrtSetCurrentContext`.
    static CURRENT_CONTEXT: std::cell::Cell<Option<(u64, u64)>> = const { std::cell::Cell::new(None) };
}
