//! The AI cores of the software NPU: loaded kernel binaries, kernel launches run once per
//! block on worker threads, faults reported by kernels, and host calls made in stream order.
//!
//! It owns the process-wide tables of binaries and kernel functions (one `Sim` exists per
//! process) and the hook through which the runtime runs host functions. It must not load or
//! call foreign code itself: that is [`crate::sys::kernel`].

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;
use std::time::Instant;

use hal::{DeviceId, Error, ErrorKind, HostCall, Loader, QueueId, Result, TaskDesc, TaskStatus};

use crate::fault::KernelFault;
use crate::scheduler::Ticket;
use crate::sys::kernel::{Kernel, Library};
use crate::Sim;

/// `ACL_ERROR_RT_AICORE_EXCEPTION`: a kernel fault without a code of its own.
pub const KERNEL_FAULT_DEFAULT: i32 = 507_015;
/// `ACL_ERROR_RT_AICORE_TIMEOUT`: a kernel ran past its launch's timeout.
pub const KERNEL_TIMEOUT: i32 = 507_014;

/// A kernel function and the library that keeps its code loaded.
#[derive(Debug, Clone)]
struct Function {
    binary: u64,
    library: Arc<Library>,
    kernel: Kernel,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    binaries: BTreeMap<u64, Arc<Library>>,
    functions: BTreeMap<u64, Function>,
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    static REG: OnceLock<Mutex<Registry>> = OnceLock::new();
    REG.get_or_init(|| Mutex::new(Registry { next: 1, ..Registry::default() }))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Runs a host call for the runtime: receives the task's ticket, returns 0 or an error code.
pub use hal::HostHook;

static HOST_HOOK: ArcSwapOption<HostHook> = ArcSwapOption::const_empty();

/// Moved (after the store) whenever [`HOST_HOOK`] changes: a thread that runs host calls keeps
/// its own copy of the hook and loads the shared one again only when this moved.
static HOST_HOOK_GEN: AtomicU64 = AtomicU64::new(0);

/// A thread's copy of [`HOST_HOOK`] and the [`HOST_HOOK_GEN`] it was taken at.
struct HookCache {
    generation: Cell<u64>,
    hook: RefCell<Option<Arc<HostHook>>>,
}

thread_local! {
    /// The fault the kernel running on this thread reported, if any.
    static FAULT: Cell<Option<i32>> = const { Cell::new(None) };
    /// This thread's copy of the host hook (no shared line read per host call).
    static HOOK: HookCache = const { HookCache { generation: Cell::new(0), hook: RefCell::new(None) } };
}

/// Reports a fault from inside a kernel running on this thread (`aclrsKernelFail`): the launch
/// fails with `code`, or [`KERNEL_FAULT_DEFAULT`] when `code` is 0. The first report of a block
/// counts. Outside a kernel it does nothing.
pub fn kernel_fail(code: i32) {
    let code = if code == 0 { KERNEL_FAULT_DEFAULT } else { code };
    FAULT.with(|f| {
        if f.get().is_none() {
            f.set(Some(code));
        }
    });
}

fn cores() -> u32 {
    static CORES: OnceLock<u32> = OnceLock::new();
    *CORES.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        // CAST: clamped to a small count first.
        n.clamp(1, 64) as u32
    })
}

