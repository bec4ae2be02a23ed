//! An expandable device buffer on VMM, in safe Rust: it reserves a large address range once and
//! grows by mapping more physical chunks at its end, so its address never changes and its
//! contents stay where they are (no reallocation, no copy).
//!
//! Run with `cargo run -p acl-shim --example expandable` (on the software NPU; set
//! `ACLRS_SIM_INSTANCE` to use a private simulated machine).

use ascendcl::safe::{
    granularity, Device, DeviceSlice, DeviceSliceMut, Mapping, PageKind, PhysicalMemory, Result, Runtime,
    Stream, VirtualRange,
};

/// A buffer of `u32` that grows in place inside a reserved range.
struct ExpandableBuffer<'r> {
    device: Device,
    range: &'r VirtualRange,
    chunk: u64,
    /// One mapping per chunk, in address order; each unmaps on drop.
    mappings: Vec<Mapping<'r>>,
}

impl<'r> ExpandableBuffer<'r> {
    fn new(device: &Device, range: &'r VirtualRange) -> Result<Self> {
        let chunk = granularity(device, PageKind::Huge)?;
        Ok(Self { device: device.clone(), range, chunk, mappings: Vec::new() })
    }

    /// The buffer's address: the range's, whatever its size.
    fn addr(&self) -> u64 {
        self.range.addr()
    }

    /// The number of `u32` the mapped chunks hold.
    fn len(&self) -> usize {
        // CAST: a few chunks of 2 MiB.
        (self.mappings.len() as u64 * self.chunk / 4) as usize
    }

    /// Grows to hold at least `len` elements by mapping chunks at the end.
    fn reserve(&mut self, len: usize) -> Result<()> {
        while self.len() < len {
            let phys = PhysicalMemory::new(&self.device, self.chunk)?;
            let at = self.mappings.len() as u64 * self.chunk;
            self.mappings.push(self.range.map(at, &phys)?);
            // `phys` is dropped here: the runtime frees it when its mapping goes.
        }
        Ok(())
    }

    fn slice(&self, start: usize, len: usize) -> Result<DeviceSlice<'r, u32>> {
        self.range.slice(start as u64 * 4, len)
    }

    fn slice_mut(&mut self, start: usize, len: usize) -> Result<DeviceSliceMut<'r, u32>> {
        self.range.slice_mut(start as u64 * 4, len)
    }
}

fn main() -> Result<()> {
    let rt = Runtime::init()?;
    let dev = Device::open(&rt, 0)?;
    let stream = Stream::new(&dev)?;
    // Room to grow to 64 MiB; no memory behind it yet.
    let range = VirtualRange::reserve(&dev, 64 << 20)?;
    let mut buf = ExpandableBuffer::new(&dev, &range)?;

    let first: Vec<u32> = (0..1000).collect();
    buf.reserve(first.len())?;
    stream.copy_from_host(buf.slice_mut(0, first.len())?, &first)?;
    let addr = buf.addr();
    println!("{} elements at {addr:#x} in {} chunk(s)", buf.len(), buf.mappings.len());

    // Append past the first chunk: the buffer grows in place.
    let end = buf.len() + 1000;
    buf.reserve(end)?;
    let tail: Vec<u32> = (0..2000).map(|i| 1_000_000 + i).collect();
    stream.copy_from_host(buf.slice_mut(end - 2000, 2000)?, &tail)?; // spans two chunks
    assert_eq!(buf.addr(), addr, "the address never changes");
    println!("{} elements at {:#x} in {} chunk(s)", buf.len(), buf.addr(), buf.mappings.len());

    let mut back = vec![0u32; first.len()];
    stream.copy_to_host(&mut back, buf.slice(0, first.len())?)?;
    assert_eq!(back, first, "the first chunk kept its contents");
    let mut back = vec![0u32; tail.len()];
    stream.copy_to_host(&mut back, buf.slice(end - 2000, 2000)?)?;
    assert_eq!(back, tail);
    println!("contents verified; dropping unmaps every chunk, then the range is released");
    drop(buf);
    range.release()?;
    Ok(())
}
