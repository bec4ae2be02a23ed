//! Address maps: the exact-address index `AddrMap` (crate-private) and the range map
//! [`AddressMap`], which says which region — an allocation, a pool segment, a VMM mapping, a
//! pinned range, whatever the caller records — contains an address, in one lookup.
//!
//! This module owns these two data structures and nothing else: what the regions are and what
//! their values mean belongs to the caller. It knows nothing about what the addresses mean.
//!
//! `AddrMap` is the index the VA allocator and the frame backer keep of their live ranges, so
//! that a free finds its record in O(1) expected time without touching an ordered tree: linear
//! probing with a multiplicative (Fibonacci) hash, a power-of-two table at most half full, and
//! backward-shift deletion (no tombstones, so a long alloc/free churn never degrades the table).
//! The table grows by doubling, so its storage is allocated O(log n) times over its life and
//! never in steady state. `u64::MAX` is reserved as the empty marker: no range that fits below
//! 2^64 can start there.
//!
//! [`AddressMap`] keeps disjoint, non-empty ranges in an ordered tree: a lookup is
//! O(log regions), an insert checks both neighbours for overlap.

use alloc::collections::BTreeMap;
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

    /// An empty map that holds `entries` keys before it first grows (its table at most half
    /// full then).
    pub(crate) fn with_capacity(entries: usize) -> Self {
        let slots = entries.saturating_mul(2).next_power_of_two().max(INITIAL_SLOTS);
        Self {
            keys: vec![EMPTY; slots],
            values: vec![None; slots],
            len: 0,
            shift: 64 - slots.trailing_zeros(),
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

    /// The slot of `key` (`true`) or the empty slot where it would go (`false`), growing the
    /// table first so that one more key keeps it at most half full.
    fn probe_for_insert(&mut self, key: u64) -> (usize, bool) {
        debug_assert_ne!(key, EMPTY);
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            match self.keys[i] {
                k if k == key => return (i, true),
                EMPTY => return (i, false),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Inserts or replaces the value of `key` (which must not be `u64::MAX`).
    pub(crate) fn insert(&mut self, key: u64, value: V) {
        let (i, present) = self.probe_for_insert(key);
        if !present {
            self.keys[i] = key;
            self.len += 1;
        }
        self.values[i] = Some(value);
    }

    /// Inserts `key` with `value` unless it is present; whether it was inserted.
    pub(crate) fn insert_new(&mut self, key: u64, value: V) -> bool {
        let (i, present) = self.probe_for_insert(key);
        if present {
            return false;
        }
        self.keys[i] = key;
        self.values[i] = Some(value);
        self.len += 1;
        true
    }

    /// The slot holding `key` and its value, for a [`Self::remove_at`] that needs no second
    /// probe.
    #[inline]
    pub(crate) fn find_slot(&self, key: u64) -> Option<(usize, V)> {
        let i = self.slot(key)?;
        self.values[i].map(|v| (i, v))
    }

    /// Removes `key`, returning its value.
    pub(crate) fn remove(&mut self, key: u64) -> Option<V> {
        let hole = self.slot(key)?;
        self.remove_at(hole)
    }

    /// Removes the entry in slot `hole` (from [`Self::find_slot`], with no change to the map
    /// since), returning its value.
    pub(crate) fn remove_at(&mut self, mut hole: usize) -> Option<V> {
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

/// A region of an [`AddressMap`]: `[start, start + len)` and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region<V> {
    /// First address.
    pub start: u64,
    /// Length in bytes (never 0).
    pub len: u64,
    /// What the caller recorded.
    pub value: V,
}

impl<V> Region<V> {
    /// One past the last address.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Why a region was not inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// Empty, or running past `u64::MAX`.
    Invalid,
    /// It overlaps the region starting at this address.
    Overlaps(u64),
}

/// Disjoint address ranges, each with a value: which one contains an address is one lookup.
#[derive(Clone, Debug)]
pub struct AddressMap<V: Copy> {
    /// start → (len, value).
    regions: BTreeMap<u64, (u64, V)>,
}

impl<V: Copy> Default for AddressMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Copy> AddressMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self { regions: BTreeMap::new() }
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether the map has no region.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Records `[start, start + len)` with `value`.
    ///
    /// # Errors
    ///
    /// [`MapError::Invalid`] for an empty or wrapping range, [`MapError::Overlaps`] when it
    /// overlaps a region already recorded (nothing changes).
    pub fn insert(&mut self, start: u64, len: u64, value: V) -> Result<(), MapError> {
        let end = start.checked_add(len).filter(|_| len > 0).ok_or(MapError::Invalid)?;
        // One descent finds any overlap: regions are disjoint and sorted, so if the last region
        // starting below `end` ends at or before `start`, every earlier one does too.
        if let Some((&s, &(l, _))) = self.regions.range(..end).next_back() {
            if s + l > start {
                return Err(MapError::Overlaps(s));
            }
        }
        self.regions.insert(start, (len, value));
        Ok(())
    }

    /// Removes the region starting exactly at `start`.
    pub fn remove(&mut self, start: u64) -> Option<Region<V>> {
        self.regions.remove(&start).map(|(len, value)| Region { start, len, value })
    }

    /// The region containing `addr`.
    pub fn find(&self, addr: u64) -> Option<Region<V>> {
        let (&start, &(len, value)) = self.regions.range(..=addr).next_back()?;
        (addr - start < len).then_some(Region { start, len, value })
    }

    /// The region starting exactly at `start`.
    pub fn get(&self, start: u64) -> Option<Region<V>> {
        self.regions.get(&start).map(|&(len, value)| Region { start, len, value })
    }

    /// The region containing all of `[addr, addr + len)` (`len` 0 is treated as 1).
    pub fn find_range(&self, addr: u64, len: u64) -> Option<Region<V>> {
        let r = self.find(addr)?;
        let end = addr.checked_add(len.max(1))?;
        (end <= r.end()).then_some(r)
    }

    /// Every region, in address order.
    pub fn iter(&self) -> impl Iterator<Item = Region<V>> + '_ {
        self.regions.iter().map(|(&start, &(len, value))| Region { start, len, value })
    }

    /// Keeps only the regions `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Region<V>) -> bool) {
        self.regions.retain(|&start, &mut (len, value)| keep(&Region { start, len, value }));
    }

    /// Removes every region.
    pub fn clear(&mut self) {
        self.regions.clear();
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
        // One probe to find, none to remove.
        let (at, v) = m.find_slot(4096).unwrap();
        assert_eq!(v, 8);
        assert_eq!(m.remove_at(at), Some(8));
        assert_eq!((m.get(4096), m.find_slot(4096), m.len()), (None, None, 100));
        for i in (1..200u64).step_by(2).filter(|&i| i != 1) {
            assert_eq!(m.get(i * 4096), Some(i as u32), "the shift after remove_at kept {i}");
        }
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

    #[test]
    fn address_map_finds_the_region_of_an_address_and_refuses_overlaps() {
        let mut m: AddressMap<char> = AddressMap::new();
        m.insert(0x1000, 0x1000, 'a').unwrap();
        m.insert(0x3000, 0x800, 'b').unwrap();
        assert_eq!(m.insert(0x1800, 0x100, 'x'), Err(MapError::Overlaps(0x1000)));
        assert_eq!(m.insert(0x0800, 0x1000, 'x'), Err(MapError::Overlaps(0x1000)));
        assert_eq!(m.insert(0x2000, 0x1001, 'x'), Err(MapError::Overlaps(0x3000)));
        assert_eq!(m.insert(0x5000, 0, 'x'), Err(MapError::Invalid));
        assert_eq!(m.insert(u64::MAX - 1, 4, 'x'), Err(MapError::Invalid));
        m.insert(0x2000, 0x1000, 'c').unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.find(0x0fff), None);
        assert_eq!(m.find(0x1000).map(|r| r.value), Some('a'));
        assert_eq!(m.find(0x1fff).map(|r| r.value), Some('a'));
        assert_eq!(m.find(0x2000).map(|r| r.value), Some('c'));
        assert_eq!(m.find(0x37ff).map(|r| (r.start, r.end())), Some((0x3000, 0x3800)));
        assert_eq!(m.find(0x3800), None);
        assert_eq!(m.find_range(0x1800, 0x800).map(|r| r.value), Some('a'));
        assert_eq!(m.find_range(0x1800, 0x801), None, "a range crossing into the next region");
        assert_eq!(m.find_range(0x1fff, 0).map(|r| r.value), Some('a'));
        assert_eq!(m.get(0x3000).map(|r| r.len), Some(0x800));
        assert_eq!(m.get(0x3001), None);
        assert_eq!(m.remove(0x2000).map(|r| r.value), Some('c'));
        assert_eq!(m.find(0x2000), None);
        m.retain(|r| r.value != 'a');
        assert_eq!(m.iter().map(|r| r.value).collect::<Vec<_>>(), ['b']);
        m.clear();
        assert!(m.is_empty());
    }
}