/// Runs `func` once per block with `args`; the launch's status. A block that faults (touches
/// unmapped or protected memory) stops the launch: blocks not started yet do not run, and the
/// launch fails with [`KERNEL_FAULT_DEFAULT`]; the fault's address is kept for the queue
/// ([`crate::fault`]).
pub(crate) fn run(func: u64, blocks: u32, args: Option<Ticket>, timeout_us: u64) -> TaskStatus {
    let Some(f) = registry().functions.get(&func).cloned() else {
        return TaskStatus::Failed(ErrorKind::InvalidHandle);
    };
    if let Err(e) = crate::sys::kernel::install_fault_handler() {
        tracing::warn!("kernel faults are not contained: {e}");
    }
    let mut bytes = match args {
        Some(Ticket::Args(v)) => v,
        _ => Vec::new(),
    };
    // CAST: an address handed to the kernel as its `args` pointer (0 when there are none).
    let args_addr = if bytes.is_empty() { 0 } else { bytes.as_mut_ptr() as usize };
    let next = AtomicU32::new(0);
    let fault: Mutex<Option<i32>> = Mutex::new(None);
    let access: Mutex<Option<KernelFault>> = Mutex::new(None);
    let start = Instant::now();
    let core = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= blocks {
            break;
        }
        FAULT.with(|c| c.set(None));
        if let Some(raw) = f.kernel.call(&f.library, i, blocks, args_addr) {
            // No further block starts: the launch has failed.
            next.store(blocks, Ordering::Relaxed);
            let kind = crate::fault::access_kind(raw.signal, raw.code);
            let k = KernelFault { addr: raw.addr, kind, block: i, blocks, func };
            access.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(k);
            fault.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(KERNEL_FAULT_DEFAULT);
            FAULT.with(|c| c.set(None));
            break;
        }
        if let Some(code) = FAULT.with(Cell::take) {
            fault.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(code);
        }
    };
    let threads = blocks.min(cores());
    if threads <= 1 {
        core();
    } else {
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(core);
            }
            core();
        });
    }
    drop(bytes);
    if let Some(k) = access.into_inner().unwrap_or_else(|p| p.into_inner()) {
        if let Some((dev, queue)) = crate::fault::running() {
            crate::fault::record(dev, queue, k);
        }
        tracing::warn!(
            "kernel {func:#x} block {}/{} faulted: {} access at {:#x}; the launch fails with {KERNEL_FAULT_DEFAULT}",
            k.block,
            k.blocks,
            k.kind.as_str(),
            k.addr
        );
    }
    if let Some(code) = *fault.lock().unwrap_or_else(|p| p.into_inner()) {
        return TaskStatus::Fault(code);
    }
    // CAST: microseconds of one launch fit in u64.
    if timeout_us > 0 && start.elapsed().as_micros() as u64 > timeout_us {
        return TaskStatus::Fault(KERNEL_TIMEOUT);
    }
    TaskStatus::Ok
}

/// Runs a host call through the runtime's hook.
pub(crate) fn host_call(call: HostCall) -> TaskStatus {
    // One load of the generation per call; the thread's copy of the hook is refreshed only
    // when it moved (a task's hot path: no reference count, no shared line but this word).
    let generation = HOST_HOOK_GEN.load(Ordering::Acquire);
    HOOK.with(|c| {
        if c.generation.get() != generation {
            match c.hook.try_borrow_mut() {
                Ok(mut h) => {
                    *h = HOST_HOOK.load_full();
                    c.generation.set(generation);
                }
                // A host call made from inside a host call while the hook changed: use the
                // shared hook this once.
                Err(_) => return call_hook(HOST_HOOK.load().as_deref(), call),
            }
        }
        call_hook(c.hook.borrow().as_deref(), call)
    })
}

/// Runs `call` through `hook` (none installed: not supported).
fn call_hook(hook: Option<&HostHook>, call: HostCall) -> TaskStatus {
    match hook {
        None => TaskStatus::Failed(ErrorKind::NotSupported),
        Some(h) => match h(call) {
            0 => TaskStatus::Ok,
            code => TaskStatus::Fault(code),
        },
    }
}

impl Sim {
    /// Loads a kernel binary (a host shared object) and returns its handle.
    ///
    /// # Errors
    ///
    /// The dynamic linker's message when the object cannot be opened.
    pub fn load_binary(&self, path: &Path) -> std::result::Result<u64, String> {
        let lib = Library::open(path).map_err(|e| e.to_string())?;
        let mut reg = registry();
        let id = reg.next;
        reg.next += 1;
        reg.binaries.insert(id, Arc::new(lib));
        Ok(id)
    }

    /// Finds kernel `name` in binary `binary` and returns its function handle.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown binary; [`ErrorKind::InvalidArgument`] when
    /// the binary has no such symbol.
    pub fn binary_function(&self, binary: u64, name: &str) -> Result<u64> {
        let mut reg = registry();
        let lib = reg
            .binaries
            .get(&binary)
            .cloned()
            .ok_or(Error::new(ErrorKind::InvalidHandle, "unknown binary"))?;
        let kernel =
            lib.kernel(name).ok_or(Error::new(ErrorKind::InvalidArgument, "no such kernel in the binary"))?;
        let id = reg.next;
        reg.next += 1;
        reg.functions.insert(id, Function { binary, library: lib, kernel });
        Ok(id)
    }

    /// Whether `func` is a live function handle.
    pub fn is_function(&self, func: u64) -> bool {
        registry().functions.contains_key(&func)
    }

    /// Unloads a binary and forgets its functions; launches already running finish first (they
    /// keep the code loaded), launches still queued fail.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown binary.
    pub fn unload_binary(&self, binary: u64) -> Result<()> {
        let mut reg = registry();
        reg.binaries.remove(&binary).ok_or(Error::new(ErrorKind::InvalidHandle, "unknown binary"))?;
        reg.functions.retain(|_, f| f.binary != binary);
        Ok(())
    }

