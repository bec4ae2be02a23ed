//! The runtime's record of the newest failed task of each device (`aclrtGetErrorVerbose`):
//! the stream's queue, the task's kind, its code and, for a kernel, its name.
//!
//! Two parts. A launch notes the function it queued on a stream in a fixed table of atomics
//! (one store, no lock, no allocation: the launch path stays as it was); the slot of a queue is
//! its number modulo the table size, tagged with the queue, so a collision only loses a name.
//! When a stream's failure is taken (`state::stream`'s synchronisation), the failure and the
//! kernel noted since the last one become the device's record. The record changes only on
//! that error path.
//!
//! This module owns both tables; it knows neither the runtime nor the backend.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use hal::{QueueId, TaskStatus};

/// Devices the tables cover (device ids above have no record).
const DEVICES: usize = 64;
/// Last-kernel slots per device.
const SLOTS: usize = 2048;

/// What kind of task failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskKind {
    /// A kernel launch.
    Kernel,
    /// Another task (a host function or callback, a copy, a memset).
    Other,
}

/// A failed task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskFault {
    /// The failed stream's queue.
    pub(crate) queue: u32,
    /// The task's kind.
    pub(crate) kind: TaskKind,
    /// Its `aclError` code.
    pub(crate) code: i32,
    /// The function handle of the kernel, for a kernel.
    pub(crate) func: Option<u64>,
}

struct Tables {
    last_kernel: Box<[AtomicU64]>,
    faults: Vec<Mutex<Option<TaskFault>>>,
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| Tables {
        last_kernel: (0..DEVICES * SLOTS).map(|_| AtomicU64::new(0)).collect(),
        faults: (0..DEVICES).map(|_| Mutex::new(None)).collect(),
    })
}

fn slot(dev: u32, queue: QueueId) -> Option<&'static AtomicU64> {
    let d = dev as usize;
    (d < DEVICES).then(|| &tables().last_kernel[d * SLOTS + queue.0 as usize % SLOTS])
}

/// Packs a queue and a function handle (its low 32 bits; handles are small counters).
fn pack(queue: QueueId, func: u64) -> u64 {
    u64::from(queue.0) << 32 | (func & 0xffff_ffff) | 1 << 63
}

/// Notes that kernel `func` was queued on `queue` of device `dev` (one atomic store).
pub(crate) fn note_launch(dev: u32, queue: QueueId, func: u64) {
    if let Some(s) = slot(dev, queue) {
        s.store(pack(queue, func), Ordering::Relaxed);
    }
}

/// Takes the kernel noted for `queue` since the last take.
fn take_kernel(dev: u32, queue: QueueId) -> Option<u64> {
    let s = slot(dev, queue)?;
    let v = s.load(Ordering::Relaxed);
    if v == 0 || (v >> 32) & 0x7fff_ffff != u64::from(queue.0) & 0x7fff_ffff {
        return None;
    }
    s.store(0, Ordering::Relaxed);
    Some(v & 0xffff_ffff)
}

/// Records the status taken for `queue` of device `dev` at a synchronisation: a failure
/// becomes the device's record (with the kernel noted since the last one); either way the
/// noted kernel is cleared.
pub(crate) fn note_status(dev: u32, queue: QueueId, status: Option<TaskStatus>) {
    let func = take_kernel(dev, queue);
    let code = match status {
        None | Some(TaskStatus::Ok) => return,
        Some(TaskStatus::Fault(code)) => code,
        Some(TaskStatus::Failed(_)) => crate::codes::ACL_ERROR_RT_AICORE_EXCEPTION,
    };
    let kind = if func.is_some() { TaskKind::Kernel } else { TaskKind::Other };
    if let Some(m) = tables().faults.get(dev as usize) {
        *crate::sync::relock(m) = Some(TaskFault { queue: queue.0, kind, code, func });
    }
}

/// The newest failed task of device `dev`.
pub(crate) fn fault(dev: u32) -> Option<TaskFault> {
    tables().faults.get(dev as usize).and_then(|m| crate::sync::relock(m).clone())
}

/// Clears the record of device `dev` (`aclrtRepairError`, a device reset).
pub(crate) fn clear(dev: u32) {
    if let Some(m) = tables().faults.get(dev as usize) {
        *crate::sync::relock(m) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_after_a_launch_names_the_kernel_and_a_success_clears_the_note() {
        let dev = 63;
        note_launch(dev, QueueId(5), 42);
        note_status(dev, QueueId(5), Some(TaskStatus::Fault(507_015)));
        assert_eq!(
            fault(dev),
            Some(TaskFault { queue: 5, kind: TaskKind::Kernel, code: 507_015, func: Some(42) })
        );
        note_launch(dev, QueueId(5), 43);
        note_status(dev, QueueId(5), Some(TaskStatus::Ok));
        note_status(dev, QueueId(5), Some(TaskStatus::Fault(9)));
        assert_eq!(fault(dev).map(|f| (f.kind, f.func)), Some((TaskKind::Other, None)));
        // A colliding queue does not take another queue's kernel.
        note_launch(dev, QueueId(7), 1);
        assert_eq!(take_kernel(dev, QueueId(7 + SLOTS as u32)), None);
        clear(dev);
        assert_eq!(fault(dev), None);
    }
}
