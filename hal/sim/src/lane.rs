//! One queue's submission lane: a `sched` ring of encoded task descriptors that submitters fill
//! without the device's lock, and the words that tell how far the queue got.
//!
//! This module owns the encoding of a [`TaskDesc`] into the ring's words, the lane's
//! producer side (its submit lock: one submitter of a queue at a time, never a per-device
//! lock, which also guards the lane's posted mark: see [`sched::inbox`]) and the lane's
//! submitted-sequence word. It must not run tasks or
//! touch the executor: the scheduler drains lanes into it under the device lock (the ring's
//! one consumer).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use hal::{DeviceAddr, HostCall, QueueId, TaskDesc, WaitCompare};
use sched::{CachePadded, Progress, Ring, WordSlots};

/// Words of one encoded descriptor (a tag and the largest variant's six fields).
pub(crate) const WORDS: usize = 8;

/// An encoded descriptor.
pub(crate) type Words = [u64; WORDS];

/// Encodes `t` into ring words (the first word is the variant's tag).
pub(crate) fn encode(t: &TaskDesc) -> Words {
    let a = DeviceAddr::as_u64;
    match *t {
        TaskDesc::Copy { dst, src, len_bytes } => [1, a(dst), a(src), len_bytes, 0, 0, 0, 0],
        TaskDesc::Copy2d { dst, dst_pitch, src, src_pitch, width, height } => {
            [2, a(dst), dst_pitch, a(src), src_pitch, width, height, 0]
        }
        TaskDesc::CopyBatch { batch } => [3, batch, 0, 0, 0, 0, 0, 0],
        TaskDesc::Memset { dst, value, len_bytes } => encode_fill(dst, value, len_bytes),
        TaskDesc::Memset32 { dst, value, count } => [5, a(dst), u64::from(value), count, 0, 0, 0, 0],
        TaskDesc::Kernel { func, blocks, args, timeout_us } => {
            [6, func, u64::from(blocks), args, timeout_us, 0, 0, 0]
        }
        TaskDesc::HostFunc { call } => match call.report {
            Some((thread, block)) => [7, call.func, call.data, 1, thread, u64::from(block), 0, 0],
            None => encode_host_fn(call.func, call.data),
        },
        TaskDesc::ValueWrite { dst, value } => [8, a(dst), value, 0, 0, 0, 0, 0],
        TaskDesc::ValueWait { addr, value, compare } => {
            let c = match compare {
                WaitCompare::GreaterOrEqual => 0,
                WaitCompare::Equal => 1,
                WaitCompare::And => 2,
                WaitCompare::Nor => 3,
            };
            [9, a(addr), value, c, 0, 0, 0, 0]
        }
        TaskDesc::Timestamp { dst } => [10, a(dst), 0, 0, 0, 0, 0, 0],
        TaskDesc::Marker => [11, 0, 0, 0, 0, 0, 0, 0],
    }
}

/// [`encode`] of a host function without a report.
#[inline]
pub(crate) fn encode_host_fn(func: u64, data: u64) -> Words {
    [7, func, data, 0, 0, 0, 0, 0]
}

/// [`encode`] of a byte fill.
#[inline]
pub(crate) fn encode_fill(dst: DeviceAddr, value: u8, len_bytes: u64) -> Words {
    [4, dst.as_u64(), u64::from(value), len_bytes, 0, 0, 0, 0]
}

