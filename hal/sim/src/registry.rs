//! The device registry: the firmware state every process attached to one simulated machine
//! shares — which frames of each device's HBM are allocated to whom, and the IPC export table.
//!
//! # Design
//!
//! A real NPU keeps frame allocation and export tables in its driver, which every process
//! reaches through the kernel. The software NPU has no kernel of its own, so it keeps that
//! state in a registry file, `/dev/shm/aclrs.<instance>.registry`, that every attached process
//! reads and writes under a whole-file `flock` (the registry mutex):
//!
//! - The state is a list of allocations (device, page size, frame runs, and the processes
//!   holding a reference: the allocating one, plus one per import) and an [`ExportTable`].
//!   Each process caches it with the file's generation number and rebuilds its per-device
//!   [`FrameAllocator`]s from the allocation list ([`FrameAllocator::claim_pages`]) only when
//!   another process changed the file since, so a process alone on a machine pays one lock and
//!   one header read per change and never rebuilds.
//! - Writes are crash safe: the new state goes to the inactive one of two areas, then one small
//!   header write flips to it. A process killed mid-write leaves the previous state.
//! - Every attached process holds an OFD lock on one byte of the file named after its pid (its
//!   liveness mark). The kernel drops it when the process dies, however it dies. Every registry
//!   operation first reaps processes whose mark is gone: their references, exports and imports
//!   are dropped and frames no one holds any more are free again, so `aclrtGetMemInfo` in a
//!   survivor shows a killed process's memory back.
//! - Pids come from the operating system (`getpid`), never from a caller, so the whitelist of an
//!   export is checked against the importing process's real id.
//! - The last process to leave removes the registry and HBM objects; one that finds no live
//!   process on attach starts a fresh machine (what a crashed run left is dropped).
//!
//! # Limits
//!
//! All processes of one simulated machine must use the same `ACLRS_SIM_*` sizes (attach fails
//! otherwise). Every change rewrites the whole state, so a change costs time linear in the
//! number of live allocations of the machine (some microseconds per thousand). There is no
//! privilege boundary between processes of one user: they could all write the files directly,
//! as any user-space stand-in for a driver allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use hal::{Error, ErrorKind, MemoryInfo, PageSize, Result, ShareKind, ShareName};
use mm::ipc::{page_of_shift, ExportTable, IpcError, Reader, Share, Writer};
use mm::phys::{FrameAllocator, PhysConfig, PhysRun};

use crate::config::SimConfig;
use crate::sys::shared::{Locked, RegistryFile};

const MAGIC: u64 = u64::from_le_bytes(*b"ACLRSREG");
const VERSION: u64 = 1;
const HEADER_BYTES: usize = 96;
const AREA_BASE: u64 = 4096;
/// Room for one encoded state; the file is sparse, so this costs nothing until used.
const AREA_BYTES: u64 = 1 << 32;

/// One allocation of frames on one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Alloc {
    pub(crate) device: u32,
    pub(crate) page: PageSize,
    pub(crate) runs: Vec<PhysRun>,
    /// One entry per reference: the allocating process, and each import.
    pub(crate) holders: Vec<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    procs: BTreeSet<u32>,
    /// Devices whose HBM object was initialised since the machine started.
    devices_up: BTreeSet<u32>,
    next_id: u64,
    allocs: BTreeMap<u64, Alloc>,
    shares: ExportTable,
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
        for (&id, a) in &self.allocs {
            w.u64(id);
            w.u32(a.device);
            w.u32(a.page.shift());
            w.u64(a.runs.len() as u64);
            a.runs.iter().for_each(|r| {
                w.u64(r.offset);
                w.u64(r.len_bytes);
            });
            w.u64(a.holders.len() as u64);
            a.holders.iter().for_each(|&h| w.u32(h));
        }
        self.shares.encode(&mut out);
        out
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Self, IpcError> {
        let mut r = Reader(bytes);
        let procs = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
        let devices_up = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
        let next_id = r.u64()?;
        let mut allocs = BTreeMap::new();
        for _ in 0..r.u64()? {
            let id = r.u64()?;
            let device = r.u32()?;
            let page = page_of_shift(r.u32()?)?;
            let runs = (0..r.u64()?)
                .map(|_| Ok(PhysRun { offset: r.u64()?, len_bytes: r.u64()? }))
                .collect::<std::result::Result<Vec<_>, IpcError>>()?;
            let holders = (0..r.u64()?).map(|_| r.u32()).collect::<std::result::Result<_, _>>()?;
            allocs.insert(id, Alloc { device, page, runs, holders });
        }
        let shares = ExportTable::decode(&mut r)?;
        Ok(Self { procs, devices_up, next_id, allocs, shares })
    }

    /// Drops every reference `pid` holds, its exports and its imports, and `pid` itself.
    fn reap(&mut self, pid: u32) {
        self.procs.remove(&pid);
        self.shares.reap(pid);
        for a in self.allocs.values_mut() {
            a.holders.retain(|&h| h != pid);
        }
        self.allocs.retain(|_, a| !a.holders.is_empty());
    }
}

