//! Events: named points in streams, with the timestamp of when the point was reached.
//!
//! This module owns an event's recorded point, its record generation and its timestamp, and
//! the table an executor keeps its events in. It must not decide when a record runs (the
//! executor does, in stream order).

use alloc::vec::Vec;

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
    /// The record of `generation` was dropped by an abort before it ran: the event never
    /// completes (until it is recorded again or reset).
    cancelled: bool,
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
        self.cancelled = false;
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
            self.cancelled = false;
        }
    }

    /// The record of `generation` was dropped without running (if it is still the latest).
    pub(crate) fn cancel(&mut self, generation: u64) {
        if generation == self.generation {
            self.cancelled = true;
        }
    }

    /// Whether the latest record was dropped without running.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled
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

/// Low bits of an [`EventId`] that name its slot; the slot's generation sits above them.
const EVENT_SLOT_BITS: u32 = 16;

/// An executor's events: a slot table, so finding an event is an index and a generation
/// compare, never a map lookup. A destroyed event's slot comes back under the next generation
/// (so an id is never handed out twice); a slot whose generations run out is retired.
///
/// # Invariants
///
/// `live` counts the slots holding an event; `free` holds empty slots whose generation can
/// still grow.
#[derive(Debug, Default)]
pub(crate) struct EventTable {
    slots: Vec<(u32, Option<EventState>)>,
    free: Vec<u32>,
    live: usize,
}

impl EventTable {
    /// Events held now.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Adds an event (not recorded); `None` when every id is used up or the table cannot grow.
    pub(crate) fn insert(&mut self) -> Option<EventId> {
        let (slot, generation) = if let Some(slot) = self.free.pop() {
            // CAST: slot indices are below 2^16.
            let s = &mut self.slots[slot as usize];
            // No overflow: a slot goes to `free` only while its generation can grow.
            s.0 += 1;
            s.1 = Some(EventState::default());
            (slot, s.0)
        } else {
            let slot = u32::try_from(self.slots.len()).ok().filter(|s| s >> EVENT_SLOT_BITS == 0)?;
            self.slots.try_reserve(1).ok()?;
            self.slots.push((0, Some(EventState::default())));
            (slot, 0)
        };
        self.live += 1;
        Some(EventId((generation << EVENT_SLOT_BITS) | slot))
    }

    fn slot(&self, id: EventId) -> Option<usize> {
        // CAST: a u32 slot index fits in usize on every target sched builds for.
        let slot = (id.0 & ((1 << EVENT_SLOT_BITS) - 1)) as usize;
        let s = self.slots.get(slot)?;
        (s.0 == id.0 >> EVENT_SLOT_BITS && s.1.is_some()).then_some(slot)
    }

    /// The event `id`, if it exists.
    pub(crate) fn get(&self, id: EventId) -> Option<&EventState> {
        self.slot(id).and_then(|s| self.slots[s].1.as_ref())
    }

    /// The event `id`, if it exists, for a change.
    pub(crate) fn get_mut(&mut self, id: EventId) -> Option<&mut EventState> {
        let s = self.slot(id)?;
        self.slots[s].1.as_mut()
    }

    /// Removes the event `id`, answering it, or `None` when it does not exist.
    pub(crate) fn remove(&mut self, id: EventId) -> Option<EventState> {
        let slot = self.slot(id)?;
        let s = &mut self.slots[slot];
        let e = s.1.take()?;
        self.live -= 1;
        if (s.0 + 1) >> (u32::BITS - EVENT_SLOT_BITS) == 0 {
            // CAST: slot indices are below 2^16.
            self.free.push(slot as u32);
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused_and_stale_ids_miss() {
        let mut t = EventTable::default();
        let a = t.insert().unwrap();
        let b = t.insert().unwrap();
        assert_eq!((a, b), (EventId(0), EventId(1)));
        assert!(t.remove(a).is_some());
        assert!(t.remove(a).is_none());
        let c = t.insert().unwrap();
        assert!(c != a && c != b);
        assert!(t.get(a).is_none() && t.get(c).is_some());
        assert_eq!(t.len(), 2);
    }
}
