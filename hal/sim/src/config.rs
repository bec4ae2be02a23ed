//! The software NPU's settings, read from `ACLRS_SIM_*` environment variables.
//!
//! This module only parses and validates; it must not open devices or allocate anything. A bad
//! value is logged (ERROR, through `tracing`) with the variable's name as it is read; the settings
//! in force are logged at INFO.

use hal::SocProfile;

/// Error in a setting: names the variable and says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?}: {reason}")]
pub struct ConfigError {
    /// The variable's name.
    pub var: &'static str,
    /// The value found.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Every setting of the software NPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// `ACLRS_SIM_INSTANCE`: the simulated machine's name (default `default`).
    pub instance: String,
    /// `ACLRS_SIM_DEVICES`: physical devices in the machine (default 2).
    pub devices: u32,
    /// `ASCEND_RT_VISIBLE_DEVICES`: physical ids visible to this process, in logical order.
    pub visible: Vec<u32>,
    /// `ACLRS_SIM_HBM`: HBM bytes per device (default 32 GiB).
    pub hbm_bytes: u64,
    /// `ACLRS_SIM_HUGE2M`: bytes that may be handed out as 2 MiB pages (default 3/4 of HBM).
    pub huge_budget_bytes: u64,
    /// `ACLRS_SIM_HUGE1G`: bytes that may be handed out as 1 GiB pages (default 1/8 of HBM).
    pub giant_budget_bytes: u64,
    /// `ACLRS_SIM_SOC`: the chip profile (default A2, `Ascend910B`).
    pub soc: SocProfile,
    /// `ACLRS_SIM_MEMORY`: `hbm` (default) or `ddr` (a device without HBM).
    pub memory: hal::MemoryKind,
}

/// Largest HBM a device may have: its VA window.
pub const MAX_HBM_BYTES: u64 = hal::layout::DEVICE_WINDOW_SIZE;

impl Default for SimConfig {
    fn default() -> Self {
        let hbm = 32u64 << 30;
        Self {
            instance: "default".into(),
            devices: 2,
            visible: vec![0, 1],
            hbm_bytes: hbm,
            huge_budget_bytes: default_huge(hbm),
            giant_budget_bytes: default_giant(hbm),
            soc: SocProfile::A2,
            memory: hal::MemoryKind::Hbm,
        }
    }
}

fn default_huge(hbm: u64) -> u64 {
    (hbm / 4 * 3) & !((2 << 20) - 1)
}

fn default_giant(hbm: u64) -> u64 {
    (hbm / 8) & !((1 << 30) - 1)
}

/// Parses a byte count with an optional binary suffix `K`, `M`, `G` or `T` (`KiB`, `MB`… too).
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

impl SimConfig {
    /// Reads the settings from the process environment.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first variable with a bad value.
    pub fn from_env() -> Result<Self, ConfigError> {
        let cfg = Self::from_lookup(|k| std::env::var(k).ok())?;
        tracing::info!(
            "software NPU: ACLRS_SIM_INSTANCE={} ACLRS_SIM_DEVICES={} ASCEND_RT_VISIBLE_DEVICES={:?} \
             ACLRS_SIM_HBM={} ACLRS_SIM_HUGE2M={} ACLRS_SIM_HUGE1G={} ACLRS_SIM_SOC={:?} ACLRS_SIM_MEMORY={:?}",
            cfg.instance,
            cfg.devices,
            cfg.visible,
            cfg.hbm_bytes,
            cfg.huge_budget_bytes,
            cfg.giant_budget_bytes,
            cfg.soc,
            cfg.memory
        );
        Ok(cfg)
    }

