//! Device memory of the software NPU at scale and across processes: many live allocations
//! (mappings are not memory), frames cleared when they change process, and the machine-wide
//! registry under processes that allocate, free and are SIGKILLed concurrently.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use aclrs_tests::agent::{self, Agent};
use aclrs_tests::{compile_c, run_ok, Link};

/// Reports a skipped test on the real standard error (not the test harness's captured one), so
/// that a skip is seen even when the test passes.
fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "{test}: SKIPPED — {why}");
}

/// Whether the C programs run on the software NPU (these tests are about it); prints why not.
fn on_sim(test: &str) -> bool {
    match aclrs_tests::test_backend() {
        None => true,
        Some(b) => {
            skip(test, &format!("it tests the software NPU, and the backend is {b}"));
            false
        }
    }
}

#[test]
fn a_hundred_thousand_live_128k_allocations_fit_on_16g() {
    if !on_sim("a_hundred_thousand_live_128k_allocations_fit_on_16g") {
        return;
    }
    let exe = compile_c("many_allocs", Link::Shared);
    let out = run_ok(&exe, "many", &[("ACLRS_SIM_HBM", "16G"), ("ACLRS_SIM_DEVICES", "1")]);
    eprintln!("{out}");
    assert!(out.contains("many_allocs: OK"), "{out}");
}

/// Whether a C program can use up this process's mappings (`tests/c/mappings.h` splits a
/// reservation into up to 200,000 of them); prints why not.
fn can_use_up_mappings(test: &str) -> bool {
    let limit =
        std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|t| t.trim().parse::<u64>().ok());
    match limit {
        Some(l) if l < 190_000 => true,
        other => {
            skip(test, &format!("vm.max_map_count is {other:?}, more than the program can use up"));
            false
        }
    }
}

#[test]
fn out_of_mappings_is_out_of_memory_with_the_limit_named() {
    let test = "out_of_mappings_is_out_of_memory_with_the_limit_named";
    if !on_sim(test) || !can_use_up_mappings(test) {
        return;
    }
    let exe = compile_c("map_limit", Link::Shared);
    let out = run_ok(&exe, "maplimit", &[]);
    assert!(out.contains("map_limit: OK"), "{out}");
}

#[test]
fn freed_ranges_give_their_mappings_back_at_the_mapping_limit() {
    let test = "freed_ranges_give_their_mappings_back_at_the_mapping_limit";
    if !on_sim(test) || !can_use_up_mappings(test) {
        return;
    }
    let exe = compile_c("map_marks", Link::Shared);
    let out = run_ok(&exe, "mapmarks", &[("ACLRS_SIM_HBM", "16G"), ("ACLRS_SIM_DEVICES", "1")]);
    assert!(out.contains("map_marks: OK"), "{out}");
}

/// How long one answer may take before the test fails (never hang CI).
const ANSWER: Duration = Duration::from_secs(120);

/// Starts `exe` (`tests/c/mem_agent.c` or `ipc_agent.c`) on the software NPU `instance`,
/// prefixed by `wrapper` (for example `unshare --pid --fork`).
fn start_agent(exe: &Path, wrapper: &[&str], instance: &str, name: &str) -> Agent {
    let mut cmd = agent::command(exe, wrapper, instance);
    cmd.env_remove("ACLRS_BACKEND");
    Agent::spawn(cmd, name, ANSWER)
}

/// The answers of `mem_agent.c` that carry a value.
trait MemAgent {
    fn slot(&mut self, line: &str) -> u32;
    fn free_bytes(&mut self) -> u64;
    fn pid(&mut self) -> u32;
}

impl MemAgent for Agent {
    fn slot(&mut self, line: &str) -> u32 {
        self.expect(line, "ok ").parse().expect("a slot number")
    }

    fn free_bytes(&mut self) -> u64 {
        self.expect("mem", "free ").parse().expect("free bytes")
    }

    fn pid(&mut self) -> u32 {
        self.expect("pid", "pid ").parse().expect("a pid")
    }
}

