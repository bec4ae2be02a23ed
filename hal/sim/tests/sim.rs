//! Behaviour of the software NPU (`hal_sim::Sim`) through the `hal` driver traits.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hal::layout::{
    device_window_base, host_window_base, pool_slice_base, pool_window_base, HOST_WINDOW_SIZE,
};
use hal::{
    BackRequest, CopyEngine, DeviceAddr, DeviceControl, DeviceId, DeviceInfo, ErrorKind, MemAttr,
    MemoryBacking, MemoryInfo, PageSize, PhysHandle, PhysicalMemory, PinnedHost, QueueId, Queues, SocProfile,
    TaskDesc, TaskStatus, VaRange,
};
use hal_sim::{Sim, SimConfig, SimError};

/// The completed sequence of `q` and the failure taken from it (what one call answered before
/// reading progress and taking an error became two).
fn done<Q: hal::Queues + ?Sized>(drv: &Q, dev: hal::DeviceId, q: hal::QueueId) -> (u64, TaskStatus) {
    let seq = drv.progress(dev, q).expect("progress").completed;
    (seq, drv.take_error(dev, q).expect("take error").unwrap_or(TaskStatus::Ok))
}

/// Only one `Sim` may exist per process (it reserves fixed VA windows): every test holds this.
static LOCK: Mutex<()> = Mutex::new(());

const D0: DeviceId = DeviceId(0);
const D1: DeviceId = DeviceId(1);
const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// A running `Sim` plus the process-wide lock; the `Sim` is dropped before the lock.
struct Fixture {
    sim: Sim,
    _guard: MutexGuard<'static, ()>,
}

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The standard test machine: 256 MiB of HBM, 64 MiB huge budget, no giant pages.
fn config(name: &str) -> SimConfig {
    SimConfig {
        instance: format!("simtest-{}-{name}", std::process::id()),
        hbm_bytes: 256 * MIB,
        huge_budget_bytes: 64 * MIB,
        giant_budget_bytes: 0,
        ..SimConfig::default()
    }
}

/// Starts `cfg` and opens the logical devices `open`.
fn start_with(cfg: SimConfig, open: &[DeviceId]) -> Fixture {
    let guard = lock();
    let sim = Sim::new(cfg).expect("start the software NPU");
    for &dev in open {
        sim.open_device(dev).expect("open device");
    }
    Fixture { sim, _guard: guard }
}

/// Starts the standard machine with device 0 open.
fn start(name: &str) -> Fixture {
    start_with(config(name), &[D0])
}

fn base0() -> u64 {
    device_window_base(0)
}

fn range(start: u64, len: u64) -> VaRange {
    VaRange::try_new(DeviceAddr(start), len).expect("valid range")
}

fn req(start: u64, len: u64, page_size: PageSize) -> BackRequest {
    BackRequest { range: range(start, len), page_size, attrs: MemAttr::CACHED }
}

fn kind<T: std::fmt::Debug>(r: hal::Result<T>) -> ErrorKind {
    r.expect_err("call should have failed").kind()
}

fn pattern(len: u64, seed: u64) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + seed * 13 + i / 251) % 256) as u8).collect()
}

fn read(sim: &Sim, dev: DeviceId, addr: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    sim.copy_from_device(dev, &mut buf, DeviceAddr(addr)).expect("read device memory");
    buf
}

fn read_pinned(sim: &Sim, addr: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    sim.read_pinned(&mut buf, DeviceAddr(addr)).expect("read pinned memory");
    buf
}

fn shm_path(sim: &Sim, physical: u32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/dev/shm{}", sim.hbm_object_name(physical)))
}

/// A fresh device reports its whole HBM and budgets free.
fn fresh_info() -> MemoryInfo {
    MemoryInfo {
        total_bytes: 256 * MIB,
        free_bytes: 256 * MIB,
        huge_total_bytes: 64 * MIB,
        huge_free_bytes: 64 * MIB,
        giant_total_bytes: 0,
        giant_free_bytes: 0,
    }
}

/// Huge-page backing round-trips data and moves free/huge_free by exactly the range size.
#[test]
fn huge_backing_round_trips_and_accounts_exactly() {
    let fx = start("huge");
    let sim = &fx.sim;
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
    let a = base0() + 2 * MIB;
    sim.back(D0, &req(a, 4 * MIB, PageSize::Huge)).unwrap();
    assert_eq!(
        sim.memory_info(D0).unwrap(),
        MemoryInfo { free_bytes: 252 * MIB, huge_free_bytes: 60 * MIB, ..fresh_info() }
    );
    let pat = pattern(4 * MIB, 1);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    assert_eq!(read(sim, D0, a, 4 * MIB), pat);
    // An unaligned window inside the range reads the matching slice.
    let off = 3 * MIB + 5;
    assert_eq!(read(sim, D0, a + off, 1000), pat[off as usize..off as usize + 1000]);
    sim.unback(D0, range(a, 4 * MIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a))), ErrorKind::InvalidHandle);
}

/// Normal-page backing charges free_bytes only, not the huge budget.
#[test]
fn normal_backing_charges_free_bytes_only() {
    let fx = start("normal");
    let sim = &fx.sim;
    let a = base0() + 4 * KIB;
    sim.back(D0, &req(a, 64 * KIB, PageSize::Normal)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), MemoryInfo { free_bytes: 256 * MIB - 64 * KIB, ..fresh_info() });
    let pat = pattern(64 * KIB, 2);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    assert_eq!(read(sim, D0, a, 64 * KIB), pat);
    sim.unback(D0, range(a, 64 * KIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}

/// Normal pages back a range over fragmented frames; a failed multi-run back undoes every run.
#[test]
fn normal_backing_over_fragmented_frames() {
    let cfg = SimConfig { hbm_bytes: MIB, huge_budget_bytes: 0, giant_budget_bytes: 0, ..config("frag") };
    let fx = start_with(cfg, &[D0]);
    let sim = &fx.sim;
    let total = sim.memory_info(D0).unwrap();
    assert_eq!(
        total,
        MemoryInfo {
            total_bytes: MIB,
            free_bytes: MIB,
            huge_total_bytes: 0,
            huge_free_bytes: 0,
            giant_total_bytes: 0,
            giant_free_bytes: 0,
        }
    );
    // Fill the whole HBM with 16 small backings, each holding its own pattern.
    let small = 64 * KIB;
    let small_at = |i: u64| base0() + 4 * MIB + i * small;
    for i in 0..16 {
        sim.back(D0, &req(small_at(i), small, PageSize::Normal)).unwrap();
        sim.copy_to_device(D0, DeviceAddr(small_at(i)), &pattern(small, 100 + i)).unwrap();
    }
    assert_eq!(sim.memory_info(D0).unwrap().free_bytes, 0);
    assert_eq!(kind(sim.back(D0, &req(base0(), 4 * KIB, PageSize::Normal))), ErrorKind::OutOfMemory);
    // Free every other one: 512 KiB free in 64 KiB holes.
    for i in (1..16).step_by(2) {
        sim.unback(D0, range(small_at(i), small)).unwrap();
    }
    let holes = sim.memory_info(D0).unwrap();
    assert_eq!(holes, MemoryInfo { free_bytes: 512 * KIB, ..total });
    // One frame too many: refused, nothing changes.
    assert_eq!(
        kind(sim.back(D0, &req(base0(), 512 * KIB + 4 * KIB, PageSize::Normal))),
        ErrorKind::OutOfMemory
    );
    assert_eq!(sim.memory_info(D0).unwrap(), holes);
    // Enough frames, but the last 64 KiB of VA overlap backing 0: every run mapped so far is undone.
    let clash = small_at(0) - 448 * KIB;
    assert_eq!(kind(sim.back(D0, &req(clash, 512 * KIB, PageSize::Normal))), ErrorKind::InvalidArgument);
    assert_eq!(sim.memory_info(D0).unwrap(), holes);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(clash))), ErrorKind::InvalidHandle);
    assert_eq!(read(sim, D0, small_at(0), small), pattern(small, 100));
    // The real request: more than any single free block, still succeeds.
    let big = base0();
    sim.back(D0, &req(big, 512 * KIB, PageSize::Normal)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), MemoryInfo { free_bytes: 0, ..total });
    let pat = pattern(512 * KIB, 7);
    sim.copy_to_device(D0, DeviceAddr(big), &pat).unwrap();
    assert_eq!(read(sim, D0, big, 512 * KIB), pat);
    // The frames behind the big range are not shared with the surviving small ones.
    for i in (0..16).step_by(2) {
        assert_eq!(read(sim, D0, small_at(i), small), pattern(small, 100 + i), "backing {i}");
    }
    sim.unback(D0, range(big, 512 * KIB)).unwrap();
    for i in (0..16).step_by(2) {
        sim.unback(D0, range(small_at(i), small)).unwrap();
    }
    assert_eq!(sim.memory_info(D0).unwrap(), total);
}

