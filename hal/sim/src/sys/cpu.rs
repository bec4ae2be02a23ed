//! How the host runs the software NPU's worker threads: their time slices, which CPU a thread
//! is on, a thread's id, and the set of CPUs a thread may run on.
//!
//! A device's cores are not the host's: a kernel launched on an idle stream starts on the
//! device while the launching thread goes on. The workers model those cores, but they are host
//! threads, and a kernel that wakes a parked thread puts it on a CPU of its choosing — often
//! the waker's own, where it waits (milliseconds on a machine whose CPUs share no cache) for the
//! waker, which is busy, to give the CPU up. The scheduler uses this module to ask for short
//! slices for its workers (so that a woken one preempts its waker at once), or, where the
//! kernel does not take them, to steer a parked worker off the waking thread's CPU just before
//! it wakes it (see `scheduler`'s `Cores`).
//!
//! This module owns the `sched_{get,set}attr`, `sched_getcpu`, `gettid` and
//! `sched_{get,set}affinity` calls; it decides nothing about which worker gets what, or when.

use std::mem::MaybeUninit;

/// A set of host CPUs (`cpu_set_t`).
#[derive(Clone, Copy)]
pub(crate) struct CpuSet(libc::cpu_set_t);

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuSet({} CPUs)", self.count())
    }
}

impl CpuSet {
    /// The CPUs the calling thread may run on, or `None` when the kernel does not say.
    pub(crate) fn of_current_thread() -> Option<Self> {
        let mut set = MaybeUninit::<libc::cpu_set_t>::zeroed();
        // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed; pid 0 is the
        // calling thread.
        let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), set.as_mut_ptr()) };
        // SAFETY: zeroed is a valid `cpu_set_t` (a bit array), and the call only wrote bits.
        (rc == 0).then(|| Self(unsafe { set.assume_init() }))
    }

    /// How many CPUs the set holds.
    pub(crate) fn count(&self) -> usize {
        // SAFETY: CPU_COUNT only reads the set's bits.
        let n = unsafe { libc::CPU_COUNT(&self.0) };
        usize::try_from(n).unwrap_or(0)
    }

    /// Whether `cpu` is in the set.
    pub(crate) fn contains(&self, cpu: usize) -> bool {
        // CAST: CPU_SETSIZE is a small positive constant (1024).
        // SAFETY: `cpu` is below CPU_SETSIZE, so the bit it reads lies inside the set.
        cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &self.0) }
    }

    /// The set without `cpu`, or `None` when that would leave it empty.
    pub(crate) fn without(&self, cpu: usize) -> Option<Self> {
        let mut out = *self;
        if self.contains(cpu) {
            // SAFETY: `contains` checked that `cpu` is below CPU_SETSIZE: the bit lies inside.
            unsafe { libc::CPU_CLR(cpu, &mut out.0) };
        }
        (out.count() > 0).then_some(out)
    }

    /// Lets thread `tid` (a [`thread_id`]) run on exactly this set; `false` when the kernel
    /// refused (a thread that exited, a CPU taken away by a cgroup), which changes nothing.
    pub(crate) fn apply_to(&self, tid: i32) -> bool {
        // SAFETY: `self.0` is a valid `cpu_set_t` of the size passed; the kernel only reads it.
        unsafe { libc::sched_setaffinity(tid, size_of::<libc::cpu_set_t>(), &raw const self.0) == 0 }
    }
}

/// The CPU the calling thread runs on now (it may move right after), or `None` when the
/// kernel does not say.
#[inline]
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the thread's state (a vDSO call).
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Asks the kernel for time slices of `ns` nanoseconds for the calling thread, keeping its
/// policy and nice value: a thread with a short slice gets an early deadline when it wakes, so
/// it preempts a thread that runs on without sleeping instead of waiting for that thread's slice
/// to end. Only a normal (`SCHED_OTHER`) thread asks: one under another policy (a real-time
/// application's, inherited from the thread that opened the device) is left as it is. `true`
/// when the kernel now reports that slice for the thread (custom slices came with Linux 6.12; an
/// older kernel takes the call and ignores the value, and this reads it back to tell); nothing
/// changes when it does not.
pub(crate) fn request_slice(ns: u64) -> bool {
    let Some(mut attr) = current_attr() else { return false };
    // CAST: SCHED_OTHER is 0.
    if attr.sched_policy != libc::SCHED_OTHER as u32 {
        return false;
    }
    attr.sched_runtime = ns;
    // SAFETY: `attr` is an initialised `sched_attr` whose `size` says how much the kernel may
    // read; pid 0 is the calling thread; no flags.
    let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const attr, 0u32) };
    set == 0 && current_attr().is_some_and(|got| got.sched_runtime == ns)
}

/// The calling thread's scheduling attributes (policy, flags, nice value, slice).
fn current_attr() -> Option<libc::sched_attr> {
    let mut got = zeroed_attr();
    // SAFETY: `got` is a writable `sched_attr` of the size passed; pid 0 is the calling thread;
    // no flags. The kernel writes at most that size.
    let read = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &raw mut got, got.size, 0u32) };
    (read == 0).then_some(got)
}

/// A `sched_attr` with its size set and everything else 0 (`SCHED_OTHER`).
fn zeroed_attr() -> libc::sched_attr {
    // SAFETY: `sched_attr` is plain integers: all zeroes is a valid value.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    // CAST: the struct's size (48 bytes) fits in u32.
    attr.size = size_of::<libc::sched_attr>() as u32;
    attr
}

/// The kernel's id of the calling thread.
pub(crate) fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_without_its_only_cpu_is_none_and_steering_the_current_thread_moves_it() {
        let Some(all) = CpuSet::of_current_thread() else { return };
        let cpu = current_cpu().expect("sched_getcpu");
        assert!(all.contains(cpu));
        match all.without(cpu) {
            None => assert_eq!(all.count(), 1),
            Some(rest) => {
                assert_eq!(rest.count(), all.count() - 1);
                assert!(!rest.contains(cpu));
                // Steer this thread off `cpu` on a thread of its own (so the test's runner keeps
                // its mask): once the call returns, the kernel has moved it.
                let moved = std::thread::spawn(move || {
                    assert!(rest.apply_to(thread_id()));
                    current_cpu().expect("sched_getcpu")
                })
                .join()
                .expect("thread");
                assert_ne!(moved, cpu);
                assert!(rest.contains(moved));
            }
        }
    }
}
