//! Per-device runtime state: one [`Device`] per logical device of the runtime, holding its
//! reference count, its memory state, its pools, its VMM/IPC state and its streams.
//!
//! This module owns the shape of that state, its reference count (an atomic: reading it takes
//! no lock), and the rule that a reset rebuilds it; what each part means belongs to the module
//! of [`crate::state`] that defines it ([`crate::state::memory::DevMem`],
//! [`crate::state::pool::Pools`], [`crate::state::vmm::VmmState`],
//! `crate::state::stream::DeviceStreams`). It sits above [`crate::state`] and below
//! [`crate::runtime`]: it must not use the runtime or [`crate::api`], nor call the backend.
//!
//! # Locking
//!
//! One lock order for every device lock of the runtime, outermost first:
//!
//! ```text
//! life  →  vmm  →  pool (one pool's mutex)  →  mem  →  HandleTable's own mutex (a leaf)
//! ```
//!
//! - `life` serialises `aclrtSetDevice`/`aclrtResetDevice*` (open and teardown) of this device;
//!   it is the only lock held across backend calls (opening and closing the device), and no
//!   other call takes it.
//! - `vmm`, a pool's mutex and `mem` are not held across a backend call: device blocks,
//!   pinned-host memory, VMM map/unmap, exports and physical frees are planned or collected
//!   under the lock, the backend is called with it released, and the result is committed or
//!   undone under the lock again (see [`crate::state::memory`], [`crate::state::pool`] and [`crate::state::vmm`]).
//!   What still calls the backend under a lock: slab objects' segments and the page-size
//!   fallback path under `mem`; under one pool's mutex (only that pool's callers wait), its
//!   segment pages, the stream-order oracle's zero-timeout queries and the internal-dependency
//!   event calls.
//! - No device lock is taken while the pinned-host lock ([`crate::runtime::Runtime`]'s `host`)
//!   is held, and the pinned-host lock is never taken under a device lock.
//!
//! A lock a panic poisoned fails every later call on it with 507000
//! ([`crate::sync::lock`]); `Device::rebuild` (device reset, `aclFinalize`) starts the state
//! again from nothing and clears the poison.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::error::Result;
use crate::state::memory::DevMem;
use crate::state::pool::Pools;
use crate::state::stream::{DeviceStreams, Limits};
use crate::state::vmm::VmmState;

/// Low bits of [`Device`]'s `mem_version` that count releases of `mem` (2^40 of them).
const VERSION_COUNT_BITS: u32 = 40;

/// The device's memory state, locked ([`Device::mem`]). A release of it after a change (the
/// state taken mutably) moves the device's memory version, so a range a thread found live is
/// known live while the version stays what it was then ([`Self::seal`]); a hold that only
/// reads (a lookup, a check) moves nothing, so it leaves every thread's knowledge valid. Every
/// field of [`DevMem`] is plain data: nothing in it changes through a shared reference.
#[derive(Debug)]
pub(crate) struct MemGuard<'a> {
    guard: MutexGuard<'a, DevMem>,
    version: &'a AtomicU64,
    /// Whether the state may have changed through this guard since the version last moved
    /// (it was taken mutably): its release, or [`Self::seal`], then moves the version.
    dirty: bool,
}

impl MemGuard<'_> {
    /// Moves the version when the state changed through this guard.
    fn publish(&mut self) {
        if self.dirty {
            let v = self.version.load(Ordering::Relaxed) + 1;
            // Release (under the lock, the only writer): what was written before is ordered
            // before it.
            self.version.store(v, Ordering::Release);
            self.dirty = false;
        }
    }

    /// Publishes the state as this guard sees it now and returns its version: until the state
    /// changes under another taking of the lock, [`Device::mem_version`] stays this value, so
    /// whatever was found in the state holds while it does. A change through the guard after
    /// this moves it again.
    pub(crate) fn seal(&mut self) -> u64 {
        self.publish();
        self.version.load(Ordering::Relaxed)
    }
}

