//! libascendcl's log as a CANN user meets it: `tests/c/logging.c` runs with CANN's variables
//! (`ASCEND_GLOBAL_LOG_LEVEL`, `ASCEND_SLOG_PRINT_TO_STDOUT`, `ASCEND_PROCESS_LOG_PATH`) and
//! the test reads back the plog file or stdout; and `aclInit`'s configuration file and
//! software-NPU settings checks, with their codes and messages.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use aclrs_tests::{compile_c, run, run_ok, run_with_args, Link};

/// A fresh, empty log root for one test.
fn fresh_root(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aclrs-logtest-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The pid the program printed on its first line.
fn pid_of(out: &str) -> u32 {
    out.lines()
        .find_map(|l| l.strip_prefix("pid="))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid line in:\n{out}"))
}

/// Every file under `dir` (recursively).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The one plog file of process `pid` under `root`, checked against CANN's naming:
/// `<root>/debug/plog/plog-<pid>_<yyyymmddhhmmssmmm>.log`.
fn plog_of(root: &Path, pid: u32) -> String {
    let files = files_under(root);
    assert_eq!(files.len(), 1, "expected one log file under {}: {files:?}", root.display());
    let f = &files[0];
    assert_eq!(f.parent(), Some(root.join("debug").join("plog").as_path()), "{}", f.display());
    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let stamp = name
        .strip_prefix(&format!("plog-{pid}_"))
        .and_then(|r| r.strip_suffix(".log"))
        .unwrap_or_else(|| panic!("{name} is not plog-{pid}_<time>.log"));
    assert!(stamp.len() == 17 && stamp.bytes().all(|b| b.is_ascii_digit()), "{name}: time {stamp:?}");
    assert!(stamp.starts_with("20"), "{name}: a year of this century");
    std::fs::read_to_string(f).expect("read the plog file")
}

/// `tests/c/logging.c`, compiled once for all the tests of this file (they run in parallel).
fn logging() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile_c("logging", Link::Shared)).clone()
}

