//! C exports of stream control (fact sheet §8) and host-function threads (§9): stop, abort,
//! stream-state callbacks, waits with a timeout, attributes, id/flag/priority queries, the
//! stream-config handle and `aclrtCreateStreamV2`, and the host-function subscription calls.
//!
//! Handles are opaque numbers cast to pointers (`crate::ffi::stream::handle`). The one
//! structure C owns here is the stream-config handle (`aclrtStreamConfigHandle`, 32 bytes, a
//! public struct): made with `calloc` and freed with `free`, as CANN's C library does. The work
//! is in `crate::api::stream_ctl`.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::{c_char, c_void, CStr};

use super::put;
use super::stream::{ensure_hook, handle, to_ptr};
use crate::api::stream_ctl::{attr, process_host_func, AttrValue};
use crate::error::AclError;
use crate::runtime::Runtime;
use crate::state::stream_ctl::LEAST_PRIORITY;

/// `aclrtStreamConfigHandle` (32 bytes): what `aclrtCreateStreamV2` creates a stream with.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StreamConfig {
    workptr: *mut c_void,
    work_size: usize,
    flag: usize,
    priority: u32,
}

export! {
    /// `aclError aclrtStreamStop(aclrtStream stream);`
    pub fn aclrtStreamStop(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.stream_stop(API, handle(stream))
    }
}

export! {
    /// `aclError aclrtStreamAbort(aclrtStream stream);`
    pub fn aclrtStreamAbort(stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.stream_abort(API, handle(stream))
    }
}

export! {
    /// `aclError aclrtRegStreamStateCallback(const char *regName, aclrtStreamStateCallback callback, void *args);`
    pub unsafe fn aclrtRegStreamStateCallback(
        reg_name: *const c_char,
        callback: *const c_void,
        args: *mut c_void,
    ) -> AclErrorCode |cx| {
        if reg_name.is_null() {
            return Err(AclError::invalid(format!("{API}: regName is NULL")));
        }
        // SAFETY: non-null (checked); the caller passes a NUL-terminated name per the API.
        let name = unsafe { CStr::from_ptr(reg_name) }.to_bytes();
        let _ = cx.rt()?;
        let cb = if callback.is_null() {
            None
        } else {
            // SAFETY: a non-null `aclrtStreamStateCallback`, `void (*)(aclrtStream,
            // aclrtStreamState, void *)`: the same ABI as this function pointer type (the enum
            // is int-sized).
            let f = unsafe {
                std::mem::transmute::<*const c_void, unsafe extern "C" fn(*mut c_void, i32, *mut c_void)>(callback)
            };
            // CAST: the argument is kept as its address.
            Some((f, args as usize))
        };
        Runtime::reg_stream_state_callback(API, name, cb)
    }
}

export! {
    /// `aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event, int32_t timeout);`
    pub fn aclrtStreamWaitEventWithTimeout(stream: *mut c_void, event: *mut c_void, timeout: i32) -> AclErrorCode |cx| {
        let Ok(t) = u32::try_from(timeout) else {
            return Err(AclError::rt_invalid(format!("{API}: timeout {timeout} must be >= 0 seconds (0: no timeout)")));
        };
        if event.is_null() {
            return Err(AclError::invalid(format!("{API}: event is NULL")));
        }
        let rt = cx.rt()?;
        ensure_hook(&rt);
        rt.stream_wait_event_timeout(API, handle(stream), handle(event), t)
    }
}

export! {
    /// `aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, uint32_t timeout, uint32_t flag);`
    pub fn aclrtStreamWaitEventWithFlag(
        stream: *mut c_void,
        event: *mut c_void,
        timeout: u32,
        flag: u32,
    ) -> AclErrorCode |cx| {
        if event.is_null() {
            return Err(AclError::invalid(format!("{API}: event is NULL")));
        }
        let rt = cx.rt()?;
        ensure_hook(&rt);
        rt.stream_wait_event_flag(API, handle(stream), handle(event), timeout, flag)
    }
}

