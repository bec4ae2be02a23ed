//! C exports of the asynchronous and structured memory operations: `aclrtMemcpyAsync`, 2D and
//! batch copies, `aclrtMemsetAsync`, the 32-bit fills and the stream value write/wait.
//!
//! The argument checks reuse the memory module's plans ([`Runtime::plan_memcpy`],
//! [`Runtime::plan_memset`]). Work whose ends are device or pinned memory becomes tasks on the
//! stream (the DMA path of the software NPU); work touching ordinary (pageable) host memory is,
//! as in CANN, turned into a synchronisation of the stream followed by a synchronous copy done
//! here, where host pointers may become slices.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::c_void;

use hal::{DeviceAddr, DeviceId, TaskDesc, WaitCompare};

use super::{addr, in_ptr, put, size, Call};
use crate::api::memory::MemsetArgs;
use crate::codes::*;
use crate::copy::plan::{is_d2d, is_dma, plan_2d, plan_batch, Batch, BatchError, Copy2d, Plan2d, BATCH_MAX};
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::memory::{kind, locate, DstBytes, Loc, SrcBytes};
use crate::state::stream::StreamObj;

pub use crate::copy::plan::AclrtMemcpyBatchAttr;

/// Copies `count` bytes now between the addresses, turning ordinary host ends into slices.
///
/// # Safety
///
/// Ends located `Unregistered` must be valid for `count` bytes (the API's contract), and the
/// plan must have checked them (non-null, outside every runtime window).
unsafe fn copy_now(rt: &Runtime, api: &str, dst: u64, dl: Loc, src: u64, sl: Loc, count: u64) -> Result<()> {
    // CAST: `count` fits in isize (checked by `size` at the edge).
    let n = count as usize;
    let (dp, sp) = (dst as usize as *mut u8, src as usize as *const u8);
    match (dl, sl) {
        (Loc::Unregistered, Loc::Unregistered) => {
            // SAFETY: both ends are ordinary host memory valid for `count` bytes (caller's
            // contract); `copy` has memmove semantics.
            unsafe { std::ptr::copy(sp, dp, n) };
            Ok(())
        }
        (Loc::Unregistered, _) => {
            // SAFETY: `dst` is ordinary host memory, writable for `count` bytes, outside every
            // runtime window, so it cannot alias the device or pinned source.
            let out = unsafe { std::slice::from_raw_parts_mut(dp, n) };
            rt.copy(api, DstBytes::Host(out), SrcBytes::Addr(src), count)
        }
        (_, Loc::Unregistered) => {
            // SAFETY: `src` is ordinary host memory, readable for `count` bytes, outside every
            // runtime window.
            let input = unsafe { std::slice::from_raw_parts(sp, n) };
            rt.copy(api, DstBytes::Addr(dst), SrcBytes::Host(input), count)
        }
        _ => rt.copy(api, DstBytes::Addr(dst), SrcBytes::Addr(src), count),
    }
}

/// Submits a DMA copy as tasks of at most the slice size of its ends ([`crate::api::copy::submit`]).
#[expect(clippy::too_many_arguments, reason = "both ends with their locations")]
fn submit_copy(
    rt: &Runtime,
    api: &str,
    s: &StreamObj,
    dst: u64,
    dl: Loc,
    src: u64,
    sl: Loc,
    count: u64,
) -> Result<()> {
    crate::api::copy::submit(rt, api, s, dst, src, count, is_d2d(dl, sl))
}

/// `ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE` from pinned memory: the source is copied into a
/// runtime staging buffer now, and the DMA copy reads the buffer, so the caller may reuse or
/// free its source as soon as the call returns.
fn stage_copy(rt: &Runtime, api: &str, s: &StreamObj, dst: u64, dl: Loc, src: u64, count: u64) -> Result<()> {
    let buf = match rt.staging_take(api, count) {
        Ok(b) => b,
        Err(_) => {
            // No pinned memory for a buffer: copy now, after the stream's earlier work, which
            // also leaves the source free when the call returns.
            rt.sync_stream_obj(api, s)?;
            return rt.copy(api, DstBytes::Addr(dst), SrcBytes::Addr(src), count);
        }
    };
    if let Err(e) = rt.copy(api, DstBytes::Addr(buf.addr()), SrcBytes::Addr(src), count) {
        rt.staging_put(buf, None);
        return Err(e);
    }
    let r = submit_copy(rt, api, s, dst, dl, buf.addr(), Loc::Pinned, count);
    // Whatever part of the copy was queued reads the buffer until the stream has run it.
    let reader = rt
        .backend()
        .driver()
        .progress(DeviceId(s.device), s.queue)
        .ok()
        .map(|p| (s.device, s.queue, p.submitted));
    rt.staging_put(buf, reader);
    r
}

