//! The problem a catalog is asked about: a GEMM, described the way Tensile's
//! `ContractionProblem` describes it, so that every size, stride and flag a
//! catalog predicate or property reads has Tensile's meaning.
//!
//! Tensile writes a batched GEMM `D = alpha * op(A) * op(B) + beta * C` as a
//! contraction over the index names `i, j` (free: M and N), `k` (batch) and
//! `l` (bound: K). Column-major A is `A[i, l, k]` when not transposed and
//! `A[l, i, k]` when transposed; each tensor's strides are `[1, ld,
//! batch stride]`. From that, Tensile's accessors are (for a GEMM, which has
//! one free index per side, one batch and one bound index):
//!
//! | accessor | value |
//! |---|---|
//! | `freeSizeA(0)` | M |
//! | `freeSizeB(0)` | N |
//! | `batchSize(0)` | batch count |
//! | `boundSize(0)` | K |
//! | `size(0..4)` | M, N, batch, K (C's sizes, then the bound sizes) |
//! | `a.strides` | `[1, lda, stride_a]` (and likewise B, C, D) |
//!
//! Sources: Tensile 4.36 (rocm-5.5.1) `ContractionProblem.cpp` (`GEMM_Strides`,
//! `normalize`, `getOperationIdentifier`) and rocBLAS 5.5.1
//! `tensile_host.cpp` (`ConstructTensileProblem`), which is how the rocBLAS
//! catalog expects problems to be posed; for TensileLite's fields, hipBLASLt's
//! `tensile_host.cpp` and TensileLite's `ContractionProblem.hpp`
//! (`host/catalog/TENSILELITE.md` §5), which [`Problem::hipblaslt`] follows.

use std::fmt;

/// Element types, under Tensile's names (`DataTypes.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DataType {
    /// IEEE binary32 (`f32`).
    Float,
    /// IEEE binary64 (`f64`).
    Double,
    /// A pair of binary32: real, imaginary.
    ComplexFloat,
    /// A pair of binary64: real, imaginary.
    ComplexDouble,
    /// IEEE binary16 (`f16`).
    Half,
    /// Four `i8` packed in 32 bits (one value, [`DataType::packing`] 4).
    Int8x4,
    /// `i32`.
    Int32,
    /// bfloat16: binary32's exponent with a 7-bit mantissa.
    BFloat16,
    /// `i8`.
    Int8,
    // Newer Tensile / hipBLASLt names.
    /// `i64`.
    Int64,
    /// xf32: binary32 values multiplied at reduced precision by the
    /// matrix cores of gfx94x.
    XFloat32,
    /// 8-bit float, E4M3 (FP8).
    Float8,
    /// 8-bit float, E5M2 (BF8).
    BFloat8,
    /// Mixed 8-bit: A is Float8, B BFloat8.
    Float8BFloat8,
    /// Mixed 8-bit: A is BFloat8, B Float8.
    BFloat8Float8,
    /// E8M0: an exponent byte, `2^(e − 127)` (0xFF NaN), the block scales
    /// of the OCP Microscaling formats (TensileLite's `E8`, the type of
    /// `DataTypeMXSA`/`DataTypeMXSB`).
    E8,
    /// 4-bit float, E2M1 (OCP FP4), two elements a byte, k even in the low
    /// nibble: the elements of MXFP4, with `E8` block scales (TensileLite's
    /// `Float4`). Sizes, leading dimensions and strides count elements;
    /// [`DataType::element_bits`] gives the 4 bits.
    Float4,
    /// 6-bit float, E2M3 (OCP FP6), four elements in three bytes packed
    /// little-endian (element `k` of a run in bits `6k ..` of its bytes):
    /// the elements of MXFP6, with `E8` block scales. TensileLite has no
    /// 6-bit type; the name follows its `Float4` (HIP calls it float6,
    /// `HIP_R_6F_E2M3`). Sizes count elements, as for `Float4`.
    Float6,
    /// 6-bit float, E3M2 (OCP BF6, `HIP_R_6F_E3M2`), packed as `Float6`.
    BFloat6,
}

impl DataType {
    /// Every type, in declaration order (the order of [`DataType::from_name`]'s
    /// search).
    pub const ALL: [DataType; 19] = [
        DataType::Float,
        DataType::Double,
        DataType::ComplexFloat,
        DataType::ComplexDouble,
        DataType::Half,
        DataType::Int8x4,
        DataType::Int32,
        DataType::BFloat16,
        DataType::Int8,
        DataType::Int64,
        DataType::XFloat32,
        DataType::Float8,
        DataType::BFloat8,
        DataType::Float8BFloat8,
        DataType::BFloat8Float8,
        DataType::E8,
        DataType::Float4,
        DataType::Float6,
        DataType::BFloat6,
    ];

