//! Helpers for the cross-language tests: build `libascendcl`, compile a C program from
//! `tests/c/` against `acl-shim/include`, and run it on a private software NPU.
//!
//! This crate owns no product code; it must only drive the library the way a user would. Its
//! [`bench`](mod@bench) module is the harness of the benchmarks in `tests/benches/`.

pub mod agent;
pub mod bench;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The directory holding `libascendcl.{so,a}`.
///
/// `ACLRS_LIB_DIR` names a directory that already holds the library (`cargo xtask ci` sets it);
/// otherwise it is the test binary's own directory (`target/<profile>/deps`): `acl-shim` is a
/// dev-dependency of this crate, so cargo builds every crate type of it there, from the same
/// sources and settings, before it builds any test binary. No nested cargo runs.
///
/// # Panics
///
/// When the library is not there (a test binary run outside cargo without `ACLRS_LIB_DIR`).
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("ACLRS_LIB_DIR") {
            return PathBuf::from(dir);
        }
        let exe = std::env::current_exe().expect("the path of this test binary");
        let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        for lib in ["libascendcl.so", "libascendcl.a"] {
            assert!(
                dir.join(lib).is_file(),
                "{lib} is not next to the test binary in {} (cargo builds it there as a dev-dependency); \
                 run the tests through cargo or set ACLRS_LIB_DIR",
                dir.display()
            );
        }
        dir
    })
}

/// Builds `tests/c/kernels/<name>.c` into a host shared object (`cc -shared -fPIC`), as a user of
/// the sim kernel ABI would, and returns its path. `tag` keeps concurrent tests apart.
///
/// # Panics
///
/// When the compiler fails.
pub fn kernel_library(name: &str, tag: &str) -> PathBuf {
    let so = scratch_dir("kernels").join(format!("lib{name}-{tag}.so"));
    let partial = partial_path(&so);
    let ws = workspace();
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I"])
        .arg(ws.join("acl-shim/include"))
        .arg(ws.join("tests/c/kernels").join(format!("{name}.c")))
        .arg("-o")
        .arg(&partial)
        .status()
        .expect("run cc");
    assert!(status.success(), "building the kernel library {name} failed");
    publish(&partial, &so)
}

/// A directory for what the tests build (programs, kernel libraries), `kind` naming its use.
///
/// It lies under the target directory (`CARGO_TARGET_DIR`, or the workspace's `target`), so
/// runs reuse it and `cargo clean` removes it; nothing is left in the system's temporary
/// directory. Several test processes share it: builders write a file of their own
/// ([`partial_path`]) and [`publish`] it under its name.
///
/// # Panics
///
/// When the directory cannot be created.
pub fn scratch_dir(kind: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("aclrs-scratch")
        .join(kind);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// A path beside `dest` that no other build, in this process or another, writes.
pub fn partial_path(dest: &Path) -> PathBuf {
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dest.with_file_name(format!(".{name}.{}.{n}", std::process::id()))
}

/// Moves a finished build from `partial` to `dest` in one rename, so that no test ever starts
/// or loads a file another is still writing; returns `dest`.
///
/// # Panics
///
/// When the rename fails.
pub fn publish(partial: &Path, dest: &Path) -> PathBuf {
    std::fs::rename(partial, dest).expect("move the build into place");
    dest.to_path_buf()
}

/// The directory holding the release build of `libascendcl`, built once per process (for
/// benchmarks).
///
/// # Panics
///
/// When the library cannot be built.
pub fn release_lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--release", "-p", "acl-shim"])
            .current_dir(workspace())
            .status()
            .expect("run cargo build --release -p acl-shim");
        assert!(status.success(), "cargo build --release -p acl-shim failed");
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace().join("target"))
            .join("release")
    })
}

