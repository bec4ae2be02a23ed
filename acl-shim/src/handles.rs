//! Per-device handle tables: the objects C holds by opaque handle (streams, events, contexts,
//! pools, …), each in a fixed-capacity table of slots, so that resolving a handle is a decode,
//! an index and a generation check — no map, no process-wide lock.
//!
//! A handle is a `u64` (C sees it as a pointer it never dereferences):
//!
//! ```text
//!  63..60  59..56  55..48  47..40     39..20            19..0
//!  0xA     kind    device  aclInit    slot generation   slot index
//!                          generation (20 bits, never 0)
//! ```
//!
//! The top nibble makes a handle a non-canonical address that is never NULL and never a small
//! integer. The aclInit generation (its low 8 bits) rejects handles kept across an
//! `aclFinalize`/`aclInit`; the slot generation rejects a handle whose object was destroyed,
//! even after its slot was reused (it wraps after 2^20 − 1 reuses of one slot).
//!
//! This module owns the encoding and the tables only: what a slot holds, its limits and the
//! messages of failed lookups belong to the modules that use it (`stream`, `pool`, …). It must
//! not call the backend.
//!
//! # Locking
//!
//! [`HandleTable::get`] (and [`HandleTable::get_ref`], which counts no reference) takes no lock:
//! a slot is an [`ArcSwapOption`] read lock-free. Insert and
//! remove take the table's own mutex (one per device and kind; a leaf: nothing else is taken
//! while it is held, and nothing is called out of it). A remove that races a `get` is safe: the
//! `get` either sees the object (and keeps it alive through its `Arc`) or sees the slot empty or
//! re-used with another generation.

use std::ops::Deref;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;

/// The kinds of handle; the value is the handle's `kind` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// `aclrtStream`.
    Stream = 1,
    /// `aclrtEvent`.
    Event = 2,
    /// `aclrtContext`.
    Context = 3,
    /// `aclrtMemPool`.
    Pool = 4,
    /// `aclrtNotify`.
    Notify = 5,
    /// Physical memory (`aclrtDrvMemHandle`).
    Physical = 6,
    /// Anything else a later module needs (kept distinct from the others).
    Other = 15,
}

const TAG: u64 = 0xA << 60;
const TAG_MASK: u64 = 0xF << 60;
const KIND_SHIFT: u32 = 56;
const DEVICE_SHIFT: u32 = 48;
const INIT_SHIFT: u32 = 40;
const GEN_SHIFT: u32 = 20;
const GEN_MASK: u32 = (1 << 20) - 1;
const INDEX_MASK: u32 = (1 << 20) - 1;

/// The most slots one table can have (the index field's range).
pub const MAX_SLOTS: u32 = INDEX_MASK + 1;

/// Slots are allocated in chunks of this many, on first use, so an idle table costs a
/// pointer per chunk.
const CHUNK: u32 = 64;

/// A decoded handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle {
    /// Its kind.
    pub kind: Kind,
    /// The device whose table holds it.
    pub device: u32,
    /// The low 8 bits of the aclInit generation it was made in.
    pub init: u8,
    /// Its slot's generation when it was made (1..2^20).
    pub generation: u32,
    /// Its slot.
    pub index: u32,
}

impl Handle {
    /// The handle as C holds it.
    pub fn raw(self) -> u64 {
        TAG | u64::from(self.kind as u8) << KIND_SHIFT
            | u64::from(self.device & 0xff) << DEVICE_SHIFT
            | u64::from(self.init) << INIT_SHIFT
            | u64::from(self.generation & GEN_MASK) << GEN_SHIFT
            | u64::from(self.index & INDEX_MASK)
    }

