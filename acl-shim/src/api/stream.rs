//! The runtime's stream, event and context calls: find the device a handle (or the current
//! device) names, then hand its `DeviceStreams` and the backend to [`crate::state::stream`].
//!
//! This module owns only that dispatch and the cross-device checks (a stream of one device used
//! with an event or a current device of another). It sits above `state::stream` and `runtime` and
//! below the C and Rust APIs.
//!
//! # Locking
//!
//! No lock of this module. The runtime lookup (`RUNTIME`, an arc-swap), the current device (a
//! thread-local plus the device's atomic open count) and every handle lookup
//! ([`crate::handles`]) are lock-free, so a call takes only the locks [`crate::state::stream`] lists
//! and the backend's. Lock acquisitions on the hot paths, counted in steady state on the
//! software NPU (whose device slot is read lock-free; its per-device scheduler mutex is the
//! backend's one lock per task):
//! - `aclrtLaunchHostFunc`: 0 (runtime) + 0 (`stream`) + 1 (the backend's submit) = 1. The
//!   submit wakes a sleeping device worker through its condvar (a futex call only when one
//!   sleeps); `aclrtLaunchCallback` adds the stream's subscriber lookup.
//! - `aclrtRecordEvent`: 0 + 0 + 1 (the backend's record) = 1.
//! - `aclrtStreamWaitEvent`: 0 + 1 (the device's `graph`) + 2 (the backend's wait and its
//!   progress read) = 3.
//! - `aclrtMemPoolMallocAsync` / `aclrtMemPoolFreeAsync`: see [`crate::api::pool`].
//!
//! The default stream (`NULL`) adds nothing: it is the current device's, found lock-free.
//! None of these locks is process-wide.

use std::sync::Arc;

use hal::{DeviceAddr, DeviceId, TaskDesc};

use crate::error::{AclError, Result};
use crate::handles::Kind;
use crate::runtime::Runtime;
use crate::state::stream::{
    bad_handle, owner, same_device, DeviceStreams, EventObj, HostCall, Report, StreamObj, Timeout,
    ACL_ERROR_RT_STREAM_CONTEXT, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_THREAD_SUBSCRIBE,
};
use crate::tls::Key;

impl Runtime {
    fn drv(&self) -> &dyn hal::Driver {
        self.backend().driver()
    }

    /// The stream tables of device `d` (an id the runtime checked).
    pub(crate) fn streams_of(&self, d: u32) -> &DeviceStreams {
        &self.device(d).streams
    }

