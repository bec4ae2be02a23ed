//! The device allocator: every plain device allocation of one device's VA window, from request
//! to backed range, with exact accounting.
//!
//! It owns the VA decisions (via [`crate::va`]), the slab of small objects (via
//! [`crate::slab`]), the table of live blocks, and the per-component and per-policy counters.
//! It does not own physical memory: it asks a [`Backer`] to back and unback ranges — the driver
//! in the runtime, or a [`FrameBacker`] over [`crate::phys`] in firmware, tests and benchmarks.
//!
//! # How a request is placed
//!
//! - Small requests (at most [`SLAB_MAX_BYTES`], any plan but 1 GiB pages) take an object of a
//!   slab size class; a chunk is a 2 MiB VA range backed by one 2 MiB page (HUGE_ONLY) or by
//!   4 KiB pages (the normal-page plans). A chunk hands out its lowest free slot first, and a
//!   4 KiB-page chunk is backed 64 KiB at a time ([`crate::slab::SEGMENT_BYTES`]) as its objects
//!   reach a segment, and gives back the segments at its top that no object overlaps any more:
//!   a class with few objects holds one 64 KiB segment, not 2 MiB. A chunk goes back when its last object goes, unless it is
//!   kept as its class's spare (below).
//! - HUGE_FIRST: a 2 MiB-aligned range; every whole 2 MiB is backed by a 2 MiB page and the
//!   tail by 4 KiB pages, so physical use is the size rounded to 4 KiB, not to 2 MiB. When no
//!   2 MiB page is left, the whole range falls back to 4 KiB pages.
//! - HUGE_ONLY, 1 GiB: whole pages of that size, no fallback.
//! - NORMAL_ONLY: 4 KiB pages, backed from any free frames however fragmented.
//!
//! # Lookups and costs
//!
//! The window is cut into 2 MiB slots, and a table with one entry per slot names the slab chunk
//! or the block that owns the slot, so finding the allocation behind an address, and freeing it,
//! is O(1). 4 KiB-aligned (NORMAL_ONLY-page) blocks may share their first and last slots; such a
//! slot has a small table: the block covering its first byte from an earlier slot, and the block
//! starting in each of its 64 KiB granules (at most one, as such blocks are longer than 64 KiB),
//! so they are found in O(1) too, and recording a block costs O(its slots). A free looks at one
//! slot entry: a block owning the address's whole slot is named there, and a block shorter than
//! a slot (the common NORMAL_ONLY-page case) by its start record in that slot's table (the
//! granule of the address), with no walk of the table; only other addresses (interior or freed
//! ones, or a block of 2 MiB or more starting inside a slot) take the general lookup. Blocks and chunks live
//! in tables indexed by id with free-id lists; a chunk's slot storage is reused for the next chunk
//! of its class; the chunks of a class with free slots form an intrusive list, so a slab
//! allocation or free is O(1). A slab free reads its chunk's record and nothing of the kind
//! table (the record carries the kind's counter indices and the fields a free reports), and
//! looks at the chunk's top segments only for an object at or above the chunk's guard slot
//! ([`crate::slab::Chunk::shrink_guard`], kept with the bytes backed). In steady state (no table growing past its high-water mark)
//! allocation and free allocate nothing on the heap: shared-slot tables, ids and chunk storage are
//! recycled. The VA of a block or chunk comes from [`VaAllocator`]'s handle path, whose cache
//! hands the range of a freed block straight to the next request of the same VA length (see
//! [`crate::va`]). (Stream-ordered pool reservations, [`DeviceAllocator::reserve_range`] and the pages
//! backed in them, still use ordered maps; they take VA from a window of their own when one is
//! set, [`DeviceAllocator::set_pool_window`].)
//!
//! # Spare chunks
//!
//! With [`DeviceAllocator::set_keep_spare`] on, the last empty chunk of each slab class and kind
//! stays backed, so that an alloc/free loop of a lone small object costs no backing calls. A
//! spare chunk is memory in use by the allocator: it counts in `backed` (not in `live`), and the
//! backer's free memory (what `aclrtGetMemInfo` reports) does not include it until it is
//! released. Spares are released by [`DeviceAllocator::trim`], and automatically when an
//! allocation would otherwise fail for lack of memory or VA (the allocation is then retried
//! once). The option is off by default, so that freed memory shows as free at once.
//!
//! # Accounting
//!
//! `backed` counts the physical bytes backed, `live` the usable bytes handed out; each is kept
//! per component and per policy with current and peak values. The difference between backed and
//! live is the allocator's overhead (page rounding, slab slack, the kept spare chunks).
//! A [`FrameBacker`] turns on its frames' quick reuse ([`FrameAllocator::set_quick_reuse`]):
//! unbacked runs kept for the next range of the same size are free memory in its
//! [`FrameAllocator::info`], exactly; [`DeviceAllocator::trim`] gives them back to the buddy
//! lists (through [`Backer::trim`]).
//!
//! # Stream-ordered frees
//!
//! [`DeferredFrees`] (in `device/deferred.rs`) holds the frees of plain allocations that wait for
//! a point of a stream (`aclrtMemPoolFreeAsync` on `aclrtMalloc` memory): one FIFO per stream,
//! settled from its head, so no call scans every pending free.

use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;

use hal::{DeviceAddr, ErrorKind, MemAttr, PageSize, VaRange};

use crate::addr_map::AddrMap;
use crate::error::Error;
use crate::phys::{FrameAllocator, PhysRun};
use crate::policy::{PagePlan, PolicyClass, Request};
use crate::slab::{class_of, Chunk, SlotError, CHUNK_BYTES, CLASSES, SEGMENT_BYTES, SLAB_MAX_BYTES};
use crate::va::VaAllocator;

mod deferred;
pub use deferred::{DeferError, DeferredFrees};

/// Backs device VA with physical pages.
pub trait Backer {
    /// Backs `range` (aligned to `page`) with pages of `page`; all or nothing.
    ///
    /// # Errors
    ///
    /// A [`hal::Error`]; [`ErrorKind::OutOfMemory`] means "no such pages left" and lets the
    /// allocator fall back to smaller pages where the policy allows.
    fn back(&mut self, range: VaRange, page: PageSize, attrs: MemAttr) -> Result<(), hal::Error>;

    /// Releases exactly a range backed by one [`Self::back`].
    ///
    /// # Errors
    ///
    /// A [`hal::Error`] when `range` was not backed.
    fn unback(&mut self, range: VaRange) -> Result<(), hal::Error>;

    /// Gives back memory the backer keeps cached for reuse (none by default); called by
    /// [`DeviceAllocator::trim`].
    fn trim(&mut self) {}

    /// Backs `range` like [`Self::back`] and returns a token that [`Self::unback_token`] takes
    /// back with it, so that the backer can find its record of the range without a lookup by
    /// address. The caller keeps the token with its own record of the range (the device
    /// allocator keeps it in the block) and guarantees that `range` overlaps no range backed
    /// before (the device allocator backs only VA it has just allocated).
    ///
    /// By default this is [`Self::back`] and the token is [`NO_TOKEN`].
    ///
    /// # Errors
    ///
    /// Those of [`Self::back`].
    #[inline]
    fn back_token(&mut self, range: VaRange, page: PageSize, attrs: MemAttr) -> Result<u32, hal::Error> {
        self.back(range, page, attrs).map(|()| NO_TOKEN)
    }

    /// Releases exactly a range that [`Self::back_token`] backed and returned `token` for.
    /// By default this is [`Self::unback`].
    ///
    /// # Errors
    ///
    /// Those of [`Self::unback`].
    #[inline]
    fn unback_token(&mut self, range: VaRange, token: u32) -> Result<(), hal::Error> {
        let _ = token;
        self.unback(range)
    }

    /// Backs `huge` with 2 MiB pages and `tail`, which starts where `huge` ends and is shorter
    /// than 2 MiB, with 4 KiB pages, in one step, and returns one token for both: the pair is
    /// then one range to [`Self::unback_token`] (from `huge`'s start to `tail`'s end). The same
    /// guarantees as for [`Self::back_token`] hold.
    ///
    /// `Ok(None)`, with nothing backed, when the backer has no such step (the default) or
    /// cannot take the pages in one piece: the caller backs the two parts one by one then.
    ///
    /// # Errors
    ///
    /// Those of [`Self::back`]; nothing is backed then.
    #[inline]
    fn back_huge_with_tail(
        &mut self,
        huge: VaRange,
        tail: VaRange,
        attrs: MemAttr,
    ) -> Result<Option<u32>, hal::Error> {
        let _ = (huge, tail, attrs);
        Ok(None)
    }
}

/// The token of a range backed without one (see [`Backer::back_token`]).
pub const NO_TOKEN: u32 = u32::MAX;

impl<B: Backer + ?Sized> Backer for &mut B {
    fn back(&mut self, range: VaRange, page: PageSize, attrs: MemAttr) -> Result<(), hal::Error> {
        (**self).back(range, page, attrs)
    }

    fn unback(&mut self, range: VaRange) -> Result<(), hal::Error> {
        (**self).unback(range)
    }

    fn trim(&mut self) {
        (**self).trim();
    }

    #[inline]
    fn back_token(&mut self, range: VaRange, page: PageSize, attrs: MemAttr) -> Result<u32, hal::Error> {
        (**self).back_token(range, page, attrs)
    }

    #[inline]
    fn unback_token(&mut self, range: VaRange, token: u32) -> Result<(), hal::Error> {
        (**self).unback_token(range, token)
    }

    #[inline]
    fn back_huge_with_tail(
        &mut self,
        huge: VaRange,
        tail: VaRange,
        attrs: MemAttr,
    ) -> Result<Option<u32>, hal::Error> {
        (**self).back_huge_with_tail(huge, tail, attrs)
    }
}

/// Runs a [`FrameBacker`] keeps inline per range; more (fragmented frames) go to a side table.
const INLINE_RUNS: usize = 4;
/// No side-table entry.
const NO_SPILL: u32 = u32::MAX;

/// Ranges a fresh [`FrameBacker`] (and blocks a fresh [`DeviceAllocator`]) hold before their
/// tables first grow (about 200 KiB each): the first two thousand live allocations of a fresh
/// allocator move no table.
const PRESIZED_RANGES: usize = 2048;
/// Ranges of the exact-address index of a fresh [`FrameBacker`] (only ranges backed without a
/// token: slab chunks and segments, pool pages).
const PRESIZED_INDEX: usize = 512;

/// What one backed range holds.
#[derive(Clone, Copy, Debug)]
struct Backed {
    /// The range's start.
    start: u64,
    /// Its length; 0 for a record not in use.
    len: u64,
    /// Whether `ranges` indexes it (backed by [`Backer::back`], not by a token).
    indexed: bool,
    /// Whether it is 2 MiB pages and a 4 KiB-page tail in one run
    /// ([`Backer::back_huge_with_tail`]; `page` is then [`PageSize::Huge`]).
    joint: bool,
    page: PageSize,
    n: u8,
    runs: [PhysRun; INLINE_RUNS],
    spill: u32,
}

/// A [`Backer`] that takes frames from a [`FrameAllocator`] and maps nothing: the device side of
/// the bookkeeping, for firmware, tests and benchmarks.
///
/// Each backed range is found by its start in O(1) expected time (a hash index from start to
/// the range's record, in a table of records whose freed entries are reused), or, when it was
/// backed by [`Backer::back_token`], by its token (the record's index: no hash at all; an
/// [`Backer::unback`] of such a range without its token finds it by a walk of the records, a
/// cold path for tests and [`DeviceAllocator::detach`]); its physical runs
/// are kept inline in the record (up to four, which covers every range whose frames are not
/// fragmented), so backing and unbacking allocate nothing on the heap in steady state, and the
/// index moves only small entries when it closes a gap.
#[derive(Debug)]
pub struct FrameBacker {
    /// The frames.
    pub frames: FrameAllocator,
    /// Range start → index in `recs`.
    ranges: AddrMap<u32>,
    recs: Vec<Backed>,
    free_recs: Vec<u32>,
    spill: Vec<Vec<PhysRun>>,
    spill_free: Vec<u32>,
    /// Ranges backed by token (not in `ranges`).
    tokened: usize,
}

impl FrameBacker {
    /// Backs ranges from `frames`, with the frames' quick reuse on
    /// ([`FrameAllocator::set_quick_reuse`]: an unbacked range's frames are kept for the next
    /// range of the same length and page size; they count as free memory all along).
    pub fn new(mut frames: FrameAllocator) -> Self {
        frames.set_quick_reuse(true);
        Self {
            frames,
            ranges: AddrMap::with_capacity(PRESIZED_INDEX),
            recs: Vec::with_capacity(PRESIZED_RANGES),
            free_recs: Vec::with_capacity(PRESIZED_RANGES),
            spill: Vec::new(),
            spill_free: Vec::new(),
            tokened: 0,
        }
    }

    /// Number of ranges backed.
    pub fn backed_ranges(&self) -> usize {
        self.ranges.len() + self.tokened
    }

    /// Takes frames for `range` into a fresh record; its index.
    #[inline]
    fn take_frames(&mut self, range: VaRange, page: PageSize, indexed: bool) -> Result<u32, hal::Error> {
        if !range.start().is_aligned(page.bytes()) || range.len_bytes() % page.bytes() != 0 {
            return Err(hal::Error::new(ErrorKind::InvalidArgument, "range not aligned to its page size"));
        }
        let count = range.len_bytes() / page.bytes();
        let (start, len) = (range.start().as_u64(), range.len_bytes());
        let i = self.new_rec(start, len, indexed, false, page);
        let rec = &mut self.recs[i as usize];
        match self.frames.alloc_pages_into(page, count, &mut rec.runs) {
            // CAST: at most INLINE_RUNS.
            Ok(n) => rec.n = n as u8,
            // The count is valid, so this means more runs than fit inline (fragmented frames).
            Err(Error::InvalidArgument) => match self.frames.alloc_pages(page, count) {
                Ok(runs) => rec.spill = put_slot(&mut self.spill, &mut self.spill_free, runs),
                Err(e) => {
                    self.recs[i as usize].len = 0;
                    self.free_recs.push(i);
                    return Err(e.into());
                }
            },
            Err(e) => {
                rec.len = 0;
                self.free_recs.push(i);
                return Err(e.into());
            }
        }
        Ok(i)
    }

