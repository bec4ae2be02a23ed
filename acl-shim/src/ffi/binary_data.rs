//! C exports of kernel binaries beyond files (§10 of the runtime surface sheet): loading from
//! bytes (`aclrtBinaryLoadFromData`; `aclrtCreateBinary` + `aclrtBinaryLoad`), AI CPU kernels
//! registered by entry name (`aclrtRegisterCpuFunc`), and the function queries.
//!
//! On the software NPU the bytes are a host shared object (the sim kernel ABI of
//! `acl/acl_sim.h`); the backend loads them from memory ([`hal::Loader::load_binary_data`]).
//! Function facts the backend does not keep (binary, name, AI CPU or not) are
//! [`crate::state::kernels`]'. The sim kernel ABI carries no parameter metadata, no tiling keys,
//! no separate device image and no SIMT threads; the calls that need them answer with CANN's
//! codes for a kernel without them.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::{c_char, c_void, CStr};

use super::kernel::{live_function, sim, untag, TAG_BINARY, TAG_FUNCTION};
use super::stream::{handle, to_ptr};
use super::{addr, put, Call};
use crate::codes::{ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE};
use crate::error::{AclError, Result};
use crate::state::kernels::{tables, BinMeta, BinaryDesc, FuncMeta};

/// `ACL_ERROR_RT_INVALID_DEVICE_FUNCTION`: no kernel is registered for the symbol.
const ACL_ERROR_RT_INVALID_DEVICE_FUNCTION: i32 = 107_044;
/// Tag of an `aclrtBinary` descriptor.
const TAG_DESC: u64 = 0xac5d << 48;

/// `aclrtBinaryLoadOption`: a type and a 16-byte value union (20 bytes, align 4).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtBinaryLoadOption {
    /// `aclrtBinaryLoadOptionType`.
    pub ty: u32,
    /// `aclrtBinaryLoadOptionValue`, as words.
    pub value: [u32; 4],
}

/// `aclrtBinaryLoadOptions` (a pointer to entries and their count).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtBinaryLoadOptionsData {
    /// The entries.
    pub options: *const AclrtBinaryLoadOption,
    /// Their number.
    pub num_opt: usize,
}

/// The magics `ACL_RT_BINARY_LOAD_OPT_MAGIC` accepts (AI Core, vector core, cube core).
const MAGICS: [u32; 3] = [0x4355_4245, 0x4141_5246, 0x4149_4343];

/// Checks `aclrtBinaryLoadFromData`'s options (§10.3); whether the binary is an AI CPU `.so`
/// (`cpuKernelMode` 2).
fn data_options(api: &str, options: *const AclrtBinaryLoadOptionsData) -> Result<bool> {
    if options.is_null() {
        return Ok(false);
    }
    let o = super::in_ptr(api, "options", options)?;
    // SAFETY: non-null and aligned (checked); the caller passes a valid options struct.
    let o = unsafe { o.read() };
    if o.options.is_null() {
        return Err(AclError::rt_invalid(format!("{api}: options->options is NULL")));
    }
    if o.num_opt > 16 || !o.options.is_aligned() {
        return Err(AclError::rt_invalid(format!(
            "{api}: options->numOpt {} is out of range (or options->options is misaligned)",
            o.num_opt
        )));
    }
    // SAFETY: non-null, aligned, and the caller guarantees `numOpt` entries.
    let entries = unsafe { std::slice::from_raw_parts(o.options, o.num_opt) };
    let mut cpu = false;
    for (i, e) in entries.iter().enumerate() {
        let v = e.value[0];
        match e.ty {
            1 if v > 1 => {
                return Err(AclError::rt_invalid(format!("{api}: options->options[{i}].value.isLazyLoad is {v}, not 0 or 1")))
            }
            1 => {}
            2 if !MAGICS.contains(&v) => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: options->options[{i}].value.magic {v:#x} is not an ACL_RT_BINARY_MAGIC_ELF_* value"
                )))
            }
            2 => {}
            3 if v == 2 => cpu = true,
            3 => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: options->options[{i}].value.cpuKernelMode {} is not 2 (the only mode of a binary given as data)",
                    v as i32
                )))
            }
            t => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: options->options[{i}].type {t} is not an aclrtBinaryLoadOptionType"
                )))
            }
        }
    }
    Ok(cpu)
}

