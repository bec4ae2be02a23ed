//! The SQE and CQE images of the kernel-send mode, as this crate defines them.
//!
//! The real STARS SQE bodies and the firmware's CQE semantics are not public, so these images
//! are aclrs's own ("aclrs SQE v0"): 64-byte SQEs, 16-byte CQEs (the 910B virtual CQE size).
//! Only the fake kernel understands them; a real device would not.
//!
//! SQE: byte 0 the kind, byte 1 the comparison of a value wait, then seven native-endian `u64`
//! words from byte 8. Besides the `hal` tasks there are event SQEs (record, wait, reset of an
//! event id from `TRS_RES_ID_ALLOC`), as on the real STARS queues. Kernel, host-call and
//! batch-copy SQEs carry tickets the device's loader handed out (on the fake kernel: the
//! software NPU's staged tickets). CQE: the sequence number (`u64`), a status kind (`u32`: 0 ok, 1 failed
//! with a `hal` error kind, 2 device fault) and a code (`i32`).

/// The mapped-ring mode's memory layout beyond what the driver ABI fixes.
///
/// The driver fixes the pages (`trs_uio_info`: the SQ ring, then the `SHR_INFO`, `HEAD`, `TAIL`
/// pages read-write, and the `DB`, `HEAD_REG`, `TAIL_REG` pages in a second mapping) but not
/// what the shared-info page holds, and it completes even mapped queues through
/// `TRS_SQCQ_RECV`. The CQ ring below, inside the shared-info page, is aclrs's own, like the
/// SQE images: only the fake kernel serves it.
///
/// Counters are free-running `u32`s (an entry's slot is the counter modulo the depth): the
/// doorbell, `TAIL` and `TAIL_REG` take the SQ tail after the user wrote the SQE; `HEAD` and
/// `HEAD_REG` the SQ head after the device took the SQE.
pub mod uio {
    /// Offset in the shared-info page of the CQ tail (written by the device).
    pub const CQ_TAIL: usize = 0;
    /// Offset in the shared-info page of the CQ head (written by the user).
    pub const CQ_HEAD: usize = 64;
    /// Offset in the shared-info page of the CQ ring.
    pub const CQ_RING: usize = 128;
    /// CQEs in the CQ ring. Each CQE reports the newest completion, so the device coalesces
    /// reports while the ring is full and nothing is lost.
    pub const CQ_ENTRIES: u32 = 64;
    /// Bytes of the shared-info page used.
    // CAST: a small constant.
    pub const SHR_INFO_BYTES: usize = CQ_RING + CQ_ENTRIES as usize * super::CQE_BYTES;
}

use hal::{DeviceAddr, ErrorKind, EventId, HostCall, TaskDesc, TaskStatus, WaitCompare};

/// Bytes of an SQE.
pub const SQE_BYTES: usize = 64;
/// Bytes of a CQE.
pub const CQE_BYTES: usize = 16;

const COPY: u8 = 1;
const COPY_2D: u8 = 2;
const MEMSET: u8 = 3;
const MEMSET32: u8 = 4;
const VALUE_WRITE: u8 = 5;
const VALUE_WAIT: u8 = 6;
const MARKER: u8 = 7;
const EVENT_RECORD: u8 = 8;
const EVENT_WAIT: u8 = 9;
const EVENT_RESET: u8 = 10;
const TIMESTAMP: u8 = 11;
const KERNEL: u8 = 12;
const HOST_FUNC: u8 = 13;
const COPY_BATCH: u8 = 14;
const FAILURE_MODE: u8 = 15;

