//! `cargo xtask`: the single entry point for building, checking, testing and demonstrating
//! aclrs. CI runs `cargo xtask ci`; a new user runs `cargo xtask demo`.
//!
//! This crate owns orchestration only: it runs cargo, rustup and the C compiler, and must not
//! contain product logic.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::{Parser, Subcommand};

/// Build, check, test and demonstrate aclrs.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", version, about)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Build libascendcl (release) and run the seed's contrast and basic flow as C programs on the software NPU.
    Demo,
    /// Everything CI runs: lint rules, fmt, clippy, no_std builds, docs, all tests, C programs, hwtest, loom, Miri.
    Ci,
    /// The quick subset to run before pushing: fmt, clippy and the tests.
    Prepush,
    /// Check formatting.
    Fmt,
    /// Clippy over all targets and features with warnings denied.
    Lint,
    /// Build the no_std crates and the firmware example for aarch64-unknown-none.
    Nostd,
    /// Rustdoc with warnings denied.
    Doc,
    /// All Rust tests and the C programs.
    Test,
    /// Model-check sched's concurrency facade with loom (`--cfg loom`, the `loom_*` tests).
    Loom,
    /// Run every benchmark of tests/benches (release build) and write BENCHMARKS.md.
    Bench {
        /// A short run (the whole run well under two minutes).
        #[arg(long)]
        quick: bool,
        /// Also write BENCHMARKS.json (one record per table row) and print it on stdout (the
        /// Markdown then goes to stderr), so a script can compare two runs.
        #[arg(long)]
        json: bool,
    },
    /// Run the `hal` conformance suite on one backend: the software NPU, the davinci backend over
    /// the fake kernel, or the davinci backend on the real driver (skipped, with the reason, when
    /// `/dev/davinci_manager` is absent).
    Hwtest {
        /// The backend.
        #[arg(long, default_value = "sim", value_parser = ["sim", "davinci-fake", "davinci"])]
        backend: String,
    },
    /// Run mm's and sched's tests under Miri (skipped, with a message, when Miri is missing).
    Miri {
        /// Install the Miri component with rustup when it is missing.
        #[arg(long)]
        install: bool,
    },
}

/// The bare-metal target of the device's AI CPU.
const NOSTD_TARGET: &str = "aarch64-unknown-none";
/// Crates that must build without std.
const NOSTD_CRATES: [&str; 3] = ["hal", "mm", "sched"];

type Result<T = ()> = std::result::Result<T, String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

fn run(what: &str, cmd: &mut Command) -> Result {
    let start = Instant::now();
    eprintln!("xtask: {what}");
    let status = cmd.status().map_err(|e| format!("{what}: cannot start: {e}"))?;
    if !status.success() {
        return Err(format!("{what}: failed ({status})"));
    }
    eprintln!("xtask: {what}: ok ({:.1} s)", start.elapsed().as_secs_f64());
    Ok(())
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every workspace member's manifest must opt into the workspace lints.
fn check_lint_opt_in() -> Result {
    let members = ["hal", "hal/sim", "hal/davinci", "mm", "sched", "acl-shim", "tools/smi", "tests", "xtask"];
    for m in members {
        let path = root().join(m).join("Cargo.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !has_workspace_lints(&text) {
            return Err(format!("{}: missing `[lints] workspace = true`", path.display()));
        }
    }
    eprintln!("xtask: every member opts into [workspace.lints]: ok");
    Ok(())
}

fn has_workspace_lints(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && line.replace(' ', "") == "workspace=true" {
            return true;
        }
    }
    false
}

fn fmt() -> Result {
    run("cargo fmt --check", cargo().args(["fmt", "--all", "--", "--check"]))
}

fn lint() -> Result {
    run(
        "cargo clippy (all targets, all features, warnings denied)",
        cargo().args(["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"]),
    )
}