#[derive(Debug)]
struct Cache {
    generation: u64,
    active: u64,
    state: State,
    frames: BTreeMap<u32, FrameAllocator>,
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

impl Registry {
    /// Attaches this process to the machine `config.instance`, starting it if no live process
    /// is attached.
    pub(crate) fn attach(config: &SimConfig) -> std::io::Result<Arc<Self>> {
        let path = PathBuf::from(format!("/dev/shm/aclrs.{}.registry", config.instance));
        let me = std::process::id();
        let mut file = RegistryFile::open(&path)?;
        // The last process of a machine removes the file; if that happened while we opened it,
        // open the new one.
        for _ in 0..100 {
            let current = file.lock().map(|held| file.is_current(&held))?;
            if current {
                break;
            }
            file = RegistryFile::open(&path)?;
        }
        file.mark_alive(me)?;
        let this = Arc::new(Self {
            file,
            cache: Mutex::new(Cache {
                generation: 0,
                active: 0,
                state: State::default(),
                frames: BTreeMap::new(),
            }),
            me,
            config: config.clone(),
        });
        {
            let held = this.file.lock()?;
            if !this.file.is_current(&held) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the machine's registry was replaced while attaching",
                ));
            }
            let mut cache = this.cache.lock().unwrap_or_else(|p| p.into_inner());
            let header = this.read_header(&held)?;
            let loaded = match header {
                Some(h) => this.load(&held, &h).ok(),
                None => None,
            };
            let alive =
                loaded.as_ref().is_some_and(|s| s.procs.iter().any(|&p| p != me && this.file.is_alive(p)));
            let (generation, active) = header.map_or((0, 0), |h| (h.generation, h.active));
            let mut state = match loaded {
                Some(s) if alive => {
                    if header.is_some_and(|h| h.sizes != this.sizes()) {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            "another process runs this machine with other ACLRS_SIM_DEVICES/HBM/HUGE2M/HUGE1G settings",
                        ));
                    }
                    s
                }
                // No live process: a fresh machine (whatever a crashed run left is dropped).
                _ => State::default(),
            };
            state.procs.insert(me);
            cache.generation = generation;
            cache.active = active;
            cache.state = state;
            cache.frames.clear();
            this.store(&held, &mut cache)?;
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
        self.file.read_at(held, &mut buf, 0)?;
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
            len: word(4),
            sizes: [word(5), word(6), word(7), word(8)],
        }))
    }

    fn load(&self, held: &Locked<'_>, h: &Header) -> std::io::Result<State> {
        let len = usize::try_from(h.len.min(AREA_BYTES)).map_err(|_| std::io::ErrorKind::InvalidData)?;
        let mut buf = vec![0u8; len];
        self.file.read_at(held, &mut buf, AREA_BASE + h.active * AREA_BYTES)?;
        State::decode(&buf).map_err(|_| std::io::ErrorKind::InvalidData.into())
    }

    /// Writes the cached state to the inactive area, then flips the header to it.
    fn store(&self, held: &Locked<'_>, cache: &mut Cache) -> std::io::Result<()> {
        let bytes = cache.state.encode();
        if bytes.len() as u64 > AREA_BYTES {
            return Err(std::io::ErrorKind::OutOfMemory.into());
        }
        let next = cache.active ^ 1;
        self.file.write_at(held, &bytes, AREA_BASE + next * AREA_BYTES)?;
        let generation = cache.generation + 1;
        let mut head = Vec::with_capacity(HEADER_BYTES);
        let sizes = self.sizes();
        for w in
            [MAGIC, VERSION, generation, next, bytes.len() as u64, sizes[0], sizes[1], sizes[2], sizes[3]]
        {
            head.extend_from_slice(&w.to_le_bytes());
        }
        self.file.write_at(held, &head, 0)?;
        cache.generation = generation;
        cache.active = next;
        Ok(())
    }

    /// Runs `f` on the current shared state under the registry lock; writes the state back when
    /// `f` says it changed it (or dead processes were reaped).
    ///
    /// `f` must be all or nothing: on error it must leave the state as it found it.
    fn with<R>(&self, f: impl FnOnce(&mut Cache, u32) -> Result<(R, bool)>) -> Result<R> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let held = self.file.lock().map_err(|_| internal("cannot lock the device registry"))?;
        self.refresh(&held, &mut cache)?;
        let reaped = self.reap_dead(&mut cache);
        let out = f(&mut cache, self.me);
        let changed = match &out {
            Ok((_, c)) => *c || reaped,
            Err(_) => reaped,
        };
        if changed {
            self.store(&held, &mut cache).map_err(|_| internal("cannot write the device registry"))?;
        }
        out.map(|(r, _)| r)
    }

    fn refresh(&self, held: &Locked<'_>, cache: &mut MutexGuard<'_, Cache>) -> Result<()> {
        let h = self
            .read_header(held)
            .map_err(|_| internal("cannot read the device registry"))?
            .ok_or(internal("the device registry was removed or overwritten"))?;
        if h.generation != cache.generation {
            cache.state = self.load(held, &h).map_err(|_| internal("the device registry is corrupt"))?;
            cache.generation = h.generation;
            cache.active = h.active;
            cache.frames.clear();
        }
        Ok(())
    }

    fn reap_dead(&self, cache: &mut Cache) -> bool {
        let dead: Vec<u32> =
            cache.state.procs.iter().copied().filter(|&p| p != self.me && !self.file.is_alive(p)).collect();
        for &p in &dead {
            cache.state.reap(p);
        }
        if !dead.is_empty() {
            cache.frames.clear();
        }
        !dead.is_empty()
    }

    fn frames<'c>(&self, cache: &'c mut Cache, device: u32) -> Result<&'c mut FrameAllocator> {
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
        self.with(|c, _| {
            let first = c.state.devices_up.insert(device);
            Ok((first, first))
        })
    }

    /// Allocates `count` pages of `page` on `device` for this process.
    pub(crate) fn alloc(&self, device: u32, page: PageSize, count: u64) -> Result<(u64, Vec<PhysRun>)> {
        self.with(|c, me| {
            let runs = self.frames(c, device)?.alloc_pages(page, count).map_err(Error::from)?;
            c.state.next_id += 1;
            let id = c.state.next_id;
            c.state.allocs.insert(id, Alloc { device, page, runs: runs.clone(), holders: vec![me] });
            Ok(((id, runs), true))
        })
    }

    /// Drops one reference of this process to each of `ids`; frames no one holds are freed.
    pub(crate) fn release(&self, ids: &[u64]) -> Result<()> {
        self.with(|c, me| {
            for id in ids {
                let Some(a) = c.state.allocs.get(id) else { continue };
                if !a.holders.contains(&me) {
                    continue;
                }
                let mut a = a.clone();
                if let Some(i) = a.holders.iter().position(|&h| h == me) {
                    a.holders.remove(i);
                }
                if a.holders.is_empty() {
                    self.frames(c, a.device)?
                        .free_pages(a.page, &a.runs)
                        .map_err(|_| internal("frame record corrupt"))?;
                    c.state.allocs.remove(id);
                } else {
                    c.state.allocs.insert(*id, a);
                }
            }
            Ok(((), true))
        })
    }

    /// Free and total memory of `device`, across every process.
    pub(crate) fn memory_info(&self, device: u32) -> Result<MemoryInfo> {
        self.with(|c, _| Ok((self.frames(c, device)?.info(), false)))
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
        self.with(|c, me| {
            if ids.iter().any(|id| c.state.allocs.get(id).is_none_or(|a| !a.holders.contains(&me))) {
                return Err(Error::new(
                    ErrorKind::InvalidHandle,
                    "memory to export is not held by this process",
                ));
            }
            let name = loop {
                let n = fresh_name(kind, c.state.next_id);
                c.state.next_id += 1;
                if c.state.shares.get(&n).is_none() {
                    break n;
                }
            };
            let share = Share::new(name, me, device, page, ids.clone(), runs.clone());
            c.state.shares.export(share).map_err(ipc_error)?;
            if no_whitelist {
                c.state.shares.disable_whitelist(&name, me).map_err(ipc_error)?;
            }
            Ok((name, true))
        })
    }

    /// Drops the whitelist of a share of this process: any process may import it.
    pub(crate) fn disable_whitelist(&self, name: &ShareName) -> Result<()> {
        self.with(|c, me| {
            c.state.shares.disable_whitelist(name, me).map_err(ipc_error)?;
            Ok(((), true))
        })
    }

    /// Adds `pids` to the whitelist of a share of this process.
    pub(crate) fn set_pids(&self, name: &ShareName, pids: &[u32]) -> Result<()> {
        self.with(|c, me| {
            c.state.shares.set_pids(name, me, pids).map_err(ipc_error)?;
            Ok(((), true))
        })
    }

    /// The share called `name`.
    pub(crate) fn share(&self, name: &ShareName) -> Result<Share> {
        self.with(|c, _| {
            Ok((c.state.shares.get(name).cloned().ok_or_else(|| ipc_error(IpcError::NotFound))?, false))
        })
    }

    /// Imports `name` into this process: checks the whitelist against this process's pid and
    /// takes a reference to the memory.
    pub(crate) fn import(&self, name: &ShareName) -> Result<Share> {
        self.with(|c, me| {
            let share = c.state.shares.get(name).cloned().ok_or_else(|| ipc_error(IpcError::NotFound))?;
            if share.allocs.iter().any(|id| !c.state.allocs.contains_key(id)) {
                return Err(Error::new(ErrorKind::InvalidHandle, "the exported memory was freed"));
            }
            c.state.shares.import(name, me).map_err(ipc_error)?;
            for id in &share.allocs {
                if let Some(a) = c.state.allocs.get_mut(id) {
                    a.holders.push(me);
                }
            }
            Ok((share, true))
        })
    }

    /// Drops this process's import of `name` (its memory references go with [`Self::release`]).
    pub(crate) fn close_import(&self, name: &ShareName) -> Result<()> {
        self.with(|c, me| Ok(((), c.state.shares.close_import(name, me).is_ok())))
    }

    /// Destroys a share of this process.
    pub(crate) fn destroy(&self, name: &ShareName) -> Result<()> {
        self.with(|c, me| {
            c.state.shares.destroy(name, me).map_err(ipc_error)?;
            Ok(((), true))
        })
    }

    /// Leaves the machine: drops everything this process holds; the last one out removes the
    /// machine's files.
    pub(crate) fn detach(&self) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let Ok(held) = self.file.lock() else { return };
        self.leave(&held, &mut cache);
    }

    fn leave(&self, held: &Locked<'_>, cache: &mut MutexGuard<'_, Cache>) {
        if self.refresh(held, cache).is_err() {
            return;
        }
        self.reap_dead(cache);
        cache.state.reap(self.me);
        cache.frames.clear();
        if cache.state.procs.is_empty() {
            for d in 0..self.config.devices {
                crate::sys::shm_unlink(&hbm_name(&self.config.instance, d));
            }
            self.file.unlink(held);
            // Leave a header no one will read as live.
            cache.state = State::default();
        }
        let _ = self.store(held, cache);
    }

    fn leave_at_exit(&self) {
        let Ok(mut cache) = self.cache.try_lock() else { return };
        let Some(held) = self.file.try_lock() else { return };
        self.leave(&held, &mut cache);
    }
}

#[derive(Clone, Copy, Debug)]
struct Header {
    generation: u64,
    active: u64,
    len: u64,
    sizes: [u64; 4],
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
                runs: vec![PhysRun { offset: 0, len_bytes: 2 << 20 }],
                holders: vec![5, 6],
            },
        );
        assert_eq!(State::decode(&s.encode()).unwrap(), s);
        s.reap(5);
        assert_eq!(s.allocs[&3].holders, vec![6]);
        s.reap(6);
        assert!(s.allocs.is_empty());
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
