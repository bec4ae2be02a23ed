//! The pool calls of the runtime (`impl Runtime`, `aclrtMemPool*` and stream-ordered frees);
//! over the per-device pool state of [`crate::state::pool`].
//!
//! # Locking
//!
//! Lock order (see [`crate::device`]): a pool's own mutex, then its device's `mem` (taken by the
//! segment source while the pool maps a segment); nothing takes a pool's mutex while holding `mem`.
//! A segment's pages are backed and unbacked by the backend with only the pool's mutex held (only
//! that pool touches its pages), and recorded under `mem` around the call. Finding a pool (by
//! handle, or by address through the address map) takes no pool's mutex. The deferred frees are
//! settled by asking the backend with no lock held.
//!
//! Lock acquisitions of the stream-ordered pair in steady state (a 4 KiB block reused on its
//! own stream): `aclrtMemPoolMallocAsync` takes the pool's mutex once (runtime, pool and
//! stream lookups are lock-free; the device's graph is locked only if the pool asks about
//! another stream's frees, `state::stream::LazyGraphOrder`); `aclrtMemPoolFreeAsync` takes
//! the device's `mem` once (the address-map lookup) and the pool's mutex once; its stream point
//! is the stream's own submitted counter, with no backend call. No heap allocation, no system
//! call, no process-wide lock.

use std::sync::Mutex;

use hal::{DeviceAddr, DeviceId, QueueId, SocProfile, VaRange};
use mm::device::DeferError;
use mm::order::{StreamOrder, StreamPoint};
use mm::pool::{Pool, PoolBacking, PoolError, ReuseModes, PAGE as SEGMENT_ALIGN};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::handles::{Handle, Kind};
use crate::runtime::Runtime;
use crate::state::memory::{locate, HalBacker, Loc, Owner, POOL_COMPONENT};
use crate::state::pool::*;
use crate::state::stream::LazyGraphOrder;

/// Pool regions are VA reservations of the device allocator, backed by 2 MiB pages (adjacent
/// pages a pool needs at once in one driver call, each page its own backing), and recorded
/// in the device's address map as segments of the pool `pool`.
pub(crate) struct Segments<'a> {
    pub(crate) rt: &'a Runtime,
    pub(crate) dev: u32,
    pub(crate) pool: u64,
}

impl Segments<'_> {
    pub(crate) fn with<T>(
        &mut self,
        f: impl FnOnce(
            &mut crate::state::memory::DevMem,
            &mut HalBacker<'_>,
        ) -> std::result::Result<T, hal::Error>,
    ) -> std::result::Result<T, hal::Error> {
        // Lock order: under the pool's mutex, the device's `mem` (a leaf here).
        let mut m =
            self.rt.device(self.dev).mem("memPool").map_err(|_| {
                hal::Error::new(hal::ErrorKind::Internal, "the device's memory state is failed")
            })?;
        if m.alloc.is_none() {
            return Err(hal::Error::new(hal::ErrorKind::NoDevice, "device reset"));
        }
        let mut backer = HalBacker::new(self.rt.backend().driver(), self.dev);
        f(&mut m, &mut backer)
    }
}

