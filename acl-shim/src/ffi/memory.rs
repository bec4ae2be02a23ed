//! C exports of the memory API: device and pinned-host allocation, synchronous copy and set,
//! memory queries.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::{addr, guard, out_ptr, put, size, AclErrorCode};
use crate::error::AclError;
use crate::memory::{DstBytes, Loc, MallocApi, SrcBytes};
use crate::runtime;

/// `aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMalloc(dev_ptr: *mut *mut c_void, size: usize, policy: u32) -> AclErrorCode {
    const API: &str = "aclrtMalloc";
    guard(API, || {
        let out = out_ptr(API, "devPtr", dev_ptr)?;
        let rt = runtime::runtime(API)?;
        let p = rt.malloc(API, size as u64, policy, MallocApi::Malloc)?;
        // CAST: device addresses lie in the host's address space on this backend.
        put(out, p as usize as *mut c_void);
        Ok(())
    })
}

/// `aclError aclrtFree(void *devPtr);`
#[no_mangle]
pub unsafe extern "C" fn aclrtFree(dev_ptr: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtFree";
    guard(API, || {
        if dev_ptr.is_null() {
            return Err(AclError::invalid("aclrtFree: devPtr is NULL"));
        }
        runtime::runtime(API)?.free(API, addr(dev_ptr))
    })
}

/// `aclError aclrtMallocHost(void **hostPtr, size_t size);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocHost(host_ptr: *mut *mut c_void, size: usize) -> AclErrorCode {
    const API: &str = "aclrtMallocHost";
    guard(API, || {
        let out = out_ptr(API, "hostPtr", host_ptr)?;
        let p = runtime::runtime(API)?.malloc_host(API, size as u64)?;
        // CAST: pinned memory lies in the host's address space.
        put(out, p as usize as *mut c_void);
        Ok(())
    })
}

/// `aclError aclrtFreeHost(void *hostPtr);`
#[no_mangle]
pub unsafe extern "C" fn aclrtFreeHost(host_ptr: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtFreeHost";
    guard(API, || {
        if host_ptr.is_null() {
            return Err(AclError::invalid("aclrtFreeHost: hostPtr is NULL"));
        }
        runtime::runtime(API)?.free_host(API, addr(host_ptr))
    })
}

/// `aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMemcpy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: u32,
) -> AclErrorCode {
    const API: &str = "aclrtMemcpy";
    guard(API, || {
        if count == 0 {
            return Ok(());
        }
        let rt = runtime::runtime(API)?;
        let n = size(API, "count", count)?;
        let plan = rt.plan_memcpy(API, addr(dst), dest_max as u64, addr(src), n, kind)?;
        if plan.count == 0 {
            return Ok(());
        }
        let (d, s) = (addr(dst), addr(src));
        match (plan.dst, plan.src) {
            (Loc::Unregistered, Loc::Unregistered) => {
                // SAFETY: both pointers are non-null (checked by the plan) and, by the API's
                // contract, valid for `count` bytes; neither range touches a runtime window
                // (checked by the plan). `copy` has memmove semantics, so overlap is fine.
                unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), count) };
                Ok(())
            }
            (Loc::Unregistered, _) => {
                // SAFETY: `dst` is non-null, points to at least `destMax >= count` writable
                // bytes by the API's contract, lies outside every runtime window (so it cannot
                // alias the device or pinned source) and `count <= isize::MAX` (checked).
                let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), count) };
                rt.copy(API, DstBytes::Host(out), SrcBytes::Addr(s), n)
            }
            (_, Loc::Unregistered) => {
                // SAFETY: `src` is non-null, points to `count` readable bytes by the API's
                // contract, lies outside every runtime window and `count <= isize::MAX`.
                let input = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), count) };
                rt.copy(API, DstBytes::Addr(d), SrcBytes::Host(input), n)
            }
            _ => rt.copy(API, DstBytes::Addr(d), SrcBytes::Addr(s), n),
        }
    })
}

/// `aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);` — sets
/// the low byte of `value`.
#[no_mangle]
pub unsafe extern "C" fn aclrtMemset(
    dev_ptr: *mut c_void,
    max_count: usize,
    value: i32,
    count: usize,
) -> AclErrorCode {
    const API: &str = "aclrtMemset";
    guard(API, || {
        if count == 0 {
            return Ok(());
        }
        let rt = runtime::runtime(API)?;
        let n = size(API, "count", count)?;
        let plan = rt.plan_memset(API, addr(dev_ptr), max_count as u64, n)?;
        // CAST: the documented behaviour keeps the low byte.
        rt.memset(API, plan, addr(dev_ptr), value as u8)
    })
}

/// `aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);`
#[no_mangle]
pub unsafe extern "C" fn aclrtGetMemInfo(attr: u32, free: *mut usize, total: *mut usize) -> AclErrorCode {
    const API: &str = "aclrtGetMemInfo";
    guard(API, || {
        let f = out_ptr(API, "free", free)?;
        let t = out_ptr(API, "total", total)?;
        let (fv, tv) = runtime::runtime(API)?.mem_info(API, attr)?;
        // CAST: byte counts of one device fit in usize on 64-bit hosts.
        put(f, fv as usize);
        put(t, tv as usize);
        Ok(())
    })
}
