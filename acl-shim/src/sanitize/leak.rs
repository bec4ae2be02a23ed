//! `ACLRS_SANITIZE=leak`: at `aclrtResetDevice`, `aclrtResetDeviceForce` and `aclFinalize`,
//! every allocation and mapping of the device still live is reported (`leak`), with its
//! allocation site when memcheck recorded one; at `aclFinalize` also every `aclrtMallocHost`
//! allocation and `aclrtHostRegister` range still live.

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
        }
        self.memcheck_forget(d);
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
