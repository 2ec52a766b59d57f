//! Predicates: the conditions on catalog rows and on each solution.
//!
//! A predicate is a tree of `And`, `Or`, `Not`, `TruePred`, `FalsePred` and
//! leaves. Hardware leaves (`Processor`, `CUCount`, `PciChipId`,
//! `TargetProcessor`, under an `AMDGPU` wrapper) test the GPU; problem
//! leaves test the GEMM. Each leaf's meaning is Tensile 4.36's
//! (`ContractionProblemPredicates.hpp`, `AMDGPUPredicates.hpp`), with size_t
//! arithmetic where Tensile wraps; hipBLASLt's later leaves (`PciChipId`,
//! `StochasticRounding`, `F32XdlMathOp`) are hipBLASLt's.
//!
//! A leaf type this reader does not know is an error naming it: treating it
//! as true would select kernels whose conditions were never checked.
//!
//! Where aqueduct differs on purpose:
//! - `Processor` compares gfx names (Tensile compares an enum of the
//!   processors it knows, and refuses a catalog naming any other);
//! - `PciChipId` applies to any GPU whose runtime reports a chip ID
//!   (hipBLASLt asks HIP for it on gfx950 only);
//! - an index the problem does not have (a GEMM has one free index per
//!   side, one batch and one bound index) makes the leaf false, where
//!   Tensile throws out of the whole selection; a multiple-of-zero test is
//!   false where Tensile divides by zero.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::decode::{Decoder, field, fields};
use super::error::Result;
use super::hardware::{self, Hardware};
use super::msgpack::Writer;
use super::problem::{ArithmeticUnit, DataType, KernelLanguage, PerformanceMetric, Problem};

/// A predicate tree over leaves `L`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Predicate<L> {
    True,
    False,
    And(Box<[Predicate<L>]>),
    Or(Box<[Predicate<L>]>),
    Not(Box<Predicate<L>>),
    Leaf(L),
}

/// A selection trace, printed in the manner of hipBLASLt's `TENSILE_DB`:
/// `[OK]` or `[!!]`, the node indented by depth, the node's name padded to
/// column 36, then the GPU's (or problem's) value and the solution's.
#[derive(Debug, Default)]
pub struct Trace {
    pub out: String,
    indent: usize,
}

impl Trace {
    pub fn line(&mut self, pass: bool, name: &str, details: &str) {
        let tag = if pass { "[OK]" } else { "[!!]" };
        let pad = 30usize.saturating_sub(self.indent * 2);
        let _ = writeln!(
            self.out,
            "{tag:<6}{:indent$}{name:<pad$}{details}",
            "",
            indent = self.indent * 2
        );
    }

    pub fn raw(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Runs `f` one level deeper and returns what it printed separately,
    /// so a parent's line can be printed before its children's.
    fn deeper(&mut self, f: impl FnOnce(&mut Trace) -> bool) -> (bool, String) {
        let mut sub = Trace {
            out: String::new(),
            indent: self.indent + 1,
        };
        let r = f(&mut sub);
        (r, sub.out)
    }
}

/// A leaf predicate: what it tests, how it reads and writes itself.
pub trait Leaf: Sized {
    type Cx: ?Sized;
    /// The catalog's name for this leaf (`"CUCount"`).
    fn name(&self) -> &'static str;
    fn eval(&self, cx: &Self::Cx) -> bool;
    /// `gpu=... == sol=...` for a trace.
    fn details(&self, cx: &Self::Cx) -> String;
    fn trace(&self, cx: &Self::Cx, t: &mut Trace) -> bool {
        let pass = self.eval(cx);
        t.line(pass, self.name(), &self.details(cx));
        pass
    }
    /// Reads the rest of a leaf whose `type` is `ty`, `len` entries
    /// remaining; `None` if `ty` is not a leaf of this kind.
    fn decode(d: &mut Decoder<'_>, ty: &str, len: usize) -> Result<Option<Self>>;
    /// Writes the whole leaf map, `type` first.
    fn encode(&self, w: &mut Writer);
}

impl<L: Leaf> Predicate<L> {
    pub fn eval(&self, cx: &L::Cx) -> bool {
        match self {
            Predicate::True => true,
            Predicate::False => false,
            Predicate::And(items) => items.iter().all(|p| p.eval(cx)),
            Predicate::Or(items) => items.iter().any(|p| p.eval(cx)),
            Predicate::Not(p) => !p.eval(cx),
            Predicate::Leaf(l) => l.eval(cx),
        }
    }

    /// Evaluates every node (no short cut, so the trace is whole) and
    /// prints it.
    pub fn trace(&self, cx: &L::Cx, t: &mut Trace) -> bool {
        match self {
            Predicate::True => {
                t.line(true, "TruePred", "always true");
                true
            }
            Predicate::False => {
                t.line(false, "FalsePred", "always false");
                false
            }
            Predicate::And(items) | Predicate::Or(items) => {
                let is_and = matches!(self, Predicate::And(_));
                let (pass, children) = t.deeper(|sub| {
                    let results: Vec<bool> = items.iter().map(|p| p.trace(cx, sub)).collect();
                    if is_and {
                        results.iter().all(|&r| r)
                    } else {
                        results.iter().any(|&r| r)
                    }
                });
                let name = if is_and { "And" } else { "Or" };
                t.line(pass, name, &format!("({} predicates)", items.len()));
                t.out.push_str(&children);
                pass
            }
            Predicate::Not(p) => {
                let (inner, children) = t.deeper(|sub| p.trace(cx, sub));
                t.line(!inner, "Not", "negates following predicate");
                t.out.push_str(&children);
                !inner
            }
            Predicate::Leaf(l) => l.trace(cx, t),
        }
    }

