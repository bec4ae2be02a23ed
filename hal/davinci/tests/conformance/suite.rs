//! The conformance suite of the `hal` driver traits: one body of checks any backend must pass.
//!
//! It takes `&dyn Driver` with device 0 open, and uses only what every backend must offer:
//! backing and unbacking VA, VMM create/map/unmap/free, synchronous copies and sets, and task
//! queues with copies, sets, value writes and waits. Device and memory queries may answer
//! `NotSupported` (the davinci backend does not mirror them yet); anything else must work.

use hal::layout::device_window_base;
use hal::{
    BackRequest, DeviceAddr, DeviceId, Driver, ErrorKind, MemAttr, PageSize, QueueId, TaskDesc, TaskStatus,
    VaRange, WaitCompare,
};

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
    queues(drv);
}

fn control(drv: &dyn Driver) {
    assert!(drv.device_count() >= 1);
    drv.open(D0).expect("opening an open device does nothing");
    let past = DeviceId(drv.device_count());
    assert_eq!(drv.open(past).unwrap_err().kind(), ErrorKind::NoDevice);
    for r in [drv.device_info(D0).map(drop), drv.memory_info(D0).map(drop)] {
        if let Err(e) = r {
            assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        }
    }
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
    let (done, status) = drv.completed(D0, q).expect("completed");
    assert!(done >= s4);
    assert_eq!(status, TaskStatus::Ok);
    assert_eq!(drv.submitted(D0, q).expect("submitted"), 4);
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
}
