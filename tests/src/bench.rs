//! A small benchmark harness: repeated samples after warm-up, medians with their spread, and a
//! Markdown table. Benchmarks report ratios against a peer or a floor measured in the same run;
//! nothing here asserts a time.

use std::time::Instant;

/// Summary of repeated measurements of one quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Median.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

impl Stats {
    /// Summarises `samples` (at least one).
    ///
    /// # Panics
    ///
    /// When `samples` is empty.
    pub fn of(samples: &[f64]) -> Self {
        assert!(!samples.is_empty(), "no samples");
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| {
            // CAST: the index is within the sample count.
            let i = ((v.len() - 1) as f64 * q).round() as usize;
            v[i.min(v.len() - 1)]
        };
        Self { median: at(0.5), p99: at(0.99), min: v[0], max: v[v.len() - 1] }
    }

    /// The spread as "min–max".
    pub fn spread(&self, digits: usize) -> String {
        format!("{:.digits$}–{:.digits$}", self.min, self.max)
    }
}

/// Runs `f` `warmup` times, then `samples` times, returning seconds per call.
pub fn time_samples(warmup: usize, samples: usize, mut f: impl FnMut()) -> Vec<f64> {
    for _ in 0..warmup {
        f();
    }
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect()
}

/// A Markdown table built row by row.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Self { header: header.iter().map(|s| (*s).to_owned()).collect(), rows: Vec::new() }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders the table as Markdown.
    pub fn render(&self) -> String {
        let mut out = format!("| {} |\n|{}\n", self.header.join(" | "), "---|".repeat(self.header.len()));
        for r in &self.rows {
            out.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        out
    }
}

/// Whether the benchmark should run its short form (`ACLRS_BENCH_QUICK=1` or `--quick`).
pub fn quick() -> bool {
    std::env::var_os("ACLRS_BENCH_QUICK").is_some() || std::env::args().any(|a| a == "--quick")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_pick_order_statistics() {
        let s = Stats::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.p99, 5.0);
        assert_eq!(s.spread(1), "1.0–5.0");
    }

    #[test]
    fn tables_render_markdown() {
        let mut t = Table::new(&["a", "b"]);
        t.row(vec!["1".into(), "2".into()]);
        assert_eq!(t.render(), "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }
}
