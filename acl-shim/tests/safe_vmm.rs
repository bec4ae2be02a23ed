//! VMM and IPC in the safe Rust API (`ascendcl::safe`) on a private software NPU: mappings
//! and copies across them, the runtime's rules as errors, deferred frees, waits before unmap,
//! and IPC by key between this process and child processes (whitelisted, refused, unrestricted).
//!
//! One runtime per process: every test runs its body under one mutex, with a fresh
//! `Runtime::init` that is finalised when the body's objects are gone. The child processes
//! are this test binary running `ipc_child` with `SAFE_VMM_CHILD` set.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use ascendcl::safe::{
    granularity, Device, DeviceBuffer, IpcExport, IpcImport, Location, PageKind, PhysicalMemory, Runtime,
    Stream, VirtualRange,
};

static LOCK: Mutex<()> = Mutex::new(());

const MIB2: u64 = 2 << 20;
const HBM: &str = "1073741824";
const PARAM_INVALID: i32 = 107_000;
const FEATURE_NOT_SUPPORT: i32 = 207_000;
const NO_PERMISSION: i32 = 207_006;

fn instance() -> String {
    format!("safe-vmm-{}", std::process::id())
}

fn with_runtime(body: impl FnOnce(&Runtime)) {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("ACLRS_SIM_INSTANCE", instance());
    std::env::set_var("ACLRS_SIM_HBM", HBM);
    let rt = Runtime::init().expect("init");
    body(&rt);
}

fn pattern(seed: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| seed.wrapping_mul(2_654_435_761).wrapping_add(i)).collect()
}

#[test]
fn map_copy_across_mappings_and_unmap() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s = Stream::new(&dev).unwrap();
        assert_eq!(granularity(&dev, PageKind::Huge).unwrap(), MIB2);
        let range = VirtualRange::reserve(&dev, 4 * MIB2).unwrap();
        assert_eq!(range.size(), 4 * MIB2);
        let a = PhysicalMemory::new(&dev, MIB2).unwrap();
        let b = PhysicalMemory::new(&dev, MIB2).unwrap();
        let ma = range.map(0, &a).unwrap();
        let mut mb = range.map(MIB2, &b).unwrap();
        assert_eq!(ma.addr(), range.addr());
        assert_eq!(mb.addr(), range.addr() + MIB2);
        assert_eq!(ma.access(Location::Device(0)).unwrap(), 3);

        // One copy spanning both mappings, through a slice of the range.
        let n = 1024;
        let at = MIB2 - 2048; // 512 elements in each mapping
        let host = pattern(7, n);
        s.copy_from_host(range.slice_mut::<u32>(at, n).unwrap(), &host).unwrap();
        let mut back = vec![0u32; n];
        s.copy_to_host(&mut back, range.slice::<u32>(at, n).unwrap()).unwrap();
        assert_eq!(back, host);
        // The second half landed at the start of mapping b.
        let mut part = vec![0u32; 512];
        s.copy_to_host(&mut part, mb.slice::<u32>(0, 512).unwrap()).unwrap();
        assert_eq!(part, host[512..]);
        s.memset(mb.slice_mut::<u32>(0, 4).unwrap(), 0).unwrap();
        s.copy_to_host(&mut part[..4], mb.slice::<u32>(0, 4).unwrap()).unwrap();
        assert_eq!(part[..4], [0; 4]);

        // The rules, as errors: overlap, misaligned offset, outside the range, bad slices.
        let c = PhysicalMemory::new(&dev, MIB2).unwrap();
        assert_eq!(range.map(0, &c).unwrap_err().code(), PARAM_INVALID);
        assert_eq!(range.map(4096, &c).unwrap_err().code(), PARAM_INVALID);
        assert_eq!(range.map(4 * MIB2, &c).unwrap_err().code(), PARAM_INVALID);
        assert!(PhysicalMemory::new(&dev, MIB2 + 4096).is_err());
        assert!(PhysicalMemory::new(&dev, 0).is_err());
        assert!(range.slice::<u32>(4 * MIB2 - 4, 2).is_err());
        assert!(range.slice::<u32>(2, 1).is_err());
        assert!(mb.slice::<u32>(MIB2 - 4, 2).is_err());
        // A copy touching unmapped memory (the third chunk) is an error, not a crash.
        assert!(s.copy_from_host(range.slice_mut::<u32>(2 * MIB2, 4).unwrap(), &[1, 2, 3, 4]).is_err());

        // The range cannot be released while mapped (the borrow forbids it in safe code; the
        // runtime agrees): unmapping b, then mapping c in its place works.
        mb.unmap().unwrap();
        let mc = range.map(MIB2, &c).unwrap();
        drop(mc);
        drop(ma);
        range.release().unwrap();
    });
}

