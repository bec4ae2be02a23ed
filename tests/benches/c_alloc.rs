//! `aclrtMalloc` + `aclrtFree` through the C ABI (`tests/c/alloc_bench.c` against the release
//! `libascendcl`) on the software NPU: the pair with few live allocations against the pair with
//! many live allocations of the same kind, alone and with a second process attached to the
//! machine; and the page-backed pairs against a bare `mmap` + `munmap` of the same size measured
//! in the same run (the host kernel's floor for giving and taking back memory). Prints Markdown
//! tables; asserts nothing about time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use aclrs_tests::bench::{quick, Table};
use aclrs_tests::compile_bench_c;

/// HBM of the benchmark machine: sparse, so its size costs no RAM until written.
const HBM: &str = "120G";
const HUGE_FIRST: u32 = 0;
const NORMAL_ONLY: u32 = 2;

/// Median, min and max ns per pair, parsed from a "pair <median> <min> <max>" line.
type Pair = (f64, f64, f64);

fn parse_pair(out: &str) -> Option<Pair> {
    let l = out.lines().find_map(|l| l.strip_prefix("pair "))?;
    let v: Vec<f64> = l.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    (v.len() == 3).then(|| (v[0], v[1], v[2]))
}

struct Bench {
    exe: std::path::PathBuf,
    runs: u32,
}

impl Bench {
    fn instance(&mut self) -> String {
        self.runs += 1;
        format!("bench-alloc-{}-{}", std::process::id(), self.runs)
    }

    fn command(&self, instance: &str) -> Command {
        let mut c = Command::new(&self.exe);
        c.env("ACLRS_SIM_INSTANCE", instance)
            .env("ACLRS_SIM_HBM", HBM)
            .env("ACLRS_SIM_HUGE2M", HBM)
            .env("ACLRS_SIM_HUGE1G", "0")
            .env("ACLRS_SIM_DEVICES", "1")
            .env_remove("ACLRS_SIM_SOC")
            .env_remove("ASCEND_RT_VISIBLE_DEVICES");
        c
    }

    /// The pair of `bytes`/`policy` with `live` kept, with a second process attached when
    /// `second`.
    fn pairs(
        &mut self,
        bytes: u64,
        policy: u32,
        live: u64,
        second: bool,
        n: u64,
        rounds: u32,
    ) -> Option<Pair> {
        let inst = self.instance();
        let mut other: Option<Child> = None;
        if second {
            let mut c = self
                .command(&inst)
                .args(["hold", &bytes.to_string(), &policy.to_string(), "10"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .ok()?;
            let mut line = String::new();
            BufReader::new(c.stdout.take()?).read_line(&mut line).ok()?;
            if line.trim() != "ready" {
                eprintln!("c_alloc: the second process did not start");
                let _ = c.kill();
                let _ = c.wait();
                return None;
            }
            other = Some(c);
        }
        let out = self
            .command(&inst)
            .args(["pairs", &bytes.to_string(), &policy.to_string(), &live.to_string(), &n.to_string()])
            .arg(rounds.to_string())
            .output()
            .ok()?;
        if let Some(mut c) = other {
            if let Some(mut stdin) = c.stdin.take() {
                let _ = writeln!(stdin, "done");
            }
            let _ = c.wait();
        }
        if !out.status.success() {
            eprintln!(
                "c_alloc: pairs {bytes} {policy} {live} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        parse_pair(&String::from_utf8_lossy(&out.stdout))
    }

    fn bare_mmap(&self, bytes: u64, n: u64, rounds: u32) -> Option<Pair> {
        let out = Command::new(&self.exe)
            .args(["mmap", &bytes.to_string(), &n.to_string(), &rounds.to_string()])
            .output()
            .ok()?;
        parse_pair(&String::from_utf8_lossy(&out.stdout))
    }
}

fn cell(p: Option<Pair>) -> (String, String) {
    match p {
        Some((m, lo, hi)) => (format!("{m:.0}"), format!("{lo:.0}–{hi:.0}")),
        None => ("failed".into(), "–".into()),
    }
}

fn ratio(a: Option<Pair>, b: Option<Pair>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.0 > 0.0 => format!("{:.2}×", a.0 / b.0),
        _ => "–".into(),
    }
}

fn main() {
    let q = quick();
    let mut b = Bench { exe: compile_bench_c("alloc_bench"), runs: 0 };
    let (n, rounds) = if q { (300, 5) } else { (1000, 11) };
    // 100,000 live of each kind, except where the 64 GiB `aclrtMalloc` half of the device's VA
    // window cannot hold them: a 4 MiB HUGE_FIRST allocation (4 MiB + 32 bytes of padding) takes
    // 6 MiB of 2 MiB-aligned VA, so at most about 10,900 fit.
    let many = if q { 10_000 } else { 100_000 };
    let kinds: [(&str, u64, u32, u64); 3] = [
        ("4 KiB HUGE_FIRST", 4 << 10, HUGE_FIRST, many),
        ("128 KiB NORMAL_ONLY", 128 << 10, NORMAL_ONLY, many),
        ("4 MiB HUGE_FIRST", 4 << 20, HUGE_FIRST, if q { 5_000 } else { 10_000 }),
    ];
    let mut scale = Table::new(&[
        "pair",
        "second process",
        "10 live ns",
        "10 live spread",
        "many live",
        "many live ns",
        "many live spread",
        "many/10",
        "target",
    ]);
    let mut pairs_at_10 = Vec::new();
    for &(name, bytes, policy, count) in &kinds {
        for second in [false, true] {
            let few = b.pairs(bytes, policy, 10, second, n, rounds);
            let lot = b.pairs(bytes, policy, count, second, n, rounds);
            if !second {
                pairs_at_10.push((name, bytes, few));
            }
            let (fm, fs) = cell(few);
            let (lm, ls) = cell(lot);
            scale.row(vec![
                name.into(),
                if second { "attached" } else { "none" }.into(),
                fm,
                fs,
                count.to_string(),
                lm,
                ls,
                ratio(lot, few),
                "<= 1.2×".into(),
            ]);
        }
    }
    scale.print(
        "c_alloc",
        "aclrtMalloc + aclrtFree through the C ABI: 10 live vs many live allocations of the same kind",
    );

    let mut floor =
        Table::new(&["pair", "median ns", "spread", "bare mmap+munmap ns", "bare spread", "ratio", "target"]);
    for (name, bytes, pair) in pairs_at_10.into_iter().filter(|&(_, bytes, _)| bytes >= 128 << 10) {
        let bare = b.bare_mmap(bytes, n, rounds);
        let (pm, ps) = cell(pair);
        let (bm, bs) = cell(bare);
        floor.row(vec![name.into(), pm, ps, bm, bs, ratio(pair, bare), "<= 2×".into()]);
    }
    floor.print(
        "c_alloc",
        "Page-backed aclrtMalloc + aclrtFree against a bare mmap + munmap of the same size",
    );
}