/// Decodes words written by [`encode`]; `None` for words it did not write. Inlined into the
/// drain, so that the words and the task stay in registers: a task handed back through memory
/// is written field by field and copied on wider, which stalls until the worker's older
/// stores are written.
#[inline]
pub(crate) fn decode(w: &Words) -> Option<TaskDesc> {
    let d = DeviceAddr;
    // CAST: the narrow fields were widened by `encode`; `try_from` rejects anything else.
    let u8_of = |v: u64| u8::try_from(v).ok();
    let u32_of = |v: u64| u32::try_from(v).ok();
    Some(match w[0] {
        1 => TaskDesc::Copy { dst: d(w[1]), src: d(w[2]), len_bytes: w[3] },
        2 => TaskDesc::Copy2d {
            dst: d(w[1]),
            dst_pitch: w[2],
            src: d(w[3]),
            src_pitch: w[4],
            width: w[5],
            height: w[6],
        },
        3 => TaskDesc::CopyBatch { batch: w[1] },
        4 => TaskDesc::Memset { dst: d(w[1]), value: u8_of(w[2])?, len_bytes: w[3] },
        5 => TaskDesc::Memset32 { dst: d(w[1]), value: u32_of(w[2])?, count: w[3] },
        6 => TaskDesc::Kernel { func: w[1], blocks: u32_of(w[2])?, args: w[3], timeout_us: w[4] },
        7 => TaskDesc::HostFunc {
            call: HostCall { func: w[1], data: w[2], report: (w[3] == 1).then_some((w[4], w[5] != 0)) },
        },
        8 => TaskDesc::ValueWrite { dst: d(w[1]), value: w[2] },
        9 => TaskDesc::ValueWait {
            addr: d(w[1]),
            value: w[2],
            compare: match w[3] {
                0 => WaitCompare::GreaterOrEqual,
                1 => WaitCompare::Equal,
                2 => WaitCompare::And,
                3 => WaitCompare::Nor,
                _ => return None,
            },
        },
        10 => TaskDesc::Timestamp { dst: d(w[1]) },
        11 => TaskDesc::Marker,
        _ => return None,
    })
}

/// What the worker running a run does after a task ([`Lane::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// Someone waits for the task just published: count the run so far under the scheduler's
    /// lock and notify.
    pub(crate) watched: bool,
    /// The next task may start (no abort cancelled it).
    pub(crate) start: bool,
}

/// The producer side of a lane: the lane's submit lock, held ([`Lane::producer`]), and the
/// words it guards. Dropping it gives the lock back.
#[derive(Debug)]
pub(crate) struct Producer<'a> {
    w: &'a ProducerWords,
}

impl Producer<'_> {
    /// The highest sequence number handed out on the queue (ring pushes and items the
    /// scheduler queued under its lock alike).
    #[inline]
    pub(crate) fn submitted(&self) -> u64 {
        self.w.submitted.load(Ordering::Relaxed)
    }

    /// Whether the lane is posted: set by the push that finds it clear (which then posts the
    /// lane in the device's inbox), cleared only by a worker that gives the lane back, which
    /// does so holding this lock with the ring empty ([`Lane::try_producer`]). A push to a
    /// posted lane therefore writes nothing a worker writes.
    #[inline]
    pub(crate) fn posted(&self) -> bool {
        self.w.posted.load(Ordering::Relaxed)
    }

    /// Sets [`posted`](Self::posted), answering what it was.
    #[inline]
    pub(crate) fn replace_posted(&mut self, posted: bool) -> bool {
        let was = self.posted();
        if was != posted {
            self.w.posted.store(posted, Ordering::Relaxed);
        }
        was
    }
}

impl Drop for Producer<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: everything written under the lock happens before the next holder's
        // acquire. A plain store, no read-modify-write: see `ProducerWords::locked`.
        self.w.locked.store(false, Ordering::Release);
    }
}

/// The submit lock and the words it guards, which a submitter writes on every submit, on a
/// cache line of their own. The words are atomics only so that the lock needs no `unsafe`:
/// they are read and written only by the lock's holder (relaxed), but for `submitted`, which
/// any thread may read.
#[derive(Debug)]
struct ProducerWords {
    /// The submit lock. Taken with a compare-and-swap and given back with a plain release
    /// store: no read-modify-write at the end of a submission, which would make the
    /// submitting core wait until the descriptor's cache lines reached it from the worker
    /// that read the previous ones (a queue has one submitter at a time in the common case,
    /// so the lock is rarely contended). A thread that finds it taken spins, then yields, then
    /// sleeps briefly between tries ([`Lane::producer`]): nobody is woken, so giving it back
    /// needs to know of no waiter.
    locked: AtomicBool,
    /// The highest sequence number handed out (written under the lock, readable by anyone).
    submitted: AtomicU64,
    /// The last completed sequence this side read from the queue's progress word: room is
    /// judged by it first, so a flooding submitter reads the word (a line the workers write)
    /// only when the copy says the queue is full. Completion only grows, so a stale copy
    /// never shows room that is not there.
    completed_seen: AtomicU64,
    /// The queue is being destroyed: nothing more may be submitted to it (set by
    /// [`Lane::set_closed`], so that no descriptor lands in a lane nobody will drain again).
    closed: AtomicBool,
    /// See [`Producer::posted`].
    posted: AtomicBool,
}