    /// A record for the range at `start` of `len` bytes with no run yet (`n` 0): a freed one
    /// reused in place where there is one. The runs are then written straight into its slot; a
    /// reused record's old runs need no clearing (only the first `n` are read).
    #[inline]
    fn new_rec(&mut self, start: u64, len: u64, indexed: bool, joint: bool, page: PageSize) -> u32 {
        match self.free_recs.pop() {
            Some(i) => {
                let rec = &mut self.recs[i as usize];
                (rec.start, rec.len, rec.indexed, rec.joint, rec.page, rec.n, rec.spill) =
                    (start, len, indexed, joint, page, 0, NO_SPILL);
                i
            }
            None => put_slot(
                &mut self.recs,
                &mut self.free_recs,
                Backed {
                    start,
                    len,
                    indexed,
                    joint,
                    page,
                    n: 0,
                    runs: [PhysRun::default(); INLINE_RUNS],
                    spill: NO_SPILL,
                },
            ),
        }
    }

    /// Gives back the frames of record `i` and the record (all or nothing).
    #[inline]
    fn drop_frames(&mut self, i: u32) -> Result<(), hal::Error> {
        let rec = &self.recs[i as usize];
        if rec.joint {
            self.frames.free_huge_with_tail(rec.runs[0])?;
        } else if rec.spill == NO_SPILL {
            self.frames.free_pages(rec.page, &rec.runs[..usize::from(rec.n)])?;
        } else {
            let k = rec.spill;
            let page = rec.page;
            let runs = core::mem::take(&mut self.spill[k as usize]);
            if let Err(e) = self.frames.free_pages(page, &runs) {
                self.spill[k as usize] = runs;
                return Err(e.into());
            }
            self.spill_free.push(k);
        }
        self.recs[i as usize].len = 0;
        self.free_recs.push(i);
        Ok(())
    }
}

impl Backer for FrameBacker {
    fn back(&mut self, range: VaRange, page: PageSize, _attrs: MemAttr) -> Result<(), hal::Error> {
        let i = self.take_frames(range, page, true)?;
        if !self.ranges.insert_new(range.start().as_u64(), i) {
            // Backed twice: give the frames back (the allocator returns to its exact state).
            let _ = self.drop_frames(i);
            return Err(hal::Error::new(ErrorKind::InvalidArgument, "range already backed"));
        }
        Ok(())
    }

    fn unback(&mut self, range: VaRange) -> Result<(), hal::Error> {
        let start = range.start().as_u64();
        let not_backed = || hal::Error::new(ErrorKind::InvalidHandle, "range was not backed");
        // One probe: the slot found here is the one removed below.
        let Some((at, i)) = self.ranges.find_slot(start) else {
            // A range backed by token, unbacked without it: look through the records.
            let found = self.recs.iter().position(|r| !r.indexed && r.len != 0 && r.start == start);
            // CAST: record indices fit in u32 (put_slot hands them out as u32).
            return match found {
                Some(i) => self.unback_token(range, i as u32),
                None => Err(not_backed()),
            };
        };
        if self.recs[i as usize].len != range.len_bytes() {
            return Err(not_backed());
        }
        self.drop_frames(i)?;
        self.ranges.remove_at(at);
        Ok(())
    }

    #[inline]
    fn back_token(&mut self, range: VaRange, page: PageSize, _attrs: MemAttr) -> Result<u32, hal::Error> {
        let i = self.take_frames(range, page, false)?;
        self.tokened += 1;
        Ok(i)
    }

    #[inline]
    fn unback_token(&mut self, range: VaRange, token: u32) -> Result<(), hal::Error> {
        match self.recs.get(token as usize) {
            Some(r) if !r.indexed && r.len != 0 && r.start == range.start().as_u64() => {
                if r.len != range.len_bytes() {
                    return Err(hal::Error::new(ErrorKind::InvalidHandle, "range was not backed"));
                }
            }
            // Not a token of this backer: the range may have been backed without one.
            _ => return self.unback(range),
        }
        self.drop_frames(token)?;
        self.tokened -= 1;
        Ok(())
    }

    fn trim(&mut self) {
        self.frames.flush_quick();
    }

    fn back_huge_with_tail(
        &mut self,
        huge: VaRange,
        tail: VaRange,
        _attrs: MemAttr,
    ) -> Result<Option<u32>, hal::Error> {
        let (h, n) = (PageSize::Huge.bytes(), PageSize::Normal.bytes());
        if !huge.start().is_aligned(h)
            || huge.len_bytes() % h != 0
            || tail.start().as_u64() != huge.end()
            || tail.len_bytes() % n != 0
            || tail.len_bytes() >= h
        {
            return Err(hal::Error::new(ErrorKind::InvalidArgument, "not 2 MiB pages and a 4 KiB-page tail"));
        }
        let Some(run) = self.frames.alloc_huge_with_tail(huge.len_bytes() / h, tail.len_bytes() / n)? else {
            return Ok(None);
        };
        let i = self.new_rec(
            huge.start().as_u64(),
            huge.len_bytes() + tail.len_bytes(),
            false,
            true,
            PageSize::Huge,
        );
        let rec = &mut self.recs[i as usize];
        rec.runs[0] = run;
        rec.n = 1;
        self.tokened += 1;
        Ok(Some(i))
    }
}

/// A current value and its peak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Current bytes.
    pub current: u64,
    /// Highest `current` seen.
    pub peak: u64,
}

impl Usage {
    #[inline]
    pub(crate) fn add(&mut self, bytes: u64) {
        self.current += bytes;
        self.peak = self.peak.max(self.current);
    }

    #[inline]
    pub(crate) fn sub(&mut self, bytes: u64) {
        self.current -= bytes;
    }
}

/// A component: who an allocation is charged to (CANN's module id; 33 is the application).
pub type Component = u16;

/// The application's component id.
pub const APP: Component = 33;

/// Counters of one device allocator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Physical bytes backed.
    pub backed: Usage,
    /// Usable bytes handed out.
    pub live: Usage,
    /// Usable bytes per component.
    pub components: Vec<(Component, Usage)>,
    /// Usable bytes per policy ([`PolicyClass::index`]).
    pub policies: [Usage; PolicyClass::COUNT],
}

impl Accounting {
    #[inline]
    fn component(&mut self, c: Component) -> &mut Usage {
        let i = match self.components.iter().position(|(k, _)| *k == c) {
            Some(i) => i,
            None => {
                self.components.push((c, Usage::default()));
                self.components.len() - 1
            }
        };
        &mut self.components[i].1
    }

    #[inline(always)]
    fn charge(&mut self, c: Component, class: PolicyClass, bytes: u64) {
        self.live.add(bytes);
        self.component(c).add(bytes);
        self.policies[class.index()].add(bytes);
    }

    #[inline(always)]
    fn refund(&mut self, c: Component, class: PolicyClass, bytes: u64) {
        self.live.sub(bytes);
        self.component(c).sub(bytes);
        self.policies[class.index()].sub(bytes);
    }

    /// Bytes backed but not handed out: rounding, slab slack and kept chunks.
    pub fn overhead(&self) -> u64 {
        self.backed.current - self.live.current
    }
}

/// A live direct block in one small record (the hot paths copy it): its VA range
/// `[base, base + va_len)`, what backs it — a first piece of `first_page` pages from `base`,
/// `first_len` bytes, then a 4 KiB-page tail of `tail_len` bytes (0: none) — and who it is
/// charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    base: u64,
    va_len: u64,
    usable: u64,
    first_len: u64,
    tail_len: u64,
    /// The backer's tokens of the first piece and of the tail ([`Backer::back_token`]); with
    /// `joint`, `tokens[0]` is the token of the two as one range.
    tokens: [u32; 2],
    /// The VA allocator's handle of the VA range.
    va_node: u32,
    attrs: MemAttr,
    component: Component,
    class: PolicyClass,
    first_page: PageSize,
    /// Whether the first piece and the tail were backed in one step
    /// ([`Backer::back_huge_with_tail`]).
    joint: bool,
}

/// `[start, start + len)`, a range the allocator made valid before (a block's VA or a piece
/// inside it).
#[inline(always)]
fn known_range(start: u64, len: u64) -> VaRange {
    match VaRange::try_new(DeviceAddr(start), len) {
        Ok(r) => r,
        // INVARIANT: every range rebuilt here was a valid VaRange when the block was made.
        Err(_) => unreachable!("a recorded range is valid"),
    }
}

impl Block {
    #[inline(always)]
    fn base(&self) -> u64 {
        self.base
    }

    #[inline(always)]
    fn va(&self) -> VaRange {
        known_range(self.base, self.va_len)
    }

    #[inline(always)]
    fn backed_bytes(&self) -> u64 {
        self.first_len + self.tail_len
    }

    #[inline(always)]
    fn first(&self) -> VaRange {
        known_range(self.base, self.first_len)
    }

    #[inline(always)]
    fn tail(&self) -> Option<VaRange> {
        (self.tail_len > 0).then(|| known_range(self.base + self.first_len, self.tail_len))
    }

    /// The first piece and the tail as one range (what a joint backing covers).
    #[inline(always)]
    fn joint_range(&self) -> VaRange {
        known_range(self.base, self.backed_bytes())
    }
}

/// How a direct block was backed (see [`Block`]).
#[derive(Clone, Copy, Debug)]
struct Backing {
    first_len: u64,
    first_page: PageSize,
    tail_len: u64,
    tokens: [u32; 2],
    joint: bool,
}

/// Slab objects also carry who they are charged to; kept per chunk slot would cost memory, so
/// the charge is recorded per chunk kind: every object of a chunk has the same component and
/// policy (they are part of the chunk's kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlabKind {
    page: PageSize,
    attrs: MemAttr,
    component: Component,
    class: PolicyClass,
}

/// What the slab fast paths need of a kind, in one small record: its [`kind_key`], the index
/// of its component in [`Accounting::components`] (`NIL` until its first object is charged:
/// entries there are only ever appended, so an index stays valid), its policy's index, and
/// the kind's fields that a free reports.
#[derive(Clone, Copy, Debug)]
struct KindFast {
    key: u64,
    /// Its own index in the table.
    index: u16,
    comp: u32,
    policy: u8,
    page: PageSize,
    attrs: MemAttr,
    component: Component,
}

/// A [`SlabKind`] packed into one word, so that finding a request's kind compares words:
/// distinct kinds have distinct keys (the page bit, the 32 attribute bits, the 16 component
/// bits and nine bits of policy, with [`PolicyClass::Default`] as 256).
#[inline(always)]
fn kind_key(page: PageSize, attrs: MemAttr, component: Component, class: PolicyClass) -> u64 {
    let policy = match class {
        PolicyClass::Base(b) => u64::from(b),
        PolicyClass::Default => 256,
    };
    u64::from(page == PageSize::Huge)
        | u64::from(attrs.bits()) << 1
        | u64::from(component) << 33
        | policy << 49
}

/// No chunk.
const NIL: u32 = u32::MAX;

/// A live chunk and its links in its class's list of chunks with free slots.
///
/// It also carries what a free needs of its kind (the counters' indices and the fields a free
/// reports), so that the slab fast path of a free reads the chunk's record and nothing of the
/// kind table.
#[derive(Debug)]
struct ChunkRec {
    chunk: Chunk,
    /// Bytes backed from the chunk's start: a multiple of [`SEGMENT_BYTES`], or the whole chunk
    /// for 2 MiB-page kinds. Changed only through [`Self::set_backed`].
    backed: u64,
    /// The lowest slot whose free may let the top segments go with `backed` as it is
    /// ([`Chunk::shrink_guard`]; `u32::MAX` for a 2 MiB-page chunk): a free below it needs no
    /// look at the segments.
    guard: u32,
    /// The kind's entry in [`Accounting::components`] (`NIL` until the kind's first charge) and
    /// its policy's index, as in [`KindFast`].
    comp: u32,
    policy: u8,
    page: PageSize,
    attrs: MemAttr,
    component: Component,
    kind: u16,
    prev: u32,
    next: u32,
    listed: bool,
    /// The VA allocator's handle of the chunk's range.
    va_node: u32,
}

impl ChunkRec {
    /// Sets the bytes backed and the guard slot that follows from them.
    #[inline]
    fn set_backed(&mut self, backed: u64) {
        self.backed = backed;
        self.guard = if self.page == PageSize::Normal { self.chunk.shrink_guard(backed) } else { u32::MAX };
    }
}

#[derive(Clone, Copy, Debug)]
struct ClassHeads {
    /// First chunk of this class with a free slot (an intrusive list through the records).
    partial: u32,
    /// One empty chunk kept to absorb alloc/free loops.
    spare: Option<u32>,
}

impl Default for ClassHeads {
    fn default() -> Self {
        Self { partial: NIL, spare: None }
    }
}

/// Facts about a live allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// Its first address.
    pub base: DeviceAddr,
    /// Bytes the caller may use.
    pub usable_bytes: u64,
    /// The size of the pages backing it (of its first piece).
    pub page_size: PageSize,
    /// Its attributes.
    pub attrs: MemAttr,
    /// Who it is charged to.
    pub component: Component,
    /// Whether it is a slab object.
    pub is_slab: bool,
}

/// One backed range of a device allocator, as a memory snapshot shows it: a direct block or a
/// slab chunk (pool reservations are walked through their [`crate::pool::Pool`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Its first address.
    pub base: DeviceAddr,
    /// Its VA length.
    pub len_bytes: u64,
    /// Physical bytes backing it.
    pub backed_bytes: u64,
    /// The size of the pages backing it (of its first piece).
    pub page_size: PageSize,
    /// Who it is charged to.
    pub component: Component,
    /// Whether it is a slab chunk (its objects are the blocks), else one direct block.
    pub is_slab: bool,
    /// The live allocations in it: (base, usable bytes), in address order.
    pub blocks: Vec<(u64, u64)>,
}

/// Why an address is not a live allocation base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotLive {
    /// It was freed recently (a double free).
    Freed,
    /// It points inside a live allocation that starts elsewhere.
    Interior {
        /// The allocation's base.
        base: DeviceAddr,
    },
    /// It names nothing this allocator knows.
    Unknown,
}

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The VA window has no room.
    OutOfVa,
    /// The backer refused (out of pages of every size the policy allows, or another error).
    Backing(hal::Error),
}

const RECENT_FREES: usize = 64;
/// A slot entry naming a slab chunk (with its id in the low bits).
const SLAB_FLAG: u32 = 1 << 31;
/// A slot entry naming a direct block (with its id in the low bits).
const BLOCK_FLAG: u32 = 1 << 30;
/// A slot entry naming the shared-slot table ([`Fine`]) of a slot that 4 KiB-aligned blocks share.
const FINE_FLAG: u32 = 1 << 29;
/// The id bits of a slot entry.
const ID_MASK: u32 = FINE_FLAG - 1;
/// Bytes of one granule of a shared slot.
const GRANULE_BYTES: u64 = 64 << 10;
/// Granules in a slot.
const GRANULES: usize = (CHUNK_BYTES / GRANULE_BYTES) as usize;

