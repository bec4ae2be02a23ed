//! Notifies and IPC notifies (fact sheet §3): create, destroy, record, wait-and-reset (with a
//! timeout), ids, batch reset, export key, import-pid whitelist, import by key; count notifies
//! (Ascend 950 only, as in CANN; 207000 on the other profiles): a host-held count whose
//! records, waits and resets are runtime host operations in stream order.
//!
//! A notify is a device word ([`crate::state::notify`]): a record is a `ValueWrite` of 1 on the
//! recording stream, a wait-and-reset without a timeout a `ValueWait` for 1 followed by a
//! `ValueWrite` of 0 on the waiting stream (the device holds the stream, no thread waits), and
//! one with a timeout an internal operation on the waiting stream that polls the word and,
//! when the timeout passes first, fails the stream's next synchronisation with
//! `ACL_ERROR_RT_WAIT_TIMEOUT` (`crate::api::stream_ctl`). An exported notify's word begins an
//! allocation of its own that is shared exactly as IPC memory is (`crate::api::ipc`): the same
//! key format, whitelist (checked against the importer's real pid) and import; the word of an
//! importer is its mapping of that allocation, and waits on it are refused (CANN's waits are
//! owner-only).
//!
//! # Limits
//!
//! The flag word cannot count: two records before a wait release one wait, and a record that
//! lands between a wait's release and its reset is lost (CANN's hardware resets atomically).
//! Tasks still queued on a destroyed notify touch freed memory (the sim fails them; CANN says
//! destroy does not wait for them).
//!
//! # Locking
//!
//! No lock of this module; a notify's word lock (a leaf) is taken alone.

use hal::{DeviceAddr, DeviceId, ShareName, TaskDesc, WaitCompare};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::handles::{Handle, Kind};
use crate::runtime::Runtime;
use crate::state::memory::MallocApi;
use crate::state::notify::{NotifyObj, Share, Word};

/// `ACL_ERROR_RT_NO_NOTIFY_RESOURCE`: the device has no notify left.
pub const ACL_ERROR_RT_NO_NOTIFY_RESOURCE: i32 = 207_009;

/// `ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION`.
pub const EXPORT_NO_PID_CHECK: u64 = 0x2;

/// Bytes of an exported notify's allocation: page-aligned allocations start at 64 KiB + 1.
const SHARED_BYTES: u64 = (64 << 10) + 1;

fn no_notify(api: &str, h: u64) -> AclError {
    AclError::new(
        ACL_ERROR_RT_INVALID_HANDLE,
        format!("{api}: notify {h:#x} is not a live notify of this process (destroyed, made before the last aclInit, or never created)"),
    )
}

impl Runtime {
    /// The most notifies of one device on this SoC (CANN's documented limits).
    fn notify_limit(&self) -> u32 {
        match self.soc() {
            hal::SocProfile::Ascend950 => crate::state::notify::MAX_NOTIFIES,
            _ => 8192,
        }
    }

    /// Resolves a notify handle (NULL was refused by the caller).
    fn notify(&self, api: &str, h: u64) -> Result<std::sync::Arc<NotifyObj>> {
        let d = Handle::device_of(h, Kind::Notify).filter(|&d| d < self.device_count());
        d.and_then(|d| self.device(d).notifies.get(h)).ok_or_else(|| no_notify(api, h))
    }

    /// A zeroed device allocation of `bytes` on device `d` (current).
    fn zeroed(&self, api: &str, d: u32, bytes: u64) -> Result<u64> {
        let p = self.malloc(api, bytes, 0, MallocApi::Malloc, &[])?;
        if let Err(e) = self.backend().driver().copy_to_device(DeviceId(d), DeviceAddr(p), &[0u8; 8]) {
            let _ = self.free_device_now(api, d, p);
            return Err(AclError::from_hal(e, api));
        }
        Ok(p)
    }

