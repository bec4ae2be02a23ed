//! Slab size classes for small device allocations, carved out of 2 MiB chunks of device VA.
//!
//! This module owns the bookkeeping of objects inside chunks — which class a size falls in, which
//! slots of a chunk are taken — and nothing else: the chunk's VA and its backing are decided by
//! [`crate::device`], which gives a chunk back when its last object goes (or keeps it as the
//! class's one spare chunk, see there).
//!
//! Costs: allocation and free are O(1): the class of a size is one table load; a chunk hands out
//! its lowest free slot, kept up to date so that finding it is a load (after an allocation the
//! next one is the next clear bit of the same bitmap word, and only a word turning full scans
//! the eight-word summary); a slot's live bit says whether it is live, for the checks of a
//! free, its two-byte size entry what it holds (usable bytes minus one: at most 64 KiB), and the
//! slot of an address is found with a multiply by a precomputed reciprocal, not a division. No
//! per-segment count is kept: the objects of a 64 KiB segment are counted from the live bits of
//! its slots (at most 17 words) only when a free reaches one of a chunk's top two backed
//! segments or a trim asks, so an ordinary allocation or free touches the chunk's first line,
//! one bitmap word, one summary word and one size entry. A chunk's storage is sized once, when
//! it is made, and [`Chunk::reset`] reuses it for another chunk of the same class, so nothing is
//! allocated on the heap per object.

use alloc::boxed::Box;
use alloc::vec;

/// Size of one slab chunk: a 2 MiB page.
pub const CHUNK_BYTES: u64 = 2 << 20;
/// A chunk backed by 4 KiB pages is backed in segments of this size, as its objects reach them.
pub const SEGMENT_BYTES: u64 = 64 << 10;
/// `log2(SEGMENT_BYTES)`.
const SEGMENT_SHIFT: u32 = SEGMENT_BYTES.trailing_zeros();
/// Segments in a chunk.
pub const SEGMENTS: usize = (CHUNK_BYTES / SEGMENT_BYTES) as usize;

/// Largest size served by a slab; larger allocations are backed directly.
pub const SLAB_MAX_BYTES: u64 = 64 << 10;
// An object overlaps two segments at most (`Chunk::segments`).
const _: () = assert!(SLAB_MAX_BYTES <= SEGMENT_BYTES);
// An object's usable bytes minus one fit a `u16` (`Chunk::sizes`).
const _: () = assert!(SLAB_MAX_BYTES <= 1 << 16);

/// The object sizes of the classes, smallest first: every 64 bytes to 1 KiB, every 256 bytes to
/// 4 KiB, then four classes per doubling to 64 KiB. Every size is a multiple of 64, so every
/// object starts 64-byte aligned.
pub const CLASS_BYTES: [u32; 44] = [
    64, 128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024, // 64 B steps
    1280, 1536, 1792, 2048, 2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096, // 256 B steps
    5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, // four per doubling
    20480, 24576, 28672, 32768, 40960, 49152, 57344, 65536,
];

/// Number of classes.
pub const CLASSES: usize = CLASS_BYTES.len();

/// The class serving `bytes`, or `None` when it is too large (or zero): one load from a table
/// indexed by `bytes` in 64-byte steps (every class size is a multiple of 64).
#[inline]
pub fn class_of(bytes: u64) -> Option<usize> {
    if bytes == 0 || bytes > SLAB_MAX_BYTES {
        return None;
    }
    // CAST: bytes <= 64 KiB, so the index is at most 1024.
    Some(usize::from(CLASS_BY_STEP[bytes.div_ceil(64) as usize]))
}

/// Entry `i` is the class of sizes `(64 · (i − 1), 64 · i]` (entry 0 is never read).
const CLASS_BY_STEP: [u8; STEPS + 1] = class_table();

/// 64-byte steps up to [`SLAB_MAX_BYTES`].
const STEPS: usize = (SLAB_MAX_BYTES / 64) as usize;

/// Builds [`CLASS_BY_STEP`]: the smallest class at least as large as each step.
const fn class_table() -> [u8; STEPS + 1] {
    let mut t = [0u8; STEPS + 1];
    let (mut i, mut class) = (1, 0);
    while i <= STEPS {
        // CAST: i <= 1024.
        while (CLASS_BYTES[class] as usize) < i * 64 {
            class += 1;
        }
        // CAST: class < 44.
        t[i] = class as u8;
        i += 1;
    }
    t
}

