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
//! Each order has a free list ordered by frame number (a `BTreeSet`), so the lowest block of an
//! order is taken first and a buddy is found or removed in O(log n). The initial free memory is
//! the largest aligned blocks covering `[0, total)`.
//!
//! - Normal (4 KiB) allocations take blocks greedily: the largest free block not larger than
//!   what remains; when every free block is larger, the smallest larger block is split and only
//!   its low part is taken. They therefore succeed whenever enough bytes are free, however
//!   fragmented, and come back as few physically contiguous runs as possible.
//! - Huge (2 MiB) and giant (1 GiB) allocations do the same restricted to blocks of order 9 or
//!   18 and above, so every piece is aligned to and a multiple of its page size. They are also
//!   limited by a budget of bytes that may be in use as that page size.
//! - Frees validate every run against an allocation record (a `BTreeMap` from first frame to
//!   length and page size) before changing anything, then merge freed blocks with free buddies.
//!
//! # Complexity
//!
//! With `n` free blocks or records and 19 orders: an allocation costs O(k · (19 + log n)) for
//! `k` blocks taken (k is at most about 19 per power of two in the request for a fresh
//! allocator, and bounded by the number of free blocks when fragmented), plus O(19) to check
//! capacity. A free costs O(r log r) to sort its `r` runs, O(log n) per allocation record a run
//! touches to validate, and O(19 · log n) per buddy block released. [`FrameAllocator::info`] is
//! O(19).
//!
//! Frame arithmetic inside the allocator is bounded by its invariants (every frame number is
//! below `total_frames` ≤ 2^36), so only values that come from callers are checked explicitly.

use alloc::collections::{BTreeMap, BTreeSet};
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
/// The bound keeps every byte offset and frame count far from overflow and the initial free
/// lists small (at most 2^18 blocks of 1 GiB).
pub const MAX_TOTAL_BYTES: u64 = 1 << 48;

/// The buddy order of one page of `page` size.
const fn page_order(page: PageSize) -> u32 {
    page.shift() - FRAME_SHIFT
}

/// Frames in a block of `order`.
const fn order_frames(order: u32) -> u64 {
    1 << order
}

/// The free-list index of `order` (always below [`ORDERS`]).
const fn slot(order: u32) -> usize {
    // CAST: order <= MAX_ORDER, so it fits in usize.
    order as usize
}

/// The largest order of a block that starts at `frame` and fits in `avail` (≥ 1) frames.
fn largest_block(frame: u64, avail: u64) -> u32 {
    let align = if frame == 0 { MAX_ORDER } else { frame.trailing_zeros().min(MAX_ORDER) };
    align.min(avail.max(1).ilog2())
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// One allocation record: a run of frames that is allocated with one page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    /// Length in frames (never zero).
    frames: u64,
    /// The page size the frames were allocated with.
    page: PageSize,
}

