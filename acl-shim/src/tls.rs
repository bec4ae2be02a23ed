//! The calling thread's runtime state, in one thread-local ([`Local`]): its current device, its
//! last live-and-writable memory range, its submit cache and its hazard slot for the runtime.
//!
//! One thread-local, not one per part, because this library is a `cdylib`: every access to a
//! thread-local goes through `__tls_get_addr`, and a submission reads all three parts. The
//! thread-local has no destructor (the submit cache is in a `ManuallyDrop`), so it stays
//! readable for the whole life of the thread, from another thread-local's destructor or a
//! `pthread` key destructor too; the stream references the cache holds are released at the
//! thread's exit by a second, zero-sized thread-local ([`Release`]) that a thread arms the
//! first time it caches a stream, and that only a cache miss touches.
//!
//! Layer: below [`crate::runtime`] (which reads and sets the current device through
//! [`current`] and [`set_current`]), above [`crate::state`] (the cache holds its stream
//! objects). Safe Rust; no lock: everything here belongs to the calling thread.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::state::stream::StreamObj;

/// The calling thread's runtime state.
#[derive(Debug)]
pub(crate) struct Local {
    /// The current device, tagged with the runtime generation it was set in.
    current: Cell<Option<(u64, u32)>>,
    /// The last range this thread found live and writable (see [`LiveRange`]).
    pub(crate) live: Cell<LiveRange>,
    /// The last few stream resolutions for submission. Never dropped with the thread-local
    /// (see the module docs): [`Release`] empties it when the thread exits.
    pub(crate) submit: ManuallyDrop<RefCell<SubmitCache>>,
    /// The thread's hazard slot for pinning the runtime (`crate::runtime`'s fast lookup),
    /// given back by [`Release`] when the thread exits.
    pub(crate) pin: hazard::Local,
}

impl Local {
    /// The current device, tagged with the runtime generation it was set in.
    #[inline]
    pub(crate) fn current(&self) -> Option<(u64, u32)> {
        self.current.get()
    }
}

thread_local! {
    /// The calling thread's [`Local`]. No destructor: readable until the thread is gone.
    static LOCAL: Local = const {
        Local {
            current: Cell::new(None),
            live: Cell::new(LiveRange { version: 0, start: 0, end: 0 }),
            submit: ManuallyDrop::new(RefCell::new(SubmitCache::new())),
            pin: hazard::Local::new(),
        }
    };
    /// Empties [`LOCAL`]'s submit cache when the thread exits ([`arm_release`]).
    static RELEASE: Release = const { Release };
}

/// Runs `f` on the calling thread's state (one thread-local access).
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&Local) -> R) -> R {
    LOCAL.with(f)
}

/// The calling thread's current device, tagged with the runtime generation it was set in.
#[inline]
pub(crate) fn current() -> Option<(u64, u32)> {
    with(Local::current)
}

/// Sets (or clears) the calling thread's current device.
pub(crate) fn set_current(current: Option<(u64, u32)>) {
    with(|l| l.current.set(current));
}

/// Empties the submit cache of the thread and gives back its hazard slot when it exits: the
/// destructor of [`RELEASE`].
#[derive(Debug)]
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        // `LOCAL` has no destructor, so it is still there. At the thread's exit no call of this
        // thread is in progress, so the cache is not borrowed.
        LOCAL.with(|l| {
            if let Ok(mut c) = l.submit.try_borrow_mut() {
                *c = SubmitCache::new();
            }
            // No call of this thread is in progress at its exit, so no pin holds the slot.
            let _ = l.pin.release();
        });
    }
}

/// Makes sure the thread's exit empties its submit cache and gives back its hazard slot
/// ([`Release`]); `false` when the thread is already exiting (its thread-locals' destructors
/// have run), so that nothing may be cached or claimed any more.
pub(crate) fn arm_release() -> bool {
    RELEASE.try_with(|_| ()).is_ok()
}

/// A range `[start, end)` this thread found live and writable in the memory state `version` of
/// its device (`version` 0: nothing remembered). A stream of async memsets or copies into one
/// buffer is checked against it with no lock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveRange {
    /// The device's memory state the range was found in.
    pub(crate) version: u64,
    /// The first byte.
    pub(crate) start: u64,
    /// One past the last byte.
    pub(crate) end: u64,
}

/// How a submission named its stream, and the state its resolution held under: an entry of
/// [`SubmitCache`] answers only the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    /// The handle as the caller passed it (0: the current device's default stream).
    pub(crate) handle: u64,
    /// [`crate::handles::removal_epoch`] before the resolution: any destroy, reset or
    /// finalize since moves it.
    pub(crate) epoch: u64,
    /// The thread's current device ([`current`]), tagged with its runtime.
    pub(crate) current: Option<(u64, u32)>,
    /// The runtime's generation (a re-initialised runtime resolves afresh).
    pub(crate) runtime: u64,
}

