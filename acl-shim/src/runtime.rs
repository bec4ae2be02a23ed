//! The runtime glue: initialisation, the backend, devices and their contexts, the current
//! device of each thread; the per-device state ([`crate::device::Device`]) and the pinned-host
//! table ([`crate::memory::HostMem`]) hang off the [`Runtime`].
//!
//! Everything here is safe Rust over `hal` and `mm`. It owns the rules of the ACL API (sizes,
//! rounding, policies, directions, reference counts) and the messages of its errors. It must not
//! touch raw host pointers: the C edge ([`crate::ffi`]) turns them into slices or addresses
//! before calling in.
//!
//! # Locking
//!
//! The global runtime is an `ArcSwapOption`: looking it up ([`runtime`]) takes no lock, only an
//! atomic load and an `Arc` clone; `aclInit` and `aclFinalize` are serialised by one mutex taken
//! nowhere else (`LIFECYCLE`). Each device's locks and their one order are in
//! [`crate::device`]; the pinned-host table has its own lock, taken alone. A device's reference
//! count is an atomic (reading it takes no lock).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use arc_swap::ArcSwapOption;

use hal::layout::{HOST_WINDOW_BASE, HOST_WINDOW_SIZE};
use hal::{DeviceAddr, DeviceId, SocProfile, VaRange};
#[cfg(feature = "davinci-fake")]
use hal_davinci::fake::FakeKernel;
#[cfg(feature = "davinci-fake")]
use hal_davinci::QueueMode;
use hal_davinci::{Davinci, LibcTransport};
use hal_sim::Sim;
use mm::device::DeviceAllocator;

use crate::codes::*;
use crate::device::Device;
use crate::error::{AclError, Result};
use crate::memory::HostMem;

/// The backend the runtime drives, chosen at `aclInit` from `ACLRS_BACKEND`.
#[derive(Debug)]
#[cfg_attr(
    not(feature = "davinci-fake"),
    expect(clippy::large_enum_variant, reason = "one backend per process, made once at aclInit")
)]
pub enum Backend {
    /// The software NPU (`sim`, the default).
    Sim(Sim),
    /// The published driver ABI spoken to the fake kernel, which serves it from a software
    /// NPU in this process (`davinci-fake`; test code, only in a library built with the
    /// `davinci-fake` feature).
    #[cfg(feature = "davinci-fake")]
    DavinciFake(Davinci<FakeKernel>),
    /// The published driver ABI on `/dev/davinci_manager` (`davinci`).
    Davinci(Davinci<LibcTransport>),
}

impl Backend {
    /// The backend as the driver traits.
    pub fn driver(&self) -> &dyn hal::Driver {
        match self {
            Self::Sim(s) => s,
            #[cfg(feature = "davinci-fake")]
            Self::DavinciFake(d) => d,
            Self::Davinci(d) => d,
        }
    }

    /// The backend's sharing calls.
    pub fn sharing(&self) -> &dyn hal::Sharing {
        match self {
            Self::Sim(s) => s,
            #[cfg(feature = "davinci-fake")]
            Self::DavinciFake(d) => d,
            Self::Davinci(d) => d,
        }
    }

    /// The software NPU that runs this backend's device work, for its diagnostics only (pool
    /// counters): itself, or the one behind the fake kernel. Device work goes through the
    /// driver's capabilities ([`Self::loader`]), never through this.
    pub(crate) fn device_sim(&self) -> Option<&Sim> {
        match self {
            Self::Sim(s) => Some(s),
            #[cfg(feature = "davinci-fake")]
            Self::DavinciFake(d) => Some(d.transport().sim()),
            Self::Davinci(_) => None,
        }
    }

    /// The device's loader capability (kernel binaries, host calls, staged kernel arguments and
    /// batch copies), or `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` naming `api` on a backend without
    /// one (real hardware, whose loader formats are not public).
    pub(crate) fn loader(&self, api: &str) -> Result<&dyn hal::Loader> {
        self.driver().loader().ok_or_else(|| crate::stream::no_loader(api))
    }

    fn from_env() -> Result<Self> {
        Self::from_name(std::env::var("ACLRS_BACKEND").ok().as_deref())
    }

