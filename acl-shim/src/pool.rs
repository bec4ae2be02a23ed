//! Stream-ordered memory pools (`aclrtMemPool*`) and stream-ordered frees of plain device
//! memory: the runtime's side of `acl/acl_rt_memory_soma.h`.
//!
//! Safe Rust over `mm::pool`. It owns the pool handles, the segment source (pool segments are
//! device allocations charged to the `MEMPOOL` component), the stream-order oracle built on the
//! backend's queues, the waits that internal-dependency reuse inserts, and the deferred frees of
//! `aclrtMemPoolFreeAsync` on memory from `aclrtMalloc`. It must not touch raw pointers.
//!
//! # Locking
//!
//! The pool table's mutex is taken only to find or change handles. A pool's own mutex may be
//! held while it maps a segment (which takes the device's mutex): the order is pool, then
//! device; nothing takes a pool's mutex while holding a device's.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use hal::{DeviceAddr, DeviceId, QueueId, SocProfile, VaRange};
use mm::device::Component;
use mm::order::{StreamOrder, StreamPoint};
use mm::pool::{Pool, PoolBacking, PoolError, ReuseModes, PAGE as SEGMENT_ALIGN};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::idmap::IdMap;
use crate::memory::{locate, HalBacker, Loc};
use crate::runtime::Runtime;
use crate::stream::GraphOrder;

/// The component pool pages are charged to in `aclrtGetMemUsageInfo`.
pub const POOL_COMPONENT: Component = 0xFFFE;

/// `aclrtMemPoolAttr` values.
pub mod attr {
    /// `ACL_RT_MEM_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES` (`uint32_t`).
    pub const REUSE_FOLLOW_EVENT_DEPENDENCIES: u32 = 0x1;
    /// `ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC` (`uint32_t`).
    pub const REUSE_ALLOW_OPPORTUNISTIC: u32 = 0x2;
    /// `ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES` (`uint32_t`).
    pub const REUSE_ALLOW_INTERNAL_DEPENDENCIES: u32 = 0x3;
    /// `ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD` (`uint64_t`).
    pub const RELEASE_THRESHOLD: u32 = 0x4;
    /// `ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT` (`uint64_t`, read-only).
    pub const RESERVED_MEM_CURRENT: u32 = 0x5;
    /// `ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_HIGH` (`uint64_t`, reset with 0).
    pub const RESERVED_MEM_HIGH: u32 = 0x6;
    /// `ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT` (`uint64_t`, read-only).
    pub const USED_MEM_CURRENT: u32 = 0x7;
    /// `ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH` (`uint64_t`, reset with 0).
    pub const USED_MEM_HIGH: u32 = 0x8;

    /// Whether the attribute's value is a `uint32_t` (otherwise `uint64_t`).
    pub fn is_u32(a: u32) -> bool {
        (REUSE_FOLLOW_EVENT_DEPENDENCIES..=REUSE_ALLOW_INTERNAL_DEPENDENCIES).contains(&a)
    }
}

/// An attribute value read from or written to C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrValue {
    /// A `uint32_t`.
    U32(u32),
    /// A `uint64_t`.
    U64(u64),
}

/// `aclrtMemPoolProps`, as the C edge read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolProps {
    /// `allocType` (must be `ACL_MEM_ALLOCATION_TYPE_PINNED`, 0).
    pub alloc_type: u32,
    /// `handleType` (`ACL_MEM_HANDLE_TYPE_NONE`, 0).
    pub handle_type: u32,
    /// `location.id`.
    pub location_id: u32,
    /// `location.type` (must be `ACL_MEM_LOCATION_TYPE_DEVICE`, 1).
    pub location_type: u32,
    /// `maxSize` (0: the device's whole HBM).
    pub max_size: u64,
    /// Whether `reserved` is all zero.
    pub reserved_zero: bool,
}

