//! Every `unsafe` of the davinci backend: the libc transport, the ioctl wrappers that hand the
//! kernel a pointer, the user-memory accessors the fake kernel decodes arguments with, and the
//! shared ring and doorbell memory of the mapped-ring queue mode ([`shared`]).

use core::ffi::c_void;
use std::ffi::CStr;
use std::os::fd::RawFd;

use crate::{Errno, Transport};

/// The transport of a real machine: the libc system calls.
#[derive(Clone, Copy, Debug, Default)]
pub struct LibcTransport;

fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

impl Transport for LibcTransport {
    fn loader(&self) -> Option<&dyn hal::Loader> {
        None
    }

    fn open(&self, path: &CStr, flags: i32) -> Result<RawFd, Errno> {
        // SAFETY: `path` is a NUL-terminated string that lives for the call; `open` keeps no
        // pointer to it.
        let fd = unsafe { libc::open(path.as_ptr(), flags) };
        if fd < 0 {
            Err(last_errno())
        } else {
            Ok(fd)
        }
    }

    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        // SAFETY: closing a descriptor touches no memory of this process; the caller owns `fd`.
        let rc = unsafe { libc::close(fd) };
        if rc < 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    }

    unsafe fn ioctl(&self, fd: RawFd, cmd: u32, arg: *mut c_void) -> Result<i32, Errno> {
        // SAFETY: the caller guarantees `arg` and every address it carries are valid for the
        // accesses `cmd` makes (the trait's contract).
        // CAST: the request parameter is `c_ulong` on glibc; command numbers are 32-bit.
        let rc = unsafe { libc::ioctl(fd, cmd as _, arg) };
        if rc < 0 {
            Err(last_errno())
        } else {
            Ok(rc)
        }
    }

    unsafe fn mmap(&self, hint: usize, len: usize, prot: i32, flags: i32, fd: RawFd) -> Result<usize, Errno> {
        // SAFETY: without `MAP_FIXED` the kernel never replaces an existing mapping; the caller
        // guarantees the driver's mapping rules (the trait's contract).
        let addr = unsafe { libc::mmap(hint as *mut c_void, len, prot, flags & !libc::MAP_FIXED, fd, 0) };
        if addr == libc::MAP_FAILED {
            Err(last_errno())
        } else {
            Ok(addr as usize)
        }
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller guarantees `addr..addr+len` is a whole mapping it made and nothing
        // refers to it any more.
        let rc = unsafe { libc::munmap(addr as *mut c_void, len) };
        if rc < 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    }
}

/// Issues `cmd` with `arg`, whose type must be the command's argument type.
///
/// Safe because `arg` is a live exclusive reference of the size the command encodes (checked),
/// and the argument types passed here carry no host address the kernel dereferences.
pub(crate) fn ioctl_mut<T: Transport + ?Sized, A>(
    t: &T,
    fd: RawFd,
    cmd: u32,
    arg: &mut A,
) -> Result<i32, Errno> {
    let size = hal::davinci_abi::ioc_size(cmd);
    if size != 0 && size != core::mem::size_of::<A>() {
        return Err(Errno(libc::EINVAL));
    }
    // SAFETY: `arg` is valid for reads and writes of `size_of::<A>()` bytes for the call, and
    // (this function's rule) carries no address the kernel follows.
    unsafe { t.ioctl(fd, cmd, (arg as *mut A).cast::<c_void>()) }
}

/// Issues `cmd` with `arg`, which carries host addresses the kernel reads or writes during
/// the call.
///
/// # Safety
///
/// Every host address inside `arg` must be valid for the accesses `cmd` makes, for the
/// duration of the call, and the kernel must keep no such address past it.
pub(crate) unsafe fn ioctl_with_ptrs<T: Transport + ?Sized, A>(
    t: &T,
    fd: RawFd,
    cmd: u32,
    arg: &mut A,
) -> Result<i32, Errno> {
    let size = hal::davinci_abi::ioc_size(cmd);
    if size != 0 && size != core::mem::size_of::<A>() {
        return Err(Errno(libc::EINVAL));
    }
    // SAFETY: `arg` is valid for the call; the caller vouches for the addresses inside it.
    unsafe { t.ioctl(fd, cmd, (arg as *mut A).cast::<c_void>()) }
}

