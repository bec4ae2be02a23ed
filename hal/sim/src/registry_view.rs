//! Read-only views of a running machine's registry, for `aclrs-smi`, and the per-process
//! statistics slots that processes publish for it.
//!
//! # Reading
//!
//! [`inspect`] opens the registry file of a machine without attaching (it is not a process of
//! the machine: it holds no memory, is never reaped and leaves no trace), takes the registry
//! mutex for one read — the header, the snapshot and the log records, applied to a private
//! copy of the state — and drops it before it computes anything. A running process therefore
//! waits at most for one registry read. The reader marks its own pid alive while it holds the
//! mutex, so that if it is killed mid-read, the next process takes the mutex over as from any
//! dead holder. Processes that died and were not reaped yet are reported with `alive: false`.
//!
//! # Statistics slots
//!
//! Figures the registry does not hold (a process's stream-ordered pool reservations) live in a
//! slot per host pid in the registry file past the log: the process zeroes its slot when it
//! attaches and then changes it with atomic adds, one per changed figure and independent of
//! how many allocations it has; no lock is taken. A slot is trusted only while its first word
//! names its pid and the pid is in the registry's process list.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use hal::{PageSize, SocProfile};

use super::{Cache, Registry, MAP_BYTES, STATS_BASE, STATS_PIDS, STATS_STRIDE};
use crate::config::SimConfig;
use crate::sys::shared::RegistryFile;

/// Word offsets inside a slot.
const SLOT_PID: u64 = 0;
const SLOT_SOC: u64 = 8;
/// First device's counters; each device has (pool reserved bytes, pool used bytes).
const SLOT_DEVICES: u64 = 64;
const DEVICE_WORDS: u64 = 16;

fn slot_base(pid: u32) -> Option<u64> {
    (u64::from(pid) < STATS_PIDS).then(|| STATS_BASE + u64::from(pid) * STATS_STRIDE)
}

fn soc_code(soc: SocProfile) -> u64 {
    match soc {
        SocProfile::A2 => 1,
        SocProfile::A3 => 2,
        SocProfile::Ascend950 => 3,
    }
}

fn soc_of(code: u64) -> Option<SocProfile> {
    match code {
        1 => Some(SocProfile::A2),
        2 => Some(SocProfile::A3),
        3 => Some(SocProfile::Ascend950),
        _ => None,
    }
}

/// Zeroes the slot of `pid` (this process, attaching) and names it, with its SoC.
pub(super) fn reset_slot(file: &RegistryFile, pid: u32, soc: SocProfile) {
    let Some(base) = slot_base(pid) else { return };
    if let Some(w) = file.counter(base + SLOT_PID) {
        // Invalidate first, so that a reader never pairs our pid with a dead process's figures.
        w.store(0, Ordering::SeqCst);
    }
    for off in (8..STATS_STRIDE).step_by(8) {
        if let Some(w) = file.counter(base + off) {
            w.store(0, Ordering::Relaxed);
        }
    }
    if let Some(w) = file.counter(base + SLOT_SOC) {
        w.store(soc_code(soc), Ordering::Relaxed);
    }
    if let Some(w) = file.counter(base + SLOT_PID) {
        w.store(u64::from(pid), Ordering::SeqCst);
    }
}

/// The pool counters of one device of this process, in its statistics slot: two atomic adds
/// per change, no lock.
#[derive(Debug, Clone)]
pub struct PoolCounters {
    registry: Arc<Registry>,
    offset: u64,
}

impl PoolCounters {
    pub(crate) fn new(registry: Arc<Registry>, physical: u32) -> Option<Self> {
        let base = slot_base(registry.me)?;
        (u64::from(physical) < (STATS_STRIDE - SLOT_DEVICES) / DEVICE_WORDS)
            .then(|| Self { registry, offset: base + SLOT_DEVICES + u64::from(physical) * DEVICE_WORDS })
    }

    /// Adds `reserved` and `used` (either may be negative) to this process's pool figures.
    pub fn add(&self, reserved: i64, used: i64) {
        for (off, delta) in [(0, reserved), (8, used)] {
            if delta != 0 {
                if let Some(w) = self.registry.file.counter(self.offset + off) {
                    // CAST: two's complement wrapping add of a signed delta.
                    w.fetch_add(delta as u64, Ordering::Relaxed);
                }
            }
        }
    }
}

