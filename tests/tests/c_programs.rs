//! The C programs of `tests/c/`, compiled against the headers and linked to `libascendcl` as a
//! user would, each run on its own private software NPU.

use aclrs_tests::{compile_c, run_ok, Link};

#[test]
fn basic_flow_malloc_copy_compare_free() {
    let exe = compile_c("basic_flow", Link::Shared);
    let out = run_ok(&exe, "basic", &[]);
    assert!(out.contains("OK"), "{out}");
}

#[test]
fn basic_flow_links_statically() {
    let exe = compile_c("basic_flow", Link::Static);
    run_ok(&exe, "basic-static", &[]);
}

#[test]
fn every_copy_direction() {
    let exe = compile_c("copy_directions", Link::Shared);
    run_ok(&exe, "copies", &[]);
}

#[test]
fn mem_info_moves_by_the_allocated_amount() {
    let exe = compile_c("mem_info", Link::Shared);
    run_ok(&exe, "meminfo", &[]);
}

#[test]
fn bad_inputs_get_documented_codes_and_change_nothing() {
    let exe = compile_c("bad_input", Link::Shared);
    run_ok(&exe, "bad", &[]);
}

/// The sizes the allocation-family program expects: 4 GiB of HBM, 512 MiB of 2 MiB pages,
/// 2 GiB of 1 GiB pages.
const BIG: [(&str, &str); 3] =
    [("ACLRS_SIM_HBM", "4G"), ("ACLRS_SIM_HUGE2M", "512M"), ("ACLRS_SIM_HUGE1G", "2G")];

#[test]
fn malloc_variants_and_queries_a2() {
    let exe = compile_c("malloc_variants", Link::Shared);
    run_ok(&exe, "variants-a2", &BIG);
}

#[test]
fn malloc_variants_and_queries_950() {
    let exe = compile_c("malloc_variants", Link::Shared);
    let mut env = BIG.to_vec();
    env.push(("ACLRS_SIM_SOC", "Ascend950PR"));
    run_ok(&exe, "variants-950", &env);
}

#[test]
fn ddr_only_devices_answer_hbm_queries_with_ddr_figures() {
    let exe = compile_c("ddr_info", Link::Shared);
    run_ok(&exe, "ddr", &[("ACLRS_SIM_MEMORY", "ddr")]);
}

#[test]
fn demo_prints_its_table() {
    let exe = compile_c("demo", Link::Shared);
    let out = run_ok(&exe, "demo", &[]);
    assert!(out.contains("demo: OK"), "{out}");
    assert!(out.contains("aclrtMemcpy"), "{out}");
}

#[test]
fn headers_compile_as_cpp() {
    let ws = aclrs_tests::workspace();
    let src = aclrs_tests::scratch_dir("ctests").join(format!("headers-{}.cpp", std::process::id()));
    std::fs::write(
        &src,
        "#include \"acl/acl.h\"\n#include \"acl/acl_sim.h\"\nint main() { aclrtMemMallocPolicy p = ACL_MEM_MALLOC_HUGE_FIRST; return (int)p; }\n",
    )
    .expect("write");
    let out = std::process::Command::new("c++")
        .args(["-std=c++11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
        .arg(ws.join("acl-shim/include"))
        .arg(&src)
        .output()
        .expect("run c++");
    let _ = std::fs::remove_file(&src);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn api_contracts_found_broken_by_the_adversarial_run() {
    let so = aclrs_tests::kernel_library("sim_kernels", "contracts");
    let exe = compile_c("api_contracts", Link::Shared);
    let out = run_ok(&exe, "contracts", &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))]);
    assert!(out.contains("api_contracts: OK"), "{out}");
}

#[test]
fn a_child_forked_after_init_is_refused() {
    let exe = compile_c("fork_child", Link::Shared);
    let out = run_ok(&exe, "fork", &[]);
    assert!(out.contains("fork_child (child): OK"), "{out}");
}

