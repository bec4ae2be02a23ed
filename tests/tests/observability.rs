//! Memory observability: the snapshot, summary and out-of-memory figures of `tests/c/mem_snapshot.c`
//! (the pickle is read back with Python's standard `pickle`), and `aclrs-smi` against live
//! processes.

use std::process::Command;

use aclrs_tests::agent::{self, Agent};
use aclrs_tests::{compile_c, Link};

/// Python that loads the snapshot and checks its structure against the figures the C program
/// printed (`USED`, `ADDRS`); it prints `PICKLE OK` and a line of totals.
const CHECK_PY: &str = r#"
import pickle, pickletools, sys
raw = open(sys.argv[1], "rb").read()
# memory_viz decodes the file with its own unpickler, which knows only these opcodes and
# protocols 2 to 4.
viz = {"APPENDS", "BINGET", "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME",
       "LONG1", "LONG_BINGET", "MARK", "MEMOIZE", "PROTO", "SETITEMS", "SHORT_BINUNICODE", "STOP",
       "TUPLE2", "APPEND", "NEWFALSE", "BINPUT", "BINUNICODE", "EMPTY_TUPLE", "NEWTRUE", "NONE",
       "BINFLOAT", "TUPLE", "TUPLE1", "TUPLE3", "LONG_BINPUT", "LIST", "DICT", "SETITEM"}
ops = list(pickletools.genops(raw))
assert {op.name for op, _, _ in ops} <= viz, {op.name for op, _, _ in ops} - viz
assert ops[0][0].name == "PROTO" and 2 <= ops[0][1] <= 4, ops[0]
snap = pickle.loads(raw)
used = int(sys.argv[2])
big, small, small2, pb = (int(a) for a in sys.argv[3:7])
assert isinstance(snap, dict) and set(snap) >= {"segments", "device_traces"}, snap.keys()
segs = snap["segments"]
seg_keys = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size",
            "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
for s in segs:
    assert seg_keys <= set(s), set(s)
    assert s["segment_type"] in ("large", "small")
    assert isinstance(s["segment_pool_id"], tuple) and len(s["segment_pool_id"]) == 2
    at = s["address"]
    for b in s["blocks"]:
        assert {"address", "size", "requested_size", "state", "frames"} <= set(b), set(b)
        assert b["state"] in ("active_allocated", "active_pending_free", "inactive"), b["state"]
        assert b["address"] == at, (b, at)
        at += b["size"]
    assert at == s["address"] + s["total_size"], s
    assert s["allocated_size"] == sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
backed = sum(s["backed_size"] for s in segs)
assert backed == used, ("backed bytes of the segments", backed, "aclrtGetMemInfo used", used)
active = {b["address"]: (s, b) for s in segs for b in s["blocks"] if b["state"] == "active_allocated"}
assert big in active and active[big][1]["size"] >= 8 << 20 and active[big][0]["segment_type"] == "large"
assert small in active and small2 in active and active[small][0]["segment_type"] == "small"
assert active[small][0]["address"] == active[small2][0]["address"], "both small objects share a chunk"
assert pb in active and active[pb][0]["segment_pool_id"] != (0, 0) and active[pb][0]["is_expandable"]
pool = active[pb][0]
assert pool["backed_size"] == 6 << 20, pool["backed_size"]
traces = snap["device_traces"]
assert isinstance(traces, list) and len(traces) >= 1
t0 = traces[0]
for e in t0:
    assert {"action", "addr", "size", "stream", "time_us", "frames"} <= set(e), set(e)
    for f in e["frames"]:
        assert set(f) >= {"filename", "line", "name"}
actions = [e["action"] for e in t0]
for a in ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"):
    assert a in actions, (a, actions)
