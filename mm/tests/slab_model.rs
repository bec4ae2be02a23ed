//! Property test of the slab side of `mm::device::DeviceAllocator` (its fast and slow paths)
//! against a model: random churn of small objects of a few size classes per case (so that
//! chunks fill several 64 KiB segments) and of every slab kind (4 KiB-page and 2 MiB-page
//! chunks, two components), frees in random order, double frees, interior
//! frees, frees of addresses no chunk holds, trims, with and without a spare chunk per class.
//!
//! After every step: every live object is found with its usable bytes and lies in its chunk's
//! backed bytes; a 4 KiB-page chunk is backed as a prefix of whole 64 KiB segments that is
//! shrunk as far as the hysteresis allows (its top segment, or the one below it, holds an
//! object), a 2 MiB-page chunk is backed whole; the accounting (live bytes in total, per
//! component and per policy, and the peaks of each) equals the model, and the bytes backed equal the chunks' backed
//! bytes plus the spares' (which are 64 KiB or 2 MiB each, and none after a trim) and the
//! frames in use; a rejected free changes nothing; a chunk holds objects of one kind only
//! (component, policy, page size).

use hal::{DeviceAddr, PageSize, SocProfile, VaRange};
use mm::device::{DeviceAllocator, FrameBacker, FreeError, NotLive, APP};
use mm::phys::{FrameAllocator, PhysConfig};
use mm::policy::{request, Api, HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY};
use mm::slab::{class_of, CHUNK_BYTES, CLASS_BYTES, SEGMENT_BYTES};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;

const MIB: u64 = 1 << 20;
const BASE: u64 = 16 << 40;

#[derive(Clone, Debug)]
enum Op {
    /// One of the case's sizes (a few per case, so that chunks fill several segments).
    Alloc {
        size: usize,
        policy: u32,
        component: u16,
    },
    Free(usize),
    /// Allocations of one request until its class's head chunk turns full (objects of 16 KiB
    /// or more, so that it takes at most 128), then a free in that full chunk and the same
    /// allocation again: the chunk goes back to the head of its class's list and the
    /// allocation takes the freed slot back (a head turning full is taken off the list with no
    /// other chunk touched).
    FillFreeRealloc {
        size: usize,
        policy: u32,
        component: u16,
    },
    FreeTwice(usize),
    FreeInterior(usize),
    /// An address in the window (or below it) that no chunk covers, or that lies in a chunk but
    /// names no object: the slot-table lookup's and slot arithmetic's foreign cases.
    FreeForeign(u64),
    Trim,
}

fn op() -> impl Strategy<Value = Op> {
    let policy = prop_oneof![6 => Just(HUGE_FIRST), 1 => Just(NORMAL_ONLY), 1 => Just(HUGE_ONLY)];
    prop_oneof![
        8 => (any::<usize>(), policy.clone(), prop_oneof![4 => Just(APP), 1 => Just(7u16)])
            .prop_map(|(size, policy, component)| Op::Alloc { size, policy, component }),
        6 => any::<usize>().prop_map(Op::Free),
        1 => (any::<usize>(), policy, prop_oneof![4 => Just(APP), 1 => Just(7u16)])
            .prop_map(|(size, policy, component)| Op::FillFreeRealloc { size, policy, component }),
        1 => any::<usize>().prop_map(Op::FreeTwice),
        1 => any::<usize>().prop_map(Op::FreeInterior),
        1 => any::<u64>().prop_map(Op::FreeForeign),
        1 => Just(Op::Trim),
    ]
}

#[derive(Clone, Copy, Debug)]
struct Live {
    usable: u64,
    component: u16,
    policy: usize,
    /// Asked for 2 MiB pages only (served from a 2 MiB-page chunk).
    huge: bool,
}

fn object_bytes(usable: u64) -> u64 {
    u64::from(CLASS_BYTES[class_of(usable).expect("a slab size")])
}

