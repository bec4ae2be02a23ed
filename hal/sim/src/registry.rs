//! The device registry: the firmware state every process attached to one simulated machine
//! shares — which frames of each device's HBM are allocated to whom, and the IPC export table.
//!
//! # Design
//!
//! A real NPU keeps frame allocation and export tables in its driver, which every process
//! reaches through the kernel. The software NPU has no kernel of its own, so it keeps that
//! state in a registry file, `/dev/shm/aclrs.<instance>.registry`, that every attached process
//! maps and reads and writes under the registry mutex, a lock word in the file
//! (`sys::shared`: no system call when uncontended; a dead holder's lock is taken over).
//! A whole-file `flock` additionally serialises attaching and leaving:
//!
//! - The state is a list of allocations (device, page size, frame runs, and the processes
//!   holding a reference: the allocating one, plus one per import) and an [`ExportTable`].
//!   The file holds it as a snapshot plus an append-only log of change records (attach, reap,
//!   device up, alloc, release, export, import, whitelist changes, close, destroy). A change
//!   appends one record, so its cost does not depend on how many allocations or processes the
//!   machine has. When the log outgrows `LOG_PER_SNAP` (8) times the snapshot
//!   (and at least 1 MiB), the writer compacts: it writes the whole state as a new snapshot,
//!   which is amortised constant time per change (an eighth of a snapshot's encoding).
//! - Each process caches the state, its per-device [`FrameAllocator`]s and how much of the log
//!   it has applied. When another process changed the file since, it reads and applies only the
//!   new records (the frame allocators follow with [`FrameAllocator::claim_pages`] and
//!   [`FrameAllocator::free_pages`]); only after a compaction it missed does it reload the
//!   snapshot. Every process applies the same records in the same order with the same
//!   deterministic code, so accounting is seen identically by every process. One exception,
//!   local to a process: the frames its own release freed reach its frame allocators only
//!   before their next other use (`Cache::deferred`), so that allocating exactly those
//!   frames again (the steady state of a malloc/free loop) skips a free and a claim.
//! - Writes are crash safe: a record is written past the committed end of the log, then the
//!   header that moves the end is written to the header slot not in force and put in force by
//!   one atomic store of the commit word. A snapshot goes to the inactive one of two areas, and
//!   the header that flips to it also empties the log. A process killed mid-write (or holding
//!   the mutex) leaves the previous state.
//! - Every attached process holds an OFD lock on one byte of the file named after its host pid
//!   (its liveness mark). The kernel drops it when the process dies, however it dies. Dead
//!   processes are reaped (a reap record: their references, exports and imports are dropped,
//!   and frames no one holds any more are free again) on attach, before every memory query
//!   (so `aclrtGetMemInfo` in a survivor shows a killed process's memory back), when an
//!   allocation finds no memory, and every 256 changes otherwise.
//! - Frames remember which process last had them (`dirty`, merged ranges, allocated and free
//!   alike; frames not in it read as zeros). Frames handed to another process are cleared
//!   (their pages of the HBM object are punched out, so they read as zeros) before the record
//!   that hands them over is committed: a process never receives another process's bytes. One
//!   that takes back its own frees pays nothing, and its steady state of allocating and
//!   freeing its own frames changes nothing here: an allocation looks the range up once and a
//!   free of frames only their allocating process could write leaves the record as it is.
//! - Pids are host pids from the operating system (the first `NSpid` field of
//!   `/proc/self/status`, so a process in a pid namespace is known by its host pid), never
//!   from a caller, so the whitelist of an export is checked against the importing process's
//!   real id.
//! - The last process to leave removes the registry and HBM objects; one that finds no live
//!   process on attach starts a fresh machine (what a crashed run left is dropped).
//!
//! # Limits
//!
//! All processes of one simulated machine must use the same `ACLRS_SIM_*` sizes (attach fails
//! otherwise). A reap scans the allocation list (time linear in the machine's live
//! allocations, once per dead process), and a compaction rewrites the whole state. There is no
//! privilege boundary between processes of one user: they could all write the files directly,
//! as any user-space stand-in for a driver allows.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use hal::{Error, ErrorKind, MemoryInfo, PageSize, Result, ShareKind, ShareName};
use mm::ipc::{page_of_shift, ExportTable, IpcError, Reader, Share, Writer};
use mm::phys::{FrameAllocator, PhysConfig, PhysRun};
use smallvec::{smallvec, SmallVec};

use crate::config::SimConfig;
use crate::sys::shared::{FileLocked, Locked, RegistryFile};
use crate::sys::ShmObject;

const MAGIC: u64 = u64::from_le_bytes(*b"ACLRSREG");
/// 4: `State::dirty` records allocated frames too (their owner), not only free ones.
const VERSION: u64 = 4;
const HEADER_BYTES: usize = 96;
/// The commit word: a sequence number whose low bit names the header slot in force.
const COMMIT_WORD: u64 = 0;
/// The two header slots (the one in force, and the one the next commit writes).
const HEADER_SLOTS: u64 = 128;
const SNAP_BASE: u64 = 4096;
/// Room for one snapshot; the file is sparse, so this costs nothing until used.
const SNAP_BYTES: u64 = 1 << 32;
const LOG_BASE: u64 = SNAP_BASE + 2 * SNAP_BYTES;
/// Room for the log.
const LOG_BYTES: u64 = 1 << 31;
/// The per-process statistics area (see [`view`]): one slot of [`STATS_STRIDE`] bytes per host
/// pid below [`STATS_PIDS`], written only by its process with atomic adds (no lock), read by
/// `aclrs-smi`. Sparse: a slot costs nothing until its process attaches.
const STATS_BASE: u64 = LOG_BASE + LOG_BYTES;
const STATS_STRIDE: u64 = 2048;
const STATS_PIDS: u64 = 1 << 22;
/// Bytes of the file every process maps.
const MAP_BYTES: u64 = STATS_BASE + STATS_PIDS * STATS_STRIDE;
/// The log is compacted once it is longer than this and than [`LOG_PER_SNAP`] snapshots.
pub(crate) const LOG_MIN_BYTES: u64 = 1 << 20;
/// How many times the snapshot's length the log grows to before it is compacted. A
/// compaction writes the whole state (its cost grows with the number of live allocations),
/// and the log between two compactions holds about this many snapshots' worth of changes, so
/// each change pays 1/this of a snapshot's encoding. A process attaching replays at most this
/// much log on top of the snapshot.
const LOG_PER_SNAP: u64 = 8;
/// The widest run of clean frames [`State::dirty`] records as a neighbouring owner's, to keep
/// one range for allocations that are near but not adjacent.
const DIRTY_GAP: u64 = 2 << 20;
/// Changes of one process between two liveness scans of the other processes.
pub(crate) const REAP_EVERY: u32 = 256;

#[path = "registry_view.rs"]
pub mod view;

/// A hasher for keys that are already well spread integers (allocation ids, page-aligned
/// addresses): one multiply, no random seed (so the same operations give the same table in
/// every process). Not for keys an adversary picks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        // Fibonacci hashing: the high bits, which the table uses, mix every bit of the key.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(26)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)) ^ (self.0 >> 56);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }

    fn write_u32(&mut self, n: u32) {
        self.0 ^= u64::from(n);
    }
}

/// A hash map keyed by integers, with [`IntHasher`]: O(1) however many entries it holds.
pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// The frame runs of one allocation: inline up to two (an unfragmented allocation is one), so
/// that allocating and freeing one makes no heap allocation.
pub(crate) type Runs = SmallVec<[PhysRun; 2]>;

/// Allocation ids of one release (inline up to four: the pieces of one allocation).
pub(crate) type Ids = SmallVec<[u64; 4]>;

/// One allocation of frames on one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Alloc {
    pub(crate) device: u32,
    pub(crate) page: PageSize,
    pub(crate) runs: Runs,
    /// One entry per reference: the allocating process, and each import.
    pub(crate) holders: SmallVec<[u32; 2]>,
    /// The one process that could write the frames (the allocating one), or 0 once another
    /// process imported them.
    pub(crate) owner: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    procs: BTreeSet<u32>,
    /// Devices whose HBM object was initialised since the machine started.
    devices_up: BTreeSet<u32>,
    next_id: u64,
    /// By id; a hash map, so that an allocation or free costs the same however many are live.
    allocs: IntMap<u64, Alloc>,
    shares: ExportTable,
    /// Frames not cleared since their last owner had them, allocated or free: (device, offset)
    /// → (length, owner; 0 when unknown or several). Adjacent ranges of one owner are merged.
    /// An allocated range is recorded as its allocating process's (or 0 once imported, from its
    /// free on), so that a free of frames no other process could write changes nothing.
    dirty: BTreeMap<(u32, u64), (u64, u32)>,
}

