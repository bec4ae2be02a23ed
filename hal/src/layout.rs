//! The VA windows of the device address model, as on the real driver, and where this process
//! put them.
//!
//! The runtime owns VA bookkeeping inside these windows; a backend only backs, maps and copies.
//! The software NPU maps its high-bandwidth memory (HBM) at the same addresses so that device
//! pointers look like real ones and an address alone tells device memory from host memory.
//!
//! # Where the windows are
//!
//! On the real driver the windows are fixed: pinned host memory at 7 TiB, the pool window at
//! 12 TiB, device windows from 16 TiB (the `DEFAULT_*` constants). The software NPU places
//! them there too unless something already holds that range — AddressSanitizer's shadow memory
//! covers 0x2008fff7000–0x10007fff8000, for one — and then moves the whole layout up by one
//! [`LAYOUT_STEP`] at a time ([`choose_shift`]). The layout keeps its shape: every window moves
//! by the same shift. The shift is set once, before any window is used
//! ([`set_layout_shift`]), stays fixed for the life of the process, and is the same in every
//! process of one simulated machine (the software NPU keeps it in the machine's registry).
//! A backend that never sets it (real hardware) keeps the driver's fixed addresses.

use core::sync::atomic::{AtomicU64, Ordering};

/// Where device-memory windows start on the real driver: 16 TiB.
pub const DEFAULT_DEVICE_WINDOW_BASE: u64 = 16 << 40;
/// Size of one device's window: 128 GiB, one window per device, back to back.
pub const DEVICE_WINDOW_SIZE: u64 = 128 << 30;
/// The most devices the windows leave room for (16 TiB + 64 × 128 GiB = 24 TiB).
pub const MAX_DEVICES: u32 = 64;
/// Where the stream-ordered pool window starts on the real driver: 12 TiB.
pub const DEFAULT_POOL_WINDOW_BASE: u64 = 12 << 40;
/// Size of the pool window: 4 TiB (up to the device windows).
pub const POOL_WINDOW_SIZE: u64 = 4 << 40;
/// Size of one device's slice of the pool window: 64 GiB, one slice per device, back to
/// back, so that a pool address tells its device as a device-window address does.
pub const POOL_SLICE_SIZE: u64 = POOL_WINDOW_SIZE / MAX_DEVICES as u64;
/// Where the pinned host-memory window starts on the real driver: 7 TiB.
pub const DEFAULT_HOST_WINDOW_BASE: u64 = 7 << 40;
/// Size of the pinned host-memory window: 1 TiB.
pub const HOST_WINDOW_SIZE: u64 = 1 << 40;
/// The bytes the whole layout spans, from the pinned-host window's base to the end of the
/// last device window (17 TiB).
pub const LAYOUT_SPAN: u64 =
    DEFAULT_DEVICE_WINDOW_BASE + MAX_DEVICES as u64 * DEVICE_WINDOW_SIZE - DEFAULT_HOST_WINDOW_BASE;
/// The step between the places the layout may move to: 32 TiB, so the first place after the
/// default puts the pinned-host window at 39 TiB, clear of AddressSanitizer's shadow.
pub const LAYOUT_STEP: u64 = 32 << 40;
/// The highest user address the layout may reach (x86-64 and AArch64 with 47/48-bit VA).
pub const USER_VA_END: u64 = 1 << 47;

/// Bytes at the top of each device window that belong to the driver: it maps IPC opens and
/// its own tables (such as event timestamps) there. A runtime never allocates in them.
pub const DRIVER_RESERVED_BYTES: u64 = DEVICE_WINDOW_SIZE / 4;

/// The shift of this process's layout from the driver's; [`UNSET`] until set (read as 0).
static SHIFT: AtomicU64 = AtomicU64::new(UNSET);
/// [`SHIFT`] before [`set_layout_shift`] ran.
const UNSET: u64 = u64::MAX;

/// The shift of this process's windows from the driver's fixed addresses (0: the driver's).
pub fn layout_shift() -> u64 {
    match SHIFT.load(Ordering::Relaxed) {
        UNSET => 0,
        s => s,
    }
}

