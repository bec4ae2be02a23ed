//! The executor: the table of streams and events, the dependency graph between streams, and
//! the loop that picks the next task to run.
//!
//! This module owns stream and event creation and destruction, the round-robin choice of the
//! next ready stream, cross-stream waits, the published progress of each stream, and the
//! bookkeeping around running a task. It must not know what a task does: a [`TaskRunner`] runs
//! it (or the owner takes tasks with [`Executor::take_ready`] and reports with
//! [`Executor::finish`]). Per-stream ordering and failure handling live in
//! [`stream`](crate::stream).
//!
//! # The stream table
//!
//! Streams live in a slot table: a [`StreamId`] carries its slot index in its low bits and the
//! slot's generation above them, so finding a stream is an index and a generation compare,
//! never a map lookup. A destroyed stream's slot is reused with the next generation, so an id
//! is never handed out twice (a slot whose generations run out is retired).
//! Events live in a slot table of the same kind ([`event`](crate::event)).
//!
//! # Scheduling
//!
//! A stream is ready when its oldest unstarted item may run, that is when none of its items is
//! running. Ready streams wait in a first-in, first-out queue of slot indices:
//! [`Executor::take_ready`] pops the front one, and [`Executor::finish`] puts the stream at the
//! back if it has more work. This is round-robin across streams with strict submission order
//! inside each stream.
//!
//! Besides the caller's tasks a stream carries three kinds of internal items that the executor
//! completes itself, in order, without handing them out:
//!
//! - a *wait* for a point of another stream (from [`Executor::submit_wait`] or
//!   [`Executor::wait_event`]): the stream is blocked until that point has completed;
//! - an event *record*: completing it stamps the event with the executor's clock;
//! - an event *reset*: completing it forgets the event's recorded point.
//!
//! A stream blocked on a wait is parked *on the stream it waits for* (in that stream's list of
//! waiters) and is looked at again only when that stream makes progress or goes away, so a
//! finish costs nothing for streams that wait on something else. A stream refused by the
//! caller's gate ([`Executor::take_ready_if`]) is parked in a separate list that goes back to
//! the ready queue on the next finish or [`Executor::recheck`].
//!
//! [`Executor::run_once`] gives the same order with less work per task: a lone ready stream
//! runs its tasks in a *burst* (started one after another without going through the ready
//! queue), and several ready streams run in *rounds* (the queue walked in order, one task per
//! stream per round, which is what popping the front and pushing it back does), as long as
//! every head is a task, the tasks succeed and no stream waits on them; anything else goes
//! back to the queue, in the order a finish per task would have left it. A task run there is
//! counted as finished the moment it is taken (nobody can look in between) and reopened if it
//! fails; a burst keeps its sequence number in a local; rounds first run the rounds in which
//! no stream can run dry (as many as the shortest queue, less one) without looking whether
//! one leaves, holding on to up to eight streams so that a task costs no lookup: those rounds
//! walk each stream's queued slots as slices cut to the same length (split where a ring
//! wraps), indexed by the round, and the sequence numbers are written back once per slice.
//! Submission checks one limit per item and writes the item straight into its slot: a stream
//! a failure stopped has its limit at 0, and an idle one (nothing queued or running) at its
//! submitted count, so only the slow path looks at either, and only the slow path puts a
//! stream in the ready queue.
//!
//! # Runs
//!
//! An owner that runs tasks outside the executor's lock may take a ready stream's task together
//! with the plain tasks queued right behind it ([`Executor::take_run_if`]): they all count as
//! running (the stream stays unready, and they count against its capacity until they finish), it
//! runs them in order, and [`Executor::finish`] of the first task not counted yet ends the run.
//! Only a stream in [`FailureMode::Continue`] is taken in runs (a failure there only records
//! the stream's error, so the tasks behind it run either way). While the run goes on, the owner
//! publishes each finished task in the stream's [`Progress`] word itself, and comes back to count
//! the run so far ([`Executor::complete_run_to`]) when the word's watch asks it to: a stream that
//! parks on a point of this one sets the watch (see [`Progress::watch`]), and a wait examines
//! the published word, which may lead the stream's own count.
//!
//! # Progress
//!
//! Every stream publishes its completed sequence in a [`Progress`] word each time it changes,
//! so other threads can wait for a point without the owner's lock
//! ([`Executor::progress`]). Inside [`Executor::run_once`] a burst or a round publishes when a
//! stream leaves it and when it ends, not per task: the word may lag the executor's own count
//! while `run_once` runs, never lead it.
//!
//! # The dependency graph
//!
//! Cross-stream waits and completed sequence numbers go into a [`DepGraph`], the same type the
//! runtime keeps per device; it answers [`StreamOrder`] (see [`graph`](crate::graph)). The
//! executor tells the graph a stream's completed sequence when a wait of that stream finishes
//! or the stream's sequence jumps (skips, aborts), which is when edges can go; answers never
//! rely on the graph's completed values (the stream table is asked first).

use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::{ErrorKind, TaskStatus};
use mm::order::{StreamOrder, StreamPoint};

use crate::error::{Error, Result};
use crate::event::{EventId, EventStatus, EventTable};
use crate::graph::DepGraph;
use crate::progress::Progress;
use crate::stream::{FailureMode, Stream, StreamId};

/// Runs one task on behalf of the executor.
///
/// The software NPU implements it over its engines; device firmware over the hardware.
pub trait TaskRunner<T> {
    /// Runs `task`, the task numbered `seq` on `stream`, to completion.
    ///
    /// # Errors
    ///
    /// The driver error kind the task failed with; the executor records it for the stream.
    fn run(&mut self, stream: StreamId, seq: u64, task: &T) -> core::result::Result<(), ErrorKind>;
}

impl<T, R: TaskRunner<T> + ?Sized> TaskRunner<T> for &mut R {
    fn run(&mut self, stream: StreamId, seq: u64, task: &T) -> core::result::Result<(), ErrorKind> {
        (**self).run(stream, seq, task)
    }
}

/// One entry of a stream's ring: the caller's task or an item the executor completes itself.
#[derive(Debug)]
pub(crate) enum Item<T> {
    /// A task handed to the runner.
    Task(T),
    /// Wait until the point (`stream`, `seq`) has completed. Kept as two fields rather than a
    /// [`StreamPoint`] so that the 32-bit stream id packs next to the discriminant: an item of
    /// a task no larger than 8 bytes is 16 bytes, not 24 (a third less ring memory to walk).
    Wait {
        /// The stream of the point.
        stream: u32,
        /// The sequence number of the point.
        seq: u64,
    },
    /// Stamp the event (if its record generation still matches).
    Record(EventId, u64),
    /// Forget the event's recorded point (if its record generation still matches).
    Reset(EventId, u64),
    /// A task submitted to a stream that a failure stopped (see [`FailureMode::StopOnFailure`]):
    /// it takes its sequence number and completes in order without running.
    Skip,
}

/// Reads a monotonic clock in nanoseconds; used to stamp events.
pub type Clock = fn() -> u64;

fn no_clock() -> u64 {
    0
}

/// One entry of the stream table.
#[derive(Debug)]
struct Slot<T> {
    /// Generation of the stream in the slot (or of the last one, when empty).
    generation: u32,
    /// The id of the stream in the slot (the slot index and the generation, kept whole so
    /// that checking an id is one compare); once the stream is destroyed, that id with its
    /// lowest bit flipped, whose slot bits name another slot, so that no id matches.
    id: StreamId,
    /// The stream ([`Stream::retired`] once destroyed, with no ring).
    stream: Stream<Item<T>>,
    /// The stream's published completed sequence.
    progress: Arc<Progress>,
    /// Slots of streams parked because their oldest item waits on this stream.
    waiters: Vec<u32>,
    /// The slot this stream is parked on (in its `waiters`), if any.
    parked_on: Option<u32>,
}

/// A first-in, first-out queue of slot indices (the ready queue) in a ring whose length is a
/// power of two: a push or a pop is a mask and a bounds check. It grows (doubling) only when
/// full, which the executor's invariants bound by the number of slots.
///
/// # Invariants
///
/// - `buf.len()` is 0 or a power of two, and `len <= buf.len()`.
/// - The queue holds `buf[(head + i) & (buf.len() - 1)]` for `i` in `0..len`, front first.
#[derive(Debug, Default)]
struct SlotQueue {
    buf: Vec<u32>,
    head: usize,
    len: usize,
}

impl SlotQueue {
    /// The ring index of the `i`-th entry from the front.
    #[inline]
    fn at(&self, i: usize) -> usize {
        self.head.wrapping_add(i) & self.buf.len().wrapping_sub(1)
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn push_back(&mut self, slot: u32) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let at = self.at(self.len);
        if let Some(entry) = self.buf.get_mut(at) {
            *entry = slot;
            self.len += 1;
        }
    }

    #[inline]
    fn pop_front(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let slot = *self.buf.get(self.at(0))?;
        self.head = self.head.wrapping_add(1);
        self.len -= 1;
        Some(slot)
    }

    /// Doubles the ring (at least 8 entries), keeping the order.
    #[cold]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(8);
        let mut buf = Vec::with_capacity(cap);
        buf.extend(self.iter());
        buf.resize(cap, 0);
        // INVARIANT: the entries now start at index 0 of a ring twice as long.
        self.buf = buf;
        self.head = 0;
    }

    /// The entries, front first.
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len).filter_map(|i| self.buf.get(self.at(i)).copied())
    }

    fn extend(&mut self, slots: impl IntoIterator<Item = u32>) {
        for slot in slots {
            self.push_back(slot);
        }
    }

    /// Keeps the entries `keep` accepts, in order.
    fn retain(&mut self, mut keep: impl FnMut(&u32) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            let Some(&slot) = self.buf.get(self.at(i)) else { continue };
            if keep(&slot) {
                let to = self.at(kept);
                if let Some(entry) = self.buf.get_mut(to) {
                    *entry = slot;
                }
                kept += 1;
            }
        }
        self.len = kept;
    }

    /// Moves every entry to the end of `out`, front first.
    fn drain_into(&mut self, out: &mut Vec<u32>) {
        out.extend(self.iter());
        self.head = 0;
        self.len = 0;
    }
}

/// What [`Executor::take_ready_if`] does with the head of a ready stream.
enum Head {
    /// Start it.
    Run,
    /// Refused by the gate: park until the next finish or recheck.
    Gated,
    /// A wait on the stream in this slot that has not reached its point (this sequence).
    WaitsOn(u32, u64),
}

