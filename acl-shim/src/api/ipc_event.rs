//! IPC events (fact sheet §6): `aclrtIpcGetEventHandle`, `aclrtIpcOpenEventHandle`, and what
//! record, wait, query, synchronise and destroy do for an event made with `ACL_EVENT_IPC`.
//!
//! An IPC event is two 64-bit words at the start of an allocation of its own, shared between
//! processes as IPC memory is (`crate::api::ipc`; exported without a whitelist, as CANN's IPC
//! events have none): `issued`, the number of the newest record, and `done`, the number of the
//! newest record that ran. A record (in any process holding the event) takes the next number,
//! stores it in `issued` and queues a device write of it to `done`; a stream wait queues a
//! device wait for `done >= issued` as `issued` is when the wait is made (nothing when the
//! event was never recorded), so a waiter waits for the most recent record, as for ordinary
//! events; query and synchronise compare the two words from the host. The 64-byte handle
//! carries the share's key (NUL-terminated when shorter than 64 bytes).
//!
//! # Limits
//!
//! Two processes that record the same event at the same moment may take the same number (the
//! host's read-increment-write of `issued` is not atomic across processes); records that
//! finish out of order can move `done` back. Both are outside the documented protocol (one
//! recorder at a time, as in CANN's example).
//!
//! # Locking
//!
//! The device's `ipc_events` map ([`crate::state::notify`]), a leaf, taken alone.

use std::time::{Duration, Instant};

use hal::{DeviceAddr, DeviceId, TaskDesc, WaitCompare};

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::memory::MallocApi;
use crate::state::notify::{IpcEvent, Role};
use crate::state::stream::{event_flag, EventObj, StreamObj, Timeout, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT};

/// Bytes of an IPC event's handle (`ACL_IPC_EVENT_HANDLE_SIZE`).
pub const HANDLE_BYTES: usize = 64;

/// Bytes of an IPC event's allocation: page-aligned allocations start at 64 KiB + 1.
const SHARED_BYTES: u64 = (64 << 10) + 1;

/// Fails with `ACL_ERROR_RT_PARAM_INVALID` for an IPC event (reset, timestamps and elapsed
/// time are not for IPC events).
pub(crate) fn refuse_ipc(api: &str, e: &EventObj) -> Result<()> {
    if e.flags & event_flag::IPC != 0 {
        return Err(AclError::rt_invalid(format!(
            "{api}: the event is an IPC event (ACL_EVENT_IPC); it cannot be reset, timed or queried for timestamps"
        )));
    }
    Ok(())
}

impl Runtime {
    fn read_words(&self, api: &str, d: u32, addr: u64) -> Result<(u64, u64)> {
        let mut w = [0u8; 16];
        self.backend()
            .driver()
            .copy_from_device(DeviceId(d), &mut w, DeviceAddr(addr))
            .map_err(|e| AclError::from_hal(e, api))?;
        let (a, b) = w.split_at(8);
        let word = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
        Ok((word(a), word(b)))
    }

    /// The IPC state of event `h`, made (allocated and exported) on first use by its creator.
    fn ipc_state(&self, api: &str, h: u64, e: &EventObj) -> Result<IpcEvent> {
        let t = &self.device(e.device).notifies;
        if let Some(x) = t.ipc_event(h) {
            return Ok(x);
        }
        let d = e.device;
        if self.current_device(api)? != d {
            return Err(AclError::new(
                crate::state::stream::ACL_ERROR_RT_STREAM_CONTEXT,
                format!("{api}: the event belongs to device {d}, not the current device"),
            ));
        }
        let page = self.malloc(api, SHARED_BYTES, 0, MallocApi::Malloc, &[])?;
        let made = self
            .backend()
            .driver()
            .copy_to_device(DeviceId(d), DeviceAddr(page), &[0u8; 16])
            .map_err(|er| AclError::from_hal(er, api))
            .and_then(|()| self.ipc_export(api, page, 16, crate::api::ipc::KEY_LEN, 1));
        match made {
            Ok(name) => {
                let x = IpcEvent { addr: page, name, role: Role::Owner };
                t.set_ipc_event(h, x);
                Ok(x)
            }
            Err(er) => {
                let _ = self.free_device_now(api, d, page);
                Err(er)
            }
        }
    }

    /// `aclrtIpcGetEventHandle`: the 64-byte handle of an IPC event.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for an event made without `ACL_EVENT_IPC`.
    pub fn ipc_event_handle(&self, api: &str, event: u64) -> Result<[u8; HANDLE_BYTES]> {
        let e = self.event(api, event)?;
        if e.flags & event_flag::IPC == 0 {
            return Err(AclError::rt_invalid(format!(
                "{api}: event {event:#x} was not created with aclrtCreateEventExWithFlag(ACL_EVENT_IPC)"
            )));
        }
        let x = self.ipc_state(api, event, &e)?;
        let mut out = [0u8; HANDLE_BYTES];
        let b = x.name.as_bytes();
        out[..b.len()].copy_from_slice(b);
        Ok(out)
    }