/// Sets the shift of this process's windows, once. Setting the shift in force again is
/// accepted.
///
/// # Errors
///
/// The shift in force when a different one was set before, or when `shift` is not a multiple
/// of [`LAYOUT_STEP`] that keeps the layout below [`USER_VA_END`].
pub fn set_layout_shift(shift: u64) -> Result<(), u64> {
    let fits = shift % LAYOUT_STEP == 0
        && DEFAULT_HOST_WINDOW_BASE
            .checked_add(shift)
            .and_then(|b| b.checked_add(LAYOUT_SPAN))
            .is_some_and(|e| e <= USER_VA_END);
    if !fits {
        return Err(layout_shift());
    }
    match SHIFT.compare_exchange(UNSET, shift, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(()),
        Err(s) if s == shift => Ok(()),
        Err(s) => Err(s),
    }
}

/// The first shift, from 0 up in steps of [`LAYOUT_STEP`], whose layout overlaps no range
/// `taken` reports (`taken(start, end)`: whether anything is mapped in `[start, end)`), or
/// `None` when every place is taken.
pub fn choose_shift(mut taken: impl FnMut(u64, u64) -> bool) -> Option<u64> {
    (0..)
        .map(|k: u64| k * LAYOUT_STEP)
        .take_while(|s| DEFAULT_HOST_WINDOW_BASE + s + LAYOUT_SPAN <= USER_VA_END)
        .find(|&s| !taken(DEFAULT_HOST_WINDOW_BASE + s, DEFAULT_HOST_WINDOW_BASE + s + LAYOUT_SPAN))
}

/// Start of the device-memory windows.
pub fn device_windows_base() -> u64 {
    DEFAULT_DEVICE_WINDOW_BASE + layout_shift()
}

/// One past the last device window.
pub fn device_windows_end() -> u64 {
    device_windows_base() + MAX_DEVICES as u64 * DEVICE_WINDOW_SIZE
}

/// Start of the stream-ordered pool window.
pub fn pool_window_base() -> u64 {
    DEFAULT_POOL_WINDOW_BASE + layout_shift()
}

/// First address of device `index`'s slice of the pool window ([`POOL_SLICE_SIZE`] bytes).
pub fn pool_slice_base(index: u32) -> u64 {
    pool_window_base() + index as u64 * POOL_SLICE_SIZE
}

/// The device whose memory `addr` is: the index of the device window or of the pool-window
/// slice ([`pool_slice_base`]) it falls in; `None` for host addresses. [`window_of`] still
/// tells the two windows apart.
pub fn device_of(addr: u64) -> Option<u32> {
    device_in(addr, layout_shift())
}

/// [`device_of`] for a layout shifted by `shift`.
const fn device_in(addr: u64, shift: u64) -> Option<u32> {
    match classify(addr, shift) {
        Window::Device(d) => Some(d),
        // CAST: the pool window holds MAX_DEVICES slices, so the index fits in u32.
        Window::Pool => Some(((addr - (DEFAULT_POOL_WINDOW_BASE + shift)) / POOL_SLICE_SIZE) as u32),
        Window::PinnedHost | Window::Unregistered => None,
    }
}

/// Start of the pinned host-memory window.
pub fn host_window_base() -> u64 {
    DEFAULT_HOST_WINDOW_BASE + layout_shift()
}

/// First address of the driver's part of device `index`'s window.
pub fn driver_reserved_base(index: u32) -> u64 {
    device_window_base(index) + DEVICE_WINDOW_SIZE - DRIVER_RESERVED_BYTES
}

/// Which window an address falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// The device-memory window of the given device index.
    Device(u32),
    /// The stream-ordered pool window.
    Pool,
    /// The pinned host-memory window.
    PinnedHost,
    /// None of the runtime's windows: ordinary (pageable) host memory.
    Unregistered,
}

/// First address of device `index`'s window.
pub fn device_window_base(index: u32) -> u64 {
    device_windows_base() + index as u64 * DEVICE_WINDOW_SIZE
}

/// Classifies an address by window (one relaxed atomic load and a few compares).
pub fn window_of(addr: u64) -> Window {
    classify(addr, layout_shift())
}