    /// Tensile's name for the type, as catalogs write it (`Float`,
    /// `BFloat16`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DataType::Float => "Float",
            DataType::Double => "Double",
            DataType::ComplexFloat => "ComplexFloat",
            DataType::ComplexDouble => "ComplexDouble",
            DataType::Half => "Half",
            DataType::Int8x4 => "Int8x4",
            DataType::Int32 => "Int32",
            DataType::BFloat16 => "BFloat16",
            DataType::Int8 => "Int8",
            DataType::Int64 => "Int64",
            DataType::XFloat32 => "XFloat32",
            DataType::Float8 => "Float8",
            DataType::BFloat8 => "BFloat8",
            DataType::Float8BFloat8 => "Float8BFloat8",
            DataType::BFloat8Float8 => "BFloat8Float8",
            DataType::E8 => "E8",
            DataType::Float4 => "Float4",
            DataType::Float6 => "Float6",
            DataType::BFloat6 => "BFloat6",
        }
    }

    /// Parses a Tensile type name (case-sensitive, as Tensile's enum reader).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes per element (`DataTypeInfo::elementSize`); for Float4 and
    /// Float6, whose elements are less than a byte, a byte (what a
    /// byte-offset limit must allow for): [`DataType::element_bits`] is
    /// exact.
    pub fn element_bytes(self) -> u64 {
        match self {
            DataType::Int8 | DataType::Float8 | DataType::BFloat8 | DataType::Float4 => 1,
            DataType::Float6 | DataType::BFloat6 => 1,
            DataType::Float8BFloat8 | DataType::BFloat8Float8 | DataType::E8 => 1,
            DataType::Half | DataType::BFloat16 => 2,
            DataType::Float | DataType::Int32 | DataType::Int8x4 | DataType::XFloat32 => 4,
            DataType::Double | DataType::ComplexFloat | DataType::Int64 => 8,
            DataType::ComplexDouble => 16,
        }
    }

    /// Bits per element: 8 · [`DataType::element_bytes`], but 4 for
    /// Float4 and 6 for Float6 and BFloat6. A span of `n` elements takes
    /// `⌈n · bits / 8⌉` bytes.
    pub fn element_bits(self) -> u64 {
        match self {
            DataType::Float4 => 4,
            DataType::Float6 | DataType::BFloat6 => 6,
            _ => 8 * self.element_bytes(),
        }
    }

    /// The fewest elements that end on a byte: 2 for Float4, 4 for Float6
    /// and BFloat6 (three bytes), else 1. A packed operand's rows, leading
    /// dimensions and strides are multiples of it.
    pub fn unit_elements(self) -> u64 {
        match self {
            DataType::Float4 => 2,
            DataType::Float6 | DataType::BFloat6 => 4,
            _ => 1,
        }
    }

    /// The OCP Microscaling format a block-scaled GEMM of this input type
    /// is (E8M0 scales per 32 elements of K): MXFP8 for Float8 and
    /// BFloat8, MXFP6 for Float6 and BFloat6, MXFP4 for Float4; none for
    /// the others.
    pub fn mx_format(self) -> Option<&'static str> {
        match self {
            DataType::Float8 | DataType::BFloat8 => Some("MXFP8"),
            DataType::Float6 | DataType::BFloat6 => Some("MXFP6"),
            DataType::Float4 => Some("MXFP4"),
            _ => None,
        }
    }

    /// Elements packed per value (`DataTypeInfo::packing`): Int8x4 holds 4.
    pub fn packing(self) -> u64 {
        if self == DataType::Int8x4 { 4 } else { 1 }
    }

    /// TensileLite's compute-input type for inputs `a` and `b` (the fifth
    /// entry of its `TypesEqual`, hipBLASLt's `roc2TensileComputeInputType`
    /// without a fast-math mode): `Float8BFloat8` / `BFloat8Float8` for
    /// mixed FP8 inputs, else the smaller of the two (A on a tie).
    pub fn compute_input_of(a: DataType, b: DataType) -> DataType {
        match (a, b) {
            (DataType::Float8, DataType::BFloat8) => DataType::Float8BFloat8,
            (DataType::BFloat8, DataType::Float8) => DataType::BFloat8Float8,
            (a, b) if b.element_bytes() < a.element_bytes() => b,
            (a, _) => a,
        }
    }

    /// Whether the type is ComplexFloat or ComplexDouble.
    pub fn is_complex(self) -> bool {
        matches!(self, DataType::ComplexFloat | DataType::ComplexDouble)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an operand is read: as stored, transposed, or conjugate-transposed
/// (complex types only; Tensile marks it with a `C` after the tensor's
/// index names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// op(X) = X (BLAS `N`).
    None,
    /// op(X) = Xᵀ (BLAS `T`).
    Transpose,
    /// op(X) = Xᴴ (BLAS `C`).
    ConjugateTranspose,
}