/// The peaks the accounting must show: of the live bytes in total, per component, per policy.
#[derive(Debug, Default)]
struct Peaks {
    live: u64,
    components: BTreeMap<u16, u64>,
    policies: BTreeMap<usize, u64>,
}

impl Peaks {
    /// Raises the peaks to the model's current sums (called after every allocation).
    fn update(&mut self, model: &BTreeMap<u64, Live>, l: Live) {
        let sum = |f: &dyn Fn(&Live) -> bool| model.values().filter(|m| f(m)).map(|m| m.usable).sum::<u64>();
        self.live = self.live.max(sum(&|_| true));
        let c = sum(&|m| m.component == l.component);
        let e = self.components.entry(l.component).or_default();
        *e = (*e).max(c);
        let p = sum(&|m| m.policy == l.policy);
        let e = self.policies.entry(l.policy).or_default();
        *e = (*e).max(p);
    }
}

fn check(a: &DeviceAllocator, b: &FrameBacker, model: &BTreeMap<u64, Live>, freed: &[u64], peaks: &Peaks) {
    for (&base, l) in model {
        let info = a.find_slab(DeviceAddr(base)).expect("a live object is found");
        assert_eq!((info.base, info.usable_bytes, info.component), (DeviceAddr(base), l.usable, l.component));
        assert_eq!(a.get(DeviceAddr(base)), Ok(info));
    }
    for &f in freed {
        // A freed address not inside a live object (another class may reuse its chunk).
        if model.range(..=f).next_back().is_none_or(|(&s, l)| f >= s + object_bytes(l.usable)) {
            assert_eq!(a.find_slab(DeviceAddr(f)), None, "freed {f:#x} is no object");
        }
    }
    let mut chunks_backed = 0;
    for s in a.segments().iter().filter(|s| s.is_slab) {
        assert!(!s.blocks.is_empty(), "a chunk with no object is a spare, not a segment");
        chunks_backed += s.backed_bytes;
        let base = s.base.as_u64();
        let reach = |(b, u): &(u64, u64)| b - base + object_bytes(*u);
        let top = s.blocks.iter().map(reach).max().unwrap_or(0);
        // A chunk holds objects of one kind only (the fast paths find a request's kind by a
        // packed key): one component, one policy, the chunk's page size.
        let first = model[&s.blocks[0].0];
        for (b, _) in &s.blocks {
            let l = model[b];
            assert_eq!(
                (l.component, l.policy),
                (s.component, first.policy),
                "object {b:#x} in chunk {base:#x}"
            );
        }
        assert_eq!(s.page_size == PageSize::Huge, first.huge, "chunk {base:#x}: page size of its kind");
        assert!(top <= s.backed_bytes, "every object lies in backed bytes");
        if s.page_size == PageSize::Huge {
            assert_eq!(s.backed_bytes, CHUNK_BYTES);
            continue;
        }
        assert!(s.backed_bytes % SEGMENT_BYTES == 0 && s.backed_bytes >= SEGMENT_BYTES);
        // Shrunk as far as it goes: one empty segment at most above the highest used one.
        let used_segments = top.div_ceil(SEGMENT_BYTES).max(1);
        assert!(
            s.backed_bytes / SEGMENT_BYTES <= used_segments + 1,
            "chunk {base:#x}: {} bytes backed for objects up to {top}",
            s.backed_bytes
        );
    }
    let acct = a.accounting();
    assert_eq!(acct.live.current, model.values().map(|l| l.usable).sum::<u64>());
    assert_eq!(acct.live.peak, peaks.live, "peak live bytes");
    for (c, u) in &acct.components {
        assert_eq!(u.current, model.values().filter(|l| l.component == *c).map(|l| l.usable).sum::<u64>());
        assert_eq!(u.peak, peaks.components.get(c).copied().unwrap_or(0), "peak of component {c}");
    }
    for (p, u) in acct.policies.iter().enumerate() {
        assert_eq!(u.current, model.values().filter(|l| l.policy == p).map(|l| l.usable).sum::<u64>());
        assert_eq!(u.peak, peaks.policies.get(&p).copied().unwrap_or(0), "peak of policy {p}");
    }
    let spares = acct.backed.current - chunks_backed;
    assert!(
        spares <= a.spare_chunks() as u64 * CHUNK_BYTES && spares >= a.spare_chunks() as u64 * SEGMENT_BYTES
    );
    let info = b.frames.info();
    assert_eq!(acct.backed.current, info.total_bytes - info.free_bytes, "backed bytes are exact");
    assert_eq!(a.live_count(), model.len());
}