    /// The backend `ACLRS_BACKEND` names (`name`).
    fn from_name(name: Option<&str>) -> Result<Self> {
        let bad = |e: String| AclError::invalid(format!("aclInit: {e}"));
        match name {
            None | Some("") | Some("sim") => Ok(Self::Sim(Sim::from_env().map_err(|e| bad(e.to_string()))?)),
            #[cfg(not(feature = "davinci-fake"))]
            Some("davinci-fake") => Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "aclInit: ACLRS_BACKEND=davinci-fake: this libascendcl was built without the davinci-fake \
                 feature (the fake kernel is test code, left out of the shipped library); use sim or davinci, \
                 or build acl-shim with --features davinci-fake",
            )),
            #[cfg(feature = "davinci-fake")]
            Some("davinci-fake") => {
                let sim = Sim::from_env().map_err(|e| bad(e.to_string()))?;
                let devices = hal::DeviceControl::device_count(&sim);
                let soc = hal::DeviceControl::device_info(&sim, DeviceId(0))
                    .map(|i| i.soc)
                    .unwrap_or(SocProfile::A2);
                let mode = match std::env::var("ACLRS_DAVINCI_QUEUES").ok().as_deref() {
                    None | Some("") | Some("kernel") => QueueMode::KernelSend,
                    Some("ring") => QueueMode::MappedRing,
                    Some(other) => {
                        return Err(bad(format!("ACLRS_DAVINCI_QUEUES={other:?}: expected kernel or ring")))
                    }
                };
                Davinci::with_queue_mode(FakeKernel::new(sim), devices, mode)
                    .map(|d| Self::DavinciFake(d.with_soc(soc)))
                    .map_err(|e| {
                        AclError::new(
                            ACL_ERROR_RT_NO_DEVICE,
                            format!("aclInit: ACLRS_BACKEND=davinci-fake: {e}"),
                        )
                    })
            }
            Some("davinci") => {
                let no_device = |why: String| {
                    AclError::new(ACL_ERROR_RT_NO_DEVICE, format!("aclInit: ACLRS_BACKEND=davinci: {why}"))
                };
                hal_davinci::probe().map_err(no_device)?;
                Davinci::new(LibcTransport, hal_davinci::count_devices())
                    .map(Self::Davinci)
                    .map_err(|e| no_device(e.to_string()))
            }
            Some(other) => Err(AclError::invalid(format!(
                "aclInit: ACLRS_BACKEND={other:?}: expected sim, davinci-fake or davinci"
            ))),
        }
    }
}

/// The initialised runtime of this process.
#[derive(Debug)]
pub struct Runtime {
    pub(crate) generation: u64,
    pub(crate) backend: Backend,
    pub(crate) soc: SocProfile,
    /// Per-device state, by logical device id.
    pub(crate) devices: Box<[Device]>,
    /// The pinned-host table. Lock order: taken alone.
    pub(crate) host: Mutex<HostMem>,
    /// Per device: its streams, events, contexts, subscriptions and dependency graph.
    pub(crate) streams: Box<[crate::stream::DeviceStreams]>,
}

/// The initialised runtime, read by every call without a lock.
static RUNTIME: ArcSwapOption<Runtime> = ArcSwapOption::const_empty();
/// Serialises `aclInit` and `aclFinalize` (and only them): the check that the slot is empty (or
/// full) and the store that fills (or empties) it happen under it. It guards no data, so a
/// panic that poisoned it left nothing half-updated behind it and [`crate::sync::relock`] is
/// right for it.
static LIFECYCLE: Mutex<()> = Mutex::new(());
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Set in a child `fork()`ed after this process's first `aclInit`, by the `pthread_atfork`
/// child handler the callers of [`init`] register first (`crate::ffi::watch_forks`: the C edge
/// holds the `unsafe` of that C call); one relaxed load per call checks it.
static FORKED: AtomicBool = AtomicBool::new(false);
/// The pid that called the first `aclInit` (a forked child still holds its parent's).
static INIT_PID: AtomicU32 = AtomicU32::new(0);

/// Marks this process as a child forked after `aclInit` (the `fork()` child handler: it only
/// stores to an atomic, as a handler running in a forked child must).
pub(crate) fn note_forked() {
    FORKED.store(true, Ordering::Relaxed);
}

