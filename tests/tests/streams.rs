//! Streams, events, kernels and asynchronous memory operations, driven by C programs linked to
//! `libascendcl` on a private software NPU. The kernels are built from C into a host shared
//! object here, as a user of the sim kernel ABI would.

use std::path::PathBuf;

use aclrs_tests::{compile_c, run_ok, Link};

/// Builds `tests/c/kernels/sim_kernels.c` into a shared object with `cc -shared -fPIC`.
fn kernel_library(tag: &str) -> PathBuf {
    aclrs_tests::kernel_library("sim_kernels", tag)
}

#[test]
fn add_custom_seed_example_runs_on_the_software_npu() {
    let so = kernel_library("add");
    let exe = compile_c("add_custom", Link::Shared);
    let out = run_ok(&exe, "add-custom", &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))]);
    assert!(out.contains("add_custom: OK"), "{out}");
}

#[test]
fn streams_events_kernels_and_async_copies() {
    let so = kernel_library("streams");
    let exe = compile_c("streams", Link::Shared);
    let out = run_ok(&exe, "streams", &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))]);
    assert!(out.contains("streams: OK"), "{out}");
}