/// One queue's lane.
///
/// # Invariants
///
/// Only a holder of `producer` pushes into `ring`; only the holder of the device's scheduler
/// lock pops from it.
#[derive(Debug)]
pub(crate) struct Lane {
    /// The queue the lane feeds.
    pub(crate) queue: QueueId,
    /// The lane's index in the device's inbox (the queue's slot).
    pub(crate) index: usize,
    /// The submit lock and the submitted word (the producer's line).
    prod: CachePadded<ProducerWords>,
    /// Encoded descriptors submitted and not yet moved into the executor (pushed under the
    /// submit lock).
    pub(crate) ring: Ring<WordSlots<WORDS>>,
    /// The queue's published completed sequence (the executor's word).
    pub(crate) progress: Arc<Progress>,
    /// The queue's depth: at most this many of its tasks are unfinished (queued in the ring,
    /// queued in the executor, or running) when a submit returns.
    depth: u64,
    /// The lowest completed sequence a host thread parked on the scheduler's `done` waits
    /// for on this queue (`u64::MAX`: nobody): a worker that finishes a task of the queue
    /// notifies `done` only once the queue reaches it. Written under the scheduler's lock;
    /// also read without it by a worker that runs a run of the queue's tasks, which publishes
    /// each task and then reads this word (the protocol of [`sched::progress`]'s watches: see
    /// [`Lane::wake_me_at`] and [`Lane::step`]).
    wake_at: AtomicU64,
    /// While a worker runs a run of the queue's tasks: the first task of the run it has not
    /// claimed (0: no run, or an abort took the rest). The worker claims each task with a plain
    /// store before it starts it ([`Lane::step`]); an abort marks the run cancelled and then
    /// swaps this to 0 (under the scheduler's lock), so each task of the run either started
    /// before the abort or never starts (see [`Lane::cancel_run`]).
    run_next: AtomicU64,
    /// The last task of the run under way (written under the scheduler's lock).
    run_last: AtomicU64,
    /// An abort cancelled the run under way (written under the scheduler's lock; read by the
    /// run's worker after each claim).
    run_cancelled: AtomicBool,
}

impl Lane {
    /// A lane for `queue` of depth `depth` (its ring holds `depth` rounded up to a power of two
    /// descriptors).
    pub(crate) fn new(
        queue: QueueId,
        index: usize,
        depth: usize,
        progress: Arc<Progress>,
    ) -> sched::Result<Self> {
        Ok(Self {
            queue,
            index,
            prod: CachePadded(ProducerWords {
                locked: AtomicBool::new(false),
                submitted: AtomicU64::new(0),
                completed_seen: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                posted: AtomicBool::new(false),
            }),
            ring: Ring::new(WordSlots::new(depth.next_power_of_two())?)?,
            progress,
            // CAST: usize fits in u64.
            depth: depth as u64,
            wake_at: AtomicU64::new(u64::MAX),
            run_next: AtomicU64::new(0),
            run_last: AtomicU64::new(0),
            run_cancelled: AtomicBool::new(false),
        })
    }

    /// The completed sequence a submitter that found no room after `submitted` waits for: half
    /// the depth free (a low watermark, so that a flooding submitter is woken once per half a
    /// depth of tasks, not once per task).
    pub(crate) fn room_target(&self, submitted: u64) -> u64 {
        submitted.saturating_sub(self.depth / 2)
    }

    /// A host thread is about to park until the queue completed `seq` (under the scheduler's
    /// lock): answers whether the queue completed `seq` already, read after the target was
    /// set (then it must not park). A worker running a run publishes a task, then reads the
    /// target ([`Lane::step`]): one of the two sees the other's write.
    pub(crate) fn wake_me_at(&self, seq: u64) -> bool {
        self.wake_at.fetch_min(seq, Ordering::Relaxed);
        // SeqCst: the write above, then the read below (`sched::progress`'s watches).
        std::sync::atomic::fence(Ordering::SeqCst);
        self.progress.is_complete(seq)
    }

