//! Two streams, a producer and a consumer, ordered by events: the producer fills a buffer on
//! its stream and records an event; the consumer's stream waits for the event (through
//! `Stream::acquire`, which records and waits for it) and reads the buffer. Dropping the
//! buffer frees it on the producer's stream after the consumer's read.
//!
//! ```sh
//! cargo run -p acl-shim --example producer_consumer
//! ```

use ascendcl::safe::{Device, Event, MemPool, PinnedHostBuffer, Result, Runtime, Stream};

const N: usize = 1 << 16;
const ROUNDS: u32 = 8;

fn main() -> Result<()> {
    let rt = Runtime::init()?;
    let dev = Device::open(&rt, 0)?;
    let (producer, consumer) = (Stream::new(&dev)?, Stream::new(&dev)?);
    let pool = MemPool::new(&dev, 0)?;
    let (start, end) = (Event::new(&dev)?, Event::new(&dev)?);
    let mut out = PinnedHostBuffer::<u32>::new(&rt, N)?;

    start.record(&producer)?;
    for round in 0..ROUNDS {
        let data: Vec<u32> = (0..N as u32).map(|i| i ^ round).collect();
        let src = PinnedHostBuffer::from_slice(&rt, &data)?;
        // Produce: a pool block, filled asynchronously on the producer's stream.
        let mut block = pool.alloc_async::<u32>(&producer, N)?;
        producer.copy_from_pinned(&mut block, &src)?;
        // Consume: the consumer's stream waits for the producer's work on the block.
        consumer.acquire(&block)?;
        consumer.copy_to_pinned(&mut out, &block)?;
        // The free goes on the producer's stream, after the consumer's copy.
        drop(block);
        let ok = out.to_vec()? == data;
        println!("round {round}: consumer read {N} values: {}", if ok { "ok" } else { "WRONG" });
    }
    end.record(&producer)?;
    end.synchronize()?;
    println!("{ROUNDS} rounds in {:.3} ms of device time", start.elapsed_ms(&end)?);
    Ok(())
}
