//! The leaves of a solution's problem predicate (Tensile 4.36
//! `ContractionProblemPredicates.hpp`, with rocBLAS's and hipBLASLt's
//! additions), as one table: each leaf is one row of [`leaves!`] saying
//! its catalog name, whether it carries an index, the shape of its value,
//! whether it reads only what a problem's class fixes, how it is judged
//! and what a trace shows of the problem's side. Decoding, encoding,
//! evaluation, naming and tracing all read that row; none keeps a list of
//! its own.
//!
//! A leaf is a [`Kind`] (which row), an index and a [`Value`]. The value's
//! shape is the row's, so accessors such as [`ProblemLeaf::number`] read
//! what the row promises.

use super::decode::{Decoder, fields};
use super::error::Result;
use super::msgpack::Writer;
use super::problem::{
    Activation, ArithmeticUnit, DataType, KernelLanguage, PerformanceMetric, Problem, ScaleMode,
};

/// `ScalarValue`: a restriction on alpha or beta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarValue {
    /// No restriction (`Any`); a problem's scalar that is neither 1 nor -1
    /// is also categorised so.
    Any,
    /// Exactly 1 (`1`).
    One,
    /// Exactly -1 (`-1`).
    NegativeOne,
}

impl ScalarValue {
    /// The name catalogs write (`Any`, `1`, `-1`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarValue::Any => "Any",
            ScalarValue::One => "1",
            ScalarValue::NegativeOne => "-1",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        [Self::Any, Self::One, Self::NegativeOne]
            .into_iter()
            .find(|v| v.name() == name)
    }

    fn of(v: f64) -> Self {
        if v == 1.0 {
            ScalarValue::One
        } else if v == -1.0 {
            ScalarValue::NegativeOne
        } else {
            ScalarValue::Any
        }
    }
}

/// What a leaf's `value` holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// The leaf has no value.
    None,
    /// A number: a size, stride, multiple or limit, by the leaf's kind.
    U64(u64),
    /// A required setting of a boolean switch of the problem.
    Bool(bool),
    /// A restriction on alpha or beta.
    Scalar(ScalarValue),
    /// The kernel's language (`KernelLanguageCompatible`).
    Language(KernelLanguage),
    /// The kernel's arithmetic unit (`ArithmeticUnitCompatible`).
    Unit(ArithmeticUnit),
    /// A, B, C, D, and TensileLite's compute-input type when the catalog
    /// gives a fifth entry.
    Types([DataType; 4], Option<DataType>),
    /// One type (`F32XdlMathOp`).
    Type(DataType),
    /// A string (`OperationIdentifierEqual`'s operation identifier).
    Text(Box<str>),
    /// `min <= x < max` (a missing `max` is `u64::MAX`).
    Range {
        /// The smallest value in range.
        min: u64,
        /// The first value past the range.
        max: u64,
    },
    /// `ShiftPtrElemA`, `ShiftPtrElemB`, `DUorMT0`, `DUorMT1` (boxed: the
    /// rare leaf that would double every leaf's size).
    BufferLoad(Box<[u64; 4]>),
    /// An activation kind (`Activation`).
    Activation(Activation),
    /// A scaling mode (`UseScaleAB`).
    Scale(ScaleMode),
    /// Integers: a white list of tensor ids, or a kernel's parameters
    /// (`WorkgroupNumberCheck`'s `[MT0, MT1, GSU]`, ...).
    Ints(Box<[i64]>),
    /// A white list of data types (`BiasDataTypeWhiteList`).
    TypeList(Box<[DataType]>),
    /// A white list of activation kinds (`ActivationEnumWhiteList`).
    Activations(Box<[Activation]>),
}

/// The shape of a row's value, as decoding reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    None,
    U64,
    Bool,
    Scalar,
    Language,
    Unit,
    Types,
    Type,
    Text,
    Range,
    BufferLoad,
    Activation,
    Scale,
    /// Integers, any number of them.
    IntList,
    /// Exactly two integers.
    Ints2,
    /// Exactly three.
    Ints3,
    /// Exactly six.
    Ints6,
    TypeList,
    Activations,
    /// A number (Tensile 4.36) or integers (TensileLite).
    NumberOrInts,
}

/// Whether a row carries an `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Index {
    None,
    /// Required, not negative.
    Unsigned,
    /// Required; a negative index counts from the last bound index.
    Signed,
}

/// One row: everything the code knows about a leaf kind.
struct Row {
    name: &'static str,
    index: Index,
    shape: Shape,
    /// Reads only what a problem's class fixes (operation, types, flags,
    /// metric), never sizes, strides or scalars.
    class_only: bool,
    /// The trace's text for the solution's side of a number: before and
    /// after the value.
    expect: (&'static str, &'static str),
    eval: fn(&ProblemLeaf, &Problem) -> bool,
    observed: fn(&ProblemLeaf, &Problem) -> String,
}

/// The table: `Kind, "CatalogName", index, shape, class-only, expected text
/// (for numbers), |leaf, problem| eval, |leaf, problem| what the trace
/// shows of the problem`.
macro_rules! leaves {
    ($($kind:ident, $name:literal, $index:ident, $shape:ident, $class:literal, $expect:expr,
       $eval:expr, $observed:expr;)+) => {
        /// Which leaf (a row of the table).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Kind {
            $(
                #[doc = concat!("Tensile's `", $name, "` predicate.")]
                $kind,
            )+
        }

        const ROWS: &[Row] = &[$(Row {
            name: $name,
            index: Index::$index,
            shape: Shape::$shape,
            class_only: $class,
            expect: $expect,
            eval: $eval,
            observed: $observed,
        },)+];

        #[cfg(test)]
        const KINDS: &[Kind] = &[$(Kind::$kind,)+];

        impl Kind {
            /// The kind a catalog names `name` (a `match`: catalogs name
            /// a leaf per predicate node, tens of thousands of times).
            pub fn from_name(name: &str) -> Option<Kind> {
                match name {
                    $($name => Some(Kind::$kind),)+
                    _ => None,
                }
            }
        }
    };
}

/// Expected-text templates.
const MULTIPLE: (&str, &str) = ("multiple of ", "");
const EQUAL: (&str, &str) = ("== ", "");
const GREATER: (&str, &str) = ("> ", "");
const LESS: (&str, &str) = ("< ", "");
const AT_LEAST: (&str, &str) = (">= ", "");
const PLAIN: (&str, &str) = ("", "");

