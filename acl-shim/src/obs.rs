//! Seeing this process's device memory: the figures an out-of-memory message gives, the
//! readable summary of `aclrsMemSummary`, and the memory history and snapshots of
//! `aclrsMemRecordHistory` / `aclrsMemSnapshot` / `ACLRS_MEM_SNAPSHOT`.
//!
//! It owns the history (a bounded ring of allocation events, recorded only while enabled) and
//! the snapshot format: the pickle PyTorch's `torch.cuda.memory._dump_snapshot` writes (a dict
//! with `segments` and `device_traces`), so that pytorch.org/memory_viz opens it unchanged. It
//! reads the device allocators and pools through their walk functions and changes nothing.
//!
//! # Cost
//!
//! While recording is off, a hook is one relaxed atomic load. While it is on, each event walks
//! the host stack (return addresses only) and takes the history's mutex; symbols are looked up
//! when a snapshot is written, once per distinct address. It is a debugging aid, like PyTorch's.
//!
//! # Locking
//!
//! The history mutex is a leaf. Walks take the pool tables, then each pool, then each device
//! state, one at a time, never two at once; callers must hold none of them.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use hal::DeviceId;
use mm::device::DeviceAllocator;
use mm::pool::ExtentState;
use serde::Serialize;

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;

/// Events kept when `aclrsMemRecordHistory` is given 0 entries.
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;
/// Host stack frames kept per event.
const MAX_FRAMES: usize = 48;

static RECORDING: AtomicBool = AtomicBool::new(false);

#[derive(Debug)]
struct History {
    max: usize,
    /// (logical device, event without frames, the raw return addresses of its host stack).
    events: VecDeque<(u32, TraceEvent, Box<[usize]>)>,
}

static HISTORY: Mutex<History> = Mutex::new(History { max: DEFAULT_MAX_ENTRIES, events: VecDeque::new() });

fn history() -> std::sync::MutexGuard<'static, History> {
    // `relock`: every update is one push or pop of a whole event (or a store of `max`); a panic
    // cannot leave an event half-written. Lock order: a leaf.
    crate::sync::relock(&HISTORY)
}

/// One host stack frame, as memory_viz reads it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Frame {
    /// Source file (or the binary when there is no debug information).
    pub filename: String,
    /// Line number (0 when unknown).
    pub line: u32,
    /// Function name.
    pub name: String,
}

/// One event of a device trace (`device_traces[d][i]`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct TraceEvent {
    /// `alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free` or `oom`.
    pub action: &'static str,
    /// Address of the block or segment.
    pub addr: u64,
    /// Its size in bytes (for `oom`, the bytes asked for).
    pub size: u64,
    /// The stream (task queue id; 0 for the default stream and for plain allocations).
    pub stream: u64,
    /// Microseconds since the Unix epoch.
    pub time_us: u64,
    /// Free device bytes at an `oom` event (0 otherwise).
    pub device_free: u64,
    /// The host stack at the event, innermost first.
    pub frames: Vec<Frame>,
}

/// Whether history recording is on (one relaxed load: the whole cost of a hook when it is off).
#[inline]
pub fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// `aclrsMemRecordHistory`: turns recording on (clearing the history, keeping at most
/// `max_entries` newest events, [`DEFAULT_MAX_ENTRIES`] for 0) or off (keeping the history
/// for later snapshots).
pub fn record_history(enable: bool, max_entries: usize) {
    let mut h = history();
    if enable {
        h.max = if max_entries == 0 { DEFAULT_MAX_ENTRIES } else { max_entries };
        h.events.clear();
    }
    RECORDING.store(enable, Ordering::Relaxed);
}

fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The raw return addresses of the calling thread's stack (no symbols: those are looked up
/// once per address when a snapshot is written).
fn capture_ips() -> Box<[usize]> {
    let mut ips = Vec::with_capacity(MAX_FRAMES + 16);
    backtrace::trace(|f| {
        // CAST: an instruction address as a number.
        ips.push(f.ip() as usize);
        ips.len() < MAX_FRAMES + 16
    });
    ips.into_boxed_slice()
}

/// The frames of one return address (inlined calls give several), without the recorder's own.
fn frames_of(ip: usize) -> Vec<Frame> {
    let mut out = Vec::new();
    // CAST: back from the number `capture_ips` made.
    backtrace::resolve(ip as *mut std::ffi::c_void, |s| {
        let name = s.name().map_or_else(|| "??".to_owned(), |n| format!("{n:#}"));
        let plumbing = ["backtrace::", "std::panicking::", "std::panic::", "<core::panic::"];
        if plumbing.iter().any(|p| name.starts_with(p)) || name.contains("ascendcl::obs::") {
            return;
        }
        let filename = s.filename().map_or_else(String::new, |p| p.display().to_string());
        out.push(Frame { filename, line: s.lineno().unwrap_or(0), name });
    });
    out
}