export! {
    /// `aclError aclrtSetStreamAttribute(aclrtStream stream, aclrtStreamAttr stmAttrType, aclrtStreamAttrValue *value);`
    pub unsafe fn aclrtSetStreamAttribute(stream: *mut c_void, stm_attr_type: i32, value: *mut u64) -> AclErrorCode |cx| {
        let p = cx.input("value", value.cast_const())?;
        let which = u32::try_from(stm_attr_type).unwrap_or(u32::MAX);
        // SAFETY: non-null and aligned (checked); the caller's union is 16 bytes, whose first
        // member is 8 bytes (failureMode) or 4 (the others, read as the low word).
        let word = unsafe { p.read() };
        let v = if which == attr::FAILURE_MODE {
            AttrValue::Mode(word)
        } else {
            // CAST: the union's 32-bit members are its low word (little endian).
            AttrValue::Word(word as u32)
        };
        cx.rt()?.set_stream_attr(API, handle(stream), which, v)
    }
}

export! {
    /// `aclError aclrtGetStreamAttribute(aclrtStream stream, aclrtStreamAttr stmAttrType, aclrtStreamAttrValue *value);`
    pub unsafe fn aclrtGetStreamAttribute(stream: *mut c_void, stm_attr_type: i32, value: *mut u64) -> AclErrorCode |cx| {
        let out = cx.out("value", value)?;
        let which = u32::try_from(stm_attr_type).unwrap_or(u32::MAX);
        match cx.rt()?.get_stream_attr(API, handle(stream), which)? {
            AttrValue::Mode(m) => put(out, m),
            // SAFETY: the union's first 4 bytes are the 32-bit member; the rest is untouched.
            AttrValue::Word(w) => put(super::out_ptr(API, "value", out_u32(value))?, w),
        }
        Ok(())
    }
}

/// The union's 32-bit view.
fn out_u32(p: *mut u64) -> *mut u32 {
    p.cast::<u32>()
}

export! {
    /// `aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId);`
    pub unsafe fn aclrtStreamGetId(stream: *mut c_void, stream_id: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("streamId", stream_id)?;
        put(out, cx.rt()?.stream_facts(API, handle(stream))?.0);
        Ok(())
    }
}

export! {
    /// `aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t *flags);`
    pub unsafe fn aclrtStreamGetFlags(stream: *mut c_void, flags: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("flags", flags)?;
        put(out, cx.rt()?.stream_facts(API, handle(stream))?.1);
        Ok(())
    }
}

export! {
    /// `aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t *priority);`
    pub unsafe fn aclrtStreamGetPriority(stream: *mut c_void, priority: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("priority", priority)?;
        put(out, cx.rt()?.stream_facts(API, handle(stream))?.2);
        Ok(())
    }
}

