//! The safe Rust API (`ascendcl::safe`) on a private software NPU: copies, length checks,
//! cross-stream dependencies, pools, pinned buffers, and a multi-thread stress test of buffers
//! crossing streams.
//!
//! One runtime per process: every test runs its body under one mutex, with a fresh
//! `Runtime::init` that is finalised when the body's objects are gone.

use std::sync::{mpsc, Mutex};
use std::thread;

use ascendcl::safe::{Device, DeviceBuffer, Event, MemPool, PinnedHostBuffer, Runtime, Stream};

static LOCK: Mutex<()> = Mutex::new(());

fn with_runtime(body: impl FnOnce(&Runtime)) {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("ACLRS_SIM_INSTANCE", format!("safe-api-{}", std::process::id()));
    std::env::set_var("ACLRS_SIM_HBM", "1073741824");
    let rt = Runtime::init().expect("init");
    body(&rt);
}

fn pattern(seed: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| seed.wrapping_mul(2_654_435_761).wrapping_add(i)).collect()
}

#[test]
fn round_trip_and_length_checks() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s = Stream::new(&dev).unwrap();
        let mut buf = DeviceBuffer::<f32>::new(&dev, 1000).unwrap();
        let host: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
        s.copy_from_host(&mut buf, &host).unwrap();
        let mut back = vec![0f32; 1000];
        s.copy_to_host(&mut back, &buf).unwrap();
        assert_eq!(back, host);

        // Length mismatches are errors, in both directions.
        assert!(s.copy_from_host(&mut buf, &host[..999]).is_err());
        let mut long = vec![0f32; 1001];
        let e = s.copy_to_host(&mut long, &buf).unwrap_err();
        assert_eq!(e.code(), 100_000, "{e}");
        // Out-of-range slices are errors, not panics.
        assert!(buf.slice(990..1001).is_err());
        #[expect(clippy::reversed_empty_ranges, reason = "the bad input under test")]
        let reversed = buf.slice(10..5);
        assert!(reversed.is_err());
        // A sub-slice copy.
        let mut part = [0f32; 10];
        s.copy_to_host(&mut part, buf.slice(100..110).unwrap()).unwrap();
        assert_eq!(&part[..], &host[100..110]);
        s.memset(buf.slice_mut(0..4).unwrap(), 0).unwrap();
        s.copy_to_host(&mut part[..4], buf.slice(0..4).unwrap()).unwrap();
        assert_eq!(&part[..4], &[0.0; 4]);
        // Zero-length buffers are rejected.
        assert!(DeviceBuffer::<u8>::new(&dev, 0).is_err());
        // Memory info and usage see the allocation.
        let info = dev.mem_info().unwrap();
        assert!(info.free < info.total);
        assert!(dev.usage().unwrap().iter().any(|u| u.component == "APP" && u.current >= 4000));
        buf.free().unwrap();
    });
}

#[test]
fn other_stream_needs_acquire() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let (a, b) = (Stream::new(&dev).unwrap(), Stream::new(&dev).unwrap());
        let mut buf = DeviceBuffer::<u32>::new_on(&a, 64).unwrap();
        a.copy_from_host(&mut buf, &pattern(7, 64)).unwrap();
        let mut out = vec![0u32; 64];
        let e = b.copy_to_host(&mut out, &buf).unwrap_err();
        assert!(e.message().contains("acquire"), "{e}");
        b.acquire(&buf).unwrap();
        b.copy_to_host(&mut out, &buf).unwrap();
        assert_eq!(out, pattern(7, 64));
        // Streams of another device are refused.
        if rt.device_count() > 1 {
            let dev1 = Device::open(rt, 1).unwrap();
            let c = Stream::new(&dev1).unwrap();
            assert!(c.acquire(&buf).is_err());
            assert!(c.copy_to_host(&mut out, &buf).is_err());
        }
    });
}

