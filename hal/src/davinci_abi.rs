//! `#[repr(C)]` mirrors of the Ascend driver's ioctl arguments, and the command numbers.
//!
//! Data only: no syscalls, no `unsafe`. The davinci backend (`hal-davinci`) passes these structs
//! to `ioctl(2)`; its fake kernel decodes the same structs.
//!
//! # Pinned release
//!
//! The mirrors follow `hicann/driver` as read at commit
//! `9498425b0c56ab03448670d8fcffbefe3153a94f` (`src/ascend_hal/inc/davinci_interface.h`,
//! `src/sdk_driver/svm/v2/command/ioctl/svm_ioctl.h`, `svm_define.h`, and the TRS argument
//! structs of `hicann/runtime` `pkg_inc/driver/hal_pkg/trs_pkg.h`), SVM "v2" (Ascend 910B and
//! 910_93), on LP64 Linux (x86_64 and aarch64). See `shared/spec/davinci-driver-abi.md`.
//!
//! # How the values were derived
//!
//! Field lists are copied by name from the headers; sizes and offsets follow from the C layout
//! rules and are asserted at compile time below. Command numbers use the Linux generic
//! `_IOC` encoding (`dir << 30 | size << 16 | type << 8 | nr`, as on x86_64 and arm64) and are
//! computed from the Rust mirror's size, so a wrong mirror shows as a wrong golden number. The
//! TRS numbers are pinned against the values the spec lists (computed with gcc from the public
//! header). `sizeof(struct devmm_ioctl_arg)` is 344: a 12-byte header, 4 bytes of padding and a
//! 328-byte union whose largest member in this release is `devmm_mem_repair_para` (a count
//! and 20 `{ptr, len}` pairs, `MEM_REPAIR_MAX_CNT` = 20); that figure is our derivation (inferred), not
//! a number the spec states, and is the first thing to check against a real release.
//!
//! Every mirrored struct, constant and command here was re-checked against the headers at
//! that commit (structs compiled with gcc on x86_64, sizes and numbers compared). The spec's
//! ordinal list follows a later `hicann/driver` HEAD (`ef377e9`), where the pre-init commands
//! moved to 101..104 (`ALLOC_PROC_STRUCT` 101, `GET_MMAP_INFO` 104) and stream-ordered pool
//! commands were added; at the pinned commit they are 67 and 70. A driver of that later
//! release refuses our start-up ioctl with `ENOTTY`, and the backend says so (see
//! `hal-davinci`'s `StartError::Abi`) rather than guessing.
//!
//! To move to another release: re-read those headers, update the mirrors, let the assertions
//! and the golden tests say which numbers moved, and bump [`PINNED_RELEASE`].
#![expect(non_camel_case_types, reason = "the uAPI structs keep their C names")]
#![expect(non_snake_case, reason = "the uAPI fields keep their C names (ByteCount, tsId, ...)")]

use core::mem::{align_of, offset_of, size_of};

use static_assertions::const_assert_eq;

/// The driver release these mirrors follow (the `hicann/driver` commit).
pub const PINNED_RELEASE: &str = "hicann/driver@9498425b0c56ab03448670d8fcffbefe3153a94f (SVM v2)";

// ---------------------------------------------------------------------------------------------
// ioctl command encoding.

/// `_IOC_NONE`: no data transfer.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: user space writes the argument to the kernel.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the kernel writes the argument back to user space.
pub const IOC_READ: u32 = 2;

/// Largest argument size the 14-bit size field holds.
pub const IOC_SIZE_MAX: usize = (1 << 14) - 1;

/// `_IOC(dir, ty, nr, size)`. A size that does not fit the 14-bit field fails compilation when
/// used in a `const`.
pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    assert!(size <= IOC_SIZE_MAX, "ioctl argument too large for the size field");
    // CAST: checked to fit 14 bits above.
    (dir << 30) | ((size as u32) << 16) | ((ty as u32) << 8) | nr as u32
}

/// `_IO(ty, nr)`.
pub const fn io(ty: u8, nr: u8) -> u32 {
    ioc(IOC_NONE, ty, nr, 0)
}

/// `_IOW(ty, nr, T)`: `size` is `size_of::<T>()`.
pub const fn iow(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_WRITE, ty, nr, size)
}

/// `_IOR(ty, nr, T)`.
pub const fn ior(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ, ty, nr, size)
}

/// `_IOWR(ty, nr, T)`.
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, size)
}

/// The direction bits of a command number.
pub const fn ioc_dir(cmd: u32) -> u32 {
    cmd >> 30
}

/// The size field of a command number.
pub const fn ioc_size(cmd: u32) -> usize {
    ((cmd >> 16) & 0x3fff) as usize
}

/// The type (magic) byte of a command number.
pub const fn ioc_type(cmd: u32) -> u8 {
    // CAST: masked to 8 bits.
    ((cmd >> 8) & 0xff) as u8
}

/// The ordinal of a command number.
pub const fn ioc_nr(cmd: u32) -> u8 {
    // CAST: masked to 8 bits.
    (cmd & 0xff) as u8
}

// ---------------------------------------------------------------------------------------------
// The davinci_manager multiplexer ('Z').

/// The multiplexer node.
pub const DAVINCI_MANAGER_PATH: &str = "/dev/davinci_manager";
/// Magic of the multiplexer's commands.
pub const DAVINCI_INTF_IOC_MAGIC: u8 = b'Z';
/// Bytes of a module name, NUL included.
pub const DAVINIC_MODULE_NAME_MAX: usize = 256;
/// Binds an fd of the multiplexer to a module (`_IO('Z', 0)`; a pointer is passed anyway).
pub const DAVINCI_INTF_IOCTL_OPEN: u32 = io(DAVINCI_INTF_IOC_MAGIC, 0);
/// Unbinds an fd from its module (`_IO('Z', 1)`).
pub const DAVINCI_INTF_IOCTL_CLOSE: u32 = io(DAVINCI_INTF_IOC_MAGIC, 1);
/// Queries a module's status (`_IO('Z', 2)`).
pub const DAVINCI_INTF_IOCTL_GET_MODULE_STATUS: u32 = io(DAVINCI_INTF_IOC_MAGIC, 2);
/// The SVM (memory, v2) module.
pub const MODULE_SVM: &str = "SVM";
/// The task scheduler module (ioctls).
pub const MODULE_TSDRV: &str = "TSDRV";
/// The task scheduler module (mmap target of rings and doorbells).
pub const MODULE_TSDRV_MMAP: &str = "TSDRV_MMAP";

/// `struct davinci_intf_open_arg` (also the layout of the close argument).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct davinci_intf_open_arg {
    /// NUL-terminated module name.
    pub module_name: [u8; DAVINIC_MODULE_NAME_MAX],
    /// Device the fd is bound for.
    pub device_id: i32,
}

impl davinci_intf_open_arg {
    /// The argument binding to `module` for `device_id`; `None` when the name is too long.
    pub fn new(module: &str, device_id: i32) -> Option<Self> {
        let name = module.as_bytes();
        if name.len() >= DAVINIC_MODULE_NAME_MAX || name.contains(&0) {
            return None;
        }
        let mut module_name = [0u8; DAVINIC_MODULE_NAME_MAX];
        module_name[..name.len()].copy_from_slice(name);
        Some(Self { module_name, device_id })
    }

    /// The module name up to its NUL (empty when it is not valid UTF-8).
    pub fn module(&self) -> &str {
        let end = self.module_name.iter().position(|&b| b == 0).unwrap_or(DAVINIC_MODULE_NAME_MAX);
        core::str::from_utf8(&self.module_name[..end]).unwrap_or("")
    }
}

const_assert_eq!(size_of::<davinci_intf_open_arg>(), 260);
const_assert_eq!(align_of::<davinci_intf_open_arg>(), 4);
const_assert_eq!(offset_of!(davinci_intf_open_arg, device_id), 256);

