//! Errors of the memory manager, with stable numbers.
//!
//! This module owns the [`Error`] enum and its conversion to [`hal::Error`]; it must not grow
//! variants that carry data, because the numbers cross layer (and C ABI) boundaries.

use core::fmt;

/// What went wrong in a memory-manager call, as a stable number.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An argument was zero, misaligned, out of range or otherwise malformed.
    InvalidArgument = 1,
    /// Not enough free physical memory (of the requested page size) is left.
    OutOfMemory = 2,
    /// No free device VA range of the requested size and alignment is left.
    OutOfVa = 3,
    /// The frames or range handed back were not allocated (double or foreign free).
    NotAllocated = 4,
    /// The huge-page or giant-page budget does not allow this allocation.
    BudgetExhausted = 5,
}

impl Error {
    /// A short description of the error, for messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "invalid argument",
            Self::OutOfMemory => "out of device memory",
            Self::OutOfVa => "out of device VA space",
            Self::NotAllocated => "not allocated",
            Self::BudgetExhausted => "page budget exhausted",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::error::Error for Error {}

impl From<Error> for hal::Error {
    fn from(e: Error) -> Self {
        let kind = match e {
            Error::InvalidArgument => hal::ErrorKind::InvalidArgument,
            Error::OutOfMemory | Error::OutOfVa | Error::BudgetExhausted => hal::ErrorKind::OutOfMemory,
            Error::NotAllocated => hal::ErrorKind::InvalidHandle,
        };
        hal::Error::new(kind, e.as_str())
    }
}

/// Result of a memory-manager call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable() {
        assert_eq!(Error::InvalidArgument as u16, 1);
        assert_eq!(Error::OutOfMemory as u16, 2);
        assert_eq!(Error::OutOfVa as u16, 3);
        assert_eq!(Error::NotAllocated as u16, 4);
        assert_eq!(Error::BudgetExhausted as u16, 5);
    }

    #[test]
    fn converts_to_hal_kinds() {
        let cases = [
            (Error::InvalidArgument, hal::ErrorKind::InvalidArgument),
            (Error::OutOfMemory, hal::ErrorKind::OutOfMemory),
            (Error::OutOfVa, hal::ErrorKind::OutOfMemory),
            (Error::BudgetExhausted, hal::ErrorKind::OutOfMemory),
            (Error::NotAllocated, hal::ErrorKind::InvalidHandle),
        ];
        for (e, kind) in cases {
            let h: hal::Error = e.into();
            assert_eq!(h.kind(), kind);
            assert_eq!(h.detail(), e.as_str());
        }
    }
}
