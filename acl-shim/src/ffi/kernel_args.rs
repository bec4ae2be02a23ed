//! C exports of the kernel-argument builder (`aclrtKernelArgs*`), the launch that takes its
//! lists (`aclrtLaunchKernelWithConfig`) and the sibling launches of §1.6 of the runtime
//! surface sheet (`aclrtLaunchKernelWithArgsArray`, the SIMT launches).
//!
//! An `aclrtArgsHandle` is the address of an argument list's header
//! (`crate::state::kernel_args::ArgsHead`): in a per-thread list the runtime owns
//! (`aclrtKernelArgsInit`; one per thread, reset by every Init, freed when the thread ends) or
//! in the caller's memory (`aclrtKernelArgsInitByUserMem`). Its magic is checked on every call.
//! The state machine and the byte layout are [`crate::state::kernel_args`]'s.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use super::kernel::{launch, live_function, AclrtLaunchKernelCfg, AclrtPlaceHolderInfo};
use super::stream::handle;
use super::{addr, put};
use crate::codes::{ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE};
use crate::error::{AclError, Result};
use crate::state::kernel_args::{
    handle_mem_size, mem_size, ArgsHead, ArgsList, ParamRec, ARGS_MAGIC, MAX_PARAMS, THREAD_BUFFER,
};

/// The runtime-managed list of one thread: its header, records and buffer.
#[repr(C)]
struct ThreadArgs {
    head: ArgsHead,
    params: [ParamRec; MAX_PARAMS as usize],
    buf: Box<[u8]>,
}

/// The calling thread's list, made on its first `aclrtKernelArgsInit` and freed when the thread
/// ends.
struct ThreadSlot(Cell<*mut ThreadArgs>);

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        let p = self.0.get();
        if !p.is_null() {
            // SAFETY: `p` came from `Box::into_raw` below and is freed only here, once.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

thread_local! {
    static THREAD_ARGS: ThreadSlot = const { ThreadSlot(Cell::new(std::ptr::null_mut())) };
}

/// Generations of argument lists (so a parameter handle of an older list is refused).
static GENERATION: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATION.fetch_add(1, Ordering::Relaxed)
}

/// The argument list at `h`, checked: non-null, aligned, with the live magic.
///
/// # Safety
///
/// `h` is NULL or a value the caller got from `aclrtKernelArgsInit`/`InitByUserMem` whose memory
/// is still there (CANN's contract; a destroyed or foreign handle fails the magic check).
unsafe fn list_at<'a>(api: &str, h: *mut c_void) -> Result<ArgsList<'a>> {
    if h.is_null() {
        return Err(AclError::invalid(format!("{api}: argsHandle is NULL")));
    }
    let head = h.cast::<ArgsHead>();
    if !head.is_aligned() {
        return Err(AclError::new(
            ACL_ERROR_RT_INVALID_HANDLE,
            format!("{api}: argsHandle {h:p} is not an argument list"),
        ));
    }
    // SAFETY: non-null and aligned; the caller's memory holds at least the header (contract).
    let magic = unsafe { std::ptr::addr_of!((*head).magic).read() };
    if magic != ARGS_MAGIC {
        return Err(AclError::new(
            ACL_ERROR_RT_INVALID_HANDLE,
            format!("{api}: argsHandle {h:p} is not an argument list (call aclrtKernelArgsInit first)"),
        ));
    }
    // SAFETY: a live header (magic checked) the caller lets this call change.
    let head = unsafe { &mut *head };
    if head.cap > MAX_PARAMS || head.buf == 0 {
        return Err(AclError::new(
            ACL_ERROR_RT_INVALID_HANDLE,
            format!("{api}: argsHandle {h:p} is damaged"),
        ));
    }
    // SAFETY: `cap` records follow the header in the same allocation (both Init calls place
    // them there), disjoint from the header.
    let params = unsafe {
        std::slice::from_raw_parts_mut(
            h.cast::<u8>().add(std::mem::size_of::<ArgsHead>()).cast::<ParamRec>(),
            head.cap as usize,
        )
    };
    // SAFETY: the buffer the Init call recorded: `buf_len` bytes the list owns (the thread's
    // buffer or the caller's `userHostMem`), disjoint from the header and records.
    // CAST: an address and length recorded from a pointer and a `usize`.
    let buf = unsafe { std::slice::from_raw_parts_mut(head.buf as usize as *mut u8, head.buf_len as usize) };
    Ok(ArgsList { head, params, buf })
}

/// The raw parameter handle of `p`.
fn param(api: &str, p: *mut c_void) -> Result<u64> {
    if p.is_null() {
        return Err(AclError::invalid(format!("{api}: paramHandle is NULL")));
    }
    Ok(handle(p))
}