// ---------------------------------------------------------------------------------------------
// SVM ("devmm") memory commands ('M').

/// Magic of the SVM commands.
pub const DEVMM_SVM_MAGIC: u8 = b'M';
/// Bytes of an IPC name, NUL included.
pub const DEVMM_MAX_NAME_SIZE: usize = 65;
/// Most pids one IPC set-pid call carries.
pub const DEVMM_SECONDARY_PROCESS_NUM: usize = 32;
/// Most `{ptr, len}` pairs of a memory-repair call (sizes the union in this release).
pub const MEM_REPAIR_MAX_CNT: usize = 20;
/// Most segments `DEVMM_SVM_GET_MMAP_INFO` reports: `DEVMM_NORMAL_MAX_VMA_NUM * 2`, where
/// `DEVMM_NORMAL_MAX_VMA_NUM` is `DEVMM_MAX_PHY_DEVICE_NUM` (64) + 4. The kernel refuses a
/// buffer of fewer segments than it would report.
pub const DEVMM_MAX_VMA_NUM: usize = 136;

/// Advise bit: DDR memory.
pub const DV_ADVISE_DDR: u32 = 0x1;
/// Advise bit: HBM memory.
pub const DV_ADVISE_HBM: u32 = 0x2;
/// Advise bit: 2 MiB pages.
pub const DV_ADVISE_HUGEPAGE: u32 = 0x4;
/// Advise bit: populate physical pages now.
pub const DV_ADVISE_POPULATE: u32 = 0x8;
/// Advise bit: peer-to-peer HBM.
pub const DV_ADVISE_P2P_HBM: u32 = 0x10;
/// Advise bit: pinned host memory (the host side of the SVM window).
pub const DV_ADVISE_HOST: u32 = 0x200;
/// Advise bit: lock on the device.
pub const DV_ADVISE_LOCK_DEV: u32 = 0x80;
/// Advise bit: read-only.
pub const DV_ADVISE_READONLY: u32 = 0x1000;
/// Advise bit: 1 GiB pages.
pub const DV_ADVISE_GIANTPAGE: u32 = 0x8000;

/// `struct devmm_devid`: the header of every SVM argument.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_devid {
    /// The logical device id (user mode).
    pub logical_devid: u32,
    /// The physical device id (filled by the kernel).
    pub devid: u32,
    /// The virtual function id.
    pub vfid: u32,
}

/// `struct devmm_mem_alloc_para` (`DEVMM_SVM_ALLOC`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_alloc_para {
    /// Start VA.
    pub p: u64,
    /// Bytes.
    pub size: u64,
}

/// `struct devmm_mem_advise_para` (`DEVMM_SVM_ADVISE`, `DEVMM_SVM_PREFETCH`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_advise_para {
    /// Start VA.
    pub ptr: u64,
    /// Bytes (`size_t`).
    pub count: u64,
    /// `DV_ADVISE_*` bits.
    pub advise: u32,
}

/// `struct devmm_free_pages_para` (`DEVMM_SVM_FREE_PAGES`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_free_pages_para {
    /// Start VA of the allocation.
    pub va: u64,
}

/// `enum devmm_copy_direction`.
pub type devmm_copy_direction = u32;
/// Host to host.
pub const DEVMM_COPY_HOST_TO_HOST: devmm_copy_direction = 0;
/// Host to device.
pub const DEVMM_COPY_HOST_TO_DEVICE: devmm_copy_direction = 1;
/// Device to host.
pub const DEVMM_COPY_DEVICE_TO_HOST: devmm_copy_direction = 2;
/// Device to device.
pub const DEVMM_COPY_DEVICE_TO_DEVICE: devmm_copy_direction = 3;

/// `struct devmm_mem_copy_para` (`DEVMM_SVM_MEMCPY`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_copy_para {
    /// Destination VA (device or host).
    pub dst: u64,
    /// Source VA (device or host).
    pub src: u64,
    /// Bytes (`size_t`).
    pub ByteCount: u64,
    /// C `bool`.
    pub is_support_dev_local_addr: u8,
    /// A `DEVMM_COPY_*` value.
    pub direction: devmm_copy_direction,
}

/// `struct devmm_mem_memset_para` (`DEVMM_SVM_MEMSET8`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_memset_para {
    /// Destination VA.
    pub dst: u64,
    /// Fill value (the low byte for MEMSET8).
    pub value: u64,
    /// Bytes.
    pub count: u64,
    /// Whether `dst` is host-mapped.
    pub hostmapped: u32,
}

/// `struct devmm_mem_create_para` (`DEVMM_SVM_MEM_CREATE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_create_para {
    /// Handle id (out).
    pub id: i32,
    /// Host NUMA node.
    pub host_numa_id: u32,
    /// Bytes.
    pub size: u64,
    /// Flags (0).
    pub flag: u64,
    /// `drv_mem_side`.
    pub side: u32,
    /// Module id.
    pub module_id: u32,
    /// `drv_mem_pg_type`: 0 normal, 1 huge, 2 giant.
    pub pg_type: u32,
    /// `drv_mem_type`: 0 HBM, 1 DDR, ...
    pub mem_type: u32,
    /// Pages.
    pub pg_num: u64,
}

/// `struct devmm_mem_release_para` (`DEVMM_SVM_MEM_RELEASE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_release_para {
    /// Handle id.
    pub id: i32,
    /// `drv_mem_side`.
    pub side: u32,
    /// Pages.
    pub pg_num: u64,
    /// `drv_mem_handle_type`.
    pub handle_type: u32,
}

/// `struct devmm_mem_map_para` (`DEVMM_SVM_MEM_MAP`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_map_para {
    /// Start VA.
    pub va: u64,
    /// Bytes.
    pub size: u64,
    /// Handle id.
    pub id: i32,
    /// `drv_mem_side`.
    pub side: u32,
    /// `drv_mem_pg_type`.
    pub pg_type: u32,
    /// Module id (handle check only).
    pub module_id: u32,
    /// Pages (handle check only).
    pub pg_num: u64,
}

/// `struct devmm_mem_unmap_para` (`DEVMM_SVM_MEM_UNMAP`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_unmap_para {
    /// Start VA (in).
    pub va: u64,
    /// Bytes unmapped (out).
    pub unmap_size: u64,
    /// Side (out).
    pub side: u32,
    /// Logical device (out).
    pub logic_devid: u32,
}

/// `struct devmm_mem_export_para` (`DEVMM_SVM_MEM_EXPORT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_export_para {
    /// Side (in).
    pub side: i32,
    /// Handle id (in).
    pub id: i32,
    /// Share id (out).
    pub share_id: i32,
}

/// `struct devmm_mem_import_para` (`DEVMM_SVM_MEM_IMPORT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_import_para {
    /// Share id (in).
    pub share_id: i32,
    /// Super-pod id of the share (in).
    pub share_sdid: u32,
    /// Logical device of the share (in).
    pub share_devid: u32,
    /// Physical device of the share (in).
    pub share_phy_devid: u32,
    /// `drv_mem_handle_type` (in).
    pub handle_type: u32,
    /// Handle id (out).
    pub id: i32,
    /// Side (out).
    pub side: u32,
    /// Module id (out).
    pub module_id: u32,
    /// Page type (out).
    pub pg_type: u32,
    /// Pages (out).
    pub pg_num: u64,
}

/// `struct devmm_mem_ipc_create_para` (`DEVMM_SVM_IPC_MEM_CREATE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_mem_ipc_create_para {
    /// Start VA.
    pub vptr: u64,
    /// Bytes (`size_t`).
    pub len: u64,
    /// The name (out), NUL-terminated.
    pub name: [u8; DEVMM_MAX_NAME_SIZE],
    /// Bytes of `name`'s buffer.
    pub name_len: u32,
}