/// One change of the shared state, as the log records it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Record {
    Attach { pid: u32 },
    Reap { pid: u32 },
    DeviceUp { device: u32 },
    Alloc { id: u64, device: u32, page: PageSize, runs: Runs, holder: u32 },
    Release { pid: u32, ids: Ids },
    Export { share: Share, no_whitelist: bool, next_id: u64 },
    DisableWhitelist { name: ShareName, pid: u32 },
    SetPids { name: ShareName, pid: u32, pids: Vec<u32> },
    Import { name: ShareName, pid: u32 },
    CloseImport { name: ShareName, pid: u32 },
    Destroy { name: ShareName, pid: u32 },
}

fn put_runs(w: &mut Writer<'_>, runs: &[PhysRun]) {
    w.u64(runs.len() as u64);
    runs.iter().for_each(|r| {
        w.u64(r.offset);
        w.u64(r.len_bytes);
    });
}

fn get_runs(r: &mut Reader<'_>) -> std::result::Result<Runs, IpcError> {
    (0..r.u64()?).map(|_| Ok(PhysRun { offset: r.u64()?, len_bytes: r.u64()? })).collect()
}

fn get_name(r: &mut Reader<'_>) -> std::result::Result<ShareName, IpcError> {
    ShareName::try_new(r.bytes()?).ok_or(IpcError::Corrupt)
}

impl Record {
    /// Appends the record, framed by its length, to `out`.
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        let mut w = Writer(out);
        match self {
            Self::Attach { pid } => {
                w.u32(1);
                w.u32(*pid);
            }
            Self::Reap { pid } => {
                w.u32(2);
                w.u32(*pid);
            }
            Self::DeviceUp { device } => {
                w.u32(3);
                w.u32(*device);
            }
            Self::Alloc { id, device, page, runs, holder } => {
                w.u32(4);
                w.u64(*id);
                w.u32(*device);
                w.u32(page.shift());
                w.u32(*holder);
                put_runs(&mut w, runs);
            }
            Self::Release { pid, ids } => {
                w.u32(5);
                w.u32(*pid);
                w.u64(ids.len() as u64);
                ids.iter().for_each(|&i| w.u64(i));
            }
            Self::Export { share, no_whitelist, next_id } => {
                w.u32(6);
                w.bytes(share.name.as_bytes());
                w.u32(share.exporter);
                w.u32(share.device);
                w.u32(share.page_size.shift());
                w.u32(u32::from(*no_whitelist));
                w.u64(*next_id);
                w.u64(share.allocs.len() as u64);
                share.allocs.iter().for_each(|&a| w.u64(a));
                put_runs(&mut w, &share.runs);
            }
            Self::DisableWhitelist { name, pid } => {
                w.u32(7);
                w.bytes(name.as_bytes());
                w.u32(*pid);
            }
            Self::SetPids { name, pid, pids } => {
                w.u32(8);
                w.bytes(name.as_bytes());
                w.u32(*pid);
                w.u64(pids.len() as u64);
                pids.iter().for_each(|&p| w.u32(p));
            }
            Self::Import { name, pid } => {
                w.u32(9);
                w.bytes(name.as_bytes());
                w.u32(*pid);
            }
            Self::CloseImport { name, pid } => {
                w.u32(10);
                w.bytes(name.as_bytes());
                w.u32(*pid);
            }
            Self::Destroy { name, pid } => {
                w.u32(11);
                w.bytes(name.as_bytes());
                w.u32(*pid);
            }
        }
        // CAST: one record is far below 4 GiB (its runs and pids are bounded by memory).
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Decodes the records of `bytes`, which holds whole framed records only.
    fn decode_all(bytes: &[u8]) -> std::result::Result<Vec<Self>, IpcError> {
        let mut out = Vec::new();
        let mut r = Reader(bytes);
        while !r.0.is_empty() {
            let len = r.u32()? as usize;
            if len > r.0.len() {
                return Err(IpcError::Corrupt);
            }
            let (body, rest) = r.0.split_at(len);
            out.push(Self::decode(&mut Reader(body))?);
            r = Reader(rest);
        }
        Ok(out)
    }

    fn decode(r: &mut Reader<'_>) -> std::result::Result<Self, IpcError> {
        Ok(match r.u32()? {
            1 => Self::Attach { pid: r.u32()? },
            2 => Self::Reap { pid: r.u32()? },
            3 => Self::DeviceUp { device: r.u32()? },
            4 => {
                let id = r.u64()?;
                let device = r.u32()?;
                let page = page_of_shift(r.u32()?)?;
                let holder = r.u32()?;
                Self::Alloc { id, device, page, runs: get_runs(r)?, holder }
            }
            5 => {
                let pid = r.u32()?;
                let ids = (0..r.u64()?).map(|_| r.u64()).collect::<std::result::Result<_, _>>()?;
                Self::Release { pid, ids }
            }
            6 => {
                let name = get_name(r)?;
                let exporter = r.u32()?;
                let device = r.u32()?;
                let page = page_of_shift(r.u32()?)?;
                let no_whitelist = r.u32()? != 0;
                let next_id = r.u64()?;
                let allocs = (0..r.u64()?).map(|_| r.u64()).collect::<std::result::Result<_, _>>()?;
                let runs = get_runs(r)?.into_vec();
                Self::Export {
                    share: Share::new(name, exporter, device, page, allocs, runs),
                    no_whitelist,
                    next_id,
                }
            }
            7 => Self::DisableWhitelist { name: get_name(r)?, pid: r.u32()? },
            8 => {
                let name = get_name(r)?;
                let pid = r.u32()?;
                let pids = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
                Self::SetPids { name, pid, pids }
            }
            9 => Self::Import { name: get_name(r)?, pid: r.u32()? },
            10 => Self::CloseImport { name: get_name(r)?, pid: r.u32()? },
            11 => Self::Destroy { name: get_name(r)?, pid: r.u32()? },
            _ => return Err(IpcError::Corrupt),
        })
    }
}

/// Frames a record freed: their device, page size and runs.
type Freed = (u32, PageSize, Runs);

/// A range of one device's HBM to clear: device, offset, length.
type Clear = (u32, u64, u64);

/// What applying a record did beyond the state: frames it freed, and frames it handed to a
/// process other than their last owner (which the writer clears before committing).
#[derive(Debug, Default, PartialEq, Eq)]
struct Effects {
    freed: SmallVec<[Freed; 2]>,
    clear: SmallVec<[Clear; 2]>,
}

impl State {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer(&mut out);
        w.u64(self.procs.len() as u64);
        self.procs.iter().for_each(|&p| w.u32(p));
        w.u64(self.devices_up.len() as u64);
        self.devices_up.iter().for_each(|&d| w.u32(d));
        w.u64(self.next_id);
        w.u64(self.allocs.len() as u64);
        let mut ids: Vec<u64> = self.allocs.keys().copied().collect();
        ids.sort_unstable();
        for (id, a) in ids.iter().filter_map(|&id| Some((id, self.allocs.get(&id)?))) {
            w.u64(id);
            w.u32(a.device);
            w.u32(a.page.shift());
            put_runs(&mut w, &a.runs);
            w.u64(a.holders.len() as u64);
            a.holders.iter().for_each(|&h| w.u32(h));
            w.u32(a.owner);
        }
        w.u64(self.dirty.len() as u64);
        for (&(device, offset), &(len, owner)) in &self.dirty {
            w.u32(device);
            w.u64(offset);
            w.u64(len);
            w.u32(owner);
        }
        self.shares.encode(&mut out);
        out
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Self, IpcError> {
        let mut r = Reader(bytes);
        let procs = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
        let devices_up = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
        let next_id = r.u64()?;
        let mut allocs = IntMap::default();
        for _ in 0..r.u64()? {
            let id = r.u64()?;
            let device = r.u32()?;
            let page = page_of_shift(r.u32()?)?;
            let runs = get_runs(&mut r)?;
            let holders = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
            let owner = r.u32()?;
            allocs.insert(id, Alloc { device, page, runs, holders, owner });
        }
        let mut dirty = BTreeMap::new();
        for _ in 0..r.u64()? {
            let key = (r.u32()?, r.u64()?);
            dirty.insert(key, (r.u64()?, r.u32()?));
        }
        let shares = ExportTable::decode(&mut r)?;
        Ok(Self { procs, devices_up, next_id, allocs, shares, dirty })
    }

    /// Drops every reference `pid` holds, its exports and its imports, and `pid` itself.
    fn reap(&mut self, pid: u32, freed: &mut SmallVec<[Freed; 2]>) {
        self.procs.remove(&pid);
        self.shares.reap(pid);
        let mut gone = Vec::new();
        self.allocs.retain(|&id, a| {
            a.holders.retain(|h| *h != pid);
            if a.holders.is_empty() {
                gone.push((id, a.device, a.page, std::mem::take(&mut a.runs), a.owner));
                false
            } else {
                true
            }
        });
        // In id order, as every process does it (the table's order is its own history).
        gone.sort_unstable_by_key(|g| g.0);
        for (_, device, page, runs, owner) in gone {
            self.freed_to_dirty(device, &runs, owner);
            freed.push((device, page, runs));
        }
    }

