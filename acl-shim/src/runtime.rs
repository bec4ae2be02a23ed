//! The runtime: the [`Runtime`] struct, the process's `RUNTIME` slot and its lookup
//! ([`runtime`]), `aclInit` ([`init`]), the current device of each thread and the fork check.
//! The per-device state ([`crate::device::Device`]), the backend ([`crate::backend::Backend`])
//! and the pinned-host table ([`crate::state::memory::HostMem`]) hang off the [`Runtime`]; its
//! calls (`impl Runtime` blocks, `aclFinalize` among them) are in [`crate::api`], above this
//! module, which must not use them.
//!
//! Everything here is safe Rust over `hal` and `mm`. It must not touch raw host pointers: the C
//! edge ([`crate::ffi`]) turns them into slices or addresses before calling in.
//!
//! # Locking
//!
//! The global runtime is published twice: in an `ArcSwapOption` and in a [`hazard::Published`].
//! Looking it up ([`runtime_ref`], the C edge's) takes no lock, no reference count and no
//! read-modify-write: the calling thread pins it through a hazard slot of its own (an arc-swap
//! guard where no pin is to be had; [`runtime`] adds an `Arc` clone); `aclInit` and `aclFinalize` are serialised by one mutex taken
//! nowhere else (`LIFECYCLE`). Each device's locks and their one order are in
//! [`crate::device`]; the pinned-host table has its own lock, taken alone. A device's reference
//! count is an atomic (reading it takes no lock).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use arc_swap::ArcSwapOption;

use hal::layout::{host_window_base, HOST_WINDOW_SIZE};
use hal::{DeviceAddr, DeviceId, SocProfile, VaRange};

use crate::backend::Backend;
use crate::codes::*;
use crate::device::Device;
use crate::error::{AclError, Result};
use crate::state::memory::{HostMem, PinnedView};

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
    /// Its live allocations as the copy checks read them, with no lock (published under `host`).
    pub(crate) pinned: PinnedView,
    /// Counts the runtime in [`LIVE`] until every field above is dropped (fields drop in
    /// declaration order): keep it last.
    _live: Live,
}

/// Runtimes made and not yet dropped: the published one, and finalized ones that calls begun
/// before their `aclFinalize` still hold (each keeps its backend, so its VA windows, until the
/// last such call ends). `aclInit` waits for them ([`wait_for_retired`]).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A runtime's count in [`LIVE`].
#[derive(Debug)]
struct Live;

impl Live {
    fn new() -> Self {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Self
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Release: the runtime's other fields (its backend's windows) are gone before a waiter
        // sees the count drop.
        LIVE.fetch_sub(1, Ordering::Release);
    }
}

