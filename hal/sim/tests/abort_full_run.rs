//! An abort of a queue whose lane holds descriptors the executor has no room for. A run of the
//! queue's tasks holds the queue's whole depth in the executor until its worker finishes it,
//! while the completions of its first tasks, published as they happen, let the submitter fill
//! the lane again. The abort must drop those descriptors (none of them runs), cancel the rest of
//! the run, and return once the run's task running now ends. It used to loop on the full
//! executor with the device lock held, which kept that task's worker from ever finishing (a
//! hang `destroy_race` ran into once in a while).
//!
//! Deterministic: every task that must be in flight blocks in the host hook on a gate the test
//! opens, and the run's blocked task is let go only once the aborting thread is seen asleep
//! (waiting without the lock; the old code spun and was never seen so). A broken rule makes a
//! bounded wait fail. A test binary of its own: one `Sim` per process (the hook is
//! process-wide).

use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hal::{AbortHead, HostCall, QueueId, Queues, TaskDesc};

mod common;
use common::{small_sim, D0};

/// The software NPU's workers per device: one blocked queue each keeps them all busy.
const WORKERS: usize = 4;
/// The aborted queue's depth.
const DEPTH: u32 = 4;
/// `func` of a host call that blocks until gate `data` opens.
const BLOCK: u64 = 1;
/// `func` of a host call that records its `data`.
const NOTE: u64 = 2;
/// The gate of the run's blocked task (gates `0..WORKERS` hold the workers).
const RUN_GATE: usize = WORKERS;
/// The bound on every wait here: only a broken rule reaches it.
const BOUND: Duration = Duration::from_secs(30);

/// The gates, which of them a blocked call reached, and the data of the calls that ran.
#[derive(Default)]
struct Hook {
    state: Mutex<(Vec<bool>, Vec<bool>, Vec<u64>)>,
    cv: Condvar,
}

impl Hook {
    fn call(&self, c: HostCall) -> i32 {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match c.func {
            BLOCK => {
                let g = usize::try_from(c.data).expect("gate");
                st.1[g] = true;
                self.cv.notify_all();
                while !st.0[g] {
                    st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            }
            _ => st.2.push(c.data),
        }
        0
    }

    fn open(&self, g: usize) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0[g] = true;
        self.cv.notify_all();
    }

    /// Waits (bounded) until the calls blocked on `gates` have all started.
    fn await_started(&self, gates: std::ops::Range<usize>) {
        let deadline = Instant::now() + BOUND;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !gates.clone().all(|g| st.1[g]) {
            let left = deadline.checked_duration_since(Instant::now()).expect("blocked calls never started");
            st = self.cv.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn ran(&self) -> Vec<u64> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).2.clone()
    }
}

/// Opens every gate when dropped, so that a failing test lets its blocked workers go.
struct OpenAll(Arc<Hook>);

impl Drop for OpenAll {
    fn drop(&mut self) {
        for g in 0..=RUN_GATE {
            self.0.open(g);
        }
    }
}

fn host(func: u64, data: u64) -> TaskDesc {
    TaskDesc::HostFunc { call: HostCall { func, data, report: None } }
}

/// Whether thread `tid` of this process is asleep (state `S` in its `stat`).
fn asleep(tid: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else { return false };
    // The state follows the command name, which is in parentheses and may hold anything.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) == Some("S")
}

#[test]
fn an_abort_waits_for_the_run_that_fills_the_executor_and_drops_what_the_lane_holds() {
    let hook = Arc::new(Hook::default());
    {
        let mut st = hook.state.lock().expect("hook");
        *st = (vec![false; RUN_GATE + 1], vec![false; RUN_GATE + 1], Vec::new());
    }
    let _open_all = OpenAll(Arc::clone(&hook));
    let sim = Arc::new(small_sim(format!("simabortfull-{}", std::process::id())));
    let h = Arc::clone(&hook);
    sim.set_host_hook(Arc::new(move |c: HostCall| h.call(c)));

    // Every worker blocked on a queue of its own, so that what is pushed next waits in its lane.
    for g in 0..WORKERS {
        let q = sim.create_queue(D0, 1).expect("queue");
        sim.submit(D0, q, host(BLOCK, g as u64)).expect("submit a blocker");
    }
    hook.await_started(0..WORKERS);
    let q: QueueId = sim.create_queue(D0, DEPTH).expect("queue");
    for task in [host(NOTE, 1), host(NOTE, 2), host(BLOCK, RUN_GATE as u64), host(NOTE, 4)] {
        sim.submit(D0, q, task).expect("submit");
    }
    // One worker let go takes the four as one run: it runs 1 and 2 (publishing each) and blocks
    // in the third. The run keeps all four places of the queue's executor until it ends, while
    // the two published completions make room in the lane for two more.
    hook.open(0);
    hook.await_started(RUN_GATE..RUN_GATE + 1);
    assert_eq!(sim.submit(D0, q, host(NOTE, 5)).expect("submit"), 5);
    assert_eq!(sim.submit(D0, q, host(NOTE, 6)).expect("submit"), 6);

    let (tid_tx, tid_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let aborter = {
        let sim = Arc::clone(&sim);
        std::thread::spawn(move || {
            let me = std::fs::read_link("/proc/thread-self").expect("thread-self");
            let tid = me.file_name().expect("tid").to_string_lossy().into_owned();
            tid_tx.send(tid).expect("send tid");
            let _ = done_tx.send(sim.abort_queue(D0, q, AbortHead::Runs));
        })
    };
    let tid = tid_rx.recv_timeout(BOUND).expect("the aborting thread's id");
    // The abort cannot end before the run's blocked task does; it must wait for it asleep,
    // without the device lock (seen asleep on three looks in a row, a millisecond apart).
    let deadline = Instant::now() + BOUND;
    let mut seen = 0;
    while seen < 3 {
        assert!(
            done_rx.try_recv().is_err(),
            "the abort returned while the run holding the executor was still running"
        );
        assert!(Instant::now() < deadline, "the aborting thread never waited asleep (it spins)");
        seen = if asleep(&tid) { seen + 1 } else { 0 };
        std::thread::sleep(Duration::from_millis(1));
    }
    hook.open(RUN_GATE);
    let dropped = match done_rx.recv_timeout(BOUND) {
        Ok(r) => r.expect("abort"),
        Err(_) => {
            // Leave the stuck threads alone: dropping the `Sim` would wait for them.
            std::mem::forget(sim);
            panic!("the abort did not return once the run's task ended");
        }
    };
    aborter.join().expect("aborting thread");
    // Task 4 (cancelled in the run) and the two the lane held.
    assert_eq!(dropped, 3);
    let mut ran = hook.ran();
    ran.sort_unstable();
    assert_eq!(ran, [1, 2], "only the run's tasks before the abort ran");

    // The queue goes on: a task pushed after the abort runs.
    let seq = sim.submit(D0, q, host(NOTE, 7)).expect("submit after the abort");
    sim.wait(D0, q, seq, Some(30_000)).expect("the task after the abort");
    assert_eq!(hook.ran().last(), Some(&7));
    for g in 1..WORKERS {
        hook.open(g);
    }
}