fn is_h2h(dl: Loc, sl: Loc) -> bool {
    !matches!(dl, Loc::Device(_)) && !matches!(sl, Loc::Device(_))
}

/// The body of `aclrtMemcpyAsync` (and of its deprecated twin `aclrtMemcpyAsyncWithCondition`,
/// and of the asynchronous symbol copies).
///
/// # Safety
///
/// The C contract of `aclrtMemcpyAsync`: `dst` and `src` are valid for `count` bytes.
#[expect(clippy::too_many_arguments, reason = "the C call's arguments and its name")]
pub(crate) unsafe fn memcpy_async(
    cx: &Call,
    api: &str,
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind_value: u32,
    stream: *mut c_void,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    // One thread-local access for the runtime and the stream's lookup (no reference taken).
    cx.with_rt(|rt, l| {
        // After the runtime's check, as before: an uninitialised runtime is the error first.
        let n = cx.size("count", count)?;
        let plan = rt.plan_memcpy(api, addr(dst), dest_max as u64, addr(src), n, kind_value)?;
        rt.with_submit_target_in(l, api, super::stream::handle(stream), |_, s| {
            let (d, sr) = (addr(dst), addr(src));
            let (dl, sl) = (locate(d), locate(sr));
            if is_h2h(dl, sl) {
                return Err(AclError::new(
                    ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    format!(
                        "{api}: a host-to-host copy cannot be asynchronous on this (EP mode) device; use aclrtMemcpy"
                    ),
                ));
            }
            if plan.count == 0 {
                return Ok(());
            }
            if kind_value == kind::H2BUF2D && sl == Loc::Pinned && is_dma(dl) {
                return stage_copy(rt, api, s, d, dl, sr, n);
            }
            if is_dma(dl) && is_dma(sl) {
                return submit_copy(rt, api, s, d, dl, sr, sl, n);
            }
            // Pageable host memory: synchronise the stream, then copy synchronously (as CANN).
            // This also covers ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE from pageable memory: the
            // source has been read when the call returns.
            rt.sync_stream_obj(api, s)?;
            // SAFETY: the plan checked the pointers; the caller guarantees `count` bytes at
            // each.
            unsafe { copy_now(rt, api, d, dl, sr, sl, n) }
        })
    })
}

export! {
    /// `aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyAsync(
        dst: *mut c_void,
        dest_max: usize,
        src: *const c_void,
        count: usize,
        kind_value: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe { memcpy_async(cx, API, dst, dest_max, src, count, kind_value, stream) }
    }
}

/// The memory check of one end of a 2D copy: its whole span is live memory (or ordinary host
/// memory), which a copy of the range onto itself checks; and where it lies.
fn span_check(rt: &Runtime, api: &str, a: u64, span: u64) -> Result<Loc> {
    rt.plan_memcpy(api, a, span, a, span, kind::DEFAULT)?;
    Ok(locate(a))
}

/// Copies the rows now.
///
/// # Safety
///
/// As [`copy_now`], for every row.
#[expect(clippy::too_many_arguments, reason = "the rows' geometry")]
unsafe fn rows_now(
    rt: &Runtime,
    api: &str,
    p: &Plan2d,
    dst: u64,
    dpitch: u64,
    src: u64,
    spitch: u64,
    width: u64,
    height: u64,
) -> Result<()> {
    for row in 0..height {
        // SAFETY: each row lies inside the spans the plan checked; caller's contract.
        unsafe { copy_now(rt, api, dst + row * dpitch, p.dl, src + row * spitch, p.sl, width)? };
    }
    Ok(())
}

