//! The driver traits every backend implements.
//!
//! # For users
//!
//! Take `&dyn Driver` (or `D: Driver`) and call the small traits it is made of. Every call is
//! synchronous unless it goes through [`Queues`] or [`Events`]; the kernel [`Loader`] is a
//! capability asked for with [`Driver::loader`]. All calls are thread safe (`&self`).
//!
//! # For backend implementors
//!
//! - [`MemoryBacking::back`] is all or nothing: when it fails, no page of the range stays backed
//!   and no physical memory stays allocated.
//! - Device addresses handed to [`CopyEngine`] must be checked against what is backed; an
//!   unbacked byte is [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle), never a
//!   host crash.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use bitflags::bitflags;

use crate::addr::{DeviceAddr, DeviceId, PageSize, VaRange};
use crate::error::Result;
use crate::task::{EventId, EventInfo, EventWait, HostCall, QueueId, TaskDesc, TaskStatus};

/// The chip generation a device presents, which decides per-SoC rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SocProfile {
    /// Atlas A2 training/inference series (`Ascend910B`), the default.
    A2,
    /// Atlas A3 training/inference series (`Ascend910_93`).
    A3,
    /// Ascend 950PR/950DT (`Ascend950PR`).
    Ascend950,
}

impl SocProfile {
    /// The SoC name the runtime reports.
    pub const fn soc_name(self) -> &'static str {
        match self {
            Self::A2 => "Ascend910B1",
            Self::A3 => "Ascend910_9391",
            Self::Ascend950 => "Ascend950PR",
        }
    }

    /// Extra bytes `aclrtMalloc` adds after rounding to 32 (the SoC spec's `padding_size`).
    pub const fn malloc_padding(self) -> u64 {
        match self {
            Self::A2 | Self::A3 => 32,
            Self::Ascend950 => 0,
        }
    }

    /// The most streams of one device, the default stream included (A2, A3 and 950 alike).
    pub const fn max_streams(self) -> usize {
        match self {
            Self::A2 | Self::A3 | Self::Ascend950 => 1984,
        }
    }

    /// The most events of one device, as its scheduler holds them.
    pub const fn max_events(self) -> usize {
        match self {
            Self::A2 | Self::A3 | Self::Ascend950 => 65_536,
        }
    }

    /// Unfinished tasks one stream's queue holds before submission waits (back-pressure).
    pub const fn stream_depth(self) -> u32 {
        match self {
            Self::A2 | Self::A3 | Self::Ascend950 => 1024,
        }
    }

    /// Parses a profile name as accepted by `ACLRS_SIM_SOC`.
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = |s: &str| s.eq_ignore_ascii_case(name);
        if ["A2", "Ascend910B", "Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4"]
            .iter()
            .any(|s| lower(s))
        {
            Some(Self::A2)
        } else if ["A3", "Ascend910_93", "Ascend910_9391", "Ascend910_9392"].iter().any(|s| lower(s)) {
            Some(Self::A3)
        } else if ["950", "Ascend950", "Ascend950PR", "Ascend950DT"].iter().any(|s| lower(s)) {
            Some(Self::Ascend950)
        } else {
            None
        }
    }
}

/// What kind of memory a device has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// High-bandwidth memory (A2, A3, 950).
    #[default]
    Hbm,
    /// DDR only (for example Atlas 200I/500 A2): HBM queries are answered with DDR figures.
    Ddr,
}

/// Static facts about one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Chip generation.
    pub soc: SocProfile,
    /// The kind of the device memory (whose size is `hbm_bytes`).
    pub memory: MemoryKind,
    /// Bytes of HBM the device has.
    pub hbm_bytes: u64,
    /// Bytes of HBM that may be handed out as 2 MiB pages.
    pub huge_budget_bytes: u64,
    /// Bytes of HBM that may be handed out as 1 GiB pages.
    pub giant_budget_bytes: u64,
}