#[test]
fn a_failed_call_is_logged_at_error_with_its_code_in_the_plog_file() {
    let root = fresh_root("error");
    let r = root.to_string_lossy().into_owned();
    let out = run_ok(&logging(), "log-error", &[("ASCEND_PROCESS_LOG_PATH", &r)]);
    let log = plog_of(&root, pid_of(&out));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "only the failure at the default level (3, error):\n{log}");
    let line = lines[0];
    assert!(line.starts_with(&format!("[ERROR] ASCENDCL({},logging):20", pid_of(&out))), "{line}");
    assert!(line.contains("]error code 100000: aclrtFree: devPtr is NULL"), "{line}");
    // The line's time is CANN's yyyy-mm-dd-hh:mm:ss.mmm.uuu.
    let time = line.split("):").nth(1).and_then(|t| t.split(' ').next()).unwrap_or_default();
    assert_eq!(time.len(), 27, "{time}");
    assert_eq!(&time[4..5], "-");
    assert_eq!(&time[10..11], "-");
    assert_eq!(&time[19..20], ".");
    assert_eq!(&time[23..24], ".");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_clean_run_leaves_no_log_file() {
    let root = fresh_root("clean");
    let r = root.to_string_lossy().into_owned();
    let out = run_with_args(&logging(), &["clean"], "log-clean", &[("ASCEND_PROCESS_LOG_PATH", &r)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(files_under(&root).is_empty(), "a run without failures wrote a log file");
}

#[test]
fn level_0_traces_every_call_with_its_arguments_and_result() {
    let root = fresh_root("debug");
    let r = root.to_string_lossy().into_owned();
    let out =
        run_ok(&logging(), "log-debug", &[("ASCEND_PROCESS_LOG_PATH", &r), ("ASCEND_GLOBAL_LOG_LEVEL", "0")]);
    let log = plog_of(&root, pid_of(&out));
    let trace: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("[DEBUG] ASCENDCL("))
        .filter_map(|l| l.split_once(']').and_then(|(_, rest)| rest.split_once(']')).map(|(_, t)| t))
        .collect();
    // The API trace, in call order; only pointers vary between runs.
    let want = [
        "aclInit(config_path=0x0) = 0",
        "aclrtSetDevice(device_id=0) = 0",
        "aclrtMalloc(dev_ptr=",
        "aclrtMemset(dev_ptr=",
        "aclrtFree(dev_ptr=0x",
        "aclrtFree(dev_ptr=0x0) = 100000",
        "aclrtResetDevice(device_id=0) = 0",
        "aclFinalize() = 0",
    ];
    assert_eq!(trace.len(), want.len(), "{log}");
    for (got, want) in trace.iter().zip(want) {
        assert!(got.starts_with(want), "{got:?} should start with {want:?}\n{log}");
    }
    assert!(trace[2].ends_with(", size=64, policy=0, cfg=0x0) = 0"), "{}", trace[2]);
    assert!(trace[3].contains("max_count=64, value=0, count=64) = 0"), "{}", trace[3]);
    // The failure is also an ERROR line, and the software NPU's settings an INFO line.
    assert!(log.contains("[ERROR] ASCENDCL("), "{log}");
    assert!(
        log.lines().any(|l| l.starts_with("[INFO] DRV(") && l.contains("ACLRS_SIM_HBM=1073741824")),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn print_to_stdout_writes_the_lines_on_stdout_and_no_file() {
    let root = fresh_root("stdout");
    let r = root.to_string_lossy().into_owned();
    let out = run(
        &logging(),
        "log-stdout",
        &[
            ("ASCEND_PROCESS_LOG_PATH", &r),
            ("ASCEND_GLOBAL_LOG_LEVEL", "0"),
            ("ASCEND_SLOG_PRINT_TO_STDOUT", "1"),
        ],
    );
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout
        .lines()
        .any(|l| l.starts_with("[DEBUG] ASCENDCL(") && l.contains("aclrtSetDevice(device_id=0) = 0")));
    assert!(stdout.lines().any(|l| l.starts_with("[ERROR] ASCENDCL(") && l.contains("error code 100000")));
    assert!(files_under(&root).is_empty(), "stdout mode wrote a file");
}

#[test]
fn level_4_logs_nothing() {
    let root = fresh_root("off");
    let r = root.to_string_lossy().into_owned();
    let out =
        run(&logging(), "log-off", &[("ASCEND_PROCESS_LOG_PATH", &r), ("ASCEND_GLOBAL_LOG_LEVEL", "4")]);
    assert!(out.status.success());
    assert!(files_under(&root).is_empty(), "level 4 wrote a file");
    let out = run(
        &logging(),
        "log-off-stdout",
        &[("ASCEND_GLOBAL_LOG_LEVEL", "4"), ("ASCEND_SLOG_PRINT_TO_STDOUT", "1")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(!stdout.contains("ASCENDCL("), "level 4 printed log lines:\n{stdout}");
}

#[test]
fn a_bad_sim_setting_fails_aclinit_naming_the_variable_and_is_logged_as_read() {
    let root = fresh_root("badenv");
    let r = root.to_string_lossy().into_owned();
    let env = [("ASCEND_PROCESS_LOG_PATH", r.as_str()), ("ACLRS_SIM_HBM", "1M")];
    let out = run_with_args(&logging(), &["badenv"], "log-badenv", &env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    let log = plog_of(&root, pid_of(&stdout));
    let first = log.lines().next().unwrap_or_default();
    assert!(first.starts_with("[ERROR] DRV(") && first.contains("ACLRS_SIM_HBM=\"1M\""), "{log}");
    assert!(log.contains("error code 100000: aclInit: bad software-NPU setting ACLRS_SIM_HBM"), "{log}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Runs `logging config PATH CODE` on a file holding `text`, and returns the program's output.
fn config(tag: &str, text: &str, code: i32) -> String {
    let path = std::env::temp_dir().join(format!("aclrs-config-{}-{tag}.json", std::process::id()));
    std::fs::write(&path, text).expect("write the configuration");
    let p = path.to_string_lossy().into_owned();
    let out = run_with_args(&logging(), &["config", &p, &code.to_string()], &format!("cfg-{tag}"), &[]);
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn aclinit_parses_its_configuration_as_json() {
    config("good", "{\"err_msg_mode\": \"1\", \"dump\": {\"dump_list\": []}}\n", 0);
    // Objects 10 deep holding arrays 10 deep: the limit of each.
    let deep_ok = format!("{}{}1{}{}", "{\"a\":".repeat(10), "[".repeat(10), "]".repeat(10), "}".repeat(10));
    config("deep-ok", &deep_ok, 0);
    // An empty file holds no settings (as in CANN).
    config("empty", "", 0);
    // The example, which counting brackets accepted.
    let out = config("bad", "{ this is : not json ,,, }", 100_006);
    assert!(out.contains("not valid JSON") && out.contains("line 1 column 3"), "{out}");
    let out = config("bad-line", "{\n  \"a\": 1,\n  \"b\": tru, \"c\": 2\n}\n", 100_006);
    assert!(out.contains("line 3 column"), "{out}");
    let out = config("deep", &format!("{}1{}", "{\"a\":".repeat(11), "}".repeat(11)), 100_006);
    assert!(out.contains("nests objects 11 deep"), "{out}");
    let out = config("deep-arrays", &format!("{}{}", "[".repeat(11), "]".repeat(11)), 100_006);
    assert!(out.contains("arrays 11 deep"), "{out}");
}

#[test]
fn aclinit_with_a_missing_configuration_file_is_invalid_file() {
    let missing = std::env::temp_dir().join(format!("aclrs-no-such-config-{}.json", std::process::id()));
    let p = missing.to_string_lossy().into_owned();
    let out = run_with_args(&logging(), &["config", &p, "100003"], "cfg-missing", &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("cannot be read"), "{text}");
}
