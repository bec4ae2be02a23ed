//! Anonymous in-memory files (`memfd_create`) holding a kernel binary's bytes, so that the
//! dynamic linker can open a binary given as data (`aclrtBinaryLoadFromData`) through
//! `/proc/self/fd/N`, with no file on disk and no `noexec` mount in the way.
//!
//! This module owns only the file's creation; opening it as a library is [`super::kernel`]'s.

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};

/// A sealed-size anonymous file holding `bytes` (closed on exec).
///
/// # Errors
///
/// The system's error when the file cannot be created or written.
pub(crate) fn with_bytes(name: &CStr, bytes: &[u8]) -> io::Result<File> {
    // SAFETY: `name` is NUL-terminated; the call takes no other pointer.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor this function owns from here on (closed on drop).
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    Ok(file)
}
