//! One stream: a bounded ring of tasks run in submission order.
//!
//! This module owns a stream's sequence numbers, its ring of unfinished tasks, its failure mode
//! and its pending error. It must not decide which stream runs next (that is the executor's
//! job) and must not run tasks.

use alloc::collections::VecDeque;

use hal::{ErrorKind, TaskStatus};

use crate::error::{Error, Result};

/// Names one stream of an [`Executor`](crate::Executor); ids are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u32);

/// What a stream does with its queued tasks when one of its tasks fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailureMode {
    /// Record the failure and keep running the stream's later tasks (the default, as in CANN).
    #[default]
    Continue,
    /// Record the failure and fail every task queued behind it without running them.
    StopOnFailure,
}

/// The state of one stream.
///
/// # Invariants
///
/// - `running` is `Some(completed + 1)` or `None`; the task at `queued[i]` has sequence number
///   `completed + 1 + i`, plus one if a task is running.
/// - `queued.len()` plus one if a task is running is at most `capacity`, and
///   `completed + that sum == submitted`, except while `discarded_behind_running` is set: then
///   the discarded tasks are counted as finished although `completed` only reaches them when the
///   running task finishes.
#[derive(Debug)]
pub(crate) struct Stream<T> {
    /// Tasks submitted but not started, oldest first.
    queued: VecDeque<T>,
    /// Sequence number of the task taken for running, if any.
    running: Option<u64>,
    /// Most unfinished (queued or running) tasks the ring holds.
    capacity: usize,
    /// Highest sequence number handed out.
    submitted: u64,
    /// Highest sequence number finished (successfully, failed or skipped).
    completed: u64,
    /// What a failure does to the queued tasks.
    mode: FailureMode,
    /// The first failure since the error was last taken.
    error: Option<ErrorKind>,
    /// Queued tasks were discarded while a task ran: when it finishes, `completed` jumps to
    /// `submitted`.
    discarded_behind_running: bool,
}

