//! Virtual memory management (`aclrtReserveMemAddress`, `aclrtMallocPhysical`, `aclrtMapMem`…)
//! and shareable handles, with the rules and codes of the ACL API; also the per-process state
//! that IPC, peer access and host registration keep.
//!
//! Safe Rust over `mm::vmm` (the bookkeeping) and the backend's [`hal::PhysicalMemory`] and
//! [`hal::Sharing`]. Each device window is split in two: the lower half is `aclrtMalloc`'s
//! (`mm::device`), the upper half ([`vmm_window`]) holds VMM reservations and imported IPC
//! memory, so an address still tells its device and copies to and from mapped memory work.
//!
//! # Locking
//!
//! One process-wide mutex (over `Extra`) guards this module's tables; it is taken after a
//! device's state lock when both are needed, never before.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use hal::layout::{device_window_base, window_of, Window, DEVICE_WINDOW_SIZE};
use hal::{DeviceAddr, DeviceId, ErrorKind, MemAttr, PageSize, PhysHandle, ShareKind, ShareName, VaRange};
use mm::vmm::{Freed, Handle, HandleTable, Location, Origin, VmmError, VmmSpace, ACCESS_READWRITE};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;

/// Where the VMM half of each device window starts, from the window's base.
pub const VMM_OFFSET: u64 = DEVICE_WINDOW_SIZE / 2;
/// The smallest mapping granularity (2 MiB).
pub const GRANULARITY: u64 = 2 << 20;
/// The granularity of 1 GiB pages.
pub const GRANULARITY_1G: u64 = 1 << 30;

/// The part of device `d`'s window that `aclrtMalloc` uses.
pub fn malloc_window(d: u32) -> VaRange {
    VaRange::try_new(DeviceAddr(device_window_base(d)), VMM_OFFSET).unwrap_or_else(|_| unreachable!())
}

/// The part of device `d`'s window that VMM reservations and IPC imports use.
pub fn vmm_window(d: u32) -> VaRange {
    VaRange::try_new(
        DeviceAddr(device_window_base(d) + VMM_OFFSET),
        DEVICE_WINDOW_SIZE - VMM_OFFSET - hal::layout::DRIVER_RESERVED_BYTES,
    )
    .unwrap_or_else(|_| unreachable!())
}

/// A physical handle as this process knows it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandleRec {
    pub(crate) device: u32,
    pub(crate) phys: PhysHandle,
    pub(crate) p2p: bool,
}

/// One IPC import: the VA it is mapped at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Import {
    pub(crate) device: u32,
    pub(crate) va: VaRange,
    pub(crate) handle: u64,
}

/// This process's VMM, IPC, peer and host-registration tables.
#[derive(Debug, Default)]
pub(crate) struct Extra {
    generation: u64,
    pub(crate) spaces: BTreeMap<u32, VmmSpace>,
    pub(crate) handles: HandleTable,
    pub(crate) recs: BTreeMap<u64, HandleRec>,
    next_handle: u64,
    /// Handles this process exported, by handle, with the share name.
    pub(crate) exported_handles: BTreeMap<u64, ShareName>,
    /// IPC keys this process exported: name → device.
    pub(crate) exported_keys: BTreeMap<ShareName, u32>,
    /// IPC imports by key, oldest first.
    pub(crate) imports: BTreeMap<ShareName, Vec<Import>>,
    /// Peer access enabled from the first device to the second.
    pub(crate) peers: BTreeSet<(u32, u32)>,
    /// Registered host ranges: start → length.
    pub(crate) registered: BTreeMap<u64, u64>,
}

static EXTRA: Mutex<Option<Extra>> = Mutex::new(None);

/// The tables of the runtime `rt` (fresh after each `aclInit`).
pub(crate) fn extra(rt: &Runtime) -> MutexGuard<'static, Option<Extra>> {
    let mut g = EXTRA.lock().unwrap_or_else(|p| p.into_inner());
    if g.as_ref().is_none_or(|e| e.generation != rt.generation) {
        *g = Some(Extra { generation: rt.generation, next_handle: 0x5000, ..Extra::default() });
    }
    g
}

