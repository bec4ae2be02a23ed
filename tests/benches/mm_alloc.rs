//! Benchmark of `mm` alone: the device allocator (policy, slab, VA, frames) driven with no
//! driver underneath on slab-size and large-block churn, and the stream-ordered pool on replays
//! of the LLM-training traces in `../shared/traces/` (the side-by-side with peer allocators on
//! the uniform and RMM-style mixes and the same traces is `benches/suballoc.rs`). Each churn row
//! also runs `offset-allocator` (which, like `mm`, manages numbers, not memory) on the same
//! stream of sizes and frees in the same run, the two taking turns batch by batch, and prints
//! mm's ratio to it. The two slab churns also run against the floor of a slab with mm's rules
//! (`floors/slab.rs`: the lowest free slot first and each object's size kept, each on or off),
//! all taking turns batch by batch. Prints Markdown tables; asserts nothing about time.
//! `ACLRS_TRACES_DIR` overrides where the traces are read.
//!
//! Run with `cargo bench -p aclrs-tests --bench mm_alloc` (add `-- --quick` for a short run;
//! `ACLRS_MM_ALLOC_ONLY=slab` keeps the workloads and traces whose name contains `slab`).

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use aclrs_tests::bench::{quick, Stats, Table};
use hal::{DeviceAddr, SocProfile, VaRange};
use mm::device::{DeviceAllocator, FrameBacker, APP};
use mm::order::{StreamOrder, StreamPoint};
use mm::phys::{FrameAllocator, PhysConfig};
use mm::policy::{request, Api, Request, HUGE_FIRST};
use mm::pool::{Pool, PoolBacking, ReuseModes};

#[path = "floors/slab.rs"]
mod slab_floor;
use slab_floor::Floor;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const BASE: u64 = 16 << 40;

fn fresh(total: u64) -> (DeviceAllocator, FrameBacker) {
    let window = VaRange::try_new(DeviceAddr(BASE), 128 * GIB).expect("window");
    let frames = FrameAllocator::new(PhysConfig {
        total_bytes: total,
        huge_budget_bytes: total,
        giant_budget_bytes: 0,
    })
    .expect("frames");
    (DeviceAllocator::new(window), FrameBacker::new(frames))
}

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Steady state: `live` allocations of sizes from `pick`; each step frees a random one and
/// allocates a new one. Runs mm and, on the same stream of sizes and frees, `offset-allocator`
/// over `total` bytes in 32-byte units (mm's `Align32` granularity), the two taking turns batch
/// by batch (so that a slower stretch of the machine falls on both alike). Returns ns per
/// alloc+free pair, one sample per batch: (mm, offset-allocator).
fn churn(
    pick: &mut dyn FnMut(&mut Rng) -> u64,
    live: usize,
    batch: usize,
    batches: usize,
    total: u64,
) -> (Vec<f64>, Vec<f64>) {
    const UNIT: u64 = 32;
    let (mut a, mut b) = fresh(total);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let reqs: Vec<Request> = (0..4096)
        .map(|_| request(Api::Align32, SocProfile::A2, pick(&mut rng), HUGE_FIRST).expect("request"))
        .collect();
    let units = u32::try_from(total / UNIT).unwrap_or(u32::MAX);
    let max_allocs = u32::try_from(2 * live + 1024).unwrap_or(u32::MAX);
    let mut o = offset_allocator::Allocator::<u32>::with_max_allocs(units, max_allocs);
    let sizes: Vec<u32> =
        reqs.iter().map(|r| u32::try_from(r.usable_bytes.div_ceil(UNIT)).expect("units")).collect();
    let mut ptrs: Vec<DeviceAddr> = (0..live)
        .map(|i| a.allocate(&mut b, &reqs[i % reqs.len()], APP).expect("warm-up allocation"))
        .collect();
    let mut handles: Vec<offset_allocator::Allocation<u32>> =
        (0..live).map(|i| o.allocate(sizes[i % sizes.len()]).expect("warm-up allocation")).collect();
    // Each allocator walks the same random stream from the same seed.
    let (mut rng_a, mut rng_o) = (Rng(rng.0), Rng(rng.0));
    let (mut k_a, mut k_o) = (0usize, 0usize);
    let (mut mm, mut peer) = (Vec::with_capacity(batches), Vec::with_capacity(batches));
    for _ in 0..batches {
        let t = Instant::now();
        for _ in 0..batch {
            // CAST: `live` fits in u64 and the result is below it.
            let i = rng_a.below(live as u64) as usize;
            a.free(&mut b, ptrs[i]).expect("free");
            k_a = (k_a + 1) % reqs.len();
            ptrs[i] = a.allocate(&mut b, &reqs[k_a], APP).expect("allocation");
        }
        // CAST: batch counts are small.
        mm.push(t.elapsed().as_nanos() as f64 / batch as f64);
        black_box(&ptrs);
        let t = Instant::now();
        for _ in 0..batch {
            // CAST: `live` fits in u64 and the result is below it.
            let i = rng_o.below(live as u64) as usize;
            o.free(handles[i]);
            k_o = (k_o + 1) % sizes.len();
            handles[i] = o.allocate(sizes[k_o]).expect("allocation");
        }
        // CAST: batch counts are small.
        peer.push(t.elapsed().as_nanos() as f64 / batch as f64);
        black_box(&handles);
    }
    (mm, peer)
}

