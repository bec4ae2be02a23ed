//! Physical frame allocator: the per-device buddy allocator over high-bandwidth memory (HBM).
//!
//! This module owns the answer to "which bytes of a device's HBM are in use, and as which page
//! size". It must not touch VA, mappings, host memory or the driver: it hands out byte offsets
//! into HBM ([`PhysRun`]) and takes them back. The software NPU embeds it exactly as device
//! firmware would.
//!
//! # Algorithm
//!
//! A binary buddy allocator over 4 KiB frames with orders 0 (4 KiB) to [`MAX_ORDER`] (18, 1 GiB).
//! The free blocks of each order are one bit each in a hierarchical bitmap (64-way summary words
//! above the leaf words), so the lowest free block of an order is found, and a buddy tested,
//! taken or put back, in O(log64 n) word operations; a count per order answers capacity
//! questions in O(19). What is allocated is one bit per page of each page size (per 4 KiB frame,
//! per 2 MiB, per 1 GiB), which frees and claims check a word (64 pages) at a time. All of this
//! storage, with the held-slack tables below (about 0.6 bit per frame), is sized once by
//! [`FrameAllocator::new`] (about 3.5 bits per frame: 1.8 MiB for 16 GiB of HBM) and no
//! operation allocates on the heap, apart from the [`Vec`] that
//! [`FrameAllocator::alloc_pages`] returns; [`FrameAllocator::alloc_pages_into`] writes into the
//! caller's buffer instead. The initial free memory is the largest aligned blocks covering
//! `[0, total)`.
//!
//! - An allocation of `count` pages takes one block: the lowest free block of the smallest order
//!   that holds all of them (splitting a larger block when needed), keeping the low part and
//!   giving the rest back. It is one physically contiguous run whenever any free block is large
//!   enough.
//! - When none is (fragmented memory), normal (4 KiB) allocations take blocks greedily: the
//!   largest free block not larger than what remains; when every free block is larger, the
//!   smallest larger block is split and only its low part is taken. They therefore succeed
//!   whenever enough bytes are free, however fragmented, as few runs as possible.
//! - Huge (2 MiB) and giant (1 GiB) allocations do the same restricted to blocks of order 9 or
//!   18 and above, so every piece is aligned to and a multiple of its page size. They are also
//!   limited by a budget of bytes that may be in use as that page size.
//! - Frees check every page of every run against the allocation bits of that page size before
//!   anything is given back (all or nothing), then merge freed blocks with free buddies.
//!   A run that was the low part of one block goes back as that whole block when the rest of
//!   the block is still free as the split left it (one merge chain, not one per piece).
//! - Quick reuse ([`FrameAllocator::set_quick_reuse`], off by default, on in
//!   [`crate::device::FrameBacker`]): a run freed whole is kept in a cache of up to 1024 runs
//!   in 256 buckets by length and page size (a stack of up to 32 runs of one size per bucket),
//!   and the next allocation of that exact size takes the run freed last back in O(1) with no
//!   split or merge, so that a churn of a few sizes (slab segments, the tensors of a training
//!   step) runs without touching the buddy bitmaps. Cached frames are free memory (counted
//!   free, exactly); an allocation that finds no free block large enough gives them all back
//!   first.
//! - Held slack (quick reuse on): an allocation whose block is of order 4 (64 KiB) or more and
//!   that does not fill it keeps the rest of the block off the free lists instead of splitting
//!   it onto them. Two tables record the holders by their first frame (a holder's block starts
//!   there): blocks of order 9 (2 MiB) or more in `held` (one `u32` per 2 MiB), blocks of
//!   orders 4 to 8 in `held_lo` (one `u8` per 64 KiB: such a holder has fewer than 256
//!   frames), and a bitmap with one bit per 64 KiB marks where any holder starts. Freed whole,
//!   such a run puts the whole block in the quick-reuse cache as a block of its order (a stack
//!   of up to 32 blocks per order, besides the runs cached by exact length), and the next
//!   allocation whose block has that order, whatever its exact length, takes it back: the
//!   cache is keyed by size class (block order) for these runs, so a churn of varied sizes
//!   from 64 KiB up costs no split on allocation and no merge on free. Held frames are free
//!   memory too: [`MemoryInfo::free_bytes`] counts them, the huge and giant figures count the
//!   whole pages inside them, and they are given back with the cache (an allocation that
//!   finds no free block large enough, [`FrameAllocator::flush_quick`],
//!   [`FrameAllocator::claim_pages`], trim). A free that frees the first frame of a holder
//!   other than as the holder's whole run (a piece of it, or a run spanning it and other
//!   allocations) gives that holder's slack back first; a free of a piece that leaves the
//!   holder's first frame allocated leaves the slack held until that frame is freed.
//!
//! - Huge-first allocations with a tail ([`FrameAllocator::alloc_huge_with_tail`]): whole
//!   2 MiB pages and a 4 KiB-page tail of under 2 MiB as one run from one block (each part
//!   marked with its own page size), freed as one ([`FrameAllocator::free_huge_with_tail`]) and
//!   cached whole by quick reuse. Refused (the caller takes the parts one by one, which also
//!   works on fragmented memory) when no single free block holds the run, or when the cache
//!   holds the huge pages alone (taking those back is cheaper than splitting a block).
//!
//! # Complexity
//!
//! With `L` = log64 of the frame count (at most 6) and 19 orders: an allocation that fits one
//! block costs O(19 + L · 19) (find, split, give back the unused part), plus O(pages / 64) to
//! mark its pages; a fragmented one O(k · (19 + L)) for `k` blocks taken. A free costs
//! O(pages / 64) to check and clear its pages and O(19 · L) per buddy block released.
//! [`FrameAllocator::info`] is O(19), plus O(cached runs) (at most 1024) with quick reuse on.
//! With quick reuse, an allocation that takes a cached run and a free that caches one cost
//! O(pages / 64) (the allocation bits) and O(1) otherwise (a free also looks for holders
//! starting inside its run, O(frames / 1024), and gives their slack back, O(19 · L) each); a
//! free whose bucket holds another size first gives that bucket's runs back, and giving the
//! whole cache back (a single-block search that fails, [`FrameAllocator::flush_quick`]) is
//! O(cached runs · 19 · L), each cached run given back once per time it was cached, plus
//! O(frames / 1024) to find the holders and O(19 · L) per holder to give its slack back.
//!
//! Frame arithmetic inside the allocator is bounded by its invariants (every frame number is
//! below `total_frames` ≤ 2^36), so only values that come from callers are checked explicitly.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use hal::{MemoryInfo, PageSize};

use crate::error::{Error, Result};

/// Bytes in one frame, the smallest (4 KiB) page.
pub const FRAME_BYTES: u64 = 4 << 10;
/// log2 of [`FRAME_BYTES`].
const FRAME_SHIFT: u32 = 12;
/// The largest buddy order: a block of 2^18 frames is 1 GiB.
pub const MAX_ORDER: u32 = 18;
/// Number of orders, 0 to [`MAX_ORDER`] inclusive.
const ORDERS: usize = MAX_ORDER as usize + 1;
/// The largest HBM size [`FrameAllocator::new`] accepts: 256 TiB.
///
/// The bound keeps every byte offset and frame count far from overflow. The allocator's own
/// storage is about 3.5 bits per 4 KiB frame.
pub const MAX_TOTAL_BYTES: u64 = 1 << 48;

/// The buddy order of one page of `page` size.
const fn page_order(page: PageSize) -> u32 {
    page.shift() - FRAME_SHIFT
}

/// Frames in a block of `order`.
const fn order_frames(order: u32) -> u64 {
    1 << order
}

/// The index of `order` (always below [`ORDERS`]).
const fn slot(order: u32) -> usize {
    // CAST: order <= MAX_ORDER, so it fits in usize.
    order as usize
}

/// The largest order of a block that starts at `frame` and fits in `avail` (≥ 1) frames.
fn largest_block(frame: u64, avail: u64) -> u32 {
    let align = if frame == 0 { MAX_ORDER } else { frame.trailing_zeros().min(MAX_ORDER) };
    align.min(avail.max(1).ilog2())
}

/// Aligned blocks of `order` inside frames `[lo, hi)`.
#[inline]
fn aligned_blocks(lo: u64, hi: u64, order: u32) -> u64 {
    (hi >> order).saturating_sub(lo.div_ceil(order_frames(order)))
}

/// `usize` of a bit or word index (bounded by the storage `new` allocated).
#[inline]
fn ix(i: u64) -> usize {
    // CAST: every index is below a length that was allocated as a Vec.
    i as usize
}

/// Sets every word of `words` to `v`: the few words of a run of a few hundred frames one by
/// one (a call to `memset` costs more than the stores), longer spans with `fill`.
#[inline(always)]
fn fill_words(words: &mut [u64], v: u64) {
    match words {
        [] => {}
        [a] => *a = v,
        [a, b] => (*a, *b) = (v, v),
        [a, b, c] => (*a, *b, *c) = (v, v, v),
        [a, b, c, d] => (*a, *b, *c, *d) = (v, v, v, v),
        _ => words.fill(v),
    }
}

/// A flat bitmap with range operations.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    fn new(bits: u64) -> Self {
        Self { words: vec![0; ix(bits.div_ceil(64))] }
    }

    /// The first and last words covering bits `[lo, hi)` (`lo < hi`) and the masks of the
    /// bits of the range in each.
    #[inline]
    fn words_of(lo: u64, hi: u64) -> (usize, usize, u64, u64) {
        let m0 = u64::MAX << (lo % 64);
        let m1 = u64::MAX >> (63 - (hi - 1) % 64);
        (ix(lo / 64), ix((hi - 1) / 64), m0, m1)
    }

    #[inline(always)]
    fn set(&mut self, i: u64) {
        self.words[ix(i / 64)] |= 1 << (i % 64);
    }

    #[inline(always)]
    fn clear(&mut self, i: u64) {
        self.words[ix(i / 64)] &= !(1 << (i % 64));
    }

    /// The lowest set bit in `[lo, hi)`.
    fn next_set(&self, lo: u64, hi: u64) -> Option<u64> {
        if lo >= hi {
            return None;
        }
        let (a, b, m0, m1) = Self::words_of(lo, hi);
        let mut w = a;
        let mut m = m0;
        loop {
            if w == b {
                m &= m1;
            }
            let bits = self.words[w] & m;
            if bits != 0 {
                // CAST: a word index of a Vec, far below 2^58.
                return Some(w as u64 * 64 + u64::from(bits.trailing_zeros()));
            }
            if w == b {
                return None;
            }
            w += 1;
            m = u64::MAX;
        }
    }

    #[inline(always)]
    fn all_set(&self, lo: u64, hi: u64) -> bool {
        if lo >= hi {
            return true;
        }
        let (a, b, m0, m1) = Self::words_of(lo, hi);
        match &self.words[a..b + 1] {
            [w] => w & m0 & m1 == m0 & m1,
            [first, mid @ .., last] => {
                first & m0 == m0 && mid.iter().all(|&w| w == u64::MAX) && last & m1 == m1
            }
            [] => true,
        }
    }

    #[inline]
    fn none_set(&self, lo: u64, hi: u64) -> bool {
        if lo >= hi {
            return true;
        }
        let (a, b, m0, m1) = Self::words_of(lo, hi);
        if a == b {
            return self.words[a] & m0 & m1 == 0;
        }
        self.words[a] & m0 == 0 && self.words[a + 1..b].iter().all(|&w| w == 0) && self.words[b] & m1 == 0
    }

    #[inline(always)]
    fn set_range(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        let (a, b, m0, m1) = Self::words_of(lo, hi);
        match &mut self.words[a..b + 1] {
            [w] => *w |= m0 & m1,
            [first, mid @ .., last] => {
                *first |= m0;
                fill_words(mid, u64::MAX);
                *last |= m1;
            }
            [] => {}
        }
    }

    /// Clears bits `[lo, hi)` when every one of them is set; `false` (and no change) otherwise.
    #[inline(always)]
    fn take_range(&mut self, lo: u64, hi: u64) -> bool {
        if lo >= hi {
            return true;
        }
        let (a, b, m0, m1) = Self::words_of(lo, hi);
        match &mut self.words[a..b + 1] {
            [w] => {
                let m = m0 & m1;
                if *w & m != m {
                    return false;
                }
                *w &= !m;
            }
            [first, mid @ .., last] => {
                if *first & m0 != m0 || *last & m1 != m1 || mid.iter().any(|&w| w != u64::MAX) {
                    return false;
                }
                *first &= !m0;
                fill_words(mid, 0);
                *last &= !m1;
            }
            [] => {}
        }
        true
    }

    #[inline(always)]
    fn clear_range(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        let (a, b, m0, m1) = Self::words_of(lo, hi);
        match &mut self.words[a..b + 1] {
            [w] => *w &= !(m0 & m1),
            [first, mid @ .., last] => {
                *first &= !m0;
                fill_words(mid, 0);
                *last &= !m1;
            }
            [] => {}
        }
    }
}

/// A bitmap with summary levels: bit `j` of level `k + 1` is set when word `j` of level `k` is
/// non-zero, up to a single top word, so the lowest set bit is found in one pass down. The levels
/// are stored one after another in one vector, leaf level first.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BitTree {
    words: Vec<u64>,
    /// Where each level starts in `words`; `depth` levels are used.
    offsets: [usize; 8],
    depth: usize,
}

