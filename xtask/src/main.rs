//! `cargo xtask`: the single entry point for building, checking, testing and demonstrating
//! aclrs. CI runs `cargo xtask ci`; a new user runs `cargo xtask demo`.
//!
//! This crate owns orchestration only: it runs cargo, rustup and the C compiler, and must not
//! contain product logic. Every build it starts shows cargo's progress, and each long step is
//! announced (`xtask: ...`) before it starts.
//!
//! # `cargo xtask install --prefix DIR`
//!
//! Lays DIR out as a CANN toolkit folder: `include/acl/...`, `lib64/libascendcl.so.X.Y.Z` with
//! the SONAME `libascendcl.so.<v>` (`<v>` is `0.y` before 1.0, the major number after: the part
//! whose change breaks the ABI, as cargo-c names it) and the `libascendcl.so.<v>` and
//! `libascendcl.so` links, `lib64/libacl_rt.so`, `lib64/libascendcl.a`,
//! `lib64/pkgconfig/ascendcl.pc`, `share/cmake/ascendcl/` (for `find_package(ascendcl)`),
//! `set_env.sh` and `bin/setenv.bash`, and `<arch>-linux/include` and `<arch>-linux/lib64` links.
//!
//! - `libacl_rt.so` (CANN's newer runtime name) is a link to the same file, not a copy: a program
//!   linked with `-lacl_rt` records the SONAME `libascendcl.so.<v>`, so a program (or two of its
//!   libraries) linked with both names still loads one runtime, with one device state.
//! - The SONAME is written into the installed copy with `patchelf` (a Debian package, installed
//!   when missing), not by a linker flag in `acl-shim`'s build: a SONAME'd
//!   `target/<profile>/libascendcl.so` would make every program linked against the build folder
//!   (the C tests, the demo, a user following the README) look for `libascendcl.so.<v>`, which
//!   cargo never creates there; and the installed file stays the one the tests ran.
//! - The SONAME and `ascendcl.pc` are written here rather than with cargo-c: cargo-c is not in
//!   the Debian packages and installing it from crates.io compiles it (several minutes on two
//!   cores) on every clean CI run, for two lines of linker metadata and a ten-line text file.
//!   `ascendcl.pc` is relocatable (`${pcfiledir}`); `set_env.sh` names the install's absolute
//!   path, as CANN's does.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
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
    /// Everything CI runs: lint rules, fmt, clippy, no_std builds, docs, all tests, C programs, the shipped-library check, the install test, hwtest, loom, Miri.
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
    /// Lay out a CANN-shaped toolkit folder: headers, versioned libascendcl (also as libacl_rt),
    /// pkg-config file and set_env.sh, so that CANN's CMake projects build against it unchanged.
    Install {
        /// The folder to install into (becomes ASCEND_HOME_PATH / ASCEND_CANN_PACKAGE_PATH).
        #[arg(long)]
        prefix: PathBuf,
        /// Install the debug build instead of the release build.
        #[arg(long)]
        debug: bool,
    },
    /// Check that the shipped library (default features) holds no test code: no fake kernel in
    /// `cargo tree`, none of its symbols in `libascendcl.so` (`nm -D`, `nm`).
    Shipped,
    /// Check a fresh install as a CANN user would: a CMake project written as CANN's samples
    /// are, and a C program built with pkg-config (cmake and pkg-config installed when missing).
    InstallTest,
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
        cargo().args(["run", "-p", "sched", "--example", "firmware", "--features", "firmware-example"]),
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