/// Entries of [`SubmitCache`]: enough for a thread that feeds a few streams in turn.
const CACHED: usize = 4;

/// The calling thread's last few stream resolutions for submission
/// (`Runtime::with_submit_target`, in `crate::api::stream`). Exact, not a hint: an entry counts
/// only while its whole [`Key`] holds, and a key with the same epoch means no handle died since
/// the entry was made, so the stream it names is the one a fresh lookup finds. It holds a
/// reference to each stream object (released on the thread's next miss that replaces it, or at
/// the thread's exit), and through the stream's port, on the software NPU, to its lane and its
/// device's scheduler state (memory only: no thread, no window); a stale entry is never used.
#[derive(Debug)]
pub(crate) struct SubmitCache {
    entries: [Option<(Key, u64, Arc<StreamObj>)>; CACHED],
    /// The entry the next miss replaces.
    next: usize,
}

impl SubmitCache {
    const fn new() -> Self {
        Self { entries: [const { None }; CACHED], next: 0 }
    }

    /// The resolved handle and stream of `key`, if an entry has exactly that key.
    #[inline]
    pub(crate) fn find(&self, key: &Key) -> Option<(u64, &Arc<StreamObj>)> {
        // A plain loop, the handle first: it tells the entries apart.
        for (k, h, s) in self.entries.iter().flatten() {
            if k.handle == key.handle && k == key {
                return Some((*h, s));
            }
        }
        None
    }

    /// Remembers `key`'s resolution, dropping every entry of an older epoch or runtime (their
    /// streams may be gone) and then the oldest one. Remembers nothing on a thread that is
    /// exiting (nothing would release the reference).
    pub(crate) fn insert(&mut self, key: Key, handle: u64, s: Arc<StreamObj>) {
        if !arm_release() {
            return;
        }
        for e in &mut self.entries {
            if e.as_ref().is_some_and(|(k, _, _)| {
                k.epoch != key.epoch || k.runtime != key.runtime || k.handle == key.handle
            }) {
                *e = None;
            }
        }
        let slot = self.entries.iter().position(Option::is_none).unwrap_or(self.next);
        self.entries[slot] = Some((key, handle, s));
        self.next = (slot + 1) % CACHED;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_device_is_per_thread() {
        set_current(Some((3, 1)));
        assert_eq!(current(), Some((3, 1)));
        std::thread::spawn(|| assert_eq!(current(), None)).join().unwrap();
        set_current(None);
        assert_eq!(current(), None);
    }

    fn key(handle: u64) -> Key {
        Key { handle, epoch: 0, current: Some((1, 0)), runtime: 1 }
    }

    #[test]
    fn the_cache_answers_only_its_exact_key_and_a_new_epoch_drops_old_entries() {
        let s = Arc::new(StreamObj::detached_for_test(0));
        let mut c = SubmitCache::new();
        c.insert(key(5), 5, Arc::clone(&s));
        assert_eq!(c.find(&key(5)).map(|(h, _)| h), Some(5));
        assert!(c.find(&key(6)).is_none());
        assert!(c.find(&Key { current: Some((1, 1)), ..key(5) }).is_none(), "another current device");
        assert!(c.find(&Key { runtime: 2, ..key(5) }).is_none(), "another runtime");
        c.insert(Key { epoch: 1, ..key(6) }, 6, Arc::clone(&s));
        assert!(c.find(&key(5)).is_none(), "an entry of an older epoch is gone");
        assert_eq!(Arc::strong_count(&s), 2, "the old entry's reference went with it");
    }

    #[test]
    fn a_thread_releases_its_cached_streams_when_it_exits_and_an_exiting_one_caches_nothing() {
        struct AtExit(Arc<StreamObj>);
        impl Drop for AtExit {
            fn drop(&mut self) {
                // Among the thread-local destructors: `LOCAL` is readable, and what is cached
                // now is either released by `RELEASE` (still to run) or refused.
                assert_eq!(current(), Some((1, 0)));
                with(|l| l.submit.borrow_mut().insert(key(2), 2, Arc::clone(&self.0)));
            }
        }
        thread_local! { static AT_EXIT: std::cell::RefCell<Option<AtExit>> = const { std::cell::RefCell::new(None) }; }
        let s = Arc::new(StreamObj::detached_for_test(0));
        let mine = Arc::clone(&s);
        std::thread::spawn(move || {
            set_current(Some((1, 0)));
            AT_EXIT.with(|a| *a.borrow_mut() = Some(AtExit(Arc::clone(&mine))));
            with(|l| l.submit.borrow_mut().insert(key(1), 1, mine));
            assert!(with(|l| l.submit.borrow().find(&key(1)).is_some()));
        })
        .join()
        .unwrap();
        assert_eq!(Arc::strong_count(&s), 1, "the exited thread holds no reference");
    }
}
