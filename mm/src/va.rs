//! Device virtual address (VA) range allocator over one window.
//!
//! This module owns the bookkeeping of which ranges of one VA window are taken. It must not
//! touch physical memory, mappings or the driver: it hands out [`VaRange`]s and takes them back.
//!
//! # Algorithm and why
//!
//! A two-level segregated fit (the TLSF scheme): free ranges sit in size classes, the first
//! level by power of two and the second by [`SL_COUNT`] linear steps inside it (so a class spans
//! at most 1/32 of its sizes; below 32 bytes every size is its own class). One bit per non-empty
//! class in two bitmaps finds the next non-empty class above any size in O(1). Ranges are nodes
//! in one table with links to their address neighbours (boundary tags), so a free merges with
//! free neighbours in O(1); a hash index from start address to node (`addr_map`) makes
//! the exact-match check of a free O(1) expected. Node storage and the index grow by doubling and
//! are reused, so in steady state an alloc or free allocates nothing on the heap.
//!
//! The search keeps fragmentation close to best fit: it looks in the request's own class first
//! (any block there may or may not fit), then in the non-empty classes above it, and in each
//! class it looks at up to [`SCAN`] blocks and takes the best of them by (size, address). Ties
//! by address keep the layout deterministic, which the software NPU's reproducible traces rely
//! on. In the classes above the request's, every block fits an unaligned request, so the search
//! ends in the first of them; an aligned request may skip blocks whose aligned start does not
//! fit, up to the class of `len + align - 1`, above which every block fits again (apart from the
//! very top of the address space, where aligning can overflow and the search goes on).
//!
//! The handle path ([`VaAllocator::alloc_handle`], for owners that keep their own record of every
//! range, as the device allocator does) keeps a small cache in front of the lists: a range freed
//! by handle goes onto a stack of ranges of its exact length (256 buckets by length, at most 64
//! ranges each and [`CACHE_RANGES`] in all), and the next handle allocation of that length whose
//! alignment the range meets takes it back with no search, split or merge. A device allocator's
//! VA requests come in few lengths (the tensors of a training step, 2 MiB slab chunks) or in
//! 4 KiB steps below 1 MiB (the NORMAL_ONLY-page blocks of a huge-first request under 1 MiB:
//! about 240 lengths from 64 KiB on, which is why there are 256 buckets and room for a thousand
//! ranges: with 64 buckets and 512 ranges the VA of a uniform 64 KiB–1 MiB mix took 59 ns a
//! pair, with these 29 ns), so most of them are served there. A cached range is free space to
//! every query ([`VaAllocator::free_bytes`], [`VaAllocator::find`], equality), but it does not
//! merge with its free neighbours until the cache gives it back: a search that finds no free
//! range gives the whole cache back and searches again, so the cache never makes an allocation
//! fail, and [`VaAllocator::flush_cache`] gives it back on demand. A bucket holding another
//! length keeps it until it empties (a length that finds both its buckets taken is not cached),
//! so a mix of many lengths costs no more than the lists.
//!
//! Costs: alloc is O(SCAN · k) where `k` is the number of non-empty classes visited (1 or 2
//! for unaligned requests, bounded by 32 per doubling of `align`); free is O(1) expected;
//! [`VaAllocator::find`] walks the ranges in address order, O(n): it serves tests and cold
//! paths, and the device allocator keeps its own O(1) index by address.
//!
//! Every address computation is checked; a window may end anywhere below 2^64.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use hal::{DeviceAddr, VaRange};

use crate::addr_map::AddrMap;
use crate::error::{Error, Result};

/// log2 of the number of second-level classes per power of two.
const SL_LOG: u32 = 5;
/// Second-level classes per power of two.
pub const SL_COUNT: usize = 1 << SL_LOG;
/// First-level classes: sizes below 2^64.
const FL_COUNT: usize = 64 - SL_LOG as usize + 1;
/// Blocks looked at per class before settling for the best seen.
pub const SCAN: usize = 8;
/// Nodes a fresh allocator holds before its tables first grow (a few hundred ranges).
const PRESIZED_NODES: usize = 512;
/// No node.
const NIL: u32 = u32::MAX;
/// Buckets of the handle cache (a power of two); each holds ranges of one length.
const CACHE_BUCKETS: usize = 256;
/// Ranges one bucket of the handle cache holds at most.
const CACHE_PER_BUCKET: u32 = 64;
/// Ranges the handle cache holds at most, over all buckets.
pub const CACHE_RANGES: usize = 1024;

/// One bucket of the handle cache: a stack (last freed, first reused) of cached nodes of
/// `len` bytes, linked through their `next_free`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CacheBucket {
    len: u64,
    head: u32,
    count: u32,
}

impl CacheBucket {
    const EMPTY: Self = Self { len: 0, head: NIL, count: 0 };
}

/// The handle-cache bucket of ranges of `len` bytes (a range may also sit in the bucket
/// after it, `^ 1`, when this one holds another length).
#[inline(always)]
fn bucket_of(len: u64) -> usize {
    // CAST: the shift leaves log2(CACHE_BUCKETS) bits.
    ((len ^ (len >> 21)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_BUCKETS.trailing_zeros()))
        as usize
}

