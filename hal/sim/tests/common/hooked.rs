//! What the software NPU's tests that install a host hook share (a module of its own, included
//! with `#[path]` by those binaries only): the guard that serialises them, the instance with the
//! hook installed, and a host-call submission.

use std::sync::{Arc, Mutex, MutexGuard};

use hal::{HostCall, QueueId, Queues, TaskDesc};
use hal_sim::Sim;

use crate::common::{small_sim, D0};

/// Serialises the tests of one binary that install a host hook (the hook is process-wide).
static SERIAL: Mutex<()> = Mutex::new(());

/// A [`small_sim`] named `instance` whose host hook is `call` on `hook`, and the guard that
/// keeps the binary's other hook-installing tests out meanwhile. The guard comes first, so a
/// caller that binds both drops it last (after the `Sim`).
pub(crate) fn sim_with_hook<H: Send + Sync + 'static>(
    instance: String,
    hook: &Arc<H>,
    call: fn(&H, HostCall) -> i32,
) -> (MutexGuard<'static, ()>, Sim) {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let sim = small_sim(instance);
    let h = Arc::clone(hook);
    sim.set_host_hook(Arc::new(move |c: HostCall| call(&h, c)));
    (guard, sim)
}

/// Submits the host call `func(data)` to `q` on device 0; answers its sequence number.
pub(crate) fn host(sim: &Sim, q: QueueId, func: u64, data: u64) -> u64 {
    sim.submit(D0, q, TaskDesc::HostFunc { call: HostCall { func, data, report: None } }).expect("submit")
}
