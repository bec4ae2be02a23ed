//! Property test of `mm::device::DeviceAllocator` (with `mm::policy` and `mm::slab`) against a
//! reference model: random sequences of allocations of every policy and size class, frees of
//! live, freed, interior and wild addresses, and a full release at the end.
//!
//! After every step: live allocations never overlap, start 64-byte aligned, lie in the window;
//! the slab-only lookup finds exactly the slab objects (and no freed address); the accounting
//! equals the model (usable bytes per component and in total) and the physical
//! frames in use equal the bytes the allocator says it backed; a rejected free changes nothing.
//! Half the cases keep a spare chunk per slab class: spares count as backed until a trim (or an
//! allocation under memory pressure) releases them, and after a trim nothing is backed beyond
//! the live objects' chunks.

use hal::{DeviceAddr, SocProfile, VaRange};
use mm::device::{DeviceAllocator, FrameBacker, FreeError, NotLive, APP};
use mm::phys::{FrameAllocator, PhysConfig};
use mm::policy::{request, Api};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;

const MIB: u64 = 1 << 20;
const BASE: u64 = 16 << 40;
const TOTAL: u64 = 256 * MIB;

#[derive(Clone, Debug)]
enum Op {
    Alloc { size: u64, policy: u32, component: u16, api: u8 },
    Free(usize),
    FreeInterior(usize, u64),
    FreeWild(u64),
    FreeTwice(usize),
    Trim,
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        5 => 1u64..=4096,
        3 => 4097u64..=(64 << 10),
        2 => (64u64 << 10)..=(3 * MIB),
        1 => (3 * MIB)..=(24 * MIB),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (size(), prop_oneof![Just(0u32), Just(1), Just(2), Just(3), Just(5), Just(0x1000)], prop_oneof![Just(APP), Just(7u16)], 0u8..3)
            .prop_map(|(size, policy, component, api)| Op::Alloc { size, policy, component, api }),
        4 => any::<usize>().prop_map(Op::Free),
        1 => (any::<usize>(), 1u64..4096).prop_map(|(i, o)| Op::FreeInterior(i, o)),
        1 => (0u64..(1 << 30)).prop_map(Op::FreeWild),
        1 => any::<usize>().prop_map(Op::FreeTwice),
        1 => Just(Op::Trim),
    ]
}

struct Live {
    usable: u64,
    component: u16,
}

fn check(a: &DeviceAllocator, b: &FrameBacker, model: &BTreeMap<u64, Live>, freed: &[u64]) {
    let mut end = 0;
    for (&base, l) in model {
        assert!(base >= end, "allocations overlap at {base:#x}");
        assert_eq!(base % 64, 0);
        assert!(base >= BASE && base + l.usable <= BASE + (64 << 30));
        let info = a.find(DeviceAddr(base)).expect("live allocation is found");
        assert_eq!(info.base, DeviceAddr(base));
        assert_eq!(info.usable_bytes, l.usable);
        assert!(a.contains_range(DeviceAddr(base), l.usable));
        // The slab-only lookup (the runtime's for addresses its map does not hold) answers for
        // slab objects, at their base and inside, and for nothing else.
        let last = DeviceAddr(base + l.usable - 1);
        // Any address inside is found (blocks sharing 2 MiB slots are told apart by their starts).
        for inside in [last, DeviceAddr(base + l.usable / 2)] {
            assert_eq!(a.find(inside).map(|i| i.base), Some(DeviceAddr(base)), "{inside:?} in {base:#x}");
        }
        if info.is_slab {
            assert_eq!(a.find_slab(DeviceAddr(base)), Some(info));
            assert_eq!(a.find_slab(last), Some(info));
        } else {
            assert_eq!(a.find_slab(DeviceAddr(base)), None);
            assert_eq!(a.find_slab(last), None);
        }
        end = base + l.usable;
    }
    for &f in freed {
        if model.range(..=f).next_back().is_none_or(|(&s, l)| f >= s + l.usable) {
            assert_eq!(a.find_slab(DeviceAddr(f)), None, "a freed address {f:#x} is no slab object");
        }
    }
    let acct = a.accounting();
    assert_eq!(acct.live.current, model.values().map(|l| l.usable).sum::<u64>());
    for (c, u) in &acct.components {
        assert_eq!(u.current, model.values().filter(|l| l.component == *c).map(|l| l.usable).sum::<u64>());
    }
    let info = b.frames.info();
    assert_eq!(acct.backed.current, info.total_bytes - info.free_bytes, "backed bytes are exact");
    assert!(acct.backed.current >= acct.live.current);
    assert_eq!(a.live_count(), model.len());
}