fn instance(tag: &str) -> String {
    format!("simmem{}-{tag}", std::process::id())
}

fn mem_agent() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile_c("mem_agent", Link::Shared)).clone()
}

const NORMAL_ONLY: u32 = 2;
const HUGE_ONLY: u32 = 1;

#[test]
fn frames_that_change_process_are_cleared() {
    if !on_sim("frames_that_change_process_are_cleared") {
        return;
    }
    let exe = mem_agent();
    let inst = instance("clear");
    let mut a = start_agent(&exe, &[], &inst, "A");
    let mut b = start_agent(&exe, &[], &inst, "B");
    let start = b.free_bytes();
    let size = 64u64 << 20;
    // Each round, A fills every frame of the device with a pattern (so whatever B gets next
    // was A's) and gives them up: it frees them (round 0), is SIGKILLed holding them (round 1)
    // or frees them and exits (round 2). B then takes 64 MiB and must read zeros.
    for round in 0..3 {
        let filled = a.cmd("fillall 90");
        assert!(filled.starts_with("ok ") && filled != "ok 0", "{filled}");
        assert!(b.free_bytes() < size, "A holds (almost) the whole device");
        match round {
            0 => assert_eq!(a.cmd("freeall"), "rc 0"),
            1 => a.kill9(),
            _ => {
                assert_eq!(a.cmd("freeall"), "rc 0");
                a.quit();
            }
        }
        assert_eq!(b.free_bytes(), start, "round {round}: A's memory is back");
        let t = b.slot(&format!("malloc {size} {NORMAL_ONLY}"));
        assert_eq!(b.cmd(&format!("check {t} 0")), "rc 0", "round {round}: B reads A's bytes");
        assert_eq!(b.cmd(&format!("fill {t} 33")), "rc 0");
        assert_eq!(b.cmd(&format!("free {t}")), "rc 0");
        // A new process gets frames B wrote and freed cleared as well.
        a = start_agent(&exe, &[], &inst, "A'");
        let u = a.slot(&format!("malloc {} {NORMAL_ONLY}", 1000u64 << 20));
        assert_eq!(a.cmd(&format!("check {u} 0")), "rc 0", "round {round}: A' reads B's bytes");
        assert_eq!(a.cmd(&format!("free {u}")), "rc 0");
    }
    assert_eq!(b.free_bytes(), start);
    a.quit();
    b.quit();
}

#[test]
fn registry_stress_with_concurrent_sigkills_keeps_exact_accounting() {
    if !on_sim("registry_stress_with_concurrent_sigkills_keeps_exact_accounting") {
        return;
    }
    let exe = mem_agent();
    let inst = instance("stress");
    let mut keeper = start_agent(&exe, &[], &inst, "keeper");
    let start = keeper.free_bytes();
    // The keeper holds one allocation through the whole run: what it costs, measured alone.
    let kept = keeper.slot(&format!("malloc {} {HUGE_ONLY}", 6u64 << 20));
    let held = start - keeper.free_bytes();
    assert!(held >= 6 << 20, "{held}");

    for wave in 0..6u32 {
        let mut workers: Vec<Agent> =
            (0..4).map(|i| start_agent(&exe, &[], &inst, &format!("w{wave}.{i}"))).collect();
        for (i, w) in workers.iter_mut().enumerate() {
            w.send(&format!("churn 1500 {}", wave * 10 + i as u32 + 1));
        }
        // Two workers are SIGKILLed in the middle of their churn (after a progress line that
        // moves with the wave: they hold memory and are calling into the registry); the other
        // two finish.
        let tick = format!("tick {}", 25 * (wave + 2));
        for w in workers.iter_mut().take(2) {
            while w.read() != tick {}
            w.kill9();
        }
        for w in workers.iter_mut().skip(2) {
            loop {
                let l = w.read();
                if let Some(f) = l.strip_prefix("done ") {
                    assert_eq!(f, "0", "{}: churn failures", w.name);
                    break;
                }
            }
        }
        // The finished workers still hold their live allocations: the keeper sees less free.
        let mid = keeper.free_bytes();
        assert!(mid <= start - held, "wave {wave}: {mid} > {}", start - held);
        for w in workers.iter_mut().skip(2) {
            assert_eq!(w.cmd("freeall"), "rc 0");
        }
        for mut w in workers.drain(2..) {
            // Every survivor sees the same machine-wide accounting.
            assert_eq!(w.free_bytes(), start - held, "{}'s view", w.name);
            w.quit();
        }
        assert_eq!(keeper.free_bytes(), start - held, "wave {wave}: the killed workers' memory is back");
    }
    assert_eq!(keeper.cmd(&format!("check {kept} 0")), "rc 0", "the kept allocation was never touched");
    assert_eq!(keeper.cmd(&format!("free {kept}")), "rc 0");
    assert_eq!(keeper.free_bytes(), start);
    keeper.quit();
}

