//! Device and pinned-host memory: allocation, free, synchronous copy and set, and the memory
//! queries, with the rounding, policy, direction and error rules of the ACL API.
//!
//! Safe Rust over `hal` and `mm`; the C edge hands in host slices for ordinary host memory. It
//! must not keep state of its own: the tables live in [`crate::runtime::Runtime`].

use hal::layout::{window_of, Window, HOST_WINDOW_BASE};
use hal::{BackRequest, DeviceAddr, DeviceId, MemAttr, MemoryInfo, PageSize, SocProfile};
use mm::heap::{Allocation, NotLive};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::{round_up, Runtime, MIB};

/// Where an address points, decided by the address alone (the VA model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// Device memory of the given logical device.
    Device(u32),
    /// Pinned host memory from `aclrtMallocHost`.
    Pinned,
    /// Memory the runtime did not allocate (ordinary, pageable host memory).
    Unregistered,
}

/// Classifies `addr` by window.
pub fn locate(addr: u64) -> Loc {
    match window_of(addr) {
        Window::Device(i) => Loc::Device(i),
        Window::PinnedHost => Loc::Pinned,
        _ => Loc::Unregistered,
    }
}

/// `aclrtMemcpyKind` values.
pub mod kind {
    /// Host to host.
    pub const H2H: u32 = 0;
    /// Host to device.
    pub const H2D: u32 = 1;
    /// Device to host.
    pub const D2H: u32 = 2;
    /// Device to device.
    pub const D2D: u32 = 3;
    /// Inferred from the addresses.
    pub const DEFAULT: u32 = 4;
    /// Host to device through a runtime buffer.
    pub const H2BUF2D: u32 = 5;

    /// The name of a kind, for messages.
    pub fn name(k: u32) -> &'static str {
        match k {
            H2H => "ACL_MEMCPY_HOST_TO_HOST",
            H2D => "ACL_MEMCPY_HOST_TO_DEVICE",
            D2H => "ACL_MEMCPY_DEVICE_TO_HOST",
            D2D => "ACL_MEMCPY_DEVICE_TO_DEVICE",
            DEFAULT => "ACL_MEMCPY_DEFAULT",
            H2BUF2D => "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE",
            6 => "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE",
            7 => "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE",
            _ => "an unknown kind",
        }
    }
}

/// What a validated copy will do; the C edge supplies host slices for `Unregistered` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    /// Where the destination is.
    pub dst: Loc,
    /// Where the source is.
    pub src: Loc,
    /// Bytes to copy; 0 means there is nothing to do.
    pub count: u64,
}

/// What a validated memset will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetPlan {
    /// Where the destination is (never `Unregistered`).
    pub dst: Loc,
    /// Bytes to set; 0 means there is nothing to do.
    pub count: u64,
}

/// One end of a copy, as the C edge hands it in.
#[derive(Debug)]
pub enum SrcBytes<'a> {
    /// Device or pinned memory at this address.
    Addr(u64),
    /// Ordinary host memory.
    Host(&'a [u8]),
}

/// The other end of a copy.
#[derive(Debug)]
pub enum DstBytes<'a> {
    /// Device or pinned memory at this address.
    Addr(u64),
    /// Ordinary host memory.
    Host(&'a mut [u8]),
}

/// Which allocation entry point is being served (they round differently).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MallocApi {
    /// `aclrtMalloc`: round to 32 and add the SoC's padding (not for 1 GiB policies).
    Malloc,
}

