//! The runtime's memory walks (`impl Runtime`): summary and snapshot, and the hooks that write
//! `ACLRS_MEM_SNAPSHOT`; over the history of [`crate::state::obs`].

use std::fmt::Write as _;

use hal::DeviceId;
use mm::pool::ExtentState;
use serde::Serialize;

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::obs::*;

/// Called after an out-of-memory failure on logical device `d` (no runtime lock held): records
/// an `oom` event and writes `ACLRS_MEM_SNAPSHOT` when it is set.
pub fn after_oom(rt: &Runtime, d: u32, size: u64) {
    if recording() {
        let free = rt.backend().driver().memory_info(DeviceId(d)).map_or(0, |i| i.free_bytes);
        record(d, "oom", 0, size, 0, free);
    }
    write_env_snapshot(rt);
}

/// Writes the snapshot named by `ACLRS_MEM_SNAPSHOT`, if set (a failure is reported on stderr:
/// there is no caller to return it to).
pub fn write_env_snapshot(rt: &Runtime) {
    let Some(path) = std::env::var_os("ACLRS_MEM_SNAPSHOT").filter(|p| !p.is_empty()) else { return };
    if let Err(e) = rt.write_snapshot("ACLRS_MEM_SNAPSHOT", std::path::Path::new(&path)) {
        eprintln!("aclrs: {}", e.message());
    }
}

/// One block of a segment (`segments[i].blocks[j]`).
#[derive(Clone, Debug, Serialize)]
struct Block {
    address: u64,
    size: u64,
    requested_size: u64,
    state: &'static str,
    frames: Vec<Frame>,
}

/// One segment (`segments[i]`): a direct block, a slab chunk or a pool region.
#[derive(Clone, Debug, Serialize)]
struct Segment {
    device: u32,
    address: u64,
    total_size: u64,
    allocated_size: u64,
    active_size: u64,
    requested_size: u64,
    stream: u64,
    segment_type: &'static str,
    segment_pool_id: (u64, u64),
    is_expandable: bool,
    /// Not in PyTorch's format (readers ignore it): the physical bytes backing the segment.
    backed_size: u64,
    frames: Vec<Frame>,
    blocks: Vec<Block>,
}

#[derive(Debug, Serialize)]
struct Snapshot {
    segments: Vec<Segment>,
    device_traces: Vec<Vec<TraceEvent>>,
}

fn block(address: u64, size: u64, requested: u64, state: &'static str) -> Block {
    Block { address, size, requested_size: requested, state, frames: Vec::new() }
}

/// Blocks tiling `[base, base + len)`: `live` (sorted (address, size)) as active, the gaps as
/// inactive.
fn tile(base: u64, len: u64, live: &[(u64, u64)]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut at = base;
    for &(a, s) in live {
        if a > at {
            out.push(block(at, a - at, 0, "inactive"));
        }
        out.push(block(a, s, s, "active_allocated"));
        at = a + s;
    }
    if base + len > at {
        out.push(block(at, base + len - at, 0, "inactive"));
    }
    out
}

fn totals(mut s: Segment) -> Segment {
    let alloc: u64 = s.blocks.iter().filter(|b| b.state == "active_allocated").map(|b| b.size).sum();
    let pending: u64 = s.blocks.iter().filter(|b| b.state == "active_pending_free").map(|b| b.size).sum();
    s.allocated_size = alloc;
    s.active_size = alloc + pending;
    s.requested_size = s.blocks.iter().map(|b| b.requested_size).sum();
    s
}

impl Runtime {
    fn segments(&self) -> Vec<Segment> {
        let mut out = Vec::new();
        for (handle, device, _, regions) in self.pool_walk() {
            for r in regions {
                let blocks = r
                    .extents
                    .iter()
                    .map(|&(a, l, st)| match st {
                        ExtentState::Busy => block(a, l, l, "active_allocated"),
                        ExtentState::Cached => block(a, l, 0, "active_pending_free"),
                        ExtentState::Free => block(a, l, 0, "inactive"),
                    })
                    .collect();
                out.push(totals(Segment {
                    device,
                    address: r.base.as_u64(),
                    total_size: r.len_bytes,
                    allocated_size: 0,
                    active_size: 0,
                    requested_size: 0,
                    stream: 0,
                    segment_type: "large",
                    segment_pool_id: (0, crate::state::pool::pool_number(handle)),
                    is_expandable: true,
                    backed_size: r.backed_bytes,
                    frames: Vec::new(),
                    blocks,
                }));
            }
        }
        for d in 0..self.device_count() {
            // Lock order: `mem` alone; a failed device is left out of the snapshot.
            let Ok(st) = self.device(d).mem("aclrsMemSnapshot") else { continue };
            let Some(alloc) = st.alloc.as_ref() else { continue };
            for s in alloc.segments() {
                let total = if s.is_slab { s.len_bytes } else { s.backed_bytes };
                out.push(totals(Segment {
                    device: d,
                    address: s.base.as_u64(),
                    total_size: total,
                    allocated_size: 0,
                    active_size: 0,
                    requested_size: 0,
                    stream: 0,
                    segment_type: if s.is_slab { "small" } else { "large" },
                    segment_pool_id: (0, 0),
                    is_expandable: false,
                    backed_size: s.backed_bytes,
                    frames: Vec::new(),
                    blocks: tile(s.base.as_u64(), total, &s.blocks),
                }));
            }
        }
        out.sort_by_key(|s| (s.device, s.address));
        out
    }

