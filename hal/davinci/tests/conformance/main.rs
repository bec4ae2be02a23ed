//! The `hal` conformance suite on every backend: the software NPU directly, the davinci backend
//! over the fake kernel, and (ignored unless asked for) the davinci backend on the real driver.
//!
//! `cargo xtask hwtest --backend sim|davinci-fake|davinci` runs one of them.

mod suite;

use std::sync::{Mutex, MutexGuard};

use hal::davinci_abi as abi;
use hal::{DeviceControl, DeviceId};
use hal_davinci::fake::FakeKernel;
use hal_davinci::{Davinci, LibcTransport, QueueMode};
use hal_sim::{Sim, SimConfig};

/// The completed sequence of `q` and the failure taken from it (what one call answered before
/// reading progress and taking an error became two).
fn done<Q: hal::Queues + ?Sized>(drv: &Q, dev: hal::DeviceId, q: hal::QueueId) -> (u64, hal::TaskStatus) {
    let seq = drv.progress(dev, q).expect("progress").completed;
    (seq, drv.take_error(dev, q).expect("take error").unwrap_or(hal::TaskStatus::Ok))
}

/// One `Sim` per process at a time (it reserves fixed VA windows).
static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn start_sim(name: &str) -> Sim {
    Sim::new(SimConfig {
        instance: format!("conformance-{}-{name}", std::process::id()),
        hbm_bytes: 256 << 20,
        huge_budget_bytes: 64 << 20,
        giant_budget_bytes: 0,
        ..SimConfig::default()
    })
    .expect("start the software NPU")
}

#[test]
fn sim() {
    let _g = lock();
    let sim = start_sim("sim");
    sim.open(DeviceId(0)).expect("open");
    suite::run_suite(&sim);
}

/// The davinci backend over the fake kernel, in both queue modes (one test, so that
/// `cargo xtask hwtest --backend davinci-fake` runs both).
#[test]
fn davinci_fake() {
    let _g = lock();
    for mode in [QueueMode::KernelSend, QueueMode::MappedRing] {
        davinci_fake_in(mode);
    }
}

fn davinci_fake_in(mode: QueueMode) {
    let devices = 1;
    let drv = Davinci::with_queue_mode(FakeKernel::new(start_sim(&format!("fake-{mode:?}"))), devices, mode)
        .expect("open sequence over the fake kernel");
    assert_eq!(drv.queue_mode(), mode);
    drv.open(DeviceId(0)).expect("open");
    suite::run_suite(&drv);
    // The backend really went through the ABI.
    let k = drv.transport();
    let mut used = vec![
        abi::DAVINCI_INTF_IOCTL_OPEN,
        abi::DEVMM_SVM_GET_MMAP_INFO,
        abi::DEVMM_SVM_ADVISE,
        abi::DEVMM_SVM_FREE_PAGES,
        abi::DEVMM_SVM_MEMCPY,
        abi::DEVMM_SVM_MEMSET8,
        abi::DEVMM_SVM_MEM_MAP,
        abi::TRS_SQCQ_ALLOC,
        abi::TRS_SQCQ_FREE,
    ];
    if mode == QueueMode::KernelSend {
        used.extend([abi::TRS_SQCQ_SEND, abi::TRS_SQCQ_RECV]);
    }
    for cmd in used {
        assert!(k.served(cmd) > 0, "{mode:?}: command {cmd:#010x} never reached the fake kernel");
    }
    if mode == QueueMode::MappedRing {
        // No system call per task: submissions and completions went through the rings.
        for cmd in [abi::TRS_SQCQ_SEND, abi::TRS_SQCQ_RECV] {
            assert_eq!(k.served(cmd), 0, "{mode:?}: command {cmd:#010x} reached the kernel");
        }
        mapped_ring_extras(&drv);
    }
}

