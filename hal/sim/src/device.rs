//! One simulated device as this process sees it: its HBM object, its VA window, its slice of
//! the stream-ordered pool window, and the record of what is backed or mapped where.
//!
//! Frames come from the machine's [`Registry`], which every attached process shares (so they
//! share capacity and bytes); this module decides which of them back which VA of this
//! process. It asks for the frames whose HBM offset equals the VA window offset being backed,
//! so that adjacent allocations are adjacent in the HBM object too: the window maps the object
//! at identity offsets, inaccessible, and backing such a range only makes it accessible (one
//! `mprotect`), which keeps neighbouring allocations one kernel mapping (a process holds far
//! fewer mappings than allocations; `vm.max_map_count` is not the limit on live allocations).
//! A range backed once keeps a mapping mark, so that backing it again splits and joins no
//! kernel mapping (see `sys/marks.rs`).
//! The pool slice ([`hal::layout::pool_slice_base`]) has no identity mapping: each backing
//! there maps its frames of the same HBM object (pool pages are 2 MiB; a run of adjacent pages
//! backed in one `back_many` is one mapping where its frames are contiguous, and each page is
//! still unbacked alone).
//! It must not run tasks (that is [`crate::scheduler`]) and must not touch memory bytes itself
//! (that is [`crate::sys`] through [`crate::dma`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hal::{
    BackRequest, DeviceAddr, DeviceInfo, Error, ErrorKind, MemAttr, MemoryInfo, PageSize, PhysHandle, Result,
    VaRange,
};
use hal::{ShareInfo, ShareKind, ShareName};
use mm::phys::PhysRun;
use smallvec::SmallVec;

use crate::registry::{Ids, IntMap, Registry, Runs};
use crate::sys::{ShmObject, Window};

/// A range backed by [`hal::MemoryBacking::back`]: it owns its frames.
#[derive(Debug)]
struct Backing {
    len_bytes: u64,
    page_size: PageSize,
    runs: Runs,
    /// The registry allocation holding the frames.
    id: u64,
}

/// A physical allocation made by [`hal::PhysicalMemory::alloc_physical`].
#[derive(Debug)]
struct PhysAlloc {
    page_size: PageSize,
    len_bytes: u64,
    runs: Vec<PhysRun>,
    writable: bool,
    map_count: u32,
    /// The registry allocations holding the frames (one for a local allocation, the
    /// exporter's for an import).
    ids: Vec<u64>,
    /// The share it was imported from.
    imported: Option<ShareName>,
    /// Shares made of it ([`Device::export_physical`]); they end when it is freed.
    exports: Vec<ShareName>,
    /// The HBM object of the exporting device, for an import of another device's memory
    /// (its frames are offsets in that object); `None`: this device's own.
    source: Option<Arc<ShmObject>>,
}

/// A mapping of part of a physical allocation at some VA.
#[derive(Debug)]
struct HandleMap {
    handle: u64,
    len_bytes: u64,
}

#[derive(Debug)]
struct MemState {
    /// By start address; a hash map, so that backing and unbacking cost the same however many
    /// ranges are backed.
    backed: IntMap<u64, Backing>,
    handles: BTreeMap<u64, PhysAlloc>,
    handle_maps: BTreeMap<u64, HandleMap>,
    next_handle: u64,
}

/// One open device.
///
/// # Locking
///
/// `mem` is taken for every change to what is backed; the window's own lock is taken inside it
/// (order: `mem`, then window). Byte moves take only the window's read lock.
#[derive(Debug)]
pub(crate) struct Device {
    hbm: ShmObject,
    window: Window,
    /// This device's slice of the stream-ordered pool window.
    pool: Window,
    mem: Mutex<MemState>,
    registry: Arc<Registry>,
    physical: u32,
}

fn err(kind: ErrorKind, detail: &'static str) -> Error {
    Error::new(kind, detail)
}