/// Runs `f` on the tables of `rt`.
pub(crate) fn with<R>(rt: &Runtime, f: impl FnOnce(&mut Extra) -> R) -> R {
    let mut g = extra(rt);
    let e = g.get_or_insert_with(Extra::default);
    f(e)
}

impl Extra {
    pub(crate) fn space(&mut self, d: u32) -> &mut VmmSpace {
        self.spaces.entry(d).or_insert_with(|| VmmSpace::new(vmm_window(d)))
    }

    pub(crate) fn new_handle(&mut self, rec: HandleRec, h: Handle) -> u64 {
        self.next_handle += 0x10;
        let id = self.next_handle;
        self.recs.insert(id, rec);
        self.handles.insert(id, h);
        id
    }
}

/// The `aclrtPhysicalMemProp` fields the C edge read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysProp {
    /// `handleType`.
    pub handle_type: u32,
    /// `allocationType`.
    pub allocation_type: u32,
    /// `memAttr`.
    pub mem_attr: u32,
    /// `location.id`.
    pub location_id: u32,
    /// `location.type`.
    pub location_type: u32,
}

/// Maps a VMM bookkeeping refusal to its code and message.
pub(crate) fn vmm_error(api: &str, e: VmmError) -> AclError {
    let why = match e {
        VmmError::NotReserved => "is not the start of a range reserved with aclrtReserveMemAddress",
        VmmError::StillMapped => "still has mapped memory: call aclrtUnmapMem first",
        VmmError::OutsideReservation => "does not lie inside one reserved range",
        VmmError::Misaligned => "is not aligned to the allocation granularity",
        VmmError::Overlaps => "overlaps memory already mapped there",
        VmmError::SizeMismatch => {
            "does not map the whole handle (size must equal the handle's size, offset 0)"
        }
        VmmError::NotMapped => "is not the start (and size) of a mapping made by aclrtMapMem",
        VmmError::UnknownHandle => "names no live physical handle",
        VmmError::Mixed => {
            "would mix memory of two devices, or allocated and imported memory, in one reserved range"
        }
        VmmError::OutOfVa => "cannot be reserved: no VA range of that size is left",
        VmmError::InvalidArgument => "has a size that is zero or overflows",
    };
    let code =
        if e == VmmError::OutOfVa { ACL_ERROR_RT_MEMORY_ALLOCATION } else { ACL_ERROR_RT_PARAM_INVALID };
    AclError::new(code, format!("{api}: the range {why}"))
}

/// Maps a backend sharing error.
pub(crate) fn share_error(api: &str, e: hal::Error) -> AclError {
    let code = match e.kind() {
        ErrorKind::PermissionDenied => ACL_ERROR_RT_NO_PERMISSION,
        ErrorKind::NotSupported => ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        ErrorKind::OutOfMemory => ACL_ERROR_RT_MEMORY_ALLOCATION,
        ErrorKind::InvalidHandle | ErrorKind::InvalidArgument | ErrorKind::Busy => ACL_ERROR_RT_PARAM_INVALID,
        _ => ACL_ERROR_RT_INTERNAL_ERROR,
    };
    AclError::new(code, format!("{api}: {}", e.detail()))
}

impl Runtime {
    /// Checks a device context exists for logical device `d`.
    pub(crate) fn need_context(&self, api: &str, d: u32) -> Result<()> {
        if self.dev(d).refcount == 0 {
            return Err(AclError::new(
                ACL_ERROR_RT_CONTEXT_NULL,
                format!("{api}: device {d} has no context; call aclrtSetDevice({d}) first"),
            ));
        }
        Ok(())
    }