/// One pool.
#[derive(Debug)]
pub(crate) struct PoolObj {
    device: u32,
    inner: Mutex<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    pool: Pool,
    /// Destroyed with blocks still allocated: it accepts only their frees, and goes away with
    /// the last one.
    retired: bool,
    /// Where this process publishes its pool figures for `aclrs-smi` (software NPU only).
    counters: Option<hal_sim::registry::view::PoolCounters>,
}

/// A locked pool; when it is dropped, the change of the pool's statistics since it was locked
/// is published to the pool counters (two atomic adds, only when they changed).
struct PoolGuard<'a> {
    inner: MutexGuard<'a, PoolInner>,
    before: mm::pool::PoolStats,
}

impl std::ops::Deref for PoolGuard<'_> {
    type Target = PoolInner;
    fn deref(&self) -> &PoolInner {
        &self.inner
    }
}

impl std::ops::DerefMut for PoolGuard<'_> {
    fn deref_mut(&mut self) -> &mut PoolInner {
        &mut self.inner
    }
}

impl Drop for PoolGuard<'_> {
    fn drop(&mut self) {
        let Some(c) = self.inner.counters.as_ref() else { return };
        let now = self.inner.pool.stats();
        // CAST: pool figures are far below 2^63; the differences are signed.
        let reserved = now.reserved.current as i64 - self.before.reserved.current as i64;
        let used = now.used.current as i64 - self.before.used.current as i64;
        c.add(reserved, used);
    }
}

/// A stream-ordered free of plain device memory, waiting for its stream to get there.
#[derive(Debug, Clone, Copy)]
struct Deferred {
    device: u32,
    addr: u64,
    point: StreamPoint,
}

#[derive(Debug, Default)]
struct Tables {
    generation: u64,
    pools: IdMap<u64, Arc<PoolObj>>,
    next: u64,
    deferred: Vec<Deferred>,
}

fn tables(rt: &Runtime) -> MutexGuard<'static, Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    let mut t = T.get_or_init(|| Mutex::new(Tables::default())).lock().unwrap_or_else(|p| p.into_inner());
    if t.generation != rt.generation {
        *t = Tables { generation: rt.generation, next: 1, ..Tables::default() };
    }
    t
}

const TAG_POOL: u64 = 0xac50 << 48;

fn lock(p: &PoolObj) -> PoolGuard<'_> {
    let inner = p.inner.lock().unwrap_or_else(|e| e.into_inner());
    let before = inner.pool.stats();
    PoolGuard { inner, before }
}

/// Pool regions are VA reservations of the device allocator, backed page by page.
struct Segments<'a> {
    rt: &'a Runtime,
    dev: u32,
}

impl Segments<'_> {
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut mm::device::DeviceAllocator, &mut HalBacker<'_>) -> std::result::Result<T, hal::Error>,
    ) -> std::result::Result<T, hal::Error> {
        let mut st = self.rt.dev(self.dev);
        let alloc = st.alloc.as_mut().ok_or(hal::Error::new(hal::ErrorKind::NoDevice, "device reset"))?;
        let mut backer = HalBacker::new(self.rt.backend().driver(), self.dev);
        f(alloc, &mut backer)
    }
}

impl PoolBacking for Segments<'_> {
    fn reserve(&mut self, len_bytes: u64) -> std::result::Result<VaRange, hal::Error> {
        let r = self.with(|a, _| {
            a.reserve_range(len_bytes, POOL_COMPONENT)
                .map_err(|_| hal::Error::new(hal::ErrorKind::OutOfMemory, "no device VA for a pool region"))
        })?;
        crate::obs::note(self.dev, "segment_alloc", r.start().as_u64(), r.len_bytes(), 0);
        Ok(r)
    }

    fn unreserve(&mut self, range: VaRange) -> std::result::Result<(), hal::Error> {
        self.with(|a, _| {
            a.unreserve_range(range)
                .map_err(|_| hal::Error::new(hal::ErrorKind::InvalidHandle, "not a pool region"))
        })?;
        crate::obs::note(self.dev, "segment_free", range.start().as_u64(), range.len_bytes(), 0);
        Ok(())
    }

    fn back(&mut self, page: VaRange) -> std::result::Result<(), hal::Error> {
        self.with(|a, b| a.back_reserved(b, page))
    }

    fn unback(&mut self, page: VaRange) -> std::result::Result<(), hal::Error> {
        self.with(|a, b| a.unback_reserved(b, page))
    }
}