    pub(crate) fn owner_of(&self, api: &str, raw: u64, kind: Kind, what: &str) -> Result<&DeviceStreams> {
        owner(&self.devices, raw, kind).ok_or_else(|| bad_handle(api, what, raw))
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
            return self.streams_of(d).default_stream(api, self.drv());
        }
        let s = self.owner_of(api, handle, Kind::Stream, "stream")?.stream(api, handle)?;
        Ok((handle, s))
    }

    /// Resolves a stream that work is submitted to: it must belong to the current device.
    pub(crate) fn submit_stream(&self, api: &str, handle: u64) -> Result<Arc<StreamObj>> {
        self.submit_target(api, handle).map(|(_, s)| s)
    }

    /// [`Self::submit_stream`] with the handle it resolved to (the default stream's for 0),
    /// through the calling thread's submit cache: a stream this thread submitted to lately is
    /// found with one atomic load (the [removal epoch](crate::handles::removal_epoch)) and one
    /// thread-local access, as long as no handle of any table died since, the thread's current
    /// device is the same and still open, and the runtime is the same (see [`crate::tls::SubmitCache`]).
    pub(crate) fn submit_target(&self, api: &str, handle: u64) -> Result<(u64, Arc<StreamObj>)> {
        self.with_submit_target(api, handle, |h, s| Ok((h, Arc::clone(s))))
    }

    /// Runs `f` on what [`Self::submit_target`] resolves, without taking a reference when the
    /// calling thread's cache answers (`f` then runs with the cache borrowed for reading: a
    /// nested submission on this thread still reads it, and only skips remembering a miss).
    #[inline]
    pub(crate) fn with_submit_target<R>(
        &self,
        api: &str,
        handle: u64,
        f: impl FnOnce(u64, &Arc<StreamObj>) -> Result<R>,
    ) -> Result<R> {
        // One thread-local access for the current device and the cache.
        crate::tls::with(|l| self.with_submit_target_in(l, api, handle, f))
    }

    /// [`Self::with_submit_target`] with the calling thread's state `l` already at hand (a
    /// submission that also checks its arguments against `l` makes one thread-local access).
    #[inline]
    pub(crate) fn with_submit_target_in<R>(
        &self,
        l: &crate::tls::Local,
        api: &str,
        handle: u64,
        f: impl FnOnce(u64, &Arc<StreamObj>) -> Result<R>,
    ) -> Result<R> {
        let key = self.submit_key(l, handle);
        if let Some((h, s)) = self.cached_target(l, &key) {
            return f(h, &s);
        }
        self.submit_miss(api, key, l, f)
    }

    /// The submit cache's key for `handle` on the calling thread (state `l`).
    #[inline]
    fn submit_key(&self, l: &crate::tls::Local, handle: u64) -> Key {
        // Read before the lookup a miss makes, so that a removal during it leaves the entry
        // stale.
        let epoch = crate::handles::removal_epoch();
        Key { handle, epoch, current: l.current(), runtime: self.generation }
    }

    /// What the calling thread's submit cache (in `l`) answers for `key`, when its device is
    /// still open: the stream (borrowed from the cache) and the handle it resolved to. The
    /// stream then belongs to the thread's current device, which is open.
    #[inline]
    fn cached_target<'l>(
        &self,
        l: &'l crate::tls::Local,
        key: &Key,
    ) -> Option<(u64, std::cell::Ref<'l, Arc<StreamObj>>)> {
        let mut h = 0;
        let c = l.submit.try_borrow().ok()?;
        let s = std::cell::Ref::filter_map(c, |c| {
            c.find(key).map(|(found, s)| {
                h = found;
                s
            })
        })
        .ok()?;
        self.device(s.device).is_open().then_some((h, s))
    }

    /// [`Self::cached_target`] for `handle`: `None` when the cache does not answer (nothing
    /// is resolved or remembered then).
    #[inline]
    pub(crate) fn cached_submit_target<'l>(
        &self,
        l: &'l crate::tls::Local,
        handle: u64,
    ) -> Option<std::cell::Ref<'l, Arc<StreamObj>>> {
        self.cached_target(l, &self.submit_key(l, handle)).map(|(_, s)| s)
    }

    /// [`Self::with_submit_target`] when the cache does not answer: resolves afresh and
    /// remembers the resolution.
    #[cold]
    #[inline(never)]
    fn submit_miss<R>(
        &self,
        api: &str,
        key: Key,
        l: &crate::tls::Local,
        f: impl FnOnce(u64, &Arc<StreamObj>) -> Result<R>,
    ) -> Result<R> {
        let (h, s) = self.resolve_submit(api, key.handle)?;
        if let Ok(mut c) = l.submit.try_borrow_mut() {
            c.insert(key, h, Arc::clone(&s));
        }
        f(h, &s)
    }

    /// [`Self::submit_target`] without the cache: the stream must belong to the current device.
    fn resolve_submit(&self, api: &str, handle: u64) -> Result<(u64, Arc<StreamObj>)> {
        let d = self.current_device(api)?;
        let (h, s) = self.stream(api, handle)?;
        if s.device != d {
            return Err(AclError::new(
                ACL_ERROR_RT_STREAM_CONTEXT,
                format!(
                    "{api}: stream {handle:#x} belongs to device {}, but the current device is {d}",
                    s.device
                ),
            ));
        }
        Ok((h, s))
    }

    /// Submits `task` to stream `s`. Inlined, so that the task is built where it is encoded
    /// instead of being copied through memory on the way (see [`crate::runtime::with_runtime`]
    /// on store forwarding).
    #[inline(always)]
    pub(crate) fn submit_task(&self, api: &str, s: &StreamObj, task: TaskDesc) -> Result<u64> {
        Self::check_not_aborting(api, s)?;
        // ACLRS_SANITIZE=race (crate::sanitize).
        self.race_check_task(s, &task);
        let seq = s.submit(self.drv(), &task).map_err(|e| s.submit_error(api, e))?;
        s.note_submitted(seq);
        Ok(seq)
    }

    /// [`Self::submit_task`] of a byte fill, its fields as plain words down to the queue's
    /// port ([`StreamObj::submit_fill`]; the task is built only for the race sanitizer).
    #[inline(always)]
    pub(crate) fn submit_fill(
        &self,
        api: &str,
        s: &StreamObj,
        dst: DeviceAddr,
        value: u8,
        len: u64,
    ) -> Result<u64> {
        Self::check_not_aborting(api, s)?;
        // ACLRS_SANITIZE=race (crate::sanitize).
        if crate::sanitize::settings().race {
            self.race_check_task(s, &TaskDesc::Memset { dst, value, len_bytes: len });
        }
        let seq = s.submit_fill(self.drv(), dst, value, len).map_err(|e| s.submit_error(api, e))?;
        s.note_submitted(seq);
        Ok(seq)
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
        let loader = self.backend.loader(api)?;
        let dev = DeviceId(s.device);
        // ACLRS_SANITIZE=race (crate::sanitize).
        self.race_check_args(s, &args);
        let args = loader.stage_args(dev, args).map_err(|e| AclError::from_hal(e, api))?;
        let r = self.submit_task(api, s, TaskDesc::Kernel { func, blocks, args, timeout_us });
        if r.is_err() {
            let _ = loader.unstage(dev, args);
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
        let loader = self.backend.loader(api)?;
        let dev = DeviceId(s.device);
        let batch = loader.stage_batch(dev, entries).map_err(|e| AclError::from_hal(e, api))?;
        let r = self.submit_task(api, s, TaskDesc::CopyBatch { batch });
        if r.is_err() {
            let _ = loader.unstage(dev, batch);
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
        let d = self.current_device(api)?;
        let h = self.streams_of(d).create_stream(api, self.drv(), flags)?;
        crate::state::stream_ctl::fire(h, crate::state::stream_ctl::STATE_CREATE_POST);
        Ok(h)
    }

    /// `aclrtDestroyStream` (waits for the stream's tasks) / `aclrtDestroyStreamForce` (CANN's
    /// §8.8: the handle dies at once; the stream's staged `HOST_TO_BUF` copies are waited for,
    /// as CANN flushes a stream's host-side pending copies before it recycles the queue; then
    /// the ready head task runs and every task behind it is dropped).
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
        let ds = self.owner_of(api, handle, Kind::Stream, "stream")?;
        let s = ds.stream(api, handle)?;
        if s.device != d && !s.is_default {
            return Err(AclError::new(
                ACL_ERROR_RT_STREAM_CONTEXT,
                format!(
                    "{api}: stream {handle:#x} belongs to device {}, not the current device {d}",
                    s.device
                ),
            ));
        }
        let s = ds.detach_stream(api, handle)?;
        crate::state::stream_ctl::fire(handle, crate::state::stream_ctl::STATE_DESTROY_PRE);
        if force {
            // CANN's step 3, forced or not: the stream's host-side pending copies finish. A
            // staged copy is a queued task here, so that is a wait for it (and for what is
            // ahead of it in the stream).
            if let Some(seq) = self.staging_pending_on(s.device, s.queue) {
                let _ = self.drv().wait(DeviceId(s.device), s.queue, seq, None);
            }
        }
        ds.teardown_stream(api, self.drv(), &s, force)
    }

    /// `aclrtSynchronizeStream(WithTimeout)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT` on timeout; the code of the first failed task.
    pub fn synchronize_stream(&self, api: &str, handle: u64, timeout: Timeout) -> Result<()> {
        use crate::state::stream::stream_flag;
        let (_, s) = self.stream(api, handle)?;
        if s.flags & (stream_flag::PERSISTENT | stream_flag::DEVICE_USE_ONLY | stream_flag::CPU_SCHEDULE) != 0
        {
            return Ok(());
        }
        Self::check_not_aborting(api, &s)?;
        let aborts = s.ext.aborts();
        let r = self.streams_of(s.device).sync_queue(
            api,
            self.drv(),
            &s,
            timeout,
            ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
        );
        let r = self.explain_fault(r, s.device, Some(s.queue.0));
        // Stream-ordered frees that are now complete, and pool memory above the threshold.
        self.pools_on_sync(s.device);
        if s.ext.aborts() != aborts {
            return Err(crate::api::stream_ctl::aborted(api));
        }
        if let Err(e) = &r {
            self.report_exception(s.device, s.queue.0, e.code());
        }
        r
    }

    /// Synchronises a stream before a synchronous copy that replaces an asynchronous one.
    pub(crate) fn sync_stream_obj(&self, api: &str, s: &StreamObj) -> Result<()> {
        let r = self.streams_of(s.device).sync_queue(
            api,
            self.drv(),
            s,
            Timeout::Forever,
            ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
        );
        self.explain_fault(r, s.device, Some(s.queue.0))
    }

    /// `aclrtSynchronizeDevice(WithTimeout)`: every stream of the current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT` on timeout; the first failure of any stream.
    pub fn synchronize_device(&self, api: &str, timeout: Timeout) -> Result<()> {
        let d = self.current_device(api)?;
        let r = self.streams_of(d).synchronize_all(api, self.drv(), timeout);
        let r = self.explain_fault(r, d, None);
        if matches!(&r, Err(e) if e.code() == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
            return r;
        }
        self.pools_on_sync(d);
        self.trim_spares(d);
        if let Err(e) = &r {
            self.report_exception(d, u32::MAX, e.code());
        }
        r
    }

    /// `aclrtStreamQuery`: whether every task submitted so far has finished.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a stream that is not live.
    pub fn stream_is_complete(&self, api: &str, handle: u64) -> Result<bool> {
        let (_, s) = self.stream(api, handle)?;
        self.streams_of(s.device).stream_is_complete(api, self.drv(), &s)
    }

    /// `aclrtSetStreamFailureMode`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a mode other than 0 or 1.
    pub fn set_failure_mode(&self, api: &str, handle: u64, mode: u64) -> Result<()> {
        let (_, s) = self.stream(api, handle)?;
        self.streams_of(s.device).set_failure_mode(api, self.drv(), &s, mode)
    }

    /// Makes `waiter` wait for point `seq` of the queue `target` of the same device (the
    /// pools' internal dependency, made after they release their lock).
    pub(crate) fn wait_for_point(
        &self,
        api: &str,
        waiter: &StreamObj,
        target: hal::QueueId,
        seq: u64,
    ) -> Result<()> {
        let at = self.streams_of(waiter.device).wait_for_point(api, self.drv(), waiter.queue, target, seq)?;
        waiter.note_submitted(at);
        Ok(())
    }

    /// `aclrtCreateEvent(WithFlag)` / `aclrtCreateEventExWithFlag`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for unknown flags or EXTERNAL combined with others;
    /// `ACL_ERROR_RT_NO_EVENT_RESOURCE` when the device has no event left.
    pub fn create_event(&self, api: &str, flags: u32, ex: bool) -> Result<u64> {
        let d = self.current_device(api)?;
        self.streams_of(d).create_event(api, self.drv(), flags, ex)
    }

    pub(crate) fn event(&self, api: &str, handle: u64) -> Result<Arc<EventObj>> {
        if handle == 0 {
            return Err(AclError::invalid(format!("{api}: event is NULL")));
        }
        self.owner_of(api, handle, Kind::Event, "event")?.event(api, handle)
    }

    /// `aclrtDestroyEvent`: never blocks.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL; `ACL_ERROR_RT_INVALID_HANDLE` for a dead event.
    pub fn destroy_event(&self, api: &str, handle: u64) -> Result<()> {
        if handle == 0 {
            return Err(AclError::invalid(format!("{api}: event is NULL")));
        }
        let ds = self.owner_of(api, handle, Kind::Event, "event")?;
        self.ipc_event_destroy(api, &*ds.event(api, handle)?, handle)?;
        ds.destroy_event(api, self.drv(), handle)
    }

    /// `aclrtRecordEvent`.
    ///
    /// # Errors
    ///
    /// Dead handles; an event and stream of different devices.
    pub fn record_event(&self, api: &str, event: u64, stream: u64) -> Result<()> {
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        same_device(api, &e, &s)?;
        if e.flags & crate::state::stream::event_flag::IPC != 0 {
            return self.ipc_event_record(api, event, &e, &s);
        }
        self.streams_of(s.device).record_event(api, self.drv(), &e, &s)
    }

    /// `aclrtStreamWaitEvent`.
    ///
    /// # Errors
    ///
    /// Dead handles; an event and stream of different devices.
    pub fn stream_wait_event(&self, api: &str, stream: u64, event: u64) -> Result<()> {
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        same_device(api, &e, &s)?;
        if e.flags & crate::state::stream::event_flag::IPC != 0 {
            return self.ipc_event_wait(api, event, &e, &s);
        }
        self.streams_of(s.device).stream_wait_event(api, self.drv(), &s, &e)
    }

    /// `aclrtResetEvent`.
    ///
    /// # Errors
    ///
    /// Dead handles; an event and stream of different devices.
    pub fn reset_event(&self, api: &str, event: u64, stream: u64) -> Result<()> {
        let e = self.event(api, event)?;
        let (_, s) = self.stream(api, stream)?;
        same_device(api, &e, &s)?;
        crate::api::ipc_event::refuse_ipc(api, &e)?;
        self.streams_of(s.device).reset_event(api, self.drv(), &e, &s)
    }

    /// Whether the event's captured tasks have all finished (`aclrtQueryEventStatus`).
    ///
    /// # Errors
    ///
    /// Dead handles.
    pub fn event_is_complete(&self, api: &str, event: u64) -> Result<bool> {
        let e = self.event(api, event)?;
        if e.flags & crate::state::stream::event_flag::IPC != 0 {
            return self.ipc_event_done(api, event, &e);
        }
        self.streams_of(e.device).event_is_complete(api, self.drv(), &e)
    }

    /// `aclrtSynchronizeEvent(WithTimeout)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT` on timeout; dead handles.
    pub fn synchronize_event(&self, api: &str, event: u64, timeout: Timeout) -> Result<()> {
        let e = self.event(api, event)?;
        if e.flags & crate::state::stream::event_flag::IPC != 0 {
            return self.ipc_event_sync(api, event, &e, timeout);
        }
        if self.streams_of(e.device).synchronize_event(api, self.drv(), &e, timeout)? {
            self.pools_on_sync(e.device);
        }
        Ok(())
    }

    /// The device-clock time (nanoseconds) at which the event's latest record ran.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when the event has not completed a record.
    pub fn event_timestamp_ns(&self, api: &str, event: u64) -> Result<u64> {
        let e = self.event(api, event)?;
        crate::api::ipc_event::refuse_ipc(api, &e)?;
        self.streams_of(e.device).event_timestamp_ns(api, self.drv(), event, &e)
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

    /// `aclrtLaunchHostFunc` / `aclrtLaunchCallback` after the C edge checked the pointers.
    ///
    /// # Errors
    ///
    /// Dead stream; `ACL_ERROR_RT_STREAM_NO_CB_REG` for a callback on a stream without a
    /// subscribed thread.
    pub(crate) fn launch_host_call(
        &self,
        l: &crate::tls::Local,
        api: &str,
        stream: u64,
        call: HostCall,
    ) -> Result<()> {
        self.with_submit_target_in(l, api, stream, |h, s| {
            Self::check_not_aborting(api, s)?;
            if let Some(r) = self.route_host_func(api, s, call) {
                return r;
            }
            self.streams_of(s.device).launch_host_call(api, self.drv(), h, s, call)
        })
    }

    /// Queues `report` for subscribed thread `thread` on whichever device it serves; the
    /// report back when it serves none.
    pub(crate) fn post_report(&self, thread: u64, report: Report) -> std::result::Result<(), Report> {
        let mut report = report;
        for ds in self.streams() {
            match ds.post_report(thread, report) {
                Ok(()) => return Ok(()),
                Err(r) => report = r,
            }
        }
        Err(report)
    }

    /// `aclrtSubscribeReport(threadId, stream)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_REPEAT_SUBSCRIBE` when the stream has a thread already;
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread serves another device.
    pub fn subscribe_report(&self, api: &str, thread: u64, stream: u64) -> Result<()> {
        let (h, s) = self.stream(api, stream)?;
        if let Some(other) = self.streams().find(|ds| ds.device() != s.device && ds.serves(thread)) {
            return Err(AclError::new(
                ACL_ERROR_RT_THREAD_SUBSCRIBE,
                format!(
                    "{api}: thread {thread} already serves device {}, not device {}",
                    other.device(),
                    s.device
                ),
            ));
        }
        self.streams_of(s.device).subscribe_report(api, thread, h)
    }

    /// `aclrtUnSubscribeReport(threadId, stream)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread does not serve the stream.
    pub fn unsubscribe_report(&self, api: &str, thread: u64, stream: u64) -> Result<()> {
        let (h, s) = self.stream(api, stream)?;
        self.streams_of(s.device).unsubscribe_report(api, thread, h)
    }

    /// Waits for a callback for `thread` (`aclrtProcessReport`) and returns it.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_THREAD_SUBSCRIBE` when the thread is not subscribed;
    /// `ACL_ERROR_RT_REPORT_TIMEOUT` when none arrives in time.
    pub(crate) fn next_report(&self, api: &str, thread: u64, timeout: Timeout) -> Result<Report> {
        let found = self.streams().find_map(|ds| ds.report_queue(thread).map(|q| (ds, q)));
        let (ds, q) = found.ok_or_else(|| {
            AclError::new(
                ACL_ERROR_RT_THREAD_SUBSCRIBE,
                format!("{api}: this thread ({thread}) is not subscribed to any stream"),
            )
        })?;
        ds.next_report(api, thread, &q, timeout)
    }

    /// Waits until every task submitted to a stream of device `d` has finished (device reset:
    /// the device's memory may go only after that).
    pub(crate) fn wait_device_idle(&self, d: u32) {
        self.streams_of(d).wait_idle(self.drv());
    }

    /// Lets the tasks of device `d` settle before its reset by `api` (see
    /// [`DeviceStreams::settle`]).
    pub(crate) fn settle_device(&self, api: &str, d: u32, force: bool) {
        self.streams_of(d).settle(api, self.drv(), force);
    }

    /// Forgets every stream, event and subscription of device `d` (its reset or
    /// `aclFinalize`); the device's queues go with the device.
    pub(crate) fn forget_device_handles(&self, d: u32) {
        for (h, _) in self.streams_of(d).live_streams() {
            crate::state::stream_ctl::fire(h, crate::state::stream_ctl::STATE_DESTROY_PRE);
        }
        self.streams_of(d).forget();
        self.device(d).notifies.forget();
    }
}
