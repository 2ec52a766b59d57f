//! Per-gfx facts, written once: what each processor aqueduct builds for is
//! (wave size, register files and their allocation granules, LDS, workgroup
//! limits, matrix cores, the sramecc/xnack settings its products run with),
//! and the GPU products behind PCI chip IDs.
//!
//! Readers: xtask's code-object report (occupancy), the simulator (agent
//! answers, dispatch limits, its product profiles), the host's tests and the
//! solution catalogs (chip names). A number here is a fact about AMD's
//! hardware, so each field names its source:
//!
//! - LLVM `AMDGPUBaseInfo.cpp`: `getMaxWavesPerEU`, `getEUsPerCU`,
//!   `getTotalNumVGPRs`, `getVGPRAllocGranule`, `getAddressableNumSGPRs`,
//!   `getSGPRAllocGranule`, `getMaxFlatWorkGroupSize`; `GCNSubtarget`'s
//!   occupancy rules;
//! - LLVM `AMDGPU.td`: local memory sizes, the 1.5x VGPR file of gfx1100 and
//!   gfx1201, MAI (MFMA) and WMMA instruction features;
//! - AMDGPUUsage, "Processors" table: wavefront sizes and which target
//!   features (xnack, sramecc) each processor supports;
//! - ROCr / KFD topology as the runtime reports it for the products
//!   (`HSA_AMD_AGENT_INFO_*`); pci.ids for device names.
//!
//! Occupancy is counted per SIMD (LLVM's "EU"), as LLVM does.

/// Frequency of the constant reference clock `s_memrealtime` reads, in
/// Hz: 100 MHz (CDNA3 ISA, S_MEMREALTIME; ROCr reports the same as
/// `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY` on MI200 and MI300).
pub const REALTIME_HZ: u64 = 100_000_000;

/// Matrix-multiply hardware of a processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixCore {
    /// MFMA (matrix fused multiply-add, CDNA), accumulating in AGPRs or
    /// VGPRs.
    Mfma,
    /// WMMA (wave matrix multiply-accumulate, RDNA3 and later).
    Wmma,
    /// Neither: GEMMs use the vector ALU.
    None,
}

/// The 8-bit float formats a processor's matrix instructions take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8Format {
    /// No FP8/BF8 matrix instructions.
    None,
    /// E4M3 and E5M2 "FNUZ" (gfx940–gfx942: exponent biases 8 and 16, no
    /// infinities, one NaN 0x80, no negative zero; LLVM's
    /// `Float8E4M3FNUZ`/`Float8E5M2FNUZ`, the CDNA3 ISA's "FP8 and BF8
    /// formats").
    Fnuz,
    /// The OCP formats E4M3FN and E5M2 (gfx950, gfx12: biases 7 and 15, as
    /// the OCP 8-bit floating point specification defines them).
    Ocp,
}

/// A target feature's setting on the products of a processor, as the
/// runtime reports it in the ISA name (`gfx942:sramecc+:xnack-`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// The processor does not have the feature (no suffix in the name).
    Unsupported,
    /// Supported and enabled (`+`).
    On,
    /// Supported and disabled (`-`).
    Off,
}

impl Feature {
    /// The target-ID suffix for feature `name` (`:sramecc+`), empty when
    /// unsupported.
    fn write(self, f: &mut core::fmt::Formatter<'_>, name: &str) -> core::fmt::Result {
        match self {
            Self::Unsupported => Ok(()),
            Self::On => write!(f, ":{name}+"),
            Self::Off => write!(f, ":{name}-"),
        }
    }
}

/// A processor with the feature settings of its products, displayed as
/// AMDGPUUsage's target ID (`gfx942:sramecc+:xnack-`).
#[derive(Clone, Copy, Debug)]
pub struct TargetId(&'static Gfx);

impl core::fmt::Display for TargetId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.0.name)?;
        self.0.sramecc.write(f, "sramecc")?;
        self.0.xnack.write(f, "xnack")
    }
}