/// The class of a free range of `len` bytes (rounded down: every range in a class is at least
/// the class's lower bound).
#[inline]
fn class_of(len: u64) -> usize {
    if len < SL_COUNT as u64 {
        // CAST: below 32.
        return len as usize;
    }
    let log = 63 - len.leading_zeros();
    let fl = (log - SL_LOG + 1) as usize;
    // CAST: the top SL_LOG + 1 bits of len, minus the leading one.
    let sl = ((len >> (log - SL_LOG)) as usize) - SL_COUNT;
    fl * SL_COUNT + sl
}

/// One range of the window: free or allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    start: u64,
    len: u64,
    /// Address neighbours (NIL at the window's ends).
    prev_phys: u32,
    next_phys: u32,
    /// Free-list neighbours within the class (free nodes only); a cached node's next node in
    /// its bucket is `next_free`.
    prev_free: u32,
    next_free: u32,
    free: bool,
    /// Handed out by [`VaAllocator::alloc_handle`], freed, and kept in the handle cache (not
    /// free in the lists: its neighbours do not merge with it until the cache gives it back).
    cached: bool,
}

/// Allocates ranges of device VA inside one window.
///
/// The allocator is plain data: it takes `&mut self` for every change and does no locking;
/// the owner serialises access. Two allocators compare equal when they have the same window and
/// the same free and allocated ranges (however their nodes are stored).
///
/// # Invariants
///
/// - The nodes reachable from node 0 through `next_phys` are in address order, cover the window
///   exactly, are non-empty, and `prev_phys` links them back; node 0 starts at the window start.
/// - No two free nodes are address neighbours (freed ranges are coalesced).
/// - Every free node is in the free list of `class_of(len)`, and only there; a class's bit is set
///   in `sl_bitmap` (and its first level's in `fl_bitmap`) exactly when its list is non-empty.
/// - `allocated` maps the start of every allocated node, and nothing else, to its index.
/// - `free_bytes` is the sum of the free nodes' lengths; `spare` holds the unused node indices.
/// - A node is `cached` exactly when it is on the stack of a cache bucket (linked through
///   `next_free`, from the bucket's `head`); it is then neither free nor counted as a live
///   allocation. A bucket's `count` is the length of its stack and every node on it has the
///   bucket's `len`; an empty bucket is `CacheBucket::EMPTY`. `cached` and `cached_bytes` count
///   the cached nodes and their bytes.
#[derive(Clone, Debug)]
pub struct VaAllocator {
    window: VaRange,
    nodes: Vec<Node>,
    spare: Vec<u32>,
    heads: Vec<u32>,
    fl_bitmap: u64,
    sl_bitmap: [u32; FL_COUNT],
    allocated: AddrMap<u32>,
    /// Live ranges handed out by [`Self::alloc_handle`] (not in `allocated`).
    handles: usize,
    free_bytes: u64,
    /// The handle cache (boxed, so that the allocator stays small enough for a firmware stack).
    cache: Box<[CacheBucket; CACHE_BUCKETS]>,
    /// Ranges in the handle cache, and their bytes.
    cached: usize,
    cached_bytes: u64,
}

impl PartialEq for VaAllocator {
    fn eq(&self, other: &Self) -> bool {
        self.window == other.window
            && self.free_bytes() == other.free_bytes()
            && self.live_count() == other.live_count()
            && self.merged_ranges().eq(other.merged_ranges())
    }
}

impl Eq for VaAllocator {}

impl VaAllocator {
    /// Creates an allocator with all of `window` free.
    pub fn new(window: VaRange) -> Self {
        Self::with_capacity(window, PRESIZED_NODES)
    }

    /// Creates an allocator with all of `window` free whose node storage holds `nodes` ranges
    /// (free and allocated) before it first grows.
    pub fn with_capacity(window: VaRange, nodes: usize) -> Self {
        let mut this = Self {
            window,
            nodes: Vec::with_capacity(nodes.max(1)),
            spare: Vec::with_capacity(nodes),
            heads: vec![NIL; FL_COUNT * SL_COUNT],
            fl_bitmap: 0,
            sl_bitmap: [0; FL_COUNT],
            allocated: AddrMap::new(),
            handles: 0,
            free_bytes: 0,
            cache: Box::new([CacheBucket::EMPTY; CACHE_BUCKETS]),
            cached: 0,
            cached_bytes: 0,
        };
        // INVARIANT: the whole window is one free node, node 0.
        let n = this.new_node(window.start().as_u64(), window.len_bytes());
        this.link_free(n);
        this
    }

    /// Every range in address order: (start, length, whether free); a cached range is free.
    fn ranges(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        let mut i = 0;
        core::iter::from_fn(move || {
            let n = self.nodes.get(i as usize)?;
            i = n.next_phys;
            Some((n.start, n.len, n.free || n.cached))
        })
    }

