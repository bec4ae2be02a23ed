//! Stream-ordered memory pools: allocation and free folded into stream order.
//!
//! A pool owns *regions* of device VA (reserved from a [`PoolBacking`], unbacked) and backs
//! their 2 MiB pages with physical memory only where blocks need them. It owns the block
//! states, the page backing, the reuse decisions and the pool statistics; it does not know how
//! streams work (it asks a [`StreamOrder`] oracle) and it does not touch memory (the backing
//! reserves, backs and releases).
//!
//! # Blocks
//!
//! Every byte of a region is in one extent: *free* (not handed out, no pending stream use),
//! *busy* (allocated), or *cached* (freed on stream `s` at sequence `q`: the stream may still be
//! using it until `s` completes `q`). Allocation is best fit by (size, address) over every
//! extent the requesting stream may safely take, split from the low end. Free extents merge with
//! free neighbours; cached extents merge only with neighbours of the same provenance.
//!
//! # Reuse of cached blocks by stream `S`
//!
//! - freed on `S` itself: always (stream order makes it safe);
//! - freed on `T` at `q`, *event dependency* on: when `T@q` is ordered before `S`'s tail;
//! - *opportunistic* on: when `T` has completed `q`;
//! - *internal dependency* on: any such block, and the grant carries the point `S` must wait for
//!   (the caller inserts the wait before handing the memory out).
//!
//! # Physical memory
//!
//! A 2 MiB page is backed while any busy or cached extent touches it, and may stay backed while
//! idle (as reserve, up to the release threshold). `reserved` is the backed pages' bytes, `used`
//! the busy extents' bytes. Because backing follows pages, not the VA layout, VA fragmentation
//! never costs physical memory, and when no VA range fits, a fresh region is reserved and
//! backed from free pages (defragmentation by remapping). Choosing a block, the pool prefers one
//! that needs no new pages, then one that needs no wait, then the best fit. Idle pages go back at
//! [`Pool::release`]: at a synchronize (down to the release threshold) or `TrimTo`. Pages are
//! backed and released in runs of adjacent pages ([`PoolBacking::back_run`],
//! [`PoolBacking::unback_run`]), so that a backing can do a large block's pages in one step.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use hashbrown::HashMap;

use hal::{DeviceAddr, VaRange};

use crate::device::Usage;
use crate::order::{StreamOrder, StreamPoint};

/// Block granularity: sizes are rounded up to this, and blocks start at multiples of it.
pub const BLOCK_ALIGN: u64 = 512;
/// Page granularity of the backing (one 2 MiB page).
pub const PAGE: u64 = 2 << 20;
/// Smallest VA region a pool reserves at a time.
pub const REGION_MIN: u64 = 256 << 20;
/// The stream of a free ordered after nothing (`aclrtFree` of a block): the block is idle at
/// once, and any stream may reuse it without a wait.
pub const UNORDERED: u32 = u32::MAX;

/// Reserves device VA and backs it with physical pages, for pools.
pub trait PoolBacking {
    /// Reserves `len_bytes` (a multiple of [`PAGE`]) of VA, not backed.
    ///
    /// # Errors
    ///
    /// A [`hal::Error`]; [`hal::ErrorKind::OutOfMemory`] when no VA is left.
    fn reserve(&mut self, len_bytes: u64) -> Result<VaRange, hal::Error>;

    /// Gives back a reservation with nothing backed in it.
    ///
    /// # Errors
    ///
    /// A [`hal::Error`] when it was not a reservation.
    fn unreserve(&mut self, range: VaRange) -> Result<(), hal::Error>;

    /// Backs one page (a [`PAGE`]-aligned range of [`PAGE`] bytes inside a reservation).
    ///
    /// # Errors
    ///
    /// A [`hal::Error`]; [`hal::ErrorKind::OutOfMemory`] when the device has no free memory.
    fn back(&mut self, page: VaRange) -> Result<(), hal::Error>;

    /// Releases one page backed by [`Self::back`].
    ///
    /// # Errors
    ///
    /// A [`hal::Error`] when it was not backed.
    fn unback(&mut self, page: VaRange) -> Result<(), hal::Error>;

    /// Backs `pages`: adjacent pages, a [`PAGE`]-aligned range a multiple of [`PAGE`] long
    /// inside a reservation; all or nothing. Each page stays a backing of its own, released
    /// with [`Self::unback`]. A backing that can back several pages in one step (one driver
    /// call, one mapping) does so here; by default it is one [`Self::back`] per page.
    ///
    /// # Errors
    ///
    /// As [`Self::back`]; nothing stays backed then.
    fn back_run(&mut self, pages: VaRange) -> Result<(), hal::Error> {
        let (a, b) = (pages.start().as_u64(), pages.end());
        let mut p = a;
        while p < b {
            if let Err(e) = self.back(page_range(p)) {
                let mut q = a;
                while q < p {
                    let _ = self.unback(page_range(q));
                    q += PAGE;
                }
                return Err(e);
            }
            p += PAGE;
        }
        Ok(())
    }

    /// Releases `pages`: adjacent pages, each backed by [`Self::back`] or [`Self::back_run`]
    /// (not necessarily the same call). A backing that can release several pages in one step
    /// does so here; by default it is one [`Self::unback`] per page, stopping at the first
    /// error. On error the pool keeps the whole run counted as backed (a release fails only
    /// when the backing's own records are broken).
    ///
    /// # Errors
    ///
    /// As [`Self::unback`].
    fn unback_run(&mut self, pages: VaRange) -> Result<(), hal::Error> {
        let mut p = pages.start().as_u64();
        while p < pages.end() {
            self.unback(page_range(p))?;
            p += PAGE;
        }
        Ok(())
    }
}

/// Gives back up to `budget` of `pages` (ascending page addresses, all backed) from the top,
/// in runs of adjacent pages ([`PoolBacking::unback_run`]); returns the runs released, as
/// (first page, pages). A run whose release fails stays backed, and the next run down is tried.
fn unback_runs<B: PoolBacking>(backing: &mut B, pages: &[u64], mut budget: u64) -> Vec<(u64, u64)> {
    let mut done = Vec::new();
    let mut i = pages.len();
    while i > 0 && budget > 0 {
        // The run of adjacent pages ending at `pages[i - 1]`, at most `budget` long.
        let mut lo = i - 1;
        while lo > 0 && pages[lo - 1] + PAGE == pages[lo] && ((i - lo) as u64) < budget {
            lo -= 1;
        }
        let n = (i - lo) as u64;
        if backing.unback_run(span_range(pages[lo], n * PAGE)).is_ok() {
            done.push((pages[lo], n));
            budget -= n;
        }
        i = lo;
    }
    done
}

/// Which cross-stream reuse modes are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReuseModes {
    /// Reuse a block whose free is ordered before the allocating stream by event waits.
    pub follow_event_dependencies: bool,
    /// Reuse a block whose free has completed.
    pub allow_opportunistic: bool,
    /// Reuse any cached block, making the allocating stream wait for the free.
    pub allow_internal_dependencies: bool,
}

impl Default for ReuseModes {
    /// All on, as in CUDA: every mode is safe by construction.
    fn default() -> Self {
        Self { follow_event_dependencies: true, allow_opportunistic: true, allow_internal_dependencies: true }
    }
}

/// How a block was found for an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Free memory of an existing region.
    Free,
    /// A fresh region was reserved.
    NewRegion,
    /// A block freed on the same stream.
    SameStream,
    /// A block whose free is ordered before the stream by event dependencies.
    EventDependency,
    /// A block whose free has completed.
    Opportunistic,
    /// A block whose free the stream must wait for (see [`Grant::wait_for`]).
    InternalDependency,
}

/// An allocation handed out by [`Pool::allocate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The block's address.
    pub addr: DeviceAddr,
    /// Its size (rounded to [`BLOCK_ALIGN`]).
    pub size_bytes: u64,
    /// How it was found.
    pub how: Reuse,
    /// A point the allocating stream must wait for before using the block.
    pub wait_for: Option<StreamPoint>,
}