/// One allocator's batches on a churn: runs `batch` pairs, returns ns per pair.
type Batches<'a> = Box<dyn FnMut(usize) -> f64 + 'a>;

/// A churn of `sizes` (usable bytes) on a slab floor of `live` objects, walking the random
/// stream from `rng`: one batch per call (see [`slab_floors`]).
fn floor_batches<'a, const LOWEST: bool, const SIZES: bool>(
    sizes: &'a [u64],
    live: usize,
    mut rng: Rng,
) -> Batches<'a> {
    let mut f = Floor::<LOWEST, SIZES>::new(BASE, 64 * GIB);
    let mut ptrs: Vec<u64> = (0..live).map(|i| f.alloc(sizes[i % sizes.len()])).collect();
    let mut k = 0usize;
    Box::new(move |batch| {
        let t = Instant::now();
        for _ in 0..batch {
            // CAST: `live` fits in u64 and the result is below it.
            let i = rng.below(live as u64) as usize;
            f.free(ptrs[i]);
            k = (k + 1) % sizes.len();
            ptrs[i] = f.alloc(sizes[k]);
        }
        black_box((&ptrs, f.live()));
        // CAST: batch counts are small.
        t.elapsed().as_nanos() as f64 / batch as f64
    })
}

/// mm's slab rows against the floor of a slab's rules (`floors/slab.rs`): mm and the four
/// floors (mm's two rules, each on or off) on the same stream of sizes and frees, taking turns
/// batch by batch. ns per pair, one sample per batch: mm, then the floors in [`FLOORS`] order.
fn slab_floors(
    pick: &mut dyn FnMut(&mut Rng) -> u64,
    live: usize,
    batch: usize,
    batches: usize,
) -> Vec<Vec<f64>> {
    let (mut a, mut b) = fresh(4 * GIB);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let reqs: Vec<Request> = (0..4096)
        .map(|_| request(Api::Align32, SocProfile::A2, pick(&mut rng), HUGE_FIRST).expect("request"))
        .collect();
    let sizes: Vec<u64> = reqs.iter().map(|r| r.usable_bytes).collect();
    let mut mm_rng = Rng(rng.0);
    let mut ptrs: Vec<DeviceAddr> = (0..live)
        .map(|i| a.allocate(&mut b, &reqs[i % reqs.len()], APP).expect("warm-up allocation"))
        .collect();
    let mut k = 0usize;
    let mm: Batches = Box::new(move |batch| {
        let t = Instant::now();
        for _ in 0..batch {
            // CAST: `live` fits in u64 and the result is below it.
            let i = mm_rng.below(live as u64) as usize;
            a.free(&mut b, ptrs[i]).expect("free");
            k = (k + 1) % reqs.len();
            ptrs[i] = a.allocate(&mut b, &reqs[k], APP).expect("allocation");
        }
        black_box(&ptrs);
        // CAST: batch counts are small.
        t.elapsed().as_nanos() as f64 / batch as f64
    });
    let mut all: Vec<Batches> = vec![
        mm,
        floor_batches::<true, true>(&sizes, live, Rng(rng.0)),
        floor_batches::<true, false>(&sizes, live, Rng(rng.0)),
        floor_batches::<false, true>(&sizes, live, Rng(rng.0)),
        floor_batches::<false, false>(&sizes, live, Rng(rng.0)),
    ];
    let mut samples: Vec<Vec<f64>> = all.iter().map(|_| Vec::with_capacity(batches)).collect();
    for _ in 0..batches {
        for (run, s) in all.iter_mut().zip(&mut samples) {
            s.push(run(batch));
        }
    }
    samples
}