    /// `aclrtCreateNotify(&notify, flag)` on the current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a flag other than 0 or 1; `ACL_ERROR_RT_CONTEXT_NULL`
    /// without a current device; `ACL_ERROR_RT_NO_NOTIFY_RESOURCE` when the device has no
    /// notify left.
    pub fn create_notify(&self, api: &str, flag: u64) -> Result<u64> {
        if flag > 1 {
            return Err(AclError::rt_invalid(format!(
                "{api}: flag {flag:#x} must be ACL_NOTIFY_DEFAULT (0) or ACL_NOTIFY_DEVICE_USE_ONLY (1)"
            )));
        }
        let d = self.current_device(api)?;
        let limit = self.notify_limit();
        let full = || {
            AclError::new(
                ACL_ERROR_RT_NO_NOTIFY_RESOURCE,
                format!(
                    "{api}: device {d} has no notify left (at most {limit} on {})",
                    self.soc().soc_name()
                ),
            )
        };
        let t = &self.device(d).notifies;
        if t.len() >= limit {
            return Err(full());
        }
        let word = self.zeroed(api, d, 8)?;
        t.insert(d, word, Share::Local).ok_or_else(|| {
            let _ = self.free_device_now(api, d, word);
            full()
        })
    }

    /// `aclrtDestroyNotify`: frees the word (an exported notify's share goes with it, an
    /// imported one is closed); queued tasks are not waited for.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device; `ACL_ERROR_RT_INVALID_HANDLE`.
    pub fn destroy_notify(&self, api: &str, h: u64) -> Result<()> {
        let _ = self.current_device(api)?;
        let n = self.notify(api, h)?;
        let n = self.device(n.device).notifies.remove(h).ok_or_else(|| no_notify(api, h))?;
        let w = n.word();
        match w.share {
            Share::Local => self.free_device_now(api, n.device, w.addr),
            Share::Exported(name) => {
                let r = self.ipc_close(api, &name);
                self.free_device_now(api, n.device, w.addr).and(r)
            }
            Share::Imported(name) => self.ipc_close(api, &name),
        }
    }

    /// `aclrtRecordNotify(notify, stream)`: sets the notify in stream order.
    ///
    /// # Errors
    ///
    /// Dead handles; `ACL_ERROR_RT_STREAM_CONTEXT` for a stream of another device.
    pub fn record_notify(&self, api: &str, h: u64, stream: u64) -> Result<()> {
        let n = self.notify(api, h)?;
        let s = self.submit_stream(api, stream)?;
        let w = n.word();
        self.submit_task(api, &s, TaskDesc::ValueWrite { dst: DeviceAddr(w.addr), value: 1 }).map(|_| ())
    }

    /// `aclrtWaitAndResetNotify(notify, stream, timeout)`: holds the stream until the notify
    /// is set, then clears it; `timeout` in seconds (0 and `UINT32_MAX`: forever).
    ///
    /// # Errors
    ///
    /// Dead handles; `ACL_ERROR_RT_PARAM_INVALID` for an imported notify (only its owner
    /// waits).
    pub fn wait_notify(&self, api: &str, h: u64, stream: u64, timeout: u32) -> Result<()> {
        let n = self.notify(api, h)?;
        let s = self.submit_stream(api, stream)?;
        let w = n.word();
        if let Share::Imported(_) = w.share {
            return Err(AclError::rt_invalid(format!(
                "{api}: notify {h:#x} was imported; only the process that created it waits on it (importers record)"
            )));
        }
        if timeout == 0 || timeout == u32::MAX {
            let addr = DeviceAddr(w.addr);
            self.submit_task(api, &s, TaskDesc::ValueWait { addr, value: 1, compare: WaitCompare::Equal })?;
            return self.submit_task(api, &s, TaskDesc::ValueWrite { dst: addr, value: 0 }).map(|_| ());
        }
        self.submit_notify_wait(api, &s, w.addr, u64::from(timeout) * 1000)
    }

    /// `aclrtGetNotifyId`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device; a dead handle.
    pub fn notify_id(&self, api: &str, h: u64) -> Result<u32> {
        let _ = self.current_device(api)?;
        Ok(self.notify(api, h)?.id)
    }

