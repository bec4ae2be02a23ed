//! Virtual memory management (VMM): VA reservations, physical handles and the mappings between
//! them, with the offset, granularity and ordering rules of the ACL API.
//!
//! This module owns the bookkeeping of `aclrtReserveMemAddress`, `aclrtMallocPhysical`,
//! `aclrtMapMem` and friends for one process: which VA ranges are reserved ([`VmmSpace`]),
//! which parts of them are mapped to which handle with which access per location, and which
//! physical handles exist with how many references ([`HandleTable`]). It must not back, map or
//! copy anything (the runtime asks the driver once this module said yes), and it never sees a
//! frame: a handle is a number the driver gave out.
//!
//! # Rules kept here
//!
//! - A mapping lies inside one reservation, starts and ends on the handle's granularity, does
//!   not overlap another mapping, and covers the whole handle (offset 0, size equal to the
//!   handle's size).
//! - A reservation is released only when nothing in it is mapped.
//! - One reservation does not mix handles of two devices, nor local and imported handles.
//! - A handle freed while mapped is released when its last mapping goes; every
//!   `aclrtMemRetainAllocationHandle` adds a reference that one free takes back.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use hal::{DeviceAddr, PageSize, VaRange};

use crate::va::VaAllocator;

/// Why a VMM operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmmError {
    /// No reservation starts at this address.
    NotReserved,
    /// The reservation still has mappings (unmap first).
    StillMapped,
    /// The range does not lie inside one reservation.
    OutsideReservation,
    /// Start or size is not a multiple of the granularity.
    Misaligned,
    /// The range overlaps an existing mapping.
    Overlaps,
    /// The size is not the handle's size, or the offset is not 0.
    SizeMismatch,
    /// Nothing is mapped at exactly this address (and size).
    NotMapped,
    /// The handle is unknown (or already freed).
    UnknownHandle,
    /// The reservation already maps memory of another device, or of the other origin
    /// (allocated here versus imported).
    Mixed,
    /// No VA is left for the reservation.
    OutOfVa,
    /// A size or address computation overflowed, or a size was zero.
    InvalidArgument,
}

/// Where an access descriptor applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    /// Host memory (the id is ignored).
    Host,
    /// A device, by logical id.
    Device(u32),
}

/// Access flags of one location, as `aclrtMemAccessFlags` values.
pub type AccessFlags = u32;
/// No access.
pub const ACCESS_NONE: AccessFlags = 0;
/// Read and write (the only value `aclrtMemSetAccess` accepts).
pub const ACCESS_READWRITE: AccessFlags = 3;

/// Where a handle's memory came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `aclrtMallocPhysical` in this process.
    Local,
    /// An import from another process.
    Imported,
}

/// One mapping inside a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The mapped range.
    pub range: VaRange,
    /// The handle mapped there.
    pub handle: u64,
    /// The device whose memory it is.
    pub device: u32,
    /// Where the handle came from.
    pub origin: Origin,
    /// Access per location; locations not listed have none.
    pub access: Vec<(Location, AccessFlags)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Reservation {
    len_bytes: u64,
    maps: BTreeMap<u64, Mapping>,
}

/// The VA reservations of one window and the mappings inside them.
///
/// Plain data: every change takes `&mut self`; the owner serialises access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmmSpace {
    va: VaAllocator,
    reservations: BTreeMap<u64, Reservation>,
}

impl VmmSpace {
    /// An empty space over `window`.
    pub fn new(window: VaRange) -> Self {
        Self { va: VaAllocator::new(window), reservations: BTreeMap::new() }
    }

    /// The window reservations come from.
    pub fn window(&self) -> VaRange {
        self.va.window()
    }

    /// Reserves `len_bytes` (rounded up to `granularity`, a power of two), at `hint` when that
    /// range is free and aligned, anywhere aligned to `granularity` otherwise.
    ///
    /// # Errors
    ///
    /// [`VmmError::InvalidArgument`] for size 0 or overflow, [`VmmError::OutOfVa`].
    pub fn reserve(
        &mut self,
        len_bytes: u64,
        granularity: u64,
        hint: Option<u64>,
    ) -> Result<VaRange, VmmError> {
        if len_bytes == 0 || !granularity.is_power_of_two() {
            return Err(VmmError::InvalidArgument);
        }
        let len =
            len_bytes.checked_add(granularity - 1).ok_or(VmmError::InvalidArgument)? & !(granularity - 1);
        let range = match hint.and_then(|h| self.take_exact(h, len, granularity)) {
            Some(r) => r,
            None => self.va.alloc(len, granularity).map_err(|_| VmmError::OutOfVa)?,
        };
        self.reservations
            .insert(range.start().as_u64(), Reservation { len_bytes: len, maps: BTreeMap::new() });
        Ok(range)
    }

