//! Streams and their copies.

use std::fmt;
use std::sync::Arc;

use super::buffer::{byte_len, Alloc};
use super::inner::StreamInner;
use super::pod::{self, Pod};
use super::{Device, DeviceBuffer, DeviceSlice, DeviceSliceMut, PinnedHostBuffer, Result};
use crate::error::AclError;
use crate::state::memory::{kind, DstBytes, MallocApi, SrcBytes};
use crate::state::stream::Timeout;

fn same_len(api: &str, dst: usize, src: usize) -> Result<()> {
    if dst != src {
        return Err(AclError::invalid(format!(
            "{api}: the destination holds {dst} elements but the source {src}; lengths must match"
        )));
    }
    Ok(())
}

/// A stream of one device: an ordered queue of copies, kernels and event operations.
///
/// Cloning is cheap and shares the stream; it is destroyed (after its queued work) when the
/// last clone and every buffer it owns are gone.
#[derive(Clone)]
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("handle", &format_args!("{:#x}", self.inner.handle))
            .field("device", &self.inner.device.id)
            .finish()
    }
}

impl Stream {
    /// Creates a stream on `device` (`aclrtCreateStream`).
    ///
    /// # Errors
    ///
    /// When the device has no stream left.
    pub fn new(device: &Device) -> Result<Self> {
        const API: &str = "Stream::new";
        let handle = device.inner.bind(API)?.create_stream(API, 0)?;
        Ok(Self { inner: Arc::new(StreamInner { device: Arc::clone(&device.inner), handle }) })
    }

    /// The stream's opaque handle (the `aclrtStream` value the C ABI would see).
    pub fn handle(&self) -> u64 {
        self.inner.handle
    }

    /// The id of the stream's device.
    pub fn device_id(&self) -> u32 {
        self.inner.device.id
    }

    /// Waits for every task submitted so far (`aclrtSynchronizeStream`).
    ///
    /// # Errors
    ///
    /// The failure of a task of the stream (a kernel fault, for example).
    pub fn synchronize(&self) -> Result<()> {
        const API: &str = "Stream::synchronize";
        self.inner.device.bind(API)?.synchronize_stream(API, self.inner.handle, Timeout::Forever)
    }

    /// Whether every task submitted so far has finished (`aclrtStreamQuery`).
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn is_complete(&self) -> Result<bool> {
        const API: &str = "Stream::is_complete";
        self.inner.device.bind(API)?.stream_is_complete(API, self.inner.handle)
    }

    /// The explicit cross-stream dependency: makes this stream wait for the work every other
    /// stream has submitted on `buffer` so far (an event recorded on each, waited for here),
    /// and lets this stream use the buffer from now on.
    ///
    /// Dropping the buffer afterwards orders its free after this stream's work too.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_CONTEXT` for a buffer of another device.
    pub fn acquire<T: Pod>(&self, buffer: &DeviceBuffer<T>) -> Result<()> {
        buffer.alloc.acquire("Stream::acquire", &self.inner)
    }

    fn use_alloc(&self, api: &str, a: &Alloc) -> Result<()> {
        a.check_use(api, &self.inner)
    }