/// The blocks that share one 2 MiB slot: the one that starts in an earlier slot and covers this
/// slot's first byte (`head`), and the one starting in each 64 KiB granule (`starts`, with bit
/// `i` of `mask` set when granule `i` has one).
///
/// Only blocks longer than 64 KiB are recorded here (smaller requests are slab objects), so at
/// most one block starts in a granule. The block containing an address is the one with the
/// greatest start at or below it, if it reaches the address: the highest start in the granules
/// up to the address's (one or two looks through `mask`), else `head`. Recording or removing a
/// block is O(1) whatever its length.
#[derive(Clone, Copy, Debug)]
struct Fine {
    /// Block id + 1 of the block covering the slot's first byte from an earlier slot (0 = none).
    head: u32,
    /// Bit `i`: a block starts in granule `i`.
    mask: u32,
    /// The block id starting in each granule (meaningful where `mask` has the bit).
    starts: [u32; GRANULES],
}

const _: () = assert!(GRANULES <= 32, "a granule mask is one u32");

/// Where a block's start record is in a shared-slot table: (slot, table, granule).
type StartAt = (usize, u32, usize);

/// Where a live allocation's record is.
#[derive(Clone, Copy, Debug)]
enum Loc {
    Chunk(u32),
    Block(u32),
}

/// The allocator of one device's VA window.
///
/// # Invariants
///
/// - Every live direct block is `Some` in `blocks`; its pieces are backed and its VA range is
///   allocated in `va`. Every slot it covers entirely holds its id with `BLOCK_FLAG`; a slot it
///   covers only in part (a 4 KiB-aligned block's first and last slots) holds a shared-slot
///   table (`FINE_FLAG`) that names it: in `starts` (with its `mask` bit) for the slot it
///   starts in, as `head` + 1 for a later slot whose first byte it covers.
/// - Every chunk in `chunks` is backed and allocated in `va`, and its slot in `slots` holds its
///   id with `SLAB_FLAG`; the chunks with a free slot that are not a spare are exactly those
///   on their class's `partial` list (`listed`; the list is linked through `next`, and through
///   `prev` for every chunk but the head).
/// - No other slot entry is non-zero.
/// - `acct.backed.current` is the sum of the backed bytes of all blocks and chunks;
///   `acct.live.current` the sum of the usable bytes of all blocks and slab objects;
///   `live_blocks` and `live_objects` count them, `spares` counts the spare chunks.
#[derive(Debug)]
pub struct DeviceAllocator {
    va: VaAllocator,
    window: VaRange,
    blocks: Vec<Option<Block>>,
    free_block_ids: Vec<u32>,
    fine: Vec<Fine>,
    free_fine: Vec<u32>,
    chunks: Vec<Option<ChunkRec>>,
    free_chunk_ids: Vec<u32>,
    /// One chunk's slot storage per class, kept from a released chunk for the next one.
    chunk_cache: Vec<Option<Chunk>>,
    kinds: Vec<SlabKind>,
    /// Entry `k` is what the fast paths need of `kinds[k]`.
    kind_fast: Vec<KindFast>,
    heads: Vec<[ClassHeads; CLASSES]>,
    slots: Vec<u32>,
    acct: Accounting,
    live_blocks: usize,
    live_objects: usize,
    spares: usize,
    recent: [u64; RECENT_FREES],
    recent_next: usize,
    keep_spare: bool,
    /// VA reserved for stream-ordered pools: base -> (length, component), and the pages backed
    /// inside reservations.
    reservations: BTreeMap<u64, (u64, Component)>,
    reserved_pages: BTreeMap<u64, Component>,
    /// The VA of [`Self::reserve_range`] when it is not `va`'s window (the pool window).
    pool_va: Option<VaAllocator>,
}

impl DeviceAllocator {
    /// An empty allocator over `window` (whose start and length are multiples of 2 MiB).
    pub fn new(window: VaRange) -> Self {
        // CAST: a window of at most 2 TiB has at most 2^20 chunk slots.
        let nslots = (window.len_bytes() / CHUNK_BYTES) as usize;
        Self {
            // Each live block and the free gap beside it.
            va: VaAllocator::with_capacity(window, 2 * PRESIZED_RANGES),
            window,
            blocks: Vec::with_capacity(PRESIZED_RANGES),
            free_block_ids: Vec::with_capacity(PRESIZED_RANGES),
            fine: Vec::new(),
            free_fine: Vec::new(),
            chunks: Vec::new(),
            free_chunk_ids: Vec::new(),
            chunk_cache: (0..CLASSES).map(|_| None).collect(),
            kinds: Vec::new(),
            kind_fast: Vec::new(),
            heads: Vec::new(),
            slots: vec![0; nslots],
            acct: Accounting::default(),
            live_blocks: 0,
            live_objects: 0,
            spares: 0,
            recent: [0; RECENT_FREES],
            recent_next: 0,
            keep_spare: false,
            reservations: BTreeMap::new(),
            reserved_pages: BTreeMap::new(),
            pool_va: None,
        }
    }

    /// Makes [`Self::reserve_range`] take VA from `window` (whose start and length are
    /// multiples of 2 MiB, outside the allocator's window) instead of the allocator's own
    /// window. Refused (`false`, nothing changes) while a reservation is live or when `window`
    /// overlaps the allocator's window.
    pub fn set_pool_window(&mut self, window: VaRange) -> bool {
        let overlaps =
            window.start().as_u64() < self.window.end() && self.window.start().as_u64() < window.end();
        if !self.reservations.is_empty() || overlaps {
            return false;
        }
        self.pool_va = Some(VaAllocator::new(window));
        true
    }

    /// Whether to keep one empty chunk per slab class instead of giving it back at once (see
    /// the module docs: spares count as backed memory until released).
    ///
    /// Off by default, so that freed memory shows up as free immediately; on, an alloc/free loop
    /// of a lone small object costs no backing calls. Turning it off does not release the
    /// spares already kept; [`Self::trim`] does.
    pub fn set_keep_spare(&mut self, keep: bool) {
        self.keep_spare = keep;
    }

    /// The counters.
    pub fn accounting(&self) -> &Accounting {
        &self.acct
    }

    /// Number of live allocations (blocks and slab objects).
    pub fn live_count(&self) -> usize {
        self.live_blocks + self.live_objects
    }

    /// Length of the largest free VA range of the window: no single allocation larger than
    /// this can be placed, however much memory is free.
    pub fn largest_free_va(&self) -> u64 {
        self.va.largest_free()
    }

    /// Every direct block and slab chunk holding objects, in address order (for memory snapshots; it builds a
    /// list, so it is not for hot paths).
    pub fn segments(&self) -> Vec<Segment> {
        let mut out: Vec<Segment> = self
            .blocks
            .iter()
            .flatten()
            .map(|b| Segment {
                base: DeviceAddr(b.base()),
                len_bytes: b.va_len,
                backed_bytes: b.backed_bytes(),
                page_size: b.first_page,
                component: b.component,
                is_slab: false,
                blocks: vec![(b.base(), b.usable)],
            })
            .collect();
        // A spare chunk (no live object) is memory kept for reuse, not a segment.
        for rec in self.chunks.iter().flatten().filter(|rec| rec.chunk.used() > 0) {
            let kind = self.kinds[rec.kind as usize];
            let mut blocks = Vec::new();
            rec.chunk.for_each_live(|a, u| blocks.push((a, u)));
            out.push(Segment {
                base: DeviceAddr(rec.chunk.base),
                len_bytes: CHUNK_BYTES,
                backed_bytes: rec.backed,
                page_size: kind.page,
                component: kind.component,
                is_slab: true,
                blocks,
            });
        }
        out.sort_by_key(|s| s.base.as_u64());
        out
    }

    /// Number of spare chunks kept.
    pub fn spare_chunks(&self) -> usize {
        self.spares
    }

    #[inline]
    fn slot_index(&self, addr: u64) -> Option<usize> {
        let off = addr.checked_sub(self.window.start().as_u64())?;
        // CAST: bounded by the slot count below.
        let i = (off / CHUNK_BYTES) as usize;
        (i < self.slots.len()).then_some(i)
    }

    /// The record that owns the slot of `addr`, or the NORMAL_ONLY block that may contain it.
    #[inline]
    fn locate(&self, addr: u64) -> Option<Loc> {
        let e = self.slots[self.slot_index(addr)?];
        if e & SLAB_FLAG != 0 {
            return Some(Loc::Chunk(e & !SLAB_FLAG));
        }
        if e & BLOCK_FLAG != 0 {
            return Some(Loc::Block(e & ID_MASK));
        }
        if e & FINE_FLAG == 0 {
            return None;
        }
        let g = self.fine.get((e & ID_MASK) as usize)?;
        // CAST: below GRANULES (32).
        let i = ((addr % CHUNK_BYTES) / GRANULE_BYTES) as u32;
        let contains = |id: u32| {
            let b = self.blocks.get(id as usize)?.as_ref()?;
            b.va().contains(DeviceAddr(addr)).then_some(Loc::Block(id))
        };
        // The starts in granules 0..=i; only granule i's may lie above `addr`.
        let mut m = g.mask & (u32::MAX >> (31 - i));
        while m != 0 {
            let j = 31 - m.leading_zeros();
            let id = g.starts[j as usize];
            let start = self.blocks.get(id as usize)?.as_ref()?.base();
            if start <= addr {
                return contains(id);
            }
            m &= !(1 << j);
        }
        g.head.checked_sub(1).and_then(contains)
    }

    /// Records block `id` over `va` in the slot table (and shared-slot tables), or with `add` false
    /// takes it out. The slots it covers whole are filled in one pass; only its first and last
    /// slots may be covered in part.
    #[inline]
    fn record_block(&mut self, va: VaRange, id: u32, add: bool) {
        let (Some(first), Some(last)) = (self.slot_index(va.start().as_u64()), self.slot_index(va.end() - 1))
        else {
            return;
        };
        let base = self.window.start().as_u64();
        // CAST: slot indices fit in u64.
        let slot_start = |s: usize| base + s as u64 * CHUNK_BYTES;
        let (start, end) = (va.start().as_u64(), va.end());
        let (mut lo_full, mut hi_full) = (first, last + 1);
        if start != slot_start(first) || end < slot_start(first) + CHUNK_BYTES {
            // The block starts in this slot.
            self.record_partial(first, Some(start), id, add);
            lo_full = first + 1;
        }
        if last >= lo_full && end != slot_start(last) + CHUNK_BYTES {
            // The block covers this slot's first byte and ends inside it.
            self.record_partial(last, None, id, add);
            hi_full = last;
        }
        let v = if add { id | BLOCK_FLAG } else { 0 };
        if let Some(full) = self.slots.get_mut(lo_full..hi_full) {
            for e in full {
                *e = v;
            }
        }
    }

    /// [`Self::record_block`] of a new block shorter than a slot (the common NORMAL_ONLY-page
    /// case), `false` (nothing done) for any other: such a block has its start in its first
    /// slot's shared-slot table and, when it reaches into the next slot, is that slot's head.
    #[inline(always)]
    fn record_short(&mut self, va: VaRange, id: u32) -> bool {
        let off = va.start().as_u64().wrapping_sub(self.window.start().as_u64());
        let in_slot = off % CHUNK_BYTES;
        // CAST: an address below the window wraps to an index past the table.
        let s = (off / CHUNK_BYTES) as usize;
        let len = va.len_bytes();
        let crosses = in_slot + len > CHUNK_BYTES;
        if len >= CHUNK_BYTES || s + usize::from(crosses) >= self.slots.len() {
            return false;
        }
        self.record_start(s, in_slot, id);
        if crosses {
            self.record_partial(s + 1, None, id, true);
        }
        true
    }

    /// Records block `id` as the block starting at offset `in_slot` of slot `s` (what
    /// [`Self::record_partial`] does for a start, without its other cases).
    #[inline(always)]
    fn record_start(&mut self, s: usize, in_slot: u64, id: u32) {
        let e = self.slots[s];
        let f = if e & FINE_FLAG != 0 {
            e & ID_MASK
        } else {
            let f = self.fine_table();
            self.slots[s] = f | FINE_FLAG;
            f
        };
        // CAST: below GRANULES (32).
        let i = (in_slot / GRANULE_BYTES) as usize;
        let g = &mut self.fine[f as usize];
        debug_assert!(g.mask & (1 << i) == 0, "one block starts in a granule at most");
        g.mask |= 1 << i;
        g.starts[i] = id;
    }

    /// An empty shared-slot table (reused where one is free).
    #[inline]
    fn fine_table(&mut self) -> u32 {
        match self.free_fine.pop() {
            // A reused table: only `head` and `mask` say anything (a start is read only where
            // `mask` has its bit), so the stale `starts` need no clearing.
            Some(f) => {
                let g = &mut self.fine[f as usize];
                g.head = 0;
                g.mask = 0;
                f
            }
            None => put_slot(
                &mut self.fine,
                &mut self.free_fine,
                Fine { head: 0, mask: 0, starts: [0; GRANULES] },
            ),
        }
    }

    /// Records (or with `add` false takes out) block `id` in the shared-slot table of slot `s`:
    /// as the block starting at `start` inside the slot, or (`None`) as the slot's head, the
    /// block from an earlier slot that covers its first byte. O(1).
    #[inline]
    fn record_partial(&mut self, s: usize, start: Option<u64>, id: u32, add: bool) {
        let e = self.slots[s];
        let f = if e & FINE_FLAG != 0 {
            e & ID_MASK
        } else if add {
            let f = self.fine_table();
            self.slots[s] = f | FINE_FLAG;
            f
        } else {
            return;
        };
        let g = &mut self.fine[f as usize];
        match (start, add) {
            (Some(a), true) => {
                // CAST: below GRANULES (32).
                let i = ((a % CHUNK_BYTES) / GRANULE_BYTES) as usize;
                debug_assert!(g.mask & (1 << i) == 0, "one block starts in a granule at most");
                g.mask |= 1 << i;
                g.starts[i] = id;
            }
            (Some(a), false) => {
                // CAST: below GRANULES (32).
                let i = ((a % CHUNK_BYTES) / GRANULE_BYTES) as usize;
                if g.mask & (1 << i) != 0 && g.starts[i] == id {
                    g.mask &= !(1 << i);
                }
            }
            (None, true) => {
                debug_assert!(g.head == 0, "one block covers a slot's first byte");
                g.head = id + 1;
            }
            (None, false) => {
                if g.head == id + 1 {
                    g.head = 0;
                }
            }
        }
        if g.mask == 0 && g.head == 0 {
            self.slots[s] = 0;
            self.free_fine.push(f);
        }
    }

