//! The software NPU: a faithful, fast and strict stand-in for an Ascend device, and the
//! default backend of aclrs everywhere.
//!
//! # What it models
//!
//! - Devices (2 by default), each with HBM held in a POSIX shared-memory object named after the
//!   simulated machine (`ACLRS_SIM_INSTANCE`) and mapped at the device's real VA window, so a
//!   device pointer is a real device-looking address that host-built kernels can dereference.
//! - The device firmware's physical memory management: `mm::phys` frames behind every backed
//!   range, with 2 MiB and 1 GiB page budgets.
//! - A task-scheduler thread per device running `sched`'s executor, and a DMA engine that moves
//!   bytes only where memory is mapped: a stray address is an error, not a host crash.
//! - Pinned host memory in its own window, so an address alone tells pinned from pageable.
//!
//! # Rules
//!
//! - All `unsafe` lives in `sys`; everything else is safe code over its fenced API.
//! - One `Sim` exists per process at a time (the windows are at fixed addresses).
//! - Every process that sets `ACLRS_SIM_INSTANCE` to the same name attaches to the same
//!   simulated machine: its devices' HBM objects are mapped by all of them (same bytes), and
//!   their frames are allocated through one shared registry (same capacity), which also holds
//!   the IPC export tables and reclaims what a dead process held. See [`registry`] for the
//!   design and its limits.
//!
//! Settings are in [`config`]; the README lists every `ACLRS_SIM_*` variable.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod config;
mod device;
mod dma;
pub mod fault;
mod kernel;
mod lane;
mod loader_data;
pub mod registry;
mod scheduler;
mod sys;
mod windows;

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use sched::CachePadded;

use hal::layout::{device_window_base, host_window_base, pool_slice_base, HOST_WINDOW_SIZE};
use hal::{
    BackRequest, CopyEngine, DeviceAddr, DeviceControl, DeviceId, DeviceInfo, Driver, Error, ErrorKind,
    EventId, EventInfo, EventWait, Events, Loader, MemAttr, MemoryBacking, MemoryInfo, PageSize, PhysHandle,
    PhysicalMemory, PinnedHost, QueueId, QueueProgress, Queues, Result, ShareInfo, ShareKind, ShareName,
    Sharing, TaskDesc, TaskStatus, VaRange,
};

pub use config::{ConfigError, SimConfig};
pub use kernel::{kernel_fail, HostHook, KERNEL_FAULT_DEFAULT, KERNEL_TIMEOUT};

/// Threads that run tasks on each device of the software NPU (at most this many tasks of
/// different queues run at once).
pub const WORKERS_PER_DEVICE: usize = scheduler::WORKERS;

use device::Device;
use registry::Registry;
use scheduler::Scheduler;