export! {
    /// `aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, aclrtMemcpyKind kind);`
    pub unsafe fn aclrtMemcpy2d(
        dst: *mut c_void,
        dpitch: usize,
        src: *const c_void,
        spitch: usize,
        width: usize,
        height: usize,
        kind_value: u32,
    ) -> AclErrorCode |cx| {
        if width == 0 || height == 0 {
            return Ok(());
        }
        let rt = cx.rt()?;
        let c = Copy2d { dst: addr(dst), dpitch, src: addr(src), spitch, width, height, kind: kind_value, is_async: false };
        let p = plan_2d(API, &c, |a, span| span_check(&rt, API, a, span))?;
        // CAST: usize fits in u64.
        let (dp, sp, w, h) = (dpitch as u64, spitch as u64, width as u64, height as u64);
        // SAFETY: the plan checked the spans; the caller guarantees them.
        unsafe { rows_now(&rt, API, &p, addr(dst), dp, addr(src), sp, w, h) }
    }
}

export! {
    /// `aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, aclrtMemcpyKind kind, aclrtStream stream);`
    pub unsafe fn aclrtMemcpy2dAsync(
        dst: *mut c_void,
        dpitch: usize,
        src: *const c_void,
        spitch: usize,
        width: usize,
        height: usize,
        kind_value: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        if width == 0 || height == 0 {
            return Ok(());
        }
        let rt = cx.rt()?;
        let c = Copy2d { dst: addr(dst), dpitch, src: addr(src), spitch, width, height, kind: kind_value, is_async: true };
        let p = plan_2d(API, &c, |a, span| span_check(&rt, API, a, span))?;
        let s = rt.submit_stream(API, super::stream::handle(stream))?;
        // CAST: usize fits in u64.
        let (dp, sp, w, h) = (dpitch as u64, spitch as u64, width as u64, height as u64);
        if is_dma(p.dl) && is_dma(p.sl) {
            let task = TaskDesc::Copy2d {
                dst: DeviceAddr(addr(dst)),
                dst_pitch: dp,
                src: DeviceAddr(addr(src)),
                src_pitch: sp,
                width: w,
                height: h,
            };
            return rt.submit_task(API, &s, task).map(|_| ());
        }
        rt.sync_stream_obj(API, &s)?;
        // SAFETY: the plan checked the spans; the caller guarantees them.
        unsafe { rows_now(&rt, API, &p, addr(dst), dp, addr(src), sp, w, h) }
    }
}

/// Reads the batch arrays after the null checks.
///
/// # Safety
///
/// Non-null arrays must hold `n` (or `na`) entries, as the API's contract says.
#[expect(clippy::too_many_arguments, reason = "the C signature's arrays")]
unsafe fn batch_arrays<'a>(
    api: &str,
    dsts: *mut *mut c_void,
    dest_maxs: *mut usize,
    srcs: *mut *mut c_void,
    sizes: *mut usize,
    n: usize,
    attrs: *mut AclrtMemcpyBatchAttr,
    attr_idx: *mut usize,
    na: usize,
) -> Result<Batch<'a>> {
    if n == 0 {
        return Err(AclError::invalid(format!("{api}: numBatches is 0")));
    }
    let d = in_ptr(api, "dsts", dsts)?;
    let m = in_ptr(api, "destMaxs", dest_maxs)?;
    let s = in_ptr(api, "srcs", srcs)?;
    let z = in_ptr(api, "sizes", sizes)?;
    let a = in_ptr(api, "attrs", attrs)?;
    let x = in_ptr(api, "attrsIndexes", attr_idx)?;
    if n > BATCH_MAX || na > n {
        // Do not read arrays whose lengths are already wrong.
        return Err(AclError::invalid(format!(
            "{api}: numBatches {n} (at most {BATCH_MAX}) or numAttrs {na} (at most numBatches) out of range"
        )));
    }
    // SAFETY: each pointer is non-null and aligned (checked); the caller guarantees `n`
    // entries in the per-copy arrays and `na` in the attribute arrays; nothing writes them
    // during the call.
    unsafe {
        Ok(Batch {
            dsts: std::slice::from_raw_parts(d, n),
            dest_maxs: std::slice::from_raw_parts(m, n),
            srcs: std::slice::from_raw_parts(s, n),
            sizes: std::slice::from_raw_parts(z, n),
            attrs: std::slice::from_raw_parts(a, na),
            attr_idx: std::slice::from_raw_parts(x, na),
        })
    }
}

