//! Driver error kinds with stable numbers.
//!
//! The numbers are part of the ABI between layers (and may cross the C ABI through the runtime's
//! mapping to `aclError`), so a variant's discriminant never changes once published.

use core::fmt;

/// What went wrong in a driver call, as a stable number.
#[non_exhaustive]
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument was out of range, misaligned or otherwise malformed.
    InvalidArgument = 1,
    /// No physical memory (or no page of the requested size) is left.
    OutOfMemory = 2,
    /// The device or backend does not implement this operation.
    NotSupported = 3,
    /// The device id does not name a present device.
    NoDevice = 4,
    /// A handle, address or range does not name a live object.
    InvalidHandle = 5,
    /// The object is in use and cannot be changed now.
    Busy = 6,
    /// A wait ran out of time.
    Timeout = 7,
    /// The caller may not touch this object.
    PermissionDenied = 8,
    /// The device reported a fault while executing work.
    DeviceFault = 9,
    /// A queue is full and the caller asked not to block.
    QueueFull = 10,
    /// An internal invariant broke; this is a bug in the backend.
    Internal = 11,
}

impl ErrorKind {
    /// A short description of the kind, for messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "invalid argument",
            Self::OutOfMemory => "out of device memory",
            Self::NotSupported => "not supported",
            Self::NoDevice => "no such device",
            Self::InvalidHandle => "invalid handle or address",
            Self::Busy => "busy",
            Self::Timeout => "timed out",
            Self::PermissionDenied => "permission denied",
            Self::DeviceFault => "device fault",
            Self::QueueFull => "queue full",
            Self::Internal => "internal error",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A driver error: a kind plus a static detail naming what failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    detail: &'static str,
}

impl Error {
    /// Creates an error of `kind` with a static `detail` message.
    pub const fn new(kind: ErrorKind, detail: &'static str) -> Self {
        Self { kind, detail }
    }

    /// The stable kind of this error.
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What failed, in a few words.
    pub const fn detail(&self) -> &'static str {
        self.detail
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind, kind.as_str())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

impl core::error::Error for Error {}

/// Result of a driver call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_keep_their_numbers() {
        assert_eq!(ErrorKind::InvalidArgument as u16, 1);
        assert_eq!(ErrorKind::OutOfMemory as u16, 2);
        assert_eq!(ErrorKind::NotSupported as u16, 3);
        assert_eq!(ErrorKind::Internal as u16, 11);
    }

    #[test]
    fn error_carries_kind_and_detail() {
        let e = Error::new(ErrorKind::Busy, "queue draining");
        assert_eq!(e.kind(), ErrorKind::Busy);
        assert_eq!(e.detail(), "queue draining");
        let e: Error = ErrorKind::Timeout.into();
        assert_eq!(e.detail(), "timed out");
    }
}