/// Words of the slot bitmap (32768 slots at most).
const MAP_WORDS: usize = (CHUNK_BYTES / 64 / 64) as usize;
/// Words of the summary of full bitmap words.
const FULL_WORDS: usize = MAP_WORDS.div_ceil(64);

/// One 2 MiB chunk of equal-size objects.
///
/// # Invariants
///
/// A slot is live exactly when its bit in `live` is set (the bits past `capacity` in the last
/// word are always set, so they are never taken); a live slot's `sizes` entry holds its usable
/// bytes minus one (`Chunk::encode`), a free slot's is 0; bit `w` of `full` is set when word
/// `w` of `live` is all ones or does not exist. `used` is the number of live slots. `recip` is
/// `ceil(2^RECIP_SHIFT / (object / 64))`. `lowest` is the lowest free slot (`capacity` when the
/// chunk is full), kept up to date by every change so that finding it is a load.
///
/// The live objects of a segment (bytes `[i · 64 KiB, (i + 1) · 64 KiB)`) are counted from the
/// live bits of the slots overlapping it when asked ([`Self::segment_live`]), which only frees
/// near a chunk's backed top and trims do: allocations and frees keep no per-segment counts.
///
/// Layout: the fields every allocation and free reads come first, in one 64-byte line (`C`
/// order keeps them together), then the summary words.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Chunk {
    /// First device address of the chunk.
    pub base: u64,
    /// The live bits: the first `capacity.div_ceil(64)` words are the slots' (the rest stay
    /// clear and are marked full in `full`). A fixed 4 KiB array rather than one sized to the
    /// class, so that a slot's word is found without a bounds check.
    live: Box<[u64; MAP_WORDS]>,
    /// Per slot: a live object's usable bytes minus one (1 to 64 KiB in two bytes, not four: a
    /// chunk of 64-byte objects keeps 64 KiB of sizes, not 128 KiB); 0 for a free slot.
    sizes: Box<[u16]>,
    used: u32,
    capacity: u32,
    object: u32,
    /// `capacity · object`: the bytes the objects span.
    span: u32,
    recip: u32,
    lowest: u32,
    /// The class index.
    pub class: u8,
    /// The slab kind (decided by the caller: page size and attributes).
    pub kind: u8,
    full: [u64; FULL_WORDS],
}

/// Objects are `64 · m` bytes with `m <= 1024`, and `off / object` is `(off / 64) / m`; the
/// offset's 64-byte index is below 2^15, so with this shift `(q * recip) >> RECIP_SHIFT` with
/// `recip = ceil(2^RECIP_SHIFT / m)` (below 2^25, a `u32`) is exactly `q / m`, and the product
/// fits in 64 bits.
const RECIP_SHIFT: u32 = 25;

impl Chunk {
    /// An empty chunk of `class` at `base`.
    pub fn new(base: u64, class: usize, kind: u8) -> Self {
        let object = CLASS_BYTES[class];
        // CAST: at most 2 MiB / 64 = 32768 objects.
        let capacity = (CHUNK_BYTES / u64::from(object)) as u32;
        // CAST: class < 44.
        let mut this = Self {
            base,
            class: class as u8,
            kind,
            used: 0,
            capacity,
            object,
            span: capacity * object,
            // CAST: below 2^25 (object / 64 >= 1).
            recip: (1u64 << RECIP_SHIFT).div_ceil(u64::from(object / 64)) as u32,
            lowest: 0,
            full: [0; FULL_WORDS],
            live: Box::new([0; MAP_WORDS]),
            sizes: vec![0; capacity as usize].into_boxed_slice(),
        };
        // The storage was allocated zeroed (every slot free): only the fixed bits are set, so
        // that the large size arrays of small classes are not written (and, for those the
        // system allocator maps fresh, not even touched) until their slots are used.
        this.set_fixed_bits();
        this
    }

