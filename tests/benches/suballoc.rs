//! `mm`'s VA/sub-allocator core side by side with its peers: the crates `offset-allocator`,
//! `talc`, `buddy_system_allocator`, `linked_list_allocator` and the system `malloc`, all
//! driven through one adapter trait ([`SubAllocator`]) over the same operation streams: a
//! uniform 1 B–1 MiB mix, an RMM-style 1–16 MiB mix, and replays of every trace in
//! `../shared/traces/`. Reports median and p99 ns per alloc+free pair and peak reserved over
//! peak live bytes. The allocators of a workload take turns over three rounds, so that a slower
//! stretch of the machine falls on all of them alike. Prints one Markdown table; asserts
//! nothing about time.
//!
//! `mm` is `mm::device::DeviceAllocator` with frames from `mm::phys` (no driver), each request
//! made by `mm::policy::request(Api::Align32, SocProfile::A2, size, HUGE_FIRST)`; its reserved
//! bytes are the physical bytes it backed. `offset-allocator` manages numbers. `talc`,
//! `buddy_system_allocator` and `linked_list_allocator` manage a real arena (one populated
//! mapping of 4× their peak live bytes): to keep RAM modest their sizes are divided by a power
//! of two per workload (the table says by how much); reserved bytes are the arena's high-water mark for
//! `talc` and `linked_list_allocator`, and the power-of-two blocks handed out for the buddy heap
//! (which takes blocks from anywhere in its arena). `malloc`'s reserved bytes are glibc's
//! `arena + hblkhd` over its value at the start, after `malloc_trim`: process-wide and
//! approximate (memory it kept from earlier runs can bring the ratio below 1).
//! The PyTorch caching allocator's published ratios are quoted on the traces that have them.
//!
//! mm's two parts are also measured alone on the same streams, taking turns with the rest: a
//! block of mm's own is a VA range and frames, two separate resources (the design's memory
//! manager principles), so `mm::va` alone takes each request's VA range as the device allocator
//! does and `mm::phys` alone takes its frames as the device allocator backs them; a row adds
//! their two medians. Requests of slab size (at most 64 KiB: a fifth to a quarter of a trace's)
//! are slab objects in the device allocator, but blocks in the two rows alone. The rows show
//! where a pair's time goes: in the frames first, in the VA next, and little in the device
//! allocator's own records.
//!
//! Run with `cargo bench -p aclrs-tests --bench suballoc` (add `-- --quick` for a short run;
//! `ACLRS_SUBALLOC_ONLY=trace` keeps the workloads whose name contains `trace`).

use std::alloc::Layout;
use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::time::Instant;

use aclrs_tests::bench::{quick, Stats, Table};
use hal::{DeviceAddr, PageSize, SocProfile, VaRange};
use mm::device::{DeviceAllocator, FrameBacker, APP};
use mm::phys::{FrameAllocator, PhysConfig, PhysRun};
use mm::policy::{request, Api, PagePlan, Request, HUGE_FIRST};
use mm::va::VaAllocator;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// Alignment asked of the arena peers (mm's `Align32` API pads to 32 bytes).
const ALIGN: usize = 32;
/// The most peak live bytes an arena peer is given: larger workloads are scaled down.
const ARENA_LIVE_BUDGET: u64 = 512 * MIB;

/// One allocator driven by the benchmark.
trait SubAllocator {
    /// What `free` needs back.
    type Handle: Copy;
    /// Allocates `size` bytes (at least 1).
    fn alloc(&mut self, size: u64) -> Option<Self::Handle>;
    /// Frees a block `alloc` returned for `size` bytes.
    fn free(&mut self, h: Self::Handle, size: u64);
    /// Bytes the allocator holds now (backed frames, arena high-water mark, or malloc's).
    fn reserved_bytes(&self) -> u64;
}

/// mm's device allocator with frames from `mm::phys`.
struct Mm {
    a: DeviceAllocator,
    b: FrameBacker,
}

impl Mm {
    fn new(total: u64) -> Self {
        let window = VaRange::try_new(DeviceAddr(16 << 40), 4 * total.max(GIB)).expect("window");
        let frames = FrameAllocator::new(PhysConfig {
            total_bytes: total,
            huge_budget_bytes: total,
            giant_budget_bytes: 0,
        })
        .expect("frames");
        Self { a: DeviceAllocator::new(window), b: FrameBacker::new(frames) }
    }
}

impl SubAllocator for Mm {
    type Handle = DeviceAddr;

