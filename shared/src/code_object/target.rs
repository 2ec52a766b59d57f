//! The target a code object is built for, as its ELF header says it.
//!
//! `e_flags` carries the processor in `EF_AMDGPU_MACH` (bits 7:0) and the
//! target features xnack and sramecc, whose encoding changed between code
//! object v3 and v4; v6 adds a generic-target version in bits 31:24
//! (AMDGPUUsage, "AMDGPU ELF Header" and "AMDGPU EF_AMDGPU_MACH Values").

use core::fmt;

use crate::kernel_descriptor::GfxFamily;

/// `EF_AMDGPU_MACH`: the processor field of `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// Code object v3: xnack and sramecc are single on/off bits; this is
/// xnack's (bit 8).
pub const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
/// Code object v3: sramecc's on/off bit (bit 9).
pub const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
/// Code object v4+: two-bit settings (unsupported, any, off, on); this is
/// xnack's (bits 9:8).
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
/// Code object v4+: sramecc's two-bit setting (bits 11:10).
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
/// Code object v6: version of a generic processor's feature set.
pub const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// `EF_AMDGPU_MACH_AMDGCN_*` values and the processor each names.
///
/// Source: LLVM's `BinaryFormat/ELF.h` as printed by the pinned toolchain's
/// `llvm-readobj -h` (a test checks every row against it), plus gfx940
/// (0x40) and gfx941 (0x4b), which current LLVM no longer emits but older
/// AMD code objects carry.
pub const MACH_TABLE: &[(u32, &str)] = &[
    (0x020, "gfx600"),
    (0x021, "gfx601"),
    (0x022, "gfx700"),
    (0x023, "gfx701"),
    (0x024, "gfx702"),
    (0x025, "gfx703"),
    (0x026, "gfx704"),
    (0x028, "gfx801"),
    (0x029, "gfx802"),
    (0x02a, "gfx803"),
    (0x02b, "gfx810"),
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03a, "gfx602"),
    (0x03b, "gfx705"),
    (0x03c, "gfx805"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x040, "gfx940"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x043, "gfx1150"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
    (0x048, "gfx1200"),
    (0x049, "gfx1250"),
    (0x04a, "gfx1151"),
    (0x04b, "gfx941"),
    (0x04c, "gfx942"),
    (0x04e, "gfx1201"),
    (0x04f, "gfx950"),
    (0x050, "gfx1310"),
    (0x051, "gfx9-generic"),
    (0x052, "gfx10-1-generic"),
    (0x053, "gfx10-3-generic"),
    (0x054, "gfx11-generic"),
    (0x055, "gfx1152"),
    (0x057, "gfx1154"),
    (0x058, "gfx1153"),
    (0x059, "gfx12-generic"),
    (0x05a, "gfx1251"),
    (0x05b, "gfx12-5-generic"),
    (0x05c, "gfx1172"),
    (0x05d, "gfx1170"),
    (0x05e, "gfx1171"),
    (0x05f, "gfx9-4-generic"),
    (0x062, "gfx11-7-generic"),
    (0x063, "gfx13-generic"),
];

/// The processor name for an `EF_AMDGPU_MACH` value.
pub fn processor_name(mach: u32) -> Option<&'static str> {
    MACH_TABLE
        .iter()
        .find(|&&(m, _)| m == mach)
        .map(|&(_, name)| name)
}

/// The `EF_AMDGPU_MACH` value of a processor name.
pub fn mach_of(processor: &str) -> Option<u32> {
    MACH_TABLE
        .iter()
        .find(|&&(_, name)| name == processor)
        .map(|&(m, _)| m)
}

/// The register-layout family of a processor (which descriptor bit
/// assignments apply), or `None` for processors before GFX9.
pub fn family(processor: &str) -> Option<GfxFamily> {
    let rest = processor.strip_prefix("gfx")?;
    Some(match rest {
        "908" | "90a" | "940" | "941" | "942" | "950" | "9-4-generic" => GfxFamily::Gfx9Mai,
        _ if rest.starts_with('9') => GfxFamily::Gfx9,
        _ if rest.starts_with("10") => GfxFamily::Gfx10,
        _ if rest.starts_with("11") => GfxFamily::Gfx11,
        _ if rest.starts_with("12") => GfxFamily::Gfx12,
        _ => return None,
    })
}

/// A target feature's setting (AMDGPUUsage, "Target ID").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor does not have the feature.
    Unsupported,
    /// Code runs with the feature either on or off.
    Any,
    /// Code needs the feature off (target-ID suffix `-`).
    Off,
    /// Code needs the feature on (target-ID suffix `+`).
    On,
}

impl FeatureSetting {
    /// The target-ID suffix: `+`, `-`, or nothing.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::On => "+",
            Self::Off => "-",
            Self::Any | Self::Unsupported => "",
        }
    }
}

