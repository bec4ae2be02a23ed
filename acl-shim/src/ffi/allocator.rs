//! C exports of the custom allocator descriptors (`acl/acl_rt_allocator.h`).
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;
use std::panic::catch_unwind;

use super::{addr, guard, out_ptr, put, AclErrorCode};
use crate::allocator::{self, Field};
use crate::error::AclError;
use crate::runtime;

fn desc(api: &str, d: *mut c_void) -> crate::Result<u64> {
    if d.is_null() {
        return Err(AclError::invalid(format!("{api}: allocatorDesc is NULL")));
    }
    Ok(addr(d))
}

fn as_ptr(v: usize) -> *mut c_void {
    // CAST: a stored address handed back to C unchanged.
    v as *mut c_void
}

/// `aclrtAllocatorDesc aclrtAllocatorCreateDesc();` — NULL on failure.
#[no_mangle]
pub extern "C" fn aclrtAllocatorCreateDesc() -> *mut c_void {
    // CAST: an opaque handle number handed to C as a pointer.
    catch_unwind(|| allocator::create_desc() as usize as *mut c_void).unwrap_or(std::ptr::null_mut())
}

/// `aclError aclrtAllocatorDestroyDesc(aclrtAllocatorDesc allocatorDesc);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorDestroyDesc(d: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtAllocatorDestroyDesc";
    trace_args!(d);
    guard(API, || allocator::destroy_desc(API, desc(API, d)?))
}

fn set(api: &'static str, d: *mut c_void, field: Field, value: usize) -> AclErrorCode {
    trace_args!(d, value);
    guard(api, || allocator::set(api, desc(api, d)?, field, value))
}

/// `aclError aclrtAllocatorSetObjToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocator allocator);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorSetObjToDesc(d: *mut c_void, obj: *mut c_void) -> AclErrorCode {
    set("aclrtAllocatorSetObjToDesc", d, Field::Allocator, obj as usize)
}

/// `aclError aclrtAllocatorSetAllocFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocFunc func);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorSetAllocFuncToDesc(d: *mut c_void, f: *mut c_void) -> AclErrorCode {
    set("aclrtAllocatorSetAllocFuncToDesc", d, Field::Alloc, f as usize)
}

/// `aclError aclrtAllocatorSetFreeFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorFreeFunc func);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorSetFreeFuncToDesc(d: *mut c_void, f: *mut c_void) -> AclErrorCode {
    set("aclrtAllocatorSetFreeFuncToDesc", d, Field::Free, f as usize)
}

/// `aclError aclrtAllocatorSetAllocAdviseFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocAdviseFunc func);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorSetAllocAdviseFuncToDesc(
    d: *mut c_void,
    f: *mut c_void,
) -> AclErrorCode {
    set("aclrtAllocatorSetAllocAdviseFuncToDesc", d, Field::AllocAdvise, f as usize)
}

/// `aclError aclrtAllocatorSetGetAddrFromBlockFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorGetAddrFromBlockFunc func);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorSetGetAddrFromBlockFuncToDesc(
    d: *mut c_void,
    f: *mut c_void,
) -> AclErrorCode {
    set("aclrtAllocatorSetGetAddrFromBlockFuncToDesc", d, Field::GetAddr, f as usize)
}

/// `aclError aclrtAllocatorRegister(aclrtStream stream, aclrtAllocatorDesc allocatorDesc);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorRegister(stream: *mut c_void, d: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtAllocatorRegister";
    trace_args!(stream, d);
    guard(API, || {
        if stream.is_null() {
            return Err(AclError::invalid(format!("{API}: stream is NULL")));
        }
        let h = desc(API, d)?;
        runtime::runtime(API)?.stream(API, addr(stream))?;
        allocator::register(API, addr(stream), h)
    })
}

/// `aclError aclrtAllocatorGetByStream(aclrtStream stream, aclrtAllocatorDesc *allocatorDesc,
/// aclrtAllocator *allocator, aclrtAllocatorAllocFunc *allocFunc, aclrtAllocatorFreeFunc *freeFunc,
/// aclrtAllocatorAllocAdviseFunc *allocAdviseFunc, aclrtAllocatorGetAddrFromBlockFunc *getAddrFromBlockFunc);`
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorGetByStream(
    stream: *mut c_void,
    out_desc: *mut *mut c_void,
    out_obj: *mut *mut c_void,
    out_alloc: *mut *mut c_void,
    out_free: *mut *mut c_void,
    out_advise: *mut *mut c_void,
    out_get_addr: *mut *mut c_void,
) -> AclErrorCode {
    const API: &str = "aclrtAllocatorGetByStream";
    trace_args!(stream, out_desc, out_obj, out_alloc, out_free, out_advise, out_get_addr);
    guard(API, || {
        if stream.is_null() {
            return Err(AclError::invalid(format!("{API}: stream is NULL")));
        }
        let outs = [
            out_ptr(API, "allocatorDesc", out_desc)?,
            out_ptr(API, "allocator", out_obj)?,
            out_ptr(API, "allocFunc", out_alloc)?,
            out_ptr(API, "freeFunc", out_free)?,
            out_ptr(API, "allocAdviseFunc", out_advise)?,
            out_ptr(API, "getAddrFromBlockFunc", out_get_addr)?,
        ];
        // A stream that is not live (destroyed or never made) is a bad handle, as everywhere.
        runtime::runtime(API)?.stream(API, addr(stream))?;
        let (h, d) = allocator::get_by_stream(API, addr(stream))?;
        // CAST: the descriptor handle number, as it was handed out.
        let values = [h as usize, d.allocator, d.alloc, d.free, d.alloc_advise, d.get_addr];
        for (o, v) in outs.into_iter().zip(values) {
            put(o, as_ptr(v));
        }
        Ok(())
    })
}

/// `aclError aclrtAllocatorUnregister(aclrtStream stream);` — unknown streams succeed.
#[no_mangle]
pub unsafe extern "C" fn aclrtAllocatorUnregister(stream: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtAllocatorUnregister";
    trace_args!(stream);
    guard(API, || {
        if stream.is_null() {
            return Err(AclError::invalid(format!("{API}: stream is NULL")));
        }
        allocator::unregister(addr(stream));
        Ok(())
    })
}