    /// Makes this (empty) chunk a chunk of the same class at `base` for `kind`, reusing its
    /// storage.
    pub fn reset(&mut self, base: u64, kind: u8) {
        debug_assert!(self.is_empty());
        self.base = base;
        self.kind = kind;
        if self.used == 0 {
            // Empty: by the invariants every size and live bit (but the ones
            // past the capacity) is already clear, so the storage (up to 160 KiB for the
            // 64-byte class) is reused as it is, without being rewritten.
            return;
        }
        self.clear();
    }

    /// Frees every slot and sets up the bitmaps' fixed bits.
    fn clear(&mut self) {
        self.used = 0;
        self.lowest = 0;
        self.live.fill(0);
        self.sizes.fill(0);
        self.set_fixed_bits();
    }

    /// Sets the bits that never change in an empty chunk's bitmaps: words past the last live
    /// word count as full, and so do the bits past the capacity in the last word.
    fn set_fixed_bits(&mut self) {
        self.full = [u64::MAX; FULL_WORDS];
        let words = self.capacity.div_ceil(64) as usize;
        for w in 0..words {
            self.full[w / 64] &= !(1 << (w % 64));
        }
        let tail = self.capacity % 64;
        if tail != 0 {
            if let Some(last) = self.live.get_mut(words - 1) {
                *last = !((1u64 << tail) - 1);
            }
        }
    }

    /// Bytes per object.
    #[inline]
    pub fn object_bytes(&self) -> u64 {
        u64::from(self.object)
    }

    /// Objects in use.
    pub fn used(&self) -> u32 {
        self.used
    }

