//! The gfx targets aqueduct builds for, and the occupancy limits of each.
//!
//! Limits follow LLVM's AMDGPU backend (`AMDGPUBaseInfo.cpp`: getMaxWavesPerEU,
//! getTotalNumVGPRs, getVGPRAllocGranule, getNumWavesPerEUWithNumVGPRs;
//! `AMDGPUSubtarget.cpp`: getOccupancyWithWorkGroupSizes; `GCNSubtarget.cpp`:
//! getOccupancyWithNumSGPRs) and `AMDGPU.td` (LDS size, 1.5x VGPR file on
//! gfx1100/gfx1201), and AMDGPUUsage's processor table. Occupancy is per SIMD
//! (LLVM's "EU").

/// The targets `cargo xtask build` builds when none are named.
pub const DEFAULT_TARGETS: &[&str] = &["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"];

/// One gfx target's properties that the build and the report use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GfxTarget {
    pub name: &'static str,
    /// Default wavefront size of rustc/LLVM for the target.
    pub wave_size: u32,
    /// getMaxWavesPerEU.
    pub max_waves_per_simd: u32,
    /// getTotalNumVGPRs for the default wave size (per lane, per SIMD).
    pub vgprs_per_simd: u32,
    /// getVGPRAllocGranule for the default wave size.
    pub vgpr_granule: u32,
    /// AGPRs share the VGPR file (gfx90a and later CDNA): a kernel's
    /// registers are `align(vgpr, 4) + agpr`.
    pub unified_agprs: bool,
    /// SGPRs limit occupancy (GFX8/GFX9); from GFX10 on they do not.
    pub sgprs_limit_occupancy: bool,
    /// LDS shared by the workgroups of one CU (GFX9) or WGP (GFX10+, in the
    /// default WGP mode), bytes.
    pub lds_bytes: u32,
    /// SIMDs sharing that LDS (getEUsPerCU).
    pub simds: u32,
    /// Workgroups one CU/WGP can hold (barrier limit, getMaxWorkGroupsPerCU).
    pub max_workgroups: u32,
}

/// CDNA2/CDNA3 (gfx90a, gfx942): wave64, 512-entry unified VGPR/AGPR file,
/// 64 KiB LDS per CU.
const CDNA: GfxTarget = GfxTarget {
    name: "gfx90a",
    wave_size: 64,
    max_waves_per_simd: 8,
    vgprs_per_simd: 512,
    vgpr_granule: 8,
    unified_agprs: true,
    sgprs_limit_occupancy: true,
    lds_bytes: 64 * 1024,
    simds: 4,
    max_workgroups: 16,
};

/// RDNA3/RDNA4 (gfx1100, gfx1201): wave32, the 1.5x VGPR file, 128 KiB LDS
/// per WGP.
const RDNA: GfxTarget = GfxTarget {
    name: "gfx1100",
    wave_size: 32,
    max_waves_per_simd: 16,
    vgprs_per_simd: 1536,
    vgpr_granule: 24,
    unified_agprs: false,
    sgprs_limit_occupancy: false,
    lds_bytes: 128 * 1024,
    simds: 4,
    max_workgroups: 32,
};

/// Every target aqueduct can build, in report order.
pub const TARGETS: &[GfxTarget] = &[
    CDNA,
    GfxTarget {
        name: "gfx942",
        ..CDNA
    },
    // CDNA4: 160 KiB LDS per CU.
    GfxTarget {
        name: "gfx950",
        lds_bytes: 160 * 1024,
        ..CDNA
    },
    RDNA,
    GfxTarget {
        name: "gfx1201",
        ..RDNA
    },
];

/// Looks a target up by name.
pub fn target(name: &str) -> Option<&'static GfxTarget> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Names of all supported targets, for error messages.
pub fn supported_names() -> String {
    TARGETS
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a comma-separated target list; an unknown name is refused with the
/// supported ones. Duplicates are dropped, order kept.
pub fn parse_list(list: &str) -> Result<Vec<&'static GfxTarget>, String> {
    let mut out: Vec<&'static GfxTarget> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let t = target(name).ok_or_else(|| {
            format!(
                "unknown gfx target `{name}`; supported: {}",
                supported_names()
            )
        })?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no gfx target given; supported: {}",
            supported_names()
        ));
    }
    Ok(out)
}

