//! The device heap: the host-side record of every allocation in one VA window.
//!
//! It owns the VA decisions for plain device allocations (which range, how large, how
//! aligned) and the table of live allocations that answers "which allocation contains this
//! address?". It must not touch physical memory: the caller asks a backend to back the range it
//! gets from [`DeviceHeap::reserve`] and calls [`DeviceHeap::commit`] only once that succeeded.

use alloc::collections::BTreeMap;

use hal::{DeviceAddr, MemAttr, PageSize, VaRange};

use crate::error::{Error, Result};
use crate::va::VaAllocator;

/// One live allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The VA range it occupies (page-rounded).
    pub range: VaRange,
    /// Bytes the caller may use (the size after the API's rounding).
    pub usable_bytes: u64,
    /// Page size backing it.
    pub page_size: PageSize,
    /// Attributes it was backed with.
    pub attrs: MemAttr,
}

/// How many recent frees are remembered to tell a double free from a wild pointer.
const RECENT_FREES: usize = 64;

/// The allocation table of one VA window.
///
/// # Invariants
///
/// Every entry of `live` is keyed by its range's start and that range is allocated in `va`;
/// `committed_bytes` is the sum of the live ranges' lengths.
#[derive(Debug)]
pub struct DeviceHeap {
    va: VaAllocator,
    live: BTreeMap<u64, Allocation>,
    committed_bytes: u64,
    recent_frees: [u64; RECENT_FREES],
    recent_next: usize,
}

pub use crate::device::NotLive;

impl DeviceHeap {
    /// Creates an empty heap over `window`.
    pub fn new(window: VaRange) -> Self {
        Self {
            va: VaAllocator::new(window),
            live: BTreeMap::new(),
            committed_bytes: 0,
            recent_frees: [0; RECENT_FREES],
            recent_next: 0,
        }
    }

    /// Reserves a VA range for `usable_bytes` backed by `page_size` pages: the length is rounded
    /// up to whole pages and the start aligned to a page.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for zero or overflowing sizes, [`Error::OutOfVa`] when the
    /// window has no such range.
    pub fn reserve(&mut self, usable_bytes: u64, page_size: PageSize) -> Result<VaRange> {
        if usable_bytes == 0 {
            return Err(Error::InvalidArgument);
        }
        let len = page_size.round_up(usable_bytes).ok_or(Error::InvalidArgument)?;
        self.va.alloc(len, page_size.bytes())
    }