impl BitTree {
    fn new(bits: u64) -> Self {
        let mut offsets = [0; 8];
        let mut depth = 0;
        let mut total = 0;
        let mut n = bits.max(1);
        loop {
            let words = ix(n.div_ceil(64));
            offsets[depth] = total;
            total += words;
            depth += 1;
            if words == 1 {
                break;
            }
            n = words as u64;
        }
        Self { words: vec![0; total], offsets, depth }
    }

    #[inline(always)]
    fn test(&self, i: u64) -> bool {
        self.words[ix(i / 64)] & (1 << (i % 64)) != 0
    }

    /// Sets bit `i`. The leaf level starts the storage; the summaries above change only when
    /// the leaf word was empty, which [`Self::set_above`] handles out of line.
    #[inline(always)]
    fn set(&mut self, i: u64) {
        let w = &mut self.words[ix(i / 64)];
        let was = *w;
        *w = was | 1 << (i % 64);
        if was == 0 {
            self.set_above(i / 64);
        }
    }

    /// Sets the summary bits of leaf word `i`, which has just become non-empty.
    #[inline(never)]
    fn set_above(&mut self, mut i: u64) {
        for l in 1..self.depth {
            let w = &mut self.words[self.offsets[l] + ix(i / 64)];
            let was = *w;
            *w |= 1 << (i % 64);
            if was != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// Clears bit `i` (see [`Self::set`] for the summaries).
    #[inline(always)]
    fn clear(&mut self, i: u64) {
        let w = &mut self.words[ix(i / 64)];
        *w &= !(1 << (i % 64));
        if *w == 0 {
            self.clear_above(i / 64);
        }
    }

    /// Clears the summary bits of leaf word `i`, which has just become empty.
    #[inline(never)]
    fn clear_above(&mut self, mut i: u64) {
        for l in 1..self.depth {
            let w = &mut self.words[self.offsets[l] + ix(i / 64)];
            *w &= !(1 << (i % 64));
            if *w != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// The lowest set bit.
    #[inline]
    fn first(&self) -> Option<u64> {
        let mut i = 0u64;
        for l in (0..self.depth).rev() {
            let w = self.words[self.offsets[l] + ix(i)];
            if w == 0 {
                return None;
            }
            i = i * 64 + u64::from(w.trailing_zeros());
        }
        Some(i)
    }
}

/// How much HBM a device has and how much of it may be used as huge or giant pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhysConfig {
    /// Bytes of HBM; rounded down to 4 KiB.
    pub total_bytes: u64,
    /// Bytes that may be in use as 2 MiB pages at once; rounded down to 2 MiB, at most the total.
    pub huge_budget_bytes: u64,
    /// Bytes that may be in use as 1 GiB pages at once; rounded down to 1 GiB, at most the total.
    pub giant_budget_bytes: u64,
}

/// A physically contiguous piece of HBM: a byte offset and a length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhysRun {
    /// Byte offset into the device's HBM.
    pub offset: u64,
    /// Length in bytes.
    pub len_bytes: u64,
}

impl PhysRun {
    /// One past the last byte, or `None` on overflow.
    pub const fn checked_end(&self) -> Option<u64> {
        self.offset.checked_add(self.len_bytes)
    }
}

/// Where an allocation writes its runs (coalesced).
trait Sink {
    /// Appends the run of `frames` frames from frame `start` (written in bytes); `false` when
    /// there is no room (the allocation is then undone).
    fn push(&mut self, start: u64, frames: u64) -> bool;
    /// The runs written so far.
    fn written(&self) -> &[PhysRun];
}

/// The run of `frames` frames from frame `start`, in bytes.
#[inline(always)]
const fn byte_run(start: u64, frames: u64) -> PhysRun {
    PhysRun { offset: start << FRAME_SHIFT, len_bytes: frames << FRAME_SHIFT }
}

/// Runs written into a caller's slice.
struct SliceSink<'a> {
    out: &'a mut [PhysRun],
    n: usize,
}

impl Sink for SliceSink<'_> {
    #[inline(always)]
    fn push(&mut self, start: u64, frames: u64) -> bool {
        let Some(slot) = self.out.get_mut(self.n) else { return false };
        *slot = byte_run(start, frames);
        self.n += 1;
        true
    }

    fn written(&self) -> &[PhysRun] {
        &self.out[..self.n]
    }
}

impl Sink for Vec<PhysRun> {
    fn push(&mut self, start: u64, frames: u64) -> bool {
        Vec::push(self, byte_run(start, frames));
        true
    }

    fn written(&self) -> &[PhysRun] {
        self
    }
}

/// Buckets of the quick-reuse cache (a power of two): each holds runs of one length and page
/// size.
const QUICK_BUCKETS: usize = 256;
/// Runs the quick-reuse cache holds at most, over all buckets.
const QUICK_RUNS: usize = 1024;
// Pool indices are u16, with u16::MAX meaning none.
const _: () = assert!(QUICK_RUNS < QNIL as usize);
/// Runs one bucket holds at most, so that one size cannot take the whole cache.
const QUICK_PER_BUCKET: u16 = 32;
/// No cached run.
const QNIL: u16 = u16::MAX;
/// The quick-reuse tag (in place of a page order) of a joint run: whole 2 MiB pages followed
/// by a 4 KiB-page tail of fewer than 512 frames ([`FrameAllocator::alloc_huge_with_tail`]).
const JOINT_TAG: u32 = 31;
/// Whole blocks of one order the quick-reuse cache holds at most (see
/// [`FrameAllocator::keep_block`]).
const BLOCKS_PER_ORDER: usize = 32;
/// The smallest block order whose slack is held (16 frames, 64 KiB), and log2 of the frames
/// per entry of the fine held-slack table and of its bitmap of holders: a holder's block starts
/// at its first frame, so every holder starts on a multiple of 2^HOLD_MIN frames. A holder of a
/// block below [`HOLD_SHIFT`] has fewer than 256 frames: one `u8` per 64 KiB (1/2 bit per frame)
/// records it.
const HOLD_MIN: u32 = 4;
/// log2 of the frames per entry of the coarse held-slack table: the holders of blocks of order
/// `HOLD_SHIFT` (2 MiB) or more start on a multiple of 2^HOLD_SHIFT, so one `u32` per 2 MiB
/// (1/16 bit per frame) records them.
const HOLD_SHIFT: u32 = 9;
// A fine entry holds the length of a run of fewer than 2^(HOLD_SHIFT - 1) frames.
const _: () = assert!(HOLD_MIN < HOLD_SHIFT && HOLD_SHIFT - 1 <= u8::BITS);

/// One bucket of the quick-reuse cache: a stack (last freed, first reused) of runs of `frames`
/// frames freed as pages of `order`, linked through [`QuickRun::next`] from `head`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct QuickBucket {
    frames: u64,
    order: u32,
    head: u16,
    len: u16,
}

impl QuickBucket {
    const EMPTY: Self = Self { frames: 0, order: 0, head: QNIL, len: 0 };
}

/// One entry of the quick-reuse cache's run pool: a cached run's first frame and the next run
/// of its bucket (or of the free entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct QuickRun {
    frame: u64,
    next: u16,
}

/// An array of `N` copies of `v` on the heap, built there (not on the stack first).
fn boxed_array<T: Copy, const N: usize>(v: T) -> Box<[T; N]> {
    match vec![v; N].into_boxed_slice().try_into() {
        Ok(a) => a,
        // The slice has exactly N elements.
        Err(_) => unreachable!("a boxed slice of N elements converts to [T; N]"),
    }
}

/// Links every entry of `pool` free, in index order (the pool of a fresh cache).
fn reset_pool(pool: &mut [QuickRun]) {
    let n = pool.len();
    for (i, q) in pool.iter_mut().enumerate() {
        // CAST: the pool has fewer than u16::MAX entries.
        *q = QuickRun { frame: 0, next: if i + 1 < n { (i + 1) as u16 } else { QNIL } };
    }
}

/// Words of the bitmap of non-empty quick-reuse buckets.
const QUICK_MASK_WORDS: usize = QUICK_BUCKETS / 64;