/// Host address of a byte slice, as the kernel ABI carries it.
pub(crate) fn addr_of(bytes: &[u8]) -> u64 {
    // CAST: a pointer fits 64 bits on every supported target.
    bytes.as_ptr() as u64
}

/// Host address of a mutable byte slice.
pub(crate) fn addr_of_mut(bytes: &mut [u8]) -> u64 {
    // CAST: a pointer fits 64 bits on every supported target.
    bytes.as_mut_ptr() as u64
}

/// User-memory accessors for a kernel written in Rust (the fake kernel): what `copy_from_user`
/// and `copy_to_user` are to a driver.
#[cfg(feature = "fake-kernel")]
pub(crate) mod user {
    use core::ffi::c_void;

    /// Reads a `T` at `arg`.
    ///
    /// # Safety
    ///
    /// `arg` must point at a readable, initialised `T` (alignment not required).
    pub(crate) unsafe fn read<T: Copy>(arg: *const c_void) -> T {
        // SAFETY: the caller guarantees `arg` points at a readable `T`.
        unsafe { arg.cast::<T>().read_unaligned() }
    }

    /// Writes `value` at `arg`.
    ///
    /// # Safety
    ///
    /// `arg` must point at memory writable for a `T` (alignment not required).
    pub(crate) unsafe fn write<T: Copy>(arg: *mut c_void, value: T) {
        // SAFETY: the caller guarantees `arg` is writable for a `T`.
        unsafe { arg.cast::<T>().write_unaligned(value) }
    }

    /// The `len` bytes at host address `addr`.
    ///
    /// # Safety
    ///
    /// `addr..addr+len` must be readable and not written by anyone for `'a`.
    pub(crate) unsafe fn bytes<'a>(addr: u64, len: usize) -> &'a [u8] {
        if len == 0 {
            return &[];
        }
        // SAFETY: the caller guarantees the range is readable and unaliased by writers.
        unsafe { core::slice::from_raw_parts(addr as *const u8, len) }
    }

    /// The `len` writable bytes at host address `addr`.
    ///
    /// # Safety
    ///
    /// `addr..addr+len` must be writable and not accessed by anyone else for `'a`.
    pub(crate) unsafe fn bytes_mut<'a>(addr: u64, len: usize) -> &'a mut [u8] {
        if len == 0 {
            return &mut [];
        }
        // SAFETY: the caller guarantees the range is writable and exclusively ours.
        unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, len) }
    }
}

/// Memory shared with another party (a kernel, a device thread): the SQ ring, its control
/// pages and the doorbell. Raw pointers stay in here; callers see owners that unmap on drop
/// and bounds-checked [`shared::View`]s that borrow them.
pub(crate) mod shared {
    use core::marker::PhantomData;
    use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    use std::sync::Arc;

    use crate::{Errno, Transport};

    /// The host page size.
    pub(crate) fn page_size() -> usize {
        // SAFETY: `sysconf` reads a constant of the system; no memory of ours is involved.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
    }

