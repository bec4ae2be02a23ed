//! The published progress of one stream: its highest completed sequence, readable without the
//! executor's lock.
//!
//! The executor's owner publishes after it finishes a task (and after the task's effects are
//! written); any thread may read. A reader that sees sequence `s` also sees every effect of the
//! tasks up to `s` (release/acquire), which is what a lock-free "is this stream done?" query
//! needs. This module must not know about tasks.
//!
//! # Watches
//!
//! An owner that runs a stream's tasks in a run ([`Executor::take_run_if`](crate::Executor::take_run_if))
//! publishes each finished task here without the executor's lock, and takes the lock only when
//! someone waits for a point it just reached. A waiter that cannot see its point yet sets a
//! *watch* ([`Progress::watch`], or a word of its own read the same way) and looks at the word
//! again; the owner publishes and then reads the watch ([`Progress::publish_run`]). Each side
//! writes, then a sequentially consistent fence, then reads the other's word, so at least one
//! of them sees the other's write: the owner comes back, or the waiter sees its point.

use crate::sync::{fence, AtomicU64, Ordering};

/// The highest completed sequence of one stream, shared between threads.
///
/// # Invariants
///
/// The value only grows.
#[derive(Debug)]
pub struct Progress {
    completed: AtomicU64,
    /// The lowest point someone parked waits for ([`u64::MAX`]: nobody); see the module
    /// documentation.
    watch: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// Progress of a stream that has completed nothing (sequence 0).
    pub fn new() -> Self {
        Self { completed: AtomicU64::new(0), watch: AtomicU64::new(u64::MAX) }
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

    /// [`advance`](Self::advance) by the owner of a run, which then reads the watch: `true`
    /// when someone waits for a point at or below `seq` (the owner must then tell the
    /// executor, under its lock, that the run got this far).
    #[inline]
    pub fn publish_run(&self, seq: u64) -> bool {
        self.publish_run_with(seq, || ())
    }

    /// [`publish_run`](Self::publish_run) with `also` run between the publication and the
    /// fence: a write of the owner's own that a protocol of its own orders the same way (write,
    /// fence, read the other side's word), so that one fence serves both.
    #[inline]
    pub fn publish_run_with(&self, seq: u64, also: impl FnOnce()) -> bool {
        self.advance(seq);
        also();
        // SeqCst: the writes above, then the read below (see the module documentation).
        fence(Ordering::SeqCst);
        self.watch.load(Ordering::Relaxed) <= seq
    }

    /// Asks the owner of a run to come back once it reaches `seq`, and answers whether `seq`
    /// has completed already (then nobody needs to wait).
    #[inline]
    pub fn watch(&self, seq: u64) -> bool {
        self.watch.fetch_min(seq, Ordering::Relaxed);
        // SeqCst: the write above, then the read below (see the module documentation).
        fence(Ordering::SeqCst);
        self.completed.load(Ordering::Acquire) >= seq
    }

    /// Replaces the watch (by the executor's owner, when the waiters it watched for change;
    /// [`u64::MAX`]: none).
    #[inline]
    pub fn set_watch(&self, seq: u64) {
        self.watch.store(seq, Ordering::Relaxed);
    }

    /// The lowest point someone waits for ([`u64::MAX`]: nobody).
    #[inline]
    pub fn watched(&self) -> u64 {
        self.watch.load(Ordering::Relaxed)
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

    /// A run's owner publishes its tasks without the lock ([`Progress::publish_run`]) and takes
    /// the lock to notify only when the watch asks for it; a waiter sets its watch under the
    /// lock ([`Progress::watch`]) and parks unless it sees its point. The owner publishes 1
    /// and 2; the waiter waits for 1 (whatever the interleaving, it is never left parked) or,
    /// in the second part, for 2 with the owner's second publish the one that must tell.
    #[test]
    fn loom_a_run_owner_tells_a_watching_waiter() {
        use loom::sync::{Condvar, Mutex};
        for target in [1u64, 2] {
            loom::model(move || {
                let shared = Arc::new((Mutex::new(false), Condvar::new(), Progress::new()));
                let s2 = Arc::clone(&shared);
                let owner = loom::thread::spawn(move || {
                    let (parked, done, progress) = &*s2;
                    for seq in 1..=2 {
                        if progress.publish_run(seq) {
                            // Lock order: the waiter's lock (alone).
                            let p = parked.lock().unwrap();
                            progress.set_watch(u64::MAX);
                            if *p {
                                done.notify_all();
                            }
                        }
                    }
                });
                let (parked, done, progress) = &*shared;
                let mut p = parked.lock().unwrap();
                while !progress.watch(target) {
                    *p = true;
                    p = done.wait(p).unwrap();
                    *p = false;
                }
                drop(p);
                owner.join().unwrap();
                assert!(progress.completed() >= target);
            });
        }
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
