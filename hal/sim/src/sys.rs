//! The software NPU's only `unsafe` module: shared-memory objects, VA window reservations,
//! mappings and raw byte moves over mapped windows.
//!
//! It owns every `libc` call of the crate. It must not know about frames, allocations or tasks:
//! callers above it decide *what* is mapped where; this module only makes it so, and its
//! types' invariants keep every raw access inside memory this process reserved.

pub(crate) mod cpu;
pub(crate) mod kernel;
mod marks;
pub(crate) mod memfd;
pub(crate) mod shared;
pub(crate) mod symbol;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use marks::Marks;

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

    /// Opens the existing object `name`, or `None` when there is none.
    pub(crate) fn open_existing(name: &str) -> Option<Self> {
        let cname = CString::new(name).ok()?;
        // SAFETY: `cname` is a valid NUL-terminated string; the flags and mode are plain values.
        let raw = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0o600) };
        if raw < 0 {
            return None;
        }
        // SAFETY: `raw` is a descriptor we just opened and own exclusively.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: an all-zero `stat` is a valid value of the plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open; `st` is a valid, writable stat struct.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return None;
        }
        // INVARIANT: open above; its size is what fstat reported.
        Some(Self { fd, len_bytes: u64::try_from(st.st_size).ok()? })
    }

    /// Size of the object in bytes.
    pub(crate) fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// Clears `[offset, offset + len_bytes)`: its pages are dropped from the object, so every
    /// mapping of them reads zeros from now on (and they take no memory until written again).
    pub(crate) fn clear(&self, offset: u64, len_bytes: u64) {
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len_bytes)) else {
            return;
        };
        // SAFETY: `fd` is open for writing; punching a hole only drops the object's pages in the
        // range, which no live allocation uses (the registry frees them first).
        let rc = unsafe {
            libc::fallocate(
                self.fd.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off,
                len,
            )
        };
        if rc != 0 {
            // A file system without hole punching: write zeros instead.
            let zeros = [0u8; 65536];
            let mut at = offset;
            let end = offset + len_bytes;
            while at < end {
                let n = (end - at).min(zeros.len() as u64) as usize;
                let Ok(o) = libc::off_t::try_from(at) else { return };
                // SAFETY: `zeros` is valid for reads of `n` bytes; pwrite only writes to `fd`.
                let w = unsafe { libc::pwrite(self.fd.as_raw_fd(), zeros.as_ptr().cast(), n, o) };
                if w <= 0 {
                    return;
                }
                at += w as u64;
            }
        }
    }
}

/// This process's pid at host level: the first `NSpid` field of `/proc/self/status` (the pid
/// in the outermost pid namespace procfs shows), or `getpid` when it is not there.
pub(crate) fn host_pid() -> u32 {
    let own = std::process::id();
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return own };
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(own)
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
    /// Made accessible in place on the identity mapping (see [`Window::map_identity`]).
    identity: bool,
    /// Mapped but made inaccessible by [`Window::set_hidden`] (a sanitizer's guard or
    /// quarantine): no access may use it until it is shown again; unmapping it works as usual.
    hidden: bool,
}

/// The object a device window maps linearly ("at identity"), inaccessible until backed:
/// window offset `o` shows object byte `(o + displacement) mod object_len`.
#[derive(Debug)]
struct Identity {
    /// A descriptor of the object of its own (the device keeps the object itself).
    fd: OwnedFd,
    /// The descriptor number of the device's object, to recognise it in [`Window::map_shared`].
    object_fd: i32,
    /// Bytes of the window mapped at identity: `[0, len_bytes)`.
    len_bytes: u64,
    /// Bytes of the object.
    object_len: u64,
    /// Where window offset 0 lies in the object (below `object_len`).
    displacement: u64,
    /// The pages of `[0, len_bytes)` given the kernel's mapping mark (see [`marks`]); taken
    /// only under the window's map write lock (lock order: `mapped`, then this).
    marks: Mutex<Marks>,
}

impl Identity {
    /// Object offset of window range `[offset, offset + len_bytes)` on the identity mapping,
    /// when the range lies on it in one piece.
    fn object_offset(&self, offset: u64, len_bytes: u64) -> Option<u64> {
        let end = offset.checked_add(len_bytes)?;
        if end > self.len_bytes {
            return None;
        }
        let at = (offset + self.displacement) % self.object_len;
        (at + len_bytes <= self.object_len).then_some(at)
    }

    /// Window offset where the object wraps around (the identity mapping's second piece).
    fn wrap(&self) -> u64 {
        self.object_len - self.displacement
    }
}

/// A reserved range of this process's address space at a fixed address, with a record of
/// which parts are mapped to memory.
///
/// # Invariants
///
/// - `[base, base + len_bytes)` was reserved by this value with `mmap(PROT_NONE)` and stays
///   owned by it until drop; every mapping placed inside it replaces part of that reservation
///   and nothing else.
/// - With `identity`, `[base, base + identity.len_bytes)` maps the device's HBM object linearly
///   ([`Identity`]), inaccessible (`PROT_NONE`) wherever no entry says otherwise.
/// - Every entry of `mapped` (offset → length, writable, identity, hidden) is mapped in the
///   process, accessible unless hidden, and nothing else inside the window is accessible. Entries
///   never overlap. Entries are added and removed only under the write lock, and bytes are moved
///   only under a read lock after checking coverage, so no byte is unmapped while it is being
///   accessed. Adjacent entries on the identity mapping with the same protection are joined into
///   one, and split again when part of one is unmapped or hidden: an entry is a run of accessible
///   pages, not a backing (which ranges were backed together is the caller's record).
#[derive(Debug)]
pub(crate) struct Window {
    base: u64,
    len_bytes: u64,
    identity: Option<Identity>,
    mapped: RwLock<BTreeMap<u64, Entry>>,
    /// The state of `mapped`: a number no other state of any window's map has had (see
    /// [`next_map_state`]), replaced under the write lock whenever the map may change, so a
    /// reader holding the read lock that finds the number it saw before finds the same map
    /// ([`Window::fill_cached`]).
    state: AtomicU64,
}