    /// `aclrtIpcOpenEventHandle`: a new IPC event of the current device for `handle`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device; `ACL_ERROR_RT_PARAM_INVALID` for
    /// a handle that names no live IPC event.
    pub fn ipc_event_open(&self, api: &str, handle: &[u8; HANDLE_BYTES]) -> Result<u64> {
        let d = self.current_device(api)?;
        let len = handle.iter().position(|&b| b == 0).unwrap_or(HANDLE_BYTES);
        let name = crate::api::ipc::key_name(api, &handle[..len])?;
        // Opened in the process that made it: share the owner's words.
        let own = (0..self.device_count()).find_map(|dv| {
            let t = &self.device(dv).notifies;
            t.find_ipc_event(&name).map(|x| (dv, x))
        });
        let (addr, role) = match own {
            Some((dv, x)) if dv == d => (x.addr, Role::Alias),
            Some(_) => {
                return Err(AclError::rt_invalid(format!(
                    "{api}: the IPC event belongs to another device of this process; open it on that device"
                )))
            }
            None => (self.ipc_import(api, &name, 0)?, Role::Imported),
        };
        let h = match self.create_event(api, event_flag::IPC, true) {
            Ok(h) => h,
            Err(e) => {
                if role == Role::Imported {
                    let _ = self.ipc_close(api, &name);
                }
                return Err(e);
            }
        };
        self.device(d).notifies.set_ipc_event(h, IpcEvent { addr, name, role });
        Ok(h)
    }

    /// Record of IPC event `h` on `s`: the next record number to `issued`, and a device write
    /// of it to `done` in stream order.
    pub(crate) fn ipc_event_record(&self, api: &str, h: u64, e: &EventObj, s: &StreamObj) -> Result<()> {
        let x = self.ipc_state(api, h, e)?;
        let (issued, _) = self.read_words(api, e.device, x.addr)?;
        let n = issued.wrapping_add(1);
        self.backend()
            .driver()
            .copy_to_device(DeviceId(e.device), DeviceAddr(x.addr), &n.to_le_bytes())
            .map_err(|er| AclError::from_hal(er, api))?;
        self.submit_task(api, s, TaskDesc::ValueWrite { dst: DeviceAddr(x.addr + 8), value: n }).map(|_| ())
    }

    /// Wait of `s` for IPC event `h`'s newest record (nothing when it was never recorded).
    pub(crate) fn ipc_event_wait(&self, api: &str, h: u64, e: &EventObj, s: &StreamObj) -> Result<()> {
        let Some(x) = self.device(e.device).notifies.ipc_event(h) else { return Ok(()) };
        let (issued, done) = self.read_words(api, e.device, x.addr)?;
        if issued == 0 || done >= issued {
            return Ok(());
        }
        let addr = DeviceAddr(x.addr + 8);
        self.submit_task(
            api,
            s,
            TaskDesc::ValueWait { addr, value: issued, compare: WaitCompare::GreaterOrEqual },
        )
        .map(|_| ())
    }

    /// Whether IPC event `h`'s newest record ran (true when it was never recorded).
    pub(crate) fn ipc_event_done(&self, api: &str, h: u64, e: &EventObj) -> Result<bool> {
        let Some(x) = self.device(e.device).notifies.ipc_event(h) else { return Ok(true) };
        let (issued, done) = self.read_words(api, e.device, x.addr)?;
        Ok(done >= issued)
    }

    /// Synchronises with IPC event `h`'s newest record, polling its words.
    pub(crate) fn ipc_event_sync(&self, api: &str, h: u64, e: &EventObj, timeout: Timeout) -> Result<()> {
        let Some(x) = self.device(e.device).notifies.ipc_event(h) else { return Ok(()) };
        // TIMEOUT: the caller's timeout (or none), converted to a deadline.
        let deadline = match timeout {
            Timeout::Forever => None,
            Timeout::Millis(ms) => Some(Instant::now() + Duration::from_millis(u64::from(ms))),
        };
        let (issued, _) = self.read_words(api, e.device, x.addr)?;
        let mut polls = 0u32;
        loop {
            let (_, done) = self.read_words(api, e.device, x.addr)?;
            if done >= issued {
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(AclError::new(
                    ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                    format!("{api}: the IPC event's record {issued} did not run within {timeout:?}"),
                ));
            }
            polls = polls.saturating_add(1);
            if polls < 64 {
                std::hint::spin_loop();
            } else {
                // TIMEOUT: re-read the words every 200 µs (the record runs in another stream,
                // possibly another process, which cannot wake this thread).
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    /// Releases what IPC event `h` holds before its handle goes (nothing for other events).
    pub(crate) fn ipc_event_destroy(&self, api: &str, e: &EventObj, h: u64) -> Result<()> {
        if e.flags & event_flag::IPC == 0 {
            return Ok(());
        }
        let Some(x) = self.device(e.device).notifies.take_ipc_event(h) else { return Ok(()) };
        match x.role {
            Role::Alias => Ok(()),
            Role::Imported => self.ipc_close(api, &x.name),
            Role::Owner => {
                let r = self.ipc_close(api, &x.name);
                let f = self.free_device_now(api, e.device, x.addr);
                r.and(f).map_err(|er| {
                    AclError::new(
                        ACL_ERROR_RT_INTERNAL_ERROR,
                        format!("{api}: releasing the IPC event: {}", er.message()),
                    )
                })
            }
        }
    }
}
