//! Kernel binaries given as bytes (`aclrtBinaryLoadFromData`, `aclrtBinaryLoad`): the bytes go
//! to an anonymous in-memory file ([`crate::sys::memfd`]) that is opened like a binary file
//! ([`Sim::load_binary`]), then closed (the dynamic linker keeps its own mapping).
//!
//! This module owns only that path from bytes to a loaded binary; the binary and function
//! tables are [`crate::kernel`]'s.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Sim;

/// The first bytes of an ELF object.
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];

/// Loads from bytes so far (each gets a path of its own).
static LOADS: AtomicU64 = AtomicU64::new(0);

/// A path of descriptor `fd` that no earlier load used: the dynamic linker takes a path it has
/// loaded before (by string) for the same object, and descriptor numbers are reused once the
/// earlier file is closed. Each bit of `n` (lowest first, up to its highest 1) adds
/// `../../self/fd/` (0) or `../fd/` (1) before the number; both name the same directory, and as
/// neither is a prefix of the other, no two `n` give one path (no `.` segments, which a
/// normalising path comparison would drop).
fn unique_fd_path(fd: i32, n: u64) -> PathBuf {
    let mut p = String::from("/proc/self/fd/");
    let mut bits = n;
    while bits > 0 {
        p.push_str(if bits & 1 == 1 { "../fd/" } else { "../../self/fd/" });
        bits >>= 1;
    }
    p.push_str(&fd.to_string());
    PathBuf::from(p)
}

impl Sim {
    /// Loads a kernel binary (a host shared object) from its bytes and returns its handle.
    ///
    /// # Errors
    ///
    /// A message saying why: the bytes are not an ELF object, the in-memory file cannot be
    /// made, or the dynamic linker's message.
    pub fn load_binary_data(&self, data: &[u8]) -> std::result::Result<u64, String> {
        if data.len() < ELF_MAGIC.len() || data[..ELF_MAGIC.len()] != ELF_MAGIC {
            return Err(format!(
                "the {} bytes are not an ELF shared object (a kernel binary of the software NPU)",
                data.len()
            ));
        }
        let file = crate::sys::memfd::with_bytes(c"aclrs-binary", data)
            .map_err(|e| format!("cannot hold the binary in memory: {e}"))?;
        let r = self.load_binary(&unique_fd_path(file.as_raw_fd(), LOADS.fetch_add(1, Ordering::Relaxed)));
        drop(file);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_has_its_own_path_to_the_same_file() {
        let f = crate::sys::memfd::with_bytes(c"aclrs-test", b"abc").unwrap();
        let paths: Vec<PathBuf> = (0..64).map(|n| unique_fd_path(f.as_raw_fd(), n)).collect();
        let unique: std::collections::BTreeSet<_> = paths.iter().map(|p| p.as_os_str()).collect();
        assert_eq!(unique.len(), paths.len());
        for p in &paths {
            assert_eq!(std::fs::read(p).unwrap(), b"abc", "{}", p.display());
        }
    }

    #[test]
    fn a_memfd_holds_the_bytes() {
        let f = crate::sys::memfd::with_bytes(c"aclrs-test", b"\x7fELFabc").unwrap();
        let back = std::fs::read(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap();
        assert_eq!(back, b"\x7fELFabc");
    }
}