#[test]
fn stray_addresses_in_every_runtime_window_are_rejected() {
    let exe = compile_c("window_addresses", Link::Shared);
    run_ok(&exe, "windows", &[]);
}

#[test]
fn forced_resets_and_finalize_do_not_wait_for_a_parked_value_wait() {
    let exe = compile_c("reset_parked_wait", Link::Shared);
    let out = run_ok(&exe, "parked", &[]);
    assert!(out.contains("reset_parked_wait: OK"), "{out}");
}

#[test]
fn base_types_fp16_data_buffers_soc_and_versions() {
    let exe = compile_c("base_types", Link::Shared);
    let version = env!("CARGO_PKG_VERSION");
    for (soc, name) in
        [("Ascend910B", "Ascend910B1"), ("Ascend910_93", "Ascend910_9391"), ("Ascend950PR", "Ascend950PR")]
    {
        let out = aclrs_tests::run_with_args(
            &exe,
            &[name, version],
            &format!("base-{soc}"),
            &[("ACLRS_SIM_SOC", soc)],
        );
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("base_types: OK"), "{text}");
    }
}

#[test]
fn unsupported_calls_are_exported_and_return_207000() {
    let exe = compile_c("unsupported", Link::Shared);
    let out = run_ok(&exe, "unsupported", &[]);
    assert!(out.contains("unsupported: OK"), "{out}");
}

#[test]
fn app_log_formats_and_writes_application_lines() {
    let exe = compile_c("app_log", Link::Shared);
    let out =
        run_ok(&exe, "applog", &[("ASCEND_GLOBAL_LOG_LEVEL", "0"), ("ASCEND_SLOG_PRINT_TO_STDOUT", "1")]);
    assert!(out.contains("app_log: OK"), "{out}");
    let line = |needle: &str| {
        out.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{out}"))
    };
    assert!(line("[app.c:10] main: debug 1").starts_with("[DEBUG] "), "{out}");
    assert!(line("[app.c:11] main: info two").starts_with("[INFO] "), "{out}");
    assert!(line("[app.c:12] main: warning 3").starts_with("[WARNING] "), "{out}");
    assert!(line("[app.c:13] main: error 4").starts_with("[ERROR] "), "{out}");
    assert!(line("(level 9) [app.c:14] main: odd level").starts_with("[ERROR] "), "{out}");
    line(
        "[app.c:20] many: ints 1 2 3 4 5 6 7 8 9 10 11 12 doubles 0.5 1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 9.5 end",
    );
    line("[app.c:21] mixed: pi=3.25 ff %");
    let long = line("[app.c:22] long: ");
    let text = &long[long.find("long: ").expect("the prefix") + "long: ".len()..];
    assert_eq!(text.len(), 1023, "{long}");
    assert!(text.ends_with("xxx...[truncated]"), "{long}");
    assert!(!out.contains("nullfmt"), "{out}");
    assert!(line("] main: macro 42 args").contains("[app_log.c:"), "{out}");
    line("[raw.c:30] raw: 100% as is %d");
    assert!(!out.contains("[raw.c:31]"), "{out}");
    assert!(line("[app.c:40] after: after init 5").starts_with("[ERROR] "), "{out}");
    // The C half of aclAppLog is inside the static library too.
    let exe = compile_c("app_log", Link::Static);
    let out = run_ok(
        &exe,
        "applog-static",
        &[("ASCEND_GLOBAL_LOG_LEVEL", "1"), ("ASCEND_SLOG_PRINT_TO_STDOUT", "1")],
    );
    assert!(out.contains("[app.c:20] many: ints 1 2 3 4 5 6 7 8 9 10 11 12 doubles 0.5"), "{out}");
}

/// The kernels of `tests/c/kernels/args_kernels.c`, built once per test.
fn args_kernels(tag: &str) -> String {
    aclrs_tests::kernel_library("args_kernels", tag).to_str().expect("utf-8 path").to_owned()
}

