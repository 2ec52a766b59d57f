//! The gfx targets aqueduct builds for (the per-gfx table of
//! `aqueduct_abi::gfx`), and the occupancy a kernel reaches on each.
//!
//! The occupancy rules follow LLVM's AMDGPU backend
//! (`AMDGPUBaseInfo.cpp`: getNumWavesPerEUWithNumVGPRs; `AMDGPUSubtarget.cpp`:
//! getOccupancyWithWorkGroupSizes; `GCNSubtarget.cpp`:
//! getOccupancyWithNumSGPRs). Occupancy is per SIMD (LLVM's "EU").

pub use aqueduct_abi::gfx::Gfx as GfxTarget;

/// The targets `cargo xtask build` builds when none are named: every
/// target of the one per-gfx table, in its order.
pub const DEFAULT_TARGETS: &[GfxTarget] = aqueduct_abi::gfx::TARGETS;

/// Looks a target up by name.
pub fn target(name: &str) -> Option<&'static GfxTarget> {
    aqueduct_abi::gfx::gfx(name)
}

/// Names of all supported targets, for error messages.
pub fn supported_names() -> String {
    DEFAULT_TARGETS
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
