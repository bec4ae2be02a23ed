//! Stream-ordered memory pools: allocation and free folded into stream order.
//!
//! A pool owns *segments* — device VA ranges backed with physical memory, obtained from a
//! [`SegmentSource`] — and carves *blocks* out of them. It owns the block states, the reuse
//! decisions and the pool statistics; it does not know how streams work (it asks a
//! [`StreamOrder`] oracle) and it does not touch memory (the source maps and unmaps segments).
//!
//! # Blocks
//!
//! Every byte of a segment is in one extent: *free* (never handed out, or handed back with no
//! pending stream use), *busy* (allocated), or *cached* (freed on stream `s` at sequence `q`:
//! the stream may still be using it until `s` completes `q`). Allocation is best fit by
//! (size, address) over every extent the requesting stream may safely take, split from the low
//! end. Free extents merge with free neighbours; cached extents merge only with neighbours of the
//! same provenance (same stream and sequence).
//!
//! # Reuse of cached blocks by stream `S`
//!
//! - freed on `S` itself: always (stream order makes it safe);
//! - freed on `T` at `q`, *event dependency* on: when `T@q` is ordered before `S`'s tail;
//! - *opportunistic* on: when `T` has completed `q`;
//! - *internal dependency* on: any such block, and the grant carries the point `S` must wait for
//!   (the caller inserts the wait before handing the memory out).
//!
//! # Physical memory
//!
//! `reserved` is the bytes of all segments, `used` the bytes of busy blocks. A segment goes back
//! only when all its extents are free or cached with a completed free: at [`Pool::release`]
//! (the release threshold at a synchronize, or `TrimTo`), or when an allocation needs room —
//! then the physical pages of emptied segments are remapped as one fresh segment, so VA
//! fragmentation never fails an allocation that the pool's capacity allows.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use hal::{DeviceAddr, ErrorKind, VaRange};

use crate::device::Usage;
use crate::order::{StreamOrder, StreamPoint};

/// Block granularity: sizes are rounded up to this, and blocks start at multiples of it.
pub const BLOCK_ALIGN: u64 = 512;
/// Segment granularity (one 2 MiB page).
pub const SEGMENT_ALIGN: u64 = 2 << 20;

/// Maps and unmaps pool segments (VA plus physical backing).
pub trait SegmentSource {
    /// Maps a fresh segment of `len_bytes` (a multiple of [`SEGMENT_ALIGN`]).
    ///
    /// # Errors
    ///
    /// A [`hal::Error`]; [`ErrorKind::OutOfMemory`] when the device has no room.
    fn map_segment(&mut self, len_bytes: u64) -> Result<VaRange, hal::Error>;

    /// Unmaps a segment returned by [`Self::map_segment`].
    ///
    /// # Errors
    ///
    /// A [`hal::Error`] when it was not such a segment.
    fn unmap_segment(&mut self, range: VaRange) -> Result<(), hal::Error>;
}

/// Which cross-stream reuse modes are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReuseModes {
    /// Reuse a block whose free is ordered before the allocating stream by event waits.
    pub follow_event_dependencies: bool,
    /// Reuse a block whose free has completed.
    pub allow_opportunistic: bool,
    /// Reuse any cached block, making the allocating stream wait for the free.
    pub allow_internal_dependencies: bool,
}

impl Default for ReuseModes {
    /// All on, as in CUDA: every mode is safe by construction.
    fn default() -> Self {
        Self { follow_event_dependencies: true, allow_opportunistic: true, allow_internal_dependencies: true }
    }
}

/// How a block was found for an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Free memory of an existing segment.
    Free,
    /// A fresh segment was mapped.
    NewSegment,
    /// A block freed on the same stream.
    SameStream,
    /// A block whose free is ordered before the stream by event dependencies.
    EventDependency,
    /// A block whose free has completed.
    Opportunistic,
    /// A block whose free the stream must wait for (see [`Grant::wait_for`]).
    InternalDependency,
}

/// An allocation handed out by [`Pool::allocate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The block's address.
    pub addr: DeviceAddr,
    /// Its size (rounded to [`BLOCK_ALIGN`]).
    pub size_bytes: u64,
    /// How it was found.
    pub how: Reuse,
    /// A point the allocating stream must wait for before using the block.
    pub wait_for: Option<StreamPoint>,
}