/// Loads `data` as a binary; its tagged handle.
fn load_bytes(cx: &Call, api: &str, data: &[u8], cpu: bool) -> Result<u64> {
    let rt = cx.rt()?;
    let id = sim(&rt, api)?.load_binary_data(data).map_err(|e| {
        AclError::rt_invalid(format!("{api}: cannot load the {} bytes as a kernel binary: {e}", data.len()))
    })?;
    let h = TAG_BINARY | id;
    tables().binaries.insert(h, BinMeta { cpu_mode: cpu });
    Ok(h)
}

export! {
    /// `aclError aclrtBinaryLoadFromData(const void *data, size_t length, const aclrtBinaryLoadOptions *options, aclrtBinHandle *binHandle);`
    pub unsafe fn aclrtBinaryLoadFromData(
        data: *const c_void,
        length: usize,
        options: *const AclrtBinaryLoadOptionsData,
        bin_handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("binHandle", bin_handle)?;
        if data.is_null() {
            return Err(AclError::invalid(format!("{API}: data is NULL")));
        }
        if length == 0 {
            return Err(AclError::rt_invalid(format!("{API}: length is 0")));
        }
        cx.size("length", length)?;
        let cpu = data_options(API, options)?;
        // SAFETY: non-null; the caller guarantees `length` readable bytes (checked to fit isize).
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) };
        put(out, to_ptr(load_bytes(cx, API, bytes, cpu)?));
        Ok(())
    }
}

export! {
    /// `aclrtBinary aclrtCreateBinary(const void *data, size_t dataLen);` — keeps the pointer:
    /// `data` must stay valid until `aclrtBinaryLoad` has run. NULL for NULL data.
    pub fn aclrtCreateBinary(data: *const c_void, data_len: usize) -> *mut c_void = std::ptr::null_mut(), |cx| {
        if data.is_null() {
            return Err(AclError::invalid(format!("{API}: data is NULL")));
        }
        let n = tables().add_desc(BinaryDesc { data: addr(data), len: data_len as u64 });
        Ok(to_ptr(TAG_DESC | n))
    }
}

fn desc_of(api: &str, binary: *mut c_void) -> Result<u64> {
    let d = untag(api, "binary", handle(binary), TAG_DESC)?;
    if !tables().descs.contains_key(&d) {
        return Err(AclError::new(
            ACL_ERROR_RT_INVALID_HANDLE,
            format!("{api}: binary {binary:p} was destroyed (aclrtDestroyBinary)"),
        ));
    }
    Ok(d)
}

export! {
    /// `aclError aclrtDestroyBinary(aclrtBinary binary);` — frees the descriptor only.
    pub fn aclrtDestroyBinary(binary: *mut c_void) -> AclErrorCode |cx| {
        let d = desc_of(API, binary)?;
        tables().descs.remove(&d);
        Ok(())
    }
}

export! {
    /// `aclError aclrtBinaryLoad(const aclrtBinary binary, aclrtBinHandle *binHandle);`
    pub unsafe fn aclrtBinaryLoad(binary: *mut c_void, bin_handle: *mut *mut c_void) -> AclErrorCode |cx| {
        let out = cx.out("binHandle", bin_handle)?;
        let d = desc_of(API, binary)?;
        cx.rt()?.current_device(API)?;
        let Some(desc) = tables().descs.get(&d).copied() else {
            return Err(AclError::new(ACL_ERROR_RT_INVALID_HANDLE, format!("{API}: binary {binary:p} was destroyed")));
        };
        if desc.len == 0 {
            return Err(AclError::rt_invalid(format!("{API}: the binary's dataLen is 0")));
        }
        // CAST: a length and an address the caller gave as `size_t` and a pointer.
        let len = usize::try_from(desc.len).map_err(|_| AclError::rt_invalid(format!("{API}: dataLen is too large")))?;
        // SAFETY: the caller's bytes, which aclrtCreateBinary's contract keeps valid until this
        // call has run.
        let bytes = unsafe { std::slice::from_raw_parts(desc.data as usize as *const u8, len) };
        put(out, to_ptr(load_bytes(cx, API, bytes, false)?));
        Ok(())
    }
}

