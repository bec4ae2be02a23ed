//! C exports of virtual memory management, shareable handles, IPC memory, host registration,
//! peer access and `aclrtDeviceGetBareTgid`.
//!
//! Handles (`aclrtDrvMemHandle`) are numbers the runtime gave out, never pointers C owns.
#![expect(
    clippy::missing_safety_doc,
    reason = "C exports: their contract is CANN's documentation, restated in the headers"
)]

use std::ffi::{c_char, c_void, CStr};

use super::{addr, in_ptr, put, size};
use crate::api::ipc::{key_name, KEY_LEN};
use crate::error::{AclError, Result};
use crate::state::vmm::{handle_name, name_handle, PhysProp};

/// `aclrtMemLocation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMemLocation {
    /// Device id (ignored for host).
    pub id: u32,
    /// `aclrtMemLocationType`.
    pub kind: u32,
}

/// `aclrtPhysicalMemProp`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtPhysicalMemProp {
    /// `aclrtMemHandleType`.
    pub handle_type: u32,
    /// `aclrtMemAllocationType`.
    pub allocation_type: u32,
    /// `aclrtMemAttr`.
    pub mem_attr: u32,
    /// Where the memory lives.
    pub location: AclrtMemLocation,
    /// Reserved.
    pub reserve: u64,
}

/// `aclrtMemAccessDesc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtMemAccessDesc {
    /// `aclrtMemAccessFlags`.
    pub flags: u32,
    /// The location the flags apply to.
    pub location: AclrtMemLocation,
    /// Must be zero.
    pub rsv: [u8; 12],
}

/// `ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT`.
const SHARE_DEFAULT: u32 = 1;
/// `ACL_MEM_SHARE_HANDLE_TYPE_FABRIC`.
const SHARE_FABRIC: u32 = 2;
/// Bytes of an `aclrtMemFabricHandle`.
const FABRIC_BYTES: usize = 128;

fn read_prop(api: &str, p: *const AclrtPhysicalMemProp) -> Result<PhysProp> {
    let p = in_ptr(api, "prop", p.cast_mut())?;
    // SAFETY: `p` passed `out_ptr` (non-null, aligned); the caller passes a readable
    // `aclrtPhysicalMemProp` per the API.
    let v = unsafe { p.read() };
    Ok(PhysProp {
        handle_type: v.handle_type,
        allocation_type: v.allocation_type,
        mem_attr: v.mem_attr,
        location_id: v.location.id,
        location_type: v.location.kind,
    })
}

/// The checked arguments `aclrtMapMem` and `aclrtMemMapNoAccess` share: the virtual address
/// (not NULL), size, offset and physical handle.
fn map_args(
    cx: &super::Call,
    api: &str,
    vir_ptr: *mut c_void,
    sz: usize,
    offset: usize,
    handle: *mut c_void,
) -> Result<(u64, u64, u64, u64)> {
    if vir_ptr.is_null() {
        return Err(AclError::invalid(format!("{api}: virPtr is NULL")));
    }
    let h = handle_of(api, handle)?;
    Ok((addr(vir_ptr), cx.size("size", sz)?, cx.size("offset", offset)?, h))
}

fn handle_of(api: &str, h: *mut c_void) -> Result<u64> {
    if h.is_null() {
        return Err(AclError::invalid(format!("{api}: handle is NULL")));
    }
    Ok(addr(h))
}

fn handle_ptr(h: u64) -> *mut c_void {
    // CAST: handles are small numbers the runtime gave out, returned as the opaque pointer type.
    h as usize as *mut c_void
}

fn c_key(api: &str, key: *const c_char) -> Result<hal::ShareName> {
    if key.is_null() {
        return Err(AclError::invalid(format!("{api}: key is NULL")));
    }
    // SAFETY: non-null (checked); the caller passes a NUL-terminated key per the API. Keys are
    // at most 64 characters, but a longer string is read only to reject it.
    let bytes = unsafe { CStr::from_ptr(key) }.to_bytes();
    key_name(api, bytes)
}

