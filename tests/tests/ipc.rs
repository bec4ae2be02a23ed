//! IPC between real processes on one shared software NPU: each process is `tests/c/ipc_agent.c`
//! driven line by line, every answer bounded by a timeout, every child killed when a test ends.

use std::path::Path;
use std::time::Duration;

use aclrs_tests::agent::{self, Agent};
use aclrs_tests::{compile_c, Link};

/// How long one command may take before the test fails (never hang CI).
const ANSWER: Duration = Duration::from_secs(30);

/// Starts `tests/c/ipc_agent.c` on machine `instance`, on the backend the test run selects.
fn start(exe: &Path, instance: &str, name: &str) -> Agent {
    let mut cmd = agent::command(exe, &[], instance);
    match aclrs_tests::test_backend() {
        Some(b) => cmd.env("ACLRS_BACKEND", b),
        None => cmd.env_remove("ACLRS_BACKEND"),
    };
    Agent::spawn(cmd, name, ANSWER)
}

/// The answers of `ipc_agent.c` that carry a value.
trait IpcAgent {
    fn pid(&mut self) -> u32;
    fn free(&mut self) -> u64;
    fn key(&mut self, line: &str) -> String;
}

impl IpcAgent for Agent {
    fn pid(&mut self) -> u32 {
        let pid: u32 = self.expect("pid", "pid ").parse().expect("a pid");
        assert_eq!(pid, self.id(), "aclrtDeviceGetBareTgid is the process id");
        pid
    }

    fn free(&mut self) -> u64 {
        self.expect("mem", "free ").parse().expect("free bytes")
    }

    fn key(&mut self, line: &str) -> String {
        self.expect(line, "key ")
    }
}

fn instance(tag: &str) -> String {
    format!("t{}-{tag}", std::process::id())
}

const MIB: u64 = 1 << 20;

/// The agent, compiled once per test process (tests run in parallel and must not rewrite the
/// executable while another test starts it).
fn agent_exe() -> std::path::PathBuf {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| compile_c("ipc_agent", Link::Shared)).clone()
}

#[test]
fn two_processes_share_memory_by_key_and_a_third_is_refused() {
    let exe = agent_exe();
    let inst = instance("ipc");
    let mut a = start(&exe, &inst, "A");
    let mut b = start(&exe, &inst, "B");
    let mut c = start(&exe, &inst, "C");
    let free0 = a.free();
    let b_pid = b.pid();
    c.pid();

    // A allocates and writes; the memory is gone from everyone's free count.
    assert_eq!(a.cmd("alloc 4 165"), "ok 0");
    assert!(b.free() <= free0 - 4 * MIB, "B sees A's allocation");
    let key = a.key("export 0 0");
    assert!(key.len() <= 64);

    // Not yet whitelisted: B is refused too. Then A lets B in, and only B.
    assert_eq!(b.cmd(&format!("import {key} 4")), "rc 207006");
    assert_eq!(a.cmd(&format!("allow {key} {b_pid}")), "rc 0");
    assert_eq!(b.cmd(&format!("import {key} 4")), "ok 0");
    assert_eq!(c.cmd(&format!("import {key} 4")), "rc 207006", "C is not on the whitelist");
    assert_eq!(c.cmd(&format!("close {key}")), "rc 107000", "C holds nothing to close");
    // Only the exporter sets pids, and nobody imports its own export.
    assert_eq!(b.cmd(&format!("allow {key} {b_pid}")), "rc 207006");
    assert_eq!(a.cmd(&format!("import {key} 4")), "rc 207000");

    // B reads A's bytes, writes its own, A sees them.
    assert_eq!(b.cmd("check 0 165"), "rc 0");
    assert_eq!(b.cmd("fill 0 90"), "rc 0");
    assert_eq!(a.cmd("check 0 90"), "rc 0");

    // Close in the documented order: importer, then exporter; then A frees.
    assert_eq!(b.cmd(&format!("close {key}")), "rc 0");
    assert_eq!(b.cmd(&format!("close {key}")), "rc 107000");
    assert_eq!(a.cmd(&format!("close {key}")), "rc 0");
    assert_eq!(b.cmd(&format!("import {key} 4")), "rc 107000", "a destroyed key imports nothing");
    assert_eq!(a.cmd("free 0"), "rc 0");
    assert_eq!(c.free(), free0, "all memory is back");
    a.quit();
    b.quit();
    c.quit();
}

