//! GEMM on a GPU agent, chosen through a solution catalog.
//!
//! `D = alpha · op(A) · op(B) + beta · C`, column-major, batched with
//! strides: a [`Gemm`] describes the problem, [`GemmLibrary`] holds the
//! catalog of the agent's processor (by default the one `cargo xtask build`
//! writes next to `aqueduct-gemm.hsaco`: `xtask/src/gemm_catalog.rs`) and
//! selects a kernel for the problem on the agent's hardware (processor, CU
//! count, PCI chip ID) exactly as Tensile would; `AQUEDUCT_CATALOG_DEBUG=1`
//! prints why. A [`GemmPlan`] is the selected kernel, loaded once per code
//! object, ready to dispatch on a queue ([`GemmPlan::dispatch`]) or to be
//! recorded into a command buffer ([`GemmPlan::record`], with its buffers
//! referenced directly, through binding-table slots or allocation handles).
//!
//! The kernels' arguments are aqueduct-gemm's common ones, one
//! [`GemmArgs`] ([`Gemm::arguments`]); the launch comes from the solution's
//! macro-tile and workgroup: `(ceil(M / MT0) · WG, ceil(N / MT1), batch)`.
//! A block-scaled (MXFP8, MXFP6, MXFP4) GEMM ([`Gemm::with_block_scales`])
//! selects the catalog's MX rows and takes its E8M0 scales through
//! [`GemmPlan::dispatch_scaled`] or [`GemmPlan::record_scaled`]. MXFP4's
//! `Float4` elements are half a byte: its sizes count elements, its A and
//! B buffers are bytes holding two each (k even in the low nibble), K runs
//! down their stored columns (A transposed, B not) and every distance
//! along them is even. MXFP6's `Float6` (E2M3) and `BFloat6` (E3M2) pack
//! four elements in three bytes (element `k` in bits `6k ..` of a
//! column's bytes), with the same orientation and distances that are
//! multiples of 4.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aqueduct_abi::gemm::{GemmArgs, GemmFlags, MX_BLOCK, scale_blocks};

use crate::agent::Agent;
use crate::catalog::{Catalog, CodeObjects, DataType, Hardware, Problem, Transpose};
use crate::command_buffer::{BufferRef, BufferRefKind, CommandBufferBuilder, Workgroups};
use crate::dispatch::{Dispatch, Launch};
use crate::error::{Error, Result};
use crate::executable::{Executable, Kernel};
use crate::memory::{Buffer, Pod};
use crate::queue::Queue;

/// The device crate whose kernels the default catalogs describe.
pub const GEMM_CRATE: &str = "aqueduct-gemm";

/// A GEMM problem: shapes, types, layouts, scalars.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    /// Rows of op(A), C and D.
    pub m: u32,
    /// Columns of op(B), C and D.
    pub n: u32,
    /// Columns of op(A) and rows of op(B): the summed size.
    pub k: u32,
    /// Problems in the batch.
    pub batch: u32,
    /// A is stored transposed (K × M) / B is (N × K).
    pub trans_a: bool,
    /// B is stored transposed (N × K).
    pub trans_b: bool,
    /// A and B's element type.
    pub input: DataType,
    /// C and D's element type.
    pub output: DataType,
    /// Elements between A's stored columns (column-major): at least its
    /// stored rows (M, or K when transposed).
    pub lda: u32,
    /// Elements between B's stored columns: at least K (N when
    /// transposed).
    pub ldb: u32,
    /// Elements between C's columns: at least M.
    pub ldc: u32,
    /// Elements between D's columns: at least M.
    pub ldd: u32,
    /// Elements from one batch's matrix to the next.
    pub stride_a: u64,
    /// Elements from one batch's B to the next.
    pub stride_b: u64,
    /// Elements from one batch's C to the next.
    pub stride_c: u64,
    /// Elements from one batch's D to the next.
    pub stride_d: u64,
    /// Scales op(A) · op(B); an integer of i32 for Int8 inputs (Int32
    /// compute: D = alpha · A·B + beta · C modulo 2^32).
    pub alpha: f32,
    /// Scales C (0: C is not read); an integer of i32 for Int8 inputs.
    pub beta: f32,
    /// How f32 inputs are multiplied: `Float`, or `XFloat32` for gfx942's
    /// reduced-precision xf32 MFMAs where a catalog offers them (Tensile's
    /// `F32XdlMathOp`; elsewhere f32 kernels answer).
    pub f32_math: DataType,
    /// Elements of K per E8M0 block scale of A and of B (MXFP8, the OCP
    /// Microscaling formats: 32), or 0 without block scales: with them, A's
    /// and B's elements are multiplied by `2^(e − 127)` of their row's
    /// (column's) block, the scales passed to [`GemmPlan::dispatch_scaled`]
    /// or [`GemmPlan::record_scaled`] in `GemmArgs::scale_a`'s layout.
    pub block_scales: u32,
}