assert [e["time_us"] for e in t0] == sorted(e["time_us"] for e in t0)
# Every live segment was announced by a segment_alloc of its address and size, not freed since.
for sg in segs:
    evs = [e for e in t0 if e["addr"] == sg["address"] and e["action"] in ("segment_alloc", "segment_free")]
    assert evs and evs[-1]["action"] == "segment_alloc" and evs[-1]["size"] == sg["total_size"], (sg["address"], evs)
allocs = [e for e in t0 if e["action"] == "alloc"]
assert allocs[0]["addr"] == big and allocs[0]["size"] >= 8 << 20
assert any(e["action"] == "alloc" and e["addr"] == pb and e["stream"] != 0 for e in t0)
names = [f["name"] for f in allocs[0]["frames"]]
assert "aclrtMalloc" in names and "main" in names, names
assert not any(n.startswith("backtrace::") or "ascendcl::obs::" in n for n in names), names
print("PICKLE OK", len(segs), "segments", len(t0), "events", backed, "bytes")
"#;

/// Python that checks the snapshot written at `aclFinalize` after everything was freed: no
/// segment is left, every segment the trace opened it also closed, and the OOMs are recorded.
const FINAL_PY: &str = r#"
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
assert s["segments"] == [], s["segments"]
t = s["device_traces"][0]
a = [e["action"] for e in t]
assert a.count("oom") == 2, a
live = {}
for e in t:
    if e["action"] == "segment_alloc":
        assert e["addr"] not in live, e
        live[e["addr"]] = e["size"]
    elif e["action"] == "segment_free":
        assert live.pop(e["addr"]) == e["size"], e
assert live == {}, live
print("FINAL OK", len(a))
"#;

#[test]
fn snapshot_summary_and_oom_figures() {
    let exe = compile_c("mem_snapshot", Link::Shared);
    let dir = std::env::temp_dir().join(format!("aclrs-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("snap.pickle");
    let at_exit = dir.join("final.pickle");
    let mut cmd = Command::new(&exe);
    cmd.arg(&path)
        .env("ACLRS_SIM_INSTANCE", format!("t{}-snapshot", std::process::id()))
        .env("ACLRS_SIM_HBM", "1G")
        .env("ACLRS_SIM_HUGE2M", "512M")
        .env("ACLRS_SIM_HUGE1G", "0")
        .env("ACLRS_MEM_SNAPSHOT", &at_exit)
        .env_remove("ACLRS_SIM_DEVICES")
        .env_remove("ASCEND_RT_VISIBLE_DEVICES")
        .env_remove("ACLRS_BACKEND");
    let o = cmd.output().expect("run mem_snapshot");
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "mem_snapshot failed:\n{out}");
    assert!(out.contains("mem_snapshot: OK"), "{out}");
    assert!(path.exists() && at_exit.exists(), "snapshots written:\n{out}");
    let used = out.lines().find_map(|l| l.strip_prefix("USED ")).expect("USED line").trim().to_owned();
    let addrs: Vec<String> = out
        .lines()
        .find_map(|l| l.strip_prefix("ADDRS "))
        .expect("ADDRS line")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let Ok(py) = Command::new("python3").arg("--version").output() else {
        println!("skipped: python3 is not installed, the pickle was not read back");
        return;
    };
    assert!(py.status.success());
    let check = Command::new("python3")
        .arg("-c")
        .arg(CHECK_PY)
        .arg(&path)
        .arg(&used)
        .args(&addrs)
        .output()
        .expect("run python3");
    let text =
        format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert!(check.status.success() && text.contains("PICKLE OK"), "{text}");
    println!("{text}");
    // The snapshot at aclFinalize: everything was freed, every trace event is there.
    let fin = Command::new("python3").arg("-c").arg(FINAL_PY).arg(&at_exit).output().expect("run python3");
    let text = format!("{}{}", String::from_utf8_lossy(&fin.stdout), String::from_utf8_lossy(&fin.stderr));
    assert!(fin.status.success() && text.contains("FINAL OK"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `aclrs-smi`, built once per test process (like the library).
fn smi_exe() -> std::path::PathBuf {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "aclrs-smi"])
            .current_dir(aclrs_tests::workspace())
            .status()
            .expect("run cargo build -p aclrs-smi");
        assert!(status.success(), "cargo build -p aclrs-smi failed");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| aclrs_tests::workspace().join("target"));
        target.join("debug").join("aclrs-smi")
    })
    .clone()
}

