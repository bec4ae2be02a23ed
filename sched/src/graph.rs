//! The host-side dependency graph between streams: which stream waits, at which of its
//! sequence numbers, for which point of another stream, and how far each stream has completed.
//!
//! This module owns the answer to the pools' [`StreamOrder`] question ("is point (A, s) ordered
//! before everything stream B runs from now on?") from the recorded waits and the completed
//! sequence numbers its owner tells it; it never asks a device. The [`Executor`] keeps one for
//! its streams, and the runtime keeps one per device for the backend's queues (updated when it
//! records a wait and when it learns a queue's progress), so both backends answer the question
//! with the same code.
//!
//! # The rules
//!
//! - Every pending wait is an edge "stream B, at its sequence `at`, waits for (A, s)".
//! - A point is ordered before the tail of stream B when it has completed, when it is on B
//!   itself, or when B (transitively) waits on a point at or after it on its stream.
//! - An edge is dropped once its wait has completed: the wait completes only after its target
//!   did, so from then on the target is answered by "it has completed". The graph therefore
//!   holds at most one edge per queued wait.
//! - A stream the graph does not know (never added, or removed) counts as complete: a stream
//!   is removed only once it has finished everything (or dropped what it had not started).
//!
//! Completed sequence numbers may lag behind the device (the runtime learns them when it
//! reads a queue's progress). A lagging value only makes the answer conservative: "not
//! ordered" where the device might already have ordered it, never the reverse.
//!
//! [`Executor`]: crate::Executor

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use mm::order::{StreamOrder, StreamPoint};

/// A pending wait: the stream waits, at its sequence `at`, for `target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The waiting stream's sequence number of the wait.
    pub at: u64,
    /// The point waited for.
    pub target: StreamPoint,
}

/// What the graph knows of one stream.
#[derive(Debug, Default)]
struct Node {
    /// The highest sequence number known to have completed.
    completed: u64,
    /// The stream's waits that have not completed, in sequence order.
    edges: VecDeque<Edge>,
}

/// The waits between streams and their completed sequence numbers (see the [module
/// documentation](self)).
///
/// Plain data driven through `&mut self`; the owner serialises access.
///
/// # Invariants
///
/// - `nodes[s].edges` is sorted by `at`, and every edge in it has `at > nodes[s].completed`.
/// - No edge targets its own stream.
#[derive(Debug, Default)]
pub struct DepGraph {
    nodes: BTreeMap<u32, Node>,
}

impl DepGraph {
    /// An empty graph.
    pub const fn new() -> Self {
        Self { nodes: BTreeMap::new() }
    }

    /// Starts tracking `stream`, with nothing completed. Adding a known stream forgets what
    /// the graph knew of it (its id was reused).
    pub fn add_stream(&mut self, stream: u32) {
        self.nodes.insert(stream, Node::default());
    }

    /// Stops tracking `stream` (destroyed): points on it count as complete from now on and
    /// its waits are dropped.
    pub fn remove_stream(&mut self, stream: u32) {
        self.nodes.remove(&stream);
    }

    /// Whether the graph tracks `stream`.
    pub fn has_stream(&self, stream: u32) -> bool {
        self.nodes.contains_key(&stream)
    }

    /// Records that `stream`, at its sequence `at`, waits for `target`. A target on `stream`
    /// itself, one already complete, or a wait on an unknown stream records nothing. Waits
    /// must be added in sequence order per stream; an older one than the newest recorded is
    /// ignored (it can only make answers conservative).
    pub fn add_wait(&mut self, stream: u32, at: u64, target: StreamPoint) {
        if target.stream == stream || self.is_complete(target) {
            return;
        }
        let Some(node) = self.nodes.get_mut(&stream) else { return };
        if at <= node.completed || node.edges.back().is_some_and(|e| e.at >= at) {
            return;
        }
        // INVARIANT: `at` is above `completed` and above every edge already held.
        node.edges.push_back(Edge { at, target });
    }

    /// Records that `stream` has completed everything up to `seq` (a lower value than the one
    /// known changes nothing), and drops its waits that completed with it.
    pub fn note_completed(&mut self, stream: u32, seq: u64) {
        let Some(node) = self.nodes.get_mut(&stream) else { return };
        if seq <= node.completed {
            return;
        }
        node.completed = seq;
        // INVARIANT: edges at or below the completed sequence go.
        while node.edges.front().is_some_and(|e| e.at <= seq) {
            node.edges.pop_front();
        }
    }

    /// The highest sequence number of `stream` known to have completed (`None` for a stream
    /// the graph does not track).
    pub fn completed(&self, stream: u32) -> Option<u64> {
        self.nodes.get(&stream).map(|n| n.completed)
    }

    /// How many waits the graph holds (for tests and diagnostics).
    pub fn edge_count(&self) -> usize {
        self.nodes.values().map(|n| n.edges.len()).sum()
    }

    /// The pending waits of `stream`, oldest first.
    pub fn waits_of(&self, stream: u32) -> impl Iterator<Item = &Edge> {
        self.nodes.get(&stream).into_iter().flat_map(|n| n.edges.iter())
    }
}

