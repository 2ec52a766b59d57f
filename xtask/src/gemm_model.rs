//! A throughput model of GEMM kernels: **modelled** figures, not
//! measurements. No AMD GPU is here, so `cargo xtask gemm-report --model`
//! estimates what a kernel would do on each product from its main loop's
//! instructions and AMD's published per-instruction and per-CU figures.
//!
//! # The model
//!
//! A kernel's main loop ([`Mix`], counted per wave per iteration from the
//! disassembly) runs on every wave of each workgroup resident on a CU at
//! once. One iteration of all of them takes as long as the busiest of the
//! CU's pipes:
//!
//! ```text
//!   matrix   per SIMD: Σ cycles of its waves' MFMA/WMMA (one matrix unit
//!            per SIMD; a new MFMA waits for the previous one's passes)
//!   VALU     per SIMD: vector ALU ops × cycles per op (wave64 on SIMD16:
//!            4; wave32 on SIMD32: 1). CDNA's MFMA runs beside VALU work;
//!            RDNA's WMMA runs on the SIMD's own ALUs, so there the two add
//!   issue    per SIMD: CDNA issues to a SIMD every 4th cycle, at most one
//!            instruction per category (VALU incl. matrix, scalar, vector
//!            memory, LDS, branch), each from a different wave: a lone
//!            wave issues its whole loop in turn; RDNA (assumed: no AMD
//!            figure found) every cycle, the same rules
//!   LDS      per CU: bytes read and written ÷ LDS bytes per clock
//!   vmem     per CU: bytes loaded ÷ L1 bytes per clock
//! ```
//!
//! The problem then runs `ceil(tiles ÷ (CUs × resident workgroups))`
//! rounds of `ceil(K ÷ K per iteration)` iterations (tile quantisation:
//! the last round may leave CUs idle; its iterations are as slow as the
//! pipes of its fewer workgroups allow), bounded below by two rooflines:
//! L2, for the A and B panels every workgroup reads and the tile it writes
//! (what makes small tiles costly on large problems; CDNA only, where
//! rocprofiler-compute gives the L2 peak), and DRAM, for the bytes the
//! problem must move at least once.
//!
//! [`choose`] ranks kernels for a problem by that time; the catalogs'
//! size tables are chosen so (`gemm_catalog::choice`).
//!
//! What it leaves out, so a figure can only flatter: latency (memory,
//! dependent MFMAs) beyond what the pipes hide, the prologue and the
//! epilogue's arithmetic, caches other than by the two rooflines, clocks
//! below the peak engine clock. (One way it is strict instead: a panel
//! two workgroups of one CU share through L1 counts as L2 traffic twice.)
//!
//! # Sources
//!
//! Each figure names its source beside it (the research note behind them
//! lists the documents: AMD's matrix instruction calculator, the CDNA4 ISA
//! guide's MFMA table, rocprofiler-compute's peak formulas, AMD's product
//! pages and whitepapers as cited by IREE's target tables); a figure no
//! AMD source gave is marked "assumed".

use aqueduct_abi::gfx::{PRODUCTS, Product};

/// Per-CU pipe rates of a processor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pipes {
    pub gfx: &'static str,
    /// SIMDs per CU, each with one matrix unit (CDNA: 4 × SIMD16; RDNA: 2
    /// × SIMD32 per CU, 4 per WGP). rocprofiler-compute "pipeline
    /// descriptions"; Linux "drm/amdgpu: Update NV SIMD-per-CU to 2".
    pub simds: u32,
    /// Lanes a SIMD computes per cycle (16 on CDNA, 32 on RDNA).
    pub simd_lanes: u32,
    /// Cycles between a SIMD's issue opportunities (CDNA: the scheduler
    /// visits the four SIMDs in turn; RDNA: every cycle).
    pub issue_period: u32,
    /// LDS bytes per clock per CU.
    pub lds_bytes_per_clock: u32,
    /// Vector L1 (L0 on RDNA) bytes per clock per CU.
    pub l1_bytes_per_clock: u32,
    /// Whether matrix instructions run beside VALU work (CDNA: yes, in
    /// their shadow; RDNA: WMMA uses the SIMD's ALUs; the calculator's
    /// "can co-execute with VALU").
    pub matrix_beside_valu: bool,
    /// Where the LDS and L1 figures come from.
    pub source: &'static str,
}

/// The five default targets' pipes.
pub const PIPES: &[Pipes] = &[
    Pipes {
        gfx: "gfx90a",
        simds: 4,
        simd_lanes: 16,
        issue_period: 4,
        lds_bytes_per_clock: 128,
        l1_bytes_per_clock: 64,
        matrix_beside_valu: true,
        source: "rocprofiler-compute: LDS 32 banks × 4 B = 128 B/clk; vL1D peak 64 B/clk/CU (gfx90a SOL)",
    },
    Pipes {
        gfx: "gfx942",
        simds: 4,
        simd_lanes: 16,
        issue_period: 4,
        lds_bytes_per_clock: 128,
        l1_bytes_per_clock: 128,
        matrix_beside_valu: true,
        source: "rocprofiler-compute: LDS 128 B/clk; vL1D 128 B/clk/CU (gfx942 SOL); AMD CDNA4 FP8 GEMM blog Table 1 (CDNA3 LDS 128 B/clk)",
    },
    Pipes {
        gfx: "gfx950",
        simds: 4,
        simd_lanes: 16,
        issue_period: 4,
        lds_bytes_per_clock: 256,
        l1_bytes_per_clock: 128,
        matrix_beside_valu: true,
        source: "AMD CDNA4 FP8 GEMM blog Table 1 (LDS 256 B/clk, 160 KiB); rocprofiler-compute gfx950 SOL (vL1D 128 B/clk/CU)",
    },
    Pipes {
        gfx: "gfx1100",
        simds: 2,
        simd_lanes: 32,
        issue_period: 1,
        lds_bytes_per_clock: 128,
        l1_bytes_per_clock: 128,
        matrix_beside_valu: false,
        source: "assumed: LDS 64 banks × 4 B per WGP (IREE's target table) shared by its 2 CUs; L0 128 B/clk/CU (no AMD figure found)",
    },
    Pipes {
        gfx: "gfx1201",
        simds: 2,
        simd_lanes: 32,
        issue_period: 1,
        lds_bytes_per_clock: 128,
        l1_bytes_per_clock: 128,
        matrix_beside_valu: false,
        source: "assumed, as gfx1100 (no AMD figure found)",
    },
];

/// A processor's pipes.
pub fn pipes(gfx: &str) -> Option<&'static Pipes> {
    PIPES.iter().find(|p| p.gfx == gfx)
}

/// What a product adds to its processor's pipes: memory bandwidth and the
/// dense matrix peaks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProductModel {
    /// `aqueduct_abi::gfx::PRODUCTS` key (CUs and peak engine clock).
    pub key: &'static str,
    pub name: &'static str,
    /// Peak DRAM bandwidth, bytes per second.
    pub dram_bytes_per_second: f64,
    /// Peak L2 bandwidth of the whole GPU, bytes per clock, where AMD
    /// publishes one (rocprofiler-compute's speed-of-light peaks: bytes per
    /// clock per channel × channels).
    pub l2_bytes_per_clock: Option<u32>,
    /// Dense matrix FLOPs (ops) per clock per CU by input type.
    pub peak_per_cu_clock: &'static [(Input, u32)],
    pub source: &'static str,
}

