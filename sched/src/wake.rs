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
//!
//! Which parked worker a notification goes to is [`Parked`]'s: each worker waits on a
//! condition variable of its own, and a claimed notification goes to the one that parked
//! last (its caches are the warmest), never changing whether one is notified.

use crate::sync::{AtomicU64, Ordering};

/// The idle workers (parked or about to park, spinning, or about to look for work), where
/// submitters that take no lock can see them.
///
/// The lock-free half of the protocol, for submitters that publish work without the owner's
/// lock (through a [`Ring`](crate::Ring) and an [`Inbox`](crate::inbox::Inbox)). One word
/// counts the workers in three states: *looking* (awake and about to look at the inbox: every
/// worker starts so, and returns to it after a task, a spin or a park), *spinning* (pausing on
/// its core, at most one), and *parked* (announced, about to wait or waiting); a worker that
/// runs a task, or spins yielding its core, is in none.
///
/// - A worker leaves *looking* with a read-modify-write of the word ([`executes`](Self::executes),
///   [`spin_begins`](Self::spin_begins), [`announce`](Self::announce)) and then looks at the
///   inbox once more with a read-modify-write ([`Inbox::take`](crate::inbox::Inbox::take) or
///   [`Inbox::is_empty`](crate::inbox::Inbox::is_empty)); a spinner does so when its spin ends
///   ([`spin_ends`](Self::spin_ends), then [`looks`](Self::looks) and a look). A worker about
///   to park calls [`announce`](Self::announce) under the owner's lock, looks once more (still
///   under the lock) and either takes the work ([`withdraw`](Self::withdraw)) or waits on the
///   condition variable, withdrawing when it has the lock back.
/// - A submitter that posted a lane asks [`should_notify`](Self::should_notify): it answers
///   true only when a worker is parked and none is looking or spinning on its core (those take
///   the work themselves). Then it takes the owner's lock (and notifies once it has released
///   it). A worker that spins yielding its core does not count: it may wait long for a core on
///   a loaded machine, and the launch would wait for it.
///
/// The word's accesses and the inbox's post and looks are read-modify-writes, so for each pair
/// the second in the word's order reads the first (acquire-release): either the worker's look
/// after it left *looking* or *spinning* sees the post, or that transition happens before the
/// submitter's [`should_notify`](Self::should_notify), which then sees it (a parked worker, or
/// nobody looking). Taking the lock before notifying orders the notify after a worker's last
/// look and its wait (which releases the lock atomically).
#[derive(Debug, Default)]
pub struct Sleepers {
    /// Parked workers times [`PARKED`], plus looking workers times [`LOOKING`], plus
    /// [`SPINNING`] while one spins on its core.
    word: AtomicU64,
}

/// One parked worker in [`Sleepers`]' word.
const PARKED: u64 = 1;
/// One looking worker in [`Sleepers`]' word.
const LOOKING: u64 = 1 << 21;
/// The spinner in [`Sleepers`]' word.
const SPINNING: u64 = 1 << 42;
/// The bits of one count.
const COUNT: u64 = LOOKING - 1;

impl Sleepers {
    /// No worker counted (each worker calls [`looks`](Self::looks) when it starts).
    pub fn new() -> Self {
        Self { word: AtomicU64::new(0) }
    }

    /// Moves the word by `delta` (wrapping: a count that goes down is added as its two's
    /// complement).
    #[inline]
    fn add(&self, delta: u64) {
        self.word.fetch_add(delta, Ordering::AcqRel);
    }

    /// A worker starts, or is back from a task or a spin: it is about to look for work.
    #[inline]
    pub fn looks(&self) {
        self.add(LOOKING);
    }

    /// A looking worker took a task and will run it: it looks at the inbox once more
    /// afterwards (and passes on what it finds there).
    #[inline]
    pub fn executes(&self) {
        self.add(LOOKING.wrapping_neg());
    }

    /// A looking worker is about to park (call under the owner's lock, before the last look
    /// for work).
    pub fn announce(&self) {
        self.add(PARKED.wrapping_sub(LOOKING));
    }

    /// The worker has the lock back, or found work on its last look: it looks again.
    pub fn withdraw(&self) {
        self.add(LOOKING.wrapping_sub(PARKED));
    }

    /// A looking worker starts spinning on its core (one at a time).
    pub fn spin_begins(&self) {
        self.add(SPINNING.wrapping_sub(LOOKING));
    }