    /// A window of shared memory borrowed from its owner, accessed only through atomics
    /// (the other party is another thread or the device, so plain loads would race).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct View<'a> {
        addr: usize,
        len: usize,
        _owner: PhantomData<&'a ()>,
    }

    impl View<'_> {
        fn at<A>(&self, off: usize) -> usize {
            let size = core::mem::size_of::<A>();
            assert!(
                off.checked_add(size).is_some_and(|end| end <= self.len) && (self.addr + off) % size == 0,
                "shared access at {off} out of bounds or misaligned"
            );
            self.addr + off
        }

        /// Loads the `u32` at `off` (acquire).
        pub(crate) fn load_u32(&self, off: usize) -> u32 {
            let p = self.at::<u32>(off);
            // SAFETY: `p` is in bounds and aligned (checked), the owner keeps the memory mapped
            // read-write for `'a`, and every party touches it only atomically.
            unsafe { AtomicU32::from_ptr(p as *mut u32) }.load(Ordering::Acquire)
        }

        /// Stores `v` at `off` (release: what was written before is visible to whoever loads it).
        pub(crate) fn store_u32(&self, off: usize, v: u32) {
            let p = self.at::<u32>(off);
            // SAFETY: as in `load_u32`.
            unsafe { AtomicU32::from_ptr(p as *mut u32) }.store(v, Ordering::Release);
        }

        /// Reads `out.len()` bytes (a multiple of 8) at `off` word by word.
        pub(crate) fn read(&self, off: usize, out: &mut [u8]) {
            assert!(out.len() % 8 == 0, "shared reads are whole words");
            for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
                let p = self.at::<u64>(off + 8 * i);
                // SAFETY: as in `load_u32`, for a `u64`.
                let w = unsafe { AtomicU64::from_ptr(p as *mut u64) }.load(Ordering::Relaxed);
                chunk.copy_from_slice(&w.to_ne_bytes());
            }
        }

        /// Writes `data` (a multiple of 8 bytes) at `off` word by word; publish it with a
        /// later [`Self::store_u32`].
        pub(crate) fn write(&self, off: usize, data: &[u8]) {
            assert!(data.len() % 8 == 0, "shared writes are whole words");
            for (i, chunk) in data.chunks_exact(8).enumerate() {
                let p = self.at::<u64>(off + 8 * i);
                let mut w = [0u8; 8];
                w.copy_from_slice(chunk);
                // SAFETY: as in `load_u32`, for a `u64`.
                unsafe { AtomicU64::from_ptr(p as *mut u64) }.store(u64::from_ne_bytes(w), Ordering::Relaxed);
            }
        }
    }

    /// A whole read-write mapping of a driver fd made through a transport, unmapped on drop.
    pub(crate) struct Mapped<T: Transport> {
        t: Arc<T>,
        addr: usize,
        len: usize,
    }

    impl<T: Transport> Mapped<T> {
        /// Maps `len` bytes of `fd` shared and read-write, where the kernel likes.
        pub(crate) fn map(t: &Arc<T>, fd: i32, len: usize) -> Result<Self, Errno> {
            // SAFETY: the TSDRV_MMAP protocol: an empty shared region the kernel fills with the
            // ring and register pages at TRS_SQCQ_ALLOC; no existing mapping is replaced (no
            // `MAP_FIXED`).
            let addr = unsafe { t.mmap(0, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd) }?;
            if addr % 8 != 0 {
                return Err(Errno(libc::EINVAL));
            }
            Ok(Self { t: Arc::clone(t), addr, len })
        }

        /// The mapping's start address.
        pub(crate) fn addr(&self) -> usize {
            self.addr
        }

        /// A view of `len` bytes at user address `addr`, if they lie inside this mapping.
        pub(crate) fn view(&self, addr: u64, len: usize) -> Option<View<'_>> {
            view_in(self.addr, self.len, addr, len)
        }
    }

    impl<T: Transport> Drop for Mapped<T> {
        fn drop(&mut self) {
            // SAFETY: views borrow `self`, so none is left; the whole mapping is unmapped.
            let _ = unsafe { self.t.munmap(self.addr, self.len) };
        }
    }

    fn view_in<'a>(base: usize, size: usize, addr: u64, len: usize) -> Option<View<'a>> {
        let off = usize::try_from(addr).ok()?.checked_sub(base)?;
        (off.checked_add(len)? <= size).then_some(View { addr: base + off, len, _owner: PhantomData })
    }

    /// Anonymous zeroed pages a fake kernel hands out as the memory behind a mapping.
    #[cfg(feature = "fake-kernel")]
    #[derive(Debug)]
    pub(crate) struct Anon {
        addr: usize,
        len: usize,
    }

    #[cfg(feature = "fake-kernel")]
    impl Anon {
        /// `len` bytes of fresh pages.
        pub(crate) fn new(len: usize) -> Result<Self, Errno> {
            if len == 0 {
                return Err(Errno(libc::EINVAL));
            }
            // SAFETY: an anonymous private mapping at an address the kernel picks replaces
            // nothing.
            let p = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM)));
            }
            Ok(Self { addr: p as usize, len })
        }

        /// The start address.
        pub(crate) fn addr(&self) -> usize {
            self.addr
        }

        /// The length in bytes.
        pub(crate) fn len(&self) -> usize {
            self.len
        }

        /// A view of `len` bytes at address `addr`, if they lie inside.
        pub(crate) fn view(&self, addr: u64, len: usize) -> Option<View<'_>> {
            view_in(self.addr, self.len, addr, len)
        }
    }

    #[cfg(feature = "fake-kernel")]
    impl Drop for Anon {
        fn drop(&mut self) {
            // SAFETY: views borrow `self`, so none is left; this is the whole mapping `new` made.
            unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        }
    }
}