leaves! {
    Free0SizeMultiple, "Free0SizeMultiple", Unsigned, U64, false, MULTIPLE,
        |l, p| only(l.index, p.m).is_some_and(|m| multiple(m, l.number())),
        |_, p| p.m.to_string();
    Free1SizeMultiple, "Free1SizeMultiple", Unsigned, U64, false, MULTIPLE,
        |l, p| only(l.index, p.n).is_some_and(|n| multiple(n, l.number())),
        |_, p| p.n.to_string();
    BatchSizeMultiple, "BatchSizeMultiple", Unsigned, U64, false, MULTIPLE,
        |l, p| only(l.index, p.batch).is_some_and(|b| multiple(b, l.number())),
        |_, p| p.batch.to_string();
    BatchSizeEqual, "BatchSizeEqual", Unsigned, U64, false, EQUAL,
        |l, p| only(l.index, p.batch) == Some(l.number()),
        |_, p| p.batch.to_string();
    BoundSizeMultiple, "BoundSizeMultiple", Signed, U64, false, MULTIPLE,
        |l, p| (l.index == 0 || l.index == -1) && multiple(p.k, l.number()),
        |_, p| p.k.to_string();
    MaxProblemSizeGreaterThan, "MaxProblemSizeGreaterThan", None, U64, false, GREATER,
        |l, p| p.max_problem_size() > l.number(),
        |_, p| p.max_problem_size().to_string();
    LeadingFree0SizesGreaterOrEqual, "LeadingFree0SizesGreaterOrEqual", None, U64, false, AT_LEAST,
        |l, p| p.m >= l.number(),
        |_, p| p.m.to_string();
    // TensileLite also lets a grouped GEMM's empty member (N = 0) pass.
    LeadingFree1SizesGreaterOrEqual, "LeadingFree1SizesGreaterOrEqual", None, U64, false, AT_LEAST,
        |l, p| p.n >= l.number() || (p.grouped_gemm && p.n == 0),
        |_, p| p.n.to_string();
    SizeEqual, "SizeEqual", Unsigned, U64, false, EQUAL,
        |l, p| size(p, l.index) == Some(l.number()),
        |l, p| opt(size(p, l.index));
    SizeGreaterThan, "SizeGreaterThan", Unsigned, U64, false, GREATER,
        |l, p| size(p, l.index).is_some_and(|s| s > l.number()),
        |l, p| opt(size(p, l.index));
    SizeLessThan, "SizeLessThan", Unsigned, U64, false, LESS,
        |l, p| size(p, l.index).is_some_and(|s| s < l.number()),
        |l, p| opt(size(p, l.index));
    SizeMultiple, "SizeMultiple", Unsigned, U64, false, MULTIPLE,
        |l, p| size(p, l.index).is_some_and(|s| multiple(s, l.number())),
        |l, p| opt(size(p, l.index));
    SizeInRange, "SizeInRange", Unsigned, Range, false, PLAIN,
        |l, p| match l.value {
            Value::Range { min, max } => size(p, l.index).is_some_and(|s| s >= min && s < max),
            _ => false,
        },
        |l, p| opt(size(p, l.index));
    StrideAEqual, "StrideAEqual", Unsigned, U64, false, EQUAL,
        |l, p| stride(&p.a_strides(), l.index) == Some(l.number()),
        |l, p| opt(stride(&p.a_strides(), l.index));
    StrideBEqual, "StrideBEqual", Unsigned, U64, false, EQUAL,
        |l, p| stride(&p.b_strides(), l.index) == Some(l.number()),
        |l, p| opt(stride(&p.b_strides(), l.index));
    StrideCEqual, "StrideCEqual", Unsigned, U64, false, EQUAL,
        |l, p| stride(&p.c_strides(), l.index) == Some(l.number()),
        |l, p| opt(stride(&p.c_strides(), l.index));
    StrideDEqual, "StrideDEqual", Unsigned, U64, false, EQUAL,
        |l, p| stride(&p.d_strides(), l.index) == Some(l.number()),
        |l, p| opt(stride(&p.d_strides(), l.index));
    LdcEqualsLdd, "LDCEqualsLDD", None, None, false, PLAIN,
        |_, p| p.ldc == p.ldd,
        |_, p| format!("ldc={} ldd={}", p.ldc, p.ldd);
    CEqualsD, "CEqualsD", None, None, false, PLAIN,
        |_, p| p.c_equals_d,
        |_, p| p.c_equals_d.to_string();
    CdStridesEqual, "CDStridesEqual", None, None, false, PLAIN,
        |_, p| p.c_strides() == p.d_strides(),
        |_, p| format!("c={:?} d={:?}", p.c_strides(), p.d_strides());
    AlphaValue, "AlphaValue", None, Scalar, false, PLAIN,
        |l, p| matches!(l.value, Value::Scalar(v) if v == ScalarValue::Any || ScalarValue::of(p.alpha) == v),
        |_, p| ScalarValue::of(p.alpha).name().to_string();
    BetaValue, "BetaValue", None, Scalar, false, PLAIN,
        |l, p| matches!(l.value, Value::Scalar(v) if v == ScalarValue::Any || ScalarValue::of(p.beta) == v),
        |_, p| ScalarValue::of(p.beta).name().to_string();
    BetaZero, "BetaZero", None, None, false, PLAIN,
        |_, p| p.beta == 0.0,
        |_, p| p.beta.to_string();
    BetaOne, "BetaOne", None, None, false, PLAIN,
        |_, p| p.beta == 1.0,
        |_, p| p.beta.to_string();
    HighPrecisionAccumulate, "HighPrecisionAccumulate", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.high_precision_accumulate),
        |_, p| p.high_precision_accumulate.to_string();
    KernelLanguageCompatible, "KernelLanguageCompatible", None, Language, true, PLAIN,
        |l, p| p.kernel_language == KernelLanguage::Any || l.value == Value::Language(p.kernel_language),
        |_, p| format!("{:?}", p.kernel_language);
    ArithmeticUnitCompatible, "ArithmeticUnitCompatible", None, Unit, true, PLAIN,
        |l, p| p.arithmetic_unit == ArithmeticUnit::Any || l.value == Value::Unit(p.arithmetic_unit),
        |_, p| format!("{:?}", p.arithmetic_unit);
    DeterministicMode, "DeterministicMode", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.deterministic_mode),
        |_, p| p.deterministic_mode.to_string();
    // Tensile 4.36 lists A, B, C, D; TensileLite adds the compute-input
    // type.
    TypesEqual, "TypesEqual", None, Types, true, PLAIN,
        |l, p| match l.value {
            Value::Types(t, fifth) => t == [p.a_type, p.b_type, p.c_type, p.d_type]
                && fifth.is_none_or(|c| c == p.compute_input_type),
            _ => false,
        },
        |l, p| match l.value {
            Value::Types(_, Some(_)) => format!(
                "[{}, {}, {}, {}, {}]",
                p.a_type, p.b_type, p.c_type, p.d_type, p.compute_input_type
            ),
            _ => format!("[{}, {}, {}, {}]", p.a_type, p.b_type, p.c_type, p.d_type),
        };
    OperationIdentifierEqual, "OperationIdentifierEqual", None, Text, true, PLAIN,
        |l, p| matches!(&l.value, Value::Text(s) if **s == *p.operation_identifier()),
        |_, p| p.operation_identifier().to_string();
    BufferLoadOffsetLimitCheck, "BufferLoadOffsetLimitCheck", None, BufferLoad, false, PLAIN,
        |l, p| match &l.value {
            Value::BufferLoad(v) => {
                let [shift_a, shift_b, du_mt0, du_mt1] = **v;
                let a = p.lda.wrapping_mul(du_mt0).wrapping_add(shift_a)
                    .wrapping_mul(p.a_type.element_bytes());
                let b = p.ldb.wrapping_mul(du_mt1).wrapping_add(shift_b)
                    .wrapping_mul(p.b_type.element_bytes());
                a < OFFSET_LIMIT && b < OFFSET_LIMIT
            }
            _ => false,
        },
        |_, p| format!("lda={} ldb={}", p.lda, p.ldb);
    BufferStoreOffsetLimitCheck, "BufferStoreOffsetLimitCheck", None, U64, false, ("x", " < 2^32"),
        |l, p| p.ldd.wrapping_mul(p.d_type.element_bytes()).wrapping_mul(l.number()) < OFFSET_LIMIT,
        |_, p| format!("ldd={}", p.ldd);
    WorkspaceCheck, "WorkspaceCheck", Unsigned, U64, false, ("needs m*n*batch*", ""),
        |l, p| p.m.wrapping_mul(p.n).wrapping_mul(p.batch).wrapping_mul(l.number()) <= p.workspace_size,
        |_, p| format!("workspace={}", p.workspace_size);
    // Tensile's `eligibleForPK` defaults to true and rocBLAS never clears it.
    PersistentKernelCheck, "PersistentKernelCheck", None, None, true, PLAIN,
        |_, _| true,
        |_, _| "-".to_string();
    // Tensile 4.36: the least K. TensileLite: `[factor, GSU]`, K at least
    // factor·GSU (hipBLASLt's `params.gsu` overrides GSU; GSU 1 or -1
    // passes).
    GlobalSplitUCheckMinK, "GlobalSplitUCheckMinK", None, NumberOrInts, false, AT_LEAST,
        |l, p| match &l.value {
            Value::Ints(v) => {
                let gsu = gsu_of(p, v[1]);
                gsu == 1 || gsu == -1 || p.k as i128 >= gsu as i128 * v[0] as i128
            }
            _ => p.k >= l.number(),
        },
        |_, p| format!("K={} gsu={}", p.k, p.gsu);
    StridedBatched, "StridedBatched", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.strided_batched),
        |_, p| p.strided_batched.to_string();
    CuEfficiency, "CUEfficiency", None, None, false, PLAIN,
        |_, p| match p.performance_metric {
            PerformanceMetric::CuEfficiency => true,
            PerformanceMetric::Auto => p.flop_count() < 1500 * 1500 * 1500 * 2,
            _ => false,
        },
        |_, p| format!("{:?}", p.performance_metric);
    Experimental, "Experimental", None, None, true, PLAIN,
        |_, p| p.performance_metric == PerformanceMetric::Experimental,
        |_, p| format!("{:?}", p.performance_metric);
    Fp16AltImpl, "Fp16AltImpl", None, None, true, PLAIN,
        |_, p| p.fp16_alt_impl,
        |_, p| p.fp16_alt_impl.to_string();
    EqualityMatching, "EqualityMatching", None, None, true, PLAIN,
        |_, _| true,
        |_, _| "-".to_string();
    StochasticRounding, "StochasticRounding", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.stochastic_rounding),
        |_, p| p.stochastic_rounding.to_string();
    F32XdlMathOp, "F32XdlMathOp", None, Type, true, PLAIN,
        |l, p| l.value == Value::Type(p.f32_xdl_math_op),
        |_, p| p.f32_xdl_math_op.to_string();
    // TensileLite (hipBLASLt 7.1.1), RL `ContractionProblemPredicates.hpp`
    // (TENSILELITE.md §6.2, §6.3). Most are "the problem does not ask, so
    // any kernel will do" tests: a kernel built with a feature also runs
    // problems without it.
    Activation, "Activation", None, Activation, true, PLAIN,
        |l, p| match l.value {
            Value::Activation(v) => activation_ok(v, p.activation),
            _ => false,
        },
        |_, p| p.activation.name().to_string();
    ActivationComputeType, "ActivationComputeType", None, Type, true, PLAIN,
        |l, p| p.activation == Activation::None || l.value == Value::Type(p.activation_compute_type),
        |_, p| format!("{} ({})", p.activation_compute_type, p.activation.name());
    ActivationNoGuard, "ActivationNoGuard", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.activation_no_guard),
        |_, p| p.activation_no_guard.to_string();
    UseGradient, "UseGradient", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.use_gradient),
        |_, p| p.use_gradient.to_string();
    UseBias, "UseBias", None, U64, true, PLAIN,
        |l, p| p.use_bias == 0 || l.number() != 0,
        |_, p| p.use_bias.to_string();
    UseE, "UseE", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.use_e),
        |_, p| p.use_e.to_string();
    DataTypeE, "DataTypeE", None, Type, true, PLAIN,
        |l, p| !p.use_e || l.value == Value::Type(p.e_type),
        |_, p| format!("{} (useE {})", p.e_type, p.use_e);
    GroupedGemm, "GroupedGemm", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.grouped_gemm),
        |_, p| p.grouped_gemm.to_string();
    UseScaleAB, "UseScaleAB", None, Scale, true, PLAIN,
        |l, p| p.use_scale_ab == ScaleMode::None || l.value == Value::Scale(p.use_scale_ab),
        |_, p| format!("{:?}", p.use_scale_ab.name());
    UseScaleCD, "UseScaleCD", None, Bool, true, PLAIN,
        |l, p| !p.use_scale_cd || l.value == Value::Bool(true),
        |_, p| p.use_scale_cd.to_string();
    UseScaleAlphaVec, "UseScaleAlphaVec", None, U64, true, PLAIN,
        |l, p| p.use_scale_alpha_vec == 0 || u64::from(p.use_scale_alpha_vec) & l.number() != 0,
        |_, p| p.use_scale_alpha_vec.to_string();
    Sparse, "Sparse", None, U64, true, PLAIN,
        |l, p| u64::from(p.sparse) == l.number(),
        |_, p| p.sparse.to_string();
    SupportDeviceUserArguments, "SupportDeviceUserArguments", None, Bool, true, PLAIN,
        |l, p| !(p.device_user_arguments && p.grouped_gemm) || l.value == Value::Bool(true),
        |_, p| format!("{} (grouped {})", p.device_user_arguments, p.grouped_gemm);
    SwizzleTensorA, "SwizzleTensorA", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.swizzle_a),
        |_, p| p.swizzle_a.to_string();
    SwizzleTensorB, "SwizzleTensorB", None, Bool, true, PLAIN,
        |l, p| l.value == Value::Bool(p.swizzle_b),
        |_, p| p.swizzle_b.to_string();
    // Block scales (OCP Microscaling): newer TensileLite than 7.1.1
    // (`ProblemType.predicates` writes MXBlockA/B on every solution and
    // DataTypeMXSA/B when the block is non-zero; the C++ tests are strict
    // equalities), so a plain problem never takes an MX kernel, nor an MX
    // problem a plain one.
    MxBlockA, "MXBlockA", None, U64, true, EQUAL,
        |l, p| u64::from(p.mx_block_a) == l.number(),
        |_, p| p.mx_block_a.to_string();
    MxBlockB, "MXBlockB", None, U64, true, EQUAL,
        |l, p| u64::from(p.mx_block_b) == l.number(),
        |_, p| p.mx_block_b.to_string();
    DataTypeMxsA, "DataTypeMXSA", None, Type, true, PLAIN,
        |l, p| l.value == Value::Type(p.mx_type_a),
        |_, p| format!("{} (MXBlockA {})", p.mx_type_a, p.mx_block_a);
    DataTypeMxsB, "DataTypeMXSB", None, Type, true, PLAIN,
        |l, p| l.value == Value::Type(p.mx_type_b),
        |_, p| format!("{} (MXBlockB {})", p.mx_type_b, p.mx_block_b);
    BiasDataTypeWhiteList, "BiasDataTypeWhiteList", None, TypeList, true, PLAIN,
        |l, p| p.use_bias == 0 || matches!(&l.value, Value::TypeList(t) if t.contains(&p.bias_type)),
        |_, p| format!("{} (useBias {})", p.bias_type, p.use_bias);
    // The bias length test of the source always holds here: a problem's
    // bias is as long as hipBLASLt makes it (see `Problem::bias_src`).
    BiasSrcWhiteList, "BiasSrcWhiteList", None, IntList, true, PLAIN,
        |l, p| {
            if p.use_bias != 0 && p.use_scale_alpha_vec != 0 && p.use_bias != p.use_scale_alpha_vec {
                return false;
            }
            p.use_bias == 0 || matches!(&l.value, Value::Ints(v) if v.contains(&i64::from(p.bias_src)))
        },
        |_, p| format!("{} (useBias {})", p.bias_src, p.use_bias);
    AmaxDCheck, "AmaxDCheck", None, Bool, false, PLAIN,
        |l, p| l.value == Value::Bool(p.output_amax_d) && (!p.output_amax_d || matches!(p.gsu, 0 | 1)),
        |_, p| format!("{} (gsu {})", p.output_amax_d, p.gsu);
    ActivationEnumWhiteList, "ActivationEnumWhiteList", None, Activations, true, PLAIN,
        |l, p| !matches!(p.activation, Activation::All | Activation::HipblasltAll)
            || matches!(&l.value, Value::Activations(a) if a.contains(&p.activation_enum)),
        |_, p| format!("{} ({})", p.activation_enum.name(), p.activation.name());
    // `[MT0, MT1, GSU]`: at most 2^24 workgroups (computed in floating
    // point, as the source does: `workgroups_fit`).
    WorkgroupNumberCheck, "WorkgroupNumberCheck", Unsigned, Ints3, false, PLAIN,
        |l, p| match &l.value {
            Value::Ints(v) => workgroups_fit(p, v[0], v[1], gsu_of(p, v[2])),
            _ => false,
        },
        |_, p| format!("M={} N={} batch={} gsu={}", p.m, p.n, p.batch, p.gsu);
    BufferLoadOffsetLimitCheckBeta, "BufferLoadOffsetLimitCheck_Beta", None, U64, false, ("x", " < 2^32"),
        |l, p| p.beta == 0.0
            || p.m.wrapping_mul(p.n).wrapping_mul(p.batch) == 0
            || p.ldc.wrapping_mul(p.c_type.element_bytes()).wrapping_mul(l.number()) < OFFSET_LIMIT,
        |_, p| format!("ldc={} beta={}", p.ldc, p.beta);
    // `[XCC, XCCG]`: XCC a power of two dividing XCCG. An XCCG of -1 (the
    // CU count) is accepted at load only with XCC 1 or -1, where the CU
    // count cannot matter (`decode`).
    WorkgroupMappingXccCheck, "WorkgroupMappingXCCCheck", None, Ints2, true, PLAIN,
        |l, p| match &l.value {
            Value::Ints(v) => {
                let _ = p;
                let (xcc, group) = (v[0], v[1]);
                xcc == -1 || (xcc > 0 && (xcc as u64).is_power_of_two() && (group == -1 || group % xcc == 0))
            }
            _ => false,
        },
        |_, _| "-".to_string();
    // `[MT0, MT1, v2, v3, v4, GSU]` (7.1-era limit 409,600 synchronizer
    // elements; UNCONFIRMED for 7.1.1, TENSILELITE.md §11).
    SynchronizerSizeCheck, "SynchronizerSizeCheck", Unsigned, Ints6, false, PLAIN,
        |l, p| match &l.value {
            Value::Ints(v) => {
                let gsu = gsu_of(p, v[5]);
                gsu == 1 || gsu == -1 || {
                    let tiles = |x: u64, t: i64| (x as f64 / t as f64).ceil();
                    tiles(p.m, v[0]) * tiles(p.n, v[1]) * (v[2] * v[4] * v[3]) as f64 * p.batch as f64
                        <= 409_600.0
                }
            }
            _ => false,
        },
        |_, p| format!("M={} N={} batch={} gsu={}", p.m, p.n, p.batch, p.gsu);
}

