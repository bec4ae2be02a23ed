//! The exports of `acl/acl_base_rt.h` and the version queries of `acl/acl_rt.h`: element sizes,
//! fp16 conversions, data-buffer descriptors, the SoC name and the package and API versions.
//!
//! Also the application log (`aclAppLog`, whose formatting half is C: `app_log.c`).
//!
//! Owns the `aclDataBuffer` descriptor (a heap object the caller creates and destroys; it never
//! owns the memory it describes) and nothing else: the conversions and element sizes are pure,
//! the SoC name comes from the runtime (or, before `aclInit`, from the software NPU's settings),
//! the CANN attributes are constant, and versions come from this crate and from the files of
//! installed CANN packages. None of
//! these calls needs `aclInit` or a device.

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};

use hal::SocProfile;

use super::{out_ptr, put, Out};
use crate::codes::*;
use crate::error::{AclError, Result};

/// `ACL_MAJOR_VERSION`, `ACL_MINOR_VERSION`, `ACL_PATCH_VERSION` of the headers.
const API_VERSION: (i32, i32, i32) = (1, 17, 0);

/// `ACL_PKG_VERSION_MAX_SIZE`: bytes of a version string buffer, the NUL included.
const PKG_VERSION_MAX: usize = 128;

/// `ACL_PKG_VERSION_PARTS_MAX_SIZE`: bytes of one version part, the NUL included.
const PKG_PART_MAX: usize = 64;

/// The version aclrs reports for the `runtime` package: its own.
const RUNTIME_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `size_t aclDataTypeSize(aclDataType dataType);` — CANN's table, including its 8 for the
/// FLOAT6/FLOAT4 types and for any unknown value.
pub fn data_type_size(data_type: i32) -> usize {
    match data_type {
        // ACL_DT_UNDEFINED, ACL_STRING
        -1 | 13 => 0,
        // INT8, UINT8, BOOL, INT4, UINT1, HIFLOAT8, FLOAT8_E5M2, FLOAT8_E4M3FN, FLOAT8_E8M0
        2 | 4 | 12 | 29 | 30 | 34..=37 => 1,
        // FLOAT16, INT16, UINT16, BF16
        1 | 6 | 7 | 27 => 2,
        // FLOAT, INT32, UINT32, COMPLEX32
        0 | 3 | 8 | 33 => 4,
        // COMPLEX128
        17 => 16,
        // INT64, UINT64, DOUBLE, COMPLEX64, the FLOAT6/FLOAT4 types and anything else
        _ => 8,
    }
}

/// fp16 bits to fp32, exact; exponent 31 is an ordinary exponent, as in CANN (so the
/// infinities and NaNs become 65536 times (1 + mantissa / 1024), with their sign).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    if exp == 0 {
        // Zero or subnormal: man * 2^-24, exact in f32 (at most 10 significant bits).
        // CAST: man < 1024 is exact in f32.
        let magnitude = man as f32 * f32::from_bits((127 - 24) << 23);
        return f32::from_bits(sign | magnitude.to_bits());
    }
    f32::from_bits(sign | ((exp + 127 - 15) << 23) | (man << 13))
}