    /// Checks an `aclrtPhysicalMemProp` and returns (device, page size, P2P).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a field outside the accepted table,
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for host memory or 1 GiB pages the SoC lacks,
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad device id.
    pub fn check_prop(&self, api: &str, p: &PhysProp) -> Result<(u32, PageSize, bool)> {
        if p.handle_type != 0 {
            return Err(AclError::invalid(format!(
                "{api}: prop->handleType {} must be ACL_MEM_HANDLE_TYPE_NONE",
                p.handle_type
            )));
        }
        if p.allocation_type != 0 {
            return Err(AclError::invalid(format!(
                "{api}: prop->allocationType {} must be ACL_MEM_ALLOCATION_TYPE_PINNED",
                p.allocation_type
            )));
        }
        match p.location_type {
            1 => {}
            0 | 4 => {
                return Err(AclError::new(
                    ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    format!("{api}: host physical memory (location type {}) is not offered by the software NPU", p.location_type),
                ))
            }
            t => {
                return Err(AclError::invalid(format!(
                    "{api}: prop->location.type {t} must be ACL_MEM_LOCATION_TYPE_DEVICE or HOST (not UNREGISTERED or MANAGED)"
                )))
            }
        }
        let (page, p2p) = match p.mem_attr {
            12 => (PageSize::Normal, false),
            4 | 5 | 13 => (PageSize::Huge, false),
            15 => (PageSize::Normal, true),
            16 => (PageSize::Huge, true),
            10 => (PageSize::Giant, false),
            14 if self.soc != hal::SocProfile::Ascend950 => (PageSize::Giant, false),
            17 if self.soc == hal::SocProfile::A3 => (PageSize::Giant, true),
            14 | 17 => {
                return Err(AclError::new(
                    ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    format!(
                        "{api}: memAttr {} (1 GiB pages) is not supported on {}",
                        p.mem_attr,
                        self.soc.soc_name()
                    ),
                ))
            }
            0 | 2 | 3 | 6 | 7 => {
                return Err(AclError::invalid(format!(
                    "{api}: prop->memAttr {} is a DDR (host) attribute but the location is a device",
                    p.mem_attr
                )))
            }
            a => {
                return Err(AclError::invalid(format!(
                "{api}: prop->memAttr {a} is not accepted (use ACL_HBM_MEM_HUGE/NORMAL/HUGE1G or ACL_MEM_*)"
            )))
            }
        };
        if p.location_id >= self.device_count() {
            return Err(AclError::new(
                ACL_ERROR_RT_INVALID_DEVICEID,
                format!(
                    "{api}: prop->location.id {} is not a device (0..{})",
                    p.location_id,
                    self.device_count()
                ),
            ));
        }
        Ok((p.location_id, page, p2p))
    }

    /// `aclrtMemGetAllocationGranularity`.
    ///
    /// # Errors
    ///
    /// As [`Self::check_prop`]; `ACL_ERROR_INVALID_PARAM` for an unknown option.
    pub fn granularity(&self, api: &str, p: &PhysProp, option: u32) -> Result<u64> {
        let (_, page, _) = self.check_prop(api, p)?;
        if option > 1 {
            return Err(AclError::invalid(format!(
                "{api}: option {option} must be ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM (0) or RECOMMENDED (1)"
            )));
        }
        Ok(if page == PageSize::Giant { GRANULARITY_1G } else { GRANULARITY })
    }

