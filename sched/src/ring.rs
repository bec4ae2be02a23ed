//! A bounded single-producer, single-consumer ring of task descriptors: the cursor protocol,
//! generic over where the descriptors live.
//!
//! This module owns the two sequence words of a ring (the producer's *tail*, the consumer's
//! *head*), the full/empty rules, wrap-around and the order in which a descriptor and its
//! publication become visible. It does not own the descriptor memory: a [`SlotStorage`]
//! supplies it, so the software NPU keeps its descriptors in atomic words on the heap
//! ([`WordSlots`]) while the davinci backend can supply the submission queue memory it maps
//! from the driver. It must not know what a descriptor means, and it never blocks (waiting
//! for room or for work is the owner's, by the rules of [`wake`](crate::wake)).
//!
//! # The protocol
//!
//! Descriptors are numbered from 1 in push order; descriptor `s` lives in slot
//! `(s - 1) % capacity`. Two words, both only ever raised:
//!
//! - `tail` = the number of descriptors published (written by the producer only);
//! - `head` = the number of descriptors released by the consumer (written by the consumer only).
//!
//! The ring is empty when `head == tail` and full when `tail - head == capacity`.
//!
//! - **Push** (producer): read `tail` (its own word) and `head` (acquire: the consumer's reads
//!   of the slot being reused happen before it is overwritten); if full, answer
//!   [`Full`]; else write the descriptor into slot `tail % capacity`, then store `tail + 1` with
//!   release, which publishes the descriptor.
//! - **Peek** (consumer): read `tail` with acquire (pairs with the push's release, so the
//!   descriptor's words are visible), read the slot at `head`.
//! - **Release** (consumer): store `head + 1` with release, which hands the slot back. A
//!   consumer may keep a descriptor in its slot while it runs and release it when it finishes,
//!   so `capacity` bounds the tasks queued *or running*.
//!
//! # Producers and consumers
//!
//! Single producer and single consumer: at most one thread pushes at a time and at most one
//! thread peeks/releases at a time. The caller serialises each side (the software NPU: a
//! stream's submitters take the stream's own submit lock, never a per-device one; its consumer
//! side is the one worker that owns the stream's head). Breaking the rule cannot cause undefined
//! behaviour (there is no `unsafe`), but can lose or duplicate descriptors. Because the head and
//! tail are plain sequence words that only grow, any thread may read them to ask how far the
//! ring has got ([`Ring::published`], [`Ring::released`]).
//!
//! # Cache lines
//!
//! Each side's words sit on a cache line of their own ([`CachePadded`]), and each side keeps
//! the last value it read of the other side's word: a push reads the consumer's `head` only
//! when the ring looks full by that copy, a peek reads the producer's `tail` only when the ring
//! looks empty by its copy. A stale copy is always on the safe side (the other side's word
//! only grows), and the acquire load that produced it already ordered the accesses it covers.
//! In a flood the two threads therefore share a line only when one of them runs out of
//! known room or work, not on every descriptor.
//!
//! A ring whose consumer finds it through a list of *posted* rings (the software NPU's
//! [`Inbox`](crate::inbox::Inbox)) keeps its posted mark outside the ring, under its
//! producers' lock (see [`inbox`](crate::inbox)): a push writes only its slot and the tail.
//!
//! The loom models at the bottom check the protocol with the real [`Ring`] over [`WordSlots`].

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::sync::{AtomicU64, Ordering};

/// The memory a [`Ring`] keeps its descriptors in: `capacity` slots of one descriptor each.
///
/// A ring calls [`write`](Self::write) on a slot only while the slot is the producer's (not
/// published, or released by the consumer) and [`read`](Self::read) only while it is the
/// consumer's (published, not released), so an implementation needs no synchronisation of its
/// own beyond being shareable: relaxed atomic words are enough, because the ring's cursors
/// order the accesses.
pub trait SlotStorage {
    /// One task descriptor as the ring's users see it.
    type Desc;

    /// Slots in the storage; a ring requires a power of two.
    fn capacity(&self) -> usize;

