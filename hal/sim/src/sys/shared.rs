//! The cross-process primitives of the device registry: a file in `/dev/shm`, mapped into every
//! attached process, with a lock word in the mapping (the registry mutex), a whole-file `flock`
//! (taken only to attach and leave) and one byte-range lock per attached process (its liveness
//! mark).
//!
//! The registry mutex costs one compare-and-swap to take and one store to drop when no other
//! process wants it: no system call. A waiter sleeps on the word with `futex` and, each time
//! its sleep times out, asks the kernel whether the holder is still alive (its liveness mark);
//! a dead holder's lock is taken over. The kernel drops the liveness and file locks when the
//! process that holds them dies, however it dies, which is what lets survivors reclaim a killed
//! process's memory. This module only takes, tests and drops locks and moves bytes; what the
//! bytes mean is [`crate::registry`]'s business.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Offset of the liveness byte of process 0; process `pid` locks byte `LIVE_BASE + pid`.
const LIVE_BASE: i64 = 1 << 40;
/// Offset of the registry mutex's word (0: free, else the holder's pid) and of its count of
/// sleeping waiters.
const LOCK_WORD: u64 = 64;
const LOCK_WAITERS: u64 = 68;
/// How long a waiter sleeps before it checks that the holder is alive.
const WAIT_NS: i64 = 2_000_000;

/// A registry file: shared bytes, a whole-file lock, the registry mutex and per-process
/// liveness marks.
///
/// # Invariants
///
/// `file` is open read-write on `path` and at least `map_len` bytes long. `map` is a shared
/// read-write mapping of its first `map_len` bytes (at least one page), owned by this value
/// and unmapped on drop. While `live_pid` is `Some(p)`, this open file description holds an
/// open-file-description (OFD) write lock on byte `LIVE_BASE + p`.
#[derive(Debug)]
pub(crate) struct RegistryFile {
    file: File,
    path: PathBuf,
    map: *mut u8,
    map_len: u64,
    live_pid: Option<u32>,
}

// SAFETY: the mapping is shared memory any thread may access; every access goes through the
// atomics or the copies below, which the registry mutex serialises across threads and processes.
unsafe impl Send for RegistryFile {}
// SAFETY: as above.
unsafe impl Sync for RegistryFile {}

/// Proof that the registry mutex is held; dropping it unlocks.
#[derive(Debug)]
pub(crate) struct Locked<'a> {
    file: &'a RegistryFile,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let word = self.file.atomic_u32(LOCK_WORD);
        word.store(0, Ordering::SeqCst);
        if self.file.atomic_u32(LOCK_WAITERS).load(Ordering::SeqCst) > 0 {
            self.file.futex(libc::FUTEX_WAKE, 1, 0);
        }
    }
}

/// Proof that the whole-file lock is held; dropping it unlocks.
#[derive(Debug)]
pub(crate) struct FileLocked<'a> {
    file: &'a RegistryFile,
}