proptest! {
    #![proptest_config(common::config(48, 2))]

    #[test]
    fn slab_churn_matches_the_model(
        sizes in prop::collection::vec(
            prop_oneof![2 => 1u64..=1024, 2 => 1025u64..=4096, 3 => 4097u64..=(64 << 10)],
            1..4,
        ),
        ops in prop::collection::vec(op(), 1..common::ops(600, 60)),
        keep_spare in any::<bool>(),
    ) {
        let window = VaRange::try_new(DeviceAddr(BASE), 64 << 30).unwrap();
        let frames = FrameAllocator::new(PhysConfig {
            total_bytes: 512 * MIB,
            huge_budget_bytes: 256 * MIB,
            giant_budget_bytes: 0,
        })
        .unwrap();
        let mut b = FrameBacker::new(frames);
        let mut a = DeviceAllocator::new(window);
        a.set_keep_spare(keep_spare);
        let mut model: BTreeMap<u64, Live> = BTreeMap::new();
        let mut freed: Vec<u64> = Vec::new();
        let mut peaks = Peaks::default();
        for op in ops {
            match op {
                Op::Alloc { size, policy, component } => {
                    let size = sizes[size % sizes.len()];
                    let req = request(Api::Align32, SocProfile::A2, size, policy).unwrap();
                    prop_assert!(DeviceAllocator::is_slab_request(&req));
                    let p = a.allocate(&mut b, &req, component).unwrap().as_u64();
                    prop_assert_eq!(p % 64, 0);
                    let l = Live {
                        usable: req.usable_bytes,
                        component,
                        policy: req.class.index(),
                        huge: policy == HUGE_ONLY,
                    };
                    let prev = model.insert(p, l);
                    prop_assert!(prev.is_none(), "{:#x} handed out twice", p);
                    peaks.update(&model, l);
                    // Objects never overlap.
                    let end = p + req.usable_bytes;
                    prop_assert!(model.range(..p).next_back().is_none_or(|(&s, l)| s + l.usable <= p));
                    prop_assert!(model.range(p + 1..).next().is_none_or(|(&s, _)| s >= end));
                }
                Op::Free(i) => {
                    let Some(&base) = model.keys().nth(i % model.len().max(1)) else { continue };
                    let info = a.free(&mut b, DeviceAddr(base)).unwrap();
                    let l = model.remove(&base).unwrap();
                    prop_assert_eq!((info.usable_bytes, info.component, info.is_slab), (l.usable, l.component, true));
                    freed.push(base);
                }
                Op::FillFreeRealloc { size, policy, component } => {
                    let size = sizes[size % sizes.len()];
                    let req = request(Api::Align32, SocProfile::A2, size, policy).unwrap();
                    let object = object_bytes(req.usable_bytes);
                    if object < 16 << 10 { continue; }
                    let l = Live {
                        usable: req.usable_bytes,
                        component,
                        policy: req.class.index(),
                        huge: policy == HUGE_ONLY,
                    };
                    let chunk_of = |p: u64| (p - BASE) / CHUNK_BYTES;
                    let mut last: Option<u64> = None;
                    let mut full = None;
                    for _ in 0..=CHUNK_BYTES / object {
                        let p = a.allocate(&mut b, &req, component).unwrap().as_u64();
                        prop_assert!(model.insert(p, l).is_none(), "{:#x} handed out twice", p);
                        peaks.update(&model, l);
                        if let Some(q) = last.filter(|&q| chunk_of(q) != chunk_of(p)) {
                            full = Some(q);
                            break;
                        }
                        last = Some(p);
                    }
                    let Some(victim) = full else { continue };
                    let n = model.keys().filter(|&&q| chunk_of(q) == chunk_of(victim)).count() as u64;
                    prop_assert_eq!(n, CHUNK_BYTES / object, "the chunk left behind is full");
                    a.free(&mut b, DeviceAddr(victim)).unwrap();
                    let p = a.allocate(&mut b, &req, component).unwrap().as_u64();
                    prop_assert_eq!(p, victim, "the freed slot of a full chunk is taken back");
                }
                Op::FreeTwice(i) => {
                    let Some(&addr) = freed.get(i % freed.len().max(1)) else { continue };
                    if model.contains_key(&addr) { continue; }
                    let before = (a.accounting().clone(), b.frames.info(), a.live_count());
                    prop_assert!(a.free(&mut b, DeviceAddr(addr)).is_err());
                    prop_assert_eq!(&before.0, a.accounting());
                    prop_assert_eq!((before.1, before.2), (b.frames.info(), a.live_count()));
                }
                Op::FreeInterior(i) => {
                    let Some((&base, l)) = model.iter().nth(i % model.len().max(1)) else { continue };
                    if l.usable < 2 { continue; }
                    let before = (a.accounting().clone(), b.frames.info(), a.live_count());
                    let r = a.free(&mut b, DeviceAddr(base + l.usable / 2));
                    prop_assert_eq!(r, Err(FreeError::NotLive(NotLive::Interior { base: DeviceAddr(base) })));
                    prop_assert_eq!(&before.0, a.accounting());
                    prop_assert_eq!((before.1, before.2), (b.frames.info(), a.live_count()));
                }
                Op::FreeForeign(x) => {
                    // Below the window, anywhere in the first GiB of it, or just past a live
                    // object's slot (where no object starts unless the slot is live).
                    let addr = match (x % 3, model.iter().nth((x as usize) % model.len().max(1))) {
                        (0, _) => BASE - 64 - (x % MIB) * 64,
                        (1, Some((&s, l))) => s + object_bytes(l.usable),
                        _ => BASE + (x % (1 << 30)) / 64 * 64,
                    };
                    if model.contains_key(&addr) || freed.contains(&addr) { continue; }
                    let inside = model.range(..=addr).next_back().is_some_and(|(&s, l)| addr < s + object_bytes(l.usable));
                    let before = (a.accounting().clone(), b.frames.info(), a.live_count());
                    let r = a.free(&mut b, DeviceAddr(addr));
                    if inside {
                        prop_assert!(matches!(r, Err(FreeError::NotLive(NotLive::Interior { .. }))), "{:?}", r);
                    } else {
                        prop_assert_eq!(r, Err(FreeError::NotLive(NotLive::Unknown)), "foreign {:#x}", addr);
                    }
                    prop_assert_eq!(&before.0, a.accounting());
                    prop_assert_eq!((before.1, before.2), (b.frames.info(), a.live_count()));
                }
                Op::Trim => {
                    a.trim(&mut b);
                    prop_assert_eq!(a.spare_chunks(), 0);
                }
            }
            check(&a, &b, &model, &freed, &peaks);
        }
        if !keep_spare {
            prop_assert_eq!(a.spare_chunks(), 0);
        }
        for base in core::mem::take(&mut model).into_keys() {
            a.free(&mut b, DeviceAddr(base)).unwrap();
        }
        a.trim(&mut b);
        prop_assert_eq!(a.accounting().backed.current, 0);
        prop_assert_eq!(a.accounting().live.current, 0);
    }
}
