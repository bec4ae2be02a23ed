//! A safe Rust API over the aclrs runtime: devices, streams, events, typed device buffers with
//! stream-ordered drop, pinned host buffers, memory pools, kernels, virtual memory management
//! and IPC.
//!
//! This module calls the same runtime as the C ABI (the methods of
//! [`crate::runtime::Runtime`]), never the `extern "C"` functions, and contains no `unsafe`
//! code (`#![forbid(unsafe_code)]`).
//!
//! # Guide
//!
//! Start with [`Runtime::init`] (the process's one `aclInit`; the runtime is finalised when
//! the guard and every object made from it are gone), open a [`Device`], create
//! [`Stream`]s on it, and allocate typed [`DeviceBuffer`]s:
//!
//! ```
//! use ascendcl::safe::{Device, DeviceBuffer, Runtime, Stream};
//!
//! # fn main() -> ascendcl::safe::Result<()> {
//! # std::env::set_var("ACLRS_SIM_INSTANCE", format!("doc{}", std::process::id()));
//! let rt = Runtime::init()?;
//! let dev = Device::open(&rt, 0)?;
//! let stream = Stream::new(&dev)?;
//! // Allocated now, freed in the stream's order when dropped.
//! let mut buf = DeviceBuffer::<f32>::new_on(&stream, 4)?;
//! stream.copy_from_host(&mut buf, &[1.0, 2.0, 3.0, 4.0])?;
//! let mut back = [0.0f32; 4];
//! stream.copy_to_host(&mut back, &buf)?;
//! assert_eq!(back, [1.0, 2.0, 3.0, 4.0]);
//! // A length mismatch is an error, not undefined behaviour.
//! assert!(stream.copy_to_host(&mut [0.0f32; 3], &buf).is_err());
//! # Ok(()) }
//! ```
//!
//! ## Lifetimes by construction
//!
//! - Every object keeps what it needs alive: a buffer holds its device, its owning stream and
//!   its pool, so none of them is destroyed under it.
//! - A buffer allocated on a stream ([`DeviceBuffer::new_on`], [`MemPool::alloc_async`]) is
//!   *owned* by that stream; dropping it frees it in the stream's order
//!   (`aclrtMemPoolFreeAsync`), without waiting.
//! - Using an owned buffer on another stream needs an explicit dependency:
//!   [`Stream::acquire`] records an event on every stream that used the buffer and makes the
//!   new stream wait for it. Without it the operation fails with an [`Error`].
//! - Dropping a buffer that other streams used orders the free after their work (the owner
//!   waits for an event recorded on each), instead of racing it.
//! - A buffer allocated synchronously ([`DeviceBuffer::new`]) has no owner: any stream of its
//!   device may use it, and dropping it first waits for every stream that did.
//! - Copies take typed slices and check lengths; element types are bound by the sealed
//!   [`Pod`] trait (plain numbers), so only plain data crosses to the device.
//!
//! Misuse the types reject at compile time — using a buffer after [`DeviceBuffer::free`]:
//!
//! ```compile_fail,E0382
//! # use ascendcl::safe::{DeviceBuffer, Stream};
//! fn f(stream: &Stream, buf: DeviceBuffer<u32>) {
//!     buf.free().unwrap();
//!     let mut out = [0u32; 1];
//!     stream.copy_to_host(&mut out, &buf).unwrap(); // error: use of moved value
//! }
//! ```
//!
//! Device buffers of a non-[`Pod`] type:
//!
//! ```compile_fail,E0277
//! # use ascendcl::safe::{DeviceBuffer, Stream};
//! fn f(stream: &Stream) {
//!     let _ = DeviceBuffer::<String>::new_on(stream, 1); // error: String is not Pod
//! }
//! ```
//!
//! Implementing [`Pod`] outside this crate (it is sealed):
//!
//! ```compile_fail,E0277
//! #[derive(Clone, Copy)]
//! struct Mine(u8);
//! impl ascendcl::safe::Pod for Mine {} // error: the trait is sealed
//! ```
//!
//! A slice that outlives its buffer:
//!
//! ```compile_fail,E0515
//! # use ascendcl::safe::{DeviceBuffer, DeviceSlice, Stream};
//! fn f(stream: &Stream) -> DeviceSlice<'static, u8> {
//!     let buf = DeviceBuffer::<u8>::new_on(stream, 8).unwrap();
//!     buf.as_slice() // error: `buf` does not live long enough
//! }
//! ```
//!
//! A kernel that outlives its module:
//!
//! ```compile_fail,E0515
//! # use ascendcl::safe::{Device, Kernel, Module};
//! fn f(dev: &Device) -> Kernel<'static> {
//!     let m = Module::load(dev, "k.so").unwrap();
//!     m.kernel("add_custom").unwrap() // error: `m` does not live long enough
//! }
//! ```
//!
//! ## Virtual memory and IPC
//!
//! [`PhysicalMemory`] (`aclrtMallocPhysical`), [`VirtualRange`] (`aclrtReserveMemAddress`) and
//! [`Mapping`] (`aclrtMapMem`) free, release and unmap on drop. A mapping borrows its range, so
//! the range cannot be released under it; physical memory dropped while mapped is freed at the
//! unmap. Slices of a range may span several mappings, so a range is a buffer that grows in
//! place (the `expandable` example).
//!
//! [`IpcExport`] exports a [`DeviceBuffer`] under a key (with a pid whitelist, or to every
//! process) and borrows it, so the memory outlives the key; [`IpcImport`] maps a key another
//! process exported. Both close on drop; close imports before the exporter closes its key.
//!
//! ## Threads
//!
//! Every type is `Send` and `Sync`. The runtime's current device is per thread; each call
//! makes its object's device current on the calling thread first, so objects can move freely
//! between threads.
//!
//! ## Errors
//!
//! Every fallible call returns [`Result`]; [`Error`] is the runtime's error, carrying the
//! `aclError` code and a message. Bad input (lengths, ranges, streams of the wrong device, a
//! missing dependency) is an error, never a panic.
//!
//! ## Modules, bottom to top
//!
//! `pod` and `device` (the runtime guard and opened devices); `inner` (the stream and pool
//! objects that buffers hold, and the cross-stream ordering); `buffer`; `pinned`; `stream`
//! (with [`DeviceBuffer::new_on`]); `event` (with [`Stream::wait_event`]); `pool`, `kernel`,
//! `vmm`; `ipc`. A module uses only modules below it, and the whole API sits on the runtime
//! ([`crate::runtime`]) and the copy planning ([`crate::copy`]).
#![forbid(unsafe_code)]

mod buffer;
mod device;
mod event;
mod inner;
mod ipc;
mod kernel;
mod pinned;
mod pod;
mod pool;
mod stream;
mod vmm;

pub use buffer::{DeviceBuffer, DeviceSlice, DeviceSliceMut};
pub use device::{Device, MemInfo, MemUsage, Runtime};
pub use event::Event;
pub use ipc::{IpcExport, IpcImport};
pub use kernel::{Kernel, KernelArgs, Module};
pub use pinned::PinnedHostBuffer;
pub use pod::Pod;
pub use pool::MemPool;
pub use stream::Stream;
pub use vmm::{granularity, Location, Mapping, PageKind, PhysicalMemory, VirtualRange};

/// The one error type of the safe API: an `aclError` code and a message.
pub use crate::error::AclError as Error;

/// The result of every fallible call of the safe API.
pub type Result<T> = std::result::Result<T, Error>;
