//! The device calls of the runtime (`impl Runtime`): `aclrtSetDevice`, `aclrtResetDevice*`,
//! the teardown of a device, and `aclFinalize` / `aclFinalizeReference` (with the count of
//! `aclInit` references the latter pairs).

use std::sync::MutexGuard;

use hal::DeviceId;
use mm::device::DeviceAllocator;

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::*;

/// Finalises the runtime (`aclFinalize`): resets every device as `aclrtResetDeviceForce` does
/// (whatever its `aclrtSetDevice` count; queued tasks are dropped, so a wait that can never be
/// satisfied cannot hang the process's exit) and releases the backend.
///
/// # Errors
///
/// `ACL_ERROR_REPEAT_FINALIZE` when not initialised; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in a
/// child forked after `aclInit`.
pub fn finalize() -> Result<()> {
    let r = finalize_now();
    if r.is_ok() {
        // A single aclFinalize ends every reference aclInit counted.
        INIT_REFS.store(0, std::sync::atomic::Ordering::Relaxed);
    }
    r
}

/// The `aclInit` calls not yet matched by an `aclFinalizeReference` (each successful or
/// repeated `aclInit` counts one).
static INIT_REFS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts an `aclInit` that succeeded or found the runtime initialised already.
pub fn note_init(r: &Result<()>) {
    if r.as_ref().err().is_none_or(|e| e.code() == ACL_ERROR_REPEAT_INITIALIZE) {
        INIT_REFS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `aclFinalizeReference`: drops one `aclInit` reference and finalizes when it was the last;
/// the references left.
///
/// # Errors
///
/// `ACL_ERROR_REPEAT_FINALIZE` when the runtime is not initialised; `aclFinalize`'s errors.
pub fn finalize_reference() -> Result<u64> {
    use std::sync::atomic::Ordering;
    crate::runtime::runtime("aclFinalizeReference").map_err(|_| {
        AclError::new(ACL_ERROR_REPEAT_FINALIZE, "aclFinalizeReference: not initialised (repeated finalize?)")
    })?;
    let left = INIT_REFS
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some(n.saturating_sub(1)))
        .unwrap_or(0)
        .saturating_sub(1);
    if left == 0 {
        finalize()?;
    }
    Ok(left)
}

/// The body of [`finalize`].
fn finalize_now() -> Result<()> {
    refuse_in_forked_child("aclFinalize")?;
    let rt = {
        // Lock order: LIFECYCLE first and alone. Relock: it guards no data (see LIFECYCLE).
        let _serial = crate::sync::relock(&LIFECYCLE);
        // The pinned copy goes too; calls that pinned it keep it alive until they end.
        drop(PUBLISHED.retract());
        RUNTIME.swap(None).ok_or_else(|| {
            AclError::new(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: not initialised (repeated finalize?)")
        })?
    };
    crate::api::obs::write_env_snapshot(&rt);
    for i in 0..rt.devices.len() {
        // `relock`: `life` guards no data (it only serialises open and teardown).
        let life = crate::sync::relock(&rt.devices[i].life);
        // CAST: the device count fits in u32.
        rt.teardown(i as u32, "aclFinalize", true, &life);
    }
    // ACLRS_SANITIZE=leak: pinned host memory and host registrations still live (crate::sanitize).
    rt.sanitize_host_leaks();
    rt.release_pinned();
    crate::tls::set_current(None);
    Ok(())
}

impl Runtime {
    /// `aclrtSetDevice`: opens the device on first use, counts a reference, makes it current.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID`, or the backend's error when the device cannot open.
    pub fn set_device(&self, device_id: i32) -> Result<()> {
        const API: &str = "aclrtSetDevice";
        let d = self.check_id(API, device_id)?;
        let dev = self.device(d);
        // Lock order: `life` (outermost), held across the backend's open.
        let life = dev.life(API)?;
        let count = dev
            .refcount()
            .checked_add(1)
            .ok_or_else(|| AclError::rt_invalid("aclrtSetDevice: reference count overflow"))?;
        if count == 1 {
            self.backend.driver().open(DeviceId(d)).map_err(|e| {
                AclError::new(ACL_ERROR_RT_NO_DEVICE, format!("aclrtSetDevice({device_id}): {e}"))
            })?;
            // The upper half of the window is for VMM reservations and IPC imports.
            let mut alloc = DeviceAllocator::new(crate::state::vmm::malloc_window(d));
            // One empty slab chunk per class is kept, so a lone small malloc/free loop does not
            // back and unback a chunk every time; `trim_spares` gives it back.
            alloc.set_keep_spare(true);
            // Pool segments take VA from this device's slice of the stream-ordered pool window.
            let pool = hal::VaRange::try_new(
                hal::DeviceAddr(hal::layout::pool_slice_base(d)),
                hal::layout::POOL_SLICE_SIZE,
            )
            .unwrap_or_else(|_| unreachable!("the pool slice lies in the address space"));
            let set = alloc.set_pool_window(pool);
            debug_assert!(set, "a fresh allocator takes the pool slice, outside its window");
            // Lock order: `mem` under `life`.
            match dev.mem(API) {
                Ok(mut m) => {
                    m.alloc = Some(alloc);
                    m.epoch = crate::state::memory::next_epoch();
                }
                Err(e) => {
                    let _ = self.backend.driver().close(DeviceId(d));
                    return Err(e);
                }
            }
        }
        dev.set_refcount(&life, count, count > 1 && dev.forced());
        let generation = self.generation;
        crate::tls::set_current(Some((generation, d)));
        Ok(())
    }

    /// `aclrtResetDevice` / `aclrtResetDeviceForce`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID`; `ACL_ERROR_RT_CONTEXT_NULL` when the device has no
    /// context (never set, or already reset).
    pub fn reset_device(&self, device_id: i32, force: bool) -> Result<()> {
        let api = if force { "aclrtResetDeviceForce" } else { "aclrtResetDevice" };
        let d = self.check_id(api, device_id)?;
        let dev = self.device(d);
        // Lock order: `life` (outermost), held across the teardown (which takes the others).
        // `relock`: `life` guards no data, and a reset is how a failed device recovers.
        let life = crate::sync::relock(&dev.life);
        if dev.refcount() == 0 {
            let why = if dev.forced() {
                "it was already reset with aclrtResetDeviceForce"
            } else {
                "it has no context (not set, or already reset)"
            };
            return Err(AclError::new(ACL_ERROR_RT_CONTEXT_NULL, format!("{api}({device_id}): {why}")));
        }
        let count = if force { 0 } else { dev.refcount() - 1 };
        dev.set_refcount(&life, count, force);
        if count == 0 {
            self.teardown(d, api, force, &life);
            dev.set_refcount(&life, 0, force);
            // The context is gone: it is no longer current on this thread. (Other threads find
            // out through the zero reference count.)
            let generation = self.generation;
            if crate::tls::current() == Some((generation, d)) {
                crate::tls::set_current(None);
            }
        }
        Ok(())
    }

    /// Frees every allocation of device `d` and closes it (`api` resets it; `force`: the forced
    /// form, which drops queued tasks).
    /// Called under the device's `life`; ends with the device's state rebuilt from nothing (so
    /// a device a panic left failed works again after its reset).
    fn teardown(&self, d: u32, api: &str, force: bool, life: &MutexGuard<'_, ()>) {
        let dev = self.device(d);
        // Outstanding tasks finish first (CANN's reset waits for them; the forced forms drop the
        // queued ones, see `settle_device`); then pools, stream-ordered frees and allocations go.
        self.settle_device(api, d, force);
        // ACLRS_SANITIZE: the leak report (crate::sanitize).
        self.sanitize_teardown(api, d);
        self.pools_teardown(d);
        self.vmm_teardown(d);
        dev.set_refcount(life, 0, force);
        // A failed (poisoned) memory state is not walked: closing the device gives its memory
        // back, and `rebuild` below starts again from nothing.
        let alloc = dev.mem("teardown").ok().and_then(|mut m| m.alloc.take());
        if let Some(mut alloc) = alloc {
            let mut backer = crate::state::memory::HalBacker::new(self.backend.driver(), d);
            alloc.release_all(&mut backer);
            alloc.trim(&mut backer);
        }
        // Streams, events and subscriptions of the device die with it (their queues go with
        // the device below, after its tasks have run).
        self.forget_device_handles(d);
        let _ = self.backend.driver().close(DeviceId(d));
        dev.rebuild(life);
    }

    fn release_pinned(&self) {
        // `relock`: the runtime is going away; the table is only drained (a half-updated entry
        // is at worst unbacked twice, which the backend refuses harmlessly).
        let ranges: Vec<_> = {
            let mut host = crate::sync::relock(&self.host);
            let ranges = host.heap.drain().into_iter().map(|a| a.range).collect();
            self.pinned.publish(&host);
            ranges
        };
        for r in ranges {
            let _ = self.backend.driver().unback_host(r);
        }
    }
}