    fn alloc(&mut self, size: u64) -> Option<DeviceAddr> {
        let req = request(Api::Align32, SocProfile::A2, size, HUGE_FIRST).ok()?;
        self.a.allocate(&mut self.b, &req, APP).ok()
    }

    fn free(&mut self, h: DeviceAddr, _size: u64) {
        self.a.free(&mut self.b, h).expect("mm free");
    }

    fn reserved_bytes(&self) -> u64 {
        self.a.accounting().backed.current
    }
}

/// `mm::va` alone: for each request, the VA range mm's device allocator takes for a block of
/// its own (its usable bytes rounded up to the page size of its plan, at a multiple of that page
/// size, from a window of 4× the memory) through the handle path the device allocator uses
/// ([`VaAllocator::alloc_handle`]). No frames, no records. Its VA span is not memory: the table
/// shows no memory ratio for it.
struct VaOnly {
    v: VaAllocator,
}

impl VaOnly {
    fn new(total: u64) -> Self {
        let window = VaRange::try_new(DeviceAddr(16 << 40), 4 * total.max(GIB)).expect("window");
        Self { v: VaAllocator::new(window) }
    }
}

impl SubAllocator for VaOnly {
    type Handle = (VaRange, u32);

    fn alloc(&mut self, size: u64) -> Option<Self::Handle> {
        let req = request(Api::Align32, SocProfile::A2, size, HUGE_FIRST).ok()?;
        let page = match req.plan {
            PagePlan::HugeFirst | PagePlan::HugeOnly => PageSize::Huge,
            PagePlan::NormalOnly => PageSize::Normal,
            PagePlan::Giant => PageSize::Giant,
        };
        self.v.alloc_handle(page.round_up(req.usable_bytes)?, page.bytes()).ok()
    }

    fn free(&mut self, (r, h): Self::Handle, _size: u64) {
        self.v.free_handle(r, h).expect("mm::va free");
    }

    fn reserved_bytes(&self) -> u64 {
        0
    }
}

/// Runs one [`PhysOnly`] record keeps per page size.
const PHYS_RUNS: usize = 8;

/// What [`PhysOnly`] took for one request: a joint run (2 MiB pages and a 4 KiB-page tail), or
/// `first` runs of `page`-size pages then runs of 4 KiB pages (the tail), `n` runs in all.
#[derive(Clone, Copy)]
struct Frames {
    joint: bool,
    page: PageSize,
    first: u8,
    n: u8,
    runs: [PhysRun; PHYS_RUNS],
}

impl Default for Frames {
    fn default() -> Self {
        Self { joint: false, page: PageSize::Normal, first: 0, n: 0, runs: [PhysRun::default(); PHYS_RUNS] }
    }
}

/// `mm::phys` alone: the frames of each request as mm's device allocator backs a block of its
/// own (HUGE_FIRST: 2 MiB pages for every whole 2 MiB and a 4 KiB-page tail, in one run where
/// the frame allocator has one, 4 KiB pages for everything when 2 MiB pages run out; the other
/// plans: pages of their size), with the quick reuse `FrameBacker` turns on, and no VA, slab or
/// address index: a request's runs go into a record of a table whose index is the handle (as
/// `FrameBacker` keeps them). Reserved bytes are the frames allocated.
struct PhysOnly {
    f: FrameAllocator,
    recs: Vec<Frames>,
    free_recs: Vec<u32>,
}

impl PhysOnly {
    fn new(total: u64) -> Self {
        let mut f = FrameAllocator::new(PhysConfig {
            total_bytes: total,
            huge_budget_bytes: total,
            giant_budget_bytes: 0,
        })
        .expect("frames");
        f.set_quick_reuse(true);
        Self { f, recs: Vec::new(), free_recs: Vec::new() }
    }

    /// `bytes` (a multiple of `page`) of `page`-size pages into `runs`; how many runs.
    fn pages(f: &mut FrameAllocator, page: PageSize, bytes: u64, runs: &mut [PhysRun]) -> Option<usize> {
        if bytes == 0 {
            return Some(0);
        }
        f.alloc_pages_into(page, bytes / page.bytes(), runs).ok()
    }

