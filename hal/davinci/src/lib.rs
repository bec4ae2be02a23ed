//! The davinci backend: the published Ascend driver ABI over `ioctl`/`mmap` on
//! `/dev/davinci_manager`.
//!
//! Every system call goes through one [`Transport`]: [`LibcTransport`] on a machine with the
//! driver, or (feature `fake-kernel`) `fake::FakeKernel`, which decodes the same argument
//! structs ([`hal::davinci_abi`]) and serves them from the software NPU. The backend,
//! [`Davinci`], implements the `hal` driver traits on top.
//!
//! # What this backend does
//!
//! - Start-up ([`Davinci::new`]): open the multiplexer, bind an fd to `"SVM"`, create the
//!   process's SVM state (`ALLOC_PROC_STRUCT`), ask for the SVM window (`GET_MMAP_INFO`) and
//!   mmap each segment at its address. A driver that rejects these commands with `ENOTTY` or
//!   `EINVAL` is refused as speaking another ABI than [`hal::davinci_abi::PINNED_RELEASE`]. A
//!   module bind answered with `EBUSY` is retried every 100 ms, up to 2400 times.
//! - Device open: two more fds bound to `"TSDRV"` (ioctls) and `"TSDRV_MMAP"`.
//! - Memory: the caller chooses the VA (as `mm` does); [`MemoryBacking::back`] announces it
//!   with `ALLOC` and populates it with `ADVISE`; `unback` is `FREE_PAGES`. VMM is
//!   `MEM_CREATE`/`MEM_MAP`/`MEM_UNMAP`/`MEM_RELEASE`. Copies and sets are `MEMCPY`/`MEMSET8`.
//! - Queues in one of two modes ([`QueueMode`], per instance): the kernel-send mode
//!   (`TRS_SQCQ_ALLOC`, `TRS_SQCQ_SEND`, `TRS_SQCQ_RECV`, `TRS_SQCQ_FREE`; the default) or the
//!   mapped-ring mode (the SQ ring, its control pages and the doorbell mmapped on the
//!   `TSDRV_MMAP` fd and handed to `TRS_SQCQ_ALLOC` in a `trs_uio_info`; SQEs written into the
//!   ring, the doorbell rung, CQEs read from a CQ ring). The SQE and CQE images and the CQ ring
//!   are this crate's own ([`sqe`]): the firmware's formats are not public, so queues are only
//!   meaningful against the fake kernel today. Ordering and completion are `sched`'s, as on the
//!   software NPU: the mapped SQ is a [`sched::Ring`] over the mapped slots, and each queue's
//!   completions (CQ drain or `TRS_SQCQ_RECV`) go into a [`sched::Progress`] word, so a wait
//!   for what is done makes no system call. An abort (`Queues::abort_queue`, a forced stream
//!   destroy or device reset) is `TRS_SQCQ_CONFIG(SQCQ_RESET)`.
//! - IPC by name behind `hal::Sharing`: `IPC_MEM_CREATE`, `IPC_MEM_SET_PID`,
//!   `IPC_MEM_SET_ATTR`, `IPC_MEM_QUERY`, `IPC_MEM_DESTROY`; an import is a handle whose
//!   mapping is `IPC_MEM_OPEN` at the caller's VA and whose unmapping is `IPC_MEM_CLOSE`.
//! - Shareable handles of VMM memory behind the same trait: `MEM_EXPORT` (and `MEM_SET_ATTR`
//!   without a whitelist), `MEM_SET_PID`, `MEM_GET_INFO`, `MEM_IMPORT`; the share ends with the
//!   exporter's `MEM_RELEASE`.
//! - Queries (`QUERY_MEM_USEDINFO`), pinned host memory (`ADVISE(HOST)`, host-to-host
//!   `MEMCPY`), events (ids from `TRS_RES_ID_ALLOC`, timestamp-then-record, wait and reset
//!   SQEs, timestamps in a table in the driver's part of the device window, ids given back
//!   only after the SQEs naming them ran) and failure-mode SQEs.
//!
//! # What it does not do
//!
//! Kernels, host calls and batch copies need a device-side loader whose formats are not
//! public: they work only over the fake kernel. Nothing here has run on real hardware.

use core::ffi::c_void;
use std::collections::HashMap;
use std::ffi::CStr;
use std::fmt;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hal::davinci_abi::{
    self as abi, davinci_intf_open_arg, devmm_free_pages_para, devmm_get_mmap_para, devmm_ioctl_arg,
    devmm_mem_advise_para, devmm_mem_alloc_para, devmm_mem_copy_para, devmm_mem_create_para,
    devmm_mem_ipc_close_para, devmm_mem_ipc_create_para, devmm_mem_ipc_destroy_para, devmm_mem_ipc_open_para,
    devmm_mem_ipc_set_attr_para, devmm_mem_ipc_set_pid_para, devmm_mem_map_para, devmm_mem_memset_para,
    devmm_mem_query_size_para, devmm_mem_release_para, devmm_mem_unmap_para, devmm_mmap_addr_seg,
    devmm_query_device_mem_usedinfo, halReportRecvInfo, halSqCqConfigInfo, halSqCqFreeInfo, halSqCqInputInfo,
    halTaskSendInfo, trs_res_id_para, trs_uio_info,
};
use hal::layout::{device_of, window_of, Window};
use hal::{
    BackRequest, CopyEngine, DeviceAddr, DeviceControl, DeviceId, DeviceInfo, Driver, Error, ErrorKind,
    EventId, EventInfo, EventWait, Events as EventQueue, Loader, MemAttr, MemoryBacking, MemoryInfo,
    MemoryKind, PageSize, PhysHandle, PhysicalMemory, PinnedHost, QueueId, QueueProgress, Queues, Result,
    ShareInfo, ShareKind, ShareName, Sharing, SocProfile, TaskDesc, TaskStatus, VaRange,
};
use sched::{DepGraph, Full, Progress, Ring, SlotStorage, StreamOrder, StreamPoint};

#[cfg(feature = "fake-kernel")]
pub mod fake;
pub mod sqe;
mod sys;

use sys::shared::{self, Mapped};
pub use sys::LibcTransport;

/// How a [`Davinci`] backend submits tasks and learns of completions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueMode {
    /// Every SQE through `TRS_SQCQ_SEND`, every completion through `TRS_SQCQ_RECV` (the
    /// driver's `KIO` mode).
    #[default]
    KernelSend,
    /// The SQ ring, its control pages and the doorbell mmapped through the `TSDRV_MMAP` fd
    /// (the driver's `UIO_D` mode): submission writes the SQE into the ring and rings the
    /// doorbell, completions are read from the CQ ring in the shared-info page
    /// ([`sqe::uio`]); no system call per task.
    MappedRing,
}

/// The device node the driver exposes.
pub const MANAGER_NODE: &str = abi::DAVINCI_MANAGER_PATH;

/// Checks whether the davinci driver can be used here.
///
/// # Errors
///
/// A message saying why not: no driver node, or the driver refuses the pinned ABI.
pub fn probe() -> std::result::Result<(), String> {
    if !std::path::Path::new(MANAGER_NODE).exists() {
        return Err(format!("{MANAGER_NODE} is absent (no Ascend driver on this machine)"));
    }
    Davinci::new(LibcTransport, 1).map(drop).map_err(|e| e.to_string())
}

/// How many devices this machine shows: the `/dev/davinciN` nodes (at least 1 when the
/// multiplexer exists, at most [`hal::layout::MAX_DEVICES`]).
pub fn count_devices() -> u32 {
    let n = std::fs::read_dir("/dev")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.strip_prefix("davinci")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(0);
    u32::try_from(n).unwrap_or(u32::MAX).clamp(1, hal::layout::MAX_DEVICES)
}

/// An `errno` value a system call failed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// The `hal` error kind this errno stands for.
    pub fn kind(self) -> ErrorKind {
        match self.0 {
            libc::ENOMEM | libc::ENOSPC => ErrorKind::OutOfMemory,
            libc::EINVAL | libc::ERANGE | libc::E2BIG => ErrorKind::InvalidArgument,
            libc::ENODEV | libc::ENXIO => ErrorKind::NoDevice,
            libc::ENOENT | libc::EFAULT | libc::EBADF => ErrorKind::InvalidHandle,
            libc::EBUSY | libc::EEXIST => ErrorKind::Busy,
            libc::ETIMEDOUT | libc::ETIME => ErrorKind::Timeout,
            libc::EPERM | libc::EACCES => ErrorKind::PermissionDenied,
            libc::EOPNOTSUPP | libc::ENOTTY | libc::ENOSYS => ErrorKind::NotSupported,
            libc::EIO => ErrorKind::DeviceFault,
            libc::EAGAIN => ErrorKind::QueueFull,
            _ => ErrorKind::Internal,
        }
    }

    /// The errno a kernel reports for `kind` (the inverse of [`Self::kind`] on its image).
    pub fn from_kind(kind: ErrorKind) -> Self {
        Self(match kind {
            ErrorKind::InvalidArgument => libc::EINVAL,
            ErrorKind::OutOfMemory => libc::ENOMEM,
            ErrorKind::NotSupported => libc::EOPNOTSUPP,
            ErrorKind::NoDevice => libc::ENODEV,
            ErrorKind::InvalidHandle => libc::ENOENT,
            ErrorKind::Busy => libc::EBUSY,
            ErrorKind::Timeout => libc::ETIMEDOUT,
            ErrorKind::PermissionDenied => libc::EPERM,
            ErrorKind::DeviceFault => libc::EIO,
            ErrorKind::QueueFull => libc::EAGAIN,
            _ => libc::EPROTO,
        })
    }

    fn into_error(self, what: &'static str) -> Error {
        Error::new(self.kind(), what)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", std::io::Error::from_raw_os_error(self.0))
    }
}

/// The system calls the backend makes: the seam between it and a kernel.
pub trait Transport: Send + Sync {
    /// `open(2)`.
    ///
    /// # Errors
    ///
    /// The errno of the failure.
    fn open(&self, path: &CStr, flags: i32) -> std::result::Result<RawFd, Errno>;

    /// `close(2)` of an fd this transport opened.
    ///
    /// # Errors
    ///
    /// The errno of the failure.
    fn close(&self, fd: RawFd) -> std::result::Result<(), Errno>;

    /// `ioctl(2)`.
    ///
    /// # Errors
    ///
    /// The errno of the failure.
    ///
    /// # Safety
    ///
    /// `arg` must point at a valid argument of the type `cmd` takes (of the size it encodes,
    /// or the type the driver expects for a size-less command), and every host address inside
    /// it must be valid for the accesses `cmd` makes for the duration of the call.
    unsafe fn ioctl(&self, fd: RawFd, cmd: u32, arg: *mut c_void) -> std::result::Result<i32, Errno>;

    /// `mmap(2)` of `fd` at offset 0, `hint` as the wished address (never `MAP_FIXED`).
    ///
    /// # Errors
    ///
    /// The errno of the failure.
    ///
    /// # Safety
    ///
    /// The caller must follow the driver's mapping protocol for `fd`.
    unsafe fn mmap(
        &self,
        hint: usize,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
    ) -> std::result::Result<usize, Errno>;

    /// `munmap(2)` of a whole mapping made by [`Self::mmap`].
    ///
    /// # Errors
    ///
    /// The errno of the failure.
    ///
    /// # Safety
    ///
    /// Nothing may refer to the mapping any more.
    unsafe fn munmap(&self, addr: usize, len: usize) -> std::result::Result<(), Errno>;

    /// Waits `pause` before the backend tries a busy module bind again. A real kernel needs
    /// the time to pass (`std::thread::sleep`); a fake may record the pause instead.
    fn pause(&self, pause: Duration) {
        std::thread::sleep(pause);
    }

    /// The loader of the device behind this transport, when it has one this process can
    /// reach: `None` for a real kernel (the firmware loader formats are not public), the
    /// software NPU's for a fake kernel.
    fn loader(&self) -> Option<&dyn Loader>;
}