/// The next map state number: states of every window, process-wide, never repeat.
fn next_map_state() -> u64 {
    static STATES: AtomicU64 = AtomicU64::new(1);
    STATES.fetch_add(1, Ordering::Relaxed)
}

/// The last writable span of mapped memory a worker's fill found ([`Window::fill_cached`]):
/// `[lo, hi)` in window state `state` (0: nothing remembered). A worker keeps one, so a
/// stream of fills into one allocation looks at the window's map once.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SpanCache {
    state: u64,
    lo: u64,
    hi: u64,
}

/// A window's map held for reading ([`Window::hold`]): fills through it take no lock of their
/// own, so a worker running several fills of a run into one window takes the lock once for
/// them. The window's map cannot change while it is held (a map change waits for it), so
/// whoever keeps one must let it go before anything that may wait for a map change: a host
/// function, a kernel, the scheduler's lock (lock order: a window's map, then the scheduler's
/// state; nothing maps or unmaps under the scheduler's lock).
pub(crate) struct MapHold<'w> {
    window: &'w Window,
    map: std::sync::RwLockReadGuard<'w, BTreeMap<u64, Entry>>,
    /// The map's state number, read under the hold.
    state: u64,
    /// Bytes filled through this hold.
    bytes: u64,
}

impl MapHold<'_> {
    /// The window held.
    pub(crate) fn window(&self) -> &Window {
        self.window
    }

    /// Bytes filled through this hold so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Fills `len_bytes` at `addr` with `value`, looking at the map only when the range is not
    /// inside `cache`'s span in the map's state (then `cache` takes the span found).
    pub(crate) fn fill(
        &mut self,
        cache: &mut SpanCache,
        addr: u64,
        value: u8,
        len_bytes: u64,
    ) -> Result<(), Fault> {
        let end = addr.checked_add(len_bytes).ok_or(Fault)?;
        if cache.state != self.state || addr < cache.lo || end > cache.hi {
            let w = self.window;
            let (lo, hi) = w.covered_span(&self.map, addr, len_bytes, true).ok_or(Fault)?;
            *cache = SpanCache { state: self.state, lo: w.base + lo, hi: w.base + hi };
        }
        // CAST: a covered address lies in the address space.
        let d = addr as usize as *mut u8;
        // SAFETY: the range lies in a span of the map found mapped writable in this very state
        // (checked above or when `cache` was filled: the state number names one map of one
        // window, never reused), and stays mapped while the hold keeps the read lock.
        unsafe { core::ptr::write_bytes(d, value, len_bytes as usize) };
        self.bytes = self.bytes.saturating_add(len_bytes);
        Ok(())
    }
}