/// Starts a `tests/c/smi_agent.c` process on the software NPU `instance`.
fn start(exe: &std::path::Path, instance: &str, name: &str) -> Agent {
    let mut cmd = agent::command(exe, &[], instance);
    cmd.env_remove("ACLRS_BACKEND");
    Agent::spawn(cmd, name, std::time::Duration::from_secs(60))
}

/// A command of `smi_agent.c` that must succeed.
fn ok(a: &mut Agent, c: &str) -> String {
    let r = a.cmd(c);
    assert!(r.starts_with("ok ") || r.starts_with("key ") || r == "rc 0", "{}: {c}: {r}", a.name);
    r
}

fn smi_json(instance: &str) -> serde_json::Value {
    let out =
        Command::new(smi_exe()).args(["--json", "--instance", instance]).output().expect("run aclrs-smi");
    assert!(out.status.success(), "aclrs-smi failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("aclrs-smi prints JSON")
}

fn proc_of(m: &serde_json::Value, pid: u32) -> Option<&serde_json::Value> {
    m["processes"].as_array()?.iter().find(|p| p["pid"] == pid)
}

fn dev0(p: &serde_json::Value, key: &str) -> u64 {
    p["devices"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["device"] == 0))
        .map_or(0, |d| d[key].as_u64().unwrap_or(0))
}

const MIB: u64 = 1 << 20;

