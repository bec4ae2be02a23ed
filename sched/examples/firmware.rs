//! Device firmware in miniature: the executor drives tasks that allocate physical frames and
//! device virtual addresses (VA), as the AI CPU's firmware would.
//!
//! Built for a bare-metal target (`target_os = "none"`, for example `aarch64-unknown-none`)
//! this is a `no_std`, `no_main` image whose `_start` sets up a heap from
//! `linked_list_allocator`, runs the scenario and spins forever. Built for the host it runs the
//! same scenario from `fn main`, checks the results and prints one line:
//!
//! ```text
//! cargo run -p sched --example firmware --features firmware-example
//! cargo build -p sched --example firmware --features firmware-example \
//!     --target aarch64-unknown-none --release
//! ```
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;

use alloc::vec::Vec;

use hal::{DeviceAddr, ErrorKind, PageSize, VaRange};
use mm::phys::{FrameAllocator, PhysConfig, PhysRun};
use mm::va::VaAllocator;
use sched::{Executor, FailureMode, StreamId, TaskRunner};

const MIB: u64 = 1 << 20;
/// HBM of the example device.
const TOTAL_BYTES: u64 = 64 * MIB;
/// Bytes that may be in use as 2 MiB pages.
const HUGE_BUDGET_BYTES: u64 = 16 * MIB;
/// The device VA window the example hands out (the first device window, 16 TiB).
const WINDOW_BASE: u64 = 16 << 40;
/// Size of that window.
const WINDOW_BYTES: u64 = 1 << 30;

/// The work items of the example.
#[derive(Clone, Copy, Debug)]
enum Task {
    /// Allocate pages of one size and keep them.
    AllocFrames(PageSize, u64),
    /// Free the most recently kept pages.
    FreeFrames,
    /// Allocate a VA range (length, alignment) and keep it.
    AllocVa(u64, u64),
    /// Free the most recently kept VA range.
    FreeVa,
    /// Free a VA range that was never allocated (fails).
    FreeBogusVa,
}

/// The firmware's memory state, which the tasks act on.
struct Firmware {
    frames: FrameAllocator,
    va: VaAllocator,
    kept_frames: Vec<(PageSize, Vec<PhysRun>)>,
    kept_va: Vec<VaRange>,
    peak_allocated_bytes: u64,
}

/// Maps a memory-manager error to the driver kind a task reports.
fn kind(e: mm::Error) -> ErrorKind {
    hal::Error::from(e).kind()
}

impl TaskRunner<Task> for Firmware {
    fn run(&mut self, _stream: StreamId, _seq: u64, task: &Task) -> Result<(), ErrorKind> {
        match *task {
            Task::AllocFrames(page, count) => {
                let runs = self.frames.alloc_pages(page, count).map_err(kind)?;
                self.kept_frames.push((page, runs));
                let allocated = self.frames.allocated_bytes();
                self.peak_allocated_bytes = self.peak_allocated_bytes.max(allocated);
            }
            Task::FreeFrames => {
                let (page, runs) = self.kept_frames.pop().ok_or(ErrorKind::InvalidHandle)?;
                self.frames.free_pages(page, &runs).map_err(kind)?;
            }
            Task::AllocVa(len, align) => {
                let range = self.va.alloc(len, align).map_err(kind)?;
                self.kept_va.push(range);
            }
            Task::FreeVa => {
                let range = self.kept_va.pop().ok_or(ErrorKind::InvalidHandle)?;
                self.va.free(range).map_err(kind)?;
            }
            Task::FreeBogusVa => {
                let start = DeviceAddr(WINDOW_BASE + 0x10);
                let range = VaRange::try_new(start, 0x10).map_err(|e| e.kind())?;
                self.va.free(range).map_err(kind)?;
            }
        }
        Ok(())
    }
}

/// What the scenario observed.
#[derive(Debug)]
struct Summary {
    ran: usize,
    frames_error: Option<ErrorKind>,
    va_error: Option<ErrorKind>,
    frames_completed: u64,
    va_completed: u64,
    peak_allocated_bytes: u64,
    allocated_bytes: u64,
    free_va_bytes: u64,
}