/// Code-object versions this reader accepts, from `EI_ABIVERSION` with
/// `ELFOSABI_AMDGPU_HSA`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeObjectVersion {
    /// Code object v3 (`ELFABIVERSION_AMDGPU_HSA_V3`, 1).
    V3,
    /// Code object v4 (`ELFABIVERSION_AMDGPU_HSA_V4`, 2): two-bit feature
    /// settings, `amdhsa.target` in the metadata.
    V4,
    /// Code object v5 (`ELFABIVERSION_AMDGPU_HSA_V5`, 3): the implicit
    /// kernel arguments of the v5 layout.
    V5,
    /// Code object v6 (`ELFABIVERSION_AMDGPU_HSA_V6`, 4): generic targets
    /// with a version in `e_flags`.
    V6,
}

impl CodeObjectVersion {
    /// `ELFABIVERSION_AMDGPU_HSA_V3..V6` are 1..4.
    pub fn from_abi_version(abi_version: u8) -> Option<Self> {
        Some(match abi_version {
            1 => Self::V3,
            2 => Self::V4,
            3 => Self::V5,
            4 => Self::V6,
            _ => return None,
        })
    }

    /// The version number: 3, 4, 5 or 6.
    pub fn number(self) -> u32 {
        match self {
            Self::V3 => 3,
            Self::V4 => 4,
            Self::V5 => 5,
            Self::V6 => 6,
        }
    }
}

/// The processor and features a code object targets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// `EF_AMDGPU_MACH` value.
    pub mach: u32,
    /// Processor name, e.g. `gfx942`.
    pub processor: &'static str,
    /// The xnack (retry after a page fault) setting; v3 code objects say
    /// only on or any.
    pub xnack: FeatureSetting,
    /// The sramecc (ECC-protected SRAM) setting; v3 code objects say only
    /// on or any.
    pub sramecc: FeatureSetting,
    /// Generic-target version (v6 generic processors), 0 when absent.
    pub generic_version: u8,
}

impl Target {
    /// Decodes `e_flags` for a code-object version; `None` if the mach value
    /// is unknown.
    pub fn from_e_flags(e_flags: u32, version: CodeObjectVersion) -> Option<Self> {
        let mach = e_flags & EF_AMDGPU_MACH;
        let processor = processor_name(mach)?;
        let (xnack, sramecc) = if version == CodeObjectVersion::V3 {
            let on_off = |bit: u32| {
                if e_flags & bit != 0 {
                    FeatureSetting::On
                } else {
                    FeatureSetting::Any
                }
            };
            (
                on_off(EF_AMDGPU_FEATURE_XNACK_V3),
                on_off(EF_AMDGPU_FEATURE_SRAMECC_V3),
            )
        } else {
            let two_bit = |field: u32, shift: u32| match (e_flags & field) >> shift {
                0 => FeatureSetting::Unsupported,
                1 => FeatureSetting::Any,
                2 => FeatureSetting::Off,
                _ => FeatureSetting::On,
            };
            (
                two_bit(EF_AMDGPU_FEATURE_XNACK_V4, 8),
                two_bit(EF_AMDGPU_FEATURE_SRAMECC_V4, 10),
            )
        };
        let generic_version = if version >= CodeObjectVersion::V6 {
            (e_flags >> EF_AMDGPU_GENERIC_VERSION_OFFSET) as u8
        } else {
            0
        };
        Some(Self {
            mach,
            processor,
            xnack,
            sramecc,
            generic_version,
        })
    }

    /// The processor's register-layout family ([`family`]); `None` before
    /// GFX9.
    pub fn family(&self) -> Option<GfxFamily> {
        family(self.processor)
    }
}

impl fmt::Display for Target {
    /// The target ID's processor part, e.g. `gfx942:sramecc+:xnack-`
    /// (features in alphabetical order, only when set on or off).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.processor)?;
        for (name, setting) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if matches!(setting, FeatureSetting::On | FeatureSetting::Off) {
                write!(f, ":{name}{}", setting.suffix())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn decodes_v4_feature_settings() {
        let t = Target::from_e_flags(0x54c, CodeObjectVersion::V6).unwrap();
        assert_eq!(t.processor, "gfx942");
        assert_eq!(t.xnack, FeatureSetting::Any);
        assert_eq!(t.sramecc, FeatureSetting::Any);
        let t = Target::from_e_flags(0x04c | 0x200 | 0xc00, CodeObjectVersion::V5).unwrap();
        assert_eq!(t.to_string(), "gfx942:sramecc+:xnack-");
    }

    #[test]
    fn decodes_v3_feature_bits_and_v6_generic_version() {
        let t = Target::from_e_flags(0x03f | 0x100, CodeObjectVersion::V3).unwrap();
        assert_eq!(
            (t.xnack, t.sramecc),
            (FeatureSetting::On, FeatureSetting::Any)
        );
        let t = Target::from_e_flags(0x0100_0051, CodeObjectVersion::V6).unwrap();
        assert_eq!((t.processor, t.generic_version), ("gfx9-generic", 1));
    }

    #[test]
    fn families_follow_the_processor() {
        assert_eq!(family("gfx90a"), Some(GfxFamily::Gfx9Mai));
        assert_eq!(family("gfx906"), Some(GfxFamily::Gfx9));
        assert_eq!(family("gfx1100"), Some(GfxFamily::Gfx11));
        assert_eq!(family("gfx1201"), Some(GfxFamily::Gfx12));
        assert_eq!(family("gfx803"), None);
    }
}
