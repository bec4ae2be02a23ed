//! Allocation policies: from the raw `aclrtMemMallocPolicy` word and the entry point used, to a
//! typed request that says how many bytes the caller may use and which pages may back them.
//!
//! This module owns the size-rounding and policy rules of the ACL API (per SoC profile) and
//! nothing else: it neither allocates VA nor touches frames.

use hal::{MemAttr, SocProfile};

/// `ACL_MEM_MALLOC_HUGE_FIRST`.
pub const HUGE_FIRST: u32 = 0;
/// `ACL_MEM_MALLOC_HUGE_ONLY`.
pub const HUGE_ONLY: u32 = 1;
/// `ACL_MEM_MALLOC_NORMAL_ONLY`.
pub const NORMAL_ONLY: u32 = 2;
/// `ACL_MEM_MALLOC_HUGE_FIRST_P2P`.
pub const HUGE_FIRST_P2P: u32 = 3;
/// `ACL_MEM_MALLOC_HUGE_ONLY_P2P`.
pub const HUGE_ONLY_P2P: u32 = 4;
/// `ACL_MEM_MALLOC_NORMAL_ONLY_P2P`.
pub const NORMAL_ONLY_P2P: u32 = 5;
/// `ACL_MEM_MALLOC_HUGE1G_ONLY`.
pub const HUGE1G_ONLY: u32 = 6;
/// `ACL_MEM_MALLOC_HUGE1G_ONLY_P2P`.
pub const HUGE1G_ONLY_P2P: u32 = 7;
/// `ACL_MEM_TYPE_LOW_BAND_WIDTH` (a flag; no effect on A2/A3/950).
pub const LOW_BAND_WIDTH: u32 = 0x100;
/// `ACL_MEM_TYPE_HIGH_BAND_WIDTH` (a flag; no effect on A2/A3/950).
pub const HIGH_BAND_WIDTH: u32 = 0x1000;
/// `ACL_MEM_ACCESS_USER_SPACE_READONLY` (a flag).
pub const USER_SPACE_READONLY: u32 = 0x10_0000;

const MIB: u64 = 1 << 20;

/// Which pages may back an allocation, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PagePlan {
    /// 2 MiB pages for every whole 2 MiB, then 4 KiB pages for the tail; all 4 KiB pages when
    /// no 2 MiB page is left.
    HugeFirst,
    /// 2 MiB pages only; fails when they run out.
    HugeOnly,
    /// 4 KiB pages only.
    NormalOnly,
    /// 1 GiB pages only; fails when they run out.
    Giant,
}

/// Which policy an allocation was made with, for accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyClass {
    /// One of the eight base policies (0–7).
    Base(u8),
    /// A value outside the enum (treated as huge pages from 2 MiB, normal pages below).
    Default,
}

impl PolicyClass {
    /// Index for per-policy tables (0–7 base, 8 default).
    pub const fn index(self) -> usize {
        match self {
            Self::Base(b) => b as usize,
            Self::Default => 8,
        }
    }

    /// Number of distinct classes.
    pub const COUNT: usize = 9;
}

/// The entry point an allocation came through; each rounds and checks differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `aclrtMalloc`: round to 32 and add the SoC's padding (none for 1 GiB policies).
    Malloc,
    /// `aclrtMallocAlign32`: round to 32 only.
    Align32,
    /// `aclrtMallocCached`: as `aclrtMalloc`, one of HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY or
    /// HUGE1G_ONLY only.
    Cached,
    /// `aclrtMallocWithCfg` / `aclrtMallocForTaskScheduler`: bandwidth, read-only and base
    /// policy groups may be ORed; the size is rounded to 32.
    WithCfg,
}

/// A checked allocation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Bytes the caller may use, after the API's rounding.
    pub usable_bytes: u64,
    /// Which pages back it.
    pub plan: PagePlan,
    /// Attributes of the backing.
    pub attrs: MemAttr,
    /// The policy, for accounting.
    pub class: PolicyClass,
}

/// Why a request was refused, in words naming the bad argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyError(pub &'static str);

fn round32(v: u64) -> Option<u64> {
    v.checked_add(31).map(|x| x & !31)
}