    /// `aclrtNotifyBatchReset`: clears each notify now, in order, stopping at the first
    /// failure (synchronous, as CANN's reset through the default stream is).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an empty list; the first dead handle.
    pub fn batch_reset_notifies(&self, api: &str, handles: &[u64]) -> Result<()> {
        if handles.is_empty() {
            return Err(AclError::rt_invalid(format!("{api}: num must be greater than 0")));
        }
        let _ = self.current_device(api)?;
        for (i, &h) in handles.iter().enumerate() {
            if h == 0 {
                return Err(AclError::rt_invalid(format!("{api}: notifies[{i}] is NULL")));
            }
            let n = self.notify(api, h)?;
            let w = n.word();
            self.backend()
                .driver()
                .copy_to_device(DeviceId(n.device), DeviceAddr(w.addr), &[0u8; 8])
                .map_err(|e| AclError::from_hal(e, api))?;
        }
        Ok(())
    }

    /// `aclrtNotifyGetExportKey(notify, key, len, flags)`: moves the notify's word into an
    /// allocation of its own and exports it as IPC memory; returns the key.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for `len` 0 or below 65 or flags other than 0 and 0x2;
    /// `ACL_ERROR_RT_INTERNAL_ERROR` for a notify exported or imported already.
    pub fn notify_export(&self, api: &str, h: u64, len: u64, flags: u64) -> Result<ShareName> {
        if len == 0 {
            return Err(AclError::rt_invalid(format!("{api}: len must be greater than 0")));
        }
        if flags != 0 && flags != EXPORT_NO_PID_CHECK {
            return Err(AclError::rt_invalid(format!(
                "{api}: flags {flags:#x} must be ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT (0) or _DISABLE_PID_VALIDATION (0x2)"
            )));
        }
        if len < crate::api::ipc::KEY_LEN {
            return Err(AclError::rt_invalid(format!(
                "{api}: len {len} is shorter than the key ({} bytes with its NUL)",
                crate::api::ipc::KEY_LEN
            )));
        }
        let n = self.notify(api, h)?;
        let old = n.word();
        if old.share != Share::Local {
            return Err(AclError::new(
                ACL_ERROR_RT_INTERNAL_ERROR,
                format!("{api}: notify {h:#x} is already an IPC notify (exported or imported); a notify is exported once"),
            ));
        }
        let d = n.device;
        let mut cur = [0u8; 8];
        let drv = self.backend().driver();
        drv.copy_from_device(DeviceId(d), &mut cur, DeviceAddr(old.addr))
            .map_err(|e| AclError::from_hal(e, api))?;
        let page = self.zeroed(api, d, SHARED_BYTES)?;
        let exported = drv
            .copy_to_device(DeviceId(d), DeviceAddr(page), &cur)
            .map_err(|e| AclError::from_hal(e, api))
            .and_then(|()| self.ipc_export(api, page, 8, crate::api::ipc::KEY_LEN, u64::from(flags != 0)));
        let name = match exported {
            Ok(name) => name,
            Err(e) => {
                let _ = self.free_device_now(api, d, page);
                return Err(e);
            }
        };
        if !n.replace_word(old, Word { addr: page, share: Share::Exported(name) }) {
            let _ = self.ipc_close(api, &name);
            let _ = self.free_device_now(api, d, page);
            return Err(AclError::new(
                ACL_ERROR_RT_INTERNAL_ERROR,
                format!("{api}: notify {h:#x} was exported by another thread meanwhile"),
            ));
        }
        let _ = self.free_device_now(api, d, old.addr);
        Ok(name)
    }

    /// `aclrtNotifySetImportPid(notify, pids, num)`: whitelists `pids` for the exported notify.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an empty list or a notify that is not exported (or was
    /// exported without a whitelist); `ACL_ERROR_RT_CONTEXT_NULL` without a current device.
    pub fn notify_set_pids(&self, api: &str, h: u64, pids: &[i32]) -> Result<()> {
        if pids.is_empty() {
            return Err(AclError::rt_invalid(format!("{api}: num must be greater than 0")));
        }
        let _ = self.current_device(api)?;
        let n = self.notify(api, h)?;
        match n.word().share {
            Share::Exported(name) => self.set_share_pids(api, &name, pids),
            _ => Err(AclError::rt_invalid(format!(
                "{api}: notify {h:#x} is not exported by this process (call aclrtNotifyGetExportKey first)"
            ))),
        }
    }

