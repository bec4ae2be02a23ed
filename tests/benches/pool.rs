//! Benchmark of the stream-ordered pools through the C ABI (`tests/c/pool_bench.c` against the
//! release `libascendcl`): the seed's contrast of N kernel launches with temporary buffers, the
//! host cost of a MallocAsync + FreeAsync pair against aclrtMalloc + aclrtFree, and trace
//! replays through a pool on the software NPU; the same pair on a bare `mm::pool` in this
//! process (the floor the C ABI is measured against), and the C-ABI pair with 0 and 10,000 other
//! live pool blocks; and the cost of `ACLRS_SANITIZE=memcheck` on the contrast and the
//! `ctx128_forward` replay (each run with it off and on, in this run). Prints Markdown tables;
//! asserts nothing about time.

use std::process::Command;

use aclrs_tests::bench::{quick, time_samples, Stats, Table};
use aclrs_tests::{compile_bench_c, kernel_library, workspace};
use hal::{DeviceAddr, VaRange};
use mm::order::{StreamOrder, StreamPoint};
use mm::pool::{Pool, PoolBacking, ReuseModes};

/// VA for a bare pool: fresh ranges, backing that always succeeds (no driver).
struct BareVa(u64);

impl PoolBacking for BareVa {
    fn reserve(&mut self, len: u64) -> Result<VaRange, hal::Error> {
        let r = VaRange::try_new(DeviceAddr(self.0), len)?;
        self.0 += len;
        Ok(r)
    }

    fn unreserve(&mut self, _: VaRange) -> Result<(), hal::Error> {
        Ok(())
    }

    fn back(&mut self, _: VaRange) -> Result<(), hal::Error> {
        Ok(())
    }

    fn unback(&mut self, _: VaRange) -> Result<(), hal::Error> {
        Ok(())
    }
}

/// One stream whose work never completes: a block freed on it is reused by it alone (the
/// C-ABI pair's situation).
struct OneStream;

impl StreamOrder for OneStream {
    fn is_complete(&self, _: StreamPoint) -> bool {
        false
    }

    fn is_ordered_before(&self, p: StreamPoint, stream: u32) -> bool {
        p.stream == stream
    }
}

/// Median ns of one allocate + free pair of 4 KiB on a bare `mm::pool`, over 15 rounds of `n`.
fn bare_pool_pair(n: u64) -> Stats {
    let mut pool = Pool::new(256 << 20, ReuseModes::default());
    let mut va = BareVa(16 << 40);
    let mut seq = 0u64;
    let samples = time_samples(2, 15, || {
        for _ in 0..n {
            let g = pool.allocate(&mut va, &OneStream, 1, 4096).expect("bare pool allocate");
            seq += 1;
            pool.free(g.addr, 1, seq).expect("bare pool free");
        }
    });
    // CAST: n is at most a few hundred thousand.
    Stats::of(&samples.iter().map(|s| s * 1e9 / n as f64).collect::<Vec<_>>())
}

/// The median of the C-ABI MallocAsync + FreeAsync row of the `pairs` table.
fn c_abi_pair_median(tables: &[(String, Table)]) -> Option<f64> {
    tables.iter().find_map(|(_, t)| {
        let m = t.header().iter().position(|c| c == "median ns")?;
        let row = t.rows().iter().find(|r| r[0].starts_with("aclrtMemPoolMallocAsync"))?;
        row[m].parse().ok()
    })
}

/// Appends "vs target" (median over the `<= N` target) to a table that has both columns.
fn with_target_ratio(t: Table) -> Table {
    let (h, rows) = (t.header(), t.rows());
    let col = |name: &str| h.iter().position(|c| c == name);
    let (Some(m), Some(g)) = (col("median ns"), col("target")) else { return t };
    let mut header: Vec<&str> = h.iter().map(String::as_str).collect();
    header.push("vs target");
    let mut out = Table::new(&header);
    for r in rows {
        let target = r[g].strip_prefix("<= ").and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
        let ratio = match (r[m].parse::<f64>(), target) {
            (Ok(v), Some(t)) => format!("{:.2}×", v / t),
            _ => "–".to_owned(),
        };
        let mut cells = r.clone();
        cells.push(ratio);
        out.row(cells);
    }
    out
}

