//! Task descriptors: the fixed-size work items a backend's queues carry.
//!
//! A descriptor is plain data (`Copy`), so it fits in a bounded ring and can be handed to device
//! firmware. Addresses are device VAs or pinned-host VAs that the runtime has already checked.
//! Work that needs more than a few words (a kernel's argument bytes, the entries of a batch
//! copy) is held by the backend and named by a `u64` ticket the backend handed out.

use crate::addr::DeviceAddr;

/// Identifies one task queue (a stream's hardware queue) on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId(pub u32);

/// Identifies one event (a named point in a queue) on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(pub u32);

/// How a value-wait task compares the word in memory (`mem`) with its operand (`value`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitCompare {
    /// `mem >= value` (`ACL_STREAM_WAIT_VALUE_GEQ`).
    GreaterOrEqual,
    /// `mem == value` (`ACL_STREAM_WAIT_VALUE_EQ`).
    Equal,
    /// `mem & value != 0` (`ACL_STREAM_WAIT_VALUE_AND`).
    And,
    /// `!(mem | value) != 0` (`ACL_STREAM_WAIT_VALUE_NOR`).
    Nor,
}

impl WaitCompare {
    /// Whether `mem` satisfies the comparison with `value`.
    pub const fn holds(self, mem: u64, value: u64) -> bool {
        match self {
            Self::GreaterOrEqual => mem >= value,
            Self::Equal => mem == value,
            Self::And => mem & value != 0,
            Self::Nor => !(mem | value) != 0,
        }
    }
}

/// One unit of device work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskDesc {
    /// Copy `len_bytes` from `src` to `dst` on the direct memory access (DMA) engine.
    Copy {
        /// Destination address (device or pinned host).
        dst: DeviceAddr,
        /// Source address (device or pinned host).
        src: DeviceAddr,
        /// Bytes to copy.
        len_bytes: u64,
    },
    /// Copy `height` rows of `width` bytes; rows are `src_pitch` apart in the source and
    /// `dst_pitch` apart in the destination.
    Copy2d {
        /// Destination of the first row.
        dst: DeviceAddr,
        /// Bytes between the starts of destination rows.
        dst_pitch: u64,
        /// Source of the first row.
        src: DeviceAddr,
        /// Bytes between the starts of source rows.
        src_pitch: u64,
        /// Bytes per row.
        width: u64,
        /// Number of rows.
        height: u64,
    },
    /// Copy every (destination, source, length) entry of a batch the backend holds.
    CopyBatch {
        /// The backend's ticket for the batch's entries.
        batch: u64,
    },
    /// Fill `len_bytes` at `dst` with the byte `value`.
    Memset {
        /// Destination address (device or pinned host).
        dst: DeviceAddr,
        /// Fill byte.
        value: u8,
        /// Bytes to fill.
        len_bytes: u64,
    },
    /// Fill `count` 32-bit words at `dst` (4-byte aligned) with `value`.
    Memset32 {
        /// Destination address (device or pinned host).
        dst: DeviceAddr,
        /// Fill word.
        value: u32,
        /// Words to fill.
        count: u64,
    },
    /// Run a kernel once per block on the AI cores.
    Kernel {
        /// The backend's handle of the kernel function.
        func: u64,
        /// Number of blocks (`block_dim`).
        blocks: u32,
        /// The backend's ticket for the launch's argument bytes.
        args: u64,
        /// Longest run time before the launch counts as timed out, in microseconds (0: none).
        timeout_us: u64,
    },
    /// Call a host function (or deliver a callback) in stream order.
    HostFunc {
        /// The function, its data and where it is delivered, handed to the runtime's hook.
        call: HostCall,
    },
    /// Write the 64-bit `value` at `dst` (8-byte aligned).
    ValueWrite {
        /// Destination address.
        dst: DeviceAddr,
        /// Value to write.
        value: u64,
    },
    /// Hold the queue until the 64-bit word at `addr` satisfies `compare` with `value`.
    ValueWait {
        /// Address of the word (8-byte aligned).
        addr: DeviceAddr,
        /// Operand of the comparison.
        value: u64,
        /// The comparison.
        compare: WaitCompare,
    },
    /// Write the device's monotonic clock, in nanoseconds, as a 64-bit word at `dst`
    /// (8-byte aligned).
    Timestamp {
        /// Destination address.
        dst: DeviceAddr,
    },
    /// Does nothing; completes in order. Used to mark a point in a queue.
    Marker,
}

impl TaskDesc {
    /// The staged ticket the task names (a kernel's argument bytes, a batch copy's entries),
    /// if any.
    pub fn ticket(&self) -> Option<u64> {
        match *self {
            Self::Kernel { args, .. } => Some(args),
            Self::CopyBatch { batch } => Some(batch),
            _ => None,
        }
    }
}

/// A host function or callback as its task carries it: everything the runtime's host-call
/// hook needs, so no table sits between the submission and the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCall {
    /// The address of the C function `void (*)(void *)`.
    pub func: u64,
    /// Its argument, as an address.
    pub data: u64,
    /// `Some((thread, block))` for a callback delivered to a subscribed thread (which the
    /// stream waits for when `block`); `None` for a host function the device thread calls.
    pub report: Option<(u64, bool)>,
}

/// Where an event wait went: its sequence number on the waiting queue (`None` when the event
/// was never recorded and nothing was queued) and the point it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventWait {
    /// The wait's sequence number on the waiting queue, if it took one.
    pub seq: Option<u64>,
    /// The queue and sequence waited for (`None`: the event was not recorded).
    pub target: Option<(QueueId, u64)>,
}

/// How a completed task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// The task ran to completion.
    Ok,
    /// The task failed with a driver error kind.
    Failed(crate::error::ErrorKind),
    /// The task failed with a device error code (an `aclError` value, such as the code a
    /// kernel reported).
    Fault(i32),
}

/// What an event stands for, as a backend reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// The queue and sequence the event was last recorded at, if it is recorded.
    pub point: Option<(QueueId, u64)>,
    /// Whether every task up to the recorded point has completed (false when not recorded).
    pub is_complete: bool,
    /// When the record ran, in nanoseconds of the device's monotonic clock.
    pub timestamp_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_wait_comparisons() {
        assert!(WaitCompare::GreaterOrEqual.holds(5, 5) && !WaitCompare::GreaterOrEqual.holds(4, 5));
        assert!(WaitCompare::Equal.holds(7, 7) && !WaitCompare::Equal.holds(7, 8));
        assert!(WaitCompare::And.holds(0b110, 0b010) && !WaitCompare::And.holds(0b100, 0b010));
        assert!(WaitCompare::Nor.holds(0, 0) && !WaitCompare::Nor.holds(u64::MAX, 0));
    }
}
