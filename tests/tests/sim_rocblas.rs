//! GEMM kernels compiled by AMD's toolchain (rocBLAS 5.5.1's Tensile
//! assembly kernels for gfx90a, from Debian trixie's `librocblas0`) run on
//! the simulator with exactly sized buffers at odd sizes, against an f64
//! CPU reference. Code this project did not write is the simulator's
//! harder judge: these kernels found its d16, LDS-range, allocation and
//! load-to-LDS defects (issue 17).
//!
//! The kernels are taken out of the package's 396 MB code object into a
//! small one (`xtask::rocblas_kernels`). Their arguments follow Tensile's
//! host code (`ContractionSolution::generateSingleCall`, Tensile 4.36):
//! tensor sizes in elements, `ld` and batch strides, the problem sizes,
//! the work-group counts, the StaggerU mask and the WorkGroupMapping
//! remainder with its magic number (2^31 / r + 1); the launch is
//! `(ceil(M / MT0), ceil(N / MT1), batch)` work-groups of `WG0 · WG1`
//! work-items in one dimension. Argument offsets come from each kernel's
//! metadata, by name.
//!
//! Inputs are small integers, so every product and sum is exact in every
//! type the kernels compute in and every result is exactly representable
//! in the output type: the comparison is exact, whatever order the MFMA
//! accumulates in.

use aqueduct_abi::code_object::metadata::KernelMetadata;
use aqueduct_sim::{Device, Program, Target};
use aqueduct_tests::Rng;

/// Element types as the kernels store them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    F32,
    F64,
    F16,
    Bf16,
    I8,
    I32,
}

impl Ty {
    fn bytes(self) -> usize {
        match self {
            Ty::F64 => 8,
            Ty::F32 | Ty::I32 => 4,
            Ty::F16 | Ty::Bf16 => 2,
            Ty::I8 => 1,
        }
    }

    /// The encoding of integer `v` (exact in every type for the values the
    /// test uses).
    fn encode(self, v: i64, out: &mut Vec<u8>) {
        match self {
            Ty::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            Ty::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
            Ty::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            Ty::I8 => out.push(v as i8 as u8),
            // bf16 is the high half of the f32.
            Ty::Bf16 => out.extend_from_slice(&(((v as f32).to_bits() >> 16) as u16).to_le_bytes()),
            Ty::F16 => out.extend_from_slice(&f16_of_integer(v).to_le_bytes()),
        }
    }

    fn decode(self, b: &[u8]) -> f64 {
        match self {
            Ty::F32 => f64::from(f32::from_le_bytes(b[..4].try_into().unwrap())),
            Ty::F64 => f64::from_le_bytes(b[..8].try_into().unwrap()),
            Ty::I32 => f64::from(i32::from_le_bytes(b[..4].try_into().unwrap())),
            Ty::I8 => f64::from(b[0] as i8),
            Ty::Bf16 => {
                let h = u16::from_le_bytes([b[0], b[1]]);
                f64::from(f32::from_bits(u32::from(h) << 16))
            }
            Ty::F16 => f16_value(u16::from_le_bytes([b[0], b[1]])),
        }
    }
}

/// IEEE binary16 bits of an integer of magnitude below 2048 (exact).
fn f16_of_integer(v: i64) -> u16 {
    let sign = if v < 0 { 0x8000 } else { 0 };
    let m = v.unsigned_abs();
    assert!(m < 2048, "{v} is not exact in f16");
    if m == 0 {
        return sign;
    }
    let e = 63 - m.leading_zeros() as u64; // 2^e <= m < 2^(e+1)
    let frac = (m << (10 - e)) & 0x3FF;
    sign | ((e + 15) << 10) as u16 | frac as u16
}

/// The value of IEEE binary16 bits (normal, subnormal, zero, inf, NaN).
fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = i32::from(h >> 10 & 0x1F);
    let f = f64::from(h & 0x3FF);
    sign * match e {
        0 => f * 2f64.powi(-24),
        31 if f == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + f / 1024.0) * 2f64.powi(e - 15),
    }
}

/// One of AMD's kernels and what its name says about it.
struct Kernel {
    what: &'static str,
    name: &'static str,
    /// A/B, C/D and alpha/beta types.
    ab: Ty,
    cd: Ty,
    scalar: Ty,
    trans_a: bool,
    trans_b: bool,
    /// MT0, MT1, DepthU.
    tile: [u32; 3],
    /// Work-items per work-group (WG0 · WG1 · WG2).
    threads: u16,
    /// WorkGroupMapping.
    wgm: u32,
    /// StaggerU and the catalog's staggerStrideShift.
    stagger_u: u32,
    stagger_shift: u32,
}

