//! Managed (unified) memory records: what `aclrtMemManagedAdvise` and
//! `aclrtMemManagedPrefetchAsync` said about one `aclrtMemAllocManaged` allocation, kept in the
//! owning device's [`crate::state::memory::DevMem`] by base address, and the checks of
//! `aclrtMemManagedLocation` values.
//!
//! Safe Rust over plain data; it must not use the runtime or [`crate::api`]. The attributes are
//! kept per allocation (a range query answers with its allocation's values).

use crate::error::{AclError, Result};

/// `ACL_MEM_LOCATIONTYPE_INVALID`.
pub const LOC_INVALID: u32 = 0;
/// `ACL_MEM_LOCATIONTYPE_DEVICE`.
pub const LOC_DEVICE: u32 = 1;
/// `ACL_MEM_LOCATIONTYPE_HOST`.
pub const LOC_HOST: u32 = 2;
/// `ACL_MEM_LOCATIONTYPE_HOST_NUMA`.
pub const LOC_HOST_NUMA: u32 = 3;
/// `ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT`.
pub const LOC_HOST_NUMA_CURRENT: u32 = 4;

/// An `aclrtMemManagedLocation`: its type and id (the id means nothing for INVALID, HOST and
/// HOST_NUMA_CURRENT, and is kept as 0 for them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManagedLoc {
    /// `aclrtMemManagedLocationType`.
    pub ty: u32,
    /// The device or NUMA node id.
    pub id: i32,
}

impl ManagedLoc {
    /// Whether the location is host memory (HOST, HOST_NUMA or HOST_NUMA_CURRENT).
    pub fn is_host(self) -> bool {
        matches!(self.ty, LOC_HOST | LOC_HOST_NUMA | LOC_HOST_NUMA_CURRENT)
    }
}

/// One managed allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Managed {
    /// Bytes the caller asked for.
    pub len: u64,
    /// `ACL_MEM_ADVISE_SET_READ_MOSTLY` is in force.
    pub read_mostly: bool,
    /// The preferred location (INVALID when none was advised).
    pub preferred: ManagedLoc,
    /// The locations advised with `ACL_MEM_ADVISE_SET_ACCESSED_BY`, in advice order.
    pub accessed_by: Vec<ManagedLoc>,
    /// Where the pages were last prefetched to (INVALID before the first prefetch).
    pub last_prefetch: ManagedLoc,
}

impl Managed {
    /// A fresh allocation of `len` bytes: no advice, never prefetched.
    pub fn new(len: u64) -> Self {
        Self {
            len,
            read_mostly: false,
            preferred: ManagedLoc::default(),
            accessed_by: Vec::new(),
            last_prefetch: ManagedLoc::default(),
        }
    }

    /// Applies advice `advise` (0..=5, checked) with `loc`.
    pub fn advise(&mut self, advise: u32, loc: ManagedLoc) {
        match advise {
            0 => self.read_mostly = true,
            1 => self.read_mostly = false,
            2 => self.preferred = loc,
            3 => self.preferred = ManagedLoc::default(),
            4 => {
                if !self.accessed_by.contains(&loc) {
                    self.accessed_by.push(loc);
                }
            }
            _ => self.accessed_by.retain(|l| *l != loc),
        }
    }
}

/// Checks the location `(ty, id)` of `what`; `devices` is the device count. `allow_invalid`
/// accepts INVALID (the advice kinds that ignore the location).
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` for an unknown type, a device id out of range or a negative NUMA
/// id.
pub fn check_loc(
    api: &str,
    what: &str,
    ty: u32,
    id: i32,
    devices: u32,
    allow_invalid: bool,
) -> Result<ManagedLoc> {
    match ty {
        LOC_INVALID if allow_invalid => Ok(ManagedLoc::default()),
        LOC_DEVICE => match u32::try_from(id) {
            Ok(d) if d < devices => Ok(ManagedLoc { ty, id }),
            _ => Err(AclError::invalid(format!("{api}: {what}.id {id} is not a device (0..{devices})"))),
        },
        LOC_HOST | LOC_HOST_NUMA_CURRENT => Ok(ManagedLoc { ty, id: 0 }),
        LOC_HOST_NUMA if id >= 0 => Ok(ManagedLoc { ty, id }),
        LOC_HOST_NUMA => Err(AclError::invalid(format!("{api}: {what}.id {id} is not a NUMA node"))),
        t => Err(AclError::invalid(format!(
            "{api}: {what}.type {t} is not an aclrtMemManagedLocationType usable here (DEVICE 1, HOST 2, HOST_NUMA 3, HOST_NUMA_CURRENT 4)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_sets_and_unsets() {
        let mut m = Managed::new(64);
        let dev0 = ManagedLoc { ty: LOC_DEVICE, id: 0 };
        m.advise(0, ManagedLoc::default());
        assert!(m.read_mostly);
        m.advise(2, dev0);
        assert_eq!(m.preferred, dev0);
        m.advise(4, dev0);
        m.advise(4, dev0);
        assert_eq!(m.accessed_by, vec![dev0]);
        m.advise(5, dev0);
        assert!(m.accessed_by.is_empty());
        m.advise(3, ManagedLoc::default());
        assert_eq!(m.preferred, ManagedLoc::default());
        m.advise(1, ManagedLoc::default());
        assert!(!m.read_mostly);
    }

    #[test]
    fn locations_are_checked() {
        assert!(check_loc("t", "location", LOC_DEVICE, 1, 2, false).is_ok());
        assert_eq!(check_loc("t", "location", LOC_DEVICE, 2, 2, false).unwrap_err().code(), 100_000);
        assert_eq!(check_loc("t", "location", LOC_INVALID, 0, 2, false).unwrap_err().code(), 100_000);
        assert_eq!(
            check_loc("t", "location", LOC_HOST, 7, 2, false).unwrap(),
            ManagedLoc { ty: LOC_HOST, id: 0 }
        );
        assert!(check_loc("t", "location", LOC_HOST_NUMA, -1, 2, false).is_err());
        assert!(check_loc("t", "location", 9, 0, 2, true).is_err());
    }
}