impl StreamOrder for DepGraph {
    fn is_complete(&self, point: StreamPoint) -> bool {
        self.nodes.get(&point.stream).is_none_or(|n| n.completed >= point.seq)
    }

    fn is_ordered_before(&self, point: StreamPoint, stream: u32) -> bool {
        if point.stream == stream || self.is_complete(point) {
            return true;
        }
        if self.nodes.get(&stream).is_none_or(|n| n.edges.is_empty()) {
            // `stream` waits for nothing pending: no walk (and no allocation) needed.
            return false;
        }
        // Depth-first over the wait edges from the tail of `stream`, remembering the highest
        // sequence examined per stream: edges up to that sequence have been followed already.
        let mut seen: BTreeMap<u32, u64> = BTreeMap::new();
        let mut todo: Vec<(u32, u64)> = alloc::vec![(stream, u64::MAX)];
        while let Some((s, upto)) = todo.pop() {
            if seen.get(&s).is_some_and(|&done| done >= upto) {
                continue;
            }
            seen.insert(s, upto);
            let Some(node) = self.nodes.get(&s) else { continue };
            for e in node.edges.iter().take_while(|e| e.at <= upto) {
                if e.target.stream == point.stream {
                    if e.target.seq >= point.seq {
                        return true;
                    }
                } else {
                    todo.push((e.target.stream, e.target.seq));
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;

    use proptest::prelude::*;

    use super::*;

    fn p(stream: u32, seq: u64) -> StreamPoint {
        StreamPoint { stream, seq }
    }

    fn graph(streams: &[u32]) -> DepGraph {
        let mut g = DepGraph::new();
        for &s in streams {
            g.add_stream(s);
        }
        g
    }

    #[test]
    fn same_stream_and_completed_points_are_ordered() {
        let mut g = graph(&[0, 1]);
        assert!(g.is_ordered_before(p(0, 5), 0), "the same stream runs in order");
        assert!(!g.is_ordered_before(p(0, 5), 1), "no wait, not complete");
        assert!(!g.is_complete(p(0, 5)));
        g.note_completed(0, 5);
        assert!(g.is_complete(p(0, 5)) && g.is_ordered_before(p(0, 5), 1));
        assert!(!g.is_complete(p(0, 6)));
        // A lower completed value changes nothing.
        g.note_completed(0, 2);
        assert_eq!(g.completed(0), Some(5));
    }

    #[test]
    fn a_wait_orders_the_waiting_stream_and_only_up_to_its_target() {
        let mut g = graph(&[0, 1, 2]);
        // Stream 1 waits, at its seq 3, for (0, 4).
        g.add_wait(1, 3, p(0, 4));
        assert!(g.is_ordered_before(p(0, 4), 1));
        assert!(g.is_ordered_before(p(0, 2), 1), "earlier points of the target stream too");
        assert!(!g.is_ordered_before(p(0, 5), 1), "a later point is not covered");
        assert!(!g.is_ordered_before(p(1, 1), 0), "the order is one way");
        assert!(!g.is_ordered_before(p(0, 4), 2), "an unrelated stream");
        assert_eq!(g.edge_count(), 1);
    }

    #[test]
    fn waits_chain_transitively_but_only_through_earlier_waits() {
        let mut g = graph(&[0, 1, 2]);
        // 1 waits at 2 for (0, 7); 2 waits at 5 for (1, 2).
        g.add_wait(1, 2, p(0, 7));
        g.add_wait(2, 5, p(1, 2));
        assert!(g.is_ordered_before(p(0, 7), 2), "through stream 1's wait");
        // Stream 2 waits for (1, 1) only: stream 1's wait at 2 is after that point.
        let mut h = graph(&[0, 1, 2]);
        h.add_wait(1, 2, p(0, 7));
        h.add_wait(2, 5, p(1, 1));
        assert!(!h.is_ordered_before(p(0, 7), 2));
        assert!(h.is_ordered_before(p(1, 1), 2));
    }

    #[test]
    fn cycles_terminate() {
        let mut g = graph(&[0, 1]);
        g.add_wait(0, 2, p(1, 2));
        g.add_wait(1, 3, p(0, 1));
        assert!(g.is_ordered_before(p(1, 2), 0));
        assert!(!g.is_ordered_before(p(1, 9), 0));
        assert!(!g.is_ordered_before(p(0, 5), 1));
    }

    #[test]
    fn completion_prunes_waits_and_removal_completes_a_stream() {
        let mut g = graph(&[0, 1]);
        g.add_wait(1, 3, p(0, 4));
        g.add_wait(1, 6, p(0, 8));
        assert_eq!(g.waits_of(1).count(), 2);
        g.note_completed(0, 4);
        g.note_completed(1, 3);
        assert_eq!(g.waits_of(1).map(|e| e.at).collect::<Vec<_>>(), vec![6]);
        // Pruning keeps the answers: (0, 4) completed.
        assert!(g.is_ordered_before(p(0, 4), 1) && g.is_ordered_before(p(0, 8), 1));
        g.remove_stream(0);
        assert!(g.is_complete(p(0, 100)), "a removed stream finished everything");
        assert!(!g.has_stream(0) && g.completed(0).is_none());
    }

    #[test]
    fn waits_that_add_nothing_are_not_recorded() {
        let mut g = graph(&[0, 1]);
        g.add_wait(1, 2, p(1, 1)); // on itself
        g.note_completed(0, 3);
        g.add_wait(1, 2, p(0, 3)); // complete target
        g.add_wait(7, 2, p(0, 9)); // unknown waiting stream
        assert_eq!(g.edge_count(), 0);
        g.add_wait(1, 4, p(0, 9));
        g.add_wait(1, 4, p(0, 10)); // not after the newest recorded wait
        g.note_completed(1, 5);
        g.add_wait(1, 5, p(0, 11)); // already completed on the waiting stream
        assert_eq!(g.edge_count(), 0);
    }

    /// One step of the model run.
    #[derive(Clone, Debug)]
    enum Op {
        /// Submit a plain task to the stream.
        Task(u32),
        /// The stream waits for a submitted point of another stream (`pick` chooses it).
        Wait(u32, u32, u64),
        /// The stream runs as far as its dependencies let it, at most `n` more items.
        Run(u32, u64),
        /// Ask the question for a submitted point (`pick` chooses it) and a later stream.
        Ask(u32, u64, u32),
    }

    const STREAMS: u32 = 4;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..STREAMS).prop_map(Op::Task),
            (0..STREAMS, 0..STREAMS, any::<u64>()).prop_map(|(a, b, k)| Op::Wait(a, b, k)),
            (0..STREAMS, 1..4u64).prop_map(|(s, n)| Op::Run(s, n)),
            (0..STREAMS, any::<u64>(), 0..STREAMS).prop_map(|(a, k, b)| Op::Ask(a, k, b)),
        ]
    }

    /// Every item of every stream: `None` for a task, `Some(point)` for a wait.
    struct Model {
        items: Vec<Vec<Option<StreamPoint>>>,
        completed: Vec<u64>,
    }

    impl Model {
        /// Whether `point` happens before the next item of `stream`: complete, or reachable
        /// backwards from `stream`'s tail over program order and waits.
        fn ordered(&self, point: StreamPoint, stream: u32) -> bool {
            if self.completed[point.stream as usize] >= point.seq {
                return true;
            }
            let mut todo = vec![p(stream, self.items[stream as usize].len() as u64)];
            let mut seen = vec![0u64; STREAMS as usize];
            while let Some(q) = todo.pop() {
                let s = q.stream as usize;
                if q.stream == point.stream && q.seq >= point.seq {
                    return true;
                }
                if seen[s] >= q.seq {
                    continue;
                }
                for seq in seen[s] + 1..=q.seq {
                    if let Some(t) = self.items[s][seq as usize - 1] {
                        todo.push(t);
                    }
                }
                seen[s] = q.seq;
            }
            false
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: if cfg!(miri) { 4 } else { 256 },
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// The graph, fed the waits and the completions, answers as a brute-force walk over
        /// every item ever submitted.
        #[test]
        fn answers_as_the_full_history(ops in proptest::collection::vec(op(), 1..60)) {
            let mut g = graph(&[0, 1, 2, 3]);
            let mut m = Model { items: vec![Vec::new(); STREAMS as usize], completed: vec![0; STREAMS as usize] };
            for op in ops {
                match op {
                    Op::Task(s) => m.items[s as usize].push(None),
                    Op::Wait(a, b, k) => {
                        let len = m.items[b as usize].len() as u64;
                        if a == b || len == 0 {
                            continue;
                        }
                        let target = p(b, 1 + k % len);
                        m.items[a as usize].push(Some(target));
                        g.add_wait(a, m.items[a as usize].len() as u64, target);
                    }
                    Op::Run(s, n) => {
                        let i = s as usize;
                        for _ in 0..n {
                            let next = m.completed[i] + 1;
                            let Some(item) = m.items[i].get(next as usize - 1) else { break };
                            if let Some(t) = item {
                                if m.completed[t.stream as usize] < t.seq {
                                    break;
                                }
                            }
                            m.completed[i] = next;
                        }
                        g.note_completed(s, m.completed[i]);
                    }
                    Op::Ask(a, k, b) => {
                        let len = m.items[a as usize].len() as u64;
                        if len == 0 {
                            continue;
                        }
                        let point = p(a, 1 + k % len);
                        prop_assert_eq!(g.is_ordered_before(point, b), m.ordered(point, b), "{:?} before {}", point, b);
                        prop_assert_eq!(g.is_complete(point), m.completed[a as usize] >= point.seq);
                    }
                }
            }
            // At most one edge per wait that has not completed.
            let pending: usize = (0..STREAMS as usize)
                .map(|s| m.items[s][m.completed[s] as usize..].iter().filter(|i| i.is_some()).count())
                .sum();
            prop_assert!(g.edge_count() <= pending);
        }
    }
}
