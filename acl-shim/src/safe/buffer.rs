//! Typed device buffers and their slices.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, Mutex};

use super::device::DeviceInner;
use super::inner::{order_after, PoolInner, StreamInner};
use super::pod::Pod;
use super::{Device, Result};
use crate::error::AclError;
use crate::state::memory::MallocApi;
use crate::state::stream::Timeout;

/// One device allocation and the streams that may touch it.
pub(crate) struct Alloc {
    pub(crate) device: Arc<DeviceInner>,
    pub(crate) ptr: u64,
    pub(crate) bytes: u64,
    /// The stream it was allocated on (freed in its order), if any.
    pub(crate) owner: Option<Arc<StreamInner>>,
    /// Keeps the pool alive while its block is.
    pub(crate) _pool: Option<Arc<PoolInner>>,
    /// Streams other than the owner that used (or were given) the allocation.
    pub(crate) users: Mutex<Vec<Arc<StreamInner>>>,
    live: bool,
}

impl Alloc {
    pub(crate) fn new(
        device: Arc<DeviceInner>,
        ptr: u64,
        bytes: u64,
        owner: Option<Arc<StreamInner>>,
        pool: Option<Arc<PoolInner>>,
    ) -> Self {
        Self { device, ptr, bytes, owner, _pool: pool, users: Mutex::new(Vec::new()), live: true }
    }

    /// A view of memory the safe API does not free through this record (a VMM range, an IPC
    /// import): any stream of the device may use it, and dropping it frees nothing.
    pub(crate) fn view(device: Arc<DeviceInner>, ptr: u64, bytes: u64) -> Self {
        Self { device, ptr, bytes, owner: None, _pool: None, users: Mutex::new(Vec::new()), live: false }
    }

    /// Waits for every stream that used the memory so far (before it goes away).
    pub(crate) fn wait_users(&self, api: &str) -> Result<()> {
        let users = self.users().clone();
        if users.is_empty() {
            return Ok(());
        }
        let rt = self.device.bind(api)?;
        for u in &users {
            rt.synchronize_stream(api, u.handle, Timeout::Forever)?;
        }
        Ok(())
    }

    /// A shared slice of `len` elements from byte `at`, checked against the record's bounds
    /// and `T`'s alignment.
    pub(crate) fn slice_at<T: Pod>(&self, api: &str, at: u64, len: usize) -> Result<DeviceSlice<'_, T>> {
        let offset = self.check_at::<T>(api, at, len)?;
        Ok(DeviceSlice { alloc: self, offset, len, _t: PhantomData })
    }

    /// An exclusive slice of `len` elements from byte `at`, as [`Self::slice_at`].
    pub(crate) fn slice_mut_at<T: Pod>(
        &self,
        api: &str,
        at: u64,
        len: usize,
    ) -> Result<DeviceSliceMut<'_, T>> {
        let offset = self.check_at::<T>(api, at, len)?;
        Ok(DeviceSliceMut { alloc: self, offset, len, _t: PhantomData })
    }

    fn check_at<T: Pod>(&self, api: &str, at: u64, len: usize) -> Result<usize> {
        // CAST: element sizes are small.
        let size = T::SIZE as u64;
        let bytes = u64::try_from(len).ok().and_then(|l| l.checked_mul(size));
        let fits = bytes.and_then(|b| at.checked_add(b)).is_some_and(|end| end <= self.bytes);
        if !fits {
            return Err(AclError::invalid(format!(
                "{api}: {len} elements from byte {at} do not fit in {} bytes",
                self.bytes
            )));
        }
        if at % size != 0 {
            return Err(AclError::invalid(format!(
                "{api}: byte offset {at} is not a multiple of the element size {size}"
            )));
        }
        usize::try_from(at / size).map_err(|_| AclError::invalid(format!("{api}: offset {at} is too large")))
    }

    fn users(&self) -> std::sync::MutexGuard<'_, Vec<Arc<StreamInner>>> {
        // Relock: every update is one push or one take of the whole list, all-or-nothing.
        crate::sync::relock(&self.users)
    }

    /// Checks that stream `s` may use the allocation now, and notes the use.
    pub(crate) fn check_use(&self, api: &str, s: &Arc<StreamInner>) -> Result<()> {
        self.device.same(api, &s.device)?;
        let mut users = self.users();
        if users.iter().any(|u| Arc::ptr_eq(u, s)) {
            return Ok(());
        }
        match &self.owner {
            Some(o) if Arc::ptr_eq(o, s) => Ok(()),
            Some(o) => Err(AclError::invalid(format!(
                "{api}: the buffer at {:#x} belongs to stream {:#x}; call Stream::acquire on stream {:#x} first (it records an event on the owner and waits for it)",
                self.ptr, o.handle, s.handle
            ))),
            None => {
                users.push(Arc::clone(s));
                Ok(())
            }
        }
    }

    /// Makes stream `s` wait for every stream that used the allocation so far, and lets it use
    /// the allocation.
    pub(crate) fn acquire(&self, api: &str, s: &Arc<StreamInner>) -> Result<()> {
        self.device.same(api, &s.device)?;
        let mut users = self.users();
        if let Some(o) = &self.owner {
            order_after(api, s, o)?;
        }
        for u in users.iter() {
            order_after(api, s, u)?;
        }
        if !users.iter().any(|u| Arc::ptr_eq(u, s)) && !self.owner.as_ref().is_some_and(|o| Arc::ptr_eq(o, s))
        {
            users.push(Arc::clone(s));
        }
        Ok(())
    }

    /// Frees the allocation: in the owner's order after every user's work, or (no owner) after
    /// waiting for every user.
    fn release(&mut self) -> Result<()> {
        const API: &str = "DeviceBuffer::drop";
        if !self.live {
            return Ok(());
        }
        self.live = false;
        let rt = self.device.bind(API)?;
        let users = std::mem::take(&mut *self.users());
        match &self.owner {
            Some(o) => {
                for u in &users {
                    if order_after(API, o, u).is_err() {
                        // Could not order the free: wait for the user instead.
                        rt.synchronize_stream(API, u.handle, Timeout::Forever)?;
                    }
                }
                rt.pool_free_async(API, self.ptr, o.handle)
            }
            None => {
                for u in &users {
                    rt.synchronize_stream(API, u.handle, Timeout::Forever)?;
                }
                rt.free(API, self.ptr)
            }
        }
    }
}

