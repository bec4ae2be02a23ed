//! The wake-up a worker owes the others when it takes a task while a stream is refused by its
//! value-wait gate (`run()` in `hal/sim/src/scheduler.rs`: the `has_gated` hand-on).
//!
//! The failure it guards against: every other worker parked without a poll timeout before the
//! refusal (no stream was gated then), and the refusing worker took a long task in the same
//! look, here a host call that opens the gate and then waits, with a timeout, for the gated
//! stream (what `aclrtStreamWaitEventWithTimeout` does on the software NPU). Nobody re-checks the
//! gate, so the wait runs into its timeout. With the hand-on, a parked worker wakes, finds the
//! stream gated, parks with the poll timeout and lets it through.
//!
//! Deterministic, without sleeps: the tasks that must be in flight block in the host hook until
//! the test lets them go; the interleaving is forced by queue order (both streams wait for the
//! same blocked task, so the worker that finishes it is the one that refuses the gate and takes
//! the long task, in one look); and the one free worker is known to be parked because the test
//! waits until its thread sleeps in the kernel (`/proc`), the only place an idle worker sleeps.
//! A test binary of its own (the host hook is process-wide).

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};

use hal::{
    BackRequest, CopyEngine, DeviceAddr, HostCall, MemAttr, MemoryBacking, PageSize, QueueId, Queues,
    TaskDesc, VaRange, WaitCompare,
};
use hal_sim::{Sim, WORKERS_PER_DEVICE};

mod common;
use common::{small_sim, D0};

/// `func` of a host call that blocks until its gate (`data`) opens.
const BLOCK: u64 = 1;
/// `func` of a host call that opens the value gate, then waits for the gated queue.
const OPEN_AND_WAIT: u64 = 2;
/// The latch of the workers kept busy for the whole test.
const FILLER: u64 = 0;
/// The latch of the task both streams wait for.
const FIRST: u64 = 1;
/// How long the long task waits for the gated queue: far longer than a poll (200 µs), so only a
/// missing wake-up makes it run out.
const WAIT_MS: u32 = 5_000;

#[derive(Default)]
struct Log {
    /// Latches opened.
    open: BTreeSet<u64>,
    /// Names of the threads inside a blocking call now.
    blocked: Vec<String>,
    /// The gate word's address and the gated queue with the sequence to wait for.
    target: Option<(u64, QueueId, u64)>,
    /// What the long task's wait answered (`Some(true)`: the gated queue got through in time).
    waited: Option<bool>,
}

#[derive(Default)]
struct Hook {
    log: Mutex<Log>,
    changed: Condvar,
    /// The device (weak: the `Sim` holds the hook).
    sim: OnceLock<Weak<Sim>>,
}

impl Hook {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn call(&self, call: HostCall) -> i32 {
        match call.func {
            BLOCK => {
                let name = std::thread::current().name().unwrap_or_default().to_owned();
                let mut log = self.lock();
                log.blocked.push(name.clone());
                self.changed.notify_all();
                while !log.open.contains(&call.data) {
                    log = self.changed.wait(log).unwrap_or_else(|p| p.into_inner());
                }
                log.blocked.retain(|n| *n != name);
            }
            OPEN_AND_WAIT => {
                let Some((gate, q, seq)) = self.lock().target else { return 1 };
                let Some(sim) = self.sim.get().and_then(Weak::upgrade) else { return 1 };
                sim.copy_to_device(D0, DeviceAddr(gate), &1u64.to_le_bytes()).expect("open the gate");
                let got = sim.wait(D0, q, seq, Some(WAIT_MS)).is_ok();
                self.lock().waited = Some(got);
                self.changed.notify_all();
            }
            _ => return 1,
        }
        0
    }

    /// Opens every latch: whatever happens, the device can drain (the `Sim` waits for its
    /// queues when dropped).
    fn open_all(&self) {
        self.lock().open.extend([FILLER, FIRST]);
        self.changed.notify_all();
    }

    fn open(&self, latch: u64) {
        self.lock().open.insert(latch);
        self.changed.notify_all();
    }

    /// Waits until `n` blocking calls are inside the hook (they block until opened).
    fn wait_blocked(&self, n: usize) -> Vec<String> {
        let mut log = self.lock();
        while log.blocked.len() < n {
            log = self.changed.wait(log).unwrap_or_else(|p| p.into_inner());
        }
        log.blocked.clone()
    }
}

fn host(sim: &Sim, q: QueueId, func: u64, data: u64) -> u64 {
    sim.submit(D0, q, TaskDesc::HostFunc { call: HostCall { func, data, report: None } }).expect("submit")
}