fn pool_err(api: &str, e: PoolError, what: &str) -> AclError {
    match e {
        PoolError::InvalidArgument => AclError::rt_invalid(format!("{api}: {what}: invalid size")),
        PoolError::Exhausted => AclError::new(
            ACL_ERROR_RT_INTERNAL_ERROR,
            format!("{api}: {what}: the pool's maxSize does not leave room (pool exhausted)"),
        ),
        PoolError::OutOfMemory(h) => AclError::new(
            ACL_ERROR_RT_MEMORY_ALLOCATION,
            format!("{api}: {what}: the device has no memory for a new pool segment: {}", h.detail()),
        ),
        PoolError::NotAllocated => {
            AclError::rt_invalid(format!("{api}: {what} is not a live block of its pool (double free?)"))
        }
        PoolError::Interior(b) => {
            AclError::rt_invalid(format!("{api}: {what} points inside the block at {b}, not at its start"))
        }
        PoolError::BelowUsed => {
            AclError::new(ACL_ERROR_RT_INTERNAL_ERROR, format!("{api}: {what} is less than the bytes in use"))
        }
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

    fn pool(&self, api: &str, handle: u64) -> Result<Arc<PoolObj>> {
        let t = tables(self);
        match t.pools.get(&handle) {
            Some(p) if !lock(p).retired => Ok(Arc::clone(p)),
            _ => Err(AclError::new(
                ACL_ERROR_RT_INTERNAL_ERROR,
                format!("{api}: memPool {handle:#x} is not a live pool (destroyed, or never created)"),
            )),
        }
    }

    /// The stream-order oracle of device `d`: its dependency graph (recorded waits and the
    /// completions the runtime saw), asked with no backend call. Lock order: a pool's lock →
    /// the graph (a leaf: nothing is locked or called back while it is held, so the pool's
    /// own backing calls under it cannot deadlock; a stream wait on the device waits for them).
    /// Completions the runtime has not seen yet make the answer conservative, never wrong.
    fn order(&self, d: u32) -> GraphOrder<'_> {
        GraphOrder(crate::sync::relock(self.streams_of(d).graph_mutex()))
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
        let mut t = tables(self);
        let h = TAG_POOL | t.next;
        t.next += 1;
        let obj = PoolObj {
            device: d,
            inner: Mutex::new(PoolInner {
                pool: Pool::new(max, ReuseModes::default()),
                retired: false,
                counters: self.backend().device_sim().and_then(|s| s.pool_counters(DeviceId(d))),
            }),
        };
        t.pools.insert(h, Arc::new(obj));
        Ok(h)
    }

    /// Every pool of this process (retired ones included): handle, device, statistics and
    /// regions, for the memory summary and snapshots. Takes the tables, then each pool.
    pub(crate) fn pool_walk(&self) -> Vec<(u64, u32, mm::pool::PoolStats, Vec<mm::pool::PoolRegion>)> {
        let list: Vec<(u64, Arc<PoolObj>)> =
            tables(self).pools.iter().map(|(h, p)| (*h, Arc::clone(p))).collect();
        let mut out: Vec<_> = list
            .into_iter()
            .map(|(h, p)| {
                let inner = lock(&p);
                (h, p.device, inner.pool.stats(), inner.pool.regions())
            })
            .collect();
        out.sort_by_key(|p| p.0);
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
        lock(&p).retired = true;
        self.collect_retired(handle, &p);
        Ok(())
    }

    /// Gives back what a retired pool no longer needs, and forgets it once it holds nothing.
    fn collect_retired(&self, handle: u64, p: &PoolObj) {
        let d = p.device;
        let mut inner = lock(p);
        if !inner.retired {
            return;
        }
        let order = self.order(d);
        let mut seg = Segments { rt: self, dev: d };
        inner.pool.release(&mut seg, &order, 0);
        let gone = inner.pool.busy_count() == 0 && inner.pool.stats().reserved.current == 0;
        drop(inner);
        if gone {
            tables(self).pools.remove(&handle);
        }
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
        let p = self.pool(api, handle)?;
        let s = self.submit_stream(api, stream)?;
        if s.device != p.device {
            return Err(AclError::new(
                crate::stream::ACL_ERROR_RT_STREAM_CONTEXT,
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
        let mut inner = lock(&p);
        let order = self.order(p.device);
        let mut seg = Segments { rt: self, dev: p.device };
        let g = match inner.pool.allocate(&mut seg, &order, s.queue.0, size) {
            Ok(g) => g,
            Err(e) => {
                drop(order);
                drop(inner);
                let mut err = pool_err(api, e, "allocation");
                if let PoolError::OutOfMemory(_) = e {
                    let figures = {
                        let st = self.dev(p.device);
                        st.alloc
                            .as_ref()
                            .map(|a| crate::obs::oom_figures(self.backend().driver(), p.device, a))
                    };
                    if let Some(f) = figures {
                        err = AclError::new(err.code(), format!("{}; {f}", err.message()));
                    }
                    crate::obs::after_oom(self, p.device, size);
                }
                return Err(err);
            }
        };
        crate::obs::note(p.device, "alloc", g.addr.as_u64(), g.size_bytes, u64::from(s.queue.0));
        if let Some(w) = g.wait_for {
            // Internal dependency: this stream waits for the stream that freed the block, one
            // backend call made after the pool's lock (and the graph's) is released.
            drop(order);
            drop(inner);
            if let Err(e) = self.wait_for_point(api, &s, QueueId(w.stream), w.seq) {
                // Could not order the reuse: give the block back untouched.
                let _ = lock(&p).pool.free(g.addr, w.stream, w.seq);
                return Err(e);
            }
        }
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
        let seq = self
            .backend()
            .driver()
            .progress(DeviceId(d), s.queue)
            .map_err(|e| AclError::from_hal(e, api))?
            .submitted;
        if let Some((h, p)) = self.pool_of(d, ptr) {
            let mut inner = lock(&p);
            let size = inner
                .pool
                .free(DeviceAddr(ptr), s.queue.0, seq)
                .map_err(|e| pool_err(api, e, &format!("ptr {ptr:#x}")))?;
            drop(inner);
            // The block is back in the pool for its stream at once (later work on that stream
            // may reuse it), so the free completes as it is requested.
            crate::obs::note(d, "free_requested", ptr, size, u64::from(s.queue.0));
            crate::obs::note(d, "free_completed", ptr, size, u64::from(s.queue.0));
            self.collect_retired(h, &p);
            return Ok(());
        }
        // Plain device memory: it must be a live allocation base, freed once.
        {
            let t = tables(self);
            if t.deferred.iter().any(|f| f.addr == ptr) {
                return Err(AclError::rt_invalid(format!(
                    "{api}: ptr {ptr:#x} already has a free pending (double free)"
                )));
            }
        }
        self.check_free_target(api, ptr)?;
        tables(self).deferred.push(Deferred {
            device: d,
            addr: ptr,
            point: StreamPoint { stream: s.queue.0, seq },
        });
        self.process_deferred(d);
        Ok(())
    }

    /// Whether a stream-ordered free of the plain allocation at `ptr` is pending.
    pub(crate) fn has_deferred_free(&self, ptr: u64) -> bool {
        tables(self).deferred.iter().any(|f| f.addr == ptr)
    }

    /// The pool (live or retired) whose segments hold `ptr`.
    fn pool_of(&self, d: u32, ptr: u64) -> Option<(u64, Arc<PoolObj>)> {
        let t = tables(self);
        t.pools
            .iter()
            .find(|(_, p)| p.device == d && lock(p).pool.owns(DeviceAddr(ptr)))
            .map(|(&h, p)| (h, Arc::clone(p)))
    }

    /// The busy pool block containing `ptr`, if `ptr` lies in a pool: `Some(Some((base, size)))`
    /// for a block, `Some(None)` for pool memory that is not allocated, `None` outside pools.
    pub(crate) fn pool_block_of(&self, ptr: u64) -> Option<Option<(u64, u64)>> {
        let Loc::Device(d) = locate(ptr) else { return None };
        let (_, p) = self.pool_of(d, ptr)?;
        let inner = lock(&p);
        Some(inner.pool.find_busy(DeviceAddr(ptr)).map(|(b, l)| (b.as_u64(), l)))
    }

    /// `aclrtFree` of pool memory: the block is freed at once (CANN's force free).
    ///
    /// Returns `None` when `ptr` is not in a pool.
    pub(crate) fn pool_free_now(&self, api: &str, ptr: u64) -> Option<Result<()>> {
        let Loc::Device(d) = locate(ptr) else { return None };
        let (h, p) = self.pool_of(d, ptr)?;
        let mut inner = lock(&p);
        // A free ordered after nothing: the block is idle, any stream may reuse it at once.
        let r = inner
            .pool
            .free(DeviceAddr(ptr), mm::pool::UNORDERED, 0)
            .map(|size| {
                if crate::obs::recording() {
                    crate::obs::note(d, "free_requested", ptr, size, 0);
                    crate::obs::note(d, "free_completed", ptr, size, 0);
                }
            })
            .map_err(|e| pool_err(api, e, &format!("devPtr {ptr:#x}")));
        drop(inner);
        self.collect_retired(h, &p);
        Some(r)
    }

    /// Runs the stream-ordered frees of plain memory whose streams have got there.
    pub(crate) fn process_deferred(&self, d: u32) {
        let ready: Vec<Deferred> = {
            let mut t = tables(self);
            if t.deferred.is_empty() {
                return;
            }
            let order = self.order(d);
            let (ready, wait): (Vec<Deferred>, Vec<Deferred>) =
                t.deferred.iter().partition(|f| f.device == d && order.is_complete(f.point));
            t.deferred = wait;
            ready
        };
        for f in ready {
            let _ = self.free_device_now("aclrtMemPoolFreeAsync", f.device, f.addr);
        }
    }

    /// At a synchronize of device `d`: deferred frees, then each pool releases down to its
    /// threshold.
    pub(crate) fn pools_on_sync(&self, d: u32) {
        self.process_deferred(d);
        let pools: Vec<(u64, Arc<PoolObj>)> = tables(self)
            .pools
            .iter()
            .filter(|(_, p)| p.device == d)
            .map(|(&h, p)| (h, Arc::clone(p)))
            .collect();
        for (h, p) in pools {
            let mut inner = lock(&p);
            if inner.retired {
                drop(inner);
                self.collect_retired(h, &p);
                continue;
            }
            // Lock order: the pool → the graph (a leaf), taken per pool.
            let order = self.order(d);
            let mut seg = Segments { rt: self, dev: d };
            inner.pool.release_to_threshold(&mut seg, &order);
        }
    }

    /// Device reset: every pool of `d` and every deferred free goes.
    pub(crate) fn pools_teardown(&self, d: u32) {
        let mut t = tables(self);
        t.deferred.retain(|f| f.device != d);
        t.pools.retain(|_, p| p.device != d);
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
        let mut inner = lock(&p);
        let order = self.order(d);
        let mut seg = Segments { rt: self, dev: d };
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
        let mut inner = lock(&p);
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
        let inner = lock(&p);
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