impl Drop for Alloc {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// The bytes of `len` elements of `T`, checked.
pub(crate) fn byte_len<T: Pod>(api: &str, len: usize) -> Result<u64> {
    if len == 0 {
        return Err(AclError::invalid(format!("{api}: a buffer needs at least one element")));
    }
    len.checked_mul(T::SIZE)
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| AclError::invalid(format!("{api}: {len} elements overflow the size")))
}

/// Resolves `range` against `len`, as an error when out of bounds.
pub(crate) fn resolve(api: &str, range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e - s)),
        _ => Err(AclError::invalid(format!("{api}: range is out of bounds for {len} elements"))),
    }
}

/// A typed device allocation of `len` elements of `T`.
///
/// Made synchronously ([`DeviceBuffer::new`], no owning stream) or on a stream
/// ([`DeviceBuffer::new_on`], [`super::MemPool::alloc_async`]); see the [module
/// guide](super) for when it is freed. Copies go through [`Stream`](super::Stream).
pub struct DeviceBuffer<T: Pod> {
    pub(crate) alloc: Alloc,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Pod> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("addr", &format_args!("{:#x}", self.alloc.ptr))
            .field("len", &self.len)
            .field("device", &self.alloc.device.id)
            .field("owner", &self.alloc.owner.as_ref().map(|o| o.handle))
            .finish()
    }
}

impl<T: Pod> DeviceBuffer<T> {
    pub(crate) fn from_alloc(alloc: Alloc, len: usize) -> Self {
        Self { alloc, len, _t: PhantomData }
    }

    /// Allocates `len` elements on `device` now (`aclrtMalloc`, huge pages first), with no
    /// owning stream. Its contents are unspecified (the software NPU gives zeroes).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for `len` 0 or an overflowing size;
    /// `ACL_ERROR_RT_MEMORY_ALLOCATION` when the device is full.
    pub fn new(device: &Device, len: usize) -> Result<Self> {
        const API: &str = "DeviceBuffer::new";
        let bytes = byte_len::<T>(API, len)?;
        let ptr = device.inner.bind(API)?.malloc(API, bytes, 0, MallocApi::Malloc, &[])?;
        Ok(Self::from_alloc(Alloc::new(Arc::clone(&device.inner), ptr, bytes, None, None), len))
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements (never: buffers hold at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn addr(&self) -> u64 {
        self.alloc.ptr
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.alloc.bytes
    }

    /// The id of the device it lives on.
    pub fn device_id(&self) -> u32 {
        self.alloc.device.id
    }

    /// The whole buffer as a shared slice.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { alloc: &self.alloc, offset: 0, len: self.len, _t: PhantomData }
    }

    /// The whole buffer as an exclusive slice.
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { alloc: &self.alloc, offset: 0, len: self.len, _t: PhantomData }
    }