/// Running out of memory or budget is all or nothing, and leaves memory_info unchanged.
#[test]
fn back_out_of_memory_is_all_or_nothing() {
    let fx = start("oom");
    let sim = &fx.sim;
    let b = base0();
    let fresh = fresh_info();
    // Over the huge budget, over the HBM, and any giant page with a zero budget.
    assert_eq!(kind(sim.back(D0, &req(b, 66 * MIB, PageSize::Huge))), ErrorKind::OutOfMemory);
    assert_eq!(kind(sim.back(D0, &req(b, 512 * MIB, PageSize::Normal))), ErrorKind::OutOfMemory);
    assert_eq!(kind(sim.back(D0, &req(b, 1 << 30, PageSize::Giant))), ErrorKind::OutOfMemory);
    assert_eq!(sim.memory_info(D0).unwrap(), fresh);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(b))), ErrorKind::InvalidHandle);
    // Use 48 of the 64 MiB budget; 32 more is refused without change, 16 more fits exactly.
    sim.back(D0, &req(b, 48 * MIB, PageSize::Huge)).unwrap();
    let used = MemoryInfo { free_bytes: 208 * MIB, huge_free_bytes: 16 * MIB, ..fresh };
    assert_eq!(sim.memory_info(D0).unwrap(), used);
    assert_eq!(kind(sim.back(D0, &req(b + 64 * MIB, 32 * MIB, PageSize::Huge))), ErrorKind::OutOfMemory);
    assert_eq!(sim.memory_info(D0).unwrap(), used);
    sim.back(D0, &req(b + 64 * MIB, 16 * MIB, PageSize::Huge)).unwrap();
    assert_eq!(
        sim.memory_info(D0).unwrap(),
        MemoryInfo { free_bytes: 192 * MIB, huge_free_bytes: 0, ..fresh }
    );
    assert_eq!(kind(sim.back(D0, &req(b + 128 * MIB, 2 * MIB, PageSize::Huge))), ErrorKind::OutOfMemory);
    // Normal pages are not limited by the huge budget.
    sim.back(D0, &req(b + 128 * MIB, 2 * MIB, PageSize::Normal)).unwrap();
    sim.unback(D0, range(b + 128 * MIB, 2 * MIB)).unwrap();
    sim.unback(D0, range(b, 48 * MIB)).unwrap();
    sim.unback(D0, range(b + 64 * MIB, 16 * MIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh);
}

/// Backing over an already backed range fails, changes no accounting and keeps the old data.
#[test]
fn back_overlapping_range_fails_and_changes_nothing() {
    let fx = start("overlap");
    let sim = &fx.sim;
    let a = base0() + 8 * MIB;
    sim.back(D0, &req(a, 4 * MIB, PageSize::Huge)).unwrap();
    let pat = pattern(4 * MIB, 3);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    let before = sim.memory_info(D0).unwrap();
    for r in [
        req(a, 4 * MIB, PageSize::Huge),
        req(a + 2 * MIB, 4 * MIB, PageSize::Huge),
        req(a - 2 * MIB, 4 * MIB, PageSize::Huge),
        req(a + MIB, 64 * KIB, PageSize::Normal),
        req(a + 4 * MIB - 4 * KIB, 8 * KIB, PageSize::Normal),
    ] {
        assert_eq!(kind(sim.back(D0, &r)), ErrorKind::InvalidArgument, "{r:?}");
        assert_eq!(sim.memory_info(D0).unwrap(), before, "{r:?}");
    }
    assert_eq!(read(sim, D0, a, 4 * MIB), pat);
    // The neighbours of the failed requests stayed unbacked.
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a - 1))), ErrorKind::InvalidHandle);
    assert_eq!(
        kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a + 4 * MIB))),
        ErrorKind::InvalidHandle
    );
    sim.unback(D0, range(a, 4 * MIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}

/// Misaligned or out-of-window ranges are InvalidArgument and change nothing.
#[test]
fn back_rejects_misaligned_and_foreign_ranges() {
    let fx = start("align");
    let sim = &fx.sim;
    let b = base0();
    let window_end = device_window_base(1);
    for r in [
        req(b + 4 * KIB, 2 * MIB, PageSize::Huge),
        req(b, 3 * MIB, PageSize::Huge),
        req(b + 1, 4 * KIB, PageSize::Normal),
        req(b, 6 * KIB, PageSize::Normal),
        req(b, 2 * MIB, PageSize::Giant),
        req(window_end - 4 * KIB, 8 * KIB, PageSize::Normal),
        req(window_end, 4 * KIB, PageSize::Normal),
        req(pool_slice_base(1), 4 * KIB, PageSize::Normal),
        req(host_window_base(), 4 * KIB, PageSize::Normal),
        req(b - 4 * KIB, 4 * KIB, PageSize::Normal),
    ] {
        assert_eq!(kind(sim.back(D0, &r)), ErrorKind::InvalidArgument, "{r:?}");
    }
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
    // The last page of the window is usable.
    sim.back(D0, &req(window_end - 4 * KIB, 4 * KIB, PageSize::Normal)).unwrap();
    sim.set_device(D0, DeviceAddr(window_end - 4 * KIB), 0xAB, 4 * KIB).unwrap();
    assert_eq!(read(sim, D0, window_end - 4 * KIB, 4 * KIB), vec![0xAB; 4096]);
    sim.unback(D0, range(window_end - 4 * KIB, 4 * KIB)).unwrap();
}

/// unback takes exactly one backed range: never a sub-range, super-range, union or unbacked range.
#[test]
fn unback_requires_exactly_one_backed_range() {
    let fx = start("unback");
    let sim = &fx.sim;
    let a = base0() + 16 * MIB;
    sim.back(D0, &req(a, 4 * MIB, PageSize::Huge)).unwrap();
    sim.back(D0, &req(a + 4 * MIB, 4 * MIB, PageSize::Huge)).unwrap();
    let pat = pattern(8 * MIB, 4);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    let before = sim.memory_info(D0).unwrap();
    for r in [
        range(a, 2 * MIB),
        range(a + 2 * MIB, 2 * MIB),
        range(a, 8 * MIB),
        range(a, 4 * MIB + 4 * KIB),
        range(a + 8 * MIB, 4 * MIB),
        range(base0(), 4 * KIB),
        range(pool_window_base(), 4 * KIB),
    ] {
        assert_eq!(kind(sim.unback(D0, r)), ErrorKind::InvalidHandle, "{r:?}");
    }
    assert_eq!(sim.memory_info(D0).unwrap(), before);
    assert_eq!(read(sim, D0, a, 8 * MIB), pat);
    sim.unback(D0, range(a, 4 * MIB)).unwrap();
    assert_eq!(kind(sim.unback(D0, range(a, 4 * MIB))), ErrorKind::InvalidHandle);
    assert_eq!(read(sim, D0, a + 4 * MIB, 4 * MIB), pat[4 * MIB as usize..]);
    sim.unback(D0, range(a + 4 * MIB, 4 * MIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}

/// Every DMA call touching an unbacked byte is InvalidHandle and moves no byte.
#[test]
fn dma_rejects_unbacked_bytes() {
    let fx = start("dma-unbacked");
    let sim = &fx.sim;
    let a = base0() + 64 * KIB;
    let len = 64 * KIB;
    sim.back(D0, &req(a, len, PageSize::Normal)).unwrap();
    let pat = pattern(len, 5);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    let end = a + len;
    let ih = ErrorKind::InvalidHandle;
    assert_eq!(kind(sim.copy_to_device(D0, DeviceAddr(end - 1), &[1, 2])), ih);
    assert_eq!(kind(sim.copy_to_device(D0, DeviceAddr(end), &[1])), ih);
    assert_eq!(kind(sim.copy_to_device(D0, DeviceAddr(a - 1), &[1, 2])), ih);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 2], DeviceAddr(end - 1))), ih);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(end))), ih);
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(a), 0xEE, len + 1)), ih);
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(end), 0xEE, 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a + 4 * KIB), D0, DeviceAddr(a), len - 4 * KIB + 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(end - 4 * KIB), 4 * KIB + 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(end), D0, DeviceAddr(a), 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(end), 1)), ih);
    // None of the failed calls wrote a byte, not even the backed part of the range.
    assert_eq!(read(sim, D0, a, len), pat);
    // A range spanning two adjacent backings is fully backed; one spanning a gap is not.
    sim.back(D0, &req(end, len, PageSize::Normal)).unwrap();
    sim.back(D0, &req(end + 2 * len, len, PageSize::Normal)).unwrap();
    sim.set_device(D0, DeviceAddr(end - 4 * KIB), 0x42, 8 * KIB).unwrap();
    assert_eq!(read(sim, D0, end - 4 * KIB, 8 * KIB), vec![0x42; 8192]);
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(end + len - 4 * KIB), 0x43, len + 8 * KIB)), ih);
    assert_eq!(read(sim, D0, end + len - 4 * KIB, 4 * KIB), vec![0u8; 4096]);
    // After unback, every call on the range fails.
    sim.unback(D0, range(a, len)).unwrap();
    assert_eq!(kind(sim.copy_to_device(D0, DeviceAddr(a), &[1])), ih);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a))), ih);
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(a), 0, 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(end), D0, DeviceAddr(a), 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(end), 1)), ih);
}

