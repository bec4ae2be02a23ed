//! C exports of the stream-ordered pools (`acl/acl_rt_memory_soma.h`).
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::{addr, put};
use crate::error::AclError;
use crate::state::pool::{attr, AttrValue, PoolProps};

/// `aclrtMemPoolProps`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMemPoolProps {
    /// `allocType`.
    pub alloc_type: u32,
    /// `handleType`.
    pub handle_type: u32,
    /// `location.id`.
    pub location_id: u32,
    /// `location.type`.
    pub location_type: u32,
    /// `maxSize`.
    pub max_size: usize,
    /// `reserved`, all zero.
    pub reserved: [u8; 32],
}

const _: () = assert!(std::mem::size_of::<AclrtMemPoolProps>() == 56);
const _: () = assert!(std::mem::offset_of!(AclrtMemPoolProps, max_size) == 16);

fn pool_handle(api: &str, pool: *mut c_void) -> crate::Result<u64> {
    if pool.is_null() {
        return Err(AclError::invalid(format!("{api}: memPool is NULL")));
    }
    Ok(addr(pool))
}

export! {
    /// `aclError aclrtMemPoolCreate(aclrtMemPool *memPool, const aclrtMemPoolProps *poolProps);`
    pub unsafe fn aclrtMemPoolCreate(
        pool: *mut *mut c_void,
        props: *const AclrtMemPoolProps,
    ) -> AclErrorCode |cx| {
        let out = cx.out("memPool", pool)?;
        let p = cx.input("poolProps", props)?;
        // SAFETY: non-null and aligned (checked); the caller passes a readable
        // aclrtMemPoolProps per the API's contract.
        let p = unsafe { p.read() };
        let props = PoolProps {
            alloc_type: p.alloc_type,
            handle_type: p.handle_type,
            location_id: p.location_id,
            location_type: p.location_type,
            max_size: p.max_size as u64,
            reserved_zero: p.reserved.iter().all(|&b| b == 0),
        };
        let h = cx.rt()?.pool_create(API, &props)?;
        // CAST: an opaque handle number handed to C as a pointer.
        put(out, h as usize as *mut c_void);
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemPoolDestroy(const aclrtMemPool memPool);`
    pub unsafe fn aclrtMemPoolDestroy(pool: *mut c_void) -> AclErrorCode |cx| {
        let h = pool_handle(API, pool)?;
        cx.rt()?.pool_destroy(API, h)
    }
}

export! {
    /// `aclError aclrtMemPoolSetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void *value);`
    pub unsafe fn aclrtMemPoolSetAttr(pool: *mut c_void, a: u32, value: *mut c_void) -> AclErrorCode |cx| {
        let h = pool_handle(API, pool)?;
        if !(attr::REUSE_FOLLOW_EVENT_DEPENDENCIES..=attr::USED_MEM_HIGH).contains(&a) {
            return Err(AclError::invalid(format!("{API}: attr {a:#x} is not an aclrtMemPoolAttr (1..=8)")));
        }
        let v = if attr::is_u32(a) {
            let p = cx.input("value", value.cast::<u32>())?;
            // SAFETY: non-null and aligned for u32 (checked); the attribute's documented type.
            AttrValue::U32(unsafe { p.read() })
        } else {
            let p = cx.input("value", value.cast::<u64>())?;
            // SAFETY: non-null and aligned for u64 (checked); the attribute's documented type.
            AttrValue::U64(unsafe { p.read() })
        };
        cx.rt()?.pool_set_attr(API, h, a, v)
    }
}

export! {
    /// `aclError aclrtMemPoolGetAttr(aclrtMemPool memPool, aclrtMemPoolAttr attr, void *value);`
    pub unsafe fn aclrtMemPoolGetAttr(pool: *mut c_void, a: u32, value: *mut c_void) -> AclErrorCode |cx| {
        let h = pool_handle(API, pool)?;
        if !(attr::REUSE_FOLLOW_EVENT_DEPENDENCIES..=attr::USED_MEM_HIGH).contains(&a) {
            return Err(AclError::invalid(format!("{API}: attr {a:#x} is not an aclrtMemPoolAttr (1..=8)")));
        }
        // Check the output before doing anything.
        let (p32, p64) = if attr::is_u32(a) {
            (Some(cx.out("value", value.cast::<u32>())?), None)
        } else {
            (None, Some(cx.out("value", value.cast::<u64>())?))
        };
        match (cx.rt()?.pool_get_attr(API, h, a)?, p32, p64) {
            (AttrValue::U32(v), Some(p), _) => put(p, v),
            (AttrValue::U64(v), _, Some(p)) => put(p, v),
            _ => {
                return Err(AclError::new(
                    crate::codes::ACL_ERROR_INTERNAL_ERROR,
                    format!("{API}: value type mismatch"),
                ))
            }
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemPoolMallocAsync(void **ptr, size_t size, aclrtMemPool memPool, aclrtStream stream);`
    pub unsafe fn aclrtMemPoolMallocAsync(
        ptr: *mut *mut c_void,
        size: usize,
        pool: *mut c_void,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("ptr", ptr)?;
        let h = pool_handle(API, pool)?;
        if let Some(p) = cx.rt()?.pool_malloc_async(API, size as u64, h, addr(stream))? {
            // CAST: device addresses lie in the host's address space on this backend.
            put(out, p as usize as *mut c_void);
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemPoolFreeAsync(void *ptr, aclrtStream stream);`
    pub unsafe fn aclrtMemPoolFreeAsync(ptr: *mut c_void, stream: *mut c_void) -> AclErrorCode |cx| {
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        cx.rt()?.pool_free_async(API, addr(ptr), addr(stream))
    }
}

export! {
    /// `aclError aclrtMemPoolTrimTo(aclrtMemPool memPool, size_t minBytesToKeep);`
    pub unsafe fn aclrtMemPoolTrimTo(pool: *mut c_void, min_bytes_to_keep: usize) -> AclErrorCode |cx| {
        let h = pool_handle(API, pool)?;
        cx.rt()?.pool_trim_to(API, h, min_bytes_to_keep as u64)
    }
}