    /// Writes `desc` into slot `index` (below [`capacity`](Self::capacity)).
    fn write(&self, index: usize, desc: &Self::Desc);

    /// Reads the descriptor in slot `index` (below [`capacity`](Self::capacity)).
    fn read(&self, index: usize) -> Self::Desc;
}

/// 64-bit words in a 64-byte cache line.
const LINE_WORDS: usize = 8;

/// Heap slots of `W` atomic 64-bit words each: the software NPU's descriptor memory. The
/// first slot starts on a 64-byte boundary, so slots of 8 words each have a cache line of
/// their own (a producer writing one never takes a line a consumer is reading).
#[derive(Debug)]
pub struct WordSlots<const W: usize> {
    words: Box<[AtomicU64]>,
    /// The index of slot 0's first word: the slots start on a cache-line boundary.
    first: usize,
    capacity: usize,
}

impl<const W: usize> WordSlots<W> {
    /// Storage for `capacity` descriptors of `W` words, all zero.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the words cannot be allocated.
    pub fn new(capacity: usize) -> Result<Self> {
        // Room for the slots and for moving them to the next 64-byte boundary.
        let n =
            capacity.checked_mul(W).and_then(|n| n.checked_add(LINE_WORDS)).ok_or(Error::InvalidArgument)?;
        let mut words = Vec::new();
        words.try_reserve_exact(n).map_err(|_| Error::InvalidArgument)?;
        words.extend((0..n).map(|_| AtomicU64::new(0)));
        let words = words.into_boxed_slice();
        // The words up to the first 64-byte boundary are left unused, so that a slot of a
        // multiple of 8 words never shares a cache line with its neighbours.
        let misaligned = (words.as_ptr().addr() / 8) % LINE_WORDS;
        let first = (LINE_WORDS - misaligned) % LINE_WORDS;
        Ok(Self { words, first, capacity })
    }
}

impl<const W: usize> SlotStorage for WordSlots<W> {
    type Desc = [u64; W];

    fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline]
    fn write(&self, index: usize, desc: &[u64; W]) {
        let base = self.first + index * W;
        for (w, v) in self.words[base..base + W].iter().zip(desc) {
            // Relaxed: the ring's tail store (release) publishes the words.
            w.store(*v, Ordering::Relaxed);
        }
    }

    #[inline]
    fn read(&self, index: usize) -> [u64; W] {
        let base = self.first + index * W;
        let mut out = [0u64; W];
        for (o, w) in out.iter_mut().zip(&self.words[base..base + W]) {
            // Relaxed: the ring's tail load (acquire) made the words visible.
            *o = w.load(Ordering::Relaxed);
        }
        out
    }
}

/// `T` alone on its cache line(s): 128 bytes, the unit in which x86 prefetches pairs of lines
/// and the line size of many aarch64 cores, so that words written by different threads never
/// share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct CachePadded<T>(pub T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The producer's words: its `tail` and its copy of the consumer's `head`.
#[derive(Debug)]
struct ProducerSide {
    tail: AtomicU64,
    /// The last `head` the producer read (written by the producer only).
    head_seen: AtomicU64,
}

/// The consumer's words: its `head` and its copy of the producer's `tail`.
#[derive(Debug)]
struct ConsumerSide {
    head: AtomicU64,
    /// The last `tail` the consumer read (written by the consumer only).
    tail_seen: AtomicU64,
}

/// The ring had no room: `capacity` descriptors are published and not released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// A bounded single-producer, single-consumer ring of descriptors over `S` (see the module
/// documentation for the protocol and who may call what).
///
/// # Invariants
///
/// `released <= published <= released + capacity`; both only grow; `capacity` is a power of
/// two and `mask == capacity - 1`.
#[derive(Debug)]
pub struct Ring<S> {
    /// Descriptors published (the producer's word), with the producer's copy of `head`.
    prod: CachePadded<ProducerSide>,
    /// Descriptors released (the consumer's word), with the consumer's copy of `tail`.
    cons: CachePadded<ConsumerSide>,
    mask: u64,
    slots: S,
}