/// Why a pool call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// Zero or overflowing size, or a bad argument.
    InvalidArgument,
    /// The pool's maximum size does not allow it.
    Exhausted,
    /// The device has no memory (or VA) for it.
    OutOfMemory(hal::Error),
    /// The address is not a live block of this pool.
    NotAllocated,
    /// The address lies inside a live block that starts elsewhere.
    Interior(DeviceAddr),
    /// `TrimTo` was asked to keep less than the bytes in use.
    BelowUsed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Busy,
    Cached(StreamPoint),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    len: u64,
    state: State,
    region: u64,
}

/// What a piece of a pool region holds, as [`Pool::regions`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtentState {
    /// Not allocated.
    Free,
    /// Allocated to a caller.
    Busy,
    /// Freed on a stream, waiting to be reused or for its free to complete.
    Cached,
}

/// One region of a pool, as [`Pool::regions`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolRegion {
    /// Its first address.
    pub base: DeviceAddr,
    /// Its VA length.
    pub len_bytes: u64,
    /// Bytes of its backed pages.
    pub backed_bytes: u64,
    /// Its extents, tiling it: (address, length, state).
    pub extents: Vec<(u64, u64, ExtentState)>,
}

/// Pool statistics, as the pool attributes report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes of backed pages.
    pub reserved: Usage,
    /// Bytes of busy blocks.
    pub used: Usage,
}

/// A stream-ordered pool.
///
/// # Invariants
///
/// - The extents of each region tile it exactly. `extents` maps each extent's address to it,
///   `ends` each extent's end to its address, and `starts` holds every extent's address in
///   order: the steady-state reuse and free of a block find it and its neighbours by hashing,
///   in time independent of the number of live blocks; only a split, a merge or an interior
///   lookup touches the ordered set.
/// - `free_set` indexes every free extent and `cached` every cached extent, by (size, address).
/// - `pages` maps every backed page to the number of busy or cached extents touching it; a page
///   some busy or cached extent touches is backed.
/// - `stats.reserved.current` is the backed pages' bytes; `stats.used.current` the busy
///   extents' bytes.
#[derive(Debug)]
pub struct Pool {
    max_bytes: u64,
    modes: ReuseModes,
    release_threshold: u64,
    regions: BTreeMap<u64, u64>,
    extents: HashMap<u64, Extent>,
    ends: HashMap<u64, u64>,
    starts: BTreeSet<u64>,
    free_set: BTreeSet<(u64, u64)>,
    cached: BTreeMap<u32, BTreeSet<(u64, u64)>>,
    pages: BTreeMap<u64, u32>,
    /// The pages of `pages` that count no extent (idle: backed as reserve), kept with every
    /// change of a count, so that an allocation needing new pages knows how many there are in
    /// O(1) and a release walks only them.
    idle: BTreeSet<u64>,
    stats: PoolStats,
    /// The block the newest [`Pool::free`] cached without merging it: (stream, length,
    /// address). A hint, checked against `extents` before use: the steady-state reuse of a
    /// block by the stream that freed it takes it back without searching the size indexes.
    hot: Option<(u32, u64, u64)>,
}

fn round(v: u64, to: u64) -> Option<u64> {
    v.checked_add(to - 1).map(|x| x / to * to)
}

/// The pages `[addr, addr + len)` touches: first page address and one past the last.
fn page_span(addr: u64, len: u64) -> (u64, u64) {
    (addr / PAGE * PAGE, (addr + len).div_ceil(PAGE) * PAGE)
}

fn page_range(p: u64) -> VaRange {
    // A page address is aligned and far from overflow by construction of the regions.
    VaRange::try_new(DeviceAddr(p), PAGE).unwrap_or_else(|_| unreachable_range())
}

/// The pages `[p, p + len)` (`len` a non-zero multiple of [`PAGE`]).
fn span_range(p: u64, len: u64) -> VaRange {
    // As in `page_range`: inside a region.
    VaRange::try_new(DeviceAddr(p), len).unwrap_or_else(|_| unreachable_range())
}

#[cold]
fn unreachable_range() -> VaRange {
    // Only reachable if a region ended at the top of the address space, which reservations
    // from a device window cannot.
    VaRange::try_new(DeviceAddr(0), PAGE).unwrap_or_else(|_| unreachable_range())
}

/// A candidate block: (new pages it needs, needs a wait, extent length, address, how, wait).
type Cand = (u64, bool, u64, u64, Reuse, Option<StreamPoint>);

impl Pool {
    /// An empty pool that may back at most `max_bytes`.
    pub fn new(max_bytes: u64, modes: ReuseModes) -> Self {
        Self {
            max_bytes,
            modes,
            release_threshold: 0,
            regions: BTreeMap::new(),
            extents: HashMap::new(),
            ends: HashMap::new(),
            starts: BTreeSet::new(),
            free_set: BTreeSet::new(),
            cached: BTreeMap::new(),
            pages: BTreeMap::new(),
            idle: BTreeSet::new(),
            stats: PoolStats::default(),
            hot: None,
        }
    }

    /// The pool's maximum reserved bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The reuse modes.
    pub fn modes(&self) -> ReuseModes {
        self.modes
    }

    /// Changes the reuse modes.
    pub fn set_modes(&mut self, modes: ReuseModes) {
        self.modes = modes;
    }

    /// Bytes kept reserved at a synchronize.
    pub fn release_threshold(&self) -> u64 {
        self.release_threshold
    }

    /// Sets the release threshold.
    ///
    /// # Errors
    ///
    /// [`PoolError::InvalidArgument`] above the pool's maximum size.
    pub fn set_release_threshold(&mut self, bytes: u64) -> Result<(), PoolError> {
        if bytes > self.max_bytes {
            return Err(PoolError::InvalidArgument);
        }
        self.release_threshold = bytes;
        Ok(())
    }

    /// The statistics.
    pub fn stats(&self) -> PoolStats {
        self.stats
    }

    /// Resets the reserved high-water mark to the current value.
    pub fn reset_reserved_high(&mut self) {
        self.stats.reserved.peak = self.stats.reserved.current;
    }

    /// Resets the used high-water mark to the current value.
    pub fn reset_used_high(&mut self) {
        self.stats.used.peak = self.stats.used.current;
    }

    /// Whether `addr` lies in one of the pool's regions.
    pub fn owns(&self, addr: DeviceAddr) -> bool {
        self.regions.range(..=addr.as_u64()).next_back().is_some_and(|(&s, &l)| addr.as_u64() < s + l)
    }

    /// The busy block containing `addr`: (its base, its size).
    pub fn find_busy(&self, addr: DeviceAddr) -> Option<(DeviceAddr, u64)> {
        let &s = self.starts.range(..=addr.as_u64()).next_back()?;
        let e = self.extents.get(&s)?;
        (e.state == State::Busy && addr.as_u64() < s + e.len).then_some((DeviceAddr(s), e.len))
    }

    /// Every region of the pool, in address order: (base, VA length, backed bytes, and its
    /// extents as (address, length, state)). For memory snapshots; it builds a list.
    pub fn regions(&self) -> Vec<PoolRegion> {
        self.regions
            .iter()
            .map(|(&base, &len)| {
                let backed = self.pages.range(base..base + len).count() as u64 * PAGE;
                let extents = self
                    .starts
                    .range(base..base + len)
                    .filter_map(|a| self.extents.get(a).map(|e| (a, e)))
                    .map(|(&a, e)| {
                        let state = match e.state {
                            State::Free => ExtentState::Free,
                            State::Busy => ExtentState::Busy,
                            State::Cached(_) => ExtentState::Cached,
                        };
                        (a, e.len, state)
                    })
                    .collect();
                PoolRegion { base: DeviceAddr(base), len_bytes: len, backed_bytes: backed, extents }
            })
            .collect()
    }