/// The command prefix that runs a program in a new pid namespace here, or why there is none.
fn pid_namespace_wrapper() -> std::result::Result<Vec<&'static str>, String> {
    let mut tried = Vec::new();
    for w in
        [vec!["unshare", "--pid", "--fork"], vec!["unshare", "--user", "--map-root-user", "--pid", "--fork"]]
    {
        match Command::new(w[0]).args(&w[1..]).arg("true").stderr(Stdio::piped()).output() {
            Ok(o) if o.status.success() => return Ok(w),
            Ok(o) => {
                tried.push(format!("`{} true`: {}", w.join(" "), String::from_utf8_lossy(&o.stderr).trim()))
            }
            Err(e) => tried.push(format!("`{}`: {e}", w.join(" "))),
        }
    }
    Err(tried.join("; "))
}

#[test]
fn the_whitelist_is_checked_against_the_host_pid_in_a_pid_namespace() {
    const TEST: &str = "the_whitelist_is_checked_against_the_host_pid_in_a_pid_namespace";
    if !on_sim(TEST) {
        return;
    }
    let wrapper = match pid_namespace_wrapper() {
        Ok(w) => w,
        Err(why) => {
            skip(TEST, &format!("this machine cannot make a pid namespace ({why})"));
            return;
        }
    };
    let exe = compile_c("ipc_agent", Link::Shared);
    let inst = instance("pidns");
    let mut exporter = start_agent(&exe, &[], &inst, "exporter");
    let mut importer = start_agent(&exe, &wrapper, &inst, "importer");
    // The importer is pid 1 of its namespace; aclrtDeviceGetBareTgid reports its host pid.
    let host = importer.pid();
    assert_ne!(host, 1, "aclrtDeviceGetBareTgid returned the namespace pid");
    let status = std::fs::read_to_string(format!("/proc/{host}/status")).expect("the importer's status");
    let nspid: Vec<&str> = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map(|r| r.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(nspid, [host.to_string().as_str(), "1"], "the importer runs as pid 1 of a new namespace");

    let s = exporter.slot("alloc 2 7");
    let key = exporter.cmd(&format!("export {s} 0"));
    let key = key.strip_prefix("key ").unwrap_or_else(|| panic!("{key}")).to_owned();
    // Whitelisting the importer's namespace pid (1) does not admit it.
    assert_eq!(exporter.cmd(&format!("allow {key} 1")), "rc 0");
    let refused = importer.cmd(&format!("import {key} 2"));
    assert!(refused.starts_with("rc ") && refused != "rc 0", "{refused}");
    // Its host pid does.
    assert_eq!(exporter.cmd(&format!("allow {key} {host}")), "rc 0");
    let t = importer.slot(&format!("import {key} 2"));
    assert_eq!(importer.cmd(&format!("check {t} 7")), "rc 0");
    assert_eq!(importer.cmd(&format!("close {key}")), "rc 0");
    importer.quit();
    assert_eq!(exporter.cmd(&format!("close {key}")), "rc 0");
    assert_eq!(exporter.cmd(&format!("free {s}")), "rc 0");
    exporter.quit();
}