fn main() {
    let q = quick();
    let exe = compile_bench_c("pool_bench");
    let so = kernel_library("pool_kernels", "bench");
    let instance = format!("bench-{}", std::process::id());
    // One run of pool_bench, its tables parsed; `memcheck`: with ACLRS_SANITIZE=memcheck;
    // `print`: its tables printed (the memcheck cost runs only feed their own table).
    let exec = |args: &[String], hbm: &str, memcheck: bool, print: bool| -> Vec<(String, Table)> {
        let mut c = Command::new(&exe);
        c.args(args)
            .env("ACLRS_TEST_KERNELS", &so)
            .env("ACLRS_SIM_INSTANCE", &instance)
            .env("ACLRS_SIM_HBM", hbm)
            .env_remove("ACLRS_SIM_SOC")
            .env_remove("ACLRS_SANITIZE");
        if memcheck {
            c.env("ACLRS_SANITIZE", "memcheck");
        }
        let out = c.output().expect("run pool_bench");
        let text = String::from_utf8_lossy(&out.stdout);
        if print {
            // Re-printed through `Table::print`, so the tables also come out as JSON lines; a
            // table with a "median ns" and a "<= N" target gains its ratio to the target.
            for (title, table) in Table::parse_markdown(&text) {
                with_target_ratio(table).print("pool", &title);
            }
        }
        if !out.status.success() {
            eprintln!(
                "pool_bench {args:?} (memcheck {memcheck}) failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Table::parse_markdown(&text)
    };
    let run = |args: &[String], hbm: &str| exec(args, hbm, false, true);
    let n = if q { "500" } else { "3000" };
    let contrast_off = run(&["contrast".into(), n.into()], "8G");
    let pairs = if q { "20000" } else { "100000" };
    let pair_tables = run(&["pairs".into(), pairs.into()], "8G");
    let bare = bare_pool_pair(pairs.parse().unwrap_or(100_000));
    let mut t = Table::new(&["pair", "median ns", "spread ns", "vs bare mm::pool", "target"]);
    t.row(vec![
        "mm::pool allocate + free (bare, no runtime)".into(),
        format!("{:.0}", bare.median),
        bare.spread(0),
        "1.00×".into(),
        "-".into(),
    ]);
    if let Some(c) = c_abi_pair_median(&pair_tables) {
        t.row(vec![
            "aclrtMemPoolMallocAsync + aclrtMemPoolFreeAsync (C ABI, same run)".into(),
            format!("{c:.0}"),
            "-".into(),
            format!("{:.2}×", c / bare.median),
            "<= 1.5×".into(),
        ]);
    }
    t.print(
        "pool",
        "Pool pair through the C ABI against a bare mm::pool (4 KiB, one stream; median of 15 rounds)",
    );
    run(&["live".into(), pairs.into()], "8G");
    let dir = workspace().parent().map(|p| p.join("shared/traces")).unwrap_or_default();
    let mut traces: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "trace"))
                .map(|p| p.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    traces.sort();
    if q {
        traces.retain(|t| t.ends_with("ctx128_forward.trace"));
    }
    if !traces.is_empty() {
        let mut args = vec!["traces".to_owned()];
        args.extend(traces);
        // Replays map pages but touch none: a large sparse HBM costs no RAM.
        run(&args, "64G");
    }
    memcheck_cost(&contrast_off, n, &dir, &exec);
}

/// Tables parsed from a run of `pool_bench`: (title, table).
type Tables = Vec<(String, Table)>;

/// One run of `pool_bench`: (arguments, HBM size, memcheck on, print its tables).
type Exec<'a> = &'a dyn Fn(&[String], &str, bool, bool) -> Tables;

/// The cell in column `col` of the first row whose first cell starts with `row`, as a number.
fn cell(tables: &[(String, Table)], col: &str, row: &str) -> Option<f64> {
    tables.iter().find_map(|(_, t)| {
        let c = t.header().iter().position(|h| h == col)?;
        t.rows().iter().find(|r| r[0].starts_with(row))?.get(c)?.parse().ok()
    })
}

/// The "memcheck cost" table: the seed's contrast (both ways) and the `ctx128_forward` replay,
/// each with `ACLRS_SANITIZE=memcheck` off and on, in this run (`contrast_off`: the contrast
/// run printed above, off).
fn memcheck_cost(contrast_off: &[(String, Table)], n: &str, traces: &std::path::Path, exec: Exec<'_>) {
    let contrast_on = exec(&["contrast".into(), n.into()], "8G", true, false);
    let trace = traces.join("ctx128_forward.trace");
    let (replay_off, replay_on) = if trace.exists() {
        let args = ["traces".to_owned(), trace.display().to_string()];
        (exec(&args, "64G", false, false), exec(&args, "64G", true, false))
    } else {
        (Vec::new(), Vec::new())
    };
    let mut t = Table::new(&["measurement", "off", "memcheck on", "on / off"]);
    let mut row = |what: String, col: &str, first: &str, off: &[(String, Table)], on: &[(String, Table)]| {
        let (a, b) = (cell(off, col, first), cell(on, col, first));
        let show = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
        let ratio = match (a, b) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:.2}×", b / a),
            _ => "–".to_owned(),
        };
        t.row(vec![what, show(a), show(b), ratio]);
    };
    row(
        format!("contrast: aclrtMalloc, launch, sync, aclrtFree (us per launch, {n} launches)"),
        "us per launch",
        "aclrtMalloc,",
        contrast_off,
        &contrast_on,
    );
    row(
        format!("contrast: aclrtMemPoolMallocAsync, launch, FreeAsync (us per launch, {n} launches)"),
        "us per launch",
        "aclrtMemPoolMallocAsync,",
        contrast_off,
        &contrast_on,
    );
    row(
        "trace replay ctx128_forward through a pool (ns per event)".to_owned(),
        "ns per event",
        "ctx128_forward",
        &replay_off,
        &replay_on,
    );
    t.print(
        "pool",
        "memcheck cost: ACLRS_SANITIZE=memcheck off and on, same run (release library, report only)",
    );
}
