//! The VMM calls of the runtime (`impl Runtime`: reservations, physical memory, maps, shareable
//! handles); over the per-device state of [`crate::state::vmm`].

use hal::layout::{window_of, Window};
use hal::{DeviceId, ErrorKind, MemAttr, PageSize, ShareKind, ShareName};
use mm::vmm::{Freed, Handle, Location, Origin, VmmError, ACCESS_READWRITE};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::memory::Owner;
use crate::state::vmm::*;

impl Runtime {
    /// Checks a device context exists for logical device `d`.
    pub(crate) fn need_context(&self, api: &str, d: u32) -> Result<()> {
        if !self.device(d).is_open() {
            return Err(AclError::new(
                ACL_ERROR_RT_CONTEXT_NULL,
                format!("{api}: device {d} has no context; call aclrtSetDevice({d}) first"),
            ));
        }
        Ok(())
    }

    /// The device whose tables hold the physical handle `handle`.
    pub(crate) fn handle_dev(&self, api: &str, handle: u64) -> Result<u32> {
        handle_device(handle).filter(|&d| d < self.device_count()).ok_or_else(|| unknown_handle(api, handle))
    }

    /// Locks device `d`'s VMM tables. Lock order: before a pool's mutex and `mem`; never two
    /// devices' at once.
    pub(crate) fn vmm_of(&self, api: &str, d: u32) -> Result<std::sync::MutexGuard<'_, VmmState>> {
        self.device(d).vmm(api)
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
                let figures = self.device(d).mem(api).ok().and_then(|st| {
                    st.alloc.as_ref().map(|a| crate::state::obs::oom_figures(self.backend.driver(), d, a))
                });
                crate::api::obs::after_oom(self, d, size);
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
        // Lock order: `vmm` alone.
        match self.vmm_of(api, d) {
            Ok(mut x) => Ok(x.new_handle(HandleRec { device: d, phys, p2p }, h)),
            Err(e) => {
                let _ = self.backend.driver().free_physical(DeviceId(d), phys);
                Err(e)
            }
        }
    }

    /// `aclrtFreePhysical`: drops one reference; the memory goes when no reference and no
    /// mapping is left.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an unknown or freed handle.
    pub fn free_physical(&self, api: &str, handle: u64) -> Result<()> {
        let d = self.handle_dev(api, handle)?;
        let release: Result<Option<HandleRec>> = {
            // Lock order: `vmm` alone; the backend frees with no lock held.
            let mut x = self.vmm_of(api, d)?;
            let rec = *x.recs.get(&handle).ok_or_else(|| unknown_handle(api, handle))?;
            match x.handles.free(handle).map_err(|_| unknown_handle(api, handle))? {
                Freed::Release => {
                    x.recs.remove(&handle);
                    x.exported_handles.remove(&handle);
                    Ok(Some(rec))
                }
                Freed::Deferred | Freed::Kept => Ok(None),
            }
        };
        if let Some(rec) = release? {
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
        // Lock order: `vmm` alone.
        let r = self.vmm_of(api, d)?.space.reserve(size, gran, hint).map_err(|e| vmm_error(api, e))?;
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
        if d >= self.device_count() {
            return Err(vmm_error(api, VmmError::NotReserved));
        }
        // Lock order: `vmm` alone.
        self.vmm_of(api, d)?.space.release(ptr).map(|_| ()).map_err(|e| vmm_error(api, e))
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
        if d >= self.device_count() {
            return Err(vmm_error(api, VmmError::OutsideReservation));
        }
        let hd = self.handle_dev(api, handle)?;
        if hd != d {
            let holds = self.vmm_of(api, hd)?.handles.get(handle).map(|h| h.device);
            return Err(match holds {
                None => unknown_handle(api, handle),
                Some(other) => AclError::rt_invalid(format!(
                    "{api}: handle {handle:#x} holds memory of device {other} but virPtr {ptr:#x} was reserved on device {d}"
                )),
            });
        }
        let (rec, range) = {
            // Lock order: `vmm`, then `mem`. The mapping is recorded before the backend makes
            // it, so no other call can map there meanwhile.
            let mut x = self.vmm_of(api, d)?;
            let h = *x.handles.get(handle).ok_or_else(|| unknown_handle(api, handle))?;
            let rec = *x.recs.get(&handle).ok_or_else(|| unknown_handle(api, handle))?;
            let gran = if h.page_size == PageSize::Giant { GRANULARITY_1G } else { GRANULARITY };
            let range = x
                .space
                .check_map(ptr, size, offset, h.len_bytes, gran, h.device, h.origin)
                .map_err(|e| vmm_error(api, e))?;
            x.space.insert_map(range, handle, h.device, h.origin).map_err(|e| vmm_error(api, e))?;
            x.handles.mapped(handle).map_err(|_| unknown_handle(api, handle))?;
            let _ = self
                .device(d)
                .mem(api)
                .map(|mut m| m.map.insert(range.start().as_u64(), range.len_bytes(), Owner::Mapping));
            (rec, range)
        };
        if let Err(e) = self.backend.driver().map_physical(DeviceId(rec.device), rec.phys, 0, range) {
            // Undo the record. `relock`: three removals of what this call inserted above.
            let release = {
                let mut x = crate::sync::relock(&self.device(d).vmm);
                let _ = x.space.unmap(range.start().as_u64());
                if let Ok(mut m) = self.device(d).mem(api) {
                    m.map.remove(range.start().as_u64());
                }
                x.handles.unmapped(handle).then(|| {
                    x.recs.remove(&handle);
                    x.exported_handles.remove(&handle);
                })
            };
            if release.is_some() {
                let _ = self.backend.driver().free_physical(DeviceId(rec.device), rec.phys);
            }
            return Err(AclError::from_hal(e, api));
        }
        Ok(())
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
        if d >= self.device_count() {
            return Err(vmm_error(api, VmmError::NotMapped));
        }
        let (m, rec) = {
            // Lock order: `vmm` alone. The mapping is marked as going: a second unmap is
            // refused, and it still blocks any other mapping there until it is gone.
            let mut x = self.vmm_of(api, d)?;
            let m = x.space.mapping_at(ptr).cloned().ok_or_else(|| vmm_error(api, VmmError::NotMapped))?;
            let rec = *x.recs.get(&m.handle).ok_or_else(|| unknown_handle(api, m.handle))?;
            if !x.unmapping.insert(ptr) {
                return Err(vmm_error(api, VmmError::NotMapped));
            }
            (m, rec)
        };
        let unmapped = self.backend.driver().unmap_physical(DeviceId(rec.device), m.range);
        let free = {
            // Lock order: `vmm`, then `mem`. `relock`: one removal from `unmapping`, then the
            // removals of the mapping marked above, each a single step.
            let mut x = crate::sync::relock(&self.device(d).vmm);
            x.unmapping.remove(&ptr);
            unmapped.map_err(|e| AclError::from_hal(e, api))?;
            x.space.unmap(ptr).map_err(|e| vmm_error(api, e))?;
            if let Ok(mut mem) = self.device(d).mem(api) {
                mem.map.remove(m.range.start().as_u64());
            }
            if x.handles.unmapped(m.handle) {
                x.recs.remove(&m.handle);
                x.exported_handles.remove(&m.handle);
                Some(rec)
            } else {
                None
            }
        };
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
        let d = self.mapped_device(api, ptr)?;
        // Lock order: `vmm` alone.
        self.vmm_of(api, d)?.space.set_access(ptr, size, &list).map_err(|e| vmm_error(api, e))
    }

    /// The device whose VMM window holds `ptr`.
    fn mapped_device(&self, api: &str, ptr: u64) -> Result<u32> {
        match window_of(ptr) {
            Window::Device(d) if d < self.device_count() => Ok(d),
            _ => Err(vmm_error(api, VmmError::NotMapped)),
        }
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
        let d = self.mapped_device(api, ptr)?;
        // Lock order: `vmm` alone.
        self.vmm_of(api, d)?.space.access(ptr, loc).map(u64::from).map_err(|e| vmm_error(api, e))
    }

    /// `aclrtMemRetainAllocationHandle`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a mapping start.
    pub fn retain_handle(&self, api: &str, ptr: u64) -> Result<u64> {
        let d = self.mapped_device(api, ptr)?;
        // Lock order: `vmm` alone.
        let mut x = self.vmm_of(api, d)?;
        let h =
            x.space.mapping_at(ptr).map(|m| m.handle).ok_or_else(|| vmm_error(api, VmmError::NotMapped))?;
        x.handles.retain(h).map_err(|e| vmm_error(api, e))?;
        Ok(h)
    }

    /// `aclrtMemGetAllocationPropertiesFromHandle`: the properties as the reference reports
    /// them (`memAttr` rebuilt from page size and P2P, handle type NONE, PINNED, DEVICE).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an unknown handle.
    pub fn handle_props(&self, api: &str, handle: u64) -> Result<PhysProp> {
        let d = self.handle_dev(api, handle)?;
        // Lock order: `vmm` alone.
        let x = self.vmm_of(api, d)?;
        {
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
        }
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
        let d = self.handle_dev(api, handle)?;
        let already = |api: &str| {
            AclError::rt_invalid(format!(
                "{api}: handle {handle:#x} is already exported (a handle has exactly one shareable handle)"
            ))
        };
        let rec = {
            // Lock order: `vmm` alone; the backend exports with no lock held.
            let x = self.vmm_of(api, d)?;
            let h = *x.handles.get(handle).ok_or_else(|| unknown_handle(api, handle))?;
            let rec = *x.recs.get(&handle).ok_or_else(|| unknown_handle(api, handle))?;
            if h.origin == Origin::Imported {
                return Err(AclError::rt_invalid(format!(
                    "{api}: handle {handle:#x} was imported; only the owner exports"
                )));
            }
            if x.exported_handles.contains_key(&handle) {
                return Err(already(api));
            }
            rec
        };
        let name = self
            .backend
            .sharing()
            .export_physical(DeviceId(rec.device), rec.phys, ShareKind::Handle, flags == 1)
            .map_err(|e| share_error(api, e))?;
        let mut x = self.vmm_of(api, d)?;
        if x.exported_handles.contains_key(&handle) || x.handles.get(handle).is_none() {
            // Exported (or freed) by another thread meanwhile: withdraw this share.
            drop(x);
            let _ = self.backend.sharing().destroy_share(&name);
            return Err(already(api));
        }
        x.exported_handles.insert(handle, name);
        Ok(name)
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
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for an import into the exporting process,
    /// `ACL_ERROR_RT_PARAM_INVALID` for an unknown share. `device` may differ from the
    /// exporter's: the backend maps the exporter's memory there.
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
        // Lock order: `vmm` alone.
        Ok(self.vmm_of(api, device)?.new_handle(HandleRec { device, phys, p2p: false }, h))
    }

    /// Whether `[addr, +len)` of device `d` is memory mapped through VMM or an IPC import.
    ///
    /// # Errors
    ///
    /// 507000 when the device's VMM state is failed.
    pub(crate) fn vmm_contains_checked(&self, api: &str, d: u32, addr: u64, len: u64) -> Result<bool> {
        // Lock order: `vmm` alone.
        Ok(self.vmm_of(api, d)?.space.contains_range(addr, len.max(1)))
    }

    /// [`Self::vmm_contains_checked`], with a failed state answering no.
    pub(crate) fn vmm_contains(&self, d: u32, addr: u64, len: u64) -> bool {
        d < self.device_count() && self.vmm_contains_checked("vmm", d, addr, len).unwrap_or(false)
    }

    /// Drops everything VMM, IPC and peer access hold on device `d` (device reset): the tables
    /// are emptied under the lock, then the backend unmaps, withdraws and frees with no lock
    /// held. A failed (poisoned) state is not walked: closing the device releases its memory.
    pub(crate) fn vmm_teardown(&self, d: u32) {
        let drv = self.backend.driver();
        let sharing = self.backend.sharing();
        let Ok(mut x) = self.device(d).vmm.lock() else { return };
        let old = std::mem::replace(&mut *x, VmmState::new(d));
        drop(x);
        for m in old.space.mappings() {
            if let Some(rec) = old.recs.get(&m.handle) {
                let _ = drv.unmap_physical(DeviceId(rec.device), m.range);
            }
        }
        for name in old.exported_keys.keys() {
            let _ = sharing.destroy_share(name);
        }
        for rec in old.recs.values() {
            let _ = drv.free_physical(DeviceId(rec.device), rec.phys);
        }
        // Other devices' grants to this one are theirs: a reset of this device leaves them
        // (a later aclrtDeviceDisablePeerAccess on the granting device still finds its grant).
    }
}