    /// [`Self::ranges`] with adjacent free ranges joined (as giving the cache back would
    /// join them): the same sequence for two allocators with the same free and live ranges.
    fn merged_ranges(&self) -> impl Iterator<Item = (u64, u64, bool)> + '_ {
        let mut it = self.ranges().peekable();
        core::iter::from_fn(move || {
            let (start, mut len, free) = it.next()?;
            if free {
                while let Some(&(_, l, true)) = it.peek() {
                    len += l;
                    it.next();
                }
            }
            Some((start, len, free))
        })
    }

    #[inline(always)]
    fn new_node(&mut self, start: u64, len: u64) -> u32 {
        let node = Node {
            start,
            len,
            prev_phys: NIL,
            next_phys: NIL,
            prev_free: NIL,
            next_free: NIL,
            free: false,
            cached: false,
        };
        match self.spare.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                // CAST: a window holds fewer than 2^32 ranges in any realistic use; node
                // indices past that would need 64 GiB of node storage first.
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Puts free node `n` at the head of its class's list.
    #[inline(always)]
    fn link_free(&mut self, n: u32) {
        let c = class_of(self.nodes[n as usize].len);
        let head = self.heads[c];
        {
            let node = &mut self.nodes[n as usize];
            node.free = true;
            node.prev_free = NIL;
            node.next_free = head;
        }
        if head != NIL {
            self.nodes[head as usize].prev_free = n;
        }
        self.heads[c] = n;
        self.sl_bitmap[c / SL_COUNT] |= 1 << (c % SL_COUNT);
        self.fl_bitmap |= 1 << (c / SL_COUNT);
        self.free_bytes += self.nodes[n as usize].len;
    }

    /// Takes free node `n` off its class's list.
    #[inline(always)]
    fn unlink_free(&mut self, n: u32) {
        let Node { len, prev_free, next_free, .. } = self.nodes[n as usize];
        let c = class_of(len);
        if prev_free == NIL {
            self.heads[c] = next_free;
            if next_free == NIL {
                self.sl_bitmap[c / SL_COUNT] &= !(1 << (c % SL_COUNT));
                if self.sl_bitmap[c / SL_COUNT] == 0 {
                    self.fl_bitmap &= !(1 << (c / SL_COUNT));
                }
            }
        } else {
            self.nodes[prev_free as usize].next_free = next_free;
        }
        if next_free != NIL {
            self.nodes[next_free as usize].prev_free = prev_free;
        }
        let node = &mut self.nodes[n as usize];
        node.free = false;
        self.free_bytes -= len;
    }

    /// The first non-empty class at or above `c`.
    #[inline(always)]
    fn nonempty_from(&self, c: usize) -> Option<usize> {
        let fl = c / SL_COUNT;
        if fl >= FL_COUNT {
            return None;
        }
        let sl = c % SL_COUNT;
        let here = self.sl_bitmap[fl] & (u32::MAX << sl);
        if here != 0 {
            return Some(fl * SL_COUNT + here.trailing_zeros() as usize);
        }
        let above = self.fl_bitmap.checked_shr(1 + fl as u32).unwrap_or(0);
        if above == 0 {
            return None;
        }
        let fl = fl + 1 + above.trailing_zeros() as usize;
        Some(fl * SL_COUNT + self.sl_bitmap[fl].trailing_zeros() as usize)
    }

    /// The best of the first [`SCAN`] blocks of class `c` that hold `len_bytes` at a multiple
    /// of `align`: (node, aligned start).
    #[inline(always)]
    fn best_in_class(&self, c: usize, len_bytes: u64, align: u64) -> Option<(u32, u64)> {
        let mut best: Option<(u32, u64)> = None;
        let mut n = self.heads[c];
        let mut seen = 0;
        while n != NIL && seen < SCAN {
            let node = &self.nodes[n as usize];
            if let Some(aligned) = align_up(node.start, align) {
                let head = aligned - node.start;
                if head.checked_add(len_bytes).is_some_and(|need| need <= node.len) {
                    let better = best.is_none_or(|(b, _)| {
                        let b = &self.nodes[b as usize];
                        (node.len, node.start) < (b.len, b.start)
                    });
                    if better {
                        best = Some((n, aligned));
                    }
                }
            }
            n = node.next_free;
            seen += 1;
        }
        best
    }

    /// Allocates `len_bytes` of VA starting at a multiple of `align` (see the module docs for
    /// which free range it comes from).
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `len_bytes` is zero or `align` is not a power of two.
    /// - [`Error::OutOfVa`] when no free range can hold an aligned range of that length.
    pub fn alloc(&mut self, len_bytes: u64, align: u64) -> Result<VaRange> {
        let (range, n) = self.place(len_bytes, align)?;
        self.allocated.insert(range.start().as_u64(), n);
        Ok(range)
    }

    /// Allocates like [`Self::alloc`] but keeps no index by address: the caller keeps the
    /// returned handle and gives it back to [`Self::free_handle`]. Such a range is seen by
    /// [`Self::find`], [`Self::live_count`] and the free-space queries, not by [`Self::get`] or
    /// [`Self::free`]. It saves the hash insert and remove of a pair for owners (the device
    /// allocator) that already keep their own record of every range.
    ///
    /// # Errors
    ///
    /// Those of [`Self::alloc`].
    ///
    /// A range of exactly `len_bytes` that [`Self::free_handle`] put in the handle cache, and
    /// whose start is a multiple of `align`, is taken back first (the one freed last): no
    /// search, no split.
    #[inline(always)]
    pub fn alloc_handle(&mut self, len_bytes: u64, align: u64) -> Result<(VaRange, u32)> {
        if self.cached > 0 && align.is_power_of_two() {
            if let Some(hit) = self.take_cached(len_bytes, align) {
                self.handles += 1;
                return Ok(hit);
            }
        }
        let placed = self.place(len_bytes, align)?;
        self.handles += 1;
        Ok(placed)
    }

    /// Takes the cached range of `len` bytes freed last, if its start is a multiple of `align`.
    #[inline(always)]
    fn take_cached(&mut self, len: u64, align: u64) -> Option<(VaRange, u32)> {
        let b0 = bucket_of(len);
        let b = if self.cache[b0].len == len { b0 } else { b0 ^ 1 };
        let CacheBucket { len: blen, head: n, .. } = self.cache[b];
        if blen != len || n == NIL {
            return None;
        }
        let node = self.nodes[n as usize];
        if node.start & (align - 1) != 0 {
            return None;
        }
        let range = VaRange::try_new(DeviceAddr(node.start), len).ok()?;
        let bucket = &mut self.cache[b];
        bucket.head = node.next_free;
        bucket.count -= 1;
        if bucket.head == NIL {
            *bucket = CacheBucket::EMPTY;
        }
        self.nodes[n as usize].cached = false;
        self.cached -= 1;
        self.cached_bytes -= len;
        Some((range, n))
    }

    /// Keeps handle node `n`, just freed, in the handle cache, or gives it back to the free
    /// lists when its buckets are full or the cache is.
    #[inline(always)]
    fn cache_or_release(&mut self, n: u32) {
        let len = self.nodes[n as usize].len;
        let b0 = bucket_of(len);
        let b = match (self.cache[b0], self.cache[b0 ^ 1]) {
            (x, _) if x.len == len || x.head == NIL => b0,
            (_, y) if y.len == len || y.head == NIL => b0 ^ 1,
            // Both buckets hold other lengths (until they empty): this length is not cached.
            _ => NIL as usize,
        };
        if b == NIL as usize || self.cache[b].count >= CACHE_PER_BUCKET || self.cached >= CACHE_RANGES {
            self.release(n);
            return;
        }
        let bucket = &mut self.cache[b];
        let next = bucket.head;
        *bucket = CacheBucket { len, head: n, count: bucket.count + 1 };
        let node = &mut self.nodes[n as usize];
        node.cached = true;
        node.next_free = next;
        self.cached += 1;
        self.cached_bytes += len;
    }

    /// Gives the ranges of cache bucket `b` back to the free lists.
    fn release_bucket(&mut self, b: usize) {
        let CacheBucket { len, mut head, count } = self.cache[b];
        while head != NIL {
            let next = self.nodes[head as usize].next_free;
            self.nodes[head as usize].cached = false;
            self.release(head);
            head = next;
        }
        // CAST: a count below CACHE_PER_BUCKET.
        self.cached -= count as usize;
        self.cached_bytes -= len * u64::from(count);
        self.cache[b] = CacheBucket::EMPTY;
    }

    /// Gives every range of the handle cache back to the free lists (merging them with their
    /// free neighbours); returns how many there were. Allocations do this themselves before
    /// they fail for lack of VA.
    pub fn flush_cache(&mut self) -> usize {
        let n = self.cached;
        if n > 0 {
            for b in 0..CACHE_BUCKETS {
                if self.cache[b].head != NIL {
                    self.release_bucket(b);
                }
            }
        }
        n
    }

    /// Ranges in the handle cache.
    pub fn cached_ranges(&self) -> usize {
        self.cached
    }

    /// Frees `range` handed out by [`Self::alloc_handle`] with `handle` (never a range from
    /// [`Self::alloc`]: that one would stay in the index).
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocated`] when `handle` does not name exactly `range`, live; nothing
    /// changes.
    #[inline(always)]
    pub fn free_handle(&mut self, range: VaRange, handle: u32) -> Result<()> {
        match self.nodes.get(handle as usize) {
            Some(n)
                if !n.free
                    && !n.cached
                    && n.start == range.start().as_u64()
                    && n.len == range.len_bytes() => {}
            _ => return Err(Error::NotAllocated),
        }
        self.handles -= 1;
        self.cache_or_release(handle);
        Ok(())
    }

    /// Finds and carves a range; returns it and its node. When no free range holds it, the
    /// handle cache is given back and the search made once more.
    #[inline(always)]
    fn place(&mut self, len_bytes: u64, align: u64) -> Result<(VaRange, u32)> {
        match self.place_once(len_bytes, align) {
            Err(Error::OutOfVa) if self.cached > 0 => {
                self.flush_cache();
                self.place_once(len_bytes, align)
            }
            r => r,
        }
    }

    #[inline(always)]
    fn place_once(&mut self, len_bytes: u64, align: u64) -> Result<(VaRange, u32)> {
        if len_bytes == 0 || !align.is_power_of_two() {
            return Err(Error::InvalidArgument);
        }
        let mut c = class_of(len_bytes);
        let found = loop {
            let Some(k) = self.nonempty_from(c) else { return Err(Error::OutOfVa) };
            if let Some(hit) = self.best_in_class(k, len_bytes, align) {
                break hit;
            }
            c = k + 1;
        };
        let (n, aligned) = found;
        let range = VaRange::try_new(DeviceAddr(aligned), len_bytes).map_err(|_| Error::InvalidArgument)?;
        Ok((range, self.take(n, aligned, len_bytes)))
    }

    /// Carves `[aligned, aligned + len)` out of free node `n`; the head and the tail stay free.
    /// Returns the node of the carved range.
    #[inline(always)]
    fn take(&mut self, n: u32, aligned: u64, len: u64) -> u32 {
        self.unlink_free(n);
        let Node { start, len: block_len, next_phys, .. } = self.nodes[n as usize];
        let head = aligned - start;
        let tail = block_len - head - len;
        // The original node stays the lowest piece, so node 0 always starts the window.
        let used = if head > 0 {
            self.nodes[n as usize].len = head;
            let u = self.new_node(aligned, len);
            self.nodes[u as usize].prev_phys = n;
            self.nodes[u as usize].next_phys = next_phys;
            self.nodes[n as usize].next_phys = u;
            if next_phys != NIL {
                self.nodes[next_phys as usize].prev_phys = u;
            }
            self.link_free(n);
            u
        } else {
            self.nodes[n as usize].len = len;
            n
        };
        if tail > 0 {
            let after = self.nodes[used as usize].next_phys;
            let t = self.new_node(aligned + len, tail);
            self.nodes[t as usize].prev_phys = used;
            self.nodes[t as usize].next_phys = after;
            self.nodes[used as usize].next_phys = t;
            if after != NIL {
                self.nodes[after as usize].prev_phys = t;
            }
            self.link_free(t);
        }
        used
    }

    /// Frees `range`, which must be exactly a range returned by [`Self::alloc`] and still live.
    ///
    /// The freed range merges with free neighbours.
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocated`] when `range` is not exactly a live allocation; nothing changes.
    pub fn free(&mut self, range: VaRange) -> Result<()> {
        let start = range.start().as_u64();
        let Some(n) = self.allocated.get(start) else { return Err(Error::NotAllocated) };
        if self.nodes[n as usize].len != range.len_bytes() {
            return Err(Error::NotAllocated);
        }
        self.allocated.remove(start);
        self.release(n);
        Ok(())
    }

    /// Frees allocated node `n`, merging it with free neighbours.
    #[inline(always)]
    fn release(&mut self, mut n: u32) {
        let prev = self.nodes[n as usize].prev_phys;
        if prev != NIL && self.nodes[prev as usize].free {
            self.unlink_free(prev);
            self.absorb_next(prev);
            n = prev;
        }
        let next = self.nodes[n as usize].next_phys;
        if next != NIL && self.nodes[next as usize].free {
            self.unlink_free(next);
            self.absorb_next(n);
        }
        self.link_free(n);
    }

    /// Merges the address neighbour after `n` into `n` and recycles its node.
    #[inline(always)]
    fn absorb_next(&mut self, n: u32) {
        let next = self.nodes[n as usize].next_phys;
        let Node { len, next_phys: after, .. } = self.nodes[next as usize];
        self.nodes[n as usize].len += len;
        self.nodes[n as usize].next_phys = after;
        if after != NIL {
            self.nodes[after as usize].prev_phys = n;
        }
        // A recycled node names no range (so a stale handle never matches it).
        self.nodes[next as usize].len = 0;
        self.spare.push(next);
    }

    /// Bytes of the window not allocated (the handle cache's ranges are free).
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes + self.cached_bytes
    }

    /// Length of the largest free range (0 when the window is full). A range in the handle
    /// cache counts on its own: joined with its free neighbours when the cache is given back
    /// (as an allocation that needs it does), the largest range may be longer.
    pub fn largest_free(&self) -> u64 {
        let cached = self.cache.iter().filter(|b| b.head != NIL).map(|b| b.len).max().unwrap_or(0);
        if self.fl_bitmap == 0 {
            return cached;
        }
        let fl = 63 - self.fl_bitmap.leading_zeros() as usize;
        let sl = 31 - self.sl_bitmap[fl].leading_zeros() as usize;
        let mut n = self.heads[fl * SL_COUNT + sl];
        let mut best = cached;
        while n != NIL {
            let node = &self.nodes[n as usize];
            best = best.max(node.len);
            n = node.next_free;
        }
        best
    }

    /// The window this allocator hands out ranges from.
    pub fn window(&self) -> VaRange {
        self.window
    }

    /// Number of live allocations.
    pub fn live_count(&self) -> usize {
        self.allocated.len() + self.handles
    }

    /// The live allocation starting exactly at `start`, if any: O(1) expected.
    pub fn get(&self, start: DeviceAddr) -> Option<VaRange> {
        let n = self.allocated.get(start.as_u64())?;
        VaRange::try_new(start, self.nodes[n as usize].len).ok()
    }

    /// The live allocation that contains `addr`, if any (a walk in address order, O(n)).
    pub fn find(&self, addr: DeviceAddr) -> Option<VaRange> {
        let a = addr.as_u64();
        let (start, len, free) = self.ranges().find(|&(s, l, _)| a >= s && a - s < l)?;
        if free {
            return None;
        }
        VaRange::try_new(DeviceAddr(start), len).ok()
    }
}