    /// Checks the extent index against its invariants (see [`Pool`]): the three maps agree,
    /// the extents tile every region, the size indexes hold exactly the free and cached
    /// extents, and the busy extents are `busy` (address → length). For the model tests.
    #[cfg(test)]
    fn assert_index(&self, busy: &BTreeMap<u64, (u64, u32)>) {
        assert_eq!(self.extents.len(), self.starts.len(), "one start per extent");
        assert_eq!(self.extents.len(), self.ends.len(), "one end per extent");
        let mut free = BTreeSet::new();
        let mut cached: BTreeMap<u32, BTreeSet<(u64, u64)>> = BTreeMap::new();
        let mut seen = 0;
        for (&base, &len) in &self.regions {
            let mut at = base;
            for &a in self.starts.range(base..base + len) {
                let e = self.extents.get(&a).expect("every start is an extent");
                assert_eq!(a, at, "the extents of region {base:#x} tile it");
                assert_eq!((e.region, self.ends.get(&(a + e.len))), (base, Some(&a)), "extent {a:#x}");
                match e.state {
                    State::Free => assert!(free.insert((e.len, a))),
                    State::Cached(p) => assert!(cached.entry(p.stream).or_default().insert((e.len, a))),
                    State::Busy => assert_eq!(busy.get(&a).map(|b| b.0), Some(e.len), "busy {a:#x}"),
                }
                at = a + e.len;
                seen += 1;
            }
            assert_eq!(at, base + len, "the extents of region {base:#x} reach its end");
        }
        assert_eq!(seen, self.extents.len(), "every extent lies in a region");
        assert_eq!(free, self.free_set, "the free index");
        let listed: BTreeMap<u32, BTreeSet<(u64, u64)>> =
            self.cached.iter().filter(|(_, v)| !v.is_empty()).map(|(&k, v)| (k, v.clone())).collect();
        assert_eq!(cached, listed, "the cached index");
        assert_eq!(self.busy_count(), busy.len(), "the busy extents are the live blocks");
        let idle: BTreeSet<u64> = self.pages.iter().filter(|(_, &c)| c == 0).map(|(&p, _)| p).collect();
        assert_eq!(idle, self.idle, "the idle pages");
    }

    /// Number of busy blocks.
    pub fn busy_count(&self) -> usize {
        self.extents.values().filter(|e| e.state == State::Busy).count()
    }

    fn index_insert(&mut self, addr: u64, e: Extent) {
        match e.state {
            State::Free => {
                self.free_set.insert((e.len, addr));
            }
            State::Cached(p) => {
                self.cached.entry(p.stream).or_default().insert((e.len, addr));
            }
            State::Busy => {}
        }
        let old = self.extents.insert(addr, e);
        debug_assert!(old.is_none(), "an extent is indexed once");
        self.ends.insert(addr + e.len, addr);
        self.starts.insert(addr);
    }

    /// The extent ending at `addr` (its lower neighbour when `addr` starts an extent).
    fn lower_neighbour(&self, addr: u64) -> Option<(u64, Extent)> {
        let &s = self.ends.get(&addr)?;
        self.extents.get(&s).map(|x| (s, *x))
    }

    /// Takes the extent at `addr` out of its size index (free or cached), leaving the map.
    fn unindex(&mut self, addr: u64, e: &Extent) {
        match e.state {
            State::Free => {
                self.free_set.remove(&(e.len, addr));
            }
            State::Cached(p) => {
                // An emptied set stays: the stream will likely cache blocks again soon.
                if let Some(set) = self.cached.get_mut(&p.stream) {
                    set.remove(&(e.len, addr));
                }
            }
            State::Busy => {}
        }
    }

    fn index_remove(&mut self, addr: u64) -> Option<Extent> {
        let e = self.extents.remove(&addr)?;
        self.ends.remove(&(addr + e.len));
        self.starts.remove(&addr);
        self.unindex(addr, &e);
        Some(e)
    }

    /// Pages of `[addr, addr + len)` not backed yet.
    fn new_pages(&self, addr: u64, len: u64) -> u64 {
        let (a, b) = page_span(addr, len);
        let backed = self.pages.range(a..b).count() as u64;
        (b - a) / PAGE - backed
    }

    /// The best extent `stream` may take for `size` bytes.
    fn choose<O: StreamOrder>(&self, order: &O, stream: u32, size: u64) -> Option<Cand> {
        fn consider(best: &mut Option<Cand>, c: Cand) {
            let key = |c: &Cand| (c.0 > 0, c.1, c.2, c.3);
            if best.as_ref().is_none_or(|b| key(&c) < key(b)) {
                *best = Some(c);
            }
        }
        let mut best: Option<Cand> = None;
        if let Some(&(len, addr)) = self.free_set.range((size, 0)..).next() {
            consider(&mut best, (self.new_pages(addr, size), false, len, addr, Reuse::Free, None));
        }
        for (&s, set) in &self.cached {
            for &(len, addr) in set.range((size, 0)..) {
                let Some(Extent { state: State::Cached(p), .. }) = self.extents.get(&addr) else { continue };
                let how = if s == stream {
                    Some((Reuse::SameStream, None))
                } else if s == UNORDERED {
                    Some((Reuse::Free, None))
                } else if self.modes.follow_event_dependencies && order.is_ordered_before(*p, stream) {
                    Some((Reuse::EventDependency, None))
                } else if self.modes.allow_opportunistic && order.is_complete(*p) {
                    Some((Reuse::Opportunistic, None))
                } else if self.modes.allow_internal_dependencies {
                    Some((Reuse::InternalDependency, Some(*p)))
                } else {
                    None
                };
                if let Some((how, wait)) = how {
                    // A cached extent's pages are backed: it needs no new pages.
                    consider(&mut best, (0, wait.is_some(), len, addr, how, wait));
                    break;
                }
            }
        }
        best
    }

    /// Backs the pages of `[addr, addr + len)` that are not backed and counts the extent on
    /// every page it touches; all or nothing. Each run of adjacent pages not backed yet is
    /// backed in one [`PoolBacking::back_run`].
    fn take_pages<B: PoolBacking>(&mut self, backing: &mut B, addr: u64, len: u64) -> Result<(), PoolError> {
        /// Marks a page backed by this call until it succeeds (a backed page's count of
        /// extents never comes near it).
        const NEW: u32 = u32::MAX;
        let (a, b) = page_span(addr, len);
        let mut p = a;
        while p < b {
            if self.pages.contains_key(&p) {
                p += PAGE;
                continue;
            }
            let run = p;
            while p < b && !self.pages.contains_key(&p) {
                p += PAGE;
            }
            if let Err(e) = backing.back_run(span_range(run, p - run)) {
                // Undo the runs backed before this one: the pages marked new.
                let added: Vec<u64> =
                    self.pages.range(a..run).filter(|(_, &c)| c == NEW).map(|(&q, _)| q).collect();
                for q in added {
                    let _ = backing.unback(page_range(q));
                    self.pages.remove(&q);
                    self.stats.reserved.sub(PAGE);
                }
                return Err(PoolError::OutOfMemory(e));
            }
            let mut q = run;
            while q < p {
                self.pages.insert(q, NEW);
                self.stats.reserved.add(PAGE);
                q += PAGE;
            }
        }
        for (&q, c) in self.pages.range_mut(a..b) {
            if *c == 0 {
                self.idle.remove(&q);
            }
            *c = if *c == NEW { 1 } else { *c + 1 };
        }
        Ok(())
    }

    /// Uncounts an extent on the pages it touches (they stay backed, idle if at zero).
    fn drop_pages(&mut self, addr: u64, len: u64) {
        let (a, b) = page_span(addr, len);
        for (&q, c) in self.pages.range_mut(a..b) {
            if *c == 1 {
                self.idle.insert(q);
            }
            *c = c.saturating_sub(1);
        }
    }