/// Why a pool call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// Zero or overflowing size, or a bad argument.
    InvalidArgument,
    /// The pool's maximum size does not allow it.
    Exhausted,
    /// The device has no memory for a new segment.
    OutOfMemory(hal::Error),
    /// The address is not a live block of this pool.
    NotAllocated,
    /// The address lies inside a live block that starts elsewhere.
    Interior(DeviceAddr),
    /// `TrimTo` was asked to keep less than the bytes in use.
    BelowUsed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Busy,
    Cached(StreamPoint),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    len: u64,
    state: State,
    segment: u64,
}

/// Pool statistics, as the pool attributes report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes of mapped segments.
    pub reserved: Usage,
    /// Bytes of busy blocks.
    pub used: Usage,
}

/// A stream-ordered pool.
///
/// # Invariants
///
/// The extents of each segment tile it exactly; `free_set` indexes every free extent and
/// `cached` every cached extent, by (size, address); `stats.reserved.current` is the sum of the
/// segments' lengths and `stats.used.current` the sum of the busy extents' lengths.
#[derive(Debug)]
pub struct Pool {
    max_bytes: u64,
    modes: ReuseModes,
    release_threshold: u64,
    segments: BTreeMap<u64, u64>,
    extents: BTreeMap<u64, Extent>,
    free_set: BTreeSet<(u64, u64)>,
    cached: BTreeMap<u32, BTreeSet<(u64, u64)>>,
    stats: PoolStats,
}

fn round(v: u64, to: u64) -> Option<u64> {
    v.checked_add(to - 1).map(|x| x / to * to)
}

impl Pool {
    /// An empty pool that may reserve at most `max_bytes`.
    pub fn new(max_bytes: u64, modes: ReuseModes) -> Self {
        Self {
            max_bytes,
            modes,
            release_threshold: 0,
            segments: BTreeMap::new(),
            extents: BTreeMap::new(),
            free_set: BTreeSet::new(),
            cached: BTreeMap::new(),
            stats: PoolStats::default(),
        }
    }

    /// The pool's maximum reserved bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The reuse modes.
    pub fn modes(&self) -> ReuseModes {
        self.modes
    }

    /// Changes the reuse modes.
    pub fn set_modes(&mut self, modes: ReuseModes) {
        self.modes = modes;
    }

    /// Bytes kept reserved at a synchronize.
    pub fn release_threshold(&self) -> u64 {
        self.release_threshold
    }

    /// Sets the release threshold.
    ///
    /// # Errors
    ///
    /// [`PoolError::InvalidArgument`] above the pool's maximum size.
    pub fn set_release_threshold(&mut self, bytes: u64) -> Result<(), PoolError> {
        if bytes > self.max_bytes {
            return Err(PoolError::InvalidArgument);
        }
        self.release_threshold = bytes;
        Ok(())
    }

    /// The statistics.
    pub fn stats(&self) -> PoolStats {
        self.stats
    }

    /// Resets the reserved high-water mark to the current value.
    pub fn reset_reserved_high(&mut self) {
        self.stats.reserved.peak = self.stats.reserved.current;
    }

    /// Resets the used high-water mark to the current value.
    pub fn reset_used_high(&mut self) {
        self.stats.used.peak = self.stats.used.current;
    }

    /// Whether `addr` lies in one of the pool's segments.
    pub fn owns(&self, addr: DeviceAddr) -> bool {
        self.segments.range(..=addr.as_u64()).next_back().is_some_and(|(&s, &l)| addr.as_u64() < s + l)
    }

    /// The busy block containing `addr`: (its base, its size).
    pub fn find_busy(&self, addr: DeviceAddr) -> Option<(DeviceAddr, u64)> {
        let (&s, e) = self.extents.range(..=addr.as_u64()).next_back()?;
        (e.state == State::Busy && addr.as_u64() < s + e.len).then_some((DeviceAddr(s), e.len))
    }

    /// Number of busy blocks.
    pub fn busy_count(&self) -> usize {
        self.extents.values().filter(|e| e.state == State::Busy).count()
    }

    fn index_insert(&mut self, addr: u64, e: Extent) {
        match e.state {
            State::Free => {
                self.free_set.insert((e.len, addr));
            }
            State::Cached(p) => {
                self.cached.entry(p.stream).or_default().insert((e.len, addr));
            }
            State::Busy => {}
        }
        self.extents.insert(addr, e);
    }

