//! C exports of the memory API: device and pinned-host allocation, synchronous copy and set,
//! memory queries.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::{addr, guard, out_ptr, put, size, AclErrorCode};
use crate::error::{AclError, Result};
use crate::memory::{CfgAttr, DstBytes, Loc, MallocApi, SrcBytes};
use crate::runtime;

/// `aclrtMallocAttribute`: a type and an 8-byte union.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMallocAttribute {
    /// `aclrtMallocAttrType`.
    pub attr: i32,
    /// `aclrtMallocAttrValue` (a union of `uint16_t`, `uint32_t`, `uint32_t`, `uint8_t[8]`).
    pub value: [u8; 8],
}

/// `aclrtMallocConfig`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMallocConfig {
    /// Array of `num_attrs` attributes.
    pub attrs: *mut AclrtMallocAttribute,
    /// Its length.
    pub num_attrs: usize,
}

/// `aclrtMemUsageInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMemUsageInfo {
    /// Component name, NUL-terminated.
    pub name: [u8; 32],
    /// Current bytes.
    pub cur_mem_size: u64,
    /// Peak bytes.
    pub mem_peak_size: u64,
    /// Reserved.
    pub reserved: [usize; 8],
}

/// `aclrtPtrAttributes`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtPtrAttributes {
    /// `location.id`.
    pub location_id: u32,
    /// `location.type` (`aclrtMemLocationType`).
    pub location_type: u32,
    /// Page size in bytes.
    pub page_size: u32,
    /// Reserved, zero.
    pub rsv: [u32; 4],
}

const _: () = assert!(std::mem::size_of::<AclrtMallocAttribute>() == 12);
const _: () = assert!(std::mem::size_of::<AclrtMallocConfig>() == 16);
const _: () = assert!(std::mem::size_of::<AclrtMemUsageInfo>() == 112);
const _: () = assert!(std::mem::size_of::<AclrtPtrAttributes>() == 28);

/// The most attributes one configuration may carry (there are four attribute types).
const MAX_CFG_ATTRS: usize = 64;

/// Reads an optional `aclrtMallocConfig`.
fn read_cfg(api: &str, cfg: *const AclrtMallocConfig) -> Result<Vec<CfgAttr>> {
    if cfg.is_null() {
        return Ok(Vec::new());
    }
    if !cfg.is_aligned() {
        return Err(AclError::invalid(format!("{api}: cfg {cfg:p} is not aligned")));
    }
    // SAFETY: non-null and aligned (checked); the caller passes a readable aclrtMallocConfig
    // per the API's contract.
    let c = unsafe { cfg.read() };
    if c.num_attrs == 0 {
        return Ok(Vec::new());
    }
    if c.attrs.is_null() {
        return Err(AclError::invalid(format!(
            "{api}: cfg->numAttrs is {} but cfg->attrs is NULL",
            c.num_attrs
        )));
    }
    if c.num_attrs > MAX_CFG_ATTRS {
        return Err(AclError::invalid(format!(
            "{api}: cfg->numAttrs {} is more than {MAX_CFG_ATTRS}",
            c.num_attrs
        )));
    }
    if !c.attrs.is_aligned() {
        return Err(AclError::invalid(format!("{api}: cfg->attrs {:p} is not aligned", c.attrs)));
    }
    // SAFETY: non-null, aligned, at most MAX_CFG_ATTRS entries; the caller guarantees
    // `numAttrs` readable entries per the API's contract.
    let attrs = unsafe { std::slice::from_raw_parts(c.attrs, c.num_attrs) };
    Ok(attrs.iter().map(|a| CfgAttr { kind: a.attr, value: a.value }).collect())
}

fn malloc_export(
    api: &'static str,
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: u32,
    which: MallocApi,
    cfg: *const AclrtMallocConfig,
) -> AclErrorCode {
    trace_args!(dev_ptr, size, policy, cfg);
    guard(api, || {
        let out = out_ptr(api, "devPtr", dev_ptr)?;
        let attrs = read_cfg(api, cfg)?;
        let rt = runtime::runtime(api)?;
        let p = rt.malloc(api, size as u64, policy, which, &attrs)?;
        // CAST: device addresses lie in the host's address space on this backend.
        put(out, p as usize as *mut c_void);
        Ok(())
    })
}

/// `aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMalloc(dev_ptr: *mut *mut c_void, size: usize, policy: u32) -> AclErrorCode {
    malloc_export("aclrtMalloc", dev_ptr, size, policy, MallocApi::Malloc, std::ptr::null())
}

/// `aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocAlign32(
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: u32,
) -> AclErrorCode {
    malloc_export("aclrtMallocAlign32", dev_ptr, size, policy, MallocApi::Align32, std::ptr::null())
}