/// `struct devmm_mem_ipc_open_para` (`DEVMM_SVM_IPC_MEM_OPEN`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_mem_ipc_open_para {
    /// Where the share is mapped (out).
    pub vptr: u64,
    /// The name, NUL-terminated.
    pub name: [u8; DEVMM_MAX_NAME_SIZE],
}

impl Default for devmm_mem_ipc_create_para {
    fn default() -> Self {
        // CAST: a small constant.
        Self { vptr: 0, len: 0, name: [0; DEVMM_MAX_NAME_SIZE], name_len: DEVMM_MAX_NAME_SIZE as u32 }
    }
}

impl Default for devmm_mem_ipc_open_para {
    fn default() -> Self {
        Self { vptr: 0, name: [0; DEVMM_MAX_NAME_SIZE] }
    }
}

/// A NUL-terminated IPC name buffer holding `name`; `None` when it does not fit (64 bytes at
/// most) or holds a NUL.
pub fn ipc_name(name: &[u8]) -> Option<[u8; DEVMM_MAX_NAME_SIZE]> {
    if name.len() >= DEVMM_MAX_NAME_SIZE || name.contains(&0) {
        return None;
    }
    let mut out = [0u8; DEVMM_MAX_NAME_SIZE];
    out[..name.len()].copy_from_slice(name);
    Some(out)
}

/// The bytes of a NUL-terminated IPC name buffer, without the NUL.
pub fn ipc_name_bytes(buf: &[u8; DEVMM_MAX_NAME_SIZE]) -> &[u8] {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    &buf[..end]
}

/// `struct devmm_mem_ipc_close_para` (`DEVMM_SVM_IPC_MEM_CLOSE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_ipc_close_para {
    /// Where the share is mapped.
    pub vptr: u64,
}

/// `struct devmm_mem_ipc_set_pid_para` (`DEVMM_SVM_IPC_MEM_SET_PID`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_mem_ipc_set_pid_para {
    /// The name, NUL-terminated.
    pub name: [u8; DEVMM_MAX_NAME_SIZE],
    /// Whitelisted pids.
    pub set_pid: [i32; DEVMM_SECONDARY_PROCESS_NUM],
    /// How many of `set_pid` count.
    pub num: u32,
    /// Super-pod id (`u32::MAX`: the current pod).
    pub sdid: u32,
}

impl Default for devmm_mem_ipc_set_pid_para {
    fn default() -> Self {
        Self {
            name: [0; DEVMM_MAX_NAME_SIZE],
            set_pid: [0; DEVMM_SECONDARY_PROCESS_NUM],
            num: 0,
            sdid: u32::MAX,
        }
    }
}

/// `struct devmm_mem_ipc_destroy_para` (`DEVMM_SVM_IPC_MEM_DESTROY`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_mem_ipc_destroy_para {
    /// The name, NUL-terminated.
    pub name: [u8; DEVMM_MAX_NAME_SIZE],
}

impl Default for devmm_mem_ipc_destroy_para {
    fn default() -> Self {
        Self { name: [0; DEVMM_MAX_NAME_SIZE] }
    }
}

/// `struct devmm_mem_query_size_para` (`DEVMM_SVM_IPC_MEM_QUERY`): what a share is.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_mem_query_size_para {
    /// The name, NUL-terminated.
    pub name: [u8; DEVMM_MAX_NAME_SIZE],
    /// Whether 2 MiB pages back the share (out).
    pub is_huge: i32,
    /// The physical device of the share (out).
    pub phy_devid: u32,
    /// Bytes of the share (out, `size_t`).
    pub len: u64,
}

impl Default for devmm_mem_query_size_para {
    fn default() -> Self {
        Self { name: [0; DEVMM_MAX_NAME_SIZE], is_huge: 0, phy_devid: 0, len: 0 }
    }
}

/// `enum ShmemAttrType`: whether importers are checked against the whitelist.
pub const SHMEM_ATTR_TYPE_NO_WLIST_IN_SERVER: u32 = 1;
/// `SHMEM_NO_WLIST_ENABLE`: any process may import.
pub const SHMEM_NO_WLIST_ENABLE: u64 = 1;

/// `struct devmm_mem_ipc_set_attr_para` (`DEVMM_SVM_IPC_MEM_SET_ATTR`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_mem_ipc_set_attr_para {
    /// `SHMEM_ATTR_TYPE_*`.
    pub type_: u32,
    /// The attribute's value.
    pub attr: u64,
    /// The name, NUL-terminated.
    pub name: [u8; DEVMM_MAX_NAME_SIZE],
}

impl Default for devmm_mem_ipc_set_attr_para {
    fn default() -> Self {
        Self { type_: 0, attr: 0, name: [0; DEVMM_MAX_NAME_SIZE] }
    }
}

/// `enum ShareHandleAttrType`: whether importers of a shareable handle are checked against its
/// whitelist.
pub const SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER: u32 = 0;
/// `SHR_HANDLE_NO_WLIST_ENABLE`: any process may import the handle.
pub const SHR_HANDLE_NO_WLIST_ENABLE: u32 = 1;
/// `drv_mem_handle_type` `MEM_HANDLE_TYPE_NONE`: a handle shared inside one server.
pub const MEM_HANDLE_TYPE_NONE: u32 = 0;
/// `SVM_SHARE_MEM_MAX_PID_CNT`: most pids one `MEM_SET_PID` may whitelist.
pub const SVM_SHARE_MEM_MAX_PID_CNT: usize = 65_535;

/// `struct devmm_mem_set_pid_para` (`DEVMM_SVM_MEM_SET_PID`): whitelists the pids at the
/// user address `pid_list` for a shared VMM handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_set_pid_para {
    /// The share (from `MEM_EXPORT`).
    pub share_id: i32,
    /// How many pids `pid_list` holds.
    pub pid_num: u32,
    /// User address of `pid_num` `int`s.
    pub pid_list: u64,
}

/// `struct ShareHandleAttr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShareHandleAttr {
    /// `SHR_HANDLE_WLIST_ENABLE` (0) or `SHR_HANDLE_NO_WLIST_ENABLE` (1).
    pub enableFlag: u32,
    /// Reserved.
    pub rsv: [u32; 8],
}

/// `struct devmm_mem_set_attr_para` (`DEVMM_SVM_MEM_SET_ATTR`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_set_attr_para {
    /// The share (in).
    pub share_id: i32,
    /// `ShareHandleAttrType` (in).
    pub type_: u32,
    /// The attribute (in).
    pub attr: ShareHandleAttr,
}

/// `struct ShareHandleGetInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShareHandleGetInfo {
    /// The physical device whose memory the share holds.
    pub phyDevid: u32,
    /// Reserved.
    pub reserve: [u32; 8],
}

/// `struct devmm_mem_get_info_para` (`DEVMM_SVM_MEM_GET_INFO`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_get_info_para {
    /// The share (in).
    pub share_id: i32,
    /// The device the share was exported from (in).
    pub share_devid: u32,
    /// What the share holds (out).
    pub info: ShareHandleGetInfo,
}

/// `halMemGetInfo` type: DDR sizes (the `mem_type` of a memory query).
pub const MEM_INFO_TYPE_DDR_SIZE: u32 = 1;
/// `halMemGetInfo` type: HBM sizes.
pub const MEM_INFO_TYPE_HBM_SIZE: u32 = 2;

/// `struct devmm_query_device_mem_usedinfo` (`DEVMM_SVM_QUERY_MEM_USEDINFO`): the device's
/// memory by page class. Every size is `size_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_query_device_mem_usedinfo {
    /// `MEM_INFO_TYPE_*` (in).
    pub mem_type: u32,
    /// Bytes of memory (out).
    pub normal_total_size: u64,
    /// Bytes free (out).
    pub normal_free_size: u64,
    /// Bytes of the 2 MiB page pool (out).
    pub huge_total_size: u64,
    /// Bytes of it free (out).
    pub huge_free_size: u64,
    /// Bytes of the 1 GiB page pool (out).
    pub giant_total_size: u64,
    /// Bytes of it free (out).
    pub giant_free_size: u64,
}

