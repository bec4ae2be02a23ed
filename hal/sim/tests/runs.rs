//! Runs on the software NPU: a worker takes a stream's queued plain tasks together and runs
//! them without the device lock between them. These tests check what must still hold inside a
//! run: a host thread waiting for a task of the run (not its last) is woken while a later task
//! of the run is still running, so a later task may wait for that thread; a stream waiting on a
//! point inside another stream's run starts before that run ends; a failure inside a run
//! records the stream's error without stopping the tasks behind it; and the fills of a run,
//! which keep their window's map held between them, let it go before any other task. Deterministic: the tasks that
//! must be in flight block in the host hook on gates the test opens, so no outcome depends on
//! timing (a broken rule makes a bounded wait time out). A test binary of its own (the host
//! hook is process-wide).

use std::collections::BTreeSet;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use hal::layout::device_window_base;
use hal::{
    BackRequest, CopyEngine, DeviceAddr, ErrorKind, HostCall, MemAttr, MemoryBacking, PageSize, QueueId,
    Queues, TaskDesc, TaskStatus, VaRange,
};
use hal_sim::Sim;

mod common;
#[path = "common/hooked.rs"]
mod hooked;
use common::D0;
use hooked::{host, sim_with_hook};

/// `func` of a host call that blocks until gate `data` opens.
const BLOCK: u64 = 1;
/// `func` of a host call that only records its `data`.
const NOTE: u64 = 2;
/// `func` of a host call that records its `data` and fails with code 7.
const FAIL: u64 = 3;

/// The bound on every wait here: only a broken rule reaches it.
const BOUND_MS: u32 = 20_000;