/// Copies `len` bytes from `p` (non-null, `len > 0`).
fn bytes_in<'a>(api: &str, name: &str, p: *const c_void, len: usize) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(AclError::invalid(format!("{api}: {name} is NULL")));
    }
    if len == 0 {
        return Err(AclError::invalid(format!("{api}: paramSize is 0")));
    }
    super::size(api, "paramSize", len)?;
    // SAFETY: non-null; the caller guarantees `len` readable bytes (checked to fit isize).
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

export! {
    /// `aclError aclrtKernelArgsGetHandleMemSize(aclrtFuncHandle funcHandle, size_t *memSize);`
    pub unsafe fn aclrtKernelArgsGetHandleMemSize(func: *mut c_void, mem: *mut usize) -> AclErrorCode |cx| {
        let out = cx.out("memSize", mem)?;
        live_function(cx, API, func)?;
        put(out, handle_mem_size());
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsGetMemSize(aclrtFuncHandle funcHandle, size_t userArgsSize, size_t *actualArgsSize);`
    pub unsafe fn aclrtKernelArgsGetMemSize(func: *mut c_void, user_args_size: usize, actual: *mut usize) -> AclErrorCode |cx| {
        let out = cx.out("actualArgsSize", actual)?;
        live_function(cx, API, func)?;
        put(out, mem_size(API, user_args_size)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle);`
    pub unsafe fn aclrtKernelArgsInit(func: *mut c_void, args: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("argsHandle", args)?;
        let f = live_function(cx, API, func)?;
        let p = THREAD_ARGS.with(|slot| {
            if slot.0.get().is_null() {
                let buf = vec![0u8; THREAD_BUFFER].into_boxed_slice();
                let fresh = Box::new(ThreadArgs {
                    head: ArgsHead::new(0, 0, 0, 0),
                    params: [ParamRec::default(); MAX_PARAMS as usize],
                    buf,
                });
                slot.0.set(Box::into_raw(fresh));
            }
            slot.0.get()
        });
        // SAFETY: this thread's list (made above, freed only when the thread ends); no other
        // reference to it is live during this call.
        let t = unsafe { &mut *p };
        let buf = addr(t.buf.as_ptr().cast());
        t.head = ArgsHead::new(f, buf, THREAD_BUFFER as u64, next_generation());
        put(out, std::ptr::addr_of_mut!(t.head).cast::<c_void>());
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsInitByUserMem(aclrtFuncHandle funcHandle, aclrtArgsHandle argsHandle, void *userHostMem, size_t actualArgsSize);`
    pub unsafe fn aclrtKernelArgsInitByUserMem(
        func: *mut c_void,
        args: *mut c_void,
        user_host_mem: *mut c_void,
        actual_args_size: usize,
    ) -> AclErrorCode |cx| {
        let head = cx.out("argsHandle", args.cast::<ArgsHead>())?;
        if user_host_mem.is_null() {
            return Err(AclError::invalid(format!("{API}: userHostMem is NULL")));
        }
        if actual_args_size == 0 {
            return Err(AclError::invalid(format!("{API}: actualArgsSize is 0")));
        }
        let len = cx.size("actualArgsSize", actual_args_size)?;
        let f = live_function(cx, API, func)?;
        // The caller's `argsHandle` holds aclrtKernelArgsGetHandleMemSize bytes: the header
        // and the records that follow it (written as parameters are appended).
        put(head, ArgsHead::new(f, addr(user_host_mem), len, next_generation()));
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize, aclrtParamHandle *paramHandle);`
    pub unsafe fn aclrtKernelArgsAppend(
        args: *mut c_void,
        value: *mut c_void,
        size: usize,
        param_handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("paramHandle", param_handle)?;
        let bytes = bytes_in(API, "param", value, size)?;
        // SAFETY: the caller's handle (see `list_at`).
        let mut l = unsafe { list_at(API, args) }?;
        let p = l.append(API, bytes)?;
        put(out, super::stream::to_ptr(p));
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsAppendPlaceHolder(aclrtArgsHandle argsHandle, aclrtParamHandle *paramHandle);`
    pub unsafe fn aclrtKernelArgsAppendPlaceHolder(args: *mut c_void, param_handle: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("paramHandle", param_handle)?;
        // SAFETY: the caller's handle (see `list_at`).
        let mut l = unsafe { list_at(API, args) }?;
        let p = l.append_placeholder(API)?;
        put(out, super::stream::to_ptr(p));
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsGetPlaceHolderBuffer(aclrtArgsHandle argsHandle, aclrtParamHandle paramHandle, size_t dataSize, void **bufferAddr);`
    pub unsafe fn aclrtKernelArgsGetPlaceHolderBuffer(
        args: *mut c_void,
        param_handle: *mut c_void,
        data_size: usize,
        buffer_addr: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("bufferAddr", buffer_addr)?;
        let p = param(API, param_handle)?;
        if data_size == 0 {
            return Err(AclError::invalid(format!("{API}: dataSize is 0")));
        }
        let size = cx.size("dataSize", data_size)?;
        // SAFETY: the caller's handle (see `list_at`).
        let mut l = unsafe { list_at(API, args) }?;
        let at = l.placeholder_buffer(API, p, size)?;
        // CAST: an offset within the buffer.
        put(out, l.buf[at as usize..].as_mut_ptr().cast::<c_void>());
        Ok(())
    }
}

export! {
    /// `aclError aclrtKernelArgsParaUpdate(aclrtArgsHandle argsHandle, aclrtParamHandle paramHandle, void *param, size_t paramSize);`
    pub unsafe fn aclrtKernelArgsParaUpdate(
        args: *mut c_void,
        param_handle: *mut c_void,
        value: *mut c_void,
        size: usize,
    ) -> AclErrorCode |cx| {
        let p = param(API, param_handle)?;
        let bytes = bytes_in(API, "param", value, size)?;
        // SAFETY: the caller's handle (see `list_at`).
        let mut l = unsafe { list_at(API, args) }?;
        l.update(API, p, bytes)
    }
}

export! {
    /// `aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle);`
    pub unsafe fn aclrtKernelArgsFinalize(args: *mut c_void) -> AclErrorCode |cx| {
        // SAFETY: the caller's handle (see `list_at`).
        let mut l = unsafe { list_at(API, args) }?;
        l.finalize();
        Ok(())
    }
}

/// Reads a launch config as `aclrtLaunchKernelWithConfig` checks it (§1.4): the timeout in
/// microseconds (0: none). Unknown attribute ids are ignored.
pub(crate) fn config_timeout_us(api: &str, cfg: *mut AclrtLaunchKernelCfg) -> Result<u64> {
    if cfg.is_null() {
        return Ok(0);
    }
    let cfg = super::in_ptr(api, "cfg", cfg)?;
    // SAFETY: non-null and aligned (checked); the caller passes a valid cfg struct.
    let cfg = unsafe { cfg.read() };
    if cfg.attrs.is_null() {
        return Err(AclError::rt_invalid(format!("{api}: cfg->attrs is NULL")));
    }
    if cfg.num_attrs == 0 {
        return Ok(0);
    }
    if cfg.num_attrs > 64 || !cfg.attrs.is_aligned() {
        return Err(AclError::rt_invalid(format!(
            "{api}: cfg->numAttrs {} is out of range (or cfg->attrs is misaligned)",
            cfg.num_attrs
        )));
    }
    // SAFETY: non-null, aligned, and the caller guarantees `numAttrs` entries.
    let attrs = unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.num_attrs) };
    let (mut secs, mut micros) = (None, None);
    for (i, a) in attrs.iter().enumerate() {
        // CAST: the uint8 members are the low byte of the first word (little endian).
        let byte = a.value[0] as u8;
        let flag = |what: &str| {
            if byte > 1 {
                Err(AclError::rt_invalid(format!(
                    "{api}: cfg->attrs[{i}].value.{what} is {byte}, not 0 or 1"
                )))
            } else {
                Ok(())
            }
        };
        match a.id {
            1 if byte >= 2 => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: cfg->attrs[{i}].value.schemMode is {byte} (0 normal or 1 batch)"
                )))
            }
            5 => flag("isBlockTaskPrefetch")?,
            6 => flag("isDataDump")?,
            9 => flag("enableProfiling")?,
            // CAST: the uint16 `timeout` member is the low half of the first word.
            7 => secs = Some(u64::from(a.value[0] as u16)),
            8 => micros = Some(u64::from(a.value[1]) << 32 | u64::from(a.value[0])),
            _ => {}
        }
    }
    match (secs, micros) {
        (Some(_), Some(_)) => {
            Err(AclError::rt_invalid(format!("{api}: TIMEOUT and TIMEOUT_US may not both be given")))
        }
        (Some(s), None) => Ok(s.saturating_mul(1_000_000)),
        (None, Some(us)) => Ok(us),
        (None, None) => Ok(0),
    }
}

