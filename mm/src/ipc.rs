//! IPC export tables: named shares of physical memory, their pid whitelists and import counts.
//!
//! This module owns the rules of sharing device memory between processes, as the device's
//! driver keeps them: a share has a name (an IPC key of up to 64 characters, or a shareable
//! handle), one exporting process, a whitelist of process ids allowed to import it (or the
//! "no whitelist" attribute), and a count of imports per process. It must not map anything or
//! decide which frames are shared: a share carries the frames ([`PhysRun`]s) and allocation ids
//! its owner put in, and hands them to importers.
//!
//! # Rules
//!
//! - Names are unique; the same memory (same allocations and runs) may be exported by one
//!   process only once ("strictly 1:1 within a process").
//! - Only the exporter sets the whitelist or destroys the share; a share exported without a
//!   whitelist refuses whitelist changes (the driver makes the two mutually exclusive).
//! - An importer must not be the exporter (export and import in one process are unsupported),
//!   and must be on the whitelist unless the share has none.
//! - Destroying a share does not touch what importers already imported; it only stops new
//!   imports. A dead process's shares are destroyed and its import counts dropped ([`ExportTable::reap`]).
//!
//! The table also has a compact byte encoding ([`ExportTable::encode`]) so that a backend can
//! keep it in memory shared by several processes.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use hal::{PageSize, ShareName, SHARE_NAME_BYTES};

use crate::phys::PhysRun;

/// The length of the key buffer `aclrtIpcMemGetExportKey` fills: 64 characters and a NUL.
pub const KEY_BUFFER_BYTES: usize = SHARE_NAME_BYTES + 1;
/// The most process ids one share's whitelist holds (the driver's larger limit).
pub const MAX_WHITELIST: usize = 65_535;

/// Why an export-table operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpcError {
    /// No share has this name.
    NotFound,
    /// The caller is not the share's exporter.
    NotExporter,
    /// The importer is not on the whitelist.
    NotWhitelisted,
    /// The importer is the exporter.
    SameProcess,
    /// The name is taken, or this process already exported the same memory.
    AlreadyExported,
    /// The share was exported without a whitelist, so pids cannot be set.
    WhitelistDisabled,
    /// The whitelist would exceed [`MAX_WHITELIST`].
    TooManyPids,
    /// The caller holds no import of this share.
    NotImported,
    /// An encoded table is malformed.
    Corrupt,
}

/// One share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    /// Its name.
    pub name: ShareName,
    /// The exporting process.
    pub exporter: u32,
    /// The physical device whose memory it is.
    pub device: u32,
    /// The largest page size of the memory.
    pub page_size: PageSize,
    /// Bytes shared (the sum of `runs`).
    pub len_bytes: u64,
    /// The owner's allocation ids that hold the frames (each import takes a reference).
    pub allocs: Vec<u64>,
    /// The frames, in address order of the exported range.
    pub runs: Vec<PhysRun>,
    /// Exported with the "no whitelist" attribute.
    pub no_whitelist: bool,
    /// Process ids allowed to import, sorted, without duplicates.
    pub whitelist: Vec<u32>,
    /// Imports per process: `(pid, count)`, sorted by pid.
    pub imports: Vec<(u32, u32)>,
}

impl Share {
    /// A share with an empty whitelist and no imports.
    pub fn new(
        name: ShareName,
        exporter: u32,
        device: u32,
        page_size: PageSize,
        allocs: Vec<u64>,
        runs: Vec<PhysRun>,
    ) -> Self {
        let len_bytes = runs.iter().map(|r| r.len_bytes).sum();
        Self {
            name,
            exporter,
            device,
            page_size,
            len_bytes,
            allocs,
            runs,
            no_whitelist: false,
            whitelist: Vec::new(),
            imports: Vec::new(),
        }
    }

    /// Whether `pid` may import this share.
    pub fn admits(&self, pid: u32) -> bool {
        pid != self.exporter && (self.no_whitelist || self.whitelist.binary_search(&pid).is_ok())
    }

    /// How many imports `pid` holds.
    pub fn imports_of(&self, pid: u32) -> u32 {
        self.imports.iter().find(|&&(p, _)| p == pid).map_or(0, |&(_, n)| n)
    }
}

/// The shares of one machine, by name.
///
/// Plain data: every change takes `&mut self`; the owner serialises access (the software NPU
/// keeps it under its cross-process registry lock).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportTable {
    shares: BTreeMap<ShareName, Share>,
}

