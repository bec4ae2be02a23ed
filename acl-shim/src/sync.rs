//! The runtime's one rule for a lock a panic poisoned: the state behind it is failed.
//!
//! A panic caught at the C edge ([`crate::ffi`]'s panic wall) may have left the table it was
//! changing half-updated. Instead of going on with that table (`into_inner()` on the poisoned
//! lock), every later call that needs it fails with `ACL_ERROR_RT_INTERNAL_ERROR` and a message
//! that says what failed and how to recover: resetting the device (or `aclFinalize`) rebuilds
//! the state from nothing.
//!
//! Code that can prove its update is all-or-nothing (a single store, push or counter step after
//! every fallible step) may recover the guard with [`relock`] and say why at the call.
//!
//! This module owns only that rule; it must not know what the locks guard.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::codes::ACL_ERROR_RT_INTERNAL_ERROR;
use crate::error::{AclError, Result};

/// Locks `m`, or fails when an earlier panic poisoned it.
///
/// `api` is the call and `what` the state behind the lock ("device 0's memory", "the stream
/// table of device 1"), as the message names them.
///
/// # Errors
///
/// `ACL_ERROR_RT_INTERNAL_ERROR` when `m` is poisoned.
pub fn lock<'a, T>(
    m: &'a Mutex<T>,
    api: &str,
    what: &dyn core::fmt::Display,
) -> Result<MutexGuard<'a, T>> {
    m.lock().map_err(|_| failed(api, what))
}

/// The error of a call that found `what` failed by an earlier panic.
pub fn failed(api: &str, what: &dyn core::fmt::Display) -> AclError {
    AclError::new(
        ACL_ERROR_RT_INTERNAL_ERROR,
        format!(
            "{api}: {what} is failed: an earlier call panicked while changing it (see the log); \
             reset the device (aclrtResetDeviceForce) or call aclFinalize to start again"
        ),
    )
}

/// Locks `m` even when poisoned, for state whose every update is all-or-nothing (the caller
/// says why at the call).
pub fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_fails_every_later_call_with_a_message() {
        let m = Mutex::new(1);
        assert_eq!(*lock(&m, "aclrtMalloc", &"device 0's memory").unwrap(), 1);
        let _ = std::panic::catch_unwind(|| {
            let _g = m.lock().unwrap();
            panic!("half-way");
        });
        for _ in 0..2 {
            let e = lock(&m, "aclrtMalloc", &"device 0's memory").unwrap_err();
            assert_eq!(e.code(), ACL_ERROR_RT_INTERNAL_ERROR);
            assert!(e.message().contains("aclrtMalloc: device 0's memory is failed"), "{}", e.message());
        }
        assert_eq!(*relock(&m), 1);
    }
}