/// Where the window of a process that finds `others` processes attached maps HBM offset 0:
/// 0 for the first, then 1/2, 1/4, 3/4, 1/8, … of the HBM (the van der Corput sequence),
/// aligned to 1 GiB (2 MiB on a device below 4 GiB), so that processes sharing a device start
/// their allocations in different places and each finds the frames its window shows free.
fn displacement(others: usize, hbm_bytes: u64) -> u64 {
    let align: u64 = if hbm_bytes >= 4 << 30 { 1 << 30 } else { 2 << 20 };
    let mut k = others as u64;
    let (mut num, mut den) = (0u64, 1u64);
    while k > 0 && den < 1 << 20 {
        den *= 2;
        num = num * 2 + (k & 1);
        k >>= 1;
    }
    // num/den is the bit reversal of `others` as a fraction: 1 → 1/2, 2 → 1/4, 3 → 3/4, …
    let raw = u128::from(hbm_bytes) * u128::from(num) / u128::from(den);
    // CAST: below hbm_bytes, a u64.
    (raw as u64) & !(align - 1)
}

/// Splits `runs` into the pieces covering `[offset, offset + len)` of their concatenation.
fn slice_runs(runs: &[PhysRun], mut offset: u64, mut len: u64) -> Vec<PhysRun> {
    let mut out = Vec::new();
    for r in runs {
        if len == 0 {
            break;
        }
        if offset >= r.len_bytes {
            offset -= r.len_bytes;
            continue;
        }
        let take = (r.len_bytes - offset).min(len);
        out.push(PhysRun { offset: r.offset + offset, len_bytes: take });
        len -= take;
        offset = 0;
    }
    out
}

/// Backs `reqs` one by one, undoing on error.
fn hal_back_each(d: &Device, reqs: &[BackRequest]) -> Result<()> {
    for (i, r) in reqs.iter().enumerate() {
        if let Err(e) = d.back(r) {
            for done in reqs[..i].iter().rev() {
                let _ = d.unback(done.range);
            }
            return Err(e);
        }
    }
    Ok(())
}

impl Device {
    /// Opens physical device `physical` for this process: maps its (shared) HBM object and
    /// reserves its window at `window_base` and its pool-window slice at `pool_base`.
    pub(crate) fn open(
        info: DeviceInfo,
        shm_name: &str,
        window_base: u64,
        pool_base: u64,
        registry: Arc<Registry>,
        physical: u32,
    ) -> std::io::Result<Self> {
        let first =
            registry.bring_up(physical).map_err(|_| std::io::Error::other("device registry failed"))?;
        let hbm = ShmObject::open(shm_name, info.hbm_bytes, first)?;
        let mut window = Window::reserve(window_base, hal::layout::DEVICE_WINDOW_SIZE)?;
        let pool = Window::reserve(pool_base, hal::layout::POOL_SLICE_SIZE)?;
        let others =
            registry.other_processes().map_err(|_| std::io::Error::other("device registry failed"))?;
        window.map_identity(&hbm, displacement(others, info.hbm_bytes))?;
        Ok(Self {
            hbm,
            window,
            pool,
            mem: Mutex::new(MemState {
                backed: IntMap::default(),
                handles: BTreeMap::new(),
                handle_maps: BTreeMap::new(),
                next_handle: 1,
            }),
            registry,
            physical,
        })
    }