fn ensure_target() -> Result {
    let installed =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == NOSTD_TARGET) {
        return Ok(());
    }
    run(
        &format!("rustup target add {NOSTD_TARGET}"),
        Command::new("rustup").args(["target", "add", NOSTD_TARGET]),
    )
    .map_err(|e| {
        format!("{e}\nxtask: the no_std checks need the {NOSTD_TARGET} target and rustup could not add it")
    })
}

fn nostd() -> Result {
    ensure_target()?;
    let mut c = cargo();
    c.args(["build", "--target", NOSTD_TARGET]);
    for k in NOSTD_CRATES {
        c.args(["-p", k]);
    }
    run(&format!("no_std build of hal, mm, sched for {NOSTD_TARGET}"), &mut c)?;
    run(
        "firmware example (mm + sched + linked_list_allocator heap) for aarch64-unknown-none",
        cargo().args([
            "build",
            "--release",
            "-p",
            "sched",
            "--example",
            "firmware",
            "--features",
            "firmware-example",
            "--target",
            NOSTD_TARGET,
        ]),
    )?;
    run(
        "firmware example on the host",
        cargo().args([
            "run",
            "--quiet",
            "-p",
            "sched",
            "--example",
            "firmware",
            "--features",
            "firmware-example",
        ]),
    )
}

fn doc() -> Result {
    run(
        "cargo doc (warnings denied)",
        cargo().env("RUSTDOCFLAGS", "-D warnings").args([
            "doc",
            "--workspace",
            "--no-deps",
            "--exclude",
            "xtask",
        ]),
    )
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

fn test() -> Result {
    run("build libascendcl (debug)", cargo().args(["build", "-p", "acl-shim"]))?;
    let lib = target_dir().join("debug");
    run(
        "cargo test --workspace (Rust tests and the C programs)",
        cargo().env("ACLRS_LIB_DIR", &lib).args(["test", "--workspace"]),
    )
}

fn hwtest(backend: &str) -> Result {
    let mut cmd = cargo();
    cmd.args(["test", "-p", "hal-davinci", "--features", "fake-kernel", "--test", "conformance", "--"]);
    match backend {
        "sim" => cmd.args(["--exact", "sim"]),
        // Every davinci-fake test: the suite in both queue modes, IPC, shareable handles, ...
        "davinci-fake" => cmd.arg("davinci_fake"),
        _ => {
            if !Path::new("/dev/davinci_manager").exists() {
                eprintln!(
                    "xtask: hwtest davinci: skipped: /dev/davinci_manager is absent (no Ascend driver here)"
                );
                return Ok(());
            }
            cmd.args(["--exact", "davinci_real", "--ignored", "--nocapture"])
        }
    };
    run(&format!("hwtest --backend {backend} (the hal conformance suite)"), &mut cmd)?;
    if backend == "davinci" {
        // The C programs need a kernel loader for their kernels, which real hardware lacks here.
        eprintln!(
            "xtask: hwtest davinci: the C programs are not run on real hardware (no public kernel loader)"
        );
        return Ok(());
    }
    if backend == "sim" {
        return run(
            "hwtest --backend sim (the C programs against libascendcl, ACLRS_BACKEND=sim)",
            cargo().env("ACLRS_TEST_BACKEND", backend).args(["test", "-p", "aclrs-tests"]),
        );
    }
    // Both queue modes of the davinci backend: SQEs through the kernel, and the mapped ring.
    for queues in ["kernel", "ring"] {
        run(
            &format!(
                "hwtest --backend {backend} (the C programs against libascendcl, ACLRS_BACKEND={backend}, \
                 ACLRS_DAVINCI_QUEUES={queues})"
            ),
            cargo().env("ACLRS_TEST_BACKEND", backend).env("ACLRS_DAVINCI_QUEUES", queues).args([
                "test",
                "-p",
                "aclrs-tests",
            ]),
        )?;
    }
    Ok(())
}

fn miri(install: bool) -> Result {
    // Through rustup, so the nightly toolchain is used whatever cargo runs this task.
    let has =
        |()| output(Command::new("rustup").args(["run", "nightly", "cargo", "miri", "--version"])).is_some();
    if !has(()) && install {
        let _ = run(
            "rustup +nightly component add miri rust-src",
            Command::new("rustup").args(["+nightly", "component", "add", "miri", "rust-src"]),
        );
    }
    if !has(()) {
        eprintln!("xtask: miri: SKIPPED — the nightly toolchain with the miri component is not installed (try `cargo xtask miri --install`)");
        return Ok(());
    }
    let mut c = Command::new("rustup");
    // Drop what the outer (stable) cargo put in the environment, so cargo-miri uses the
    // nightly toolchain of `rustup run` for every inner call.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        let cargo_var = k.starts_with("CARGO") && k != "CARGO_HOME" && k != "CARGO_TARGET_DIR";
        let rust_var = k.starts_with("RUSTUP_TOOLCHAIN") || k.starts_with("RUSTC") || k == "RUSTDOC";
        if cargo_var || rust_var || k == "LD_LIBRARY_PATH" {
            c.env_remove(&k);
        }
    }
    // Miri builds into its own folder so it never invalidates the stable build.
    c.current_dir(root())
        .env("MIRIFLAGS", "-Zmiri-strict-provenance")
        .env("CARGO_TARGET_DIR", target_dir().join("miri"))
        .args(["run", "nightly", "cargo", "miri", "test", "-p", "mm", "-p", "sched", "--lib"]);
    run("cargo +nightly miri test -p mm -p sched --lib", &mut c)
}