/// Addresses outside the named device's window are InvalidArgument; unknown devices NoDevice.
#[test]
fn the_pool_slice_is_backed_and_copied_like_the_device_window() {
    let fx = start("pool-slice");
    let sim = &fx.sim;
    let before = sim.memory_info(D0).unwrap();
    let p = pool_slice_base(0) + 4 * MIB;
    assert_eq!(p - pool_window_base(), 4 * MIB, "device 0's slice starts the pool window");
    sim.back(D0, &req(p, 2 * MIB, PageSize::Huge)).unwrap();
    assert_eq!(before.free_bytes - sim.memory_info(D0).unwrap().free_bytes, 2 * MIB, "same HBM");
    let pat: Vec<u8> = (0..2 * MIB).map(|i| (i % 251) as u8).collect();
    sim.copy_to_device(D0, DeviceAddr(p), &pat).unwrap();
    assert_eq!(read(sim, D0, p, 2 * MIB), pat);
    let a = base0();
    sim.back(D0, &req(a, 2 * MIB, PageSize::Huge)).unwrap();
    sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(p), 2 * MIB).unwrap();
    assert_eq!(read(sim, D0, a, 2 * MIB), pat);
    sim.set_device(D0, DeviceAddr(p), 7, 4 * KIB).unwrap();
    assert_eq!(read(sim, D0, p, 4 * KIB), vec![7u8; 4 * KIB as usize]);
    // Twice, or past the slice's end: refused.
    assert_eq!(kind(sim.back(D0, &req(p, 2 * MIB, PageSize::Huge))), ErrorKind::InvalidArgument);
    let end = pool_slice_base(1);
    assert_eq!(kind(sim.back(D0, &req(end - 2 * MIB, 4 * MIB, PageSize::Huge))), ErrorKind::InvalidArgument);
    sim.unback(D0, range(p, 2 * MIB)).unwrap();
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(p))), ErrorKind::InvalidHandle);
    sim.unback(D0, range(a, 2 * MIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), before);
}

#[test]
fn dma_rejects_addresses_outside_the_device_window() {
    let fx = start("dma-window");
    let sim = &fx.sim;
    let a = base0();
    sim.back(D0, &req(a, 64 * KIB, PageSize::Normal)).unwrap();
    let ia = ErrorKind::InvalidArgument;
    for foreign in [0x1000, device_window_base(1), pool_slice_base(1), host_window_base(), a - 1] {
        let f = DeviceAddr(foreign);
        assert_eq!(kind(sim.copy_to_device(D0, f, &[1])), ia, "{f:?}");
        assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], f)), ia, "{f:?}");
        assert_eq!(kind(sim.set_device(D0, f, 0, 1)), ia, "{f:?}");
        assert_eq!(kind(sim.copy_device(D0, f, D0, DeviceAddr(a), 1)), ia, "{f:?}");
        assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), D0, f, 1)), ia, "{f:?}");
    }
    // Device 1 exists but is not open; device 7 does not exist.
    for dev in [D1, DeviceId(7)] {
        assert_eq!(kind(sim.copy_to_device(dev, DeviceAddr(a), &[1])), ErrorKind::NoDevice);
        assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), dev, DeviceAddr(a), 1)), ErrorKind::NoDevice);
        assert_eq!(kind(sim.back(dev, &req(a, 4 * KIB, PageSize::Normal))), ErrorKind::NoDevice);
        assert_eq!(kind(sim.memory_info(dev)), ErrorKind::NoDevice);
    }
    // Nothing was written by any of it.
    assert_eq!(read(sim, D0, a, 64 * KIB), vec![0u8; 65536]);
}

/// copy_device on overlapping ranges behaves as if the whole source were read first.
#[test]
fn copy_device_overlapping_ranges_is_memmove() {
    let fx = start("memmove");
    let sim = &fx.sim;
    let a = base0();
    sim.back(D0, &req(a, 64 * KIB, PageSize::Normal)).unwrap();
    let pat = pattern(16 * KIB, 6);
    let p = |r: std::ops::Range<u64>| pat[r.start as usize..r.end as usize].to_vec();
    // Forward overlap: destination above source.
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    sim.copy_device(D0, DeviceAddr(a + 4 * KIB), D0, DeviceAddr(a), 12 * KIB).unwrap();
    assert_eq!(read(sim, D0, a, 4 * KIB), p(0..4 * KIB));
    assert_eq!(read(sim, D0, a + 4 * KIB, 12 * KIB), p(0..12 * KIB));
    // Backward overlap: destination below source.
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(a + 4 * KIB), 12 * KIB).unwrap();
    assert_eq!(read(sim, D0, a, 12 * KIB), p(4 * KIB..16 * KIB));
    assert_eq!(read(sim, D0, a + 12 * KIB, 4 * KIB), p(12 * KIB..16 * KIB));
    // Overlap by one byte, unaligned.
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    sim.copy_device(D0, DeviceAddr(a + 1), D0, DeviceAddr(a), 100).unwrap();
    let mut want = p(0..1);
    want.extend(p(0..100));
    assert_eq!(read(sim, D0, a, 101), want);
}

/// A length whose end overflows u64 is an error, never a panic (the driver must not crash).
#[test]
fn dma_lengths_that_overflow_are_errors() {
    let fx = start("overflow");
    let sim = &fx.sim;
    let a = base0();
    sim.back(D0, &req(a, 64 * KIB, PageSize::Normal)).unwrap();
    let ih = ErrorKind::InvalidHandle;
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(a), 0, u64::MAX)), ih);
    assert_eq!(kind(sim.dma_fill(DeviceAddr(a), 0, u64::MAX)), ih);
    // Destination below source: the sliced path.
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(a + 4 * KIB), u64::MAX)), ih);
    assert_eq!(read(sim, D0, a, 64 * KIB), vec![0u8; 65536]);
}

