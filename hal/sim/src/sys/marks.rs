//! Which pages of a window's identity mapping have been backed at least once: one bit per
//! 4 KiB page, so that the window gives a range the kernel's mapping mark only once.
//!
//! # Why a mark
//!
//! Backing and unbacking a range on the identity mapping changes its protection in place
//! (`mprotect`). The kernel joins neighbouring mappings whose attributes are equal, so making a
//! range with inaccessible memory on both sides (never-backed VA, such as the unused end of a
//! 2 MiB-rounded block) inaccessible again joins it with both, and backing it next time splits
//! that mapping in three again: two costly mapping changes per pair, more than a bare
//! `mmap`+`munmap`. Such a range, when the window backs it, carries `MADV_RANDOM` (a read-ahead
//! hint, meaningless for shared memory pages, chosen because it changes nothing else), which
//! never-backed memory does not: unbacked, the range stays a mapping of its own, and the next
//! backing of the same range (the steady state of a malloc/free loop: the VA allocator hands a
//! freed range to the next request of its size) changes the protection of exactly one mapping,
//! with no split or join. A range backed next to accessible memory takes no mark: backing and
//! unbacking it only move the boundary between its neighbours' mappings, which the kernel does
//! in place (a mark would turn that into a join and a split). Marked ranges next to each other
//! (backed or not) still join, so the process holds about as many mappings as before. Where a
//! change fails for lack of mappings, [`super::Window`] removes every mark (all marked ranges
//! join their neighbours again) and tries once more.
//!
//! This module only keeps the record; the mapping calls are [`super::Window`]'s. The record
//! may say less than the kernel (a mark that failed is not recorded): it only decides whether a
//! mark is given, never what is accessible.

/// Bytes of one page the record tracks.
const PAGE: u64 = 4096;

/// The marked pages of one identity mapping.
#[derive(Default)]
pub(crate) struct Marks {
    /// One bit per page; allocated zeroed, so pages of it never written cost no memory.
    words: Vec<u64>,
    /// Pages marked.
    marked: u64,
}

impl Marks {
    /// A record of `len_bytes` of identity mapping, nothing marked.
    pub(crate) fn new(len_bytes: u64) -> Self {
        let words = usize::try_from(len_bytes.div_ceil(PAGE).div_ceil(64)).unwrap_or(0);
        Self { words: vec![0; words], marked: 0 }
    }

    /// The page range of `[offset, offset + len_bytes)`, when the record covers all of it.
    fn pages(&self, offset: u64, len_bytes: u64) -> Option<(u64, u64)> {
        let (first, end) = (offset / PAGE, offset.checked_add(len_bytes)?.div_ceil(PAGE));
        (end <= self.words.len() as u64 * 64).then_some((first, end))
    }

    /// Whether every page of `[offset, offset + len_bytes)` is marked (false outside the
    /// record).
    pub(crate) fn all_marked(&self, offset: u64, len_bytes: u64) -> bool {
        let Some((first, end)) = self.pages(offset, len_bytes) else { return false };
        let mut p = first;
        while p < end {
            let (w, bit) = (p / 64, p % 64);
            let n = (64 - bit).min(end - p);
            let mask = word_mask(bit, n);
            // CAST: `w` indexes `words` (checked by `pages`).
            if self.words[w as usize] & mask != mask {
                return false;
            }
            p += n;
        }
        true
    }

    /// Records the pages of `[offset, offset + len_bytes)` as marked or not (pages outside the
    /// record are ignored).
    pub(crate) fn set(&mut self, offset: u64, len_bytes: u64, on: bool) {
        let Some((first, end)) = self.pages(offset, len_bytes) else { return };
        let mut p = first;
        while p < end {
            let (w, bit) = (p / 64, p % 64);
            let n = (64 - bit).min(end - p);
            let mask = word_mask(bit, n);
            // CAST: `w` indexes `words` (checked by `pages`).
            let word = &mut self.words[w as usize];
            let before = u64::from((*word & mask).count_ones());
            if on {
                *word |= mask;
                self.marked += n - before;
            } else {
                *word &= !mask;
                self.marked -= before;
            }
            p += n;
        }
    }

    /// Whether any page is marked.
    pub(crate) fn any(&self) -> bool {
        self.marked > 0
    }

    /// Forgets every mark (a fresh zeroed record, so the old one's pages go back).
    pub(crate) fn clear(&mut self) {
        if self.marked > 0 {
            self.words = vec![0; self.words.len()];
            self.marked = 0;
        }
    }
}

impl core::fmt::Debug for Marks {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Not the bits: a large window has millions.
        f.debug_struct("Marks")
            .field("pages", &(self.words.len() * 64))
            .field("marked", &self.marked)
            .finish()
    }
}

/// `n` bits (1 to 64) from `bit` up.
fn word_mask(bit: u64, n: u64) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        ((1u64 << n) - 1) << bit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_recorded_per_page_across_words_and_counted() {
        let mut m = Marks::new(1 << 30);
        assert!(!m.any());
        assert!(!m.all_marked(0, PAGE));
        // A range across three words, not aligned to any.
        let (off, len) = (60 * PAGE, 70 * PAGE);
        m.set(off, len, true);
        assert!(m.any());
        assert_eq!(m.marked, 70);
        assert!(m.all_marked(off, len));
        assert!(m.all_marked(off + PAGE, len - 2 * PAGE));
        assert!(!m.all_marked(off - PAGE, len), "the page before is not marked");
        assert!(!m.all_marked(off, len + PAGE), "the page after is not marked");
        // Setting again counts nothing twice; clearing a middle part splits the run.
        m.set(off, len, true);
        assert_eq!(m.marked, 70);
        m.set(off + 10 * PAGE, 5 * PAGE, false);
        assert_eq!(m.marked, 65);
        assert!(!m.all_marked(off, len));
        assert!(m.all_marked(off, 10 * PAGE));
        assert!(m.all_marked(off + 15 * PAGE, 55 * PAGE));
        // Whole words at once.
        m.set(0, 256 * PAGE, true);
        assert_eq!(m.marked, 256);
        assert!(m.all_marked(0, 256 * PAGE));
        m.clear();
        assert!(!m.any());
        assert!(!m.all_marked(0, PAGE));
    }

    #[test]
    fn ranges_outside_the_record_are_never_marked() {
        let mut m = Marks::new(64 * PAGE);
        m.set(60 * PAGE, 8 * PAGE, true);
        assert!(!m.any(), "a range running past the record is ignored");
        assert!(!m.all_marked(60 * PAGE, 8 * PAGE));
        assert!(!m.all_marked(u64::MAX - PAGE, 2 * PAGE), "no overflow");
        m.set(0, 64 * PAGE, true);
        assert!(m.all_marked(0, 64 * PAGE));
        assert_eq!(m.marked, 64);
    }
}