    /// Records that `runs` of `device`, just freed, were last written by `owner`. They were
    /// recorded as their allocating process's when allocated ([`Self::take_for`]), so only
    /// `owner` 0 (imported: several processes wrote them) changes the record.
    fn freed_to_dirty(&mut self, device: u32, runs: &[PhysRun], owner: u32) {
        if owner == 0 {
            let mut scratch = SmallVec::new();
            for r in runs {
                self.take_dirty(device, r, 0, &mut scratch);
            }
            self.free_to_dirty(device, runs, 0);
        }
    }

    /// Records `run` of `device`, taken by process `to`, as `to`'s; the parts another process
    /// (or several) last wrote go to `clear`. When one range of `to` already covers the run
    /// (it takes back what it freed), this is one lookup and changes nothing.
    fn take_for(&mut self, device: u32, run: &PhysRun, to: u32, clear: &mut SmallVec<[Clear; 2]>) {
        let end = run.offset + run.len_bytes;
        if let Some((&(d, s), &(l, o))) = self.dirty.range(..=(device, run.offset)).next_back() {
            if d == device && o == to && to != 0 && s + l >= end {
                return;
            }
        }
        self.take_dirty(device, run, to, clear);
        self.free_to_dirty(device, core::slice::from_ref(run), to);
    }

    /// Records `runs` of `device`, last written by `owner`, merged with the neighbouring ranges
    /// of the same owner (the runs must not be recorded already).
    ///
    /// A neighbour of the same owner at most [`DIRTY_GAP`] away is merged too, the clean frames
    /// between them (no range records them: free and zero) recorded as that owner's: a taker
    /// that is not the owner then clears zeros for nothing, which is harmless, and the record
    /// stays one range per process's region of allocations even when they are not adjacent (4
    /// MiB allocations 6 MiB apart, say), so looking a run up costs the same however many are
    /// live.
    fn free_to_dirty(&mut self, device: u32, runs: &[PhysRun], owner: u32) {
        for r in runs {
            let (mut start, mut len) = (r.offset, r.len_bytes);
            if let Some((&(d, s), &(l, o))) = self.dirty.range(..(device, start)).next_back() {
                if d == device && o == owner && s + l <= start && start - (s + l) <= DIRTY_GAP {
                    self.dirty.remove(&(d, s));
                    len += start - s;
                    start = s;
                }
            }
            let end = start + len;
            if let Some((&(d, s), &(l, o))) = self.dirty.range((device, end)..).next() {
                if d == device && o == owner && s - end <= DIRTY_GAP {
                    self.dirty.remove(&(d, s));
                    len = s + l - start;
                }
            }
            self.dirty.insert((device, start), (len, owner));
        }
    }

    /// Takes `run` of `device` out of the not-cleared ranges; the parts some process other
    /// than `to` last owned go to `clear`.
    fn take_dirty(&mut self, device: u32, run: &PhysRun, to: u32, clear: &mut SmallVec<[Clear; 2]>) {
        let end = run.offset + run.len_bytes;
        let mut from = match self.dirty.range(..=(device, run.offset)).next_back() {
            Some((&(d, s), &(l, _))) if d == device && s + l > run.offset => s,
            _ => run.offset,
        };
        // One range query per overlapping entry; no list is built.
        while from < end {
            let Some((&(_, s), &(l, o))) = self.dirty.range((device, from)..(device, end)).next() else {
                break;
            };
            self.dirty.remove(&(device, s));
            if s < run.offset {
                self.dirty.insert((device, s), (run.offset - s, o));
            }
            if s + l > end {
                self.dirty.insert((device, end), (s + l - end, o));
            }
            if o != to {
                let (a, b) = (s.max(run.offset), (s + l).min(end));
                clear.push((device, a, b - a));
            }
            from = s + l;
        }
    }

    /// Applies `rec`; all or nothing.
    fn apply(&mut self, rec: &Record) -> std::result::Result<Effects, Error> {
        let mut freed = SmallVec::new();
        let mut clear = SmallVec::new();
        match rec {
            Record::Attach { pid } => {
                self.procs.insert(*pid);
                // Frames a dead process of the same pid left are no longer this pid's.
                for v in self.dirty.values_mut().filter(|v| v.1 == *pid) {
                    v.1 = 0;
                }
            }
            Record::Reap { pid } => self.reap(*pid, &mut freed),
            Record::DeviceUp { device } => {
                self.devices_up.insert(*device);
            }
            Record::Alloc { id, device, page, runs, holder } => {
                self.next_id = self.next_id.max(*id);
                for r in runs {
                    self.take_for(*device, r, *holder, &mut clear);
                }
                self.allocs.insert(
                    *id,
                    Alloc {
                        device: *device,
                        page: *page,
                        runs: runs.clone(),
                        holders: smallvec![*holder],
                        owner: *holder,
                    },
                );
            }
            Record::Release { pid, ids } => {
                for id in ids {
                    let Some(a) = self.allocs.get_mut(id) else { continue };
                    let Some(i) = a.holders.iter().position(|h| h == pid) else { continue };
                    a.holders.remove(i);
                    if a.holders.is_empty() {
                        if let Some(a) = self.allocs.remove(id) {
                            self.freed_to_dirty(a.device, &a.runs, a.owner);
                            freed.push((a.device, a.page, a.runs));
                        }
                    }
                }
            }
            Record::Export { share, no_whitelist, next_id } => {
                if share
                    .allocs
                    .iter()
                    .any(|id| self.allocs.get(id).is_none_or(|a| !a.holders.contains(&share.exporter)))
                {
                    return Err(Error::new(
                        ErrorKind::InvalidHandle,
                        "memory to export is not held by this process",
                    ));
                }
                self.shares.export(share.clone()).map_err(ipc_error)?;
                if *no_whitelist {
                    // A fresh share has no pids and a whitelist: this cannot fail.
                    self.shares.disable_whitelist(&share.name, share.exporter).map_err(ipc_error)?;
                }
                self.next_id = self.next_id.max(*next_id);
            }
            Record::DisableWhitelist { name, pid } => {
                self.shares.disable_whitelist(name, *pid).map_err(ipc_error)?
            }
            Record::SetPids { name, pid, pids } => {
                self.shares.set_pids(name, *pid, pids).map_err(ipc_error)?
            }
            Record::Import { name, pid } => {
                let share = self.shares.get(name).ok_or_else(|| ipc_error(IpcError::NotFound))?;
                if share.allocs.iter().any(|id| !self.allocs.contains_key(id)) {
                    return Err(Error::new(ErrorKind::InvalidHandle, "the exported memory was freed"));
                }
                let ids = share.allocs.clone();
                self.shares.import(name, *pid).map_err(ipc_error)?;
                for id in &ids {
                    if let Some(a) = self.allocs.get_mut(id) {
                        a.holders.push(*pid);
                        // Two processes may write it now.
                        a.owner = 0;
                    }
                }
            }
            Record::CloseImport { name, pid } => self.shares.close_import(name, *pid).map_err(ipc_error)?,
            Record::Destroy { name, pid } => {
                self.shares.destroy(name, *pid).map_err(ipc_error)?;
            }
        }
        Ok(Effects { freed, clear })
    }
}

#[derive(Debug, Default)]
struct Cache {
    /// Whether `state` mirrors the file up to `log_pos` of the snapshot `snap_gen`.
    valid: bool,
    generation: u64,
    snap_gen: u64,
    active: u64,
    snap_len: u64,
    log_pos: u64,
    state: State,
    /// Frame allocators built so far; they follow every applied record.
    frames: BTreeMap<u32, FrameAllocator>,
    /// HBM objects opened to clear freed frames.
    hbm: BTreeMap<u32, ShmObject>,
    /// Changes since the last liveness scan.
    since_scan: u32,
    /// Buffers kept between operations (records of one operation, their encoding).
    spare_records: Vec<Record>,
    spare_bytes: Vec<u8>,
    /// Frames this process's own last release freed in the shared state (and the log) but
    /// not yet in its frame allocators: given back by [`Cache::settle`] before anything
    /// reads or changes those allocators, or taken again as they are by the next allocation
    /// that asks for exactly them (the steady state of freeing and allocating the same
    /// range), which then skips a free and a claim that would cancel out. Only this process's
    /// replica of the allocators lags: every other process applies the records in full.
    deferred: SmallVec<[Freed; 2]>,
}