    /// Visits every leaf.
    pub fn leaves(&self, f: &mut impl FnMut(&L)) {
        match self {
            Predicate::And(items) | Predicate::Or(items) => items.iter().for_each(|p| p.leaves(f)),
            Predicate::Not(p) => p.leaves(f),
            Predicate::Leaf(l) => f(l),
            Predicate::True | Predicate::False => {}
        }
    }

    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        d.nested(|d| {
            let t = d.typed()?;
            let p = match t.ty.as_str() {
                "TruePred" | "FalsePred" => {
                    fields(d, t.len, |_, _| Ok(false))?;
                    if t.ty == "TruePred" {
                        Predicate::True
                    } else {
                        Predicate::False
                    }
                }
                "And" | "Or" => {
                    let items = field(d, t.len, "value", |d| d.array("value", Predicate::decode))?
                        .into_boxed_slice();
                    if t.ty == "And" {
                        Predicate::And(items)
                    } else {
                        Predicate::Or(items)
                    }
                }
                "Not" => Predicate::Not(Box::new(field(d, t.len, "value", Predicate::decode)?)),
                other => match L::decode(d, other, t.len)? {
                    Some(leaf) => Predicate::Leaf(leaf),
                    None => return Err(d.unknown("predicate", other)),
                },
            };
            Ok(p)
        })
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            Predicate::True | Predicate::False => {
                w.map(1);
                w.str("type");
                w.str(if matches!(self, Predicate::True) {
                    "TruePred"
                } else {
                    "FalsePred"
                });
            }
            Predicate::And(items) | Predicate::Or(items) => {
                w.map(2);
                w.str("type");
                w.str(if matches!(self, Predicate::And(_)) {
                    "And"
                } else {
                    "Or"
                });
                w.str("value");
                w.array(items.len());
                items.iter().for_each(|p| p.encode(w));
            }
            Predicate::Not(p) => {
                w.map(2);
                w.str("type");
                w.str("Not");
                w.str("value");
                p.encode(w);
            }
            Predicate::Leaf(l) => l.encode(w),
        }
    }
}

// ---------------------------------------------------------------------------
// Hardware leaves
// ---------------------------------------------------------------------------

/// Leaves of a hardware predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuLeaf {
    /// Tensile's `AMDGPU` wrapper: "the hardware is an AMD GPU and ...".
    /// It prints no trace line of its own.
    Amdgpu(Box<Predicate<GpuLeaf>>),
    Processor(Box<str>),
    CuCount(u32),
    PciChipId(u32),
    /// A kernel built for this processor can run on the GPU (Tensile's
    /// `runsKernelTargeting`: the same processor, or a gfx900 kernel on a
    /// newer GPU).
    TargetProcessor(Box<str>),
}

pub type HardwarePredicate = Predicate<GpuLeaf>;

/// Tensile's processor enum value: `gfx90a` → 910, `gfx1100` → 1100.
fn processor_number(name: &str) -> Option<u32> {
    let digits = hardware::processor_of(name).strip_prefix("gfx")?;
    if digits.len() < 3 {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let major: u32 = major.parse().ok()?;
    let minor = rest[..1].parse::<u32>().ok()?;
    let step = u32::from_str_radix(&rest[1..], 16).ok()?;
    Some(major * 100 + minor * 10 + step)
}

impl Leaf for GpuLeaf {
    type Cx = Hardware;

    fn name(&self) -> &'static str {
        match self {
            GpuLeaf::Amdgpu(_) => "AMDGPU",
            GpuLeaf::Processor(_) => "Processor",
            GpuLeaf::CuCount(_) => "CUCount",
            GpuLeaf::PciChipId(_) => "PciChipId",
            GpuLeaf::TargetProcessor(_) => "TargetProcessor",
        }
    }

    fn eval(&self, hw: &Hardware) -> bool {
        match self {
            GpuLeaf::Amdgpu(p) => p.eval(hw),
            GpuLeaf::Processor(p) => **p == *hw.processor,
            GpuLeaf::CuCount(n) => hw.cu_count == *n,
            GpuLeaf::PciChipId(id) => hw.chip_id.is_some_and(|gpu| hardware::can_use(gpu, *id)),
            GpuLeaf::TargetProcessor(p) => {
                if **p == *hw.processor {
                    return true;
                }
                match (processor_number(p), processor_number(&hw.processor)) {
                    (Some(sol), Some(gpu)) => sol <= gpu && sol == 900,
                    _ => false,
                }
            }
        }
    }

    fn details(&self, hw: &Hardware) -> String {
        match self {
            GpuLeaf::Amdgpu(_) => String::new(),
            GpuLeaf::Processor(p) => format!("gpu={} == sol={p}", hw.arch_name),
            GpuLeaf::CuCount(n) => format!("gpu={} == sol={n}", hw.cu_count),
            GpuLeaf::PciChipId(id) => {
                let gpu = hw
                    .chip_id
                    .map_or("nullopt".to_string(), |g| format!("{g:#x}"));
                let fallback = hw
                    .chip_id
                    .is_some_and(|g| g != *id && hardware::can_use(g, *id));
                format!(
                    "[{}] gpu={gpu} == sol={id:#x}{}",
                    hw.device_name,
                    if fallback { " (fallback)" } else { "" }
                )
            }
            GpuLeaf::TargetProcessor(p) => format!("gpu={} can run sol={p}", hw.arch_name),
        }
    }

    fn trace(&self, hw: &Hardware, t: &mut Trace) -> bool {
        match self {
            GpuLeaf::Amdgpu(p) => p.trace(hw, t),
            leaf => {
                let pass = leaf.eval(hw);
                t.line(pass, leaf.name(), &leaf.details(hw));
                if let (true, GpuLeaf::PciChipId(id), Some(gpu)) = (pass, leaf, hw.chip_id)
                    && gpu != *id
                {
                    t.raw(&format!(
                        "      Using fallback kernel: device {gpu:#x} matches solution for {id:#x}"
                    ));
                }
                pass
            }
        }
    }

    fn decode(d: &mut Decoder<'_>, ty: &str, len: usize) -> Result<Option<Self>> {
        let known = matches!(
            ty,
            "AMDGPU" | "Processor" | "CUCount" | "PciChipId" | "TargetProcessor"
        );
        if !known {
            return Ok(None);
        }
        field(d, len, "value", |d| {
            d.push_key("value");
            let leaf = match ty {
                "AMDGPU" => GpuLeaf::Amdgpu(Box::new(Predicate::decode(d)?)),
                "CUCount" => GpuLeaf::CuCount(d.u32()?),
                "PciChipId" => GpuLeaf::PciChipId(d.u32()?),
                _ => {
                    let name = d.boxed_str()?;
                    if !hardware::is_processor_name(&name) {
                        return Err(d.invalid(format!("{name:?} is not a gfx processor name")));
                    }
                    if ty == "Processor" {
                        GpuLeaf::Processor(name)
                    } else {
                        GpuLeaf::TargetProcessor(name)
                    }
                }
            };
            d.pop();
            Ok(Some(leaf))
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.map(2);
        w.str("type");
        w.str(self.name());
        w.str("value");
        match self {
            GpuLeaf::Amdgpu(p) => p.encode(w),
            GpuLeaf::Processor(p) | GpuLeaf::TargetProcessor(p) => w.str(p),
            GpuLeaf::CuCount(n) | GpuLeaf::PciChipId(n) => w.u64(*n as u64),
        }
    }
}

impl HardwarePredicate {
    /// Every `PciChipId` value anywhere in the tree (under `Not` too):
    /// hipBLASLt's `extractPciChipIds`, which decides exact vs fallback.
    pub fn chip_ids(&self) -> BTreeSet<u32> {
        let mut ids = BTreeSet::new();
        self.collect_chips(&mut ids);
        ids
    }

    fn collect_chips(&self, ids: &mut BTreeSet<u32>) {
        self.leaves(&mut |l| match l {
            GpuLeaf::PciChipId(id) => {
                ids.insert(*id);
            }
            GpuLeaf::Amdgpu(p) => p.collect_chips(ids),
            _ => {}
        });
    }

    /// The build-time comparator's view of a row (see
    /// [`hardware::compare_rows`]): the processor and CU count directly
    /// under the top-level `And`, and the chip IDs of its `PciChipId`
    /// child or `Or` of them.
    pub fn row_key(&self) -> hardware::RowKey {
        let mut key = hardware::RowKey::default();
        let inner = match self {
            Predicate::True => {
                key.always = true;
                return key;
            }
            Predicate::Leaf(GpuLeaf::Amdgpu(p)) => &**p,
            other => other,
        };
        let children: &[Predicate<GpuLeaf>] = match inner {
            Predicate::And(items) => items,
            single => std::slice::from_ref(single),
        };
        for child in children {
            match child {
                Predicate::Leaf(GpuLeaf::Processor(p)) => key.processor = Some(p.to_string()),
                Predicate::Leaf(GpuLeaf::CuCount(n)) => key.cu_count = Some(*n),
                Predicate::Leaf(GpuLeaf::PciChipId(id)) => {
                    key.chip_ids.insert(*id);
                }
                Predicate::Or(items) => {
                    for item in items.iter() {
                        if let Predicate::Leaf(GpuLeaf::PciChipId(id)) = item {
                            key.chip_ids.insert(*id);
                        }
                    }
                }
                _ => {}
            }
        }
        key
    }
}

// ---------------------------------------------------------------------------
// Problem leaves
// ---------------------------------------------------------------------------

/// `ScalarValue`: a restriction on alpha or beta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarValue {
    Any,
    One,
    NegativeOne,
}

impl ScalarValue {
    fn name(self) -> &'static str {
        match self {
            ScalarValue::Any => "Any",
            ScalarValue::One => "1",
            ScalarValue::NegativeOne => "-1",
        }
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

/// Which tensor a stride predicate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tensor {
    A,
    B,
    C,
    D,
}

/// Leaves of a problem predicate. Index and value fields are Tensile's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProblemLeaf {
    Free0SizeMultiple {
        index: u64,
        value: u64,
    },
    Free1SizeMultiple {
        index: u64,
        value: u64,
    },
    BatchSizeMultiple {
        index: u64,
        value: u64,
    },
    BatchSizeEqual {
        index: u64,
        value: u64,
    },
    /// A negative index counts from the last bound index.
    BoundSizeMultiple {
        index: i64,
        value: u64,
    },
    MaxProblemSizeGreaterThan(u64),
    LeadingFree0SizesGreaterOrEqual(u64),
    LeadingFree1SizesGreaterOrEqual(u64),
    SizeEqual {
        index: u64,
        value: u64,
    },
    SizeGreaterThan {
        index: u64,
        value: u64,
    },
    SizeLessThan {
        index: u64,
        value: u64,
    },
    SizeMultiple {
        index: u64,
        value: u64,
    },
    /// `min <= size(index) < max`.
    SizeInRange {
        index: u64,
        min: u64,
        max: u64,
    },
    StrideEqual {
        tensor: Tensor,
        index: u64,
        value: u64,
    },
    LdcEqualsLdd,
    CEqualsD,
    CdStridesEqual,
    AlphaValue(ScalarValue),
    BetaValue(ScalarValue),
    BetaZero,
    BetaOne,
    HighPrecisionAccumulate(bool),
    KernelLanguageCompatible(KernelLanguage),
    ArithmeticUnitCompatible(ArithmeticUnit),
    DeterministicMode(bool),
    TypesEqual([DataType; 4]),
    OperationIdentifierEqual(Box<str>),
    BufferLoadOffsetLimitCheck {
        shift_a: u64,
        shift_b: u64,
        du_mt0: u64,
        du_mt1: u64,
    },
    BufferStoreOffsetLimitCheck(u64),
    WorkspaceCheck {
        index: u64,
        value: u64,
    },
    PersistentKernelCheck,
    GlobalSplitUCheckMinK(u64),
    StridedBatched(bool),
    CuEfficiency,
    Experimental,
    Fp16AltImpl,
    EqualityMatching,
    StochasticRounding(bool),
    F32XdlMathOp(DataType),
}