    fn index_remove(&mut self, addr: u64) -> Option<Extent> {
        let e = self.extents.remove(&addr)?;
        match e.state {
            State::Free => {
                self.free_set.remove(&(e.len, addr));
            }
            State::Cached(p) => {
                if let Some(set) = self.cached.get_mut(&p.stream) {
                    set.remove(&(e.len, addr));
                    if set.is_empty() {
                        self.cached.remove(&p.stream);
                    }
                }
            }
            State::Busy => {}
        }
        Some(e)
    }

    /// The best extent `stream` may take for `size` bytes, with how and what to wait for.
    fn choose<O: StreamOrder>(
        &self,
        order: &O,
        stream: u32,
        size: u64,
    ) -> Option<(u64, Reuse, Option<StreamPoint>)> {
        // (extent length, address, how, wait): smallest length wins, then the mode that needs
        // no wait, then the lower address.
        type Cand = (u64, u64, Reuse, Option<StreamPoint>);
        fn consider(best: &mut Option<Cand>, c: Cand) {
            let rank = |h: Reuse| u8::from(matches!(h, Reuse::InternalDependency));
            let better = match *best {
                None => true,
                Some((bl, ba, bh, _)) => (c.0, rank(c.2), c.1) < (bl, rank(bh), ba),
            };
            if better {
                *best = Some(c);
            }
        }
        let mut best: Option<Cand> = None;
        if let Some(&(len, addr)) = self.free_set.range((size, 0)..).next() {
            consider(&mut best, (len, addr, Reuse::Free, None));
        }
        for (&s, set) in &self.cached {
            for &(len, addr) in set.range((size, 0)..) {
                if best.is_some_and(|(bl, ..)| len > bl) {
                    break;
                }
                let Some(Extent { state: State::Cached(p), .. }) = self.extents.get(&addr) else { continue };
                let how = if s == stream {
                    Some((Reuse::SameStream, None))
                } else if self.modes.follow_event_dependencies && order.is_ordered_before(*p, stream) {
                    Some((Reuse::EventDependency, None))
                } else if self.modes.allow_opportunistic && order.is_complete(*p) {
                    Some((Reuse::Opportunistic, None))
                } else if self.modes.allow_internal_dependencies {
                    Some((Reuse::InternalDependency, Some(*p)))
                } else {
                    None
                };
                if let Some((how, wait)) = how {
                    consider(&mut best, (len, addr, how, wait));
                    break;
                }
            }
        }
        best.map(|(_, addr, how, wait)| (addr, how, wait))
    }

    /// Allocates `size` bytes for use on `stream`.
    ///
    /// # Errors
    ///
    /// [`PoolError::InvalidArgument`] for size 0 or overflow; [`PoolError::Exhausted`] when the
    /// maximum size does not allow a new segment; [`PoolError::OutOfMemory`] when the device has
    /// no room. Nothing changes on error.
    pub fn allocate<S: SegmentSource, O: StreamOrder>(
        &mut self,
        source: &mut S,
        order: &O,
        stream: u32,
        size: u64,
    ) -> Result<Grant, PoolError> {
        if size == 0 {
            return Err(PoolError::InvalidArgument);
        }
        let size = round(size, BLOCK_ALIGN).ok_or(PoolError::InvalidArgument)?;
        let (addr, how, wait) = match self.choose(order, stream, size) {
            Some(c) => c,
            None => {
                let addr = self.grow(source, order, size)?;
                (addr, Reuse::NewSegment, None)
            }
        };
        let e = self.index_remove(addr).ok_or(PoolError::NotAllocated)?;
        if e.len > size {
            // Split from the low end; the rest keeps its state.
            self.index_insert(addr + size, Extent { len: e.len - size, state: e.state, segment: e.segment });
        }
        self.index_insert(addr, Extent { len: size, state: State::Busy, segment: e.segment });
        self.stats.used.add(size);
        Ok(Grant { addr: DeviceAddr(addr), size_bytes: size, how, wait_for: wait })
    }