/// fp32 to fp16 bits: round to nearest, ties to even; saturates to ±65504 (`0x7BFF`) for
/// magnitudes that round past it, for infinities and for NaNs, as CANN does.
pub fn f32_to_f16(f: f32) -> u16 {
    const MAX_FINITE: u16 = 0x7bff;
    let bits = f.to_bits();
    // CAST: the sign bit moved to bit 15 fits in u16.
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = (bits >> 23) & 0xff;
    let man = bits & 0x7f_ffff;
    if exp > 142 {
        // |f| >= 65536, infinities and NaNs.
        return sign | MAX_FINITE;
    }
    if exp >= 113 {
        // A normal half: its exponent is exp - 112 (1..=30); 13 mantissa bits are dropped.
        let half = ((exp - 112) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        let up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
        let rounded = half + u32::from(up);
        // A carry out of the mantissa moves into the exponent, which is the right encoding;
        // past 30 it would be the infinity pattern, so saturate instead.
        return sign | u16::try_from(rounded).map_or(MAX_FINITE, |r| r.min(MAX_FINITE));
    }
    if exp == 0 {
        // Zero and f32 subnormals (below 2^-126) are far below the smallest half.
        return sign;
    }
    // A half subnormal (or zero): the value in units of 2^-24 is full * 2^(exp - 126), with
    // exp - 126 in -125..=-14.
    let full = man | 0x80_0000;
    let shift = 126 - exp;
    if shift > 24 {
        // Below 2^-25 (half a unit): rounds to zero.
        return sign;
    }
    let q = full >> shift;
    let rest = full & ((1 << shift) - 1);
    let halfway = 1 << (shift - 1);
    let up = rest > halfway || (rest == halfway && q & 1 == 1);
    // CAST: q is at most 2^10 (shift >= 14), plus one: fits in u16.
    sign | (q + u32::from(up)) as u16
}

export! {
    /// `size_t aclDataTypeSize(aclDataType dataType);` — 0 for an unknown type.
    pub fn aclDataTypeSize(data_type: i32) -> usize = 0, |cx| {
        Ok(data_type_size(data_type))
    }
}

export! {
    /// `float aclFloat16ToFloat(aclFloat16 value);`
    pub fn aclFloat16ToFloat(value: u16) -> f32 = f32::NAN, |cx| {
        Ok(f16_to_f32(value))
    }
}

export! {
    /// `aclFloat16 aclFloatToFloat16(float value);`
    pub fn aclFloatToFloat16(value: f32) -> u16 = 0x7e00, |cx| {
        Ok(f32_to_f16(value))
    }
}

/// `struct aclDataBuffer`: the address and size of a block the caller owns.
#[derive(Debug)]
#[repr(C)]
pub struct DataBuffer {
    data: *mut c_void,
    length: u64,
}

export! {
    /// `aclDataBuffer *aclCreateDataBuffer(void *data, size_t size);` — any (data, size) pair.
    pub fn aclCreateDataBuffer(data: *mut c_void, size: usize) -> *mut DataBuffer = std::ptr::null_mut(), |cx| {
        // CAST: usize fits in u64 on every supported host.
        Ok(Box::into_raw(Box::new(DataBuffer { data, length: size as u64 })))
    }
}

export! {
    /// `aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer);`
    pub unsafe fn aclDestroyDataBuffer(data_buffer: *const DataBuffer) -> AclErrorCode |cx| {
        let p = cx.input("dataBuffer", data_buffer)?;
        // SAFETY: non-null and aligned (checked); the caller passes a descriptor from
        // aclCreateDataBuffer (a `Box` leaked there) and never uses it again, per the API.
        drop(unsafe { Box::from_raw(p.cast_mut()) });
        Ok(())
    }
}

export! {
    /// `aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size);`
    pub unsafe fn aclUpdateDataBuffer(data_buffer: *mut DataBuffer, data: *mut c_void, size: usize) -> AclErrorCode |cx| {
        let p = cx.out("dataBuffer", data_buffer)?;
        // CAST: usize fits in u64 on every supported host.
        put(p, DataBuffer { data, length: size as u64 });
        Ok(())
    }
}

/// Reads a descriptor, or `None` for NULL.
///
/// # Safety
///
/// `p` is NULL or a live descriptor from `aclCreateDataBuffer`.
unsafe fn read_buffer(p: *const DataBuffer) -> Option<(*mut c_void, u64)> {
    // SAFETY: per this function's contract.
    unsafe { p.as_ref() }.map(|b| (b.data, b.length))
}

export! {
    /// `void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer);` — NULL for NULL.
    pub unsafe fn aclGetDataBufferAddr(data_buffer: *const DataBuffer) -> *mut c_void = std::ptr::null_mut(), |cx| {
        // SAFETY: the caller passes NULL or a descriptor from aclCreateDataBuffer, per the API.
        Ok(unsafe { read_buffer(data_buffer) }.map_or(std::ptr::null_mut(), |(data, _)| data))
    }
}

export! {
    /// `uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer);` — truncated; 0 for NULL.
    pub unsafe fn aclGetDataBufferSize(data_buffer: *const DataBuffer) -> u32 = 0, |cx| {
        // SAFETY: the caller passes NULL or a descriptor from aclCreateDataBuffer, per the API.
        // CAST: the documented truncation to 32 bits.
        Ok(unsafe { read_buffer(data_buffer) }.map_or(0, |(_, len)| len as u32))
    }
}

export! {
    /// `size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer);` — 0 for NULL.
    pub unsafe fn aclGetDataBufferSizeV2(data_buffer: *const DataBuffer) -> usize = 0, |cx| {
        // SAFETY: the caller passes NULL or a descriptor from aclCreateDataBuffer, per the API.
        // CAST: the length was a usize when it was stored.
        Ok(unsafe { read_buffer(data_buffer) }.map_or(0, |(_, len)| len as usize))
    }
}

/// The `tracing` target of the application's own log lines (`aclAppLog`).
pub const APP_TARGET: &str = "ascendcl::app";

extern "C" {
    /// The C half of `aclAppLog` (`src/ffi/app_log.c`, a hidden symbol): formats the message
    /// and calls [`aclrsAppLogWrite`]. Declared without parameters: only its address is used.
    fn aclrs_app_log_format();
}

/// `void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line,
/// const char *fmt, ...);` — a trampoline: it jumps to the C half with the caller's registers
/// and stack untouched, so that function receives the original variadic call (stable Rust
/// cannot define a C variadic function; the export must be a Rust item).
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn aclAppLog() {
    // A tail jump: no register and no stack slot changes, so the call's arguments (and %al, the
    // count of vector registers a variadic call sets) reach the C function as the caller left
    // them, and it returns straight to the caller.
    core::arch::naked_asm!("jmp {f}", f = sym aclrs_app_log_format)
}

/// `void aclAppLog(...)` on aarch64: the same tail jump as on x86_64.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn aclAppLog() {
    // A tail branch: x0-x7, v0-v7, the stack and the link register are untouched.
    core::arch::naked_asm!("b {f}", f = sym aclrs_app_log_format)
}

