//! Running AMD's compiled GEMM kernels (rocBLAS's Tensile kernels and
//! hipBLASLt's TensileLite ones that `crate::rocblas_catalog` and
//! `crate::hipblaslt_catalog` keep) on the simulator: their arguments,
//! launch and an exact CPU check. Shared by the test `sim_rocblas` and
//! `sim-bench`. hipBLASLt's kernels take another header and launch
//! ([`Abi::UserArgs`]); what follows is rocBLAS's ([`Abi::Tensile`]).
//!
//! Arguments follow Tensile's host code (`ContractionSolution::
//! generateSingleCall`, Tensile 4.36): tensor sizes in elements, `ld` and
//! batch strides, the problem sizes, the work-group counts, the StaggerU
//! mask and the WorkGroupMapping remainder with its magic number
//! (2^31 / r + 1); the launch is `(ceil(M / MT0), ceil(N / MT1), batch)`
//! work-groups of `WG0 · WG1` work-items in one dimension. Argument offsets
//! come from each kernel's metadata, by name.
//!
//! Inputs are small integers ({-1, 0, 1}; C in [-3, 3]), so every product
//! and sum is exact in every type the kernels compute in and every result
//! (|alpha| K + 3|beta| below 256) is exactly representable in the output
//! type, bf16 included: the check is exact, whatever order the MFMA
//! accumulates in.

use aqueduct_sim::{Gpu, Program, Stats};

use crate::rng::Rng;

/// Element types as the kernels store them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ty {
    F32,
    F64,
    F16,
    Bf16,
    I8,
    I32,
}

impl Ty {
    pub fn bytes(self) -> usize {
        match self {
            Ty::F64 => 8,
            Ty::F32 | Ty::I32 => 4,
            Ty::F16 | Ty::Bf16 => 2,
            Ty::I8 => 1,
        }
    }

    /// The encoding of integer `v` (exact in every type for the values the
    /// test uses).
    pub fn encode(self, v: i64, out: &mut Vec<u8>) {
        match self {
            Ty::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            Ty::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
            Ty::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            Ty::I8 => out.push(v as i8 as u8),
            // bf16 is the high half of the f32.
            Ty::Bf16 => out.extend_from_slice(&(((v as f32).to_bits() >> 16) as u16).to_le_bytes()),
            Ty::F16 => out.extend_from_slice(&(v as f16).to_bits().to_le_bytes()),
        }
    }

    pub fn decode(self, b: &[u8]) -> f64 {
        match self {
            Ty::F32 => f64::from(f32::from_le_bytes(b[..4].try_into().unwrap())),
            Ty::F64 => f64::from_le_bytes(b[..8].try_into().unwrap()),
            Ty::I32 => f64::from(i32::from_le_bytes(b[..4].try_into().unwrap())),
            Ty::I8 => f64::from(b[0] as i8),
            Ty::Bf16 => {
                let h = u16::from_le_bytes([b[0], b[1]]);
                f64::from(f32::from_bits(u32::from(h) << 16))
            }
            Ty::F16 => f64::from(f16::from_bits(u16::from_le_bytes([b[0], b[1]]))),
        }
    }
}

/// One of AMD's kernels and what its name says about it.
pub struct Kernel {
    pub what: &'static str,
    pub name: &'static str,
    /// A/B, C/D and alpha/beta types.
    pub ab: Ty,
    pub cd: Ty,
    pub scalar: Ty,
    pub trans_a: bool,
    pub trans_b: bool,
    /// MT0, MT1, DepthU.
    pub tile: [u32; 3],
    /// Work-items per work-group (WG0 · WG1 · WG2).
    pub threads: u16,
    /// WorkGroupMapping.
    pub wgm: u32,
    /// StaggerU and the catalog's staggerStrideShift.
    pub stagger_u: u32,
    pub stagger_shift: u32,
    /// How it takes its arguments and is launched.
    pub abi: Abi,
    /// The package's code object that holds it.
    pub file: &'static str,
}

