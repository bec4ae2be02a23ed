//! C exports of the rest of the memory module (`acl/acl_rt_memory_ext.h`): managed memory,
//! descriptor, offset and conditional copies, device symbols, cache maintenance,
//! `aclrtMemP2PMap`, `aclFinalizeReference`, and the device and context queries of §11
//! (`aclrtQueryDeviceStatus`, `aclrtGetDeviceUtilizationRate`,
//! `aclrtCtxGetCurrentDefaultStream`). The runtime's side is [`crate::api::memory_ext`].
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use super::{addr, put, Call};
use crate::api::memory_ext::{RangeAttr, ACL_ERROR_RT_INVALID_SYMBOL};
use crate::error::{AclError, Result};
use crate::state::managed::ManagedLoc;

/// `aclrtMemManagedLocation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMemManagedLocation {
    /// `aclrtMemManagedLocationType`.
    pub ty: u32,
    /// Device or NUMA id.
    pub id: i32,
}

impl crate::log::TraceArg for AclrtMemManagedLocation {
    fn trace(&self, out: &mut String) {
        out.push_str(&format!("{{type {}, id {}}}", self.ty, self.id));
    }
}

/// `aclrtBarrierCmoInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtBarrierCmoInfo {
    /// `aclrtCmoType`.
    pub cmo_type: u32,
    /// The barrier id.
    pub barrier_id: u32,
}

/// `aclrtBarrierTaskInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtBarrierTaskInfo {
    /// Entries of `cmo_info` in use.
    pub barrier_num: usize,
    /// The barriers.
    pub cmo_info: [AclrtBarrierCmoInfo; 6],
}

/// `aclrtUtilizationInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtUtilizationInfo {
    /// Cube utilisation in percent (-1: unknown).
    pub cube: i32,
    /// Vector utilisation in percent (-1: unknown).
    pub vector: i32,
    /// AI CPU utilisation in percent (-1: unknown).
    pub aicpu: i32,
    /// Memory utilisation (always -1).
    pub memory: i32,
    /// Reserved, must be NULL.
    pub extend: *mut c_void,
}

const _: () = assert!(std::mem::size_of::<AclrtMemManagedLocation>() == 8);
const _: () = assert!(std::mem::size_of::<AclrtBarrierTaskInfo>() == 56);
const _: () = assert!(std::mem::size_of::<AclrtUtilizationInfo>() == 24);

/// The most ranges one `aclrtMemManagedPrefetchBatchAsync` takes.
const MAX_PREFETCH_BATCH: usize = 4096;

fn loc_of(l: ManagedLoc) -> AclrtMemManagedLocation {
    AclrtMemManagedLocation { ty: l.ty, id: l.id }
}

