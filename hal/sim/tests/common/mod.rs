//! What the software NPU's integration tests share: a small instance with device 0 open.

use hal::DeviceId;
use hal_sim::{Sim, SimConfig};

/// Device 0, the one [`small_sim`] opens.
pub(crate) const D0: DeviceId = DeviceId(0);

/// A software NPU named `instance` (unique per test process: the caller adds its pid) with
/// 64 MiB of HBM, no huge-page budgets, and device 0 open.
///
/// # Panics
///
/// When the instance cannot be started or the device opened.
pub(crate) fn small_sim(instance: String) -> Sim {
    let sim = Sim::new(SimConfig {
        instance,
        hbm_bytes: 64 << 20,
        huge_budget_bytes: 0,
        giant_budget_bytes: 0,
        ..SimConfig::default()
    })
    .expect("start the software NPU");
    sim.open_device(D0).expect("open device");
    sim
}
