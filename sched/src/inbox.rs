//! Which lanes (per-stream [`Ring`](crate::Ring)s filled without the consumer's lock) have
//! something for their consumer: a two-level bitmap that submitters post to and the consumer
//! takes from.
//!
//! This module owns the posting protocol between many producers (one per lane at a time) and
//! the one consumer that drains lanes (the software NPU: whichever worker holds the device's
//! lock). It must not know what a lane holds, and it never blocks; waking a parked consumer is
//! [`wake::Sleepers`](crate::wake::Sleepers)'s.
//!
//! # The protocol
//!
//! A lane is *posted* from the push that finds it not posted until its consumer gives it back.
//! The mark is the lane's own, kept beside its ring under the lane's *submit lock*, the lock its
//! producers take one at a time to push: a producer to a posted lane writes nothing but the
//! descriptor's slot and the ring's tail, and no word a consumer writes.
//!
//! - A producer, holding the submit lock, publishes with [`Ring::try_push`](crate::Ring::try_push)
//!   and sets the mark; when the mark was clear, it calls [`Inbox::post`] with the lane's index
//!   after it lets go of the lock (and then wakes a consumer if none will look, by
//!   [`wake`](crate::wake)'s rules).
//! - The consumer calls [`Inbox::take`], which hands it every newly posted lane once, and
//!   keeps those lanes in a set of its own (the lanes it *owns*). On every look it drains each
//!   owned lane's ring. A lane whose stream has something unfinished it keeps: the consumer
//!   looks again when that finishes. A few *idle* lanes (ring empty, stream with nothing
//!   unfinished) it may keep while it is awake, watching their rings while it spins, so that a
//!   stream it keeps up with costs its producer no post and no wake-up per descriptor.
//! - The consumer gives an idle lane back before it parks (and whenever it keeps more than it
//!   watches): it takes the lane's submit lock with a try-lock (it holds its own lock, which a
//!   producer may take after the submit lock, so it must not wait), and with the lock held and
//!   the ring empty it clears the mark. When the ring is not empty it drains again; when the
//!   try-lock fails, it lets go of its own lock and looks again.
//!
//! No publication is stranded: a mark is cleared only under the submit lock with the ring
//! empty, so a push either came before the clear (then the ring was not empty, and the
//! consumer drained it instead) or comes after it (then it finds the mark clear and posts the
//! lane). The loom model at the bottom checks this with the real [`Ring`](crate::Ring),
//! [`Inbox`] and [`Sleepers`](crate::wake::Sleepers), a consumer that owns the lane while a
//! task of it runs and keeps it while idle and awake, spinning or not, and the race of a push
//! with the give-back.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::sync::{AtomicU64, Ordering};

/// Lanes of one word of the bitmap.
const WORD_BITS: usize = 64;

/// A bitmap of posted lanes with a summary word of non-empty bitmap words.
///
/// # Invariants
///
/// At most `64 * 64` lanes; a set bit in a word is (or will soon be) summarised in `summary`.
#[derive(Debug)]
pub struct Inbox {
    summary: AtomicU64,
    words: Box<[AtomicU64]>,
}

impl Inbox {
    /// The most lanes an inbox holds.
    pub const MAX_LANES: usize = WORD_BITS * WORD_BITS;

    /// An empty inbox for lanes `0..lanes`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `lanes` is above [`Self::MAX_LANES`].
    pub fn new(lanes: usize) -> Result<Self> {
        if lanes > Self::MAX_LANES {
            return Err(Error::InvalidArgument);
        }
        let words: Vec<AtomicU64> = (0..lanes.div_ceil(WORD_BITS)).map(|_| AtomicU64::new(0)).collect();
        Ok(Self { summary: AtomicU64::new(0), words: words.into_boxed_slice() })
    }

    /// Posts lane `lane` (below the inbox's size; others are ignored). The summary is marked
    /// with an acquire-release read-modify-write, the submitter's half of the
    /// [`Sleepers`](crate::wake::Sleepers) handshake.
    #[inline]
    pub fn post(&self, lane: usize) {
        let Some(word) = self.words.get(lane / WORD_BITS) else { return };
        word.fetch_or(1 << (lane % WORD_BITS), Ordering::AcqRel);
        self.summary.fetch_or(1 << (lane / WORD_BITS), Ordering::AcqRel);
    }

