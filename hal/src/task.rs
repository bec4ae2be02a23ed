//! Task descriptors: the fixed-size work items a backend's queues carry.
//!
//! A descriptor is plain data (`Copy`), so it fits in a bounded ring and can be handed to device
//! firmware. Addresses are device VAs or pinned-host VAs that the runtime has already checked.

use crate::addr::DeviceAddr;

/// Identifies one task queue (a stream's hardware queue) on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId(pub u32);

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
    /// Fill `len_bytes` at `dst` with the byte `value`.
    Memset {
        /// Destination address (device or pinned host).
        dst: DeviceAddr,
        /// Fill byte.
        value: u8,
        /// Bytes to fill.
        len_bytes: u64,
    },
    /// Does nothing; completes in order. Used to mark a point in a queue.
    Marker,
}

/// How a completed task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// The task ran to completion.
    Ok,
    /// The task failed with a driver error kind.
    Failed(crate::error::ErrorKind),
}