/// `aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocCached(
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: u32,
) -> AclErrorCode {
    malloc_export("aclrtMallocCached", dev_ptr, size, policy, MallocApi::Cached, std::ptr::null())
}

/// `aclError aclrtMallocWithCfg(void **devPtr, size_t size, aclrtMemMallocPolicy policy, aclrtMallocConfig *cfg);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocWithCfg(
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: u32,
    cfg: *const AclrtMallocConfig,
) -> AclErrorCode {
    malloc_export("aclrtMallocWithCfg", dev_ptr, size, policy, MallocApi::WithCfg, cfg)
}

/// `aclError aclrtMallocForTaskScheduler(void **devPtr, size_t size, aclrtMemMallocPolicy policy, aclrtMallocConfig *cfg);`
///
/// On the software NPU the task scheduler reaches all device memory, so this is
/// `aclrtMallocWithCfg`.
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocForTaskScheduler(
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: u32,
    cfg: *const AclrtMallocConfig,
) -> AclErrorCode {
    malloc_export("aclrtMallocForTaskScheduler", dev_ptr, size, policy, MallocApi::WithCfg, cfg)
}

/// `aclError aclrtMallocHostWithCfg(void **ptr, uint64_t size, aclrtMallocConfig *cfg);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocHostWithCfg(
    host_ptr: *mut *mut c_void,
    size: u64,
    cfg: *const AclrtMallocConfig,
) -> AclErrorCode {
    const API: &str = "aclrtMallocHostWithCfg";
    trace_args!(host_ptr, size, cfg);
    guard(API, || {
        let out = out_ptr(API, "ptr", host_ptr)?;
        let attrs = read_cfg(API, cfg)?;
        let p = runtime::runtime(API)?.malloc_host_cfg(API, size, &attrs)?;
        // CAST: pinned memory lies in the host's address space.
        put(out, p as usize as *mut c_void);
        Ok(())
    })
}

/// `aclError aclrtGetMemUsageInfo(int32_t deviceId, aclrtMemUsageInfo *memUsageInfo, size_t inputNum, size_t *outputNum);`
#[no_mangle]
pub unsafe extern "C" fn aclrtGetMemUsageInfo(
    device_id: i32,
    info: *mut AclrtMemUsageInfo,
    input_num: usize,
    output_num: *mut usize,
) -> AclErrorCode {
    const API: &str = "aclrtGetMemUsageInfo";
    trace_args!(device_id, info, input_num, output_num);
    guard(API, || {
        let array = out_ptr(API, "memUsageInfo", info)?;
        let count = out_ptr(API, "outputNum", output_num)?;
        if input_num == 0 {
            return Err(AclError::invalid(format!("{API}: inputNum must be greater than 0")));
        }
        let entries = runtime::runtime(API)?.mem_usage(API, device_id)?;
        let n = entries.len().min(input_num);
        for (i, (name, cur, peak)) in entries.into_iter().take(n).enumerate() {
            let mut e =
                AclrtMemUsageInfo { name: [0; 32], cur_mem_size: cur, mem_peak_size: peak, reserved: [0; 8] };
            let bytes = name.as_bytes();
            let len = bytes.len().min(31);
            e.name[..len].copy_from_slice(&bytes[..len]);
            // SAFETY: `array` is non-null and aligned (checked) and, per the API's contract,
            // has room for `inputNum` entries; `i < n <= inputNum`.
            put(unsafe { array.add(i) }, e);
        }
        put(count, n);
        Ok(())
    })
}

/// `aclError aclrtCheckMemType(void **addrList, uint32_t size, uint32_t memType, uint32_t *checkResult, uint32_t reserve);`
#[no_mangle]
pub unsafe extern "C" fn aclrtCheckMemType(
    addr_list: *mut *mut c_void,
    size: u32,
    mem_type: u32,
    check_result: *mut u32,
    reserve: u32,
) -> AclErrorCode {
    const API: &str = "aclrtCheckMemType";
    trace_args!(addr_list, size, mem_type, check_result, reserve);
    guard(API, || {
        let out = out_ptr(API, "checkResult", check_result)?;
        let list = out_ptr(API, "addrList", addr_list)?;
        // SAFETY: non-null and aligned (checked); the caller passes `size` readable pointers
        // per the API's contract (`size` is a u32, so the slice is bounded).
        let addrs = unsafe { std::slice::from_raw_parts(list.cast_const(), size as usize) };
        let addrs: Vec<u64> = addrs.iter().map(|&p| addr(p)).collect();
        let ok = runtime::runtime(API)?.check_mem_type(API, &addrs, mem_type, reserve)?;
        put(out, u32::from(ok));
        Ok(())
    })
}

