//! `ACLRS_SANITIZE=leak`: at `aclrtResetDevice`, `aclrtResetDeviceForce` and `aclFinalize`,
//! everything of the device still live is reported (`leak`): every allocation and mapping
//! (with its allocation site when memcheck recorded one), every pool block
//! (`aclrtMemPoolMallocAsync` not freed), every physical handle (`aclrtMallocPhysical` or an
//! import, not freed), and every IPC export (`aclrtIpcMemGetExportKey` keys not closed,
//! `aclrtMemExportToShareableHandle` handles whose memory is still held); at `aclFinalize`
//! also every `aclrtMallocHost` allocation and `aclrtHostRegister` range still live.
//!
//! A physical handle or shareable handle has no address of its own: its finding's `address`
//! is 0 and its `detail` names the handle and its size.

use super::memcheck::owner_name;
use super::report::{emit, Finding};
use super::settings;
use crate::runtime::Runtime;
use crate::state::memory::Owner;

impl Runtime {
    /// The sanitizer's part of device `d`'s teardown by `api`: the leak report, then memcheck
    /// forgets the device. Call it before the device's memory is released.
    pub(crate) fn sanitize_teardown(&self, api: &str, d: u32) {
        let s = settings();
        if !s.any() {
            return;
        }
        if s.leak {
            let live: Vec<(u64, u64, Owner)> = match self.device(d).mem(api) {
                Ok(m) => m
                    .map
                    .iter()
                    .filter(|r| !matches!(r.value, Owner::PoolSegment(_)))
                    .map(|r| (r.start, r.len, r.value))
                    .collect(),
                Err(_) => Vec::new(),
            };
            for (base, len, owner) in live {
                let (size, site) = self.memcheck_info(base).unwrap_or((len, Vec::new()));
                emit(&Finding {
                    kind: "leak",
                    device: d,
                    address: base,
                    allocation: Some((base, size)),
                    alloc_site: site,
                    detail: format!("{} of {size} bytes still live at {api}", owner_name(owner)),
                    ..Finding::default()
                });
            }
            self.leak_pool_blocks(api, d);
            self.leak_vmm(api, d);
        }
        self.memcheck_forget(d);
    }

    /// Reports the busy blocks of device `d`'s pools (each pool locked alone, no other lock).
    fn leak_pool_blocks(&self, api: &str, d: u32) {
        for p in self.device(d).pools.table.live() {
            let handle = p.handle();
            let Ok(inner) = crate::state::pool::lock(&p, api, handle) else { continue };
            let busy: Vec<(u64, u64)> = inner
                .inner
                .pool
                .regions()
                .iter()
                .flat_map(|r| r.extents.iter())
                .filter(|e| e.2 == mm::pool::ExtentState::Busy)
                .map(|e| (e.0, e.1))
                .collect();
            drop(inner);
            for (base, len) in busy {
                // Memcheck knows the requested size (the block is padded for its guard).
                let (size, site) = self.memcheck_info(base).unwrap_or((len, Vec::new()));
                emit(&Finding {
                    kind: "leak",
                    device: d,
                    address: base,
                    allocation: Some((base, size)),
                    alloc_site: site,
                    detail: format!(
                        "pool block of {size} bytes (memPool {handle:#x}, aclrtMemPoolMallocAsync not freed) still live at {api}"
                    ),
                    ..Finding::default()
                });
            }
        }
    }

    /// Reports device `d`'s live physical handles and its IPC exports (keys and shareable
    /// handles), from its VMM tables (`vmm` locked alone, released before reporting).
    fn leak_vmm(&self, api: &str, d: u32) {
        let Ok(x) = self.device(d).vmm(api) else { return };
        let handles: Vec<(u64, u64)> =
            x.recs.keys().filter_map(|&h| x.handles.get(h).map(|r| (h, r.len_bytes))).collect();
        let shared: Vec<(u64, hal::ShareName)> = x.exported_handles.iter().map(|(&h, &n)| (h, n)).collect();
        let keys: Vec<(hal::ShareName, u64)> = x.exported_keys.iter().map(|(&n, &p)| (n, p)).collect();
        drop(x);
        for (h, len) in handles {
            emit(&Finding {
                kind: "leak",
                device: d,
                detail: format!(
                    "physical handle {h:#x} of {len} bytes (aclrtMallocPhysical not freed) still live at {api}"
                ),
                ..Finding::default()
            });
        }
        let sharing = self.backend.sharing();
        for (h, name) in shared {
            emit(&Finding {
                kind: "leak",
                device: d,
                detail: format!(
                    "shareable handle {} of physical handle {h:#x} (aclrtMemExportToShareableHandle) still exported at {api}",
                    name.as_str()
                ),
                ..Finding::default()
            });
        }
        for (name, ptr) in keys {
            let size = sharing.share_info(&name).map_or(0, |i| i.len_bytes);
            emit(&Finding {
                kind: "leak",
                device: d,
                address: ptr,
                allocation: Some((ptr, size)),
                detail: format!(
                    "IPC export key '{}' of {size} bytes (aclrtIpcMemGetExportKey, not closed by aclrtIpcMemClose) still exported at {api}",
                    name.as_str()
                ),
                ..Finding::default()
            });
        }
    }

    /// The sanitizer's part of `aclFinalize` for host memory: pinned allocations and host
    /// registrations still live are leaks (device 0 names the host side in the finding).
    pub(crate) fn sanitize_host_leaks(&self) {
        if !settings().leak {
            return;
        }
        let live: Vec<(u64, u64, &'static str)> = match self.host("aclFinalize") {
            Ok(h) => h
                .heap
                .iter()
                .map(|a| (a.range.start().as_u64(), a.usable_bytes, "aclrtMallocHost allocation"))
                .chain(h.registered.iter().map(|(&b, &len)| (b, len, "aclrtHostRegister range")))
                .collect(),
            Err(_) => Vec::new(),
        };
        for (base, size, what) in live {
            emit(&Finding {
                kind: "leak",
                device: 0,
                address: base,
                allocation: Some((base, size)),
                detail: format!("{what} of {size} bytes still live at aclFinalize (host memory)"),
                ..Finding::default()
            });
        }
    }
}
