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

/// Runs each of `fs` `warmup` times, then `samples` times, the functions taking turns (one
/// call of each per round), returning seconds per call for each. A ratio of two of them is
/// then taken over the same stretch of the run: a phase in which the machine is slower for
/// a while (another tenant, a frequency change) slows both, instead of only the one measured
/// in it.
pub fn time_interleaved(warmup: usize, samples: usize, fs: &mut [&mut dyn FnMut()]) -> Vec<Vec<f64>> {
    for _ in 0..warmup {
        for f in fs.iter_mut() {
            f();
        }
    }
    let mut out: Vec<Vec<f64>> = fs.iter().map(|_| Vec::with_capacity(samples)).collect();
    for _ in 0..samples {
        for (f, o) in fs.iter_mut().zip(out.iter_mut()) {
            let t = Instant::now();
            f();
            o.push(t.elapsed().as_secs_f64());
        }
    }
    out
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

    /// The column names.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// The rows, in order.
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
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

impl Table {
    /// Prints the table under a `### title` heading, and, when the run asks for machine-readable
    /// output (`ACLRS_BENCH_JSON` set, as `cargo xtask bench` does), one `JSON: {...}` line per
    /// row naming the bench, the table, and each column's value (a number where the cell is one).
    pub fn print(&self, bench: &str, title: &str) {
        println!("### {title}\n");
        println!("{}", self.render());
        if std::env::var_os("ACLRS_BENCH_JSON").is_some() {
            for line in self.json_lines(bench, title) {
                println!("{line}");
            }
        }
    }

    /// The `JSON: {...}` lines of [`print`](Self::print), one per row.
    pub fn json_lines(&self, bench: &str, title: &str) -> Vec<String> {
        self.rows
            .iter()
            .map(|r| {
                let cells: Vec<String> = self
                    .header
                    .iter()
                    .zip(r)
                    .map(|(h, c)| format!("{}:{}", json_string(h), json_value(c)))
                    .collect();
                format!(
                    "JSON: {{\"bench\":{},\"table\":{},\"row\":{{{}}}}}",
                    json_string(bench),
                    json_string(title),
                    cells.join(",")
                )
            })
            .collect()
    }

    /// Reads the Markdown tables of `text` (as printed by a C benchmark program): each table
    /// with the `### ` heading above it.
    pub fn parse_markdown(text: &str) -> Vec<(String, Table)> {
        let mut out: Vec<(String, Table)> = Vec::new();
        let mut title = String::new();
        let mut current: Option<Table> = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(t) = line.strip_prefix("### ") {
                title = t.trim().to_owned();
                continue;
            }
            if !line.starts_with('|') {
                if let Some(t) = current.take() {
                    out.push((title.clone(), t));
                }
                continue;
            }
            let cells: Vec<String> = line.trim_matches('|').split('|').map(|c| c.trim().to_owned()).collect();
            match current.as_mut() {
                None => current = Some(Table { header: cells, rows: Vec::new() }),
                Some(_) if cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) => {}
                Some(t) => t.rows.push(cells),
            }
        }
        if let Some(t) = current.take() {
            out.push((title, t));
        }
        out
    }
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A table cell as a JSON value: a number when the cell is one (a trailing `×` or `%` is
/// dropped), otherwise a string.
pub fn json_value(cell: &str) -> String {
    let t = cell.trim().trim_end_matches(['×', 'x', '%']).trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => format!("{v}"),
        _ => json_string(cell),
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
    fn tables_round_trip_through_markdown_and_json() {
        let text = "### T \"q\"\n\n| a | b |\n|---|---|\n| x | 2.5× |\n\nrest\n";
        let parsed = Table::parse_markdown(text);
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].0, "T \"q\"");
        assert_eq!(
            parsed[0].1.json_lines("b", &parsed[0].0),
            vec![r#"JSON: {"bench":"b","table":"T \"q\"","row":{"a":"x","b":2.5}}"#.to_owned()]
        );
    }

    #[test]
    fn tables_render_markdown() {
        let mut t = Table::new(&["a", "b"]);
        t.row(vec!["1".into(), "2".into()]);
        assert_eq!(t.render(), "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }
}
