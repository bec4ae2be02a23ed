//! The state of device and pinned-host memory, and the memory rules that take it as a parameter
//! (which memory an address is, copy directions, free targets, policy names, the backer that
//! backs pages through the driver). The calls (allocation, free, synchronous copy and set, the
//! memory queries) are [`crate::api::memory`]'s.
//!
//! Safe Rust over `hal` and `mm`. It must not use the runtime or [`crate::api`]. It owns the
//! shape of a device's memory state ([`DevMem`]: the allocation table, the address map
//! of the device's window and the stream-ordered frees of plain memory), kept per device in
//! [`crate::device::Device`]; the pinned-host table is the runtime's.
//!
//! # Which memory an address is
//!
//! The window an address falls in says its device (or the pinned-host window); within a device
//! window, one lookup in that device's `DevMem::map` says whether it is a pool segment (then
//! the pool says which block) or a VMM mapping; an address it does not hold may be a live
//! allocation (a block or a slab object), which the allocator's slot table finds in O(1)
//! (`DevMem::unmapped_allocation`). Plain blocks are in the map only while a sanitizer runs
//! (`blocks_in_map`): otherwise an `aclrtMalloc` + `aclrtFree` pair touches no ordered map
//! here, whatever the number of live allocations. No call walks the pools, the allocator and
//! the VMM tables in turn.
//!
//! # Locking
//!
//! A copy or memset check ([`crate::runtime::Runtime::plan_memcpy`], [`crate::runtime::Runtime::plan_memset`]) takes, per
//! device end, that device's `mem` once (plus the pool's mutex for pool memory, or the device's
//! `vmm` for mapped memory, and each device's `vmm` once for a cross-device peer check), and for
//! a pinned end the pinned-host lock once: no process-wide lock for device memory, no walk over
//! pools.
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

use std::collections::BTreeSet;

use hal::layout::{device_of, window_of, Window};
use hal::{BackRequest, DeviceAddr, DeviceId, MemAttr, PageSize, VaRange};
use mm::addr_map::AddressMap;
use mm::device::{Component, DeferredFrees, DeviceAllocator, NotLive};
use mm::heap::DeviceHeap;

use crate::error::{AclError, Result};

/// The component pool pages are charged to in `aclrtGetMemUsageInfo`.
pub const POOL_COMPONENT: Component = 0xFFFE;

/// What a region of a device window's address map is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A live `aclrtMalloc` block (the region is its usable bytes), recorded only while a
    /// sanitizer runs (`blocks_in_map`). Slab objects (small allocations) are never
    /// recorded: an address the map does not hold is asked of the allocator's O(1) slot table
    /// (`DevMem::unmapped_allocation`), so the map does not grow with the number of
    /// allocations.
    Allocation,
    /// A VA region (segment) of the pool with this handle.
    PoolSegment(u64),
    /// A VMM mapping (`aclrtMapMem`) or an IPC import.
    Mapping,
}

/// The memory state of one device.
#[derive(Debug, Default)]
pub struct DevMem {
    /// The allocation table, present while the context exists.
    pub(crate) alloc: Option<DeviceAllocator>,
    /// Which allocation, pool segment or mapping holds an address of the device's window.
    pub(crate) map: AddressMap<Owner>,
    /// Stream-ordered frees of plain allocations, waiting for their streams.
    pub(crate) deferred: DeferredFrees,
    /// Which allocator `alloc` is (a new one at each open of the device), so that work begun
    /// under one hold of the lock is finished on the same allocator, not on one a reset made
    /// meanwhile.
    pub(crate) epoch: u64,
    /// The managed (`aclrtMemAllocManaged`) allocations of the device, by base address.
    pub(crate) managed: std::collections::BTreeMap<u64, crate::state::managed::Managed>,
    /// Bases of blocks the allocator planned whose pages are being backed with the lock
    /// released (not handed out yet): [`Self::unmapped_allocation`] does not see them. At most
    /// one per thread in `aclrtMalloc`, usually none.
    pub(crate) pending: Vec<u64>,
}

/// Whether the address map records plain blocks ([`Owner::Allocation`]) too: only while a
/// sanitizer runs (memcheck takes a quarantined block out of the map so that copies of it are
/// refused; the leak and fault reports list the map). Otherwise the allocator's slot table
/// answers for blocks as for slab objects ([`DevMem::unmapped_allocation`]).
#[inline]
pub(crate) fn blocks_in_map() -> bool {
    crate::sanitize::settings().any()
}

