//! A value published by one writer at a time and read by many threads on every call, with no
//! read-modify-write and no fence instruction on the read path: hazard pointers with an
//! asymmetric fence.
//!
//! [`Published`] holds at most one `Arc<T>`. A reader pins it ([`Published::pin`]) by writing
//! the value's address into a hazard slot of its own (a slot claimed once per thread), then
//! reading the published address again: equal, the pin holds and the value stays alive until
//! the [`Pin`] drops; changed, it tries again. Between the two, the reader has only a compiler
//! fence ([`barrier::light`]); the writer that takes the value out ([`Published::retract`]) pays
//! for both sides with a process-wide barrier ([`barrier::heavy`]: `membarrier` on Linux), after
//! which every pin that succeeded shows in its slot. The value's publication reference is
//! dropped only once no slot holds its address: at once, or by the last pin of it to go
//! (a `pending` flag read on every unpin says when to look).
//!
//! Why: a reader that takes a reference count, or an `arc-swap` guard, executes two locked
//! read-modify-write instructions per call; each waits for the stores before it to reach
//! memory, which on a submission path means waiting for the cache lines of the descriptor just
//! written to come back from the core that reads them.
//!
//! What this crate does not do: it keeps no more than one value, it does not wait for readers
//! (a retraction never blocks), and a thread that finds every slot taken gets no pin (the
//! caller then takes a path of its own, such as an `arc-swap` guard).
//!
//! Under `cfg(loom)` (`cargo xtask loom`) the atomics are loom's and both fences are loom's
//! sequentially consistent fence: the model checks the protocol given what `membarrier`
//! guarantees (the pair acts as a pair of full fences).
#![deny(unsafe_op_in_unsafe_fn)]

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;
use std::sync::{Arc, PoisonError};

pub mod barrier;
mod sync;

use sync::{AtomicBool, AtomicPtr, AtomicU32, Mutex, MutexGuard, Ordering};

/// Hazard slots: the most threads that hold a pin slot at once. A thread past them gets no pin.
#[cfg(not(loom))]
pub const SLOTS: usize = 128;
/// Hazard slots (two in the loom models, whose threads are few).
#[cfg(loom)]
pub const SLOTS: usize = 2;

/// No slot claimed (a [`Local`]'s index).
const NONE: u32 = u32::MAX;

/// One thread's hazard slot, on a cache line of its own (its owner writes it on every pin).
#[derive(Debug)]
#[repr(align(64))]
struct Slot<T> {
    /// The address the owner has pinned (null: none).
    ptr: AtomicPtr<T>,
    /// Pins the owner holds now (written by the owner alone: a load and a store).
    depth: AtomicU32,
    /// Whether a thread owns the slot.
    claimed: AtomicBool,
}

impl<T> Slot<T> {
    #[cfg(not(loom))]
    const fn empty() -> Self {
        Self {
            ptr: AtomicPtr::new(ptr::null_mut()),
            depth: AtomicU32::new(0),
            claimed: AtomicBool::new(false),
        }
    }

    #[cfg(loom)]
    fn empty() -> Self {
        Self {
            ptr: AtomicPtr::new(ptr::null_mut()),
            depth: AtomicU32::new(0),
            claimed: AtomicBool::new(false),
        }
    }
}

/// A thread's claim on a hazard slot of one [`Published`]: keep one per thread (in a
/// thread-local) and pass it to every [`Published::pin`]; give it back with [`Local::release`]
/// when the thread exits. It stays on its thread (not `Send`): the slot's pin count is the
/// thread's alone to change.
pub struct Local {
    index: Cell<u32>,
    /// The cell the slot was claimed in.
    owner: Cell<Option<&'static dyn Owner>>,
    not_send: PhantomData<*const ()>,
}

impl Local {
    /// No slot claimed yet.
    pub const fn new() -> Self {
        Self { index: Cell::new(NONE), owner: Cell::new(None), not_send: PhantomData }
    }

    /// Gives back the slot this thread claimed, if any (when the thread exits). Refused
    /// (`false`, the claim kept) while a pin taken through it lives.
    #[must_use]
    pub fn release(&self) -> bool {
        let Some(owner) = self.owner.get() else { return true };
        if !owner.give_back(self.index.get()) {
            return false;
        }
        self.index.set(NONE);
        self.owner.set(None);
        true
    }