/// `struct devmm_mmap_addr_seg`: one segment of the SVM window to mmap.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mmap_addr_seg {
    /// Fixed start VA.
    pub va: u64,
    /// Bytes.
    pub size: u64,
}

/// `struct devmm_get_mmap_para` (`DEVMM_SVM_GET_MMAP_INFO`). `segs` is a user pointer to
/// `seg_num` segments the kernel fills.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_get_mmap_para {
    /// Segments (in: capacity; out: count).
    pub seg_num: u32,
    /// C `bool`: map with `MAP_NPTMV`.
    pub is_need_map_nptmv: u8,
    /// Host pid (custom dynamic).
    pub hostpid: i32,
    /// AI CPU pid (custom dynamic).
    pub aicpupid: i32,
    /// User address of a `devmm_mmap_addr_seg` array.
    pub segs: u64,
}

/// `struct MemRepairAddr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemRepairAddr {
    /// Start VA.
    pub ptr: u64,
    /// Bytes.
    pub len: u64,
}

/// `struct devmm_mem_repair_para`: not used by the backend; mirrored because it is the largest
/// union member and so decides every SVM command number.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct devmm_mem_repair_para {
    /// Pairs used.
    pub count: u32,
    /// The pairs.
    pub repair_addrs: [MemRepairAddr; MEM_REPAIR_MAX_CNT],
}

/// Bytes of the union of `struct devmm_ioctl_arg` in the pinned release.
pub const DEVMM_IOCTL_DATA_BYTES: usize = size_of::<devmm_mem_repair_para>();

/// `struct devmm_ioctl_arg`: the header and the per-command union, held as aligned words.
///
/// The union is kept as plain words so that this crate stays free of `unsafe`; [`Self::put`]
/// and [`Self::get`] move a per-command struct in and out by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct devmm_ioctl_arg {
    /// The device header.
    pub head: devmm_devid,
    /// The union's bytes (8-byte aligned, as in C).
    pub data: [u64; DEVMM_IOCTL_DATA_BYTES / 8],
}

impl Default for devmm_ioctl_arg {
    fn default() -> Self {
        Self { head: devmm_devid::default(), data: [0; DEVMM_IOCTL_DATA_BYTES / 8] }
    }
}

/// A per-command member of the `devmm_ioctl_arg` union: plain old data that converts to and
/// from its little-endian C image field by field.
pub trait DevmmPara: Copy + Default {
    /// Writes the C image of `self` into `out` (which is at least `size_of::<Self>()` long).
    fn encode(&self, out: &mut [u8]);
    /// Reads the C image from `bytes`.
    fn decode(bytes: &[u8]) -> Self;
}

fn put_u64(out: &mut [u8], at: usize, v: u64) {
    out[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}
fn put_u32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}
fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

/// Implements [`DevmmPara`] from a field list of `(name, kind)` with offsets taken from the
/// mirror itself, so the image is right by construction.
macro_rules! devmm_para {
    ($ty:ident { $($field:ident : $kind:ident),* $(,)? }) => {
        impl DevmmPara for $ty {
            fn encode(&self, out: &mut [u8]) {
                $( devmm_para!(@put $kind, out, offset_of!($ty, $field), self.$field); )*
            }
            fn decode(bytes: &[u8]) -> Self {
                let mut v = Self::default();
                $( devmm_para!(@get $kind, bytes, offset_of!($ty, $field), v.$field); )*
                v
            }
        }
    };
    (@put u64, $out:ident, $at:expr, $v:expr) => { put_u64($out, $at, $v) };
    (@put u32, $out:ident, $at:expr, $v:expr) => { put_u32($out, $at, $v) };
    // CAST: i32 and u32 share their bit image.
    (@put i32, $out:ident, $at:expr, $v:expr) => { put_u32($out, $at, $v as u32) };
    (@put u8, $out:ident, $at:expr, $v:expr) => { $out[$at] = $v };
    (@put bytes, $out:ident, $at:expr, $v:expr) => { $out[$at..$at + $v.len()].copy_from_slice(&$v) };
    (@put i32s, $out:ident, $at:expr, $v:expr) => {
        for (i, x) in $v.iter().enumerate() {
            // CAST: i32 and u32 share their bit image.
            put_u32($out, $at + 4 * i, *x as u32);
        }
    };
    (@put u32s, $out:ident, $at:expr, $v:expr) => {
        for (i, x) in $v.iter().enumerate() {
            put_u32($out, $at + 4 * i, *x);
        }
    };
    (@put para, $out:ident, $at:expr, $v:expr) => { $v.encode(&mut $out[$at..]) };
    (@get u64, $b:ident, $at:expr, $dst:expr) => { $dst = get_u64($b, $at) };
    (@get u32, $b:ident, $at:expr, $dst:expr) => { $dst = get_u32($b, $at) };
    // CAST: i32 and u32 share their bit image.
    (@get i32, $b:ident, $at:expr, $dst:expr) => { $dst = get_u32($b, $at) as i32 };
    (@get u8, $b:ident, $at:expr, $dst:expr) => { $dst = $b[$at] };
    (@get bytes, $b:ident, $at:expr, $dst:expr) => {
        let n = $dst.len();
        $dst.copy_from_slice(&$b[$at..$at + n])
    };
    (@get i32s, $b:ident, $at:expr, $dst:expr) => {
        for (i, x) in $dst.iter_mut().enumerate() {
            // CAST: i32 and u32 share their bit image.
            *x = get_u32($b, $at + 4 * i) as i32;
        }
    };
    (@get u32s, $b:ident, $at:expr, $dst:expr) => {
        for (i, x) in $dst.iter_mut().enumerate() {
            *x = get_u32($b, $at + 4 * i);
        }
    };
    (@get para, $b:ident, $at:expr, $dst:expr) => { $dst = DevmmPara::decode(&$b[$at..]) };
}

devmm_para!(devmm_mem_alloc_para { p: u64, size: u64 });
devmm_para!(devmm_mem_advise_para { ptr: u64, count: u64, advise: u32 });
devmm_para!(devmm_free_pages_para { va: u64 });
devmm_para!(devmm_mem_copy_para {
    dst: u64,
    src: u64,
    ByteCount: u64,
    is_support_dev_local_addr: u8,
    direction: u32,
});
devmm_para!(devmm_mem_memset_para { dst: u64, value: u64, count: u64, hostmapped: u32 });
devmm_para!(devmm_mem_create_para {
    id: i32,
    host_numa_id: u32,
    size: u64,
    flag: u64,
    side: u32,
    module_id: u32,
    pg_type: u32,
    mem_type: u32,
    pg_num: u64,
});
devmm_para!(devmm_mem_release_para { id: i32, side: u32, pg_num: u64, handle_type: u32 });
devmm_para!(devmm_mem_map_para {
    va: u64,
    size: u64,
    id: i32,
    side: u32,
    pg_type: u32,
    module_id: u32,
    pg_num: u64,
});
devmm_para!(devmm_mem_unmap_para { va: u64, unmap_size: u64, side: u32, logic_devid: u32 });
devmm_para!(devmm_mem_export_para { side: i32, id: i32, share_id: i32 });
devmm_para!(devmm_mem_import_para {
    share_id: i32,
    share_sdid: u32,
    share_devid: u32,
    share_phy_devid: u32,
    handle_type: u32,
    id: i32,
    side: u32,
    module_id: u32,
    pg_type: u32,
    pg_num: u64,
});
devmm_para!(devmm_mem_set_pid_para { share_id: i32, pid_num: u32, pid_list: u64 });
devmm_para!(ShareHandleAttr { enableFlag: u32, rsv: u32s });
devmm_para!(devmm_mem_set_attr_para { share_id: i32, type_: u32, attr: para });
devmm_para!(ShareHandleGetInfo { phyDevid: u32, reserve: u32s });
devmm_para!(devmm_mem_get_info_para { share_id: i32, share_devid: u32, info: para });
devmm_para!(devmm_mem_ipc_close_para { vptr: u64 });
devmm_para!(devmm_mem_ipc_create_para { vptr: u64, len: u64, name: bytes, name_len: u32 });
devmm_para!(devmm_mem_ipc_open_para { vptr: u64, name: bytes });
devmm_para!(devmm_mem_ipc_set_pid_para { name: bytes, set_pid: i32s, num: u32, sdid: u32 });
devmm_para!(devmm_mem_ipc_destroy_para { name: bytes });
devmm_para!(devmm_mem_ipc_set_attr_para { type_: u32, attr: u64, name: bytes });
devmm_para!(devmm_mem_query_size_para { name: bytes, is_huge: i32, phy_devid: u32, len: u64 });
devmm_para!(devmm_query_device_mem_usedinfo {
    mem_type: u32,
    normal_total_size: u64,
    normal_free_size: u64,
    huge_total_size: u64,
    huge_free_size: u64,
    giant_total_size: u64,
    giant_free_size: u64,
});
devmm_para!(devmm_get_mmap_para {
    seg_num: u32,
    is_need_map_nptmv: u8,
    hostpid: i32,
    aicpupid: i32,
    segs: u64,
});

