//! C exports of the memory observability calls of `acl/acl_sim.h`: `aclrsMemSummary`,
//! `aclrsMemRecordHistory` and `aclrsMemSnapshot` (the work is in [`crate::state::obs`]).

use std::ffi::{c_char, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;

use super::Call;
use crate::error::{AclError, Result};

fn summary_into(cx: &Call, buf: *mut c_char, len: usize) -> Result<usize> {
    if buf.is_null() && len != 0 {
        return Err(AclError::invalid(format!("aclrsMemSummary: buf is NULL but len is {len}")));
    }
    let text = cx.rt()?.memory_summary();
    let bytes = text.as_bytes();
    if len > 0 {
        let n = bytes.len().min(len - 1);
        // SAFETY: `buf` is non-null (checked) and the caller guarantees `len` writable bytes;
        // we write `n + 1 <= len` of them; `bytes` is our own string and cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, n);
            buf.add(n).write(0);
        }
    }
    Ok(bytes.len())
}

export! {
    /// `size_t aclrsMemSummary(char *buf, size_t len);` — the summary's length (without the
    /// NUL); at most `len - 1` bytes and a NUL are written, like `snprintf`. 0 on error.
    pub unsafe fn aclrsMemSummary(buf: *mut c_char, len: usize) -> usize = 0, |cx| {
        summary_into(cx, buf, len)
    }
}

export! {
    /// `aclError aclrsMemRecordHistory(int enable, size_t maxEntries);`
    pub fn aclrsMemRecordHistory(enable: i32, max_entries: usize) -> AclErrorCode |cx| {
        if enable != 0 && enable != 1 {
            return Err(AclError::invalid(format!(
                "aclrsMemRecordHistory: enable must be 0 or 1, not {enable}"
            )));
        }
        crate::state::obs::record_history(enable == 1, max_entries);
        Ok(())
    }
}

export! {
    /// `aclError aclrsMemSnapshot(const char *path);`
    pub unsafe fn aclrsMemSnapshot(path: *const c_char) -> AclErrorCode |cx| {
        if path.is_null() {
            return Err(AclError::invalid(format!("{API}: path is NULL")));
        }
        // SAFETY: non-null (checked); the caller passes a NUL-terminated path.
        let p = unsafe { CStr::from_ptr(path) };
        if p.is_empty() {
            return Err(AclError::invalid(format!("{API}: path is empty")));
        }
        let p = std::path::Path::new(OsStr::from_bytes(p.to_bytes()));
        cx.rt()?.write_snapshot(API, p)
    }
}