    /// Frames for `req` from `f`, written into `fr` in place; `None` (nothing taken) on failure.
    fn take(f: &mut FrameAllocator, req: &Request, fr: &mut Frames) -> Option<()> {
        let (huge, normal) = (PageSize::Huge.bytes(), PageSize::Normal.bytes());
        let normal_len = req.usable_bytes.next_multiple_of(normal);
        fr.joint = false;
        let (page, first_len, tail) = match req.plan {
            PagePlan::HugeFirst => {
                let mut whole = req.usable_bytes / huge * huge;
                if normal_len - whole == huge {
                    whole = normal_len;
                }
                let tail = normal_len - whole;
                if whole > 0 && tail > 0 {
                    if let Ok(Some(run)) = f.alloc_huge_with_tail(whole / huge, tail / normal) {
                        (fr.joint, fr.page, fr.n, fr.runs[0]) = (true, PageSize::Huge, 1, run);
                        return Some(());
                    }
                }
                if whole == 0 {
                    (PageSize::Normal, normal_len, 0)
                } else {
                    (PageSize::Huge, whole, tail)
                }
            }
            PagePlan::HugeOnly => (PageSize::Huge, req.usable_bytes.next_multiple_of(huge), 0),
            PagePlan::NormalOnly => (PageSize::Normal, normal_len, 0),
            PagePlan::Giant => (PageSize::Giant, PageSize::Giant.round_up(req.usable_bytes)?, 0),
        };
        let (page, first_len, tail, h) = match Self::pages(f, page, first_len, &mut fr.runs) {
            Some(h) => (page, first_len, tail, h),
            // Out of 2 MiB pages: 4 KiB pages for everything, as mm falls back.
            None if req.plan == PagePlan::HugeFirst => {
                (PageSize::Normal, normal_len, 0, Self::pages(f, PageSize::Normal, normal_len, &mut fr.runs)?)
            }
            None => return None,
        };
        debug_assert!(first_len > 0);
        let Some(t) = Self::pages(f, PageSize::Normal, tail, &mut fr.runs[h..]) else {
            f.free_pages(page, &fr.runs[..h]).expect("mm::phys free");
            return None;
        };
        // CAST: at most PHYS_RUNS.
        (fr.page, fr.first, fr.n) = (page, h as u8, (h + t) as u8);
        Some(())
    }
}

impl SubAllocator for PhysOnly {
    type Handle = u32;

    fn alloc(&mut self, size: u64) -> Option<u32> {
        let req = request(Api::Align32, SocProfile::A2, size, HUGE_FIRST).ok()?;
        let i = self.free_recs.pop().unwrap_or_else(|| {
            self.recs.push(Frames::default());
            // CAST: fewer than 2^32 live requests.
            (self.recs.len() - 1) as u32
        });
        if Self::take(&mut self.f, &req, &mut self.recs[i as usize]).is_none() {
            self.free_recs.push(i);
            return None;
        }
        Some(i)
    }

    fn free(&mut self, i: u32, _size: u64) {
        let fr = &self.recs[i as usize];
        let (h, n) = (usize::from(fr.first), usize::from(fr.n));
        let r = if fr.joint {
            self.f.free_huge_with_tail(fr.runs[0])
        } else {
            self.f
                .free_pages(fr.page, &fr.runs[..h])
                .and_then(|()| self.f.free_pages(PageSize::Normal, &fr.runs[h..n]))
        };
        r.expect("mm::phys free");
        self.free_recs.push(i);
    }

    fn reserved_bytes(&self) -> u64 {
        self.f.allocated_bytes()
    }
}

/// `offset-allocator` over `units` units of `unit` bytes.
struct Offset {
    a: offset_allocator::Allocator<u32>,
    unit: u64,
    high: u64,
}

impl SubAllocator for Offset {
    type Handle = offset_allocator::Allocation<u32>;

    fn alloc(&mut self, size: u64) -> Option<Self::Handle> {
        let units = u32::try_from(size.div_ceil(self.unit)).ok()?;
        let h = self.a.allocate(units)?;
        self.high = self.high.max(u64::from(h.offset) + u64::from(units));
        Some(h)
    }

    fn free(&mut self, h: Self::Handle, _size: u64) {
        self.a.free(h);
    }

    fn reserved_bytes(&self) -> u64 {
        self.high * self.unit
    }
}

/// One anonymous mapping, populated up front so that no first-touch page fault lands in a
/// timed loop (at most about 1.1 GiB, one workload at a time).
struct Arena {
    base: NonNull<u8>,
    len: usize,
}

impl Arena {
    fn new(len: u64) -> Self {
        let len = usize::try_from(len).expect("arena size");
        // SAFETY: an anonymous private mapping at an address of the kernel's choice.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "mmap of a {len}-byte arena failed");
        Self { base: NonNull::new(p.cast::<u8>()).expect("mmap returned null"), len }
    }

