//! Virtual memory management: physical memory, reserved address ranges and the mappings
//! between them (`aclrtMallocPhysical`, `aclrtReserveMemAddress`, `aclrtMapMem`, …).

use std::fmt;
use std::sync::Arc;

use super::buffer::Alloc;
use super::device::DeviceInner;
use super::pod::Pod;
use super::{Device, DeviceSlice, DeviceSliceMut, Result};
use crate::state::vmm::PhysProp;

/// `ACL_HBM_MEM_HUGE`: device memory in 2 MiB pages.
const ATTR_HUGE: u32 = 4;
/// `ACL_HBM_MEM_HUGE1G`: device memory in 1 GiB pages.
const ATTR_HUGE1G: u32 = 10;
/// `ACL_RT_MEM_ACCESS_FLAGS_READWRITE`.
const ACCESS_RW: u32 = 3;

/// The page size of physical memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PageKind {
    /// 2 MiB pages (`ACL_HBM_MEM_HUGE`); sizes are multiples of 2 MiB.
    #[default]
    Huge,
    /// 1 GiB pages (`ACL_HBM_MEM_HUGE1G`); sizes are multiples of 1 GiB.
    Huge1G,
}

impl PageKind {
    fn prop(self, device: u32) -> PhysProp {
        let mem_attr = match self {
            Self::Huge => ATTR_HUGE,
            Self::Huge1G => ATTR_HUGE1G,
        };
        PhysProp { handle_type: 0, allocation_type: 0, mem_attr, location_id: device, location_type: 1 }
    }
}

/// Who may access a mapping (an `aclrtMemLocation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The host (`ACL_MEM_LOCATION_TYPE_HOST`).
    Host,
    /// A device, by logical id (`ACL_MEM_LOCATION_TYPE_DEVICE`).
    Device(u32),
}

impl Location {
    fn raw(self) -> (u32, u32) {
        match self {
            Self::Host => (0, 0),
            Self::Device(d) => (1, d),
        }
    }
}

/// The allocation granularity of `kind` pages on `device`
/// (`aclrtMemGetAllocationGranularity`): sizes and mapping offsets are multiples of it.
///
/// # Errors
///
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for 1 GiB pages on a SoC without them.
pub fn granularity(device: &Device, kind: PageKind) -> Result<u64> {
    const API: &str = "granularity";
    device.inner.bind(API)?.granularity(API, &kind.prop(device.inner.id), 0)
}

/// Physical device memory (`aclrtMallocPhysical`), not yet at any address: map it into a
/// [`VirtualRange`] to use it.
///
/// Dropping it frees it (`aclrtFreePhysical`); while it is still mapped, the runtime defers the
/// free to the last [`Mapping`]'s unmap, so a mapping never loses its memory.
pub struct PhysicalMemory {
    device: Arc<DeviceInner>,
    handle: u64,
    size: u64,
    live: bool,
}

impl fmt::Debug for PhysicalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhysicalMemory")
            .field("handle", &format_args!("{:#x}", self.handle))
            .field("size", &self.size)
            .field("device", &self.device.id)
            .finish()
    }
}

impl PhysicalMemory {
    /// Allocates `size` bytes of device memory in 2 MiB pages.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0; `ACL_ERROR_RT_PARAM_INVALID` when `size` is not
    /// a multiple of the [`granularity`]; `ACL_ERROR_RT_MEMORY_ALLOCATION` when the device is full.
    pub fn new(device: &Device, size: u64) -> Result<Self> {
        Self::with_pages(device, size, PageKind::Huge)
    }