/// TensileLite's `Activation` leaf: the kernel's activation `v` serves
/// problem activation `p`.
fn activation_ok(v: Activation, p: Activation) -> bool {
    use Activation as A;
    v == A::All
        || p == v
        || p == A::None
        || (v == A::HipblasltAll && matches!(p, A::DGelu | A::Gelu | A::Relu | A::Silu | A::Clamp))
}

/// The split-U a TensileLite predicate tests: the caller's `gsu` if it
/// forces one, else the solution's.
/// `WorkgroupNumberCheck` for macro tile `mt0` × `mt1` and split `gsu`:
/// `ceil(M/MT0)·ceil(N/MT1)·max(gsu,1)·batch ≤ 2^24` in `f64`, as
/// TensileLite computes it (`gsu` -1 always passes). Most problems are
/// answered without dividing: with tiles of at least 1 and sizes whose
/// exact product `M·N·max(gsu,1)·batch` is at most 2^24, either a factor
/// is 0 (and the floating-point product, of finite factors, is 0 too) or
/// every factor is at most 2^24, an integer exact in `f64` that its
/// rounded, ceiled quotient cannot exceed, so the floating-point product
/// is at most 2^24 too.
fn workgroups_fit(p: &Problem, mt0: i64, mt1: i64, gsu: i64) -> bool {
    const LIMIT: u64 = 1 << 24;
    if gsu == -1 {
        return true;
    }
    let g = gsu.max(1) as u64;
    let small = [p.n, g, p.batch]
        .iter()
        .try_fold(p.m, |acc, &x| acc.checked_mul(x).filter(|&v| v <= LIMIT))
        .is_some();
    if small && mt0 >= 1 && mt1 >= 1 {
        return true;
    }
    let tiles = |x: u64, t: i64| (x as f64 / t as f64).ceil();
    tiles(p.m, mt0) * tiles(p.n, mt1) * g as f64 * p.batch as f64 <= LIMIT as f64
}