export! {
    /// `aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg, aclrtArgsHandle argsHandle, void *reserve);`
    pub unsafe fn aclrtLaunchKernelWithConfig(
        func: *mut c_void,
        num_blocks: u32,
        stream: *mut c_void,
        cfg: *mut AclrtLaunchKernelCfg,
        args: *mut c_void,
        reserve: *mut c_void,
    ) -> AclErrorCode |cx| {
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: funcHandle is NULL")));
        }
        if args.is_null() {
            return Err(AclError::invalid(format!("{API}: argsHandle is NULL")));
        }
        if num_blocks == 0 {
            return Err(AclError::invalid(format!("{API}: numBlocks is 0")));
        }
        if !reserve.is_null() {
            return Err(AclError::invalid(format!("{API}: reserve must be NULL")));
        }
        live_function(cx, API, func)?;
        let timeout = config_timeout_us(API, cfg)?;
        // SAFETY: the caller's handle (see `list_at`).
        let mut l = unsafe { list_at(API, args) }?;
        let image = l.launch_image(API)?;
        launch(cx, API, func, num_blocks, image, timeout, stream)
    }
}

export! {
    /// `aclError aclrtLaunchKernelWithArgsArray(void *func, uint32_t numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg, void **args);`
    pub unsafe fn aclrtLaunchKernelWithArgsArray(
        func: *mut c_void,
        num_blocks: u32,
        stream: *mut c_void,
        cfg: *mut AclrtLaunchKernelCfg,
        args: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: func is NULL")));
        }
        if num_blocks == 0 {
            return Err(AclError::invalid(format!("{API}: numBlocks is 0")));
        }
        let _ = (stream, args);
        live_function(cx, API, func)?;
        config_timeout_us(API, cfg)?;
        // One host pointer per parameter needs the kernel's parameter list, which a kernel of
        // the sim kernel ABI does not carry (as aclrtFunctionGetParamCount reports).
        Err(AclError::rt_invalid(format!(
            "{API}: the kernel has no parameter metadata (the sim kernel ABI takes one argument block); launch it with aclrtLaunchKernelWithConfig or aclrtLaunchKernelWithHostArgs"
        )))
    }
}