/// One device of a machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceView {
    /// Physical device index.
    pub device: u32,
    /// Whether some process brought it up since the machine started.
    pub up: bool,
    /// HBM bytes allocated (frames, every process).
    pub used_bytes: u64,
    /// Bytes allocated as 2 MiB pages.
    pub huge_used_bytes: u64,
    /// Bytes allocated as 1 GiB pages.
    pub giant_used_bytes: u64,
}

/// What one process holds on one device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessDevice {
    /// Physical device index.
    pub device: u32,
    /// Frames it allocated (its own memory, pool pages included).
    pub used_bytes: u64,
    /// Frames of other processes it imported.
    pub imported_bytes: u64,
    /// Bytes its stream-ordered pools reserve (backed pages).
    pub pool_reserved_bytes: u64,
    /// Bytes of busy blocks in its pools.
    pub pool_used_bytes: u64,
}

/// One process attached to a machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessView {
    /// Host pid.
    pub pid: u32,
    /// Whether it is alive (a dead one is reaped by the next process that changes the registry).
    pub alive: bool,
    /// The SoC it runs as, when it published one.
    pub soc: Option<SocProfile>,
    /// Shares it exports.
    pub exports: u32,
    /// Imports it holds.
    pub imports: u32,
    /// Devices on which it holds something.
    pub devices: Vec<ProcessDevice>,
}

/// A machine as one registry read saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineView {
    /// The machine's name (`ACLRS_SIM_INSTANCE`).
    pub instance: String,
    /// Physical devices.
    pub devices: u32,
    /// HBM bytes per device.
    pub hbm_bytes: u64,
    /// The 2 MiB-page budget per device.
    pub huge_budget_bytes: u64,
    /// The 1 GiB-page budget per device.
    pub giant_budget_bytes: u64,
    /// Each device's usage.
    pub device_views: Vec<DeviceView>,
    /// Attached processes, by pid.
    pub processes: Vec<ProcessView>,
}