#[expect(clippy::too_many_arguments, reason = "the C signature")]
unsafe fn batch(
    cx: &Call,
    api: &'static str,
    dsts: *mut *mut c_void,
    dest_maxs: *mut usize,
    srcs: *mut *mut c_void,
    sizes: *mut usize,
    n: usize,
    attrs: *mut AclrtMemcpyBatchAttr,
    attr_idx: *mut usize,
    na: usize,
    fail_index: Option<*mut usize>,
    stream: Option<*mut c_void>,
) -> Result<()> {
    trace_args!(dsts, dest_maxs, srcs, sizes, n, attrs, attr_idx, na, fail_index, stream);
    {
        let fi = match fail_index {
            Some(p) => Some(cx.out("failIndex", p)?),
            None => None,
        };
        let r = (|| -> std::result::Result<(), BatchError> {
            // SAFETY: the caller's contract on the array lengths.
            let b = unsafe { batch_arrays(api, dsts, dest_maxs, srcs, sizes, n, attrs, attr_idx, na) }
                .map_err(|e| (e, usize::MAX))?;
            let rt = cx.rt().map_err(|e| (e, usize::MAX))?;
            let s = match stream {
                Some(h) => {
                    Some(rt.submit_stream(api, super::stream::handle(h)).map_err(|e| (e, usize::MAX))?)
                }
                None => None,
            };
            let Some(plan) = plan_batch(api, &b, |d, s, len| {
                rt.plan_memcpy(api, d, len, s, len, kind::DEFAULT)?;
                Ok((locate(d), locate(s)))
            })?
            else {
                return Ok(());
            };
            let run_now = |rt: &Runtime| -> std::result::Result<(), BatchError> {
                for (i, (&(d, sr, len), &(dl, sl))) in plan.entries.iter().zip(&plan.locs).enumerate() {
                    // SAFETY: every entry was checked by the plan; the caller's contract.
                    unsafe { copy_now(rt, api, d, dl, sr, sl, len) }.map_err(|e| (e, i))?;
                }
                Ok(())
            };
            match s {
                Some(s) if plan.all_dma && rt.backend().driver().loader().is_some() => {
                    rt.submit_batch(api, &s, plan.entries.clone()).map(|_| ()).map_err(|e| (e, usize::MAX))
                }
                Some(s) => {
                    rt.sync_stream_obj(api, &s).map_err(|e| (e, usize::MAX))?;
                    run_now(&rt)
                }
                None => run_now(&rt),
            }
        })();
        if let Some(p) = fi {
            put(p, usize::MAX);
        }
        match r {
            Ok(()) => Ok(()),
            Err((e, i)) => {
                if let Some(p) = fi {
                    put(p, i);
                }
                Err(e)
            }
        }
    }
}

use crate::backend::Backend;

export! {
    /// `aclError aclrtMemcpyBatch(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches, aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs, size_t *failIndex);`
    pub unsafe fn aclrtMemcpyBatch(
        dsts: *mut *mut c_void,
        dest_maxs: *mut usize,
        srcs: *mut *mut c_void,
        sizes: *mut usize,
        num_batches: usize,
        attrs: *mut AclrtMemcpyBatchAttr,
        attrs_indexes: *mut usize,
        num_attrs: usize,
        fail_index: *mut usize,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe {
            batch(
                cx,
                API,
                dsts,
                dest_maxs,
                srcs,
                sizes,
                num_batches,
                attrs,
                attrs_indexes,
                num_attrs,
                Some(fail_index),
                None,
            )
        }
    }
}

export! {
    /// `aclError aclrtMemcpyBatchV2(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches, aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs);`
    pub unsafe fn aclrtMemcpyBatchV2(
        dsts: *mut *mut c_void,
        dest_maxs: *mut usize,
        srcs: *mut *mut c_void,
        sizes: *mut usize,
        num_batches: usize,
        attrs: *mut AclrtMemcpyBatchAttr,
        attrs_indexes: *mut usize,
        num_attrs: usize,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe {
            batch(
                cx,
                API,
                dsts,
                dest_maxs,
                srcs,
                sizes,
                num_batches,
                attrs,
                attrs_indexes,
                num_attrs,
                None,
                None,
            )
        }
    }
}

export! {
    /// `aclError aclrtMemcpyBatchAsync(..., size_t *failIndex, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyBatchAsync(
        dsts: *mut *mut c_void,
        dest_maxs: *mut usize,
        srcs: *mut *mut c_void,
        sizes: *mut usize,
        num_batches: usize,
        attrs: *mut AclrtMemcpyBatchAttr,
        attrs_indexes: *mut usize,
        num_attrs: usize,
        fail_index: *mut usize,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe {
            batch(
                cx,
                API,
                dsts,
                dest_maxs,
                srcs,
                sizes,
                num_batches,
                attrs,
                attrs_indexes,
                num_attrs,
                Some(fail_index),
                Some(stream),
            )
        }
    }
}

