//! Property test of `mm::pool`: random allocations and frees on several streams, random
//! progress and event edges, every reuse-mode combination. After every step, busy blocks never
//! overlap, the statistics are exact, the reserved bytes stay within the maximum, and — the
//! safety property — no block is granted to a stream while another stream may still be using it,
//! unless the stream is ordered after that use or the grant says what to wait for.

use std::collections::{BTreeMap, BTreeSet};

use hal::{DeviceAddr, ErrorKind, VaRange};
use mm::order::{StreamOrder, StreamPoint};
use mm::pool::{Pool, PoolBacking, ReuseModes, BLOCK_ALIGN, PAGE};
use proptest::prelude::*;

mod common;

const MIB: u64 = 1 << 20;

struct Src {
    next: u64,
    reserved: BTreeMap<u64, u64>,
    backed: BTreeSet<u64>,
}

impl PoolBacking for Src {
    fn reserve(&mut self, len: u64) -> Result<VaRange, hal::Error> {
        let r = VaRange::try_new(DeviceAddr(self.next), len).unwrap();
        self.next += len;
        self.reserved.insert(r.start().as_u64(), len);
        Ok(r)
    }

    fn unreserve(&mut self, range: VaRange) -> Result<(), hal::Error> {
        assert!(self.backed.range(range.start().as_u64()..range.end()).next().is_none());
        self.reserved
            .remove(&range.start().as_u64())
            .map(|_| ())
            .ok_or(hal::Error::new(ErrorKind::InvalidHandle, "x"))
    }

    fn back(&mut self, page: VaRange) -> Result<(), hal::Error> {
        if self.backed.len() as u64 * PAGE >= 96 * MIB {
            return Err(hal::Error::new(ErrorKind::OutOfMemory, "device full"));
        }
        assert!(self
            .reserved
            .range(..=page.start().as_u64())
            .next_back()
            .is_some_and(|(&b, &l)| page.end() <= b + l));
        assert!(self.backed.insert(page.start().as_u64()), "a page backed twice");
        Ok(())
    }

    fn unback(&mut self, page: VaRange) -> Result<(), hal::Error> {
        self.backed
            .remove(&page.start().as_u64())
            .then_some(())
            .ok_or(hal::Error::new(ErrorKind::InvalidHandle, "x"))
    }
}

/// Streams 0..3 with a submitted and completed sequence each, and wait edges: `(q, t, n)` means
/// the tasks of stream `t` after its `n`-th wait for everything of `q.stream` up to `q.seq`.
#[derive(Default)]
struct Order {
    submitted: [u64; 3],
    completed: [u64; 3],
    waits: Vec<(StreamPoint, u32, u64)>,
}

impl Order {
    /// Whether `p` is ordered before the task `seq` of stream `u` (transitively).
    fn before_point(&self, p: StreamPoint, u: u32, seq: u64, depth: u32) -> bool {
        if p.stream == u && p.seq <= seq {
            return true;
        }
        depth < 8
            && self
                .waits
                .iter()
                .any(|&(r, t, n)| t == u && n < seq && self.before_point(p, r.stream, r.seq, depth + 1))
    }

    /// Stream `t` waits for `q`: the wait is itself a task of `t`, so finishing it (or anything
    /// after it) implies `q` finished.
    fn wait(&mut self, q: StreamPoint, t: u32) {
        self.waits.push((q, t, self.submitted[t as usize]));
        self.submitted[t as usize] += 1;
    }

