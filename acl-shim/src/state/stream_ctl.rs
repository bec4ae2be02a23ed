//! Stream control state (fact sheet §8, §9): what a stream carries beyond its queue — its
//! priority and attributes, whether an abort is in progress, and its host-function thread —
//! plus the process-wide stream-state callbacks (`aclrtRegStreamStateCallback`).
//!
//! Safe Rust apart from calling the C callbacks. This module owns `StreamExt` (one per
//! stream, embedded in the stream object: reading it is an atomic load, no lock) and the
//! callback registry. It sits below `crate::api::stream_ctl`, which checks arguments and talks
//! to the backend.
//!
//! # Locking
//!
//! `CALLBACKS` is a leaf, process-wide but never taken on a hot path (only when a stream is
//! created or destroyed, and copied before the callbacks run, so a callback may register or
//! unregister others). `StreamExt` takes no lock.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// `ACL_ERROR_RT_STREAM_ABORT`: the stream is being aborted.
pub const ACL_ERROR_RT_STREAM_ABORT: i32 = 107_023;
/// `ACL_ERROR_RT_STREAM_SUBSCRIBE`: the stream's host-function slot is held by another thread
/// (or not by this one).
pub const ACL_ERROR_RT_STREAM_SUBSCRIBE: i32 = 107_011;
/// `ACL_ERROR_RT_STREAM_NOT_CAPTURED`: the stream is not capturing (aclrs captures nothing).
pub const ACL_ERROR_RT_STREAM_NOT_CAPTURED: i32 = 107_029;

/// The lowest stream priority (`aclrtDeviceGetStreamPriorityRange`'s least); 0 is the highest.
pub const LEAST_PRIORITY: u32 = 7;

/// `aclrtStreamState`: `ACL_RT_STREAM_STATE_CREATE_POST`.
pub const STATE_CREATE_POST: i32 = 1;
/// `aclrtStreamState`: `ACL_RT_STREAM_STATE_DESTROY_PRE`.
pub const STATE_DESTROY_PRE: i32 = 2;

/// What a stream carries beyond its queue. All atomics: read and written without a lock.
#[derive(Debug, Default)]
pub(crate) struct StreamExt {
    /// `ACL_STREAM_ATTR_PRIORITY` / the creation priority, clamped to [0, 7].
    priority: AtomicU32,
    /// `ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK`.
    overflow: AtomicU32,
    /// `ACL_STREAM_ATTR_USER_CUSTOM_TAG`.
    tag: AtomicU32,
    /// `ACL_STREAM_ATTR_CACHE_OP_INFO`.
    cache_op: AtomicU32,
    /// `ACL_STREAM_ATTR_FAILURE_MODE` (bit 0: stop on failure).
    failure_mode: AtomicU64,
    /// Held by the one `aclrtStreamAbort` running on the stream, from its start.
    claimed: AtomicBool,
    /// Set once the running abort has dropped the stream's queued tasks, until it ends:
    /// submissions and synchronisations fail with 107023. Not before the drop, so that a caller
    /// who sees 107023 knows the tasks queued before the abort will not start.
    aborting: AtomicBool,
    /// How many aborts started on the stream (a synchronisation that saw it move was waiting
    /// while the stream was aborted).
    aborts: AtomicU64,
    /// The `pthread_self` of the thread subscribed with `aclrtSubscribeHostFunc`, 0 for none.
    host_func_thread: AtomicU64,
}

impl StreamExt {
    /// The stream's priority (0 highest .. 7 lowest).
    pub(crate) fn priority(&self) -> u32 {
        self.priority.load(Ordering::Acquire)
    }

    /// Sets the priority, clamped into [0, 7] as CANN does.
    pub(crate) fn set_priority(&self, p: u32) {
        self.priority.store(p.min(LEAST_PRIORITY), Ordering::Release);
    }

    /// The stored value of a 32-bit attribute (2, 3, 4 or 5), `None` for others.
    pub(crate) fn attr_u32(&self, attr: u32) -> Option<u32> {
        let a = match attr {
            2 => &self.overflow,
            3 => &self.tag,
            4 => &self.cache_op,
            5 => &self.priority,
            _ => return None,
        };
        Some(a.load(Ordering::Acquire))
    }

    /// Stores a 32-bit attribute (2, 3 or 4; the priority goes through [`Self::set_priority`]).
    pub(crate) fn set_attr_u32(&self, attr: u32, v: u32) {
        match attr {
            2 => self.overflow.store(v, Ordering::Release),
            3 => self.tag.store(v, Ordering::Release),
            4 => self.cache_op.store(v, Ordering::Release),
            5 => self.set_priority(v),
            _ => {}
        }
    }

    /// The failure mode word.
    pub(crate) fn failure_mode(&self) -> u64 {
        self.failure_mode.load(Ordering::Acquire)
    }

    /// Records the failure mode word.
    pub(crate) fn set_failure_mode(&self, mode: u64) {
        self.failure_mode.store(mode, Ordering::Release);
    }

    /// Whether an abort is in progress.
    pub(crate) fn aborting(&self) -> bool {
        self.aborting.load(Ordering::Acquire)
    }

