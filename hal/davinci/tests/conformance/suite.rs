//! The conformance suite of the `hal` driver traits: one body of checks any backend must pass.
//!
//! It takes `&dyn Driver` with device 0 open, and uses what every backend must offer: device
//! and memory queries, backing and unbacking VA, VMM create/map/unmap/free, pinned host memory,
//! synchronous copies and sets, task queues with copies, sets, value writes and waits,
//! and events (record, wait, order, timestamps). (Failure modes are checked through the C
//! programs, which `cargo xtask hwtest` runs on the same backend.)

use hal::layout::device_window_base;
use hal::{
    AbortHead, BackRequest, DeviceAddr, DeviceId, Driver, ErrorKind, MemAttr, PageSize, QueueId, TaskDesc,
    TaskStatus, VaRange, WaitCompare,
};

/// The completed sequence of `q` and the failure taken from it (what one call answered before
/// reading progress and taking an error became two).
fn done<Q: hal::Queues + ?Sized>(drv: &Q, dev: hal::DeviceId, q: hal::QueueId) -> (u64, TaskStatus) {
    let seq = drv.progress(dev, q).expect("progress").completed;
    (seq, drv.take_error(dev, q).expect("take error").unwrap_or(TaskStatus::Ok))
}

const D0: DeviceId = DeviceId(0);
const MIB: u64 = 1 << 20;

fn va(offset: u64) -> DeviceAddr {
    DeviceAddr(device_window_base(0) + (1 << 30) + offset)
}

fn range(offset: u64, len: u64) -> VaRange {
    VaRange::try_new(va(offset), len).expect("range")
}