/// Classifies `addr` by the windows of a layout shifted by `shift`.
const fn classify(addr: u64, shift: u64) -> Window {
    let device_base = DEFAULT_DEVICE_WINDOW_BASE + shift;
    if addr >= device_base {
        let index = (addr - device_base) / DEVICE_WINDOW_SIZE;
        if index < MAX_DEVICES as u64 {
            // CAST: index < MAX_DEVICES fits in u32.
            return Window::Device(index as u32);
        }
        return Window::Unregistered;
    }
    let pool = DEFAULT_POOL_WINDOW_BASE + shift;
    if addr >= pool && addr < pool + POOL_WINDOW_SIZE {
        return Window::Pool;
    }
    let host = DEFAULT_HOST_WINDOW_BASE + shift;
    if addr >= host && addr < host + HOST_WINDOW_SIZE {
        return Window::PinnedHost;
    }
    Window::Unregistered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_classify() {
        let d0 = DEFAULT_DEVICE_WINDOW_BASE;
        assert_eq!(classify(d0, 0), Window::Device(0));
        assert_eq!(classify(d0 + DEVICE_WINDOW_SIZE - 1, 0), Window::Device(0));
        assert_eq!(classify(d0 + DEVICE_WINDOW_SIZE, 0), Window::Device(1));
        assert_eq!(classify(d0 + u64::from(MAX_DEVICES) * DEVICE_WINDOW_SIZE, 0), Window::Unregistered);
        assert_eq!(classify(DEFAULT_POOL_WINDOW_BASE + 5, 0), Window::Pool);
        assert_eq!(classify(DEFAULT_HOST_WINDOW_BASE, 0), Window::PinnedHost);
        assert_eq!(classify(0x7f00_0000_0000, 0), Window::Unregistered);
        assert_eq!(classify(0x5555_0000, 0), Window::Unregistered);
    }

    #[test]
    fn pool_slices_tell_their_device() {
        let p = DEFAULT_POOL_WINDOW_BASE;
        assert_eq!(MAX_DEVICES as u64 * POOL_SLICE_SIZE, POOL_WINDOW_SIZE);
        assert_eq!(device_in(p, 0), Some(0));
        assert_eq!(device_in(p + POOL_SLICE_SIZE - 1, 0), Some(0));
        assert_eq!(device_in(p + POOL_SLICE_SIZE, 0), Some(1));
        assert_eq!(device_in(p + POOL_WINDOW_SIZE - 1, 0), Some(MAX_DEVICES - 1));
        // The pool window ends where the device windows begin.
        assert_eq!(device_in(p + POOL_WINDOW_SIZE, 0), Some(0));
        assert_eq!(device_in(DEFAULT_DEVICE_WINDOW_BASE + DEVICE_WINDOW_SIZE * 3, 0), Some(3));
        assert_eq!(device_in(p - 1, 0), None);
        assert_eq!(device_in(DEFAULT_HOST_WINDOW_BASE, 0), None);
        // A slice address is still classified as the pool window.
        assert_eq!(classify(p + POOL_SLICE_SIZE * 5 + 7, 0), Window::Pool);
        let s = LAYOUT_STEP;
        assert_eq!(device_in(p + s + 2 * POOL_SLICE_SIZE, s), Some(2));
        assert_eq!(device_in(p + 2 * POOL_SLICE_SIZE, s), None);
    }

    #[test]
    fn a_shifted_layout_classifies_by_its_own_windows() {
        let s = LAYOUT_STEP;
        assert_eq!(classify(DEFAULT_HOST_WINDOW_BASE, s), Window::Unregistered);
        assert_eq!(classify(DEFAULT_HOST_WINDOW_BASE + s, s), Window::PinnedHost);
        assert_eq!(classify(DEFAULT_POOL_WINDOW_BASE + s, s), Window::Pool);
        assert_eq!(classify(DEFAULT_DEVICE_WINDOW_BASE + s + DEVICE_WINDOW_SIZE, s), Window::Device(1));
        assert_eq!(classify(DEFAULT_DEVICE_WINDOW_BASE, s), Window::Unregistered);
    }

    #[test]
    fn the_first_free_place_is_chosen() {
        // Free: the driver's addresses.
        assert_eq!(choose_shift(|_, _| false), Some(0));
        // AddressSanitizer's high shadow (x86-64) covers the default layout.
        let asan = |lo: u64, hi: u64| lo < 0x1000_7fff_8000 && hi > 0x0200_8fff_7000;
        let s = choose_shift(asan).expect("a place above the shadow");
        assert_eq!(s, LAYOUT_STEP);
        assert!(DEFAULT_HOST_WINDOW_BASE + s >= 0x1000_7fff_8000);
        // Nothing free at all.
        assert_eq!(choose_shift(|_, _| true), None);
    }
}