/// Reads machine `instance` once. `Ok(None)` when no such machine is running (no registry
/// file, or one its last process left). Call it from a process that is not attached to the
/// machine (`aclrs-smi`).
///
/// # Errors
///
/// An I/O error opening the file; `InvalidData` when the registry cannot be decoded; `Other`
/// when this process is attached to the machine.
pub fn inspect(instance: &str) -> std::io::Result<Option<MachineView>> {
    let path = std::path::PathBuf::from(format!("/dev/shm/aclrs.{instance}.registry"));
    let Some(mut file) = RegistryFile::open_existing(&path, MAP_BYTES)? else { return Ok(None) };
    let me = crate::sys::host_pid();
    // Marked alive so that a kill mid-read lets the next process take the mutex over. The mark
    // is refused when this process is attached to the machine itself: its own registry may hold
    // the mutex under the same pid, so reading here could overlap a write.
    if file.mark_alive(me).is_err() {
        return Err(std::io::Error::other(
            "this process is attached to the machine (or its liveness mark is taken); inspect it from another process",
        ));
    }
    let config = SimConfig { instance: instance.to_owned(), ..SimConfig::default() };
    let reg = Registry { file, cache: Mutex::new(Cache::default()), me, config };
    let mut cache = reg.cache.lock().unwrap_or_else(|p| p.into_inner());
    let sizes = {
        let held = reg.file.lock(me);
        let Some(header) = reg.read_header(&held)? else { return Ok(None) };
        if reg.refresh(&held, &mut cache).is_err() {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        header.sizes
    };
    let state = &cache.state;
    if state.procs.is_empty() {
        return Ok(None);
    }
    let devices = u32::try_from(sizes[0]).unwrap_or(0).min(hal::layout::MAX_DEVICES);
    let clamp = |bytes: u64, page: PageSize| bytes.min(sizes[1]) & !(page.bytes() - 1);
    let mut view = MachineView {
        instance: instance.to_owned(),
        devices,
        hbm_bytes: sizes[1],
        huge_budget_bytes: clamp(sizes[2], PageSize::Huge),
        giant_budget_bytes: clamp(sizes[3], PageSize::Giant),
        device_views: (0..devices)
            .map(|d| DeviceView { device: d, up: state.devices_up.contains(&d), ..DeviceView::default() })
            .collect(),
        processes: Vec::new(),
    };
    let mut procs: std::collections::BTreeMap<u32, ProcessView> = state
        .procs
        .iter()
        .map(|&pid| {
            let alive = reg.file.is_alive(pid);
            (pid, ProcessView { pid, alive, ..ProcessView::default() })
        })
        .collect();
    fn dev_of(p: &mut ProcessView, device: u32) -> &mut ProcessDevice {
        let i = match p.devices.iter().position(|d| d.device == device) {
            Some(i) => i,
            None => {
                p.devices.push(ProcessDevice { device, ..ProcessDevice::default() });
                p.devices.len() - 1
            }
        };
        &mut p.devices[i]
    }
    for a in state.allocs.values() {
        let bytes: u64 = a.runs.iter().map(|r| r.len_bytes).sum();
        if let Some(d) = view.device_views.get_mut(a.device as usize) {
            d.used_bytes += bytes;
            match a.page {
                PageSize::Huge => d.huge_used_bytes += bytes,
                PageSize::Giant => d.giant_used_bytes += bytes,
                PageSize::Normal => {}
            }
        }
        for (i, h) in a.holders.iter().enumerate() {
            if let Some(p) = procs.get_mut(h) {
                let pd = dev_of(p, a.device);
                if i == 0 {
                    pd.used_bytes += bytes;
                } else {
                    pd.imported_bytes += bytes;
                }
            }
        }
    }
    for share in state.shares.iter() {
        if let Some(p) = procs.get_mut(&share.exporter) {
            p.exports += 1;
        }
        for &(pid, n) in &share.imports {
            if let Some(p) = procs.get_mut(&pid) {
                p.imports += n;
            }
        }
    }
    for p in procs.values_mut() {
        let Some(base) = slot_base(p.pid) else { continue };
        let word = |off: u64| reg.file.counter(base + off).map_or(0, |w| w.load(Ordering::Relaxed));
        if word(SLOT_PID) != u64::from(p.pid) {
            continue;
        }
        p.soc = soc_of(word(SLOT_SOC));
        for d in 0..devices {
            let off = SLOT_DEVICES + u64::from(d) * DEVICE_WORDS;
            let (reserved, used) = (word(off), word(off + 8));
            if reserved != 0 || used != 0 {
                let pd = dev_of(p, d);
                pd.pool_reserved_bytes = reserved;
                pd.pool_used_bytes = used;
            }
        }
        p.devices.sort_by_key(|d| d.device);
    }
    view.processes = procs.into_values().collect();
    Ok(Some(view))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_machine_reads_as_none_and_an_attached_process_is_refused() {
        let instance = format!("view-test-{}", std::process::id());
        assert_eq!(inspect(&instance).unwrap(), None);
        let config = SimConfig { instance: instance.clone(), ..SimConfig::default() };
        let reg = Registry::attach(&config).unwrap();
        let e = inspect(&instance).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::Other, "{e}");
        // The slot names this process and its SoC, with zero pool figures.
        let base = slot_base(reg.me).unwrap();
        let word = |off| reg.file.counter(base + off).unwrap().load(Ordering::SeqCst);
        assert_eq!((word(SLOT_PID), soc_of(word(SLOT_SOC))), (u64::from(reg.me), Some(SocProfile::A2)));
        let c = PoolCounters::new(Arc::clone(&reg), 1).unwrap();
        c.add(4 << 20, 2 << 20);
        c.add(-(2 << 20), -(2 << 20));
        let dev1 = SLOT_DEVICES + DEVICE_WORDS;
        assert_eq!((word(dev1), word(dev1 + 8)), (2 << 20, 0));
        assert!(PoolCounters::new(Arc::clone(&reg), 200).is_none(), "devices beyond the slot");
        reg.detach();
        assert_eq!(inspect(&instance).unwrap(), None, "the last process out removed the machine");
    }
}
