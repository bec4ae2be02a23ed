//! A fake kernel: a [`Transport`] that decodes the davinci driver's ioctl arguments and serves
//! them from the software NPU (`hal_sim::Sim`).
//!
//! It plays the driver's part of the protocol the backend speaks — the multiplexer's module
//! binding, the SVM commands (process setup, window segments, alloc/advise/free pages, copies,
//! memset, queries, VMM create/map/unmap/release, IPC by name, shareable handles) and the TRS
//! commands (queues, event ids) — and answers anything else with `ENOTTY`, as a kernel does for
//! an unknown command. Like the driver, it copies an SVM argument back only for commands that
//! read (`_IOR`/`_IOWR`). SVM window
//! mappings are bookkeeping only: the window is never touched through host loads and stores.
//!
//! The mapped-ring mode is served for real: an mmap of a `TSDRV_MMAP` fd gets fresh anonymous
//! pages, `TRS_SQCQ_ALLOC` with a `trs_uio_info` takes the ring and control pages from them,
//! and a device thread watches every such queue's doorbell page, moves new SQEs into the
//! software NPU's queue, advances the head registers and writes CQEs into the CQ ring
//! ([`crate::sqe::uio`]). The pages stay alive while either the user's mapping or the queue
//! refers to them, as a kernel's would.

use core::ffi::c_void;
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hal::davinci_abi::{
    self as abi, davinci_intf_open_arg, devmm_free_pages_para, devmm_get_mmap_para, devmm_ioctl_arg,
    devmm_mem_advise_para, devmm_mem_alloc_para, devmm_mem_copy_para, devmm_mem_create_para,
    devmm_mem_ipc_close_para, devmm_mem_ipc_create_para, devmm_mem_ipc_destroy_para, devmm_mem_ipc_open_para,
    devmm_mem_ipc_set_attr_para, devmm_mem_ipc_set_pid_para, devmm_mem_map_para, devmm_mem_memset_para,
    devmm_mem_query_size_para, devmm_mem_release_para, devmm_mem_unmap_para, devmm_mmap_addr_seg,
    devmm_query_device_mem_usedinfo, halReportRecvInfo, halSqCqConfigInfo, halSqCqFreeInfo, halSqCqInputInfo,
    halTaskSendInfo, trs_res_id_para, trs_uio_info,
};
use hal::layout::{device_of, device_windows_base, window_of, Window, DEVICE_WINDOW_SIZE};
use hal::{
    BackRequest, CopyEngine, DeviceAddr, DeviceControl, DeviceId, Error, ErrorKind, EventId, Events, MemAttr,
    MemoryBacking, MemoryKind, PageSize, PhysHandle, PhysicalMemory, PinnedHost, QueueId, Queues, ShareKind,
    ShareName, Sharing, TaskDesc, TaskStatus, VaRange,
};
use hal_sim::Sim;

use crate::sqe::{self, Cqe, Entry};
use crate::sys::shared::{Anon, View};
use crate::sys::user;
use crate::{Errno, Transport};

/// What an fd of the fake multiplexer is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    Unbound,
    Svm,
    Tsdrv(u32),
    TsdrvMmap(u32),
}

#[derive(Debug, Default)]
struct State {
    next_fd: RawFd,
    fds: HashMap<RawFd, Binding>,
    /// Devices opened on the sim, with the count of TSDRV fds bound to each.
    device_users: HashMap<u32, u32>,
    /// `ALLOC`ed VA: start to bytes, and whether `ADVISE` backed it.
    allocs: HashMap<(u32, u64), (u64, bool)>,
    /// VMM mappings: start to bytes.
    maps: HashMap<(u32, u64), u64>,
    /// Mapped SVM window segments.
    mappings: HashMap<usize, usize>,
    /// Counts of every command number served, for tests.
    served: HashMap<u32, u64>,
    /// Module binds still to refuse with `EBUSY` (a driver still releasing an old user).
    busy_binds: u32,
    /// The pauses the backend asked for between bind tries, in order (not spent: the fake
    /// answers at once, so a test of the retry costs no real time).
    pauses: Vec<Duration>,
    /// Pages behind the `TSDRV_MMAP` mappings the user holds, by start address.
    ring_maps: HashMap<usize, Arc<Anon>>,
    /// IPC shares this process opened: where they are mapped (the handle and bytes).
    ipc_opens: HashMap<(u32, u64), (PhysHandle, u64)>,
}

/// The share id the fake driver reports for a shareable-handle share of the software NPU
/// (whose handle names are 16 hex digits below 2^31).
fn share_id_of(name: &ShareName) -> Result<i32, Errno> {
    u64::from_str_radix(name.as_str(), 16)
        .ok()
        .and_then(|v| i32::try_from(v).ok())
        .ok_or(Errno(libc::EOVERFLOW))
}

/// The software NPU's name of share id `id`.
fn share_of_id(id: i32) -> Result<ShareName, Errno> {
    let id = u32::try_from(id).map_err(|_| Errno(libc::EINVAL))?;
    ShareName::try_new(format!("{id:016x}").as_bytes()).ok_or(Errno(libc::EINVAL))
}

fn share_name(buf: &[u8; abi::DEVMM_MAX_NAME_SIZE]) -> Result<ShareName, Errno> {
    ShareName::try_new(abi::ipc_name_bytes(buf)).ok_or(Errno(libc::EINVAL))
}

/// A page (or ring) of a mapped queue: the pages it lies in and its user address.
#[derive(Debug)]
struct Page {
    mem: Arc<Anon>,
    addr: u64,
    len: usize,
}

impl Page {
    fn find(maps: &HashMap<usize, Arc<Anon>>, addr: u64, len: usize) -> Result<Self, Errno> {
        maps.values()
            .find(|m| m.view(addr, len).is_some())
            .map(|m| Self { mem: Arc::clone(m), addr, len })
            .ok_or(Errno(libc::EINVAL))
    }