impl Runtime {
    /// `aclrtMalloc` and friends: allocates device memory on the current device.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0 or an overflowing size; `ACL_ERROR_RT_CONTEXT_NULL`
    /// without a current device; `ACL_ERROR_RT_MEMORY_ALLOCATION` when memory runs out.
    pub fn malloc(&self, api: &str, size: u64, policy: u32, which: MallocApi) -> Result<u64> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        let d = self.current_device(api)?;
        let plan = MallocPlan::new(self.soc, size, policy, which)
            .ok_or_else(|| AclError::invalid(format!("{api}: size {size} overflows when rounded")))?;
        let mut st = self.dev(d);
        let heap = st.heap.as_mut().ok_or_else(|| {
            AclError::new(ACL_ERROR_RT_CONTEXT_NULL, format!("{api}: device {d} has no context"))
        })?;
        let drv = self.backend.driver();
        let mut last_err = None;
        for &page in plan.pages() {
            let range = match heap.reserve(plan.rounded, page) {
                Ok(r) => r,
                Err(e) => {
                    last_err = Some(AclError::from_mm(
                        e,
                        &format!("{api}: no device VA for {} bytes", plan.rounded),
                    ));
                    continue;
                }
            };
            match drv.back(DeviceId(d), &BackRequest { range, page_size: page, attrs: plan.attrs }) {
                Ok(()) => {
                    heap.commit(Allocation {
                        range,
                        usable_bytes: plan.rounded,
                        page_size: page,
                        attrs: plan.attrs,
                    })
                    .map_err(|e| AclError::from_mm(e, api))?;
                    return Ok(range.start().as_u64());
                }
                Err(e) => {
                    let _ = heap.unreserve(range);
                    last_err = Some(AclError::new(
                        if e.kind() == hal::ErrorKind::OutOfMemory { ACL_ERROR_RT_MEMORY_ALLOCATION } else { AclError::from_hal(e, "").code() },
                        format!("{api}: cannot allocate {size} bytes ({} after rounding) with {} pages on device {d} ({}): {}", plan.rounded, page_name(page), policy_name(policy), e.detail()),
                    ));
                }
            }
        }
        Err(last_err.unwrap_or_else(|| {
            AclError::new(ACL_ERROR_RT_MEMORY_ALLOCATION, format!("{api}: cannot allocate {size} bytes"))
        }))
    }

    /// `aclrtFree`: frees a device allocation immediately.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a live allocation base on a device of
    /// this process; nothing changes then.
    pub fn free(&self, api: &str, ptr: u64) -> Result<()> {
        let d = match locate(ptr) {
            Loc::Device(d) if d < self.device_count() => d,
            Loc::Pinned => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: devPtr {ptr:#x} is pinned host memory; free it with aclrtFreeHost"
                )))
            }
            _ => return Err(AclError::rt_invalid(format!("{api}: devPtr {ptr:#x} is not device memory"))),
        };
        let mut st = self.dev(d);
        let Some(heap) = st.heap.as_mut() else {
            return Err(AclError::rt_invalid(format!(
                "{api}: devPtr {ptr:#x} is on device {d}, which has no context (reset or never set)"
            )));
        };
        let alloc = heap.get(DeviceAddr(ptr)).map_err(|why| not_live(api, "devPtr", ptr, why))?;
        let range = alloc.range;
        self.backend.driver().unback(DeviceId(d), range).map_err(|e| AclError::from_hal(e, api))?;
        heap.remove(DeviceAddr(ptr)).map_err(|why| not_live(api, "devPtr", ptr, why))?;
        Ok(())
    }

    /// `aclrtMallocHost`: allocates pinned host memory.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for size 0 or overflow; `ACL_ERROR_RT_MEMORY_ALLOCATION` when
    /// the pinned window is exhausted.
    pub fn malloc_host(&self, api: &str, size: u64) -> Result<u64> {
        if size == 0 {
            return Err(AclError::invalid(format!("{api}: size must be greater than 0")));
        }
        let usable = round_up(size, 64)
            .ok_or_else(|| AclError::invalid(format!("{api}: size {size} overflows when rounded")))?;
        let mut host = self.host.lock().unwrap_or_else(|p| p.into_inner());
        let range = host
            .reserve(usable, PageSize::Normal)
            .map_err(|e| AclError::from_mm(e, &format!("{api}: no pinned-host VA for {size} bytes")))?;
        if let Err(e) = self.backend.driver().back_host(range) {
            let _ = host.unreserve(range);
            return Err(AclError::new(
                ACL_ERROR_RT_MEMORY_ALLOCATION,
                format!("{api}: cannot pin {size} bytes: {}", e.detail()),
            ));
        }
        host.commit(Allocation {
            range,
            usable_bytes: usable,
            page_size: PageSize::Normal,
            attrs: MemAttr::empty(),
        })
        .map_err(|e| AclError::from_mm(e, api))?;
        Ok(range.start().as_u64())
    }

    /// `aclrtFreeHost`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when `ptr` is not a live pinned allocation.
    pub fn free_host(&self, api: &str, ptr: u64) -> Result<()> {
        if let Loc::Device(_) = locate(ptr) {
            return Err(AclError::rt_invalid(format!(
                "{api}: hostPtr {ptr:#x} is device memory; free it with aclrtFree"
            )));
        }
        if locate(ptr) != Loc::Pinned {
            return Err(AclError::rt_invalid(format!(
                "{api}: hostPtr {ptr:#x} was not allocated by aclrtMallocHost"
            )));
        }
        let mut host = self.host.lock().unwrap_or_else(|p| p.into_inner());
        let range = host.get(DeviceAddr(ptr)).map_err(|why| not_live(api, "hostPtr", ptr, why))?.range;
        self.backend.driver().unback_host(range).map_err(|e| AclError::from_hal(e, api))?;
        host.remove(DeviceAddr(ptr)).map_err(|why| not_live(api, "hostPtr", ptr, why))?;
        Ok(())
    }

    /// Checks that `[addr, addr + len)` at `loc` is live memory of this process.
    fn check_live(&self, api: &str, what: &str, loc: Loc, addr: u64, len: u64) -> Result<()> {
        let ok = match loc {
            Loc::Device(d) if d < self.device_count() => {
                self.dev(d).heap.as_ref().is_some_and(|h| h.contains_range(DeviceAddr(addr), len))
            }
            Loc::Device(_) => false,
            Loc::Pinned => {
                self.host.lock().unwrap_or_else(|p| p.into_inner()).contains_range(DeviceAddr(addr), len)
            }
            Loc::Unregistered => {
                if crosses_windows(addr, len) {
                    return Err(AclError::rt_invalid(format!(
                        "{api}: {what} range [{addr:#x}, +{len}) runs from ordinary host memory into a runtime VA window"
                    )));
                }
                true
            }
        };
        if ok {
            return Ok(());
        }
        let place = match loc {
            Loc::Device(d) => format!("a live allocation of device {d}"),
            _ => "a live aclrtMallocHost allocation".to_owned(),
        };
        Err(AclError::rt_invalid(format!("{api}: {what} range [{addr:#x}, +{len}) is not inside {place}")))
    }

    /// Validates an `aclrtMemcpy` and says what it will do.
    ///
    /// # Errors
    ///
    /// The documented codes for null pointers, bad kinds, `count > destMax`, kinds that do not
    /// match the addresses and ranges outside live memory.
    pub fn plan_memcpy(
        &self,
        api: &str,
        dst: u64,
        dest_max: u64,
        src: u64,
        count: u64,
        kind_value: u32,
    ) -> Result<CopyPlan> {
        let nop = CopyPlan { dst: Loc::Unregistered, src: Loc::Unregistered, count: 0 };
        if count == 0 {
            return Ok(nop);
        }
        if dst == 0 {
            return Err(AclError::invalid(format!("{api}: dst is NULL")));
        }
        if src == 0 {
            return Err(AclError::invalid(format!("{api}: src is NULL")));
        }
        if kind_value > kind::H2BUF2D {
            return Err(AclError::invalid(format!(
                "{api}: kind {kind_value} ({}) is not allowed; use 0..=5",
                kind::name(kind_value)
            )));
        }
        if count > dest_max {
            return Err(AclError::rt_invalid(format!(
                "{api}: count {count} is larger than destMax {dest_max}"
            )));
        }
        let _ = self.current_device(api)?;
        let (ld, ls) = (locate(dst), locate(src));
        check_kind(api, ls, ld, kind_value)?;
        self.check_live(api, "dst", ld, dst, count)?;
        self.check_live(api, "src", ls, src, count)?;
        if let (Loc::Device(a), Loc::Device(b)) = (ld, ls) {
            if a != b {
                return Err(AclError::rt_invalid(format!(
                    "{api}: copy from device {b} to device {a} needs peer access (aclrtDeviceEnablePeerAccess), which this runtime does not offer yet"
                )));
            }
        }
        if dst == src {
            return Ok(nop);
        }
        Ok(CopyPlan { dst: ld, src: ls, count })
    }

    /// Runs a planned copy whose `Unregistered` ends the C edge has turned into slices.
    ///
    /// # Errors
    ///
    /// The backend's error when a byte is not mapped (a concurrent free).
    pub fn copy(&self, api: &str, dst: DstBytes<'_>, src: SrcBytes<'_>, count: u64) -> Result<()> {
        let sim = self.backend.sim();
        let drv = self.backend.driver();
        let r = match (dst, src) {
            (DstBytes::Addr(d), SrcBytes::Addr(s)) => match (locate(d), locate(s)) {
                (Loc::Device(a), Loc::Device(b)) => {
                    drv.copy_device(DeviceId(a), DeviceAddr(d), DeviceId(b), DeviceAddr(s), count)
                }
                _ => sim.dma_copy(DeviceAddr(d), DeviceAddr(s), count),
            },
            (DstBytes::Addr(d), SrcBytes::Host(bytes)) => match locate(d) {
                Loc::Device(a) => drv.copy_to_device(DeviceId(a), DeviceAddr(d), bytes),
                _ => sim.write_pinned(DeviceAddr(d), bytes),
            },
            (DstBytes::Host(bytes), SrcBytes::Addr(s)) => match locate(s) {
                Loc::Device(b) => drv.copy_from_device(DeviceId(b), bytes, DeviceAddr(s)),
                _ => sim.read_pinned(bytes, DeviceAddr(s)),
            },
            (DstBytes::Host(d), SrcBytes::Host(s)) => {
                d.copy_from_slice(s);
                Ok(())
            }
        };
        r.map_err(|e| AclError::from_hal(e, api))
    }

    /// Validates an `aclrtMemset`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL, `ACL_ERROR_RT_PARAM_INVALID` for `count > maxCount`
    /// or memory the runtime did not allocate.
    pub fn plan_memset(&self, api: &str, dst: u64, max_count: u64, count: u64) -> Result<SetPlan> {
        if count == 0 {
            return Ok(SetPlan { dst: Loc::Unregistered, count: 0 });
        }
        if dst == 0 {
            return Err(AclError::invalid(format!("{api}: devPtr is NULL")));
        }
        if count > max_count {
            return Err(AclError::rt_invalid(format!(
                "{api}: count {count} is larger than maxCount {max_count}"
            )));
        }
        let _ = self.current_device(api)?;
        let loc = locate(dst);
        if loc == Loc::Unregistered {
            return Err(AclError::rt_invalid(format!(
                "{api}: devPtr {dst:#x} is not memory from an ACL allocator"
            )));
        }
        self.check_live(api, "devPtr", loc, dst, count)?;
        Ok(SetPlan { dst: loc, count })
    }

    /// Runs a planned memset.
    ///
    /// # Errors
    ///
    /// The backend's error when a byte is not mapped (a concurrent free).
    pub fn memset(&self, api: &str, plan: SetPlan, dst: u64, value: u8) -> Result<()> {
        if plan.count == 0 {
            return Ok(());
        }
        let r = match plan.dst {
            Loc::Device(d) => {
                self.backend.driver().set_device(DeviceId(d), DeviceAddr(dst), value, plan.count)
            }
            _ => self.backend.sim().dma_fill(DeviceAddr(dst), value, plan.count),
        };
        r.map_err(|e| AclError::from_hal(e, api))
    }

    /// `aclrtGetMemInfo` for the current device: `(free, total)`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for an unknown attribute; `ACL_ERROR_RT_CONTEXT_NULL` without
    /// a current device.
    pub fn mem_info(&self, api: &str, attr: u32) -> Result<(u64, u64)> {
        if attr > 17 {
            return Err(AclError::invalid(format!("{api}: attr {attr} is not an aclrtMemAttr (0..=17)")));
        }
        let d = self.current_device(api)?;
        let info: MemoryInfo =
            self.backend.driver().memory_info(DeviceId(d)).map_err(|e| AclError::from_hal(e, api))?;
        Ok(match attr {
            // DDR classes: this device has HBM only, so they report nothing.
            0 | 2 | 3 | 6 | 7 => (0, 0),
            // HBM (or runtime's choice) with normal pages, or all pages.
            1 | 5 | 9 | 12 | 15 => (info.free_bytes, info.total_bytes),
            // 2 MiB huge pages.
            4 | 8 | 13 | 16 => (info.huge_free_bytes, info.huge_total_bytes),
            // 1 GiB pages.
            _ => (info.giant_free_bytes, info.giant_total_bytes),
        })
    }
}