/// Base-policy semantics shared by every entry point.
fn base_plan(base: u32, size: u64) -> (PagePlan, MemAttr) {
    let p2p = matches!(base, HUGE_FIRST_P2P | HUGE_ONLY_P2P | NORMAL_ONLY_P2P | HUGE1G_ONLY_P2P);
    let attrs = if p2p { MemAttr::P2P | MemAttr::CACHED } else { MemAttr::CACHED };
    let plan = match base {
        // The documented threshold applies to the size asked for: up to 1 MiB, normal pages.
        HUGE_FIRST | HUGE_FIRST_P2P if size > MIB => PagePlan::HugeFirst,
        HUGE_FIRST | HUGE_FIRST_P2P | NORMAL_ONLY | NORMAL_ONLY_P2P => PagePlan::NormalOnly,
        HUGE_ONLY | HUGE_ONLY_P2P => PagePlan::HugeOnly,
        HUGE1G_ONLY | HUGE1G_ONLY_P2P => PagePlan::Giant,
        // Out of range: huge pages from 2 MiB, normal pages below (D-11-01).
        _ if size >= 2 * MIB => PagePlan::HugeFirst,
        _ => PagePlan::NormalOnly,
    };
    (plan, attrs)
}

/// Checks and types a request of `size` bytes with `policy` through `api` on `soc`.
///
/// # Errors
///
/// A [`PolicyError`] naming the problem: zero size, a size that overflows when rounded, or a
/// policy word the entry point does not accept.
#[inline]
pub fn request(api: Api, soc: SocProfile, size: u64, policy: u32) -> Result<Request, PolicyError> {
    if size == 0 {
        return Err(PolicyError("size must be greater than 0"));
    }
    let overflow = PolicyError("size overflows when rounded");
    match api {
        Api::Malloc | Api::Align32 | Api::Cached => {
            if api == Api::Cached && !matches!(policy, HUGE_FIRST | HUGE_ONLY | NORMAL_ONLY | HUGE1G_ONLY) {
                return Err(PolicyError(
                    "aclrtMallocCached accepts exactly one of HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY or HUGE1G_ONLY",
                ));
            }
            // Exactly one enum value; anything else (including ORed flags) is the default policy.
            let (class, base) = if policy <= HUGE1G_ONLY_P2P {
                // CAST: policy <= 7.
                (PolicyClass::Base(policy as u8), policy)
            } else {
                (PolicyClass::Default, u32::MAX)
            };
            let giant = matches!(base, HUGE1G_ONLY | HUGE1G_ONLY_P2P);
            let pad = if api == Api::Align32 || giant { 0 } else { soc.malloc_padding() };
            let usable_bytes = round32(size.checked_add(pad).ok_or(overflow)?).ok_or(overflow)?;
            let (plan, mut attrs) = base_plan(base, size);
            if api == Api::Cached {
                attrs |= MemAttr::CACHED;
            }
            Ok(Request { usable_bytes, plan, attrs, class })
        }
        Api::WithCfg => {
            let bandwidth = policy & (LOW_BAND_WIDTH | HIGH_BAND_WIDTH);
            if bandwidth == LOW_BAND_WIDTH | HIGH_BAND_WIDTH {
                return Err(PolicyError("policy ORs both LOW_BAND_WIDTH and HIGH_BAND_WIDTH"));
            }
            // A word that is not (flags | one base policy) is outside the enum: huge pages from
            // 2 MiB, normal pages below (D-11-01), as through aclrtMalloc. Read-only still holds.
            let known = 0xFF | LOW_BAND_WIDTH | HIGH_BAND_WIDTH | USER_SPACE_READONLY;
            let base = policy & 0xFF;
            let (class, base) = if policy & !known == 0 && base <= HUGE1G_ONLY_P2P {
                // CAST: base <= 7.
                (PolicyClass::Base(base as u8), base)
            } else {
                (PolicyClass::Default, u32::MAX)
            };
            let usable_bytes = round32(size).ok_or(overflow)?;
            let (plan, mut attrs) = base_plan(base, size);
            if policy & USER_SPACE_READONLY != 0 {
                attrs |= MemAttr::READONLY;
            }
            Ok(Request { usable_bytes, plan, attrs, class })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(api: Api, soc: SocProfile, size: u64, policy: u32) -> Request {
        request(api, soc, size, policy).unwrap()
    }

    #[test]
    fn malloc_rounding_per_soc() {
        let r = |soc, size, pol| req(Api::Malloc, soc, size, pol).usable_bytes;
        assert_eq!(r(SocProfile::A2, 1, 0), 64);
        assert_eq!(r(SocProfile::A2, 32, 0), 64);
        assert_eq!(r(SocProfile::A2, 33, 0), 96);
        assert_eq!(r(SocProfile::A3, 33, 0), 96);
        assert_eq!(r(SocProfile::Ascend950, 1, 0), 32);
        assert_eq!(r(SocProfile::Ascend950, 32, 0), 32);
        assert_eq!(r(SocProfile::Ascend950, 33, 0), 64);
        assert_eq!(r(SocProfile::A2, 33, HUGE1G_ONLY), 64, "1 GiB policies get no padding");
        assert_eq!(r(SocProfile::A2, 33, HUGE1G_ONLY_P2P), 64);
        assert_eq!(req(Api::Align32, SocProfile::A2, 33, 0).usable_bytes, 64);
        assert_eq!(req(Api::Align32, SocProfile::A2, 32, 0).usable_bytes, 32);
        assert_eq!(req(Api::Cached, SocProfile::A2, 32, 0).usable_bytes, 64);
        assert_eq!(req(Api::WithCfg, SocProfile::A2, 33, 0).usable_bytes, 64);
        assert_eq!(
            request(Api::Malloc, SocProfile::A2, 0, 0),
            Err(PolicyError("size must be greater than 0"))
        );
        assert!(request(Api::Malloc, SocProfile::A2, u64::MAX, 0).is_err());
        assert!(request(Api::Malloc, SocProfile::A2, u64::MAX - 40, 0).is_err());
        assert!(request(Api::Align32, SocProfile::A2, u64::MAX - 20, 0).is_err());
    }

    #[test]
    fn policies_choose_pages() {
        let plan = |size, pol| req(Api::Malloc, SocProfile::A2, size, pol).plan;
        assert_eq!(plan(MIB, HUGE_FIRST), PagePlan::NormalOnly, "up to 1 MiB as asked: normal pages");
        assert_eq!(plan(MIB + 1, HUGE_FIRST), PagePlan::HugeFirst);
        assert_eq!(plan(MIB + 1, HUGE_FIRST_P2P), PagePlan::HugeFirst);
        assert_eq!(plan(100, HUGE_ONLY), PagePlan::HugeOnly);
        assert_eq!(plan(8 * MIB, NORMAL_ONLY), PagePlan::NormalOnly);
        assert_eq!(plan(8 * MIB, HUGE1G_ONLY), PagePlan::Giant);
        assert_eq!(plan(2 * MIB, 0x1000), PagePlan::HugeFirst, "a flag through aclrtMalloc is the default");
        assert_eq!(plan(2 * MIB - 1, 99), PagePlan::NormalOnly);
        assert_eq!(req(Api::Malloc, SocProfile::A2, 10, 99).class, PolicyClass::Default);
        assert!(req(Api::Malloc, SocProfile::A2, 10, HUGE_ONLY_P2P).attrs.contains(MemAttr::P2P));
        assert!(!req(Api::Malloc, SocProfile::A2, 10, HUGE_ONLY).attrs.contains(MemAttr::P2P));
    }

    #[test]
    fn cached_accepts_four_policies() {
        for p in [HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY, HUGE1G_ONLY] {
            assert!(request(Api::Cached, SocProfile::A2, 64, p).is_ok(), "{p}");
        }
        for p in [HUGE_FIRST_P2P, HUGE_ONLY_P2P, NORMAL_ONLY_P2P, HUGE1G_ONLY_P2P, 0x1000] {
            assert!(request(Api::Cached, SocProfile::A2, 64, p).is_err(), "{p}");
        }
    }

    #[test]
    fn with_cfg_groups() {
        let r =
            req(Api::WithCfg, SocProfile::A2, 4 * MIB, HIGH_BAND_WIDTH | USER_SPACE_READONLY | HUGE_FIRST);
        assert_eq!(r.plan, PagePlan::HugeFirst);
        assert!(r.attrs.contains(MemAttr::READONLY));
        assert_eq!(
            req(Api::WithCfg, SocProfile::A2, 64, LOW_BAND_WIDTH | NORMAL_ONLY_P2P).plan,
            PagePlan::NormalOnly
        );
        assert!(request(Api::WithCfg, SocProfile::A2, 64, LOW_BAND_WIDTH | HIGH_BAND_WIDTH).is_err());
        // Outside the enum: the default policy (D-11-01), read-only kept.
        for pol in [8, 0x42, 0x200, 1 << 30] {
            let r = req(Api::WithCfg, SocProfile::A2, 64, pol);
            assert_eq!(
                (r.plan, r.class, r.usable_bytes),
                (PagePlan::NormalOnly, PolicyClass::Default, 64),
                "{pol:#x}"
            );
            assert_eq!(req(Api::WithCfg, SocProfile::A2, 2 * MIB, pol).plan, PagePlan::HugeFirst, "{pol:#x}");
        }
        assert!(req(Api::WithCfg, SocProfile::A2, 64, USER_SPACE_READONLY | 9)
            .attrs
            .contains(MemAttr::READONLY));
    }
}
