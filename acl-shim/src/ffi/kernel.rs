//! C exports of kernel binaries and launches on the software NPU (the sim kernel ABI of
//! `acl/acl_sim.h`): load a host shared object, find a kernel, launch it on a stream.
//!
//! Binary and function handles are opaque numbers (never dereferenced). Launch arguments are
//! copied here, at launch, so the caller may reuse its buffer as soon as the call returns.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::{c_char, c_void, CStr};
use std::os::unix::ffi::OsStrExt;

use super::stream::{handle, to_ptr};
use super::{in_ptr, put, size, Call};
use crate::error::{AclError, Result};
use crate::runtime::Runtime;

pub(crate) const TAG_BINARY: u64 = 0xac5b << 48;
pub(crate) const TAG_FUNCTION: u64 = 0xac5f << 48;
const TAG_MASK: u64 = 0xffff << 48;
/// `ACL_ERROR_RT_KERNEL_LOOKUP`: the binary has no such kernel.
const ACL_ERROR_RT_KERNEL_LOOKUP: i32 = 507_027;

/// `aclrtBinaryLoadOptions`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtBinaryLoadOptions {
    /// `aclrtBinaryLoadOption *options` (20-byte entries).
    pub options: *mut c_void,
    /// Number of entries.
    pub num_opt: usize,
}

/// `aclrtLaunchKernelAttr`: an id and a 16-byte value union.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtLaunchKernelAttr {
    /// `aclrtLaunchKernelAttrId`.
    pub id: u32,
    /// `aclrtLaunchKernelAttrValue`, as words.
    pub value: [u32; 4],
}

/// `aclrtLaunchKernelCfg`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtLaunchKernelCfg {
    /// `aclrtLaunchKernelAttr *attrs`.
    pub attrs: *mut AclrtLaunchKernelAttr,
    /// Number of attributes.
    pub num_attrs: usize,
}

/// `aclrtPlaceHolderInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtPlaceHolderInfo {
    /// Where in the argument bytes the address goes.
    pub addr_offset: u32,
    /// Which argument byte the address points to.
    pub data_offset: u32,
}

pub(crate) fn sim<'a>(rt: &'a Runtime, api: &str) -> Result<&'a dyn hal::Loader> {
    rt.backend().loader(api)
}

pub(crate) fn untag(api: &str, what: &str, h: u64, tag: u64) -> Result<u64> {
    if h == 0 {
        return Err(AclError::invalid(format!("{api}: {what} is NULL")));
    }
    if h & TAG_MASK != tag {
        // Never made by this runtime: the code of a handle that is not live (as a destroyed one).
        return Err(AclError::new(
            crate::codes::ACL_ERROR_RT_INVALID_HANDLE,
            format!("{api}: {what} {h:#x} is not a {what} of this runtime (never created)"),
        ));
    }
    Ok(h & !TAG_MASK)
}

export! {
    /// `aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions *options, aclrtBinHandle *binHandle);`
    pub unsafe fn aclrtBinaryLoadFromFile(
        bin_path: *const c_char,
        options: *mut AclrtBinaryLoadOptions,
        bin_handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("binHandle", bin_handle)?;
        if bin_path.is_null() {
            return Err(AclError::invalid(format!("{API}: binPath is NULL")));
        }
        if !options.is_null() {
            let o = cx.input("options", options)?;
            // SAFETY: non-null and aligned (checked); the caller passes a valid options struct.
            let o = unsafe { o.read() };
            if o.num_opt > 0 && o.options.is_null() {
                return Err(AclError::invalid(format!(
                    "{API}: options->numOpt is {} but options->options is NULL",
                    o.num_opt
                )));
            }
        }
        // SAFETY: non-null; the caller passes a NUL-terminated path.
        let path = unsafe { CStr::from_ptr(bin_path) };
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
        let rt = cx.rt()?;
        rt.current_device(API)?;
        let id = sim(&rt, API)?.load_binary(path.as_os_str().as_encoded_bytes()).map_err(|e| {
            AclError::rt_invalid(format!(
                "{API}: cannot load {} as a kernel binary (a host shared object on the software NPU): {e}",
                path.display()
            ))
        })?;
        put(out, to_ptr(TAG_BINARY | id));
        Ok(())
    }
}