impl devmm_ioctl_arg {
    /// An argument for `logical_devid` carrying `para`.
    pub fn with<P: DevmmPara>(logical_devid: u32, para: &P) -> Self {
        let mut arg =
            Self { head: devmm_devid { logical_devid, ..Default::default() }, ..Default::default() };
        arg.put(para);
        arg
    }

    /// Replaces the union's bytes with `para`'s image (the rest zeroed).
    pub fn put<P: DevmmPara>(&mut self, para: &P) {
        let mut bytes = [0u8; DEVMM_IOCTL_DATA_BYTES];
        para.encode(&mut bytes);
        for (word, chunk) in self.data.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            *word = u64::from_ne_bytes(w);
        }
    }

    /// Reads the union as `P`.
    pub fn get<P: DevmmPara>(&self) -> P {
        let mut bytes = [0u8; DEVMM_IOCTL_DATA_BYTES];
        for (word, chunk) in self.data.iter().zip(bytes.chunks_exact_mut(8)) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        P::decode(&bytes)
    }
}

const_assert_eq!(size_of::<devmm_devid>(), 12);
const_assert_eq!(size_of::<devmm_mem_alloc_para>(), 16);
const_assert_eq!(size_of::<devmm_mem_advise_para>(), 24);
const_assert_eq!(offset_of!(devmm_mem_advise_para, advise), 16);
const_assert_eq!(size_of::<devmm_free_pages_para>(), 8);
const_assert_eq!(size_of::<devmm_mem_copy_para>(), 32);
const_assert_eq!(offset_of!(devmm_mem_copy_para, is_support_dev_local_addr), 24);
const_assert_eq!(offset_of!(devmm_mem_copy_para, direction), 28);
const_assert_eq!(size_of::<devmm_mem_memset_para>(), 32);
const_assert_eq!(offset_of!(devmm_mem_memset_para, hostmapped), 24);
const_assert_eq!(size_of::<devmm_mem_create_para>(), 48);
const_assert_eq!(offset_of!(devmm_mem_create_para, side), 24);
const_assert_eq!(offset_of!(devmm_mem_create_para, pg_num), 40);
const_assert_eq!(size_of::<devmm_mem_release_para>(), 24);
const_assert_eq!(offset_of!(devmm_mem_release_para, handle_type), 16);
const_assert_eq!(size_of::<devmm_mem_map_para>(), 40);
const_assert_eq!(offset_of!(devmm_mem_map_para, id), 16);
const_assert_eq!(offset_of!(devmm_mem_map_para, pg_num), 32);
const_assert_eq!(size_of::<devmm_mem_unmap_para>(), 24);
const_assert_eq!(size_of::<devmm_mem_export_para>(), 12);
const_assert_eq!(size_of::<devmm_mem_import_para>(), 48);
const_assert_eq!(offset_of!(devmm_mem_import_para, pg_num), 40);
const_assert_eq!(size_of::<devmm_mem_set_pid_para>(), 16);
const_assert_eq!(offset_of!(devmm_mem_set_pid_para, pid_list), 8);
const_assert_eq!(size_of::<ShareHandleAttr>(), 36);
const_assert_eq!(size_of::<devmm_mem_set_attr_para>(), 44);
const_assert_eq!(offset_of!(devmm_mem_set_attr_para, attr), 8);
const_assert_eq!(size_of::<ShareHandleGetInfo>(), 36);
const_assert_eq!(size_of::<devmm_mem_get_info_para>(), 44);
const_assert_eq!(offset_of!(devmm_mem_get_info_para, info), 8);
const_assert_eq!(size_of::<devmm_mem_ipc_create_para>(), 88);
const_assert_eq!(offset_of!(devmm_mem_ipc_create_para, name), 16);
const_assert_eq!(offset_of!(devmm_mem_ipc_create_para, name_len), 84);
const_assert_eq!(size_of::<devmm_mem_ipc_open_para>(), 80);
const_assert_eq!(size_of::<devmm_mem_ipc_close_para>(), 8);
const_assert_eq!(size_of::<devmm_mem_ipc_set_pid_para>(), 204);
const_assert_eq!(offset_of!(devmm_mem_ipc_set_pid_para, set_pid), 68);
const_assert_eq!(offset_of!(devmm_mem_ipc_set_pid_para, num), 196);
const_assert_eq!(size_of::<devmm_mem_ipc_destroy_para>(), 65);
const_assert_eq!(size_of::<devmm_mem_ipc_set_attr_para>(), 88);
const_assert_eq!(offset_of!(devmm_mem_ipc_set_attr_para, name), 16);
const_assert_eq!(size_of::<devmm_mem_query_size_para>(), 88);
const_assert_eq!(offset_of!(devmm_mem_query_size_para, is_huge), 68);
const_assert_eq!(offset_of!(devmm_mem_query_size_para, len), 80);
const_assert_eq!(size_of::<devmm_query_device_mem_usedinfo>(), 56);
const_assert_eq!(offset_of!(devmm_query_device_mem_usedinfo, normal_total_size), 8);
const_assert_eq!(offset_of!(devmm_query_device_mem_usedinfo, giant_free_size), 48);
const_assert_eq!(size_of::<devmm_mmap_addr_seg>(), 16);
const_assert_eq!(size_of::<devmm_get_mmap_para>(), 24);
const_assert_eq!(offset_of!(devmm_get_mmap_para, hostpid), 8);
const_assert_eq!(offset_of!(devmm_get_mmap_para, segs), 16);
const_assert_eq!(size_of::<devmm_mem_repair_para>(), 328);
const_assert_eq!(size_of::<devmm_ioctl_arg>(), 344);
const_assert_eq!(align_of::<devmm_ioctl_arg>(), 8);
const_assert_eq!(offset_of!(devmm_ioctl_arg, data), 16);

const DEVMM_ARG: usize = size_of::<devmm_ioctl_arg>();