/// One processor's facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gfx {
    /// The processor name (`gfx942`).
    pub name: &'static str,
    /// Default wavefront size (AMDGPUUsage processor table).
    pub wave_size: u32,
    /// Wave slots per SIMD (`getMaxWavesPerEU`).
    pub max_waves_per_simd: u32,
    /// SIMDs per CU (GFX9) or per WGP in WGP mode (GFX10+) sharing LDS
    /// (`getEUsPerCU`).
    pub simds_per_cu: u32,
    /// VGPRs per lane of one SIMD's file at the default wave size
    /// (`getTotalNumVGPRs`; with unified AGPRs, VGPRs and AGPRs together).
    pub vgprs_per_simd: u32,
    /// VGPR allocation granule at the default wave size
    /// (`getVGPRAllocGranule`).
    pub vgpr_granule: u32,
    /// Architectural VGPRs one wave can address.
    pub vgprs_per_wave: u32,
    /// AGPRs (MFMA accumulators) one wave can address; 0 without them.
    pub agprs_per_wave: u32,
    /// AGPRs share the VGPR file (gfx90a and later CDNA): a kernel's
    /// registers are `align(vgprs, 4) + agprs` (`getTotalNumVGPRs`,
    /// `AMDGPU::getTotalNumVGPRs` with GFX90A insts).
    pub unified_agprs: bool,
    /// SGPRs one wave can address (`getAddressableNumSGPRs`).
    pub sgprs_per_wave: u32,
    /// SGPR allocation granule (`getSGPRAllocGranule`).
    pub sgpr_granule: u32,
    /// SGPRs limit occupancy (GFX8/GFX9); from GFX10 on they do not.
    pub sgprs_limit_occupancy: bool,
    /// LDS bytes shared by the workgroups of one CU (GFX9) or WGP
    /// (GFX10+, WGP mode): the occupancy bound (`AMDGPU.td`
    /// FeatureLocalMemorySize*).
    pub lds_per_cu: u32,
    /// LDS bytes one workgroup can allocate (`getAddressableLocalMemorySize`).
    pub lds_per_workgroup: u32,
    /// LDS allocation granule in bytes: a workgroup's LDS is its group
    /// segment rounded up to this (AMDGPUUsage, COMPUTE_PGM_RSRC2
    /// GRANULATED_LDS_SIZE: `roundup(lds-size / (128 * 4))` for GFX7 to
    /// GFX12, `(320 * 4)` for GFX950; CDNA2/CDNA3 ISA §3.6.5 "LDS
    /// Allocation and Clamping": blocks of 512 bytes).
    pub lds_granule: u32,
    /// Workgroups one CU/WGP can hold (the barrier limit,
    /// `getMaxWorkGroupsPerCU`).
    pub max_workgroups_per_cu: u32,
    /// Work-items a workgroup can have (`getMaxFlatWorkGroupSize`,
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`).
    pub max_workgroup_size: u32,
    /// Matrix hardware (`AMDGPU.td` FeatureMAIInsts / FeatureWMMA*).
    pub matrix_core: MatrixCore,
    /// sramecc on the products (AMDGPUUsage; ROCr's ISA names).
    pub sramecc: Feature,
    /// xnack on the products (AMDGPUUsage; ROCr's ISA names).
    pub xnack: Feature,
    /// Bytes per cache line (`HSA_AMD_AGENT_INFO_CACHELINE_SIZE`).
    pub cacheline_bytes: u32,
    /// FP8/BF8 encodings of the matrix instructions (`AMDGPU.td`
    /// FeatureFP8Insts on gfx940–942, FeatureFP8ConversionInsts with OCP
    /// encodings on gfx950 and gfx12).
    pub fp8: Fp8Format,
}

impl Gfx {
    /// Waves one CU holds (`HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU`, which ROCr
    /// derives from KFD's waves per SIMD times SIMDs per CU).
    pub const fn max_waves_per_cu(&self) -> u32 {
        self.max_waves_per_simd * self.simds_per_cu
    }

    /// The target ID of the ISA the runtime reports for the products
    /// (features in AMDGPUUsage's order: sramecc, then xnack).
    pub const fn target_id(&'static self) -> TargetId {
        TargetId(self)
    }
}

/// CDNA2 (gfx90a): wave64, a 512-entry VGPR file that VGPRs and AGPRs
/// share, 64 KiB LDS per CU and per workgroup, MFMA.
const GFX90A: Gfx = Gfx {
    name: "gfx90a",
    wave_size: 64,
    max_waves_per_simd: 8,
    simds_per_cu: 4,
    vgprs_per_simd: 512,
    vgpr_granule: 8,
    vgprs_per_wave: 256,
    agprs_per_wave: 256,
    unified_agprs: true,
    sgprs_per_wave: 102,
    sgpr_granule: 16,
    sgprs_limit_occupancy: true,
    lds_per_cu: 64 * 1024,
    lds_per_workgroup: 64 * 1024,
    lds_granule: 512,
    max_workgroups_per_cu: 16,
    max_workgroup_size: 1024,
    matrix_core: MatrixCore::Mfma,
    sramecc: Feature::On,
    xnack: Feature::Off,
    cacheline_bytes: 128,
    fp8: Fp8Format::None,
};

/// RDNA3 (gfx1100): wave32, the 1.5x VGPR file, 128 KiB LDS per WGP of
/// which a workgroup addresses 64 KiB, WMMA, no sramecc or xnack.
const GFX1100: Gfx = Gfx {
    name: "gfx1100",
    wave_size: 32,
    max_waves_per_simd: 16,
    simds_per_cu: 4,
    vgprs_per_simd: 1536,
    vgpr_granule: 24,
    vgprs_per_wave: 256,
    agprs_per_wave: 0,
    unified_agprs: false,
    sgprs_per_wave: 106,
    sgpr_granule: 106,
    sgprs_limit_occupancy: false,
    lds_per_cu: 128 * 1024,
    lds_per_workgroup: 64 * 1024,
    lds_granule: 512,
    max_workgroups_per_cu: 32,
    max_workgroup_size: 1024,
    matrix_core: MatrixCore::Wmma,
    sramecc: Feature::Unsupported,
    xnack: Feature::Unsupported,
    cacheline_bytes: 128,
    fp8: Fp8Format::None,
};

/// Every processor aqueduct builds for, in the order reports list them:
/// the default target set.
pub const TARGETS: &[Gfx] = &[
    GFX90A,
    // CDNA3: as CDNA2 for everything here.
    Gfx {
        name: "gfx942",
        fp8: Fp8Format::Fnuz,
        ..GFX90A
    },
    // CDNA4: 160 KiB LDS per CU, all of it addressable by one workgroup,
    // allocated in 1280-byte blocks.
    Gfx {
        name: "gfx950",
        lds_per_cu: 160 * 1024,
        lds_per_workgroup: 160 * 1024,
        lds_granule: 1280,
        fp8: Fp8Format::Ocp,
        ..GFX90A
    },
    GFX1100,
    // RDNA4: as RDNA3 for everything here.
    Gfx {
        name: "gfx1201",
        fp8: Fp8Format::Ocp,
        ..GFX1100
    },
];

/// A processor's facts by name.
pub fn gfx(name: &str) -> Option<&'static Gfx> {
    TARGETS.iter().find(|g| g.name == name)
}

// ===========================================================================
// Products
// ===========================================================================

/// A GPU behind a PCI device ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chip {
    /// PCI device ID (`HSA_AMD_AGENT_INFO_CHIP_ID`).
    pub id: u32,
    /// Its processor.
    pub gfx: &'static str,
    /// Its marketing name: pci.ids', or, where pci.ids has none, the name
    /// AMD's hipBLASLt chip-ID registry gives (marked "(registry)").
    pub name: &'static str,
}

/// The chips aqueduct knows by ID: every one the solution catalogs'
/// hardware predicates name, and the simulator's products.
pub const CHIPS: &[Chip] = &[
    // gfx950 (CDNA4).
    chip(0x75a0, "gfx950", "AMD Instinct MI350X"),
    chip(0x75a2, "gfx950", "AMD Instinct MI355X"),
    chip(0x75a3, "gfx950", "AMD Instinct MI355X"),
    chip(0x75a8, "gfx950", "AMD Instinct MI350P"),
    chip(0x75b0, "gfx950", "AMD Instinct MI350X VF"),
    chip(0x75b2, "gfx950", "AMD Instinct MI350 VF (registry)"),
    chip(0x75b3, "gfx950", "AMD Instinct MI355X VF (registry)"),
    chip(0x75b8, "gfx950", "AMD Instinct MI350P VF (registry)"),
    // gfx942 (CDNA3).
    chip(0x74a0, "gfx942", "AMD Instinct MI300A"),
    chip(0x74a1, "gfx942", "AMD Instinct MI300X"),
    chip(0x74a2, "gfx942", "AMD Instinct MI308X"),
    chip(0x74a5, "gfx942", "AMD Instinct MI325X"),
    chip(0x74a9, "gfx942", "AMD Instinct MI300X HF"),
    // gfx90a (CDNA2).
    chip(0x7408, "gfx90a", "AMD Instinct MI250X"),
    chip(0x740c, "gfx90a", "AMD Instinct MI250X/MI250"),
    chip(0x740f, "gfx90a", "AMD Instinct MI210"),
    // gfx908 (CDNA1).
    chip(0x738c, "gfx908", "AMD Instinct MI100"),
    // RDNA3 / RDNA4.
    chip(
        0x744c,
        "gfx1100",
        "AMD Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M",
    ),
    chip(0x7448, "gfx1100", "AMD Radeon Pro W7900"),
    chip(0x7550, "gfx1201", "AMD Radeon RX 9070/9070 XT/9070 GRE"),
    chip(0x7551, "gfx1201", "AMD Radeon AI PRO R9700"),
];

const fn chip(id: u32, gfx: &'static str, name: &'static str) -> Chip {
    Chip { id, gfx, name }
}

/// A chip by PCI device ID.
pub fn chip_by_id(id: u32) -> Option<&'static Chip> {
    CHIPS.iter().find(|c| c.id == id)
}

/// A GPU product as ROCr reports it (KFD topology, AMD's data sheets):
/// what the simulator poses as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Product {
    /// Short name (`mi300x`).
    pub key: &'static str,
    /// Its chip ([`CHIPS`]): processor and name.
    pub chip: u32,
    /// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`.
    pub compute_units: u32,
    /// Peak engine clock in MHz (`HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY`).
    pub max_clock_mhz: u32,
    /// Device memory (HBM) in bytes.
    pub memory_bytes: u64,
}