/// Makes the sanitizer step of the tests (`tests/tests/sanitizers.rs`: a C program built with
/// `-fsanitize=address`, one under valgrind) complete: installs valgrind from the Debian
/// packages when it is missing and then requires it (`ACLRS_REQUIRE_VALGRIND`); when it cannot
/// be installed, says so and the valgrind run is skipped.
fn sanitizer_tools() {
    match ensure_debian_tools(&["valgrind"]) {
        // xtask runs one thread; the variable reaches the test processes it starts.
        Ok(()) => std::env::set_var("ACLRS_REQUIRE_VALGRIND", "1"),
        Err(e) => eprintln!("xtask: ci: the valgrind run is skipped: {e}"),
    }
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
    // Miri builds into its own folder so it never invalidates the stable build. `--tests`: the
    // crates' unit tests and their model tests (mm/tests, sched/tests), which run fewer and
    // shorter cases under Miri (`cfg!(miri)`).
    c.current_dir(root())
        .env("MIRIFLAGS", "-Zmiri-strict-provenance")
        .env("CARGO_TARGET_DIR", target_dir().join("miri"))
        .args(["run", "nightly", "cargo", "miri", "test", "-p", "mm", "-p", "sched", "--tests"]);
    run("cargo +nightly miri test -p mm -p sched --tests", &mut c)
}