impl Gemm {
    /// `D = A · B` (alpha 1, beta 0), M × N × K, one batch, tight leading
    /// dimensions, `input` in A and B, `output` in C and D.
    pub fn new(m: u32, n: u32, k: u32, input: DataType, output: DataType) -> Self {
        let mut g = Gemm {
            m,
            n,
            k,
            batch: 1,
            trans_a: false,
            trans_b: false,
            input,
            output,
            lda: 0,
            ldb: 0,
            ldc: 0,
            ldd: 0,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
            stride_d: 0,
            alpha: 1.0,
            beta: 0.0,
            f32_math: DataType::Float,
            block_scales: 0,
        };
        g.tight();
        g
    }

    /// A and B with E8M0 block scales, one per 32 elements of K of each
    /// row of op(A) and column of op(B) (MXFP8: FP8 or BF8 inputs; MXFP4:
    /// Float4 inputs, MXFP6: Float6 or BFloat6 inputs, which always take
    /// them; gfx950).
    pub fn with_block_scales(mut self) -> Self {
        self.block_scales = MX_BLOCK;
        self
    }

    /// Bytes of A's and of B's block scales (all batches): `batch · M ·
    /// ⌈K / 32⌉` and `batch · N · ⌈K / 32⌉`; 0 without block scales.
    pub fn scale_bytes(&self) -> [u64; 2] {
        if self.block_scales == 0 {
            return [0; 2];
        }
        let per = u64::from(self.batch) * u64::from(scale_blocks(self.k));
        [per * u64::from(self.m), per * u64::from(self.n)]
    }

    /// Stored-as-is or transposed operands (leading dimensions and strides
    /// made tight again).
    pub fn transposed(mut self, a: bool, b: bool) -> Self {
        (self.trans_a, self.trans_b) = (a, b);
        self.tight();
        self
    }

    /// `batch` problems, each matrix right after the previous one.
    pub fn batched(mut self, batch: u32) -> Self {
        self.batch = batch;
        self.tight_strides();
        self
    }

    /// Leading dimensions (strides made tight for them).
    pub fn with_leading_dims(mut self, lda: u32, ldb: u32, ldc: u32, ldd: u32) -> Self {
        (self.lda, self.ldb, self.ldc, self.ldd) = (lda, ldb, ldc, ldd);
        self.tight_strides();
        self
    }

    /// Batch strides in elements.
    pub fn with_strides(mut self, a: u64, b: u64, c: u64, d: u64) -> Self {
        (self.stride_a, self.stride_b, self.stride_c, self.stride_d) = (a, b, c, d);
        self
    }

    /// f32 inputs multiplied as `math` (`Float` or `XFloat32`).
    pub fn with_f32_math(mut self, math: DataType) -> Self {
        self.f32_math = math;
        self
    }

    /// `D = alpha · op(A) · op(B) + beta · C`.
    pub fn scaled(mut self, alpha: f32, beta: f32) -> Self {
        (self.alpha, self.beta) = (alpha, beta);
        self
    }

    /// A's stored rows and columns.
    fn a_shape(&self) -> (u32, u32) {
        if self.trans_a {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        }
    }

    /// B's stored rows and columns.
    fn b_shape(&self) -> (u32, u32) {
        if self.trans_b {
            (self.n, self.k)
        } else {
            (self.k, self.n)
        }
    }

    fn tight(&mut self) {
        self.lda = self.a_shape().0.max(1);
        self.ldb = self.b_shape().0.max(1);
        self.ldc = self.m.max(1);
        self.ldd = self.m.max(1);
        self.tight_strides();
    }

