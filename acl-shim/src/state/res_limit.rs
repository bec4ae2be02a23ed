//! Resource limits (`aclrt*ResLimit`, §2 of the runtime surface sheet): how many cores of each
//! type (`aclrtDevResLimitType`: cube, vector) the process may use on a device, and a stream.
//!
//! A device's process limits are atomics (read without a lock), unset until
//! `aclrtSetDeviceResLimit` (an unset limit reads as the SoC profile's core count) and unset
//! again by a reset of the limits or of the device. Stream limits sit in a small map under the
//! device's own lock, keyed by stream handle, touched only by the stream calls. The limits are
//! advisory, as on CANN: a launch is not clamped to them; code that picks block counts reads them.
//!
//! This module owns that state and its checks; it knows neither the runtime nor the backend.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use crate::error::{AclError, Result};

/// Number of `aclrtDevResLimitType` values.
pub(crate) const TYPES: usize = 2;
/// The value of a limit that is not set.
const UNSET: u32 = u32::MAX;

/// The resource limits of one device.
#[derive(Debug)]
pub(crate) struct ResLimits {
    process: [AtomicU32; TYPES],
    streams: Mutex<BTreeMap<u64, [u32; TYPES]>>,
}

impl Default for ResLimits {
    fn default() -> Self {
        Self { process: [AtomicU32::new(UNSET), AtomicU32::new(UNSET)], streams: Mutex::default() }
    }
}

/// Checks an `aclrtDevResLimitType` value; its index.
pub(crate) fn check_type(api: &str, t: i32) -> Result<usize> {
    match usize::try_from(t) {
        Ok(i) if i < TYPES => Ok(i),
        _ => Err(AclError::rt_invalid(format!(
            "{api}: type {t} is not an aclrtDevResLimitType (ACL_RT_DEV_RES_CUBE_CORE 0, ACL_RT_DEV_RES_VECTOR_CORE 1)"
        ))),
    }
}

/// Checks a limit against the hardware count `hw` of its type.
pub(crate) fn check_value(api: &str, t: usize, value: u32, hw: u32) -> Result<()> {
    if value > hw {
        let what = if t == 0 { "cube" } else { "vector" };
        return Err(AclError::rt_invalid(format!(
            "{api}: value {value} exceeds the device's {hw} {what} cores"
        )));
    }
    Ok(())
}

impl ResLimits {
    /// The process limit of type `t`, or `hw` when unset.
    pub(crate) fn process(&self, t: usize, hw: u32) -> u32 {
        match self.process[t].load(Ordering::Acquire) {
            UNSET => hw,
            v => v,
        }
    }

    /// Sets the process limit of type `t` (checked by the caller).
    pub(crate) fn set_process(&self, t: usize, value: u32) {
        self.process[t].store(value, Ordering::Release);
    }

    /// Unsets every process limit.
    pub(crate) fn reset_process(&self) {
        for p in &self.process {
            p.store(UNSET, Ordering::Release);
        }
    }

    /// The limit of type `t` set on stream `stream`, if any.
    pub(crate) fn stream(&self, stream: u64, t: usize) -> Option<u32> {
        crate::sync::relock(&self.streams).get(&stream).map(|v| v[t]).filter(|&v| v != UNSET)
    }

    /// Sets the limit of type `t` of stream `stream`.
    pub(crate) fn set_stream(&self, stream: u64, t: usize, value: u32) {
        crate::sync::relock(&self.streams).entry(stream).or_insert([UNSET; TYPES])[t] = value;
    }

    /// Unsets the limits of stream `stream`.
    pub(crate) fn reset_stream(&self, stream: u64) {
        crate::sync::relock(&self.streams).remove(&stream);
    }

    /// Unsets everything (a device reset).
    pub(crate) fn clear(&self) {
        self.reset_process();
        crate::sync::relock(&self.streams).clear();
    }
}

thread_local! {
    /// The stream whose limits the calling thread uses (`aclrtUseStreamResInCurrentThread`):
    /// the runtime generation, the device and the stream handle.
    static BOUND: std::cell::Cell<Option<(u64, u32, u64)>> = const { std::cell::Cell::new(None) };
}

/// Binds the calling thread to stream `stream` of device `dev` (the last bind wins).
pub(crate) fn bind(generation: u64, dev: u32, stream: u64) {
    BOUND.with(|b| b.set(Some((generation, dev, stream))));
}

/// Unbinds the calling thread when it is bound to `stream`; otherwise does nothing.
pub(crate) fn unbind(generation: u64, stream: u64) {
    BOUND.with(|b| {
        if b.get().is_some_and(|(g, _, s)| g == generation && s == stream) {
            b.set(None);
        }
    });
}

/// The device and stream the calling thread is bound to, in runtime generation `generation`.
pub(crate) fn bound(generation: u64) -> Option<(u32, u64)> {
    BOUND.with(|b| b.get().filter(|&(g, _, _)| g == generation).map(|(_, d, s)| (d, s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_over_process_over_hardware_and_resets_restore_the_default() {
        let l = ResLimits::default();
        assert_eq!(l.process(0, 24), 24);
        l.set_process(0, 8);
        assert_eq!(l.process(0, 24), 8);
        assert_eq!(l.process(1, 48), 48);
        l.set_stream(7, 1, 3);
        assert_eq!(l.stream(7, 1), Some(3));
        assert_eq!(l.stream(7, 0), None);
        l.reset_stream(7);
        assert_eq!(l.stream(7, 1), None);
        l.set_stream(9, 0, 0);
        l.clear();
        assert_eq!((l.process(0, 24), l.stream(9, 0)), (24, None));
        assert!(check_type("t", 2).is_err() && check_type("t", -1).is_err());
        assert_eq!(check_value("t", 0, 25, 24).unwrap_err().code(), crate::codes::ACL_ERROR_RT_PARAM_INVALID);
        assert!(check_value("t", 0, 0, 24).is_ok());
    }

    #[test]
    fn only_the_bound_stream_unbinds_and_another_generation_sees_nothing() {
        bind(3, 0, 11);
        unbind(3, 12);
        assert_eq!(bound(3), Some((0, 11)));
        assert_eq!(bound(4), None);
        unbind(3, 11);
        assert_eq!(bound(3), None);
    }
}