    /// Reads the settings through `get` (a stand-in for the environment, for tests).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first variable with a bad value.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let bad = |var: &'static str, value: &str, reason: &'static str| {
            let e = ConfigError { var, value: value.to_owned(), reason };
            tracing::error!("{e}");
            e
        };
        let mut cfg = Self::default();
        if let Some(v) = get("ACLRS_SIM_INSTANCE") {
            let ok = !v.is_empty()
                && v.len() <= 64
                && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !ok {
                return Err(bad("ACLRS_SIM_INSTANCE", &v, "expected 1 to 64 of [A-Za-z0-9._-]"));
            }
            cfg.instance = v;
        }
        if let Some(v) = get("ACLRS_SIM_DEVICES") {
            match v.trim().parse::<u32>() {
                Ok(n) if (1..=hal::layout::MAX_DEVICES).contains(&n) => cfg.devices = n,
                _ => return Err(bad("ACLRS_SIM_DEVICES", &v, "expected a device count from 1 to 64")),
            }
        }
        if let Some(v) = get("ACLRS_SIM_HBM") {
            match parse_bytes(&v) {
                Some(n) if (64 << 20..=MAX_HBM_BYTES).contains(&n) => {
                    cfg.hbm_bytes = n & !((2 << 20) - 1);
                }
                _ => {
                    return Err(bad(
                        "ACLRS_SIM_HBM",
                        &v,
                        "expected bytes from 64M to 128G, with an optional K/M/G/T suffix",
                    ))
                }
            }
        }
        cfg.huge_budget_bytes = default_huge(cfg.hbm_bytes);
        cfg.giant_budget_bytes = default_giant(cfg.hbm_bytes);
        if let Some(v) = get("ACLRS_SIM_HUGE2M") {
            match parse_bytes(&v) {
                Some(n) if n <= cfg.hbm_bytes => cfg.huge_budget_bytes = n & !((2 << 20) - 1),
                _ => return Err(bad("ACLRS_SIM_HUGE2M", &v, "expected bytes no larger than ACLRS_SIM_HBM")),
            }
        }
        if let Some(v) = get("ACLRS_SIM_HUGE1G") {
            match parse_bytes(&v) {
                Some(n) if n <= cfg.hbm_bytes => cfg.giant_budget_bytes = n & !((1 << 30) - 1),
                _ => return Err(bad("ACLRS_SIM_HUGE1G", &v, "expected bytes no larger than ACLRS_SIM_HBM")),
            }
        }
        if let Some(v) = get("ACLRS_SIM_MEMORY") {
            cfg.memory = match v.trim().to_ascii_lowercase().as_str() {
                "hbm" => hal::MemoryKind::Hbm,
                "ddr" => hal::MemoryKind::Ddr,
                _ => return Err(bad("ACLRS_SIM_MEMORY", &v, "expected hbm or ddr")),
            };
        }
        if let Some(v) = get("ACLRS_SIM_SOC") {
            cfg.soc = SocProfile::from_name(v.trim()).ok_or_else(|| {
                bad("ACLRS_SIM_SOC", &v, "expected Ascend910B (A2), Ascend910_93 (A3) or Ascend950PR (950)")
            })?;
        }
        cfg.visible = (0..cfg.devices).collect();
        if let Some(v) = get("ASCEND_RT_VISIBLE_DEVICES") {
            if !v.trim().is_empty() && v.split(',').any(|p| p.trim().is_empty()) {
                tracing::warn!("ASCEND_RT_VISIBLE_DEVICES={v:?}: empty entries are ignored");
            }
            let mut ids = Vec::new();
            for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match part.parse::<u32>() {
                    Ok(id) if id < cfg.devices && !ids.contains(&id) => ids.push(id),
                    _ => {
                        return Err(bad(
                            "ASCEND_RT_VISIBLE_DEVICES",
                            &v,
                            "expected distinct physical device ids below ACLRS_SIM_DEVICES, comma separated",
                        ))
                    }
                }
            }
            cfg.visible = ids;
        }
        Ok(cfg)
    }

    /// Number of devices this process sees.
    pub fn visible_count(&self) -> u32 {
        // CAST: at most MAX_DEVICES entries.
        self.visible.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<SimConfig, ConfigError> {
        let map: HashMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        SimConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.instance, "default");
        assert_eq!(c.devices, 2);
        assert_eq!(c.hbm_bytes, 32 << 30);
        assert_eq!(c.huge_budget_bytes, 24 << 30);
        assert_eq!(c.giant_budget_bytes, 4 << 30);
        assert_eq!(c.soc, SocProfile::A2);
        assert_eq!(c.visible, vec![0, 1]);
    }

    #[test]
    fn sizes_and_suffixes() {
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        assert_eq!(parse_bytes("512MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("3X"), None);
        assert_eq!(parse_bytes(""), None);
        let c =
            cfg(&[("ACLRS_SIM_HBM", "1G"), ("ACLRS_SIM_HUGE2M", "512M"), ("ACLRS_SIM_HUGE1G", "0")]).unwrap();
        assert_eq!((c.hbm_bytes, c.huge_budget_bytes, c.giant_budget_bytes), (1 << 30, 512 << 20, 0));
    }

    #[test]
    fn bad_values_name_the_variable() {
        assert_eq!(cfg(&[("ACLRS_SIM_DEVICES", "0")]).unwrap_err().var, "ACLRS_SIM_DEVICES");
        assert_eq!(cfg(&[("ACLRS_SIM_HBM", "256T")]).unwrap_err().var, "ACLRS_SIM_HBM");
        assert_eq!(cfg(&[("ACLRS_SIM_INSTANCE", "a/b")]).unwrap_err().var, "ACLRS_SIM_INSTANCE");
        assert_eq!(cfg(&[("ACLRS_SIM_SOC", "Ascend310")]).unwrap_err().var, "ACLRS_SIM_SOC");
        assert_eq!(cfg(&[("ACLRS_SIM_MEMORY", "sram")]).unwrap_err().var, "ACLRS_SIM_MEMORY");
        assert_eq!(cfg(&[("ACLRS_SIM_MEMORY", "DDR")]).unwrap().memory, hal::MemoryKind::Ddr);
        assert_eq!(
            cfg(&[("ACLRS_SIM_HBM", "1G"), ("ACLRS_SIM_HUGE2M", "2G")]).unwrap_err().var,
            "ACLRS_SIM_HUGE2M"
        );
        assert_eq!(
            cfg(&[("ASCEND_RT_VISIBLE_DEVICES", "0,0")]).unwrap_err().var,
            "ASCEND_RT_VISIBLE_DEVICES"
        );
        assert_eq!(cfg(&[("ASCEND_RT_VISIBLE_DEVICES", "5")]).unwrap_err().var, "ASCEND_RT_VISIBLE_DEVICES");
    }

    #[test]
    fn visibility_remaps() {
        let c = cfg(&[("ACLRS_SIM_DEVICES", "4"), ("ASCEND_RT_VISIBLE_DEVICES", "3,1")]).unwrap();
        assert_eq!(c.visible, vec![3, 1]);
        assert_eq!(c.visible_count(), 2);
        assert_eq!(cfg(&[("ACLRS_SIM_SOC", "Ascend950PR")]).unwrap().soc, SocProfile::Ascend950);
    }
}