/// The slab floors of [`slab_floors`], in order.
const FLOORS: [&str; 4] = [
    "floor with mm's rules: lowest free slot first, each object's size kept",
    "floor: lowest free slot first, no sizes",
    "floor: slot freed last first, sizes kept",
    "floor: slot freed last first, no sizes",
];

/// Pool regions from the device allocator's reservations, pages from `mm::phys`.
struct Backing<'a> {
    alloc: &'a mut DeviceAllocator,
    frames: &'a mut FrameBacker,
}

impl PoolBacking for Backing<'_> {
    fn reserve(&mut self, len: u64) -> Result<VaRange, hal::Error> {
        self.alloc.reserve_range(len, 1).map_err(|_| hal::Error::new(hal::ErrorKind::OutOfMemory, "no VA"))
    }

    fn unreserve(&mut self, range: VaRange) -> Result<(), hal::Error> {
        self.alloc
            .unreserve_range(range)
            .map_err(|_| hal::Error::new(hal::ErrorKind::InvalidHandle, "region"))
    }

    fn back(&mut self, page: VaRange) -> Result<(), hal::Error> {
        self.alloc.back_reserved(self.frames, page)
    }

    fn unback(&mut self, page: VaRange) -> Result<(), hal::Error> {
        self.alloc.unback_reserved(self.frames, page)
    }
}

/// One stream whose work is always complete (a replay has no kernels).
struct Done;

impl StreamOrder for Done {
    fn is_complete(&self, _: StreamPoint) -> bool {
        true
    }

    fn is_ordered_before(&self, p: StreamPoint, s: u32) -> bool {
        p.stream == s
    }
}

/// Replays a trace through a stream-ordered pool: (events, ns per op, peak live, peak reserved).
fn pool_replay(ops: &[(bool, u64, u64)]) -> Option<(usize, f64, u64, u64)> {
    let (mut a, mut b) = fresh(64 * GIB);
    let mut pool = Pool::new(64 * GIB, ReuseModes::default());
    let mut live: HashMap<u64, DeviceAddr> = HashMap::new();
    let t = Instant::now();
    for &(is_alloc, id, bytes) in ops {
        let mut back = Backing { alloc: &mut a, frames: &mut b };
        if is_alloc {
            live.insert(id, pool.allocate(&mut back, &Done, 0, bytes).ok()?.addr);
        } else {
            pool.free(live.remove(&id)?, 0, 0).ok()?;
        }
    }
    // CAST: event counts are small.
    let ns = t.elapsed().as_nanos() as f64 / ops.len() as f64;
    let st = pool.stats();
    Some((ops.len(), ns, st.used.peak, st.reserved.peak))
}

/// `../shared/traces/` next to the workspace, or the directory `ACLRS_TRACES_DIR` names.
fn traces_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ACLRS_TRACES_DIR") {
        return PathBuf::from(dir);
    }
    aclrs_tests::workspace().parent().map(|p| p.join("shared/traces")).unwrap_or_default()
}

fn parse(path: &std::path::Path) -> Option<Vec<(bool, u64, u64)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut ops: Vec<(bool, u64, u64)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["a", id, bytes, ..] => ops.push((true, id.parse().ok()?, bytes.parse().ok()?)),
            ["f", id] => ops.push((false, id.parse().ok()?, 0)),
            _ => return None,
        }
    }
    Some(ops)
}

/// A size picker.
type Pick = Box<dyn FnMut(&mut Rng) -> u64>;