/// Refuses every call in a child forked after `aclInit`. CANN does not support that: the
/// parent's devices, streams, device threads and IPC identity cannot be shared with a copy of
/// the process, and a child holding them would act as its parent (for example, import IPC
/// memory its parent's pid was allowed).
///
/// # Errors
///
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in such a child.
pub(crate) fn refuse_in_forked_child(api: &str) -> Result<()> {
    if !FORKED.load(Ordering::Relaxed) {
        return Ok(());
    }
    Err(AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!(
            "{api}: this process (pid {}) was forked from pid {} after aclInit, and the runtime cannot be used in a forked child (CANN does not support fork after aclInit); fork before aclInit, or exec a new program in the child",
            std::process::id(),
            INIT_PID.load(Ordering::Relaxed)
        ),
    ))
}

thread_local! {
    /// The calling thread's current device, tagged with the runtime generation it was set in.
    static CURRENT: Cell<Option<(u64, u32)>> = const { Cell::new(None) };
}

/// Initialises the runtime (`aclInit`). The caller has registered the `fork()` child handler
/// (`crate::ffi::watch_forks`), so that a child forked after this is refused.
///
/// # Errors
///
/// `ACL_ERROR_REPEAT_INITIALIZE` when already initialised; `ACL_ERROR_INVALID_FILE` for an
/// unreadable configuration file, `ACL_ERROR_PARSE_FILE` for one that is not JSON nested at most
/// 10 deep; `ACL_ERROR_INVALID_PARAM` for a bad `ACLRS_SIM_*` setting;
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in a child forked after `aclInit`.
pub fn init(config: Option<&str>) -> Result<()> {
    refuse_in_forked_child("aclInit")?;
    // Lock order: LIFECYCLE first and alone (no other runtime lock is held when it is taken).
    // Relock: it guards no data (see LIFECYCLE).
    let _serial = crate::sync::relock(&LIFECYCLE);
    if RUNTIME.load().is_some() {
        return Err(AclError::new(
            ACL_ERROR_REPEAT_INITIALIZE,
            "aclInit: already initialised (only the first configuration takes effect)",
        ));
    }
    if let Some(path) = config.filter(|p| !p.is_empty()) {
        check_config_file(path)?;
    }
    let backend = Backend::from_env()?;
    let drv = backend.driver();
    let count = drv.device_count();
    let soc = drv.device_info(DeviceId(0)).map(|i| i.soc).unwrap_or(SocProfile::A2);
    let host_window = VaRange::try_new(DeviceAddr(HOST_WINDOW_BASE), HOST_WINDOW_SIZE)
        .map_err(|e| AclError::from_hal(e, "aclInit"))?;
    INIT_PID.store(std::process::id(), Ordering::Relaxed);
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    // Stream and event limits from each device's SoC profile (hal), written once.
    let streams = (0..count)
        .map(|d| {
            let soc = drv.device_info(DeviceId(d)).map_or(soc, |i| i.soc);
            crate::stream::DeviceStreams::new(d, generation, crate::stream::Limits::of(soc))
        })
        .collect();
    RUNTIME.store(Some(Arc::new(Runtime {
        generation,
        backend,
        soc,
        devices: (0..count).map(|d| Device::new(d, generation)).collect(),
        host: Mutex::new(HostMem::new(host_window)),
        streams,
    })));
    Ok(())
}

/// Why the last `aclInit` failed, quoted by the calls made without a runtime.
static INIT_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// Remembers the outcome of an `aclInit` ([`init`]'s result, passed through) so that the calls
/// made after a failed one say why there is no runtime. A repeated `aclInit` changes nothing.
///
/// # Errors
///
/// `r`'s error.
pub fn remember_init(r: Result<()>) -> Result<()> {
    if !matches!(&r, Err(e) if e.code() == ACL_ERROR_REPEAT_INITIALIZE) {
        // Relock: a single store of the message.
        *crate::sync::relock(&INIT_FAILURE) = r.as_ref().err().map(|e| e.message().to_owned());
    }
    r
}

/// Deepest nesting of objects, and separately of arrays, an `aclInit` configuration may have
/// (CANN's limit).
const MAX_CONFIG_DEPTH: usize = 10;

