//! The software NPU's only `unsafe` module: shared-memory objects, VA window reservations,
//! mappings and raw byte moves over mapped windows.
//!
//! It owns every `libc` call of the crate. It must not know about frames, allocations or tasks:
//! callers above it decide *what* is mapped where; this module only makes it so, and its
//! types' invariants keep every raw access inside memory this process reserved.

pub(crate) mod kernel;
pub(crate) mod shared;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::RwLock;

/// A named POSIX shared-memory object holding one device's HBM, shared by every process
/// attached to the simulated machine.
///
/// # Invariants
///
/// `fd` is an open descriptor of the object `name`, at least `len_bytes` long.
#[derive(Debug)]
pub(crate) struct ShmObject {
    fd: OwnedFd,
    len_bytes: u64,
}

impl ShmObject {
    /// Opens (creating if needed) the object `name` of `len_bytes`. With `reset`, whatever a
    /// crashed earlier user left in it is dropped first (the registry says so only when no
    /// live process has it mapped).
    pub(crate) fn open(name: &str, len_bytes: u64, reset: bool) -> io::Result<Self> {
        let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `cname` is a valid NUL-terminated string; the flags and mode are plain values.
        let raw = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR | libc::O_CREAT, 0o600) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor we just opened and own exclusively.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let len =
            libc::off_t::try_from(len_bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `fd` is open for writing; ftruncate only changes the object's size.
        if reset && unsafe { libc::ftruncate(fd.as_raw_fd(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // Size the object sparsely. Every attached process agrees on the size (the registry
        // checks the settings), so a second sizing changes nothing.
        // SAFETY: as above.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: open and sized above.
        Ok(Self { fd, len_bytes })
    }

    /// Size of the object in bytes.
    pub(crate) fn len_bytes(&self) -> u64 {
        self.len_bytes
    }
}

/// Removes the name of shared-memory object `name` (its pages go with the last mapping).
pub(crate) fn shm_unlink(name: &str) {
    if let Ok(c) = CString::new(name) {
        // SAFETY: `c` is a valid C string; shm_unlink only reads it.
        unsafe { libc::shm_unlink(c.as_ptr()) };
    }
}

/// The hook [`at_exit`] runs, and whether this process is a child `fork()`ed after it was set.
static EXIT_HOOK: std::sync::OnceLock<extern "C" fn()> = std::sync::OnceLock::new();
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn exit_unless_forked() {
    // A forked child is not the process that attached: leaving in its (inherited) name would
    // hand the parent's live memory to others.
    if !FORKED.load(std::sync::atomic::Ordering::Relaxed) {
        if let Some(hook) = EXIT_HOOK.get() {
            hook();
        }
    }
}

extern "C" fn mark_forked() {
    FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Runs `hook` (once registered, later calls do nothing) when the process exits normally
/// (without `aclFinalize`, say), but not in a child forked from it.
pub(crate) fn at_exit(hook: extern "C" fn()) {
    if EXIT_HOOK.set(hook).is_err() {
        return;
    }
    // SAFETY: both handlers are `extern "C" fn()`s of this library that cannot unwind (the
    // exit hook's caller guarantees `hook` catches panics; `mark_forked` only stores to an
    // atomic, which is safe in a just-forked child) and stay valid for the life of the process.
    unsafe {
        libc::atexit(exit_unless_forked);
        libc::pthread_atfork(None, None, Some(mark_forked));
    }
}

/// A fault: an access touched a byte of a window that is not mapped (or not writable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault;

/// What one mapping inside a window is.
#[derive(Clone, Copy, Debug)]
struct Entry {
    len_bytes: u64,
    writable: bool,
}

/// A reserved range of this process's address space at a fixed address, with a record of
/// which parts are mapped to memory.
///
/// # Invariants
///
/// - `[base, base + len_bytes)` was reserved by this value with `mmap(PROT_NONE)` and stays
///   owned by it until drop; every mapping placed inside it replaces part of that reservation
///   and nothing else.
/// - Every entry of `mapped` (offset → length, writable) is mapped accessible in the process,
///   and nothing else inside the window is. Entries never overlap. Entries are added and
///   removed only under the write lock, and bytes are moved only under a read lock after
///   checking coverage, so no byte is unmapped while it is being accessed.
#[derive(Debug)]
pub(crate) struct Window {
    base: u64,
    len_bytes: u64,
    mapped: RwLock<BTreeMap<u64, Entry>>,
}

impl Window {
    /// Reserves `[base, base + len_bytes)`; fails if any part of it is already in use.
    pub(crate) fn reserve(base: u64, len_bytes: u64) -> io::Result<Self> {
        let len = usize::try_from(len_bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // CAST: the address is a plain number handed to the kernel as a hint.
        let hint = base as usize as *mut libc::c_void;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; a private anonymous
        // PROT_NONE mapping touches no existing memory.
        let got = unsafe {
            libc::mmap(
                hint,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if got == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        if got != hint {
            // An old kernel treated the flag as a hint and placed the mapping elsewhere.
            // SAFETY: `got` is the mapping of `len` bytes just created by us.
            unsafe { libc::munmap(got, len) };
            return Err(io::Error::from(io::ErrorKind::AddrInUse));
        }
        // INVARIANT: reserved above at exactly `base`; nothing mapped yet.
        Ok(Self { base, len_bytes, mapped: RwLock::new(BTreeMap::new()) })
    }

    /// First address of the window.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Size of the window.
    pub(crate) fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// Whether `addr` lies in the window.
    pub(crate) fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.len_bytes
    }

    fn page_range(&self, offset: u64, len_bytes: u64) -> io::Result<*mut libc::c_void> {
        let end = offset.checked_add(len_bytes).ok_or(io::ErrorKind::InvalidInput)?;
        if len_bytes == 0 || end > self.len_bytes || offset % 4096 != 0 || len_bytes % 4096 != 0 {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        // CAST: base + offset is inside the reservation, which lies in the address space.
        Ok((self.base + offset) as usize as *mut libc::c_void)
    }

    fn overlaps(map: &BTreeMap<u64, Entry>, offset: u64, len_bytes: u64) -> bool {
        let end = offset + len_bytes;
        if let Some((&o, e)) = map.range(..=offset).next_back() {
            if o + e.len_bytes > offset {
                return true;
            }
        }
        map.range(offset..end).next().is_some()
    }

    /// Maps `len_bytes` of `object` from `object_offset` at `offset` inside the window. The
    /// range must not overlap an existing mapping.
    pub(crate) fn map_shared(
        &self,
        offset: u64,
        len_bytes: u64,
        object: &ShmObject,
        object_offset: u64,
        writable: bool,
    ) -> io::Result<()> {
        let at = self.page_range(offset, len_bytes)?;
        if object_offset.checked_add(len_bytes).is_none_or(|e| e > object.len_bytes()) {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let off =
            libc::off_t::try_from(object_offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut map = self.mapped.write().unwrap_or_else(|p| p.into_inner());
        if Self::overlaps(&map, offset, len_bytes) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // CAST: checked by `page_range` to fit the window, hence usize.
        let len = len_bytes as usize;
        // SAFETY: by `page_range` and the type invariant, `[at, at + len)` lies inside our own
        // reservation and is not mapped (checked above under the write lock), so MAP_FIXED
        // replaces only reserved, unused memory of this window.
        let got = unsafe {
            libc::mmap(at, len, prot, libc::MAP_SHARED | libc::MAP_FIXED, object.fd.as_raw_fd(), off)
        };
        if got == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: the range is now mapped accessible; record it.
        map.insert(offset, Entry { len_bytes, writable });
        Ok(())
    }

    /// Maps private zero pages, readable and writable, at `offset` (pinned host memory).
    pub(crate) fn map_anonymous(&self, offset: u64, len_bytes: u64) -> io::Result<()> {
        let at = self.page_range(offset, len_bytes)?;
        let mut map = self.mapped.write().unwrap_or_else(|p| p.into_inner());
        if Self::overlaps(&map, offset, len_bytes) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        // CAST: checked by `page_range` to fit the window, hence usize.
        let len = len_bytes as usize;
        // SAFETY: as in `map_shared`: reserved, unused memory of this window only.
        let got = unsafe {
            libc::mmap(
                at,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if got == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: mapped accessible above; record it.
        map.insert(offset, Entry { len_bytes, writable: true });
        Ok(())
    }

    /// Unmaps `[offset, offset + len_bytes)`, which must be exactly covered by whole mappings,
    /// returning it to the inaccessible reservation.
    pub(crate) fn unmap(&self, offset: u64, len_bytes: u64) -> io::Result<()> {
        let at = self.page_range(offset, len_bytes)?;
        let end = offset + len_bytes;
        let mut map = self.mapped.write().unwrap_or_else(|p| p.into_inner());
        // Check exact coverage before changing anything.
        let mut cursor = offset;
        for (&o, e) in map.range(offset..end) {
            if o != cursor || o + e.len_bytes > end {
                return Err(io::ErrorKind::NotFound.into());
            }
            cursor = o + e.len_bytes;
        }
        if cursor != end {
            return Err(io::ErrorKind::NotFound.into());
        }
        // CAST: checked by `page_range` to fit the window, hence usize.
        let len = len_bytes as usize;
        // SAFETY: the range lies inside our reservation; no reader holds it (we hold the write
        // lock), so replacing it with an inaccessible reservation breaks no access in flight.
        let got = unsafe {
            libc::mmap(
                at,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if got == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // INVARIANT: the range is inaccessible again; drop its entries.
        let keys: Vec<u64> = map.range(offset..end).map(|(&o, _)| o).collect();
        for k in keys {
            map.remove(&k);
        }
        Ok(())
    }

    /// Whether `[addr, addr + len_bytes)` is wholly mapped (and writable if `write`).
    fn covered(&self, map: &BTreeMap<u64, Entry>, addr: u64, len_bytes: u64, write: bool) -> bool {
        if !self.contains(addr) {
            return false;
        }
        let offset = addr - self.base;
        let Some(end) = offset.checked_add(len_bytes) else { return false };
        if end > self.len_bytes {
            return false;
        }
        let mut cursor = offset;
        let mut entries = match map.range(..=offset).next_back() {
            Some((&o, _)) => map.range(o..),
            None => return false,
        };
        while cursor < end {
            match entries.next() {
                Some((&o, e)) if o <= cursor && o + e.len_bytes > cursor && (e.writable || !write) => {
                    cursor = o + e.len_bytes;
                }
                _ => return false,
            }
        }
        true
    }

    /// Copies device bytes at `addr` into `dst`.
    pub(crate) fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), Fault> {
        let map = self.mapped.read().unwrap_or_else(|p| p.into_inner());
        if !self.covered(&map, addr, dst.len() as u64, false) {
            return Err(Fault);
        }
        // CAST: a covered address lies in the address space.
        let s = addr as usize as *const u8;
        // SAFETY: the source range is mapped readable (checked above) and stays mapped while we
        // hold the read lock; `dst` is a valid slice. Raw copies make no aliasing claim on
        // device memory, which other engines may be writing.
        unsafe { core::ptr::copy(s, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` into device memory at `addr`.
    pub(crate) fn write(&self, addr: u64, src: &[u8]) -> Result<(), Fault> {
        let map = self.mapped.read().unwrap_or_else(|p| p.into_inner());
        if !self.covered(&map, addr, src.len() as u64, true) {
            return Err(Fault);
        }
        // CAST: a covered address lies in the address space.
        let d = addr as usize as *mut u8;
        // SAFETY: the destination is mapped writable (checked above) and stays mapped while we
        // hold the read lock; `src` is a valid slice (it may even lie in the window: `copy`
        // tolerates overlap).
        unsafe { core::ptr::copy(src.as_ptr(), d, src.len()) };
        Ok(())
    }

    /// Fills `len_bytes` at `addr` with `value`.
    pub(crate) fn fill(&self, addr: u64, value: u8, len_bytes: u64) -> Result<(), Fault> {
        let map = self.mapped.read().unwrap_or_else(|p| p.into_inner());
        if !self.covered(&map, addr, len_bytes, true) {
            return Err(Fault);
        }
        // CAST: a covered address lies in the address space.
        let d = addr as usize as *mut u8;
        // SAFETY: the range is mapped writable (checked above) and stays mapped while we hold
        // the read lock.
        unsafe { core::ptr::write_bytes(d, value, len_bytes as usize) };
        Ok(())
    }

    /// Copies `len_bytes` from `src` in window `from` to `dst` in window `to` (which may be the
    /// same window; the ranges may overlap).
    pub(crate) fn copy(to: &Window, dst: u64, from: &Window, src: u64, len_bytes: u64) -> Result<(), Fault> {
        // Lock order: windows are taken by ascending base address, so two copies in opposite
        // directions cannot deadlock against a writer waiting on either window.
        let same = core::ptr::eq(to, from);
        let (first, second) = if to.base <= from.base { (to, from) } else { (from, to) };
        let g1 = first.mapped.read().unwrap_or_else(|p| p.into_inner());
        let g2 = if same { None } else { Some(second.mapped.read().unwrap_or_else(|p| p.into_inner())) };
        let map_of = |w: &Window| -> &BTreeMap<u64, Entry> {
            if core::ptr::eq(w, first) {
                &g1
            } else {
                g2.as_deref().unwrap_or(&g1)
            }
        };
        if !from.covered(map_of(from), src, len_bytes, false) || !to.covered(map_of(to), dst, len_bytes, true)
        {
            return Err(Fault);
        }
        // CAST: covered addresses lie in the address space.
        let (d, s) = (dst as usize as *mut u8, src as usize as *const u8);
        // SAFETY: both ranges are mapped (checked above) and stay mapped while we hold both
        // read locks; `copy` allows overlap.
        unsafe { core::ptr::copy(s, d, len_bytes as usize) };
        Ok(())
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // CAST: the reservation lies in the address space.
        let base = self.base as usize as *mut libc::c_void;
        // SAFETY: the whole range is ours by the type invariant, and every accessor that could
        // still point into it borrows `self`.
        unsafe { libc::munmap(base, self.len_bytes as usize) };
    }
}