/// How a kernel takes its arguments and is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    /// rocBLAS 5.5.1 (Tensile 4.36): tensor sizes and offsets, host-made
    /// WorkGroupMapping and StaggerU values (module doc); launched
    /// `(ceil(M / MT0) · threads, ceil(N / MT1), batch)`.
    Tensile,
    /// hipBLASLt 7.1.1 (TensileLite "UserArgs", kernel-argument version
    /// 2): a 16-byte header — `Gemm info` = the GEMM count (1) with the
    /// argument mode in bits 31:30 (0: the arguments follow), `kernel
    /// info0` = GSU in bits 13:0 (1) with StaggerU settings above (0:
    /// none), `kernel info1` = WorkGroupMapping in bits 15:0, `numWG` =
    /// the workgroup count — then sizes, pointers, strides, alpha and
    /// beta, and the epilogue's arguments, zero (no bias, scale vector or
    /// activation; a zero `biasType` is f32, one the kernels list). The
    /// kernel makes every derived value itself. hipBLASLt launches the
    /// GFX11 kernels 1-D, `ceil(M / MT0) · ceil(N / MT1) · batch`
    /// workgroups that the kernel splits into tiles and batch, and the
    /// GFX12 ones as Tensile's are, `(ceil(M / MT0), ceil(N / MT1),
    /// batch)` (its host code skips the flattening for gfx12; each kind
    /// launched the other way writes only part of D, as `sim_rocblas`
    /// saw); `numWG` is the launch's workgroup count in x.
    /// hipBLASLt's `ContractionSolution::kernelArgs` and its 7.1.1
    /// `libhipblaslt.so`, and the kernels' own prologues, which read the
    /// header with these masks (`s_and_b32 …, 0x3fff`, `0xffff`,
    /// `s_lshr_b32 …, 30`).
    UserArgs,
}