/// Streams of tasks and events, the waits between them, and the round-robin choice of what
/// runs next.
///
/// The executor is plain data driven through `&mut self`; it does no locking and never blocks.
/// Its owner (for example the software NPU's scheduler threads, behind a mutex) serialises
/// access. Several tasks of different streams may be running at once (taken and not yet
/// finished), but never two of one stream.
///
/// # Invariants
///
/// - A ready stream's slot is exactly once in `ready`, in `gated` or in the `waiters` of the
///   slot its `parked_on` names; a stream that is not ready is in none of them.
/// - `parked_waits` is the total length of the `waiters` lists.
/// - `busy` is the number of streams with a queued or running item.
/// - Each slot's `progress` holds its stream's completed sequence.
/// - `graph` tracks every stream; its completed values may lag (only pruning depends on them).
#[derive(Debug)]
pub struct Executor<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
    slot_bits: u32,
    /// `(1 << slot_bits) - 1`: the slot index bits of a [`StreamId`].
    slot_mask: u32,
    ready: SlotQueue,
    gated: Vec<u32>,
    parked_waits: usize,
    max_streams: usize,
    busy: usize,
    events: EventTable,
    max_events: usize,
    graph: DepGraph,
    clock: Clock,
    finished_items: u64,
    /// Scratch list of [`run_rounds`](Self::run_rounds) (kept to reuse its memory).
    round: Vec<u32>,
}

/// The most events an executor holds by default (the per-device limit of CANN's A2/A3/950).
pub const DEFAULT_MAX_EVENTS: usize = 65_536;

impl<T> Executor<T> {
    /// Creates an executor that holds at most `max_streams` streams at once, without a clock
    /// (event timestamps read 0).
    pub fn new(max_streams: usize) -> Self {
        Self::with_clock(max_streams, no_clock)
    }

