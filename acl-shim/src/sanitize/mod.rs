//! The software NPU's checks of device memory use: contained kernel faults named by address and
//! allocation ([`fault`]).
//!
//! This module owns how a failure the device found is explained to the program: it reads the
//! fault the backend kept for a queue (`hal_sim::fault`) and the device's address map to name
//! the allocation the address lies in or next to. It sits beside [`crate::api`] (its files are
//! `impl Runtime` blocks too) and below the C and Rust APIs; nothing in [`crate::state`] or
//! [`crate::runtime`] uses it.

pub mod fault;