impl Transpose {
    /// Whether the operand is read transposed (conjugated or not).
    pub fn is_transposed(self) -> bool {
        self != Transpose::None
    }
}

/// `KernelLanguage` (`Any` in a problem accepts every solution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelLanguage {
    /// Accept kernels of either language.
    Any,
    /// Only kernels written in AMDGPU assembly (`.co` code objects).
    Assembly,
    /// Only kernels compiled from source (`.hsaco` code objects).
    Source,
}

/// `ArithmeticUnit` (`Any` in a problem accepts every solution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithmeticUnit {
    /// Accept kernels using either unit.
    Any,
    /// Only kernels using the matrix cores (MFMA instructions).
    Mfma,
    /// Only kernels using the vector ALUs.
    Valu,
}

/// `PerformanceMetric`: what "best" means to the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PerformanceMetric {
    /// Fastest on the whole device: `CUEfficiency` rows do not match.
    DeviceEfficiency,
    /// Most efficient per compute unit: `CUEfficiency` rows match.
    CuEfficiency,
    /// `CUEfficiency` rows match for problems below 2 * 1500³ flops.
    Auto,
    /// Solutions marked `Experimental` may be chosen.
    Experimental,
}

/// TensileLite's `ActivationType`, under the names its catalogs write
/// (hipBLASLt 7.1.1; `host/catalog/TENSILELITE.md` §6.4). A problem's
/// [`Problem::activation`] is `None` for a plain GEMM and `HipblasltAll`
/// whenever hipBLASLt's epilogue has an activation; the specific kind is
/// [`Problem::activation_enum`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Activation {
    /// No activation (`None`).
    None,
    /// Every kind (`All`): a kernel built with all of them.
    All,
    /// hipBLASLt's set (`Hipblaslt_all`): Gelu, DGelu, Relu, Silu, Clamp.
    HipblasltAll,
    /// `Gelu`.
    Gelu,
    /// The GELU gradient (`Dgelu` in catalogs).
    DGelu,
    /// `Relu`.
    Relu,
    /// `Silu`.
    Silu,
    /// `Clamp`.
    Clamp,
}

impl Activation {
    /// Every kind, in declaration order.
    pub const ALL: [Activation; 8] = [
        Activation::None,
        Activation::All,
        Activation::HipblasltAll,
        Activation::Gelu,
        Activation::DGelu,
        Activation::Relu,
        Activation::Silu,
        Activation::Clamp,
    ];

    /// The name catalogs write.
    pub fn name(self) -> &'static str {
        match self {
            Activation::None => "None",
            Activation::All => "All",
            Activation::HipblasltAll => "Hipblaslt_all",
            Activation::Gelu => "Gelu",
            Activation::DGelu => "Dgelu",
            Activation::Relu => "Relu",
            Activation::Silu => "Silu",
            Activation::Clamp => "Clamp",
        }
    }

    /// Parses a catalog's name (case-sensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// TensileLite's `useScaleAB`: how A and B are scaled (FP8 GEMMs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ScaleMode {
    /// No scaling (`""`): what a problem without scale pointers poses.
    None,
    /// One scale per matrix (`Scalar`).
    Scalar,
    /// A scale per row or column (`Vector`).
    Vector,
}