pub type ProblemPredicate = Predicate<ProblemLeaf>;

/// `x % m == 0`, false for m == 0 (Tensile would divide by zero).
fn multiple(x: u64, m: u64) -> bool {
    m != 0 && x.is_multiple_of(m)
}

/// A GEMM has exactly one free index per side, one batch and one bound.
fn only(index: u64, v: u64) -> Option<u64> {
    (index == 0).then_some(v)
}

const OFFSET_LIMIT: u64 = 1 << 32;

impl ProblemLeaf {
    /// The problem's side of the comparison, for traces.
    fn observed(&self, p: &Problem) -> String {
        use ProblemLeaf::*;
        let opt = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
        match self {
            Free0SizeMultiple { .. } | LeadingFree0SizesGreaterOrEqual(_) => p.m.to_string(),
            Free1SizeMultiple { .. } | LeadingFree1SizesGreaterOrEqual(_) => p.n.to_string(),
            BatchSizeMultiple { .. } | BatchSizeEqual { .. } => p.batch.to_string(),
            BoundSizeMultiple { .. } | GlobalSplitUCheckMinK(_) => p.k.to_string(),
            MaxProblemSizeGreaterThan(_) => p.max_problem_size().to_string(),
            SizeEqual { index, .. }
            | SizeGreaterThan { index, .. }
            | SizeLessThan { index, .. }
            | SizeMultiple { index, .. }
            | SizeInRange { index, .. } => {
                opt(usize::try_from(*index).ok().and_then(|i| p.size(i)))
            }
            StrideEqual { tensor, index, .. } => opt(stride(p, *tensor, *index)),
            LdcEqualsLdd => format!("ldc={} ldd={}", p.ldc, p.ldd),
            CEqualsD => p.c_equals_d.to_string(),
            CdStridesEqual => format!("c={:?} d={:?}", p.c_strides(), p.d_strides()),
            AlphaValue(_) => ScalarValue::of(p.alpha).name().to_string(),
            BetaValue(_) => ScalarValue::of(p.beta).name().to_string(),
            BetaZero | BetaOne => p.beta.to_string(),
            HighPrecisionAccumulate(_) => p.high_precision_accumulate.to_string(),
            KernelLanguageCompatible(_) => format!("{:?}", p.kernel_language),
            ArithmeticUnitCompatible(_) => format!("{:?}", p.arithmetic_unit),
            DeterministicMode(_) => p.deterministic_mode.to_string(),
            TypesEqual(_) => format!("[{}, {}, {}, {}]", p.a_type, p.b_type, p.c_type, p.d_type),
            OperationIdentifierEqual(_) => p.operation_identifier().to_string(),
            BufferLoadOffsetLimitCheck { .. } => format!("lda={} ldb={}", p.lda, p.ldb),
            BufferStoreOffsetLimitCheck(_) => format!("ldd={}", p.ldd),
            WorkspaceCheck { .. } => format!("workspace={}", p.workspace_size),
            PersistentKernelCheck | EqualityMatching => "-".to_string(),
            StridedBatched(_) => p.strided_batched.to_string(),
            CuEfficiency | Experimental => format!("{:?}", p.performance_metric),
            Fp16AltImpl => p.fp16_alt_impl.to_string(),
            StochasticRounding(_) => p.stochastic_rounding.to_string(),
            F32XdlMathOp(_) => p.f32_xdl_math_op.to_string(),
        }
    }