    /// Maps a new segment for `size` bytes, first giving back emptied segments if the maximum
    /// size or the device needs the room; returns the new free extent's address.
    fn grow<S: SegmentSource, O: StreamOrder>(
        &mut self,
        source: &mut S,
        order: &O,
        size: u64,
    ) -> Result<u64, PoolError> {
        let len = round(size, SEGMENT_ALIGN).ok_or(PoolError::InvalidArgument)?;
        if len > self.max_bytes {
            return Err(PoolError::Exhausted);
        }
        if self.stats.reserved.current + len > self.max_bytes {
            // Remap: release emptied segments so that their pages can form the new one.
            let keep = self.max_bytes - len;
            self.release(source, order, keep);
            if self.stats.reserved.current + len > self.max_bytes {
                return Err(PoolError::Exhausted);
            }
        }
        let range = match source.map_segment(len) {
            Ok(r) => r,
            Err(e) if e.kind() == ErrorKind::OutOfMemory => {
                // The device is full: give back every emptied segment and try once more.
                if self.release(source, order, 0) == 0 {
                    return Err(PoolError::OutOfMemory(e));
                }
                source.map_segment(len).map_err(PoolError::OutOfMemory)?
            }
            Err(e) => return Err(PoolError::OutOfMemory(e)),
        };
        let base = range.start().as_u64();
        self.segments.insert(base, len);
        self.stats.reserved.add(len);
        self.index_insert(base, Extent { len, state: State::Free, segment: base });
        Ok(base)
    }

    /// Frees the block at `addr` in the order of `stream`, whose last submitted task is `seq`.
    /// Returns the block's size.
    ///
    /// # Errors
    ///
    /// [`PoolError::Interior`] inside a block, [`PoolError::NotAllocated`] otherwise (a double
    /// free or a foreign pointer). Nothing changes on error.
    pub fn free(&mut self, addr: DeviceAddr, stream: u32, seq: u64) -> Result<u64, PoolError> {
        let a = addr.as_u64();
        match self.extents.get(&a) {
            Some(e) if e.state == State::Busy => {}
            _ => {
                return Err(match self.find_busy(addr) {
                    Some((base, _)) => PoolError::Interior(base),
                    None => PoolError::NotAllocated,
                })
            }
        }
        let e = self.index_remove(a).ok_or(PoolError::NotAllocated)?;
        self.stats.used.sub(e.len);
        let state = State::Cached(StreamPoint { stream, seq });
        let (mut start, mut len) = (a, e.len);
        // Merge with neighbours of the same provenance, within the segment.
        if let Some((&ps, pe)) = self.extents.range(..a).next_back() {
            if pe.state == state && pe.segment == e.segment && ps + pe.len == a {
                let pe = self.index_remove(ps).ok_or(PoolError::NotAllocated)?;
                start = ps;
                len += pe.len;
            }
        }
        if let Some(ne) = self.extents.get(&(a + e.len)).copied() {
            if ne.state == state && ne.segment == e.segment {
                self.index_remove(a + e.len);
                len += ne.len;
            }
        }
        self.index_insert(start, Extent { len, state, segment: e.segment });
        Ok(e.len)
    }

    /// Turns cached extents whose frees have completed into free ones (merging them), so that
    /// any stream may take them and empty segments can be released.
    fn settle<O: StreamOrder>(&mut self, order: &O) {
        let done: Vec<u64> = self
            .extents
            .iter()
            .filter(|(_, e)| matches!(e.state, State::Cached(p) if order.is_complete(p)))
            .map(|(&a, _)| a)
            .collect();
        for a in done {
            let Some(e) = self.index_remove(a) else { continue };
            let (mut start, mut len) = (a, e.len);
            let prev = self.extents.range(..a).next_back().map(|(&ps, pe)| (ps, *pe));
            if let Some((ps, pe)) = prev {
                if pe.state == State::Free && pe.segment == e.segment && ps + pe.len == a {
                    self.index_remove(ps);
                    start = ps;
                    len += pe.len;
                }
            }
            if let Some(ne) = self.extents.get(&(a + e.len)).copied() {
                if ne.state == State::Free && ne.segment == e.segment {
                    self.index_remove(a + e.len);
                    len += ne.len;
                }
            }
            self.index_insert(start, Extent { len, state: State::Free, segment: e.segment });
        }
    }