    /// Whether nothing is posted: a parking consumer's last look, a read-modify-write (so it
    /// reads the latest summary and orders the consumer's earlier
    /// [`Sleepers::announce`](crate::wake::Sleepers::announce) before a later post).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.summary.fetch_or(0, Ordering::AcqRel) == 0
    }

    /// Whether nothing is posted, as a plain load (a spinning consumer's hint).
    #[inline]
    pub fn looks_empty(&self) -> bool {
        self.summary.load(Ordering::Relaxed) == 0
    }

    /// The consumer: calls `f` once with each posted lane, clearing it; returns how many.
    ///
    /// Its look at the summary is a read-modify-write even when nothing is posted, so a
    /// consumer that published something before calling it (a finished task's completion) and
    /// a producer that posts and then reads that publication cannot both miss the other: the
    /// one whose read-modify-write comes second in the summary's order sees the first's.
    pub fn take(&self, mut f: impl FnMut(usize)) -> usize {
        let mut n = 0;
        if self.is_empty() {
            return 0;
        }
        let mut summary = self.summary.swap(0, Ordering::AcqRel);
        while summary != 0 {
            // CAST: a bit index of a u64.
            let w = summary.trailing_zeros() as usize;
            summary &= summary - 1;
            let mut bits = self.words[w].swap(0, Ordering::AcqRel);
            while bits != 0 {
                // CAST: a bit index of a u64.
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                f(w * WORD_BITS + b);
                n += 1;
            }
        }
        n
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    #[test]
    fn posts_are_taken_once_in_lane_order() {
        assert_eq!(Inbox::new(Inbox::MAX_LANES + 1).unwrap_err(), Error::InvalidArgument);
        let inbox = Inbox::new(200).unwrap();
        assert!(inbox.is_empty());
        for lane in [130, 3, 64, 3, 199, 500] {
            inbox.post(lane);
        }
        let mut got = Vec::new();
        assert_eq!(inbox.take(|l| got.push(l)), 4);
        assert_eq!(got, [3, 64, 130, 199]);
        assert!(inbox.is_empty());
        assert_eq!(inbox.take(|_| panic!("nothing posted")), 0);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    extern crate std;

    use std::collections::VecDeque;

    use loom::sync::{Arc, Condvar, Mutex};

    use super::*;
    use crate::ring::{Ring, WordSlots};
    use crate::wake::Sleepers;

    /// What the device's lock guards, reduced to one lane: whether the consumer owns the lane,
    /// the descriptors it moved out of the ring (the executor), and whether one of them runs.
    #[derive(Default)]
    struct State {
        owned: bool,
        queued: VecDeque<u64>,
        running: bool,
    }

    /// The software NPU's device, reduced to one lane: a ring its submitter fills under the
    /// lane's submit lock (which guards the posted mark) without the device's lock, the inbox,
    /// the parked workers, and the lock + condition variable a worker parks on.
    struct Device {
        ring: Ring<WordSlots<1>>,
        submit: Mutex<bool>,
        inbox: Inbox,
        sleepers: Sleepers,
        lock: Mutex<State>,
        work: Condvar,
    }

    /// The submitter's path, as in the sim: under the submit lock, publish and set the mark;
    /// when the mark was clear, post the lane, and then, when a worker is parked, take the
    /// device's lock and notify after it.
    fn submit(d: &Device, v: u64) {
        let post = {
            let mut posted = d.submit.lock().unwrap();
            assert!(d.ring.try_push(&[v]).is_ok(), "the ring holds both descriptors");
            !core::mem::replace(&mut *posted, true)
        };
        if post {
            d.inbox.post(0);
            if d.sleepers.should_notify() {
                drop(d.lock.lock().unwrap());
                d.work.notify_one();
            }
        }
    }

    /// A worker's look under the lock, as in the sim: take newly posted lanes into the owned
    /// set; drain each owned lane; keep a busy lane, keep an idle one when `keep_idle`, and
    /// give an idle one back otherwise (under a try-lock of the submit lock, with the ring
    /// empty, draining again when it is not). `false` when the try-lock failed.
    fn look(d: &Device, st: &mut State, keep_idle: bool) -> bool {
        d.inbox.take(|_| st.owned = true);
        while st.owned {
            while let Some((_, [v])) = d.ring.try_pop() {
                st.queued.push_back(v);
            }
            if !st.queued.is_empty() || st.running || keep_idle {
                // Busy (the finish of what is unfinished looks again), or kept idle.
                break;
            }
            let Ok(mut posted) = d.submit.try_lock() else { return false };
            if d.ring.is_empty() {
                *posted = false;
                st.owned = false;
            }
        }
        true
    }

    /// The worker's loop, as in the sim: looking from the start; under the lock, look and
    /// take the next descriptor; run it without the lock (looking once more first), finish it
    /// under the lock and come back; with nothing to do, spin once (when `spin`: one look at
    /// the inbox and at the kept lane's ring without the lock, counted as spinning), then give
    /// the idle lane back, announce, look once more, and park. Returns the values it ran, once
    /// it ran `want` and gave the lane back.
    fn worker(d: &Device, want: usize, spin: bool) -> std::vec::Vec<u64> {
        let mut ran = std::vec::Vec::new();
        let mut spun = !spin;
        d.sleepers.looks();
        let mut g = d.lock.lock().unwrap();
        loop {
            look(d, &mut g, true);
            if let Some(v) = g.queued.pop_front() {
                g.running = true;
                d.sleepers.executes();
                look(d, &mut g, true);
                drop(g);
                ran.push(v);
                d.sleepers.looks();
                g = d.lock.lock().unwrap();
                g.running = false;
                continue;
            }
            if !spun {
                let watch = g.owned;
                drop(g);
                d.sleepers.spin_begins();
                spun = d.inbox.looks_empty() && !(watch && !d.ring.is_empty());
                d.sleepers.spin_ends();
                d.sleepers.looks();
                g = d.lock.lock().unwrap();
                continue;
            }
            if !look(d, &mut g, false) {
                // A submitter holds the submit lock: let it go on, then look again.
                drop(g);
                loom::thread::yield_now();
                g = d.lock.lock().unwrap();
                continue;
            }
            if !g.queued.is_empty() {
                continue;
            }
            if ran.len() == want {
                assert!(!g.owned, "an idle lane is given back");
                return ran;
            }
            d.sleepers.announce();
            if !d.inbox.is_empty() {
                d.sleepers.withdraw();
                continue;
            }
            g = d.work.wait(g).unwrap();
            d.sleepers.withdraw();
            spun = !spin;
        }
    }

    /// Two submissions and one worker that does not spin: the worker runs both in order (a
    /// stranded descriptor or a lost wake-up leaves it parked forever, which loom reports as a
    /// deadlock), whether the second push meets the lane owned (the first still unfinished,
    /// or drained and kept idle) or given back, or races the give-back.
    #[test]
    fn loom_lane_submit_wakes_a_parked_worker() {
        model(false, 3);
    }

    /// The same with a worker that spins (without the lock) before parking, watching the
    /// idle lane it keeps.
    #[test]
    fn loom_lane_submit_reaches_a_spinning_worker() {
        model(true, 2);
    }

    fn model(spin: bool, bound: usize) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(bound);
        b.check(move || {
            let d = Arc::new(Device {
                ring: Ring::new(WordSlots::new(2).unwrap()).unwrap(),
                submit: Mutex::new(false),
                inbox: Inbox::new(1).unwrap(),
                sleepers: Sleepers::new(),
                lock: Mutex::new(State::default()),
                work: Condvar::new(),
            });
            let w = {
                let d = Arc::clone(&d);
                loom::thread::spawn(move || worker(&d, 2, spin))
            };
            submit(&d, 1);
            submit(&d, 2);
            assert_eq!(w.join().unwrap(), [1, 2]);
            assert!(!*d.submit.lock().unwrap(), "the mark is clear once the lane is given back");
        });
    }
}