#[test]
fn two_processes_share_physical_memory_by_shareable_handle() {
    let exe = agent_exe();
    let inst = instance("handle");
    let mut a = start(&exe, &inst, "A");
    let mut b = start(&exe, &inst, "B");
    let mut c = start(&exe, &inst, "C");
    let free0 = a.free();
    let b_pid = b.pid();

    // A makes 4 MiB of physical memory, maps it, writes it and exports a shareable handle.
    assert_eq!(a.cmd("palloc 4 77"), "ok 0");
    let h = a.cmd("hexport 0 0");
    let h = h.strip_prefix("handle ").unwrap_or_else(|| panic!("export: {h}")).to_owned();
    assert_ne!(h, "0");
    assert_eq!(a.cmd("hexport 0 0"), "rc 107000", "a handle exports once");

    // The whitelist: B is refused until A lets it in; C stays out; A never imports its own.
    assert_eq!(b.cmd(&format!("himport {h} 4")), "rc 207006");
    assert_eq!(b.cmd(&format!("hallow {h} {b_pid}")), "rc 207006", "only the exporter sets pids");
    assert_eq!(a.cmd(&format!("hallow {h} {b_pid}")), "rc 0");
    assert_eq!(b.cmd(&format!("himport {h} 4")), "ok 0");
    assert_eq!(c.cmd(&format!("himport {h} 4")), "rc 207006", "C is not on the whitelist");
    assert_eq!(a.cmd(&format!("himport {h} 4")), "rc 207000");

    // Both see the same bytes.
    assert_eq!(b.cmd("check 0 77"), "rc 0");
    assert_eq!(b.cmd("fill 0 12"), "rc 0");
    assert_eq!(a.cmd("check 0 12"), "rc 0");

    // The memory lives while either holds it: A lets go first, B still reads it.
    assert_eq!(a.cmd("hfree 0"), "rc 0");
    assert!(c.free() < free0, "B still holds the memory");
    assert_eq!(b.cmd("check 0 12"), "rc 0");
    assert_eq!(b.cmd("hfree 0"), "rc 0");
    assert_eq!(c.free(), free0, "all memory is back");

    // Without a whitelist (DISABLE_PID_VALIDATION) anyone may import.
    assert_eq!(a.cmd("palloc 2 5"), "ok 1");
    let open = a.cmd("hexport 1 1");
    let open = open.strip_prefix("handle ").unwrap_or_else(|| panic!("export: {open}")).to_owned();
    assert_eq!(c.cmd(&format!("himport {open} 2")), "ok 0");
    assert_eq!(c.cmd("check 0 5"), "rc 0");
    assert_eq!(c.cmd("hfree 0"), "rc 0");
    assert_eq!(a.cmd("hfree 1"), "rc 0");
    assert_eq!(b.cmd(&format!("himport {open} 2")), "rc 107000", "a released handle imports nothing");
    assert_eq!(b.free(), free0);
    a.quit();
    b.quit();
    c.quit();
}

#[test]
fn a_killed_process_gives_its_memory_back() {
    let exe = agent_exe();
    let inst = instance("kill");
    let mut survivor = start(&exe, &inst, "survivor");
    let mut victim = start(&exe, &inst, "victim");
    let free0 = survivor.free();

    assert_eq!(victim.cmd("alloc 64 7"), "ok 0");
    assert_eq!(victim.cmd("alloc 32 9"), "ok 1");
    let shared = victim.key("export 0 1");
    let _private = victim.key("export 1 0");
    assert_eq!(survivor.cmd(&format!("import {shared} 64")), "ok 0");
    assert!(survivor.free() <= free0 - 96 * MIB);

    victim.kill9();

    // The killed process's private memory and exports are reclaimed; what the survivor
    // imported stays readable until it closes it.
    let after_kill = survivor.free();
    assert!(after_kill >= free0 - 64 * MIB - 4 * MIB, "free {after_kill} of {free0}");
    assert!(after_kill < free0, "the imported 64 MiB is still held");
    assert_eq!(survivor.cmd("check 0 7"), "rc 0");
    assert_eq!(survivor.cmd(&format!("import {shared} 64")), "rc 107000", "the dead exporter's key is gone");
    assert_eq!(survivor.cmd(&format!("close {shared}")), "rc 0");
    assert_eq!(survivor.free(), free0, "every byte is back");

    // A new process on the same machine sees the same.
    let mut late = start(&exe, &inst, "late");
    assert_eq!(late.free(), free0);
    late.quit();
    survivor.quit();
}

#[test]
fn the_last_process_removes_the_machine() {
    let exe = agent_exe();
    let inst = instance("cleanup");
    let mut a = start(&exe, &inst, "A");
    assert_eq!(a.cmd("alloc 2 1"), "ok 0");
    let reg = format!("/dev/shm/aclrs.{inst}.registry");
    assert!(Path::new(&reg).exists());
    a.quit();
    assert!(!Path::new(&reg).exists(), "{reg} left behind");
    assert!(!Path::new(&format!("/dev/shm/aclrs.{inst}.dev0.hbm")).exists());
}

#[test]
fn vmm_host_registration_and_peer_copies_in_one_process() {
    let exe = compile_c("vmm", Link::Shared);
    let out = aclrs_tests::run_ok(&exe, "vmm", &[]);
    assert!(out.contains("vmm"), "{out}");
}

/// `aclrtIpcMemImportByKey` into another device than the exporter's: B sees only physical
/// device 1 (`ASCEND_RT_VISIBLE_DEVICES=1`), A exports memory of physical device 0, and both
/// see the same bytes.
#[test]
fn an_import_into_another_device_maps_the_exporters_memory() {
    let exe = agent_exe();
    let inst = instance("xdev");
    let mut a = start(&exe, &inst, "A");
    let mut cmd = agent::command(&exe, &[], &inst);
    cmd.env("ASCEND_RT_VISIBLE_DEVICES", "1");
    match aclrs_tests::test_backend() {
        Some(b) => cmd.env("ACLRS_BACKEND", b),
        None => cmd.env_remove("ACLRS_BACKEND"),
    };
    let mut b = Agent::spawn(cmd, "B", ANSWER);
    let b_pid = b.pid();
    assert_eq!(a.cmd("alloc 4 33"), "ok 0");
    let key = a.key("export 0 0");
    assert_eq!(a.cmd(&format!("allow {key} {b_pid}")), "rc 0");
    assert_eq!(b.cmd(&format!("import {key} 4")), "ok 0");
    assert_eq!(b.cmd("check 0 33"), "rc 0", "B reads A's bytes through its own device");
    assert_eq!(b.cmd("fill 0 44"), "rc 0");
    assert_eq!(a.cmd("check 0 44"), "rc 0", "A sees B's bytes");
    assert_eq!(b.cmd(&format!("close {key}")), "rc 0");
    assert_eq!(a.cmd(&format!("close {key}")), "rc 0");
    assert_eq!(a.cmd("free 0"), "rc 0");
    a.quit();
    b.quit();
}
