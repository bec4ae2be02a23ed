//! Host memory registration (`aclrtHostRegister`, `aclrtHostRegisterV2`, `aclrtHostUnregister`,
//! `aclrtHostGetDevicePointer`).
//!
//! On the software NPU the device reaches host memory at the host address (kernels are host
//! code), so registration records the range and the device pointer equals the host pointer
//! (VA consistency, as `ACL_RT_MEM_ATTR_VA_FLAG` gives on A2/A3). Registered memory stays
//! ordinary host memory for copies.
//!
//! # Locking
//!
//! The registered ranges live with the pinned-host table ([`crate::state::memory::HostMem`]); its lock
//! is taken alone, and no backend call is made under it here.

use hal::layout::{
    device_windows_end, host_window_base, pool_window_base, window_of, Window, HOST_WINDOW_SIZE,
};
use hal::DeviceAddr;

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;

/// `ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED`.
pub const ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED: i32 = 507_910;
/// `ACL_ERROR_HOST_MEMORY_NOT_REGISTERED`.
pub const ACL_ERROR_HOST_MEMORY_NOT_REGISTERED: i32 = 507_911;

const V1_MAPPED: u32 = 0;
const V1_IOMEMORY: u32 = 0x4;
const V1_READONLY: u32 = 0x8;
const V2_MAPPED: u32 = 0x2;
const V2_IOMEMORY: u32 = 0x4;
const V2_READONLY: u32 = 0x8;
const V2_PINNED: u32 = 0x1000_0000;

impl Runtime {
    fn register(&self, api: &str, ptr: u64, size: u64) -> Result<u64> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        if ptr % 4096 != 0 {
            return Err(AclError::rt_invalid(format!("{api}: ptr {ptr:#x} is not 4 KiB page aligned")));
        }
        let end = ptr.checked_add(size).filter(|&e| e <= isize::MAX as u64).ok_or_else(|| {
            AclError::invalid(format!("{api}: [ptr, ptr + size) wraps around the address space"))
        })?;
        if matches!(window_of(ptr), Window::Device(_) | Window::Pool) {
            return Err(AclError::rt_invalid(format!(
                "{api}: ptr {ptr:#x} is device memory, not host memory"
            )));
        }
        self.current_device(api)?;
        self.check_host_range(api, ptr, size, end)?;
        // Lock order: the pinned-host lock alone.
        let mut x = self.host(api)?;
        let overlaps = x.registered.range(..end).next_back().is_some_and(|(&s, &l)| s + l > ptr);
        if overlaps {
            return Err(AclError::new(
                ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                format!("{api}: [{ptr:#x}, +{size}) overlaps a range already registered"),
            ));
        }
        x.registered.insert(ptr, size);
        Ok(ptr)
    }

    /// Checks that `[ptr, end)` is host memory the device may be given: inside one live
    /// `aclrtMallocHost` allocation, or outside every runtime window and mapped readable and
    /// writable (read from `/proc/self/maps`, once per call).
    fn check_host_range(&self, api: &str, ptr: u64, size: u64, end: u64) -> Result<()> {
        if window_of(ptr) == Window::PinnedHost {
            // Lock order: the pinned-host lock alone.
            let live = self.host(api)?.heap.contains_range(DeviceAddr(ptr), size);
            if !live {
                return Err(AclError::rt_invalid(format!(
                    "{api}: [{ptr:#x}, +{size}) is in the pinned-host window but not inside a live aclrtMallocHost allocation"
                )));
            }
            return Ok(());
        }
        let windows = [
            (host_window_base(), host_window_base() + HOST_WINDOW_SIZE, "the pinned-host window"),
            (pool_window_base(), device_windows_end(), "the device and pool windows"),
        ];
        if let Some((_, _, name)) = windows.iter().find(|&&(lo, hi, _)| ptr < hi && end > lo) {
            return Err(AclError::rt_invalid(format!(
                "{api}: [{ptr:#x}, +{size}) runs from host memory into {name} of the runtime"
            )));
        }
        match std::fs::read_to_string("/proc/self/maps") {
            Ok(maps) => match first_unusable(&maps, ptr, end) {
                None => Ok(()),
                Some(at) => Err(AclError::rt_invalid(format!(
                    "{api}: [{ptr:#x}, +{size}) is not mapped readable and writable host memory (at {at:#x})"
                ))),
            },
            // No procfs to ask: the range cannot be checked, only registered as given.
            Err(_) => Ok(()),
        }
    }

    /// `aclrtHostRegister`: returns the device pointer.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0 or an unknown type, `ACL_ERROR_RT_FEATURE_NOT_SUPPORT`
    /// for IOMEMORY and READONLY, `ACL_ERROR_RT_PARAM_INVALID` for a misaligned or device
    /// pointer, `ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED` for an overlap.
    pub fn host_register(&self, api: &str, ptr: u64, size: u64, ty: u32) -> Result<u64> {
        match ty {
            V1_MAPPED => {}
            V1_IOMEMORY | V1_READONLY => {
                return Err(AclError::new(
                    ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    format!("{api}: type {ty:#x} (IOMEMORY/READONLY) is reserved and not supported"),
                ))
            }
            t => return Err(AclError::invalid(format!("{api}: type {t} is not an aclrtHostRegisterType"))),
        }
        self.register(api, ptr, size)
    }

    /// `aclrtHostRegisterV2`.
    ///
    /// # Errors
    ///
    /// As [`Self::host_register`]; PINNED on memory from `aclrtMallocHost` is
    /// `ACL_ERROR_RT_PARAM_INVALID` (it is pinned already).
    pub fn host_register_v2(&self, api: &str, ptr: u64, size: u64, flag: u32) -> Result<()> {
        if flag == 0 || flag & !(V2_MAPPED | V2_IOMEMORY | V2_READONLY | V2_PINNED) != 0 {
            return Err(AclError::invalid(format!(
                "{api}: flag {flag:#x} must be an OR of ACL_HOST_REG_MAPPED and ACL_HOST_REG_PINNED"
            )));
        }
        if flag & (V2_IOMEMORY | V2_READONLY) != 0 {
            return Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                format!(
                    "{api}: ACL_HOST_REG_IOMEMORY and ACL_HOST_REG_READONLY are reserved and not supported"
                ),
            ));
        }
        if flag & V2_PINNED != 0 && window_of(ptr) == Window::PinnedHost {
            return Err(AclError::rt_invalid(format!(
                "{api}: ptr {ptr:#x} is already pinned (aclrtMallocHost); do not pass ACL_HOST_REG_PINNED"
            )));
        }
        self.register(api, ptr, size).map(|_| ())
    }

    /// `aclrtHostUnregister`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_HOST_MEMORY_NOT_REGISTERED` when `ptr` starts no registered range.
    pub fn host_unregister(&self, api: &str, ptr: u64) -> Result<()> {
        self.current_device(api)?;
        // Lock order: the pinned-host lock alone.
        self.host(api)?.registered.remove(&ptr).map(|_| ()).ok_or_else(|| {
            AclError::new(
                ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                format!("{api}: ptr {ptr:#x} is not the start of a registered range"),
            )
        })
    }

    /// `aclrtHostGetDevicePointer`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a non-zero flag, `ACL_ERROR_HOST_MEMORY_NOT_REGISTERED`
    /// when `ptr` is in no registered range.
    pub fn host_device_pointer(&self, api: &str, ptr: u64, flag: u32) -> Result<u64> {
        if flag != 0 {
            return Err(AclError::invalid(format!("{api}: flag must be 0, not {flag}")));
        }
        self.current_device(api)?;
        let inside = self.host(api)?.registered.range(..=ptr).next_back().is_some_and(|(&s, &l)| ptr - s < l);
        if !inside {
            return Err(AclError::new(
                ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                format!("{api}: pHost {ptr:#x} is not inside a registered range"),
            ));
        }
        Ok(ptr)
    }
}

