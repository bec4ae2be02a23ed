//! Task submission and completion on the software NPU (empty host functions and 4-byte memsets
//! on one and four streams) against a plain bounded SPSC ring, and asynchronous copy bandwidth
//! (64 MiB pinned<->device and device<->device; a batch of 4096 x 4 KiB) against `memcpy` of the
//! same bytes, and the launch-to-start latency of a host function and of a kernel on an idle
//! stream against a ring + futex hand-off to a parked thread, and on one stream the submitting
//! thread's cost and the device threads' cost apart (tasks held behind a host function, then
//! drained), all measured in the same run by
//! `tests/c/stream_bench.c` through the C ABI of the release `libascendcl` (the kernel is
//! `tests/c/kernels/bench_kernels.c`'s). Prints Markdown tables; asserts nothing about time.
//!
//! Run with `cargo bench -p aclrs-tests --bench streams` (add `-- --quick` for a short run).

use std::process::Command;

use aclrs_tests::bench::{quick, Table};
use aclrs_tests::{compile_bench_c, kernel_library};

fn main() {
    let exe = compile_bench_c("stream_bench");
    let kernels = kernel_library("bench_kernels", "streams");
    let (tasks, rounds) = if quick() { ("20000", "3") } else { ("200000", "7") };
    let out = Command::new(&exe)
        .args([tasks, rounds])
        .env("ACLRS_SIM_INSTANCE", format!("bench-streams-{}", std::process::id()))
        .env("ACLRS_SIM_HBM", "4G")
        .env("ACLRS_TEST_KERNELS", &kernels)
        .env_remove("ACLRS_SIM_SOC")
        .output()
        .expect("run stream_bench");
    for (title, table) in Table::parse_markdown(&String::from_utf8_lossy(&out.stdout)) {
        table.print("streams", &title);
    }
    if !out.status.success() {
        eprintln!("stream_bench failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}
