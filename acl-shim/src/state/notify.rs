//! Notifies and IPC events of one device (fact sheet §3, §6): the handle table of its notifies
//! and the shared words behind its IPC events.
//!
//! Safe Rust. A notify is a 64-bit word of device memory: a record is a stream task that writes
//! 1 there, a wait-and-reset a task that holds its stream until the word is 1 and then writes
//! 0. An exported notify's word is the first word of its own page-aligned allocation, shared
//! with IPC memory's key, whitelist and import machinery (so the whitelist is enforced exactly
//! as for IPC memory, against the importer's real pid); an importer maps that allocation and
//! records into it. An IPC event is two words of such an allocation (see
//! `crate::api::ipc_event`). This module owns the objects and their tables; the runtime's
//! calls (`crate::api::notify`, `crate::api::ipc_event`) allocate, export and submit.
//!
//! # Locking
//!
//! A notify's `inner` mutex and `ipc_events` are leaves; neither is held across a backend call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use hal::ShareName;

use crate::handles::{HandleTable, Kind};

/// How a notify's word is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Share {
    /// Not shared: the word is a small allocation of this process.
    Local,
    /// Exported under this key (the word starts its own allocation).
    Exported(ShareName),
    /// Imported from another process under this key (the word is the mapped share).
    Imported(ShareName),
}

/// Where a notify's word is and how it is shared (changes once, at its export).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word {
    /// The device address of the 64-bit word.
    pub(crate) addr: u64,
    /// How it is shared.
    pub(crate) share: Share,
}

/// One live notify.
#[derive(Debug)]
pub(crate) struct NotifyObj {
    /// Its device.
    pub(crate) device: u32,
    /// The id `aclrtGetNotifyId` reports.
    pub(crate) id: u32,
    /// Its word. A leaf lock.
    word: Mutex<Word>,
}

impl NotifyObj {
    /// The word as it is now.
    pub(crate) fn word(&self) -> Word {
        *crate::sync::relock(&self.word)
    }

    /// Replaces the word (its export), if it is still `old`; `false` when another call
    /// changed it first.
    pub(crate) fn replace_word(&self, old: Word, new: Word) -> bool {
        // Lock order: the word alone. A whole replacement.
        let mut w = crate::sync::relock(&self.word);
        if w.addr != old.addr || w.share != old.share {
            return false;
        }
        *w = new;
        true
    }
}

/// One IPC event as this process holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IpcEvent {
    /// The device address of its two words (records issued, records completed).
    pub(crate) addr: u64,
    /// Its shareable handle (16 hex digits).
    pub(crate) name: ShareName,
    /// How this handle holds the words.
    pub(crate) role: Role,
}

/// How one event handle holds an IPC event's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// It created them (and frees them and the share at its destroy).
    Owner,
    /// It mapped another process's share (and closes the mapping at its destroy).
    Imported,
    /// It was opened in the creating process itself (and shares the owner's words).
    Alias,
}

/// One count notify (Ascend 950): a 32-bit count that records change and waits compare,
/// held on the host (its records, waits and resets run as runtime host operations in stream
/// order, so the count is changed under its mutex and waiters are woken by its condvar).
#[derive(Debug, Default)]
pub(crate) struct CntNotify {
    /// The id `aclrtCntNotifyGetId` reports.
    pub(crate) id: u32,
    /// The count. A leaf lock.
    pub(crate) count: Mutex<u32>,
    /// Signalled when the count changes.
    pub(crate) changed: Condvar,
}

/// The notifies and IPC events of one device.
#[derive(Debug)]
pub(crate) struct DeviceNotifies {
    table: HandleTable<Arc<NotifyObj>>,
    /// Count notifies (`Kind::Other` handles).
    cnt: HandleTable<Arc<CntNotify>>,
    next_id: AtomicU32,
    /// IPC events by event handle. A leaf lock.
    ipc_events: Mutex<HashMap<u64, IpcEvent>>,
}

/// The most notifies a table can hold (950's limit; A2/A3 stop at 8192, checked by the caller).
pub(crate) const MAX_NOTIFIES: u32 = 65_535;