    /// The solution's side, for traces.
    fn expected(&self) -> String {
        use ProblemLeaf::*;
        match self {
            Free0SizeMultiple { value, .. }
            | Free1SizeMultiple { value, .. }
            | BatchSizeMultiple { value, .. }
            | SizeMultiple { value, .. }
            | BoundSizeMultiple { value, .. } => format!("multiple of {value}"),
            BatchSizeEqual { value, .. } | SizeEqual { value, .. } | StrideEqual { value, .. } => {
                format!("== {value}")
            }
            SizeGreaterThan { value, .. } | MaxProblemSizeGreaterThan(value) => {
                format!("> {value}")
            }
            SizeLessThan { value, .. } => format!("< {value}"),
            SizeInRange { min, max, .. } => format!("in [{min}, {max})"),
            LeadingFree0SizesGreaterOrEqual(v)
            | LeadingFree1SizesGreaterOrEqual(v)
            | GlobalSplitUCheckMinK(v) => {
                format!(">= {v}")
            }
            AlphaValue(v) | BetaValue(v) => v.name().to_string(),
            HighPrecisionAccumulate(b)
            | DeterministicMode(b)
            | StridedBatched(b)
            | StochasticRounding(b) => b.to_string(),
            KernelLanguageCompatible(k) => format!("{k:?}"),
            ArithmeticUnitCompatible(a) => format!("{a:?}"),
            TypesEqual(t) => format!("[{}, {}, {}, {}]", t[0], t[1], t[2], t[3]),
            OperationIdentifierEqual(s) => s.to_string(),
            BufferLoadOffsetLimitCheck {
                shift_a,
                shift_b,
                du_mt0,
                du_mt1,
            } => format!(
                "ShiftPtrElemA={shift_a} ShiftPtrElemB={shift_b} DUorMT0={du_mt0} DUorMT1={du_mt1}"
            ),
            BufferStoreOffsetLimitCheck(v) => format!("x{v} < 2^32"),
            WorkspaceCheck { value, .. } => format!("needs m*n*batch*{value}"),
            F32XdlMathOp(t) => t.to_string(),
            LdcEqualsLdd
            | CEqualsD
            | CdStridesEqual
            | BetaZero
            | BetaOne
            | PersistentKernelCheck
            | CuEfficiency
            | Experimental
            | Fp16AltImpl
            | EqualityMatching => "-".to_string(),
        }
    }