/// Source below destination with an overflowing length is an error too, not a panic.
#[test]
fn copy_forward_with_overflowing_length_is_an_error() {
    let fx = start("overflow-fwd");
    let sim = &fx.sim;
    let a = base0();
    sim.back(D0, &req(a, 64 * KIB, PageSize::Normal)).unwrap();
    let ih = ErrorKind::InvalidHandle;
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a + 4 * KIB), D0, DeviceAddr(a), u64::MAX)), ih);
    assert_eq!(kind(sim.dma_copy(DeviceAddr(a + 4 * KIB), DeviceAddr(a), u64::MAX)), ih);
    assert_eq!(read(sim, D0, a, 64 * KIB), vec![0u8; 65536]);
}

/// READONLY backings can be read and copied from, but every write to them is refused.
#[test]
fn readonly_backing_refuses_writes() {
    let fx = start("readonly");
    let sim = &fx.sim;
    let ro = base0();
    let rw = base0() + MIB;
    let attrs = MemAttr::CACHED | MemAttr::READONLY;
    sim.back(D0, &BackRequest { range: range(ro, 64 * KIB), page_size: PageSize::Normal, attrs }).unwrap();
    sim.back(D0, &req(rw, 64 * KIB, PageSize::Normal)).unwrap();
    sim.set_device(D0, DeviceAddr(rw), 0x99, 64 * KIB).unwrap();
    let ih = ErrorKind::InvalidHandle;
    assert_eq!(kind(sim.copy_to_device(D0, DeviceAddr(ro), &[1])), ih);
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(ro), 1, 1)), ih);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(ro), D0, DeviceAddr(rw), 1)), ih);
    // Fresh HBM reads as zeros, and the refused writes left it so.
    assert_eq!(read(sim, D0, ro, 64 * KIB), vec![0u8; 65536]);
    sim.copy_device(D0, DeviceAddr(rw), D0, DeviceAddr(ro), 4 * KIB).unwrap();
    assert_eq!(read(sim, D0, rw, 8 * KIB), [vec![0u8; 4096], vec![0x99; 4096]].concat());
    sim.unback(D0, range(ro, 64 * KIB)).unwrap();
    sim.unback(D0, range(rw, 64 * KIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}

/// Pinned host memory: back, read/write, DMA to and from the device, fill; after unback all fail.
#[test]
fn pinned_host_memory_round_trips_and_unbacks() {
    let fx = start("pinned");
    let sim = &fx.sim;
    let p = host_window_base();
    let len = 64 * KIB;
    let a = base0();
    sim.back(D0, &req(a, len, PageSize::Normal)).unwrap();
    sim.back_host(range(p, len)).unwrap();
    // Fresh pinned memory is zero.
    assert_eq!(read_pinned(sim, p, len), vec![0u8; len as usize]);
    let pat = pattern(len, 8);
    sim.write_pinned(DeviceAddr(p), &pat).unwrap();
    assert_eq!(read_pinned(sim, p, len), pat);
    // Pinned to device and back.
    sim.dma_copy(DeviceAddr(a), DeviceAddr(p), len).unwrap();
    assert_eq!(read(sim, D0, a, len), pat);
    sim.set_device(D0, DeviceAddr(a), 0x5A, 4 * KIB).unwrap();
    sim.dma_copy(DeviceAddr(p + 16 * KIB), DeviceAddr(a), 4 * KIB).unwrap();
    assert_eq!(read_pinned(sim, p + 16 * KIB, 4 * KIB), vec![0x5A; 4096]);
    sim.dma_fill(DeviceAddr(p + 32 * KIB), 0xC3, 8 * KIB).unwrap();
    let mut want = pat.clone();
    want[16 * KIB as usize..20 * KIB as usize].fill(0x5A);
    want[32 * KIB as usize..40 * KIB as usize].fill(0xC3);
    assert_eq!(read_pinned(sim, p, len), want);
    // dma_fill reaches device memory too.
    sim.dma_fill(DeviceAddr(a + 8 * KIB), 0x17, 100).unwrap();
    assert_eq!(
        read(sim, D0, a + 8 * KIB, 101),
        [vec![0x17; 100], vec![pat[8 * KIB as usize + 100]]].concat()
    );
    // Queued tasks move pinned bytes as well.
    let q = sim.create_queue(D0, 2).unwrap();
    sim.submit(D0, q, TaskDesc::Memset { dst: DeviceAddr(p), value: 0x11, len_bytes: 4 * KIB }).unwrap();
    let last = sim
        .submit(
            D0,
            q,
            TaskDesc::Copy { dst: DeviceAddr(a + 12 * KIB), src: DeviceAddr(p), len_bytes: 4 * KIB },
        )
        .unwrap();
    sim.wait(D0, q, last, None).unwrap();
    assert_eq!(done(sim, D0, q), (last, TaskStatus::Ok));
    assert_eq!(read(sim, D0, a + 12 * KIB, 4 * KIB), vec![0x11; 4096]);
    // Bytes past the pinned range, and device addresses, are not pinned memory.
    let ih = ErrorKind::InvalidHandle;
    assert_eq!(kind(sim.read_pinned(&mut [0u8; 2], DeviceAddr(p + len - 1))), ih);
    assert_eq!(kind(sim.write_pinned(DeviceAddr(p + len), &[1])), ih);
    assert_eq!(kind(sim.write_pinned(DeviceAddr(a), &[1])), ih);
    assert_eq!(kind(sim.read_pinned(&mut [0u8; 1], DeviceAddr(a))), ih);
    assert_eq!(kind(sim.dma_fill(DeviceAddr(p + len - 1), 0, 2)), ih);
    assert_eq!(kind(sim.dma_copy(DeviceAddr(a), DeviceAddr(p + len - 1), 2)), ih);
    // Overlapping, misaligned or out-of-window pinned ranges are refused.
    let ia = ErrorKind::InvalidArgument;
    assert_eq!(kind(sim.back_host(range(p + 32 * KIB, len))), ia);
    assert_eq!(kind(sim.back_host(range(p + len + 1, 4 * KIB))), ia);
    assert_eq!(kind(sim.back_host(range(p + len, 6 * KIB))), ia);
    assert_eq!(kind(sim.back_host(range(p - 4 * KIB, 8 * KIB))), ia);
    assert_eq!(kind(sim.back_host(range(p + HOST_WINDOW_SIZE - 4 * KIB, 8 * KIB))), ia);
    assert_eq!(kind(sim.back_host(range(a, 4 * KIB))), ia);
    // unback_host takes whole backed ranges only.
    assert_eq!(kind(sim.unback_host(range(p, 32 * KIB))), ih);
    assert_eq!(kind(sim.unback_host(range(p, 2 * len))), ih);
    assert_eq!(kind(sim.unback_host(range(a, 4 * KIB))), ih);
    assert_eq!(read_pinned(sim, p + 4 * KIB, 4 * KIB), want[4 * KIB as usize..8 * KIB as usize]);
    sim.unback_host(range(p, len)).unwrap();
    assert_eq!(kind(sim.write_pinned(DeviceAddr(p), &[1])), ih);
    assert_eq!(kind(sim.read_pinned(&mut [0u8; 1], DeviceAddr(p))), ih);
    assert_eq!(kind(sim.dma_copy(DeviceAddr(a), DeviceAddr(p), 1)), ih);
    assert_eq!(kind(sim.dma_copy(DeviceAddr(p), DeviceAddr(a), 1)), ih);
    assert_eq!(kind(sim.dma_fill(DeviceAddr(p), 0, 1)), ih);
    assert_eq!(kind(sim.unback_host(range(p, len))), ih);
    // The device side is untouched by all of it.
    assert_eq!(read(sim, D0, a + 12 * KIB, 4 * KIB), vec![0x11; 4096]);
    // Backing again gives fresh zero pages.
    sim.back_host(range(p, len)).unwrap();
    assert_eq!(read_pinned(sim, p, len), vec![0u8; len as usize]);
    sim.unback_host(range(p, len)).unwrap();
}

/// Physical allocations: shared between mappings, Busy while mapped, strict map/unmap checks.
#[test]
fn physical_memory_is_shared_between_mappings() {
    let fx = start("vmm");
    let sim = &fx.sim;
    let fresh = fresh_info();
    let ia = ErrorKind::InvalidArgument;
    let ih = ErrorKind::InvalidHandle;
    // Bad sizes and an over-budget request change nothing.
    assert_eq!(kind(sim.alloc_physical(D0, 0, PageSize::Huge, MemAttr::CACHED)), ia);
    assert_eq!(kind(sim.alloc_physical(D0, 4 * MIB + 4 * KIB, PageSize::Huge, MemAttr::CACHED)), ia);
    assert_eq!(
        kind(sim.alloc_physical(D0, 66 * MIB, PageSize::Huge, MemAttr::CACHED)),
        ErrorKind::OutOfMemory
    );
    assert_eq!(sim.memory_info(D0).unwrap(), fresh);

    let h = sim.alloc_physical(D0, 4 * MIB, PageSize::Huge, MemAttr::CACHED).unwrap();
    let allocated = MemoryInfo { free_bytes: 252 * MIB, huge_free_bytes: 60 * MIB, ..fresh };
    assert_eq!(sim.memory_info(D0).unwrap(), allocated);
    let (a, b, c, d) = (base0(), base0() + 16 * MIB, base0() + 32 * MIB, base0() + 48 * MIB);
    sim.map_physical(D0, h, 0, range(a, 4 * MIB)).unwrap();
    sim.map_physical(D0, h, 0, range(b, 4 * MIB)).unwrap();
    sim.map_physical(D0, h, 2 * MIB, range(c, 2 * MIB)).unwrap();
    // Mapping does not allocate.
    assert_eq!(sim.memory_info(D0).unwrap(), allocated);
    let pat = pattern(4 * MIB, 9);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    assert_eq!(read(sim, D0, b, 4 * MIB), pat);
    assert_eq!(read(sim, D0, c, 2 * MIB), pat[2 * MIB as usize..]);
    sim.set_device(D0, DeviceAddr(c + 4 * KIB), 0xEE, 4 * KIB).unwrap();
    assert_eq!(read(sim, D0, a + 2 * MIB + 4 * KIB, 4 * KIB), vec![0xEE; 4096]);
    assert_eq!(read(sim, D0, b + 2 * MIB + 4 * KIB, 4 * KIB), vec![0xEE; 4096]);

    // Mappings beyond the allocation, misaligned, unknown handle, or over a live mapping.
    assert_eq!(kind(sim.map_physical(D0, h, 2 * MIB, range(d, 4 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, h, 4 * MIB, range(d, 2 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, h, 0, range(d, 6 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, h, 4 * KIB, range(d, 2 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, h, 0, range(d + 4 * KIB, 2 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, h, 0, range(a + 2 * MIB, 2 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, h, 0, range(pool_slice_base(1), 2 * MIB))), ia);
    assert_eq!(kind(sim.map_physical(D0, PhysHandle(h.0 + 1000), 0, range(d, 2 * MIB))), ih);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(d))), ih);
    // back() and map_physical() do not overlap, and neither undoes the other.
    assert_eq!(kind(sim.back(D0, &req(a, 2 * MIB, PageSize::Huge))), ia);
    assert_eq!(sim.memory_info(D0).unwrap(), allocated);
    assert_eq!(kind(sim.unback(D0, range(a, 4 * MIB))), ih);
    sim.back(D0, &req(d, 2 * MIB, PageSize::Huge)).unwrap();
    assert_eq!(kind(sim.map_physical(D0, h, 0, range(d, 2 * MIB))), ia);
    assert_eq!(kind(sim.unmap_physical(D0, range(d, 2 * MIB))), ih);
    sim.unback(D0, range(d, 2 * MIB)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), allocated);

    // Busy until the last mapping goes; unmap takes exactly a mapped range.
    assert_eq!(kind(sim.free_physical(D0, h)), ErrorKind::Busy);
    assert_eq!(kind(sim.unmap_physical(D0, range(a, 2 * MIB))), ih);
    assert_eq!(kind(sim.unmap_physical(D0, range(a, 8 * MIB))), ih);
    sim.unmap_physical(D0, range(a, 4 * MIB)).unwrap();
    assert_eq!(kind(sim.unmap_physical(D0, range(a, 4 * MIB))), ih);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a))), ih);
    assert_eq!(kind(sim.free_physical(D0, h)), ErrorKind::Busy);
    // The remaining mappings still see the same bytes.
    assert_eq!(read(sim, D0, b, 4 * KIB), pat[..4 * KIB as usize]);
    sim.unmap_physical(D0, range(b, 4 * MIB)).unwrap();
    assert_eq!(kind(sim.free_physical(D0, h)), ErrorKind::Busy);
    sim.unmap_physical(D0, range(c, 2 * MIB)).unwrap();
    sim.free_physical(D0, h).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh);
    assert_eq!(kind(sim.free_physical(D0, h)), ih);
    assert_eq!(kind(sim.map_physical(D0, h, 0, range(a, 2 * MIB))), ih);
}