    /// Allocates `req`, charged to `component`.
    ///
    /// When it would fail for lack of memory or VA while spare chunks are kept, the spares are
    /// released and the allocation is tried once more.
    ///
    /// # Errors
    ///
    /// [`AllocError::OutOfVa`] or [`AllocError::Backing`]; nothing changes then (apart from
    /// memory kept for reuse being released, as [`Self::trim`] does).
    #[inline]
    pub fn allocate<B: Backer>(
        &mut self,
        backer: &mut B,
        req: &Request,
        component: Component,
    ) -> Result<DeviceAddr, AllocError> {
        if let Some(addr) = self.alloc_slab_fast(req, component) {
            return Ok(addr);
        }
        match self.allocate_once(backer, req, component) {
            Err(e) if is_pressure(&e) => self.allocate_again(backer, req, component, e),
            r => r,
        }
    }

    /// [`Self::allocate`] after a first attempt failed with `e` for lack of memory or VA:
    /// memory kept for reuse (spare chunks, empty top segments) goes, and the allocation is
    /// tried once more.
    #[cold]
    #[inline(never)]
    fn allocate_again<B: Backer>(
        &mut self,
        backer: &mut B,
        req: &Request,
        component: Component,
        e: AllocError,
    ) -> Result<DeviceAddr, AllocError> {
        if self.trim(backer) > 0 {
            self.allocate_once(backer, req, component)
        } else {
            Err(e)
        }
    }

    #[inline]
    fn allocate_once<B: Backer>(
        &mut self,
        backer: &mut B,
        req: &Request,
        component: Component,
    ) -> Result<DeviceAddr, AllocError> {
        if req.usable_bytes <= SLAB_MAX_BYTES && req.plan != PagePlan::Giant {
            let page = if req.plan == PagePlan::HugeOnly { PageSize::Huge } else { PageSize::Normal };
            let kind = SlabKind { page, attrs: req.attrs, component, class: req.class };
            return self.alloc_slab(backer, kind, req.usable_bytes);
        }
        self.alloc_direct(backer, req, component)
    }

    fn alloc_slab<B: Backer>(
        &mut self,
        backer: &mut B,
        kind: SlabKind,
        usable: u64,
    ) -> Result<DeviceAddr, AllocError> {
        let class = class_of(usable)
            .ok_or(AllocError::Backing(hal::Error::new(ErrorKind::InvalidArgument, "size")))?;
        let k = self.kind_index(kind);
        let head = self.heads[k][class];
        let id = if head.partial != NIL {
            head.partial
        } else if let Some(id) = head.spare {
            self.heads[k][class].spare = None;
            self.spares -= 1;
            self.list_push(k, class, id);
            id
        } else {
            self.new_chunk(backer, k, class)?
        };
        let Some(rec) = self.chunks[id as usize].as_mut() else {
            return Err(AllocError::Backing(hal::Error::new(ErrorKind::Internal, "chunk vanished")));
        };
        // The slot may lie past the segments backed so far: back the next ones.
        if let Some(end) = rec.chunk.next_end() {
            while rec.backed < end {
                let seg_end = rec.backed + SEGMENT_BYTES;
                let seg = VaRange::try_new(DeviceAddr(rec.chunk.base + rec.backed), seg_end - rec.backed)
                    .map_err(AllocError::Backing)?;
                backer.back(seg, kind.page, kind.attrs).map_err(AllocError::Backing)?;
                self.acct.backed.add(seg.len_bytes());
                rec.set_backed(seg_end);
            }
        }
        // CAST: usable <= 64 KiB.
        let Some(addr) = rec.chunk.alloc(usable as u32) else {
            return Err(AllocError::Backing(hal::Error::new(ErrorKind::Internal, "chunk full")));
        };
        if rec.chunk.is_full() {
            self.list_unlink(k, class, id);
        }
        self.live_objects += 1;
        self.acct.charge(kind.component, kind.class, usable);
        if self.kind_fast[k].comp == NIL {
            // The charge made sure the component has its entry.
            let comp = self.acct.components.iter().position(|(c, _)| *c == kind.component);
            // CAST: a handful of components.
            self.kind_fast[k].comp = comp.map_or(NIL, |i| i as u32);
        }
        // A chunk made before the kind's first charge learns its component's entry here.
        if let Some(rec) = self.chunks[id as usize].as_mut() {
            rec.comp = self.kind_fast[k].comp;
        }
        Ok(DeviceAddr(addr))
    }

    /// Puts chunk `id` at the head of its class's list of chunks with free slots.
    ///
    /// The list's head has no meaningful `prev` (a listed chunk is the head exactly when the
    /// class's `partial` names it), so that taking the head off, what an allocation filling it
    /// does, touches no other chunk.
    #[inline]
    fn list_push(&mut self, k: usize, class: usize, id: u32) {
        let head = self.heads[k][class].partial;
        if let Some(rec) = self.chunks[id as usize].as_mut() {
            rec.next = head;
            rec.listed = true;
        }
        if head != NIL {
            if let Some(h) = self.chunks[head as usize].as_mut() {
                h.prev = id;
            }
        }
        self.heads[k][class].partial = id;
    }

    /// Takes chunk `id` off its class's list (when it is on it).
    #[inline]
    fn list_unlink(&mut self, k: usize, class: usize, id: u32) {
        let Some(rec) = self.chunks[id as usize].as_mut() else { return };
        if !rec.listed {
            return;
        }
        let (prev, next) = (rec.prev, rec.next);
        rec.listed = false;
        rec.prev = NIL;
        rec.next = NIL;
        if self.heads[k][class].partial == id {
            // The head: the next chunk becomes it (its `prev` is then not read).
            self.heads[k][class].partial = next;
        } else if let Some(p) = self.chunks[prev as usize].as_mut() {
            p.next = next;
        }
        if next != NIL {
            if let Some(n) = self.chunks[next as usize].as_mut() {
                n.prev = prev;
            }
        }
    }

    /// The index of `kind` in the kind table, added when new (there are a handful at most).
    #[inline]
    fn kind_index(&mut self, kind: SlabKind) -> usize {
        match self.kinds.iter().position(|k| *k == kind) {
            Some(i) => i,
            None => {
                self.kinds.push(kind);
                let key = kind_key(kind.page, kind.attrs, kind.component, kind.class);
                // CAST: policy indices are below PolicyClass::COUNT.
                self.kind_fast.push(KindFast {
                    key,
                    // CAST: a handful of kinds.
                    index: self.kinds.len() as u16 - 1,
                    comp: NIL,
                    policy: kind.class.index() as u8,
                    page: kind.page,
                    attrs: kind.attrs,
                    component: kind.component,
                });
                self.heads.push([ClassHeads::default(); CLASSES]);
                self.kinds.len() - 1
            }
        }
    }

    fn new_chunk<B: Backer>(&mut self, backer: &mut B, k: usize, class: usize) -> Result<u32, AllocError> {
        let kind = self.kinds[k];
        let (range, va_node) =
            self.va.alloc_handle(CHUNK_BYTES, CHUNK_BYTES).map_err(|_| AllocError::OutOfVa)?;
        let base = range.start().as_u64();
        // A 2 MiB page backs the whole chunk; 4 KiB pages back its first segment for now.
        let backed = if kind.page == PageSize::Normal { SEGMENT_BYTES } else { CHUNK_BYTES };
        let first = VaRange::try_new(range.start(), backed).map_err(AllocError::Backing)?;
        if let Err(e) = backer.back(first, kind.page, kind.attrs) {
            let _ = self.va.free_handle(range, va_node);
            return Err(AllocError::Backing(e));
        }
        let chunk = match self.chunk_cache[class].take() {
            Some(mut c) => {
                c.reset(base, kind.page as u8);
                c
            }
            None => Chunk::new(base, class, kind.page as u8),
        };
        let fast = self.kind_fast[k];
        let mut rec = ChunkRec {
            chunk,
            backed: 0,
            guard: u32::MAX,
            comp: fast.comp,
            policy: fast.policy,
            page: fast.page,
            attrs: fast.attrs,
            component: fast.component,
            // CAST: a handful of kinds.
            kind: k as u16,
            prev: NIL,
            next: NIL,
            listed: false,
            va_node,
        };
        rec.set_backed(backed);
        let id = put_slot(&mut self.chunks, &mut self.free_chunk_ids, Some(rec));
        if let Some(i) = self.slot_index(base) {
            // INVARIANT: the chunk owns its whole 2 MiB slot.
            self.slots[i] = id | SLAB_FLAG;
        }
        self.acct.backed.add(backed);
        self.list_push(k, class, id);
        Ok(id)
    }

    #[inline]
    fn alloc_direct<B: Backer>(
        &mut self,
        backer: &mut B,
        req: &Request,
        component: Component,
    ) -> Result<DeviceAddr, AllocError> {
        let va_page = match req.plan {
            PagePlan::HugeFirst | PagePlan::HugeOnly => PageSize::Huge,
            PagePlan::NormalOnly => PageSize::Normal,
            PagePlan::Giant => PageSize::Giant,
        };
        let va_len = va_page.round_up(req.usable_bytes).ok_or(AllocError::OutOfVa)?;
        let (va, va_node) = self.va.alloc_handle(va_len, va_page.bytes()).map_err(|_| AllocError::OutOfVa)?;
        let base = va.start().as_u64();
        let backing = match Self::back_direct(backer, req, base) {
            Ok(b) => b,
            Err(e) => {
                let _ = self.va.free_handle(va, va_node);
                return Err(AllocError::Backing(e));
            }
        };
        self.acct.backed.add(backing.first_len + backing.tail_len);
        self.acct.charge(component, req.class, req.usable_bytes);
        let block = Block {
            base,
            va_len,
            usable: req.usable_bytes,
            first_len: backing.first_len,
            tail_len: backing.tail_len,
            tokens: backing.tokens,
            va_node,
            attrs: req.attrs,
            component,
            class: req.class,
            first_page: backing.first_page,
            joint: backing.joint,
        };
        // INVARIANT: backed and VA-allocated above; recorded where `locate` looks.
        let id = put_slot(&mut self.blocks, &mut self.free_block_ids, Some(block));
        if !self.record_short(va, id) {
            self.record_block(va, id, true);
        }
        self.live_blocks += 1;
        Ok(DeviceAddr(base))
    }

    /// Backs the direct block of `req` at `base` (whose VA, rounded to the plan's VA page, is
    /// taken): HUGE_FIRST as 2 MiB pages for every whole 2 MiB and 4 KiB pages for the tail
    /// (in one step where the backer has one), or all 4 KiB pages when no 2 MiB page is left;
    /// the other plans as pages of their one size. All or nothing.
    #[inline]
    fn back_direct<B: Backer>(backer: &mut B, req: &Request, base: u64) -> Result<Backing, hal::Error> {
        let one = |first_len: u64, first_page: PageSize, token: u32| Backing {
            first_len,
            first_page,
            tail_len: 0,
            tokens: [token, NO_TOKEN],
            joint: false,
        };
        // Every range below lies inside the VA just taken (of at least `first_page.round_up`
        // of the usable bytes), so it is valid.
        let huge = PageSize::Huge.bytes();
        let normal_len = PageSize::Normal.round_up(req.usable_bytes).ok_or(size_overflow())?;
        match req.plan {
            PagePlan::HugeFirst => {
                let mut whole = req.usable_bytes / huge * huge;
                // A tail that needs a whole 2 MiB of 4 KiB pages anyway takes a 2 MiB page.
                if normal_len - whole == huge {
                    whole = normal_len;
                }
                let tail_len = normal_len - whole;
                if whole == 0 {
                    // No whole 2 MiB (a request between 64 KiB and 2 MiB): 4 KiB pages.
                    let t = backer.back_token(known_range(base, normal_len), PageSize::Normal, req.attrs)?;
                    return Ok(one(normal_len, PageSize::Normal, t));
                }
                let (r, t) =
                    (known_range(base, whole), (tail_len > 0).then(|| known_range(base + whole, tail_len)));
                if let Some(t) = t {
                    // 2 MiB pages and the tail in one step where the backer has one (and finds
                    // the frames in one piece); otherwise, or on any error, one by one below.
                    if let Ok(Some(token)) = backer.back_huge_with_tail(r, t, req.attrs) {
                        return Ok(Backing {
                            first_len: whole,
                            first_page: PageSize::Huge,
                            tail_len,
                            tokens: [token, NO_TOKEN],
                            joint: true,
                        });
                    }
                }
                match backer.back_token(r, PageSize::Huge, req.attrs) {
                    Ok(rt) => {
                        let Some(t) = t else { return Ok(one(whole, PageSize::Huge, rt)) };
                        match backer.back_token(t, PageSize::Normal, req.attrs) {
                            Ok(tt) => Ok(Backing {
                                first_len: whole,
                                first_page: PageSize::Huge,
                                tail_len,
                                tokens: [rt, tt],
                                joint: false,
                            }),
                            Err(e) => {
                                let _ = backer.unback_token(r, rt);
                                Err(e)
                            }
                        }
                    }
                    // Out of 2 MiB pages: fall back to 4 KiB pages for everything.
                    Err(e) if e.kind() == ErrorKind::OutOfMemory => {
                        let t =
                            backer.back_token(known_range(base, normal_len), PageSize::Normal, req.attrs)?;
                        Ok(one(normal_len, PageSize::Normal, t))
                    }
                    Err(e) => Err(e),
                }
            }
            plan => {
                let page = match plan {
                    PagePlan::HugeOnly => PageSize::Huge,
                    PagePlan::Giant => PageSize::Giant,
                    _ => PageSize::Normal,
                };
                let len = page.round_up(req.usable_bytes).ok_or(size_overflow())?;
                let t = backer.back_token(known_range(base, len), page, req.attrs)?;
                Ok(one(len, page, t))
            }
        }
    }

    fn block_info(b: &Block) -> Info {
        Info {
            base: DeviceAddr(b.base),
            usable_bytes: b.usable,
            page_size: b.first_page,
            attrs: b.attrs,
            component: b.component,
            is_slab: false,
        }
    }

    fn chunk_info(&self, rec: &ChunkRec, base: u64, usable: u64) -> Info {
        let kind = self.kinds[usize::from(rec.kind)];
        Info {
            base: DeviceAddr(base),
            usable_bytes: usable,
            page_size: kind.page,
            attrs: kind.attrs,
            component: kind.component,
            is_slab: true,
        }
    }

    /// The live allocation containing `addr`.
    pub fn find(&self, addr: DeviceAddr) -> Option<Info> {
        match self.locate(addr.as_u64())? {
            Loc::Chunk(id) => {
                let rec = self.chunks.get(id as usize)?.as_ref()?;
                let (base, usable) = rec.chunk.object_at(addr.as_u64())?;
                Some(self.chunk_info(rec, base, usable))
            }
            Loc::Block(id) => {
                let b = self.blocks.get(id as usize)?.as_ref()?;
                b.va().contains(addr).then(|| Self::block_info(b))
            }
        }
    }