    /// Whether every slot is taken.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.used == self.capacity
    }

    /// Whether no slot is taken.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// The lowest free slot: the one the next [`Self::alloc`] takes.
    #[inline]
    fn lowest_free(&self) -> Option<u32> {
        (self.lowest < self.capacity).then_some(self.lowest)
    }

    /// The lowest free slot found from the bitmaps (`capacity` when there is none).
    #[inline]
    fn scan_lowest(&self) -> u32 {
        self.scan_bitmaps().unwrap_or(self.capacity)
    }

    /// The lowest slot whose live bit is clear, from the summary of full words.
    #[inline]
    fn scan_bitmaps(&self) -> Option<u32> {
        let (i, f) = self.full.iter().enumerate().find(|(_, f)| **f != u64::MAX)?;
        let w = i * 64 + f.trailing_ones() as usize;
        let bit = self.live.get(w)?.trailing_ones();
        // CAST: w < 512 and bit < 64.
        Some(w as u32 * 64 + bit)
    }

    /// The offset just past the slot the next [`Self::alloc`] takes (whose bytes the caller may
    /// have to back first), or `None` when the chunk is full.
    #[inline]
    pub fn next_end(&self) -> Option<u64> {
        self.lowest_free().map(|slot| u64::from(slot + 1) * self.object_bytes())
    }

    /// Whether freeing the object in `slot` lets the top of the chunk shrink, when its top two
    /// backed segments are `from` and `from + 1`: with [`crate::device`]'s hysteresis the top
    /// segment goes only when the one below it is empty too, so exactly when the object reaches
    /// one of the two and, once it is gone, neither holds a live object. (A free that empties
    /// the top segment while the one below keeps objects changes no backing.)
    #[inline(always)]
    pub fn free_lets_top_shrink(&self, slot: u32, from: usize) -> bool {
        from < SEGMENTS - 1
            && self.segments(slot).1 >= from
            && !self.segment_holds_other(from, slot)
            && !self.segment_holds_other(from + 1, slot)
    }

    /// The slots overlapping segment `i`, first and last (`None` past the objects).
    #[inline]
    fn segment_slots(&self, i: usize) -> Option<(u32, u32)> {
        // CAST: segment offsets fit in u64.
        let start = i as u64 * SEGMENT_BYTES;
        let end = (start + SEGMENT_BYTES).min(u64::from(self.span));
        // From the slot holding `start` to the one holding `end - 1` (both inside the chunk).
        (start < end).then(|| (self.slot_at(start), self.slot_at(end - 1)))
    }

    /// Whether a live object other than the one in `slot` overlaps segment `i`: the first
    /// bitmap word of the segment's slots with a live bit (but `slot`'s) answers, usually the
    /// first word looked at.
    #[inline]
    fn segment_holds_other(&self, i: usize, slot: u32) -> bool {
        let Some((a, b)) = self.segment_slots(i) else { return false };
        let (wa, wb) = ((a / 64) as usize, (b / 64) as usize);
        (wa..=wb).any(|w| {
            let mut m = self.live.get(w).copied().unwrap_or(0);
            if w == wa {
                m &= u64::MAX << (a % 64);
            }
            if w == wb {
                m &= u64::MAX >> (63 - b % 64);
            }
            if w == (slot / 64) as usize {
                m &= !(1 << (slot % 64));
            }
            m != 0
        })
    }

    /// The first and last segments the object in `slot` overlaps: the same one or neighbours,
    /// as no object is larger than a segment.
    #[inline(always)]
    fn segments(&self, slot: u32) -> (usize, usize) {
        let start = slot * self.object;
        let end = start + self.object - 1;
        // CAST: below SEGMENTS (a u32 offset inside the chunk, shifted by the segment's log).
        let seg = |off: u32| (off >> SEGMENT_SHIFT) as usize % SEGMENTS;
        (seg(start), seg(end))
    }

    /// Live objects overlapping segment `i`: the live bits of the slots that overlap it (at
    /// most 1024 slots, 17 bitmap words), counted.
    pub fn segment_live(&self, i: usize) -> u16 {
        let Some((a, b)) = self.segment_slots(i) else { return 0 };
        let (wa, wb) = ((a / 64) as usize, (b / 64) as usize);
        let mut n = 0;
        for w in wa..=wb {
            let mut m = self.live.get(w).copied().unwrap_or(0);
            if w == wa {
                m &= u64::MAX << (a % 64);
            }
            if w == wb {
                m &= u64::MAX >> (63 - b % 64);
            }
            n += m.count_ones();
        }
        // CAST: at most 1024 slots overlap a segment.
        n as u16
    }

    /// Takes the lowest free slot for an object of `usable` bytes (at least 1); returns its
    /// address.
    #[inline(always)]
    pub fn alloc(&mut self, usable: u32) -> Option<u64> {
        if !self.fits(usable) {
            return None;
        }
        let slot = self.lowest_free()?;
        Some(self.take(slot, usable))
    }

    /// [`Self::alloc`] when the slot it would take ends within the first `backed` bytes of the
    /// chunk (at most [`CHUNK_BYTES`]); `None` (nothing changed) when it does not, when the
    /// chunk is full or when `usable` does not fit an object (0, or more than the object). One
    /// compare covers the first two: a full chunk's `lowest` is its capacity, and `(capacity + 1)
    /// · object` exceeds the chunk.
    #[inline(always)]
    pub fn alloc_within(&mut self, usable: u32, backed: u64) -> Option<u64> {
        let slot = self.lowest;
        if u64::from(slot + 1) * u64::from(self.object) > backed || !self.fits(usable) {
            return None;
        }
        Some(self.take(slot, usable))
    }

    /// Makes free `slot` (the lowest free one) live with `usable` (non-zero) bytes; returns its
    /// address.
    #[inline(always)]
    fn take(&mut self, slot: u32, usable: u32) -> u64 {
        debug_assert!(slot == self.lowest && slot < self.capacity && usable != 0);
        // CAST: the modulo changes nothing (slots are below 32768) but drops the bounds check.
        let w = (slot / 64) as usize % MAP_WORDS;
        let word = self.live[w] | 1 << (slot % 64);
        self.live[w] = word;
        self.sizes[slot as usize] = Self::encode(usable);
        // INVARIANT: one more slot live; the lowest free one is above it. Every slot below
        // `slot` is live (it was the lowest free one), so while its word has a clear bit the
        // next free slot is that bit; only a word turning full needs the summary scan.
        self.used += 1;
        if word == u64::MAX {
            self.full[(w / 64) % FULL_WORDS] |= 1 << (w % 64);
            self.lowest = if self.used == self.capacity { self.capacity } else { self.scan_lowest() };
        } else {
            // CAST: w < 512.
            self.lowest = w as u32 * 64 + word.trailing_ones();
        }
        self.base + u64::from(slot) * self.object_bytes()
    }

    /// The slot holding an object that starts exactly at `addr`, if it is live.
    #[inline(always)]
    pub fn slot_of(&self, addr: u64) -> Result<u32, SlotError> {
        let off = addr.checked_sub(self.base).ok_or(SlotError::Outside)?;
        let object = self.object_bytes();
        if off >= u64::from(self.span) {
            return Err(SlotError::Outside);
        }
        let slot = self.slot_at(off);
        if !self.is_live(slot) {
            return Err(SlotError::NotLive);
        }
        if off != u64::from(slot) * object {
            return Err(SlotError::Interior { base: self.base + u64::from(slot) * object });
        }
        Ok(slot)
    }

    /// `off / object` for an offset inside the chunk.
    #[inline]
    fn slot_at(&self, off: u64) -> u32 {
        debug_assert!(off < CHUNK_BYTES);
        // CAST: below the capacity for offsets inside the chunk.
        (((off >> 6) * u64::from(self.recip)) >> RECIP_SHIFT) as u32
    }

    #[inline]
    fn is_live(&self, slot: u32) -> bool {
        debug_assert!(slot < self.capacity);
        // CAST: as in `take`, the modulo only drops the bounds check.
        self.live[(slot / 64) as usize % MAP_WORDS] & 1 << (slot % 64) != 0
    }

    /// The live object containing `addr`: (its base, its usable bytes).
    pub fn object_at(&self, addr: u64) -> Option<(u64, u64)> {
        let off = addr.checked_sub(self.base)?;
        if off >= CHUNK_BYTES {
            return None;
        }
        let object = self.object_bytes();
        let slot = self.slot_at(off);
        (slot < self.capacity && self.is_live(slot))
            .then(|| (self.base + u64::from(slot) * object, self.usable_at(slot)))
    }

    /// Calls `f(base, usable bytes)` for every live object, in address order.
    pub fn for_each_live(&self, mut f: impl FnMut(u64, u64)) {
        let object = self.object_bytes();
        for slot in (0..self.capacity).filter(|&s| self.is_live(s)) {
            f(self.base + u64::from(slot) * object, self.usable_at(slot));
        }
    }

    /// Frees the object in `slot` (from [`Self::slot_of`]); returns its usable bytes.
    #[inline(always)]
    pub fn free(&mut self, slot: u32) -> u64 {
        self.release(slot)
    }

    /// The lowest slot whose object reaches segment `top - 2` when the first `backed` bytes
    /// (`top` segments) are backed: only the free of such an object may let the top shrink
    /// ([`Self::free_lets_top_shrink`] with `from = top - 2`). `u32::MAX` when fewer than two
    /// segments are backed (nothing can shrink).
    pub fn shrink_guard(&self, backed: u64) -> u32 {
        let top = backed / SEGMENT_BYTES;
        if top < 2 {
            return u32::MAX;
        }
        let from = (top - 2) * SEGMENT_BYTES;
        let object = self.object_bytes();
        // The first slot whose last byte, `slot · object + object − 1`, is at or past `from`.
        // CAST: below the capacity (at most 32768).
        (from + 1).saturating_sub(object).div_ceil(object) as u32
    }

    /// Frees the live object starting exactly at `addr` unless that would empty the chunk or
    /// let its top shrink when its first `backed` bytes are backed
    /// ([`Self::free_lets_top_shrink`], looked at only from slot `guard` on, which
    /// [`Self::shrink_guard`] gives for `backed`, or `u32::MAX` where the top never shrinks):
    /// its usable bytes, or `None` (nothing changed) then and when `addr` is not a live
    /// object's start, for the caller's slow path to tell apart.
    #[inline(always)]
    pub fn free_fast(&mut self, addr: u64, guard: u32, backed: u64) -> Option<u64> {
        let off = addr.wrapping_sub(self.base);
        if off >= u64::from(self.span) {
            return None;
        }
        let slot = self.slot_at(off);
        // CAST: as in `take`, the modulo only drops the bounds check.
        let live = self.live[(slot / 64) as usize % MAP_WORDS] & 1 << (slot % 64) != 0;
        if !live | (off != u64::from(slot * self.object)) | (self.used == 1) {
            return None;
        }
        // Only an object reaching the top two segments may let the top shrink: look at their
        // objects then (the first bitmap word with another live object answers).
        // CAST: at most SEGMENTS.
        if slot >= guard
            && self.free_lets_top_shrink(slot, ((backed / SEGMENT_BYTES) as usize).wrapping_sub(2))
        {
            return None;
        }
        Some(self.release(slot))
    }

    /// Frees live `slot`.
    #[inline(always)]
    fn release(&mut self, slot: u32) -> u64 {
        debug_assert!(self.is_live(slot));
        let usable = Self::decode(core::mem::take(&mut self.sizes[slot as usize]));
        // CAST: as in `take`, the modulo only drops the bounds check.
        let w = (slot / 64) as usize % MAP_WORDS;
        self.live[w] &= !(1 << (slot % 64));
        self.full[(w / 64) % FULL_WORDS] &= !(1 << (w % 64));
        // INVARIANT: one slot fewer live, and it may be the lowest free one.
        self.used -= 1;
        self.lowest = self.lowest.min(slot);
        usable
    }

    /// Whether an object of `usable` bytes fits this chunk's objects: at least 1 byte and at
    /// most the object (at most 64 KiB, so its size minus one fits the two bytes of `sizes`).
    #[inline(always)]
    fn fits(&self, usable: u32) -> bool {
        usable != 0 && usable <= self.object
    }

    /// The `sizes` entry of a live object of `usable` bytes (one that [`Self::fits`]).
    #[inline(always)]
    fn encode(usable: u32) -> u16 {
        // CAST: 1 ..= 64 KiB by `fits`, so the value is below 2^16.
        (usable - 1) as u16
    }

    /// The usable bytes of a live slot's `sizes` entry `code`.
    #[inline(always)]
    fn decode(code: u16) -> u64 {
        u64::from(code) + 1
    }

    /// The usable bytes of live `slot`.
    #[inline]
    fn usable_at(&self, slot: u32) -> u64 {
        Self::decode(self.sizes[slot as usize])
    }
}

