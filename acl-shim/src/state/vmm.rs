//! The state of virtual memory management (`aclrtReserveMemAddress`, `aclrtMallocPhysical`,
//! `aclrtMapMem`…) and shareable handles, and the VMM rules and error codes that take it as a
//! parameter; also the per-device state that IPC, peer access and host registration keep. The
//! calls are [`crate::api::vmm`]'s (and [`crate::api::ipc`]'s, [`crate::api::peer`]'s). It must
//! not use the runtime or [`crate::api`].
//!
//! Safe Rust over `mm::vmm` (the bookkeeping) and the backend's [`hal::PhysicalMemory`] and
//! [`hal::Sharing`]. Each device window is split in two: the lower half is `aclrtMalloc`'s
//! (`mm::device`), the upper half ([`vmm_window`]) holds VMM reservations and imported IPC
//! memory, so an address still tells its device and copies to and from mapped memory work.
//!
//! The state is per device ([`VmmState`], in [`crate::device::Device`]): a physical handle
//! names its device (it is a [`crate::handles::Handle`] of kind `Physical`), a VA tells its
//! device by window, and each device keeps its own reservations, mappings, handles, IPC keys and
//! imports, and the devices it may reach as a peer.
//!
//! # Locking
//!
//! Lock order (see [`crate::device`]): a device's `vmm`, then its `mem` (a mapping is recorded in
//! the device's address map too). Two devices' `vmm` locks are never held at once. No backend
//! call runs under a `vmm` lock: a map is recorded first (so nothing else can map there), made
//! with no lock held, and undone on failure; an unmap marks the mapping as going (a second
//! unmap is refused, and nothing else can map there), unmaps with no lock held, then removes
//! it; physical memory is freed after the handle left the tables.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use hal::layout::{device_window_base, DEVICE_WINDOW_SIZE};
use hal::{DeviceAddr, ErrorKind, PhysHandle, ShareName, VaRange};
use mm::vmm::{Handle, HandleTable, VmmError, VmmSpace};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::handles::Kind;

/// Where the VMM half of each device window starts, from the window's base.
pub const VMM_OFFSET: u64 = DEVICE_WINDOW_SIZE / 2;
/// The smallest mapping granularity (2 MiB).
pub const GRANULARITY: u64 = 2 << 20;
/// The granularity of 1 GiB pages.
pub const GRANULARITY_1G: u64 = 1 << 30;

/// The part of device `d`'s window that `aclrtMalloc` uses.
pub fn malloc_window(d: u32) -> VaRange {
    VaRange::try_new(DeviceAddr(device_window_base(d)), VMM_OFFSET).unwrap_or_else(|_| unreachable!())
}

/// The part of device `d`'s window that VMM reservations and IPC imports use.
pub fn vmm_window(d: u32) -> VaRange {
    VaRange::try_new(
        DeviceAddr(device_window_base(d) + VMM_OFFSET),
        DEVICE_WINDOW_SIZE - VMM_OFFSET - hal::layout::DRIVER_RESERVED_BYTES,
    )
    .unwrap_or_else(|_| unreachable!())
}

/// A physical handle as this process knows it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandleRec {
    pub(crate) device: u32,
    pub(crate) phys: PhysHandle,
    pub(crate) p2p: bool,
}

/// One IPC import: the VA it is mapped at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Import {
    pub(crate) device: u32,
    pub(crate) va: VaRange,
    pub(crate) handle: u64,
    /// Process-wide import order (`aclrtIpcMemClose` closes the oldest import of a key).
    pub(crate) order: u64,
}

/// The next [`Import::order`].
pub(crate) static IMPORT_ORDER: AtomicU64 = AtomicU64::new(1);

/// The order of a new IPC import (process-wide, increasing; an atomic step, no lock).
pub(crate) fn next_import_order() -> u64 {
    IMPORT_ORDER.fetch_add(1, Ordering::Relaxed)
}

/// One device's VMM, IPC and peer tables.
#[derive(Debug)]
pub struct VmmState {
    pub(crate) device: u32,
    pub(crate) space: VmmSpace,
    pub(crate) handles: HandleTable,
    pub(crate) recs: BTreeMap<u64, HandleRec>,
    /// Handles this device's memory was exported under, by handle, with the share name.
    pub(crate) exported_handles: BTreeMap<u64, ShareName>,
    /// IPC keys exported from this device's memory, with the address each names.
    pub(crate) exported_keys: BTreeMap<ShareName, u64>,
    /// IPC imports into this device, by key, oldest first.
    pub(crate) imports: BTreeMap<ShareName, Vec<Import>>,
    /// Devices this device may reach as a peer.
    pub(crate) peers: BTreeSet<u32>,
    /// Mapping starts an `aclrtUnmapMem` is unmapping now (with no lock held).
    pub(crate) unmapping: BTreeSet<u64>,
    /// The access link (`aclrtIpcMemSetAttr`) of IPC keys of this device's memory.
    pub(crate) ipc_links: BTreeMap<ShareName, u64>,
    /// The link type (`aclrtMemMapSetLink`) chosen for handles of this device.
    pub(crate) handle_links: BTreeMap<u64, u32>,
}