export! {
    /// `aclError aclrtMemcpyBatchAsyncV2(..., size_t numAttrs, aclrtStream stream);`
    pub unsafe fn aclrtMemcpyBatchAsyncV2(
        dsts: *mut *mut c_void,
        dest_maxs: *mut usize,
        srcs: *mut *mut c_void,
        sizes: *mut usize,
        num_batches: usize,
        attrs: *mut AclrtMemcpyBatchAttr,
        attrs_indexes: *mut usize,
        num_attrs: usize,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        // SAFETY: forwarded C contract.
        unsafe {
            batch(
                cx,
                API,
                dsts,
                dest_maxs,
                srcs,
                sizes,
                num_batches,
                attrs,
                attrs_indexes,
                num_attrs,
                None,
                Some(stream),
            )
        }
    }
}

export! {
    /// `aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);`
    pub unsafe fn aclrtMemsetAsync(
        dev_ptr: *mut c_void,
        max_count: usize,
        value: i32,
        count: usize,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        if count == 0 {
            return Ok(());
        }
        let (dst, h) = (addr(dev_ptr), super::stream::handle(stream));
        // One thread-local access for the runtime, the checks and the stream's lookup.
        cx.with_rt(|rt, l| {
            // After the runtime's check, as before: an uninitialised runtime is the error first.
            let n = cx.size("count", count)?;
            // CAST: the documented behaviour keeps the low byte.
            let set = MemsetArgs { dst, max_count: max_count as u64, count: n, value: value as u8 };
            if let Some(r) = rt.memset_async_fast(l, API, h, set) {
                return r;
            }
            let plan = rt.plan_memset_in(l, API, dst, max_count as u64, n)?;
            rt.with_submit_target_in(l, API, h, |_, s| {
                if plan.dst == Loc::Unregistered {
                    // Ordinary host memory: set now on the calling thread, as CANN does.
                    // SAFETY: non-null, outside every runtime window (checked by the plan),
                    // writable for `count <= maxCount` bytes by the API's contract,
                    // `count <= isize::MAX`.
                    // CAST: the documented behaviour keeps the low byte.
                    unsafe { std::ptr::write_bytes(dev_ptr.cast::<u8>(), value as u8, count) };
                    return Ok(());
                }
                // CAST: the documented behaviour keeps the low byte.
                rt.submit_fill(API, s, DeviceAddr(dst), value as u8, n).map(|_| ())
            })
        })
    }
}

fn plan_d32(rt: &Runtime, api: &str, ptr: u64, mem_size: usize, n: usize) -> Result<u64> {
    if ptr == 0 {
        return Err(AclError::invalid(format!("{api}: ptr is NULL")));
    }
    if ptr % 4 != 0 {
        return Err(AclError::invalid(format!("{api}: ptr {ptr:#x} is not 4-byte aligned")));
    }
    let bytes = n.checked_mul(4).ok_or_else(|| AclError::invalid(format!("{api}: N {n} overflows")))?;
    if mem_size < bytes {
        return Err(AclError::invalid(format!("{api}: memSize {mem_size} is less than N*4 = {bytes}")));
    }
    if locate(ptr) == Loc::Unregistered {
        return Err(AclError::invalid(format!(
            "{api}: ptr {ptr:#x} is not memory from aclrtMalloc or aclrtMallocHost"
        )));
    }
    let b = size(api, "N*4", bytes)?;
    rt.plan_memset(api, ptr, mem_size as u64, b)?;
    Ok(b)
}

export! {
    /// `aclError aclrtMemsetD32(void *ptr, size_t memSize, uint32_t value, size_t N);`
    pub unsafe fn aclrtMemsetD32(
        ptr: *mut c_void,
        mem_size: usize,
        value: u32,
        n: usize,
    ) -> AclErrorCode |cx| {
        if n == 0 {
            return Ok(());
        }
        let rt = cx.rt()?;
        plan_d32(&rt, API, addr(ptr), mem_size, n)?;
        fill32_now(&rt, API, addr(ptr), value, n as u64)
    }
}