/// Why the backend could not start.
#[derive(Debug)]
pub enum StartError {
    /// The multiplexer node could not be opened.
    Open {
        /// The node.
        path: &'static str,
        /// Why.
        errno: Errno,
    },
    /// The driver does not accept a command of the pinned release: another ABI.
    Abi {
        /// The command's name.
        command: &'static str,
        /// Its number as this build computes it.
        number: u32,
        /// What the driver said.
        errno: Errno,
    },
    /// Another step of the open sequence failed.
    Step {
        /// The step.
        step: &'static str,
        /// Why.
        errno: Errno,
    },
    /// The driver placed the SVM window elsewhere than it reported.
    Window {
        /// The address reported.
        wanted: u64,
        /// The address mapped.
        got: u64,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Open { path, errno } => write!(f, "cannot open {path}: {errno}"),
            Self::Abi { command, number, errno } => write!(
                f,
                "the davinci driver rejects {command} ({number:#010x}: {errno}); it does not speak the ABI this \
                 build pins ({}), refusing to continue",
                abi::PINNED_RELEASE
            ),
            Self::Step { step, errno } => write!(f, "davinci open sequence: {step} failed: {errno}"),
            Self::Window { wanted, got } => {
                write!(f, "the SVM window segment at {wanted:#x} was mapped at {got:#x}; refusing to continue")
            }
        }
    }
}

impl std::error::Error for StartError {}

/// An fd of the multiplexer bound to one module, closed on drop.
struct ModuleFd<T: Transport> {
    t: Arc<T>,
    fd: RawFd,
}

/// How many times a module bind is tried while the driver answers `EBUSY`.
const MODULE_OPEN_TRIES: u32 = 2400;
/// The pause between those tries.
const MODULE_OPEN_PAUSE: Duration = Duration::from_millis(100);

impl<T: Transport> ModuleFd<T> {
    /// Opens the multiplexer and binds the fd to `module` for `device`.
    fn open(t: &Arc<T>, module: &'static str, device: u32) -> std::result::Result<Self, StartError> {
        let path = c"/dev/davinci_manager";
        let fd = t
            .open(path, libc::O_RDWR | libc::O_SYNC | libc::O_CLOEXEC)
            .map_err(|errno| StartError::Open { path: MANAGER_NODE, errno })?;
        let this = Self { t: Arc::clone(t), fd };
        // CAST: device ids are below 64.
        let mut arg = davinci_intf_open_arg::new(module, device as i32)
            .ok_or(StartError::Step { step: "module name", errno: Errno(libc::EINVAL) })?;
        // A module still releasing its previous user answers EBUSY; the driver's library
        // retries every 100 ms, up to 2400 times (four minutes), and so does this.
        let mut tries = 1;
        loop {
            match sys::ioctl_mut(&**t, fd, abi::DAVINCI_INTF_IOCTL_OPEN, &mut arg) {
                Ok(_) => return Ok(this),
                Err(Errno(libc::EBUSY)) if tries < MODULE_OPEN_TRIES => {
                    tries += 1;
                    t.pause(MODULE_OPEN_PAUSE);
                }
                Err(errno) => return Err(StartError::Step { step: "bind module", errno }),
            }
        }
    }
}

impl<T: Transport> Drop for ModuleFd<T> {
    fn drop(&mut self) {
        let _ = self.t.close(self.fd);
    }
}

impl<T: Transport> fmt::Debug for ModuleFd<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModuleFd({})", self.fd)
    }
}

/// A whole mapping of the SVM window, unmapped on drop.
struct Mapping<T: Transport> {
    t: Arc<T>,
    addr: usize,
    len: usize,
}

impl<T: Transport> Drop for Mapping<T> {
    fn drop(&mut self) {
        // SAFETY: the backend hands out no reference into the window; device memory is reached
        // only through ioctls, and this mapping is dropped after every fd user is gone.
        let _ = unsafe { self.t.munmap(self.addr, self.len) };
    }
}

/// The fds of one open device.
struct DeviceFds<T: Transport> {
    tsdrv: ModuleFd<T>,
    tsdrv_mmap: ModuleFd<T>,
    /// Per queue (SQ id): its CQ id, the last sequence number handed out and, in the mapped
    /// mode, its rings.
    queues: HashMap<u32, QueueState<T>>,
}

struct QueueState<T: Transport> {
    cq: u32,
    submitted: u64,
    /// The highest sequence this backend saw completed (from the CQ drain in the mapped mode,
    /// from `TRS_SQCQ_RECV` in the kernel-send mode): `sched`'s completion word, the one the
    /// software NPU publishes too, so a wait for what is already done makes no system call.
    done: Arc<Progress>,
    rings: Option<Arc<Rings<T>>>,
    /// In the kernel-send mode: the first failure a wait received that `completed` has not
    /// reported yet (a CQE reports a failure once).
    failure: Option<TaskStatus>,
    /// Being destroyed: sends are refused ([`Queues::destroy_queue`] set it together with the
    /// last `submitted` it waits for, under the device table), so no SQE lands in a ring after
    /// the destroy's wait.
    closed: bool,
}

impl<T: Transport> Clone for QueueState<T> {
    fn clone(&self) -> Self {
        Self {
            cq: self.cq,
            submitted: self.submitted,
            done: Arc::clone(&self.done),
            rings: self.rings.clone(),
            failure: self.failure,
            closed: self.closed,
        }
    }
}

/// Bytes at the top of each device's driver range that hold event timestamps (8 bytes each).
const EVENT_TABLE_BYTES: u64 = 2 << 20;
/// Bytes of one backed page of the event table.
const EVENT_PAGE_BYTES: u64 = 4 << 10;

/// Where device `dev`'s event timestamps live.
fn event_table_base(dev: u32) -> u64 {
    hal::layout::driver_reserved_base(dev) + hal::layout::DRIVER_RESERVED_BYTES - EVENT_TABLE_BYTES
}

/// One event: its timestamp slot and the point it was last recorded at (queue, the record's
/// sequence). A record is two SQEs: the timestamp into the slot, then the record itself, so
/// a completed record implies its timestamp was written.
#[derive(Clone, Debug)]
struct EventRec {
    slot: u64,
    point: Option<(QueueId, u64)>,
    /// Whether the slot holds the time of the latest record (its timestamp SQE was queued
    /// right before it, and no later failed record overwrote the slot).
    stamped: bool,
    /// A reset queued after the latest record: the event reads as recorded until it runs.
    reset: Option<(QueueId, u64)>,
    /// The latest record was dropped before it ran (a forced destroy or an abort of its
    /// queue): the event stays not complete until it is recorded again.
    cancelled: bool,
    /// The newest SQE per queue that names this event: its id must stay allocated until they
    /// have run (the device reads them after the call that queued them returned).
    uses: Vec<(QueueId, u64)>,
}

impl EventRec {
    fn note_use(&mut self, queue: QueueId, seq: u64) {
        match self.uses.iter_mut().find(|(q, _)| *q == queue) {
            Some(u) => u.1 = seq,
            None => self.uses.push((queue, seq)),
        }
    }
}

/// A destroyed event whose id and slot wait for queued SQEs that name it.
#[derive(Debug)]
struct Retired {
    dev: u32,
    id: u32,
    slot: u64,
    uses: Vec<(QueueId, u64)>,
}

/// The events of every device, and the backed pages of their timestamp tables.
#[derive(Debug, Default)]
struct Events {
    by_id: HashMap<(u32, u32), EventRec>,
    /// Destroyed events not yet given back ([`Retired`]).
    retired: Vec<Retired>,
    free_slots: HashMap<u32, Vec<u64>>,
    next_slot: HashMap<u32, u64>,
    /// Backed table pages, per device (by page index).
    pages: HashMap<u32, Vec<u64>>,
    /// Per device, the event waits this backend queued and the completions it saw, for
    /// [`EventQueue::is_ordered_before`] (the same graph type the runtime and the software
    /// NPU's executor use; a wait's edge goes once the wait is seen completed).
    graphs: HashMap<u32, DepGraph>,
}

/// The SQ ring's slots as `sched`'s ring sees them: the mapped SQE memory, one SQE image per
/// slot (the SQ ring and, after it, the shared-info, head and tail pages of the mapping).
struct SqSlots<T: Transport> {
    map: Mapped<T>,
    /// The ring's user address (`sq_que_addr`), checked to lie inside `map` for `depth` SQEs.
    ring: u64,
    depth: u32,
}

impl<T: Transport> SqSlots<T> {
    fn view(&self) -> Option<shared::View<'_>> {
        self.map.view(self.ring, self.depth as usize * sqe::SQE_BYTES)
    }
}

impl<T: Transport> SlotStorage for SqSlots<T> {
    type Desc = [u8; sqe::SQE_BYTES];

    fn capacity(&self) -> usize {
        self.depth as usize
    }

    fn write(&self, index: usize, desc: &Self::Desc) {
        // `Rings::check` found the ring inside the mapping before the first push.
        if let Some(v) = self.view() {
            v.write(index * sqe::SQE_BYTES, desc);
        }
    }

    fn read(&self, index: usize) -> Self::Desc {
        let mut out = [0u8; sqe::SQE_BYTES];
        if let Some(v) = self.view() {
            v.read(index * sqe::SQE_BYTES, &mut out);
        }
        out
    }
}

/// The mappings of one queue in the mapped-ring mode and the user's side of its counters.
///
/// Submission is `sched`'s ring ([`sched::Ring`], the cursor type the software NPU's queues
/// use) over the mapped SQE slots: the backend is its one producer and, mirroring the device's
/// `HEAD_REG` into the ring's head before each push, its one consumer, both under the device
/// table lock. The ring's tail is then stored to the `TAIL` page and the doorbell.
struct Rings<T: Transport> {
    /// The SQ ring over the mapped SQ memory (which also holds the shared-info, head and
    /// tail pages).
    sq: Ring<SqSlots<T>>,
    /// The doorbell and the head and tail register pages.
    reg_map: Mapped<T>,
    /// Where the kernel put each page (`sq_ctrl_addr` after `TRS_SQCQ_ALLOC`).
    uio: trs_uio_info,
    depth: u32,
    cq: Mutex<CqState>,
    /// The highest sequence the CQ drain saw (the queue's [`QueueState::done`]).
    done: Arc<Progress>,
}

#[derive(Default)]
struct CqState {
    head: u32,
    /// The first failure reported since `completed` last looked.
    failure: Option<TaskStatus>,
}

fn ring_err() -> Error {
    Error::new(ErrorKind::Internal, "the kernel placed a ring page outside the mappings")
}