/// Current free and total device memory, by page class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryInfo {
    /// All HBM the user may allocate.
    pub total_bytes: u64,
    /// HBM not allocated to anyone.
    pub free_bytes: u64,
    /// The 2 MiB huge-page budget.
    pub huge_total_bytes: u64,
    /// Bytes still obtainable as 2 MiB pages.
    pub huge_free_bytes: u64,
    /// The 1 GiB page budget.
    pub giant_total_bytes: u64,
    /// Bytes still obtainable as 1 GiB pages.
    pub giant_free_bytes: u64,
}

bitflags! {
    /// Attributes of a backed range or physical allocation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MemAttr: u32 {
        /// User space may read but not write.
        const READONLY = 1 << 0;
        /// Usable for device-to-device (peer-to-peer) copies.
        const P2P = 1 << 1;
        /// Cacheable (every device allocation is, on current SoCs).
        const CACHED = 1 << 2;
    }
}

/// A request to back a device VA range with physical pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackRequest {
    /// The range to back; start and length are multiples of `page_size`.
    pub range: VaRange,
    /// Page size of every page in the range.
    pub page_size: PageSize,
    /// Attributes of the mapping.
    pub attrs: MemAttr,
}

/// An opaque handle to a physical allocation made by [`PhysicalMemory::alloc_physical`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysHandle(pub u64);

/// Host bytes the caller guarantees readable for the call.
pub type HostBytes<'a> = &'a [u8];
/// Host bytes the caller guarantees writable for the call.
pub type HostBytesMut<'a> = &'a mut [u8];

/// Control operations: discovery and information.
pub trait DeviceControl {
    /// How many devices the backend presents.
    fn device_count(&self) -> u32;

    /// Static facts about `dev`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) for an unknown device.
    fn device_info(&self, dev: DeviceId) -> Result<DeviceInfo>;

    /// Opens `dev` for this process: after this, memory, copy and queue calls on it work.
    /// Opening an open device does nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) for an unknown device,
    /// [`ErrorKind::Busy`](crate::ErrorKind::Busy) when another user holds it exclusively.
    fn open(&self, dev: DeviceId) -> Result<()>;

    /// Closes `dev`: waits for its queues, then releases every queue, mapping and physical
    /// allocation this process made on it. Closing a closed device does nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) for an unknown device.
    fn close(&self, dev: DeviceId) -> Result<()>;

    /// Free and total memory of `dev` right now.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) for an unknown device.
    fn memory_info(&self, dev: DeviceId) -> Result<MemoryInfo>;
}

/// Backing device VA ranges with physical pages chosen by the device.
pub trait MemoryBacking {
    /// Backs every page of `req.range` with physical memory of `req.page_size`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when too few pages of that
    /// size are free; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a
    /// misaligned or out-of-window range. Nothing stays backed on error.
    fn back(&self, dev: DeviceId, req: &BackRequest) -> Result<()>;

    /// Releases the pages behind `range`, which must be exactly a range backed by one `back`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) when `range` is not such
    /// a range.
    fn unback(&self, dev: DeviceId, range: VaRange) -> Result<()>;