    /// Gives back whole segments that hold nothing in use or pending, smallest first, while the
    /// pool keeps at least `keep_bytes` reserved. Returns the bytes released.
    pub fn release<S: SegmentSource, O: StreamOrder>(
        &mut self,
        source: &mut S,
        order: &O,
        keep_bytes: u64,
    ) -> u64 {
        self.settle(order);
        let mut empty: Vec<(u64, u64)> = self
            .segments
            .iter()
            .filter(|(&b, &l)| self.extents.get(&b).is_some_and(|e| e.state == State::Free && e.len == l))
            .map(|(&b, &l)| (l, b))
            .collect();
        empty.sort_unstable();
        let mut released = 0;
        for (len, base) in empty {
            if self.stats.reserved.current < keep_bytes + len {
                break;
            }
            let Ok(range) = VaRange::try_new(DeviceAddr(base), len) else { continue };
            if source.unmap_segment(range).is_err() {
                continue;
            }
            self.index_remove(base);
            self.segments.remove(&base);
            self.stats.reserved.sub(len);
            released += len;
        }
        released
    }

    /// `TrimTo`: releases down to (at least) `min_bytes_to_keep` reserved bytes.
    ///
    /// # Errors
    ///
    /// [`PoolError::BelowUsed`] when `min_bytes_to_keep` is less than the bytes in use;
    /// [`PoolError::InvalidArgument`] when it exceeds the pool's maximum size.
    pub fn trim_to<S: SegmentSource, O: StreamOrder>(
        &mut self,
        source: &mut S,
        order: &O,
        min_bytes_to_keep: u64,
    ) -> Result<u64, PoolError> {
        if min_bytes_to_keep > self.max_bytes {
            return Err(PoolError::InvalidArgument);
        }
        if min_bytes_to_keep < self.stats.used.current {
            return Err(PoolError::BelowUsed);
        }
        Ok(self.release(source, order, min_bytes_to_keep))
    }

    /// Releases down to the release threshold (at a synchronize).
    pub fn release_to_threshold<S: SegmentSource, O: StreamOrder>(
        &mut self,
        source: &mut S,
        order: &O,
    ) -> u64 {
        self.release(source, order, self.release_threshold)
    }

    /// Forgets every stream-order record of `stream` (it was destroyed): its cached blocks
    /// become free once `is_complete` says so, which the caller ensures by synchronizing first.
    pub fn forget_stream<O: StreamOrder>(&mut self, order: &O, stream: u32) {
        let _ = stream;
        self.settle(order);
    }

