//! The slicing of a queued copy into tasks by the limits of [`hal::copy`] (`submit`), over the
//! runtime's stream calls; what a 2D or batch copy spans is planned below, in [`crate::copy`].

use hal::{DeviceAddr, TaskDesc};

use crate::error::Result;
use crate::runtime::Runtime;
use crate::state::stream::StreamObj;

/// Queues a DMA copy of `count` bytes on `s` as tasks of at most [`hal::copy::slice_bytes`]
/// each (the device-to-device limit when `device_to_device`).
///
/// # Errors
///
/// The first task's submission error; the tasks queued before it stay queued.
pub(crate) fn submit(
    rt: &Runtime,
    api: &str,
    s: &StreamObj,
    dst: u64,
    src: u64,
    count: u64,
    device_to_device: bool,
) -> Result<()> {
    for (off, len_bytes) in hal::copy::slices(count, hal::copy::slice_bytes(device_to_device)) {
        rt.submit_task(
            api,
            s,
            TaskDesc::Copy { dst: DeviceAddr(dst + off), src: DeviceAddr(src + off), len_bytes },
        )?;
    }
    Ok(())
}
