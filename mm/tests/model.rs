//! Property tests of `mm::phys` and `mm::va` against simple reference models.
//!
//! Each test applies a random sequence of operations to the real allocator and to a model (a
//! plain list of live allocations) and checks after every step that they agree: no overlap,
//! alignment, exact accounting, budgets, and that invalid frees fail without changing state.
//! The frame model also checks that an allocation is one run whenever an aligned free block
//! could hold it, and that runs written into a too-small buffer fail without changing state; the
//! VA model that the segregated fit picks the best fitting gap while it has few gaps to look at.
//! When everything is freed, each allocator is equal to a fresh one (fully coalesced).

use hal::{DeviceAddr, PageSize, VaRange};
use mm::phys::{FrameAllocator, PhysConfig, PhysRun};
use mm::va::{VaAllocator, SCAN};
use mm::Error;
use proptest::prelude::*;

mod common;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

// ---------------------------------------------------------------------------------------------
// Physical frames.

#[derive(Clone, Debug)]
enum PhysOp {
    /// Allocate; the count is scaled to the allocator's size.
    Alloc(PageSize, u64),
    /// Allocate one of a few small page counts, so that runs of one size are freed and
    /// allocated again and again (the quick-reuse cache's stacks, bucket conflicts and caps,
    /// held slack and blocks reused by their order).
    AllocFew(PageSize, usize),
    /// Free the live allocation at this index (modulo the number live).
    Free(usize),
    /// Free the first page of the first run of a live allocation.
    FreeFirstPage(usize),
    /// Free the last page of the last run of a live allocation (a piece that leaves the first
    /// frame of a run that holds slack allocated).
    FreeLastPage(usize),
    /// Free, as one run, the last page of the live run just before a live allocation's first
    /// run and that allocation's first page (a run spanning two allocations, and the first
    /// frame of one that may hold slack).
    FreeSpan(usize),
    /// Claim pages of this size just after the end of a live allocation's last run (where the
    /// slack it may hold lies), this many pages (page-aligned).
    ClaimAfter(usize, PageSize, u64),
    /// Give the quick-reuse cache and held slack back.
    Flush,
    /// Free a live allocation with the wrong page size.
    FreeWrongSize(usize, PageSize),
    /// Free an arbitrary page-aligned run.
    FreeArbitrary(PageSize, u64, u64),
    /// Allocate 2 MiB pages and a 4 KiB-page tail as one run (`alloc_huge_with_tail`): one of
    /// a few page counts and tails, so that joint runs are cached and reused too.
    AllocJoint(u64, u64),
    /// Free the live joint run at this index (modulo the number live), then again (rejected).
    FreeJoint(usize),
}

fn page_size() -> impl Strategy<Value = PageSize> {
    prop_oneof![
        6 => Just(PageSize::Normal),
        3 => Just(PageSize::Huge),
        1 => Just(PageSize::Giant),
    ]
}

fn phys_op() -> impl Strategy<Value = PhysOp> {
    prop_oneof![
        5 => (page_size(), any::<u64>()).prop_map(|(p, n)| PhysOp::Alloc(p, n)),
        4 => (page_size(), any::<usize>()).prop_map(|(p, n)| PhysOp::AllocFew(p, n)),
        3 => any::<usize>().prop_map(PhysOp::Free),
        1 => any::<usize>().prop_map(PhysOp::FreeFirstPage),
        1 => any::<usize>().prop_map(PhysOp::FreeLastPage),
        1 => any::<usize>().prop_map(PhysOp::FreeSpan),
        1 => (any::<usize>(), page_size(), 1..8u64).prop_map(|(i, p, n)| PhysOp::ClaimAfter(i, p, n)),
        1 => Just(PhysOp::Flush),
        1 => (any::<usize>(), page_size()).prop_map(|(i, p)| PhysOp::FreeWrongSize(i, p)),
        1 => (page_size(), any::<u64>(), 1..4u64)
            .prop_map(|(p, at, n)| PhysOp::FreeArbitrary(p, at, n)),
        2 => (1..4u64, prop_oneof![Just(1u64), Just(7), Just(511)])
            .prop_map(|(h, t)| PhysOp::AllocJoint(h, t)),
        1 => any::<usize>().prop_map(PhysOp::FreeJoint),
    ]
}