impl DevMem {
    /// The live allocation holding `addr` (inside its usable bytes) that the address map does
    /// not record: a slab object, or a block when blocks are not in the map
    /// ([`blocks_in_map`]) and it is not [`Self::pending`]. O(1): one slot-table load (and the
    /// chunk's slot arithmetic), whatever the number of live allocations. Call it when the map
    /// holds no region at `addr`.
    #[inline]
    pub(crate) fn unmapped_allocation(&self, addr: u64) -> Option<mm::device::Info> {
        let a = self.alloc.as_ref()?;
        let i = if blocks_in_map() { a.find_slab(DeviceAddr(addr)) } else { a.find(DeviceAddr(addr)) }?;
        let pending = !i.is_slab && self.pending.contains(&i.base.as_u64());
        (!pending && addr < i.base.as_u64().saturating_add(i.usable_bytes)).then_some(i)
    }
}

/// The next [`DevMem::epoch`] (process-wide, increasing; an atomic step, no lock).
pub(crate) fn next_epoch() -> u64 {
    static EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    EPOCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A [`mm::device::Backer`] that says yes to every backing and records it, so that the
/// allocator can plan a block under the device's lock and the runtime can back it after
/// releasing the lock. An unback (spare chunks the allocator gives back under pressure) goes to
/// the driver at once.
pub(crate) struct Planned<'a> {
    pub(crate) hal: HalBacker<'a>,
    /// Inline up to four pieces (2 MiB pages and a 4 KiB tail, say): no heap allocation.
    pub(crate) backs: smallvec::SmallVec<[(VaRange, PageSize, MemAttr); 4]>,
}

impl mm::device::Backer for Planned<'_> {
    fn back(
        &mut self,
        range: VaRange,
        page: PageSize,
        attrs: MemAttr,
    ) -> std::result::Result<(), hal::Error> {
        self.backs.push((range, page, attrs));
        Ok(())
    }

    fn unback(&mut self, range: VaRange) -> std::result::Result<(), hal::Error> {
        match self.backs.iter().position(|b| b.0 == range) {
            Some(i) => {
                self.backs.remove(i);
                Ok(())
            }
            None => self.hal.unback(range),
        }
    }
}

/// The pinned-host state of the process: the allocation table, the ranges being freed (unbacked
/// with no lock held), and the host ranges registered with `aclrtHostRegister`.
#[derive(Debug)]
pub struct HostMem {
    /// `aclrtMallocHost` allocations.
    pub(crate) heap: DeviceHeap,
    /// Starts of allocations an `aclrtFreeHost` is unbacking now.
    pub(crate) freeing: BTreeSet<u64>,
    /// Registered host ranges: start → length.
    pub(crate) registered: std::collections::BTreeMap<u64, u64>,
}

impl HostMem {
    /// An empty table over the pinned-host window `window`.
    pub(crate) fn new(window: VaRange) -> Self {
        Self { heap: DeviceHeap::new(window), freeing: BTreeSet::new(), registered: Default::default() }
    }
}

/// The live pinned-host allocations, published for the copy and memset checks so that they
/// read them with no lock: `(start, end of the page-rounded range, end of the usable bytes)`,
/// sorted by start. It is rebuilt from [`HostMem`] under the pinned-host lock after every change
/// (`aclrtMallocHost`, `aclrtFreeHost`, teardown: not hot paths); a range being freed is left
/// out from the moment its free starts.
#[derive(Debug, Default)]
pub struct PinnedView(arc_swap::ArcSwap<Vec<(u64, u64, u64)>>);

impl PinnedView {
    /// Publishes what `host` holds now. Call it with the pinned-host lock held, after the change,
    /// so that publications follow the table's order.
    pub(crate) fn publish(&self, host: &HostMem) {
        let live = host
            .heap
            .iter()
            .filter(|a| !host.freeing.contains(&a.range.start().as_u64()))
            .map(|a| {
                let start = a.range.start().as_u64();
                (start, start.saturating_add(a.range.len_bytes()), start.saturating_add(a.usable_bytes))
            })
            .collect();
        self.0.store(std::sync::Arc::new(live));
    }