/// A steady-state workload: name, size picker, live count, device bytes, target ns per pair.
type Case = (&'static str, Pick, usize, u64, f64);

fn main() {
    let q = quick();
    let (batches, batch) = if q { (30, 20_000) } else { (200, 50_000) };
    let mut table = Table::new(&[
        "workload",
        "p50 ns/pair",
        "p99 ns/pair",
        "spread",
        "offset-allocator p50 ns/pair (same run)",
        "vs offset-allocator",
        "target",
        "vs target",
    ]);
    let cases: Vec<Case> = vec![
        (
            "slab sizes 1 B–64 KiB, 4096 live",
            Box::new(|r: &mut Rng| 1 + r.below(64 << 10)),
            4096,
            4 * GIB,
            15.0,
        ),
        ("small 64 B–4 KiB, 4096 live", Box::new(|r: &mut Rng| 64 + r.below(4032)), 4096, 4 * GIB, 15.0),
        ("large 1–64 MiB, 64 live", Box::new(|r: &mut Rng| MIB + r.below(63 * MIB)), 64, 16 * GIB, 50.0),
    ];
    // ACLRS_MM_ALLOC_ONLY=<text> keeps the workloads whose name contains it (for profiling).
    let only = std::env::var("ACLRS_MM_ALLOC_ONLY").ok();
    let keep = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    for (name, mut pick, live, total, target) in cases.into_iter().filter(|c| keep(c.0)) {
        let (mm, offset) = churn(&mut *pick, live, batch / 10, batches, total);
        let (s, peer) = (Stats::of(&mm), Stats::of(&offset));
        table.row(vec![
            name.to_owned(),
            format!("{:.1}", s.median),
            format!("{:.1}", s.p99),
            s.spread(1),
            format!("{:.1}", peer.median),
            format!("{:.2}×", s.median / peer.median),
            format!("≤ {target} ns"),
            format!("{:.2}×", s.median / target),
        ]);
    }
    table.print("mm_alloc", "mm device allocator: alloc+free pairs (no driver, frames from mm::phys)");

    // mm's slab rows against the floor of a slab's rules, taking turns batch by batch.
    let mut floors = Table::new(&["workload", "slab", "p50 ns/pair", "spread", "vs mm", "target"]);
    let slab_cases: Vec<(&str, Pick)> = vec![
        ("slab sizes 1 B–64 KiB, 4096 live", Box::new(|r: &mut Rng| 1 + r.below(64 << 10))),
        ("small 64 B–4 KiB, 4096 live", Box::new(|r: &mut Rng| 64 + r.below(4032))),
    ];
    for (name, mut pick) in slab_cases.into_iter().filter(|c| keep(c.0)) {
        let runs = slab_floors(&mut *pick, 4096, batch / 10, batches);
        let stats: Vec<Stats> = runs.iter().map(|r| Stats::of(r)).collect();
        let who = std::iter::once("mm (DeviceAllocator)").chain(FLOORS);
        for (k, (slab, st)) in who.zip(&stats).enumerate() {
            floors.row(vec![
                name.to_owned(),
                slab.to_owned(),
                format!("{:.1}", st.median),
                st.spread(1),
                format!("{:.2}×", st.median / stats[0].median),
                if k == 0 { "≤ 15 ns".to_owned() } else { "–".to_owned() },
            ]);
        }
    }
    floors.print(
        "mm_alloc",
        "mm's slab against the floor of a slab's rules (tests/benches/floors/slab.rs), taking turns batch by batch",
    );

    let pytorch = [("ctx128_forward.trace", "1.031"), ("ctx128_fullstep.trace", "1.150")];
    let dir = traces_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "trace")).collect()
        })
        .unwrap_or_default();
    files.sort();
    let replays = if q { 3 } else { 9 };
    let mut pools = Table::new(&[
        "trace",
        "events",
        "p50 ns/event",
        "spread",
        "peak live MiB",
        "peak reserved MiB",
        "reserved/live",
        "PyTorch",
        "target",
    ]);
    for f in files.iter().filter(|f| keep(&f.to_string_lossy())) {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // One warm-up replay, then fresh pools: the median and spread of ns per event.
        let runs: Option<Vec<_>> =
            parse(f).and_then(|ops| (0..=replays).map(|_| pool_replay(&ops)).collect());
        match runs {
            Some(runs) => {
                let (events, _, live, reserved) = runs[0];
                let ns = Stats::of(&runs[1..].iter().map(|r| r.1).collect::<Vec<_>>());
                let peer = pytorch.iter().find(|(n, _)| *n == name).map_or("–", |(_, v)| v);
                // CAST: byte counts to MiB for display.
                pools.row(vec![
                    name,
                    events.to_string(),
                    format!("{:.1}", ns.median),
                    ns.spread(1),
                    format!("{:.1}", live as f64 / MIB as f64),
                    format!("{:.1}", reserved as f64 / MIB as f64),
                    format!("{:.4}", reserved as f64 / live as f64),
                    peer.to_owned(),
                    "≤ 1.01".to_owned(),
                ]);
            }
            None => eprintln!("mm_alloc: could not replay {} through a pool", f.display()),
        }
    }
    if files.is_empty() {
        println!("(no traces found in {})\n", dir.display());
    } else {
        pools.print(
            "mm_alloc",
            "mm::pool: trace replays through a stream-ordered pool (one stream, frames from mm::phys)",
        );
    }
}