    /// Whether this claim was made in `p`.
    fn claimed_in<T: Send + Sync + 'static>(&self, p: &'static Published<T>) -> bool {
        self.owner.get().is_some_and(|o| ptr::addr_eq(o as *const dyn Owner, p as *const Published<T>))
    }
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").field("index", &self.index.get()).finish_non_exhaustive()
    }
}

/// What a [`Local`] needs of the cell it claimed a slot in: a way to give the slot back.
trait Owner: Sync {
    /// Gives slot `index` back unless a pin holds it (then `false`).
    fn give_back(&self, index: u32) -> bool;
}

impl<T: Send + Sync> Owner for Published<T> {
    fn give_back(&self, index: u32) -> bool {
        let Some(slot) = self.slots.get(index as usize) else { return true };
        if slot.depth.load(Ordering::Relaxed) > 0 {
            return false;
        }
        slot.ptr.store(ptr::null_mut(), Ordering::Release);
        slot.claimed.store(false, Ordering::Release);
        true
    }
}

impl Default for Local {
    fn default() -> Self {
        Self::new()
    }
}

/// At most one `Arc<T>`, read through per-thread hazard slots (see the crate docs).
pub struct Published<T> {
    /// The published value (`Arc::into_raw`; null: none). The publication reference it stands
    /// for is owned here, then by `retired`.
    current: AtomicPtr<T>,
    slots: [Slot<T>; SLOTS],
    /// Retracted values some slot may still hold; dropped once none does.
    retired: Mutex<Vec<Arc<T>>>,
    /// Whether `retired` holds anything (read on every unpin).
    pending: AtomicBool,
}

impl<T> std::fmt::Debug for Published<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Published")
            .field("current", &self.current.load(Ordering::Relaxed))
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

// SAFETY: a `Published<T>` hands out `&T` to other threads and drops `Arc<T>`s on any thread,
// which is what `Arc<T>` itself needs `T: Send + Sync` for.
unsafe impl<T: Send + Sync> Send for Published<T> {}
// SAFETY: as for `Send`; all shared state is atomics and a mutex.
unsafe impl<T: Send + Sync> Sync for Published<T> {}