proptest! {
    #![proptest_config(common::config(48, 2))]

    #[test]
    fn device_allocator_matches_the_model(ops in prop::collection::vec(op(), 1..common::ops(160, 40)), keep_spare in any::<bool>()) {
        let window = VaRange::try_new(DeviceAddr(BASE), 64 << 30).unwrap();
        let frames = FrameAllocator::new(PhysConfig { total_bytes: TOTAL, huge_budget_bytes: 96 * MIB, giant_budget_bytes: 0 }).unwrap();
        let mut b = FrameBacker::new(frames);
        let mut a = DeviceAllocator::new(window);
        a.set_keep_spare(keep_spare);
        let mut model: BTreeMap<u64, Live> = BTreeMap::new();
        let mut freed: Vec<u64> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc { size, policy, component, api } => {
                    let api = [Api::Malloc, Api::Align32, Api::WithCfg][api as usize];
                    let Ok(req) = request(api, SocProfile::A2, size, policy) else { continue };
                    let before = (a.accounting().clone(), b.frames.info());
                    match a.allocate(&mut b, &req, component) {
                        Ok(p) => {
                            prop_assert!(p.as_u64() % 64 == 0);
                            model.insert(p.as_u64(), Live { usable: req.usable_bytes, component });
                            freed.retain(|&f| f != p.as_u64());
                        }
                        Err(_) => {
                            // Out of memory: nothing changed, apart from spares released
                            // before the last try.
                            prop_assert_eq!(a.spare_chunks(), 0);
                            prop_assert_eq!(before.0.live, a.accounting().live);
                            if before.0.backed == a.accounting().backed {
                                prop_assert_eq!(&before.0, a.accounting());
                                prop_assert_eq!(before.1, b.frames.info());
                            }
                        }
                    }
                }
                Op::Free(i) => {
                    if model.is_empty() { continue; }
                    let base = *model.keys().nth(i % model.len()).unwrap();
                    let info = a.free(&mut b, DeviceAddr(base)).unwrap();
                    prop_assert_eq!(info.usable_bytes, model[&base].usable);
                    model.remove(&base);
                    freed.push(base);
                }
                Op::FreeInterior(i, off) => {
                    if model.is_empty() { continue; }
                    let base = *model.keys().nth(i % model.len()).unwrap();
                    let off = off % model[&base].usable;
                    if off == 0 { continue; }
                    let before = (a.accounting().clone(), b.frames.info());
                    let r = a.free(&mut b, DeviceAddr(base + off));
                    prop_assert_eq!(r, Err(FreeError::NotLive(NotLive::Interior { base: DeviceAddr(base) })));
                    prop_assert_eq!(&before.0, a.accounting());
                    prop_assert_eq!(before.1, b.frames.info());
                }
                Op::FreeWild(off) => {
                    let addr = BASE + (off & !63);
                    if model.range(..=addr).next_back().is_some_and(|(&s, l)| addr < s + l.usable) { continue; }
                    let before = (a.accounting().clone(), b.frames.info());
                    prop_assert!(a.free(&mut b, DeviceAddr(addr)).is_err());
                    prop_assert_eq!(&before.0, a.accounting());
                    prop_assert_eq!(before.1, b.frames.info());
                }
                Op::FreeTwice(i) => {
                    if freed.is_empty() { continue; }
                    let addr = freed[i % freed.len()];
                    let before = (a.accounting().clone(), b.frames.info());
                    prop_assert!(a.free(&mut b, DeviceAddr(addr)).is_err());
                    prop_assert_eq!(&before.0, a.accounting());
                    prop_assert_eq!(before.1, b.frames.info());
                }
                Op::Trim => {
                    let spares = a.spare_chunks() as u64;
                    let backed = a.accounting().backed.current;
                    let released = a.trim(&mut b);
                    // The spares go whole; empty top segments of live chunks go too.
                    prop_assert!(released >= spares * 64 * 1024 && released <= backed);
                    prop_assert_eq!(a.accounting().backed.current, backed - released);
                    prop_assert_eq!(a.spare_chunks(), 0);
                    prop_assert_eq!(a.trim(&mut b), 0, "a second trim finds nothing kept");
                }
            }
            if !keep_spare {
                prop_assert_eq!(a.spare_chunks(), 0);
            }
            check(&a, &b, &model, &freed);
        }
        let bases: Vec<u64> = model.keys().copied().collect();
        for base in bases {
            a.free(&mut b, DeviceAddr(base)).unwrap();
        }
        let spares = a.spare_chunks() as u64;
        let backed = a.accounting().backed.current;
        prop_assert!(backed >= spares * 64 * 1024 && backed <= spares * 2 * MIB, "only spares stay backed");
        prop_assert_eq!(a.trim(&mut b), backed);
        prop_assert_eq!(a.accounting().backed.current, 0, "everything goes back");
        prop_assert_eq!(b.frames.info().free_bytes, TOTAL);
    }
}
