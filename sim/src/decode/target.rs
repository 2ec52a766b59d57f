//! The processors the simulator knows. The GFX9 family (gfx90a, gfx942,
//! gfx950: one set of encodings, wave64 only) is told apart by feature
//! where it differs (LLVM's `AMDGPU.td` subtarget features:
//! `FeatureGFX940Insts` for gfx942 and gfx950; the gfx950-only
//! instructions are simply rows only its opcode column names). gfx1100
//! (GFX11) and gfx1201 (GFX12) have encodings of their own
//! ([`Target::family`]). The simulator decodes and executes all five.

use aqueduct_abi::kernel_descriptor::GfxFamily;

/// The targets this decoder knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// gfx90a (CDNA2: MI200 series).
    Gfx90a,
    /// gfx942 (CDNA3: MI300 series), with architected flat scratch.
    Gfx942,
    /// gfx950 (CDNA4: MI350 series): gfx942's ISA plus the CDNA4
    /// instructions (`v_bitop3_*`, doubled-K and scaled MFMA forms, …),
    /// 160 KiB of LDS.
    Gfx950,
    /// gfx1100 (RDNA3: Radeon RX 7900 XTX/XT, PRO W7900): GFX11
    /// encodings, wave32 and wave64, WMMA.
    Gfx1100,
    /// gfx1201 (RDNA4: Radeon RX 9070 XT): GFX12 encodings.
    Gfx1201,
}

impl Target {
    /// Every target the simulator decodes and executes (the opcode tables'
    /// columns; products, dispatches and the execution suites cover each).
    pub const ALL: [Self; 5] = [
        Self::Gfx90a,
        Self::Gfx942,
        Self::Gfx950,
        Self::Gfx1100,
        Self::Gfx1201,
    ];

    /// The processor name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Gfx90a => "gfx90a",
            Self::Gfx942 => "gfx942",
            Self::Gfx950 => "gfx950",
            Self::Gfx1100 => "gfx1100",
            Self::Gfx1201 => "gfx1201",
        }
    }

    /// The encoding family (the shared descriptor families: GFX9 with or
    /// without MAI decode alike).
    pub fn family(self) -> GfxFamily {
        aqueduct_abi::code_object::target::family(self.name())
            .expect("every simulated processor has a family (a test checks it)")
    }

    /// LLVM's `FeatureGFX940Insts` (gfx942, gfx950): the SC0/SC1/NT cache
    /// policy bits in place of GLC/SLC/SCC, architected flat scratch, the
    /// `buffer_inv`/`buffer_wbl2 sc0 sc1` cache controls, SCRATCH's SVE
    /// bit, hardware registers 20-24 and f64 MFMA BLGP read as NEG.
    pub const fn gfx940_insts(self) -> bool {
        matches!(self, Self::Gfx942 | Self::Gfx950)
    }

    /// Whether kernels may choose wave32 (GFX10 and later; AMDGPUUsage,
    /// "Kernel Descriptor", ENABLE_WAVEFRONT_SIZE32).
    pub fn wave32(self) -> bool {
        !matches!(self.family(), GfxFamily::Gfx9 | GfxFamily::Gfx9Mai)
    }

    /// By processor name (`gfx90a`, `gfx942`, `gfx950`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The processor's facts (`aqueduct_abi::gfx`); looked up by name once
    /// (executors ask per instruction).
    pub fn gfx(self) -> &'static aqueduct_abi::gfx::Gfx {
        static BY_TARGET: std::sync::OnceLock<
            [&'static aqueduct_abi::gfx::Gfx; Target::ALL.len()],
        > = std::sync::OnceLock::new();
        BY_TARGET.get_or_init(|| {
            Self::ALL.map(|t| {
                aqueduct_abi::gfx::gfx(t.name())
                    .expect("every simulated target is in the per-gfx table (a test checks it)")
            })
        })[self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_its_facts_in_the_per_gfx_table() {
        for t in Target::ALL {
            assert_eq!(t.gfx().name, t.name());
            assert_eq!(Target::from_name(t.name()), Some(t));
        }
        assert_eq!(Target::from_name("gfx1030"), None);
        // The family agrees with the shared reader's, and GFX9 runs
        // wave64 only.
        for t in Target::ALL {
            assert!(aqueduct_abi::code_object::target::family(t.name()).is_some());
            assert_eq!(t.wave32(), t.family() != GfxFamily::Gfx9Mai);
        }
        assert_eq!(Target::Gfx1100.family(), GfxFamily::Gfx11);
        assert_eq!(Target::Gfx1201.family(), GfxFamily::Gfx12);
    }
}
