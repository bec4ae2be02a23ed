//! Streams, events, contexts, host calls and report subscriptions of one device: the runtime's
//! side of the stream API over the backend's queues and events, and the device's dependency
//! graph between streams.
//!
//! Safe Rust. This module owns `DeviceStreams`, one per device: the [`HandleTable`]s of its
//! streams, events and contexts, its default stream, its callback subscriptions, and the
//! [`DepGraph`] that answers the pools' stream-order question without asking the device. It
//! takes the backend ([`hal::Driver`]) and the device's state as parameters and never reaches
//! up into the runtime; the runtime's stream calls (`crate::api::stream`) find the device and
//! pass both down.
//!
//! Handles given to C come from [`crate::handles`]: the device is in the handle, so a lookup
//! is a decode, an index into that device's table and a generation check. A handle that was
//! destroyed, belongs to an earlier `aclInit`, or was never made fails the lookup with
//! `ACL_ERROR_RT_INVALID_HANDLE` (107017) and a message, never undefined behaviour.
//!
//! # Limits
//!
//! The most streams and events of a device and the depth of a stream's queue come from the
//! SoC profile ([`hal::SocProfile::max_streams`], [`max_events`](hal::SocProfile::max_events),
//! [`stream_depth`](hal::SocProfile::stream_depth)), read once into `Limits`.
//!
//! # Locking
//!
//! Lock order (a lock is only taken after those left of it, never the reverse):
//! `reports` → a report queue; the table mutexes inside [`HandleTable`] and `graph` are
//! leaves (nothing is taken while they are held). No lock of this module is held while the
//! backend is called: the calls collect under a lock, release it, call the backend, and
//! re-lock to commit.
//!
//! Lock acquisitions of this module on the hot paths (handle lookups take none):
//! - `aclrtLaunchHostFunc`: 0 (a callback, `aclrtLaunchCallback`: 1, `reports`);
//! - `aclrtRecordEvent`: 0 (the record's point travels with the later wait);
//! - `aclrtStreamWaitEvent`: 1 (`graph`, to add the wait's edge).
//!
//! The runtime adds its own for the current device (see `crate::api::stream`); the
//! backend's queue locks are the backend's.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hal::{DeviceAddr, DeviceId, Driver, EventId, QueueId, SocProfile, TaskDesc, TaskStatus};
use sched::{DepGraph, StreamOrder, StreamPoint};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::handles::{Full, Handle, HandleTable, Kind};

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
/// `ACL_ERROR_RT_NO_EVENT_RESOURCE`: the device has no event left.
pub const ACL_ERROR_RT_NO_EVENT_RESOURCE: i32 = 207_007;
/// `ACL_ERROR_RT_NO_STREAM_RESOURCE`: the device has no stream left.
pub const ACL_ERROR_RT_NO_STREAM_RESOURCE: i32 = 207_008;

/// The most threads subscribed for callbacks on one device.
const MAX_SUBSCRIBERS: usize = 1024;

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

/// The stream and event limits of a device, from its SoC profile (written once, in `hal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Streams, the default stream included.
    pub(crate) max_streams: u32,
    /// Events.
    pub(crate) max_events: u32,
    /// Unfinished tasks one stream's queue holds before submission waits.
    pub(crate) depth: u32,
}

impl Limits {
    /// The limits of a device of profile `soc`.
    pub(crate) fn of(soc: SocProfile) -> Self {
        let cap = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self {
            max_streams: cap(soc.max_streams()),
            max_events: cap(soc.max_events()),
            depth: soc.stream_depth(),
        }
    }
}

/// One live stream.
#[derive(Debug)]
pub(crate) struct StreamObj {
    pub(crate) device: u32,
    pub(crate) queue: QueueId,
    pub(crate) flags: u32,
    pub(crate) is_default: bool,
    /// The newest sequence number the backend returned for a task submitted to this stream
    /// through the runtime (kernels, copies, memsets, host calls, event records, and the waits
    /// that carry another stream's order into this one): every such task so far is at or
    /// before it. A stream-ordered free takes its point from here, with no backend call. Only
    /// tasks that neither touch memory nor order this stream after another (an event reset)
    /// may be left out.
    submitted: AtomicU64,
    /// The handle is dead ([`DeviceStreams::detach_stream`]): a submission that resolved it
    /// before and reaches the backend after the queue closed is told the stream is gone.
    detached: AtomicBool,
    /// Priority, attributes, abort state and host-function thread ([`crate::state::stream_ctl`]).
    pub(crate) ext: crate::state::stream_ctl::StreamExt,
    /// The backend's submission port of the queue, where it has one ([`hal::Queues::port`]):
    /// plain tasks go through it without the backend finding the device and the queue again,
    /// and its submitted word stands in for `submitted`.
    port: Option<Arc<dyn hal::QueuePort>>,
    /// The backend runs host calls (it has a loader, [`Driver::loader`]): read once here, so
    /// that a host call asks no `dyn` question of the backend.
    host_calls: bool,
}

impl StreamObj {
    fn new(drv: &dyn Driver, device: u32, queue: QueueId, flags: u32, is_default: bool) -> Self {
        Self {
            device,
            queue,
            flags,
            is_default,
            submitted: AtomicU64::new(0),
            detached: AtomicBool::new(false),
            ext: Default::default(),
            port: drv.port(DeviceId(device), queue),
            host_calls: drv.loader().is_some(),
        }
    }

    /// A stream object of device `device` with no queue behind it (unit tests of what holds
    /// stream objects).
    #[cfg(test)]
    pub(crate) fn detached_for_test(device: u32) -> Self {
        Self {
            device,
            queue: QueueId(0),
            flags: 0,
            is_default: false,
            submitted: AtomicU64::new(0),
            detached: AtomicBool::new(true),
            ext: Default::default(),
            port: None,
            host_calls: false,
        }
    }

    /// Submits `task` to the stream's queue: through its port when it has one and the task
    /// names no staged ticket, else through the backend's [`hal::Queues::submit`].
    #[inline]
    pub(crate) fn submit(&self, drv: &dyn Driver, task: &TaskDesc) -> hal::Result<u64> {
        match &self.port {
            Some(port) if task.ticket().is_none() => port.submit(task),
            _ => drv.submit(DeviceId(self.device), self.queue, *task),
        }
    }

