//! A small open-addressing hash map from addresses to copyable values.
//!
//! This module owns one data structure: the exact-address index the VA allocator and the frame
//! backer keep of their live ranges, so that a free finds its record in O(1) expected time
//! without touching an ordered tree. It knows nothing about what the addresses mean.
//!
//! Linear probing with a multiplicative (Fibonacci) hash, a power-of-two table at most half full,
//! and backward-shift deletion (no tombstones, so a long alloc/free churn never degrades the
//! table). The table grows by doubling, so its storage is allocated O(log n) times over its life
//! and never in steady state. `u64::MAX` is reserved as the empty marker: no range that fits
//! below 2^64 can start there.

use alloc::vec;
use alloc::vec::Vec;

/// The key of an empty slot.
const EMPTY: u64 = u64::MAX;
/// Slots of a fresh table.
const INITIAL_SLOTS: usize = 16;

/// A map from `u64` keys (never `u64::MAX`) to `V`.
#[derive(Clone, Debug)]
pub(crate) struct AddrMap<V: Copy> {
    keys: Vec<u64>,
    values: Vec<Option<V>>,
    len: usize,
    shift: u32,
}

impl<V: Copy> AddrMap<V> {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self {
            keys: vec![EMPTY; INITIAL_SLOTS],
            values: vec![None; INITIAL_SLOTS],
            len: 0,
            shift: 64 - INITIAL_SLOTS.trailing_zeros(),
        }
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The home slot of `key`.
    #[inline]
    fn home(&self, key: u64) -> usize {
        // CAST: the shift leaves at most log2(slots) bits.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.keys.len() - 1
    }

    /// The slot holding `key`, if present.
    #[inline]
    fn slot(&self, key: u64) -> Option<usize> {
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(i);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<V> {
        self.slot(key).and_then(|i| self.values[i])
    }

    /// Inserts or replaces the value of `key` (which must not be `u64::MAX`).
    pub(crate) fn insert(&mut self, key: u64, value: V) {
        debug_assert_ne!(key, EMPTY);
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let k = self.keys[i];
            if k == key {
                self.values[i] = Some(value);
                return;
            }
            if k == EMPTY {
                self.keys[i] = key;
                self.values[i] = Some(value);
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Inserts `key` with `value` unless it is present; whether it was inserted.
    pub(crate) fn insert_new(&mut self, key: u64, value: V) -> bool {
        debug_assert_ne!(key, EMPTY);
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let k = self.keys[i];
            if k == key {
                return false;
            }
            if k == EMPTY {
                self.keys[i] = key;
                self.values[i] = Some(value);
                self.len += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Removes `key`, returning its value.
    pub(crate) fn remove(&mut self, key: u64) -> Option<V> {
        let mut hole = self.slot(key)?;
        let value = self.values[hole].take();
        self.keys[hole] = EMPTY;
        self.len -= 1;
        // Backward-shift: move later entries of the probe run into the hole when their home
        // does not lie cyclically in (hole, j].
        let mask = self.mask();
        let mut j = (hole + 1) & mask;
        while self.keys[j] != EMPTY {
            let home = self.home(self.keys[j]);
            let dist_home = j.wrapping_sub(home) & mask;
            let dist_hole = j.wrapping_sub(hole) & mask;
            if dist_home >= dist_hole {
                self.keys[hole] = self.keys[j];
                self.values[hole] = self.values[j].take();
                self.keys[j] = EMPTY;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        value
    }

    fn grow(&mut self) {
        let slots = self.keys.len() * 2;
        let keys = core::mem::replace(&mut self.keys, vec![EMPTY; slots]);
        let values = core::mem::replace(&mut self.values, vec![None; slots]);
        self.shift = 64 - slots.trailing_zeros();
        self.len = 0;
        for (k, v) in keys.into_iter().zip(values) {
            if let Some(v) = v {
                self.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_and_grow() {
        let mut m: AddrMap<u32> = AddrMap::new();
        for i in 0..200u64 {
            m.insert(i * 4096, i as u32);
        }
        assert_eq!(m.len(), 200);
        for i in 0..200u64 {
            assert_eq!(m.get(i * 4096), Some(i as u32));
        }
        assert_eq!(m.get(1), None);
        for i in (0..200u64).step_by(2) {
            assert_eq!(m.remove(i * 4096), Some(i as u32));
        }
        assert_eq!(m.remove(0), None);
        assert_eq!(m.len(), 100);
        for i in 0..200u64 {
            assert_eq!(m.get(i * 4096), (i % 2 == 1).then_some(i as u32));
        }
        m.insert(4096, 8);
        assert_eq!(m.get(4096), Some(8));
        assert_eq!(m.len(), 100);
        assert!(!m.insert_new(4096, 9));
        assert_eq!(m.get(4096), Some(8));
        assert!(m.insert_new(0, 9));
        assert_eq!(m.get(0), Some(9));
    }

    #[test]
    fn colliding_keys_survive_removal() {
        // Keys that share a home slot in a 16-slot table (same top 4 bits of the product) are
        // hard to build by hand; many keys in a small table exercise the shifts instead.
        let mut m: AddrMap<u64> = AddrMap::new();
        for round in 0..4u64 {
            for i in 0..7u64 {
                m.insert(round * 1000 + i, i);
            }
            for i in (0..7u64).rev() {
                assert_eq!(m.remove(round * 1000 + i), Some(i));
                for j in 0..i {
                    assert_eq!(m.get(round * 1000 + j), Some(j));
                }
            }
            assert_eq!(m.len(), 0);
        }
    }
}