    /// The elements in `range`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when the range is out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().slice(range)
    }

    /// The elements in `range`, exclusively.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when the range is out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.as_mut_slice().slice_mut(range)
    }

    /// Frees the buffer now, reporting errors (dropping it does the same and ignores them).
    ///
    /// # Errors
    ///
    /// The runtime's error when the free cannot be ordered or done.
    pub fn free(mut self) -> Result<()> {
        self.alloc.release()
    }
}

/// A shared view of elements of a [`DeviceBuffer`].
pub struct DeviceSlice<'a, T: Pod> {
    pub(crate) alloc: &'a Alloc,
    offset: usize,
    len: usize,
    _t: PhantomData<&'a [T]>,
}

impl<T: Pod> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Pod> Copy for DeviceSlice<'_, T> {}

impl<T: Pod> fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceSlice")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.len)
            .finish()
    }
}

impl<'a, T: Pod> DeviceSlice<'a, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn addr(&self) -> u64 {
        // CAST: offsets are within the allocation, whose size fits u64.
        self.alloc.ptr + (self.offset * T::SIZE) as u64
    }

    /// The size in bytes.
    pub fn size_bytes(&self) -> u64 {
        // CAST: within the allocation.
        (self.len * T::SIZE) as u64
    }

    /// The elements in `range` of this slice.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when the range is out of bounds.
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<Self> {
        let (s, n) = resolve("DeviceSlice::slice", range, self.len)?;
        Ok(Self { alloc: self.alloc, offset: self.offset + s, len: n, _t: PhantomData })
    }
}

/// An exclusive view of elements of a [`DeviceBuffer`] (the destination of copies).
pub struct DeviceSliceMut<'a, T: Pod> {
    pub(crate) alloc: &'a Alloc,
    offset: usize,
    len: usize,
    _t: PhantomData<&'a mut [T]>,
}

impl<T: Pod> fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceSliceMut")
            .field("addr", &format_args!("{:#x}", self.as_slice().addr()))
            .field("len", &self.len)
            .finish()
    }
}

impl<'a, T: Pod> DeviceSliceMut<'a, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A shared view of the same elements.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice { alloc: self.alloc, offset: self.offset, len: self.len, _t: PhantomData }
    }

    /// A shorter-lived exclusive view of the same elements.
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut { alloc: self.alloc, offset: self.offset, len: self.len, _t: PhantomData }
    }

    /// The elements in `range` of this slice.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` when the range is out of bounds.
    pub fn slice_mut(self, range: impl RangeBounds<usize>) -> Result<Self> {
        let (s, n) = resolve("DeviceSliceMut::slice_mut", range, self.len)?;
        Ok(Self { alloc: self.alloc, offset: self.offset + s, len: n, _t: PhantomData })
    }
}

impl<'a, T: Pod> From<&'a DeviceBuffer<T>> for DeviceSlice<'a, T> {
    fn from(b: &'a DeviceBuffer<T>) -> Self {
        b.as_slice()
    }
}

impl<'a, T: Pod> From<&'a mut DeviceBuffer<T>> for DeviceSlice<'a, T> {
    fn from(b: &'a mut DeviceBuffer<T>) -> Self {
        b.as_slice()
    }
}

impl<'a, T: Pod> From<&'a DeviceSliceMut<'_, T>> for DeviceSlice<'a, T> {
    fn from(b: &'a DeviceSliceMut<'_, T>) -> Self {
        b.as_slice()
    }
}

impl<'a, T: Pod> From<&'a mut DeviceBuffer<T>> for DeviceSliceMut<'a, T> {
    fn from(b: &'a mut DeviceBuffer<T>) -> Self {
        b.as_mut_slice()
    }
}

impl<'a, 'b: 'a, T: Pod> From<&'a mut DeviceSliceMut<'b, T>> for DeviceSliceMut<'a, T> {
    fn from(b: &'a mut DeviceSliceMut<'b, T>) -> Self {
        b.reborrow()
    }
}