impl ScaleMode {
    /// The name catalogs write.
    pub fn name(self) -> &'static str {
        match self {
            ScaleMode::None => "",
            ScaleMode::Scalar => "Scalar",
            ScaleMode::Vector => "Vector",
        }
    }

    /// Parses a catalog's name.
    pub fn from_name(name: &str) -> Option<Self> {
        [ScaleMode::None, ScaleMode::Scalar, ScaleMode::Vector]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// A GEMM as Tensile sees it. Build one with [`Problem::gemm`] (or
/// [`Problem::hipblaslt`] for a hipBLASLt catalog) and adjust the public
/// fields. The defaults: packed leading dimensions, one batch, packed batch
/// strides, C = D, alpha 1, beta 0, no workspace, every flag off, any
/// kernel language and arithmetic unit, device efficiency; TensileLite's
/// compute and compute-input types equal to the data type, no activation,
/// bias, E output, grouping, scaling, sparsity, amax or swizzle, `gsu` 0.
///
/// rocBLAS 5.5.1 (`tensile_host.cpp`, `ConstructTensileProblem`, at tag
/// rocm-5.5.1) poses the same for a plain `rocblas_sgemm` except in two
/// fields a catalog can test (`StrideAEqual`… and `WorkspaceCheck`
/// predicates): its batch strides are 0 (`rocblas_gemm_ex` passes 1;
/// Tensile packs a stride only when it is given as "use the default"),
/// and its workspace is the handle's free device memory rounded down to
/// 256 bytes (32 MiB on a new handle). Set those fields to pose exactly
/// what rocBLAS poses.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// How A is read: op(A) is M × K.
    pub trans_a: Transpose,
    /// How B is read: op(B) is K × N.
    pub trans_b: Transpose,
    /// Rows of op(A), C and D.
    pub m: u64,
    /// Columns of op(B), C and D.
    pub n: u64,
    /// Columns of op(A) and rows of op(B): the summed (bound) size.
    pub k: u64,
    /// Number of GEMMs in the batch (1 for a single GEMM).
    pub batch: u64,
    /// Element type of A.
    pub a_type: DataType,
    /// Element type of B.
    pub b_type: DataType,
    /// Element type of C.
    pub c_type: DataType,
    /// Element type of D.
    pub d_type: DataType,
    /// Leading dimension of A in elements: the stride between its stored
    /// columns (column-major).
    pub lda: u64,
    /// Leading dimension of B in elements.
    pub ldb: u64,
    /// Leading dimension of C in elements.
    pub ldc: u64,
    /// Leading dimension of D in elements.
    pub ldd: u64,
    /// Elements between consecutive A matrices of a batch.
    pub stride_a: u64,
    /// Elements between consecutive B matrices of a batch.
    pub stride_b: u64,
    /// Elements between consecutive C matrices of a batch.
    pub stride_c: u64,
    /// Elements between consecutive D matrices of a batch.
    pub stride_d: u64,
    /// Accumulate in a wider type than the inputs (rocBLAS: the compute
    /// type is wider than the input type, or the input is Int8x4).
    pub high_precision_accumulate: bool,
    /// A strided batch (true) rather than an array of pointers.
    pub strided_batched: bool,
    /// The caller asks for run-to-run reproducible results (matched by
    /// `DeterministicMode` leaves).
    pub deterministic_mode: bool,
    /// rocBLAS's `fp16_alt_impl` flag: f16 GEMMs take the alternate
    /// implementation (matched by `Fp16AltImpl` leaves).
    pub fp16_alt_impl: bool,
    /// Newer Tensile: round stochastically when converting the output.
    pub stochastic_rounding: bool,
    /// Newer Tensile: the math type of f32 MFMA (Float, or XFloat32).
    pub f32_xdl_math_op: DataType,
    /// Which kernel languages the caller accepts.
    pub kernel_language: KernelLanguage,
    /// Which arithmetic units the caller accepts.
    pub arithmetic_unit: ArithmeticUnit,
    /// What "best" means for this query.
    pub performance_metric: PerformanceMetric,
    /// Bytes of workspace the caller can give the kernel (0 by default;
    /// rocBLAS gives its handle's free device memory).
    pub workspace_size: u64,
    /// The scalars, as rocBLAS categorises them: beta is 0, 1, -1 or 2
    /// ("anything else").
    pub alpha: f64,
    /// The scalar multiplying C (see `alpha`).
    pub beta: f64,
    /// D is written over C (the same buffer, `rocblas_*gemm`'s in-place
    /// form).
    pub c_equals_d: bool,
    // TensileLite (hipBLASLt) fields: TENSILELITE.md §5 says what
    // `hipblasLtMatmul` poses for each; [`Problem::gemm`] gives the same
    // for a plain GEMM.
    /// The compute type, also alpha's and beta's type (TensileLite's
    /// `computeType`; read by `ActivationComputeType` through
    /// `activation_compute_type`). `gemm`: the data type.
    pub compute_type: DataType,
    /// TensileLite's `computeInputType`, the fifth entry of its
    /// `TypesEqual`: the type the inputs are converted to before the
    /// multiply (`Float8BFloat8` for FP8 A with BF8 B). `gemm`: the data
    /// type.
    pub compute_input_type: DataType,
    /// `activationType`: `None`, or `HipblasltAll` when the epilogue has an
    /// activation.
    pub activation: Activation,
    /// The specific activation (hipBLASLt's `params.activationEnum`),
    /// tested by `ActivationEnumWhiteList` when `activation` is `All` or
    /// `HipblasltAll`.
    pub activation_enum: Activation,
    /// `activationComputeType` (hipBLASLt: the compute type).
    pub activation_compute_type: DataType,
    /// `activationNoGuard`.
    pub activation_no_guard: bool,
    /// `useGradient`: a backward (gradient) epilogue.
    pub use_gradient: bool,
    /// `useBias`: 0 no bias; 1 a bias vector; 2, 3 hipBLASLt's bias along
    /// the other factor dimension.
    pub use_bias: u8,
    /// The bias's element type (read only when `use_bias` is not 0).
    pub bias_type: DataType,
    /// Which tensor the bias comes from, by TensileLite's tensor ids (A 0,
    /// B 1, C 2, D 3); its length is taken to be what hipBLASLt gives it
    /// (M for A or D, N for B).
    pub bias_src: u8,
    /// `useE`: the epilogue writes (or reads, for a gradient) an auxiliary
    /// matrix E.
    pub use_e: bool,
    /// E's element type (read only when `use_e`).
    pub e_type: DataType,
    /// `groupedGemm`: one of a group of GEMMs launched together.
    pub grouped_gemm: bool,
    /// Grouped GEMM arguments live in device memory (hipBLASLt's
    /// `useDeviceUserArguments`).
    pub device_user_arguments: bool,
    /// `useScaleAB`.
    pub use_scale_ab: ScaleMode,
    /// `useScaleCD`: C and D are scaled (FP8 outputs).
    pub use_scale_cd: bool,
    /// `useScaleAlphaVec`: 0, or a per-row alpha vector (1; 2, 3 along the
    /// other dimension).
    pub use_scale_alpha_vec: u8,
    /// `sparse`: 0 dense; 1, 2 structured sparsity in A or B.
    pub sparse: u8,
    /// `outputAmaxD`: the kernel also writes the absolute maximum of D.
    pub output_amax_d: bool,
    /// `swizzleTensorA`: A is stored pre-swizzled.
    pub swizzle_a: bool,
    /// `swizzleTensorB`.
    pub swizzle_b: bool,
    /// `mxBlockA`: elements of K per block scale of A (the OCP
    /// Microscaling formats: 32), or 0 without block scales.
    pub mx_block_a: u32,
    /// `mxBlockB`, as `mx_block_a` for B.
    pub mx_block_b: u32,
    /// `mxTypeA`: A's block-scale type (read only when `mx_block_a` ≠ 0).
    pub mx_type_a: DataType,
    /// `mxTypeB`.
    pub mx_type_b: DataType,
    /// hipBLASLt's `params.gsu`: a global split-U the caller forces (0:
    /// each solution's own).
    pub gsu: i64,
}

