//! Pinned (page-locked) host buffers.

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use super::device::Shared;
use super::inner::StreamInner;
use super::pod::{self, Pod};
use super::{Result, Runtime};
use crate::error::AclError;
use crate::state::memory::{DstBytes, SrcBytes};
use crate::state::stream::Timeout;

/// `len` elements of pinned host memory (`aclrtMallocHost`), the fast path of asynchronous
/// host/device copies ([`super::Stream::copy_from_pinned`], [`super::Stream::copy_to_pinned`]).
///
/// The host reaches its contents through [`PinnedHostBuffer::write`] and
/// [`PinnedHostBuffer::read`], which first wait for every stream with a copy of this buffer in
/// flight, so the host never races the device.
pub struct PinnedHostBuffer<T: Pod> {
    shared: Arc<Shared>,
    ptr: u64,
    len: usize,
    pending: Mutex<Vec<Arc<StreamInner>>>,
    _t: PhantomData<T>,
}

impl<T: Pod> fmt::Debug for PinnedHostBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedHostBuffer")
            .field("addr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Pod> PinnedHostBuffer<T> {
    /// Allocates `len` zeroed elements.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for `len` 0 or an overflowing size;
    /// `ACL_ERROR_RT_MEMORY_ALLOCATION` when no more host memory can be pinned.
    pub fn new(rt: &Runtime, len: usize) -> Result<Self> {
        const API: &str = "PinnedHostBuffer::new";
        let bytes = len
            .checked_mul(T::SIZE)
            .filter(|&b| b > 0)
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| AclError::invalid(format!("{API}: {len} elements is not a valid size")))?;
        let ptr = rt.shared.rt.malloc_host(API, bytes)?;
        let buf = Self {
            shared: Arc::clone(&rt.shared),
            ptr,
            len,
            pending: Mutex::new(Vec::new()),
            _t: PhantomData,
        };
        buf.shared.rt.memset(
            API,
            crate::state::memory::SetPlan { dst: crate::state::memory::Loc::Pinned, count: bytes },
            ptr,
            0,
        )?;
        Ok(buf)
    }

    /// Allocates a pinned copy of `values`.
    ///
    /// # Errors
    ///
    /// As [`PinnedHostBuffer::new`].
    pub fn from_slice(rt: &Runtime, values: &[T]) -> Result<Self> {
        let mut b = Self::new(rt, values.len())?;
        b.write(values)?;
        Ok(b)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never: buffers hold at least one element).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first element (in the runtime's pinned-host window).
    pub fn addr(&self) -> u64 {
        self.ptr
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> u64 {
        // CAST: checked at allocation.
        (self.len * T::SIZE) as u64
    }

    pub(crate) fn add_pending(&self, s: &Arc<StreamInner>) {
        // Relock: every update is one push or one take of the whole list, all-or-nothing.
        let mut p = crate::sync::relock(&self.pending);
        if !p.iter().any(|x| Arc::ptr_eq(x, s)) {
            p.push(Arc::clone(s));
        }
    }

    /// Waits for every stream with a copy of this buffer in flight.
    fn settle(&self, api: &str) -> Result<()> {
        // Relock: as in `add_pending`.
        let pending = std::mem::take(&mut *crate::sync::relock(&self.pending));
        for s in pending {
            s.device.bind(api)?.synchronize_stream(api, s.handle, Timeout::Forever)?;
        }
        Ok(())
    }

    /// Writes `values` into the buffer, after waiting for copies in flight.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when `values` does not have exactly [`Self::len`] elements;
    /// the failure of a stream that was copying the buffer.
    pub fn write(&mut self, values: &[T]) -> Result<()> {
        const API: &str = "PinnedHostBuffer::write";
        if values.len() != self.len {
            return Err(AclError::invalid(format!(
                "{API}: {} values for a buffer of {} elements",
                values.len(),
                self.len
            )));
        }
        self.settle(API)?;
        let bytes = pod::to_bytes(values);
        self.shared.rt.copy(API, DstBytes::Addr(self.ptr), SrcBytes::Host(&bytes), self.size_bytes())
    }

    /// Reads the buffer into `out`, after waiting for copies in flight.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when `out` does not have exactly [`Self::len`] elements; the
    /// failure of a stream that was copying into the buffer.
    pub fn read(&self, out: &mut [T]) -> Result<()> {
        const API: &str = "PinnedHostBuffer::read";
        if out.len() != self.len {
            return Err(AclError::invalid(format!(
                "{API}: room for {} values from a buffer of {} elements",
                out.len(),
                self.len
            )));
        }
        self.settle(API)?;
        let mut bytes = vec![0u8; self.len * T::SIZE];
        self.shared.rt.copy(API, DstBytes::Host(&mut bytes), SrcBytes::Addr(self.ptr), self.size_bytes())?;
        pod::from_bytes(&bytes, out);
        Ok(())
    }

    /// The contents, after waiting for copies in flight.
    ///
    /// # Errors
    ///
    /// As [`PinnedHostBuffer::read`].
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.len];
        self.read(&mut v)?;
        Ok(v)
    }
}

impl<T: Pod> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        const API: &str = "PinnedHostBuffer::drop";
        if self.settle(API).is_ok() {
            let _ = self.shared.rt.free_host(API, self.ptr);
        }
    }
}