/// `addr` rounded up to a multiple of `align` (a power of two), or `None` on overflow.
#[inline]
fn align_up(addr: u64, align: u64) -> Option<u64> {
    let mask = align - 1;
    addr.checked_add(mask).map(|v| v & !mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x1000_0000;

    fn range(start: u64, len: u64) -> VaRange {
        VaRange::try_new(DeviceAddr(start), len).unwrap()
    }

    fn fresh(len: u64) -> VaAllocator {
        VaAllocator::new(range(BASE, len))
    }

    #[test]
    fn alloc_and_free_coalesce() {
        let mut va = fresh(0x10000);
        assert_eq!(va.window(), range(BASE, 0x10000));
        let a = va.alloc(0x1000, 1).unwrap();
        let b = va.alloc(0x1000, 1).unwrap();
        let c = va.alloc(0x1000, 1).unwrap();
        assert_eq!(a, range(BASE, 0x1000));
        assert_eq!(b, range(BASE + 0x1000, 0x1000));
        assert_eq!(c, range(BASE + 0x2000, 0x1000));
        assert_eq!(va.free_bytes(), 0xd000);
        va.free(a).unwrap();
        va.free(c).unwrap();
        va.free(b).unwrap();
        assert_eq!(va, fresh(0x10000));
    }

    #[test]
    fn best_fit_by_size_then_address() {
        let mut va = fresh(0x10000);
        let parts: [VaRange; 6] = core::array::from_fn(|i| {
            let len = [0x3000, 0x1000, 0x2000, 0x1000, 0x2000, 0x1000][i];
            va.alloc(len, 1).unwrap()
        });
        // Holes of 0x3000 at BASE, 0x2000 at +0x4000, 0x2000 at +0x7000.
        va.free(parts[0]).unwrap();
        va.free(parts[2]).unwrap();
        va.free(parts[4]).unwrap();
        let got = va.alloc(0x1800, 1).unwrap();
        assert_eq!(got.start(), DeviceAddr(BASE + 0x4000));
        let got = va.alloc(0x2000, 1).unwrap();
        assert_eq!(got.start(), DeviceAddr(BASE + 0x7000));
        let got = va.alloc(0x2800, 1).unwrap();
        assert_eq!(got.start(), DeviceAddr(BASE));
    }

    #[test]
    fn alignment_trims_the_head() {
        let mut va = fresh(0x10000);
        let a = va.alloc(0x100, 1).unwrap();
        let b = va.alloc(0x1000, 0x4000).unwrap();
        assert_eq!(b.start(), DeviceAddr(BASE + 0x4000));
        assert_eq!(va.free_bytes(), 0x10000 - 0x1100);
        // The head [BASE + 0x100, BASE + 0x4000) went back and is the best fit now.
        let c = va.alloc(0x3f00, 1).unwrap();
        assert_eq!(c.start(), DeviceAddr(BASE + 0x100));
        for r in [a, b, c] {
            va.free(r).unwrap();
        }
        assert_eq!(va, fresh(0x10000));
    }

    #[test]
    fn aligned_search_skips_misaligned_blocks() {
        let mut va = fresh(0x10000);
        let a = va.alloc(0x800, 1).unwrap();
        let _b = va.alloc(0x800, 1).unwrap();
        let c = va.alloc(0x1800, 1).unwrap();
        let _d = va.alloc(0x800, 1).unwrap();
        va.free(a).unwrap();
        va.free(c).unwrap();
        // The 0x1800 hole at +0x1000 holds an aligned 0x1000; the 0x800 hole cannot.
        let got = va.alloc(0x1000, 0x1000).unwrap();
        assert_eq!(got.start(), DeviceAddr(BASE + 0x1000));
        // Nothing but the tail can hold an aligned 0x2000 now.
        let got = va.alloc(0x2000, 0x2000).unwrap();
        assert_eq!(got.start(), DeviceAddr(BASE + 0x4000));
    }

    #[test]
    fn errors_change_nothing() {
        let mut va = fresh(0x4000);
        assert_eq!(va.alloc(0, 1), Err(Error::InvalidArgument));
        assert_eq!(va.alloc(1, 3), Err(Error::InvalidArgument));
        assert_eq!(va.alloc(1, 0), Err(Error::InvalidArgument));
        assert_eq!(va.alloc(0x4001, 1), Err(Error::OutOfVa));
        assert_eq!(va.alloc(0x1000, 1 << 40), Err(Error::OutOfVa));
        assert_eq!(va.alloc(u64::MAX, 1), Err(Error::OutOfVa));
        let a = va.alloc(0x2000, 1).unwrap();
        let before = va.clone();
        assert_eq!(va.free(range(BASE, 0x1000)), Err(Error::NotAllocated));
        assert_eq!(va.free(range(BASE + 0x1000, 0x1000)), Err(Error::NotAllocated));
        assert_eq!(va.free(range(BASE + 0x2000, 0x1000)), Err(Error::NotAllocated));
        assert_eq!(va, before);
        va.free(a).unwrap();
        assert_eq!(va.free(a), Err(Error::NotAllocated));
    }

    #[test]
    fn handles_free_without_the_index() {
        let mut va = fresh(0x4000);
        let before = va.clone();
        let (a, ha) = va.alloc_handle(0x1000, 0x1000).unwrap();
        let b = va.alloc(0x1000, 1).unwrap();
        assert_eq!(va.live_count(), 2);
        assert_eq!(va.get(a.start()), None, "a handle range is not in the index");
        assert_eq!(va.find(a.start()), Some(a));
        assert_eq!(va.free(a), Err(Error::NotAllocated));
        assert_eq!(va.free_handle(range(BASE, 0x800), ha), Err(Error::NotAllocated));
        va.free_handle(a, ha).unwrap();
        assert_eq!(va.free_handle(a, ha), Err(Error::NotAllocated), "a double free is refused");
        va.free(b).unwrap();
        assert_eq!(va, before);
        // A handle whose node merged into its free neighbour is refused too.
        let (c, hc) = va.alloc_handle(0x1000, 0x1000).unwrap();
        let (d, hd) = va.alloc_handle(0x1000, 1).unwrap();
        va.free_handle(c, hc).unwrap();
        va.free_handle(d, hd).unwrap();
        assert_eq!(va.free_handle(d, hd), Err(Error::NotAllocated));
        assert_eq!(va, before);
    }

    #[test]
    fn find_locates_live_ranges() {
        let mut va = fresh(0x4000);
        let a = va.alloc(0x1000, 1).unwrap();
        let b = va.alloc(0x10, 1).unwrap();
        assert_eq!(va.find(DeviceAddr(BASE)), Some(a));
        assert_eq!(va.find(DeviceAddr(BASE + 0xfff)), Some(a));
        assert_eq!(va.find(DeviceAddr(BASE + 0x100f)), Some(b));
        assert_eq!(va.find(DeviceAddr(BASE + 0x1010)), None);
        assert_eq!(va.find(DeviceAddr(BASE - 1)), None);
        va.free(a).unwrap();
        assert_eq!(va.find(DeviceAddr(BASE)), None);
    }

    #[test]
    fn window_at_the_top_of_the_address_space() {
        let start = u64::MAX - 0x2000;
        let mut va = VaAllocator::new(range(start, 0x2000));
        // Aligning the start to 0x4000 would overflow.
        assert_eq!(va.alloc(1, 0x4000), Err(Error::OutOfVa));
        let a = va.alloc(0x1000, 0x1000).unwrap();
        assert_eq!(a.start(), DeviceAddr(u64::MAX - 0x1fff));
        va.free(a).unwrap();
        let mut va = VaAllocator::new(range(start, 0x2000));
        let a = va.alloc(0x1000, 1).unwrap();
        let b = va.alloc(0x1000, 1).unwrap();
        assert_eq!(b.end(), u64::MAX);
        assert_eq!(va.alloc(1, 1), Err(Error::OutOfVa));
        va.free(b).unwrap();
        va.free(a).unwrap();
        assert_eq!(va.free_bytes(), 0x2000);
    }

    #[test]
    fn a_freed_handle_range_is_taken_back_by_the_next_of_its_length() {
        let mut va = fresh(0x10_0000);
        let (a, ha) = va.alloc_handle(0x4000, 0x1000).unwrap();
        let (b, hb) = va.alloc_handle(0x4000, 0x1000).unwrap();
        va.free_handle(a, ha).unwrap();
        assert_eq!(va.cached_ranges(), 1);
        assert_eq!(va.free_bytes(), 0x10_0000 - 0x4000, "a cached range is free");
        assert_eq!(va.live_count(), 1);
        assert_eq!(va.find(a.start()), None, "a cached range holds no live allocation");
        // The double free of a cached range is refused.
        assert_eq!(va.free_handle(a, ha), Err(Error::NotAllocated));
        // Another length does not take it; the same length does (the one freed last).
        let (c, hc) = va.alloc_handle(0x2000, 0x1000).unwrap();
        assert_ne!(c.start(), a.start());
        let (d, hd) = va.alloc_handle(0x4000, 0x1000).unwrap();
        assert_eq!((d, hd), (a, ha));
        assert_eq!(va.cached_ranges(), 0);
        // Cached at BASE + 0x4000 (b), the range does not meet a 0x8000 alignment: the search
        // places the request elsewhere and the range stays cached.
        va.free_handle(b, hb).unwrap();
        assert_eq!(b.start().as_u64() % 0x8000, 0x4000);
        let (e, he) = va.alloc_handle(0x4000, 0x8000).unwrap();
        assert_eq!(e.start().as_u64() % 0x8000, 0);
        assert_eq!(va.cached_ranges(), 1);
        for (r, h) in [(c, hc), (d, hd), (e, he)] {
            va.free_handle(r, h).unwrap();
        }
        assert!(va.cached_ranges() > 0);
        assert_eq!(va, fresh(0x10_0000), "cached ranges compare as free space");
        let cached = va.cached_ranges();
        assert_eq!(va.flush_cache(), cached);
        assert_eq!(va.cached_ranges(), 0);
        assert_eq!(va.largest_free(), 0x10_0000, "flushed ranges merge back");
    }

    #[test]
    fn cached_ranges_go_back_before_an_allocation_fails() {
        // Fill the window with 16 handle ranges, free every other one (all cached: no two free
        // neighbours merge), then ask for a range only the merged space can hold.
        let mut va = fresh(0x10_000);
        let live: Vec<_> = (0..16).map(|_| va.alloc_handle(0x1000, 0x1000).unwrap()).collect();
        assert_eq!(va.alloc_handle(0x1000, 0x1000), Err(Error::OutOfVa));
        for &(r, h) in live.iter().step_by(2).chain(live.iter().skip(1).step_by(2).take(2)) {
            va.free_handle(r, h).unwrap();
        }
        assert_eq!(va.cached_ranges(), 10);
        let (big, hbig) = va.alloc_handle(0x3000, 0x1000).unwrap();
        assert_eq!(big.start(), DeviceAddr(BASE), "the cache went back and merged");
        assert_eq!(va.cached_ranges(), 0);
        va.free_handle(big, hbig).unwrap();
        for &(r, h) in live.iter().skip(5).step_by(2) {
            va.free_handle(r, h).unwrap();
        }
        va.flush_cache();
        assert_eq!(va, fresh(0x10_000));
    }

    #[test]
    fn the_handle_cache_is_bounded() {
        // Per bucket: a hundred ranges of one length keep 64 in the cache.
        let mut va = fresh(1 << 40);
        let one: Vec<_> = (0..100).map(|_| va.alloc_handle(0x3000, 0x1000).unwrap()).collect();
        for &(r, h) in &one {
            va.free_handle(r, h).unwrap();
        }
        assert_eq!(va.cached_ranges(), CACHE_PER_BUCKET as usize);
        va.flush_cache();
        assert_eq!(va, fresh(1 << 40));
        // In all: 32 lengths, each with room in its bucket, fill the cache to its bound.
        let live: Vec<_> = (0..CACHE_RANGES + 100)
            .map(|i| {
                // CAST: small indices.
                let len = 0x1000 * (1 + (i % 32) as u64);
                va.alloc_handle(len, 0x1000).unwrap()
            })
            .collect();
        for &(r, h) in &live {
            va.free_handle(r, h).unwrap();
        }
        assert_eq!(va.cached_ranges(), CACHE_RANGES);
        va.flush_cache();
        assert_eq!(va.cached_ranges(), 0);
        assert_eq!(va, fresh(1 << 40));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(miri) { 2 } else { 256 },
            // No file of failing seeds: Miri runs isolated, with no file system.
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Handle allocations and frees (with the cache) against a list of live ranges: no
        /// overlap, alignment, exact free bytes, refused double frees; everything freed and the
        /// cache given back, the allocator is a fresh one.
        #[test]
        fn handles_with_the_cache_match_a_model(
            ops in proptest::collection::vec((0..4u8, 0..6u64, 0..3u32, proptest::prelude::any::<usize>()), 1..300)
        ) {
            const LEN: u64 = 0x40_0000;
            let mut va = fresh(LEN);
            let mut live: Vec<(VaRange, u32)> = Vec::new();
            for (kind, len, align, pick) in ops {
                match kind {
                    0 | 1 => {
                        let (len, align) = (0x1000 * (1 + len * len), 0x1000u64 << (4 * align));
                        match va.alloc_handle(len, align) {
                            Ok((r, h)) => {
                                proptest::prop_assert_eq!(r.len_bytes(), len);
                                proptest::prop_assert_eq!(r.start().as_u64() % align, 0);
                                proptest::prop_assert!(r.start().as_u64() >= BASE && r.end() <= BASE + LEN);
                                for (o, _) in &live {
                                    proptest::prop_assert!(r.end() <= o.start().as_u64() || o.end() <= r.start().as_u64());
                                }
                                live.push((r, h));
                            }
                            Err(e) => {
                                proptest::prop_assert_eq!(e, Error::OutOfVa);
                                proptest::prop_assert_eq!(va.cached_ranges(), 0, "a failure gives the cache back first");
                            }
                        }
                    }
                    2 if !live.is_empty() => {
                        let (r, h) = live.swap_remove(pick % live.len());
                        proptest::prop_assert_eq!(va.free_handle(r, h), Ok(()));
                        proptest::prop_assert_eq!(va.free_handle(r, h), Err(Error::NotAllocated));
                    }
                    _ => {
                        va.flush_cache();
                    }
                }
                let used: u64 = live.iter().map(|(r, _)| r.len_bytes()).sum();
                proptest::prop_assert_eq!(va.free_bytes(), LEN - used);
                proptest::prop_assert_eq!(va.live_count(), live.len());
            }
            for (r, h) in live.drain(..) {
                va.free_handle(r, h).unwrap();
            }
            proptest::prop_assert_eq!(&va, &fresh(LEN));
            va.flush_cache();
            proptest::prop_assert_eq!(va.largest_free(), LEN);
        }
    }
}