impl<T> Stream<T> {
    /// Creates an empty stream whose ring holds `capacity` (≥ 1) unfinished tasks.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `capacity` is zero or the ring cannot be allocated.
    pub(crate) fn new(capacity: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::InvalidArgument);
        }
        let mut queued = VecDeque::new();
        queued.try_reserve_exact(capacity).map_err(|_| Error::InvalidArgument)?;
        Ok(Self {
            queued,
            running: None,
            capacity,
            submitted: 0,
            completed: 0,
            mode: FailureMode::Continue,
            error: None,
            discarded_behind_running: false,
        })
    }

    /// Tasks queued or running.
    #[inline]
    pub(crate) fn unfinished(&self) -> usize {
        self.queued.len() + usize::from(self.running.is_some())
    }

    /// Whether the oldest queued task may start now (nothing of this stream is running).
    #[inline]
    pub(crate) fn is_ready(&self) -> bool {
        self.running.is_none() && !self.queued.is_empty()
    }

    /// Whether [`Self::push`] would take one more task now.
    pub(crate) fn has_room(&self) -> bool {
        self.unfinished() < self.capacity
    }

    /// Appends `task` and returns its sequence number.
    ///
    /// # Errors
    ///
    /// [`Error::Full`] when `capacity` tasks are unfinished; [`Error::InvalidArgument`] when
    /// the sequence numbers are exhausted.
    #[inline]
    pub(crate) fn push(&mut self, task: T) -> Result<u64> {
        if self.unfinished() >= self.capacity {
            return Err(Error::Full);
        }
        let seq = self.submitted.checked_add(1).ok_or(Error::InvalidArgument)?;
        // INVARIANT: the new task is last in the ring and numbered one past the previous one.
        self.queued.push_back(task);
        self.submitted = seq;
        Ok(seq)
    }

    /// Starts the oldest queued task, returning its sequence number and the task.
    #[inline]
    pub(crate) fn start(&mut self) -> Option<(u64, T)> {
        if self.running.is_some() {
            return None;
        }
        let task = self.queued.pop_front()?;
        // No overflow: completed < submitted because a task was queued.
        let seq = self.completed + 1;
        self.running = Some(seq);
        Some((seq, task))
    }

    /// Completes the running task `seq` and returns how many tasks finished (it plus any
    /// skipped because of a failure).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `seq` is not the running task; nothing changes.
    #[inline]
    pub(crate) fn finish(&mut self, seq: u64, status: TaskStatus) -> Result<usize> {
        if self.running != Some(seq) {
            return Err(Error::InvalidArgument);
        }
        self.running = None;
        self.completed = seq;
        if !self.discarded_behind_running && matches!(status, TaskStatus::Ok) {
            return Ok(1);
        }
        Ok(self.finish_slow(status))
    }

    /// The rest of [`Self::finish`] after a discard or a failure.
    #[cold]
    fn finish_slow(&mut self, status: TaskStatus) -> usize {
        if core::mem::take(&mut self.discarded_behind_running) {
            // The tasks queued behind this one were discarded: everything handed out before
            // the discard is finished; tasks submitted since then are still queued.
            // CAST: a ring length always fits in u64.
            self.completed = self.submitted - self.queued.len() as u64;
        }
        let mut finished = 1;
        if let TaskStatus::Failed(kind) = status {
            self.error.get_or_insert(kind);
            if self.mode == FailureMode::StopOnFailure {
                let skipped = self.queued.len();
                self.queued.clear();
                // CAST: a ring length always fits in u64. No overflow: the skipped tasks had
                // sequence numbers up to `submitted`.
                self.completed += skipped as u64;
                finished += skipped;
            }
        }
        finished
    }

    /// Sets the failure mode for failures from now on.
    pub(crate) fn set_mode(&mut self, mode: FailureMode) {
        self.mode = mode;
    }

    /// Highest sequence number finished.
    #[inline]
    pub(crate) fn completed(&self) -> u64 {
        self.completed
    }

    /// Highest sequence number handed out.
    #[inline]
    pub(crate) fn submitted(&self) -> u64 {
        self.submitted
    }

    /// Takes the first failure since the last call.
    pub(crate) fn take_error(&mut self) -> Option<ErrorKind> {
        self.error.take()
    }

    /// The oldest queued (not started) task, if any.
    #[inline]
    pub(crate) fn head(&self) -> Option<&T> {
        self.queued.front()
    }

    /// The queued (not started) tasks, oldest first.
    pub(crate) fn queued(&self) -> impl Iterator<Item = &T> {
        self.queued.iter()
    }

    /// Drops every queued (not started) task, counting them as finished, and returns how many
    /// were dropped. A running task is left to finish.
    pub(crate) fn discard_queued(&mut self) -> usize {
        let dropped = self.queued.len();
        self.queued.clear();
        if self.running.is_none() {
            // CAST: a ring length always fits in u64. No overflow: the dropped tasks had
            // sequence numbers up to `submitted`.
            self.completed += dropped as u64;
        }
        if self.running.is_some() && dropped > 0 {
            // INVARIANT: with a task running, `completed` catches up when it finishes.
            self.discarded_behind_running = true;
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_numbers_and_bounds() {
        assert_eq!(Stream::<u8>::new(0).unwrap_err(), Error::InvalidArgument);
        let mut s = Stream::new(2).unwrap();
        assert_eq!(s.push('a'), Ok(1));
        assert_eq!(s.push('b'), Ok(2));
        assert_eq!(s.push('c'), Err(Error::Full));
        assert_eq!(s.start(), Some((1, 'a')));
        assert_eq!(s.start(), None);
        assert_eq!(s.finish(2, TaskStatus::Ok), Err(Error::InvalidArgument));
        assert_eq!(s.finish(1, TaskStatus::Ok), Ok(1));
        assert_eq!(s.push('c'), Ok(3));
        assert_eq!((s.completed(), s.submitted(), s.unfinished()), (1, 3, 2));
    }

    #[test]
    fn stop_on_failure_skips_the_queue() {
        let mut s = Stream::new(4).unwrap();
        s.set_mode(FailureMode::StopOnFailure);
        for t in 0..4 {
            s.push(t).unwrap();
        }
        let (seq, _) = s.start().unwrap();
        assert_eq!(s.finish(seq, TaskStatus::Failed(ErrorKind::DeviceFault)), Ok(4));
        assert_eq!((s.completed(), s.unfinished()), (4, 0));
        assert_eq!(s.take_error(), Some(ErrorKind::DeviceFault));
        assert_eq!(s.take_error(), None);
    }
}