    /// Unmaps every segment (the pool is destroyed); returns how many busy blocks were lost.
    pub fn drain<S: SegmentSource>(&mut self, source: &mut S) -> usize {
        let busy = self.busy_count();
        let segs: Vec<(u64, u64)> = self.segments.iter().map(|(&b, &l)| (b, l)).collect();
        for (b, l) in segs {
            if let Ok(r) = VaRange::try_new(DeviceAddr(b), l) {
                let _ = source.unmap_segment(r);
            }
        }
        self.segments.clear();
        self.extents.clear();
        self.free_set.clear();
        self.cached.clear();
        self.stats.reserved.current = 0;
        self.stats.used.current = 0;
        busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const MIB: u64 = 1 << 20;

    /// A source handing out consecutive VA; counts mapped bytes; can be told to fail.
    struct Src {
        next: u64,
        mapped: BTreeMap<u64, u64>,
        limit: u64,
    }

    impl Src {
        fn new(limit: u64) -> Self {
            Self { next: 16 << 40, mapped: BTreeMap::new(), limit }
        }
        fn bytes(&self) -> u64 {
            self.mapped.values().sum()
        }
    }

    impl SegmentSource for Src {
        fn map_segment(&mut self, len: u64) -> Result<VaRange, hal::Error> {
            if self.bytes() + len > self.limit {
                return Err(hal::Error::new(ErrorKind::OutOfMemory, "full"));
            }
            let r = VaRange::try_new(DeviceAddr(self.next), len).unwrap();
            self.next += len + SEGMENT_ALIGN;
            self.mapped.insert(r.start().as_u64(), len);
            Ok(r)
        }
        fn unmap_segment(&mut self, range: VaRange) -> Result<(), hal::Error> {
            self.mapped
                .remove(&range.start().as_u64())
                .map(|_| ())
                .ok_or(hal::Error::new(ErrorKind::InvalidHandle, "x"))
        }
    }

    /// A scripted oracle: completed sequence per stream and explicit "ordered before" edges.
    #[derive(Default)]
    struct Order {
        completed: BTreeMap<u32, u64>,
        edges: Vec<(StreamPoint, u32)>,
    }

    impl StreamOrder for Order {
        fn is_complete(&self, p: StreamPoint) -> bool {
            self.completed.get(&p.stream).is_some_and(|&c| c >= p.seq)
        }
        fn is_ordered_before(&self, p: StreamPoint, s: u32) -> bool {
            p.stream == s || self.edges.iter().any(|&(q, t)| t == s && q.stream == p.stream && q.seq >= p.seq)
        }
    }

    fn modes(e: bool, o: bool, i: bool) -> ReuseModes {
        ReuseModes { follow_event_dependencies: e, allow_opportunistic: o, allow_internal_dependencies: i }
    }

    #[test]
    fn best_fit_splits_from_the_low_end() {
        let (mut src, ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, ReuseModes::default());
        let a = p.allocate(&mut src, &ord, 0, 2 * MIB).unwrap();
        assert_eq!(a.how, Reuse::NewSegment);
        let b = p.allocate(&mut src, &ord, 0, 3 * MIB).unwrap();
        assert_eq!(p.stats().reserved.current, 6 * MIB);
        let c = p.allocate(&mut src, &ord, 0, MIB).unwrap();
        assert_eq!(c.addr.as_u64(), b.addr.as_u64() + 3 * MIB, "the tail of b's segment");
        assert_eq!(c.how, Reuse::Free);
        assert_eq!(p.stats().used.current, 6 * MIB);
        assert_eq!(p.allocate(&mut src, &ord, 0, 1).unwrap().size_bytes, 512);
        assert_eq!(p.free(a.addr, 0, 1), Ok(2 * MIB));
        assert_eq!(p.free(a.addr, 0, 1), Err(PoolError::NotAllocated));
        assert_eq!(p.free(DeviceAddr(b.addr.as_u64() + 512), 0, 1), Err(PoolError::Interior(b.addr)));
    }

    #[test]
    fn same_stream_reuse_is_immediate() {
        let (mut src, ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, modes(false, false, false));
        let a = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        p.free(a.addr, 1, 10).unwrap();
        let b = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        assert_eq!((b.addr, b.how), (a.addr, Reuse::SameStream));
    }

    #[test]
    fn cross_stream_reuse_follows_the_modes() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, modes(false, false, false));
        let a = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        p.free(a.addr, 1, 5).unwrap();
        // No mode: stream 2 gets fresh memory.
        let b = p.allocate(&mut src, &ord, 2, 4 * MIB).unwrap();
        assert_ne!(b.addr, a.addr);
        assert_eq!(b.how, Reuse::NewSegment);
        p.free(b.addr, 2, 1).unwrap();
        // Event dependency: stream 3 waited on stream 1 at seq 5.
        p.set_modes(modes(true, false, false));
        ord.edges.push((StreamPoint { stream: 1, seq: 5 }, 3));
        let c = p.allocate(&mut src, &ord, 3, 4 * MIB).unwrap();
        assert_eq!((c.addr, c.how), (a.addr, Reuse::EventDependency));
        p.free(c.addr, 3, 2).unwrap();
        // Opportunistic: stream 3's free completed.
        p.set_modes(modes(false, true, false));
        let d = p.allocate(&mut src, &ord, 4, 4 * MIB).unwrap();
        assert_ne!(d.how, Reuse::Opportunistic, "not complete yet");
        p.free(d.addr, 4, 1).unwrap();
        ord.completed.insert(3, 2);
        let e = p.allocate(&mut src, &ord, 4, 4 * MIB).unwrap();
        assert_eq!((e.addr, e.how), (c.addr, Reuse::Opportunistic));
        // Internal dependency: anything cached, with a wait.
        p.set_modes(modes(false, false, true));
        let f = p.allocate(&mut src, &ord, 5, 4 * MIB).unwrap();
        assert_eq!(f.how, Reuse::InternalDependency);
        assert!(f.wait_for.is_some());
    }

    #[test]
    fn release_threshold_and_trim() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, ReuseModes::default());
        let xs: Vec<Grant> = (0..4).map(|_| p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap()).collect();
        for x in &xs {
            p.free(x.addr, 1, 7).unwrap();
        }
        assert_eq!(p.stats().reserved.current, 16 * MIB);
        // Not complete: nothing can go back.
        assert_eq!(p.release(&mut src, &ord, 0), 0);
        ord.completed.insert(1, 7);
        p.set_release_threshold(8 * MIB).unwrap();
        assert_eq!(p.release_to_threshold(&mut src, &ord), 8 * MIB);
        assert_eq!(p.stats().reserved.current, 8 * MIB);
        assert_eq!(src.bytes(), 8 * MIB);
        let y = p.allocate(&mut src, &ord, 2, MIB).unwrap();
        assert_eq!(p.trim_to(&mut src, &ord, 0), Err(PoolError::BelowUsed));
        assert_eq!(p.trim_to(&mut src, &ord, 65 * MIB), Err(PoolError::InvalidArgument));
        assert_eq!(p.trim_to(&mut src, &ord, MIB), Ok(4 * MIB));
        assert_eq!(p.stats().reserved.current, 4 * MIB);
        assert_eq!(p.stats().reserved.peak, 16 * MIB);
        p.reset_reserved_high();
        assert_eq!(p.stats().reserved.peak, 4 * MIB);
        p.free(y.addr, 2, 1).unwrap();
        assert_eq!(p.drain(&mut src), 0);
        assert_eq!(src.bytes(), 0);
    }

    #[test]
    fn exhaustion_and_remapping() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(8 * MIB, modes(false, false, false));
        let a = p.allocate(&mut src, &ord, 1, 2 * MIB).unwrap();
        let b = p.allocate(&mut src, &ord, 1, 2 * MIB).unwrap();
        let c = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        assert_eq!(p.allocate(&mut src, &ord, 1, 512), Err(PoolError::Exhausted));
        assert_eq!(p.allocate(&mut src, &ord, 1, 9 * MIB), Err(PoolError::Exhausted));
        // Free a and b on stream 1 (complete): 4 MiB in two 2 MiB segments. A 4 MiB request on
        // stream 2 fits in neither, but both segments are remapped as one.
        p.free(a.addr, 1, 3).unwrap();
        p.free(b.addr, 1, 3).unwrap();
        ord.completed.insert(1, 3);
        let d = p.allocate(&mut src, &ord, 2, 4 * MIB).unwrap();
        assert_eq!(d.how, Reuse::NewSegment);
        assert_eq!(p.stats().reserved.current, 8 * MIB);
        let _ = c;
        // The device is full: the pool gives back what it can, then maps.
        let mut small = Src::new(6 * MIB);
        let mut q = Pool::new(64 * MIB, modes(false, false, false));
        let x = q.allocate(&mut small, &ord, 1, 4 * MIB).unwrap();
        q.free(x.addr, 1, 1).unwrap();
        let y = q.allocate(&mut small, &ord, 2, 4 * MIB).unwrap();
        assert_eq!(y.how, Reuse::NewSegment);
        assert_eq!(small.bytes(), 4 * MIB);
        assert!(matches!(q.allocate(&mut small, &ord, 2, 4 * MIB), Err(PoolError::OutOfMemory(_))));
    }

    #[test]
    fn cached_extents_merge_only_with_their_provenance() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, modes(false, false, false));
        let xs: Vec<Grant> = (0..4).map(|_| p.allocate(&mut src, &ord, 1, MIB / 2).unwrap()).collect();
        p.free(xs[0].addr, 1, 1).unwrap();
        p.free(xs[1].addr, 1, 1).unwrap();
        p.free(xs[2].addr, 1, 2).unwrap();
        // xs[0] and xs[1] merged: a 1 MiB request on stream 1 takes both.
        let y = p.allocate(&mut src, &ord, 1, MIB).unwrap();
        assert_eq!((y.addr, y.how), (xs[0].addr, Reuse::SameStream));
        ord.completed.insert(1, 2);
        p.free(y.addr, 1, 3).unwrap();
        p.free(xs[3].addr, 1, 3).unwrap();
        ord.completed.insert(1, 3);
        // All complete: one free extent covering the whole segment, released at once.
        assert_eq!(p.release(&mut src, &ord, 0), 2 * MIB);
        assert_eq!(
            p.stats(),
            PoolStats {
                reserved: Usage { current: 0, peak: 2 * MIB },
                used: Usage { current: 0, peak: 2 * MIB }
            }
        );
        let _ = vec![0u8];
    }
}
