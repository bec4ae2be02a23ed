//! The runtime's context calls (`aclrtCreateContext`, `aclrtDestroyContext`,
//! `aclrtSetCurrentContext`, `aclrtGetCurrentContext`): a context counts a reference on its
//! device ([`crate::api::device`]) and lives in its device's stream tables
//! ([`crate::state::stream`]). It sits above both, so that the device and stream calls need not
//! call each other back.

use crate::error::{AclError, Result};
use crate::handles::Kind;
use crate::runtime::Runtime;
use crate::state::stream::{bad_handle, CURRENT_CONTEXT};

impl Runtime {
    /// `aclrtCreateContext`: a context on `device_id`, made current.
    ///
    /// # Errors
    ///
    /// As `aclrtSetDevice`.
    pub fn create_context(&self, api: &str, device_id: i32) -> Result<u64> {
        self.set_device(device_id)?;
        // CAST: checked by set_device.
        let d = device_id as u32;
        let h = match self.streams_of(d).create_context(api) {
            Ok(h) => h,
            Err(e) => {
                let _ = self.reset_device(device_id, false);
                return Err(e);
            }
        };
        let generation = self.generation;
        CURRENT_CONTEXT.with(|c| c.set(Some((generation, h))));
        Ok(h)
    }

    /// The device of context `ctx` (explicit or a device's default context), and whether it
    /// is a default context.
    fn context_device(&self, api: &str, ctx: u64) -> Result<(u32, bool)> {
        if ctx == 0 {
            return Err(AclError::invalid(format!("{api}: context is NULL")));
        }
        let ds = self.owner_of(api, ctx, Kind::Context, "context")?;
        let d = ds.device();
        match ds.context(ctx) {
            Some(false) => Ok((d, false)),
            // A default context exists while its device is set.
            Some(true) if self.device(d).is_open() => Ok((d, true)),
            _ => Err(bad_handle(api, "context", ctx)),
        }
    }

    /// `aclrtDestroyContext`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_INVALID_PARAM` for NULL or a device's default context;
    /// `ACL_ERROR_RT_INVALID_HANDLE` for a dead context.
    pub fn destroy_context(&self, api: &str, ctx: u64) -> Result<()> {
        let (d, is_default) = self.context_device(api, ctx)?;
        if is_default || !self.streams_of(d).remove_context(ctx) {
            return Err(AclError::invalid(format!(
                "{api}: context {ctx:#x} is a default context; aclrtResetDevice releases it"
            )));
        }
        CURRENT_CONTEXT.with(|c| {
            if c.get().map(|(_, h)| h) == Some(ctx) {
                c.set(None);
            }
        });
        // CAST: device ids are small.
        self.reset_device(d as i32, false)
    }

    /// `aclrtSetCurrentContext`: makes the context's device current on this thread.
    ///
    /// # Errors
    ///
    /// Dead or NULL contexts.
    pub fn set_current_context(&self, api: &str, ctx: u64) -> Result<()> {
        let (d, _) = self.context_device(api, ctx)?;
        // Making a device current without changing its reference count: take one more
        // reference (this makes it current) and give it back (the context holds another, so
        // this never releases the device).
        // CAST: device ids are small.
        self.set_device(d as i32)?;
        self.reset_device(d as i32, false)?;
        let generation = self.generation;
        let _ = self.current_device(api)?;
        CURRENT_CONTEXT.with(|c| c.set(Some((generation, ctx))));
        Ok(())
    }

    /// `aclrtGetCurrentContext`.
    ///
    /// # Errors
    ///
    /// `ACL_ERROR_RT_CONTEXT_NULL` without a current device.
    pub fn current_context(&self, api: &str) -> Result<u64> {
        let d = self.current_device(api)?;
        let generation = self.generation;
        let ds = self.streams_of(d);
        if let Some((g, h)) = CURRENT_CONTEXT.with(std::cell::Cell::get) {
            if g == generation && ds.context(h) == Some(false) {
                return Ok(h);
            }
        }
        Ok(ds.default_context())
    }
}