#[test]
fn smi_reports_a_live_multi_process_machine_and_a_killed_process() {
    let agent = compile_c("smi_agent", Link::Shared);
    let inst = format!("t{}-smi", std::process::id());
    let gone = smi_json(&inst);
    assert_eq!(gone["running"], false, "{gone}");
    for bad in [&["--instance", "../etc"][..], &["--instance", &inst, "--loop=0"][..]] {
        let out = Command::new(smi_exe()).args(bad).output().expect("run aclrs-smi");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("aclrs-smi: --"), "{bad:?}: {err}");
    }

    let mut a = start(&agent, &inst, "a");
    let mut b = start(&agent, &inst, "b");
    let mut c = start(&agent, &inst, "c");
    let pid =
        |x: &mut Agent| x.cmd("pid").strip_prefix("pid ").and_then(|p| p.parse::<u32>().ok()).expect("pid");
    let (pa, pb, pc) = (pid(&mut a), pid(&mut b), pid(&mut c));
    ok(&mut a, "alloc 64");
    ok(&mut a, "pool 10");
    let key = ok(&mut a, "export 0").strip_prefix("key ").expect("key").to_owned();
    ok(&mut a, &format!("allow {key} {pb}"));
    ok(&mut b, &format!("import {key} 64"));
    ok(&mut c, "alloc 32");
    let free: u64 = a.cmd("mem").strip_prefix("free ").and_then(|f| f.parse().ok()).expect("free");

    let m = smi_json(&inst);
    assert_eq!(m["running"], true, "{m}");
    let devs = m["devices"].as_array().expect("devices");
    assert_eq!(devs.len(), 2, "{m}");
    let d0 = &devs[0];
    assert_eq!(d0["soc"], "Ascend910B1", "{m}");
    assert_eq!(d0["hbm_total_bytes"], 1u64 << 30);
    assert_eq!(d0["huge_total_bytes"], 512 * MIB);
    assert_eq!(d0["giant_total_bytes"], 0);
    assert_eq!(d0["hbm_used_bytes"].as_u64(), Some((1 << 30) - free), "smi agrees with aclrtGetMemInfo: {m}");
    assert!(d0["huge_used_bytes"].as_u64().unwrap_or(0) >= 64 * MIB, "{m}");
    assert_eq!(devs[1]["hbm_used_bytes"], 0);
    let (ja, jb, jc) =
        (proc_of(&m, pa).expect("A"), proc_of(&m, pb).expect("B"), proc_of(&m, pc).expect("C"));
    for p in [ja, jb, jc] {
        assert_eq!(p["alive"], true, "{p}");
        assert_eq!(p["soc"], "Ascend910B1", "{p}");
        assert_eq!(p["name"], "smi_agent", "{p}");
    }
    assert!(dev0(ja, "used_bytes") >= 74 * MIB, "{ja}");
    assert_eq!(dev0(ja, "pool_reserved_bytes"), 10 * MIB, "{ja}");
    assert_eq!(dev0(ja, "pool_used_bytes"), 10 * MIB, "{ja}");
    assert_eq!((ja["exports"].as_u64(), ja["imports"].as_u64()), (Some(1), Some(0)), "{ja}");
    assert_eq!((jb["exports"].as_u64(), jb["imports"].as_u64()), (Some(0), Some(1)), "{jb}");
    assert_eq!(dev0(jb, "used_bytes"), 0, "{jb}");
    assert!(dev0(jb, "imported_bytes") >= 64 * MIB, "{jb}");
    assert!(dev0(jc, "used_bytes") >= 32 * MIB, "{jc}");
    let sum: u64 = [ja, jb, jc].iter().map(|p| dev0(p, "used_bytes")).sum();
    assert_eq!(d0["hbm_used_bytes"].as_u64(), Some(sum), "imports are not counted twice: {m}");

    // The table, laid out as npu-smi's.
    let table = Command::new(smi_exe()).args(["info", "--instance", &inst]).output().expect("run aclrs-smi");
    let text = String::from_utf8_lossy(&table.stdout);
    println!("{text}");
    for want in [
        "NPU   Name",
        "Ascend910B1",
        "HBM-Usage(MB)",
        "Process id",
        &pa.to_string(),
        "No running processes found in NPU 1",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }

    // Kill C while aclrs-smi refreshes: every refresh is a whole, consistent reading.
    let smi = Command::new(smi_exe())
        .args(["--json", "--instance", &inst, "--loop", "0.02", "--count", "30"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start aclrs-smi --loop");
    c.kill9();
    let out = smi.wait_with_output().expect("aclrs-smi --loop");
    assert!(out.status.success());
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).expect("utf-8").lines().collect();
    assert_eq!(lines.len(), 30);
    for l in lines {
        let m: serde_json::Value = serde_json::from_str(l).expect("one JSON object per refresh");
        assert_eq!(m["running"], true);
        for p in [pa, pb] {
            assert_eq!(
                proc_of(&m, p).map(|p| p["alive"].clone()),
                Some(serde_json::Value::Bool(true)),
                "{m}"
            );
        }
        let used: u64 = m["processes"].as_array().expect("procs").iter().map(|p| dev0(p, "used_bytes")).sum();
        assert_eq!(m["devices"][0]["hbm_used_bytes"].as_u64(), Some(used), "{m}");
    }
    // Dead but not reaped yet, C shows as dead; a survivor's memory query reaps it.
    let m = smi_json(&inst);
    if let Some(p) = proc_of(&m, pc) {
        assert_eq!(p["alive"], false, "{p}");
    }
    let free: u64 = a.cmd("mem").strip_prefix("free ").and_then(|f| f.parse().ok()).expect("free");
    let m = smi_json(&inst);
    assert!(proc_of(&m, pc).is_none(), "C reaped: {m}");
    assert_eq!(m["devices"][0]["hbm_used_bytes"].as_u64(), Some((1 << 30) - free), "{m}");

    b.quit();
    a.quit();
    let m = smi_json(&inst);
    assert_eq!(m["running"], false, "the last process out removed the machine: {m}");
}