    /// Copies host elements into device memory in the stream's order. As with
    /// `aclrtMemcpyAsync` from pageable memory, this waits for the stream's earlier work,
    /// then copies, and returns when the copy is done.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when the lengths differ or this stream may not use the buffer
    /// (see [`Stream::acquire`]); the failure of earlier work on the stream.
    pub fn copy_from_host<'a, T: Pod>(&self, dst: impl Into<DeviceSliceMut<'a, T>>, src: &[T]) -> Result<()> {
        const API: &str = "Stream::copy_from_host";
        let dst = dst.into();
        same_len(API, dst.len(), src.len())?;
        self.use_alloc(API, dst.alloc)?;
        if src.is_empty() {
            return Ok(());
        }
        let (rt, s) = self.inner.obj(API)?;
        let bytes = pod::to_bytes(src);
        let d = dst.as_slice();
        let (addr, n) = (d.addr(), d.size_bytes());
        // CAST: the address of the staging bytes, for the plan's window checks.
        let host = bytes.as_ptr() as usize as u64;
        let plan = rt.plan_memcpy(API, addr, n, host, n, kind::H2D)?;
        rt.sync_stream_obj(API, &s)?;
        rt.copy(API, DstBytes::Addr(addr), SrcBytes::Host(&bytes), plan.count)
    }

    /// Copies device elements to the host in the stream's order: waits for the stream's
    /// earlier work, then copies, and returns when the copy is done.
    ///
    /// # Errors
    ///
    /// As [`Stream::copy_from_host`].
    pub fn copy_to_host<'a, T: Pod>(&self, dst: &mut [T], src: impl Into<DeviceSlice<'a, T>>) -> Result<()> {
        const API: &str = "Stream::copy_to_host";
        let src = src.into();
        same_len(API, dst.len(), src.len())?;
        self.use_alloc(API, src.alloc)?;
        if dst.is_empty() {
            return Ok(());
        }
        let (rt, s) = self.inner.obj(API)?;
        let n = src.size_bytes();
        let mut bytes = vec![0u8; dst.len() * T::SIZE];
        // CAST: the address of the staging bytes, for the plan's window checks.
        let host = bytes.as_ptr() as usize as u64;
        let plan = rt.plan_memcpy(API, host, n, src.addr(), n, kind::D2H)?;
        rt.sync_stream_obj(API, &s)?;
        rt.copy(API, DstBytes::Host(&mut bytes), SrcBytes::Addr(src.addr()), plan.count)?;
        pod::from_bytes(&bytes, dst);
        Ok(())
    }

    /// Copies device elements to device elements asynchronously (a copy task on the stream).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when the lengths differ or this stream may not use a buffer.
    pub fn copy<'a, 'b, T: Pod>(
        &self,
        dst: impl Into<DeviceSliceMut<'a, T>>,
        src: impl Into<DeviceSlice<'b, T>>,
    ) -> Result<()> {
        const API: &str = "Stream::copy";
        let (dst, src) = (dst.into(), src.into());
        same_len(API, dst.len(), src.len())?;
        self.use_alloc(API, dst.alloc)?;
        self.use_alloc(API, src.alloc)?;
        let (rt, s) = self.inner.obj(API)?;
        let d = dst.as_slice();
        let plan = rt.plan_memcpy(API, d.addr(), d.size_bytes(), src.addr(), src.size_bytes(), kind::D2D)?;
        crate::api::copy::submit(rt, API, &s, d.addr(), src.addr(), plan.count, true)
    }

    /// Copies pinned host elements to device elements asynchronously. The pinned buffer's
    /// host reads and writes wait for this stream until it is done.
    ///
    /// # Errors
    ///
    /// As [`Stream::copy`].
    pub fn copy_from_pinned<'a, T: Pod>(
        &self,
        dst: impl Into<DeviceSliceMut<'a, T>>,
        src: &PinnedHostBuffer<T>,
    ) -> Result<()> {
        const API: &str = "Stream::copy_from_pinned";
        let dst = dst.into();
        same_len(API, dst.len(), src.len())?;
        self.use_alloc(API, dst.alloc)?;
        let (rt, s) = self.inner.obj(API)?;
        let d = dst.as_slice();
        let plan = rt.plan_memcpy(API, d.addr(), d.size_bytes(), src.addr(), src.size_bytes(), kind::H2D)?;
        src.add_pending(&self.inner);
        crate::api::copy::submit(rt, API, &s, d.addr(), src.addr(), plan.count, false)
    }

    /// Copies device elements to pinned host elements asynchronously. The pinned buffer's
    /// host reads wait for this stream until it is done.
    ///
    /// # Errors
    ///
    /// As [`Stream::copy`].
    pub fn copy_to_pinned<'a, T: Pod>(
        &self,
        dst: &mut PinnedHostBuffer<T>,
        src: impl Into<DeviceSlice<'a, T>>,
    ) -> Result<()> {
        const API: &str = "Stream::copy_to_pinned";
        let src = src.into();
        same_len(API, dst.len(), src.len())?;
        self.use_alloc(API, src.alloc)?;
        let (rt, s) = self.inner.obj(API)?;
        let plan =
            rt.plan_memcpy(API, dst.addr(), dst.size_bytes(), src.addr(), src.size_bytes(), kind::D2H)?;
        dst.add_pending(&self.inner);
        crate::api::copy::submit(rt, API, &s, dst.addr(), src.addr(), plan.count, false)
    }

    /// Sets every byte of `dst` to `value` (a synchronous `aclrtMemset` after the stream's
    /// earlier work).
    ///
    /// # Errors
    ///
    /// When this stream may not use the buffer.
    pub fn memset<'a, T: Pod>(&self, dst: impl Into<DeviceSliceMut<'a, T>>, value: u8) -> Result<()> {
        const API: &str = "Stream::memset";
        let dst = dst.into();
        self.use_alloc(API, dst.alloc)?;
        let (rt, s) = self.inner.obj(API)?;
        let d = dst.as_slice();
        let plan = rt.plan_memset(API, d.addr(), d.size_bytes(), d.size_bytes())?;
        rt.sync_stream_obj(API, &s)?;
        rt.memset(API, plan, d.addr(), value)
    }
}

impl<T: Pod> DeviceBuffer<T> {
    /// Allocates `len` elements owned by `stream`: dropping the buffer frees it in the
    /// stream's order (`aclrtMemPoolFreeAsync` of plain memory), without blocking.
    ///
    /// # Errors
    ///
    /// As [`DeviceBuffer::new`].
    pub fn new_on(stream: &Stream, len: usize) -> Result<Self> {
        const API: &str = "DeviceBuffer::new_on";
        let dev = &stream.inner.device;
        let bytes = byte_len::<T>(API, len)?;
        let ptr = dev.bind(API)?.malloc(API, bytes, 0, MallocApi::Malloc, &[])?;
        Ok(Self::from_alloc(
            Alloc::new(Arc::clone(dev), ptr, bytes, Some(Arc::clone(&stream.inner)), None),
            len,
        ))
    }
}