/// Compiles `tests/c/<name>.c` with optimisation against the release library, for benchmarks.
///
/// # Panics
///
/// When the compiler fails.
pub fn compile_bench_c(name: &str) -> PathBuf {
    let ws = workspace();
    let lib = release_lib_dir();
    let exe = scratch_dir("bench").join(name);
    let partial = partial_path(&exe);
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(ws.join("acl-shim/include"))
        .arg(ws.join("tests/c").join(format!("{name}.c")))
        .arg("-o")
        .arg(&partial)
        .arg("-L")
        .arg(lib)
        .arg("-lascendcl")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("run the C compiler");
    assert!(out.status.success(), "compiling {name}.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
    publish(&partial, &exe)
}

/// How to link a C program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Against `libascendcl.so`, with an rpath.
    Shared,
    /// Against `libascendcl.a`.
    Static,
}

/// Compiles `tests/c/<name>.c` (C11, warnings as errors) and returns the executable's path.
///
/// # Panics
///
/// When the compiler fails; its output is in the message.
pub fn compile_c(name: &str, link: Link) -> PathBuf {
    compile(name, "c", link)
}

/// Compiles `tests/c/<name>.cpp` (C++11, warnings as errors) against the shared library.
///
/// # Panics
///
/// When the compiler fails; its output is in the message.
pub fn compile_cpp(name: &str) -> PathBuf {
    compile(name, "cpp", Link::Shared)
}

fn compile(name: &str, ext: &str, link: Link) -> PathBuf {
    let ws = workspace();
    let suffix = if link == Link::Static { "-static" } else { "" };
    let exe = scratch_dir("ctests").join(format!("{name}{suffix}"));
    // Two tests may compile the same program at once: each writes its own file and renames it
    // into place, so no test ever starts an executable another is still writing.
    let partial = partial_path(&exe);
    let lib = lib_dir();
    let (compiler, std) = if ext == "cpp" {
        (std::env::var("CXX").unwrap_or_else(|_| "c++".into()), "-std=c++11")
    } else {
        (std::env::var("CC").unwrap_or_else(|_| "cc".into()), "-std=c11")
    };
    let mut cmd = Command::new(compiler);
    cmd.args([std, "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(ws.join("acl-shim/include"))
        .arg(ws.join("tests/c").join(format!("{name}.{ext}")))
        .arg("-o")
        .arg(&partial);
    match link {
        Link::Shared => {
            // DT_RPATH, not DT_RUNPATH: it is searched before `LD_LIBRARY_PATH`, which cargo
            // points at `target/<profile>` too, where an older `libascendcl.so` may lie.
            cmd.arg("-L")
                .arg(lib)
                .arg("-lascendcl")
                .arg(format!("-Wl,-rpath,{}", lib.display()))
                .arg("-Wl,--disable-new-dtags");
        }
        Link::Static => {
            cmd.arg(lib.join("libascendcl.a")).args(["-lpthread", "-ldl", "-lm", "-lrt"]);
        }
    }
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {name}.{ext} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    publish(&partial, &exe)
}

/// Runs `exe` on a private software NPU named after `instance` (1 GiB of HBM per device, a
/// 512 MiB 2 MiB-page budget, no 1 GiB pages, the log under [`log_root`]) plus `env`, and
/// returns its output.
///
/// # Panics
///
/// When the program cannot be started.
pub fn run(exe: &Path, instance: &str, env: &[(&str, &str)]) -> Output {
    run_with_args(exe, &[], instance, env)
}

/// [`run`] with command-line arguments.
///
/// # Panics
///
/// When the program cannot be started.
pub fn run_with_args(exe: &Path, args: &[&str], instance: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    cmd.env("ACLRS_SIM_INSTANCE", format!("t{}-{instance}", std::process::id()))
        .env("ACLRS_SIM_HBM", "1G")
        .env("ACLRS_SIM_HUGE2M", "512M")
        .env("ACLRS_SIM_HUGE1G", "0")
        .env_remove("ASCEND_RT_VISIBLE_DEVICES")
        .env_remove("ACLRS_SIM_DEVICES")
        .env_remove("ACLRS_SIM_SOC");
    quiet_log(&mut cmd);
    // `cargo xtask hwtest --backend davinci-fake` runs every C program on that backend.
    match test_backend() {
        Some(b) => cmd.env("ACLRS_BACKEND", b),
        None => cmd.env_remove("ACLRS_BACKEND"),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    output_within(&mut cmd, PROGRAM_TIMEOUT)
}

/// How long a C program may run before [`run`] stops it: far beyond any program's time on a
/// slow machine (under valgrind too), so that a hang fails its test with the program's output
/// so far (which section it was in) instead of holding the whole suite.
pub const PROGRAM_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs `cmd` to its end and collects its output, as [`Command::output`] does, but kills it
/// after `limit` (SIGKILL); its status then says it was killed and its stderr ends with a line
/// that says why.
///
/// # Panics
///
/// When the program cannot be started.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the C program");
    // Read both pipes while waiting, so a chatty program never blocks on a full pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    let drain = |which: u8, pipe: Option<Box<dyn Read + Send>>| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send((which, buf));
        });
    };
    drain(1, child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    drain(2, child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + limit;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the C program") {
            break status;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for the killed C program");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // After a kill, a process the program started may still hold its pipes open: take what
    // came within a few seconds.
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let got = if timed_out { rx.recv_timeout(Duration::from_secs(5)).ok() } else { rx.recv().ok() };
        match got {
            Some((1, buf)) => stdout = buf,
            Some((_, buf)) => stderr = buf,
            None => break,
        }
    }
    if timed_out {
        stderr.extend_from_slice(
            format!("\n(killed: still running after {} s, the tests' limit)\n", limit.as_secs()).as_bytes(),
        );
    }
    Output { status, stdout, stderr }
}