/// Input element types the model knows peaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    F32,
    Xf32,
    F16,
    Bf16,
    Fp8,
    /// FP6 (E2M3) and BF6 (E3M2): gfx950's MXFP6.
    Fp6,
    /// FP4 (E2M1): gfx950's MXFP4.
    Fp4,
    I8,
}

impl Input {
    /// The name the report prints.
    pub fn name(self) -> &'static str {
        match self {
            Input::F32 => "f32",
            Input::Xf32 => "xf32",
            Input::F16 => "f16",
            Input::Bf16 => "bf16",
            Input::Fp8 => "fp8",
            Input::Fp6 => "fp6",
            Input::Fp4 => "fp4",
            Input::I8 => "i8",
        }
    }
}

/// The five products the model reports.
pub const PRODUCT_MODELS: &[ProductModel] = &[
    ProductModel {
        key: "mi210",
        name: "MI210",
        dram_bytes_per_second: 1.6e12,
        // 64 B/clk per channel × 32 channels.
        l2_bytes_per_clock: Some(64 * 32),
        peak_per_cu_clock: &[
            (Input::F32, 256),
            (Input::F16, 1024),
            (Input::Bf16, 1024),
            (Input::I8, 1024),
        ],
        source: "AMD MI250 peak table (FLOPS/clock/CU); 1.6 TB/s, AMD CDNA2 whitepaper as IREE cites it; L2 64 B/clk × 32 channels, rocprofiler-compute gfx90a speed of light and its L2 chapter",
    },
    ProductModel {
        key: "mi300x",
        name: "MI300X",
        dram_bytes_per_second: 5.3e12,
        // 128 B/clk per channel × 16 channels per XCD × 8 XCDs.
        l2_bytes_per_clock: Some(128 * 16 * 8),
        peak_per_cu_clock: &[
            (Input::F32, 256),
            (Input::Xf32, 1024),
            (Input::F16, 2048),
            (Input::Bf16, 2048),
            (Input::Fp8, 4096),
            (Input::I8, 4096),
        ],
        source: "AMD MI300X peak-performance table (FLOPS/clock/CU, 5.3 TB/s); L2 128 B/clk × 16 channels per XCD, rocprofiler-compute gfx942 speed of light and SoC table",
    },
    ProductModel {
        key: "mi355x",
        name: "MI355X",
        dram_bytes_per_second: 8.0e12,
        // 128 B/clk per channel × 16 channels per XCD × 8 XCDs.
        l2_bytes_per_clock: Some(128 * 16 * 8),
        peak_per_cu_clock: &[
            (Input::F32, 256),
            (Input::F16, 4096),
            (Input::Bf16, 4096),
            (Input::Fp8, 8192),
            (Input::Fp6, 16384),
            (Input::Fp4, 16384),
            (Input::I8, 8192),
        ],
        source: "AMD matrix-core blog (CDNA3/CDNA4) peaks (FP6/FP4 64× FP32, twice FP8), CDNA4 whitepaper Table 1 as XLA cites it; 8.0 TB/s, CDNA4 whitepaper as IREE cites it; L2 128 B/clk × 16 channels per XCD, rocprofiler-compute gfx950 speed of light and SoC table",
    },
    ProductModel {
        key: "rx7900xtx",
        name: "RX 7900 XTX",
        dram_bytes_per_second: 960e9,
        l2_bytes_per_clock: None,
        peak_per_cu_clock: &[(Input::F16, 512), (Input::Bf16, 512), (Input::I8, 512)],
        source: "GPUOpen 'WMMA on RDNA 3' FLOPS/clock/CU table; 384-bit × 20 Gbps GDDR6 = 960 GB/s (AMD spec sheet as press pages quote it); no L2 figure found, so no L2 roofline",
    },
    ProductModel {
        key: "rx9070xt",
        name: "RX 9070 XT",
        dram_bytes_per_second: 640e9,
        l2_bytes_per_clock: None,
        peak_per_cu_clock: &[
            (Input::F16, 1024),
            (Input::Bf16, 1024),
            (Input::Fp8, 2048),
            (Input::I8, 2048),
        ],
        source: "AMD matrix instruction calculator, RDNA4 (FLOPs/WGP/cycle ÷ 2); 640 GB/s, amd.com as IREE cites it; no L2 figure found, so no L2 roofline",
    },
];

impl ProductModel {
    /// The product's CUs and clock.
    pub fn product(&self) -> Option<&'static Product> {
        PRODUCTS.iter().find(|p| p.key == self.key)
    }

    /// Its processor.
    pub fn gfx(&self) -> &'static str {
        self.product().map_or("", |p| p.chip().gfx)
    }

    /// The machine the model runs kernels on: this product.
    pub fn machine(&self) -> Option<Machine> {
        let p = self.product()?;
        Some(Machine {
            pipes: pipes(self.gfx())?,
            cus: p.compute_units,
            clock_mhz: p.max_clock_mhz,
            dram_bytes_per_second: self.dram_bytes_per_second,
            l2_bytes_per_clock: self.l2_bytes_per_clock.map(f64::from),
        })
    }

    /// Dense matrix peak for `input`, FLOP/s (op/s), if it has one.
    pub fn peak(&self, input: Input) -> Option<f64> {
        let p = self.product()?;
        let per = self.peak_per_cu_clock.iter().find(|(t, _)| *t == input)?.1;
        Some(f64::from(per) * f64::from(p.compute_units) * f64::from(p.max_clock_mhz) * 1e6)
    }
}

/// What the model needs of a GPU: its processor's pipes, its CUs, its
/// clock and its DRAM bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    pub pipes: &'static Pipes,
    pub cus: u32,
    pub clock_mhz: u32,
    pub dram_bytes_per_second: f64,
    /// L2 bytes per clock, if known.
    pub l2_bytes_per_clock: Option<f64>,
}

/// A product of processor `gfx` with `cus` CUs: the modelled product of
/// that processor ([`PRODUCT_MODELS`]: its clock and DRAM bandwidth) with
/// that CU count, and L2 bandwidth in proportion to its CUs (L2 channels
/// come with XCDs: an MI300A has 6 of the MI300X's 8). The catalogs'
/// product rows (an MI300A's 228 CUs, an MI308X's 80, an MI250X GCD's
/// 110) are modelled so.
pub fn machine_for(gfx: &str, cus: u32) -> Option<Machine> {
    let model = PRODUCT_MODELS.iter().find(|p| p.gfx() == gfx)?;
    let base = model.machine()?;
    Some(Machine {
        cus,
        l2_bytes_per_clock: base
            .l2_bytes_per_clock
            .map(|b| b * f64::from(cus) / f64::from(base.cus.max(1))),
        ..base
    })
}