/// Errors of opening the software NPU or one of its devices, with the detail a user needs.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A setting is malformed.
    #[error("bad software-NPU setting {0}")]
    Config(#[from] ConfigError),
    /// The fixed VA windows could not be reserved (another `Sim` in this process, or the
    /// address space is too small).
    #[error("cannot reserve the {what} VA window at {addr:#x}: {source}")]
    Reserve {
        /// Which window.
        what: &'static str,
        /// Its base address.
        addr: u64,
        /// The OS error.
        source: std::io::Error,
    },
    /// Another process holds the device.
    #[error(
        "device {device} of simulated machine '{instance}' is in use by another process; \
         give each process its own ACLRS_SIM_INSTANCE"
    )]
    DeviceBusy {
        /// The simulated machine.
        instance: String,
        /// The physical device id.
        device: u32,
    },
    /// The device's HBM object could not be created.
    #[error("cannot create HBM object {name}: {source}")]
    Hbm {
        /// The shared-memory object name.
        name: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The machine's shared registry could not be opened or joined.
    #[error("cannot attach to simulated machine '{instance}': {source}")]
    Registry {
        /// The simulated machine.
        instance: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The device's scheduler thread could not start.
    #[error("cannot start the task scheduler of device {device}: {source}")]
    Thread {
        /// The logical device id.
        device: u32,
        /// The OS error.
        source: std::io::Error,
    },
    /// The device id is not visible.
    #[error("device {0} does not exist")]
    NoDevice(u32),
}

impl From<&SimError> for Error {
    fn from(e: &SimError) -> Self {
        match e {
            SimError::Config(_) => Error::new(ErrorKind::InvalidArgument, "bad software-NPU setting"),
            SimError::DeviceBusy { .. } => Error::new(ErrorKind::Busy, "device in use by another process"),
            SimError::NoDevice(_) => Error::new(ErrorKind::NoDevice, "no such device"),
            _ => Error::new(ErrorKind::Internal, "cannot open the software NPU"),
        }
    }
}

/// An open device with its scheduler.
#[derive(Debug)]
struct Slot {
    device: Arc<Device>,
    scheduler: Scheduler,
}

/// Everything the DMA engine and the scheduler threads reach: the devices and the host window.
#[derive(Debug)]
pub(crate) struct Fabric {
    /// One slot per visible device, read lock-free (an atomic load and an `Arc` clone) by
    /// every driver call: no process-wide lock on a submit or a progress read. Padded off the
    /// line of the fabric's reference counts, which every task's worker writes (it upgrades
    /// its weak reference to run the task) and every submit would otherwise miss on.
    slots: CachePadded<Box<[ArcSwapOption<Slot>]>>,
    host: sys::Window,
}

impl Fabric {
    pub(crate) fn device(&self, index: u32) -> Option<Arc<Device>> {
        self.with_slot(index, |s| Arc::clone(&s.device))
    }

    /// Runs `f` on the open slot `index` without taking a reference on it: an `arc_swap`
    /// guard, so that threads using one device (its submitters and its workers) do not bounce
    /// the slot's reference count between their cores on every task.
    fn with_slot<R>(&self, index: u32, f: impl FnOnce(&Slot) -> R) -> Option<R> {
        let slot = self.slots.get(index as usize)?.load();
        slot.as_deref().map(f)
    }

    fn slot(&self, index: u32) -> Option<Arc<Slot>> {
        self.slots.get(index as usize).and_then(ArcSwapOption::load_full)
    }
}

/// The software NPU.
#[derive(Debug)]
pub struct Sim {
    config: SimConfig,
    fabric: Arc<Fabric>,
    open_lock: std::sync::Mutex<()>,
    registry: std::sync::Mutex<Option<Arc<Registry>>>,
}

impl Sim {
    /// Starts a software NPU with the settings of the process environment.
    ///
    /// # Errors
    ///
    /// [`SimError::Config`] for a bad setting, [`SimError::Reserve`] when the windows are taken.
    pub fn from_env() -> std::result::Result<Self, SimError> {
        Self::new(SimConfig::from_env()?)
    }

    /// Starts a software NPU with `config`. No device is opened yet.
    ///
    /// # Errors
    ///
    /// [`SimError::Reserve`] when the pinned-host window cannot be reserved (for example while
    /// another `Sim` lives in this process).
    pub fn new(config: SimConfig) -> std::result::Result<Self, SimError> {
        windows::settle(&config.instance).map_err(|e| SimError::Reserve {
            what: "every",
            addr: host_window_base(),
            source: std::io::Error::other(e),
        })?;
        let host = sys::Window::reserve(host_window_base(), HOST_WINDOW_SIZE)
            .map_err(|source| SimError::Reserve { what: "pinned-host", addr: host_window_base(), source })?;
        let slots = (0..config.visible_count()).map(|_| ArcSwapOption::empty()).collect();
        Ok(Self {
            config,
            fabric: Arc::new(Fabric { slots: CachePadded(slots), host }),
            open_lock: std::sync::Mutex::new(()),
            registry: std::sync::Mutex::new(None),
        })
    }

    /// The settings this NPU runs with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    fn info_of(&self) -> DeviceInfo {
        DeviceInfo {
            soc: self.config.soc,
            memory: self.config.memory,
            hbm_bytes: self.config.hbm_bytes,
            huge_budget_bytes: self.config.huge_budget_bytes,
            giant_budget_bytes: self.config.giant_budget_bytes,
        }
    }

    /// The shared-memory object name of physical device `physical`.
    pub fn hbm_object_name(&self, physical: u32) -> String {
        registry::hbm_name(&self.config.instance, physical)
    }

    /// The machine's registry, attaching this process on first use.
    fn registry(&self) -> std::result::Result<Arc<Registry>, SimError> {
        let mut r = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(reg) = r.as_ref() {
            return Ok(Arc::clone(reg));
        }
        let reg = Registry::attach(&self.config)
            .map_err(|source| SimError::Registry { instance: self.config.instance.clone(), source })?;
        *r = Some(Arc::clone(&reg));
        Ok(reg)
    }

    /// The counters through which this process publishes the stream-ordered pool figures of
    /// logical device `dev` for `aclrs-smi` (see [`registry::view`]); `None` when the machine's
    /// registry cannot be joined or the device or pid is out of the slots' range.
    pub fn pool_counters(&self, dev: DeviceId) -> Option<registry::view::PoolCounters> {
        let physical = self.physical(dev).ok()?;
        registry::view::PoolCounters::new(self.registry().ok()?, physical)
    }

    /// The physical device behind logical `dev`.
    fn physical(&self, dev: DeviceId) -> Result<u32> {
        self.config.visible.get(dev.index()).copied().ok_or(Error::new(ErrorKind::NoDevice, "no such device"))
    }

    /// Opens logical device `dev`, with a detailed error.
    ///
    /// # Errors
    ///
    /// [`SimError::NoDevice`], [`SimError::Registry`], [`SimError::Hbm`],
    /// [`SimError::Reserve`] or [`SimError::Thread`].
    pub fn open_device(&self, dev: DeviceId) -> std::result::Result<(), SimError> {
        let _serial = self.open_lock.lock().unwrap_or_else(|p| p.into_inner());
        let Some(&physical) = self.config.visible.get(dev.index()) else {
            return Err(SimError::NoDevice(dev.0));
        };
        if self.fabric.slot(dev.0).is_some() {
            return Ok(());
        }
        let registry = self.registry()?;
        let name = self.hbm_object_name(physical);
        let base = device_window_base(dev.0);
        let pool = pool_slice_base(dev.0);
        let device = Device::open(self.info_of(), &name, base, pool, registry, physical).map_err(
            |source| match source.raw_os_error() {
                Some(libc::EEXIST) => SimError::Reserve { what: "device", addr: base, source },
                _ => SimError::Hbm { name: name.clone(), source },
            },
        )?;
        let scheduler = Scheduler::start(dev.0, Arc::downgrade(&self.fabric))
            .map_err(|source| SimError::Thread { device: dev.0, source })?;
        let slot = Arc::new(Slot { device: Arc::new(device), scheduler });
        // Serialised with close by `open_lock`.
        self.fabric.slots[dev.index()].store(Some(slot));
        Ok(())
    }

    fn slot(&self, dev: DeviceId) -> Result<Arc<Slot>> {
        if dev.index() >= self.config.visible.len() {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        self.fabric.slot(dev.0).ok_or(Error::new(ErrorKind::NoDevice, "device not open"))
    }

    fn device(&self, dev: DeviceId) -> Result<Arc<Device>> {
        self.slot(dev).map(|s| Arc::clone(&s.device))
    }

    fn check_owned(&self, dev: DeviceId, addr: DeviceAddr) -> Result<Arc<Device>> {
        let d = self.device(dev)?;
        if !d.owns(addr) {
            return Err(Error::new(ErrorKind::InvalidArgument, "address not in this device's window"));
        }
        Ok(d)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        for i in 0..self.config.visible_count() {
            let _ = self.close(DeviceId(i));
        }
        if let Some(reg) = self.registry.lock().unwrap_or_else(|p| p.into_inner()).take() {
            reg.detach();
        }
    }
}

impl DeviceControl for Sim {
    fn device_count(&self) -> u32 {
        self.config.visible_count()
    }

    fn device_info(&self, dev: DeviceId) -> Result<DeviceInfo> {
        if dev.index() >= self.config.visible.len() {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        Ok(self.info_of())
    }

    fn open(&self, dev: DeviceId) -> Result<()> {
        self.open_device(dev).map_err(|e| Error::from(&e))
    }

    fn close(&self, dev: DeviceId) -> Result<()> {
        if dev.index() >= self.config.visible.len() {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        let _serial = self.open_lock.lock().unwrap_or_else(|p| p.into_inner());
        // Drain the queues while the device is still reachable, so queued tasks run; only then
        // remove it (the windows and HBM object go with the last reference).
        if let Some(slot) = self.fabric.slot(dev.0) {
            slot.scheduler.stop();
        }
        self.fabric.slots[dev.index()].store(None);
        Ok(())
    }

    fn memory_info(&self, dev: DeviceId) -> Result<MemoryInfo> {
        self.device(dev)?.memory_info()
    }
}

impl MemoryBacking for Sim {
    fn back(&self, dev: DeviceId, req: &BackRequest) -> Result<()> {
        self.device(dev)?.back(req)
    }

    fn unback(&self, dev: DeviceId, range: VaRange) -> Result<()> {
        self.device(dev)?.unback(range)
    }

    fn back_many(&self, dev: DeviceId, reqs: &[BackRequest]) -> Result<()> {
        self.device(dev)?.back_many(reqs)
    }

    fn unback_many(&self, dev: DeviceId, ranges: &[VaRange]) -> Result<()> {
        self.device(dev)?.unback_many(ranges)
    }
}

impl PhysicalMemory for Sim {
    fn alloc_physical(
        &self,
        dev: DeviceId,
        len_bytes: u64,
        page_size: PageSize,
        attrs: MemAttr,
    ) -> Result<PhysHandle> {
        self.device(dev)?.alloc_physical(len_bytes, page_size, attrs)
    }

    fn free_physical(&self, dev: DeviceId, handle: PhysHandle) -> Result<()> {
        self.device(dev)?.free_physical(handle)
    }

    fn map_physical(&self, dev: DeviceId, handle: PhysHandle, offset: u64, range: VaRange) -> Result<()> {
        self.device(dev)?.map_physical(handle, offset, range)
    }

    fn unmap_physical(&self, dev: DeviceId, range: VaRange) -> Result<()> {
        self.device(dev)?.unmap_physical(range)
    }
}

impl Sharing for Sim {
    fn process_id(&self) -> u32 {
        // The host pid, as a driver reports the bare tgid inside containers too.
        sys::host_pid()
    }

    fn export_range(
        &self,
        dev: DeviceId,
        range: VaRange,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        self.device(dev)?.export_range(range, kind, no_whitelist)
    }

    fn export_physical(
        &self,
        dev: DeviceId,
        handle: PhysHandle,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        self.device(dev)?.export_physical(handle, kind, no_whitelist)
    }

    fn set_share_pids(&self, name: &ShareName, pids: &[u32]) -> Result<()> {
        self.registry().map_err(|e| Error::from(&e))?.set_pids(name, pids)
    }

    fn share_info(&self, name: &ShareName) -> Result<ShareInfo> {
        Ok(device::share_info(&self.registry().map_err(|e| Error::from(&e))?.share(name)?))
    }

    fn import_share(&self, name: &ShareName, dev: DeviceId) -> Result<(PhysHandle, ShareInfo)> {
        let _ = self.physical(dev)?;
        self.device(dev)?
            .import(name, |physical| crate::sys::ShmObject::open_existing(&self.hbm_object_name(physical)))
    }

    fn destroy_share(&self, name: &ShareName) -> Result<()> {
        self.registry().map_err(|e| Error::from(&e))?.destroy(name)
    }
}

impl PinnedHost for Sim {
    fn back_host(&self, range: VaRange) -> Result<()> {
        let base = self.fabric.host.base();
        if !self.fabric.host.contains(range.start().as_u64())
            || range.end() > base + self.fabric.host.len_bytes()
        {
            return Err(Error::new(ErrorKind::InvalidArgument, "range outside the pinned-host window"));
        }
        self.fabric.host.map_anonymous(range.start().as_u64() - base, range.len_bytes()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists || e.kind() == std::io::ErrorKind::InvalidInput {
                Error::new(ErrorKind::InvalidArgument, "pinned-host range misaligned or already backed")
            } else {
                Error::new(ErrorKind::OutOfMemory, "cannot pin more host memory")
            }
        })
    }

    fn unback_host(&self, range: VaRange) -> Result<()> {
        let base = self.fabric.host.base();
        if !self.fabric.host.contains(range.start().as_u64()) {
            return Err(Error::new(ErrorKind::InvalidHandle, "range outside the pinned-host window"));
        }
        self.fabric
            .host
            .unmap(range.start().as_u64() - base, range.len_bytes())
            .map_err(|_| Error::new(ErrorKind::InvalidHandle, "pinned-host range not backed"))
    }

    fn write_host(&self, dst: DeviceAddr, src: &[u8]) -> Result<()> {
        self.write_pinned(dst, src)
    }

    fn read_host(&self, dst: &mut [u8], src: DeviceAddr) -> Result<()> {
        self.read_pinned(dst, src)
    }
}

impl CopyEngine for Sim {
    fn copy_to_device(&self, dev: DeviceId, dst: DeviceAddr, src: &[u8]) -> Result<()> {
        let _d = self.check_owned(dev, dst)?;
        self.fabric.write(dst, src)
    }

    fn copy_from_device(&self, dev: DeviceId, dst: &mut [u8], src: DeviceAddr) -> Result<()> {
        let _d = self.check_owned(dev, src)?;
        self.fabric.read(dst, src)
    }

    fn copy_device(
        &self,
        dst_dev: DeviceId,
        dst: DeviceAddr,
        src_dev: DeviceId,
        src: DeviceAddr,
        len_bytes: u64,
    ) -> Result<()> {
        let _a = self.check_owned(dst_dev, dst)?;
        let _b = self.check_owned(src_dev, src)?;
        self.fabric.copy(dst, src, len_bytes)
    }

    fn set_device(&self, dev: DeviceId, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        let _d = self.check_owned(dev, dst)?;
        self.fabric.fill(dst, value, len_bytes)
    }

    fn copy_any(&self, dst: DeviceAddr, src: DeviceAddr, len_bytes: u64) -> Result<()> {
        self.dma_copy(dst, src, len_bytes)
    }

    fn set_any(&self, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        self.dma_fill(dst, value, len_bytes)
    }
}

impl Sim {
    /// Makes `queue` wait, after everything submitted to it so far, until `target_queue` has
    /// completed its task `target_seq`, which may not have been submitted yet (a device that
    /// takes SQEs from several rings sees a wait before the record it names). Returns the
    /// wait's sequence number.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown `queue`; [`ErrorKind::QueueFull`].
    pub fn wait_point(
        &self,
        dev: DeviceId,
        queue: QueueId,
        target_queue: QueueId,
        target_seq: u64,
    ) -> Result<u64> {
        self.slot(dev)?.scheduler.wait_point(queue, target_queue, target_seq)
    }

    /// The failure [`take_error`](hal::Queues::take_error) would answer, left in place: a queue
    /// in stop-on-failure mode that a failure stopped skips what is submitted to it until
    /// its error is taken (a device model takes it once the host has seen the failure).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown queue.
    pub fn pending_error(&self, dev: DeviceId, queue: QueueId) -> Result<Option<TaskStatus>> {
        self.slot(dev)?.scheduler.pending_error(queue)
    }

    /// Whether `queue` takes one more task now; a submission to a full queue waits for room,
    /// which a device model that feeds several queues from one thread must not do.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown queue.
    pub fn has_room(&self, dev: DeviceId, queue: QueueId) -> Result<bool> {
        self.slot(dev)?.scheduler.has_room(queue)
    }

    /// Lets any process import share `name` of this process (what the driver's
    /// `SHMEM_ATTR_TYPE_NO_WLIST_IN_SERVER` attribute does).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::PermissionDenied`] when this process did not export `name` or already
    /// whitelisted pids; [`ErrorKind::InvalidArgument`] for an unknown share.
    pub fn disable_share_whitelist(&self, name: &ShareName) -> Result<()> {
        self.registry().map_err(|e| Error::from(&e))?.disable_whitelist(name)
    }

    /// Copies host bytes into pinned host memory at `dst` (the DMA engine's host side).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when the range is not live pinned memory.
    pub fn write_pinned(&self, dst: DeviceAddr, src: &[u8]) -> Result<()> {
        if !self.fabric.host.contains(dst.as_u64()) {
            return Err(Error::new(ErrorKind::InvalidHandle, "not a pinned-host address"));
        }
        self.fabric.write(dst, src)
    }

    /// Copies pinned host memory at `src` into host bytes.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when the range is not live pinned memory.
    pub fn read_pinned(&self, dst: &mut [u8], src: DeviceAddr) -> Result<()> {
        if !self.fabric.host.contains(src.as_u64()) {
            return Err(Error::new(ErrorKind::InvalidHandle, "not a pinned-host address"));
        }
        self.fabric.read(dst, src)
    }

    /// Copies between any two mapped addresses (device windows or pinned host), on the DMA path.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when a byte of either range is not mapped.
    pub fn dma_copy(&self, dst: DeviceAddr, src: DeviceAddr, len_bytes: u64) -> Result<()> {
        self.fabric.copy(dst, src, len_bytes)
    }

    /// Fills any mapped range (device window or pinned host) on the DMA path.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when a byte of the range is not mapped.
    pub fn dma_fill(&self, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        self.fabric.fill(dst, value, len_bytes)
    }
}

impl Queues for Sim {
    fn create_queue(&self, dev: DeviceId, depth: u32) -> Result<QueueId> {
        self.slot(dev)?.scheduler.create_queue(depth)
    }

    fn destroy_queue(&self, dev: DeviceId, queue: QueueId) -> Result<()> {
        self.slot(dev)?.scheduler.destroy_queue(queue)
    }

    fn submit(&self, dev: DeviceId, queue: QueueId, task: TaskDesc) -> Result<u64> {
        if dev.index() >= self.config.visible.len() {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        // A guard, not a clone: no reference-count write per task (see `Fabric::with_slot`).
        // A submit that waits for room holds it; a device closed meanwhile stays alive until
        // the submit returns, as with a clone.
        self.fabric
            .with_slot(dev.0, |s| s.scheduler.submit(queue, task))
            .unwrap_or(Err(Error::new(ErrorKind::NoDevice, "device not open")))
    }

    fn wait_point(&self, dev: DeviceId, queue: QueueId, target: QueueId, target_seq: u64) -> Result<u64> {
        Sim::wait_point(self, dev, queue, target, target_seq)
    }

    fn port(&self, dev: DeviceId, queue: QueueId) -> Option<Arc<dyn hal::QueuePort>> {
        let port = self.fabric.with_slot(dev.0, |s| s.scheduler.port(queue))??;
        Some(Arc::new(port))
    }

    fn progress(&self, dev: DeviceId, queue: QueueId) -> Result<QueueProgress> {
        self.slot(dev)?.scheduler.progress(queue)
    }

    fn take_error(&self, dev: DeviceId, queue: QueueId) -> Result<Option<TaskStatus>> {
        self.slot(dev)?.scheduler.take_error(queue)
    }

    fn wait(&self, dev: DeviceId, queue: QueueId, seq: u64, timeout_ms: Option<u32>) -> Result<()> {
        // Do not hold the slot lock while waiting: clone the Arc and wait on it.
        let slot = self.slot(dev)?;
        slot.scheduler.wait(queue, seq, timeout_ms)
    }

    fn abort_queue(&self, dev: DeviceId, queue: QueueId, head: hal::AbortHead) -> Result<usize> {
        self.slot(dev)?.scheduler.abort_queue(queue, head)
    }

    fn set_stop_on_failure(&self, dev: DeviceId, queue: QueueId, stop: bool) -> Result<()> {
        self.slot(dev)?.scheduler.set_stop_on_failure(queue, stop)
    }
}

impl Events for Sim {
    fn create_event(&self, dev: DeviceId) -> Result<EventId> {
        self.slot(dev)?.scheduler.create_event()
    }

    fn destroy_event(&self, dev: DeviceId, event: EventId) -> Result<()> {
        self.slot(dev)?.scheduler.destroy_event(event)
    }

    fn record_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<u64> {
        self.slot(dev)?.scheduler.record_event(queue, event)
    }

    fn wait_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<EventWait> {
        self.slot(dev)?.scheduler.wait_event(queue, event)
    }

    fn reset_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<()> {
        self.slot(dev)?.scheduler.reset_event(queue, event)
    }

    fn event_info(&self, dev: DeviceId, event: EventId) -> Result<EventInfo> {
        self.slot(dev)?.scheduler.event_info(event)
    }

    fn is_ordered_before(&self, dev: DeviceId, queue: QueueId, seq: u64, later: QueueId) -> Result<bool> {
        Ok(self.slot(dev)?.scheduler.is_ordered_before(queue, seq, later))
    }
}

impl Driver for Sim {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn loader(&self) -> Option<&dyn Loader> {
        Some(self)
    }
}
