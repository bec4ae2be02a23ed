//! C exports of notifies, IPC notifies, count notifies and IPC events (fact sheet §3, §6).
//!
//! Handles (`aclrtNotify`, `aclrtEvent`) are opaque numbers cast to pointers
//! (`crate::ffi::stream::handle`); keys and IPC event handles are plain bytes copied in and
//! out here. The work is in `crate::api::notify` and `crate::api::ipc_event`.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::{c_char, c_void, CStr};

use super::put;
use super::stream::{ensure_hook, handle, to_ptr};
use crate::api::ipc_event::HANDLE_BYTES;
use crate::error::{AclError, Result};

/// The most pids one whitelist call takes (as for IPC memory).
const MAX_PIDS: usize = hal::davinci_abi::SVM_SHARE_MEM_MAX_PID_CNT;

/// `notify` checked non-NULL (the ACL layer's 100000).
fn notify_arg(api: &str, n: *mut c_void) -> Result<u64> {
    if n.is_null() {
        return Err(AclError::invalid(format!("{api}: notify is NULL")));
    }
    Ok(handle(n))
}

/// Reads `num` pids at `pid` (checked non-NULL and aligned; `num` at most [`MAX_PIDS`]).
fn pids<'a>(api: &str, pid: *const i32, num: usize) -> Result<&'a [i32]> {
    if pid.is_null() {
        return Err(AclError::invalid(format!("{api}: pid is NULL")));
    }
    if !pid.is_aligned() {
        return Err(AclError::invalid(format!("{api}: pid is not aligned")));
    }
    if num > MAX_PIDS {
        return Err(AclError::rt_invalid(format!(
            "{api}: num {num} is more than the {MAX_PIDS} pids one call takes"
        )));
    }
    // SAFETY: non-null and aligned (checked); the caller passes `num` readable pids per the
    // API, and `num` is small (checked), so the slice is a valid object.
    Ok(unsafe { std::slice::from_raw_parts(pid, num) })
}

export! {
    /// `aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag);`
    pub unsafe fn aclrtCreateNotify(notify: *mut *mut c_void, flag: u64) -> AclErrorCode |cx| {
        let out = cx.out("notify", notify)?;
        let h = cx.rt()?.create_notify(API, flag)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtDestroyNotify(aclrtNotify notify);`
    pub fn aclrtDestroyNotify(notify: *mut c_void) -> AclErrorCode |cx| {
        let n = notify_arg(API, notify)?;
        cx.rt()?.destroy_notify(API, n)
    }
}

export! {
    /// `aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream);`
    pub fn aclrtRecordNotify(notify: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        let n = notify_arg(API, notify)?;
        cx.rt()?.record_notify(API, n, handle(stream))
    }
}

export! {
    /// `aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout);`
    pub fn aclrtWaitAndResetNotify(notify: *mut c_void, stream: *mut c_void, timeout: u32) -> AclErrorCode |cx| {
        let n = notify_arg(API, notify)?;
        let rt = cx.rt()?;
        ensure_hook(&rt);
        rt.wait_notify(API, n, handle(stream), timeout)
    }
}

export! {
    /// `aclError aclrtGetNotifyId(aclrtNotify notify, uint32_t *notifyId);`
    pub unsafe fn aclrtGetNotifyId(notify: *mut c_void, notify_id: *mut u32) -> AclErrorCode |cx| {
        let n = notify_arg(API, notify)?;
        let out = cx.out("notifyId", notify_id)?;
        put(out, cx.rt()?.notify_id(API, n)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtNotifyBatchReset(aclrtNotify *notifies, size_t num);`
    pub unsafe fn aclrtNotifyBatchReset(notifies: *mut *mut c_void, num: usize) -> AclErrorCode |cx| {
        let p = cx.input("notifies", notifies.cast_const())?;
        if num == 0 {
            return Err(AclError::rt_invalid(format!("{API}: num must be greater than 0")));
        }
        let n = cx.size("num", num.saturating_mul(8))?;
        let _ = n;
        // SAFETY: non-null and aligned (checked); the caller passes `num` readable handles per
        // the API, and their byte size was checked to be a valid object size.
        let list = unsafe { std::slice::from_raw_parts(p, num) };
        let hs: Vec<u64> = list.iter().map(|&h| handle(h)).collect();
        cx.rt()?.batch_reset_notifies(API, &hs)
    }
}

