//! C exports of the memory API: device and pinned-host allocation, synchronous copy and set,
//! memory queries.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::{addr, put, Call};
use crate::error::{AclError, Result};
use crate::state::memory::{CfgAttr, DstBytes, Loc, MallocApi, SrcBytes};

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

/// The body of the `aclrtMalloc*` exports. The API trace shows `cfg` (NULL for the calls that
/// take none) after the export's own arguments.
fn malloc_export(
    cx: &Call,
    api: &'static str,
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: u32,
    which: MallocApi,
    cfg: *const AclrtMallocConfig,
) -> Result<()> {
    trace_args!(dev_ptr, size, policy, cfg);
    let out = cx.out("devPtr", dev_ptr)?;
    let attrs = read_cfg(api, cfg)?;
    let rt = cx.rt()?;
    let p = rt.malloc(api, size as u64, policy, which, &attrs)?;
    // CAST: device addresses lie in the host's address space on this backend.
    put(out, p as usize as *mut c_void);
    Ok(())
}

export! {
    /// `aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
    pub unsafe fn aclrtMalloc(dev_ptr: *mut *mut c_void, size: usize, policy: u32) -> AclErrorCode |cx| {
        malloc_export(cx, API, dev_ptr, size, policy, MallocApi::Malloc, std::ptr::null())
    }
}

export! {
    /// `aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
    pub unsafe fn aclrtMallocAlign32(
        dev_ptr: *mut *mut c_void,
        size: usize,
        policy: u32,
    ) -> AclErrorCode |cx| {
        malloc_export(cx, API, dev_ptr, size, policy, MallocApi::Align32, std::ptr::null())
    }
}

export! {
    /// `aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy);`
    pub unsafe fn aclrtMallocCached(
        dev_ptr: *mut *mut c_void,
        size: usize,
        policy: u32,
    ) -> AclErrorCode |cx| {
        malloc_export(cx, API, dev_ptr, size, policy, MallocApi::Cached, std::ptr::null())
    }
}

export! {
    /// `aclError aclrtMallocWithCfg(void **devPtr, size_t size, aclrtMemMallocPolicy policy, aclrtMallocConfig *cfg);`
    pub unsafe fn aclrtMallocWithCfg(
        dev_ptr: *mut *mut c_void,
        size: usize,
        policy: u32,
        cfg: *const AclrtMallocConfig,
    ) -> AclErrorCode |cx| {
        malloc_export(cx, API, dev_ptr, size, policy, MallocApi::WithCfg, cfg)
    }
}

export! {
    /// `aclError aclrtMallocForTaskScheduler(void **devPtr, size_t size, aclrtMemMallocPolicy policy, aclrtMallocConfig *cfg);`
    ///
    /// On the software NPU the task scheduler reaches all device memory, so this is
    /// `aclrtMallocWithCfg`.
    pub unsafe fn aclrtMallocForTaskScheduler(
        dev_ptr: *mut *mut c_void,
        size: usize,
        policy: u32,
        cfg: *const AclrtMallocConfig,
    ) -> AclErrorCode |cx| {
        malloc_export(cx, API, dev_ptr, size, policy, MallocApi::WithCfg, cfg)
    }
}

