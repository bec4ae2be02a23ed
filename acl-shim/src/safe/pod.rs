//! The plain-data bound of device buffers.

mod sealed {
    /// Seals [`super::Pod`]: only this crate implements it.
    pub trait Sealed {}
}

/// Plain numeric data that may live in device memory: every bit pattern is a valid value and
/// the type has no padding, pointers or destructor.
///
/// Sealed: implemented for `u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `u64`, `i64`, `f32` and
/// `f64` only. Host values cross to the device through their native-endian bytes
/// (`to_ne_bytes` / `from_ne_bytes`), so no `unsafe` byte view is needed.
pub trait Pod: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The size of one element in bytes.
    const SIZE: usize;

    /// Appends the native-endian bytes of `self` to `out`.
    fn put_bytes(self, out: &mut Vec<u8>);

    /// Reads a value from the first [`Self::SIZE`] bytes of `bytes` (zero when too short).
    fn from_bytes(bytes: &[u8]) -> Self;
}

macro_rules! pod {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Pod for $t {
            const SIZE: usize = std::mem::size_of::<$t>();

            fn put_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }

            fn from_bytes(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                if let Some(b) = bytes.get(..a.len()) {
                    a.copy_from_slice(b);
                }
                <$t>::from_ne_bytes(a)
            }
        }
    )*};
}

pod!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// The bytes of `values`.
pub(crate) fn to_bytes<T: Pod>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::SIZE);
    for &v in values {
        v.put_bytes(&mut out);
    }
    out
}

/// Fills `values` from `bytes` (as many whole elements as both hold).
pub(crate) fn from_bytes<T: Pod>(bytes: &[u8], values: &mut [T]) {
    for (v, b) in values.iter_mut().zip(bytes.chunks_exact(T::SIZE)) {
        *v = T::from_bytes(b);
    }
}