    /// [`Self::submit`] of a host function without a report, its fields as plain words down
    /// to the port ([`hal::QueuePort::submit_host_fn`]).
    #[inline]
    pub(crate) fn submit_host_fn(&self, drv: &dyn Driver, func: u64, data: u64) -> hal::Result<u64> {
        match &self.port {
            Some(port) => port.submit_host_fn(func, data),
            None => {
                self.submit(drv, &TaskDesc::HostFunc { call: hal::HostCall { func, data, report: None } })
            }
        }
    }

    /// [`Self::submit`] of a byte fill, its fields as plain words down to the port
    /// ([`hal::QueuePort::submit_fill`]).
    #[inline]
    pub(crate) fn submit_fill(
        &self,
        drv: &dyn Driver,
        dst: DeviceAddr,
        value: u8,
        len: u64,
    ) -> hal::Result<u64> {
        match &self.port {
            Some(port) => port.submit_fill(dst, value, len),
            None => self.submit(drv, &TaskDesc::Memset { dst, value, len_bytes: len }),
        }
    }

    /// The error of a submission to this stream that the backend refused: a queue that is
    /// gone or closing because the stream was destroyed while the call was submitting (a
    /// race the caller lost: the destroy came first) is an invalid stream handle, as for a
    /// call made after the destroy; anything else maps as usual.
    #[cold]
    #[inline(never)]
    pub(crate) fn submit_error(&self, api: &str, e: hal::Error) -> AclError {
        if e.kind() == hal::ErrorKind::InvalidHandle && self.detached.load(Ordering::Acquire) {
            return AclError::new(
                ACL_ERROR_RT_INVALID_HANDLE,
                format!(
                    "{api}: the stream was destroyed while this call submitted to it; nothing was queued ({e})"
                ),
            );
        }
        AclError::from_hal(e, api)
    }

    /// Notes that the backend numbered a task of this stream `seq` (kept monotonic).
    #[inline]
    pub(crate) fn note_submitted(&self, seq: u64) {
        // With a port, its word already counts every task of the queue (no write here).
        if self.port.is_none() {
            self.submitted.fetch_max(seq, Ordering::AcqRel);
        }
    }

    /// The newest task number [`Self::note_submitted`] saw: the point a stream-ordered free
    /// made now is ordered after.
    pub(crate) fn submitted(&self) -> u64 {
        match &self.port {
            Some(port) => port.submitted(),
            None => self.submitted.load(Ordering::Acquire),
        }
    }
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

/// One context: a device's default context, or one made by `aclrtCreateContext`.
#[derive(Debug)]
pub(crate) struct ContextObj {
    is_default: bool,
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

impl HostCall {
    /// The call as its task carries it (the function as an address).
    pub(crate) fn to_task(self) -> hal::HostCall {
        // CAST: a function pointer as the address the task descriptor carries.
        hal::HostCall { func: self.func as usize as u64, data: self.data as u64, report: self.report }
    }
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

/// The callback subscriptions of one device.
#[derive(Debug, Default)]
struct Reports {
    /// Subscribed threads by thread id, and their queues.
    subscribers: BTreeMap<u64, Arc<ReportQueue>>,
    /// The subscribed thread of each stream handle.
    stream_subscriber: BTreeMap<u64, u64>,
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

/// The error of a handle that is not live.
pub(crate) fn bad_handle(api: &str, what: &str, h: u64) -> AclError {
    AclError::new(
        ACL_ERROR_RT_INVALID_HANDLE,
        format!(
            "{api}: {what} {h:#x} is not a live {what} of this process (destroyed, made before the last aclInit, or never created)"
        ),
    )
}

fn hal_err(api: &str, e: hal::Error) -> AclError {
    AclError::from_hal(e, api)
}

/// The device whose table holds handle `raw` of `kind`, among `all` (indexed by device).
pub(crate) fn owner<T: std::borrow::Borrow<DeviceStreams>>(
    all: &[T],
    raw: u64,
    kind: Kind,
) -> Option<&DeviceStreams> {
    Handle::device_of(raw, kind).and_then(|d| all.get(d as usize)).map(T::borrow)
}

/// The error `aclrtSynchronize*` reports for a failed task's status.
fn status_error(api: &str, status: TaskStatus) -> Result<()> {
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
            Err(AclError::new(code, format!("{api}: a task of the stream failed on the device: {}", kind.as_str())))
        }
    }
}

/// The streams, events, contexts, subscriptions and dependency graph of one device.
#[derive(Debug)]
pub(crate) struct DeviceStreams {
    device: u32,
    limits: Limits,
    streams: HandleTable<Arc<StreamObj>>,
    events: HandleTable<Arc<EventObj>>,
    contexts: HandleTable<ContextObj>,
    /// The handle of the device's default context (lives as long as this table).
    default_context: u64,
    /// The handle of the default stream, 0 before its first use.
    default_stream: AtomicU64,
    /// Lock order: `reports` → a report queue.
    reports: Mutex<Reports>,
    /// The waits between the device's queues and their completed sequences. A leaf lock.
    graph: Mutex<DepGraph>,
}

impl DeviceStreams {
    /// The empty tables of device `device` for the `aclInit` of `generation`.
    pub(crate) fn new(device: u32, generation: u64, limits: Limits) -> Self {
        let contexts = HandleTable::new(Kind::Context, device, generation, 1 + limits.max_streams);
        // An empty table of that capacity has room.
        let default_context = contexts.insert(ContextObj { is_default: true }).unwrap_or(0);
        Self {
            device,
            limits,
            streams: HandleTable::new(Kind::Stream, device, generation, limits.max_streams),
            events: HandleTable::new(Kind::Event, device, generation, limits.max_events),
            contexts,
            default_context,
            default_stream: AtomicU64::new(0),
            reports: Mutex::new(Reports::default()),
            graph: Mutex::new(DepGraph::new()),
        }
    }

    /// The device these tables belong to.
    pub(crate) fn device(&self) -> u32 {
        self.device
    }

    fn reports(&self, api: &str) -> Result<MutexGuard<'_, Reports>> {
        crate::sync::lock(
            &self.reports,
            api,
            &format_args!("the callback subscriptions of device {}", self.device),
        )
    }

    /// The dependency graph, for the pools' stream-order oracle. A leaf lock: the caller calls
    /// nothing that locks while it holds the guard.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INTERNAL_ERROR` when an earlier panic left the graph failed.
    pub(crate) fn graph(&self, api: &str) -> Result<MutexGuard<'_, DepGraph>> {
        crate::sync::lock(&self.graph, api, &format_args!("the stream graph of device {}", self.device))
    }

