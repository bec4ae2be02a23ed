//! The rest of the memory module's calls (`impl Runtime`): managed (unified) memory,
//! descriptor copies, cache maintenance, the mapping variants, and the device queries of the
//! runtime surface's §11 (status, utilisation, the current default stream).
//!
//! # Managed memory
//!
//! `aclrtMemAllocManaged` allocates device memory of the current device; on the software NPU
//! the device window is mapped in the process, so the one pointer is valid on the host and in
//! kernels. Advice and prefetch locations are recorded per allocation in the device's
//! [`crate::state::memory::DevMem`] ([`crate::state::managed`]); a prefetch is a task in stream
//! order (the pages do not move: they are where both sides reach them) and its location is
//! recorded when it is queued. Memory last prefetched to the host counts as free on the device
//! in `aclrtGetMemInfo`.
//!
//! # Descriptors
//!
//! A memcpy descriptor ([`MEMCPY_DESC_BYTES`]) and a CMO descriptor ([`CMO_DESC_BYTES`]) are
//! bytes the caller keeps in device memory; `aclrtSetMemcpyDesc` / `aclrtCmoSetDesc` check the
//! operation and write it there, the launch reads it back and checks it again.
//!
//! # Locking
//!
//! A managed call takes the owning device's `mem` alone; a barrier call the process-wide
//! barrier table alone (cache maintenance is rare, off every hot path); the mapping variants
//! take what [`crate::api::vmm`]'s calls take.

use std::collections::BTreeMap;
use std::sync::Mutex;

use hal::layout::{window_of, Window};
use hal::{DeviceId, ShareName, TaskDesc};
use mm::vmm::{Location, ACCESS_NONE};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::managed::{check_loc, Managed, ManagedLoc};
use crate::state::memory::{locate, DstBytes, Loc, MallocApi, SrcBytes};

/// `ACL_ERROR_RT_INVALID_SYMBOL`: not a device symbol.
pub const ACL_ERROR_RT_INVALID_SYMBOL: i32 = 107_043;
/// `ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED`.
pub const ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED: i32 = 207_021;
/// `ACL_RT_MEM_ATTACH_GLOBAL`, the one flag of `aclrtMemAllocManaged`.
pub const ATTACH_GLOBAL: u32 = 0x1;
/// Bytes of a memcpy descriptor (`aclrtGetMemcpyDescSize`).
pub const MEMCPY_DESC_BYTES: usize = 32;
/// Bytes of a CMO descriptor (`aclrtCmoGetDescSize`).
pub const CMO_DESC_BYTES: usize = 32;
/// `ACL_RT_CMO_MAX_BARRIER_NUM`: barrier ids are 1..=6, and a wait names at most 6.
pub const MAX_BARRIERS: u32 = 6;
/// `ACL_MEMCPY_INNER_DEVICE_TO_DEVICE`, the one kind of the descriptor and offset copies.
pub const INNER_D2D: u32 = 6;

const MEMCPY_DESC_MAGIC: u32 = 0x5950_4341; // "ACPY"
const CMO_DESC_MAGIC: u32 = 0x4f4d_4341; // "ACMO"
const GIB: u64 = 1 << 30;

/// The value of one managed range attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RangeAttr {
    /// A 32-bit integer (READ_MOSTLY, the _TYPE and _ID attributes).
    I32(i32),
    /// One location.
    Loc(ManagedLoc),
    /// The ACCESSED_BY locations.
    Locs(Vec<ManagedLoc>),
}

/// The barriers queued by `aclrtCmoAsyncWithBarrier` and not yet waited for: (stream handle,
/// barrier id) to the CMO type.
static BARRIERS: Mutex<BTreeMap<(u64, u32), u32>> = Mutex::new(BTreeMap::new());

fn cmo_type(api: &str, ty: u32) -> Result<()> {
    if ty > 3 {
        return Err(AclError::invalid(format!(
            "{api}: cmoType {ty} is not an aclrtCmoType (PREFETCH 0, WRITEBACK 1, INVALID 2, FLUSH 3)"
        )));
    }
    Ok(())
}

fn inner_kind(api: &str, kind: u32) -> Result<()> {
    if kind != INNER_D2D {
        return Err(AclError::invalid(format!(
            "{api}: kind {kind} must be ACL_MEMCPY_INNER_DEVICE_TO_DEVICE (6)"
        )));
    }
    Ok(())
}