/// `struct dim3 { uint32_t x, y, z; }`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Dim3 {
    /// X extent.
    pub x: u32,
    /// Y extent.
    pub y: u32,
    /// Z extent.
    pub z: u32,
}

impl crate::log::TraceArg for Dim3 {
    fn trace(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{{{}, {}, {}}}", self.x, self.y, self.z);
    }
}

/// The SIMT launches' answer: the software NPU runs one call per block and has no SIMT
/// threads.
fn no_simt(api: &str) -> AclError {
    AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!("{api}: SIMT launches are not supported: the software NPU's sim kernel ABI runs one call per block, with no SIMT threads"),
    )
}

export! {
    /// `aclError aclrtLaunchSIMTKernelWithArgsArray(void *func, dim3 gridDim, dim3 blockDim, size_t dynUbufSize, aclrtStream stream, aclrtLaunchKernelCfg *cfg, void **args);`
    pub unsafe fn aclrtLaunchSIMTKernelWithArgsArray(
        func: *mut c_void,
        grid_dim: Dim3,
        block_dim: Dim3,
        dyn_ubuf_size: usize,
        stream: *mut c_void,
        cfg: *mut AclrtLaunchKernelCfg,
        args: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: func is NULL")));
        }
        let _ = (grid_dim, block_dim, dyn_ubuf_size, stream, cfg, args);
        live_function(cx, API, func)?;
        Err(no_simt(API))
    }
}

export! {
    /// `aclError aclrtLaunchSIMTKernelWithHostArgs(void *func, dim3 gridDim, dim3 blockDim, size_t dynUbufSize, aclrtStream stream, aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize, aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum);`
    pub unsafe fn aclrtLaunchSIMTKernelWithHostArgs(
        func: *mut c_void,
        grid_dim: Dim3,
        block_dim: Dim3,
        dyn_ubuf_size: usize,
        stream: *mut c_void,
        cfg: *mut AclrtLaunchKernelCfg,
        host_args: *mut c_void,
        args_size: usize,
        place_holders: *mut AclrtPlaceHolderInfo,
        place_holder_num: usize,
    ) -> AclErrorCode |cx| {
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: func is NULL")));
        }
        if host_args.is_null() {
            return Err(AclError::invalid(format!("{API}: hostArgs is NULL")));
        }
        if args_size == 0 {
            return Err(AclError::invalid(format!("{API}: argsSize is 0")));
        }
        let _ = (grid_dim, block_dim, dyn_ubuf_size, stream, cfg, place_holders, place_holder_num);
        live_function(cx, API, func)?;
        Err(no_simt(API))
    }
}