    fn tight_strides(&mut self) {
        self.stride_a = u64::from(self.lda) * u64::from(self.a_shape().1);
        self.stride_b = u64::from(self.ldb) * u64::from(self.b_shape().1);
        self.stride_c = u64::from(self.ldc) * u64::from(self.n);
        self.stride_d = u64::from(self.ldd) * u64::from(self.n);
    }

    /// Elements each of A, B, C and D spans (all batches).
    pub fn spans(&self) -> [u64; 4] {
        let span = |rows: u32, cols: u32, ld: u32, stride: u64| -> u64 {
            if rows == 0 || cols == 0 || self.batch == 0 {
                return 0;
            }
            u64::from(self.batch - 1) * stride
                + u64::from(cols - 1) * u64::from(ld)
                + u64::from(rows)
        };
        let (ar, ac) = self.a_shape();
        let (br, bc) = self.b_shape();
        [
            span(ar, ac, self.lda, self.stride_a),
            span(br, bc, self.ldb, self.stride_b),
            span(self.m, self.n, self.ldc, self.stride_c),
            span(self.m, self.n, self.ldd, self.stride_d),
        ]
    }

    /// Refuses a problem no kernel can run, naming the field: a leading
    /// dimension below its matrix's rows, a batch of 0, block scales on
    /// inputs without an MX form, a Float4 or Float6 problem MXFP4 or
    /// MXFP6 cannot take,
    /// Int8 without Int32 output or with alpha or beta outside i32, f32
    /// math other than Float (or XFloat32 for Float inputs).
    pub fn validate(&self) -> Result<()> {
        let bad = |problem: String| Error::InvalidArgument {
            what: "gemm",
            problem: format!("{problem} in {self}"),
        };
        for (name, ld, rows) in [
            ("lda", self.lda, self.a_shape().0),
            ("ldb", self.ldb, self.b_shape().0),
            ("ldc", self.ldc, self.m),
            ("ldd", self.ldd, self.m),
        ] {
            if ld < rows.max(1) {
                return Err(bad(format!("{name} {ld} is below the {rows} rows")));
            }
        }
        if self.batch == 0 {
            return Err(bad("a batch of 0".into()));
        }
        let (input, unit, mx) = (
            self.input,
            self.input.unit_elements(),
            self.input.mx_format(),
        );
        match (self.block_scales, mx) {
            (0, Some(mx)) if unit > 1 => {
                return Err(bad(format!(
                    "{input} inputs without block scales ({mx} takes E8M0 scales: \
                     Gemm::with_block_scales)"
                )));
            }
            (0, _) | (MX_BLOCK, Some(_)) => {}
            (MX_BLOCK, None) => {
                return Err(bad(format!(
                    "block scales with {input} inputs (MXFP8: Float8 or BFloat8; MXFP4: \
                     Float4; MXFP6: Float6 or BFloat6)"
                )));
            }
            (block, _) => {
                return Err(bad(format!(
                    "block_scales {block} (0, or {MX_BLOCK}: the OCP Microscaling block)"
                )));
            }
        }
        if let Some(mx) = mx.filter(|_| unit > 1) {
            // Packed elements (Float4: two a byte, k even in the low
            // nibble; Float6/BFloat6: four in three bytes): every row of
            // op(A) and column of op(B) must start on a byte, so K runs
            // down the stored columns (A transposed, B as is) and every
            // distance between them is a multiple of the unit.
            if !self.trans_a || self.trans_b {
                return Err(bad(format!(
                    "{input} ({mx}) A or B stored with M or N contiguous ({mx} takes K \
                     contiguous: A transposed, B not)"
                )));
            }
            for (name, v) in [
                ("k", u64::from(self.k)),
                ("lda", u64::from(self.lda)),
                ("ldb", u64::from(self.ldb)),
                ("stride_a", self.stride_a),
                ("stride_b", self.stride_b),
            ] {
                if v % unit == 0 {
                    continue;
                }
                return Err(bad(if unit == 2 {
                    format!(
                        "{name} {v} is odd (Float4 holds two elements a byte: K, the \
                         leading dimensions and strides of A and B are even)"
                    )
                } else {
                    format!(
                        "{name} {v} is not a multiple of 4 ({input} holds four elements in \
                         three bytes: K, the leading dimensions and strides of A and B are \
                         multiples of 4)"
                    )
                }));
            }
        }
        // Tensile's I8II: Int8 in, Int32 out and compute, alpha and beta
        // i32 (the kernels convert the f32 fields).
        let int8_in = self.input == DataType::Int8;
        if int8_in != (self.output == DataType::Int32) {
            return Err(bad(format!(
                "{} inputs with {} output (Int8 inputs give Int32 output, and only they)",
                self.input, self.output
            )));
        }
        if int8_in {
            for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
                // Below 2^31 and at least -2^31: the f32s that are i32s.
                let i32_range = (-2_147_483_648.0..2_147_483_648.0).contains(&v);
                if v.fract() != 0.0 || !i32_range {
                    return Err(bad(format!(
                        "{name} {v} is not an i32 (Int32 compute takes integer alpha and beta)"
                    )));
                }
            }
        }
        let xf32 = self.f32_math == DataType::XFloat32;
        if !(self.f32_math == DataType::Float || xf32 && self.input == DataType::Float) {
            return Err(bad(format!(
                "f32 math {} (Float, or XFloat32 for Float inputs)",
                self.f32_math
            )));
        }
        Ok(())
    }

    /// The catalog's choice for this GEMM, asked as hipBLASLt asks: an
    /// xf32 request that no solution answers is asked again with f32 math
    /// (hipBLASLt's `getBestSolutions`, TENSILELITE.md §5; in a TensileLite
    /// catalog `F32XdlMathOp` must match exactly).
    pub fn select_in<'c>(
        &self,
        catalog: &'c crate::catalog::Catalog,
        hardware: &crate::catalog::Hardware,
    ) -> crate::catalog::Result<Option<crate::catalog::Selected<'c>>> {
        let problem = self.problem();
        let found = catalog.select(&problem, hardware)?;
        match (found, self.f32_math_fallback(&problem)) {
            (None, Some(f32)) => catalog.select(&f32, hardware),
            (found, _) => Ok(found),
        }
    }

    /// [`Gemm::select_in`] with the catalog's trace of every problem asked.
    pub fn select_traced<'c>(
        &self,
        catalog: &'c crate::catalog::Catalog,
        hardware: &crate::catalog::Hardware,
    ) -> (
        crate::catalog::Result<Option<crate::catalog::Selected<'c>>>,
        String,
    ) {
        let problem = self.problem();
        let (found, mut trace) = catalog.select_traced(&problem, hardware);
        match (found, self.f32_math_fallback(&problem)) {
            (Ok(None), Some(f32)) => {
                trace.push_str("no XFloat32 solution: asked again with F32XdlMathOp Float\n");
                let (found, more) = catalog.select_traced(&f32, hardware);
                trace.push_str(&more);
                (found, trace)
            }
            (found, _) => (found, trace),
        }
    }

    /// The problem asked again with f32 math, for an xf32 problem.
    fn f32_math_fallback(&self, problem: &Problem) -> Option<Problem> {
        (problem.f32_xdl_math_op == DataType::XFloat32).then(|| {
            let mut f32 = problem.clone();
            f32.f32_xdl_math_op = DataType::Float;
            f32
        })
    }

    /// The kernel arguments for this problem on A, B, C and D at the
    /// device addresses `[a, b, c, d]`, without block scales.
    pub fn arguments(&self, matrices: [u64; 4]) -> GemmArgs {
        self.scaled_arguments(matrices, [0; 2])
    }

    /// [`Gemm::arguments`] with A's and B's block scales at `[scale_a,
    /// scale_b]`.
    pub fn scaled_arguments(&self, [a, b, c, d]: [u64; 4], [sa, sb]: [u64; 2]) -> GemmArgs {
        GemmArgs {
            a,
            b,
            c,
            d,
            m: self.m,
            n: self.n,
            k: self.k,
            lda: self.lda,
            ldb: self.ldb,
            ldc: self.ldc,
            ldd: self.ldd,
            reserved0: 0,
            stride_a: self.stride_a,
            stride_b: self.stride_b,
            stride_c: self.stride_c,
            stride_d: self.stride_d,
            alpha: self.alpha,
            beta: self.beta,
            flags: GemmFlags::transposed(self.trans_a, self.trans_b),
            reserved: 0,
            scale_a: sa,
            scale_b: sb,
        }
    }

    /// The problem as Tensile poses it (what the catalog selects on).
    pub fn problem(&self) -> Problem {
        let t = |yes: bool| {
            if yes {
                Transpose::Transpose
            } else {
                Transpose::None
            }
        };
        let mut p = Problem::gemm(
            t(self.trans_a),
            t(self.trans_b),
            u64::from(self.m),
            u64::from(self.n),
            u64::from(self.k),
            self.input,
        )
        .with_batch(u64::from(self.batch))
        .with_leading_dims(
            u64::from(self.lda),
            u64::from(self.ldb),
            u64::from(self.ldc),
            u64::from(self.ldd),
        );
        (p.stride_a, p.stride_b, p.stride_c, p.stride_d) =
            (self.stride_a, self.stride_b, self.stride_c, self.stride_d);
        p.c_type = self.output;
        p.d_type = self.output;
        // Narrow types compute in f32 (Tensile's high-precision accumulate).
        p.high_precision_accumulate = self.input != DataType::Float;
        // Every type here computes in f32 but Int8 in Int32 (TensileLite's
        // compute type, hipBLASLt's for the output; its compute-input type
        // stays the input type, as `Problem::gemm` set).
        let compute = if self.output == DataType::Int32 {
            DataType::Int32
        } else {
            DataType::Float
        };
        p.compute_type = compute;
        p.activation_compute_type = compute;
        p.f32_xdl_math_op = self.f32_math;
        p.alpha = f64::from(self.alpha);
        p.beta = f64::from(self.beta);
        p.c_equals_d = false;
        // E8M0 scales (the default type) when the block is set.
        (p.mx_block_a, p.mx_block_b) = (self.block_scales, self.block_scales);
        p
    }
}

