//! Kernel binaries given as bytes (`aclrtBinaryLoadFromData`, `aclrtBinaryLoad`): the bytes go
//! to an anonymous in-memory file ([`crate::sys::memfd`]) that is opened like a binary file
//! ([`Sim::load_binary`]), then closed (the dynamic linker keeps its own mapping).
//!
//! This module owns only that path from bytes to a loaded binary; the binary and function
//! tables are [`crate::kernel`]'s.

use std::os::fd::AsRawFd;
use std::path::PathBuf;

use crate::Sim;

/// The first bytes of an ELF object.
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];

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
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let r = self.load_binary(&path);
        drop(file);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_elf_are_refused_before_any_file_is_made() {
        let sim_less = |d: &[u8]| d.len() < 4 || d[..4] != ELF_MAGIC;
        assert!(sim_less(b"\x7fEL"));
        assert!(sim_less(b"MZ\x90\x00"));
        assert!(!sim_less(b"\x7fELF\x02"));
    }

    #[test]
    fn a_memfd_holds_the_bytes() {
        let f = crate::sys::memfd::with_bytes(c"aclrs-test", b"\x7fELFabc").unwrap();
        let back = std::fs::read(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap();
        assert_eq!(back, b"\x7fELFabc");
    }
}
