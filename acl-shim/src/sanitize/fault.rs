//! Contained kernel faults: a sim kernel that touched unmapped or protected device VA failed
//! its launch with `ACL_ERROR_RT_AICORE_EXCEPTION`; the synchronisation that reports it names
//! the faulting address and the allocation it lies in or next to.
//!
//! Cold paths only: nothing here runs unless a synchronisation already failed with 507015.

use hal::layout::{device_of, driver_reserved_base, window_of, Window};
use hal_sim::fault::{take_any_kernel_fault, take_kernel_fault, KernelFault};

use crate::codes::ACL_ERROR_RT_AICORE_EXCEPTION;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::memory::Owner;

/// How far from an allocation an address still counts as next to it (a kernel running off the
/// end of a buffer faults at the first page nothing backs, which can be far from its end).
pub const NEAR_BYTES: u64 = 64 << 20;

/// Where an address lies relative to the device's memory, as a fault message says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nearby {
    /// The device whose window holds it.
    pub device: u32,
    /// The allocation (or pool segment, or mapping) in or next to it: base and size.
    pub base: u64,
    /// The region's size in bytes.
    pub size: u64,
    /// What the region is.
    pub what: &'static str,
}

impl Nearby {
    /// The address's offset from the region's base (negative before it).
    pub fn offset(&self, addr: u64) -> i128 {
        i128::from(addr) - i128::from(self.base)
    }

    /// Where `addr` lies relative to this region, with the region's figures.
    fn place(&self, addr: u64) -> String {
        let off = self.offset(addr);
        let place = if off >= 0 && off < i128::from(self.size) {
            format!("inside the {}", self.what)
        } else if off >= i128::from(self.size) {
            format!("{} bytes past the end of the {}", off - i128::from(self.size), self.what)
        } else {
            format!("{} bytes before the {}", -off, self.what)
        };
        format!(
            "{place} (device {}, base {:#x}, size {}, offset {off:#x})",
            self.device, self.base, self.size
        )
    }
}

impl Runtime {
    /// The allocation of the device window (or pool-window slice) `addr` lies in, or the
    /// nearest one within [`NEAR_BYTES`] (before it first: an overrun runs upwards).
    pub(crate) fn nearby_region(&self, addr: u64) -> Option<Nearby> {
        let d = device_of(addr)?;
        if d >= self.device_count() {
            return None;
        }
        // Lock order: `mem` alone (a cold path after a failure).
        let m = self.device(d).mem("the fault report").ok()?;
        let what = |o: Owner| match o {
            Owner::Allocation => "allocation",
            Owner::PoolSegment(_) => "pool segment",
            Owner::Mapping => "mapping",
        };
        if let Some(r) = m.map.find(addr) {
            return Some(Nearby { device: d, base: r.start, size: r.len, what: what(r.value) });
        }
        // Slab objects are not in the address map: the allocator's slot table knows them.
        if let Some(i) = m.alloc.as_ref().and_then(|a| a.find_slab(hal::DeviceAddr(addr))) {
            return Some(Nearby {
                device: d,
                base: i.base.as_u64(),
                size: i.usable_bytes,
                what: "allocation",
            });
        }
        // Every region the device knows: the address map's, and the slab objects the allocator
        // keeps out of it (a cold path: building the list is fine here).
        let slab_objects = m.alloc.as_ref().map(|a| a.segments()).unwrap_or_default();
        let regions = m.map.iter().map(|r| (r.start, r.len, what(r.value))).chain(
            slab_objects
                .iter()
                .filter(|seg| seg.is_slab)
                .flat_map(|seg| seg.blocks.iter().map(|&(base, len)| (base, len, "allocation"))),
        );
        let mut best: Option<(u64, Nearby)> = None;
        for (start, len, what) in regions {
            let end = start + len;
            let dist = if end <= addr { addr - end } else { (start - addr).saturating_add(NEAR_BYTES / 2) };
            if dist < NEAR_BYTES && best.as_ref().is_none_or(|(b, _)| dist < *b) {
                best = Some((dist, Nearby { device: d, base: start, size: len, what }));
            }
        }
        best.map(|(_, n)| n)
    }

