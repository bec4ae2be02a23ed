//! The software NPU's checks of device memory use: contained kernel faults named by address and
//! allocation ([`fault`]), and `ACLRS_SANITIZE` — guards, redzones and a quarantine around
//! allocations ([`memcheck`]), leaks at reset ([`leak`]), unordered use of pool blocks
//! ([`race`]) — with its findings ([`report`]).
//!
//! This module owns how a failure the device found, or a misuse the sanitizer found, is
//! explained to the program. It reads the fault the backend kept for a queue
//! (`hal_sim::fault`) and the device's address map. Its files are `impl Runtime` blocks beside
//! [`crate::api`], below the C and Rust APIs; nothing in [`crate::state`] or
//! [`crate::runtime`] uses it. Off (the default), every hook is one load of the settings.
//!
//! # Settings
//!
//! - `ACLRS_SANITIZE`: a comma-separated subset of `memcheck`, `leak`, `race`, or `all`
//!   Unknown words are named on standard error and ignored.
//! - `ACLRS_SANITIZE_QUARANTINE`: bytes of freed memory kept inaccessible before it is really
//!   freed (default 256 MiB; suffixes K, M, G).
//! - `ACLRS_SANITIZE_LOG`: the file findings are appended to, one JSON object per line plus a
//!   readable line each (default: standard error).

pub mod fault;
pub mod leak;
pub mod memcheck;
pub mod race;
pub mod report;

use std::sync::OnceLock;

/// What `ACLRS_SANITIZE` turned on, read once per process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Guards, redzones and the quarantine.
    pub memcheck: bool,
    /// Leak reports at reset and finalize.
    pub leak: bool,
    /// Unordered use of pool blocks.
    pub race: bool,
    /// Bytes the quarantine keeps.
    pub quarantine_bytes: u64,
    /// Where findings go (`None`: standard error).
    pub log: Option<std::path::PathBuf>,
}

/// The quarantine's size when `ACLRS_SANITIZE_QUARANTINE` is not set: 256 MiB.
pub const DEFAULT_QUARANTINE_BYTES: u64 = 256 << 20;

fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mul) = match v.char_indices().last()? {
        (i, 'K' | 'k') => (&v[..i], 1u64 << 10),
        (i, 'M' | 'm') => (&v[..i], 1 << 20),
        (i, 'G' | 'g') => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

impl Settings {
    /// Parses the values of `ACLRS_SANITIZE`, `ACLRS_SANITIZE_QUARANTINE` and
    /// `ACLRS_SANITIZE_LOG`; the words it did not understand come back with it.
    pub fn parse(modes: Option<&str>, quarantine: Option<&str>, log: Option<&str>) -> (Self, Vec<String>) {
        let mut s = Self { quarantine_bytes: DEFAULT_QUARANTINE_BYTES, ..Self::default() };
        let mut bad = Vec::new();
        for w in modes.unwrap_or("").split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "memcheck" => s.memcheck = true,
                "leak" => s.leak = true,
                "race" => s.race = true,
                "all" => (s.memcheck, s.leak, s.race) = (true, true, true),
                other => bad.push(format!("ACLRS_SANITIZE: unknown check '{other}'")),
            }
        }
        if let Some(q) = quarantine.filter(|q| !q.is_empty()) {
            match parse_bytes(q) {
                Some(b) => s.quarantine_bytes = b,
                None => bad.push(format!("ACLRS_SANITIZE_QUARANTINE: '{q}' is not a byte count")),
            }
        }
        s.log = log.filter(|l| !l.is_empty()).map(std::path::PathBuf::from);
        (s, bad)
    }

    /// Whether any check is on.
    pub fn any(&self) -> bool {
        self.memcheck || self.leak || self.race
    }
}

/// The process's settings (read from the environment on first use).
pub fn settings() -> &'static Settings {
    static S: OnceLock<Settings> = OnceLock::new();
    S.get_or_init(|| {
        let var = |k: &str| std::env::var(k).ok();
        let (s, bad) = Settings::parse(
            var("ACLRS_SANITIZE").as_deref(),
            var("ACLRS_SANITIZE_QUARANTINE").as_deref(),
            var("ACLRS_SANITIZE_LOG").as_deref(),
        );
        for b in bad {
            eprintln!("aclrs: {b} (ignored)");
        }
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse() {
        let (s, bad) = Settings::parse(Some("memcheck, leak"), Some("4M"), Some("/tmp/x"));
        assert!(s.memcheck && s.leak && !s.race && bad.is_empty());
        assert_eq!(s.quarantine_bytes, 4 << 20);
        assert_eq!(s.log.as_deref(), Some(std::path::Path::new("/tmp/x")));
        let (s, bad) = Settings::parse(Some("all,bogus"), Some("lots"), None);
        assert!(s.memcheck && s.leak && s.race && s.log.is_none());
        assert_eq!(s.quarantine_bytes, DEFAULT_QUARANTINE_BYTES);
        assert_eq!(bad.len(), 2);
        let (s, _) = Settings::parse(None, None, None);
        assert!(!s.any());
    }
}