    /// Gives back a range from [`Self::reserve`] that was never committed.
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocated`] if `range` is not a reserved range.
    pub fn unreserve(&mut self, range: VaRange) -> Result<()> {
        self.va.free(range)
    }

    /// Records a reserved (and now backed) range as a live allocation.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if the allocation's range is already live.
    pub fn commit(&mut self, alloc: Allocation) -> Result<()> {
        let start = alloc.range.start().as_u64();
        if self.live.contains_key(&start) {
            return Err(Error::InvalidArgument);
        }
        self.committed_bytes =
            self.committed_bytes.checked_add(alloc.range.len_bytes()).ok_or(Error::InvalidArgument)?;
        // INVARIANT: the range came from `reserve`, so it is allocated in `va`.
        self.live.insert(start, alloc);
        Ok(())
    }

    /// Looks up the live allocation starting exactly at `base`.
    ///
    /// # Errors
    ///
    /// A [`NotLive`] reason when there is none.
    pub fn get(&self, base: DeviceAddr) -> core::result::Result<&Allocation, NotLive> {
        if let Some(a) = self.live.get(&base.as_u64()) {
            return Ok(a);
        }
        if let Some((_, a)) = self.find(base) {
            return Err(NotLive::Interior { base: a.range.start() });
        }
        if self.recent_frees.contains(&base.as_u64()) && base.as_u64() != 0 {
            return Err(NotLive::Freed);
        }
        Err(NotLive::Unknown)
    }

    /// Removes the live allocation at `base` and frees its VA; the caller releases its backing.
    ///
    /// # Errors
    ///
    /// A [`NotLive`] reason when `base` is not a live allocation base; nothing changes then.
    pub fn remove(&mut self, base: DeviceAddr) -> core::result::Result<Allocation, NotLive> {
        self.get(base)?;
        let a = self.live.remove(&base.as_u64()).ok_or(NotLive::Unknown)?;
        self.committed_bytes -= a.range.len_bytes();
        // The range was allocated in `va` by the invariant, so this cannot fail.
        let _ = self.va.free(a.range);
        self.recent_frees[self.recent_next] = base.as_u64();
        self.recent_next = (self.recent_next + 1) % RECENT_FREES;
        Ok(a)
    }

    /// The live allocation containing `addr`, with its base.
    pub fn find(&self, addr: DeviceAddr) -> Option<(DeviceAddr, &Allocation)> {
        let (&start, a) = self.live.range(..=addr.as_u64()).next_back()?;
        a.range.contains(addr).then_some((DeviceAddr(start), a))
    }

    /// Whether `[addr, addr + len_bytes)` lies inside one live allocation's usable bytes.
    pub fn contains_range(&self, addr: DeviceAddr, len_bytes: u64) -> bool {
        let Some((base, a)) = self.find(addr) else {
            return false;
        };
        let Some(end) = addr.as_u64().checked_add(len_bytes) else {
            return false;
        };
        let usable_end = base.as_u64().saturating_add(a.usable_bytes);
        end <= usable_end
    }

    /// Every live allocation, by address.
    pub fn iter(&self) -> impl Iterator<Item = &Allocation> {
        self.live.values()
    }

    /// Number of live allocations.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no allocation is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Sum of the live allocations' page-rounded lengths.
    pub fn committed_bytes(&self) -> u64 {
        self.committed_bytes
    }

    /// Removes every live allocation, returning them so the caller can release their backing.
    pub fn drain(&mut self) -> alloc::vec::Vec<Allocation> {
        let all: alloc::vec::Vec<Allocation> = self.live.values().copied().collect();
        for a in &all {
            let _ = self.va.free(a.range);
        }
        self.live.clear();
        self.committed_bytes = 0;
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 16 << 40;

    fn heap() -> DeviceHeap {
        DeviceHeap::new(VaRange::try_new(DeviceAddr(BASE), 1 << 30).unwrap())
    }

    fn alloc(h: &mut DeviceHeap, bytes: u64, page: PageSize) -> Allocation {
        let range = h.reserve(bytes, page).unwrap();
        let a = Allocation { range, usable_bytes: bytes, page_size: page, attrs: MemAttr::empty() };
        h.commit(a).unwrap();
        a
    }

    #[test]
    fn reserve_rounds_and_aligns() {
        let mut h = heap();
        let a = alloc(&mut h, 100, PageSize::Normal);
        assert_eq!(a.range.len_bytes(), 4096);
        let b = alloc(&mut h, (2 << 20) + 1, PageSize::Huge);
        assert_eq!(b.range.len_bytes(), 4 << 20);
        assert!(b.range.start().is_aligned(2 << 20));
        assert_eq!(h.committed_bytes(), 4096 + (4 << 20));
        assert_eq!(h.reserve(0, PageSize::Normal), Err(Error::InvalidArgument));
        assert_eq!(h.reserve(u64::MAX, PageSize::Normal), Err(Error::InvalidArgument));
    }

    #[test]
    fn remove_tells_why_not_live() {
        let mut h = heap();
        let a = alloc(&mut h, 8192, PageSize::Normal);
        let base = a.range.start();
        assert_eq!(h.get(DeviceAddr(base.as_u64() + 64)), Err(NotLive::Interior { base }));
        assert_eq!(h.remove(DeviceAddr(base.as_u64() + 64)), Err(NotLive::Interior { base }));
        assert_eq!(h.len(), 1);
        assert_eq!(h.remove(base).unwrap(), a);
        assert_eq!(h.remove(base), Err(NotLive::Freed));
        assert_eq!(h.remove(DeviceAddr(BASE + (512 << 20))), Err(NotLive::Unknown));
        assert_eq!(h.committed_bytes(), 0);
        assert!(h.is_empty());
    }

    #[test]
    fn ranges_inside_allocations() {
        let mut h = heap();
        let a = alloc(&mut h, 4096, PageSize::Normal);
        let s = a.range.start().as_u64();
        assert!(h.contains_range(DeviceAddr(s), 4096));
        assert!(h.contains_range(DeviceAddr(s + 100), 3996));
        assert!(!h.contains_range(DeviceAddr(s + 100), 3997));
        let b = alloc(&mut h, 100, PageSize::Normal);
        let t = b.range.start().as_u64();
        assert!(h.contains_range(DeviceAddr(t), 100));
        assert!(!h.contains_range(DeviceAddr(t), 101), "past the usable bytes, inside the page");
        assert!(!h.contains_range(DeviceAddr(s - 1), 1));
        assert_eq!(h.find(DeviceAddr(s + 4095)).map(|(b, _)| b), Some(DeviceAddr(s)));
        let drained = h.drain();
        assert_eq!(drained.len(), 2);
        assert!(h.find(DeviceAddr(s)).is_none());
    }
}
