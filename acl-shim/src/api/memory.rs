//! The memory calls of the runtime (`impl Runtime`): allocation, free, synchronous copy and set,
//! the memory queries; over the per-device state of [`crate::state::memory`].
//!
//! # Which memory an address is
//!
//! The window an address falls in says its device (or the pinned-host window); within a device
//! window, one lookup in that device's `DevMem::map` says whether it is a pool segment (then the
//! pool says which block) or a VMM mapping, and for an address it does not hold the allocator's
//! slot table says which live allocation it is (`DevMem::unmapped_allocation`). No call walks
//! the pools, the allocator and the VMM tables in turn.
//!
//! # Locking
//!
//! A copy or memset check ([`Runtime::plan_memcpy`], [`Runtime::plan_memset`]) takes, per
//! device end, that device's `mem` once (plus the pool's mutex for pool memory, or the device's
//! `vmm` for mapped memory, and each device's `vmm` once for a cross-device peer check); a
//! pinned end takes no lock (the published view of the pinned-host table,
//! [`crate::state::memory::PinnedView`]): no process-wide lock, no walk over pools.
//!
//! Lock acquisitions on `aclrtMemcpyAsync` in steady state, both ends plain device allocations
//! of the current device (the common case), one slice: the runtime lookup, the current device
//! and the stream handle take none (atomics); the destination's `mem` once (live and writable
//! checked under one hold), the source's `mem` once, and the backend's submit once (on the
//! software NPU, the device scheduler's mutex; its device slot is read lock-free) = **3**. More
//! only off that case: a pool-block end checks the block in its pool (the pool's mutex and
//! `mem` again, for liveness and again for writability at the destination), a mapped end the
//! device's `vmm`, a cross-device copy one `vmm` for the peer check, and each further
//! slice of a copy above the slicing limit one more submit.
//!
//! Lock order (see [`crate::device`]): a device's `vmm`, then a pool's mutex, then the device's
//! `mem`; the pinned-host lock is taken alone. No backend call runs under `mem` for a block (an
//! allocation with pages of its own): the allocator plans it under the lock (VA and pages, with
//! a backer that only records), the pages are backed with the lock released, and the block is
//! committed under the lock again, or undone; a free takes the block out of the tables under the
//! lock ([`mm::device::DeviceAllocator::detach`], its VA stays taken), unbacks with no lock held,
//! then gives the VA back. Only two cases still back under `mem`: slab objects (small objects
//! share a chunk's backed segments, so a segment must be backed before any object in it is
//! handed out), and the fallback path after the backend refused the planned pages (the
//! allocator's choice of smaller pages needs each answer at once). Pinned-host memory is backed
//! and unbacked with no lock held (reserve under the lock, back, re-lock to commit or undo; a
//! free marks the range as being freed, unbacks, then removes it).

use hal::{DeviceAddr, DeviceId, MemAttr, MemoryInfo, PageSize, VaRange};
use mm::device::{DeviceAllocator, FreeError, Info as DeviceInfo, NotLive};
use mm::heap::Allocation;

use crate::codes::*;
use crate::device::MemGuard;
use crate::error::{AclError, Result};
use crate::runtime::{round_up, Runtime};
use crate::state::memory::*;
use crate::tls::Local;

impl Runtime {
    /// `aclrtMalloc` and its variants: allocates device memory on the current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0, an overflowing size, a policy the entry point does
    /// not accept or a bad configuration attribute; `ACL_ERROR_RT_CONTEXT_NULL` without a
    /// current device; `ACL_ERROR_RT_MEMORY_ALLOCATION` when memory of an allowed page size
    /// runs out. Nothing changes on error.
    pub fn malloc(
        &self,
        api: &str,
        size: u64,
        policy: u32,
        which: MallocApi,
        cfg: &[CfgAttr],
    ) -> Result<u64> {
        // ACLRS_SANITIZE=memcheck: room for the redzone and the guard page (crate::sanitize).
        let Some(padded) = crate::sanitize::memcheck::padded_size(size) else {
            return self.malloc_unchecked(api, size, policy, which, cfg);
        };
        let p = self.malloc_unchecked(api, padded, policy, which, cfg)?;
        self.memcheck_track(self.current_device(api)?, p, size);
        Ok(p)
    }

