//! Task scheduler of aclrs: streams as ordered task rings, events, the dependency graph between
//! streams, and the executor that drains them.
//!
//! `sched` sits above `mm` and below the backends and `acl-shim`. It owns the order in which
//! device work runs: each stream is a bounded ring of tasks with increasing sequence numbers,
//! run one at a time in submission order; the [`Executor`] picks the next ready task round-robin
//! across streams and records completion and failures. It knows nothing about what a task does:
//! a [`TaskRunner`] supplied by the caller (the software NPU's engines, or device firmware) runs
//! it.
//!
//! # Design rules
//!
//! - `no_std` unconditionally, with `alloc` for the stream table and rings; no `unsafe`.
//! - Submission never grows memory without bound: a full ring returns [`Error::Full`].
//! - The executor is plain data driven by `&mut self`; the owner serialises access.
//! - Lock-free state shared between threads (the published completed sequence of
//!   [`progress`]) imports its atomics only through the `sync` facade, which switches to loom
//!   under `cfg(loom)`.
//! - Descriptors cross threads through [`ring`]'s bounded single-producer, single-consumer
//!   rings (two sequence words; the slot memory is the owner's, through [`SlotStorage`]).
//! - The executor implements `mm`'s [`StreamOrder`] oracle.
//! - Threads that share a backend's executor wake each other by the rules of [`wake`]: no
//!   system call per task in steady state.
//! - This crate must not depend on any backend or on `acl-shim`.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod error;
pub mod event;
pub mod executor;
pub mod graph;
pub mod inbox;
pub mod progress;
pub mod ring;
pub mod stream;
mod sync;
pub mod wake;

pub use error::{Error, Result};
pub use event::{EventId, EventStatus};
pub use executor::{Clock, Executor, TaskRunner};
pub use graph::DepGraph;
pub use mm::order::{StreamOrder, StreamPoint};
pub use progress::Progress;
pub use ring::{CachePadded, Full, Ring, SlotStorage, WordSlots};
pub use stream::{FailureMode, StreamId};