/// A C string argument as text (empty for NULL, lossy for invalid UTF-8).
///
/// # Safety
///
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn text_of<'a>(p: *const c_char) -> std::borrow::Cow<'a, str> {
    if p.is_null() {
        return std::borrow::Cow::Borrowed("");
    }
    // SAFETY: non-null (checked) and NUL-terminated per this function's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy()
}

export! {
    /// `void aclrsAppLogWrite(aclLogLevel level, const char *func, const char *file, uint32_t line,
    /// const char *text);` — writes one application log line, `[file:line] func: text`, at `level`
    /// (`ACL_DEBUG` 0 … `ACL_ERROR` 3; another value is written at ERROR and named). NULL `text`
    /// writes nothing. `aclAppLog` ends here after formatting.
    pub unsafe fn aclrsAppLogWrite(level: i32, func: *const c_char, file: *const c_char, line: u32, text: *const c_char) -> () = (), |cx| {
        if text.is_null() {
            return Ok(());
        }
        crate::log::init();
        // SAFETY: the caller passes NULL or NUL-terminated strings, per the API.
        let (func, file, text) = unsafe { (text_of(func), text_of(file), text_of(text)) };
        let file = file.rsplit('/').next().unwrap_or_default();
        match level {
            0 => tracing::debug!(target: APP_TARGET, "[{file}:{line}] {func}: {text}"),
            1 => tracing::info!(target: APP_TARGET, "[{file}:{line}] {func}: {text}"),
            2 => tracing::warn!(target: APP_TARGET, "[{file}:{line}] {func}: {text}"),
            3 => tracing::error!(target: APP_TARGET, "[{file}:{line}] {func}: {text}"),
            _ => tracing::error!(target: APP_TARGET, "(level {level}) [{file}:{line}] {func}: {text}"),
        }
        Ok(())
    }
}

