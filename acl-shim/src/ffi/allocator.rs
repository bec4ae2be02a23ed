//! C exports of the custom allocator descriptors (`acl/acl_rt_allocator.h`).
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::{addr, put};
use crate::allocator::{self, Field};
use crate::error::AclError;

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

export! {
    /// `aclrtAllocatorDesc aclrtAllocatorCreateDesc();` — NULL on failure.
    pub fn aclrtAllocatorCreateDesc() -> *mut c_void = std::ptr::null_mut(), |cx| {
        // CAST: an opaque handle number handed to C as a pointer.
        Ok(allocator::create_desc() as usize as *mut c_void)
    }
}

export! {
    /// `aclError aclrtAllocatorDestroyDesc(aclrtAllocatorDesc allocatorDesc);`
    pub unsafe fn aclrtAllocatorDestroyDesc(d: *mut c_void) -> AclErrorCode |cx| {
        allocator::destroy_desc(API, desc(API, d)?)
    }
}

/// Sets one field of a descriptor (the `aclrtAllocatorSet*ToDesc` calls). The API trace shows
/// the new value as `value`, whatever the export calls it.
fn set(api: &'static str, d: *mut c_void, field: Field, value: usize) -> crate::Result<()> {
    trace_args!(d, value);
    allocator::set(api, desc(api, d)?, field, value)
}

export! {
    /// `aclError aclrtAllocatorSetObjToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocator allocator);`
    pub unsafe fn aclrtAllocatorSetObjToDesc(d: *mut c_void, obj: *mut c_void) -> AclErrorCode |cx| {
        set(API, d, Field::Allocator, obj as usize)
    }
}

export! {
    /// `aclError aclrtAllocatorSetAllocFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocFunc func);`
    pub unsafe fn aclrtAllocatorSetAllocFuncToDesc(d: *mut c_void, f: *mut c_void) -> AclErrorCode |cx| {
        set(API, d, Field::Alloc, f as usize)
    }
}

export! {
    /// `aclError aclrtAllocatorSetFreeFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorFreeFunc func);`
    pub unsafe fn aclrtAllocatorSetFreeFuncToDesc(d: *mut c_void, f: *mut c_void) -> AclErrorCode |cx| {
        set(API, d, Field::Free, f as usize)
    }
}

export! {
    /// `aclError aclrtAllocatorSetAllocAdviseFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocAdviseFunc func);`
    pub unsafe fn aclrtAllocatorSetAllocAdviseFuncToDesc(
        d: *mut c_void,
        f: *mut c_void,
    ) -> AclErrorCode |cx| {
        set(API, d, Field::AllocAdvise, f as usize)
    }
}

export! {
    /// `aclError aclrtAllocatorSetGetAddrFromBlockFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorGetAddrFromBlockFunc func);`
    pub unsafe fn aclrtAllocatorSetGetAddrFromBlockFuncToDesc(
        d: *mut c_void,
        f: *mut c_void,
    ) -> AclErrorCode |cx| {
        set(API, d, Field::GetAddr, f as usize)
    }
}

export! {
    /// `aclError aclrtAllocatorRegister(aclrtStream stream, aclrtAllocatorDesc allocatorDesc);`
    pub unsafe fn aclrtAllocatorRegister(stream: *mut c_void, d: *mut c_void) -> AclErrorCode |cx| {
        if stream.is_null() {
            return Err(AclError::invalid(format!("{API}: stream is NULL")));
        }
        let h = desc(API, d)?;
        cx.rt()?.stream(API, addr(stream))?;
        allocator::register(API, addr(stream), h)
    }
}

export! {
    /// `aclError aclrtAllocatorGetByStream(aclrtStream stream, aclrtAllocatorDesc *allocatorDesc,
    /// aclrtAllocator *allocator, aclrtAllocatorAllocFunc *allocFunc, aclrtAllocatorFreeFunc *freeFunc,
    /// aclrtAllocatorAllocAdviseFunc *allocAdviseFunc, aclrtAllocatorGetAddrFromBlockFunc *getAddrFromBlockFunc);`
    pub unsafe fn aclrtAllocatorGetByStream(
        stream: *mut c_void,
        out_desc: *mut *mut c_void,
        out_obj: *mut *mut c_void,
        out_alloc: *mut *mut c_void,
        out_free: *mut *mut c_void,
        out_advise: *mut *mut c_void,
        out_get_addr: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        if stream.is_null() {
            return Err(AclError::invalid(format!("{API}: stream is NULL")));
        }
        let outs = [
            cx.out("allocatorDesc", out_desc)?,
            cx.out("allocator", out_obj)?,
            cx.out("allocFunc", out_alloc)?,
            cx.out("freeFunc", out_free)?,
            cx.out("allocAdviseFunc", out_advise)?,
            cx.out("getAddrFromBlockFunc", out_get_addr)?,
        ];
        // A stream that is not live (destroyed or never made) is a bad handle, as everywhere.
        cx.rt()?.stream(API, addr(stream))?;
        let (h, d) = allocator::get_by_stream(API, addr(stream))?;
        // CAST: the descriptor handle number, as it was handed out.
        let values = [h as usize, d.allocator, d.alloc, d.free, d.alloc_advise, d.get_addr];
        for (o, v) in outs.into_iter().zip(values) {
            put(o, as_ptr(v));
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtAllocatorUnregister(aclrtStream stream);` — unknown streams succeed.
    pub unsafe fn aclrtAllocatorUnregister(stream: *mut c_void) -> AclErrorCode |cx| {
        if stream.is_null() {
            return Err(AclError::invalid(format!("{API}: stream is NULL")));
        }
        allocator::unregister(addr(stream));
        Ok(())
    }
}