/// One matrix instruction's cost: cycles its SIMD's matrix unit is busy
/// (issue to next issue) and the FLOPs (ops) it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixCost {
    pub cycles: u32,
    pub flops: u64,
}

/// What [`crate::gemm_report::Line::model_name`] appends to an f8f6f4
/// MFMA whose A and B are both FP6, BF6 or FP4 (`cbsz:`/`blgp:` 2-4).
pub const NARROW_F8F6F4: &str = "(fp6/fp4)";

/// Matrix instructions' cycles per processor, as `llvm-objdump` spells
/// them. gfx90a, gfx942: AMD's matrix instruction calculator (`cdna2`,
/// `cdna3`); gfx950: the CDNA4 ISA guide, Table 28 "MFMA VALU Opcodes"
/// (the f8f6f4 forms: the larger count when an operand is FP8/BF8; with
/// both operands FP6/BF6/FP4, [`NARROW_F8F6F4`], half of it: AMD's
/// matrix-core blog gives CDNA4 FP6/FP4 twice FP8's rate, which is how
/// the halved count is derived here; Table 28's own smaller figure was
/// not re-read); gfx1100, gfx1201: the calculator (`rdna3`, `rdna4`).
const MATRIX_CYCLES: &[(&str, &str, u32)] = &[
    ("gfx90a", "v_mfma_f32_32x32x8f16", 64),
    ("gfx90a", "v_mfma_f32_16x16x16f16", 32),
    ("gfx90a", "v_mfma_f32_32x32x8bf16_1k", 64),
    ("gfx90a", "v_mfma_f32_16x16x16bf16_1k", 32),
    ("gfx90a", "v_mfma_f32_32x32x4bf16", 64),
    ("gfx90a", "v_mfma_f32_16x16x8bf16", 32),
    ("gfx90a", "v_mfma_f32_32x32x2f32", 64),
    ("gfx90a", "v_mfma_f32_16x16x4f32", 32),
    ("gfx90a", "v_mfma_i32_32x32x8i8", 64),
    ("gfx90a", "v_mfma_i32_16x16x16i8", 32),
    ("gfx90a", "v_mfma_f64_16x16x4f64", 32),
    ("gfx942", "v_mfma_f32_32x32x8_f16", 32),
    ("gfx942", "v_mfma_f32_16x16x16_f16", 16),
    ("gfx942", "v_mfma_f32_32x32x8_bf16", 32),
    ("gfx942", "v_mfma_f32_16x16x16_bf16", 16),
    ("gfx942", "v_mfma_f32_16x16x32_fp8_fp8", 16),
    ("gfx942", "v_mfma_f32_16x16x32_bf8_bf8", 16),
    ("gfx942", "v_mfma_f32_16x16x32_fp8_bf8", 16),
    ("gfx942", "v_mfma_f32_16x16x32_bf8_fp8", 16),
    ("gfx942", "v_mfma_f32_32x32x16_fp8_fp8", 32),
    ("gfx942", "v_mfma_f32_32x32x16_bf8_bf8", 32),
    ("gfx942", "v_mfma_f32_32x32x16_fp8_bf8", 32),
    ("gfx942", "v_mfma_f32_32x32x16_bf8_fp8", 32),
    ("gfx942", "v_mfma_i32_16x16x32_i8", 16),
    ("gfx942", "v_mfma_i32_32x32x16_i8", 32),
    ("gfx942", "v_mfma_f32_32x32x2_f32", 64),
    ("gfx942", "v_mfma_f32_16x16x4_f32", 32),
    ("gfx942", "v_mfma_f32_16x16x8_xf32", 16),
    ("gfx942", "v_mfma_f32_32x32x4_xf32", 32),
    ("gfx942", "v_mfma_f64_16x16x4_f64", 32),
    ("gfx950", "v_mfma_f32_32x32x16_f16", 32),
    ("gfx950", "v_mfma_f32_16x16x32_f16", 16),
    ("gfx950", "v_mfma_f32_32x32x16_bf16", 32),
    ("gfx950", "v_mfma_f32_16x16x32_bf16", 16),
    ("gfx950", "v_mfma_f32_32x32x8_f16", 32),
    ("gfx950", "v_mfma_f32_16x16x16_f16", 16),
    ("gfx950", "v_mfma_f32_32x32x8_bf16", 32),
    ("gfx950", "v_mfma_f32_16x16x16_bf16", 16),
    ("gfx950", "v_mfma_f32_16x16x128_f8f6f4", 32),
    ("gfx950", "v_mfma_f32_32x32x64_f8f6f4", 64),
    ("gfx950", "v_mfma_scale_f32_16x16x128_f8f6f4", 32),
    ("gfx950", "v_mfma_scale_f32_32x32x64_f8f6f4", 64),
    ("gfx950", "v_mfma_f32_16x16x128_f8f6f4 (fp6/fp4)", 16),
    ("gfx950", "v_mfma_f32_32x32x64_f8f6f4 (fp6/fp4)", 32),
    ("gfx950", "v_mfma_scale_f32_16x16x128_f8f6f4 (fp6/fp4)", 16),
    ("gfx950", "v_mfma_scale_f32_32x32x64_f8f6f4 (fp6/fp4)", 32),
    ("gfx950", "v_mfma_f32_16x16x32_fp8_fp8", 16),
    ("gfx950", "v_mfma_f32_16x16x32_bf8_bf8", 16),
    ("gfx950", "v_mfma_f32_32x32x16_fp8_fp8", 32),
    ("gfx950", "v_mfma_f32_32x32x16_bf8_bf8", 32),
    ("gfx950", "v_mfma_i32_16x16x64_i8", 16),
    ("gfx950", "v_mfma_i32_32x32x32_i8", 32),
    ("gfx950", "v_mfma_i32_16x16x32_i8", 16),
    ("gfx950", "v_mfma_i32_32x32x16_i8", 32),
    ("gfx950", "v_mfma_f32_32x32x2_f32", 64),
    ("gfx950", "v_mfma_f32_16x16x4_f32", 32),
    ("gfx950", "v_mfma_f64_16x16x4_f64", 64),
    ("gfx1100", "v_wmma_f32_16x16x16_f16", 32),
    ("gfx1100", "v_wmma_f32_16x16x16_bf16", 32),
    ("gfx1100", "v_wmma_f16_16x16x16_f16", 32),
    ("gfx1100", "v_wmma_bf16_16x16x16_bf16", 32),
    ("gfx1100", "v_wmma_i32_16x16x16_iu8", 32),
    ("gfx1100", "v_wmma_i32_16x16x16_iu4", 16),
    ("gfx1201", "v_wmma_f32_16x16x16_f16", 16),
    ("gfx1201", "v_wmma_f32_16x16x16_bf16", 16),
    ("gfx1201", "v_wmma_f16_16x16x16_f16", 16),
    ("gfx1201", "v_wmma_bf16_16x16x16_bf16", 16),
    ("gfx1201", "v_wmma_f32_16x16x16_fp8_fp8", 8),
    ("gfx1201", "v_wmma_f32_16x16x16_fp8_bf8", 8),
    ("gfx1201", "v_wmma_f32_16x16x16_bf8_fp8", 8),
    ("gfx1201", "v_wmma_f32_16x16x16_bf8_bf8", 8),
    ("gfx1201", "v_wmma_i32_16x16x16_iu8", 8),
    ("gfx1201", "v_wmma_i32_16x16x16_iu4", 8),
    ("gfx1201", "v_wmma_i32_16x16x32_iu4", 8),
];