impl<T: Transport> Rings<T> {
    fn ctrl(&self, which: usize, len: usize) -> Result<shared::View<'_>> {
        let addr = self.uio.sq_ctrl_addr[which];
        self.sq.storage().map.view(addr, len).or_else(|| self.reg_map.view(addr, len)).ok_or_else(ring_err)
    }

    fn check(&self) -> Result<()> {
        self.sq.storage().view().ok_or_else(ring_err)?;
        self.ctrl(abi::TRS_UIO_SHR_INFO, sqe::uio::SHR_INFO_BYTES)?;
        for which in [abi::TRS_UIO_HEAD, abi::TRS_UIO_TAIL, abi::TRS_UIO_DB, abi::TRS_UIO_HEAD_REG] {
            self.ctrl(which, 4)?;
        }
        Ok(())
    }

    /// Writes `image` into the ring and rings the doorbell; the caller holds the device table.
    fn push(&self, image: &[u8; sqe::SQE_BYTES]) -> Result<()> {
        // The device's head (a free-running u32) into the ring's head (a u64 sequence): the
        // slots the device took are free again.
        let device_head = self.ctrl(abi::TRS_UIO_HEAD_REG, 4)?.load_u32(0);
        let released = self.sq.released();
        // CAST: the low 32 bits of the ring's head, to count forward from.
        let moved = device_head.wrapping_sub(released as u32);
        if moved <= self.depth {
            self.sq.release_to(released + u64::from(moved));
        }
        let seq = self
            .sq
            .try_push(image)
            .map_err(|Full| Error::new(ErrorKind::QueueFull, "the SQ ring is full"))?;
        // CAST: the device's counters are the ring's sequence modulo 2^32.
        let next = seq as u32;
        // Release stores: the SQE is visible before the tail and the doorbell say so.
        self.ctrl(abi::TRS_UIO_TAIL, 4)?.store_u32(0, next);
        self.ctrl(abi::TRS_UIO_DB, 4)?.store_u32(0, next);
        Ok(())
    }

    /// Reads every CQE the device wrote since the last call and frees their slots.
    fn drain(&self) -> Result<MutexGuard<'_, CqState>> {
        let shr = self.ctrl(abi::TRS_UIO_SHR_INFO, sqe::uio::SHR_INFO_BYTES)?;
        let mut cq = self.cq.lock().unwrap_or_else(|p| p.into_inner());
        let tail = shr.load_u32(sqe::uio::CQ_TAIL);
        while cq.head != tail {
            let mut image = [0u8; sqe::CQE_BYTES];
            let slot = (cq.head % sqe::uio::CQ_ENTRIES) as usize;
            shr.read(sqe::uio::CQ_RING + slot * sqe::CQE_BYTES, &mut image);
            let cqe = sqe::Cqe::decode(&image);
            self.done.publish(cqe.seq);
            if cqe.status != TaskStatus::Ok && cq.failure.is_none() {
                cq.failure = Some(cqe.status);
            }
            cq.head = cq.head.wrapping_add(1);
        }
        shr.store_u32(sqe::uio::CQ_HEAD, cq.head);
        Ok(cq)
    }

    fn wait(&self, seq: u64, timeout_ms: Option<u32>) -> Result<()> {
        // TIMEOUT: `timeout_ms` bounds the wait; `None` waits for the device forever.
        let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        let mut pause = Duration::from_micros(20);
        loop {
            // The completion word first: a wait for what is done reads no CQ.
            if self.done.is_complete(seq) {
                return Ok(());
            }
            drop(self.drain()?);
            if self.done.is_complete(seq) {
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::new(ErrorKind::Timeout, "queue did not reach the sequence in time"));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }
}

/// The davinci backend over a transport.
pub struct Davinci<T: Transport> {
    t: Arc<T>,
    devices: u32,
    mode: QueueMode,
    svm: ModuleFd<T>,
    _window: Vec<Mapping<T>>,
    open: Mutex<HashMap<u32, DeviceFds<T>>>,
    /// VMM mappings: start VA to bytes (the unmap command reports but does not take a size).
    maps: Mutex<HashMap<u64, u64>>,
    events: Mutex<Events>,
    soc: SocProfile,
    /// Shares this process exported by name, and their devices.
    exported: Mutex<HashMap<ShareName, u32>>,
    /// Physical handles (VMM) of this process, created or imported, by `(device, id)`.
    phys: Mutex<HashMap<(u32, i32), PhysRec>>,
    /// Imported IPC shares: handles not mapped yet, and where opened ones are mapped.
    ipc: Mutex<IpcImports>,
}

/// The tag in the top 16 bits of the shareable handles this backend hands out ("SH").
///
/// The pinned driver names a shared VMM handle by `(exporting device, share_id)`; the library
/// packs both into the `uint64_t` a user passes around: tag `<< 48 | device << 32 | share_id`.
/// The tag keeps the value non-zero and tells it from an IPC key.
const SHARE_HANDLE_TAG: u64 = 0x5348 << 48;

/// The share name of handle share `share_id` exported from `dev`.
fn handle_share_name(dev: u32, share_id: i32) -> Result<ShareName> {
    let dev = u64::from(u16::try_from(dev).map_err(|_| Error::new(ErrorKind::InvalidArgument, "device"))?);
    // CAST: share ids are non-negative 31-bit numbers; their bit image is kept.
    let value = SHARE_HANDLE_TAG | dev << 32 | u64::from(share_id as u32);
    ShareName::try_new(format!("{value:016x}").as_bytes())
        .ok_or(Error::new(ErrorKind::Internal, "share name"))
}

/// `(device, share_id)` of a handle share name, or `None` for an IPC key.
fn parse_handle_share(name: &ShareName) -> Option<(u32, i32)> {
    let text = name.as_str();
    if text.len() != 16 {
        return None;
    }
    let value = u64::from_str_radix(text, 16).ok()?;
    if value & (0xFFFF << 48) != SHARE_HANDLE_TAG {
        return None;
    }
    // CAST: 16 and 32 bits taken apart from a value built by `handle_share_name`.
    Some(((value >> 32 & 0xFFFF) as u32, (value & 0xFFFF_FFFF) as u32 as i32))
}

/// A physical handle of this process: its device, bytes and page size (what the real
/// library's `drv_mem_handle_t` keeps).
#[derive(Clone, Copy, Debug)]
struct PhysRec {
    len_bytes: u64,
    page_size: PageSize,
    /// Its share, once exported.
    export: Option<ShareName>,
}

/// The tag of handles that stand for an imported IPC share ([`Sharing::import_share`]).
const IPC_HANDLE_BIT: u64 = 1 << 62;

/// Imported IPC shares of this process.
#[derive(Debug, Default)]
struct IpcImports {
    next: u64,
    /// Handle to (share, device).
    pending: HashMap<u64, (ShareName, u32)>,
    /// Start VA of an opened share to its handle.
    opened: HashMap<u64, u64>,
}

impl<T: Transport> fmt::Debug for Davinci<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Davinci")
            .field("devices", &self.devices)
            .field("mode", &self.mode)
            .field("svm", &self.svm)
            .finish_non_exhaustive()
    }
}

fn dev_err(what: &'static str) -> impl Fn(Errno) -> Error {
    move |e| e.into_error(what)
}

fn not_supported(what: &'static str) -> Error {
    Error::new(ErrorKind::NotSupported, what)
}

impl<T: Transport> Davinci<T> {
    /// Runs the open sequence on `transport` for a machine of `devices` devices.
    ///
    /// # Errors
    ///
    /// [`StartError`], with [`StartError::Abi`] when the driver speaks another ABI.
    pub fn new(transport: T, devices: u32) -> std::result::Result<Self, StartError> {
        Self::with_queue_mode(transport, devices, QueueMode::default())
    }

    /// As [`Self::new`], with queues in `mode`.
    ///
    /// # Errors
    ///
    /// As [`Self::new`].
    pub fn with_queue_mode(
        transport: T,
        devices: u32,
        mode: QueueMode,
    ) -> std::result::Result<Self, StartError> {
        let t = Arc::new(transport);
        let svm = ModuleFd::open(&t, abi::MODULE_SVM, 0)?;
        let abi_err = |command, number| {
            move |errno: Errno| match errno.0 {
                libc::ENOTTY | libc::EINVAL => StartError::Abi { command, number, errno },
                _ => StartError::Step { step: command, errno },
            }
        };
        let mut arg = devmm_ioctl_arg::default();
        sys::ioctl_mut(&*t, svm.fd, abi::DEVMM_SVM_ALLOC_PROC_STRUCT, &mut arg)
            .map_err(abi_err("DEVMM_SVM_ALLOC_PROC_STRUCT", abi::DEVMM_SVM_ALLOC_PROC_STRUCT))?;
        let mut segs = [devmm_mmap_addr_seg::default(); abi::DEVMM_MAX_VMA_NUM];
        let seg_bytes = segs.as_mut_slice();
        // CAST: a slice of segments is bytes for the address.
        let segs_addr = seg_bytes.as_mut_ptr() as u64;
        let para = devmm_get_mmap_para {
            // CAST: a small constant.
            seg_num: abi::DEVMM_MAX_VMA_NUM as u32,
            segs: segs_addr,
            ..Default::default()
        };
        let mut arg = devmm_ioctl_arg::with(0, &para);
        // SAFETY: `segs` is writable for `seg_num` segments and outlives the call; the kernel
        // keeps no pointer to it.
        unsafe { sys::ioctl_with_ptrs(&*t, svm.fd, abi::DEVMM_SVM_GET_MMAP_INFO, &mut arg) }
            .map_err(abi_err("DEVMM_SVM_GET_MMAP_INFO", abi::DEVMM_SVM_GET_MMAP_INFO))?;
        let got = arg.get::<devmm_get_mmap_para>();
        let count = (got.seg_num as usize).min(abi::DEVMM_MAX_VMA_NUM);
        let mut window = Vec::with_capacity(count);
        for seg in &segs[..count] {
            // CAST: the window lies within the 64-bit user VA.
            let (va, len) = (seg.va as usize, seg.size as usize);
            // SAFETY: this is the driver's protocol for the SVM fd: map each reported segment
            // shared and read-write at its address.
            let addr =
                unsafe { t.mmap(va, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, svm.fd) }
                    .map_err(|errno| StartError::Step { step: "mmap of the SVM window", errno })?;
            let mapping = Mapping { t: Arc::clone(&t), addr, len };
            if addr != va {
                return Err(StartError::Window { wanted: seg.va, got: addr as u64 });
            }
            window.push(mapping);
        }
        Ok(Self {
            t,
            devices,
            mode,
            svm,
            _window: window,
            open: Mutex::new(HashMap::new()),
            maps: Mutex::new(HashMap::new()),
            events: Mutex::new(Events::default()),
            soc: SocProfile::A2,
            exported: Mutex::new(HashMap::new()),
            phys: Mutex::new(HashMap::new()),
            ipc: Mutex::new(IpcImports::default()),
        })
    }

    /// The same backend, reporting its devices as `soc`. The pinned SVM v2 ABI is that of the
    /// 910B (A2) and 910_93 (A3); the default is A2. The device management module, which
    /// would tell, is not mirrored.
    #[must_use]
    pub fn with_soc(mut self, soc: SocProfile) -> Self {
        self.soc = soc;
        self
    }

    /// How this backend's queues submit and complete.
    pub fn queue_mode(&self) -> QueueMode {
        self.mode
    }

    /// The transport (for tests that inspect the fake kernel).
    pub fn transport(&self) -> &T {
        &self.t
    }

