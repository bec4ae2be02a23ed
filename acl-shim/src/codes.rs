//! The `aclError` values the runtime returns, with CANN's names and numbers.
//!
//! The full list lives in the C headers (`include/acl/acl_base.h`,
//! `include/acl/error_codes/rt_error_codes.h`); this module carries the ones the Rust side
//! returns, and a test checks them against the headers.

/// Success.
pub const ACL_SUCCESS: i32 = 0;
/// A parameter check failed at the ACL layer.
pub const ACL_ERROR_INVALID_PARAM: i32 = 100_000;
/// `aclInit` has not been called.
pub const ACL_ERROR_UNINITIALIZE: i32 = 100_001;
/// `aclInit` was called again.
pub const ACL_ERROR_REPEAT_INITIALIZE: i32 = 100_002;
/// A file (`aclInit`'s configuration) cannot be opened or read.
pub const ACL_ERROR_INVALID_FILE: i32 = 100_003;
/// A file (`aclInit`'s configuration) is not valid JSON or nests too deep.
pub const ACL_ERROR_PARSE_FILE: i32 = 100_006;
/// `aclFinalize` was called again.
pub const ACL_ERROR_REPEAT_FINALIZE: i32 = 100_037;
/// The feature is not supported.
pub const ACL_ERROR_FEATURE_UNSUPPORTED: i32 = 200_006;
/// Unknown internal error.
pub const ACL_ERROR_INTERNAL_ERROR: i32 = 500_000;
/// A runtime parameter check failed.
pub const ACL_ERROR_RT_PARAM_INVALID: i32 = 107_000;
/// The device id is invalid.
pub const ACL_ERROR_RT_INVALID_DEVICEID: i32 = 107_001;
/// No current context: set a device first.
pub const ACL_ERROR_RT_CONTEXT_NULL: i32 = 107_002;
/// Invalid handle.
pub const ACL_ERROR_RT_INVALID_HANDLE: i32 = 107_017;
/// A wait timed out.
pub const ACL_ERROR_RT_WAIT_TIMEOUT: i32 = 107_019;
/// The feature is not supported by the runtime or driver.
pub const ACL_ERROR_RT_FEATURE_NOT_SUPPORT: i32 = 207_000;
/// Device memory allocation failed (out of memory).
pub const ACL_ERROR_RT_MEMORY_ALLOCATION: i32 = 207_001;
/// The device is unavailable.
pub const ACL_ERROR_RT_NO_DEVICE: i32 = 207_004;
/// No permission.
pub const ACL_ERROR_RT_NO_PERMISSION: i32 = 207_006;
/// Runtime internal error.
pub const ACL_ERROR_RT_INTERNAL_ERROR: i32 = 507_000;
/// A device task failed with an AI-core exception.
pub const ACL_ERROR_RT_AICORE_EXCEPTION: i32 = 507_015;
/// Driver internal error.
pub const ACL_ERROR_RT_DRV_INTERNAL_ERROR: i32 = 507_899;
