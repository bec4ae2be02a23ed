//! Sanitizer findings: one JSON object per line (`serde_json`) and one readable line each, in
//! `ACLRS_SANITIZE_LOG` (default: standard error; the readable line goes to standard error
//! too), and the count `aclrsSanitizerFindings` returns.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use super::settings;

/// Findings reported since the process started.
static FINDINGS: AtomicU64 = AtomicU64::new(0);

/// How many findings were reported in this process.
pub fn findings() -> u64 {
    FINDINGS.load(Ordering::Relaxed)
}

/// One finding of the sanitizer (or a contained fault it explained).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Finding {
    /// `out-of-bounds`, `use-after-free`, `unmapped`, `unordered-use` or `leak`.
    pub kind: &'static str,
    /// The logical device.
    pub device: u32,
    /// The address concerned.
    pub address: u64,
    /// The allocation it lies in or next to: base and requested size.
    pub allocation: Option<(u64, u64)>,
    /// The stream handle, when known.
    pub stream: Option<u64>,
    /// The task kind (`kernel`, `copy`, `memset`, `host function`), when known.
    pub task: Option<&'static str>,
    /// The host frames of the allocating call, when known.
    pub alloc_site: Vec<String>,
    /// The host frames of the freeing call, when known.
    pub free_site: Vec<String>,
    /// What happened, in words.
    pub detail: String,
}

impl Finding {
    /// The JSON object of the finding (one line).
    pub fn to_json(&self) -> String {
        let mut v = serde_json::json!({
            "kind": self.kind,
            "device": self.device,
            "address": format!("{:#x}", self.address),
            "detail": self.detail,
        });
        if let Some((base, size)) = self.allocation {
            v["allocation"] = serde_json::json!({ "base": format!("{base:#x}"), "size": size });
        }
        if let Some(s) = self.stream {
            v["stream"] = serde_json::json!(format!("{s:#x}"));
        }
        if let Some(t) = self.task {
            v["task"] = serde_json::json!(t);
        }
        if !self.alloc_site.is_empty() {
            v["alloc_site"] = serde_json::json!(self.alloc_site);
        }
        if !self.free_site.is_empty() {
            v["free_site"] = serde_json::json!(self.free_site);
        }
        v.to_string()
    }

    /// The readable line of the finding.
    pub fn to_line(&self) -> String {
        let alloc =
            self.allocation.map_or_else(String::new, |(b, s)| format!(" [allocation {b:#x}, {s} bytes]"));
        let at = self.alloc_site.first().map_or_else(String::new, |f| format!("; allocated at {f}"));
        let freed = self.free_site.first().map_or_else(String::new, |f| format!("; freed at {f}"));
        format!(
            "aclrs sanitizer: {} on device {} at {:#x}{alloc}: {}{at}{freed}",
            self.kind, self.device, self.address, self.detail
        )
    }
}

/// Reports `f`: counts it and writes its JSON line and readable line.
pub fn emit(f: &Finding) {
    FINDINGS.fetch_add(1, Ordering::Relaxed);
    let json = f.to_json();
    let line = f.to_line();
    eprintln!("{line}");
    match &settings().log {
        Some(path) => {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(format!("{json}\n{line}\n").as_bytes()));
            if let Err(e) = written {
                eprintln!("aclrs sanitizer: cannot write {}: {e}; the finding: {json}", path.display());
            }
        }
        None => eprintln!("{json}"),
    }
}

/// The host frames of the calling thread, as `function (file:line)` strings, without the
/// runtime's own frames (at most 8).
pub fn host_site() -> Vec<String> {
    let ips = crate::state::obs::capture_ips();
    let mut out = Vec::new();
    for ip in ips.iter() {
        for fr in crate::state::obs::frames_of(*ip) {
            // The runtime's own frames (its sources, the Rust library) are not the host call site.
            let own_file = ["/acl-shim/src/", "/hal/sim/src/", "/rustc/", "/.cargo/registry/"];
            let own_name = ["ascendcl::", "hal_sim::", "backtrace::", "std::", "core::", "<"];
            if own_file.iter().any(|p| fr.filename.contains(p))
                || own_name.iter().any(|p| fr.name.starts_with(p))
            {
                continue;
            }
            out.push(if fr.filename.is_empty() {
                fr.name
            } else {
                format!("{} ({}:{})", fr.name, fr.filename, fr.line)
            });
            if out.len() >= 8 {
                return out;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_one_json_line_with_its_fields() {
        let f = Finding {
            kind: "out-of-bounds",
            device: 0,
            address: 0x1100,
            allocation: Some((0x1000, 256)),
            stream: Some(0x77),
            task: Some("kernel"),
            alloc_site: vec!["main (a.c:3)".into()],
            free_site: Vec::new(),
            detail: "1 byte past the end".into(),
        };
        let j = f.to_json();
        assert!(!j.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
        assert_eq!(v["kind"], "out-of-bounds");
        assert_eq!(v["allocation"]["base"], "0x1000");
        assert_eq!(v["allocation"]["size"], 256);
        assert_eq!(v["task"], "kernel");
        assert_eq!(v["alloc_site"][0], "main (a.c:3)");
        assert!(v.get("free_site").is_none());
        assert!(f.to_line().contains("out-of-bounds on device 0 at 0x1100 [allocation 0x1000, 256 bytes]"));
    }
}