    /// The worker running a run of this queue's tasks finished task `seq`, not the run's last:
    /// publishes it when `publish` (not after a failure: see `Run::execute`), claims the next
    /// task, `seq + 1`, and answers what to do next ([`Step`]).
    ///
    /// One sequentially consistent fence serves two protocols, each a write, the fence, then a
    /// read of the other side's word: the publication against a waiter's target (a host thread
    /// parked on the scheduler's `done`, [`Lane::wake_me_at`], or a stream parked in the
    /// executor, `sched::progress`'s watch), and the claim against an abort's mark
    /// ([`Lane::cancel_run`]). No read-modify-write per task.
    #[inline]
    pub(crate) fn step(&self, seq: u64, publish: bool) -> Step {
        // The claim: every task before `seq + 2` started (or is starting).
        let claim = || self.run_next.store(seq + 2, Ordering::Relaxed);
        let watched = if publish {
            let watched = self.progress.publish_run_with(seq, claim);
            watched || self.wake_at.load(Ordering::Relaxed) <= seq
        } else {
            claim();
            // SeqCst: the claim, then the read of the abort's mark.
            std::sync::atomic::fence(Ordering::SeqCst);
            false
        };
        let start = !self.run_cancelled.load(Ordering::Relaxed) || self.claim_cancelled(seq + 1);
        Step { watched, start }
    }

    /// Whether `seq` starts all the same, once [`Lane::step`] claimed it and then found the run
    /// cancelled. The abort swaps `run_next` to 0 after its fence and counts the tasks from the
    /// value it read as cancelled. If the word still holds this claim, the abort has not swapped
    /// yet, or it read an earlier claim (and this claim overwrote its 0): either way it counts
    /// `seq` as cancelled, and the claim is taken back. If the word holds 0, the abort read this
    /// claim and counted `seq` as started, so it starts.
    #[cold]
    #[inline(never)]
    fn claim_cancelled(&self, seq: u64) -> bool {
        // AcqRel: ordered against the abort's swap, which comes first or second as a whole.
        self.run_next.compare_exchange(seq + 1, seq, Ordering::AcqRel, Ordering::Relaxed).is_err()
    }

    /// A worker took the run `first ..= last` of the queue's tasks and starts `first` now
    /// (under the scheduler's lock).
    pub(crate) fn begin_run(&self, first: u64, last: u64) {
        self.run_last.store(last, Ordering::Relaxed);
        self.run_cancelled.store(false, Ordering::Relaxed);
        self.run_next.store(first + 1, Ordering::Relaxed);
    }

    /// The run ended (under the scheduler's lock).
    pub(crate) fn end_run(&self) {
        self.run_next.store(0, Ordering::Relaxed);
    }

    /// An abort of the queue (under the scheduler's lock): the run under way starts no task
    /// after the one running now (or starting: claimed, see [`Lane::step`]). Answers how many
    /// of its tasks it cancelled (0 for a run an abort cancelled already).
    pub(crate) fn cancel_run(&self) -> usize {
        if self.run_next.load(Ordering::Relaxed) == 0 || self.run_cancelled.swap(true, Ordering::Relaxed) {
            return 0;
        }
        // SeqCst: the mark, then the read of the claim (the other side of `step`'s fence).
        std::sync::atomic::fence(Ordering::SeqCst);
        let next = self.run_next.swap(0, Ordering::AcqRel);
        let last = self.run_last.load(Ordering::Relaxed);
        if next == 0 || next > last {
            return 0;
        }
        // CAST: at most a run's length.
        (last + 1 - next) as usize
    }