    /// The window holding `addr`: the pool slice when it holds it, else the device window
    /// (where an address outside both finds nothing mapped).
    pub(crate) fn window_at(&self, addr: u64) -> &Window {
        if self.pool.contains(addr) {
            &self.pool
        } else {
            &self.window
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.mem.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn memory_info(&self) -> Result<MemoryInfo> {
        self.registry.memory_info(self.physical)
    }

    /// The window of `range` (the device window or the pool slice) and its offset there,
    /// checked to lie in the window and be aligned to `page`.
    fn offset_of(&self, range: &VaRange, page: PageSize) -> Result<(&Window, u64)> {
        let start = range.start().as_u64();
        let w = self.window_at(start);
        if !w.contains(start) || range.end() > w.base() + w.len_bytes() {
            return Err(err(ErrorKind::InvalidArgument, "range outside the device's VA window"));
        }
        if !range.start().is_aligned(page.bytes()) || range.len_bytes() % page.bytes() != 0 {
            return Err(err(ErrorKind::InvalidArgument, "range not aligned to its page size"));
        }
        Ok((w, start - w.base()))
    }

    /// Maps `runs` one after another from offset `offset` of `w`; all or nothing. Runs that
    /// are adjacent in the HBM object share one mapping, so an allocation made of one physical
    /// run (or of adjacent ones) costs one `mmap`.
    fn map_runs(&self, w: &Window, offset: u64, runs: &[PhysRun], writable: bool) -> Result<()> {
        Self::map_runs_of(w, &self.hbm, offset, runs, writable)
    }

    /// [`Self::map_runs`] from the HBM object `hbm` (this device's, or an exporting device's
    /// for an import of its memory).
    fn map_runs_of(w: &Window, hbm: &ShmObject, offset: u64, runs: &[PhysRun], writable: bool) -> Result<()> {
        let mut at = offset;
        let mut i = 0;
        while i < runs.len() {
            let (start, mut len) = (runs[i].offset, runs[i].len_bytes);
            i += 1;
            while i < runs.len() && runs[i].offset == start + len {
                len += runs[i].len_bytes;
                i += 1;
            }
            if let Err(e) = w.map_shared(at, len, hbm, start, writable) {
                // Undo what was mapped so far (whole mappings), then report.
                if at > offset {
                    let _ = w.unmap(offset, at - offset);
                }
                return Err(match e.kind() {
                    std::io::ErrorKind::AlreadyExists => {
                        err(ErrorKind::InvalidArgument, "range already backed or mapped")
                    }
                    // ENOMEM from mmap: the process's mapping count (vm.max_map_count) or address
                    // space is exhausted, not device memory.
                    std::io::ErrorKind::OutOfMemory => err(
                        ErrorKind::OutOfMemory,
                        "the process's limit on memory mappings (vm.max_map_count) is reached",
                    ),
                    _ => err(ErrorKind::Internal, "mmap of device memory failed"),
                });
            }
            at += len;
        }
        Ok(())
    }

    /// Unmaps `[addr, addr + len_bytes)`, mapped by one [`Self::map_runs`].
    fn unmap_range(&self, addr: u64, len_bytes: u64) -> Result<()> {
        let w = self.window_at(addr);
        // A piece: every caller checked its record of exactly this range first.
        w.unmap_piece(addr - w.base(), len_bytes).map_err(|e| {
            if e.kind() == std::io::ErrorKind::OutOfMemory {
                err(
                    ErrorKind::OutOfMemory,
                    "the process's limit on memory mappings (vm.max_map_count) is reached",
                )
            } else {
                err(ErrorKind::Internal, "unmap of device memory failed")
            }
        })
    }

    pub(crate) fn back(&self, req: &BackRequest) -> Result<()> {
        let (w, offset) = self.offset_of(&req.range, req.page_size)?;
        let count = req.range.len_bytes() / req.page_size.bytes();
        let mut st = self.lock();
        if st.backed.contains_key(&req.range.start().as_u64()) {
            return Err(err(ErrorKind::InvalidArgument, "range already backed or mapped"));
        }
        let prefer = w.identity_offset(offset, req.range.len_bytes());
        let (id, runs) = self.registry.alloc(self.physical, req.page_size, count, prefer)?;
        let writable = !req.attrs.contains(MemAttr::READONLY);
        if let Err(e) = self.map_runs(w, offset, &runs, writable) {
            // INVARIANT: all or nothing — give the frames back.
            self.registry.release(&[id])?;
            return Err(e);
        }
        st.backed.insert(
            req.range.start().as_u64(),
            Backing { len_bytes: req.range.len_bytes(), page_size: req.page_size, runs, id },
        );
        Ok(())
    }

    /// Backs the adjacent pieces `reqs` of one allocation (2 MiB pages and a 4 KiB-page tail,
    /// say) in one step: one registry change for all their frames, and one mapping (one
    /// `mprotect` on the identity mapping) when the frames are contiguous, as they are when the
    /// window's identity frames are free. Each piece stays a backing of its own (unbacked alone
    /// or with [`Self::unback_many`]). Pieces that are not adjacent in one window are backed
    /// one by one. All or nothing.
    pub(crate) fn back_many(&self, reqs: &[BackRequest]) -> Result<()> {
        let [first, rest @ ..] = reqs else { return Ok(()) };
        if rest.is_empty() {
            return self.back(first);
        }
        let adjacent = reqs.windows(2).all(|p| p[0].range.end() == p[1].range.start().as_u64())
            && reqs
                .iter()
                .all(|r| r.attrs.contains(MemAttr::READONLY) == first.attrs.contains(MemAttr::READONLY));
        // Inline lists: backing one allocation makes no heap allocation here.
        let mut placed: SmallVec<[(&Window, u64); 4]> = SmallVec::new();
        for r in reqs {
            placed.push(self.offset_of(&r.range, r.page_size)?);
        }
        let (w, offset) = placed[0];
        if !adjacent || placed.iter().any(|&(pw, _)| !core::ptr::eq(pw, w)) {
            return hal_back_each(self, reqs);
        }
        let mut st = self.lock();
        if reqs.iter().any(|r| st.backed.contains_key(&r.range.start().as_u64())) {
            return Err(err(ErrorKind::InvalidArgument, "range already backed or mapped"));
        }
        let mut pieces: SmallVec<[(PageSize, u64, Option<u64>); 4]> = SmallVec::new();
        for (r, &(_, o)) in reqs.iter().zip(&placed) {
            let len = r.range.len_bytes();
            pieces.push((r.page_size, len / r.page_size.bytes(), w.identity_offset(o, len)));
        }
        let got = self.registry.alloc_many(self.physical, &pieces)?;
        let runs: SmallVec<[PhysRun; 4]> = got.iter().flat_map(|(_, r)| r.iter().copied()).collect();
        let writable = !first.attrs.contains(MemAttr::READONLY);
        if let Err(e) = self.map_runs(w, offset, &runs, writable) {
            // INVARIANT: all or nothing — give the frames back.
            let ids: Ids = got.iter().map(|(id, _)| *id).collect();
            self.registry.release(&ids)?;
            return Err(e);
        }
        for (r, (id, runs)) in reqs.iter().zip(got) {
            st.backed.insert(
                r.range.start().as_u64(),
                Backing { len_bytes: r.range.len_bytes(), page_size: r.page_size, runs, id },
            );
        }
        Ok(())
    }

    /// Unbacks `ranges`, each backed by one [`Self::back`] or piece of a [`Self::back_many`]:
    /// adjacent ones in one step (one `mprotect` on the identity mapping, one registry change).
    pub(crate) fn unback_many(&self, ranges: &[VaRange]) -> Result<()> {
        let [first, rest @ ..] = ranges else { return Ok(()) };
        if rest.is_empty() {
            return self.unback(*first);
        }
        let mut st = self.lock();
        let adjacent = ranges.windows(2).all(|p| p[0].end() == p[1].start().as_u64())
            && core::ptr::eq(
                self.window_at(first.start().as_u64()),
                self.window_at(ranges[ranges.len() - 1].start().as_u64()),
            );
        let exact = ranges
            .iter()
            .all(|r| st.backed.get(&r.start().as_u64()).is_some_and(|b| b.len_bytes == r.len_bytes()));
        if !adjacent || !exact {
            drop(st);
            let mut out = Ok(());
            for &r in ranges {
                if let Err(e) = self.unback(r) {
                    if out.is_ok() {
                        out = Err(e);
                    }
                }
            }
            return out;
        }
        let start = first.start().as_u64();
        let total = ranges[ranges.len() - 1].end() - start;
        self.unmap_range(start, total)?;
        let mut ids = Ids::new();
        for r in ranges {
            if let Some(b) = st.backed.remove(&r.start().as_u64()) {
                ids.push(b.id);
            }
        }
        self.registry.release(&ids)
    }

    pub(crate) fn unback(&self, range: VaRange) -> Result<()> {
        let mut st = self.lock();
        let start = range.start().as_u64();
        match st.backed.get(&start) {
            Some(b) if b.len_bytes == range.len_bytes() => {}
            _ => return Err(err(ErrorKind::InvalidHandle, "range was not backed by one back()")),
        }
        self.unmap_range(start, range.len_bytes())?;
        let b = st.backed.remove(&start).ok_or(err(ErrorKind::Internal, "backing vanished"))?;
        self.registry.release(&[b.id])
    }

    pub(crate) fn alloc_physical(
        &self,
        len_bytes: u64,
        page: PageSize,
        attrs: MemAttr,
    ) -> Result<PhysHandle> {
        if len_bytes == 0 || len_bytes % page.bytes() != 0 {
            return Err(err(ErrorKind::InvalidArgument, "size not a multiple of the page size"));
        }
        let mut st = self.lock();
        let (rid, runs) = self.registry.alloc(self.physical, page, len_bytes / page.bytes(), None)?;
        let id = st.next_handle;
        st.next_handle += 1;
        st.handles.insert(
            id,
            PhysAlloc {
                page_size: page,
                len_bytes,
                runs: runs.into_vec(),
                writable: !attrs.contains(MemAttr::READONLY),
                map_count: 0,
                ids: vec![rid],
                imported: None,
                exports: Vec::new(),
                source: None,
            },
        );
        Ok(PhysHandle(id))
    }

    pub(crate) fn free_physical(&self, handle: PhysHandle) -> Result<()> {
        let mut st = self.lock();
        match st.handles.get(&handle.0) {
            None => return Err(err(ErrorKind::InvalidHandle, "unknown physical handle")),
            Some(p) if p.map_count > 0 => return Err(err(ErrorKind::Busy, "physical memory still mapped")),
            Some(_) => {}
        }
        let p = st.handles.remove(&handle.0).ok_or(err(ErrorKind::Internal, "handle vanished"))?;
        if let Some(name) = p.imported {
            self.registry.close_import(&name)?;
        }
        // A handle's shares end with it; importers keep what they imported.
        for name in &p.exports {
            let _ = self.registry.destroy(name);
        }
        self.registry.release(&p.ids)
    }

    pub(crate) fn map_physical(&self, handle: PhysHandle, offset: u64, range: VaRange) -> Result<()> {
        let mut st = self.lock();
        let (page, total, writable) = match st.handles.get(&handle.0) {
            Some(p) => (p.page_size, p.len_bytes, p.writable),
            None => return Err(err(ErrorKind::InvalidHandle, "unknown physical handle")),
        };
        let (w, at) = self.offset_of(&range, page)?;
        if offset % page.bytes() != 0 || offset.checked_add(range.len_bytes()).is_none_or(|e| e > total) {
            return Err(err(ErrorKind::InvalidArgument, "mapping exceeds the physical allocation"));
        }
        let (pieces, source) = match st.handles.get(&handle.0) {
            Some(p) => (slice_runs(&p.runs, offset, range.len_bytes()), p.source.clone()),
            None => return Err(err(ErrorKind::Internal, "handle vanished")),
        };
        Self::map_runs_of(w, source.as_deref().unwrap_or(&self.hbm), at, &pieces, writable)?;
        if let Some(p) = st.handles.get_mut(&handle.0) {
            p.map_count += 1;
        }
        st.handle_maps
            .insert(range.start().as_u64(), HandleMap { handle: handle.0, len_bytes: range.len_bytes() });
        Ok(())
    }

    pub(crate) fn unmap_physical(&self, range: VaRange) -> Result<()> {
        let mut st = self.lock();
        let start = range.start().as_u64();
        match st.handle_maps.get(&start) {
            Some(m) if m.len_bytes == range.len_bytes() => {}
            _ => return Err(err(ErrorKind::InvalidHandle, "nothing mapped at exactly this range")),
        }
        self.unmap_range(start, range.len_bytes())?;
        if let Some(m) = st.handle_maps.remove(&start) {
            if let Some(p) = st.handles.get_mut(&m.handle) {
                p.map_count -= 1;
            }
        }
        Ok(())
    }

    /// Exports the frames behind `range`, which adjacent backings of this device cover.
    pub(crate) fn export_range(
        &self,
        range: VaRange,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        let st = self.lock();
        let (start, end) = (range.start().as_u64(), range.end());
        let mut cursor = start;
        let (mut ids, mut runs, mut page) = (Vec::new(), Vec::new(), PageSize::Normal);
        // The backing holding `start`: the one starting there, else (an export from inside a
        // backing, rare) the one found by a scan.
        let first = if st.backed.contains_key(&start) {
            start
        } else {
            st.backed.iter().find(|(&s, b)| s <= start && start < s + b.len_bytes).map_or(start, |(&s, _)| s)
        };
        let mut next = first;
        while let Some(b) = st.backed.get(&next) {
            let s = next;
            next = s + b.len_bytes;
            if s > cursor || s + b.len_bytes <= cursor {
                break;
            }
            let take = (s + b.len_bytes).min(end) - cursor;
            runs.extend(slice_runs(&b.runs, cursor - s, take));
            ids.push(b.id);
            if b.page_size.bytes() > page.bytes() {
                page = b.page_size;
            }
            cursor += take;
            if cursor == end {
                break;
            }
        }
        if cursor != end {
            return Err(err(ErrorKind::InvalidHandle, "the range is not wholly backed device memory"));
        }
        drop(st);
        self.registry.export(kind, self.physical, page, ids, runs, no_whitelist)
    }

    /// Exports a physical allocation of this process.
    pub(crate) fn export_physical(
        &self,
        handle: PhysHandle,
        kind: ShareKind,
        no_whitelist: bool,
    ) -> Result<ShareName> {
        let st = self.lock();
        let p = st.handles.get(&handle.0).ok_or(err(ErrorKind::InvalidHandle, "unknown physical handle"))?;
        if p.imported.is_some() {
            return Err(err(ErrorKind::InvalidHandle, "an imported handle cannot be exported again"));
        }
        let (ids, runs, page) = (p.ids.clone(), p.runs.clone(), p.page_size);
        drop(st);
        let name = self.registry.export(kind, self.physical, page, ids, runs, no_whitelist)?;
        match self.lock().handles.get_mut(&handle.0) {
            Some(p) => p.exports.push(name),
            // Freed meanwhile by another thread: the share must not outlive it.
            None => {
                let _ = self.registry.destroy(&name);
                return Err(err(ErrorKind::InvalidHandle, "the physical handle was freed during the export"));
            }
        }
        Ok(name)
    }

    /// Imports share `name` as a physical handle of this device.
    /// Imports share `name`; memory of another physical device is mapped from that device's
    /// HBM object, which `open_hbm` opens (the DMA engine and the AI cores reach every device's
    /// memory, as over the inter-chip links).
    pub(crate) fn import(
        &self,
        name: &ShareName,
        open_hbm: impl FnOnce(u32) -> Option<ShmObject>,
    ) -> Result<(PhysHandle, ShareInfo)> {
        let info = self.registry.share(name)?;
        let source = if info.device == self.physical {
            None
        } else {
            Some(Arc::new(open_hbm(info.device).ok_or(err(
                ErrorKind::NotSupported,
                "the exporting device's memory cannot be opened by the software NPU",
            ))?))
        };
        let share = self.registry.import(name)?;
        let mut st = self.lock();
        let id = st.next_handle;
        st.next_handle += 1;
        st.handles.insert(
            id,
            PhysAlloc {
                page_size: share.page_size,
                len_bytes: share.len_bytes,
                runs: share.runs.clone(),
                writable: true,
                map_count: 0,
                ids: share.allocs.clone(),
                imported: Some(*name),
                exports: Vec::new(),
                source,
            },
        );
        Ok((PhysHandle(id), share_info(&share)))
    }

    /// Gives back everything this process still holds on the device (close).
    pub(crate) fn release_all(&self) {
        let mut st = self.lock();
        let backed = std::mem::take(&mut st.backed);
        let handles = std::mem::take(&mut st.handles);
        st.handle_maps.clear();
        drop(st);
        for (_, b) in backed {
            let _ = self.registry.release(&[b.id]);
        }
        for (_, p) in handles {
            if let Some(n) = p.imported {
                let _ = self.registry.close_import(&n);
            }
            let _ = self.registry.release(&p.ids);
        }
    }

    /// Whether `addr` lies in this device's window or its pool slice.
    pub(crate) fn owns(&self, addr: DeviceAddr) -> bool {
        self.window.contains(addr.as_u64()) || self.pool.contains(addr.as_u64())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.release_all();
    }
}

/// What an importer learns about a share.
pub(crate) fn share_info(s: &mm::ipc::Share) -> ShareInfo {
    ShareInfo {
        physical_device: s.device,
        len_bytes: s.len_bytes,
        page_size: s.page_size,
        exporter_pid: s.exporter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displacements_spread_processes_over_the_hbm() {
        let g = 1u64 << 30;
        let d: Vec<u64> = (0..5).map(|k| displacement(k, 16 * g)).collect();
        assert_eq!(d, vec![0, 8 * g, 4 * g, 12 * g, 2 * g]);
        assert_eq!(displacement(1, 256 << 20), 128 << 20);
        assert_eq!(displacement(3, 1 << 30) % (2 << 20), 0);
    }

    /// Backing the two pieces of a HUGE_FIRST allocation (2 MiB pages and a 4 KiB-page tail)
    /// together makes one mapping; each piece can still be unbacked alone, and accounting is
    /// exact throughout.
    #[test]
    fn adjacent_pieces_are_backed_as_one_mapping() {
        use hal::{DeviceControl, DeviceId, MemoryBacking};
        const MIB: u64 = 1 << 20;
        let sim = crate::Sim::new(crate::SimConfig {
            instance: format!("devtest-{}-pieces", std::process::id()),
            hbm_bytes: 256 * MIB,
            huge_budget_bytes: 64 * MIB,
            giant_budget_bytes: 0,
            ..crate::SimConfig::default()
        })
        .expect("start the software NPU");
        let d0 = DeviceId(0);
        sim.open_device(d0).expect("open device");
        let dev = sim.device(d0).expect("device 0");
        let total = sim.memory_info(d0).unwrap().total_bytes;
        let base = hal::layout::device_window_base(0) + 64 * MIB;
        let range = |off: u64, len: u64| VaRange::try_new(DeviceAddr(base + off), len).unwrap();
        let huge =
            BackRequest { range: range(0, 4 * MIB), page_size: PageSize::Huge, attrs: MemAttr::empty() };
        let tail =
            BackRequest { range: range(4 * MIB, 4096), page_size: PageSize::Normal, attrs: MemAttr::empty() };
        let free = |used: u64| total - used;
        let window = dev.window_at(base);
        let entries = || window.entry_count();
        let before = entries();

        sim.back_many(d0, &[huge, tail]).unwrap();
        assert_eq!(entries(), before + 1, "one mapping for both pieces");
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(4 * MIB + 4096));
        // Bytes across the boundary of the pieces are device memory.
        window.write(base + 4 * MIB - 2, &[1, 2, 3, 4]).unwrap();
        let mut got = [0u8; 4];
        window.read(base + 4 * MIB - 2, &mut got).unwrap();
        assert_eq!(got, [1, 2, 3, 4]);
        // Backing either piece again is refused and changes nothing.
        assert_eq!(sim.back_many(d0, &[tail]).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(4 * MIB + 4096));

        // The tail alone: the mapping is split, the huge piece stays accessible.
        sim.unback(d0, tail.range).unwrap();
        assert!(window.read(base + 4 * MIB, &mut got).is_err(), "the tail is unbacked");
        window.read(base + 4 * MIB - 4, &mut got).unwrap();
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(4 * MIB));
        sim.unback(d0, huge.range).unwrap();
        assert_eq!(entries(), before);
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(0));

        // Both together again, then unbacked together.
        sim.back_many(d0, &[huge, tail]).unwrap();
        sim.unback_many(d0, &[huge.range, tail.range]).unwrap();
        assert_eq!(entries(), before);
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(0));
        assert_eq!(
            sim.unback_many(d0, &[huge.range, tail.range]).unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );

