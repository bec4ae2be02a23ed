//! The executor: the table of streams and events, the dependency graph between streams, and
//! the loop that picks the next task to run.
//!
//! This module owns stream and event creation and destruction, the round-robin choice of the
//! next ready stream, cross-stream waits, and the bookkeeping around running a task. It must not
//! know what a task does: a [`TaskRunner`] runs it (or the owner takes tasks with
//! [`Executor::take_ready`] and reports with [`Executor::finish`]). Per-stream ordering and
//! failure handling live in [`stream`](crate::stream).
//!
//! # Scheduling
//!
//! A stream is ready when its oldest unstarted item may run, that is when none of its items is
//! running. Ready streams wait in a first-in, first-out queue: [`Executor::take_ready`] pops the
//! front one, and [`Executor::finish`] puts the stream at the back if it has more work. This is
//! round-robin across streams with strict submission order inside each stream.
//!
//! Besides the caller's tasks a stream carries three kinds of internal items that the executor
//! completes itself, in order, without handing them out:
//!
//! - a *wait* for a point of another stream (from [`Executor::submit_wait`] or
//!   [`Executor::wait_event`]): the stream is blocked until that point has completed;
//! - an event *record*: completing it stamps the event with the executor's clock;
//! - an event *reset*: completing it forgets the event's recorded point.
//!
//! A blocked stream is parked and re-examined whenever any task finishes (or when the owner
//! calls [`Executor::recheck`]), so a wait costs nothing while it waits.
//!
//! # The dependency graph
//!
//! Cross-stream waits and completed sequence numbers go into a [`DepGraph`], the same type the
//! runtime keeps per device; it answers [`StreamOrder`] (see [`graph`](crate::graph)).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use hal::{ErrorKind, TaskStatus};
use mm::order::{StreamOrder, StreamPoint};

use crate::error::{Error, Result};
use crate::event::{EventId, EventState, EventStatus};
use crate::graph::DepGraph;
use crate::stream::{FailureMode, Stream, StreamId};

/// Runs one task on behalf of the executor.
///
/// The software NPU implements it over its engines; device firmware over the hardware.
pub trait TaskRunner<T> {
    /// Runs `task`, the task numbered `seq` on `stream`, to completion.
    ///
    /// # Errors
    ///
    /// The driver error kind the task failed with; the executor records it for the stream.
    fn run(&mut self, stream: StreamId, seq: u64, task: &T) -> core::result::Result<(), ErrorKind>;
}

impl<T, R: TaskRunner<T> + ?Sized> TaskRunner<T> for &mut R {
    fn run(&mut self, stream: StreamId, seq: u64, task: &T) -> core::result::Result<(), ErrorKind> {
        (**self).run(stream, seq, task)
    }
}

/// One entry of a stream's ring: the caller's task or an item the executor completes itself.
#[derive(Debug)]
pub(crate) enum Item<T> {
    /// A task handed to the runner.
    Task(T),
    /// Wait until the point has completed.
    Wait(StreamPoint),
    /// Stamp the event (if its record generation still matches).
    Record(EventId, u64),
    /// Forget the event's recorded point (if its record generation still matches).
    Reset(EventId, u64),
}

/// Reads a monotonic clock in nanoseconds; used to stamp events.
pub type Clock = fn() -> u64;

fn no_clock() -> u64 {
    0
}

/// Streams of tasks and events, the waits between them, and the round-robin choice of what
/// runs next.
///
/// The executor is plain data driven through `&mut self`; it does no locking and never blocks.
/// Its owner (for example the software NPU's scheduler threads, behind a mutex) serialises
/// access. Several tasks of different streams may be running at once (taken and not yet
/// finished), but never two of one stream.
///
/// # Invariants
///
/// - A ready stream's id is in `ready` or in `parked` exactly once; a stream that is not ready
///   is in neither.
/// - `unfinished` is the sum of the streams' queued and running items.
/// - `graph` tracks every stream, with its completed sequence as the stream has it.
#[derive(Debug)]
pub struct Executor<T> {
    streams: BTreeMap<StreamId, Stream<Item<T>>>,
    ready: VecDeque<StreamId>,
    parked: Vec<StreamId>,
    max_streams: usize,
    next_id: u32,
    unfinished: usize,
    events: BTreeMap<EventId, EventState>,
    max_events: usize,
    next_event: u32,
    graph: DepGraph,
    clock: Clock,
    finished_items: u64,
}

