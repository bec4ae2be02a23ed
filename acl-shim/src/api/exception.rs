//! Exception information (`aclrtSetExceptionInfoCallback`, `aclrtExceptionInfoCallbackRegister`
//! and `…Unregister`, and the `aclrtGet…FromExceptionInfo` accessors): the process-wide list of
//! callbacks, and the record a callback is handed when a task fails.
//!
//! A failed task surfaces at the synchronisation that reports it
//! ([`crate::runtime::Runtime::synchronize_stream`], [`crate::runtime::Runtime::synchronize_device`]);
//! that call hands every registered callback an [`ExceptionInfo`] (the stream's id, or
//! `0xFFFFFFFF` for a device synchronisation, the device, the task's code) before it returns.
//!
//! # Locking
//!
//! The callback list has its own mutex, taken alone and released before any callback runs.

use std::sync::{Arc, Mutex};

use crate::codes::*;
use crate::error::{AclError, Result};

/// What a callback learns about a failed task; `aclrtExceptionInfo` is an opaque pointer to
/// one of these, valid during the callback only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct ExceptionInfo {
    /// The task's id (`0xFFFFFFFF`: not known, a device-level exception).
    pub task_id: u32,
    /// The stream's id.
    pub stream_id: u32,
    /// The id of the thread that submitted the task (`0xFFFFFFFF`: not known).
    pub thread_id: u32,
    /// The device.
    pub device_id: u32,
    /// The task's error code.
    pub error_code: u32,
    /// Whether the failed task was a kernel launch (the only kind with arguments).
    pub is_kernel: bool,
    /// The launch's argument block on the device (kernels only).
    pub args: u64,
    /// Bytes of the argument block.
    pub args_len: u32,
    /// The launch's function handle (kernels only).
    pub func: u64,
}

/// A callback: its key (the C function's address, which identifies it for unregistering) and
/// the call the C edge built for it.
#[derive(Clone)]
pub struct Callback {
    /// The C function's address (non-zero).
    pub key: usize,
    /// Calls the C function with a record.
    pub call: Arc<dyn Fn(&ExceptionInfo) + Send + Sync>,
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Callback({:#x})", self.key)
    }
}

#[derive(Debug, Default)]
struct Callbacks {
    /// The one callback of the deprecated `aclrtSetExceptionInfoCallback`.
    legacy: Option<Callback>,
    /// The callbacks of `aclrtExceptionInfoCallbackRegister`, in registration order.
    list: Vec<Callback>,
}

static CALLBACKS: Mutex<Callbacks> = Mutex::new(Callbacks { legacy: None, list: Vec::new() });

/// `aclrtSetExceptionInfoCallback`: replaces the single deprecated callback (`None` removes it).
pub fn set_legacy(cb: Option<Callback>) {
    crate::sync::relock(&CALLBACKS).legacy = cb;
}

/// `aclrtExceptionInfoCallbackRegister`: adds `cb` once (registering it again keeps one entry).
///
/// # Errors
///
/// `ACL_ERROR_RT_PARAM_INVALID` for NULL (the ACL layer's code for this call).
pub fn register(api: &str, cb: Option<Callback>) -> Result<()> {
    let Some(cb) = cb else {
        return Err(AclError::new(ACL_ERROR_RT_PARAM_INVALID, format!("{api}: callback is NULL")));
    };
    let mut c = crate::sync::relock(&CALLBACKS);
    if !c.list.iter().any(|x| x.key == cb.key) {
        c.list.push(cb);
    }
    Ok(())
}

/// `aclrtExceptionInfoCallbackUnregister`: removes the callback `key` (an unknown one is no
/// error; the deprecated setter's callback stays).
///
/// # Errors
///
/// `ACL_ERROR_RT_PARAM_INVALID` for NULL.
pub fn unregister(api: &str, key: usize) -> Result<()> {
    if key == 0 {
        return Err(AclError::new(ACL_ERROR_RT_PARAM_INVALID, format!("{api}: callback is NULL")));
    }
    crate::sync::relock(&CALLBACKS).list.retain(|c| c.key != key);
    Ok(())
}

/// Hands `info` to every callback (the deprecated one first), with the list's lock released.
pub fn report(info: &ExceptionInfo) {
    let all: Vec<Callback> = {
        let c = crate::sync::relock(&CALLBACKS);
        c.legacy.iter().chain(c.list.iter()).cloned().collect()
    };
    for cb in all {
        (cb.call)(info);
    }
}

/// Whether any callback is registered (so a failure builds no record for nobody).
pub fn any() -> bool {
    let c = crate::sync::relock(&CALLBACKS);
    c.legacy.is_some() || !c.list.is_empty()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    static SEEN: AtomicU32 = AtomicU32::new(0);

    fn counting(key: usize) -> Callback {
        Callback {
            key,
            call: Arc::new(|i: &ExceptionInfo| {
                SEEN.fetch_add(i.error_code, Ordering::Relaxed);
            }),
        }
    }

    #[test]
    fn callbacks_register_once_unregister_and_are_called() {
        assert_eq!(register("t", None).unwrap_err().code(), ACL_ERROR_RT_PARAM_INVALID);
        assert_eq!(unregister("t", 0).unwrap_err().code(), ACL_ERROR_RT_PARAM_INVALID);
        register("t", Some(counting(0x10))).unwrap();
        register("t", Some(counting(0x10))).unwrap();
        set_legacy(Some(counting(0x20)));
        assert!(any());
        report(&ExceptionInfo { error_code: 1, ..Default::default() });
        // One registered entry and the deprecated one.
        assert_eq!(SEEN.load(Ordering::Relaxed), 2);
        unregister("t", 0x10).unwrap();
        unregister("t", 0x99).unwrap();
        set_legacy(None);
        assert!(!any());
        report(&ExceptionInfo { error_code: 1, ..Default::default() });
        assert_eq!(SEEN.load(Ordering::Relaxed), 2);
    }
}