    /// The live slab object containing `addr`, if there is one (blocks are not looked at): one
    /// slot-table load and the chunk's O(1) slot arithmetic, whatever the number of live
    /// allocations. The runtime's address map records blocks, not slab objects, and asks this
    /// for an address it does not hold.
    #[inline]
    pub fn find_slab(&self, addr: DeviceAddr) -> Option<Info> {
        let e = self.slots[self.slot_index(addr.as_u64())?];
        if e & SLAB_FLAG == 0 {
            return None;
        }
        let rec = self.chunks.get((e & !SLAB_FLAG) as usize)?.as_ref()?;
        let (base, usable) = rec.chunk.object_at(addr.as_u64())?;
        Some(self.chunk_info(rec, base, usable))
    }

    /// Live objects of the slab chunk that contains `addr` (`None` when no chunk does; 0 for
    /// a spare): for memory snapshots, which show a chunk as one segment while it holds objects.
    pub fn chunk_objects(&self, addr: DeviceAddr) -> Option<u32> {
        match self.locate(addr.as_u64())? {
            Loc::Chunk(id) => self.chunks.get(id as usize)?.as_ref().map(|rec| rec.chunk.used()),
            Loc::Block(_) => None,
        }
    }

    /// Whether `[addr, addr + len_bytes)` lies inside one live allocation's usable bytes.
    pub fn contains_range(&self, addr: DeviceAddr, len_bytes: u64) -> bool {
        let Some(info) = self.find(addr) else { return false };
        let Some(end) = addr.as_u64().checked_add(len_bytes) else { return false };
        end <= info.base.as_u64() + info.usable_bytes
    }

    /// Why `base`, which names no live allocation, is not one.
    fn not_live(&self, base: DeviceAddr) -> NotLive {
        if base.as_u64() != 0 && self.recent.contains(&base.as_u64()) {
            NotLive::Freed
        } else {
            NotLive::Unknown
        }
    }

    /// Whether `addr` lies in a slab chunk's 2 MiB slot (one slot-table load): a free of such
    /// an address is a slab object's (or refused as not live), never a block's.
    #[inline]
    pub fn in_slab_chunk(&self, addr: DeviceAddr) -> bool {
        self.slot_index(addr.as_u64()).is_some_and(|s| self.slots[s] & SLAB_FLAG != 0)
    }

    /// The live allocation starting exactly at `base`.
    ///
    /// # Errors
    ///
    /// A [`NotLive`] reason.
    pub fn get(&self, base: DeviceAddr) -> Result<Info, NotLive> {
        match self.find(base) {
            Some(i) if i.base == base => Ok(i),
            Some(i) => Err(NotLive::Interior { base: i.base }),
            None => Err(self.not_live(base)),
        }
    }

    /// Frees the allocation at `base`.
    ///
    /// # Errors
    ///
    /// [`FreeError::NotLive`] when `base` is not a live allocation base;
    /// [`FreeError::Backing`] when the backer refused to unback (a bug below). Nothing changes.
    #[inline]
    pub fn free<B: Backer>(&mut self, backer: &mut B, base: DeviceAddr) -> Result<Info, FreeError> {
        let addr = base.as_u64();
        let info =
            if let Some(info) = self.free_slab_fast(base) { info } else { self.free_other(backer, base)? };
        self.recent[self.recent_next % RECENT_FREES] = addr;
        self.recent_next = self.recent_next.wrapping_add(1);
        Ok(info)
    }

    /// [`Self::free`] past the slab fast path (without recording the free): a block found by
    /// its slot entry, then the general lookup. Out of line, so that the slab fast path's
    /// caller stays small.
    #[inline(never)]
    fn free_other<B: Backer>(&mut self, backer: &mut B, base: DeviceAddr) -> Result<Info, FreeError> {
        if let Some((id, at)) = self.block_in_slot(base.as_u64()) {
            return self.free_block(backer, id, base, at);
        }
        self.free_slow(backer, base)
    }

    /// [`Self::free_other`] past the block found by its slot entry.
    #[cold]
    #[inline(never)]
    fn free_slow<B: Backer>(&mut self, backer: &mut B, base: DeviceAddr) -> Result<Info, FreeError> {
        match self.locate(base.as_u64()) {
            Some(Loc::Chunk(id)) => self.free_slab(backer, id, base),
            Some(Loc::Block(id)) => self.free_block(backer, id, base, None),
            None => Err(FreeError::NotLive(self.not_live(base))),
        }
    }

    /// Whether `req` is served from the slab (small objects sharing chunks) rather than by a
    /// block of its own.
    pub fn is_slab_request(req: &Request) -> bool {
        req.usable_bytes <= SLAB_MAX_BYTES && req.plan != PagePlan::Giant
    }

    /// Removes the block allocation at `base` from every table and its accounting, but keeps
    /// its VA taken, and returns what it had backed: the caller unbacks those ranges (with no
    /// lock held, say) and then gives the VA back with [`Self::release_detached`], so that no
    /// other allocation can be placed there before the backing is gone. `Ok(None)` for a slab
    /// object (it shares its pages: free it with [`Self::free`]).
    ///
    /// # Errors
    ///
    /// [`NotLive`] when `base` is not a live allocation base (nothing changes).
    pub fn detach(&mut self, base: DeviceAddr) -> Result<Option<Detached>, NotLive> {
        let addr = base.as_u64();
        let id = match self.locate(addr) {
            Some(Loc::Chunk(_)) => return self.get(base).map(|_| None),
            Some(Loc::Block(id)) => id,
            None => return Err(self.not_live(base)),
        };
        let Some(b) = self.blocks.get(id as usize).copied().flatten() else {
            return Err(self.not_live(base));
        };
        if b.base() != addr {
            return Err(if b.va().contains(base) {
                NotLive::Interior { base: DeviceAddr(b.base) }
            } else {
                self.not_live(base)
            });
        }
        self.record_block(b.va(), id, false);
        self.blocks[id as usize] = None;
        self.free_block_ids.push(id);
        self.live_blocks -= 1;
        self.acct.backed.sub(b.backed_bytes());
        self.acct.refund(b.component, b.class, b.usable);
        self.recent[self.recent_next % RECENT_FREES] = addr;
        self.recent_next = self.recent_next.wrapping_add(1);
        Ok(Some(Detached {
            va: b.va(),
            va_node: b.va_node,
            ranges: if b.joint { [None, Some(b.joint_range())] } else { [b.tail(), Some(b.first())] },
            info: Self::block_info(&b),
        }))
    }

    /// Gives back the VA of a block [`Self::detach`] took out, once its ranges are unbacked.
    pub fn release_detached(&mut self, d: Detached) {
        let _ = self.va.free_handle(d.va, d.va_node);
    }

    /// The block a free of `addr` is about, found by one look at the slot table: the block
    /// owning `addr`'s whole slot (`None` as where its record is: its records are found from its
    /// range), or the live block shorter than a slot starting exactly at `addr` (see
    /// [`Self::record_short`]), found by its start record in the slot's shared-slot table,
    /// without the walk of [`Self::locate`], with where that record is (slot, table, granule).
    /// `None` for anything else (the general path then finds it, or tells why it is not live).
    #[inline(always)]
    fn block_in_slot(&self, addr: u64) -> Option<(u32, Option<StartAt>)> {
        let off = addr.wrapping_sub(self.window.start().as_u64());
        // CAST: an address below the window wraps to an index past the table.
        let s = (off / CHUNK_BYTES) as usize;
        let e = *self.slots.get(s)?;
        if e & BLOCK_FLAG != 0 {
            return Some((e & ID_MASK, None));
        }
        if e & FINE_FLAG == 0 {
            return None;
        }
        let f = e & ID_MASK;
        let g = self.fine.get(f as usize)?;
        // CAST: below GRANULES (32).
        let i = ((off % CHUNK_BYTES) / GRANULE_BYTES) as usize;
        if g.mask & (1 << i) == 0 {
            return None;
        }
        let id = g.starts[i];
        let b = self.blocks.get(id as usize)?.as_ref()?;
        (b.base() == addr && b.va_len < CHUNK_BYTES).then_some((id, Some((s, f, i))))
    }

    /// Frees block `id` at `base`; `at` is where its only record is when
    /// [`Self::block_in_slot`] found it (otherwise its records are found from its range).
    #[inline]
    fn free_block<B: Backer>(
        &mut self,
        backer: &mut B,
        id: u32,
        base: DeviceAddr,
        at: Option<StartAt>,
    ) -> Result<Info, FreeError> {
        let Some(b) = self.blocks.get(id as usize).copied().flatten() else {
            return Err(FreeError::NotLive(self.not_live(base)));
        };
        if b.base() != base.as_u64() {
            return Err(FreeError::NotLive(if b.va().contains(base) {
                NotLive::Interior { base: DeviceAddr(b.base) }
            } else {
                self.not_live(base)
            }));
        }
        let [first_token, tail_token] = b.tokens;
        if b.joint {
            // One range, one step: all or nothing.
            backer.unback_token(b.joint_range(), first_token).map_err(FreeError::Backing)?;
        } else {
            if let Some(t) = b.tail() {
                backer.unback_token(t, tail_token).map_err(FreeError::Backing)?;
            }
            if let Err(e) = backer.unback_token(b.first(), first_token) {
                // Put the tail back so that nothing changed.
                if let Some(t) = b.tail() {
                    if let (Ok(tt), Some(rec)) =
                        (backer.back_token(t, PageSize::Normal, b.attrs), self.blocks[id as usize].as_mut())
                    {
                        rec.tokens[1] = tt;
                    }
                }
                return Err(FreeError::Backing(e));
            }
        }
        let _ = self.va.free_handle(b.va(), b.va_node);
        match at {
            Some((s, f, i)) => {
                let g = &mut self.fine[f as usize];
                g.mask &= !(1 << i);
                if g.mask == 0 && g.head == 0 {
                    self.slots[s] = 0;
                    self.free_fine.push(f);
                }
                // A short block reaching into the next slot is that slot's head.
                if (b.base - self.window.start().as_u64()) % CHUNK_BYTES + b.va_len > CHUNK_BYTES {
                    self.record_partial(s + 1, None, id, false);
                }
            }
            None => self.record_block(b.va(), id, false),
        }
        self.blocks[id as usize] = None;
        self.free_block_ids.push(id);
        self.live_blocks -= 1;
        self.acct.backed.sub(b.backed_bytes());
        self.acct.refund(b.component, b.class, b.usable);
        Ok(Self::block_info(&b))
    }

    /// Whether freeing `slot` of 4 KiB-page chunk `rec` lets its top segments go: only when
    /// the top two backed segments hold no other live object (after every free and allocation
    /// one of them holds one: a free that empties both shrinks the chunk, and allocations only
    /// add objects), as [`Self::shrink_chunk`]'s hysteresis asks.
    #[inline]
    fn free_may_shrink(rec: &ChunkRec, slot: u32) -> bool {
        // CAST: below SEGMENTS.
        let top = (rec.backed / SEGMENT_BYTES) as usize;
        top > 1 && rec.chunk.free_lets_top_shrink(slot, top - 2)
    }

    /// The slab fast path of [`Self::allocate`]: the head chunk of the class's list has a free
    /// slot whose bytes are backed already. `None` (nothing changed) when it has not or `req` is
    /// not a slab request (or its kind has no object charged yet); [`Self::alloc_slab`] handles
    /// the rest. A few loads and stores: the kind by its key, the chunk from the class's list,
    /// the slot from the chunk's kept lowest free slot, the counters through the kind's indices.
    #[inline(always)]
    fn alloc_slab_fast(&mut self, req: &Request, component: Component) -> Option<DeviceAddr> {
        let class = class_of(req.usable_bytes)?;
        if req.plan == PagePlan::Giant {
            return None;
        }
        let page = if req.plan == PagePlan::HugeOnly { PageSize::Huge } else { PageSize::Normal };
        let key = kind_key(page, req.attrs, component, req.class);
        let fast = match self.kind_fast.first() {
            // The first kind (usually the only one) is looked at without a search.
            Some(f) if f.key == key => f,
            _ => self.kind_fast.iter().find(|f| f.key == key)?,
        };
        let k = usize::from(fast.index);
        let head = self.heads.get_mut(k)?.get_mut(class)?;
        let rec = self.chunks.get_mut(head.partial as usize)?.as_mut()?;
        // Both counters exist before anything changes (a kind not charged yet has no entry).
        let comp = self.acct.components.get_mut(fast.comp as usize)?;
        let policy = self.acct.policies.get_mut(usize::from(fast.policy))?;
        // CAST: usable <= 64 KiB.
        let addr = rec.chunk.alloc_within(req.usable_bytes as u32, rec.backed)?;
        if rec.chunk.is_full() {
            // It is the list's head: take it off (see `list_push`: no other chunk changes).
            head.partial = rec.next;
            (rec.listed, rec.next) = (false, NIL);
        }
        let bytes = req.usable_bytes;
        comp.1.add(bytes);
        policy.add(bytes);
        self.acct.live.add(bytes);
        self.live_objects += 1;
        Some(DeviceAddr(addr))
    }

    /// The slab fast path of [`Self::free`]: a live object at `base` whose free neither empties
    /// its chunk nor lets its top segments go. `None` (nothing changed) otherwise;
    /// [`Self::free_slab`] handles the rest (and tells the errors apart). The chunk is the
    /// slot table's entry for the address's 2 MiB slot, the object's slot a multiply, the double
    /// free check its live size.
    #[inline(always)]
    fn free_slab_fast(&mut self, base: DeviceAddr) -> Option<Info> {
        let addr = base.as_u64();
        // CAST: an address below the window wraps to an index past the table.
        let e = *self.slots.get((addr.wrapping_sub(self.window.start().as_u64()) / CHUNK_BYTES) as usize)?;
        if e & SLAB_FLAG == 0 {
            return None;
        }
        let id = e & !SLAB_FLAG;
        let rec = self.chunks.get_mut(id as usize)?.as_mut()?;
        // Both counters exist before anything changes (a kind not charged yet has no entry).
        let comp = self.acct.components.get_mut(rec.comp as usize)?;
        let policy = self.acct.policies.get_mut(usize::from(rec.policy))?;
        let was_full = rec.chunk.is_full();
        // Only a free leaving the top two backed segments of a 4 KiB-page chunk with no live
        // object lets its top go (see `free_may_shrink`); the slow path takes that one. The
        // chunk's guard slot spares the look for every object below those segments.
        let usable = rec.chunk.free_fast(addr, rec.guard, rec.backed)?;
        comp.1.sub(usable);
        policy.sub(usable);
        self.acct.live.sub(usable);
        self.live_objects -= 1;
        let info = Info {
            base,
            usable_bytes: usable,
            page_size: rec.page,
            attrs: rec.attrs,
            component: rec.component,
            is_slab: true,
        };
        if was_full {
            let (k, class) = (usize::from(rec.kind), usize::from(rec.chunk.class));
            self.list_push(k, class, id);
        }
        Some(info)
    }

