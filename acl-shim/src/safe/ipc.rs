//! IPC memory by key: one process exports a device buffer under a key, others import it
//! (`aclrtIpcMemGetExportKey`, `aclrtIpcMemSetImportPid`, `aclrtIpcMemImportByKey`,
//! `aclrtIpcMemClose`).

use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use hal::ShareName;

use super::buffer::Alloc;
use super::device::DeviceInner;
use super::pod::Pod;
use super::{Device, DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, Result, Runtime};
use crate::api::ipc::{key_name, KEY_LEN};

/// The keys this process has imported through [`IpcImport`] and not closed yet.
static IMPORTED: Mutex<BTreeSet<ShareName>> = Mutex::new(BTreeSet::new());

fn imported() -> std::sync::MutexGuard<'static, BTreeSet<ShareName>> {
    // Relock: every update is one insert or one remove of a key, all-or-nothing.
    crate::sync::relock(&IMPORTED)
}

impl Runtime {
    /// This process's id as the runtime reports it (`aclrtDeviceGetBareTgid`): the pid an
    /// exporter puts on its whitelist ([`IpcExport::new`], [`IpcExport::allow`]).
    pub fn process_id(&self) -> u32 {
        self.shared.rt.backend().sharing().process_id()
    }
}

/// A device buffer exported to other processes under a key (`aclrtIpcMemGetExportKey`).
///
/// The export borrows the buffer, so the buffer cannot be freed while other processes may
/// still import it. Dropping the export closes the key (`aclrtIpcMemClose` in the exporter
/// destroys the share): the documented order is that importers close their imports first,
/// then the exporter closes the key, then it frees the memory — the last two steps are
/// enforced by the borrow:
///
/// ```compile_fail,E0505
/// # use ascendcl::safe::{DeviceBuffer, IpcExport};
/// fn f(buf: DeviceBuffer<u8>) {
///     let export = IpcExport::unrestricted(&buf).unwrap();
///     buf.free().unwrap(); // error: cannot move out of `buf` because it is borrowed
///     drop(export);
/// }
/// ```
///
/// Memory another process imported stays valid there until that process closes it.
pub struct IpcExport<'b> {
    device: Arc<DeviceInner>,
    name: ShareName,
    size: u64,
    live: bool,
    _buffer: PhantomData<&'b ()>,
}

impl fmt::Debug for IpcExport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcExport").field("key", &self.key()).field("size", &self.size).finish()
    }
}

impl<'b> IpcExport<'b> {
    /// Exports all of `buffer`, importable only by the processes in `pids`
    /// (`aclrtIpcMemSetImportPid`; more may be added with [`IpcExport::allow`]).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when the buffer is not a whole page-aligned allocation
    /// (buffers of at most 64 KiB share pages and cannot be exported).
    pub fn new<T: Pod>(buffer: &'b DeviceBuffer<T>, pids: &[u32]) -> Result<Self> {
        let export = Self::export(buffer, 0)?;
        if !pids.is_empty() {
            export.allow(pids)?;
        }
        Ok(export)
    }

    /// Exports all of `buffer` to every process
    /// (`ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION`).
    ///
    /// # Errors
    ///
    /// As [`IpcExport::new`].
    pub fn unrestricted<T: Pod>(buffer: &'b DeviceBuffer<T>) -> Result<Self> {
        Self::export(buffer, 1)
    }

    fn export<T: Pod>(buffer: &'b DeviceBuffer<T>, flags: u64) -> Result<Self> {
        const API: &str = "IpcExport::new";
        let device = &buffer.alloc.device;
        let size = buffer.size_bytes();
        let name = device.bind(API)?.ipc_export(API, buffer.addr(), size, KEY_LEN, flags)?;
        Ok(Self { device: Arc::clone(device), name, size, live: true, _buffer: PhantomData })
    }

    /// Adds `pids` to the whitelist (`aclrtIpcMemSetImportPid`).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a pid above `i32::MAX`; the backend's refusal otherwise.
    pub fn allow(&self, pids: &[u32]) -> Result<()> {
        const API: &str = "IpcExport::allow";
        let list = pids
            .iter()
            .map(|&p| i32::try_from(p).map_err(|_| Error::invalid(format!("{API}: pid {p} is out of range"))))
            .collect::<Result<Vec<_>>>()?;
        self.device.bind(API)?.set_share_pids(API, &self.name, &list)
    }

