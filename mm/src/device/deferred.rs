//! Stream-ordered frees of plain device memory (`aclrtMemPoolFreeAsync` on `aclrtMalloc`
//! memory): each free waits for a point of its stream, and is settled once the stream has got
//! there.
//!
//! This module owns the pending frees only: one FIFO per stream, in sequence order, and an
//! exact-address index of the pending bases (so "is a free of this base pending?" is O(1)). It
//! does not free anything itself: settling hands the ready bases to the caller, which frees
//! them through its [`super::DeviceAllocator`] (and may do so after releasing its own lock).
//!
//! # Costs
//!
//! Settling looks only at the head of each stream's FIFO: a settle is O(streams with pending
//! frees + frees settled), never a scan of every pending free. A push is O(1) (amortised; a
//! push whose sequence is below its stream's tail, which only concurrent callers produce, is
//! placed by binary search). In steady state (no FIFO growing past its high-water mark, no new
//! stream) nothing is allocated on the heap.

use alloc::collections::{BTreeMap, VecDeque};

use crate::addr_map::AddrMap;
use crate::order::{StreamOrder, StreamPoint};

/// Why a deferred free was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeferError {
    /// A free of this base is already pending (a double free).
    AlreadyPending(StreamPoint),
}

/// The pending stream-ordered frees of one device.
#[derive(Clone, Debug)]
pub struct DeferredFrees {
    /// Per stream: `(seq, base)` in non-decreasing `seq` order.
    fifos: BTreeMap<u32, VecDeque<(u64, u64)>>,
    /// Pending bases → their point.
    pending: AddrMap<StreamPoint>,
}

impl Default for DeferredFrees {
    fn default() -> Self {
        Self::new()
    }
}

impl DeferredFrees {
    /// No pending frees.
    pub fn new() -> Self {
        Self { fifos: BTreeMap::new(), pending: AddrMap::new() }
    }