/// A C string argument as UTF-8.
fn c_str<'a>(api: &str, name: &str, p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(AclError::invalid(format!("{api}: {name} is NULL")));
    }
    // SAFETY: non-null; the caller passes a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| AclError::invalid(format!("{api}: {name} is not valid UTF-8")))
}

export! {
    /// `aclError aclrtRegisterCpuFunc(const aclrtBinHandle handle, const char *funcName, const char *kernelName, aclrtFuncHandle *funcHandle);`
    pub unsafe fn aclrtRegisterCpuFunc(
        bin_handle: *mut c_void,
        func_name: *const c_char,
        kernel_name: *const c_char,
        func_handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("funcHandle", func_handle)?;
        let bin = untag(API, "handle", handle(bin_handle), TAG_BINARY)?;
        let entry = c_str(API, "funcName", func_name)?;
        let kernel = c_str(API, "kernelName", kernel_name)?;
        let rt = cx.rt()?;
        if !tables().binaries.get(&handle(bin_handle)).is_some_and(|b| b.cpu_mode) {
            return Err(AclError::rt_invalid(format!(
                "{API}: the binary was not loaded as an AI CPU binary (aclrtBinaryLoadFromData with cpuKernelMode 2)"
            )));
        }
        rt.current_device(API)?;
        let id = sim(&rt, API)?.binary_function(bin, entry).map_err(|e| match e.kind() {
            hal::ErrorKind::InvalidArgument => {
                AclError::rt_invalid(format!("{API}: the binary exports no entry function {entry:?}"))
            }
            _ => AclError::new(ACL_ERROR_RT_INVALID_HANDLE, format!("{API}: handle {bin_handle:p} is not loaded")),
        })?;
        tables().functions.insert(id, FuncMeta { binary: handle(bin_handle), name: kernel.to_owned(), cpu: true });
        put(out, to_ptr(TAG_FUNCTION | id));
        Ok(())
    }
}

export! {
    /// `aclError aclrtBinaryGetFunctionByEntry(aclrtBinHandle binHandle, uint64_t funcEntry, aclrtFuncHandle *funcHandle);`
    /// — a sim binary has no tiling keys, so no entry is found.
    pub unsafe fn aclrtBinaryGetFunctionByEntry(
        bin_handle: *mut c_void,
        func_entry: u64,
        func_handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        cx.out("funcHandle", func_handle)?;
        untag(API, "binHandle", handle(bin_handle), TAG_BINARY)?;
        cx.rt()?.current_device(API)?;
        Err(AclError::rt_invalid(format!(
            "{API}: the binary has no kernel with tiling key {func_entry} (kernels of the sim kernel ABI are found by name: aclrtBinaryGetFunction)"
        )))
    }
}

/// The runtime's facts of live function `func`.
fn meta(cx: &Call, api: &str, func: *mut c_void) -> Result<FuncMeta> {
    let f = live_function(cx, api, func)?;
    tables().functions.get(&f).cloned().ok_or_else(|| {
        AclError::new(ACL_ERROR_RT_INVALID_HANDLE, format!("{api}: funcHandle {func:p} is not a live kernel"))
    })
}