/// `M×N×K` of a matrix mnemonic (`v_mfma_f32_32x32x8f16`,
/// `v_wmma_f32_16x16x16_f16`, ...).
pub fn shape(mnemonic: &str) -> Option<(u64, u64, u64)> {
    mnemonic.split('_').find_map(|field| {
        let mut dims = field.split('x');
        let m = dims.next()?.parse().ok()?;
        let n = dims.next()?.parse().ok()?;
        // K may run into the type (`8f16`, `8bf16`): its leading digits.
        let k: String = dims
            .next()?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        Some((m, n, k.parse().ok()?))
    })
}

/// The cost of matrix instruction `mnemonic` on `gfx`, if the model has
/// its cycles.
pub fn matrix_cost(gfx: &str, mnemonic: &str) -> Option<MatrixCost> {
    let cycles = MATRIX_CYCLES
        .iter()
        .find(|(g, m, _)| *g == gfx && *m == mnemonic)?
        .2;
    let (m, n, k) = shape(mnemonic)?;
    Some(MatrixCost {
        cycles,
        flops: 2 * m * n * k,
    })
}

/// What one wave does in one main-loop iteration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mix {
    /// Matrix-unit cycles (Σ over its MFMA/WMMA).
    pub matrix_cycles: u64,
    /// FLOPs (ops) of its matrix instructions.
    pub matrix_flops: u64,
    /// Matrix instructions.
    pub matrix: u64,
    /// Other vector ALU instructions (a VOPD pair counts once: it issues
    /// once).
    pub valu: u64,
    /// Scalar ALU and scalar memory instructions.
    pub scalar: u64,
    /// Vector memory instructions, and the bytes they load or store.
    pub vmem: u64,
    pub vmem_bytes: u64,
    /// LDS instructions, and the bytes they read or write.
    pub lds: u64,
    pub lds_bytes: u64,
    /// Branches.
    pub branch: u64,
    /// Matrix mnemonics the model has no cycles for.
    pub unknown: Vec<String>,
}

impl Mix {
    /// Instructions the wave issues (waits and hints aside).
    pub fn issued(&self) -> u64 {
        self.matrix + self.valu + self.scalar + self.vmem + self.lds + self.branch
    }
}

/// The mix of a main loop's instructions (mnemonics as `llvm-objdump`
/// prints them) on `gfx`, for waves of `lanes`.
pub fn mix<'a>(gfx: &str, lanes: u64, body: impl IntoIterator<Item = &'a str>) -> Mix {
    let mut m = Mix::default();
    for name in body {
        let bytes = u64::from(crate::gemm_report::access_bits(name)) * lanes / 8;
        if name.starts_with("v_mfma")
            || name.starts_with("v_smfmac")
            || name.starts_with("v_wmma")
            || name.starts_with("v_swmmac")
        {
            m.matrix += 1;
            match matrix_cost(gfx, name) {
                Some(c) => {
                    m.matrix_cycles += u64::from(c.cycles);
                    m.matrix_flops += c.flops;
                }
                None => m.unknown.push(name.to_string()),
            }
        } else if name.starts_with("ds_") {
            m.lds += 1;
            m.lds_bytes += bytes;
        } else if ["global_", "buffer_", "flat_", "scratch_"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            m.vmem += 1;
            m.vmem_bytes += bytes;
        } else if name.starts_with("s_cbranch") || name.starts_with("s_branch") {
            m.branch += 1;
        } else if is_wait(name) {
            // Waits and hints cost latency, which the model leaves out.
        } else if name.starts_with("s_") {
            m.scalar += 1;
        } else if name.starts_with("v_") {
            m.valu += 1;
        }
    }
    m
}

/// Waits, no-ops and scheduling hints.
fn is_wait(name: &str) -> bool {
    name.starts_with("s_waitcnt")
        || name.starts_with("s_wait_")
        || name == "s_nop"
        || name == "s_delay_alu"
        || name.starts_with("s_barrier")
        || name == "s_setprio"
        || name == "s_sleep"
}

/// The pipe that bounds an iteration (or the problem).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Matrix,
    Valu,
    Issue,
    Lds,
    Vmem,
    L2,
    Dram,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Matrix => "matrix",
            Bound::Valu => "valu",
            Bound::Issue => "issue",
            Bound::Lds => "lds",
            Bound::Vmem => "vmem",
            Bound::L2 => "l2",
            Bound::Dram => "dram",
        }
    }
}

/// A kernel as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// Macro-tile rows × columns.
    pub tile: (u64, u64),
    /// Waves per workgroup, and their lanes.
    pub waves: u64,
    pub lanes: u64,
    /// Waves per SIMD the kernel's registers and LDS allow.
    pub occupancy: u64,
    /// One wave's main-loop iteration.
    pub mix: Mix,
}

impl Kernel {
    /// The K one iteration covers: its workgroup's matrix FLOPs over
    /// 2 × the tile.
    pub fn k_per_iteration(&self) -> f64 {
        let (r, c) = self.tile;
        (self.mix.matrix_flops * self.waves) as f64 / (2 * r * c) as f64
    }

    /// Workgroups resident on one CU at once.
    pub fn workgroups_per_cu(&self, pipes: &Pipes) -> u64 {
        let slots = self.occupancy * u64::from(pipes.simds);
        (slots / self.waves.max(1)).max(1)
    }

    /// Cycles one CU takes for one iteration of `workgroups` resident
    /// workgroups, and the pipe that sets it.
    pub fn iteration_cycles(&self, pipes: &Pipes, workgroups: u64) -> (f64, Bound) {
        let m = &self.mix;
        let waves = (workgroups * self.waves) as f64;
        // The busiest SIMD's waves (waves spread evenly, whole).
        let per_simd = (waves / f64::from(pipes.simds)).ceil();
        let valu_cycles = (self.lanes as f64 / f64::from(pipes.simd_lanes)).max(1.0);
        let matrix = m.matrix_cycles as f64 * per_simd;
        let valu = m.valu as f64 * valu_cycles * per_simd;
        let (matrix, valu) = if pipes.matrix_beside_valu {
            (matrix, valu)
        } else {
            // One pipe: WMMA and VALU take turns.
            (matrix + valu, 0.0)
        };
        let busiest_category = [m.valu + m.matrix, m.scalar, m.vmem, m.lds, m.branch]
            .into_iter()
            .max()
            .unwrap_or(0);
        // A SIMD issues at most one instruction of each category per issue
        // cycle, each from a different wave: a wave issues at most one
        // instruction per issue cycle (AMD's GCN architecture whitepaper,
        // "up to five instructions per cycle ... from different
        // wavefronts"; CDNA keeps the GCN sequencer). So a lone wave
        // issues its whole loop in turn, whatever the categories.
        let issue_slots = (busiest_category as f64 * per_simd).max(m.issued() as f64);
        let issue = issue_slots * f64::from(pipes.issue_period);
        let lds = m.lds_bytes as f64 * waves / f64::from(pipes.lds_bytes_per_clock);
        let vmem = m.vmem_bytes as f64 * waves / f64::from(pipes.l1_bytes_per_clock);
        [
            (matrix, Bound::Matrix),
            (valu, Bound::Valu),
            (issue, Bound::Issue),
            (lds, Bound::Lds),
            (vmem, Bound::Vmem),
        ]
        .into_iter()
        .fold(
            (0.0, Bound::Matrix),
            |best, x| {
                if x.0 > best.0 { x } else { best }
            },
        )
    }
}

