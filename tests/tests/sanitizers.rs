//! aclrs under AddressSanitizer and valgrind: a C program built with `-fsanitize=address` runs
//! (the software NPU moves its VA windows off ASan's shadow, the same in both processes of an
//! IPC pair), and one runs under valgrind when valgrind is installed (`cargo xtask ci` installs
//! it and sets `ACLRS_REQUIRE_VALGRIND=1`, which makes a missing valgrind a failure).

use std::path::PathBuf;
use std::process::Command;

use aclrs_tests::{kernel_library, lib_dir, partial_path, publish, run, scratch_dir, workspace};

/// Compiles `tests/c/<name>.c` against the shared library with `extra` compiler flags.
fn compile_with(name: &str, tag: &str, extra: &[&str]) -> PathBuf {
    let ws = workspace();
    let exe = scratch_dir("ctests").join(format!("{name}-{tag}"));
    let partial = partial_path(&exe);
    let lib = lib_dir();
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .arg("-I")
        .arg(ws.join("acl-shim/include"))
        .arg(ws.join("tests/c").join(format!("{name}.c")))
        .arg("-o")
        .arg(&partial)
        .arg("-L")
        .arg(lib)
        .arg("-lascendcl")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-Wl,--disable-new-dtags")
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {name}.c with {extra:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    publish(&partial, &exe)
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_program_built_with_address_sanitizer_runs_faults_and_ipc_included() {
    let so = kernel_library("memcheck_kernels", "asan");
    let exe = compile_with("memcheck_fault", "asan", &["-fsanitize=address", "-fno-omit-frame-pointer"]);
    let out = run(&exe, "asan", &[("ACLRS_TEST_KERNELS", so.to_str().expect("utf-8 path"))]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("memcheck_fault: OK") && t.contains("memcheck_fault (importer): OK"), "{t}");
    assert!(!t.contains("ERROR: AddressSanitizer"), "{t}");
    // The windows moved off the shadow (which covers 0x2008fff7000-0x10007fff8000): every
    // faulting address the program saw lies above it.
    let addrs: Vec<u64> = t
        .match_indices("memory at 0x")
        .filter_map(|(i, m)| {
            let hex: String = t[i + m.len()..].chars().take_while(char::is_ascii_hexdigit).collect();
            u64::from_str_radix(&hex, 16).ok()
        })
        .collect();
    assert!(!addrs.is_empty() && addrs.iter().all(|&a| a >= 0x1000_7fff_8000), "{addrs:x?}\n{t}");
}

#[test]
fn a_program_runs_under_valgrind_when_it_is_installed() {
    let have = Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("ACLRS_REQUIRE_VALGRIND").is_err(),
            "valgrind is required (ACLRS_REQUIRE_VALGRIND) but not installed"
        );
        eprintln!("valgrind is not installed: skipped (cargo xtask ci installs it)");
        return;
    }
    let exe = compile_with("basic_flow", "valgrind", &[]);
    let mut cmd = Command::new("valgrind");
    cmd.args(["-q", "--error-exitcode=99"]).arg(&exe);
    cmd.env("ACLRS_SIM_INSTANCE", format!("t{}-valgrind", std::process::id()))
        .env("ACLRS_SIM_HBM", "1G")
        .env("ACLRS_SIM_HUGE2M", "512M")
        .env("ACLRS_SIM_HUGE1G", "0")
        .env_remove("ASCEND_RT_VISIBLE_DEVICES")
        .env_remove("ACLRS_SIM_DEVICES");
    aclrs_tests::quiet_log(&mut cmd);
    let out = cmd.output().expect("run valgrind");
    let t = text(&out);
    assert!(out.status.success(), "valgrind: {}\n{t}", out.status);
    assert!(t.contains("basic_flow: OK"), "{t}");
}
