//! The runtime's device-fact calls: resource limits (`aclrt*ResLimit*`, §2 of the runtime
//! surface sheet), device information and capabilities (`aclrtGetDeviceInfo`,
//! `aclrtGetDeviceCapability`, `aclGetDeviceCapability`, §4) and error details
//! (`aclrtGetErrorVerbose`, `aclrtRepairError`, §7).
//!
//! Every number comes from the SoC profile ([`hal::SocProfile`], `hal::soc_facts`), the
//! device's limits ([`crate::state::res_limit`]) or its failure record
//! ([`crate::state::task_fault`]). No lock of this module; the stream-limit map is a leaf lock.

use hal::DeviceId;

use crate::codes::ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;
use crate::state::res_limit::{self, check_type, check_value};
use crate::state::task_fault::{self, TaskFault};

/// `ACL_ERROR_RT_DEV_SETUP_ERROR`: the device is not open in this process.
pub(crate) const ACL_ERROR_RT_DEV_SETUP_ERROR: i32 = 507_033;

/// `aclrtDevAttr` values (CANN 1.17.0).
mod attr {
    pub(super) const AICPU_CORE_NUM: i32 = 1;
    pub(super) const AICORE_CORE_NUM: i32 = 101;
    pub(super) const CUBE_CORE_NUM: i32 = 102;
    pub(super) const VECTOR_CORE_NUM: i32 = 201;
    pub(super) const WARP_SIZE: i32 = 202;
    pub(super) const MAX_THREAD_PER_VECTOR_CORE: i32 = 203;
    pub(super) const UBUF_PER_VECTOR_CORE: i32 = 204;
    pub(super) const MAX_GRID_DIM_X: i32 = 205;
    pub(super) const MAX_GRID_DIM_Z: i32 = 207;
    pub(super) const MAX_BLOCK_PER_GRID: i32 = 208;
    pub(super) const MAX_THREADS_PER_BLOCK: i32 = 209;
    pub(super) const MAX_BLOCK_DIM_X: i32 = 210;
    pub(super) const MAX_BLOCK_DIM_Z: i32 = 212;
    pub(super) const TOTAL_GLOBAL_MEM_SIZE: i32 = 301;
    pub(super) const L2_CACHE_SIZE: i32 = 302;
    pub(super) const SMP_ID: i32 = 401;
    pub(super) const PHY_CHIP_ID: i32 = 402;
    pub(super) const SUPER_POD_DEVICE_ID: i32 = 403;
    pub(super) const SUPER_POD_SERVER_ID: i32 = 404;
    pub(super) const SUPER_POD_ID: i32 = 405;
    pub(super) const CUST_OP_PRIVILEGE: i32 = 406;
    pub(super) const MAINBOARD_ID: i32 = 407;
    pub(super) const HD_CONNECT_TYPE: i32 = 408;
    pub(super) const DEVICE_FORM_FACTOR: i32 = 409;
    pub(super) const IS_VIRTUAL: i32 = 501;
    pub(super) const NPU_ARCH: i32 = 601;
}

/// `aclrtDevFeatureType` values below `RT_DEV_FEATURE_MAX` (the types CANN's header names are 1
/// and 21; the others of the range are the runtime's internal ones).
const FEATURE_TYPES: i32 = 22;

/// `ACL_DEVICE_FORM_FACTOR_PCIE_CARD`: the software NPU is a card in the host.
const FORM_FACTOR_PCIE_CARD: i64 = 3;
/// `ACL_HOST_DEVICE_CONNECT_TYPE_PCIE`.
const CONNECT_PCIE: i64 = 0;

impl Runtime {
    /// The hardware count of resource type `t` (0 cube, 1 vector) of the SoC profile.
    fn hw_cores(&self, t: usize) -> u32 {
        if t == 0 {
            self.soc().cube_cores()
        } else {
            self.soc().vector_cores()
        }
    }