/// Opens every latch when dropped (declared after the `Sim`, so dropped before it): a failed
/// assertion does not leave the device's teardown waiting for blocked calls.
struct OpenOnDrop(Arc<Hook>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open_all();
    }
}

/// The kernel's state letter (`R`, `S`, ...) of every thread of this process named `prefix*`,
/// by name.
fn thread_states(prefix: &str) -> Vec<(String, char)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("read /proc/self/task").flatten() {
        let dir = entry.path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else { continue };
        let name = comm.trim_end().to_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else { continue };
        // `pid (comm) S ...`: the state follows the last `)`.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        out.push((name, state.unwrap_or('?')));
    }
    out
}

/// Waits until every worker of device 0 not in `busy` sleeps in the kernel. An idle worker
/// sleeps nowhere but on its condition variable (it spins on its core or yields it otherwise;
/// nothing else holds the device lock now): so they are parked.
fn wait_parked(busy: &[String]) {
    loop {
        // A worker that has not run yet may not carry its name: count them all.
        let states = thread_states("aclrs-sim-ts0.");
        if states.len() == WORKERS_PER_DEVICE && states.iter().all(|(n, s)| busy.contains(n) || *s == 'S') {
            return;
        }
        std::thread::yield_now();
    }
}

#[test]
fn a_worker_that_takes_a_task_past_a_refused_gate_wakes_a_poller() {
    const { assert!(WORKERS_PER_DEVICE >= 2, "one worker to refuse the gate, one to poll it") };
    let sim = Arc::new(small_sim(format!("simgate-{}", std::process::id())));
    let hook = Arc::new(Hook::default());
    assert!(hook.sim.set(Arc::downgrade(&sim)).is_ok());
    let h = Arc::clone(&hook);
    sim.set_host_hook(Arc::new(move |call: HostCall| h.call(call)));
    let _open = OpenOnDrop(Arc::clone(&hook));
    let gate = hal::layout::device_window_base(0);
    let range = VaRange::try_new(DeviceAddr(gate), 64 << 10).expect("range");
    sim.back(D0, &BackRequest { range, page_size: PageSize::Normal, attrs: MemAttr::CACHED }).expect("back");
    sim.copy_to_device(D0, DeviceAddr(gate), &0u64.to_le_bytes()).expect("close the gate");

    // All workers but two block for the whole test; a third runs `first`; one stays free.
    let fillers: Vec<QueueId> =
        (0..WORKERS_PER_DEVICE - 2).map(|_| sim.create_queue(D0, 4).expect("queue")).collect();
    for &q in &fillers {
        host(&sim, q, BLOCK, FILLER);
    }
    let p = sim.create_queue(D0, 4).expect("queue");
    let first = host(&sim, p, BLOCK, FIRST);
    let busy = hook.wait_blocked(WORKERS_PER_DEVICE - 1);

    // `g` and `b` both wait for `first` (g first); behind the waits, g's head is the value wait
    // and b's the long task. Both queues are busy (their waits unfinished), so these posts
    // wake nobody: the worker that finishes `first` moves them into the executor.
    let g = sim.create_queue(D0, 4).expect("queue");
    let b = sim.create_queue(D0, 4).expect("queue");
    sim.wait_point(D0, g, p, first).expect("g waits for first");
    sim.wait_point(D0, b, p, first).expect("b waits for first");
    let gated = sim
        .submit(D0, g, TaskDesc::ValueWait { addr: DeviceAddr(gate), value: 1, compare: WaitCompare::Equal })
        .expect("value wait");
    hook.lock().target = Some((gate, g, gated));
    let long = host(&sim, b, OPEN_AND_WAIT, 0);

    // The free worker parked with no stream gated, so without a poll timeout.
    wait_parked(&busy);
    // The worker finishing `first` completes both waits, is refused by g's gate and takes the
    // long task in the same look; only a worker it wakes re-checks the gate.
    hook.open(FIRST);
    sim.wait(D0, b, long, None).expect("the long task finishes");
    let waited = hook.lock().waited;
    hook.open(FILLER);
    assert_eq!(waited, Some(true), "the gated queue got through while the long task waited for it");
    sim.wait(D0, g, gated, None).expect("g finishes");
    for q in fillers.into_iter().chain([p, g, b]) {
        let last = sim.progress(D0, q).expect("progress").submitted;
        sim.wait(D0, q, last, None).expect("drain");
        sim.destroy_queue(D0, q).expect("destroy");
    }
}
