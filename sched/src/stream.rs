//! One stream: a bounded ring of tasks run in submission order.
//!
//! This module owns a stream's sequence numbers, its ring of unfinished tasks, its failure mode
//! and its pending error. It must not decide which stream runs next (that is the executor's
//! job) and must not run tasks.

use alloc::boxed::Box;
use alloc::vec::Vec;

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
    /// Record the failure and fail every task queued behind it without running them; tasks
    /// submitted after the failure are skipped too until the error is taken.
    StopOnFailure,
}

/// The state of one stream.
///
/// The ring is a boxed slice of a power of two of slots, at least `capacity`: the item
/// numbered `s` lives in slot `s & mask` while it is queued (no cursor of its own, no
/// division), and a slot holds `Some` exactly while its item is queued. `started` is the
/// highest sequence number started or dropped, so the queued items are numbered
/// `started + 1 ..= submitted`.
///
/// # Invariants
///
/// - `completed <= started <= submitted`; the slots of `started + 1 ..= submitted` hold `Some`,
///   every other slot `None`.
/// - With nothing running, `completed == started`. With a task running, it is the task
///   numbered `completed + 1`, and `completed + 1 <= started`: `<` when the items behind it
///   were dropped while it ran ([`discard_queued`](Self::discard_queued)), which count as
///   finished already, or when it heads a *run* of started tasks
///   ([`extend_run`](Self::extend_run)), which run after it in order; `completed` reaches
///   `started` when the last of them finishes.
/// - `submitted - started`, plus `run_end - completed` if a task is running (the unfinished
///   tasks of its run), is at most `capacity`, which is at most the ring's length.
/// - `limit <= started - in_run + capacity` (saturating, `in_run` being `run_end - completed`
///   while a task runs and 0 otherwise): a lower bound of the first sequence
///   number that does not fit, so `submitted < limit` lets [`push`](Self::push) skip counting.
///   While the stream is stopped ([`is_stopped`](Self::is_stopped)) `limit` is 0, so that every
///   push takes the slow path, where the owner turns what it submits into skips
///   ([`below_limit`](Self::below_limit)).
/// - While the stream is idle (nothing queued, nothing running) `limit <= submitted`: the
///   first push after it went idle takes the slow path, where the owner learns that the stream
///   became ready. So the fast path is one compare, and a push that takes it needs to tell
///   nobody anything (the stream already is in a ready list, running or parked).
#[derive(Debug)]
pub(crate) struct Stream<T> {
    /// The ring; `Some` marks a queued item.
    ring: Box<[Option<T>]>,
    /// `ring.len() - 1` (the ring's length is a power of two), or 0 for an empty ring.
    mask: usize,
    /// Highest sequence number handed out.
    submitted: u64,
    /// Submissions below this fit without counting (see the invariants).
    limit: u64,
    /// Highest sequence number started (taken for running) or dropped.
    started: u64,
    /// Highest sequence number finished (successfully, failed or skipped).
    completed: u64,
    /// Whether task `completed + 1` is running.
    running: bool,
    /// While a task runs, the last task of its run (`completed + 1` for a lone task): the
    /// tasks `completed + 1 ..= run_end` are unfinished.
    run_end: u64,
    /// What a failure does to the queued tasks.
    mode: FailureMode,
    /// Most unfinished (queued or running) items the stream holds.
    capacity: usize,
    /// The first failure since the error was last taken.
    error: Option<ErrorKind>,
    /// A failure in [`FailureMode::StopOnFailure`] happened and its error was not taken yet.
    stopped: bool,
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
        let len = capacity.checked_next_power_of_two().ok_or(Error::InvalidArgument)?;
        let mut ring = Vec::new();
        ring.try_reserve_exact(len).map_err(|_| Error::InvalidArgument)?;
        ring.resize_with(len, || None);
        let mut stream = Self::retired();
        stream.ring = ring.into_boxed_slice();
        stream.mask = len - 1;
        stream.capacity = capacity;
        // INVARIANT: idle, so `limit` (0) is at most `submitted`; the first push raises it.
        Ok(stream)
    }

    /// A stream with no ring that takes nothing: what a slot of a destroyed stream holds
    /// (allocates nothing).
    pub(crate) fn retired() -> Self {
        Self {
            ring: Box::new([]),
            mask: 0,
            submitted: 0,
            limit: 0,
            started: 0,
            completed: 0,
            running: false,
            run_end: 0,
            mode: FailureMode::Continue,
            capacity: 0,
            error: None,
            stopped: false,
        }
    }

    /// The slot index of the item numbered `seq`.
    #[inline]
    fn pos(&self, seq: u64) -> usize {
        // CAST: truncating is the point: the ring's length is a power of two, so the low bits
        // of `seq` select the slot.
        (seq as usize) & self.mask
    }

    /// Items queued (submitted, not started).
    #[inline]
    pub(crate) fn queued_len(&self) -> usize {
        // CAST: at most `capacity` items are queued, a usize.
        (self.submitted - self.started) as usize
    }

    /// Tasks queued or running (every unfinished task of a run counts).
    #[inline]
    pub(crate) fn unfinished(&self) -> usize {
        // CAST: at most `capacity` tasks are unfinished, a usize.
        self.queued_len() + self.in_run() as usize
    }

    /// The unfinished tasks of the running run (0 when nothing runs).
    #[inline]
    fn in_run(&self) -> u64 {
        if self.running {
            self.run_end - self.completed
        } else {
            0
        }
    }

    /// Whether nothing is queued.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.started == self.submitted
    }

    /// Whether the oldest queued task may start now (nothing of this stream is running).
    #[inline]
    pub(crate) fn is_ready(&self) -> bool {
        !self.running && !self.is_empty()
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
        if !self.below_limit() {
            self.raise_limit()?;
        }
        self.put(task)
    }

    /// The fast path of [`Self::push`], for a stream [below its limit](Self::below_limit) (or
    /// one whose room [`raise_limit`](Self::raise_limit) just counted): writes `task` straight
    /// into its slot and returns its sequence number.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a stream with no ring (not reached with room).
    #[inline]
    pub(crate) fn put(&mut self, task: T) -> Result<u64> {
        // No overflow: `submitted` is below the limit, or below the one `raise_limit` counted.
        let seq = self.submitted + 1;
        // The mask taken from the ring's length (a power of two, or 0 for no ring, where the
        // look-up fails), not from `mask`: the compiler then knows the index is in bounds, so
        // the only check is the one for no ring.
        let len = self.ring.len();
        // CAST: truncating is the point (see `pos`).
        let pos = (seq as usize) & len.wrapping_sub(1);
        // INVARIANT: the slot is free (fewer than `capacity` items are queued), and the new
        // item is numbered one past the previous one.
        let slot = self.ring.get_mut(pos).ok_or(Error::InvalidArgument)?;
        *slot = Some(task);
        self.submitted = seq;
        Ok(seq)
    }

    /// Keeps the invariant of an idle stream: `limit <= submitted`, so that the next push
    /// takes the slow path. Called wherever the stream may have gone idle.
    #[inline]
    fn settle(&mut self) {
        if self.started == self.submitted && !self.running {
            self.limit = self.limit.min(self.submitted);
        }
    }

    /// Whether one more item fits without counting, and the stream is not stopped: the fast
    /// path of [`Self::push`] (one compare). `false` sends the push to its slow path, which
    /// counts, and where an owner turns what it submits to a stopped stream into a skip.
    #[inline]
    pub(crate) fn below_limit(&self) -> bool {
        self.submitted < self.limit
    }

    /// Counts the unfinished items and moves `limit` up to what they leave room for (it stays
    /// 0 while the stream is stopped).
    ///
    /// # Errors
    ///
    /// As [`Self::push`]; `limit` stays valid either way.
    #[cold]
    fn raise_limit(&mut self) -> Result<()> {
        if self.unfinished() >= self.capacity {
            return Err(Error::Full);
        }
        // INVARIANT: `started - in_run`, plus `capacity`; `started >= run_end` while a task
        // runs, so the subtraction does not wrap.
        let base = self.started - self.in_run();
        let limit = base.saturating_add(u64::try_from(self.capacity).unwrap_or(u64::MAX));
        if self.submitted >= limit {
            // Room, but no sequence number left.
            return Err(Error::InvalidArgument);
        }
        if !self.stopped {
            self.limit = limit;
        }
        Ok(())
    }

    /// Starts the oldest queued task, returning its sequence number and the task.
    #[inline]
    pub(crate) fn start(&mut self) -> Option<(u64, T)> {
        self.start_if(|_| true)
    }

    /// Starts the oldest queued item if nothing runs and `accept` takes it, returning its
    /// sequence number and the item ([`Self::head`], then [`Self::start`], in one look).
    #[inline]
    pub(crate) fn start_if(&mut self, accept: impl FnOnce(&T) -> bool) -> Option<(u64, T)> {
        if self.running {
            return None;
        }
        // No overflow: `started < submitted` when an item is queued, and otherwise the slot
        // is `None` and nothing is started.
        let seq = self.started.wrapping_add(1);
        let pos = self.pos(seq);
        let slot = self.ring.get_mut(pos)?;
        // `None` only when nothing is queued.
        if !slot.as_ref().is_some_and(accept) {
            return None;
        }
        let task = slot.take()?;
        self.started = seq;
        self.running = true;
        self.run_end = seq;
        Some((seq, task))
    }

    /// Starts the oldest queued item if nothing runs and `take` takes it out of its slot,
    /// returning its sequence number and what `take` answered ([`Self::start_if`] for an
    /// owner that wants the item's contents). `take` is not called when something runs.
    ///
    /// `take` must leave the slot `None` exactly when it answers `Some`.
    #[inline]
    pub(crate) fn start_with<U>(
        &mut self,
        take: impl FnOnce(&mut Option<T>) -> Option<U>,
    ) -> Option<(u64, U)> {
        if self.running {
            return None;
        }
        // No overflow: as in `start_if`.
        let seq = self.started.wrapping_add(1);
        let pos = self.pos(seq);
        let out = take(self.ring.get_mut(pos)?)?;
        self.started = seq;
        self.running = true;
        self.run_end = seq;
        Some((seq, out))
    }

    /// Takes the oldest queued item of a stream where nothing runs, if `take` takes it out of
    /// its slot, and counts it as finished at once (successfully): for an owner that runs it
    /// to completion before anyone looks at the stream again. Returns its sequence number and
    /// what `take` answered. If it turns out to fail, [`Self::reopen`] makes it the running
    /// task again, to [`finish`](Self::finish) as failed.
    ///
    /// `take` must leave the slot `None` exactly when it answers `Some`.
    #[inline]
    pub(crate) fn take_done_with<U>(
        &mut self,
        take: impl FnOnce(&mut Option<T>) -> Option<U>,
    ) -> Option<(u64, U)> {
        debug_assert!(!self.running, "only a stream with nothing running");
        // No overflow: as in `start_if`.
        let seq = self.started.wrapping_add(1);
        let pos = self.pos(seq);
        let out = take(self.ring.get_mut(pos)?)?;
        // INVARIANT: nothing ran, so `completed == started`, and now both name the item.
        self.started = seq;
        self.completed = seq;
        self.settle();
        Some((seq, out))
    }

    /// [`Self::take_done_with`] and running what it takes with `run`, over and over while
    /// `take` takes the head and `run` answers that it succeeded; answers how many succeeded.
    /// A failed item (`run` answers `false`) is left running, to [`finish`](Self::finish) as
    /// failed. The loop walks the queued slots as a slice (at most two: the ring may wrap),
    /// and the sequence numbers are stored once per slice: no index, mask or bounds check per
    /// item.
    #[inline]
    pub(crate) fn run_done_with<U>(
        &mut self,
        mut take: impl FnMut(&mut Option<T>) -> Option<U>,
        mut run: impl FnMut(u64, U) -> bool,
    ) -> usize {
        debug_assert!(!self.running, "only a stream with nothing running");
        let mut done = 0;
        loop {
            let base = self.started;
            let slots = self.queued_run(usize::MAX);
            let len = slots.len();
            let mut n = 0u64;
            let mut failed = false;
            for slot in slots {
                let Some(item) = take(slot) else { break };
                n += 1;
                if !run(base + n, item) {
                    failed = true;
                    break;
                }
            }
            // INVARIANT: the first `n` queued items were taken; all of them finished but a
            // failed last one, which runs (as after `start`).
            self.started = base + n;
            self.completed = self.started - u64::from(failed);
            self.running = failed;
            self.run_end = self.started;
            self.settle();
            // CAST: at most `capacity` items, a usize.
            done += n as usize - usize::from(failed);
            // Go on past the end of the ring only if the whole slice ran.
            if failed || n as usize != len || len == 0 {
                return done;
            }
        }
    }

    /// The queued items' slots from the oldest on, as far as the ring runs without wrapping
    /// and at most `max`: the slots of `started + 1 ..= started + len`, which all hold `Some`.
    /// An owner that empties the first `n` of them counts them with [`Self::mark_done`].
    #[inline]
    pub(crate) fn queued_run(&mut self, max: usize) -> &mut [Option<T>] {
        let pos = self.pos(self.started.wrapping_add(1));
        let end = pos.saturating_add(self.queued_len().min(max)).min(self.ring.len());
        self.ring.get_mut(pos..end).unwrap_or_default()
    }

    /// Counts the first `n` queued items, whose slots the owner emptied (from
    /// [`Self::queued_run`]), as started and finished (successfully) at once, as
    /// [`Self::take_done_with`] does one by one.
    #[inline]
    pub(crate) fn mark_done(&mut self, n: usize) {
        debug_assert!(!self.running && n <= self.queued_len(), "only queued items, nothing running");
        // CAST: at most `capacity` items, a usize.
        // INVARIANT: nothing ran, so `completed == started`, and now both name the last item.
        self.started += n as u64;
        self.completed = self.started;
        self.settle();
    }

    /// Makes the item `seq` just taken by [`Self::take_done_with`] the running task again
    /// (it failed; the caller finishes it as such).
    #[inline]
    pub(crate) fn reopen(&mut self, seq: u64) {
        debug_assert!(!self.running && seq == self.started && seq == self.completed);
        // INVARIANT: task `completed + 1 == started` runs, as after `start`.
        self.completed = seq - 1;
        self.running = true;
        self.run_end = seq;
    }

    /// Extends the running task into a *run*: starts the queued items after it, oldest first,
    /// while `take` takes each out of its slot, at most `max` of them; returns how many were
    /// started. The run's tasks then finish in order: [`Self::complete_run_to`] counts the
    /// first ones finished while the rest still run, and [`Self::finish`] of the first task not
    /// yet counted finishes the whole run (as it finishes items dropped behind a running task).
    ///
    /// `take` must leave the slot `None` exactly when it answers `Some`.
    #[inline]
    pub(crate) fn extend_run<U>(
        &mut self,
        max: usize,
        mut take: impl FnMut(&mut Option<T>) -> Option<U>,
        mut out: impl FnMut(U),
    ) -> usize {
        // Not behind dropped items (they count as finished: the run must end at `started`).
        if !self.running || self.run_end != self.started {
            return 0;
        }
        let mut n = 0;
        while n < max && self.started < self.submitted {
            let seq = self.started + 1;
            let pos = self.pos(seq);
            let Some(item) = self.ring.get_mut(pos).and_then(&mut take) else { break };
            // INVARIANT: the item is started (part of the running run, which ends at it);
            // `completed + 1` still names the run's oldest unfinished task.
            self.started = seq;
            self.run_end = seq;
            out(item);
            n += 1;
        }
        n
    }

    /// Counts the tasks of the running run up to `seq` as finished while the later ones still
    /// run (`completed < seq < run_end`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when nothing runs or `seq` is outside that range; nothing
    /// changes.
    #[inline]
    pub(crate) fn complete_run_to(&mut self, seq: u64) -> Result<()> {
        if !self.running || seq <= self.completed || seq >= self.run_end {
            return Err(Error::InvalidArgument);
        }
        // INVARIANT: task `seq + 1 <= run_end` is the run's oldest unfinished one.
        self.completed = seq;
        Ok(())
    }

    /// Completes the running task `seq` and returns how many tasks finished (it plus any
    /// skipped because of a failure).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `seq` is not the running task; nothing changes.
    #[inline]
    pub(crate) fn finish(&mut self, seq: u64, status: TaskStatus) -> Result<usize> {
        if !self.running || seq != self.completed.wrapping_add(1) {
            return Err(Error::InvalidArgument);
        }
        self.running = false;
        // INVARIANT: everything up to `started` is finished or dropped now (`started` is `seq`
        // unless the items behind it were dropped while it ran).
        self.completed = self.started;
        self.settle();
        if matches!(status, TaskStatus::Ok) {
            return Ok(1);
        }
        Ok(self.finish_failed(status))
    }

    /// The rest of [`Self::finish`] after a failure.
    #[cold]
    fn finish_failed(&mut self, status: TaskStatus) -> usize {
        let mut finished = 1;
        if let TaskStatus::Failed(kind) = status {
            self.error.get_or_insert(kind);
            if self.mode == FailureMode::StopOnFailure {
                let skipped = self.clear_queued();
                self.completed = self.submitted;
                self.stopped = true;
                // INVARIANT: a stopped stream's pushes take the slow path.
                self.limit = 0;
                finished += skipped;
            }
        }
        finished
    }

    /// Drops every queued item; `started` moves to `submitted`. Returns how many were dropped.
    fn clear_queued(&mut self) -> usize {
        let dropped = self.queued_len();
        for seq in self.started + 1..=self.submitted {
            let pos = self.pos(seq);
            if let Some(slot) = self.ring.get_mut(pos) {
                *slot = None;
            }
        }
        // INVARIANT: nothing is queued; every slot is `None`.
        self.started = self.submitted;
        dropped
    }

    /// Whether a failure stopped the stream: it is in [`FailureMode::StopOnFailure`] and its
    /// error was not taken yet. Tasks submitted meanwhile are skipped, as a device's queue
    /// stopped by a failure runs nothing until the host has seen the failure.
    #[inline]
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The failure mode.
    #[inline]
    pub(crate) fn mode(&self) -> FailureMode {
        self.mode
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

    /// The first failure since the error was last taken, left in place.
    pub(crate) fn error(&self) -> Option<ErrorKind> {
        self.error
    }

    /// Takes the first failure since the last call.
    pub(crate) fn take_error(&mut self) -> Option<ErrorKind> {
        self.stopped = false;
        self.error.take()
    }

    /// The oldest queued (not started) task, if any.
    #[inline]
    pub(crate) fn head(&self) -> Option<&T> {
        self.ring.get(self.pos(self.started.wrapping_add(1)))?.as_ref()
    }

    /// The queued (not started) tasks, oldest first.
    pub(crate) fn queued(&self) -> impl Iterator<Item = &T> {
        (self.started + 1..=self.submitted).filter_map(|seq| self.ring.get(self.pos(seq))?.as_ref())
    }

    /// Drops every queued (not started) task, counting them as finished, and returns how many
    /// were dropped. A running task is left to finish.
    pub(crate) fn discard_queued(&mut self) -> usize {
        let dropped = self.clear_queued();
        if !self.running {
            // INVARIANT: with nothing running, `completed` follows `started`.
            self.completed = self.started;
        }
        self.settle();
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
    fn an_idle_stream_is_never_below_its_limit() {
        // Every way of going idle sends the next push to the slow path (where the owner
        // learns that the stream became ready); a busy stream with room stays on the fast one.
        let mut s = Stream::new(8).unwrap();
        assert!(!s.below_limit(), "a new stream is idle");
        s.push(1).unwrap();
        assert!(s.below_limit(), "queued: the fast path");
        s.push(2).unwrap();
        let (seq, _) = s.start().unwrap();
        s.finish(seq, TaskStatus::Ok).unwrap();
        assert!(s.below_limit(), "one still queued");
        let (seq, _) = s.start().unwrap();
        assert!(s.below_limit(), "running, nothing queued: not idle");
        s.finish(seq, TaskStatus::Ok).unwrap();
        assert!(!s.below_limit(), "idle after a finish");
        // A failure in continue mode that leaves it idle.
        s.push(3).unwrap();
        let (seq, _) = s.start().unwrap();
        s.finish(seq, TaskStatus::Failed(ErrorKind::DeviceFault)).unwrap();
        assert!(!s.below_limit(), "idle after a failed finish");
        // Taken and counted done at once, one by one, in a run, by count, and dropped.
        s.push(4).unwrap();
        s.take_done_with(Option::take).unwrap();
        assert!(!s.below_limit(), "idle after take_done_with");
        s.push(5).unwrap();
        s.push(6).unwrap();
        assert_eq!(s.run_done_with(Option::take, |_, _| true), 2);
        assert!(!s.below_limit(), "idle after run_done_with");
        s.push(7).unwrap();
        let n = s.queued_run(usize::MAX).iter_mut().map(Option::take).count();
        s.mark_done(n);
        assert!(!s.below_limit(), "idle after mark_done");
        s.push(8).unwrap();
        assert_eq!(s.discard_queued(), 1);
        assert!(!s.below_limit(), "idle after discard_queued");
        assert_eq!((s.submitted(), s.completed(), s.unfinished()), (8, 8, 0));
        assert_eq!(s.push(9), Ok(9), "the slow path still pushes");
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