    /// A readable account of device address `addr`: its device, and the allocation it lies in
    /// or next to (base, size, offset).
    pub(crate) fn describe_address(&self, addr: u64) -> String {
        match window_of(addr) {
            Window::Device(d) => match self.nearby_region(addr) {
                Some(n) => format!("device {d}, {}", n.place(addr)),
                None if self.in_quarantine(addr) => {
                    format!("device {d}, in freed memory the sanitizer's quarantine holds")
                }
                None if addr >= driver_reserved_base(d) => format!(
                    "device {d}, in the driver's part of its window (IPC imports; nothing is mapped there now: closed with aclrtIpcMemClose, or never opened)"
                ),
                None => format!("device {d}, in no live allocation (freed, or never allocated)"),
            },
            Window::Pool => {
                let d = device_of(addr).unwrap_or(0);
                match self.nearby_region(addr) {
                    Some(n) => format!("device {d}'s slice of the pool window, {}", n.place(addr)),
                    None => format!("device {d}'s slice of the pool window, in no live pool segment"),
                }
            }
            Window::PinnedHost => "the pinned-host window".to_owned(),
            Window::Unregistered => "host memory outside the runtime's windows".to_owned(),
        }
    }

    /// The message of a contained kernel fault.
    pub(crate) fn kernel_fault_text(&self, k: &KernelFault) -> String {
        format!(
            "kernel block {}/{} touched {} memory at {:#x} ({})",
            k.block,
            k.blocks,
            k.kind.as_str(),
            k.addr,
            self.describe_address(k.addr)
        )
    }

    /// Adds to a synchronisation's 507015 error what the kernel's fault was, when the backend
    /// kept one for queue `queue` of device `d` (`None`: any queue of the device, for a
    /// device-wide synchronisation). Other results pass unchanged.
    ///
    /// Under `ACLRS_SANITIZE=memcheck` it first checks the device's redzones (a
    /// synchronisation is where a write past the end of a buffer is found at the latest), and
    /// a fault memcheck can name (a guard or quarantined page) is also reported as a finding.
    pub(crate) fn explain_fault(&self, r: Result<()>, d: u32, queue: Option<u32>) -> Result<()> {
        let Err(e) = r else {
            self.memcheck_on_sync(d);
            return r;
        };
        if e.code() != ACL_ERROR_RT_AICORE_EXCEPTION {
            self.memcheck_on_sync(d);
            return Err(e);
        }
        let fault = match queue {
            Some(q) => take_kernel_fault(d, q),
            None => take_any_kernel_fault(d),
        };
        let Some(k) = fault else {
            self.memcheck_on_sync(d);
            return Err(e);
        };
        let mut text = self.kernel_fault_text(&k);
        if crate::sanitize::settings().any() {
            let finding = crate::sanitize::memcheck::classify(k.addr).unwrap_or_else(|| {
                let allocation = self.nearby_region(k.addr).map(|n| (n.base, n.size));
                crate::sanitize::report::Finding {
                    kind: "unmapped",
                    device: d,
                    address: k.addr,
                    allocation,
                    task: Some("kernel"),
                    detail: format!("a kernel touched unmapped memory ({})", self.describe_address(k.addr)),
                    ..Default::default()
                }
            });
            text = format!("{text}; sanitizer: {} ({})", finding.kind, finding.detail);
            if let Some((base, _)) = finding.allocation {
                // The overrun that reached the guard went through the redzone: one finding.
                crate::sanitize::memcheck::mark_reported(base);
            }
            crate::sanitize::report::emit(&finding);
        }
        self.memcheck_on_sync(d);
        Err(AclError::new(e.code(), format!("{}: {text}", e.message())))
    }
}