impl Cache {
    /// Gives the [`Self::deferred`] frames back to the frame allocators.
    fn settle(&mut self) -> Result<()> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        let deferred = std::mem::take(&mut self.deferred);
        let done = free_frames(&mut self.frames, &deferred);
        if done.is_err() {
            // Rebuild the allocators from the state next time.
            self.valid = false;
        }
        done
    }

    /// Takes the deferred frames of `device` that are exactly `run` of `page`, if any: they
    /// are still taken in this process's frame allocator.
    fn take_deferred(&mut self, device: u32, page: PageSize, run: PhysRun) -> bool {
        let i = self.deferred.iter().position(|(d, p, r)| *d == device && *p == page && r[..] == [run]);
        i.map(|i| self.deferred.swap_remove(i)).is_some()
    }

    /// Drops the frame allocators (rebuilt from the state on next use), and with them the
    /// deferred frames (the state already has them free).
    fn drop_frames(&mut self) {
        self.frames.clear();
        self.deferred.clear();
    }
}

/// The registry of one simulated machine, as one process sees it.
///
/// # Locking
///
/// `cache` (a process-local mutex) is taken first, then the registry file's `flock`; both are
/// held for the whole of one operation and never across a call out of this module.
#[derive(Debug)]
pub(crate) struct Registry {
    file: RegistryFile,
    cache: Mutex<Cache>,
    me: u32,
    config: SimConfig,
}

fn internal(detail: &'static str) -> Error {
    Error::new(ErrorKind::Internal, detail)
}

/// The registries attached in this process, for the exit hook.
static ATTACHED: Mutex<Vec<Weak<Registry>>> = Mutex::new(Vec::new());

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        // `try_lock`: never block process exit on a thread that died holding the lock.
        let Ok(list) = ATTACHED.try_lock() else { return };
        for r in list.iter().filter_map(Weak::upgrade) {
            r.leave_at_exit();
        }
    });
}

/// The HBM object name of physical device `device` of machine `instance`.
pub(crate) fn hbm_name(instance: &str, device: u32) -> String {
    format!("/aclrs.{instance}.dev{device}.hbm")
}

/// What one operation changes: the records it applied to the cache, to be committed.
struct Tx<'a> {
    cache: &'a mut Cache,
    records: Vec<Record>,
    clear: Vec<Clear>,
}

impl Tx<'_> {
    /// Applies `rec` to the cache (state and frame allocators); all or nothing. `claimed`: the
    /// frames of an alloc record were already taken from this process's frame allocator.
    fn apply(&mut self, rec: Record, claimed: bool) -> Result<()> {
        if !claimed {
            self.cache.settle()?;
        }
        let Effects { freed, clear } = self.cache.state.apply(&rec)?;
        if let Record::Alloc { device, page, runs, .. } = &rec {
            if !claimed {
                if let Some(f) = self.cache.frames.get_mut(device) {
                    f.claim_pages(*page, runs)
                        .map_err(|_| internal("the device registry holds overlapping frames"))?;
                }
            }
        }
        free_frames(&mut self.cache.frames, &freed)?;
        if !clear.is_empty() {
            self.clear.extend(clear);
        }
        self.records.push(rec);
        Ok(())
    }

    /// Applies `rec`, a release by this process, as [`Self::apply`] does, except that the
    /// frames it frees are given back to the frame allocators only later
    /// ([`Cache::deferred`]).
    fn apply_release(&mut self, rec: Record) -> Result<()> {
        self.cache.settle()?;
        let Effects { freed, clear } = self.cache.state.apply(&rec)?;
        for f in freed {
            if self.cache.frames.contains_key(&f.0) {
                self.cache.deferred.push(f);
            }
        }
        if !clear.is_empty() {
            self.clear.extend(clear);
        }
        self.records.push(rec);
        Ok(())
    }
}

fn free_frames(frames: &mut BTreeMap<u32, FrameAllocator>, freed: &[Freed]) -> Result<()> {
    for (device, page, runs) in freed {
        if let Some(f) = frames.get_mut(device) {
            f.free_pages(*page, runs).map_err(|_| internal("frame record corrupt"))?;
        }
    }
    Ok(())
}

/// The window-layout shift the registry of machine `instance` records, read without joining
/// it (`None` when there is no registry, or it is not one this version writes). The header may
/// be stale (a machine no process runs any more); attaching checks it again under the lock.
pub(crate) fn peek_layout_shift(instance: &str) -> Option<u64> {
    use std::io::Read;
    let path = PathBuf::from(format!("/dev/shm/aclrs.{instance}.registry"));
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = vec![0u8; (HEADER_SLOTS + 2 * 128) as usize];
    f.read_exact(&mut head).ok()?;
    let word = |at: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(head.get(at..at + 8)?);
        Some(u64::from_le_bytes(a))
    };
    // CAST: header offsets below 512.
    let slot = (HEADER_SLOTS + (word(COMMIT_WORD as usize)? & 1) * 128) as usize;
    if word(slot)? != MAGIC || word(slot + 8)? != VERSION {
        return None;
    }
    word(slot + 11 * 8)
}