impl std::ops::Deref for MemGuard<'_> {
    type Target = DevMem;

    fn deref(&self) -> &DevMem {
        &self.guard
    }
}

impl std::ops::DerefMut for MemGuard<'_> {
    fn deref_mut(&mut self) -> &mut DevMem {
        self.dirty = true;
        &mut self.guard
    }
}

impl Drop for MemGuard<'_> {
    fn drop(&mut self) {
        // Before the unlock (the guard field drops after this): a thread that sees the old
        // version took nothing from a state after this one.
        self.publish();
    }
}

/// The state of one logical device of this process.
#[derive(Debug)]
pub struct Device {
    /// The logical device id.
    pub(crate) id: u32,
    /// `aclrtSetDevice` count minus resets; the context exists while it is non-zero. Written
    /// only under `life`; read anywhere without a lock.
    refcount: AtomicU32,
    /// Set when the device was reset by `aclrtResetDeviceForce` (a later plain reset fails).
    forced: AtomicBool,
    /// How many stream-ordered frees `mem` holds (written under `mem`; read without a lock,
    /// so that a malloc with none pending does not take `mem` to settle them).
    deferred: AtomicUsize,
    /// Serialises open and teardown. Lock order: outermost (see the module docs).
    pub(crate) life: Mutex<()>,
    /// The allocation table, the address map and the stream-ordered frees. Lock order: after
    /// `vmm` and a pool's mutex. Taken only through [`Self::mem`] (and [`Self::rebuild`]), whose
    /// guard moves `mem_version`.
    mem: Mutex<DevMem>,
    /// Which state of `mem` threads may have seen: moved (under `mem`) by every release of
    /// the lock, so that a range found live under one state is known live without the lock
    /// until the lock is taken again ([`MemGuard::seal`]). Unique process-wide: this device's
    /// instance number in the high bits, a count in the low ones.
    mem_version: AtomicU64,
    /// The pools of this device, by handle (lock-free lookups).
    pub(crate) pools: Pools,
    /// VMM reservations and mappings, physical handles, IPC keys and imports, peer access from
    /// this device. Lock order: before a pool's mutex and `mem`.
    pub(crate) vmm: Mutex<VmmState>,
    /// Its streams, events, contexts, subscriptions and dependency graph (they outlive a reset:
    /// a reset forgets the handles, it does not replace the tables).
    pub(crate) streams: DeviceStreams,
    /// The process's and streams' resource limits (atomics and a leaf lock of their own).
    pub(crate) res: crate::state::res_limit::ResLimits,
    /// Its notifies and IPC events ([`crate::state::notify`]; a reset forgets them).
    pub(crate) notifies: crate::state::notify::DeviceNotifies,
}

impl std::borrow::Borrow<DeviceStreams> for Device {
    fn borrow(&self) -> &DeviceStreams {
        &self.streams
    }
}

impl Device {
    /// The state of device `id` before its first `aclrtSetDevice`, for the runtime of aclInit
    /// generation `generation`.
    #[cfg(test)]
    pub(crate) fn new(id: u32, generation: u64) -> Self {
        Self::with_limits(id, generation, Limits::of(hal::SocProfile::A2))
    }

    /// The state of device `id` before its first `aclrtSetDevice`, for the runtime of aclInit
    /// generation `generation`, with the stream and event limits of its SoC profile.
    pub(crate) fn with_limits(id: u32, generation: u64, limits: Limits) -> Self {
        Self {
            id,
            refcount: AtomicU32::new(0),
            forced: AtomicBool::new(false),
            deferred: AtomicUsize::new(0),
            life: Mutex::new(()),
            mem: Mutex::new(DevMem::default()),
            mem_version: AtomicU64::new(crate::state::memory::next_epoch() << VERSION_COUNT_BITS),
            pools: Pools::new(id, generation),
            vmm: Mutex::new(VmmState::new(id)),
            streams: DeviceStreams::new(id, generation, limits),
            res: crate::state::res_limit::ResLimits::default(),
            notifies: crate::state::notify::DeviceNotifies::new(id, generation),
        }
    }