    fn free_slab<B: Backer>(&mut self, backer: &mut B, id: u32, base: DeviceAddr) -> Result<Info, FreeError> {
        let Some(rec) = self.chunks.get_mut(id as usize).and_then(Option::as_mut) else {
            return Err(FreeError::NotLive(NotLive::Unknown));
        };
        let slot = match rec.chunk.slot_of(base.as_u64()) {
            Ok(slot) => slot,
            Err(SlotError::Interior { base }) => {
                return Err(FreeError::NotLive(NotLive::Interior { base: DeviceAddr(base) }))
            }
            Err(_) => return Err(FreeError::NotLive(self.not_live(base))),
        };
        let k = usize::from(rec.kind);
        let was_full = rec.chunk.is_full();
        let near_top = Self::free_may_shrink(rec, slot);
        let usable = rec.chunk.free(slot);
        let empty = rec.chunk.is_empty();
        let class = usize::from(rec.chunk.class);
        let kind = self.kinds[k];
        let info = Info {
            base,
            usable_bytes: usable,
            page_size: kind.page,
            attrs: kind.attrs,
            component: kind.component,
            is_slab: true,
        };
        self.live_objects -= 1;
        self.acct.refund(kind.component, kind.class, usable);
        if was_full {
            self.list_push(k, class, id);
        }
        if kind.page == PageSize::Normal && near_top {
            self.shrink_chunk(backer, id, true).map_err(FreeError::Backing)?;
        }
        if empty {
            self.list_unlink(k, class, id);
            if self.keep_spare && self.heads[k][class].spare.is_none() {
                self.heads[k][class].spare = Some(id);
                self.spares += 1;
            } else if let Err(e) = self.release_chunk(backer, id).map(|_| ()) {
                // Keep the chunk listed so that nothing is lost; the object is freed.
                self.list_push(k, class, id);
                return Err(FreeError::Backing(e));
            }
        }
        Ok(info)
    }

    /// Unbacks the segments at the top of 4 KiB-page chunk `id` that no live object overlaps,
    /// keeping the first (the chunk itself goes when it empties). With `hysteresis`, one empty
    /// segment stays backed above the highest live one, so that an alloc/free pair at a segment
    /// boundary does not back and unback a segment every time; [`Self::trim`] takes it too.
    fn shrink_chunk<B: Backer>(
        &mut self,
        backer: &mut B,
        id: u32,
        hysteresis: bool,
    ) -> Result<(), hal::Error> {
        let Some(rec) = self.chunks[id as usize].as_mut() else { return Ok(()) };
        while rec.backed > SEGMENT_BYTES {
            let start = rec.backed - SEGMENT_BYTES;
            // CAST: below SEGMENTS.
            if rec.chunk.segment_live((start / SEGMENT_BYTES) as usize) != 0 {
                break;
            }
            // The top segment is empty; with hysteresis it goes only when the one below it is
            // empty too (which then becomes the one kept).
            // CAST: below SEGMENTS.
            if hysteresis && rec.chunk.segment_live((start / SEGMENT_BYTES) as usize - 1) != 0 {
                break;
            }
            backer.unback(VaRange::try_new(DeviceAddr(rec.chunk.base + start), SEGMENT_BYTES)?)?;
            self.acct.backed.sub(SEGMENT_BYTES);
            rec.set_backed(start);
        }
        Ok(())
    }

    /// Unbacks chunk `id` segment by segment (from the top, so that a failure leaves the rest
    /// consistent), frees its VA and its id; returns the bytes released.
    fn release_chunk<B: Backer>(&mut self, backer: &mut B, id: u32) -> Result<u64, hal::Error> {
        let Some(rec) = self.chunks[id as usize].as_mut() else { return Ok(0) };
        let base = rec.chunk.base;
        let whole = rec.backed == CHUNK_BYTES && self.kinds[usize::from(rec.kind)].page != PageSize::Normal;
        let released = rec.backed;
        while rec.backed > 0 {
            let start = if whole { 0 } else { rec.backed - SEGMENT_BYTES };
            let seg = VaRange::try_new(DeviceAddr(base + start), rec.backed - start)?;
            backer.unback(seg)?;
            self.acct.backed.sub(seg.len_bytes());
            rec.set_backed(start);
        }
        let range = VaRange::try_new(DeviceAddr(base), CHUNK_BYTES)?;
        let _ = self.va.free_handle(range, rec.va_node);
        if let Some(i) = self.slot_index(base) {
            self.slots[i] = 0;
        }
        if let Some(rec) = self.chunks[id as usize].take() {
            let class = usize::from(rec.chunk.class);
            if self.chunk_cache[class].is_none() && rec.chunk.is_empty() {
                self.chunk_cache[class] = Some(rec.chunk);
            }
        }
        self.free_chunk_ids.push(id);
        Ok(released)
    }

    /// Gives back every spare chunk kept for reuse and every empty segment kept at the top of a
    /// chunk, and the VA allocator's cache of freed ranges (VA, not memory); returns the bytes
    /// released. Time linear in the number of chunks.
    pub fn trim<B: Backer>(&mut self, backer: &mut B) -> u64 {
        let before = self.acct.backed.current;
        for id in 0..self.chunks.len() {
            let normal = self.chunks[id]
                .as_ref()
                .is_some_and(|rec| self.kinds[usize::from(rec.kind)].page == PageSize::Normal);
            // CAST: chunk ids are u32.
            if normal && self.shrink_chunk(backer, id as u32, false).is_err() {
                // What could not be unbacked stays backed and counted; nothing is lost.
                continue;
            }
        }
        let mut released = before - self.acct.backed.current;
        for k in 0..self.heads.len() {
            for class in 0..CLASSES {
                if let Some(id) = self.heads[k][class].spare.take() {
                    self.spares -= 1;
                    if let Ok(bytes) = self.release_chunk(backer, id) {
                        released += bytes;
                    } else {
                        // Still backed: keep it as the spare.
                        self.heads[k][class].spare = Some(id);
                        self.spares += 1;
                    }
                }
            }
        }
        self.va.flush_cache();
        backer.trim();
        released
    }

    /// Reserves `len_bytes` of VA aligned to 2 MiB, with nothing backed, for `component`
    /// (a stream-ordered pool backs pages in it as it needs them).
    ///
    /// # Errors
    ///
    /// [`AllocError::OutOfVa`] when the window (the pool window when one is set) has no such
    /// range.
    pub fn reserve_range(&mut self, len_bytes: u64, component: Component) -> Result<VaRange, AllocError> {
        let len = PageSize::Huge.round_up(len_bytes).ok_or(AllocError::OutOfVa)?;
        let va = self.pool_va.as_mut().unwrap_or(&mut self.va);
        let r = va.alloc(len, PageSize::Huge.bytes()).map_err(|_| AllocError::OutOfVa)?;
        self.reservations.insert(r.start().as_u64(), (len, component));
        Ok(r)
    }

    /// Gives back a reservation in which nothing is backed.
    ///
    /// # Errors
    ///
    /// [`NotLive::Unknown`] when `range` is not exactly a reservation, [`NotLive::Interior`]
    /// while pages inside it are still backed. Nothing changes then.
    pub fn unreserve_range(&mut self, range: VaRange) -> Result<(), NotLive> {
        let start = range.start().as_u64();
        match self.reservations.get(&start) {
            Some(&(len, _)) if len == range.len_bytes() => {}
            _ => return Err(NotLive::Unknown),
        }
        if self.reserved_pages.range(start..range.end()).next().is_some() {
            return Err(NotLive::Interior { base: range.start() });
        }
        self.reservations.remove(&start);
        let _ = self.pool_va.as_mut().unwrap_or(&mut self.va).free(range);
        Ok(())
    }

    fn reservation_of(&self, page: &VaRange) -> Option<Component> {
        let (&b, &(l, c)) = self.reservations.range(..=page.start().as_u64()).next_back()?;
        (page.end() <= b + l).then_some(c)
    }

    /// Backs one 2 MiB page inside a reservation: a 2 MiB page, or 4 KiB pages when none is
    /// left. It is charged to the reservation's component.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] outside a reservation, misaligned, or already backed;
    /// the backer's error (out of memory) otherwise.
    pub fn back_reserved<B: Backer>(&mut self, backer: &mut B, page: VaRange) -> Result<(), hal::Error> {
        let huge = PageSize::Huge.bytes();
        let bad = hal::Error::new(ErrorKind::InvalidArgument, "not a free page of a reservation");
        if page.len_bytes() != huge || !page.start().is_aligned(huge) {
            return Err(bad);
        }
        let c = self.reservation_of(&page).ok_or(bad)?;
        if self.reserved_pages.contains_key(&page.start().as_u64()) {
            return Err(bad);
        }
        let attrs = MemAttr::CACHED;
        match backer.back(page, PageSize::Huge, attrs) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::OutOfMemory => backer.back(page, PageSize::Normal, attrs)?,
            Err(e) => return Err(e),
        }
        self.reserved_pages.insert(page.start().as_u64(), c);
        self.acct.backed.add(huge);
        self.acct.charge(c, PolicyClass::Default, huge);
        Ok(())
    }

    /// Releases one page backed by [`Self::back_reserved`].
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when it was not backed; the backer's error otherwise.
    pub fn unback_reserved<B: Backer>(&mut self, backer: &mut B, page: VaRange) -> Result<(), hal::Error> {
        let Some(&c) = self.reserved_pages.get(&page.start().as_u64()) else {
            return Err(hal::Error::new(ErrorKind::InvalidHandle, "page not backed"));
        };
        backer.unback(page)?;
        self.reserved_pages.remove(&page.start().as_u64());
        let huge = PageSize::Huge.bytes();
        self.acct.backed.sub(huge);
        self.acct.refund(c, PolicyClass::Default, huge);
        Ok(())
    }

    /// Frees every allocation (a device reset); returns how many there were.
    pub fn release_all<B: Backer>(&mut self, backer: &mut B) -> usize {
        let pages: Vec<u64> = self.reserved_pages.keys().copied().collect();
        for p in pages {
            if let Ok(r) = VaRange::try_new(DeviceAddr(p), PageSize::Huge.bytes()) {
                let _ = self.unback_reserved(backer, r);
            }
        }
        let reservations: Vec<(u64, u64)> = self.reservations.iter().map(|(&b, &(l, _))| (b, l)).collect();
        for (b, l) in reservations {
            if let Ok(r) = VaRange::try_new(DeviceAddr(b), l) {
                let _ = self.unreserve_range(r);
            }
        }
        let n = self.live_count();
        let blocks: Vec<u64> = self.blocks.iter().flatten().map(Block::base).collect();
        for b in blocks {
            let _ = self.free(backer, DeviceAddr(b));
        }
        for id in 0..self.chunks.len() {
            if let Some(rec) = self.chunks[id].as_mut() {
                // The objects die with the device; the chunk then goes back empty.
                let chunk = Chunk::new(rec.chunk.base, usize::from(rec.chunk.class), rec.chunk.kind);
                rec.chunk = chunk;
                // CAST: chunk ids fit in u32.
                let _ = self.release_chunk(backer, id as u32);
            }
        }
        self.heads.iter_mut().for_each(|h| *h = [ClassHeads::default(); CLASSES]);
        self.spares = 0;
        self.live_objects = 0;
        self.acct.live = Usage { current: 0, peak: self.acct.live.peak };
        for (_, u) in &mut self.acct.components {
            u.current = 0;
        }
        for u in &mut self.acct.policies {
            u.current = 0;
        }
        n
    }
}

/// A block taken out of the allocator by [`DeviceAllocator::detach`]: its VA is still taken
/// until [`DeviceAllocator::release_detached`].
#[derive(Debug)]
#[must_use = "unback its ranges, then give its VA back with release_detached"]
pub struct Detached {
    va: VaRange,
    va_node: u32,
    ranges: [Option<VaRange>; 2],
    info: Info,
}

impl Detached {
    /// The ranges to unback, in order (each exactly as one backing call backed it; unback them
    /// with [`Backer::unback`]: a [`FrameBacker`] finds a range backed by token without it).
    pub fn backed_ranges(&self) -> impl Iterator<Item = VaRange> + '_ {
        self.ranges.iter().flatten().copied()
    }

    /// The allocation it was.
    pub fn info(&self) -> Info {
        self.info
    }
}

/// Why a free failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The address is not a live allocation base.
    NotLive(NotLive),
    /// The backer refused to release the backing.
    Backing(hal::Error),
}

impl From<Error> for AllocError {
    fn from(e: Error) -> Self {
        match e {
            Error::OutOfVa => AllocError::OutOfVa,
            other => AllocError::Backing(other.into()),
        }
    }
}

/// The error of a size whose rounding overflows.
fn size_overflow() -> hal::Error {
    hal::Error::new(ErrorKind::InvalidArgument, "size overflows")
}

/// Whether an allocation failed for lack of memory or VA (so that releasing spares may help).
fn is_pressure(e: &AllocError) -> bool {
    match e {
        AllocError::OutOfVa => true,
        AllocError::Backing(e) => e.kind() == ErrorKind::OutOfMemory,
    }
}