    /// `aclrtMallocPhysical`: returns the C handle value.
    ///
    /// # Errors
    ///
    /// The documented codes; nothing changes on error.
    pub fn malloc_physical(&self, api: &str, size: u64, p: &PhysProp, flags: u64) -> Result<u64> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        if flags != 0 {
            return Err(AclError::invalid(format!("{api}: flags must be 0, not {flags}")));
        }
        let (d, page, p2p) = self.check_prop(api, p)?;
        let gran = if page == PageSize::Giant { GRANULARITY_1G } else { GRANULARITY };
        if size % gran != 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: size {size} is not a multiple of the granularity {gran} (aclrtMemGetAllocationGranularity)"
            )));
        }
        self.need_context(api, d)?;
        let attrs = if p2p { MemAttr::P2P } else { MemAttr::empty() };
        let phys = self.backend.driver().alloc_physical(DeviceId(d), size, page, attrs).map_err(|e| {
            if e.kind() == ErrorKind::OutOfMemory {
                let figures = {
                    let st = self.dev(d);
                    st.alloc.as_ref().map(|a| crate::obs::oom_figures(self.backend.driver(), d, a))
                };
                crate::obs::after_oom(self, d, size);
                AclError::new(
                    ACL_ERROR_RT_MEMORY_ALLOCATION,
                    format!(
                        "{api}: cannot allocate {size} bytes of physical memory on device {d}: {}{}",
                        e.detail(),
                        figures.map_or_else(String::new, |f| format!("; {f}"))
                    ),
                )
            } else {
                AclError::from_hal(e, api)
            }
        })?;
        let h = Handle {
            device: d,
            len_bytes: size,
            page_size: page,
            mem_attr: p.mem_attr,
            origin: Origin::Local,
            refs: 1,
            maps: 0,
        };
        Ok(with(self, |x| x.new_handle(HandleRec { device: d, phys, p2p }, h)))
    }

    /// `aclrtFreePhysical`: drops one reference; the memory goes when no reference and no
    /// mapping is left.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an unknown or freed handle.
    pub fn free_physical(&self, api: &str, handle: u64) -> Result<()> {
        let release = with(self, |x| -> Result<Option<HandleRec>> {
            let rec = *x.recs.get(&handle).ok_or_else(|| unknown_handle(api, handle))?;
            match x.handles.free(handle).map_err(|_| unknown_handle(api, handle))? {
                Freed::Release => {
                    x.recs.remove(&handle);
                    x.exported_handles.remove(&handle);
                    Ok(Some(rec))
                }
                Freed::Deferred | Freed::Kept => Ok(None),
            }
        })?;
        if let Some(rec) = release {
            self.backend
                .driver()
                .free_physical(DeviceId(rec.device), rec.phys)
                .map_err(|e| AclError::from_hal(e, api))?;
        }
        Ok(())
    }

    /// `aclrtReserveMemAddress`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0, a non-zero alignment or flags above 1;
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device; `ACL_ERROR_RT_MEMORY_ALLOCATION`
    /// when no VA is left.
    pub fn reserve(&self, api: &str, size: u64, alignment: u64, expect: u64, flags: u64) -> Result<u64> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        if alignment != 0 {
            return Err(AclError::invalid(format!(
                "{api}: alignment is reserved and must be 0, not {alignment}"
            )));
        }
        if flags > 1 {
            return Err(AclError::invalid(format!("{api}: flags must be 0 (or 1), not {flags}")));
        }
        let d = self.current_device(api)?;
        if expect != 0 && !matches!(window_of(expect), Window::Device(_)) {
            return Err(AclError::rt_invalid(format!(
                "{api}: expectPtr {expect:#x} is outside the device VA windows (16 TiB to 24 TiB)"
            )));
        }
        let gran = if size >= GRANULARITY_1G { GRANULARITY_1G } else { GRANULARITY };
        let hint = (expect != 0).then_some(expect);
        let r = with(self, |x| x.space(d).reserve(size, gran, hint)).map_err(|e| vmm_error(api, e))?;
        Ok(r.start().as_u64())
    }

    /// `aclrtReleaseMemAddress`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a reservation start or is still mapped.
    pub fn release_reservation(&self, api: &str, ptr: u64) -> Result<()> {
        let Window::Device(d) = window_of(ptr) else {
            return Err(AclError::rt_invalid(format!(
                "{api}: virPtr {ptr:#x} was not reserved with aclrtReserveMemAddress"
            )));
        };
        with(self, |x| x.space(d).release(ptr)).map(|_| ()).map_err(|e| vmm_error(api, e))
    }

    /// `aclrtMapMem`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0 or non-zero flags; `ACL_ERROR_RT_PARAM_INVALID`
    /// for an unknown handle or a mapping that breaks a rule (outside the reservation,
    /// misaligned, overlapping, not the whole handle, offset not 0, mixed devices).
    pub fn map_mem(
        &self,
        api: &str,
        ptr: u64,
        size: u64,
        offset: u64,
        handle: u64,
        flags: u64,
    ) -> Result<()> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        if flags != 0 {
            return Err(AclError::invalid(format!("{api}: flags must be 0, not {flags}")));
        }
        let Window::Device(d) = window_of(ptr) else {
            return Err(AclError::rt_invalid(format!(
                "{api}: virPtr {ptr:#x} is not inside a reserved range"
            )));
        };
        with(self, |x| -> Result<()> {
            let h = *x.handles.get(handle).ok_or_else(|| unknown_handle(api, handle))?;
            let rec = *x.recs.get(&handle).ok_or_else(|| unknown_handle(api, handle))?;
            if h.device != d {
                return Err(AclError::rt_invalid(format!(
                    "{api}: handle {handle:#x} holds memory of device {} but virPtr {ptr:#x} was reserved on device {d}",
                    h.device
                )));
            }
            let gran = if h.page_size == PageSize::Giant { GRANULARITY_1G } else { GRANULARITY };
            let range = x
                .space(d)
                .check_map(ptr, size, offset, h.len_bytes, gran, h.device, h.origin)
                .map_err(|e| vmm_error(api, e))?;
            self.backend
                .driver()
                .map_physical(DeviceId(rec.device), rec.phys, 0, range)
                .map_err(|e| AclError::from_hal(e, api))?;
            x.space(d).insert_map(range, handle, h.device, h.origin).map_err(|e| vmm_error(api, e))?;
            x.handles.mapped(handle).map_err(|_| unknown_handle(api, handle))?;
            Ok(())
        })
    }

    /// `aclrtUnmapMem`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when nothing is mapped at `ptr`.
    pub fn unmap_mem(&self, api: &str, ptr: u64) -> Result<()> {
        let Window::Device(d) = window_of(ptr) else {
            return Err(AclError::rt_invalid(format!(
                "{api}: virPtr {ptr:#x} is not a mapping made by aclrtMapMem"
            )));
        };
        let free = with(self, |x| -> Result<Option<HandleRec>> {
            let m = x.space(d).mapping_at(ptr).cloned().ok_or_else(|| vmm_error(api, VmmError::NotMapped))?;
            let rec = *x.recs.get(&m.handle).ok_or_else(|| unknown_handle(api, m.handle))?;
            self.backend
                .driver()
                .unmap_physical(DeviceId(rec.device), m.range)
                .map_err(|e| AclError::from_hal(e, api))?;
            x.space(d).unmap(ptr).map_err(|e| vmm_error(api, e))?;
            if x.handles.unmapped(m.handle) {
                x.recs.remove(&m.handle);
                x.exported_handles.remove(&m.handle);
                return Ok(Some(rec));
            }
            Ok(None)
        })?;
        if let Some(rec) = free {
            self.backend
                .driver()
                .free_physical(DeviceId(rec.device), rec.phys)
                .map_err(|e| AclError::from_hal(e, api))?;
        }
        Ok(())
    }

    /// `aclrtMemSetAccess`: `descs` are (flags, location type, location id).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an empty list or a bad descriptor,
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for flags other than READWRITE,
    /// `ACL_ERROR_RT_PARAM_INVALID` when `[ptr, +size)` is not exactly a mapping.
    pub fn set_access(&self, api: &str, ptr: u64, size: u64, descs: &[(u32, u32, u32, bool)]) -> Result<()> {
        if descs.is_empty() {
            return Err(AclError::invalid(format!("{api}: count must be greater than 0")));
        }
        let mut list = Vec::with_capacity(descs.len());
        for (i, &(flags, ty, id, rsv_zero)) in descs.iter().enumerate() {
            if !rsv_zero {
                return Err(AclError::invalid(format!("{api}: desc[{i}].rsv must be all zero")));
            }
            match flags {
                3 => {}
                0 | 1 => {
                    return Err(AclError::new(
                        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        format!(
                        "{api}: desc[{i}].flags {flags}: only ACL_RT_MEM_ACCESS_FLAGS_READWRITE is supported"
                    ),
                    ))
                }
                f => {
                    return Err(AclError::invalid(format!(
                        "{api}: desc[{i}].flags {f} is not an aclrtMemAccessFlags"
                    )))
                }
            }
            list.push((self.location(api, ty, id)?, ACCESS_READWRITE));
        }
        let Window::Device(d) = window_of(ptr) else { return Err(vmm_error(api, VmmError::NotMapped)) };
        with(self, |x| x.space(d).set_access(ptr, size, &list)).map_err(|e| vmm_error(api, e))
    }

    fn location(&self, api: &str, ty: u32, id: u32) -> Result<Location> {
        match ty {
            0 => Ok(Location::Host),
            1 if id < self.device_count() => Ok(Location::Device(id)),
            1 => Err(AclError::new(
                ACL_ERROR_RT_INVALID_DEVICEID,
                format!("{api}: location id {id} is not a device"),
            )),
            t => Err(AclError::invalid(format!(
                "{api}: location type {t} must be ACL_MEM_LOCATION_TYPE_HOST (0) or _DEVICE (1)"
            ))),
        }
    }

    /// `aclrtMemGetAccess`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a bad location, `ACL_ERROR_RT_PARAM_INVALID` when `ptr`
    /// is not a mapping start.
    pub fn get_access(&self, api: &str, ptr: u64, ty: u32, id: u32) -> Result<u64> {
        let loc = self.location(api, ty, id)?;
        let Window::Device(d) = window_of(ptr) else { return Err(vmm_error(api, VmmError::NotMapped)) };
        with(self, |x| x.space(d).access(ptr, loc)).map(u64::from).map_err(|e| vmm_error(api, e))
    }

    /// `aclrtMemRetainAllocationHandle`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a mapping start.
    pub fn retain_handle(&self, api: &str, ptr: u64) -> Result<u64> {
        let Window::Device(d) = window_of(ptr) else { return Err(vmm_error(api, VmmError::NotMapped)) };
        with(self, |x| {
            let h = x
                .space(d)
                .mapping_at(ptr)
                .map(|m| m.handle)
                .ok_or_else(|| vmm_error(api, VmmError::NotMapped))?;
            x.handles.retain(h).map_err(|e| vmm_error(api, e))?;
            Ok(h)
        })
    }

    /// `aclrtMemGetAllocationPropertiesFromHandle`: the properties as the reference reports
    /// them (`memAttr` rebuilt from page size and P2P, handle type NONE, PINNED, DEVICE).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an unknown handle.
    pub fn handle_props(&self, api: &str, handle: u64) -> Result<PhysProp> {
        with(self, |x| {
            let h = *x.handles.get(handle).ok_or_else(|| unknown_handle(api, handle))?;
            let p2p = x.recs.get(&handle).is_some_and(|r| r.p2p);
            let mem_attr = match (h.page_size, p2p) {
                (PageSize::Normal, false) => 5,
                (PageSize::Huge, false) => 4,
                (PageSize::Giant, false) => 10,
                (PageSize::Normal, true) => 15,
                (PageSize::Huge, true) => 16,
                (PageSize::Giant, true) => 17,
            };
            Ok(PhysProp {
                handle_type: 0,
                allocation_type: 0,
                mem_attr,
                location_id: h.device,
                location_type: 1,
            })
        })
    }

    /// `aclrtMemExportToShareableHandle(V2)`: returns the share name.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for flags above 1; `ACL_ERROR_RT_PARAM_INVALID` for an
    /// unknown or imported handle or one exported already.
    pub fn export_handle(&self, api: &str, handle: u64, flags: u64) -> Result<ShareName> {
        if flags > 1 {
            return Err(AclError::invalid(format!(
                "{api}: flags {flags} must be ACL_RT_VMM_EXPORT_FLAG_DEFAULT (0) or _DISABLE_PID_VALIDATION (1)"
            )));
        }
        with(self, |x| {
            let h = *x.handles.get(handle).ok_or_else(|| unknown_handle(api, handle))?;
            let rec = *x.recs.get(&handle).ok_or_else(|| unknown_handle(api, handle))?;
            if h.origin == Origin::Imported {
                return Err(AclError::rt_invalid(format!(
                    "{api}: handle {handle:#x} was imported; only the owner exports"
                )));
            }
            if x.exported_handles.contains_key(&handle) {
                return Err(AclError::rt_invalid(format!(
                    "{api}: handle {handle:#x} is already exported (a handle has exactly one shareable handle)"
                )));
            }
            let name = self
                .backend
                .sharing()
                .export_physical(DeviceId(rec.device), rec.phys, ShareKind::Handle, flags == 1)
                .map_err(|e| share_error(api, e))?;
            x.exported_handles.insert(handle, name);
            Ok(name)
        })
    }

    /// `aclrtMemSetPidToShareableHandle(V2)` and `aclrtIpcMemSetImportPid`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a negative pid; the backend's refusal otherwise.
    pub fn set_share_pids(&self, api: &str, name: &ShareName, pids: &[i32]) -> Result<()> {
        let mut list = Vec::with_capacity(pids.len());
        for (i, &p) in pids.iter().enumerate() {
            list.push(
                u32::try_from(p)
                    .map_err(|_| AclError::invalid(format!("{api}: pid[{i}] {p} is negative")))?,
            );
        }
        self.backend.sharing().set_share_pids(name, &list).map_err(|e| share_error(api, e))
    }

    /// `aclrtMemImportFromShareableHandle(V2)`: a new handle on `device`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_NO_PERMISSION` when this process is not whitelisted,
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for an import into the exporting process or another
    /// device, `ACL_ERROR_RT_PARAM_INVALID` for an unknown share.
    pub fn import_handle(&self, api: &str, name: &ShareName, device: u32) -> Result<u64> {
        self.need_context(api, device)?;
        let sharing = self.backend.sharing();
        let info = sharing.share_info(name).map_err(|e| share_error(api, e))?;
        if info.exporter_pid == sharing.process_id() {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!("{api}: export and import in the same process are not supported"),
            ));
        }
        let (phys, info) = sharing.import_share(name, DeviceId(device)).map_err(|e| share_error(api, e))?;
        let h = Handle {
            device,
            len_bytes: info.len_bytes,
            page_size: info.page_size,
            mem_attr: 0,
            origin: Origin::Imported,
            refs: 1,
            maps: 0,
        };
        Ok(with(self, |x| x.new_handle(HandleRec { device, phys, p2p: false }, h)))
    }

    /// Whether `[addr, +len)` of device `d` is memory mapped through VMM or an IPC import.
    pub(crate) fn vmm_contains(&self, d: u32, addr: u64, len: u64) -> bool {
        with(self, |x| x.spaces.get(&d).is_some_and(|s| s.contains_range(addr, len.max(1))))
    }

    /// Drops everything VMM, IPC and peer access hold on device `d` (device reset).
    pub(crate) fn vmm_teardown(&self, d: u32) {
        let drv = self.backend.driver();
        let sharing = self.backend.sharing();
        with(self, |x| {
            if let Some(space) = x.spaces.remove(&d) {
                for m in space.mappings() {
                    if let Some(rec) = x.recs.get(&m.handle) {
                        let _ = drv.unmap_physical(DeviceId(rec.device), m.range);
                    }
                }
            }
            for (name, dev) in std::mem::take(&mut x.exported_keys) {
                if dev == d {
                    let _ = sharing.destroy_share(&name);
                } else {
                    x.exported_keys.insert(name, dev);
                }
            }
            for list in x.imports.values_mut() {
                list.retain(|i| i.device != d);
            }
            x.imports.retain(|_, l| !l.is_empty());
            for id in x.handles.drain_device(d) {
                x.exported_handles.remove(&id);
                if let Some(rec) = x.recs.remove(&id) {
                    let _ = drv.free_physical(DeviceId(rec.device), rec.phys);
                }
            }
            x.peers.retain(|&(a, b)| a != d && b != d);
        });
    }
}

pub(crate) fn unknown_handle(api: &str, handle: u64) -> AclError {
    AclError::rt_invalid(format!("{api}: handle {handle:#x} is not a live physical memory handle"))
}

/// The share name of a `uint64_t` shareable handle.
pub fn handle_name(api: &str, h: u64) -> Result<ShareName> {
    ShareName::try_new(format!("{h:016x}").as_bytes()).filter(|_| h != 0).ok_or_else(|| {
        AclError::rt_invalid(format!("{api}: shareableHandle {h:#x} is not a shareable handle"))
    })
}

/// The `uint64_t` of a shareable handle's name.
pub fn name_handle(name: &ShareName) -> u64 {
    u64::from_str_radix(name.as_str(), 16).unwrap_or(0)
}