    /// `aclrtNotifySetImportPidInterServer`: A3 only (SuperPOD whitelists); every server of
    /// the software NPU is this machine, so each entry's pids join the whitelist.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on other SoCs; as [`Runtime::notify_set_pids`].
    pub fn notify_set_pids_inter_server(&self, api: &str, h: u64, entries: &[Vec<i32>]) -> Result<()> {
        if self.soc() != hal::SocProfile::A3 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!("{api}: inter-server whitelists exist only on A3, not {}", self.soc().soc_name()),
            ));
        }
        if entries.is_empty() {
            return Err(AclError::rt_invalid(format!("{api}: num must be greater than 0")));
        }
        for e in entries {
            self.notify_set_pids(api, h, e)?;
        }
        Ok(())
    }

    /// `aclrtNotifyImportByKey(&notify, key, flags)`: imports an exported notify on the
    /// current device (whitelist as for IPC memory).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for flags above 3 or an unknown key;
    /// `ACL_ERROR_RT_NO_PERMISSION` when this process is not whitelisted;
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in the exporting process itself.
    pub fn notify_import(&self, api: &str, key: &[u8], flags: u64) -> Result<u64> {
        if flags > 3 {
            return Err(AclError::rt_invalid(format!(
                "{api}: flags {flags:#x} must be ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT (0) or _ENABLE_PEER_ACCESS (0x2)"
            )));
        }
        let d = self.current_device(api)?;
        let name = crate::api::ipc::key_name(api, key)?;
        let t = &self.device(d).notifies;
        if t.len() >= self.notify_limit() {
            return Err(AclError::new(
                ACL_ERROR_RT_NO_NOTIFY_RESOURCE,
                format!("{api}: device {d} has no notify left"),
            ));
        }
        let va = self.ipc_import(api, &name, 0)?;
        t.insert(d, va, Share::Imported(name)).ok_or_else(|| {
            let _ = self.ipc_close(api, &name);
            AclError::new(ACL_ERROR_RT_NO_NOTIFY_RESOURCE, format!("{api}: device {d} has no notify left"))
        })
    }
}

/// What an `aclrtCntNotifyWaitWithTimeout` waits for (`aclrtCntNotifyWaitInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CntWaitInfo {
    /// `aclrtCntNotifyWaitMode` (0 less, 1 equal, 2 bigger, 3 bigger or equal, 4 bitmask).
    pub mode: u32,
    /// The operand.
    pub value: u32,
    /// Seconds (0: forever).
    pub timeout: u32,
    /// Zero the count when the wait is released.
    pub clear: bool,
}

/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for a count notify on a SoC without them.
fn no_cnt_notify(api: &str, soc: hal::SocProfile) -> AclError {
    AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!("{api}: count notifies exist only on Ascend 950, not {}", soc.soc_name()),
    )
}

fn no_cnt(api: &str, h: u64) -> AclError {
    AclError::new(
        ACL_ERROR_RT_INVALID_HANDLE,
        format!("{api}: count notify {h:#x} is not a live count notify of this process"),
    )
}

impl Runtime {
    fn cnt_soc(&self, api: &str) -> Result<()> {
        if self.soc() != hal::SocProfile::Ascend950 {
            return Err(no_cnt_notify(api, self.soc()));
        }
        Ok(())
    }

    fn cnt_notify(&self, api: &str, h: u64) -> Result<std::sync::Arc<crate::state::notify::CntNotify>> {
        if h == 0 {
            return Err(AclError::rt_invalid(format!("{api}: cntNotify is NULL")));
        }
        let d = Handle::device_of(h, Kind::Other).filter(|&d| d < self.device_count());
        d.and_then(|d| self.device(d).notifies.cnt(h)).ok_or_else(|| no_cnt(api, h))
    }