impl Product {
    /// Its chip's entry; every product's chip is in [`CHIPS`] (a test
    /// checks it).
    pub fn chip(&self) -> Chip {
        chip_by_id(self.chip).copied().unwrap_or(Chip {
            id: self.chip,
            gfx: "",
            name: "",
        })
    }
}

/// AMD Instinct MI300X (gfx942, 304 CUs, 2100 MHz, 192 GiB HBM3), MI210
/// (gfx90a, 104 CUs, 1700 MHz, 64 GiB HBM2e) and MI355X (gfx950, 256 CUs,
/// 2400 MHz, 288 GiB HBM3E: eight 36 GiB stacks, which AMD writes "288 GB");
/// AMD Radeon RX 7900 XTX (gfx1100, 96 CUs, boost 2500 MHz, 24 GiB GDDR6)
/// and RX 9070 XT (gfx1201, 64 CUs, boost 2970 MHz, 16 GiB GDDR6).
///
/// Sources: the chip IDs, `CHIPS` (for the MI355X, the seed
/// `hipblaslt-pci-chip-id-predicates.txt`: 0x75a3 and 0x75a2, a 256-CU
/// row in its rank example; the Radeon IDs, pci.ids); CUs, peak engine
/// clock and memory, AMD's product specifications for each card.
pub const PRODUCTS: &[Product] = &[
    Product {
        key: "mi300x",
        chip: 0x74a1,
        compute_units: 304,
        max_clock_mhz: 2100,
        memory_bytes: 192 << 30,
    },
    Product {
        key: "mi210",
        chip: 0x740f,
        compute_units: 104,
        max_clock_mhz: 1700,
        memory_bytes: 64 << 30,
    },
    Product {
        key: "mi355x",
        chip: 0x75a3,
        compute_units: 256,
        max_clock_mhz: 2400,
        memory_bytes: 288 << 30,
    },
    Product {
        key: "rx7900xtx",
        chip: 0x744c,
        compute_units: 96,
        max_clock_mhz: 2500,
        memory_bytes: 24 << 30,
    },
    Product {
        key: "rx9070xt",
        chip: 0x7550,
        compute_units: 64,
        max_clock_mhz: 2970,
        memory_bytes: 16 << 30,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_targets_are_listed_once_in_report_order() {
        let names: std::vec::Vec<&str> = TARGETS.iter().map(|g| g.name).collect();
        assert_eq!(names, ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"]);
        assert_eq!(gfx("gfx950").map(|g| g.lds_per_cu), Some(160 * 1024));
        assert_eq!(gfx("gfx1030"), None);
    }

    #[test]
    fn cdna_and_rdna_differ_where_llvm_says() {
        for g in TARGETS {
            let cdna = g.name.starts_with("gfx9");
            assert_eq!(g.wave_size, if cdna { 64 } else { 32 }, "{}", g.name);
            assert_eq!(g.unified_agprs, cdna, "{}", g.name);
            assert_eq!(g.agprs_per_wave > 0, cdna, "{}", g.name);
            assert_eq!(g.sgprs_limit_occupancy, cdna, "{}", g.name);
            assert_eq!(
                g.matrix_core,
                if cdna {
                    MatrixCore::Mfma
                } else {
                    MatrixCore::Wmma
                }
            );
            assert!(g.lds_per_workgroup <= g.lds_per_cu, "{}", g.name);
            assert_eq!(g.max_workgroup_size, 1024);
        }
        // ROCr reports 32 waves per CU on MI300X and MI210.
        assert_eq!(gfx("gfx942").map(Gfx::max_waves_per_cu), Some(32));
    }

    #[test]
    fn target_ids_follow_the_amdgpuusage_syntax() {
        let id = |name| std::format!("{}", gfx(name).unwrap().target_id());
        assert_eq!(id("gfx942"), "gfx942:sramecc+:xnack-");
        assert_eq!(id("gfx1100"), "gfx1100");
    }

    #[test]
    fn every_product_is_a_known_chip_of_a_default_target() {
        for p in PRODUCTS {
            let c = p.chip();
            assert!(gfx(c.gfx).is_some(), "{}", p.key);
            // The chip's name lists the product's model (`MI300X`; the
            // Radeon chips name several: `RX 7900 XT/7900 XTX/...`).
            let model = p.key[2..].to_uppercase();
            assert!(
                c.name.replace(' ', "").contains(&model),
                "{} {}",
                p.key,
                c.name
            );
        }
        let mut ids: std::vec::Vec<u32> = CHIPS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CHIPS.len(), "each chip ID once");
    }
}
