//! The C ABI of `libascendcl`: the only module of this crate with `unsafe`.
//!
//! Every export is declared through one macro, `export!`, which writes the prologue every
//! export shares so that none can forget a part of it: `#[no_mangle] extern "C"`, the `API`
//! name (the export's own), the API trace of its arguments (`trace_args!`), the panic wall (a
//! panic becomes `ACL_ERROR_INTERNAL_ERROR` with a message, never an abort across the C
//! boundary), the refusal of a child forked after `aclInit`, the conversion of the body's
//! `Result` to an `aclError` in `status` (the one conversion point, which records the message of
//! a failure for `aclGetRecentErrMsg`), and a `Call` through which the body looks the runtime
//! up (`Call::rt`) and checks its pointers (`Call::out`, `Call::input`, `Call::size`).
//! A checked output pointer is an `Out`, the only thing `put` writes through. A unit test
//! fails when an `extern "C"` export appears outside the macro.
//!
//! Ownership: no handle is owned by C in this set of calls; pointers passed in are borrowed for
//! the call only. Raw host pointers become slices here and nowhere else, only for ordinary host
//! memory, and only after the runtime checked the range lies outside every runtime window.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime;

/// Declares one C export with the prologue every export shares (see the module docs).
///
/// Two forms. An export returning `aclError` has a body that returns `Result<()>`; the body
/// runs behind [`guard`] (log, fork check, panic wall, the one conversion to a code), after
/// `trace_args!` of every parameter:
///
/// ```text
/// export! {
///     /// `aclError aclrtGetDevice(int32_t *deviceId);`
///     pub unsafe fn aclrtGetDevice(device_id: *mut i32) -> AclErrorCode |cx| {
///         let out = cx.out("deviceId", device_id)?;
///         let d = cx.rt()?.current_device(API)?;
///         put(out, d as i32);
///         Ok(())
///     }
/// }
/// ```
///
/// An export returning anything else names the value it returns on a failure or a panic (the
/// documented default: NULL, 0) after `=`, and its body returns `Result<T>`; it runs behind
/// [`wall`] (panic wall; a failure's message is recorded for `aclGetRecentErrMsg`). These
/// exports read thread or descriptor state and write no API trace line; the ones that need the
/// runtime reach it through [`Call::rt`], which refuses a forked child:
///
/// ```text
/// export! {
///     /// `size_t aclrsMemSummary(char *buf, size_t len);`
///     pub unsafe fn aclrsMemSummary(buf: *mut c_char, len: usize) -> usize = 0, |cx| {
///         summary_into(cx, buf, len)
///     }
/// }
/// ```
///
/// Either way `API` (the export's name) and `cx` (its [`Call`]) are in scope in the body.
macro_rules! export {
    ($(#[$m:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> AclErrorCode |$cx:ident| $body:block) => {
        export!(@status [unsafe] $(#[$m])* $name($($arg: $ty),*) $cx $body);
    };
    ($(#[$m:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> AclErrorCode |$cx:ident| $body:block) => {
        export!(@status [] $(#[$m])* $name($($arg: $ty),*) $cx $body);
    };
    ($(#[$m:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $default:expr, |$cx:ident| $body:block) => {
        export!(@value [unsafe] $(#[$m])* $name($($arg: $ty),*) -> $ret = $default, $cx $body);
    };
    ($(#[$m:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $default:expr, |$cx:ident| $body:block) => {
        export!(@value [] $(#[$m])* $name($($arg: $ty),*) -> $ret = $default, $cx $body);
    };
    (@status [$($q:tt)*] $(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),*) $cx:ident $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub $($q)* extern "C" fn $name($($arg: $ty),*) -> $crate::ffi::AclErrorCode {
            const API: &str = stringify!($name);
            let trace = trace_args!($($arg),*);
            let $cx = $crate::ffi::Call::new(API);
            $crate::ffi::guard(API, trace, || {
                let $cx = &$cx;
                let _ = $cx;
                $body
            })
        }
    };
    (@value [$($q:tt)*] $(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $default:expr, $cx:ident $body:block) => {
        $(#[$m])*
        #[no_mangle]
        pub $($q)* extern "C" fn $name($($arg: $ty),*) -> $ret {
            const API: &str = stringify!($name);
            let $cx = $crate::ffi::Call::new(API);
            $crate::ffi::wall(API, $default, || {
                let $cx = &$cx;
                let _ = $cx;
                $body
            })
        }
    };
}

pub mod allocator;
pub mod async_copy;
pub mod base;
pub mod binary_data;
pub mod device_info;
pub mod exception;
pub mod kernel;
pub mod kernel_args;
pub mod memory;
pub mod memory_ext;
pub mod notify;
pub mod obs;
pub mod pool;
pub mod sanitize;
pub mod stream;
pub mod stream_ctl;
pub mod stubs;
pub mod vmm;

/// `aclError` as the C headers define it.
pub type AclErrorCode = i32;

thread_local! {
    /// The calling thread's last runtime error (`aclrtGetLastError`), set by every failed call.
    pub(crate) static LAST_ERROR: Cell<i32> = const { Cell::new(0) };
    /// The newest error message not yet fetched.
    static PENDING: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Storage behind the pointer the last `aclGetRecentErrMsg` returned.
    static RETURNED: RefCell<Option<CString>> = const { RefCell::new(None) };
}

pub(crate) fn record(e: &AclError) {
    let text = e.message().replace('\0', " ");
    let msg = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|l| l.set(e.code()));
    PENDING.with(|p| *p.borrow_mut() = Some(msg));
}

/// The single conversion point from a runtime result to an `aclError`; a failure is logged at
/// ERROR with its code and message (which names the call).
#[inline]
fn status(r: Result<()>) -> AclErrorCode {
    match r {
        Ok(()) => ACL_SUCCESS,
        Err(e) => failed(e),
    }
}

/// [`status`] of a failure: logs and records it (the thread's last error and message).
#[cold]
#[inline(never)]
fn failed(e: AclError) -> AclErrorCode {
    crate::log::api_error(e.code(), e.message());
    record(&e);
    e.code()
}

/// Runs `body` behind the panic wall and converts its result. `trace` is whether the API trace
/// is on, as `trace_args!` found it at the start of the call (which installed the log): then
/// the call is logged at DEBUG with the arguments `trace_args!` recorded and its result.
#[inline]
pub(crate) fn guard(api: &'static str, trace: bool, body: impl FnOnce() -> Result<()>) -> AclErrorCode {
    let code = match runtime::refuse_in_forked_child(api) {
        Err(e) => status(Err(e)),
        Ok(()) => match catch_unwind(AssertUnwindSafe(body)) {
            Ok(r) => status(r),
            Err(panic) => panicked(api, panic),
        },
    };
    if trace {
        crate::log::api_return(api, code);
    }
    code
}

/// [`guard`]'s code for a panic: `ACL_ERROR_INTERNAL_ERROR`, with the panic's message.
#[cold]
#[inline(never)]
fn panicked(api: &str, panic: Box<dyn std::any::Any + Send>) -> AclErrorCode {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    status(Err(AclError::new(ACL_ERROR_INTERNAL_ERROR, format!("{api}: internal error: {what}"))))
}

/// Runs `body` behind the panic wall for an export that returns a value instead of an
/// `aclError` ([`export!`]'s second form): its value, or `default` when it fails (its message
/// recorded for `aclGetRecentErrMsg`) or panics.
pub(crate) fn wall<T>(api: &'static str, default: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            record(&e);
            default
        }
        Err(_) => {
            record(&AclError::new(ACL_ERROR_INTERNAL_ERROR, format!("{api}: internal error")));
            default
        }
    }
}

/// The call in progress, handed to an export's body by [`export!`]: the runtime lookup and
/// the pointer checks, each failing with the documented code and a message naming the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    api: &'static str,
}

impl Call {
    /// The call named `api`.
    pub(crate) const fn new(api: &'static str) -> Self {
        Self { api }
    }

    /// The initialised runtime, held for the call ([`runtime::runtime_ref`]:
    /// `ACL_ERROR_UNINITIALIZE` before `aclInit`; no lock taken, no reference counted).
    #[inline]
    pub(crate) fn rt(&self) -> Result<runtime::Rt> {
        runtime::runtime_ref(self.api)
    }

    /// Runs `f` on the initialised runtime and the calling thread's state, with one
    /// thread-local access for both ([`runtime::with_runtime`]: the hot submissions).
    #[inline]
    pub(crate) fn with_rt<R>(
        &self,
        f: impl FnOnce(&runtime::Runtime, &crate::tls::Local) -> Result<R>,
    ) -> Result<R> {
        runtime::with_runtime(self.api, f)
    }

    /// Checks the output pointer parameter `name`: non-null and aligned for `T`.
    pub(crate) fn out<T>(&self, name: &str, p: *mut T) -> Result<Out<T>> {
        out_ptr(self.api, name, p)
    }

    /// Checks the input pointer parameter `name` the call reads a `T` through: non-null and
    /// aligned for `T`.
    pub(crate) fn input<T>(&self, name: &str, p: *const T) -> Result<*const T> {
        in_ptr(self.api, name, p)
    }

    /// Checks the size parameter `name`: at most `isize::MAX`.
    pub(crate) fn size(&self, name: &str, v: usize) -> Result<u64> {
        size(self.api, name, v)
    }
}

/// An output pointer that passed [`out_ptr`] (non-null, aligned for `T`): the only kind of
/// pointer [`put`] writes through.
#[derive(Debug)]
pub(crate) struct Out<T>(*mut T);

impl<T> Clone for Out<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Out<T> {}

impl<T> Out<T> {
    /// The `i`-th element of the output array this points at.
    ///
    /// # Safety
    ///
    /// The caller's contract gives an array of more than `i` elements of `T` here.
    pub(crate) unsafe fn add(self, i: usize) -> Self {
        // SAFETY: in bounds of the caller's array (this function's contract); an element of an
        // aligned array of `T` is aligned and non-null.
        Self(unsafe { self.0.add(i) })
    }
}

/// Registers (once per process) the `fork()` child handler that makes every call of a child
/// forked after `aclInit` fail ([`runtime::refuse_in_forked_child`]): called before
/// [`runtime::init`] by `aclInit` and by the safe API's `Runtime::init` (the runtime, below this
/// module, does not call up into it). Returns whether the handler is registered.
pub(crate) fn watch_forks() -> bool {
    extern "C" fn in_child() {
        runtime::note_forked();
    }
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        // SAFETY: registers a child handler only; `in_child` stores to an atomic and touches
        // nothing else, which is safe in the single-threaded child right after `fork()`.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) == 0 }
    })
}

/// Checks an output pointer: non-null and aligned for `T`.
pub(crate) fn out_ptr<T>(api: &str, name: &str, p: *mut T) -> Result<Out<T>> {
    check_ptr(api, name, p).map(Out)
}

/// Checks an input pointer: non-null and aligned for `T`.
pub(crate) fn in_ptr<T>(api: &str, name: &str, p: *const T) -> Result<*const T> {
    check_ptr(api, name, p.cast_mut()).map(<*mut T>::cast_const)
}

/// Checks a pointer: non-null and aligned for `T`.
fn check_ptr<T>(api: &str, name: &str, p: *mut T) -> Result<*mut T> {
    if p.is_null() {
        return Err(AclError::invalid(format!("{api}: {name} is NULL")));
    }
    if !p.is_aligned() {
        return Err(AclError::invalid(format!("{api}: {name} {p:p} is not aligned for its type")));
    }
    Ok(p)
}

/// Writes `value` through a checked output pointer.
pub(crate) fn put<T>(p: Out<T>, value: T) {
    // SAFETY: `p` passed `out_ptr` (non-null, aligned); the C caller guarantees it points to
    // writable storage of `T`, per the API's documented contract.
    unsafe { p.0.write(value) };
}

pub(crate) fn addr(p: *const c_void) -> u64 {
    // CAST: a pointer's address as a number; usize fits in u64 on every supported host.
    p as usize as u64
}

/// Checks a size argument ([`crate::copy::plan::object_size`]: at most `isize::MAX`).
pub(crate) fn size(api: &str, name: &str, v: usize) -> Result<u64> {
    crate::copy::plan::object_size(api, name, v)
}

export! {
    /// `aclError aclInit(const char *configPath);`
    pub unsafe fn aclInit(config_path: *const c_char) -> AclErrorCode |cx| {
        let path = if config_path.is_null() {
            None
        } else {
            // SAFETY: non-null (checked); the caller passes a NUL-terminated string per the API.
            let c = unsafe { CStr::from_ptr(config_path) };
            Some(c.to_str().map_err(|_| AclError::invalid("aclInit: configPath is not valid UTF-8"))?)
        };
        if !watch_forks() {
            return Err(AclError::new(ACL_ERROR_RT_INTERNAL_ERROR, "aclInit: pthread_atfork failed"));
        }
        let r = runtime::remember_init(runtime::init(path));
        crate::api::device::note_init(&r);
        r
    }
}

export! {
    /// `aclError aclFinalize();`
    pub fn aclFinalize() -> AclErrorCode |cx| {
        crate::api::finalize()
    }
}

export! {
    /// `const char *aclGetRecentErrMsg();` — the newest message, cleared once returned (NULL
    /// when there is none). It reads this thread's messages only: no runtime, no fork check (a
    /// forked child reads why its calls are refused).
    pub fn aclGetRecentErrMsg() -> *const c_char = std::ptr::null(), |cx| {
        let msg = PENDING.with(|p| p.borrow_mut().take());
        Ok(RETURNED.with(|r| {
            let mut r = r.borrow_mut();
            *r = msg;
            r.as_ref().map_or(std::ptr::null(), |m| m.as_ptr())
        }))
    }
}

export! {
    /// `aclError aclrtSetDevice(int32_t deviceId);`
    pub fn aclrtSetDevice(device_id: i32) -> AclErrorCode |cx| {
        cx.rt()?.set_device(device_id)
    }
}

export! {
    /// `aclError aclrtResetDevice(int32_t deviceId);`
    pub fn aclrtResetDevice(device_id: i32) -> AclErrorCode |cx| {
        cx.rt()?.reset_device(device_id, false)
    }
}

export! {
    /// `aclError aclrtResetDeviceForce(int32_t deviceId);`
    pub fn aclrtResetDeviceForce(device_id: i32) -> AclErrorCode |cx| {
        cx.rt()?.reset_device(device_id, true)
    }
}

export! {
    /// `aclError aclrtGetDevice(int32_t *deviceId);`
    pub unsafe fn aclrtGetDevice(device_id: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("deviceId", device_id)?;
        let d = cx.rt()?.current_device(API)?;
        // CAST: device ids are below MAX_DEVICES.
        put(out, d as i32);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetDeviceCount(uint32_t *count);`
    pub unsafe fn aclrtGetDeviceCount(count: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("count", count)?;
        put(out, cx.rt()?.device_count());
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetRunMode(aclrtRunMode *runMode);` — always `ACL_HOST` (1).
    pub unsafe fn aclrtGetRunMode(run_mode: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("runMode", run_mode)?;
        cx.rt()?;
        put(out, 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    /// `extern "C" fn`s of this folder that are callbacks handed to C, not exports.
    const CALLBACKS: [&str; 1] = ["in_child"];
    /// The naked trampolines (no Rust code runs in them).
    const NAKED: [&str; 1] = ["aclAppLog"];

    /// Every Rust source under `src/ffi`, with its text.
    fn sources() -> Vec<(PathBuf, String)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    out.push((path, text));
                }
            }
        }
        let mut out = Vec::new();
        walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi"), &mut out);
        out
    }

    /// `text` without the definition of `export!` (whose lines are the only exports written out)
    /// and without this test module.
    fn without_the_macro(text: &str) -> String {
        let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
        let Some(start) = text.find("macro_rules! export {") else { return text.to_owned() };
        let end = start + text[start..].find("\n}\n").unwrap();
        format!("{}{}", &text[..start], &text[end..])
    }

    /// The name after each `extern "C" fn ` of `line` (none for a function pointer type).
    fn named_extern_fns(line: &str) -> Vec<&str> {
        line.match_indices("extern \"C\" fn ")
            .map(|(i, m)| {
                let rest = &line[i + m.len()..];
                &rest[..rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len())]
            })
            .filter(|name| !name.is_empty())
            .collect()
    }

    #[test]
    fn every_export_goes_through_the_macro() {
        let files = sources();
        assert!(files.len() >= 9, "{} sources found under src/ffi", files.len());
        let mut exports = 0;
        for (path, text) in &files {
            exports += text.matches("\nexport! {").count();
            let mut naked = false;
            for (n, line) in without_the_macro(text).lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                let at = format!("{}:{}: {line}", path.display(), n + 1);
                // A naked trampoline (aclAppLog's tail jump to its C half) runs no Rust code, so
                // it has no prologue to forget; it must be declared naked right above.
                let trampoline = naked && NAKED.iter().any(|t| code.contains(&format!("fn {t}(")));
                if code == "#[unsafe(naked)]" {
                    naked = true;
                    continue;
                }
                assert!(
                    (!code.contains("no_mangle") || naked) && !code.contains("export_name"),
                    "an export outside export!: {at}"
                );
                for name in named_extern_fns(code) {
                    assert!(
                        CALLBACKS.contains(&name) || trampoline,
                        "an extern \"C\" fn outside export!: {at}"
                    );
                }
                if code.contains("fn ") {
                    naked = false;
                }
                let lookup = "runtime::runtime";
                assert!(
                    !code.contains(lookup) || code.contains("runtime::runtime_ref(self.api)"),
                    "a runtime lookup outside Call::rt: {at}"
                );
            }
        }
        assert!(exports >= 240, "only {exports} export! invocations found");
    }

    #[test]
    fn the_scan_finds_exports_and_skips_function_pointer_types() {
        assert_eq!(named_extern_fns("pub unsafe extern \"C\" fn aclrtMalloc("), ["aclrtMalloc"]);
        assert!(named_extern_fns("func: Option<unsafe extern \"C\" fn(*mut c_void)>,").is_empty());
        let t = "a\nmacro_rules! export {\n    #[no_mangle]\n}\nb\n";
        assert!(!without_the_macro(t).contains("no_mangle"));
        assert!(without_the_macro(t).contains('b'));
    }

    #[test]
    fn the_prologue_checks_out_pointers_before_the_runtime_and_records_the_message() {
        // SAFETY: a NULL out-pointer is refused before any use (the behaviour under test).
        let code = unsafe { aclrtGetDeviceCount(std::ptr::null_mut()) };
        assert_eq!(code, ACL_ERROR_INVALID_PARAM);
        // SAFETY: the message pointer is read before any other call on this thread.
        let msg = unsafe { CStr::from_ptr(aclGetRecentErrMsg()) }.to_str().unwrap().to_owned();
        assert_eq!(msg, "aclrtGetDeviceCount: count is NULL");
        assert!(aclGetRecentErrMsg().is_null(), "the message is cleared once returned");
    }

    #[test]
    fn a_value_export_returns_its_default_and_records_the_failure() {
        // SAFETY: a NULL buffer with a non-zero length is refused before any use.
        assert_eq!(unsafe { crate::ffi::obs::aclrsMemSummary(std::ptr::null_mut(), 5) }, 0);
        // SAFETY: read before any other call on this thread.
        let msg = unsafe { CStr::from_ptr(aclGetRecentErrMsg()) }.to_str().unwrap().to_owned();
        assert_eq!(msg, "aclrsMemSummary: buf is NULL but len is 5");
    }

    #[test]
    fn the_panic_wall_turns_a_panic_into_the_internal_error_code() {
        let code = guard("aclrtTest", crate::log::api_trace_enabled(), || panic!("boom"));
        assert_eq!(code, ACL_ERROR_INTERNAL_ERROR);
        // SAFETY: read before any other call on this thread.
        let msg = unsafe { CStr::from_ptr(aclGetRecentErrMsg()) }.to_str().unwrap().to_owned();
        assert_eq!(msg, "aclrtTest: internal error: boom");
        assert_eq!(wall("aclrsTest", 7_usize, || panic!("boom")), 7);
    }
}
