//! Stream and event handles through the C ABI on a private software NPU with two devices:
//! each handle names its device, so a handle of device 1 used on device 0's stream or as the
//! current device's object is refused with CANN's code, and a garbage, destroyed or
//! earlier-`aclInit` handle is `ACL_ERROR_RT_INVALID_HANDLE` (107017) with a message.
//!
//! One runtime per process: the whole story is one test.

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

use ascendcl::ffi::stream::{
    aclrtCreateEvent, aclrtCreateStream, aclrtDestroyEvent, aclrtDestroyStream, aclrtRecordEvent,
    aclrtStreamWaitEvent, aclrtSynchronizeStream,
};
use ascendcl::ffi::{aclFinalize, aclGetRecentErrMsg, aclInit, aclrtResetDevice, aclrtSetDevice};

const INVALID_HANDLE: i32 = 107_017;
const STREAM_CONTEXT: i32 = 107_003;

fn message() -> String {
    // aclGetRecentErrMsg returns NULL or a NUL-terminated string that stays valid until this
    // thread's next call.
    let p = aclGetRecentErrMsg();
    assert!(!p.is_null(), "a failed call leaves a message");
    // SAFETY: non-null and NUL-terminated, as above.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn stream() -> *mut c_void {
    let mut s = null_mut();
    // SAFETY: `s` is a valid out-pointer.
    assert_eq!(unsafe { aclrtCreateStream(&mut s) }, 0);
    s
}

fn event() -> *mut c_void {
    let mut e = null_mut();
    // SAFETY: `e` is a valid out-pointer.
    assert_eq!(unsafe { aclrtCreateEvent(&mut e) }, 0);
    e
}

#[test]
fn handles_name_their_device_and_dead_ones_are_refused_with_a_message() {
    std::env::set_var("ACLRS_SIM_INSTANCE", format!("stream-handles-{}", std::process::id()));
    std::env::set_var("ACLRS_SIM_DEVICES", "2");
    std::env::set_var("ACLRS_SIM_HBM", "268435456");
    // SAFETY: NULL is allowed (no configuration file).
    assert_eq!(unsafe { aclInit(std::ptr::null()) }, 0);
    assert_eq!(aclrtSetDevice(1), 0);
    let (s1, e1) = (stream(), event());
    assert_eq!(aclrtSetDevice(0), 0);
    let (s0, e0) = (stream(), event());

    // Device 1's event on device 0's stream, and the other way round.
    assert_eq!(aclrtRecordEvent(e1, s0), STREAM_CONTEXT);
    assert!(message().contains("device 1"), "{}", message());
    assert_eq!(aclrtStreamWaitEvent(s0, e1), STREAM_CONTEXT);
    assert_eq!(aclrtRecordEvent(e0, s1), STREAM_CONTEXT);
    // Device 1's stream is not the current device's to destroy.
    assert_eq!(aclrtDestroyStream(s1), STREAM_CONTEXT);
    // Same-device pairs work.
    assert_eq!(aclrtRecordEvent(e0, s0), 0);
    assert_eq!(aclrtStreamWaitEvent(s0, e0), 0);
    assert_eq!(aclrtSynchronizeStream(s0), 0);

    // Garbage: a number that was never a handle, and an event handle used as a stream.
    assert_eq!(aclrtSynchronizeStream(0x1234_5678 as *mut c_void), INVALID_HANDLE);
    assert!(message().contains("is not a live stream"), "{}", message());
    assert_eq!(aclrtSynchronizeStream(e0), INVALID_HANDLE);
    // Destroyed.
    assert_eq!(aclrtDestroyEvent(e0), 0);
    assert_eq!(aclrtRecordEvent(e0, s0), INVALID_HANDLE);
    assert!(message().contains("is not a live event"), "{}", message());
    assert_eq!(aclrtDestroyStream(s0), 0);
    assert_eq!(aclrtSynchronizeStream(s0), INVALID_HANDLE);
    assert_eq!(aclrtDestroyStream(s0), INVALID_HANDLE);
    // A reset device forgets its handles.
    assert_eq!(aclrtResetDevice(1), 0);
    assert_eq!(aclrtSetDevice(1), 0);
    assert_eq!(aclrtSynchronizeStream(s1), INVALID_HANDLE);
    let s1b = stream();
    assert_eq!(aclFinalize(), 0);

    // From an earlier aclInit.
    // SAFETY: as above.
    assert_eq!(unsafe { aclInit(std::ptr::null()) }, 0);
    assert_eq!(aclrtSetDevice(1), 0);
    assert_eq!(aclrtSynchronizeStream(s1b), INVALID_HANDLE);
    assert!(message().contains("before the last aclInit"), "{}", message());
    assert_eq!(aclrtRecordEvent(e1, stream()), INVALID_HANDLE);
    assert_eq!(aclFinalize(), 0);
}
