//! IPC memory by key (`aclrtIpcMemGetExportKey`, `aclrtIpcMemImportByKey`,
//! `aclrtIpcMemSetImportPid`, `aclrtIpcMemSetAttr`, `aclrtIpcMemClose`), with the reference's
//! rules and codes.
//!
//! The exporting process names whole `aclrtMalloc` allocations; the backend's registry holds
//! the share and checks the whitelist against the importer's real pid; an importer maps the
//! shared frames into the VMM half of its device window (see [`crate::state::vmm`]). Like the
//! reference runtime, each process keeps a map from key to its imported addresses: a key may be
//! imported several times, and `aclrtIpcMemClose` closes the oldest import, or destroys the
//! share when this process exported it and holds no import.
//!
//! # Locking
//!
//! The keys and imports are in each device's VMM state ([`crate::state::vmm::VmmState`]); its lock is
//! taken alone (one device at a time), and never across a backend call.

use hal::{DeviceAddr, DeviceId, PageSize, ShareKind, ShareName, VaRange};
use mm::vmm::Origin;

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::memory::Owner;
use crate::state::vmm::{share_error, vmm_error, Import, GRANULARITY_1G};

/// The key buffer length the API requires (64 characters and a NUL).
pub const KEY_LEN: u64 = mm::ipc::KEY_BUFFER_BYTES as u64;

/// Parses a key the caller passed.
///
/// # Errors
///
/// `ACL_ERROR_RT_PARAM_INVALID` for an empty, too long or non-printable key.
pub fn key_name(api: &str, key: &[u8]) -> Result<ShareName> {
    ShareName::try_new(key).ok_or_else(|| {
        AclError::rt_invalid(format!("{api}: key is not an IPC key (1 to 64 printable characters)"))
    })
}

impl Runtime {
    /// `aclrtIpcMemGetExportKey`: exports `[ptr, +size)` of a whole `aclrtMalloc` allocation.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for size or length 0, a buffer shorter than 65, flags
    /// above 1, a pool block, or a pointer that is not a live allocation's start (or a range
    /// past its end).
    pub fn ipc_export(&self, api: &str, ptr: u64, size: u64, len: u64, flags: u64) -> Result<ShareName> {
        if size == 0 {
            return Err(AclError::rt_invalid(format!("{api}: size must be greater than 0")));
        }
        if len == 0 || len < KEY_LEN {
            return Err(AclError::rt_invalid(format!("{api}: len {len} must be {KEY_LEN} (the key buffer)")));
        }
        if flags > 1 {
            return Err(AclError::rt_invalid(format!(
                "{api}: flags {flags} must be ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT (0) or _DISABLE_PID_VALIDATION (1)"
            )));
        }
        let (d, info) = self.device_info_of(api, ptr)?.ok_or_else(|| {
            AclError::rt_invalid(format!("{api}: devPtr {ptr:#x} is not live device memory from aclrtMalloc"))
        })?;
        if self.pool_block_of(api, ptr)?.is_some() {
            // A pool block is not an allocation of its own: its memory goes back to the pool
            // at a free and is handed out again, so a key to it would outlive what it names.
            return Err(AclError::rt_invalid(format!(
                "{api}: devPtr {ptr:#x} is a stream-ordered pool block; keys name whole aclrtMalloc allocations"
            )));
        }
        if info.base.as_u64() != ptr || info.is_slab {
            return Err(AclError::rt_invalid(format!(
                "{api}: devPtr {ptr:#x} is not the start of a page-aligned allocation (small allocations share pages; allocate at least 64 KiB + 1)"
            )));
        }
        if size > info.usable_bytes {
            return Err(AclError::rt_invalid(format!(
                "{api}: size {size} is larger than the allocation ({} bytes)",
                info.usable_bytes
            )));
        }
        let len_bytes = crate::runtime::round_up(size, PageSize::Normal.bytes())
            .ok_or_else(|| AclError::rt_invalid(format!("{api}: size overflows")))?;
        let range = VaRange::try_new(DeviceAddr(ptr), len_bytes).map_err(|e| AclError::from_hal(e, api))?;
        let name = self
            .backend
            .sharing()
            .export_range(DeviceId(d), range, ShareKind::Key, flags == 1)
            .map_err(|e| share_error(api, e))?;
        // Lock order: `vmm` alone.
        match self.vmm_of(api, d) {
            Ok(mut x) => {
                x.exported_keys.insert(name, ptr);
                Ok(name)
            }
            Err(e) => {
                let _ = self.backend.sharing().destroy_share(&name);
                Err(e)
            }
        }
    }

    /// `aclrtIpcMemImportByKey`: maps the share into this process and returns its address.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for flags above 1 or an unknown key;
    /// `ACL_ERROR_RT_NO_PERMISSION` when this process is not on the whitelist;
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in the exporting process itself. The current device
    /// may be another than the exporter's: the import maps the exporter's memory into it.
    pub fn ipc_import(&self, api: &str, name: &ShareName, flags: u64) -> Result<u64> {
        if flags > 1 {
            return Err(AclError::rt_invalid(format!(
                "{api}: flags {flags} must be ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT (0) or _ENABLE_PEER_ACCESS (1)"
            )));
        }
        let d = self.current_device(api)?;
        let handle = self.import_handle(api, name, d)?;
        let mapped = self.map_import(api, name, d, handle);
        if mapped.is_err() {
            let _ = self.free_physical(api, handle);
        }
        mapped
    }