    fn decode_leaf(d: &mut Decoder<'_>, ty: &str, len: usize) -> Result<Option<Self>> {
        use ProblemLeaf::*;
        #[derive(Clone, Copy, PartialEq)]
        enum Shape {
            None,
            U64,
            Bool,
            Text,
            Types,
            Range,
            BufferLoad,
        }
        let shape = match ty {
            "Free0SizeMultiple"
            | "Free1SizeMultiple"
            | "BatchSizeMultiple"
            | "BatchSizeEqual"
            | "BoundSizeMultiple"
            | "MaxProblemSizeGreaterThan"
            | "LeadingFree0SizesGreaterOrEqual"
            | "LeadingFree1SizesGreaterOrEqual"
            | "SizeEqual"
            | "SizeGreaterThan"
            | "SizeLessThan"
            | "SizeMultiple"
            | "StrideAEqual"
            | "StrideBEqual"
            | "StrideCEqual"
            | "StrideDEqual"
            | "BufferStoreOffsetLimitCheck"
            | "WorkspaceCheck"
            | "GlobalSplitUCheckMinK" => Shape::U64,
            "HighPrecisionAccumulate"
            | "DeterministicMode"
            | "StridedBatched"
            | "StochasticRounding" => Shape::Bool,
            "KernelLanguageCompatible"
            | "ArithmeticUnitCompatible"
            | "AlphaValue"
            | "BetaValue"
            | "OperationIdentifierEqual"
            | "F32XdlMathOp" => Shape::Text,
            "TypesEqual" => Shape::Types,
            "SizeInRange" => Shape::Range,
            "BufferLoadOffsetLimitCheck" => Shape::BufferLoad,
            "LDCEqualsLDD"
            | "CEqualsD"
            | "CDStridesEqual"
            | "BetaZero"
            | "BetaOne"
            | "PersistentKernelCheck"
            | "CUEfficiency"
            | "Experimental"
            | "Fp16AltImpl"
            | "EqualityMatching" => Shape::None,
            _ => return Ok(None),
        };
        let signed_index = ty == "BoundSizeMultiple";
        let needs_index = matches!(
            ty,
            "Free0SizeMultiple"
                | "Free1SizeMultiple"
                | "BatchSizeMultiple"
                | "BatchSizeEqual"
                | "BoundSizeMultiple"
                | "SizeEqual"
                | "SizeGreaterThan"
                | "SizeLessThan"
                | "SizeMultiple"
                | "SizeInRange"
                | "StrideAEqual"
                | "StrideBEqual"
                | "StrideCEqual"
                | "StrideDEqual"
                | "WorkspaceCheck"
        );
        let mut index: Option<i64> = None;
        let mut num: Option<u64> = None;
        let mut flag: Option<bool> = None;
        let mut text: Option<Box<str>> = None;
        let mut types: Option<[DataType; 4]> = None;
        let mut range: Option<(u64, u64)> = None;
        let mut bufload: Option<[u64; 4]> = None;
        fields(d, len, |d, k| match k {
            "index" if needs_index => {
                d.push_key("index");
                let i = d.i64()?;
                if i < 0 && !signed_index {
                    return Err(d.invalid(format!("negative index {i}")));
                }
                index = Some(i);
                d.pop();
                Ok(true)
            }
            "value" if shape != Shape::None => {
                d.push_key("value");
                match shape {
                    Shape::U64 => num = Some(d.u64()?),
                    Shape::Bool => flag = Some(d.bool()?),
                    Shape::Text => text = Some(d.boxed_str()?),
                    Shape::Types => {
                        let n = d.array_len()?;
                        if n != 4 {
                            return Err(d.invalid(format!("TypesEqual needs 4 types, found {n}")));
                        }
                        let mut t = [DataType::Float; 4];
                        for slot in &mut t {
                            let name = d.string()?;
                            *slot = DataType::from_name(&name)
                                .ok_or_else(|| d.unknown("data", &name))?;
                        }
                        types = Some(t);
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
                        range = Some((min, max));
                    }
                    Shape::BufferLoad => {
                        let n = d.map_len()?;
                        let mut v: [Option<u64>; 4] = [None; 4];
                        fields(d, n, |d, k| {
                            let slot = match k {
                                "ShiftPtrElemA" => 0,
                                "ShiftPtrElemB" => 1,
                                "DUorMT0" => 2,
                                "DUorMT1" => 3,
                                _ => return Ok(false),
                            };
                            v[slot] = Some(d.u64()?);
                            Ok(true)
                        })?;
                        let names = ["ShiftPtrElemA", "ShiftPtrElemB", "DUorMT0", "DUorMT1"];
                        let mut out = [0; 4];
                        for i in 0..4 {
                            out[i] = v[i].ok_or_else(|| d.missing(names[i]))?;
                        }
                        bufload = Some(out);
                    }
                    Shape::None => {}
                }
                d.pop();
                Ok(true)
            }
            _ => Ok(false),
        })?;
        if needs_index && index.is_none() {
            return Err(d.missing("index"));
        }
        let idx = index.unwrap_or(0).max(0) as u64;
        let value_missing = || d.missing("value");
        let n = || num.ok_or_else(value_missing);
        let enum_text = |t: &Option<Box<str>>| -> Result<Box<str>> {
            t.clone().ok_or_else(|| d.missing("value"))
        };
        let leaf = match ty {
            "Free0SizeMultiple" => Free0SizeMultiple {
                index: idx,
                value: n()?,
            },
            "Free1SizeMultiple" => Free1SizeMultiple {
                index: idx,
                value: n()?,
            },
            "BatchSizeMultiple" => BatchSizeMultiple {
                index: idx,
                value: n()?,
            },
            "BatchSizeEqual" => BatchSizeEqual {
                index: idx,
                value: n()?,
            },
            "BoundSizeMultiple" => BoundSizeMultiple {
                index: index.unwrap_or(0),
                value: n()?,
            },
            "MaxProblemSizeGreaterThan" => MaxProblemSizeGreaterThan(n()?),
            "LeadingFree0SizesGreaterOrEqual" => LeadingFree0SizesGreaterOrEqual(n()?),
            "LeadingFree1SizesGreaterOrEqual" => LeadingFree1SizesGreaterOrEqual(n()?),
            "SizeEqual" => SizeEqual {
                index: idx,
                value: n()?,
            },
            "SizeGreaterThan" => SizeGreaterThan {
                index: idx,
                value: n()?,
            },
            "SizeLessThan" => SizeLessThan {
                index: idx,
                value: n()?,
            },
            "SizeMultiple" => SizeMultiple {
                index: idx,
                value: n()?,
            },
            "SizeInRange" => {
                let (min, max) = range.ok_or_else(value_missing)?;
                SizeInRange {
                    index: idx,
                    min,
                    max,
                }
            }
            "StrideAEqual" | "StrideBEqual" | "StrideCEqual" | "StrideDEqual" => StrideEqual {
                tensor: match ty.as_bytes()[6] {
                    b'A' => Tensor::A,
                    b'B' => Tensor::B,
                    b'C' => Tensor::C,
                    _ => Tensor::D,
                },
                index: idx,
                value: n()?,
            },
            "BufferStoreOffsetLimitCheck" => BufferStoreOffsetLimitCheck(n()?),
            "WorkspaceCheck" => WorkspaceCheck {
                index: idx,
                value: n()?,
            },
            "GlobalSplitUCheckMinK" => GlobalSplitUCheckMinK(n()?),
            "HighPrecisionAccumulate" => HighPrecisionAccumulate(flag.ok_or_else(value_missing)?),
            "DeterministicMode" => DeterministicMode(flag.ok_or_else(value_missing)?),
            "StridedBatched" => StridedBatched(flag.ok_or_else(value_missing)?),
            "StochasticRounding" => StochasticRounding(flag.ok_or_else(value_missing)?),
            "TypesEqual" => TypesEqual(types.ok_or_else(value_missing)?),
            "BufferLoadOffsetLimitCheck" => {
                let [shift_a, shift_b, du_mt0, du_mt1] = bufload.ok_or_else(value_missing)?;
                BufferLoadOffsetLimitCheck {
                    shift_a,
                    shift_b,
                    du_mt0,
                    du_mt1,
                }
            }
            "OperationIdentifierEqual" => OperationIdentifierEqual(enum_text(&text)?),
            "KernelLanguageCompatible" => {
                let t = enum_text(&text)?;
                KernelLanguageCompatible(match &*t {
                    "Any" => KernelLanguage::Any,
                    "Assembly" => KernelLanguage::Assembly,
                    "Source" => KernelLanguage::Source,
                    other => return Err(d.unknown("kernel language", other)),
                })
            }
            "ArithmeticUnitCompatible" => {
                let t = enum_text(&text)?;
                ArithmeticUnitCompatible(match &*t {
                    "Any" => ArithmeticUnit::Any,
                    "MFMA" => ArithmeticUnit::Mfma,
                    "VALU" => ArithmeticUnit::Valu,
                    other => return Err(d.unknown("arithmetic unit", other)),
                })
            }
            "AlphaValue" | "BetaValue" => {
                let t = enum_text(&text)?;
                let v = match &*t {
                    "Any" => ScalarValue::Any,
                    "1" => ScalarValue::One,
                    "-1" => ScalarValue::NegativeOne,
                    other => return Err(d.unknown("scalar value", other)),
                };
                if ty == "AlphaValue" {
                    AlphaValue(v)
                } else {
                    BetaValue(v)
                }
            }
            "F32XdlMathOp" => {
                let t = enum_text(&text)?;
                F32XdlMathOp(DataType::from_name(&t).ok_or_else(|| d.unknown("data", &t))?)
            }
            "LDCEqualsLDD" => LdcEqualsLdd,
            "CEqualsD" => CEqualsD,
            "CDStridesEqual" => CdStridesEqual,
            "BetaZero" => BetaZero,
            "BetaOne" => BetaOne,
            "PersistentKernelCheck" => PersistentKernelCheck,
            "CUEfficiency" => CuEfficiency,
            "Experimental" => Experimental,
            "Fp16AltImpl" => Fp16AltImpl,
            _ => EqualityMatching,
        };
        Ok(Some(leaf))
    }
}

