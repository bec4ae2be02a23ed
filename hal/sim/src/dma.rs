//! The DMA engine: moves bytes between host buffers, device windows and the pinned-host
//! window, after resolving each address to the window that owns it.
//!
//! It must not change what is mapped; a byte that is not mapped is a fault reported as
//! [`ErrorKind::InvalidHandle`], never a host crash.

use hal::layout::{device_of, window_of, Window as Region};
use hal::{DeviceAddr, Error, ErrorKind, Result, TaskDesc, TaskStatus};

use crate::kernel;
use crate::scheduler::Ticket;
use crate::sys::{Fault, MapHold, SpanCache, Window};
use crate::{Fabric, Slot};

/// The most bytes a worker fills through one [`MapHold`] before letting the map go and taking
/// it again: a map change (a free, an unmap) waits for the hold, so it waits for at most this
/// much filling, not for a whole run of large fills.
const HOLD_BYTES: u64 = 1 << 20;

/// The device slot of the fills of one run, pinned for the run by its first fill (an
/// `arc_swap` guard: no reference count taken), so that the run's fills into that device
/// resolve their window without loading the slot again (see [`Fabric::fill_in_run`]).
pub(crate) type RunPin = std::cell::OnceCell<Option<(u32, arc_swap::Guard<Option<std::sync::Arc<Slot>>>)>>;

/// Largest piece one DMA descriptor moves; longer transfers are cut into such slices, as the
/// runtime cuts copies into tasks ([`hal::copy::SLICE_BYTES`], 64 MiB).
pub(crate) const SLICE_BYTES: u64 = hal::copy::SLICE_BYTES;

fn fault(_: Fault) -> Error {
    Error::new(ErrorKind::InvalidHandle, "DMA touched device memory that is not mapped")
}

impl Fabric {
    /// Runs `f` on the window that owns `addr`: a device's window (its own or its pool slice),
    /// under the device slot's guard (no reference count taken: see `Fabric::with_slot`), or
    /// the pinned-host window.
    fn with_window<R>(&self, addr: u64, f: impl FnOnce(&Window) -> Result<R>) -> Result<R> {
        match window_of(addr) {
            Region::Device(_) | Region::Pool => {
                let i = device_of(addr).unwrap_or(u32::MAX);
                self.with_slot(i, |s| f(s.device.window_at(addr))).unwrap_or_else(|| {
                    Err(Error::new(
                        ErrorKind::InvalidHandle,
                        "address in the window of a device that is not open",
                    ))
                })
            }
            Region::PinnedHost => f(&self.host),
            _ => Err(Error::new(ErrorKind::InvalidHandle, "address is not device or pinned-host memory")),
        }
    }

    /// Copies host bytes to `dst` (device or pinned host).
    pub(crate) fn write(&self, dst: DeviceAddr, src: &[u8]) -> Result<()> {
        self.with_window(dst.as_u64(), |w| {
            let mut done = 0usize;
            // CAST: SLICE_BYTES fits in usize on every supported host.
            for chunk in src.chunks(SLICE_BYTES as usize) {
                w.write(dst.as_u64() + done as u64, chunk).map_err(fault)?;
                done += chunk.len();
            }
            Ok(())
        })
    }

    /// Copies from `src` (device or pinned host) into host bytes.
    pub(crate) fn read(&self, dst: &mut [u8], src: DeviceAddr) -> Result<()> {
        self.with_window(src.as_u64(), |w| {
            let mut done = 0usize;
            // CAST: SLICE_BYTES fits in usize on every supported host.
            for chunk in dst.chunks_mut(SLICE_BYTES as usize) {
                let n = chunk.len();
                w.read(src.as_u64() + done as u64, chunk).map_err(fault)?;
                done += n;
            }
            Ok(())
        })
    }