/// The kernels of `xtask::rocblas_kernels::NAMES`, in its order, with what
/// their names say (`MT` tile and DepthU, `WG` work-group, `WGM`, `SU`; the
/// StaggerU stride shift is log2(`SUS` / (DepthU × element bytes))).
const KERNELS: &[Kernel] = &[
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
    },
];

/// A GEMM problem: D = alpha A B + beta C, column-major as rocBLAS's.
#[derive(Clone, Copy, Debug)]
struct Problem {
    m: u32,
    n: u32,
    k: u32,
    batch: u32,
    alpha: i64,
    beta: i64,
}

/// Elements a column-major `rows × cols` operand with leading dimension
/// `ld` spans, and its batch stride (packed).
fn span(rows: u32, cols: u32, ld: u32) -> u64 {
    1 + u64::from(rows - 1) + u64::from(cols - 1) * u64::from(ld)
}

struct Run<'a> {
    device: &'a Device,
    program: &'a Program,
    meta: &'a KernelMetadata,
    kargs: Vec<u8>,
}

impl Run<'_> {
    fn put(&mut self, name: &str, bytes: &[u8]) {
        let arg = self
            .meta
            .args
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{}: no argument {name}", self.meta.name));
        assert_eq!(arg.size as usize, bytes.len(), "{name}");
        let at = arg.offset as usize;
        self.kargs[at..at + bytes.len()].copy_from_slice(bytes);
    }
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

