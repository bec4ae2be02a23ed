//! Kernel binaries, kernels and their typed arguments.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::buffer::Alloc;
use super::device::DeviceInner;
use super::pod::Pod;
use super::{Device, DeviceSlice, DeviceSliceMut, Result, Stream};
use crate::error::AclError;
use crate::runtime::Runtime as Rt;

/// `ACL_ERROR_RT_KERNEL_LOOKUP`: the binary has no such kernel.
const ACL_ERROR_RT_KERNEL_LOOKUP: i32 = 507_027;

fn sim<'a>(rt: &'a Rt, api: &str) -> Result<&'a dyn hal::Loader> {
    rt.backend().loader(api)
}

/// A loaded kernel binary (`aclrtBinaryLoadFromFile`); unloaded when dropped.
///
/// On the software NPU a kernel binary is a host shared object whose kernels have the sim
/// kernel ABI (`acl/acl_sim.h`): `void NAME(uint32_t block_idx, uint32_t block_dim, void
/// *args)`. Loading a binary is where trust is granted: its kernels run with the argument
/// bytes [`KernelArgs`] builds and may touch any device memory they are given.
pub struct Module {
    device: Arc<DeviceInner>,
    bin: u64,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module").field("binary", &self.bin).finish()
    }
}

impl Module {
    /// Loads the kernel binary at `path` for `device`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_PARAM_INVALID` when the file cannot be loaded as a kernel binary.
    pub fn load(device: &Device, path: impl AsRef<Path>) -> Result<Self> {
        const API: &str = "Module::load";
        let path = path.as_ref();
        let rt = device.inner.bind(API)?;
        let bin = sim(rt, API)?.load_binary(path.as_os_str().as_encoded_bytes()).map_err(|e| {
            AclError::rt_invalid(format!("{API}: cannot load {} as a kernel binary: {e}", path.display()))
        })?;
        Ok(Self { device: Arc::clone(&device.inner), bin })
    }

    /// The kernel called `name` (`aclrtBinaryGetFunction`); it cannot outlive the module.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_KERNEL_LOOKUP` when the binary has no such kernel.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        const API: &str = "Module::kernel";
        let rt = self.device.bind(API)?;
        let func = sim(rt, API)?.binary_function(self.bin, name).map_err(|_| {
            AclError::new(
                ACL_ERROR_RT_KERNEL_LOOKUP,
                format!("{API}: the binary has no kernel named {name:?}"),
            )
        })?;
        Ok(Kernel { module: self, func, name: name.to_owned() })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Ok(sim) = sim(&self.device.shared.rt, "Module::drop") {
            let _ = sim.unload_binary(self.bin);
        }
    }
}

/// One kernel of a [`Module`].
pub struct Kernel<'m> {
    module: &'m Module,
    func: u64,
    name: String,
}

impl fmt::Debug for Kernel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).finish()
    }
}

impl Kernel<'_> {
    /// Launches the kernel on `stream` with `blocks` blocks (`aclrtLaunchKernel`).
    ///
    /// The argument bytes are copied at launch. Every buffer in `args` must be usable on
    /// `stream` (its owner, or given to it with [`Stream::acquire`]); the buffers stay
    /// alive until their frees, which are ordered after this launch.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for 0 blocks or a buffer this stream may not use;
    /// `ACL_ERROR_RT_STREAM_CONTEXT` for a stream of another device. A fault inside the kernel
    /// surfaces at the stream's next synchronisation.
    pub fn launch(&self, stream: &Stream, blocks: u32, args: &KernelArgs<'_>) -> Result<()> {
        const API: &str = "Kernel::launch";
        if blocks == 0 {
            return Err(AclError::invalid(format!("{API}: blocks is 0")));
        }
        self.module.device.same(API, &stream.inner.device)?;
        for a in &args.uses {
            a.check_use(API, &stream.inner)?;
        }
        let (rt, s) = stream.inner.obj(API)?;
        rt.launch_kernel(API, &s, self.func, blocks, args.bytes(), 0).map(|_| ())
    }
}

/// The argument block of a launch, laid out as a C struct of the pushed fields in order
/// (each field at its natural alignment, the whole padded to the largest).
///
/// ```
/// # use ascendcl::safe::{DeviceBuffer, KernelArgs};
/// // C: typedef struct { float *x; float *y; float *z; uint32_t n; } AddArgs;
/// fn add_args<'a>(
///     x: &'a DeviceBuffer<f32>,
///     y: &'a DeviceBuffer<f32>,
///     z: &'a mut DeviceBuffer<f32>,
/// ) -> KernelArgs<'a> {
///     let n = u32::try_from(x.len()).unwrap_or(u32::MAX);
///     KernelArgs::new().ptr(x).ptr(y).ptr_mut(z).value(n)
/// }
/// ```
///
/// A typed argument struct is a function (or `From` impl) that builds one of these.
#[derive(Default)]
pub struct KernelArgs<'a> {
    bytes: Vec<u8>,
    align: usize,
    uses: Vec<&'a Alloc>,
}

impl fmt::Debug for KernelArgs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelArgs")
            .field("bytes", &self.bytes.len())
            .field("buffers", &self.uses.len())
            .finish()
    }
}

impl<'a> KernelArgs<'a> {
    /// An empty argument block.
    pub fn new() -> Self {
        Self { bytes: Vec::new(), align: 1, uses: Vec::new() }
    }

    fn pad_to(&mut self, align: usize) {
        self.align = self.align.max(align);
        while self.bytes.len() % align != 0 {
            self.bytes.push(0);
        }
    }

    /// Appends a device pointer to the first element of `slice` (read by the kernel).
    pub fn ptr<T: Pod>(mut self, slice: impl Into<DeviceSlice<'a, T>>) -> Self {
        let s = slice.into();
        self.pad_to(8);
        self.bytes.extend_from_slice(&s.addr().to_ne_bytes());
        self.uses.push(s.alloc);
        self
    }

    /// Appends a device pointer to the first element of `slice` (written by the kernel).
    pub fn ptr_mut<T: Pod>(mut self, slice: impl Into<DeviceSliceMut<'a, T>>) -> Self {
        let s = slice.into();
        let addr = s.as_slice().addr();
        self.pad_to(8);
        self.bytes.extend_from_slice(&addr.to_ne_bytes());
        self.uses.push(s.alloc);
        self
    }

    /// Appends a plain value.
    pub fn value<T: Pod>(mut self, v: T) -> Self {
        self.pad_to(T::SIZE);
        v.put_bytes(&mut self.bytes);
        self
    }

    /// The argument bytes, padded to the largest field's alignment.
    pub fn bytes(&self) -> Vec<u8> {
        let mut b = self.bytes.clone();
        while b.len() % self.align.max(1) != 0 {
            b.push(0);
        }
        b
    }
}