fn gsu_of(p: &Problem, solution: i64) -> i64 {
    if p.gsu != 0 { p.gsu } else { solution }
}

/// A leaf of a problem predicate: a row of the table, its index (0 for
/// rows without one) and its value. Index and value are Tensile's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProblemLeaf {
    /// Which test.
    pub kind: Kind,
    /// The tensor index the test reads (0 for kinds without one); for
    /// `BoundSizeMultiple` a negative index counts from the last bound
    /// index.
    pub index: i64,
    /// What the problem is compared with, in the kind's shape.
    pub value: Value,
}

/// `x % m == 0`, false for m == 0 (Tensile would divide by zero).
fn multiple(x: u64, m: u64) -> bool {
    m != 0 && x.is_multiple_of(m)
}

/// A GEMM has exactly one free index per side, one batch and one bound.
fn only(index: i64, v: u64) -> Option<u64> {
    (index == 0).then_some(v)
}

fn size(p: &Problem, index: i64) -> Option<u64> {
    usize::try_from(index).ok().and_then(|i| p.size(i))
}

fn stride(strides: &[u64], index: i64) -> Option<u64> {
    usize::try_from(index)
        .ok()
        .and_then(|i| strides.get(i).copied())
}

fn opt(v: Option<u64>) -> String {
    v.map_or("none".to_string(), |v| v.to_string())
}