impl ProblemLeaf {
    /// True when the leaf reads only what a problem's class fixes
    /// (operation, types, flags, metric), never sizes, strides or scalars:
    /// its value is then the same for every problem of the class.
    pub fn class_only(&self) -> bool {
        use ProblemLeaf::*;
        matches!(
            self,
            HighPrecisionAccumulate(_)
                | KernelLanguageCompatible(_)
                | ArithmeticUnitCompatible(_)
                | DeterministicMode(_)
                | TypesEqual(_)
                | OperationIdentifierEqual(_)
                | PersistentKernelCheck
                | StridedBatched(_)
                | Experimental
                | Fp16AltImpl
                | EqualityMatching
                | StochasticRounding(_)
                | F32XdlMathOp(_)
        )
    }
}

impl ProblemPredicate {
    /// Every leaf is [`ProblemLeaf::class_only`].
    pub fn class_only(&self) -> bool {
        let mut all = true;
        self.leaves(&mut |l| all &= l.class_only());
        all
    }
}

fn stride(p: &Problem, t: Tensor, index: u64) -> Option<u64> {
    let s = match t {
        Tensor::A => p.a_strides(),
        Tensor::B => p.b_strides(),
        Tensor::C => p.c_strides(),
        Tensor::D => p.d_strides(),
    };
    usize::try_from(index).ok().and_then(|i| s.get(i).copied())
}

impl Leaf for ProblemLeaf {
    type Cx = Problem;

