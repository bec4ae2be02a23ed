//! The asymmetric fence: [`light`] on the readers' path, [`heavy`] on the writer's. Together
//! they order like a pair of sequentially consistent fences.
//!
//! On Linux 4.14 and later, `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` makes every running
//! thread of the process execute a full memory barrier before it returns, so a reader needs
//! only a compiler fence. Where the kernel has no such command (or refuses to register the
//! process for it), both sides are real sequentially consistent fences. The choice is made
//! once, by the first call of either function, and never changes.
//!
//! (The `membarrier` crate does this too, but it links a Windows library on every target and
//! aborts the process when the call fails; here a failed heavy fence is reported instead.)

#[cfg(not(loom))]
use std::sync::atomic::{compiler_fence, fence};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Once;

/// Not decided yet.
const UNKNOWN: u8 = 0;
/// `membarrier` registered: readers use a compiler fence.
const MEMBARRIER: u8 = 1;
/// Real fences on both sides.
const FENCES: u8 = 2;

static STRATEGY: AtomicU8 = AtomicU8::new(UNKNOWN);
static DECIDE: Once = Once::new();

#[cfg(target_os = "linux")]
mod sys {
    /// `MEMBARRIER_CMD_QUERY` (linux/membarrier.h).
    const QUERY: libc::c_int = 0;
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`.
    pub(super) const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    /// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// `membarrier(cmd, 0, 0)`: its result, or -1.
    pub(super) fn membarrier(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: membarrier takes three integers and touches no memory of ours; an unknown
        // command or a kernel without the call fails with -1 (ENOSYS, EINVAL, EPERM).
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint, 0 as libc::c_int) }
    }

    /// Whether this process can use private expedited barriers (registering it).
    pub(super) fn register() -> bool {
        let cmds = membarrier(QUERY);
        let need = libc::c_long::from(PRIVATE_EXPEDITED | REGISTER_PRIVATE_EXPEDITED);
        cmds >= 0 && cmds & need == need && membarrier(REGISTER_PRIVATE_EXPEDITED) == 0
    }
}

/// The strategy, decided on first use.
#[inline(always)]
fn strategy() -> u8 {
    match STRATEGY.load(Ordering::Acquire) {
        UNKNOWN => decide(),
        s => s,
    }
}

#[cold]
#[inline(never)]
fn decide() -> u8 {
    DECIDE.call_once(|| {
        #[cfg(target_os = "linux")]
        let s = if sys::register() { MEMBARRIER } else { FENCES };
        #[cfg(not(target_os = "linux"))]
        let s = FENCES;
        STRATEGY.store(s, Ordering::Release);
    });
    STRATEGY.load(Ordering::Acquire)
}

/// Whether readers get away with a compiler fence (`membarrier` in use).
pub fn is_asymmetric() -> bool {
    strategy() == MEMBARRIER
}

/// The readers' side: a compiler fence where [`heavy`] is a process-wide barrier, else a
/// sequentially consistent fence.
#[inline(always)]
pub fn light() {
    #[cfg(loom)]
    loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
    #[cfg(not(loom))]
    if strategy() == MEMBARRIER {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The writer's side: a barrier on every thread of the process (a system call), or a
/// sequentially consistent fence where readers fence too. `false` when the process-wide
/// barrier failed (the kernel refused it after registering the process): then the writer must
/// not rely on it, as readers used compiler fences only.
#[must_use]
pub fn heavy() -> bool {
    #[cfg(loom)]
    {
        loom::sync::atomic::fence(loom::sync::atomic::Ordering::SeqCst);
        true
    }
    #[cfg(not(loom))]
    {
        fence(Ordering::SeqCst);
        match strategy() {
            #[cfg(target_os = "linux")]
            MEMBARRIER => sys::membarrier(sys::PRIVATE_EXPEDITED) == 0,
            _ => true,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn the_strategy_is_decided_once_and_the_heavy_fence_works() {
        let first = super::is_asymmetric();
        assert!(super::heavy());
        super::light();
        assert_eq!(super::is_asymmetric(), first, "the strategy never changes");
    }
}