    /// Creates an executor whose events are stamped with `clock` (nanoseconds, monotonic).
    pub fn with_clock(max_streams: usize, clock: Clock) -> Self {
        // Enough low bits for every slot; at least one generation bit is left.
        let highest = u32::try_from(max_streams.max(2) - 1).unwrap_or(u32::MAX);
        let slot_bits = (u32::BITS - highest.leading_zeros()).min(31);
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            slot_bits,
            slot_mask: (1u32 << slot_bits) - 1,
            ready: SlotQueue::default(),
            gated: Vec::new(),
            parked_waits: 0,
            max_streams,
            busy: 0,
            events: EventTable::default(),
            max_events: DEFAULT_MAX_EVENTS,
            graph: DepGraph::new(),
            clock,
            finished_items: 0,
            round: Vec::new(),
        }
    }

    fn id_of(&self, slot: u32, generation: u32) -> StreamId {
        StreamId((generation << self.slot_bits) | slot)
    }

    /// The slot index of `id` if it names a live stream.
    #[inline]
    fn slot_of(&self, id: StreamId) -> Option<usize> {
        let slot = id.0 & self.slot_mask;
        // CAST: a u32 slot index fits in usize on every target sched builds for.
        let s = self.slots.get(slot as usize)?;
        (s.id == id).then_some(slot as usize)
    }

    /// Creates a stream whose ring holds `capacity` unfinished items.
    ///
    /// The ring is allocated now, so submission never allocates. Ids are never reused: the
    /// first streams of an executor are numbered 0, 1, 2…; a destroyed stream's slot comes back
    /// under a new id.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] when `capacity` is zero or the ring cannot be allocated.
    /// - [`Error::TooManyStreams`] when `max_streams` streams exist, or the ids are exhausted.
    pub fn create_stream(&mut self, capacity: usize) -> Result<StreamId> {
        if self.live >= self.max_streams {
            return Err(Error::TooManyStreams);
        }
        let stream = Stream::new(capacity)?;
        let progress = Arc::new(Progress::new());
        let id = if let Some(slot) = self.free.pop() {
            // CAST: slot indices are below 2^31.
            let s = &mut self.slots[slot as usize];
            // No overflow: a slot goes to `free` only while its generation can grow.
            s.generation += 1;
            s.stream = stream;
            s.progress = progress;
            let generation = s.generation;
            let id = self.id_of(slot, generation);
            self.slots[slot as usize].id = id;
            id
        } else {
            let slot = u32::try_from(self.slots.len()).map_err(|_| Error::TooManyStreams)?;
            if slot >> self.slot_bits != 0 {
                return Err(Error::TooManyStreams);
            }
            self.slots.try_reserve(1).map_err(|_| Error::TooManyStreams)?;
            self.slots.push(Slot {
                generation: 0,
                id: self.id_of(slot, 0),
                stream,
                progress,
                waiters: Vec::new(),
                parked_on: None,
            });
            self.id_of(slot, 0)
        };
        self.live += 1;
        self.graph.add_stream(id.0);
        Ok(id)
    }

    /// Destroys an idle stream, dropping any error it had not reported.
    ///
    /// A stream with queued or running tasks cannot be destroyed; synchronise it (run its
    /// tasks to completion) or [`abort`](Self::abort) it first. Points of a destroyed stream
    /// count as complete from then on.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id; [`Error::InvalidArgument`] when the stream has
    /// unfinished tasks.
    pub fn destroy_stream(&mut self, id: StreamId) -> Result<()> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        if self.slots[slot].stream.unfinished() > 0 {
            return Err(Error::InvalidArgument);
        }
        let s = &mut self.slots[slot];
        s.stream = Stream::retired();
        // INVARIANT: the slot bits of an id start at bit 0 and there is at least one, so the
        // flipped id names another slot: no id matches this slot until it is reused.
        s.id = StreamId(s.id.0 ^ 1);
        let reusable = (s.generation + 1) >> (u32::BITS - self.slot_bits) == 0;
        // Waits on the destroyed stream are satisfied now.
        let mut waiters = core::mem::take(&mut s.waiters);
        self.parked_waits -= waiters.len();
        for &w in &waiters {
            self.slots[w as usize].parked_on = None;
            self.ready.push_back(w);
        }
        waiters.clear();
        self.slots[slot].waiters = waiters;
        if reusable {
            // CAST: slot indices are below 2^31.
            self.free.push(slot as u32);
        }
        self.live -= 1;
        self.graph.remove_stream(id.0);
        self.unpark_gated();
        Ok(())
    }

    /// Drops every queued (not yet started) item of stream `id`, counting them as finished
    /// without running them, and returns how many were dropped. A running task finishes
    /// normally. An event whose latest record is dropped stays [`EventStatus::Pending`] (it
    /// never completes) until it is recorded again or reset.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn abort(&mut self, id: StreamId) -> Result<usize> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        self.detach(slot);
        Ok(self.drop_queued(slot, id))
    }

    /// Aborts stream `id` as a device sees a forced stream destroy: the task at the head of the
    /// stream counts as already on the device when nothing of the stream runs and its
    /// dependencies are met now (internal items before it that can complete now, such as a
    /// satisfied wait or an event record, complete first; `may_start` is the gate of
    /// [`take_ready_if`](Self::take_ready_if)). That task is started and returned with its
    /// sequence number: the caller runs it and [`finish`](Self::finish)es it like one from
    /// [`take_ready`](Self::take_ready). Every item behind it (or every queued item, when the
    /// head cannot start) is dropped as by [`abort`](Self::abort); the answer also counts them.
    /// A task already running finishes normally and nothing else starts.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn abort_keep_head(
        &mut self,
        id: StreamId,
        mut may_start: impl FnMut(&T) -> bool,
    ) -> Result<(usize, Option<(u64, T)>)> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        let mut started = None;
        loop {
            // INVARIANT: out of every ready/parked list while we look at the head ourselves.
            self.detach(slot);
            if !matches!(self.examine(slot, &mut may_start), Some(Head::Run)) {
                break;
            }
            let Some((seq, item)) = self.slots[slot].stream.start() else { break };
            if let Item::Task(task) = item {
                started = Some((seq, task));
                break;
            }
            // finish_slot may put the stream back in `ready`; the next round detaches it.
            self.complete_internal(slot, id, seq, item);
        }
        let dropped = self.drop_queued(slot, id);
        Ok((dropped, started))
    }

    /// Takes the stream in `slot` out of the ready queue, the gated list and the waiters list
    /// it is parked in.
    fn detach(&mut self, slot: usize) {
        // CAST: slot indices are below 2^31.
        let me = slot as u32;
        if let Some(on) = self.slots[slot].parked_on.take() {
            let list = &mut self.slots[on as usize].waiters;
            let before = list.len();
            list.retain(|&w| w != me);
            self.parked_waits -= before - list.len();
        }
        self.ready.retain(|&s| s != me);
        self.gated.retain(|&s| s != me);
    }

    /// Drops the queued items of the detached stream in `slot` (see [`abort`](Self::abort)).
    fn drop_queued(&mut self, slot: usize, id: StreamId) -> usize {
        let s = &mut self.slots[slot];
        let stream = &mut s.stream;
        // Events whose records are dropped never complete.
        for item in stream.queued() {
            if let Item::Record(ev, generation) = *item {
                if let Some(e) = self.events.get_mut(ev) {
                    e.cancel(generation);
                }
            }
        }
        let was_busy = stream.unfinished() > 0;
        let dropped = stream.discard_queued();
        let completed = stream.completed();
        s.progress.advance(completed);
        if was_busy && stream.unfinished() == 0 {
            self.busy -= 1;
        }
        // INVARIANT: the stream has no queued item now, so it belongs in no ready list.
        self.graph.note_completed(id.0, completed);
        self.wake_waiters(slot, completed);
        self.unpark_gated();
        dropped
    }

    /// Sets what a failure on stream `id` does to the tasks queued behind it, from now on.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn set_failure_mode(&mut self, id: StreamId, mode: FailureMode) -> Result<()> {
        self.stream_mut(id)?.set_mode(mode);
        Ok(())
    }

    /// Appends an internal item (not a task) to stream `id`.
    #[inline]
    fn push_item(&mut self, id: StreamId, item: Item<T>) -> Result<u64> {
        self.push_with(id, item, |item| item, |stream, item| stream.push(item))
    }

    /// Appends `make(value)` to stream `id` and returns its sequence number; `slow` pushes
    /// `value` when the stream is not below its limit ([`Stream::below_limit`]). The item is
    /// built only on the fast path, so the value travels in registers.
    #[inline]
    fn push_with<U>(
        &mut self,
        id: StreamId,
        value: U,
        make: impl FnOnce(U) -> Item<T>,
        slow: impl FnOnce(&mut Stream<Item<T>>, U) -> Result<u64>,
    ) -> Result<u64> {
        let slot = id.0 & self.slot_mask;
        // CAST: a u32 slot index fits in usize on every target sched builds for.
        let s = self.slots.get_mut(slot as usize).ok_or(Error::NoSuchStream)?;
        if s.id != id {
            return Err(Error::NoSuchStream);
        }
        let stream = &mut s.stream;
        // A stopped stream is never below its limit, nor an idle one, so the fast path needs
        // no look at either.
        if stream.below_limit() {
            // INVARIANT: not idle (see `Stream`), so already ready, running or parked.
            debug_assert!(stream.unfinished() > 0, "an idle stream is never below its limit");
            return stream.put(make(value));
        }
        self.push_cold(slot, value, slow)
    }

    /// The slow path of [`push_with`](Self::push_with): `slow` pushes `value` to the stream in
    /// `slot`, and a stream that was idle becomes ready.
    #[cold]
    #[inline(never)]
    fn push_cold<U>(
        &mut self,
        slot: u32,
        value: U,
        slow: impl FnOnce(&mut Stream<Item<T>>, U) -> Result<u64>,
    ) -> Result<u64> {
        // CAST: a u32 slot index fits in usize on every target sched builds for.
        let stream = &mut self.slots[slot as usize].stream;
        let idle = stream.unfinished() == 0;
        let seq = slow(stream, value)?;
        if idle {
            // INVARIANT: the stream just became ready and busy (nothing was queued, nothing
            // runs).
            self.ready.push_back(slot);
            self.busy += 1;
        }
        Ok(seq)
    }

    /// Appends `task` to stream `id` and returns its sequence number (1 for a stream's first).
    ///
    /// # Errors
    ///
    /// - [`Error::NoSuchStream`] for an unknown id.
    /// - [`Error::Full`] when the stream already has `capacity` unfinished items; submit again
    ///   after one finishes.
    /// - [`Error::InvalidArgument`] when the stream's sequence numbers are exhausted.
    #[inline]
    pub fn submit(&mut self, id: StreamId, task: T) -> Result<u64> {
        self.push_with(id, task, Item::Task, submit_slow)
    }

    /// Makes stream `id` wait, after everything submitted to it so far, until `target` has
    /// completed; returns the wait's sequence number.
    ///
    /// A target on `id` itself or on a stream that no longer exists is already satisfied by
    /// then; the wait still takes a sequence number and completes in order.
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit); nothing changes on error.
    pub fn submit_wait(&mut self, id: StreamId, target: StreamPoint) -> Result<u64> {
        let at = self.push_item(id, Item::Wait { stream: target.stream, seq: target.seq })?;
        self.graph.add_wait(id.0, at, target);
        Ok(at)
    }

    /// What to do with the head of the ready stream in `slot`.
    #[inline]
    fn examine(&self, slot: usize, may_start: &mut impl FnMut(&T) -> bool) -> Option<Head> {
        let stream = &self.slots[slot].stream;
        if !stream.is_ready() {
            return None;
        }
        Some(match stream.head()? {
            Item::Task(t) => {
                if may_start(t) {
                    Head::Run
                } else {
                    Head::Gated
                }
            }
            &Item::Wait { stream, seq } => {
                let own = self.slots[slot].id;
                match self.slot_of(StreamId(stream)) {
                    Some(t) if stream != own.0 => {
                        // The published word, which leads the stream's count while a run's
                        // owner publishes its tasks itself (see `take_run_if`).
                        let done = self.slots[t].progress.completed();
                        // CAST: slot indices are below 2^31.
                        if done >= seq {
                            Head::Run
                        } else {
                            Head::WaitsOn(t as u32, seq)
                        }
                    }
                    _ => Head::Run,
                }
            }
            Item::Record(..) | Item::Reset(..) | Item::Skip => Head::Run,
        })
    }

    /// Takes the next task to run and marks it running.
    ///
    /// The task is the oldest unstarted one of the ready stream that has waited longest, so
    /// tasks of one stream start in order and one at a time, and streams take turns. Internal
    /// items (waits that are satisfied, event records and resets) met on the way are completed
    /// here. Returns `None` when no task may start.
    pub fn take_ready(&mut self) -> Option<(StreamId, u64, T)> {
        self.take_ready_if(|_| true)
    }

    /// Like [`take_ready`](Self::take_ready), but a task starts only if `may_start` accepts it;
    /// a refused stream is parked until the next [`finish`](Self::finish) or
    /// [`recheck`](Self::recheck) (for tasks that wait on something outside the executor, such
    /// as a value in memory).
    pub fn take_ready_if(&mut self, may_start: impl FnMut(&T) -> bool) -> Option<(StreamId, u64, T)> {
        self.take_slot_if(may_start).map(|(_, id, seq, task)| (id, seq, task))
    }

    /// [`take_ready_if`](Self::take_ready_if) for an owner that runs a stream's tasks in
    /// *runs*: takes the next task as it does and, when the stream is in
    /// [`FailureMode::Continue`], also the tasks queued right behind it that `extend` accepts
    /// (up to `max` tasks in all, stopping at the first internal item or refusal), all counted
    /// as running. The tasks go to `out` in order (cleared first); the answer is the stream
    /// and the first task's sequence number, the others following it.
    ///
    /// The owner runs them in order, may count the first ones finished with
    /// [`complete_run_to`](Self::complete_run_to) while the rest run, and ends the run with
    /// [`finish`](Self::finish) of the first task not yet counted, with the status of the
    /// run (the first failure's, if any: in `Continue` mode a failure only records the
    /// stream's error). Meanwhile it may publish each finished task in the stream's
    /// [`Progress`] word itself (see [`Progress::watched`] for when it must come back
    /// sooner).
    pub fn take_run_if(
        &mut self,
        may_start: impl FnMut(&T) -> bool,
        mut extend: impl FnMut(&T) -> bool,
        max: usize,
        out: &mut Vec<T>,
    ) -> Option<(StreamId, u64)> {
        out.clear();
        let (slot, id, seq, task) = self.take_slot_if(may_start)?;
        out.push(task);
        let stream = &mut self.slots[slot].stream;
        if max > 1 && stream.mode() == FailureMode::Continue && !stream.is_stopped() {
            stream.extend_run(
                max - 1,
                |item| {
                    let Some(Item::Task(t)) = item else { return None };
                    if !extend(t) {
                        return None;
                    }
                    take_task(item)
                },
                |t| out.push(t),
            );
        }
        Some((id, seq))
    }

    /// Counts the tasks of stream `id`'s running run up to `seq` as finished while its later
    /// tasks still run (see [`take_run_if`](Self::take_run_if)): publishes `seq` and moves the
    /// streams whose waits it satisfies to the ready queue.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id; [`Error::InvalidArgument`] when `seq` is
    /// not inside the running run, before its last task. Nothing changes on error.
    pub fn complete_run_to(&mut self, id: StreamId, seq: u64) -> Result<()> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        let s = &mut self.slots[slot];
        s.stream.complete_run_to(seq)?;
        s.progress.advance(seq);
        self.finished_items = self.finished_items.wrapping_add(1);
        self.wake_waiters(slot, seq);
        self.rewatch(slot);
        Ok(())
    }

    /// Sets the watch of the stream in `slot`'s progress word to the lowest point a stream
    /// parked on it waits for (none: no watch).
    #[inline]
    fn rewatch(&mut self, slot: usize) {
        let s = &self.slots[slot];
        let lowest = s
            .waiters
            .iter()
            .filter_map(|&w| match self.slots.get(w as usize)?.stream.head() {
                Some(&Item::Wait { seq, .. }) => Some(seq),
                _ => None,
            })
            .min();
        s.progress.set_watch(lowest.unwrap_or(u64::MAX));
    }

    /// [`take_ready_if`](Self::take_ready_if), also answering the stream's slot.
    #[inline]
    fn take_slot_if(&mut self, mut may_start: impl FnMut(&T) -> bool) -> Option<(usize, StreamId, u64, T)> {
        while let Some(slot) = self.ready.pop_front() {
            // CAST: slot indices are below 2^31.
            let at = slot as usize;
            // The common case first, in one look: the head is a task the gate lets start.
            let mut refused = false;
            if let Some(s) = self.slots.get_mut(at) {
                let taken = s.stream.start_with(|item| {
                    let Some(Item::Task(task)) = item else { return None };
                    if !may_start(task) {
                        refused = true;
                        return None;
                    }
                    take_task(item)
                });
                if let Some((seq, task)) = taken {
                    return Some((at, s.id, seq, task));
                }
            }
            if refused {
                // INVARIANT: a ready stream that cannot start moves from `ready` to `gated`.
                self.gated.push(slot);
                continue;
            }
            // Anything else (an internal item at the head, or nothing to start) the long way;
            // a task at the head is not asked about again (`examine` finds none).
            match self.examine(at, &mut may_start) {
                None => continue,
                Some(Head::Gated) => {
                    // INVARIANT: a ready stream that cannot start moves from `ready` to `gated`.
                    self.gated.push(slot);
                    continue;
                }
                Some(Head::WaitsOn(t, seq)) => {
                    // A run's owner that publishes `seq` after this watch comes back to tell
                    // us; one that published it before is seen here (`Progress::watch`).
                    if self.slots[t as usize].progress.watch(seq) {
                        // INVARIANT: still ready; examined again from the back of the queue.
                        self.ready.push_back(slot);
                        continue;
                    }
                    // INVARIANT: parked on the stream it waits for.
                    self.slots[t as usize].waiters.push(slot);
                    self.slots[at].parked_on = Some(t);
                    self.parked_waits += 1;
                    continue;
                }
                Some(Head::Run) => {}
            }
            let s = &mut self.slots[at];
            let id = s.id;
            let (seq, item) = s.stream.start()?;
            if let Item::Task(task) = item {
                return Some((at, id, seq, task));
            }
            self.complete_internal(at, id, seq, item);
        }
        None
    }

    /// Completes the internal item `seq` (a wait, record or reset) just started on the stream
    /// in `slot`: it cannot be refused, so it finishes at once.
    #[cold]
    fn complete_internal(&mut self, slot: usize, id: StreamId, seq: u64, item: Item<T>) {
        let was_wait = match item {
            Item::Task(_) | Item::Wait { .. } => true,
            Item::Record(ev, generation) => {
                let now = (self.clock)();
                if let Some(e) = self.events.get_mut(ev) {
                    e.stamp(generation, now);
                }
                false
            }
            Item::Reset(ev, generation) => {
                if let Some(e) = self.events.get_mut(ev) {
                    e.reset(generation);
                }
                false
            }
            Item::Skip => false,
        };
        let done = self.finish_slot(slot, id, seq, TaskStatus::Ok, was_wait);
        debug_assert_eq!(done, Ok(()));
    }

    /// Moves every stream refused by a gate back to the ready queue, to be examined again by
    /// the next [`take_ready`](Self::take_ready). (Streams parked on a wait need no recheck:
    /// they come back when the stream they wait for makes progress.)
    pub fn recheck(&mut self) {
        self.unpark_gated();
    }

    /// How many items (tasks and internal items) have finished so far, wrapping; a change
    /// tells an owner that someone waiting for completion should look again (internal items
    /// finish inside [`take_ready`](Self::take_ready)).
    pub fn finished_items(&self) -> u64 {
        self.finished_items
    }

    /// Whether some stream waits in the ready queue (a hint that another worker could start
    /// something now).
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Whether some stream is parked (waiting on another stream or refused by a gate).
    pub fn has_parked(&self) -> bool {
        !self.gated.is_empty() || self.parked_waits > 0
    }

    /// Whether some stream was refused by the gate of
    /// [`take_ready_if`](Self::take_ready_if) and waits for a [`recheck`](Self::recheck) or
    /// a finish.
    pub fn has_gated(&self) -> bool {
        !self.gated.is_empty()
    }

    #[inline]
    fn unpark_gated(&mut self) {
        if !self.gated.is_empty() {
            // INVARIANT: gated streams move to the back of `ready`, keeping their order.
            self.ready.extend(self.gated.drain(..));
        }
    }

    /// Moves the streams parked on `slot` whose wait `completed` satisfies to the ready queue.
    #[inline]
    fn wake_waiters(&mut self, slot: usize, completed: u64) {
        if !self.slots[slot].waiters.is_empty() {
            self.wake_waiters_slow(slot, completed);
        }
    }

    fn wake_waiters_slow(&mut self, slot: usize, completed: u64) {
        let mut waiters = core::mem::take(&mut self.slots[slot].waiters);
        let before = waiters.len();
        waiters.retain(|&w| {
            let w_at = w as usize;
            let needs = match self.slots[w_at].stream.head() {
                Some(&Item::Wait { seq, .. }) => seq,
                _ => 0,
            };
            if needs > completed {
                return true;
            }
            // INVARIANT: leaves the waiters list for the ready queue.
            self.slots[w_at].parked_on = None;
            self.ready.push_back(w);
            false
        });
        self.parked_waits -= before - waiters.len();
        let emptied = waiters.is_empty();
        self.slots[slot].waiters = waiters;
        if emptied {
            self.slots[slot].progress.set_watch(u64::MAX);
        }
    }

    #[inline]
    fn finish_slot(
        &mut self,
        slot: usize,
        id: StreamId,
        seq: u64,
        status: TaskStatus,
        prune: bool,
    ) -> Result<()> {
        let s = self.slots.get_mut(slot).ok_or(Error::NoSuchStream)?;
        let stream = &mut s.stream;
        stream.finish(seq, status)?;
        let completed = stream.completed();
        let ready = stream.is_ready();
        let waited_on = !s.waiters.is_empty();
        s.progress.advance(completed);
        self.finished_items = self.finished_items.wrapping_add(1);
        if ready {
            // INVARIANT: the stream was running, so it was neither ready nor parked.
            // CAST: slot indices are below 2^31.
            self.ready.push_back(slot as u32);
        } else {
            // INVARIANT: nothing runs after a finish: nothing queued is idle.
            self.busy -= 1;
        }
        if prune || completed != seq {
            // A wait finished, or the sequence jumped over skipped items: edges may go.
            self.graph.note_completed(id.0, completed);
        }
        // Progress on this stream may satisfy waits parked on it; a gate may open.
        if waited_on {
            self.wake_waiters_slow(slot, completed);
        }
        self.unpark_gated();
        Ok(())
    }

    /// Completes the running task `seq` of stream `id` with `status`.
    ///
    /// A failure is recorded as the stream's error unless one is already pending. In
    /// [`FailureMode::StopOnFailure`] every item queued behind the failed one is also finished
    /// as failed without running; items submitted afterwards run normally.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id; [`Error::InvalidArgument`] when `seq` is not
    /// the stream's running task. Nothing changes on error.
    #[inline]
    pub fn finish(&mut self, id: StreamId, seq: u64, status: TaskStatus) -> Result<()> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        self.finish_slot(slot, id, seq, status, false)
    }

    /// Runs ready tasks with `runner` until no stream is ready, and returns how many ran.
    ///
    /// Tasks run in exactly the order of a [`take_ready`](Self::take_ready) and
    /// [`finish`](Self::finish) loop (see the module docs for the bursts and rounds that make
    /// it cheaper). Tasks skipped because of [`FailureMode::StopOnFailure`] and internal items
    /// do not count.
    pub fn run_once<R: TaskRunner<T>>(&mut self, runner: &mut R) -> usize {
        let mut ran = 0;
        loop {
            if self.ready.len() > 1 && self.gated.is_empty() {
                ran += self.run_rounds(runner);
            }
            let Some((slot, id, seq, task)) = self.take_slot_if(|_| true) else { break };
            ran += self.run_burst(runner, slot, id, seq, task);
        }
        ran
    }

    /// Runs the ready streams round-robin, one task each per round, while every ready stream
    /// heads a task, the tasks succeed and nobody waits on these streams; returns how many
    /// tasks ran. Stops (leaving the rest to [`take_ready`](Self::take_ready)'s path) when a
    /// head is an internal item, a task fails, or one stream is left ([`run_burst`](Self::run_burst)
    /// serves a lone stream better).
    ///
    /// Taking the front of the ready queue and putting it back at the end after each task is
    /// the same as walking the queue's streams in order, round after round, dropping those that
    /// run dry: that walk is what this does, on a scratch list, without touching the queue per
    /// task. Progress words and counters are brought up to date when a stream leaves the round
    /// and when the rounds stop. Nothing else can change the executor meanwhile (`&mut self`).
    ///
    /// While every stream of the round has at least `laps` items queued, none of them runs dry
    /// in the next `laps - 1` rounds: those run without the check (and, for a round of at most
    /// [`LAP_STREAMS`] streams, on references to the streams held for them), then one round
    /// with it.
    fn run_rounds<R: TaskRunner<T>>(&mut self, runner: &mut R) -> usize {
        // A stream others wait on may wake them when it finishes: the queue would change.
        // (And every stream in the queue is ready, by the executor's invariants; one that is
        // not is left to the general path, which skips it.)
        // CAST: slot indices are below 2^31.
        if self
            .ready
            .iter()
            .any(|s| self.slots.get(s as usize).is_none_or(|s| !s.waiters.is_empty() || !s.stream.is_ready()))
        {
            return 0;
        }
        let mut round = core::mem::take(&mut self.round);
        round.clear();
        self.ready.drain_into(&mut round);
        let slots = &mut self.slots;
        let mut ran = 0;
        // Why the rounds stopped early: `None` while they go on; `Some(None)` at an internal
        // item; `Some(Some(..))` at a failed task (taken out of the round, to finish below).
        // When they stop, `round` holds the queue as a finish per task would have left it.
        let mut stop: Option<Option<(usize, StreamId, u64, ErrorKind)>> = None;
        // Streams that ran dry.
        let mut idle = 0;
        'rounds: while round.len() > 1 {
            // No stream of the round runs dry in its first `laps - 1` rounds: run those
            // without looking whether a stream leaves.
            // CAST: slot indices are below 2^31.
            let laps =
                round.iter().map(|&s| slots.get(s as usize).map_or(0, |s| s.stream.queued_len())).min();
            // Where they stopped, and the failure if a task failed.
            let mut at = None;
            let laps = laps.unwrap_or(0);
            if laps > 1 && round.len() <= LAP_STREAMS {
                // A few streams: hold them, in round order, so that a task costs no lookup.
                let mut held: [Option<&mut Slot<T>>; LAP_STREAMS] = core::array::from_fn(|_| None);
                for (i, s) in slots.iter_mut().enumerate() {
                    // CAST: slot indices are below 2^31.
                    if let Some(p) = round.iter().position(|&r| r as usize == i) {
                        if let Some(h) = held.get_mut(p) {
                            *h = Some(s);
                        }
                    }
                }
                let held = held.get_mut(..round.len()).unwrap_or_default();
                let (r, failed) = run_laps(held, runner, laps - 1, &mut ran);
                at = r.map(|r| (r, failed));
            } else {
                'laps: for _ in 1..laps {
                    let lap_start = ran;
                    for &slot in &round {
                        // CAST: slot indices are below 2^31.
                        let Some(s) = slots.get_mut(slot as usize) else { continue };
                        match run_head(s, runner) {
                            Some(Ok(())) => ran += 1,
                            None => {
                                at = Some((ran - lap_start, None));
                                break 'laps;
                            }
                            Some(Err(failed)) => {
                                at = Some((ran - lap_start, Some(failed)));
                                ran += 1;
                                break 'laps;
                            }
                        }
                    }
                }
            }
            if let Some((r, failed)) = at {
                let failed = failed.map(|(id, seq, kind)| {
                    // The failed stream goes back to the queue when it is finished below.
                    // CAST: slot indices are below 2^31.
                    (round.remove(r) as usize, id, seq, kind)
                });
                // The general path takes it from here: the streams from where the round
                // stopped on first, then those before it (none has run dry).
                round.rotate_left(r);
                stop = Some(failed);
                break 'rounds;
            }
            // A round in which streams may run dry and leave. The streams that stay are
            // written over the visited entries: `round[..kept]`.
            let mut kept = 0;
            for r in 0..round.len() {
                let slot = round[r];
                // CAST: slot indices are below 2^31.
                let Some(s) = slots.get_mut(slot as usize) else { continue };
                let Some((seq, task)) = s.stream.take_done_with(take_task) else {
                    if s.stream.is_empty() {
                        // Nothing queued: the queue would drop it too.
                        continue;
                    }
                    // An internal item heads the stream: this stream and those after it come
                    // first, then those of this round that stayed.
                    round.drain(kept..r);
                    round.rotate_left(kept);
                    stop = Some(None);
                    break 'rounds;
                };
                let result = runner.run(s.id, seq, &task);
                drop(task);
                ran += 1;
                if let Err(kind) = result {
                    s.stream.reopen(seq);
                    stop = Some(Some((slot as usize, s.id, seq, kind)));
                    round.drain(kept..=r);
                    round.rotate_left(kept);
                    break 'rounds;
                }
                if s.stream.is_empty() {
                    s.progress.advance(seq);
                    // INVARIANT: nothing queued or running: idle.
                    idle += 1;
                    continue;
                }
                if let Some(k) = round.get_mut(kept) {
                    *k = slot;
                }
                kept += 1;
            }
            round.truncate(kept);
        }
        // INVARIANT: the ready queue gets the order a finish per task would have left.
        self.ready.extend(round.iter().copied());
        for &slot in &round {
            let s = &self.slots[slot as usize];
            s.progress.advance(s.stream.completed());
        }
        self.round = round;
        let failed = stop.flatten();
        // Every task that ran finished once, but the failed one (finished below).
        let finished = ran - usize::from(failed.is_some());
        self.busy -= idle;
        // CAST: a task count fits in u64.
        self.finished_items = self.finished_items.wrapping_add(finished as u64);
        if let Some((at, id, seq, kind)) = failed {
            let done = self.finish_slot(at, id, seq, TaskStatus::Failed(kind), false);
            debug_assert_eq!(done, Ok(()));
        }
        ran
    }

    /// Runs the task `seq` just taken from the stream in `slot` and finishes it; returns how
    /// many tasks ran.
    ///
    /// While that stream is *alone* (no other stream is ready or gated, none waits on it),
    /// finishing one of its tasks would put it back in the empty ready queue and the next
    /// [`take_ready`](Self::take_ready) would pop it again and start its head. So while the
    /// tasks succeed and the head is a task, the burst runs it directly and defers the
    /// bookkeeping (progress word, counters, the ready queue) to the end of the burst: one
    /// [`Progress`] store per burst, the order exactly that of a finish per task. Nothing else
    /// can change the executor meanwhile (`&mut self`), so the stream stays alone.
    #[inline]
    fn run_burst<R: TaskRunner<T>>(
        &mut self,
        runner: &mut R,
        slot: usize,
        id: StreamId,
        seq: u64,
        task: T,
    ) -> usize {
        let alone = self.ready.is_empty() && self.gated.is_empty() && self.slots[slot].waiters.is_empty();
        let status = run_task(runner, id, seq, task);
        let stream = &mut self.slots[slot].stream;
        if !alone || !matches!(status, TaskStatus::Ok) || stream.finish(seq, TaskStatus::Ok).is_err() {
            let finished = self.finish_slot(slot, id, seq, status, false);
            debug_assert_eq!(finished, Ok(()));
            return 1;
        }
        // Tasks finished in the burst whose bookkeeping is deferred (the first one is).
        let mut failed = None;
        let done = 1 + stream.run_done_with(take_task, |seq, task| {
            let result = runner.run(id, seq, &task);
            drop(task);
            match result {
                Ok(()) => true,
                Err(kind) => {
                    failed = Some((seq, kind));
                    false
                }
            }
        });
        self.end_burst(slot, done);
        let Some((seq, kind)) = failed else { return done };
        // The last task ran but is not finished: finish it.
        let finished = self.finish_slot(slot, id, seq, TaskStatus::Failed(kind), false);
        debug_assert_eq!(finished, Ok(()));
        done + 1
    }

    /// The deferred bookkeeping of `done` tasks finished in a burst of the stream in `slot`:
    /// publish its progress, count them, and queue the stream if it has more (internal items).
    #[cold]
    fn end_burst(&mut self, slot: usize, done: usize) {
        let s = &mut self.slots[slot];
        s.progress.advance(s.stream.completed());
        let ready = s.stream.is_ready();
        if s.stream.unfinished() == 0 {
            self.busy -= 1;
        }
        // CAST: a task count fits in u64.
        self.finished_items = self.finished_items.wrapping_add(done as u64);
        if ready {
            // INVARIANT: the stream was running (alone), so it was neither ready nor parked.
            // CAST: slot indices are below 2^31.
            self.ready.push_back(slot as u32);
        }
    }

    /// The highest sequence number of stream `id` that has finished (0 before any).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn completed_seq(&self, id: StreamId) -> Result<u64> {
        Ok(self.stream(id)?.completed())
    }

    /// Whether stream `id` takes one more item now (a task, a wait, an event record or reset)
    /// instead of answering [`Error::Full`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn has_room(&self, id: StreamId) -> Result<bool> {
        Ok(self.stream(id)?.has_room())
    }

    /// The highest sequence number handed out on stream `id` (0 before any).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn submitted_seq(&self, id: StreamId) -> Result<u64> {
        Ok(self.stream(id)?.submitted())
    }

    /// Takes the first failure on stream `id` since the last call, clearing it.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn take_error(&mut self, id: StreamId) -> Result<Option<ErrorKind>> {
        Ok(self.stream_mut(id)?.take_error())
    }

    /// The first failure of stream `id` since the error was last taken, left in place (a
    /// stream a failure stopped stays stopped).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn error(&self, id: StreamId) -> Result<Option<ErrorKind>> {
        Ok(self.stream(id)?.error())
    }

    /// Whether no item is queued or running on any stream.
    pub fn is_idle(&self) -> bool {
        debug_assert_eq!(
            self.busy,
            self.slots.iter().filter(|s| s.stream.unfinished() > 0).count(),
            "busy counts the streams with unfinished items"
        );
        self.busy == 0
    }

    /// Creates an event (not recorded yet).
    ///
    /// # Errors
    ///
    /// [`Error::TooManyStreams`] when the event table is full or the ids are exhausted.
    pub fn create_event(&mut self) -> Result<EventId> {
        if self.events.len() >= self.max_events {
            return Err(Error::TooManyStreams);
        }
        self.events.insert().ok_or(Error::TooManyStreams)
    }

    /// Destroys an event. Records and resets of it still queued complete as no-ops; waits
    /// already submitted keep waiting for the point they captured.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn destroy_event(&mut self, ev: EventId) -> Result<()> {
        self.events.remove(ev).map(|_| ()).ok_or(Error::NoSuchEvent)
    }

    /// Records `ev` on stream `id`: the event now stands for everything submitted to the
    /// stream up to and including the record itself, whose sequence number is returned.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`], or as [`submit`](Self::submit); nothing changes on error.
    pub fn record_event(&mut self, ev: EventId, id: StreamId) -> Result<u64> {
        let generation = self.events.get(ev).ok_or(Error::NoSuchEvent)?.next_generation();
        let seq = self.push_item(id, Item::Record(ev, generation))?;
        if let Some(e) = self.events.get_mut(ev) {
            e.record(StreamPoint { stream: id.0, seq }, generation);
        }
        Ok(seq)
    }

    /// Makes stream `id` wait for the point `ev` stands for now. Returns the wait's sequence
    /// number, or `None` when the event was never recorded (there is nothing to wait for).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`], or as [`submit`](Self::submit); nothing changes on error.
    pub fn wait_event(&mut self, id: StreamId, ev: EventId) -> Result<Option<u64>> {
        match self.events.get(ev).ok_or(Error::NoSuchEvent)?.point() {
            Some(p) => self.submit_wait(id, p).map(Some),
            None => {
                self.stream(id)?;
                Ok(None)
            }
        }
    }

    /// Resets `ev` in the order of stream `id`: when the reset runs, the event forgets its
    /// point (unless it was recorded again after this call). Returns the reset's sequence.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`], or as [`submit`](Self::submit); nothing changes on error.
    pub fn reset_event(&mut self, ev: EventId, id: StreamId) -> Result<u64> {
        let generation = self.events.get(ev).ok_or(Error::NoSuchEvent)?.generation();
        self.push_item(id, Item::Reset(ev, generation))
    }

    /// The status of `ev`: [`EventStatus::Pending`] while its point has not completed, and
    /// for good when an [`abort`](Self::abort) dropped its record.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn event_status(&self, ev: EventId) -> Result<EventStatus> {
        let e = self.events.get(ev).ok_or(Error::NoSuchEvent)?;
        Ok(match e.point() {
            None => EventStatus::NotRecorded,
            Some(p) if !e.is_cancelled() && self.is_complete(p) => EventStatus::Complete,
            Some(_) => EventStatus::Pending,
        })
    }

    /// The point `ev` stands for, if it is recorded.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn event_point(&self, ev: EventId) -> Result<Option<StreamPoint>> {
        Ok(self.events.get(ev).ok_or(Error::NoSuchEvent)?.point())
    }

    /// The clock reading (nanoseconds) taken when the event's latest record ran, if it has.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchEvent`] for an unknown id.
    pub fn event_timestamp(&self, ev: EventId) -> Result<Option<u64>> {
        Ok(self.events.get(ev).ok_or(Error::NoSuchEvent)?.timestamp_ns())
    }

    /// The published completed sequence of stream `id`: other threads may read it (and wait
    /// for a point) without the owner's lock. The word belongs to this stream only; a stream
    /// created later in the same slot gets a new one.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchStream`] for an unknown id.
    pub fn progress(&self, id: StreamId) -> Result<Arc<Progress>> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        Ok(Arc::clone(&self.slots[slot].progress))
    }

    fn stream(&self, id: StreamId) -> Result<&Stream<Item<T>>> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        Ok(&self.slots[slot].stream)
    }

    fn stream_mut(&mut self, id: StreamId) -> Result<&mut Stream<Item<T>>> {
        let slot = self.slot_of(id).ok_or(Error::NoSuchStream)?;
        Ok(&mut self.slots[slot].stream)
    }
}