fn unsupported(api: &str, what: &str, soc: hal::SocProfile) -> AclError {
    AclError::new(
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        format!("{api}: {what} is not supported on {}", soc.soc_name()),
    )
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Runtime {
    fn uvm_supported(&self, api: &str) -> Result<()> {
        if self.soc == hal::SocProfile::Ascend950 {
            return Err(unsupported(api, "managed memory (UVM)", self.soc));
        }
        Ok(())
    }

    /// A managed location argument, checked.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a bad type or id.
    pub fn managed_loc(
        &self,
        api: &str,
        what: &str,
        ty: u32,
        id: i32,
        allow_invalid: bool,
    ) -> Result<ManagedLoc> {
        check_loc(api, what, ty, id, self.device_count(), allow_invalid)
    }

    /// `aclrtMemAllocManaged`: device memory of the current device, valid on the host too.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0 or a flag other than `ACL_RT_MEM_ATTACH_GLOBAL`;
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on 950; the allocation's errors.
    pub fn alloc_managed(&self, api: &str, size: u64, flag: u32) -> Result<u64> {
        self.uvm_supported(api)?;
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        if flag != ATTACH_GLOBAL {
            return Err(AclError::invalid(format!(
                "{api}: flag {flag:#x} must be ACL_RT_MEM_ATTACH_GLOBAL (0x1)"
            )));
        }
        let p = self.malloc(api, size, 0, MallocApi::Malloc, &[])?;
        let d = self.current_device(api)?;
        // Lock order: `mem` alone.
        self.device(d).mem(api)?.managed.insert(p, Managed::new(size));
        Ok(p)
    }

    /// Runs `f` on the managed allocation holding `[ptr, +size)`.
    fn with_managed<T>(
        &self,
        api: &str,
        ptr: u64,
        size: u64,
        f: impl FnOnce(&mut Managed) -> T,
    ) -> Result<T> {
        if ptr == 0 {
            return Err(AclError::invalid(format!("{api}: ptr is NULL")));
        }
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        let not_managed = || {
            AclError::rt_invalid(format!(
                "{api}: [{ptr:#x}, +{size}) is not inside one aclrtMemAllocManaged allocation"
            ))
        };
        let Loc::Device(d) = locate(ptr) else { return Err(not_managed()) };
        if d >= self.device_count() {
            return Err(not_managed());
        }
        // Lock order: `mem` alone.
        let mut m = self.device(d).mem(api)?;
        let (_, rec) = m
            .managed
            .range_mut(..=ptr)
            .next_back()
            .filter(|(&b, r)| ptr.checked_add(size).is_some_and(|e| e <= b + r.len))
            .ok_or_else(not_managed)?;
        Ok(f(rec))
    }

    /// `aclrtMemManagedAdvise`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL, size 0, an unknown advice or a bad location;
    /// `ACL_ERROR_RT_PARAM_INVALID` for memory that is not managed.
    pub fn managed_advise(
        &self,
        api: &str,
        ptr: u64,
        size: u64,
        advise: u32,
        ty: u32,
        id: i32,
    ) -> Result<()> {
        self.uvm_supported(api)?;
        if advise > 5 {
            return Err(AclError::invalid(format!(
                "{api}: advise {advise} is not an aclrtMemManagedAdviseType (0..=5)"
            )));
        }
        // READ_MOSTLY ignores the location; the others need a real one.
        let loc = self.managed_loc(api, "location", ty, id, advise <= 1)?;
        self.with_managed(api, ptr, size, |m| m.advise(advise, loc))
    }

    /// `aclrtMemManagedGetAttr`: the value of `attr` (1..=8) for `[ptr, +size)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an unknown attribute, NULL or size 0;
    /// `ACL_ERROR_RT_PARAM_INVALID` for memory that is not managed.
    pub fn managed_attr(&self, api: &str, attr: u32, ptr: u64, size: u64) -> Result<RangeAttr> {
        self.uvm_supported(api)?;
        if !(1..=8).contains(&attr) {
            return Err(AclError::invalid(format!(
                "{api}: attribute {attr} is not an aclrtMemManagedRangeAttribute (1..=8)"
            )));
        }
        self.with_managed(api, ptr, size, |m| match attr {
            1 => RangeAttr::I32(i32::from(m.read_mostly)),
            2 => RangeAttr::Loc(m.preferred),
            3 => RangeAttr::Locs(m.accessed_by.clone()),
            // CAST: location types are 0..=4.
            4 => RangeAttr::I32(m.preferred.ty as i32),
            5 => RangeAttr::I32(m.preferred.id),
            6 => RangeAttr::Loc(m.last_prefetch),
            // CAST: as above.
            7 => RangeAttr::I32(m.last_prefetch.ty as i32),
            _ => RangeAttr::I32(m.last_prefetch.id),
        })
    }

    /// `aclrtMemManagedPrefetchAsync` / `PrefetchBatchAsync`: each `(ptr, size, location)` is
    /// checked first, then one task is queued on the stream and the locations are recorded.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for non-zero flags, NULL or size 0; `ACL_ERROR_RT_PARAM_INVALID`
    /// for memory that is not managed; the stream's errors. Nothing is recorded on error.
    pub fn managed_prefetch(
        &self,
        api: &str,
        ranges: &[(u64, u64, ManagedLoc)],
        flags: u64,
        stream: u64,
    ) -> Result<()> {
        self.uvm_supported(api)?;
        if flags != 0 {
            return Err(AclError::invalid(format!("{api}: flags must be 0, not {flags}")));
        }
        for &(p, n, _) in ranges {
            self.with_managed(api, p, n, |_| ())?;
        }
        let s = self.submit_stream(api, stream)?;
        self.submit_task(api, &s, TaskDesc::Marker)?;
        for &(p, n, loc) in ranges {
            self.with_managed(api, p, n, |m| m.last_prefetch = loc)?;
        }
        Ok(())
    }

    /// `aclrtGetMemcpyDescSize`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a kind other than INNER_DEVICE_TO_DEVICE.
    pub fn memcpy_desc_size(&self, api: &str, kind: u32) -> Result<usize> {
        inner_kind(api, kind)?;
        Ok(MEMCPY_DESC_BYTES)
    }

    /// Checks that `desc` is device memory holding `bytes` writable bytes.
    fn check_desc(&self, api: &str, what: &str, desc: u64, bytes: usize) -> Result<()> {
        if desc == 0 {
            return Err(AclError::invalid(format!("{api}: {what} is NULL")));
        }
        if !matches!(locate(desc), Loc::Device(_)) {
            return Err(AclError::rt_invalid(format!(
                "{api}: {what} {desc:#x} is not device memory (allocate it with aclrtMalloc)"
            )));
        }
        // CAST: descriptor sizes are tiny.
        let n = bytes as u64;
        self.plan_memcpy(api, desc, n, desc, n, crate::state::memory::kind::DEFAULT).map(|_| ())
    }

    /// `aclrtSetMemcpyDesc`: checks the copy and writes it into `desc`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL, a non-NULL `config` or another kind;
    /// `ACL_ERROR_RT_PARAM_INVALID` for a descriptor outside device memory or a copy that is
    /// not within live memory of one device.
    #[expect(clippy::too_many_arguments, reason = "the C call's arguments")]
    pub fn set_memcpy_desc(
        &self,
        api: &str,
        desc: u64,
        kind: u32,
        src: u64,
        dst: u64,
        count: u64,
        config: bool,
    ) -> Result<()> {
        inner_kind(api, kind)?;
        if config {
            return Err(AclError::invalid(format!("{api}: config is reserved and must be NULL")));
        }
        self.check_desc(api, "desc", desc, MEMCPY_DESC_BYTES)?;
        if count > 0 {
            self.plan_memcpy(api, dst, count, src, count, INNER_D2D)?;
        }
        let mut b = [0u8; MEMCPY_DESC_BYTES];
        put_u32(&mut b, 0, MEMCPY_DESC_MAGIC);
        put_u32(&mut b, 4, kind);
        put_u64(&mut b, 8, src);
        put_u64(&mut b, 16, dst);
        put_u64(&mut b, 24, count);
        // CAST: descriptor sizes are tiny.
        self.copy(api, DstBytes::Addr(desc), SrcBytes::Host(&b), MEMCPY_DESC_BYTES as u64)
    }

    /// Reads a descriptor of `N` bytes back from device memory.
    fn read_desc<const N: usize>(&self, api: &str, what: &str, desc: u64, magic: u32) -> Result<[u8; N]> {
        self.check_desc(api, what, desc, N)?;
        let mut b = [0u8; N];
        // CAST: descriptor sizes are tiny.
        self.copy(api, DstBytes::Host(&mut b), SrcBytes::Addr(desc), N as u64)?;
        if get_u32(&b, 0) != magic {
            return Err(AclError::rt_invalid(format!(
                "{api}: {what} {desc:#x} holds no descriptor (set it with {} first)",
                if magic == MEMCPY_DESC_MAGIC { "aclrtSetMemcpyDesc" } else { "aclrtCmoSetDesc" }
            )));
        }
        Ok(b)
    }

    /// `aclrtMemcpyAsyncWithDesc`: queues the copy a descriptor holds.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL or another kind; `ACL_ERROR_RT_PARAM_INVALID` for
    /// memory that holds no descriptor or a copy whose memory is gone; the stream's errors.
    pub fn memcpy_with_desc(&self, api: &str, desc: u64, kind: u32, stream: u64) -> Result<()> {
        inner_kind(api, kind)?;
        let b = self.read_desc::<MEMCPY_DESC_BYTES>(api, "desc", desc, MEMCPY_DESC_MAGIC)?;
        let (src, dst, count) = (get_u64(&b, 8), get_u64(&b, 16), get_u64(&b, 24));
        let s = self.submit_stream(api, stream)?;
        if count == 0 {
            return Ok(());
        }
        let plan = self.plan_memcpy(api, dst, count, src, count, INNER_D2D)?;
        if plan.count == 0 {
            return Ok(());
        }
        crate::api::copy::submit(self, api, &s, dst, src, count, true)
    }

    /// `aclrtMemcpyAsyncWithOffset`, after the C edge read the two base addresses: copies
    /// `count` bytes from `src + src_off` to `dst + dst_off` in stream order.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for another kind or NULL bases; `ACL_ERROR_RT_PARAM_INVALID`
    /// when `dst_off + count` passes `dest_max` or the ranges are not live device memory.
    #[expect(clippy::too_many_arguments, reason = "the C call's arguments")]
    pub fn memcpy_with_offset(
        &self,
        api: &str,
        dst: u64,
        dest_max: u64,
        dst_off: u64,
        src: u64,
        count: u64,
        src_off: u64,
        kind: u32,
        stream: u64,
    ) -> Result<()> {
        inner_kind(api, kind)?;
        if dst == 0 || src == 0 {
            return Err(AclError::invalid(format!("{api}: *dst or *src is NULL")));
        }
        let room = dest_max.checked_sub(dst_off).ok_or_else(|| {
            AclError::rt_invalid(format!("{api}: dstDataOffset {dst_off} is past destMax {dest_max}"))
        })?;
        let s = self.submit_stream(api, stream)?;
        if count == 0 {
            return Ok(());
        }
        let bad = || AclError::rt_invalid(format!("{api}: an offset overflows the address space"));
        let (d, sr) = (dst.checked_add(dst_off).ok_or_else(bad)?, src.checked_add(src_off).ok_or_else(bad)?);
        let plan = self.plan_memcpy(api, d, room, sr, count, INNER_D2D)?;
        if plan.count == 0 {
            return Ok(());
        }
        crate::api::copy::submit(self, api, &s, d, sr, count, true)
    }

    /// `aclrtCmoAsync` / `aclrtCmoAsyncWithBarrier`: checks the range and queues the cache
    /// operation (caches are coherent on the software NPU, so the task only keeps the order).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL, size 0, an unknown type or a barrier id outside
    /// 1..=6; `ACL_ERROR_RT_PARAM_INVALID` for a range outside live device memory or a barrier
    /// id already pending on the stream.
    pub fn cmo_async(
        &self,
        api: &str,
        src: u64,
        size: u64,
        ty: u32,
        barrier: Option<u32>,
        stream: u64,
    ) -> Result<()> {
        cmo_type(api, ty)?;
        if let Some(id) = barrier {
            if !(1..=MAX_BARRIERS).contains(&id) {
                return Err(AclError::invalid(format!(
                    "{api}: barrierId {id} must be 1..={MAX_BARRIERS} (ACL_RT_CMO_MAX_BARRIER_NUM)"
                )));
            }
        }
        self.cache_op(api, src, size)?;
        let s = self.submit_stream(api, stream)?;
        let (h, _) = self.stream(api, stream)?;
        if let Some(id) = barrier {
            // Lock order: the barrier table alone.
            let mut b = crate::sync::relock(&BARRIERS);
            if b.contains_key(&(h, id)) {
                return Err(AclError::rt_invalid(format!(
                    "{api}: barrier {id} is already pending on stream {h:#x}; wait for it with aclrtCmoWaitBarrier"
                )));
            }
            self.submit_task(api, &s, TaskDesc::Marker)?;
            b.insert((h, id), ty);
            return Ok(());
        }
        self.submit_task(api, &s, TaskDesc::Marker).map(|_| ())
    }

    /// `aclrtCmoWaitBarrier`: `infos` are the (CMO type, barrier id) pairs to wait for.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a non-zero flag or a count outside 1..=6;
    /// `ACL_ERROR_RT_PARAM_INVALID` for a barrier not pending on the stream with that type.
    pub fn cmo_wait_barrier(&self, api: &str, infos: &[(u32, u32)], stream: u64, flag: u32) -> Result<()> {
        if flag != 0 {
            return Err(AclError::invalid(format!("{api}: flag must be 0, not {flag}")));
        }
        // CAST: the count is compared with a small bound.
        if infos.is_empty() || infos.len() as u64 > u64::from(MAX_BARRIERS) {
            return Err(AclError::invalid(format!(
                "{api}: taskInfo->barrierNum {} must be 1..={MAX_BARRIERS}",
                infos.len()
            )));
        }
        let s = self.submit_stream(api, stream)?;
        let (h, _) = self.stream(api, stream)?;
        // Lock order: the barrier table alone.
        let mut b = crate::sync::relock(&BARRIERS);
        for (i, &(ty, id)) in infos.iter().enumerate() {
            cmo_type(api, ty)?;
            if b.get(&(h, id)) != Some(&ty) {
                return Err(AclError::rt_invalid(format!(
                    "{api}: taskInfo->cmoInfo[{i}]: no barrier {id} of type {ty} is pending on stream {h:#x}"
                )));
            }
        }
        self.submit_task(api, &s, TaskDesc::Marker)?;
        for &(_, id) in infos {
            b.remove(&(h, id));
        }
        Ok(())
    }

    /// `aclrtCmoSetDesc`: checks the range and writes it into `desc`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL or size 0; `ACL_ERROR_RT_PARAM_INVALID` for a
    /// descriptor or range outside live device memory.
    pub fn cmo_set_desc(&self, api: &str, desc: u64, src: u64, size: u64) -> Result<()> {
        self.check_desc(api, "cmoDesc", desc, CMO_DESC_BYTES)?;
        self.cache_op(api, src, size)?;
        let mut b = [0u8; CMO_DESC_BYTES];
        put_u32(&mut b, 0, CMO_DESC_MAGIC);
        put_u64(&mut b, 8, src);
        put_u64(&mut b, 16, size);
        // CAST: descriptor sizes are tiny.
        self.copy(api, DstBytes::Addr(desc), SrcBytes::Host(&b), CMO_DESC_BYTES as u64)
    }

    /// `aclrtCmoAsyncWithDesc`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a non-NULL `reserve` or an unknown type;
    /// `ACL_ERROR_RT_PARAM_INVALID` for memory that holds no descriptor or a range now gone.
    pub fn cmo_with_desc(&self, api: &str, desc: u64, ty: u32, stream: u64, reserve: bool) -> Result<()> {
        if reserve {
            return Err(AclError::invalid(format!("{api}: reserve must be NULL")));
        }
        cmo_type(api, ty)?;
        let b = self.read_desc::<CMO_DESC_BYTES>(api, "cmoDesc", desc, CMO_DESC_MAGIC)?;
        self.cmo_async(api, get_u64(&b, 8), get_u64(&b, 16), ty, None, stream)
    }

    /// `aclrtReserveMemAddressNoUCMemory` (A3 only): a reservation at `expect`, whose size is a
    /// multiple of 1 GiB.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on A2 and 950; `ACL_ERROR_INVALID_PARAM` for a NULL
    /// `expectPtr` or a size that is not a non-zero multiple of 1 GiB; then as `reserve`.
    pub fn reserve_no_uc(
        &self,
        api: &str,
        size: u64,
        alignment: u64,
        expect: u64,
        flags: u64,
    ) -> Result<u64> {
        if self.soc != hal::SocProfile::A3 {
            return Err(unsupported(api, "a reservation without UC memory", self.soc));
        }
        if expect == 0 {
            return Err(AclError::invalid(format!(
                "{api}: expectPtr is mandatory (the runtime cannot choose)"
            )));
        }
        if size == 0 || size % GIB != 0 {
            return Err(AclError::invalid(format!(
                "{api}: size {size} must be a non-zero multiple of 1 GiB"
            )));
        }
        self.reserve(api, size, alignment, expect, flags)
    }

    /// `aclrtMemMapNoAccess`: maps like `aclrtMapMem`, with no access for anyone until
    /// `aclrtMemSetAccess`.
    ///
    /// # Errors
    ///
    /// As `map_mem`.
    pub fn map_no_access(
        &self,
        api: &str,
        ptr: u64,
        size: u64,
        offset: u64,
        handle: u64,
        flags: u64,
    ) -> Result<()> {
        self.map_mem(api, ptr, size, offset, handle, flags)?;
        let Window::Device(d) = window_of(ptr) else { return Ok(()) };
        // Lock order: `vmm` alone.
        let mut x = self.vmm_of(api, d)?;
        let loc = x.space.mapping_at(ptr).map(|m| Location::Device(m.device));
        if let Some(loc) = loc {
            let _ = x.space.set_access(ptr, size, &[(loc, ACCESS_NONE)]);
        }
        Ok(())
    }

    /// `aclrtMemMapSelectedLink` (A3 only): maps `dst` onto the physical memory mapped at
    /// `src`, over link 0 (SIO) or 1 (HCCS).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on A2 and 950; `ACL_ERROR_INVALID_PARAM` for NULL,
    /// size 0 or a link index above 1; then as `retain_handle` and `map_mem`.
    pub fn map_selected_link(&self, api: &str, dst: u64, size: u64, src: u64, link: u32) -> Result<()> {
        if self.soc != hal::SocProfile::A3 {
            return Err(unsupported(api, "mapping over a selected link", self.soc));
        }
        if dst == 0 || src == 0 {
            return Err(AclError::invalid(format!("{api}: virPtrDst or virPtrSrc is NULL")));
        }
        if size == 0 || link > 1 {
            return Err(AclError::invalid(format!(
                "{api}: size ({size}) must be > 0 and linkIdx ({link}) ACL_RT_MEM_LINK_IDX_0 or _1"
            )));
        }
        let h = self.retain_handle(api, src)?;
        let r = self.map_mem(api, dst, size, 0, h, 0);
        // The mapping holds the memory now; the retained reference goes.
        let freed = self.free_physical(api, h);
        r.and(freed)
    }

    /// `aclrtMemMapSetLink`: the link type later mappings of `handle` use.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for a NULL handle; `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on A2;
    /// `ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED` for a link the SoC lacks (SIO and HCCS on A3,
    /// the UB links on 950); `ACL_ERROR_RT_PARAM_INVALID` for an unknown handle.
    pub fn map_set_link(&self, api: &str, handle: u64, link: u32) -> Result<()> {
        if handle == 0 {
            return Err(AclError::invalid(format!("{api}: handle is NULL")));
        }
        let ok = match self.soc {
            hal::SocProfile::A2 => return Err(unsupported(api, "choosing a link type", self.soc)),
            hal::SocProfile::A3 => link <= 1,
            hal::SocProfile::Ascend950 => (2..=3).contains(&link),
        };
        if !ok {
            return Err(AclError::new(
                ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED,
                format!("{api}: link type {link} is not supported on {}", self.soc.soc_name()),
            ));
        }
        self.handle_props(api, handle)?;
        let d = self.handle_dev(api, handle)?;
        // Lock order: `vmm` alone.
        self.vmm_of(api, d)?.handle_links.insert(handle, link);
        Ok(())
    }

    /// `aclrtMemP2PMap`: makes `[ptr, +size)` reachable from device `dst_dev`. Every device
    /// of the software NPU reaches every device window, so after the checks nothing is left
    /// to map.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL, size 0 or non-zero flags;
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad device; `ACL_ERROR_RT_PARAM_INVALID` for a
    /// range outside live device memory.
    pub fn p2p_map(&self, api: &str, ptr: u64, size: u64, dst_dev: i32, flags: u64) -> Result<()> {
        if ptr == 0 || size == 0 {
            return Err(AclError::invalid(format!("{api}: devPtr must not be NULL and size not 0")));
        }
        if flags != 0 {
            return Err(AclError::invalid(format!("{api}: flags must be 0, not {flags}")));
        }
        self.check_id(api, dst_dev)?;
        self.plan_memcpy(api, ptr, size, ptr, size, crate::state::memory::kind::DEFAULT)?;
        if !matches!(locate(ptr), Loc::Device(_)) {
            return Err(AclError::rt_invalid(format!("{api}: devPtr {ptr:#x} is not device memory")));
        }
        Ok(())
    }

    /// `aclrtHostMemMapCapabilities`: whether accelerator `hac` reaches registered host
    /// memory. On the software NPU the task scheduler (STARS), AI CPU, AI cores (AIC, AIV) and
    /// the DMA engines (PCIe DMA, SDMA) are host code or host copies, so they do; there is no
    /// RDMA, DVPP, UDMA or CCU engine.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad device; `ACL_ERROR_INVALID_PARAM` for an
    /// unknown `aclrtHacType`.
    pub fn host_mem_map_capability(&self, api: &str, device: u32, hac: u32) -> Result<u32> {
        // CAST: a device id beyond i32 is no device.
        self.check_id(api, i32::try_from(device).unwrap_or(i32::MAX))?;
        match hac {
            0..=4 | 6 => Ok(1),
            5 | 7..=9 => Ok(0),
            h => Err(AclError::invalid(format!("{api}: hacType {h} is not an aclrtHacType (0..=9)"))),
        }
    }

    /// `aclrtIpcMemImportPidInterServer` (A3 only): whitelists the pids of every server entry
    /// (one AI server here: the SuperPOD device id is not checked).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on A2 and 950; as `aclrtIpcMemSetImportPid`.
    pub fn ipc_import_pid_inter_server(&self, api: &str, name: &ShareName, pids: &[i32]) -> Result<()> {
        if self.soc != hal::SocProfile::A3 {
            return Err(unsupported(api, "a cross-server whitelist", self.soc));
        }
        self.set_share_pids(api, name, pids)
    }

    /// `aclrtQueryDeviceStatus`: `ACL_RT_DEVICE_STATUS_NORMAL` (0) for every device of the
    /// backend (the software NPU has no fault state of its own device).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad id.
    pub fn device_status(&self, api: &str, device: i32) -> Result<u32> {
        let d = self.check_id(api, device)?;
        self.backend.driver().device_info(DeviceId(d)).map_err(|e| AclError::from_hal(e, api))?;
        Ok(0)
    }

    /// `aclrtGetDeviceUtilizationRate`: cube, vector, AI CPU and memory utilisation in percent;
    /// -1 for a figure that cannot be read, which on this runtime is each of them (the
    /// backend keeps no utilisation counters; CANN reports memory as -1 always).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad id.
    pub fn utilization(&self, api: &str, device: i32) -> Result<[i32; 4]> {
        self.check_id(api, device)?;
        Ok([-1; 4])
    }

    /// `aclrtCtxGetCurrentDefaultStream`: the current context's default stream handle.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current context.
    pub fn current_default_stream(&self, api: &str) -> Result<u64> {
        self.stream(api, 0).map(|(h, _)| h)
    }

    /// Hands a failed task's code, reported by a synchronisation of stream `stream_id` of
    /// `device` (`u32::MAX`: a device synchronisation), to the exception callbacks
    /// ([`crate::api::exception`]); a timeout is no task failure.
    pub(crate) fn report_exception(&self, device: u32, stream_id: u32, code: i32) {
        if code == crate::state::stream::ACL_ERROR_RT_STREAM_SYNC_TIMEOUT || !crate::api::exception::any() {
            return;
        }
        let info = crate::api::exception::ExceptionInfo {
            task_id: u32::MAX,
            stream_id,
            thread_id: u32::MAX,
            device_id: device,
            // CAST: error codes are positive and below 2^31.
            error_code: code as u32,
            ..Default::default()
        };
        crate::api::exception::report(&info);
    }
}
