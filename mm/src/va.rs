//! Device virtual address (VA) range allocator over one window.
//!
//! This module owns the bookkeeping of which ranges of one VA window are taken. It must not
//! touch physical memory, mappings or the driver: it hands out [`VaRange`]s and takes them back.
//!
//! # Algorithm and why
//!
//! Best fit by (size, address). Free ranges are indexed twice: by `(len, start)` in a
//! `BTreeSet` for the fit search, and by `start` in a `BTreeMap` for coalescing with the
//! neighbours of a freed range. Allocated ranges live in a third `BTreeMap` keyed by start, so
//! an exact-match free check and an address lookup ([`VaAllocator::find`]) are O(log n).
//!
//! Best fit keeps large free ranges whole for the large allocations device memory sees (the
//! runtime reserves VA for multi-GiB buffers next to many small ones), and ordering ties by
//! address keeps the layout deterministic, which the software NPU's reproducible traces rely
//! on. Ordered trees give O(log n) for every step without a fixed capacity; a segregated-fit
//! array of lists would be faster in the common case but loses exact best fit.
//!
//! An aligned allocation searches the size index from `len` upward and takes the first block
//! in which an aligned start fits; the unaligned head and the tail go back to the free indexes.
//! Any block of at least `len + align - 1` bytes fits, so the search stops at the first such
//! block: the worst case is O(m + log n), where `m` is the number of free blocks whose length
//! lies in `[len, len + align - 1)`, and it is O(log n) whenever `align` is 1 or no free block
//! in that band is misaligned.
//!
//! Every address computation is checked; a window may end anywhere below 2^64.

use alloc::collections::{BTreeMap, BTreeSet};

use hal::{DeviceAddr, VaRange};

use crate::error::{Error, Result};

/// Allocates ranges of device VA inside one window.
///
/// The allocator is plain data: it takes `&mut self` for every change and does no locking;
/// the owner serialises access.
///
/// # Invariants
///
/// - `by_size` and `by_addr` hold the same free ranges; free and allocated ranges are disjoint,
///   non-empty, inside `window`, and together cover it exactly.
/// - No two free ranges are adjacent (freed ranges are coalesced).
/// - `free_bytes` is the sum of the free ranges' lengths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VaAllocator {
    window: VaRange,
    by_size: BTreeSet<(u64, u64)>,
    by_addr: BTreeMap<u64, u64>,
    allocated: BTreeMap<u64, u64>,
    free_bytes: u64,
}

impl VaAllocator {
    /// Creates an allocator with all of `window` free.
    pub fn new(window: VaRange) -> Self {
        let mut this = Self {
            window,
            by_size: BTreeSet::new(),
            by_addr: BTreeMap::new(),
            allocated: BTreeMap::new(),
            free_bytes: 0,
        };
        // INVARIANT: the whole window is one free range.
        this.insert_free(window.start().as_u64(), window.len_bytes());
        this
    }

    /// Allocates `len_bytes` of VA starting at a multiple of `align`, best fit by (size, address).
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `len_bytes` is zero or `align` is not a power of two.
    /// - [`Error::OutOfVa`] when no free range can hold an aligned range of that length.
    pub fn alloc(&mut self, len_bytes: u64, align: u64) -> Result<VaRange> {
        if len_bytes == 0 || !align.is_power_of_two() {
            return Err(Error::InvalidArgument);
        }
        // The first block (by size, then address) in which an aligned start fits. Any block of
        // at least `len_bytes + align - 1` bytes fits unless aligning its start overflows.
        let mut found = None;
        for &(block_len, block_start) in self.by_size.range((len_bytes, 0)..) {
            if let Some(aligned) = align_up(block_start, align) {
                let head = aligned - block_start;
                if head.checked_add(len_bytes).is_some_and(|need| need <= block_len) {
                    found = Some((block_len, block_start, aligned));
                    break;
                }
            }
        }
        let (block_len, block_start, aligned) = found.ok_or(Error::OutOfVa)?;
        let range = VaRange::try_new(DeviceAddr(aligned), len_bytes).map_err(|_| Error::InvalidArgument)?;
        self.remove_free(block_start, block_len);
        let head = aligned - block_start;
        if head > 0 {
            self.insert_free(block_start, head);
        }
        let tail = block_len - head - len_bytes;
        if tail > 0 {
            self.insert_free(range.end(), tail);
        }
        self.allocated.insert(aligned, len_bytes);
        Ok(range)
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
        if self.allocated.get(&start) != Some(&range.len_bytes()) {
            return Err(Error::NotAllocated);
        }
        self.allocated.remove(&start);
        let mut free_start = start;
        let mut free_len = range.len_bytes();
        if let Some((&prev_start, &prev_len)) = self.by_addr.range(..start).next_back() {
            if prev_start.checked_add(prev_len) == Some(start) {
                self.remove_free(prev_start, prev_len);
                free_start = prev_start;
                free_len = free_len.checked_add(prev_len).ok_or(Error::InvalidArgument)?;
            }
        }
        let end = range.end();
        if let Some(&next_len) = self.by_addr.get(&end) {
            self.remove_free(end, next_len);
            free_len = free_len.checked_add(next_len).ok_or(Error::InvalidArgument)?;
        }
        self.insert_free(free_start, free_len);
        Ok(())
    }

    /// Bytes of the window not allocated.
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Length of the largest free range (0 when the window is full).
    pub fn largest_free(&self) -> u64 {
        self.by_size.last().map_or(0, |&(len, _)| len)
    }

    /// The window this allocator hands out ranges from.
    pub fn window(&self) -> VaRange {
        self.window
    }

    /// The live allocation that contains `addr`, if any.
    pub fn find(&self, addr: DeviceAddr) -> Option<VaRange> {
        let (&start, &len) = self.allocated.range(..=addr.as_u64()).next_back()?;
        let range = VaRange::try_new(DeviceAddr(start), len).ok()?;
        range.contains(addr).then_some(range)
    }

    /// Adds a free range to both indexes.
    fn insert_free(&mut self, start: u64, len: u64) {
        self.by_size.insert((len, start));
        self.by_addr.insert(start, len);
        self.free_bytes += len;
    }

    /// Removes a free range from both indexes.
    fn remove_free(&mut self, start: u64, len: u64) {
        self.by_size.remove(&(len, start));
        self.by_addr.remove(&start);
        self.free_bytes -= len;
    }
}

/// `addr` rounded up to a multiple of `align` (a power of two), or `None` on overflow.
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
}