impl fmt::Display for Gemm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = |yes: bool| if yes { 'T' } else { 'N' };
        write!(
            f,
            "{}{} {}×{}×{} batch {} {}→{} (lda {} ldb {} ldc {} ldd {})",
            t(self.trans_a),
            t(self.trans_b),
            self.m,
            self.n,
            self.k,
            self.batch,
            self.input,
            self.output,
            self.lda,
            self.ldb,
            self.ldc,
            self.ldd
        )?;
        if self.f32_math != DataType::Float {
            write!(f, " as {}", self.f32_math)?;
        }
        if self.block_scales != 0 {
            write!(f, " with E8M0 scales per {}", self.block_scales)?;
        }
        Ok(())
    }
}

/// The GEMM catalog of one agent, and the code objects it has loaded.
pub struct GemmLibrary {
    agent: Agent,
    hardware: Hardware,
    catalog: Catalog,
    path: PathBuf,
    code_objects: CodeObjects<Executable>,
}

/// A selected kernel: the solution, and the loaded kernel.
#[derive(Clone)]
pub struct GemmPlan {
    /// The solution's kernel name.
    pub name: String,
    /// The catalog file that held the solution (a lazy child).
    pub catalog_file: Option<PathBuf>,
    /// Rows and columns of D one workgroup computes.
    pub macro_tile: [u32; 2],
    /// Work-items per workgroup.
    pub workgroup: u16,
    /// The loaded kernel, on the library's agent.
    pub kernel: Kernel,
    /// The executable the kernel lives in (shared by every plan of its file).
    pub executable: Arc<Executable>,
}