    /// Whether `[addr, addr + len)` lies inside one live allocation's usable bytes (as
    /// [`mm::heap::DeviceHeap::contains_range`] answers it). Lock-free.
    pub(crate) fn contains_range(&self, addr: u64, len: u64) -> bool {
        let live = self.0.load();
        let i = live.partition_point(|&(start, _, _)| start <= addr);
        let Some(&(_, range_end, usable_end)) = i.checked_sub(1).and_then(|i| live.get(i)) else {
            return false;
        };
        addr < range_end && addr.checked_add(len).is_some_and(|end| end <= usable_end)
    }
}

/// Where an address points, decided by the address alone (the VA model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// Device memory of the given logical device.
    Device(u32),
    /// Pinned host memory from `aclrtMallocHost`.
    Pinned,
    /// Memory the runtime did not allocate (ordinary, pageable host memory).
    Unregistered,
}

/// Classifies `addr` by window: an address of device `i`'s window or of its slice of the
/// stream-ordered pool window (where its pool segments live) is [`Loc::Device`]`(i)`.
pub fn locate(addr: u64) -> Loc {
    if let Some(i) = device_of(addr) {
        return Loc::Device(i);
    }
    match window_of(addr) {
        Window::PinnedHost => Loc::Pinned,
        _ => Loc::Unregistered,
    }
}

/// `aclrtMemcpyKind` values.
pub mod kind {
    /// Host to host.
    pub const H2H: u32 = 0;
    /// Host to device.
    pub const H2D: u32 = 1;
    /// Device to host.
    pub const D2H: u32 = 2;
    /// Device to device.
    pub const D2D: u32 = 3;
    /// Inferred from the addresses.
    pub const DEFAULT: u32 = 4;
    /// Host to device through a runtime buffer.
    pub const H2BUF2D: u32 = 5;

    /// The name of a kind, for messages.
    pub fn name(k: u32) -> &'static str {
        match k {
            H2H => "ACL_MEMCPY_HOST_TO_HOST",
            H2D => "ACL_MEMCPY_HOST_TO_DEVICE",
            D2H => "ACL_MEMCPY_DEVICE_TO_HOST",
            D2D => "ACL_MEMCPY_DEVICE_TO_DEVICE",
            DEFAULT => "ACL_MEMCPY_DEFAULT",
            H2BUF2D => "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE",
            6 => "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE",
            7 => "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE",
            _ => "an unknown kind",
        }
    }
}

/// What a validated copy will do; the C edge supplies host slices for `Unregistered` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    /// Where the destination is.
    pub dst: Loc,
    /// Where the source is.
    pub src: Loc,
    /// Bytes to copy; 0 means there is nothing to do.
    pub count: u64,
}

/// What a validated memset will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetPlan {
    /// Where the destination is (`Unregistered`: ordinary host memory, which the C edge sets).
    pub dst: Loc,
    /// Bytes to set; 0 means there is nothing to do.
    pub count: u64,
}

/// One end of a copy, as the C edge hands it in.
#[derive(Debug)]
pub enum SrcBytes<'a> {
    /// Device or pinned memory at this address.
    Addr(u64),
    /// Ordinary host memory.
    Host(&'a [u8]),
}

/// The other end of a copy.
#[derive(Debug)]
pub enum DstBytes<'a> {
    /// Device or pinned memory at this address.
    Addr(u64),
    /// Ordinary host memory.
    Host(&'a mut [u8]),
}

pub use mm::policy::Api as MallocApi;

/// One `aclrtMallocAttribute` of an `aclrtMallocConfig`, as the C edge read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfgAttr {
    /// `aclrtMallocAttrType`.
    pub kind: i32,
    /// The 8 bytes of the `aclrtMallocAttrValue` union.
    pub value: [u8; 8],
}

impl CfgAttr {
    pub(crate) fn u16(&self) -> u16 {
        u16::from_ne_bytes([self.value[0], self.value[1]])
    }

    pub(crate) fn u32(&self) -> u32 {
        u32::from_ne_bytes([self.value[0], self.value[1], self.value[2], self.value[3]])
    }
}

/// `ACL_RT_MEM_ATTR_RSV`.
pub(crate) const ATTR_RSV: i32 = 0;
/// `ACL_RT_MEM_ATTR_MODULE_ID`.
pub(crate) const ATTR_MODULE_ID: i32 = 1;
/// `ACL_RT_MEM_ATTR_DEVICE_ID`.
pub(crate) const ATTR_DEVICE_ID: i32 = 2;
/// `ACL_RT_MEM_ATTR_VA_FLAG`.
pub(crate) const ATTR_VA_FLAG: i32 = 3;