    fn opened(&self) -> MutexGuard<'_, HashMap<u32, DeviceFds<T>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_open(&self, dev: DeviceId) -> Result<()> {
        if self.opened().contains_key(&dev.0) {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::NoDevice, "device not open"))
        }
    }

    fn svm(&self, dev: DeviceId, cmd: u32, arg: &mut devmm_ioctl_arg, what: &'static str) -> Result<()> {
        arg.head.logical_devid = dev.0;
        sys::ioctl_mut(&*self.t, self.svm.fd, cmd, arg).map(drop).map_err(dev_err(what))
    }

    fn phys_recs(&self) -> std::sync::MutexGuard<'_, HashMap<(u32, i32), PhysRec>> {
        self.phys.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tsdrv<A>(&self, dev: DeviceId, cmd: u32, arg: &mut A, what: &'static str) -> Result<()> {
        let fd = self
            .opened()
            .get(&dev.0)
            .map(|d| d.tsdrv.fd)
            .ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        sys::ioctl_mut(&*self.t, fd, cmd, arg).map(drop).map_err(dev_err(what))
    }

    /// Closes (or reopens) `queue` to sends, and returns its state as of the change.
    fn set_closed(&self, dev: DeviceId, queue: QueueId, closed: bool) -> Result<QueueState<T>> {
        let mut open = self.opened();
        let fds = open.get_mut(&dev.0).ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        let state =
            fds.queues.get_mut(&queue.0).ok_or(Error::new(ErrorKind::InvalidHandle, "unknown queue"))?;
        state.closed = closed;
        Ok(state.clone())
    }

    fn queue(&self, dev: DeviceId, queue: QueueId) -> Result<QueueState<T>> {
        self.opened()
            .get(&dev.0)
            .ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?
            .queues
            .get(&queue.0)
            .cloned()
            .ok_or(Error::new(ErrorKind::InvalidHandle, "unknown queue"))
    }

    /// `TRS_SQCQ_ALLOC` in the mapped-ring mode: map the empty regions on the `TSDRV_MMAP` fd,
    /// hand the kernel their addresses in a `trs_uio_info`, and check what it reports.
    fn alloc_mapped(&self, dev: DeviceId, info: &mut halSqCqInputInfo) -> Result<Rings<T>> {
        let (fd, mmap_fd) = self
            .opened()
            .get(&dev.0)
            .map(|d| (d.tsdrv.fd, d.tsdrv_mmap.fd))
            .ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        let page = shared::page_size();
        let ring_bytes = (info.sqeDepth as usize)
            .checked_mul(sqe::SQE_BYTES)
            .and_then(|b| b.checked_next_multiple_of(page))
            .ok_or(Error::new(ErrorKind::InvalidArgument, "queue too deep"))?;
        let sq_map =
            Mapped::map(&self.t, mmap_fd, ring_bytes + 3 * page).map_err(dev_err("map the SQ ring"))?;
        let reg_map = Mapped::map(&self.t, mmap_fd, 3 * page).map_err(dev_err("map the doorbell"))?;
        // CAST: addresses fit 64 bits.
        let (a, b) = (sq_map.addr() as u64, reg_map.addr() as u64);
        let p = page as u64;
        let r = ring_bytes as u64;
        let mut uio = trs_uio_info {
            sq_que_addr: a,
            sq_ctrl_addr: [a + r, a + r + p, a + r + 2 * p, b, b + p, b + 2 * p],
            ..Default::default()
        };
        // CAST: a pointer fits 64 bits.
        info.set_uio_info(core::ptr::addr_of_mut!(uio) as u64);
        // SAFETY: `uio` is readable and writable for the call and the kernel keeps no pointer
        // to it; the regions it names stay mapped while the queue lives (they are freed after
        // `TRS_SQCQ_FREE`).
        unsafe { sys::ioctl_with_ptrs(&*self.t, fd, abi::TRS_SQCQ_ALLOC, info) }
            .map_err(dev_err("allocate a mapped queue"))?;
        let depth = info.sqeDepth;
        let slots = SqSlots { map: sq_map, ring: uio.sq_que_addr, depth };
        let checked = Ring::new(slots)
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "the SQ depth is not a power of two"))
            .map(|sq| Rings {
                sq,
                reg_map,
                uio,
                depth,
                cq: Mutex::new(CqState::default()),
                done: Arc::new(Progress::new()),
            })
            .and_then(|rings| {
                if uio.uio_flag == 0 {
                    Err(not_supported("the driver did not map the SQ ring (uio_flag 0)"))
                } else {
                    rings.check().map(|()| rings)
                }
            });
        if checked.is_err() {
            let mut free = halSqCqFreeInfo { sqId: info.sqId, cqId: info.cqId, ..Default::default() };
            let _ = self.tsdrv(dev, abi::TRS_SQCQ_FREE, &mut free, "free a queue");
        }
        checked
    }

    fn recv(&self, dev: DeviceId, cq: u32, task_id: u32, timeout: i32) -> Result<sqe::Cqe> {
        let mut cqe = [0u8; sqe::CQE_BYTES];
        let mut info = halReportRecvInfo {
            cqId: cq,
            timeout,
            cqe_addr: sys::addr_of_mut(&mut cqe),
            cqe_num: 1,
            task_id,
            ..Default::default()
        };
        let fd = self
            .opened()
            .get(&dev.0)
            .map(|d| d.tsdrv.fd)
            .ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        // SAFETY: `cqe` is writable for one CQE and outlives the call.
        unsafe { sys::ioctl_with_ptrs(&*self.t, fd, abi::TRS_SQCQ_RECV, &mut info) }
            .map_err(dev_err("receive"))?;
        if info.report_cqe_num == 0 {
            return Err(Error::new(ErrorKind::Internal, "no report"));
        }
        Ok(sqe::Cqe::decode(&cqe))
    }
}

fn advise_bits(page_size: PageSize, attrs: MemAttr) -> u32 {
    let mut bits = abi::DV_ADVISE_POPULATE | abi::DV_ADVISE_HBM;
    bits |= match page_size {
        PageSize::Normal => 0,
        PageSize::Huge => abi::DV_ADVISE_HUGEPAGE,
        PageSize::Giant => abi::DV_ADVISE_GIANTPAGE,
    };
    if attrs.contains(MemAttr::READONLY) {
        bits |= abi::DV_ADVISE_READONLY;
    }
    if attrs.contains(MemAttr::P2P) {
        bits |= abi::DV_ADVISE_P2P_HBM;
    }
    bits
}

/// `drv_mem_pg_type` of a page size.
pub fn pg_type(page_size: PageSize) -> u32 {
    match page_size {
        PageSize::Normal => 0,
        PageSize::Huge => 1,
        PageSize::Giant => 2,
    }
}

impl<T: Transport> DeviceControl for Davinci<T> {
    fn device_count(&self) -> u32 {
        self.devices
    }

    fn device_info(&self, dev: DeviceId) -> Result<DeviceInfo> {
        if dev.0 >= self.devices {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        let (memory, m) = self.query_memory(dev)?;
        Ok(DeviceInfo {
            soc: self.soc,
            memory,
            hbm_bytes: m.total_bytes,
            huge_budget_bytes: m.huge_total_bytes,
            giant_budget_bytes: m.giant_total_bytes,
        })
    }

    fn open(&self, dev: DeviceId) -> Result<()> {
        if dev.0 >= self.devices {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        let mut open = self.opened();
        if open.contains_key(&dev.0) {
            return Ok(());
        }
        let bind = |module| {
            ModuleFd::open(&self.t, module, dev.0).map_err(|e| match e {
                StartError::Open { errno, .. }
                | StartError::Step { errno, .. }
                | StartError::Abi { errno, .. } => errno.into_error("open the task scheduler module"),
                StartError::Window { .. } => Error::new(ErrorKind::Internal, "open"),
            })
        };
        let tsdrv = bind(abi::MODULE_TSDRV)?;
        let tsdrv_mmap = bind(abi::MODULE_TSDRV_MMAP)?;
        open.insert(dev.0, DeviceFds { tsdrv, tsdrv_mmap, queues: HashMap::new() });
        drop(open);
        Ok(())
    }

    fn close(&self, dev: DeviceId) -> Result<()> {
        if dev.0 >= self.devices {
            return Err(Error::new(ErrorKind::NoDevice, "no such device"));
        }
        let queues: Vec<u32> =
            self.opened().get(&dev.0).map(|d| d.queues.keys().copied().collect()).unwrap_or_default();
        for q in queues {
            let _ = self.destroy_queue(dev, QueueId(q));
        }
        self.drop_events(dev);
        // The driver releases what the closing device held; forget the handles and their shares.
        let shares: Vec<ShareName> = {
            let mut phys = self.phys_recs();
            let gone = phys.iter().filter(|(k, _)| k.0 == dev.0).filter_map(|(_, r)| r.export).collect();
            phys.retain(|k, _| k.0 != dev.0);
            gone
        };
        let mut exported = self.exported.lock().unwrap_or_else(|p| p.into_inner());
        for name in shares {
            exported.remove(&name);
        }
        drop(exported);
        self.opened().remove(&dev.0);
        Ok(())
    }

    fn memory_info(&self, dev: DeviceId) -> Result<MemoryInfo> {
        self.check_open(dev)?;
        self.query_memory(dev).map(|(_, m)| m)
    }
}

impl<T: Transport> MemoryBacking for Davinci<T> {
    fn back(&self, dev: DeviceId, req: &BackRequest) -> Result<()> {
        self.check_open(dev)?;
        let (start, len) = (req.range.start().as_u64(), req.range.len_bytes());
        if !req.range.start().is_aligned(req.page_size.bytes()) || len % req.page_size.bytes() != 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "range not page aligned"));
        }
        let mut arg = devmm_ioctl_arg::with(dev.0, &devmm_mem_alloc_para { p: start, size: len });
        self.svm(dev, abi::DEVMM_SVM_ALLOC, &mut arg, "announce VA")?;
        let advise =
            devmm_mem_advise_para { ptr: start, count: len, advise: advise_bits(req.page_size, req.attrs) };
        let mut arg = devmm_ioctl_arg::with(dev.0, &advise);
        if let Err(e) = self.svm(dev, abi::DEVMM_SVM_ADVISE, &mut arg, "populate pages") {
            let mut arg = devmm_ioctl_arg::with(dev.0, &devmm_free_pages_para { va: start });
            let _ = self.svm(dev, abi::DEVMM_SVM_FREE_PAGES, &mut arg, "free pages");
            return Err(e);
        }
        Ok(())
    }

    fn unback(&self, dev: DeviceId, range: VaRange) -> Result<()> {
        self.check_open(dev)?;
        let mut arg = devmm_ioctl_arg::with(dev.0, &devmm_free_pages_para { va: range.start().as_u64() });
        self.svm(dev, abi::DEVMM_SVM_FREE_PAGES, &mut arg, "free pages")
    }
}

impl<T: Transport> PhysicalMemory for Davinci<T> {
    fn alloc_physical(
        &self,
        dev: DeviceId,
        len_bytes: u64,
        page_size: PageSize,
        _attrs: MemAttr,
    ) -> Result<PhysHandle> {
        self.check_open(dev)?;
        if len_bytes == 0 || len_bytes % page_size.bytes() != 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "size not a page multiple"));
        }
        let para = devmm_mem_create_para {
            size: len_bytes,
            side: 1,
            pg_type: pg_type(page_size),
            mem_type: 0,
            pg_num: len_bytes / page_size.bytes(),
            ..Default::default()
        };
        let mut arg = devmm_ioctl_arg::with(dev.0, &para);
        self.svm(dev, abi::DEVMM_SVM_MEM_CREATE, &mut arg, "create physical memory")?;
        let out = arg.get::<devmm_mem_create_para>();
        self.phys_recs().insert((dev.0, out.id), PhysRec { len_bytes, page_size, export: None });
        // CAST: handle ids are non-negative.
        Ok(PhysHandle(out.id as u32 as u64))
    }

    fn free_physical(&self, dev: DeviceId, handle: PhysHandle) -> Result<()> {
        self.check_open(dev)?;
        if handle.0 & IPC_HANDLE_BIT != 0 {
            let mut ipc = self.ipc.lock().unwrap_or_else(|p| p.into_inner());
            if ipc.opened.values().any(|&h| h == handle.0) {
                return Err(Error::new(ErrorKind::Busy, "the imported share is still mapped"));
            }
            return match ipc.pending.remove(&handle.0) {
                Some(_) => Ok(()),
                None => Err(Error::new(ErrorKind::InvalidHandle, "unknown handle")),
            };
        }
        let id =
            i32::try_from(handle.0).map_err(|_| Error::new(ErrorKind::InvalidHandle, "unknown handle"))?;
        let mut arg =
            devmm_ioctl_arg::with(dev.0, &devmm_mem_release_para { id, side: 1, ..Default::default() });
        self.svm(dev, abi::DEVMM_SVM_MEM_RELEASE, &mut arg, "release physical memory")?;
        // The driver ends a handle's share with the handle.
        if let Some(name) = self.phys_recs().remove(&(dev.0, id)).and_then(|r| r.export) {
            self.exported.lock().unwrap_or_else(|p| p.into_inner()).remove(&name);
        }
        Ok(())
    }

    fn map_physical(&self, dev: DeviceId, handle: PhysHandle, offset: u64, range: VaRange) -> Result<()> {
        self.check_open(dev)?;
        if offset != 0 {
            return Err(not_supported("mapping at an offset into a handle (halMemMap takes offset 0)"));
        }
        if handle.0 & IPC_HANDLE_BIT != 0 {
            return self.ipc_map(dev, handle, range);
        }
        let id =
            i32::try_from(handle.0).map_err(|_| Error::new(ErrorKind::InvalidHandle, "unknown handle"))?;
        let para = devmm_mem_map_para {
            va: range.start().as_u64(),
            size: range.len_bytes(),
            id,
            side: 1,
            ..Default::default()
        };
        let mut arg = devmm_ioctl_arg::with(dev.0, &para);
        self.svm(dev, abi::DEVMM_SVM_MEM_MAP, &mut arg, "map physical memory")?;
        self.maps.lock().unwrap_or_else(|p| p.into_inner()).insert(range.start().as_u64(), range.len_bytes());
        Ok(())
    }

    fn unmap_physical(&self, dev: DeviceId, range: VaRange) -> Result<()> {
        self.check_open(dev)?;
        let start = range.start().as_u64();
        if self.ipc.lock().unwrap_or_else(|p| p.into_inner()).opened.contains_key(&start) {
            self.ipc_close(dev, range.start())?;
            self.ipc.lock().unwrap_or_else(|p| p.into_inner()).opened.remove(&start);
            return Ok(());
        }
        let mut arg = devmm_ioctl_arg::with(
            dev.0,
            &devmm_mem_unmap_para { va: range.start().as_u64(), ..Default::default() },
        );
        self.svm(dev, abi::DEVMM_SVM_MEM_UNMAP, &mut arg, "unmap physical memory")?;
        self.maps.lock().unwrap_or_else(|p| p.into_inner()).remove(&range.start().as_u64());
        Ok(())
    }
}