export! {
    /// `aclError aclrtGetStreamAvailableNum(uint32_t *streamCount);`
    pub unsafe fn aclrtGetStreamAvailableNum(stream_count: *mut u32) -> AclErrorCode |cx| {
        let out = cx.out("streamCount", stream_count)?;
        put(out, cx.rt()?.streams_available(API)?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtDeviceGetStreamPriorityRange(int32_t *leastPriority, int32_t *greatestPriority);`
    pub unsafe fn aclrtDeviceGetStreamPriorityRange(least: *mut i32, greatest: *mut i32) -> AclErrorCode |cx| {
        let _ = cx.rt()?;
        if !least.is_null() {
            // CAST: 7 fits.
            put(cx.out("leastPriority", least)?, LEAST_PRIORITY as i32);
        }
        if !greatest.is_null() {
            put(cx.out("greatestPriority", greatest)?, 0);
        }
        Ok(())
    }
}

export! {
    /// `aclrtStreamConfigHandle *aclrtCreateStreamConfigHandle(void);`
    pub fn aclrtCreateStreamConfigHandle() -> *mut StreamConfig = std::ptr::null_mut(), |cx| {
        // SAFETY: calloc of one zeroed 32-byte struct; NULL when out of memory, as CANN's.
        let p = unsafe { libc::calloc(1, std::mem::size_of::<StreamConfig>()) };
        Ok(p.cast::<StreamConfig>())
    }
}

export! {
    /// `aclError aclrtDestroyStreamConfigHandle(aclrtStreamConfigHandle *handle);`
    pub unsafe fn aclrtDestroyStreamConfigHandle(config: *mut StreamConfig) -> AclErrorCode |cx| {
        if config.is_null() {
            return Err(AclError::invalid(format!("{API}: handle is NULL")));
        }
        // SAFETY: the caller passes a handle aclrtCreateStreamConfigHandle made (calloc), once.
        unsafe { libc::free(config.cast::<c_void>()) };
        Ok(())
    }
}

export! {
    /// `aclError aclrtSetStreamConfigOpt(aclrtStreamConfigHandle *handle, aclrtStreamConfigAttr attr, const void *attrValue, size_t valueSize);`
    pub unsafe fn aclrtSetStreamConfigOpt(
        config: *mut StreamConfig,
        which: i32,
        attr_value: *const c_void,
        value_size: usize,
    ) -> AclErrorCode |cx| {
        let _ = cx.out("handle", config)?;
        if attr_value.is_null() {
            return Err(AclError::invalid(format!("{API}: attrValue is NULL")));
        }
        let want = match which {
            0 => std::mem::size_of::<*mut c_void>(),
            1 | 2 => std::mem::size_of::<usize>(),
            3 => std::mem::size_of::<u32>(),
            a => {
                return Err(AclError::invalid(format!(
                    "{API}: attr {a} is not an aclrtStreamConfigAttr (0 to 3)"
                )))
            }
        };
        if value_size != want {
            return Err(AclError::invalid(format!("{API}: valueSize {value_size} must be {want} for attr {which}")));
        }
        // SAFETY: `config` was checked non-null and aligned and points at the caller's config
        // handle; `attr_value` is non-null and holds `want` bytes per the API (read unaligned).
        unsafe {
            let mut c = config.read();
            match which {
                0 => c.workptr = std::ptr::read_unaligned(attr_value.cast::<*mut c_void>()),
                1 => c.work_size = std::ptr::read_unaligned(attr_value.cast::<usize>()),
                2 => c.flag = std::ptr::read_unaligned(attr_value.cast::<usize>()),
                _ => {
                    let p = std::ptr::read_unaligned(attr_value.cast::<u32>());
                    if p > LEAST_PRIORITY {
                        return Err(AclError::invalid(format!("{API}: priority {p} must be 0 to 7")));
                    }
                    c.priority = p;
                }
            }
            config.write(c);
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtCreateStreamV2(aclrtStream *stream, const aclrtStreamConfigHandle *handle);`
    pub unsafe fn aclrtCreateStreamV2(stream: *mut *mut c_void, config: *const StreamConfig) -> AclErrorCode |cx| {
        let out = cx.out("stream", stream)?;
        let c = if config.is_null() {
            StreamConfig { workptr: std::ptr::null_mut(), work_size: 0, flag: 0, priority: 0 }
        } else {
            let p = cx.input("handle", config)?;
            // SAFETY: non-null and aligned (checked); the caller passes a config handle.
            unsafe { p.read() }
        };
        let flags = u32::try_from(c.flag)
            .map_err(|_| AclError::invalid(format!("{API}: ACL_RT_STREAM_FLAG {:#x} has bits outside ACL_STREAM_*", c.flag)))?;
        let h = cx.rt()?.create_stream_with(API, flags, c.priority)?;
        put(out, to_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream);`
    pub fn aclrtSubscribeHostFunc(host_func_thread_id: u64, exe_stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.subscribe_host_func(API, host_func_thread_id, handle(exe_stream))
    }
}

export! {
    /// `aclError aclrtProcessHostFunc(int32_t timeout);`
    pub fn aclrtProcessHostFunc(timeout: i32) -> AclErrorCode |cx| {
        let _ = cx.rt()?;
        process_host_func(API, timeout)
    }
}

export! {
    /// `aclError aclrtUnSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream);`
    pub fn aclrtUnSubscribeHostFunc(host_func_thread_id: u64, exe_stream: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.unsubscribe_host_func(API, host_func_thread_id, handle(exe_stream))
    }
}