/// Stores `value` in a slot of the table `items`, reusing the most recently freed index of
/// `free` when there is one, and returns its index (the tables of this module — spilled runs,
/// backed-range records, shared-slot tables, chunks, blocks — hold far fewer than 2^32 entries:
/// at most one per 4 KiB of a device window).
///
/// `free` is kept with at least the capacity of `items`, so pushing a freed index onto it never
/// allocates: the heap is touched only when the table itself grows past its high-water mark.
///
/// Always inlined: a record built by the caller is then written straight into its slot, where a
/// call would store it to the stack and load it back in wider pieces (a store-forwarding stall
/// that cost about a twentieth of a direct block's pair).
#[inline(always)]
fn put_slot<T>(items: &mut Vec<T>, free: &mut Vec<u32>, value: T) -> u32 {
    match free.pop() {
        Some(i) => {
            items[i as usize] = value;
            i
        }
        None => {
            items.push(value);
            if free.capacity() < items.capacity() {
                free.reserve_exact(items.capacity() - free.len());
            }
            // CAST: fewer than 2^32 entries (above).
            (items.len() - 1) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phys::PhysConfig;
    use crate::policy::{request, Api, HUGE1G_ONLY, HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY};
    use hal::SocProfile;

    const MIB: u64 = 1 << 20;
    const BASE: u64 = 16 << 40;

    fn setup(total: u64, huge: u64, giant: u64) -> (DeviceAllocator, FrameBacker) {
        let window = VaRange::try_new(DeviceAddr(BASE), 64 << 30).unwrap();
        let frames = FrameAllocator::new(PhysConfig {
            total_bytes: total,
            huge_budget_bytes: huge,
            giant_budget_bytes: giant,
        })
        .unwrap();
        (DeviceAllocator::new(window), FrameBacker::new(frames))
    }

    fn req(size: u64, policy: u32) -> Request {
        request(Api::Malloc, SocProfile::A2, size, policy).unwrap()
    }

    #[test]
    fn frame_backer_tokens_find_their_record_and_fall_back_to_the_index() {
        let (_, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let attrs = MemAttr::empty();
        let r = |off: u64, len: u64| VaRange::try_new(DeviceAddr(BASE + off), len).unwrap();
        let used = |b: &FrameBacker| b.frames.info().total_bytes - b.frames.info().free_bytes;
        let t1 = b.back_token(r(0, 4 * MIB), PageSize::Huge, attrs).unwrap();
        let t2 = b.back_token(r(4 * MIB, 64 << 10), PageSize::Normal, attrs).unwrap();
        b.back(r(8 * MIB, 2 * MIB), PageSize::Huge, attrs).unwrap();
        assert_ne!(t1, NO_TOKEN);
        assert_eq!((b.backed_ranges(), used(&b)), (3, 6 * MIB + (64 << 10)));
        // A wrong length is refused whatever the path; nothing changes.
        let kind = |e: hal::Error| e.kind();
        assert_eq!(b.unback_token(r(0, 2 * MIB), t1).map_err(kind), Err(ErrorKind::InvalidHandle));
        assert_eq!(b.unback(r(0, 2 * MIB)).map_err(kind), Err(ErrorKind::InvalidHandle));
        assert_eq!(b.backed_ranges(), 3);
        // A token-backed range unbacked without its token is found by the walk of the records.
        b.unback(r(4 * MIB, 64 << 10)).unwrap();
        assert_eq!(b.unback_token(r(4 * MIB, 64 << 10), t2).map_err(kind), Err(ErrorKind::InvalidHandle));
        // An indexed range unbacked with a token that is not its own falls back to the index.
        b.unback_token(r(8 * MIB, 2 * MIB), t1).unwrap();
        assert_eq!(b.backed_ranges(), 1);
        b.unback_token(r(0, 4 * MIB), t1).unwrap();
        assert_eq!((b.backed_ranges(), used(&b)), (0, 0));
        // The default methods of a backer without tokens are its back and unback.
        struct Plain(Vec<VaRange>);
        impl Backer for Plain {
            fn back(&mut self, range: VaRange, _: PageSize, _: MemAttr) -> Result<(), hal::Error> {
                self.0.push(range);
                Ok(())
            }
            fn unback(&mut self, range: VaRange) -> Result<(), hal::Error> {
                let i = self
                    .0
                    .iter()
                    .position(|x| *x == range)
                    .ok_or(hal::Error::new(ErrorKind::InvalidHandle, "no"))?;
                self.0.remove(i);
                Ok(())
            }
        }
        let mut p = Plain(Vec::new());
        assert_eq!(p.back_token(r(0, 4 * MIB), PageSize::Huge, attrs).unwrap(), NO_TOKEN);
        p.unback_token(r(0, 4 * MIB), NO_TOKEN).unwrap();
        assert!(p.0.is_empty());
    }

    #[test]
    fn a_detached_block_keeps_its_va_until_released_and_unbacks_what_it_backed() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let total = b.frames.info().free_bytes;
        let r = req(3 * MIB + 5, HUGE_FIRST);
        assert!(!DeviceAllocator::is_slab_request(&r));
        assert!(DeviceAllocator::is_slab_request(&req(4096, NORMAL_ONLY)));
        let p = a.allocate(&mut b, &r, APP).unwrap();
        let slab = a.allocate(&mut b, &req(4096, NORMAL_ONLY), APP).unwrap();
        assert_eq!(
            a.detach(slab).unwrap().map(|d| d.info().base),
            None,
            "slab objects are freed, not detached"
        );
        assert_eq!(a.detach(DeviceAddr(p.as_u64() + 64)).unwrap_err(), NotLive::Interior { base: p });
        let d = a.detach(p).unwrap().unwrap();
        assert_eq!(d.info().base, p);
        assert!(a.find(p).is_none(), "gone from the tables at once");
        assert_eq!(a.get(p).unwrap_err(), NotLive::Freed);
        assert_eq!(
            a.accounting().live.current,
            a.get(slab).unwrap().usable_bytes,
            "only the slab object is live"
        );
        // Its VA is not handed out again before it is released.
        let q = a.allocate(&mut b, &r, APP).unwrap();
        assert!(q.as_u64() >= p.as_u64() + r.usable_bytes || q.as_u64() + r.usable_bytes <= p.as_u64());
        let ranges: Vec<VaRange> = d.backed_ranges().collect();
        // A 2 MiB piece and a 4 KiB-page tail, backed in one step by the frame backer: one range.
        assert_eq!(ranges, [VaRange::try_new(p, 3 * MIB + 4096).unwrap()]);
        for range in ranges {
            b.unback(range).unwrap();
        }
        a.release_detached(d);
        a.free(&mut b, q).unwrap();
        a.free(&mut b, slab).unwrap();
        a.trim(&mut b);
        assert_eq!(b.frames.info().free_bytes, total);
        assert_eq!(a.live_count(), 0);
    }

    #[test]
    fn huge_pages_and_tail_are_backed_in_one_step_where_the_backer_can() {
        /// A backer with no joint step (only the defaults): the two parts one by one.
        struct Plain<'a>(&'a mut FrameBacker);
        impl Backer for Plain<'_> {
            fn back(&mut self, range: VaRange, page: PageSize, attrs: MemAttr) -> Result<(), hal::Error> {
                self.0.back(range, page, attrs)
            }
            fn unback(&mut self, range: VaRange) -> Result<(), hal::Error> {
                self.0.unback(range)
            }
        }
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let r = req(4 * MIB + 32, HUGE_FIRST);
        let p = a.allocate(&mut b, &r, APP).unwrap();
        assert_eq!(b.backed_ranges(), 1, "2 MiB pages and the tail: one record");
        let info = b.frames.info();
        assert_eq!(info.total_bytes - info.free_bytes, 4 * MIB + 4096);
        assert_eq!(info.huge_total_bytes - info.huge_free_bytes, 4 * MIB, "two 2 MiB pages in use");
        assert_eq!(a.find(p).unwrap().page_size, PageSize::Huge);
        assert_eq!(a.accounting().backed.current, 4 * MIB + 4096);
        // A block backed by a backer without the step frees through it too, and the other way.
        let q = a.allocate(&mut Plain(&mut b), &r, APP).unwrap();
        assert_eq!(b.backed_ranges(), 3, "without the step: two more records");
        a.free(&mut b, q).unwrap();
        a.free(&mut Plain(&mut b), p).unwrap();
        assert_eq!(b.backed_ranges(), 0);
        assert_eq!(a.accounting().backed.current, 0);
        b.trim();
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        assert_eq!(b.frames.info().huge_free_bytes, 32 * MIB);
        // The joint step itself: misaligned or non-adjacent pieces are refused, nothing backed.
        let huge = VaRange::try_new(DeviceAddr(BASE), 2 * MIB).unwrap();
        let far = VaRange::try_new(DeviceAddr(BASE + 4 * MIB), 4096).unwrap();
        assert!(b.back_huge_with_tail(huge, far, MemAttr::CACHED).is_err());
        let big_tail = VaRange::try_new(DeviceAddr(BASE + 2 * MIB), 2 * MIB).unwrap();
        assert!(b.back_huge_with_tail(huge, big_tail, MemAttr::CACHED).is_err());
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
    }

    #[test]
    fn huge_first_backs_the_tail_with_small_pages() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let p = a.allocate(&mut b, &req(3 * MIB + 5, HUGE_FIRST), APP).unwrap();
        assert!(p.is_aligned(2 * MIB));
        let info = b.frames.info();
        let usable = 3 * MIB + 64;
        assert_eq!(
            info.total_bytes - info.free_bytes,
            2 * MIB + PageSize::Normal.round_up(usable - 2 * MIB).unwrap()
        );
        assert_eq!(info.huge_total_bytes - info.huge_free_bytes, 2 * MIB);
        assert_eq!(a.accounting().live.current, usable);
        assert_eq!(a.accounting().backed.current, info.total_bytes - info.free_bytes);
        assert!(a.contains_range(p, usable));
        assert!(!a.contains_range(p, usable + 1));
        a.free(&mut b, p).unwrap();
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        assert_eq!(a.accounting().backed.current, 0);
    }

    #[test]
    fn huge_first_falls_back_and_huge_only_fails() {
        let (mut a, mut b) = setup(64 * MIB, 4 * MIB, 0);
        let x = a.allocate(&mut b, &req(4 * MIB, HUGE_ONLY), APP).unwrap_err();
        assert!(matches!(x, AllocError::Backing(e) if e.kind() == ErrorKind::OutOfMemory), "{x:?}");
        let before = b.frames.info();
        assert_eq!(before.free_bytes, 64 * MIB, "a failed allocation changes nothing");
        let p = a.allocate(&mut b, &req(4 * MIB, HUGE_ONLY), APP);
        assert!(p.is_err());
        let big = a.allocate(&mut b, &req(6 * MIB, HUGE_FIRST), APP).unwrap();
        let info = a.find(big).unwrap();
        assert_eq!(info.page_size, PageSize::Normal, "budget of 4 MiB cannot hold 6 MiB: all 4 KiB pages");
        let q = a.allocate(&mut b, &req(MIB + MIB / 2, HUGE_ONLY), APP).unwrap();
        assert_eq!(a.find(q).unwrap().page_size, PageSize::Huge);
    }

    #[test]
    fn giant_pages_need_a_budget() {
        let (mut a, mut b) = setup(4 << 30, 0, 2 << 30);
        let p = a.allocate(&mut b, &req(MIB, HUGE1G_ONLY), APP).unwrap();
        assert!(p.is_aligned(1 << 30));
        assert_eq!(a.find(p).unwrap().page_size, PageSize::Giant);
        let _q = a.allocate(&mut b, &req(MIB, HUGE1G_ONLY), APP).unwrap();
        assert!(a.allocate(&mut b, &req(MIB, HUGE1G_ONLY), APP).is_err(), "budget of two 1 GiB pages");
    }

    #[test]
    fn slab_objects_share_chunks_and_chunks_go_back() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        a.set_keep_spare(true);
        let r = req(100, NORMAL_ONLY);
        let xs: Vec<DeviceAddr> = (0..100).map(|_| a.allocate(&mut b, &r, APP).unwrap()).collect();
        assert!(xs.iter().all(|x| x.is_aligned(64)));
        let used = |b: &FrameBacker| b.frames.info().total_bytes - b.frames.info().free_bytes;
        assert_eq!(used(&b), 64 << 10, "the first 64 KiB segment of one chunk");
        assert_eq!(a.accounting().live.current, 100 * 160);
        assert_eq!(a.get(DeviceAddr(xs[3].as_u64() + 64)), Err(NotLive::Interior { base: xs[3] }));
        for x in &xs {
            a.free(&mut b, *x).unwrap();
        }
        assert_eq!(a.free(&mut b, xs[99]), Err(FreeError::NotLive(NotLive::Freed)));
        assert_eq!(a.accounting().live.current, 0);
        assert_eq!(a.accounting().overhead(), 64 << 10, "one empty chunk is kept");
        assert_eq!(a.spare_chunks(), 1);
        assert_eq!(a.trim(&mut b), 64 << 10);
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        // Without a spare, the chunk goes back with its last object.
        a.set_keep_spare(false);
        let x = a.allocate(&mut b, &r, APP).unwrap();
        assert_eq!(b.frames.info().free_bytes, 64 * MIB - (64 << 10));
        a.free(&mut b, x).unwrap();
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        assert_eq!(a.accounting().backed.current, 0);
    }

    #[test]
    fn in_slab_chunk_tells_slab_slots_from_blocks() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let x = a.allocate(&mut b, &req(100, NORMAL_ONLY), APP).unwrap();
        let y = a.allocate(&mut b, &req(3 * MIB, HUGE_FIRST), APP).unwrap();
        assert!(a.in_slab_chunk(x));
        assert!(a.in_slab_chunk(DeviceAddr(x.as_u64() + 64)), "any address of the chunk's slot");
        assert!(!a.in_slab_chunk(y));
        assert!(!a.in_slab_chunk(DeviceAddr(BASE - 1)), "below the window");
        assert!(!a.in_slab_chunk(DeviceAddr(u64::MAX)), "past the window");
        a.free(&mut b, x).unwrap();
        assert!(!a.in_slab_chunk(x), "the chunk went back with its last object");
        a.free(&mut b, y).unwrap();
    }

    #[test]
    fn segments_and_largest_free_va_describe_the_window() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        assert_eq!(a.largest_free_va(), 64 << 30);
        assert!(a.segments().is_empty());
        let big = a.allocate(&mut b, &req(3 * MIB, HUGE_FIRST), APP).unwrap();
        let s1 = a.allocate(&mut b, &req(100, NORMAL_ONLY), 7).unwrap();
        let s2 = a.allocate(&mut b, &req(100, NORMAL_ONLY), 7).unwrap();
        let segs = a.segments();
        assert_eq!(segs.len(), 2, "{segs:?}");
        assert!(segs.windows(2).all(|w| w[0].base < w[1].base), "address order");
        let d = segs.iter().find(|s| !s.is_slab).unwrap();
        assert_eq!((d.base, d.component, d.blocks.clone()), (big, APP, vec![(big.as_u64(), 3 * MIB + 32)]));
        let c = segs.iter().find(|s| s.is_slab).unwrap();
        assert_eq!((c.len_bytes, c.component), (CHUNK_BYTES, 7));
        // A 4 KiB-page chunk is backed one segment at a time.
        assert_eq!(c.backed_bytes, SEGMENT_BYTES);
        assert_eq!(c.blocks, vec![(s1.as_u64(), 160), (s2.as_u64(), 160)]);
        let backed: u64 = segs.iter().map(|s| s.backed_bytes).sum();
        assert_eq!(backed, a.accounting().backed.current);
        assert!(a.largest_free_va() < 64 << 30);
        a.free(&mut b, s1).unwrap();
        assert_eq!(a.segments().iter().find(|s| s.is_slab).unwrap().blocks, vec![(s2.as_u64(), 160)]);
    }

    #[test]
    fn chunks_are_backed_by_segments_and_shrink_from_the_top() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let used = |b: &FrameBacker| b.frames.info().total_bytes - b.frames.info().free_bytes;
        // 64 KiB objects: one per segment, so each object brings in its segment.
        let r = req(60 << 10, NORMAL_ONLY);
        let mut xs = Vec::new();
        for i in 1..=32 {
            xs.push(a.allocate(&mut b, &r, APP).unwrap());
            assert_eq!(used(&b), i * (64 << 10));
        }
        assert_eq!(a.accounting().backed.current, 2 * MIB);
        assert_eq!(b.backed_ranges(), 32, "one backing call per segment");
        // A hole in the middle stays backed; one empty segment stays at the top (hysteresis),
        // the next one goes as soon as nothing overlaps it and the one below is empty too.
        a.free(&mut b, xs[10]).unwrap();
        assert_eq!(used(&b), 2 * MIB);
        a.free(&mut b, xs[31]).unwrap();
        assert_eq!(used(&b), 2 * MIB, "the empty top segment is kept");
        // An alloc/free pair at the boundary backs and unbacks nothing.
        let ranges = b.backed_ranges();
        let top = a.allocate(&mut b, &r, APP).unwrap();
        assert_eq!(top, xs[10], "the lowest free slot first: the hole");
        a.free(&mut b, top).unwrap();
        assert_eq!((used(&b), b.backed_ranges()), (2 * MIB, ranges));
        a.free(&mut b, xs[30]).unwrap();
        assert_eq!(used(&b), 2 * MIB - (64 << 10), "one empty segment left on top");
        // trim takes the kept segment.
        assert_eq!(a.trim(&mut b), 64 << 10);
        assert_eq!(used(&b), 2 * MIB - 2 * (64 << 10));
        xs.truncate(30);
        // The lowest free slot is reused first: the hole, with no backing call.
        let again = a.allocate(&mut b, &r, APP).unwrap();
        assert_eq!(again, xs[10]);
        assert_eq!(used(&b), 2 * MIB - 2 * (64 << 10));
        xs[10] = again;
        for x in xs.drain(..) {
            a.free(&mut b, x).unwrap();
        }
        assert_eq!(used(&b), 0);
        assert_eq!(b.backed_ranges(), 0);
        // A HUGE_ONLY chunk is one 2 MiB page from the start.
        let h = a.allocate(&mut b, &req(100, HUGE_ONLY), APP).unwrap();
        assert_eq!(used(&b), 2 * MIB);
        a.free(&mut b, h).unwrap();
        assert_eq!(used(&b), 0);
    }

    /// Many objects per segment: a free that empties the top segment while the one below
    /// keeps objects changes no backing (the fast path takes it), an alloc/free pair at that
    /// frontier backs and unbacks nothing, and the top goes once the two top segments are both
    /// empty.
    #[test]
    fn a_free_at_the_frontier_keeps_the_backing_until_two_segments_are_empty() {
        let (mut a, mut b) = setup(64 * MIB, 0, 0);
        let used = |b: &FrameBacker| b.frames.info().total_bytes - b.frames.info().free_bytes;
        const SEG: u64 = 64 << 10;
        // 4 KiB objects: sixteen per segment; forty of them reach the third segment.
        let r = req(4000, NORMAL_ONLY);
        let xs: Vec<DeviceAddr> = (0..40).map(|_| a.allocate(&mut b, &r, APP).unwrap()).collect();
        assert!(xs.windows(2).all(|w| w[1].as_u64() - w[0].as_u64() == 4096));
        assert_eq!(used(&b), 3 * SEG);
        let ranges = b.backed_ranges();
        // Empty the third segment from the top down: the second still holds objects.
        for &x in xs[32..].iter().rev() {
            a.free(&mut b, x).unwrap();
            assert_eq!((used(&b), b.backed_ranges()), (3 * SEG, ranges), "{x:?}");
        }
        // The frontier pair: the lowest free slot is the first of the empty top segment.
        for _ in 0..3 {
            let p = a.allocate(&mut b, &r, APP).unwrap();
            assert_eq!(p, xs[32]);
            a.free(&mut b, p).unwrap();
            assert_eq!((used(&b), b.backed_ranges()), (3 * SEG, ranges));
        }
        // Emptying the second segment too lets the top one go (the second stays, empty).
        for &x in xs[17..32].iter().rev() {
            a.free(&mut b, x).unwrap();
            assert_eq!(used(&b), 3 * SEG, "{x:?}");
        }
        a.free(&mut b, xs[16]).unwrap();
        assert_eq!(used(&b), 2 * SEG);
        assert_eq!(a.accounting().backed.current, 2 * SEG);
        for &x in &xs[..16] {
            a.free(&mut b, x).unwrap();
        }
        assert_eq!((used(&b), b.backed_ranges()), (0, 0));
    }

    #[test]
    fn blocks_sharing_a_slot_are_found_by_any_address() {
        let (mut a, mut b) = setup(64 * MIB, 0, 0);
        // 4 KiB-aligned blocks of 100 KiB and 3 MiB: they share slots with their neighbours.
        let r = req(100 << 10, NORMAL_ONLY);
        let xs: Vec<DeviceAddr> = (0..25).map(|_| a.allocate(&mut b, &r, APP).unwrap()).collect();
        let big = a.allocate(&mut b, &req(3 * MIB, NORMAL_ONLY), APP).unwrap();
        assert!(xs.windows(2).all(|w| w[1].as_u64() - w[0].as_u64() == 104 << 10), "packed at 4 KiB");
        let at = |p: DeviceAddr, off: u64| DeviceAddr(p.as_u64() + off);
        for &x in xs.iter().chain([&big]) {
            let usable = a.find(x).unwrap().usable_bytes;
            for off in [0, 1, 64 << 10, usable - 1] {
                assert_eq!(a.find(at(x, off)).map(|i| i.base), Some(x), "{x:?} + {off}");
            }
        }
        assert_eq!(
            a.free(&mut b, at(xs[7], 70 << 10)),
            Err(FreeError::NotLive(NotLive::Interior { base: xs[7] }))
        );
        a.free(&mut b, xs[7]).unwrap();
        assert_eq!(a.find(at(xs[7], 10)), None);
        assert_eq!(a.get(xs[7]), Err(NotLive::Freed));
        assert_eq!(a.find(at(xs[6], 100 << 10)).map(|i| i.base), Some(xs[6]));
        assert_eq!(a.find(xs[8]).map(|i| i.base), Some(xs[8]));
        for x in xs.iter().enumerate().filter(|(i, _)| *i != 7).map(|(_, x)| *x).chain([big]) {
            a.free(&mut b, x).unwrap();
        }
        assert_eq!(a.live_count(), 0);
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        assert!(a.slots.iter().all(|&e| e == 0), "every slot entry is cleared");
        assert_eq!(a.free_fine.len(), a.fine.len(), "every shared-slot table is free for reuse");
    }

    #[test]
    fn short_blocks_across_slot_ends_free_by_their_start_record() {
        let (mut a, mut b) = setup(64 * MIB, 0, 0);
        // 900 KiB blocks packed at 4 KiB: most cross a 2 MiB slot end (the next slot's head),
        // some end inside their first slot; freed in an order that empties slots both ways.
        let r = req(900 << 10, NORMAL_ONLY);
        let xs: Vec<DeviceAddr> = (0..12).map(|_| a.allocate(&mut b, &r, APP).unwrap()).collect();
        let crossing = xs.iter().filter(|x| (x.as_u64() % CHUNK_BYTES) + (900 << 10) > CHUNK_BYTES).count();
        assert!(crossing >= 3, "some blocks reach into the next slot ({crossing})");
        let order = [5, 0, 11, 6, 1, 10, 2, 9, 3, 8, 4, 7];
        for (n, &k) in order.iter().enumerate() {
            let x = xs[k];
            assert_eq!(
                a.free(&mut b, DeviceAddr(x.as_u64() + 4096)),
                Err(FreeError::NotLive(NotLive::Interior { base: x }))
            );
            assert_eq!(a.free(&mut b, x).map(|i| i.base), Ok(x));
            assert_eq!(a.free(&mut b, x), Err(FreeError::NotLive(NotLive::Freed)));
            // The blocks still live are found by every address, the freed ones by none.
            for (j, &y) in xs.iter().enumerate() {
                let live = !order[..=n].contains(&j);
                for off in [0, 4096, (900 << 10) - 1] {
                    let want = live.then_some(y);
                    assert_eq!(a.find(DeviceAddr(y.as_u64() + off)).map(|i| i.base), want, "{j} + {off}");
                }
            }
        }
        assert_eq!(a.live_count(), 0);
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        assert!(a.slots.iter().all(|&e| e == 0), "every slot entry is cleared");
        assert_eq!(a.free_fine.len(), a.fine.len(), "every shared-slot table is free for reuse");
    }

    #[test]
    fn memory_pressure_releases_spares() {
        let (mut a, mut b) = setup(4 * MIB, 0, 0);
        a.set_keep_spare(true);
        // Two spare chunks of different classes hold 128 KiB.
        for size in [100, 5000] {
            let x = a.allocate(&mut b, &req(size, NORMAL_ONLY), APP).unwrap();
            a.free(&mut b, x).unwrap();
        }
        assert_eq!(a.spare_chunks(), 2);
        assert_eq!(b.frames.info().free_bytes, 4 * MIB - (128 << 10));
        // 4 MiB minus 64 KiB fits only once the spares are gone.
        let big = a.allocate(&mut b, &req(4 * MIB - (64 << 10) - 64, NORMAL_ONLY), APP).unwrap();
        assert_eq!(a.spare_chunks(), 0);
        assert_eq!(a.accounting().backed.current, 4 * MIB - (64 << 10));
        a.free(&mut b, big).unwrap();
        assert_eq!(b.frames.info().free_bytes, 4 * MIB);
    }

    #[test]
    fn normal_pages_survive_fragmentation() {
        let (mut a, mut b) = setup(16 * MIB, 0, 0);
        let r = req(256 << 10, NORMAL_ONLY);
        let xs: Vec<DeviceAddr> = (0..63).map(|_| a.allocate(&mut b, &r, APP).unwrap()).collect();
        for x in xs.iter().step_by(2) {
            a.free(&mut b, *x).unwrap();
        }
        // Free frames are scattered 256 KiB holes; 7 MiB still fits.
        let free = b.frames.info().free_bytes;
        assert!(free >= 7 * MIB);
        let big = a.allocate(&mut b, &req(7 * MIB, NORMAL_ONLY), APP).unwrap();
        assert_eq!(a.find(big).unwrap().usable_bytes, 7 * MIB + 32);
    }

    #[test]
    fn reservations_back_pages_on_demand() {
        let (mut a, mut b) = setup(64 * MIB, 4 * MIB, 0);
        let r = a.reserve_range(16 * MIB, 9).unwrap();
        assert_eq!(b.frames.info().free_bytes, 64 * MIB, "a reservation backs nothing");
        let page = |i: u64| VaRange::try_new(DeviceAddr(r.start().as_u64() + i * 2 * MIB), 2 * MIB).unwrap();
        for i in 0..3 {
            a.back_reserved(&mut b, page(i)).unwrap();
        }
        assert!(a.back_reserved(&mut b, page(0)).is_err(), "backed twice");
        let info = b.frames.info();
        assert_eq!(info.total_bytes - info.free_bytes, 6 * MIB);
        assert_eq!(info.huge_free_bytes, 0, "two 2 MiB pages, then 4 KiB pages");
        let comp = a.accounting().components.iter().find(|(c, _)| *c == 9).unwrap().1;
        assert_eq!(comp.current, 6 * MIB);
        assert_eq!(a.unreserve_range(r), Err(NotLive::Interior { base: r.start() }));
        for i in 0..3 {
            a.unback_reserved(&mut b, page(i)).unwrap();
        }
        assert!(a.unback_reserved(&mut b, page(0)).is_err());
        a.unreserve_range(r).unwrap();
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
        assert_eq!(a.accounting().backed.current, 0);
        let outside = VaRange::try_new(DeviceAddr(BASE + (32 << 30)), 2 * MIB).unwrap();
        assert!(a.back_reserved(&mut b, outside).is_err());
    }

    #[test]
    fn reservations_take_va_from_the_pool_window_once_set() {
        let (mut a, mut b) = setup(64 * MIB, 4 * MIB, 0);
        let inside = VaRange::try_new(DeviceAddr(BASE + (1 << 30)), 1 << 30).unwrap();
        assert!(!a.set_pool_window(inside), "overlaps the allocator's window");
        let held = a.reserve_range(2 * MIB, 9).unwrap();
        let pool = VaRange::try_new(DeviceAddr(BASE - (4 << 30)), 4 << 30).unwrap();
        assert!(!a.set_pool_window(pool), "a reservation is live");
        a.unreserve_range(held).unwrap();
        assert!(a.set_pool_window(pool));
        let r = a.reserve_range(8 * MIB, 9).unwrap();
        assert!(r.start().as_u64() >= pool.start().as_u64() && r.end() <= pool.end(), "{r:?}");
        let page = VaRange::try_new(r.start(), 2 * MIB).unwrap();
        a.back_reserved(&mut b, page).unwrap();
        assert_eq!(a.accounting().backed.current, 2 * MIB, "charged as before");
        a.unback_reserved(&mut b, page).unwrap();
        a.unreserve_range(r).unwrap();
        // The freed pool VA is reused: the same range again.
        assert_eq!(a.reserve_range(8 * MIB, 9).unwrap(), r);
    }

    #[test]
    fn components_and_policies_are_charged() {
        let (mut a, mut b) = setup(64 * MIB, 32 * MIB, 0);
        let p = a.allocate(&mut b, &req(2 * MIB, HUGE_FIRST), APP).unwrap();
        let q = a.allocate(&mut b, &req(1000, NORMAL_ONLY), 7).unwrap();
        let acct = a.accounting();
        let app = acct.components.iter().find(|(c, _)| *c == APP).unwrap().1;
        let other = acct.components.iter().find(|(c, _)| *c == 7).unwrap().1;
        assert_eq!(app.current, 2 * MIB + 32);
        assert_eq!(other.current, 1056);
        assert_eq!(acct.policies[0].current, 2 * MIB + 32);
        assert_eq!(acct.policies[2].current, 1056);
        a.free(&mut b, p).unwrap();
        a.free(&mut b, q).unwrap();
        let app = a.accounting().components.iter().find(|(c, _)| *c == APP).unwrap().1;
        assert_eq!(app, Usage { current: 0, peak: 2 * MIB + 32 });
        assert_eq!(a.release_all(&mut b), 0);
        a.trim(&mut b);
        assert_eq!(b.frames.info().free_bytes, 64 * MIB);
    }
}