impl Problem {
    /// A single GEMM of one type with packed (minimal) leading dimensions.
    pub fn gemm(
        trans_a: Transpose,
        trans_b: Transpose,
        m: u64,
        n: u64,
        k: u64,
        ty: DataType,
    ) -> Self {
        let lda = if trans_a.is_transposed() { k } else { m };
        let ldb = if trans_b.is_transposed() { n } else { k };
        let mut p = Problem {
            trans_a,
            trans_b,
            m,
            n,
            k,
            batch: 1,
            a_type: ty,
            b_type: ty,
            c_type: ty,
            d_type: ty,
            lda: lda.max(1),
            ldb: ldb.max(1),
            ldc: m.max(1),
            ldd: m.max(1),
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
            stride_d: 0,
            high_precision_accumulate: false,
            strided_batched: true,
            deterministic_mode: false,
            fp16_alt_impl: false,
            stochastic_rounding: false,
            f32_xdl_math_op: DataType::Float,
            kernel_language: KernelLanguage::Any,
            arithmetic_unit: ArithmeticUnit::Any,
            performance_metric: PerformanceMetric::DeviceEfficiency,
            workspace_size: 0,
            alpha: 1.0,
            beta: 0.0,
            c_equals_d: true,
            compute_type: ty,
            compute_input_type: ty,
            activation: Activation::None,
            activation_enum: Activation::None,
            activation_compute_type: ty,
            activation_no_guard: false,
            use_gradient: false,
            use_bias: 0,
            bias_type: ty,
            bias_src: 3,
            use_e: false,
            e_type: ty,
            grouped_gemm: false,
            device_user_arguments: false,
            use_scale_ab: ScaleMode::None,
            use_scale_cd: false,
            use_scale_alpha_vec: 0,
            sparse: 0,
            output_amax_d: false,
            swizzle_a: false,
            swizzle_b: false,
            mx_block_a: 0,
            mx_block_b: 0,
            mx_type_a: DataType::E8,
            mx_type_b: DataType::E8,
            gsu: 0,
        };
        p.pack_batch_strides();
        p
    }