    /// Device `device_id`, which must be open in this process (507033 otherwise).
    fn open_device(&self, api: &str, device_id: i32) -> Result<u32> {
        let d = self.check_id(api, device_id)?;
        if !self.device(d).is_open() {
            return Err(AclError::new(
                ACL_ERROR_RT_DEV_SETUP_ERROR,
                format!("{api}: device {device_id} is not open in this process (call aclrtSetDevice first)"),
            ));
        }
        Ok(d)
    }

    /// `aclrtGetDeviceResLimit`.
    ///
    /// # Errors
    ///
    /// 107001 for a bad id, 507033 for a device not open, 107000 for a bad type.
    pub fn device_res_limit(&self, api: &str, device_id: i32, ty: i32) -> Result<u32> {
        let d = self.open_device(api, device_id)?;
        let t = check_type(api, ty)?;
        Ok(self.device(d).res.process(t, self.hw_cores(t)))
    }

    /// `aclrtSetDeviceResLimit`.
    ///
    /// # Errors
    ///
    /// As [`Self::device_res_limit`]; 107000 for a value above the hardware count.
    pub fn set_device_res_limit(&self, api: &str, device_id: i32, ty: i32, value: u32) -> Result<()> {
        let d = self.open_device(api, device_id)?;
        let t = check_type(api, ty)?;
        check_value(api, t, value, self.hw_cores(t))?;
        self.device(d).res.set_process(t, value);
        Ok(())
    }

    /// `aclrtResetDeviceResLimit`.
    ///
    /// # Errors
    ///
    /// 107001 for a bad id, 507033 for a device not open.
    pub fn reset_device_res_limit(&self, api: &str, device_id: i32) -> Result<()> {
        let d = self.open_device(api, device_id)?;
        self.device(d).res.reset_process();
        Ok(())
    }

    /// `aclrtGetStreamResLimit`: the stream's value, else the process value, else the hardware
    /// count.
    ///
    /// # Errors
    ///
    /// 107000 for a bad type; the stream lookup's errors.
    pub fn stream_res_limit(&self, api: &str, stream: u64, ty: i32) -> Result<u32> {
        let t = check_type(api, ty)?;
        let (h, s) = self.stream(api, stream)?;
        let res = &self.device(s.device).res;
        Ok(res.stream(h, t).unwrap_or_else(|| res.process(t, self.hw_cores(t))))
    }

    /// `aclrtSetStreamResLimit` (bounded by the hardware count only).
    ///
    /// # Errors
    ///
    /// 107000 for a bad type or value; the stream lookup's errors.
    pub fn set_stream_res_limit(&self, api: &str, stream: u64, ty: i32, value: u32) -> Result<()> {
        let t = check_type(api, ty)?;
        check_value(api, t, value, self.hw_cores(t))?;
        let (h, s) = self.stream(api, stream)?;
        self.device(s.device).res.set_stream(h, t, value);
        Ok(())
    }

    /// `aclrtResetStreamResLimit`.
    ///
    /// # Errors
    ///
    /// The stream lookup's errors.
    pub fn reset_stream_res_limit(&self, api: &str, stream: u64) -> Result<()> {
        let (h, s) = self.stream(api, stream)?;
        self.device(s.device).res.reset_stream(h);
        Ok(())
    }

    /// `aclrtUseStreamResInCurrentThread` (`bind`) / `aclrtUnuseStreamResInCurrentThread`.
    ///
    /// # Errors
    ///
    /// The stream lookup's errors.
    pub fn use_stream_res(&self, api: &str, stream: u64, bind: bool) -> Result<()> {
        let (h, s) = self.stream(api, stream)?;
        if bind {
            res_limit::bind(self.generation, s.device, h);
        } else {
            res_limit::unbind(self.generation, h);
        }
        Ok(())
    }

    /// `aclrtGetResInCurrentThread`: the bound stream's value when it has one, else the process
    /// value of the thread's device.
    ///
    /// # Errors
    ///
    /// 107000 for a bad type; 107002 with no bound value and no current device.
    pub fn res_in_current_thread(&self, api: &str, ty: i32) -> Result<u32> {
        let t = check_type(api, ty)?;
        if let Some(v) = res_limit::bound(self.generation).and_then(|(d, h)| self.device(d).res.stream(h, t))
        {
            return Ok(v);
        }
        let d = self.current_device(api)?;
        Ok(self.device(d).res.process(t, self.hw_cores(t)))
    }

