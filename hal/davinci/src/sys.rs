//! Every `unsafe` of the davinci backend: the libc transport, the ioctl wrappers that hand the
//! kernel a pointer, and the user-memory accessors the fake kernel decodes arguments with.

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