/// The most pids one whitelist call takes (`SVM_SHARE_MEM_MAX_PID_CNT`).
const MAX_PIDS: usize = hal::davinci_abi::SVM_SHARE_MEM_MAX_PID_CNT;

/// The most access descriptors one `aclrtMemSetAccess` takes: one per device and the host.
const MAX_ACCESS_DESCS: usize = hal::layout::MAX_DEVICES as usize + 1;

fn pid_list<'a>(api: &str, pid: *mut i32, num: usize) -> Result<&'a [i32]> {
    if pid.is_null() {
        return Err(AclError::invalid(format!("{api}: pid is NULL")));
    }
    if !pid.is_aligned() {
        return Err(AclError::invalid(format!("{api}: pid is not aligned")));
    }
    // Refused before anything is read or allocated: the driver whitelists at most this many.
    if num > MAX_PIDS {
        return Err(AclError::invalid(format!(
            "{api}: num {num} is more than the {MAX_PIDS} pids one call may whitelist"
        )));
    }
    size(api, "num", num.saturating_mul(4))?;
    // SAFETY: non-null and aligned (checked); the caller passes `num` readable pids per the API,
    // and the size was checked to be a valid object size.
    Ok(unsafe { std::slice::from_raw_parts(pid, num) })
}

fn share_of(api: &str, shareable: *mut c_void, kind: u32, soc: hal::SocProfile) -> Result<hal::ShareName> {
    if shareable.is_null() {
        return Err(AclError::invalid(format!("{api}: shareableHandle is NULL")));
    }
    match kind {
        SHARE_DEFAULT => {
            let p = in_ptr(api, "shareableHandle", shareable.cast::<u64>())?;
            // SAFETY: checked non-null and aligned; the caller passes a `uint64_t` for DEFAULT.
            handle_name(api, unsafe { p.read() })
        }
        SHARE_FABRIC if soc == hal::SocProfile::A3 => {
            // SAFETY: non-null (checked); the caller passes an `aclrtMemFabricHandle` (128 bytes).
            let b = unsafe { std::slice::from_raw_parts(shareable.cast::<u8>(), FABRIC_BYTES) };
            let n = b.iter().position(|&c| c == 0).unwrap_or(FABRIC_BYTES);
            key_name(api, &b[..n])
        }
        SHARE_FABRIC => Err(AclError::new(
            crate::codes::ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            format!("{api}: FABRIC shareable handles work only on A3, not {}", soc.soc_name()),
        )),
        k => Err(AclError::invalid(format!("{api}: shareType {k} must be DEFAULT (1) or FABRIC (2)"))),
    }
}