export! {
    /// `aclError aclrtFunctionGetBinary(const aclrtFuncHandle funcHandle, aclrtBinHandle *binHandle);`
    pub unsafe fn aclrtFunctionGetBinary(func: *mut c_void, bin_handle: *mut *mut c_void) -> AclErrorCode |cx| {
        if func.is_null() || bin_handle.is_null() {
            return Err(AclError::rt_invalid(format!("{API}: funcHandle or binHandle is NULL")));
        }
        let out = cx.out("binHandle", bin_handle)?;
        let m = meta(cx, API, func)?;
        put(out, to_ptr(m.binary));
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetFunctionName(aclrtFuncHandle funcHandle, uint32_t maxLen, char *name);`
    pub unsafe fn aclrtGetFunctionName(func: *mut c_void, max_len: u32, name: *mut c_char) -> AclErrorCode |cx| {
        if name.is_null() {
            return Err(AclError::invalid(format!("{API}: name is NULL")));
        }
        let m = meta(cx, API, func)?;
        let need = m.name.len() + 1;
        if (max_len as usize) < need {
            return Err(AclError::rt_invalid(format!(
                "{API}: maxLen {max_len} is too small for the name {:?} ({need} bytes with its NUL)",
                m.name
            )));
        }
        // SAFETY: the caller's buffer holds `maxLen` bytes, at least `need` (checked).
        unsafe {
            std::ptr::copy_nonoverlapping(m.name.as_ptr(), name.cast::<u8>(), m.name.len());
            name.add(m.name.len()).write(0);
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetFunctionAttribute(aclrtFuncHandle funcHandle, aclrtFuncAttribute attrType, int64_t *attrValue);`
    pub unsafe fn aclrtGetFunctionAttribute(func: *mut c_void, attr_type: i32, attr_value: *mut i64) -> AclErrorCode |cx| {
        let out = cx.out("attrValue", attr_value)?;
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: funcHandle is NULL")));
        }
        let m = meta(cx, API, func)?;
        let v = match attr_type {
            // ACL_KERNEL_TYPE_AICPU (100) or ACL_KERNEL_TYPE_AICORE (0).
            1 => {
                if m.cpu {
                    100
                } else {
                    0
                }
            }
            2 if m.cpu => {
                return Err(AclError::rt_invalid(format!("{API}: an AI CPU kernel has no core ratio")))
            }
            // uint16_t[4]: [0] vector share 0, [1] cube share 1 (an AI Core kernel).
            2 => 1 << 16,
            // 0: normal scheduling (start on any free core).
            3 => 0,
            t => {
                return Err(AclError::rt_invalid(format!(
                    "{API}: attrType {t} is not an aclrtFuncAttribute (1 KERNEL_TYPE, 2 KERNEL_RATIO, 3 KERNEL_SCHED_MODE)"
                )))
            }
        };
        put(out, v);
        Ok(())
    }
}

/// The answer of the parameter queries for a kernel of the sim kernel ABI.
fn param_queries(cx: &Call, api: &str, func: *mut c_void) -> AclError {
    match meta(cx, api, func) {
        Err(e) => e,
        Ok(m) if m.cpu => AclError::new(
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            format!("{api}: AI CPU kernels have no parameter metadata"),
        ),
        Ok(m) => AclError::rt_invalid(format!(
            "{api}: kernel {:?} has no parameter metadata (the sim kernel ABI takes one argument block)",
            m.name
        )),
    }
}

export! {
    /// `aclError aclrtFunctionGetParamCount(const void *func, size_t *paramCount);`
    pub unsafe fn aclrtFunctionGetParamCount(func: *mut c_void, param_count: *mut usize) -> AclErrorCode |cx| {
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: func is NULL")));
        }
        cx.out("paramCount", param_count)?;
        Err(param_queries(cx, API, func))
    }
}

export! {
    /// `aclError aclrtFunctionGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset, size_t *paramSize);`
    pub unsafe fn aclrtFunctionGetParamInfo(
        func: *mut c_void,
        param_index: usize,
        param_offset: *mut usize,
        param_size: *mut usize,
    ) -> AclErrorCode |cx| {
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: func is NULL")));
        }
        if param_offset.is_null() && param_size.is_null() {
            return Err(AclError::invalid(format!("{API}: paramOffset and paramSize are both NULL")));
        }
        let _ = param_index;
        Err(param_queries(cx, API, func))
    }
}

