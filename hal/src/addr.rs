//! Device ids, device virtual addresses, VA ranges and page sizes.

use core::fmt;

use crate::error::{Error, ErrorKind, Result};

/// A device number as the runtime sees it (after any visibility remapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId(pub u32);

impl DeviceId {
    /// The id as an index into per-device tables.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {}", self.0)
    }
}

/// A device virtual address: a number, not a host pointer.
///
/// On the software NPU a device address is also host-addressable (HBM is mapped at the same
/// address in the host process), but only a backend may rely on that.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DeviceAddr(pub u64);

impl DeviceAddr {
    /// The raw address.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// `self + bytes`, or `None` on overflow.
    pub const fn checked_add(self, bytes: u64) -> Option<Self> {
        match self.0.checked_add(bytes) {
            Some(v) => Some(Self(v)),
            None => None,
        }
    }

    /// Whether the address is a multiple of `align` (a power of two).
    pub const fn is_aligned(self, align: u64) -> bool {
        align.is_power_of_two() && self.0 & (align - 1) == 0
    }
}

impl fmt::Debug for DeviceAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceAddr({:#x})", self.0)
    }
}

impl fmt::Display for DeviceAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A non-empty half-open range of device VA, `[start, start + len_bytes)`.
///
/// # Invariants
///
/// `len_bytes > 0` and `start + len_bytes` does not overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VaRange {
    start: DeviceAddr,
    len_bytes: u64,
}

impl VaRange {
    /// Checks and builds a range.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] when `len_bytes` is zero or the end overflows.
    pub const fn try_new(start: DeviceAddr, len_bytes: u64) -> Result<Self> {
        if len_bytes == 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "empty VA range"));
        }
        if start.0.checked_add(len_bytes).is_none() {
            return Err(Error::new(ErrorKind::InvalidArgument, "VA range overflows"));
        }
        // INVARIANT: checked above.
        Ok(Self { start, len_bytes })
    }

    /// First address of the range.
    pub const fn start(&self) -> DeviceAddr {
        self.start
    }

    /// Length in bytes (never zero).
    pub const fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// One past the last address.
    pub const fn end(&self) -> u64 {
        // No overflow by the type invariant.
        self.start.0 + self.len_bytes
    }

    /// Whether `other` lies entirely inside `self`.
    pub const fn contains_range(&self, other: &VaRange) -> bool {
        other.start.0 >= self.start.0 && other.end() <= self.end()
    }

    /// Whether `addr` lies inside the range.
    pub const fn contains(&self, addr: DeviceAddr) -> bool {
        addr.0 >= self.start.0 && addr.0 < self.end()
    }
}

/// The page sizes of the device MMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum PageSize {
    /// 4 KiB normal pages.
    Normal = 0,
    /// 2 MiB huge pages.
    Huge = 1,
    /// 1 GiB giant pages.
    Giant = 2,
}

impl PageSize {
    /// All page sizes, smallest first.
    pub const ALL: [PageSize; 3] = [PageSize::Normal, PageSize::Huge, PageSize::Giant];

    /// Size of one page in bytes.
    pub const fn bytes(self) -> u64 {
        match self {
            Self::Normal => 4 << 10,
            Self::Huge => 2 << 20,
            Self::Giant => 1 << 30,
        }
    }

    /// log2 of [`Self::bytes`].
    pub const fn shift(self) -> u32 {
        match self {
            Self::Normal => 12,
            Self::Huge => 21,
            Self::Giant => 30,
        }
    }

    /// `bytes` rounded up to a whole number of pages, or `None` on overflow.
    pub const fn round_up(self, bytes: u64) -> Option<u64> {
        let mask = self.bytes() - 1;
        match bytes.checked_add(mask) {
            Some(v) => Some(v & !mask),
            None => None,
        }
    }
}

/// Sealed marker types for page sizes known at compile time.
pub mod page {
    mod sealed {
        pub trait Sealed {}
    }

    /// A page size fixed at compile time.
    pub trait PageSizeMarker: sealed::Sealed {
        /// The page size this marker stands for.
        const SIZE: super::PageSize;
    }

    /// 4 KiB pages.
    #[derive(Clone, Copy, Debug)]
    pub enum Size4K {}
    /// 2 MiB pages.
    #[derive(Clone, Copy, Debug)]
    pub enum Size2M {}
    /// 1 GiB pages.
    #[derive(Clone, Copy, Debug)]
    pub enum Size1G {}

    impl sealed::Sealed for Size4K {}
    impl sealed::Sealed for Size2M {}
    impl sealed::Sealed for Size1G {}
    impl PageSizeMarker for Size4K {
        const SIZE: super::PageSize = super::PageSize::Normal;
    }
    impl PageSizeMarker for Size2M {
        const SIZE: super::PageSize = super::PageSize::Huge;
    }
    impl PageSizeMarker for Size1G {
        const SIZE: super::PageSize = super::PageSize::Giant;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes() {
        assert_eq!(PageSize::Normal.bytes(), 4096);
        assert_eq!(PageSize::Huge.bytes(), 2 * 1024 * 1024);
        assert_eq!(PageSize::Giant.bytes(), 1 << 30);
        for p in PageSize::ALL {
            assert_eq!(1u64 << p.shift(), p.bytes());
        }
        assert_eq!(PageSize::Huge.round_up(1), Some(2 << 20));
        assert_eq!(PageSize::Huge.round_up(2 << 20), Some(2 << 20));
        assert_eq!(PageSize::Normal.round_up(u64::MAX), None);
        use page::PageSizeMarker;
        assert_eq!(page::Size1G::SIZE, PageSize::Giant);
    }

    #[test]
    fn ranges_are_checked() {
        assert!(VaRange::try_new(DeviceAddr(0x1000), 0).is_err());
        assert!(VaRange::try_new(DeviceAddr(u64::MAX), 2).is_err());
        let r = VaRange::try_new(DeviceAddr(0x1000), 0x1000).unwrap();
        assert_eq!(r.end(), 0x2000);
        assert!(r.contains(DeviceAddr(0x1fff)));
        assert!(!r.contains(DeviceAddr(0x2000)));
        let inner = VaRange::try_new(DeviceAddr(0x1800), 0x800).unwrap();
        assert!(r.contains_range(&inner));
        assert!(!inner.contains_range(&r));
        assert!(DeviceAddr(0x1040).is_aligned(64));
        assert!(!DeviceAddr(0x1020).is_aligned(64));
    }
}
