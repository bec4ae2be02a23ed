//! The wake/park protocol between the threads that submit work and the idle workers that run
//! it, as the software NPU uses it: decisions only, no blocking.
//!
//! This module owns the rules that keep a submission from costing a system call: idle workers
//! spin (one at a time) watching a [`WorkWord`], then park; work that appears wakes a parked
//! worker only when nobody spins. It must not block or park a thread itself (that is the
//! owner's, with its lock and condition variable) and must not know what work is.
//!
//! # The protocol
//!
//! The owner keeps an [`Idle`] under the same lock as its work queue, and a [`WorkWord`]
//! beside it.
//!
//! - A worker that finds nothing to do under the lock asks [`Idle::try_spin`]: if it may spin,
//!   it notes [`WorkWord::seen`], releases the lock, spins until [`WorkWord::moved`] (or its
//!   budget runs out), re-takes the lock, calls [`Idle::end_spin`] and looks for work again.
//!   Otherwise it calls [`Idle::park`] and waits on the condition variable (atomically
//!   releasing the lock), then [`Idle::unpark`] once it has the lock back.
//! - Whoever makes work appear (a submitter, or a worker that sees more work than it takes)
//!   calls [`signal`] under the lock: it bumps the word (which ends a spin) and answers whether
//!   to notify one parked worker (only when someone is parked and nobody spins).
//!
//! No wake-up is lost: a worker decides to park only under the lock right after finding no
//! work, and every signal is given under the same lock after the work is queued, so either the
//! worker saw the work, or it was counted as parked (or spinning, and then it looks again)
//! when the signal came. The loom models at the bottom check this with the real types.

use crate::sync::{AtomicU64, Ordering};

/// The workers parked (or about to park), where submitters that take no lock can see them.
///
/// The lock-free half of the protocol, for submitters that publish work without the owner's
/// lock (through a [`Ring`](crate::Ring) and an [`Inbox`](crate::inbox::Inbox)):
///
/// - a worker about to park calls [`announce`](Self::announce) under the owner's lock, then
///   looks for work once more ([`Inbox::is_empty`](crate::inbox::Inbox::is_empty), still under
///   the lock) and either takes it ([`withdraw`](Self::withdraw)) or waits on the condition
///   variable, withdrawing when it has the lock back;
/// - a submitter that posted a lane asks [`should_notify`](Self::should_notify); only when it
///   answers true (someone is parked) does it take the owner's lock (and notify once it has
///   released it). A spinning worker does not count: it may be descheduled on a loaded machine,
///   and waiting for it would cost the launch its latency.
///
/// The count's accesses and the inbox's post and last look are read-modify-writes, so for each
/// pair the second in the word's order reads the first (acquire-release): either the worker's
/// last look sees the post, or its announce happens before the submitter's
/// [`should_notify`](Self::should_notify). Taking the lock before notifying orders the notify
/// after a worker's look and its wait (which releases the lock atomically).
#[derive(Debug, Default)]
pub struct Sleepers {
    parked: AtomicU64,
}

impl Sleepers {
    /// Nobody parked.
    pub fn new() -> Self {
        Self { parked: AtomicU64::new(0) }
    }

    /// A worker is about to park (call under the owner's lock, before the last look for work).
    pub fn announce(&self) {
        self.parked.fetch_add(1, Ordering::AcqRel);
    }