impl GemmLibrary {
    /// The catalog `cargo xtask build` wrote for the agent's processor:
    /// `<device code dir>/<gfx>/TensileLibrary_lazy_<gfx>.dat`.
    pub fn open(agent: &Agent) -> Result<Self> {
        let gfx = &agent.info().name;
        let dir = crate::device_code::path(gfx, GEMM_CRATE)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Self::open_catalog(agent, dir.join(format!("TensileLibrary_lazy_{gfx}.dat")))
    }

    /// A catalog file of the caller's.
    pub fn open_catalog(agent: &Agent, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let hardware =
            Hardware::from_agent(agent.info()).ok_or_else(|| Error::InvalidArgument {
                what: "gemm",
                problem: format!("agent {} is not a GPU", agent.info().name),
            })?;
        if !path.exists() {
            return Err(Error::Catalog {
                path,
                message: format!(
                    "no GEMM catalog for {}; `cargo xtask build --gfx {}` writes it",
                    hardware.arch_name,
                    agent.info().name
                ),
            });
        }
        let catalog = Catalog::open(&path).map_err(|e| Error::Catalog {
            path: path.clone(),
            message: e.to_string(),
        })?;
        Ok(Self {
            agent: agent.clone(),
            hardware,
            catalog,
            path,
            code_objects: CodeObjects::new(),
        })
    }