/// The kernels `crate::rocblas_kernels` keeps (rocBLAS 5.5.1, gfx90a; all
/// GSU1, not persistent, strided-batched, handling M, N and K tails), with
/// what their names say (`MT` tile and DepthU, `WG` work-group, `WGM`, `SU`; the
/// StaggerU stride shift is log2(`SUS` / (DepthU × element bytes))).
pub const KERNELS: &[Kernel] = &[
    Kernel {
        what: "f32 NN",
        name: "Cijk_Ailk_Bljk_SB_MT32x32x32_MI16x16x4x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS0_FL0_GRVW1_GSU1_GSUASB_GLS0_ISA90a_IU1_K1_KLA_LBSPP128_LPA0_LPB2_LDL1_LRVW2_LWPMn1_LDW0_MAC_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR2_PLR9_SIA3_SS0_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT1_16_TLDS1_USFGROn1_VAW1_VSn1_VW1_WSGRA0_WSGRB0_WS64_WG32_8_1_WGM1",
        ab: Ty::F32,
        cd: Ty::F32,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [32, 32, 32],
        threads: 256,
        wgm: 1,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
    Kernel {
        what: "f16 NN, f32 compute",
        name: "Cijk_Ailk_Bljk_HHS_BH_MT32x32x32_MI16x16x16x1_SE_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS0_FL0_GRVW8_GSU1_GSUAMB_GLS0_ISA90a_IU1_K1_KLA_LBSPP128_LPA0_LPB16_LDL1_LRVW8_LWPMn1_LDW0_MAC_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR2_PLR2_SIA3_SS0_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW4_SSO0_SVW4_SNLL0_TT1_16_TLDS1_USFGROn1_VAW2_VSn1_VW2_WSGRA1_WSGRB1_WS64_WG32_8_1_WGM1",
        ab: Ty::F16,
        cd: Ty::F16,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [32, 32, 32],
        threads: 256,
        wgm: 1,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
    Kernel {
        what: "bf16 NN, f32 compute",
        name: "Cijk_Ailk_Bljk_BBS_BH_MT16x32x32_MI16x16x16x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW8_GSU1_GSUASB_GLS0_ISA90a_IU1_K1_KLA_LBSPP128_LPA0_LPB16_LDL1_LRVW8_LWPMn1_LDW0_FMA_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR2_SIA3_SS0_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW4_SSO0_SVW4_SNLL0_TT1_16_TLDS1_USFGROn1_VAW1_VSn1_VW2_WSGRA1_WSGRB1_WS64_WG16_8_1_WGM1",
        ab: Ty::Bf16,
        cd: Ty::Bf16,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [16, 32, 32],
        threads: 128,
        wgm: 1,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
    Kernel {
        what: "i8 NN, i32 out",
        name: "Cijk_Ailk_Bljk_I8II_BH_MT64x64x64_MI32x32x8x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW8_GSU1_GSUASB_GLS0_ISA90a_IU1_K1_KLA_LBSPP128_LPA0_LPB0_LDL1_LRVW8_LWPMn1_LDW0_FMA_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR9_SIA3_SS1_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW0_SSO0_SVW1_SNLL0_TT1_32_TLDS1_USFGROn1_VAW1_VSn1_VW1_WSGRA0_WSGRB1_WS64_WG64_4_1_WGM1",
        ab: Ty::I8,
        cd: Ty::I32,
        scalar: Ty::I32,
        trans_a: false,
        trans_b: false,
        tile: [64, 64, 64],
        threads: 256,
        wgm: 1,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
    Kernel {
        what: "f64 NN, WorkGroupMapping 5",
        name: "Cijk_Ailk_Bljk_DB_MT32x16x8_MI16x16x4x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS0_FL0_GRVW1_GSU1_GSUAMB_GLS1_ISA90a_IU1_K1_KLA_LBSPP0_LPA0_LPB0_LDL1_LRVW1_LWPMn1_LDW0_MAC_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS4_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR2_PLR3_SIA3_SS1_SU0_SUM0_SUS0_SCIUI1_SPO1_SRVW0_SSO6_SVW1_SNLL0_TT1_16_TLDS0_USFGROn1_VAW1_VSn1_VW1_WSGRA0_WSGRB0_WS64_WG32_4_1_WGM5",
        ab: Ty::F64,
        cd: Ty::F64,
        scalar: Ty::F64,
        trans_a: false,
        trans_b: false,
        tile: [32, 16, 8],
        threads: 128,
        wgm: 5,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
    Kernel {
        what: "f32 NN, StaggerU 32, WorkGroupMapping 2",
        name: "Cijk_Ailk_Bljk_SB_MT64x16x32_MI16x16x4x1_SE_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS0_FL0_GRVW2_GSU1_GSUASB_GLS0_ISA90a_IU1_K1_KLA_LBSPP128_LPA0_LPB2_LDL1_LRVW2_LWPMn1_LDW0_MAC_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR2_PLR9_SIA3_SS0_SU32_SUM0_SUS128_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT1_16_TLDS1_USFGROn1_VAW1_VSn1_VW1_WSGRA1_WSGRB1_WS64_WG64_4_1_WGM2",
        ab: Ty::F32,
        cd: Ty::F32,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [64, 16, 32],
        threads: 256,
        wgm: 2,
        stagger_u: 32,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
    Kernel {
        what: "f32 TT, direct-to-LDS, StaggerU 32, WorkGroupMapping 4",
        name: "Cijk_Alik_Bjlk_SB_MT64x128x8_MI32x32x1x2_SE_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL1_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW1_GSU1_GSUAMB_GLS0_ISA90a_IU1_K1_KLA_LBSPP0_LPA0_LPB0_LDL1_LRVW1_LWPMn1_LDW0_MAC_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA1_SS0_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT1_32_TLDS1_USFGROn1_VAW1_VSn1_VW1_WSGRA0_WSGRB0_WS64_WG64_4_1_WGM4",
        ab: Ty::F32,
        cd: Ty::F32,
        scalar: Ty::F32,
        trans_a: true,
        trans_b: true,
        tile: [64, 128, 8],
        threads: 256,
        wgm: 4,
        stagger_u: 32,
        stagger_shift: 3,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx90a.co",
    },
];

/// rocBLAS 5.5.1's gfx1100 kernels the same package carries (one plain
/// code object, `TensileLibrary_gfx1100.co`, whose 4844 kernels take the
/// gfx90a kernels' 176-byte arguments, names and offsets alike): WMMA
/// (`v_wmma_f32_16x16x16_f16/bf16`, wave32) in f16 and bf16, NN and NT,
/// and a wave64 f32 one, the smallest macro-tiles of each kind. The same
/// launch and arguments as [`KERNELS`]; their StaggerU stride shift is
/// log2(`SUS` / (DepthU × element bytes)) as there.
pub const KERNELS_GFX1100: &[Kernel] = &[
    Kernel {
        what: "f16 NN, f32 compute, WMMA",
        name: "Cijk_Ailk_Bljk_HHS_BH_MT32x32x16_MI16x16x16x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW4_GSU1_GSUASB_GLS0_ISA1100_IU1_K1_KLA_LBSPP128_LPA0_LPB8_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV1_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA1_SS1_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW0_SSO0_SVW1_SNLL0_TT1_16_TLDS1_USFGROn1_VAW2_VSn1_VW1_WSGRA1_WSGRB1_WS32_WG32_4_1_WGM4",
        ab: Ty::F16,
        cd: Ty::F16,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [32, 32, 16],
        threads: 128,
        wgm: 4,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx1100.co",
    },
    Kernel {
        what: "f16 NT, f32 compute, WMMA",
        name: "Cijk_Ailk_Bjlk_HHS_BH_MT32x32x32_MI16x16x16x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW8_GSU1_GSUASB_GLS0_ISA1100_IU1_K1_KLA_LBSPP0_LPA0_LPB0_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV1_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA1_SS1_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW0_SSO0_SVW1_SNLL0_TT1_16_TLDS0_USFGROn1_VAW2_VSn1_VW1_WSGRA1_WSGRB1_WS32_WG32_4_1_WGM4",
        ab: Ty::F16,
        cd: Ty::F16,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: true,
        tile: [32, 32, 32],
        threads: 128,
        wgm: 4,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx1100.co",
    },
    Kernel {
        what: "bf16 NN, f32 compute, WMMA",
        name: "Cijk_Ailk_Bljk_BBS_BH_MT32x32x16_MI16x16x16x1_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS1_FL0_GRVW4_GSU1_GSUASB_GLS0_ISA1100_IU1_K1_KLA_LBSPP128_LPA0_LPB8_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV1_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA1_SS1_SU0_SUM0_SUS0_SCIUI1_SPO0_SRVW0_SSO0_SVW1_SNLL0_TT1_16_TLDS1_USFGROn1_VAW1_VSn1_VW1_WSGRA1_WSGRB1_WS32_WG32_4_1_WGM4",
        ab: Ty::Bf16,
        cd: Ty::Bf16,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [32, 32, 16],
        threads: 128,
        wgm: 4,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx1100.co",
    },
    Kernel {
        what: "f32 NN, FMA, wave64",
        name: "Cijk_Ailk_Bljk_SB_MT32x32x8_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS0_ASE_ASGT_ASAE01_ASCE01_ASEM1_BL1_BS1_DTL0_DTVA0_DVO0_ETSP_EPS0_FL0_GRVW1_GSU1_GSUASB_GLS0_ISA1100_IU1_K1_KLA_LBSPP0_LPA0_LPB0_LDL1_LRVW1_LWPMn1_LDW0_FMA_MIAV0_MDA2_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR0_PLR1_SIA1_SS0_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT2_2_TLDS0_USFGROn1_VAW1_VSn1_VW1_WSGRA0_WSGRB0_WS64_WG16_16_1_WGM8",
        ab: Ty::F32,
        cd: Ty::F32,
        scalar: Ty::F32,
        trans_a: false,
        trans_b: false,
        tile: [32, 32, 8],
        threads: 256,
        wgm: 8,
        stagger_u: 32,
        stagger_shift: 3,
        abi: Abi::Tensile,
        file: "TensileLibrary_gfx1100.co",
    },
];

/// A hipBLASLt kernel record: A/B and C/D of one type with f32 alpha and
/// beta, StaggerU off, [`Abi::UserArgs`]; `(type, trans_a, trans_b)`,
/// `(MT0/MT1/DepthU, work-items, WorkGroupMapping)` and the package file.
const fn user_args(
    what: &'static str,
    name: &'static str,
    (ab, trans_a, trans_b): (Ty, bool, bool),
    (tile, threads, wgm): ([u32; 3], u16, u32),
    file: &'static str,
) -> Kernel {
    Kernel {
        what,
        name,
        ab,
        cd: ab,
        scalar: Ty::F32,
        trans_a,
        trans_b,
        tile,
        threads,
        wgm,
        stagger_u: 0,
        stagger_shift: 0,
        abi: Abi::UserArgs,
        file,
    }
}

/// hipBLASLt 7.1.1's gfx1100 kernels (the same package and argument
/// header as [`HIPBLASLT_GFX1201`]): WMMA (`v_wmma_f32_16x16x16_f16/bf16`,
/// wave32) in f16 NN, NT and TN and bf16 NN, their epilogues switched off,
/// and a wave64 f32 one; the smallest macro-tiles.
pub const HIPBLASLT_GFX1100: &[Kernel] = &[
    user_args(
        "f16 NN, f32 compute, WMMA",
        "Cijk_Ailk_Bljk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1100_IU1_K1_LBSPPA1024_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA0_SIA3_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG32_4_1",
        (Ty::F16, false, false),
        ([32, 32, 32], 128, 4),
        "TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100.co",
    ),
    user_args(
        "f16 NT, f32 compute, WMMA",
        "Cijk_Ailk_Bjlk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1100_IU1_K1_LBSPPA1024_LBSPPB1024_LBSPPM0_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA0_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS0_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG32_4_1",
        (Ty::F16, false, true),
        ([32, 32, 32], 128, 1),
        "TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100.co",
    ),
    user_args(
        "f16 TN, f32 compute, WMMA",
        "Cijk_Alik_Bljk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1100_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA0_SIA3_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG32_4_1",
        (Ty::F16, true, false),
        ([32, 32, 32], 128, 2),
        "TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1100.co",
    ),
    user_args(
        "bf16 NN, f32 compute, WMMA",
        "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1100_IU1_K1_LBSPPA1024_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW16_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA0_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG32_4_1",
        (Ty::Bf16, false, false),
        ([32, 32, 32], 128, 1),
        "TensileLibrary_BB_BB_HA_Bias_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100.co",
    ),
    user_args(
        "f32 NN, FMA, wave64",
        "Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT8x8x8_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS1_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1100_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_LWPMn1_MIAV0_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR1_PLR0_PKA0_SIA1_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TT1_1_TLDS0_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG8_8_1",
        (Ty::F32, false, false),
        ([8, 8, 8], 64, 1),
        "TensileLibrary_SS_SS_HA_Bias_SAV_UA_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100.co",
    ),
];

/// hipBLASLt 7.1.1's gfx1201 kernels (Debian sid's `libhipblaslt1`, one
/// code object per type and layout, in compressed offload bundles,
/// `crate::offload_bundle`): WMMA (`v_wmma_f32_16x16x16_f16/bf16`, wave32)
/// in f16 NN and NT and bf16 NN, with their bias, scale-vector and
/// activation epilogues present and switched off, a wave64 f32 one and the
/// plain f32 kind with no epilogue arguments, the smallest macro-tiles;
/// and the f16 NN kernel the package's catalog selects for 512³ on an RX
/// 9070 XT (`sim-bench`'s `gemm_f16_64x64` row). Launched and given
/// arguments as [`Abi::UserArgs`] says; WorkGroupMapping is a run-time
/// value there, chosen here.
pub const HIPBLASLT_GFX1201: &[Kernel] = &[
    user_args(
        "f16 NN, f32 compute, WMMA",
        "Cijk_Ailk_Bljk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1201_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR1_PLR0_PKA0_SIA1_SS0_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG16_2_1",
        (Ty::F16, false, false),
        ([16, 16, 32], 32, 1),
        "TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1201.co",
    ),
    user_args(
        "f16 NT, f32 compute, WMMA",
        "Cijk_Ailk_Bjlk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1201_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR1_PLR0_PKA0_SIA1_SS0_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG16_2_1",
        (Ty::F16, false, true),
        ([16, 16, 32], 32, 3),
        "TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1201.co",
    ),
    user_args(
        "bf16 NN, f32 compute, WMMA",
        "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1201_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV1_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR1_PLR0_PKA0_SIA1_SS0_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS2_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG16_2_1",
        (Ty::Bf16, false, false),
        ([16, 16, 32], 32, 1),
        "TensileLibrary_BB_BB_HA_Bias_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1201.co",
    ),
    user_args(
        "f32 NN, FMA, wave64",
        "Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT8x8x8_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS1_FDSI0_GRPM1_GRVWA1_GRVWB1_GSUAMB_GLS0_ISA1201_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_LWPMn1_MIAV0_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR1_PLR0_PKA0_SIA1_SS0_SPO0_SRVW0_SSO0_SVW1_SK0_SKXCCM0_TT1_1_TLDS0_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG8_8_1",
        (Ty::F32, false, false),
        ([8, 8, 8], 64, 1),
        "TensileLibrary_SS_SS_HA_Bias_SAV_UA_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1201.co",
    ),
    user_args(
        "f32 NN, FMA, no epilogue",
        "Cijk_Ailk_Bljk_S_B_UserArgs_MT32x64x16_SN_LDSB0_AFC0_AFEM4_AFEM4_ASEM1_CLR0_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA4_GRVWB4_GSUAMB_GLS0_ISA1201_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW4_LWPMn1_MIAV0_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA0_SIA1_SS0_SPO0_SRVW0_SSO0_SVW2_SK0_SKXCCM0_TT8_8_TLDS0_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA4_VWB4_WSGRA0_WSGRB0_WS32_WG4_8_1",
        (Ty::F32, false, false),
        ([32, 64, 16], 32, 2),
        "TensileLibrary_SS_SS_UA_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1201.co",
    ),
    user_args(
        // The kernel of the solution hipBLASLt's catalog selects for
        // 512³ on an RX 9070 XT (the solution's name without its
        // host-side GSU, StaggerU and WorkGroupMapping fields).
        "f16 NN, f32 compute, WMMA, hipBLASLt's choice at 512³ (64x64, four waves, 128-bit loads, B direct to VGPRs)",
        "Cijk_Ailk_Bljk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM32_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB1_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA1201_IU1_K1_LBSPPA1024_LBSPPB0_LBSPPM0_LPA16_LPB0_LPM0_LRVW8_LWPMn1_MIAV1_MIWT2_2_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB2_ONLL1_PGR2_PLR1_PKA0_SIA3_SS0_SPO0_SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS32_WG32_4_1",
        (Ty::F16, false, false),
        ([64, 64, 32], 128, 8),
        "TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1201.co",
    ),
];

/// A GEMM problem: D = alpha A B + beta C, column-major as rocBLAS's.
#[derive(Clone, Copy, Debug)]
pub struct Problem {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub batch: u32,
    pub alpha: i64,
    pub beta: i64,
}

/// Elements a column-major `rows × cols` operand with leading dimension
/// `ld` spans, and its batch stride (packed).
fn span(rows: u32, cols: u32, ld: u32) -> u64 {
    1 + u64::from(rows - 1) + u64::from(cols - 1) * u64::from(ld)
}

/// Tensile's StaggerU mask: halve StaggerU until the loop has that many
/// iterations (times 2^shift), then less one.
fn stagger_iter(k: u32, depth_u: u32, stagger_u: u32, shift: u32) -> u32 {
    let iters = k / depth_u;
    let mut s = stagger_u;
    while s > 1 && iters < s << shift {
        s /= 2;
    }
    s.saturating_sub(1)
}

impl Kernel {
    /// The multiples of M and N its predicates assert (Tensile's
    /// `AssertFree0ElementMultiple`/`AssertFree1ElementMultiple`, written
    /// `AF0EM<a>_AF1EM<b>` in Tensile 4.36 names and `AFEM<a>_AFEM<b>` in
    /// TensileLite ones): a problem that breaks them is not the kernel's
    /// (its wide stores would run past M into the next column).
    pub fn asserted_multiples(&self) -> [u32; 2] {
        let after = |key: &str| -> Vec<u32> {
            self.name
                .split('_')
                .filter_map(|part| part.strip_prefix(key)?.parse().ok())
                .collect()
        };
        match (after("AF0EM").as_slice(), after("AF1EM").as_slice()) {
            ([a], [b]) => [*a, *b],
            _ => match after("AFEM").as_slice() {
                [a, b, ..] => [*a, *b],
                _ => [1, 1],
            },
        }
    }

    /// The multiple of K its predicates assert (Tensile's
    /// `AssertSummationElementMultiple`, `ASEM<k>` in the names): its
    /// loads of K assume whole groups.
    pub fn asserted_k_multiple(&self) -> u32 {
        self.name
            .split('_')
            .find_map(|part| part.strip_prefix("ASEM")?.parse().ok())
            .unwrap_or(1)
    }
}

/// The Tensile 4.36 arguments the host derives: the StaggerU mask and the
/// WorkGroupMapping counts, remainder and its magic number (2^31 / r + 1).
fn tensile_arguments(
    kernel: &Kernel,
    p: Problem,
    (nwg0, nwg1): (u32, u32),
    put: &mut impl FnMut(&str, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let (full, rem) = match kernel.wgm {
        0 => (nwg1, 0),
        w => (nwg1 / w, if nwg1 % w == 0 { w } else { nwg1 % w }),
    };
    let magic = if rem == 0 {
        0
    } else {
        ((1u64 << 31) / u64::from(rem) + 1) as u32
    };
    let stagger = stagger_iter(p.k, kernel.tile[2], kernel.stagger_u, kernel.stagger_shift);
    for (name, v) in [
        ("OrigStaggerUIter", stagger),
        ("NumWorkGroups0", nwg0),
        ("NumWorkGroups1", nwg1),
        ("NumFullBlocks", full),
        ("WgmRemainder1", rem),
        ("MagicNumberWgmRemainder1", magic),
    ] {
        put(name, &v.to_le_bytes())?;
    }
    Ok(())
}

/// One problem set up on a device: inputs uploaded, D poisoned (0xFF
/// bytes: a NaN or -1), the kernargs and the launch ready.
pub struct Case {
    pub what: String,
    kernel: &'static Kernel,
    p: Problem,
    a: Vec<i64>,
    b: Vec<i64>,
    c: Vec<i64>,
    lda: u32,
    ldb: u32,
    ldc: u32,
    strides: [u64; 3],
    buffers: [u64; 4],
    d_len: usize,
    kargs: Vec<u8>,
    /// D as the CPU computes it, once.
    reference: std::sync::OnceLock<Vec<f64>>,
    pub grid: [u32; 3],
    pub workgroup: [u16; 3],
}

impl Case {
    /// `p` for `kernel` on `device`, with inputs from `rng`; every buffer
    /// exactly the size the problem needs.
    pub fn new(
        device: &Gpu,
        program: &Program,
        kernel: &'static Kernel,
        p: Problem,
        rng: &mut Rng,
    ) -> Result<Case, String> {
        let meta = &program
            .kernel(kernel.name)
            .ok_or_else(|| format!("no kernel {} in the code object", kernel.what))?
            .metadata;
        let what = format!("{} {}x{}x{} batch {}", kernel.what, p.m, p.n, p.k, p.batch);
        let [m_multiple, n_multiple] = kernel.asserted_multiples();
        let k_multiple = kernel.asserted_k_multiple();
        if !p.m.is_multiple_of(m_multiple)
            || !p.n.is_multiple_of(n_multiple)
            || !p.k.is_multiple_of(k_multiple)
        {
            return Err(format!(
                "{what}: the kernel asserts M a multiple of {m_multiple}, N of {n_multiple} \
                 and K of {k_multiple}"
            ));
        }
        // Column-major operands: A is M×K (K×M transposed), B K×N (N×K).
        let (a_rows, a_cols) = if kernel.trans_a {
            (p.k, p.m)
        } else {
            (p.m, p.k)
        };
        let (b_rows, b_cols) = if kernel.trans_b {
            (p.n, p.k)
        } else {
            (p.k, p.n)
        };
        let (lda, ldb, ldc) = (a_rows, b_rows, p.m);
        let sizes = [
            span(a_rows, a_cols, lda),
            span(b_rows, b_cols, ldb),
            span(p.m, p.n, ldc),
        ];
        // Packed batches: each batch stride is the operand's span.
        let strides = sizes;
        let total = |i: usize| (sizes[i] + u64::from(p.batch - 1) * strides[i]) as usize;
        let a: Vec<i64> = (0..total(0)).map(|_| rng.below(3) as i64 - 1).collect();
        let b: Vec<i64> = (0..total(1)).map(|_| rng.below(3) as i64 - 1).collect();
        let c: Vec<i64> = (0..total(2)).map(|_| rng.below(7) as i64 - 3).collect();
        let bytes = |ty: Ty, v: &[i64]| {
            let mut out = Vec::with_capacity(v.len() * ty.bytes());
            for &x in v {
                ty.encode(x, &mut out);
            }
            out
        };
        let mem = device.memory();
        let mut buffers = [0u64; 4];
        for (slot, data) in [
            bytes(kernel.ab, &a),
            bytes(kernel.ab, &b),
            bytes(kernel.cd, &c),
            vec![0xFF; total(2) * kernel.cd.bytes()],
        ]
        .into_iter()
        .enumerate()
        {
            buffers[slot] = mem.alloc_bytes(&data).map_err(|e| format!("{what}: {e}"))?;
        }
        let [a_dev, b_dev, c_dev, d_dev] = buffers;

        let [mt0, mt1, _] = kernel.tile;
        let (nwg0, nwg1) = (p.m.div_ceil(mt0), p.n.div_ceil(mt1));
        let mut kargs = vec![0u8; meta.kernarg_segment_size as usize];
        let mut put = |name: &str, bytes: &[u8]| -> Result<(), String> {
            let arg = meta
                .args
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
                .ok_or_else(|| format!("{}: no argument {name}", kernel.what))?;
            if arg.size as usize != bytes.len() {
                return Err(format!("{}: {name} is {} bytes", kernel.what, arg.size));
            }
            let at = arg.offset as usize;
            kargs
                .get_mut(at..at + bytes.len())
                .ok_or_else(|| format!("{}: {name} lies outside the kernargs", kernel.what))?
                .copy_from_slice(bytes);
            Ok(())
        };
        let scalar = |v: i64| {
            let mut out = Vec::new();
            kernel.scalar.encode(v, &mut out);
            out
        };
        for (name, v) in [("D", d_dev), ("C", c_dev), ("A", a_dev), ("B", b_dev)] {
            put(name, &v.to_le_bytes())?;
        }
        put("alpha", &scalar(p.alpha))?;
        put("beta", &scalar(p.beta))?;
        for (name, v) in [
            ("strideD0", ldc),
            ("strideD1", strides[2] as u32),
            ("strideC0", ldc),
            ("strideC1", strides[2] as u32),
            ("strideA0", lda),
            ("strideA1", strides[0] as u32),
            ("strideB0", ldb),
            ("strideB1", strides[1] as u32),
            ("SizesFree0", p.m),
            ("SizesFree1", p.n),
            ("SizesFree2", p.batch),
            ("SizesSum0", p.k),
        ] {
            put(name, &v.to_le_bytes())?;
        }
        let threads = u32::from(kernel.threads);
        // Tensile's grid, and hipBLASLt's on GFX12; GFX11 flattens it.
        let mut grid = [nwg0 * threads, nwg1, p.batch];
        match kernel.abi {
            Abi::UserArgs => {
                if device.target.family() != aqueduct_abi::kernel_descriptor::GfxFamily::Gfx12 {
                    grid = [nwg0 * nwg1 * p.batch * threads, 1, 1];
                }
                // One GEMM, its arguments inline; GSU 1, no StaggerU;
                // WorkGroupMapping in the low half (module doc of `Abi`);
                // the launch's workgroup count in x.
                for (name, v) in [
                    ("Gemm info", 1),
                    ("kernel info0", 1),
                    ("kernel info1", kernel.wgm & 0xFFFF),
                    ("numWG", grid[0] / threads),
                ] {
                    put(name, &u32::to_le_bytes(v))?;
                }
            }
            Abi::Tensile => {
                put("sizeC", &(total(2) as u64).to_le_bytes())?;
                put("sizeA", &sizes[0].to_le_bytes())?;
                put("sizeB", &sizes[1].to_le_bytes())?;
                for name in ["OffsetD", "OffsetC", "OffsetA", "OffsetB"] {
                    put(name, &0u64.to_le_bytes())?;
                }
                tensile_arguments(kernel, p, (nwg0, nwg1), &mut put)?;
            }
        }
        Ok(Case {
            what,
            kernel,
            p,
            a,
            b,
            c,
            lda,
            ldb,
            ldc,
            strides,
            buffers,
            d_len: total(2),
            kargs,
            reference: std::sync::OnceLock::new(),
            grid,
            workgroup: [kernel.threads, 1, 1],
        })
    }

    /// Runs the kernel once.
    pub fn run(&self, device: &Gpu, program: &Program) -> Result<Stats, String> {
        device
            .run(
                program,
                self.kernel.name,
                self.grid,
                self.workgroup,
                &self.kargs,
            )
            .map_err(|e| format!("{}: {e}", self.what))
    }

    /// Re-poisons D, for another run.
    pub fn poison(&self, device: &Gpu) -> Result<(), String> {
        let bytes = vec![0xFF; self.d_len * self.kernel.cd.bytes()];
        device
            .memory()
            .write_bytes(self.buffers[3], &bytes)
            .map_err(|e| e.to_string())
    }

    /// D = alpha A B + beta C in exact integers, for every element of D's
    /// storage (batch-major, column-major within).
    fn reference(&self) -> &[f64] {
        self.reference.get_or_init(|| {
            let (k, p) = (self.kernel, self.p);
            let [sa, sb, sc] = self.strides.map(|s| s as usize);
            let (lda, ldb, ldc) = (self.lda as usize, self.ldb as usize, self.ldc as usize);
            let mut d = vec![f64::NAN; self.d_len];
            for bi in 0..p.batch as usize {
                for j in 0..p.n as usize {
                    for i in 0..p.m as usize {
                        let mut acc = 0i64;
                        for l in 0..p.k as usize {
                            let av = if k.trans_a {
                                self.a[bi * sa + l + i * lda]
                            } else {
                                self.a[bi * sa + i + l * lda]
                            };
                            let bv = if k.trans_b {
                                self.b[bi * sb + j + l * ldb]
                            } else {
                                self.b[bi * sb + l + j * ldb]
                            };
                            acc += av * bv;
                        }
                        let at = bi * sc + i + j * ldc;
                        d[at] = (p.alpha * acc + p.beta * self.c[at]) as f64;
                    }
                }
            }
            d
        })
    }

    /// D against the CPU, exactly: an error names the first few wrong
    /// elements and counts them.
    pub fn check(&self, device: &Gpu) -> Result<(), String> {
        let ty = self.kernel.cd;
        let out = device
            .memory()
            .read_vec(self.buffers[3], self.d_len * ty.bytes())
            .map_err(|e| e.to_string())?;
        let mut wrong = Vec::new();
        let mut count = 0usize;
        for (at, &want) in self.reference().iter().enumerate() {
            // Packed batches: every element of D's storage is one of D's.
            let got = ty.decode(&out[at * ty.bytes()..]);
            if got != want {
                if wrong.len() < 5 {
                    let (m, ldc) = (self.p.m as usize, self.ldc as usize);
                    let sc = self.strides[2] as usize;
                    let (bi, rest) = (at / sc, at % sc);
                    let (i, j) = (rest % ldc, rest / ldc);
                    debug_assert!(i < m);
                    wrong.push(format!("D[{i}, {j}, {bi}] = {got}, want {want}"));
                }
                count += 1;
            }
        }
        if count == 0 {
            return Ok(());
        }
        Err(format!(
            "{}: {count} wrong elements: {}",
            self.what,
            wrong.join("; ")
        ))
    }

    /// Frees the case's buffers.
    pub fn free(self, device: &Gpu) {
        for a in self.buffers {
            let _ = device.memory().free(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_in_the_names_give_the_asserted_multiples() {
        // Tensile 4.36 (AF0EM/AF1EM) and TensileLite (AFEM, AFEM) names.
        let all = KERNELS.iter().chain(KERNELS_GFX1100);
        let all = all.chain(HIPBLASLT_GFX1100).chain(HIPBLASLT_GFX1201);
        for k in all {
            let want = if k.name.contains("AFEM4_AFEM4") {
                [4, 4]
            } else {
                [1, 1]
            };
            assert_eq!(k.asserted_multiples(), want, "{}", k.what);
        }
        assert_eq!(HIPBLASLT_GFX1201[4].asserted_multiples(), [4, 4]);
        assert_eq!(HIPBLASLT_GFX1201[0].asserted_k_multiple(), 1);
        assert_eq!(HIPBLASLT_GFX1201[5].asserted_k_multiple(), 32);
    }
}