/// Sets access of a VMM mapping (`_IOW('M', 1)`).
pub const DEVMM_SVM_MEM_SET_ACCESS: u32 = iow(DEVMM_SVM_MAGIC, 1, DEVMM_ARG);
/// Destroys an IPC share by name (`_IOW('M', 28)`).
pub const DEVMM_SVM_IPC_MEM_DESTROY: u32 = iow(DEVMM_SVM_MAGIC, 28, DEVMM_ARG);
/// Sets an attribute of an IPC share (`_IOW('M', 34)`).
pub const DEVMM_SVM_IPC_MEM_SET_ATTR: u32 = iow(DEVMM_SVM_MAGIC, 34, DEVMM_ARG);
/// Queries an IPC share's size, page size and device (`_IOWR('M', 29)`).
pub const DEVMM_SVM_IPC_MEM_QUERY: u32 = iowr(DEVMM_SVM_MAGIC, 29, DEVMM_ARG);
/// Queries the device's memory sizes (`_IOWR('M', 47)`).
pub const DEVMM_SVM_QUERY_MEM_USEDINFO: u32 = iowr(DEVMM_SVM_MAGIC, 47, DEVMM_ARG);
/// Reserves VA in the kernel's view (`_IOW('M', 3)`).
pub const DEVMM_SVM_ALLOC: u32 = iow(DEVMM_SVM_MAGIC, 3, DEVMM_ARG);
/// Frees the pages of an allocation (`_IOW('M', 4)`).
pub const DEVMM_SVM_FREE_PAGES: u32 = iow(DEVMM_SVM_MAGIC, 4, DEVMM_ARG);
/// Synchronous copy (`_IOWR('M', 5)`).
pub const DEVMM_SVM_MEMCPY: u32 = iowr(DEVMM_SVM_MAGIC, 5, DEVMM_ARG);
/// Advise (populate) pages (`_IOW('M', 13)`).
pub const DEVMM_SVM_ADVISE: u32 = iow(DEVMM_SVM_MAGIC, 13, DEVMM_ARG);
/// Byte memset (`_IOWR('M', 15)`).
pub const DEVMM_SVM_MEMSET8: u32 = iowr(DEVMM_SVM_MAGIC, 15, DEVMM_ARG);
/// Opens an IPC share by name at the VA the caller chose (`_IOW('M', 21)`: nothing comes back).
pub const DEVMM_SVM_IPC_MEM_OPEN: u32 = iow(DEVMM_SVM_MAGIC, 21, DEVMM_ARG);
/// Closes an opened IPC share (`_IOW('M', 22)`).
pub const DEVMM_SVM_IPC_MEM_CLOSE: u32 = iow(DEVMM_SVM_MAGIC, 22, DEVMM_ARG);
/// Creates an IPC share (`_IOWR('M', 27)`).
pub const DEVMM_SVM_IPC_MEM_CREATE: u32 = iowr(DEVMM_SVM_MAGIC, 27, DEVMM_ARG);
/// Sets an IPC share's pid whitelist (`_IOW('M', 32)`).
pub const DEVMM_SVM_IPC_MEM_SET_PID: u32 = iow(DEVMM_SVM_MAGIC, 32, DEVMM_ARG);
/// Creates a VMM physical handle (`_IOWR('M', 50)`).
pub const DEVMM_SVM_MEM_CREATE: u32 = iowr(DEVMM_SVM_MAGIC, 50, DEVMM_ARG);
/// Releases a VMM physical handle (`_IOWR('M', 51)`).
pub const DEVMM_SVM_MEM_RELEASE: u32 = iowr(DEVMM_SVM_MAGIC, 51, DEVMM_ARG);
/// Maps a VMM handle at a VA (`_IOW('M', 52)`).
pub const DEVMM_SVM_MEM_MAP: u32 = iow(DEVMM_SVM_MAGIC, 52, DEVMM_ARG);
/// Unmaps a VMM mapping (`_IOWR('M', 53)`).
pub const DEVMM_SVM_MEM_UNMAP: u32 = iowr(DEVMM_SVM_MAGIC, 53, DEVMM_ARG);
/// Exports a VMM handle (`_IOWR('M', 54)`).
pub const DEVMM_SVM_MEM_EXPORT: u32 = iowr(DEVMM_SVM_MAGIC, 54, DEVMM_ARG);
/// Imports a VMM share (`_IOWR('M', 55)`).
pub const DEVMM_SVM_MEM_IMPORT: u32 = iowr(DEVMM_SVM_MAGIC, 55, DEVMM_ARG);
/// Whitelists pids for a shared VMM handle (`_IOW('M', 56)`).
pub const DEVMM_SVM_MEM_SET_PID: u32 = iow(DEVMM_SVM_MAGIC, 56, DEVMM_ARG);
/// Sets an attribute of a shared VMM handle (`_IOW('M', 57)`).
pub const DEVMM_SVM_MEM_SET_ATTR: u32 = iow(DEVMM_SVM_MAGIC, 57, DEVMM_ARG);
/// Reports what a shared VMM handle holds (`_IOWR('M', 59)`).
pub const DEVMM_SVM_MEM_GET_INFO: u32 = iowr(DEVMM_SVM_MAGIC, 59, DEVMM_ARG);
/// Creates the process's SVM state (`_IOW('M', 67)`; above `DEVMM_SVM_CMD_USE_PRIVATE_MAX_CMD`
/// (66), so allowed before init).
pub const DEVMM_SVM_ALLOC_PROC_STRUCT: u32 = iow(DEVMM_SVM_MAGIC, 67, DEVMM_ARG);
/// Reports the SVM window segments to mmap (`_IOWR('M', 70)`; allowed before init).
pub const DEVMM_SVM_GET_MMAP_INFO: u32 = iowr(DEVMM_SVM_MAGIC, 70, DEVMM_ARG);

// ---------------------------------------------------------------------------------------------
// TRS task queues ('X').

/// Magic of the TRS commands.
pub const TRS_MAGIC: u8 = b'X';
/// `SQCQ_RTS_INFO_LENGTH`.
pub const SQCQ_RTS_INFO_LENGTH: usize = 5;
/// `SQCQ_RESV_LENGTH`.
pub const SQCQ_RESV_LENGTH: usize = 8;
/// `drvSqCqType_t`: a normal queue pair.
pub const DRV_NORMAL_TYPE: u32 = 0;
/// Default SQE bytes.
pub const TRS_SQE_SIZE: u32 = 64;

/// `struct halSqCqInputInfo` (`TRS_SQCQ_ALLOC`; the kernel writes the ids back).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct halSqCqInputInfo {
    /// `drvSqCqType_t`.
    pub type_: u32,
    /// Task scheduler id.
    pub tsId: u32,
    /// Bytes per SQE.
    pub sqeSize: u32,
    /// Bytes per CQE.
    pub cqeSize: u32,
    /// SQ depth.
    pub sqeDepth: u32,
    /// CQ depth.
    pub cqeDepth: u32,
    /// Group id.
    pub grpId: u32,
    /// `TSDRV_FLAG_*`.
    pub flag: u32,
    /// CQ id (in when reused, out otherwise).
    pub cqId: u32,
    /// SQ id (in when reused, out otherwise).
    pub sqId: u32,
    /// Words for the scheduler's mailbox.
    pub info: [u32; SQCQ_RTS_INFO_LENGTH],
    /// Bytes at `ext_info`.
    pub ext_info_len: u32,
    /// User address of an extension (`void *`).
    pub ext_info: u64,
    /// Reserved; `res[0..2]` carries a `trs_uio_info` pointer in the mapped-ring mode.
    pub res: [u32; SQCQ_RESV_LENGTH - 3],
}

/// `struct halSqCqFreeInfo` (`TRS_SQCQ_FREE`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct halSqCqFreeInfo {
    /// `drvSqCqType_t`.
    pub type_: u32,
    /// Task scheduler id.
    pub tsId: u32,
    /// SQ id.
    pub sqId: u32,
    /// CQ id.
    pub cqId: u32,
    /// Bit 0: keep the CQ.
    pub flag: u32,
    /// Reserved.
    pub res: [u32; SQCQ_RESV_LENGTH],
}

/// `struct halTaskSendInfo` (`TRS_SQCQ_SEND`, the kernel-send mode).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct halTaskSendInfo {
    /// `drvSqCqType_t`.
    pub type_: u32,
    /// Task scheduler id.
    pub tsId: u32,
    /// SQ id.
    pub sqId: u32,
    /// Milliseconds to wait for room (-1: forever).
    pub timeout: i32,
    /// User address of `sqe_num` SQEs.
    pub sqe_addr: u64,
    /// SQEs to send.
    pub sqe_num: u32,
    /// Ring position of the first (out).
    pub pos: u32,
    /// Reserved.
    pub res: [u32; SQCQ_RESV_LENGTH],
}