/// The mapped ring under pressure: more tasks than the ring holds (a submission that meets a
/// full ring waits for room, as `Queues::submit` says; it never answers `QueueFull`), from one
/// thread and from four at once, completions read back in order.
fn mapped_ring_extras(drv: &Davinci<FakeKernel>) {
    use hal::{BackRequest, DeviceAddr, MemAttr, PageSize, Queues, TaskDesc, TaskStatus, VaRange};
    let d0 = DeviceId(0);
    let base = hal::layout::device_window_base(0) + (1 << 30) + (64 << 20);
    let r = VaRange::try_new(DeviceAddr(base), 2 << 20).expect("range");
    hal::MemoryBacking::back(
        drv,
        d0,
        &BackRequest { range: r, page_size: PageSize::Huge, attrs: MemAttr::CACHED },
    )
    .expect("back");
    let q = drv.create_queue(d0, 4).expect("a shallow queue");
    let mut last = 0;
    for i in 0..200u64 {
        let task = TaskDesc::ValueWrite { dst: DeviceAddr(base + 8 * (i % 64)), value: i };
        last = drv.submit(d0, q, task).expect("a submission to a full ring waits for room");
    }
    assert_eq!(last, 200);
    drv.wait(d0, q, last, Some(10_000)).expect("wait");
    assert_eq!(done(drv, d0, q), (200, TaskStatus::Ok));
    let mut word = [0u8; 8];
    hal::CopyEngine::copy_from_device(drv, d0, &mut word, DeviceAddr(base + 8 * (199 % 64))).expect("read");
    assert_eq!(u64::from_ne_bytes(word), 199);
    drv.destroy_queue(d0, q).expect("destroy");
    // Four threads flood four shallow queues at once: every submission is taken, in order.
    let queues: Vec<_> = (0..4).map(|_| drv.create_queue(d0, 4).expect("a shallow queue")).collect();
    std::thread::scope(|sc| {
        for (t, &q) in queues.iter().enumerate() {
            sc.spawn(move || {
                for i in 0..300u64 {
                    let dst = DeviceAddr(base + 1024 + 8 * t as u64);
                    let seq = drv.submit(d0, q, TaskDesc::ValueWrite { dst, value: i }).expect("submit");
                    assert_eq!(seq, i + 1, "sequence numbers follow the submissions");
                }
            });
        }
    });
    for (t, &q) in queues.iter().enumerate() {
        drv.wait(d0, q, 300, Some(10_000)).expect("wait");
        assert_eq!(done(drv, d0, q), (300, TaskStatus::Ok));
        let mut word = [0u8; 8];
        hal::CopyEngine::copy_from_device(drv, d0, &mut word, DeviceAddr(base + 1024 + 8 * t as u64))
            .expect("read");
        assert_eq!(u64::from_ne_bytes(word), 299, "the last write landed last");
        drv.destroy_queue(d0, q).expect("destroy");
    }
    wait_before_its_record_reaches_the_device(drv, base);
    abort_with_sqes_still_in_the_ring(drv, base);
    hal::MemoryBacking::unback(drv, d0, r).expect("unback");
}