    /// Allocates `size` bytes for use on `stream`.
    ///
    /// # Errors
    ///
    /// [`PoolError::InvalidArgument`] for size 0 or overflow; [`PoolError::Exhausted`] when the
    /// maximum size does not allow the pages it needs; [`PoolError::OutOfMemory`] when the
    /// device has no room. Nothing changes on error.
    pub fn allocate<B: PoolBacking, O: StreamOrder>(
        &mut self,
        backing: &mut B,
        order: &O,
        stream: u32,
        size: u64,
    ) -> Result<Grant, PoolError> {
        if size == 0 {
            return Err(PoolError::InvalidArgument);
        }
        let size = round(size, BLOCK_ALIGN).ok_or(PoolError::InvalidArgument)?;
        if round(size, PAGE).ok_or(PoolError::InvalidArgument)? > self.max_bytes {
            return Err(PoolError::Exhausted);
        }
        if let Some(g) = self.take_hot(order, stream, size) {
            return Ok(g);
        }
        let fresh = page_span(0, size).1 / PAGE;
        let need = |c: &Option<Cand>| c.map_or(fresh, |c| c.0);
        let mut retried = false;
        let (addr, how, wait, e) = loop {
            let mut cand = self.choose(order, stream, size);
            // New pages needed: recycle idle ones first (remapping), so that physical memory
            // stays what the live blocks need however the VA is laid out.
            if need(&cand) > 0 {
                self.settle(order);
                let idle = self.idle.len() as u64;
                if idle > 0 {
                    let keep = self.stats.reserved.current.saturating_sub(idle.min(need(&cand)) * PAGE);
                    self.release(backing, order, keep);
                }
                // Settling turned completed frees into free extents and merged them, which may
                // have swallowed the extent just chosen: choose again on what is there now.
                cand = self.choose(order, stream, size);
            }
            // Make room under the maximum: give back idle pages (settling completed frees).
            if self.stats.reserved.current + need(&cand) * PAGE > self.max_bytes {
                self.release(backing, order, self.max_bytes.saturating_sub(need(&cand) * PAGE));
                cand = self.choose(order, stream, size);
                if self.stats.reserved.current + need(&cand) * PAGE > self.max_bytes {
                    return Err(PoolError::Exhausted);
                }
            }
            let (addr, how, wait) = match cand {
                Some((_, _, _, addr, how, wait)) => (addr, how, wait),
                None => (self.new_region(backing, size)?, Reuse::NewRegion, None),
            };
            // The chosen extent, looked up once (taking pages changes no extent).
            let e = *self.extents.get(&addr).ok_or(PoolError::NotAllocated)?;
            if e.state != State::Free {
                break (addr, how, wait, e);
            }
            match self.take_pages(backing, addr, size) {
                Ok(()) => break (addr, how, wait, e),
                // Out of device memory: give back idle pages and try once more from the top.
                Err(e) if retried || self.release(backing, order, 0) == 0 => return Err(e),
                Err(_) => retried = true,
            }
        };
        if e.len == size {
            // An exact fit: leave its index set and change its state in place.
            if e.state == State::Busy {
                return Err(PoolError::NotAllocated);
            }
            self.unindex(addr, &e);
            if let Some(x) = self.extents.get_mut(&addr) {
                x.state = State::Busy;
            }
            self.stats.used.add(size);
            return Ok(Grant { addr: DeviceAddr(addr), size_bytes: size, how, wait_for: wait });
        }
        let e = self.index_remove(addr).ok_or(PoolError::NotAllocated)?;
        if e.len > size {
            // Split from the low end; the rest keeps its state.
            self.index_insert(addr + size, Extent { len: e.len - size, state: e.state, region: e.region });
            if let State::Cached(_) = e.state {
                // Both halves touch the pages around the split point.
                let (a, _) = page_span(addr + size, 0);
                if (addr + size) % PAGE != 0 {
                    if let Some(c) = self.pages.get_mut(&a) {
                        if *c == 0 {
                            self.idle.remove(&a);
                        }
                        *c += 1;
                    }
                }
            }
        }
        self.index_insert(addr, Extent { len: size, state: State::Busy, region: e.region });
        self.stats.used.add(size);
        Ok(Grant { addr: DeviceAddr(addr), size_bytes: size, how, wait_for: wait })
    }

    /// The fast path of [`Self::allocate`] (`size` rounded): the block the newest free cached
    /// (the `hot` hint), when `stream` freed it, it fits `size` exactly and no free or cached
    /// extent of exactly `size` lies below it. That is the block [`Self::choose`] would pick:
    /// same-stream reuse needs no wait and no new page, an exact fit is the smallest, and the
    /// lowest address wins between equals. `None` (nothing changed) otherwise, or when the pool
    /// is over its maximum (the slow path then gives pages back first).
    ///
    /// With debug assertions, each fast pick is checked against [`Self::choose`] (so the pool
    /// model tests compare the two on every reuse they make).
    fn take_hot<O: StreamOrder>(&mut self, order: &O, stream: u32, size: u64) -> Option<Grant> {
        let (s, len, addr) = self.hot?;
        if s != stream || len != size || self.stats.reserved.current > self.max_bytes {
            return None;
        }
        // The smallest entry of at least `size` in each index is the lowest exact fit if any.
        let below =
            |set: &BTreeSet<(u64, u64)>| set.range((size, 0)..).next().is_some_and(|&k| k < (size, addr));
        if below(&self.free_set) || self.cached.values().any(below) {
            return None;
        }
        #[cfg(debug_assertions)]
        let slow = self.choose(order, stream, size).map(|c| (c.3, c.4, c.5));
        #[cfg(not(debug_assertions))]
        let _ = order;
        let x = self.extents.get_mut(&addr)?;
        match x.state {
            State::Cached(p) if p.stream == stream && x.len == size => x.state = State::Busy,
            _ => return None,
        }
        // Its pages stay counted (a cached extent's are), as in the exact fit of `allocate`.
        self.hot = None;
        if let Some(set) = self.cached.get_mut(&stream) {
            set.remove(&(size, addr));
        }
        self.stats.used.add(size);
        #[cfg(debug_assertions)]
        debug_assert_eq!(slow, Some((addr, Reuse::SameStream, None)), "the fast pick is choose's");
        Some(Grant { addr: DeviceAddr(addr), size_bytes: size, how: Reuse::SameStream, wait_for: None })
    }

    /// Reserves a fresh region for `size` bytes; returns its free extent's address.
    fn new_region<B: PoolBacking>(&mut self, backing: &mut B, size: u64) -> Result<u64, PoolError> {
        let len = round(size, PAGE).ok_or(PoolError::InvalidArgument)?.max(REGION_MIN);
        let range = backing.reserve(len).map_err(PoolError::OutOfMemory)?;
        let base = range.start().as_u64();
        self.regions.insert(base, len);
        self.index_insert(base, Extent { len, state: State::Free, region: base });
        Ok(base)
    }

    /// Merges the extent at `addr` with neighbours of the same state and region.
    fn merge(&mut self, addr: u64) {
        let Some(e) = self.index_remove(addr) else { return };
        let (mut start, mut len) = (addr, e.len);
        let prev = self.lower_neighbour(addr);
        if let Some((ps, pe)) = prev {
            if pe.state == e.state && pe.region == e.region && ps + pe.len == addr {
                self.index_remove(ps);
                self.unshare_boundary(e.state, addr);
                start = ps;
                len += pe.len;
            }
        }
        if let Some(ne) = self.extents.get(&(addr + e.len)).copied() {
            if ne.state == e.state && ne.region == e.region {
                self.index_remove(addr + e.len);
                self.unshare_boundary(e.state, addr + e.len);
                len += ne.len;
            }
        }
        self.index_insert(start, Extent { len, state: e.state, region: e.region });
    }

    /// Two counted extents meeting at `at` inside a page become one: the page loses a count.
    fn unshare_boundary(&mut self, state: State, at: u64) {
        if state != State::Free && at % PAGE != 0 {
            let page = at / PAGE * PAGE;
            if let Some(c) = self.pages.get_mut(&page) {
                if *c == 1 {
                    self.idle.insert(page);
                }
                *c = c.saturating_sub(1);
            }
        }
    }