/// `struct halReportRecvInfo` (`TRS_SQCQ_RECV`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct halReportRecvInfo {
    /// `drvSqCqType_t`.
    pub type_: u32,
    /// Task scheduler id.
    pub tsId: u32,
    /// CQ id.
    pub cqId: u32,
    /// Milliseconds to wait (-1: forever).
    pub timeout: i32,
    /// User address of room for `cqe_num` CQEs.
    pub cqe_addr: u64,
    /// CQEs wanted.
    pub cqe_num: u32,
    /// CQEs copied (out).
    pub report_cqe_num: u32,
    /// Stream id to match.
    pub stream_id: u32,
    /// Task id to match (all ones: any).
    pub task_id: u32,
    /// Reserved.
    pub res: [u32; SQCQ_RESV_LENGTH],
}

/// `SQCQ_CONFIG_INFO_LENGTH`.
pub const SQCQ_CONFIG_INFO_LENGTH: usize = 8;
/// `drvSqCqPropType_t`: `DRV_SQCQ_PROP_SQ_PAUSE`.
pub const DRV_SQCQ_PROP_SQ_PAUSE: u32 = 8;
/// `drvSqCqPropType_t`: `DRV_SQCQ_PROP_SQ_RESUME`.
pub const DRV_SQCQ_PROP_SQ_RESUME: u32 = 10;
/// `drvSqCqPropType_t`: `DRV_SQCQ_PROP_SQCQ_RESET`.
pub const DRV_SQCQ_PROP_SQCQ_RESET: u32 = 11;

/// `struct halSqCqConfigInfo` (`TRS_SQCQ_CONFIG`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct halSqCqConfigInfo {
    /// `drvSqCqType_t`.
    pub type_: u32,
    /// Task scheduler id.
    pub tsId: u32,
    /// SQ id (`u32::MAX`: a pause or resume configures every SQ of the process).
    pub sqId: u32,
    /// CQ id (`u32::MAX`: likewise for the CQs).
    pub cqId: u32,
    /// `drvSqCqPropType_t`: which property.
    pub prop: u32,
    /// `value[0]` the value; `value[SQCQ_CONFIG_INFO_LENGTH - 1]` a flag (0 local, 1 remote).
    pub value: [u32; SQCQ_CONFIG_INFO_LENGTH],
}

const_assert_eq!(size_of::<halSqCqConfigInfo>(), 52);
const_assert_eq!(size_of::<halSqCqInputInfo>(), 96);
const_assert_eq!(offset_of!(halSqCqInputInfo, info), 40);
const_assert_eq!(offset_of!(halSqCqInputInfo, ext_info), 64);
const_assert_eq!(offset_of!(halSqCqInputInfo, res), 72);
const_assert_eq!(size_of::<halSqCqFreeInfo>(), 52);
const_assert_eq!(size_of::<halTaskSendInfo>(), 64);
const_assert_eq!(offset_of!(halTaskSendInfo, sqe_addr), 16);
const_assert_eq!(offset_of!(halTaskSendInfo, pos), 28);
const_assert_eq!(size_of::<halReportRecvInfo>(), 72);
const_assert_eq!(offset_of!(halReportRecvInfo, cqe_addr), 16);
const_assert_eq!(offset_of!(halReportRecvInfo, report_cqe_num), 28);
const_assert_eq!(offset_of!(halReportRecvInfo, task_id), 36);

impl halSqCqInputInfo {
    /// Puts the user address of a [`trs_uio_info`] into `res[0..2]` (the mapped-ring mode).
    pub fn set_uio_info(&mut self, addr: u64) {
        let b = addr.to_ne_bytes();
        let (lo, hi) = b.split_at(4);
        self.res[0] = u32::from_ne_bytes([lo[0], lo[1], lo[2], lo[3]]);
        self.res[1] = u32::from_ne_bytes([hi[0], hi[1], hi[2], hi[3]]);
    }

    /// The user address of a [`trs_uio_info`] in `res[0..2]` (0: the kernel-send mode).
    pub fn uio_info(&self) -> u64 {
        let (lo, hi) = (self.res[0].to_ne_bytes(), self.res[1].to_ne_bytes());
        u64::from_ne_bytes([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]])
    }
}

/// `enum trs_uio_addr_type`: the shared-info page (RW mapping).
pub const TRS_UIO_SHR_INFO: usize = 0;
/// The SQ head page (RW mapping).
pub const TRS_UIO_HEAD: usize = 1;
/// The SQ tail page (RW mapping).
pub const TRS_UIO_TAIL: usize = 2;
/// The doorbell register page (second mapping).
pub const TRS_UIO_DB: usize = 3;
/// The SQ head register page (second mapping).
pub const TRS_UIO_HEAD_REG: usize = 4;
/// The SQ tail register page (second mapping).
pub const TRS_UIO_TAIL_REG: usize = 5;
/// Entries of `trs_uio_info.sq_ctrl_addr`.
pub const TRS_UIO_ADDR_MAX: usize = 6;

/// `struct trs_uio_info`: where the user mapped the SQ ring and its control pages; passed by
/// address in `halSqCqInputInfo.res[0..2]` to `TRS_SQCQ_ALLOC`, which remaps them (adding each
/// register's in-page offset to its `sq_ctrl_addr`) and sets `uio_flag`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct trs_uio_info {
    /// User VA of the SQ ring.
    pub sq_que_addr: u64,
    /// User VAs of the control pages, by `TRS_UIO_*` index.
    pub sq_ctrl_addr: [u64; TRS_UIO_ADDR_MAX],
    /// Whether the ring is in device-local memory (out).
    pub sq_mem_local_flag: u8,
    /// Whether the queue is a soft queue, `UIO_T` (out).
    pub soft_que_flag: u8,
    /// Whether the kernel set up the mapping, `UIO_D` (out).
    pub uio_flag: u8,
}

const_assert_eq!(size_of::<trs_uio_info>(), 64);
const_assert_eq!(offset_of!(trs_uio_info, sq_ctrl_addr), 8);
const_assert_eq!(offset_of!(trs_uio_info, uio_flag), 58);

/// `drvIdType_t`: an event id.
pub const DRV_EVENT_ID: i32 = 1;

/// `struct trs_res_id_usr_para`: the user part of a resource-id request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct trs_res_id_usr_para {
    /// Stream priority (stream ids only).
    pub stream_pri: u32,
    /// Request flags.
    pub flag: u32,
    /// Virtual function id.
    pub vfid: u32,
}

/// `struct trs_res_id_para` (`TRS_RES_ID_ALLOC`/`FREE`; the kernel writes `id` back).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct trs_res_id_para {
    /// Task scheduler id.
    pub tsid: u32,
    /// `drvIdType_t` (`DRV_EVENT_ID`, ...).
    pub res_type: i32,
    /// The id (out on alloc, in on free).
    pub id: u32,
    /// The user part.
    pub usr_para: trs_res_id_usr_para,
    /// Type-specific parameter.
    pub para: u32,
    /// Flags.
    pub flag: u32,
    /// Properties.
    pub prop: i32,
    /// The id's address, for ids the device reads from memory.
    pub value: [u32; 2],
}

const_assert_eq!(size_of::<trs_res_id_para>(), 44);
const_assert_eq!(offset_of!(trs_res_id_para, para), 24);
const_assert_eq!(offset_of!(trs_res_id_para, value), 36);

/// Allocates a resource id (`_IOWR('X', 0, trs_res_id_para)`).
pub const TRS_RES_ID_ALLOC: u32 = iowr(TRS_MAGIC, 0, size_of::<trs_res_id_para>());
/// Frees a resource id (`_IOW('X', 1, trs_res_id_para)`).
pub const TRS_RES_ID_FREE: u32 = iow(TRS_MAGIC, 1, size_of::<trs_res_id_para>());