    fn offset_end(&self, p: NonNull<u8>, size: u64) -> u64 {
        // CAST: addresses within the arena; the difference fits in u64.
        (p.as_ptr() as usize - self.base.as_ptr() as usize) as u64 + size
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; no allocator that uses it outlives the arena's
        // borrow.
        unsafe { libc::munmap(self.base.as_ptr().cast::<libc::c_void>(), self.len) };
    }
}

fn layout(size: u64) -> Layout {
    Layout::from_size_align(usize::try_from(size).expect("size"), ALIGN).expect("layout")
}

/// `talc` claiming the whole arena.
struct Talc<'a> {
    t: talc::base::Talc<talc::source::Manual, talc::DefaultBinning>,
    arena: &'a Arena,
    high: u64,
}

impl<'a> Talc<'a> {
    fn new(arena: &'a Arena) -> Self {
        let mut t = talc::base::Talc::new(talc::source::Manual);
        // SAFETY: the arena is mapped, unused by anything else, and outlives `t`.
        let claimed = unsafe { t.claim(arena.base.as_ptr(), arena.len) };
        assert!(claimed.is_some(), "talc: claim failed");
        Self { t, arena, high: 0 }
    }
}

impl SubAllocator for Talc<'_> {
    type Handle = NonNull<u8>;

    fn alloc(&mut self, size: u64) -> Option<NonNull<u8>> {
        // SAFETY: the size is nonzero.
        let p = unsafe { self.t.allocate(layout(size)) }?;
        self.high = self.high.max(self.arena.offset_end(p, size));
        Some(p)
    }

    fn free(&mut self, h: NonNull<u8>, size: u64) {
        // SAFETY: `h` came from `allocate` with this layout and is freed once.
        unsafe { self.t.deallocate(h.as_ptr(), layout(size)) };
    }

    fn reserved_bytes(&self) -> u64 {
        self.high
    }
}

/// `buddy_system_allocator::Heap` over the whole arena.
struct Buddy {
    h: buddy_system_allocator::Heap<40>,
}

impl Buddy {
    fn new(arena: &Arena) -> Self {
        let mut h = buddy_system_allocator::Heap::<40>::empty();
        // SAFETY: the arena is mapped, unused by anything else, and outlives `h`.
        unsafe { h.init(arena.base.as_ptr() as usize, arena.len) };
        Self { h }
    }
}

impl SubAllocator for Buddy {
    type Handle = NonNull<u8>;

    fn alloc(&mut self, size: u64) -> Option<NonNull<u8>> {
        self.h.alloc(layout(size)).ok()
    }

    fn free(&mut self, h: NonNull<u8>, size: u64) {
        // SAFETY: `h` came from `alloc` with this layout and is freed once.
        unsafe { self.h.dealloc(h, layout(size)) };
    }

    /// The bytes of the power-of-two blocks handed out: a buddy heap takes blocks from
    /// anywhere in its arena, so its high-water mark says nothing; this is its lower bound.
    fn reserved_bytes(&self) -> u64 {
        // CAST: byte counts.
        self.h.stats_alloc_actual() as u64
    }
}

/// `linked_list_allocator::Heap` over the whole arena.
struct LinkedList<'a> {
    h: linked_list_allocator::Heap,
    arena: &'a Arena,
    high: u64,
}

impl<'a> LinkedList<'a> {
    fn new(arena: &'a Arena) -> Self {
        let mut h = linked_list_allocator::Heap::empty();
        // SAFETY: the arena is mapped, unused by anything else, and outlives `h`.
        unsafe { h.init(arena.base.as_ptr(), arena.len) };
        Self { h, arena, high: 0 }
    }
}

impl SubAllocator for LinkedList<'_> {
    type Handle = NonNull<u8>;

    fn alloc(&mut self, size: u64) -> Option<NonNull<u8>> {
        let p = self.h.allocate_first_fit(layout(size)).ok()?;
        self.high = self.high.max(self.arena.offset_end(p, size));
        Some(p)
    }

    fn free(&mut self, h: NonNull<u8>, size: u64) {
        // SAFETY: `h` came from `allocate_first_fit` with this layout and is freed once.
        unsafe { self.h.deallocate(h, layout(size)) };
    }

    fn reserved_bytes(&self) -> u64 {
        self.high
    }
}

/// The system `malloc` (glibc); reserved bytes are process-wide, over a baseline.
struct Malloc {
    base: u64,
}

fn malloc_held() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let mi = unsafe { libc::mallinfo2() };
    // CAST: byte counts.
    (mi.arena + mi.hblkhd) as u64
}

impl Malloc {
    fn new() -> Self {
        // SAFETY: returns free memory at the top of the heap to the system; no pointers move.
        unsafe { libc::malloc_trim(0) };
        Self { base: malloc_held() }
    }
}