fn phys_config() -> impl Strategy<Value = PhysConfig> {
    prop_oneof![
        // Small: a few MiB with an odd tail of 4 KiB frames.
        (0..64u64, 0..8u64).prop_map(|(tail, huge)| PhysConfig {
            total_bytes: 6 * MIB + tail * 4 * KIB + 123,
            huge_budget_bytes: huge * MIB,
            giant_budget_bytes: 0,
        }),
        // Large enough for 1 GiB pages.
        (0..4u64, 0..3u64).prop_map(|(huge_gib, giant)| PhysConfig {
            total_bytes: 2 * GIB + 6 * MIB + 8 * KIB,
            huge_budget_bytes: huge_gib * GIB / 2,
            giant_budget_bytes: giant * GIB,
        }),
    ]
}

/// Live allocations of the model: page size and the runs still allocated.
type Live = Vec<(PageSize, Vec<PhysRun>)>;

fn live_bytes(live: &Live, page: Option<PageSize>) -> u64 {
    live.iter()
        .filter(|(p, _)| page.is_none_or(|q| q == *p))
        .flat_map(|(_, runs)| runs.iter())
        .map(|r| r.len_bytes)
        .sum()
}

/// Whether every byte of `run` lies in live runs of `page` size.
fn covered(live: &Live, page: PageSize, run: PhysRun) -> bool {
    let mut spans: Vec<(u64, u64)> = live
        .iter()
        .filter(|(p, _)| *p == page)
        .flat_map(|(_, runs)| runs.iter().map(|r| (r.offset, r.offset + r.len_bytes)))
        .collect();
    spans.sort_unstable();
    let mut cursor = run.offset;
    let end = run.offset + run.len_bytes;
    for (s, e) in spans {
        if s <= cursor && cursor < e {
            cursor = e;
        }
    }
    cursor >= end
}

fn check_phys(a: &FrameAllocator, cfg: &PhysConfig, live: &Live) -> Result<(), TestCaseError> {
    let total = cfg.total_bytes & !(4 * KIB - 1);
    let info = a.info();
    prop_assert_eq!(info.total_bytes, total);
    let used = live_bytes(live, None);
    prop_assert_eq!(info.free_bytes, total - used);
    prop_assert_eq!(a.allocated_bytes(), used);
    let huge_budget = cfg.huge_budget_bytes.min(total) & !(2 * MIB - 1);
    let giant_budget = cfg.giant_budget_bytes.min(total) & !(GIB - 1);
    prop_assert_eq!(info.huge_total_bytes, huge_budget);
    prop_assert_eq!(info.giant_total_bytes, giant_budget);
    let huge_used = live_bytes(live, Some(PageSize::Huge));
    let giant_used = live_bytes(live, Some(PageSize::Giant));
    prop_assert!(huge_used <= huge_budget);
    prop_assert!(giant_used <= giant_budget);
    prop_assert!(info.huge_free_bytes <= huge_budget - huge_used);
    prop_assert!(info.giant_free_bytes <= giant_budget - giant_used);
    prop_assert!(info.huge_free_bytes <= info.free_bytes);
    let mut spans: Vec<(u64, u64, PageSize)> = Vec::new();
    for (page, runs) in live {
        for r in runs {
            prop_assert!(r.len_bytes > 0);
            prop_assert_eq!(r.offset % page.bytes(), 0);
            prop_assert_eq!(r.len_bytes % page.bytes(), 0);
            prop_assert!(r.offset + r.len_bytes <= total);
            spans.push((r.offset, r.offset + r.len_bytes, *page));
        }
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        prop_assert!(pair[0].1 <= pair[1].0, "overlap: {:?}", pair);
    }
    Ok(())
}