    /// The hardware the catalog is asked about.
    pub fn hardware(&self) -> &Hardware {
        &self.hardware
    }

    /// The catalog's root file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The catalog's trace of the selection for `gemm` (what
    /// `AQUEDUCT_CATALOG_DEBUG=1` prints): every predicate evaluated, the
    /// hardware row and the table entry that chose the kernel.
    pub fn explain(&self, gemm: &Gemm) -> String {
        gemm.select_traced(&self.catalog, &self.hardware).1
    }

    /// The kernel the catalog chooses for `gemm` on this agent, loaded.
    /// With `AQUEDUCT_CATALOG_DEBUG=1` the catalog prints why.
    pub fn select(&self, gemm: &Gemm) -> Result<GemmPlan> {
        gemm.validate()?;
        let catalog_error = |message: String| Error::Catalog {
            path: self.path.clone(),
            message,
        };
        let selected = gemm
            .select_in(&self.catalog, &self.hardware)
            .map_err(|e| catalog_error(e.to_string()))?
            .ok_or_else(|| Error::NoGemmSolution {
                problem: gemm.to_string(),
                hardware: format!(
                    "{} ({} CUs, chip {})",
                    self.hardware.arch_name,
                    self.hardware.cu_count,
                    self.hardware
                        .chip_id
                        .map_or("unknown".into(), |c| format!("{c:#x}"))
                ),
                catalog: self.path.clone(),
            })?;
        let solution = selected.solution;
        let executable = self
            .code_objects
            .get(&selected, &self.hardware, |path| {
                self.agent
                    .load_code_object_file(path)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| catalog_error(format!("{}: {e}", solution.name)))?;
        let kernel = executable.kernel(solution.kernel())?;
        let sm = &solution.size_mapping;
        let positive = |v: i64, what: &str| {
            u32::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| catalog_error(format!("{}: {what} {v}", solution.name)))
        };
        Ok(GemmPlan {
            name: solution.name.to_string(),
            catalog_file: selected.file.path.clone(),
            macro_tile: [
                positive(sm.macro_tile[0], "macro-tile")?,
                positive(sm.macro_tile[1], "macro-tile")?,
            ],
            workgroup: u16::try_from(positive(sm.work_group[0], "workgroup")?)
                .map_err(|_| catalog_error(format!("{}: workgroup", solution.name)))?,
            kernel,
            executable,
        })
    }
}

impl GemmPlan {
    /// The launch for `gemm`.
    pub fn launch(&self, gemm: &Gemm) -> Launch {
        let [x, y, z] = self.workgroups(gemm).count;
        Launch::volume(
            [x * u32::from(self.workgroup), y, z],
            [self.workgroup, 1, 1],
        )
    }

    /// The launch for `gemm` as a command buffer's dispatch:
    /// `(ceil(M / MT0), ceil(N / MT1), batch)` workgroups.
    pub fn workgroups(&self, gemm: &Gemm) -> Workgroups {
        let [rows, cols] = self.macro_tile;
        Workgroups {
            dimensions: 3,
            count: [
                gemm.m.div_ceil(rows).max(1),
                gemm.n.div_ceil(cols).max(1),
                gemm.batch.max(1),
            ],
            size: [self.workgroup, 1, 1],
            dynamic_lds: 0,
        }
    }

    /// Dispatches `gemm` on `queue` with A, B, C and D in the given
    /// buffers (each at least as long as the problem spans, of the
    /// problem's element sizes; with beta = 0 C is not read). A
    /// block-scaled GEMM takes [`GemmPlan::dispatch_scaled`].
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch<TI: Pod, TO: Pod, LA, LB, LC, LD>(
        &self,
        queue: &Queue,
        gemm: &Gemm,
        a: &Buffer<TI, LA>,
        b: &Buffer<TI, LB>,
        c: &Buffer<TO, LC>,
        d: &mut Buffer<TO, LD>,
    ) -> Result<Dispatch> {
        self.dispatch_with::<TI, TO, LD>(queue, gemm, [raw(a), raw(b)], raw(c), d, None)
    }