/// Allocates an SQ/CQ pair (`_IOWR('X', 15, halSqCqInputInfo)`).
pub const TRS_SQCQ_ALLOC: u32 = iowr(TRS_MAGIC, 15, size_of::<halSqCqInputInfo>());
/// Frees an SQ/CQ pair (`_IOW('X', 16, halSqCqFreeInfo)`).
pub const TRS_SQCQ_FREE: u32 = iow(TRS_MAGIC, 16, size_of::<halSqCqFreeInfo>());
/// Configures a property of an SQ/CQ pair (`_IOW('X', 17, halSqCqConfigInfo)`).
pub const TRS_SQCQ_CONFIG: u32 = iow(TRS_MAGIC, 17, size_of::<halSqCqConfigInfo>());
/// Sends SQEs through the kernel (`_IOW('X', 19, halTaskSendInfo)`).
pub const TRS_SQCQ_SEND: u32 = iow(TRS_MAGIC, 19, size_of::<halTaskSendInfo>());
/// Receives CQEs (`_IOWR('X', 20, halReportRecvInfo)`).
pub const TRS_SQCQ_RECV: u32 = iowr(TRS_MAGIC, 20, size_of::<halReportRecvInfo>());

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value the spec lists, pinned.
    #[test]
    fn golden_numbers_from_the_spec() {
        assert_eq!(DAVINCI_INTF_IOCTL_OPEN, 0x5A00);
        assert_eq!(DAVINCI_INTF_IOCTL_CLOSE, 0x5A01);
        assert_eq!(DAVINCI_INTF_IOCTL_GET_MODULE_STATUS, 0x5A02);
        assert_eq!(TRS_SQCQ_ALLOC, 0xC060_580F);
        assert_eq!(TRS_SQCQ_FREE, 0x4034_5810);
        assert_eq!(TRS_SQCQ_CONFIG, 0x4034_5811);
        assert_eq!(TRS_SQCQ_SEND, 0x4040_5813);
        assert_eq!(TRS_SQCQ_RECV, 0xC048_5814);
        // Not listed by the spec; from `_IOWR/_IOW('X', 0/1, struct trs_res_id_para)` (44 B).
        assert_eq!(TRS_RES_ID_ALLOC, 0xC02C_5800);
        assert_eq!(TRS_RES_ID_FREE, 0x402C_5801);
    }

    /// The SVM numbers of the pinned release (our derivation: a 344-byte argument).
    #[test]
    fn golden_svm_numbers() {
        assert_eq!(DEVMM_SVM_ALLOC, 0x4158_4D03);
        assert_eq!(DEVMM_SVM_FREE_PAGES, 0x4158_4D04);
        assert_eq!(DEVMM_SVM_MEMCPY, 0xC158_4D05);
        assert_eq!(DEVMM_SVM_ADVISE, 0x4158_4D0D);
        assert_eq!(DEVMM_SVM_MEMSET8, 0xC158_4D0F);
        assert_eq!(DEVMM_SVM_IPC_MEM_OPEN, 0x4158_4D15);
        assert_eq!(DEVMM_SVM_IPC_MEM_CLOSE, 0x4158_4D16);
        assert_eq!(DEVMM_SVM_IPC_MEM_CREATE, 0xC158_4D1B);
        assert_eq!(DEVMM_SVM_IPC_MEM_SET_PID, 0x4158_4D20);
        assert_eq!(DEVMM_SVM_IPC_MEM_DESTROY, 0x4158_4D1C);
        assert_eq!(DEVMM_SVM_IPC_MEM_QUERY, 0xC158_4D1D);
        assert_eq!(DEVMM_SVM_IPC_MEM_SET_ATTR, 0x4158_4D22);
        assert_eq!(DEVMM_SVM_QUERY_MEM_USEDINFO, 0xC158_4D2F);
        assert_eq!(DEVMM_SVM_MEM_CREATE, 0xC158_4D32);
        assert_eq!(DEVMM_SVM_MEM_RELEASE, 0xC158_4D33);
        assert_eq!(DEVMM_SVM_MEM_MAP, 0x4158_4D34);
        assert_eq!(DEVMM_SVM_MEM_UNMAP, 0xC158_4D35);
        assert_eq!(DEVMM_SVM_MEM_EXPORT, 0xC158_4D36);
        assert_eq!(DEVMM_SVM_MEM_IMPORT, 0xC158_4D37);
        assert_eq!(DEVMM_SVM_MEM_SET_PID, 0x4158_4D38);
        assert_eq!(DEVMM_SVM_MEM_SET_ATTR, 0x4158_4D39);
        assert_eq!(DEVMM_SVM_MEM_GET_INFO, 0xC158_4D3B);
        assert_eq!(DEVMM_SVM_ALLOC_PROC_STRUCT, 0x4158_4D43);
        assert_eq!(DEVMM_SVM_GET_MMAP_INFO, 0xC158_4D46);
    }

    #[test]
    fn command_fields_decode() {
        assert_eq!(ioc_dir(TRS_SQCQ_RECV), IOC_READ | IOC_WRITE);
        assert_eq!(ioc_size(TRS_SQCQ_RECV), 72);
        assert_eq!(ioc_type(TRS_SQCQ_RECV), b'X');
        assert_eq!(ioc_nr(TRS_SQCQ_RECV), 20);
        assert_eq!(ioc_size(DEVMM_SVM_ADVISE), 344);
    }

    #[test]
    fn union_members_round_trip() {
        let copy = devmm_mem_copy_para {
            dst: 0x1000_0000_0000,
            src: 0xdead_beef,
            ByteCount: 4096,
            is_support_dev_local_addr: 1,
            direction: DEVMM_COPY_HOST_TO_DEVICE,
        };
        let arg = devmm_ioctl_arg::with(3, &copy);
        assert_eq!(arg.head.logical_devid, 3);
        assert_eq!(arg.get::<devmm_mem_copy_para>(), copy);
        // The image is the C image: `direction` at byte 28, i.e. the high half of word 3.
        assert_eq!(arg.data[3] >> 32, u64::from(DEVMM_COPY_HOST_TO_DEVICE));
        let import = devmm_mem_import_para { share_id: -2, pg_num: 7, ..Default::default() };
        let arg = devmm_ioctl_arg::with(0, &import);
        assert_eq!(arg.get::<devmm_mem_import_para>(), import);
    }

    #[test]
    fn uio_pointer_and_ipc_images_round_trip() {
        let mut info = halSqCqInputInfo::default();
        info.set_uio_info(0x1234_5678_9abc_def0);
        assert_eq!(info.uio_info(), 0x1234_5678_9abc_def0);
        let create = devmm_mem_ipc_create_para {
            vptr: 7,
            len: 4096,
            name: ipc_name(b"aclrs-key").unwrap(),
            ..Default::default()
        };
        let arg = devmm_ioctl_arg::with(0, &create);
        assert_eq!(arg.get::<devmm_mem_ipc_create_para>(), create);
        let mut pids = devmm_mem_ipc_set_pid_para { name: create.name, num: 2, ..Default::default() };
        pids.set_pid[..2].copy_from_slice(&[11, -1]);
        let arg = devmm_ioctl_arg::with(0, &pids);
        assert_eq!(arg.get::<devmm_mem_ipc_set_pid_para>(), pids);
        assert_eq!(ipc_name_bytes(&pids.name), b"aclrs-key");
        assert!(ipc_name(&[b'a'; 65]).is_none());
    }

    #[test]
    fn open_arg_names_its_module() {
        let arg = davinci_intf_open_arg::new(MODULE_TSDRV_MMAP, 1).unwrap();
        assert_eq!(arg.module(), "TSDRV_MMAP");
        assert!(davinci_intf_open_arg::new("bad\0name", 0).is_none());
    }
}
