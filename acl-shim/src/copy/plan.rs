//! The plans of the 2D and batch copies: every argument check and the direction and location
//! rules, in safe code. The memory checks of each end (is it live, in which window) are asked
//! of a `check` function the caller passes (the runtime's `plan_memcpy` and `locate` on the C
//! path), so the rules are tested here without a runtime.

use std::ffi::c_void;

use crate::error::{AclError, Result};
use crate::state::memory::{kind, Loc};

/// The most entries of one batch copy ([`hal::copy::BATCH_MAX_ENTRIES`]).
pub const BATCH_MAX: usize = hal::copy::BATCH_MAX_ENTRIES;

/// Whether an end can be reached by DMA (device or pinned memory, not pageable host memory).
pub fn is_dma(l: Loc) -> bool {
    !matches!(l, Loc::Unregistered)
}

/// Whether both ends are device memory (the device-to-device slice limit applies).
pub fn is_d2d(dl: Loc, sl: Loc) -> bool {
    matches!((dl, sl), (Loc::Device(_), Loc::Device(_)))
}

/// `v` as a byte count, refused above `isize::MAX` (no object is larger).
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` naming `api` and the argument `name`.
pub fn object_size(api: &str, name: &str, v: usize) -> Result<u64> {
    if v > isize::MAX as usize {
        return Err(AclError::invalid(format!("{api}: {name} {v} is larger than any object can be")));
    }
    // CAST: checked above to fit.
    Ok(v as u64)
}

/// The shape of a 2D copy, as `aclrtMemcpy2d[Async]` takes it.
#[derive(Debug, Clone, Copy)]
pub struct Copy2d {
    /// Destination address.
    pub dst: u64,
    /// Bytes between destination rows.
    pub dpitch: usize,
    /// Source address.
    pub src: u64,
    /// Bytes between source rows.
    pub spitch: usize,
    /// Bytes of each row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `aclrtMemcpyKind`.
    pub kind: u32,
    /// The asynchronous form (which allows device to device, within CANN's size limits).
    pub is_async: bool,
}

/// What a validated 2D copy spans on each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan2d {
    /// Where the destination lies.
    pub dl: Loc,
    /// Where the source lies.
    pub sl: Loc,
}

/// Checks a 2D copy of at least one row of at least one byte. `check(addr, span)` checks that
/// `span` bytes from `addr` are live memory (or ordinary host memory) and says where they lie;
/// it is called for the destination, then the source.
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` for a NULL end, a kind the form does not allow, a row wider than a
/// pitch, sizes over CANN's limits or rows spanning more than any object; `check`'s error;
/// `ACL_ERROR_RT_PARAM_INVALID` when the kind does not match the memory or the ends are on two
/// devices.
pub fn plan_2d(api: &str, c: &Copy2d, mut check: impl FnMut(u64, u64) -> Result<Loc>) -> Result<Plan2d> {
    let Copy2d { dst, dpitch, src, spitch, width, height, kind: kind_value, is_async } = *c;
    if dst == 0 {
        return Err(AclError::invalid(format!("{api}: dst is NULL")));
    }
    if src == 0 {
        return Err(AclError::invalid(format!("{api}: src is NULL")));
    }
    let allowed: &[u32] = if is_async { &[kind::H2D, kind::D2H, kind::D2D] } else { &[kind::H2D, kind::D2H] };
    if !allowed.contains(&kind_value) && kind_value != kind::DEFAULT {
        return Err(AclError::invalid(format!(
            "{api}: kind {kind_value} ({}) is not allowed; use {}",
            kind::name(kind_value),
            if is_async {
                "HOST_TO_DEVICE, DEVICE_TO_HOST or DEVICE_TO_DEVICE"
            } else {
                "HOST_TO_DEVICE or DEVICE_TO_HOST"
            }
        )));
    }
    if width > spitch || width > dpitch {
        return Err(AclError::invalid(format!(
            "{api}: width {width} is larger than a pitch (dpitch {dpitch}, spitch {spitch})"
        )));
    }
    if is_async && (width > 5_000_000 || height > 5 * 1024 * 1024) {
        return Err(AclError::invalid(format!(
            "{api}: width {width} must be <= 5000000 and height {height} <= 5242880"
        )));
    }
    let span = |pitch: usize| -> Result<u64> {
        let p = object_size(api, "pitch", pitch)?;
        // CAST: usize fits in u64; the result is checked below to fit.
        let last = (height as u64 - 1).checked_mul(p).and_then(|x| x.checked_add(width as u64));
        last.filter(|&v| v <= isize::MAX as u64)
            .ok_or_else(|| AclError::invalid(format!("{api}: the rows span more bytes than any object can")))
    };
    let (dspan, sspan) = (span(dpitch)?, span(spitch)?);
    // Each side must be live memory (or ordinary host memory) over its whole span.
    let dl = check(dst, dspan)?;
    let sl = check(src, sspan)?;
    let dir_ok = match kind_value {
        kind::H2D => matches!(dl, Loc::Device(_)) && !matches!(sl, Loc::Device(_)),
        kind::D2H => matches!(sl, Loc::Device(_)) && !matches!(dl, Loc::Device(_)),
        kind::D2D => is_d2d(dl, sl),
        _ => (matches!(dl, Loc::Device(_)) || matches!(sl, Loc::Device(_))) && (is_async || !is_d2d(dl, sl)),
    };
    if !dir_ok {
        return Err(AclError::rt_invalid(format!(
            "{api}: kind {} does not match the memory (dst is {dl:?}, src is {sl:?})",
            kind::name(kind_value)
        )));
    }
    if let (Loc::Device(a), Loc::Device(b)) = (dl, sl) {
        if a != b {
            return Err(AclError::rt_invalid(format!(
                "{api}: copies between devices {b} and {a} need peer access"
            )));
        }
    }
    Ok(Plan2d { dl, sl })
}