    /// A GEMM as hipBLASLt's `hipblasLtMatmul` poses it to TensileLite for
    /// a plain call (default epilogue, no bias, no scale pointers, no aux
    /// output, the heuristic's default preference): A, B and C = D types,
    /// and the Tensile compute type (`Float` for every f32 compute mode,
    /// f16's `compute_f16` included; `Double`; `Int32`).
    ///
    /// What it sets beyond [`Problem::gemm`] (RL `tensile_host.cpp`
    /// `ConstructTensileProblem`, TENSILELITE.md §5): the compute-input
    /// type is the smaller of A and B (A on a tie), or `Float8BFloat8` /
    /// `BFloat8Float8` for mixed FP8 inputs; high-precision accumulation
    /// when the compute type is wider than A; the activation compute type
    /// is the compute type. Unchanged from `gemm` and equal to what
    /// hipBLASLt passes: strided batched, workspace 0 (the heuristic
    /// preference's `MAX_WORKSPACE_BYTES` default; pass the real size when
    /// calling with a workspace), `F32XdlMathOp` `Float`, no activation,
    /// bias, E, scaling, sparsity or swizzle, `gsu` 0. Batch strides are
    /// packed; no TensileLite 7.1.1 predicate reads them.
    #[allow(clippy::too_many_arguments)]
    pub fn hipblaslt(
        trans_a: Transpose,
        trans_b: Transpose,
        m: u64,
        n: u64,
        k: u64,
        a_type: DataType,
        b_type: DataType,
        cd_type: DataType,
        compute_type: DataType,
    ) -> Self {
        let mut p = Problem::gemm(trans_a, trans_b, m, n, k, a_type);
        (p.b_type, p.c_type, p.d_type) = (b_type, cd_type, cd_type);
        p.compute_type = compute_type;
        p.activation_compute_type = compute_type;
        p.bias_type = cd_type;
        p.e_type = cd_type;
        p.compute_input_type = DataType::compute_input_of(a_type, b_type);
        p.high_precision_accumulate = compute_type.element_bytes() > a_type.element_bytes();
        p.pack_batch_strides();
        p
    }

    /// Sets alpha and beta as hipBLASLt does: with alpha 0 it also poses
    /// K = 0 ("We set K=0 when alpha==0", `ConstructTensileProblem`), which
    /// changes the matching key.
    pub fn with_hipblaslt_scalars(mut self, alpha: f64, beta: f64) -> Self {
        (self.alpha, self.beta) = (alpha, beta);
        if alpha == 0.0 {
            self.k = 0;
        }
        self
    }

    /// Sets the batch count and packed batch strides (each matrix right
    /// after the previous one: what Tensile computes for a stride given as
    /// "use the default", which rocBLAS does not pass; see [`Problem`]).
    pub fn with_batch(mut self, batch: u64) -> Self {
        self.batch = batch;
        self.pack_batch_strides();
        self
    }

    /// Sets the leading dimensions (batch strides are re-packed).
    pub fn with_leading_dims(mut self, lda: u64, ldb: u64, ldc: u64, ldd: u64) -> Self {
        (self.lda, self.ldb, self.ldc, self.ldd) = (lda, ldb, ldc, ldd);
        self.pack_batch_strides();
        self
    }

    fn pack_batch_strides(&mut self) {
        let (a_cols, b_cols) = (self.a_sizes()[1], self.b_sizes()[1]);
        self.stride_a = self.lda.wrapping_mul(a_cols);
        self.stride_b = self.ldb.wrapping_mul(b_cols);
        self.stride_c = self.ldc.wrapping_mul(self.n);
        self.stride_d = self.ldd.wrapping_mul(self.n);
    }

    /// A's sizes in storage order: `[M, K, batch]`, or `[K, M, batch]`
    /// when transposed.
    pub fn a_sizes(&self) -> [u64; 3] {
        if self.trans_a.is_transposed() {
            [self.k, self.m, self.batch]
        } else {
            [self.m, self.k, self.batch]
        }
    }

    /// B's sizes in storage order: `[K, N, batch]`, or `[N, K, batch]`.
    pub fn b_sizes(&self) -> [u64; 3] {
        if self.trans_b.is_transposed() {
            [self.n, self.k, self.batch]
        } else {
            [self.k, self.n, self.batch]
        }
    }