/// Backs device VA through the driver: the runtime's [`mm::device::Backer`].
pub(crate) struct HalBacker<'a> {
    pub(crate) drv: &'a dyn hal::Driver,
    pub(crate) dev: DeviceId,
}

impl std::fmt::Debug for HalBacker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HalBacker({}, {})", self.drv.name(), self.dev)
    }
}

impl<'a> HalBacker<'a> {
    pub(crate) fn new(drv: &'a dyn hal::Driver, dev: u32) -> Self {
        Self { drv, dev: DeviceId(dev) }
    }
}

impl HalBacker<'_> {
    /// Backs the planned pieces `backs` of one allocation in one driver call
    /// ([`hal::MemoryBacking::back_many`]: adjacent pieces may become one mapping); all or
    /// nothing.
    pub(crate) fn back_many(
        &self,
        backs: &[(VaRange, PageSize, MemAttr)],
    ) -> std::result::Result<(), hal::Error> {
        // As in `back`: the backing itself stays writable.
        // Inline: backing one allocation makes no heap allocation here.
        let reqs: smallvec::SmallVec<[BackRequest; 4]> = backs
            .iter()
            .map(|&(range, page_size, attrs)| BackRequest {
                range,
                page_size,
                attrs: attrs - MemAttr::READONLY,
            })
            .collect();
        self.drv.back_many(self.dev, &reqs)
    }
}

impl mm::device::Backer for HalBacker<'_> {
    fn back(
        &mut self,
        range: VaRange,
        page: PageSize,
        attrs: MemAttr,
    ) -> std::result::Result<(), hal::Error> {
        // User-space read-only is enforced by the runtime's copy checks; the device (and kernels)
        // may still write, so the backing itself stays writable.
        let attrs = attrs - MemAttr::READONLY;
        self.drv.back(self.dev, &BackRequest { range, page_size: page, attrs })
    }

    fn unback(&mut self, range: VaRange) -> std::result::Result<(), hal::Error> {
        self.drv.unback(self.dev, range)
    }
}

/// Checks that `ptr` could be freed now from `m`, device `d`'s memory: a live plain allocation
/// base, not a pool segment.
pub(crate) fn check_free_target(api: &str, m: &DevMem, d: u32, ptr: u64) -> Result<()> {
    let Some(alloc) = m.alloc.as_ref() else {
        return Err(AclError::rt_invalid(format!("{api}: device {d} has no context")));
    };
    match alloc.get(DeviceAddr(ptr)) {
        Ok(i) if i.component == crate::state::memory::POOL_COMPONENT => {
            Err(AclError::rt_invalid(format!("{api}: ptr {ptr:#x} is a memory pool's segment")))
        }
        Ok(_) => Ok(()),
        Err(why) => Err(not_live(api, "ptr", ptr, why)),
    }
}

/// Whether `[addr, addr + len)` (which starts outside every window) reaches into one, or wraps.
pub(crate) fn crosses_windows(addr: u64, len: u64) -> bool {
    let Some(end) = addr.checked_add(len) else { return true };
    if end > isize::MAX as u64 {
        return true;
    }
    [hal::layout::host_window_base(), hal::layout::pool_window_base(), hal::layout::device_windows_base()]
        .iter()
        .any(|&base| addr < base && end > base)
}

pub(crate) fn not_live(api: &str, what: &str, ptr: u64, why: NotLive) -> AclError {
    let reason = match why {
        NotLive::Freed => "was already freed (double free)".to_owned(),
        NotLive::Interior { base } => format!("points inside the allocation at {base}, not at its start"),
        NotLive::Unknown => "is not a live allocation of this process".to_owned(),
    };
    AclError::rt_invalid(format!("{api}: {what} {ptr:#x} {reason}"))
}

/// The name of an `aclrtMemMallocPolicy` value, for messages.
pub fn policy_name(policy: u32) -> &'static str {
    match policy {
        0 => "ACL_MEM_MALLOC_HUGE_FIRST",
        1 => "ACL_MEM_MALLOC_HUGE_ONLY",
        2 => "ACL_MEM_MALLOC_NORMAL_ONLY",
        3 => "ACL_MEM_MALLOC_HUGE_FIRST_P2P",
        4 => "ACL_MEM_MALLOC_HUGE_ONLY_P2P",
        5 => "ACL_MEM_MALLOC_NORMAL_ONLY_P2P",
        6 => "ACL_MEM_MALLOC_HUGE1G_ONLY",
        7 => "ACL_MEM_MALLOC_HUGE1G_ONLY_P2P",
        _ => "an out-of-range policy (treated as huge pages from 2 MiB, normal below)",
    }
}