fn pinned_only(addr: DeviceAddr) -> Result<()> {
    if window_of(addr.as_u64()) == Window::PinnedHost {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::InvalidHandle, "not a pinned-host address"))
    }
}

/// Pinned host memory lives in the host part of the SVM window: announced with `ALLOC`,
/// populated with `ADVISE(HOST | POPULATE)`, freed with `FREE_PAGES`; copies to and from it
/// are `MEMCPY` in the host-to-host direction.
impl<T: Transport> PinnedHost for Davinci<T> {
    fn back_host(&self, range: VaRange) -> Result<()> {
        if window_of(range.start().as_u64()) != Window::PinnedHost {
            return Err(Error::new(ErrorKind::InvalidArgument, "range outside the pinned-host window"));
        }
        let start = range.start().as_u64();
        let mut arg = devmm_ioctl_arg::with(0, &devmm_mem_alloc_para { p: start, size: range.len_bytes() });
        self.svm(DeviceId(0), abi::DEVMM_SVM_ALLOC, &mut arg, "announce host VA")?;
        let advise = devmm_mem_advise_para {
            ptr: start,
            count: range.len_bytes(),
            advise: abi::DV_ADVISE_HOST | abi::DV_ADVISE_POPULATE,
        };
        let mut arg = devmm_ioctl_arg::with(0, &advise);
        if let Err(e) = self.svm(DeviceId(0), abi::DEVMM_SVM_ADVISE, &mut arg, "pin host pages") {
            let mut arg = devmm_ioctl_arg::with(0, &devmm_free_pages_para { va: start });
            let _ = self.svm(DeviceId(0), abi::DEVMM_SVM_FREE_PAGES, &mut arg, "free pages");
            return Err(e);
        }
        Ok(())
    }

    fn unback_host(&self, range: VaRange) -> Result<()> {
        let mut arg = devmm_ioctl_arg::with(0, &devmm_free_pages_para { va: range.start().as_u64() });
        self.svm(DeviceId(0), abi::DEVMM_SVM_FREE_PAGES, &mut arg, "free host pages")
    }

    fn write_host(&self, dst: DeviceAddr, src: &[u8]) -> Result<()> {
        pinned_only(dst)?;
        self.memcpy(
            DeviceId(0),
            devmm_mem_copy_para {
                dst: dst.as_u64(),
                src: sys::addr_of(src),
                ByteCount: src.len() as u64,
                direction: abi::DEVMM_COPY_HOST_TO_HOST,
                ..Default::default()
            },
        )
    }

    fn read_host(&self, dst: &mut [u8], src: DeviceAddr) -> Result<()> {
        pinned_only(src)?;
        self.memcpy(
            DeviceId(0),
            devmm_mem_copy_para {
                dst: sys::addr_of_mut(dst),
                src: src.as_u64(),
                ByteCount: dst.len() as u64,
                direction: abi::DEVMM_COPY_HOST_TO_HOST,
                ..Default::default()
            },
        )
    }
}

impl<T: Transport> Davinci<T> {
    fn memcpy(&self, dev: DeviceId, para: devmm_mem_copy_para) -> Result<()> {
        let mut arg = devmm_ioctl_arg::with(dev.0, &para);
        // SAFETY: the callers put only addresses of live slices they borrow for this call (or
        // device VAs the kernel checks) into `para`.
        unsafe { sys::ioctl_with_ptrs(&*self.t, self.svm.fd, abi::DEVMM_SVM_MEMCPY, &mut arg) }
            .map(drop)
            .map_err(dev_err("copy"))
    }
}

impl<T: Transport> CopyEngine for Davinci<T> {
    fn copy_to_device(&self, dev: DeviceId, dst: DeviceAddr, src: &[u8]) -> Result<()> {
        self.check_open(dev)?;
        self.memcpy(
            dev,
            devmm_mem_copy_para {
                dst: dst.as_u64(),
                src: sys::addr_of(src),
                ByteCount: src.len() as u64,
                direction: abi::DEVMM_COPY_HOST_TO_DEVICE,
                ..Default::default()
            },
        )
    }

    fn copy_from_device(&self, dev: DeviceId, dst: &mut [u8], src: DeviceAddr) -> Result<()> {
        self.check_open(dev)?;
        self.memcpy(
            dev,
            devmm_mem_copy_para {
                dst: sys::addr_of_mut(dst),
                src: src.as_u64(),
                ByteCount: dst.len() as u64,
                direction: abi::DEVMM_COPY_DEVICE_TO_HOST,
                ..Default::default()
            },
        )
    }

    fn copy_device(
        &self,
        dst_dev: DeviceId,
        dst: DeviceAddr,
        src_dev: DeviceId,
        src: DeviceAddr,
        len_bytes: u64,
    ) -> Result<()> {
        self.check_open(dst_dev)?;
        self.check_open(src_dev)?;
        self.memcpy(
            dst_dev,
            devmm_mem_copy_para {
                dst: dst.as_u64(),
                src: src.as_u64(),
                ByteCount: len_bytes,
                direction: abi::DEVMM_COPY_DEVICE_TO_DEVICE,
                ..Default::default()
            },
        )
    }

    fn set_device(&self, dev: DeviceId, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        self.check_open(dev)?;
        let para = devmm_mem_memset_para {
            dst: dst.as_u64(),
            value: u64::from(value),
            count: len_bytes,
            hostmapped: 0,
        };
        let mut arg = devmm_ioctl_arg::with(dev.0, &para);
        self.svm(dev, abi::DEVMM_SVM_MEMSET8, &mut arg, "memset")
    }

    fn copy_any(&self, dst: DeviceAddr, src: DeviceAddr, len_bytes: u64) -> Result<()> {
        let side = |a: DeviceAddr| match window_of(a.as_u64()) {
            // A pool-window address is its slice's device memory.
            Window::Device(_) | Window::Pool => Ok(device_of(a.as_u64())),
            Window::PinnedHost => Ok(None),
            _ => Err(Error::new(ErrorKind::InvalidHandle, "address outside the device and pinned windows")),
        };
        let (d, s) = (side(dst)?, side(src)?);
        let direction = match (d, s) {
            (Some(_), Some(_)) => abi::DEVMM_COPY_DEVICE_TO_DEVICE,
            (Some(_), None) => abi::DEVMM_COPY_HOST_TO_DEVICE,
            (None, Some(_)) => abi::DEVMM_COPY_DEVICE_TO_HOST,
            (None, None) => abi::DEVMM_COPY_HOST_TO_HOST,
        };
        let dev = DeviceId(d.or(s).unwrap_or(0));
        let para = devmm_mem_copy_para {
            dst: dst.as_u64(),
            src: src.as_u64(),
            ByteCount: len_bytes,
            direction,
            ..Default::default()
        };
        self.memcpy(dev, para)
    }

    fn set_any(&self, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        let (dev, hostmapped) = match (window_of(dst.as_u64()), device_of(dst.as_u64())) {
            (_, Some(d)) => (d, 0),
            (Window::PinnedHost, None) => (0, 1),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidHandle,
                    "address outside the device and pinned windows",
                ))
            }
        };
        let para = devmm_mem_memset_para {
            dst: dst.as_u64(),
            value: u64::from(value),
            count: len_bytes,
            hostmapped,
        };
        let mut arg = devmm_ioctl_arg::with(dev, &para);
        self.svm(DeviceId(dev), abi::DEVMM_SVM_MEMSET8, &mut arg, "memset")
    }
}

