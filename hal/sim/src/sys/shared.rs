//! The cross-process primitives of the device registry: a file in `/dev/shm` with a whole-file
//! lock (the registry mutex) and one byte-range lock per attached process (its liveness mark).
//!
//! Both kinds of lock belong to the kernel: they go away when the process that holds them
//! dies, however it dies, which is what lets survivors reclaim a killed process's memory.
//! This module only takes, tests and drops locks and moves bytes; what the bytes mean is
//! [`crate::registry`]'s business.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Offset of the liveness byte of process 0; process `pid` locks byte `LIVE_BASE + pid`.
const LIVE_BASE: i64 = 1 << 40;

/// A registry file: shared bytes, a whole-file mutex and per-process liveness marks.
///
/// # Invariants
///
/// `file` is open read-write on `path`. While `live_pid` is `Some(p)`, this open file
/// description holds an open-file-description (OFD) write lock on byte `LIVE_BASE + p`.
#[derive(Debug)]
pub(crate) struct RegistryFile {
    file: File,
    path: PathBuf,
    live_pid: Option<u32>,
}

/// Proof that the registry mutex is held; dropping it unlocks.
#[derive(Debug)]
pub(crate) struct Locked<'a> {
    file: &'a RegistryFile,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: flock on our open descriptor only changes lock state.
        unsafe { libc::flock(self.file.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

fn ofd_lock(file: &File, cmd: libc::c_int, kind: libc::c_short, pid: u32) -> io::Result<libc::flock> {
    // SAFETY: an all-zero `flock` is a valid value of the plain C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    // CAST: SEEK_SET is 0, which fits in c_short.
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = LIVE_BASE + i64::from(pid);
    fl.l_len = 1;
    fl.l_pid = 0;
    // SAFETY: `file` is open; `fl` is a valid, writable flock struct that fcntl reads (and for
    // F_OFD_GETLK writes) only during the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut fl) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fl)
}

impl RegistryFile {
    /// Opens (creating if needed) the registry file at `path`.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
        Ok(Self { file, path: path.to_owned(), live_pid: None })
    }

    /// Whether the path still names this file (the last process out may have removed it while
    /// this one waited for the lock).
    pub(crate) fn is_current(&self, _held: &Locked<'_>) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self.file.metadata(), std::fs::metadata(&self.path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        }
    }

    /// Takes the registry mutex, waiting for another process to drop it.
    pub(crate) fn lock(&self) -> io::Result<Locked<'_>> {
        loop {
            // SAFETY: flock on our open descriptor only changes lock state.
            if unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(Locked { file: self });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Takes the registry mutex only if it is free right now.
    pub(crate) fn try_lock(&self) -> Option<Locked<'_>> {
        // SAFETY: flock on our open descriptor only changes lock state.
        (unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0)
            .then_some(Locked { file: self })
    }

    /// Marks process `pid` (this process) alive for as long as this value lives.
    pub(crate) fn mark_alive(&mut self, pid: u32) -> io::Result<()> {
        // CAST: F_WRLCK is a small constant.
        ofd_lock(&self.file, libc::F_OFD_SETLK, libc::F_WRLCK as libc::c_short, pid)?;
        // INVARIANT: the lock on byte LIVE_BASE + pid is held by our description.
        self.live_pid = Some(pid);
        Ok(())
    }

    /// Whether process `pid` (never this one) holds its liveness mark.
    pub(crate) fn is_alive(&self, pid: u32) -> bool {
        // CAST: F_WRLCK is a small constant.
        match ofd_lock(&self.file, libc::F_OFD_GETLK, libc::F_WRLCK as libc::c_short, pid) {
            // CAST: F_UNLCK is a small constant.
            Ok(fl) => fl.l_type != libc::F_UNLCK as libc::c_short,
            // When the kernel cannot answer, assume alive: never reclaim a live process's memory.
            Err(_) => true,
        }
    }

    /// Reads `buf.len()` bytes at `offset`; bytes past the end read as zero.
    pub(crate) fn read_at(&self, _held: &Locked<'_>, buf: &mut [u8], offset: u64) -> io::Result<()> {
        buf.fill(0);
        let mut done = 0;
        while done < buf.len() {
            let n = self.file.read_at(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(())
    }

    /// Writes `buf` at `offset`.
    pub(crate) fn write_at(&self, _held: &Locked<'_>, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    /// Removes the file's name (other holders keep their descriptors).
    pub(crate) fn unlink(&self, _held: &Locked<'_>) {
        let _ = std::fs::remove_file(&self.path);
    }
}