impl DeviceNotifies {
    /// The empty tables of device `device` for the `aclInit` of `generation`.
    pub(crate) fn new(device: u32, generation: u64) -> Self {
        Self {
            table: HandleTable::new(Kind::Notify, device, generation, MAX_NOTIFIES),
            cnt: HandleTable::new(Kind::Other, device, generation, MAX_NOTIFIES),
            next_id: AtomicU32::new(0),
            ipc_events: Mutex::new(HashMap::new()),
        }
    }

    /// How many notifies are live.
    pub(crate) fn len(&self) -> u32 {
        self.table.len()
    }

    /// Adds a notify whose word is at `addr`; `None` when the table is full.
    pub(crate) fn insert(&self, device: u32, addr: u64, share: Share) -> Option<u64> {
        let id = self.next_id.fetch_add(1, Ordering::AcqRel);
        self.table.insert(Arc::new(NotifyObj { device, id, word: Mutex::new(Word { addr, share }) })).ok()
    }

    /// The live notify `h`.
    pub(crate) fn get(&self, h: u64) -> Option<Arc<NotifyObj>> {
        self.table.with(h, Arc::clone)
    }

    /// Removes notify `h`.
    pub(crate) fn remove(&self, h: u64) -> Option<Arc<NotifyObj>> {
        self.table.remove(h).map(|e| Arc::clone(&**e))
    }

    /// Adds a count notify; `None` when the table is full.
    pub(crate) fn insert_cnt(&self) -> Option<u64> {
        let id = self.next_id.fetch_add(1, Ordering::AcqRel);
        self.cnt.insert(Arc::new(CntNotify { id, ..CntNotify::default() })).ok()
    }

    /// How many count notifies are live.
    pub(crate) fn cnt_len(&self) -> u32 {
        self.cnt.len()
    }

    /// The live count notify `h`.
    pub(crate) fn cnt(&self, h: u64) -> Option<Arc<CntNotify>> {
        self.cnt.with(h, Arc::clone)
    }

    /// Removes count notify `h`.
    pub(crate) fn remove_cnt(&self, h: u64) -> Option<Arc<CntNotify>> {
        self.cnt.remove(h).map(|e| Arc::clone(&**e))
    }

    /// Records that event `h` is an IPC event held as `e`.
    pub(crate) fn set_ipc_event(&self, h: u64, e: IpcEvent) {
        // Lock order: ipc_events alone. An insert.
        crate::sync::relock(&self.ipc_events).insert(h, e);
    }

    /// The IPC state of event `h`, if it has any yet.
    pub(crate) fn ipc_event(&self, h: u64) -> Option<IpcEvent> {
        crate::sync::relock(&self.ipc_events).get(&h).copied()
    }

    /// The IPC event this process created under share `name`, if any.
    pub(crate) fn find_ipc_event(&self, name: &ShareName) -> Option<IpcEvent> {
        crate::sync::relock(&self.ipc_events)
            .values()
            .find(|x| x.role == Role::Owner && x.name == *name)
            .copied()
    }

    /// Forgets the IPC state of event `h`.
    pub(crate) fn take_ipc_event(&self, h: u64) -> Option<IpcEvent> {
        crate::sync::relock(&self.ipc_events).remove(&h)
    }

    /// Forgets everything (the device's reset): the memory behind the words goes with it.
    pub(crate) fn forget(&self) {
        self.table.drain();
        self.cnt.drain();
        crate::sync::relock(&self.ipc_events).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifies_get_ids_and_a_word_is_replaced_once() {
        let t = DeviceNotifies::new(0, 1);
        let h = t.insert(0, 0x1000, Share::Local).unwrap();
        let n = t.get(h).unwrap();
        let old = n.word();
        let name = ShareName::try_new(b"k").unwrap();
        assert!(n.replace_word(old, Word { addr: 0x2000, share: Share::Exported(name) }));
        assert!(!n.replace_word(old, Word { addr: 0x3000, share: Share::Local }));
        assert_eq!(n.word().addr, 0x2000);
        assert!(t.remove(h).is_some());
        assert!(t.get(h).is_none());
        let h2 = t.insert(0, 0x1000, Share::Local).unwrap();
        assert_ne!(t.get(h2).unwrap().id, n.id);
    }
}
