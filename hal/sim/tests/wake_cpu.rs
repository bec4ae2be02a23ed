//! A parked worker woken by a submitter does not wait behind it (the software NPU's workers
//! model a device's cores, which are not the host's): where the kernel takes custom time
//! slices, every worker thread runs with the short slice that lets a woken worker preempt its
//! waker; elsewhere a woken worker runs off the submitter's CPU (the submitting thread is pinned
//! to one CPU, launches host functions on an idle queue, and each records the CPU it ran on). A
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

/// The time slice the workers ask for (the kernel's shortest).
const SLICE_NS: u64 = 100_000;

/// `sched_getattr` of thread `tid`: (policy, slice in ns).
fn sched_attr_of(tid: i32) -> Option<(u32, u64)> {
    // SAFETY: `sched_attr` is plain integers: all zeroes is a valid value.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = u32::try_from(size_of::<libc::sched_attr>()).expect("size");
    // SAFETY: `attr` is writable for `size` bytes; no flags.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &raw mut attr, size, 0u32) };
    (rc == 0).then_some((attr.sched_policy, attr.sched_runtime))
}

/// Whether this kernel keeps a custom slice a thread asks for (Linux 6.12 on), tried on a
/// thread of its own.
fn kernel_takes_custom_slices() -> bool {
    std::thread::spawn(|| {
        // SAFETY: as in `sched_attr_of`; the struct is initialised and its size set.
        let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
        attr.size = u32::try_from(size_of::<libc::sched_attr>()).expect("size");
        attr.sched_runtime = SLICE_NS;
        // SAFETY: `attr` is a valid `sched_attr` of the size it says; pid 0 is this thread.
        let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const attr, 0u32) };
        // SAFETY: no arguments.
        let tid = unsafe { libc::gettid() };
        rc == 0 && sched_attr_of(tid).is_some_and(|(_, slice)| slice == SLICE_NS)
    })
    .join()
    .expect("probe thread")
}

/// The ids of this process's software-NPU worker threads.
fn worker_threads() -> Vec<i32> {
    let mut tids = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").expect("/proc/self/task").flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.starts_with("aclrs-sim-ts") {
            tids.push(e.file_name().to_string_lossy().parse().expect("a thread id"));
        }
    }
    tids
}

#[test]
fn woken_workers_preempt_or_avoid_their_waker() {
    if kernel_takes_custom_slices() {
        let sim = small_sim(format!("simslice-{}", std::process::id()));
        // Every worker asks for its slice first thing; wait until all have started.
        // TIMEOUT: threads that never start; 30 s is far beyond any run.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let tids = worker_threads();
            let attrs: Vec<_> = tids.iter().map(|&t| sched_attr_of(t)).collect();
            let sliced = |a: &Option<(u32, u64)>| {
                // CAST: SCHED_OTHER is 0.
                *a == Some((libc::SCHED_OTHER as u32, SLICE_NS))
            };
            if !tids.is_empty() && attrs.iter().all(sliced) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "worker threads {tids:?} have {attrs:?}");
            std::thread::yield_now();
        }
        drop(sim);
        return;
    }
    a_woken_worker_runs_off_the_submitters_cpu();
}

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