    /// The `aclrtSetDevice` count (no lock).
    pub fn refcount(&self) -> u32 {
        self.refcount.load(Ordering::Acquire)
    }

    /// Whether the device has a context (no lock).
    pub fn is_open(&self) -> bool {
        self.refcount() > 0
    }

    /// Whether stream-ordered frees may be pending (no lock; a hint re-checked under `mem`).
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred.load(Ordering::Acquire) > 0
    }

    /// Publishes how many stream-ordered frees `mem` holds (call under `mem`).
    pub(crate) fn note_deferred(&self, pending: usize) {
        self.deferred.store(pending, Ordering::Release);
    }

    /// Whether the last reset was `aclrtResetDeviceForce`.
    pub(crate) fn forced(&self) -> bool {
        self.forced.load(Ordering::Acquire)
    }

    /// Sets the count and the forced flag (under `life`).
    pub(crate) fn set_refcount(&self, _life: &MutexGuard<'_, ()>, count: u32, forced: bool) {
        self.forced.store(forced, Ordering::Release);
        self.refcount.store(count, Ordering::Release);
    }

    /// Locks `life`. Lock order: outermost.
    ///
    /// # Errors
    ///
    /// 507000 when a panic poisoned it.
    pub(crate) fn life(&self, api: &str) -> Result<MutexGuard<'_, ()>> {
        crate::sync::lock(&self.life, api, &format_args!("device {}'s open/reset state", self.id))
    }

    /// Locks the memory state. Lock order: after `vmm` and a pool's mutex; nothing else is
    /// taken while it is held.
    ///
    /// # Errors
    ///
    /// 507000 when a panic poisoned it.
    pub(crate) fn mem(&self, api: &str) -> Result<MemGuard<'_>> {
        let guard = crate::sync::lock(&self.mem, api, &format_args!("device {}'s memory", self.id))?;
        Ok(MemGuard { guard, version: &self.mem_version, dirty: false })
    }

    /// [`Self::mem`] even when a panic poisoned it (a teardown that takes what it can).
    pub(crate) fn mem_even_if_failed(&self) -> MemGuard<'_> {
        MemGuard { guard: crate::sync::relock(&self.mem), version: &self.mem_version, dirty: false }
    }

    /// The state of `mem` last published (see [`MemGuard::seal`]); no lock.
    #[inline]
    pub(crate) fn mem_version(&self) -> u64 {
        // Acquire: pairs with the release of the guard that published it.
        self.mem_version.load(Ordering::Acquire)
    }

    /// Locks the VMM/IPC/peer state. Lock order: before a pool's mutex and `mem`.
    ///
    /// # Errors
    ///
    /// 507000 when a panic poisoned it.
    pub(crate) fn vmm(&self, api: &str) -> Result<MutexGuard<'_, VmmState>> {
        crate::sync::lock(&self.vmm, api, &format_args!("device {}'s VMM and IPC state", self.id))
    }

    /// Starts the memory, pool and VMM state again from nothing and clears any poison (device
    /// reset, `aclFinalize`; called under `life`, after the teardown gave back what it could).
    pub(crate) fn rebuild(&self, _life: &MutexGuard<'_, ()>) {
        // Lock order: vmm, then mem (each taken alone here). `relock`: the whole value is
        // replaced, so whatever a panic left half-updated is dropped, not used.
        *crate::sync::relock(&self.vmm) = VmmState::new(self.id);
        self.vmm.clear_poison();
        self.pools.clear();
        *self.mem_even_if_failed() = DevMem::default();
        self.note_deferred(0);
        self.mem.clear_poison();
        self.life.clear_poison();
        self.res.clear();
        crate::state::task_fault::clear(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::ACL_ERROR_RT_INTERNAL_ERROR;

    #[test]
    fn the_refcount_is_read_without_a_lock() {
        let d = Device::new(3, 1);
        assert!(!d.is_open());
        let life = d.life("t").unwrap();
        d.set_refcount(&life, 2, false);
        // Readable while `life` is held by this thread: no lock behind it.
        assert_eq!(d.refcount(), 2);
        d.set_refcount(&life, 0, true);
        assert!(d.forced());
        assert!(!d.is_open());
    }

    #[test]
    fn a_poisoned_memory_state_fails_with_507000_until_a_rebuild() {
        let d = Device::new(1, 1);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = d.mem.lock().unwrap();
            panic!("half-way through an allocation");
        }));
        for _ in 0..2 {
            let e = d.mem("aclrtMalloc").unwrap_err();
            assert_eq!(e.code(), ACL_ERROR_RT_INTERNAL_ERROR);
            assert!(e.message().contains("aclrtMalloc: device 1's memory is failed"), "{}", e.message());
            assert!(e.message().contains("aclrtResetDeviceForce"), "{}", e.message());
        }
        let life = d.life("aclrtResetDevice").unwrap();
        d.rebuild(&life);
        drop(life);
        let m = d.mem("aclrtMalloc").unwrap();
        assert!(m.alloc.is_none() && m.deferred.is_empty() && m.map.is_empty());
    }

    /// Through the runtime: a panic that poisons device 0's memory state fails later calls on
    /// it with 507000 and a message, other devices go on, and `aclrtResetDeviceForce` makes the
    /// device work again. (The only test in this binary that initialises the runtime.)
    #[test]
    fn a_failed_device_answers_507000_and_a_reset_recovers_it() {
        use crate::state::memory::MallocApi;
        const NORMAL_ONLY: u32 = 2;
        // Lock order: the test lock alone (it is taken before any runtime lock).
        let _one_sim = crate::SIM_TEST_LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        crate::runtime::init(None).unwrap();
        let rt = crate::runtime::runtime("t").unwrap();
        rt.set_device(0).unwrap();
        let p = rt.malloc("aclrtMalloc", 4096, NORMAL_ONLY, MallocApi::Malloc, &[]).unwrap();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = rt.device(0).mem.lock().unwrap();
            panic!("a caught panic half-way through changing device 0's memory");
        }));
        let e = rt.malloc("aclrtMalloc", 4096, NORMAL_ONLY, MallocApi::Malloc, &[]).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_INTERNAL_ERROR);
        assert!(e.message().contains("aclrtMalloc: device 0's memory is failed"), "{}", e.message());
        let e = rt.free("aclrtFree", p).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_INTERNAL_ERROR, "{}", e.message());
        if rt.device_count() > 1 {
            rt.set_device(1).unwrap();
            let q = rt.malloc("aclrtMalloc", 4096, NORMAL_ONLY, MallocApi::Malloc, &[]).unwrap();
            rt.free("aclrtFree", q).unwrap();
            rt.reset_device(1, false).unwrap();
        }
        rt.reset_device(0, true).unwrap();
        rt.set_device(0).unwrap();
        let p = rt.malloc("aclrtMalloc", 4096, NORMAL_ONLY, MallocApi::Malloc, &[]).unwrap();
        rt.free("aclrtFree", p).unwrap();
        // Blocks backed and unbacked with no lock held, from several threads at once: every
        // call succeeds, live blocks never share an address, and all memory comes back.
        let (free_before, _) = rt.mem_info("aclrtGetMemInfo", 1).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    rt.set_device(0).unwrap();
                    for i in 0..50u64 {
                        let a = rt.malloc("aclrtMalloc", (3 << 20) + i, 0, MallocApi::Malloc, &[]).unwrap();
                        let b =
                            rt.malloc("aclrtMalloc", 200_000, NORMAL_ONLY, MallocApi::Malloc, &[]).unwrap();
                        assert!(a.abs_diff(b) >= 200_000, "{a:#x} {b:#x}");
                        rt.free("aclrtFree", a).unwrap();
                        rt.free("aclrtFree", b).unwrap();
                    }
                    rt.reset_device(0, false).unwrap();
                });
            }
        });
        assert_eq!(rt.mem_info("aclrtGetMemInfo", 1).unwrap().0, free_before);
        rt.reset_device(0, false).unwrap();
        drop(rt);
        crate::api::finalize().unwrap();
    }
}