/// Normal-page physical allocations can be mapped piecewise and charge no huge budget.
#[test]
fn physical_memory_normal_pages_map_piecewise() {
    let fx = start("vmm-normal");
    let sim = &fx.sim;
    let h = sim.alloc_physical(D0, 64 * KIB, PageSize::Normal, MemAttr::CACHED).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), MemoryInfo { free_bytes: 256 * MIB - 64 * KIB, ..fresh_info() });
    let a = base0() + 4 * KIB;
    // Map the two halves swapped; writing a whole pattern through the swapped view and reading
    // each half through a straight view shows the order.
    sim.map_physical(D0, h, 32 * KIB, range(a, 32 * KIB)).unwrap();
    sim.map_physical(D0, h, 0, range(a + 32 * KIB, 32 * KIB)).unwrap();
    let straight = base0() + MIB;
    sim.map_physical(D0, h, 0, range(straight, 64 * KIB)).unwrap();
    let pat = pattern(64 * KIB, 10);
    sim.copy_to_device(D0, DeviceAddr(a), &pat).unwrap();
    let want = [&pat[32 * KIB as usize..], &pat[..32 * KIB as usize]].concat();
    assert_eq!(read(sim, D0, straight, 64 * KIB), want);
    for r in [range(a, 32 * KIB), range(a + 32 * KIB, 32 * KIB), range(straight, 64 * KIB)] {
        sim.unmap_physical(D0, r).unwrap();
    }
    sim.free_physical(D0, h).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}

/// A depth-4 queue runs more than 4 tasks in order, with back-pressure, and reports success.
#[test]
fn queue_runs_tasks_in_order_with_back_pressure() {
    let fx = start("queue");
    let sim = &fx.sim;
    let a = base0();
    sim.back(D0, &req(a, MIB, PageSize::Normal)).unwrap();
    let q = sim.create_queue(D0, 4).unwrap();
    assert_eq!(done(sim, D0, q), (0, TaskStatus::Ok));
    let chunk = 4 * KIB;
    let mut expected_seq = 0;
    for k in 0..8u64 {
        // Region 0 is overwritten every round; region k + 1 keeps the value of round k.
        let tasks = [
            TaskDesc::Memset { dst: DeviceAddr(a), value: (k + 1) as u8, len_bytes: chunk },
            TaskDesc::Copy { dst: DeviceAddr(a + (k + 1) * chunk), src: DeviceAddr(a), len_bytes: chunk },
        ];
        for t in tasks {
            let seq = sim.submit(D0, q, t).unwrap();
            expected_seq += 1;
            assert_eq!(seq, expected_seq);
            // At most `depth` tasks are unfinished once submit returns.
            let (done, status) = done(sim, D0, q);
            assert!(done + 4 >= seq && done <= seq, "completed {done} after submitting {seq}");
            assert_eq!(status, TaskStatus::Ok);
        }
    }
    let marker = sim.submit(D0, q, TaskDesc::Marker).unwrap();
    assert_eq!(marker, 17);
    sim.wait(D0, q, marker, None).unwrap();
    assert_eq!(done(sim, D0, q), (17, TaskStatus::Ok));
    // Waiting for finished work returns at once, even with no time.
    sim.wait(D0, q, 1, Some(0)).unwrap();
    sim.wait(D0, q, 17, Some(0)).unwrap();
    assert_eq!(read(sim, D0, a, chunk), vec![8u8; chunk as usize]);
    for k in 0..8u64 {
        assert_eq!(read(sim, D0, a + (k + 1) * chunk, chunk), vec![(k + 1) as u8; chunk as usize], "{k}");
    }
    assert_eq!(read(sim, D0, a + 9 * chunk, chunk), vec![0u8; chunk as usize]);
    // Two queues are independent and number their tasks from 1.
    let q2 = sim.create_queue(D0, 1).unwrap();
    assert_ne!(q, q2);
    let s = sim.submit(D0, q2, TaskDesc::Memset { dst: DeviceAddr(a), value: 0xAA, len_bytes: 1 }).unwrap();
    assert_eq!(s, 1);
    sim.wait(D0, q2, s, None).unwrap();
    assert_eq!(done(sim, D0, q), (17, TaskStatus::Ok));
    assert_eq!(read(sim, D0, a, 2), vec![0xAA, 8]);
    sim.destroy_queue(D0, q).unwrap();
    sim.destroy_queue(D0, q2).unwrap();
}