    /// Takes exactly `[hint, hint + len)` when it is free and aligned.
    fn take_exact(&mut self, hint: u64, len: u64, granularity: u64) -> Option<VaRange> {
        if hint % granularity != 0 {
            return None;
        }
        let want = VaRange::try_new(DeviceAddr(hint), len).ok()?;
        let w = self.va.window();
        if hint < w.start().as_u64() || want.end() > w.end() {
            return None;
        }
        // VaAllocator has no "allocate at": allocate from a copy until the hinted range comes
        // out (best fit by size then address makes it come out soon when it is free), then
        // give back what was taken before it. Bounded, so a busy window just ignores the hint.
        let mut real = self.va.clone();
        let mut before = Vec::new();
        let mut tries = 0;
        let got = loop {
            tries += 1;
            if tries > 1024 {
                return None;
            }
            let cand = real.alloc(len, granularity).ok()?;
            if cand.start().as_u64() == hint {
                break cand;
            }
            before.push(cand);
        };
        for r in before {
            real.free(r).ok()?;
        }
        self.va = real;
        Some(got)
    }

    /// Releases the reservation starting at `start`.
    ///
    /// # Errors
    ///
    /// [`VmmError::NotReserved`], [`VmmError::StillMapped`]; nothing changes then.
    pub fn release(&mut self, start: u64) -> Result<VaRange, VmmError> {
        let r = self.reservations.get(&start).ok_or(VmmError::NotReserved)?;
        if !r.maps.is_empty() {
            return Err(VmmError::StillMapped);
        }
        let range =
            VaRange::try_new(DeviceAddr(start), r.len_bytes).map_err(|_| VmmError::InvalidArgument)?;
        self.va.free(range).map_err(|_| VmmError::NotReserved)?;
        self.reservations.remove(&start);
        Ok(range)
    }

    fn reservation_of(&self, addr: u64) -> Option<(u64, &Reservation)> {
        let (&s, r) = self.reservations.range(..=addr).next_back()?;
        (addr - s < r.len_bytes).then_some((s, r))
    }

    /// Whether `addr` lies in a reservation.
    pub fn is_reserved(&self, addr: u64) -> bool {
        self.reservation_of(addr).is_some()
    }

    /// Checks that `[start, start + len)` may map a handle of `handle_len` bytes from `offset`,
    /// of `device` and `origin`, with `granularity`.
    ///
    /// # Errors
    ///
    /// The [`VmmError`] of the first rule broken.
    #[expect(clippy::too_many_arguments, reason = "one argument per rule checked")]
    pub fn check_map(
        &self,
        start: u64,
        len: u64,
        offset: u64,
        handle_len: u64,
        granularity: u64,
        device: u32,
        origin: Origin,
    ) -> Result<VaRange, VmmError> {
        let range = VaRange::try_new(DeviceAddr(start), len).map_err(|_| VmmError::InvalidArgument)?;
        let (rs, r) = self.reservation_of(start).ok_or(VmmError::OutsideReservation)?;
        if range.end() > rs + r.len_bytes {
            return Err(VmmError::OutsideReservation);
        }
        if offset != 0 || len != handle_len {
            return Err(VmmError::SizeMismatch);
        }
        if start % granularity != 0 || len % granularity != 0 {
            return Err(VmmError::Misaligned);
        }
        if let Some((&ms, m)) = r.maps.range(..range.end()).next_back() {
            if ms + m.range.len_bytes() > start {
                return Err(VmmError::Overlaps);
            }
        }
        if r.maps.values().any(|m| m.device != device || m.origin != origin) {
            return Err(VmmError::Mixed);
        }
        Ok(range)
    }