const OFFSET_LIMIT: u64 = 1 << 32;

impl Kind {
    fn row(self) -> &'static Row {
        &ROWS[self as usize]
    }

    /// The name catalogs write.
    pub fn name(self) -> &'static str {
        self.row().name
    }
}

impl ProblemLeaf {
    /// The number a numeric row holds (0 for another shape, which its row
    /// never has).
    pub fn number(&self) -> u64 {
        match self.value {
            Value::U64(n) => n,
            _ => 0,
        }
    }

    /// The catalog name of the leaf.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Whether the leaf holds for `p`.
    pub fn eval(&self, p: &Problem) -> bool {
        (self.kind.row().eval)(self, p)
    }

    /// True when the leaf reads only what a problem's class fixes
    /// (operation, types, flags, metric), never sizes, strides or scalars:
    /// its value is then the same for every problem of the class.
    pub fn class_only(&self) -> bool {
        self.kind.row().class_only
    }

    /// The problem's side of the comparison, for traces.
    pub fn observed(&self, p: &Problem) -> String {
        (self.kind.row().observed)(self, p)
    }

    /// The solution's side, for traces.
    pub fn expected(&self) -> String {
        let (before, after) = self.kind.row().expect;
        match &self.value {
            Value::None => "-".to_string(),
            Value::U64(n) => format!("{before}{n}{after}"),
            Value::Bool(b) => b.to_string(),
            Value::Scalar(s) => s.name().to_string(),
            Value::Language(k) => format!("{k:?}"),
            Value::Unit(a) => format!("{a:?}"),
            Value::Types(t, None) => format!("[{}, {}, {}, {}]", t[0], t[1], t[2], t[3]),
            Value::Types(t, Some(c)) => {
                format!("[{}, {}, {}, {}, {c}]", t[0], t[1], t[2], t[3])
            }
            Value::Activation(a) => a.name().to_string(),
            Value::Scale(m) => format!("{:?}", m.name()),
            Value::Ints(v) => format!("{v:?}"),
            Value::TypeList(t) => format!("{t:?}"),
            Value::Activations(a) => {
                let names: Vec<&str> = a.iter().map(|a| a.name()).collect();
                format!("{names:?}")
            }
            Value::Type(t) => t.to_string(),
            Value::Text(s) => s.to_string(),
            Value::Range { min, max } => format!("in [{min}, {max})"),
            Value::BufferLoad(v) => {
                let [a, b, m0, m1] = **v;
                format!("ShiftPtrElemA={a} ShiftPtrElemB={b} DUorMT0={m0} DUorMT1={m1}")
            }
        }
    }

    /// Reads the fields of a leaf map of type `ty` (already read); `None`
    /// for a type that is no problem leaf.
    pub fn decode(d: &mut Decoder<'_>, ty: &str, len: usize) -> Result<Option<Self>> {
        let Some(kind) = Kind::from_name(ty) else {
            return Ok(None);
        };
        let row = kind.row();
        let mut index: Option<i64> = None;
        let mut value: Option<Value> = None;
        fields(d, len, |d, k| match k {
            "index" if row.index != Index::None => {
                d.push_key("index");
                let i = d.i64()?;
                if i < 0 && row.index == Index::Unsigned {
                    return Err(d.invalid(format!("negative index {i}")));
                }
                index = Some(i);
                d.pop();
                Ok(true)
            }
            "value" if row.shape != Shape::None => {
                d.push_key("value");
                value = Some(decode_value(d, row.shape)?);
                d.pop();
                Ok(true)
            }
            _ => Ok(false),
        })?;
        if row.index != Index::None && index.is_none() {
            return Err(d.missing("index"));
        }
        let value = match (row.shape, value) {
            (Shape::None, _) => Value::None,
            (shape, Some(Value::Text(text))) => resolve(d, shape, text)?,
            (_, Some(v)) => v,
            (_, None) => return Err(d.missing("value")),
        };
        if let (Kind::WorkgroupMappingXccCheck, Value::Ints(v)) = (kind, &value)
            && v[1] == -1
            && v[0] != 1
            && v[0] != -1
        {
            return Err(d.invalid(format!(
                "WorkgroupMappingXCCCheck [{}, -1] needs the CU count, which a problem leaf cannot see",
                v[0]
            )));
        }
        Ok(Some(ProblemLeaf {
            kind,
            index: index.unwrap_or(0),
            value,
        }))
    }

