//! A parked worker woken by a submitter runs off the submitter's CPU (the software NPU's
//! workers model a device's cores, which are not the host's): the submitting thread is pinned
//! to one CPU, launches host functions on an idle queue, and each records the CPU it ran on. A
//! test binary of its own: one `Sim` per process.

use std::sync::{Arc, Mutex};

use hal::{HostCall, QueueId, Queues, TaskDesc};

mod common;
use common::{small_sim, D0};

/// The CPUs the calling thread may run on.
fn allowed_cpus() -> Vec<usize> {
    let mut set = std::mem::MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: `set` is a writable `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), set.as_mut_ptr()) };
    assert_eq!(rc, 0, "sched_getaffinity");
    // SAFETY: a zeroed `cpu_set_t` is valid and the call only set bits.
    let set = unsafe { set.assume_init() };
    // SAFETY: every index is below CPU_SETSIZE, inside the set.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: `cpu_set_t` is a bit array: all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` came from `allowed_cpus`, below CPU_SETSIZE: the bit lies inside the set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &raw const set) };
    assert_eq!(rc, 0, "sched_setaffinity");
}

/// The CPU the calling thread runs on.
fn current_cpu() -> usize {
    // SAFETY: no arguments; reads the calling thread's state.
    usize::try_from(unsafe { libc::sched_getcpu() }).expect("sched_getcpu")
}

#[test]
fn a_woken_worker_runs_off_the_submitters_cpu() {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("one CPU only: nothing to steer off");
        return;
    }
    let sim = small_sim(format!("simwakecpu-{}", std::process::id()));
    let ran_on: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&ran_on);
    sim.set_host_hook(Arc::new(move |_call: HostCall| {
        seen.lock().expect("record").push(current_cpu());
        0
    }));
    let q: QueueId = sim.create_queue(D0, 8).expect("queue");
    // The submitter's CPU, on each round a different one, so that the steering follows it.
    const ROUNDS: usize = 20;
    for k in 0..ROUNDS {
        let mine = cpus[k % cpus.len()];
        pin_to(mine);
        // Idle long enough for the workers to stop spinning and park (a spin is a bounded number
        // of pauses and yields, a few hundred microseconds): the launch wakes one.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let call = HostCall { func: 1, data: k as u64, report: None };
        let seq = sim.submit(D0, q, TaskDesc::HostFunc { call }).expect("submit");
        // TIMEOUT: a host function that never runs; 30 s is far beyond any run.
        sim.wait(D0, q, seq, Some(30_000)).expect("the host function ran");
        let cpu = *ran_on.lock().expect("records").last().expect("a record");
        assert_ne!(cpu, mine, "round {k}: the worker ran on the submitter's CPU {mine}");
    }
    assert_eq!(ran_on.lock().expect("records").len(), ROUNDS);
    sim.destroy_queue(D0, q).expect("destroy");
}