export! {
    /// `aclError aclrtMallocHostWithCfg(void **ptr, uint64_t size, aclrtMallocConfig *cfg);`
    pub unsafe fn aclrtMallocHostWithCfg(
        host_ptr: *mut *mut c_void,
        size: u64,
        cfg: *const AclrtMallocConfig,
    ) -> AclErrorCode |cx| {
        let out = cx.out("ptr", host_ptr)?;
        let attrs = read_cfg(API, cfg)?;
        let p = cx.rt()?.malloc_host_cfg(API, size, &attrs)?;
        // CAST: pinned memory lies in the host's address space.
        put(out, p as usize as *mut c_void);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetMemUsageInfo(int32_t deviceId, aclrtMemUsageInfo *memUsageInfo, size_t inputNum, size_t *outputNum);`
    pub unsafe fn aclrtGetMemUsageInfo(
        device_id: i32,
        info: *mut AclrtMemUsageInfo,
        input_num: usize,
        output_num: *mut usize,
    ) -> AclErrorCode |cx| {
        let array = cx.out("memUsageInfo", info)?;
        let count = cx.out("outputNum", output_num)?;
        if input_num == 0 {
            return Err(AclError::invalid(format!("{API}: inputNum must be greater than 0")));
        }
        let entries = cx.rt()?.mem_usage(API, device_id)?;
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
    }
}

export! {
    /// `aclError aclrtCheckMemType(void **addrList, uint32_t size, uint32_t memType, uint32_t *checkResult, uint32_t reserve);`
    pub unsafe fn aclrtCheckMemType(
        addr_list: *mut *mut c_void,
        size: u32,
        mem_type: u32,
        check_result: *mut u32,
        reserve: u32,
    ) -> AclErrorCode |cx| {
        let out = cx.out("checkResult", check_result)?;
        let list = cx.input("addrList", addr_list)?;
        // SAFETY: non-null and aligned (checked); the caller passes `size` readable pointers
        // per the API's contract (`size` is a u32, so the slice is bounded).
        let addrs = unsafe { std::slice::from_raw_parts(list, size as usize) };
        let addrs: Vec<u64> = addrs.iter().map(|&p| addr(p)).collect();
        let ok = cx.rt()?.check_mem_type(API, &addrs, mem_type, reserve)?;
        put(out, u32::from(ok));
        Ok(())
    }
}

export! {
    /// `aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes);`
    pub unsafe fn aclrtPointerGetAttributes(
        ptr: *const c_void,
        attributes: *mut AclrtPtrAttributes,
    ) -> AclErrorCode |cx| {
        let out = cx.out("attributes", attributes)?;
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        let (ty, id, page) = cx.rt()?.pointer_attributes(API, addr(ptr))?;
        put(out, AclrtPtrAttributes { location_id: id, location_type: ty, page_size: page, rsv: [0; 4] });
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemGetAddressRange(void *ptr, void **pbase, size_t *psize);` — either output
    /// may be NULL (not both).
    pub unsafe fn aclrtMemGetAddressRange(
        ptr: *mut c_void,
        pbase: *mut *mut c_void,
        psize: *mut usize,
    ) -> AclErrorCode |cx| {
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        if pbase.is_null() && psize.is_null() {
            return Err(AclError::invalid(format!("{API}: pbase and psize are both NULL")));
        }
        let base_out = if pbase.is_null() { None } else { Some(cx.out("pbase", pbase)?) };
        let size_out = if psize.is_null() { None } else { Some(cx.out("psize", psize)?) };
        let (base, len) = cx.rt()?.address_range(API, addr(ptr))?;
        if let Some(b) = base_out {
            // CAST: an address of this process.
            put(b, base as usize as *mut c_void);
        }
        if let Some(s) = size_out {
            // CAST: allocation sizes fit in usize on 64-bit hosts.
            put(s, len as usize);
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemFlush(void *devPtr, size_t size);`
    pub unsafe fn aclrtMemFlush(dev_ptr: *mut c_void, size: usize) -> AclErrorCode |cx| {
        cx.rt()?.cache_op(API, addr(dev_ptr), size as u64)
    }
}

export! {
    /// `aclError aclrtMemInvalidate(void *devPtr, size_t size);`
    pub unsafe fn aclrtMemInvalidate(dev_ptr: *mut c_void, size: usize) -> AclErrorCode |cx| {
        cx.rt()?.cache_op(API, addr(dev_ptr), size as u64)
    }
}

export! {
    /// `aclError aclrtFree(void *devPtr);`
    pub unsafe fn aclrtFree(dev_ptr: *mut c_void) -> AclErrorCode |cx| {
        if dev_ptr.is_null() {
            return Err(AclError::invalid("aclrtFree: devPtr is NULL"));
        }
        cx.rt()?.free(API, addr(dev_ptr))
    }
}

export! {
    /// `aclError aclrtFreeWithDevSync(void *devPtr);` — waits for the device's tasks, then frees.
    pub unsafe fn aclrtFreeWithDevSync(dev_ptr: *mut c_void) -> AclErrorCode |cx| {
        if dev_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: devPtr is NULL")));
        }
        cx.rt()?.free_with_dev_sync(API, addr(dev_ptr))
    }
}

export! {
    /// `aclError aclrtFreeHostWithDevSync(void *hostPtr);` — waits for the devices' tasks, then
    /// frees.
    pub unsafe fn aclrtFreeHostWithDevSync(host_ptr: *mut c_void) -> AclErrorCode |cx| {
        if host_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: hostPtr is NULL")));
        }
        cx.rt()?.free_host_with_dev_sync(API, addr(host_ptr))
    }
}

export! {
    /// `aclError aclrtMallocHost(void **hostPtr, size_t size);`
    pub unsafe fn aclrtMallocHost(host_ptr: *mut *mut c_void, size: usize) -> AclErrorCode |cx| {
        let out = cx.out("hostPtr", host_ptr)?;
        let p = cx.rt()?.malloc_host(API, size as u64)?;
        // CAST: pinned memory lies in the host's address space.
        put(out, p as usize as *mut c_void);
        Ok(())
    }
}

export! {
    /// `aclError aclrtFreeHost(void *hostPtr);`
    pub unsafe fn aclrtFreeHost(host_ptr: *mut c_void) -> AclErrorCode |cx| {
        if host_ptr.is_null() {
            return Err(AclError::invalid("aclrtFreeHost: hostPtr is NULL"));
        }
        cx.rt()?.free_host(API, addr(host_ptr))
    }
}

/// The body of `aclrtMemcpy` (and of the symbol copies).
///
/// # Safety
///
/// The C contract of `aclrtMemcpy`: `dst` and `src` are valid for `count` bytes.
pub(crate) unsafe fn memcpy_sync(
    cx: &Call,
    api: &str,
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: u32,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let rt = cx.rt()?;
    let n = cx.size("count", count)?;
    let plan = rt.plan_memcpy(api, addr(dst), dest_max as u64, addr(src), n, kind)?;
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
            rt.copy(api, DstBytes::Host(out), SrcBytes::Addr(s), n)
        }
        (_, Loc::Unregistered) => {
            // SAFETY: `src` is non-null, points to `count` readable bytes by the API's
            // contract, lies outside every runtime window and `count <= isize::MAX`.
            let input = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), count) };
            rt.copy(api, DstBytes::Addr(d), SrcBytes::Host(input), n)
        }
        _ => rt.copy(api, DstBytes::Addr(d), SrcBytes::Addr(s), n),
    }
}

export! {
    /// `aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);`
    pub unsafe fn aclrtMemcpy(
        dst: *mut c_void,
        dest_max: usize,
        src: *const c_void,
        count: usize,
        kind: u32,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe { memcpy_sync(cx, API, dst, dest_max, src, count, kind) }
    }
}

export! {
    /// `aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);` — sets
    /// the low byte of `value`.
    pub unsafe fn aclrtMemset(
        dev_ptr: *mut c_void,
        max_count: usize,
        value: i32,
        count: usize,
    ) -> AclErrorCode |cx| {
        if count == 0 {
            return Ok(());
        }
        let rt = cx.rt()?;
        let n = cx.size("count", count)?;
        let plan = rt.plan_memset(API, addr(dev_ptr), max_count as u64, n)?;
        if plan.dst == Loc::Unregistered {
            // SAFETY: `devPtr` is non-null (checked by the plan), ordinary host memory outside
            // every runtime window (checked), writable for `count <= maxCount` bytes by the
            // API's contract, and `count <= isize::MAX` (checked).
            // CAST: the documented behaviour keeps the low byte.
            unsafe { std::ptr::write_bytes(dev_ptr.cast::<u8>(), value as u8, count) };
            return Ok(());
        }
        // CAST: the documented behaviour keeps the low byte.
        rt.memset(API, plan, addr(dev_ptr), value as u8)
    }
}

export! {
    /// `aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);`
    pub unsafe fn aclrtGetMemInfo(attr: u32, free: *mut usize, total: *mut usize) -> AclErrorCode |cx| {
        let f = cx.out("free", free)?;
        let t = cx.out("total", total)?;
        let (fv, tv) = cx.rt()?.mem_info(API, attr)?;
        // CAST: byte counts of one device fit in usize on 64-bit hosts.
        put(f, fv as usize);
        put(t, tv as usize);
        Ok(())
    }
}
