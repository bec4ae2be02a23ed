//! Where this process puts the VA windows (`hal::layout`): at the driver's addresses when they
//! are free, else at the first place up the address space that nothing holds (the shadow
//! memory of AddressSanitizer, say), and where the machine's other processes have them.
//!
//! It owns that choice, made once per process before the first window is reserved; it must
//! not reserve anything itself (that is [`crate::sys::Window`]).

use hal::layout::{choose_shift, layout_shift, set_layout_shift, DEFAULT_HOST_WINDOW_BASE, LAYOUT_SPAN};

use crate::registry::peek_layout_shift;

/// The mappings of this process, as `(start, end)` pairs from `/proc/self/maps`; empty when
/// the file cannot be read (the driver's addresses are then tried as before).
fn mappings() -> Vec<(u64, u64)> {
    let Ok(text) = std::fs::read_to_string("/proc/self/maps") else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            let range = l.split_whitespace().next()?;
            let (a, b) = range.split_once('-')?;
            Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?))
        })
        .collect()
}

/// Whether anything in `maps` overlaps `[lo, hi)`.
fn overlaps(maps: &[(u64, u64)], lo: u64, hi: u64) -> bool {
    maps.iter().any(|&(a, b)| a < hi && b > lo)
}

/// Sets this process's window layout for machine `instance`, once: the layout the machine's
/// registry records when that place is free here, else the first free place
/// ([`choose_shift`]). Later calls keep what the first chose. Returns the shift in force.
///
/// # Errors
///
/// A message when no place in the address space is free for the windows.
pub(crate) fn settle(instance: &str) -> Result<u64, String> {
    static CHOSEN: std::sync::OnceLock<Result<u64, String>> = std::sync::OnceLock::new();
    CHOSEN
        .get_or_init(|| {
            let maps = mappings();
            let free = |s: u64| {
                !overlaps(&maps, DEFAULT_HOST_WINDOW_BASE + s, DEFAULT_HOST_WINDOW_BASE + s + LAYOUT_SPAN)
            };
            let shift = match peek_layout_shift(instance) {
                Some(s) if free(s) => s,
                _ => choose_shift(|lo, hi| overlaps(&maps, lo, hi)).ok_or_else(|| {
                    "no free place in the address space for the runtime's VA windows (17 TiB)".to_owned()
                })?,
            };
            match set_layout_shift(shift) {
                Ok(()) => Ok(shift),
                // Set by someone before (a test); keep it.
                Err(_) => Ok(layout_shift()),
            }
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_maps_are_read_and_overlap_is_exact() {
        let maps = mappings();
        assert!(!maps.is_empty(), "/proc/self/maps lists this test's own mappings");
        assert!(
            overlaps(&[(10, 20)], 19, 30) && !overlaps(&[(10, 20)], 20, 30) && !overlaps(&[(10, 20)], 0, 10)
        );
    }
}
