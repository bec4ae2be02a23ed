//! The lanes of busy queues: a worker's look leaves the lane of a queue with unfinished work
//! alone, and the look that follows that work moves what was pushed meanwhile. A queue held
//! busy by a blocked host function, pushed to while other queues keep every worker looking,
//! must run everything pushed to it, once and in order, when it is let go; nothing may be
//! stranded in its lane. A test binary of its own: one `Sim` per process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use hal::{HostCall, QueueId, Queues, TaskDesc};

mod common;
use common::{small_sim, D0};

/// The host call that blocks its queue until the test lets it go.
const BLOCKER: u64 = u64::MAX;

/// Tasks pushed to the held queue while it is held, and to each of the others.
const HELD_TASKS: u64 = 600;
const OTHER_TASKS: u64 = 3000;
const OTHERS: usize = 3;

/// What the blocker waits for: opened by the test, or when the test unwinds (so that a failing
/// test lets the held worker go instead of leaving it blocked).
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.open();
    }
}

/// A host function naming queue index `q` (or [`BLOCKER`]) and task `data`.
fn host(q: u64, data: u64) -> TaskDesc {
    TaskDesc::HostFunc { call: HostCall { func: q, data, report: None } }
}

#[test]
fn a_held_queue_runs_everything_pushed_while_the_other_workers_look() {
    let sim = Arc::new(small_sim(format!("simbusy-{}", std::process::id())));
    let ran: Arc<Vec<Mutex<Vec<u64>>>> = Arc::new((0..=OTHERS).map(|_| Mutex::new(Vec::new())).collect());
    // The gate the blocker waits on, and whether the blocker has started.
    let gate = Gate(Arc::new((Mutex::new(false), Condvar::new())));
    let started = Arc::new(AtomicBool::new(false));
    {
        let (ran, gate, started) = (Arc::clone(&ran), Arc::clone(&gate.0), Arc::clone(&started));
        sim.set_host_hook(Arc::new(move |call: HostCall| {
            if call.func == BLOCKER {
                started.store(true, Ordering::Release);
                let (open, cv) = &*gate;
                let mut open = open.lock().expect("gate");
                while !*open {
                    open = cv.wait(open).expect("gate");
                }
            } else {
                let q = usize::try_from(call.func).expect("queue index");
                ran[q].lock().expect("record").push(call.data);
            }
            0
        }));
    }
    // Queue 0 is held; the depth leaves room for everything pushed to it while it is held.
    let depth = u32::try_from(HELD_TASKS + 1).expect("depth");
    let queues: Vec<QueueId> = (0..=OTHERS).map(|_| sim.create_queue(D0, depth).expect("queue")).collect();
    sim.submit(D0, queues[0], host(BLOCKER, 0)).expect("submit the blocker");
    while !started.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    // The held queue is busy (its blocker runs): what is pushed now stays in its lane while
    // the other queues' tasks make the workers look again and again.
    let mut last = 0;
    for k in 0..HELD_TASKS {
        last = sim.submit(D0, queues[0], host(0, k)).expect("submit to the held queue");
    }
    let floods: Vec<_> = (1..=OTHERS)
        .map(|q| {
            let (sim, queue) = (Arc::clone(&sim), queues[q]);
            std::thread::spawn(move || {
                let mut seq = 0;
                for k in 0..OTHER_TASKS {
                    // CAST: a queue index below 4.
                    seq = sim.submit(D0, queue, host(q as u64, k)).expect("submit");
                }
                // TIMEOUT: only a stranded task would take this long.
                sim.wait(D0, queue, seq, Some(30_000)).expect("the other queue's tasks ran");
            })
        })
        .collect();
    for f in floods {
        f.join().expect("flood");
    }
    assert!(ran[0].lock().expect("record").is_empty(), "nothing of the held queue ran before its blocker");
    gate.open();
    // TIMEOUT: a task stranded in the held queue's lane never runs; 30 s is far beyond any run.
    sim.wait(D0, queues[0], last, Some(30_000)).expect("everything pushed to the held queue ran");
    let want = |n: u64| (0..n).collect::<Vec<u64>>();
    assert_eq!(*ran[0].lock().expect("record"), want(HELD_TASKS), "held queue: each task once, in order");
    for q in 1..=OTHERS {
        assert_eq!(*ran[q].lock().expect("record"), want(OTHER_TASKS), "queue {q}: each task once, in order");
    }
    for q in queues {
        sim.destroy_queue(D0, q).expect("destroy");
    }
}