/// A GEMM problem: D (M × N) = A (M × K) · B (K × N), `batch` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// Bits per element of A and B (FP6's 6, FP4's 4), bytes per element
    /// of C and D.
    pub in_bits: u64,
    pub out_bytes: u64,
}

impl Problem {
    /// One M × N × K problem (batch 1) of inputs and outputs of these
    /// element sizes.
    pub fn new((m, n, k): (u64, u64, u64), in_bytes: u64, out_bytes: u64) -> Self {
        Self {
            m,
            n,
            k,
            batch: 1,
            in_bits: 8 * in_bytes,
            out_bytes,
        }
    }

    /// Its inputs of `bits` an element (a packed type's).
    pub fn with_input_bits(self, bits: u64) -> Self {
        Self {
            in_bits: bits,
            ..self
        }
    }

    /// Bytes of `elements` of A or B.
    fn input_bytes(&self, elements: u64) -> u64 {
        (elements * self.in_bits).div_ceil(8)
    }
}

/// The model's estimate for one kernel, product and problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub seconds: f64,
    /// The time the pipes alone take (`seconds` without the roofline).
    pub compute_seconds: f64,
    /// FLOP/s (2·M·N·K·batch per `seconds`).
    pub flops_per_second: f64,
    /// What bounds it.
    pub bound: Bound,
    /// Iterations' cycles per CU at full residency, and what bounds them.
    pub iteration_cycles: f64,
    /// Wave-instructions the main loops execute over the whole problem.
    pub wave_instructions: f64,
}

/// The modelled time of `problem` with `kernel` on `machine`.
pub fn estimate(kernel: &Kernel, machine: &Machine, problem: &Problem) -> Option<Estimate> {
    let pipes = machine.pipes;
    let k_iter = kernel.k_per_iteration();
    if k_iter <= 0.0 || machine.cus == 0 {
        return None;
    }
    let (r, c) = kernel.tile;
    let tiles = problem.m.div_ceil(r) * problem.n.div_ceil(c) * problem.batch;
    let cus = u64::from(machine.cus);
    let per_cu = kernel.workgroups_per_cu(pipes);
    let iterations = (problem.k as f64 / k_iter).ceil().max(1.0);
    // Full rounds, then the last: its workgroups spread over the CUs.
    let round = cus * per_cu;
    let (full, rest) = (tiles / round, tiles % round);
    let (full_cycles, bound) = kernel.iteration_cycles(pipes, per_cu);
    let mut cycles = full as f64 * iterations * full_cycles;
    if rest > 0 {
        let (c, _) = kernel.iteration_cycles(pipes, rest.div_ceil(cus));
        cycles += iterations * c;
    }
    let clock = f64::from(machine.clock_mhz) * 1e6;
    let compute = cycles / clock;
    // Every workgroup reads its A and B panels through L2 and writes its
    // tile: the bytes small tiles multiply.
    let panel = problem.input_bytes((r + c) * problem.k) + r * c * problem.out_bytes;
    let l2 = machine
        .l2_bytes_per_clock
        .map_or(0.0, |b| (tiles * panel) as f64 / (b * clock));
    let bytes = problem.batch
        * (problem.input_bytes((problem.m + problem.n) * problem.k)
            + problem.m * problem.n * problem.out_bytes);
    let dram = bytes as f64 / machine.dram_bytes_per_second;
    let (seconds, bound) =
        [(l2, Bound::L2), (dram, Bound::Dram)]
            .into_iter()
            .fold(
                (compute, bound),
                |best, x| if x.0 > best.0 { x } else { best },
            );
    let flops = 2.0 * (problem.m * problem.n * problem.k * problem.batch) as f64;
    // Wave-instructions of the main loops: every wave of every tile runs
    // the loop's instructions once per iteration.
    let wave_instructions =
        tiles as f64 * kernel.waves as f64 * iterations * kernel.mix.issued() as f64;
    Some(Estimate {
        seconds,
        compute_seconds: compute,
        flops_per_second: flops / seconds,
        bound,
        iteration_cycles: full_cycles,
        wave_instructions,
    })
}

/// Which of `kernels` the model picks for `problem` on `machine`, if any
/// can run it: the least modelled time; within a part in a million of it
/// (two kernels at the same DRAM roofline, or both at the matrix peak),
/// the least compute time, then the fewest main-loop wave-instructions
/// (the instructions the simulator would execute in the main loops), then
/// the first.
pub fn choose(kernels: &[&Kernel], machine: &Machine, problem: &Problem) -> Option<usize> {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.max(b);
    let mut best: Option<(usize, Estimate)> = None;
    for (i, k) in kernels.iter().enumerate() {
        let Some(e) = estimate(k, machine, problem) else {
            continue;
        };
        let better = match &best {
            None => true,
            Some((_, b)) => {
                if !close(e.seconds, b.seconds) {
                    e.seconds < b.seconds
                } else if !close(e.compute_seconds, b.compute_seconds) {
                    e.compute_seconds < b.compute_seconds
                } else {
                    e.wave_instructions < b.wave_instructions
                }
            }
        };
        if better {
            best = Some((i, e));
        }
    }
    best.map(|(i, _)| i)
}

/// Problem sides the report models (M = N = K).
pub const SIDES: [u64; 2] = [4096, 8192];

