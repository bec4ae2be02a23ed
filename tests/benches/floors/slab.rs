//! The floor of a slab's rules, for `mm_alloc.rs`: the least a slab of mm's shape does per
//! alloc+free pair, with each of mm's two rules on or off, to read mm's slab rows against.
//!
//! Chunks of 2 MiB of numbers per size class (mm's classes, `mm::slab::class_of`), found from an
//! address through a table with one entry per 2 MiB, the live slots in a bitmap (the double-free
//! check), and three counters with peaks (mm's live, component and policy counters). The two
//! rules:
//! - `LOWEST`: a chunk hands out its lowest free slot (mm's rule, so that a chunk's top segments
//!   can be given back), kept with a summary of full bitmap words; otherwise the slot freed last
//!   (a stack of free slots per chunk);
//! - `SIZES`: each object's usable bytes are kept, for exact accounting (two bytes per slot, as
//!   mm keeps them); otherwise a free counts the class size.
//!
//! Nothing else of mm: no kinds, no backing or segments, no facts returned, no ring of recent
//! frees. It manages numbers only and is not used by anything but this benchmark.

use mm::slab::{class_of, CLASSES, CLASS_BYTES};

/// Bytes per chunk.
const CHUNK: u64 = 2 << 20;
/// No chunk.
const NIL: u32 = u32::MAX;

/// A current value and its peak.
#[derive(Clone, Copy, Default)]
struct Usage {
    current: u64,
    peak: u64,
}

impl Usage {
    #[inline]
    fn add(&mut self, bytes: u64) {
        self.current += bytes;
        self.peak = self.peak.max(self.current);
    }

    #[inline]
    fn sub(&mut self, bytes: u64) {
        self.current -= bytes;
    }
}

struct Chunk {
    base: u64,
    object: u32,
    /// `ceil(2^25 / (object / 64))`: the slot of an offset is a multiply, as in mm.
    recip: u32,
    capacity: u32,
    used: u32,
    /// `LOWEST`: the lowest free slot; otherwise the next never-used slot.
    next: u32,
    /// The next chunk of the class with a free slot.
    link: u32,
    listed: bool,
    live: Vec<u64>,
    full: [u64; 8],
    sizes: Vec<u16>,
    freed: Vec<u16>,
}

impl Chunk {
    fn new(base: u64, class: usize) -> Self {
        let object = CLASS_BYTES[class];
        // CAST: at most 32768 slots.
        let capacity = (CHUNK / u64::from(object)) as u32;
        let words = capacity.div_ceil(64) as usize;
        let mut c = Self {
            base,
            object,
            // CAST: below 2^25.
            recip: (1u64 << 25).div_ceil(u64::from(object / 64)) as u32,
            capacity,
            used: 0,
            next: 0,
            link: NIL,
            listed: true,
            live: vec![0; words],
            full: [u64::MAX; 8],
            sizes: vec![0; capacity as usize],
            freed: Vec::with_capacity(capacity as usize),
        };
        for w in 0..words {
            c.full[w / 64] &= !(1 << (w % 64));
        }
        if capacity % 64 != 0 {
            c.live[words - 1] = !((1u64 << (capacity % 64)) - 1);
        }
        c
    }
}

/// A slab with the rules `LOWEST` and `SIZES` (see the module docs).
pub(crate) struct Floor<const LOWEST: bool, const SIZES: bool> {
    chunks: Vec<Chunk>,
    heads: [u32; CLASSES],
    slots: Vec<u32>,
    base: u64,
    next_va: u64,
    live: Usage,
    component: Usage,
    policy: Usage,
}

impl<const LOWEST: bool, const SIZES: bool> Floor<LOWEST, SIZES> {
    /// An empty slab over `window` bytes of numbers from `base`.
    pub(crate) fn new(base: u64, window: u64) -> Self {
        Self {
            chunks: Vec::new(),
            heads: [NIL; CLASSES],
            // CAST: a window of a few GiB.
            slots: vec![NIL; (window / CHUNK) as usize],
            base,
            next_va: base,
            live: Usage::default(),
            component: Usage::default(),
            policy: Usage::default(),
        }
    }