/// The most events an executor holds by default (the per-device limit of CANN's A2/A3/950).
pub const DEFAULT_MAX_EVENTS: usize = 65_536;

impl<T> Executor<T> {
    /// Creates an executor that holds at most `max_streams` streams at once, without a clock
    /// (event timestamps read 0).
    pub fn new(max_streams: usize) -> Self {
        Self::with_clock(max_streams, no_clock)
    }

    /// Creates an executor whose events are stamped with `clock` (nanoseconds, monotonic).
    pub fn with_clock(max_streams: usize, clock: Clock) -> Self {
        Self {
            streams: BTreeMap::new(),
            ready: VecDeque::new(),
            parked: Vec::new(),
            max_streams,
            next_id: 0,
            unfinished: 0,
            events: BTreeMap::new(),
            max_events: DEFAULT_MAX_EVENTS,
            next_event: 0,
            graph: DepGraph::new(),
            clock,
            finished_items: 0,
        }
    }

    /// Creates a stream whose ring holds `capacity` unfinished items.
    ///
    /// The ring is allocated now, so submission never allocates. Stream ids count up from 0
    /// and are never reused.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `capacity` is zero or the ring cannot be allocated.
    /// - [`Error::TooManyStreams`] when `max_streams` streams exist, or the ids are exhausted.
    pub fn create_stream(&mut self, capacity: usize) -> Result<StreamId> {
        if self.streams.len() >= self.max_streams {
            return Err(Error::TooManyStreams);
        }
        let next = self.next_id.checked_add(1).ok_or(Error::TooManyStreams)?;
        let stream = Stream::new(capacity)?;
        let id = StreamId(self.next_id);
        self.next_id = next;
        self.streams.insert(id, stream);
        self.graph.add_stream(id.0);
        Ok(id)
    }

    /// Destroys an idle stream, dropping any error it had not reported.
    ///
    /// A stream with queued or running tasks cannot be destroyed; synchronise it (run its
    /// tasks to completion) or [`abort`](Self::abort) it first. Points of a destroyed stream
    /// count as complete from then on.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id; [`Error::InvalidArgument`] when the stream has
    /// unfinished tasks.
    pub fn destroy_stream(&mut self, id: StreamId) -> Result<()> {
        let stream = self.streams.get(&id).ok_or(Error::NoSuchStream)?;
        if stream.unfinished() > 0 {
            return Err(Error::InvalidArgument);
        }
        self.streams.remove(&id);
        self.graph.remove_stream(id.0);
        // Waits on the destroyed stream are satisfied now.
        self.unpark();
        Ok(())
    }