/// Symbolises recorded stacks, each address once.
fn resolve_all(events: Vec<(u32, TraceEvent, Box<[usize]>)>) -> Vec<(u32, TraceEvent)> {
    let mut cache: std::collections::HashMap<usize, Vec<Frame>> = std::collections::HashMap::new();
    events
        .into_iter()
        .map(|(d, mut ev, ips)| {
            for ip in ips.iter() {
                ev.frames.extend(cache.entry(*ip).or_insert_with(|| frames_of(*ip)).iter().cloned());
                if ev.frames.len() >= MAX_FRAMES {
                    break;
                }
            }
            ev.frames.truncate(MAX_FRAMES);
            (d, ev)
        })
        .collect()
}

/// Records one event on logical device `device` (call only when [`recording`] is true).
#[cold]
pub fn record(device: u32, action: &'static str, addr: u64, size: u64, stream: u64, device_free: u64) {
    let ev = TraceEvent { action, addr, size, stream, time_us: now_us(), device_free, frames: Vec::new() };
    let ips = capture_ips();
    let mut h = history();
    while h.events.len() >= h.max {
        h.events.pop_front();
    }
    h.events.push_back((device, ev, ips));
}

/// Records an event if recording is on.
#[inline]
pub fn note(device: u32, action: &'static str, addr: u64, size: u64, stream: u64) {
    if recording() {
        record(device, action, addr, size, stream, 0);
    }
}

/// Records an `aclrtMalloc`: a `segment_alloc` of the range it newly backed, or of the whole
/// slab chunk (`CHUNK_BYTES` of VA) when the object started a new chunk; then the `alloc`.
#[cold]
pub fn alloc_events(device: u32, addr: u64, size: u64, newly_backed: u64, slab: bool, new_chunk: bool) {
    if slab && new_chunk {
        record(device, "segment_alloc", addr & !(mm::slab::CHUNK_BYTES - 1), mm::slab::CHUNK_BYTES, 0, 0);
    } else if !slab && newly_backed > 0 {
        record(device, "segment_alloc", addr, newly_backed, 0, 0);
    }
    record(device, "alloc", addr, size, 0, 0);
}

/// Records an `aclrtFree`: `free_requested` and `free_completed` (a plain free completes at
/// once), then a `segment_free` of the range it unbacked, or of the whole slab chunk when the
/// chunk went with it.
#[cold]
pub fn free_events(device: u32, addr: u64, size: u64, unbacked: u64, slab: bool, chunk_gone: bool) {
    record(device, "free_requested", addr, size, 0, 0);
    record(device, "free_completed", addr, size, 0, 0);
    if slab && chunk_gone {
        record(device, "segment_free", addr & !(mm::slab::CHUNK_BYTES - 1), mm::slab::CHUNK_BYTES, 0, 0);
    } else if !slab && unbacked > 0 {
        record(device, "segment_free", addr, unbacked, 0, 0);
    }
}

fn row(s: &mut String, name: &str, cur: u64, peak: Option<u64>) {
    let peak = peak.map_or_else(|| "-".to_owned(), mib);
    let _ = writeln!(s, "| {name:<33} | {:>18} | {peak:>18} |", mib(cur));
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.2} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// The figures an out-of-memory message names, for logical device `d` whose allocator is
/// `alloc`: the device's free bytes (all processes), the largest range that could be backed
/// now, the bytes this process's pools reserve, and this process's own usage.
pub fn oom_figures(drv: &dyn hal::Driver, d: u32, alloc: &DeviceAllocator) -> String {
    let acct = alloc.accounting();
    let pools =
        acct.components.iter().find(|(c, _)| *c == crate::pool::POOL_COMPONENT).map_or(0, |(_, u)| u.current);
    let mine = acct.live.current - pools;
    let va = alloc.largest_free_va();
    match drv.memory_info(DeviceId(d)) {
        Ok(i) => format!(
            "device {d} has {} bytes free of {} ({} free as 2 MiB pages); the largest range that could be backed is {} bytes; \
             this process's pools reserve {pools} bytes; this process has {mine} bytes allocated on it ({} backed)",
            i.free_bytes,
            i.total_bytes,
            i.huge_free_bytes,
            va.min(i.free_bytes),
            acct.backed.current - pools,
        ),
        Err(_) => format!(
            "the largest free VA range is {va} bytes; this process's pools reserve {pools} bytes; \
             this process has {mine} bytes allocated on device {d}"
        ),
    }
}

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
                    segment_pool_id: (0, crate::pool::pool_number(handle)),
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
            let pool_u =
                acct.components.iter().find(|(c, _)| *c == crate::pool::POOL_COMPONENT).map(|(_, u)| *u);
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
            for (c, u) in comps.iter().filter(|(c, u)| *c != crate::pool::POOL_COMPONENT && u.peak > 0) {
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
                    let n = crate::pool::pool_number(*h);
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
