//! Staging buffers of `ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE`: runtime-owned pinned memory the
//! source is copied into at the call, so that the caller may reuse or free its buffer as soon
//! as the call returns (D-25-02). A buffer goes back to the set when the copy is queued and is
//! handed out again once its stream has run past that copy, so a steady flow of staged copies
//! allocates nothing.
//!
//! Safe Rust over the runtime's pinned allocator. It owns only the set of staging buffers of
//! the current `aclInit` generation; it never touches the bytes (the caller copies).

use std::sync::{Mutex, MutexGuard, OnceLock};

use hal::{DeviceId, ErrorKind, QueueId};

use crate::error::{AclError, Result};
use crate::runtime::{round_up, Runtime};

/// Staging buffers are whole multiples of this, so that nearby sizes share buffers.
const GRAIN: u64 = 64 << 10;
/// Idle staging memory kept for reuse beyond this goes back to the pinned allocator.
const KEEP_IDLE_BYTES: u64 = 256 << 20;

/// A staging buffer taken for one copy; give it back with [`Runtime::staging_put`].
#[derive(Debug)]
pub(crate) struct Staging {
    addr: u64,
    len: u64,
}

impl Staging {
    /// Its pinned address (a DMA end).
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }
}

/// Where a buffer's last reader is: `(device, queue, sequence)` of the copy task.
type Reader = (u32, QueueId, u64);

#[derive(Debug, Clone, Copy)]
struct Buf {
    addr: u64,
    len: u64,
    busy: Option<Reader>,
}

#[derive(Debug, Default)]
struct Tables {
    generation: u64,
    bufs: Vec<Buf>,
}

fn tables(rt: &Runtime) -> MutexGuard<'static, Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    // `relock`: each buffer is one plain record, pushed, removed or marked idle in one step; a
    // panic between steps can at worst leave an idle buffer unused, never a record half-written.
    let mut t = crate::sync::relock(T.get_or_init(|| Mutex::new(Tables::default())));
    if t.generation != rt.generation {
        // The buffers of an earlier aclInit went with its pinned memory.
        *t = Tables { generation: rt.generation, ..Tables::default() };
    }
    t
}

impl Runtime {
    /// Whether the copy that last read a buffer has run (or can no longer run: its queue or
    /// device is gone).
    fn staging_done(&self, reader: Reader) -> bool {
        let (d, q, seq) = reader;
        match self.backend().driver().wait(DeviceId(d), q, seq, Some(0)) {
            Ok(()) => true,
            Err(e) => e.kind() != ErrorKind::Timeout,
        }
    }

    /// Takes a staging buffer of at least `len` bytes: the smallest idle one that fits, or a
    /// new pinned allocation.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_MEMORY_ALLOCATION` when no pinned memory is left for a new buffer.
    pub(crate) fn staging_take(&self, api: &str, len: u64) -> Result<Staging> {
        // Lock order: the staging table is a leaf lock; the backend is never called while it
        // is held. Collect the busy buffers' readers, ask the backend without the lock, then
        // mark the finished ones idle (a reader names one task, so matching by it is exact).
        let readers: Vec<Reader> = tables(self).bufs.iter().filter_map(|b| b.busy).collect();
        let finished: Vec<Reader> = readers.into_iter().filter(|&r| self.staging_done(r)).collect();
        let (taken, spare) = {
            let mut t = tables(self);
            for b in t.bufs.iter_mut() {
                if b.busy.is_some_and(|r| finished.contains(&r)) {
                    b.busy = None;
                }
            }
            let pick = (0..t.bufs.len())
                .filter(|&i| t.bufs[i].busy.is_none() && t.bufs[i].len >= len)
                .min_by_key(|&i| t.bufs[i].len);
            let taken = pick.map(|i| t.bufs.swap_remove(i));
            // Keep at most KEEP_IDLE_BYTES idle; when nothing fits, the idle buffers that are
            // too small go too (a larger one replaces them).
            let mut idle = 0u64;
            let mut spare = Vec::new();
            t.bufs.retain(|b| {
                if b.busy.is_some() {
                    return true;
                }
                idle += b.len;
                let keep = taken.is_some() && idle <= KEEP_IDLE_BYTES;
                if !keep {
                    spare.push(b.addr);
                }
                keep
            });
            (taken, spare)
        };
        for addr in spare {
            let _ = self.free_host(api, addr);
        }
        if let Some(b) = taken {
            return Ok(Staging { addr: b.addr, len: b.len });
        }
        let len = round_up(len, GRAIN)
            .ok_or_else(|| AclError::invalid(format!("{api}: count {len} overflows when rounded")))?;
        let addr = self.malloc_host(api, len)?;
        Ok(Staging { addr, len })
    }

    /// The newest staged copy queued on `queue` of device `dev` whose buffer is still marked
    /// busy (it may not have run yet): what a forced destroy of its stream waits for.
    pub(crate) fn staging_pending_on(&self, dev: u32, queue: QueueId) -> Option<u64> {
        tables(self)
            .bufs
            .iter()
            .filter_map(|b| b.busy)
            .filter(|&(d, q, _)| d == dev && q == queue)
            .map(|(_, _, seq)| seq)
            .max()
    }

    /// Gives a staging buffer back; `reader` is the copy task that still reads it (`None`: it
    /// is idle now).
    pub(crate) fn staging_put(&self, buf: Staging, reader: Option<Reader>) {
        tables(self).bufs.push(Buf { addr: buf.addr, len: buf.len, busy: reader });
    }
}