    /// How many aborts have started.
    pub(crate) fn aborts(&self) -> u64 {
        self.aborts.load(Ordering::Acquire)
    }

    /// Claims the stream for an abort; `false` when one is running already.
    pub(crate) fn begin_abort(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }

    /// Marks the claimed abort visible, once it has dropped the queued tasks: from here until
    /// [`Self::end_abort`] the stream's submissions and synchronisations fail with 107023.
    pub(crate) fn publish_abort(&self) {
        self.aborts.fetch_add(1, Ordering::AcqRel);
        self.aborting.store(true, Ordering::Release);
    }

    /// Marks the abort finished: the stream is usable again.
    pub(crate) fn end_abort(&self) {
        self.aborting.store(false, Ordering::Release);
        self.claimed.store(false, Ordering::Release);
    }

    /// The subscribed host-function thread, 0 for none.
    pub(crate) fn host_func_thread(&self) -> u64 {
        self.host_func_thread.load(Ordering::Acquire)
    }

    /// Claims the host-function slot for `thread`; the holder when it is taken.
    pub(crate) fn claim_host_func(&self, thread: u64) -> Result<(), u64> {
        self.host_func_thread.compare_exchange(0, thread, Ordering::AcqRel, Ordering::Acquire).map(|_| ())
    }

    /// Releases the host-function slot if `thread` holds it.
    pub(crate) fn release_host_func(&self, thread: u64) -> bool {
        self.host_func_thread.compare_exchange(thread, 0, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

/// A registered stream-state callback: the C function and its `args`, as addresses.
#[derive(Clone, Copy, Debug)]
struct Registered {
    func: unsafe extern "C" fn(*mut c_void, i32, *mut c_void),
    args: usize,
}

/// The callbacks of `aclrtRegStreamStateCallback`, by name (fired in ascending name order).
static CALLBACKS: Mutex<BTreeMap<Vec<u8>, Registered>> = Mutex::new(BTreeMap::new());

/// Registers (`Some`) or unregisters (`None`) the callback `name`; `false` when a callback of
/// that name is registered already.
pub(crate) fn register_callback(
    name: &[u8],
    cb: Option<(unsafe extern "C" fn(*mut c_void, i32, *mut c_void), usize)>,
) -> bool {
    // Lock order: CALLBACKS (a leaf). An insert or a removal: all or nothing.
    let mut m = crate::sync::relock(&CALLBACKS);
    match cb {
        None => {
            m.remove(name);
            true
        }
        Some(_) if m.contains_key(name) => false,
        Some((func, args)) => {
            m.insert(name.to_vec(), Registered { func, args });
            true
        }
    }
}

/// Calls every registered callback for stream `handle` entering `state`, on this thread, in
/// ascending name order, from a copy of the registry.
pub(crate) fn fire(handle: u64, state: i32) {
    // Lock order: CALLBACKS (a leaf), released before the calls.
    let list: Vec<Registered> = {
        let m = crate::sync::relock(&CALLBACKS);
        if m.is_empty() {
            return;
        }
        m.values().copied().collect()
    };
    for r in list {
        // CAST: a handle is a number C sees as a pointer, never dereferenced.
        let stm = handle as usize as *mut c_void;
        // SAFETY: the function and its argument were registered by the C caller of
        // aclrtRegStreamStateCallback, whose contract is that the function may be called with
        // them on any thread that creates or destroys a stream until it is unregistered.
        unsafe { (r.func)(stm, state, r.args as *mut c_void) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_is_clamped_and_abort_epochs_move() {
        let x = StreamExt::default();
        x.set_priority(42);
        assert_eq!(x.priority(), LEAST_PRIORITY);
        assert_eq!(x.attr_u32(5), Some(7));
        assert!(x.begin_abort());
        assert!(!x.begin_abort(), "a second abort while one runs");
        assert!(!x.aborting(), "not visible before the queued tasks are dropped");
        assert_eq!(x.aborts(), 0);
        x.publish_abort();
        assert!(x.aborting());
        x.end_abort();
        assert!(!x.aborting());
        assert_eq!(x.aborts(), 1);
        assert!(x.begin_abort(), "a new abort after the first ended");
    }

    #[test]
    fn the_host_function_slot_has_one_holder() {
        let x = StreamExt::default();
        assert_eq!(x.claim_host_func(5), Ok(()));
        assert_eq!(x.claim_host_func(6), Err(5));
        assert!(!x.release_host_func(6));
        assert!(x.release_host_func(5));
        assert_eq!(x.host_func_thread(), 0);
    }

    #[test]
    fn a_name_registers_once_and_unknown_names_unregister() {
        unsafe extern "C" fn cb(_: *mut c_void, _: i32, _: *mut c_void) {}
        assert!(register_callback(b"unit-test-cb", Some((cb, 0))));
        assert!(!register_callback(b"unit-test-cb", Some((cb, 0))));
        assert!(register_callback(b"unit-test-cb", None));
        assert!(register_callback(b"never-registered", None));
    }
}