export! {
    /// `aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName, aclrtFuncHandle *funcHandle);`
    pub unsafe fn aclrtBinaryGetFunction(
        bin_handle: *mut c_void,
        kernel_name: *const c_char,
        func_handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("funcHandle", func_handle)?;
        let bin = untag(API, "binHandle", handle(bin_handle), TAG_BINARY)?;
        if kernel_name.is_null() {
            return Err(AclError::invalid(format!("{API}: kernelName is NULL")));
        }
        // SAFETY: non-null; the caller passes a NUL-terminated name.
        let name = unsafe { CStr::from_ptr(kernel_name) }
            .to_str()
            .map_err(|_| AclError::invalid(format!("{API}: kernelName is not valid UTF-8")))?;
        let rt = cx.rt()?;
        let id = sim(&rt, API)?.binary_function(bin, name).map_err(|e| match e.kind() {
            hal::ErrorKind::InvalidArgument => AclError::new(
                ACL_ERROR_RT_KERNEL_LOOKUP,
                format!("{API}: the binary has no kernel named {name:?}"),
            ),
            _ => AclError::new(
                crate::codes::ACL_ERROR_RT_INVALID_HANDLE,
                format!("{API}: binHandle {bin_handle:p} is not loaded"),
            ),
        })?;
        crate::state::kernels::tables().functions.insert(
            id,
            crate::state::kernels::FuncMeta { binary: handle(bin_handle), name: name.to_owned(), cpu: false },
        );
        put(out, to_ptr(TAG_FUNCTION | id));
        Ok(())
    }
}

export! {
    /// `aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle);`
    pub fn aclrtBinaryUnLoad(bin_handle: *mut c_void) -> AclErrorCode |cx| {
        let bin = untag(API, "binHandle", handle(bin_handle), TAG_BINARY)?;
        let rt = cx.rt()?;
        sim(&rt, API)?.unload_binary(bin).map_err(|_| {
            AclError::new(
                crate::codes::ACL_ERROR_RT_INVALID_HANDLE,
                format!("{API}: binHandle {bin_handle:p} is not loaded (unloaded already?)"),
            )
        })?;
        crate::state::kernels::tables().forget_binary(handle(bin_handle));
        Ok(())
    }
}

/// Reads the launch attributes: the timeout in microseconds (0: none).
fn launch_timeout_us(api: &str, cfg: *mut AclrtLaunchKernelCfg) -> Result<u64> {
    if cfg.is_null() {
        return Ok(0);
    }
    let cfg = in_ptr(api, "cfg", cfg)?;
    // SAFETY: non-null and aligned (checked); the caller passes a valid cfg struct.
    let cfg = unsafe { cfg.read() };
    if cfg.num_attrs == 0 {
        return Ok(0);
    }
    if cfg.attrs.is_null() {
        return Err(AclError::invalid(format!(
            "{api}: cfg->numAttrs is {} but cfg->attrs is NULL",
            cfg.num_attrs
        )));
    }
    if cfg.num_attrs > 64 || !cfg.attrs.is_aligned() {
        return Err(AclError::invalid(format!(
            "{api}: cfg->numAttrs {} is out of range (or attrs misaligned)",
            cfg.num_attrs
        )));
    }
    // SAFETY: non-null, aligned, and the caller guarantees `numAttrs` entries.
    let attrs = unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.num_attrs) };
    let (mut secs, mut micros) = (None, None);
    for (i, a) in attrs.iter().enumerate() {
        match a.id {
            1..=6 | 9 => {}
            // CAST: the uint16 `timeout` member is the low half of the first word (little endian).
            7 => secs = Some(u64::from(a.value[0] as u16)),
            8 => micros = Some(u64::from(a.value[1]) << 32 | u64::from(a.value[0])),
            id => {
                return Err(AclError::invalid(format!(
                    "{api}: cfg->attrs[{i}].id {id} is not an aclrtLaunchKernelAttrId"
                )))
            }
        }
    }
    match (secs, micros) {
        (Some(_), Some(_)) => {
            Err(AclError::invalid(format!("{api}: TIMEOUT and TIMEOUT_US may not both be given")))
        }
        (Some(s), None) => Ok(s.saturating_mul(1_000_000)),
        (None, Some(us)) => Ok(us),
        (None, None) => Ok(0),
    }
}

/// Copies `size` argument bytes from `args` (NULL allowed only when `size` is 0).
fn copy_args(api: &str, name: &str, args: *const c_void, len: usize) -> Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if args.is_null() {
        return Err(AclError::invalid(format!("{api}: {name} is NULL but argsSize is {len}")));
    }
    size(api, "argsSize", len)?;
    // SAFETY: non-null; the caller guarantees `len` readable bytes (checked to fit isize).
    Ok(unsafe { std::slice::from_raw_parts(args.cast::<u8>(), len) }.to_vec())
}

