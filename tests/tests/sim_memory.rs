//! Device memory of the software NPU at scale and across processes: many live allocations
//! (mappings are not memory), frames cleared when they change process, and the machine-wide
//! registry under processes that allocate, free and are SIGKILLed concurrently.

use aclrs_tests::{compile_c, run_ok, Link};

/// Whether the C programs run on the software NPU (these tests are about it); prints why not.
fn on_sim(test: &str) -> bool {
    match aclrs_tests::test_backend() {
        None => true,
        Some(b) => {
            eprintln!("{test}: SKIPPED — it tests the software NPU, and the backend is {b}");
            false
        }
    }
}

#[test]
fn a_hundred_thousand_live_128k_allocations_fit_on_16g() {
    if !on_sim("a_hundred_thousand_live_128k_allocations_fit_on_16g") {
        return;
    }
    let exe = compile_c("many_allocs", Link::Shared);
    let out = run_ok(&exe, "many", &[("ACLRS_SIM_HBM", "16G"), ("ACLRS_SIM_DEVICES", "1")]);
    eprintln!("{out}");
    assert!(out.contains("many_allocs: OK") || out.contains("OK"), "{out}");
}