    /// Allocates `size` bytes of device memory in pages of `kind`.
    ///
    /// # Errors
    ///
    /// As [`PhysicalMemory::new`]; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for 1 GiB pages on a
    /// SoC without them.
    pub fn with_pages(device: &Device, size: u64, kind: PageKind) -> Result<Self> {
        const API: &str = "PhysicalMemory::new";
        let rt = device.inner.bind(API)?;
        let handle = rt.malloc_physical(API, size, &kind.prop(device.inner.id), 0)?;
        Ok(Self { device: Arc::clone(&device.inner), handle, size, live: true })
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The id of the device the memory is on.
    pub fn device_id(&self) -> u32 {
        self.device.id
    }

    /// The opaque handle (the `aclrtDrvMemHandle` value the C ABI would see).
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// Frees the memory now (deferred while mapped), reporting errors; dropping does the same
    /// and ignores them.
    ///
    /// # Errors
    ///
    /// The runtime's refusal (the device was reset under it, for example).
    pub fn free(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        const API: &str = "PhysicalMemory::drop";
        if !std::mem::replace(&mut self.live, false) {
            return Ok(());
        }
        self.device.bind(API)?.free_physical(API, self.handle)
    }
}

impl Drop for PhysicalMemory {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// A reserved range of device virtual addresses (`aclrtReserveMemAddress`), with no memory
/// behind it until [`PhysicalMemory`] is [mapped](VirtualRange::map) into it.
///
/// Dropping it releases the range (`aclrtReleaseMemAddress`); it cannot be dropped while a
/// [`Mapping`] into it is alive (the mapping borrows it):
///
/// ```compile_fail,E0505
/// # use ascendcl::safe::{Device, PhysicalMemory, VirtualRange};
/// fn f(dev: &Device) {
///     let range = VirtualRange::reserve(dev, 4 << 20).unwrap();
///     let phys = PhysicalMemory::new(dev, 2 << 20).unwrap();
///     let mapping = range.map(0, &phys).unwrap();
///     drop(range); // error: cannot move out of `range` because it is borrowed
///     drop(mapping);
/// }
/// ```
///
/// Slices of the range ([`VirtualRange::slice`], [`VirtualRange::slice_mut`]) work with every
/// copy of [`super::Stream`] and may span several mappings, so the range acts as one buffer that
/// can grow in place (see the `expandable` example). A copy touching a part that is not
/// mapped fails with an error. Because physical memory may be mapped at several addresses,
/// slices of VMM memory do not claim exclusive access the way a [`super::DeviceBuffer`]'s do:
/// any stream of the device may use them. Unmapping and releasing first wait for every stream
/// that used the range.
pub struct VirtualRange {
    view: Alloc,
    live: bool,
}

impl fmt::Debug for VirtualRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualRange")
            .field("addr", &format_args!("{:#x}", self.view.ptr))
            .field("size", &self.view.bytes)
            .field("device", &self.view.device.id)
            .finish()
    }
}

impl VirtualRange {
    /// Reserves `size` bytes of addresses on `device`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0; `ACL_ERROR_RT_MEMORY_ALLOCATION` when no range
    /// of that size is left.
    pub fn reserve(device: &Device, size: u64) -> Result<Self> {
        Self::reserve_at(device, size, 0)
    }

    /// Reserves `size` bytes at `hint` when that range is free (anywhere else otherwise; 0 for
    /// no hint).
    ///
    /// # Errors
    ///
    /// As [`VirtualRange::reserve`]; `ACL_ERROR_RT_PARAM_INVALID` for a hint outside the
    /// device address windows.
    pub fn reserve_at(device: &Device, size: u64, hint: u64) -> Result<Self> {
        const API: &str = "VirtualRange::reserve";
        let ptr = device.inner.bind(API)?.reserve(API, size, 0, hint, 0)?;
        Ok(Self { view: Alloc::view(Arc::clone(&device.inner), ptr, size), live: true })
    }

    /// The first address of the range.
    pub fn addr(&self) -> u64 {
        self.view.ptr
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.view.bytes
    }

    /// The id of the device the range is on.
    pub fn device_id(&self) -> u32 {
        self.view.device.id
    }

    /// Maps all of `phys` at byte `offset` of the range (`aclrtMapMem`) and gives the device
    /// read-write access to it (`aclrtMemSetAccess`).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when the mapping breaks a rule: outside the range, an
    /// offset that is not a multiple of the [`granularity`], overlapping another mapping, or
    /// memory of another device.
    pub fn map(&self, offset: u64, phys: &PhysicalMemory) -> Result<Mapping<'_>> {
        const API: &str = "VirtualRange::map";
        let ptr = self.check_inside(API, offset, phys.size)?;
        let rt = self.view.device.bind(API)?;
        rt.map_mem(API, ptr, phys.size, 0, phys.handle, 0)?;
        let mapping = Mapping { range: self, offset, size: phys.size, live: true };
        mapping.set_access(&[Location::Device(self.view.device.id)])?;
        Ok(mapping)
    }

    fn check_inside(&self, api: &str, offset: u64, size: u64) -> Result<u64> {
        if offset.checked_add(size).is_none_or(|end| end > self.view.bytes) {
            return Err(super::Error::rt_invalid(format!(
                "{api}: {size} bytes at offset {offset} do not fit in the {}-byte range",
                self.view.bytes
            )));
        }
        Ok(self.view.ptr + offset)
    }

    /// `len` elements from byte `offset` of the range, shared.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when they do not fit or `offset` is not a multiple of the
    /// element size.
    pub fn slice<T: Pod>(&self, offset: u64, len: usize) -> Result<DeviceSlice<'_, T>> {
        self.view.slice_at("VirtualRange::slice", offset, len)
    }

    /// `len` elements from byte `offset` of the range, as the destination of copies.
    ///
    /// # Errors
    ///
    /// As [`VirtualRange::slice`].
    pub fn slice_mut<T: Pod>(&self, offset: u64, len: usize) -> Result<DeviceSliceMut<'_, T>> {
        self.view.slice_mut_at("VirtualRange::slice_mut", offset, len)
    }

    /// Releases the range now, reporting errors; dropping does the same and ignores them.
    ///
    /// # Errors
    ///
    /// The runtime's refusal.
    pub fn release(mut self) -> Result<()> {
        self.release_now()
    }

    fn release_now(&mut self) -> Result<()> {
        const API: &str = "VirtualRange::drop";
        if !std::mem::replace(&mut self.live, false) {
            return Ok(());
        }
        let waited = self.view.wait_users(API);
        let released = self.view.device.bind(API)?.release_reservation(API, self.view.ptr);
        waited.and(released)
    }
}

