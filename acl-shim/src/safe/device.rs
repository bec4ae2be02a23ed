//! The runtime guard and devices.

use std::fmt;
use std::sync::Arc;

use super::Result;
use crate::error::AclError;
use crate::runtime::{self as rt_mod, Runtime as Rt};

/// The initialised runtime, shared by every object of the safe API; finalises on last drop.
pub(crate) struct Shared {
    pub(crate) rt: Arc<Rt>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Finalise only the runtime this guard initialised (not a later `aclInit`'s).
        if let Ok(cur) = rt_mod::runtime("aclFinalize") {
            if Arc::ptr_eq(&cur, &self.rt) {
                drop(cur);
                let _ = crate::api::finalize();
            }
        }
    }
}

/// The runtime of this process (`aclInit`), as a guard.
///
/// There is one runtime per process. It is finalised (`aclFinalize`) when this guard and every
/// object made from it ([`Device`], streams, buffers, …) have been dropped.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").field("devices", &self.shared.rt.device_count()).finish()
    }
}

impl Runtime {
    /// Initialises the runtime (`aclInit(NULL)`).
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_REPEAT_INITIALIZE` when the process's runtime is already initialised (by this
    /// API or the C ABI); the backend's error when it cannot start (a bad `ACLRS_SIM_*`).
    pub fn init() -> Result<Self> {
        if !crate::ffi::watch_forks() {
            return Err(AclError::new(
                crate::codes::ACL_ERROR_RT_INTERNAL_ERROR,
                "aclInit: pthread_atfork failed",
            ));
        }
        rt_mod::init(None)?;
        let rt = rt_mod::runtime("aclInit")?;
        Ok(Self { shared: Arc::new(Shared { rt }) })
    }

    /// The number of devices (`aclrtGetDeviceCount`).
    pub fn device_count(&self) -> u32 {
        self.shared.rt.device_count()
    }
}

/// One opened device; holds a reference on the device's context.
pub(crate) struct DeviceInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) id: u32,
}

impl DeviceInner {
    /// The runtime, with this device made current on the calling thread.
    pub(crate) fn bind(&self, api: &str) -> Result<&Rt> {
        let rt = &*self.shared.rt;
        if rt.current_device(api).ok() != Some(self.id) {
            // Make the device current without changing its reference count: this object
            // holds one, so taking one more and giving it back never releases the device.
            let id = i32::try_from(self.id).map_err(|_| AclError::invalid("device id out of range"))?;
            rt.set_device(id)?;
            rt.reset_device(id, false)?;
        }
        Ok(rt)
    }

    pub(crate) fn same(&self, api: &str, other: &DeviceInner) -> Result<()> {
        if self.id != other.id {
            return Err(AclError::new(
                crate::state::stream::ACL_ERROR_RT_STREAM_CONTEXT,
                format!("{api}: the objects belong to devices {} and {}", self.id, other.id),
            ));
        }
        Ok(())
    }
}

impl Drop for DeviceInner {
    fn drop(&mut self) {
        // CAST: device ids are small.
        let _ = self.shared.rt.reset_device(self.id as i32, false);
    }
}

/// Free and total device memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemInfo {
    /// Free bytes.
    pub free: u64,
    /// Total bytes.
    pub total: u64,
}

/// One component's share of a device's memory (`aclrtGetMemUsageInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemUsage {
    /// The component: `APP`, `MEMPOOL`, `MODULE_<id>` or `RUNTIME`.
    pub component: String,
    /// Bytes in use now.
    pub current: u64,
    /// The most bytes in use so far.
    pub peak: u64,
}

/// An opened device (`aclrtSetDevice` / `aclrtResetDevice`).
///
/// Cloning is cheap and shares the reference; the device is reset when the last clone and
/// every object made on it are dropped.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("id", &self.inner.id).finish()
    }
}

impl Device {
    /// Opens device `id` and makes it current on the calling thread.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for an id out of range.
    pub fn open(rt: &Runtime, id: u32) -> Result<Self> {
        let as_i32 = i32::try_from(id).map_err(|_| {
            AclError::new(
                crate::codes::ACL_ERROR_RT_INVALID_DEVICEID,
                format!("device id {id} is out of range"),
            )
        })?;
        rt.shared.rt.set_device(as_i32)?;
        Ok(Self { inner: Arc::new(DeviceInner { shared: Arc::clone(&rt.shared), id }) })
    }

    /// The device id.
    pub fn id(&self) -> u32 {
        self.inner.id
    }

    /// Makes this device current on the calling thread (every call of the safe API does this
    /// itself; this is for mixing in C ABI calls).
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard (through the C ABI).
    pub fn make_current(&self) -> Result<()> {
        self.inner.bind("Device::make_current").map(|_| ())
    }

    /// Free and total HBM (`aclrtGetMemInfo(ACL_HBM_MEM)`).
    ///
    /// # Errors
    ///
    /// When the runtime was finalised under the guard.
    pub fn mem_info(&self) -> Result<MemInfo> {
        const API: &str = "Device::mem_info";
        let (free, total) = self.inner.bind(API)?.mem_info(API, 1)?;
        Ok(MemInfo { free, total })
    }

    /// This process's memory usage on the device, by component, largest first.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` on Ascend 950.
    pub fn usage(&self) -> Result<Vec<MemUsage>> {
        const API: &str = "Device::usage";
        // CAST: device ids are small.
        let v = self.inner.bind(API)?.mem_usage(API, self.inner.id as i32)?;
        Ok(v.into_iter().map(|(component, current, peak)| MemUsage { component, current, peak }).collect())
    }

    /// Waits for every stream of the device (`aclrtSynchronizeDevice`).
    ///
    /// # Errors
    ///
    /// The first failure of a task on any stream.
    pub fn synchronize(&self) -> Result<()> {
        const API: &str = "Device::synchronize";
        self.inner.bind(API)?.synchronize_device(API, crate::state::stream::Timeout::Forever)
    }
}
