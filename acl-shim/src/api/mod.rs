//! The runtime's calls: the `impl Runtime` blocks behind the C exports and the safe API, one
//! file per part of the ACL API, over the per-device state of [`crate::state`] and
//! [`crate::device`].
//!
//! Each file adds methods to [`crate::runtime::Runtime`]; none defines state the runtime embeds.
//! They use each other in one direction only: [`device`] (set, reset, teardown, finalize) may
//! call every other file; [`pool`], [`vmm`], [`ipc`], [`peer`], [`host_register`] and
//! `staging` may call [`memory`], [`stream`] and [`obs`]; [`memory`] may call [`stream`] and
//! [`obs`]; [`stream`] and [`obs`] call none of the others. Nothing below this layer (the
//! runtime, the device and its state) calls up into it.

pub mod device;
pub mod host_register;
pub mod ipc;
pub mod memory;
pub mod obs;
pub mod peer;
pub mod pool;
pub(crate) mod staging;
pub mod stream;
pub mod vmm;

pub use device::finalize;