/// What an SQE asks the device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A `hal` task.
    Task(TaskDesc),
    /// Record the event: it stands for this point of the queue.
    EventRecord(EventId),
    /// Hold the queue until the event's record has completed: the record the host saw when it
    /// queued the wait, named by its queue and sequence (`None`: never recorded, nothing to
    /// wait for). Naming the record keeps the wait exact when the device takes the record's
    /// SQE after this one (several mapped rings) or the event is recorded again meanwhile.
    EventWait {
        /// The event.
        event: EventId,
        /// The record's queue and sequence.
        record: Option<(u32, u64)>,
    },
    /// Forget the event's point, in queue order.
    EventReset(EventId),
    /// From here on, stop the queue at its first failure (`true`) or run on (`false`).
    StopOnFailure(bool),
}

/// The SQE of an event operation or a failure-mode change.
pub fn encode_event(entry: Entry) -> Option<[u8; SQE_BYTES]> {
    let mut s = [0u8; SQE_BYTES];
    let (kind, ev) = match entry {
        Entry::EventRecord(e) => (EVENT_RECORD, e),
        Entry::EventWait { event, record } => {
            s[0] = EVENT_WAIT;
            put(&mut s, 0, u64::from(event.0));
            if let Some((queue, seq)) = record {
                put(&mut s, 1, 1);
                put(&mut s, 2, u64::from(queue));
                put(&mut s, 3, seq);
            }
            return Some(s);
        }
        Entry::EventReset(e) => (EVENT_RESET, e),
        Entry::StopOnFailure(stop) => (FAILURE_MODE, EventId(u32::from(stop))),
        Entry::Task(t) => return encode(&t),
    };
    s[0] = kind;
    put(&mut s, 0, u64::from(ev.0));
    Some(s)
}

fn put(out: &mut [u8; SQE_BYTES], word: usize, v: u64) {
    out[8 + word * 8..16 + word * 8].copy_from_slice(&v.to_ne_bytes());
}

fn get(b: &[u8; SQE_BYTES], word: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[8 + word * 8..16 + word * 8]);
    u64::from_ne_bytes(w)
}

/// The SQE of `task`.
pub fn encode(task: &TaskDesc) -> Option<[u8; SQE_BYTES]> {
    let mut s = [0u8; SQE_BYTES];
    match *task {
        TaskDesc::Copy { dst, src, len_bytes } => {
            s[0] = COPY;
            put(&mut s, 0, dst.0);
            put(&mut s, 1, src.0);
            put(&mut s, 2, len_bytes);
        }
        TaskDesc::Copy2d { dst, dst_pitch, src, src_pitch, width, height } => {
            s[0] = COPY_2D;
            for (i, v) in [dst.0, dst_pitch, src.0, src_pitch, width, height].into_iter().enumerate() {
                put(&mut s, i, v);
            }
        }
        TaskDesc::Memset { dst, value, len_bytes } => {
            s[0] = MEMSET;
            put(&mut s, 0, dst.0);
            put(&mut s, 1, u64::from(value));
            put(&mut s, 2, len_bytes);
        }
        TaskDesc::Memset32 { dst, value, count } => {
            s[0] = MEMSET32;
            put(&mut s, 0, dst.0);
            put(&mut s, 1, u64::from(value));
            put(&mut s, 2, count);
        }
        TaskDesc::ValueWrite { dst, value } => {
            s[0] = VALUE_WRITE;
            put(&mut s, 0, dst.0);
            put(&mut s, 1, value);
        }
        TaskDesc::ValueWait { addr, value, compare } => {
            s[0] = VALUE_WAIT;
            s[1] = match compare {
                WaitCompare::GreaterOrEqual => 0,
                WaitCompare::Equal => 1,
                WaitCompare::And => 2,
                WaitCompare::Nor => 3,
            };
            put(&mut s, 0, addr.0);
            put(&mut s, 1, value);
        }
        TaskDesc::Marker => s[0] = MARKER,
        TaskDesc::Timestamp { dst } => {
            s[0] = TIMESTAMP;
            put(&mut s, 0, dst.0);
        }
        TaskDesc::Kernel { func, blocks, args, timeout_us } => {
            s[0] = KERNEL;
            for (i, v) in [func, u64::from(blocks), args, timeout_us].into_iter().enumerate() {
                put(&mut s, i, v);
            }
        }
        TaskDesc::HostFunc { call } => {
            s[0] = HOST_FUNC;
            // The report word: 0 none, 1 a callback to a thread, 2 one the stream waits for.
            let (report, thread) = match call.report {
                None => (0, 0),
                Some((thread, block)) => (1 + u64::from(block), thread),
            };
            for (i, v) in [call.func, call.data, report, thread].into_iter().enumerate() {
                put(&mut s, i, v);
            }
        }
        TaskDesc::CopyBatch { batch } => {
            s[0] = COPY_BATCH;
            put(&mut s, 0, batch);
        }
    }
    Some(s)
}