export! {
    /// `aclError aclrtMemsetD32Async(void *ptr, size_t memSize, uint32_t value, size_t N, aclrtStream stream);`
    pub unsafe fn aclrtMemsetD32Async(
        ptr: *mut c_void,
        mem_size: usize,
        value: u32,
        n: usize,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        if n == 0 {
            return Ok(());
        }
        let rt = cx.rt()?;
        plan_d32(&rt, API, addr(ptr), mem_size, n)?;
        let s = rt.submit_stream(API, super::stream::handle(stream))?;
        if locate(addr(ptr)) == Loc::Pinned {
            // Host memory: nothing is queued; the fill happens now (documented).
            return fill32_now(&rt, API, addr(ptr), value, n as u64);
        }
        let task = TaskDesc::Memset32 { dst: DeviceAddr(addr(ptr)), value, count: n as u64 };
        rt.submit_task(API, &s, task).map(|_| ())
    }
}

fn plan_value(rt: &Runtime, api: &str, p: u64) -> Result<()> {
    if p == 0 {
        return Err(AclError::invalid(format!("{api}: devAddr is NULL")));
    }
    if p % 8 != 0 {
        return Err(AclError::invalid(format!("{api}: devAddr {p:#x} is not 8-byte aligned")));
    }
    if !matches!(locate(p), Loc::Device(_)) {
        return Err(AclError::invalid(format!("{api}: devAddr {p:#x} is not device memory")));
    }
    rt.plan_memset(api, p, 8, 8).map(|_| ())
}

export! {
    /// `aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);`
    pub unsafe fn aclrtValueWrite(
        dev_addr: *mut c_void,
        value: u64,
        flag: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        if flag != 0 {
            return Err(AclError::invalid(format!("{API}: flag {flag} must be 0")));
        }
        let rt = cx.rt()?;
        plan_value(&rt, API, addr(dev_addr))?;
        let s = rt.submit_stream(API, super::stream::handle(stream))?;
        rt.submit_task(API, &s, TaskDesc::ValueWrite { dst: DeviceAddr(addr(dev_addr)), value }).map(|_| ())
    }
}

export! {
    /// `aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream);`
    pub unsafe fn aclrtValueWait(
        dev_addr: *mut c_void,
        value: u64,
        flag: u32,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let compare = match flag {
            0 => WaitCompare::GreaterOrEqual,
            1 => WaitCompare::Equal,
            2 => WaitCompare::And,
            3 => WaitCompare::Nor,
            f => {
                return Err(AclError::invalid(format!(
                    "{API}: flag {f} is not ACL_STREAM_WAIT_VALUE_GEQ/EQ/AND/NOR (0..=3)"
                )))
            }
        };
        let rt = cx.rt()?;
        plan_value(&rt, API, addr(dev_addr))?;
        let s = rt.submit_stream(API, super::stream::handle(stream))?;
        rt.submit_task(API, &s, TaskDesc::ValueWait { addr: DeviceAddr(addr(dev_addr)), value, compare })
            .map(|_| ())
    }
}

/// Fills `n` 32-bit words at `dst` (device or pinned host memory) with `value` now: on the
/// software NPU's DMA path, or as pattern copies through the driver on other backends.
fn fill32_now(rt: &Runtime, api: &str, dst: u64, value: u32, n: u64) -> Result<()> {
    if let Backend::Sim(sim) = rt.backend() {
        return sim.dma_fill32(DeviceAddr(dst), value, n).map_err(|e| AclError::from_hal(e, api));
    }
    const CHUNK_WORDS: u64 = 16 << 10;
    let drv = rt.backend().driver();
    // CAST: at most CHUNK_WORDS words.
    let pattern = value.to_le_bytes().repeat(n.min(CHUNK_WORDS) as usize);
    let mut done = 0;
    while done < n {
        let words = (n - done).min(CHUNK_WORDS);
        let at = DeviceAddr(dst + done * 4);
        // CAST: at most the pattern's length.
        let bytes = &pattern[..(words * 4) as usize];
        match hal::layout::device_of(at.as_u64()) {
            Some(d) => drv.copy_to_device(hal::DeviceId(d), at, bytes),
            _ => drv.write_host(at, bytes),
        }
        .map_err(|e| AclError::from_hal(e, api))?;
        done += words;
    }
    Ok(())
}