/// Whether the model has an entirely free block of `bytes` (a power of two) aligned to its size.
fn has_free_block(live: &Live, total: u64, bytes: u64) -> bool {
    let mut spans: Vec<(u64, u64)> =
        live.iter().flat_map(|(_, runs)| runs.iter().map(|r| (r.offset, r.offset + r.len_bytes))).collect();
    spans.sort_unstable();
    let mut cursor = 0u64;
    for (s, e) in spans.into_iter().chain([(total, total)]) {
        let start = cursor.next_multiple_of(bytes);
        if start + bytes <= s {
            return true;
        }
        cursor = cursor.max(e);
    }
    false
}

/// The live allocations with each live joint run as its two parts: 2 MiB pages and a
/// 4 KiB-page tail (how the allocator records them).
fn with_joints(live: &Live, joints: &[PhysRun]) -> Live {
    let mut all = live.clone();
    for j in joints {
        let huge = j.len_bytes / (2 * MIB) * (2 * MIB);
        all.push((PageSize::Huge, vec![PhysRun { offset: j.offset, len_bytes: huge }]));
        all.push((
            PageSize::Normal,
            vec![PhysRun { offset: j.offset + huge, len_bytes: j.len_bytes - huge }],
        ));
    }
    all
}

/// Whether any byte of `[start, end)` lies in a live run (of any page size).
fn overlaps(live: &Live, start: u64, end: u64) -> bool {
    live.iter().flat_map(|(_, runs)| runs.iter()).any(|r| r.offset < end && start < r.offset + r.len_bytes)
}

/// Bytes of the aligned blocks of `bytes` (a power of two) inside `[0, total)` that no live run
/// touches.
fn free_aligned(live: &Live, total: u64, bytes: u64) -> u64 {
    (0..total / bytes).filter(|&b| !overlaps(live, b * bytes, (b + 1) * bytes)).count() as u64 * bytes
}

/// Takes `[start, end)` (all of it in live runs of `page` size) out of the live runs, dropping
/// allocations left with no run.
fn cut(live: &mut Live, page: PageSize, start: u64, end: u64) {
    for (_, runs) in live.iter_mut().filter(|(p, _)| *p == page) {
        let mut kept = Vec::new();
        for r in runs.drain(..) {
            let (s, e) = (r.offset, r.offset + r.len_bytes);
            if e <= start || end <= s {
                kept.push(r);
                continue;
            }
            if s < start {
                kept.push(PhysRun { offset: s, len_bytes: start - s });
            }
            if end < e {
                kept.push(PhysRun { offset: end, len_bytes: e - end });
            }
        }
        *runs = kept;
    }
    live.retain(|(_, runs)| !runs.is_empty());
}

/// `a` with its quick-reuse cache given back: the canonical state, equal for equal free frames.
fn norm(a: &FrameAllocator) -> FrameAllocator {
    let mut c = a.clone();
    c.set_quick_reuse(false);
    c
}