/// `aclrtMemcpyBatchAttr`: declared locations of a run of batch entries.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AclrtMemcpyBatchAttr {
    /// Destination location: (id, type).
    pub dst_loc: [u32; 2],
    /// Source location: (id, type).
    pub src_loc: [u32; 2],
    /// Reserved, must be zero.
    pub rsv: [u8; 16],
}

/// A batch's arrays, borrowed from C (`numBatches` entries each, `numAttrs` of the attributes).
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    /// Destination of each entry.
    pub dsts: &'a [*mut c_void],
    /// Room at each destination.
    pub dest_maxs: &'a [usize],
    /// Source of each entry.
    pub srcs: &'a [*mut c_void],
    /// Bytes of each entry.
    pub sizes: &'a [usize],
    /// The declared locations of runs of entries.
    pub attrs: &'a [AclrtMemcpyBatchAttr],
    /// The first entry of each run.
    pub attr_idx: &'a [usize],
}

/// Why a batch was refused, and at which entry (`usize::MAX`: none in particular).
pub type BatchError = (AclError, usize);

/// A checked batch: entries as (dst, src, len) and whether every one is DMA-able.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlan {
    /// The non-empty entries as (dst, src, len).
    pub entries: Vec<(u64, u64, u64)>,
    /// Where each entry's ends lie (dst, src).
    pub locs: Vec<(Loc, Loc)>,
    /// Whether every end can be reached by DMA.
    pub all_dma: bool,
}

fn loc_matches(declared: [u32; 2], actual: Loc) -> bool {
    let [id, ty] = declared;
    match actual {
        // ACL_MEM_LOCATION_TYPE_DEVICE (1) with the device id.
        Loc::Device(d) => ty == 1 && id == d,
        // ACL_MEM_LOCATION_TYPE_HOST (0) or HOST_NUMA (4); pageable memory may be declared
        // UNREGISTERED (2) too.
        Loc::Pinned => ty == 0 || ty == 4,
        Loc::Unregistered => ty == 0 || ty == 2 || ty == 4,
    }
}

