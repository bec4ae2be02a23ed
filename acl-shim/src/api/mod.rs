//! The runtime's calls: the `impl Runtime` blocks behind the C exports and the safe API, one
//! file per part of the ACL API, over the per-device state of [`crate::state`] and
//! [`crate::device`].
//!
//! Each file adds methods to [`crate::runtime::Runtime`]; none defines state the runtime embeds.
//! Nothing below this layer (the runtime, the device, its state) uses it. Between the files,
//! the only names imported are [`obs`]'s hooks (`after_oom`, `write_env_snapshot`), used by
//! [`device`], [`memory`], [`pool`] and [`vmm`], and [`copy`]'s `submit` and [`exception`]'s
//! record and `report`, used by [`memory_ext`] (neither imports another file); everything else is a method call on the
//! `Runtime`, and some of those still cross both ways (a free in [`memory`] asks [`pool`]
//! whether the address is a pool block, and [`pool`] frees plain memory through [`memory`];
//! [`device`]'s teardown settles streams through [`stream`]; the context calls, which set and
//! reset the device, are [`context`]'s, above both).

pub mod context;
pub mod copy;
pub mod device;
pub mod device_info;
pub mod exception;
pub mod host_register;
pub mod ipc;
pub mod ipc_event;
pub mod memory;
pub mod memory_ext;
pub mod notify;
pub mod obs;
pub mod peer;
pub mod pool;
pub(crate) mod staging;
pub mod stream;
pub mod stream_ctl;
pub mod vmm;

pub use device::finalize;
