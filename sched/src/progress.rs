//! The published progress of one stream: its highest completed sequence, readable without the
//! executor's lock.
//!
//! The executor's owner publishes after it finishes a task (and after the task's effects are
//! written); any thread may read. A reader that sees sequence `s` also sees every effect of the
//! tasks up to `s` (release/acquire), which is what a lock-free "is this stream done?" query
//! needs. This module must not know about tasks.

use crate::sync::{AtomicU64, Ordering};

/// The highest completed sequence of one stream, shared between threads.
///
/// # Invariants
///
/// The value only grows.
#[derive(Debug)]
pub struct Progress {
    completed: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// Progress of a stream that has completed nothing (sequence 0).
    pub fn new() -> Self {
        Self { completed: AtomicU64::new(0) }
    }

    /// Publishes that every task up to `seq` has completed. A smaller `seq` than the current
    /// value changes nothing.
    pub fn publish(&self, seq: u64) {
        // INVARIANT: only ever raised. Release: the tasks' effects happen before the value.
        let mut cur = self.completed.load(Ordering::Relaxed);
        while cur < seq {
            match self.completed.compare_exchange_weak(cur, seq, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }

    /// Publishes `seq` from the one thread that owns the stream's completion (the executor's
    /// owner): a plain release store, no read-modify-write. A smaller `seq` than the current
    /// value is ignored.
    #[inline]
    pub fn advance(&self, seq: u64) {
        // INVARIANT: only ever raised; a single writer, so the load cannot race another store.
        if seq > self.completed.load(Ordering::Relaxed) {
            // Release: the tasks' effects happen before the value.
            self.completed.store(seq, Ordering::Release);
        }
    }

    /// The highest completed sequence published so far.
    #[inline]
    pub fn completed(&self) -> u64 {
        // Acquire: pairs with the release in `publish`.
        self.completed.load(Ordering::Acquire)
    }

    /// Whether every task up to `seq` has completed.
    pub fn is_complete(&self, seq: u64) -> bool {
        self.completed() >= seq
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_grows() {
        let p = Progress::new();
        assert!(p.is_complete(0));
        p.publish(5);
        p.publish(3);
        assert_eq!(p.completed(), 5);
        assert!(p.is_complete(5) && !p.is_complete(6));
        p.advance(4);
        assert_eq!(p.completed(), 5);
        p.advance(7);
        assert_eq!(p.completed(), 7);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    extern crate std;

    use loom::sync::atomic::AtomicU32;
    use loom::sync::Arc;

    use super::*;

    /// A task writes its result, then the scheduler publishes; a reader that sees the
    /// sequence must see the result.
    #[test]
    fn loom_publish_makes_effects_visible() {
        loom::model(|| {
            let progress = Arc::new(Progress::new());
            let data = Arc::new(AtomicU32::new(0));
            let (p2, d2) = (Arc::clone(&progress), Arc::clone(&data));
            let writer = loom::thread::spawn(move || {
                d2.store(42, Ordering::Relaxed);
                p2.publish(1);
            });
            if progress.is_complete(1) {
                assert_eq!(data.load(Ordering::Relaxed), 42);
            }
            writer.join().unwrap();
            assert_eq!(progress.completed(), 1);
        });
    }

    /// The software NPU's wait: spin on the word, then park on a condition variable counted
    /// in `waiters`; the finisher publishes under the lock and notifies only when someone is
    /// parked. The waiter always returns (a missed publish would leave it parked: deadlock).
    #[test]
    fn loom_spin_then_park_wait_sees_the_publish() {
        use loom::sync::{Condvar, Mutex};
        loom::model(|| {
            let shared = Arc::new((Mutex::new(0usize), Condvar::new(), Progress::new()));
            let s2 = Arc::clone(&shared);
            let finisher = loom::thread::spawn(move || {
                let (waiters, done, progress) = &*s2;
                let parked = waiters.lock().unwrap();
                progress.advance(1);
                if *parked > 0 {
                    done.notify_all();
                }
            });
            let (waiters, done, progress) = &*shared;
            // One round of spinning (loom needs it bounded), then park.
            if !progress.is_complete(1) {
                let mut parked = waiters.lock().unwrap();
                while !progress.is_complete(1) {
                    *parked += 1;
                    parked = done.wait(parked).unwrap();
                    *parked -= 1;
                }
            }
            finisher.join().unwrap();
            assert_eq!(progress.completed(), 1);
        });
    }

    /// Two publishers racing never lower the value.
    #[test]
    fn loom_racing_publishers_keep_the_maximum() {
        loom::model(|| {
            let progress = Arc::new(Progress::new());
            let p2 = Arc::clone(&progress);
            let t = loom::thread::spawn(move || p2.publish(2));
            progress.publish(1);
            t.join().unwrap();
            assert_eq!(progress.completed(), 2);
        });
    }
}
