//! Seeing this process's device memory, the part below the runtime: the memory history of
//! `aclrsMemRecordHistory` (and its hooks), and the figures an out-of-memory message gives.
//! The walks (the readable summary of `aclrsMemSummary`, the snapshots of `aclrsMemSnapshot` /
//! `ACLRS_MEM_SNAPSHOT`) are [`crate::api::obs`]'s. It must not use the runtime or
//! [`crate::api`].
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
use serde::Serialize;

/// Events kept when `aclrsMemRecordHistory` is given 0 entries.
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;
/// Host stack frames kept per event.
pub(crate) const MAX_FRAMES: usize = 48;

pub(crate) static RECORDING: AtomicBool = AtomicBool::new(false);

#[derive(Debug)]
pub(crate) struct History {
    pub(crate) max: usize,
    /// (logical device, event without frames, the raw return addresses of its host stack).
    pub(crate) events: VecDeque<(u32, TraceEvent, Box<[usize]>)>,
}

pub(crate) static HISTORY: Mutex<History> =
    Mutex::new(History { max: DEFAULT_MAX_ENTRIES, events: VecDeque::new() });

pub(crate) fn history() -> std::sync::MutexGuard<'static, History> {
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

pub(crate) fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The raw return addresses of the calling thread's stack (no symbols: those are looked up
/// once per address when a snapshot is written).
pub(crate) fn capture_ips() -> Box<[usize]> {
    let mut ips = Vec::with_capacity(MAX_FRAMES + 16);
    backtrace::trace(|f| {
        // CAST: an instruction address as a number.
        ips.push(f.ip() as usize);
        ips.len() < MAX_FRAMES + 16
    });
    ips.into_boxed_slice()
}

/// The frames of one return address (inlined calls give several), without the recorder's own.
pub(crate) fn frames_of(ip: usize) -> Vec<Frame> {
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
pub(crate) fn resolve_all(events: Vec<(u32, TraceEvent, Box<[usize]>)>) -> Vec<(u32, TraceEvent)> {
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

pub(crate) fn row(s: &mut String, name: &str, cur: u64, peak: Option<u64>) {
    let peak = peak.map_or_else(|| "-".to_owned(), mib);
    let _ = writeln!(s, "| {name:<33} | {:>18} | {peak:>18} |", mib(cur));
}

pub(crate) fn mib(bytes: u64) -> String {
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
    let pools = acct
        .components
        .iter()
        .find(|(c, _)| *c == crate::state::memory::POOL_COMPONENT)
        .map_or(0, |(_, u)| u.current);
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