    /// Decodes `raw` as a handle of `kind`; `None` when it is not one (wrong tag or kind —
    /// garbage, NULL, or a handle of another kind).
    pub fn decode(raw: u64, kind: Kind) -> Option<Self> {
        if raw & TAG_MASK != TAG || (raw >> KIND_SHIFT) & 0xf != u64::from(kind as u8) {
            return None;
        }
        // CAST: each field is masked to its width, which fits its type.
        let field = |shift: u32, mask: u64| ((raw >> shift) & mask) as u32;
        Some(Self {
            kind,
            device: field(DEVICE_SHIFT, 0xff),
            // CAST: masked to 8 bits.
            init: field(INIT_SHIFT, 0xff) as u8,
            generation: field(GEN_SHIFT, u64::from(GEN_MASK)),
            index: field(0, u64::from(INDEX_MASK)),
        })
    }

    /// The device of a raw handle of `kind`, without a table lookup.
    pub fn device_of(raw: u64, kind: Kind) -> Option<u32> {
        Self::decode(raw, kind).map(|h| h.device)
    }
}

/// A live object of a table, as [`HandleTable::get`] returns it: keeps the object alive while
/// held, even if its handle is destroyed meanwhile.
#[derive(Debug)]
pub struct Entry<T> {
    handle: u64,
    generation: u32,
    value: T,
}

impl<T> Entry<T> {
    /// The handle of this object.
    pub fn handle(&self) -> u64 {
        self.handle
    }
}

impl<T> Deref for Entry<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// A live object of a table held for one call, as [`HandleTable::get_ref`] returns it: an
/// arc-swap guard on its slot, which keeps the object alive while held (a remove meanwhile
/// hands the guard a reference of its own) without touching the object's reference count.
/// Meant for the length of a call: a thread holding many at once falls back to counted
/// references (still correct, only slower).
pub struct Ref<T>(arc_swap::Guard<Option<Arc<Entry<T>>>>);

impl<T> Ref<T> {
    /// A counted reference, for what outlives the call.
    pub fn to_arc(&self) -> Arc<Entry<T>> {
        Arc::clone(self)
    }
}

impl<T> Deref for Ref<T> {
    type Target = Arc<Entry<T>>;
    fn deref(&self) -> &Arc<Entry<T>> {
        // `get_ref` makes a `Ref` only from a full slot.
        self.0.as_ref().unwrap_or_else(|| unreachable!("a Ref is made from a full slot"))
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Ref<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Ref").field(&***self).finish()
    }
}

#[derive(Debug, Default)]
struct Slot<T> {
    /// The generation the next object of this slot gets, minus one.
    generation: AtomicU32,
    value: ArcSwapOption<Entry<T>>,
}

#[derive(Debug, Default)]
struct Alloc {
    /// Released slots, reused last-in first-out.
    free: Vec<u32>,
    /// Slots ever handed out (the next fresh index).
    used: u32,
    /// Objects alive.
    live: u32,
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// The table already holds its capacity of objects.
    Capacity(u32),
}

/// Moved by every removal from any table (a destroy, a device's reset or `aclFinalize`'s
/// drain), before the removed object's slot empties: a thread that resolved a handle while this
/// read `e` may reuse that resolution for as long as [`removal_epoch`] still reads `e` (the
/// per-thread submit cache of `crate::api::stream`), since no object of any table has died
/// since.
static REMOVALS: AtomicU64 = AtomicU64::new(0);

/// The current removal epoch (see [`REMOVALS`]).
#[inline]
pub(crate) fn removal_epoch() -> u64 {
    // Acquire: pairs with the release of a removal, so a thread that sees the epoch unchanged
    // saw no removal that happened before its read.
    REMOVALS.load(Ordering::Acquire)
}

/// Moves the removal epoch (under a table's lock, before a slot empties).
fn note_removal() {
    REMOVALS.fetch_add(1, Ordering::AcqRel);
}

/// [`CHUNK`] slots, made on first use.
type Chunk<T> = OnceLock<Box<[Slot<T>]>>;

/// A fixed-capacity table of one kind of object of one device.
#[derive(Debug)]
pub struct HandleTable<T> {
    kind: Kind,
    device: u32,
    init: u8,
    capacity: u32,
    chunks: Box<[Chunk<T>]>,
    alloc: Mutex<Alloc>,
}

