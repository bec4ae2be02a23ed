//! The state of stream-ordered memory pools (`aclrtMemPool*`): a device's pool table, one pool
//! object, their attributes and errors. The calls (and stream-ordered frees of plain device
//! memory) are [`crate::api::pool`]'s: together they are the runtime's side of
//! `acl/acl_rt_memory_soma.h`.
//!
//! Safe Rust over `mm::pool`; it must not use the runtime or [`crate::api`]. With
//! [`crate::api::pool`] it owns the pools of a device ([`Pools`], a per-device
//! [`HandleTable`]: a handle names its device, and resolving it is an index and a generation
//! check with no lock), the segment source (pool segments are device allocations charged to the
//! `MEMPOOL` component, recorded in the device's address map so that the pool holding an address
//! is one lookup), the stream-order oracle built on the backend's queues, the waits that
//! internal-dependency reuse inserts, and the settling of the deferred frees of
//! `aclrtMemPoolFreeAsync` on memory from `aclrtMalloc` (kept by `mm::device::DeferredFrees`).
//! It must not touch raw pointers.
//!
//! # Locking
//!
//! Lock order (see [`crate::device`]): a pool's own mutex, then its device's `mem` (taken by the
//! segment source while the pool maps a segment); nothing takes a pool's mutex while holding
//! `mem`. A segment's pages are backed and unbacked by the backend with only the pool's mutex
//! held (only that pool touches its pages), and recorded under `mem` around the call. Finding a pool (by handle, or by address through the address map) takes no pool's
//! mutex. The deferred frees are settled by asking the backend with no lock held.

use std::sync::{Arc, Mutex, MutexGuard};

use hal::VaRange;

use mm::pool::{Pool, PoolError};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::handles::{Entry, Handle, HandleTable, Kind};

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
    pub(crate) device: u32,
    pub(crate) inner: Mutex<PoolInner>,
}

#[derive(Debug)]
pub(crate) struct PoolInner {
    pub(crate) pool: Pool,
    /// Destroyed with blocks still allocated: it accepts only their frees, and goes away with
    /// the last one.
    pub(crate) retired: bool,
    /// Where this process publishes its pool figures for `aclrs-smi` (software NPU only).
    pub(crate) counters: Option<hal_sim::registry::view::PoolCounters>,
}

/// A locked pool; when it is dropped, the change of the pool's statistics since it was locked
/// is published to the pool counters (two atomic adds, only when they changed).
pub(crate) struct PoolGuard<'a> {
    pub(crate) inner: MutexGuard<'a, PoolInner>,
    pub(crate) before: mm::pool::PoolStats,
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

/// The most pools one device holds at once.
pub const MAX_POOLS: u32 = 65_536;

/// A pool as a lookup returns it (kept alive while held).
pub(crate) type PoolRef = Arc<Entry<PoolObj>>;
/// A pool held for one call, with no reference counted ([`crate::handles::Ref`]).
pub(crate) type PoolHeld = crate::handles::Ref<PoolObj>;

/// The pools of one device.
#[derive(Debug)]
pub struct Pools {
    pub(crate) table: HandleTable<PoolObj>,
}

impl Pools {
    /// No pools, for device `d` of the runtime of aclInit generation `generation`.
    pub(crate) fn new(d: u32, generation: u64) -> Self {
        Self { table: HandleTable::new(Kind::Pool, d, generation, MAX_POOLS) }
    }

    /// Forgets every pool (device reset).
    pub(crate) fn clear(&self) {
        drop(self.table.drain());
    }
}

/// The number a pool shows in memory summaries and snapshots (`segment_pool_id[1]`): its slot
/// in its device's table, from 1.
pub(crate) fn pool_number(handle: u64) -> u64 {
    Handle::decode(handle, Kind::Pool).map_or(0, |h| u64::from(h.index) + 1)
}

/// Locks a pool.
///
/// # Errors
///
/// 507000 when a panic poisoned it.
pub(crate) fn lock<'a>(p: &'a PoolObj, api: &str, handle: u64) -> Result<PoolGuard<'a>> {
    // Lock order: a pool's mutex, then (inside, through `Segments`) its device's `mem`.
    let inner = crate::sync::lock(&p.inner, api, &format_args!("memPool {handle:#x}"))?;
    let before = inner.pool.stats();
    Ok(PoolGuard { inner, before })
}

/// A backer for bookkeeping of pages the driver has already backed, or will unback after.
pub(crate) struct Done;

impl mm::device::Backer for Done {
    fn back(&mut self, _: VaRange, _: hal::PageSize, _: hal::MemAttr) -> std::result::Result<(), hal::Error> {
        Ok(())
    }

    fn unback(&mut self, _: VaRange) -> std::result::Result<(), hal::Error> {
        Ok(())
    }
}

pub(crate) fn unknown_pool(api: &str, handle: u64) -> AclError {
    AclError::new(
        ACL_ERROR_RT_INTERNAL_ERROR,
        format!("{api}: memPool {handle:#x} is not a live pool (destroyed, or never created)"),
    )
}

pub(crate) fn pool_err(api: &str, e: PoolError, what: &str) -> AclError {
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