impl<T: Send + Sync + 'static> Default for Published<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + Sync + 'static> Published<T> {
    /// Nothing published.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            current: AtomicPtr::new(ptr::null_mut()),
            slots: [const { Slot::empty() }; SLOTS],
            retired: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
        }
    }

    /// Nothing published.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            current: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot::empty()),
            retired: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
        }
    }

    /// Publishes `v`; refused (`v` back) while another value is published. The caller
    /// serialises publishing and retracting.
    pub fn publish(&self, v: Arc<T>) -> Result<(), Arc<T>> {
        if !self.current.load(Ordering::Acquire).is_null() {
            return Err(v);
        }
        // The publication reference, owned by `current` from here on.
        self.current.store(Arc::into_raw(v).cast_mut(), Ordering::Release);
        Ok(())
    }

    /// Takes the published value out and answers a reference to it (`None` when nothing was
    /// published). Pins taken before keep it alive until they drop; no pin taken after finds
    /// it. Never waits for readers: the publication reference is dropped here when no slot
    /// holds the value, else by the last of its pins to go.
    pub fn retract(&self) -> Option<Arc<T>> {
        let p = self.current.swap(ptr::null_mut(), Ordering::AcqRel);
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` came from `Arc::into_raw` in `publish`, and the reference it stands for
        // was owned by `current`, which no longer names it: it is ours now, once.
        let publication = unsafe { Arc::from_raw(p.cast_const()) };
        let out = Arc::clone(&publication);
        {
            let mut list = self.lock_retired();
            list.push(publication);
            self.pending.store(true, Ordering::Relaxed);
        }
        // After this barrier every pin that saw `p` shows in its slot (a pin whose second look
        // comes after it sees the swap and lets go), and every unpin after it sees `pending`
        // (an unpin before it cleared its slot first): slots scanned now tell the truth, and
        // the last pin of `p` to go finds it retired.
        if !barrier::heavy() {
            // Without the barrier no scan can be trusted: the value is never dropped (a leak of
            // one value, not a use after free).
            let mut list = self.lock_retired();
            if let Some(i) = list.iter().position(|a| Arc::ptr_eq(a, &out)) {
                std::mem::forget(list.swap_remove(i));
            }
            return Some(out);
        }
        self.reclaim();
        Some(out)
    }

    /// Whether a value is published now.
    pub fn is_published(&self) -> bool {
        !self.current.load(Ordering::Acquire).is_null()
    }

    /// Pins the published value for the calling thread, which owns `local` (its claim on a
    /// slot, made here the first time when `may_claim` allows: a thread that cannot give its
    /// slot back at exit should not claim one). `None` when nothing is published, when no slot
    /// is free, when `local` holds a claim in another cell, or when the thread already pins a value that is no longer the published one
    /// (a pin inside a pin of a retracted value): the caller then takes another path.
    #[inline(always)]
    pub fn pin(&'static self, local: &Local, may_claim: impl FnOnce() -> bool) -> Option<Pin<'static, T>> {
        // The common case inline (a thread's first pin of a value that stays published), so
        // that the pin comes back in registers; everything else out of line.
        let i = local.index.get();
        if i != NONE && local.claimed_in(self) {
            if let Some(slot) = self.slots.get(i as usize) {
                if slot.depth.load(Ordering::Relaxed) == 0 {
                    let p = self.current.load(Ordering::Acquire);
                    if !p.is_null() {
                        return match self.try_pin(slot, p) {
                            Ok(pin) => Some(pin),
                            Err(q) => self.pin_again(slot, q),
                        };
                    }
                }
            }
        }
        self.pin_slow(local, may_claim)
    }

    /// [`pin`](Self::pin) out of line: the claim, a pin inside a pin, nothing published.
    #[inline(never)]
    fn pin_slow(&'static self, local: &Local, may_claim: impl FnOnce() -> bool) -> Option<Pin<'static, T>> {
        let i = match local.index.get() {
            NONE => self.claim(local, may_claim)?,
            // A claim made in another cell names none of this one's slots.
            _ if !local.claimed_in(self) => return None,
            i => i,
        };
        let slot = self.slots.get(i as usize)?;
        let depth = slot.depth.load(Ordering::Relaxed);
        if depth > 0 {
            // A pin inside a pin: the slot holds the outer one's value, which stays pinned
            // while this pin lives (the slot is cleared only when its last pin goes).
            let held = slot.ptr.load(Ordering::Relaxed);
            if held != self.current.load(Ordering::Acquire) {
                return None;
            }
            slot.depth.store(depth + 1, Ordering::Relaxed);
            return Some(Pin { owner: self, slot, ptr: held, not_send: PhantomData });
        }
        self.pin_from(slot, self.current.load(Ordering::Acquire), false)
    }

    /// [`pin`](Self::pin) after its slot named a value that was retracted meanwhile (now `p`).
    #[cold]
    #[inline(never)]
    fn pin_again(&'static self, slot: &'static Slot<T>, p: *mut T) -> Option<Pin<'static, T>> {
        self.pin_from(slot, p, true)
    }

    /// One try at pinning `p` (not null), the published value as last read, in `slot` (of a
    /// thread that pins nothing yet): names it in the slot and reads the published value again;
    /// the pin when it is still `p`, else the value read (the slot still names `p`).
    #[inline(always)]
    fn try_pin(&'static self, slot: &'static Slot<T>, p: *mut T) -> Result<Pin<'static, T>, *mut T> {
        slot.ptr.store(p, Ordering::Relaxed);
        // With `retract`'s heavy barrier: the store above, then the load below.
        barrier::light();
        let q = self.current.load(Ordering::Acquire);
        if q != p {
            return Err(q);
        }
        slot.depth.store(1, Ordering::Relaxed);
        Ok(Pin { owner: self, slot, ptr: p, not_send: PhantomData })
    }

    /// Pins `p`, the published value as last read, in `slot` (of a thread that pins nothing
    /// yet), reading it again until it holds still; `stale` when the slot already named a
    /// value being retracted.
    fn pin_from(
        &'static self,
        slot: &'static Slot<T>,
        mut p: *mut T,
        mut stale: bool,
    ) -> Option<Pin<'static, T>> {
        let pinned = loop {
            if p.is_null() {
                if stale {
                    slot.ptr.store(ptr::null_mut(), Ordering::Release);
                }
                break None;
            }
            match self.try_pin(slot, p) {
                Ok(pin) => break Some(pin),
                // The slot named a value being retracted, which a retraction's scan may have
                // seen: look at `pending` once the slot has moved on, as an unpin does.
                Err(q) => {
                    stale = true;
                    p = q;
                }
            }
        };
        if stale {
            self.after_unpin();
        }
        pinned
    }

    /// Claims a free slot for `local` (cold: once per thread).
    #[cold]
    #[inline(never)]
    fn claim(&'static self, local: &Local, may_claim: impl FnOnce() -> bool) -> Option<u32> {
        if !may_claim() {
            return None;
        }
        let i = self.slots.iter().position(|s| {
            !s.claimed.load(Ordering::Relaxed)
                && s.claimed.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })?;
        // CAST: below SLOTS.
        let i = i as u32;
        local.index.set(i);
        local.owner.set(Some(self));
        Some(i)
    }
}

impl<T> Published<T> {
    /// After a slot let a value go: reclaims when something is retired. With `retract`'s
    /// heavy barrier (the slot's store before, the load of `pending` after): the last slot of
    /// a retracted value to let it go sees that it was retracted.
    #[inline]
    fn after_unpin(&self) {
        barrier::light();
        if self.pending.load(Ordering::Relaxed) {
            self.reclaim();
        }
    }

    fn lock_retired(&self) -> MutexGuard<'_, Vec<Arc<T>>> {
        // A panic under the lock left at worst a value not yet dropped: the list is intact.
        self.retired.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops the retracted values no slot holds (outside the lock: a value's drop may be long).
    fn reclaim(&self) {
        let free: Vec<Arc<T>> = {
            let mut list = self.lock_retired();
            let (held, free): (Vec<_>, Vec<_>) = list.drain(..).partition(|a| {
                let p = Arc::as_ptr(a).cast_mut();
                self.slots.iter().any(|s| s.ptr.load(Ordering::Acquire) == p)
            });
            *list = held;
            if list.is_empty() {
                self.pending.store(false, Ordering::Relaxed);
            }
            free
        };
        drop(free);
    }
}

/// A pinned value: alive until this drops (on the thread that pinned it).
pub struct Pin<'a, T> {
    owner: &'a Published<T>,
    slot: &'a Slot<T>,
    ptr: *mut T,
    /// The slot's depth is the pinning thread's to change: a pin stays on that thread.
    not_send: PhantomData<*const ()>,
}

impl<T> Pin<'_, T> {
    /// A counted reference to the pinned value, for what outlives the pin.
    pub fn to_arc(&self) -> Arc<T> {
        // SAFETY: `ptr` came from `Arc::into_raw` and its publication reference is alive while
        // this pin's slot names it (it is dropped only once no slot does), so the count is at
        // least one; the increment is the reference `from_raw` takes over.
        unsafe {
            Arc::increment_strong_count(self.ptr.cast_const());
            Arc::from_raw(self.ptr.cast_const())
        }
    }
}

impl<T> std::ops::Deref for Pin<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the value is alive while this pin's slot names it (see `to_arc`), and the
        // borrow does not outlive the pin.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for Pin<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let depth = self.slot.depth.load(Ordering::Relaxed) - 1;
        self.slot.depth.store(depth, Ordering::Relaxed);
        if depth == 0 {
            // Release: this thread's reads of the value happen before a reclaimer sees the
            // slot empty.
            self.slot.ptr.store(ptr::null_mut(), Ordering::Release);
            self.owner.after_unpin();
        }
    }
}

impl<T> std::fmt::Debug for Pin<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pin").field(&self.ptr).finish()
    }
}

impl<T> Drop for Published<T> {
    fn drop(&mut self) {
        // Relaxed: `&mut self` orders everything before (`get_mut` is not in loom).
        let p = self.current.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: the publication reference `current` owned; nobody can pin any more
            // (`&mut self`).
            drop(unsafe { Arc::from_raw(p.cast_const()) });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
