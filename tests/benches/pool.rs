//! Benchmark of the stream-ordered pools through the C ABI (`tests/c/pool_bench.c` against the
//! release `libascendcl`): the seed's contrast of N kernel launches with temporary buffers, the
//! host cost of a MallocAsync + FreeAsync pair against aclrtMalloc + aclrtFree, and trace
//! replays through a pool on the software NPU. Prints Markdown tables; asserts nothing about
//! time.

use std::process::Command;

use aclrs_tests::bench::{quick, Table};
use aclrs_tests::{compile_bench_c, kernel_library, workspace};

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
    let run = |args: &[String], hbm: &str| {
        let out = Command::new(&exe)
            .args(args)
            .env("ACLRS_TEST_KERNELS", &so)
            .env("ACLRS_SIM_INSTANCE", &instance)
            .env("ACLRS_SIM_HBM", hbm)
            .env_remove("ACLRS_SIM_SOC")
            .output()
            .expect("run pool_bench");
        // Re-printed through `Table::print`, so the tables also come out as JSON lines; a
        // table with a "median ns" and a "<= N" target gains its ratio to the target.
        for (title, table) in Table::parse_markdown(&String::from_utf8_lossy(&out.stdout)) {
            with_target_ratio(table).print("pool", &title);
        }
        if !out.status.success() {
            eprintln!("pool_bench {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    };
    let n = if q { "500" } else { "3000" };
    run(&["contrast".into(), n.into()], "8G");
    let pairs = if q { "20000" } else { "100000" };
    run(&["pairs".into(), pairs.into()], "8G");
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
}