impl Registry {
    /// Attaches this process to the machine `config.instance`, starting it if no live process
    /// is attached.
    pub(crate) fn attach(config: &SimConfig) -> std::io::Result<Arc<Self>> {
        let path = PathBuf::from(format!("/dev/shm/aclrs.{}.registry", config.instance));
        let me = crate::sys::host_pid();
        let mut file = RegistryFile::open(&path, MAP_BYTES)?;
        // The last process of a machine removes the file; if that happened while we opened it,
        // open the new one.
        for _ in 0..100 {
            let current = file.lock_file().map(|held| file.is_current(&held))?;
            if current {
                break;
            }
            file = RegistryFile::open(&path, MAP_BYTES)?;
        }
        file.mark_alive(me)?;
        view::reset_slot(&file, me, config.soc);
        let this = Arc::new(Self { file, cache: Mutex::new(Cache::default()), me, config: config.clone() });
        {
            let held_file = this.file.lock_file()?;
            if !this.file.is_current(&held_file) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the machine's registry was replaced while attaching",
                ));
            }
            let held = this.file.lock(me);
            let mut cache = this.cache.lock().unwrap_or_else(|p| p.into_inner());
            let header = this.read_header(&held)?;
            let loaded = header.is_some() && this.refresh(&held, &mut cache).is_ok();
            let alive = loaded && cache.state.procs.iter().any(|&p| p != me && this.file.is_alive(p));
            if alive {
                if let Some(h) = header.filter(|h| h.shift != hal::layout::layout_shift()) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!(
                            "another process runs this machine with its VA windows at {:#x} (pinned host), this process has them at {:#x}: something (such as AddressSanitizer's shadow) holds that range here",
                            hal::layout::DEFAULT_HOST_WINDOW_BASE + h.shift,
                            hal::layout::host_window_base()
                        ),
                    ));
                }
                if header.is_some_and(|h| h.sizes != this.sizes()) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "another process runs this machine with other ACLRS_SIM_DEVICES/HBM/HUGE2M/HUGE1G settings",
                    ));
                }
                // Reap the dead, and a stale entry of our own pid (a dead process's, reused).
                let dead: Vec<u32> = cache
                    .state
                    .procs
                    .iter()
                    .copied()
                    .filter(|&p| p == me || !this.file.is_alive(p))
                    .collect();
                let mut tx = Tx { cache: &mut cache, records: Vec::new(), clear: Vec::new() };
                for p in dead {
                    tx.apply(Record::Reap { pid: p }, false).map_err(|_| std::io::ErrorKind::InvalidData)?;
                }
                tx.apply(Record::Attach { pid: me }, false).map_err(|_| std::io::ErrorKind::InvalidData)?;
                let (records, clear) = (std::mem::take(&mut tx.records), std::mem::take(&mut tx.clear));
                this.clear_frames(&mut cache, &clear);
                this.commit(&held, &mut cache, &records)?;
            } else {
                // No live process: a fresh machine (whatever a crashed run left is dropped).
                let generation = header.map_or(0, |h| h.generation);
                let active = header.map_or(0, |h| h.active);
                *cache = Cache { generation, active, ..Cache::default() };
                cache.state.procs.insert(me);
                this.compact(&held, &mut cache)?;
            }
        }
        let mut list = ATTACHED.lock().unwrap_or_else(|p| p.into_inner());
        if list.is_empty() {
            crate::sys::at_exit(at_exit);
        }
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&this));
        Ok(this)
    }

    fn sizes(&self) -> [u64; 4] {
        [
            u64::from(self.config.devices),
            self.config.hbm_bytes,
            self.config.huge_budget_bytes,
            self.config.giant_budget_bytes,
        ]
    }

    fn read_header(&self, held: &Locked<'_>) -> std::io::Result<Option<Header>> {
        let mut buf = [0u8; HEADER_BYTES];
        let slot = self.file.load_word(held, COMMIT_WORD) & 1;
        self.file.read_at(held, &mut buf, HEADER_SLOTS + slot * 128)?;
        let word = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&buf[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        if word(0) != MAGIC || word(1) != VERSION {
            return Ok(None);
        }
        Ok(Some(Header {
            generation: word(2),
            active: word(3) & 1,
            snap_len: word(4),
            snap_gen: word(5),
            log_len: word(6),
            sizes: [word(7), word(8), word(9), word(10)],
            shift: word(11),
        }))
    }

    fn write_header(&self, held: &Locked<'_>, h: &Header) -> std::io::Result<()> {
        let mut head = [0u8; HEADER_BYTES];
        let words = [
            MAGIC,
            VERSION,
            h.generation,
            h.active,
            h.snap_len,
            h.snap_gen,
            h.log_len,
            h.sizes[0],
            h.sizes[1],
            h.sizes[2],
            h.sizes[3],
            h.shift,
        ];
        for (i, w) in words.iter().enumerate() {
            head[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        // The header goes to the slot not in force; one atomic store of the commit word then
        // puts it in force. A process killed before that store leaves the old header.
        let seq = self.file.load_word(held, COMMIT_WORD).wrapping_add(1);
        self.file.write_at(held, &head, HEADER_SLOTS + (seq & 1) * 128)?;
        self.file.store_word(held, COMMIT_WORD, seq);
        Ok(())
    }

    /// Brings the cache up to the file: applies the log records it has not seen, or reloads
    /// the snapshot and the whole log after a compaction it missed.
    fn refresh(&self, held: &Locked<'_>, cache: &mut Cache) -> Result<()> {
        let h = self
            .read_header(held)
            .map_err(|_| internal("cannot read the device registry"))?
            .ok_or(internal("the device registry was removed or overwritten"))?;
        if cache.valid && h.generation == cache.generation {
            return Ok(());
        }
        let corrupt = || internal("the device registry is corrupt");
        let from = if !cache.valid || h.snap_gen != cache.snap_gen || h.log_len < cache.log_pos {
            cache.valid = false;
            let len = usize::try_from(h.snap_len.min(SNAP_BYTES)).map_err(|_| corrupt())?;
            let mut buf = vec![0u8; len];
            self.file.read_at(held, &mut buf, SNAP_BASE + h.active * SNAP_BYTES).map_err(|_| corrupt())?;
            cache.state = State::decode(&buf).map_err(|_| corrupt())?;
            cache.drop_frames();
            0
        } else {
            cache.log_pos
        };
        if h.log_len > from {
            // Another process's records: the frame allocators must be complete first.
            cache.settle()?;
            let len = usize::try_from((h.log_len - from).min(LOG_BYTES)).map_err(|_| corrupt())?;
            let mut buf = vec![0u8; len];
            self.file.read_at(held, &mut buf, LOG_BASE + from).map_err(|_| corrupt())?;
            for rec in Record::decode_all(&buf).map_err(|_| corrupt())? {
                let freed = match cache.state.apply(&rec) {
                    Ok(e) => e.freed,
                    Err(_) => {
                        cache.valid = false;
                        return Err(corrupt());
                    }
                };
                if let Record::Alloc { device, page, runs, .. } = &rec {
                    if let Some(f) = cache.frames.get_mut(device) {
                        f.claim_pages(*page, runs).map_err(|_| corrupt())?;
                    }
                }
                free_frames(&mut cache.frames, &freed)?;
            }
        }
        cache.valid = true;
        cache.generation = h.generation;
        cache.snap_gen = h.snap_gen;
        cache.active = h.active;
        cache.snap_len = h.snap_len;
        cache.log_pos = h.log_len;
        Ok(())
    }

    /// Appends `records` (already applied to the cache) to the log and commits them, or
    /// compacts when the log has grown long enough.
    fn commit(&self, held: &Locked<'_>, cache: &mut Cache, records: &[Record]) -> std::io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut bytes = std::mem::take(&mut cache.spare_bytes);
        bytes.clear();
        records.iter().for_each(|r| r.encode(&mut bytes));
        let end = cache.log_pos + bytes.len() as u64;
        if end > LOG_BYTES || end > LOG_MIN_BYTES.max(LOG_PER_SNAP.saturating_mul(cache.snap_len)) {
            cache.spare_bytes = bytes;
            return self.compact(held, cache);
        }
        let write = self.file.write_at(held, &bytes, LOG_BASE + cache.log_pos);
        cache.spare_bytes = bytes;
        let write = write.and_then(|()| {
            self.write_header(
                held,
                &Header {
                    generation: cache.generation + 1,
                    active: cache.active,
                    snap_len: cache.snap_len,
                    snap_gen: cache.snap_gen,
                    log_len: end,
                    sizes: self.sizes(),
                    shift: hal::layout::layout_shift(),
                },
            )
        });
        match write {
            Ok(()) => {
                cache.generation += 1;
                cache.log_pos = end;
                Ok(())
            }
            Err(e) => {
                cache.valid = false;
                Err(e)
            }
        }
    }

    /// Writes the cached state as a snapshot to the inactive area, then flips the header to
    /// it with an empty log.
    fn compact(&self, held: &Locked<'_>, cache: &mut Cache) -> std::io::Result<()> {
        let bytes = cache.state.encode();
        if bytes.len() as u64 > SNAP_BYTES {
            cache.valid = false;
            return Err(std::io::ErrorKind::OutOfMemory.into());
        }
        let next = cache.active ^ 1;
        let generation = cache.generation + 1;
        let h = Header {
            generation,
            active: next,
            snap_len: bytes.len() as u64,
            snap_gen: generation,
            log_len: 0,
            sizes: self.sizes(),
            shift: hal::layout::layout_shift(),
        };
        let write = self
            .file
            .write_at(held, &bytes, SNAP_BASE + next * SNAP_BYTES)
            .and_then(|()| self.write_header(held, &h));
        if let Err(e) = write {
            cache.valid = false;
            return Err(e);
        }
        cache.valid = true;
        cache.generation = generation;
        cache.snap_gen = generation;
        cache.active = next;
        cache.snap_len = h.snap_len;
        cache.log_pos = 0;
        Ok(())
    }

    /// Clears frames handed to a process other than their last owner (before the record that
    /// hands them over is committed).
    fn clear_frames(&self, cache: &mut Cache, clear: &[Clear]) {
        for (device, offset, len) in clear {
            if !cache.hbm.contains_key(device) {
                match ShmObject::open_existing(&hbm_name(&self.config.instance, *device)) {
                    Some(o) => {
                        cache.hbm.insert(*device, o);
                    }
                    // No object: the device was never brought up, there are no bytes.
                    None => continue,
                }
            }
            if let Some(o) = cache.hbm.get(device) {
                o.clear(*offset, *len);
            }
        }
    }

    /// Runs `f` on the current shared state under the registry lock, then commits the records
    /// it applied. With `scan`, dead processes are reaped first (otherwise every
    /// [`REAP_EVERY`] changes).
    ///
    /// `f` must be all or nothing: on error it must leave the state as it found it.
    fn with<R>(&self, scan: bool, f: impl FnOnce(&mut Tx<'_>, u32) -> Result<R>) -> Result<R> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let held = self.file.lock(self.me);
        self.refresh(&held, &mut cache)?;
        cache.since_scan += 1;
        let scan = scan || cache.since_scan >= REAP_EVERY;
        let records = std::mem::take(&mut cache.spare_records);
        let mut tx = Tx { cache: &mut cache, records, clear: Vec::new() };
        if scan {
            self.reap_dead(&mut tx)?;
        }
        let reaped = tx.records.len();
        let out = f(&mut tx, self.me);
        if out.is_err() {
            if tx.records.len() > reaped {
                // `f` broke all-or-nothing: reload from the file next time.
                tx.cache.valid = false;
            }
            // Commit only the reaps.
            tx.records.truncate(reaped);
        }
        let (mut records, clear) = (std::mem::take(&mut tx.records), std::mem::take(&mut tx.clear));
        self.clear_frames(&mut cache, &clear);
        let done = self.commit(&held, &mut cache, &records);
        records.clear();
        cache.spare_records = records;
        done.map_err(|_| internal("cannot write the device registry"))?;
        out
    }

    fn reap_dead(&self, tx: &mut Tx<'_>) -> Result<()> {
        tx.cache.since_scan = 0;
        let dead: Vec<u32> = tx
            .cache
            .state
            .procs
            .iter()
            .copied()
            .filter(|&p| p != self.me && !self.file.is_alive(p))
            .collect();
        for p in dead {
            tx.apply(Record::Reap { pid: p }, false)?;
        }
        Ok(())
    }

    fn frames<'c>(&self, cache: &'c mut Cache, device: u32) -> Result<&'c mut FrameAllocator> {
        cache.settle()?;
        if !cache.frames.contains_key(&device) {
            let mut f = FrameAllocator::new(PhysConfig {
                total_bytes: self.config.hbm_bytes,
                huge_budget_bytes: self.config.huge_budget_bytes,
                giant_budget_bytes: self.config.giant_budget_bytes,
            })
            .map_err(|_| internal("bad HBM size"))?;
            for a in cache.state.allocs.values().filter(|a| a.device == device) {
                f.claim_pages(a.page, &a.runs)
                    .map_err(|_| internal("the device registry holds overlapping frames"))?;
            }
            cache.frames.insert(device, f);
        }
        cache.frames.get_mut(&device).ok_or(internal("frame allocator vanished"))
    }

    /// Marks `device` up and says whether this process is the first to bring it up since the
    /// machine started (and must therefore reset its HBM object).
    pub(crate) fn bring_up(&self, device: u32) -> Result<bool> {
        self.with(false, |tx, _| {
            let first = !tx.cache.state.devices_up.contains(&device);
            if first {
                tx.apply(Record::DeviceUp { device }, false)?;
            }
            Ok(first)
        })
    }

    /// How many other live processes are attached to the machine.
    pub(crate) fn other_processes(&self) -> Result<usize> {
        self.with(true, |tx, me| Ok(tx.cache.state.procs.iter().filter(|&&p| p != me).count()))
    }

    /// Allocates `count` pages of `page` on `device` for this process, at HBM offset `prefer`
    /// when those frames are free (the caller asks for the frames its window shows at the VA it
    /// backs, so that neighbouring allocations map neighbouring frames and the kernel keeps
    /// them one mapping), anywhere otherwise.
    pub(crate) fn alloc(
        &self,
        device: u32,
        page: PageSize,
        count: u64,
        prefer: Option<u64>,
    ) -> Result<(u64, Runs)> {
        let attempt = |tx: &mut Tx<'_>, me: u32| self.alloc_in(tx, me, device, page, count, prefer);
        match self.with(false, attempt) {
            // Out of memory: a dead process may still hold frames; reap and try once more.
            Err(e) if e.kind() == ErrorKind::OutOfMemory => self.with(true, attempt),
            other => other,
        }
    }

    /// One allocation inside a registry change (`tx`, for process `me`): the frames at HBM
    /// offset `prefer` when they are free, anywhere otherwise; records it and returns its id
    /// and frames.
    fn alloc_in(
        &self,
        tx: &mut Tx<'_>,
        me: u32,
        device: u32,
        page: PageSize,
        count: u64,
        prefer: Option<u64>,
    ) -> Result<(u64, Runs)> {
        let wanted = prefer.and_then(|offset| {
            let len_bytes = count.checked_mul(page.bytes())?;
            let run = PhysRun { offset, len_bytes };
            (offset.checked_add(len_bytes)? <= self.config.hbm_bytes).then_some(run)
        });
        let runs = match wanted {
            // The frames this process just freed, still taken in its frame allocator.
            Some(run) if tx.cache.take_deferred(device, page, run) => smallvec![run],
            _ => {
                let frames = self.frames(tx.cache, device)?;
                match wanted {
                    Some(run) if frames.claim_pages(page, &[run]).is_ok() => smallvec![run],
                    _ => frames.alloc_pages(page, count).map_err(Error::from)?.into(),
                }
            }
        };
        let id = tx.cache.state.next_id + 1;
        if let Err(e) = tx.apply(Record::Alloc { id, device, page, runs: runs.clone(), holder: me }, true) {
            // The frames are taken in this process's allocator but recorded nowhere: rebuild.
            tx.cache.valid = false;
            return Err(e);
        }
        Ok((id, runs))
    }

    /// Allocates several pieces (page size, page count, preferred HBM offset: as
    /// [`Self::alloc`]) on `device` for this process in one change of the registry (one lock,
    /// one commit); all or nothing. Returns each piece's allocation id and frames.
    pub(crate) fn alloc_many(
        &self,
        device: u32,
        pieces: &[(PageSize, u64, Option<u64>)],
    ) -> Result<SmallVec<[(u64, Runs); 4]>> {
        let attempt = |tx: &mut Tx<'_>, me: u32| {
            let mut out: SmallVec<[(u64, Runs); 4]> = SmallVec::new();
            for &(page, count, prefer) in pieces {
                // A later piece failing after earlier ones were applied: `with` commits none of
                // them and reloads the cache from the file (nothing changed for the machine).
                out.push(self.alloc_in(tx, me, device, page, count, prefer)?);
            }
            Ok(out)
        };
        match self.with(false, attempt) {
            // Out of memory: a dead process may still hold frames; reap and try once more.
            Err(e) if e.kind() == ErrorKind::OutOfMemory => self.with(true, attempt),
            other => other,
        }
    }

    /// Drops one reference of this process to each of `ids`; frames no one holds are freed.
    pub(crate) fn release(&self, ids: &[u64]) -> Result<()> {
        self.with(false, |tx, me| tx.apply_release(Record::Release { pid: me, ids: Ids::from_slice(ids) }))
    }

    /// Free and total memory of `device`, across every process.
    pub(crate) fn memory_info(&self, device: u32) -> Result<MemoryInfo> {
        self.with(true, |tx, _| Ok(self.frames(tx.cache, device)?.info()))
    }

    /// Creates a share of `runs` (held by `ids`) under a fresh name.
    pub(crate) fn export(
        &self,
        kind: ShareKind,
        device: u32,
        page: PageSize,
        ids: Vec<u64>,
        runs: Vec<PhysRun>,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        self.with(false, |tx, me| {
            let mut next_id = tx.cache.state.next_id;
            let name = loop {
                let n = fresh_name(kind, next_id);
                next_id += 1;
                if tx.cache.state.shares.get(&n).is_none() {
                    break n;
                }
            };
            let share = Share::new(name, me, device, page, ids, runs);
            tx.apply(Record::Export { share, no_whitelist, next_id }, false)?;
            Ok(name)
        })
    }

    /// Drops the whitelist of a share of this process: any process may import it.
    pub(crate) fn disable_whitelist(&self, name: &ShareName) -> Result<()> {
        self.with(false, |tx, me| tx.apply(Record::DisableWhitelist { name: *name, pid: me }, false))
    }

    /// Adds `pids` to the whitelist of a share of this process.
    pub(crate) fn set_pids(&self, name: &ShareName, pids: &[u32]) -> Result<()> {
        self.with(false, |tx, me| {
            tx.apply(Record::SetPids { name: *name, pid: me, pids: pids.to_vec() }, false)
        })
    }

    /// The share called `name`.
    pub(crate) fn share(&self, name: &ShareName) -> Result<Share> {
        self.with(false, |tx, _| {
            tx.cache.state.shares.get(name).cloned().ok_or_else(|| ipc_error(IpcError::NotFound))
        })
    }

    /// Imports `name` into this process: checks the whitelist against this process's host pid
    /// and takes a reference to the memory.
    pub(crate) fn import(&self, name: &ShareName) -> Result<Share> {
        self.with(false, |tx, me| {
            tx.apply(Record::Import { name: *name, pid: me }, false)?;
            tx.cache.state.shares.get(name).cloned().ok_or(internal("imported share vanished"))
        })
    }

    /// Drops this process's import of `name` (its memory references go with [`Self::release`]).
    pub(crate) fn close_import(&self, name: &ShareName) -> Result<()> {
        self.with(false, |tx, me| {
            // Closing what was not imported changes nothing and is not an error here.
            let _ = tx.apply(Record::CloseImport { name: *name, pid: me }, false);
            Ok(())
        })
    }

    /// Destroys a share of this process.
    pub(crate) fn destroy(&self, name: &ShareName) -> Result<()> {
        self.with(false, |tx, me| tx.apply(Record::Destroy { name: *name, pid: me }, false))
    }

    /// Leaves the machine: drops everything this process holds; the last one out removes the
    /// machine's files.
    pub(crate) fn detach(&self) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(held_file) = self.file.lock_file() else { return };
        let held = self.file.lock(self.me);
        self.leave(&held_file, &held, &mut cache);
    }

    fn leave(&self, held_file: &FileLocked<'_>, held: &Locked<'_>, cache: &mut MutexGuard<'_, Cache>) {
        if self.refresh(held, cache).is_err() {
            return;
        }
        let mut tx = Tx { cache, records: Vec::new(), clear: Vec::new() };
        if self.reap_dead(&mut tx).is_err() || tx.apply(Record::Reap { pid: self.me }, false).is_err() {
            return;
        }
        let (records, clear) = (std::mem::take(&mut tx.records), std::mem::take(&mut tx.clear));
        if cache.state.procs.is_empty() {
            for d in 0..self.config.devices {
                crate::sys::shm_unlink(&hbm_name(&self.config.instance, d));
            }
            self.file.unlink(held_file);
            // Leave a header no one will read as live.
            cache.state = State::default();
            let _ = self.compact(held, cache);
        } else {
            self.clear_frames(cache, &clear);
            let _ = self.commit(held, cache, &records);
        }
        cache.drop_frames();
        cache.valid = false;
    }

    fn leave_at_exit(&self) {
        let Ok(mut cache) = self.cache.try_lock() else { return };
        let Some(held_file) = self.file.try_lock_file() else { return };
        let Some(held) = self.file.try_lock(self.me) else { return };
        self.leave(&held_file, &held, &mut cache);
    }
}