    /// A's strides in elements, Tensile's `a.strides`: `[1, lda,
    /// stride_a]`.
    pub fn a_strides(&self) -> [u64; 3] {
        [1, self.lda, self.stride_a]
    }
    /// B's strides in elements: `[1, ldb, stride_b]`.
    pub fn b_strides(&self) -> [u64; 3] {
        [1, self.ldb, self.stride_b]
    }
    /// C's strides in elements: `[1, ldc, stride_c]`.
    pub fn c_strides(&self) -> [u64; 3] {
        [1, self.ldc, self.stride_c]
    }
    /// D's strides in elements: `[1, ldd, stride_d]`.
    pub fn d_strides(&self) -> [u64; 3] {
        [1, self.ldd, self.stride_d]
    }

    /// Tensile's operation identifier, the key of a catalog's ProblemMap.
    pub fn operation_identifier(&self) -> &'static str {
        use Transpose as T;
        match (self.trans_a, self.trans_b) {
            (T::None, T::None) => "Contraction_l_Ailk_Bljk_Cijk_Dijk",
            (T::Transpose, T::None) => "Contraction_l_Alik_Bljk_Cijk_Dijk",
            (T::ConjugateTranspose, T::None) => "Contraction_l_AlikC_Bljk_Cijk_Dijk",
            (T::None, T::Transpose) => "Contraction_l_Ailk_Bjlk_Cijk_Dijk",
            (T::Transpose, T::Transpose) => "Contraction_l_Alik_Bjlk_Cijk_Dijk",
            (T::ConjugateTranspose, T::Transpose) => "Contraction_l_AlikC_Bjlk_Cijk_Dijk",
            (T::None, T::ConjugateTranspose) => "Contraction_l_Ailk_BjlkC_Cijk_Dijk",
            (T::Transpose, T::ConjugateTranspose) => "Contraction_l_Alik_BjlkC_Cijk_Dijk",
            (T::ConjugateTranspose, T::ConjugateTranspose) => "Contraction_l_AlikC_BjlkC_Cijk_Dijk",
        }
    }

    /// Tensile's `size(i)`: C's sizes (M, N, batch), then the bound size K.
    pub fn size(&self, i: usize) -> Option<u64> {
        [self.m, self.n, self.batch, self.k].get(i).copied()
    }

    /// Number of indices `size` answers for.
    pub const SIZES: usize = 4;

    /// `maxProblemSize`: the largest free or bound size (batch excluded).
    pub fn max_problem_size(&self) -> u64 {
        self.m.max(self.n).max(self.k)
    }

    /// The boolean switches packed in one word (for hash keys).
    pub(crate) fn flag_bits(&self) -> u64 {
        (self.high_precision_accumulate as u64)
            | (self.strided_batched as u64) << 1
            | (self.deterministic_mode as u64) << 2
            | (self.fp16_alt_impl as u64) << 3
            | (self.stochastic_rounding as u64) << 4
            | (self.c_equals_d as u64) << 5
    }

    /// The enumerations packed in one word (for hash keys), and the block
    /// scales' sizes and types.
    pub(crate) fn mode_bits(&self) -> u64 {
        let language = match self.kernel_language {
            KernelLanguage::Any => 0,
            KernelLanguage::Assembly => 1,
            KernelLanguage::Source => 2,
        };
        let unit = match self.arithmetic_unit {
            ArithmeticUnit::Any => 0,
            ArithmeticUnit::Mfma => 1,
            ArithmeticUnit::Valu => 2,
        };
        let metric = match self.performance_metric {
            PerformanceMetric::DeviceEfficiency => 0,
            PerformanceMetric::CuEfficiency => 1,
            PerformanceMetric::Auto => 2,
            PerformanceMetric::Experimental => 3,
        };
        language
            | unit << 2
            | metric << 4
            | (self.f32_xdl_math_op as u64) << 8
            | u64::from(self.mx_block_a.min(0xFF)) << 16
            | u64::from(self.mx_block_b.min(0xFF)) << 24
            | (self.mx_type_a as u64) << 32
            | (self.mx_type_b as u64) << 40
    }

    /// TensileLite's class fields packed in two words (for hash keys):
    /// everything a class-only TensileLite leaf reads.
    pub(crate) fn lite_bits(&self) -> [u64; 2] {
        let types = (self.compute_type as u64)
            | (self.compute_input_type as u64) << 8
            | (self.activation_compute_type as u64) << 16
            | (self.bias_type as u64) << 24
            | (self.e_type as u64) << 32
            | (self.activation as u64) << 40
            | (self.activation_enum as u64) << 48
            | (self.use_scale_ab as u64) << 56;
        let small = (self.activation_no_guard as u64)
            | (self.use_gradient as u64) << 1
            | (self.use_e as u64) << 2
            | (self.grouped_gemm as u64) << 3
            | (self.device_user_arguments as u64) << 4
            | (self.use_scale_cd as u64) << 5
            | (self.output_amax_d as u64) << 6
            | (self.swizzle_a as u64) << 7
            | (self.swizzle_b as u64) << 8
            | (self.use_bias as u64) << 16
            | (self.bias_src as u64) << 24
            | (self.use_scale_alpha_vec as u64) << 32
            | (self.sparse as u64) << 40;
        [types, small]
    }

    /// `flopCount` with size_t arithmetic (it wraps as Tensile's does).
    pub fn flop_count(&self) -> u64 {
        2u64.wrapping_mul(self.a_type.packing())
            .wrapping_mul(self.m)
            .wrapping_mul(self.n)
            .wrapping_mul(self.batch)
            .wrapping_mul(self.k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Problem::hipblaslt` poses what TENSILELITE.md §5 says hipBLASLt
    /// poses; alpha 0 poses K = 0.
    #[test]
    fn hipblaslt_poses_its_plain_gemm() {
        let p = Problem::hipblaslt(
            Transpose::None,
            Transpose::Transpose,
            64,
            32,
            16,
            DataType::Float8,
            DataType::BFloat8,
            DataType::Float,
            DataType::Float,
        );
        assert_eq!(p.compute_input_type, DataType::Float8BFloat8);
        assert!(p.high_precision_accumulate);
        assert_eq!((p.workspace_size, p.f32_xdl_math_op), (0, DataType::Float));
        assert!(p.strided_batched && p.use_bias == 0 && p.activation == Activation::None);
        let f32 = Problem::hipblaslt(
            Transpose::None,
            Transpose::None,
            8,
            8,
            8,
            DataType::Float,
            DataType::Half,
            DataType::Float,
            DataType::Float,
        );
        assert_eq!(f32.compute_input_type, DataType::Half, "the smaller input");
        assert!(!f32.high_precision_accumulate);
        assert_eq!(f32.clone().with_hipblaslt_scalars(0.0, 1.0).k, 0);
        assert_eq!(f32.with_hipblaslt_scalars(2.0, 1.0).k, 8);
    }

    #[test]
    fn operation_identifiers_follow_tensiles_index_names() {
        let p = |a, b| Problem::gemm(a, b, 8, 8, 8, DataType::Float).operation_identifier();
        assert_eq!(
            p(Transpose::None, Transpose::None),
            "Contraction_l_Ailk_Bljk_Cijk_Dijk"
        );
        assert_eq!(
            p(Transpose::Transpose, Transpose::None),
            "Contraction_l_Alik_Bljk_Cijk_Dijk"
        );
        assert_eq!(
            p(Transpose::None, Transpose::Transpose),
            "Contraction_l_Ailk_Bjlk_Cijk_Dijk"
        );
        assert_eq!(
            p(Transpose::ConjugateTranspose, Transpose::Transpose),
            "Contraction_l_AlikC_Bjlk_Cijk_Dijk"
        );
    }

    /// Every packed type (several elements to the byte boundary) has an MX
    /// format, which `Gemm::validate` names in its refusals, and a unit
    /// that ends on a byte; the 8-bit floats' is MXFP8, no other type has
    /// one.
    #[test]
    fn packed_types_have_an_mx_format_and_units_that_end_on_a_byte() {
        for t in DataType::ALL {
            let unit = t.unit_elements();
            assert_eq!(unit * t.element_bits() % 8, 0, "{t}");
            if unit > 1 {
                assert!(t.mx_format().is_some(), "{t}");
            }
        }
        let named: Vec<_> = DataType::ALL
            .iter()
            .filter_map(|&t| t.mx_format().map(|f| (t, f)))
            .collect();
        assert_eq!(
            named,
            [
                (DataType::Float8, "MXFP8"),
                (DataType::BFloat8, "MXFP8"),
                (DataType::Float4, "MXFP4"),
                (DataType::Float6, "MXFP6"),
                (DataType::BFloat6, "MXFP6"),
            ]
        );
    }

    #[test]
    fn packed_strides_follow_the_stored_shape() {
        let p = Problem::gemm(
            Transpose::Transpose,
            Transpose::None,
            100,
            30,
            7,
            DataType::Half,
        )
        .with_batch(4);
        assert_eq!(p.a_sizes(), [7, 100, 4]);
        assert_eq!(p.a_strides(), [1, 7, 700]);
        assert_eq!(p.b_strides(), [1, 7, 210]);
        assert_eq!(p.c_strides(), [1, 100, 3000]);
        assert_eq!(
            (p.size(0), p.size(3), p.size(4)),
            (Some(100), Some(7), None)
        );
    }
}