export! {
    /// `aclError aclrtNotifyGetExportKey(aclrtNotify notify, char *key, size_t len, uint64_t flags);`
    pub unsafe fn aclrtNotifyGetExportKey(
        notify: *mut c_void,
        key: *mut c_char,
        len: usize,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let n = notify_arg(API, notify)?;
        let out = cx.out("key", key)?;
        let name = cx.rt()?.notify_export(API, n, len as u64, flags)?;
        let b = name.as_bytes();
        for (i, &c) in b.iter().chain(std::iter::once(&0u8)).enumerate() {
            // SAFETY: `len` is at least 65 (checked by the export) and the key is at most 64
            // bytes and a NUL, inside the caller's buffer of `len` bytes.
            put(unsafe { out.add(i) }, c as c_char);
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtNotifyImportByKey(aclrtNotify *notify, const char *key, uint64_t flags);`
    pub unsafe fn aclrtNotifyImportByKey(notify: *mut *mut c_void, key: *const c_char, flags: u64) -> AclErrorCode |cx| {
        let out = cx.out("notify", notify)?;
        if key.is_null() {
            return Err(AclError::invalid(format!("{API}: key is NULL")));
        }
        // SAFETY: non-null (checked); the caller passes a NUL-terminated key per the API.
        let bytes = unsafe { CStr::from_ptr(key) }.to_bytes();
        let h = cx.rt()?.notify_import(API, bytes, flags)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtNotifySetImportPid(aclrtNotify notify, int32_t *pid, size_t num);`
    pub unsafe fn aclrtNotifySetImportPid(notify: *mut c_void, pid: *mut i32, num: usize) -> AclErrorCode |cx| {
        let n = notify_arg(API, notify)?;
        if pid.is_null() {
            return Err(AclError::invalid(format!("{API}: pid is NULL")));
        }
        if num == 0 {
            return Err(AclError::rt_invalid(format!("{API}: num must be greater than 0")));
        }
        let list = pids(API, pid, num)?;
        cx.rt()?.notify_set_pids(API, n, list)
    }
}

/// `aclrtServerPid` (24 bytes): a SuperPOD device id and its whitelist.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ServerPid {
    sdid: u32,
    pid: *mut i32,
    num: usize,
}

export! {
    /// `aclError aclrtNotifySetImportPidInterServer(aclrtNotify notify, aclrtServerPid *serverPids, size_t num);`
    pub unsafe fn aclrtNotifySetImportPidInterServer(
        notify: *mut c_void,
        server_pids: *mut c_void,
        num: usize,
    ) -> AclErrorCode |cx| {
        let rt = cx.rt()?;
        if notify.is_null() || server_pids.is_null() {
            return Err(AclError::rt_invalid(format!("{API}: notify and serverPids must not be NULL")));
        }
        if num == 0 || num > MAX_PIDS {
            return Err(AclError::rt_invalid(format!("{API}: num {num} must be 1 to {MAX_PIDS}")));
        }
        let p = cx.input("serverPids", server_pids.cast_const().cast::<ServerPid>())?;
        // SAFETY: non-null and aligned (checked); the caller passes `num` entries per the API,
        // and `num` is small (checked).
        let entries = unsafe { std::slice::from_raw_parts(p, num) };
        let mut lists = Vec::with_capacity(num);
        for e in entries {
            let _ = e.sdid;
            lists.push(pids(API, e.pid, e.num)?.to_vec());
        }
        rt.notify_set_pids_inter_server(API, handle(notify), &lists)
    }
}

/// `aclrtCntNotifyRecordInfo` (8 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CntRecordInfo {
    mode: i32,
    value: u32,
}

/// `aclrtCntNotifyWaitInfo` (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CntWaitInfo {
    mode: i32,
    value: u32,
    timeout: u32,
    is_clear: u8,
    rsv: [u8; 3],
}

fn cnt_arg(api: &str, n: *mut c_void) -> Result<u64> {
    if n.is_null() {
        return Err(AclError::invalid(format!("{api}: cntNotify is NULL")));
    }
    Ok(handle(n))
}