impl<T: Transport> Queues for Davinci<T> {
    fn create_queue(&self, dev: DeviceId, depth: u32) -> Result<QueueId> {
        if depth == 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "depth 0"));
        }
        // A mapped ring's slot is its sequence modulo the depth, which `sched`'s ring keeps a
        // power of two.
        let depth = match self.mode {
            QueueMode::KernelSend => depth,
            QueueMode::MappedRing => depth
                .checked_next_power_of_two()
                .ok_or(Error::new(ErrorKind::InvalidArgument, "queue too deep"))?,
        };
        let mut info = halSqCqInputInfo {
            type_: abi::DRV_NORMAL_TYPE,
            sqeSize: abi::TRS_SQE_SIZE,
            // CAST: a small constant.
            cqeSize: sqe::CQE_BYTES as u32,
            sqeDepth: depth,
            cqeDepth: depth,
            ..Default::default()
        };
        let rings = match self.mode {
            QueueMode::KernelSend => {
                self.tsdrv(dev, abi::TRS_SQCQ_ALLOC, &mut info, "allocate a queue")?;
                None
            }
            QueueMode::MappedRing => Some(Arc::new(self.alloc_mapped(dev, &mut info)?)),
        };
        let mut open = self.opened();
        let fds = open.get_mut(&dev.0).ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        let done = rings.as_ref().map_or_else(|| Arc::new(Progress::new()), |r| Arc::clone(&r.done));
        fds.queues.insert(
            info.sqId,
            QueueState { cq: info.cqId, submitted: 0, done, rings, failure: None, closed: false },
        );
        drop(open);
        self.events_lock().graphs.entry(dev.0).or_default().add_stream(info.sqId);
        Ok(QueueId(info.sqId))
    }

    fn destroy_queue(&self, dev: DeviceId, queue: QueueId) -> Result<()> {
        // Closed and read under the device table, where sends take their numbers: a send
        // racing the destroy either came first (and is waited for) or is refused.
        let state = self.set_closed(dev, queue, true)?;
        if let Some(rings) = &state.rings {
            // SQEs still in a mapped ring are the device's to take: let it run them before the
            // queue goes (the kernel-send mode's SQEs are in the device queue already, and its
            // free waits for them).
            if let Err(e) = rings.wait(state.submitted, None) {
                let _ = self.set_closed(dev, queue, false);
                return Err(e);
            }
        }
        let mut info = halSqCqFreeInfo { sqId: queue.0, cqId: state.cq, ..Default::default() };
        self.tsdrv(dev, abi::TRS_SQCQ_FREE, &mut info, "free a queue")?;
        if let Some(fds) = self.opened().get_mut(&dev.0) {
            fds.queues.remove(&queue.0);
        }
        if let Some(g) = self.events_lock().graphs.get_mut(&dev.0) {
            g.remove_stream(queue.0);
        }
        Ok(())
    }

    fn submit(&self, dev: DeviceId, queue: QueueId, task: TaskDesc) -> Result<u64> {
        let image = sqe::encode(&task).ok_or(not_supported("this task kind on the davinci backend"))?;
        self.send(dev, queue, &image)
    }

    /// An event on `dev` recorded on `target` now (at or after `target_seq`), waited for on
    /// `queue`, then destroyed (its id goes back once both SQEs ran): the device orders queues
    /// only through events.
    fn wait_point(&self, dev: DeviceId, queue: QueueId, target: QueueId, target_seq: u64) -> Result<u64> {
        if target_seq > self.queue(dev, target)?.submitted {
            return Err(Error::new(ErrorKind::InvalidArgument, "sequence not submitted"));
        }
        let ev = self.create_event(dev)?;
        let r = self
            .record_event(dev, target, ev)
            .and_then(|_| self.wait_event(dev, queue, ev))
            .and_then(|w| w.seq.ok_or(Error::new(ErrorKind::Internal, "the wait took no sequence")));
        let _ = self.destroy_event(dev, ev);
        r
    }

    fn progress(&self, dev: DeviceId, queue: QueueId) -> Result<QueueProgress> {
        let state = self.queue(dev, queue)?;
        let completed = if let Some(rings) = &state.rings {
            drop(rings.drain()?);
            rings.done.completed()
        } else {
            let cqe = self.recv(dev, state.cq, u32::MAX, 0)?;
            if cqe.status != TaskStatus::Ok {
                // A CQE reports a failure once: keep it for `take_error`.
                self.with_queue(dev, queue, |q| {
                    q.failure.get_or_insert(cqe.status);
                });
            }
            state.done.publish(cqe.seq);
            state.done.completed()
        };
        self.note_completed(dev, queue, completed);
        Ok(QueueProgress { submitted: state.submitted, completed })
    }

    fn take_error(&self, dev: DeviceId, queue: QueueId) -> Result<Option<TaskStatus>> {
        let state = self.queue(dev, queue)?;
        if let Some(rings) = &state.rings {
            return Ok(rings.drain()?.failure.take());
        }
        let cqe = self.recv(dev, state.cq, u32::MAX, 0)?;
        let stashed = self.with_queue(dev, queue, |q| q.failure.take()).flatten();
        Ok(stashed.or((cqe.status != TaskStatus::Ok).then_some(cqe.status)))
    }

    fn wait(&self, dev: DeviceId, queue: QueueId, seq: u64, timeout_ms: Option<u32>) -> Result<()> {
        let state = self.queue(dev, queue)?;
        if seq > state.submitted {
            return Err(Error::new(ErrorKind::InvalidArgument, "sequence not submitted"));
        }
        if let Some(rings) = &state.rings {
            rings.wait(seq, timeout_ms)?;
            self.note_completed(dev, queue, seq);
            return Ok(());
        }
        // What this backend already saw completed needs no system call.
        if state.done.is_complete(seq) {
            return Ok(());
        }
        // CAST: the task id field carries the low 32 bits; the kernel matches the newest task
        // with them.
        let task_id = seq as u32;
        let timeout = timeout_ms.map_or(-1, |ms| i32::try_from(ms).unwrap_or(i32::MAX));
        let cqe = self.recv(dev, state.cq, task_id, timeout)?;
        if cqe.status != TaskStatus::Ok {
            // Keep it for `completed`: the CQE reported it once.
            self.with_queue(dev, queue, |q| {
                q.failure.get_or_insert(cqe.status);
            });
        }
        state.done.publish(seq.max(cqe.seq));
        self.note_completed(dev, queue, seq.max(cqe.seq));
        Ok(())
    }

    /// `TRS_SQCQ_CONFIG(SQCQ_RESET)` on the queue: the device drops every SQE it has not
    /// started (with [`hal::AbortHead::Runs`], `value[0] = 1`, it keeps the head SQE whose
    /// dependencies are met, as CANN's forced recycle leaves what is on the device) and answers
    /// how many it dropped. The dropped SQEs are the newest ones, so the events whose latest
    /// record was among them are marked cancelled: they stay not complete. What the firmware
    /// does with `SQCQ_RESET` is not public; the fake kernel serves this meaning.
    fn abort_queue(&self, dev: DeviceId, queue: QueueId, head: hal::AbortHead) -> Result<usize> {
        // Hold the device table, so no SQE is sent between the reset and reading `submitted`.
        let open = self.opened();
        let fds = open.get(&dev.0).ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        let state = fds.queues.get(&queue.0).ok_or(Error::new(ErrorKind::InvalidHandle, "unknown queue"))?;
        let mut value = [0u32; abi::SQCQ_CONFIG_INFO_LENGTH];
        value[0] = u32::from(head == hal::AbortHead::Runs);
        let mut info = halSqCqConfigInfo {
            type_: abi::DRV_NORMAL_TYPE,
            sqId: queue.0,
            cqId: state.cq,
            prop: abi::DRV_SQCQ_PROP_SQCQ_RESET,
            value,
            ..Default::default()
        };
        let dropped = sys::ioctl_mut(&*self.t, fds.tsdrv.fd, abi::TRS_SQCQ_CONFIG, &mut info)
            .map_err(dev_err("reset a queue"))?;
        let dropped = u64::try_from(dropped).unwrap_or(0).min(state.submitted);
        let first_dropped = state.submitted - dropped + 1;
        drop(open);
        if dropped > 0 {
            self.cancel_records(dev, queue, first_dropped);
        }
        // CAST: at most the queue's depth, a u32.
        Ok(dropped as usize)
    }

    /// An SQE that switches the queue's failure mode from its place on.
    fn set_stop_on_failure(&self, dev: DeviceId, queue: QueueId, stop: bool) -> Result<()> {
        let image = sqe::encode_event(sqe::Entry::StopOnFailure(stop))
            .ok_or(Error::new(ErrorKind::Internal, "sqe"))?;
        self.send(dev, queue, &image).map(drop)
    }
}

impl<T: Transport> EventQueue for Davinci<T> {
    fn create_event(&self, dev: DeviceId) -> Result<EventId> {
        self.reap_events(dev);
        let mut p = trs_res_id_para { res_type: abi::DRV_EVENT_ID, ..Default::default() };
        self.tsdrv(dev, abi::TRS_RES_ID_ALLOC, &mut p, "allocate an event id")?;
        let ev = EventId(p.id);
        match self.event_slot(dev) {
            Ok(slot) => {
                self.events_lock().by_id.insert(
                    (dev.0, ev.0),
                    EventRec {
                        slot,
                        point: None,
                        stamped: false,
                        reset: None,
                        cancelled: false,
                        uses: Vec::new(),
                    },
                );
                Ok(ev)
            }
            Err(e) => {
                let mut p = trs_res_id_para { res_type: abi::DRV_EVENT_ID, id: ev.0, ..Default::default() };
                let _ = self.tsdrv(dev, abi::TRS_RES_ID_FREE, &mut p, "free an event id");
                Err(e)
            }
        }
    }

    /// The handle dies at once; the id and the timestamp slot go back once every queued SQE
    /// that names the event has run (as CANN defers the destruction of a recorded event).
    fn destroy_event(&self, dev: DeviceId, event: EventId) -> Result<()> {
        let rec = self
            .events_lock()
            .by_id
            .remove(&(dev.0, event.0))
            .ok_or(Error::new(ErrorKind::InvalidHandle, "unknown event"))?;
        self.events_lock().retired.push(Retired { dev: dev.0, id: event.0, slot: rec.slot, uses: rec.uses });
        self.reap_events(dev);
        Ok(())
    }

    /// A record is two SQEs: a timestamp into the event's slot, then the event record.
    fn record_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<u64> {
        let rec = self.event(dev, event)?;
        let image = sqe::encode_event(sqe::Entry::EventRecord(event))
            .ok_or(Error::new(ErrorKind::Internal, "sqe"))?;
        let stamp = TaskDesc::Timestamp { dst: DeviceAddr(event_table_base(dev.0) + rec.slot * 8) };
        let stamp = sqe::encode(&stamp).ok_or(Error::new(ErrorKind::Internal, "sqe"))?;
        // The timestamp goes first, so whoever sees the record complete (a wait on another
        // queue, `event_info`, a synchronisation) also sees its time. A record whose timestamp
        // could not be queued still orders waits; `event_info` then reports no time.
        let stamped = self.send(dev, queue, &stamp).is_ok();
        let seq = match self.send(dev, queue, &image) {
            Ok(seq) => seq,
            Err(e) => {
                // The slot now holds a time that is not the previous record's.
                if let Some(r) = self.events_lock().by_id.get_mut(&(dev.0, event.0)) {
                    r.stamped &= !stamped;
                }
                return Err(e);
            }
        };
        if let Some(r) = self.events_lock().by_id.get_mut(&(dev.0, event.0)) {
            r.point = Some((queue, seq));
            r.stamped = stamped;
            r.reset = None;
            r.cancelled = false;
            r.note_use(queue, seq);
        }
        Ok(seq)
    }

    fn wait_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<EventWait> {
        let rec = self.settled_event(dev, event)?;
        // A record that was dropped never comes: the wait has nothing to wait for, like a
        // wait on an event never recorded (its queue may be gone).
        let point = rec.point.filter(|_| !rec.cancelled);
        let record = point.map(|(q, seq)| (q.0, seq));
        let image = sqe::encode_event(sqe::Entry::EventWait { event, record })
            .ok_or(Error::new(ErrorKind::Internal, "sqe"))?;
        let seq = self.send(dev, queue, &image)?;
        if let Some(r) = self.events_lock().by_id.get_mut(&(dev.0, event.0)) {
            r.note_use(queue, seq);
        }
        if let Some((src_q, src_seq)) = point {
            if let Some(g) = self.events_lock().graphs.get_mut(&dev.0) {
                g.add_wait(queue.0, seq, StreamPoint { stream: src_q.0, seq: src_seq });
            }
        }
        Ok(EventWait { seq: Some(seq), target: point })
    }

    fn reset_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<()> {
        self.event(dev, event)?;
        let image =
            sqe::encode_event(sqe::Entry::EventReset(event)).ok_or(Error::new(ErrorKind::Internal, "sqe"))?;
        let seq = self.send(dev, queue, &image)?;
        // The reset takes effect when it runs, in its stream's order (`event_info`).
        if let Some(r) = self.events_lock().by_id.get_mut(&(dev.0, event.0)) {
            if r.point.is_some() {
                r.reset = Some((queue, seq));
            }
            r.note_use(queue, seq);
        }
        Ok(())
    }

    fn event_info(&self, dev: DeviceId, event: EventId) -> Result<EventInfo> {
        let rec = self.settled_event(dev, event)?;
        let Some((q, seq)) = rec.point else {
            return Ok(EventInfo { point: None, is_complete: false, timestamp_ns: None });
        };
        if rec.cancelled {
            return Ok(EventInfo { point: Some((q, seq)), is_complete: false, timestamp_ns: None });
        }
        // The record's timestamp ran before it on the same queue. A queue that is gone ran
        // every record it kept (the dropped ones are `cancelled`).
        let is_complete = match self.wait(dev, q, seq, Some(0)) {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::Timeout || e.kind() == ErrorKind::Busy => false,
            Err(e) if e.kind() == ErrorKind::InvalidHandle => true,
            Err(e) => return Err(e),
        };
        let mut timestamp_ns = None;
        if is_complete && rec.stamped {
            let mut b = [0u8; 8];
            self.copy_from_device(dev, &mut b, DeviceAddr(event_table_base(dev.0) + rec.slot * 8))?;
            timestamp_ns = Some(u64::from_ne_bytes(b));
        }
        Ok(EventInfo { point: Some((q, seq)), is_complete, timestamp_ns })
    }

    /// Whether everything `later` runs from now on follows `(queue, seq)`: the same queue, a
    /// completion this backend saw, or a chain of event waits it queued.
    fn is_ordered_before(&self, dev: DeviceId, queue: QueueId, seq: u64, later: QueueId) -> Result<bool> {
        self.check_open(dev)?;
        if queue == later {
            return Ok(true);
        }
        let ev = self.events_lock();
        let Some(g) = ev.graphs.get(&dev.0) else { return Ok(false) };
        Ok(g.is_ordered_before(StreamPoint { stream: queue.0, seq }, later.0))
    }
}

