//! `ACLRS_SANITIZE=memcheck`: every `aclrtMalloc` allocation gets checked redzone bytes after
//! its requested size, up to its last 4 KiB page, and a guard page (inaccessible) after that;
//! freed memory stays inaccessible in a bounded quarantine before it is really freed.
//!
//! A kernel touching a guard or quarantined page faults (contained: [`super::fault`]) and is
//! reported at once (`out-of-bounds`, `use-after-free`); a write into the redzone is reported
//! at the next synchronisation or at the free of that buffer. An allocation under memcheck is
//! a block of its own (at least 68 KiB of VA: never a slab object), so that its pages are its
//! own. A pool block (`aclrtMemPoolMallocAsync`) is asked of its pool two pages larger than
//! its requested size rounded to pages, so that the page after its end can be its guard (the
//! pool's 512-byte alignment may put its start anywhere in a page); its redzone is checked at
//! each synchronisation and at its `aclrtMemPoolFreeAsync`, which lifts its guard (the pool
//! hands its memory out again at once, so pool blocks have no quarantine). Only a block made
//! of fresh memory or memory whose free completed is watched (`memcheck_pool_track`, on
//! [`Runtime`]). The padding counts in the pool's used and reserved bytes.
//!
//! The table is one process-wide mutex, taken only when memcheck is on; off, each hook is one
//! load of the settings.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use hal::{DeviceAddr, DeviceId};

use super::report::{emit, host_site, Finding};
use super::settings;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::memory::Owner;

/// The page granularity of guards and redzones.
pub const PAGE: u64 = 4096;
/// The byte the redzone is filled with.
pub const REDZONE_BYTE: u8 = 0xFA;

/// One allocation memcheck watches.
#[derive(Clone, Debug)]
struct Tracked {
    device: u32,
    /// Bytes the program asked for.
    size: u64,
    /// Bytes the block has (its usable size in the address map).
    usable: u64,
    alloc_site: Vec<String>,
    /// `Some(site)` once freed (in the quarantine).
    free_site: Option<Vec<String>>,
    /// Whether its redzone was already reported.
    reported: bool,
    /// A pool block (freed by [`Runtime::memcheck_pool_free`], never quarantined).
    pool: bool,
}

impl Tracked {
    /// The end of the user pages (where the guard page starts): the first page boundary at or
    /// after the requested end, and at least one page after `base`.
    fn guard(&self, base: u64) -> u64 {
        ((base + self.size).div_ceil(PAGE) * PAGE).max(base + PAGE)
    }
}

#[derive(Debug, Default)]
struct Table {
    by_base: BTreeMap<u64, Tracked>,
    /// Quarantined bases, oldest first, and their bytes.
    quarantine: VecDeque<u64>,
    quarantined_bytes: u64,
}

fn table() -> MutexGuard<'static, Table> {
    static T: Mutex<Table> =
        Mutex::new(Table { by_base: BTreeMap::new(), quarantine: VecDeque::new(), quarantined_bytes: 0 });
    T.lock().unwrap_or_else(|p| p.into_inner())
}

fn round_up(v: u64) -> u64 {
    v.div_ceil(PAGE).max(1) * PAGE
}

/// The size to allocate for a request of `size` bytes under memcheck (`None` when memcheck is
/// off): the user pages, a guard page, and at least enough to be a block of its own.
pub fn padded_size(size: u64) -> Option<u64> {
    if !settings().memcheck {
        return None;
    }
    Some((round_up(size) + PAGE).max(mm::slab::SLAB_MAX_BYTES + PAGE))
}

/// The size to ask a pool for, for a block of `size` bytes: `size` itself when memcheck is off,
/// else its pages and two more (the block may start anywhere in a page: room for the redzone
/// and a whole guard page after it).
pub fn pool_padded_size(size: u64) -> u64 {
    if !settings().memcheck {
        return size;
    }
    size.div_ceil(PAGE).saturating_mul(PAGE).saturating_add(2 * PAGE)
}

/// What memcheck knows about an address: the finding a fault there is.
pub(crate) fn classify(addr: u64) -> Option<Finding> {
    if !settings().memcheck {
        return None;
    }
    let t = table();
    let (&base, a) = t.by_base.range(..=addr).next_back()?;
    if addr >= base + a.usable.max(round_up(a.size) + PAGE) {
        return None;
    }
    let (kind, detail) = match &a.free_site {
        Some(_) => (
            "use-after-free",
            format!("a kernel touched freed memory, {} bytes into a freed allocation", addr - base),
        ),
        None if addr >= base + a.size => (
            "out-of-bounds",
            format!("a kernel touched {} bytes past the end of the allocation", addr - base - a.size),
        ),
        None => return None,
    };
    Some(Finding {
        kind,
        device: a.device,
        address: addr,
        allocation: Some((base, a.size)),
        task: Some("kernel"),
        alloc_site: a.alloc_site.clone(),
        free_site: a.free_site.clone().unwrap_or_default(),
        detail,
        ..Finding::default()
    })
}