    /// The graph's mutex, for the pools' oracle ([`LazyGraphOrder`]), which reads it with
    /// [`crate::sync::relock`]: every change to the graph is whole per step (one insert, one
    /// removal, one number raised, one edge dropped), so a panic leaves a graph whose answers
    /// are still sound.
    pub(crate) fn graph_mutex(&self) -> &Mutex<DepGraph> {
        &self.graph
    }

    /// Tells the graph that `queue` completed up to `seq`. A poisoned graph is recovered:
    /// [`DepGraph::note_completed`] only raises a number and drops edges, each step whole.
    fn note_completed(&self, queue: QueueId, seq: u64) {
        crate::sync::relock(&self.graph).note_completed(queue.0, seq);
    }

    fn add_queue(&self, queue: QueueId) {
        // Lock order: graph (a leaf). `add_stream` is one insert: all or nothing.
        crate::sync::relock(&self.graph).add_stream(queue.0);
    }

    fn remove_queue(&self, queue: QueueId) {
        // Lock order: graph (a leaf). One removal: all or nothing.
        crate::sync::relock(&self.graph).remove_stream(queue.0);
    }

    /// Reads `s`'s progress from the backend and tells the graph; `None` when the queue is gone.
    fn refresh(&self, drv: &dyn Driver, s: &StreamObj) -> Option<hal::QueueProgress> {
        let p = drv.progress(DeviceId(self.device), s.queue).ok()?;
        self.note_completed(s.queue, p.completed);
        Some(p)
    }

