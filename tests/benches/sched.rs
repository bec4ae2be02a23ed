//! Task submission through `sched::Executor` against its floor, a plain bounded SPSC ring: per
//! item, a submit and its run (take, a no-op runner, finish) against a push and a pop, both in
//! batches on one thread, the floor and the executor rows taking turns sample by sample (so each
//! ratio is over the same stretch of the run). Prints a Markdown table; asserts nothing about time.
//!
//! Run with `cargo bench -p aclrs-tests --bench sched` (add `-- --quick` for a short run).
//! `ACLRS_BENCH_SCHED_STREAMS=1` (or `4`) measures the floor and that row only, and `0` the
//! floor alone: for profiling one row (`perf`, `valgrind --tool=callgrind`).

use std::cell::UnsafeCell;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use aclrs_tests::bench::{quick, time_interleaved, Stats, Table};
use hal::ErrorKind;
use sched::{Executor, StreamId, TaskRunner};

/// A bounded single-producer single-consumer ring of `Copy` items (the floor).
struct Ring<T> {
    buf: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: usize,
    head: AtomicUsize,
    tail: AtomicUsize,
}

impl<T: Copy> Ring<T> {
    fn new(capacity: usize) -> Self {
        let cap = capacity.next_power_of_two();
        Self {
            buf: (0..cap).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect(),
            mask: cap - 1,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        }
    }

    /// Producer side: false when full.
    fn push(&self, v: T) -> bool {
        let tail = self.tail.load(Ordering::Relaxed);
        if tail.wrapping_sub(self.head.load(Ordering::Acquire)) > self.mask {
            return false;
        }
        // SAFETY: the slot at `tail` is outside the consumer's range until `tail` is published
        // below, and only the producer writes it.
        unsafe { (*self.buf[tail & self.mask].get()).write(v) };
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Consumer side: `None` when empty.
    fn pop(&self) -> Option<T> {
        let head = self.head.load(Ordering::Relaxed);
        if head == self.tail.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the producer initialised this slot before publishing `tail` past it
        // (Acquire above), and it is not rewritten until `head` moves past it.
        let v = unsafe { (*self.buf[head & self.mask].get()).assume_init() };
        self.head.store(head.wrapping_add(1), Ordering::Release);
        Some(v)
    }
}

/// A runner that does nothing (the cost measured is the scheduler's).
struct Noop;

impl TaskRunner<u64> for Noop {
    fn run(&mut self, _: StreamId, _: u64, task: &u64) -> Result<(), ErrorKind> {
        // The task's value, as the floor's consumer keeps the value it pops (a reference would
        // make the task's copy go through memory, which the floor's value does not).
        black_box(*task);
        Ok(())
    }
}

const BATCH: usize = 1024;

fn main() {
    let q = quick();
    let (warmup, samples, batches) = if q { (20, 60, 16) } else { (100, 300, 64) };
    let items = (BATCH * batches) as f64;
    let per_item =
        |v: Vec<f64>| -> Stats { Stats::of(&v.iter().map(|s| s * 1e9 / items).collect::<Vec<_>>()) };

    let ring = Ring::<u64>::new(BATCH);
    let mut floor_batches = || {
        for _ in 0..batches {
            for i in 0..BATCH as u64 {
                let pushed = ring.push(i);
                debug_assert!(pushed);
            }
            while let Some(v) = ring.pop() {
                black_box(v);
            }
        }
    };

    // Which executor rows to measure (all unless profiling one).
    let only: Option<usize> = std::env::var("ACLRS_BENCH_SCHED_STREAMS").ok().and_then(|v| v.parse().ok());
    let counts: Vec<usize> = [1usize, 4].into_iter().filter(|&n| only.is_none_or(|o| o == n)).collect();
    let mut executors: Vec<(Executor<u64>, Vec<StreamId>)> = counts
        .iter()
        .map(|&streams| {
            let mut ex: Executor<u64> = Executor::new(streams);
            let ids: Vec<StreamId> =
                (0..streams).map(|_| ex.create_stream(BATCH).expect("create stream")).collect();
            (ex, ids)
        })
        .collect();
    let mut executor_batches: Vec<Box<dyn FnMut() + '_>> = executors
        .iter_mut()
        .map(|(ex, ids)| {
            let streams = ids.len();
            Box::new(move || {
                for _ in 0..batches {
                    // Round-robin as rounds over the ids, not by an index kept per item (`i %
                    // streams` is a division, a wrapping index a compare and a move): the
                    // walk is the bench's, not the executor's, and the floor pays nothing
                    // like it. BATCH is a multiple of every stream count measured.
                    // One stream: a plain counted loop, as the floor's. The result is checked
                    // as the floor's push is, in debug builds: the branch on it is the bench's.
                    if let [id] = ids[..] {
                        for i in 0..BATCH as u64 {
                            let submitted = ex.submit(id, i);
                            debug_assert!(submitted.is_ok());
                        }
                    } else {
                        let mut i = 0u64;
                        for _ in 0..BATCH / streams {
                            for &id in ids.iter() {
                                let submitted = ex.submit(id, i);
                                debug_assert!(submitted.is_ok());
                                i += 1;
                            }
                        }
                    }
                    let ran = ex.run_once(&mut Noop);
                    debug_assert_eq!(ran, BATCH);
                }
            }) as Box<dyn FnMut() + '_>
        })
        .collect();
    // The floor and the executor rows take turns, sample by sample, so that each ratio is
    // taken over the same stretch of the run.
    let mut fs: Vec<&mut dyn FnMut()> = vec![&mut floor_batches];
    fs.extend(executor_batches.iter_mut().map(|f| &mut **f as &mut dyn FnMut()));
    let mut timed = time_interleaved(warmup, samples, &mut fs).into_iter();
    drop(fs);
    let floor = per_item(timed.next().expect("floor samples"));
    let rows: Vec<(String, Stats)> = counts
        .iter()
        .zip(timed)
        .map(|(&streams, t)| {
            let name = if streams == 1 {
                "sched::Executor: submit + run, 1 stream".to_owned()
            } else {
                format!("sched::Executor: submit + run, {streams} streams round-robin")
            };
            (name, per_item(t))
        })
        .collect();

    let mut table =
        Table::new(&["per item", "p50 ns", "p99 ns", "spread ns", "items/s (p50)", "vs SPSC ring", "target"]);
    let fmt = |name: &str, s: &Stats, target: &str| {
        vec![
            name.to_owned(),
            format!("{:.1}", s.median),
            format!("{:.1}", s.p99),
            s.spread(1),
            format!("{:.1} M", 1e3 / s.median),
            format!("{:.2}×", s.median / floor.median),
            target.to_owned(),
        ]
    };
    table.row(fmt("bounded SPSC ring: push + pop (the floor)", &floor, "–"));
    for (name, s) in &rows {
        table.row(fmt(name, s, "≤ 2×"));
    }
    table.print(
        "sched",
        &format!("Scheduler: task submission against a bounded SPSC ring (batches of {BATCH}, one thread)"),
    );
}