/// The first address of `[start, end)` that no readable and writable mapping of `maps` (the
/// text of `/proc/<pid>/maps`, in address order) covers; `None` when the whole range is.
fn first_unusable(maps: &str, start: u64, end: u64) -> Option<u64> {
    let mut at = start;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        let Some((lo, hi)) = range.split_once('-') else { continue };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else { continue };
        if hi <= at {
            continue;
        }
        if lo > at || !perms.starts_with("rw") {
            return Some(at);
        }
        at = hi;
        if at >= end {
            return None;
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::first_unusable;

    const MAPS: &str = "\
1000-3000 rw-p 00000000 00:00 0
3000-4000 r--p 00000000 00:00 0
5000-7000 rwxp 00000000 00:00 0 [heap]
7000-8000 rw-s 00000000 00:00 0 /dev/shm/x
";

    #[test]
    fn ranges_must_be_covered_by_read_write_mappings() {
        assert_eq!(first_unusable(MAPS, 0x1000, 0x3000), None);
        assert_eq!(first_unusable(MAPS, 0x2000, 0x2001), None);
        assert_eq!(first_unusable(MAPS, 0x5000, 0x8000), None, "adjacent mappings join");
        assert_eq!(first_unusable(MAPS, 0x2000, 0x3001), Some(0x3000), "read-only");
        assert_eq!(first_unusable(MAPS, 0x4000, 0x5000), Some(0x4000), "a hole");
        assert_eq!(first_unusable(MAPS, 0x7000, 0x9000), Some(0x8000), "past the last mapping");
        assert_eq!(first_unusable(MAPS, 0x0, 0x1000), Some(0x0), "before the first");
    }
}
