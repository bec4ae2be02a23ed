//! Hardware abstraction layer of aclrs: the bottom of the stack.
//!
//! `hal` owns the vocabulary every other layer speaks — device ids, device virtual addresses
//! (VA), page sizes, memory attributes, the driver error kinds — and the driver traits that the
//! backends implement: the software NPU (`hal-sim`) and the published Ascend driver
//! (`hal-davinci`). It contains no syscalls and no `unsafe`; it is `no_std` so that device
//! firmware on the AI CPU can share it.
//!
//! # Design rules
//!
//! - Traits are small and split by use case ([`DeviceControl`], [`MemoryBacking`],
//!   [`PhysicalMemory`], [`PinnedHost`], [`CopyEngine`], [`Queues`], [`Events`]; the [`Loader`] is a capability); [`Driver`] is their composite.
//! - Every trait is object safe, so the runtime may hold a backend behind a closed enum or a
//!   `dyn` reference, and generic code in `mm`/`sched` may take `D: Driver` statically.
//! - Errors are [`Error`]: a stable [`ErrorKind`] number that crosses the C ABI unchanged.
//! - This crate must not depend on `mm`, `sched` or any backend.
//!
//! # For users
//!
//! The runtime (`acl-shim`) decides every VA; it asks a backend only to back a VA range with
//! physical pages, to map a physical handle, to copy or set bytes, and to run queued tasks.
//!
//! # For backend implementors
//!
//! Implement each trait for your device type. Return [`ErrorKind::NotSupported`] for a feature
//! the hardware lacks; never panic on a bad argument.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod addr;
pub mod copy;
pub mod davinci_abi;
pub mod driver;
pub mod error;
pub mod layout;
pub mod soc_facts;
pub mod task;

pub use addr::{DeviceAddr, DeviceId, PageSize, VaRange};
pub use driver::{
    AbortHead, BackRequest, CopyEngine, DeviceControl, DeviceInfo, Driver, Events, HostBytes, HostBytesMut,
    HostHook, Loader, MemAttr, MemoryBacking, MemoryInfo, MemoryKind, PhysHandle, PhysicalMemory, PinnedHost,
    QueuePort, QueueProgress, Queues, ShareInfo, ShareKind, ShareName, Sharing, SocProfile, SHARE_NAME_BYTES,
};
pub use error::{Error, ErrorKind, Result};
pub use task::{EventId, EventInfo, EventWait, HostCall, QueueId, TaskDesc, TaskStatus, WaitCompare};