/// The bucket of runs of `frames` frames of page order `order` (or tag).
#[inline]
fn quick_slot(order: u32, frames: u64) -> usize {
    // CAST: the shift leaves log2(QUICK_BUCKETS) bits.
    ((frames ^ (u64::from(order) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> (64 - QUICK_BUCKETS.trailing_zeros())) as usize
}

/// The per-device buddy allocator of physical frames.
///
/// The allocator is plain data: it takes `&mut self` for every change and does no locking;
/// the owner (one per device) serialises access.
///
/// # Invariants
///
/// - `total_frames` is in `1..=MAX_TOTAL_BYTES / FRAME_BYTES`.
/// - Bit `i` of `free[o]` is set when frames `[i · 2^o, (i + 1) · 2^o)` are a free block of order
///   `o` inside `[0, total_frames)`; no two free blocks overlap, and no two free blocks are
///   buddies (freed blocks merge), so the free blocks are the canonical decomposition of the
///   free frames. `free_count[o]` is the number of bits set in `free[o]`.
/// - `used[p]` has the bit of every page allocated with page size `p` (per frame, per 2 MiB,
///   per 1 GiB); free blocks and pages allocated with any page size partition the frames.
/// - `allocated_frames` is the number of frames allocated; `huge_in_use` and `giant_in_use`
///   count the pages allocated with that page size and never exceed their budgets.
/// - With quick reuse on, the buckets of `quick` hold runs freed whole that are neither in the
///   free bitmaps nor allocated (their frames count as free); `quick_runs` counts them and the
///   cached blocks (below), each bucket's `len` its own, and the pool entries not in a bucket
///   are on the `quick_free` list. Free blocks, allocated pages and cached runs partition the
///   frames; with quick reuse off no run is cached. A bucket with no run is
///   `QuickBucket::EMPTY`, and bit `q` of `quick_nonempty` is set exactly when bucket `q` holds
///   a run. Pool entries from `quick_high` on have never been handed out (still linked in
///   index order as `new` left them). `quick_touched` is false only while the cache is as
///   [`FrameAllocator::new`] made it (pool linked in index order), so two allocators with the
///   same free frames and an empty, untouched cache compare equal.
/// - With quick reuse on, `blocks[o][..block_len[o]]` are the first frames of the cached whole
///   blocks of order `o` (freed by the holders of their slack; the last freed last): cached
///   runs too, neither in the free bitmaps nor allocated. The other entries of `blocks` are 0.
/// - A holder is a run of `f` frames from frame `s`, `f` not a power of two, allocated as one
///   run (quick reuse on) whose first page is still allocated, and the rest of whose block
///   (the block of order k = ⌈log2 f⌉ ≥ HOLD_MIN from `s`, frames `s + f` on) is held: neither
///   free, cached nor allocated (free blocks, allocated pages, cached runs and held slack
///   partition the frames). For k ≥ HOLD_SHIFT, entry `s / 2^HOLD_SHIFT` of `held` is `f`;
///   for k < HOLD_SHIFT, entry `s / 2^HOLD_MIN` of `held_lo` is `f`; bit `s / 2^HOLD_MIN` of
///   `held_at` is set. Every other entry and bit is 0. `held_count` counts the holders and
///   `held_huge` the aligned 2 MiB blocks inside the held slack (it holds no whole 1 GiB
///   block: a holder's block is at most 1 GiB and starts with the holder's first page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameAllocator {
    total_frames: u64,
    huge_budget_bytes: u64,
    giant_budget_bytes: u64,
    free: Vec<BitTree>,
    free_count: [u64; ORDERS],
    used: [Bits; 3],
    allocated_frames: u64,
    huge_in_use: u64,
    giant_in_use: u64,
    quick_on: bool,
    quick_runs: usize,
    quick_touched: bool,
    quick_free: u16,
    quick_high: u16,
    quick_nonempty: [u64; QUICK_MASK_WORDS],
    /// The cache's buckets and run pool, sized once by `new` (on the heap, so that the
    /// allocator itself stays small enough to live on a firmware stack).
    quick: Box<[QuickBucket; QUICK_BUCKETS]>,
    quick_pool: Box<[QuickRun; QUICK_RUNS]>,
    /// Cached whole blocks by order: a stack of first frames per order (the size classes of
    /// the cache), of `block_len[o]` entries.
    blocks: Box<[[u64; BLOCKS_PER_ORDER]; ORDERS]>,
    block_len: [u8; ORDERS],
    /// Held slack of blocks of order HOLD_SHIFT or more, by block start / 2^HOLD_SHIFT: the
    /// frames of the run that holds the rest of its block (0: none).
    held: Vec<u32>,
    /// Held slack of blocks of orders HOLD_MIN to HOLD_SHIFT - 1, by block start / 2^HOLD_MIN
    /// (0: none).
    held_lo: Vec<u8>,
    /// Bit `start / 2^HOLD_MIN` for the first frame of every holder (of either table), so that a
    /// free finds the holders that start in the run it frees a word (1024 frames) at a time.
    held_at: Bits,
    /// Holders: entries of `held` and `held_lo` that are not 0, bits of `held_at`.
    held_count: usize,
    /// Aligned 2 MiB blocks inside the held slack.
    held_huge: u64,
}

/// The index of `page` in `used`.
const fn used_index(page: PageSize) -> usize {
    match page {
        PageSize::Normal => 0,
        PageSize::Huge => 1,
        PageSize::Giant => 2,
    }
}

impl FrameAllocator {
    /// Creates an allocator with all of `cfg.total_bytes` (rounded down to 4 KiB) free.
    ///
    /// Budgets are clamped to the total and rounded down to their page size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the total is below 4 KiB or above [`MAX_TOTAL_BYTES`].
    pub fn new(cfg: PhysConfig) -> Result<Self> {
        if cfg.total_bytes > MAX_TOTAL_BYTES {
            return Err(Error::InvalidArgument);
        }
        let total_bytes = cfg.total_bytes & !(FRAME_BYTES - 1);
        if total_bytes < FRAME_BYTES {
            return Err(Error::InvalidArgument);
        }
        let budget = |bytes: u64, page: PageSize| bytes.min(total_bytes) & !(page.bytes() - 1);
        let total_frames = total_bytes >> FRAME_SHIFT;
        let pages = |page: PageSize| total_frames.div_ceil(order_frames(page_order(page)));
        let mut this = Self {
            total_frames,
            huge_budget_bytes: budget(cfg.huge_budget_bytes, PageSize::Huge),
            giant_budget_bytes: budget(cfg.giant_budget_bytes, PageSize::Giant),
            free: (0..=MAX_ORDER).map(|o| BitTree::new(total_frames >> o)).collect(),
            free_count: [0; ORDERS],
            used: [
                Bits::new(pages(PageSize::Normal)),
                Bits::new(pages(PageSize::Huge)),
                Bits::new(pages(PageSize::Giant)),
            ],
            allocated_frames: 0,
            huge_in_use: 0,
            giant_in_use: 0,
            quick_on: false,
            quick_runs: 0,
            quick_touched: false,
            quick_free: 0,
            quick_high: 0,
            quick_nonempty: [0; QUICK_MASK_WORDS],
            quick: boxed_array(QuickBucket::EMPTY),
            quick_pool: boxed_array(QuickRun { frame: 0, next: QNIL }),
            blocks: boxed_array([0; BLOCKS_PER_ORDER]),
            block_len: [0; ORDERS],
            held: vec![0; ix(total_frames.div_ceil(order_frames(HOLD_SHIFT)))],
            held_lo: vec![0; ix(total_frames.div_ceil(order_frames(HOLD_MIN)))],
            held_at: Bits::new(total_frames.div_ceil(order_frames(HOLD_MIN))),
            held_count: 0,
            held_huge: 0,
        };
        reset_pool(&mut this.quick_pool[..]);
        // INVARIANT: the largest aligned blocks covering [0, total_frames) are free.
        this.release_range(0, total_frames);
        Ok(this)
    }

    /// Turns quick reuse on or off (off by default; turning it off gives every cached run back).
    ///
    /// With it on, a run freed whole by [`Self::free_pages`] (a one-run free) is kept in a small
    /// cache by its length and page size instead of being merged back into the buddy lists, and
    /// the next allocation of exactly that many pages of that size takes it back without touching
    /// the lists: an alloc/free loop of one size then costs no buddy splits or merges. Cached
    /// frames are free memory: they count in [`MemoryInfo::free_bytes`] (exact) and in the huge
    /// and giant free figures by the whole pages each cached run holds (a cached run is not
    /// merged with its free neighbours until given back, so those two figures may be lower than
    /// after [`Self::flush_quick`]). A run whose block is 64 KiB (16 frames) or more and that
    /// leaves part of it unused holds that part (free memory, counted likewise) and is cached
    /// as the whole block when freed, for the next allocation whose block has the same order
    /// (see the module docs). An allocation that finds no free block large enough gives every
    /// cached run and all held slack back and searches again, so neither ever makes an
    /// allocation fail or take several runs where one free block could hold it. The cache
    /// holds at most 1024 runs by exact length, 32 of one size, and 32 whole blocks of each
    /// order.
    pub fn set_quick_reuse(&mut self, on: bool) {
        self.quick_on = on;
        if !on {
            self.flush_quick();
        }
    }

    /// Gives every run of the quick-reuse cache and all held slack back to the buddy lists
    /// (merging them with their free neighbours); returns the bytes given back. Changes no
    /// figure but the huge and giant free bytes of [`Self::info`].
    pub fn flush_quick(&mut self) -> u64 {
        let mut bytes = self.release_held();
        for o in 0..=MAX_ORDER {
            while let Some(frame) = self.take_block(o) {
                self.release_block(frame, o);
                bytes += order_frames(o) << FRAME_SHIFT;
            }
        }
        if !self.quick_touched {
            return bytes;
        }
        // Only the non-empty buckets: the others are EMPTY already.
        for w in 0..QUICK_MASK_WORDS {
            let mut m = self.quick_nonempty[w];
            while m != 0 {
                // CAST: a bit index below 64.
                let b = w * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                let QuickBucket { frames, mut head, .. } = self.quick[b];
                while head != QNIL {
                    let QuickRun { frame, next } = self.quick_pool[usize::from(head)];
                    self.release_run(frame, frames);
                    bytes += frames << FRAME_SHIFT;
                    head = next;
                }
                self.quick[b] = QuickBucket::EMPTY;
            }
        }
        // INVARIANT: the cache is as new again (the entries from `quick_high` on never left
        // their initial links).
        self.quick_nonempty = [0; QUICK_MASK_WORDS];
        let high = usize::from(self.quick_high);
        reset_pool(&mut self.quick_pool[..high]);
        if high > 0 {
            // CAST: `high` is at most QUICK_RUNS, below u16::MAX.
            self.quick_pool[high - 1].next = if high < QUICK_RUNS { high as u16 } else { QNIL };
        }
        self.quick_high = 0;
        self.quick_free = 0;
        self.quick_runs = 0;
        self.quick_touched = false;
        bytes
    }

    /// Total bytes of HBM managed (the configured total rounded down to 4 KiB).
    pub fn total_bytes(&self) -> u64 {
        self.total_frames << FRAME_SHIFT
    }

    /// Allocates `count` pages of `page` size, all or nothing, and returns their runs.
    ///
    /// The pages come back as runs in allocation order, physically adjacent pieces coalesced;
    /// every run starts at and is a multiple of the page size; there is one run whenever a free
    /// block can hold all the pages (see the module docs). Normal pages succeed whenever
    /// `count` × 4 KiB bytes are free in total and count against no budget.
    ///
    /// This is [`Self::alloc_pages_into`] with a growing buffer.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `count` is zero or the byte size overflows.
    /// - [`Error::BudgetExhausted`] when huge or giant pages in use plus `count` would exceed
    ///   that page size's budget.
    /// - [`Error::OutOfMemory`] when not enough free memory (in blocks aligned to the page
    ///   size) is left.
    pub fn alloc_pages(&mut self, page: PageSize, count: u64) -> Result<Vec<PhysRun>> {
        let mut runs = Vec::new();
        self.alloc_core(page, count, &mut runs)?;
        Ok(runs)
    }

    /// Allocates `count` pages of `page` size like [`Self::alloc_pages`], writing the runs to
    /// the front of `out`; returns how many runs were written. Allocates nothing on the heap.
    ///
    /// # Errors
    ///
    /// Those of [`Self::alloc_pages`], and [`Error::InvalidArgument`] when the pages need more
    /// runs than `out` holds (only when memory is fragmented: one run always suffices while a
    /// free block can hold all the pages). Nothing changes on error.
    pub fn alloc_pages_into(&mut self, page: PageSize, count: u64, out: &mut [PhysRun]) -> Result<usize> {
        let mut sink = SliceSink { out, n: 0 };
        self.alloc_core(page, count, &mut sink)?;
        Ok(sink.n)
    }

    /// Allocates `huge` 2 MiB pages directly followed by `tail` 4 KiB pages (`1..512` of
    /// them) as one physically contiguous run, 2 MiB-aligned: the pages of a huge-first
    /// allocation with its tail in one operation (one block taken, one record to free). The
    /// huge pages count against the huge budget as with [`Self::alloc_pages`].
    ///
    /// `Ok(None)`, with nothing changed, when no single free block holds the run, or when
    /// `huge` is a power of two (the run would need a block twice the size the huge pages
    /// alone take): the caller allocates the two parts on their own then, which succeeds on
    /// fragmented memory too; likewise when the quick-reuse cache holds no such joint run but
    /// holds `huge` 2 MiB pages freed alone. The cache is never given back here.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `huge` is zero, `tail` is not in `1..512`, or the
    ///   size overflows.
    /// - [`Error::BudgetExhausted`] when the huge pages would exceed the huge budget.
    pub fn alloc_huge_with_tail(&mut self, huge: u64, tail: u64) -> Result<Option<PhysRun>> {
        let huge_order = page_order(PageSize::Huge);
        if huge == 0 || tail == 0 || tail >= order_frames(huge_order) || huge > self.total_frames {
            return Err(Error::InvalidArgument);
        }
        // The budget is a whole number of 2 MiB pages, never below the pages in use.
        if huge > (self.huge_budget_bytes >> PageSize::Huge.shift()).saturating_sub(self.huge_in_use) {
            return Err(Error::BudgetExhausted);
        }
        let frames = (huge << huge_order) + tail;
        // The order of the block the run takes (`frames` is never a power of two).
        let want = frames.next_power_of_two().ilog2();
        let hold = self.quick_on && want <= MAX_ORDER;
        let frame = 'found: {
            if self.quick_runs > 0 {
                if let Some(frame) = self.take_quick(JOINT_TAG, frames) {
                    break 'found frame;
                }
                if hold {
                    if let Some(frame) = self.take_block(want) {
                        self.hold(frame, frames, order_frames(want));
                        break 'found frame;
                    }
                }
                // The huge pages alone are cached: taking them and a tail one by one is cheaper
                // than splitting a block for the two.
                let q = quick_slot(huge_order, huge << huge_order);
                let b = self.quick[q];
                if b.head != QNIL && b.frames == huge << huge_order && b.order == huge_order {
                    return Ok(None);
                }
            }
            // Only where the huge pages alone would take a block this large (`huge` not a
            // power of two): the tail then costs no larger block.
            if want > MAX_ORDER {
                return Ok(None);
            }
            // No flush of the cache here: the caller's one-by-one allocations do that.
            let Some(o) = (want..=MAX_ORDER).find(|&o| self.free_count[slot(o)] > 0) else {
                return Ok(None);
            };
            let frame = self.pop_block(o);
            if hold {
                self.release_split(frame + order_frames(want), order_frames(o) - order_frames(want));
                self.hold(frame, frames, order_frames(want));
            } else {
                self.release_split(frame + frames, order_frames(o) - frames);
            }
            frame
        };
        // A block of order >= 9 and the cache's joint runs start on a 2 MiB boundary.
        let huge_end = frame + (huge << huge_order);
        self.used[used_index(PageSize::Huge)].set_range(frame >> huge_order, huge_end >> huge_order);
        self.used[used_index(PageSize::Normal)].set_range(huge_end, huge_end + tail);
        self.allocated_frames += frames;
        self.huge_in_use += huge;
        Ok(Some(PhysRun { offset: frame << FRAME_SHIFT, len_bytes: frames << FRAME_SHIFT }))
    }

    /// Frees a run [`Self::alloc_huge_with_tail`] returned (whole), all or nothing.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `run` is not 2 MiB-aligned, holds no whole 2 MiB page,
    ///   or its tail is not a whole number of 4 KiB pages.
    /// - [`Error::NotAllocated`] when its huge part is not allocated as 2 MiB pages or its tail
    ///   not as 4 KiB pages.
    pub fn free_huge_with_tail(&mut self, run: PhysRun) -> Result<()> {
        let huge_order = page_order(PageSize::Huge);
        let end = run.checked_end().ok_or(Error::InvalidArgument)?;
        let tail_bytes = run.len_bytes % PageSize::Huge.bytes();
        if run.offset % PageSize::Huge.bytes() != 0
            || run.len_bytes < PageSize::Huge.bytes()
            || tail_bytes == 0
            || tail_bytes % FRAME_BYTES != 0
        {
            return Err(Error::InvalidArgument);
        }
        let (start, end) = (run.offset >> FRAME_SHIFT, end >> FRAME_SHIFT);
        let huge_end = end - (tail_bytes >> FRAME_SHIFT);
        if end > self.total_frames
            || !self.used[used_index(PageSize::Huge)].take_range(start >> huge_order, huge_end >> huge_order)
        {
            return Err(Error::NotAllocated);
        }
        if !self.used[used_index(PageSize::Normal)].take_range(huge_end, end) {
            // Put the huge part back: nothing changes.
            self.used[used_index(PageSize::Huge)].set_range(start >> huge_order, huge_end >> huge_order);
            return Err(Error::NotAllocated);
        }
        let frames = end - start;
        // A joint run of more than 512 frames from a 2 MiB boundary that holds its block is
        // in `held` (not `held_lo`): one look there, and the block goes onto its stack.
        if self.held_count > 0 && u64::from(self.held[ix(start >> HOLD_SHIFT)]) == frames {
            let block = frames.next_power_of_two();
            self.unhold(start, frames, block);
            self.keep_block(start, block.ilog2());
        } else {
            self.give_back(start, frames, JOINT_TAG);
        }
        self.allocated_frames -= frames;
        self.huge_in_use -= (huge_end - start) >> huge_order;
        Ok(())
    }

    /// Takes the run of `frames` frames tagged `order` freed last from the quick-reuse cache,
    /// if it holds one; its first frame.
    #[inline]
    fn take_quick(&mut self, order: u32, frames: u64) -> Option<u64> {
        let q = quick_slot(order, frames);
        let bucket = self.quick[q];
        // (An empty bucket has 0 frames.)
        if bucket.frames != frames || bucket.order != order {
            return None;
        }
        Some(self.pop_quick(q))
    }

    /// Takes the whole block of `order` freed last from the quick-reuse cache, if it holds
    /// one; its first frame.
    #[inline(always)]
    fn take_block(&mut self, order: u32) -> Option<u64> {
        let o = slot(order);
        let n = self.block_len[o].checked_sub(1)?;
        self.block_len[o] = n;
        self.quick_runs -= 1;
        // INVARIANT: entries above the top are 0.
        Some(core::mem::take(&mut self.blocks[o][usize::from(n)]))
    }

    /// Takes the run on top of bucket `q` (which holds one) out of the cache; its first frame.
    #[inline(always)]
    fn pop_quick(&mut self, q: usize) -> u64 {
        let bucket = self.quick[q];
        let i = usize::from(bucket.head);
        let QuickRun { frame, next } = self.quick_pool[i];
        if next == QNIL {
            // INVARIANT: an empty bucket is EMPTY and has no bit.
            self.quick[q] = QuickBucket::EMPTY;
            self.quick_nonempty[q / 64] &= !(1 << (q % 64));
        } else {
            self.quick[q].head = next;
            self.quick[q].len -= 1;
        }
        self.quick_pool[i].next = self.quick_free;
        self.quick_free = bucket.head;
        self.quick_runs -= 1;
        frame
    }

    fn alloc_core(&mut self, page: PageSize, count: u64, sink: &mut impl Sink) -> Result<()> {
        if count == 0 || count > u64::MAX >> page.shift() {
            return Err(Error::InvalidArgument);
        }
        let in_use = match page {
            PageSize::Normal => None,
            PageSize::Huge => Some((self.huge_in_use, self.huge_budget_bytes)),
            PageSize::Giant => Some((self.giant_in_use, self.giant_budget_bytes)),
        };
        if let Some((used, budget)) = in_use {
            let wanted = used.checked_add(count).and_then(|pages| pages.checked_mul(page.bytes()));
            if wanted.is_none_or(|bytes| bytes > budget) {
                return Err(Error::BudgetExhausted);
            }
        }
        let order = page_order(page);
        let frames = count << order;
        // One block when some free block holds every page: the smallest such order
        // (order + ⌈log2 count⌉).
        let want = order + (u64::BITS - (count - 1).leading_zeros());
        // With quick reuse, a run that leaves part of a block of 64 KiB or more unused holds
        // that slack (see `hold`), and is cached as its whole block: such sizes look only for
        // a cached block of their order (runs of their exact length are cached only when
        // allocated in pieces, and are given back with the rest of the cache).
        let hold = self.quick_on && (HOLD_MIN..=MAX_ORDER).contains(&want) && !count.is_power_of_two();
        if self.quick_runs > 0 {
            let hit = if hold { self.take_block(want) } else { self.take_quick(order, frames) };
            if let Some(frame) = hit {
                if !sink.push(frame, frames) {
                    // No room for one run (an empty buffer): back where it was.
                    self.put_back_quick(frame, frames, order, hold.then_some(want));
                    return Err(Error::InvalidArgument);
                }
                if hold {
                    self.hold(frame, frames, order_frames(want));
                }
                self.used[used_index(page)].set_range(frame >> order, (frame + frames) >> order);
                self.account(page, count, frames);
                return Ok(());
            }
        }
        self.alloc_fresh(page, count, want, hold, sink)
    }

    /// The part of [`Self::alloc_core`] that does not take a cached run: `want` is the order of
    /// the single block that would hold the pages, `hold` whether that block's slack is held.
    #[inline(never)]
    fn alloc_fresh(
        &mut self,
        page: PageSize,
        count: u64,
        want: u32,
        hold: bool,
        sink: &mut impl Sink,
    ) -> Result<()> {
        let order = page_order(page);
        let frames = count << order;
        let find_single = |this: &Self| {
            if want <= MAX_ORDER {
                (want..=MAX_ORDER).find(|&o| this.free_count[slot(o)] > 0)
            } else {
                None
            }
        };
        let mut single = find_single(self);
        if single.is_none() && (self.quick_runs > 0 || self.held_count > 0) {
            // The cached runs and held slack may merge into a block large enough: give them
            // back first.
            self.flush_quick();
            single = find_single(self);
        }
        if single.is_none() && self.capacity(order) < count {
            return Err(Error::OutOfMemory);
        }
        if let Some(o) = single {
            let frame = self.pop_block(o);
            if !sink.push(frame, frames) {
                self.release_range(frame, order_frames(o));
                return Err(Error::InvalidArgument);
            }
            if hold {
                self.release_split(frame + order_frames(want), order_frames(o) - order_frames(want));
                self.hold(frame, frames, order_frames(want));
            } else {
                self.release_split(frame + frames, order_frames(o) - frames);
            }
        } else if !self.take_greedy(order, count, sink) {
            for r in sink.written() {
                self.release_range(r.offset >> FRAME_SHIFT, r.len_bytes >> FRAME_SHIFT);
            }
            return Err(Error::InvalidArgument);
        }
        self.commit(page, count, frames, sink);
        Ok(())
    }

    /// Records the runs in `sink` (`count` pages of `page`, `frames` frames in all) as
    /// allocated.
    fn commit(&mut self, page: PageSize, count: u64, frames: u64, sink: &impl Sink) {
        let bits = &mut self.used[used_index(page)];
        for r in sink.written() {
            bits.set_range(r.offset >> page.shift(), (r.offset + r.len_bytes) >> page.shift());
        }
        self.account(page, count, frames);
    }

    /// Counts `count` pages of `page` (`frames` frames) as allocated.
    #[inline(always)]
    fn account(&mut self, page: PageSize, count: u64, frames: u64) {
        self.allocated_frames += frames;
        match page {
            PageSize::Normal => {}
            PageSize::Huge => self.huge_in_use += count,
            PageSize::Giant => self.giant_in_use += count,
        }
    }

    /// Sets or clears the allocation bits of `page` size for frames `[start, end)` (aligned to
    /// the page size).
    #[inline]
    fn mark(&mut self, page: PageSize, start: u64, end: u64, on: bool) {
        let o = page_order(page);
        let bits = &mut self.used[used_index(page)];
        if on {
            bits.set_range(start >> o, end >> o);
        } else {
            bits.clear_range(start >> o, end >> o);
        }
    }

    /// Whether every page of `page` size in frames `[start, end)` is allocated with that size.
    #[inline]
    fn is_marked(&self, page: PageSize, start: u64, end: u64) -> bool {
        let o = page_order(page);
        self.used[used_index(page)].all_set(start >> o, end >> o)
    }

    /// Whether no frame of `[start, end)` is allocated with any page size.
    fn is_unused(&self, start: u64, end: u64) -> bool {
        let giant = page_order(PageSize::Giant);
        let huge = page_order(PageSize::Huge);
        let up = |v: u64, o: u32| v.div_ceil(order_frames(o));
        self.used[0].none_set(start, end)
            && self.used[1].none_set(start >> huge, up(end, huge))
            && self.used[2].none_set(start >> giant, up(end, giant))
    }

    /// Frees `runs`, each of which must be allocated with `page` size, all or nothing.
    ///
    /// A run may be a whole run from [`Self::alloc_pages`], a page-aligned piece of one, or
    /// span several adjacent allocations of the same page size. Freed frames merge with their
    /// free buddies, and the page size's budget is given back.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when a run is empty, its offset or length is not a
    ///   multiple of the page size, or its end overflows.
    /// - [`Error::NotAllocated`] when any frame of any run is not currently allocated with
    ///   `page` size (double free, never allocated, wrong page size), including runs that
    ///   overlap each other.
    ///
    /// On error nothing changes. An empty slice frees nothing.
    pub fn free_pages(&mut self, page: PageSize, runs: &[PhysRun]) -> Result<()> {
        if let [run] = runs {
            return self.free_run(page, *run);
        }
        let mask = page.bytes() - 1;
        for run in runs {
            run.checked_end().ok_or(Error::InvalidArgument)?;
            if run.len_bytes == 0 || run.offset & mask != 0 || run.len_bytes & mask != 0 {
                return Err(Error::InvalidArgument);
            }
        }
        let span = |r: &PhysRun| (r.offset >> FRAME_SHIFT, (r.offset + r.len_bytes) >> FRAME_SHIFT);
        // Check and clear run by run, so that runs overlapping each other fail as a double free;
        // on failure put back the bits of the runs already cleared.
        for (i, run) in runs.iter().enumerate() {
            let (start, end) = span(run);
            if end > self.total_frames || !self.is_marked(page, start, end) {
                for done in &runs[..i] {
                    let (s, e) = span(done);
                    self.mark(page, s, e, true);
                }
                return Err(Error::NotAllocated);
            }
            self.mark(page, start, end, false);
        }
        // Validated: from here on nothing can fail.
        let keep = self.quick_on && runs.len() == 1;
        for run in runs {
            let (start, end) = span(run);
            if keep {
                self.give_back(start, end - start, page_order(page));
            } else {
                self.give_back_uncached(start, end - start);
            }
            let frames = end - start;
            self.allocated_frames -= frames;
            let pages = frames >> page_order(page);
            match page {
                PageSize::Normal => {}
                PageSize::Huge => self.huge_in_use -= pages,
                PageSize::Giant => self.giant_in_use -= pages,
            }
        }
        Ok(())
    }

    /// [`Self::free_pages`] of one run: the same checks and effects in one pass.
    #[inline]
    fn free_run(&mut self, page: PageSize, run: PhysRun) -> Result<()> {
        let mask = page.bytes() - 1;
        let end = run.checked_end().ok_or(Error::InvalidArgument)?;
        if run.len_bytes == 0 || run.offset & mask != 0 || run.len_bytes & mask != 0 {
            return Err(Error::InvalidArgument);
        }
        let (start, end) = (run.offset >> FRAME_SHIFT, end >> FRAME_SHIFT);
        let o = page_order(page);
        if end > self.total_frames || !self.used[used_index(page)].take_range(start >> o, end >> o) {
            return Err(Error::NotAllocated);
        }
        // Validated and unmarked: from here on nothing can fail.
        let frames = end - start;
        if self.quick_on {
            self.give_back(start, frames, o);
        } else {
            self.release_run(start, frames);
        }
        self.allocated_frames -= frames;
        match page {
            PageSize::Normal => {}
            PageSize::Huge => self.huge_in_use -= frames >> o,
            PageSize::Giant => self.giant_in_use -= frames >> o,
        }
        Ok(())
    }

    /// Marks exactly `runs` allocated with `page` size, all or nothing: the inverse of
    /// [`Self::free_pages`], used to rebuild an allocator from a record of what is in use (the
    /// software NPU's shared registry does this when another process changed the device).
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when a run is empty, misaligned for `page`, or past the end.
    /// - [`Error::NotAllocated`] is never returned; [`Error::OutOfMemory`] when any frame of a
    ///   run is not free (the runs overlap each other or something allocated).
    /// - [`Error::BudgetExhausted`] when the page size's budget does not allow the runs.
    ///
    /// The quick-reuse cache and held slack are given back first ([`Self::flush_quick`]), so
    /// frames cached or held (free memory) can be claimed. On error nothing else changes.
    pub fn claim_pages(&mut self, page: PageSize, runs: &[PhysRun]) -> Result<()> {
        // The runs are looked for in the buddy lists: give the cached runs back first.
        self.flush_quick();
        let mask = page.bytes() - 1;
        let mut frames = 0u64;
        for run in runs {
            let end = run.checked_end().ok_or(Error::InvalidArgument)?;
            if run.len_bytes == 0 || run.offset & mask != 0 || run.len_bytes & mask != 0 {
                return Err(Error::InvalidArgument);
            }
            if end >> FRAME_SHIFT > self.total_frames {
                return Err(Error::InvalidArgument);
            }
            frames += run.len_bytes >> FRAME_SHIFT;
        }
        let pages = frames >> page_order(page);
        let budget = match page {
            PageSize::Normal => None,
            PageSize::Huge => Some((self.huge_in_use, self.huge_budget_bytes)),
            PageSize::Giant => Some((self.giant_in_use, self.giant_budget_bytes)),
        };
        if let Some((used, budget)) = budget {
            if ((used + pages) << page.shift()) > budget {
                return Err(Error::BudgetExhausted);
            }
        }
        let span = |r: &PhysRun| (r.offset >> FRAME_SHIFT, (r.offset + r.len_bytes) >> FRAME_SHIFT);
        // Check and mark run by run, so that runs overlapping each other fail; on failure clear
        // the bits of the runs already marked.
        for (i, run) in runs.iter().enumerate() {
            let (start, end) = span(run);
            if !self.is_unused(start, end) {
                for done in &runs[..i] {
                    let (s, e) = span(done);
                    self.mark(page, s, e, false);
                }
                return Err(Error::OutOfMemory);
            }
            self.mark(page, start, end, true);
        }
        // Validated: every frame of every run lies in a free block. Take those blocks and give
        // back their parts outside the run.
        for run in runs {
            let (start, end) = span(run);
            let mut cursor = start;
            while cursor < end {
                let found = (0..=MAX_ORDER).find_map(|o| {
                    let b = cursor >> o;
                    self.free[slot(o)].test(b).then_some((b << o, o))
                });
                let Some((b, o)) = found else { break };
                self.free[slot(o)].clear(b >> o);
                self.free_count[slot(o)] -= 1;
                let block_end = b + order_frames(o);
                if b < cursor {
                    self.release_range(b, cursor - b);
                }
                if block_end > end {
                    self.release_range(end, block_end - end);
                }
                cursor = block_end;
            }
        }
        self.allocated_frames += frames;
        match page {
            PageSize::Normal => {}
            PageSize::Huge => self.huge_in_use += pages,
            PageSize::Giant => self.giant_in_use += pages,
        }
        Ok(())
    }

    /// Current totals and free amounts by page class.
    ///
    /// `huge_free_bytes` is the smaller of the huge budget not in use and the bytes that free
    /// blocks of 2 MiB or more could provide as whole 2 MiB pages; `giant_free_bytes` likewise
    /// for 1 GiB.
    pub fn info(&self) -> MemoryInfo {
        let total_bytes = self.total_bytes();
        let obtainable = |page: PageSize, used: u64, budget: u64| {
            let left = budget - (used << page.shift());
            left.min(self.capacity(page_order(page)) << page.shift())
        };
        MemoryInfo {
            total_bytes,
            free_bytes: total_bytes - self.allocated_bytes(),
            huge_total_bytes: self.huge_budget_bytes,
            huge_free_bytes: obtainable(PageSize::Huge, self.huge_in_use, self.huge_budget_bytes),
            giant_total_bytes: self.giant_budget_bytes,
            giant_free_bytes: obtainable(PageSize::Giant, self.giant_in_use, self.giant_budget_bytes),
        }
    }

    /// Bytes allocated, of every page size.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_frames << FRAME_SHIFT
    }

    /// How many aligned blocks of `order` the free memory (free blocks, cached runs, held
    /// slack) could provide.
    fn capacity(&self, order: u32) -> u64 {
        if order == 0 {
            // Every frame not allocated is free, cached or held.
            return self.total_frames - self.allocated_frames;
        }
        let free: u64 = (order..=MAX_ORDER)
            .map(|o| (self.free_count[slot(o)] + u64::from(self.block_len[slot(o)])) << (o - order))
            .sum::<u64>()
            + match order {
                9 => self.held_huge,
                // No held slack holds a whole 1 GiB block (see the invariants).
                _ => 0,
            };
        if self.quick_runs == 0 {
            return free;
        }
        // The aligned blocks of `order` inside each cached run.
        let mut cached = 0;
        for (w, &word) in self.quick_nonempty.iter().enumerate() {
            let mut m = word;
            while m != 0 {
                // CAST: a bit index below 64.
                let b = &self.quick[w * 64 + m.trailing_zeros() as usize];
                m &= m - 1;
                let mut head = b.head;
                while head != QNIL {
                    let q = self.quick_pool[usize::from(head)];
                    cached +=
                        ((q.frame + b.frames) >> order).saturating_sub(q.frame.div_ceil(order_frames(order)));
                    head = q.next;
                }
            }
        }
        free + cached
    }

    /// Keeps the run of `frames` frames from `frame`, just freed as pages of `order`, in the
    /// quick-reuse cache. A bucket holding another size gives its runs back first; a full
    /// bucket or pool gives this run back instead.
    #[inline(always)]
    fn keep_quick(&mut self, frame: u64, frames: u64, order: u32) {
        let q = quick_slot(order, frames);
        let bucket = self.quick[q];
        if bucket.head != QNIL && (bucket.frames != frames || bucket.order != order) {
            self.flush_bucket(q);
        } else if bucket.len >= QUICK_PER_BUCKET || self.quick_free == QNIL {
            self.release_run(frame, frames);
            return;
        }
        self.push_quick(q, frame, frames, order);
    }

    /// Keeps the whole block of `order` from `frame`, just freed by the run that held its
    /// slack, in the quick-reuse cache (on its order's stack, the size class); gives it back
    /// instead when the stack is full.
    #[inline(always)]
    fn keep_block(&mut self, frame: u64, order: u32) {
        let o = slot(order);
        let n = usize::from(self.block_len[o]);
        let Some(top) = self.blocks[o].get_mut(n) else {
            self.release_block(frame, order);
            return;
        };
        *top = frame;
        self.block_len[o] += 1;
        self.quick_runs += 1;
    }

    /// Pushes the run of `frames` frames from `frame` (tag `order`) on bucket `q`, which is
    /// empty or holds such runs and has room, taking a free pool entry (there is one).
    #[inline(always)]
    fn push_quick(&mut self, q: usize, frame: u64, frames: u64, order: u32) {
        let i = self.quick_free;
        self.quick_free = self.quick_pool[usize::from(i)].next;
        self.quick_high = self.quick_high.max(i + 1);
        self.quick_pool[usize::from(i)] = QuickRun { frame, next: self.quick[q].head };
        let len = self.quick[q].len + 1;
        self.quick[q] = QuickBucket { frames, order, head: i, len };
        self.quick_nonempty[q / 64] |= 1 << (q % 64);
        self.quick_runs += 1;
        self.quick_touched = true;
    }

    /// Puts a run just taken from the cache back: the whole block of order `block` when it
    /// was one, else the run of `frames` frames of page order `order`.
    #[cold]
    #[inline(never)]
    fn put_back_quick(&mut self, frame: u64, frames: u64, order: u32, block: Option<u32>) {
        match block {
            Some(k) => self.keep_block(frame, k),
            None => self.keep_quick(frame, frames, order),
        }
    }

    /// Gives the runs of bucket `q` back to the buddy lists and its pool entries to the free
    /// list.
    fn flush_bucket(&mut self, q: usize) {
        let QuickBucket { frames, mut head, len, .. } = self.quick[q];
        while head != QNIL {
            let QuickRun { frame, next } = self.quick_pool[usize::from(head)];
            self.release_run(frame, frames);
            self.quick_pool[usize::from(head)].next = self.quick_free;
            self.quick_free = head;
            head = next;
        }
        self.quick_runs -= usize::from(len);
        self.quick[q] = QuickBucket::EMPTY;
        self.quick_nonempty[q / 64] &= !(1 << (q % 64));
    }

    /// Records that the run of `frames` frames from `start` (the first frame of a block of
    /// `block` = 2^k frames, k ≥ [`HOLD_MIN`], with 2^(k - 1) < `frames` < 2^k) holds the rest
    /// of its block: those frames stay off the free lists (they count as free memory) until the
    /// run is freed, which then gives the whole block back in one step, or until
    /// [`Self::flush_quick`].
    #[inline(always)]
    fn hold(&mut self, start: u64, frames: u64, block: u64) {
        if block < order_frames(HOLD_SHIFT) {
            // CAST: `frames` < 2^(HOLD_SHIFT - 1), which fits in u8 (checked above).
            self.held_lo[ix(start >> HOLD_MIN)] = frames as u8;
        } else {
            // CAST: `frames` < 2^MAX_ORDER.
            self.held[ix(start >> HOLD_SHIFT)] = frames as u32;
            self.held_huge += aligned_blocks(start + frames, start + block, page_order(PageSize::Huge));
        }
        self.held_at.set(start >> HOLD_MIN);
        self.held_count += 1;
    }

    /// Forgets the slack held by the run of `frames` frames from `start` (see [`Self::hold`]).
    #[inline(always)]
    fn unhold(&mut self, start: u64, frames: u64, block: u64) {
        if block < order_frames(HOLD_SHIFT) {
            self.held_lo[ix(start >> HOLD_MIN)] = 0;
        } else {
            self.held[ix(start >> HOLD_SHIFT)] = 0;
            self.held_huge -= aligned_blocks(start + frames, start + block, page_order(PageSize::Huge));
        }
        self.held_at.clear(start >> HOLD_MIN);
        self.held_count -= 1;
    }

    /// The frames of the holder that starts at `start` (a multiple of 2^HOLD_MIN), or 0 when
    /// none does: a low one is in `held_lo`, a high one (on a 2 MiB boundary) in `held`.
    #[inline(always)]
    fn holder_at(&self, start: u64) -> u64 {
        match self.held_lo[ix(start >> HOLD_MIN)] {
            0 if start % order_frames(HOLD_SHIFT) == 0 => u64::from(self.held[ix(start >> HOLD_SHIFT)]),
            f => u64::from(f),
        }
    }

    /// Takes the held slack out of the way of the run of `frames` frames from `start`, just
    /// validated and unmarked. When the run is a holder freed whole, forgets its slack and
    /// returns its block's order (the caller gives the whole block back, from `start`);
    /// otherwise gives back the slack of every holder whose first frame the run frees (a piece
    /// of a holder, or a run spanning several allocations) and returns `None`.
    ///
    /// A holder freed whole (its run just validated as allocated) starts no other holder inside
    /// its run: the block of a holder that started there would lie inside this run (this run's
    /// slack was held all along), so its slack, not allocated, would have failed the check.
    #[inline(always)]
    fn take_held(&mut self, start: u64, frames: u64) -> Option<u32> {
        if self.held_count == 0 {
            return None;
        }
        // The first granule of `held_at` in which a holder starting in the run would start.
        let mut lo = start.div_ceil(order_frames(HOLD_MIN));
        if start % order_frames(HOLD_MIN) == 0 {
            let f = self.holder_at(start);
            if f == frames {
                let block = f.next_power_of_two();
                self.unhold(start, f, block);
                return Some(block.ilog2());
            }
            if f == 0 {
                // No holder at `start`: only the granules after it are left to look at.
                lo += 1;
            }
        }
        let end = start + frames;
        let hi = end.div_ceil(order_frames(HOLD_MIN));
        if lo < hi && !self.held_at.none_set(lo, hi) {
            self.release_held_in(start, end);
        }
        None
    }

    /// Gives back the slack of every holder that starts in frames `[start, end)`.
    #[inline(never)]
    fn release_held_in(&mut self, start: u64, end: u64) {
        let hi = end.div_ceil(order_frames(HOLD_MIN));
        let mut lo = start.div_ceil(order_frames(HOLD_MIN));
        while let Some(g) = self.held_at.next_set(lo, hi) {
            self.release_holder(g << HOLD_MIN);
            lo = g + 1;
        }
    }

    /// Gives back the slack of the holder that starts at `at`; the frames given back.
    fn release_holder(&mut self, at: u64) -> u64 {
        let f = self.holder_at(at);
        let block = f.next_power_of_two();
        self.unhold(at, f, block);
        self.release_range(at + f, block - f);
        block - f
    }

    /// Gives back the run of `frames` frames from `start`, just unmarked, with quick reuse on:
    /// a run that held its block's slack and is freed whole caches the whole block (by its
    /// order, [`Self::keep_block`]); any other run gives back the slack of the holders it frees
    /// the first frame of (see [`Self::take_held`]) and is cached by its exact length and `tag`.
    #[inline(always)]
    fn give_back(&mut self, start: u64, frames: u64, tag: u32) {
        match self.take_held(start, frames) {
            Some(order) => self.keep_block(start, order),
            None => self.keep_quick(start, frames, tag),
        }
    }

    /// [`Self::give_back`] without caching: straight to the free lists.
    fn give_back_uncached(&mut self, start: u64, frames: u64) {
        match self.take_held(start, frames) {
            Some(order) => self.release_block(start, order),
            None => self.release_run(start, frames),
        }
    }

    /// Gives every held slack back to the free lists; the bytes given back.
    fn release_held(&mut self) -> u64 {
        let mut frames = 0;
        let mut w = 0;
        while self.held_count > 0 {
            let mut m = self.held_at.words[w];
            while m != 0 {
                // CAST: a word index of a Vec, far below 2^58.
                let at = (w as u64 * 64 + u64::from(m.trailing_zeros())) << HOLD_MIN;
                m &= m - 1;
                frames += self.release_holder(at);
            }
            w += 1;
        }
        frames << FRAME_SHIFT
    }

    /// Takes the lowest free block of `order` (which must have one); returns its first frame.
    #[inline]
    fn pop_block(&mut self, order: u32) -> u64 {
        let tree = &mut self.free[slot(order)];
        let i = tree.first().unwrap_or(0);
        tree.clear(i);
        self.free_count[slot(order)] -= 1;
        i << order
    }

    /// Takes `count` blocks' worth of order `order` greedily (largest first), writing frame
    /// spans (coalesced) to `sink`. `false` when the sink ran out of room; the spans written
    /// are then all the frames still taken. The caller has checked that
    /// `self.capacity(order) >= count`.
    fn take_greedy(&mut self, order: u32, count: u64, sink: &mut impl Sink) -> bool {
        let mut pending: Option<(u64, u64)> = None;
        let mut remaining = count;
        while remaining > 0 {
            let target = (order + remaining.ilog2()).min(MAX_ORDER);
            let whole = (order..=target).rev().find(|&o| self.free_count[slot(o)] > 0);
            let (start, len) = if let Some(o) = whole {
                let frame = self.pop_block(o);
                remaining -= 1 << (o - order);
                (frame, order_frames(o))
            } else {
                // Every usable free block is larger than what remains: split the smallest one
                // and keep its low part. Capacity was checked, so such a block exists.
                let Some(o) = (target + 1..=MAX_ORDER).find(|&o| self.free_count[slot(o)] > 0) else {
                    break;
                };
                let frame = self.pop_block(o);
                let frames = remaining << order;
                self.release_range(frame + frames, order_frames(o) - frames);
                remaining = 0;
                (frame, frames)
            };
            pending = match pending {
                Some((s, l)) if s + l == start => Some((s, l + len)),
                Some((s, l)) => {
                    if !sink.push(s, l) {
                        self.release_range(s, l);
                        self.release_range(start, len);
                        return false;
                    }
                    Some((start, len))
                }
                None => Some((start, len)),
            };
        }
        if let Some((s, l)) = pending {
            if !sink.push(s, l) {
                self.release_range(s, l);
                return false;
            }
        }
        // `remaining > 0` is unreachable while the invariants hold (capacity was checked).
        remaining == 0
    }

    /// Puts the `frames` frames from `start` on the free lists, merging with free buddies.
    ///
    /// The frames must be neither free nor recorded as allocated.
    fn release_range(&mut self, start: u64, frames: u64) {
        let end = start + frames;
        let mut frame = start;
        while frame < end {
            let order = largest_block(frame, end - frame);
            self.release_block(frame, order);
            frame += order_frames(order);
        }
    }

    /// Puts a freed run on the free lists like [`Self::release_range`], faster for the common
    /// case of a run allocated as the low part of one block: when the rest of that block is
    /// still the free blocks [`Self::release_split`] left, those are taken off and the whole
    /// block is released (one merge chain instead of one per piece of the run).
    #[inline]
    fn release_run(&mut self, start: u64, frames: u64) {
        let k = frames.next_power_of_two().ilog2();
        let block = order_frames(k);
        if frames < block && k <= MAX_ORDER && start % block == 0 && start + block <= self.total_frames {
            // The pieces `release_split` left: at most one per order below `k`.
            let mut pieces = [(0u64, 0u32); ORDERS];
            let mut n = 0;
            let end = start + block;
            let mut f = start + frames;
            while f < end {
                let o = largest_block(f, end - f);
                if !self.free[slot(o)].test(f >> o) {
                    return self.release_range(start, frames);
                }
                pieces[n] = (f, o);
                n += 1;
                f += order_frames(o);
            }
            for &(f, o) in &pieces[..n] {
                self.free[slot(o)].clear(f >> o);
                self.free_count[slot(o)] -= 1;
            }
            self.release_block(start, k);
            return;
        }
        self.release_range(start, frames);
    }

    /// Puts the unused part `[start, start + frames)` of a block just split on the free lists,
    /// without trying to merge: every piece's buddy lies inside the block and holds some of
    /// the frames just taken, so no merge is possible.
    fn release_split(&mut self, start: u64, frames: u64) {
        let end = start + frames;
        let mut frame = start;
        while frame < end {
            let order = largest_block(frame, end - frame);
            self.free[slot(order)].set(frame >> order);
            self.free_count[slot(order)] += 1;
            frame += order_frames(order);
        }
    }

    /// Puts one aligned block on the free lists, merging it with its buddy while possible.
    fn release_block(&mut self, mut frame: u64, mut order: u32) {
        while order < MAX_ORDER {
            let buddy = frame ^ order_frames(order);
            let tree = &mut self.free[slot(order)];
            if buddy >= self.total_frames || !tree.test(buddy >> order) {
                break;
            }
            tree.clear(buddy >> order);
            self.free_count[slot(order)] -= 1;
            frame = frame.min(buddy);
            order += 1;
        }
        self.free[slot(order)].set(frame >> order);
        self.free_count[slot(order)] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn alloc(total: u64, huge: u64, giant: u64) -> FrameAllocator {
        FrameAllocator::new(PhysConfig {
            total_bytes: total,
            huge_budget_bytes: huge,
            giant_budget_bytes: giant,
        })
        .unwrap()
    }

    fn run(offset: u64, len_bytes: u64) -> PhysRun {
        PhysRun { offset, len_bytes }
    }

    fn sum(runs: &[PhysRun]) -> u64 {
        runs.iter().map(|r| r.len_bytes).sum()
    }

    /// Checks the held-slack invariants (and that free blocks, allocated frames, cached runs
    /// and held slack partition the frames) by brute force.
    fn check_held(a: &FrameAllocator) {
        let free_at = |f: u64| {
            (0..=MAX_ORDER).any(|o| (f >> o) < (a.total_frames >> o) && a.free[slot(o)].test(f >> o))
        };
        let allocated_at = |f: u64| {
            (0..3).any(|p| {
                let o = [0, 9, 18][p];
                a.used[p].words.get(ix((f >> o) / 64)).is_some_and(|w| w & (1 << ((f >> o) % 64)) != 0)
            })
        };
        let mut cached = Vec::new();
        for (q, b) in a.quick.iter().enumerate() {
            let mut head = b.head;
            let mut n = 0;
            while head != QNIL {
                let r = a.quick_pool[usize::from(head)];
                cached.push((r.frame, r.frame + b.frames));
                head = r.next;
                n += 1;
            }
            assert_eq!(n, b.len, "bucket {q}");
            assert_eq!(a.quick_nonempty[q / 64] & (1 << (q % 64)) != 0, n > 0, "bucket {q}");
        }
        for o in 0..=MAX_ORDER {
            let (stack, n) = (&a.blocks[slot(o)], usize::from(a.block_len[slot(o)]));
            for &frame in &stack[..n] {
                assert_eq!(frame % order_frames(o), 0, "cached block of order {o}");
                cached.push((frame, frame + order_frames(o)));
            }
            assert!(stack[n..].iter().all(|&f| f == 0), "stale entries of order {o}");
        }
        assert_eq!(cached.len(), a.quick_runs);
        let mut holders = 0;
        let (mut slack_frames, mut huge) = (0, 0);
        for g in 0..a.held_lo.len() as u64 {
            let at = g << HOLD_MIN;
            let bit = a.held_at.words[ix(g / 64)] & (1 << (g % 64)) != 0;
            let lo = u64::from(a.held_lo[ix(g)]);
            let hi =
                if at % order_frames(HOLD_SHIFT) == 0 { u64::from(a.held[ix(at >> HOLD_SHIFT)]) } else { 0 };
            assert!(lo == 0 || hi == 0, "two holders at {at}");
            assert_eq!(bit, lo != 0 || hi != 0, "holder bit at {at}");
            if !bit {
                continue;
            }
            holders += 1;
            let f = lo.max(hi);
            let block = f.next_power_of_two();
            assert!(!f.is_power_of_two() && block >= order_frames(HOLD_MIN), "holder {f} at {at}");
            assert_eq!(lo != 0, block < order_frames(HOLD_SHIFT), "table of holder {f} at {at}");
            assert_eq!(at % block, 0, "holder {f} at {at}");
            assert!(at + block <= a.total_frames);
            assert!(allocated_at(at), "holder {f} at {at}: first frame not allocated");
            for s in at + f..at + block {
                assert!(!free_at(s) && !allocated_at(s), "slack frame {s} of holder at {at}");
                assert!(cached.iter().all(|&(c0, c1)| s < c0 || c1 <= s), "slack frame {s} cached");
            }
            slack_frames += block - f;
            huge += aligned_blocks(at + f, at + block, HOLD_SHIFT);
        }
        assert_eq!(holders, a.held_count);
        assert_eq!(huge, a.held_huge);
        let free: u64 = (0..=MAX_ORDER).map(|o| a.free_count[slot(o)] << o).sum();
        let cached_frames: u64 = cached.iter().map(|(c0, c1)| c1 - c0).sum();
        assert_eq!(free + cached_frames + slack_frames + a.allocated_frames, a.total_frames);
    }

    #[test]
    fn claim_rebuilds_what_alloc_took() {
        let mut a = alloc(64 * MIB, 32 * MIB, 0);
        let x = a.alloc_pages(PageSize::Normal, 3).unwrap();
        let y = a.alloc_pages(PageSize::Huge, 2).unwrap();
        let z = a.alloc_pages(PageSize::Normal, 700).unwrap();
        a.free_pages(PageSize::Normal, &x).unwrap();
        let mut b = alloc(64 * MIB, 32 * MIB, 0);
        b.claim_pages(PageSize::Huge, &y).unwrap();
        b.claim_pages(PageSize::Normal, &z).unwrap();
        assert_eq!(a.info(), b.info());
        assert_eq!(b.claim_pages(PageSize::Normal, &z), Err(Error::OutOfMemory));
        assert_eq!(b.claim_pages(PageSize::Huge, &[run(4 * KIB, 2 * MIB)]), Err(Error::InvalidArgument));
        b.free_pages(PageSize::Normal, &z).unwrap();
        b.free_pages(PageSize::Huge, &y).unwrap();
        assert_eq!(b.info().free_bytes, 64 * MIB);
        assert_eq!(b, alloc(64 * MIB, 32 * MIB, 0));
    }

    #[test]
    fn new_rounds_and_clamps() {
        assert_eq!(
            FrameAllocator::new(PhysConfig { total_bytes: 4095, ..PhysConfig::default() }),
            Err(Error::InvalidArgument)
        );
        assert_eq!(
            FrameAllocator::new(PhysConfig { total_bytes: MAX_TOTAL_BYTES + 1, ..PhysConfig::default() }),
            Err(Error::InvalidArgument)
        );
        let a = alloc(5 * MIB + 5000, 3 * MIB + 1, 7 * GIB);
        let info = a.info();
        assert_eq!(info.total_bytes, 5 * MIB + 4 * KIB);
        assert_eq!(info.free_bytes, info.total_bytes);
        assert_eq!(info.huge_total_bytes, 2 * MIB);
        assert_eq!(info.huge_free_bytes, 2 * MIB);
        assert_eq!(info.giant_total_bytes, 0);
        assert_eq!(info.giant_free_bytes, 0);
        // The huge budget is clamped to the total before rounding.
        let a = alloc(5 * MIB, 64 * MIB, 0);
        assert_eq!(a.info().huge_total_bytes, 4 * MIB);
    }

    #[test]
    fn normal_pages_coalesce_and_free() {
        let mut a = alloc(4 * MIB, 0, 0);
        let runs = a.alloc_pages(PageSize::Normal, 3).unwrap();
        assert_eq!(runs, [run(0, 12 * KIB)]);
        let more = a.alloc_pages(PageSize::Normal, 1).unwrap();
        assert_eq!(more, [run(12 * KIB, 4 * KIB)]);
        assert_eq!(a.allocated_bytes(), 16 * KIB);
        a.free_pages(PageSize::Normal, &runs).unwrap();
        a.free_pages(PageSize::Normal, &more).unwrap();
        assert_eq!(a, alloc(4 * MIB, 0, 0));
    }

    #[test]
    fn joint_runs_go_back_by_their_hold_or_by_their_length() {
        let mut a = alloc(64 * MIB, 64 * MIB, 0);
        // Allocated with quick reuse off, a joint run holds nothing: freed with it on, it is
        // cached by its exact length, and the next joint run of that length takes it back.
        let plain = a.alloc_huge_with_tail(1, 128).unwrap().unwrap();
        a.set_quick_reuse(true);
        let holder = a.alloc_huge_with_tail(1, 128).unwrap().unwrap();
        assert_eq!((a.held_count, plain.offset, holder.offset), (1, 0, 4 * MIB));
        a.free_huge_with_tail(plain).unwrap();
        assert_eq!((a.quick_runs, a.held_count), (1, 1));
        // The holder goes back whole: its block is cached by its order.
        a.free_huge_with_tail(holder).unwrap();
        assert_eq!((a.quick_runs, a.held_count), (2, 0));
        assert_eq!(a.block_len[slot(10)], 1);
        // The run cached by its length first (it holds no slack), then the cached block.
        assert_eq!(a.alloc_huge_with_tail(1, 128).unwrap(), Some(plain));
        assert_eq!(a.alloc_huge_with_tail(1, 128).unwrap(), Some(holder));
        // Taken as a cached run, the first holds nothing (as it was made); the second holds
        // its block again.
        assert_eq!((a.quick_runs, a.held_count), (0, 1));
        // The budget counts whole 2 MiB pages: 32 in all, 2 in use.
        assert_eq!(a.alloc_huge_with_tail(31, 1), Err(Error::BudgetExhausted));
        let before = a.clone();
        assert_eq!(a.alloc_huge_with_tail(30, 1).map(|r| r.is_none()), Ok(true));
        assert_eq!(a, before);
        for r in [plain, holder] {
            a.free_huge_with_tail(r).unwrap();
        }
        a.flush_quick();
        assert_eq!(a.info(), alloc(64 * MIB, 64 * MIB, 0).info());
    }

    #[test]
    fn quick_reuse_takes_back_the_run_just_freed() {
        let mut a = alloc(4 * MIB, 2 * MIB, 0);
        a.set_quick_reuse(true);
        let x = a.alloc_pages(PageSize::Normal, 3).unwrap();
        let y = a.alloc_pages(PageSize::Normal, 3).unwrap();
        a.free_pages(PageSize::Normal, &x).unwrap();
        // Cached frames are free memory, exactly.
        assert_eq!(a.info().free_bytes, 4 * MIB - 12 * KIB);
        assert_eq!(a.free_pages(PageSize::Normal, &x), Err(Error::NotAllocated), "double free");
        // Another size or page size does not take the cached run; the same size does.
        let z = a.alloc_pages(PageSize::Normal, 2).unwrap();
        assert_ne!(z[0].offset, x[0].offset);
        assert_eq!(a.alloc_pages(PageSize::Normal, 3).unwrap(), x);
        // A huge page comes from the lists while the 2 MiB it needs is whole.
        a.free_pages(PageSize::Normal, &x).unwrap();
        assert_eq!(a.info().huge_free_bytes, 2 * MIB);
        let h = a.alloc_pages(PageSize::Huge, 1).unwrap();
        a.free_pages(PageSize::Huge, &h).unwrap();
        assert_eq!(a.info().huge_free_bytes, 2 * MIB, "a cached huge page counts as free");
        // An allocation that needs merged blocks gives the cached runs back.
        a.free_pages(PageSize::Normal, &y).unwrap();
        a.free_pages(PageSize::Normal, &z).unwrap();
        assert_eq!(a.alloc_pages(PageSize::Normal, 1024).unwrap(), [run(0, 4 * MIB)]);
        a.free_pages(PageSize::Normal, &[run(0, 4 * MIB)]).unwrap();
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(4 * MIB, 2 * MIB, 0));
    }

    #[test]
    fn quick_reuse_keeps_a_stack_per_size() {
        let mut a = alloc(64 * MIB, 0, 0);
        a.set_quick_reuse(true);
        let runs: Vec<_> = (0..40).map(|_| a.alloc_pages(PageSize::Normal, 16).unwrap()).collect();
        let other = a.alloc_pages(PageSize::Normal, 5).unwrap();
        for r in &runs {
            a.free_pages(PageSize::Normal, r).unwrap();
        }
        // One bucket keeps at most 32 runs; the rest went back to the buddy lists. All are free.
        assert_eq!(a.quick_runs, 32);
        assert_eq!(a.info().free_bytes, 64 * MIB - 20 * KIB);
        // The same size takes the cached runs (the first 32 freed) back, last freed first.
        for r in runs[..32].iter().rev() {
            assert_eq!(&a.alloc_pages(PageSize::Normal, 16).unwrap(), r);
        }
        assert_eq!(a.quick_runs, 0);
        for r in runs[..32].iter().rev() {
            a.free_pages(PageSize::Normal, r).unwrap();
        }
        // A size that maps to the same bucket gives that bucket's runs back first. (Only runs
        // cached by their exact length share buckets: a run that holds slack is cached as its
        // whole block, in its block order's own bucket. Sizes that hold no slack: under 16
        // frames, powers of two, and any size allocated with quick reuse off.)
        a.flush_quick();
        let exact: Vec<u64> = (1..1 << HOLD_MIN).chain((HOLD_MIN..14).map(|k| 1 << k)).collect();
        let (first, clash) = (1..=1 << HOLD_SHIFT)
            .flat_map(|p| exact.iter().map(move |&q| (p, q)))
            .find(|&(p, q)| p != q && quick_slot(0, p) == quick_slot(0, q))
            .unwrap();
        a.set_quick_reuse(false);
        let f = a.alloc_pages(PageSize::Normal, first).unwrap();
        a.set_quick_reuse(true);
        a.free_pages(PageSize::Normal, &f).unwrap();
        assert_eq!(a.quick_runs, 1);
        let c = a.alloc_pages(PageSize::Normal, clash).unwrap();
        a.free_pages(PageSize::Normal, &c).unwrap();
        assert_eq!(a.quick_runs, 1);
        assert_eq!(a.alloc_pages(PageSize::Normal, clash).unwrap(), c);
        a.free_pages(PageSize::Normal, &c).unwrap();
        a.free_pages(PageSize::Normal, &other).unwrap();
        assert_eq!(a.allocated_bytes(), 0);
        // Given back, the allocator is as new.
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(64 * MIB, 0, 0));
    }

    #[test]
    fn a_run_holds_its_blocks_slack_and_the_block_is_reused_by_its_size_class() {
        let mut a = alloc(64 * MIB, 64 * MIB, 0);
        a.set_quick_reuse(true);
        let fresh_info = a.info();
        // 3 MiB of 4 KiB pages takes a 4 MiB block; the last 1 MiB is held, not split off.
        let x = a.alloc_pages(PageSize::Normal, 768).unwrap();
        assert_eq!(x, [run(0, 3 * MIB)]);
        assert_eq!((a.held_count, a.held_huge), (1, 0));
        // Held frames are free memory, exactly; the huge figure counts none (no whole 2 MiB page).
        assert_eq!(a.info().free_bytes, 61 * MIB);
        assert_eq!(a.info().huge_free_bytes, 60 * MIB);
        // Freed whole, the block is cached; a run of another length in the same block order
        // (2.5 MiB of huge-and-small pages here: the joint run) takes it back.
        a.free_pages(PageSize::Normal, &x).unwrap();
        assert_eq!(a.held_count, 0);
        assert_eq!(a.info(), fresh_info);
        let j = a.alloc_huge_with_tail(1, 128).unwrap().unwrap();
        assert_eq!(j, run(0, 2 * MIB + 512 * KIB));
        assert_eq!(a.quick_runs, 0);
        assert_eq!((a.held_count, a.held_huge), (1, 0));
        a.free_huge_with_tail(j).unwrap();
        // A piece of a holder gives the slack back; the rest frees as usual.
        // (Its 4 MiB block is cached: 6 MiB takes an 8 MiB block from the free lists.)
        let y = a.alloc_pages(PageSize::Huge, 3).unwrap();
        assert_eq!(y, [run(8 * MIB, 6 * MIB)]);
        assert_eq!((a.held_count, a.held_huge), (1, 1));
        a.free_pages(PageSize::Huge, &[run(8 * MIB, 2 * MIB)]).unwrap();
        assert_eq!(a.held_count, 0);
        assert_eq!(a.info().free_bytes, 60 * MIB);
        assert_eq!(a.info().huge_free_bytes, 60 * MIB);
        a.free_pages(PageSize::Huge, &[run(10 * MIB, 4 * MIB)]).unwrap();
        // Held slack never makes an allocation fail: the last 61 MiB are found with 1 MiB held.
        let z = a.alloc_pages(PageSize::Normal, 768).unwrap();
        let big = a.alloc_pages(PageSize::Normal, 61 * 256).unwrap();
        assert_eq!(a.info().free_bytes, 0);
        a.free_pages(PageSize::Normal, &z).unwrap();
        a.free_pages(PageSize::Normal, &big).unwrap();
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(64 * MIB, 64 * MIB, 0));
    }

    #[test]
    fn varied_sizes_reuse_cached_blocks_by_order() {
        let mut a = alloc(64 * MIB, 0, 0);
        a.set_quick_reuse(true);
        let fresh_info = a.info();
        // 75 frames take a 128-frame block (order 7) and hold its last 53 frames.
        let x = a.alloc_pages(PageSize::Normal, 75).unwrap();
        assert_eq!(x, [run(0, 300 * KIB)]);
        assert_eq!(a.held_count, 1);
        assert_eq!(a.info().free_bytes, 64 * MIB - 300 * KIB);
        let y = a.alloc_pages(PageSize::Normal, 100).unwrap();
        assert_eq!(y, [run(512 * KIB, 400 * KIB)]);
        let z = a.alloc_pages(PageSize::Normal, 20).unwrap();
        assert_eq!(z, [run(MIB, 80 * KIB)]);
        // Freed whole, each holder caches its block by order; the slack is free all along.
        a.free_pages(PageSize::Normal, &x).unwrap();
        a.free_pages(PageSize::Normal, &y).unwrap();
        assert_eq!((a.quick_runs, a.held_count), (2, 1));
        assert_eq!(a.info().free_bytes, 64 * MIB - 80 * KIB);
        // Runs of other lengths in order 7 take those blocks back, last freed first, without
        // touching the free lists.
        let lists = (a.free.clone(), a.free_count);
        assert_eq!(a.alloc_pages(PageSize::Normal, 127).unwrap(), [run(512 * KIB, 508 * KIB)]);
        let mut out = [PhysRun::default(); 1];
        assert_eq!(a.alloc_pages_into(PageSize::Normal, 65, &mut out), Ok(1));
        assert_eq!(out, [run(0, 260 * KIB)]);
        assert_eq!((a.quick_runs, a.held_count), (0, 3));
        assert_eq!((a.free.clone(), a.free_count), lists);
        a.free_pages(PageSize::Normal, &[run(512 * KIB, 508 * KIB)]).unwrap();
        a.free_pages(PageSize::Normal, &out).unwrap();
        a.free_pages(PageSize::Normal, &z).unwrap();
        assert_eq!(a.held_count, 0);
        assert_eq!(a.info(), fresh_info);
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(64 * MIB, 0, 0));
    }

    #[test]
    fn low_order_slack_is_free_and_given_back_under_pressure() {
        let mut a = alloc(256 * KIB, 0, 0);
        a.set_quick_reuse(true);
        // 9 frames take a 16-frame block and hold 7 frames: free memory, exactly.
        let h = a.alloc_pages(PageSize::Normal, 9).unwrap();
        assert_eq!(h, [run(0, 36 * KIB)]);
        assert_eq!((a.held_count, a.quick_runs), (1, 0));
        assert_eq!(a.info().free_bytes, 220 * KIB);
        // 48 frames want a 64-frame block: none is free, so the slack is given back before the
        // allocation takes the largest free blocks.
        let b = a.alloc_pages(PageSize::Normal, 48).unwrap();
        assert_eq!(b, [run(128 * KIB, 128 * KIB), run(64 * KIB, 64 * KIB)]);
        assert_eq!(a.held_count, 0);
        // The last 7 free frames are the former slack.
        let c = a.alloc_pages(PageSize::Normal, 7).unwrap();
        assert_eq!(sum(&c), 28 * KIB);
        assert!(c.iter().all(|r| r.offset >= 36 * KIB && r.offset + r.len_bytes <= 64 * KIB));
        assert_eq!(a.info().free_bytes, 0);
        a.free_pages(PageSize::Normal, &h).unwrap();
        a.free_pages(PageSize::Normal, &b).unwrap();
        a.free_pages(PageSize::Normal, &c).unwrap();
        // Everything free again, cached (held by nothing): one block holds all of it.
        assert_eq!(a.alloc_pages(PageSize::Normal, 64).unwrap(), [run(0, 256 * KIB)]);
        a.free_pages(PageSize::Normal, &[run(0, 256 * KIB)]).unwrap();
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(256 * KIB, 0, 0));
    }

    #[test]
    fn freeing_a_low_holders_first_frame_gives_its_slack_back() {
        let mut a = alloc(2 * MIB, 0, 0);
        a.set_quick_reuse(true);
        let x = a.alloc_pages(PageSize::Normal, 128).unwrap();
        let h = a.alloc_pages(PageSize::Normal, 100).unwrap();
        assert_eq!((x[0], h[0]), (run(0, 512 * KIB), run(512 * KIB, 400 * KIB)));
        assert_eq!(a.held_count, 1);
        // A piece from the middle leaves the slack held; a run spanning the end of `x` and
        // the first frame of `h` gives it back first.
        a.free_pages(PageSize::Normal, &[run(712 * KIB, 4 * KIB)]).unwrap();
        assert_eq!(a.held_count, 1);
        a.free_pages(PageSize::Normal, &[run(508 * KIB, 8 * KIB)]).unwrap();
        assert_eq!(a.held_count, 0);
        assert_eq!(a.info().free_bytes, 2 * MIB - 225 * 4 * KIB);
        // The slack is on the free lists: the best fit for 4 frames is its first 4.
        let s = a.alloc_pages(PageSize::Normal, 4).unwrap();
        assert_eq!(s, [run(912 * KIB, 16 * KIB)]);
        // Frames inside held slack can be claimed.
        let g = a.alloc_pages(PageSize::Normal, 40).unwrap();
        assert_eq!(g, [run(MIB, 160 * KIB)]);
        assert_eq!(a.held_count, 1);
        let claimed = [run(MIB + 176 * KIB, 8 * KIB)];
        a.claim_pages(PageSize::Normal, &claimed).unwrap();
        assert_eq!(a.held_count, 0);
        assert_eq!(a.claim_pages(PageSize::Normal, &claimed), Err(Error::OutOfMemory));
        for r in
            [run(0, 508 * KIB), run(516 * KIB, 196 * KIB), run(716 * KIB, 196 * KIB), s[0], g[0], claimed[0]]
        {
            a.free_pages(PageSize::Normal, &[r]).unwrap();
        }
        assert_eq!(a.allocated_bytes(), 0);
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(2 * MIB, 0, 0));
    }

    #[test]
    fn a_free_spanning_a_holders_first_frame_releases_its_slack() {
        // The 2 MiB-and-up table too: the run before a holder and the holder's first page
        // freed as one run (with the rest freed later) leave nothing held behind.
        let mut a = alloc(64 * MIB, 0, 0);
        a.set_quick_reuse(true);
        let _x = a.alloc_pages(PageSize::Normal, 1024).unwrap();
        let h = a.alloc_pages(PageSize::Normal, 768).unwrap();
        assert_eq!(h, [run(4 * MIB, 3 * MIB)]);
        a.free_pages(PageSize::Normal, &[run(4 * MIB - 4 * KIB, 8 * KIB), run(0, 4 * MIB - 4 * KIB)])
            .unwrap();
        assert_eq!(a.held_count, 0);
        a.free_pages(
            PageSize::Normal,
            &[run(4 * MIB + 4 * KIB, 4 * KIB), run(4 * MIB + 8 * KIB, 3 * MIB - 8 * KIB)],
        )
        .unwrap();
        assert_eq!(a.allocated_bytes(), 0);
        // The old slack merged back: a new holder takes the lowest 2 MiB.
        let y = a.alloc_pages(PageSize::Normal, 300).unwrap();
        assert_eq!(y, [run(0, 1200 * KIB)]);
        assert_eq!(a.held_count, 1);
        a.free_pages(PageSize::Normal, &y).unwrap();
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(64 * MIB, 0, 0));
    }

    #[test]
    fn quick_reuse_pool_is_bounded() {
        let mut a = alloc(256 * MIB, 0, 0);
        // Sizes in distinct buckets, 32 runs each: more than the pool holds. (Allocated with
        // quick reuse off, they hold no slack, so each is cached by its exact length.)
        let mut sizes: Vec<u64> = Vec::new();
        for n in 1..512u64 {
            let wanted = QUICK_RUNS / usize::from(QUICK_PER_BUCKET) + 2;
            if sizes.len() < wanted && sizes.iter().all(|&m| quick_slot(0, m) != quick_slot(0, n)) {
                sizes.push(n);
            }
        }
        let runs: Vec<_> = sizes
            .iter()
            .flat_map(|&n| (0..QUICK_PER_BUCKET).map(move |_| n))
            .map(|n| a.alloc_pages(PageSize::Normal, n).unwrap())
            .collect();
        a.set_quick_reuse(true);
        for r in &runs {
            a.free_pages(PageSize::Normal, r).unwrap();
        }
        assert_eq!(a.quick_runs, QUICK_RUNS);
        assert_eq!(a.info().free_bytes, 256 * MIB);
        // Everything fits again in one block: the cached runs are given back for it.
        assert_eq!(a.alloc_pages(PageSize::Normal, 65536).unwrap(), [run(0, 256 * MIB)]);
        assert_eq!(a.quick_runs, 0);
        a.free_pages(PageSize::Normal, &[run(0, 256 * MIB)]).unwrap();
        a.set_quick_reuse(false);
        assert_eq!(a, alloc(256 * MIB, 0, 0));
    }

    #[test]
    fn normal_pages_succeed_when_fragmented() {
        let mut a = alloc(64 * KIB, 0, 0);
        let pages: Vec<_> = (0..16).map(|_| a.alloc_pages(PageSize::Normal, 1).unwrap()).collect();
        assert_eq!(a.alloc_pages(PageSize::Normal, 1), Err(Error::OutOfMemory));
        // Free every other page: 8 pages free, none adjacent.
        for p in pages.iter().step_by(2) {
            a.free_pages(PageSize::Normal, p).unwrap();
        }
        assert_eq!(a.alloc_pages(PageSize::Normal, 9), Err(Error::OutOfMemory));
        let runs = a.alloc_pages(PageSize::Normal, 8).unwrap();
        assert_eq!(runs.len(), 8);
        assert_eq!(sum(&runs), 32 * KIB);
        assert_eq!(a.info().free_bytes, 0);
    }

    #[test]
    fn normal_takes_largest_blocks_first() {
        let mut a = alloc(8 * MIB, 0, 0);
        let runs = a.alloc_pages(PageSize::Normal, 513).unwrap();
        assert_eq!(runs, [run(0, 513 * 4 * KIB)]);
        let info = a.info();
        assert_eq!(info.free_bytes, 8 * MIB - 513 * 4 * KIB);
    }

    #[test]
    fn huge_pages_respect_budget_and_alignment() {
        let mut a = alloc(8 * MIB + 12 * KIB, 4 * MIB, 0);
        // The lone 4 KiB block at the end is the best fit for one normal page.
        let small = a.alloc_pages(PageSize::Normal, 1).unwrap();
        assert_eq!(small, [run(8 * MIB + 8 * KIB, 4 * KIB)]);
        let huge = a.alloc_pages(PageSize::Huge, 2).unwrap();
        assert_eq!(huge, [run(0, 4 * MIB)]);
        assert_eq!(a.alloc_pages(PageSize::Huge, 1), Err(Error::BudgetExhausted));
        let info = a.info();
        assert_eq!(info.huge_free_bytes, 0);
        a.free_pages(PageSize::Huge, &huge).unwrap();
        assert_eq!(a.info().huge_free_bytes, 4 * MIB);
        // Only the 2 MiB blocks not touched by the small page are usable.
        let mut b = alloc(8 * MIB, 8 * MIB, 0);
        let small = b.alloc_pages(PageSize::Normal, 1).unwrap();
        assert_eq!(b.info().huge_free_bytes, 6 * MIB);
        assert_eq!(b.alloc_pages(PageSize::Huge, 4), Err(Error::OutOfMemory));
        let three = b.alloc_pages(PageSize::Huge, 3).unwrap();
        assert_eq!(sum(&three), 6 * MIB);
        assert!(three.iter().all(|r| r.offset % (2 * MIB) == 0));
        b.free_pages(PageSize::Normal, &small).unwrap();
        b.free_pages(PageSize::Huge, &three).unwrap();
        assert_eq!(b, alloc(8 * MIB, 8 * MIB, 0));
    }

    #[test]
    fn giant_pages() {
        let mut a = alloc(2 * GIB + 4 * MIB, 0, GIB);
        let info = a.info();
        assert_eq!(info.giant_total_bytes, GIB);
        assert_eq!(info.giant_free_bytes, GIB);
        let g = a.alloc_pages(PageSize::Giant, 1).unwrap();
        assert_eq!(g, [run(0, GIB)]);
        assert_eq!(a.alloc_pages(PageSize::Giant, 1), Err(Error::BudgetExhausted));
        a.free_pages(PageSize::Giant, &g).unwrap();
        let n = a.alloc_pages(PageSize::Normal, 1).unwrap();
        assert_eq!(a.info().giant_free_bytes, GIB);
        let mut b = alloc(2 * GIB, 0, 2 * GIB);
        let n2 = b.alloc_pages(PageSize::Normal, 1).unwrap();
        assert_eq!(b.info().giant_free_bytes, GIB);
        assert_eq!(b.alloc_pages(PageSize::Giant, 2), Err(Error::OutOfMemory));
        assert_eq!(b.alloc_pages(PageSize::Giant, 1).unwrap(), [run(GIB, GIB)]);
        a.free_pages(PageSize::Normal, &n).unwrap();
        b.free_pages(PageSize::Normal, &n2).unwrap();
        assert_eq!(a.allocated_bytes(), 0);
    }

    #[test]
    fn bad_frees_change_nothing() {
        let mut a = alloc(4 * MIB, 4 * MIB, 0);
        let n = a.alloc_pages(PageSize::Normal, 4).unwrap();
        let h = a.alloc_pages(PageSize::Huge, 1).unwrap();
        let before = a.clone();
        // Wrong page size, never allocated, overlapping runs, malformed runs.
        assert_eq!(a.free_pages(PageSize::Huge, &n), Err(Error::InvalidArgument));
        assert_eq!(a.free_pages(PageSize::Normal, &h), Err(Error::NotAllocated));
        assert_eq!(
            a.free_pages(PageSize::Normal, &[run(n[0].offset + n[0].len_bytes, 4 * KIB)]),
            Err(Error::NotAllocated)
        );
        assert_eq!(a.free_pages(PageSize::Normal, &[n[0], n[0]]), Err(Error::NotAllocated));
        assert_eq!(a.free_pages(PageSize::Normal, &[run(0, 0)]), Err(Error::InvalidArgument));
        assert_eq!(a.free_pages(PageSize::Normal, &[run(1, 4096)]), Err(Error::InvalidArgument));
        assert_eq!(
            a.free_pages(PageSize::Normal, &[run(u64::MAX - 4095, 4096)]),
            Err(Error::InvalidArgument)
        );
        // One good run and one bad run: the good one is not freed either.
        assert_eq!(a.free_pages(PageSize::Normal, &[n[0], run(3 * MIB, 4 * KIB)]), Err(Error::NotAllocated));
        assert_eq!(a, before);
        a.free_pages(PageSize::Normal, &n).unwrap();
        assert_eq!(a.free_pages(PageSize::Normal, &n), Err(Error::NotAllocated));
        a.free_pages(PageSize::Huge, &h).unwrap();
        assert_eq!(a, alloc(4 * MIB, 4 * MIB, 0));
    }

    #[test]
    fn partial_and_spanning_frees() {
        let mut a = alloc(MIB, 0, 0);
        let x = a.alloc_pages(PageSize::Normal, 4).unwrap();
        let y = a.alloc_pages(PageSize::Normal, 4).unwrap();
        assert_eq!(x, [run(0, 16 * KIB)]);
        assert_eq!(y, [run(16 * KIB, 16 * KIB)]);
        // Free the middle page of x, then a span covering the rest of x and the start of y.
        a.free_pages(PageSize::Normal, &[run(4 * KIB, 4 * KIB)]).unwrap();
        assert_eq!(a.free_pages(PageSize::Normal, &[run(0, 8 * KIB)]), Err(Error::NotAllocated));
        a.free_pages(PageSize::Normal, &[run(8 * KIB, 12 * KIB)]).unwrap();
        a.free_pages(PageSize::Normal, &[run(0, 4 * KIB), run(20 * KIB, 12 * KIB)]).unwrap();
        assert_eq!(a, alloc(MIB, 0, 0));
    }

    #[test]
    fn zero_and_overflowing_counts() {
        let mut a = alloc(MIB, 0, 0);
        assert_eq!(a.alloc_pages(PageSize::Normal, 0), Err(Error::InvalidArgument));
        assert_eq!(a.alloc_pages(PageSize::Normal, u64::MAX), Err(Error::InvalidArgument));
        assert_eq!(a.alloc_pages(PageSize::Huge, 1), Err(Error::BudgetExhausted));
        assert_eq!(a.alloc_pages(PageSize::Normal, 257), Err(Error::OutOfMemory));
        assert_eq!(a, alloc(MIB, 0, 0));
    }

    /// One step of [`held_slack_stays_consistent`].
    #[derive(Clone, Debug)]
    enum Step {
        /// Allocate this many normal pages (huge pages when the flag is set, count / 128 + 1).
        Alloc(bool, u64),
        /// Free a live allocation whole.
        Free(usize),
        /// Free the first page of a live allocation's first run.
        FreeFirst(usize),
        /// Free the last page of a live allocation's last run.
        FreeLast(usize),
        /// Free the last page before a live allocation and its first page as one run, when
        /// the page before is live with the same page size.
        Span(usize),
        /// Claim this many 4 KiB pages just after a live allocation.
        Claim(usize, u64),
        /// Give the cache and held slack back.
        Flush,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (prop::bool::weighted(0.1), 1..600u64).prop_map(|(h, n)| Step::Alloc(h, n)),
            3 => any::<usize>().prop_map(Step::Free),
            1 => any::<usize>().prop_map(Step::FreeFirst),
            1 => any::<usize>().prop_map(Step::FreeLast),
            2 => any::<usize>().prop_map(Step::Span),
            1 => (any::<usize>(), 1..20u64).prop_map(|(i, n)| Step::Claim(i, n)),
            1 => Just(Step::Flush),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(miri) { 2 } else { 64 },
            // No file of failing seeds: Miri runs isolated, with no file system.
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Random churns of varied sizes with pieces, spans, claims and flushes keep the
        /// held-slack tables exact (checked by brute force after every step), and end as a
        /// fresh allocator.
        #[test]
        fn held_slack_stays_consistent(steps in proptest::collection::vec(step(), 1..150)) {
            let total = 16 * MIB;
            let mut a = alloc(total, total, 0);
            a.set_quick_reuse(true);
            let mut live: Vec<(PageSize, PhysRun)> = Vec::new();
            let page_at = |live: &[(PageSize, PhysRun)], page: PageSize, end: u64| {
                live.iter().position(|(p, r)| *p == page && r.offset + r.len_bytes == end)
            };
            for st in steps {
                match st {
                    Step::Alloc(huge, n) => {
                        let (page, count) =
                            if huge { (PageSize::Huge, n / 128 + 1) } else { (PageSize::Normal, n) };
                        if let Ok(runs) = a.alloc_pages(page, count) {
                            live.extend(runs.into_iter().map(|r| (page, r)));
                        }
                    }
                    Step::Free(i) if !live.is_empty() => {
                        let (page, r) = live.swap_remove(i % live.len());
                        a.free_pages(page, &[r]).unwrap();
                    }
                    Step::FreeFirst(i) | Step::FreeLast(i) if !live.is_empty() => {
                        let i = i % live.len();
                        let (page, r) = live[i];
                        let first = matches!(st, Step::FreeFirst(_));
                        let at = if first { r.offset } else { r.offset + r.len_bytes - page.bytes() };
                        a.free_pages(page, &[run(at, page.bytes())]).unwrap();
                        if r.len_bytes == page.bytes() {
                            live.swap_remove(i);
                        } else if first {
                            live[i].1 = run(r.offset + page.bytes(), r.len_bytes - page.bytes());
                        } else {
                            live[i].1.len_bytes -= page.bytes();
                        }
                    }
                    Step::Span(i) if !live.is_empty() => {
                        let i = i % live.len();
                        let (page, r) = live[i];
                        if let Some(j) = page_at(&live, page, r.offset) {
                            a.free_pages(page, &[run(r.offset - page.bytes(), 2 * page.bytes())]).unwrap();
                            for k in [i, j] {
                                let (_, q) = live[k];
                                live[k].1 = if k == i {
                                    run(q.offset + page.bytes(), q.len_bytes - page.bytes())
                                } else {
                                    run(q.offset, q.len_bytes - page.bytes())
                                };
                            }
                            live.retain(|(_, q)| q.len_bytes > 0);
                        }
                    }
                    Step::Claim(i, n) if !live.is_empty() => {
                        let (_, r) = live[i % live.len()];
                        let c = run(r.offset + r.len_bytes, n * FRAME_BYTES);
                        let end = c.offset + c.len_bytes;
                        let taken =
                            live.iter().any(|(_, q)| q.offset < end && c.offset < q.offset + q.len_bytes);
                        let fits = end <= total;
                        match a.claim_pages(PageSize::Normal, &[c]) {
                            Ok(()) => {
                                proptest::prop_assert!(fits && !taken);
                                live.push((PageSize::Normal, c));
                            }
                            Err(_) => proptest::prop_assert!(!fits || taken),
                        }
                    }
                    Step::Flush => {
                        a.flush_quick();
                        proptest::prop_assert_eq!(a.held_count, 0);
                    }
                    _ => {}
                }
                check_held(&a);
                let used: u64 = live.iter().map(|(_, r)| r.len_bytes).sum();
                proptest::prop_assert_eq!(a.info().free_bytes, total - used);
            }
            for (page, r) in live {
                a.free_pages(page, &[r]).unwrap();
            }
            check_held(&a);
            a.set_quick_reuse(false);
            proptest::prop_assert_eq!(a, alloc(total, total, 0));
        }
    }
}
