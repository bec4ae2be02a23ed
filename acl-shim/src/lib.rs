//! `libascendcl`: the C ABI of aclrs, with CANN's names, signatures and numeric values, so that
//! C and C++ programs written for CANN build and run unchanged on the software NPU.
//!
//! Layer: the top of the stack (`std`). It owns the runtime glue — initialisation, devices and
//! contexts, the current device of each thread, the last error message — and the C exports. It
//! picks a backend at `aclInit`: the software NPU (`hal-sim`) unless `ACLRS_BACKEND` says
//! otherwise.
//!
//! # Design rules
//!
//! - `unsafe` lives only in [`ffi`], the C edge; [`runtime`] is safe Rust.
//! - Every export catches panics, checks every pointer and converts `Result` to `aclError` in
//!   one place; every failure leaves a readable message for `aclGetRecentErrMsg`.
//! - A failed call changes no state.
//!
//! # Layers
//!
//! A module uses only modules below it (no import cycles), top first:
//!
//! - [`ffi`] (the C ABI) and [`safe`] (the Rust API);
//! - [`api`]: the runtime's calls, `impl Runtime` blocks by part of the ACL API (devices,
//!   memory, pools, VMM, IPC, peer access, host registration, staging, streams, memory walks);
//!   and the queuing of a planned copy as tasks (`api::copy`);
//! - [`runtime`]: the `Runtime` struct, the `RUNTIME` global and its lookup, `aclInit`;
//! - `tls`: the calling thread's state (current device, submit cache), one thread-local;
//! - [`backend`]: the `Backend` enum and its selection from `ACLRS_BACKEND`;
//! - [`device`]: one `Device` per logical device, owning its state;
//! - [`state`]: that state (memory tables, pools, VMM, streams, the memory history) and its logic
//!   taking parameters;
//! - leaves: [`handles`], [`sync`], [`codes`], [`error`], [`log`], [`allocator`], and [`copy`]
//!   (2D and batch copy planning, over the address kinds of `state::memory`).

// First: its `trace_args!` macro is used by the C exports of `ffi`.
#[macro_use]
pub mod log;

pub mod allocator;
pub mod api;
pub mod backend;
pub mod codes;
pub mod copy;
pub mod device;
pub mod error;
pub mod ffi;
pub mod handles;
pub mod runtime;
pub mod safe;
pub mod sanitize;
pub mod state;
pub mod sync;
pub(crate) mod tls;

/// Serialises the unit tests that start a software NPU: a software NPU reserves the fixed
/// pinned-host VA window of the process, so two at once in one test binary collide.
#[cfg(test)]
pub(crate) static SIM_TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub use error::{AclError, Result};