    fn name(&self) -> &'static str {
        use ProblemLeaf::*;
        match self {
            Free0SizeMultiple { .. } => "Free0SizeMultiple",
            Free1SizeMultiple { .. } => "Free1SizeMultiple",
            BatchSizeMultiple { .. } => "BatchSizeMultiple",
            BatchSizeEqual { .. } => "BatchSizeEqual",
            BoundSizeMultiple { .. } => "BoundSizeMultiple",
            MaxProblemSizeGreaterThan(_) => "MaxProblemSizeGreaterThan",
            LeadingFree0SizesGreaterOrEqual(_) => "LeadingFree0SizesGreaterOrEqual",
            LeadingFree1SizesGreaterOrEqual(_) => "LeadingFree1SizesGreaterOrEqual",
            SizeEqual { .. } => "SizeEqual",
            SizeGreaterThan { .. } => "SizeGreaterThan",
            SizeLessThan { .. } => "SizeLessThan",
            SizeMultiple { .. } => "SizeMultiple",
            SizeInRange { .. } => "SizeInRange",
            StrideEqual { tensor, .. } => match tensor {
                Tensor::A => "StrideAEqual",
                Tensor::B => "StrideBEqual",
                Tensor::C => "StrideCEqual",
                Tensor::D => "StrideDEqual",
            },
            LdcEqualsLdd => "LDCEqualsLDD",
            CEqualsD => "CEqualsD",
            CdStridesEqual => "CDStridesEqual",
            AlphaValue(_) => "AlphaValue",
            BetaValue(_) => "BetaValue",
            BetaZero => "BetaZero",
            BetaOne => "BetaOne",
            HighPrecisionAccumulate(_) => "HighPrecisionAccumulate",
            KernelLanguageCompatible(_) => "KernelLanguageCompatible",
            ArithmeticUnitCompatible(_) => "ArithmeticUnitCompatible",
            DeterministicMode(_) => "DeterministicMode",
            TypesEqual(_) => "TypesEqual",
            OperationIdentifierEqual(_) => "OperationIdentifierEqual",
            BufferLoadOffsetLimitCheck { .. } => "BufferLoadOffsetLimitCheck",
            BufferStoreOffsetLimitCheck(_) => "BufferStoreOffsetLimitCheck",
            WorkspaceCheck { .. } => "WorkspaceCheck",
            PersistentKernelCheck => "PersistentKernelCheck",
            GlobalSplitUCheckMinK(_) => "GlobalSplitUCheckMinK",
            StridedBatched(_) => "StridedBatched",
            CuEfficiency => "CUEfficiency",
            Experimental => "Experimental",
            Fp16AltImpl => "Fp16AltImpl",
            EqualityMatching => "EqualityMatching",
            StochasticRounding(_) => "StochasticRounding",
            F32XdlMathOp(_) => "F32XdlMathOp",
        }
    }

    fn eval(&self, p: &Problem) -> bool {
        use ProblemLeaf::*;
        match self {
            Free0SizeMultiple { index, value } => {
                only(*index, p.m).is_some_and(|m| multiple(m, *value))
            }
            Free1SizeMultiple { index, value } => {
                only(*index, p.n).is_some_and(|n| multiple(n, *value))
            }
            BatchSizeMultiple { index, value } => {
                only(*index, p.batch).is_some_and(|b| multiple(b, *value))
            }
            BatchSizeEqual { index, value } => only(*index, p.batch) == Some(*value),
            BoundSizeMultiple { index, value } => {
                (*index == 0 || *index == -1) && multiple(p.k, *value)
            }
            MaxProblemSizeGreaterThan(v) => p.max_problem_size() > *v,
            LeadingFree0SizesGreaterOrEqual(v) => p.m >= *v,
            LeadingFree1SizesGreaterOrEqual(v) => p.n >= *v,
            SizeEqual { index, value } => size(p, *index) == Some(*value),
            SizeGreaterThan { index, value } => size(p, *index).is_some_and(|s| s > *value),
            SizeLessThan { index, value } => size(p, *index).is_some_and(|s| s < *value),
            SizeMultiple { index, value } => size(p, *index).is_some_and(|s| multiple(s, *value)),
            SizeInRange { index, min, max } => {
                size(p, *index).is_some_and(|s| s >= *min && s < *max)
            }
            StrideEqual {
                tensor,
                index,
                value,
            } => stride(p, *tensor, *index) == Some(*value),
            LdcEqualsLdd => p.ldc == p.ldd,
            CEqualsD => p.c_equals_d,
            CdStridesEqual => p.c_strides() == p.d_strides(),
            AlphaValue(v) => *v == ScalarValue::Any || ScalarValue::of(p.alpha) == *v,
            BetaValue(v) => *v == ScalarValue::Any || ScalarValue::of(p.beta) == *v,
            BetaZero => p.beta == 0.0,
            BetaOne => p.beta == 1.0,
            HighPrecisionAccumulate(v) => p.high_precision_accumulate == *v,
            KernelLanguageCompatible(v) => {
                p.kernel_language == KernelLanguage::Any || p.kernel_language == *v
            }
            ArithmeticUnitCompatible(v) => {
                p.arithmetic_unit == ArithmeticUnit::Any || p.arithmetic_unit == *v
            }
            DeterministicMode(v) => p.deterministic_mode == *v,
            TypesEqual(t) => *t == [p.a_type, p.b_type, p.c_type, p.d_type],
            OperationIdentifierEqual(s) => **s == *p.operation_identifier(),
            BufferLoadOffsetLimitCheck {
                shift_a,
                shift_b,
                du_mt0,
                du_mt1,
            } => {
                let a = p
                    .lda
                    .wrapping_mul(*du_mt0)
                    .wrapping_add(*shift_a)
                    .wrapping_mul(p.a_type.element_bytes());
                let b = p
                    .ldb
                    .wrapping_mul(*du_mt1)
                    .wrapping_add(*shift_b)
                    .wrapping_mul(p.b_type.element_bytes());
                a < OFFSET_LIMIT && b < OFFSET_LIMIT
            }
            BufferStoreOffsetLimitCheck(v) => {
                p.ldd
                    .wrapping_mul(p.d_type.element_bytes())
                    .wrapping_mul(*v)
                    < OFFSET_LIMIT
            }
            WorkspaceCheck { value, .. } => {
                p.m.wrapping_mul(p.n)
                    .wrapping_mul(p.batch)
                    .wrapping_mul(*value)
                    <= p.workspace_size
            }
            // Tensile's `eligibleForPK` defaults to true and rocBLAS never
            // clears it.
            PersistentKernelCheck => true,
            GlobalSplitUCheckMinK(v) => p.k >= *v,
            StridedBatched(v) => p.strided_batched == *v,
            CuEfficiency => match p.performance_metric {
                PerformanceMetric::CuEfficiency => true,
                PerformanceMetric::Auto => p.flop_count() < 1500 * 1500 * 1500 * 2,
                _ => false,
            },
            Experimental => p.performance_metric == PerformanceMetric::Experimental,
            Fp16AltImpl => p.fp16_alt_impl,
            EqualityMatching => true,
            StochasticRounding(v) => p.stochastic_rounding == *v,
            F32XdlMathOp(t) => p.f32_xdl_math_op == *t,
        }
    }

    fn details(&self, p: &Problem) -> String {
        format!("prob={} sol={}", self.observed(p), self.expected())
    }

    fn decode(d: &mut Decoder<'_>, ty: &str, len: usize) -> Result<Option<Self>> {
        Self::decode_leaf(d, ty, len)
    }

    fn encode(&self, w: &mut Writer) {
        use ProblemLeaf::*;
        let head = |w: &mut Writer, n: usize, name: &str| {
            w.map(n);
            w.str("type");
            w.str(name);
        };
        let iv = |w: &mut Writer, name: &str, index: i64, value: u64| {
            head(w, 3, name);
            w.str("index");
            w.i64(index);
            w.str("value");
            w.u64(value);
        };
        let v = |w: &mut Writer, name: &str| {
            head(w, 2, name);
            w.str("value");
        };
        let name = self.name();
        match self {
            Free0SizeMultiple { index, value }
            | Free1SizeMultiple { index, value }
            | BatchSizeMultiple { index, value }
            | BatchSizeEqual { index, value }
            | SizeEqual { index, value }
            | SizeGreaterThan { index, value }
            | SizeLessThan { index, value }
            | SizeMultiple { index, value }
            | StrideEqual { index, value, .. }
            | WorkspaceCheck { index, value } => iv(w, name, *index as i64, *value),
            BoundSizeMultiple { index, value } => iv(w, name, *index, *value),
            SizeInRange { index, min, max } => {
                head(w, 3, name);
                w.str("index");
                w.u64(*index);
                w.str("value");
                w.map(if *max == u64::MAX { 1 } else { 2 });
                w.str("min");
                w.u64(*min);
                if *max != u64::MAX {
                    w.str("max");
                    w.u64(*max);
                }
            }
            MaxProblemSizeGreaterThan(n)
            | LeadingFree0SizesGreaterOrEqual(n)
            | LeadingFree1SizesGreaterOrEqual(n)
            | BufferStoreOffsetLimitCheck(n)
            | GlobalSplitUCheckMinK(n) => {
                v(w, name);
                w.u64(*n);
            }
            HighPrecisionAccumulate(b)
            | DeterministicMode(b)
            | StridedBatched(b)
            | StochasticRounding(b) => {
                v(w, name);
                w.bool(*b);
            }
            AlphaValue(s) | BetaValue(s) => {
                v(w, name);
                w.str(s.name());
            }
            KernelLanguageCompatible(k) => {
                v(w, name);
                w.str(match k {
                    KernelLanguage::Any => "Any",
                    KernelLanguage::Assembly => "Assembly",
                    KernelLanguage::Source => "Source",
                });
            }
            ArithmeticUnitCompatible(a) => {
                v(w, name);
                w.str(match a {
                    ArithmeticUnit::Any => "Any",
                    ArithmeticUnit::Mfma => "MFMA",
                    ArithmeticUnit::Valu => "VALU",
                });
            }
            TypesEqual(t) => {
                v(w, name);
                w.array(4);
                t.iter().for_each(|t| w.str(t.name()));
            }
            OperationIdentifierEqual(s) => {
                v(w, name);
                w.str(s);
            }
            F32XdlMathOp(t) => {
                v(w, name);
                w.str(t.name());
            }
            BufferLoadOffsetLimitCheck {
                shift_a,
                shift_b,
                du_mt0,
                du_mt1,
            } => {
                v(w, name);
                w.map(4);
                for (k, x) in [
                    ("ShiftPtrElemB", shift_b),
                    ("ShiftPtrElemA", shift_a),
                    ("DUorMT1", du_mt1),
                    ("DUorMT0", du_mt0),
                ] {
                    w.str(k);
                    w.u64(*x);
                }
            }
            LdcEqualsLdd
            | CEqualsD
            | CdStridesEqual
            | BetaZero
            | BetaOne
            | PersistentKernelCheck
            | CuEfficiency
            | Experimental
            | Fp16AltImpl
            | EqualityMatching => head(w, 1, name),
        }
    }
}