/// The direction rules of `aclrtMemcpy` (reference behaviour): the four determinate pairs
/// force their kind; pairs with ordinary host memory allow only some kinds.
pub(crate) fn check_kind(api: &str, src: Loc, dst: Loc, k: u32) -> Result<()> {
    use kind::*;
    let host_like = |l: Loc| !matches!(l, Loc::Device(_));
    let requested = if k == H2BUF2D { H2D } else { k };
    let allowed: &[u32] = match (src, dst) {
        (Loc::Unregistered, Loc::Device(_)) => &[H2D, D2D],
        (Loc::Device(_), Loc::Unregistered) => &[D2H, D2D],
        (Loc::Pinned, Loc::Unregistered) => &[H2H, H2D],
        (Loc::Unregistered, Loc::Pinned) => &[H2H, D2H],
        (Loc::Unregistered, Loc::Unregistered) => &[H2H, H2D, D2H, D2D],
        // Determinate pairs: the kind is corrected to what the addresses say.
        _ => return Ok(()),
    };
    if requested == DEFAULT || allowed.contains(&requested) {
        return Ok(());
    }
    let side = |l: Loc| {
        if host_like(l) {
            if l == Loc::Pinned {
                "pinned host"
            } else {
                "ordinary host"
            }
        } else {
            "device"
        }
    };
    Err(AclError::rt_invalid(format!(
        "{api}: kind {} does not fit a copy from {} memory to {} memory",
        kind::name(k),
        side(src),
        side(dst)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_view_answers_as_the_table_and_leaves_out_a_range_being_freed() {
        use mm::heap::Allocation;
        let window = VaRange::try_new(DeviceAddr(1 << 40), 1 << 30).unwrap();
        let mut host = HostMem::new(window);
        let view = PinnedView::default();
        let add = |host: &mut HostMem, usable: u64| {
            let range = host.heap.reserve(usable, PageSize::Normal).unwrap();
            host.heap
                .commit(Allocation {
                    range,
                    usable_bytes: usable,
                    page_size: PageSize::Normal,
                    attrs: MemAttr::empty(),
                })
                .unwrap();
            range.start().as_u64()
        };
        let a = add(&mut host, 100);
        let b = add(&mut host, 8192);
        assert!(!view.contains_range(a, 1), "nothing published yet");
        view.publish(&host);
        for (addr, len) in [
            (a, 100),
            (a, 0),
            (a + 99, 1),
            (a + 100, 1),
            (a + 100, 0),
            (a + 4095, 0),
            (a + 4096, 0),
            (b, 8192),
            (b + 1, 8192),
            (b - 1, 2),
            (a, u64::MAX),
            (a - 1, 1),
        ] {
            assert_eq!(
                view.contains_range(addr, len),
                host.heap.contains_range(DeviceAddr(addr), len),
                "[{addr:#x}, +{len})"
            );
        }
        host.freeing.insert(b);
        view.publish(&host);
        assert!(!view.contains_range(b, 1), "a range being freed is no longer live");
        assert!(view.contains_range(a, 100));
        host.heap.drain();
        view.publish(&host);
        assert!(!view.contains_range(a, 1));
    }

    #[test]
    fn kinds_follow_the_reference_table() {
        use kind::*;
        let ok = |s, d, k| check_kind("t", s, d, k).is_ok();
        assert!(ok(Loc::Pinned, Loc::Device(0), D2H), "determinate pairs are corrected");
        assert!(ok(Loc::Unregistered, Loc::Device(0), H2D));
        assert!(ok(Loc::Unregistered, Loc::Device(0), D2D));
        assert!(!ok(Loc::Unregistered, Loc::Device(0), D2H));
        assert!(!ok(Loc::Device(0), Loc::Unregistered, H2D));
        assert!(ok(Loc::Device(0), Loc::Unregistered, DEFAULT));
        assert!(ok(Loc::Pinned, Loc::Unregistered, H2D));
        assert!(!ok(Loc::Pinned, Loc::Unregistered, D2H));
        assert!(!ok(Loc::Unregistered, Loc::Pinned, H2D));
        assert!(ok(Loc::Unregistered, Loc::Unregistered, D2D));
        assert!(ok(Loc::Unregistered, Loc::Device(1), H2BUF2D));
    }
}