/// Most streams a round holds on to while it runs (see [`Executor::run_once`]); rounds of
/// more streams look each one up per task.
const LAP_STREAMS: usize = 8;

/// One stream of a [`run_laps`] segment: the slots it runs in the segment (exactly as many
/// as the segment's laps), the sequence number before them, its id.
struct Lane<'a, T> {
    slots: &'a mut [Option<Item<T>>],
    base: u64,
    id: StreamId,
}

/// Runs `laps` rounds over the held streams (in round order; each has more than `laps` tasks
/// queued, so none runs dry), one task per stream per round, counting each task as done at
/// once, and adds the tasks run to `ran`. Answers where the rounds stopped early, if they
/// did: the index (in `held`) of the stream whose head is an internal item (not taken), or
/// whose task failed (left running, to be finished as failed), with the id, sequence number
/// and error of that task.
///
/// The rounds run in segments in which no stream's queued slots wrap around its ring: there
/// each stream's slots are a plain slice, walked by an iterator, and the sequence numbers
/// are written back once per segment: a task costs no index, mask or bounds check, and no
/// store but its slot's.
///
/// Each number of streams gets its own copy (`N`), so that the walk over the streams of a
/// round is unrolled and keeps their cursors in registers.
#[inline]
fn run_laps<T, R: TaskRunner<T>>(
    held: &mut [Option<&mut Slot<T>>],
    runner: &mut R,
    laps: usize,
    ran: &mut usize,
) -> (Option<usize>, Option<(StreamId, u64, ErrorKind)>) {
    match held.len() {
        2 => run_laps_of::<T, R, 2>(held, runner, laps, ran),
        3 => run_laps_of::<T, R, 3>(held, runner, laps, ran),
        4 => run_laps_of::<T, R, 4>(held, runner, laps, ran),
        5 => run_laps_of::<T, R, 5>(held, runner, laps, ran),
        6 => run_laps_of::<T, R, 6>(held, runner, laps, ran),
        7 => run_laps_of::<T, R, 7>(held, runner, laps, ran),
        8 => run_laps_of::<T, R, 8>(held, runner, laps, ran),
        // Not reached (a round holds 2 to `LAP_STREAMS` streams); running no lap is correct.
        _ => (None, None),
    }
}