fn loom() -> Result {
    // A target folder of its own: `--cfg loom` changes every crate's fingerprint.
    let model =
        |what: &str, krate: &str| {
            run(
                what,
                cargo()
                    .env("RUSTFLAGS", "--cfg loom")
                    .env("CARGO_TARGET_DIR", target_dir().join("loom"))
                    .args(["test", "-p", krate, "--lib", "--release", "--", "loom"]),
            )
        };
    model("loom models of sched (RUSTFLAGS=--cfg loom cargo test -p sched --lib loom)", "sched")?;
    model("loom models of hazard (RUSTFLAGS=--cfg loom cargo test -p hazard --lib loom)", "hazard")
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
    // The C benchmarks link the release library; build it here, where cargo's progress shows.
    run(
        "build libascendcl (release) for the C benchmarks",
        cargo().args(["build", "--release", "-p", "acl-shim"]),
    )?;
    let mut c = cargo();
    c.args(["bench", "-p", "aclrs-tests", "--benches", "--"]);
    if quick {
        c.arg("--quick");
    }
    c.env("ACLRS_BENCH_JSON", "1");
    eprintln!("xtask: cargo bench -p aclrs-tests --benches{}", if quick { " -- --quick" } else { "" });
    // stdout carries the tables; cargo's progress and the benchmarks' notes go to the terminal.
    let out = c.stderr(Stdio::inherit()).output().map_err(|e| format!("cargo bench: cannot start: {e}"))?;
    let all = String::from_utf8_lossy(&out.stdout).into_owned();
    let (rows, text): (Vec<&str>, Vec<&str>) = all.lines().partition(|l| l.starts_with("JSON: "));
    let text = text.join("\n") + "\n";
    if json {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if !out.status.success() {
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
    run("build libascendcl (release)", cargo().args(["build", "--release", "-p", "acl-shim"]))?;
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

/// The library's version: the workspace version (`acl-shim`'s).
const LIB_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The SONAME's version: the part of [`LIB_VERSION`] that semver says breaks compatibility when
/// it changes (`0.y` before 1.0, the major number after), as cargo-c names it.
fn soname_version(version: &str) -> String {
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("0");
    match (major, parts.next()) {
        ("0", Some(minor)) => format!("0.{minor}"),
        _ => major.to_owned(),
    }
}

/// The Debian packages behind the tools the install and its test need.
const DEBIAN_TOOLS: [(&str, &str); 4] =
    [("cmake", "cmake"), ("pkg-config", "pkg-config"), ("patchelf", "patchelf"), ("valgrind", "valgrind")];

fn has_tool(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs the Debian packages of the `tools` that are missing (`apt-get update` once, then
/// `apt-get install -y`); fails, naming them, when that is not possible.
fn ensure_debian_tools(tools: &[&str]) -> Result {
    let missing: Vec<&str> = DEBIAN_TOOLS
        .iter()
        .filter(|(tool, _)| tools.contains(tool) && !has_tool(tool))
        .map(|&(_, package)| package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    let how = format!("install the Debian packages {list} (apt-get install {list}) and run again");
    if !has_tool("apt-get") {
        return Err(format!("{list}: missing, and there is no apt-get here: {how}"));
    }
    run("apt-get update (to install the missing tools)", Command::new("apt-get").args(["update", "-q"]))
        .map_err(|e| format!("{e}\nxtask: {how}"))?;
    run(
        &format!("apt-get install -y {list}"),
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q"])
            .args(&missing),
    )
    .map_err(|e| format!("{e}\nxtask: {how}"))
}

fn io_err(what: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", what.display())
}

/// Copies every file under `from` into `to`, keeping the folder structure.
fn copy_tree(from: &Path, to: &Path) -> Result {
    std::fs::create_dir_all(to).map_err(io_err(to))?;
    for entry in std::fs::read_dir(from).map_err(io_err(from))? {
        let entry = entry.map_err(io_err(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(io_err(&dst))?;
        }
    }
    Ok(())
}

/// Writes `text` to `path`, with the executable bit when `exec`.
fn write_file(path: &Path, text: &str, exec: bool) -> Result {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(io_err(path))?;
    let mode = if exec { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io_err(path))
}

/// (Re)creates the symbolic link `link` pointing at `target` (a relative path).
fn symlink(target: &str, link: &Path) -> Result {
    if link.symlink_metadata().is_ok() {
        let removed = if link.is_dir() && !link.is_symlink() {
            std::fs::remove_dir_all(link)
        } else {
            std::fs::remove_file(link)
        };
        removed.map_err(io_err(link))?;
    }
    std::os::unix::fs::symlink(target, link).map_err(io_err(link))
}

/// `set_env.sh` / `bin/setenv.bash`: the variables CANN's scripts and CMake files read.
fn set_env_script(prefix: &Path) -> String {
    let p = prefix.display();
    format!(
        "# Generated by `cargo xtask install`: the environment of this aclrs install, as CANN's\n\
         # set_env.sh gives it. Source it: `source {p}/set_env.sh`.\n\
         export ASCEND_HOME_PATH=\"{p}\"\n\
         export ASCEND_TOOLKIT_HOME=\"{p}\"\n\
         export ASCEND_CANN_PACKAGE_PATH=\"{p}\"\n\
         export LD_LIBRARY_PATH=\"{p}/lib64${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\n\
         export PKG_CONFIG_PATH=\"{p}/lib64/pkgconfig${{PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}}\"\n\
         export CMAKE_PREFIX_PATH=\"{p}${{CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}}\"\n\
         export PATH=\"{p}/bin${{PATH:+:$PATH}}\"\n"
    )
}

/// `lib64/pkgconfig/ascendcl.pc`, relocatable (`${pcfiledir}`).
fn pkg_config_file() -> String {
    format!(
        "# Generated by `cargo xtask install`.\n\
         prefix=${{pcfiledir}}/../..\n\
         libdir=${{prefix}}/lib64\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: ascendcl\n\
         Description: aclrs libascendcl: CANN's AscendCL runtime and memory API on the software NPU\n\
         Version: {LIB_VERSION}\n\
         Libs: -L${{libdir}} -lascendcl\n\
         Libs.private: -lpthread -ldl -lm -lrt\n\
         Cflags: -I${{includedir}}\n"
    )
}

/// `share/cmake/ascendcl/ascendcl-config.cmake`: `find_package(ascendcl CONFIG)` gives the
/// imported targets `ascendcl::ascendcl` (shared) and `ascendcl::ascendcl_static`.
fn cmake_config_file(real: &str, soname: &str) -> String {
    format!(
        "# Generated by `cargo xtask install`: find_package(ascendcl CONFIG) for aclrs's libascendcl.\n\
         get_filename_component(_ascendcl_prefix \"${{CMAKE_CURRENT_LIST_DIR}}/../../..\" ABSOLUTE)\n\
         if(NOT TARGET ascendcl::ascendcl)\n\
         \x20 add_library(ascendcl::ascendcl SHARED IMPORTED)\n\
         \x20 set_target_properties(ascendcl::ascendcl PROPERTIES\n\
         \x20   IMPORTED_LOCATION \"${{_ascendcl_prefix}}/lib64/{real}\"\n\
         \x20   IMPORTED_SONAME \"{soname}\"\n\
         \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_ascendcl_prefix}}/include\")\n\
         \x20 add_library(ascendcl::ascendcl_static STATIC IMPORTED)\n\
         \x20 set_target_properties(ascendcl::ascendcl_static PROPERTIES\n\
         \x20   IMPORTED_LOCATION \"${{_ascendcl_prefix}}/lib64/libascendcl.a\"\n\
         \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_ascendcl_prefix}}/include\"\n\
         \x20   INTERFACE_LINK_LIBRARIES \"pthread;dl;m;rt\")\n\
         endif()\n\
         set(ascendcl_INCLUDE_DIRS \"${{_ascendcl_prefix}}/include\")\n\
         set(ascendcl_LIBRARIES ascendcl::ascendcl)\n\
         unset(_ascendcl_prefix)\n"
    )
}

/// `ascendcl-config-version.cmake`: compatible when the SONAME version matches and the installed
/// version is at least the one asked for.
fn cmake_version_file(soname_version: &str) -> String {
    format!(
        "# Generated by `cargo xtask install`.\n\
         set(PACKAGE_VERSION \"{LIB_VERSION}\")\n\
         set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
         if(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n\
         \x20 string(FIND \"${{PACKAGE_FIND_VERSION}}.\" \"{soname_version}.\" _ascendcl_at)\n\
         \x20 if(_ascendcl_at EQUAL 0)\n\
         \x20   set(PACKAGE_VERSION_COMPATIBLE TRUE)\n\
         \x20 endif()\n\
         \x20 unset(_ascendcl_at)\n\
         endif()\n\
         if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)\n\
         \x20 set(PACKAGE_VERSION_EXACT TRUE)\n\
         endif()\n"
    )
}

/// `cargo xtask install`: builds libascendcl and lays `prefix` out as a CANN toolkit folder.
/// Returns the absolute prefix.
fn install(prefix: &Path, debug: bool) -> Result<PathBuf> {
    ensure_debian_tools(&["patchelf"])?;
    let profile = if debug { "debug" } else { "release" };
    let mut build = cargo();
    build.args(["build", "-p", "acl-shim", "-p", "aclrs-smi"]);
    if !debug {
        build.arg("--release");
    }
    run(&format!("build libascendcl and aclrs-smi ({profile})"), &mut build)?;
    std::fs::create_dir_all(prefix).map_err(io_err(prefix))?;
    let prefix = prefix.canonicalize().map_err(io_err(prefix))?;
    eprintln!("xtask: install libascendcl {LIB_VERSION} ({profile}) into {}", prefix.display());
    let built = target_dir().join(profile);
    let (lib64, bin) = (prefix.join("lib64"), prefix.join("bin"));
    for d in [&lib64, &lib64.join("pkgconfig"), &bin] {
        std::fs::create_dir_all(d).map_err(io_err(d))?;
    }
    copy_tree(&root().join("acl-shim/include"), &prefix.join("include"))?;
    // The shared library: libascendcl.so.X.Y.Z with its SONAME, libascendcl.so.<soname version>
    // and libascendcl.so pointing at it, and libacl_rt.so too (see the module docs).
    let so_version = soname_version(LIB_VERSION);
    let (real, soname) = (format!("libascendcl.so.{LIB_VERSION}"), format!("libascendcl.so.{so_version}"));
    let real_path = lib64.join(&real);
    // Replaced, never written through: a running program may have the old file mapped.
    let _ = std::fs::remove_file(&real_path);
    std::fs::copy(built.join("libascendcl.so"), &real_path).map_err(io_err(&real_path))?;
    run(
        &format!("patchelf --set-soname {soname} lib64/{real}"),
        Command::new("patchelf").args(["--set-soname", &soname]).arg(&real_path),
    )?;
    symlink(&real, &lib64.join(&soname))?;
    symlink(&soname, &lib64.join("libascendcl.so"))?;
    symlink(&soname, &lib64.join("libacl_rt.so"))?;
    let archive = lib64.join("libascendcl.a");
    let _ = std::fs::remove_file(&archive);
    std::fs::copy(built.join("libascendcl.a"), &archive).map_err(io_err(&archive))?;
    write_file(&lib64.join("pkgconfig/ascendcl.pc"), &pkg_config_file(), false)?;
    // share/, not lib64/: CMake searches lib64/cmake only where lib64 is the system's library
    // folder (not on Debian).
    let cmake_dir = prefix.join("share/cmake/ascendcl");
    std::fs::create_dir_all(&cmake_dir).map_err(io_err(&cmake_dir))?;
    write_file(&cmake_dir.join("ascendcl-config.cmake"), &cmake_config_file(&real, &soname), false)?;
    write_file(&cmake_dir.join("ascendcl-config-version.cmake"), &cmake_version_file(&so_version), false)?;
    let smi = bin.join("aclrs-smi");
    let _ = std::fs::remove_file(&smi);
    std::fs::copy(built.join("aclrs-smi"), &smi).map_err(io_err(&smi))?;
    let env = set_env_script(&prefix);
    write_file(&prefix.join("set_env.sh"), &env, true)?;
    write_file(&bin.join("setenv.bash"), &env, true)?;
    // CANN's `<arch>-linux` folders, which environment resolvers look for.
    let arch = prefix.join(format!("{}-linux", std::env::consts::ARCH));
    std::fs::create_dir_all(&arch).map_err(io_err(&arch))?;
    symlink("../include", &arch.join("include"))?;
    symlink("../lib64", &arch.join("lib64"))?;
    eprintln!(
        "xtask: installed: include/acl/, lib64/{{{real}, {soname}, libascendcl.so, libacl_rt.so, libascendcl.a, \
         pkgconfig/ascendcl.pc}}, share/cmake/ascendcl/, set_env.sh, bin/{{setenv.bash, aclrs-smi}}, {}-linux/{{include,lib64}}\n\
         xtask: use it with `source {}/set_env.sh`",
        std::env::consts::ARCH,
        prefix.display()
    );
    Ok(prefix)
}

/// Runs `script` with bash in a clean environment for the install test: no cargo
/// `LD_LIBRARY_PATH`, a private software NPU and a private log folder.
fn install_shell(what: &str, script: &str, scratch: &Path) -> Result {
    let mut c = Command::new("bash");
    c.args(["-euo", "pipefail", "-c", script])
        .current_dir(scratch)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("ASCEND_HOME_PATH")
        .env_remove("ASCEND_CANN_PACKAGE_PATH")
        .env_remove("ACLRS_BACKEND")
        .env("ACLRS_SIM_INSTANCE", format!("install-test-{}", std::process::id()))
        .env("ACLRS_SIM_HBM", "1G")
        .env("ASCEND_PROCESS_LOG_PATH", scratch.join("log"));
    run(what, &mut c)
}

/// `cargo xtask install-test`: a fresh install (the debug build, which `ci` has just built),
/// then tests/cmake configured, built and run with CMake after `source set_env.sh`, and
/// tests/c/basic_flow.c built with `pkg-config --cflags --libs ascendcl` and run.
fn install_test() -> Result {
    ensure_debian_tools(&["cmake", "pkg-config", "patchelf"])?;
    let scratch = target_dir().join("xtask-install-test");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(io_err(&scratch))?;
    }
    std::fs::create_dir_all(&scratch).map_err(io_err(&scratch))?;
    let prefix = install(&scratch.join("Ascend"), true)?;
    let p = prefix.display();
    let soname = format!("libascendcl.so.{}", soname_version(LIB_VERSION));
    // Each check reads a command's whole output before `grep -q` looks at it: piping into
    // `grep -q` under `pipefail` fails at random when grep exits on its first match and the
    // writer then dies of SIGPIPE (a CI run failed that way on `ldd`).
    let layout = format!(
        "test -f '{p}/include/acl/acl.h'\n\
         test -f '{p}/lib64/libacl_rt.so'\n\
         test -f '{p}/{arch}-linux/include/acl/acl.h' && test -d '{p}/{arch}-linux/lib64'\n\
         out=$(readelf -d '{p}/lib64/libascendcl.so')\n\
         grep -q 'Library soname: \\[{soname}\\]' <<<\"$out\" || {{ echo \"$out\"; exit 1; }}\n\
         out=$('{p}/bin/aclrs-smi' --json)\n\
         grep -q '\"running\": *false' <<<\"$out\" || {{ echo \"$out\"; exit 1; }}\n\
         echo 'install layout: ok'",
        arch = std::env::consts::ARCH
    );
    install_shell("the install's layout and SONAME", &layout, &scratch)?;
    let cmake = format!(
        "source '{p}/set_env.sh'\n\
         cmake -S '{src}' -B cmake-build\n\
         cmake --build cmake-build\n\
         for exe in main main_acl_rt main_package; do\n\
           out=$(ldd cmake-build/$exe)\n\
           grep -q \"$ASCEND_HOME_PATH/lib64/{soname}\" <<<\"$out\" || {{ echo \"$out\"; exit 1; }}\n\
           ./cmake-build/$exe\n\
         done",
        src = root().join("tests/cmake").display()
    );
    install_shell(
        "tests/cmake: CMake configure, build and run against the install (after set_env.sh)",
        &cmake,
        &scratch,
    )?;
    let pkg = format!(
        "source '{p}/set_env.sh'\n\
         echo \"pkg-config --cflags --libs ascendcl: $(pkg-config --cflags --libs ascendcl)\"\n\
         cc -std=c11 -Wall -Wextra -Werror '{src}' $(pkg-config --cflags --libs ascendcl) -o basic_flow\n\
         ./basic_flow",
        src = root().join("tests/c/basic_flow.c").display()
    );
    install_shell("tests/c/basic_flow.c built with pkg-config against the install, and run", &pkg, &scratch)
}

/// The lines of `nm` output that name code of hal-davinci's fake kernel (test code): its types
/// and module appear in the mangled names of every function built from them, in both of rustc's
/// manglings (`FakeKernel`, and `hal_davinci` followed by the `fake` module).
fn fake_kernel_symbols(nm: &str) -> Vec<&str> {
    nm.lines()
        .filter(|l| {
            l.contains("FakeKernel") || l.contains("hal_davinci4fake") || l.contains("hal_davinci::fake")
        })
        .collect()
}

/// The shipped library holds no test code: with default features acl-shim turns on no fake
/// kernel (`cargo tree`), hal-sim is linked once, for the sim backend only (not again through
/// hal-davinci), and the default-feature `libascendcl.so` exports nothing of the fake kernel and
/// contains none of its code (`nm -D`, and `nm` over the whole symbol table).
fn shipped_library() -> Result {
    let tree = |what: &str, args: &[&str]| -> Result<String> {
        eprintln!("xtask: {what}");
        output(cargo().args(args)).ok_or_else(|| format!("{what}: failed"))
    };
    // Inverted on hal-davinci: the features of it that acl-shim turns on, and through which of
    // its own (the plain tree does not list a feature a dependent's feature enables).
    let what = "cargo tree -p acl-shim -e normal,features -i hal-davinci (default features)";
    let features = tree(
        what,
        &["tree", "-p", "acl-shim", "-e", "normal,features", "-i", "hal-davinci", "--prefix", "none"],
    )?;
    if !features.lines().any(|l| l.starts_with("hal-davinci v")) {
        return Err(format!("{what}: hal-davinci not found; the check would prove nothing:\n{features}"));
    }
    if let Some(l) = features.lines().find(|l| l.contains("fake-kernel") || l.contains("davinci-fake")) {
        return Err(format!("{what}: the shipped library turns on the fake kernel: {l}"));
    }
    let what = "cargo tree -p acl-shim -e normal -i hal-sim (who links hal-sim)";
    let users = tree(what, &["tree", "-p", "acl-shim", "-e", "normal", "-i", "hal-sim", "--prefix", "none"])?;
    if let Some(l) = users.lines().find(|l| l.starts_with("hal-davinci")) {
        return Err(format!("{what}: hal-sim is linked again for the fake kernel: {l}"));
    }
    run("build libascendcl (debug, default features)", cargo().args(["build", "-p", "acl-shim"]))?;
    let lib = target_dir().join("debug").join("libascendcl.so");
    for (what, args) in [("nm -D --defined-only", &["-D", "--defined-only"][..]), ("nm", &[][..])] {
        let what = format!("{what} {}", lib.display());
        let syms =
            output(Command::new("nm").args(args).arg(&lib)).ok_or_else(|| format!("{what}: failed"))?;
        if syms.lines().count() == 0 {
            return Err(format!("{what}: no symbols (stripped?): the check would prove nothing"));
        }
        let fake = fake_kernel_symbols(&syms);
        if !fake.is_empty() {
            return Err(format!(
                "{what}: the shipped library holds {} symbols of the fake kernel, e.g. {}",
                fake.len(),
                fake[0]
            ));
        }
    }
    eprintln!("xtask: the shipped libascendcl holds no fake kernel: ok");
    Ok(())
}

fn ci() -> Result {
    let start = Instant::now();
    check_lint_opt_in()?;
    fmt()?;
    lint()?;
    nostd()?;
    doc()?;
    sanitizer_tools();
    test()?;
    shipped_library()?;
    install_test()?;
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
        Task::Install { prefix, debug } => install(&prefix, debug).map(|_| ()),
        Task::InstallTest => install_test(),
        Task::Shipped => shipped_library(),
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
    fn soname_versions_follow_semver() {
        assert_eq!(soname_version("0.1.0"), "0.1");
        assert_eq!(soname_version("0.12.3"), "0.12");
        assert_eq!(soname_version("1.2.3"), "1");
        assert_eq!(soname_version("10.0.0"), "10");
    }

    #[test]
    fn the_pc_file_gives_a_working_command_line() {
        let pc = pkg_config_file();
        assert!(pc.contains("Libs: -L${libdir} -lascendcl\n"), "{pc}");
        assert!(pc.contains("Cflags: -I${includedir}\n"), "{pc}");
        assert!(pc.contains(&format!("Version: {LIB_VERSION}\n")), "{pc}");
    }

    #[test]
    fn fake_kernel_code_is_found_in_either_mangling() {
        let nm = "0000000000012340 T aclrtMalloc\n\
                  0000000000012350 t _ZN11hal_davinci4fake10FakeKernel3new17h0123456789abcdefE\n\
                  0000000000012360 t _RNvMNtCs1_11hal_davinci4fakeNtB2_10FakeKernel4send\n\
                  0000000000012370 t _ZN7hal_sim3Sim3new17h0123456789abcdefE\n";
        assert_eq!(fake_kernel_symbols(nm).len(), 2);
        assert!(fake_kernel_symbols("0000000000012340 T aclrtMalloc\n").is_empty());
    }

    #[test]
    fn every_member_opts_in_now() {
        check_lint_opt_in().unwrap();
    }
}
