//! Kernel binaries on the software NPU: host shared objects opened with `dlopen`, kernels found
//! with `dlsym` and called through the sim kernel ABI.
//!
//! This is the only place that loads foreign code or calls it. It must not decide when a kernel
//! runs or on how many threads (that is [`crate::kernel`]).

use std::ffi::{c_void, CStr, CString};
use std::io;
use std::path::Path;

/// The sim kernel ABI: `void NAME(uint32_t block_idx, uint32_t block_dim, void *args)`.
type KernelAbi = unsafe extern "C" fn(u32, u32, *mut c_void);

/// An open shared object.
///
/// # Invariants
///
/// `handle` is a handle `dlopen` returned and that has not been closed; it is closed exactly
/// once, on drop.
#[derive(Debug)]
pub(crate) struct Library {
    handle: *mut c_void,
}

// SAFETY: a `dlopen` handle is a process-wide token; `dlsym` and `dlclose` may be called on it
// from any thread (the dynamic linker serialises them internally).
unsafe impl Send for Library {}
// SAFETY: as above; `&Library` only allows `dlsym`, which is thread safe.
unsafe impl Sync for Library {}

fn dl_error() -> io::Error {
    // SAFETY: dlerror takes no arguments; it returns NULL or a NUL-terminated string owned by
    // the dynamic linker, valid until the next dl* call on this thread, and we copy it at once.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        return io::Error::other("unknown dynamic-linker error");
    }
    // SAFETY: non-null, NUL-terminated (see above).
    let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    io::Error::other(text)
}

impl Library {
    /// Opens the shared object at `path` with all its symbols bound now.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `c` is a valid NUL-terminated path. Loading runs the object's initialisers,
        // which is the documented meaning of aclrtBinaryLoadFromFile on the software NPU.
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dl_error());
        }
        // INVARIANT: a fresh, open handle.
        Ok(Self { handle })
    }

    /// Finds the kernel `name`; `None` when the object does not export it. A symbol `dlsym`
    /// finds in one of the object's dependencies (`exit` in libc, say) is not the object's.
    pub(crate) fn kernel(&self, name: &str) -> Option<Kernel> {
        let c = CString::new(name).ok()?;
        // SAFETY: `handle` is open (invariant) and `c` is NUL-terminated.
        let sym = unsafe { libc::dlsym(self.handle, c.as_ptr()) };
        if sym.is_null() || !self.defines(sym) {
            return None;
        }
        // SAFETY: a non-null symbol address exported by the object; by the sim kernel ABI an
        // exported kernel has the `KernelAbi` signature. Calling it is still `unsafe`
        // (see `Kernel::call`).
        let f = unsafe { std::mem::transmute::<*mut c_void, KernelAbi>(sym) };
        Some(Kernel { f })
    }
}

/// `RTLD_DL_LINKMAP` of `<dlfcn.h>`: `dladdr1` returns the object's `struct link_map *`.
const RTLD_DL_LINKMAP: libc::c_int = 2;

impl Library {
    /// Whether the address `sym` lies in this object itself, not in one of its dependencies:
    /// the link map `dladdr1` names for the address is this handle's own.
    pub(crate) fn defines(&self, sym: *mut c_void) -> bool {
        let mut own: *mut c_void = std::ptr::null_mut();
        // SAFETY: `handle` is open (invariant); RTLD_DI_LINKMAP writes one `struct link_map *`
        // into the pointer-sized `own`.
        let rc = unsafe { libc::dlinfo(self.handle, libc::RTLD_DI_LINKMAP, (&raw mut own).cast()) };
        if rc != 0 || own.is_null() {
            return false;
        }
        // SAFETY: `Dl_info` is plain data (pointers), valid when zeroed; dladdr1 only writes it.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let mut map: *mut c_void = std::ptr::null_mut();
        // SAFETY: `info` and `map` are valid for writes; RTLD_DL_LINKMAP makes `map` receive the
        // `struct link_map *` of the object containing `sym` (an address, never dereferenced).
        let found = unsafe { libc::dladdr1(sym.cast_const(), &raw mut info, &raw mut map, RTLD_DL_LINKMAP) };
        found != 0 && map == own
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: `handle` is open and closed only here (invariant); kernels of it are only
        // called while a `&Library` is borrowed, so none runs now.
        unsafe { libc::dlclose(self.handle) };
    }
}