#[test]
fn kernel_argument_lists_give_kernels_the_exact_bytes() {
    let so = args_kernels("kargs");
    let exe = compile_c("kernel_args", Link::Shared);
    let out = run_ok(&exe, "kernel-args", &[("ACLRS_TEST_KERNELS", so.as_str())]);
    assert!(out.contains("kernel_args: OK"), "{out}");
}

#[test]
fn resource_limits_default_to_the_profile_and_resolve_stream_over_process() {
    let so = args_kernels("reslimit");
    let exe = compile_c("res_limits", Link::Shared);
    for (soc, cube, vector) in [("Ascend910B", "24", "48"), ("Ascend950PR", "32", "64")] {
        let out = aclrs_tests::run_with_args(
            &exe,
            &[cube, vector],
            &format!("reslimit-{soc}"),
            &[("ACLRS_TEST_KERNELS", so.as_str()), ("ACLRS_SIM_SOC", soc)],
        );
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("res_limits: OK"), "{text}");
    }
}

#[test]
fn device_info_and_capabilities_come_from_the_soc_profile() {
    let exe = compile_c("device_info", Link::Shared);
    for (soc, args) in [
        ("Ascend910B", ["24", "48", "6", "201326592", "2201", "0"]),
        ("Ascend910_93", ["24", "48", "6", "201326592", "2201", "0"]),
        ("Ascend950PR", ["32", "64", "8", "134217728", "3510", "1"]),
    ] {
        let out =
            aclrs_tests::run_with_args(&exe, &args, &format!("devinfo-{soc}"), &[("ACLRS_SIM_SOC", soc)]);
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("device_info: OK"), "{text}");
    }
}

#[test]
fn error_verbose_reports_the_failed_kernel_task() {
    let so = args_kernels("errverbose");
    let exe = compile_c("error_verbose", Link::Shared);
    let env = [
        ("ACLRS_TEST_KERNELS", so.as_str()),
        ("ASCEND_GLOBAL_LOG_LEVEL", "1"),
        ("ASCEND_SLOG_PRINT_TO_STDOUT", "1"),
    ];
    let out = run_ok(&exe, "error-verbose", &env);
    assert!(out.contains("error_verbose: OK"), "{out}");
    // The details CANN's struct has no room for go to the log: the task, its code, the kernel.
    let details: Vec<&str> =
        out.lines().filter(|l| l.contains("aclrtGetErrorVerbose: device 0: a kernel")).collect();
    assert!(details.iter().any(|l| l.contains("failed with 507015 (kernel \"fault_kernel\")")), "{out}");
    assert!(details.iter().any(|l| l.contains("failed with 507899 (kernel \"fault_kernel\")")), "{out}");
}

#[test]
fn binaries_load_from_bytes_and_answer_the_function_queries() {
    let so = args_kernels("bindata");
    let exe = compile_c("binary_data", Link::Shared);
    let out = run_ok(&exe, "binary-data", &[("ACLRS_TEST_KERNELS", so.as_str())]);
    assert!(out.contains("binary_data: OK"), "{out}");
}

/// One executable, run on the default A2 profile and on A3 (where the A3-only calls work).
#[test]
fn memory_module_rest_and_runtime_behaviours() {
    let so = aclrs_tests::kernel_library("symbol_kernels", "memrest");
    let so = so.to_str().expect("utf-8 path");
    let exe = compile_c("memory_rest", Link::Shared);
    let out = run_ok(&exe, "memrest-a2", &[("ACLRS_TEST_KERNELS", so)]);
    assert!(out.contains("memory_rest: OK"), "{out}");
    let out = run_ok(&exe, "memrest-a3", &[("ACLRS_TEST_KERNELS", so), ("ACLRS_SIM_SOC", "A3")]);
    assert!(out.contains("memory_rest: OK"), "{out}");
}

#[test]
fn destroy_stream_force_runs_the_head_and_cancels_the_rest() {
    let exe = compile_c("stream_force", Link::Shared);
    let out = run_ok(&exe, "stream-force", &[("ACLRS_SIM_DEVICES", "2")]);
    assert!(out.contains("stream_force: OK"), "{out}");
}