/// Input type, the bits of an input element and the bytes of an output
/// element of a report row's kernel: ours by name (`aqueduct_gemm`'s MFMA
/// and WMMA lists), AMD's by Tensile's type code in the name (rocBLAS's and
/// hipBLASLt's).
pub fn types_of(kernel: &str) -> Option<(Input, u64, u64)> {
    use aqueduct_gemm::common::ElementType as E;
    let of = |t: E| match t {
        E::F32 => Input::F32,
        E::Xf32 => Input::Xf32,
        E::F16 => Input::F16,
        E::Bf16 => Input::Bf16,
        // The MX kernels' scales (a byte per 32 elements) are left out of
        // their traffic.
        E::Fp8 | E::Bf8 | E::MxFp8 | E::MxBf8 => Input::Fp8,
        // Their own peaks and f8f6f4 cycles (`NARROW_F8F6F4`).
        E::MxFp6 | E::MxBf6 => Input::Fp6,
        E::MxFp4 => Input::Fp4,
        E::I8 | E::I32 => Input::I8,
    };
    if let Some(k) = aqueduct_gemm::mfma::KERNELS
        .iter()
        .chain(aqueduct_gemm::wmma::KERNELS)
        .find(|k| k.name == kernel)
    {
        // A unit of `per_unit` elements in `bytes` (FP6: four in three).
        let in_bits = u64::from(8 * k.input.bytes() / k.input.per_unit());
        return Some((of(k.input), in_bits, u64::from(k.output.bytes())));
    }
    use aqueduct_catalog::DataType as D;
    // `Cijk_<A>_<B>_<types>_...`: the type code follows the three index
    // fields (rocBLAS: `..._HHS_BH_MT...`; hipBLASLt: `..._HHS_BH_Bias_...`).
    let types = kernel.splitn(4, '_').nth(3)?;
    let (_, input, output, _) = crate::gemm_report::AMD_TYPES
        .into_iter()
        .find(|(code, ..)| types.starts_with(&format!("{code}_")))?;
    let of = |t: D| match t {
        D::Float => Some((Input::F32, 4)),
        D::Half => Some((Input::F16, 2)),
        D::BFloat16 => Some((Input::Bf16, 2)),
        _ => None,
    };
    let ((input, in_bytes), (_, out_bytes)) = (of(input)?, of(output)?);
    Some((input, 8 * in_bytes, out_bytes))
}

/// The model's view of a report row, if its main loop has matrix work
/// the model knows.
pub fn kernel_of(row: &crate::gemm_report::Row) -> Option<Kernel> {
    let body = &row.main_loop.as_ref()?.body;
    let mix = mix(
        &row.gfx,
        u64::from(row.wave_size),
        body.iter().map(String::as_str),
    );
    if mix.matrix_flops == 0 || !mix.unknown.is_empty() {
        return None;
    }
    let (r, c) = row.tile.split_once('x')?;
    Some(Kernel {
        tile: (r.parse().ok()?, c.parse().ok()?),
        waves: row.workgroup_size.div_ceil(u64::from(row.wave_size.max(1))),
        lanes: u64::from(row.wave_size),
        occupancy: u64::from(row.waves),
        mix,
    })
}

/// `gemm-report --model`'s table: per product, each kernel of its
/// processor with its modelled TFLOP/s and share of the product's dense
/// peak for its type at [`SIDES`].
pub fn table(rows: &[crate::gemm_report::Row]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "MODELLED throughput (xtask/src/gemm_model.rs: no GPU here; estimates from each main loop's\n\
         instructions and AMD's per-instruction and per-CU figures, not measurements)\n",
    );
    let _ = writeln!(
        out,
        "{:<12} {:<5} {:<5} {:<8} {:>3} {:>5} {:>6} {:>7} {:<6} {:>16} {:>16}  kernel",
        "product",
        "who",
        "type",
        "tile",
        "occ",
        "wg/CU",
        "K/it",
        "cyc/it",
        "bound",
        "4096³ TF/s (%)",
        "8192³ TF/s (%)"
    );
    for product in PRODUCT_MODELS {
        let Some(machine) = product.machine() else {
            continue;
        };
        let pipes = machine.pipes;
        for row in rows.iter().filter(|r| r.gfx == product.gfx()) {
            let (Some(k), Some((input, in_bits, out_bytes))) =
                (kernel_of(row), types_of(&row.kernel))
            else {
                continue;
            };
            let Some(peak) = product.peak(input) else {
                continue;
            };
            let per_cu = k.workgroups_per_cu(pipes);
            let (cycles, bound) = k.iteration_cycles(pipes, per_cu);
            let mut cells = Vec::new();
            for side in SIDES {
                let p = Problem::new((side, side, side), 1, out_bytes).with_input_bits(in_bits);
                cells.push(estimate(&k, &machine, &p).map_or("-".to_string(), |e| {
                    format!(
                        "{:.1} ({:.0}%)",
                        e.flops_per_second / 1e12,
                        100.0 * e.flops_per_second / peak
                    )
                }));
            }
            let _ = writeln!(
                out,
                "{:<12} {:<5} {:<5} {:<8} {:>3} {:>5} {:>6.0} {:>7.0} {:<6} {:>16} {:>16}  {}",
                product.name,
                row.who,
                input.name(),
                row.tile,
                row.waves,
                per_cu,
                k.k_per_iteration(),
                cycles,
                bound.name(),
                cells[0],
                cells[1],
                crate::gemm_report::short(&row.kernel),
            );
        }
    }
    out.push_str("occ: waves per SIMD; wg/CU: resident workgroups; K/it, cyc/it: K and CU cycles per main-loop iteration at full residency, and the pipe that bounds it\n");
    for p in PIPES {
        let _ = writeln!(out, "  {} pipes: {}", p.gfx, p.source);
    }
    for p in PRODUCT_MODELS {
        let _ = writeln!(out, "  {}: {}", p.name, p.source);
    }
    out
}

/// Problems (M, N, K) of [`choices`]: the main job's, square ones, and
/// skinny ones whose tiles cannot fill a large GPU.
pub const CHOICE_PROBLEMS: [(u64, u64, u64); 6] = [
    (1024, 1024, 512),
    (2048, 2048, 256),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (128, 128, 8192),
    (16384, 256, 4096),
];