/// A kernel function of a [`Library`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernel {
    f: KernelAbi,
}

/// A fault that stopped a kernel block: the signal, its `si_code` and the faulting address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawFault {
    /// `SIGSEGV` or `SIGBUS`.
    pub(crate) signal: i32,
    /// The signal's `si_code` (`SEGV_MAPERR`, `SEGV_ACCERR`, `BUS_ADRERR`, ...).
    pub(crate) code: i32,
    /// The address the kernel touched.
    pub(crate) addr: u64,
}

extern "C" {
    /// `csrc/fault.c`: installs the SIGSEGV/SIGBUS handler once per process; 0 on success.
    fn aclrs_sim_fault_install() -> libc::c_int;
    /// `csrc/fault.c`: calls `f(block_idx, block_dim, args)` under `sigsetjmp`; 0 when it
    /// returned, else the signal of the fault that stopped it (`addr`, `code` written).
    fn aclrs_sim_call_kernel(
        f: KernelAbi,
        block_idx: u32,
        block_dim: u32,
        args: *mut c_void,
        addr: *mut usize,
        code: *mut libc::c_int,
    ) -> libc::c_int;
}

/// Installs the fault handler of kernel threads (once per process; later calls do nothing).
/// The handler acts only on a fault raised on a thread inside [`Kernel::call`]; any other
/// SIGSEGV or SIGBUS goes to the handler installed before it (or the default action).
///
/// # Errors
///
/// The OS error when `sigaction` fails.
pub(crate) fn install_fault_handler() -> io::Result<()> {
    // SAFETY: the C function takes no arguments; it runs `sigaction` once (pthread_once) and
    // keeps the previous handlers for chaining.
    if unsafe { aclrs_sim_fault_install() } == 0 {
        Ok(())
    } else {
        Err(io::Error::other("cannot install the kernel fault handler (sigaction failed)"))
    }
}

impl Kernel {
    /// Runs block `block_idx` of `block_dim` with the argument bytes at `args_addr`; the fault
    /// that stopped it, if one did.
    ///
    /// `lib` must be the library the kernel came from; borrowing it keeps the code loaded for
    /// the call. [`install_fault_handler`] must have run for faults to be caught.
    pub(crate) fn call(
        &self,
        lib: &Library,
        block_idx: u32,
        block_dim: u32,
        args_addr: usize,
    ) -> Option<RawFault> {
        let _loaded = lib;
        // CAST: the address of the launch's argument copy (0 for none) back to a pointer.
        let args = args_addr as *mut c_void;
        let (mut addr, mut code) = (0usize, 0 as libc::c_int);
        // SAFETY:
        // - the code is loaded: `lib` (the library `f` came from) is borrowed for the call;
        // - the signature is the sim kernel ABI, which the kernel's author promised by
        //   exporting it for the software NPU (the documented contract of
        //   aclrtBinaryGetFunction);
        // - `args` points to the launch's own copy of the argument bytes (or is NULL when the
        //   launch had none), alive until every block has returned;
        // - the trampoline calls `f` itself, so when a fault makes it `siglongjmp` back, only
        //   the kernel's C frames are skipped, never a Rust frame; `addr` and `code` are valid
        //   for writes.
        // What the kernel does with device pointers is the program's business, exactly as on
        // the hardware; a fault it takes is contained here.
        let signal = unsafe {
            aclrs_sim_call_kernel(self.f, block_idx, block_dim, args, &raw mut addr, &raw mut code)
        };
        // CAST: an address (usize) widened to u64.
        (signal != 0).then_some(RawFault { signal, code, addr: addr as u64 })
    }
}
