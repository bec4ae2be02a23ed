//! Errors of the scheduler, with stable numbers.
//!
//! This module owns the [`Error`] enum; it must not grow variants that carry data, because the
//! numbers cross layer boundaries.

use core::fmt;

/// What went wrong in a scheduler call, as a stable number.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The stream's ring already holds `capacity` unfinished tasks.
    Full = 1,
    /// The stream id does not name a live stream.
    NoSuchStream = 2,
    /// The executor already has its maximum number of streams.
    TooManyStreams = 3,
    /// An argument was out of range, or the stream is not in a state that allows the call.
    InvalidArgument = 4,
    /// The event id does not name a live event.
    NoSuchEvent = 5,
}

impl Error {
    /// A short description of the error, for messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Full => "stream ring full",
            Self::NoSuchStream => "no such stream",
            Self::TooManyStreams => "too many streams",
            Self::InvalidArgument => "invalid argument",
            Self::NoSuchEvent => "no such event",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::error::Error for Error {}

/// Result of a scheduler call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable() {
        assert_eq!(Error::Full as u16, 1);
        assert_eq!(Error::NoSuchStream as u16, 2);
        assert_eq!(Error::TooManyStreams as u16, 3);
        assert_eq!(Error::InvalidArgument as u16, 4);
        assert_eq!(Error::NoSuchEvent as u16, 5);
        assert_eq!(Error::Full.as_str(), "stream ring full");
    }
}
