//! The compute facts of each [`SocProfile`]: core counts, L2 size, architecture number and the
//! SIMT limits that `aclrtGetDeviceInfo`, `aclGetDeviceCapability` and the resource limits
//! report.
//!
//! This module owns only those numbers (the software NPU's profile of each chip generation);
//! the profile itself and its memory and stream facts are [`crate::driver`]'s.

use crate::driver::SocProfile;

/// SIMT limits of a profile that has SIMT vector cores (950 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimtLimits {
    /// Threads per warp.
    pub warp_size: u32,
    /// Most resident threads per vector core.
    pub max_threads_per_vector_core: u32,
    /// Unified-buffer bytes per vector core.
    pub ubuf_per_vector_core: u64,
    /// Largest grid, per dimension.
    pub max_grid_dim: [u32; 3],
    /// Most blocks in one grid.
    pub max_blocks_per_grid: u64,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Largest block, per dimension.
    pub max_block_dim: [u32; 3],
}

impl SocProfile {
    /// AI Core (Cube Core on 950/A3/A2) count: the hardware default of the
    /// `ACL_RT_DEV_RES_CUBE_CORE` resource limit.
    pub const fn cube_cores(self) -> u32 {
        match self {
            Self::A2 | Self::A3 => 24,
            Self::Ascend950 => 32,
        }
    }

    /// Vector Core count: the hardware default of the `ACL_RT_DEV_RES_VECTOR_CORE` limit.
    pub const fn vector_cores(self) -> u32 {
        match self {
            Self::A2 | Self::A3 => 48,
            Self::Ascend950 => 64,
        }
    }

    /// AI CPU count.
    pub const fn aicpu_cores(self) -> u32 {
        match self {
            Self::A2 | Self::A3 => 6,
            Self::Ascend950 => 8,
        }
    }

    /// L2 cache bytes.
    pub const fn l2_bytes(self) -> u64 {
        match self {
            Self::A2 | Self::A3 => 192 << 20,
            Self::Ascend950 => 128 << 20,
        }
    }

    /// The architecture number `ACL_DEV_ATTR_NPU_ARCH` reports.
    pub const fn npu_arch(self) -> u32 {
        match self {
            Self::A2 | Self::A3 => 2201,
            Self::Ascend950 => 3510,
        }
    }

    /// The SIMT limits (950 only; `None` elsewhere, where every SIMT attribute reads 0).
    pub const fn simt(self) -> Option<SimtLimits> {
        match self {
            Self::A2 | Self::A3 => None,
            Self::Ascend950 => Some(SimtLimits {
                warp_size: 32,
                max_threads_per_vector_core: 2048,
                ubuf_per_vector_core: 256 << 10,
                max_grid_dim: [2_147_483_647, 65_535, 65_535],
                max_blocks_per_grid: 2_147_483_647,
                max_threads_per_block: 1024,
                max_block_dim: [1024, 1024, 64],
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_950_has_simt_and_vector_cores_are_twice_the_cube_cores() {
        for p in [SocProfile::A2, SocProfile::A3, SocProfile::Ascend950] {
            assert_eq!(p.vector_cores(), 2 * p.cube_cores(), "{p:?}");
            assert_eq!(p.simt().is_some(), p == SocProfile::Ascend950, "{p:?}");
        }
        assert_eq!(SocProfile::A2.npu_arch(), 2201);
        assert_eq!(SocProfile::Ascend950.npu_arch(), 3510);
    }
}