#[test]
fn repeated_submissions_see_destroys_resets_reinit_and_device_changes() {
    let exe = compile_c("submit_cache", Link::Shared);
    let out = run_ok(&exe, "submit-cache", &[("ACLRS_SIM_DEVICES", "2")]);
    assert!(out.contains("submit_cache: OK"), "{out}");
}

#[test]
fn a_task_waiting_for_a_later_task_of_another_stream_always_finishes() {
    let exe = compile_c("cross_wait", Link::Shared);
    let out = run_ok(&exe, "cross-wait", &[]);
    assert!(out.contains("cross_wait: OK"), "{out}");
}

#[test]
fn calls_racing_finalize_answer_documented_codes_and_let_the_runtime_go() {
    let exe = compile_c("finalize_race", Link::Shared);
    let out = run_ok(&exe, "finalize-race", &[]);
    assert!(out.contains("finalize_race: OK"), "{out}");
}

#[test]
fn stream_control_callbacks_attributes_config_timed_waits_stop_and_abort() {
    let exe = compile_c("stream_ctl", Link::Shared);
    let out = run_ok(&exe, "stream-ctl", &[]);
    assert!(out.contains("stream_ctl: OK"), "{out}");
}

#[test]
fn host_function_threads_run_their_streams_host_functions() {
    let exe = compile_c("host_func", Link::Shared);
    let out = run_ok(&exe, "host-func", &[]);
    assert!(out.contains("host_func: OK"), "{out}");
}

#[test]
fn notifies_and_ipc_notifies_across_processes() {
    let exe = compile_c("notify", Link::Shared);
    let out = run_ok(&exe, "notify", &[]);
    assert!(out.contains("notify: OK"), "{out}");
    // Count notifies exist on the 950 profile only.
    let out = run_ok(&exe, "notify-950", &[("ACLRS_SIM_SOC", "Ascend950PR")]);
    assert!(out.contains("count notifies (Ascend 950)") && out.contains("notify: OK"), "{out}");
}

#[test]
fn ipc_events_recorded_in_one_process_are_waited_on_in_another() {
    let exe = compile_c("ipc_event", Link::Shared);
    let out = run_ok(&exe, "ipc-event", &[]);
    assert!(out.contains("ipc_event: OK") && out.contains("ipc_event (opener): OK"), "{out}");
}

#[test]
fn kernel_faults_fail_the_launch_with_507015_and_the_process_goes_on() {
    let so = aclrs_tests::kernel_library("memcheck_kernels", "fault");
    let exe = compile_c("memcheck_fault", Link::Shared);
    let out = run_ok(&exe, "kfault", &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))]);
    assert!(out.contains("memcheck_fault: OK"), "{out}");
}

/// The JSON findings of an `ACLRS_SANITIZE_LOG` file (its readable lines skipped).
fn findings(log: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("a JSON finding"))
        .collect()
}

/// The address the program printed after `label`.
fn printed(out: &str, label: &str) -> String {
    let line = out.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no '{label}' in\n{out}"));
    line[label.len()..].trim().to_owned()
}