        // Backed one at a time, adjacent backings are one entry of the window's table too; each
        // is still unbacked alone.
        sim.back(d0, &huge).unwrap();
        sim.back(d0, &tail).unwrap();
        assert_eq!(entries(), before + 1);
        sim.unback(d0, huge.range).unwrap();
        assert!(window.read(base, &mut got).is_err(), "the huge piece is unbacked");
        window.read(base + 4 * MIB, &mut got).unwrap();
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(4096));
        assert_eq!(sim.unback(d0, huge.range).unwrap_err().kind(), ErrorKind::InvalidHandle);
        sim.unback(d0, tail.range).unwrap();
        assert_eq!(entries(), before);

        // Not adjacent: backed one by one, still all or nothing.
        let far = BackRequest { range: range(8 * MIB, 4096), ..tail };
        sim.back_many(d0, &[huge, far]).unwrap();
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(4 * MIB + 4096));
        sim.unback_many(d0, &[huge.range, far.range]).unwrap();
        // A piece that cannot be backed (more 2 MiB pages than the budget) undoes the others.
        let too_big = BackRequest { range: range(16 * MIB, 128 * MIB), page_size: PageSize::Huge, ..huge };
        let e = sim.back_many(d0, &[BackRequest { range: range(12 * MIB, 4096), ..tail }, too_big]);
        assert!(e.is_err());
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, free(0));
        assert_eq!(entries(), before);

        pool_pages_backed_together_are_unbacked_one_by_one(&sim);
    }

    /// Pages of a pool region (outside the identity mapping) backed together by one
    /// `back_many` are one mapping when their frames are contiguous; each page is still
    /// unbacked alone, in any order, and accounting is exact throughout. (Part of
    /// [`adjacent_pieces_are_backed_as_one_mapping`]: one software NPU per test process.)
    fn pool_pages_backed_together_are_unbacked_one_by_one(sim: &crate::Sim) {
        use hal::{DeviceControl, DeviceId, MemoryBacking};
        const MIB: u64 = 1 << 20;
        let d0 = DeviceId(0);
        let dev = sim.device(d0).expect("device 0");
        let total = sim.memory_info(d0).unwrap().total_bytes;
        let base = hal::layout::pool_slice_base(0);
        let page = |i: u64| BackRequest {
            range: VaRange::try_new(DeviceAddr(base + i * 2 * MIB), 2 * MIB).unwrap(),
            page_size: PageSize::Huge,
            attrs: MemAttr::CACHED,
        };
        let window = dev.window_at(base);
        let before = window.entry_count();
        let pages: Vec<BackRequest> = (0..4).map(page).collect();
        sim.back_many(d0, &pages).unwrap();
        assert_eq!(window.entry_count(), before + 1, "one mapping for the four pages");
        assert_eq!(sim.memory_info(d0).unwrap().free_bytes, total - 8 * MIB);
        for (i, p) in pages.iter().enumerate() {
            window.write(p.range.start().as_u64(), &[i as u8 + 1]).unwrap();
        }
        // An inner page first, then the others: the rest stays mapped with its contents.
        let mut got = [0u8; 1];
        for (n, i) in [2usize, 0, 3, 1].into_iter().enumerate() {
            sim.unback(d0, pages[i].range).unwrap();
            assert!(window.read(pages[i].range.start().as_u64(), &mut got).is_err(), "page {i} is unbacked");
            assert_eq!(sim.memory_info(d0).unwrap().free_bytes, total - (3 - n as u64) * 2 * MIB);
            for (j, p) in pages.iter().enumerate().filter(|&(j, _)| ![2usize, 0, 3, 1][..=n].contains(&j)) {
                window.read(p.range.start().as_u64(), &mut got).unwrap();
                assert_eq!(got, [j as u8 + 1], "page {j} keeps its contents");
            }
            assert_eq!(sim.unback(d0, pages[i].range).unwrap_err().kind(), ErrorKind::InvalidHandle);
        }
        assert_eq!(window.entry_count(), before);
    }

    #[test]
    fn runs_slice_across_boundaries() {
        let runs = [PhysRun { offset: 0, len_bytes: 8192 }, PhysRun { offset: 65536, len_bytes: 8192 }];
        assert_eq!(
            slice_runs(&runs, 4096, 8192),
            vec![PhysRun { offset: 4096, len_bytes: 4096 }, PhysRun { offset: 65536, len_bytes: 4096 }]
        );
        assert_eq!(slice_runs(&runs, 8192, 4096), vec![PhysRun { offset: 65536, len_bytes: 4096 }]);
    }
}