impl<T: Transport> Davinci<T> {
    /// Sends one SQE image; its sequence number. A full mapped SQ ring is waited out, as
    /// [`Queues::submit`](hal::Queues::submit) says (the kernel path's `TRS_SQCQ_SEND` waits
    /// likewise): the device frees slots as it takes SQEs, which it does on its own (a full CQ
    /// does not stop it, and a stopped queue still takes and skips them).
    fn send(&self, dev: DeviceId, queue: QueueId, image: &[u8; sqe::SQE_BYTES]) -> Result<u64> {
        let mut waits = 0u32;
        loop {
            match self.try_send(dev, queue, image) {
                Err(e) if e.kind() == ErrorKind::QueueFull => {
                    // Without the device table: yield first, then sleep, at most 1 ms a time.
                    waits = waits.saturating_add(1);
                    if waits < 64 {
                        std::thread::yield_now();
                    } else {
                        std::thread::sleep(Duration::from_micros(u64::from(waits.min(1000))));
                    }
                }
                r => return r,
            }
        }
    }

    /// One attempt of [`Self::send`]: [`ErrorKind::QueueFull`] when the mapped ring has no room.
    fn try_send(&self, dev: DeviceId, queue: QueueId, image: &[u8; sqe::SQE_BYTES]) -> Result<u64> {
        // Hold the device table while sending, so sequence numbers follow the send order.
        let mut open = self.opened();
        let fds = open.get_mut(&dev.0).ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        let fd = fds.tsdrv.fd;
        let state =
            fds.queues.get_mut(&queue.0).ok_or(Error::new(ErrorKind::InvalidHandle, "unknown queue"))?;
        if state.closed {
            return Err(Error::new(
                ErrorKind::InvalidHandle,
                "the queue is being destroyed; the task was not queued",
            ));
        }
        if let Some(rings) = &state.rings {
            rings.push(image)?;
            state.submitted += 1;
            return Ok(state.submitted);
        }
        let mut info = halTaskSendInfo {
            sqId: queue.0,
            timeout: -1,
            sqe_addr: sys::addr_of(&image[..]),
            sqe_num: 1,
            ..Default::default()
        };
        // SAFETY: `image` is one readable SQE that outlives the call.
        unsafe { sys::ioctl_with_ptrs(&*self.t, fd, abi::TRS_SQCQ_SEND, &mut info) }
            .map_err(dev_err("send"))?;
        state.submitted += 1;
        Ok(state.submitted)
    }

    fn with_queue<R>(
        &self,
        dev: DeviceId,
        queue: QueueId,
        f: impl FnOnce(&mut QueueState<T>) -> R,
    ) -> Option<R> {
        self.opened().get_mut(&dev.0)?.queues.get_mut(&queue.0).map(f)
    }

    /// Tells the order graph that `queue` completed up to `seq` (its waits up to there go).
    fn note_completed(&self, dev: DeviceId, queue: QueueId, seq: u64) {
        if let Some(g) = self.events_lock().graphs.get_mut(&dev.0) {
            g.note_completed(queue.0, seq);
        }
    }

    /// Marks the events whose latest record on `queue` is at or after `first` (dropped by
    /// an abort before it ran) as cancelled.
    fn cancel_records(&self, dev: DeviceId, queue: QueueId, first: u64) {
        let mut ev = self.events_lock();
        for ((d, _), r) in &mut ev.by_id {
            if *d == dev.0 && r.point.is_some_and(|(q, seq)| q == queue && seq >= first) {
                r.cancelled = true;
                r.stamped = false;
            }
        }
    }

    fn events_lock(&self) -> MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn event(&self, dev: DeviceId, event: EventId) -> Result<EventRec> {
        self.check_open(dev)?;
        self.events_lock()
            .by_id
            .get(&(dev.0, event.0))
            .cloned()
            .ok_or(Error::new(ErrorKind::InvalidHandle, "unknown event"))
    }

    /// A free timestamp slot of `dev`'s event table, its page backed.
    fn event_slot(&self, dev: DeviceId) -> Result<u64> {
        let mut ev = self.events_lock();
        if let Some(slot) = ev.free_slots.get_mut(&dev.0).and_then(Vec::pop) {
            return Ok(slot);
        }
        let slot = ev.next_slot.get(&dev.0).copied().unwrap_or(0);
        if slot >= EVENT_TABLE_BYTES / 8 {
            return Err(Error::new(ErrorKind::OutOfMemory, "no event slots left"));
        }
        let page = slot * 8 / EVENT_PAGE_BYTES;
        if !ev.pages.get(&dev.0).is_some_and(|p| p.contains(&page)) {
            let start = DeviceAddr(event_table_base(dev.0) + page * EVENT_PAGE_BYTES);
            let range = VaRange::try_new(start, EVENT_PAGE_BYTES)?;
            self.back(dev, &BackRequest { range, page_size: PageSize::Normal, attrs: MemAttr::CACHED })?;
            ev.pages.entry(dev.0).or_default().push(page);
        }
        ev.next_slot.insert(dev.0, slot + 1);
        Ok(slot)
    }

    /// Whether task `seq` of `queue` has run, without waiting: true once the queue reached it
    /// or is gone (a destroyed queue runs nothing more); false while it is pending, and for a
    /// queue stopped by a failure, which may never reach it.
    fn has_run(&self, dev: DeviceId, queue: QueueId, seq: u64) -> bool {
        match self.wait(dev, queue, seq, Some(0)) {
            Ok(()) => true,
            Err(e) => e.kind() == ErrorKind::InvalidHandle,
        }
    }

    /// The event as it stands now: a queued reset that has run clears its point.
    fn settled_event(&self, dev: DeviceId, event: EventId) -> Result<EventRec> {
        let mut rec = self.event(dev, event)?;
        if let Some((rq, rseq)) = rec.reset {
            if self.has_run(dev, rq, rseq) {
                let mut ev = self.events_lock();
                if let Some(r) = ev.by_id.get_mut(&(dev.0, event.0)) {
                    // Unless a record came in meanwhile.
                    if r.reset == Some((rq, rseq)) {
                        r.point = None;
                        r.reset = None;
                    }
                    rec = r.clone();
                }
            }
        }
        Ok(rec)
    }

    /// Gives back the ids and slots of destroyed events of `dev` whose SQEs have all run.
    fn reap_events(&self, dev: DeviceId) {
        let candidates: Vec<Retired> = {
            let mut ev = self.events_lock();
            let (mine, rest) = std::mem::take(&mut ev.retired).into_iter().partition(|r| r.dev == dev.0);
            ev.retired = rest;
            mine
        };
        let mut keep = Vec::new();
        for r in candidates {
            if !r.uses.iter().all(|&(q, seq)| self.has_run(dev, q, seq)) {
                keep.push(r);
                continue;
            }
            let mut p = trs_res_id_para { res_type: abi::DRV_EVENT_ID, id: r.id, ..Default::default() };
            if self.tsdrv(dev, abi::TRS_RES_ID_FREE, &mut p, "free an event id").is_err() {
                keep.push(r);
                continue;
            }
            self.events_lock().free_slots.entry(dev.0).or_default().push(r.slot);
        }
        self.events_lock().retired.extend(keep);
    }

    /// Forgets `dev`'s events and frees its event table (the device is closing).
    fn drop_events(&self, dev: DeviceId) {
        let pages = {
            let mut ev = self.events_lock();
            ev.by_id.retain(|&(d, _), _| d != dev.0);
            ev.retired.retain(|r| r.dev != dev.0);
            ev.free_slots.remove(&dev.0);
            ev.next_slot.remove(&dev.0);
            ev.graphs.remove(&dev.0);
            ev.pages.remove(&dev.0).unwrap_or_default()
        };
        for page in pages {
            let start = DeviceAddr(event_table_base(dev.0) + page * EVENT_PAGE_BYTES);
            if let Ok(range) = VaRange::try_new(start, EVENT_PAGE_BYTES) {
                let _ = self.unback(dev, range);
            }
        }
    }

    /// The device's memory by page class, from `QUERY_MEM_USEDINFO`: HBM, or DDR on a device
    /// without HBM.
    fn query_memory(&self, dev: DeviceId) -> Result<(MemoryKind, MemoryInfo)> {
        for (kind, mem_type) in
            [(MemoryKind::Hbm, abi::MEM_INFO_TYPE_HBM_SIZE), (MemoryKind::Ddr, abi::MEM_INFO_TYPE_DDR_SIZE)]
        {
            let para = devmm_query_device_mem_usedinfo { mem_type, ..Default::default() };
            let mut arg = devmm_ioctl_arg::with(dev.0, &para);
            self.svm(dev, abi::DEVMM_SVM_QUERY_MEM_USEDINFO, &mut arg, "query device memory")?;
            let q = arg.get::<devmm_query_device_mem_usedinfo>();
            if q.normal_total_size > 0 {
                return Ok((
                    kind,
                    MemoryInfo {
                        total_bytes: q.normal_total_size,
                        free_bytes: q.normal_free_size,
                        huge_total_bytes: q.huge_total_size,
                        huge_free_bytes: q.huge_free_size,
                        giant_total_bytes: q.giant_total_size,
                        giant_free_bytes: q.giant_free_size,
                    },
                ));
            }
        }
        Err(Error::new(ErrorKind::NoDevice, "the device reports no memory"))
    }
}

/// IPC by name through the SVM commands (what `halShmem*` does).
impl<T: Transport> Davinci<T> {
    /// Maps an imported share's handle at `range`: `IPC_MEM_OPEN` at that VA.
    fn ipc_map(&self, dev: DeviceId, handle: PhysHandle, range: VaRange) -> Result<()> {
        let (name, d) = *self
            .ipc
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pending
            .get(&handle.0)
            .ok_or(Error::new(ErrorKind::InvalidHandle, "unknown handle"))?;
        if d != dev.0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "the share was imported on another device"));
        }
        self.ipc_open(dev, &name, range.start())?;
        self.ipc.lock().unwrap_or_else(|p| p.into_inner()).opened.insert(range.start().as_u64(), handle.0);
        Ok(())
    }

    /// `IPC_MEM_OPEN`: maps share `name` into this process on `dev` at `at`, a VA the caller
    /// chose (as the real library does, in its own heaps).
    ///
    /// # Errors
    ///
    /// As the driver reports: an unknown name, a process not on the whitelist (or the
    /// exporter itself), a VA already in use.
    pub fn ipc_open(&self, dev: DeviceId, name: &ShareName, at: DeviceAddr) -> Result<()> {
        self.check_open(dev)?;
        let para = devmm_mem_ipc_open_para {
            vptr: at.as_u64(),
            name: abi::ipc_name(name.as_bytes()).ok_or(Error::new(ErrorKind::InvalidArgument, "name"))?,
        };
        let mut arg = devmm_ioctl_arg::with(dev.0, &para);
        self.svm(dev, abi::DEVMM_SVM_IPC_MEM_OPEN, &mut arg, "open an IPC share")
    }

    /// `IPC_MEM_CLOSE`: unmaps a share [`Self::ipc_open`] mapped at `addr`.
    ///
    /// # Errors
    ///
    /// As the driver reports: no share opened there.
    pub fn ipc_close(&self, dev: DeviceId, addr: DeviceAddr) -> Result<()> {
        self.check_open(dev)?;
        let mut arg = devmm_ioctl_arg::with(dev.0, &devmm_mem_ipc_close_para { vptr: addr.as_u64() });
        self.svm(dev, abi::DEVMM_SVM_IPC_MEM_CLOSE, &mut arg, "close an IPC share")
    }
}

/// Sharing over the driver's two schemes. Name-based IPC (keys): `export_range` is
/// `IPC_MEM_CREATE`, `set_share_pids` is `IPC_MEM_SET_PID`, and an import is a tagged handle
/// that `IPC_MEM_OPEN` maps at the runtime's VA. Handle-based (shareable handles of VMM
/// memory): `export_physical` is `MEM_EXPORT` (plus `MEM_SET_ATTR` without a whitelist),
/// `set_share_pids` is `MEM_SET_PID`, `share_info` is `MEM_GET_INFO`, and `import_share` is
/// `MEM_IMPORT`, whose handle maps and releases like one this process created.
impl<T: Transport> Sharing for Davinci<T> {
    fn process_id(&self) -> u32 {
        std::process::id()
    }