/// A queue's port submits in one order with `Queues::submit` and the locked paths (its
/// submitted word counts them all), keeps back-pressure, refuses ticketed tasks without
/// numbering them, and refuses everything once the queue is destroyed.
#[test]
fn a_queue_port_submits_in_the_queues_order_until_the_queue_is_gone() {
    use hal::Events;
    let fx = start("port");
    let sim = &fx.sim;
    let a = base0();
    sim.back(D0, &req(a, MIB, PageSize::Normal)).unwrap();
    let q = sim.create_queue(D0, 4).unwrap();
    let port = sim.port(D0, q).expect("a port of a live queue");
    assert_eq!(port.submitted(), 0);
    let chunk = 4 * KIB;
    let mut expected = 0;
    for k in 0..8u64 {
        // The fill goes through the port (as a task, or every other time as words), the copy of
        // it through `submit`: the copy must see it.
        let value = (k + 1) as u8;
        let s1 = if k % 2 == 0 {
            port.submit(&TaskDesc::Memset { dst: DeviceAddr(a), value, len_bytes: chunk }).unwrap()
        } else {
            port.submit_fill(DeviceAddr(a), value, chunk).unwrap()
        };
        let copy =
            TaskDesc::Copy { dst: DeviceAddr(a + (k + 1) * chunk), src: DeviceAddr(a), len_bytes: chunk };
        let s2 = sim.submit(D0, q, copy).unwrap();
        expected += 2;
        assert_eq!((s1, s2), (expected - 1, expected));
        assert_eq!(port.submitted(), expected);
        // Back-pressure holds through the port as through `submit`.
        let (done, _) = done(sim, D0, q);
        assert!(done + 4 >= s2, "completed {done} after submitting {s2}");
    }
    // An event record (the locked path) takes the next number, and the port's word shows it.
    // (A record finding the queue full answers QueueFull: let the queue drain first.)
    sim.wait(D0, q, expected, None).unwrap();
    let ev = sim.create_event(D0).unwrap();
    let rec = sim.record_event(D0, q, ev).unwrap();
    assert_eq!(rec, expected + 1);
    assert_eq!(port.submitted(), rec);
    // A task naming a staged ticket is refused by the port and numbers nothing.
    let kernel = TaskDesc::Kernel { func: 1, blocks: 1, args: 7, timeout_us: 0 };
    assert_eq!(kind(port.submit(&kernel)), ErrorKind::InvalidArgument);
    assert_eq!(kind(port.submit(&TaskDesc::CopyBatch { batch: 7 })), ErrorKind::InvalidArgument);
    let last = port.submit(&TaskDesc::Marker).unwrap();
    assert_eq!(last, rec + 1);
    sim.wait(D0, q, last, None).unwrap();
    assert_eq!(done(sim, D0, q), (last, TaskStatus::Ok));
    for k in 0..8u64 {
        assert_eq!(read(sim, D0, a + (k + 1) * chunk, chunk), vec![(k + 1) as u8; chunk as usize], "{k}");
    }
    // No port for a queue that does not exist or a device that is not open.
    assert!(sim.port(D0, QueueId(q.0 + 4242)).is_none());
    assert!(sim.port(D1, q).is_none());
    sim.destroy_event(D0, ev).unwrap();
    sim.destroy_queue(D0, q).unwrap();
    // The port outlives its queue only to refuse work, in every form.
    assert_eq!(kind(port.submit(&TaskDesc::Marker)), ErrorKind::InvalidHandle);
    assert_eq!(kind(port.submit_fill(DeviceAddr(a), 1, chunk)), ErrorKind::InvalidHandle);
    assert_eq!(kind(port.submit_host_fn(1, 2)), ErrorKind::InvalidHandle);
    assert_eq!(port.submitted(), last);
}

/// A task touching unbacked memory fails with InvalidHandle via `completed`; later tasks still run.
#[test]
fn queue_reports_failed_tasks() {
    let fx = start("queue-fail");
    let sim = &fx.sim;
    let a = base0();
    let len = 64 * KIB;
    sim.back(D0, &req(a, len, PageSize::Normal)).unwrap();
    let q = sim.create_queue(D0, 8).unwrap();
    let s1 = sim.submit(D0, q, TaskDesc::Memset { dst: DeviceAddr(a), value: 0x33, len_bytes: len }).unwrap();
    // One byte past the backed range.
    let s2 = sim
        .submit(D0, q, TaskDesc::Memset { dst: DeviceAddr(a + len - 1), value: 0x44, len_bytes: 2 })
        .unwrap();
    // A source that is no device or pinned memory at all.
    let s3 = sim
        .submit(D0, q, TaskDesc::Copy { dst: DeviceAddr(a), src: DeviceAddr(0x1000), len_bytes: 16 })
        .unwrap();
    assert_eq!((s1, s2, s3), (1, 2, 3));
    sim.wait(D0, q, s3, None).unwrap();
    // Reading progress, however often, leaves the failure for take_error.
    for _ in 0..3 {
        assert_eq!(sim.progress(D0, q).unwrap(), hal::QueueProgress { submitted: 3, completed: 3 });
    }
    assert_eq!(done(sim, D0, q), (3, TaskStatus::Failed(ErrorKind::InvalidHandle)));
    // The failure is reported once.
    assert_eq!(done(sim, D0, q), (3, TaskStatus::Ok));
    // The failed tasks wrote nothing, not even the backed byte.
    assert_eq!(read(sim, D0, a, len), vec![0x33; len as usize]);
    // The queue keeps running after a failure.
    let s4 = sim
        .submit(
            D0,
            q,
            TaskDesc::Copy { dst: DeviceAddr(a + 4 * KIB), src: DeviceAddr(a), len_bytes: 4 * KIB },
        )
        .unwrap();
    sim.wait(D0, q, s4, None).unwrap();
    assert_eq!(done(sim, D0, q), (4, TaskStatus::Ok));
    // After unback, a task on the old range fails.
    sim.unback(D0, range(a, len)).unwrap();
    let s5 = sim.submit(D0, q, TaskDesc::Memset { dst: DeviceAddr(a), value: 1, len_bytes: 1 }).unwrap();
    sim.wait(D0, q, s5, None).unwrap();
    assert_eq!(done(sim, D0, q), (5, TaskStatus::Failed(ErrorKind::InvalidHandle)));
    sim.destroy_queue(D0, q).unwrap();
}