    fn view(&self) -> Option<View<'_>> {
        self.mem.view(self.addr, self.len)
    }
}

/// A queue in the mapped-ring mode, as the device thread sees it.
#[derive(Debug)]
struct RingQueue {
    dev: DeviceId,
    q: QueueId,
    depth: u32,
    sq: Page,
    shr: Page,
    head: Page,
    head_reg: Page,
    db: Page,
    svc: Mutex<Service>,
}

/// Runs one decoded SQE on the software NPU; every SQE takes exactly one sequence number of
/// the queue, as the backend counts them.
fn run_entry(sim: &Sim, dev: DeviceId, q: QueueId, entry: Entry) -> hal::Result<u64> {
    match entry {
        Entry::Task(task) => sim.submit(dev, q, task),
        Entry::EventRecord(ev) => sim.record_event(dev, q, ev),
        // Never recorded: nothing to wait for, but the SQE still takes its place.
        Entry::EventWait { record: None, .. } => sim.submit(dev, q, TaskDesc::Marker),
        Entry::EventWait { record: Some((queue, seq)), .. } => sim.wait_point(dev, q, QueueId(queue), seq),
        Entry::EventReset(ev) => {
            sim.reset_event(dev, q, ev)?;
            sim.progress(dev, q).map(|p| p.submitted)
        }
        Entry::StopOnFailure(stop) => {
            sim.set_stop_on_failure(dev, q, stop)?;
            sim.submit(dev, q, TaskDesc::Marker)
        }
    }
}

/// The device side of a mapped queue's counters.
#[derive(Debug, Default)]
struct Service {
    head: u32,
    cq_tail: u32,
    reported: u64,
    /// A failure the software NPU reported that no CQE carried yet.
    failure: Option<TaskStatus>,
    /// The queue is in stop-on-failure mode (its last mode SQE taken said so).
    stop: bool,
    /// In stop mode: the CQ tail just past the CQE that carried the failure, until the host
    /// has read that CQE. The failure stays in the software NPU meanwhile, which keeps the
    /// queue stopped (what it takes is skipped), as a device's stopped queue runs nothing
    /// until the host has seen why.
    unacked: Option<u32>,
    broken: bool,
}

impl RingQueue {
    /// Moves new SQEs into the software NPU and reports completions; whether it did anything.
    fn service(&self, sim: &Sim) -> bool {
        let (Some(sq), Some(shr), Some(head), Some(head_reg), Some(db)) =
            (self.sq.view(), self.shr.view(), self.head.view(), self.head_reg.view(), self.db.view())
        else {
            return false;
        };
        let mut s = self.svc.lock().unwrap_or_else(|p| p.into_inner());
        if s.broken {
            return false;
        }
        // Stop mode: a failure is seen before the doorbell is read, so that every SQE the
        // host wrote before the failure is taken while the queue is stopped (this round or an
        // earlier one) and none runs.
        let mut fresh = false;
        if s.stop && s.unacked.is_none() && s.failure.is_none() {
            if let Ok(Some(status)) = sim.pending_error(self.dev, self.q) {
                s.failure = Some(status);
                fresh = true;
            }
        }
        let tail = db.load_u32(0);
        // Read after the doorbell: an SQE the host wrote after reading the failure's CQE comes
        // with the head that says it read it, and runs.
        if let Some(at) = s.unacked {
            if shr.load_u32(sqe::uio::CQ_HEAD).wrapping_sub(at) < 1 << 31 {
                // The host has seen the failure: the queue runs again.
                let _ = sim.take_error(self.dev, self.q);
                s.unacked = None;
            }
        }
        let busy = self.take(&mut s, sim, &sq, &head, &head_reg, tail);
        let Ok(seq) = sim.progress(self.dev, self.q).map(|p| p.completed) else {
            return busy;
        };
        // A CQE reports a failure once, as the device's does: take it from the NPU (in stop
        // mode only once the host has read it, see `unacked`).
        if !s.stop && s.unacked.is_none() {
            if let Ok(Some(status)) = sim.take_error(self.dev, self.q) {
                s.failure.get_or_insert(status);
            }
        }
        if seq == s.reported && s.failure.is_none() {
            return busy;
        }
        if s.cq_tail.wrapping_sub(shr.load_u32(sqe::uio::CQ_HEAD)) >= sqe::uio::CQ_ENTRIES {
            // The CQ ring is full: the next CQE will report the newest state.
            return busy;
        }
        let cqe = Cqe { seq, status: s.failure.take().unwrap_or(TaskStatus::Ok) };
        let slot = (s.cq_tail % sqe::uio::CQ_ENTRIES) as usize;
        shr.write(sqe::uio::CQ_RING + slot * sqe::CQE_BYTES, &cqe.encode());
        s.cq_tail = s.cq_tail.wrapping_add(1);
        if cqe.status != TaskStatus::Ok && (fresh || s.stop) && s.unacked.is_none() {
            s.unacked = Some(s.cq_tail);
        }
        shr.store_u32(sqe::uio::CQ_TAIL, s.cq_tail);
        s.reported = seq;
        true
    }
}

