//! Contained kernel faults: what stopped a sim kernel that touched unmapped or protected memory,
//! kept per device and queue until the runtime takes it with the queue's failure.
//!
//! A kernel runs through the trampoline of `csrc/fault.c` (`sys::kernel`); a
//! SIGSEGV or SIGBUS it raises makes its launch fail with `ACL_ERROR_RT_AICORE_EXCEPTION`
//! (507015) instead of killing the process. The launch's status is only the code (a
//! [`hal::TaskStatus::Fault`]); the address and the signal travel here, next to it, so the
//! runtime can name the faulting address in the error message. This module owns that record
//! and which queue the current scheduler thread runs; it must not decide how a kernel is
//! called (the `kernel` module) or describe an address (the runtime does).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use hal::{DeviceId, Error, ErrorKind, Result};

use crate::Sim;

/// How a kernel's access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// The address has no backing the access may use (`SIGSEGV`): VA the windows reserve
    /// without access (never allocated, freed, a guard, an IPC import closed) or memory the
    /// sanitizer protects.
    Unmapped,
    /// A bus error (`SIGBUS`): a mapping whose backing is gone.
    Bus,
}

impl AccessKind {
    /// A short readable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unmapped => "unmapped",
            Self::Bus => "unbacked (bus error)",
        }
    }
}

/// The fault that stopped a kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelFault {
    /// The address the kernel touched.
    pub addr: u64,
    /// How the access faulted.
    pub kind: AccessKind,
    /// The block that faulted.
    pub block: u32,
    /// The launch's block count.
    pub blocks: u32,
    /// The kernel function's handle.
    pub func: u64,
}

thread_local! {
    /// The device whose scheduler thread this is (set once when it starts).
    static DEVICE: Cell<Option<u32>> = const { Cell::new(None) };
    /// The queue whose task this thread runs now (set by the scheduler before each task).
    static QUEUE: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// Notes that this thread is a scheduler thread of device `dev`.
pub(crate) fn set_device(dev: u32) {
    DEVICE.with(|d| d.set(Some(dev)));
}

/// Notes that this thread runs a task of queue `queue` now (a thread-local write per task).
pub(crate) fn set_queue(queue: u32) {
    QUEUE.with(|q| q.set(queue));
}

/// The device and queue this thread runs a task of, if it is a scheduler thread.
pub(crate) fn running() -> Option<(u32, u32)> {
    DEVICE.with(Cell::get).map(|d| (d, QUEUE.with(Cell::get)))
}

fn table() -> MutexGuard<'static, BTreeMap<(u32, u32), KernelFault>> {
    static TABLE: OnceLock<Mutex<BTreeMap<(u32, u32), KernelFault>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(BTreeMap::new())).lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps `fault` for queue `queue` of device `dev`; the first fault since the last
/// [`take_kernel_fault`] counts, as the first failure of a queue does.
pub(crate) fn record(dev: u32, queue: u32, fault: KernelFault) {
    table().entry((dev, queue)).or_insert(fault);
}

/// Takes the fault kept for queue `queue` of device `dev` (the runtime calls it when the
/// queue's failure is `ACL_ERROR_RT_AICORE_EXCEPTION`). A cold path: one process-wide lock.
pub fn take_kernel_fault(dev: u32, queue: u32) -> Option<KernelFault> {
    table().remove(&(dev, queue))
}

/// Takes the fault kept for any queue of device `dev` (the first by queue), for a device-wide
/// synchronisation that does not say which queue failed.
pub fn take_any_kernel_fault(dev: u32) -> Option<KernelFault> {
    let mut t = table();
    let key = t.range((dev, 0)..=(dev, u32::MAX)).next().map(|(k, _)| *k)?;
    t.remove(&key)
}

/// Forgets every fault kept for device `dev` (its reset).
pub fn forget_device_faults(dev: u32) {
    table().retain(|&(d, _), _| d != dev);
}

/// The access kind of a raw fault's signal and `si_code`.
pub(crate) fn access_kind(signal: i32, _code: i32) -> AccessKind {
    if signal == libc::SIGBUS {
        AccessKind::Bus
    } else {
        AccessKind::Unmapped
    }
}

impl Sim {
    /// Makes the backed device memory `[addr, addr + len_bytes)` (whole 4 KiB pages of device
    /// `dev`'s window) inaccessible, or accessible again, keeping its contents: the sanitizer's
    /// guard pages and quarantine. Copies and sets treat hidden bytes as unmapped (they fail);
    /// a kernel touching them faults, contained like any kernel fault.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] for a range that is not whole pages of backed memory of
    /// the device's window; [`ErrorKind::NoDevice`] for a device not open.
    pub fn set_hidden(&self, dev: DeviceId, addr: u64, len_bytes: u64, hidden: bool) -> Result<()> {
        let device = self.fabric.device(dev.0).ok_or(Error::new(ErrorKind::NoDevice, "device not open"))?;
        let w = device.window_at(addr);
        if !w.contains(addr) {
            return Err(Error::new(ErrorKind::InvalidArgument, "address outside the device window"));
        }
        w.set_hidden(addr - w.base(), len_bytes, hidden)
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "not whole pages of backed device memory"))
    }
}