    /// Writes the leaf as Tensile does: `type`, then `index` (if the row has
    /// one), then `value` (if it has one).
    pub fn encode(&self, w: &mut Writer) {
        let row = self.kind.row();
        let has_index = row.index != Index::None;
        let has_value = row.shape != Shape::None;
        w.map(1 + usize::from(has_index) + usize::from(has_value));
        w.str("type");
        w.str(row.name);
        if has_index {
            w.str("index");
            w.i64(self.index);
        }
        if !has_value {
            return;
        }
        w.str("value");
        match &self.value {
            Value::None => w.nil(),
            Value::U64(n) => w.u64(*n),
            Value::Bool(b) => w.bool(*b),
            Value::Scalar(s) => w.str(s.name()),
            Value::Language(k) => w.str(language_name(*k)),
            Value::Unit(a) => w.str(unit_name(*a)),
            Value::Types(t, fifth) => {
                w.array(4 + usize::from(fifth.is_some()));
                t.iter().chain(fifth).for_each(|t| w.str(t.name()));
            }
            Value::Activation(a) => w.str(a.name()),
            Value::Scale(m) => w.str(m.name()),
            Value::Ints(v) => {
                w.array(v.len());
                v.iter().for_each(|x| w.i64(*x));
            }
            Value::TypeList(t) => {
                w.array(t.len());
                t.iter().for_each(|t| w.str(t.name()));
            }
            Value::Activations(a) => {
                w.array(a.len());
                a.iter().for_each(|a| w.str(a.name()));
            }
            Value::Type(t) => w.str(t.name()),
            Value::Text(s) => w.str(s),
            Value::Range { min, max } => {
                w.map(if *max == u64::MAX { 1 } else { 2 });
                w.str("min");
                w.u64(*min);
                if *max != u64::MAX {
                    w.str("max");
                    w.u64(*max);
                }
            }
            Value::BufferLoad(v) => {
                let [a, b, m0, m1] = &**v;
                w.map(4);
                for (k, x) in [
                    ("ShiftPtrElemB", b),
                    ("ShiftPtrElemA", a),
                    ("DUorMT1", m1),
                    ("DUorMT0", m0),
                ] {
                    w.str(k);
                    w.u64(*x);
                }
            }
        }
    }
}