    /// Drops every queued (not yet started) item of stream `id`, counting them as finished
    /// without running them, and returns how many were dropped. A running task finishes
    /// normally.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn abort(&mut self, id: StreamId) -> Result<usize> {
        let stream = self.streams.get_mut(&id).ok_or(Error::NoSuchStream)?;
        let dropped = stream.discard_queued();
        self.unfinished -= dropped;
        // INVARIANT: the stream has no queued item now, so it is not ready.
        self.ready.retain(|&s| s != id);
        self.parked.retain(|&s| s != id);
        self.prune_edges(id);
        self.unpark();
        Ok(dropped)
    }

    /// Sets what a failure on stream `id` does to the tasks queued behind it, from now on.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn set_failure_mode(&mut self, id: StreamId, mode: FailureMode) -> Result<()> {
        self.stream_mut(id)?.set_mode(mode);
        Ok(())
    }

    fn push_item(&mut self, id: StreamId, item: Item<T>) -> Result<u64> {
        let stream = self.streams.get_mut(&id).ok_or(Error::NoSuchStream)?;
        let was_ready = stream.is_ready();
        let seq = stream.push(item)?;
        self.unfinished += 1;
        if !was_ready && stream.is_ready() {
            // INVARIANT: the stream just became ready.
            self.ready.push_back(id);
        }
        Ok(seq)
    }

    /// Appends `task` to stream `id` and returns its sequence number (1 for a stream's first).
    ///
    /// # Errors
    ///
    /// - [`Error::NoSuchStream`] for an unknown id.
    /// - [`Error::Full`] when the stream already has `capacity` unfinished items; submit again
    ///   after one finishes.
    /// - [`Error::InvalidArgument`] when the stream's sequence numbers are exhausted.
    pub fn submit(&mut self, id: StreamId, task: T) -> Result<u64> {
        self.push_item(id, Item::Task(task))
    }

    /// Makes stream `id` wait, after everything submitted to it so far, until `target` has
    /// completed; returns the wait's sequence number.
    ///
    /// A target on `id` itself or on a stream that no longer exists is already satisfied by
    /// then; the wait still takes a sequence number and completes in order.
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit); nothing changes on error.
    pub fn submit_wait(&mut self, id: StreamId, target: StreamPoint) -> Result<u64> {
        let at = self.push_item(id, Item::Wait(target))?;
        self.graph.add_wait(id.0, at, target);
        Ok(at)
    }

    /// Takes the next task to run and marks it running.
    ///
    /// The task is the oldest unstarted one of the ready stream that has waited longest, so
    /// tasks of one stream start in order and one at a time, and streams take turns. Internal
    /// items (waits that are satisfied, event records and resets) met on the way are completed
    /// here. Returns `None` when no task may start.
    pub fn take_ready(&mut self) -> Option<(StreamId, u64, T)> {
        self.take_ready_if(|_| true)
    }

    /// Like [`take_ready`](Self::take_ready), but a task starts only if `may_start` accepts it;
    /// a refused stream is parked until the next [`finish`](Self::finish) or
    /// [`recheck`](Self::recheck) (for tasks that wait on something outside the executor, such
    /// as a value in memory).
    pub fn take_ready_if(&mut self, mut may_start: impl FnMut(&T) -> bool) -> Option<(StreamId, u64, T)> {
        while let Some(id) = self.ready.pop_front() {
            let Some(stream) = self.streams.get(&id) else { continue };
            if !stream.is_ready() {
                continue;
            }
            let runnable = match stream.head() {
                Some(Item::Task(t)) => may_start(t),
                Some(Item::Wait(p)) => {
                    let p = *p;
                    p.stream == id.0 || self.is_complete(p)
                }
                Some(Item::Record(..) | Item::Reset(..)) => true,
                None => false,
            };
            if !runnable {
                // INVARIANT: a ready stream that cannot start moves from `ready` to `parked`.
                self.parked.push(id);
                continue;
            }
            let stream = self.streams.get_mut(&id)?;
            let (seq, item) = stream.start()?;
            match item {
                Item::Task(task) => return Some((id, seq, task)),
                Item::Wait(_) => {}
                Item::Record(ev, generation) => {
                    let now = (self.clock)();
                    if let Some(e) = self.events.get_mut(&ev) {
                        e.stamp(generation, now);
                    }
                }
                Item::Reset(ev, generation) => {
                    if let Some(e) = self.events.get_mut(&ev) {
                        e.reset(generation);
                    }
                }
            }
            // An internal item just started: finish it at once (it cannot be refused).
            let done = self.finish_inner(id, seq, TaskStatus::Ok);
            debug_assert_eq!(done, Ok(()));
        }
        None
    }

    /// Moves every parked stream back to the ready queue, to be examined again by the next
    /// [`take_ready`](Self::take_ready).
    pub fn recheck(&mut self) {
        self.unpark();
    }

    /// How many items (tasks and internal items) have finished so far, wrapping; a change
    /// tells an owner that someone waiting for completion should look again (internal items
    /// finish inside [`take_ready`](Self::take_ready)).
    pub fn finished_items(&self) -> u64 {
        self.finished_items
    }

    /// Whether some stream waits in the ready queue (a hint that another worker could start
    /// something now).
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Whether some stream is parked (waiting on another stream or refused by a gate).
    pub fn has_parked(&self) -> bool {
        !self.parked.is_empty()
    }

    fn unpark(&mut self) {
        // INVARIANT: parked streams move to the back of `ready`, keeping their order.
        self.ready.extend(self.parked.drain(..));
    }

    fn prune_edges(&mut self, id: StreamId) {
        if let Some(s) = self.streams.get(&id) {
            self.graph.note_completed(id.0, s.completed());
        }
    }

    fn finish_inner(&mut self, id: StreamId, seq: u64, status: TaskStatus) -> Result<()> {
        let stream = self.streams.get_mut(&id).ok_or(Error::NoSuchStream)?;
        let finished = stream.finish(seq, status)?;
        self.unfinished -= finished;
        self.finished_items = self.finished_items.wrapping_add(1);
        if stream.is_ready() {
            // INVARIANT: the stream was running, so it was neither ready nor parked.
            self.ready.push_back(id);
        }
        self.prune_edges(id);
        // Progress on this stream may satisfy waits of parked streams.
        self.unpark();
        Ok(())
    }

    /// Completes the running task `seq` of stream `id` with `status`.
    ///
    /// A failure is recorded as the stream's error unless one is already pending. In
    /// [`FailureMode::StopOnFailure`] every item queued behind the failed one is also finished
    /// as failed without running; items submitted afterwards run normally.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id; [`Error::InvalidArgument`] when `seq` is not
    /// the stream's running task. Nothing changes on error.
    pub fn finish(&mut self, id: StreamId, seq: u64, status: TaskStatus) -> Result<()> {
        self.finish_inner(id, seq, status)
    }

    /// Runs ready tasks with `runner` until no stream is ready, and returns how many ran.
    ///
    /// Tasks skipped because of [`FailureMode::StopOnFailure`] and internal items do not count.
    pub fn run_once<R: TaskRunner<T>>(&mut self, runner: &mut R) -> usize {
        let mut ran = 0;
        while let Some((id, seq, task)) = self.take_ready() {
            let status = match runner.run(id, seq, &task) {
                Ok(()) => TaskStatus::Ok,
                Err(kind) => TaskStatus::Failed(kind),
            };
            // The task was just taken, so finishing it cannot fail.
            let finished = self.finish(id, seq, status);
            debug_assert_eq!(finished, Ok(()));
            ran += 1;
        }
        ran
    }

    /// The highest sequence number of stream `id` that has finished (0 before any).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn completed_seq(&self, id: StreamId) -> Result<u64> {
        Ok(self.stream(id)?.completed())
    }

    /// Whether stream `id` takes one more item now (a task, a wait, an event record or reset)
    /// instead of answering [`Error::Full`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn has_room(&self, id: StreamId) -> Result<bool> {
        Ok(self.stream(id)?.has_room())
    }

    /// The highest sequence number handed out on stream `id` (0 before any).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn submitted_seq(&self, id: StreamId) -> Result<u64> {
        Ok(self.stream(id)?.submitted())
    }

    /// Takes the first failure on stream `id` since the last call, clearing it.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn take_error(&mut self, id: StreamId) -> Result<Option<ErrorKind>> {
        Ok(self.stream_mut(id)?.take_error())
    }

    /// Whether no item is queued or running on any stream.
    pub fn is_idle(&self) -> bool {
        self.unfinished == 0
    }

    /// Creates an event (not recorded yet).
    ///
    /// # Errors
    ///
    /// [`Error::TooManyStreams`] when the event table is full or the ids are exhausted.
    pub fn create_event(&mut self) -> Result<EventId> {
        if self.events.len() >= self.max_events {
            return Err(Error::TooManyStreams);
        }
        let next = self.next_event.checked_add(1).ok_or(Error::TooManyStreams)?;
        let id = EventId(self.next_event);
        self.next_event = next;
        self.events.insert(id, EventState::default());
        Ok(id)
    }

    /// Destroys an event. Records and resets of it still queued complete as no-ops; waits
    /// already submitted keep waiting for the point they captured.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn destroy_event(&mut self, ev: EventId) -> Result<()> {
        self.events.remove(&ev).map(|_| ()).ok_or(Error::NoSuchEvent)
    }

    /// Records `ev` on stream `id`: the event now stands for everything submitted to the
    /// stream up to and including the record itself, whose sequence number is returned.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`], or as [`submit`](Self::submit); nothing changes on error.
    pub fn record_event(&mut self, ev: EventId, id: StreamId) -> Result<u64> {
        let generation = self.events.get(&ev).ok_or(Error::NoSuchEvent)?.next_generation();
        let seq = self.push_item(id, Item::Record(ev, generation))?;
        if let Some(e) = self.events.get_mut(&ev) {
            e.record(StreamPoint { stream: id.0, seq }, generation);
        }
        Ok(seq)
    }

    /// Makes stream `id` wait for the point `ev` stands for now. Returns the wait's sequence
    /// number, or `None` when the event was never recorded (there is nothing to wait for).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`], or as [`submit`](Self::submit); nothing changes on error.
    pub fn wait_event(&mut self, id: StreamId, ev: EventId) -> Result<Option<u64>> {
        match self.events.get(&ev).ok_or(Error::NoSuchEvent)?.point() {
            Some(p) => self.submit_wait(id, p).map(Some),
            None => {
                self.stream(id)?;
                Ok(None)
            }
        }
    }

    /// Resets `ev` in the order of stream `id`: when the reset runs, the event forgets its
    /// point (unless it was recorded again after this call). Returns the reset's sequence.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`], or as [`submit`](Self::submit); nothing changes on error.
    pub fn reset_event(&mut self, ev: EventId, id: StreamId) -> Result<u64> {
        let generation = self.events.get(&ev).ok_or(Error::NoSuchEvent)?.generation();
        self.push_item(id, Item::Reset(ev, generation))
    }

    /// The status of `ev`.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn event_status(&self, ev: EventId) -> Result<EventStatus> {
        let e = self.events.get(&ev).ok_or(Error::NoSuchEvent)?;
        Ok(match e.point() {
            None => EventStatus::NotRecorded,
            Some(p) if self.is_complete(p) => EventStatus::Complete,
            Some(_) => EventStatus::Pending,
        })
    }

    /// The point `ev` stands for, if it is recorded.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn event_point(&self, ev: EventId) -> Result<Option<StreamPoint>> {
        Ok(self.events.get(&ev).ok_or(Error::NoSuchEvent)?.point())
    }

    /// The clock reading (nanoseconds) taken when the event's latest record ran, if it has.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn event_timestamp(&self, ev: EventId) -> Result<Option<u64>> {
        Ok(self.events.get(&ev).ok_or(Error::NoSuchEvent)?.timestamp_ns())
    }

    fn stream(&self, id: StreamId) -> Result<&Stream<Item<T>>> {
        self.streams.get(&id).ok_or(Error::NoSuchStream)
    }

    fn stream_mut(&mut self, id: StreamId) -> Result<&mut Stream<Item<T>>> {
        self.streams.get_mut(&id).ok_or(Error::NoSuchStream)
    }
}