/// The deepest nesting of objects and of arrays in `v` (a scalar is 0, `{}` is 1).
fn json_depth(v: &serde_json::Value) -> (usize, usize) {
    use serde_json::Value;
    let deepest = |items: &mut dyn Iterator<Item = &Value>| {
        items.map(json_depth).fold((0, 0), |(o, a), (o2, a2)| (o.max(o2), a.max(a2)))
    };
    match v {
        Value::Object(map) => {
            let (o, a) = deepest(&mut map.values());
            (o + 1, a)
        }
        Value::Array(items) => {
            let (o, a) = deepest(&mut items.iter());
            (o, a + 1)
        }
        _ => (0, 0),
    }
}

/// Checks that an `aclInit` configuration file is readable, well-formed JSON with at most
/// [`MAX_CONFIG_DEPTH`] levels of objects and of arrays. An empty file is accepted (no settings),
/// as CANN accepts it.
///
/// # Errors
///
/// `ACL_ERROR_INVALID_FILE` when the file cannot be read; `ACL_ERROR_PARSE_FILE` when it is not
/// JSON (the message gives the line and column) or nests too deep.
fn check_config_file(path: &str) -> Result<()> {
    let text = std::fs::read(path).map_err(|e| {
        AclError::new(ACL_ERROR_INVALID_FILE, format!("aclInit: configPath {path:?} cannot be read: {e}"))
    })?;
    if text.is_empty() {
        return Ok(());
    }
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
        AclError::new(
            ACL_ERROR_PARSE_FILE,
            // serde_json's message ends with "at line L column C".
            format!("aclInit: configPath {path:?} is not valid JSON: {e}"),
        )
    })?;
    let (objects, arrays) = json_depth(&value);
    if objects > MAX_CONFIG_DEPTH || arrays > MAX_CONFIG_DEPTH {
        return Err(AclError::new(
            ACL_ERROR_PARSE_FILE,
            format!(
                "aclInit: configPath {path:?} nests objects {objects} deep and arrays {arrays} deep \
                 (at most {MAX_CONFIG_DEPTH} of each)"
            ),
        ));
    }
    Ok(())
}

