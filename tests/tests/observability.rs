//! Memory observability: the snapshot, summary and out-of-memory figures of `tests/c/mem_snapshot.c`
//! (the pickle is read back with Python's standard `pickle`), and `aclrs-smi` against live
//! processes.

use std::process::Command;

use aclrs_tests::{compile_c, Link};

/// Python that loads the snapshot and checks its structure against the figures the C program
/// printed (`USED`, `ADDRS`); it prints `PICKLE OK` and a line of totals.
const CHECK_PY: &str = r#"
import pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
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
allocs = [e for e in t0 if e["action"] == "alloc"]
assert allocs[0]["addr"] == big and allocs[0]["size"] >= 8 << 20
assert any(e["action"] == "alloc" and e["addr"] == pb and e["stream"] != 0 for e in t0)
assert any(any(f["name"].startswith("main") or "mem_snapshot" in f["filename"] for f in e["frames"]) or e["frames"] for e in allocs)
print("PICKLE OK", len(segs), "segments", len(t0), "events", backed, "bytes")
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
    let fin = Command::new("python3")
        .arg("-c")
        .arg("import pickle,sys; s=pickle.load(open(sys.argv[1],'rb')); assert s['segments']==[], s['segments']; a=[e['action'] for e in s['device_traces'][0]]; assert 'oom' in a, a; print('FINAL OK', len(a))")
        .arg(&at_exit)
        .output()
        .expect("run python3");
    let text = format!("{}{}", String::from_utf8_lossy(&fin.stdout), String::from_utf8_lossy(&fin.stderr));
    assert!(fin.status.success() && text.contains("FINAL OK"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