    #[cold]
    fn new_chunk(&mut self, class: usize) -> u32 {
        // CAST: far fewer chunks than u32::MAX.
        let id = self.chunks.len() as u32;
        // CAST: inside the window (the benchmark's live bytes are far below it).
        self.slots[((self.next_va - self.base) / CHUNK) as usize] = id;
        self.chunks.push(Chunk::new(self.next_va, class));
        self.next_va += CHUNK;
        self.heads[class] = id;
        id
    }

    /// Allocates `usable` bytes (1 to 64 KiB); the address.
    #[inline(never)]
    pub(crate) fn alloc(&mut self, usable: u64) -> u64 {
        let class = class_of(usable).expect("a slab size");
        let mut id = self.heads[class];
        if id == NIL {
            id = self.new_chunk(class);
        }
        let c = &mut self.chunks[id as usize];
        let slot = if LOWEST {
            c.next
        } else {
            match c.freed.pop() {
                Some(s) => u32::from(s),
                None => {
                    c.next += 1;
                    c.next - 1
                }
            }
        };
        let w = (slot / 64) as usize;
        let word = c.live[w] | 1 << (slot % 64);
        c.live[w] = word;
        if SIZES {
            // CAST: 1 to 64 KiB.
            c.sizes[slot as usize] = (usable - 1) as u16;
        }
        c.used += 1;
        if LOWEST {
            if word == u64::MAX {
                c.full[w / 64] |= 1 << (w % 64);
                c.next = match c.full.iter().position(|f| *f != u64::MAX) {
                    Some(i) if c.used < c.capacity => {
                        let w2 = i * 64 + c.full[i].trailing_ones() as usize;
                        // CAST: below the capacity.
                        (w2 * 64) as u32 + c.live[w2].trailing_ones()
                    }
                    _ => c.capacity,
                };
            } else {
                // CAST: below the capacity.
                c.next = w as u32 * 64 + word.trailing_ones();
            }
        }
        if c.used == c.capacity {
            self.heads[class] = c.link;
            c.listed = false;
            c.link = NIL;
        }
        let addr = c.base + u64::from(slot) * u64::from(c.object);
        let bytes = if SIZES { usable } else { u64::from(c.object) };
        self.live.add(bytes);
        self.component.add(bytes);
        self.policy.add(bytes);
        addr
    }

    /// Frees the object at `addr`; its bytes.
    #[inline(never)]
    pub(crate) fn free(&mut self, addr: u64) -> u64 {
        // CAST: inside the window.
        let id = self.slots[((addr - self.base) / CHUNK) as usize];
        let c = &mut self.chunks[id as usize];
        let off = addr - c.base;
        // CAST: below the capacity.
        let slot = (((off >> 6) * u64::from(c.recip)) >> 25) as u32;
        let w = (slot / 64) as usize;
        assert!(
            c.live[w] & 1 << (slot % 64) != 0 && off == u64::from(slot) * u64::from(c.object),
            "a live object's start"
        );
        c.live[w] &= !(1 << (slot % 64));
        let bytes = if SIZES { u64::from(c.sizes[slot as usize]) + 1 } else { u64::from(c.object) };
        if LOWEST {
            c.full[w / 64] &= !(1 << (w % 64));
            c.next = c.next.min(slot);
        } else {
            // CAST: below 32768.
            c.freed.push(slot as u16);
        }
        let was_full = c.used == c.capacity;
        c.used -= 1;
        if was_full && !c.listed {
            let class = class_of(u64::from(c.object)).expect("a class size");
            c.listed = true;
            c.link = self.heads[class];
            self.heads[class] = id;
        }
        self.live.sub(bytes);
        self.component.sub(bytes);
        self.policy.sub(bytes);
        bytes
    }

    /// Bytes live now, and the most there were (as the slab counted them).
    pub(crate) fn live(&self) -> (u64, u64) {
        (self.live.current, self.live.peak)
    }
}