/// [`run_laps`] for `N` streams (`held` holds `N`, or it runs nothing).
fn run_laps_of<T, R: TaskRunner<T>, const N: usize>(
    held: &mut [Option<&mut Slot<T>>],
    runner: &mut R,
    mut laps: usize,
    ran: &mut usize,
) -> (Option<usize>, Option<(StreamId, u64, ErrorKind)>) {
    let Ok(held) = <&mut [Option<&mut Slot<T>>; N]>::try_from(held) else { return (None, None) };
    let n = N;
    while laps > 0 {
        let mut lanes: [Lane<'_, T>; N] =
            core::array::from_fn(|_| Lane { slots: &mut [], base: 0, id: StreamId(0) });
        let mut seg = laps;
        for (h, lane) in held.iter_mut().zip(lanes.iter_mut()) {
            let Some(s) = h else { continue };
            let (base, id) = (s.stream.completed(), s.id);
            let slots = s.stream.queued_run(laps);
            seg = seg.min(slots.len());
            *lane = Lane { slots, base, id };
        }
        // Every lane exactly `seg` long (a held stream is never missing: `held` holds `N`), so
        // that the walk below indexes them with no bounds check: the lap bound is theirs.
        for lane in &mut lanes {
            let slots = core::mem::take(&mut lane.slots);
            lane.slots = slots.get_mut(..seg).unwrap_or_default();
        }
        // Where the segment stopped: the stream's index, and the error if its task failed.
        let mut stop: Option<(usize, Option<ErrorKind>)> = None;
        let mut lap = 0;
        'segment: while lap < seg {
            // CAST: a lap count fits in u64.
            let seq = lap as u64 + 1;
            for (i, lane) in lanes.iter_mut().enumerate() {
                let Some(task) = lane.slots.get_mut(lap).and_then(take_task) else {
                    stop = Some((i, None));
                    break 'segment;
                };
                let result = runner.run(lane.id, lane.base + seq, &task);
                drop(task);
                if let Err(kind) = result {
                    stop = Some((i, Some(kind)));
                    break 'segment;
                }
            }
            lap += 1;
        }
        // INVARIANT: every stream ran `lap` tasks, and those before the one where the segment
        // stopped (if it did) one more; the failed task was taken and runs.
        let stopped_at = stop.map_or(0, |(i, _)| i);
        for (i, s) in held.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            s.stream.mark_done(lap + usize::from(i < stopped_at));
        }
        // CAST: as above.
        *ran += lap * n + stopped_at;
        match stop {
            None => laps -= seg,
            Some((i, None)) => return (Some(i), None),
            Some((i, Some(kind))) => {
                *ran += 1;
                let Some(s) = held.get_mut(i).and_then(Option::as_mut) else { return (Some(i), None) };
                let seq = s.stream.completed() + 1;
                s.stream.mark_done(1);
                s.stream.reopen(seq);
                return (Some(i), Some((s.id, seq, kind)));
            }
        }
        if seg == 0 {
            // Not reached: every held stream has more than `laps` items queued.
            break;
        }
    }
    (None, None)
}