impl VmmState {
    /// Empty tables of device `d`.
    pub(crate) fn new(d: u32) -> Self {
        Self {
            device: d,
            space: VmmSpace::new(vmm_window(d)),
            handles: HandleTable::new(),
            recs: BTreeMap::new(),
            exported_handles: BTreeMap::new(),
            exported_keys: BTreeMap::new(),
            imports: BTreeMap::new(),
            peers: BTreeSet::new(),
            unmapping: BTreeSet::new(),
            ipc_links: BTreeMap::new(),
            handle_links: BTreeMap::new(),
        }
    }

    /// Records a new handle of this device; returns the value C holds.
    pub(crate) fn new_handle(&mut self, rec: HandleRec, h: Handle) -> u64 {
        // Numbered process-wide, so that a handle kept across a reset or an aclFinalize/aclInit
        // never names a later one (an atomic step, no lock).
        static MADE: AtomicU64 = AtomicU64::new(1);
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        // CAST: 20-bit fields of the handle, masked.
        let id = crate::handles::Handle {
            kind: Kind::Physical,
            device: self.device,
            init: 0,
            generation: ((n >> 20) & 0xF_FFFF) as u32,
            index: (n & 0xF_FFFF) as u32,
        }
        .raw();
        self.recs.insert(id, rec);
        self.handles.insert(id, h);
        id
    }
}

/// The device a physical handle's value names, if it is one.
pub(crate) fn handle_device(handle: u64) -> Option<u32> {
    crate::handles::Handle::device_of(handle, Kind::Physical)
}

/// The `aclrtPhysicalMemProp` fields the C edge read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysProp {
    /// `handleType`.
    pub handle_type: u32,
    /// `allocationType`.
    pub allocation_type: u32,
    /// `memAttr`.
    pub mem_attr: u32,
    /// `location.id`.
    pub location_id: u32,
    /// `location.type`.
    pub location_type: u32,
}

/// Maps a VMM bookkeeping refusal to its code and message.
pub(crate) fn vmm_error(api: &str, e: VmmError) -> AclError {
    let why = match e {
        VmmError::NotReserved => "is not the start of a range reserved with aclrtReserveMemAddress",
        VmmError::StillMapped => "still has mapped memory: call aclrtUnmapMem first",
        VmmError::OutsideReservation => "does not lie inside one reserved range",
        VmmError::Misaligned => "is not aligned to the allocation granularity",
        VmmError::Overlaps => "overlaps memory already mapped there",
        VmmError::SizeMismatch => {
            "does not map the whole handle (size must equal the handle's size, offset 0)"
        }
        VmmError::NotMapped => "is not the start (and size) of a mapping made by aclrtMapMem",
        VmmError::UnknownHandle => "names no live physical handle",
        VmmError::Mixed => {
            "would mix memory of two devices, or allocated and imported memory, in one reserved range"
        }
        VmmError::OutOfVa => "cannot be reserved: no VA range of that size is left",
        VmmError::InvalidArgument => "has a size that is zero or overflows",
    };
    let code =
        if e == VmmError::OutOfVa { ACL_ERROR_RT_MEMORY_ALLOCATION } else { ACL_ERROR_RT_PARAM_INVALID };
    AclError::new(code, format!("{api}: the range {why}"))
}

/// Maps a backend sharing error.
pub(crate) fn share_error(api: &str, e: hal::Error) -> AclError {
    let code = match e.kind() {
        ErrorKind::PermissionDenied => ACL_ERROR_RT_NO_PERMISSION,
        ErrorKind::NotSupported => ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        ErrorKind::OutOfMemory => ACL_ERROR_RT_MEMORY_ALLOCATION,
        ErrorKind::InvalidHandle | ErrorKind::InvalidArgument | ErrorKind::Busy => ACL_ERROR_RT_PARAM_INVALID,
        _ => ACL_ERROR_RT_INTERNAL_ERROR,
    };
    AclError::new(code, format!("{api}: {}", e.detail()))
}

pub(crate) fn unknown_handle(api: &str, handle: u64) -> AclError {
    AclError::rt_invalid(format!("{api}: handle {handle:#x} is not a live physical memory handle"))
}

/// The share name of a `uint64_t` shareable handle.
pub fn handle_name(api: &str, h: u64) -> Result<ShareName> {
    ShareName::try_new(format!("{h:016x}").as_bytes()).filter(|_| h != 0).ok_or_else(|| {
        AclError::rt_invalid(format!("{api}: shareableHandle {h:#x} is not a shareable handle"))
    })
}

/// The `uint64_t` of a shareable handle's name.
pub fn name_handle(name: &ShareName) -> u64 {
    u64::from_str_radix(name.as_str(), 16).unwrap_or(0)
}