    /// Stream `s` finishes everything submitted; what it waited for must have finished first.
    fn complete(&mut self, s: u32) {
        self.completed[s as usize] = self.submitted[s as usize];
        loop {
            let mut changed = false;
            for &(q, t, n) in &self.waits {
                if n < self.completed[t as usize] && self.completed[q.stream as usize] < q.seq {
                    self.completed[q.stream as usize] = q.seq;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}

impl StreamOrder for Order {
    fn is_complete(&self, p: StreamPoint) -> bool {
        self.completed[p.stream as usize] >= p.seq
    }

    fn is_ordered_before(&self, p: StreamPoint, s: u32) -> bool {
        // Ordered before anything submitted to `s` from now on.
        self.before_point(p, s, u64::MAX, 0)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Alloc(u32, u64),
    Free(usize, bool),
    Submit(u32),
    Complete(u32),
    Wait(u32, u32),
    Trim(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u32..3, prop_oneof![1u64..4096, 4096u64..(3 * MIB), (3 * MIB)..(12 * MIB)]).prop_map(|(s, n)| Op::Alloc(s, n)),
        4 => (any::<usize>(), any::<bool>()).prop_map(|(i, b)| Op::Free(i, b)),
        2 => (0u32..3).prop_map(Op::Submit),
        2 => (0u32..3).prop_map(Op::Complete),
        1 => (0u32..3, 0u32..3).prop_map(|(a, b)| Op::Wait(a, b)),
        1 => (0u64..64).prop_map(|m| Op::Trim(m * MIB)),
    ]
}

proptest! {
    #![proptest_config(common::config(64, 2))]

    #[test]
    fn pool_never_hands_out_memory_still_in_use(ops in prop::collection::vec(op(), 1..common::ops(150, 40)), m in 0u8..8) {
        let modes = ReuseModes {
            follow_event_dependencies: m & 1 != 0,
            allow_opportunistic: m & 2 != 0,
            allow_internal_dependencies: m & 4 != 0,
        };
        let max = 64 * MIB;
        let mut src = Src { next: 16 << 40, reserved: BTreeMap::new(), backed: BTreeSet::new() };
        let mut ord = Order::default();
        let mut pool = Pool::new(max, modes);
        // Busy blocks: addr -> (size, stream). Pending uses: (addr, size, point) not complete.
        let mut busy: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
        let mut pending: Vec<(u64, u64, StreamPoint)> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc(s, n) => {
                    let Ok(g) = pool.allocate(&mut src, &ord, s, n) else { continue };
                    let (a, len) = (g.addr.as_u64(), g.size_bytes);
                    prop_assert_eq!(a % BLOCK_ALIGN, 0);
                    prop_assert!(len >= n && len < n + BLOCK_ALIGN);
                    if let Some(w) = g.wait_for {
                        // The caller inserts the wait before using the block.
                        ord.wait(w, s);
                    }
                    for &(pa, pl, p) in &pending {
                        let overlaps = pa < a + len && a < pa + pl;
                        if overlaps && !ord.is_complete(p) {
                            prop_assert!(
                                ord.is_ordered_before(p, s),
                                "block {a:#x}+{len} granted to stream {s} while stream {} may use it (pending {:?} at {pa:#x}+{pl}; grant {:?})", p.stream, p, g
                            );
                        }
                    }
                    busy.insert(a, (len, s));
                }
                Op::Free(i, bump) => {
                    if busy.is_empty() { continue; }
                    let a = *busy.keys().nth(i % busy.len()).unwrap();
                    let (len, s) = busy.remove(&a).unwrap();
                    // The block was used by its stream up to now: that use ends at the tail.
                    // (Without a bump, neighbours freed together share a point and merge.)
                    if bump || ord.submitted[s as usize] == 0 {
                        ord.submitted[s as usize] += 1;
                    }
                    let p = StreamPoint { stream: s, seq: ord.submitted[s as usize] };
                    prop_assert_eq!(pool.free(DeviceAddr(a), s, p.seq), Ok(len));
                    prop_assert!(pool.free(DeviceAddr(a), s, p.seq).is_err(), "double free refused");
                    pending.push((a, len, p));
                }
                Op::Submit(s) => ord.submitted[s as usize] += 1,
                Op::Complete(s) => ord.complete(s),
                Op::Wait(a, b) => {
                    let p = StreamPoint { stream: a, seq: ord.submitted[a as usize] };
                    ord.wait(p, b);
                }
                Op::Trim(keep) => {
                    let used = pool.stats().used.current;
                    let r = pool.trim_to(&mut src, &ord, keep);
                    if keep < used { prop_assert!(r.is_err()); } else { prop_assert!(r.is_ok()); }
                }
            }
            pending.retain(|&(_, _, p)| !ord.is_complete(p));
            let mut end = 0;
            for (&a, &(l, _)) in &busy {
                prop_assert!(a >= end, "busy blocks overlap");
                end = a + l;
            }
            let st = pool.stats();
            prop_assert_eq!(st.used.current, busy.values().map(|v| v.0).sum::<u64>());
            prop_assert_eq!(st.reserved.current, src.backed.len() as u64 * PAGE);
            prop_assert!(st.reserved.current <= max);
            // Every page a busy block touches is backed.
            for (&a, &(l, _)) in &busy {
                let mut p = a / PAGE * PAGE;
                while p < a + l {
                    prop_assert!(src.backed.contains(&p), "busy block {a:#x} on an unbacked page");
                    p += PAGE;
                }
            }
        }
        for (&a, &(_, s)) in &busy.clone() {
            ord.submitted[s as usize] += 1;
            pool.free(DeviceAddr(a), s, ord.submitted[s as usize]).unwrap();
        }
        ord.completed = ord.submitted;
        pool.trim_to(&mut src, &ord, 0).unwrap();
        prop_assert_eq!(pool.stats().reserved.current, 0);
        prop_assert!(src.backed.is_empty(), "every page goes back");
        prop_assert!(src.reserved.is_empty(), "every region goes back");
    }
}
