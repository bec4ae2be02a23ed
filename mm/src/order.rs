//! The stream-order oracle: the question `mm` asks `sched` about time.
//!
//! Stream-ordered memory (pools, frees on streams) needs to know whether work recorded at some
//! point of a stream has finished, or is guaranteed to finish before everything that will be
//! submitted to another stream from now on. `mm` cannot depend on `sched` (it sits below it), so
//! it defines this trait and `sched` implements it. This module must not know how streams work.

/// A point in a stream: everything submitted to `stream` up to and including sequence `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamPoint {
    /// The stream's id.
    pub stream: u32,
    /// A sequence number in that stream (1 is its first task; 0 is "before any task").
    pub seq: u64,
}

/// Answers ordering questions about streams.
pub trait StreamOrder {
    /// Whether every task of `point.stream` up to `point.seq` has completed.
    fn is_complete(&self, point: StreamPoint) -> bool;

    /// Whether `point` is ordered before the current tail of `stream`: anything submitted to
    /// `stream` from now on starts only after `point` has completed (same stream, or an event
    /// recorded at or after `point` that `stream` already waits on, directly or transitively).
    fn is_ordered_before(&self, point: StreamPoint, stream: u32) -> bool;
}