impl<T> HandleTable<T> {
    /// An empty table of `kind` for `device`, holding at most `capacity` objects (at most
    /// [`MAX_SLOTS`]), for the aclInit generation `init_generation`.
    pub fn new(kind: Kind, device: u32, init_generation: u64, capacity: u32) -> Self {
        let capacity = capacity.clamp(1, MAX_SLOTS);
        let chunks = capacity.div_ceil(CHUNK) as usize;
        Self {
            kind,
            device,
            // CAST: the low 8 bits on purpose.
            init: init_generation as u8,
            capacity,
            chunks: (0..chunks).map(|_| OnceLock::new()).collect(),
            alloc: Mutex::new(Alloc::default()),
        }
    }

    /// The most objects this table holds.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Objects alive now.
    pub fn len(&self) -> u32 {
        self.lock().live
    }

    /// Whether no object is alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Alloc> {
        // A panic cannot leave `Alloc` half-updated: every update below is a single push, pop
        // or counter step after the fallible work is done.
        crate::sync::relock(&self.alloc)
    }

    fn slot(&self, index: u32) -> Option<&Slot<T>> {
        let chunk = self.chunks.get((index / CHUNK) as usize)?.get()?;
        chunk.get((index % CHUNK) as usize)
    }

    fn slot_or_make(&self, index: u32) -> &Slot<T> {
        let chunk = self.chunks[(index / CHUNK) as usize].get_or_init(|| {
            (0..CHUNK)
                .map(|_| Slot { generation: AtomicU32::new(0), value: ArcSwapOption::empty() })
                .collect()
        });
        &chunk[(index % CHUNK) as usize]
    }

    /// Stores the object `make` builds from its handle; returns the handle.
    ///
    /// # Errors
    ///
    /// [`Full::Capacity`] when the table is full (nothing changes).
    pub fn insert_with(&self, make: impl FnOnce(u64) -> T) -> Result<u64, Full> {
        let mut a = self.lock();
        if a.live >= self.capacity {
            return Err(Full::Capacity(self.capacity));
        }
        let index = match a.free.last() {
            Some(&i) => i,
            None => a.used,
        };
        let slot = self.slot_or_make(index);
        let mut generation = (slot.generation.load(Ordering::Relaxed) + 1) & GEN_MASK;
        if generation == 0 {
            generation = 1;
        }
        let handle =
            Handle { kind: self.kind, device: self.device, init: self.init, generation, index }.raw();
        // `make` may panic: nothing is committed before it returns.
        let entry = Arc::new(Entry { handle, generation, value: make(handle) });
        slot.generation.store(generation, Ordering::Relaxed);
        slot.value.store(Some(entry));
        if a.free.last() == Some(&index) {
            a.free.pop();
        } else {
            a.used += 1;
        }
        a.live += 1;
        Ok(handle)
    }

    /// Stores `value`; returns its handle.
    ///
    /// # Errors
    ///
    /// [`Full::Capacity`] when the table is full.
    pub fn insert(&self, value: T) -> Result<u64, Full> {
        self.insert_with(|_| value)
    }

    /// The live object `raw` names, or `None` when `raw` is not a live handle of this table
    /// (another kind, device or aclInit, destroyed, or garbage). Lock-free.
    pub fn get(&self, raw: u64) -> Option<Arc<Entry<T>>> {
        let h = Handle::decode(raw, self.kind)?;
        if h.device != self.device || h.init != self.init {
            return None;
        }
        let entry = self.slot(h.index)?.value.load_full()?;
        (entry.generation == h.generation).then_some(entry)
    }

    /// The live object `raw` names, held for one call without a reference count (cheaper
    /// than [`Self::get`]: no update of the object's shared count); `None` as for
    /// [`Self::get`]. Lock-free.
    pub fn get_ref(&self, raw: u64) -> Option<Ref<T>> {
        let h = Handle::decode(raw, self.kind)?;
        if h.device != self.device || h.init != self.init {
            return None;
        }
        let guard = self.slot(h.index)?.value.load();
        guard.as_ref().is_some_and(|e| e.generation == h.generation).then_some(Ref(guard))
    }

    /// Runs `f` on the object `raw` names, if it is live, without taking a reference to it: the
    /// slot is read through an arc-swap guard, which keeps the object alive for the call and
    /// costs no reference-count update (cheaper than [`Self::get`] when the caller needs only
    /// part of the object).
    pub fn with<R>(&self, raw: u64, f: impl FnOnce(&T) -> R) -> Option<R> {
        let h = Handle::decode(raw, self.kind)?;
        if h.device != self.device || h.init != self.init {
            return None;
        }
        let guard = self.slot(h.index)?.value.load();
        let entry = guard.as_ref()?;
        (entry.generation == h.generation).then(|| f(&entry.value))
    }

    /// Removes the object `raw` names and returns it; `None` when `raw` is not live.
    pub fn remove(&self, raw: u64) -> Option<Arc<Entry<T>>> {
        self.remove_if(raw, |_| Ok::<(), ()>(())).ok().flatten()
    }

    /// Removes the object `raw` names if `keep_going` accepts it (checked under the table's
    /// lock, so no other remove of it can interleave). `Ok(None)` when `raw` is not live;
    /// `Err(e)` when `keep_going` refused it (nothing changes).
    ///
    /// # Errors
    ///
    /// What `keep_going` returns.
    pub fn remove_if<E>(
        &self,
        raw: u64,
        keep_going: impl FnOnce(&T) -> Result<(), E>,
    ) -> Result<Option<Arc<Entry<T>>>, E> {
        let mut a = self.lock();
        let Some(entry) = self.get(raw) else { return Ok(None) };
        keep_going(&entry.value)?;
        let Some(slot) = self.slot(entry.handle as u32 & INDEX_MASK) else { return Ok(None) };
        note_removal();
        slot.value.store(None);
        a.free.push(entry.handle as u32 & INDEX_MASK);
        a.live -= 1;
        Ok(Some(entry))
    }

    /// Every live object, in slot order (a snapshot: objects made or removed meanwhile may or
    /// may not be in it).
    pub fn live(&self) -> Vec<Arc<Entry<T>>> {
        let used = self.lock().used;
        (0..used).filter_map(|i| self.slot(i)?.value.load_full()).collect()
    }

    /// Removes every object and returns them (teardown).
    pub fn drain(&self) -> Vec<Arc<Entry<T>>> {
        let mut a = self.lock();
        let mut out = Vec::new();
        note_removal();
        for i in 0..a.used {
            if let Some(e) = self.slot(i).and_then(|s| s.value.swap(None)) {
                a.free.push(i);
                out.push(e);
            }
        }
        a.live = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_never_look_like_pointers_or_null() {
        let h = Handle { kind: Kind::Event, device: 7, init: 3, generation: 0xfffff, index: 0xabcde };
        let raw = h.raw();
        assert_eq!(Handle::decode(raw, Kind::Event), Some(h));
        assert_eq!(Handle::decode(raw, Kind::Stream), None, "a handle of another kind is refused");
        assert_ne!(raw, 0);
        assert!(raw >= 1 << 63, "top nibble set: not a canonical user-space address");
        assert_eq!(Handle::decode(0, Kind::Event), None);
        assert_eq!(Handle::decode(0x7fff_dead_beef, Kind::Event), None);
        assert_eq!(Handle::device_of(raw, Kind::Event), Some(7));
    }

    #[test]
    fn a_destroyed_handle_stays_dead_after_its_slot_is_reused() {
        let t = HandleTable::new(Kind::Stream, 1, 9, 4);
        let a = t.insert("a").unwrap();
        assert_eq!(**t.get(a).unwrap(), "a");
        assert_eq!(t.remove(a).map(|e| e.value), Some("a"));
        assert!(t.get(a).is_none());
        assert!(t.remove(a).is_none(), "a second destroy finds nothing");
        let b = t.insert("b").unwrap();
        assert_eq!(
            Handle::decode(a, Kind::Stream).unwrap().index,
            Handle::decode(b, Kind::Stream).unwrap().index
        );
        assert_ne!(a, b);
        assert!(t.get(a).is_none(), "the old handle does not reach the new object");
        assert_eq!(**t.get(b).unwrap(), "b");
        assert_eq!(t.get(b).unwrap().handle(), b);
    }

    #[test]
    fn other_devices_and_other_inits_are_refused() {
        let t0 = HandleTable::new(Kind::Pool, 0, 1, 8);
        let t1 = HandleTable::<u32>::new(Kind::Pool, 1, 1, 8);
        let later = HandleTable::new(Kind::Pool, 0, 2, 8);
        let h = t0.insert(5u32).unwrap();
        assert!(t1.get(h).is_none());
        assert!(later.get(h).is_none());
        let h2 = later.insert(6u32).unwrap();
        assert_ne!(h, h2, "a new aclInit makes different handles for the same slot");
    }

    #[test]
    fn capacity_is_enforced_and_freed_slots_come_back() {
        let t = HandleTable::new(Kind::Event, 0, 0, 130);
        let hs: Vec<u64> = (0..130).map(|i| t.insert(i).unwrap()).collect();
        assert_eq!(t.insert(999), Err(Full::Capacity(130)));
        assert_eq!(t.len(), 130);
        assert!(t.remove(hs[77]).is_some());
        let again = t.insert(1000).unwrap();
        assert_eq!(**t.get(again).unwrap(), 1000);
        assert_eq!(t.live().len(), 130);
        assert_eq!(t.drain().len(), 130);
        assert!(t.is_empty());
        assert!(hs.iter().all(|&h| t.get(h).is_none()));
    }

    #[test]
    fn a_refused_remove_changes_nothing_and_a_panicking_make_commits_nothing() {
        let t = HandleTable::new(Kind::Context, 0, 0, 2);
        let h = t.insert(1).unwrap();
        assert_eq!(t.remove_if(h, |_| Err("busy")).unwrap_err(), "busy");
        assert!(t.get(h).is_some());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            t.insert_with(|_| -> i32 { panic!("boom") })
        }));
        assert!(r.is_err());
        assert_eq!(t.len(), 1);
        let h2 = t.insert(2).unwrap();
        assert_eq!(**t.get(h2).unwrap(), 2);
    }

    #[test]
    fn the_generation_skips_zero_when_it_wraps() {
        let t = HandleTable::new(Kind::Other, 0, 0, 1);
        let first = t.insert(()).unwrap();
        t.slot(0).unwrap().generation.store(GEN_MASK, Ordering::Relaxed);
        t.remove(first);
        let h = t.insert(()).unwrap();
        assert_eq!(Handle::decode(h, Kind::Other).unwrap().generation, 1);
    }

    /// Many threads create, look up and destroy at once: every lookup of a live handle finds
    /// its own object, and no destroyed handle is ever found again.
    #[test]
    fn concurrent_create_lookup_destroy_stress() {
        let t = Arc::new(HandleTable::new(Kind::Stream, 2, 5, 256));
        let threads: Vec<_> = (0..4u64)
            .map(|who| {
                let t = Arc::clone(&t);
                std::thread::spawn(move || {
                    let mut dead = Vec::new();
                    for round in 0..2000u64 {
                        let tag = who << 32 | round;
                        let h = t.insert(tag).unwrap();
                        assert_eq!(**t.get(h).unwrap(), tag);
                        for &d in dead.iter().rev().take(8) {
                            assert!(t.get(d).is_none());
                        }
                        assert_eq!(t.remove(h).map(|e| e.value), Some(tag));
                        dead.push(h);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert!(t.is_empty());
    }
}