    /// The worker has the lock back, or found work on its last look.
    pub fn withdraw(&self) {
        self.parked.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether a submitter that just posted work must wake a worker: one is parked (or about
    /// to park). A read-modify-write, so it reads the latest count.
    #[inline]
    pub fn should_notify(&self) -> bool {
        self.parked.fetch_add(0, Ordering::AcqRel) != 0
    }
}

/// A counter that moves whenever work may have appeared; spinning workers watch it.
#[derive(Debug)]
pub struct WorkWord {
    word: AtomicU64,
}

impl Default for WorkWord {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkWord {
    /// A word that has not moved.
    pub fn new() -> Self {
        Self { word: AtomicU64::new(0) }
    }

    /// The current value, to compare with later.
    pub fn seen(&self) -> u64 {
        // Acquire: pairs with the release in `bump`.
        self.word.load(Ordering::Acquire)
    }

    /// Whether the word moved since `seen`.
    pub fn moved(&self, seen: u64) -> bool {
        self.seen() != seen
    }

    /// Moves the word (a read-modify-write, so any thread may, with or without the owner's
    /// lock).
    fn bump(&self) {
        self.word.fetch_add(1, Ordering::Release);
    }

    /// Moves the word without the owner's lock: a submitter that published work a spinning
    /// worker must see (a lane post that made an idle queue busy), so that the spinner stops
    /// spinning and looks under the lock.
    #[inline]
    pub fn kick(&self) {
        self.bump();
    }
}

/// The idle workers, counted under the owner's lock.
///
/// # Invariants
///
/// `sleeping` counts workers between [`park`](Self::park) and [`unpark`](Self::unpark);
/// `spinning` is set between a successful [`try_spin`](Self::try_spin) and
/// [`end_spin`](Self::end_spin).
#[derive(Debug, Default)]
pub struct Idle {
    sleeping: usize,
    spinning: bool,
}

impl Idle {
    /// No worker idle.
    pub const fn new() -> Self {
        Self { sleeping: 0, spinning: false }
    }

    /// Whether the calling worker may spin (nobody else does); if so it is now the spinner.
    pub fn try_spin(&mut self) -> bool {
        if self.spinning {
            return false;
        }
        self.spinning = true;
        true
    }

    /// The spinner has the lock back.
    pub fn end_spin(&mut self) {
        self.spinning = false;
    }

    /// The calling worker is about to wait on the condition variable.
    pub fn park(&mut self) {
        self.sleeping += 1;
    }

    /// The calling worker has the lock back after waiting.
    pub fn unpark(&mut self) {
        self.sleeping -= 1;
    }

    /// Workers parked now.
    pub fn sleeping(&self) -> usize {
        self.sleeping
    }
}

/// Work may have appeared (called under the owner's lock, after queueing it): moves `word`
/// and answers whether the owner must notify one parked worker.
pub fn signal(idle: &Idle, word: &WorkWord) -> bool {
    word.bump();
    idle.sleeping > 0 && !idle.spinning
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_spinner_and_wakes_only_for_parked_workers() {
        let (mut idle, word) = (Idle::new(), WorkWord::new());
        let seen = word.seen();
        assert!(!signal(&idle, &word), "nobody idle: no wake-up");
        assert!(word.moved(seen));
        assert!(idle.try_spin());
        assert!(!idle.try_spin(), "one spinner at a time");
        idle.park();
        assert!(!signal(&idle, &word), "the spinner will look again");
        idle.end_spin();
        assert!(signal(&idle, &word), "a parked worker and no spinner");
        idle.unpark();
        assert_eq!(idle.sleeping(), 0);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    extern crate std;

    use loom::sync::{Arc, Condvar, Mutex};

    use super::*;

    /// The owner's state as the software NPU keeps it: queued work, the idle workers, a stop
    /// flag.
    struct State {
        queued: u32,
        idle: Idle,
        stop: bool,
    }

    struct Owner {
        state: Mutex<State>,
        word: WorkWord,
        work: Condvar,
    }

    /// One worker's loop as in the software NPU: take work under the lock, else spin once
    /// (loom needs a bounded spin), else park. Returns how many items it took.
    fn worker(o: &Owner) -> u32 {
        let mut took = 0;
        let mut spun = false;
        let mut st = o.state.lock().unwrap();
        loop {
            if st.queued > 0 {
                st.queued -= 1;
                took += 1;
                spun = false;
                continue;
            }
            if st.stop {
                return took;
            }
            if !spun && st.idle.try_spin() {
                let seen = o.word.seen();
                drop(st);
                spun = !o.word.moved(seen);
                st = o.state.lock().unwrap();
                st.idle.end_spin();
                continue;
            }
            st.idle.park();
            st = o.work.wait(st).unwrap();
            st.idle.unpark();
            spun = false;
        }
    }

    /// A submitter: queue an item and signal only when the queue went from empty to
    /// non-empty.
    fn submit(o: &Owner) {
        let mut st = o.state.lock().unwrap();
        let was_empty = st.queued == 0;
        st.queued += 1;
        if was_empty && signal(&st.idle, &o.word) {
            o.work.notify_one();
        }
    }

    fn stop(o: &Owner) {
        let mut st = o.state.lock().unwrap();
        st.stop = true;
        drop(st);
        o.work.notify_all();
    }

    fn owner() -> Arc<Owner> {
        Arc::new(Owner {
            state: Mutex::new(State { queued: 0, idle: Idle::new(), stop: false }),
            word: WorkWord::new(),
            work: Condvar::new(),
        })
    }

    /// A submitter and one worker: every item is taken (a lost wake-up would leave the worker
    /// parked with work queued, which loom reports as a deadlock when the stop comes last).
    #[test]
    fn loom_no_lost_wakeup_one_worker() {
        loom::model(|| {
            let o = owner();
            let w = {
                let o = Arc::clone(&o);
                loom::thread::spawn(move || worker(&o))
            };
            submit(&o);
            submit(&o);
            // Wait until the worker has drained the queue before stopping it.
            loop {
                let st = o.state.lock().unwrap();
                if st.queued == 0 {
                    break;
                }
                drop(st);
                loom::thread::yield_now();
            }
            stop(&o);
            assert_eq!(w.join().unwrap(), 2);
        });
    }

    /// Two workers and one submitter: both items are taken once, whichever worker spins or
    /// parks.
    #[test]
    fn loom_no_lost_wakeup_two_workers() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(|| {
            let o = owner();
            let ws: std::vec::Vec<_> = (0..2)
                .map(|_| {
                    let o = Arc::clone(&o);
                    loom::thread::spawn(move || worker(&o))
                })
                .collect();
            submit(&o);
            loop {
                let st = o.state.lock().unwrap();
                if st.queued == 0 {
                    break;
                }
                drop(st);
                loom::thread::yield_now();
            }
            stop(&o);
            let took: u32 = ws.into_iter().map(|w| w.join().unwrap()).sum();
            assert_eq!(took, 1);
        });
    }
}