impl PoolBacking for Segments<'_> {
    fn reserve(&mut self, len_bytes: u64) -> std::result::Result<VaRange, hal::Error> {
        let pool = self.pool;
        let r = self.with(|m, _| {
            let a = m.alloc.as_mut().ok_or(hal::Error::new(hal::ErrorKind::NoDevice, "device reset"))?;
            let r = a.reserve_range(len_bytes, POOL_COMPONENT).map_err(|_| {
                hal::Error::new(hal::ErrorKind::OutOfMemory, "no device VA for a pool region")
            })?;
            if m.map.insert(r.start().as_u64(), r.len_bytes(), Owner::PoolSegment(pool)).is_err() {
                // Cannot happen (the allocator handed out fresh VA); undo so nothing changes.
                let _ = a.unreserve_range(r);
                return Err(hal::Error::new(
                    hal::ErrorKind::Internal,
                    "pool region overlaps the address map",
                ));
            }
            Ok(r)
        })?;
        crate::state::obs::note(self.dev, "segment_alloc", r.start().as_u64(), r.len_bytes(), 0);
        Ok(r)
    }

    fn unreserve(&mut self, range: VaRange) -> std::result::Result<(), hal::Error> {
        self.with(|m, _| {
            let a = m.alloc.as_mut().ok_or(hal::Error::new(hal::ErrorKind::NoDevice, "device reset"))?;
            a.unreserve_range(range)
                .map_err(|_| hal::Error::new(hal::ErrorKind::InvalidHandle, "not a pool region"))?;
            m.map.remove(range.start().as_u64());
            Ok(())
        })?;
        crate::state::obs::note(self.dev, "segment_free", range.start().as_u64(), range.len_bytes(), 0);
        Ok(())
    }

    /// Backs one page of this pool's region with no lock but the pool's own held (only this
    /// pool, under its mutex, backs or unbacks its pages), then records it under `mem`.
    fn back(&mut self, page: VaRange) -> std::result::Result<(), hal::Error> {
        use mm::device::Backer as _;
        let mut hal = HalBacker::new(self.rt.backend().driver(), self.dev);
        match hal.back(page, hal::PageSize::Huge, hal::MemAttr::CACHED) {
            Ok(()) => {}
            Err(e) if e.kind() == hal::ErrorKind::OutOfMemory => {
                hal.back(page, hal::PageSize::Normal, hal::MemAttr::CACHED)?
            }
            Err(e) => return Err(e),
        }
        let r = self.with(|m, _| m.alloc.as_mut().map_or(Ok(()), |a| a.back_reserved(&mut Done, page)));
        if r.is_err() {
            let _ = hal.unback(page);
        }
        r
    }

    /// Backs adjacent pages in one driver call (one registry change and, where the frames are
    /// contiguous, one mapping on the software NPU), each page a backing of its own, then
    /// records them under `mem`. Out of 2 MiB pages, page by page (each falling back to 4 KiB
    /// pages as [`Self::back`] does).
    fn back_run(&mut self, pages: VaRange) -> std::result::Result<(), hal::Error> {
        let (a, b) = (pages.start().as_u64(), pages.end());
        let each = |p: u64| VaRange::try_new(DeviceAddr(p), SEGMENT_ALIGN);
        let mut backs: smallvec::SmallVec<[(VaRange, hal::PageSize, hal::MemAttr); 8]> =
            smallvec::SmallVec::new();
        for p in (a..b).step_by(SEGMENT_ALIGN as usize) {
            let page =
                each(p).map_err(|_| hal::Error::new(hal::ErrorKind::InvalidArgument, "page overflows"))?;
            backs.push((page, hal::PageSize::Huge, hal::MemAttr::CACHED));
        }
        if backs.len() < 2 {
            return self.back(pages);
        }
        let hal = HalBacker::new(self.rt.backend().driver(), self.dev);
        match hal.back_many(&backs) {
            Ok(()) => {}
            Err(e) if e.kind() == hal::ErrorKind::OutOfMemory => {
                // Page by page, each with its own fallback (all or nothing).
                for (done, &(page, _, _)) in backs.iter().enumerate() {
                    if let Err(e) = self.back(page) {
                        for &(q, _, _) in &backs[..done] {
                            let _ = self.unback(q);
                        }
                        return Err(e);
                    }
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        use mm::device::Backer as _;
        let recorded = self.with(|m, _| {
            let Some(alloc) = m.alloc.as_mut() else { return Ok(()) };
            for (i, &(page, _, _)) in backs.iter().enumerate() {
                if let Err(e) = alloc.back_reserved(&mut Done, page) {
                    for &(q, _, _) in &backs[..i] {
                        let _ = alloc.unback_reserved(&mut Done, q);
                    }
                    return Err(e);
                }
            }
            Ok(())
        });
        if recorded.is_err() {
            let mut hal = hal;
            for &(page, _, _) in &backs {
                let _ = hal.unback(page);
            }
        }
        recorded
    }

    /// Forgets adjacent pages under `mem` (all or nothing), then unbacks them in one driver
    /// call with no lock but the pool's own held.
    fn unback_run(&mut self, pages: VaRange) -> std::result::Result<(), hal::Error> {
        let (a, b) = (pages.start().as_u64(), pages.end());
        let mut ranges: smallvec::SmallVec<[VaRange; 8]> = smallvec::SmallVec::new();
        for p in (a..b).step_by(SEGMENT_ALIGN as usize) {
            ranges.push(
                VaRange::try_new(DeviceAddr(p), SEGMENT_ALIGN)
                    .map_err(|_| hal::Error::new(hal::ErrorKind::InvalidArgument, "page overflows"))?,
            );
        }
        if ranges.len() < 2 {
            return self.unback(pages);
        }
        self.with(|m, _| {
            let Some(alloc) = m.alloc.as_mut() else { return Ok(()) };
            for (i, &page) in ranges.iter().enumerate() {
                if let Err(e) = alloc.unback_reserved(&mut Done, page) {
                    for &q in &ranges[..i] {
                        let _ = alloc.back_reserved(&mut Done, q);
                    }
                    return Err(e);
                }
            }
            Ok(())
        })?;
        self.rt.backend().driver().unback_many(DeviceId(self.dev), &ranges)
    }

    /// Forgets one page under `mem`, then unbacks it with no lock but the pool's own held.
    fn unback(&mut self, page: VaRange) -> std::result::Result<(), hal::Error> {
        use mm::device::Backer as _;
        self.with(|m, _| m.alloc.as_mut().map_or(Ok(()), |a| a.unback_reserved(&mut Done, page)))?;
        HalBacker::new(self.rt.backend().driver(), self.dev).unback(page)
    }
}

impl Runtime {
    fn check_pool_soc(&self, api: &str) -> Result<()> {
        if self.soc() == SocProfile::A2 {
            return Ok(());
        }
        Err(AclError::new(
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            format!("{api}: stream-ordered pools are supported on A2 only, not on {}", self.soc().soc_name()),
        ))
    }

    /// The pool `handle` names, live or retired: its device comes from the handle, the pool
    /// from that device's table (no lock).
    fn pool_any(&self, api: &str, handle: u64) -> Result<PoolHeld> {
        let d = Handle::device_of(handle, Kind::Pool)
            .filter(|&d| d < self.device_count())
            .ok_or_else(|| unknown_pool(api, handle))?;
        self.device(d).pools.table.get_ref(handle).ok_or_else(|| unknown_pool(api, handle))
    }

    /// The live pool `handle` names.
    fn pool(&self, api: &str, handle: u64) -> Result<PoolHeld> {
        let p = self.pool_any(api, handle)?;
        if lock(&p, api, handle)?.retired {
            return Err(unknown_pool(api, handle));
        }
        Ok(p)
    }

    /// The stream-order oracle of device `d`: its dependency graph (recorded waits and the
    /// completions the runtime saw), asked with no backend call. Lock order: a pool's lock →
    /// the graph (a leaf: nothing is locked or called back while it is held, so the pool's
    /// own backing calls under it cannot deadlock; a stream wait on the device waits for them).
    /// Completions the runtime has not seen yet make the answer conservative, never wrong.
    fn order(&self, d: u32) -> LazyGraphOrder<'_> {
        LazyGraphOrder::new(self.streams_of(d).graph_mutex())
    }

    /// `aclrtMemPoolCreate`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for props other than PINNED / DEVICE / zero reserved bytes;
    /// `ACL_ERROR_RT_INVALID_DEVICEID`; `ACL_ERROR_RT_PARAM_INVALID` for a `maxSize` above the
    /// device's HBM; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` off A2.
    pub fn pool_create(&self, api: &str, props: &PoolProps) -> Result<u64> {
        self.check_pool_soc(api)?;
        if props.alloc_type != 0 {
            return Err(AclError::invalid(format!(
                "{api}: allocType {} is not ACL_MEM_ALLOCATION_TYPE_PINNED",
                props.alloc_type
            )));
        }
        if props.handle_type != 0 {
            return Err(AclError::invalid(format!(
                "{api}: handleType {} is not ACL_MEM_HANDLE_TYPE_NONE",
                props.handle_type
            )));
        }
        if props.location_type != 1 {
            return Err(AclError::invalid(format!(
                "{api}: location.type {} is not ACL_MEM_LOCATION_TYPE_DEVICE",
                props.location_type
            )));
        }
        if !props.reserved_zero {
            return Err(AclError::invalid(format!("{api}: reserved bytes must all be zero")));
        }
        let d = props.location_id;
        if d >= self.device_count() {
            return Err(AclError::new(
                ACL_ERROR_RT_INVALID_DEVICEID,
                format!("{api}: location.id {d} is not a device (0..{})", self.device_count()),
            ));
        }
        let total = self
            .backend()
            .driver()
            .device_info(DeviceId(d))
            .map_err(|e| AclError::from_hal(e, api))?
            .hbm_bytes;
        let max = if props.max_size == 0 {
            total / SEGMENT_ALIGN * SEGMENT_ALIGN
        } else {
            props
                .max_size
                .checked_add(SEGMENT_ALIGN - 1)
                .map_or(u64::MAX, |v| v / SEGMENT_ALIGN * SEGMENT_ALIGN)
        };
        if max > total {
            return Err(AclError::rt_invalid(format!(
                "{api}: maxSize {} is more than the device's {total} bytes",
                props.max_size
            )));
        }
        let obj = PoolObj {
            device: d,
            inner: Mutex::new(PoolInner {
                pool: Pool::new(max, ReuseModes::default()),
                retired: false,
                counters: self.backend().device_sim().and_then(|s| s.pool_counters(DeviceId(d))),
            }),
        };
        self.device(d).pools.table.insert(obj).map_err(|_| {
            AclError::new(
                ACL_ERROR_RT_MEMORY_ALLOCATION,
                format!("{api}: device {d} already has {MAX_POOLS} pools; destroy one first"),
            )
        })
    }

    /// Every pool of this process (retired ones included): handle, device, statistics and
    /// regions, for the memory summary and snapshots. A pool a panic left failed is left out.
    pub(crate) fn pool_walk(&self) -> Vec<(u64, u32, mm::pool::PoolStats, Vec<mm::pool::PoolRegion>)> {
        let mut out = Vec::new();
        for dev in self.devices.iter() {
            for p in dev.pools.table.live() {
                let Ok(inner) = lock(&p, "aclrsMemSnapshot", p.handle()) else { continue };
                out.push((p.handle(), p.device, inner.pool.stats(), inner.pool.regions()));
            }
        }
        out.sort_by_key(|p| (p.1, p.0));
        out
    }

    /// `aclrtMemPoolDestroy`: the handle goes at once; the pool's memory goes as soon as
    /// nothing uses it — blocks still allocated stay valid until they are freed, and segments
    /// with frees still pending on a stream go at the next synchronize (nothing leaks, nothing
    /// dangles).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INTERNAL_ERROR` (CANN's code for an unknown pool).
    pub fn pool_destroy(&self, api: &str, handle: u64) -> Result<()> {
        self.check_pool_soc(api)?;
        let p = self.pool(api, handle)?;
        lock(&p, api, handle)?.retired = true;
        self.collect_retired(api, &p)
    }

    /// Gives back what a retired pool no longer needs, and forgets it once it holds nothing.
    fn collect_retired(&self, api: &str, p: &PoolRef) -> Result<()> {
        let d = p.device;
        let mut inner = lock(p, api, p.handle())?;
        if !inner.retired {
            return Ok(());
        }
        let order = self.order(d);
        let mut seg = Segments { rt: self, dev: d, pool: p.handle() };
        inner.pool.release(&mut seg, &order, 0);
        let gone = inner.pool.busy_count() == 0 && inner.pool.stats().reserved.current == 0;
        drop(inner);
        if gone {
            self.device(d).pools.table.remove(p.handle());
        }
        Ok(())
    }

    /// `aclrtMemPoolMallocAsync`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a NULL stream; `ACL_ERROR_RT_INTERNAL_ERROR` (CANN's code)
    /// when the pool is exhausted or unknown; `ACL_ERROR_RT_MEMORY_ALLOCATION` when the device is full.
    pub fn pool_malloc_async(&self, api: &str, size: u64, handle: u64, stream: u64) -> Result<Option<u64>> {
        self.check_pool_soc(api)?;
        if stream == 0 {
            return Err(AclError::invalid(format!(
                "{api}: stream is NULL (the default stream cannot be used with pools)"
            )));
        }
        // The pool's mutex is taken once, below, to check it is live and to allocate.
        let p = self.pool_any(api, handle)?;
        let s = self.submit_stream(api, stream)?;
        if s.device != p.device {
            return Err(AclError::new(
                crate::state::stream::ACL_ERROR_RT_STREAM_CONTEXT,
                format!("{api}: stream is on device {}, the pool on device {}", s.device, p.device),
            ));
        }
        if size == 0 {
            return Ok(None);
        }
        if size > u64::MAX - (SEGMENT_ALIGN - 1) {
            return Err(AclError::rt_invalid(format!("{api}: size {size} overflows when rounded")));
        }
        self.process_deferred(p.device);
        let mut inner = lock(&p, api, handle)?;
        if inner.retired {
            return Err(unknown_pool(api, handle));
        }
        let order = self.order(p.device);
        let mut seg = Segments { rt: self, dev: p.device, pool: handle };
        let want = crate::sanitize::memcheck::pool_padded_size(size);
        let g = match inner.pool.allocate(&mut seg, &order, s.queue.0, want) {
            Ok(g) => g,
            Err(e) => {
                drop(order);
                drop(inner);
                let mut err = pool_err(api, e, "allocation");
                if let PoolError::OutOfMemory(_) = e {
                    let figures = self.device(p.device).mem(api).ok().and_then(|m| {
                        m.alloc
                            .as_ref()
                            .map(|a| crate::state::obs::oom_figures(self.backend().driver(), p.device, a))
                    });
                    if let Some(f) = figures {
                        err = AclError::new(err.code(), format!("{}; {f}", err.message()));
                    }
                    crate::api::obs::after_oom(self, p.device, size);
                }
                return Err(err);
            }
        };
        crate::state::obs::note(p.device, "alloc", g.addr.as_u64(), g.size_bytes, u64::from(s.queue.0));
        if let Some(w) = g.wait_for {
            // Internal dependency: this stream waits for the stream that freed the block, one
            // backend call made after the pool's lock (and the graph's) is released.
            drop(order);
            drop(inner);
            if let Err(e) = self.wait_for_point(api, &s, QueueId(w.stream), w.seq) {
                // Could not order the reuse: give the block back untouched.
                if let Ok(mut back) = lock(&p, api, p.handle()) {
                    let _ = back.pool.free(g.addr, w.stream, w.seq);
                }
                return Err(e);
            }
        }
        // ACLRS_SANITIZE=race and memcheck (crate::sanitize).
        self.race_note_alloc(p.device, g.addr.as_u64(), g.size_bytes, s.queue.0, s.submitted() + 1);
        self.memcheck_pool_track(p.device, &g, size);
        Ok(Some(g.addr.as_u64()))
    }

    /// `aclrtMemPoolFreeAsync`: frees a pool block — or plain `aclrtMalloc` memory — in the
    /// order of `stream`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a NULL stream; `ACL_ERROR_RT_PARAM_INVALID` for an interior
    /// pointer, a double free or memory that is neither.
    pub fn pool_free_async(&self, api: &str, ptr: u64, stream: u64) -> Result<()> {
        if stream == 0 {
            return Err(AclError::invalid(format!("{api}: stream is NULL")));
        }
        let s = self.submit_stream(api, stream)?;
        let Loc::Device(d) = locate(ptr) else {
            return Err(AclError::rt_invalid(format!("{api}: ptr {ptr:#x} is not device memory")));
        };
        if d != s.device {
            return Err(AclError::rt_invalid(format!(
                "{api}: ptr {ptr:#x} is on device {d}, the stream on device {}",
                s.device
            )));
        }
        // The free's point: the newest task the runtime submitted to the stream, from the
        // stream's own counter (no backend call, no lock).
        let seq = s.submitted();
        if let Some(p) = self.pool_of(api, d, ptr)? {
            let mut inner = lock(&p, api, p.handle())?;
            let size = inner
                .pool
                .free(DeviceAddr(ptr), s.queue.0, seq)
                .map_err(|e| pool_err(api, e, &format!("ptr {ptr:#x}")))?;
            let retired = inner.retired;
            drop(inner);
            // ACLRS_SANITIZE=race and memcheck (crate::sanitize).
            self.race_note_free(ptr, s.queue.0, seq);
            self.memcheck_pool_free(d, ptr);
            // The block is back in the pool for its stream at once (later work on that stream
            // may reuse it), so the free completes as it is requested.
            crate::state::obs::note(d, "free_requested", ptr, size, u64::from(s.queue.0));
            crate::state::obs::note(d, "free_completed", ptr, size, u64::from(s.queue.0));
            return if retired { self.collect_retired(api, &p) } else { Ok(()) };
        }
        // Plain device memory: it must be a live allocation base, freed once. Checked and
        // recorded under one hold of `mem`, so no other free can come between.
        self.owning_device(api, "ptr", ptr)?;
        {
            // Lock order: `mem` alone.
            let mut m = self.device(d).mem(api)?;
            crate::state::memory::check_free_target(api, &m, d, ptr)?;
            m.deferred.push(ptr, StreamPoint { stream: s.queue.0, seq }).map_err(
                |DeferError::AlreadyPending(_)| {
                    AclError::rt_invalid(format!(
                        "{api}: ptr {ptr:#x} already has a free pending (double free)"
                    ))
                },
            )?;
            self.device(d).note_deferred(m.deferred.len());
        }
        self.process_deferred(d);
        Ok(())
    }

    /// Whether a stream-ordered free of the plain allocation at `ptr` (on device `d`) is pending.
    pub(crate) fn has_deferred_free(&self, api: &str, d: u32, ptr: u64) -> Result<bool> {
        Ok(self.device(d).mem(api)?.deferred.pending(ptr).is_some())
    }

    /// The pool (live or retired) whose segments hold `ptr` of device `d`: one lookup in the
    /// device's address map, then the pool's handle slot (no pool's mutex is taken).
    fn pool_of(&self, api: &str, d: u32, ptr: u64) -> Result<Option<PoolHeld>> {
        let dev = self.device(d);
        // Lock order: `mem` alone, released before the pool is used.
        let owner = dev.mem(api)?.map.find(ptr).map(|r| r.value);
        Ok(match owner {
            Some(Owner::PoolSegment(h)) => dev.pools.table.get_ref(h),
            _ => None,
        })
    }

    /// The busy pool block containing `ptr`, if `ptr` lies in a pool: `Some(Some((base, size)))`
    /// for a block, `Some(None)` for pool memory that is not allocated, `None` outside pools.
    pub(crate) fn pool_block_of(&self, api: &str, ptr: u64) -> Result<Option<Option<(u64, u64)>>> {
        let Loc::Device(d) = locate(ptr) else { return Ok(None) };
        if d >= self.device_count() {
            return Ok(None);
        }
        let Some(p) = self.pool_of(api, d, ptr)? else { return Ok(None) };
        let inner = lock(&p, api, p.handle())?;
        Ok(Some(inner.pool.find_busy(DeviceAddr(ptr)).map(|(b, l)| (b.as_u64(), l))))
    }

    /// `aclrtFree` of pool memory: the block is freed at once (CANN's force free).
    ///
    /// Returns `None` when `ptr` is not in a pool.
    pub(crate) fn pool_free_now(&self, api: &str, ptr: u64) -> Option<Result<()>> {
        let Loc::Device(d) = locate(ptr) else { return None };
        let p = match self.pool_of(api, d, ptr) {
            Ok(p) => p?,
            Err(e) => return Some(Err(e)),
        };
        let r = lock(&p, api, p.handle()).and_then(|mut inner| {
            // A free ordered after nothing: the block is idle, any stream may reuse it at once.
            inner
                .pool
                .free(DeviceAddr(ptr), mm::pool::UNORDERED, 0)
                .map(|size| {
                    if crate::state::obs::recording() {
                        crate::state::obs::note(d, "free_requested", ptr, size, 0);
                        crate::state::obs::note(d, "free_completed", ptr, size, 0);
                    }
                })
                .map_err(|e| pool_err(api, e, &format!("devPtr {ptr:#x}")))
        });
        Some(r.and_then(|()| self.collect_retired(api, &p)))
    }

    /// Runs the stream-ordered frees of plain memory whose streams have got there. Settling
    /// looks at the oldest and newest pending free of each stream, asks the backend about them
    /// with no lock held, then settles each stream up to the newest point found complete.
    pub(crate) fn process_deferred(&self, d: u32) {
        const API: &str = "aclrtMemPoolFreeAsync";
        let dev = self.device(d);
        if !dev.has_deferred() {
            return;
        }
        let streams: Vec<(u32, u64, u64)> = {
            // Lock order: `mem` alone.
            let Ok(m) = dev.mem(API) else { return };
            if m.deferred.is_empty() {
                return;
            }
            m.deferred.streams().collect()
        };
        let order = self.order(d);
        let mut ready = Vec::new();
        for (stream, oldest, newest) in streams {
            let done = if order.is_complete(StreamPoint { stream, seq: newest }) {
                newest
            } else if order.is_complete(StreamPoint { stream, seq: oldest }) {
                oldest
            } else {
                continue;
            };
            let Ok(mut m) = dev.mem(API) else { return };
            m.deferred.settle_stream(stream, done, &mut |base| ready.push(base));
            dev.note_deferred(m.deferred.len());
        }
        for base in ready {
            let _ = self.free_device_now(API, d, base);
        }
    }

    /// At a synchronize of device `d`: deferred frees, then each pool releases down to its
    /// threshold.
    pub(crate) fn pools_on_sync(&self, d: u32) {
        const API: &str = "aclrtSynchronizeStream";
        self.process_deferred(d);
        for p in self.device(d).pools.table.live() {
            let Ok(mut inner) = lock(&p, API, p.handle()) else { continue };
            if inner.retired {
                drop(inner);
                let _ = self.collect_retired(API, &p);
                continue;
            }
            // Lock order: the pool → the graph (a leaf), taken per pool.
            let order = self.order(d);
            let mut seg = Segments { rt: self, dev: d, pool: p.handle() };
            inner.pool.release_to_threshold(&mut seg, &order);
        }
    }

    /// Device reset: every pool of `d` and every deferred free goes (the allocator's teardown
    /// gives their memory back).
    pub(crate) fn pools_teardown(&self, d: u32) {
        let dev = self.device(d);
        dev.pools.clear();
        if let Ok(mut m) = dev.mem("aclrtResetDevice") {
            m.deferred.drain(&mut |_| {});
            dev.note_deferred(0);
        }
    }

    /// `aclrtMemPoolTrimTo`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INTERNAL_ERROR` (CANN's code) when `minBytesToKeep` is below the bytes in
    /// use or above the pool's size, or for an unknown pool.
    pub fn pool_trim_to(&self, api: &str, handle: u64, keep: u64) -> Result<()> {
        self.check_pool_soc(api)?;
        let p = self.pool(api, handle)?;
        let d = p.device;
        let mut inner = lock(&p, api, handle)?;
        let order = self.order(d);
        let mut seg = Segments { rt: self, dev: d, pool: handle };
        match inner.pool.trim_to(&mut seg, &order, keep) {
            Ok(_) => Ok(()),
            Err(PoolError::InvalidArgument) => Err(AclError::new(
                ACL_ERROR_RT_INTERNAL_ERROR,
                format!(
                    "{api}: minBytesToKeep {keep} is more than the pool's size {}",
                    inner.pool.max_bytes()
                ),
            )),
            Err(e) => Err(pool_err(api, e, &format!("minBytesToKeep {keep}"))),
        }
    }

    /// `aclrtMemPoolSetAttr`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a read-only attribute; `ACL_ERROR_RT_INTERNAL_ERROR`
    /// (CANN's code) for a threshold above the pool's size or a non-zero high-water reset;
    /// `ACL_ERROR_INVALID_PARAM` for an unknown attribute.
    pub fn pool_set_attr(&self, api: &str, handle: u64, a: u32, v: AttrValue) -> Result<()> {
        self.check_pool_soc(api)?;
        let p = self.pool(api, handle)?;
        let mut inner = lock(&p, api, handle)?;
        let mut modes = inner.pool.modes();
        match (a, v) {
            (attr::REUSE_FOLLOW_EVENT_DEPENDENCIES, AttrValue::U32(x)) => {
                modes.follow_event_dependencies = x != 0
            }
            (attr::REUSE_ALLOW_OPPORTUNISTIC, AttrValue::U32(x)) => modes.allow_opportunistic = x != 0,
            (attr::REUSE_ALLOW_INTERNAL_DEPENDENCIES, AttrValue::U32(x)) => {
                modes.allow_internal_dependencies = x != 0
            }
            (attr::RELEASE_THRESHOLD, AttrValue::U64(x)) => {
                return inner.pool.set_release_threshold(x).map_err(|_| {
                    AclError::new(
                        ACL_ERROR_RT_INTERNAL_ERROR,
                        format!(
                            "{api}: release threshold {x} is more than the pool's size {}",
                            inner.pool.max_bytes()
                        ),
                    )
                })
            }
            (attr::RESERVED_MEM_CURRENT | attr::USED_MEM_CURRENT, _) => {
                return Err(AclError::rt_invalid(format!("{api}: attribute {a:#x} is read-only")))
            }
            (attr::RESERVED_MEM_HIGH, AttrValue::U64(0)) => {
                inner.pool.reset_reserved_high();
                return Ok(());
            }
            (attr::USED_MEM_HIGH, AttrValue::U64(0)) => {
                inner.pool.reset_used_high();
                return Ok(());
            }
            (attr::RESERVED_MEM_HIGH | attr::USED_MEM_HIGH, _) => {
                return Err(AclError::new(
                    ACL_ERROR_RT_INTERNAL_ERROR,
                    format!("{api}: attribute {a:#x} can only be reset, with 0"),
                ))
            }
            _ => {
                return Err(AclError::invalid(format!(
                    "{api}: attr {a:#x} is not an aclrtMemPoolAttr (1..=8)"
                )))
            }
        }
        inner.pool.set_modes(modes);
        Ok(())
    }

    /// `aclrtMemPoolGetAttr`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an unknown attribute; `ACL_ERROR_RT_INTERNAL_ERROR` for an
    /// unknown pool.
    pub fn pool_get_attr(&self, api: &str, handle: u64, a: u32) -> Result<AttrValue> {
        self.check_pool_soc(api)?;
        let p = self.pool(api, handle)?;
        let inner = lock(&p, api, handle)?;
        let m = inner.pool.modes();
        let st = inner.pool.stats();
        Ok(match a {
            attr::REUSE_FOLLOW_EVENT_DEPENDENCIES => AttrValue::U32(u32::from(m.follow_event_dependencies)),
            attr::REUSE_ALLOW_OPPORTUNISTIC => AttrValue::U32(u32::from(m.allow_opportunistic)),
            attr::REUSE_ALLOW_INTERNAL_DEPENDENCIES => {
                AttrValue::U32(u32::from(m.allow_internal_dependencies))
            }
            attr::RELEASE_THRESHOLD => AttrValue::U64(inner.pool.release_threshold()),
            attr::RESERVED_MEM_CURRENT => AttrValue::U64(st.reserved.current),
            attr::RESERVED_MEM_HIGH => AttrValue::U64(st.reserved.peak),
            attr::USED_MEM_CURRENT => AttrValue::U64(st.used.current),
            attr::USED_MEM_HIGH => AttrValue::U64(st.used.peak),
            _ => {
                return Err(AclError::invalid(format!(
                    "{api}: attr {a:#x} is not an aclrtMemPoolAttr (1..=8)"
                )))
            }
        })
    }
}
