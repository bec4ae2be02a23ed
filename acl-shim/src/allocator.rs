//! Custom allocator descriptors (`acl/acl_rt_allocator.h`): a user's allocator object and its
//! callbacks, registered per stream and read back by `aclrtAllocatorGetByStream`.
//!
//! Safe Rust: the runtime stores the callbacks and the allocator object as plain values and
//! never calls them (CANN calls them from graph execution, which this runtime does not run).
//! It owns the descriptor and registration tables only.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::error::{AclError, Result};

/// A descriptor: the allocator object and its four callbacks, as addresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Desc {
    /// `aclrtAllocator`.
    pub allocator: usize,
    /// `aclrtAllocatorAllocFunc`.
    pub alloc: usize,
    /// `aclrtAllocatorFreeFunc`.
    pub free: usize,
    /// `aclrtAllocatorAllocAdviseFunc` (optional).
    pub alloc_advise: usize,
    /// `aclrtAllocatorGetAddrFromBlockFunc`.
    pub get_addr: usize,
}

/// Which field a setter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The allocator object.
    Allocator,
    /// The alloc callback.
    Alloc,
    /// The free callback.
    Free,
    /// The alloc-advise callback.
    AllocAdvise,
    /// The get-address-from-block callback.
    GetAddr,
}

#[derive(Debug, Default)]
struct Tables {
    descs: HashMap<u64, Desc>,
    next: u64,
    /// Registrations by stream handle: (descriptor handle, a copy of it at registration).
    by_stream: HashMap<u64, (u64, Desc)>,
}

fn tables() -> MutexGuard<'static, Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    // `relock`: every update is one map insert or remove, or one counter step, after every
    // fallible step; a panic cannot leave a descriptor half-written. Lock order: a leaf.
    crate::sync::relock(T.get_or_init(|| Mutex::new(Tables { next: 1, ..Tables::default() })))
}

const TAG_DESC: u64 = 0xac5d << 48;

/// `aclrtAllocatorCreateDesc`: a new, empty descriptor.
pub fn create_desc() -> u64 {
    let mut t = tables();
    let h = TAG_DESC | t.next;
    t.next += 1;
    t.descs.insert(h, Desc::default());
    h
}

fn bad_desc(api: &str, h: u64) -> AclError {
    AclError::invalid(format!("{api}: allocatorDesc {h:#x} is not a live descriptor"))
}

/// `aclrtAllocatorDestroyDesc`.
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` for an unknown descriptor.
pub fn destroy_desc(api: &str, h: u64) -> Result<()> {
    tables().descs.remove(&h).map(|_| ()).ok_or_else(|| bad_desc(api, h))
}

/// `aclrtAllocatorSet*ToDesc`.
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` for an unknown descriptor or a NULL value.
pub fn set(api: &str, h: u64, field: Field, value: usize) -> Result<()> {
    if value == 0 {
        return Err(AclError::invalid(format!("{api}: the value is NULL")));
    }
    let mut t = tables();
    let d = t.descs.get_mut(&h).ok_or_else(|| bad_desc(api, h))?;
    match field {
        Field::Allocator => d.allocator = value,
        Field::Alloc => d.alloc = value,
        Field::Free => d.free = value,
        Field::AllocAdvise => d.alloc_advise = value,
        Field::GetAddr => d.get_addr = value,
    }
    Ok(())
}

/// `aclrtAllocatorRegister`: registers a complete descriptor for `stream` (replacing any).
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` for a NULL stream, an unknown descriptor, or one without its
/// allocator object, alloc, free or get-address callback.
pub fn register(api: &str, stream: u64, h: u64) -> Result<()> {
    if stream == 0 {
        return Err(AclError::invalid(format!("{api}: stream is NULL")));
    }
    let mut t = tables();
    let d = *t.descs.get(&h).ok_or_else(|| bad_desc(api, h))?;
    let missing = [
        (d.allocator, "allocator object"),
        (d.alloc, "alloc"),
        (d.free, "free"),
        (d.get_addr, "getAddrFromBlock"),
    ]
    .iter()
    .find(|(v, _)| *v == 0)
    .map(|(_, n)| *n);
    if let Some(n) = missing {
        return Err(AclError::invalid(format!("{api}: the descriptor has no {n} set")));
    }
    t.by_stream.insert(stream, (h, d));
    Ok(())
}

/// `aclrtAllocatorGetByStream`: the descriptor handle and its values registered for `stream`.
///
/// # Errors
///
/// `ACL_ERROR_INVALID_PARAM` when nothing is registered for `stream`.
pub fn get_by_stream(api: &str, stream: u64) -> Result<(u64, Desc)> {
    tables()
        .by_stream
        .get(&stream)
        .copied()
        .ok_or_else(|| AclError::invalid(format!("{api}: no allocator is registered for stream {stream:#x}")))
}

/// `aclrtAllocatorUnregister`: unknown streams and repeated calls succeed.
pub fn unregister(stream: u64) {
    tables().by_stream.remove(&stream);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_needs_a_complete_descriptor() {
        let h = create_desc();
        assert!(register("t", 7, h).is_err());
        for (f, v) in [(Field::Allocator, 1), (Field::Alloc, 2), (Field::Free, 3)] {
            set("t", h, f, v).unwrap();
        }
        assert!(register("t", 7, h).is_err(), "no get-address callback");
        set("t", h, Field::GetAddr, 4).unwrap();
        assert!(set("t", h, Field::AllocAdvise, 0).is_err());
        register("t", 7, h).unwrap();
        assert!(register("t", 0, h).is_err());
        let (got, d) = get_by_stream("t", 7).unwrap();
        assert_eq!(got, h);
        assert_eq!(d, Desc { allocator: 1, alloc: 2, free: 3, alloc_advise: 0, get_addr: 4 });
        unregister(7);
        unregister(7);
        assert!(get_by_stream("t", 7).is_err());
        destroy_desc("t", h).unwrap();
        assert!(destroy_desc("t", h).is_err());
        assert!(set("t", h, Field::Alloc, 1).is_err());
    }
}