    /// Installs the hook that runs host functions and callbacks ([`TaskDesc::HostFunc`]).
    pub fn set_host_hook(&self, hook: HostHook) {
        HOST_HOOK.store(Some(Arc::new(hook)));
        // Release, after the store: a thread that sees the new generation loads this hook.
        HOST_HOOK_GEN.fetch_add(1, Ordering::Release);
    }

    /// Queues a kernel launch of `func` over `blocks` blocks with its own copy of `args`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown queue or function.
    pub fn launch_kernel(
        &self,
        dev: DeviceId,
        queue: QueueId,
        func: u64,
        blocks: u32,
        args: Vec<u8>,
        timeout_us: u64,
    ) -> Result<u64> {
        if !self.is_function(func) {
            return Err(Error::new(ErrorKind::InvalidHandle, "unknown kernel function"));
        }
        self.slot(dev)?.scheduler.submit_with(queue, Ticket::Args(args), |t| TaskDesc::Kernel {
            func,
            blocks,
            args: t,
            timeout_us,
        })
    }

    /// Stages a launch's argument bytes for a [`TaskDesc::Kernel`] submitted later (through
    /// any transport that reaches this device, such as the davinci fake kernel); returns the
    /// ticket the task names.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`] for a device not open.
    pub fn stage_args(&self, dev: DeviceId, args: Vec<u8>) -> Result<u64> {
        Ok(self.slot(dev)?.scheduler.stage(Ticket::Args(args)))
    }

    /// Stages a batch's (destination, source, length) entries for a [`TaskDesc::CopyBatch`]
    /// submitted later; returns the ticket the task names.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NoDevice`] for a device not open.
    pub fn stage_batch(&self, dev: DeviceId, entries: Vec<(u64, u64, u64)>) -> Result<u64> {
        Ok(self.slot(dev)?.scheduler.stage(Ticket::Batch(entries)))
    }

    /// Drops a staged ticket whose task was never submitted.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when `ticket` is not staged on `dev`.
    pub fn unstage(&self, dev: DeviceId, ticket: u64) -> Result<()> {
        if self.slot(dev)?.scheduler.unstage(ticket) {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::InvalidHandle, "ticket not staged"))
        }
    }

    /// Queues a batch of (destination, source, length) copies as one task.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] for an unknown queue.
    pub fn submit_batch(&self, dev: DeviceId, queue: QueueId, entries: Vec<(u64, u64, u64)>) -> Result<u64> {
        self.slot(dev)?
            .scheduler
            .submit_with(queue, Ticket::Batch(entries), |t| TaskDesc::CopyBatch { batch: t })
    }
}

/// The software NPU's loader: host shared objects as kernel binaries, and tickets staged in the
/// device's scheduler (the same calls as the inherent methods above).
impl Loader for Sim {
    fn load_binary(&self, path: &[u8]) -> std::result::Result<u64, String> {
        use std::os::unix::ffi::OsStrExt;
        Sim::load_binary(self, Path::new(std::ffi::OsStr::from_bytes(path)))
    }

    fn load_binary_data(&self, data: &[u8]) -> std::result::Result<u64, String> {
        Sim::load_binary_data(self, data)
    }

    fn binary_function(&self, binary: u64, name: &str) -> Result<u64> {
        Sim::binary_function(self, binary, name)
    }

    fn is_function(&self, func: u64) -> bool {
        Sim::is_function(self, func)
    }

    fn unload_binary(&self, binary: u64) -> Result<()> {
        Sim::unload_binary(self, binary)
    }

    fn symbol(&self, addr: u64) -> Option<(u64, u64)> {
        let libs: Vec<Arc<Library>> = registry().binaries.values().cloned().collect();
        let refs: Vec<&Library> = libs.iter().map(Arc::as_ref).collect();
        crate::sys::symbol::object_at(&refs, addr)
    }

    fn set_host_hook(&self, hook: HostHook) {
        Sim::set_host_hook(self, hook);
    }

    fn stage_args(&self, dev: DeviceId, args: Vec<u8>) -> Result<u64> {
        Sim::stage_args(self, dev, args)
    }

    fn stage_batch(&self, dev: DeviceId, entries: Vec<(u64, u64, u64)>) -> Result<u64> {
        Sim::stage_batch(self, dev, entries)
    }

    fn unstage(&self, dev: DeviceId, ticket: u64) -> Result<()> {
        Sim::unstage(self, dev, ticket)
    }
}