    /// `aclrtGetDeviceInfo`: attribute `attr` of device `device_id` (no device need be set).
    ///
    /// # Errors
    ///
    /// 107000 for a device id out of range or an unknown attribute; 207000 for an attribute
    /// the profile does not have.
    pub fn device_attr(&self, api: &str, device_id: u32, attr: i32) -> Result<i64> {
        if device_id >= self.device_count() {
            return Err(AclError::rt_invalid(format!(
                "{api}: deviceId {device_id} is out of range (this machine has {} devices)",
                self.device_count()
            )));
        }
        let soc = self.soc();
        let simt = soc.simt();
        let simt_or_0 = |f: &dyn Fn(&hal::soc_facts::SimtLimits) -> i64| simt.as_ref().map_or(0, f);
        let only_950 = |v: i64| {
            if simt.is_some() {
                Ok(v)
            } else {
                Err(AclError::new(
                    ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    format!(
                        "{api}: attribute {attr} is reported on Ascend 950 only (this device is {})",
                        soc.soc_name()
                    ),
                ))
            }
        };
        Ok(match attr {
            attr::AICPU_CORE_NUM => i64::from(soc.aicpu_cores()),
            attr::AICORE_CORE_NUM | attr::CUBE_CORE_NUM => i64::from(soc.cube_cores()),
            attr::VECTOR_CORE_NUM => i64::from(soc.vector_cores()),
            attr::WARP_SIZE => simt_or_0(&|s| i64::from(s.warp_size)),
            attr::MAX_THREAD_PER_VECTOR_CORE => simt_or_0(&|s| i64::from(s.max_threads_per_vector_core)),
            // CAST: at most 256 KiB.
            attr::UBUF_PER_VECTOR_CORE => simt_or_0(&|s| s.ubuf_per_vector_core as i64),
            a @ attr::MAX_GRID_DIM_X..=attr::MAX_GRID_DIM_Z => {
                // CAST: 0..=2 after the range match.
                simt_or_0(&|s| i64::from(s.max_grid_dim[(a - attr::MAX_GRID_DIM_X) as usize]))
            }
            // CAST: below i32::MAX.
            attr::MAX_BLOCK_PER_GRID => simt_or_0(&|s| s.max_blocks_per_grid as i64),
            attr::MAX_THREADS_PER_BLOCK => simt_or_0(&|s| i64::from(s.max_threads_per_block)),
            a @ attr::MAX_BLOCK_DIM_X..=attr::MAX_BLOCK_DIM_Z => {
                // CAST: 0..=2 after the range match.
                simt_or_0(&|s| i64::from(s.max_block_dim[(a - attr::MAX_BLOCK_DIM_X) as usize]))
            }
            attr::TOTAL_GLOBAL_MEM_SIZE => {
                let info = self
                    .backend()
                    .driver()
                    .device_info(DeviceId(device_id))
                    .map_err(|e| AclError::from_hal(e, api))?;
                i64::try_from(info.hbm_bytes).unwrap_or(i64::MAX)
            }
            // CAST: at most 192 MiB.
            attr::L2_CACHE_SIZE => soc.l2_bytes() as i64,
            attr::PHY_CHIP_ID => i64::from(device_id),
            attr::SMP_ID
            | attr::SUPER_POD_DEVICE_ID
            | attr::SUPER_POD_SERVER_ID
            | attr::SUPER_POD_ID
            | attr::MAINBOARD_ID
            | attr::IS_VIRTUAL => 0,
            attr::CUST_OP_PRIVILEGE => {
                if simt.is_some() {
                    return Err(AclError::new(
                        ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        format!("{api}: ACL_DEV_ATTR_CUST_OP_PRIVILEGE is not reported on Ascend 950"),
                    ));
                }
                0
            }
            attr::HD_CONNECT_TYPE => only_950(CONNECT_PCIE)?,
            attr::DEVICE_FORM_FACTOR => only_950(FORM_FACTOR_PCIE_CARD)?,
            attr::NPU_ARCH => i64::from(soc.npu_arch()),
            _ => return Err(AclError::rt_invalid(format!("{api}: attr {attr} is not an aclrtDevAttr"))),
        })
    }