/// What an SQE stands for; `None` for an unknown image.
pub fn decode(s: &[u8; SQE_BYTES]) -> Option<Entry> {
    let event = || u32::try_from(get(s, 0)).ok().map(EventId);
    Some(match s[0] {
        EVENT_RECORD => Entry::EventRecord(event()?),
        EVENT_WAIT => Entry::EventWait {
            event: event()?,
            record: match get(s, 1) {
                0 => None,
                1 => Some((u32::try_from(get(s, 2)).ok()?, get(s, 3))),
                _ => return None,
            },
        },
        EVENT_RESET => Entry::EventReset(event()?),
        FAILURE_MODE => Entry::StopOnFailure(get(s, 0) != 0),
        _ => Entry::Task(decode_task(s)?),
    })
}

fn decode_task(s: &[u8; SQE_BYTES]) -> Option<TaskDesc> {
    Some(match s[0] {
        COPY => {
            TaskDesc::Copy { dst: DeviceAddr(get(s, 0)), src: DeviceAddr(get(s, 1)), len_bytes: get(s, 2) }
        }
        COPY_2D => TaskDesc::Copy2d {
            dst: DeviceAddr(get(s, 0)),
            dst_pitch: get(s, 1),
            src: DeviceAddr(get(s, 2)),
            src_pitch: get(s, 3),
            width: get(s, 4),
            height: get(s, 5),
        },
        // CAST: encoded from a u8.
        MEMSET => {
            TaskDesc::Memset { dst: DeviceAddr(get(s, 0)), value: get(s, 1) as u8, len_bytes: get(s, 2) }
        }
        // CAST: encoded from a u32.
        MEMSET32 => {
            TaskDesc::Memset32 { dst: DeviceAddr(get(s, 0)), value: get(s, 1) as u32, count: get(s, 2) }
        }
        VALUE_WRITE => TaskDesc::ValueWrite { dst: DeviceAddr(get(s, 0)), value: get(s, 1) },
        VALUE_WAIT => TaskDesc::ValueWait {
            addr: DeviceAddr(get(s, 0)),
            value: get(s, 1),
            compare: match s[1] {
                0 => WaitCompare::GreaterOrEqual,
                1 => WaitCompare::Equal,
                2 => WaitCompare::And,
                3 => WaitCompare::Nor,
                _ => return None,
            },
        },
        MARKER => TaskDesc::Marker,
        TIMESTAMP => TaskDesc::Timestamp { dst: DeviceAddr(get(s, 0)) },
        KERNEL => TaskDesc::Kernel {
            func: get(s, 0),
            blocks: u32::try_from(get(s, 1)).ok()?,
            args: get(s, 2),
            timeout_us: get(s, 3),
        },
        HOST_FUNC => TaskDesc::HostFunc {
            call: HostCall {
                func: get(s, 0),
                data: get(s, 1),
                report: match get(s, 2) {
                    0 => None,
                    r @ (1 | 2) => Some((get(s, 3), r == 2)),
                    _ => return None,
                },
            },
        },
        COPY_BATCH => TaskDesc::CopyBatch { batch: get(s, 0) },
        _ => return None,
    })
}

/// A completion report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    /// The highest completed sequence number of the queue.
    pub seq: u64,
    /// The status reported.
    pub status: TaskStatus,
}