    /// [`GemmPlan::dispatch`] for a block-scaled GEMM
    /// ([`Gemm::with_block_scales`]), with A's and B's E8M0 scales in
    /// `scale_a` and `scale_b` (at least [`Gemm::scale_bytes`] each).
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch_scaled<TI: Pod, TO: Pod, LA, LB, LC, LD, LS, LT>(
        &self,
        queue: &Queue,
        gemm: &Gemm,
        a: &Buffer<TI, LA>,
        b: &Buffer<TI, LB>,
        c: &Buffer<TO, LC>,
        d: &mut Buffer<TO, LD>,
        scale_a: &Buffer<u8, LS>,
        scale_b: &Buffer<u8, LT>,
    ) -> Result<Dispatch> {
        let scales = Some([raw(scale_a), raw(scale_b)]);
        self.dispatch_with::<TI, TO, LD>(queue, gemm, [raw(a), raw(b)], raw(c), d, scales)
    }

    fn dispatch_with<TI: Pod, TO: Pod, LD>(
        &self,
        queue: &Queue,
        gemm: &Gemm,
        [a, b]: [RawBuffer; 2],
        c: RawBuffer,
        d: &mut Buffer<TO, LD>,
        scales: Option<[RawBuffer; 2]>,
    ) -> Result<Dispatch> {
        gemm.validate()?;
        check_scales(gemm, scales.map(|s| s.map(|r| r.len)))?;
        let (ti, to) = (std::mem::size_of::<TI>(), std::mem::size_of::<TO>());
        let bytes = |t: DataType| t.element_bytes() as usize;
        if ti != bytes(gemm.input) || to != bytes(gemm.output) {
            return Err(bad_gemm(
                gemm,
                format!(
                    "buffers of {ti}- and {to}-byte elements for {} and {}",
                    gemm.input, gemm.output
                ),
            ));
        }
        // Float4's and Float6's buffers are of bytes (two elements each;
        // four in three).
        let elements = |len: u64, t: DataType| elements_in(len * t.element_bytes(), t);
        let lens = [
            elements(a.len, gemm.input),
            elements(b.len, gemm.input),
            c.len,
            d.len() as u64,
        ];
        check_spans(gemm, lens, "elements")?;
        let scale_addresses = scales.map_or([0; 2], |s| s.map(|r| r.address));
        let addresses = [a.address, b.address, c.address, d.address()];
        let mut args = self.kernel.kernargs()?;
        args.set_all(&gemm.scaled_arguments(addresses, scale_addresses))?;
        self.kernel
            .dispatch_launch(queue, &self.launch(gemm), &args, None)
    }

    /// Records `gemm` as a dispatch into `builder`'s current block, with
    /// A, B, C and D as buffer references (direct, binding-table slots or
    /// allocation handles, resolved when the block issues), each range at
    /// least as many bytes as the problem spans (with beta = 0 C is not
    /// read). Returns the command's index. The command's ordering is the
    /// builder's ([`CommandBufferBuilder::set_ordering`]): record a barrier
    /// before it when earlier commands write A, B or C. A block-scaled GEMM
    /// takes [`GemmPlan::record_scaled`].
    pub fn record(
        &self,
        builder: &mut CommandBufferBuilder,
        gemm: &Gemm,
        matrices: [BufferRef; 4],
    ) -> Result<u32> {
        self.record_with(builder, gemm, matrices, None)
    }

    /// [`GemmPlan::record`] for a block-scaled GEMM, with A's and B's E8M0
    /// scales as buffer references `[scale_a, scale_b]` (at least
    /// [`Gemm::scale_bytes`] each).
    pub fn record_scaled(
        &self,
        builder: &mut CommandBufferBuilder,
        gemm: &Gemm,
        matrices: [BufferRef; 4],
        scales: [BufferRef; 2],
    ) -> Result<u32> {
        self.record_with(builder, gemm, matrices, Some(scales))
    }