impl Drop for VirtualRange {
    fn drop(&mut self) {
        let _ = self.release_now();
    }
}

/// Physical memory mapped into a [`VirtualRange`] (`aclrtMapMem`); unmaps on drop
/// (`aclrtUnmapMem`, after waiting for every stream that used the range).
///
/// A mapping borrows its range, so it cannot outlive it, and its slices cannot outlive it:
///
/// ```compile_fail,E0597
/// # use ascendcl::safe::{Device, DeviceSlice, PhysicalMemory, VirtualRange};
/// fn f(dev: &Device, phys: &PhysicalMemory) {
///     let slice: DeviceSlice<'_, u8>;
///     {
///         let range = VirtualRange::reserve(dev, 2 << 20).unwrap();
///         let mapping = range.map(0, phys).unwrap();
///         slice = mapping.slice(0, 16).unwrap(); // error: `mapping` does not live long enough
///     }
///     let _ = slice;
/// }
/// ```
pub struct Mapping<'r> {
    range: &'r VirtualRange,
    offset: u64,
    size: u64,
    live: bool,
}

impl fmt::Debug for Mapping<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapping")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("size", &self.size)
            .finish()
    }
}

impl<'r> Mapping<'r> {
    /// The first mapped address.
    pub fn addr(&self) -> u64 {
        self.range.view.ptr + self.offset
    }

    /// The byte offset in the range.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The size in bytes (the physical memory's).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The range it is mapped into.
    pub fn range(&self) -> &'r VirtualRange {
        self.range
    }

    /// Gives each of `locations` read-write access to the mapping (`aclrtMemSetAccess`).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an empty list; `ACL_ERROR_RT_INVALID_DEVICEID` for a
    /// device that does not exist.
    pub fn set_access(&self, locations: &[Location]) -> Result<()> {
        const API: &str = "Mapping::set_access";
        let descs: Vec<_> = locations
            .iter()
            .map(|l| {
                let (ty, id) = l.raw();
                (ACCESS_RW, ty, id, true)
            })
            .collect();
        self.range.view.device.bind(API)?.set_access(API, self.addr(), self.size, &descs)
    }

    /// The access `location` has (`aclrtMemGetAccess`): the `aclrtMemAccessFlags` value
    /// (0 none, 1 read, 3 read-write).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a device that does not exist.
    pub fn access(&self, location: Location) -> Result<u64> {
        const API: &str = "Mapping::access";
        let (ty, id) = location.raw();
        self.range.view.device.bind(API)?.get_access(API, self.addr(), ty, id)
    }

    /// `len` elements from byte `offset` of the mapping, shared.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when they do not fit in the mapping or `offset` is not a
    /// multiple of the element size.
    pub fn slice<T: Pod>(&self, offset: u64, len: usize) -> Result<DeviceSlice<'_, T>> {
        const API: &str = "Mapping::slice";
        self.check(API, offset, len, T::SIZE)?;
        self.range.view.slice_at(API, self.offset + offset, len)
    }

    /// `len` elements from byte `offset` of the mapping, as the destination of copies.
    ///
    /// # Errors
    ///
    /// As [`Mapping::slice`].
    pub fn slice_mut<T: Pod>(&mut self, offset: u64, len: usize) -> Result<DeviceSliceMut<'_, T>> {
        const API: &str = "Mapping::slice_mut";
        self.check(API, offset, len, T::SIZE)?;
        self.range.view.slice_mut_at(API, self.offset + offset, len)
    }

    fn check(&self, api: &str, offset: u64, len: usize, size: usize) -> Result<()> {
        let bytes = len.checked_mul(size).and_then(|b| u64::try_from(b).ok());
        if bytes.and_then(|b| offset.checked_add(b)).is_none_or(|end| end > self.size) {
            return Err(super::Error::invalid(format!(
                "{api}: {len} elements from byte {offset} do not fit in the {}-byte mapping",
                self.size
            )));
        }
        Ok(())
    }

    /// Unmaps now, reporting errors; dropping does the same and ignores them.
    ///
    /// # Errors
    ///
    /// The failure of a stream that used the range, or the runtime's refusal.
    pub fn unmap(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        const API: &str = "Mapping::drop";
        if !std::mem::replace(&mut self.live, false) {
            return Ok(());
        }
        // Unmap even when a stream that used the range failed: its work is over either way.
        let waited = self.range.view.wait_users(API);
        let unmapped = self.range.view.device.bind(API)?.unmap_mem(API, self.addr());
        waited.and(unmapped)
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}