impl SubAllocator for Malloc {
    type Handle = NonNull<libc::c_void>;

    fn alloc(&mut self, size: u64) -> Option<Self::Handle> {
        // SAFETY: plain malloc; the block is freed once by `free`.
        NonNull::new(unsafe { libc::malloc(usize::try_from(size).ok()?) })
    }

    fn free(&mut self, h: Self::Handle, _size: u64) {
        // SAFETY: `h` came from malloc and is freed once.
        unsafe { libc::free(h.as_ptr()) };
    }

    fn reserved_bytes(&self) -> u64 {
        malloc_held().saturating_sub(self.base)
    }
}

/// An operation stream: `(slot, size)` with size 0 meaning "free the block in slot".
#[derive(Clone)]
struct Ops {
    /// Slots used.
    slots: usize,
    /// Untimed set-up (churn workloads: the initial live set).
    fill: Vec<(u32, u64)>,
    /// Timed operations.
    ops: Vec<(u32, u64)>,
    /// Allocations among `ops` (pairs).
    pairs: usize,
    /// Peak of live requested bytes over `fill` then `ops`.
    peak_live: u64,
}

impl Ops {
    fn scaled(&self, scale: u64) -> Ops {
        let s = |v: &Vec<(u32, u64)>| -> Vec<(u32, u64)> {
            v.iter().map(|&(i, b)| (i, if b == 0 { 0 } else { (b / scale).max(1) })).collect()
        };
        let (fill, ops) = (s(&self.fill), s(&self.ops));
        let peak_live = peak_live(self.slots, &fill, &ops);
        Ops { slots: self.slots, fill, ops, pairs: self.pairs, peak_live }
    }
}

fn peak_live(slots: usize, fill: &[(u32, u64)], ops: &[(u32, u64)]) -> u64 {
    let mut sizes = vec![0u64; slots];
    let (mut live, mut peak) = (0u64, 0u64);
    for &(i, b) in fill.iter().chain(ops) {
        let i = i as usize;
        if b == 0 {
            live -= sizes[i];
            sizes[i] = 0;
        } else {
            live += b;
            sizes[i] = b;
            peak = peak.max(live);
        }
    }
    peak
}

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Steady-state churn: `live` blocks of sizes in `lo..=hi`; each pair frees a random block
/// and allocates a new one in its place.
fn churn(lo: u64, hi: u64, live: usize, pairs: usize) -> Ops {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // CAST: slot indices are small.
    let fill: Vec<(u32, u64)> = (0..live).map(|i| (i as u32, lo + rng.below(hi - lo + 1))).collect();
    let mut ops = Vec::with_capacity(2 * pairs);
    for _ in 0..pairs {
        // CAST: `live` is small.
        let i = rng.below(live as u64) as u32;
        ops.push((i, 0));
        ops.push((i, lo + rng.below(hi - lo + 1)));
    }
    let peak_live = peak_live(live, &fill, &ops);
    Ops { slots: live, fill, ops, pairs, peak_live }
}

/// A trace as an operation stream (ids mapped to dense slots).
fn trace(path: &std::path::Path) -> Option<Ops> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut slot_of: HashMap<u64, u32> = HashMap::new();
    let mut free_slots: Vec<u32> = Vec::new();
    let mut slots = 0u32;
    let mut ops = Vec::new();
    let mut pairs = 0;
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["a", id, bytes, ..] => {
                let s = free_slots.pop().unwrap_or_else(|| {
                    slots += 1;
                    slots - 1
                });
                slot_of.insert(id.parse().ok()?, s);
                ops.push((s, bytes.parse::<u64>().ok()?.max(1)));
                pairs += 1;
            }
            ["f", id] => {
                let s = slot_of.remove(&id.parse().ok()?)?;
                free_slots.push(s);
                ops.push((s, 0));
            }
            _ => return None,
        }
    }
    let peak_live = peak_live(slots as usize, &[], &ops);
    Some(Ops { slots: slots as usize, fill: Vec::new(), ops, pairs, peak_live })
}

