//! The davinci backend: the published Ascend driver ABI over `ioctl`/`mmap` on
//! `/dev/davinci_manager` and `/dev/davinci*`.
//!
//! This crate owns every syscall of that backend. At this stage it only probes for the driver;
//! the ABI mirrors, the transport trait and the fake kernel arrive with the davinci issue.

/// The device node the driver exposes.
pub const MANAGER_NODE: &str = "/dev/davinci_manager";

/// Checks whether the davinci driver can be used here.
///
/// # Errors
///
/// A message saying why not: no driver node, or the backend is not implemented yet.
pub fn probe() -> Result<(), String> {
    if !std::path::Path::new(MANAGER_NODE).exists() {
        return Err(format!("{MANAGER_NODE} is absent (no Ascend driver on this machine)"));
    }
    Err(format!("{MANAGER_NODE} is present, but the davinci backend is not implemented yet"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_says_why() {
        let why = super::probe().unwrap_err();
        assert!(why.contains("/dev/davinci_manager"), "{why}");
    }
}