impl<T> StreamOrder for Executor<T> {
    fn is_complete(&self, point: StreamPoint) -> bool {
        // A stream that no longer exists was idle when destroyed (or aborted): all of it is done.
        self.streams.get(&StreamId(point.stream)).is_none_or(|s| s.completed() >= point.seq)
    }

    fn is_ordered_before(&self, point: StreamPoint, stream: u32) -> bool {
        if self.is_complete(point) {
            return true;
        }
        let Some(target) = self.streams.get(&StreamId(point.stream)) else { return true };
        if point.seq > target.submitted() {
            // A point in the future of its stream is ordered before nothing.
            return false;
        }
        if point.stream == stream {
            return true;
        }
        self.graph.is_ordered_before(point, stream)
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    /// Records what ran; fails tasks whose value is negative.
    #[derive(Default)]
    struct Recorder {
        ran: Vec<(StreamId, u64, i32)>,
    }

    impl TaskRunner<i32> for Recorder {
        fn run(&mut self, stream: StreamId, seq: u64, task: &i32) -> core::result::Result<(), ErrorKind> {
            self.ran.push((stream, seq, *task));
            if *task < 0 {
                Err(ErrorKind::DeviceFault)
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn in_order_within_a_stream() {
        let mut ex = Executor::new(4);
        let s = ex.create_stream(8).unwrap();
        assert_eq!(s, StreamId(0));
        for t in 10..15 {
            ex.submit(s, t).unwrap();
        }
        // Only one task of a stream runs at a time.
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, seq, task), (s, 1, 10));
        assert!(ex.take_ready().is_none());
        ex.finish(s, 1, TaskStatus::Ok).unwrap();
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 4);
        let order: Vec<_> = r.ran.iter().map(|&(_, seq, t)| (seq, t)).collect();
        assert_eq!(order, [(2, 11), (3, 12), (4, 13), (5, 14)]);
        assert_eq!(ex.completed_seq(s), Ok(5));
        assert!(ex.is_idle());
    }

    #[test]
    fn round_robin_across_streams() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        for t in 0..3 {
            ex.submit(a, t).unwrap();
        }
        for t in 100..102 {
            ex.submit(b, t).unwrap();
        }
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 5);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [0, 100, 1, 101, 2]);
        // Two streams may run at once.
        ex.submit(a, 7).unwrap();
        ex.submit(b, 8).unwrap();
        assert_eq!(ex.take_ready().map(|t| t.0), Some(a));
        assert_eq!(ex.take_ready().map(|t| t.0), Some(b));
        assert!(!ex.is_idle());
    }

    #[test]
    fn back_pressure() {
        let mut ex = Executor::new(1);
        let s = ex.create_stream(2).unwrap();
        assert_eq!(ex.submit(s, 1), Ok(1));
        assert_eq!(ex.has_room(s), Ok(true));
        assert_eq!(ex.submit(s, 2), Ok(2));
        assert_eq!(ex.has_room(s), Ok(false));
        assert_eq!(ex.submit(s, 3), Err(Error::Full));
        // A running task still occupies its slot.
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.submit(s, 3), Err(Error::Full));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert_eq!(ex.has_room(s), Ok(true));
        assert_eq!(ex.submit(s, 3), Ok(3));
        assert_eq!(ex.submitted_seq(s), Ok(3));
        assert_eq!(ex.completed_seq(s), Ok(1));
    }

    #[test]
    fn continue_mode_runs_everything() {
        let mut ex = Executor::new(1);
        let s = ex.create_stream(4).unwrap();
        for t in [1, -2, 3, -4] {
            ex.submit(s, t).unwrap();
        }
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 4);
        assert_eq!(ex.completed_seq(s), Ok(4));
        // The first failure is reported once.
        assert_eq!(ex.take_error(s), Ok(Some(ErrorKind::DeviceFault)));
        assert_eq!(ex.take_error(s), Ok(None));
    }

    #[test]
    fn stop_on_failure_skips_queued_tasks() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(4).unwrap();
        let other = ex.create_stream(4).unwrap();
        ex.set_failure_mode(s, FailureMode::StopOnFailure).unwrap();
        for t in [1, -2, 3, 4] {
            ex.submit(s, t).unwrap();
        }
        ex.submit(other, 9).unwrap();
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 3);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [1, 9, -2]);
        assert_eq!(ex.completed_seq(s), Ok(4));
        assert!(ex.is_idle());
        assert_eq!(ex.take_error(s), Ok(Some(ErrorKind::DeviceFault)));
        assert_eq!(ex.take_error(other), Ok(None));
        // Tasks submitted after the failure run.
        assert_eq!(ex.submit(s, 5), Ok(5));
        assert_eq!(ex.run_once(&mut r), 1);
        assert_eq!(ex.completed_seq(s), Ok(5));
    }

    #[test]
    fn stream_lifecycle_and_errors() {
        let mut ex: Executor<i32> = Executor::new(2);
        assert_eq!(ex.create_stream(0), Err(Error::InvalidArgument));
        let a = ex.create_stream(1).unwrap();
        let b = ex.create_stream(1).unwrap();
        assert_eq!(ex.create_stream(1), Err(Error::TooManyStreams));
        ex.submit(a, 1).unwrap();
        assert_eq!(ex.destroy_stream(a), Err(Error::InvalidArgument));
        ex.destroy_stream(b).unwrap();
        let c = ex.create_stream(1).unwrap();
        assert_eq!(c, StreamId(2));
        let gone = b;
        assert_eq!(ex.submit(gone, 1), Err(Error::NoSuchStream));
        assert_eq!(ex.destroy_stream(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.completed_seq(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.submitted_seq(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.take_error(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.set_failure_mode(gone, FailureMode::Continue), Err(Error::NoSuchStream));
        assert_eq!(ex.finish(gone, 1, TaskStatus::Ok), Err(Error::NoSuchStream));
        // Finishing a task that is not running is rejected.
        assert_eq!(ex.finish(a, 1, TaskStatus::Ok), Err(Error::InvalidArgument));
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.finish(a, seq + 1, TaskStatus::Ok), Err(Error::InvalidArgument));
        ex.finish(a, seq, TaskStatus::Ok).unwrap();
        ex.destroy_stream(a).unwrap();
        assert!(ex.is_idle());
    }

    fn pt(stream: StreamId, seq: u64) -> StreamPoint {
        StreamPoint { stream: stream.0, seq }
    }

    #[test]
    fn a_wait_blocks_until_the_other_stream_reaches_the_point() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        let sa = ex.submit(a, 1).unwrap();
        assert_eq!(ex.submit_wait(b, pt(a, sa)), Ok(1));
        ex.submit(b, 2).unwrap();
        // B's task waits behind the wait: only A's task can start.
        let (id, seq, _) = ex.take_ready().unwrap();
        assert_eq!(id, a);
        assert!(ex.take_ready().is_none());
        assert!(ex.has_parked());
        assert!(ex.is_ordered_before(pt(a, 1), b.0), "B waits on (A, 1)");
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, seq, task), (b, 2, 2));
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        assert!(ex.is_idle());
    }

    #[test]
    fn waits_on_own_stream_or_gone_streams_are_free() {
        let mut ex: Executor<i32> = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        ex.submit_wait(a, pt(a, 5)).unwrap();
        ex.submit_wait(a, pt(b, 0)).unwrap();
        ex.destroy_stream(b).unwrap();
        ex.submit_wait(a, pt(b, 9)).unwrap();
        assert!(ex.take_ready().is_none());
        assert!(ex.is_idle());
        assert_eq!(ex.completed_seq(a), Ok(3));
    }

    #[test]
    fn events_record_wait_reset_and_stamp() {
        fn clock() -> u64 {
            1234
        }
        let mut ex = Executor::with_clock(4, clock);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        let ev = ex.create_event().unwrap();
        assert_eq!(ex.event_status(ev), Ok(EventStatus::NotRecorded));
        // Waiting on a never-recorded event submits nothing.
        assert_eq!(ex.wait_event(b, ev), Ok(None));
        ex.submit(a, 1).unwrap();
        assert_eq!(ex.record_event(ev, a), Ok(2));
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Pending));
        assert_eq!(ex.event_point(ev), Ok(Some(pt(a, 2))));
        assert_eq!(ex.wait_event(b, ev), Ok(Some(1)));
        ex.submit(b, 3).unwrap();
        assert!(ex.is_ordered_before(pt(a, 2), b.0));
        assert!(!ex.is_ordered_before(pt(a, 2), 99));
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 2);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [1, 3], "B's task ran after A's record");
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete));
        assert_eq!(ex.event_timestamp(ev), Ok(Some(1234)));
        ex.reset_event(ev, a).unwrap();
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete), "reset runs in stream order");
        ex.run_once(&mut r);
        assert_eq!(ex.event_status(ev), Ok(EventStatus::NotRecorded));
        ex.destroy_event(ev).unwrap();
        assert_eq!(ex.event_status(ev), Err(Error::NoSuchEvent));
        assert_eq!(ex.record_event(ev, a), Err(Error::NoSuchEvent));
        assert_eq!(ex.destroy_event(ev), Err(Error::NoSuchEvent));
    }

    #[test]
    fn ordering_is_transitive_through_waits() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(8).unwrap();
        let b = ex.create_stream(8).unwrap();
        let c = ex.create_stream(8).unwrap();
        ex.submit(a, 1).unwrap();
        ex.submit(a, 2).unwrap();
        // B waits for (A, 1); C waits for (B, 1).
        ex.submit_wait(b, pt(a, 1)).unwrap();
        ex.submit_wait(c, pt(b, 1)).unwrap();
        assert!(ex.is_ordered_before(pt(a, 1), c.0));
        assert!(!ex.is_ordered_before(pt(a, 2), c.0), "C waits only for A's first task");
        assert!(!ex.is_ordered_before(pt(c, 1), a.0));
        assert!(ex.is_ordered_before(pt(a, 2), a.0), "same stream");
        assert!(!ex.is_ordered_before(pt(a, 3), a.0), "a future point");
        assert!(!ex.is_complete(pt(a, 1)));
        let mut r = Recorder::default();
        ex.run_once(&mut r);
        assert!(ex.is_complete(pt(a, 2)) && ex.is_ordered_before(pt(a, 2), c.0));
        assert!(ex.graph.edge_count() == 0, "completed waits leave no edges");
    }

    #[test]
    fn abort_drops_queued_work() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(8).unwrap();
        for t in 0..5 {
            ex.submit(s, t).unwrap();
        }
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.abort(s), Ok(4));
        assert!(!ex.is_idle(), "the running task is still running");
        assert_eq!(ex.submit(s, 9), Ok(6));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(s), Ok(5));
        let (_, seq, task) = ex.take_ready().unwrap();
        assert_eq!((seq, task), (6, 9));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert!(ex.is_idle());
        assert_eq!(ex.abort(StreamId(77)), Err(Error::NoSuchStream));
        ex.submit(s, 1).unwrap();
        assert_eq!(ex.abort(s), Ok(1));
        assert!(ex.is_idle());
        assert_eq!(ex.completed_seq(s), Ok(7));
        ex.destroy_stream(s).unwrap();
    }

    #[test]
    fn a_gate_parks_a_stream_until_recheck() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(4).unwrap();
        ex.submit(s, 5).unwrap();
        assert!(ex.take_ready_if(|&t| t != 5).is_none());
        assert!(ex.has_parked());
        assert!(ex.take_ready().is_none(), "parked until recheck");
        ex.recheck();
        assert_eq!(ex.take_ready().map(|t| t.2), Some(5));
    }
}