    /// Frees the block at `addr` in the order of `stream`, whose last submitted task is `seq`.
    /// Returns the block's size.
    ///
    /// # Errors
    ///
    /// [`PoolError::Interior`] inside a block, [`PoolError::NotAllocated`] otherwise (a double
    /// free or a foreign pointer). Nothing changes on error.
    pub fn free(&mut self, addr: DeviceAddr, stream: u32, seq: u64) -> Result<u64, PoolError> {
        let a = addr.as_u64();
        let state = State::Cached(StreamPoint { stream, seq });
        // One lookup finds the block and changes it; then one for each neighbour.
        let (len, region) = match self.extents.get_mut(&a) {
            Some(e) if e.state == State::Busy => {
                // The block stays on its pages, now cached: a state change in place.
                e.state = state;
                (e.len, e.region)
            }
            _ => {
                return Err(match self.find_busy(addr) {
                    Some((base, _)) => PoolError::Interior(base),
                    None => PoolError::NotAllocated,
                })
            }
        };
        self.stats.used.sub(len);
        let prev = self.lower_neighbour(a);
        let next = self.extents.get(&(a + len)).copied();
        let mergeable = |x: &Extent| x.state == state && x.region == region;
        if prev.is_some_and(|(ps, pe)| mergeable(&pe) && ps + pe.len == a)
            || next.is_some_and(|ne| mergeable(&ne))
        {
            self.merge(a);
        } else {
            self.cached.entry(stream).or_default().insert((len, a));
            self.hot = Some((stream, len, a));
        }
        Ok(len)
    }

    /// Turns cached extents whose frees have completed into free ones.
    fn settle<O: StreamOrder>(&mut self, order: &O) {
        let done: Vec<(u64, u64)> = self
            .cached
            .values()
            .flatten()
            .filter(|&&(_, a)| matches!(self.extents.get(&a), Some(Extent { state: State::Cached(p), .. }) if p.stream == UNORDERED || order.is_complete(*p)))
            .map(|&(len, a)| (a, len))
            .collect();
        for (a, len) in done {
            let Some(e) = self.index_remove(a) else { continue };
            self.drop_pages(a, len);
            self.index_insert(a, Extent { len, state: State::Free, region: e.region });
            self.merge(a);
        }
    }

    /// Gives back idle pages — touched by no busy or pending block — while the pool keeps at
    /// least `keep_bytes` reserved, and regions left with nothing backed. Returns the bytes
    /// released.
    pub fn release<B: PoolBacking, O: StreamOrder>(
        &mut self,
        backing: &mut B,
        order: &O,
        keep_bytes: u64,
    ) -> u64 {
        self.settle(order);
        // The highest idle pages first, as many as keep `keep_bytes` reserved.
        let budget = self.stats.reserved.current.saturating_sub(keep_bytes) / PAGE;
        let mut idle: Vec<u64> =
            self.idle.iter().rev().take(usize::try_from(budget).unwrap_or(usize::MAX)).copied().collect();
        idle.reverse();
        let mut released = 0;
        for (first, n) in unback_runs(backing, &idle, budget) {
            for k in 0..n {
                self.pages.remove(&(first + k * PAGE));
                self.idle.remove(&(first + k * PAGE));
            }
            self.stats.reserved.sub(n * PAGE);
            released += n * PAGE;
        }
        // Regions that are wholly free and unbacked go back too.
        let empty: Vec<(u64, u64)> = self
            .regions
            .iter()
            .filter(|(&b, &l)| {
                self.extents.get(&b).is_some_and(|e| e.state == State::Free && e.len == l)
                    && self.pages.range(b..b + l).next().is_none()
            })
            .map(|(&b, &l)| (b, l))
            .collect();
        for (b, l) in empty {
            if let Ok(r) = VaRange::try_new(DeviceAddr(b), l) {
                if backing.unreserve(r).is_ok() {
                    self.index_remove(b);
                    self.regions.remove(&b);
                }
            }
        }
        released
    }

    /// `TrimTo`: releases down to (at least) `min_bytes_to_keep` reserved bytes.
    ///
    /// # Errors
    ///
    /// [`PoolError::BelowUsed`] when `min_bytes_to_keep` is less than the bytes in use;
    /// [`PoolError::InvalidArgument`] when it exceeds the pool's maximum size.
    pub fn trim_to<B: PoolBacking, O: StreamOrder>(
        &mut self,
        backing: &mut B,
        order: &O,
        min_bytes_to_keep: u64,
    ) -> Result<u64, PoolError> {
        if min_bytes_to_keep > self.max_bytes {
            return Err(PoolError::InvalidArgument);
        }
        if min_bytes_to_keep < self.stats.used.current {
            return Err(PoolError::BelowUsed);
        }
        Ok(self.release(backing, order, min_bytes_to_keep))
    }

    /// Releases down to the release threshold (at a synchronize).
    pub fn release_to_threshold<B: PoolBacking, O: StreamOrder>(
        &mut self,
        backing: &mut B,
        order: &O,
    ) -> u64 {
        self.release(backing, order, self.release_threshold)
    }