fn kind_of(n: u16) -> ErrorKind {
    [
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
    ]
    .into_iter()
    .find(|k| *k as u16 == n)
    .unwrap_or(ErrorKind::Internal)
}

impl Cqe {
    /// The CQE image.
    pub fn encode(&self) -> [u8; CQE_BYTES] {
        let mut b = [0u8; CQE_BYTES];
        b[..8].copy_from_slice(&self.seq.to_ne_bytes());
        let (kind, code): (u32, i32) = match self.status {
            TaskStatus::Ok => (0, 0),
            TaskStatus::Failed(k) => (1, i32::from(k as u16)),
            TaskStatus::Fault(c) => (2, c),
        };
        b[8..12].copy_from_slice(&kind.to_ne_bytes());
        b[12..16].copy_from_slice(&code.to_ne_bytes());
        b
    }

    /// Reads a CQE image.
    pub fn decode(b: &[u8; CQE_BYTES]) -> Self {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[..8]);
        let mut k = [0u8; 4];
        k.copy_from_slice(&b[8..12]);
        let mut c = [0u8; 4];
        c.copy_from_slice(&b[12..16]);
        let code = i32::from_ne_bytes(c);
        let status = match u32::from_ne_bytes(k) {
            0 => TaskStatus::Ok,
            // CAST: kinds are small.
            1 => TaskStatus::Failed(kind_of(code as u16)),
            _ => TaskStatus::Fault(code),
        };
        Self { seq: u64::from_ne_bytes(w), status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_round_trip() {
        let tasks = [
            TaskDesc::Copy { dst: DeviceAddr(1), src: DeviceAddr(2), len_bytes: 3 },
            TaskDesc::Copy2d {
                dst: DeviceAddr(1),
                dst_pitch: 2,
                src: DeviceAddr(3),
                src_pitch: 4,
                width: 5,
                height: 6,
            },
            TaskDesc::Memset { dst: DeviceAddr(9), value: 0xab, len_bytes: 7 },
            TaskDesc::Memset32 { dst: DeviceAddr(8), value: 0xdead_beef, count: 2 },
            TaskDesc::ValueWrite { dst: DeviceAddr(16), value: u64::MAX },
            TaskDesc::ValueWait { addr: DeviceAddr(24), value: 5, compare: WaitCompare::Nor },
            TaskDesc::Marker,
            TaskDesc::Timestamp { dst: DeviceAddr(32) },
            TaskDesc::Kernel { func: 7, blocks: 48, args: 9, timeout_us: 1000 },
            TaskDesc::HostFunc { call: HostCall { func: 11, data: 12, report: None } },
            TaskDesc::HostFunc { call: HostCall { func: 13, data: 0, report: Some((77, true)) } },
            TaskDesc::HostFunc { call: HostCall { func: 14, data: 1, report: Some((78, false)) } },
            TaskDesc::CopyBatch { batch: 12 },
        ];
        for t in tasks {
            assert_eq!(decode(&encode(&t).unwrap()), Some(Entry::Task(t)));
        }
        for e in [
            Entry::EventRecord(EventId(3)),
            Entry::EventWait { event: EventId(4), record: None },
            Entry::EventWait { event: EventId(4), record: Some((7, 1 << 40)) },
            Entry::EventReset(EventId(5)),
            Entry::StopOnFailure(true),
            Entry::StopOnFailure(false),
        ] {
            assert_eq!(decode(&encode_event(e).unwrap()), Some(e));
        }
        assert_eq!(decode(&[0xee; SQE_BYTES]), None);
    }

    #[test]
    fn cqes_round_trip() {
        for status in [TaskStatus::Ok, TaskStatus::Failed(ErrorKind::Timeout), TaskStatus::Fault(507_015)] {
            let c = Cqe { seq: 42, status };
            assert_eq!(Cqe::decode(&c.encode()), c);
        }
    }
}