/// Whether `[addr, addr + len)` (which starts outside every window) reaches into one, or wraps.
fn crosses_windows(addr: u64, len: u64) -> bool {
    let Some(end) = addr.checked_add(len) else { return true };
    if end > isize::MAX as u64 {
        return true;
    }
    [HOST_WINDOW_BASE, hal::layout::POOL_WINDOW_BASE, hal::layout::DEVICE_WINDOW_BASE]
        .iter()
        .any(|&base| addr < base && end > base)
}

fn not_live(api: &str, what: &str, ptr: u64, why: NotLive) -> AclError {
    let reason = match why {
        NotLive::Freed => "was already freed (double free)".to_owned(),
        NotLive::Interior { base } => format!("points inside the allocation at {base}, not at its start"),
        NotLive::Unknown => "is not a live allocation of this process".to_owned(),
    };
    AclError::rt_invalid(format!("{api}: {what} {ptr:#x} {reason}"))
}

fn page_name(p: PageSize) -> &'static str {
    match p {
        PageSize::Normal => "4 KiB",
        PageSize::Huge => "2 MiB",
        PageSize::Giant => "1 GiB",
    }
}

/// The name of an `aclrtMemMallocPolicy` value, for messages.
pub fn policy_name(policy: u32) -> &'static str {
    match policy {
        0 => "ACL_MEM_MALLOC_HUGE_FIRST",
        1 => "ACL_MEM_MALLOC_HUGE_ONLY",
        2 => "ACL_MEM_MALLOC_NORMAL_ONLY",
        3 => "ACL_MEM_MALLOC_HUGE_FIRST_P2P",
        4 => "ACL_MEM_MALLOC_HUGE_ONLY_P2P",
        5 => "ACL_MEM_MALLOC_NORMAL_ONLY_P2P",
        6 => "ACL_MEM_MALLOC_HUGE1G_ONLY",
        7 => "ACL_MEM_MALLOC_HUGE1G_ONLY_P2P",
        _ => "an out-of-range policy (treated as huge pages from 2 MiB, normal below)",
    }
}