/// How long `aclInit` waits for the calls still holding a finalized runtime to end.
const RETIRED_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits (up to [`RETIRED_WAIT`]) until no finalized runtime is left (under `LIFECYCLE`, with
/// none published): its VA windows are then free for the next one. `false` when some call
/// still holds one.
fn wait_for_retired() -> bool {
    let start = std::time::Instant::now();
    let mut looks = 0u32;
    // Acquire: pairs with `Live`'s release.
    while LIVE.load(Ordering::Acquire) > 0 {
        if start.elapsed() > RETIRED_WAIT {
            return false;
        }
        // A call that pinned it ends within microseconds (the finalize dropped what it could
        // wait for), so yield first; then sleep briefly between looks.
        looks += 1;
        if looks < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    true
}

/// The initialised runtime, read by every call without a lock.
pub(crate) static RUNTIME: ArcSwapOption<Runtime> = ArcSwapOption::const_empty();
/// The same runtime, read with no read-modify-write ([`runtime_ref`]'s fast path): a thread
/// pins it through a hazard slot of its own ([`hazard`]). Filled and emptied with `RUNTIME`,
/// under `LIFECYCLE`.
pub(crate) static PUBLISHED: hazard::Published<Runtime> = hazard::Published::new();
/// Serialises `aclInit` and `aclFinalize` (and only them): the check that the slot is empty (or
/// full) and the store that fills (or empties) it happen under it. It guards no data, so a
/// panic that poisoned it left nothing half-updated behind it and [`crate::sync::relock`] is
/// right for it.
pub(crate) static LIFECYCLE: Mutex<()> = Mutex::new(());
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
#[inline]
pub(crate) fn refuse_in_forked_child(api: &str) -> Result<()> {
    if !FORKED.load(Ordering::Relaxed) {
        return Ok(());
    }
    Err(forked_child(api))
}

/// [`refuse_in_forked_child`]'s error.
#[cold]
#[inline(never)]
fn forked_child(api: &str) -> AclError {
    AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!(
            "{api}: this process (pid {}) was forked from pid {} after aclInit, and the runtime cannot be used in a forked child (CANN does not support fork after aclInit); fork before aclInit, or exec a new program in the child",
            std::process::id(),
            INIT_PID.load(Ordering::Relaxed)
        ),
    )
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
    // Calls begun before the last aclFinalize may still hold its runtime, and with it the VA
    // windows this one reserves.
    let retired_gone = wait_for_retired();
    let backend = Backend::from_env().map_err(|e| {
        if retired_gone {
            return e;
        }
        AclError::new(
            e.code(),
            format!(
                "{} (calls on other threads that began before the last aclFinalize still hold its runtime \
                 after {} s; end them before aclInit)",
                e.message(),
                RETIRED_WAIT.as_secs()
            ),
        )
    })?;
    let drv = backend.driver();
    let count = drv.device_count();
    let soc = drv.device_info(DeviceId(0)).map(|i| i.soc).unwrap_or(SocProfile::A2);
    let host_window = VaRange::try_new(DeviceAddr(host_window_base()), HOST_WINDOW_SIZE)
        .map_err(|e| AclError::from_hal(e, "aclInit"))?;
    INIT_PID.store(std::process::id(), Ordering::Relaxed);
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    // Stream and event limits from each device's SoC profile (hal), written once.
    let devices = (0..count)
        .map(|d| {
            let soc = drv.device_info(DeviceId(d)).map_or(soc, |i| i.soc);
            Device::with_limits(d, generation, crate::state::stream::Limits::of(soc))
        })
        .collect();
    let rt = Arc::new(Runtime {
        generation,
        backend,
        soc,
        devices,
        host: Mutex::new(HostMem::new(host_window)),
        pinned: PinnedView::default(),
        _live: Live::new(),
    });
    // Under LIFECYCLE, after `RUNTIME` was found empty: `PUBLISHED` is empty too (`finalize`
    // empties both under the same lock).
    let _ = PUBLISHED.publish(Arc::clone(&rt));
    RUNTIME.store(Some(rt));
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
/// The initialised runtime.
///
/// # Errors
///
/// `ACL_ERROR_UNINITIALIZE` before `aclInit` or after `aclFinalize`;
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in a child forked after `aclInit`.
pub fn runtime(api: &str) -> Result<Arc<Runtime>> {
    runtime_ref(api).map(|rt| rt.to_arc())
}

/// The initialised runtime as one call holds it, with no update of its reference count (the
/// cache line every calling thread would otherwise write twice per call):
///
/// - pinned through the calling thread's hazard slot (`PUBLISHED`): no read-modify-write
///   and no fence instruction, so a call that ends by writing a task descriptor does not wait
///   for that descriptor's cache lines to come back from the core that reads them;
/// - or, where no pin is to be had (every hazard slot taken, a thread exiting, a call made
///   inside a call that pinned a runtime since finalized), an arc-swap guard on `RUNTIME`.
///
/// Either way an `aclFinalize` meanwhile does not wait for the call: the runtime stays alive
/// until the call lets it go.
pub struct Rt(Held);

enum Held {
    Pinned(hazard::Pin<'static, Runtime>),
    Guarded(arc_swap::Guard<Option<Arc<Runtime>>>),
}

impl Rt {
    /// A counted reference, for what outlives the call (a thread, a stored callback).
    pub fn to_arc(&self) -> Arc<Runtime> {
        match &self.0 {
            Held::Pinned(p) => p.to_arc(),
            Held::Guarded(g) => {
                Arc::clone(g.as_ref().unwrap_or_else(|| unreachable!("an Rt is made from a full slot")))
            }
        }
    }
}

impl std::ops::Deref for Rt {
    type Target = Runtime;
    #[inline]
    fn deref(&self) -> &Runtime {
        match &self.0 {
            Held::Pinned(p) => p,
            // `runtime_ref` makes a guarded `Rt` only from a full slot.
            Held::Guarded(g) => {
                g.as_deref().unwrap_or_else(|| unreachable!("an Rt is made from a full slot"))
            }
        }
    }
}

impl std::fmt::Debug for Rt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Rt").field(&self.generation).finish()
    }
}

/// The initialised runtime, held for one call ([`Rt`]; cheaper than [`runtime`]).
///
/// # Errors
///
/// `ACL_ERROR_UNINITIALIZE` before `aclInit` or after `aclFinalize`;
/// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` in a child forked after `aclInit`.
#[inline]
pub fn runtime_ref(api: &str) -> Result<Rt> {
    refuse_in_forked_child(api)?;
    // One thread-local access: the thread's hazard slot claim (made on its first call, and
    // given back when it exits: `tls::arm_release`).
    if let Some(p) = crate::tls::with(|l| PUBLISHED.pin(&l.pin, crate::tls::arm_release)) {
        return Ok(Rt(Held::Pinned(p)));
    }
    runtime_guarded(api)
}

/// Runs `f` on the initialised runtime, held for the call as [`runtime_ref`] holds it, and on
/// the calling thread's state, with one thread-local access for both. The hot submissions use
/// it: the runtime's pin then stays in registers instead of coming back through memory from
/// a thread-local access of its own, whose result a later wider load would have to wait for
/// (a store-forwarding stall, which waits until every older store of the thread is written).
///
/// # Errors
///
/// Those of [`runtime_ref`], and `f`'s.
#[inline]
pub(crate) fn with_runtime<R>(
    api: &str,
    f: impl FnOnce(&Runtime, &crate::tls::Local) -> Result<R>,
) -> Result<R> {
    refuse_in_forked_child(api)?;
    crate::tls::with(|l| match PUBLISHED.pin(&l.pin, crate::tls::arm_release) {
        Some(p) => f(&p, l),
        None => f(&*runtime_guarded(api)?, l),
    })
}

/// [`runtime_ref`] when no pin is to be had: an arc-swap guard (two read-modify-writes).
#[cold]
#[inline(never)]
fn runtime_guarded(api: &str) -> Result<Rt> {
    let guard = RUNTIME.load();
    if guard.is_none() {
        return Err(uninitialised(api));
    }
    Ok(Rt(Held::Guarded(guard)))
}

/// `ACL_ERROR_UNINITIALIZE`: "call aclInit first", with the reason the last `aclInit` failed
/// when it did.
#[cold]
#[inline(never)]
fn uninitialised(api: &str) -> AclError {
    // Relock: only read here; written by single stores (`remember_init`).
    let failed = crate::sync::relock(&INIT_FAILURE);
    let why = failed.as_deref().map(|m| format!(" (aclInit failed: {m})")).unwrap_or_default();
    AclError::new(ACL_ERROR_UNINITIALIZE, format!("{api}: call aclInit first{why}"))
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

    pub(crate) fn check_id(&self, api: &str, device_id: i32) -> Result<u32> {
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

    /// Every device's streams, events, contexts and subscriptions, by device id.
    pub(crate) fn streams(&self) -> impl Iterator<Item = &crate::state::stream::DeviceStreams> {
        self.devices.iter().map(|dev| &dev.streams)
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
    /// The calling thread's current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` when the thread has none (or it was reset).
    pub fn current_device(&self, api: &str) -> Result<u32> {
        self.current_of(crate::tls::current(), api)
    }

    /// [`Self::current_device`] read from the calling thread's state `l` (for a caller that
    /// already holds it: one thread-local access per call).
    #[inline]
    pub(crate) fn current_device_in(&self, l: &crate::tls::Local, api: &str) -> Result<u32> {
        self.current_of(l.current(), api)
    }

    /// The current device a thread's state shows (`current`), when it is of this runtime and
    /// open.
    #[inline]
    fn current_of(&self, current: Option<(u64, u32)>, api: &str) -> Result<u32> {
        match current {
            Some((g, d)) if g == self.generation && self.device(d).is_open() => Ok(d),
            _ => Err(no_current_device(api)),
        }
    }
}

/// The error of a call that needs a current device on a thread without one.
#[cold]
#[inline(never)]
fn no_current_device(api: &str) -> AclError {
    AclError::new(
        ACL_ERROR_RT_CONTEXT_NULL,
        format!("{api}: no current device on this thread; call aclrtSetDevice first"),
    )
}
