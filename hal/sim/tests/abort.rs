//! `Queues::abort_queue` on the software NPU with each [`AbortHead`]: which tasks run, which
//! are dropped, which events stay not complete, and that the call does not wait. Deterministic:
//! the tasks that must be in flight block in the host hook on a gate the test opens, so no
//! outcome depends on timing. A test binary of its own (the host hook is process-wide).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use hal::{AbortHead, Events, HostCall, QueueId, Queues};
use hal_sim::{Sim, WORKERS_PER_DEVICE};

mod common;
#[path = "common/hooked.rs"]
mod hooked;
use common::D0;
use hooked::{host, sim_with_hook};

/// `func` of a host call that blocks until the gate opens.
const BLOCK: u64 = 1;
/// `func` of a host call that only records its `data`.
const NOTE: u64 = 2;

/// What the host hook saw, and the gate blocking calls wait on.
#[derive(Default)]
struct Log {
    /// `data` of every call, in the order they ran.
    ran: Vec<u64>,
    /// Blocking calls that are inside the hook now.
    blocked: usize,
    open: bool,
}

#[derive(Default)]
struct Hook {
    log: Mutex<Log>,
    changed: Condvar,
}

impl Hook {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn call(&self, call: HostCall) -> i32 {
        let mut log = self.lock();
        log.ran.push(call.data);
        if call.func == BLOCK {
            log.blocked += 1;
            self.changed.notify_all();
            while !log.open {
                log = self.changed.wait(log).unwrap_or_else(|p| p.into_inner());
            }
            log.blocked -= 1;
        }
        0
    }

    /// Waits until `n` blocking calls are inside the hook (not a timing assumption: they
    /// block until [`Self::open`]).
    fn wait_blocked(&self, n: usize) {
        let mut log = self.lock();
        while log.blocked < n {
            log = self.changed.wait(log).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn open(&self) {
        self.lock().open = true;
        self.changed.notify_all();
    }

    fn ran(&self) -> Vec<u64> {
        self.lock().ran.clone()
    }
}

/// The guard comes first so that it is dropped last (after the `Sim`).
fn start(name: &str) -> (MutexGuard<'static, ()>, Sim, Arc<Hook>) {
    let hook = Arc::new(Hook::default());
    let (guard, sim) = sim_with_hook(format!("simabort-{}-{name}", std::process::id()), &hook, Hook::call);
    (guard, sim, hook)
}

/// Occupies every worker of the device with a blocking task on a queue of its own, so that a
/// task submitted next is ready but cannot have started.
fn occupy_workers(sim: &Sim, hook: &Hook) -> Vec<QueueId> {
    let qs: Vec<QueueId> = (0..WORKERS_PER_DEVICE).map(|_| sim.create_queue(D0, 4).expect("queue")).collect();
    for (i, &q) in qs.iter().enumerate() {
        host(sim, q, BLOCK, 100 + i as u64);
    }
    hook.wait_blocked(WORKERS_PER_DEVICE);
    qs
}

fn drain(sim: &Sim, qs: &[QueueId]) {
    for &q in qs {
        let last = sim.progress(D0, q).expect("progress").submitted;
        sim.wait(D0, q, last, None).expect("drain");
    }
}

/// `Runs` on a queue whose head task is ready but not started (every worker is busy): the head
/// runs; the task and the event record behind it never do, and the call returns at once.
#[test]
fn runs_keeps_a_ready_head_that_has_not_started() {
    let (_g, sim, hook) = start("runs-ready");
    let busy = occupy_workers(&sim, &hook);
    let q = sim.create_queue(D0, 8).expect("queue");
    let ev = sim.create_event(D0).expect("event");
    host(&sim, q, NOTE, 1);
    host(&sim, q, NOTE, 2);
    sim.record_event(D0, q, ev).expect("record");
    // Nothing can have started on q: every worker blocks in the hook.
    assert_eq!(sim.progress(D0, q).expect("progress").completed, 0);
    assert_eq!(sim.abort_queue(D0, q, AbortHead::Runs).expect("abort"), 2, "the task behind and the record");
    hook.open();
    let last = sim.progress(D0, q).expect("progress").submitted;
    sim.wait(D0, q, last, None).expect("the head finishes");
    drain(&sim, &busy);
    let ran = hook.ran();
    assert_eq!(ran.iter().filter(|&&d| d == 1).count(), 1, "the head ran once: {ran:?}");
    assert!(!ran.contains(&2), "the task behind the head never ran: {ran:?}");
    assert!(!sim.event_info(D0, ev).expect("event").is_complete, "the dropped record left the event pending");
    sim.destroy_queue(D0, q).expect("destroy");
}

/// `Cancel` on the same queue drops the head too.
#[test]
fn cancel_drops_a_ready_head() {
    let (_g, sim, hook) = start("cancel-ready");
    let busy = occupy_workers(&sim, &hook);
    let q = sim.create_queue(D0, 8).expect("queue");
    host(&sim, q, NOTE, 1);
    host(&sim, q, NOTE, 2);
    assert_eq!(sim.abort_queue(D0, q, AbortHead::Cancel).expect("abort"), 2);
    assert_eq!(sim.progress(D0, q).expect("progress").completed, 2, "dropped tasks count as finished");
    hook.open();
    drain(&sim, &busy);
    let ran = hook.ran();
    assert!(!ran.contains(&1) && !ran.contains(&2), "nothing of q ran: {ran:?}");
    sim.destroy_queue(D0, q).expect("destroy");
}

/// `Runs` on a queue whose head is already running: it finishes, everything behind it is
/// dropped, and the call does not wait for it (the head is still blocked when it returns).
#[test]
fn runs_lets_a_running_head_finish_without_waiting() {
    let (_g, sim, hook) = start("runs-running");
    let q = sim.create_queue(D0, 8).expect("queue");
    let ev = sim.create_event(D0).expect("event");
    host(&sim, q, BLOCK, 1);
    host(&sim, q, NOTE, 2);
    sim.record_event(D0, q, ev).expect("record");
    hook.wait_blocked(1);
    // Returns while the head is blocked in the hook: it did not wait.
    assert_eq!(sim.abort_queue(D0, q, AbortHead::Runs).expect("abort"), 2);
    assert_eq!(hook.lock().blocked, 1, "the head is still running");
    hook.open();
    drain(&sim, &[q]);
    assert_eq!(hook.ran(), [1], "only the running head ran");
    assert!(!sim.event_info(D0, ev).expect("event").is_complete);
    sim.destroy_queue(D0, q).expect("destroy");
}

/// `Runs` on a queue whose head waits for another queue's unfinished task: its dependencies
/// are not met, so it is dropped with the rest.
#[test]
fn runs_drops_a_head_whose_dependencies_are_not_met() {
    let (_g, sim, hook) = start("runs-blocked");
    let p = sim.create_queue(D0, 4).expect("queue");
    let q = sim.create_queue(D0, 8).expect("queue");
    let pseq = host(&sim, p, BLOCK, 9);
    hook.wait_blocked(1);
    sim.wait_point(D0, q, p, pseq).expect("wait point");
    host(&sim, q, NOTE, 1);
    assert_eq!(sim.abort_queue(D0, q, AbortHead::Runs).expect("abort"), 2, "the wait and the task");
    hook.open();
    drain(&sim, &[p, q]);
    assert_eq!(hook.ran(), [9], "q's task never ran");
    for x in [p, q] {
        sim.destroy_queue(D0, x).expect("destroy");
    }
}