fn size(p: &Problem, index: u64) -> Option<u64> {
    usize::try_from(index).ok().and_then(|i| p.size(i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgpack::Reader;
    use crate::problem::Transpose;

    fn decode<L: Leaf>(bytes: &[u8]) -> Result<Predicate<L>> {
        let mut d = Decoder::new(Reader::from_bytes(bytes), None);
        Predicate::decode(&mut d)
    }

    fn yaml<L: Leaf>(text: &str) -> Result<Predicate<L>> {
        decode(&crate::yaml::to_msgpack(text).unwrap())
    }

    fn mi355x_256() -> Hardware {
        Hardware {
            processor: "gfx950".into(),
            arch_name: "gfx950:sramecc+:xnack-".into(),
            cu_count: 256,
            chip_id: Some(0x75a3),
            device_name: "AMD Instinct MI355X".into(),
        }
    }

    /// The walkthrough's TENSILE_DB example, line for line.
    #[test]
    fn trace_of_the_documented_cu_mismatch_reads_no_match() {
        let p: HardwarePredicate = yaml(
            "type: AMDGPU\nvalue:\n  type: And\n  value:\n  - {type: Processor, value: gfx950}\n  - {type: CUCount, value: 64}\n  - type: Or\n    value:\n    - {type: PciChipId, value: 30115}\n    - {type: PciChipId, value: 30114}\n",
        )
        .unwrap();
        let mut t = Trace::default();
        assert!(!p.trace(&mi355x_256(), &mut t));
        let expected = "\
[!!]  And                           (3 predicates)
[OK]    Processor                   gpu=gfx950:sramecc+:xnack- == sol=gfx950
[!!]    CUCount                     gpu=256 == sol=64
[OK]    Or                          (2 predicates)
[OK]      PciChipId                 [AMD Instinct MI355X] gpu=0x75a3 == sol=0x75a3
[!!]      PciChipId                 [AMD Instinct MI355X] gpu=0x75a3 == sol=0x75a2
";
        assert_eq!(t.out, expected);
        assert!(!p.eval(&mi355x_256()));
        assert_eq!(
            p.chip_ids().into_iter().collect::<Vec<_>>(),
            [0x75a2, 0x75a3]
        );
    }

    #[test]
    fn unknown_leaf_types_are_errors_not_true() {
        let e = yaml::<ProblemLeaf>(
            "type: And\nvalue:\n- {type: TruePred}\n- {type: ShinyNewCheck, value: 3}\n",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown predicate type \"ShinyNewCheck\""),
            "{e}"
        );
        assert!(e.to_string().contains("value[1]"), "{e}");
        let e =
            yaml::<GpuLeaf>("{type: TypesEqual, value: [Float, Float, Float, Float]}").unwrap_err();
        assert!(e.to_string().contains("TypesEqual"), "{e}");
        let e = yaml::<ProblemLeaf>("{type: TypesEqual, value: [Float, Float, Float, Quad]}")
            .unwrap_err();
        assert!(e.to_string().contains("Quad"), "{e}");
        let e = yaml::<ProblemLeaf>("{type: SizeEqual, value: 3}").unwrap_err();
        assert!(e.to_string().contains("missing key \"index\""), "{e}");
    }

    #[test]
    fn problem_leaves_follow_tensiles_formulas() {
        let p = Problem::gemm(
            Transpose::None,
            Transpose::Transpose,
            96,
            40,
            64,
            DataType::Half,
        );
        let t = |text: &str| yaml::<ProblemLeaf>(text).unwrap().eval(&p);
        assert!(t("{type: Free0SizeMultiple, index: 0, value: 32}"));
        assert!(!t("{type: Free1SizeMultiple, index: 0, value: 16}"));
        assert!(t("{type: BoundSizeMultiple, index: -1, value: 64}"));
        assert!(!t("{type: BoundSizeMultiple, index: 0, value: 0}"));
        assert!(t(
            "{type: SizeInRange, index: 3, value: {min: 64, max: 65}}"
        ));
        assert!(!t("{type: SizeInRange, index: 3, value: {max: 64}}"));
        assert!(t("{type: SizeGreaterThan, index: 2, value: 0}"));
        assert!(
            !t("{type: SizeEqual, index: 7, value: 1}"),
            "an index a GEMM lacks is false"
        );
        assert!(t("{type: StrideBEqual, index: 1, value: 40}"));
        assert!(t("{type: TypesEqual, value: [Half, Half, Half, Half]}"));
        assert!(t(
            "{type: OperationIdentifierEqual, value: Contraction_l_Ailk_Bjlk_Cijk_Dijk}"
        ));
        // (96 * 8 + 2) * 2 bytes < 2^32; a huge lda breaks it.
        assert!(t(
            "{type: BufferLoadOffsetLimitCheck, value: {ShiftPtrElemA: 2, ShiftPtrElemB: 2, DUorMT0: 8, DUorMT1: 8}}"
        ));
        let far = Problem {
            lda: 1 << 30,
            ..p.clone()
        };
        let check = yaml::<ProblemLeaf>("{type: BufferLoadOffsetLimitCheck, value: {ShiftPtrElemA: 0, ShiftPtrElemB: 0, DUorMT0: 2, DUorMT1: 2}}").unwrap();
        assert!(!check.eval(&far));
        assert!(
            !t("{type: WorkspaceCheck, index: 0, value: 4}"),
            "no workspace given"
        );
        assert!(
            t("{type: KernelLanguageCompatible, value: Assembly}"),
            "a problem asking Any takes all"
        );
        assert!(t("{type: Not, value: {type: Fp16AltImpl}}"));
    }

    #[test]
    fn predicates_round_trip_through_the_writer() {
        let text = "type: And\nvalue:\n- {type: StrideAEqual, index: 0, value: 1}\n- {type: BoundSizeMultiple, index: -1, value: 2}\n- {type: SizeInRange, index: 0, value: {min: 2048, max: 4096}}\n- {type: BufferLoadOffsetLimitCheck, value: {ShiftPtrElemB: 2, ShiftPtrElemA: 2, DUorMT1: 8, DUorMT0: 8}}\n- {type: KernelLanguageCompatible, value: Assembly}\n- {type: AlphaValue, value: '-1'}\n- {type: CUEfficiency}\n- type: Not\n  value: {type: FalsePred}\n";
        let p = yaml::<ProblemLeaf>(text).unwrap();
        let mut w = Writer::new();
        p.encode(&mut w);
        assert_eq!(decode::<ProblemLeaf>(&w.out).unwrap(), p);
    }

    #[test]
    fn maps_with_type_not_first_are_read_the_same() {
        let a = yaml::<ProblemLeaf>("{value: 8, index: 0, type: SizeMultiple}").unwrap();
        let b = yaml::<ProblemLeaf>("{type: SizeMultiple, index: 0, value: 8}").unwrap();
        assert_eq!(a, b);
    }
}
