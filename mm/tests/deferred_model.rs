//! Property tests of `mm::device::DeferredFrees` and `mm::addr_map::AddressMap` against plain
//! models: random pushes, progress and settles on several streams (every free settles exactly
//! once, only when its point is complete, and never twice); random inserts, removes and lookups
//! of ranges (a lookup finds exactly the range a linear scan finds).

use std::cell::Cell;
use std::collections::BTreeMap;

use mm::addr_map::{AddressMap, MapError};
use mm::device::{DeferError, DeferredFrees};
use mm::order::{StreamOrder, StreamPoint};
use proptest::prelude::*;

mod common;

struct Done<'a>(&'a [u64; 4], Cell<usize>);

impl StreamOrder for Done<'_> {
    fn is_complete(&self, p: StreamPoint) -> bool {
        self.1.set(self.1.get() + 1);
        p.seq <= self.0[p.stream as usize]
    }

    fn is_ordered_before(&self, p: StreamPoint, stream: u32) -> bool {
        p.stream == stream
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Free base `b` on stream `s` at its next sequence.
    Push(u8, u8),
    /// Stream `s` completes `n` more tasks.
    Progress(u8, u8),
    /// Settle everything ready.
    Settle,
    /// Settle one stream up to its completed point.
    SettleStream(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..32, 0u8..4).prop_map(|(b, s)| Op::Push(b, s)),
        2 => (0u8..4, 0u8..4).prop_map(|(s, n)| Op::Progress(s, n)),
        1 => Just(Op::Settle),
        1 => (0u8..4).prop_map(Op::SettleStream),
    ]
}

proptest! {
    #![proptest_config(common::config(256, 2))]

    #[test]
    fn every_deferred_free_settles_once_and_only_when_its_point_is_complete(
        ops in proptest::collection::vec(op(), 1..common::ops(200, 50))
    ) {
        let mut d = DeferredFrees::new();
        let mut model: BTreeMap<u64, StreamPoint> = BTreeMap::new();
        let mut submitted = [0u64; 4];
        let mut done = [0u64; 4];
        for op in ops {
            match op {
                Op::Push(b, s) => {
                    let base = 0x10_0000 + u64::from(b) * 0x1000;
                    submitted[s as usize] += 1;
                    let p = StreamPoint { stream: u32::from(s), seq: submitted[s as usize] };
                    match model.get(&base) {
                        Some(&old) => prop_assert_eq!(d.push(base, p), Err(DeferError::AlreadyPending(old))),
                        None => {
                            prop_assert_eq!(d.push(base, p), Ok(()));
                            model.insert(base, p);
                        }
                    }
                }
                Op::Progress(s, n) => {
                    let s = s as usize;
                    done[s] = (done[s] + u64::from(n)).min(submitted[s]);
                }
                Op::Settle => {
                    let order = Done(&done, Cell::new(0));
                    let mut got = Vec::new();
                    let n = d.settle(&order, &mut |b| got.push(b));
                    prop_assert_eq!(n, got.len());
                    let ready: Vec<u64> = model
                        .iter()
                        .filter(|(_, p)| p.seq <= done[p.stream as usize])
                        .map(|(&b, _)| b)
                        .collect();
                    got.sort_unstable();
                    prop_assert_eq!(&got, &ready);
                    // One question per stream with pending frees, plus one per settled free.
                    prop_assert!(order.1.get() <= 4 + got.len());
                    for b in got {
                        model.remove(&b);
                    }
                }
                Op::SettleStream(s) => {
                    let mut got = Vec::new();
                    d.settle_stream(u32::from(s), done[s as usize], &mut |b| got.push(b));
                    let mut ready: Vec<u64> = model
                        .iter()
                        .filter(|(_, p)| p.stream == u32::from(s) && p.seq <= done[s as usize])
                        .map(|(&b, _)| b)
                        .collect();
                    // Oldest first.
                    ready.sort_by_key(|b| model[b].seq);
                    prop_assert_eq!(&got, &ready);
                    for b in got {
                        model.remove(&b);
                    }
                }
            }
            prop_assert_eq!(d.len(), model.len());
            for (&b, &p) in &model {
                prop_assert_eq!(d.pending(b), Some(p));
            }
        }
    }

    #[test]
    fn the_address_map_agrees_with_a_linear_scan(
        ops in proptest::collection::vec((0u64..64, 1u64..6, any::<bool>(), 0u64..70), 1..common::ops(200, 50))
    ) {
        let mut m: AddressMap<u64> = AddressMap::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        for (i, (start, len, insert, probe)) in ops.into_iter().enumerate() {
            let tag = i as u64;
            if insert {
                let clashes: Vec<u64> =
                    model.iter().filter(|&&(s, l)| start < s + l && s < start + len).map(|&(s, _)| s).collect();
                match m.insert(start, len, tag) {
                    Err(MapError::Overlaps(s)) => prop_assert!(clashes.contains(&s), "{s} not in {clashes:?}"),
                    r => {
                        prop_assert_eq!(r, Ok(()));
                        prop_assert!(clashes.is_empty());
                        model.push((start, len));
                    }
                }
            } else {
                let had = model.iter().position(|&(s, _)| s == start);
                prop_assert_eq!(m.remove(start).is_some(), had.is_some());
                if let Some(i) = had {
                    model.swap_remove(i);
                }
            }
            let want = model.iter().find(|&&(s, l)| probe >= s && probe < s + l).copied();
            prop_assert_eq!(m.find(probe).map(|r| (r.start, r.len)), want);
            prop_assert_eq!(m.len(), model.len());
        }
    }
}