/// The direction rules of `aclrtMemcpy` (reference behaviour): the four determinate pairs
/// force their kind; pairs with ordinary host memory allow only some kinds.
fn check_kind(api: &str, src: Loc, dst: Loc, k: u32) -> Result<()> {
    use kind::*;
    let host_like = |l: Loc| !matches!(l, Loc::Device(_));
    let requested = if k == H2BUF2D { H2D } else { k };
    let allowed: &[u32] = match (src, dst) {
        (Loc::Unregistered, Loc::Device(_)) => &[H2D, D2D],
        (Loc::Device(_), Loc::Unregistered) => &[D2H, D2D],
        (Loc::Pinned, Loc::Unregistered) => &[H2H, H2D],
        (Loc::Unregistered, Loc::Pinned) => &[H2H, D2H],
        (Loc::Unregistered, Loc::Unregistered) => &[H2H, H2D, D2H, D2D],
        // Determinate pairs: the kind is corrected to what the addresses say.
        _ => return Ok(()),
    };
    if requested == DEFAULT || allowed.contains(&requested) {
        return Ok(());
    }
    let side = |l: Loc| {
        if host_like(l) {
            if l == Loc::Pinned {
                "pinned host"
            } else {
                "ordinary host"
            }
        } else {
            "device"
        }
    };
    Err(AclError::rt_invalid(format!(
        "{api}: kind {} does not fit a copy from {} memory to {} memory",
        kind::name(k),
        side(src),
        side(dst)
    )))
}

