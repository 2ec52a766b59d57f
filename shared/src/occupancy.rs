//! How many waves of a kernel one SIMD holds: occupancy from registers,
//! LDS and the wave slots, following LLVM's AMDGPU backend
//! (`AMDGPUBaseInfo.cpp`: getNumWavesPerEUWithNumVGPRs;
//! `AMDGPUSubtarget.cpp`: getOccupancyWithWorkGroupSizes;
//! `GCNSubtarget.cpp`: getOccupancyWithNumSGPRs). Occupancy is per SIMD
//! (LLVM's "EU"). `cargo xtask report` and the host's main job both read it.

use crate::gfx::Gfx as GfxTarget;

/// What a kernel uses, as far as occupancy is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// SGPRs the kernel uses (metadata `.sgpr_count`).
    pub sgprs: u32,
    /// VGPRs (`.vgpr_count`).
    pub vgprs: u32,
    /// AGPRs (`.agpr_count`).
    pub agprs: u32,
    /// Bytes of LDS per workgroup (`.group_segment_fixed_size` plus any
    /// dynamic LDS).
    pub lds_bytes: u32,
    /// Work-items per workgroup assumed for the LDS limit (the kernel's
    /// max flat workgroup size).
    pub workgroup_size: u32,
}

/// Which resource bounds occupancy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    /// The hardware's wave slots: nothing the kernel uses is the bound.
    WaveSlots,
    /// The vector register file (VGPRs and AGPRs).
    Vgprs,
    /// The scalar registers (GFX9's SGPR occupancy steps).
    Sgprs,
    /// The LDS per CU.
    Lds,
}

impl Limiter {
    /// The short name reports print.
    pub fn name(self) -> &'static str {
        match self {
            Self::WaveSlots => "waves",
            Self::Vgprs => "vgpr",
            Self::Sgprs => "sgpr",
            Self::Lds => "lds",
        }
    }
}

fn align_to(n: u32, granule: u32) -> u32 {
    n.div_ceil(granule) * granule
}

/// VGPRs a kernel occupies in `target`'s register file.
pub fn allocated_vgprs(target: &GfxTarget, vgprs: u32, agprs: u32) -> u32 {
    if target.unified_agprs && agprs > 0 {
        align_to(vgprs, 4) + agprs
    } else {
        vgprs.max(agprs)
    }
}

/// Waves per SIMD for a kernel's use on `target`, and what bounds it.
pub fn occupancy(t: &GfxTarget, usage: Usage) -> (u32, Limiter) {
    let max = t.max_waves_per_simd;
    let vgprs = allocated_vgprs(t, usage.vgprs, usage.agprs);
    let by_vgpr = (t.vgprs_per_simd / align_to(vgprs.max(1), t.vgpr_granule)).clamp(1, max);
    let by_sgpr = if t.sgprs_limit_occupancy {
        // GCNSubtarget::getOccupancyWithNumSGPRs for GFX8/GFX9.
        match usage.sgprs {
            0..=80 => 10,
            81..=88 => 9,
            89..=100 => 8,
            _ => 7,
        }
        .min(max)
    } else {
        max
    };
    // No LDS: no bound from it.
    let by_lds = match t.lds_per_cu.checked_div(usage.lds_bytes) {
        None => max,
        Some(fit) => {
            let groups = fit.min(t.max_workgroups_per_cu);
            let waves_per_group = usage.workgroup_size.max(1).div_ceil(t.wave_size);
            (waves_per_group * groups)
                .div_ceil(t.simds_per_cu)
                .clamp(1, max)
        }
    };
    let waves = by_vgpr.min(by_sgpr).min(by_lds);
    let limiter = if waves == max {
        Limiter::WaveSlots
    } else if waves == by_vgpr {
        Limiter::Vgprs
    } else if waves == by_sgpr {
        Limiter::Sgprs
    } else {
        Limiter::Lds
    };
    (waves, limiter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str) -> Option<&'static GfxTarget> {
        crate::gfx::gfx(name)
    }

    fn usage(sgprs: u32, vgprs: u32, agprs: u32, lds_bytes: u32) -> Usage {
        Usage {
            sgprs,
            vgprs,
            agprs,
            lds_bytes,
            workgroup_size: 256,
        }
    }

    #[test]
    fn cdna_vgpr_occupancy_counts_agprs_in_the_unified_file() {
        let t = target("gfx942").unwrap();
        assert_eq!(occupancy(t, usage(20, 64, 0, 0)), (8, Limiter::WaveSlots));
        // 128 VGPRs: 512 / 128 = 4 waves.
        assert_eq!(occupancy(t, usage(20, 128, 0, 0)), (4, Limiter::Vgprs));
        // 125 VGPRs round to 128 (for AGPR alignment) plus 128 AGPRs = 256: 2 waves.
        assert_eq!(occupancy(t, usage(20, 125, 128, 0)), (2, Limiter::Vgprs));
        // 102 SGPRs: 7 waves on GFX9.
        assert_eq!(occupancy(t, usage(102, 32, 0, 0)), (7, Limiter::Sgprs));
    }

    #[test]
    fn rdna_uses_the_1_5x_vgpr_file_and_ignores_sgprs() {
        let t = target("gfx1100").unwrap();
        // 96 VGPRs (a multiple of the 24 granule): 1536 / 96 = 16 waves.
        assert_eq!(occupancy(t, usage(106, 96, 0, 0)), (16, Limiter::WaveSlots));
        // 100 VGPRs round to 120: 12 waves.
        assert_eq!(occupancy(t, usage(106, 100, 0, 0)), (12, Limiter::Vgprs));
    }

    #[test]
    fn lds_bounds_workgroups_per_cu() {
        let t = target("gfx90a").unwrap();
        // 32 KiB per workgroup: 2 workgroups of 4 waves on 4 SIMDs = 2 waves.
        assert_eq!(occupancy(t, usage(20, 32, 0, 32 * 1024)), (2, Limiter::Lds));
        // gfx950's 160 KiB holds 5 such workgroups: ceil(20 / 4) = 5 waves.
        let t = target("gfx950").unwrap();
        assert_eq!(occupancy(t, usage(20, 32, 0, 32 * 1024)), (5, Limiter::Lds));
    }
}