export! {
    /// `aclError aclFinalizeReference(uint64_t *refCount);`
    pub unsafe fn aclFinalizeReference(ref_count: *mut u64) -> AclErrorCode |cx| {
        let out = cx.out("refCount", ref_count)?;
        let left = crate::api::device::finalize_reference()?;
        put(out, left);
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemAllocManaged(void **ptr, uint64_t size, uint32_t flag);`
    pub unsafe fn aclrtMemAllocManaged(ptr: *mut *mut c_void, size: u64, flag: u32) -> AclErrorCode |cx| {
        let out = cx.out("ptr", ptr)?;
        let p = cx.rt()?.alloc_managed(API, size, flag)?;
        // CAST: device addresses lie in the host's address space on this backend.
        put(out, p as usize as *mut c_void);
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemManagedAdvise(const void *const ptr, uint64_t size, aclrtMemManagedAdviseType advise, aclrtMemManagedLocation location);`
    pub unsafe fn aclrtMemManagedAdvise(
        ptr: *const c_void,
        size: u64,
        advise: u32,
        location: AclrtMemManagedLocation,
    ) -> AclErrorCode |cx| {
        cx.rt()?.managed_advise(API, addr(ptr), size, advise, location.ty, location.id)
    }
}

/// Writes one attribute value into the caller's `data` of `data_size` bytes.
///
/// # Safety
///
/// `data` is writable for `data_size` bytes (the API's contract).
unsafe fn put_attr(api: &str, attr: u32, v: &RangeAttr, data: *mut c_void, data_size: usize) -> Result<()> {
    if data.is_null() {
        return Err(AclError::invalid(format!("{api}: data is NULL")));
    }
    let loc_bytes = std::mem::size_of::<AclrtMemManagedLocation>();
    match v {
        RangeAttr::I32(x) => {
            if data_size != 4 || !data.cast::<i32>().is_aligned() {
                return Err(AclError::invalid(format!(
                    "{api}: attribute {attr} is a 4-byte int32_t; dataSize is {data_size}"
                )));
            }
            // SAFETY: non-null, aligned, 4 writable bytes (checked size, the API's contract).
            unsafe { data.cast::<i32>().write(*x) };
        }
        RangeAttr::Loc(l) => {
            if data_size != loc_bytes || !data.cast::<AclrtMemManagedLocation>().is_aligned() {
                return Err(AclError::invalid(format!(
                    "{api}: attribute {attr} is an aclrtMemManagedLocation ({loc_bytes} bytes); dataSize is {data_size}"
                )));
            }
            // SAFETY: as above, for one location.
            unsafe { data.cast::<AclrtMemManagedLocation>().write(loc_of(*l)) };
        }
        RangeAttr::Locs(list) => {
            if data_size == 0
                || data_size % loc_bytes != 0
                || !data.cast::<AclrtMemManagedLocation>().is_aligned()
            {
                return Err(AclError::invalid(format!(
                    "{api}: attribute {attr} is an array of aclrtMemManagedLocation; dataSize {data_size} is not a non-zero multiple of {loc_bytes}"
                )));
            }
            let n = data_size / loc_bytes;
            let p = data.cast::<AclrtMemManagedLocation>();
            for i in 0..n {
                let l = list.get(i).copied().unwrap_or_default();
                // SAFETY: `i < n` entries fit in the caller's `data_size` bytes; aligned.
                unsafe { p.add(i).write(loc_of(l)) };
            }
        }
    }
    Ok(())
}

export! {
    /// `aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute attribute, const void *ptr, size_t size, void *data, size_t dataSize);`
    pub unsafe fn aclrtMemManagedGetAttr(
        attribute: u32,
        ptr: *const c_void,
        size: usize,
        data: *mut c_void,
        data_size: usize,
    ) -> AclErrorCode |cx| {
        if data.is_null() {
            return Err(AclError::invalid(format!("{API}: data is NULL")));
        }
        let v = cx.rt()?.managed_attr(API, attribute, addr(ptr), size as u64)?;
        // SAFETY: forwarded C contract.
        unsafe { put_attr(API, attribute, &v, data, data_size) }
    }
}

export! {
    /// `aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute *attributes, size_t numAttributes, const void *ptr, size_t size, void **data, size_t *dataSizes);`
    pub unsafe fn aclrtMemManagedGetAttrs(
        attributes: *mut u32,
        num_attributes: usize,
        ptr: *const c_void,
        size: usize,
        data: *mut *mut c_void,
        data_sizes: *mut usize,
    ) -> AclErrorCode |cx| {
        let attrs = cx.input("attributes", attributes.cast_const())?;
        let datas = cx.input("data", data.cast_const())?;
        let sizes = cx.input("dataSizes", data_sizes.cast_const())?;
        if num_attributes == 0 || num_attributes > 8 {
            return Err(AclError::invalid(format!("{API}: numAttributes {num_attributes} must be 1..=8")));
        }
        // SAFETY: non-null and aligned (checked); the caller passes `numAttributes` entries in
        // each array (the API's contract), at most 8.
        let (attrs, datas, sizes) = unsafe {
            (
                std::slice::from_raw_parts(attrs, num_attributes),
                std::slice::from_raw_parts(datas, num_attributes),
                std::slice::from_raw_parts(sizes, num_attributes),
            )
        };
        let rt = cx.rt()?;
        // Every value first, so a bad entry writes nothing.
        let mut values = Vec::with_capacity(num_attributes);
        for (i, &a) in attrs.iter().enumerate() {
            if datas[i].is_null() {
                return Err(AclError::invalid(format!("{API}: data[{i}] is NULL")));
            }
            values.push(rt.managed_attr(API, a, addr(ptr), size as u64)?);
        }
        for (i, v) in values.iter().enumerate() {
            // SAFETY: forwarded C contract: data[i] is writable for dataSizes[i] bytes.
            unsafe { put_attr(API, attrs[i], v, datas[i], sizes[i]) }?;
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemManagedPrefetchAsync(const void *ptr, size_t size, aclrtMemManagedLocation location, uint32_t flags, aclrtStream stream);`
    pub unsafe fn aclrtMemManagedPrefetchAsync(
        ptr: *const c_void,
        size: usize,
        location: AclrtMemManagedLocation,
        flags: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let rt = cx.rt()?;
        let loc = rt.managed_loc(API, "location", location.ty, location.id, false)?;
        rt.managed_prefetch(API, &[(addr(ptr), size as u64, loc)], u64::from(flags), super::stream::handle(stream))
    }
}

export! {
    /// `aclError aclrtMemManagedPrefetchBatchAsync(const void **ptrs, size_t *sizes, size_t count, aclrtMemManagedLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, uint64_t flags, aclrtStream stream);`
    pub unsafe fn aclrtMemManagedPrefetchBatchAsync(
        ptrs: *mut *const c_void,
        sizes: *mut usize,
        count: usize,
        prefetch_locs: *mut AclrtMemManagedLocation,
        prefetch_loc_idxs: *mut usize,
        num_prefetch_locs: usize,
        flags: u64,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let p = cx.input("ptrs", ptrs.cast_const())?;
        let s = cx.input("sizes", sizes.cast_const())?;
        let l = cx.input("prefetchLocs", prefetch_locs.cast_const())?;
        let x = cx.input("prefetchLocIdxs", prefetch_loc_idxs.cast_const())?;
        if count == 0 || count > MAX_PREFETCH_BATCH {
            return Err(AclError::invalid(format!("{API}: count {count} must be 1..={MAX_PREFETCH_BATCH}")));
        }
        if num_prefetch_locs == 0 || num_prefetch_locs > count {
            return Err(AclError::invalid(format!(
                "{API}: numPrefetchLocs {num_prefetch_locs} must be 1..=count ({count})"
            )));
        }
        // SAFETY: non-null and aligned (checked); the caller passes `count` pointers and sizes
        // and `numPrefetchLocs` locations and indexes (the API's contract), bounded above.
        let (p, s, l, x) = unsafe {
            (
                std::slice::from_raw_parts(p, count),
                std::slice::from_raw_parts(s, count),
                std::slice::from_raw_parts(l, num_prefetch_locs),
                std::slice::from_raw_parts(x, num_prefetch_locs),
            )
        };
        if x[0] != 0 || x.windows(2).any(|w| w[0] >= w[1]) || x[num_prefetch_locs - 1] >= count {
            return Err(AclError::invalid(format!(
                "{API}: prefetchLocIdxs must start at 0, increase strictly and stay below count ({count})"
            )));
        }
        let rt = cx.rt()?;
        let mut locs = Vec::with_capacity(num_prefetch_locs);
        for (k, loc) in l.iter().enumerate() {
            locs.push(rt.managed_loc(API, &format!("prefetchLocs[{k}]"), loc.ty, loc.id, false)?);
        }
        let mut ranges = Vec::with_capacity(count);
        for i in 0..count {
            // The location of entry i: the last k with prefetchLocIdxs[k] <= i.
            let k = x.partition_point(|&start| start <= i) - 1;
            ranges.push((addr(p[i]), s[i] as u64, locs[k]));
        }
        rt.managed_prefetch(API, &ranges, flags, super::stream::handle(stream))
    }
}

export! {
    /// `aclError aclrtMemP2PMap(void *devPtr, size_t size, int32_t dstDevId, uint64_t flags);`
    pub unsafe fn aclrtMemP2PMap(dev_ptr: *mut c_void, size: usize, dst_dev_id: i32, flags: u64) -> AclErrorCode |cx| {
        cx.rt()?.p2p_map(API, addr(dev_ptr), size as u64, dst_dev_id, flags)
    }
}

export! {
    /// `aclError aclrtGetMemcpyDescSize(aclrtMemcpyKind kind, size_t *descSize);`
    pub unsafe fn aclrtGetMemcpyDescSize(kind: u32, desc_size: *mut usize) -> AclErrorCode |cx| {
        let out = cx.out("descSize", desc_size)?;
        let n = cx.rt()?.memcpy_desc_size(API, kind)?;
        put(out, n);
        Ok(())
    }
}

export! {
    /// `aclError aclrtSetMemcpyDesc(void *desc, aclrtMemcpyKind kind, void *srcAddr, void *dstAddr, size_t count, void *config);`
    pub unsafe fn aclrtSetMemcpyDesc(
        desc: *mut c_void,
        kind: u32,
        src_addr: *mut c_void,
        dst_addr: *mut c_void,
        count: usize,
        config: *mut c_void,
    ) -> AclErrorCode |cx| {
        if desc.is_null() {
            return Err(AclError::invalid(format!("{API}: desc is NULL")));
        }
        if count > 0 && (src_addr.is_null() || dst_addr.is_null()) {
            return Err(AclError::invalid(format!("{API}: srcAddr or dstAddr is NULL")));
        }
        let n = cx.size("count", count)?;
        cx.rt()?.set_memcpy_desc(API, addr(desc), kind, addr(src_addr), addr(dst_addr), n, !config.is_null())
    }
}

export! {
    /// `aclError aclrtMemcpyAsyncWithDesc(void *desc, aclrtMemcpyKind kind, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyAsyncWithDesc(desc: *mut c_void, kind: u32, stream: *mut c_void) -> AclErrorCode |cx| {
        if desc.is_null() {
            return Err(AclError::invalid(format!("{API}: desc is NULL")));
        }
        cx.rt()?.memcpy_with_desc(API, addr(desc), kind, super::stream::handle(stream))
    }
}

/// Reads the address an offset copy's `void **` argument points at: from device memory
/// through the backend, from host memory directly.
fn read_slot(cx: &Call, api: &str, what: &str, slot: *const *const c_void) -> Result<u64> {
    let slot = cx.input(what, slot)?;
    let a = addr(slot.cast());
    let rt = cx.rt()?;
    if crate::state::memory::locate(a) == crate::state::memory::Loc::Unregistered {
        // SAFETY: non-null and aligned (checked), ordinary host memory holding one pointer
        // (the API's contract).
        return Ok(addr(unsafe { slot.read() }));
    }
    let mut b = [0u8; 8];
    rt.plan_memcpy(api, a, 8, a, 8, crate::state::memory::kind::DEFAULT)?;
    rt.copy(api, crate::state::memory::DstBytes::Host(&mut b), crate::state::memory::SrcBytes::Addr(a), 8)?;
    Ok(u64::from_le_bytes(b))
}

export! {
    /// `aclError aclrtMemcpyAsyncWithOffset(void **dst, size_t destMax, size_t dstDataOffset, const void **src, size_t count, size_t srcDataOffset, aclrtMemcpyKind kind, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyAsyncWithOffset(
        dst: *mut *mut c_void,
        dest_max: usize,
        dst_data_offset: usize,
        src: *mut *const c_void,
        count: usize,
        src_data_offset: usize,
        kind: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let d = read_slot(cx, API, "dst", dst.cast_const().cast())?;
        let s = read_slot(cx, API, "src", src.cast_const())?;
        let n = cx.size("count", count)?;
        cx.rt()?.memcpy_with_offset(
            API,
            d,
            dest_max as u64,
            dst_data_offset as u64,
            s,
            n,
            src_data_offset as u64,
            kind,
            super::stream::handle(stream),
        )
    }
}

export! {
    /// `aclError aclrtMemcpyAsyncWithCondition(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream);`
    /// — deprecated; `aclrtMemcpyAsync`.
    pub unsafe fn aclrtMemcpyAsyncWithCondition(
        dst: *mut c_void,
        dest_max: usize,
        src: *const c_void,
        count: usize,
        kind: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe { super::async_copy::memcpy_async(cx, API, dst, dest_max, src, count, kind, stream) }
    }
}

/// The device address and size of the device variable `symbol` (a data symbol of a binary
/// loaded through `aclrtBinaryLoadFromFile`, by its host address).
fn symbol_of(cx: &Call, api: &str, symbol: *const c_void) -> Result<(u64, u64)> {
    if symbol.is_null() {
        return Err(AclError::invalid(format!("{api}: symbol is NULL")));
    }
    let rt = cx.rt()?;
    let loader = rt.backend().loader(api)?;
    loader.symbol(addr(symbol)).ok_or_else(|| {
        AclError::new(
            ACL_ERROR_RT_INVALID_SYMBOL,
            format!(
                "{api}: {symbol:p} is not the start of a device variable (a data symbol) of a loaded kernel binary"
            ),
        )
    })
}

/// The device address of `count` bytes at `offset` into `symbol`, and the kind checked
/// against the direction (`allowed`).
fn symbol_range(
    cx: &Call,
    api: &str,
    symbol: *const c_void,
    count: usize,
    offset: usize,
    kind: u32,
    allowed: &[u32],
) -> Result<u64> {
    let (base, len) = symbol_of(cx, api, symbol)?;
    if !allowed.contains(&kind) {
        return Err(AclError::invalid(format!(
            "{api}: kind {kind} ({}) is not allowed for this direction",
            crate::state::memory::kind::name(kind)
        )));
    }
    if (offset as u64).checked_add(count as u64).is_none_or(|e| e > len) {
        return Err(AclError::invalid(format!(
            "{api}: offset {offset} + count {count} is past the symbol's {len} bytes"
        )));
    }
    Ok(base + offset as u64)
}

/// Kinds of a copy from a symbol: to the host, to the device, inferred.
const FROM_SYMBOL: [u32; 3] = [2, 3, 4];
/// Kinds of a copy to a symbol: from the host, from the device, inferred.
const TO_SYMBOL: [u32; 3] = [1, 3, 4];

export! {
    /// `aclError aclrtGetSymbolAddress(const void *symbol, void **devPtr);`
    pub unsafe fn aclrtGetSymbolAddress(symbol: *const c_void, dev_ptr: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("devPtr", dev_ptr)?;
        let (a, _) = symbol_of(cx, API, symbol)?;
        // CAST: device addresses lie in the host's address space on this backend.
        put(out, a as usize as *mut c_void);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetSymbolSize(const void *symbol, size_t *size);`
    pub unsafe fn aclrtGetSymbolSize(symbol: *const c_void, size: *mut usize) -> AclErrorCode |cx| {
        let out = cx.out("size", size)?;
        let (_, n) = symbol_of(cx, API, symbol)?;
        // CAST: a symbol's size fits in usize.
        put(out, n as usize);
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemcpyFromSymbol(void *dst, size_t dstMax, const void *symbol, size_t count, size_t offset, aclrtMemcpyKind kind);`
    pub unsafe fn aclrtMemcpyFromSymbol(
        dst: *mut c_void,
        dst_max: usize,
        symbol: *const c_void,
        count: usize,
        offset: usize,
        kind: u32,
    ) -> AclErrorCode |cx| {
        let src = symbol_range(cx, API, symbol, count, offset, kind, &FROM_SYMBOL)?;
        // SAFETY: the symbol range is live (the loader's); `dst` per the C contract.
        unsafe { super::memory::memcpy_sync(cx, API, dst, dst_max, src as usize as *const c_void, count, kind) }
    }
}

export! {
    /// `aclError aclrtMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset, aclrtMemcpyKind kind);`
    pub unsafe fn aclrtMemcpyToSymbol(
        symbol: *const c_void,
        src: *const c_void,
        count: usize,
        offset: usize,
        kind: u32,
    ) -> AclErrorCode |cx| {
        let dst = symbol_range(cx, API, symbol, count, offset, kind, &TO_SYMBOL)?;
        // SAFETY: the symbol range is live (the loader's); `src` per the C contract.
        unsafe { super::memory::memcpy_sync(cx, API, dst as usize as *mut c_void, count, src, count, kind) }
    }
}

/// The asynchronous symbol copies: a symbol is pageable host memory to the runtime, so, as
/// for any pageable end, the stream is synchronised and the copy made now.
///
/// # Safety
///
/// The C contract of the copy: `dst` and `src` are valid for `count` bytes.
#[expect(clippy::too_many_arguments, reason = "the C call's arguments and its name")]
unsafe fn symbol_async(
    cx: &Call,
    api: &str,
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: u32,
    stream: *mut c_void,
) -> Result<()> {
    let rt = cx.rt()?;
    let s = rt.submit_stream(api, super::stream::handle(stream))?;
    if count == 0 {
        return Ok(());
    }
    rt.plan_memcpy(api, addr(dst), dest_max as u64, addr(src), count as u64, kind)?;
    rt.sync_stream_obj(api, &s)?;
    // SAFETY: forwarded contract.
    unsafe { super::memory::memcpy_sync(cx, api, dst, dest_max, src, count, kind) }
}

export! {
    /// `aclError aclrtMemcpyFromSymbolAsync(void *dst, size_t dstMax, const void *symbol, size_t count, size_t offset, aclrtMemcpyKind kind, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyFromSymbolAsync(
        dst: *mut c_void,
        dst_max: usize,
        symbol: *const c_void,
        count: usize,
        offset: usize,
        kind: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let src = symbol_range(cx, API, symbol, count, offset, kind, &FROM_SYMBOL)?;
        // SAFETY: as aclrtMemcpyFromSymbol.
        unsafe { symbol_async(cx, API, dst, dst_max, src as usize as *const c_void, count, kind, stream) }
    }
}

export! {
    /// `aclError aclrtMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset, aclrtMemcpyKind kind, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyToSymbolAsync(
        symbol: *const c_void,
        src: *const c_void,
        count: usize,
        offset: usize,
        kind: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let dst = symbol_range(cx, API, symbol, count, offset, kind, &TO_SYMBOL)?;
        // SAFETY: as aclrtMemcpyToSymbol.
        unsafe { symbol_async(cx, API, dst as usize as *mut c_void, count, src, count, kind, stream) }
    }
}

export! {
    /// `aclError aclrtCmoAsync(void *src, size_t size, aclrtCmoType cmoType, aclrtStream stream);`
    pub unsafe fn aclrtCmoAsync(src: *mut c_void, size: usize, cmo_type: u32, stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.cmo_async(API, addr(src), size as u64, cmo_type, None, super::stream::handle(stream))
    }
}

export! {
    /// `aclError aclrtCmoAsyncWithBarrier(void *src, size_t size, aclrtCmoType cmoType, uint32_t barrierId, aclrtStream stream);`
    pub unsafe fn aclrtCmoAsyncWithBarrier(
        src: *mut c_void,
        size: usize,
        cmo_type: u32,
        barrier_id: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        cx.rt()?.cmo_async(API, addr(src), size as u64, cmo_type, Some(barrier_id), super::stream::handle(stream))
    }
}

export! {
    /// `aclError aclrtCmoWaitBarrier(aclrtBarrierTaskInfo *taskInfo, aclrtStream stream, uint32_t flag);`
    pub unsafe fn aclrtCmoWaitBarrier(
        task_info: *mut AclrtBarrierTaskInfo,
        stream: *mut c_void,
        flag: u32,
    ) -> AclErrorCode |cx| {
        let p = cx.input("taskInfo", task_info.cast_const())?;
        // SAFETY: non-null and aligned (checked); a readable aclrtBarrierTaskInfo per the API.
        let t = unsafe { p.read() };
        if t.barrier_num == 0 || t.barrier_num > t.cmo_info.len() {
            return Err(AclError::invalid(format!(
                "{API}: taskInfo->barrierNum {} must be 1..=6",
                t.barrier_num
            )));
        }
        let infos: Vec<(u32, u32)> =
            t.cmo_info.iter().take(t.barrier_num).map(|c| (c.cmo_type, c.barrier_id)).collect();
        cx.rt()?.cmo_wait_barrier(API, &infos, super::stream::handle(stream), flag)
    }
}

export! {
    /// `aclError aclrtCmoGetDescSize(size_t *size);`
    pub unsafe fn aclrtCmoGetDescSize(size: *mut usize) -> AclErrorCode |cx| {
        let out = cx.out("size", size)?;
        put(out, crate::api::memory_ext::CMO_DESC_BYTES);
        Ok(())
    }
}

export! {
    /// `aclError aclrtCmoSetDesc(void *cmoDesc, void *src, size_t size);`
    pub unsafe fn aclrtCmoSetDesc(cmo_desc: *mut c_void, src: *mut c_void, size: usize) -> AclErrorCode |cx| {
        cx.rt()?.cmo_set_desc(API, addr(cmo_desc), addr(src), size as u64)
    }
}

export! {
    /// `aclError aclrtCmoAsyncWithDesc(void *cmoDesc, aclrtCmoType cmoType, aclrtStream stream, const void *reserve);`
    pub unsafe fn aclrtCmoAsyncWithDesc(
        cmo_desc: *mut c_void,
        cmo_type: u32,
        stream: *mut c_void,
        reserve: *const c_void,
    ) -> AclErrorCode |cx| {
        if cmo_desc.is_null() {
            return Err(AclError::invalid(format!("{API}: cmoDesc is NULL")));
        }
        cx.rt()?.cmo_with_desc(API, addr(cmo_desc), cmo_type, super::stream::handle(stream), !reserve.is_null())
    }
}

export! {
    /// `aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream);`
    pub unsafe fn aclrtCtxGetCurrentDefaultStream(stream: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("stream", stream)?;
        let h = cx.rt()?.current_default_stream(API)?;
        put(out, super::stream::to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus *deviceStatus);`
    pub unsafe fn aclrtQueryDeviceStatus(device_id: i32, device_status: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("deviceStatus", device_status)?;
        let s = cx.rt()?.device_status(API, device_id)?;
        put(out, s);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetDeviceUtilizationRate(int32_t deviceId, aclrtUtilizationInfo *utilizationInfo);`
    pub unsafe fn aclrtGetDeviceUtilizationRate(
        device_id: i32,
        utilization_info: *mut AclrtUtilizationInfo,
    ) -> AclErrorCode |cx| {
        let out = cx.out("utilizationInfo", utilization_info)?;
        // SAFETY: checked non-null and aligned; the caller passes a readable struct.
        let extend = unsafe { (*utilization_info).extend };
        if !extend.is_null() {
            return Err(AclError::invalid(format!("{API}: utilizationInfo->utilizationExtend must be NULL")));
        }
        let [cube, vector, aicpu, memory] = cx.rt()?.utilization(API, device_id)?;
        put(out, AclrtUtilizationInfo { cube, vector, aicpu, memory, extend });
        Ok(())
    }
}
