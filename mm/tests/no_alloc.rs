//! The allocation paths of `mm` allocate nothing on the heap in steady state: a counting global
//! allocator counts the heap allocations made by this thread while `DeviceAllocator` (with a
//! `FrameBacker` over `mm::phys`) churns through alloc/free pairs of slab objects, 4 KiB-page
//! blocks that share 2 MiB slots, huge-page blocks with 4 KiB-page tails, and the bare VA and
//! frame allocators do the same. Each workload first runs until its tables have reached their
//! high-water marks (a fixed seed, so the run is the same every time), then the same churn goes
//! on and must allocate nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use hal::{DeviceAddr, PageSize, SocProfile, VaRange};
use mm::device::{DeviceAllocator, FrameBacker, APP};
use mm::phys::{FrameAllocator, PhysConfig, PhysRun};
use mm::policy::{request, Api, Request, HUGE_FIRST, NORMAL_ONLY};
use mm::va::VaAllocator;

thread_local! {
    /// Heap allocations (alloc, alloc_zeroed, realloc) made by this thread.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting what each thread asks of it.
struct Counting;

fn count() {
    // `try_with`: a thread being torn down has no counter left, and must not panic here.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; counting touches a const
// thread-local `Cell`, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const BASE: u64 = 16 << 40;

/// Steps of churn before counting, and counted (under Miri only the bare allocators' test runs:
/// the device allocator's tables need far more warm-up than Miri can afford).
const WARM: usize = if cfg!(miri) { 300 } else { 60_000 };
const COUNTED: usize = if cfg!(miri) { 200 } else { 50_000 };

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Churns `live` allocations of the device allocator (each step frees a random one and
/// allocates the next request of a fixed list); returns the heap allocations of the counted
/// steps.
fn device_churn(reqs: &[Request], live: usize, total: u64, keep_spare: bool) -> u64 {
    let window = VaRange::try_new(DeviceAddr(BASE), 64 * GIB).unwrap();
    let frames = FrameAllocator::new(PhysConfig {
        total_bytes: total,
        huge_budget_bytes: total,
        giant_budget_bytes: 0,
    })
    .unwrap();
    let mut b = FrameBacker::new(frames);
    let mut a = DeviceAllocator::new(window);
    a.set_keep_spare(keep_spare);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut k = 0;
    let mut ptrs: Vec<DeviceAddr> =
        (0..live).map(|i| a.allocate(&mut b, &reqs[i % reqs.len()], APP).unwrap()).collect();
    let mut step = |a: &mut DeviceAllocator, b: &mut FrameBacker, ptrs: &mut [DeviceAddr]| {
        // CAST: below `live`.
        let i = rng.below(live as u64) as usize;
        a.free(b, ptrs[i]).unwrap();
        k = (k + 1) % reqs.len();
        ptrs[i] = a.allocate(b, &reqs[k], APP).unwrap();
    };
    for _ in 0..WARM {
        step(&mut a, &mut b, &mut ptrs);
    }
    let before = allocs();
    for _ in 0..COUNTED {
        step(&mut a, &mut b, &mut ptrs);
    }
    let made = allocs() - before;
    // Still exact after the churn.
    let info = b.frames.info();
    assert_eq!(a.accounting().backed.current, info.total_bytes - info.free_bytes);
    assert_eq!(a.live_count(), live);
    made
}

fn requests(policy: u32, pick: impl Fn(&mut Rng) -> u64) -> Vec<Request> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    (0..512).map(|_| request(Api::Align32, SocProfile::A2, pick(&mut rng), policy).unwrap()).collect()
}

#[test]
#[cfg_attr(miri, ignore = "its tables reach their high-water marks only after tens of thousands of steps")]
fn slab_churn_allocates_nothing() {
    let reqs = requests(HUGE_FIRST, |r| 1 + r.below(64 << 10));
    for keep_spare in [false, true] {
        assert_eq!(device_churn(&reqs, 256, 4 * GIB, keep_spare), 0, "keep_spare {keep_spare}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "its tables reach their high-water marks only after tens of thousands of steps")]
fn shared_slot_blocks_allocate_nothing() {
    // 4 KiB-page blocks of 64 KiB to 1 MiB share 2 MiB slots with their neighbours.
    let reqs = requests(NORMAL_ONLY, |r| (64 << 10) + 1 + r.below(MIB));
    assert_eq!(device_churn(&reqs, 128, 4 * GIB, false), 0);
}

#[test]
#[cfg_attr(miri, ignore = "its tables reach their high-water marks only after tens of thousands of steps")]
fn uniform_mix_allocates_nothing() {
    let reqs = requests(HUGE_FIRST, |r| 1 + r.below(MIB));
    assert_eq!(device_churn(&reqs, 256, 4 * GIB, true), 0);
}

#[test]
#[cfg_attr(miri, ignore = "its tables reach their high-water marks only after tens of thousands of steps")]
fn huge_blocks_with_tails_allocate_nothing() {
    let reqs = requests(HUGE_FIRST, |r| MIB + r.below(31 * MIB));
    assert_eq!(device_churn(&reqs, 16, 4 * GIB, false), 0);
}

#[test]
fn bare_va_and_frames_allocate_nothing() {
    let mut va = VaAllocator::new(VaRange::try_new(DeviceAddr(BASE), 64 * GIB).unwrap());
    let mut frames =
        FrameAllocator::new(PhysConfig { total_bytes: 4 * GIB, huge_budget_bytes: 0, giant_budget_bytes: 0 })
            .unwrap();
    let mut rng = Rng(7);
    let live = 128;
    let mut ranges: Vec<VaRange> =
        (0..live).map(|_| va.alloc(1 + rng.below(4 * MIB), 4096).unwrap()).collect();
    let mut runs: Vec<([PhysRun; 4], usize)> = (0..live)
        .map(|_| {
            let mut out = [PhysRun::default(); 4];
            let n = frames.alloc_pages_into(PageSize::Normal, 1 + rng.below(256), &mut out).unwrap();
            (out, n)
        })
        .collect();
    let mut step = |va: &mut VaAllocator, frames: &mut FrameAllocator, rng: &mut Rng| {
        // CAST: below `live`.
        let i = rng.below(live as u64) as usize;
        va.free(ranges[i]).unwrap();
        ranges[i] = va.alloc(1 + rng.below(4 * MIB), 4096).unwrap();
        let (out, n) = &mut runs[i];
        frames.free_pages(PageSize::Normal, &out[..*n]).unwrap();
        *n = frames.alloc_pages_into(PageSize::Normal, 1 + rng.below(256), out).unwrap();
    };
    for _ in 0..WARM {
        step(&mut va, &mut frames, &mut rng);
    }
    let before = allocs();
    for _ in 0..COUNTED {
        step(&mut va, &mut frames, &mut rng);
    }
    assert_eq!(allocs() - before, 0);
    assert_eq!(va.live_count(), live);
}
