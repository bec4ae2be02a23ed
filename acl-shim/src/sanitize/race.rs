//! `ACLRS_SANITIZE=race`: a copy, memset, value write or kernel that uses a stream-ordered pool
//! block on a stream not ordered after the block's `aclrtMemPoolMallocAsync`, or after its
//! `aclrtMemPoolFreeAsync`, is reported as an `unordered-use`.
//!
//! Ordering is `sched`'s dependency graph (the oracle the pools use). A kernel's use is found
//! by scanning its argument bytes for 8-byte words that point into a live or freed block: a
//! heuristic (a pointer stored elsewhere, say in device memory, is not seen; a number that
//! happens to look like one is). Each block is reported once.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use hal::TaskDesc;
use mm::order::{StreamOrder, StreamPoint};

use super::report::{emit, Finding};
use super::settings;
use crate::runtime::Runtime;
use crate::state::stream::{LazyGraphOrder, StreamObj};

#[derive(Clone, Copy, Debug)]
struct Block {
    device: u32,
    size: u64,
    /// The allocating stream's queue and its next task then.
    alloc: (u32, u64),
    /// The freeing stream's queue and its newest task then, once freed.
    freed: Option<(u32, u64)>,
    reported: bool,
}

fn table() -> MutexGuard<'static, BTreeMap<u64, Block>> {
    static T: Mutex<BTreeMap<u64, Block>> = Mutex::new(BTreeMap::new());
    T.lock().unwrap_or_else(|p| p.into_inner())
}

/// The block holding `addr`, if one does.
fn block_at(t: &BTreeMap<u64, Block>, addr: u64) -> Option<(u64, Block)> {
    t.range(..=addr).next_back().filter(|(&b, blk)| addr < b + blk.size).map(|(&b, blk)| (b, *blk))
}

impl Runtime {
    /// Notes a pool block handed out on queue `queue` of device `d`; `seq` is the stream's
    /// next task then: another stream is ordered after the allocation once it waits on an
    /// event recorded there or later.
    pub(crate) fn race_note_alloc(&self, d: u32, addr: u64, size: u64, queue: u32, seq: u64) {
        if !settings().race {
            return;
        }
        let mut t = table();
        let stale: Vec<u64> = t
            .range(..addr + size)
            .rev()
            .take_while(|(&b, blk)| b + blk.size > addr)
            .map(|(&b, _)| b)
            .collect();
        for b in stale {
            t.remove(&b);
        }
        t.insert(addr, Block { device: d, size, alloc: (queue, seq), freed: None, reported: false });
    }

    /// Notes the stream-ordered free of the pool block at `addr` on queue `queue`.
    pub(crate) fn race_note_free(&self, addr: u64, queue: u32, seq: u64) {
        if !settings().race {
            return;
        }
        if let Some(b) = table().get_mut(&addr) {
            b.freed = Some((queue, seq));
        }
    }

    /// Checks one use of `addr` by a `task` on stream `s`.
    fn race_check(&self, s: &StreamObj, addr: u64, task: &'static str) {
        let Some((base, b)) = block_at(&table(), addr) else { return };
        if b.reported || b.device != s.device {
            return;
        }
        let q = s.queue.0;
        let why = match b.freed {
            Some((fq, _)) => {
                Some(format!("used after its aclrtMemPoolFreeAsync (on queue {fq}), on queue {q}"))
            }
            None if b.alloc.0 != q => {
                let order = LazyGraphOrder::new(self.streams_of(s.device).graph_mutex());
                let point = StreamPoint { stream: b.alloc.0, seq: b.alloc.1 };
                (!order.is_ordered_before(point, q)).then(|| {
                    format!(
                        "used on queue {q}, which is not ordered after its aclrtMemPoolMallocAsync on queue {} (record an event after the allocation and wait on it)",
                        b.alloc.0
                    )
                })
            }
            None => None,
        };
        let Some(detail) = why else { return };
        if let Some(e) = table().get_mut(&base) {
            e.reported = true;
        }
        emit(&Finding {
            kind: "unordered-use",
            device: b.device,
            address: addr,
            allocation: Some((base, b.size)),
            stream: Some(u64::from(q)),
            task: Some(task),
            detail: format!("a pool block {detail}"),
            ..Finding::default()
        });
    }

    /// `ACLRS_SANITIZE=race` for a task about to be submitted to `s`.
    pub(crate) fn race_check_task(&self, s: &StreamObj, task: &TaskDesc) {
        if !settings().race {
            return;
        }
        match *task {
            TaskDesc::Copy { dst, src, .. } | TaskDesc::Copy2d { dst, src, .. } => {
                self.race_check(s, dst.as_u64(), "copy");
                self.race_check(s, src.as_u64(), "copy");
            }
            TaskDesc::Memset { dst, .. } | TaskDesc::Memset32 { dst, .. } => {
                self.race_check(s, dst.as_u64(), "memset")
            }
            TaskDesc::ValueWrite { dst, .. } => self.race_check(s, dst.as_u64(), "value write"),
            _ => {}
        }
    }

    /// `ACLRS_SANITIZE=race` for a kernel launch on `s`: every 8-byte word of its arguments
    /// that points into a pool block counts as a use (a heuristic).
    pub(crate) fn race_check_args(&self, s: &StreamObj, args: &[u8]) {
        if !settings().race {
            return;
        }
        for w in args.chunks_exact(8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            let v = u64::from_le_bytes(a);
            // Pool blocks live in the pool window.
            if hal::layout::window_of(v) == hal::layout::Window::Pool {
                self.race_check(s, v, "kernel");
            }
        }
    }
}