/// How an allocation request is rounded and which page sizes are tried, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MallocPlan {
    /// Usable size after the API's rounding.
    pub rounded: u64,
    /// Attributes of the backing.
    pub attrs: MemAttr,
    pages: [PageSize; 2],
    npages: usize,
}

impl MallocPlan {
    /// Plans `size` bytes with `policy` on `soc`; `None` when rounding overflows.
    pub fn new(soc: SocProfile, size: u64, policy: u32, which: MallocApi) -> Option<Self> {
        let giant = matches!(policy, 6 | 7);
        let MallocApi::Malloc = which;
        let pad = if giant { 0 } else { soc.malloc_padding() };
        let rounded = round_up(size.checked_add(pad)?, 32)?;
        let attrs =
            if matches!(policy, 3 | 4 | 5 | 7) { MemAttr::P2P | MemAttr::CACHED } else { MemAttr::CACHED };
        // The documented thresholds apply to the size the caller asked for: HUGE_FIRST gives
        // normal pages up to 1 MiB; an out-of-range policy gives huge pages from 2 MiB.
        let (pages, npages) = match policy {
            0 | 3 if size > MIB => ([PageSize::Huge, PageSize::Normal], 2),
            0 | 3 | 2 | 5 => ([PageSize::Normal, PageSize::Normal], 1),
            1 | 4 => ([PageSize::Huge, PageSize::Huge], 1),
            6 | 7 => ([PageSize::Giant, PageSize::Giant], 1),
            // Out of range (or a policy with extra bits): huge pages from 2 MiB, normal below.
            _ if size >= 2 * MIB => ([PageSize::Huge, PageSize::Normal], 2),
            _ => ([PageSize::Normal, PageSize::Normal], 1),
        };
        Some(Self { rounded, attrs, pages, npages })
    }