fn run_case(device: &Device, program: &Program, kernel: &Kernel, p: Problem, rng: &mut Rng) {
    let code = program
        .kernel(kernel.name)
        .expect("kernel in the code object");
    let meta = &code.metadata;
    let what = format!("{} {}x{}x{} batch {}", kernel.what, p.m, p.n, p.k, p.batch);
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
    let (size_a, size_b, size_c) = (
        span(a_rows, a_cols, lda),
        span(b_rows, b_cols, ldb),
        span(p.m, p.n, ldc),
    );
    let (stride_a, stride_b, stride_c) = (size_a, size_b, size_c);
    let total = |size: u64, stride: u64| size + u64::from(p.batch - 1) * stride;
    // Inputs in {-1, 0, 1}, C in [-3, 3]: exact everywhere (module doc).
    let a: Vec<i64> = (0..total(size_a, stride_a))
        .map(|_| rng.below(3) as i64 - 1)
        .collect();
    let b: Vec<i64> = (0..total(size_b, stride_b))
        .map(|_| rng.below(3) as i64 - 1)
        .collect();
    let c: Vec<i64> = (0..total(size_c, stride_c))
        .map(|_| rng.below(7) as i64 - 3)
        .collect();
    let bytes = |ty: Ty, v: &[i64]| {
        let mut out = Vec::new();
        for &x in v {
            ty.encode(x, &mut out);
        }
        out
    };
    let mem = device.memory();
    let up = |b: &[u8]| mem.alloc_bytes(b).expect("alloc");
    let (a_dev, b_dev, c_dev) = (
        up(&bytes(kernel.ab, &a)),
        up(&bytes(kernel.ab, &b)),
        up(&bytes(kernel.cd, &c)),
    );
    // D: exactly sized, poisoned (0xFF bytes: NaN or -1).
    let d_len = total(size_c, stride_c) as usize;
    let d_dev = up(&vec![0xFF; d_len * kernel.cd.bytes()]);

    let [mt0, mt1, depth_u] = kernel.tile;
    let (nwg0, nwg1) = (p.m.div_ceil(mt0), p.n.div_ceil(mt1));
    let mut run = Run {
        device,
        program,
        meta,
        kargs: vec![0; meta.kernarg_segment_size as usize],
    };
    let scalar = |v: i64| {
        let mut out = Vec::new();
        kernel.scalar.encode(v, &mut out);
        out
    };
    run.put("sizeC", &total(size_c, stride_c).to_le_bytes());
    run.put("sizeA", &size_a.to_le_bytes());
    run.put("sizeB", &size_b.to_le_bytes());
    run.put("D", &d_dev.to_le_bytes());
    run.put("C", &c_dev.to_le_bytes());
    run.put("A", &a_dev.to_le_bytes());
    run.put("B", &b_dev.to_le_bytes());
    for o in ["OffsetD", "OffsetC", "OffsetA", "OffsetB"] {
        run.put(o, &0u64.to_le_bytes());
    }
    run.put("alpha", &scalar(p.alpha));
    run.put("beta", &scalar(p.beta));
    for (name, v) in [
        ("strideD0", ldc),
        ("strideD1", stride_c as u32),
        ("strideC0", ldc),
        ("strideC1", stride_c as u32),
        ("strideA0", lda),
        ("strideA1", stride_a as u32),
        ("strideB0", ldb),
        ("strideB1", stride_b as u32),
        ("SizesFree0", p.m),
        ("SizesFree1", p.n),
        ("SizesFree2", p.batch),
        ("SizesSum0", p.k),
        (
            "OrigStaggerUIter",
            stagger_iter(p.k, depth_u, kernel.stagger_u, kernel.stagger_shift),
        ),
        ("NumWorkGroups0", nwg0),
        ("NumWorkGroups1", nwg1),
    ] {
        run.put(name, &v.to_le_bytes());
    }
    let (full, rem) = if kernel.wgm == 0 {
        (nwg1, 0)
    } else {
        let r = nwg1 % kernel.wgm;
        (nwg1 / kernel.wgm, if r == 0 { kernel.wgm } else { r })
    };
    let magic = if rem == 0 {
        0
    } else {
        ((1u64 << 31) / u64::from(rem) + 1) as u32
    };
    run.put("NumFullBlocks", &full.to_le_bytes());
    run.put("WgmRemainder1", &rem.to_le_bytes());
    run.put("MagicNumberWgmRemainder1", &magic.to_le_bytes());

    let grid = [nwg0 * u32::from(kernel.threads), nwg1, p.batch];
    run.device
        .run(
            run.program,
            kernel.name,
            grid,
            [kernel.threads, 1, 1],
            &run.kargs,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));

    let out = mem
        .read_vec(d_dev, d_len * kernel.cd.bytes())
        .expect("read D");
    let mut bad = 0;
    for bi in 0..p.batch as usize {
        for j in 0..p.n as usize {
            for i in 0..p.m as usize {
                let mut acc = 0i64;
                for l in 0..p.k as usize {
                    let av = if kernel.trans_a {
                        a[bi * stride_a as usize + l + i * lda as usize]
                    } else {
                        a[bi * stride_a as usize + i + l * lda as usize]
                    };
                    let bv = if kernel.trans_b {
                        b[bi * stride_b as usize + j + l * ldb as usize]
                    } else {
                        b[bi * stride_b as usize + l + j * ldb as usize]
                    };
                    acc += av * bv;
                }
                let at = bi * stride_c as usize + i + j * ldc as usize;
                let want = (p.alpha * acc + p.beta * c[at]) as f64;
                let got = kernel.cd.decode(&out[at * kernel.cd.bytes()..]);
                if got != want {
                    if bad < 5 {
                        eprintln!("{what}: D[{i}, {j}, {bi}] = {got}, want {want}");
                    }
                    bad += 1;
                }
            }
        }
    }
    assert_eq!(bad, 0, "{what}: {bad} wrong elements");
    for a in [a_dev, b_dev, c_dev, d_dev] {
        mem.free(a).expect("free");
    }
}

#[test]
fn amd_compiled_gemm_kernels_match_the_cpu_at_odd_sizes() {
    let path = xtask::rocblas_catalog::fetch_gemm_kernels()
        .unwrap_or_else(|e| panic!("AMD's GEMM kernels (needs network once): {e}"));
    let bytes = std::fs::read(&path).expect("read the kernels");
    let device = Device::new(Target::Gfx90a).with_threads(2);
    let program = device.load(&bytes).expect("load");
    let names: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
    assert_eq!(names, xtask::rocblas_kernels::NAMES);
    let mut rng = Rng(0x90A_6E33);
    for kernel in KERNELS {
        for p in [
            Problem {
                m: 37,
                n: 21,
                k: 9,
                batch: 2,
                alpha: 2,
                beta: -1,
            },
            Problem {
                m: 250,
                n: 190,
                k: 70,
                batch: 1,
                alpha: 1,
                beta: 0,
            },
        ] {
            run_case(&device, &program, kernel, p, &mut rng);
        }
    }
}