fn run_phys(cfg: PhysConfig, ops: Vec<PhysOp>, quick: bool) -> Result<(), TestCaseError> {
    let mut a = FrameAllocator::new(cfg).unwrap();
    a.set_quick_reuse(quick);
    let mut live: Live = Vec::new();
    let mut joints: Vec<PhysRun> = Vec::new();
    let total_frames = (cfg.total_bytes & !(4 * KIB - 1)) / (4 * KIB);
    for op in ops {
        let all = with_joints(&live, &joints);
        match op {
            PhysOp::AllocJoint(huge, tail) => {
                let bytes = huge * 2 * MIB + tail * 4 * KIB;
                let in_use = live_bytes(&all, Some(PageSize::Huge));
                let budget = a.info().huge_total_bytes;
                let before = a.clone();
                match a.alloc_huge_with_tail(huge, tail) {
                    Ok(Some(run)) => {
                        prop_assert!(in_use + huge * 2 * MIB <= budget);
                        prop_assert_eq!(run.offset % (2 * MIB), 0);
                        prop_assert_eq!(run.len_bytes, bytes);
                        joints.push(run);
                    }
                    Ok(None) => prop_assert_eq!(norm(&a), norm(&before), "a refusal changes nothing"),
                    Err(e) => {
                        prop_assert_eq!(e, Error::BudgetExhausted);
                        prop_assert!(in_use + huge * 2 * MIB > budget);
                        prop_assert_eq!(norm(&a), norm(&before));
                    }
                }
                // A tail of 512 frames or none is refused.
                prop_assert_eq!(a.alloc_huge_with_tail(huge, 512), Err(Error::InvalidArgument));
                prop_assert_eq!(a.alloc_huge_with_tail(huge, 0), Err(Error::InvalidArgument));
            }
            PhysOp::FreeJoint(i) if !joints.is_empty() => {
                let run = joints.swap_remove(i % joints.len());
                // Freed as 4 KiB pages (its huge part is not), or as a bare huge run: rejected.
                let before = a.clone();
                prop_assert!(a.free_pages(PageSize::Normal, &[run]).is_err());
                prop_assert_eq!(
                    a.free_huge_with_tail(PhysRun { offset: run.offset, len_bytes: 2 * MIB }),
                    Err(Error::InvalidArgument)
                );
                prop_assert_eq!(norm(&a), norm(&before));
                a.free_huge_with_tail(run).unwrap();
                let before = a.clone();
                prop_assert_eq!(a.free_huge_with_tail(run), Err(Error::NotAllocated));
                prop_assert_eq!(norm(&a), norm(&before));
            }
            PhysOp::Alloc(..) | PhysOp::AllocFew(..) => {
                let (page, raw, count) = match op {
                    PhysOp::Alloc(page, raw) => {
                        let max_pages = (total_frames * 4 * KIB / page.bytes() / 4).max(1);
                        (page, raw, 1 + raw % max_pages)
                    }
                    PhysOp::AllocFew(page, i) => {
                        // 600, 700 and 1000 4 KiB pages (and 3 huge pages) leave part of their
                        // block unused: with quick reuse they hold it, and reuse each other's
                        // cached blocks (all take a 4 MiB block).
                        // 9 to 255 pages leave part of a block of 16 to 256 frames unused too
                        // (75 and 100, 200 and 255 share a block order).
                        const FEW: [u64; 14] = [1, 2, 3, 16, 600, 700, 1000, 9, 20, 33, 75, 100, 200, 255];
                        // CAST: usize fits in u64 (the raw value only picks the buffer).
                        (page, i as u64, FEW[i % FEW.len()])
                    }
                    _ => unreachable!(),
                };
                let bytes = count * page.bytes();
                let free_before = a.info().free_bytes;
                let in_use = live_bytes(&all, Some(page));
                let budget = match page {
                    PageSize::Normal => u64::MAX,
                    PageSize::Huge => a.info().huge_total_bytes,
                    PageSize::Giant => a.info().giant_total_bytes,
                };
                let before = a.clone();
                let block = bytes.next_power_of_two();
                let one_block = block <= GIB && has_free_block(&all, total_frames * 4 * KIB, block);
                // Every other allocation goes through a two-run buffer first.
                let mut buf = [PhysRun::default(); 2];
                let into = (raw % 2 == 0).then(|| a.alloc_pages_into(page, count, &mut buf));
                let result = match into {
                    Some(Ok(n)) => Ok(buf[..n].to_vec()),
                    Some(Err(Error::InvalidArgument)) => {
                        prop_assert_eq!(norm(&a), norm(&before), "a full buffer changes nothing");
                        let runs = a.alloc_pages(page, count);
                        prop_assert!(runs.as_ref().is_ok_and(|r| r.len() > buf.len()), "{:?}", runs);
                        runs
                    }
                    Some(Err(e)) => Err(e),
                    None => a.alloc_pages(page, count),
                };
                match result {
                    Ok(runs) => {
                        if one_block {
                            prop_assert_eq!(runs.len(), 1, "a free block holds {} bytes", bytes);
                        }
                        prop_assert!(in_use + bytes <= budget);
                        prop_assert_eq!(runs.iter().map(|r| r.len_bytes).sum::<u64>(), bytes);
                        for pair in runs.windows(2) {
                            prop_assert_ne!(pair[0].offset + pair[0].len_bytes, pair[1].offset);
                        }
                        live.push((page, runs));
                    }
                    Err(Error::BudgetExhausted) => {
                        prop_assert!(in_use + bytes > budget);
                        prop_assert_eq!(norm(&a), norm(&before));
                    }
                    Err(e) => {
                        prop_assert_eq!(e, Error::OutOfMemory);
                        prop_assert!(in_use + bytes <= budget);
                        // Normal pages never fail while enough bytes are free.
                        if page == PageSize::Normal {
                            prop_assert!(bytes > free_before);
                        }
                        prop_assert_eq!(norm(&a), norm(&before));
                    }
                }
            }
            PhysOp::Free(i) if !live.is_empty() => {
                let (page, runs) = live.swap_remove(i % live.len());
                a.free_pages(page, &runs).unwrap();
                // A double free is rejected and changes nothing.
                let before = a.clone();
                prop_assert_eq!(a.free_pages(page, &runs), Err(Error::NotAllocated));
                prop_assert_eq!(norm(&a), norm(&before));
            }
            PhysOp::FreeFirstPage(i) if !live.is_empty() => {
                let i = i % live.len();
                let page = live[i].0;
                let first = live[i].1[0];
                let piece = PhysRun { offset: first.offset, len_bytes: page.bytes() };
                a.free_pages(page, &[piece]).unwrap();
                if first.len_bytes == page.bytes() {
                    live[i].1.remove(0);
                    if live[i].1.is_empty() {
                        live.swap_remove(i);
                    }
                } else {
                    live[i].1[0] = PhysRun {
                        offset: first.offset + page.bytes(),
                        len_bytes: first.len_bytes - page.bytes(),
                    };
                }
            }
            PhysOp::FreeLastPage(i) if !live.is_empty() => {
                let i = i % live.len();
                let page = live[i].0;
                let last = *live[i].1.last().unwrap();
                let end = last.offset + last.len_bytes;
                a.free_pages(page, &[PhysRun { offset: end - page.bytes(), len_bytes: page.bytes() }])
                    .unwrap();
                cut(&mut live, page, end - page.bytes(), end);
            }
            PhysOp::FreeSpan(i) => {
                // The allocations whose first run directly follows a live run of their size.
                let follows = |(page, runs): &&(PageSize, Vec<PhysRun>)| {
                    let at = runs[0].offset;
                    live.iter()
                        .filter(|(p, _)| p == page)
                        .flat_map(|(_, r)| r.iter())
                        .any(|r| r.offset + r.len_bytes == at)
                };
                let candidates: Vec<(PageSize, u64)> =
                    live.iter().filter(follows).map(|(p, runs)| (*p, runs[0].offset)).collect();
                if !candidates.is_empty() {
                    let (page, at) = candidates[i % candidates.len()];
                    let span = PhysRun { offset: at - page.bytes(), len_bytes: 2 * page.bytes() };
                    a.free_pages(page, &[span]).unwrap();
                    cut(&mut live, page, span.offset, span.offset + span.len_bytes);
                }
            }
            PhysOp::ClaimAfter(i, page, n) if !live.is_empty() => {
                let last = *live[i % live.len()].1.last().unwrap();
                let start = (last.offset + last.len_bytes).next_multiple_of(page.bytes());
                let run = PhysRun { offset: start, len_bytes: n * page.bytes() };
                let total = total_frames * 4 * KIB;
                let (in_use, budget) = match page {
                    PageSize::Normal => (0, u64::MAX),
                    PageSize::Huge => (live_bytes(&all, Some(page)), a.info().huge_total_bytes),
                    PageSize::Giant => (live_bytes(&all, Some(page)), a.info().giant_total_bytes),
                };
                let before = a.clone();
                match a.claim_pages(page, &[run]) {
                    Ok(()) => {
                        prop_assert!(start + run.len_bytes <= total);
                        prop_assert!(!overlaps(&all, start, start + run.len_bytes), "claimed {:?}", run);
                        prop_assert!(in_use + run.len_bytes <= budget);
                        live.push((page, vec![run]));
                    }
                    Err(e) => {
                        let expected = if start + run.len_bytes > total {
                            Error::InvalidArgument
                        } else if in_use + run.len_bytes > budget {
                            Error::BudgetExhausted
                        } else {
                            Error::OutOfMemory
                        };
                        prop_assert_eq!(e, expected);
                        if e == Error::OutOfMemory {
                            prop_assert!(overlaps(&all, start, start + run.len_bytes));
                        }
                        prop_assert_eq!(norm(&a), norm(&before));
                    }
                }
            }
            PhysOp::Flush => {
                let info = a.info();
                let flushed = a.flush_quick();
                prop_assert!(flushed <= info.free_bytes);
                // Given back, the huge and giant figures are exact: the whole aligned pages
                // that no live run touches, within the budget left.
                let total = total_frames * 4 * KIB;
                let after = a.info();
                prop_assert_eq!(after.free_bytes, info.free_bytes);
                for (page, figure, total_budget) in [
                    (PageSize::Huge, after.huge_free_bytes, after.huge_total_bytes),
                    (PageSize::Giant, after.giant_free_bytes, after.giant_total_bytes),
                ] {
                    let left = total_budget - live_bytes(&all, Some(page));
                    prop_assert_eq!(figure, left.min(free_aligned(&all, total, page.bytes())), "{:?}", page);
                }
                prop_assert!(info.huge_free_bytes <= after.huge_free_bytes);
                prop_assert!(info.giant_free_bytes <= after.giant_free_bytes);
                // And the allocator is in its canonical state.
                let mut canonical = norm(&a);
                canonical.set_quick_reuse(quick);
                prop_assert_eq!(&canonical, &a);
            }
            PhysOp::FreeWrongSize(i, wrong) if !live.is_empty() => {
                let (page, runs) = &live[i % live.len()];
                if *page != wrong {
                    let before = a.clone();
                    prop_assert!(a.free_pages(wrong, runs).is_err());
                    prop_assert_eq!(norm(&a), norm(&before));
                }
            }
            PhysOp::FreeArbitrary(page, at, n) => {
                let slots = (total_frames * 4 * KIB / page.bytes()).max(1);
                let run = PhysRun { offset: (at % slots) * page.bytes(), len_bytes: n * page.bytes() };
                if !covered(&all, page, run) {
                    let before = a.clone();
                    prop_assert!(a.free_pages(page, &[run]).is_err());
                    prop_assert_eq!(norm(&a), norm(&before));
                }
            }
            _ => {}
        }
        check_phys(&a, &cfg, &with_joints(&live, &joints))?;
    }
    // Everything freed: the allocator is as new.
    for (page, runs) in live.drain(..) {
        a.free_pages(page, &runs).unwrap();
    }
    for run in joints.drain(..) {
        a.free_huge_with_tail(run).unwrap();
    }
    prop_assert_eq!(norm(&a), FrameAllocator::new(cfg).unwrap());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Device VA.

#[derive(Clone, Debug)]
enum VaOp {
    /// Allocate `len` bytes aligned to `2^align_shift`.
    Alloc(u64, u32),
    /// Free the live range at this index (modulo the number live).
    Free(usize),
    /// Free an arbitrary range.
    FreeArbitrary(u64, u64),
    /// Look up an address (an offset into the window).
    Find(u64),
}

fn va_op() -> impl Strategy<Value = VaOp> {
    prop_oneof![
        5 => (1..0x6000u64, 0..16u32).prop_map(|(len, s)| VaOp::Alloc(len, s)),
        3 => any::<usize>().prop_map(VaOp::Free),
        1 => (0..0x40000u64, 1..0x3000u64).prop_map(|(at, len)| VaOp::FreeArbitrary(at, len)),
        1 => (0..0x40000u64).prop_map(VaOp::Find),
    ]
}

/// The free gaps of the window, given the live ranges.
fn gaps(window: VaRange, live: &[VaRange]) -> Vec<(u64, u64)> {
    let mut sorted: Vec<VaRange> = live.to_vec();
    sorted.sort_by_key(|r| r.start());
    let mut out = Vec::new();
    let mut cursor = window.start().as_u64();
    for r in sorted {
        if r.start().as_u64() > cursor {
            out.push((cursor, r.start().as_u64() - cursor));
        }
        cursor = r.end();
    }
    if window.end() > cursor {
        out.push((cursor, window.end() - cursor));
    }
    out
}

fn fits(gap: (u64, u64), len: u64, align: u64) -> bool {
    let aligned = gap.0.next_multiple_of(align);
    aligned - gap.0 + len <= gap.1
}

fn run_va(window_start: u64, ops: Vec<VaOp>) -> Result<(), TestCaseError> {
    let window = VaRange::try_new(DeviceAddr(window_start), 0x30000).unwrap();
    let mut va = VaAllocator::new(window);
    let mut live: Vec<VaRange> = Vec::new();
    for op in ops {
        match op {
            VaOp::Alloc(len, shift) => {
                let align = 1u64 << shift;
                let free = gaps(window, &live);
                let best = free.iter().filter(|g| fits(**g, len, align)).min_by_key(|g| (g.1, g.0)).copied();
                let before = va.clone();
                match va.alloc(len, align) {
                    Ok(r) => {
                        prop_assert_eq!(r.len_bytes(), len);
                        prop_assert!(r.start().is_aligned(align));
                        prop_assert!(window.contains_range(&r));
                        prop_assert!(live
                            .iter()
                            .all(|l| r.end() <= l.start().as_u64() || l.end() <= r.start().as_u64()));
                        let (gs, gl) = best.expect("allocation succeeded without a fitting gap");
                        let gap = free.iter().find(|g| g.0 <= r.start().as_u64() && r.end() <= g.0 + g.1);
                        let gap = gap.copied().expect("the range lies in a free gap");
                        prop_assert!(fits(gap, len, align));
                        // With at most SCAN gaps no class holds more than the search looks at,
                        // so the fit is exact: the smallest fitting gap, lowest first.
                        if free.len() <= SCAN {
                            prop_assert_eq!(gap, (gs, gl));
                        }
                        live.push(r);
                    }
                    Err(e) => {
                        prop_assert_eq!(e, Error::OutOfVa);
                        prop_assert!(best.is_none(), "a gap fits: {:?}", best);
                        prop_assert_eq!(&va, &before);
                    }
                }
            }
            VaOp::Free(i) if !live.is_empty() => {
                let r = live.swap_remove(i % live.len());
                va.free(r).unwrap();
                let before = va.clone();
                prop_assert_eq!(va.free(r), Err(Error::NotAllocated));
                prop_assert_eq!(&va, &before);
            }
            VaOp::FreeArbitrary(at, len) => {
                let r = VaRange::try_new(DeviceAddr(window_start + at), len).unwrap();
                if !live.contains(&r) {
                    let before = va.clone();
                    prop_assert_eq!(va.free(r), Err(Error::NotAllocated));
                    prop_assert_eq!(&va, &before);
                }
            }
            VaOp::Find(at) => {
                let addr = DeviceAddr(window_start + at);
                let expected = live.iter().find(|r| r.contains(addr)).copied();
                prop_assert_eq!(va.find(addr), expected);
            }
            VaOp::Free(_) => {}
        }
        let used: u64 = live.iter().map(|r| r.len_bytes()).sum();
        prop_assert_eq!(va.free_bytes(), window.len_bytes() - used);
        prop_assert_eq!(va.window(), window);
    }
    for r in live.drain(..) {
        va.free(r).unwrap();
    }
    prop_assert_eq!(va, VaAllocator::new(window));
    Ok(())
}

proptest! {
    #![proptest_config(common::config(64, 2))]

    #[test]
    fn frame_allocator_matches_model(
        cfg in phys_config(),
        ops in prop::collection::vec(phys_op(), 1..common::ops(200, 32)),
    ) {
        run_phys(cfg, ops, false)?;
    }

    #[test]
    fn frame_allocator_with_quick_reuse_matches_model(
        cfg in phys_config(),
        ops in prop::collection::vec(phys_op(), 1..common::ops(200, 32)),
    ) {
        run_phys(cfg, ops, true)?;
    }

    #[test]
    fn va_allocator_matches_model(
        start in prop_oneof![Just(0x1000_0000u64), 0x1000u64..0x10_0000],
        ops in prop::collection::vec(va_op(), 1..common::ops(200, 32)),
    ) {
        run_va(start, ops)?;
    }
}