fn loom() -> Result {
    // A target folder of its own: `--cfg loom` changes every crate's fingerprint.
    run(
        "loom models of sched (RUSTFLAGS=--cfg loom cargo test -p sched --lib loom)",
        cargo().env("RUSTFLAGS", "--cfg loom").env("CARGO_TARGET_DIR", target_dir().join("loom")).args([
            "test",
            "-p",
            "sched",
            "--lib",
            "--release",
            "--",
            "loom",
        ]),
    )
}

/// What this machine is, for the benchmark report.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = output(Command::new("uname").arg("-r")).unwrap_or_default();
    format!("{cpu}, {cores} cores, Linux {}", kernel.trim())
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Runs the benchmarks; each prints Markdown tables and, with `ACLRS_BENCH_JSON` set, one
/// `JSON: {...}` line per table row (see `tests/src/bench.rs`). The Markdown goes to
/// BENCHMARKS.md; with `json`, the rows with the run's machine, date and command go to
/// BENCHMARKS.json and stdout.
fn bench(quick: bool, json: bool) -> Result {
    let start = Instant::now();
    let mut c = cargo();
    c.args(["bench", "--quiet", "-p", "aclrs-tests", "--benches", "--"]);
    if quick {
        c.arg("--quick");
    }
    c.env("ACLRS_BENCH_JSON", "1");
    eprintln!("xtask: cargo bench -p aclrs-tests --benches{}", if quick { " -- --quick" } else { "" });
    let out = c.output().map_err(|e| format!("cargo bench: cannot start: {e}"))?;
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    let (rows, text): (Vec<&str>, Vec<&str>) = all.lines().partition(|l| l.starts_with("JSON: "));
    let text = text.join("\n") + "\n";
    if json {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        return Err(format!("cargo bench: failed ({})", out.status));
    }
    let date = output(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"])).unwrap_or_default();
    let command = match (quick, json) {
        (false, false) => "cargo xtask bench",
        (true, false) => "cargo xtask bench --quick",
        (false, true) => "cargo xtask bench --json",
        (true, true) => "cargo xtask bench --quick --json",
    };
    let report = format!(
        "# Benchmarks\n\nPrinted by `{command}` on {} ({}).\n\nEvery figure is measured in the same run as the \
         peer or floor it is compared with; ratios are what to read on a noisy machine. Times are medians \
         over repeated runs after warm-up, with the spread (min–max) shown. No benchmark asserts a time. \
         `cargo xtask bench --json` writes the same rows to BENCHMARKS.json.\n\n{text}",
        date.trim(),
        machine()
    );
    let path = root().join("BENCHMARKS.md");
    std::fs::write(&path, report).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("xtask: wrote {} ({:.0} s)", path.display(), start.elapsed().as_secs_f64());
    if json {
        let rows: Vec<&str> = rows.iter().map(|l| l.trim_start_matches("JSON: ")).collect();
        let doc = format!(
            "{{\"command\":{},\"date\":{},\"machine\":{},\"quick\":{quick},\"rows\":[\n{}\n]}}\n",
            json_string(command),
            json_string(date.trim()),
            json_string(&machine()),
            rows.join(",\n")
        );
        let path = root().join("BENCHMARKS.json");
        std::fs::write(&path, &doc).map_err(|e| format!("{}: {e}", path.display()))?;
        print!("{doc}");
        eprintln!("xtask: wrote {}", path.display());
    }
    Ok(())
}

/// Compiles one C file of `tests/c/` against the release library (or as a kernel library).
fn compile_demo_c(src: &str, out: &Path, lib: &Path, shared_kernel: bool) -> Result {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut c = Command::new(cc);
    c.args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"]).arg(root().join("acl-shim/include"));
    c.arg(root().join("tests/c").join(src)).arg("-o").arg(out);
    if shared_kernel {
        c.args(["-shared", "-fPIC"]);
    } else {
        c.arg("-L").arg(lib).arg("-lascendcl").arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    run(&format!("compile tests/c/{src}"), &mut c)
}

fn demo() -> Result {
    run("build libascendcl (release)", cargo().args(["build", "--release", "--quiet", "-p", "acl-shim"]))?;
    let lib = target_dir().join("release");
    let out_dir = target_dir().join("xtask-demo");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let (demo, bench, kernels) =
        (out_dir.join("demo"), out_dir.join("pool_bench"), out_dir.join("libpool_kernels.so"));
    compile_demo_c("demo.c", &demo, &lib, false)?;
    compile_demo_c("pool_bench.c", &bench, &lib, false)?;
    compile_demo_c("kernels/pool_kernels.c", &kernels, &lib, true)?;
    let instance =
        std::env::var("ACLRS_SIM_INSTANCE").unwrap_or_else(|_| format!("demo-{}", std::process::id()));
    // The headline: the seed's contrast, stream-ordered allocation against malloc/sync/free.
    run(
        "the seed's contrast on the software NPU (tests/c/pool_bench.c contrast)",
        Command::new(&bench)
            .args(["contrast", "2000"])
            .env("ACLRS_SIM_INSTANCE", &instance)
            .env("ACLRS_TEST_KERNELS", &kernels),
    )?;
    run(
        "the seed's basic flow on the software NPU (tests/c/demo.c)",
        Command::new(&demo).env("ACLRS_SIM_INSTANCE", &instance),
    )
}

fn ci() -> Result {
    let start = Instant::now();
    check_lint_opt_in()?;
    fmt()?;
    lint()?;
    nostd()?;
    doc()?;
    test()?;
    hwtest("sim")?;
    hwtest("davinci-fake")?;
    loom()?;
    miri(true)?;
    eprintln!("xtask: ci: all steps passed in {:.0} s", start.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.task {
        Task::Demo => demo(),
        Task::Ci => ci(),
        Task::Prepush => fmt().and_then(|()| lint()).and_then(|()| test()),
        Task::Fmt => fmt(),
        Task::Lint => lint(),
        Task::Nostd => nostd(),
        Task::Doc => doc(),
        Task::Test => test(),
        Task::Loom => loom(),
        Task::Hwtest { backend } => hwtest(&backend),
        Task::Miri { install } => miri(install),
        Task::Bench { quick, json } => bench(quick, json),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lint_opt_in_is_detected() {
        assert!(has_workspace_lints("[package]\nname = \"x\"\n\n[lints]\nworkspace = true\n"));
        assert!(!has_workspace_lints("[package]\nname = \"x\"\n"));
        assert!(!has_workspace_lints("[lints]\n[dependencies]\nworkspace = true\n"));
    }

    #[test]
    fn every_member_opts_in_now() {
        check_lint_opt_in().unwrap();
    }
}