    /// Frees pending.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no free is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.len() == 0
    }

    /// The point the free of `base` waits for, if one is pending.
    pub fn pending(&self, base: u64) -> Option<StreamPoint> {
        self.pending.get(base)
    }

    /// Each stream with frees pending: `(stream, oldest seq, newest seq)`, so a caller can ask
    /// about completion with no lock held and then settle with [`Self::settle_stream`].
    pub fn streams(&self) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        self.fifos.iter().filter_map(|(&s, f)| Some((s, f.front()?.0, f.back()?.0)))
    }

    /// Records that `base` is to be freed once `point` is complete.
    ///
    /// # Errors
    ///
    /// [`DeferError::AlreadyPending`] when a free of `base` is pending already (nothing
    /// changes).
    pub fn push(&mut self, base: u64, point: StreamPoint) -> Result<(), DeferError> {
        if let Some(p) = self.pending.get(base) {
            return Err(DeferError::AlreadyPending(p));
        }
        let fifo = self.fifos.entry(point.stream).or_default();
        match fifo.back() {
            Some(&(tail, _)) if tail > point.seq => {
                let at = fifo.partition_point(|&(s, _)| s <= point.seq);
                fifo.insert(at, (point.seq, base));
            }
            _ => fifo.push_back((point.seq, base)),
        }
        self.pending.insert(base, point);
        Ok(())
    }

    /// Settles the frees of `stream` up to its completed sequence `completed`, oldest first:
    /// each is removed and handed to `ready`. Returns how many were settled.
    pub fn settle_stream(&mut self, stream: u32, completed: u64, ready: &mut impl FnMut(u64)) -> usize {
        let Some(fifo) = self.fifos.get_mut(&stream) else { return 0 };
        let mut n = 0;
        while let Some(&(seq, base)) = fifo.front() {
            if seq > completed {
                break;
            }
            fifo.pop_front();
            self.pending.remove(base);
            ready(base);
            n += 1;
        }
        n
    }

    /// Settles every free whose point `order` says is complete, stream by stream from the head
    /// of each FIFO (the first incomplete point stops its stream). Returns how many were settled.
    pub fn settle(&mut self, order: &impl StreamOrder, ready: &mut impl FnMut(u64)) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut n = 0;
        for (&stream, fifo) in &mut self.fifos {
            while let Some(&(seq, base)) = fifo.front() {
                if !order.is_complete(StreamPoint { stream, seq }) {
                    break;
                }
                fifo.pop_front();
                self.pending.remove(base);
                ready(base);
                n += 1;
            }
        }
        n
    }

    /// Forgets the (empty) FIFO of a destroyed stream, so later settles do not visit it; a
    /// stream with frees still pending keeps them (they settle when the stream's points do).
    pub fn forget_stream(&mut self, stream: u32) {
        if self.fifos.get(&stream).is_some_and(VecDeque::is_empty) {
            self.fifos.remove(&stream);
        }
    }

    /// Removes every pending free and hands each base to `each` (device reset).
    pub fn drain(&mut self, each: &mut impl FnMut(u64)) {
        for fifo in self.fifos.values_mut() {
            for (_, base) in fifo.drain(..) {
                each(base);
            }
        }
        self.fifos.clear();
        self.pending = AddrMap::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use core::cell::Cell;

    /// Streams whose completed sequence is `done[stream]`; counts the questions asked.
    struct Done<'a> {
        done: &'a [u64],
        asked: Cell<usize>,
    }

    impl StreamOrder for Done<'_> {
        fn is_complete(&self, p: StreamPoint) -> bool {
            self.asked.set(self.asked.get() + 1);
            self.done.get(p.stream as usize).is_some_and(|&d| p.seq <= d)
        }

        fn is_ordered_before(&self, p: StreamPoint, stream: u32) -> bool {
            p.stream == stream
        }
    }

    fn pt(stream: u32, seq: u64) -> StreamPoint {
        StreamPoint { stream, seq }
    }

    #[test]
    fn frees_settle_in_stream_order_up_to_the_completed_point() {
        let mut d = DeferredFrees::new();
        d.push(0x1000, pt(0, 1)).unwrap();
        d.push(0x2000, pt(0, 3)).unwrap();
        d.push(0x3000, pt(1, 2)).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d.pending(0x2000), Some(pt(0, 3)));
        assert_eq!(d.streams().collect::<Vec<_>>(), [(0, 1, 3), (1, 2, 2)]);
        let mut got = Vec::new();
        assert_eq!(d.settle_stream(0, 2, &mut |b| got.push(b)), 1);
        assert_eq!(got, [0x1000]);
        assert_eq!(d.pending(0x1000), None);
        let order = Done { done: &[3, 1], asked: Cell::new(0) };
        assert_eq!(d.settle(&order, &mut |b| got.push(b)), 1);
        assert_eq!(got, [0x1000, 0x2000]);
        assert_eq!(d.pending(0x3000), Some(pt(1, 2)));
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn a_second_free_of_a_pending_base_is_refused_and_changes_nothing() {
        let mut d = DeferredFrees::new();
        d.push(0x1000, pt(2, 5)).unwrap();
        assert_eq!(d.push(0x1000, pt(3, 1)), Err(DeferError::AlreadyPending(pt(2, 5))));
        assert_eq!(d.len(), 1);
        let mut got = Vec::new();
        assert_eq!(d.settle_stream(3, u64::MAX, &mut |b| got.push(b)), 0);
        assert_eq!(d.settle_stream(2, 5, &mut |b| got.push(b)), 1);
        assert_eq!(got, [0x1000]);
        d.push(0x1000, pt(3, 1)).unwrap();
    }

    #[test]
    fn a_settle_asks_only_about_the_head_of_each_stream() {
        let mut d = DeferredFrees::new();
        for i in 0..1000u64 {
            d.push(0x10_0000 + i * 0x1000, pt((i % 2) as u32, 10 + i)).unwrap();
        }
        let order = Done { done: &[0, 0], asked: Cell::new(0) };
        assert_eq!(d.settle(&order, &mut |_| unreachable!()), 0);
        assert_eq!(order.asked.get(), 2, "one question per stream with pending frees");
        let order = Done { done: &[15, 0], asked: Cell::new(0) };
        let mut got = Vec::new();
        assert_eq!(d.settle(&order, &mut |b| got.push(b)), 3);
        assert_eq!(got, [0x10_0000, 0x10_2000, 0x10_4000]);
        assert_eq!(order.asked.get(), 4 + 1);
    }

    #[test]
    fn an_out_of_order_push_is_placed_by_sequence() {
        let mut d = DeferredFrees::new();
        d.push(0xa000, pt(0, 7)).unwrap();
        d.push(0xb000, pt(0, 4)).unwrap();
        d.push(0xc000, pt(0, 9)).unwrap();
        let mut got = Vec::new();
        d.settle_stream(0, 7, &mut |b| got.push(b));
        assert_eq!(got, [0xb000, 0xa000]);
    }

    #[test]
    fn drain_and_forget_empty_everything() {
        let mut d = DeferredFrees::new();
        d.push(0x1000, pt(4, 1)).unwrap();
        d.push(0x2000, pt(5, 1)).unwrap();
        d.forget_stream(4);
        assert_eq!(d.pending(0x1000), Some(pt(4, 1)), "a stream with pending frees keeps them");
        d.settle_stream(4, 1, &mut |_| {});
        d.forget_stream(4);
        assert!(!d.fifos.contains_key(&4));
        let mut got = Vec::new();
        d.drain(&mut |b| got.push(b));
        assert_eq!(got, [0x2000]);
        assert!(d.is_empty());
        assert_eq!(d.pending(0x2000), None);
    }
}