impl<S: SlotStorage> Ring<S> {
    /// An empty ring over `slots`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the storage's capacity is zero or not a power of two.
    pub fn new(slots: S) -> Result<Self> {
        let cap = slots.capacity();
        if !cap.is_power_of_two() {
            return Err(Error::InvalidArgument);
        }
        // CAST: a power-of-two usize fits in u64 on every target.
        Ok(Self {
            prod: CachePadded(ProducerSide { tail: AtomicU64::new(0), head_seen: AtomicU64::new(0) }),
            cons: CachePadded(ConsumerSide { head: AtomicU64::new(0), tail_seen: AtomicU64::new(0) }),
            mask: cap as u64 - 1,
            slots,
        })
    }

    /// Slots in the ring.
    #[inline]
    pub fn capacity(&self) -> usize {
        // CAST: the mask came from a usize.
        self.mask as usize + 1
    }

    /// The storage the ring runs over.
    pub fn storage(&self) -> &S {
        &self.slots
    }

    #[inline]
    fn index(&self, seq0: u64) -> usize {
        // CAST: masked below the capacity, a usize.
        (seq0 & self.mask) as usize
    }

    /// Producer only: publishes `desc` and returns its sequence number (1 for the first).
    ///
    /// # Errors
    ///
    /// [`Full`] when `capacity` descriptors are published and not released; nothing changes.
    #[inline]
    pub fn try_push(&self, desc: &S::Desc) -> core::result::Result<u64, Full> {
        let tail = self.room()?;
        self.slots.write(self.index(tail), desc);
        // Release: the descriptor's words happen before the new tail.
        self.prod.tail.store(tail + 1, Ordering::Release);
        Ok(tail + 1)
    }

    /// Producer only: the tail when there is a free slot.
    #[inline]
    fn room(&self) -> core::result::Result<u64, Full> {
        // Relaxed: only this (the producing) thread stores the tail and its copy of the head.
        let tail = self.prod.tail.load(Ordering::Relaxed);
        let mut head = self.prod.head_seen.load(Ordering::Relaxed);
        if tail - head > self.mask {
            // Acquire: the consumer's reads of the slot we may reuse happen before our write.
            // (A copy read earlier was read with acquire too, which still orders them.)
            head = self.cons.head.load(Ordering::Acquire);
            self.prod.head_seen.store(head, Ordering::Relaxed);
            if tail - head > self.mask {
                return Err(Full);
            }
        }
        Ok(tail)
    }

    /// Consumer only: the oldest published descriptor not yet released, with its sequence
    /// number, or `None` when the ring is empty. The descriptor stays in its slot.
    #[inline]
    pub fn peek(&self) -> Option<(u64, S::Desc)> {
        // Relaxed: only this (the consuming) thread stores the head and its copy of the tail.
        let head = self.cons.head.load(Ordering::Relaxed);
        if head == self.cons.tail_seen.load(Ordering::Relaxed) {
            // Acquire: pairs with the push's release; the slot's words are visible. (A copy
            // read earlier was read with acquire too, which still makes them visible.)
            let tail = self.prod.tail.load(Ordering::Acquire);
            self.cons.tail_seen.store(tail, Ordering::Relaxed);
            if head == tail {
                return None;
            }
        }
        Some((head + 1, self.slots.read(self.index(head))))
    }

    /// Consumer only: releases the oldest published descriptor (the one [`peek`](Self::peek)
    /// showed), handing its slot back to the producer; `false` when the ring is empty.
    #[inline]
    pub fn release(&self) -> bool {
        self.release_to(self.cons.head.load(Ordering::Relaxed) + 1)
    }