/// The SoC name of `soc` as a static C string.
fn soc_c_name(soc: SocProfile) -> &'static CStr {
    match soc {
        SocProfile::A2 => c"Ascend910B1",
        SocProfile::A3 => c"Ascend910_9391",
        SocProfile::Ascend950 => c"Ascend950PR",
    }
}

/// The SoC profile of the devices: the runtime's, or before `aclInit` the one the software NPU
/// is configured with (every backend takes its profile from those settings).
fn current_soc(cx: &super::Call, api: &str) -> Result<SocProfile> {
    if let Ok(rt) = cx.rt() {
        return Ok(rt.soc());
    }
    hal_sim::SimConfig::from_env()
        .map(|c| c.soc)
        .map_err(|e| AclError::invalid(format!("{api}: the software NPU's settings are invalid: {e}")))
}

export! {
    /// `const char *aclrtGetSocName();` — a static string; NULL (with a message) on failure.
    pub fn aclrtGetSocName() -> *const c_char = std::ptr::null(), |cx| {
        Ok(soc_c_name(current_soc(cx, API)?).as_ptr())
    }
}

/// `ACL_CANN_ATTR_INF_NAN`, `ACL_CANN_ATTR_BF16`, `ACL_CANN_ATTR_JIT_COMPILE`.
const CANN_ATTRS: [i32; 3] = [0, 1, 2];

/// The CANN attributes available, in `aclCannAttr` order: Inf/NaN overflow mode and bf16 on
/// every profile the software NPU has (A2, A3, 950); no JIT operator compiler.
static CANN_ATTRS_AVAILABLE: [i32; 2] = [0, 1];

export! {
    /// `aclError aclGetCannAttributeList(const aclCannAttr **cannAttrList, size_t *num);` — a
    /// static array of the available attributes.
    pub unsafe fn aclGetCannAttributeList(list: *mut *const i32, num: *mut usize) -> AclErrorCode |cx| {
        let list = cx.out("cannAttrList", list)?;
        let num = cx.out("num", num)?;
        put(list, CANN_ATTRS_AVAILABLE.as_ptr());
        put(num, CANN_ATTRS_AVAILABLE.len());
        Ok(())
    }
}

export! {
    /// `aclError aclGetCannAttribute(aclCannAttr cannAttr, int32_t *value);` — 1 when available.
    pub unsafe fn aclGetCannAttribute(attr: i32, value: *mut i32) -> AclErrorCode |cx| {
        if !CANN_ATTRS.contains(&attr) {
            return Err(AclError::invalid(format!(
                "{API}: cannAttr {attr} is not an aclCannAttr (ACL_CANN_ATTR_INF_NAN 0, _BF16 1, _JIT_COMPILE 2)"
            )));
        }
        let out = cx.out("value", value)?;
        put(out, i32::from(CANN_ATTRS_AVAILABLE.contains(&attr)));
        Ok(())
    }
}

/// A NUL-terminated C string argument as UTF-8.
fn c_str<'a>(api: &str, what: &str, p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(AclError::invalid(format!("{api}: {what} is NULL")));
    }
    // SAFETY: non-null (checked); the caller passes a NUL-terminated string per the API.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| AclError::invalid(format!("{api}: {what} is not valid UTF-8")))
}

/// The text after `Version=` on the first line of `file` that has it, trimmed.
fn version_in(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|l| l.find("Version=").map(|at| l[at + "Version=".len()..].trim().to_owned()))
}