    /// [`Self::malloc`] without the sanitizer's placement.
    fn malloc_unchecked(
        &self,
        api: &str,
        size: u64,
        policy: u32,
        which: MallocApi,
        cfg: &[CfgAttr],
    ) -> Result<u64> {
        let req = mm::policy::request(which, self.soc, size, policy)
            .map_err(|e| AclError::invalid(format!("{api}: {} (size {size}, policy {policy:#x})", e.0)))?;
        let d = self.current_device(api)?;
        self.process_deferred(d);
        let mut component = mm::device::APP;
        for (i, a) in cfg.iter().enumerate() {
            match a.kind {
                ATTR_RSV => {}
                // Module ids above the application's collapse to it, as in CANN.
                ATTR_MODULE_ID => component = a.u16().min(mm::device::APP),
                ATTR_DEVICE_ID if a.u32() == d => {}
                ATTR_DEVICE_ID => {
                    return Err(AclError::invalid(format!(
                        "{api}: cfg->attrs[{i}] names device {} but the current device is {d}",
                        a.u32()
                    )))
                }
                ATTR_VA_FLAG => {
                    return Err(AclError::invalid(format!(
                        "{api}: cfg->attrs[{i}]: ACL_RT_MEM_ATTR_VA_FLAG applies to host memory only"
                    )))
                }
                k => {
                    return Err(AclError::invalid(format!(
                        "{api}: cfg->attrs[{i}].attr {k} is not an aclrtMallocAttrType (0..=3)"
                    )))
                }
            }
        }
        if !DeviceAllocator::is_slab_request(&req) {
            if let Some(p) = self.malloc_block_unlocked(api, d, &req, component)? {
                return Ok(p);
            }
            // The backend refused the planned pages: the path below, under the lock, takes the
            // allocator's fallbacks to smaller pages and reports a failure with its figures.
        }
        // Lock order: `mem` alone. (Slab objects share backed segments, and the fallback path
        // needs each answer at once: the allocator backs under the lock here.)
        let mut st = self.device(d).mem(api)?;
        let DevMem { alloc, map, .. } = &mut *st;
        let alloc = alloc.as_mut().ok_or_else(|| {
            AclError::new(ACL_ERROR_RT_CONTEXT_NULL, format!("{api}: device {d} has no context"))
        })?;
        let mut backer = HalBacker::new(self.backend.driver(), d);
        let backed_before = crate::state::obs::recording().then(|| alloc.accounting().backed.current);
        match alloc.allocate(&mut backer, &req, component) {
            Ok(p) => {
                // Slab objects stay out of the address map: the allocator's slot table answers
                // for them in O(1) (`find_slab`), so the map's size does not grow with them.
                if !DeviceAllocator::is_slab_request(&req)
                    && blocks_in_map()
                    && map
                        .insert(
                            p.as_u64(),
                            alloc.get(p).map_or(req.usable_bytes, |i| i.usable_bytes),
                            Owner::Allocation,
                        )
                        .is_err()
                {
                    // Cannot happen (the allocator handed out fresh VA); undo so nothing changes.
                    let _ = alloc.free(&mut backer, p);
                    return Err(AclError::new(
                        ACL_ERROR_RT_INTERNAL_ERROR,
                        format!("{api}: the allocation at {p} overlaps the address map"),
                    ));
                }
                if let Some(before) = backed_before {
                    let grown = alloc.accounting().backed.current.saturating_sub(before);
                    let slab = alloc.find(p).is_some_and(|i| i.is_slab);
                    // A slab chunk is one segment while it holds objects; growing or shrinking
                    // it by 64 KiB segments is not a segment event, and a spare is no segment.
                    let new_chunk = slab && alloc.chunk_objects(p) == Some(1);
                    drop(st);
                    crate::state::obs::alloc_events(d, p.as_u64(), req.usable_bytes, grown, slab, new_chunk);
                }
                Ok(p.as_u64())
            }
            Err(e) => {
                let why = match e {
                    mm::device::AllocError::OutOfVa => "no device VA range is left".to_owned(),
                    mm::device::AllocError::Backing(e) => e.detail().to_owned(),
                };
                let code = match e {
                    mm::device::AllocError::Backing(h) if h.kind() != hal::ErrorKind::OutOfMemory => {
                        AclError::from_hal(h, api).code()
                    }
                    _ => ACL_ERROR_RT_MEMORY_ALLOCATION,
                };
                let figures = if code == ACL_ERROR_RT_MEMORY_ALLOCATION {
                    format!("; {}", crate::state::obs::oom_figures(self.backend.driver(), d, alloc))
                } else {
                    String::new()
                };
                drop(st);
                if code == ACL_ERROR_RT_MEMORY_ALLOCATION {
                    crate::api::obs::after_oom(self, d, req.usable_bytes);
                }
                Err(AclError::new(
                    code,
                    format!(
                        "{api}: cannot allocate {size} bytes ({} after rounding) on device {d} with {}: {why}{figures}",
                        req.usable_bytes,
                        policy_name(policy)
                    ),
                ))
            }
        }
    }

    /// Allocates a block (not a slab object) with no lock held across the backend: the
    /// allocator plans it under `mem` (VA, pages), the pages are backed after the lock is
    /// released, and the block is committed to the address map under `mem` again. `Ok(None)`
    /// when the plan could not be made or backed (everything undone): the caller takes the
    /// locked path.
    fn malloc_block_unlocked(
        &self,
        api: &str,
        d: u32,
        req: &mm::policy::Request,
        component: mm::device::Component,
    ) -> Result<Option<u64>> {
        use mm::device::Backer as _;
        let drv = self.backend.driver();
        let no_context =
            || AclError::new(ACL_ERROR_RT_CONTEXT_NULL, format!("{api}: device {d} has no context"));
        let mut plan = Planned { hal: HalBacker::new(drv, d), backs: smallvec::SmallVec::new() };
        let (p, epoch) = {
            // Lock order: `mem` alone.
            let mut st = self.device(d).mem(api)?;
            let epoch = st.epoch;
            let alloc = st.alloc.as_mut().ok_or_else(no_context)?;
            match alloc.allocate(&mut plan, req, component) {
                Ok(p) => {
                    // Not live for copies until its pages are backed (see `DevMem::pending`).
                    st.pending.push(p.as_u64());
                    (p, epoch)
                }
                Err(_) => return Ok(None),
            }
        };
        let mut hal = HalBacker::new(drv, d);
        // All pieces in one call: the backend may back adjacent pieces as one mapping. All or
        // nothing.
        let ok = hal.back_many(&plan.backs).is_ok();
        // Lock order: `mem` alone.
        let mut st = self.device(d).mem(api)?;
        if let Some(i) = st.pending.iter().position(|&b| b == p.as_u64()) {
            st.pending.swap_remove(i);
        }
        if st.epoch != epoch {
            // The device was reset meanwhile: the block went with its allocator.
            return Err(no_context());
        }
        let DevMem { alloc, map, .. } = &mut *st;
        let alloc = alloc.as_mut().ok_or_else(no_context)?;
        let usable = alloc.get(p).map_or(req.usable_bytes, |i| i.usable_bytes);
        if !ok || (blocks_in_map() && map.insert(p.as_u64(), usable, Owner::Allocation).is_err()) {
            if let Ok(Some(det)) = alloc.detach(p) {
                if ok {
                    for r in det.backed_ranges() {
                        let _ = hal.unback(r);
                    }
                }
                alloc.release_detached(det);
            }
            return Ok(None);
        }
        drop(st);
        if crate::state::obs::recording() {
            let grown: u64 = plan.backs.iter().map(|b| b.0.len_bytes()).sum();
            crate::state::obs::alloc_events(d, p.as_u64(), req.usable_bytes, grown, false, false);
        }
        Ok(Some(p.as_u64()))
    }