/// The backend's function id of the live function handle `func`.
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` for NULL; `ACL_ERROR_RT_INVALID_HANDLE` for a handle that is not a
/// live kernel function.
pub(crate) fn live_function(cx: &Call, api: &str, func: *mut c_void) -> Result<u64> {
    let f = untag(api, "funcHandle", handle(func), TAG_FUNCTION)?;
    let rt = cx.rt()?;
    if !sim(&rt, api)?.is_function(f) {
        return Err(AclError::new(
            crate::codes::ACL_ERROR_RT_INVALID_HANDLE,
            format!("{api}: funcHandle {func:p} is not a live kernel (its binary was unloaded?)"),
        ));
    }
    Ok(f)
}

/// Queues a launch of `func` over `blocks` blocks with `args` (the launch's own copy) on
/// `stream`, and notes the kernel for the stream's failure record.
pub(crate) fn launch(
    cx: &Call,
    api: &str,
    func: *mut c_void,
    blocks: u32,
    args: Vec<u8>,
    timeout_us: u64,
    stream: *mut c_void,
) -> Result<()> {
    let f = untag(api, "funcHandle", handle(func), TAG_FUNCTION)?;
    if blocks == 0 {
        return Err(AclError::invalid(format!("{api}: numBlocks is 0")));
    }
    // One thread-local access for the runtime and the stream's lookup (no reference taken).
    cx.with_rt(|rt, l| {
        rt.with_submit_target_in(l, api, handle(stream), |_, s| {
            if !sim(rt, api)?.is_function(f) {
                return Err(AclError::new(
                    crate::codes::ACL_ERROR_RT_INVALID_HANDLE,
                    format!("{api}: funcHandle {func:p} is not a live kernel (its binary was unloaded?)"),
                ));
            }
            rt.launch_kernel(api, s, f, blocks, args, timeout_us)?;
            crate::state::task_fault::note_launch(s.device, s.queue, f);
            Ok(())
        })
    })
}

export! {
    /// `aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize, aclrtStream stream);`
    pub unsafe fn aclrtLaunchKernel(
        func: *mut c_void,
        num_blocks: u32,
        args_data: *const c_void,
        args_size: usize,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let args = copy_args(API, "argsData", args_data, args_size)?;
        launch(cx, API, func, num_blocks, args, 0, stream)
    }
}

export! {
    /// `aclError aclrtLaunchKernelV2(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize, aclrtLaunchKernelCfg *cfg, aclrtStream stream);`
    pub unsafe fn aclrtLaunchKernelV2(
        func: *mut c_void,
        num_blocks: u32,
        args_data: *const c_void,
        args_size: usize,
        cfg: *mut AclrtLaunchKernelCfg,
        stream: *mut c_void,
    ) -> AclErrorCode |cx| {
        let timeout = launch_timeout_us(API, cfg)?;
        let args = copy_args(API, "argsData", args_data, args_size)?;
        launch(cx, API, func, num_blocks, args, timeout, stream)
    }
}

export! {
    /// `aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize, aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum);`
    pub unsafe fn aclrtLaunchKernelWithHostArgs(
        func: *mut c_void,
        num_blocks: u32,
        stream: *mut c_void,
        cfg: *mut AclrtLaunchKernelCfg,
        host_args: *mut c_void,
        args_size: usize,
        place_holders: *mut AclrtPlaceHolderInfo,
        place_holder_num: usize,
    ) -> AclErrorCode |cx| {
        let timeout = launch_timeout_us(API, cfg)?;
        let mut args = copy_args(API, "hostArgs", host_args, args_size)?;
        if place_holder_num > 0 {
            let p = cx.input("placeHolderArray", place_holders)?;
            cx.size("placeHolderNum", place_holder_num)?;
            // SAFETY: non-null, aligned (checked); the caller guarantees `placeHolderNum` entries.
            let holders = unsafe { std::slice::from_raw_parts(p, place_holder_num) };
            // The launch's copy keeps its heap buffer when moved to the device, so an address
            // inside it stays valid for the kernel.
            // CAST: the address of the copy's bytes.
            let base = args.as_ptr() as usize as u64;
            for (i, h) in holders.iter().enumerate() {
                let (at, data) = (h.addr_offset as usize, h.data_offset as usize);
                if at.checked_add(8).is_none_or(|e| e > args.len()) || data >= args.len() {
                    return Err(AclError::invalid(format!(
                        "{API}: placeHolderArray[{i}] ({at}, {data}) points outside the {} argument bytes",
                        args.len()
                    )));
                }
                args[at..at + 8].copy_from_slice(&(base + data as u64).to_ne_bytes());
            }
        }
        launch(cx, API, func, num_blocks, args, timeout, stream)
    }
}
