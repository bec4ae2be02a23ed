//! Stream-ordered memory pools through the C ABI: the pool program (reuse modes against a slow
//! kernel, threshold and trim, stream-ordered frees, threads), the seed's two pool programs in
//! C++, and the A2-only rule. Kernels are built from C into a host shared object.

use aclrs_tests::{compile_c, compile_cpp, kernel_library, run, run_ok, Link};

#[test]
fn pools_reuse_modes_threshold_trim_and_threads() {
    let so = kernel_library("pool_kernels", "pools");
    let exe = compile_c("pools", Link::Shared);
    let out = run_ok(&exe, "pools", &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))]);
    assert!(out.contains("pools: OK"), "{out}");
    assert!(out.contains("0 tag mismatches"), "{out}");
    // The section on where pool blocks live ran (its checks are counted in "pools: OK").
    assert!(out.contains("block at 0x") && out.contains("pool slice of device 0 from 0x"), "{out}");
}

#[test]
fn seed_programs_run_unchanged_but_for_kernel_loading() {
    let so = kernel_library("pool_kernels", "seed");
    let kernels = so.to_str().expect("utf-8 path");
    for (name, ok) in [
        ("seed_pool_basic", "seed_pool_basic: z = {11.5, 22}: OK"),
        ("seed_pool_full", "seed_pool_full: z = {6, 8}: OK"),
    ] {
        let exe = compile_cpp(name);
        // The seed programs make a 14 GiB pool: give the device room (sparse HBM costs nothing).
        let out = run_ok(&exe, name, &[("ACLRS_TEST_KERNELS", kernels), ("ACLRS_SIM_HBM", "16G")]);
        assert!(out.contains(ok), "{out}");
    }
}

#[test]
fn pools_are_a2_only() {
    let so = kernel_library("pool_kernels", "soc");
    let exe = compile_cpp("seed_pool_basic");
    let kernels = so.to_str().expect("utf-8 path");
    for soc in ["Ascend910_93", "Ascend950PR"] {
        let out = run(
            &exe,
            &format!("soc-{soc}"),
            &[("ACLRS_TEST_KERNELS", kernels), ("ACLRS_SIM_HBM", "16G"), ("ACLRS_SIM_SOC", soc)],
        );
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "pools must be refused on {soc}");
        assert!(text.contains("Failed to create memory pool"), "{text}");
    }
}
