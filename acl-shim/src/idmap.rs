//! A hash map for the runtime's handle tables.
//!
//! Their keys are handles and ids the runtime or the OS made (a tag and a counter, thread ids,
//! device numbers), never data an attacker picks, so a multiplicative mix does the job of
//! SipHash at a fraction of its cost on every API call that resolves a handle. This module
//! owns only the hasher; it must not touch the tables themselves.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed with [`IdHasher`].
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Golden-ratio multiplier: spreads a counter's low bits into the high ones.
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Mixes integer keys with one multiply per word; [`Hasher::finish`] folds the high half
/// down, so aligned keys (thread ids) still differ in the low bits the table indexes with.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(K);
    }
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }

    fn write_usize(&mut self, i: usize) {
        // CAST: usize is at most 64 bits on every supported target.
        self.mix(i as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(x: u64) -> u64 {
        BuildHasherDefault::<IdHasher>::default().hash_one(x)
    }

    #[test]
    fn counters_and_aligned_ids_spread_over_the_low_bits() {
        let low = |xs: &mut dyn Iterator<Item = u64>| {
            let mut seen = std::collections::HashSet::new();
            for x in xs {
                seen.insert(hash(x) & 0xff);
            }
            seen.len()
        };
        // 256 consecutive handles of one tag, and 256 page-aligned thread ids: each set must
        // fill most of 256 buckets.
        assert!(low(&mut (0..256).map(|i| (0xac5e << 48) | i)) > 150);
        assert!(low(&mut (0..256).map(|i| 0x7f00_0000_0000 + (i << 21))) > 150);
    }

    #[test]
    fn a_map_works() {
        let mut m: IdMap<u64, u32> = IdMap::default();
        for i in 0..1000u64 {
            m.insert((0xac5e << 48) | i, u32::try_from(i).unwrap());
        }
        assert_eq!(m.get(&((0xac5e << 48) | 777)), Some(&777));
        assert_eq!(m.len(), 1000);
    }
}