    /// Whether a parked host thread waits for what the queue completed now, forgetting the
    /// target if so (under the scheduler's lock, after a finish): then `done` must be
    /// notified; the woken threads that still wait set their targets again.
    pub(crate) fn take_due(&self) -> bool {
        let at = self.wake_at.load(Ordering::Relaxed);
        if at != u64::MAX && at <= self.progress.completed() {
            self.wake_at.store(u64::MAX, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Whether one more task fits: fewer than `depth` unfinished after `submitted`, and a free
    /// slot in the ring.
    pub(crate) fn has_room(&self, submitted: u64) -> bool {
        submitted.saturating_sub(self.progress.completed()) < self.depth
            && self.ring.len() < self.ring.capacity()
    }

    /// [`has_room`](Self::has_room) for the holder of the submit lock, judged by its copy of
    /// the completed word first (read again only when the copy shows no room).
    pub(crate) fn has_room_for(&self, p: &mut Producer) -> bool {
        let submitted = p.submitted();
        if submitted.saturating_sub(p.w.completed_seen.load(Ordering::Relaxed)) >= self.depth {
            let seen = self.progress.completed();
            p.w.completed_seen.store(seen, Ordering::Relaxed);
            if submitted.saturating_sub(seen) >= self.depth {
                return false;
            }
        }
        // The ring holds only unfinished tasks, fewer than `depth` (at most its capacity), so
        // it has a slot too; a push that finds none answers `Full` anyway.
        true
    }

    /// Takes the lane's submit lock (one submitter of this queue at a time).
    #[inline]
    pub(crate) fn producer(&self) -> Producer<'_> {
        match self.try_producer() {
            Some(p) => p,
            None => self.producer_contended(),
        }
    }

    /// [`producer`](Self::producer) when another thread holds the lock: spins, then yields,
    /// then sleeps a little between tries (a holder may be waiting for room in the queue, which
    /// takes as long as the device needs; it notifies nobody when it lets go).
    #[cold]
    #[inline(never)]
    fn producer_contended(&self) -> Producer<'_> {
        let mut tries = 0u32;
        loop {
            if let Some(p) = self.try_producer() {
                return p;
            }
            tries = tries.saturating_add(1);
            if tries < 64 {
                std::hint::spin_loop();
            } else if tries < 128 {
                std::thread::yield_now();
            } else {
                // A backoff, not a wait for anything in particular: the next try decides.
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }

    /// Takes the lane's submit lock if nobody holds it (a worker giving the lane back, which
    /// holds the scheduler's lock and so may not wait for a submit lock: lock order).
    #[inline]
    pub(crate) fn try_producer(&self) -> Option<Producer<'_>> {
        // Acquire: what the last holder wrote under the lock happens before this holder's
        // reads. Relaxed first, so a contended lock costs no write to its line.
        let w = &self.prod.0;
        // `then`, not `then_some`: a guard made and dropped on failure would give the lock back.
        (!w.locked.load(Ordering::Relaxed)
            && w.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok())
        .then(|| Producer { w })
    }

    /// Closes (or, when a destroy gives up, reopens) the lane to submitters: a submission
    /// that takes the submit lock after a close finds it closed and queues nothing. Taken
    /// alone (lock order: the submit lock, then the scheduler's), so everything submitted
    /// before a close is in the lane or the executor once this returns.
    pub(crate) fn set_closed(&self, closed: bool) {
        self.producer().w.closed.store(closed, Ordering::Relaxed);
    }

    /// An error for a submission that holds the submit lock, when the lane is closed.
    pub(crate) fn check_open(p: &Producer) -> hal::Result<()> {
        if p.w.closed.load(Ordering::Relaxed) {
            return Err(hal::Error::new(
                hal::ErrorKind::InvalidHandle,
                "the queue is being destroyed; the task was not queued",
            ));
        }
        Ok(())
    }

    /// Records `seq` as handed out (under the submit lock).
    #[inline]
    pub(crate) fn note_submitted(&self, p: &mut Producer, seq: u64) {
        // Release: a reader that sees `seq` sees the descriptor's publication.
        p.w.submitted.store(seq, Ordering::Release);
    }

    /// The highest sequence number handed out (any thread).
    pub(crate) fn submitted(&self) -> u64 {
        self.prod.submitted.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_submit_lock_is_held_until_its_guard_goes_and_a_failed_try_takes_nothing() {
        let lane = Lane::new(QueueId(0), 0, 8, Arc::new(sched::Progress::new())).unwrap();
        let held = lane.producer();
        assert!(lane.try_producer().is_none());
        assert!(lane.try_producer().is_none(), "a failed try gave the holder's lock back");
        drop(held);
        let mut p = lane.try_producer().expect("free again");
        assert!(!p.replace_posted(true));
        lane.note_submitted(&mut p, 3);
        drop(p);
        let p = lane.producer();
        assert!(p.posted(), "the next holder sees what the last one wrote");
        assert_eq!((p.submitted(), lane.submitted()), (3, 3));
    }

    fn go(start: bool) -> Step {
        Step { watched: false, start }
    }

    #[test]
    fn a_run_starts_each_task_once_unless_an_abort_cancelled_it() {
        let lane = Lane::new(QueueId(0), 0, 8, Arc::new(sched::Progress::new())).unwrap();
        lane.begin_run(5, 8);
        assert_eq!(lane.step(5, true), go(true), "6 is claimed");
        assert_eq!(lane.progress.completed(), 5, "5 is published");
        // An abort while task 6 runs cancels 7 and 8, once.
        assert_eq!(lane.cancel_run(), 2);
        assert_eq!(lane.cancel_run(), 0, "cancelled already");
        assert_eq!(lane.step(6, true), go(false), "7 was cancelled");
        assert_eq!(lane.progress.completed(), 6, "6 finished all the same");
        lane.end_run();
        assert_eq!(lane.cancel_run(), 0, "no run");
        lane.begin_run(9, 10);
        assert_eq!(lane.step(9, false), go(true));
        assert_eq!(lane.progress.completed(), 6, "nothing published after a failure");
        assert_eq!(lane.cancel_run(), 0, "every task of the run started");
    }

    #[test]
    fn an_abort_and_a_claim_agree_on_the_task_between_them_in_every_order() {
        let lane = Lane::new(QueueId(0), 0, 8, Arc::new(sched::Progress::new())).unwrap();
        // The abort first: it counts 6, 7 and 8; the claim of 6 that follows is taken back.
        lane.begin_run(5, 8);
        assert_eq!(lane.cancel_run(), 3);
        assert_eq!(lane.step(5, true), go(false));
        lane.end_run();
        // The claim of 6 first, seen by the abort: 6 runs, 7 and 8 do not.
        lane.begin_run(5, 8);
        assert_eq!(lane.step(5, true), go(true));
        assert_eq!(lane.cancel_run(), 2);
        lane.end_run();
        // Both see each other (the claim was written, then the worker read the mark after the
        // abort swapped the claim away): the abort counted 6 as started, so it starts.
        lane.begin_run(5, 8);
        lane.run_next.store(7, Ordering::Relaxed);
        assert_eq!(lane.cancel_run(), 2);
        assert!(lane.claim_cancelled(6));
        // Both see each other, the worker first: the claim is taken back, and the abort,
        // reading what is left, counts 6 as cancelled.
        lane.end_run();
        lane.begin_run(5, 8);
        lane.run_next.store(7, Ordering::Relaxed);
        lane.run_cancelled.store(true, Ordering::Relaxed);
        assert!(!lane.claim_cancelled(6));
        assert_eq!(lane.run_next.swap(0, Ordering::AcqRel), 6, "the abort's swap counts 6, 7 and 8");
    }

    #[test]
    fn every_descriptor_round_trips() {
        let d = DeviceAddr;
        let all = [
            TaskDesc::Copy { dst: d(1), src: d(2), len_bytes: 3 },
            TaskDesc::Copy2d { dst: d(1), dst_pitch: 2, src: d(3), src_pitch: 4, width: 5, height: 6 },
            TaskDesc::CopyBatch { batch: 9 },
            TaskDesc::Memset { dst: d(7), value: 0xab, len_bytes: 8 },
            TaskDesc::Memset32 { dst: d(7), value: 0xdead_beef, count: 8 },
            TaskDesc::Kernel { func: 1, blocks: 2, args: 3, timeout_us: 4 },
            TaskDesc::HostFunc { call: HostCall { func: 1, data: 2, report: None } },
            TaskDesc::HostFunc { call: HostCall { func: 1, data: 2, report: Some((3, true)) } },
            TaskDesc::HostFunc { call: HostCall { func: 1, data: 2, report: Some((3, false)) } },
            TaskDesc::ValueWrite { dst: d(5), value: 6 },
            TaskDesc::ValueWait { addr: d(5), value: 6, compare: WaitCompare::GreaterOrEqual },
            TaskDesc::ValueWait { addr: d(5), value: 6, compare: WaitCompare::Equal },
            TaskDesc::ValueWait { addr: d(5), value: 6, compare: WaitCompare::And },
            TaskDesc::ValueWait { addr: d(5), value: 6, compare: WaitCompare::Nor },
            TaskDesc::Timestamp { dst: d(4) },
            TaskDesc::Marker,
        ];
        for t in all {
            assert_eq!(decode(&encode(&t)), Some(t));
        }
        assert_eq!(decode(&[0; WORDS]), None);
        assert_eq!(decode(&[4, 0, 256, 0, 0, 0, 0, 0]), None, "a memset byte out of range");
    }
}
