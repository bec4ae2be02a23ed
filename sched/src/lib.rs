//! Task scheduler of aclrs: streams as ordered task rings and the executor that drains them.
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
//! - The executor is plain data driven by `&mut self`; the owner serialises access. There are no
//!   atomics yet, so there is no concurrency facade (`sync` module) yet either.
//! - This crate must not depend on any backend or on `acl-shim`.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod error;
pub mod executor;
pub mod stream;

pub use error::{Error, Result};
pub use executor::{Executor, TaskRunner};
pub use stream::{FailureMode, StreamId};