    /// The page sizes to try, in order.
    pub fn pages(&self) -> &[PageSize] {
        &self.pages[..self.npages]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malloc_rounding_per_soc() {
        let p = |soc, size, pol| MallocPlan::new(soc, size, pol, MallocApi::Malloc).unwrap().rounded;
        assert_eq!(p(SocProfile::A2, 1, 0), 64);
        assert_eq!(p(SocProfile::A2, 32, 0), 64);
        assert_eq!(p(SocProfile::A2, 33, 0), 96);
        assert_eq!(p(SocProfile::Ascend950, 1, 0), 32);
        assert_eq!(p(SocProfile::Ascend950, 32, 0), 32);
        assert_eq!(p(SocProfile::Ascend950, 33, 0), 64);
        assert_eq!(p(SocProfile::A2, 33, 6), 64, "1 GiB policies get no padding");
        assert!(MallocPlan::new(SocProfile::A2, u64::MAX, 0, MallocApi::Malloc).is_none());
        assert!(MallocPlan::new(SocProfile::A2, u64::MAX - 40, 0, MallocApi::Malloc).is_none());
    }

    #[test]
    fn policies_choose_pages() {
        let pages = |size, pol| {
            MallocPlan::new(SocProfile::A2, size, pol, MallocApi::Malloc).unwrap().pages().to_vec()
        };
        assert_eq!(pages(MIB, 0), vec![PageSize::Normal], "up to 1 MiB as asked stays on normal pages");
        assert_eq!(pages(MIB + 1, 0), vec![PageSize::Huge, PageSize::Normal]);
        assert_eq!(pages(100, 1), vec![PageSize::Huge]);
        assert_eq!(pages(8 * MIB, 2), vec![PageSize::Normal]);
        assert_eq!(pages(8 * MIB, 6), vec![PageSize::Giant]);
        assert_eq!(pages(2 * MIB, 0x1000), vec![PageSize::Huge, PageSize::Normal]);
        assert_eq!(pages(2 * MIB - 1, 0x1000), vec![PageSize::Normal]);
        assert!(MallocPlan::new(SocProfile::A2, 10, 4, MallocApi::Malloc)
            .unwrap()
            .attrs
            .contains(MemAttr::P2P));
    }

    #[test]
    fn kinds_follow_the_reference_table() {
        use kind::*;
        let ok = |s, d, k| check_kind("t", s, d, k).is_ok();
        assert!(ok(Loc::Pinned, Loc::Device(0), D2H), "determinate pairs are corrected");
        assert!(ok(Loc::Unregistered, Loc::Device(0), H2D));
        assert!(ok(Loc::Unregistered, Loc::Device(0), D2D));
        assert!(!ok(Loc::Unregistered, Loc::Device(0), D2H));
        assert!(!ok(Loc::Device(0), Loc::Unregistered, H2D));
        assert!(ok(Loc::Device(0), Loc::Unregistered, DEFAULT));
        assert!(ok(Loc::Pinned, Loc::Unregistered, H2D));
        assert!(!ok(Loc::Pinned, Loc::Unregistered, D2H));
        assert!(!ok(Loc::Unregistered, Loc::Pinned, H2D));
        assert!(ok(Loc::Unregistered, Loc::Unregistered, D2D));
        assert!(ok(Loc::Unregistered, Loc::Device(1), H2BUF2D));
    }
}