/// Runs `ops` on `a` (`fill` first, untimed), returning ns per pair for each `chunk` of
/// timed operations, or `None` when an allocation fails. Blocks still live at the end are
/// freed, untimed.
fn run_timed<A: SubAllocator>(a: &mut A, ops: &Ops, chunk: usize) -> Option<Vec<f64>> {
    let mut live: Vec<Option<(A::Handle, u64)>> = vec![None; ops.slots];
    let mut step = |a: &mut A, (i, b): (u32, u64)| -> Option<()> {
        let i = i as usize;
        if b == 0 {
            let (h, size) = live[i].take()?;
            a.free(h, size);
        } else {
            live[i] = Some((a.alloc(b)?, b));
        }
        Some(())
    };
    for &op in &ops.fill {
        step(a, op)?;
    }
    let mut samples = Vec::new();
    let mut failed = false;
    for c in ops.ops.chunks(chunk) {
        let allocs = c.iter().filter(|o| o.1 != 0).count().max(1);
        let t = Instant::now();
        for &op in c {
            failed |= step(a, op).is_none();
        }
        // CAST: counts are small.
        samples.push(t.elapsed().as_nanos() as f64 / allocs as f64);
        if failed {
            break;
        }
    }
    black_box(&live);
    for (h, size) in live.iter_mut().filter_map(Option::take) {
        a.free(h, size);
    }
    (!failed).then_some(samples)
}

/// The most timed operations the memory pass replays (it polls after every allocation).
const MEMORY_PASS_OPS: usize = 100_000;

/// Peak reserved and peak live bytes over `fill` and the first [`MEMORY_PASS_OPS`] timed
/// operations, polled after every allocation (untimed); `None` when an allocation fails.
fn run_reserved<A: SubAllocator>(a: &mut A, ops: &Ops) -> Option<(u64, u64)> {
    let mut live: Vec<Option<(A::Handle, u64)>> = vec![None; ops.slots];
    let (mut peak, mut bytes, mut peak_live) = (0, 0, 0);
    let n = ops.ops.len().min(MEMORY_PASS_OPS);
    for &(i, b) in ops.fill.iter().chain(&ops.ops[..n]) {
        let i = i as usize;
        if b == 0 {
            let (h, size) = live[i].take()?;
            a.free(h, size);
            bytes -= size;
        } else {
            live[i] = Some((a.alloc(b)?, b));
            bytes += b;
            peak_live = peak_live.max(bytes);
            peak = peak.max(a.reserved_bytes());
        }
    }
    for (h, size) in live.iter_mut().filter_map(Option::take) {
        a.free(h, size);
    }
    Some((peak, peak_live))
}

/// How one workload is timed.
#[derive(Clone, Copy)]
struct Plan {
    /// Per round ([`ROUNDS`]): churn: one allocator, operations in chunks, the first `warmup`
    /// chunks untimed; trace: a fresh allocator per replay, `warmup` replays untimed, then
    /// `samples`.
    churn: bool,
    warmup: usize,
    samples: usize,
    chunk: usize,
}

struct Row {
    peer: String,
    stats: Option<Stats>,
    ratio: Option<f64>,
    /// False when `ACLRS_SUBALLOC_PEERS` left this allocator out.
    measured: bool,
}

/// One round of `plan` on fresh allocators from `make`: the ns-per-pair samples (`None` when an
/// allocation failed) and, with `memory`, peak reserved over peak live from an untimed pass
/// first (`None` when that pass failed, which ends the round).
fn measure<A: SubAllocator>(
    mut make: impl FnMut() -> A,
    ops: &Ops,
    plan: Plan,
    memory: bool,
) -> (Option<Vec<f64>>, Option<f64>) {
    let mut ratio = None;
    if memory {
        // A failed allocation (an arena too small) shows in the table, not as a panic.
        let Some((reserved, live)) = run_reserved(&mut make(), ops) else { return (None, None) };
        // CAST: byte counts as a ratio.
        ratio = Some(reserved as f64 / live as f64);
    }
    let samples = if plan.churn {
        let mut a = make();
        match run_timed(&mut a, ops, plan.chunk) {
            Some(s) => s[plan.warmup.min(s.len() - 1)..].to_vec(),
            None => return (None, ratio),
        }
    } else {
        let mut s = Vec::new();
        for k in 0..plan.warmup + plan.samples {
            let mut a = make();
            let Some(t) = run_timed(&mut a, ops, usize::MAX) else { return (None, ratio) };
            if k >= plan.warmup {
                s.extend(t);
            }
        }
        s
    };
    (Some(samples), ratio)
}

/// Power-of-two divisor bringing `peak_live` within the arena budget.
fn arena_scale(peak_live: u64) -> u64 {
    peak_live.div_ceil(ARENA_LIVE_BUDGET).next_power_of_two()
}

/// Rows of mm at the top of a workload: the device allocator, then its VA core and its frame
/// allocator each alone (not peers: the best peer is found among the rows after them).
const MM_ROWS: usize = 3;