    /// Records a mapping that [`Self::check_map`] accepted; the owning device gets read-write
    /// access.
    ///
    /// # Errors
    ///
    /// [`VmmError::OutsideReservation`] when `range` is in no reservation.
    pub fn insert_map(
        &mut self,
        range: VaRange,
        handle: u64,
        device: u32,
        origin: Origin,
    ) -> Result<(), VmmError> {
        let start = range.start().as_u64();
        let (rs, _) = self.reservation_of(start).ok_or(VmmError::OutsideReservation)?;
        let r = self.reservations.get_mut(&rs).ok_or(VmmError::OutsideReservation)?;
        let access = alloc::vec![(Location::Device(device), ACCESS_READWRITE)];
        r.maps.insert(start, Mapping { range, handle, device, origin, access });
        Ok(())
    }

    /// The mapping that starts exactly at `start`.
    pub fn mapping_at(&self, start: u64) -> Option<&Mapping> {
        self.reservation_of(start)?.1.maps.get(&start)
    }

    /// The mapping containing `addr`.
    pub fn mapping_containing(&self, addr: u64) -> Option<&Mapping> {
        let (_, r) = self.reservation_of(addr)?;
        let (_, m) = r.maps.range(..=addr).next_back()?;
        (addr < m.range.end()).then_some(m)
    }

    /// Whether `[addr, addr + len)` is wholly mapped (possibly by adjacent mappings of one
    /// reservation).
    pub fn contains_range(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else { return false };
        let mut cursor = addr;
        while cursor < end {
            match self.mapping_containing(cursor) {
                Some(m) => cursor = m.range.end(),
                None => return false,
            }
        }
        true
    }

    /// Removes the mapping that starts at `start` and returns it.
    ///
    /// # Errors
    ///
    /// [`VmmError::NotMapped`].
    pub fn unmap(&mut self, start: u64) -> Result<Mapping, VmmError> {
        let (rs, _) = self.reservation_of(start).ok_or(VmmError::NotMapped)?;
        let r = self.reservations.get_mut(&rs).ok_or(VmmError::NotMapped)?;
        r.maps.remove(&start).ok_or(VmmError::NotMapped)
    }

    /// Sets the access of the mapping at exactly `[start, start + len)` for each of `descs`.
    ///
    /// # Errors
    ///
    /// [`VmmError::NotMapped`] when no mapping has exactly that start and size.
    pub fn set_access(
        &mut self,
        start: u64,
        len: u64,
        descs: &[(Location, AccessFlags)],
    ) -> Result<(), VmmError> {
        let (rs, _) = self.reservation_of(start).ok_or(VmmError::NotMapped)?;
        let r = self.reservations.get_mut(&rs).ok_or(VmmError::NotMapped)?;
        let m = r.maps.get_mut(&start).filter(|m| m.range.len_bytes() == len).ok_or(VmmError::NotMapped)?;
        for &(loc, flags) in descs {
            match m.access.iter_mut().find(|(l, _)| *l == loc) {
                Some(e) => e.1 = flags,
                None => m.access.push((loc, flags)),
            }
        }
        Ok(())
    }

    /// The access of `loc` to the mapping starting at `start`.
    ///
    /// # Errors
    ///
    /// [`VmmError::NotMapped`].
    pub fn access(&self, start: u64, loc: Location) -> Result<AccessFlags, VmmError> {
        let m = self.mapping_at(start).ok_or(VmmError::NotMapped)?;
        Ok(m.access.iter().find(|(l, _)| *l == loc).map_or(ACCESS_NONE, |&(_, f)| f))
    }

    /// Every reservation's range, for teardown.
    pub fn reservations(&self) -> Vec<VaRange> {
        self.reservations
            .iter()
            .filter_map(|(&s, r)| VaRange::try_new(DeviceAddr(s), r.len_bytes).ok())
            .collect()
    }

    /// Every mapping, for teardown.
    pub fn mappings(&self) -> Vec<Mapping> {
        self.reservations.values().flat_map(|r| r.maps.values().cloned()).collect()
    }
}

/// A physical handle this process holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle {
    /// The logical device it was made or imported on.
    pub device: u32,
    /// Its size in bytes.
    pub len_bytes: u64,
    /// Its page size.
    pub page_size: PageSize,
    /// The `aclrtMemAttr` it was allocated with (as the caller gave it).
    pub mem_attr: u32,
    /// Where it came from.
    pub origin: Origin,
    /// References: 1 for the allocation or import, plus one per retain; 0 once freed.
    pub refs: u32,
    /// Mappings of it that exist.
    pub maps: u32,
}