/// Runs the scenario: two streams, one allocating frames, one allocating VA.
fn firmware_main() -> Result<Summary, &'static str> {
    let cfg =
        PhysConfig { total_bytes: TOTAL_BYTES, huge_budget_bytes: HUGE_BUDGET_BYTES, giant_budget_bytes: 0 };
    let frames = FrameAllocator::new(cfg).map_err(|e| e.as_str())?;
    let window = VaRange::try_new(DeviceAddr(WINDOW_BASE), WINDOW_BYTES).map_err(|e| e.detail())?;
    let mut fw = Firmware {
        frames,
        va: VaAllocator::new(window),
        kept_frames: Vec::new(),
        kept_va: Vec::new(),
        peak_allocated_bytes: 0,
    };
    let mut ex = Executor::new(2);
    let frames_stream = ex.create_stream(8).map_err(|e| e.as_str())?;
    let va_stream = ex.create_stream(8).map_err(|e| e.as_str())?;
    ex.set_failure_mode(va_stream, FailureMode::StopOnFailure).map_err(|e| e.as_str())?;
    let frame_tasks = [
        Task::AllocFrames(PageSize::Normal, 300),
        Task::AllocFrames(PageSize::Huge, 4),
        // 4 + 6 huge pages exceed the 16 MiB budget: fails, and the stream continues.
        Task::AllocFrames(PageSize::Huge, 6),
        Task::FreeFrames,
        Task::FreeFrames,
    ];
    let va_tasks = [
        Task::AllocVa(MIB, 2 * MIB),
        Task::AllocVa(4096, 64),
        Task::FreeVa,
        Task::FreeVa,
        // Fails; the stream stops, so the allocation behind it never runs.
        Task::FreeBogusVa,
        Task::AllocVa(MIB, 1),
    ];
    for task in frame_tasks {
        ex.submit(frames_stream, task).map_err(|e| e.as_str())?;
    }
    for task in va_tasks {
        ex.submit(va_stream, task).map_err(|e| e.as_str())?;
    }
    let ran = ex.run_once(&mut fw);
    if !ex.is_idle() {
        return Err("executor not idle after run_once");
    }
    Ok(Summary {
        ran,
        frames_error: ex.take_error(frames_stream).map_err(|e| e.as_str())?,
        va_error: ex.take_error(va_stream).map_err(|e| e.as_str())?,
        frames_completed: ex.completed_seq(frames_stream).map_err(|e| e.as_str())?,
        va_completed: ex.completed_seq(va_stream).map_err(|e| e.as_str())?,
        peak_allocated_bytes: fw.peak_allocated_bytes,
        allocated_bytes: fw.frames.allocated_bytes(),
        free_va_bytes: fw.va.free_bytes(),
    })
}

/// Checks the scenario's results.
fn verify(s: &Summary) -> Result<(), &'static str> {
    let checks = [
        (s.ran == 10, "ten tasks ran"),
        (s.frames_error == Some(ErrorKind::OutOfMemory), "budget failure reported"),
        (s.va_error == Some(ErrorKind::InvalidHandle), "bogus free reported"),
        (s.frames_completed == 5, "frame stream completed"),
        (s.va_completed == 6, "VA stream completed, last task skipped"),
        (s.peak_allocated_bytes == 300 * 4096 + 8 * MIB, "peak allocation"),
        (s.allocated_bytes == 0, "every frame freed"),
        (s.free_va_bytes == WINDOW_BYTES, "every VA range freed"),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, what)) => Err(what),
        None => Ok(()),
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    let summary = firmware_main().expect("scenario set-up failed");
    if let Err(what) = verify(&summary) {
        panic!("check failed: {what}: {summary:?}");
    }
    println!(
        "firmware: {} tasks ran, peak {} KiB of frames, all memory returned",
        summary.ran,
        summary.peak_allocated_bytes >> 10
    );
}

#[cfg(target_os = "none")]
mod bare_metal {
    //! The bare-metal runtime: heap, panic handler.

    use linked_list_allocator::LockedHeap;

    /// Bytes of the firmware heap.
    pub(crate) const HEAP_BYTES: usize = 256 * 1024;

    /// The memory the heap hands out.
    pub(crate) static mut HEAP: [u8; HEAP_BYTES] = [0; HEAP_BYTES];

    /// The global allocator, initialised by `_start` before anything allocates.
    #[global_allocator]
    pub(crate) static ALLOCATOR: LockedHeap = LockedHeap::empty();

    #[panic_handler]
    fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
        loop {
            core::hint::spin_loop();
        }
    }
}

/// The entry point of the bare-metal image.
#[cfg(target_os = "none")]
#[no_mangle]
pub extern "C" fn _start() -> ! {
    // SAFETY:
    // - `HEAP` is used for nothing else: only this line names it, and `_start` runs once.
    // - The pointer and length describe the whole static array, valid for the program's life.
    // - Nothing has allocated yet, so initialising the heap here is its first and only init.
    unsafe {
        bare_metal::ALLOCATOR
            .lock()
            .init(core::ptr::addr_of_mut!(bare_metal::HEAP).cast::<u8>(), bare_metal::HEAP_BYTES);
    }
    let outcome = firmware_main().and_then(|summary| verify(&summary));
    if let Err(what) = outcome {
        panic!("firmware check failed: {what}");
    }
    loop {
        core::hint::spin_loop();
    }
}
