//! The seed's stream-ordered program in safe Rust: allocate on a stream from a pool, copy in,
//! launch `add_custom`, copy out, and free asynchronously (the buffers' drops).
//!
//! The kernel library (a host shared object with the sim kernel ABI, such as
//! `tests/c/kernels/sim_kernels.c` built with `cc -shared -fPIC -I acl-shim/include`) is
//! named by `ACLRS_KERNEL_LIB`; without it the example does everything but the launch.
//! That library refers to `aclrsKernelFail`, which a Rust program exports only when linked
//! with `-rdynamic`:
//!
//! ```sh
//! cc -shared -fPIC -I acl-shim/include tests/c/kernels/sim_kernels.c -o /tmp/libk.so
//! ACLRS_KERNEL_LIB=/tmp/libk.so RUSTFLAGS="-C link-arg=-rdynamic" \
//!     cargo run -p acl-shim --example add_custom
//! ```

use ascendcl::safe::{Device, KernelArgs, MemPool, Module, Result, Runtime, Stream};

const N: usize = 4096;

fn main() -> Result<()> {
    let rt = Runtime::init()?;
    let dev = Device::open(&rt, 0)?;
    let stream = Stream::new(&dev)?;
    let pool = MemPool::new(&dev, 0)?;

    let hx: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let hy: Vec<f32> = (0..N).map(|i| 2.0 * i as f32).collect();

    // aclrtMemPoolMallocAsync x3, in the stream's order.
    let mut x = pool.alloc_async::<f32>(&stream, N)?;
    let mut y = pool.alloc_async::<f32>(&stream, N)?;
    let mut z = pool.alloc_async::<f32>(&stream, N)?;
    stream.copy_from_host(&mut x, &hx)?;
    stream.copy_from_host(&mut y, &hy)?;

    match std::env::var_os("ACLRS_KERNEL_LIB") {
        Some(path) => {
            let module = Module::load(&dev, path)?;
            let add = module.kernel("add_custom")?;
            // C: typedef struct { float *x; float *y; float *z; uint32_t n; } AddArgs;
            let n = u32::try_from(N).unwrap_or(u32::MAX);
            add.launch(&stream, 8, &KernelArgs::new().ptr(&x).ptr(&y).ptr_mut(&mut z).value(n))?;
            let mut hz = vec![0f32; N];
            stream.copy_to_host(&mut hz, &z)?;
            let bad = hz.iter().zip(hx.iter().zip(&hy)).filter(|(z, (x, y))| **z != **x + **y).count();
            println!("add_custom: {N} elements, {bad} wrong");
            if bad != 0 {
                return Err(ascendcl::safe::Error::new(1, "add_custom produced wrong sums"));
            }
        }
        None => {
            stream.copy(&mut z, &x)?;
            let mut hz = vec![0f32; N];
            stream.copy_to_host(&mut hz, &z)?;
            println!(
                "ACLRS_KERNEL_LIB is not set: copied x to z instead of launching add_custom ({})",
                if hz == hx { "ok" } else { "WRONG" }
            );
        }
    }

    // aclrtMemPoolFreeAsync x3: dropping the buffers frees them in the stream's order.
    drop((x, y, z));
    stream.synchronize()?;
    println!("pool in use after the stream-ordered frees: {} bytes", pool.used_bytes()?);
    Ok(())
}