#[test]
fn memcheck_and_leak_findings_carry_their_fields_and_the_process_goes_on() {
    let so = aclrs_tests::kernel_library("memcheck_kernels", "sanitize");
    let exe = compile_c("memcheck_sanitize", Link::Shared);
    let log = std::env::temp_dir().join(format!("aclrs-sanitize-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let out = run_ok(
        &exe,
        "sanitize",
        &[
            ("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path")),
            ("ACLRS_SANITIZE", "memcheck,leak"),
            ("ACLRS_SANITIZE_LOG", log.to_str().expect("utf-8 path")),
        ],
    );
    assert!(out.contains("memcheck_sanitize: OK") && out.contains("findings 13"), "{out}");
    let f = findings(&log);
    let _ = std::fs::remove_file(&log);
    let kinds: Vec<&str> = f.iter().map(|v| v["kind"].as_str().unwrap_or("")).collect();
    let mut want = vec!["out-of-bounds", "out-of-bounds", "use-after-free", "out-of-bounds"];
    want.extend(["out-of-bounds"; 2]);
    want.extend(["leak"; 7]);
    assert_eq!(kinds, want, "{f:#?}");
    let (b1, b2, b3, b5) = (
        printed(&out, "buffer1"),
        printed(&out, "buffer2"),
        printed(&out, "buffer3"),
        printed(&out, "buffer5"),
    );
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("an address");
    // 1: the redzone byte right after the 256 bytes, found at the synchronisation.
    assert_eq!(f[0]["allocation"]["base"], b1.as_str());
    assert_eq!(f[0]["allocation"]["size"], 256);
    assert_eq!(hex(f[0]["address"].as_str().unwrap_or("")), hex(&b1) + 256);
    assert!(f[0]["alloc_site"][0].as_str().is_some_and(|s| s.contains("main")), "{:#}", f[0]);
    assert_eq!(f[0]["device"], 0);
    // 2: the guard page after the buffer's page, at once, from a kernel.
    assert_eq!(f[1]["allocation"]["base"], b2.as_str());
    assert_eq!(hex(f[1]["address"].as_str().unwrap_or("")), hex(&b2) + 4096);
    assert_eq!(f[1]["task"], "kernel");
    // 3: freed memory, with both sites.
    assert_eq!(f[2]["allocation"]["base"], b3.as_str());
    assert_eq!(hex(f[2]["address"].as_str().unwrap_or("")), hex(&b3) + 16);
    assert!(f[2]["free_site"][0].as_str().is_some_and(|s| s.contains("main")), "{:#}", f[2]);
    // 4b: the pool block: its redzone byte at the synchronisation, then its guard page (the
    // first page boundary after its end) from a kernel, at once.
    let pb = printed(&out, "poolblock");
    assert_eq!(f[4]["allocation"]["base"], pb.as_str());
    assert_eq!(f[4]["allocation"]["size"], 256);
    assert_eq!(hex(f[4]["address"].as_str().unwrap_or("")), hex(&pb) + 256);
    assert!(f[4]["alloc_site"][0].as_str().is_some_and(|s| s.contains("main")), "{:#}", f[4]);
    assert_eq!(f[5]["allocation"]["base"], pb.as_str());
    assert_eq!(hex(f[5]["address"].as_str().unwrap_or("")), (hex(&pb) + 256).div_ceil(4096) * 4096);
    assert_eq!(f[5]["task"], "kernel");
    // 5: the leaks at aclrtResetDevice, every one on device 0 and naming what it is.
    let at_reset = &f[6..12];
    assert!(at_reset.iter().all(|v| v["device"] == 0 && v["detail"].as_str().is_some_and(|d| d.contains("aclrtResetDevice"))), "{at_reset:#?}");
    let find = |what: &str| {
        at_reset
            .iter()
            .find(|v| v["detail"].as_str().is_some_and(|d| d.contains(what)))
            .unwrap_or_else(|| panic!("no leak naming '{what}' in {at_reset:#?}"))
    };
    let ipc = printed(&out, "ipc5");
    // The allocations (device memory first, in address order), with their requested sizes.
    let allocs: Vec<_> = at_reset
        .iter()
        .filter(|v| v["detail"].as_str().is_some_and(|d| d.contains("allocation of")))
        .collect();
    assert_eq!(allocs.len(), 2, "{at_reset:#?}");
    let by_base = |b: &str| {
        allocs.iter().find(|v| v["allocation"]["base"] == b).unwrap_or_else(|| panic!("no leak of {b}"))
    };
    assert_eq!(by_base(&b5)["allocation"]["size"], 1000);
    assert_eq!(by_base(&ipc)["allocation"]["size"], 2 << 20);
    // The pool block: its base, its requested size (memcheck knows it) and where it was made.
    let blk = find("pool block");
    assert_eq!(blk["allocation"]["base"], printed(&out, "block5").as_str());
    assert_eq!(blk["allocation"]["size"], 3000);
    assert!(blk["alloc_site"][0].as_str().is_some_and(|s| s.contains("main")), "{blk:#}");
    assert_eq!(blk["address"], printed(&out, "block5").as_str());
    // The physical handle: no address, its size in words.
    let ph = find("physical handle");
    assert!(
        ph["detail"]
            .as_str()
            .is_some_and(|d| d.contains("aclrtMallocPhysical") && d.contains(&format!("{} bytes", 2 << 20))),
        "{ph:#}"
    );
    assert_eq!(ph["address"], "0x0");
    // The shareable handle still exported, named as the program holds it.
    let sh = find("shareable handle");
    let printed_sh = printed(&out, "shareable5").to_ascii_lowercase();
    assert!(
        sh["detail"].as_str().is_some_and(|d| d.to_ascii_lowercase().contains(&printed_sh)),
        "{sh:#} vs {printed_sh}"
    );
    // The IPC key still exported: its key, address and size.
    let key = find("IPC export key");
    assert!(key["detail"].as_str().is_some_and(|d| d.contains(&printed(&out, "key5"))), "{key:#}");
    assert_eq!(key["allocation"]["base"], ipc.as_str());
    assert_eq!(key["allocation"]["size"], 2 << 20);
    // 6: the pinned buffer at aclFinalize.
    assert_eq!(f[12]["allocation"]["base"], printed(&out, "host6").as_str());
    assert_eq!(f[12]["allocation"]["size"], 4096);

    // Off: nothing is reported, and a contained fault still fails its launch with 507015.
    let out = aclrs_tests::run_with_args(
        &exe,
        &["off"],
        "sanitize-off",
        &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))],
    );
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && text.contains("memcheck_sanitize: OK") && text.contains("findings 0"),
        "{text}"
    );
}

