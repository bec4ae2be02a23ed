//! Copy bandwidth through the C ABI (`tests/c/copy_bench.c` against the release `libascendcl`
//! on the software NPU) against `memcpy` between host buffers of the same size, measured in the
//! same run: `memcpy` is the physical limit of this machine. Prints a Markdown table; asserts
//! nothing about time.

use std::process::Command;

use aclrs_tests::bench::{quick, Table};
use aclrs_tests::compile_bench_c;

fn main() {
    let exe = compile_bench_c("copy_bench");
    let (mib, rounds) = if quick() { ("32", "5") } else { ("128", "15") };
    let out = Command::new(&exe)
        .args([mib, rounds])
        .env("ACLRS_SIM_INSTANCE", format!("bench-copy-{}", std::process::id()))
        .env("ACLRS_SIM_HBM", "4G")
        .env_remove("ACLRS_SIM_SOC")
        .output()
        .expect("run copy_bench");
    for (title, table) in Table::parse_markdown(&String::from_utf8_lossy(&out.stdout)) {
        table.print("copy", &title);
    }
    if !out.status.success() {
        eprintln!("copy_bench failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}