    /// `aclrtGetDeviceCapability`: 1 when feature `feature` is supported (none of the two named
    /// ones is on the software NPU: it updates no graph tasks and has no queue events).
    ///
    /// # Errors
    ///
    /// 107000 for a device id out of range or a feature type out of range.
    pub fn device_feature(&self, api: &str, device_id: i32, feature: i32) -> Result<i32> {
        if u32::try_from(device_id).map_or(true, |d| d >= self.device_count()) {
            return Err(AclError::rt_invalid(format!(
                "{api}: deviceId {device_id} is out of range (this machine has {} devices)",
                self.device_count()
            )));
        }
        if !(0..FEATURE_TYPES).contains(&feature) {
            return Err(AclError::rt_invalid(format!(
                "{api}: devFeatureType {feature} is out of range (0..{FEATURE_TYPES})"
            )));
        }
        Ok(0)
    }

    /// `aclGetDeviceCapability`: the platform keys tiling reads (`ai_core_cnt`,
    /// `vector_core_cnt`, which follow the process's resource limits of an open device, and
    /// `l2_size`).
    ///
    /// # Errors
    ///
    /// 100000 for a device id out of range or an unknown `aclDeviceInfo`.
    pub fn acl_device_capability(&self, api: &str, device_id: u32, info: i32) -> Result<i64> {
        if device_id >= self.device_count() {
            return Err(AclError::invalid(format!(
                "{api}: deviceId {device_id} is out of range (this machine has {} devices)",
                self.device_count()
            )));
        }
        let dev = self.device(device_id);
        let cores = |t: usize| i64::from(dev.res.process(t, self.hw_cores(t)));
        match info {
            0 => Ok(cores(0)),
            1 => Ok(cores(1)),
            // CAST: at most 192 MiB.
            2 => Ok(self.soc().l2_bytes() as i64),
            _ => Err(AclError::invalid(format!(
                "{api}: deviceInfo {info} is not an aclDeviceInfo (ACL_DEVICE_INFO_AI_CORE_NUM 0, _VECTOR_CORE_NUM 1, _L2_SIZE 2)"
            ))),
        }
    }

    /// `aclrtGetErrorVerbose`: the newest failed task of device `device_id`, if the device is
    /// open and one failed since its last repair or reset.
    ///
    /// # Errors
    ///
    /// 107001 for a bad id.
    pub(crate) fn error_verbose(
        &self,
        api: &str,
        device_id: i32,
    ) -> Result<Option<(TaskFault, Option<String>)>> {
        let d = self.check_id(api, device_id)?;
        if !self.device(d).is_open() {
            return Ok(None);
        }
        Ok(task_fault::fault(d).map(|f| {
            let name = f
                .func
                .and_then(|id| crate::state::kernels::tables().functions.get(&id).map(|m| m.name.clone()));
            (f, name)
        }))
    }

    /// `aclrtRepairError` with `error_type`: `ACL_RT_NO_ERROR` (0) clears the record,
    /// `ACL_RT_ERROR_MEMORY` (1) has nothing to repair on the software NPU (no UCE) and clears
    /// it too; any other type cannot be repaired.
    ///
    /// # Errors
    ///
    /// 107001 for a bad id, 507033 for a device not open, 107000 for another type.
    pub fn repair_error(&self, api: &str, device_id: i32, error_type: i32) -> Result<()> {
        let d = self.open_device(api, device_id)?;
        match error_type {
            0 | 1 => {
                task_fault::clear(d);
                Ok(())
            }
            t => Err(AclError::rt_invalid(format!(
                "{api}: errorInfo->errorType {t} cannot be repaired (only ACL_RT_NO_ERROR 0 and ACL_RT_ERROR_MEMORY 1)"
            ))),
        }
    }
}