    /// Copies between two resolved addresses.
    pub(crate) fn copy(&self, dst: DeviceAddr, src: DeviceAddr, len_bytes: u64) -> Result<()> {
        self.with_window(dst.as_u64(), |wd| {
            self.with_window(src.as_u64(), |ws| {
                let overlapping_forward = src.as_u64() < dst.as_u64()
                    && src.as_u64().checked_add(len_bytes).is_none_or(|end| end > dst.as_u64());
                if overlapping_forward {
                    // Slicing front to back would read bytes already overwritten: copy in one
                    // piece.
                    return Window::copy(wd, dst.as_u64(), ws, src.as_u64(), len_bytes).map_err(fault);
                }
                let mut done = 0u64;
                while done < len_bytes {
                    let n = (len_bytes - done).min(SLICE_BYTES);
                    Window::copy(wd, dst.as_u64() + done, ws, src.as_u64() + done, n).map_err(fault)?;
                    done += n;
                }
                Ok(())
            })
        })
    }

    /// Copies a batch's `(dst, src, len)` entries in order, stopping at the first fault: each
    /// run of entries between the same two windows (a batch goes one way, so usually one run)
    /// is copied under one taking of the windows' locks per [`SLICE_BYTES`] (rather than two
    /// lookups and four lock operations per entry).
    pub(crate) fn copy_batch(&self, entries: &[(u64, u64, u64)]) -> Result<()> {
        let mut rest = entries;
        while let Some(&(d, s, n)) = rest.first() {
            if n > SLICE_BYTES {
                // A large entry goes slice by slice, letting the locks go between slices.
                self.copy(DeviceAddr(d), DeviceAddr(s), n)?;
                rest = &rest[1..];
                continue;
            }
            let run = self.with_window(d, |wd| {
                self.with_window(s, |ws| {
                    // The entries wholly inside both windows' ranges (at least the first: one
                    // that is not faults below, as a copy of it alone would).
                    let inside =
                        |&&(d, s, n): &&(u64, u64, u64)| n <= SLICE_BYTES && wd.spans(d, n) && ws.spans(s, n);
                    let run = rest.iter().take_while(inside).count().max(1);
                    Window::copy_many(wd, ws, &rest[..run], SLICE_BYTES).map_err(fault)?;
                    Ok(run)
                })
            })?;
            rest = &rest[run..];
        }
        Ok(())
    }

    /// Fills `len_bytes` at `dst` with `value`.
    pub(crate) fn fill(&self, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        self.fill_cached(&mut SpanCache::default(), dst, value, len_bytes)
    }

    /// [`Self::fill`] with a worker's [`SpanCache`].
    fn fill_cached(&self, cache: &mut SpanCache, dst: DeviceAddr, value: u8, len_bytes: u64) -> Result<()> {
        self.with_window(dst.as_u64(), |w| {
            let mut done = 0u64;
            while done < len_bytes {
                let n = (len_bytes - done).min(SLICE_BYTES);
                w.fill_cached(cache, dst.as_u64() + done, value, n).map_err(fault)?;
                done += n;
            }
            Ok(())
        })
    }