    /// `aclrtCntNotifyCreate` (Ascend 950): a count notify of the current device, count 0.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on other SoCs; `ACL_ERROR_RT_PARAM_INVALID` for a
    /// flag other than 0; `ACL_ERROR_RT_NO_NOTIFY_RESOURCE` when the device has none left.
    pub fn create_cnt_notify(&self, api: &str, flag: u64) -> Result<u64> {
        self.cnt_soc(api)?;
        if flag != 0 {
            return Err(AclError::rt_invalid(format!("{api}: flag {flag:#x} is reserved and must be 0")));
        }
        let d = self.current_device(api)?;
        let t = &self.device(d).notifies;
        let full = || {
            AclError::new(
                ACL_ERROR_RT_NO_NOTIFY_RESOURCE,
                format!("{api}: device {d} has no count notify left"),
            )
        };
        if t.cnt_len() >= self.notify_limit() {
            return Err(full());
        }
        t.insert_cnt().ok_or_else(full)
    }

    /// `aclrtCntNotifyDestroy`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a dead count notify.
    pub fn destroy_cnt_notify(&self, api: &str, h: u64) -> Result<()> {
        self.cnt_soc(api)?;
        let n = self.cnt_notify(api, h)?;
        let _ = n;
        let d = Handle::device_of(h, Kind::Other).unwrap_or(0);
        self.device(d).notifies.remove_cnt(h).map(|_| ()).ok_or_else(|| no_cnt(api, h))
    }

    /// `aclrtCntNotifyRecord(n, stream, {mode, value})` in stream order.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a mode other than 0, 1, 2, 4.
    pub fn record_cnt_notify(&self, api: &str, h: u64, stream: u64, mode: u32, value: u32) -> Result<()> {
        self.cnt_soc(api)?;
        if !matches!(mode, 0 | 1 | 2 | 4) {
            return Err(AclError::rt_invalid(format!(
                "{api}: mode {mode} is not an aclrtCntNotifyRecordMode (0 set, 1 add, 2 or, 4 and)"
            )));
        }
        let obj = self.cnt_notify(api, h)?;
        let s = self.submit_stream(api, stream)?;
        self.submit_cnt_op(api, &s, crate::api::stream_ctl::InternalOp::CntRecord { obj, mode, value })
    }

    /// `aclrtCntNotifyWaitWithTimeout(n, stream, {mode, value, timeout, isClear})`: `timeout` in
    /// seconds (0: forever); an expired wait fails the stream's next synchronisation with
    /// `ACL_ERROR_RT_WAIT_TIMEOUT`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a mode above 4.
    pub fn wait_cnt_notify(&self, api: &str, h: u64, stream: u64, w: CntWaitInfo) -> Result<()> {
        let CntWaitInfo { mode, value, timeout, clear } = w;
        self.cnt_soc(api)?;
        if mode > 4 {
            return Err(AclError::rt_invalid(format!(
                "{api}: mode {mode} is not an aclrtCntNotifyWaitMode (0 to 4)"
            )));
        }
        let obj = self.cnt_notify(api, h)?;
        let s = self.submit_stream(api, stream)?;
        let timeout_ms = u64::from(timeout) * 1000;
        self.submit_cnt_op(
            api,
            &s,
            crate::api::stream_ctl::InternalOp::CntWait { obj, mode, value, timeout_ms, clear },
        )
    }

    /// `aclrtCntNotifyReset(n, stream)`: count 0 in stream order.
    ///
    /// # Errors
    ///
    /// Dead handles.
    pub fn reset_cnt_notify(&self, api: &str, h: u64, stream: u64) -> Result<()> {
        self.record_cnt_notify(api, h, stream, 0, 0)
    }

    /// `aclrtCntNotifyGetId`.
    ///
    /// # Errors
    ///
    /// Dead handles.
    pub fn cnt_notify_id(&self, api: &str, h: u64) -> Result<u32> {
        self.cnt_soc(api)?;
        Ok(self.cnt_notify(api, h)?.id)
    }
}