fn back(drv: &dyn Driver, r: VaRange, page_size: PageSize) {
    drv.back(D0, &BackRequest { range: r, page_size, attrs: MemAttr::CACHED }).expect("back");
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Runs every check against `drv`; device 0 must be open. Panics on the first failure.
pub(crate) fn run_suite(drv: &dyn Driver) {
    control(drv);
    memory(drv);
    vmm(drv);
    pinned(drv);
    queues(drv);
    events(drv);
    abort_drops_what_has_not_started(drv);
}

fn control(drv: &dyn Driver) {
    assert!(drv.device_count() >= 1);
    drv.open(D0).expect("opening an open device does nothing");
    let past = DeviceId(drv.device_count());
    assert_eq!(drv.open(past).unwrap_err().kind(), ErrorKind::NoDevice);
    let info = drv.device_info(D0).expect("device info");
    let mem = drv.memory_info(D0).expect("memory info");
    assert!(info.hbm_bytes > 0 && info.hbm_bytes == mem.total_bytes, "{info:?} {mem:?}");
    assert!(mem.free_bytes <= mem.total_bytes && mem.huge_free_bytes <= mem.huge_total_bytes);
    // Backing memory moves the free figure by exactly its size.
    let r = range(0, 2 * MIB);
    back(drv, r, PageSize::Huge);
    assert_eq!(drv.memory_info(D0).expect("memory info").free_bytes, mem.free_bytes - 2 * MIB);
    drv.unback(D0, r).expect("unback");
    assert_eq!(drv.memory_info(D0).expect("memory info").free_bytes, mem.free_bytes);
}

fn pinned(drv: &dyn Driver) {
    let host =
        VaRange::try_new(DeviceAddr(hal::layout::host_window_base() + (64 << 20)), 64 << 10).expect("range");
    drv.back_host(host).expect("pin host memory");
    let data = pattern(8192, 3);
    drv.write_host(host.start(), &data).expect("write pinned");
    let mut out = vec![0u8; data.len()];
    drv.read_host(&mut out, host.start()).expect("read pinned");
    assert_eq!(out, data);
    // Pinned to device and back, and a fill of pinned memory, on the copy engine.
    let r = range(0, 2 * MIB);
    back(drv, r, PageSize::Huge);
    drv.copy_any(va(0), host.start(), 8192).expect("pinned to device");
    drv.set_any(host.start(), 0x5a, 8192).expect("fill pinned");
    drv.copy_any(DeviceAddr(host.start().as_u64() + 8192), va(0), 8192).expect("device to pinned");
    drv.read_host(&mut out, DeviceAddr(host.start().as_u64() + 8192)).expect("read pinned");
    assert_eq!(out, data);
    drv.read_host(&mut out, host.start()).expect("read pinned");
    assert!(out.iter().all(|&b| b == 0x5a));
    assert_eq!(drv.write_host(DeviceAddr(1 << 20), &data).unwrap_err().kind(), ErrorKind::InvalidHandle);
    drv.unback(D0, r).expect("unback");
    drv.unback_host(host).expect("unpin");
}

fn events(drv: &dyn Driver) {
    let r = range(0, 2 * MIB);
    back(drv, r, PageSize::Huge);
    let (a, b) = (drv.create_queue(D0, 64).expect("queue"), drv.create_queue(D0, 64).expect("queue"));
    let ev = drv.create_event(D0).expect("event");
    let info = drv.event_info(D0, ev).expect("info");
    assert!(info.point.is_none() && !info.is_complete);
    // B waits on a flag only A's later write sets, ordered through the event.
    drv.set_device(D0, va(0), 0, 16).expect("clear");
    drv.submit(D0, a, TaskDesc::ValueWait { addr: va(8), value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("hold A");
    drv.submit(D0, a, TaskDesc::ValueWrite { dst: va(0), value: 7 }).expect("write");
    let rec = drv.record_event(D0, a, ev).expect("record");
    drv.wait_event(D0, b, ev).expect("wait");
    assert!(drv.is_ordered_before(D0, a, rec, b).expect("order"), "B follows A's record");
    assert!(!drv.is_ordered_before(D0, b, 1, a).expect("order"), "A does not follow B");
    let after = drv.submit(D0, b, TaskDesc::Copy { dst: va(16), src: va(0), len_bytes: 8 }).expect("copy");
    assert!(!drv.event_info(D0, ev).expect("info").is_complete, "A is held");
    drv.copy_to_device(D0, va(8), &1u64.to_le_bytes()).expect("release A");
    drv.wait(D0, b, after, Some(10_000)).expect("B ran");
    let mut w = [0u8; 8];
    drv.copy_from_device(D0, &mut w, va(16)).expect("read");
    assert_eq!(u64::from_le_bytes(w), 7, "B's copy ran after A's write");
    drv.wait(D0, a, drv.progress(D0, a).expect("submitted").submitted, Some(10_000)).expect("A ran");
    let first = drv.event_info(D0, ev).expect("info");
    assert!(first.is_complete && first.point == Some((a, rec)));
    let t1 = first.timestamp_ns.expect("a completed record has a timestamp");
    let rec2 = drv.record_event(D0, a, ev).expect("record again");
    drv.wait(D0, a, drv.progress(D0, a).expect("submitted").submitted, Some(10_000)).expect("A ran");
    let second = drv.event_info(D0, ev).expect("info");
    assert_eq!(second.point, Some((a, rec2)));
    assert!(second.timestamp_ns.expect("timestamp") >= t1, "device time runs forward");
    // A reset takes effect when it runs, in its queue's order: behind a held task the event
    // still reads as recorded.
    drv.set_device(D0, va(8), 0, 8).expect("re-arm the hold");
    drv.submit(D0, a, TaskDesc::ValueWait { addr: va(8), value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("hold A");
    drv.reset_event(D0, a, ev).expect("reset");
    let held = drv.event_info(D0, ev).expect("info");
    assert!(held.is_complete && held.point == Some((a, rec2)), "the reset has not run: {held:?}");
    drv.copy_to_device(D0, va(8), &1u64.to_le_bytes()).expect("release A");
    drv.wait(D0, a, drv.progress(D0, a).expect("submitted").submitted, Some(10_000)).expect("the reset ran");
    assert!(drv.event_info(D0, ev).expect("info").point.is_none());
    // A wait on an event that is not recorded holds nothing.
    drv.wait_event(D0, b, ev).expect("wait on nothing");
    let m = drv.submit(D0, b, TaskDesc::Marker).expect("marker");
    drv.wait(D0, b, m, Some(10_000)).expect("B is not held");
    drv.destroy_event(D0, ev).expect("destroy");
    assert_eq!(drv.event_info(D0, ev).unwrap_err().kind(), ErrorKind::InvalidHandle);
    // An event destroyed while a queued record and wait still name it: the handle dies at
    // once, the queues run on untroubled (the device reads those tasks later).
    let ev2 = drv.create_event(D0).expect("event");
    drv.set_device(D0, va(8), 0, 8).expect("re-arm the hold");
    drv.submit(D0, a, TaskDesc::ValueWait { addr: va(8), value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("hold A");
    drv.record_event(D0, a, ev2).expect("record");
    drv.wait_event(D0, b, ev2).expect("wait");
    let b_after = drv.submit(D0, b, TaskDesc::Marker).expect("marker");
    drv.destroy_event(D0, ev2).expect("destroy while queued");
    assert_eq!(drv.event_info(D0, ev2).unwrap_err().kind(), ErrorKind::InvalidHandle);
    assert_eq!(drv.record_event(D0, a, ev2).unwrap_err().kind(), ErrorKind::InvalidHandle);
    let other = drv.create_event(D0).expect("another event meanwhile");
    drv.copy_to_device(D0, va(8), &1u64.to_le_bytes()).expect("release A");
    drv.wait(D0, b, b_after, Some(10_000)).expect("B ran after A's record");
    let a_last = drv.progress(D0, a).expect("submitted").submitted;
    drv.wait(D0, a, a_last, Some(10_000)).expect("A ran");
    assert_eq!(done(drv, D0, a), (a_last, TaskStatus::Ok));
    assert_eq!(done(drv, D0, b).1, TaskStatus::Ok);
    drv.destroy_event(D0, other).expect("destroy");
    for q in [a, b] {
        drv.destroy_queue(D0, q).expect("destroy");
    }
    drv.unback(D0, r).expect("unback");
}

fn memory(drv: &dyn Driver) {
    // Huge pages: copy in, copy out, set, copy within.
    let r = range(0, 2 * MIB);
    back(drv, r, PageSize::Huge);
    let data = pattern(64 << 10, 7);
    drv.copy_to_device(D0, va(4096), &data).expect("copy to device");
    let mut out = vec![0u8; data.len()];
    drv.copy_from_device(D0, &mut out, va(4096)).expect("copy from device");
    assert_eq!(out, data);
    drv.set_device(D0, va(4096 + 100), 0xa5, 300).expect("set");
    drv.copy_from_device(D0, &mut out, va(4096)).expect("copy from device");
    assert!(out[100..400].iter().all(|&b| b == 0xa5));
    assert_eq!(out[..100], data[..100]);
    assert_eq!(out[400..], data[400..]);
    drv.copy_device(D0, va(MIB), D0, va(4096), 4096).expect("copy within the device");
    let mut moved = vec![0u8; 4096];
    drv.copy_from_device(D0, &mut moved, va(MIB)).expect("copy from device");
    assert_eq!(moved, out[..4096]);
    drv.unback(D0, r).expect("unback");

    // Unbacked bytes are an error, never a crash.
    let e = drv.copy_to_device(D0, va(0), &data).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::InvalidHandle | ErrorKind::InvalidArgument), "{e}");
    assert!(drv.unback(D0, r).is_err(), "unback twice");

    // Normal pages and a misaligned request.
    let small = range(4 * MIB, 64 << 10);
    back(drv, small, PageSize::Normal);
    drv.set_device(D0, small.start(), 0x11, small.len_bytes()).expect("set");
    let mut b = vec![0u8; 64 << 10];
    drv.copy_from_device(D0, &mut b, small.start()).expect("copy from device");
    assert!(b.iter().all(|&x| x == 0x11));
    drv.unback(D0, small).expect("unback");
    let bad = BackRequest { range: range(4096, 2 * MIB), page_size: PageSize::Huge, attrs: MemAttr::CACHED };
    assert_eq!(drv.back(D0, &bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

fn vmm(drv: &dyn Driver) {
    let h = drv.alloc_physical(D0, 2 * MIB, PageSize::Huge, MemAttr::CACHED).expect("alloc physical");
    let r = range(8 * MIB, 2 * MIB);
    drv.map_physical(D0, h, 0, r).expect("map");
    let data = pattern(8192, 3);
    drv.copy_to_device(D0, r.start(), &data).expect("copy to mapped");
    let mut out = vec![0u8; data.len()];
    drv.copy_from_device(D0, &mut out, r.start()).expect("copy from mapped");
    assert_eq!(out, data);
    drv.unmap_physical(D0, r).expect("unmap");
    assert!(drv.unmap_physical(D0, r).is_err(), "unmap twice");
    drv.free_physical(D0, h).expect("free physical");
}

fn queues(drv: &dyn Driver) {
    let r = range(16 * MIB, 2 * MIB);
    back(drv, r, PageSize::Huge);
    let q: QueueId = drv.create_queue(D0, 64).expect("create queue");
    let data = pattern(4096, 9);
    drv.copy_to_device(D0, r.start(), &data).expect("copy to device");
    let s1 = drv
        .submit(D0, q, TaskDesc::Memset { dst: va(16 * MIB + 8192), value: 0x5a, len_bytes: 4096 })
        .expect("submit");
    let s2 = drv
        .submit(D0, q, TaskDesc::Copy { dst: va(16 * MIB + 16384), src: r.start(), len_bytes: 4096 })
        .expect("submit");
    let s3 =
        drv.submit(D0, q, TaskDesc::ValueWrite { dst: va(16 * MIB + 32768), value: 77 }).expect("submit");
    let s4 = drv.submit(D0, q, TaskDesc::Marker).expect("submit");
    assert_eq!((s1, s2, s3, s4), (1, 2, 3, 4), "sequence numbers count from 1");
    drv.wait(D0, q, s4, Some(10_000)).expect("wait");
    let (done, status) = done(drv, D0, q);
    assert!(done >= s4);
    assert_eq!(status, TaskStatus::Ok);
    assert_eq!(drv.progress(D0, q).expect("submitted").submitted, 4);
    let mut out = vec![0u8; 4096];
    drv.copy_from_device(D0, &mut out, va(16 * MIB + 8192)).expect("read");
    assert!(out.iter().all(|&b| b == 0x5a));
    drv.copy_from_device(D0, &mut out, va(16 * MIB + 16384)).expect("read");
    assert_eq!(out, data);
    let mut word = [0u8; 8];
    drv.copy_from_device(D0, &mut word, va(16 * MIB + 32768)).expect("read");
    assert_eq!(u64::from_ne_bytes(word), 77);

    // A wait that cannot finish times out; a value written from another queue releases it.
    let flag = va(16 * MIB + 65536);
    drv.set_device(D0, flag, 0, 8).expect("clear flag");
    let s = drv
        .submit(D0, q, TaskDesc::ValueWait { addr: flag, value: 1, compare: WaitCompare::GreaterOrEqual })
        .expect("submit");
    assert_eq!(drv.wait(D0, q, s, Some(50)).unwrap_err().kind(), ErrorKind::Timeout);
    let other = drv.create_queue(D0, 8).expect("second queue");
    let w = drv.submit(D0, other, TaskDesc::ValueWrite { dst: flag, value: 1 }).expect("submit");
    drv.wait(D0, other, w, Some(10_000)).expect("wait for the write");
    drv.wait(D0, q, s, Some(10_000)).expect("the wait is released");

    drv.destroy_queue(D0, other).expect("destroy");
    drv.destroy_queue(D0, q).expect("destroy");
    assert_eq!(drv.submit(D0, q, TaskDesc::Marker).unwrap_err().kind(), ErrorKind::InvalidHandle);
    drv.unback(D0, r).expect("unback");
    progress_keeps_the_error(drv);
}

/// A failed task's status stays until `take_error` takes it, however often progress is read.
fn progress_keeps_the_error(drv: &dyn Driver) {
    let q = drv.create_queue(D0, 16).expect("queue");
    // A source that is no device or pinned memory at all.
    let bad = drv
        .submit(D0, q, TaskDesc::Copy { dst: va(0), src: DeviceAddr(0x1000), len_bytes: 16 })
        .expect("submit");
    drv.wait(D0, q, bad, Some(10_000)).expect("ran");
    for _ in 0..3 {
        let p = drv.progress(D0, q).expect("progress");
        assert_eq!((p.submitted, p.completed), (bad, bad));
    }
    let taken = drv.take_error(D0, q).expect("take");
    assert!(matches!(taken, Some(TaskStatus::Failed(_) | TaskStatus::Fault(_))), "the failure: {taken:?}");
    assert_eq!(drv.take_error(D0, q).expect("take"), None, "taken once");
    let m = drv.submit(D0, q, TaskDesc::Marker).expect("marker");
    drv.wait(D0, q, m, Some(10_000)).expect("the queue runs on");
    assert_eq!(done(drv, D0, q), (m, TaskStatus::Ok));
    drv.destroy_queue(D0, q).expect("destroy");
}

/// Aborting a queue drops every task it has not started, with either rule for its head: here
/// the head is an event wait whose record (on a queue held by a value wait) has not run, so
/// its dependency is not met and nothing on the queue can have started. The event recorded
/// behind it stays not complete, the writes behind it never land, and the queue runs on.
fn abort_drops_what_has_not_started(drv: &dyn Driver) {
    let r = range(20 * MIB, 2 * MIB);
    back(drv, r, PageSize::Huge);
    let (flag, word) = (va(20 * MIB), va(20 * MIB + 4096));
    for head in [AbortHead::Cancel, AbortHead::Runs] {
        drv.set_device(D0, flag, 0, 8).expect("clear flag");
        drv.set_device(D0, word, 0, 8).expect("clear word");
        let gate = drv.create_queue(D0, 8).expect("gate queue");
        let q = drv.create_queue(D0, 8).expect("queue");
        let (held, behind) = (drv.create_event(D0).expect("event"), drv.create_event(D0).expect("event"));
        drv.submit(
            D0,
            gate,
            TaskDesc::ValueWait { addr: flag, value: 1, compare: WaitCompare::GreaterOrEqual },
        )
        .expect("submit");
        drv.record_event(D0, gate, held).expect("record");
        drv.wait_event(D0, q, held).expect("wait event");
        drv.record_event(D0, q, behind).expect("record");
        for v in 1..=3 {
            drv.submit(D0, q, TaskDesc::ValueWrite { dst: word, value: v }).expect("submit");
        }
        let submitted = drv.progress(D0, q).expect("progress").submitted;
        let dropped = drv.abort_queue(D0, q, head).map(|n| u64::try_from(n).expect("count"));
        let early = drv.event_info(D0, behind).map(|i| i.is_complete);
        // Release the gate before judging (a held queue would outlive a failed check): nothing
        // dropped may run late.
        let w = drv.submit(D0, gate, TaskDesc::Marker).expect("submit");
        drv.set_device(D0, flag, 1, 1).expect("release");
        drv.wait(D0, gate, w, Some(10_000)).expect("the gate runs");
        assert_eq!(dropped.expect("abort"), submitted, "{head:?}: every task is dropped");
        assert!(!early.expect("info"), "{head:?}: the dropped record");
        assert!(drv.event_info(D0, held).expect("info").is_complete);
        let m = drv.submit(D0, q, TaskDesc::Marker).expect("the queue takes tasks again");
        drv.wait(D0, q, m, Some(10_000)).expect("and runs them");
        let mut out = [0u8; 8];
        drv.copy_from_device(D0, &mut out, word).expect("read");
        assert_eq!(u64::from_ne_bytes(out), 0, "{head:?}: a dropped write landed");
        assert!(!drv.event_info(D0, behind).expect("info").is_complete, "{head:?}: the dropped record");
        let w = drv.submit(D0, q, TaskDesc::ValueWrite { dst: word, value: 9 }).expect("submit");
        drv.wait(D0, q, w, Some(10_000)).expect("wait");
        drv.copy_from_device(D0, &mut out, word).expect("read");
        assert_eq!(u64::from_ne_bytes(out), 9);
        for ev in [held, behind] {
            drv.destroy_event(D0, ev).expect("destroy event");
        }
        drv.destroy_queue(D0, q).expect("destroy");
        drv.destroy_queue(D0, gate).expect("destroy");
    }
    assert_eq!(
        drv.abort_queue(D0, QueueId(u32::MAX - 1), AbortHead::Runs).unwrap_err().kind(),
        ErrorKind::InvalidHandle
    );
    drv.unback(D0, r).expect("unback");
}