/// wait times out on a sequence never submitted; unknown or destroyed queues are InvalidHandle.
#[test]
fn queue_wait_timeout_and_unknown_queues() {
    let fx = start("queue-wait");
    let sim = &fx.sim;
    let q = sim.create_queue(D0, 4).unwrap();
    sim.wait(D0, q, 0, Some(0)).unwrap();
    assert_eq!(kind(sim.wait(D0, q, 1, Some(0))), ErrorKind::Timeout);
    let started = Instant::now();
    assert_eq!(kind(sim.wait(D0, q, 5, Some(50))), ErrorKind::Timeout);
    assert!(started.elapsed() >= Duration::from_millis(50));
    let bogus = QueueId(q.0 + 4242);
    let ih = ErrorKind::InvalidHandle;
    assert_eq!(kind(sim.submit(D0, bogus, TaskDesc::Marker)), ih);
    assert_eq!(kind(sim.progress(D0, bogus)), ih);
    assert_eq!(kind(sim.take_error(D0, bogus)), ih);
    assert_eq!(kind(sim.wait(D0, bogus, 1, Some(0))), ih);
    assert_eq!(kind(sim.destroy_queue(D0, bogus)), ih);
    sim.destroy_queue(D0, q).unwrap();
    assert_eq!(kind(sim.submit(D0, q, TaskDesc::Marker)), ih);
    assert_eq!(kind(sim.progress(D0, q)), ih);
    assert_eq!(kind(sim.destroy_queue(D0, q)), ih);
    // Queues live on open devices only.
    assert_eq!(kind(sim.create_queue(D1, 4)), ErrorKind::NoDevice);
    assert_eq!(kind(sim.create_queue(DeviceId(9), 4)), ErrorKind::NoDevice);
}

/// close drains queues and releases everything; operations then fail with NoDevice; reopen is fresh.
#[test]
fn close_releases_everything_and_reopen_starts_fresh() {
    let fx = start("close");
    let sim = &fx.sim;
    let a = base0() + 2 * MIB;
    let p = host_window_base();
    sim.back(D0, &req(a, 4 * MIB, PageSize::Huge)).unwrap();
    let h = sim.alloc_physical(D0, 2 * MIB, PageSize::Huge, MemAttr::CACHED).unwrap();
    sim.map_physical(D0, h, 0, range(base0() + 64 * MIB, 2 * MIB)).unwrap();
    sim.back_host(range(p, 64 * KIB)).unwrap();
    let q = sim.create_queue(D0, 2).unwrap();
    for i in 0..16u64 {
        sim.submit(
            D0,
            q,
            TaskDesc::Memset { dst: DeviceAddr(p + i * 4 * KIB), value: i as u8 + 1, len_bytes: 4 * KIB },
        )
        .unwrap();
    }
    // Opening an open device changes nothing.
    sim.open(D0).unwrap();
    assert_eq!(
        sim.memory_info(D0).unwrap(),
        MemoryInfo { free_bytes: 250 * MIB, huge_free_bytes: 58 * MIB, ..fresh_info() }
    );
    sim.close(D0).unwrap();
    // The queue was drained before close returned.
    for i in 0..16u64 {
        assert_eq!(read_pinned(sim, p + i * 4 * KIB, 4 * KIB), vec![i as u8 + 1; 4096], "task {i}");
    }
    let nd = ErrorKind::NoDevice;
    assert_eq!(kind(sim.memory_info(D0)), nd);
    assert_eq!(kind(sim.back(D0, &req(a, 2 * MIB, PageSize::Huge))), nd);
    assert_eq!(kind(sim.unback(D0, range(a, 4 * MIB))), nd);
    assert_eq!(kind(sim.alloc_physical(D0, 2 * MIB, PageSize::Huge, MemAttr::CACHED)), nd);
    assert_eq!(kind(sim.free_physical(D0, h)), nd);
    assert_eq!(kind(sim.copy_to_device(D0, DeviceAddr(a), &[1])), nd);
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a))), nd);
    assert_eq!(kind(sim.set_device(D0, DeviceAddr(a), 0, 1)), nd);
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a), D0, DeviceAddr(a), 1)), nd);
    assert_eq!(kind(sim.create_queue(D0, 1)), nd);
    assert_eq!(kind(sim.submit(D0, q, TaskDesc::Marker)), nd);
    assert_eq!(kind(sim.progress(D0, q)), nd);
    assert_eq!(kind(sim.wait(D0, q, 1, Some(0))), nd);
    // The DMA path sees the closed device's window as nothing; pinned memory is unaffected.
    assert_eq!(kind(sim.dma_copy(DeviceAddr(p), DeviceAddr(a), 1)), ErrorKind::InvalidHandle);
    assert_eq!(kind(sim.dma_fill(DeviceAddr(a), 0, 1)), ErrorKind::InvalidHandle);
    // Closing twice is fine; the static facts stay readable.
    sim.close(D0).unwrap();
    assert_eq!(sim.device_info(D0).unwrap().hbm_bytes, 256 * MIB);
    sim.open(D0).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
    // Nothing of the old device survives: mappings, handles and queues are gone.
    assert_eq!(kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(a))), ErrorKind::InvalidHandle);
    assert_eq!(
        kind(sim.copy_from_device(D0, &mut [0u8; 1], DeviceAddr(base0() + 64 * MIB))),
        ErrorKind::InvalidHandle
    );
    assert_eq!(kind(sim.unback(D0, range(a, 4 * MIB))), ErrorKind::InvalidHandle);
    assert_eq!(kind(sim.unmap_physical(D0, range(base0() + 64 * MIB, 2 * MIB))), ErrorKind::InvalidHandle);
    assert_eq!(kind(sim.free_physical(D0, h)), ErrorKind::InvalidHandle);
    assert_eq!(kind(sim.progress(D0, q)), ErrorKind::InvalidHandle);
    // And the same VA can be backed again.
    sim.back(D0, &req(a, 4 * MIB, PageSize::Huge)).unwrap();
    sim.set_device(D0, DeviceAddr(a), 0x61, 16).unwrap();
    assert_eq!(read(sim, D0, a, 16), vec![0x61; 16]);
    sim.unback_host(range(p, 64 * KIB)).unwrap();
}

/// close runs the tasks still queued on the device before releasing its memory, so a queued
/// device-to-pinned copy lands in pinned memory.
#[test]
fn close_runs_queued_tasks_that_touch_device_memory() {
    let fx = start("close-drain");
    let sim = &fx.sim;
    let (a, p) = (base0(), host_window_base());
    let n = 16u64;
    sim.back(D0, &req(a, MIB, PageSize::Normal)).unwrap();
    sim.back_host(range(p, n * MIB)).unwrap();
    let q = sim.create_queue(D0, 64).unwrap();
    for i in 0..n {
        sim.submit(D0, q, TaskDesc::Memset { dst: DeviceAddr(a), value: i as u8 + 1, len_bytes: MIB })
            .unwrap();
        sim.submit(
            D0,
            q,
            TaskDesc::Copy { dst: DeviceAddr(p + i * MIB), src: DeviceAddr(a), len_bytes: MIB },
        )
        .unwrap();
    }
    sim.close(D0).unwrap();
    for i in 0..n {
        assert_eq!(read_pinned(sim, p + i * MIB, 16), vec![i as u8 + 1; 16], "copy {i}");
    }
    sim.unback_host(range(p, n * MIB)).unwrap();
}

/// device_count follows `visible`, device_info reflects the config, and a logical device uses
/// its physical device's HBM object, which goes away with the `Sim`.
#[test]
fn visibility_device_info_and_hbm_objects() {
    let cfg = SimConfig {
        devices: 3,
        visible: vec![2, 0],
        huge_budget_bytes: 32 * MIB,
        soc: SocProfile::A3,
        ..config("visible")
    };
    let name = cfg.instance.clone();
    let guard = lock();
    let sim = Sim::new(cfg).unwrap();
    assert_eq!(sim.device_count(), 2);
    let info = DeviceInfo {
        soc: SocProfile::A3,
        memory: hal::MemoryKind::Hbm,
        hbm_bytes: 256 * MIB,
        huge_budget_bytes: 32 * MIB,
        giant_budget_bytes: 0,
    };
    assert_eq!(sim.device_info(D0).unwrap(), info);
    assert_eq!(sim.device_info(D1).unwrap(), info);
    let nd = ErrorKind::NoDevice;
    assert_eq!(kind(sim.device_info(DeviceId(2))), nd);
    assert_eq!(kind(sim.open(DeviceId(2))), nd);
    assert_eq!(kind(sim.close(DeviceId(2))), nd);
    assert!(matches!(sim.open_device(DeviceId(2)), Err(SimError::NoDevice(2))));
    // Not open yet.
    assert_eq!(kind(sim.memory_info(D0)), nd);
    assert_eq!(sim.hbm_object_name(2), format!("/aclrs.{name}.dev2.hbm"));
    let (phys2, phys0) = (shm_path(&sim, 2), shm_path(&sim, 0));
    assert!(!phys2.exists() && !phys0.exists());
    sim.open(D0).unwrap();
    assert!(phys2.exists() && !phys0.exists());
    sim.open(D1).unwrap();
    assert!(phys0.exists());
    assert_eq!(
        sim.memory_info(D1).unwrap(),
        MemoryInfo { huge_total_bytes: 32 * MIB, huge_free_bytes: 32 * MIB, ..fresh_info() }
    );
    // Logical ids pick windows: logical 1 owns window 1.
    sim.back(D1, &req(device_window_base(1), 4 * KIB, PageSize::Normal)).unwrap();
    assert_eq!(kind(sim.back(D1, &req(base0(), 4 * KIB, PageSize::Normal))), ErrorKind::InvalidArgument);
    drop(sim);
    assert!(!phys2.exists() && !phys0.exists());
    drop(guard);
}