export! {
    /// `aclError aclrtFunctionGetAvailDynUbufPerBlock(void *func, uint32_t flags, size_t *dynamicUbufSize);`
    /// — 0: kernels of the sim kernel ABI are not SIMT kernels.
    pub unsafe fn aclrtFunctionGetAvailDynUbufPerBlock(func: *mut c_void, flags: u32, size: *mut usize) -> AclErrorCode |cx| {
        let out = cx.out("dynamicUbufSize", size)?;
        if func.is_null() {
            return Err(AclError::invalid(format!("{API}: func is NULL")));
        }
        if flags != 0 {
            return Err(AclError::invalid(format!("{API}: flags must be 0 (got {flags})")));
        }
        meta(cx, API, func)?;
        put(out, 0);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetFuncBySymbol(const void *symbol, aclrtFuncHandle *funcHandle);` — no
    /// compiler registers `__global__` stubs with the software NPU.
    pub unsafe fn aclrtGetFuncBySymbol(symbol: *const c_void, func_handle: *mut *mut c_void) -> AclErrorCode |cx| {
        cx.out("funcHandle", func_handle)?;
        if symbol.is_null() {
            return Err(AclError::invalid(format!("{API}: symbol is NULL")));
        }
        cx.rt()?.current_device(API)?;
        Err(AclError::new(
            ACL_ERROR_RT_INVALID_DEVICE_FUNCTION,
            format!("{API}: no kernel is registered for symbol {symbol:p} (load kernels with aclrtBinaryLoadFromFile/FromData)"),
        ))
    }
}

/// The answer of the calls that need a kernel's device image, which the sim kernel ABI does not
/// have (a binary is a host shared object).
fn no_device_image(api: &str) -> AclError {
    AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!(
            "{api}: not supported: a binary of the software NPU is a host shared object with no device image"
        ),
    )
}

export! {
    /// `aclError aclrtBinaryGetDevAddress(const aclrtBinHandle binHandle, void **binAddr, size_t *binSize);`
    pub unsafe fn aclrtBinaryGetDevAddress(bin_handle: *mut c_void, bin_addr: *mut *mut c_void, bin_size: *mut usize) -> AclErrorCode |cx| {
        untag(API, "binHandle", handle(bin_handle), TAG_BINARY)?;
        if bin_addr.is_null() || bin_size.is_null() {
            return Err(AclError::rt_invalid(format!("{API}: binAddr or binSize is NULL")));
        }
        Err(no_device_image(API))
    }
}

export! {
    /// `aclError aclrtBinaryGetGlobal(aclrtBinHandle binHandle, const char *name, void **dptr, size_t *size);`
    pub unsafe fn aclrtBinaryGetGlobal(bin_handle: *mut c_void, name: *const c_char, dptr: *mut *mut c_void, size: *mut usize) -> AclErrorCode |cx| {
        untag(API, "binHandle", handle(bin_handle), TAG_BINARY)?;
        c_str(API, "name", name)?;
        if dptr.is_null() && size.is_null() {
            return Err(AclError::invalid(format!("{API}: dptr and size are both NULL")));
        }
        Err(no_device_image(API))
    }
}

export! {
    /// `aclError aclrtGetFunctionAddr(aclrtFuncHandle funcHandle, void **aicAddr, void **aivAddr);`
    pub unsafe fn aclrtGetFunctionAddr(func: *mut c_void, aic_addr: *mut *mut c_void, aiv_addr: *mut *mut c_void) -> AclErrorCode |cx| {
        if func.is_null() || aic_addr.is_null() || aiv_addr.is_null() {
            return Err(AclError::invalid(format!("{API}: funcHandle, aicAddr or aivAddr is NULL")));
        }
        meta(cx, API, func)?;
        Err(no_device_image(API))
    }
}

export! {
    /// `aclError aclrtGetFunctionSize(aclrtFuncHandle funcHandle, size_t *aicSize, size_t *aivSize);`
    pub unsafe fn aclrtGetFunctionSize(func: *mut c_void, aic_size: *mut usize, aiv_size: *mut usize) -> AclErrorCode |cx| {
        if func.is_null() || aic_size.is_null() || aiv_size.is_null() {
            return Err(AclError::rt_invalid(format!("{API}: funcHandle, aicSize or aivSize is NULL")));
        }
        meta(cx, API, func)?;
        Err(no_device_image(API))
    }
}

export! {
    /// `aclError aclrtBinarySetExceptionCallback(aclrtBinHandle binHandle, aclrtOpExceptionCallback callback, void *userData);`
    pub unsafe fn aclrtBinarySetExceptionCallback(
        bin_handle: *mut c_void,
        callback: *mut c_void,
        user_data: *mut c_void,
    ) -> AclErrorCode |cx| {
        untag(API, "binHandle", handle(bin_handle), TAG_BINARY)?;
        if callback.is_null() {
            return Err(AclError::invalid(format!("{API}: callback is NULL")));
        }
        let _ = user_data;
        Err(AclError::new(
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            format!("{API}: not supported: kernel faults of the software NPU are reported at the stream's synchronisation and by aclrtGetErrorVerbose"),
        ))
    }
}