    /// The snapshot as pickle bytes.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INTERNAL_ERROR` if serialisation fails.
    pub fn snapshot_bytes(&self, api: &str) -> Result<Vec<u8>> {
        let mut traces: Vec<Vec<TraceEvent>> = vec![Vec::new(); self.device_count() as usize];
        // Copied out first: recording threads wait only for the copy, not for the symbols.
        let recorded: Vec<_> = history().events.iter().cloned().collect();
        for (d, ev) in resolve_all(recorded) {
            if let Some(t) = traces.get_mut(d as usize) {
                t.push(ev);
            }
        }
        let snap = Snapshot { segments: self.segments(), device_traces: traces };
        serde_pickle::to_vec(&snap, serde_pickle::SerOptions::new()).map_err(|e| {
            AclError::new(ACL_ERROR_INTERNAL_ERROR, format!("{api}: cannot encode the snapshot: {e}"))
        })
    }

    /// `aclrsMemSnapshot`: writes the snapshot to `path` (replacing the file).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` (naming the path and the reason) when the file cannot be
    /// written.
    pub fn write_snapshot(&self, api: &str, path: &std::path::Path) -> Result<()> {
        let bytes = self.snapshot_bytes(api)?;
        std::fs::write(path, bytes)
            .map_err(|e| AclError::invalid(format!("{api}: cannot write {}: {e}", path.display())))
    }

    /// `aclrsMemSummary`: a readable summary of this process's device memory, like
    /// `torch.cuda.memory_summary()`.
    pub fn memory_summary(&self) -> String {
        let pools = self.pool_walk();
        let mut s = String::new();
        let line = "|".to_owned() + &"=".repeat(75) + "|\n";
        let thin = "|".to_owned() + &"-".repeat(75) + "|\n";
        for d in 0..self.device_count() {
            // Lock order: `mem` alone; a failed device is left out of the summary.
            let Ok(st) = self.device(d).mem("aclrsMemSummary") else { continue };
            let Some(alloc) = st.alloc.as_ref() else { continue };
            let acct = alloc.accounting().clone();
            let segments = alloc.segments();
            drop(st);
            let mine: Vec<_> = pools.iter().filter(|p| p.1 == d).collect();
            let pool_u = acct
                .components
                .iter()
                .find(|(c, _)| *c == crate::state::memory::POOL_COMPONENT)
                .map(|(_, u)| *u);
            let pool_reserved = pool_u.unwrap_or_default();
            let plain = acct.live.current - pool_reserved.current;
            let pool_used: u64 = mine.iter().map(|p| p.2.used.current).sum();
            let pending: u64 = mine
                .iter()
                .flat_map(|p| p.3.iter().flat_map(|r| r.extents.iter()))
                .filter(|e| e.2 == ExtentState::Cached)
                .map(|e| e.1)
                .sum();
            let _ = write!(s, "{line}");
            let title = format!("aclrs memory summary, device {d} ({})", self.soc().soc_name());
            let _ = writeln!(s, "| {title:<73} |");
            let _ = write!(s, "{thin}");
            let _ = writeln!(s, "| {:<33} | {:>18} | {:>18} |", "Metric", "Cur Usage", "Peak Usage");
            let _ = write!(s, "{thin}");
            row(&mut s, "Allocated memory", plain + pool_used, None);
            row(&mut s, "  by aclrtMalloc", plain, None);
            row(&mut s, "  from pools", pool_used, None);
            row(&mut s, "Active memory", plain + pool_used + pending, None);
            row(&mut s, "Reserved memory (backed)", acct.backed.current, Some(acct.backed.peak));
            row(&mut s, "  by pools", pool_reserved.current, Some(pool_reserved.peak));
            row(&mut s, "Overhead (rounding, slab slack)", acct.overhead(), None);
            let _ = write!(s, "{thin}");
            let _ = writeln!(s, "| {:<73} |", "Allocated by component (aclrtMallocWithCfg module id)");
            let mut comps = acct.components.clone();
            comps.sort_by_key(|c| c.0);
            for (c, u) in
                comps.iter().filter(|(c, u)| *c != crate::state::memory::POOL_COMPONENT && u.peak > 0)
            {
                let name = if *c == mm::device::APP {
                    format!("  module {c} (application)")
                } else {
                    format!("  module {c}")
                };
                row(&mut s, &name, u.current, Some(u.peak));
            }
            if !mine.is_empty() {
                let _ = write!(s, "{thin}");
                let _ = writeln!(
                    s,
                    "| {:<73} |",
                    "Stream-ordered pools (the number is segment_pool_id[1] in snapshots)"
                );
                for (h, _, st, _) in &mine {
                    let n = crate::state::pool::pool_number(*h);
                    row(&mut s, &format!("  pool {n} reserved"), st.reserved.current, Some(st.reserved.peak));
                    row(&mut s, &format!("  pool {n} used"), st.used.current, Some(st.used.peak));
                }
            }
            let _ = write!(s, "{thin}");
            let (large, small) =
                segments.iter().fold((0, 0), |(l, m), g| if g.is_slab { (l, m + 1) } else { (l + 1, m) });
            let live: usize = segments.iter().map(|g| g.blocks.len()).sum();
            let text =
                format!("Allocations: {live} live; segments: {large} large, {small} small (slab chunks)");
            let _ = writeln!(s, "| {text:<73} |");
            if let Ok(i) = self.backend().driver().memory_info(DeviceId(d)) {
                let text =
                    format!("Device, all processes: {} free of {}", mib(i.free_bytes), mib(i.total_bytes));
                let _ = writeln!(s, "| {text:<73} |");
            }
        }
        if s.is_empty() {
            s = "aclrs memory summary: no device is open in this process\n".to_owned();
        } else {
            s += &line;
        }
        s
    }
}
