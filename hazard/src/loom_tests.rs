//! Loom models of [`Published`] (`cargo xtask loom`): the real type, with both fences loom's
//! sequentially consistent fence (what `membarrier` provides).

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc as LoomArc;
use std::sync::Arc;

use super::{Local, Published};

/// Loom's explorer with a preemption bound (the models are small, but a full search of the
/// nested one takes minutes).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = None;
    b.check(f);
}

/// A value that marks its drop in a flag outside itself. (Cells are leaked: `pin` takes a
/// `'static` one, as the runtime's is; the values in them are dropped all the same.)
struct Marked(LoomArc<AtomicBool>);

impl Drop for Marked {
    fn drop(&mut self) {
        assert!(!self.0.swap(true, Ordering::SeqCst), "dropped twice");
    }
}

/// A reader pins while the writer retracts: the value is never dropped while pinned, and it
/// is dropped by the end (by the writer, or by the reader's unpin).
#[test]
fn loom_a_retraction_never_drops_a_pinned_value() {
    model(|| {
        let dropped = LoomArc::new(AtomicBool::new(false));
        let p: &'static Published<Marked> = Box::leak(Box::new(Published::new()));
        assert!(p.publish(Arc::new(Marked(LoomArc::clone(&dropped)))).is_ok());
        let reader = {
            let dropped = LoomArc::clone(&dropped);
            loom::thread::spawn(move || {
                let local = Local::new();
                if let Some(v) = p.pin(&local, || true) {
                    assert!(!dropped.load(Ordering::SeqCst), "dropped while pinned");
                    assert!(!v.0.load(Ordering::SeqCst));
                }
                assert!(local.release());
            })
        };
        drop(p.retract());
        reader.join().expect("reader");
        assert!(dropped.load(Ordering::SeqCst), "dropped by the end");
    });
}

/// A reader pins twice (nested) while the writer retracts and publishes another value: the
/// nested pin is of the outer one's value or refused, and both values are dropped by the end.
#[test]
fn loom_nested_pins_across_a_republish() {
    model(|| {
        let first = LoomArc::new(AtomicBool::new(false));
        let second = LoomArc::new(AtomicBool::new(false));
        let p: &'static Published<Marked> = Box::leak(Box::new(Published::new()));
        assert!(p.publish(Arc::new(Marked(LoomArc::clone(&first)))).is_ok());
        let reader = {
            loom::thread::spawn(move || {
                let local = Local::new();
                if let Some(outer) = p.pin(&local, || true) {
                    let inner = p.pin(&local, || true);
                    drop(outer);
                    if let Some(v) = inner {
                        assert!(!v.0.load(Ordering::SeqCst), "the inner pin's value dropped");
                    }
                }
                assert!(local.release());
            })
        };
        drop(p.retract());
        assert!(p.publish(Arc::new(Marked(LoomArc::clone(&second)))).is_ok());
        reader.join().expect("reader");
        drop(p.retract());
        assert!(first.load(Ordering::SeqCst) && second.load(Ordering::SeqCst));
    });
}