/// Where package `pkg`'s `version.info` would be: under the directory `/etc/ascend_install.info`
/// names for `driver` and `firmware`, else under `$ASCEND_HOME_PATH/share/info/`.
fn version_file(pkg: &str) -> Option<PathBuf> {
    let key = match pkg {
        "driver" => Some("Driver_Install_Path_Param="),
        "firmware" => Some("Firmware_Install_Path_Param="),
        _ => None,
    };
    let dir = match key {
        Some(key) => {
            let info = std::fs::read_to_string("/etc/ascend_install.info").ok()?;
            PathBuf::from(info.lines().find_map(|l| l.trim().strip_prefix(key))?.trim())
        }
        None => std::fs::canonicalize(std::env::var_os("ASCEND_HOME_PATH")?).ok()?.join("share/info"),
    };
    Some(dir.join(pkg).join("version.info"))
}

/// The version string of package `pkg`: aclrs's own for `runtime`, else from the package's
/// `version.info` (trying `-` and `_` spelled the other way too).
///
/// # Errors
///
/// `ACL_ERROR_INVALID_FILE` when no such file or no `Version=` line is found;
/// `ACL_ERROR_INTERNAL_ERROR` for a version of 128 bytes or more.
fn package_version(api: &str, pkg: &str) -> Result<String> {
    if pkg == "runtime" {
        return Ok(RUNTIME_VERSION.to_owned());
    }
    let missing = || {
        AclError::new(
            ACL_ERROR_INVALID_FILE,
            format!(
                "{api}: no version of package {pkg:?}: no Version= line in its version.info (under \
                 $ASCEND_HOME_PATH/share/info/, or for driver and firmware the directory \
                 /etc/ascend_install.info names)"
            ),
        )
    };
    if pkg.is_empty() || pkg.contains('/') || pkg == "." || pkg == ".." {
        return Err(missing());
    }
    let mut names = vec![pkg.to_owned()];
    if pkg.contains('-') {
        names.push(pkg.replace('-', "_"));
    } else if pkg.contains('_') {
        names.push(pkg.replace('_', "-"));
    }
    let version = names.iter().find_map(|n| version_in(&version_file(n)?)).ok_or_else(missing)?;
    if version.len() >= PKG_VERSION_MAX {
        return Err(AclError::new(
            ACL_ERROR_INTERNAL_ERROR,
            format!("{api}: the version of package {pkg:?} is {} bytes, more than 127", version.len()),
        ));
    }
    Ok(version)
}