impl ExportTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of shares.
    pub fn len(&self) -> usize {
        self.shares.len()
    }

    /// Whether there are no shares.
    pub fn is_empty(&self) -> bool {
        self.shares.is_empty()
    }

    /// The share called `name`.
    pub fn get(&self, name: &ShareName) -> Option<&Share> {
        self.shares.get(name)
    }

    /// Every share.
    pub fn iter(&self) -> impl Iterator<Item = &Share> {
        self.shares.values()
    }

    /// Adds `share`.
    ///
    /// # Errors
    ///
    /// [`IpcError::AlreadyExported`] when the name is taken or its exporter already exported
    /// the same memory.
    pub fn export(&mut self, share: Share) -> Result<(), IpcError> {
        let same =
            |s: &Share| s.exporter == share.exporter && s.allocs == share.allocs && s.runs == share.runs;
        if self.shares.contains_key(&share.name) || self.shares.values().any(same) {
            return Err(IpcError::AlreadyExported);
        }
        self.shares.insert(share.name, share);
        Ok(())
    }

    fn owned_mut(&mut self, name: &ShareName, caller: u32) -> Result<&mut Share, IpcError> {
        let s = self.shares.get_mut(name).ok_or(IpcError::NotFound)?;
        if s.exporter != caller {
            return Err(IpcError::NotExporter);
        }
        Ok(s)
    }

    /// Adds `pids` to the whitelist of `name`, exported by `caller`.
    ///
    /// # Errors
    ///
    /// [`IpcError::NotFound`], [`IpcError::NotExporter`], [`IpcError::WhitelistDisabled`],
    /// [`IpcError::TooManyPids`]; nothing changes then.
    pub fn set_pids(&mut self, name: &ShareName, caller: u32, pids: &[u32]) -> Result<(), IpcError> {
        let s = self.owned_mut(name, caller)?;
        if s.no_whitelist {
            return Err(IpcError::WhitelistDisabled);
        }
        let mut list = s.whitelist.clone();
        list.extend_from_slice(pids);
        list.sort_unstable();
        list.dedup();
        if list.len() > MAX_WHITELIST {
            return Err(IpcError::TooManyPids);
        }
        s.whitelist = list;
        Ok(())
    }

    /// Gives `name` the "no whitelist" attribute: any other process may import it.
    ///
    /// # Errors
    ///
    /// [`IpcError::NotFound`], [`IpcError::NotExporter`]; [`IpcError::WhitelistDisabled`] when
    /// pids were already set (the two are exclusive).
    pub fn disable_whitelist(&mut self, name: &ShareName, caller: u32) -> Result<(), IpcError> {
        let s = self.owned_mut(name, caller)?;
        if !s.whitelist.is_empty() {
            return Err(IpcError::WhitelistDisabled);
        }
        s.no_whitelist = true;
        Ok(())
    }

    /// Counts one import of `name` by `importer` and returns the share.
    ///
    /// # Errors
    ///
    /// [`IpcError::NotFound`], [`IpcError::SameProcess`], [`IpcError::NotWhitelisted`].
    pub fn import(&mut self, name: &ShareName, importer: u32) -> Result<&Share, IpcError> {
        let s = self.shares.get_mut(name).ok_or(IpcError::NotFound)?;
        if s.exporter == importer {
            return Err(IpcError::SameProcess);
        }
        if !s.admits(importer) {
            return Err(IpcError::NotWhitelisted);
        }
        match s.imports.binary_search_by_key(&importer, |&(p, _)| p) {
            Ok(i) => s.imports[i].1 = s.imports[i].1.saturating_add(1),
            Err(i) => s.imports.insert(i, (importer, 1)),
        }
        Ok(s)
    }

    /// Drops one import of `name` by `importer`.
    ///
    /// # Errors
    ///
    /// [`IpcError::NotFound`] (the share is gone: destroyed or its exporter died),
    /// [`IpcError::NotImported`].
    pub fn close_import(&mut self, name: &ShareName, importer: u32) -> Result<(), IpcError> {
        let s = self.shares.get_mut(name).ok_or(IpcError::NotFound)?;
        let i = s.imports.binary_search_by_key(&importer, |&(p, _)| p).map_err(|_| IpcError::NotImported)?;
        s.imports[i].1 -= 1;
        if s.imports[i].1 == 0 {
            s.imports.remove(i);
        }
        Ok(())
    }

    /// Removes `name`, exported by `caller`, and returns it.
    ///
    /// # Errors
    ///
    /// [`IpcError::NotFound`], [`IpcError::NotExporter`].
    pub fn destroy(&mut self, name: &ShareName, caller: u32) -> Result<Share, IpcError> {
        self.owned_mut(name, caller)?;
        self.shares.remove(name).ok_or(IpcError::NotFound)
    }

    /// Forgets process `pid`: destroys its shares and drops its imports. Returns how many
    /// shares went.
    pub fn reap(&mut self, pid: u32) -> usize {
        let before = self.shares.len();
        self.shares.retain(|_, s| s.exporter != pid);
        for s in self.shares.values_mut() {
            s.imports.retain(|&(p, _)| p != pid);
        }
        before - self.shares.len()
    }

    /// Appends the table's encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer(out);
        w.u64(self.shares.len() as u64);
        for s in self.shares.values() {
            w.bytes(s.name.as_bytes());
            w.u32(s.exporter);
            w.u32(s.device);
            w.u32(s.page_size.shift());
            w.u32(u32::from(s.no_whitelist));
            w.u64(s.allocs.len() as u64);
            s.allocs.iter().for_each(|&a| w.u64(a));
            w.u64(s.runs.len() as u64);
            s.runs.iter().for_each(|r| {
                w.u64(r.offset);
                w.u64(r.len_bytes);
            });
            w.u64(s.whitelist.len() as u64);
            s.whitelist.iter().for_each(|&p| w.u32(p));
            w.u64(s.imports.len() as u64);
            s.imports.iter().for_each(|&(p, n)| {
                w.u32(p);
                w.u32(n);
            });
        }
    }

    /// Decodes a table from the front of `r`.
    ///
    /// # Errors
    ///
    /// [`IpcError::Corrupt`] for malformed bytes.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, IpcError> {
        let mut t = Self::new();
        for _ in 0..r.u64()? {
            let name = ShareName::try_new(r.bytes()?).ok_or(IpcError::Corrupt)?;
            let exporter = r.u32()?;
            let device = r.u32()?;
            let page_size = page_of_shift(r.u32()?)?;
            let no_whitelist = r.u32()? != 0;
            let allocs = (0..r.u64()?).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
            let runs = (0..r.u64()?)
                .map(|_| Ok(PhysRun { offset: r.u64()?, len_bytes: r.u64()? }))
                .collect::<Result<Vec<_>, IpcError>>()?;
            let whitelist = (0..r.u64()?).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
            let imports =
                (0..r.u64()?).map(|_| Ok((r.u32()?, r.u32()?))).collect::<Result<Vec<_>, IpcError>>()?;
            let mut s = Share::new(name, exporter, device, page_size, allocs, runs);
            s.no_whitelist = no_whitelist;
            s.whitelist = whitelist;
            s.imports = imports;
            t.shares.insert(name, s);
        }
        Ok(t)
    }
}

