//! The fixed VA windows of the device address model, as on the real driver.
//!
//! The runtime owns VA bookkeeping inside these windows; a backend only backs, maps and copies.
//! The software NPU maps its high-bandwidth memory (HBM) at the same addresses so that device
//! pointers look like real ones and an address alone tells device memory from host memory.

/// Start of the device-memory windows: 16 TiB.
pub const DEVICE_WINDOW_BASE: u64 = 16 << 40;
/// Size of one device's window: 128 GiB, one window per device, back to back.
pub const DEVICE_WINDOW_SIZE: u64 = 128 << 30;
/// The most devices the windows leave room for (16 TiB + 64 × 128 GiB = 24 TiB).
pub const MAX_DEVICES: u32 = 64;
/// Start of the stream-ordered pool window: 12 TiB.
pub const POOL_WINDOW_BASE: u64 = 12 << 40;
/// Size of the pool window: 4 TiB (up to the device windows).
pub const POOL_WINDOW_SIZE: u64 = 4 << 40;
/// Start of the pinned host-memory window: 7 TiB.
pub const HOST_WINDOW_BASE: u64 = 7 << 40;
/// Size of the pinned host-memory window: 1 TiB.
pub const HOST_WINDOW_SIZE: u64 = 1 << 40;

/// Bytes at the top of each device window that belong to the driver: it maps IPC opens and
/// its own tables (such as event timestamps) there. A runtime never allocates in them.
pub const DRIVER_RESERVED_BYTES: u64 = DEVICE_WINDOW_SIZE / 4;

/// First address of the driver's part of device `index`'s window.
pub const fn driver_reserved_base(index: u32) -> u64 {
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
pub const fn device_window_base(index: u32) -> u64 {
    DEVICE_WINDOW_BASE + index as u64 * DEVICE_WINDOW_SIZE
}

/// Classifies an address by window.
pub const fn window_of(addr: u64) -> Window {
    if addr >= DEVICE_WINDOW_BASE {
        let index = (addr - DEVICE_WINDOW_BASE) / DEVICE_WINDOW_SIZE;
        if index < MAX_DEVICES as u64 {
            // CAST: index < MAX_DEVICES fits in u32.
            return Window::Device(index as u32);
        }
        return Window::Unregistered;
    }
    if addr >= POOL_WINDOW_BASE && addr < POOL_WINDOW_BASE + POOL_WINDOW_SIZE {
        return Window::Pool;
    }
    if addr >= HOST_WINDOW_BASE && addr < HOST_WINDOW_BASE + HOST_WINDOW_SIZE {
        return Window::PinnedHost;
    }
    Window::Unregistered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_classify() {
        assert_eq!(window_of(DEVICE_WINDOW_BASE), Window::Device(0));
        assert_eq!(window_of(device_window_base(1) - 1), Window::Device(0));
        assert_eq!(window_of(device_window_base(1)), Window::Device(1));
        assert_eq!(window_of(device_window_base(MAX_DEVICES)), Window::Unregistered);
        assert_eq!(window_of(POOL_WINDOW_BASE + 5), Window::Pool);
        assert_eq!(window_of(HOST_WINDOW_BASE), Window::PinnedHost);
        assert_eq!(window_of(0x7f00_0000_0000), Window::Unregistered);
        assert_eq!(window_of(0x5555_0000), Window::Unregistered);
    }
}