/// Only one `Sim` can exist in a process at a time; a second is refused and the first unharmed.
#[test]
fn second_sim_in_the_process_is_refused() {
    let fx = start("second");
    let sim = &fx.sim;
    sim.back(D0, &req(base0(), 4 * KIB, PageSize::Normal)).unwrap();
    sim.set_device(D0, DeviceAddr(base0()), 0x7E, 4 * KIB).unwrap();
    let second = Sim::new(config("second-b"));
    assert!(
        matches!(second, Err(SimError::Reserve { what: "pinned-host", addr, .. }) if addr == host_window_base())
    );
    assert_eq!(read(sim, D0, base0(), 4 * KIB), vec![0x7E; 4096]);
}

/// Two open devices: separate accounting, cross-device copy_device both ways.
#[test]
fn two_devices_copy_between_each_other() {
    let fx = start_with(config("two"), &[D0, D1]);
    let sim = &fx.sim;
    assert_eq!(sim.device_count(), 2);
    let (a0, a1) = (base0() + 2 * MIB, device_window_base(1) + 2 * MIB);
    let len = 2 * MIB;
    sim.back(D0, &req(a0, len, PageSize::Huge)).unwrap();
    sim.back(D1, &req(a1, 64 * KIB, PageSize::Normal)).unwrap();
    assert_eq!(
        sim.memory_info(D0).unwrap(),
        MemoryInfo { free_bytes: 254 * MIB, huge_free_bytes: 62 * MIB, ..fresh_info() }
    );
    assert_eq!(sim.memory_info(D1).unwrap(), MemoryInfo { free_bytes: 256 * MIB - 64 * KIB, ..fresh_info() });
    let pat = pattern(64 * KIB, 11);
    sim.copy_to_device(D0, DeviceAddr(a0), &pat).unwrap();
    sim.copy_device(D1, DeviceAddr(a1), D0, DeviceAddr(a0), 64 * KIB).unwrap();
    assert_eq!(read(sim, D1, a1, 64 * KIB), pat);
    sim.set_device(D1, DeviceAddr(a1 + 4 * KIB), 0x77, 4 * KIB).unwrap();
    sim.copy_device(D0, DeviceAddr(a0 + MIB), D1, DeviceAddr(a1), 8 * KIB).unwrap();
    assert_eq!(read(sim, D0, a0 + MIB, 8 * KIB), [&pat[..4 * KIB as usize], &[0x77; 4096][..]].concat());
    // Each address must be named with its own device.
    let ia = ErrorKind::InvalidArgument;
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a1), D1, DeviceAddr(a0), 1)), ia);
    assert_eq!(kind(sim.copy_to_device(D1, DeviceAddr(a0), &[1])), ia);
    // Unbacked bytes on the other device are still InvalidHandle.
    assert_eq!(
        kind(sim.copy_device(D0, DeviceAddr(a0), D1, DeviceAddr(a1 + 60 * KIB), 8 * KIB)),
        ErrorKind::InvalidHandle
    );
    // Physical handles belong to their device.
    let h1 = sim.alloc_physical(D1, 2 * MIB, PageSize::Huge, MemAttr::CACHED).unwrap();
    assert_eq!(
        kind(sim.map_physical(D0, h1, 0, range(base0() + 64 * MIB, 2 * MIB))),
        ErrorKind::InvalidHandle
    );
    assert_eq!(kind(sim.free_physical(D0, h1)), ErrorKind::InvalidHandle);
    sim.free_physical(D1, h1).unwrap();
    // Closing device 1 leaves device 0 working.
    sim.close(D1).unwrap();
    assert_eq!(kind(sim.copy_device(D0, DeviceAddr(a0), D1, DeviceAddr(a1), 1)), ErrorKind::NoDevice);
    assert_eq!(kind(sim.dma_copy(DeviceAddr(a0), DeviceAddr(a1), 1)), ErrorKind::InvalidHandle);
    assert_eq!(read(sim, D0, a0, 64 * KIB), pat);
    sim.unback(D0, range(a0, len)).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}

/// Reads `len` bytes of physical device `physical`'s HBM object at `offset`, from the file.
fn hbm_bytes(sim: &Sim, physical: u32, offset: u64, len: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(shm_path(sim, physical)).expect("open the HBM object");
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, offset).expect("read the HBM object");
    buf
}

/// A backed range gets the frames at its own window offset when they are free, and other frames
/// when not; either way its bytes are the HBM object's (shared with every process), also where
/// a mapping of other frames was there before.
#[test]
fn backing_prefers_the_frames_at_the_window_offset() {
    let fx = start("identity");
    let sim = &fx.sim;
    let (a, b) = (base0() + 64 * MIB, base0() + 96 * MIB);
    // A physical allocation takes the lowest frames; mapped at `a` it is not at identity.
    let h = sim.alloc_physical(D0, 4 * MIB, PageSize::Huge, MemAttr::CACHED).unwrap();
    sim.map_physical(D0, h, 0, range(a, 4 * MIB)).unwrap();
    let p1 = pattern(4 * MIB, 1);
    sim.copy_to_device(D0, DeviceAddr(a), &p1).unwrap();
    assert_eq!(hbm_bytes(sim, 0, 0, 4 * MIB), p1);
    sim.unmap_physical(D0, range(a, 4 * MIB)).unwrap();
    // Backing `a` now takes the frames at offset 64 MiB, in place of the mapping that was there.
    sim.back(D0, &req(a, 4 * MIB, PageSize::Huge)).unwrap();
    let p2 = pattern(4 * MIB, 2);
    sim.copy_to_device(D0, DeviceAddr(a), &p2).unwrap();
    assert_eq!(hbm_bytes(sim, 0, 64 * MIB, 4 * MIB), p2);
    // Offset 0 is taken by the physical allocation: backing the window's start takes others.
    sim.back(D0, &req(base0(), 4 * MIB, PageSize::Huge)).unwrap();
    let p3 = pattern(4 * MIB, 3);
    sim.copy_to_device(D0, DeviceAddr(base0()), &p3).unwrap();
    sim.map_physical(D0, h, 0, range(b, 4 * MIB)).unwrap();
    assert_eq!(read(sim, D0, b, 4 * MIB), p1, "the physical allocation kept its bytes");
    assert_eq!(read(sim, D0, a, 4 * MIB), p2);
    // Unbacked ranges fault again, however they were mapped.
    sim.unback(D0, range(a, 4 * MIB)).unwrap();
    sim.unback(D0, range(base0(), 4 * MIB)).unwrap();
    sim.unmap_physical(D0, range(b, 4 * MIB)).unwrap();
    for addr in [a, base0(), b] {
        let mut buf = [0u8; 16];
        assert_eq!(
            sim.copy_from_device(D0, &mut buf, DeviceAddr(addr)).unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
    }
    sim.free_physical(D0, h).unwrap();
    assert_eq!(sim.memory_info(D0).unwrap(), fresh_info());
}