impl Drop for FileLocked<'_> {
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
    /// Opens (creating if needed) the registry file at `path` and maps its first `map_len`
    /// bytes (the file is extended, sparsely, to that length).
    pub(crate) fn open(path: &Path, map_len: u64) -> io::Result<Self> {
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
        if map_len < 4096 {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        if file.metadata()?.len() < map_len {
            file.set_len(map_len)?;
        }
        Self::map(file, path, map_len)
    }

    /// Maps the first `map_len` bytes of `file` (open read-write, at least that long).
    fn map(file: File, path: &Path, map_len: u64) -> io::Result<Self> {
        let len = usize::try_from(map_len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        if map_len < 4096 || file.metadata()?.len() < map_len {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        // SAFETY: a fresh shared mapping of our own descriptor, placed by the kernel; it
        // replaces nothing. The file is at least `map_len` long (checked above; the registry
        // never shrinks it while mapped), so every mapped byte is backed.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                file.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: open, long enough and mapped above.
        Ok(Self { file, path: path.to_owned(), map: map.cast(), map_len, live_pid: None })
    }

    /// Opens the registry file at `path` only if it exists and is at least `map_len` long (a
    /// machine some process started), and maps it like [`Self::open`]. `Ok(None)` otherwise.
    pub(crate) fn open_existing(path: &Path, map_len: u64) -> io::Result<Option<Self>> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if file.metadata()?.len() < map_len {
            return Ok(None);
        }
        Self::map(file, path, map_len).map(Some)
    }

    /// A shared counter word at `offset` past the first page (the per-process statistics
    /// area), or `None` when `offset` is misaligned or outside the mapping.
    pub(crate) fn counter(&self, offset: u64) -> Option<&AtomicU64> {
        if offset % 8 != 0 || offset < 4096 || offset.checked_add(8)? > self.map_len {
            return None;
        }
        // SAFETY: checked above: 8-aligned (the mapping is page aligned) and inside the mapping,
        // which lives as long as `self`; counter words are only ever accessed atomically.
        Some(unsafe { AtomicU64::from_ptr(self.map.add(offset as usize).cast()) })
    }

    fn atomic_u32(&self, offset: u64) -> &AtomicU32 {
        debug_assert!(offset % 4 == 0 && offset + 4 <= 4096);
        // SAFETY: `offset` (a constant of this module) is 4-aligned and inside the first page
        // of the mapping, which lives as long as `self`; the word is only ever accessed
        // atomically, by every process.
        unsafe { AtomicU32::from_ptr(self.map.add(offset as usize).cast()) }
    }

    fn atomic_u64(&self, offset: u64) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= 4096, "commit word outside the header page");
        // SAFETY: checked above: 8-aligned (the mapping is page aligned) and inside the first
        // page of the mapping, which lives as long as `self`; the word is only ever accessed
        // atomically.
        unsafe { AtomicU64::from_ptr(self.map.add(offset as usize).cast()) }
    }

    /// `futex(op)` on the lock word; `timeout_ns` bounds a wait.
    fn futex(&self, op: libc::c_int, val: u32, timeout_ns: i64) -> libc::c_long {
        let ts = libc::timespec { tv_sec: 0, tv_nsec: timeout_ns };
        let tsp = if op == libc::FUTEX_WAIT { &ts as *const libc::timespec } else { std::ptr::null() };
        // SAFETY: the word is a valid, aligned u32 of shared memory that lives as long as
        // `self`; `tsp` is null or points to `ts`, alive for the call. A shared (not private)
        // futex, because other processes wait on the same word.
        unsafe {
            libc::syscall(libc::SYS_futex, self.atomic_u32(LOCK_WORD).as_ptr(), op, val, tsp, 0usize, 0u32)
        }
    }

    /// Whether the path still names this file (the last process out may have removed it while
    /// this one waited for the lock).
    pub(crate) fn is_current(&self, _held: &FileLocked<'_>) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self.file.metadata(), std::fs::metadata(&self.path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        }
    }

    /// Takes the whole-file lock (attach and leave), waiting for another process to drop it.
    pub(crate) fn lock_file(&self) -> io::Result<FileLocked<'_>> {
        loop {
            // SAFETY: flock on our open descriptor only changes lock state.
            if unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(FileLocked { file: self });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Takes the whole-file lock only if it is free right now.
    pub(crate) fn try_lock_file(&self) -> Option<FileLocked<'_>> {
        // SAFETY: flock on our open descriptor only changes lock state.
        (unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0)
            .then_some(FileLocked { file: self })
    }

    /// Takes the registry mutex for process `me` (this process, whose liveness mark is held),
    /// waiting for another process to drop it, or taking it over from a dead holder. One
    /// thread of a process at a time may call this (the registry's own mutex sees to it).
    pub(crate) fn lock(&self, me: u32) -> Locked<'_> {
        let word = self.atomic_u32(LOCK_WORD);
        let waiters = self.atomic_u32(LOCK_WAITERS);
        let mut spins = 0u32;
        loop {
            let holder = match word.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Locked { file: self },
                Err(h) => h,
            };
            // Our own pid: a dead process's, which we reuse (this process holds no lock now).
            if holder == me && word.compare_exchange(me, me, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                return Locked { file: self };
            }
            if spins < 64 {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            waiters.fetch_add(1, Ordering::SeqCst);
            let rc = self.futex(libc::FUTEX_WAIT, holder, WAIT_NS);
            let timed_out = rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT);
            waiters.fetch_sub(1, Ordering::SeqCst);
            if timed_out
                && !self.is_alive(holder)
                && word.compare_exchange(holder, me, Ordering::SeqCst, Ordering::SeqCst).is_ok()
            {
                // The holder died holding the mutex; what it wrote is either committed or not
                // (the registry's commit protocol), so the state is whole.
                return Locked { file: self };
            }
        }
    }

    /// Takes the registry mutex only if it is free right now.
    pub(crate) fn try_lock(&self, me: u32) -> Option<Locked<'_>> {
        let word = self.atomic_u32(LOCK_WORD);
        word.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst).ok().map(|_| Locked { file: self })
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

    fn check(&self, offset: u64, len: usize) -> io::Result<usize> {
        match offset.checked_add(len as u64) {
            // CAST: below `map_len`, which fits in usize (it was mapped).
            Some(end) if end <= self.map_len => Ok(offset as usize),
            _ => Err(io::ErrorKind::InvalidInput.into()),
        }
    }

    /// Reads `buf.len()` bytes at `offset`.
    pub(crate) fn read_at(&self, _held: &Locked<'_>, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let at = self.check(offset, buf.len())?;
        // SAFETY: `[at, at + len)` lies inside the mapping (checked); the registry mutex is held,
        // so no other process writes it meanwhile; raw copies make no aliasing claim.
        unsafe { std::ptr::copy_nonoverlapping(self.map.add(at), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Writes `buf` at `offset`.
    pub(crate) fn write_at(&self, _held: &Locked<'_>, buf: &[u8], offset: u64) -> io::Result<()> {
        let at = self.check(offset, buf.len())?;
        // SAFETY: as in `read_at`; `buf` cannot overlap the mapping's bytes we write (it is a
        // Rust slice of our own memory, and the registry never passes mapped bytes).
        unsafe { std::ptr::copy(buf.as_ptr(), self.map.add(at), buf.len()) };
        Ok(())
    }

    /// Reads the commit word at `offset` (in the first page). Acquire: the header slot it
    /// names was written before it ([`Self::store_word`]).
    pub(crate) fn load_word(&self, _held: &Locked<'_>, offset: u64) -> u64 {
        self.atomic_u64(offset).load(Ordering::Acquire)
    }

    /// Stores the commit word at `offset` (in the first page) in one atomic write: a process
    /// killed around it leaves either the old value or the new one. Release: the header and
    /// the records it puts in force are written before it, for any reader that sees it (the
    /// registry mutex orders the rest; no full fence is needed here).
    pub(crate) fn store_word(&self, _held: &Locked<'_>, offset: u64, value: u64) {
        self.atomic_u64(offset).store(value, Ordering::Release);
    }

    /// Removes the file's name (other holders keep their descriptors).
    pub(crate) fn unlink(&self, _held: &FileLocked<'_>) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for RegistryFile {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours by the type invariant; every borrow of it (the proofs and
        // atomics) borrows `self`, so none outlives this.
        unsafe { libc::munmap(self.map.cast(), self.map_len as usize) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_mutex_is_taken_over_from_a_dead_holder_only() {
        let path = PathBuf::from(format!("/dev/shm/aclrs-locktest-{}", std::process::id()));
        let me = std::process::id();
        let mut file = RegistryFile::open(&path, 8192).expect("open");
        file.mark_alive(me).expect("mark alive");
        // Another process (another open file description) that is alive and holds the mutex.
        let live = me.wrapping_add(1 << 22);
        let mut other = RegistryFile::open(&path, 8192).expect("open again");
        other.mark_alive(live).expect("mark the other alive");
        assert!(file.is_alive(live));
        file.atomic_u32(LOCK_WORD).store(live, Ordering::SeqCst);
        assert!(file.try_lock(me).is_none(), "a live holder keeps the mutex");
        // It dies holding the mutex: its liveness mark goes with it, and a waiter takes over.
        drop(other);
        assert!(!file.is_alive(live));
        let held = file.lock(me);
        assert_eq!(file.atomic_u32(LOCK_WORD).load(Ordering::SeqCst), me);
        drop(held);
        assert_eq!(file.atomic_u32(LOCK_WORD).load(Ordering::SeqCst), 0);
        assert!(file.try_lock(me).is_some());
        let _ = std::fs::remove_file(&path);
    }
}