/// `gemm-report --model`'s second table: per product, for each family of
/// our kernels of one type (`gemm_f16_f32_mfma_*`), the macro-tile the
/// model picks for each of [`CHOICE_PROBLEMS`] ([`choose`], as the
/// catalogs' size tables do) and its modelled TFLOP/s.
pub fn choices(rows: &[crate::gemm_report::Row]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "MODELLED choice among our kernels (the catalogs' size tables pick so): tile, TF/s\n",
    );
    let _ = write!(out, "{:<12} {:<18}", "product", "kernels");
    for (m, n, k) in CHOICE_PROBLEMS {
        let _ = write!(out, " {:>19}", format!("{m}x{n}x{k}"));
    }
    out.push('\n');
    for product in PRODUCT_MODELS {
        let Some(machine) = product.machine() else {
            continue;
        };
        let ours: Vec<&crate::gemm_report::Row> = rows
            .iter()
            .filter(|r| r.who == "ours" && r.gfx == product.gfx())
            .collect();
        let mut stems: Vec<&str> = Vec::new();
        for r in &ours {
            let stem = r.kernel.rsplit_once('_').map_or(r.kernel.as_str(), |s| s.0);
            if !stems.contains(&stem) {
                stems.push(stem);
            }
        }
        for stem in stems {
            let family: Vec<(&crate::gemm_report::Row, Kernel)> = ours
                .iter()
                .filter(|r| r.kernel.rsplit_once('_').is_some_and(|s| s.0 == stem))
                .filter_map(|r| Some((*r, kernel_of(r)?)))
                .collect();
            let Some((_, in_bits, out_bytes)) =
                types_of(family.first().map_or("", |f| &f.0.kernel))
            else {
                continue;
            };
            if family.len() < 2 {
                continue;
            }
            let kernels: Vec<&Kernel> = family.iter().map(|f| &f.1).collect();
            let _ = write!(out, "{:<12} {:<18}", product.name, stem);
            for mnk in CHOICE_PROBLEMS {
                let problem = Problem::new(mnk, 1, out_bytes).with_input_bits(in_bits);
                let cell = choose(&kernels, &machine, &problem)
                    .and_then(|i| {
                        let e = estimate(kernels[i], &machine, &problem)?;
                        Some(format!(
                            "{} {:.1}",
                            family[i].0.tile,
                            e.flops_per_second / 1e12
                        ))
                    })
                    .unwrap_or_else(|| "-".to_string());
                let _ = write!(out, " {cell:>19}");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(key: &str) -> &'static ProductModel {
        PRODUCT_MODELS
            .iter()
            .find(|p| p.key == key)
            .expect("a product")
    }

    #[test]
    fn peaks_are_amds_published_figures() {
        // AMD's tables, TFLOP/s: MI300X f16 1307.4, fp8 2614.9; MI210 f16
        // 181.0; MI355X f16 2516.6 (AMD: "2.5 PF"); RX 9070 XT f16 195
        // (64 CUs × 1024 × 2970 MHz = 194.6).
        let tf = |key: &str, t: Input| product(key).peak(t).map(|p| (p / 1e11).round() / 10.0);
        assert_eq!(tf("mi300x", Input::F16), Some(1307.4));
        assert_eq!(tf("mi300x", Input::Fp8), Some(2614.9));
        assert_eq!(tf("mi210", Input::F16), Some(181.0));
        assert_eq!(tf("mi355x", Input::Bf16), Some(2516.6));
        assert_eq!(tf("rx9070xt", Input::F16), Some(194.6));
        assert_eq!(tf("rx7900xtx", Input::Fp8), None);
        for p in PRODUCT_MODELS {
            assert!(
                p.product().is_some() && pipes(p.gfx()).is_some(),
                "{}",
                p.key
            );
        }
    }

    #[test]
    fn matrix_costs_reproduce_the_per_cu_peaks() {
        // Per CU per clock = SIMDs × FLOPs ÷ cycles: the calculator's and
        // AMD's per-CU figures.
        let per_cu = |gfx: &str, m: &str| {
            let c = matrix_cost(gfx, m).expect(m);
            pipes(gfx).expect(gfx).simds as u64 * c.flops / u64::from(c.cycles)
        };
        assert_eq!(per_cu("gfx90a", "v_mfma_f32_32x32x8f16"), 1024);
        assert_eq!(per_cu("gfx942", "v_mfma_f32_16x16x16_bf16"), 2048);
        assert_eq!(per_cu("gfx942", "v_mfma_f32_32x32x16_fp8_fp8"), 4096);
        assert_eq!(per_cu("gfx950", "v_mfma_f32_16x16x32_f16"), 4096);
        assert_eq!(per_cu("gfx950", "v_mfma_f32_32x32x64_f8f6f4"), 8192);
        // FP6/FP4 on both sides: twice FP8, the MI355X's FP6/FP4 peak.
        let narrow = format!("v_mfma_scale_f32_32x32x64_f8f6f4 {NARROW_F8F6F4}");
        assert_eq!(per_cu("gfx950", &narrow), 16384);
        let narrow16 = format!("v_mfma_f32_16x16x128_f8f6f4 {NARROW_F8F6F4}");
        assert_eq!(per_cu("gfx950", &narrow16), 16384);
        for t in [Input::Fp6, Input::Fp4] {
            assert_eq!(
                product("mi355x")
                    .peak_per_cu_clock
                    .iter()
                    .find(|p| p.0 == t),
                Some(&(t, 16384))
            );
        }
        assert_eq!(per_cu("gfx1100", "v_wmma_f32_16x16x16_f16"), 512);
        assert_eq!(per_cu("gfx1201", "v_wmma_f32_16x16x16_fp8_fp8"), 2048);
        assert_eq!(shape("v_mfma_f32_32x32x8bf16_1k"), Some((32, 32, 8)));
        assert_eq!(matrix_cost("gfx942", "v_mfma_f32_32x32x8f16"), None);
    }

    /// Packed inputs count their bits: our MXFP6 and MXFP4 kernels' A and
    /// B move 6 and 4 bits an element, so a problem's DRAM bytes are 3/4
    /// and 1/2 of FP8's; AMD's kernels by Tensile's type code, 8 bits a
    /// byte.
    #[test]
    fn packed_inputs_move_their_bits() {
        let bits = |k: &str| types_of(k).map(|t| (t.0, t.1, t.2));
        assert_eq!(bits("gemm_mxfp6_f32_mfma_64x64"), Some((Input::Fp6, 6, 4)));
        assert_eq!(bits("gemm_mxbf6_f32_mfma_64x64"), Some((Input::Fp6, 6, 4)));
        assert_eq!(bits("gemm_mxfp4_f32_mfma_64x64"), Some((Input::Fp4, 4, 4)));
        assert_eq!(bits("gemm_mxfp8_f32_mfma_64x64"), Some((Input::Fp8, 8, 4)));
        assert_eq!(bits("gemm_i8_i32_mfma_64x64"), Some((Input::I8, 8, 4)));
        assert_eq!(
            bits("Cijk_Ailk_Bjlk_HHS_BH_MT64x64x32_MI32x32x8x1_SN"),
            Some((Input::F16, 16, 2))
        );
        let p = |b: u64| Problem::new((4096, 4096, 4096), 1, 4).with_input_bits(b);
        let input = 2 * 4096 * 4096;
        assert_eq!(p(8).input_bytes(input), input);
        assert_eq!(p(6).input_bytes(input), input * 3 / 4);
        assert_eq!(p(4).input_bytes(input), input / 2);
        assert_eq!(p(6).input_bytes(3), 3, "18 bits: three bytes, rounded up");
    }

    #[test]
    fn a_loop_of_matrix_work_alone_is_matrix_bound_at_the_peak() {
        // 64 × 64 tile, 4 waves each doing 4 MFMA 32x32x8 f16 per
        // iteration on gfx942: K per iteration = 4·4·16384 / (2·64·64) = 32.
        let body = ["v_mfma_f32_32x32x8_f16"; 4];
        let k = Kernel {
            tile: (64, 64),
            waves: 4,
            lanes: 64,
            occupancy: 2,
            mix: mix("gfx942", 64, body),
        };
        assert_eq!(k.k_per_iteration(), 32.0);
        let pipes = pipes("gfx942").expect("gfx942");
        assert_eq!(k.workgroups_per_cu(pipes), 2);
        // 2 workgroups × 4 waves over 4 SIMDs: 2 waves × 4 × 32 cycles.
        assert_eq!(k.iteration_cycles(pipes, 2), (256.0, Bound::Matrix));
        // 8192³ fills every CU many times: close to the peak, with a tile
        // large enough for L2 to feed (256 × 128, 32 MFMAs per wave; 2048
        // tiles are 6.7 rounds of 304).
        let k = Kernel {
            tile: (256, 128),
            occupancy: 1,
            mix: mix("gfx942", 64, ["v_mfma_f32_32x32x8_f16"; 32]),
            ..k
        };
        assert_eq!(k.k_per_iteration(), 32.0);
        let p = Problem::new((8192, 8192, 8192), 2, 2);
        let mi300x = product("mi300x");
        let e = estimate(&k, &mi300x.machine().expect("machine"), &p).expect("estimate");
        let share = e.flops_per_second / mi300x.peak(Input::F16).expect("peak");
        assert!(share > 0.95 && share <= 1.0, "{share}");
        assert_eq!(e.bound, Bound::Matrix);
    }

    #[test]
    fn a_lone_wave_issues_its_whole_loop_in_turn() {
        // One MFMA (64 cycles on gfx90a) and 18 instructions of three other
        // categories: alone on its SIMD the wave needs 19 issue cycles of 4;
        // four waves per SIMD interleave their categories under the MFMAs.
        let mut body = vec!["v_mfma_f32_32x32x8f16"];
        for _ in 0..6 {
            body.extend(["s_add_u32", "ds_read_b32", "v_add_u32"]);
        }
        let k = Kernel {
            tile: (32, 32),
            waves: 1,
            lanes: 64,
            occupancy: 4,
            mix: mix("gfx90a", 64, body),
        };
        assert_eq!(k.mix.issued(), 19);
        let pipes = pipes("gfx90a").expect("gfx90a");
        assert_eq!(k.iteration_cycles(pipes, 1), (76.0, Bound::Issue));
        // 16 waves, 4 per SIMD: 28 vector instructions (MFMAs included)
        // per SIMD, 112 issue cycles, against 256 of MFMA.
        assert_eq!(k.iteration_cycles(pipes, 16), (256.0, Bound::Matrix));
    }

    #[test]
    fn ties_go_to_less_compute_then_to_fewer_instructions() {
        let lean = Kernel {
            tile: (64, 64),
            waves: 4,
            lanes: 64,
            occupancy: 2,
            mix: mix("gfx942", 64, ["v_mfma_f32_32x32x8_f16"; 4]),
        };
        // The same matrix-bound time, four more scalar instructions.
        let mut body = vec!["v_mfma_f32_32x32x8_f16"; 4];
        body.extend(["s_add_u32"; 4]);
        let busy = Kernel {
            mix: mix("gfx942", 64, body),
            ..lean.clone()
        };
        let machine = product("mi300x").machine().expect("machine");
        let p = Problem::new((4096, 4096, 4096), 2, 2);
        let (a, b) = (
            estimate(&busy, &machine, &p).expect("busy"),
            estimate(&lean, &machine, &p).expect("lean"),
        );
        assert_eq!(a.seconds, b.seconds);
        assert!(a.wave_instructions > b.wave_instructions);
        assert_eq!(choose(&[&busy, &lean], &machine, &p), Some(1));
        assert_eq!(choose(&[&lean, &busy], &machine, &p), Some(0));
        // K = 1: both at the DRAM roofline; still the lean one.
        let thin = Problem { k: 1, ..p };
        assert_eq!(choose(&[&busy, &lean], &machine, &thin), Some(1));
        assert_eq!(choose(&[], &machine, &thin), None);
    }

    #[test]
    fn tile_quantisation_and_the_dram_roofline_cost_what_they_should() {
        let body = ["v_mfma_f32_32x32x8_f16"; 4];
        let k = Kernel {
            tile: (256, 256),
            waves: 4,
            lanes: 64,
            occupancy: 1,
            mix: mix("gfx942", 64, body),
        };
        let mi300x = product("mi300x");
        let small = Problem::new((512, 512, 4096), 2, 2);
        // 4 tiles on 304 CUs: 4 CUs at their peak, the rest idle.
        let e = estimate(&k, &mi300x.machine().expect("machine"), &small).expect("estimate");
        let share = e.flops_per_second / mi300x.peak(Input::F16).expect("peak");
        assert!((share - 4.0 / 304.0).abs() < 1e-9, "{share}");
        // K = 1: nothing to compute, everything to move: DRAM bound.
        let thin = Problem { k: 1, ..small };
        assert_eq!(
            estimate(&k, &mi300x.machine().expect("machine"), &thin).map(|e| e.bound),
            Some(Bound::Dram)
        );
    }

    #[test]
    fn wmma_and_valu_take_turns_on_rdna_but_not_mfma_on_cdna() {
        let body = [
            "v_wmma_f32_16x16x16_f16",
            "v_add_nc_u32",
            "v_add_nc_u32",
            "s_add_u32",
            "s_waitcnt",
            "ds_load_b128",
            "global_load_b128",
        ];
        let m = mix("gfx1100", 32, body);
        assert_eq!((m.matrix, m.valu, m.scalar, m.lds, m.vmem), (1, 2, 1, 1, 1));
        assert_eq!((m.lds_bytes, m.vmem_bytes), (512, 512));
        let k = Kernel {
            tile: (16, 16),
            waves: 1,
            lanes: 32,
            occupancy: 1,
            mix: m,
        };
        let pipes = pipes("gfx1100").expect("gfx1100");
        // One wave on one SIMD: WMMA 32 cycles, then 2 VALU ops of 1.
        assert_eq!(k.iteration_cycles(pipes, 1), (34.0, Bound::Matrix));
    }

    #[test]
    fn the_table_says_it_is_modelled_and_names_each_products_peak_share() {
        let body: Vec<String> = [
            "v_mfma_f32_32x32x8_f16",
            "ds_read_b128",
            "global_load_dwordx4",
        ]
        .iter()
        .cycle()
        .take(12)
        .map(|s| s.to_string())
        .collect();
        let row = crate::gemm_report::Row {
            who: "ours",
            kernel: "gemm_f16_mfma_128x128".to_string(),
            gfx: "gfx942".to_string(),
            tile: "128x128".to_string(),
            main_loop: Some(crate::gemm_report::MainLoop {
                instructions: body.len(),
                mfmas: 4,
                body,
                ..Default::default()
            }),
            vgprs: 128,
            agprs: 128,
            sgprs: 32,
            lds_bytes: 32768,
            scratch: 0,
            waves: 1,
            workgroup_size: 256,
            wave_size: 64,
        };
        let k = kernel_of(&row).expect("a matrix main loop");
        // 4 waves × 4 MFMAs × 16384 FLOPs over 2 × 128 × 128.
        assert_eq!(k.k_per_iteration(), 8.0);
        let t = table(std::slice::from_ref(&row));
        assert!(t.starts_with("MODELLED"), "{t}");
        let line = t
            .lines()
            .find(|l| l.starts_with("MI300X"))
            .expect("an MI300X row");
        assert!(
            line.contains("f16") && line.contains("128x128") && line.contains('%'),
            "{line}"
        );
        // No row for other processors' products.
        assert!(!t.lines().any(|l| l.starts_with("MI210 ")), "{t}");
    }
}
