//! Which lanes (per-stream [`Ring`](crate::Ring)s filled without the consumer's lock) have
//! something for their consumer: a two-level bitmap that submitters post to and the consumer
//! takes from, plus the per-lane flag that keeps a lane posted at most once.
//!
//! This module owns the posting protocol between many producers (one per lane at a time) and
//! the one consumer that drains lanes (the software NPU: whichever worker holds the device's
//! lock). It must not know what a lane holds, and it never blocks; waking a parked consumer is
//! [`wake::Sleepers`](crate::wake::Sleepers)'s.
//!
//! # The protocol
//!
//! - A producer publishes into its lane's ring, then calls [`Armed::after_publish`]; when that
//!   answers true (the lane was not posted) it calls [`Inbox::post`] with the lane's index.
//! - The consumer calls [`Inbox::take`], which hands it every posted lane once; for each lane
//!   it calls [`Armed::before_drain`] and then drains the ring until it is empty.
//!
//! No publication is stranded: the producer marks the flag with a read-modify-write after its
//! publication and the consumer clears it with one before its look at the ring, so whichever
//! comes second in the flag's order sees the other: either the consumer's clear reads the
//! producer's mark (acquire-release), and then the drain sees the descriptor, or the producer's
//! mark reads the clear, and then the producer posts the lane again. (Read-modify-writes, not
//! fences and plain loads, so that the argument needs no sequentially consistent order, which
//! loom does not model.) The loom model at the bottom checks this with the
//! real [`Ring`](crate::Ring), [`Inbox`], [`Armed`] and [`Sleepers`](crate::wake::Sleepers).

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::sync::{AtomicBool, AtomicU64, Ordering};

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

/// Whether a lane is posted in its [`Inbox`] (so its producer need not post it again).
#[derive(Debug, Default)]
pub struct Armed {
    posted: AtomicBool,
}

impl Armed {
    /// A lane that is not posted.
    pub fn new() -> Self {
        Self { posted: AtomicBool::new(false) }
    }

    /// The producer, after publishing into the lane's ring: whether it must post the lane now
    /// (it was not posted; it is marked posted from here on).
    #[inline]
    pub fn after_publish(&self) -> bool {
        // AcqRel read-modify-write: see the module documentation.
        !self.posted.swap(true, Ordering::AcqRel)
    }

    /// The consumer, after taking the lane from the inbox and before draining its ring: the
    /// lane is no longer posted, so a publication the drain misses posts it again.
    #[inline]
    pub fn before_drain(&self) {
        // AcqRel read-modify-write: see the module documentation.
        self.posted.swap(false, Ordering::AcqRel);
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

    #[test]
    fn armed_posts_once_until_drained() {
        let a = Armed::new();
        assert!(a.after_publish());
        assert!(!a.after_publish(), "already posted");
        a.before_drain();
        assert!(a.after_publish(), "a publication after the drain started posts again");
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    extern crate std;

    use loom::sync::{Arc, Condvar, Mutex};

    use super::*;
    use crate::ring::{Ring, WordSlots};
    use crate::wake::Sleepers;

    /// The software NPU's device, reduced to one lane: a ring its submitter fills without the
    /// lock, the inbox, the lane's flag, the parked workers, and the lock + condition variable a
    /// worker parks on.
    struct Device {
        ring: Ring<WordSlots<1>>,
        armed: Armed,
        inbox: Inbox,
        sleepers: Sleepers,
        lock: Mutex<()>,
        work: Condvar,
    }

    /// The submitter's path, as in the sim: publish, post when the lane was not posted, and
    /// only then, when a worker is parked, take the lock and notify after it.
    fn submit(d: &Device, v: u64) {
        while d.ring.try_push(&[v]).is_err() {
            loom::thread::yield_now();
        }
        if d.armed.after_publish() {
            d.inbox.post(0);
            if d.sleepers.should_notify() {
                drop(d.lock.lock().unwrap());
                d.work.notify_one();
            }
        }
    }

    /// The worker's loop, as in the sim: looking from the start; under the lock, take posted
    /// lanes and drain them; after taking something, leave looking to "run" it, look once
    /// more and come back; with nothing to do, spin once (when `spin`: one look at the inbox
    /// without the lock, counted as spinning), then announce, look once more, and park.
    /// Returns the values it took.
    fn worker(d: &Device, want: u64, spin: bool) -> std::vec::Vec<u64> {
        let mut took = std::vec::Vec::new();
        let mut spun = !spin;
        d.sleepers.looks();
        let mut g = d.lock.lock().unwrap();
        let mut drain = |took: &mut std::vec::Vec<u64>| {
            d.inbox.take(|_| {
                d.armed.before_drain();
                while let Some((_, [v])) = d.ring.try_pop() {
                    took.push(v);
                }
            })
        };
        loop {
            if drain(&mut took) > 0 {
                d.sleepers.executes();
                drain(&mut took);
                drop(g);
                d.sleepers.looks();
                g = d.lock.lock().unwrap();
            }
            // CAST: a short test vector.
            if took.len() as u64 == want {
                return took;
            }
            if !spun {
                drop(g);
                d.sleepers.spin_begins();
                spun = d.inbox.looks_empty();
                d.sleepers.spin_ends();
                d.sleepers.looks();
                g = d.lock.lock().unwrap();
                continue;
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

    /// Two submissions and one worker: the worker takes both in order (a stranded descriptor
    /// or a lost wake-up leaves it parked forever, which loom reports as a deadlock).
    #[test]
    fn loom_lane_submit_wakes_a_parked_worker() {
        model(false, 3);
    }

    /// The same with a worker that spins (without the lock) before parking.
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
                armed: Armed::new(),
                inbox: Inbox::new(1).unwrap(),
                sleepers: Sleepers::new(),
                lock: Mutex::new(()),
                work: Condvar::new(),
            });
            let w = {
                let d = Arc::clone(&d);
                loom::thread::spawn(move || worker(&d, 2, spin))
            };
            submit(&d, 1);
            submit(&d, 2);
            assert_eq!(w.join().unwrap(), [1, 2]);
        });
    }
}
