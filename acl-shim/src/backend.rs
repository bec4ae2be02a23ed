//! The backend the runtime drives and its selection at `aclInit` (`ACLRS_BACKEND`).

#[cfg(feature = "davinci-fake")]
use hal::{DeviceId, SocProfile};
#[cfg(feature = "davinci-fake")]
use hal_davinci::fake::FakeKernel;
#[cfg(feature = "davinci-fake")]
use hal_davinci::QueueMode;
use hal_davinci::{Davinci, LibcTransport};
use hal_sim::Sim;

use crate::codes::*;
use crate::error::{AclError, Result};

/// The backend the runtime drives, chosen at `aclInit` from `ACLRS_BACKEND`.
#[derive(Debug)]
#[cfg_attr(
    not(feature = "davinci-fake"),
    expect(clippy::large_enum_variant, reason = "one backend per process, made once at aclInit")
)]
pub enum Backend {
    /// The software NPU (`sim`, the default).
    Sim(Sim),
    /// The published driver ABI spoken to the fake kernel, which serves it from a software
    /// NPU in this process (`davinci-fake`; test code, only in a library built with the
    /// `davinci-fake` feature).
    #[cfg(feature = "davinci-fake")]
    DavinciFake(Davinci<FakeKernel>),
    /// The published driver ABI on `/dev/davinci_manager` (`davinci`).
    Davinci(Davinci<LibcTransport>),
}

impl Backend {
    /// The backend as the driver traits.
    pub fn driver(&self) -> &dyn hal::Driver {
        match self {
            Self::Sim(s) => s,
            #[cfg(feature = "davinci-fake")]
            Self::DavinciFake(d) => d,
            Self::Davinci(d) => d,
        }
    }

    /// The backend's sharing calls.
    pub fn sharing(&self) -> &dyn hal::Sharing {
        match self {
            Self::Sim(s) => s,
            #[cfg(feature = "davinci-fake")]
            Self::DavinciFake(d) => d,
            Self::Davinci(d) => d,
        }
    }

    /// The software NPU that runs this backend's device work, for its diagnostics only (pool
    /// counters): itself, or the one behind the fake kernel. Device work goes through the
    /// driver's capabilities ([`Self::loader`]), never through this.
    pub(crate) fn device_sim(&self) -> Option<&Sim> {
        match self {
            Self::Sim(s) => Some(s),
            #[cfg(feature = "davinci-fake")]
            Self::DavinciFake(d) => Some(d.transport().sim()),
            Self::Davinci(_) => None,
        }
    }

    /// The device's loader capability (kernel binaries, host calls, staged kernel arguments and
    /// batch copies), or `ACL_ERROR_RT_FEATURE_NOT_SUPPORT` naming `api` on a backend without
    /// one (real hardware, whose loader formats are not public).
    pub(crate) fn loader(&self, api: &str) -> Result<&dyn hal::Loader> {
        self.driver().loader().ok_or_else(|| crate::state::stream::no_loader(api))
    }

    pub(crate) fn from_env() -> Result<Self> {
        Self::from_name(std::env::var("ACLRS_BACKEND").ok().as_deref())
    }

    /// The backend `ACLRS_BACKEND` names (`name`).
    fn from_name(name: Option<&str>) -> Result<Self> {
        let bad = |e: String| AclError::invalid(format!("aclInit: {e}"));
        match name {
            None | Some("") | Some("sim") => Ok(Self::Sim(Sim::from_env().map_err(|e| bad(e.to_string()))?)),
            #[cfg(not(feature = "davinci-fake"))]
            Some("davinci-fake") => Err(AclError::new(
                ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "aclInit: ACLRS_BACKEND=davinci-fake: this libascendcl was built without the davinci-fake \
                 feature (the fake kernel is test code, left out of the shipped library); use sim or davinci, \
                 or build acl-shim with --features davinci-fake",
            )),
            #[cfg(feature = "davinci-fake")]
            Some("davinci-fake") => {
                let sim = Sim::from_env().map_err(|e| bad(e.to_string()))?;
                let devices = hal::DeviceControl::device_count(&sim);
                let soc = hal::DeviceControl::device_info(&sim, DeviceId(0))
                    .map(|i| i.soc)
                    .unwrap_or(SocProfile::A2);
                let mode = match std::env::var("ACLRS_DAVINCI_QUEUES").ok().as_deref() {
                    None | Some("") | Some("kernel") => QueueMode::KernelSend,
                    Some("ring") => QueueMode::MappedRing,
                    Some(other) => {
                        return Err(bad(format!("ACLRS_DAVINCI_QUEUES={other:?}: expected kernel or ring")))
                    }
                };
                Davinci::with_queue_mode(FakeKernel::new(sim), devices, mode)
                    .map(|d| Self::DavinciFake(d.with_soc(soc)))
                    .map_err(|e| {
                        AclError::new(
                            ACL_ERROR_RT_NO_DEVICE,
                            format!("aclInit: ACLRS_BACKEND=davinci-fake: {e}"),
                        )
                    })
            }
            Some("davinci") => {
                let no_device = |why: String| {
                    AclError::new(ACL_ERROR_RT_NO_DEVICE, format!("aclInit: ACLRS_BACKEND=davinci: {why}"))
                };
                hal_davinci::probe().map_err(no_device)?;
                Davinci::new(LibcTransport, hal_davinci::count_devices())
                    .map(Self::Davinci)
                    .map_err(|e| no_device(e.to_string()))
            }
            Some(other) => Err(AclError::invalid(format!(
                "aclInit: ACLRS_BACKEND={other:?}: expected sim, davinci-fake or davinci"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "davinci-fake"))]
    #[test]
    fn davinci_fake_is_refused_by_a_library_built_without_the_fake_kernel() {
        let e = Backend::from_name(Some("davinci-fake")).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
        assert!(e.message().contains("built without the davinci-fake feature"), "{}", e.message());
    }

    #[test]
    fn an_unknown_backend_is_a_bad_setting() {
        let e = Backend::from_name(Some("tpu")).unwrap_err();
        assert_eq!(e.code(), ACL_ERROR_INVALID_PARAM);
        assert!(e.message().contains("expected sim, davinci-fake or davinci"), "{}", e.message());
    }
}