/// A value of `shape` as written: names (scalar values, languages, units,
/// data types) stay text until [`resolve`] checks them, after the leaf's
/// index, so a leaf missing its index says so first.
fn decode_value(d: &mut Decoder<'_>, shape: Shape) -> Result<Value> {
    Ok(match shape {
        Shape::None => Value::None,
        Shape::U64 => Value::U64(d.u64()?),
        Shape::Bool => Value::Bool(d.bool()?),
        Shape::Scalar
        | Shape::Language
        | Shape::Unit
        | Shape::Type
        | Shape::Text
        | Shape::Activation
        | Shape::Scale => Value::Text(d.boxed_str()?),
        Shape::Types => {
            let n = d.array_len()?;
            if n != 4 && n != 5 {
                return Err(d.invalid(format!(
                    "TypesEqual needs 4 types (Tensile) or 5 (TensileLite), found {n}"
                )));
            }
            let mut t = [DataType::Float; 5];
            for slot in t.iter_mut().take(n) {
                *slot = data_type(d)?;
            }
            Value::Types([t[0], t[1], t[2], t[3]], (n == 5).then_some(t[4]))
        }
        Shape::IntList | Shape::Ints2 | Shape::Ints3 | Shape::Ints6 => {
            let want = match shape {
                Shape::Ints2 => 2,
                Shape::Ints3 => 3,
                Shape::Ints6 => 6,
                _ => 0,
            };
            let n = d.array_len()?;
            if want != 0 && n != want {
                return Err(d.invalid(format!("expected {want} integers, found {n}")));
            }
            Value::Ints((0..n).map(|_| d.i64()).collect::<Result<_>>()?)
        }
        Shape::NumberOrInts => match d.peek()? {
            crate::msgpack::Kind::Array => decode_value(d, Shape::Ints2)?,
            _ => Value::U64(d.u64()?),
        },
        Shape::TypeList => {
            let n = d.array_len()?;
            Value::TypeList((0..n).map(|_| data_type(d)).collect::<Result<_>>()?)
        }
        Shape::Activations => {
            let n = d.array_len()?;
            Value::Activations(
                (0..n)
                    .map(|_| {
                        let name = d.string()?;
                        Activation::from_name(&name).ok_or_else(|| d.unknown("activation", &name))
                    })
                    .collect::<Result<_>>()?,
            )
        }
        Shape::Range => {
            let n = d.map_len()?;
            let (mut min, mut max) = (0, u64::MAX);
            fields(d, n, |d, k| match k {
                "min" => {
                    min = d.u64()?;
                    Ok(true)
                }
                "max" => {
                    max = d.u64()?;
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            Value::Range { min, max }
        }
        Shape::BufferLoad => {
            const NAMES: [&str; 4] = ["ShiftPtrElemA", "ShiftPtrElemB", "DUorMT0", "DUorMT1"];
            let n = d.map_len()?;
            let mut v: [Option<u64>; 4] = [None; 4];
            fields(d, n, |d, k| {
                let Some(slot) = NAMES.iter().position(|&name| name == k) else {
                    return Ok(false);
                };
                v[slot] = Some(d.u64()?);
                Ok(true)
            })?;
            let mut out = [0; 4];
            for ((slot, read), name) in out.iter_mut().zip(v).zip(NAMES) {
                *slot = read.ok_or_else(|| d.missing(name))?;
            }
            Value::BufferLoad(Box::new(out))
        }
    })
}

/// A data type's name, read and resolved.
fn data_type(d: &mut Decoder<'_>) -> Result<DataType> {
    let name = d.string()?;
    DataType::from_name(&name).ok_or_else(|| d.unknown("data", &name))
}

fn language_name(k: KernelLanguage) -> &'static str {
    match k {
        KernelLanguage::Any => "Any",
        KernelLanguage::Assembly => "Assembly",
        KernelLanguage::Source => "Source",
    }
}

fn unit_name(a: ArithmeticUnit) -> &'static str {
    match a {
        ArithmeticUnit::Any => "Any",
        ArithmeticUnit::Mfma => "MFMA",
        ArithmeticUnit::Valu => "VALU",
    }
}

/// A name-valued leaf's text as its enumeration, for the row's shape; an
/// unknown name is an error naming what it should have been.
fn resolve(d: &Decoder<'_>, shape: Shape, text: Box<str>) -> Result<Value> {
    let unknown = |what: &'static str| d.unknown(what, &text);
    Ok(match shape {
        Shape::Scalar => {
            Value::Scalar(ScalarValue::from_name(&text).ok_or_else(|| unknown("scalar value"))?)
        }
        Shape::Language => Value::Language(
            [
                KernelLanguage::Any,
                KernelLanguage::Assembly,
                KernelLanguage::Source,
            ]
            .into_iter()
            .find(|&k| language_name(k) == &*text)
            .ok_or_else(|| unknown("kernel language"))?,
        ),
        Shape::Unit => Value::Unit(
            [
                ArithmeticUnit::Any,
                ArithmeticUnit::Mfma,
                ArithmeticUnit::Valu,
            ]
            .into_iter()
            .find(|&a| unit_name(a) == &*text)
            .ok_or_else(|| unknown("arithmetic unit"))?,
        ),
        Shape::Type => Value::Type(DataType::from_name(&text).ok_or_else(|| unknown("data"))?),
        Shape::Activation => {
            Value::Activation(Activation::from_name(&text).ok_or_else(|| unknown("activation"))?)
        }
        Shape::Scale => {
            Value::Scale(ScaleMode::from_name(&text).ok_or_else(|| unknown("scale mode"))?)
        }
        _ => Value::Text(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgpack::Reader;

    #[test]
    fn a_leaf_is_as_small_as_the_enum_it_replaced() {
        // Catalogs hold a leaf per predicate node: 40 bytes, as before.
        assert_eq!(size_of::<ProblemLeaf>(), 40);
    }

    #[test]
    fn workgroup_numbers_answer_as_the_floating_point_formula() {
        // The source's formula alone, against the shortcut, on sizes
        // around the 2^24 limit, zero sizes and tiles, and every GSU form.
        let float = |p: &Problem, mt0: i64, mt1: i64, gsu: i64| {
            let tiles = |x: u64, t: i64| (x as f64 / t as f64).ceil();
            gsu == -1
                || tiles(p.m, mt0) * tiles(p.n, mt1) * gsu.max(1) as f64 * p.batch as f64
                    <= (1u64 << 24) as f64
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        use crate::problem::Transpose;
        let mut p = Problem::gemm(Transpose::None, Transpose::None, 1, 1, 1, DataType::Float);
        let (mut shortcut, mut divided) = (0, 0);
        for _ in 0..200_000 {
            let size = |r: u64| match r % 4 {
                0 => r % 5,
                1 => (1 << 12) + r % 9 - 4,
                2 => (1 << 24) + r % 9 - 4,
                _ => 1 + r % 100_000,
            };
            (p.m, p.n, p.batch) = (
                size(next(1 << 40)),
                size(next(1 << 40)),
                size(next(1 << 40)),
            );
            let mt0 = [0, 1, 16, 64, 256][next(5) as usize];
            let mt1 = [0, 1, 32, 128, 256][next(5) as usize];
            let gsu = [-2, -1, 0, 1, 2, 4, 16][next(7) as usize];
            let want = float(&p, mt0, mt1, gsu);
            assert_eq!(
                workgroups_fit(&p, mt0, mt1, gsu),
                want,
                "{p:?} {mt0} {mt1} {gsu}"
            );
            if p.m.saturating_mul(p.n).saturating_mul(p.batch) <= 1 << 24 {
                shortcut += 1;
            } else {
                divided += usize::from(want);
            }
        }
        assert!(shortcut > 10_000 && divided > 1_000, "{shortcut} {divided}");
    }

    #[test]
    fn each_row_is_found_by_its_name_and_names_its_kind() {
        assert_eq!(ROWS.len(), KINDS.len());
        for (i, row) in ROWS.iter().enumerate() {
            let kind = Kind::from_name(row.name).expect("found");
            assert_eq!(kind as usize, i, "{}", row.name);
            assert_eq!(kind.name(), row.name);
        }
        assert_eq!(Kind::from_name("StrideCEqual"), Some(Kind::StrideCEqual));
        assert_eq!(Kind::from_name("ShinyChipCheck"), None);
    }

    #[test]
    fn class_only_rows_are_the_ones_a_problem_class_fixes() {
        let class: Vec<&str> = ROWS
            .iter()
            .filter(|r| r.class_only)
            .map(|r| r.name)
            .collect();
        assert_eq!(
            class,
            [
                "HighPrecisionAccumulate",
                "KernelLanguageCompatible",
                "ArithmeticUnitCompatible",
                "DeterministicMode",
                "TypesEqual",
                "OperationIdentifierEqual",
                "PersistentKernelCheck",
                "StridedBatched",
                "Experimental",
                "Fp16AltImpl",
                "EqualityMatching",
                "StochasticRounding",
                "F32XdlMathOp",
                "Activation",
                "ActivationComputeType",
                "ActivationNoGuard",
                "UseGradient",
                "UseBias",
                "UseE",
                "DataTypeE",
                "GroupedGemm",
                "UseScaleAB",
                "UseScaleCD",
                "UseScaleAlphaVec",
                "Sparse",
                "SupportDeviceUserArguments",
                "SwizzleTensorA",
                "SwizzleTensorB",
                "MXBlockA",
                "MXBlockB",
                "DataTypeMXSA",
                "DataTypeMXSB",
                "BiasDataTypeWhiteList",
                "BiasSrcWhiteList",
                "ActivationEnumWhiteList",
                "WorkgroupMappingXCCCheck",
            ]
        );
        // Every row that reads a size, a stride or a scalar is not (the
        // numbers of TensileLite's feature rows are feature settings).
        let settings = [
            "UseBias",
            "UseScaleAlphaVec",
            "Sparse",
            "MXBlockA",
            "MXBlockB",
        ];
        for row in ROWS.iter().filter(|r| {
            (r.index != Index::None || r.shape == Shape::U64) && !settings.contains(&r.name)
        }) {
            assert!(!row.class_only, "{}", row.name);
        }
    }

    /// A leaf of `kind` with `value` (index 0).
    fn leaf(kind: Kind, value: Value) -> ProblemLeaf {
        ProblemLeaf {
            kind,
            index: 0,
            value,
        }
    }

    /// The block-scale leaves are strict both ways: a plain kernel (block
    /// 0) never serves an MX problem, an MX kernel (32, E8) never a plain
    /// one, and the scale type must match.
    #[test]
    fn block_scale_leaves_keep_plain_and_mx_apart() {
        use crate::problem::Transpose;
        let plain = Problem::gemm(
            Transpose::Transpose,
            Transpose::None,
            256,
            256,
            256,
            DataType::Float8,
        );
        let mut mx = plain.clone();
        (mx.mx_block_a, mx.mx_block_b) = (32, 32);
        let mut other_type = mx.clone();
        other_type.mx_type_a = DataType::Float8;
        for (l, want) in [
            (leaf(Kind::MxBlockA, Value::U64(0)), [true, false, false]),
            (leaf(Kind::MxBlockB, Value::U64(0)), [true, false, false]),
            (leaf(Kind::MxBlockA, Value::U64(32)), [false, true, true]),
            (leaf(Kind::MxBlockB, Value::U64(32)), [false, true, true]),
            (
                leaf(Kind::DataTypeMxsA, Value::Type(DataType::E8)),
                [true, true, false],
            ),
            (
                leaf(Kind::DataTypeMxsB, Value::Type(DataType::E8)),
                [true, true, true],
            ),
        ] {
            let got = [&plain, &mx, &other_type].map(|p| l.eval(p));
            assert_eq!(got, want, "{} {}", l.name(), l.expected());
        }
        assert_ne!(plain.mode_bits(), mx.mode_bits());
        assert_ne!(mx.mode_bits(), other_type.mode_bits());
    }

    /// TensileLite's "the problem does not ask" rules (TENSILELITE.md
    /// §6.2, §6.3): a kernel with a feature serves a plain problem; a
    /// problem asking for a feature needs a kernel with it.
    #[test]
    fn tensilelite_feature_leaves_serve_plain_problems() {
        use crate::problem::Transpose;
        let plain = Problem::hipblaslt(
            Transpose::None,
            Transpose::Transpose,
            256,
            256,
            256,
            DataType::Half,
            DataType::Half,
            DataType::Half,
            DataType::Float,
        );
        let mut bias = plain.clone();
        (bias.use_bias, bias.bias_type) = (1, DataType::BFloat16);
        let mut gelu = plain.clone();
        (gelu.activation, gelu.activation_enum) = (Activation::HipblasltAll, Activation::Gelu);
        let mut scaled = plain.clone();
        scaled.use_scale_ab = ScaleMode::Scalar;
        let cases = [
            (leaf(Kind::UseBias, Value::U64(1)), [true, true, true, true]),
            (
                leaf(Kind::UseBias, Value::U64(0)),
                [true, false, true, true],
            ),
            (
                leaf(
                    Kind::BiasDataTypeWhiteList,
                    Value::TypeList(Box::new([DataType::Half])),
                ),
                [true, false, true, true],
            ),
            (
                leaf(Kind::Activation, Value::Activation(Activation::None)),
                [true, true, false, true],
            ),
            (
                leaf(
                    Kind::Activation,
                    Value::Activation(Activation::HipblasltAll),
                ),
                [true, true, true, true],
            ),
            (
                leaf(
                    Kind::ActivationEnumWhiteList,
                    Value::Activations(Box::new([Activation::Relu])),
                ),
                [true, true, false, true],
            ),
            (
                leaf(Kind::UseScaleAB, Value::Scale(ScaleMode::None)),
                [true, true, true, false],
            ),
            (
                leaf(Kind::UseScaleAB, Value::Scale(ScaleMode::Scalar)),
                [true, true, true, true],
            ),
        ];
        for (l, want) in cases {
            let got = [&plain, &bias, &gelu, &scaled].map(|p| l.eval(p));
            assert_eq!(got, want, "{} {}", l.name(), l.expected());
        }
        // The fifth type: f16 data computed from f16 inputs, not bf16.
        let types = |fifth| {
            leaf(
                Kind::TypesEqual,
                Value::Types([DataType::Half; 4], Some(fifth)),
            )
        };
        assert!(types(DataType::Half).eval(&plain));
        assert!(!types(DataType::BFloat16).eval(&plain));
        // [factor, GSU]: K ≥ 32·4 for GSU 4; the caller's gsu overrides.
        let min_k = leaf(Kind::GlobalSplitUCheckMinK, Value::Ints(Box::new([32, 4])));
        let mut p = plain.clone();
        p.k = 127;
        assert!(!min_k.eval(&p));
        p.k = 128;
        assert!(min_k.eval(&p));
        p.gsu = 1;
        p.k = 1;
        assert!(min_k.eval(&p));
        // At most 2^24 workgroups.
        let groups = leaf(
            Kind::WorkgroupNumberCheck,
            Value::Ints(Box::new([16, 16, 1])),
        );
        let mut p = plain.clone();
        (p.m, p.n) = (1 << 16, 1 << 16);
        assert!(groups.eval(&p));
        p.batch = 2;
        assert!(!groups.eval(&p));
    }

    #[test]
    fn an_xcc_check_that_needs_the_cu_count_is_refused() {
        let leaf = ProblemLeaf {
            kind: Kind::WorkgroupMappingXccCheck,
            index: 0,
            value: Value::Ints(Box::new([2, -1])),
        };
        let mut w = Writer::new();
        leaf.encode(&mut w);
        let mut d = Decoder::new(Reader::from_bytes(&w.out), None);
        let t = d.typed().unwrap();
        let e = ProblemLeaf::decode(&mut d, &t.ty, t.len).unwrap_err();
        assert!(e.to_string().contains("needs the CU count"), "{e}");
    }

    #[test]
    fn every_shape_round_trips_through_the_writer() {
        let leaves = [
            (Kind::BoundSizeMultiple, -1, Value::U64(32)),
            (Kind::SizeInRange, 3, Value::Range { min: 8, max: 64 }),
            (
                Kind::SizeInRange,
                0,
                Value::Range {
                    min: 8,
                    max: u64::MAX,
                },
            ),
            (Kind::StrideDEqual, 1, Value::U64(0)),
            (Kind::BetaValue, 0, Value::Scalar(ScalarValue::NegativeOne)),
            (
                Kind::KernelLanguageCompatible,
                0,
                Value::Language(KernelLanguage::Assembly),
            ),
            (
                Kind::ArithmeticUnitCompatible,
                0,
                Value::Unit(ArithmeticUnit::Mfma),
            ),
            (
                Kind::TypesEqual,
                0,
                Value::Types(
                    [
                        DataType::Half,
                        DataType::Half,
                        DataType::Float,
                        DataType::Float,
                    ],
                    None,
                ),
            ),
            (
                Kind::TypesEqual,
                0,
                Value::Types(
                    [
                        DataType::Float8,
                        DataType::BFloat8,
                        DataType::Float,
                        DataType::Float,
                    ],
                    Some(DataType::Float8BFloat8),
                ),
            ),
            (
                Kind::Activation,
                0,
                Value::Activation(Activation::HipblasltAll),
            ),
            (Kind::UseScaleAB, 0, Value::Scale(ScaleMode::None)),
            (Kind::UseScaleAB, 0, Value::Scale(ScaleMode::Vector)),
            (Kind::BiasSrcWhiteList, 0, Value::Ints(Box::new([0, 3]))),
            (
                Kind::WorkgroupNumberCheck,
                0,
                Value::Ints(Box::new([256, 128, 4])),
            ),
            (
                Kind::GlobalSplitUCheckMinK,
                0,
                Value::Ints(Box::new([32, 4])),
            ),
            (Kind::GlobalSplitUCheckMinK, 0, Value::U64(96)),
            (
                Kind::WorkgroupMappingXccCheck,
                0,
                Value::Ints(Box::new([1, -1])),
            ),
            (
                Kind::BiasDataTypeWhiteList,
                0,
                Value::TypeList(Box::new([DataType::Float, DataType::BFloat16])),
            ),
            (
                Kind::ActivationEnumWhiteList,
                0,
                Value::Activations(Box::new([Activation::None, Activation::DGelu])),
            ),
            (Kind::F32XdlMathOp, 0, Value::Type(DataType::XFloat32)),
            (
                Kind::OperationIdentifierEqual,
                0,
                Value::Text("Contraction_l_Alik_Bjlk_Cijk_Dijk".into()),
            ),
            (
                Kind::BufferLoadOffsetLimitCheck,
                0,
                Value::BufferLoad(Box::new([1, 2, 3, 4])),
            ),
            (Kind::StridedBatched, 0, Value::Bool(false)),
            (Kind::CdStridesEqual, 0, Value::None),
        ];
        for (kind, index, value) in leaves {
            let leaf = ProblemLeaf { kind, index, value };
            let mut w = Writer::new();
            leaf.encode(&mut w);
            let mut d = Decoder::new(Reader::from_bytes(&w.out), None);
            let t = d.typed().unwrap();
            let back = ProblemLeaf::decode(&mut d, &t.ty, t.len).unwrap();
            assert_eq!(back, Some(leaf), "{}", kind.name());
        }
    }
}