/// Checks a batch: its arrays, then each non-empty entry. `check(dst, src, len)` checks both
/// ends of one entry as a copy and says where they lie. `None` when every entry is empty.
///
/// # Errors
///
/// With the index of the entry at fault (`usize::MAX` for the arrays):
/// `ACL_ERROR_INVALID_PARAM` for more than [`BATCH_MAX`] entries, bad attribute indexes, a
/// non-zero reserved field or a size over its room; `check`'s error;
/// `ACL_ERROR_RT_PARAM_INVALID` for an entry that copies device to device or host to host, goes
/// the other way from the first, or does not match its declared locations.
pub fn plan_batch(
    api: &str,
    b: &Batch<'_>,
    mut check: impl FnMut(u64, u64, u64) -> Result<(Loc, Loc)>,
) -> std::result::Result<Option<BatchPlan>, BatchError> {
    let none = usize::MAX;
    let inv = |m: String| (AclError::invalid(format!("{api}: {m}")), none);
    let n = b.dsts.len();
    if n > BATCH_MAX {
        return Err(inv(format!("numBatches {n} is more than {BATCH_MAX}")));
    }
    let na = b.attrs.len();
    if na == 0 || na > n {
        return Err(inv(format!("numAttrs {na} must be between 1 and numBatches ({n})")));
    }
    if b.attr_idx[0] != 0 {
        return Err(inv(format!("attrsIndexes[0] is {}, not 0", b.attr_idx[0])));
    }
    for k in 1..na {
        if b.attr_idx[k] <= b.attr_idx[k - 1] {
            return Err(inv(format!("attrsIndexes must increase strictly (index {k})")));
        }
    }
    if b.attr_idx[na - 1] >= n {
        return Err(inv(format!(
            "attrsIndexes[{}] = {} is not below numBatches {n}",
            na - 1,
            b.attr_idx[na - 1]
        )));
    }
    for (k, a) in b.attrs.iter().enumerate() {
        if a.rsv.iter().any(|&x| x != 0) {
            return Err(inv(format!("attrs[{k}].rsv is not all zero")));
        }
    }
    for i in 0..n {
        if b.dest_maxs[i] < b.sizes[i] {
            return Err((
                AclError::invalid(format!(
                    "{api}: sizes[{i}] {} is larger than destMaxs[{i}] {}",
                    b.sizes[i], b.dest_maxs[i]
                )),
                i,
            ));
        }
    }
    if b.sizes.iter().all(|&s| s == 0) {
        return Ok(None);
    }
    let mut plan = BatchPlan { entries: Vec::with_capacity(n), locs: Vec::with_capacity(n), all_dma: true };
    let mut direction: Option<bool> = None;
    let mut k = 0;
    for i in 0..n {
        while k + 1 < na && b.attr_idx[k + 1] <= i {
            k += 1;
        }
        // CAST: addresses as numbers; usize fits in u64.
        let (d, s, len) = (b.dsts[i] as usize as u64, b.srcs[i] as usize as u64, b.sizes[i] as u64);
        if len == 0 {
            continue;
        }
        let (dl, sl) = check(d, s, len).map_err(|e| (e, i))?;
        let h2d = match (dl, sl) {
            (Loc::Device(_), Loc::Device(_)) => {
                return Err((
                    AclError::rt_invalid(format!(
                        "{api}: entry {i} copies device to device; a batch copies host<->device only"
                    )),
                    i,
                ))
            }
            (Loc::Device(_), _) => true,
            (_, Loc::Device(_)) => false,
            _ => {
                return Err((
                    AclError::rt_invalid(format!(
                        "{api}: entry {i} copies host to host; a batch copies host<->device only"
                    )),
                    i,
                ))
            }
        };
        if *direction.get_or_insert(h2d) != h2d {
            return Err((
                AclError::rt_invalid(format!(
                    "{api}: entry {i} goes the other way; a batch has one direction"
                )),
                i,
            ));
        }
        let a = b.attrs[k];
        if !loc_matches(a.dst_loc, dl) || !loc_matches(a.src_loc, sl) {
            return Err((
                AclError::rt_invalid(format!(
                    "{api}: entry {i} does not match attrs[{k}] (declared dst {:?} src {:?}; actual dst {dl:?} src {sl:?})",
                    a.dst_loc, a.src_loc
                )),
                i,
            ));
        }
        plan.all_dma &= is_dma(dl) && is_dma(sl);
        plan.entries.push((d, s, len));
        plan.locs.push((dl, sl));
    }
    Ok(Some(plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::{ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID};

    const DEV: u64 = 0x10_0000;
    const HOST: u64 = 0x20_0000;

    /// Device 0 below `HOST`, ordinary host memory from it.
    fn where_is(a: u64) -> Loc {
        if a < HOST {
            Loc::Device(0)
        } else {
            Loc::Unregistered
        }
    }

    fn c2d(dst: u64, src: u64, kind: u32, is_async: bool) -> Copy2d {
        Copy2d { dst, dpitch: 16, src, spitch: 32, width: 8, height: 4, kind, is_async }
    }

    #[test]
    fn a_2d_copy_checks_each_side_over_its_whole_span() {
        let mut spans = Vec::new();
        let p = plan_2d("aclrtMemcpy2d", &c2d(DEV, HOST, kind::H2D, false), |a, span| {
            spans.push((a, span));
            Ok(where_is(a))
        })
        .unwrap();
        assert_eq!(p, Plan2d { dl: Loc::Device(0), sl: Loc::Unregistered });
        // Three pitches and one row on each side.
        assert_eq!(spans, [(DEV, 3 * 16 + 8), (HOST, 3 * 32 + 8)]);
    }

    #[test]
    fn a_2d_copy_refuses_bad_shapes_before_touching_memory() {
        let no_memory = |_: u64, _: u64| -> Result<Loc> { panic!("memory checked") };
        let cases = [
            (Copy2d { dst: 0, ..c2d(DEV, HOST, kind::H2D, false) }, "dst is NULL"),
            (Copy2d { src: 0, ..c2d(DEV, HOST, kind::H2D, false) }, "src is NULL"),
            (c2d(DEV, DEV, kind::D2D, false), "is not allowed"),
            (Copy2d { width: 17, ..c2d(DEV, HOST, kind::H2D, false) }, "larger than a pitch"),
            (Copy2d { height: 6 << 20, ..c2d(DEV, HOST, kind::H2D, true) }, "must be <= 5000000"),
            (Copy2d { dpitch: usize::MAX, ..c2d(DEV, HOST, kind::H2D, false) }, "larger than any object"),
        ];
        for (c, why) in cases {
            let e = plan_2d("aclrtMemcpy2d", &c, no_memory).unwrap_err();
            assert_eq!(e.code(), ACL_ERROR_INVALID_PARAM, "{c:?}");
            assert!(
                e.message().starts_with("aclrtMemcpy2d: ") && e.message().contains(why),
                "{}",
                e.message()
            );
        }
    }

    #[test]
    fn a_2d_copy_kind_must_match_the_memory() {
        let check = |a: u64, _: u64| Ok(where_is(a));
        let e = plan_2d("aclrtMemcpy2d", &c2d(HOST, DEV, kind::H2D, false), check).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_PARAM_INVALID);
        assert!(e.message().contains("does not match the memory"), "{}", e.message());
        // DEFAULT infers the direction; device to device only in the asynchronous form.
        assert!(plan_2d("x", &c2d(HOST, DEV, kind::DEFAULT, false), check).is_ok());
        assert!(plan_2d("x", &c2d(DEV, DEV, kind::DEFAULT, false), check).is_err());
        assert!(plan_2d("x", &c2d(DEV, DEV, kind::DEFAULT, true), check).is_ok());
        let two_devices = |a: u64, _: u64| Ok(if a == DEV { Loc::Device(0) } else { Loc::Device(1) });
        let e = plan_2d("x", &c2d(DEV, DEV + 1, kind::D2D, true), two_devices).unwrap_err();
        assert!(e.message().contains("need peer access"), "{}", e.message());
    }

    fn attr(dst_ty: u32, src_ty: u32) -> AclrtMemcpyBatchAttr {
        AclrtMemcpyBatchAttr { dst_loc: [0, dst_ty], src_loc: [0, src_ty], rsv: [0; 16] }
    }

    fn ptr(a: u64) -> *mut c_void {
        // CAST: a test address, never dereferenced.
        a as usize as *mut c_void
    }

    #[test]
    fn a_batch_plans_its_non_empty_entries_in_one_direction() {
        let (dsts, srcs) =
            ([ptr(DEV), ptr(DEV + 64), ptr(DEV + 128)], [ptr(HOST), ptr(HOST + 64), ptr(HOST + 128)]);
        let (maxs, sizes) = ([64, 64, 64], [64, 0, 32]);
        let attrs = [attr(1, 2)];
        let b = Batch {
            dsts: &dsts,
            dest_maxs: &maxs,
            srcs: &srcs,
            sizes: &sizes,
            attrs: &attrs,
            attr_idx: &[0],
        };
        let plan =
            plan_batch("aclrtMemcpyBatch", &b, |d, s, _| Ok((where_is(d), where_is(s)))).unwrap().unwrap();
        assert_eq!(plan.entries, [(DEV, HOST, 64), (DEV + 128, HOST + 128, 32)]);
        assert!(!plan.all_dma, "pageable host ends are not DMA-able");
        let empty = [0, 0, 0];
        let b = Batch { sizes: &empty, ..b };
        assert_eq!(plan_batch("x", &b, |_, _, _| panic!("checked an empty entry")).unwrap(), None);
    }

    #[test]
    fn a_batch_names_the_entry_at_fault() {
        let (dsts, srcs) = ([ptr(DEV), ptr(HOST)], [ptr(HOST), ptr(DEV)]);
        let attrs = [attr(1, 2)];
        let b = Batch {
            dsts: &dsts,
            dest_maxs: &[8, 8],
            srcs: &srcs,
            sizes: &[8, 8],
            attrs: &attrs,
            attr_idx: &[0],
        };
        let check = |d: u64, s: u64, _: u64| Ok((where_is(d), where_is(s)));
        let (e, i) = plan_batch("x", &b, check).unwrap_err();
        assert_eq!((e.code(), i), (ACL_ERROR_RT_PARAM_INVALID, 1));
        assert!(e.message().contains("goes the other way"), "{}", e.message());
        let (e, i) = plan_batch("x", &Batch { sizes: &[8, 9], ..b }, check).unwrap_err();
        assert_eq!((e.code(), i), (ACL_ERROR_INVALID_PARAM, 1));
        let (e, i) = plan_batch("x", &Batch { attr_idx: &[1], ..b }, check).unwrap_err();
        assert_eq!((e.code(), i), (ACL_ERROR_INVALID_PARAM, usize::MAX));
        // Declared device-to-unregistered, but entry 0's source is device memory here.
        let all_device = |_: u64, _: u64, _: u64| Ok((Loc::Device(0), Loc::Device(0)));
        let (e, i) = plan_batch("x", &b, all_device).unwrap_err();
        assert_eq!(i, 0);
        assert!(e.message().contains("device to device"), "{}", e.message());
    }
}