    /// The key other processes import with [`IpcImport::open`].
    pub fn key(&self) -> &str {
        self.name.as_str()
    }

    /// The exported size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// Closes the key now, reporting errors; dropping does the same and ignores them.
    ///
    /// # Errors
    ///
    /// The runtime's refusal (the device was reset under it, for example).
    pub fn close(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        const API: &str = "IpcExport::drop";
        if !std::mem::replace(&mut self.live, false) {
            return Ok(());
        }
        self.device.bind(API)?.ipc_close(API, &self.name)
    }
}

impl Drop for IpcExport<'_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Device memory another process exported, mapped into this one
/// (`aclrtIpcMemImportByKey`); closed on drop (`aclrtIpcMemClose`, after waiting for every
/// stream that used it) — close imports before the exporter closes its key.
///
/// A key is imported at most once at a time per process through this type (the runtime's
/// close drops the *oldest* import of a key, which would be another object's). Slices
/// ([`IpcImport::slice`], [`IpcImport::slice_mut`]) work with every copy of
/// [`super::Stream`]; like VMM memory they are shared with the exporter, so any stream of the
/// device may use them.
pub struct IpcImport {
    view: Alloc,
    name: ShareName,
    live: bool,
}

impl fmt::Debug for IpcImport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcImport")
            .field("key", &self.key())
            .field("addr", &format_args!("{:#x}", self.view.ptr))
            .field("size", &self.view.bytes)
            .finish()
    }
}

impl IpcImport {
    /// Imports the memory exported under `key` into `device` and checks that at least
    /// `size` bytes of it are mapped (the exporter tells the size with the key).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an unknown or closed key, a key this process already
    /// imports, or a `size` larger than the shared memory; `ACL_ERROR_RT_NO_PERMISSION` when
    /// this process is not on the whitelist; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in the
    /// exporting process itself or on another device than the exporter's.
    pub fn open(device: &Device, key: &str, size: u64) -> Result<Self> {
        const API: &str = "IpcImport::open";
        let name = key_name(API, key.as_bytes())?;
        let mut keys = imported();
        if keys.contains(&name) {
            return Err(Error::rt_invalid(format!("{API}: key {key:?} is already imported by this process")));
        }
        let rt = device.inner.bind(API)?;
        let ptr = rt.ipc_import(API, &name, 0)?;
        if size == 0 || !rt.vmm_contains(device.inner.id, ptr, size) {
            let _ = rt.ipc_close(API, &name);
            return Err(Error::rt_invalid(format!(
                "{API}: key {key:?} shares fewer than {size} bytes (or size is 0)"
            )));
        }
        keys.insert(name);
        Ok(Self { view: Alloc::view(Arc::clone(&device.inner), ptr, size), name, live: true })
    }

    /// The key.
    pub fn key(&self) -> &str {
        self.name.as_str()
    }

    /// The address the memory is mapped at in this process.
    pub fn addr(&self) -> u64 {
        self.view.ptr
    }

    /// The size in bytes (as given to [`IpcImport::open`]).
    pub fn size_bytes(&self) -> u64 {
        self.view.bytes
    }

    /// `len` elements from byte `offset`, shared.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when they do not fit or `offset` is not a multiple of the
    /// element size.
    pub fn slice<T: Pod>(&self, offset: u64, len: usize) -> Result<DeviceSlice<'_, T>> {
        self.view.slice_at("IpcImport::slice", offset, len)
    }

    /// `len` elements from byte `offset`, as the destination of copies.
    ///
    /// # Errors
    ///
    /// As [`IpcImport::slice`].
    pub fn slice_mut<T: Pod>(&mut self, offset: u64, len: usize) -> Result<DeviceSliceMut<'_, T>> {
        self.view.slice_mut_at("IpcImport::slice_mut", offset, len)
    }

    /// Closes the import now, reporting errors; dropping does the same and ignores them.
    ///
    /// # Errors
    ///
    /// The failure of a stream that used the memory, or the runtime's refusal.
    pub fn close(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        const API: &str = "IpcImport::drop";
        if !std::mem::replace(&mut self.live, false) {
            return Ok(());
        }
        let waited = self.view.wait_users(API);
        let closed = self.view.device.bind(API).and_then(|rt| rt.ipc_close(API, &self.name));
        imported().remove(&self.name);
        waited.and(closed)
    }
}

impl Drop for IpcImport {
    fn drop(&mut self) {
        let _ = self.release();
    }
}