    /// Unbacks and unreserves everything (the pool is destroyed); returns how many busy blocks
    /// were lost.
    pub fn drain<B: PoolBacking>(&mut self, backing: &mut B) -> usize {
        let busy = self.busy_count();
        let pages: Vec<u64> = self.pages.keys().copied().collect();
        let _ = unback_runs(backing, &pages, u64::MAX);
        let regions: Vec<(u64, u64)> = self.regions.iter().map(|(&b, &l)| (b, l)).collect();
        for (b, l) in regions {
            if let Ok(r) = VaRange::try_new(DeviceAddr(b), l) {
                let _ = backing.unreserve(r);
            }
        }
        self.regions.clear();
        self.extents.clear();
        self.ends.clear();
        self.starts.clear();
        self.free_set.clear();
        self.cached.clear();
        self.pages.clear();
        self.idle.clear();
        self.stats.reserved.current = 0;
        self.stats.used.current = 0;
        busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hal::ErrorKind;

    const MIB: u64 = 1 << 20;

    /// A backing handing out consecutive VA and counting backed pages; can be made full.
    struct Src {
        next: u64,
        reserved: BTreeMap<u64, u64>,
        backed: BTreeSet<u64>,
        limit_pages: usize,
    }

    impl Src {
        fn new(limit_bytes: u64) -> Self {
            Self {
                next: 16 << 40,
                reserved: BTreeMap::new(),
                backed: BTreeSet::new(),
                limit_pages: (limit_bytes / PAGE) as usize,
            }
        }
        fn bytes(&self) -> u64 {
            self.backed.len() as u64 * PAGE
        }
    }

    impl PoolBacking for Src {
        fn reserve(&mut self, len: u64) -> Result<VaRange, hal::Error> {
            let r = VaRange::try_new(DeviceAddr(self.next), len).unwrap();
            self.next += len + PAGE;
            self.reserved.insert(r.start().as_u64(), len);
            Ok(r)
        }
        fn unreserve(&mut self, range: VaRange) -> Result<(), hal::Error> {
            assert!(
                self.backed.range(range.start().as_u64()..range.end()).next().is_none(),
                "unreserve with pages backed"
            );
            self.reserved
                .remove(&range.start().as_u64())
                .map(|_| ())
                .ok_or(hal::Error::new(ErrorKind::InvalidHandle, "x"))
        }
        fn back(&mut self, page: VaRange) -> Result<(), hal::Error> {
            if self.backed.len() >= self.limit_pages {
                return Err(hal::Error::new(ErrorKind::OutOfMemory, "full"));
            }
            assert!(self.backed.insert(page.start().as_u64()), "page backed twice");
            Ok(())
        }
        fn unback(&mut self, page: VaRange) -> Result<(), hal::Error> {
            self.backed
                .remove(&page.start().as_u64())
                .then_some(())
                .ok_or(hal::Error::new(ErrorKind::InvalidHandle, "x"))
        }
    }

    /// [`Src`], recording the runs it is asked to back (all or nothing) and release.
    struct RunSrc {
        src: Src,
        calls: Vec<(&'static str, u64, u64)>,
    }

    impl PoolBacking for RunSrc {
        fn reserve(&mut self, len: u64) -> Result<VaRange, hal::Error> {
            self.src.reserve(len)
        }
        fn unreserve(&mut self, range: VaRange) -> Result<(), hal::Error> {
            self.src.unreserve(range)
        }
        fn back(&mut self, page: VaRange) -> Result<(), hal::Error> {
            self.calls.push(("back", page.start().as_u64(), 1));
            self.src.back(page)
        }
        fn unback(&mut self, page: VaRange) -> Result<(), hal::Error> {
            self.calls.push(("unback", page.start().as_u64(), 1));
            self.src.unback(page)
        }
        fn back_run(&mut self, pages: VaRange) -> Result<(), hal::Error> {
            let n = pages.len_bytes() / PAGE;
            self.calls.push(("back_run", pages.start().as_u64(), n));
            if self.src.backed.len() as u64 + n > self.src.limit_pages as u64 {
                return Err(hal::Error::new(ErrorKind::OutOfMemory, "full"));
            }
            (0..n).try_for_each(|k| self.src.back(page_range(pages.start().as_u64() + k * PAGE)))
        }
        fn unback_run(&mut self, pages: VaRange) -> Result<(), hal::Error> {
            let n = pages.len_bytes() / PAGE;
            self.calls.push(("unback_run", pages.start().as_u64(), n));
            (0..n).try_for_each(|k| self.src.unback(page_range(pages.start().as_u64() + k * PAGE)))
        }
    }

    /// A scripted oracle: completed sequence per stream and explicit "ordered before" edges.
    #[derive(Default)]
    struct Order {
        completed: BTreeMap<u32, u64>,
        edges: Vec<(StreamPoint, u32)>,
    }

    impl StreamOrder for Order {
        fn is_complete(&self, p: StreamPoint) -> bool {
            p.stream == u32::MAX || self.completed.get(&p.stream).is_some_and(|&c| c >= p.seq)
        }
        fn is_ordered_before(&self, p: StreamPoint, s: u32) -> bool {
            p.stream == s || self.edges.iter().any(|&(q, t)| t == s && q.stream == p.stream && q.seq >= p.seq)
        }
    }

    fn modes(e: bool, o: bool, i: bool) -> ReuseModes {
        ReuseModes { follow_event_dependencies: e, allow_opportunistic: o, allow_internal_dependencies: i }
    }

    #[test]
    fn blocks_pack_into_pages() {
        let (mut src, ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, ReuseModes::default());
        let a = p.allocate(&mut src, &ord, 0, 2 * MIB).unwrap();
        assert_eq!(a.how, Reuse::NewRegion);
        let b = p.allocate(&mut src, &ord, 0, 3 * MIB).unwrap();
        assert_eq!(b.addr.as_u64(), a.addr.as_u64() + 2 * MIB, "best fit, low end");
        assert_eq!(p.stats().reserved.current, 6 * MIB, "5 MiB of blocks on three pages");
        let c = p.allocate(&mut src, &ord, 0, MIB).unwrap();
        assert_eq!(c.addr.as_u64(), b.addr.as_u64() + 3 * MIB);
        assert_eq!(c.how, Reuse::Free);
        assert_eq!(p.stats().reserved.current, 6 * MIB, "the tail of the third page");
        assert_eq!(p.allocate(&mut src, &ord, 0, 1).unwrap().size_bytes, 512);
        assert_eq!(p.stats().used.current, 6 * MIB + 512);
        assert_eq!(p.stats().reserved.current, 8 * MIB, "512 bytes opened a fourth page");
        assert_eq!(src.bytes(), p.stats().reserved.current);
        assert_eq!(p.free(a.addr, 0, 1), Ok(2 * MIB));
        assert_eq!(p.free(a.addr, 0, 1), Err(PoolError::NotAllocated));
        assert_eq!(p.free(DeviceAddr(b.addr.as_u64() + 512), 0, 1), Err(PoolError::Interior(b.addr)));
    }

    #[test]
    fn adjacent_pages_are_backed_and_released_in_runs() {
        let mut ord = Order::default();
        let mut b = RunSrc { src: Src::new(1 << 30), calls: Vec::new() };
        let mut p = Pool::new(256 * MIB, ReuseModes::default());
        let x = p.allocate(&mut b, &ord, 0, 8 * MIB).unwrap().addr.as_u64();
        assert_eq!(b.calls, [("back_run", x, 4)], "four new pages, one run");
        let y = p.allocate(&mut b, &ord, 0, 16 * MIB + 1).unwrap().addr.as_u64();
        assert_eq!(y, x + 8 * MIB);
        assert_eq!(b.calls[1..], [("back_run", y, 9)]);
        // A block on pages partly backed: only the pages not backed yet, as one run.
        let z = p.allocate(&mut b, &ord, 0, 3 * MIB).unwrap().addr.as_u64();
        assert_eq!(z, y + 16 * MIB + 512);
        assert_eq!(b.calls[2..], [("back_run", x + 26 * MIB, 1)]);
        assert_eq!(p.stats().reserved.current, 28 * MIB);
        assert_eq!(b.src.bytes(), 28 * MIB);
        for (a, seq) in [(x, 1), (y, 2), (z, 3)] {
            p.free(DeviceAddr(a), 0, seq).unwrap();
        }
        ord.completed.insert(0, 3);
        b.calls.clear();
        // Down to 10 MiB: the top nine pages in one run.
        assert_eq!(p.release(&mut b, &ord, 10 * MIB), 18 * MIB);
        assert_eq!(b.calls, [("unback_run", x + 10 * MIB, 9)]);
        assert_eq!(p.release(&mut b, &ord, 0), 10 * MIB);
        assert_eq!(b.calls[1..], [("unback_run", x, 5)]);
        assert_eq!((p.stats().reserved.current, b.src.bytes()), (0, 0));
    }

    #[test]
    fn regions_report_extents_and_backed_pages() {
        let (mut src, ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, ReuseModes::default());
        assert!(p.regions().is_empty());
        let a = p.allocate(&mut src, &ord, 0, 2 * MIB).unwrap();
        let b = p.allocate(&mut src, &ord, 0, 3 * MIB).unwrap();
        p.free(a.addr, 0, 5).unwrap();
        let rs = p.regions();
        assert_eq!(rs.len(), 1);
        let r = &rs[0];
        assert_eq!(r.backed_bytes, p.stats().reserved.current);
        let mut at = r.base.as_u64();
        for &(addr, len, _) in &r.extents {
            assert_eq!(addr, at, "extents tile the region");
            at += len;
        }
        assert_eq!(at, r.base.as_u64() + r.len_bytes);
        assert!(r.extents.contains(&(a.addr.as_u64(), 2 * MIB, ExtentState::Cached)));
        assert!(r.extents.contains(&(b.addr.as_u64(), 3 * MIB, ExtentState::Busy)));
        assert!(r.extents.iter().any(|e| e.2 == ExtentState::Free));
    }

    #[test]
    fn same_stream_reuse_is_immediate() {
        let (mut src, ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, modes(false, false, false));
        let a = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        p.free(a.addr, 1, 10).unwrap();
        let b = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        assert_eq!((b.addr, b.how), (a.addr, Reuse::SameStream));
    }

    #[test]
    fn an_unordered_free_is_idle_for_every_stream() {
        for m in [modes(false, false, true), modes(false, false, false)] {
            let (mut src, ord) = (Src::new(1 << 30), Order::default());
            let mut p = Pool::new(64 * MIB, m);
            let a = p.allocate(&mut src, &ord, 1, 2 * MIB).unwrap();
            p.free(a.addr, UNORDERED, 0).unwrap();
            let b = p.allocate(&mut src, &ord, 2, 2 * MIB).unwrap();
            assert_eq!((b.addr, b.how, b.wait_for), (a.addr, Reuse::Free, None), "{m:?}");
            p.free(b.addr, UNORDERED, 0).unwrap();
            let c = p.allocate(&mut src, &ord, 1, 2 * MIB).unwrap();
            assert_eq!((c.addr, c.wait_for), (a.addr, None), "{m:?}: the same stream too");
        }
    }

    #[test]
    fn cross_stream_reuse_follows_the_modes() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, modes(false, false, false));
        let a = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        p.free(a.addr, 1, 5).unwrap();
        let b = p.allocate(&mut src, &ord, 2, 4 * MIB).unwrap();
        assert_ne!(b.addr, a.addr, "no mode: not the block in use");
        p.free(b.addr, 2, 1).unwrap();
        p.set_modes(modes(true, false, false));
        ord.edges.push((StreamPoint { stream: 1, seq: 5 }, 3));
        let c = p.allocate(&mut src, &ord, 3, 4 * MIB).unwrap();
        assert_eq!((c.addr, c.how), (a.addr, Reuse::EventDependency));
        p.free(c.addr, 3, 2).unwrap();
        p.set_modes(modes(false, true, false));
        let d = p.allocate(&mut src, &ord, 4, 4 * MIB).unwrap();
        assert_ne!(d.how, Reuse::Opportunistic, "not complete yet");
        p.free(d.addr, 4, 1).unwrap();
        ord.completed.insert(3, 2);
        // Stream 3's completed block and stream 4's own are both safe: the lower one wins.
        let f = p.allocate(&mut src, &ord, 4, 4 * MIB).unwrap();
        assert_eq!((f.addr, f.how), (c.addr, Reuse::Opportunistic));
        let e = p.allocate(&mut src, &ord, 4, 4 * MIB).unwrap();
        assert_eq!((e.addr, e.how), (d.addr, Reuse::SameStream));
        p.set_modes(modes(false, false, true));
        p.free(f.addr, 4, 9).unwrap();
        let g = p.allocate(&mut src, &ord, 5, 4 * MIB).unwrap();
        assert_eq!(g.how, Reuse::InternalDependency, "reuse with a wait beats new pages");
        assert_eq!(g.wait_for, Some(StreamPoint { stream: 4, seq: 9 }));
    }