    /// [`Self::fill_cached`] for a fill inside a run of one stream's tasks: the fill's window
    /// is resolved through `pin` (the device the run's first fill pinned) and its map kept
    /// held in `hold` for the next fill of the run, until a fill goes elsewhere, or
    /// [`HOLD_BYTES`] were filled through it. Other windows (another device, pinned host)
    /// and fills larger than [`HOLD_BYTES`] take the plain path, holding nothing.
    ///
    /// The caller drops `hold` before anything that may wait for a map change (see
    /// [`MapHold`]).
    pub(crate) fn fill_in_run<'p>(
        &self,
        pin: &'p RunPin,
        hold: &mut Option<MapHold<'p>>,
        spans: &mut SpanCache,
        dst: DeviceAddr,
        value: u8,
        len_bytes: u64,
    ) -> Result<()> {
        let addr = dst.as_u64();
        let window = if len_bytes <= HOLD_BYTES { self.pinned_window(pin, addr) } else { None };
        let Some(window) = window else {
            *hold = None;
            return self.fill_cached(spans, dst, value, len_bytes);
        };
        if hold.as_ref().is_some_and(|h| !core::ptr::eq(h.window(), window) || h.bytes() >= HOLD_BYTES) {
            *hold = None;
        }
        hold.get_or_insert_with(|| window.hold()).fill(spans, addr, value, len_bytes).map_err(fault)
    }

    /// The window of `addr` when it lies in the device `pin` holds (pinning the device of
    /// `addr` when `pin` is empty).
    fn pinned_window<'p>(&self, pin: &'p RunPin, addr: u64) -> Option<&'p Window> {
        let (Region::Device(_) | Region::Pool) = window_of(addr) else { return None };
        let i = device_of(addr)?;
        let (pinned, slot) = pin.get_or_init(|| Some((i, self.slots.get(i as usize)?.load()))).as_ref()?;
        if *pinned != i {
            return None;
        }
        slot.as_deref().map(|s| s.device.window_at(addr))
    }

    /// Fills `count` 32-bit words at `dst` with `value`.
    pub(crate) fn fill32(&self, dst: DeviceAddr, value: u32, count: u64) -> Result<()> {
        if value.to_ne_bytes().iter().all(|&b| b == value.to_ne_bytes()[0]) {
            return self.fill(dst, value.to_ne_bytes()[0], count.checked_mul(4).ok_or(bad_len())?);
        }
        // A pattern buffer of at most 64 KiB, written slice by slice.
        // CAST: at most 16 Ki words.
        let words = count.min(16 << 10) as usize;
        let pattern: Vec<u8> = value.to_ne_bytes().iter().copied().cycle().take(words * 4).collect();
        let mut done = 0u64;
        while done < count {
            // CAST: at most `words`.
            let n = (count - done).min(words as u64) as usize;
            self.write(DeviceAddr(dst.as_u64() + done * 4), &pattern[..n * 4])?;
            done += n as u64;
        }
        Ok(())
    }

    /// Runs one queued task; `ticket` is the work its descriptor names, if any; `spans` is the
    /// calling worker's cache of the last span its fills found mapped.
    pub(crate) fn execute(
        &self,
        task: &TaskDesc,
        ticket: Option<Ticket>,
        spans: &mut SpanCache,
    ) -> TaskStatus {
        let r = match *task {
            TaskDesc::Copy { dst, src, len_bytes } => self.copy(dst, src, len_bytes),
            TaskDesc::Copy2d { dst, dst_pitch, src, src_pitch, width, height } => {
                (0..height).try_for_each(|row| {
                    let d = DeviceAddr(dst.as_u64() + row * dst_pitch);
                    let s = DeviceAddr(src.as_u64() + row * src_pitch);
                    self.copy(d, s, width)
                })
            }
            TaskDesc::CopyBatch { .. } => match ticket {
                Some(Ticket::Batch(entries)) => self.copy_batch(&entries),
                _ => Err(Error::new(ErrorKind::InvalidHandle, "batch copy without its entries")),
            },
            TaskDesc::Memset { dst, value, len_bytes } => self.fill_cached(spans, dst, value, len_bytes),
            TaskDesc::Memset32 { dst, value, count } => self.fill32(dst, value, count),
            TaskDesc::Kernel { func, blocks, timeout_us, .. } => {
                return kernel::run(func, blocks, ticket, timeout_us)
            }
            TaskDesc::HostFunc { call } => return kernel::host_call(call),
            TaskDesc::ValueWrite { dst, value } => self.write(dst, &value.to_le_bytes()),
            TaskDesc::ValueWait { addr, .. } => self.read(&mut [0u8; 8], addr),
            TaskDesc::Timestamp { dst } => self.write(dst, &crate::scheduler::clock_ns().to_le_bytes()),
            TaskDesc::Marker => Ok(()),
        };
        status_of(r)
    }
}

/// The status of a task whose work returned `r`.
pub(crate) fn status_of(r: Result<()>) -> TaskStatus {
    match r {
        Ok(()) => TaskStatus::Ok,
        Err(e) => TaskStatus::Failed(e.kind()),
    }
}

impl crate::Sim {
    /// Fills `count` 32-bit words of any mapped range (device window or pinned host) with
    /// `value`, on the DMA path.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidHandle`] when a byte of the range is not mapped.
    pub fn dma_fill32(&self, dst: DeviceAddr, value: u32, count: u64) -> Result<()> {
        self.fabric.fill32(dst, value, count)
    }
}

fn bad_len() -> Error {
    Error::new(ErrorKind::InvalidArgument, "fill length overflows")
}