/// An abort of a mapped queue whose ring still holds SQEs the device has not taken: the
/// device queue is full behind a held head, four more SQEs wait in the ring. Every one of the
/// eight is dropped (the ring's become no-ops, keeping the numbering), an event recorded in
/// the ring part stays not complete, and the queue runs on.
fn abort_with_sqes_still_in_the_ring(drv: &Davinci<FakeKernel>, base: u64) {
    use hal::{AbortHead, DeviceAddr, Events, Queues, TaskDesc, WaitCompare};
    let d0 = DeviceId(0);
    let sim = drv.transport().sim();
    let (flag, word) = (DeviceAddr(base + 8192), DeviceAddr(base + 8200));
    hal::CopyEngine::set_device(drv, d0, flag, 0, 16).expect("clear");
    let (gate, q) = (drv.create_queue(d0, 4).expect("gate"), drv.create_queue(d0, 4).expect("shallow"));
    let (held, behind) = (drv.create_event(d0).expect("event"), drv.create_event(d0).expect("event"));
    drv.submit(d0, gate, TaskDesc::ValueWait { addr: flag, value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("hold the gate");
    drv.record_event(d0, gate, held).expect("record");
    drv.wait_event(d0, q, held).expect("wait");
    // The ring takes the fifth SQE once the device moved the first four into its queue (a
    // submission waits for room until then).
    let push = |task: TaskDesc| drv.submit(d0, q, task).expect("submit");
    for v in 1..=3 {
        push(TaskDesc::ValueWrite { dst: word, value: v });
    }
    push(TaskDesc::ValueWrite { dst: word, value: 4 });
    // Wait until the device moved the first four into its (then full) queue: a condition
    // only the device thread's progress changes; no time limit decides.
    let stuck = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while sim.progress(d0, q).expect("sim").submitted < 4 {
        assert!(std::time::Instant::now() < stuck, "the device thread never took the SQEs");
        std::thread::yield_now();
    }
    // Two SQEs (its timestamp and the record itself), then one more write: eight in all.
    let rec = drv.record_event(d0, q, behind).expect("record");
    let last = push(TaskDesc::ValueWrite { dst: word, value: 7 });
    assert_eq!((rec, last), (7, 8));
    // Eight SQEs, at most four in the ring: the device queue (depth 4) is full.
    assert_eq!(sim.progress(d0, q).expect("sim").submitted, 4, "four SQEs are still in the ring");
    let dropped = drv.abort_queue(d0, q, AbortHead::Runs);
    let early = drv.event_info(d0, behind).map(|i| i.is_complete);
    // Release the gate before judging, so that a failure does not leave a held queue behind.
    hal::CopyEngine::copy_to_device(drv, d0, flag, &1u64.to_le_bytes()).expect("release the gate");
    assert_eq!(dropped.expect("abort"), 8);
    assert!(!early.expect("info"));
    // The ring takes it once the device moved the no-ops out.
    let m = push(TaskDesc::Marker);
    assert_eq!(m, 9, "the numbering goes on");
    drv.wait(d0, q, m, Some(10_000)).expect("the queue runs on");
    let mut got = [0u8; 8];
    hal::CopyEngine::copy_from_device(drv, d0, &mut got, word).expect("read");
    assert_eq!(u64::from_ne_bytes(got), 0, "a dropped write landed");
    assert!(!drv.event_info(d0, behind).expect("info").is_complete);
    assert!(drv.event_info(d0, held).expect("info").is_complete);
    for ev in [held, behind] {
        drv.destroy_event(d0, ev).expect("destroy event");
    }
    for q in [gate, q] {
        drv.destroy_queue(d0, q).expect("destroy");
    }
}

/// With several rings the device may take a queue's event wait before the record it names
/// (the recording queue's SQEs still sit in its ring): the wait must hold all the same.
fn wait_before_its_record_reaches_the_device(drv: &Davinci<FakeKernel>, base: u64) {
    use hal::{DeviceAddr, Events, Queues, TaskDesc, TaskStatus, WaitCompare};
    let d0 = DeviceId(0);
    let sim = drv.transport().sim();
    let flag = DeviceAddr(base + 4096);
    hal::CopyEngine::set_device(drv, d0, flag, 0, 16).expect("clear");
    let (a, b) = (drv.create_queue(d0, 4).expect("shallow A"), drv.create_queue(d0, 64).expect("B"));
    let ev = drv.create_event(d0).expect("event");
    drv.submit(d0, a, TaskDesc::ValueWait { addr: flag, value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("hold A");
    // Fill A until its device queue is full and one more SQE sits in A's ring. A is held, so
    // its device queue stays full and every later SQE of A stays in the ring until A is
    // released. Each step waits for a condition only the device thread's progress changes
    // (it took the last marker, or the device queue is full); no time limit decides.
    let backlog = |_: ()| {
        drv.progress(d0, a).expect("submitted").submitted > sim.progress(d0, a).expect("sim").submitted
    };
    let room = |_: ()| sim.has_room(d0, a).expect("room");
    let fill = |_: ()| {
        // Only a device thread that stopped serving rings trips this; it fails, never passes.
        let stuck = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match (backlog(()), room(())) {
                // Full, and an SQE waits in the ring: backed up.
                (true, false) => return,
                // Full, and the ring is empty: one more SQE stays in the ring.
                (false, false) => {
                    drv.submit(d0, a, TaskDesc::Marker).expect("marker");
                    return;
                }
                (false, true) => {
                    drv.submit(d0, a, TaskDesc::Marker).expect("marker");
                }
                // The device thread has an SQE to take and room for it.
                (true, true) => {
                    assert!(std::time::Instant::now() < stuck, "the device thread never took A's SQE");
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        }
    };
    fill(());
    assert!(backlog(()), "A's ring never backed up");
    // A writes 5 just before its record, B writes 9 just after its wait: the word ends at 9
    // only if B's write ran after A's record.
    let word = DeviceAddr(flag.0 + 8);
    drv.submit(d0, a, TaskDesc::ValueWrite { dst: word, value: 5 }).expect("A's write");
    let rec = drv.record_event(d0, a, ev).expect("record");
    assert!(sim.progress(d0, a).expect("sim").submitted < rec, "the record is still in A's ring");
    drv.wait_event(d0, b, ev).expect("wait");
    let write = drv.submit(d0, b, TaskDesc::ValueWrite { dst: word, value: 9 }).expect("write");
    // Wait until the device took B's wait and write (A's record is still in A's ring).
    let stuck = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while sim.progress(d0, b).expect("sim").submitted < write {
        assert!(std::time::Instant::now() < stuck, "the device thread never took B's SQEs");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let early = done(drv, d0, b).0 >= write;
    // Release A before judging, so that a failure does not leave a held queue behind.
    hal::CopyEngine::copy_to_device(drv, d0, flag, &1u64.to_le_bytes()).expect("release A");
    assert!(!early, "B ran before A's record");
    drv.wait(d0, b, write, Some(10_000)).expect("B ran after A's record");
    assert_eq!(done(drv, d0, b), (write, TaskStatus::Ok));
    let mut got = [0u8; 8];
    hal::CopyEngine::copy_from_device(drv, d0, &mut got, word).expect("read");
    assert_eq!(u64::from_ne_bytes(got), 9, "B's write ran before A's record");
    drv.destroy_event(d0, ev).expect("destroy");

    // A full ring does not stall the others: A is held until B's write, which sits in B's
    // ring behind nothing, while A's ring is backed up.
    let hold = DeviceAddr(flag.0 + 16);
    hal::CopyEngine::set_device(drv, d0, hold, 0, 8).expect("clear");
    drv.submit(d0, a, TaskDesc::ValueWait { addr: hold, value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("hold A");
    fill(());
    assert!(backlog(()), "A's ring never backed up");
    let a_last = drv.progress(d0, a).expect("submitted").submitted;
    drv.submit(d0, b, TaskDesc::ValueWrite { dst: hold, value: 1 }).expect("B releases A");
    let freed = drv.wait(d0, a, a_last, Some(10_000));
    if freed.is_err() {
        // Release A by hand so the queues can go.
        hal::CopyEngine::copy_to_device(drv, d0, hold, &1u64.to_le_bytes()).expect("release A");
    }
    freed.expect("B's write reached the device while A's ring was backed up");
    for q in [a, b] {
        drv.destroy_queue(d0, q).expect("destroy");
    }
}

/// Name-based IPC through the SVM commands: create, whitelist, open and close. A process
/// cannot open its own share (the driver refuses the exporter), so this checks the refusal
/// and the round trip of the name; an open by a second process is not exercised here.
#[test]
fn davinci_fake_ipc() {
    use hal::{
        BackRequest, DeviceAddr, ErrorKind, MemAttr, MemoryBacking, PageSize, ShareKind, Sharing, VaRange,
    };
    let _g = lock();
    let drv = Davinci::new(FakeKernel::new(start_sim("ipc")), 1).expect("open sequence");
    let d0 = DeviceId(0);
    drv.open(d0).expect("open");
    let base = hal::layout::device_window_base(0) + (1 << 30);
    let r = VaRange::try_new(DeviceAddr(base), 2 << 20).expect("range");
    drv.back(d0, &BackRequest { range: r, page_size: PageSize::Huge, attrs: MemAttr::CACHED }).expect("back");
    let name = drv.export_range(d0, r, ShareKind::Key, false).expect("IPC_MEM_CREATE");
    assert_eq!(drv.transport().sim().share_info(&name).expect("the share exists").len_bytes, 2 << 20);
    drv.set_share_pids(&name, &[drv.process_id() + 1]).expect("IPC_MEM_SET_PID");
    assert_eq!(
        drv.ipc_open(d0, &name, DeviceAddr(base + (32 << 20))).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    assert_eq!(drv.ipc_close(d0, DeviceAddr(base)).unwrap_err().kind(), ErrorKind::InvalidHandle);
    assert_eq!(
        drv.export_range(d0, r, ShareKind::Handle, false).unwrap_err().kind(),
        ErrorKind::NotSupported
    );
    // Importing names the share (IPC_MEM_QUERY); mapping it is the open, which the
    // whitelist refuses to the exporter itself.
    let (h, info) = drv.import_share(&name, d0).expect("IPC_MEM_QUERY");
    assert_eq!((info.len_bytes, info.exporter_pid), (2 << 20, drv.process_id()));
    let at = VaRange::try_new(DeviceAddr(base + (64 << 20)), 2 << 20).expect("range");
    assert_eq!(
        hal::PhysicalMemory::map_physical(&drv, d0, h, 0, at).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    hal::PhysicalMemory::free_physical(&drv, d0, h).expect("forget the import");
    drv.destroy_share(&name).expect("IPC_MEM_DESTROY");
    assert_eq!(drv.share_info(&name).unwrap_err().kind(), ErrorKind::InvalidHandle);
    let k = drv.transport();
    for cmd in [
        abi::DEVMM_SVM_IPC_MEM_CREATE,
        abi::DEVMM_SVM_IPC_MEM_SET_PID,
        abi::DEVMM_SVM_IPC_MEM_OPEN,
        abi::DEVMM_SVM_IPC_MEM_CLOSE,
        abi::DEVMM_SVM_IPC_MEM_QUERY,
        abi::DEVMM_SVM_IPC_MEM_DESTROY,
    ] {
        assert!(k.served(cmd) > 0, "command {cmd:#010x} never reached the fake kernel");
    }
    drv.unback(d0, r).expect("unback");
}

/// Handle-based sharing through the VMM commands: export (`MEM_EXPORT`, and `MEM_SET_ATTR`
/// without a whitelist), whitelist (`MEM_SET_PID`, the pids read from user memory), query
/// (`MEM_GET_INFO`), the exporter's own import refused, and the share ending with its handle
/// (`MEM_RELEASE`). An import by a second process runs in `tests/tests/ipc.rs`.
#[test]
fn davinci_fake_shareable_handles() {
    use hal::{ErrorKind, MemAttr, PageSize, PhysicalMemory, ShareKind, Sharing};
    let _g = lock();
    let drv = Davinci::new(FakeKernel::new(start_sim("handles")), 1).expect("open sequence");
    let d0 = DeviceId(0);
    drv.open(d0).expect("open");
    let h = drv.alloc_physical(d0, 4 << 20, PageSize::Huge, MemAttr::CACHED).expect("MEM_CREATE");
    let name = drv.export_physical(d0, h, ShareKind::Handle, false).expect("MEM_EXPORT");
    let value = u64::from_str_radix(name.as_str(), 16).expect("16 hex digits");
    assert_eq!(value >> 48, 0x5348, "tagged: {value:#x}");
    assert_eq!(
        drv.export_physical(d0, h, ShareKind::Handle, false).unwrap_err().kind(),
        ErrorKind::Busy,
        "a handle exports once"
    );
    assert_eq!(
        drv.export_physical(d0, hal::PhysHandle(999), ShareKind::Handle, false).unwrap_err().kind(),
        ErrorKind::InvalidHandle
    );
    let info = drv.share_info(&name).expect("MEM_GET_INFO");
    assert_eq!((info.physical_device, info.len_bytes, info.page_size), (0, 4 << 20, PageSize::Huge));
    assert_eq!(info.exporter_pid, drv.process_id());
    drv.set_share_pids(&name, &[drv.process_id() + 1, drv.process_id() + 2]).expect("MEM_SET_PID");
    // The fake kernel read both pids from user memory into the software NPU's whitelist.
    let sim_name = hal::ShareName::try_new(format!("{:016x}", value & 0xFFFF_FFFF).as_bytes()).expect("name");
    let sim = drv.transport().sim();
    assert_eq!(sim.share_info(&sim_name).expect("the sim's share").len_bytes, 4 << 20);
    assert_eq!(drv.set_share_pids(&name, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(drv.import_share(&name, d0).unwrap_err().kind(), ErrorKind::PermissionDenied);
    assert_eq!(drv.destroy_share(&name).unwrap_err().kind(), ErrorKind::NotSupported);

    // Without a whitelist: MEM_SET_ATTR; the share ends with the handle.
    let h2 = drv.alloc_physical(d0, 2 << 20, PageSize::Huge, MemAttr::CACHED).expect("MEM_CREATE");
    let open = drv.export_physical(d0, h2, ShareKind::Handle, true).expect("MEM_EXPORT + MEM_SET_ATTR");
    drv.free_physical(d0, h2).expect("MEM_RELEASE");
    assert_eq!(drv.share_info(&open).unwrap_err().kind(), ErrorKind::InvalidHandle);
    drv.free_physical(d0, h).expect("MEM_RELEASE");
    assert_eq!(drv.share_info(&name).unwrap_err().kind(), ErrorKind::InvalidHandle);
    let k = drv.transport();
    for cmd in [
        abi::DEVMM_SVM_MEM_EXPORT,
        abi::DEVMM_SVM_MEM_SET_ATTR,
        abi::DEVMM_SVM_MEM_SET_PID,
        abi::DEVMM_SVM_MEM_GET_INFO,
        abi::DEVMM_SVM_MEM_IMPORT,
        abi::DEVMM_SVM_MEM_RELEASE,
    ] {
        assert!(k.served(cmd) > 0, "command {cmd:#010x} never reached the fake kernel");
    }
}

/// A module that is still busy (`EBUSY` on bind) is retried every 100 ms, as the driver's
/// library does, and the open sequence then succeeds. The fake records the pauses the backend
/// asks for instead of spending them.
#[test]
fn davinci_fake_module_busy_is_retried() {
    let _g = lock();
    let kernel = FakeKernel::new(start_sim("busy"));
    kernel.refuse_binds_busy(3);
    let drv = Davinci::new(kernel, 1).expect("the open sequence outlasts a busy module");
    assert_eq!(
        drv.transport().pauses(),
        [std::time::Duration::from_millis(100); 3],
        "three pauses of 100 ms"
    );
    assert_eq!(drv.transport().served(abi::DAVINCI_INTF_IOCTL_OPEN), 4, "three refusals, one bind");
    drv.open(DeviceId(0)).expect("open");
}

/// A driver of another release (here: a kernel that does not know the pinned commands) is
/// refused with a message naming the pinned release.
#[test]
fn davinci_refuses_an_unknown_abi() {
    struct Stranger;
    impl hal_davinci::Transport for Stranger {
        fn loader(&self) -> Option<&dyn hal::Loader> {
            None
        }
        fn open(&self, _: &std::ffi::CStr, _: i32) -> Result<i32, hal_davinci::Errno> {
            Ok(3)
        }
        fn close(&self, _: i32) -> Result<(), hal_davinci::Errno> {
            Ok(())
        }
        unsafe fn ioctl(
            &self,
            _: i32,
            cmd: u32,
            _: *mut core::ffi::c_void,
        ) -> Result<i32, hal_davinci::Errno> {
            if cmd == abi::DAVINCI_INTF_IOCTL_OPEN {
                Ok(0)
            } else {
                Err(hal_davinci::Errno(libc_enotty()))
            }
        }
        unsafe fn mmap(
            &self,
            _: usize,
            _: usize,
            _: i32,
            _: i32,
            _: i32,
        ) -> Result<usize, hal_davinci::Errno> {
            Err(hal_davinci::Errno(libc_enotty()))
        }
        unsafe fn munmap(&self, _: usize, _: usize) -> Result<(), hal_davinci::Errno> {
            Ok(())
        }
    }
    let e = Davinci::new(Stranger, 1).unwrap_err();
    let text = e.to_string();
    assert!(text.contains(abi::PINNED_RELEASE) && text.contains("refusing"), "{text}");
}

fn libc_enotty() -> i32 {
    25
}

/// The real driver: run with `--ignored` (by `cargo xtask hwtest --backend davinci`, which
/// says it skipped, and why, on a machine without `/dev/davinci_manager`). By default the
/// harness reports it ignored, with the reason; asked for explicitly, it fails when the driver
/// is not usable rather than passing without having run.
#[test]
#[ignore = "needs /dev/davinci_manager (cargo xtask hwtest --backend davinci)"]
fn davinci_real() {
    if let Err(why) = hal_davinci::probe() {
        panic!("davinci_real was asked for, but the Ascend driver is not usable here: {why}");
    }
    let drv = Davinci::new(LibcTransport, 1).expect("open sequence");
    drv.open(DeviceId(0)).expect("open");
    suite::run_suite(&drv);
}