/// `aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes);`
#[no_mangle]
pub unsafe extern "C" fn aclrtPointerGetAttributes(
    ptr: *const c_void,
    attributes: *mut AclrtPtrAttributes,
) -> AclErrorCode {
    const API: &str = "aclrtPointerGetAttributes";
    trace_args!(ptr, attributes);
    guard(API, || {
        let out = out_ptr(API, "attributes", attributes)?;
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        let (ty, id, page) = runtime::runtime(API)?.pointer_attributes(API, addr(ptr))?;
        put(out, AclrtPtrAttributes { location_id: id, location_type: ty, page_size: page, rsv: [0; 4] });
        Ok(())
    })
}

/// `aclError aclrtMemGetAddressRange(void *ptr, void **pbase, size_t *psize);` — either output
/// may be NULL (not both).
#[no_mangle]
pub unsafe extern "C" fn aclrtMemGetAddressRange(
    ptr: *mut c_void,
    pbase: *mut *mut c_void,
    psize: *mut usize,
) -> AclErrorCode {
    const API: &str = "aclrtMemGetAddressRange";
    trace_args!(ptr, pbase, psize);
    guard(API, || {
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        if pbase.is_null() && psize.is_null() {
            return Err(AclError::invalid(format!("{API}: pbase and psize are both NULL")));
        }
        let base_out = if pbase.is_null() { None } else { Some(out_ptr(API, "pbase", pbase)?) };
        let size_out = if psize.is_null() { None } else { Some(out_ptr(API, "psize", psize)?) };
        let (base, len) = runtime::runtime(API)?.address_range(API, addr(ptr))?;
        if let Some(b) = base_out {
            // CAST: an address of this process.
            put(b, base as usize as *mut c_void);
        }
        if let Some(s) = size_out {
            // CAST: allocation sizes fit in usize on 64-bit hosts.
            put(s, len as usize);
        }
        Ok(())
    })
}

/// `aclError aclrtMemFlush(void *devPtr, size_t size);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMemFlush(dev_ptr: *mut c_void, size: usize) -> AclErrorCode {
    const API: &str = "aclrtMemFlush";
    trace_args!(dev_ptr, size);
    guard(API, || runtime::runtime(API)?.cache_op(API, addr(dev_ptr), size as u64))
}

/// `aclError aclrtMemInvalidate(void *devPtr, size_t size);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMemInvalidate(dev_ptr: *mut c_void, size: usize) -> AclErrorCode {
    const API: &str = "aclrtMemInvalidate";
    trace_args!(dev_ptr, size);
    guard(API, || runtime::runtime(API)?.cache_op(API, addr(dev_ptr), size as u64))
}

/// `aclError aclrtFree(void *devPtr);`
#[no_mangle]
pub unsafe extern "C" fn aclrtFree(dev_ptr: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtFree";
    trace_args!(dev_ptr);
    guard(API, || {
        if dev_ptr.is_null() {
            return Err(AclError::invalid("aclrtFree: devPtr is NULL"));
        }
        runtime::runtime(API)?.free(API, addr(dev_ptr))
    })
}

/// `aclError aclrtFreeWithDevSync(void *devPtr);` — waits for the device's tasks, then frees.
#[no_mangle]
pub unsafe extern "C" fn aclrtFreeWithDevSync(dev_ptr: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtFreeWithDevSync";
    trace_args!(dev_ptr);
    guard(API, || {
        if dev_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: devPtr is NULL")));
        }
        runtime::runtime(API)?.free_with_dev_sync(API, addr(dev_ptr))
    })
}

/// `aclError aclrtFreeHostWithDevSync(void *hostPtr);` — waits for the devices' tasks, then
/// frees.
#[no_mangle]
pub unsafe extern "C" fn aclrtFreeHostWithDevSync(host_ptr: *mut c_void) -> AclErrorCode {
    const API: &str = "aclrtFreeHostWithDevSync";
    trace_args!(host_ptr);
    guard(API, || {
        if host_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: hostPtr is NULL")));
        }
        runtime::runtime(API)?.free_host_with_dev_sync(API, addr(host_ptr))
    })
}

/// `aclError aclrtMallocHost(void **hostPtr, size_t size);`
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocHost(host_ptr: *mut *mut c_void, size: usize) -> AclErrorCode {
    const API: &str = "aclrtMallocHost";
    trace_args!(host_ptr, size);
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
    trace_args!(host_ptr);
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
    trace_args!(dst, dest_max, src, count, kind);
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
    trace_args!(dev_ptr, max_count, value, count);
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
    trace_args!(attr, free, total);
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
