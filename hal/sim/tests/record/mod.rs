//! What the scheduler stress tests share: a host hook that records, per queue, which
//! submitter's which task ran, in the order the queue ran them.

use std::sync::{Arc, Mutex};

use hal::HostCall;
use hal_sim::Sim;

/// What one queue ran: (submitter, task number), in run order.
pub(crate) type Ran = Vec<(u64, u64)>;

/// The host call that `submitter`'s task `task` on queue index `queue` makes: `func` names the
/// queue, `data` the submitter (high half) and the task (low half).
pub(crate) fn call(queue: usize, submitter: u64, task: u64) -> HostCall {
    HostCall { func: queue as u64, data: (submitter << 32) | task, report: None }
}

/// Installs the recording hook on `sim` for queues `0..queues`, and returns the records.
pub(crate) fn record_host_calls(sim: &Sim, queues: usize) -> Arc<Vec<Mutex<Ran>>> {
    let ran: Arc<Vec<Mutex<Ran>>> = Arc::new((0..queues).map(|_| Mutex::new(Vec::new())).collect());
    let seen = Arc::clone(&ran);
    sim.set_host_hook(Arc::new(move |call: HostCall| {
        let q = usize::try_from(call.func).expect("queue index");
        seen[q].lock().expect("record").push((call.data >> 32, call.data & 0xffff_ffff));
        0
    }));
    ran
}