    /// The default stream, created on first use (it stands for the stream `aclrtSetDevice`
    /// makes; it goes away with the device's reset).
    pub(crate) fn default_stream(&self, api: &str, drv: &dyn Driver) -> Result<(u64, Arc<StreamObj>)> {
        let h = self.default_stream.load(Ordering::Acquire);
        if h != 0 {
            if let Some(s) = self.streams.get(h) {
                return Ok((h, Arc::clone(&**s)));
            }
        }
        // No lock held: make the queue, publish it, and let a thread that lost the race undo
        // its own.
        let queue =
            drv.create_queue(DeviceId(self.device), self.limits.depth).map_err(|e| hal_err(api, e))?;
        let s = Arc::new(StreamObj::new(drv, self.device, queue, 0, true));
        let Ok(mine) = self.streams.insert(Arc::clone(&s)) else {
            let _ = drv.destroy_queue(DeviceId(self.device), queue);
            return Err(self.no_stream_left(api));
        };
        self.add_queue(queue);
        match self.default_stream.compare_exchange(h, mine, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                crate::state::stream_ctl::fire(mine, crate::state::stream_ctl::STATE_CREATE_POST);
                Ok((mine, s))
            }
            Err(theirs) => {
                self.streams.remove(mine);
                self.remove_queue(queue);
                let _ = drv.destroy_queue(DeviceId(self.device), queue);
                let s = self.streams.get(theirs).ok_or_else(|| bad_handle(api, "stream", theirs))?;
                Ok((theirs, Arc::clone(&**s)))
            }
        }
    }

    /// How many more streams the device can have (`aclrtGetStreamAvailableNum`).
    pub(crate) fn stream_room(&self) -> u32 {
        self.streams.capacity().saturating_sub(self.streams.len())
    }

    fn no_stream_left(&self, api: &str) -> AclError {
        AclError::new(
            ACL_ERROR_RT_NO_STREAM_RESOURCE,
            format!(
                "{api}: device {} already has {} streams (the default stream included)",
                self.device, self.limits.max_streams
            ),
        )
    }

    /// Resolves a live stream handle of this device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a handle that is not live here.
    pub(crate) fn stream(&self, api: &str, handle: u64) -> Result<Arc<StreamObj>> {
        // The stream's own `Arc`, cloned under the slot's guard (one reference-count update).
        self.streams.with(handle, Arc::clone).ok_or_else(|| bad_handle(api, "stream", handle))
    }

    /// `aclrtCreateStream` / `aclrtCreateStreamWithConfig` on this device (the caller checked
    /// it is current).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for unknown flags; `ACL_ERROR_RT_NO_STREAM_RESOURCE` when the
    /// device has no stream left.
    pub(crate) fn create_stream(&self, api: &str, drv: &dyn Driver, flags: u32) -> Result<u64> {
        if flags & !stream_flag::ALL != 0 {
            return Err(AclError::invalid(format!(
                "{api}: flag {flags:#x} has bits outside ACL_STREAM_* (0x3f)"
            )));
        }
        let _ = self.default_stream(api, drv)?;
        if self.streams.len() >= self.streams.capacity() {
            return Err(self.no_stream_left(api));
        }
        let queue =
            drv.create_queue(DeviceId(self.device), self.limits.depth).map_err(|e| hal_err(api, e))?;
        let obj = Arc::new(StreamObj::new(drv, self.device, queue, flags, false));
        match self.streams.insert(obj) {
            Ok(h) => {
                self.add_queue(queue);
                Ok(h)
            }
            Err(Full::Capacity(_)) => {
                let _ = drv.destroy_queue(DeviceId(self.device), queue);
                Err(self.no_stream_left(api))
            }
        }
    }

    /// The first half of `aclrtDestroyStream` / `aclrtDestroyStreamForce` of a stream of this
    /// device: the handle dies for every other call (and its callback subscription goes); the
    /// stream's queue stays until [`Self::teardown_stream`].
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for the default stream; `ACL_ERROR_RT_INVALID_HANDLE` for a
    /// stream that is not live.
    pub(crate) fn detach_stream(&self, api: &str, handle: u64) -> Result<Arc<StreamObj>> {
        let removed = self.streams.remove_if(handle, |s| {
            if s.is_default {
                return Err(AclError::invalid(format!(
                    "{api}: stream {handle:#x} is the default stream; it goes away with aclrtResetDevice"
                )));
            }
            Ok(())
        })?;
        // From here on the handle is dead for every other call.
        let s = removed.ok_or_else(|| bad_handle(api, "stream", handle))?;
        // Release: before the queue closes (the backend's lock orders the close after it).
        s.detached.store(true, Ordering::Release);
        // Lock order: reports (alone). One removal: all or nothing.
        crate::sync::relock(&self.reports).stream_subscriber.remove(&handle);
        Ok(Arc::clone(&**s))
    }

    /// The second half of a stream's destruction (its handle is already dead): the queue goes
    /// once what it still runs has finished. Forced (CANN's force recycle, §8.8 step 5), the
    /// task at the head whose dependencies are met counts as on the device and runs, every
    /// task behind it is dropped without running and the events those would have recorded stay
    /// not complete; the task that runs is waited for. Not forced, every task is. A backend
    /// that cannot drop tasks waits for all of them.
    ///
    /// # Errors
    ///
    /// The backend's, when it cannot free the queue.
    pub(crate) fn teardown_stream(
        &self,
        api: &str,
        drv: &dyn Driver,
        s: &StreamObj,
        force: bool,
    ) -> Result<()> {
        let dev = DeviceId(self.device);
        if force {
            let _ = drv.abort_queue(dev, s.queue, hal::AbortHead::Runs);
        }
        let r = drv.destroy_queue(dev, s.queue).map_err(|e| hal_err(api, e));
        self.remove_queue(s.queue);
        r
    }

    /// Waits for stream `s` to finish what was submitted so far, then reports its first
    /// failure since the last synchronisation.
    pub(crate) fn sync_queue(
        &self,
        api: &str,
        drv: &dyn Driver,
        s: &StreamObj,
        timeout: Timeout,
        timeout_code: i32,
    ) -> Result<()> {
        let dev = DeviceId(self.device);
        let last = drv.progress(dev, s.queue).map_err(|e| hal_err(api, e))?.submitted;
        match drv.wait(dev, s.queue, last, timeout.as_option()) {
            Ok(()) => self.note_completed(s.queue, last),
            Err(e) if e.kind() == hal::ErrorKind::Timeout => {
                return Err(AclError::new(
                    timeout_code,
                    format!("{api}: the stream's tasks did not finish within {timeout:?}"),
                ));
            }
            Err(e) => return Err(hal_err(api, e)),
        }
        self.take_stream_error(api, drv, s)
    }

    /// Reports (and clears) the first failure of stream `s` since the last report.
    pub(crate) fn take_stream_error(&self, api: &str, drv: &dyn Driver, s: &StreamObj) -> Result<()> {
        let status = drv.take_error(DeviceId(self.device), s.queue).map_err(|e| hal_err(api, e))?;
        crate::state::task_fault::note_status(self.device, s.queue, status);
        status_error(api, status.unwrap_or(TaskStatus::Ok))
    }

    /// Whether every task submitted to `s` so far has finished (`aclrtStreamQuery`); a failure
    /// stays for the next synchronisation (reading progress takes nothing).
    pub(crate) fn stream_is_complete(&self, api: &str, drv: &dyn Driver, s: &StreamObj) -> Result<bool> {
        let p = drv.progress(DeviceId(self.device), s.queue).map_err(|e| hal_err(api, e))?;
        self.note_completed(s.queue, p.completed);
        Ok(p.completed >= p.submitted)
    }

    /// `aclrtSetStreamFailureMode`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a mode other than 0 or 1.
    pub(crate) fn set_failure_mode(
        &self,
        api: &str,
        drv: &dyn Driver,
        s: &StreamObj,
        mode: u64,
    ) -> Result<()> {
        let stop = match mode {
            0 => false,
            1 => true,
            m => {
                return Err(AclError::invalid(format!(
                    "{api}: mode {m} is neither ACL_CONTINUE_ON_FAILURE (0) nor ACL_STOP_ON_FAILURE (1)"
                )))
            }
        };
        drv.set_stop_on_failure(DeviceId(self.device), s.queue, stop).map_err(|e| hal_err(api, e))
    }

    /// Makes `waiter` wait for point `seq` of `target` (both streams of this device): the one
    /// call the pools make, after releasing their lock, for an internal dependency. Returns the
    /// wait task's number on `waiter`.
    pub(crate) fn wait_for_point(
        &self,
        api: &str,
        drv: &dyn Driver,
        waiter: QueueId,
        target: QueueId,
        seq: u64,
    ) -> Result<u64> {
        let dev = DeviceId(self.device);
        let at = drv.wait_point(dev, waiter, target, seq).map_err(|e| hal_err(api, e))?;
        let done = drv.progress(dev, waiter).map(|p| p.completed).unwrap_or(0);
        // Lock order: graph (a leaf).
        let mut g = self.graph(api)?;
        g.note_completed(waiter.0, done);
        g.add_wait(waiter.0, at, StreamPoint { stream: target.0, seq });
        Ok(at)
    }

    /// `aclrtCreateEvent(WithFlag)` / `aclrtCreateEventExWithFlag` on this device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for unknown flags or EXTERNAL combined with others;
    /// `ACL_ERROR_RT_NO_EVENT_RESOURCE` when the device has no event left.
    pub(crate) fn create_event(&self, api: &str, drv: &dyn Driver, flags: u32, ex: bool) -> Result<u64> {
        if flags & !event_flag::ALL != 0 {
            return Err(AclError::invalid(format!("{api}: flag {flags:#x} has bits outside ACL_EVENT_*")));
        }
        if flags & event_flag::EXTERNAL != 0 && flags != event_flag::EXTERNAL {
            return Err(AclError::invalid(format!(
                "{api}: ACL_EVENT_EXTERNAL must stand alone (flag {flags:#x})"
            )));
        }
        let d = self.device;
        let no_event = || {
            AclError::new(
                ACL_ERROR_RT_NO_EVENT_RESOURCE,
                format!(
                    "{api}: device {d} has no event left (at most {} per device)",
                    self.limits.max_events
                ),
            )
        };
        if self.events.len() >= self.events.capacity() {
            return Err(no_event());
        }
        let hw = drv.create_event(DeviceId(d)).map_err(|e| {
            if e.kind() == hal::ErrorKind::OutOfMemory {
                no_event()
            } else {
                hal_err(api, e)
            }
        })?;
        self.events.insert(Arc::new(EventObj { device: d, hw, flags, ex })).map_err(|_| {
            let _ = drv.destroy_event(DeviceId(d), hw);
            no_event()
        })
    }

    /// Resolves a live event handle of this device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a handle that is not live here.
    pub(crate) fn event(&self, api: &str, handle: u64) -> Result<Arc<EventObj>> {
        self.events.get(handle).map(|e| Arc::clone(&**e)).ok_or_else(|| bad_handle(api, "event", handle))
    }

    /// `aclrtDestroyEvent`: never blocks.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a dead event.
    pub(crate) fn destroy_event(&self, api: &str, drv: &dyn Driver, handle: u64) -> Result<()> {
        let e = self.events.remove(handle).ok_or_else(|| bad_handle(api, "event", handle))?;
        let _ = drv.destroy_event(DeviceId(self.device), e.hw);
        Ok(())
    }

    /// `aclrtRecordEvent` of `e` on `s` (both of this device).
    pub(crate) fn record_event(
        &self,
        api: &str,
        drv: &dyn Driver,
        e: &EventObj,
        s: &StreamObj,
    ) -> Result<()> {
        drv.record_event(DeviceId(self.device), s.queue, e.hw)
            .map(|seq| s.note_submitted(seq))
            .map_err(|er| s.submit_error(api, er))
    }

    /// `aclrtStreamWaitEvent`: `s` waits for `e`'s last record, and the graph learns the edge.
    pub(crate) fn stream_wait_event(
        &self,
        api: &str,
        drv: &dyn Driver,
        s: &StreamObj,
        e: &EventObj,
    ) -> Result<()> {
        needs_sync_flag(api, e)?;
        let dev = DeviceId(self.device);
        let w = drv.wait_event(dev, s.queue, e.hw).map_err(|er| s.submit_error(api, er))?;
        if let Some(at) = w.seq {
            // A wait carries the other stream's order into this one: a stream-ordered free made
            // after it must be ordered after it too.
            s.note_submitted(at);
        }
        let (Some(at), Some((q, seq))) = (w.seq, w.target) else { return Ok(()) };
        // Completed waits leave the graph: learn how far the waiting queue got.
        let done = drv.progress(dev, s.queue).map(|p| p.completed).unwrap_or(0);
        // Lock order: graph (a leaf).
        let mut g = self.graph(api)?;
        if done >= at {
            // The wait already ran, so what it waited for has finished.
            g.note_completed(q.0, seq);
        }
        g.note_completed(s.queue.0, done);
        g.add_wait(s.queue.0, at, StreamPoint { stream: q.0, seq });
        Ok(())
    }

    /// `aclrtResetEvent`.
    pub(crate) fn reset_event(&self, api: &str, drv: &dyn Driver, e: &EventObj, s: &StreamObj) -> Result<()> {
        needs_sync_flag(api, e)?;
        drv.reset_event(DeviceId(self.device), s.queue, e.hw).map_err(|er| s.submit_error(api, er))
    }

    /// Whether the event's captured tasks have all finished (`aclrtQueryEventStatus`): an
    /// event that was never recorded is complete only if made by `aclrtCreateEventExWithFlag`.
    pub(crate) fn event_is_complete(&self, api: &str, drv: &dyn Driver, e: &EventObj) -> Result<bool> {
        let info = drv.event_info(DeviceId(self.device), e.hw).map_err(|er| hal_err(api, er))?;
        Ok(match info.point {
            None => e.ex,
            Some((q, seq)) => {
                if info.is_complete {
                    self.note_completed(q, seq);
                }
                info.is_complete
            }
        })
    }

    /// `aclrtSynchronizeEvent(WithTimeout)`; whether it waited for a recorded point.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT` on timeout.
    pub(crate) fn synchronize_event(
        &self,
        api: &str,
        drv: &dyn Driver,
        e: &EventObj,
        timeout: Timeout,
    ) -> Result<bool> {
        let dev = DeviceId(self.device);
        let info = drv.event_info(dev, e.hw).map_err(|er| hal_err(api, er))?;
        let Some((queue, seq)) = info.point else { return Ok(false) };
        match drv.wait(dev, queue, seq, timeout.as_option()) {
            Ok(()) => {
                self.note_completed(queue, seq);
                Ok(true)
            }
            Err(er) if er.kind() == hal::ErrorKind::Timeout => Err(AclError::new(
                ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                format!("{api}: the event's tasks did not finish within {timeout:?}"),
            )),
            // The recorded stream was destroyed: it finished everything first.
            Err(er) if er.kind() == hal::ErrorKind::InvalidHandle => Ok(true),
            Err(er) => Err(hal_err(api, er)),
        }
    }

    /// The device-clock time (nanoseconds) at which the event's latest record ran.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when the event has not completed a record.
    pub(crate) fn event_timestamp_ns(
        &self,
        api: &str,
        drv: &dyn Driver,
        handle: u64,
        e: &EventObj,
    ) -> Result<u64> {
        let info = drv.event_info(DeviceId(self.device), e.hw).map_err(|er| hal_err(api, er))?;
        info.timestamp_ns.ok_or_else(|| {
            AclError::new(
                ACL_ERROR_RT_PARAM_INVALID,
                format!(
                    "{api}: event {handle:#x} has not completed a record (record it and synchronise first)"
                ),
            )
        })
    }

    /// The subscribed thread of stream `handle`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_NO_CB_REG` when no thread is subscribed to it.
    fn subscriber_of(&self, api: &str, handle: u64) -> Result<u64> {
        // Lock order: reports (alone).
        self.reports(api)?.stream_subscriber.get(&handle).copied().ok_or_else(|| {
            AclError::new(
                ACL_ERROR_RT_STREAM_NO_CB_REG,
                format!(
                    "{api}: no thread is subscribed to stream {handle:#x}; call aclrtSubscribeReport first"
                ),
            )
        })
    }

    /// `aclrtLaunchHostFunc` / `aclrtLaunchCallback` on stream `s` (handle `handle`): the
    /// function and its data travel in the task, so nothing is kept here.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_NO_CB_REG` for a callback on a stream without a subscribed thread;
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` when the backend has no loader to run host calls.
    #[inline]
    pub(crate) fn launch_host_call(
        &self,
        api: &str,
        drv: &dyn Driver,
        handle: u64,
        s: &StreamObj,
        mut call: HostCall,
    ) -> Result<()> {
        if let Some((_, block)) = call.report {
            call.report = Some((self.subscriber_of(api, handle)?, block));
        }
        // Host calls need the device's loader to reach this process's hook.
        if !s.host_calls {
            return Err(no_loader(api));
        }
        let task = call.to_task();
        match task.report {
            None => s.submit_host_fn(drv, task.func, task.data),
            Some(_) => s.submit(drv, &TaskDesc::HostFunc { call: task }),
        }
        .map(|seq| s.note_submitted(seq))
        .map_err(|e| s.submit_error(api, e))
    }

    /// Queues `report` for subscribed thread `thread` and wakes it; the report back when the
    /// thread is not subscribed here. Done under `reports`, so an unsubscribe either sees the
    /// report (and keeps the thread's queue until it is processed) or came first.
    pub(crate) fn post_report(&self, thread: u64, report: Report) -> std::result::Result<(), Report> {
        // Lock order: reports → the thread's report queue. A push is all or nothing.
        let r = crate::sync::relock(&self.reports);
        let Some(q) = r.subscribers.get(&thread) else { return Err(report) };
        crate::sync::relock(&q.queue).push_back(report);
        q.ready.notify_all();
        Ok(())
    }

    /// Whether `thread` is subscribed on this device.
    pub(crate) fn serves(&self, thread: u64) -> bool {
        // Lock order: reports (alone); read only.
        crate::sync::relock(&self.reports).subscribers.contains_key(&thread)
    }

    /// The report queue of `thread`, if it is subscribed here.
    pub(crate) fn report_queue(&self, thread: u64) -> Option<Arc<ReportQueue>> {
        // Lock order: reports (alone); read only.
        crate::sync::relock(&self.reports).subscribers.get(&thread).cloned()
    }

    /// `aclrtSubscribeReport(threadId, stream)` for a stream of this device (the caller
    /// checked the thread serves no other device).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_REPEAT_SUBSCRIBE` when the stream has a thread already;
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when too many threads are subscribed.
    pub(crate) fn subscribe_report(&self, api: &str, thread: u64, handle: u64) -> Result<()> {
        // Lock order: reports (alone).
        let mut r = self.reports(api)?;
        if r.stream_subscriber.contains_key(&handle) {
            return Err(AclError::new(
                ACL_ERROR_REPEAT_SUBSCRIBE,
                format!("{api}: stream {handle:#x} already has a callback thread"),
            ));
        }
        if !r.subscribers.contains_key(&thread) {
            if r.subscribers.len() >= MAX_SUBSCRIBERS {
                return Err(AclError::new(
                    ACL_ERROR_RT_THREAD_SUBSCRIBE,
                    format!(
                        "{api}: {MAX_SUBSCRIBERS} threads are subscribed on device {} already",
                        self.device
                    ),
                ));
            }
            r.subscribers.insert(thread, Arc::new(ReportQueue::default()));
        }
        r.stream_subscriber.insert(handle, thread);
        Ok(())
    }

    /// `aclrtUnSubscribeReport(threadId, stream)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread does not serve the stream.
    pub(crate) fn unsubscribe_report(&self, api: &str, thread: u64, handle: u64) -> Result<()> {
        // Lock order: reports → a report queue (in `retire_idle_subscriber`).
        let mut r = self.reports(api)?;
        if r.stream_subscriber.get(&handle) != Some(&thread) {
            return Err(AclError::new(
                ACL_ERROR_RT_THREAD_SUBSCRIBE,
                format!("{api}: thread {thread} is not subscribed to stream {handle:#x}"),
            ));
        }
        r.stream_subscriber.remove(&handle);
        Self::retire_idle_subscriber(&mut r, thread);
        Ok(())
    }

    /// Forgets `thread` as a callback thread once it serves no stream and has no callback
    /// left to process: a callback that already reached its queue (a `NO_BLOCK` one can still
    /// be there after the stream synchronised) stays deliverable by `aclrtProcessReport`, and a
    /// `BLOCK` one is never dropped with its stream still waiting on it.
    fn retire_idle_subscriber(r: &mut Reports, thread: u64) {
        if r.stream_subscriber.values().any(|&th| th == thread) {
            return;
        }
        // Lock order: reports → the report queue; reading its length changes nothing.
        let idle = r.subscribers.get(&thread).is_some_and(|q| crate::sync::relock(&q.queue).is_empty());
        if idle {
            r.subscribers.remove(&thread);
        }
    }

    /// Waits for a callback for `thread` on queue `q` (`aclrtProcessReport`) and returns it.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_REPORT_TIMEOUT` when none arrives in time.
    pub(crate) fn next_report(
        &self,
        api: &str,
        thread: u64,
        q: &ReportQueue,
        timeout: Timeout,
    ) -> Result<Report> {
        // TIMEOUT: bounded by the caller's timeout, or forever for -1.
        let deadline = timeout.as_option().map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        // Lock order: the report queue alone (`reports` is taken after it is released). A
        // queue's pushes and pops are all or nothing.
        let mut g = crate::sync::relock(&q.queue);
        loop {
            if let Some(r) = g.pop_front() {
                drop(g);
                // The last callback of a thread that was unsubscribed meanwhile.
                Self::retire_idle_subscriber(&mut crate::sync::relock(&self.reports), thread);
                return Ok(r);
            }
            g = match deadline {
                None => q.ready.wait(g).unwrap_or_else(std::sync::PoisonError::into_inner),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(AclError::new(
                            ACL_ERROR_RT_REPORT_TIMEOUT,
                            format!("{api}: no callback arrived within {timeout:?}"),
                        ));
                    }
                    q.ready.wait_timeout(g, d - now).unwrap_or_else(std::sync::PoisonError::into_inner).0
                }
            };
        }
    }

    /// A new context on this device (`aclrtCreateContext`, after the caller set the device).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_NO_STREAM_RESOURCE` when the context table is full.
    pub(crate) fn create_context(&self, api: &str) -> Result<u64> {
        self.contexts.insert(ContextObj { is_default: false }).map_err(|Full::Capacity(n)| {
            AclError::new(
                ACL_ERROR_RT_NO_STREAM_RESOURCE,
                format!("{api}: device {} already has {n} contexts", self.device),
            )
        })
    }

    /// Whether `ctx` is a live context of this device, and whether it is the default one.
    pub(crate) fn context(&self, ctx: u64) -> Option<bool> {
        self.contexts.get(ctx).map(|c| c.is_default)
    }

    /// The handle of the device's default context.
    pub(crate) fn default_context(&self) -> u64 {
        self.default_context
    }

    /// Removes an explicit context; `Ok(false)` when `ctx` is the default context.
    pub(crate) fn remove_context(&self, ctx: u64) -> bool {
        self.contexts
            .remove_if(ctx, |c| if c.is_default { Err(()) } else { Ok(()) })
            .is_ok_and(|r| r.is_some())
    }

    /// Every live stream of the device.
    pub(crate) fn live_streams(&self) -> Vec<(u64, Arc<StreamObj>)> {
        self.streams.live().into_iter().map(|e| (e.handle(), Arc::clone(&**e))).collect()
    }

    /// Waits until every task submitted to a stream of the device has finished (device reset:
    /// the device's memory may go only after that).
    pub(crate) fn wait_idle(&self, drv: &dyn Driver) {
        let dev = DeviceId(self.device);
        for (_, s) in self.live_streams() {
            if let Ok(p) = drv.progress(dev, s.queue) {
                if drv.wait(dev, s.queue, p.submitted, None).is_ok() {
                    self.note_completed(s.queue, p.submitted);
                }
            }
        }
    }

    /// Synchronises every stream of the device (`aclrtSynchronizeDevice`): the first failure
    /// of any stream, or the timeout.
    pub(crate) fn synchronize_all(&self, api: &str, drv: &dyn Driver, timeout: Timeout) -> Result<()> {
        let start = Instant::now();
        let mut first: Option<AclError> = None;
        for (_, s) in self.live_streams() {
            let left = match timeout {
                Timeout::Forever => Timeout::Forever,
                Timeout::Millis(ms) => {
                    // CAST: elapsed milliseconds of a bounded wait fit in u32.
                    Timeout::Millis(ms.saturating_sub(start.elapsed().as_millis() as u32))
                }
            };
            if let Err(e) = self.sync_queue(api, drv, &s, left, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
                if e.code() == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT {
                    return Err(e);
                }
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Lets the tasks of the device settle before its reset by `api`.
    ///
    /// The forced forms (`aclrtResetDeviceForce`, and `aclFinalize`, which resets every device
    /// that way) first drop every queued task of the device's streams, as
    /// `aclrtDestroyStreamForce` does, so that a task that can never run (an `aclrtValueWait` on
    /// a word nobody writes) cannot hold them; a task already running finishes. The plain reset
    /// waits for every task, as CANN's does; when a stream is still busy after
    /// [`RESET_NOTE_AFTER_MS`] it says on stderr which stream it waits for, then waits on.
    pub(crate) fn settle(&self, api: &str, drv: &dyn Driver, force: bool) {
        let dev = DeviceId(self.device);
        for (h, s) in self.live_streams() {
            // A backend that cannot drop queued tasks (NotSupported) waits like a plain reset.
            let dropped = force && drv.abort_queue(dev, s.queue, hal::AbortHead::Cancel).is_ok();
            let Ok(p) = drv.progress(dev, s.queue) else { continue };
            let last = p.submitted;
            let grace = if dropped { None } else { Some(RESET_NOTE_AFTER_MS) };
            if let Err(e) = drv.wait(dev, s.queue, last, grace) {
                if e.kind() == hal::ErrorKind::Timeout {
                    let done = self.refresh(drv, &s).map_or(0, |p| p.completed);
                    note_reset_wait(api, self.device, h, last, done);
                    let _ = drv.wait(dev, s.queue, last, None);
                }
            }
        }
    }

    /// Forgets every stream, event, explicit context and subscription of the device (its
    /// reset or `aclFinalize`); the device's queues go with the device.
    pub(crate) fn forget(&self) {
        self.default_stream.store(0, Ordering::Release);
        self.streams.drain();
        self.events.drain();
        for c in self.contexts.live() {
            if !c.is_default {
                self.contexts.remove(c.handle());
            }
        }
        // Lock order: reports, released, then graph; each a whole replacement.
        *crate::sync::relock(&self.reports) = Reports::default();
        *crate::sync::relock(&self.graph) = DepGraph::new();
    }
}

/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for a backend without a loader.
pub(crate) fn no_loader(api: &str) -> AclError {
    AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!("{api}: the davinci backend cannot load kernels or run host calls on a real device (the firmware loader formats are not public)"),
    )
}

/// Checks that events `e` and stream `s` are of one device.
///
/// # Errors
///
/// `ACL_ERROR_RT_STREAM_CONTEXT` otherwise.
pub(crate) fn same_device(api: &str, e: &EventObj, s: &StreamObj) -> Result<()> {
    if e.device != s.device {
        return Err(AclError::new(
            ACL_ERROR_RT_STREAM_CONTEXT,
            format!("{api}: the event belongs to device {} and the stream to device {}", e.device, s.device),
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

/// The stream-order oracle of one device for the pools, locking the device's graph only when
/// first asked and holding it until dropped: a pool that reuses a block freed on the caller's
/// own stream (the steady state) never asks, so it takes no graph lock. A poisoned graph is
/// recovered ([`crate::sync::relock`]; see [`DeviceStreams::graph_mutex`]).
pub(crate) struct LazyGraphOrder<'a> {
    graph: &'a Mutex<DepGraph>,
    held: std::cell::RefCell<Option<MutexGuard<'a, DepGraph>>>,
}

impl<'a> LazyGraphOrder<'a> {
    /// The oracle over `graph`, not locked yet.
    pub(crate) fn new(graph: &'a Mutex<DepGraph>) -> Self {
        Self { graph, held: std::cell::RefCell::new(None) }
    }

    fn ask<T>(&self, f: impl FnOnce(&DepGraph) -> T) -> T {
        let mut held = self.held.borrow_mut();
        // Lock order: the graph is a leaf (see `Runtime::order`).
        f(held.get_or_insert_with(|| crate::sync::relock(self.graph)))
    }
}

impl StreamOrder for LazyGraphOrder<'_> {
    fn is_complete(&self, p: StreamPoint) -> bool {
        self.ask(|g| g.is_complete(p))
    }

    fn is_ordered_before(&self, p: StreamPoint, stream: u32) -> bool {
        self.ask(|g| g.is_ordered_before(p, stream))
    }
}

thread_local! {
    /// The context this thread made current with `aclrtCreateContext`/`aclrtSetCurrentContext`,
    /// tagged with the runtime generation it was made in.
    pub(crate) static CURRENT_CONTEXT: std::cell::Cell<Option<(u64, u64)>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(device: u32) -> DeviceStreams {
        DeviceStreams::new(device, 7, Limits::of(SocProfile::A2))
    }

    #[test]
    fn limits_come_from_the_soc_profile() {
        let l = Limits::of(SocProfile::A3);
        assert_eq!((l.max_streams, l.max_events, l.depth), (1984, 65_536, 1024));
        let t = tables(0);
        assert_eq!(t.limits, l);
        assert_eq!(t.device(), 0);
    }

    #[test]
    fn a_handle_of_another_device_is_rejected_with_a_message() {
        let (d0, d1) = (tables(0), tables(1));
        let ctx1 = d1.create_context("aclrtCreateContext").unwrap();
        assert_eq!(d1.context(ctx1), Some(false));
        assert_eq!(d0.context(ctx1), None, "device 0's table does not hold device 1's handle");
        let all = [d0, d1];
        assert_eq!(owner(&all, ctx1, Kind::Context).map(DeviceStreams::device), Some(1));
        assert!(owner(&all, ctx1, Kind::Stream).is_none(), "a context is not a stream");
        assert!(owner(&all, 0xdead_beef, Kind::Event).is_none(), "garbage");
        let e = all[0].stream("aclrtSynchronizeStream", ctx1).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_INVALID_HANDLE);
        assert!(e.message().contains("is not a live stream"), "{}", e.message());
    }

    #[test]
    fn contexts_of_an_earlier_init_and_destroyed_ones_are_not_live() {
        let old = DeviceStreams::new(0, 1, Limits::of(SocProfile::A2));
        let new = DeviceStreams::new(0, 2, Limits::of(SocProfile::A2));
        let c = old.create_context("aclrtCreateContext").unwrap();
        assert_eq!(new.context(c), None, "made before the last aclInit");
        assert!(old.remove_context(c));
        assert_eq!(old.context(c), None, "destroyed");
        assert!(!old.remove_context(old.default_context()), "the default context stays");
        assert_eq!(old.context(old.default_context()), Some(true));
        let kept = old.create_context("aclrtCreateContext").unwrap();
        old.forget();
        assert_eq!(old.context(kept), None, "a reset forgets explicit contexts");
        assert_eq!(old.context(old.default_context()), Some(true));
    }

    #[test]
    fn the_graph_answers_for_the_pools_and_a_poisoned_graph_fails_with_a_message() {
        let t = tables(0);
        t.add_queue(QueueId(1));
        t.add_queue(QueueId(2));
        {
            let mut g = t.graph("test").unwrap();
            g.add_wait(2, 5, StreamPoint { stream: 1, seq: 3 });
        }
        let order = LazyGraphOrder::new(t.graph_mutex());
        assert!(order.is_ordered_before(StreamPoint { stream: 1, seq: 3 }, 2));
        assert!(!order.is_ordered_before(StreamPoint { stream: 1, seq: 4 }, 2));
        assert!(!order.is_complete(StreamPoint { stream: 1, seq: 1 }));
        drop(order);
        t.note_completed(QueueId(1), 4);
        assert!(LazyGraphOrder::new(t.graph_mutex()).is_complete(StreamPoint { stream: 1, seq: 4 }));
        let _ = std::panic::catch_unwind(|| {
            let _g = t.graph.lock().unwrap();
            panic!("half-way");
        });
        let e = t.graph("aclrtStreamWaitEvent").unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_INTERNAL_ERROR);
        assert!(e.message().contains("the stream graph of device 0"), "{}", e.message());
    }

    /// Streams, events and their errors over a real software NPU: `aclrtStreamQuery` reads
    /// progress without taking the failure, so the next synchronisation still reports it.
    #[test]
    fn a_query_leaves_the_failure_for_the_next_synchronisation() {
        use hal::{DeviceAddr, DeviceControl, Queues};
        // Lock order: the test lock alone (it is taken before any runtime lock).
        let _one_sim = crate::SIM_TEST_LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let sim = hal_sim::Sim::new(hal_sim::SimConfig {
            instance: format!("acl-stream-unit-{}", std::process::id()),
            hbm_bytes: 256 << 20,
            huge_budget_bytes: 64 << 20,
            giant_budget_bytes: 0,
            ..hal_sim::SimConfig::default()
        })
        .expect("start the software NPU");
        sim.open(DeviceId(0)).expect("open");
        let t = tables(0);
        let h = t.create_stream("aclrtCreateStream", &sim, 0).unwrap();
        let s = t.stream("test", h).unwrap();
        // A copy from an address that is no memory at all fails on the device.
        let bad = TaskDesc::Copy { dst: DeviceAddr(0x1000), src: DeviceAddr(0x2000), len_bytes: 16 };
        let seq = sim.submit(DeviceId(0), s.queue, bad).unwrap();
        sim.wait(DeviceId(0), s.queue, seq, Some(10_000)).unwrap();
        for _ in 0..3 {
            assert!(t.stream_is_complete("aclrtStreamQuery", &sim, &s).unwrap());
        }
        let api = "aclrtSynchronizeStream";
        let e = t.sync_queue(api, &sim, &s, Timeout::Forever, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_AICORE_EXCEPTION);
        assert!(e.message().contains("failed on the device"), "{}", e.message());
        t.sync_queue(api, &sim, &s, Timeout::Forever, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT)
            .expect("reported once");
        assert_eq!(crate::sync::relock(&t.graph).completed(s.queue.0), Some(seq), "the graph saw it finish");

        // A wait on an event: the graph orders the waiting stream after the record.
        let h2 = t.create_stream("aclrtCreateStream", &sim, 0).unwrap();
        let s2 = t.stream("test", h2).unwrap();
        let ev = t.create_event("aclrtCreateEvent", &sim, event_flag::SYNC, false).unwrap();
        let e = t.event("test", ev).unwrap();
        t.record_event("aclrtRecordEvent", &sim, &e, &s).unwrap();
        t.stream_wait_event("aclrtStreamWaitEvent", &sim, &s2, &e).unwrap();
        let p = sim.progress(DeviceId(0), s.queue).unwrap().submitted;
        let order = LazyGraphOrder::new(t.graph_mutex());
        assert!(order.is_ordered_before(StreamPoint { stream: s.queue.0, seq: p }, s2.queue.0));
        drop(order);

        // Destroyed handles are dead at once; the default stream cannot be destroyed.
        t.destroy_event("aclrtDestroyEvent", &sim, ev).unwrap();
        assert_eq!(t.event("aclrtRecordEvent", ev).unwrap_err().code(), ACL_ERROR_RT_INVALID_HANDLE);
        let s2 = t.detach_stream("aclrtDestroyStream", h2).unwrap();
        t.teardown_stream("aclrtDestroyStream", &sim, &s2, false).unwrap();
        assert_eq!(t.stream("aclrtSynchronizeStream", h2).unwrap_err().code(), ACL_ERROR_RT_INVALID_HANDLE);
        let (def, _) = t.default_stream("test", &sim).unwrap();
        let e = t.detach_stream("aclrtDestroyStream", def).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_INVALID_PARAM);
        t.settle("aclrtResetDevice", &sim, false);
        t.forget();
        assert_eq!(t.stream("aclrtSynchronizeStream", h).unwrap_err().code(), ACL_ERROR_RT_INVALID_HANDLE);
        sim.close(DeviceId(0)).expect("close");
    }
}
