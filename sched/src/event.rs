//! Events: named points in streams, with the timestamp of when the point was reached.
//!
//! This module owns an event's recorded point, its record generation and its timestamp. It
//! must not decide when a record runs (the executor does, in stream order).

use mm::order::StreamPoint;

/// Names one event of an [`Executor`](crate::Executor); ids are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(pub u32);

/// What an event stands for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventStatus {
    /// Never recorded, or reset since.
    NotRecorded,
    /// Recorded, and the recorded point has not completed.
    Pending,
    /// Recorded, and every task up to the recorded point has completed.
    Complete,
}

/// The state of one event.
///
/// # Invariants
///
/// `timestamp_ns` belongs to the record numbered `generation`: a record bumps the generation
/// and clears the timestamp; a stamp or reset carrying an older generation is ignored.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EventState {
    point: Option<StreamPoint>,
    generation: u64,
    timestamp_ns: Option<u64>,
}

impl EventState {
    /// The generation the next record will carry.
    pub(crate) fn next_generation(&self) -> u64 {
        self.generation.wrapping_add(1)
    }

    /// The generation of the latest record.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Notes a record at `point` with `generation` (from [`next_generation`](Self::next_generation)).
    pub(crate) fn record(&mut self, point: StreamPoint, generation: u64) {
        // INVARIANT: a new generation starts without a timestamp.
        self.point = Some(point);
        self.generation = generation;
        self.timestamp_ns = None;
    }

    /// The record of `generation` ran at `now_ns`.
    pub(crate) fn stamp(&mut self, generation: u64, now_ns: u64) {
        if generation == self.generation {
            self.timestamp_ns = Some(now_ns);
        }
    }

    /// A reset queued while `generation` was current ran.
    pub(crate) fn reset(&mut self, generation: u64) {
        if generation == self.generation {
            self.point = None;
            self.timestamp_ns = None;
        }
    }

    /// The recorded point, if any.
    pub(crate) fn point(&self) -> Option<StreamPoint> {
        self.point
    }

    /// When the latest record ran, if it has.
    pub(crate) fn timestamp_ns(&self) -> Option<u64> {
        self.timestamp_ns
    }
}