    #[test]
    fn release_threshold_and_trim() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, ReuseModes::default());
        let xs: Vec<Grant> = (0..4).map(|_| p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap()).collect();
        for x in &xs {
            p.free(x.addr, 1, 7).unwrap();
        }
        assert_eq!(p.stats().reserved.current, 16 * MIB);
        assert_eq!(p.release(&mut src, &ord, 0), 0, "frees not complete: nothing goes back");
        ord.completed.insert(1, 7);
        p.set_release_threshold(8 * MIB).unwrap();
        assert_eq!(p.release_to_threshold(&mut src, &ord), 8 * MIB);
        assert_eq!(p.stats().reserved.current, 8 * MIB);
        assert_eq!(src.bytes(), 8 * MIB);
        let y = p.allocate(&mut src, &ord, 2, MIB).unwrap();
        assert_eq!(p.stats().reserved.current, 8 * MIB, "an idle page is reused without backing");
        assert_eq!(p.trim_to(&mut src, &ord, 0), Err(PoolError::BelowUsed));
        assert_eq!(p.trim_to(&mut src, &ord, 65 * MIB), Err(PoolError::InvalidArgument));
        assert_eq!(p.trim_to(&mut src, &ord, MIB), Ok(6 * MIB));
        assert_eq!(p.stats().reserved.current, 2 * MIB);
        assert_eq!(p.stats().reserved.peak, 16 * MIB);
        p.reset_reserved_high();
        assert_eq!(p.stats().reserved.peak, 2 * MIB);
        p.free(y.addr, 2, 1).unwrap();
        ord.completed.insert(2, 1);
        assert_eq!(p.trim_to(&mut src, &ord, 0), Ok(2 * MIB));
        assert!(src.reserved.is_empty(), "the empty region goes back too");
        assert_eq!(p.drain(&mut src), 0);
    }

    #[test]
    fn exhaustion_and_remapping() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(8 * MIB, modes(false, false, false));
        let a = p.allocate(&mut src, &ord, 1, 2 * MIB).unwrap();
        let b = p.allocate(&mut src, &ord, 1, 2 * MIB).unwrap();
        let c = p.allocate(&mut src, &ord, 1, 4 * MIB).unwrap();
        assert_eq!(p.allocate(&mut src, &ord, 1, 512), Err(PoolError::Exhausted));
        assert_eq!(p.allocate(&mut src, &ord, 1, 9 * MIB), Err(PoolError::Exhausted));
        // a and c freed (complete): 6 MiB free but not contiguous. A 6 MiB request fits in no
        // extent, yet the idle pages go back and the pool remaps 6 MiB elsewhere.
        p.free(a.addr, 1, 3).unwrap();
        p.free(c.addr, 1, 3).unwrap();
        ord.completed.insert(1, 3);
        let d = p.allocate(&mut src, &ord, 2, 6 * MIB).unwrap();
        assert_eq!(p.stats().reserved.current, 8 * MIB);
        assert!(d.addr != a.addr);
        let _ = b;
        // The device is full: idle pages go back before failing.
        let mut small = Src::new(6 * MIB);
        let mut q = Pool::new(64 * MIB, modes(false, false, false));
        let x = q.allocate(&mut small, &ord, 1, 4 * MIB).unwrap();
        q.free(x.addr, 1, 1).unwrap();
        let y = q.allocate(&mut small, &ord, 2, 4 * MIB).unwrap();
        assert_ne!(y.addr, x.addr);
        assert_eq!(small.bytes(), 4 * MIB);
        assert!(matches!(q.allocate(&mut small, &ord, 2, 4 * MIB), Err(PoolError::OutOfMemory(_))));
        assert_eq!(small.bytes(), 4 * MIB, "a failed allocation backs nothing");
    }

    #[test]
    fn cached_extents_merge_only_with_their_provenance() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(64 * MIB, modes(false, false, false));
        let xs: Vec<Grant> = (0..4).map(|_| p.allocate(&mut src, &ord, 1, MIB / 2).unwrap()).collect();
        p.free(xs[0].addr, 1, 1).unwrap();
        p.free(xs[1].addr, 1, 1).unwrap();
        p.free(xs[2].addr, 1, 2).unwrap();
        let y = p.allocate(&mut src, &ord, 1, MIB).unwrap();
        assert_eq!((y.addr, y.how), (xs[0].addr, Reuse::SameStream), "xs[0] and xs[1] merged");
        ord.completed.insert(1, 3);
        p.free(y.addr, 1, 3).unwrap();
        p.free(xs[3].addr, 1, 3).unwrap();
        assert_eq!(p.release(&mut src, &ord, 0), 2 * MIB);
        assert_eq!(
            p.stats(),
            PoolStats {
                reserved: Usage { current: 0, peak: 2 * MIB },
                used: Usage { current: 0, peak: 2 * MIB }
            }
        );
    }

    /// A cached block that completes while an allocation is being placed, and merges into the
    /// free extent the allocation had chosen, must not make the allocation fail: the choice is
    /// made again (this failed as "not a live block" under many threads).
    #[test]
    fn a_free_that_settles_into_the_chosen_extent() {
        let (mut src, mut ord) = (Src::new(1 << 30), Order::default());
        let mut p = Pool::new(512 * MIB, modes(false, false, false));
        let b = p.allocate(&mut src, &ord, 0, MIB).unwrap();
        let c = p.allocate(&mut src, &ord, 0, MIB / 2).unwrap();
        assert_eq!(c.addr.as_u64(), b.addr.as_u64() + MIB, "B and C share the first page");
        p.free(c.addr, 1, 5).unwrap();
        // C's free completes now: the next allocation settles it, and it merges with the free
        // rest of the region that the allocation (too big for C) picked.
        ord.completed.insert(1, 5);
        let g = p.allocate(&mut src, &ord, 2, 4 * MIB).expect("the allocation is placed");
        assert_eq!(g.addr.as_u64(), c.addr.as_u64(), "C's bytes and the free rest, as one extent");
        assert_eq!(p.stats().used.current, MIB + 4 * MIB);
        assert_eq!(src.bytes(), p.stats().reserved.current);
        p.free(g.addr, 2, 1).unwrap();
        p.free(b.addr, 0, 1).unwrap();
    }

    /// Many random allocations, frees and completions on several streams, in every reuse
    /// mode: allocation fails only for want of room, live blocks never overlap, a block reused
    /// across streams is safe at once or comes with the wait that makes it safe, and the
    /// accounting matches the backing.
    /// A deterministic xorshift generator from `seed`: each call returns a number below `n`.
    fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    #[test]
    // Safe code only and minutes under Miri: the other pool tests cover Miri's checks.
    #[cfg_attr(miri, ignore)]
    fn random_streams_keep_blocks_apart() {
        let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
        for m in 0..8u64 {
            let (mut src, mut ord) = (Src::new(96 * MIB), Order::default());
            let mut p = Pool::new(64 * MIB, modes(m & 1 != 0, m & 2 != 0, m & 4 != 0));
            // Live blocks: address -> (size, stream); per stream the last submitted sequence.
            let mut live: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
            let mut submitted = [0u64; 4];
            // Bytes freed on a stream at a point: (start, end, point).
            let mut freed: Vec<(u64, u64, StreamPoint)> = Vec::new();
            for _ in 0..3000 {
                match rnd(10) {
                    0..=4 => {
                        let stream = rnd(4) as u32;
                        let size = 1 + if rnd(4) == 0 { rnd(6 * MIB) } else { rnd(256 << 10) };
                        match p.allocate(&mut src, &ord, stream, size) {
                            Ok(g) => {
                                let (a, len) = (g.addr.as_u64(), g.size_bytes);
                                assert!(len >= size);
                                if let Some((&b, &(blen, _))) = live.range(..a + len).next_back() {
                                    assert!(b + blen <= a, "block {a:#x}+{len} overlaps live {b:#x}+{blen}");
                                }
                                for &(fs, fe, pt) in &freed {
                                    let overlaps = fs < a + len && a < fe;
                                    let safe = pt.stream == stream
                                        || ord.is_complete(pt)
                                        || ord.is_ordered_before(pt, stream)
                                        || g.wait_for
                                            .is_some_and(|w| w.stream == pt.stream && w.seq >= pt.seq);
                                    assert!(
                                        !overlaps || safe,
                                        "{g:?} on stream {stream} reuses [{fs:#x}, {fe:#x}) freed at {pt:?} unsafely; completed {:?}",
                                        ord.completed
                                    );
                                }
                                // The old frees of these bytes are settled by this grant.
                                freed = freed
                                    .into_iter()
                                    .flat_map(|(fs, fe, pt)| {
                                        if fs < a + len && a < fe {
                                            [(fs, fs.max(a).min(fe), pt), ((a + len).max(fs).min(fe), fe, pt)]
                                        } else {
                                            [(fs, fe, pt), (fe, fe, pt)]
                                        }
                                    })
                                    .filter(|&(fs, fe, _)| fs < fe)
                                    .collect();
                                live.insert(a, (len, stream));
                                submitted[stream as usize] += 1;
                            }
                            Err(PoolError::Exhausted | PoolError::OutOfMemory(_)) => {}
                            Err(e) => panic!("allocate({size}) on stream {stream}: {e:?}"),
                        }
                    }
                    5..=7 => {
                        if live.is_empty() {
                            continue;
                        }
                        let i = rnd(live.len() as u64) as usize;
                        let (&a, &(len, _)) = live.iter().nth(i).unwrap();
                        let stream = rnd(4) as u32;
                        submitted[stream as usize] += 1;
                        let pt = StreamPoint { stream, seq: submitted[stream as usize] };
                        assert_eq!(p.free(DeviceAddr(a), stream, pt.seq), Ok(len));
                        live.remove(&a);
                        freed.push((a, a + len, pt));
                    }
                    8 => {
                        let s = rnd(4) as u32;
                        ord.completed.insert(s, submitted[s as usize]);
                        freed.retain(|&(_, _, pt)| !ord.is_complete(pt));
                        if rnd(2) == 0 {
                            // A synchronize or trim: idle pages go back, from the top, in runs.
                            let keep = rnd(16) * PAGE;
                            let before = p.stats().reserved.current;
                            let released = p.release(&mut src, &ord, keep);
                            assert_eq!(p.stats().reserved.current, before - released);
                        }
                    }
                    _ => {
                        let (s, t) = (rnd(4) as u32, rnd(4) as u32);
                        ord.edges.push((StreamPoint { stream: s, seq: submitted[s as usize] }, t));
                    }
                }
                assert_eq!(p.stats().used.current, live.values().map(|v| v.0).sum::<u64>());
                assert_eq!(src.bytes(), p.stats().reserved.current);
                p.assert_index(&live);
                assert!(p.stats().reserved.current <= 64 * MIB);
            }
        }
    }

    /// The same-stream fast path (`take_hot`): blocks of a few sizes freed on their own stream
    /// and allocated again, among other streams' frees, completions and waits. Every fast pick
    /// is checked against `choose` (the debug assertion in `take_hot`); here, that the fast path
    /// is taken, hands out no block still in use elsewhere, and keeps the accounting.
    #[test]
    // Safe code only and many minutes under Miri (the debug check runs `choose` on every fast
    // pick): the other pool tests cover Miri's checks.
    #[cfg_attr(miri, ignore)]
    fn same_stream_fast_reuse_is_what_choose_picks() {
        let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
        let sizes = [512, 4096, 8192, 65536, 3 * MIB];
        let rounds = 2000;
        let mut fast = 0;
        for m in 0..8u64 {
            let (mut src, mut ord) = (Src::new(96 * MIB), Order::default());
            let mut p = Pool::new(64 * MIB, modes(m & 1 != 0, m & 2 != 0, m & 4 != 0));
            let mut live: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
            let mut submitted = [0u64; 3];
            for _ in 0..rounds {
                let stream = rnd(3) as u32;
                match rnd(8) {
                    0..=3 => {
                        // Mostly the size the newest free left hot, on its stream.
                        let (stream, size) = match p.hot {
                            Some((s, len, _)) if rnd(4) != 0 => (s, len),
                            _ => (stream, sizes[rnd(sizes.len() as u64) as usize]),
                        };
                        let hot_before = p.hot;
                        let Ok(g) = p.allocate(&mut src, &ord, stream, size) else { continue };
                        let (a, len) = (g.addr.as_u64(), g.size_bytes);
                        if hot_before.is_some_and(|h| h == (stream, len, a)) && p.hot.is_none() {
                            fast += 1;
                            assert_eq!((g.how, g.wait_for), (Reuse::SameStream, None));
                        }
                        if let Some((&b, &(blen, _))) = live.range(..a + len).next_back() {
                            assert!(b + blen <= a, "block {a:#x}+{len} overlaps live {b:#x}+{blen}");
                        }
                        assert!(live.insert(a, (len, stream)).is_none());
                        submitted[stream as usize] += 1;
                    }
                    4..=5 => {
                        if live.is_empty() {
                            continue;
                        }
                        let i = rnd(live.len() as u64) as usize;
                        let (&a, &(len, owner)) = live.iter().nth(i).unwrap();
                        // Mostly on the stream that used it (the hot case).
                        let s = if rnd(3) == 0 { stream } else { owner };
                        assert_eq!(p.free(DeviceAddr(a), s, submitted[s as usize]), Ok(len));
                        live.remove(&a);
                    }
                    6 => {
                        ord.completed.insert(stream, submitted[stream as usize]);
                    }
                    _ => {
                        let t = rnd(3) as u32;
                        ord.edges.push((StreamPoint { stream, seq: submitted[stream as usize] }, t));
                    }
                }
                assert_eq!(p.stats().used.current, live.values().map(|v| v.0).sum::<u64>());
                assert_eq!(src.bytes(), p.stats().reserved.current);
                p.assert_index(&live);
            }
        }
        assert!(fast > rounds / 2, "the fast path was taken {fast} times in {rounds} rounds of 8 modes");
    }
}