    fn export_range(
        &self,
        dev: DeviceId,
        range: VaRange,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        self.check_open(dev)?;
        if kind != ShareKind::Key {
            return Err(not_supported(
                "shareable handles name physical handles; VA ranges export as IPC keys",
            ));
        }
        let para = devmm_mem_ipc_create_para {
            vptr: range.start().as_u64(),
            len: range.len_bytes(),
            ..Default::default()
        };
        let mut arg = devmm_ioctl_arg::with(dev.0, &para);
        self.svm(dev, abi::DEVMM_SVM_IPC_MEM_CREATE, &mut arg, "create an IPC share")?;
        let out = arg.get::<devmm_mem_ipc_create_para>();
        let name = ShareName::try_new(abi::ipc_name_bytes(&out.name))
            .ok_or(Error::new(ErrorKind::Internal, "the driver returned a malformed IPC name"))?;
        if no_whitelist {
            let para = devmm_mem_ipc_set_attr_para {
                type_: abi::SHMEM_ATTR_TYPE_NO_WLIST_IN_SERVER,
                attr: abi::SHMEM_NO_WLIST_ENABLE,
                name: out.name,
            };
            let mut arg = devmm_ioctl_arg::with(dev.0, &para);
            if let Err(e) = self.svm(dev, abi::DEVMM_SVM_IPC_MEM_SET_ATTR, &mut arg, "drop the whitelist") {
                let _ = self.destroy_share(&name);
                return Err(e);
            }
        }
        self.exported.lock().unwrap_or_else(|p| p.into_inner()).insert(name, dev.0);
        Ok(name)
    }

    fn export_physical(
        &self,
        dev: DeviceId,
        handle: PhysHandle,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        self.check_open(dev)?;
        if kind != ShareKind::Handle {
            return Err(not_supported(
                "IPC keys name VA ranges; physical handles export as shareable handles",
            ));
        }
        let id = i32::try_from(handle.0)
            .ok()
            .filter(|id| self.phys_recs().contains_key(&(dev.0, *id)))
            .ok_or(Error::new(ErrorKind::InvalidHandle, "not a physical handle of this process"))?;
        let mut arg = devmm_ioctl_arg::with(dev.0, &abi::devmm_mem_export_para { side: 1, id, share_id: 0 });
        self.svm(dev, abi::DEVMM_SVM_MEM_EXPORT, &mut arg, "export a physical handle")?;
        let share_id = arg.get::<abi::devmm_mem_export_para>().share_id;
        if share_id < 0 {
            return Err(Error::new(ErrorKind::Internal, "the driver returned a negative share id"));
        }
        if no_whitelist {
            let para = abi::devmm_mem_set_attr_para {
                share_id,
                type_: abi::SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER,
                attr: abi::ShareHandleAttr { enableFlag: abi::SHR_HANDLE_NO_WLIST_ENABLE, rsv: [0; 8] },
            };
            let mut arg = devmm_ioctl_arg::with(dev.0, &para);
            // The share stays until the handle is released (the driver has no un-export).
            self.svm(dev, abi::DEVMM_SVM_MEM_SET_ATTR, &mut arg, "drop the whitelist")?;
        }
        let name = handle_share_name(dev.0, share_id)?;
        if let Some(rec) = self.phys_recs().get_mut(&(dev.0, id)) {
            rec.export = Some(name);
        }
        self.exported.lock().unwrap_or_else(|p| p.into_inner()).insert(name, dev.0);
        Ok(name)
    }

    /// `IPC_MEM_QUERY` for a key, `MEM_GET_INFO` for a shareable handle. The exporter is known
    /// only when it is this process; the pinned driver reports only the device of a handle
    /// share, so its size and page size are known here only to its exporter (an importer
    /// learns them from [`Sharing::import_share`]) and read as 0 and normal pages otherwise.
    fn share_info(&self, name: &ShareName) -> Result<ShareInfo> {
        let mine = self.exported.lock().unwrap_or_else(|p| p.into_inner()).contains_key(name);
        let exporter_pid = if mine { std::process::id() } else { 0 };
        if let Some((dev, share_id)) = parse_handle_share(name) {
            let para = abi::devmm_mem_get_info_para { share_id, share_devid: dev, ..Default::default() };
            let mut arg = devmm_ioctl_arg::with(dev, &para);
            self.svm(DeviceId(dev), abi::DEVMM_SVM_MEM_GET_INFO, &mut arg, "query a shareable handle")?;
            let info = arg.get::<abi::devmm_mem_get_info_para>().info;
            let own = self.phys_recs().values().find(|r| r.export == Some(*name)).copied();
            return Ok(ShareInfo {
                physical_device: info.phyDevid,
                len_bytes: own.map_or(0, |r| r.len_bytes),
                page_size: own.map_or(PageSize::Normal, |r| r.page_size),
                exporter_pid,
            });
        }
        let para = devmm_mem_query_size_para {
            name: abi::ipc_name(name.as_bytes()).ok_or(Error::new(ErrorKind::InvalidArgument, "name"))?,
            ..Default::default()
        };
        let mut arg = devmm_ioctl_arg::with(0, &para);
        self.svm(DeviceId(0), abi::DEVMM_SVM_IPC_MEM_QUERY, &mut arg, "query an IPC share")?;
        let q = arg.get::<devmm_mem_query_size_para>();
        Ok(ShareInfo {
            physical_device: q.phy_devid,
            len_bytes: q.len,
            page_size: if q.is_huge != 0 { PageSize::Huge } else { PageSize::Normal },
            exporter_pid,
        })
    }

    /// A handle that stands for share `name` until it is mapped: mapping it is
    /// `IPC_MEM_OPEN` at the chosen VA, unmapping `IPC_MEM_CLOSE`.
    ///
    /// A shareable handle imports with `MEM_IMPORT` as a physical handle of this process.
    fn import_share(&self, name: &ShareName, dev: DeviceId) -> Result<(PhysHandle, ShareInfo)> {
        self.check_open(dev)?;
        if let Some((share_dev, share_id)) = parse_handle_share(name) {
            let para = abi::devmm_mem_import_para {
                share_id,
                share_devid: share_dev,
                share_phy_devid: share_dev,
                handle_type: abi::MEM_HANDLE_TYPE_NONE,
                ..Default::default()
            };
            let mut arg = devmm_ioctl_arg::with(dev.0, &para);
            self.svm(dev, abi::DEVMM_SVM_MEM_IMPORT, &mut arg, "import a shareable handle")?;
            let out = arg.get::<abi::devmm_mem_import_para>();
            let page_size = match out.pg_type {
                0 => PageSize::Normal,
                1 => PageSize::Huge,
                2 => PageSize::Giant,
                _ => return Err(Error::new(ErrorKind::Internal, "the driver reported an unknown page type")),
            };
            let len_bytes = out.pg_num * page_size.bytes();
            self.phys_recs().insert((dev.0, out.id), PhysRec { len_bytes, page_size, export: None });
            let info = ShareInfo { physical_device: share_dev, len_bytes, page_size, exporter_pid: 0 };
            // CAST: handle ids are non-negative.
            return Ok((PhysHandle(out.id as u32 as u64), info));
        }
        let info = self.share_info(name)?;
        let mut ipc = self.ipc.lock().unwrap_or_else(|p| p.into_inner());
        ipc.next += 1;
        let handle = PhysHandle(IPC_HANDLE_BIT | ipc.next);
        ipc.pending.insert(handle.0, (*name, dev.0));
        Ok((handle, info))
    }

    /// `IPC_MEM_DESTROY`. A shareable handle has no destroy command in the pinned driver: its
    /// share ends when the handle is released.
    fn destroy_share(&self, name: &ShareName) -> Result<()> {
        if parse_handle_share(name).is_some() {
            return Err(not_supported("destroying a shareable handle (it ends when the handle is released)"));
        }
        let para = devmm_mem_ipc_destroy_para {
            name: abi::ipc_name(name.as_bytes()).ok_or(Error::new(ErrorKind::InvalidArgument, "name"))?,
        };
        let mut arg = devmm_ioctl_arg::with(0, &para);
        self.svm(DeviceId(0), abi::DEVMM_SVM_IPC_MEM_DESTROY, &mut arg, "destroy an IPC share")?;
        self.exported.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
        Ok(())
    }

    fn set_share_pids(&self, name: &ShareName, pids: &[u32]) -> Result<()> {
        if let Some((dev, share_id)) = parse_handle_share(name) {
            if pids.is_empty() || pids.len() > abi::SVM_SHARE_MEM_MAX_PID_CNT {
                return Err(Error::new(ErrorKind::InvalidArgument, "1 to 65535 pids per call"));
            }
            let list: Vec<i32> = pids
                .iter()
                .map(|&p| i32::try_from(p))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| Error::new(ErrorKind::InvalidArgument, "pid"))?;
            let para = abi::devmm_mem_set_pid_para {
                share_id,
                // CAST: at most 65535.
                pid_num: list.len() as u32,
                // CAST: the list's address, as the kernel ABI carries it.
                pid_list: list.as_ptr() as u64,
            };
            let mut arg = devmm_ioctl_arg::with(dev, &para);
            let fd = self.svm.fd;
            // SAFETY: `pid_list` points at `pid_num` initialised `i32`s in `list`, which lives
            // until after the call; the driver only reads them and keeps no pointer.
            return unsafe { sys::ioctl_with_ptrs(&*self.t, fd, abi::DEVMM_SVM_MEM_SET_PID, &mut arg) }
                .map(drop)
                .map_err(dev_err("whitelist pids of a shareable handle"));
        }
        if pids.len() > abi::DEVMM_SECONDARY_PROCESS_NUM {
            return Err(Error::new(ErrorKind::InvalidArgument, "at most 32 pids per call"));
        }
        let mut para = devmm_mem_ipc_set_pid_para {
            name: abi::ipc_name(name.as_bytes()).ok_or(Error::new(ErrorKind::InvalidArgument, "name"))?,
            // CAST: at most 32.
            num: pids.len() as u32,
            ..Default::default()
        };
        for (slot, &pid) in para.set_pid.iter_mut().zip(pids) {
            *slot = i32::try_from(pid).map_err(|_| Error::new(ErrorKind::InvalidArgument, "pid"))?;
        }
        let mut arg = devmm_ioctl_arg::with(0, &para);
        self.svm(DeviceId(0), abi::DEVMM_SVM_IPC_MEM_SET_PID, &mut arg, "whitelist pids")
    }
}

impl<T: Transport> Driver for Davinci<T> {
    /// The device's loader formats are not public; a fake kernel's software NPU has one.
    fn loader(&self) -> Option<&dyn Loader> {
        self.t.loader()
    }

    fn name(&self) -> &'static str {
        "davinci"
    }
}

impl<T: Transport> Drop for Davinci<T> {
    fn drop(&mut self) {
        let devs: Vec<u32> = self.opened().keys().copied().collect();
        for d in devs {
            let _ = self.close(DeviceId(d));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_says_why() {
        if std::path::Path::new(MANAGER_NODE).exists() {
            return;
        }
        let why = super::probe().unwrap_err();
        assert!(why.contains("/dev/davinci_manager"), "{why}");
    }

    #[test]
    fn errno_kinds_round_trip() {
        for kind in [
            ErrorKind::InvalidArgument,
            ErrorKind::OutOfMemory,
            ErrorKind::NotSupported,
            ErrorKind::NoDevice,
            ErrorKind::InvalidHandle,
            ErrorKind::Busy,
            ErrorKind::Timeout,
            ErrorKind::PermissionDenied,
            ErrorKind::DeviceFault,
            ErrorKind::QueueFull,
            ErrorKind::Internal,
        ] {
            assert_eq!(Errno::from_kind(kind).kind(), kind);
        }
        assert_eq!(Errno(libc::ENOTTY).kind(), ErrorKind::NotSupported);
    }

    #[test]
    fn abi_refusal_names_the_release() {
        let e = StartError::Abi { command: "DEVMM_SVM_GET_MMAP_INFO", number: 1, errno: Errno(libc::ENOTTY) };
        let text = e.to_string();
        assert!(text.contains(abi::PINNED_RELEASE) && text.contains("refusing"), "{text}");
    }
}