/// Notes that the allocation at `base` was reported (its redzone is not reported again).
pub(crate) fn mark_reported(base: u64) {
    if let Some(a) = table().by_base.get_mut(&base) {
        a.reported = true;
    }
}

impl Runtime {
    /// Starts watching the allocation `p` of `size` requested bytes on device `d` (allocated
    /// with [`padded_size`]): fills its redzone and hides its guard page.
    pub(crate) fn memcheck_track(&self, d: u32, p: u64, size: u64) {
        let drv = self.backend().driver();
        let guard = p + round_up(size);
        if guard > p + size {
            let _ = drv.set_device(DeviceId(d), DeviceAddr(p + size), REDZONE_BYTE, guard - p - size);
        }
        if let Some(sim) = self.backend().device_sim() {
            let _ = sim.set_hidden(DeviceId(d), guard, PAGE, true);
        }
        let usable = self.address_range("memcheck", p).map_or(guard + PAGE - p, |(_, len)| len);
        let t = Tracked {
            device: d,
            size,
            usable,
            alloc_site: host_site(),
            free_site: None,
            reported: false,
            pool: false,
        };
        table().by_base.insert(p, t);
    }

    /// Starts watching the pool block `g` of `size` requested bytes on device `d` (allocated
    /// with [`pool_padded_size`]; nothing when memcheck is off): fills its redzone and hides
    /// its guard page, now, on the host. Only a block no earlier work can still touch is
    /// watched: fresh memory, or memory whose free completed. A block reused from a free still
    /// pending (same stream, event or internal dependency) is not, as a kernel queued before
    /// that free may legitimately be writing it while this call runs.
    pub(crate) fn memcheck_pool_track(&self, d: u32, g: &mm::pool::Grant, size: u64) {
        use mm::pool::Reuse;
        if !settings().memcheck || !matches!(g.how, Reuse::Free | Reuse::NewRegion | Reuse::Opportunistic) {
            return;
        }
        let p = g.addr.as_u64();
        let t = Tracked {
            device: d,
            size,
            usable: pool_padded_size(size),
            alloc_site: host_site(),
            free_site: None,
            reported: false,
            pool: true,
        };
        let guard = t.guard(p);
        let drv = self.backend().driver();
        if guard > p + size {
            let _ = drv.set_device(DeviceId(d), DeviceAddr(p + size), REDZONE_BYTE, guard - p - size);
        }
        if let Some(sim) = self.backend().device_sim() {
            let _ = sim.set_hidden(DeviceId(d), guard, PAGE, true);
        }
        table().by_base.insert(p, t);
    }

    /// `aclrtMemPoolFreeAsync` of the pool block `ptr` on device `d` (nothing when memcheck is
    /// off or does not watch it): checks its redzone, lifts its guard and forgets it.
    pub(crate) fn memcheck_pool_free(&self, d: u32, ptr: u64) {
        if !settings().memcheck {
            return;
        }
        let Some(a) = table().by_base.remove(&ptr) else { return };
        if !a.pool {
            table().by_base.insert(ptr, a);
            return;
        }
        if !a.reported {
            if let Some(at) = self.redzone_damage(ptr, &a) {
                self.report_redzone(ptr, &a, at, "at its aclrtMemPoolFreeAsync");
            }
        }
        if let Some(sim) = self.backend().device_sim() {
            let _ = sim.set_hidden(DeviceId(d), a.guard(ptr), PAGE, false);
        }
    }

    /// The redzone bytes of `a` at `base` that changed: the first changed address.
    fn redzone_damage(&self, base: u64, a: &Tracked) -> Option<u64> {
        let guard = a.guard(base);
        let len = usize::try_from(guard - base - a.size).ok()?;
        if len == 0 {
            return None;
        }
        let mut buf = vec![0u8; len];
        self.backend()
            .driver()
            .copy_from_device(DeviceId(a.device), &mut buf, DeviceAddr(base + a.size))
            .ok()?;
        let i = buf.iter().position(|&b| b != REDZONE_BYTE)?;
        // CAST: an index below the redzone's length.
        Some(base + a.size + i as u64)
    }

    fn report_redzone(&self, base: u64, a: &Tracked, at: u64, when: &str) {
        emit(&Finding {
            kind: "out-of-bounds",
            device: a.device,
            address: at,
            allocation: Some((base, a.size)),
            alloc_site: a.alloc_site.clone(),
            detail: format!(
                "byte {} of the {}-byte allocation was written: {} bytes past its end, in its redzone (found {when})",
                at - base,
                a.size,
                at - base - a.size
            ),
            ..Finding::default()
        });
    }