impl RingQueue {
    /// Moves the SQEs the doorbell announced (up to `tail`) into the software NPU while it has
    /// room; whether it moved any.
    fn take(
        &self,
        s: &mut Service,
        sim: &Sim,
        sq: &View<'_>,
        head: &View<'_>,
        head_reg: &View<'_>,
        tail: u32,
    ) -> bool {
        let mut busy = false;
        while s.head != tail && tail.wrapping_sub(s.head) <= self.depth {
            // A full device queue keeps its SQEs in the ring; this thread serves every ring
            // and must not block on one (a task in another ring may be what frees this one).
            if !sim.has_room(self.dev, self.q).unwrap_or(false) {
                break;
            }
            let mut image = [0u8; sqe::SQE_BYTES];
            sq.read((s.head % self.depth) as usize * sqe::SQE_BYTES, &mut image);
            let submitted = match sqe::decode(&image) {
                Some(entry) => {
                    if let Entry::StopOnFailure(stop) = entry {
                        s.stop = stop;
                    }
                    run_entry(sim, self.dev, self.q, entry)
                }
                None => Err(Error::new(ErrorKind::InvalidArgument, "unknown SQE")),
            };
            match submitted {
                Ok(_) => {}
                // The NPU's queue is full: leave the SQE in the ring and come back.
                Err(e) if e.kind() == ErrorKind::QueueFull => break,
                Err(e) => {
                    s.broken = true;
                    s.failure = Some(TaskStatus::Fault(-Errno::from_kind(e.kind()).0));
                    break;
                }
            }
            s.head = s.head.wrapping_add(1);
            head.store_u32(0, s.head);
            head_reg.store_u32(0, s.head);
            busy = true;
        }
        busy
    }

    /// `SQCQ_RESET` of a mapped queue: first moves what the doorbell announced into the
    /// software NPU as far as it has room (so the head SQE is there to keep), aborts the NPU's
    /// queue, then turns the SQEs still in the ring into markers, which run as no-ops and keep
    /// the numbering. Returns how many SQEs were dropped (all at the tail end).
    fn reset(&self, sim: &Sim, keep_head: hal::AbortHead) -> Result<usize, Errno> {
        let (Some(sq), Some(head), Some(head_reg), Some(db)) =
            (self.sq.view(), self.head.view(), self.head_reg.view(), self.db.view())
        else {
            return Err(Errno(libc::EFAULT));
        };
        let marker = sqe::encode(&TaskDesc::Marker).ok_or(Errno(libc::EPROTO))?;
        let mut s = self.svc.lock().unwrap_or_else(|p| p.into_inner());
        let tail = db.load_u32(0);
        if !s.broken {
            self.take(&mut s, sim, &sq, &head, &head_reg, tail);
        }
        let mut dropped = sim.abort_queue(self.dev, self.q, keep_head).map_err(err)?;
        let mut at = s.head;
        while at != tail && tail.wrapping_sub(at) <= self.depth {
            sq.write((at % self.depth) as usize * sqe::SQE_BYTES, &marker);
            at = at.wrapping_add(1);
            dropped += 1;
        }
        Ok(dropped)
    }
}

/// The mapped queues the device thread serves, and its stop flag.
#[derive(Debug, Default)]
struct Device {
    queues: Mutex<Vec<Arc<RingQueue>>>,
    stop: AtomicBool,
}

impl Device {
    fn queues(&self) -> std::sync::MutexGuard<'_, Vec<Arc<RingQueue>>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device thread: polls the doorbells until stopped.
    fn run(&self, sim: &Sim) {
        let mut idle = 0u32;
        while !self.stop.load(Ordering::Acquire) {
            let queues = self.queues().clone();
            let mut busy = false;
            for q in &queues {
                busy |= q.service(sim);
            }
            if busy {
                idle = 0;
            } else {
                idle = idle.saturating_add(1);
                let pause = if queues.is_empty() || idle > 1000 { 1000 } else { 50 };
                std::thread::sleep(Duration::from_micros(pause));
            }
        }
    }
}