/// Points a C program's log (CANN's variables) at [`log_root`] at the default level, so that
/// tests never write under `$HOME/ascend/log`; a test's own `env` may override it.
pub fn quiet_log(cmd: &mut Command) {
    cmd.env("ASCEND_PROCESS_LOG_PATH", log_root())
        .env_remove("ASCEND_GLOBAL_LOG_LEVEL")
        .env_remove("ASCEND_SLOG_PRINT_TO_STDOUT")
        .env_remove("ASCEND_WORK_PATH");
}

/// The log root of the C programs the tests run: a [`scratch_dir`], so that nothing is left in
/// the system's temporary directory (each program's file is named by its pid and start time).
pub fn log_root() -> PathBuf {
    scratch_dir("logs")
}

/// The backend the C programs run on: `ACLRS_TEST_BACKEND` (set by `cargo xtask hwtest`), or
/// `None` for the default software NPU.
pub fn test_backend() -> Option<String> {
    std::env::var("ACLRS_TEST_BACKEND").ok().filter(|b| !b.is_empty() && b != "sim")
}

/// Runs a C program and asserts it exited 0, showing its output otherwise.
///
/// # Panics
///
/// When the program fails.
pub fn run_ok(exe: &Path, instance: &str, env: &[(&str, &str)]) -> String {
    let out = run(exe, instance, env);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{text}", exe.display(), out.status);
    text
}

#[cfg(test)]
mod program_timeout {
    use super::*;

    #[test]
    fn a_program_is_waited_for_and_one_past_the_limit_is_killed() {
        let out = output_within(Command::new("sh").args(["-c", "echo out; echo err >&2"]), PROGRAM_TIMEOUT);
        assert!(out.status.success());
        assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));
        let start = Instant::now();
        let out = output_within(
            Command::new("sh").args(["-c", "echo begun; exec sleep 30"]),
            Duration::from_millis(300),
        );
        assert!(!out.status.success());
        assert!(start.elapsed() < Duration::from_secs(20), "killed at the limit, not at the end");
        assert_eq!(out.stdout, b"begun\n", "the output before the kill is kept");
        assert!(String::from_utf8_lossy(&out.stderr).contains("killed: still running after 0 s"));
    }
}