    /// Checks the redzones of device `d`'s live allocations (at a synchronisation).
    pub(crate) fn memcheck_on_sync(&self, d: u32) {
        if !settings().memcheck {
            return;
        }
        let live: Vec<(u64, Tracked)> = table()
            .by_base
            .iter()
            .filter(|(_, a)| a.device == d && a.free_site.is_none() && !a.reported)
            .map(|(&b, a)| (b, a.clone()))
            .collect();
        for (base, a) in live {
            if let Some(at) = self.redzone_damage(base, &a) {
                self.report_redzone(base, &a, at, "at a synchronisation");
                if let Some(t) = table().by_base.get_mut(&base) {
                    t.reported = true;
                }
            }
        }
    }

    /// `aclrtFree` of `ptr` on device `d` under memcheck: checks its redzone, hides it and puts
    /// it in the quarantine (really freeing the oldest beyond `ACLRS_SANITIZE_QUARANTINE`).
    /// `None` when memcheck does not watch `ptr`.
    pub(crate) fn memcheck_free(&self, api: &str, d: u32, ptr: u64) -> Option<Result<()>> {
        if !settings().memcheck {
            return None;
        }
        let a = table().by_base.get(&ptr).filter(|a| !a.pool).cloned()?;
        if a.free_site.is_some() {
            return Some(Err(AclError::rt_invalid(format!(
                "{api}: devPtr {ptr:#x} was already freed (double free)"
            ))));
        }
        if !a.reported {
            if let Some(at) = self.redzone_damage(ptr, &a) {
                self.report_redzone(ptr, &a, at, "at its free");
            }
        }
        // Out of the address map: copies, sets and frees of it are refused from now on.
        match self.device(d).mem(api) {
            Ok(mut m) => {
                m.map.remove(ptr);
            }
            Err(e) => return Some(Err(e)),
        }
        if let Some(sim) = self.backend().device_sim() {
            let _ = sim.set_hidden(DeviceId(d), ptr, a.guard(ptr) - ptr, true);
        }
        let evict = {
            let mut t = table();
            if let Some(e) = t.by_base.get_mut(&ptr) {
                e.free_site = Some(host_site());
            }
            t.quarantine.push_back(ptr);
            t.quarantined_bytes += a.usable;
            let mut out = Vec::new();
            while t.quarantined_bytes > settings().quarantine_bytes {
                let Some(b) = t.quarantine.pop_front() else { break };
                if let Some(e) = t.by_base.remove(&b) {
                    t.quarantined_bytes -= e.usable;
                    out.push((b, e.device));
                }
            }
            out
        };
        for (b, dev) in evict {
            // Unmapping takes hidden pages too: the block goes as any other.
            let _ = self.free_device_now(api, dev, b);
        }
        Some(Ok(()))
    }

    /// The requested size and allocation site memcheck knows for the allocation at `base`.
    pub(crate) fn memcheck_info(&self, base: u64) -> Option<(u64, Vec<String>)> {
        if !settings().memcheck {
            return None;
        }
        table().by_base.get(&base).filter(|a| a.free_site.is_none()).map(|a| (a.size, a.alloc_site.clone()))
    }

    /// Forgets what memcheck watches on device `d` (its teardown frees everything).
    pub(crate) fn memcheck_forget(&self, d: u32) {
        if !settings().memcheck {
            return;
        }
        let mut t = table();
        let gone: Vec<u64> = t.by_base.iter().filter(|(_, a)| a.device == d).map(|(&b, _)| b).collect();
        for b in gone {
            if let Some(a) = t.by_base.remove(&b) {
                if a.free_site.is_some() {
                    t.quarantined_bytes -= a.usable;
                }
            }
        }
        let by_base = std::mem::take(&mut t.by_base);
        t.quarantine.retain(|b| by_base.contains_key(b));
        t.by_base = by_base;
    }

    /// Whether `addr` lies in memory the quarantine holds (for messages).
    pub(crate) fn in_quarantine(&self, addr: u64) -> bool {
        settings().memcheck
            && table()
                .by_base
                .range(..=addr)
                .next_back()
                .is_some_and(|(&b, a)| a.free_site.is_some() && addr < b + a.usable)
    }
}

/// The address-map owner kinds a leak report names.
pub(crate) fn owner_name(o: Owner) -> &'static str {
    match o {
        Owner::Allocation => "allocation",
        Owner::PoolSegment(_) => "pool segment",
        Owner::Mapping => "mapping (aclrtMapMem or an IPC import)",
    }
}