/// Finalises the runtime (`aclFinalize`): resets every device as `aclrtResetDeviceForce` does
/// (whatever its `aclrtSetDevice` count; queued tasks are dropped, so a wait that can never be
/// satisfied cannot hang the process's exit) and releases the backend.
///
/// # Errors
///
/// `ACL_ERROR_REPEAT_FINALIZE` when not initialised; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in a
/// child forked after `aclInit`.
pub fn finalize() -> Result<()> {
    refuse_in_forked_child("aclFinalize")?;
    let rt = {
        // Lock order: LIFECYCLE first and alone. Relock: it guards no data (see LIFECYCLE).
        let _serial = crate::sync::relock(&LIFECYCLE);
        RUNTIME.swap(None).ok_or_else(|| {
            AclError::new(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: not initialised (repeated finalize?)")
        })?
    };
    crate::obs::write_env_snapshot(&rt);
    for i in 0..rt.devices.len() {
        // `relock`: `life` guards no data (it only serialises open and teardown).
        let life = crate::sync::relock(&rt.devices[i].life);
        // CAST: the device count fits in u32.
        rt.teardown(i as u32, "aclFinalize", true, &life);
    }
    rt.release_pinned();
    CURRENT.with(|c| c.set(None));
    Ok(())
}

/// The initialised runtime.
///
/// # Errors
///
/// `ACL_ERROR_UNINITIALIZE` before `aclInit` or after `aclFinalize`;
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in a child forked after `aclInit`.
pub fn runtime(api: &str) -> Result<Arc<Runtime>> {
    refuse_in_forked_child(api)?;
    // No lock: an atomic load of the slot and an `Arc` clone.
    RUNTIME.load_full().ok_or_else(|| AclError::new(ACL_ERROR_UNINITIALIZE, uninitialised_message(api)))
}

/// "call aclInit first", with the reason the last `aclInit` failed when it did.
fn uninitialised_message(api: &str) -> String {
    // Relock: only read here; written by single stores (`remember_init`).
    let failed = crate::sync::relock(&INIT_FAILURE);
    let why = failed.as_deref().map(|m| format!(" (aclInit failed: {m})")).unwrap_or_default();
    format!("{api}: call aclInit first{why}")
}

/// `v` rounded up to a multiple of `to`, or `None` on overflow.
pub(crate) fn round_up(v: u64, to: u64) -> Option<u64> {
    v.checked_add(to - 1).map(|x| x / to * to)
}

impl Runtime {
    /// The backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Number of devices.
    pub fn device_count(&self) -> u32 {
        // CAST: at most MAX_DEVICES.
        self.devices.len() as u32
    }

    /// The SoC profile of the devices.
    pub fn soc(&self) -> SocProfile {
        self.soc
    }

    fn check_id(&self, api: &str, device_id: i32) -> Result<u32> {
        match u32::try_from(device_id) {
            Ok(d) if d < self.device_count() => Ok(d),
            _ => Err(AclError::new(
                ACL_ERROR_RT_INVALID_DEVICEID,
                format!(
                    "{api}: deviceId {device_id} is out of range (this machine has {} devices: 0..={})",
                    self.device_count(),
                    self.device_count().saturating_sub(1)
                ),
            )),
        }
    }

    /// The state of device `d` (which must be below [`Self::device_count`]).
    pub(crate) fn device(&self, d: u32) -> &Device {
        &self.devices[d as usize]
    }

    /// Locks the pinned-host table. Lock order: taken alone.
    ///
    /// # Errors
    ///
    /// 507000 when a panic poisoned it.
    pub(crate) fn host(&self, api: &str) -> Result<MutexGuard<'_, HostMem>> {
        crate::sync::lock(&self.host, api, &"the pinned-host memory table")
    }

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
            let mut alloc = DeviceAllocator::new(crate::vmm::malloc_window(d));
            // One empty slab chunk per class is kept, so a lone small malloc/free loop does not
            // back and unback a chunk every time; `trim_spares` gives it back.
            alloc.set_keep_spare(true);
            // Lock order: `mem` under `life`.
            match dev.mem(API) {
                Ok(mut m) => {
                    m.alloc = Some(alloc);
                    m.epoch = crate::memory::next_epoch();
                }
                Err(e) => {
                    let _ = self.backend.driver().close(DeviceId(d));
                    return Err(e);
                }
            }
        }
        dev.set_refcount(&life, count, count > 1 && dev.forced());
        let generation = self.generation;
        CURRENT.with(|c| c.set(Some((generation, d))));
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
            CURRENT.with(|c| {
                if c.get() == Some((generation, d)) {
                    c.set(None);
                }
            });
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
        self.pools_teardown(d);
        self.vmm_teardown(d);
        dev.set_refcount(life, 0, force);
        // A failed (poisoned) memory state is not walked: closing the device gives its memory
        // back, and `rebuild` below starts again from nothing.
        let alloc = dev.mem.lock().ok().and_then(|mut m| m.alloc.take());
        if let Some(mut alloc) = alloc {
            let mut backer = crate::memory::HalBacker::new(self.backend.driver(), d);
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
        let ranges: Vec<_> =
            crate::sync::relock(&self.host).heap.drain().into_iter().map(|a| a.range).collect();
        for r in ranges {
            let _ = self.backend.driver().unback_host(r);
        }
    }

    /// The calling thread's current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` when the thread has none (or it was reset).
    pub fn current_device(&self, api: &str) -> Result<u32> {
        let generation = self.generation;
        let cur = CURRENT.with(Cell::get).filter(|&(g, _)| g == generation).map(|(_, d)| d);
        match cur {
            Some(d) if self.device(d).is_open() => Ok(d),
            _ => Err(AclError::new(
                ACL_ERROR_RT_CONTEXT_NULL,
                format!("{api}: no current device on this thread; call aclrtSetDevice first"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "davinci-fake"))]
    #[test]
    fn davinci_fake_is_refused_by_a_library_built_without_the_fake_kernel() {
        let e = Backend::from_name(Some("davinci-fake")).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        assert!(e.message().contains("built without the davinci-fake feature"), "{}", e.message());
    }

    #[test]
    fn an_unknown_backend_is_a_bad_setting() {
        let e = Backend::from_name(Some("tpu")).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_INVALID_PARAM);
        assert!(e.message().contains("expected sim, davinci-fake or davinci"), "{}", e.message());
    }
}