#[derive(Default)]
struct Log {
    /// `data` of every call, in the order they ran.
    ran: Vec<u64>,
    /// Gates that are open.
    open: BTreeSet<u64>,
    /// Gates a blocking call waits at now.
    waiting: BTreeSet<u64>,
    /// Every gate is open (a failed check lets everything go, so the test fails, not hangs).
    all_open: bool,
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
        match call.func {
            BLOCK => {
                log.waiting.insert(call.data);
                self.changed.notify_all();
                while !log.all_open && !log.open.contains(&call.data) {
                    log = self.changed.wait(log).unwrap_or_else(|p| p.into_inner());
                }
                log.waiting.remove(&call.data);
                0
            }
            FAIL => 7,
            _ => 0,
        }
    }

    /// Waits until a blocking call waits at gate `gate` (it blocks until the gate opens).
    fn wait_at(&self, gate: u64) {
        let mut log = self.lock();
        while !log.waiting.contains(&gate) {
            log = self.changed.wait(log).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn open(&self, gate: u64) {
        self.lock().open.insert(gate);
        self.changed.notify_all();
    }

    /// `r`, or a panic with `what` after opening every gate.
    fn must(&self, r: hal::Result<()>, what: &str) {
        if let Err(e) = r {
            self.lock().all_open = true;
            self.changed.notify_all();
            panic!("{what}: {e}");
        }
    }

    fn ran(&self) -> Vec<u64> {
        self.lock().ran.clone()
    }
}

/// The guard comes first so that it is dropped last (after the `Sim`).
fn start(name: &str) -> (MutexGuard<'static, ()>, Sim, Arc<Hook>) {
    let hook = Arc::new(Hook::default());
    let (guard, sim) = sim_with_hook(format!("simruns-{}-{name}", std::process::id()), &hook, Hook::call);
    (guard, sim, hook)
}

/// Queues `tasks` on `q` behind a task blocked at gate 100, then lets it go: the worker that
/// ran it finds them all queued and takes them as one run.
fn queue_as_run(sim: &Sim, hook: &Hook, q: QueueId, tasks: &[(u64, u64)]) -> Vec<u64> {
    host(sim, q, BLOCK, 100);
    hook.wait_at(100);
    let seqs = tasks.iter().map(|&(func, data)| host(sim, q, func, data)).collect();
    hook.open(100);
    seqs
}

/// A host thread waits for the first task of a run while the run's second task blocks until
/// that thread has gone on (it opens the second task's gate only after its wait returned). The
/// waiter may see the published word while it spins or be woken from its park (which of the two
/// is not controlled here; the loom model `loom_a_run_owner_tells_a_watching_waiter` checks the
/// park protocol itself).
#[test]
fn a_waiter_for_a_task_inside_a_run_is_woken_before_the_run_ends() {
    let (_g, sim, hook) = start("waiter");
    let q = sim.create_queue(D0, 16).expect("queue");
    let seqs = queue_as_run(&sim, &hook, q, &[(NOTE, 1), (BLOCK, 2), (NOTE, 3)]);
    hook.must(sim.wait(D0, q, seqs[0], Some(BOUND_MS)), "the first task's completion, published mid-run");
    hook.wait_at(2);
    assert!(sim.progress(D0, q).expect("progress").completed < seqs[1], "the blocked task has not finished");
    hook.open(2);
    sim.wait(D0, q, seqs[2], Some(BOUND_MS)).expect("the run's end");
    assert_eq!(hook.ran(), [100, 1, 2, 3]);
    sim.destroy_queue(D0, q).expect("destroy");
}

/// Stream `p` waits for a point inside `q`'s run; `q`'s run blocks until `p`'s task behind the
/// wait has run.
#[test]
fn a_stream_waiting_on_a_point_inside_a_run_starts_before_the_run_ends() {
    let (_g, sim, hook) = start("stream");
    let q = sim.create_queue(D0, 16).expect("queue");
    let p = sim.create_queue(D0, 16).expect("queue");
    host(&sim, q, BLOCK, 100);
    hook.wait_at(100);
    let first = host(&sim, q, NOTE, 1);
    host(&sim, q, BLOCK, 2);
    // `p` parks on `q` (which has not reached `first`) before the run starts.
    sim.wait_point(D0, p, q, first).expect("wait point");
    let opener = host(&sim, p, NOTE, 10);
    hook.open(100);
    hook.must(sim.wait(D0, p, opener, Some(BOUND_MS)), "p ran while q's run was still running");
    hook.wait_at(2);
    hook.open(2);
    sim.wait(D0, q, first + 1, Some(BOUND_MS)).expect("q's run ends");
    let ran = hook.ran();
    let at = |d: u64| ran.iter().position(|&x| x == d).expect("ran");
    assert!(at(1) < at(10), "p's task ran after the point it waited for: {ran:?}");
    for x in [p, q] {
        sim.destroy_queue(D0, x).expect("destroy");
    }
}

/// In the default failure mode a failure inside a run is the stream's error, and the tasks
/// behind it in the run still run; the failed task is not published complete before its error
/// is recorded (the run's end).
#[test]
fn a_failure_inside_a_run_records_the_error_and_the_run_goes_on() {
    let (_g, sim, hook) = start("failure");
    let q = sim.create_queue(D0, 16).expect("queue");
    let seqs = queue_as_run(&sim, &hook, q, &[(NOTE, 1), (FAIL, 2), (BLOCK, 3), (FAIL, 4)]);
    hook.wait_at(3);
    let completed = sim.progress(D0, q).expect("progress").completed;
    // Let the run go on before any check can fail (a failed check must not leave it blocked).
    hook.open(3);
    assert!(
        completed < seqs[1],
        "the failed task ({}) was published at {completed} before its error",
        seqs[1]
    );
    sim.wait(D0, q, seqs[3], Some(BOUND_MS)).expect("the run's end");
    assert_eq!(hook.ran(), [100, 1, 2, 3, 4]);
    // The first failure's code is the queue's error; taking it clears it.
    assert_eq!(sim.take_error(D0, q).expect("error"), Some(TaskStatus::Fault(7)));
    assert_eq!(sim.take_error(D0, q).expect("error"), None);
    sim.destroy_queue(D0, q).expect("destroy");
}

fn back(sim: &Sim, start: u64, len: u64) -> VaRange {
    let range = VaRange::try_new(DeviceAddr(start), len).expect("range");
    sim.back(D0, &BackRequest { range, page_size: PageSize::Normal, attrs: MemAttr::CACHED }).expect("back");
    range
}

fn fill(sim: &Sim, q: QueueId, dst: u64, value: u8, len_bytes: u64) -> u64 {
    sim.submit(D0, q, TaskDesc::Memset { dst: DeviceAddr(dst), value, len_bytes }).expect("submit")
}

/// A run of fills with a host call in the middle: while the call blocks, the test thread
/// unbacks memory of the same window, which waits for the window's map; the fills before the
/// call held that map, and must have let it go (a hold kept across the call would make the
/// unback wait for the call, and the call waits for the unback: the bounded wait fails). The
/// fill after the call into the unbacked range then faults (the worker's cached span of it is
/// stale), and the fill after that still runs.
#[test]
fn a_run_of_fills_lets_the_window_go_before_a_host_call() {
    let (_g, sim, hook) = start("fills");
    let a = device_window_base(0);
    let b = a + (2 << 20);
    back(&sim, a, 64 << 10);
    let b_range = back(&sim, b, 64 << 10);
    let q = sim.create_queue(D0, 16).expect("queue");
    host(&sim, q, BLOCK, 100);
    hook.wait_at(100);
    fill(&sim, q, a, 1, 4096);
    fill(&sim, q, b, 4, 16);
    host(&sim, q, BLOCK, 2);
    fill(&sim, q, b, 5, 16);
    let last = fill(&sim, q, a + 4096, 3, 4096);
    hook.open(100);
    hook.wait_at(2);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let sim = &sim;
        s.spawn(move || tx.send(sim.unback(D0, b_range)));
        let unbacked = rx.recv_timeout(Duration::from_millis(u64::from(BOUND_MS)));
        // Let the run go on before any check can fail (the unback above then ends too).
        hook.open(2);
        let unbacked = unbacked.expect("the unback waited for a map a run of fills still held");
        unbacked.expect("unback");
    });
    sim.wait(D0, q, last, Some(BOUND_MS)).expect("the run's end");
    assert_eq!(hook.ran(), [100, 2]);
    assert_eq!(sim.take_error(D0, q).expect("error"), Some(TaskStatus::Failed(ErrorKind::InvalidHandle)));
    let mut bytes = vec![0u8; 8192];
    sim.copy_from_device(D0, &mut bytes, DeviceAddr(a)).expect("read");
    assert_eq!(bytes, [vec![1u8; 4096], vec![3u8; 4096]].concat());
    sim.destroy_queue(D0, q).expect("destroy");
}
