//! What the runtime remembers of kernel functions and binaries beyond the backend's tables:
//! each function's binary and name (`aclrtFunctionGetBinary`, `aclrtGetFunctionName`, the
//! kernel name of a failed launch), each binary's load kind, and the binary descriptors of
//! `aclrtCreateBinary`.
//!
//! This module owns those tables only; loading, lookups and launches are the backend's. The
//! tables are touched when a binary is loaded or a function looked up, never by a launch.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// A function handle's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FuncMeta {
    /// The binary handle it came from (tagged, as the caller holds it).
    pub(crate) binary: u64,
    /// The kernel's name.
    pub(crate) name: String,
    /// Registered with `aclrtRegisterCpuFunc` (an AI CPU kernel).
    pub(crate) cpu: bool,
}

/// A binary handle's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BinMeta {
    /// Loaded with `cpuKernelMode` 2: kernels come from `aclrtRegisterCpuFunc` only.
    pub(crate) cpu_mode: bool,
}

/// An `aclrtCreateBinary` descriptor: the caller's bytes, kept by address until
/// `aclrtBinaryLoad` reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BinaryDesc {
    /// Address of the bytes.
    pub(crate) data: u64,
    /// Their length.
    pub(crate) len: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub(crate) functions: BTreeMap<u64, FuncMeta>,
    pub(crate) binaries: BTreeMap<u64, BinMeta>,
    pub(crate) descs: BTreeMap<u64, BinaryDesc>,
    next_desc: u64,
}

impl Tables {
    /// Records a descriptor; its number (never 0).
    pub(crate) fn add_desc(&mut self, d: BinaryDesc) -> u64 {
        self.next_desc += 1;
        self.descs.insert(self.next_desc, d);
        self.next_desc
    }

    /// Forgets binary `bin` and its functions.
    pub(crate) fn forget_binary(&mut self, bin: u64) {
        self.binaries.remove(&bin);
        self.functions.retain(|_, f| f.binary != bin);
    }
}

/// The process's tables (a poisoned lock is taken over: every change is one insert or remove).
pub(crate) fn tables() -> MutexGuard<'static, Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    crate::sync::relock(T.get_or_init(Mutex::default))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_a_binary_forgets_its_functions_only() {
        let mut t = Tables::default();
        t.binaries.insert(1, BinMeta::default());
        t.binaries.insert(2, BinMeta { cpu_mode: true });
        t.functions.insert(10, FuncMeta { binary: 1, name: "a".into(), cpu: false });
        t.functions.insert(11, FuncMeta { binary: 2, name: "b".into(), cpu: true });
        t.forget_binary(1);
        assert!(!t.functions.contains_key(&10));
        assert_eq!(t.functions[&11].name, "b");
        assert_ne!(t.add_desc(BinaryDesc { data: 1, len: 2 }), t.add_desc(BinaryDesc { data: 1, len: 2 }));
    }
}