    fn record_with(
        &self,
        builder: &mut CommandBufferBuilder,
        gemm: &Gemm,
        [a, b, c, d]: [BufferRef; 4],
        scales: Option<[BufferRef; 2]>,
    ) -> Result<u32> {
        gemm.validate()?;
        check_scales(gemm, scales.map(|s| s.map(|r| r.length)))?;
        let bytes = |t: DataType| t.element_bytes();
        let lens = [
            elements_in(a.length, gemm.input),
            elements_in(b.length, gemm.input),
            elements_in(c.length, gemm.output),
            elements_in(d.length, gemm.output),
        ];
        check_spans(gemm, lens, "whole elements")?;
        // Each matrix starts on an element: a binding slot is 16-byte
        // aligned (checked at submit), so its offset decides; a direct
        // reference's address and offset together.
        for (name, r, t) in [
            ("A", &a, gemm.input),
            ("B", &b, gemm.input),
            ("C", &c, gemm.output),
            ("D", &d, gemm.output),
        ] {
            let start = if r.kind == BufferRefKind::DIRECT {
                r.address.wrapping_add(r.offset)
            } else {
                r.offset
            };
            if !start.is_multiple_of(bytes(t)) {
                return Err(bad_gemm(
                    gemm,
                    format!(
                        "{name} starts at {start:#x}, not on a {}-byte {t} element",
                        bytes(t)
                    ),
                ));
            }
        }
        // The matrices (and scales) bound by name: a slot or a handle is
        // resolved when the block issues.
        let mut args = self.kernel.kernargs()?;
        args.set_all(&gemm.arguments([0; 4]))?
            .bind("a", a)?
            .bind("b", b)?
            .bind("c", c)?
            .bind("d", d)?;
        if let Some([sa, sb]) = scales {
            args.bind("scale_a", sa)?.bind("scale_b", sb)?;
        }
        builder.dispatch(&self.kernel, self.workgroups(gemm), &args)
    }
}

/// A buffer's address and length in elements, whatever its type.
#[derive(Clone, Copy)]
struct RawBuffer {
    address: u64,
    len: u64,
}

fn raw<T: Pod, L>(b: &Buffer<T, L>) -> RawBuffer {
    RawBuffer {
        address: b.address(),
        len: b.len() as u64,
    }
}

/// Refuses block scales given for a GEMM without them, missing for one
/// with them, or (`lens`: the bytes of A's and B's, if given) shorter
/// than the problem's.
fn check_scales(gemm: &Gemm, lens: Option<[u64; 2]>) -> Result<()> {
    let lens = match (gemm.block_scales != 0, lens) {
        (false, None) => return Ok(()),
        (true, Some(lens)) => lens,
        (true, None) => {
            return Err(bad_gemm(
                gemm,
                "block scales not given: a block-scaled GEMM takes dispatch_scaled or \
                 record_scaled"
                    .into(),
            ));
        }
        (false, Some(_)) => {
            return Err(bad_gemm(
                gemm,
                "block scales given for a GEMM without them (Gemm::with_block_scales)".into(),
            ));
        }
    };
    for ((name, want), len) in ["scale_a", "scale_b"]
        .iter()
        .zip(gemm.scale_bytes())
        .zip(lens)
    {
        if len < want {
            return Err(bad_gemm(
                gemm,
                format!("{name} holds {len} bytes, the problem's scales take {want}"),
            ));
        }
    }
    Ok(())
}

fn bad_gemm(gemm: &Gemm, problem: String) -> Error {
    Error::InvalidArgument {
        what: "gemm",
        problem: format!("{problem} ({gemm})"),
    }
}

/// The whole elements of type `t` in `bytes` (Float4: two a byte;
/// Float6/BFloat6: four in three).
fn elements_in(bytes: u64, t: DataType) -> u64 {
    bytes * 8 / t.element_bits()
}

/// Refuses A, B, C or D (`lens` of them, in `unit`) shorter than the
/// problem spans.
fn check_spans(gemm: &Gemm, lens: [u64; 4], unit: &str) -> Result<()> {
    let spans = gemm.spans();
    for ((name, span), len) in ["A", "B", "C", "D"].iter().zip(spans).zip(lens) {
        if len < span {
            return Err(bad_gemm(
                gemm,
                format!("{name} holds {len} {unit}, the problem spans {span}"),
            ));
        }
    }
    Ok(())
}
