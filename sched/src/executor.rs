//! The executor: the table of streams and the loop that picks the next task to run.
//!
//! This module owns stream creation and destruction, the round-robin choice of the next ready
//! stream, and the bookkeeping around running a task. It must not know what a task does: a
//! [`TaskRunner`] runs it. Per-stream ordering and failure handling live in
//! [`stream`](crate::stream).
//!
//! # Scheduling
//!
//! A stream is ready when its oldest unstarted task may run, that is when none of its tasks is
//! running. Ready streams wait in a first-in, first-out queue: [`Executor::take_ready`] pops the
//! front one, and [`Executor::finish`] puts the stream at the back if it has more work. This is
//! round-robin across streams with strict submission order inside each stream. Every call is
//! O(log s) for `s` streams (a `BTreeMap` lookup) plus O(1) queue work, except that a failure in
//! [`FailureMode::StopOnFailure`] drops the stream's queued tasks in O(queued).

use alloc::collections::{BTreeMap, VecDeque};

use hal::{ErrorKind, TaskStatus};

use crate::error::{Error, Result};
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

/// Streams of tasks and the round-robin choice of what runs next.
///
/// The executor is plain data driven through `&mut self`; it does no locking and never blocks.
/// Its owner (for example the software NPU's scheduler thread, behind a mutex) serialises
/// access. Several tasks of different streams may be running at once (taken and not yet
/// finished), but never two of one stream.
///
/// # Invariants
///
/// - A stream id is in `ready` exactly once if that stream is ready, and not at all otherwise.
/// - `unfinished` is the sum of the streams' queued and running tasks.
#[derive(Debug)]
pub struct Executor<T> {
    streams: BTreeMap<StreamId, Stream<T>>,
    ready: VecDeque<StreamId>,
    max_streams: usize,
    next_id: u32,
    unfinished: usize,
}

impl<T> Executor<T> {
    /// Creates an executor that holds at most `max_streams` streams at once.
    pub fn new(max_streams: usize) -> Self {
        Self { streams: BTreeMap::new(), ready: VecDeque::new(), max_streams, next_id: 0, unfinished: 0 }
    }

    /// Creates a stream whose ring holds `capacity` unfinished tasks.
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
        Ok(id)
    }

    /// Destroys an idle stream, dropping any error it had not reported.
    ///
    /// A stream with queued or running tasks cannot be destroyed; synchronise it (run its
    /// tasks to completion) first.
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
        Ok(())
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

    /// Appends `task` to stream `id` and returns its sequence number (1 for a stream's first).
    ///
    /// # Errors
    ///
    /// - [`Error::NoSuchStream`] for an unknown id.
    /// - [`Error::Full`] when the stream already has `capacity` unfinished tasks; submit again
    ///   after one finishes.
    /// - [`Error::InvalidArgument`] when the stream's sequence numbers are exhausted.
    pub fn submit(&mut self, id: StreamId, task: T) -> Result<u64> {
        let stream = self.streams.get_mut(&id).ok_or(Error::NoSuchStream)?;
        let was_ready = stream.is_ready();
        let seq = stream.push(task)?;
        self.unfinished += 1;
        if !was_ready && stream.is_ready() {
            // INVARIANT: the stream just became ready.
            self.ready.push_back(id);
        }
        Ok(seq)
    }

    /// Takes the next task to run and marks it running.
    ///
    /// The task is the oldest unstarted one of the ready stream that has waited longest, so
    /// tasks of one stream start in order and one at a time, and streams take turns. Returns
    /// `None` when no stream is ready.
    pub fn take_ready(&mut self) -> Option<(StreamId, u64, T)> {
        while let Some(id) = self.ready.pop_front() {
            // A stream in `ready` exists and is ready (by the invariant); skip it otherwise.
            if let Some((seq, task)) = self.streams.get_mut(&id).and_then(Stream::start) {
                return Some((id, seq, task));
            }
        }
        None
    }

    /// Completes the running task `seq` of stream `id` with `status`.
    ///
    /// A failure is recorded as the stream's error unless one is already pending. In
    /// [`FailureMode::StopOnFailure`] every task queued behind the failed one is also finished
    /// as failed without running; tasks submitted afterwards run normally.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id; [`Error::InvalidArgument`] when `seq` is not
    /// the stream's running task. Nothing changes on error.
    pub fn finish(&mut self, id: StreamId, seq: u64, status: TaskStatus) -> Result<()> {
        let stream = self.streams.get_mut(&id).ok_or(Error::NoSuchStream)?;
        let finished = stream.finish(seq, status)?;
        self.unfinished -= finished;
        if stream.is_ready() {
            // INVARIANT: the stream was running, so it was not in `ready`; now it is ready.
            self.ready.push_back(id);
        }
        Ok(())
    }

    /// Runs ready tasks with `runner` until no stream is ready, and returns how many ran.
    ///
    /// Tasks skipped because of [`FailureMode::StopOnFailure`] do not count.
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

    /// Whether no task is queued or running on any stream.
    pub fn is_idle(&self) -> bool {
        self.unfinished == 0
    }

    fn stream(&self, id: StreamId) -> Result<&Stream<T>> {
        self.streams.get(&id).ok_or(Error::NoSuchStream)
    }

    fn stream_mut(&mut self, id: StreamId) -> Result<&mut Stream<T>> {
        self.streams.get_mut(&id).ok_or(Error::NoSuchStream)
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
        assert_eq!(ex.submit(s, 2), Ok(2));
        assert_eq!(ex.submit(s, 3), Err(Error::Full));
        // A running task still occupies its slot.
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.submit(s, 3), Err(Error::Full));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
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
}