export! {
    /// `aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop, uint64_t flags);`
    pub unsafe fn aclrtMallocPhysical(
        handle: *mut *mut c_void,
        sz: usize,
        prop: *const AclrtPhysicalMemProp,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let out = cx.out("handle", handle)?;
        let p = read_prop(API, prop)?;
        let sz = cx.size("size", sz)?;
        let h = cx.rt()?.malloc_physical(API, sz, &p, flags)?;
        put(out, handle_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtFreePhysical(aclrtDrvMemHandle handle);`
    pub fn aclrtFreePhysical(handle: *mut c_void) -> AclErrorCode |cx| {
        cx.rt()?.free_physical(API, handle_of(API, handle)?)
    }
}

export! {
    /// `aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr, uint64_t flags);`
    pub unsafe fn aclrtReserveMemAddress(
        vir_ptr: *mut *mut c_void,
        sz: usize,
        alignment: usize,
        expect_ptr: *mut c_void,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let out = cx.out("virPtr", vir_ptr)?;
        let sz = cx.size("size", sz)?;
        // CAST: usize fits in u64.
        let p = cx.rt()?.reserve(API, sz, alignment as u64, addr(expect_ptr), flags)?;
        put(out, handle_ptr(p));
        Ok(())
    }
}

export! {
    /// `aclError aclrtReleaseMemAddress(void *virPtr);`
    pub fn aclrtReleaseMemAddress(vir_ptr: *mut c_void) -> AclErrorCode |cx| {
        if vir_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: virPtr is NULL")));
        }
        cx.rt()?.release_reservation(API, addr(vir_ptr))
    }
}

export! {
    /// `aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags);`
    pub fn aclrtMapMem(
        vir_ptr: *mut c_void,
        sz: usize,
        offset: usize,
        handle: *mut c_void,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let (va, sz, off, h) = map_args(cx, API, vir_ptr, sz, offset, handle)?;
        cx.rt()?.map_mem(API, va, sz, off, h, flags)
    }
}

export! {
    /// `aclError aclrtUnmapMem(void *virPtr);`
    pub fn aclrtUnmapMem(vir_ptr: *mut c_void) -> AclErrorCode |cx| {
        if vir_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: virPtr is NULL")));
        }
        cx.rt()?.unmap_mem(API, addr(vir_ptr))
    }
}

export! {
    /// `aclError aclrtMemSetAccess(void *virPtr, size_t size, aclrtMemAccessDesc *desc, size_t count);`
    pub unsafe fn aclrtMemSetAccess(
        vir_ptr: *mut c_void,
        sz: usize,
        desc: *mut AclrtMemAccessDesc,
        count: usize,
    ) -> AclErrorCode |cx| {
        if vir_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: virPtr is NULL")));
        }
        let d = cx.input("desc", desc)?;
        let sz = cx.size("size", sz)?;
        if count > MAX_ACCESS_DESCS {
            return Err(AclError::invalid(format!(
                "{API}: count {count} is more than {MAX_ACCESS_DESCS} (one descriptor per location)"
            )));
        }
        cx.size("count", count.saturating_mul(std::mem::size_of::<AclrtMemAccessDesc>()))?;
        // SAFETY: `d` is non-null and aligned (checked); the caller passes `count` readable
        // descriptors per the API, and their total size is a valid object size (checked).
        let list = unsafe { std::slice::from_raw_parts(d, count) };
        let descs: Vec<(u32, u32, u32, bool)> = list
            .iter()
            .map(|x| (x.flags, x.location.kind, x.location.id, x.rsv.iter().all(|&b| b == 0)))
            .collect();
        cx.rt()?.set_access(API, addr(vir_ptr), sz, &descs)
    }
}

export! {
    /// `aclError aclrtMemGetAccess(void *virPtr, aclrtMemLocation *location, uint64_t *flag);`
    pub unsafe fn aclrtMemGetAccess(
        vir_ptr: *mut c_void,
        location: *mut AclrtMemLocation,
        flag: *mut u64,
    ) -> AclErrorCode |cx| {
        if vir_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: virPtr is NULL")));
        }
        let l = cx.input("location", location)?;
        let f = cx.out("flag", flag)?;
        // SAFETY: checked non-null and aligned; the caller passes a readable location (input).
        let loc = unsafe { l.read() };
        let v = cx.rt()?.get_access(API, addr(vir_ptr), loc.kind, loc.id)?;
        put(f, v);
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option, size_t *granularity);`
    pub unsafe fn aclrtMemGetAllocationGranularity(
        prop: *mut AclrtPhysicalMemProp,
        option: u32,
        granularity: *mut usize,
    ) -> AclErrorCode |cx| {
        let p = read_prop(API, prop)?;
        let out = cx.out("granularity", granularity)?;
        let g = cx.rt()?.granularity(API, &p, option)?;
        // CAST: at most 1 GiB.
        put(out, g as usize);
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemRetainAllocationHandle(void *virPtr, aclrtDrvMemHandle *handle);`
    pub unsafe fn aclrtMemRetainAllocationHandle(
        vir_ptr: *mut c_void,
        handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        if vir_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: virPtr is NULL")));
        }
        let out = cx.out("handle", handle)?;
        let h = cx.rt()?.retain_handle(API, addr(vir_ptr))?;
        put(out, handle_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemGetAllocationPropertiesFromHandle(aclrtDrvMemHandle handle, aclrtPhysicalMemProp *prop);`
    pub unsafe fn aclrtMemGetAllocationPropertiesFromHandle(
        handle: *mut c_void,
        prop: *mut AclrtPhysicalMemProp,
    ) -> AclErrorCode |cx| {
        let h = handle_of(API, handle)?;
        let out = cx.out("prop", prop)?;
        let p = cx.rt()?.handle_props(API, h)?;
        put(
            out,
            AclrtPhysicalMemProp {
                handle_type: p.handle_type,
                allocation_type: p.allocation_type,
                mem_attr: p.mem_attr,
                location: AclrtMemLocation { id: p.location_id, kind: p.location_type },
                reserve: 0,
            },
        );
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType, uint64_t flags, uint64_t *shareableHandle);`
    pub unsafe fn aclrtMemExportToShareableHandle(
        handle: *mut c_void,
        handle_type: u32,
        flags: u64,
        shareable: *mut u64,
    ) -> AclErrorCode |cx| {
        let h = handle_of(API, handle)?;
        let out = cx.out("shareableHandle", shareable)?;
        if handle_type != 0 {
            return Err(AclError::invalid(format!(
                "{API}: handleType {handle_type} must be ACL_MEM_HANDLE_TYPE_NONE"
            )));
        }
        let name = cx.rt()?.export_handle(API, h, flags)?;
        put(out, name_handle(&name));
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemExportToShareableHandleV2(aclrtDrvMemHandle handle, uint64_t flags, aclrtMemSharedHandleType shareType, void *shareableHandle);`
    pub unsafe fn aclrtMemExportToShareableHandleV2(
        handle: *mut c_void,
        flags: u64,
        share_type: u32,
        shareable: *mut c_void,
    ) -> AclErrorCode |cx| {
        let h = handle_of(API, handle)?;
        if shareable.is_null() {
            return Err(AclError::invalid(format!("{API}: shareableHandle is NULL")));
        }
        let rt = cx.rt()?;
        match share_type {
            SHARE_DEFAULT => {
                let out = cx.out("shareableHandle", shareable.cast::<u64>())?;
                let name = rt.export_handle(API, h, flags)?;
                put(out, name_handle(&name));
            }
            SHARE_FABRIC if rt.soc() == hal::SocProfile::A3 => {
                let name = rt.export_handle(API, h, flags)?;
                let mut buf = [0u8; FABRIC_BYTES];
                buf[..name.as_bytes().len()].copy_from_slice(name.as_bytes());
                // SAFETY: non-null (checked); the caller passes a writable `aclrtMemFabricHandle`
                // (128 bytes, alignment 1) for FABRIC.
                unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), shareable.cast::<u8>(), FABRIC_BYTES) };
            }
            _ => {
                share_of(API, shareable, share_type, rt.soc())?;
            }
        }
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId, aclrtDrvMemHandle *handle);`
    pub unsafe fn aclrtMemImportFromShareableHandle(
        shareable: u64,
        device_id: i32,
        handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("handle", handle)?;
        let rt = cx.rt()?;
        let d = match u32::try_from(device_id) {
            Ok(d) if d < rt.device_count() => d,
            _ => {
                return Err(AclError::new(
                    crate::codes::ACL_ERROR_RT_INVALID_DEVICEID,
                    format!("{API}: deviceId {device_id} is not a device"),
                ))
            }
        };
        let name = handle_name(API, shareable)?;
        let h = rt.import_handle(API, &name, d)?;
        put(out, handle_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemImportFromShareableHandleV2(void *shareableHandle, aclrtMemSharedHandleType shareType, uint64_t flags, aclrtDrvMemHandle *handle);`
    pub unsafe fn aclrtMemImportFromShareableHandleV2(
        shareable: *mut c_void,
        share_type: u32,
        flags: u64,
        handle: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        let out = cx.out("handle", handle)?;
        if flags != 0 {
            return Err(AclError::invalid(format!("{API}: flags must be 0, not {flags}")));
        }
        let rt = cx.rt()?;
        let name = share_of(API, shareable, share_type, rt.soc())?;
        let d = rt.current_device(API)?;
        let h = rt.import_handle(API, &name, d)?;
        put(out, handle_ptr(h));
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid, size_t pidNum);`
    pub unsafe fn aclrtMemSetPidToShareableHandle(
        shareable: u64,
        pid: *mut i32,
        pid_num: usize,
    ) -> AclErrorCode |cx| {
        if pid_num == 0 {
            return Err(AclError::invalid(format!("{API}: pidNum must be greater than 0")));
        }
        let pids = pid_list(API, pid, pid_num)?;
        let name = handle_name(API, shareable)?;
        cx.rt()?.set_share_pids(API, &name, pids)
    }
}

export! {
    /// `aclError aclrtMemSetPidToShareableHandleV2(void *shareableHandle, aclrtMemSharedHandleType shareType, int32_t *pid, size_t pidNum);`
    pub unsafe fn aclrtMemSetPidToShareableHandleV2(
        shareable: *mut c_void,
        share_type: u32,
        pid: *mut i32,
        pid_num: usize,
    ) -> AclErrorCode |cx| {
        if pid_num == 0 {
            return Err(AclError::invalid(format!("{API}: pidNum must be greater than 0")));
        }
        let pids = pid_list(API, pid, pid_num)?;
        let rt = cx.rt()?;
        let name = share_of(API, shareable, share_type, rt.soc())?;
        rt.set_share_pids(API, &name, pids)
    }
}

export! {
    /// `aclError aclrtDeviceGetBareTgid(int32_t *pid);`
    pub unsafe fn aclrtDeviceGetBareTgid(pid: *mut i32) -> AclErrorCode |cx| {
        let out = cx.out("pid", pid)?;
        let rt = cx.rt()?;
        let p = rt.backend().sharing().process_id();
        put(out, i32::try_from(p).map_err(|_| AclError::invalid(format!("{API}: pid {p} does not fit")))?);
        Ok(())
    }
}

export! {
    /// `aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len, uint64_t flags);`
    pub unsafe fn aclrtIpcMemGetExportKey(
        dev_ptr: *mut c_void,
        sz: usize,
        key: *mut c_char,
        len: usize,
        flags: u64,
    ) -> AclErrorCode |cx| {
        if dev_ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: devPtr is NULL")));
        }
        if key.is_null() {
            return Err(AclError::invalid(format!("{API}: key is NULL")));
        }
        let sz = cx.size("size", sz)?;
        let len = cx.size("len", len)?;
        let name = cx.rt()?.ipc_export(API, addr(dev_ptr), sz, len, flags)?;
        let mut buf = [0u8; KEY_LEN as usize];
        buf[..name.as_bytes().len()].copy_from_slice(name.as_bytes());
        // SAFETY: `key` is non-null (checked) and the caller passes a writable buffer of `len`
        // bytes, which `ipc_export` checked to be at least 65 (the bytes written).
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), key.cast::<u8>(), buf.len()) };
        Ok(())
    }
}

export! {
    /// `aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags);`
    pub unsafe fn aclrtIpcMemImportByKey(
        dev_ptr: *mut *mut c_void,
        key: *const c_char,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let out = cx.out("devPtr", dev_ptr)?;
        let name = c_key(API, key)?;
        let p = cx.rt()?.ipc_import(API, &name, flags)?;
        put(out, handle_ptr(p));
        Ok(())
    }
}

export! {
    /// `aclError aclrtIpcMemClose(const char *key);`
    pub unsafe fn aclrtIpcMemClose(key: *const c_char) -> AclErrorCode |cx| {
        let name = c_key(API, key)?;
        cx.rt()?.ipc_close(API, &name)
    }
}

export! {
    /// `aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);`
    pub unsafe fn aclrtIpcMemSetImportPid(
        key: *const c_char,
        pid: *mut i32,
        num: usize,
    ) -> AclErrorCode |cx| {
        let name = c_key(API, key)?;
        if pid.is_null() {
            return Err(AclError::invalid(format!("{API}: pid is NULL")));
        }
        if num == 0 {
            return Err(AclError::rt_invalid(format!("{API}: num must be greater than 0")));
        }
        let pids = pid_list(API, pid, num)?;
        cx.rt()?.set_share_pids(API, &name, pids)
    }
}

export! {
    /// `aclError aclrtIpcMemSetAttr(const char *key, aclrtIpcMemAttrType type, uint64_t attr);`
    pub unsafe fn aclrtIpcMemSetAttr(key: *const c_char, ty: u32, attr: u64) -> AclErrorCode |cx| {
        let name = c_key(API, key)?;
        cx.rt()?.ipc_set_attr(API, &name, ty, attr)
    }
}

export! {
    /// `aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type, void **devPtr);`
    pub unsafe fn aclrtHostRegister(
        ptr: *mut c_void,
        sz: u64,
        ty: u32,
        dev_ptr: *mut *mut c_void,
    ) -> AclErrorCode |cx| {
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        let out = cx.out("devPtr", dev_ptr)?;
        let d = cx.rt()?.host_register(API, addr(ptr), sz, ty)?;
        put(out, handle_ptr(d));
        Ok(())
    }
}

export! {
    /// `aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag);`
    pub fn aclrtHostRegisterV2(ptr: *mut c_void, sz: u64, flag: u32) -> AclErrorCode |cx| {
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        cx.rt()?.host_register_v2(API, addr(ptr), sz, flag)
    }
}

export! {
    /// `aclError aclrtHostUnregister(void *ptr);`
    pub fn aclrtHostUnregister(ptr: *mut c_void) -> AclErrorCode |cx| {
        if ptr.is_null() {
            return Err(AclError::invalid(format!("{API}: ptr is NULL")));
        }
        cx.rt()?.host_unregister(API, addr(ptr))
    }
}

export! {
    /// `aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice, uint32_t flag);`
    pub unsafe fn aclrtHostGetDevicePointer(
        p_host: *mut c_void,
        p_device: *mut *mut c_void,
        flag: u32,
    ) -> AclErrorCode |cx| {
        if p_host.is_null() {
            return Err(AclError::invalid(format!("{API}: pHost is NULL")));
        }
        let out = cx.out("pDevice", p_device)?;
        let d = cx.rt()?.host_device_pointer(API, addr(p_host), flag)?;
        put(out, handle_ptr(d));
        Ok(())
    }
}

export! {
    /// `aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId);`
    pub unsafe fn aclrtDeviceCanAccessPeer(can: *mut i32, device_id: i32, peer: i32) -> AclErrorCode |cx| {
        let out = cx.out("canAccessPeer", can)?;
        let ok = cx.rt()?.can_access_peer(API, device_id, peer)?;
        put(out, i32::from(ok));
        Ok(())
    }
}

export! {
    /// `aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);`
    pub fn aclrtDeviceEnablePeerAccess(peer: i32, flags: u32) -> AclErrorCode |cx| {
        cx.rt()?.enable_peer(API, peer, flags)
    }
}

export! {
    /// `aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId);`
    pub fn aclrtDeviceDisablePeerAccess(peer: i32) -> AclErrorCode |cx| {
        cx.rt()?.disable_peer(API, peer)
    }
}

export! {
    /// `aclError aclrtReserveMemAddressNoUCMemory(void **virPtr, size_t size, size_t alignment, void *expectPtr, uint64_t flags);`
    pub unsafe fn aclrtReserveMemAddressNoUCMemory(
        vir_ptr: *mut *mut c_void,
        sz: usize,
        alignment: usize,
        expect_ptr: *mut c_void,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let out = cx.out("virPtr", vir_ptr)?;
        let sz = cx.size("size", sz)?;
        // CAST: usize fits in u64.
        let p = cx.rt()?.reserve_no_uc(API, sz, alignment as u64, addr(expect_ptr), flags)?;
        put(out, handle_ptr(p));
        Ok(())
    }
}

export! {
    /// `aclError aclrtMemMapNoAccess(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags);`
    pub fn aclrtMemMapNoAccess(
        vir_ptr: *mut c_void,
        sz: usize,
        offset: usize,
        handle: *mut c_void,
        flags: u64,
    ) -> AclErrorCode |cx| {
        let (va, sz, off, h) = map_args(cx, API, vir_ptr, sz, offset, handle)?;
        cx.rt()?.map_no_access(API, va, sz, off, h, flags)
    }
}

export! {
    /// `aclError aclrtMemMapSelectedLink(void *virPtrDst, size_t size, void *virPtrSrc, uint32_t linkIdx);`
    pub fn aclrtMemMapSelectedLink(
        vir_ptr_dst: *mut c_void,
        sz: usize,
        vir_ptr_src: *mut c_void,
        link_idx: u32,
    ) -> AclErrorCode |cx| {
        let sz = cx.size("size", sz)?;
        cx.rt()?.map_selected_link(API, addr(vir_ptr_dst), sz, addr(vir_ptr_src), link_idx)
    }
}

export! {
    /// `aclError aclrtMemMapSetLink(aclrtDrvMemHandle handle, aclrtMemLinkType adviceLink);`
    pub fn aclrtMemMapSetLink(handle: *mut c_void, advice_link: u32) -> AclErrorCode |cx| {
        let h = handle_of(API, handle)?;
        cx.rt()?.map_set_link(API, h, advice_link)
    }
}

export! {
    /// `aclError aclrtHostMemMapCapabilities(uint32_t deviceId, aclrtHacType hacType, aclrtHostMemMapCapability *capabilities);`
    pub unsafe fn aclrtHostMemMapCapabilities(
        device_id: u32,
        hac_type: u32,
        capabilities: *mut u32,
    ) -> AclErrorCode |cx| {
        let out = cx.out("capabilities", capabilities)?;
        let c = cx.rt()?.host_mem_map_capability(API, device_id, hac_type)?;
        put(out, c);
        Ok(())
    }
}

/// `aclrtServerPid`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AclrtServerPid {
    /// SuperPOD device id.
    pub sdid: u32,
    /// Host process ids.
    pub pid: *mut i32,
    /// Entries of `pid`.
    pub num: usize,
}

const _: () = assert!(std::mem::size_of::<AclrtServerPid>() == 24);

export! {
    /// `aclError aclrtIpcMemImportPidInterServer(const char *key, aclrtServerPid *serverPids, size_t num);`
    pub unsafe fn aclrtIpcMemImportPidInterServer(
        key: *const c_char,
        server_pids: *mut AclrtServerPid,
        num: usize,
    ) -> AclErrorCode |cx| {
        let name = c_key(API, key)?;
        let list = cx.input("serverPids", server_pids.cast_const())?;
        if num == 0 || num > MAX_PIDS {
            return Err(AclError::invalid(format!("{API}: num {num} must be 1..={MAX_PIDS}")));
        }
        // SAFETY: non-null and aligned (checked); `num` readable entries per the API, bounded.
        let entries = unsafe { std::slice::from_raw_parts(list, num) };
        let mut pids = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            if e.num == 0 {
                return Err(AclError::invalid(format!("{API}: serverPids[{i}].num must be greater than 0")));
            }
            pids.extend_from_slice(pid_list(API, e.pid, e.num)?);
            if pids.len() > MAX_PIDS {
                return Err(AclError::invalid(format!("{API}: more than {MAX_PIDS} pids in all")));
            }
        }
        cx.rt()?.ipc_import_pid_inter_server(API, &name, &pids)
    }
}