/// What freeing a reference did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freed {
    /// The last reference went and nothing maps it: release the physical memory now.
    Release,
    /// The last reference went but mappings remain: release at the last unmap.
    Deferred,
    /// Other references remain.
    Kept,
}

/// The physical handles of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandleTable {
    handles: BTreeMap<u64, Handle>,
}

impl HandleTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a handle with one reference and no mappings.
    pub fn insert(&mut self, id: u64, handle: Handle) {
        self.handles.insert(id, Handle { refs: 1, maps: 0, ..handle });
    }

    /// The live handle `id` (with a reference).
    pub fn get(&self, id: u64) -> Option<&Handle> {
        self.handles.get(&id).filter(|h| h.refs > 0)
    }

    /// Adds a reference to handle `id`, which may be freed but still mapped.
    ///
    /// # Errors
    ///
    /// [`VmmError::UnknownHandle`].
    pub fn retain(&mut self, id: u64) -> Result<(), VmmError> {
        let h = self.handles.get_mut(&id).ok_or(VmmError::UnknownHandle)?;
        h.refs = h.refs.checked_add(1).ok_or(VmmError::InvalidArgument)?;
        Ok(())
    }

    /// Drops one reference.
    ///
    /// # Errors
    ///
    /// [`VmmError::UnknownHandle`] for an unknown or freed handle.
    pub fn free(&mut self, id: u64) -> Result<Freed, VmmError> {
        let h = self.handles.get_mut(&id).filter(|h| h.refs > 0).ok_or(VmmError::UnknownHandle)?;
        h.refs -= 1;
        Ok(match (h.refs, h.maps) {
            (0, 0) => {
                self.handles.remove(&id);
                Freed::Release
            }
            (0, _) => Freed::Deferred,
            _ => Freed::Kept,
        })
    }

    /// Counts a mapping of `id`.
    ///
    /// # Errors
    ///
    /// [`VmmError::UnknownHandle`].
    pub fn mapped(&mut self, id: u64) -> Result<(), VmmError> {
        let h = self.handles.get_mut(&id).filter(|h| h.refs > 0).ok_or(VmmError::UnknownHandle)?;
        h.maps += 1;
        Ok(())
    }

    /// Drops a mapping of `id`; returns whether the handle is now to be released (it was freed
    /// while mapped and this was its last mapping).
    pub fn unmapped(&mut self, id: u64) -> bool {
        let Some(h) = self.handles.get_mut(&id) else { return false };
        h.maps = h.maps.saturating_sub(1);
        if h.refs == 0 && h.maps == 0 {
            self.handles.remove(&id);
            return true;
        }
        false
    }

    /// Removes every handle of `device` and returns their ids (teardown).
    pub fn drain_device(&mut self, device: u32) -> Vec<u64> {
        let ids: Vec<u64> =
            self.handles.iter().filter(|(_, h)| h.device == device).map(|(&i, _)| i).collect();
        for i in &ids {
            self.handles.remove(i);
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB2: u64 = 2 << 20;

    fn space() -> VmmSpace {
        VmmSpace::new(VaRange::try_new(DeviceAddr(1 << 40), 1 << 30).unwrap())
    }

    #[test]
    fn map_two_handles_side_by_side_then_unmap_and_release() {
        let mut s = space();
        let r = s.reserve(4 * MIB2, MIB2, None).unwrap();
        let a = r.start().as_u64();
        let m1 = s.check_map(a, 2 * MIB2, 0, 2 * MIB2, MIB2, 0, Origin::Local).unwrap();
        s.insert_map(m1, 1, 0, Origin::Local).unwrap();
        let m2 = s.check_map(a + 2 * MIB2, 2 * MIB2, 0, 2 * MIB2, MIB2, 0, Origin::Local).unwrap();
        s.insert_map(m2, 2, 0, Origin::Local).unwrap();
        assert!(s.contains_range(a + MIB2, 2 * MIB2));
        assert_eq!(s.release(a), Err(VmmError::StillMapped));
        s.unmap(a).unwrap();
        s.unmap(a + 2 * MIB2).unwrap();
        assert_eq!(s.release(a).unwrap(), r);
        assert_eq!(s.release(a), Err(VmmError::NotReserved));
    }

    #[test]
    fn wrong_maps_are_refused() {
        let mut s = space();
        let a = s.reserve(4 * MIB2, MIB2, None).unwrap().start().as_u64();
        assert_eq!(
            s.check_map(a + 3 * MIB2, 2 * MIB2, 0, 2 * MIB2, MIB2, 0, Origin::Local),
            Err(VmmError::OutsideReservation)
        );
        assert_eq!(s.check_map(a + 4096, MIB2, 0, MIB2, MIB2, 0, Origin::Local), Err(VmmError::Misaligned));
        assert_eq!(s.check_map(a, MIB2, MIB2, 2 * MIB2, MIB2, 0, Origin::Local), Err(VmmError::SizeMismatch));
        assert_eq!(s.check_map(a, MIB2, 0, 2 * MIB2, MIB2, 0, Origin::Local), Err(VmmError::SizeMismatch));
        let m = s.check_map(a, 2 * MIB2, 0, 2 * MIB2, MIB2, 0, Origin::Local).unwrap();
        s.insert_map(m, 1, 0, Origin::Local).unwrap();
        assert_eq!(
            s.check_map(a + MIB2, 2 * MIB2, 0, 2 * MIB2, MIB2, 0, Origin::Local),
            Err(VmmError::Overlaps)
        );
        assert_eq!(s.check_map(a + 2 * MIB2, MIB2, 0, MIB2, MIB2, 1, Origin::Local), Err(VmmError::Mixed));
        assert_eq!(s.check_map(a + 2 * MIB2, MIB2, 0, MIB2, MIB2, 0, Origin::Imported), Err(VmmError::Mixed));
        assert_eq!(
            s.check_map(1 << 20, MIB2, 0, MIB2, MIB2, 0, Origin::Local),
            Err(VmmError::OutsideReservation)
        );
    }

    #[test]
    fn access_per_location() {
        let mut s = space();
        let a = s.reserve(MIB2, MIB2, None).unwrap().start().as_u64();
        let m = s.check_map(a, MIB2, 0, MIB2, MIB2, 0, Origin::Local).unwrap();
        s.insert_map(m, 1, 0, Origin::Local).unwrap();
        assert_eq!(s.access(a, Location::Device(0)), Ok(ACCESS_READWRITE));
        assert_eq!(s.access(a, Location::Host), Ok(ACCESS_NONE));
        s.set_access(a, MIB2, &[(Location::Host, ACCESS_READWRITE)]).unwrap();
        assert_eq!(s.access(a, Location::Host), Ok(ACCESS_READWRITE));
        assert_eq!(s.set_access(a, 2 * MIB2, &[]), Err(VmmError::NotMapped));
        assert_eq!(s.access(a + 4096, Location::Host), Err(VmmError::NotMapped));
    }

    #[test]
    fn reserve_honours_a_free_hint() {
        let mut s = space();
        let hint = (1 << 40) + 16 * MIB2;
        let r = s.reserve(MIB2, MIB2, Some(hint)).unwrap();
        assert_eq!(r.start().as_u64(), hint);
        let r2 = s.reserve(MIB2, MIB2, Some(hint)).unwrap();
        assert_ne!(r2.start().as_u64(), hint);
        let r3 = s.reserve(MIB2, MIB2, None).unwrap();
        assert!(r3.start().as_u64() != hint && r3 != r2);
    }

    #[test]
    fn handles_free_when_unreferenced_and_unmapped() {
        let mut t = HandleTable::new();
        let h = Handle {
            device: 0,
            len_bytes: MIB2,
            page_size: PageSize::Huge,
            mem_attr: 4,
            origin: Origin::Local,
            refs: 0,
            maps: 0,
        };
        t.insert(1, h);
        t.mapped(1).unwrap();
        t.retain(1).unwrap();
        assert_eq!(t.free(1), Ok(Freed::Kept));
        assert_eq!(t.free(1), Ok(Freed::Deferred));
        assert_eq!(t.free(1), Err(VmmError::UnknownHandle));
        assert!(t.get(1).is_none());
        assert!(t.unmapped(1));
        t.insert(2, h);
        assert_eq!(t.free(2), Ok(Freed::Release));
    }
}