#[derive(Clone, Copy, Debug)]
struct Header {
    generation: u64,
    active: u64,
    snap_len: u64,
    snap_gen: u64,
    log_len: u64,
    sizes: [u64; 4],
    /// The machine's window layout: the shift of its VA windows from the driver's addresses
    /// (`hal::layout`), the same in every process of the machine (0 in files written before).
    shift: u64,
}
/// A name no one can guess from another share's: the pid, a counter and the clock, mixed.
fn fresh_name(kind: ShareKind, counter: u64) -> ShareName {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 40) ^ counter.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let text = match kind {
        // Below 2^31, as a driver's share ids are (the davinci fake reports them as `int`).
        ShareKind::Handle => format!("{:016x}", (next() & 0x7FFF_FFFF) | 1),
        ShareKind::Key => format!("aclrs-ipc-{:016x}{:016x}{:016x}", next(), next(), next()),
    };
    ShareName::try_new(text.as_bytes())
        .unwrap_or_else(|| ShareName::try_new(b"aclrs").unwrap_or_else(|| unreachable!()))
}

fn ipc_error(e: IpcError) -> Error {
    match e {
        IpcError::NotFound => {
            Error::new(ErrorKind::InvalidHandle, "no such share (never exported, or destroyed)")
        }
        IpcError::NotExporter => {
            Error::new(ErrorKind::PermissionDenied, "only the exporting process may do this")
        }
        IpcError::NotWhitelisted => {
            Error::new(ErrorKind::PermissionDenied, "this process is not on the share's whitelist")
        }
        IpcError::SameProcess => {
            Error::new(ErrorKind::PermissionDenied, "a process cannot import its own export")
        }
        IpcError::AlreadyExported => {
            Error::new(ErrorKind::Busy, "this memory is already exported by this process")
        }
        IpcError::WhitelistDisabled => Error::new(
            ErrorKind::InvalidArgument,
            "the share has no whitelist (DISABLE_PID_VALIDATION) or already has pids",
        ),
        IpcError::TooManyPids => {
            Error::new(ErrorKind::InvalidArgument, "the whitelist would exceed 65535 pids")
        }
        IpcError::NotImported => {
            Error::new(ErrorKind::InvalidHandle, "this process did not import the share")
        }
        IpcError::Corrupt => internal("the device registry is corrupt"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_encoding_round_trips() {
        let mut s = State::default();
        s.procs.insert(5);
        s.devices_up.insert(1);
        s.next_id = 9;
        s.allocs.insert(
            3,
            Alloc {
                device: 1,
                page: PageSize::Huge,
                runs: smallvec![PhysRun { offset: 0, len_bytes: 2 << 20 }],
                holders: smallvec![5, 6],
                owner: 0,
            },
        );
        s.dirty.insert((1, 4 << 20), (8192, 5));
        assert_eq!(State::decode(&s.encode()).unwrap(), s);
        let mut freed = SmallVec::new();
        s.reap(5, &mut freed);
        assert_eq!(s.allocs[&3].holders.as_slice(), [6]);
        assert!(freed.is_empty());
        s.reap(6, &mut freed);
        assert!(s.allocs.is_empty());
        assert_eq!(
            freed.as_slice(),
            [(1, PageSize::Huge, smallvec![PhysRun { offset: 0, len_bytes: 2 << 20 }])]
        );
    }

    fn name(s: &str) -> ShareName {
        ShareName::try_new(s.as_bytes()).unwrap()
    }

    #[test]
    fn records_round_trip_and_replay_to_the_same_state() {
        let run = |o: u64| -> Runs { smallvec![PhysRun { offset: o, len_bytes: 8192 }] };
        let records = vec![
            Record::Attach { pid: 5 },
            Record::Attach { pid: 6 },
            Record::DeviceUp { device: 0 },
            Record::Alloc { id: 1, device: 0, page: PageSize::Normal, runs: run(0), holder: 5 },
            Record::Alloc { id: 2, device: 0, page: PageSize::Normal, runs: run(8192), holder: 6 },
            Record::Export {
                share: Share::new(name("k"), 5, 0, PageSize::Normal, vec![1], run(0).into_vec()),
                no_whitelist: false,
                next_id: 7,
            },
            Record::SetPids { name: name("k"), pid: 5, pids: vec![6] },
            Record::Import { name: name("k"), pid: 6 },
            Record::CloseImport { name: name("k"), pid: 6 },
            Record::Destroy { name: name("k"), pid: 5 },
            Record::Release { pid: 5, ids: smallvec![1] },
            Record::Reap { pid: 6 },
            Record::DisableWhitelist { name: name("gone"), pid: 5 },
        ];
        let mut bytes = Vec::new();
        records.iter().for_each(|r| r.encode(&mut bytes));
        assert_eq!(Record::decode_all(&bytes).unwrap(), records);
        // A torn tail (a writer killed mid-record) is never committed; a reader given one
        // reports it instead of guessing.
        assert!(Record::decode_all(&bytes[..bytes.len() - 1]).is_err());

        let mut s = State::default();
        let mut freed = Vec::new();
        for r in &records[..records.len() - 1] {
            let e = s.apply(r).unwrap();
            assert!(e.clear.is_empty(), "fresh frames need no clearing");
            freed.extend(e.freed);
        }
        // The last record fails (no such share) and changes nothing.
        let before = s.clone();
        assert!(s.apply(&records[records.len() - 1]).is_err());
        assert_eq!(s, before);
        assert_eq!(s.procs, BTreeSet::from([5]));
        assert!(s.allocs.is_empty() && s.shares.is_empty());
        assert_eq!(s.next_id, 7);
        // Alloc 1 was imported by 6 and closed; 5's release freed it; 6's reap freed alloc 2.
        assert_eq!(freed, vec![(0, PageSize::Normal, run(0)), (0, PageSize::Normal, run(8192))]);
        // Both written by two processes or by 6: not cleared yet, owner unknown / 6.
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (8192, 0)), ((0, 8192), (8192, 6))]));
    }

    #[test]
    fn frames_are_cleared_only_when_they_change_process() {
        let mut s = State::default();
        let alloc = |id: u64, offset: u64, len_bytes: u64, holder: u32| Record::Alloc {
            id,
            device: 0,
            page: PageSize::Normal,
            runs: smallvec![PhysRun { offset, len_bytes }],
            holder,
        };
        let free = |pid: u32, id: u64| Record::Release { pid, ids: smallvec![id] };
        for r in [Record::Attach { pid: 5 }, Record::Attach { pid: 6 }, alloc(1, 0, 16384, 5), free(5, 1)] {
            assert!(s.apply(&r).unwrap().clear.is_empty());
        }
        // Allocated and freed by one process: its frames stay recorded as its own.
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (16384, 5))]));
        // The same process takes its own frames back: nothing to clear, nothing changes, and
        // its free changes nothing either (the steady state of one process's pairs).
        assert!(s.apply(&alloc(2, 4096, 4096, 5)).unwrap().clear.is_empty());
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (16384, 5))]));
        // Another process takes frames across 5's range and some fresh ones: only 5's part is
        // cleared, what it does not take stays 5's, and the run is 6's now.
        let e = s.apply(&alloc(3, 12288, 8192, 6)).unwrap();
        assert_eq!(e.clear.as_slice(), [(0, 12288, 4096)]);
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (12288, 5)), ((0, 12288), (8192, 6))]));
        s.apply(&free(5, 2)).unwrap();
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (12288, 5)), ((0, 12288), (8192, 6))]));
        // 6 takes back what it holds and frees: nothing to clear.
        s.apply(&free(6, 3)).unwrap();
        assert!(s.apply(&alloc(5, 12288, 4096, 6)).unwrap().clear.is_empty());
        // Frames of one owner taken next to its range merge with it.
        assert!(s.apply(&alloc(6, 20480, 4096, 6)).unwrap().clear.is_empty());
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (12288, 5)), ((0, 12288), (12288, 6))]));
        s.apply(&free(6, 5)).unwrap();
        s.apply(&free(6, 6)).unwrap();
        // A new process that reuses a dead process's pid is not that process.
        s.apply(&Record::Reap { pid: 5 }).unwrap();
        s.apply(&Record::Attach { pid: 5 }).unwrap();
        assert_eq!(s.apply(&alloc(4, 0, 4096, 5)).unwrap().clear.as_slice(), [(0, 0, 4096)]);
        assert_eq!(State::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn one_process_near_allocations_are_one_written_range() {
        const MIB: u64 = 1 << 20;
        let alloc = |id: u64, offset: u64, holder: u32| Record::Alloc {
            id,
            device: 0,
            page: PageSize::Normal,
            runs: smallvec![PhysRun { offset, len_bytes: 8192 }],
            holder,
        };
        let mut s = State::default();
        for r in [Record::Attach { pid: 5 }, Record::Attach { pid: 6 }, alloc(1, 0, 5), alloc(2, MIB, 5)] {
            assert!(s.apply(&r).unwrap().clear.is_empty());
        }
        // Within DIRTY_GAP of each other: one range, the clean frames between counted as 5's.
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (MIB + 8192, 5))]));
        // Farther away: a range of its own.
        assert!(s.apply(&alloc(3, 8 * MIB, 5)).unwrap().clear.is_empty());
        assert_eq!(s.dirty.len(), 2);
        // Another process taking frames of the gap clears them (zeros: harmless) and splits the
        // range; 5 taking back its own frames clears nothing.
        assert_eq!(s.apply(&alloc(4, MIB / 2, 6)).unwrap().clear.as_slice(), [(0, MIB / 2, 8192)]);
        assert!(s.apply(&Record::Release { pid: 5, ids: smallvec![2] }).unwrap().clear.is_empty());
        assert!(s.apply(&alloc(5, MIB, 5)).unwrap().clear.is_empty());
        assert_eq!(
            s.dirty,
            BTreeMap::from([
                ((0, 0), (MIB / 2, 5)),
                ((0, MIB / 2), (8192, 6)),
                ((0, MIB / 2 + 8192), (MIB / 2, 5)),
                ((0, 8 * MIB), (8192, 5)),
            ])
        );
        assert_eq!(State::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn imported_frames_are_cleared_for_every_next_taker() {
        let run = |o: u64| -> Runs { smallvec![PhysRun { offset: o, len_bytes: 8192 }] };
        let mut s = State::default();
        for r in [
            Record::Attach { pid: 5 },
            Record::Attach { pid: 6 },
            Record::Alloc { id: 1, device: 0, page: PageSize::Normal, runs: run(0), holder: 5 },
            Record::Export {
                share: Share::new(name("k"), 5, 0, PageSize::Normal, vec![1], run(0).into_vec()),
                no_whitelist: true,
                next_id: 2,
            },
            Record::Import { name: name("k"), pid: 6 },
            Record::Release { pid: 6, ids: smallvec![1] },
            Record::Release { pid: 5, ids: smallvec![1] },
        ] {
            assert!(s.apply(&r).unwrap().clear.is_empty());
        }
        // Written by two processes: unknown owner, so even the allocating process gets them
        // cleared.
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (8192, 0))]));
        let again = Record::Alloc { id: 3, device: 0, page: PageSize::Normal, runs: run(0), holder: 5 };
        assert_eq!(s.apply(&again).unwrap().clear.as_slice(), [(0, 0, 8192)]);
        assert_eq!(s.dirty, BTreeMap::from([((0, 0), (8192, 5))]));
    }

    #[test]
    fn a_release_taken_back_as_it_is_keeps_every_figure_exact() {
        const MIB: u64 = 1 << 20;
        let instance = format!("registry-defer-test-{}", std::process::id());
        let config = SimConfig {
            instance,
            hbm_bytes: 64 * MIB,
            huge_budget_bytes: 64 * MIB,
            giant_budget_bytes: 0,
            ..SimConfig::default()
        };
        let reg = Registry::attach(&config).unwrap();
        let total = reg.memory_info(0).unwrap();
        assert_eq!(total.free_bytes, 64 * MIB);
        let at = |offset: u64, len_bytes: u64| -> Runs { smallvec![PhysRun { offset, len_bytes }] };
        let (id, runs) = reg.alloc(0, PageSize::Normal, 256, Some(8 * MIB)).unwrap();
        assert_eq!(runs, at(8 * MIB, MIB));
        reg.release(&[id]).unwrap();
        // Deferred in this process's frame allocator, free for every reader of the state.
        assert!(!reg.cache.lock().unwrap().deferred.is_empty());
        assert_eq!(reg.memory_info(0).unwrap(), total, "a memory query settles the deferred frames");
        assert!(reg.cache.lock().unwrap().deferred.is_empty());
        // Taken back as they are: the same frames.
        let (id, _) = reg.alloc(0, PageSize::Normal, 256, Some(8 * MIB)).unwrap();
        reg.release(&[id]).unwrap();
        let (id, runs) = reg.alloc(0, PageSize::Normal, 256, Some(8 * MIB)).unwrap();
        assert_eq!(runs, at(8 * MIB, MIB));
        assert!(reg.cache.lock().unwrap().deferred.is_empty());
        assert_eq!(reg.memory_info(0).unwrap().free_bytes, 63 * MIB);
        reg.release(&[id]).unwrap();
        // Frames overlapping the deferred ones but not exactly them: settled first, then claimed.
        let (half, runs) = reg.alloc(0, PageSize::Normal, 256, Some(8 * MIB + MIB / 2)).unwrap();
        assert_eq!(runs, at(8 * MIB + MIB / 2, MIB));
        // Huge pages of the deferred frames' range, then a whole-device allocation: every frame
        // but the held MiB, none lost to a deferral.
        reg.release(&[half]).unwrap();
        let (huge, runs) = reg.alloc(0, PageSize::Huge, 1, Some(8 * MIB)).unwrap();
        assert_eq!(runs, at(8 * MIB, 2 * MIB));
        reg.release(&[huge]).unwrap();
        let (all, _) = reg.alloc(0, PageSize::Normal, 64 * 256, None).unwrap();
        assert_eq!(reg.memory_info(0).unwrap().free_bytes, 0);
        reg.release(&[all]).unwrap();
        assert_eq!(reg.memory_info(0).unwrap(), total);
        reg.detach();
    }

    #[test]
    fn the_log_is_compacted_at_its_bound_and_reloads_to_the_same_state() {
        const MIB: u64 = 1 << 20;
        let instance = format!("registry-compact-test-{}", std::process::id());
        let config = SimConfig {
            instance,
            hbm_bytes: 64 * MIB,
            huge_budget_bytes: 0,
            giant_budget_bytes: 0,
            ..SimConfig::default()
        };
        let reg = Registry::attach(&config).unwrap();
        // Enough live allocations that the snapshot's multiple, not LOG_MIN_BYTES, bounds the
        // log: the bound then grows with the state, so a compaction's cost is spread over as
        // many changes.
        let live: Vec<u64> = (0..6000).map(|_| reg.alloc(0, PageSize::Normal, 1, None).unwrap().0).collect();
        let (mut compactions, mut longest, mut bound) = (0, 0, 0);
        let mut gen = reg.cache.lock().unwrap().snap_gen;
        for _ in 0..200_000 {
            let (id, _) = reg.alloc(0, PageSize::Normal, 2, None).unwrap();
            reg.release(&[id]).unwrap();
            let c = reg.cache.lock().unwrap();
            if c.snap_gen != gen {
                gen = c.snap_gen;
                compactions += 1;
                if compactions == 3 {
                    break;
                }
            }
            bound = LOG_MIN_BYTES.max(LOG_PER_SNAP * c.snap_len);
            longest = longest.max(c.log_pos);
            assert!(c.log_pos <= bound, "log {} past its bound {bound}", c.log_pos);
        }
        assert_eq!(compactions, 3, "the log was never compacted");
        assert!(
            bound > LOG_MIN_BYTES,
            "the snapshot ({bound} / {LOG_PER_SNAP}) is too short to bound the log"
        );
        assert!(longest > bound / 2, "the log was compacted long before its bound ({longest} of {bound})");
        // A process that reloads from the file (snapshot plus log) sees the state this one has.
        let before = reg.cache.lock().unwrap().state.clone();
        let info = reg.memory_info(0).unwrap();
        reg.cache.lock().unwrap().valid = false;
        assert_eq!(reg.memory_info(0).unwrap(), info);
        assert_eq!(reg.cache.lock().unwrap().state, before);
        assert_eq!(info.free_bytes, 64 * MIB - 6000 * 4096);
        reg.release(&live).unwrap();
        assert_eq!(reg.memory_info(0).unwrap().free_bytes, 64 * MIB);
        reg.detach();
    }

    #[test]
    fn fresh_names_have_their_kind_shape() {
        let h = fresh_name(ShareKind::Handle, 1);
        assert_eq!(h.as_bytes().len(), 16);
        let v = u64::from_str_radix(h.as_str(), 16).unwrap();
        assert!(v != 0 && v < 1 << 31, "{v:#x}");
        let k = fresh_name(ShareKind::Key, 1);
        assert!(k.as_bytes().len() <= 64 && k.as_str().starts_with("aclrs-ipc-"));
        assert_ne!(fresh_name(ShareKind::Key, 1), fresh_name(ShareKind::Key, 2));
    }
}