/// Runs the head of the stream in `s` if it is a task, counting it as done at once (a stream
/// where nothing runs): `None` when the head is not a task; the stream, sequence number and
/// error of a task that failed, which is left running (to be finished as failed).
#[inline]
fn run_head<T, R: TaskRunner<T>>(
    s: &mut Slot<T>,
    runner: &mut R,
) -> Option<core::result::Result<(), (StreamId, u64, ErrorKind)>> {
    let (seq, task) = s.stream.take_done_with(take_task)?;
    let result = runner.run(s.id, seq, &task);
    drop(task);
    Some(result.map_err(|kind| {
        s.stream.reopen(seq);
        (s.id, seq, kind)
    }))
}

/// Pushes `task` to a stream that is not below its limit: full, out of sequence numbers, its
/// limit to raise, or stopped. A stopped stream runs nothing more until its error is taken:
/// the task is dropped here and its place completes in order ([`Item::Skip`]).
#[cold]
fn submit_slow<T>(stream: &mut Stream<Item<T>>, task: T) -> Result<u64> {
    let item = if stream.is_stopped() { Item::Skip } else { Item::Task(task) };
    stream.push(item)
}

/// Takes the task out of a ring slot that holds one (for [`Stream::take_done_with`]); leaves an
/// internal item (or an empty slot) alone.
#[inline]
fn take_task<T>(slot: &mut Option<Item<T>>) -> Option<T> {
    if !matches!(slot, Some(Item::Task(_))) {
        return None;
    }
    match slot.take() {
        Some(Item::Task(task)) => Some(task),
        // Not reached: the slot holds a task.
        other => {
            *slot = other;
            None
        }
    }
}

/// Runs `task` with `runner` and drops it, answering the status to finish it with.
#[inline]
fn run_task<T, R: TaskRunner<T>>(runner: &mut R, id: StreamId, seq: u64, task: T) -> TaskStatus {
    match runner.run(id, seq, &task) {
        Ok(()) => TaskStatus::Ok,
        Err(kind) => TaskStatus::Failed(kind),
    }
}

impl<T> StreamOrder for Executor<T> {
    fn is_complete(&self, point: StreamPoint) -> bool {
        // A stream that no longer exists was idle when destroyed (or aborted): all of it is done.
        self.stream(StreamId(point.stream)).ok().is_none_or(|s| s.completed() >= point.seq)
    }