    /// Reserves VA for the imported `handle` on device `d` and maps it there (the backend call
    /// with no lock held; the reservation and the mapping are recorded first and undone on
    /// failure).
    fn map_import(&self, api: &str, name: &ShareName, d: u32, handle: u64) -> Result<u64> {
        let (rec, range) = {
            // Lock order: `vmm`, then `mem`.
            let mut x = self.vmm_of(api, d)?;
            let h = *x.handles.get(handle).ok_or_else(|| crate::state::vmm::unknown_handle(api, handle))?;
            let rec = *x.recs.get(&handle).ok_or_else(|| crate::state::vmm::unknown_handle(api, handle))?;
            let gran =
                if h.page_size == PageSize::Giant { GRANULARITY_1G } else { crate::state::vmm::GRANULARITY };
            let r = x.space.reserve(h.len_bytes, gran, None).map_err(|e| vmm_error(api, e))?;
            let range = VaRange::try_new(r.start(), h.len_bytes).map_err(|e| AclError::from_hal(e, api))?;
            if let Err(e) = x.space.insert_map(range, handle, d, Origin::Imported) {
                let _ = x.space.release(r.start().as_u64());
                return Err(vmm_error(api, e));
            }
            let _ = x.handles.mapped(handle);
            if let Ok(mut m) = self.device(d).mem(api) {
                let _ = m.map.insert(range.start().as_u64(), range.len_bytes(), Owner::Mapping);
            }
            (rec, range)
        };
        let start = range.start().as_u64();
        if let Err(e) = self.backend.driver().map_physical(DeviceId(d), rec.phys, 0, range) {
            // `relock`: removals of exactly what this call recorded above.
            let mut x = crate::sync::relock(&self.device(d).vmm);
            let _ = x.space.unmap(start);
            let _ = x.space.release(start);
            let _ = x.handles.unmapped(handle);
            if let Ok(mut m) = self.device(d).mem(api) {
                m.map.remove(start);
            }
            return Err(AclError::from_hal(e, api));
        }
        let order = crate::state::vmm::next_import_order();
        self.vmm_of(api, d)?.imports.entry(*name).or_default().push(Import {
            device: d,
            va: range,
            handle,
            order,
        });
        Ok(start)
    }

    /// `aclrtIpcMemClose`: closes this process's oldest import of `name`, or destroys the share
    /// when this process exported it.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when this process neither imported nor exported `name`.
    pub fn ipc_close(&self, api: &str, name: &ShareName) -> Result<()> {
        // The oldest import over every device. Lock order: one device's `vmm` at a time.
        let mut oldest: Option<Import> = None;
        for d in 0..self.device_count() {
            let x = self.vmm_of(api, d)?;
            if let Some(i) = x.imports.get(name).and_then(|l| l.first()) {
                if oldest.is_none_or(|o| i.order < o.order) {
                    oldest = Some(*i);
                }
            }
        }
        let import = match oldest {
            Some(i) => {
                let mut x = self.vmm_of(api, i.device)?;
                let list = x.imports.get_mut(name);
                let taken =
                    list.and_then(|l| l.iter().position(|j| j.order == i.order).map(|at| l.remove(at)));
                if x.imports.get(name).is_some_and(Vec::is_empty) {
                    x.imports.remove(name);
                }
                taken
            }
            None => None,
        };
        if let Some(i) = import {
            let va = i.va.start().as_u64();
            self.unmap_mem(api, va)?;
            let _ = self.vmm_of(api, i.device).map(|mut x| x.space.release(va));
            return self.free_physical(api, i.handle);
        }
        let mut exported = false;
        for d in 0..self.device_count() {
            if self.vmm_of(api, d)?.exported_keys.remove(name).is_some() {
                exported = true;
                break;
            }
        }
        if exported {
            return self.backend.sharing().destroy_share(name).map_err(|e| share_error(api, e));
        }
        Err(AclError::rt_invalid(format!(
            "{api}: key {:?} was neither imported nor exported by this process (or is already closed)",
            name.as_str()
        )))
    }

    /// `aclrtIpcMemSetAttr`: the access link of a share (A3 and 950 only).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an unknown type or value; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT`
    /// on A2; `ACL_ERROR_RT_PARAM_INVALID` for an unknown key.
    pub fn ipc_set_attr(&self, api: &str, name: &ShareName, ty: u32, attr: u64) -> Result<()> {
        if ty != 0 {
            return Err(AclError::invalid(format!(
                "{api}: type {ty} must be ACL_RT_IPC_MEM_ATTR_ACCESS_LINK (0)"
            )));
        }
        if attr > 3 {
            return Err(AclError::invalid(format!(
                "{api}: access link {attr} must be SIO (0), HCCS (1) or UB (2, 3)"
            )));
        }
        if self.soc == hal::SocProfile::A2 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!("{api}: access links are chosen only on A3 and 950, not {}", self.soc.soc_name()),
            ));
        }
        let info = self.backend.sharing().share_info(name).map_err(|e| share_error(api, e))?;
        // Stored with the exporting device (of this process, or the device the share's memory
        // is on): the link every later import of the key is mapped over. On the software NPU
        // the DMA engine reaches every device the same way, so the choice changes no copy.
        let d = (0..self.device_count())
            .find(|&d| self.vmm_of(api, d).is_ok_and(|x| x.exported_keys.contains_key(name)))
            .unwrap_or(info.physical_device.min(self.device_count().saturating_sub(1)));
        // Lock order: `vmm` alone.
        self.vmm_of(api, d)?.ipc_links.insert(*name, attr);
        Ok(())
    }

    /// The access link `aclrtIpcMemSetAttr` stored for `name` (SIO, the default, when none).
    pub fn ipc_link(&self, api: &str, name: &ShareName) -> Result<u64> {
        for d in 0..self.device_count() {
            // Lock order: one device's `vmm` at a time.
            if let Some(&l) = self.vmm_of(api, d)?.ipc_links.get(name) {
                return Ok(l);
            }
        }
        Ok(0)
    }
}