/// What a kernel uses, as far as occupancy is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub sgprs: u32,
    pub vgprs: u32,
    pub agprs: u32,
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
    Vgprs,
    Sgprs,
    Lds,
}

impl Limiter {
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

impl GfxTarget {
    /// VGPRs a kernel occupies in the register file.
    pub fn allocated_vgprs(&self, vgprs: u32, agprs: u32) -> u32 {
        if self.unified_agprs && agprs > 0 {
            align_to(vgprs, 4) + agprs
        } else {
            vgprs.max(agprs)
        }
    }

    /// Waves per SIMD for a kernel's use, and what bounds it.
    pub fn occupancy(&self, usage: Usage) -> (u32, Limiter) {
        let max = self.max_waves_per_simd;
        let vgprs = self.allocated_vgprs(usage.vgprs, usage.agprs);
        let by_vgpr =
            (self.vgprs_per_simd / align_to(vgprs.max(1), self.vgpr_granule)).clamp(1, max);
        let by_sgpr = if self.sgprs_limit_occupancy {
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
        let by_lds = match self.lds_bytes.checked_div(usage.lds_bytes) {
            None => max,
            Some(fit) => {
                let groups = fit.min(self.max_workgroups);
                let waves_per_group = usage.workgroup_size.max(1).div_ceil(self.wave_size);
                (waves_per_group * groups)
                    .div_ceil(self.simds)
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn unknown_target_is_refused_with_the_supported_list() {
        let err = parse_list("gfx942,gfx1030").unwrap_err();
        assert!(
            err.contains("gfx1030") && err.contains("gfx90a, gfx942, gfx950"),
            "{err}"
        );
        assert_eq!(parse_list("gfx942, gfx942").unwrap().len(), 1);
        assert!(parse_list(" , ").is_err());
    }

    #[test]
    fn cdna_vgpr_occupancy_counts_agprs_in_the_unified_file() {
        let t = target("gfx942").unwrap();
        assert_eq!(t.occupancy(usage(20, 64, 0, 0)), (8, Limiter::WaveSlots));
        // 128 VGPRs: 512 / 128 = 4 waves.
        assert_eq!(t.occupancy(usage(20, 128, 0, 0)), (4, Limiter::Vgprs));
        // 125 VGPRs round to 128 (for AGPR alignment) plus 128 AGPRs = 256: 2 waves.
        assert_eq!(t.occupancy(usage(20, 125, 128, 0)), (2, Limiter::Vgprs));
        // 102 SGPRs: 7 waves on GFX9.
        assert_eq!(t.occupancy(usage(102, 32, 0, 0)), (7, Limiter::Sgprs));
    }

    #[test]
    fn rdna_uses_the_1_5x_vgpr_file_and_ignores_sgprs() {
        let t = target("gfx1100").unwrap();
        // 96 VGPRs (a multiple of the 24 granule): 1536 / 96 = 16 waves.
        assert_eq!(t.occupancy(usage(106, 96, 0, 0)), (16, Limiter::WaveSlots));
        // 100 VGPRs round to 120: 12 waves.
        assert_eq!(t.occupancy(usage(106, 100, 0, 0)), (12, Limiter::Vgprs));
    }

    #[test]
    fn lds_bounds_workgroups_per_cu() {
        let t = target("gfx90a").unwrap();
        // 32 KiB per workgroup: 2 workgroups of 4 waves on 4 SIMDs = 2 waves.
        assert_eq!(t.occupancy(usage(20, 32, 0, 32 * 1024)), (2, Limiter::Lds));
        // gfx950's 160 KiB holds 5 such workgroups: ceil(20 / 4) = 5 waves.
        let t = target("gfx950").unwrap();
        assert_eq!(t.occupancy(usage(20, 32, 0, 32 * 1024)), (5, Limiter::Lds));
    }
}