    /// Consumer only: releases every descriptor up to sequence `seq` (clamped to what is
    /// published); returns whether the head moved. Used to drop descriptors without running
    /// them.
    pub fn release_to(&self, seq: u64) -> bool {
        let head = self.cons.head.load(Ordering::Relaxed);
        let mut tail = self.cons.tail_seen.load(Ordering::Relaxed);
        if seq > tail {
            // Acquire: as in `peek`.
            tail = self.prod.tail.load(Ordering::Acquire);
            self.cons.tail_seen.store(tail, Ordering::Relaxed);
        }
        let target = seq.min(tail);
        if target <= head {
            return false;
        }
        // Release: our reads of the released slots happen before the producer reuses them.
        self.cons.head.store(target, Ordering::Release);
        true
    }

    /// Consumer only: peeks and releases at once.
    #[inline]
    pub fn try_pop(&self) -> Option<(u64, S::Desc)> {
        let got = self.peek()?;
        // Release: the read above happens before the slot is reused.
        self.cons.head.store(got.0, Ordering::Release);
        Some(got)
    }

    /// The number of descriptors published so far (the tail); any thread.
    #[inline]
    pub fn published(&self) -> u64 {
        self.prod.tail.load(Ordering::Acquire)
    }

    /// The number of descriptors released so far (the head); any thread.
    #[inline]
    pub fn released(&self) -> u64 {
        self.cons.head.load(Ordering::Acquire)
    }

    /// Descriptors published and not released (a snapshot when read from a third thread).
    #[inline]
    pub fn len(&self) -> usize {
        let head = self.released();
        // CAST: at most the capacity, a usize.
        self.published().saturating_sub(head) as usize
    }

    /// Whether nothing is published and unreleased (a snapshot from a third thread).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;

    use alloc::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    fn ring(cap: usize) -> Ring<WordSlots<2>> {
        Ring::new(WordSlots::new(cap).unwrap()).unwrap()
    }

    #[test]
    fn capacity_must_be_a_power_of_two() {
        assert_eq!(Ring::new(WordSlots::<1>::new(0).unwrap()).unwrap_err(), Error::InvalidArgument);
        assert_eq!(Ring::new(WordSlots::<1>::new(3).unwrap()).unwrap_err(), Error::InvalidArgument);
        assert_eq!(ring(4).capacity(), 4);
    }

    #[test]
    fn full_empty_and_wrap() {
        let r = ring(2);
        assert!(r.is_empty() && r.peek().is_none() && !r.release());
        assert_eq!(r.try_push(&[1, 10]), Ok(1));
        assert_eq!(r.try_push(&[2, 20]), Ok(2));
        assert_eq!(r.try_push(&[3, 30]), Err(Full));
        assert_eq!(r.len(), 2);
        // A peeked descriptor keeps its slot until released.
        assert_eq!(r.peek(), Some((1, [1, 10])));
        assert_eq!(r.try_push(&[3, 30]), Err(Full));
        assert!(r.release());
        assert_eq!(r.try_push(&[3, 30]), Ok(3));
        assert_eq!(r.try_pop(), Some((2, [2, 20])));
        assert_eq!(r.try_pop(), Some((3, [3, 30])));
        assert_eq!(r.try_pop(), None);
        assert_eq!((r.published(), r.released()), (3, 3));
    }

    #[test]
    fn release_to_drops_up_to_what_is_published() {
        let r = ring(4);
        for v in 0..3 {
            r.try_push(&[v, v]).unwrap();
        }
        assert!(r.release_to(2));
        assert_eq!(r.peek(), Some((3, [2, 2])));
        assert!(r.release_to(u64::MAX));
        assert!(!r.release_to(1), "the head never goes back");
        assert!(r.is_empty());
        assert_eq!(r.released(), 3);
    }