    /// Backs each of `reqs` (the pieces of one allocation, in address order: say 2 MiB pages
    /// and a 4 KiB-page tail), all or nothing. A backend may do it in one step (one mapping
    /// for adjacent pieces); the default backs them one by one and undoes on error.
    ///
    /// # Errors
    ///
    /// As [`Self::back`]; nothing stays backed on error.
    fn back_many(&self, dev: DeviceId, reqs: &[BackRequest]) -> Result<()> {
        for (i, r) in reqs.iter().enumerate() {
            if let Err(e) = self.back(dev, r) {
                for done in reqs[..i].iter().rev() {
                    let _ = self.unback(dev, done.range);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Releases each of `ranges`, each backed by one [`Self::back`] or together by one
    /// [`Self::back_many`]. A backend may do it in one step; the default unbacks them one by
    /// one and reports the first error after trying all.
    ///
    /// # Errors
    ///
    /// As [`Self::unback`].
    fn unback_many(&self, dev: DeviceId, ranges: &[VaRange]) -> Result<()> {
        let mut out = Ok(());
        for &r in ranges {
            if let Err(e) = self.unback(dev, r) {
                if out.is_ok() {
                    out = Err(e);
                }
            }
        }
        out
    }
}

/// Physical allocations that exist apart from any VA (virtual memory management, VMM).
pub trait PhysicalMemory {
    /// Allocates `len_bytes` (a multiple of `page_size`) of physical memory.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when not enough is free.
    fn alloc_physical(
        &self,
        dev: DeviceId,
        len_bytes: u64,
        page_size: PageSize,
        attrs: MemAttr,
    ) -> Result<PhysHandle>;

    /// Frees a physical allocation that is no longer mapped anywhere.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown handle,
    /// [`ErrorKind::Busy`](crate::ErrorKind::Busy) while it is still mapped.
    fn free_physical(&self, dev: DeviceId, handle: PhysHandle) -> Result<()>;

    /// Maps `range.len_bytes()` bytes of `handle`, from `offset`, at `range`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a misaligned or
    /// too long mapping, [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an
    /// unknown handle.
    fn map_physical(&self, dev: DeviceId, handle: PhysHandle, offset: u64, range: VaRange) -> Result<()>;

    /// Removes a mapping made by [`Self::map_physical`] at exactly `range`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) when nothing is mapped
    /// there.
    fn unmap_physical(&self, dev: DeviceId, range: VaRange) -> Result<()>;
}

/// Pinned (page-locked) host memory inside the pinned-host window.
pub trait PinnedHost {
    /// Makes `range` of the pinned-host window usable host memory.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when the host cannot pin more.
    fn back_host(&self, range: VaRange) -> Result<()>;

    /// Returns `range` of the pinned-host window; touching it afterwards faults.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for a range not backed.
    fn unback_host(&self, range: VaRange) -> Result<()>;

    /// Copies host bytes into pinned host memory at `dst`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) when a byte of the
    /// destination is not backed pinned memory.
    fn write_host(&self, dst: DeviceAddr, src: HostBytes<'_>) -> Result<()>;

    /// Copies pinned host memory at `src` into host bytes.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) when a byte of the source
    /// is not backed pinned memory.
    fn read_host(&self, dst: HostBytesMut<'_>, src: DeviceAddr) -> Result<()>;
}

/// Synchronous copy and set on the device's direct memory access (DMA) path.
pub trait CopyEngine {
    /// Copies host bytes into device memory at `dst`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) if any destination byte is
    /// not backed.
    fn copy_to_device(&self, dev: DeviceId, dst: DeviceAddr, src: HostBytes<'_>) -> Result<()>;

    /// Copies device memory at `src` into host bytes.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) if any source byte is not
    /// backed.
    fn copy_from_device(&self, dev: DeviceId, dst: HostBytesMut<'_>, src: DeviceAddr) -> Result<()>;

    /// Copies `len_bytes` between two device ranges (possibly on two devices, possibly
    /// overlapping: the result is as if the source were read first).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) if any byte is not backed.
    fn copy_device(
        &self,
        dst_dev: DeviceId,
        dst: DeviceAddr,
        src_dev: DeviceId,
        src: DeviceAddr,
        len_bytes: u64,
    ) -> Result<()>;

    /// Fills `len_bytes` of device memory at `dst` with `value`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) if any byte is not backed.
    fn set_device(&self, dev: DeviceId, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()>;

    /// Copies `len_bytes` between any two backed addresses of the shared address space
    /// (device windows or pinned host), wherever each lies.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) if any byte is not backed.
    fn copy_any(&self, dst: DeviceAddr, src: DeviceAddr, len_bytes: u64) -> Result<()>;

    /// Fills `len_bytes` at any backed address (device window or pinned host) with `value`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) if any byte is not backed.
    fn set_any(&self, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()>;
}

/// How far one queue got: read without changing anything (an error stays for
/// [`Queues::take_error`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueProgress {
    /// The highest sequence number handed out (0 before any).
    pub submitted: u64,
    /// The highest sequence number completed (0 before any).
    pub completed: u64,
}

/// What [`Queues::abort_queue`] does with the task at the head of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortHead {
    /// The head task is dropped with the rest (a stream abort, a forced device reset).
    Cancel,
    /// The head task, when its dependencies are met, counts as already on the device and runs
    /// (a forced stream destroy).
    Runs,
}

/// Task queues: creation, submission, progress, errors and waiting.
///
/// Every method is required: a backend that has queues has all of them. Reading progress
/// never clears a failure; only [`take_error`](Self::take_error) does.
pub trait Queues {
    /// Creates a queue holding at most `depth` unfinished tasks.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when no queue is left.
    fn create_queue(&self, dev: DeviceId, depth: u32) -> Result<QueueId>;

    /// Destroys a queue after its submitted tasks finish.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue.
    fn destroy_queue(&self, dev: DeviceId, queue: QueueId) -> Result<()>;

    /// Appends `task`; returns its sequence number (1 for the first task of a queue). Blocks
    /// while the queue is full.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue.
    fn submit(&self, dev: DeviceId, queue: QueueId, task: TaskDesc) -> Result<u64>;

    /// Makes `queue` wait, after everything submitted to it so far, until `target` has
    /// completed its task `target_seq`; returns the wait's sequence number on `queue`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue.
    fn wait_point(&self, dev: DeviceId, queue: QueueId, target: QueueId, target_seq: u64) -> Result<u64>;

    /// The queue's submitted and completed sequence numbers. Changes nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue.
    fn progress(&self, dev: DeviceId, queue: QueueId) -> Result<QueueProgress>;

    /// Takes the status of the first failed task since the last call (`None`: none failed),
    /// clearing it; a queue a stop-on-failure failure stopped runs its later tasks again.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue.
    fn take_error(&self, dev: DeviceId, queue: QueueId) -> Result<Option<TaskStatus>>;

    /// Waits until task `seq` has completed, at most `timeout_ms` milliseconds (`None`: forever).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) when time runs out first.
    fn wait(&self, dev: DeviceId, queue: QueueId, seq: u64, timeout_ms: Option<u32>) -> Result<()>;

    /// Drops the tasks queued (not yet started) on `queue` and returns how many; a running
    /// task finishes. Does not wait for the running task.
    ///
    /// With [`AbortHead::Runs`] (a forced stream destroy, CANN's `aclrtDestroyStreamForce`) the
    /// task at the head of the queue whose dependencies are met when the call comes counts as
    /// already on the device: it is not dropped and runs to completion. With
    /// [`AbortHead::Cancel`] (`aclrtStreamAbort`, a forced device reset) it is dropped like the
    /// rest. Events that dropped tasks would have recorded stay not complete.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue;
    /// [`ErrorKind::NotSupported`](crate::ErrorKind::NotSupported) where the device cannot
    /// take back what it was given (the caller then waits instead).
    fn abort_queue(&self, dev: DeviceId, queue: QueueId, head: AbortHead) -> Result<usize>;

    /// Sets whether a failed task makes the queue skip the tasks queued behind it, and those
    /// submitted after it until [`take_error`](Self::take_error) reports the failure (the
    /// queue is stopped until the host has seen it).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue.
    fn set_stop_on_failure(&self, dev: DeviceId, queue: QueueId, stop: bool) -> Result<()>;

    /// A submission port of `queue`: [`QueuePort::submit`] queues a task exactly as
    /// [`submit`](Self::submit) does, without finding the device and the queue again on every
    /// call. `None` (the default) where the backend has none; callers then use
    /// [`submit`](Self::submit). A port may outlive its queue and its device (it keeps memory
    /// alive, never a device): once the queue is destroyed its submissions fail with
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle).
    fn port(&self, dev: DeviceId, queue: QueueId) -> Option<Arc<dyn QueuePort>> {
        let _ = (dev, queue);
        None
    }
}

/// One queue's submission port ([`Queues::port`]), held by whoever submits to the queue often.
pub trait QueuePort: Send + Sync + core::fmt::Debug {
    /// Appends `task`, as [`Queues::submit`] does for this port's queue; returns its sequence
    /// number. Blocks while the queue is full.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) once the queue is destroyed
    /// or being destroyed; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a
    /// task that names a staged ticket ([`TaskDesc::ticket`]), which only
    /// [`Queues::submit`] takes. By reference: the caller's task is read where it was built,
    /// not copied on the way (a copy reads it back wider than it was written, which stalls
    /// until the submitting thread's older stores are written).
    fn submit(&self, task: &TaskDesc) -> Result<u64>;

    /// Appends a host function without a report (`TaskDesc::HostFunc` whose call has
    /// `report: None`), as [`submit`](Self::submit) would. The fields come as plain words, so
    /// the hottest submissions reach the queue's encoding without a task in memory between.
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit).
    fn submit_host_fn(&self, func: u64, data: u64) -> Result<u64> {
        self.submit(&TaskDesc::HostFunc { call: HostCall { func, data, report: None } })
    }

    /// Appends a byte fill (`TaskDesc::Memset`), as [`submit`](Self::submit) would, with its
    /// fields as plain words (see [`submit_host_fn`](Self::submit_host_fn)).
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit).
    fn submit_fill(&self, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<u64> {
        self.submit(&TaskDesc::Memset { dst, value, len_bytes })
    }

    /// The highest sequence number handed out on the queue so far, by any path (this port,
    /// [`Queues::submit`], event records and waits): every task submitted before this call
    /// returned is at or before it.
    fn submitted(&self) -> u64;
}

/// Events: named points in queues that other queues wait for.
pub trait Events {
    /// Creates an event on `dev`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory) when no event is left.
    fn create_event(&self, dev: DeviceId) -> Result<EventId>;

    /// Destroys an event; queued records and resets of it become no-ops.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown event.
    fn destroy_event(&self, dev: DeviceId, event: EventId) -> Result<()>;

    /// Records `event` on `queue` and returns the record's sequence number.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue or
    /// event.
    fn record_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<u64>;

    /// Makes `queue` wait for the point `event` was last recorded at (nothing when it was
    /// not), and says where the wait went and what it waits for.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue or
    /// event.
    fn wait_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<EventWait>;

    /// Resets `event` in the order of `queue`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown queue or
    /// event.
    fn reset_event(&self, dev: DeviceId, queue: QueueId, event: EventId) -> Result<()>;

    /// What `event` stands for now.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown event.
    fn event_info(&self, dev: DeviceId, event: EventId) -> Result<EventInfo>;

    /// Whether task `seq` of `queue` is ordered before everything submitted to `later` from
    /// now on, by the event waits this backend queued (its own view; the runtime keeps its
    /// own graph and does not ask).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) when the device is not open.
    fn is_ordered_before(&self, dev: DeviceId, queue: QueueId, seq: u64, later: QueueId) -> Result<bool>;
}

/// Runs host functions and callbacks ([`TaskDesc::HostFunc`]) for the runtime; returns 0 or
/// the `aclError` code the call failed with.
pub type HostHook = Arc<dyn Fn(HostCall) -> i32 + Send + Sync>;

/// The device's loader: kernel binaries, the host-call hook, and the staged data of kernel
/// arguments and batch copies that tasks name by ticket. A backend whose device formats are
/// not public has none ([`Driver::loader`] answers `None`).
pub trait Loader {
    /// Loads a kernel binary from the file at `path` (the operating system's bytes of the
    /// path) and returns its handle.
    ///
    /// # Errors
    ///
    /// A message saying why the file is not a kernel binary.
    fn load_binary(&self, path: &[u8]) -> core::result::Result<u64, String>;

    /// Loads a kernel binary from its bytes in host memory (`aclrtBinaryLoadFromData`) and
    /// returns its handle, as [`Loader::load_binary`] does for a file.
    ///
    /// # Errors
    ///
    /// A message saying why the bytes are not a kernel binary.
    fn load_binary_data(&self, data: &[u8]) -> core::result::Result<u64, String>;

    /// The handle of kernel function `name` of `binary`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown binary or
    /// name.
    fn binary_function(&self, binary: u64, name: &str) -> Result<u64>;

    /// Whether `func` is a live kernel function handle.
    fn is_function(&self, func: u64) -> bool;

    /// Unloads a binary; its functions go with it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown binary.
    fn unload_binary(&self, binary: u64) -> Result<()>;

    /// The device address and size of the device variable (a data symbol of a loaded binary)
    /// that starts at `addr`, the address the host program knows it by; `None` for any other
    /// address.
    fn symbol(&self, addr: u64) -> Option<(u64, u64)>;

    /// Installs the hook that runs host functions and callbacks.
    fn set_host_hook(&self, hook: HostHook);

    /// Stages a launch's argument bytes for a [`TaskDesc::Kernel`] submitted later; returns
    /// the ticket the task names.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) for a device not open.
    fn stage_args(&self, dev: DeviceId, args: Vec<u8>) -> Result<u64>;

    /// Stages a batch's (destination, source, length) entries for a [`TaskDesc::CopyBatch`]
    /// submitted later; returns the ticket the task names.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) for a device not open.
    fn stage_batch(&self, dev: DeviceId, entries: Vec<(u64, u64, u64)>) -> Result<u64>;

    /// Drops a staged ticket whose task was never submitted.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) when `ticket` is not
    /// staged on `dev`.
    fn unstage(&self, dev: DeviceId, ticket: u64) -> Result<()>;
}

/// Bytes in a share name (an IPC key or a shareable handle), without the terminating NUL.
pub const SHARE_NAME_BYTES: usize = 64;

/// The name of a share of physical memory between processes: 1 to 64 printable ASCII bytes
/// (the IPC key of `aclrtIpcMemGetExportKey`, whose buffer is 65 bytes with the NUL).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShareName {
    len: u8,
    bytes: [u8; SHARE_NAME_BYTES],
}

impl ShareName {
    /// Checks `text`: 1 to 64 bytes, each printable ASCII other than space.
    pub fn try_new(text: &[u8]) -> Option<Self> {
        if text.is_empty() || text.len() > SHARE_NAME_BYTES || !text.iter().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        let mut bytes = [0u8; SHARE_NAME_BYTES];
        bytes[..text.len()].copy_from_slice(text);
        // CAST: at most 64.
        Some(Self { len: text.len() as u8, bytes })
    }

    /// The name's bytes (no NUL).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        // Checked to be ASCII on construction.
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl core::fmt::Debug for ShareName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ShareName({:?})", self.as_str())
    }
}

/// What a share holds, as an importer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareInfo {
    /// The physical device whose memory is shared.
    pub physical_device: u32,
    /// Bytes shared.
    pub len_bytes: u64,
    /// The largest page size backing the shared memory.
    pub page_size: PageSize,
    /// The exporting process.
    pub exporter_pid: u32,
}

/// How a share is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareKind {
    /// An IPC key (`aclrtIpcMemGetExportKey`): a string of up to 64 characters.
    Key,
    /// A shareable handle (`aclrtMemExportToShareableHandle`): 16 hexadecimal digits, the
    /// `uint64_t` the caller passes around.
    Handle,
}

/// Sharing physical memory between processes: export, whitelist, import, destroy.
///
/// The whitelist is checked against the importing process's id as the backend learns it from
/// the operating system, never against an id the caller states. A share and the memory it
/// names outlive their exporter only while some importer still holds the memory; a process
/// that dies gives back its exports, imports and allocations.
///
/// Every method is required: a backend without sharing returns
/// [`ErrorKind::NotSupported`](crate::ErrorKind::NotSupported) from each, explicitly.
pub trait Sharing {
    /// The id of this process as the backend's whitelist checks see it (the bare tgid).
    fn process_id(&self) -> u32;

    /// Exports the physical memory behind `range` (made by [`MemoryBacking::back`], possibly
    /// by several adjacent calls) of `dev`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) when `range` is not wholly
    /// backed; [`ErrorKind::Busy`](crate::ErrorKind::Busy) when this process already exported
    /// exactly this memory.
    fn export_range(
        &self,
        dev: DeviceId,
        range: VaRange,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName>;

    /// Exports a physical allocation made by [`PhysicalMemory::alloc_physical`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown or imported
    /// handle; [`ErrorKind::Busy`](crate::ErrorKind::Busy) when it is already exported.
    fn export_physical(
        &self,
        dev: DeviceId,
        handle: PhysHandle,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName>;

    /// Adds `pids` to the whitelist of a share this process exported.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown share;
    /// [`ErrorKind::PermissionDenied`](crate::ErrorKind::PermissionDenied) when this process is
    /// not its exporter; [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when
    /// the share was exported without a whitelist or the list grows too long.
    fn set_share_pids(&self, name: &ShareName, pids: &[u32]) -> Result<()>;

    /// What share `name` holds.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown share.
    fn share_info(&self, name: &ShareName) -> Result<ShareInfo>;

    /// Imports share `name` on `dev` as a physical handle this process may map and must free
    /// with [`PhysicalMemory::free_physical`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown share or
    /// memory already freed; [`ErrorKind::PermissionDenied`](crate::ErrorKind::PermissionDenied)
    /// when this process is not on the whitelist or is the exporter itself;
    /// [`ErrorKind::NotSupported`](crate::ErrorKind::NotSupported) when `dev` is another device
    /// than the memory's.
    fn import_share(&self, name: &ShareName, dev: DeviceId) -> Result<(PhysHandle, ShareInfo)>;

    /// Destroys a share this process exported; importers keep what they imported.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`](crate::ErrorKind::InvalidHandle) for an unknown share;
    /// [`ErrorKind::PermissionDenied`](crate::ErrorKind::PermissionDenied) when this process is
    /// not its exporter.
    fn destroy_share(&self, name: &ShareName) -> Result<()>;
}

/// Everything a backend offers: the composite of the small traits.
pub trait Driver:
    DeviceControl + MemoryBacking + PhysicalMemory + PinnedHost + CopyEngine + Queues + Events + Send + Sync
{
    /// A short name for messages (`"sim"`, `"davinci"`).
    fn name(&self) -> &'static str;

    /// The device's loader, when the backend has one (the capability replaces asking which
    /// backend this is).
    fn loader(&self) -> Option<&dyn Loader>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soc_profiles_parse_and_pad() {
        assert_eq!(SocProfile::from_name("Ascend910B"), Some(SocProfile::A2));
        assert_eq!(SocProfile::from_name("a3"), Some(SocProfile::A3));
        assert_eq!(SocProfile::from_name("950"), Some(SocProfile::Ascend950));
        assert_eq!(SocProfile::from_name("Ascend310"), None);
        assert_eq!(SocProfile::A2.malloc_padding(), 32);
        assert_eq!(SocProfile::Ascend950.malloc_padding(), 0);
        assert_eq!(SocProfile::A2.max_streams(), 1984);
        assert_eq!(SocProfile::A3.max_events(), 65_536);
        assert_eq!(SocProfile::Ascend950.stream_depth(), 1024);
    }

    fn _object_safe(_: &dyn Driver) {}
}
