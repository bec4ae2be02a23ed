//! The runtime's error: an `aclError` code with a readable message.
//!
//! Every failing runtime function returns [`AclError`]; the C edge turns it into the code and
//! records the message for `aclGetRecentErrMsg`. Conversions from lower layers are explicit
//! `From`-style functions here, never string wrapping elsewhere.

use std::fmt;

use crate::codes::*;

/// An `aclError` code and the message that explains it.
///
/// One pointer wide (the code and message sit behind a box, made only when something fails), so
/// that a [`Result`] of a unit or a word comes back from a call in registers: a result returned
/// through memory is written field by field and read back wider, and such a load has to wait
/// until every older store of the thread is written (a store-forwarding stall), which on a
/// submission path means waiting for the last descriptor's cache lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclError(Box<Inner>);

/// What an [`AclError`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    code: i32,
    message: String,
}

impl AclError {
    /// An error with `code` and `message`.
    #[cold]
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self(Box::new(Inner { code, message: message.into() }))
    }

    /// `ACL_ERROR_INVALID_PARAM` naming the bad argument.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ACL_ERROR_INVALID_PARAM, message)
    }

    /// `ACL_ERROR_RT_PARAM_INVALID` (a runtime-level parameter check).
    pub fn rt_invalid(message: impl Into<String>) -> Self {
        Self::new(ACL_ERROR_RT_PARAM_INVALID, message)
    }

    /// The `aclError` code.
    pub fn code(&self) -> i32 {
        self.0.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Maps a driver error, prefixing what the runtime was doing.
    pub fn from_hal(e: hal::Error, doing: &str) -> Self {
        use hal::ErrorKind as K;
        let code = match e.kind() {
            K::InvalidArgument => ACL_ERROR_RT_PARAM_INVALID,
            K::OutOfMemory => ACL_ERROR_RT_MEMORY_ALLOCATION,
            K::NotSupported => ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            K::NoDevice => ACL_ERROR_RT_NO_DEVICE,
            K::InvalidHandle => ACL_ERROR_RT_PARAM_INVALID,
            K::PermissionDenied => ACL_ERROR_RT_NO_PERMISSION,
            K::Timeout => ACL_ERROR_RT_WAIT_TIMEOUT,
            K::DeviceFault => ACL_ERROR_RT_AICORE_EXCEPTION,
            _ => ACL_ERROR_RT_INTERNAL_ERROR,
        };
        Self::new(code, format!("{doing}: {}", e))
    }

    /// Maps a memory-manager error, prefixing what the runtime was doing.
    pub fn from_mm(e: mm::Error, doing: &str) -> Self {
        let code = match e {
            mm::Error::InvalidArgument => ACL_ERROR_INVALID_PARAM,
            mm::Error::OutOfMemory | mm::Error::OutOfVa | mm::Error::BudgetExhausted => {
                ACL_ERROR_RT_MEMORY_ALLOCATION
            }
            mm::Error::NotAllocated => ACL_ERROR_RT_PARAM_INVALID,
            _ => ACL_ERROR_RT_INTERNAL_ERROR,
        };
        Self::new(code, format!("{doing}: {}", e.as_str()))
    }
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (aclError {})", self.0.message, self.0.code)
    }
}

impl std::error::Error for AclError {}

// A unit or word result comes back in registers (see `AclError`).
const _: () = assert!(std::mem::size_of::<Result<()>>() == 8 && std::mem::size_of::<Result<u64>>() == 16);

/// Result of a runtime call.
pub type Result<T, E = AclError> = std::result::Result<T, E>;