    #[test]
    fn cross_thread_order_and_contents() {
        const N: u64 = 20_000;
        let r = std::sync::Arc::new(ring(8));
        let p = std::sync::Arc::clone(&r);
        let producer = std::thread::spawn(move || {
            for v in 1..=N {
                while p.try_push(&[v, !v]).is_err() {
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 1;
        while next <= N {
            if let Some((seq, d)) = r.try_pop() {
                assert_eq!((seq, d), (next, [next, !next]));
                next += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        producer.join().unwrap();
        assert!(r.is_empty());
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push(u64),
        Peek,
        Release,
        Pop,
        ReleaseTo(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u64>().prop_map(Op::Push),
            1 => Just(Op::Peek),
            1 => Just(Op::Release),
            2 => Just(Op::Pop),
            1 => any::<u8>().prop_map(Op::ReleaseTo),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 4 } else { 256 },
            // No failure file: Miri's isolation has no current directory.
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// The ring behaves as a bounded VecDeque of (sequence, descriptor).
        #[test]
        fn matches_a_vecdeque(cap_log in 0u32..4, ops in proptest::collection::vec(op(), 0..200)) {
            let cap = 1usize << cap_log;
            let r = ring(cap);
            let mut model: VecDeque<(u64, [u64; 2])> = VecDeque::new();
            let mut next = 1u64;
            for op in ops {
                match op {
                    Op::Push(v) => {
                        let got = r.try_push(&[v, next]);
                        if model.len() == cap {
                            prop_assert_eq!(got, Err(Full));
                        } else {
                            prop_assert_eq!(got, Ok(next));
                            model.push_back((next, [v, next]));
                            next += 1;
                        }
                    }
                    Op::Peek => prop_assert_eq!(r.peek(), model.front().copied()),
                    Op::Release => prop_assert_eq!(r.release(), model.pop_front().is_some()),
                    Op::Pop => prop_assert_eq!(r.try_pop(), model.pop_front()),
                    Op::ReleaseTo(k) => {
                        let target = r.released() + u64::from(k % 5);
                        let before = model.len();
                        while model.front().is_some_and(|f| f.0 <= target) {
                            model.pop_front();
                        }
                        prop_assert_eq!(r.release_to(target), model.len() != before);
                    }
                }
                prop_assert_eq!(r.len(), model.len());
                prop_assert_eq!(r.published(), next - 1);
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    extern crate std;

    use loom::sync::Arc;

    use super::*;

    /// A producer pushes three descriptors through a two-slot ring (so it wraps and meets a
    /// full ring) while the consumer peeks, checks and releases: every descriptor arrives once,
    /// in order, with both of its words.
    #[test]
    fn loom_ring_spsc_order_wrap_and_full() {
        loom::model(|| {
            let r = Arc::new(Ring::new(WordSlots::<2>::new(2).unwrap()).unwrap());
            let p = Arc::clone(&r);
            let producer = loom::thread::spawn(move || {
                for v in 1..=3u64 {
                    while p.try_push(&[v, v * 10]).is_err() {
                        loom::thread::yield_now();
                    }
                }
            });
            let mut next = 1u64;
            while next <= 3 {
                match r.peek() {
                    Some((seq, d)) => {
                        assert_eq!((seq, d), (next, [next, next * 10]));
                        assert!(r.release());
                        next += 1;
                    }
                    None => loom::thread::yield_now(),
                }
            }
            producer.join().unwrap();
            assert!(r.peek().is_none());
            assert_eq!((r.published(), r.released()), (3, 3));
        });
    }

    /// A third thread that reads the head and then the tail never sees the head pass the
    /// tail.
    #[test]
    fn loom_ring_observer_sees_consistent_cursors() {
        loom::model(|| {
            let r = Arc::new(Ring::new(WordSlots::<1>::new(1).unwrap()).unwrap());
            let p = Arc::clone(&r);
            let producer = loom::thread::spawn(move || {
                for v in 1..=2u64 {
                    while p.try_push(&[v]).is_err() {
                        loom::thread::yield_now();
                    }
                }
            });
            let o = Arc::clone(&r);
            let observer = loom::thread::spawn(move || {
                let head = o.released();
                let tail = o.published();
                assert!(head <= tail);
            });
            let mut got = 0;
            while got < 2 {
                if r.try_pop().is_some() {
                    got += 1;
                } else {
                    loom::thread::yield_now();
                }
            }
            producer.join().unwrap();
            observer.join().unwrap();
        });
    }
}
