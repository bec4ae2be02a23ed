//! Copy limits: the largest piece one DMA copy task moves, and the most entries of one batch
//! copy. Written once here; the runtime slices the copies it queues by them, and the software
//! NPU's DMA engine cuts its transfers by them.
//!
//! This module owns only the numbers and the one rule that picks between them.

/// Largest piece of one copy task, as the reference runtime slices copies (64 MiB).
pub const SLICE_BYTES: u64 = 64 << 20;

/// Largest piece of one device-to-device copy task (the SDMA engine's 32-bit length: 4 GiB).
pub const SLICE_D2D_BYTES: u64 = 4 << 30;

/// The most entries of one batch copy (the driver's `DEVMM_MEMCPY_BATCH_MAX_COUNT`).
pub const BATCH_MAX_ENTRIES: usize = 4096;

/// The largest piece of one copy task between these ends: [`SLICE_D2D_BYTES`] when both are
/// device memory, [`SLICE_BYTES`] otherwise.
pub const fn slice_bytes(device_to_device: bool) -> u64 {
    if device_to_device {
        SLICE_D2D_BYTES
    } else {
        SLICE_BYTES
    }
}

/// The pieces (offset, length) of a copy of `len_bytes` in tasks of at most `slice` bytes (a
/// `slice` of 0 is taken as 1), in order; none for an empty copy.
pub fn slices(len_bytes: u64, slice: u64) -> impl Iterator<Item = (u64, u64)> {
    let slice = slice.max(1);
    (0..len_bytes.div_ceil(slice)).map(move |i| {
        let off = i * slice;
        (off, (len_bytes - off).min(slice))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_to_device_copies_take_the_longer_slice() {
        assert_eq!(slice_bytes(true), 4 << 30);
        assert_eq!(slice_bytes(false), 64 << 20);
    }

    #[test]
    fn slices_cover_the_copy_in_order_without_overlap() {
        let mut it = slices(10, 4);
        assert_eq!(it.next(), Some((0, 4)));
        assert_eq!(it.next(), Some((4, 4)));
        assert_eq!(it.next(), Some((8, 2)));
        assert_eq!(it.next(), None);
        assert_eq!(slices(0, 4).count(), 0);
        assert_eq!(slices(8, 4).map(|(_, n)| n).sum::<u64>(), 8);
        assert_eq!(slices(SLICE_BYTES + 1, SLICE_BYTES).count(), 2);
        assert_eq!(slices(3, 0).count(), 3);
    }
}