#[test]
fn physical_memory_dropped_while_mapped_stays_until_unmap() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s = Stream::new(&dev).unwrap();
        let before = dev.mem_info().unwrap().free;
        let range = VirtualRange::reserve(&dev, 2 * MIB2).unwrap();
        let phys = PhysicalMemory::new(&dev, 2 * MIB2).unwrap();
        let m = range.map(0, &phys).unwrap();
        let host = pattern(3, 4096);
        s.copy_from_host(m_slice_mut(&range, 4096), &host).unwrap();
        phys.free().unwrap(); // deferred: still mapped
        let mut back = vec![0u32; 4096];
        s.copy_to_host(&mut back, m.slice::<u32>(0, 4096).unwrap()).unwrap();
        assert_eq!(back, host);
        assert!(dev.mem_info().unwrap().free <= before - 2 * MIB2);
        drop(m); // the last unmap frees the memory
        assert_eq!(dev.mem_info().unwrap().free, before);
    });
}

fn m_slice_mut(range: &VirtualRange, n: usize) -> ascendcl::safe::DeviceSliceMut<'_, u32> {
    range.slice_mut::<u32>(0, n).unwrap()
}

#[test]
fn unmap_waits_for_streams_that_used_the_range() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s1 = Stream::new(&dev).unwrap();
        let s2 = Stream::new(&dev).unwrap();
        let n = (MIB2 / 4) as usize;
        let host = pattern(11, n);
        let mut src = DeviceBuffer::<u32>::new(&dev, n).unwrap();
        s1.copy_from_host(&mut src, &host).unwrap();
        let range = VirtualRange::reserve(&dev, MIB2).unwrap();
        let phys = PhysicalMemory::new(&dev, MIB2).unwrap();
        for round in 0..4 {
            let m = range.map(0, &phys).unwrap();
            s1.memset(range.slice_mut::<u32>(0, n).unwrap(), 0).unwrap();
            // Queued asynchronously on two streams, then unmapped at once: the unmap waits
            // for both, so the bytes reach the physical memory.
            s1.copy(range.slice_mut::<u32>(0, n / 2).unwrap(), src.slice(..n / 2).unwrap()).unwrap();
            s2.copy(range.slice_mut::<u32>(MIB2 / 2, n / 2).unwrap(), src.slice(n / 2..).unwrap()).unwrap();
            m.unmap().unwrap();
            s1.is_complete().unwrap();
            // Mapped again, the physical memory holds what the streams wrote.
            let m = range.map(0, &phys).unwrap();
            let mut back = vec![0u32; n];
            s1.copy_to_host(&mut back, m.slice::<u32>(0, n).unwrap()).unwrap();
            assert_eq!(back, host, "round {round}");
        }
        s1.synchronize().unwrap();
        s2.synchronize().unwrap();
    });
}

#[test]
fn ipc_in_one_process() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        // Buffers of at most 64 KiB share pages: not exportable.
        let small = DeviceBuffer::<u8>::new(&dev, 4096).unwrap();
        assert_eq!(IpcExport::unrestricted(&small).unwrap_err().code(), PARAM_INVALID);
        let buf = DeviceBuffer::<u32>::new(&dev, 1 << 20).unwrap();
        let export = IpcExport::new(&buf, &[rt.process_id()]).unwrap();
        assert!(!export.key().is_empty());
        assert_eq!(export.size_bytes(), 4 << 20);
        // Importing in the exporting process is not supported.
        let key = export.key().to_owned();
        assert_eq!(IpcImport::open(&dev, &key, 4 << 20).unwrap_err().code(), FEATURE_NOT_SUPPORT);
        // Dropping the export closes the key: it is unknown afterwards.
        drop(export);
        assert_eq!(IpcImport::open(&dev, &key, 4 << 20).unwrap_err().code(), PARAM_INVALID);
        assert!(IpcImport::open(&dev, "not a key", 16).is_err());
        buf.free().unwrap();
    });
}