/// Splits off the leading decimal digits of `s` as a number.
fn leading_number(s: &str) -> Option<(i64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// Strips at most one separator (`-` or `.`) from the front of `s`.
fn one_separator(s: &str) -> &str {
    s.strip_prefix(['-', '.']).unwrap_or(s)
}

/// The ordering number of a version: `MAJOR*10000000 + MINOR*100000 + PATCH*1000`, minus 300,
/// 200 or 100 for an alpha, beta or rc suffix, plus the suffix's number; `None` when the
/// version has another form or the number does not fit an `int32_t`.
pub fn version_number(version: &str) -> Option<i32> {
    let (major, rest) = leading_number(version)?;
    let (minor, rest) = leading_number(rest.strip_prefix('.')?)?;
    let (patch, rest) = leading_number(rest.strip_prefix('.')?)?;
    let base = major.checked_mul(10_000_000)? + minor.checked_mul(100_000)? + patch.checked_mul(1000)?;
    let value = if rest.is_empty() {
        base
    } else {
        let suffix = one_separator(rest).to_ascii_lowercase();
        let (offset, after) = [("alpha", 300), ("beta", 200), ("rc", 100)]
            .iter()
            .find_map(|(kw, off)| suffix.strip_prefix(kw).map(|a| (*off, a.to_owned())))?;
        let after = one_separator(&after);
        let n = if after.is_empty() {
            0
        } else {
            match leading_number(after)? {
                (n, "") => n,
                _ => return None,
            }
        };
        base - offset + n
    };
    i32::try_from(value).ok()
}

/// Copies `s` and a NUL into the C buffer `out` of `cap` bytes (`s` is shorter, checked by the
/// caller).
///
/// # Safety
///
/// `out` is valid for writes of `cap` bytes.
unsafe fn write_c_string(out: Out<c_char>, cap: usize, s: &str) {
    debug_assert!(s.len() < cap);
    for (i, b) in s.bytes().chain([0]).enumerate() {
        // SAFETY: i < s.len() + 1 <= cap, and `out` has room for `cap` bytes (this function's
        // contract).
        // CAST: a byte as C's char, bit for bit.
        put(unsafe { out.add(i) }, b as c_char);
    }
}

export! {
    /// `aclError aclsysGetVersionStr(char *pkgName, char *versionStr);`
    pub unsafe fn aclsysGetVersionStr(pkg_name: *mut c_char, version_str: *mut c_char) -> AclErrorCode |cx| {
        let pkg = c_str(API, "pkgName", pkg_name)?;
        let out = out_ptr(API, "versionStr", version_str)?;
        let version = package_version(API, pkg)?;
        // SAFETY: the caller passes a buffer of ACL_PKG_VERSION_MAX_SIZE bytes, per the API;
        // the version is shorter (checked by package_version).
        unsafe { write_c_string(out, PKG_VERSION_MAX, &version) };
        Ok(())
    }
}

export! {
    /// `aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum);`
    pub unsafe fn aclsysGetVersionNum(pkg_name: *mut c_char, version_num: *mut i32) -> AclErrorCode |cx| {
        let pkg = c_str(API, "pkgName", pkg_name)?;
        let out = out_ptr(API, "versionNum", version_num)?;
        let version = package_version(API, pkg)?;
        let n = version_number(&version).ok_or_else(|| {
            AclError::new(
                ACL_ERROR_INTERNAL_ERROR,
                format!(
                    "{API}: the version {version:?} of package {pkg:?} is not MAJOR.MINOR.PATCH with an \
                     optional alpha, beta or rc suffix"
                ),
            )
        })?;
        put(out, n);
        Ok(())
    }
}

/// `aclCANNPackageVersion`: a version and its parts, each NUL-terminated (512 bytes).
#[derive(Debug)]
#[repr(C)]
pub struct PackageVersion {
    version: [c_char; PKG_VERSION_MAX],
    parts: [[c_char; PKG_PART_MAX]; 4],
    reserved: [c_char; PKG_VERSION_MAX],
}

/// The parts of a version as `aclsysGetCANNVersion` splits them: a `-suffix` becomes
/// `.suffix` without its own dots, then the string splits on `.` into major, minor, release and
/// patch (missing ones are `"0"`, extra ones are dropped); `None` for fewer than two parts.
pub fn version_parts(version: &str) -> Option<[String; 4]> {
    let joined = match version.split_once('-') {
        Some((head, suffix)) => format!("{head}.{}", suffix.replace('.', "")),
        None => version.to_owned(),
    };
    let parts: Vec<&str> = joined.split('.').collect();
    if parts.len() < 2 {
        return None;
    }
    Some(std::array::from_fn(|i| parts.get(i).map_or_else(|| "0".to_owned(), |p| (*p).to_owned())))
}

export! {
    /// `aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version);`
    pub unsafe fn aclsysGetCANNVersion(name: i32, version: *mut PackageVersion) -> AclErrorCode |cx| {
        let pkg = match name {
            0 | 1 => "runtime",
            2 => "bisheng-compiler",
            3 => "hccl",
            4 => "oam-tools",
            5 | 6 => "ops-legacy",
            7 => "driver",
            _ => {
                return Err(AclError::invalid(format!(
                    "{API}: name {name} is not an aclCANNPackageName (0-7)"
                )))
            }
        };
        let out = out_ptr(API, "version", version)?;
        let text = package_version(API, pkg)?;
        let parts = version_parts(&text).ok_or_else(|| {
            AclError::new(
                ACL_ERROR_INVALID_FILE,
                format!("{API}: the version {text:?} of package {pkg:?} has fewer than two parts"),
            )
        })?;
        if let Some(p) = parts.iter().find(|p| p.len() >= PKG_PART_MAX) {
            return Err(AclError::new(
                ACL_ERROR_INTERNAL_ERROR,
                format!("{API}: the version part {p:?} of package {pkg:?} is longer than 63 bytes"),
            ));
        }
        let mut filled = PackageVersion {
            version: [0; PKG_VERSION_MAX],
            parts: [[0; PKG_PART_MAX]; 4],
            reserved: [0; PKG_VERSION_MAX],
        };
        for (dst, src) in filled.version.iter_mut().zip(text.bytes()) {
            // CAST: a byte reinterpreted as a C char.
            *dst = src as c_char;
        }
        for (part, src) in filled.parts.iter_mut().zip(&parts) {
            for (dst, b) in part.iter_mut().zip(src.bytes()) {
                // CAST: a byte reinterpreted as a C char.
                *dst = b as c_char;
            }
        }
        put(out, filled);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);`
    pub unsafe fn aclrtGetVersion(major: *mut i32, minor: *mut i32, patch: *mut i32) -> AclErrorCode |cx| {
        let major = out_ptr(API, "majorVersion", major)?;
        let minor = out_ptr(API, "minorVersion", minor)?;
        let patch = out_ptr(API, "patchVersion", patch)?;
        put(major, API_VERSION.0);
        put(minor, API_VERSION.1);
        put(patch, API_VERSION.2);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp16_examples_of_the_fact_sheet() {
        assert_eq!(f32_to_f16(1.625), 0x3e80);
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7bff);
        assert_eq!(f32_to_f16(f32::NEG_INFINITY), 0xfbff);
        assert_eq!(f32_to_f16(-f32::NAN), 0xfbff);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0);
        assert_eq!(f32_to_f16(f32::from_bits(2f32.powi(-25).to_bits() + 1)), 1);
        assert_eq!(f16_to_f32(0x7c00), 65536.0);
        assert_eq!(f16_to_f32(0xfc00), -65536.0);
        assert_eq!(f16_to_f32(0x7e00), 98304.0);
        assert_eq!(f16_to_f32(0x7fff), 131_008.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
    }

    #[test]
    fn every_finite_half_round_trips() {
        for h in 0..=u16::MAX {
            if (h >> 10) & 0x1f != 0x1f {
                assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#06x}");
            }
        }
    }

    #[test]
    fn version_numbers_order_releases() {
        assert_eq!(version_number("9.0.0"), Some(90_000_000));
        assert_eq!(version_number("9.0.0-rc.1"), Some(89_999_901));
        assert_eq!(version_number("8.5.0-alpha.2"), Some(80_499_702));
        assert_eq!(version_number("9.0.0beta1"), Some(89_999_801));
        assert_eq!(version_number("9.0.0-RC"), Some(89_999_900));
        assert_eq!(version_number("0.1.0"), Some(100_000));
        for bad in ["9.0", "9.0.0-final", "9.0.0--rc1", "9.0.0-rc1x", "x.0.0", "999.0.0", "9.0.0-rc.-1"] {
            assert_eq!(version_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn version_parts_follow_cann() {
        assert_eq!(version_parts("9.0.0-rc.1").map(|p| p.join("|")), Some("9|0|0|rc1".to_owned()));
        assert_eq!(version_parts("8.5").map(|p| p.join("|")), Some("8|5|0|0".to_owned()));
        assert_eq!(version_parts("8"), None);
    }

    #[test]
    fn soc_names_match_the_profiles() {
        for soc in [SocProfile::A2, SocProfile::A3, SocProfile::Ascend950] {
            assert_eq!(soc_c_name(soc).to_str(), Ok(soc.soc_name()));
        }
    }

    #[test]
    fn data_buffer_layout_is_cann_s() {
        assert_eq!(std::mem::size_of::<DataBuffer>(), 16);
        assert_eq!(std::mem::size_of::<PackageVersion>(), 512);
        assert_eq!(std::mem::align_of::<PackageVersion>(), 1);
    }
}