/// Why an address does not name a live object of a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotError {
    /// Not inside the chunk's objects.
    Outside,
    /// Inside a slot that holds no object.
    NotLive,
    /// Inside a live object that starts at `base`.
    Interior {
        /// The object's start.
        base: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn classes_cover_every_size_tightly() {
        let mut prev = 0u64;
        for (i, &c) in CLASS_BYTES.iter().enumerate() {
            let c = u64::from(c);
            assert_eq!(c % 64, 0);
            assert!(c > prev);
            assert_eq!(class_of(c), Some(i), "exact size {c}");
            assert_eq!(class_of(prev + 1), Some(i), "just above the previous class {prev}");
            prev = c;
        }
        assert_eq!(class_of(0), None);
        assert_eq!(class_of(SLAB_MAX_BYTES + 1), None);
        // Waste is bounded: under 64 bytes to 1 KiB, under 256 bytes to 4 KiB, under 25% above.
        for b in 1..=SLAB_MAX_BYTES {
            let c = u64::from(CLASS_BYTES[class_of(b).unwrap()]);
            assert!(c >= b);
            let bound = if b <= 1024 {
                64
            } else if b <= 4096 {
                256
            } else {
                b / 4
            };
            assert!(c - b < bound, "size {b} class {c}");
        }
    }

    #[test]
    fn lowest_slots_first_and_segment_counts() {
        // 5120-byte objects straddle segment boundaries.
        let mut c = Chunk::new(0, class_of(5000).unwrap(), 0);
        assert_eq!(c.object_bytes(), 5120);
        assert_eq!(c.next_end(), Some(5120));
        let xs: Vec<u64> = (0..13).map(|_| c.alloc(5000).unwrap()).collect();
        assert_eq!(xs[12], 12 * 5120);
        // Slot 12 spans [61440, 66560): both of the first two segments.
        assert_eq!((c.segment_live(0), c.segment_live(1)), (13, 1));
        c.free(c.slot_of(xs[3]).unwrap());
        assert_eq!(c.next_end(), Some(4 * 5120), "the lowest free slot is reused first");
        c.free(c.slot_of(xs[12]).unwrap());
        assert_eq!((c.segment_live(0), c.segment_live(1)), (11, 0));
        assert_eq!(c.alloc(1), Some(3 * 5120));
        let n = c.used();
        while c.alloc(1).is_some() {}
        assert!(c.is_full());
        assert_eq!(c.used(), 409);
        assert!(n < c.used());
        assert_eq!(c.next_end(), None);
    }

    #[test]
    fn kept_lowest_slot_matches_the_bitmaps() {
        for class in [0, 15, CLASSES - 1] {
            let mut c = Chunk::new(0, class, 0);
            let mut live: Vec<u64> = Vec::new();
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            for _ in 0..if cfg!(miri) { 200 } else { 5000 } {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly allocations until full, then frees of random objects.
                if x % 3 != 0 || live.is_empty() {
                    if let Some(a) = c.alloc(1) {
                        live.push(a);
                    }
                } else {
                    // CAST: the index is below the number live.
                    let a = live.swap_remove((x % live.len() as u64) as usize);
                    c.free(c.slot_of(a).unwrap());
                }
                assert_eq!(c.lowest_free(), c.scan_bitmaps(), "class {class}");
            }
            for a in live.drain(..) {
                c.free(c.slot_of(a).unwrap());
            }
            assert!(c.is_empty());
            c.reset(CHUNK_BYTES, 0);
            assert_eq!(c.lowest_free(), Some(0));
            assert_eq!(c.alloc(1), Some(CHUNK_BYTES));
        }
    }

    #[test]
    fn reciprocal_slot_is_exact_division() {
        for (class, &object) in CLASS_BYTES.iter().enumerate() {
            let c = Chunk::new(0, class, 0);
            let object = u64::from(object);
            // Every slot boundary and its neighbours, across the whole chunk.
            for slot in (0..CHUNK_BYTES / object).step_by(if cfg!(miri) { 1021 } else { 1 }) {
                for off in [slot * object, slot * object + 1, (slot + 1) * object - 1] {
                    assert_eq!(u64::from(c.slot_at(off)), off / object, "class {class} off {off}");
                }
            }
        }
    }

    #[test]
    fn shrink_guard_is_the_first_slot_reaching_the_top_two_segments() {
        // Under Miri a sample: every seventh class, every fifth top, every 997th slot.
        let (classes, tops, slots) = if cfg!(miri) { (7, 5, 997) } else { (1, 1, 1) };
        for (class, &object) in CLASS_BYTES.iter().enumerate().step_by(classes) {
            let c = Chunk::new(0, class, 0);
            for top in (0..=SEGMENTS as u64).step_by(tops) {
                let guard = c.shrink_guard(top * SEGMENT_BYTES);
                if top < 2 {
                    assert_eq!(guard, u32::MAX, "class {class}: nothing shrinks below two segments");
                    continue;
                }
                // CAST: below SEGMENTS.
                let from = (top - 2) as usize;
                for slot in (0..c.capacity).step_by(slots) {
                    let reaches = c.segments(slot).1 >= from;
                    assert_eq!(slot >= guard, reaches, "class {class} ({object} B), top {top}, slot {slot}");
                }
            }
        }
    }

    #[test]
    fn fast_alloc_and_free_refuse_what_needs_the_slow_path() {
        // 5120-byte objects: slot 12 straddles the first two segments.
        let mut c = Chunk::new(0, class_of(5000).unwrap(), 0);
        assert_eq!(c.alloc_within(0, CHUNK_BYTES), None, "a zero size");
        let xs: Vec<u64> = (0..12).map(|_| c.alloc_within(5000, SEGMENT_BYTES).unwrap()).collect();
        assert_eq!(xs[11], 11 * 5120);
        assert_eq!(c.alloc_within(5000, SEGMENT_BYTES), None, "slot 12 ends past the backed bytes");
        assert_eq!(c.used(), 12, "nothing changed");
        assert_eq!(c.alloc_within(5000, 2 * SEGMENT_BYTES), Some(12 * 5120));
        // Freeing slot 12 would empty segment 1: refused from segment 1 on, done below it.
        let top3 = (c.shrink_guard(3 * SEGMENT_BYTES), 3 * SEGMENT_BYTES);
        let top4 = (c.shrink_guard(4 * SEGMENT_BYTES), 4 * SEGMENT_BYTES);
        assert_eq!(c.free_fast(12 * 5120, top3.0, top3.1), None);
        assert_eq!((c.used(), c.segment_live(1)), (13, 1), "nothing changed");
        assert_eq!(c.free_fast(12 * 5120 + 64, top4.0, top4.1), None, "not an object's start");
        assert_eq!(c.free_fast(12 * 5120, top4.0, top4.1), Some(5000));
        assert_eq!(c.free_fast(12 * 5120, top4.0, top4.1), None, "no longer live");
        assert_eq!(c.segment_live(1), 0);
        assert_eq!(c.next_end(), Some(13 * 5120));
        for slot in 1..12 {
            assert_eq!(c.free_fast(slot * 5120, u32::MAX, 0), Some(5000));
        }
        assert_eq!(c.free_fast(0, u32::MAX, 0), None, "the last object empties the chunk");
        assert_eq!(c.free(0), 5000);
        assert!(c.is_empty());
        // A full chunk refuses whatever is backed.
        while c.alloc(1).is_some() {}
        assert_eq!(c.alloc_within(1, CHUNK_BYTES), None);
    }

    #[test]
    fn sizes_keep_every_usable_byte_count_of_the_class() {
        // The largest class: 1 to 64 KiB must come back exactly (two bytes hold size - 1).
        let mut c = Chunk::new(0, CLASSES - 1, 0);
        assert_eq!(c.object_bytes(), SLAB_MAX_BYTES);
        for usable in [1, 2, 65535, 65536] {
            let a = c.alloc(usable).unwrap();
            assert_eq!(c.object_at(a + 1), Some((a, u64::from(usable))));
            assert_eq!(c.free(c.slot_of(a).unwrap()), u64::from(usable));
        }
        // Nothing that does not fit an object is taken, and nothing changes.
        for usable in [0, 65537, u32::MAX] {
            assert_eq!(c.alloc(usable), None);
            assert_eq!(c.alloc_within(usable, CHUNK_BYTES), None);
        }
        assert!(c.is_empty());
        assert_eq!(c.lowest_free(), Some(0));
        let mut seen = 0;
        c.for_each_live(|_, _| seen += 1);
        assert_eq!(seen, 0);
    }

    #[test]
    fn chunk_slots() {
        let mut c = Chunk::new(0x1000_0000, class_of(1 << 20 >> 4).unwrap(), 0);
        assert_eq!(c.object_bytes(), 65536);
        let a = c.alloc(65000).unwrap();
        let b = c.alloc(64).unwrap();
        assert_eq!(a, 0x1000_0000);
        assert_eq!(b, 0x1000_0000 + 65536);
        assert_eq!(c.slot_of(b), Ok(1));
        assert_eq!(c.slot_of(b + 8), Err(SlotError::Interior { base: b }));
        assert_eq!(c.slot_of(b + 65536), Err(SlotError::NotLive));
        assert_eq!(c.slot_of(0x1000_0000 + (2 << 20)), Err(SlotError::Outside));
        assert_eq!(c.object_at(a + 100), Some((a, 65000)));
        assert_eq!(c.free(0), 65000);
        assert_eq!(c.slot_of(a), Err(SlotError::NotLive));
        for _ in 0..31 {
            assert!(c.alloc(1).is_some());
        }
        assert!(c.is_full());
        assert_eq!(c.alloc(1), None);
    }

    #[test]
    fn a_reset_chunk_is_as_new() {
        // 192-byte objects: the capacity is not a multiple of 64 (tail bits in the last word).
        let class = class_of(192).unwrap();
        let mut c = Chunk::new(0x1000_0000, class, 0);
        let cap = (CHUNK_BYTES / 192) as u32;
        for i in 0..cap {
            assert_eq!(c.alloc(100), Some(0x1000_0000 + u64::from(i) * 192));
        }
        assert!(c.is_full());
        for slot in (0..cap).rev() {
            c.free(slot);
        }
        assert!(c.is_empty());
        c.reset(0x2000_0000, 1);
        assert_eq!((c.base, c.kind), (0x2000_0000, 1));
        assert_eq!(c.slot_of(0x2000_0000), Err(SlotError::NotLive));
        assert!((0..SEGMENTS).all(|i| c.segment_live(i) == 0));
        for i in 0..cap {
            assert_eq!(c.alloc(7), Some(0x2000_0000 + u64::from(i) * 192));
        }
        assert!(c.is_full());
        assert_eq!(c.alloc(1), None);
    }
}
