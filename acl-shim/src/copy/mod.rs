//! Copy planning: what a 2D or batch copy spans and may do ([`plan`], safe and testable
//! without a runtime). Queuing a planned copy as tasks is [`crate::api::copy`]'s.
//!
//! A leaf: the C edge ([`crate::ffi`]) and the safe API ([`crate::safe`]) sit on top of this
//! module; it uses only the memory state's address kinds, never the runtime, and never touches a
//! raw host pointer.

pub mod plan;
