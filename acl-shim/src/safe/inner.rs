//! The shared inner objects of streams and pools: what a [`Stream`](super::Stream), a
//! [`MemPool`](super::MemPool) and the buffers, pinned buffers and blocks made on them hold to
//! keep them alive, and the one cross-stream ordering primitive ([`order_after`]).
//!
//! This module sits below every other module of the safe API except `device` and `pod`, so
//! that buffers can hold their stream and pool without importing the modules of those types
//! (no module of `safe` imports a module above it).

use std::sync::Arc;

use hal::DeviceId;

use super::device::DeviceInner;
use super::Result;
use crate::error::AclError;
use crate::runtime::Runtime as Rt;
use crate::state::stream::StreamObj;

/// One live stream; destroyed (after its tasks) when the last holder goes.
pub(crate) struct StreamInner {
    pub(crate) device: Arc<DeviceInner>,
    pub(crate) handle: u64,
}

impl StreamInner {
    /// The runtime (device made current) and the stream's object.
    pub(crate) fn obj(&self, api: &str) -> Result<(&Rt, Arc<StreamObj>)> {
        let rt = self.device.bind(api)?;
        let s = rt.submit_stream(api, self.handle)?;
        Ok((rt, s))
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        const API: &str = "Stream::drop";
        if let Ok(rt) = self.device.bind(API) {
            let _ = rt.destroy_stream(API, self.handle, false);
        }
    }
}

/// Makes stream `waiter` wait for the work submitted so far to stream `on` (one wait for that
/// point of `on`, made by the runtime).
pub(crate) fn order_after(api: &str, waiter: &StreamInner, on: &StreamInner) -> Result<()> {
    if waiter.handle == on.handle {
        return Ok(());
    }
    waiter.device.same(api, &on.device)?;
    let (rt, w) = waiter.obj(api)?;
    let (_, o) = rt.stream(api, on.handle)?;
    let last = rt
        .backend()
        .driver()
        .progress(DeviceId(o.device), o.queue)
        .map_err(|e| AclError::from_hal(e, api))?
        .submitted;
    rt.wait_for_point(api, &w, o.queue, last)
}

/// One live pool; destroyed when the last holder (the [`MemPool`](super::MemPool) or a block)
/// goes.
pub(crate) struct PoolInner {
    pub(crate) device: Arc<DeviceInner>,
    pub(crate) handle: u64,
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        const API: &str = "MemPool::drop";
        if let Ok(rt) = self.device.bind(API) {
            let _ = rt.pool_destroy(API, self.handle);
        }
    }
}
