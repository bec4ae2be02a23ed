//! Device variables of kernel binaries on the software NPU: a data symbol (an ELF object) of a
//! loaded host shared object, found by address with `dladdr1`. The device sees the variable at
//! its host address (kernels are host code), so the address is also the device address.

use std::ffi::c_void;

use super::kernel::Library;

/// `RTLD_DL_SYMENT` of `<dlfcn.h>`: `dladdr1` returns the symbol's `ElfW(Sym) *`.
const RTLD_DL_SYMENT: libc::c_int = 1;
/// `STT_OBJECT`: a data object.
const STT_OBJECT: u8 = 1;

/// The `(address, size)` of the data object that starts at `addr` in one of `libs`; `None`
/// when `addr` is not the start of a sized data symbol those objects define.
pub(crate) fn object_at(libs: &[&Library], addr: u64) -> Option<(u64, u64)> {
    if addr == 0 {
        return None;
    }
    // CAST: an address as the pointer `dladdr1` looks up (never dereferenced here).
    let p = addr as usize as *const c_void;
    // SAFETY: `Dl_info` is plain data (pointers), valid when zeroed; dladdr1 only writes it.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let mut sym: *const libc::Elf64_Sym = std::ptr::null();
    // SAFETY: `info` and `sym` are valid for writes; RTLD_DL_SYMENT makes `sym` receive a
    // pointer to the ELF symbol of the object containing `p`, or NULL.
    let found = unsafe { libc::dladdr1(p, &raw mut info, (&raw mut sym).cast(), RTLD_DL_SYMENT) };
    if found == 0 || sym.is_null() || info.dli_saddr.cast_const() != p {
        return None;
    }
    // SAFETY: a non-null symbol-table entry of a loaded object, which stays mapped while the
    // object is loaded (the caller holds the libraries).
    let s = unsafe { sym.read() };
    if s.st_info & 0xf != STT_OBJECT || s.st_size == 0 {
        return None;
    }
    libs.iter().any(|l| l.defines(p.cast_mut())).then_some((addr, s.st_size))
}
