//! Unit tests of [`Published`] on real threads (the loom models are in `loom_tests.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use super::{Local, Published, SLOTS};

/// A value that counts its drops.
#[derive(Debug)]
struct Counted(u32, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

fn yes() -> bool {
    true
}

/// A cell for the test (`pin` takes a `'static` cell, as the runtime's is).
fn cell<T: Send + Sync + 'static>() -> &'static Published<T> {
    Box::leak(Box::new(Published::new()))
}

#[test]
fn pin_publish_retract_and_republish() {
    let drops = Arc::new(AtomicUsize::new(0));
    let n = || drops.load(Ordering::SeqCst);
    let p = cell();
    let local = Local::new();
    assert!(p.pin(&local, yes).is_none(), "nothing published");
    p.publish(Arc::new(Counted(1, Arc::clone(&drops)))).expect("publish");
    assert!(p.is_published());
    assert!(p.publish(Arc::new(Counted(9, Arc::clone(&drops)))).is_err(), "a second value is refused");
    assert_eq!(n(), 1, "the refused value was handed back and dropped");
    assert_eq!(p.pin(&local, yes).expect("pin").0, 1);
    let out = p.retract().expect("retract");
    assert_eq!(out.0, 1);
    assert!(p.retract().is_none(), "retracted once");
    assert!(p.pin(&local, yes).is_none(), "nothing published after the retraction");
    assert_eq!(n(), 1, "the caller's reference keeps it");
    drop(out);
    assert_eq!(n(), 2, "no pin: the publication reference went at once");
    p.publish(Arc::new(Counted(2, Arc::clone(&drops)))).expect("publish again");
    assert_eq!(p.pin(&local, yes).expect("pin").0, 2);
    assert!(local.release());
}

#[test]
fn dropping_the_cell_drops_its_value() {
    let drops = Arc::new(AtomicUsize::new(0));
    let p = Published::new();
    p.publish(Arc::new(Counted(1, Arc::clone(&drops)))).expect("publish");
    drop(p);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_pin_keeps_a_retracted_value_until_it_drops() {
    let drops = Arc::new(AtomicUsize::new(0));
    let n = || drops.load(Ordering::SeqCst);
    let p = cell();
    let local = Local::new();
    p.publish(Arc::new(Counted(1, Arc::clone(&drops)))).expect("publish");
    let pin = p.pin(&local, yes).expect("pin");
    drop(p.retract().expect("retract"));
    assert_eq!(n(), 0, "pinned: not dropped");
    assert_eq!(pin.0, 1);
    let arc = pin.to_arc();
    drop(pin);
    assert_eq!(n(), 0, "a counted reference still holds it");
    drop(arc);
    assert_eq!(n(), 1, "the last pin's drop reclaimed the publication reference");
    assert!(local.release());
}

#[test]
fn nested_pins_share_the_slot_in_any_drop_order() {
    let drops = Arc::new(AtomicUsize::new(0));
    let n = || drops.load(Ordering::SeqCst);
    let p = cell();
    let local = Local::new();
    p.publish(Arc::new(Counted(1, Arc::clone(&drops)))).expect("publish");
    let outer = p.pin(&local, yes).expect("outer");
    let inner = p.pin(&local, yes).expect("inner");
    drop(p.retract().expect("retract"));
    // The outer pin goes first: the inner one still holds the value.
    drop(outer);
    assert_eq!(n(), 0);
    assert_eq!(inner.0, 1);
    // A pin inside a pin of a retracted value is refused (the caller takes another path).
    p.publish(Arc::new(Counted(2, Arc::clone(&drops)))).expect("publish");
    assert!(p.pin(&local, yes).is_none());
    drop(inner);
    assert_eq!(n(), 1);
    assert_eq!(p.pin(&local, yes).expect("pin").0, 2);
    assert!(local.release());
}

#[test]
fn slots_run_out_and_come_back() {
    let p = cell();
    p.publish(Arc::new(7u32)).expect("publish");
    let locals: Vec<Local> = (0..SLOTS).map(|_| Local::new()).collect();
    for l in &locals {
        assert!(p.pin(l, yes).is_some());
    }
    let late = Local::new();
    assert!(p.pin(&late, yes).is_none(), "every slot is claimed");
    {
        let held = p.pin(&locals[3], yes).expect("pin");
        assert!(!locals[3].release(), "a slot is not given back while a pin holds it");
        assert_eq!(*held, 7);
    }
    assert!(locals[3].release());
    let refused = Local::new();
    assert!(p.pin(&refused, || false).is_none(), "a thread that may not claim gets no pin");
    assert_eq!(p.pin(&late, yes).map(|v| *v), Some(7), "a released slot is claimed again");
}

/// A value that marks its drop in a table outside itself.
#[derive(Debug)]
struct Marked(usize, Arc<Vec<AtomicBool>>);

impl Drop for Marked {
    fn drop(&mut self) {
        assert!(!self.1[self.0].swap(true, Ordering::SeqCst), "value {} dropped twice", self.0);
    }
}

/// Readers pin and read on four threads while the main thread retracts and republishes: a
/// pinned value is never marked dropped while the pin lives, and every value is dropped
/// exactly once by the end. The rounds start once every reader has pinned (a loaded machine
/// may not run a reader before the rounds end otherwise).
#[test]
fn readers_never_see_a_dropped_value() {
    const ROUNDS: usize = 2_000;
    const READERS: usize = 4;
    let dropped: Arc<Vec<AtomicBool>> = Arc::new((0..=ROUNDS).map(|_| AtomicBool::new(false)).collect());
    let p = cell();
    p.publish(Arc::new(Marked(0, Arc::clone(&dropped)))).expect("publish");
    let stop = AtomicBool::new(false);
    let started = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let (dropped, stop, started) = (&dropped, &stop, &started);
                s.spawn(move || {
                    let local = Local::new();
                    let mut pins = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        if let Some(v) = p.pin(&local, yes) {
                            if pins == 0 {
                                started.fetch_add(1, Ordering::SeqCst);
                            }
                            for _ in 0..3 {
                                assert!(
                                    !dropped[v.0].load(Ordering::SeqCst),
                                    "value {} dropped while pinned",
                                    v.0
                                );
                                std::hint::spin_loop();
                            }
                            pins += 1;
                        }
                    }
                    assert!(local.release());
                    pins
                })
            })
            .collect();
        // Nothing is retracted yet: every reader pins value 0 once it runs.
        while started.load(Ordering::SeqCst) < READERS {
            std::thread::yield_now();
        }
        for k in 1..=ROUNDS {
            let old = p.retract().expect("retract");
            p.publish(Arc::new(Marked(k, Arc::clone(&dropped)))).expect("publish");
            drop(old);
        }
        stop.store(true, Ordering::SeqCst);
        for r in readers {
            assert!(r.join().expect("reader") > 0, "every reader pinned");
        }
    });
    drop(p.retract());
    assert!(dropped.iter().all(|d| d.load(Ordering::SeqCst)), "every value dropped");
}

#[test]
fn a_claim_in_one_cell_pins_nothing_in_another() {
    let (a, b) = (cell(), cell());
    a.publish(Arc::new(1u32)).expect("publish");
    b.publish(Arc::new(2u32)).expect("publish");
    let local = Local::new();
    assert_eq!(a.pin(&local, yes).map(|v| *v), Some(1));
    assert!(b.pin(&local, yes).is_none(), "the claim is a's");
    assert!(local.release());
    assert_eq!(b.pin(&local, yes).map(|v| *v), Some(2), "a claim made afresh in b");
    assert!(local.release());
}