/// Rounds of every workload: the allocators take turns round by round (each round a fresh
/// allocator, its warm-up and a share of the samples), so that a stretch of the run in which
/// the machine is slower falls on every allocator alike, as the task-submission benchmarks
/// take turns with their floors.
const ROUNDS: usize = 3;

/// One allocator's round: `true` for the first (which also measures memory).
type Round<'a> = Box<dyn FnMut(bool) -> (Option<Vec<f64>>, Option<f64>) + 'a>;

/// All allocators on one workload, taking turns over [`ROUNDS`] rounds.
fn workload(ops: &Ops, plan: Plan) -> (u64, Vec<Row>) {
    // ACLRS_SUBALLOC_PEERS=<text> measures only the allocators whose name contains it (for
    // profiling one of them); the others show as dashes.
    let peers = std::env::var("ACLRS_SUBALLOC_PEERS").ok();
    let wanted = |peer: &str| peers.as_deref().is_none_or(|p| peer.contains(p));
    let total = (ops.peak_live * 3 / 2).next_multiple_of(GIB).max(4 * GIB);
    // offset-allocator: u32 units, the smallest power of two that spans 4× peak live.
    let span = 4 * ops.peak_live + 64 * MIB;
    let unit = span.div_ceil(u64::from(u32::MAX)).next_power_of_two();
    let units = u32::try_from(span / unit).unwrap_or(u32::MAX);
    let max_allocs = u32::try_from(2 * ops.slots + 1024).unwrap_or(u32::MAX);
    let scale = arena_scale(ops.peak_live);
    let small = if scale == 1 { ops.clone() } else { ops.scaled(scale) };
    // Arena peers: 4× peak live plus slack; pages cost RAM only where the allocators touch.
    // They take turns on the one arena, each on a fresh allocator over it.
    let arena = Arena::new(4 * small.peak_live + 64 * MIB);
    let (arena, small) = (&arena, &small);
    let mut all: Vec<(&str, Round)> = vec![
        ("mm (DeviceAllocator)", Box::new(|m| measure(|| Mm::new(total), ops, plan, m))),
        (
            "mm::va alone (each request's VA as mm takes it)",
            Box::new(|m| measure(|| VaOnly::new(total), ops, plan, m)),
        ),
        (
            "mm::phys alone (each request's frames as mm backs them)",
            Box::new(|m| measure(|| PhysOnly::new(total), ops, plan, m)),
        ),
        (
            "offset-allocator",
            Box::new(|m| {
                let make = || Offset {
                    a: offset_allocator::Allocator::with_max_allocs(units, max_allocs),
                    unit,
                    high: 0,
                };
                measure(make, ops, plan, m)
            }),
        ),
        ("talc", Box::new(|m| measure(|| Talc::new(arena), small, plan, m))),
        ("buddy_system_allocator", Box::new(|m| measure(|| Buddy::new(arena), small, plan, m))),
        ("linked_list_allocator", Box::new(|m| measure(|| LinkedList::new(arena), small, plan, m))),
        ("malloc (glibc)", Box::new(|m| measure(Malloc::new, ops, plan, m))),
    ];
    // Per allocator: its samples over the rounds, its memory ratio, whether a round failed.
    let mut got: Vec<(Vec<f64>, Option<f64>, bool)> = all.iter().map(|_| (Vec::new(), None, false)).collect();
    for round in 0..ROUNDS {
        for ((peer, run), (samples, ratio, failed)) in all.iter_mut().zip(&mut got) {
            if !wanted(peer) || *failed {
                continue;
            }
            let (s, r) = run(round == 0);
            if round == 0 {
                *ratio = r;
            }
            match s {
                Some(s) => samples.extend(s),
                None => *failed = true,
            }
        }
    }
    let rows = all
        .iter()
        .zip(got)
        .map(|((peer, _), (samples, ratio, failed))| Row {
            peer: (*peer).to_owned(),
            stats: (!failed && !samples.is_empty()).then(|| Stats::of(&samples)),
            ratio,
            measured: wanted(peer),
        })
        .collect();
    (scale, rows)
}

/// `../shared/traces/` next to the workspace, or the directory `ACLRS_TRACES_DIR` names.
fn traces_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ACLRS_TRACES_DIR") {
        return PathBuf::from(dir);
    }
    aclrs_tests::workspace().parent().map(|p| p.join("shared/traces")).unwrap_or_default()
}