    fn is_ordered_before(&self, point: StreamPoint, stream: u32) -> bool {
        if self.is_complete(point) {
            return true;
        }
        let Ok(target) = self.stream(StreamId(point.stream)) else { return true };
        if point.seq > target.submitted() {
            // A point in the future of its stream is ordered before nothing.
            return false;
        }
        if point.stream == stream {
            return true;
        }
        self.graph.is_ordered_before(point, stream)
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    /// Records what ran; fails tasks whose value is negative.
    #[derive(Default)]
    struct Recorder {
        ran: Vec<(StreamId, u64, i32)>,
    }

    impl TaskRunner<i32> for Recorder {
        fn run(&mut self, stream: StreamId, seq: u64, task: &i32) -> core::result::Result<(), ErrorKind> {
            self.ran.push((stream, seq, *task));
            if *task < 0 {
                Err(ErrorKind::DeviceFault)
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn a_ring_slot_of_a_word_sized_task_is_two_words() {
        // The 32-bit stream id of a wait packs next to the discriminant, and `None` takes a
        // spare discriminant value: the ring walks 16 bytes per item, not 24.
        assert_eq!(core::mem::size_of::<Option<Item<u64>>>(), 16);
        assert_eq!(core::mem::size_of::<Option<Item<u32>>>(), 16);
    }

    #[test]
    fn in_order_within_a_stream() {
        let mut ex = Executor::new(4);
        let s = ex.create_stream(8).unwrap();
        assert_eq!(s, StreamId(0));
        for t in 10..15 {
            ex.submit(s, t).unwrap();
        }
        // Only one task of a stream runs at a time.
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, seq, task), (s, 1, 10));
        assert!(ex.take_ready().is_none());
        ex.finish(s, 1, TaskStatus::Ok).unwrap();
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 4);
        let order: Vec<_> = r.ran.iter().map(|&(_, seq, t)| (seq, t)).collect();
        assert_eq!(order, [(2, 11), (3, 12), (4, 13), (5, 14)]);
        assert_eq!(ex.completed_seq(s), Ok(5));
        assert!(ex.is_idle());
    }

    #[test]
    fn round_robin_across_streams() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        for t in 0..3 {
            ex.submit(a, t).unwrap();
        }
        for t in 100..102 {
            ex.submit(b, t).unwrap();
        }
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 5);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [0, 100, 1, 101, 2]);
        // Two streams may run at once.
        ex.submit(a, 7).unwrap();
        ex.submit(b, 8).unwrap();
        assert_eq!(ex.take_ready().map(|t| t.0), Some(a));
        assert_eq!(ex.take_ready().map(|t| t.0), Some(b));
        assert!(!ex.is_idle());
    }

    #[test]
    fn back_pressure() {
        let mut ex = Executor::new(1);
        let s = ex.create_stream(2).unwrap();
        assert_eq!(ex.submit(s, 1), Ok(1));
        assert_eq!(ex.has_room(s), Ok(true));
        assert_eq!(ex.submit(s, 2), Ok(2));
        assert_eq!(ex.has_room(s), Ok(false));
        assert_eq!(ex.submit(s, 3), Err(Error::Full));
        // A running task still occupies its slot.
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.submit(s, 3), Err(Error::Full));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert_eq!(ex.has_room(s), Ok(true));
        assert_eq!(ex.submit(s, 3), Ok(3));
        assert_eq!(ex.submitted_seq(s), Ok(3));
        assert_eq!(ex.completed_seq(s), Ok(1));
    }

    #[test]
    fn continue_mode_runs_everything() {
        let mut ex = Executor::new(1);
        let s = ex.create_stream(4).unwrap();
        for t in [1, -2, 3, -4] {
            ex.submit(s, t).unwrap();
        }
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 4);
        assert_eq!(ex.completed_seq(s), Ok(4));
        // The first failure is reported once.
        assert_eq!(ex.take_error(s), Ok(Some(ErrorKind::DeviceFault)));
        assert_eq!(ex.take_error(s), Ok(None));
    }

    #[test]
    fn stop_on_failure_skips_queued_tasks() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(4).unwrap();
        let other = ex.create_stream(4).unwrap();
        ex.set_failure_mode(s, FailureMode::StopOnFailure).unwrap();
        for t in [1, -2, 3, 4] {
            ex.submit(s, t).unwrap();
        }
        ex.submit(other, 9).unwrap();
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 3);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [1, 9, -2]);
        assert_eq!(ex.completed_seq(s), Ok(4));
        assert!(ex.is_idle());
        // Until the error is taken the stream stays stopped: a task submitted now (and an
        // event recorded behind it) completes in order without running.
        let ev = ex.create_event().unwrap();
        assert_eq!(ex.submit(s, 7), Ok(5));
        assert_eq!(ex.record_event(ev, s), Ok(6));
        assert_eq!(ex.run_once(&mut r), 0);
        assert_eq!(ex.completed_seq(s), Ok(6));
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete));
        assert_eq!(ex.submit(s, 8), Ok(7));
        assert_eq!(ex.take_ready(), None);
        assert_eq!(ex.completed_seq(s), Ok(7));
        assert!(ex.is_idle());
        assert_eq!(r.ran.len(), 3, "nothing ran on the stopped stream: {:?}", r.ran);
        assert_eq!(ex.take_error(s), Ok(Some(ErrorKind::DeviceFault)));
        assert_eq!(ex.take_error(other), Ok(None));
        // Tasks submitted after the error was taken run.
        assert_eq!(ex.submit(s, 5), Ok(8));
        assert_eq!(ex.run_once(&mut r), 1);
        assert_eq!(ex.completed_seq(s), Ok(8));
        assert_eq!(r.ran.last(), Some(&(s, 8, 5)));
    }

    #[test]
    fn a_failure_in_continue_mode_does_not_stop_the_stream() {
        let mut ex = Executor::new(1);
        let s = ex.create_stream(4).unwrap();
        ex.submit(s, -1).unwrap();
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 1);
        // Switching to stop mode after a continue-mode failure stops nothing.
        ex.set_failure_mode(s, FailureMode::StopOnFailure).unwrap();
        ex.submit(s, 2).unwrap();
        assert_eq!(ex.run_once(&mut r), 1);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [-1, 2]);
        assert_eq!(ex.take_error(s), Ok(Some(ErrorKind::DeviceFault)));
    }

    #[test]
    fn the_slot_queue_is_first_in_first_out_across_wraps_and_growth() {
        let mut q = SlotQueue::default();
        assert_eq!(q.pop_front(), None);
        let mut model = alloc::collections::VecDeque::new();
        // Pushes and pops that wrap the ring, grow it while wrapped, and retain.
        for round in 0..40u32 {
            for v in 0..(round % 7) {
                q.push_back(round * 10 + v);
                model.push_back(round * 10 + v);
            }
            for _ in 0..(round % 5) {
                assert_eq!(q.pop_front(), model.pop_front());
            }
            if round % 9 == 0 {
                q.retain(|&v| v % 3 != 0);
                model.retain(|&v| v % 3 != 0);
            }
            assert_eq!(q.len(), model.len());
            assert_eq!(q.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
        }
        let mut out = alloc::vec![1];
        q.drain_into(&mut out);
        assert_eq!(out[1..], model.iter().copied().collect::<Vec<_>>()[..]);
        assert!(q.is_empty() && q.pop_front().is_none());
    }

    #[test]
    fn stream_lifecycle_and_errors() {
        let mut ex: Executor<i32> = Executor::new(2);
        assert_eq!(ex.create_stream(0), Err(Error::InvalidArgument));
        let a = ex.create_stream(1).unwrap();
        let b = ex.create_stream(1).unwrap();
        assert_eq!(ex.create_stream(1), Err(Error::TooManyStreams));
        ex.submit(a, 1).unwrap();
        assert_eq!(ex.destroy_stream(a), Err(Error::InvalidArgument));
        ex.destroy_stream(b).unwrap();
        let c = ex.create_stream(1).unwrap();
        assert!(c != a && c != b, "ids are never reused");
        let gone = b;
        assert_eq!(ex.submit(gone, 1), Err(Error::NoSuchStream));
        assert_eq!(ex.destroy_stream(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.completed_seq(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.submitted_seq(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.take_error(gone), Err(Error::NoSuchStream));
        assert_eq!(ex.set_failure_mode(gone, FailureMode::Continue), Err(Error::NoSuchStream));
        assert_eq!(ex.finish(gone, 1, TaskStatus::Ok), Err(Error::NoSuchStream));
        // Finishing a task that is not running is rejected.
        assert_eq!(ex.finish(a, 1, TaskStatus::Ok), Err(Error::InvalidArgument));
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.finish(a, seq + 1, TaskStatus::Ok), Err(Error::InvalidArgument));
        ex.finish(a, seq, TaskStatus::Ok).unwrap();
        ex.destroy_stream(a).unwrap();
        assert!(ex.is_idle());
    }

    fn pt(stream: StreamId, seq: u64) -> StreamPoint {
        StreamPoint { stream: stream.0, seq }
    }

    #[test]
    fn a_wait_blocks_until_the_other_stream_reaches_the_point() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        let sa = ex.submit(a, 1).unwrap();
        assert_eq!(ex.submit_wait(b, pt(a, sa)), Ok(1));
        ex.submit(b, 2).unwrap();
        // B's task waits behind the wait: only A's task can start.
        let (id, seq, _) = ex.take_ready().unwrap();
        assert_eq!(id, a);
        assert!(ex.take_ready().is_none());
        assert!(ex.has_parked());
        assert!(ex.is_ordered_before(pt(a, 1), b.0), "B waits on (A, 1)");
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, seq, task), (b, 2, 2));
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        assert!(ex.is_idle());
    }

    #[test]
    fn waits_on_own_stream_or_gone_streams_are_free() {
        let mut ex: Executor<i32> = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        ex.submit_wait(a, pt(a, 5)).unwrap();
        ex.submit_wait(a, pt(b, 0)).unwrap();
        ex.destroy_stream(b).unwrap();
        ex.submit_wait(a, pt(b, 9)).unwrap();
        assert!(ex.take_ready().is_none());
        assert!(ex.is_idle());
        assert_eq!(ex.completed_seq(a), Ok(3));
    }

    #[test]
    fn events_record_wait_reset_and_stamp() {
        fn clock() -> u64 {
            1234
        }
        let mut ex = Executor::with_clock(4, clock);
        let a = ex.create_stream(4).unwrap();
        let b = ex.create_stream(4).unwrap();
        let ev = ex.create_event().unwrap();
        assert_eq!(ex.event_status(ev), Ok(EventStatus::NotRecorded));
        // Waiting on a never-recorded event submits nothing.
        assert_eq!(ex.wait_event(b, ev), Ok(None));
        ex.submit(a, 1).unwrap();
        assert_eq!(ex.record_event(ev, a), Ok(2));
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Pending));
        assert_eq!(ex.event_point(ev), Ok(Some(pt(a, 2))));
        assert_eq!(ex.wait_event(b, ev), Ok(Some(1)));
        ex.submit(b, 3).unwrap();
        assert!(ex.is_ordered_before(pt(a, 2), b.0));
        assert!(!ex.is_ordered_before(pt(a, 2), 99));
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 2);
        let tasks: Vec<_> = r.ran.iter().map(|&(_, _, t)| t).collect();
        assert_eq!(tasks, [1, 3], "B's task ran after A's record");
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete));
        assert_eq!(ex.event_timestamp(ev), Ok(Some(1234)));
        ex.reset_event(ev, a).unwrap();
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete), "reset runs in stream order");
        ex.run_once(&mut r);
        assert_eq!(ex.event_status(ev), Ok(EventStatus::NotRecorded));
        ex.destroy_event(ev).unwrap();
        assert_eq!(ex.event_status(ev), Err(Error::NoSuchEvent));
        assert_eq!(ex.record_event(ev, a), Err(Error::NoSuchEvent));
        assert_eq!(ex.destroy_event(ev), Err(Error::NoSuchEvent));
    }

    #[test]
    fn ordering_is_transitive_through_waits() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(8).unwrap();
        let b = ex.create_stream(8).unwrap();
        let c = ex.create_stream(8).unwrap();
        ex.submit(a, 1).unwrap();
        ex.submit(a, 2).unwrap();
        // B waits for (A, 1); C waits for (B, 1).
        ex.submit_wait(b, pt(a, 1)).unwrap();
        ex.submit_wait(c, pt(b, 1)).unwrap();
        assert!(ex.is_ordered_before(pt(a, 1), c.0));
        assert!(!ex.is_ordered_before(pt(a, 2), c.0), "C waits only for A's first task");
        assert!(!ex.is_ordered_before(pt(c, 1), a.0));
        assert!(ex.is_ordered_before(pt(a, 2), a.0), "same stream");
        assert!(!ex.is_ordered_before(pt(a, 3), a.0), "a future point");
        assert!(!ex.is_complete(pt(a, 1)));
        let mut r = Recorder::default();
        ex.run_once(&mut r);
        assert!(ex.is_complete(pt(a, 2)) && ex.is_ordered_before(pt(a, 2), c.0));
        assert!(ex.graph.edge_count() == 0, "completed waits leave no edges");
    }

    #[test]
    fn abort_keep_head_starts_a_ready_head_and_drops_the_rest() {
        let mut ex = Executor::new(4);
        let s = ex.create_stream(8).unwrap();
        let other = ex.create_stream(8).unwrap();
        let ev = ex.create_event().unwrap();
        // A record in front of the head completes (the device got past it); one behind it does not.
        let e0 = ex.create_event().unwrap();
        ex.record_event(e0, s).unwrap();
        for t in [10, 11, 12] {
            ex.submit(s, t).unwrap();
        }
        ex.record_event(ev, s).unwrap();
        assert_eq!(ex.abort_keep_head(StreamId(77), |_| true).unwrap_err(), Error::NoSuchStream);
        let (dropped, started) = ex.abort_keep_head(s, |_| true).unwrap();
        assert_eq!((dropped, started), (3, Some((2, 10))));
        assert_eq!(ex.event_status(e0), Ok(EventStatus::Complete));
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Pending));
        // The head is running: nothing else of the stream is handed out.
        ex.submit(other, 5).unwrap();
        assert_eq!(ex.take_ready().map(|t| t.2), Some(5));
        assert!(ex.take_ready().is_none());
        ex.finish(s, 2, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(s), Ok(5));
        // The dropped record never stamps or completes its event.
        assert_eq!(ex.event_timestamp(ev), Ok(None));
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Pending));
        ex.record_event(ev, s).unwrap();
        let mut r = Recorder::default();
        ex.run_once(&mut r);
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete), "a new record completes");
        // A second call with nothing queued drops nothing and starts nothing.
        assert_eq!(ex.abort_keep_head(s, |_| true), Ok((0, None)));
    }

    #[test]
    fn abort_keep_head_cancels_a_head_that_cannot_start() {
        let mut ex = Executor::new(4);
        let (a, b) = (ex.create_stream(4).unwrap(), ex.create_stream(4).unwrap());
        // a's head waits for b's task 1, which has not run: it cannot start.
        ex.submit(b, 1).unwrap();
        ex.submit_wait(a, StreamPoint { stream: b.0, seq: 1 }).unwrap();
        ex.submit(a, 2).unwrap();
        assert!(ex.take_ready_if(|&t| t != 1).is_none(), "b's task is gated, a parks on b");
        assert_eq!(ex.abort_keep_head(a, |_| true), Ok((2, None)));
        assert_eq!(ex.completed_seq(a), Ok(2));
        // A gate that refuses the head cancels it too.
        ex.submit(a, 3).unwrap();
        assert_eq!(ex.abort_keep_head(a, |_| false), Ok((1, None)));
        // A running task keeps running and nothing else starts.
        ex.submit(a, 4).unwrap();
        ex.submit(a, 5).unwrap();
        let (id, seq, _) = ex.take_ready_if(|&t| t == 4).unwrap();
        assert_eq!(id, a);
        assert_eq!(ex.abort_keep_head(a, |_| true), Ok((1, None)));
        ex.finish(a, seq, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(5));
        // b is still intact.
        let mut r = Recorder::default();
        assert_eq!(ex.run_once(&mut r), 1);
        assert!(ex.is_idle());
    }

    #[test]
    fn abort_drops_queued_work() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(8).unwrap();
        for t in 0..5 {
            ex.submit(s, t).unwrap();
        }
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(ex.abort(s), Ok(4));
        assert!(!ex.is_idle(), "the running task is still running");
        assert_eq!(ex.submit(s, 9), Ok(6));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(s), Ok(5));
        let (_, seq, task) = ex.take_ready().unwrap();
        assert_eq!((seq, task), (6, 9));
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert!(ex.is_idle());
        assert_eq!(ex.abort(StreamId(77)), Err(Error::NoSuchStream));
        ex.submit(s, 1).unwrap();
        assert_eq!(ex.abort(s), Ok(1));
        assert!(ex.is_idle());
        assert_eq!(ex.completed_seq(s), Ok(7));
        ex.destroy_stream(s).unwrap();
    }

    #[test]
    fn a_gate_parks_a_stream_until_recheck() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(4).unwrap();
        ex.submit(s, 5).unwrap();
        assert!(ex.take_ready_if(|&t| t != 5).is_none());
        assert!(ex.has_parked());
        assert!(ex.take_ready().is_none(), "parked until recheck");
        ex.recheck();
        assert_eq!(ex.take_ready().map(|t| t.2), Some(5));
    }

    #[test]
    fn progress_words_follow_completion() {
        let mut ex = Executor::new(2);
        let s = ex.create_stream(8).unwrap();
        let word = ex.progress(s).unwrap();
        assert_eq!(word.completed(), 0);
        for t in 0..4 {
            ex.submit(s, t).unwrap();
        }
        let (_, seq, _) = ex.take_ready().unwrap();
        assert_eq!(word.completed(), 0, "taking publishes nothing");
        ex.finish(s, seq, TaskStatus::Ok).unwrap();
        assert_eq!(word.completed(), 1);
        // Aborting counts the dropped tasks as finished, and says so.
        assert_eq!(ex.abort(s), Ok(3));
        assert_eq!(word.completed(), 4);
        ex.destroy_stream(s).unwrap();
        assert_eq!(ex.progress(s).unwrap_err(), Error::NoSuchStream);
        // A stream created later in the same slot has a word of its own.
        let t = ex.create_stream(8).unwrap();
        assert_ne!(t, s);
        assert_eq!(ex.progress(t).unwrap().completed(), 0);
        assert_eq!(word.completed(), 4);
    }

    #[test]
    fn stale_ids_are_refused_after_their_slot_is_reused() {
        let mut ex: Executor<i32> = Executor::new(1);
        let a = ex.create_stream(2).unwrap();
        ex.destroy_stream(a).unwrap();
        let b = ex.create_stream(2).unwrap();
        assert_ne!(a, b, "ids are never reused");
        assert_eq!(ex.submit(a, 1), Err(Error::NoSuchStream));
        assert_eq!(ex.completed_seq(a), Err(Error::NoSuchStream));
        assert_eq!(ex.submit(b, 1), Ok(1));
        // A point of the destroyed stream counts as complete; one of the new stream does not.
        assert!(ex.is_complete(pt(a, 1)));
        assert!(!ex.is_complete(pt(b, 1)));
    }

    #[test]
    fn a_parked_wait_is_looked_at_only_when_its_target_moves() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(8).unwrap();
        let b = ex.create_stream(8).unwrap();
        let c = ex.create_stream(8).unwrap();
        ex.submit(a, 1).unwrap();
        let a2 = ex.submit(a, 2).unwrap();
        ex.submit_wait(c, pt(a, a2)).unwrap();
        ex.submit(c, 30).unwrap();
        for t in 0..3 {
            ex.submit(b, 10 + t).unwrap();
        }
        // Run B alone: C stays parked on A however much B does.
        let mut order = Vec::new();
        while let Some((id, seq, task)) = ex.take_ready_if(|&t| t >= 10) {
            order.push(task);
            ex.finish(id, seq, TaskStatus::Ok).unwrap();
        }
        assert_eq!(order, [10, 11, 12]);
        assert!(ex.has_parked() && ex.has_gated(), "A is refused by the gate, C waits on A");
        ex.recheck();
        assert!(!ex.has_gated());
        // A's first task does not reach C's point; its second does.
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, task), (a, 1));
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        assert!(ex.has_parked(), "C still waits");
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, task), (a, 2));
        assert!(ex.take_ready().is_none(), "C waits for A's running task");
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        assert!(!ex.has_parked());
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, task), (c, 30));
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        assert!(ex.is_idle());
    }

    #[test]
    fn destroying_or_aborting_a_target_releases_its_waiters() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(8).unwrap();
        let b = ex.create_stream(8).unwrap();
        let c = ex.create_stream(8).unwrap();
        // B waits for a point A has not even submitted; C waits on B.
        ex.submit_wait(b, pt(a, 5)).unwrap();
        ex.submit(b, 1).unwrap();
        ex.submit_wait(c, pt(b, 2)).unwrap();
        ex.submit(c, 2).unwrap();
        assert!(ex.take_ready().is_none());
        assert!(ex.has_parked());
        // Aborting C takes it off B's waiters; destroying A releases B.
        assert_eq!(ex.abort(c), Ok(2));
        ex.destroy_stream(a).unwrap();
        let (id, seq, task) = ex.take_ready().unwrap();
        assert_eq!((id, task), (b, 1));
        ex.finish(id, seq, TaskStatus::Ok).unwrap();
        assert!(!ex.has_parked());
        assert!(ex.is_idle());
        // A stream aborted while parked leaves nothing behind: its slot works again.
        ex.submit(c, 3).unwrap();
        assert_eq!(ex.take_ready().map(|t| t.2), Some(3));
    }

    #[test]
    fn a_run_takes_the_tasks_behind_the_head_up_to_an_item_or_a_refusal() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(16).unwrap();
        let ev = ex.create_event().unwrap();
        for t in 1..=3 {
            ex.submit(a, t).unwrap();
        }
        ex.record_event(ev, a).unwrap();
        for t in 5..=8 {
            ex.submit(a, t).unwrap();
        }
        let mut out = Vec::new();
        // Stops at the record (an internal item).
        assert_eq!(ex.take_run_if(|_| true, |_| true, 16, &mut out), Some((a, 1)));
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(ex.take_ready(), None, "nothing else of the stream starts while it runs");
        assert_eq!(ex.completed_seq(a), Ok(0));
        // The run ends with the finish of its first task not counted yet.
        assert_eq!(ex.finish(a, 2, TaskStatus::Ok), Err(Error::InvalidArgument));
        ex.finish(a, 1, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(3));
        // The record completes on the way to the next run, which `extend` and `max` cut.
        assert_eq!(ex.take_run_if(|_| true, |&t| t != 7, 16, &mut out), Some((a, 5)));
        assert_eq!(out, [5, 6]);
        assert_eq!(ex.event_status(ev), Ok(EventStatus::Complete));
        ex.finish(a, 5, TaskStatus::Ok).unwrap();
        assert_eq!(ex.take_run_if(|_| true, |_| true, 1, &mut out), Some((a, 7)));
        assert_eq!(out, [7]);
        ex.finish(a, 7, TaskStatus::Ok).unwrap();
        assert_eq!(ex.take_run_if(|_| true, |_| true, 16, &mut out), Some((a, 8)));
        ex.finish(a, 8, TaskStatus::Ok).unwrap();
        assert!(ex.is_idle());
        assert_eq!(ex.take_run_if(|_| true, |_| true, 16, &mut out), None);
        assert!(out.is_empty());
    }

    #[test]
    fn a_stream_that_stops_on_failure_runs_one_task_at_a_time() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(16).unwrap();
        ex.set_failure_mode(a, FailureMode::StopOnFailure).unwrap();
        for t in 1..=3 {
            ex.submit(a, t).unwrap();
        }
        let mut out = Vec::new();
        assert_eq!(ex.take_run_if(|_| true, |_| true, 16, &mut out), Some((a, 1)));
        assert_eq!(out, [1]);
        ex.finish(a, 1, TaskStatus::Failed(ErrorKind::DeviceFault)).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(3), "the failure skipped the rest");
    }

    #[test]
    fn a_run_counts_its_tasks_as_unfinished_until_they_finish() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(4).unwrap();
        for t in 1..=4 {
            ex.submit(a, t).unwrap();
        }
        let mut out = Vec::new();
        ex.take_run_if(|_| true, |_| true, 8, &mut out).unwrap();
        assert_eq!(out.len(), 4);
        // Four tasks run: the stream is full until some finish.
        assert_eq!(ex.has_room(a), Ok(false));
        assert_eq!(ex.submit(a, 5), Err(Error::Full));
        ex.complete_run_to(a, 2).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(2));
        assert_eq!(ex.progress(a).unwrap().completed(), 2);
        assert_eq!(ex.submit(a, 5), Ok(5));
        assert_eq!(ex.submit(a, 6), Ok(6));
        assert_eq!(ex.submit(a, 7), Err(Error::Full));
        // Only points inside the run, before its last task, may be counted.
        assert_eq!(ex.complete_run_to(a, 2), Err(Error::InvalidArgument));
        assert_eq!(ex.complete_run_to(a, 4), Err(Error::InvalidArgument));
        assert_eq!(ex.complete_run_to(a, 5), Err(Error::InvalidArgument));
        ex.finish(a, 3, TaskStatus::Failed(ErrorKind::DeviceFault)).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(4));
        assert_eq!(ex.take_error(a), Ok(Some(ErrorKind::DeviceFault)), "a failed run records its error");
        assert_eq!(ex.take_run_if(|_| true, |_| true, 8, &mut out), Some((a, 5)));
        assert_eq!(out, [5, 6]);
    }

    #[test]
    fn a_wait_on_a_point_inside_a_run_is_watched_and_released_by_its_owner() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(16).unwrap();
        let b = ex.create_stream(16).unwrap();
        for t in 1..=4 {
            ex.submit(a, t).unwrap();
        }
        let mut out = Vec::new();
        ex.take_run_if(|_| true, |_| true, 16, &mut out).unwrap();
        let word = ex.progress(a).unwrap();
        assert_eq!(word.watched(), u64::MAX, "nobody waits yet");
        ex.submit_wait(b, pt(a, 2)).unwrap();
        ex.submit(b, 10).unwrap();
        // `b` parks on `a`, which now watches point 2.
        assert_eq!(ex.take_ready(), None);
        assert_eq!(word.watched(), 2);
        // The run's owner publishes task 1 (nobody waits for it), then task 2 (someone does).
        assert!(!word.publish_run(1));
        assert!(word.publish_run(2));
        ex.complete_run_to(a, 2).unwrap();
        assert_eq!(word.watched(), u64::MAX, "nobody waits any more");
        assert_eq!(ex.take_ready().map(|t| (t.0, t.2)), Some((b, 10)));
        // A wait whose point the owner published already (without the lock) does not park.
        ex.submit_wait(b, pt(a, 3)).unwrap();
        assert!(!word.publish_run(3));
        ex.finish(b, 2, TaskStatus::Ok).unwrap();
        ex.submit(b, 11).unwrap();
        assert_eq!(ex.take_ready().map(|t| (t.0, t.2)), Some((b, 11)));
        assert_eq!(word.watched(), u64::MAX);
        ex.finish(a, 3, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(4));
    }

    #[test]
    fn an_abort_during_a_run_drops_only_what_is_queued_behind_it() {
        let mut ex = Executor::new(4);
        let a = ex.create_stream(16).unwrap();
        for t in 1..=3 {
            ex.submit(a, t).unwrap();
        }
        let mut out = Vec::new();
        ex.take_run_if(|_| true, |_| true, 16, &mut out).unwrap();
        ex.submit(a, 4).unwrap();
        ex.submit(a, 5).unwrap();
        let (dropped, started) = ex.abort_keep_head(a, |_| true).unwrap();
        assert_eq!((dropped, started), (2, None), "the run is on the device");
        assert_eq!(ex.completed_seq(a), Ok(0));
        ex.complete_run_to(a, 1).unwrap();
        ex.finish(a, 2, TaskStatus::Ok).unwrap();
        assert_eq!(ex.completed_seq(a), Ok(5));
        assert!(ex.is_idle());
        ex.submit(a, 6).unwrap();
        assert_eq!(ex.take_run_if(|_| true, |_| true, 16, &mut out), Some((a, 6)));
    }
}
