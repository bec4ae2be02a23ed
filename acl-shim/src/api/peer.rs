//! Peer access between devices (`aclrtDeviceCanAccessPeer`, `aclrtDeviceEnablePeerAccess`,
//! `aclrtDeviceDisablePeerAccess`) and the rule copies between two devices follow.
//!
//! Access is per process and one-directional, from the current device to a peer, as in CANN.
//! On the software NPU every device can reach every other (the DMA engine copies between device
//! windows), so `CanAccessPeer` says yes for any two distinct devices.
//!
//! # Locking
//!
//! The peers a device may reach are in its VMM state (`VmmState::peers`); that
//! device's `vmm` lock is taken alone, one device at a time (a cross-device copy check takes at
//! most two in turn, never together).

use crate::codes::*;
use crate::error::{AclError, Result};
use crate::runtime::Runtime;

impl Runtime {
    fn peer_id(&self, api: &str, what: &str, id: i32) -> Result<u32> {
        match u32::try_from(id) {
            Ok(d) if d < self.device_count() => Ok(d),
            _ => Err(AclError::new(
                ACL_ERROR_RT_INVALID_DEVICEID,
                format!("{api}: {what} {id} is not a device (0..{})", self.device_count()),
            )),
        }
    }

    /// `aclrtDeviceCanAccessPeer`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_INVALID_DEVICEID` for a bad id, `ACL_ERROR_INVALID_PARAM` when the two are
    /// the same device.
    pub fn can_access_peer(&self, api: &str, device: i32, peer: i32) -> Result<bool> {
        let a = self.peer_id(api, "deviceId", device)?;
        let b = self.peer_id(api, "peerDeviceId", peer)?;
        if a == b {
            return Err(AclError::invalid(format!("{api}: deviceId and peerDeviceId are both {a}")));
        }
        Ok(true)
    }

    /// `aclrtDeviceEnablePeerAccess`: from the current device to `peer`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_FEATURE_UNSUPPORTED` for non-zero flags (as the reference),
    /// `ACL_ERROR_INVALID_PARAM` for the current device itself, `ACL_ERROR_RT_PARAM_INVALID`
    /// when access is already enabled.
    pub fn enable_peer(&self, api: &str, peer: i32, flags: u32) -> Result<()> {
        if flags != 0 {
            return Err(AclError::new(
                ACL_ERROR_FEATURE_UNSUPPORTED,
                format!("{api}: flags must be 0, not {flags}"),
            ));
        }
        let cur = self.current_device(api)?;
        let p = self.peer_id(api, "peerDeviceId", peer)?;
        if p == cur {
            return Err(AclError::invalid(format!("{api}: peerDeviceId {p} is the current device")));
        }
        // Lock order: `vmm` alone.
        if !self.vmm_of(api, cur)?.peers.insert(p) {
            return Err(AclError::rt_invalid(format!(
                "{api}: access from device {cur} to device {p} is already enabled"
            )));
        }
        Ok(())
    }

    /// `aclrtDeviceDisablePeerAccess`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for the current device, `ACL_ERROR_RT_PARAM_INVALID` when
    /// access was not enabled.
    pub fn disable_peer(&self, api: &str, peer: i32) -> Result<()> {
        let cur = self.current_device(api)?;
        let p = self.peer_id(api, "peerDeviceId", peer)?;
        if p == cur {
            return Err(AclError::invalid(format!("{api}: peerDeviceId {p} is the current device")));
        }
        // Lock order: `vmm` alone.
        if !self.vmm_of(api, cur)?.peers.remove(&p) {
            return Err(AclError::rt_invalid(format!(
                "{api}: access from device {cur} to device {p} is not enabled"
            )));
        }
        Ok(())
    }

    /// Whether a copy between devices `a` and `b` may run: the current device must have peer
    /// access to the other one (or, when the current device is neither, one must reach the
    /// other).
    ///
    /// # Errors
    ///
    /// 507000 when a device's VMM state is failed.
    pub(crate) fn peer_allowed(&self, api: &str, cur: u32, a: u32, b: u32) -> Result<bool> {
        // Lock order: one device's `vmm` at a time.
        let reaches = |from: u32, to: u32| self.vmm_of(api, from).map(|x| x.peers.contains(&to));
        if cur == a {
            reaches(a, b)
        } else if cur == b {
            reaches(b, a)
        } else {
            Ok(reaches(a, b)? || reaches(b, a)?)
        }
    }
}