#[test]
fn events_order_streams() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let (a, b) = (Stream::new(&dev).unwrap(), Stream::new(&dev).unwrap());
        let (start, end) = (Event::new(&dev).unwrap(), Event::new(&dev).unwrap());
        let src = PinnedHostBuffer::from_slice(rt, &pattern(3, 4096)).unwrap();
        let mut x = DeviceBuffer::<u32>::new(&dev, 4096).unwrap();
        start.record(&a).unwrap();
        a.copy_from_pinned(&mut x, &src).unwrap();
        end.record(&a).unwrap();
        b.wait_event(&end).unwrap();
        let mut dst = PinnedHostBuffer::<u32>::new(rt, 4096).unwrap();
        b.copy_to_pinned(&mut dst, &x).unwrap();
        assert_eq!(dst.to_vec().unwrap(), pattern(3, 4096));
        end.synchronize().unwrap();
        assert!(end.is_complete().unwrap());
        assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
    });
}

#[test]
fn pool_blocks_are_stream_ordered() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s = Stream::new(&dev).unwrap();
        let pool = MemPool::new(&dev, 0).unwrap();
        for i in 0..50u32 {
            let mut b = pool.alloc_async::<u32>(&s, 16 * 1024).unwrap();
            s.copy_from_host(&mut b, &pattern(i, 16 * 1024)).unwrap();
            let mut out = vec![0u32; 16 * 1024];
            s.copy_to_host(&mut out, &b).unwrap();
            assert_eq!(out, pattern(i, 16 * 1024));
        }
        s.synchronize().unwrap();
        assert_eq!(pool.used_bytes().unwrap(), 0);
        pool.trim_to(0).unwrap();
    });
}

#[test]
fn dropping_an_unowned_buffer_waits_for_its_streams() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let s = Stream::new(&dev).unwrap();
        let before = dev.mem_info().unwrap().free;
        let src = PinnedHostBuffer::from_slice(rt, &pattern(9, 1 << 20)).unwrap();
        let mut x = DeviceBuffer::<u32>::new(&dev, 1 << 20).unwrap();
        s.copy_from_pinned(&mut x, &src).unwrap();
        drop(x); // waits for the copy, then frees
        assert!(s.is_complete().unwrap());
        assert_eq!(dev.mem_info().unwrap().free, before);
    });
}

/// Producers fill pool buffers on their own streams and send them to consumers on other
/// threads, which acquire them on their streams, copy them out and drop them (the free is
/// ordered on the producer's stream after the consumer's copy, and the producer's next
/// allocation may reuse the block at once). Every byte is checked.
#[test]
fn stress_buffers_crossing_streams() {
    with_runtime(|rt| {
        let dev = Device::open(rt, 0).unwrap();
        let pool = MemPool::new(&dev, 0).unwrap();
        const PRODUCERS: u32 = 2;
        const ITEMS: u32 = 60;
        const N: usize = 8192;
        let mut consumers = Vec::new();
        let mut senders = Vec::new();
        for _ in 0..PRODUCERS {
            let (tx, rx) = mpsc::sync_channel::<(u32, DeviceBuffer<u32>)>(4);
            senders.push(tx);
            let dev = dev.clone();
            let rt = rt.clone();
            consumers.push(thread::spawn(move || {
                let c = Stream::new(&dev).unwrap();
                let mut out = PinnedHostBuffer::<u32>::new(&rt, N).unwrap();
                let mut checked = 0;
                for (seed, buf) in rx {
                    c.acquire(&buf).unwrap();
                    let mut mine = DeviceBuffer::<u32>::new_on(&c, N).unwrap();
                    c.copy(&mut mine, &buf).unwrap();
                    drop(buf);
                    c.copy_to_pinned(&mut out, &mine).unwrap();
                    assert_eq!(out.to_vec().unwrap(), pattern(seed, N), "item {seed}");
                    checked += 1;
                }
                checked
            }));
        }
        let producers: Vec<_> = senders
            .into_iter()
            .enumerate()
            .map(|(p, tx)| {
                let (dev, pool, rt) = (dev.clone(), pool.clone(), rt.clone());
                thread::spawn(move || {
                    let s = Stream::new(&dev).unwrap();
                    for i in 0..ITEMS {
                        let seed = p as u32 * 1000 + i;
                        let src = PinnedHostBuffer::from_slice(&rt, &pattern(seed, N)).unwrap();
                        let mut b = pool.alloc_async::<u32>(&s, N).unwrap();
                        // Asynchronous: the consumer's acquire orders its use after this copy.
                        s.copy_from_pinned(&mut b, &src).unwrap();
                        tx.send((seed, b)).unwrap();
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        let total: u32 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
        assert_eq!(total, PRODUCERS * ITEMS);
        dev.synchronize().unwrap();
    });
}
