//! Device memory manager (placeholder while the crate is being written).
#![no_std]
#![forbid(unsafe_code)]