/// Runs this binary's `ipc_child` with `expect` ("ok" or "denied"); `setup` gets the child's pid
/// and returns the line to send it (key, size in bytes, seed).
fn run_child(expect: &str, setup: impl FnOnce(u32) -> String) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "ipc_child", "--nocapture", "--test-threads=1"])
        .env("SAFE_VMM_CHILD", instance())
        .env("SAFE_VMM_EXPECT", expect)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = setup(child.id());
    writeln!(child.stdin.take().unwrap(), "{line}").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "child failed: {text}");
    text
}

#[test]
fn ipc_between_processes() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s = Stream::new(&dev).unwrap();
        let n = 1 << 20;
        let host = pattern(5, n);
        let mut buf = DeviceBuffer::<u32>::new(&dev, n).unwrap();
        s.copy_from_host(&mut buf, &host).unwrap();

        // Whitelisted: the child reads the buffer and writes its second half.
        {
            let export = IpcExport::new(&buf, &[]).unwrap();
            let out = run_child("ok", |pid| {
                export.allow(&[pid]).unwrap();
                format!("{} {} 5", export.key(), export.size_bytes())
            });
            assert!(out.contains("child-ok"), "{out}");
        }
        let mut back = vec![0u32; n];
        s.copy_to_host(&mut back, &buf).unwrap();
        assert_eq!(back[..n / 2], host[..n / 2]);
        assert!(back[n / 2..].iter().all(|&v| v == 0xC0FFEE));

        // Not on the whitelist: refused.
        {
            let export = IpcExport::new(&buf, &[1]).unwrap();
            let out = run_child("denied", |_| format!("{} {} 5", export.key(), export.size_bytes()));
            assert!(out.contains("child-denied"), "{out}");
        }

        // Unrestricted: any process.
        s.copy_from_host(&mut buf, &host).unwrap();
        let export = IpcExport::unrestricted(&buf).unwrap();
        let out = run_child("ok", |_| format!("{} {} 5", export.key(), export.size_bytes()));
        assert!(out.contains("child-ok"), "{out}");
        export.close().unwrap();
    });
}

/// The child side of [`ipc_between_processes`]; does nothing unless `SAFE_VMM_CHILD` is set.
#[test]
fn ipc_child() {
    let Ok(inst) = std::env::var("SAFE_VMM_CHILD") else { return };
    let expect = std::env::var("SAFE_VMM_EXPECT").unwrap();
    std::env::set_var("ACLRS_SIM_INSTANCE", inst);
    std::env::set_var("ACLRS_SIM_HBM", HBM);
    let rt = Runtime::init().unwrap();
    let dev = Device::open(&rt, 0).unwrap();
    let s = Stream::new(&dev).unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let mut words = line.split_whitespace();
    let key = words.next().unwrap();
    let size: u64 = words.next().unwrap().parse().unwrap();
    let seed: u32 = words.next().unwrap().parse().unwrap();
    match expect.as_str() {
        "denied" => {
            assert_eq!(IpcImport::open(&dev, key, size).unwrap_err().code(), NO_PERMISSION);
            println!("child-denied");
        }
        _ => {
            // Asking for more than is shared is refused (and leaves no import behind).
            assert_eq!(IpcImport::open(&dev, key, size + MIB2).unwrap_err().code(), PARAM_INVALID);
            let mut import = IpcImport::open(&dev, key, size).unwrap();
            assert_eq!(IpcImport::open(&dev, key, size).unwrap_err().code(), PARAM_INVALID);
            let n = (size / 4) as usize;
            let mut back = vec![0u32; n];
            s.copy_to_host(&mut back, import.slice::<u32>(0, n).unwrap()).unwrap();
            assert_eq!(back, pattern(seed, n));
            s.copy_from_host(import.slice_mut::<u32>(size / 2, n / 2).unwrap(), &vec![0xC0FFEE; n / 2])
                .unwrap();
            import.close().unwrap();
            println!("child-ok");
        }
    }
}