impl core::fmt::Debug for MapHold<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MapHold").field("base", &self.window.base).field("state", &self.state).finish()
    }
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
        Ok(Self {
            base,
            len_bytes,
            identity: None,
            mapped: RwLock::new(BTreeMap::new()),
            state: AtomicU64::new(next_map_state()),
        })
    }

    /// Maps `object` over the start of the window linearly, inaccessible: window offset `o`
    /// shows byte `(o + displacement) mod len` of the object. Backing a range with the frames
    /// it shows ([`Self::identity_offset`]) is then one `mprotect` (and unbacking another),
    /// which the kernel does in place and faster than replacing mappings; neighbouring ranges
    /// stay one mapping. Processes sharing a device use different displacements, so that each
    /// finds the frames its window shows free.
    pub(crate) fn map_identity(&mut self, object: &ShmObject, displacement: u64) -> io::Result<()> {
        let object_len = object.len_bytes() & !4095;
        let len_bytes = object_len.min(self.len_bytes);
        if len_bytes == 0 || self.identity.is_some() {
            return Ok(());
        }
        let id = Identity {
            fd: object.fd.try_clone()?,
            object_fd: object.fd.as_raw_fd(),
            len_bytes,
            object_len,
            displacement: (displacement % object_len) & !4095,
            marks: Mutex::new(Marks::new(len_bytes)),
        };
        // The piece before the object wraps around, then the piece after it.
        let wrap = id.wrap().min(len_bytes);
        for (offset, end) in [(0, wrap), (wrap, len_bytes)] {
            if end > offset {
                // CAST: inside the reservation, which lies in the address space.
                let at = (self.base + offset) as usize as *mut libc::c_void;
                Self::map_object(at, end - offset, &id, offset)?;
            }
        }
        // INVARIANT: the identity mapping is in place, inaccessible.
        self.identity = Some(id);
        Ok(())
    }

    /// Maps `[at, at + len_bytes)` (window offset `offset`, on one piece of `id`) to the object
    /// bytes `id` shows there, inaccessible.
    fn map_object(at: *mut libc::c_void, len_bytes: u64, id: &Identity, offset: u64) -> io::Result<()> {
        let object_offset = id.object_offset(offset, len_bytes).ok_or(io::ErrorKind::InvalidInput)?;
        // CAST: an offset below the object's size, which fits off_t (it was sized with it).
        let off = object_offset as libc::off_t;
        // SAFETY: callers pass a page range of this window's reservation (the identity mapping
        // lies inside it) that no accessible mapping uses (they hold `&mut self` or the write
        // lock over an inaccessible range), so MAP_FIXED replaces only inaccessible memory.
        let got = unsafe {
            libc::mmap(
                at,
                len_bytes as usize,
                libc::PROT_NONE,
                libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_NORESERVE,
                id.fd.as_raw_fd(),
                off,
            )
        };
        if got == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The object offset that window range `[offset, offset + len_bytes)` shows on the
    /// identity mapping: backing it with those frames is fastest.
    pub(crate) fn identity_offset(&self, offset: u64, len_bytes: u64) -> Option<u64> {
        self.identity.as_ref()?.object_offset(offset, len_bytes)
    }

    /// Whether mapping `object` at window offset `offset` from `object_offset` is a change of
    /// protection on the identity mapping.
    fn on_identity(&self, offset: u64, len_bytes: u64, object: &ShmObject, object_offset: u64) -> bool {
        self.identity.as_ref().is_some_and(|id| {
            id.object_fd == object.fd.as_raw_fd()
                && id.object_offset(offset, len_bytes) == Some(object_offset)
        })
    }

    /// Makes `[at, at + len)` of the window `prot` in place.
    fn protect(at: *mut libc::c_void, len: usize, prot: libc::c_int) -> io::Result<()> {
        // SAFETY: callers pass a page range of our own window (checked by `page_range`) that the
        // identity mapping covers; changing its protection touches no other memory.
        if unsafe { libc::mprotect(at, len, prot) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Makes `[at, at + len)` of the identity mapping `prot` in place, like [`Self::protect`].
    /// When the kernel refuses for lack of mappings while ranges carry the mapping mark (see
    /// [`marks`]), every mark goes (marked ranges join their neighbours again, which frees
    /// mappings) and the change is tried once more. The caller holds the map's write lock.
    fn protect_identity(&self, at: *mut libc::c_void, len: usize, prot: libc::c_int) -> io::Result<()> {
        match Self::protect(at, len, prot) {
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) && self.unmark_all() => {
                Self::protect(at, len, prot)
            }
            other => other,
        }
    }

    /// Gives `[offset, offset + len_bytes)` of the identity mapping (at `at`), just made
    /// accessible with no accessible memory on either side, the mapping mark (see [`marks`])
    /// unless all of it has it already. A mark the kernel refuses (for lack of mappings) is not
    /// recorded and costs nothing but speed. The caller holds the map's write lock.
    fn mark_backed(&self, at: *mut libc::c_void, offset: u64, len_bytes: u64) {
        let Some(id) = self.identity.as_ref() else { return };
        let mut marks = id.marks.lock().unwrap_or_else(|p| p.into_inner());
        if marks.all_marked(offset, len_bytes) {
            return;
        }
        // SAFETY: callers pass a page range of our own window on the identity mapping (checked
        // by `page_range`); a read-ahead hint changes no byte, no protection and no mapping's
        // target.
        // CAST: the range fits the window, hence usize.
        if unsafe { libc::madvise(at, len_bytes as usize, libc::MADV_RANDOM) } == 0 {
            marks.set(offset, len_bytes, true);
        }
    }

    /// Forgets the marks of `[offset, offset + len_bytes)`, which was just mapped afresh (a
    /// new mapping carries no mark). The caller holds the map's write lock.
    fn forget_marks(&self, offset: u64, len_bytes: u64) {
        if let Some(id) = self.identity.as_ref() {
            id.marks.lock().unwrap_or_else(|p| p.into_inner()).set(offset, len_bytes, false);
        }
    }

    /// Takes the mapping mark off the whole identity mapping, so that marked ranges join
    /// their neighbours again; whether any range had it. The caller holds the map's write lock.
    fn unmark_all(&self) -> bool {
        let Some(id) = self.identity.as_ref() else { return false };
        let mut marks = id.marks.lock().unwrap_or_else(|p| p.into_inner());
        if !marks.any() {
            return false;
        }
        // CAST: the window lies in the address space.
        let at = self.base as usize as *mut libc::c_void;
        // SAFETY: `[base, base + id.len_bytes)` is the identity mapping (`map_identity` mapped
        // it, in one or two pieces, with no hole); the hint changes no byte, no protection and
        // no mapping's target. A failure leaves some marks, which cost nothing but speed.
        // CAST: the identity mapping fits the window, hence usize.
        let _ = unsafe { libc::madvise(at, id.len_bytes as usize, libc::MADV_NORMAL) };
        marks.clear();
        true
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

    /// Whether `[addr, addr + len_bytes)` lies in the window (mapped or not).
    pub(crate) fn spans(&self, addr: u64, len_bytes: u64) -> bool {
        self.contains(addr) && addr - self.base <= self.len_bytes - len_bytes.min(self.len_bytes)
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
        let mut map = self.write_map();
        // One lookup for the overlap check and both neighbours: the entries starting at or
        // before `end`, from the back. The first may be the successor (starting right at
        // `end`); the next one back is the last entry starting before `end`. Entries do not
        // overlap, so the range is free exactly when that one ends by `offset`, and it is then
        // the predecessor. Both are joined below when they touch the range.
        let end = offset + len_bytes;
        let (before, after) = {
            let mut back = map.range(..=end);
            match back.next_back().map(|(&o, &e)| (o, e)) {
                Some((o, e)) if o == end => (back.next_back().map(|(&o, &e)| (o, e)), Some(e)),
                last => (last, None),
            }
        };
        if before.is_some_and(|(o, e)| o + e.len_bytes > offset) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // CAST: checked by `page_range` to fit the window, hence usize.
        let len = len_bytes as usize;
        let identity = self.on_identity(offset, len_bytes, object, object_offset);
        if identity {
            self.protect_identity(at, len, prot)?;
            // Only a range that no accessible memory touches takes the mark (see `marks`).
            let touches = before.is_some_and(|(o, e)| o + e.len_bytes == offset) || after.is_some();
            if !touches {
                self.mark_backed(at, offset, len_bytes);
            }
        } else {
            // SAFETY: by `page_range` and the type invariant, `[at, at + len)` lies inside our
            // own reservation and is not accessible (checked above under the write lock), so
            // MAP_FIXED replaces only reserved or inaccessible identity memory of this window.
            let got = unsafe {
                libc::mmap(at, len, prot, libc::MAP_SHARED | libc::MAP_FIXED, object.fd.as_raw_fd(), off)
            };
            if got == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            self.forget_marks(offset, len_bytes);
        }
        // INVARIANT: the range is now mapped accessible; record it. On the identity mapping it
        // joins the neighbouring entries of the same protection (bookkeeping only; `unmap`
        // splits them again), so that the table holds one entry per run of adjacent backed
        // ranges, not one per allocation, and its operations do not slow down as they grow.
        let (mut start, mut len) = (offset, len_bytes);
        if identity {
            let joins = |e: &Entry| e.identity && !e.hidden && e.writable == writable;
            if let Some((o, e)) = before.filter(|(o, e)| o + e.len_bytes == offset && joins(e)) {
                (start, len) = (o, len + e.len_bytes);
            }
            if let Some(e) = after.filter(joins) {
                map.remove(&end);
                len += e.len_bytes;
            }
        }
        // Joining a predecessor overwrites its entry in place.
        map.insert(start, Entry { len_bytes: len, writable, identity, hidden: false });
        Ok(())
    }

    /// Maps private zero pages, readable and writable, at `offset` (pinned host memory).
    pub(crate) fn map_anonymous(&self, offset: u64, len_bytes: u64) -> io::Result<()> {
        let at = self.page_range(offset, len_bytes)?;
        let mut map = self.write_map();
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
        map.insert(offset, Entry { len_bytes, writable: true, identity: false, hidden: false });
        Ok(())
    }

    /// Unmaps `[offset, offset + len_bytes)`, which must be exactly covered by whole mappings
    /// (on the identity mapping, adjacent ones made accessible together count as one each),
    /// returning it to the inaccessible reservation.
    pub(crate) fn unmap(&self, offset: u64, len_bytes: u64) -> io::Result<()> {
        self.unmap_in(offset, len_bytes, false)
    }

    /// Unmaps `[offset, offset + len_bytes)` like [`Self::unmap`], where it may also be part of
    /// one mapping made for several pieces at once: the caller (the device's record of its
    /// backings) has checked that it is exactly one piece.
    pub(crate) fn unmap_piece(&self, offset: u64, len_bytes: u64) -> io::Result<()> {
        self.unmap_in(offset, len_bytes, true)
    }

    fn unmap_in(&self, offset: u64, len_bytes: u64, piece: bool) -> io::Result<()> {
        let at = self.page_range(offset, len_bytes)?;
        let end = offset + len_bytes;
        let mut map = self.write_map();
        // The common case: one identity entry is exactly the range (one descent of the map: the
        // entry is taken out first, and put back if it is not that or the kernel refuses).
        if let Some(e) = map.remove(&offset) {
            if e.identity && e.len_bytes == len_bytes {
                // CAST: checked by `page_range` to fit the window, hence usize.
                if let Err(err) = self.protect_identity(at, len_bytes as usize, libc::PROT_NONE) {
                    map.insert(offset, e);
                    return Err(err);
                }
                // INVARIANT: the range is inaccessible again; its entry is gone.
                return Ok(());
            }
            map.insert(offset, e);
        }
        // Check exact coverage before changing anything. Adjacent backings made accessible
        // together are one entry: on the identity mapping always, and elsewhere when the pieces
        // of one back were mapped at once (contiguous frames). Unmapping one of them splits it
        // (bookkeeping only: the pages' state is uniform, and the kernel unmaps or re-protects
        // part of a mapping as readily as all of it). A split left by a range that turns out
        // not to be mapped wholly changes nothing but the entry count.
        let all_identity = match Self::exactly_covered(&map, offset, end) {
            Some(all) => all,
            None => {
                Self::split_entry_at(&mut map, offset, piece);
                Self::split_entry_at(&mut map, end, piece);
                Self::exactly_covered(&map, offset, end).ok_or(io::ErrorKind::NotFound)?
            }
        };
        if all_identity {
            // CAST: checked by `page_range` to fit the window, hence usize.
            self.protect_identity(at, len_bytes as usize, libc::PROT_NONE)?;
            // INVARIANT: the range is inaccessible again; drop its entries.
            let mut o = offset;
            while o < end {
                match map.remove(&o) {
                    Some(e) => o += e.len_bytes,
                    None => break,
                }
            }
        } else {
            let pieces: Vec<(u64, Entry)> = map.range(offset..end).map(|(&o, &e)| (o, e)).collect();
            if pieces.iter().all(|(_, e)| !e.identity) {
                // No piece on the identity mapping: what lies under the whole range goes back
                // in one step (one mapping call however many pieces).
                self.restore(at, offset, len_bytes)?;
                // INVARIANT: the range is inaccessible again; drop its entries.
                for (o, _) in &pieces {
                    map.remove(o);
                }
                return Ok(());
            }
            for &(o, e) in &pieces {
                // Each piece lies in the window (it was mapped there): offsets and lengths fit.
                let (at, len) = ((self.base + o) as usize as *mut libc::c_void, e.len_bytes as usize);
                if e.identity {
                    self.protect_identity(at, len, libc::PROT_NONE)?;
                } else {
                    self.restore(at, o, e.len_bytes)?;
                }
                // INVARIANT: this piece is inaccessible again.
                map.remove(&o);
            }
        }
        Ok(())
    }

    /// Puts back what lies under `[at, at + len_bytes)` (window offset `offset`) when nothing
    /// is mapped there: the inaccessible identity mapping, or the reservation beyond it.
    fn restore(&self, at: *mut libc::c_void, offset: u64, len_bytes: u64) -> io::Result<()> {
        let end = offset + len_bytes;
        let splits = self.identity.as_ref().map_or([0, 0], |id| [id.wrap(), id.len_bytes]);
        if let Some(&split) = splits.iter().find(|&&p| offset < p && end > p) {
            // Straddles a piece boundary: each part gets what lies under it.
            self.restore(at, offset, split - offset)?;
            // CAST: inside the window, which lies in the address space.
            let rest = (at as usize + (split - offset) as usize) as *mut libc::c_void;
            return self.restore(rest, split, end - split);
        }
        if let Some(id) = self.identity.as_ref().filter(|id| end <= id.len_bytes) {
            Self::map_object(at, len_bytes, id, offset)?;
            self.forget_marks(offset, len_bytes);
            return Ok(());
        }
        // SAFETY: the range lies inside our reservation; no reader holds it (callers hold the
        // write lock), so replacing it with an inaccessible reservation breaks no access in
        // flight.
        let got = unsafe {
            libc::mmap(
                at,
                // CAST: a range of the window, which lies in the address space.
                len_bytes as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if got == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether `[addr, addr + len_bytes)` is wholly mapped (and writable if `write`).
    fn covered(&self, map: &BTreeMap<u64, Entry>, addr: u64, len_bytes: u64, write: bool) -> bool {
        self.covered_span(map, addr, len_bytes, write).is_some()
    }

    /// [`Self::covered`], answering the span of window offsets `[lo, hi)` the mappings it
    /// walked cover (every byte of it mapped, and writable with `write`), which holds the range.
    fn covered_span(
        &self,
        map: &BTreeMap<u64, Entry>,
        addr: u64,
        len_bytes: u64,
        write: bool,
    ) -> Option<(u64, u64)> {
        if !self.contains(addr) {
            return None;
        }
        let offset = addr - self.base;
        let end = offset.checked_add(len_bytes)?;
        if end > self.len_bytes {
            return None;
        }
        let (&first, _) = map.range(..=offset).next_back()?;
        let mut cursor = offset;
        // Verified so far (empty until an entry is walked).
        let mut span = (offset, offset);
        let mut entries = map.range(first..);
        while cursor < end {
            match entries.next() {
                Some((&o, e))
                    if o <= cursor && o + e.len_bytes > cursor && !e.hidden && (e.writable || !write) =>
                {
                    if span.0 == span.1 {
                        span.0 = o;
                    }
                    cursor = o + e.len_bytes;
                    span.1 = cursor;
                }
                _ => return None,
            }
        }
        Some(span)
    }

    /// [`Self::covered`] for one of a run of ranges: `span` is the last span found covered
    /// (window offsets; empty at first), looked at before the map and replaced when the map is
    /// asked.
    fn covered_within(
        &self,
        map: &BTreeMap<u64, Entry>,
        span: &mut (u64, u64),
        addr: u64,
        len_bytes: u64,
        write: bool,
    ) -> bool {
        let off = addr.wrapping_sub(self.base);
        // A zero-length range asks the map, as `covered` does.
        if len_bytes > 0 && self.contains(addr) && off >= span.0 && len_bytes <= span.1.saturating_sub(off) {
            return true;
        }
        match self.covered_span(map, addr, len_bytes, write) {
            Some(found) => {
                *span = found;
                true
            }
            None => false,
        }
    }

    /// How many mappings the window records (tests).
    #[cfg(test)]
    pub(crate) fn entry_count(&self) -> usize {
        self.mapped.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether whole entries cover `[offset, end)` exactly, and then whether all of them are
    /// identity entries.
    fn exactly_covered(map: &BTreeMap<u64, Entry>, offset: u64, end: u64) -> Option<bool> {
        let mut cursor = offset;
        let mut all_identity = true;
        for (&o, e) in map.range(offset..end) {
            if o != cursor || o + e.len_bytes > end {
                return None;
            }
            cursor = o + e.len_bytes;
            all_identity &= e.identity;
        }
        (cursor == end).then_some(all_identity)
    }

    /// Splits the entry that straddles `at` (if one does) into two at `at`, when it is an
    /// identity entry or `any`.
    fn split_entry_at(map: &mut BTreeMap<u64, Entry>, at: u64, any: bool) {
        if let Some((&o, e)) = map.range(..at).next_back() {
            if (any || e.identity) && o + e.len_bytes > at {
                Self::split_at(map, at);
            }
        }
    }

    /// Splits the entry that straddles `at` (if one does) into two at `at`.
    fn split_at(map: &mut BTreeMap<u64, Entry>, at: u64) {
        let Some((&o, &e)) = map.range(..at).next_back() else { return };
        if o + e.len_bytes > at {
            map.insert(o, Entry { len_bytes: at - o, ..e });
            map.insert(at, Entry { len_bytes: o + e.len_bytes - at, ..e });
        }
    }

    /// Makes the mapped pages `[offset, offset + len_bytes)` inaccessible (`hidden`) or
    /// accessible again, in place (their contents stay): a sanitizer's guard page or
    /// quarantined memory. Every byte of the range must be mapped. Accesses through the
    /// window ([`Self::read`] and the others) treat hidden bytes as unmapped; an access from a
    /// kernel faults (and is contained). Unmapping a range with hidden pages works as usual.
    pub(crate) fn set_hidden(&self, offset: u64, len_bytes: u64, hidden: bool) -> io::Result<()> {
        let at = self.page_range(offset, len_bytes)?;
        let end = offset + len_bytes;
        let mut map = self.write_map();
        // Check coverage first: nothing changes on error.
        let mut cursor = offset;
        if let Some((&o, e)) = map.range(..=offset).next_back() {
            if o + e.len_bytes > offset {
                cursor = o + e.len_bytes;
            }
        }
        if cursor == offset {
            return Err(io::ErrorKind::NotFound.into());
        }
        if cursor < end {
            for (&o, e) in map.range(cursor..end) {
                if o != cursor {
                    return Err(io::ErrorKind::NotFound.into());
                }
                cursor = o + e.len_bytes;
            }
        }
        if cursor < end {
            return Err(io::ErrorKind::NotFound.into());
        }
        Self::split_at(&mut map, offset);
        Self::split_at(&mut map, end);
        let pieces: Vec<(u64, Entry)> = map.range(offset..end).map(|(&o, &e)| (o, e)).collect();
        for (o, e) in pieces {
            let prot = match (hidden, e.writable) {
                (true, _) => libc::PROT_NONE,
                (false, true) => libc::PROT_READ | libc::PROT_WRITE,
                (false, false) => libc::PROT_READ,
            };
            // CAST: inside the window (checked by `page_range`), so the address and length fit.
            let piece = (at as usize + (o - offset) as usize) as *mut libc::c_void;
            let changed = if e.identity {
                self.protect_identity(piece, e.len_bytes as usize, prot)
            } else {
                // SAFETY: the piece is a mapped page range of our own window (an entry);
                // changing its protection touches no other memory. Accesses through the window
                // check the entries under the lock we hold, so none is using it now.
                match unsafe { libc::mprotect(piece, e.len_bytes as usize, prot) } {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                }
            };
            changed?;
            // INVARIANT: the entry says what the piece's protection now is.
            map.insert(o, Entry { hidden, ..e });
        }
        Ok(())
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

    /// The map under its write lock, in a new state (see `state`).
    fn write_map(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Entry>> {
        let map = self.mapped.write().unwrap_or_else(|p| p.into_inner());
        // Under the write lock: a reader sees the new number once it holds the read lock.
        self.state.store(next_map_state(), Ordering::Relaxed);
        map
    }

    /// Fills `len_bytes` at `addr` with `value`, looking at the map only when the range is not
    /// inside `cache`'s span in the map's present state (then `cache` takes the span found).
    pub(crate) fn fill_cached(
        &self,
        cache: &mut SpanCache,
        addr: u64,
        value: u8,
        len_bytes: u64,
    ) -> Result<(), Fault> {
        self.hold().fill(cache, addr, value, len_bytes)
    }

    /// The map held for reading, for fills until the hold is dropped.
    pub(crate) fn hold(&self) -> MapHold<'_> {
        let map = self.mapped.read().unwrap_or_else(|p| p.into_inner());
        // Stable while the read lock is held (replaced only under the write lock).
        let state = self.state.load(Ordering::Relaxed);
        MapHold { window: self, map, state, bytes: 0 }
    }

    /// Copies `len_bytes` from `src` in window `from` to `dst` in window `to` (which may be the
    /// same window; the ranges may overlap).
    pub(crate) fn copy(to: &Window, dst: u64, from: &Window, src: u64, len_bytes: u64) -> Result<(), Fault> {
        Self::copy_many(to, from, &[(dst, src, len_bytes)], u64::MAX)
    }

    /// [`Self::copy`] of each `(dst, src, len)` entry in order, from `from` to `to`, taking the
    /// windows' read locks once for every `hold_bytes` copied (at least one entry each time)
    /// rather than once per entry; stops at the first entry not wholly mapped (the entries
    /// before it are copied).
    pub(crate) fn copy_many(
        to: &Window,
        from: &Window,
        entries: &[(u64, u64, u64)],
        hold_bytes: u64,
    ) -> Result<(), Fault> {
        let mut rest = entries;
        while !rest.is_empty() {
            let done = Self::copy_locked(to, from, rest, hold_bytes)?;
            rest = &rest[done..];
        }
        Ok(())
    }

    /// One taking of the locks for [`Self::copy_many`]: copies entries from the front of
    /// `entries` until `hold_bytes` are copied; how many it copied.
    fn copy_locked(
        to: &Window,
        from: &Window,
        entries: &[(u64, u64, u64)],
        hold_bytes: u64,
    ) -> Result<usize, Fault> {
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
        let (mut copied, mut bytes) = (0, 0u64);
        // The spans last found mapped on each side: a run of entries inside one mapping looks
        // the mapping up once.
        let (mut from_span, mut to_span) = ((0, 0), (0, 0));
        for &(dst, src, len_bytes) in entries {
            if copied > 0 && bytes >= hold_bytes {
                break;
            }
            if !from.covered_within(map_of(from), &mut from_span, src, len_bytes, false)
                || !to.covered_within(map_of(to), &mut to_span, dst, len_bytes, true)
            {
                return Err(Fault);
            }
            // CAST: covered addresses lie in the address space.
            let (d, s) = (dst as usize as *mut u8, src as usize as *const u8);
            // SAFETY: both ranges are mapped (checked above) and stay mapped while we hold both
            // read locks; `copy` allows overlap.
            unsafe { core::ptr::copy(s, d, len_bytes as usize) };
            copied += 1;
            bytes = bytes.saturating_add(len_bytes);
        }
        Ok(copied)
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

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// Identity mappings: adjacent ranges of one protection join into one entry, a range that
    /// overlaps an entry (or touches one of another protection) is refused or kept apart, and
    /// unmapping a middle piece splits the entry, leaving its bytes unreadable.
    #[test]
    fn identity_entries_join_split_and_refuse_overlaps() {
        let name = format!("/aclrs-test-window-{}", std::process::id());
        let object = ShmObject::open(&name, 16 * PAGE, true).unwrap();
        shm_unlink(&name);
        // A base far from anything the test process maps; a clash fails the reservation.
        let base = 0x6a00_0000_0000 + u64::from(std::process::id() % 4096) * (1 << 30);
        let mut w = Window::reserve(base, 16 * PAGE).unwrap();
        w.map_identity(&object, 0).unwrap();
        w.map_shared(0, 2 * PAGE, &object, 0, true).unwrap();
        w.map_shared(4 * PAGE, 2 * PAGE, &object, 4 * PAGE, true).unwrap();
        assert_eq!(w.entry_count(), 2);
        // Between the two: both neighbours join it.
        w.map_shared(2 * PAGE, 2 * PAGE, &object, 2 * PAGE, true).unwrap();
        assert_eq!(w.entry_count(), 1);
        // Overlaps at either end, and inside, are refused and change nothing.
        for (o, l) in [(PAGE, 2 * PAGE), (5 * PAGE, 2 * PAGE), (2 * PAGE, PAGE)] {
            let e = w.map_shared(o, l, &object, o, true).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "[{o:#x}, +{l:#x})");
        }
        assert_eq!(w.entry_count(), 1);
        // Right after it but read-only: a separate entry, not writable.
        w.map_shared(6 * PAGE, PAGE, &object, 6 * PAGE, false).unwrap();
        assert_eq!(w.entry_count(), 2);
        w.write(base + PAGE, &[7u8; 16]).unwrap();
        assert!(w.write(base + 6 * PAGE, &[7u8; 16]).is_err());
        let mut back = [0u8; 16];
        w.read(base + 6 * PAGE, &mut back).unwrap();
        // A middle piece of the joined entry goes away: the entry splits around it.
        w.unmap(2 * PAGE, 2 * PAGE).unwrap();
        assert_eq!(w.entry_count(), 3);
        assert!(w.read(base + 2 * PAGE, &mut back).is_err());
        w.read(base + PAGE, &mut back).unwrap();
        assert_eq!(back, [7u8; 16]);
        // The hole takes a mapping again, joining both sides once more.
        w.map_shared(2 * PAGE, 2 * PAGE, &object, 2 * PAGE, true).unwrap();
        assert_eq!(w.entry_count(), 2);
        w.unmap(0, 6 * PAGE).unwrap();
        w.unmap(6 * PAGE, PAGE).unwrap();
        assert_eq!(w.entry_count(), 0);
    }

    /// Kernel mappings of this process inside `[lo, hi)` (from `/proc/self/maps`).
    fn kernel_mappings(lo: u64, hi: u64) -> usize {
        let text = std::fs::read_to_string("/proc/self/maps").unwrap();
        text.lines()
            .filter_map(|l| {
                let (a, b) = l.split_whitespace().next()?.split_once('-')?;
                Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?))
            })
            .filter(|&(a, b)| a < hi && b > lo)
            .count()
    }

    /// A range backed with nothing accessible around it keeps the mapping mark: unbacked, it
    /// stays a kernel mapping of its own between never-backed memory (so backing it again splits
    /// and joins nothing), its bytes stay out of reach while unbacked and come back with it; a
    /// range backed next to it takes no mark; taking every mark off (what a change refused for
    /// lack of mappings does) joins the unbacked range with its neighbours again.
    #[test]
    fn a_range_backed_once_stays_its_own_kernel_mapping_until_the_marks_go() {
        let name = format!("/aclrs-test-marks-{}", std::process::id());
        let object = ShmObject::open(&name, 64 * PAGE, true).unwrap();
        shm_unlink(&name);
        let base = 0x6c00_0000_0000 + u64::from(std::process::id() % 4096) * (1 << 30);
        let mut w = Window::reserve(base, 64 * PAGE).unwrap();
        w.map_identity(&object, 0).unwrap();
        let maps = || kernel_mappings(base, base + 64 * PAGE);
        assert_eq!(maps(), 1, "the identity mapping, inaccessible");
        // Never-backed memory on both sides of the range.
        let (off, len) = (8 * PAGE, 5 * PAGE);
        let at = base + off;
        w.map_shared(off, len, &object, off, true).unwrap();
        assert_eq!(maps(), 3);
        w.write(at, &[9u8; 64]).unwrap();
        for round in 0..3 {
            w.unmap(off, len).unwrap();
            assert_eq!(maps(), 3, "round {round}: the unbacked range is still a mapping of its own");
            let mut b = [0u8; 64];
            assert!(w.read(at, &mut b).is_err(), "round {round}: unbacked bytes are out of reach");
            w.map_shared(off, len, &object, off, true).unwrap();
            assert_eq!(maps(), 3, "round {round}");
            w.read(at, &mut b).unwrap();
            assert_eq!(b, [9u8; 64], "round {round}: the same frames, the same bytes");
        }
        // A range backed next to accessible memory takes no mark: unbacked, it joins the
        // never-backed memory again (backing and unbacking it move a boundary in place).
        let next = off + len;
        for _ in 0..2 {
            w.map_shared(next, PAGE, &object, next, true).unwrap();
            assert_eq!(maps(), 4, "the marked range, its unmarked neighbour");
            w.unmap(next, PAGE).unwrap();
            assert_eq!(maps(), 3, "the neighbour went back into the never-backed memory");
        }
        w.unmap(off, len).unwrap();
        assert_eq!(maps(), 3, "the unbacked marked range between never-backed memory");
        {
            let _held = w.write_map();
            assert!(w.unmark_all(), "there were marks");
            assert!(!w.unmark_all(), "none left");
        }
        assert_eq!(maps(), 1, "without marks the unbacked ranges join the identity mapping again");
        // Backing again works as at first (and marks again).
        w.map_shared(off, len, &object, off, true).unwrap();
        let mut b = [0u8; 64];
        w.read(at, &mut b).unwrap();
        assert_eq!(b, [9u8; 64]);
        w.unmap(off, len).unwrap();
        assert_eq!(maps(), 3);
    }

    /// A run of copies between two windows under one taking of their locks: entries inside
    /// one mapping, then inside another, are copied; an entry reaching a hole or a read-only
    /// destination faults (after the entries before it were copied), whatever the spans found
    /// mapped for the entries before it; `hold_bytes` only splits the run.
    #[test]
    fn copy_many_copies_in_order_and_faults_at_the_first_unmapped_entry() {
        let name = format!("/aclrs-test-copymany-{}", std::process::id());
        let object = ShmObject::open(&name, 32 * PAGE, true).unwrap();
        shm_unlink(&name);
        let base = 0x6b00_0000_0000 + u64::from(std::process::id() % 4096) * (1 << 30);
        let mut w = Window::reserve(base, 32 * PAGE).unwrap();
        w.map_identity(&object, 0).unwrap();
        // Sources: pages 0..4. Destinations: pages 8..10 and 12..14 (a hole at 10..12), and a
        // read-only page at 14.
        w.map_shared(0, 4 * PAGE, &object, 0, true).unwrap();
        w.map_shared(8 * PAGE, 2 * PAGE, &object, 8 * PAGE, true).unwrap();
        w.map_shared(12 * PAGE, 2 * PAGE, &object, 12 * PAGE, true).unwrap();
        w.map_shared(14 * PAGE, PAGE, &object, 14 * PAGE, false).unwrap();
        let pattern: Vec<u8> = (0..4 * PAGE).map(|i| (i % 251) as u8).collect();
        w.write(base, &pattern).unwrap();
        let at = |page: u64, off: u64| base + page * PAGE + off;
        for hold in [1, 64, u64::MAX] {
            let ok = [
                (at(8, 0), at(0, 0), 100),
                (at(8, 100), at(0, 100), 3000),
                (at(12, 8), at(1, 0), 2 * PAGE - 8),
            ];
            Window::copy_many(&w, &w, &ok, hold).unwrap();
            let mut back = vec![0u8; 3100];
            w.read(at(8, 0), &mut back).unwrap();
            assert_eq!(back, pattern[..3100]);
            let mut back = vec![0u8; (2 * PAGE - 8) as usize];
            w.read(at(12, 8), &mut back).unwrap();
            assert_eq!(back, pattern[PAGE as usize..(3 * PAGE - 8) as usize]);
            // Inside the first mapping, then one byte into the hole: the first is copied, the
            // second faults.
            w.write(at(9, 0), &[0u8; 16]).unwrap();
            let bad = [(at(9, 0), at(2, 0), 16), (at(9, 16), at(2, 16), PAGE - 15)];
            assert!(Window::copy_many(&w, &w, &bad, hold).is_err());
            let mut back = [0u8; 16];
            w.read(at(9, 0), &mut back).unwrap();
            assert_eq!(back[..], pattern[2 * PAGE as usize..2 * PAGE as usize + 16]);
            // A read-only destination right after a writable one faults too.
            let ro = [(at(13, 0), at(0, 0), 16), (at(14, 0), at(0, 0), 16)];
            assert!(Window::copy_many(&w, &w, &ro, hold).is_err());
            // A zero-length entry in a hole is refused as by a lone copy.
            assert_eq!(
                Window::copy_many(&w, &w, &[(at(10, 0), at(0, 0), 0)], hold).is_ok(),
                Window::copy(&w, at(10, 0), &w, at(0, 0), 0).is_ok()
            );
        }
    }
}
