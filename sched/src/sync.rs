//! The concurrency facade: every atomic `sched` uses comes from here.
//!
//! Under `cfg(loom)` (set by `cargo xtask loom`) the types are loom's model-checked ones;
//! otherwise they are `core`'s. Nothing else in the crate names `core::sync::atomic`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU64, Ordering};