/// The per-device buddy allocator of physical frames.
///
/// The allocator is plain data: it takes `&mut self` for every change and does no locking;
/// the owner (one per device) serialises access.
///
/// # Invariants
///
/// - `total_frames` is in `1..=MAX_TOTAL_BYTES / FRAME_BYTES`.
/// - `free[o]` holds the first frames of the free blocks of order `o`; each is aligned to
///   `2^o` frames and lies inside `[0, total_frames)`; no two free blocks overlap and no free
///   block overlaps an allocation record.
/// - Free blocks and allocation records together cover `[0, total_frames)` exactly.
/// - `allocated_frames` is the sum of the records' frames; `huge_in_use` and `giant_in_use`
///   count the pages of records with that page size and never exceed their budgets.
/// - Records of huge and giant pages start at and are multiples of their page size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameAllocator {
    total_frames: u64,
    huge_budget_bytes: u64,
    giant_budget_bytes: u64,
    free: [BTreeSet<u64>; ORDERS],
    allocated: BTreeMap<u64, Extent>,
    allocated_frames: u64,
    huge_in_use: u64,
    giant_in_use: u64,
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
        let mut this = Self {
            total_frames,
            huge_budget_bytes: budget(cfg.huge_budget_bytes, PageSize::Huge),
            giant_budget_bytes: budget(cfg.giant_budget_bytes, PageSize::Giant),
            free: core::array::from_fn(|_| BTreeSet::new()),
            allocated: BTreeMap::new(),
            allocated_frames: 0,
            huge_in_use: 0,
            giant_in_use: 0,
        };
        // INVARIANT: the largest aligned blocks covering [0, total_frames) are free.
        this.release_range(0, total_frames);
        Ok(this)
    }

    /// Total bytes of HBM managed (the configured total rounded down to 4 KiB).
    pub fn total_bytes(&self) -> u64 {
        self.total_frames << FRAME_SHIFT
    }

    /// Allocates `count` pages of `page` size, all or nothing.
    ///
    /// The pages come back as runs in allocation order, physically adjacent pieces coalesced;
    /// every run starts at and is a multiple of the page size. Normal pages succeed whenever
    /// `count` × 4 KiB bytes are free in total and count against no budget.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `count` is zero or the byte size overflows.
    /// - [`Error::BudgetExhausted`] when huge or giant pages in use plus `count` would exceed
    ///   that page size's budget.
    /// - [`Error::OutOfMemory`] when not enough free memory (in blocks aligned to the page
    ///   size) is left.
    pub fn alloc_pages(&mut self, page: PageSize, count: u64) -> Result<Vec<PhysRun>> {
        if count == 0 || count.checked_mul(page.bytes()).is_none() {
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
        if self.capacity(order) < count {
            return Err(Error::OutOfMemory);
        }
        let pieces = self.take(order, count);
        let frames = count << order;
        if pieces.iter().map(|&(_, len)| len).sum::<u64>() != frames {
            // Unreachable while the invariants hold (capacity was checked); stay all or nothing.
            for &(start, len) in &pieces {
                self.release_range(start, len);
            }
            return Err(Error::OutOfMemory);
        }
        let mut runs: Vec<(u64, u64)> = Vec::with_capacity(pieces.len());
        for (start, len) in pieces {
            match runs.last_mut() {
                Some((prev_start, prev_len)) if *prev_start + *prev_len == start => {
                    *prev_len += len;
                }
                _ => runs.push((start, len)),
            }
        }
        for &(start, len) in &runs {
            // INVARIANT: the frames were just taken from the free lists.
            self.allocated.insert(start, Extent { frames: len, page });
        }
        self.allocated_frames += frames;
        match page {
            PageSize::Normal => {}
            PageSize::Huge => self.huge_in_use += count,
            PageSize::Giant => self.giant_in_use += count,
        }
        Ok(runs
            .into_iter()
            .map(|(start, len)| PhysRun { offset: start << FRAME_SHIFT, len_bytes: len << FRAME_SHIFT })
            .collect())
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
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for run in runs {
            let mask = page.bytes() - 1;
            let end = run.checked_end().ok_or(Error::InvalidArgument)?;
            if run.len_bytes == 0 || run.offset & mask != 0 || run.len_bytes & mask != 0 {
                return Err(Error::InvalidArgument);
            }
            spans.push((run.offset >> FRAME_SHIFT, end >> FRAME_SHIFT));
        }
        spans.sort_unstable();
        for pair in spans.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err(Error::NotAllocated);
            }
        }
        for &(start, end) in &spans {
            if !self.is_allocated_as(start, end, page) {
                return Err(Error::NotAllocated);
            }
        }
        // Validated: from here on nothing can fail.
        for &(start, end) in &spans {
            self.unrecord(start, end, page);
            self.release_range(start, end - start);
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
    /// On error nothing changes.
    pub fn claim_pages(&mut self, page: PageSize, runs: &[PhysRun]) -> Result<()> {
        let mask = page.bytes() - 1;
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for run in runs {
            let end = run.checked_end().ok_or(Error::InvalidArgument)?;
            if run.len_bytes == 0 || run.offset & mask != 0 || run.len_bytes & mask != 0 {
                return Err(Error::InvalidArgument);
            }
            if end >> FRAME_SHIFT > self.total_frames {
                return Err(Error::InvalidArgument);
            }
            spans.push((run.offset >> FRAME_SHIFT, end >> FRAME_SHIFT));
        }
        spans.sort_unstable();
        for pair in spans.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err(Error::OutOfMemory);
            }
        }
        let frames: u64 = spans.iter().map(|&(s, e)| e - s).sum();
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
        // Find the free block holding every frame before changing anything.
        let mut blocks: Vec<(u64, u32)> = Vec::new();
        for &(start, end) in &spans {
            let mut cursor = start;
            while cursor < end {
                let found = (0..=MAX_ORDER).find_map(|o| {
                    let b = cursor & !(order_frames(o) - 1);
                    self.free[slot(o)].contains(&b).then_some((b, o))
                });
                let Some((b, o)) = found else { return Err(Error::OutOfMemory) };
                if blocks.last() != Some(&(b, o)) {
                    blocks.push((b, o));
                }
                cursor = b + order_frames(o);
            }
        }
        // Validated: take the blocks, give back the parts outside the runs, record the runs.
        for &(b, o) in &blocks {
            self.free[slot(o)].remove(&b);
        }
        for &(b, o) in &blocks {
            let block_end = b + order_frames(o);
            let mut cursor = b;
            for &(s, e) in spans.iter().filter(|&&(s, e)| s < block_end && e > b) {
                if s > cursor {
                    self.release_range(cursor, s - cursor);
                }
                cursor = e.min(block_end);
            }
            if cursor < block_end {
                self.release_range(cursor, block_end - cursor);
            }
        }
        for &(s, e) in &spans {
            // INVARIANT: the frames were just taken from the free lists.
            self.allocated.insert(s, Extent { frames: e - s, page });
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

    /// How many blocks of `order` the free blocks of that order or larger could provide.
    fn capacity(&self, order: u32) -> u64 {
        (order..=MAX_ORDER)
            .map(|o| {
                // CAST: a free list never holds more than 2^36 entries.
                let blocks = self.free[slot(o)].len() as u64;
                blocks << (o - order)
            })
            .sum()
    }

    /// Takes `count` blocks' worth of order `order` from the free lists, as (frame, frames)
    /// pieces in allocation order.
    ///
    /// The caller has checked that `self.capacity(order) >= count`.
    fn take(&mut self, order: u32, count: u64) -> Vec<(u64, u64)> {
        let mut pieces = Vec::new();
        let mut remaining = count;
        while remaining > 0 {
            let target = (order + remaining.ilog2()).min(MAX_ORDER);
            let whole = (order..=target).rev().find_map(|o| self.free[slot(o)].pop_first().map(|f| (o, f)));
            if let Some((o, frame)) = whole {
                pieces.push((frame, order_frames(o)));
                remaining -= 1 << (o - order);
                continue;
            }
            // Every usable free block is larger than what remains: split the smallest one and
            // keep its low part. Capacity was checked, so such a block exists.
            let larger =
                (target + 1..=MAX_ORDER).find_map(|o| self.free[slot(o)].pop_first().map(|f| (o, f)));
            let Some((o, frame)) = larger else {
                break;
            };
            let frames = remaining << order;
            pieces.push((frame, frames));
            self.release_range(frame + frames, order_frames(o) - frames);
            remaining = 0;
        }
        pieces
    }

    /// Whether every frame of `[start, end)` is covered by records of `page` size.
    fn is_allocated_as(&self, start: u64, end: u64, page: PageSize) -> bool {
        let mut cursor = start;
        while cursor < end {
            let Some((&rec_start, ext)) = self.allocated.range(..=cursor).next_back() else {
                return false;
            };
            let rec_end = rec_start + ext.frames;
            if ext.page != page || rec_end <= cursor {
                return false;
            }
            cursor = rec_end;
        }
        true
    }

    /// Removes `[start, end)` from the records, splitting records it cuts.
    ///
    /// The caller has checked [`Self::is_allocated_as`].
    fn unrecord(&mut self, start: u64, end: u64, page: PageSize) {
        let mut cursor = start;
        while cursor < end {
            let Some((&rec_start, &ext)) = self.allocated.range(..=cursor).next_back() else {
                break;
            };
            let rec_end = rec_start + ext.frames;
            self.allocated.remove(&rec_start);
            if rec_start < start {
                let frames = start - rec_start;
                self.allocated.insert(rec_start, Extent { frames, page });
            }
            if rec_end > end {
                let frames = rec_end - end;
                self.allocated.insert(end, Extent { frames, page });
            }
            cursor = rec_end;
        }
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

    /// Puts one aligned block on the free lists, merging it with its buddy while possible.
    fn release_block(&mut self, mut frame: u64, mut order: u32) {
        while order < MAX_ORDER {
            let buddy = frame ^ order_frames(order);
            if !self.free[slot(order)].remove(&buddy) {
                break;
            }
            frame = frame.min(buddy);
            order += 1;
        }
        self.free[slot(order)].insert(frame);
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
}