export! {
    /// `aclError aclrtCntNotifyCreate(aclrtCntNotify *cntNotify, uint64_t flag);`
    pub unsafe fn aclrtCntNotifyCreate(cnt_notify: *mut *mut c_void, flag: u64) -> AclErrorCode |cx| {
        let out = cx.out("cntNotify", cnt_notify)?;
        let h = cx.rt()?.create_cnt_notify(API, flag)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtCntNotifyDestroy(aclrtCntNotify cntNotify);`
    pub fn aclrtCntNotifyDestroy(cnt_notify: *mut c_void) -> AclErrorCode |cx| {
        let n = cnt_arg(API, cnt_notify)?;
        cx.rt()?.destroy_cnt_notify(API, n)
    }
}

export! {
    /// `aclError aclrtCntNotifyRecord(aclrtCntNotify cntNotify, aclrtStream stream, aclrtCntNotifyRecordInfo *info);`
    pub unsafe fn aclrtCntNotifyRecord(cnt_notify: *mut c_void, stream: *mut c_void, info: *mut CntRecordInfo) -> AclErrorCode |cx| {
        let p = cx.input("info", info.cast_const())?;
        // SAFETY: non-null and aligned (checked); the caller passes an aclrtCntNotifyRecordInfo.
        let i = unsafe { p.read() };
        let rt = cx.rt()?;
        ensure_hook(&rt);
        let mode = u32::try_from(i.mode).unwrap_or(u32::MAX);
        rt.record_cnt_notify(API, handle(cnt_notify), handle(stream), mode, i.value)
    }
}

export! {
    /// `aclError aclrtCntNotifyWaitWithTimeout(aclrtCntNotify cntNotify, aclrtStream stream, aclrtCntNotifyWaitInfo *info);`
    pub unsafe fn aclrtCntNotifyWaitWithTimeout(cnt_notify: *mut c_void, stream: *mut c_void, info: *mut CntWaitInfo) -> AclErrorCode |cx| {
        let p = cx.input("info", info.cast_const())?;
        // SAFETY: non-null and aligned (checked); the caller passes an aclrtCntNotifyWaitInfo.
        let i = unsafe { p.read() };
        let rt = cx.rt()?;
        ensure_hook(&rt);
        let mode = u32::try_from(i.mode).unwrap_or(u32::MAX);
        let _ = i.rsv;
        let w = crate::api::notify::CntWaitInfo { mode, value: i.value, timeout: i.timeout, clear: i.is_clear != 0 };
        rt.wait_cnt_notify(API, handle(cnt_notify), handle(stream), w)
    }
}

export! {
    /// `aclError aclrtCntNotifyReset(aclrtCntNotify cntNotify, aclrtStream stream);`
    pub fn aclrtCntNotifyReset(cnt_notify: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        let rt = cx.rt()?;
        ensure_hook(&rt);
        rt.reset_cnt_notify(API, handle(cnt_notify), handle(stream))
    }
}

export! {
    /// `aclError aclrtCntNotifyGetId(aclrtCntNotify cntNotify, uint32_t *notifyId);`
    pub unsafe fn aclrtCntNotifyGetId(cnt_notify: *mut c_void, notify_id: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("notifyId", notify_id)?;
        put(out, cx.rt()?.cnt_notify_id(API, cnt_arg(API, cnt_notify)?)?);
        Ok(())
    }
}

/// `aclrtIpcEventHandle`: 64 bytes, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IpcEventHandle {
    reserved: [c_char; HANDLE_BYTES],
}

export! {
    /// `aclError aclrtIpcGetEventHandle(aclrtEvent event, aclrtIpcEventHandle *handle);`
    pub unsafe fn aclrtIpcGetEventHandle(event: *mut c_void, ipc_handle: *mut IpcEventHandle) -> AclErrorCode |cx| {
        if event.is_null() {
            return Err(AclError::invalid(format!("{API}: event is NULL")));
        }
        let out = cx.out("handle", ipc_handle)?;
        let bytes = cx.rt()?.ipc_event_handle(API, handle(event))?;
        // CAST: bytes of the key as C chars.
        put(out, IpcEventHandle { reserved: bytes.map(|b| b as c_char) });
        Ok(())
    }
}

export! {
    /// `aclError aclrtIpcOpenEventHandle(aclrtIpcEventHandle handle, aclrtEvent *event);`
    pub unsafe fn aclrtIpcOpenEventHandle(ipc_handle: IpcEventHandle, event: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("event", event)?;
        // CAST: C chars of the key back as bytes.
        let bytes = ipc_handle.reserved.map(|c| c as u8);
        let h = cx.rt()?.ipc_event_open(API, &bytes)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

impl crate::log::TraceArg for IpcEventHandle {
    fn trace(&self, out: &mut String) {
        let text: String =
            // CAST: C chars of the key as bytes.
            self.reserved.iter().map(|&c| c as u8).take_while(|&b| b != 0).map(char::from).collect();
        out.push_str(&format!("{text:?}"));
    }
}