/// The page size whose log2 is `shift`.
///
/// # Errors
///
/// [`IpcError::Corrupt`] for any other number.
pub fn page_of_shift(shift: u32) -> Result<PageSize, IpcError> {
    [PageSize::Normal, PageSize::Huge, PageSize::Giant]
        .into_iter()
        .find(|p| p.shift() == shift)
        .ok_or(IpcError::Corrupt)
}

/// Appends little-endian numbers and length-prefixed bytes to a buffer.
#[derive(Debug)]
pub struct Writer<'a>(pub &'a mut Vec<u8>);

impl Writer<'_> {
    /// Appends a `u32`.
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    /// Appends a `u64`.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    /// Appends a length-prefixed byte string.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
}

/// Reads what a [`Writer`] wrote.
#[derive(Debug)]
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], IpcError> {
        if self.0.len() < n {
            return Err(IpcError::Corrupt);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    /// Reads a `u32`.
    ///
    /// # Errors
    ///
    /// [`IpcError::Corrupt`] past the end.
    pub fn u32(&mut self) -> Result<u32, IpcError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a `u64`.
    ///
    /// # Errors
    ///
    /// [`IpcError::Corrupt`] past the end.
    pub fn u64(&mut self) -> Result<u64, IpcError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Reads a length-prefixed byte string.
    ///
    /// # Errors
    ///
    /// [`IpcError::Corrupt`] past the end.
    pub fn bytes(&mut self) -> Result<&'a [u8], IpcError> {
        let n = usize::try_from(self.u64()?).map_err(|_| IpcError::Corrupt)?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn name(s: &str) -> ShareName {
        ShareName::try_new(s.as_bytes()).unwrap()
    }

    fn share(n: &str, exporter: u32) -> Share {
        Share::new(
            name(n),
            exporter,
            0,
            PageSize::Huge,
            vec![7],
            vec![PhysRun { offset: 0, len_bytes: 2 << 20 }],
        )
    }

    #[test]
    fn whitelist_gates_imports() {
        let mut t = ExportTable::new();
        t.export(share("k1", 100)).unwrap();
        assert_eq!(t.import(&name("k1"), 200).unwrap_err(), IpcError::NotWhitelisted);
        assert_eq!(t.set_pids(&name("k1"), 200, &[200]), Err(IpcError::NotExporter));
        t.set_pids(&name("k1"), 100, &[200, 200, 300]).unwrap();
        assert_eq!(t.get(&name("k1")).unwrap().whitelist, vec![200, 300]);
        assert_eq!(t.import(&name("k1"), 100).unwrap_err(), IpcError::SameProcess);
        assert_eq!(t.import(&name("k1"), 400).unwrap_err(), IpcError::NotWhitelisted);
        t.import(&name("k1"), 200).unwrap();
        t.import(&name("k1"), 200).unwrap();
        assert_eq!(t.get(&name("k1")).unwrap().imports_of(200), 2);
        assert_eq!(t.disable_whitelist(&name("k1"), 100), Err(IpcError::WhitelistDisabled));
    }

    #[test]
    fn no_whitelist_admits_everyone_but_the_exporter_and_refuses_pids() {
        let mut t = ExportTable::new();
        t.export(share("k", 1)).unwrap();
        t.disable_whitelist(&name("k"), 1).unwrap();
        assert_eq!(t.set_pids(&name("k"), 1, &[2]), Err(IpcError::WhitelistDisabled));
        assert!(t.import(&name("k"), 2).is_ok());
        assert_eq!(t.import(&name("k"), 1).unwrap_err(), IpcError::SameProcess);
    }

    #[test]
    fn one_export_per_memory_and_name() {
        let mut t = ExportTable::new();
        t.export(share("a", 1)).unwrap();
        assert_eq!(t.export(share("a", 2)), Err(IpcError::AlreadyExported));
        assert_eq!(t.export(share("b", 1)), Err(IpcError::AlreadyExported));
        t.export(share("b", 2)).unwrap();
    }

    #[test]
    fn import_counts_close_and_destroy() {
        let mut t = ExportTable::new();
        t.export(share("k", 1)).unwrap();
        t.set_pids(&name("k"), 1, &[2]).unwrap();
        for _ in 0..5 {
            t.import(&name("k"), 2).unwrap();
        }
        t.close_import(&name("k"), 2).unwrap();
        assert_eq!(t.get(&name("k")).unwrap().imports_of(2), 4);
        assert_eq!(t.close_import(&name("k"), 3), Err(IpcError::NotImported));
        assert_eq!(t.destroy(&name("k"), 2).unwrap_err(), IpcError::NotExporter);
        t.destroy(&name("k"), 1).unwrap();
        assert_eq!(t.import(&name("k"), 2).unwrap_err(), IpcError::NotFound);
        assert_eq!(t.close_import(&name("k"), 2), Err(IpcError::NotFound));
    }

    #[test]
    fn reap_drops_a_dead_process() {
        let mut t = ExportTable::new();
        t.export(share("a", 1)).unwrap();
        t.export(share("b", 2)).unwrap();
        t.set_pids(&name("b"), 2, &[1]).unwrap();
        t.import(&name("b"), 1).unwrap();
        assert_eq!(t.reap(1), 1);
        assert!(t.get(&name("a")).is_none());
        assert_eq!(t.get(&name("b")).unwrap().imports_of(1), 0);
    }

    #[test]
    fn encoding_round_trips() {
        let mut t = ExportTable::new();
        t.export(share("a", 1)).unwrap();
        t.export(share("b", 2)).unwrap();
        t.set_pids(&name("a"), 1, &[5, 9]).unwrap();
        t.disable_whitelist(&name("b"), 2).unwrap();
        t.import(&name("a"), 9).unwrap();
        let mut buf = Vec::new();
        t.encode(&mut buf);
        let back = ExportTable::decode(&mut Reader(&buf)).unwrap();
        assert_eq!(back, t);
        assert_eq!(ExportTable::decode(&mut Reader(&buf[..buf.len() - 1])), Err(IpcError::Corrupt));
    }

    #[test]
    fn names_are_checked() {
        assert!(ShareName::try_new(b"").is_none());
        assert!(ShareName::try_new(&[b'a'; 65]).is_none());
        assert!(ShareName::try_new(b"has space").is_none());
        assert_eq!(ShareName::try_new(&[b'a'; 64]).unwrap().as_bytes().len(), 64);
    }
}