#[test]
fn unordered_use_of_pool_blocks_is_reported_with_stream_and_task() {
    let so = aclrs_tests::kernel_library("memcheck_kernels", "race");
    let so = so.to_str().expect("utf-8 path");
    let exe = compile_c("memcheck_race", Link::Shared);
    let log = std::env::temp_dir().join(format!("aclrs-race-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let env = [
        ("ACLRS_TEST_KERNELS", so),
        ("ACLRS_SANITIZE", "race"),
        ("ACLRS_SANITIZE_LOG", log.to_str().expect("utf-8 path")),
    ];
    let out = run_ok(&exe, "race", &env);
    assert!(out.contains("memcheck_race: OK") && out.contains("findings 3"), "{out}");
    let f = findings(&log);
    let _ = std::fs::remove_file(&log);
    assert_eq!(f.len(), 3, "{f:#?}");
    assert!(f.iter().all(|v| v["kind"] == "unordered-use" && v["stream"].is_string()), "{f:#?}");
    let tasks: Vec<&str> = f.iter().map(|v| v["task"].as_str().unwrap_or("")).collect();
    assert_eq!(tasks, ["memset", "kernel", "kernel"]);
    for (v, label, size) in [(&f[0], "block1", 4096), (&f[1], "block2", 4096), (&f[2], "block3", 8192)] {
        assert_eq!(v["allocation"]["base"], printed(&out, label).as_str(), "{v:#}");
        assert!(v["allocation"]["size"].as_u64().is_some_and(|s| s >= size), "{v:#}");
    }
    assert!(f[1]["detail"].as_str().is_some_and(|d| d.contains("aclrtMemPoolFreeAsync")), "{:#}", f[1]);
    let out = aclrs_tests::run_with_args(&exe, &["off"], "race-off", &[("ACLRS_TEST_KERNELS", so)]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && text.contains("memcheck_race: OK") && text.contains("findings 0"),
        "{text}"
    );
}
