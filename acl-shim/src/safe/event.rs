//! Events.

use std::fmt;
use std::sync::Arc;

use super::device::DeviceInner;
use super::{Device, Result, Stream};
use crate::state::stream::{event_flag, Timeout};

/// An event of one device (`aclrtCreateEventWithFlag(ACL_EVENT_SYNC)`): recorded on a stream,
/// waited for by other streams ([`Stream::wait_event`]) or the host, and timed.
pub struct Event {
    pub(crate) device: Arc<DeviceInner>,
    pub(crate) handle: u64,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("handle", &format_args!("{:#x}", self.handle)).finish()
    }
}

impl Event {
    /// Creates an event on `device`.
    ///
    /// # Errors
    ///
    /// When the device has no event left.
    pub fn new(device: &Device) -> Result<Self> {
        const API: &str = "Event::new";
        let handle = device.inner.bind(API)?.create_event(API, event_flag::SYNC, false)?;
        Ok(Self { device: Arc::clone(&device.inner), handle })
    }

    /// Captures the work submitted to `stream` so far (`aclrtRecordEvent`).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_CONTEXT` for a stream of another device.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        const API: &str = "Event::record";
        self.device.same(API, &stream.inner.device)?;
        self.device.bind(API)?.record_event(API, self.handle, stream.inner.handle)
    }

    /// Waits on the host until the captured work is done (`aclrtSynchronizeEvent`).
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn synchronize(&self) -> Result<()> {
        const API: &str = "Event::synchronize";
        self.device.bind(API)?.synchronize_event(API, self.handle, Timeout::Forever)
    }

    /// Whether the captured work is done (`aclrtQueryEventStatus`).
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn is_complete(&self) -> Result<bool> {
        const API: &str = "Event::is_complete";
        self.device.bind(API)?.event_is_complete(API, self.handle)
    }

    /// Milliseconds from this event's record to `end`'s (`aclrtEventElapsedTime`).
    ///
    /// # Errors
    ///
    /// When either event has not completed a record.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        const API: &str = "Event::elapsed_ms";
        self.device.bind(API)?.elapsed_ms(API, self.handle, end.handle)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        const API: &str = "Event::drop";
        if let Ok(rt) = self.device.bind(API) {
            let _ = rt.destroy_event(API, self.handle);
        }
    }
}

impl Stream {
    /// Makes this stream wait until `event`'s recorded work is done (`aclrtStreamWaitEvent`).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_STREAM_CONTEXT` for an event of another device.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        const API: &str = "Stream::wait_event";
        self.inner.device.same(API, &event.device)?;
        self.inner.device.bind(API)?.stream_wait_event(API, self.inner.handle, event.handle)
    }
}