fn main() {
    let q = quick();
    let mut table = Table::new(&[
        "workload",
        "allocator",
        "p50 ns/pair",
        "p99 ns/pair",
        "spread",
        "p50 vs best peer",
        "peak reserved / peak live",
        "target",
    ]);
    let (pairs, chunk) = if q { (60_000, 5_000) } else { (400_000, 10_000) };
    let churn_plan = Plan { churn: true, warmup: 2, samples: 0, chunk: 2 * chunk };
    // Trace replays: one warm-up and a third of the samples per round.
    let trace_plan = Plan { churn: false, warmup: 1, samples: if q { 1 } else { 4 }, chunk: 0 };
    let mut work: Vec<(String, Ops, Plan, &str, &str)> = vec![
        (
            "uniform 1 B–1 MiB, 1024 live".to_owned(),
            churn(1, MIB, 1024, pairs),
            churn_plan,
            "≤ 50 ns",
            "≤ 1.01",
        ),
        (
            "RMM-style 1–16 MiB, 128 live".to_owned(),
            churn(MIB, 16 * MIB, 128, pairs / 2),
            Plan { chunk, ..churn_plan },
            "≤ 50 ns",
            "≤ 1.01",
        ),
    ];
    let dir = traces_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "trace")).collect()
        })
        .unwrap_or_default();
    files.sort();
    if files.is_empty() {
        eprintln!("suballoc: no traces found in {}", dir.display());
    }
    for f in &files {
        let name = f.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match trace(f) {
            Some(ops) => work.push((format!("trace {name}"), ops, trace_plan, "≤ 50 ns", "≤ 1.01")),
            None => eprintln!("suballoc: could not read {}", f.display()),
        }
    }
    // ACLRS_SUBALLOC_ONLY=<text> keeps the workloads whose name contains it (for profiling).
    if let Ok(only) = std::env::var("ACLRS_SUBALLOC_ONLY") {
        work.retain(|w| w.0.contains(&only));
    }
    for (name, ops, plan, t_ns, t_mem) in &work {
        let (scale, rows) = workload(ops, *plan);
        let best_peer =
            rows.iter().skip(MM_ROWS).filter_map(|r| r.stats.map(|s| s.median)).fold(f64::INFINITY, f64::min);
        for (k, r) in rows.iter().enumerate() {
            let arena_peer = (MM_ROWS + 1..=MM_ROWS + 3).contains(&k);
            let peer = if arena_peer && scale > 1 {
                format!("{} (sizes ÷{scale})", r.peer)
            } else {
                r.peer.clone()
            };
            let dash = || "–".to_owned();
            table.row(vec![
                name.clone(),
                peer,
                r.stats.map_or_else(dash, |s| format!("{:.1}", s.median)),
                r.stats.map_or_else(dash, |s| format!("{:.1}", s.p99)),
                r.stats.map_or_else(dash, |s| s.spread(1)),
                r.stats
                    .filter(|_| best_peer.is_finite())
                    .map_or_else(dash, |s| format!("{:.2}×", s.median / best_peer)),
                match (r.measured, r.ratio) {
                    (false, _) => dash(),
                    // VA is not memory.
                    _ if k == 1 => dash(),
                    (true, None) => "out of memory".to_owned(),
                    (true, Some(v)) => format!("{v:.4}"),
                },
                if k == 0 { format!("{t_ns}, {t_mem}") } else { dash() },
            ]);
        }
        // A block of mm's own is a VA range and frames, two separate resources (DESIGN.md): the
        // two parts alone, added, against the whole device allocator and the peers.
        if let (Some(va), Some(phys)) = (rows[1].stats, rows[2].stats) {
            let floor = va.median + phys.median;
            let dash = "–".to_owned();
            table.row(vec![
                name.clone(),
                "mm::va alone + mm::phys alone (p50s added)".to_owned(),
                format!("{floor:.1}"),
                dash.clone(),
                dash.clone(),
                if best_peer.is_finite() { format!("{:.2}×", floor / best_peer) } else { dash.clone() },
                dash.clone(),
                dash,
            ]);
        }
        let pytorch = [("trace ctx128_forward", "1.031"), ("trace ctx128_fullstep", "1.150")];
        if let Some((_, v)) = pytorch.iter().find(|(n, _)| n == name) {
            let dash = "–".to_owned();
            table.row(vec![
                name.clone(),
                "PyTorch caching allocator (published, traces README)".to_owned(),
                dash.clone(),
                dash.clone(),
                dash.clone(),
                dash.clone(),
                (*v).to_owned(),
                dash,
            ]);
        }
        eprintln!("suballoc: {name} done");
    }
    table.print(
        "suballoc",
        "VA/sub-allocator core: mm against its peers, ns per alloc+free pair and peak reserved / peak live",
    );
}
