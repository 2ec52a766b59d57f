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
use super::problem::Problem;

/// A predicate tree over leaves `L`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Predicate<L> {
    /// `TruePred`: always holds.
    True,
    /// `FalsePred`: never holds.
    False,
    /// `And`: every item holds (true when empty).
    And(Box<[Predicate<L>]>),
    /// `Or`: some item holds (false when empty).
    Or(Box<[Predicate<L>]>),
    /// `Not`: the inner predicate does not hold.
    Not(Box<Predicate<L>>),
    /// A leaf test of the GPU or the problem.
    Leaf(L),
}

/// A selection trace, printed in the manner of hipBLASLt's `TENSILE_DB`:
/// `[OK]` or `[!!]`, the node indented by depth, the node's name padded to
/// column 36, then the GPU's (or problem's) value and the solution's.
#[derive(Debug, Default)]
pub struct Trace {
    /// The text so far, one line per evaluation, each ending in `\n`.
    pub out: String,
    indent: usize,
}

impl Trace {
    /// Appends one evaluation: `[OK]` or `[!!]`, `name` indented by depth
    /// and padded, then `details`.
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

    /// Appends `text` as a line of its own, unindented (banners, notes).
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
    /// What the leaf tests: the [`Hardware`] or the [`Problem`].
    type Cx: ?Sized;
    /// The catalog's name for this leaf (`"CUCount"`).
    fn name(&self) -> &'static str;
    /// Whether the leaf holds for `cx`.
    fn eval(&self, cx: &Self::Cx) -> bool;
    /// `gpu=... == sol=...` for a trace.
    fn details(&self, cx: &Self::Cx) -> String;
    /// Evaluates the leaf and appends its trace line.
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
    /// Whether the predicate holds for `cx` (`And` and `Or` stop at the
    /// first item that decides).
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

    /// Reads a predicate map (`{type, value}`); an unknown type is a
    /// [`CatalogError::UnknownType`](crate::CatalogError::UnknownType).
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        Self::decode_with(d, &mut |d, _| Predicate::decode(d))
    }

    /// [`Predicate::decode`], reading the items of an `And`, `Or` or `Not`
    /// with `item`, which is told the combinator's type (and may share
    /// equal items, see [`Interner::read`](crate::solution::Interner::read)).
    pub fn decode_with(
        d: &mut Decoder<'_>,
        item: &mut impl FnMut(&mut Decoder<'_>, &str) -> Result<Self>,
    ) -> Result<Self> {
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
                    let items = field(d, t.len, "value", |d| d.array("value", |d| item(d, &t.ty)))?
                        .into_boxed_slice();
                    if t.ty == "And" {
                        Predicate::And(items)
                    } else {
                        Predicate::Or(items)
                    }
                }
                "Not" => Predicate::Not(Box::new(field(d, t.len, "value", |d| item(d, "Not"))?)),
                other => match L::decode(d, other, t.len)? {
                    Some(leaf) => Predicate::Leaf(leaf),
                    None => return Err(d.unknown("predicate", other)),
                },
            };
            Ok(p)
        })
    }

    /// Writes the predicate as Tensile's map (`{type}` or `{type,
    /// value}`).
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
    /// `Processor`: the GPU's gfx name (without target features) is this.
    Processor(Box<str>),
    /// `CUCount`: the GPU has exactly this many compute units.
    CuCount(u32),
    /// `PciChipId`: the GPU's chip ID is this one or falls back to it
    /// (false when the runtime reports no chip ID).
    PciChipId(u32),
    /// A kernel built for this processor can run on the GPU (Tensile's
    /// `runsKernelTargeting`: the same processor, or a gfx900 kernel on a
    /// newer GPU).
    TargetProcessor(Box<str>),
}

/// A predicate on the GPU: a hardware row's condition.
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
            "AMDGPU" | "Processor" | "CUCount" | "PciChipId" | "PciChipID" | "TargetProcessor"
        );
        if !known {
            return Ok(None);
        }
        field(d, len, "value", |d| {
            d.push_key("value");
            let leaf = match ty {
                "AMDGPU" => GpuLeaf::Amdgpu(Box::new(Predicate::decode(d)?)),
                "CUCount" => GpuLeaf::CuCount(d.u32()?),
                // The seed's spelling; newer TensileLite writes `PciChipID`
                // (TENSILELITE.md §3.1). Both read the same; the writer
                // uses the seed's.
                "PciChipId" | "PciChipID" => GpuLeaf::PciChipId(d.u32()?),
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
// Problem leaves (their table is `problem_leaf.rs`)
// ---------------------------------------------------------------------------

pub use super::problem_leaf::{Kind as ProblemLeafKind, ProblemLeaf, ScalarValue, Value};

/// A predicate on the GEMM: a problem row's or a solution's condition.
pub type ProblemPredicate = Predicate<ProblemLeaf>;

impl ProblemPredicate {
    /// Every leaf is [`ProblemLeaf::class_only`].
    pub fn class_only(&self) -> bool {
        let mut all = true;
        self.leaves(&mut |l| all &= l.class_only());
        all
    }
}

impl Leaf for ProblemLeaf {
    type Cx = Problem;

    fn name(&self) -> &'static str {
        ProblemLeaf::name(self)
    }

    fn eval(&self, p: &Problem) -> bool {
        ProblemLeaf::eval(self, p)
    }

    fn details(&self, p: &Problem) -> String {
        format!("prob={} sol={}", self.observed(p), self.expected())
    }

    fn decode(d: &mut Decoder<'_>, ty: &str, len: usize) -> Result<Option<Self>> {
        ProblemLeaf::decode(d, ty, len)
    }

    fn encode(&self, w: &mut Writer) {
        ProblemLeaf::encode(self, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgpack::Reader;
    use crate::problem::{DataType, Transpose};

    fn decode<L: Leaf>(bytes: &[u8]) -> Result<Predicate<L>> {
        let mut d = Decoder::new(Reader::from_bytes(bytes), None);
        Predicate::decode(&mut d)
    }

    fn yaml<L: Leaf>(text: &str) -> Result<Predicate<L>> {
        decode(&crate::yaml::to_msgpack(text).unwrap())
    }

    /// Newer TensileLite's spelling `PciChipID` reads as the seed's
    /// `PciChipId`, which the writer keeps.
    #[test]
    fn both_spellings_of_the_chip_id_predicate_read_alike() {
        let seed: HardwarePredicate = yaml("{type: PciChipId, value: 30032}").unwrap();
        let lite: HardwarePredicate = yaml("{type: PciChipID, value: 30032}").unwrap();
        assert_eq!(seed, lite);
        assert_eq!(lite, Predicate::Leaf(GpuLeaf::PciChipId(30032)));
        let mut w = Writer::new();
        lite.encode(&mut w);
        assert_eq!(decode::<GpuLeaf>(&w.out).unwrap(), seed);
        assert!(w.out.windows(9).any(|b| b == b"PciChipId"));
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