/// The fake kernel over a software NPU.
#[derive(Debug)]
pub struct FakeKernel {
    sim: Arc<Sim>,
    state: Mutex<State>,
    device: Arc<Device>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for FakeKernel {
    fn drop(&mut self) {
        self.device.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

fn err(e: Error) -> Errno {
    Errno::from_kind(e.kind())
}

fn range(start: u64, len: u64) -> Result<VaRange, Errno> {
    VaRange::try_new(DeviceAddr(start), len).map_err(err)
}

fn page_size_of(advise: u32) -> PageSize {
    if advise & abi::DV_ADVISE_GIANTPAGE != 0 {
        PageSize::Giant
    } else if advise & abi::DV_ADVISE_HUGEPAGE != 0 {
        PageSize::Huge
    } else {
        PageSize::Normal
    }
}

fn pg_size(pg_type: u32) -> Result<PageSize, Errno> {
    match pg_type {
        0 => Ok(PageSize::Normal),
        1 => Ok(PageSize::Huge),
        2 => Ok(PageSize::Giant),
        _ => Err(Errno(libc::EINVAL)),
    }
}

impl FakeKernel {
    /// A fake kernel serving `sim`.
    pub fn new(sim: Sim) -> Self {
        Self {
            sim: Arc::new(sim),
            state: Mutex::new(State { next_fd: 1000, ..State::default() }),
            device: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    /// The software NPU behind the fake.
    pub fn sim(&self) -> &Sim {
        &self.sim
    }

    /// Makes the next `n` module binds fail with `EBUSY`, as a driver does while a previous
    /// user of the module is still being released.
    pub fn refuse_binds_busy(&self, n: u32) {
        self.lock().busy_binds = n;
    }

    /// The pauses the backend took between busy module binds, in order.
    pub fn pauses(&self) -> Vec<Duration> {
        self.lock().pauses.clone()
    }

    /// How many times command `cmd` was served.
    pub fn served(&self, cmd: u32) -> u64 {
        self.lock().served.get(&cmd).copied().unwrap_or(0)
    }

    /// Starts the device thread if it is not running.
    fn start_device(&self) -> Result<(), Errno> {
        let mut t = self.thread.lock().unwrap_or_else(|p| p.into_inner());
        if t.is_none() {
            let (sim, device) = (Arc::clone(&self.sim), Arc::clone(&self.device));
            let handle = std::thread::Builder::new()
                .name("fake-davinci-device".into())
                .spawn(move || device.run(&sim))
                .map_err(|_| Errno(libc::ENOMEM))?;
            *t = Some(handle);
        }
        Ok(())
    }

    /// `TRS_SQCQ_ALLOC` with a `trs_uio_info` at `uio_addr`: the mapped-ring mode.
    ///
    /// # Safety
    ///
    /// `uio_addr` must point at a readable and writable `trs_uio_info`.
    unsafe fn alloc_mapped(
        &self,
        dev: DeviceId,
        info: &mut halSqCqInputInfo,
        uio_addr: u64,
    ) -> Result<(), Errno> {
        // SAFETY: the caller's contract.
        let mut uio: trs_uio_info = unsafe { user::read(uio_addr as *const c_void) };
        let depth = info.sqeDepth;
        if depth == 0 {
            return Err(Errno(libc::EINVAL));
        }
        let pages = {
            let st = self.lock();
            let m = &st.ring_maps;
            let ctrl = |which: usize, len| Page::find(m, uio.sq_ctrl_addr[which], len);
            (
                Page::find(m, uio.sq_que_addr, depth as usize * sqe::SQE_BYTES)?,
                ctrl(abi::TRS_UIO_SHR_INFO, sqe::uio::SHR_INFO_BYTES)?,
                ctrl(abi::TRS_UIO_HEAD, 4)?,
                ctrl(abi::TRS_UIO_HEAD_REG, 4)?,
                ctrl(abi::TRS_UIO_DB, 4)?,
            )
        };
        let (sq, shr, head, head_reg, db) = pages;
        self.start_device()?;
        let q = self.sim.create_queue(dev, depth).map_err(err)?;
        self.device.queues().push(Arc::new(RingQueue {
            dev,
            q,
            depth,
            sq,
            shr,
            head,
            head_reg,
            db,
            svc: Mutex::new(Service::default()),
        }));
        info.sqId = q.0;
        info.cqId = q.0;
        uio.uio_flag = 1;
        // SAFETY: the caller's contract: writable.
        unsafe { user::write(uio_addr as *mut c_void, uio) };
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bind(&self, fd: RawFd, arg: &davinci_intf_open_arg) -> Result<i32, Errno> {
        // CAST: device ids are small and non-negative once checked.
        let dev = u32::try_from(arg.device_id).map_err(|_| Errno(libc::EINVAL))?;
        let binding = match arg.module() {
            abi::MODULE_SVM => Binding::Svm,
            abi::MODULE_TSDRV => Binding::Tsdrv(dev),
            abi::MODULE_TSDRV_MMAP => Binding::TsdrvMmap(dev),
            _ => return Err(Errno(libc::ENODEV)),
        };
        {
            let mut st = self.lock();
            if st.busy_binds > 0 {
                st.busy_binds -= 1;
                return Err(Errno(libc::EBUSY));
            }
        }
        if let Binding::Tsdrv(d) = binding {
            self.sim.open(DeviceId(d)).map_err(err)?;
            *self.lock().device_users.entry(d).or_default() += 1;
        }
        let mut st = self.lock();
        match st.fds.get_mut(&fd) {
            Some(b @ Binding::Unbound) => *b = binding,
            Some(_) => return Err(Errno(libc::EBUSY)),
            None => return Err(Errno(libc::EBADF)),
        }
        Ok(0)
    }

    /// Serves one SVM command. `arg` is the caller's `devmm_ioctl_arg`, read and written back.
    ///
    /// # Safety
    ///
    /// As [`Transport::ioctl`]: the host addresses inside the argument are valid for the call.
    unsafe fn svm(&self, cmd: u32, arg: &mut devmm_ioctl_arg) -> Result<i32, Errno> {
        let dev = DeviceId(arg.head.logical_devid);
        match cmd {
            abi::DEVMM_SVM_ALLOC_PROC_STRUCT => Ok(0),
            abi::DEVMM_SVM_IPC_MEM_CREATE => {
                let mut p = arg.get::<devmm_mem_ipc_create_para>();
                let name =
                    self.sim.export_range(dev, range(p.vptr, p.len)?, ShareKind::Key, false).map_err(err)?;
                if (p.name_len as usize) < name.as_bytes().len() + 1 {
                    let _ = self.sim.destroy_share(&name);
                    return Err(Errno(libc::EINVAL));
                }
                p.name = abi::ipc_name(name.as_bytes()).ok_or(Errno(libc::EINVAL))?;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_IPC_MEM_SET_PID => {
                let p = arg.get::<devmm_mem_ipc_set_pid_para>();
                let n = (p.num as usize).min(abi::DEVMM_SECONDARY_PROCESS_NUM);
                let pids: Vec<u32> = p.set_pid[..n]
                    .iter()
                    .map(|&x| u32::try_from(x))
                    .collect::<Result<_, _>>()
                    .map_err(|_| Errno(libc::EINVAL))?;
                self.sim.set_share_pids(&share_name(&p.name)?, &pids).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_IPC_MEM_OPEN => {
                let p = arg.get::<devmm_mem_ipc_open_para>();
                // The library chooses the VA (in its own heaps); the command returns nothing.
                if p.vptr == 0 {
                    return Err(Errno(libc::EINVAL));
                }
                let (handle, info) = self.sim.import_share(&share_name(&p.name)?, dev).map_err(err)?;
                let page = info.page_size.bytes();
                let len = info.len_bytes.next_multiple_of(page);
                let va = p.vptr;
                if let Err(e) = self.sim.map_physical(dev, handle, 0, range(va, len)?) {
                    let _ = self.sim.free_physical(dev, handle);
                    return Err(err(e));
                }
                self.lock().ipc_opens.insert((dev.0, va), (handle, len));
                Ok(0)
            }
            abi::DEVMM_SVM_IPC_MEM_CLOSE => {
                let p = arg.get::<devmm_mem_ipc_close_para>();
                let (handle, len) =
                    self.lock().ipc_opens.remove(&(dev.0, p.vptr)).ok_or(Errno(libc::ENOENT))?;
                self.sim.unmap_physical(dev, range(p.vptr, len)?).map_err(err)?;
                self.sim.free_physical(dev, handle).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_GET_MMAP_INFO => {
                let mut p = arg.get::<devmm_get_mmap_para>();
                if p.seg_num == 0 {
                    return Err(Errno(libc::EINVAL));
                }
                let seg = devmm_mmap_addr_seg {
                    va: device_windows_base(),
                    size: DEVICE_WINDOW_SIZE * u64::from(hal::layout::MAX_DEVICES),
                };
                // SAFETY: the caller's `segs` holds `seg_num` (at least one) segments.
                unsafe { user::write(p.segs as *mut c_void, seg) };
                p.seg_num = 1;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_ALLOC => {
                let p = arg.get::<devmm_mem_alloc_para>();
                range(p.p, p.size)?;
                let mut st = self.lock();
                if st.allocs.contains_key(&(dev.0, p.p)) {
                    return Err(Errno(libc::EBUSY));
                }
                st.allocs.insert((dev.0, p.p), (p.size, false));
                Ok(0)
            }
            abi::DEVMM_SVM_ADVISE => {
                let p = arg.get::<devmm_mem_advise_para>();
                let r = range(p.ptr, p.count)?;
                if self.lock().allocs.get(&(dev.0, p.ptr)).map(|a| a.0) != Some(p.count) {
                    return Err(Errno(libc::EINVAL));
                }
                if p.advise & abi::DV_ADVISE_HOST != 0 {
                    if window_of(p.ptr) != Window::PinnedHost {
                        return Err(Errno(libc::EINVAL));
                    }
                    self.sim.back_host(r).map_err(err)?;
                    if let Some(a) = self.lock().allocs.get_mut(&(dev.0, p.ptr)) {
                        a.1 = true;
                    }
                } else if p.advise & abi::DV_ADVISE_POPULATE != 0 {
                    let mut attrs = MemAttr::CACHED;
                    attrs.set(MemAttr::READONLY, p.advise & abi::DV_ADVISE_READONLY != 0);
                    attrs.set(MemAttr::P2P, p.advise & abi::DV_ADVISE_P2P_HBM != 0);
                    let req = BackRequest { range: r, page_size: page_size_of(p.advise), attrs };
                    self.sim.back(dev, &req).map_err(err)?;
                    if let Some(a) = self.lock().allocs.get_mut(&(dev.0, p.ptr)) {
                        a.1 = true;
                    }
                }
                Ok(0)
            }
            abi::DEVMM_SVM_FREE_PAGES => {
                let p = arg.get::<devmm_free_pages_para>();
                let (len, backed) = self.lock().allocs.remove(&(dev.0, p.va)).ok_or(Errno(libc::ENOENT))?;
                if backed && window_of(p.va) == Window::PinnedHost {
                    self.sim.unback_host(range(p.va, len)?).map_err(err)?;
                } else if backed {
                    self.sim.unback(dev, range(p.va, len)?).map_err(err)?;
                }
                Ok(0)
            }
            abi::DEVMM_SVM_MEMCPY => {
                let p = arg.get::<devmm_mem_copy_para>();
                let len = usize::try_from(p.ByteCount).map_err(|_| Errno(libc::EINVAL))?;
                let pinned = |a: u64| window_of(a) == Window::PinnedHost;
                let host_dst =
                    matches!(p.direction, abi::DEVMM_COPY_DEVICE_TO_HOST | abi::DEVMM_COPY_HOST_TO_HOST);
                let host_src =
                    matches!(p.direction, abi::DEVMM_COPY_HOST_TO_DEVICE | abi::DEVMM_COPY_HOST_TO_HOST);
                if p.direction > abi::DEVMM_COPY_DEVICE_TO_DEVICE {
                    return Err(Errno(libc::EINVAL));
                }
                let (user_dst, user_src) = (host_dst && !pinned(p.dst), host_src && !pinned(p.src));
                match (user_dst, user_src) {
                    (false, false) => match (device_of(p.dst), device_of(p.src)) {
                        (Some(a), Some(b)) => self
                            .sim
                            .copy_device(
                                DeviceId(a),
                                DeviceAddr(p.dst),
                                DeviceId(b),
                                DeviceAddr(p.src),
                                p.ByteCount,
                            )
                            .map_err(err)?,
                        // Pinned host memory on either side: the DMA engine reaches it.
                        _ => self
                            .sim
                            .copy_any(DeviceAddr(p.dst), DeviceAddr(p.src), p.ByteCount)
                            .map_err(err)?,
                    },
                    (false, true) => {
                        // SAFETY: the caller's source is readable for `len` bytes for the call.
                        let src = unsafe { user::bytes(p.src, len) };
                        match (window_of(p.dst), device_of(p.dst)) {
                            (Window::PinnedHost, _) => self.sim.write_host(DeviceAddr(p.dst), src),
                            (_, Some(d)) => self.sim.copy_to_device(DeviceId(d), DeviceAddr(p.dst), src),
                            _ => return Err(Errno(libc::EFAULT)),
                        }
                        .map_err(err)?;
                    }
                    (true, false) => {
                        // SAFETY: the caller's destination is writable for `len` bytes, and
                        // nothing else touches it during the call.
                        let dst = unsafe { user::bytes_mut(p.dst, len) };
                        match (window_of(p.src), device_of(p.src)) {
                            (Window::PinnedHost, _) => self.sim.read_host(dst, DeviceAddr(p.src)),
                            (_, Some(d)) => self.sim.copy_from_device(DeviceId(d), dst, DeviceAddr(p.src)),
                            _ => return Err(Errno(libc::EFAULT)),
                        }
                        .map_err(err)?;
                    }
                    (true, true) => return Err(Errno(libc::EINVAL)),
                }
                Ok(0)
            }
            abi::DEVMM_SVM_MEMSET8 => {
                let p = arg.get::<devmm_mem_memset_para>();
                // CAST: MEMSET8 uses the low byte.
                let value = p.value as u8;
                match window_of(p.dst) {
                    Window::PinnedHost => self.sim.set_any(DeviceAddr(p.dst), value, p.count),
                    _ => self.sim.set_device(dev, DeviceAddr(p.dst), value, p.count),
                }
                .map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_QUERY_MEM_USEDINFO => {
                let mut p = arg.get::<devmm_query_device_mem_usedinfo>();
                let want = match p.mem_type {
                    abi::MEM_INFO_TYPE_HBM_SIZE => MemoryKind::Hbm,
                    abi::MEM_INFO_TYPE_DDR_SIZE => MemoryKind::Ddr,
                    _ => return Err(Errno(libc::EINVAL)),
                };
                let info = self.sim.device_info(dev).map_err(err)?;
                let q = devmm_query_device_mem_usedinfo { mem_type: p.mem_type, ..Default::default() };
                p = if info.memory != want {
                    q
                } else if let Ok(m) = self.sim.memory_info(dev) {
                    devmm_query_device_mem_usedinfo {
                        normal_total_size: m.total_bytes,
                        normal_free_size: m.free_bytes,
                        huge_total_size: m.huge_total_bytes,
                        huge_free_size: m.huge_free_bytes,
                        giant_total_size: m.giant_total_bytes,
                        giant_free_size: m.giant_free_bytes,
                        ..q
                    }
                } else {
                    // Not opened by this process yet: nothing of it is in use here.
                    devmm_query_device_mem_usedinfo {
                        normal_total_size: info.hbm_bytes,
                        normal_free_size: info.hbm_bytes,
                        huge_total_size: info.huge_budget_bytes,
                        huge_free_size: info.huge_budget_bytes,
                        giant_total_size: info.giant_budget_bytes,
                        giant_free_size: info.giant_budget_bytes,
                        ..q
                    }
                };
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_IPC_MEM_QUERY => {
                let mut p = arg.get::<devmm_mem_query_size_para>();
                let info = self.sim.share_info(&share_name(&p.name)?).map_err(err)?;
                p.len = info.len_bytes;
                p.is_huge = i32::from(info.page_size != PageSize::Normal);
                p.phy_devid = info.physical_device;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_IPC_MEM_SET_ATTR => {
                let p = arg.get::<devmm_mem_ipc_set_attr_para>();
                if p.type_ != abi::SHMEM_ATTR_TYPE_NO_WLIST_IN_SERVER || p.attr != abi::SHMEM_NO_WLIST_ENABLE
                {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                self.sim.disable_share_whitelist(&share_name(&p.name)?).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_IPC_MEM_DESTROY => {
                let p = arg.get::<devmm_mem_ipc_destroy_para>();
                self.sim.destroy_share(&share_name(&p.name)?).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_CREATE => {
                let mut p = arg.get::<devmm_mem_create_para>();
                let h = self
                    .sim
                    .alloc_physical(dev, p.size, pg_size(p.pg_type)?, MemAttr::CACHED)
                    .map_err(err)?;
                p.id = i32::try_from(h.0).map_err(|_| Errno(libc::ENOSPC))?;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_RELEASE => {
                let p = arg.get::<devmm_mem_release_para>();
                // CAST: ids are non-negative.
                self.sim.free_physical(dev, PhysHandle(p.id as u32 as u64)).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_MAP => {
                let p = arg.get::<devmm_mem_map_para>();
                // CAST: ids are non-negative.
                self.sim
                    .map_physical(dev, PhysHandle(p.id as u32 as u64), 0, range(p.va, p.size)?)
                    .map_err(err)?;
                self.lock().maps.insert((dev.0, p.va), p.size);
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_UNMAP => {
                let mut p = arg.get::<devmm_mem_unmap_para>();
                let size = self.lock().maps.get(&(dev.0, p.va)).copied().ok_or(Errno(libc::ENOENT))?;
                self.sim.unmap_physical(dev, range(p.va, size)?).map_err(err)?;
                self.lock().maps.remove(&(dev.0, p.va));
                p.unmap_size = size;
                p.side = 1;
                p.logic_devid = dev.0;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_EXPORT => {
                let mut p = arg.get::<abi::devmm_mem_export_para>();
                // CAST: ids are non-negative.
                let name = self
                    .sim
                    .export_physical(dev, PhysHandle(p.id as u32 as u64), ShareKind::Handle, false)
                    .map_err(err)?;
                p.share_id = share_id_of(&name)?;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_SET_ATTR => {
                let p = arg.get::<abi::devmm_mem_set_attr_para>();
                if p.type_ != abi::SHR_HANDLE_ATTR_NO_WLIST_IN_SERVER
                    || p.attr.enableFlag != abi::SHR_HANDLE_NO_WLIST_ENABLE
                {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                self.sim.disable_share_whitelist(&share_of_id(p.share_id)?).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_SET_PID => {
                let p = arg.get::<abi::devmm_mem_set_pid_para>();
                let n = p.pid_num as usize;
                if n == 0 || n > abi::SVM_SHARE_MEM_MAX_PID_CNT || p.pid_list == 0 {
                    return Err(Errno(libc::EINVAL));
                }
                // SAFETY: the caller of `ioctl` vouches that `pid_list` holds `pid_num` ints
                // for the call (the transport's contract); they are only read here.
                let raw = unsafe { user::bytes(p.pid_list, n * 4) };
                let pids: Vec<u32> = raw
                    .chunks_exact(4)
                    .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                    .map(u32::try_from)
                    .collect::<Result<_, _>>()
                    .map_err(|_| Errno(libc::EINVAL))?;
                self.sim.set_share_pids(&share_of_id(p.share_id)?, &pids).map_err(err)?;
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_GET_INFO => {
                let mut p = arg.get::<abi::devmm_mem_get_info_para>();
                let info = self.sim.share_info(&share_of_id(p.share_id)?).map_err(err)?;
                p.info.phyDevid = info.physical_device;
                arg.put(&p);
                Ok(0)
            }
            abi::DEVMM_SVM_MEM_IMPORT => {
                let mut p = arg.get::<abi::devmm_mem_import_para>();
                if p.handle_type != abi::MEM_HANDLE_TYPE_NONE {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                let (h, info) = self.sim.import_share(&share_of_id(p.share_id)?, dev).map_err(err)?;
                p.id = i32::try_from(h.0).map_err(|_| Errno(libc::ENOSPC))?;
                p.side = 1;
                p.pg_type = crate::pg_type(info.page_size);
                p.pg_num = info.len_bytes / info.page_size.bytes();
                arg.put(&p);
                Ok(0)
            }
            _ => Err(Errno(libc::ENOTTY)),
        }
    }

    /// Serves one TRS command on a TSDRV fd of `dev`.
    ///
    /// # Safety
    ///
    /// As [`Transport::ioctl`].
    unsafe fn trs(&self, dev: DeviceId, cmd: u32, arg: *mut c_void) -> Result<i32, Errno> {
        match cmd {
            abi::TRS_SQCQ_ALLOC => {
                // SAFETY: the command's argument is a `halSqCqInputInfo`.
                let mut info: halSqCqInputInfo = unsafe { user::read(arg) };
                if info.sqeSize != abi::TRS_SQE_SIZE {
                    return Err(Errno(libc::EINVAL));
                }
                let uio = info.uio_info();
                if uio == 0 {
                    let q = self.sim.create_queue(dev, info.sqeDepth).map_err(err)?;
                    info.sqId = q.0;
                    info.cqId = q.0;
                } else {
                    // SAFETY: in the mapped-ring mode `res[0..2]` carries the address of the
                    // caller's `trs_uio_info` (the caller's contract covers it).
                    unsafe { self.alloc_mapped(dev, &mut info, uio) }?;
                }
                // SAFETY: as above, writable.
                unsafe { user::write(arg, info) };
                Ok(0)
            }
            abi::TRS_RES_ID_ALLOC => {
                // SAFETY: the command's argument is a `trs_res_id_para`.
                let mut p: trs_res_id_para = unsafe { user::read(arg) };
                if p.res_type != abi::DRV_EVENT_ID {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                p.id = self.sim.create_event(dev).map_err(err)?.0;
                // SAFETY: as above, writable.
                unsafe { user::write(arg, p) };
                Ok(0)
            }
            abi::TRS_RES_ID_FREE => {
                // SAFETY: the command's argument is a `trs_res_id_para`.
                let p: trs_res_id_para = unsafe { user::read(arg) };
                if p.res_type != abi::DRV_EVENT_ID {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                self.sim.destroy_event(dev, EventId(p.id)).map_err(err)?;
                Ok(0)
            }
            abi::TRS_SQCQ_FREE => {
                // SAFETY: the command's argument is a `halSqCqFreeInfo`.
                let info: halSqCqFreeInfo = unsafe { user::read(arg) };
                self.device.queues().retain(|r| (r.dev, r.q.0) != (dev, info.sqId));
                self.sim.destroy_queue(dev, QueueId(info.sqId)).map_err(err)?;
                Ok(0)
            }
            abi::TRS_SQCQ_CONFIG => {
                // SAFETY: the command's argument is a `halSqCqConfigInfo`.
                let info: halSqCqConfigInfo = unsafe { user::read(arg) };
                if info.prop != abi::DRV_SQCQ_PROP_SQCQ_RESET {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                // aclrs's meaning of the reset (the firmware's is not public): drop what has
                // not started; `value[0] = 1` keeps the head whose dependencies are met.
                let head = if info.value[0] == 1 { hal::AbortHead::Runs } else { hal::AbortHead::Cancel };
                let q = QueueId(info.sqId);
                let ring = self.device.queues().iter().find(|r| (r.dev, r.q) == (dev, q)).cloned();
                let dropped = match ring {
                    Some(ring) => ring.reset(&self.sim, head)?,
                    None => self.sim.abort_queue(dev, q, head).map_err(err)?,
                };
                // The count is the command's return value.
                Ok(i32::try_from(dropped).unwrap_or(i32::MAX))
            }
            abi::TRS_SQCQ_SEND => {
                // SAFETY: the command's argument is a `halTaskSendInfo`.
                let mut info: halTaskSendInfo = unsafe { user::read(arg) };
                let n = info.sqe_num as usize;
                // SAFETY: the caller's SQEs are readable for `sqe_num` entries during the call.
                let bytes = unsafe { user::bytes(info.sqe_addr, n * sqe::SQE_BYTES) };
                let mut first = None;
                for chunk in bytes.chunks_exact(sqe::SQE_BYTES) {
                    let mut image = [0u8; sqe::SQE_BYTES];
                    image.copy_from_slice(chunk);
                    let entry = sqe::decode(&image).ok_or(Errno(libc::EINVAL))?;
                    let seq = run_entry(&self.sim, dev, QueueId(info.sqId), entry).map_err(err)?;
                    first.get_or_insert(seq);
                }
                // CAST: the ring position wraps.
                info.pos = first.unwrap_or(0) as u32;
                // SAFETY: as above, writable.
                unsafe { user::write(arg, info) };
                Ok(0)
            }
            abi::TRS_SQCQ_RECV => {
                // SAFETY: the command's argument is a `halReportRecvInfo`.
                let mut info: halReportRecvInfo = unsafe { user::read(arg) };
                if info.cqe_num == 0 {
                    return Err(Errno(libc::EINVAL));
                }
                let q = QueueId(info.cqId);
                if info.task_id != u32::MAX {
                    // The newest submitted task whose low 32 bits are `task_id`.
                    let submitted = self.sim.progress(dev, q).map_err(err)?.submitted;
                    let mut seq = (submitted & !0xffff_ffff) | u64::from(info.task_id);
                    if seq > submitted {
                        seq = seq.saturating_sub(1 << 32);
                    }
                    let timeout = u32::try_from(info.timeout).ok();
                    self.sim.wait(dev, q, seq, timeout).map_err(err)?;
                }
                let seq = self.sim.progress(dev, q).map_err(err)?.completed;
                let status = self.sim.take_error(dev, q).map_err(err)?.unwrap_or(TaskStatus::Ok);
                let image = Cqe { seq, status }.encode();
                // SAFETY: the caller's CQE buffer holds `cqe_num` (at least one) CQEs.
                unsafe { user::bytes_mut(info.cqe_addr, sqe::CQE_BYTES) }.copy_from_slice(&image);
                info.report_cqe_num = 1;
                // SAFETY: as above, writable.
                unsafe { user::write(arg, info) };
                Ok(0)
            }
            _ => Err(Errno(libc::ENOTTY)),
        }
    }
}

impl Transport for FakeKernel {
    fn loader(&self) -> Option<&dyn hal::Loader> {
        Some(&*self.sim)
    }

    fn open(&self, path: &CStr, _flags: i32) -> Result<RawFd, Errno> {
        if path.to_bytes() != abi::DAVINCI_MANAGER_PATH.as_bytes() {
            return Err(Errno(libc::ENOENT));
        }
        let mut st = self.lock();
        st.next_fd += 1;
        let fd = st.next_fd;
        st.fds.insert(fd, Binding::Unbound);
        Ok(fd)
    }

    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        let binding = self.lock().fds.remove(&fd).ok_or(Errno(libc::EBADF))?;
        if let Binding::Tsdrv(d) = binding {
            let last = {
                let mut st = self.lock();
                let users = st.device_users.entry(d).or_default();
                *users = users.saturating_sub(1);
                *users == 0
            };
            if last {
                self.device.queues().retain(|r| r.dev != DeviceId(d));
                // Like a driver's release of the last fd: drain and free what the process held.
                self.sim.close(DeviceId(d)).map_err(err)?;
            }
        }
        Ok(())
    }

    unsafe fn ioctl(&self, fd: RawFd, cmd: u32, arg: *mut c_void) -> Result<i32, Errno> {
        let binding = self.lock().fds.get(&fd).copied().ok_or(Errno(libc::EBADF))?;
        *self.lock().served.entry(cmd).or_default() += 1;
        match (binding, cmd) {
            (Binding::Unbound, abi::DAVINCI_INTF_IOCTL_OPEN) => {
                // SAFETY: the multiplexer's OPEN takes a `davinci_intf_open_arg`.
                let a: davinci_intf_open_arg = unsafe { user::read(arg) };
                self.bind(fd, &a)
            }
            (Binding::Svm, _) if abi::ioc_type(cmd) == abi::DEVMM_SVM_MAGIC => {
                if abi::ioc_size(cmd) != core::mem::size_of::<devmm_ioctl_arg>() {
                    // A caller of another release: the size is part of the number.
                    return Err(Errno(libc::ENOTTY));
                }
                // SAFETY: every SVM command takes a `devmm_ioctl_arg`.
                let mut a: devmm_ioctl_arg = unsafe { user::read(arg) };
                // SAFETY: the caller's contract covers the addresses inside.
                let rc = unsafe { self.svm(cmd, &mut a) }?;
                // Like the real driver, copy the argument back only for commands that read
                // (`_IOR`/`_IOWR`): a caller that expects output from an `_IOW` is caught.
                if abi::ioc_dir(cmd) & abi::IOC_READ != 0 {
                    // SAFETY: as above, writable.
                    unsafe { user::write(arg, a) };
                }
                Ok(rc)
            }
            // SAFETY: the caller's contract covers the argument and its addresses.
            (Binding::Tsdrv(d), _) if abi::ioc_type(cmd) == abi::TRS_MAGIC => unsafe {
                self.trs(DeviceId(d), cmd, arg)
            },
            _ => Err(Errno(libc::ENOTTY)),
        }
    }

    unsafe fn mmap(
        &self,
        hint: usize,
        len: usize,
        _prot: i32,
        _flags: i32,
        fd: RawFd,
    ) -> Result<usize, Errno> {
        let mut st = self.lock();
        match st.fds.get(&fd) {
            Some(Binding::Svm) => {
                st.mappings.insert(hint, len);
                Ok(hint)
            }
            Some(Binding::TsdrvMmap(_)) => {
                let mem = Arc::new(Anon::new(len)?);
                let addr = mem.addr();
                st.ring_maps.insert(addr, mem);
                Ok(addr)
            }
            Some(_) => Err(Errno(libc::EINVAL)),
            None => Err(Errno(libc::EBADF)),
        }
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        let mut st = self.lock();
        if let Some(mem) = st.ring_maps.get(&addr) {
            if mem.len() != len {
                return Err(Errno(libc::EINVAL));
            }
            // The pages live on while a queue still uses them.
            st.ring_maps.remove(&addr);
            return Ok(());
        }
        match st.mappings.remove(&addr) {
            Some(l) if l == len => Ok(()),
            _ => Err(Errno(libc::EINVAL)),
        }
    }

    /// Records the pause instead of spending it: the fake's next bind answers at once.
    fn pause(&self, pause: Duration) {
        self.lock().pauses.push(pause);
    }
}