    /// The spinner stops spinning on its core (it yields it from here on, or looks for work:
    /// then it calls [`looks`](Self::looks) before its look).
    pub fn spin_ends(&self) {
        self.add(SPINNING.wrapping_neg());
    }

    /// Whether a worker is looking (a load: for a signaller under the owner's lock, where every
    /// transition out of looking happens under the same lock, so a stale answer can only be a
    /// stale "nobody", which costs a needless wake-up, never a lost one).
    #[inline]
    pub fn someone_looks(&self) -> bool {
        self.word.load(Ordering::Acquire) & (SPINNING - 1) >= LOOKING
    }

    /// Whether some worker looks or spins on its core (and so will look under the owner's lock
    /// soon): a plain load, as for [`someone_looks`](Self::someone_looks), read under the
    /// owner's lock by a worker about to run a task.
    #[inline]
    pub fn someone_looks_or_spins(&self) -> bool {
        self.word.load(Ordering::Acquire) & !COUNT != 0
    }

    /// Whether a submitter that just posted work must wake a worker: one is parked (or about
    /// to park) and none looks or spins on its core. A read-modify-write, so it reads the
    /// latest word.
    #[inline]
    pub fn should_notify(&self) -> bool {
        let w = self.word.fetch_add(0, Ordering::AcqRel);
        w & COUNT != 0 && w & !COUNT == 0
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
/// `notified` (at most `sleeping`) counts the notifications given to them that no worker has
/// woken up for yet; `spinning` is set between a successful [`try_spin`](Self::try_spin) and
/// [`end_spin`](Self::end_spin).
#[derive(Debug, Default)]
pub struct Idle {
    sleeping: usize,
    notified: usize,
    spinning: bool,
}

impl Idle {
    /// No worker idle.
    pub const fn new() -> Self {
        Self { sleeping: 0, notified: 0, spinning: false }
    }

    /// Claims the notification of one parked worker that nobody notified yet (true: the
    /// caller notifies one now, after releasing the lock or under it). False when every
    /// parked worker was notified already: those look for work once they have the lock
    /// back, after the caller's change, so one more notification would wake a worker for
    /// nothing.
    pub fn claim_wake(&mut self) -> bool {
        if self.sleeping > self.notified {
            self.notified += 1;
            return true;
        }
        false
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

    /// The calling worker has the lock back after waiting (notified or not: either way it
    /// looks for work now, so it answers for one notification).
    pub fn unpark(&mut self) {
        self.sleeping -= 1;
        self.notified = self.notified.saturating_sub(1).min(self.sleeping);
    }

    /// Workers parked now.
    pub fn sleeping(&self) -> usize {
        self.sleeping
    }
}

/// The parked workers nobody chose to notify yet, in the order they parked, for an owner whose
/// workers each wait on a condition variable of their own (at most `N` workers, numbered
/// below `N`; kept under the owner's lock beside its [`Idle`]).
///
/// A worker [`push`](Self::push)es itself right after [`Idle::park`], and calls
/// [`back`](Self::back) once it has the lock back (before [`Idle::unpark`]), chosen or not (a
/// timeout, a spurious wake-up). Whoever claims a notification ([`signal`] or
/// [`Idle::claim_wake`] answered true) takes [`choose`](Self::choose) and notifies that
/// worker's condition variable: the one that parked last, whose caches (and its core's) still
/// hold what the last task touched, where a shared condition variable would wake the longest
/// sleeper, the coldest.
///
/// This picks only *which* worker wakes; [`Idle`] still decides *whether* one does. A claim
/// that finds nobody left to choose notifies nobody and loses nothing: every parked worker was
/// chosen already, and each takes the lock back after the claim and looks. More generally,
/// `Idle`'s count of notified workers never exceeds the parked workers chosen and not yet
/// back (a claim either chooses one, or finds every parked worker chosen; a worker back
/// lowers both), so when `Idle` answers that no notification is needed while someone is
/// parked, a chosen worker is on its way to look.
#[derive(Clone, Debug)]
pub struct Parked<const N: usize> {
    ids: [u8; N],
    len: usize,
}

impl<const N: usize> Default for Parked<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Parked<N> {
    /// Nobody parked. `N` must fit the ids (at most 256 workers).
    pub const fn new() -> Self {
        assert!(N <= 256, "worker ids are bytes");
        Self { ids: [0; N], len: 0 }
    }

    /// Worker `me` (below `N`, not parked already) is about to wait on its condition variable.
    pub fn push(&mut self, me: usize) {
        debug_assert!(!self.ids[..self.len].iter().any(|&w| usize::from(w) == me), "parked twice");
        if let (Some(slot), Ok(id)) = (self.ids.get_mut(self.len), u8::try_from(me)) {
            *slot = id;
            self.len += 1;
        }
    }

    /// Worker `me` has the owner's lock back after waiting: nobody may choose it now (it may
    /// have been chosen already, and then it is not here).
    pub fn back(&mut self, me: usize) {
        if let Some(i) = self.ids[..self.len].iter().position(|&w| usize::from(w) == me) {
            self.ids.copy_within(i + 1..self.len, i);
            self.len -= 1;
        }
    }

    /// After a claimed notification: the worker to notify (the last one parked and not chosen
    /// yet), now chosen; `None` when every parked worker was chosen already.
    pub fn choose(&mut self) -> Option<usize> {
        self.len = self.len.checked_sub(1)?;
        Some(usize::from(self.ids[self.len]))
    }

    /// Parked workers not chosen yet.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether every parked worker was chosen (or nobody is parked).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Work may have appeared (called under the owner's lock, after queueing it): moves `word`
/// and answers whether the owner must notify one parked worker (someone is parked and not
/// notified yet, and nobody spins; the notification is then claimed, see
/// [`Idle::claim_wake`]).
pub fn signal(idle: &mut Idle, word: &WorkWord) -> bool {
    word.bump();
    !idle.spinning && idle.claim_wake()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_spinner_and_wakes_only_for_parked_workers() {
        let (mut idle, word) = (Idle::new(), WorkWord::new());
        let seen = word.seen();
        assert!(!signal(&mut idle, &word), "nobody idle: no wake-up");
        assert!(word.moved(seen));
        assert!(idle.try_spin());
        assert!(!idle.try_spin(), "one spinner at a time");
        idle.park();
        assert!(!signal(&mut idle, &word), "the spinner will look again");
        idle.end_spin();
        assert!(signal(&mut idle, &word), "a parked worker and no spinner");
        assert!(!signal(&mut idle, &word), "the parked worker was notified already");
        idle.park();
        assert!(signal(&mut idle, &word), "a second parked worker nobody notified");
        idle.unpark();
        idle.unpark();
        assert_eq!(idle.sleeping(), 0);
        idle.park();
        assert!(signal(&mut idle, &word), "notifications were answered by the wake-ups");
    }

    #[test]
    fn the_last_parked_is_chosen_first_and_a_worker_back_is_never_chosen() {
        let mut p = Parked::<4>::new();
        assert_eq!(p.choose(), None);
        p.push(2);
        p.push(0);
        p.push(3);
        assert_eq!(p.len(), 3);
        assert_eq!(p.choose(), Some(3), "the last parked, the warmest");
        // Worker 2 times out: it is back and may not be chosen.
        p.back(2);
        p.back(3);
        assert_eq!(p.choose(), Some(0));
        assert_eq!(p.choose(), None);
        assert!(p.is_empty());
        p.push(1);
        p.push(2);
        p.back(1);
        assert_eq!(p.choose(), Some(2));
        assert!(p.is_empty());
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
        parked: Parked<2>,
        stop: bool,
    }

    /// Each worker waits on a condition variable of its own, as in the software NPU.
    struct Owner {
        state: Mutex<State>,
        word: WorkWord,
        work: [Condvar; 2],
    }

    /// One worker's loop as in the software NPU: take work under the lock, else spin once
    /// (loom needs a bounded spin), else park. Returns how many items it took.
    fn worker(o: &Owner, me: usize) -> u32 {
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
            st.parked.push(me);
            st = o.work[me].wait(st).unwrap();
            st.parked.back(me);
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
        let chosen = if was_empty && signal(&mut st.idle, &o.word) { st.parked.choose() } else { None };
        // Notified after the unlock, as the software NPU does.
        drop(st);
        if let Some(w) = chosen {
            o.work[w].notify_one();
        }
    }

    fn stop(o: &Owner) {
        let mut st = o.state.lock().unwrap();
        st.stop = true;
        drop(st);
        for work in &o.work {
            work.notify_all();
        }
    }

    fn owner() -> Arc<Owner> {
        Arc::new(Owner {
            state: Mutex::new(State { queued: 0, idle: Idle::new(), parked: Parked::new(), stop: false }),
            word: WorkWord::new(),
            work: [Condvar::new(), Condvar::new()],
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
                loom::thread::spawn(move || worker(&o, 0))
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
                .map(|me| {
                    let o = Arc::clone(&o);
                    loom::thread::spawn(move || worker(&o, me))
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
