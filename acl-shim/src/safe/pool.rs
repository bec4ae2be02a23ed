//! Stream-ordered memory pools.

use std::fmt;
use std::sync::Arc;

use super::buffer::Alloc;
use super::inner::PoolInner;
use super::pod::Pod;
use super::{Device, DeviceBuffer, Result, Stream};
use crate::error::AclError;
use crate::state::pool::{attr, AttrValue, PoolProps};

/// A stream-ordered memory pool of one device (`aclrtMemPoolCreate`).
///
/// [`MemPool::alloc_async`] hands out blocks in a stream's order; dropping a block gives it
/// back in the same stream's order (`aclrtMemPoolFreeAsync`), so a later allocation on that
/// stream can reuse it at once. The pool lives until it and all its blocks are gone.
#[derive(Clone)]
pub struct MemPool {
    inner: Arc<PoolInner>,
}

impl fmt::Debug for MemPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemPool").field("handle", &format_args!("{:#x}", self.inner.handle)).finish()
    }
}

impl MemPool {
    /// Creates a pool on `device` that may grow to `max_size` bytes (0: the device's HBM).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` for a `max_size` above the device's HBM;
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on SoCs without pools.
    pub fn new(device: &Device, max_size: u64) -> Result<Self> {
        const API: &str = "MemPool::new";
        let props = PoolProps {
            alloc_type: 0,
            handle_type: 0,
            location_id: device.inner.id,
            location_type: 1,
            max_size,
            reserved_zero: true,
        };
        let handle = device.inner.bind(API)?.pool_create(API, &props)?;
        Ok(Self { inner: Arc::new(PoolInner { device: Arc::clone(&device.inner), handle }) })
    }

    /// The pool's opaque handle (the `aclrtMemPool` value the C ABI would see).
    pub fn handle(&self) -> u64 {
        self.inner.handle
    }

    /// Allocates `len` elements in `stream`'s order (`aclrtMemPoolMallocAsync`). The buffer
    /// is owned by `stream`: dropping it frees it in that stream's order.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for `len` 0 or an overflowing size;
    /// `ACL_ERROR_RT_STREAM_CONTEXT` for a stream of another device; the pool's error when it
    /// is exhausted.
    pub fn alloc_async<T: Pod>(&self, stream: &Stream, len: usize) -> Result<DeviceBuffer<T>> {
        const API: &str = "MemPool::alloc_async";
        let dev = &self.inner.device;
        dev.same(API, &stream.inner.device)?;
        let bytes = len
            .checked_mul(T::SIZE)
            .filter(|&b| b > 0)
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| AclError::invalid(format!("{API}: {len} elements is not a valid size")))?;
        let ptr = dev
            .bind(API)?
            .pool_malloc_async(API, bytes, self.inner.handle, stream.inner.handle)?
            .ok_or_else(|| AclError::invalid(format!("{API}: the pool returned no block")))?;
        let alloc = Alloc::new(
            Arc::clone(dev),
            ptr,
            bytes,
            Some(Arc::clone(&stream.inner)),
            Some(Arc::clone(&self.inner)),
        );
        Ok(DeviceBuffer::from_alloc(alloc, len))
    }

    /// Gives memory the pool keeps beyond `keep` bytes back to the device
    /// (`aclrtMemPoolTrimTo`).
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn trim_to(&self, keep: u64) -> Result<()> {
        const API: &str = "MemPool::trim_to";
        self.inner.device.bind(API)?.pool_trim_to(API, self.inner.handle, keep)
    }

    /// Sets the release threshold: memory the pool keeps across synchronisations.
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        const API: &str = "MemPool::set_release_threshold";
        self.inner.device.bind(API)?.pool_set_attr(
            API,
            self.inner.handle,
            attr::RELEASE_THRESHOLD,
            AttrValue::U64(bytes),
        )
    }

    fn get_u64(&self, api: &str, a: u32) -> Result<u64> {
        match self.inner.device.bind(api)?.pool_get_attr(api, self.inner.handle, a)? {
            AttrValue::U64(v) => Ok(v),
            AttrValue::U32(v) => Ok(u64::from(v)),
        }
    }

    /// Bytes the pool holds from the device now.
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn reserved_bytes(&self) -> Result<u64> {
        self.get_u64("MemPool::reserved_bytes", attr::RESERVED_MEM_CURRENT)
    }

    /// Bytes of the pool's blocks in use now.
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn used_bytes(&self) -> Result<u64> {
        self.get_u64("MemPool::used_bytes", attr::USED_MEM_CURRENT)
    }
}
