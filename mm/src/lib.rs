//! Device-memory manager of aclrs: physical frames and device virtual addresses (VA).
//!
//! `mm` sits directly above `hal` and below `sched`. It owns every bookkeeping decision about
//! device memory: which physical frames of the device's high-bandwidth memory (HBM) are in use
//! ([`phys`]), which device VA ranges inside a window are taken ([`va`]), how a request is rounded
//! and which pages may back it ([`policy`]), the slab of small objects ([`slab`]), the allocator
//! that ties them together with exact accounting and its stream-ordered frees ([`device`]), the
//! address map that says which region contains an address ([`addr_map`]), a plain allocation
//! table for other windows ([`heap`]), and the stream-order question it asks `sched` ([`order`]). It manages
//! numbers, never host memory, so it needs no `unsafe`; it never calls a driver (backing goes
//! through the [`device::Backer`] trait).
//!
//! # Design rules
//!
//! - `no_std` unconditionally, with `alloc` for tables sized up front or grown by doubling (the
//!   allocators' hot paths allocate nothing on the heap in steady state); the same code runs in
//!   device firmware (`aarch64-unknown-none`) and inside the software NPU.
//! - Every operation is all or nothing: a failed call leaves the allocator exactly as it was.
//! - Errors are the small [`Error`] enum with stable numbers; [`hal::Error`] is reached through
//!   an explicit `From` impl.
//! - This crate must not depend on `sched` or on any backend.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod addr_map;
pub mod device;
pub mod error;
pub mod heap;
pub mod ipc;
pub mod order;
pub mod phys;
pub mod policy;
pub mod pool;
pub mod slab;
pub mod va;
pub mod vmm;

pub use error::{Error, Result};