    /// The device a device pointer belongs to, checked against the current device.
    pub(crate) fn owning_device(&self, api: &str, what: &str, ptr: u64) -> Result<u32> {
        let d = match locate(ptr) {
            Loc::Device(d) if d < self.device_count() => d,
            Loc::Pinned => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: {what} {ptr:#x} is pinned host memory; free it with aclrtFreeHost"
                )))
            }
            _ => return Err(AclError::rt_invalid(format!("{api}: {what} {ptr:#x} is not device memory"))),
        };
        let cur = self.current_device(api)?;
        if cur != d {
            return Err(AclError::rt_invalid(format!(
                "{api}: {what} {ptr:#x} belongs to device {d}, but the current device is {cur}"
            )));
        }
        Ok(d)
    }

    /// `aclrtFree`: frees a device allocation of the current device immediately.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a live allocation base of the current
    /// device (double free, interior or host pointer, another device); nothing changes then.
    pub fn free(&self, api: &str, ptr: u64) -> Result<()> {
        let d = self.owning_device(api, "devPtr", ptr)?;
        // A slab object (the common small allocation) with no sanitizer: one lock, one lookup.
        // A slab chunk's slot is never pool memory, and memcheck's quarantine takes every
        // allocation first when it is on.
        if !crate::sanitize::settings().memcheck {
            // Lock order: `mem` alone.
            let st = self.device(d).mem(api)?;
            if st.alloc.as_ref().is_some_and(|a| a.in_slab_chunk(DeviceAddr(ptr))) {
                return self.free_device_locked(api, d, ptr, st);
            }
        }
        // Pool memory freed with aclrtFree: the block goes back to its pool at once.
        if let Some(r) = self.pool_free_now(api, ptr) {
            return r;
        }
        // ACLRS_SANITIZE=memcheck: into the quarantine (crate::sanitize).
        if let Some(r) = self.memcheck_free(api, d, ptr) {
            return r;
        }
        self.free_device_now(api, d, ptr)
    }

    /// `aclrtFreeWithDevSync`: waits for every task of the pointer's device, then frees.
    ///
    /// # Errors
    ///
    /// As [`Runtime::free`]; nothing is waited for when the pointer is refused.
    pub fn free_with_dev_sync(&self, api: &str, ptr: u64) -> Result<()> {
        let d = self.owning_device(api, "devPtr", ptr)?;
        let block = self.pool_block_of(api, ptr)?;
        if block.is_none() && self.has_deferred_free(api, d, ptr)? {
            return Err(AclError::rt_invalid(format!(
                "{api}: devPtr {ptr:#x} already has a stream-ordered free pending"
            )));
        }
        self.check_free_target(api, ptr).or_else(|e| match block {
            Some(Some(_)) => Ok(()),
            _ => Err(e),
        })?;
        self.wait_device_idle(d);
        self.free(api, ptr)
    }

    /// `aclrtFreeHostWithDevSync`: waits for every task of every device this process uses
    /// (pinned memory may be used by any of them), then frees.
    ///
    /// # Errors
    ///
    /// As [`Runtime::free_host`]; nothing is waited for when the pointer is refused.
    pub fn free_host_with_dev_sync(&self, api: &str, ptr: u64) -> Result<()> {
        if locate(ptr) != Loc::Pinned {
            return self.free_host(api, ptr);
        }
        {
            // Lock order: the pinned-host lock alone.
            let host = self.host(api)?;
            if let Err(why) = host.heap.get(DeviceAddr(ptr)) {
                return Err(not_live(api, "hostPtr", ptr, why));
            }
        }
        for d in 0..self.device_count() {
            if self.device(d).is_open() {
                self.wait_device_idle(d);
            }
        }
        self.free_host(api, ptr)
    }

    /// Frees the plain device allocation at `ptr` on device `d`, whatever the current device.
    pub(crate) fn free_device_now(&self, api: &str, d: u32, ptr: u64) -> Result<()> {
        // Lock order: `mem` alone.
        let st = self.device(d).mem(api)?;
        self.free_device_locked(api, d, ptr, st)
    }

    /// [`Self::free_device_now`] with device `d`'s memory lock held (`st`); a block's pages are
    /// unbacked after the lock is let go.
    fn free_device_locked(&self, api: &str, d: u32, ptr: u64, mut st: MemGuard<'_>) -> Result<()> {
        if st.deferred.pending(ptr).is_some() {
            return Err(AclError::rt_invalid(format!(
                "{api}: devPtr {ptr:#x} already has a stream-ordered free pending (aclrtMemPoolFreeAsync): double free"
            )));
        }
        let epoch = st.epoch;
        let DevMem { alloc, map, managed, .. } = &mut *st;
        let Some(alloc) = alloc.as_mut() else {
            return Err(AclError::rt_invalid(format!("{api}: device {d} has no context")));
        };
        // An address in a slab chunk is a slab object's (the free below checks it): it shares
        // its pages, so it is freed under the lock, with one lookup. Anything else may be a
        // block: out of the tables under the lock, unbacked with no lock held, then its VA goes
        // back (it is not handed out again before its pages are gone).
        let detached = if alloc.in_slab_chunk(DeviceAddr(ptr)) {
            Ok(None)
        } else {
            if alloc.get(DeviceAddr(ptr)).is_ok_and(|i| i.component == crate::state::memory::POOL_COMPONENT) {
                return Err(AclError::rt_invalid(format!(
                    "{api}: devPtr {ptr:#x} is a memory pool's segment"
                )));
            }
            alloc.detach(DeviceAddr(ptr))
        };
        match detached {
            Ok(Some(det)) => {
                if blocks_in_map() {
                    map.remove(ptr);
                }
                managed.remove(&ptr);
                drop(st);
                // All pieces in one call, in address order: the backend may unback adjacent
                // pieces as one mapping.
                let mut ranges: smallvec::SmallVec<[VaRange; 4]> = det.backed_ranges().collect();
                ranges.sort_unstable_by_key(|r| r.start().as_u64());
                let unbacked = self.backend.driver().unback_many(DeviceId(d), &ranges);
                let shrunk = if unbacked.is_ok() { ranges.iter().map(|r| r.len_bytes()).sum() } else { 0 };
                let info = det.info();
                if let Err(e) = unbacked {
                    // A bug below: the VA stays taken (never reused over a live backing).
                    drop(det);
                    return Err(AclError::from_hal(e, api));
                }
                // Lock order: `mem` alone. (After a reset meanwhile the VA went with its allocator.)
                if let Ok(mut st) = self.device(d).mem(api) {
                    let same = st.epoch == epoch;
                    match st.alloc.as_mut() {
                        Some(a) if same => a.release_detached(det),
                        _ => drop(det),
                    }
                }
                if crate::state::obs::recording() {
                    crate::state::obs::free_events(d, ptr, info.usable_bytes, shrunk, false, false);
                }
                return Ok(());
            }
            // A slab object shares its pages: freed under the lock.
            Ok(None) => {}
            Err(why) => return Err(not_live(api, "devPtr", ptr, why)),
        }
        let mut backer = HalBacker::new(self.backend.driver(), d);
        let backed_before = crate::state::obs::recording().then(|| alloc.accounting().backed.current);
        match alloc.free(&mut backer, DeviceAddr(ptr)) {
            Ok(info) => {
                if !info.is_slab {
                    map.remove(ptr);
                }
                managed.remove(&ptr);
                if let Some(before) = backed_before {
                    let shrunk = before.saturating_sub(alloc.accounting().backed.current);
                    let chunk_gone = info.is_slab && alloc.chunk_objects(DeviceAddr(ptr)).unwrap_or(0) == 0;
                    drop(st);
                    crate::state::obs::free_events(
                        d,
                        ptr,
                        info.usable_bytes,
                        shrunk,
                        info.is_slab,
                        chunk_gone,
                    );
                }
                Ok(())
            }
            Err(FreeError::NotLive(why)) => Err(not_live(api, "devPtr", ptr, why)),
            Err(FreeError::Backing(e)) => Err(AclError::from_hal(e, api)),
        }
    }

    /// Checks that `ptr` could be freed now: a live plain allocation base of the current device.
    pub(crate) fn check_free_target(&self, api: &str, ptr: u64) -> Result<()> {
        let d = self.owning_device(api, "ptr", ptr)?;
        // Lock order: `mem` alone.
        check_free_target(api, &*self.device(d).mem(api)?, d, ptr)
    }

    /// Facts about the live device allocation containing `ptr` (any device of this process):
    /// one lookup in the device's address map, then the allocator or the pool it names.
    ///
    /// # Errors
    ///
    /// 507000 when the device's memory state (or the pool) is failed.
    pub(crate) fn device_info_of(&self, api: &str, ptr: u64) -> Result<Option<(u32, DeviceInfo)>> {
        let Loc::Device(d) = locate(ptr) else { return Ok(None) };
        if d >= self.device_count() {
            return Ok(None);
        }
        {
            // Lock order: `mem` alone, released before a pool is locked.
            let m = self.device(d).mem(api)?;
            match m.map.find(ptr).map(|r| r.value) {
                Some(Owner::PoolSegment(_)) => {}
                Some(Owner::Allocation) => {
                    return Ok(m.alloc.as_ref().and_then(|a| a.find(DeviceAddr(ptr))).map(|i| (d, i)))
                }
                Some(Owner::Mapping) => return Ok(None),
                // Slab objects (and, without a sanitizer, blocks) are not in the map.
                None => return Ok(m.unmapped_allocation(ptr).map(|i| (d, i))),
            }
        }
        // Pool memory: a busy block of a pool, on 2 MiB pages.
        let Some(Some((base, size))) = self.pool_block_of(api, ptr)? else { return Ok(None) };
        Ok(Some((
            d,
            DeviceInfo {
                base: DeviceAddr(base),
                usable_bytes: size,
                page_size: PageSize::Huge,
                attrs: MemAttr::CACHED,
                component: crate::state::memory::POOL_COMPONENT,
                is_slab: false,
            },
        )))
    }

    /// `aclrtMallocHost`: allocates pinned host memory.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0 or overflow; `ACL_ERROR_RT_MEMORY_ALLOCATION` when
    /// the pinned window is exhausted.
    pub fn malloc_host(&self, api: &str, size: u64) -> Result<u64> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        let usable = round_up(size, 64)
            .ok_or_else(|| AclError::invalid(format!("{api}: size {size} overflows when rounded")))?;
        // Lock order: the pinned-host lock alone; released while the backend pins the range
        // (the reservation keeps its VA from anyone else meanwhile).
        let range = self
            .host(api)?
            .heap
            .reserve(usable, PageSize::Normal)
            .map_err(|e| AclError::from_mm(e, &format!("{api}: no pinned-host VA for {size} bytes")))?;
        if let Err(e) = self.backend.driver().back_host(range) {
            // `relock`: one unreserve of the range this call reserved; all or nothing.
            let _ = crate::sync::relock(&self.host).heap.unreserve(range);
            return Err(AclError::new(
                ACL_ERROR_RT_MEMORY_ALLOCATION,
                format!("{api}: cannot pin {size} bytes: {}", e.detail()),
            ));
        }
        let committed = self.host(api).and_then(|mut h| {
            h.heap
                .commit(Allocation {
                    range,
                    usable_bytes: usable,
                    page_size: PageSize::Normal,
                    attrs: MemAttr::empty(),
                })
                .map_err(|e| AclError::from_mm(e, api))?;
            self.pinned.publish(&h);
            Ok(())
        });
        if let Err(e) = committed {
            let _ = self.backend.driver().unback_host(range);
            let _ = crate::sync::relock(&self.host).heap.unreserve(range);
            return Err(e);
        }
        Ok(range.start().as_u64())
    }

    /// `aclrtFreeHost`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a live pinned allocation.
    pub fn free_host(&self, api: &str, ptr: u64) -> Result<()> {
        if let Loc::Device(_) = locate(ptr) {
            return Err(AclError::rt_invalid(format!(
                "{api}: hostPtr {ptr:#x} is device memory; free it with aclrtFree"
            )));
        }
        if locate(ptr) != Loc::Pinned {
            return Err(AclError::rt_invalid(format!(
                "{api}: hostPtr {ptr:#x} was not allocated by aclrtMallocHost"
            )));
        }
        // Lock order: the pinned-host lock alone. The range is marked as being freed (a second
        // free is refused, its VA stays taken), unbacked with no lock held, then removed.
        let range = {
            let mut host = self.host(api)?;
            let range =
                host.heap.get(DeviceAddr(ptr)).map_err(|why| not_live(api, "hostPtr", ptr, why))?.range;
            if !host.freeing.insert(ptr) {
                return Err(not_live(api, "hostPtr", ptr, NotLive::Freed));
            }
            // From here on no copy check finds the range.
            self.pinned.publish(&host);
            range
        };
        let unbacked = self.backend.driver().unback_host(range);
        // `relock`: one remove from `freeing` and one from the heap of the entry checked above.
        let mut host = crate::sync::relock(&self.host);
        host.freeing.remove(&ptr);
        let removed = unbacked.map_err(|e| AclError::from_hal(e, api)).and_then(|()| {
            host.heap.remove(DeviceAddr(ptr)).map_err(|why| not_live(api, "hostPtr", ptr, why))
        });
        // Published either way: a failed unback leaves the allocation live again.
        self.pinned.publish(&host);
        removed.map(drop)
    }

    /// Checks that `[addr, addr + len)` at `loc` is live memory of this process.
    fn check_live(&self, api: &str, what: &str, loc: Loc, addr: u64, len: u64) -> Result<()> {
        let ok = match loc {
            Loc::Device(d) if d < self.device_count() => {
                // One lookup in the device's address map (and for an address it does not hold,
                // the allocator's slot table, where slab objects are). Lock order: `mem` alone,
                // released before a pool or the VMM state is looked at.
                let (region, slab) = {
                    let m = self.device(d).mem(api)?;
                    let region = m.map.find(addr);
                    let slab = match region {
                        None => m.unmapped_allocation(addr),
                        Some(_) => None,
                    };
                    (region, slab)
                };
                match region {
                    Some(r) if r.value == Owner::Allocation => {
                        addr.checked_add(len.max(1)).is_some_and(|e| e <= r.end())
                    }
                    // Pool memory: only the bytes of an allocated block are live.
                    Some(r) if matches!(r.value, Owner::PoolSegment(_)) => self
                        .pool_block_of(api, addr)?
                        .flatten()
                        .is_some_and(|(b, l)| addr.checked_add(len).is_some_and(|e| e <= b + l)),
                    // Memory mapped with aclrtMapMem or imported by IPC key is live device
                    // memory too; a range may span adjacent mappings of one reservation.
                    Some(r) => {
                        addr.checked_add(len.max(1)).is_some_and(|e| e <= r.end())
                            || self.vmm_contains_checked(api, d, addr, len)?
                    }
                    // Slab objects (and, without a sanitizer, blocks) are not in the map: the
                    // allocator's slot table has them.
                    None => slab.is_some_and(|i| {
                        addr.checked_add(len.max(1)).is_some_and(|e| e <= i.base.as_u64() + i.usable_bytes)
                    }),
                }
            }
            Loc::Device(_) => false,
            // Lock-free: the published view of the pinned-host table.
            Loc::Pinned => self.pinned.contains_range(addr, len),
            Loc::Unregistered => {
                if crosses_windows(addr, len) {
                    return Err(AclError::rt_invalid(format!(
                        "{api}: {what} range [{addr:#x}, +{len}) runs from ordinary host memory into a runtime VA window"
                    )));
                }
                true
            }
        };
        if ok {
            return Ok(());
        }
        let place = match loc {
            Loc::Device(d) => format!("a live allocation of device {d}"),
            _ => "a live aclrtMallocHost allocation".to_owned(),
        };
        Err(AclError::rt_invalid(format!("{api}: {what} range [{addr:#x}, +{len}) is not inside {place}")))
    }

    /// [`Self::check_live`] then [`Self::check_writable`] for a destination `[addr, addr +
    /// len)` (`len > 0`). One inside one plain allocation or slab object (the common case) is
    /// checked under one hold of its device's `mem`; any other goes through the two checks
    /// (one hold each, plus what they name).
    fn check_live_writable(
        &self,
        l: &Local,
        api: &str,
        what: &str,
        loc: Loc,
        addr: u64,
        len: u64,
    ) -> Result<()> {
        let plain = match loc {
            Loc::Device(d) if d < self.device_count() => {
                let dev = self.device(d);
                // No lock when this thread found the range's allocation writable in the state
                // the device still shows (the common case of a stream of async memsets or
                // copies into one buffer).
                if live_cache::holds(l, dev.mem_version(), addr, len) {
                    return Ok(());
                }
                // Lock order: `mem` alone.
                let mut m = dev.mem(api)?;
                let found = match m.map.find(addr) {
                    Some(r)
                        if r.value == Owner::Allocation
                            && addr.checked_add(len).is_some_and(|e| e <= r.end()) =>
                    {
                        m.alloc
                            .as_ref()
                            .and_then(|a| a.find(DeviceAddr(addr)))
                            .map(|i| (r.start, r.end(), i.attrs))
                    }
                    // Slab objects (and, without a sanitizer, blocks) are not in the map: the
                    // allocator's slot table has them.
                    None => m
                        .unmapped_allocation(addr)
                        .map(|i| (i.base.as_u64(), i.base.as_u64() + i.usable_bytes, i.attrs))
                        .filter(|&(_, end, _)| addr.checked_add(len).is_some_and(|e| e <= end)),
                    _ => None,
                };
                if let Some((start, end, _)) = found.filter(|f| !f.2.contains(MemAttr::READONLY)) {
                    live_cache::remember(l, m.seal(), start, end);
                }
                found.map(|f| f.2)
            }
            _ => None,
        };
        match plain {
            Some(attrs) if attrs.contains(MemAttr::READONLY) => Err(AclError::rt_invalid(format!(
                "{api}: {what} {addr:#x} is read-only from user space (ACL_MEM_ACCESS_USER_SPACE_READONLY)"
            ))),
            Some(_) => Ok(()),
            None => {
                self.check_live(api, what, loc, addr, len)?;
                self.check_writable(api, what, loc, addr)
            }
        }
    }

    /// Checks that user space may write the device memory at `addr` (not
    /// `ACL_MEM_ACCESS_USER_SPACE_READONLY`).
    fn check_writable(&self, api: &str, what: &str, loc: Loc, addr: u64) -> Result<()> {
        if let Loc::Device(_) = loc {
            if let Some((_, info)) = self.device_info_of(api, addr)? {
                if info.attrs.contains(MemAttr::READONLY) {
                    return Err(AclError::rt_invalid(format!(
                        "{api}: {what} {addr:#x} is read-only from user space (ACL_MEM_ACCESS_USER_SPACE_READONLY)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Validates an `aclrtMemcpy` and says what it will do.
    ///
    /// # Errors
    ///
    /// The documented codes for null pointers, bad kinds, `count > destMax`, kinds that do not
    /// match the addresses and ranges outside live memory.
    pub fn plan_memcpy(
        &self,
        api: &str,
        dst: u64,
        dest_max: u64,
        src: u64,
        count: u64,
        kind_value: u32,
    ) -> Result<CopyPlan> {
        let nop = CopyPlan { dst: Loc::Unregistered, src: Loc::Unregistered, count: 0 };
        if count == 0 {
            return Ok(nop);
        }
        if dst == 0 {
            return Err(AclError::invalid(format!("{api}: dst is NULL")));
        }
        if src == 0 {
            return Err(AclError::invalid(format!("{api}: src is NULL")));
        }
        let (ld, ls) = (locate(dst), locate(src));
        // INNER (6) and INTER (7) device-to-device kinds: only between device memory (the
        // reference rejects them at the ACL layer otherwise).
        let between_devices = matches!((ld, ls), (Loc::Device(_), Loc::Device(_)));
        let kind_value = match kind_value {
            6 | 7 if between_devices => {
                let same = ld == ls;
                if same != (kind_value == 6) {
                    return Err(AclError::rt_invalid(format!(
                        "{api}: kind {} needs {} device",
                        kind::name(kind_value),
                        if kind_value == 6 {
                            "both ends on the same"
                        } else {
                            "the ends on different devices, not the same"
                        }
                    )));
                }
                kind::D2D
            }
            k if k > kind::H2BUF2D => {
                return Err(AclError::invalid(format!(
                    "{api}: kind {k} ({}) is not allowed; use 0..=5 (6 and 7 only between device memory)",
                    kind::name(k)
                )));
            }
            k => k,
        };
        if count > dest_max {
            return Err(AclError::rt_invalid(format!(
                "{api}: count {count} is larger than destMax {dest_max}"
            )));
        }
        // One thread-local access for the current device and the live-range cache.
        let cur = crate::tls::with(|l| {
            let cur = self.current_device_in(l, api)?;
            check_kind(api, ls, ld, kind_value)?;
            self.check_live_writable(l, api, "dst", ld, dst, count).map(|()| cur)
        })?;
        self.check_live(api, "src", ls, src, count)?;
        if let (Loc::Device(a), Loc::Device(b)) = (ld, ls) {
            // Cross-device copies need peer access on 950 and A2, not on A3 (D-11-03).
            if a != b && self.soc != hal::SocProfile::A3 && !self.peer_allowed(api, cur, a, b)? {
                return Err(AclError::rt_invalid(format!(
                    "{api}: copy from device {b} to device {a} needs peer access: call aclrtDeviceEnablePeerAccess from the current device {cur}"
                )));
            }
        }
        if dst == src {
            return Ok(nop);
        }
        Ok(CopyPlan { dst: ld, src: ls, count })
    }

    /// Runs a planned copy whose `Unregistered` ends the C edge has turned into slices.
    ///
    /// # Errors
    ///
    /// The backend's error when a byte is not mapped (a concurrent free).
    pub fn copy(&self, api: &str, dst: DstBytes<'_>, src: SrcBytes<'_>, count: u64) -> Result<()> {
        let drv = self.backend.driver();
        let r = match (dst, src) {
            (DstBytes::Addr(d), SrcBytes::Addr(s)) => match (locate(d), locate(s)) {
                (Loc::Device(a), Loc::Device(b)) => {
                    drv.copy_device(DeviceId(a), DeviceAddr(d), DeviceId(b), DeviceAddr(s), count)
                }
                _ => drv.copy_any(DeviceAddr(d), DeviceAddr(s), count),
            },
            (DstBytes::Addr(d), SrcBytes::Host(bytes)) => match locate(d) {
                Loc::Device(a) => drv.copy_to_device(DeviceId(a), DeviceAddr(d), bytes),
                _ => drv.write_host(DeviceAddr(d), bytes),
            },
            (DstBytes::Host(bytes), SrcBytes::Addr(s)) => match locate(s) {
                Loc::Device(b) => drv.copy_from_device(DeviceId(b), bytes, DeviceAddr(s)),
                _ => drv.read_host(bytes, DeviceAddr(s)),
            },
            (DstBytes::Host(d), SrcBytes::Host(s)) => {
                d.copy_from_slice(s);
                Ok(())
            }
        };
        r.map_err(|e| AclError::from_hal(e, api))
    }

    /// Validates an `aclrtMemset`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL, `ACL_ERROR_RT_PARAM_INVALID` for `count > maxCount`
    /// or memory the runtime did not allocate.
    pub fn plan_memset(&self, api: &str, dst: u64, max_count: u64, count: u64) -> Result<SetPlan> {
        crate::tls::with(|l| self.plan_memset_in(l, api, dst, max_count, count))
    }

    /// `aclrtMemsetAsync` when every check is answered by the calling thread's state `l`: a
    /// stream its submit cache knows, on the device of the destination, which lies in the
    /// range the thread last found live and writable, in the memory state the device still
    /// shows. Submits the memset and answers its result; `None` (nothing done) when any of
    /// that does not hold, and the caller goes the full way ([`Self::plan_memset_in`], then
    /// the stream's resolution), which gives every error its code and message.
    #[inline]
    pub(crate) fn memset_async_fast(
        &self,
        l: &Local,
        api: &str,
        handle: u64,
        set: MemsetArgs,
    ) -> Option<Result<()>> {
        let MemsetArgs { dst, max_count, count, value } = set;
        if dst == 0 || count == 0 || count > max_count {
            return None;
        }
        let Loc::Device(d) = locate(dst) else { return None };
        // The cached stream belongs to the thread's current device, which is open (what the
        // plan's current-device check asks).
        let s = self.cached_submit_target(l, handle)?;
        if s.device != d || !live_cache::holds(l, self.device(d).mem_version(), dst, count) {
            return None;
        }
        Some(self.submit_fill(api, &s, DeviceAddr(dst), value, count).map(|_| ()))
    }

    /// [`Self::plan_memset`] with the calling thread's state `l` already at hand (the
    /// asynchronous memset plans and submits within one thread-local access).
    ///
    /// # Errors
    ///
    /// As [`Self::plan_memset`].
    #[inline]
    pub(crate) fn plan_memset_in(
        &self,
        l: &Local,
        api: &str,
        dst: u64,
        max_count: u64,
        count: u64,
    ) -> Result<SetPlan> {
        if count == 0 {
            return Ok(SetPlan { dst: Loc::Unregistered, count: 0 });
        }
        if dst == 0 {
            return Err(AclError::invalid(format!("{api}: devPtr is NULL")));
        }
        if count > max_count {
            return Err(AclError::rt_invalid(format!(
                "{api}: count {count} is larger than maxCount {max_count}"
            )));
        }
        let _ = self.current_device_in(l, api)?;
        let loc = locate(dst);
        // Ordinary host memory (a stack or malloc'd buffer) is set by the caller's thread, as
        // CANN's drvMemsetD8 does; `check_live` refuses a range that runs into a runtime window.
        self.check_live_writable(l, api, "devPtr", loc, dst, count)?;
        Ok(SetPlan { dst: loc, count })
    }

    /// Runs a planned memset.
    ///
    /// # Errors
    ///
    /// The backend's error when a byte is not mapped (a concurrent free).
    pub fn memset(&self, api: &str, plan: SetPlan, dst: u64, value: u8) -> Result<()> {
        if plan.count == 0 {
            return Ok(());
        }
        let r = match plan.dst {
            Loc::Device(d) => {
                self.backend.driver().set_device(DeviceId(d), DeviceAddr(dst), value, plan.count)
            }
            _ => self.backend.driver().set_any(DeviceAddr(dst), value, plan.count),
        };
        r.map_err(|e| AclError::from_hal(e, api))
    }

    /// `aclrtMallocHostWithCfg`: checks the configuration, then allocates like `aclrtMallocHost`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a bad attribute (RSV or DEVICE_ID, a VA_FLAG other than 0
    /// or 1, an unknown type); `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` for VA_FLAG 1 on 950.
    pub fn malloc_host_cfg(&self, api: &str, size: u64, cfg: &[CfgAttr]) -> Result<u64> {
        for (i, a) in cfg.iter().enumerate() {
            match a.kind {
                ATTR_MODULE_ID => {}
                ATTR_VA_FLAG => match a.u32() {
                    0 => {}
                    1 if self.soc != hal::SocProfile::Ascend950 => {}
                    1 => {
                        return Err(AclError::new(
                            ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                            format!("{api}: cfg->attrs[{i}]: host/device VA consistency (VA_FLAG 1) is not supported on {}", self.soc.soc_name()),
                        ))
                    }
                    v => return Err(AclError::invalid(format!("{api}: cfg->attrs[{i}]: VA_FLAG must be 0 or 1, not {v}"))),
                },
                ATTR_RSV | ATTR_DEVICE_ID => {
                    return Err(AclError::invalid(format!(
                        "{api}: cfg->attrs[{i}].attr {} does not apply to host memory (use MODULE_ID or VA_FLAG)",
                        a.kind
                    )))
                }
                k => {
                    return Err(AclError::invalid(format!(
                        "{api}: cfg->attrs[{i}].attr {k} is not an aclrtMallocAttrType (0..=3)"
                    )))
                }
            }
        }
        self.malloc_host(api, size)
    }

    /// `aclrtGetMemUsageInfo`: per-component usage of `device_id` by this process, largest first.
    ///
    /// The application's allocations are the component `APP`; other module ids given through
    /// `aclrtMallocWithCfg` are `MODULE_<id>`; `RUNTIME` is the memory the allocator holds beyond
    /// what was handed out (page rounding, slab slack, kept chunks), so the components add up to
    /// the device memory this process uses.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad id; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on 950.
    pub fn mem_usage(&self, api: &str, device_id: i32) -> Result<Vec<(String, u64, u64)>> {
        if self.soc == hal::SocProfile::Ascend950 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!("{api}: not supported on {}", self.soc.soc_name()),
            ));
        }
        let d = match u32::try_from(device_id) {
            Ok(d) if d < self.device_count() => d,
            _ => {
                return Err(AclError::new(
                    ACL_ERROR_RT_INVALID_DEVICEID,
                    format!("{api}: deviceId {device_id} is out of range (0..{})", self.device_count()),
                ))
            }
        };
        let st = self.device(d).mem(api)?;
        let Some(alloc) = st.alloc.as_ref() else { return Ok(Vec::new()) };
        let acct = alloc.accounting();
        let mut out: Vec<(String, u64, u64)> = acct
            .components
            .iter()
            .map(|&(c, u)| {
                let name = match c {
                    mm::device::APP => "APP".to_owned(),
                    crate::state::memory::POOL_COMPONENT => "MEMPOOL".to_owned(),
                    c => format!("MODULE_{c}"),
                };
                (name, u.current, u.peak)
            })
            .collect();
        let overhead_peak = acct.backed.peak.saturating_sub(acct.live.peak).max(acct.overhead());
        out.push(("RUNTIME".to_owned(), acct.overhead(), overhead_peak));
        out.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
        Ok(out)
    }

    /// `aclrtCheckMemType`: whether every address is of one of the types in `mem_type`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an empty list, a type outside DEV | DVPP | RSVD or a
    /// non-zero `reserve`.
    pub fn check_mem_type(&self, api: &str, addrs: &[u64], mem_type: u32, reserve: u32) -> Result<bool> {
        const DEV: u32 = 0x2;
        const DVPP: u32 = 0x8;
        const RSVD: u32 = 0x10;
        if addrs.is_empty() {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        if mem_type == 0 || mem_type & !(DEV | DVPP | RSVD) != 0 {
            return Err(AclError::invalid(format!(
                "{api}: memType {mem_type:#x} is not an OR of ACL_RT_MEM_TYPE_DEV, _DVPP and _RSVD"
            )));
        }
        if reserve != 0 {
            return Err(AclError::invalid(format!("{api}: reserve must be 0, not {reserve}")));
        }
        // DVPP memory is ordinary device memory on 950; no other SoC here has a DVPP allocator,
        // and reserved ranges (aclrtReserveMemAddress) do not exist yet.
        let dev_ok = mem_type & DEV != 0 || (mem_type & DVPP != 0 && self.soc == hal::SocProfile::Ascend950);
        for &a in addrs {
            if !dev_ok || self.device_info_of(api, a)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `aclrtPointerGetAttributes`: `(location type, location id, page size)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an address in a device or pinned window that is not
    /// live memory.
    pub fn pointer_attributes(&self, api: &str, ptr: u64) -> Result<(u32, u32, u32)> {
        const HOST: u32 = 0;
        const DEVICE: u32 = 1;
        const UNREGISTERED: u32 = 2;
        const MANAGED: u32 = 3;
        match locate(ptr) {
            Loc::Device(_) => {
                let (d, info) = self.device_info_of(api, ptr)?.ok_or_else(|| {
                    AclError::rt_invalid(format!(
                        "{api}: ptr {ptr:#x} is in a device window but not in a live allocation"
                    ))
                })?;
                // Managed memory is MANAGED where the SoC reports that type (A2), else DEVICE.
                let managed = self.soc == hal::SocProfile::A2
                    && self.device(d).mem(api)?.managed.contains_key(&info.base.as_u64());
                // CAST: page sizes are at most 1 GiB.
                Ok((if managed { MANAGED } else { DEVICE }, d, info.page_size.bytes() as u32))
            }
            Loc::Pinned => {
                let host = self.host(api)?;
                host.heap.find(DeviceAddr(ptr)).ok_or_else(|| {
                    AclError::rt_invalid(format!(
                        "{api}: ptr {ptr:#x} is in the pinned window but not in a live allocation"
                    ))
                })?;
                // CAST: 4 KiB.
                Ok((HOST, 0, PageSize::Normal.bytes() as u32))
            }
            Loc::Unregistered => {
                // Registered host memory (aclrtHostRegister) is host memory the device reaches.
                // Lock order: the pinned-host lock alone.
                let host = self.host(api)?;
                let registered = host
                    .registered
                    .range(..=ptr)
                    .next_back()
                    .is_some_and(|(&s, &l)| ptr < s.saturating_add(l));
                if registered {
                    // CAST: 4 KiB.
                    return Ok((HOST, 0, PageSize::Normal.bytes() as u32));
                }
                Ok((UNREGISTERED, 0, 0))
            }
        }
    }

    /// `aclrtMemGetAddressRange`: base and usable size of the allocation containing `ptr`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is in no live device or pinned allocation.
    pub fn address_range(&self, api: &str, ptr: u64) -> Result<(u64, u64)> {
        match locate(ptr) {
            Loc::Device(_) => {
                if let Some((_, info)) = self.device_info_of(api, ptr)? {
                    return Ok((info.base.as_u64(), info.usable_bytes));
                }
            }
            Loc::Pinned => {
                let host = self.host(api)?;
                if let Some((base, a)) = host.heap.find(DeviceAddr(ptr)) {
                    return Ok((base.as_u64(), a.usable_bytes));
                }
            }
            Loc::Unregistered => {}
        }
        Err(AclError::rt_invalid(format!(
            "{api}: ptr {ptr:#x} is not inside a live device or pinned allocation"
        )))
    }

    /// `aclrtMemFlush` / `aclrtMemInvalidate`: caches are coherent, so after checking the
    /// range there is nothing to do.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL or size 0; `ACL_ERROR_RT_PARAM_INVALID` for a range
    /// outside live device memory.
    pub fn cache_op(&self, api: &str, ptr: u64, size: u64) -> Result<()> {
        if ptr == 0 {
            return Err(AclError::invalid(format!("{api}: devPtr is NULL")));
        }
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        match self.device_info_of(api, ptr)? {
            Some((_, i)) if ptr.checked_add(size).is_some_and(|e| e <= i.base.as_u64() + i.usable_bytes) => {
                Ok(())
            }
            _ => Err(AclError::rt_invalid(format!(
                "{api}: range [{ptr:#x}, +{size}) is not inside a live device allocation"
            ))),
        }
    }

    /// Gives back what device `d`'s allocator keeps for reuse: one empty chunk per slab class
    /// and the empty segment kept at the top of a chunk (`mm::device::DeviceAllocator::trim`).
    /// Called at `aclrtGetMemInfo` and `aclrtSynchronizeDevice`; under memory pressure `mm`
    /// releases them itself before an allocation fails.
    pub(crate) fn trim_spares(&self, d: u32) {
        // Lock order: `mem` alone. A failed state is left alone (later calls report it).
        let Ok(mut st) = self.device(d).mem("aclrtSynchronizeDevice") else { return };
        if let Some(alloc) = st.alloc.as_mut() {
            let mut backer = HalBacker::new(self.backend.driver(), d);
            alloc.trim(&mut backer);
        }
    }

    /// `aclrtGetMemInfo` for the current device: `(free, total)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an unknown attribute; `ACL_ERROR_RT_CONTEXT_NULL` without
    /// a current device.
    pub fn mem_info(&self, api: &str, attr: u32) -> Result<(u64, u64)> {
        if attr > 17 {
            return Err(AclError::invalid(format!("{api}: attr {attr} is not an aclrtMemAttr (0..=17)")));
        }
        let d = self.current_device(api)?;
        self.process_deferred(d);
        // Memory kept for reuse (spare slab chunks, a chunk's empty top segment) goes back
        // first, so the figures show freed memory as free.
        self.trim_spares(d);
        let drv = self.backend.driver();
        let info: MemoryInfo = drv.memory_info(DeviceId(d)).map_err(|e| AclError::from_hal(e, api))?;
        let kind = drv.device_info(DeviceId(d)).map(|i| i.memory).unwrap_or_default();
        // Managed memory last prefetched to the host is accounted to the host: its bytes count
        // as free on the device. Lock order: `mem` alone.
        let on_host: u64 = self
            .device(d)
            .mem(api)?
            .managed
            .values()
            .filter(|m| m.last_prefetch.is_host())
            .map(|m| m.len)
            .sum();
        // A device with DDR only answers HBM queries with its DDR figures (D-11-01); a device
        // with HBM has no DDR to report.
        let attr = match (kind, attr) {
            (hal::MemoryKind::Ddr, 0) => 1,
            (hal::MemoryKind::Ddr, 2 | 6) => 4,
            (hal::MemoryKind::Ddr, 3 | 7) => 5,
            (_, a) => a,
        };
        Ok(match attr {
            // DDR classes on a device with HBM: nothing to report.
            0 | 2 | 3 | 6 | 7 => (0, 0),
            // HBM (or runtime's choice) with normal pages, or all pages.
            1 | 5 | 9 | 12 | 15 => ((info.free_bytes + on_host).min(info.total_bytes), info.total_bytes),
            // 2 MiB huge pages.
            4 | 8 | 13 | 16 => (info.huge_free_bytes, info.huge_total_bytes),
            // 1 GiB pages.
            _ => (info.giant_free_bytes, info.giant_total_bytes),
        })
    }
}

/// The device range a thread last found to be one live, writable plain allocation, with the
/// device's memory version it found it in ([`crate::device::MemGuard::seal`]): while the
/// device still shows that version nobody took its memory lock since, so nothing was freed or
/// changed, and a range inside it is live and writable without the lock. Versions are unique
/// process-wide (each device instance has its own high bits), so an entry never answers for
/// another device, or for a device after a reset or `aclFinalize`.
/// An asynchronous memset's arguments (`aclrtMemsetAsync`'s, the value's low byte kept).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemsetArgs {
    /// `devPtr`.
    pub(crate) dst: u64,
    /// `maxCount`.
    pub(crate) max_count: u64,
    /// `count`.
    pub(crate) count: u64,
    /// The byte to set.
    pub(crate) value: u8,
}

mod live_cache {
    use crate::tls::{LiveRange, Local};

    /// Whether `[addr, addr + len)` (at least one byte) lies in the remembered range, found in
    /// memory state `version`.
    #[inline]
    pub(super) fn holds(l: &Local, version: u64, addr: u64, len: u64) -> bool {
        let e = l.live.get();
        e.version == version
            && version != 0
            && addr >= e.start
            && addr.checked_add(len.max(1)).is_some_and(|end| end <= e.end)
    }

    /// Remembers `[start, end)` as live and writable in memory state `version`.
    #[inline]
    pub(super) fn remember(l: &Local, version: u64, start: u64, end: u64) {
        l.live.set(LiveRange { version, start, end });
    }
}
