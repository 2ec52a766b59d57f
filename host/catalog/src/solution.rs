//! Solutions: one kernel each, with the conditions under which it may run.
//!
//! Only `index`, the predicates (hardware, problem and, in TensileLite,
//! task: the latter reads `sizeMapping`'s split, macro tile and workspace
//! per element) and `sizeMapping.sourceKernel` matter to selection; the
//! rest is kept so that a catalog can be written back and so that callers
//! can launch the kernel (work-group and tile sizes, `kernelName`). Keys a
//! solution map may carry beyond these are skipped, as Tensile skips them.
//! `codeObject` is aqueduct's own optional key: the file, next to the
//! catalog, that holds the kernel (Tensile derives it from the lazy child's
//! name instead; both are supported, see `Selected::code_object`).

use std::collections::HashMap;
use std::sync::Arc;

use super::decode::{Decoder, fields};
use super::error::Result;
use super::hardware::Hardware;
use super::msgpack::Writer;
use super::predicate::{HardwarePredicate, Predicate, ProblemLeaf, ProblemPredicate, Trace};
use super::problem::{DataType, Problem};

/// One solution of a catalog's `solutions` list: a kernel and the
/// conditions under which it may run.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The key library nodes refer to the solution by.
    pub index: i64,
    /// The kernel's symbol name.
    pub name: Box<str>,
    /// Shared between solutions of the same type.
    pub problem_type: Arc<ProblemType>,
    /// `hardwarePredicate`: on which GPUs the kernel may run.
    pub hardware_predicate: HardwarePredicate,
    /// Shared between solutions with the same conditions (rocBLAS's 56 980
    /// solutions have 6 587 distinct ones).
    pub problem_predicate: Arc<SolutionPredicate>,
    /// `sizeMapping`: the kernel's launch shape and tiling.
    pub size_mapping: SizeMapping,
    /// `debugKernel`: the kernel was built with Tensile's debug
    /// instrumentation.
    pub debug_kernel: bool,
    /// `libraryLogicIndex`: the solution's position in the logic file it
    /// was generated from (-1 when absent).
    pub library_logic_index: i32,
    /// `ideals`: K → GFLOPS (unused by selection; kept for writing).
    pub ideals: Box<[(i64, f64)]>,
    /// `linearModel`: slope, intercept, max (written only if present).
    pub linear_model: Option<[f64; 3]>,
    /// aqueduct's `codeObject`: the kernel's code-object file name.
    pub code_object: Option<Box<str>>,
    /// TensileLite's `kernelName`: the symbol to launch when it differs
    /// from `name` (solutions that differ only in run-time arguments such
    /// as GSU share a kernel). `None` in Tensile 4.36 catalogs.
    pub kernel_name: Option<Box<str>>,
    /// TensileLite's `taskPredicate`: a test of the problem and this
    /// solution together (workspace). `None` in Tensile 4.36 catalogs.
    pub task_predicate: Option<TaskPredicate>,
}

/// A TensileLite solution's `taskPredicate` (RL
/// `ContractionTaskPredicates.hpp`): conditions on the problem and the
/// solution together. hipBLASLt 7.1.1's files hold only `WorkspaceCheck`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskPredicate {
    /// `TruePred`.
    True,
    /// `And`: every item holds.
    And(Box<[TaskPredicate]>),
    /// `WorkspaceCheck`: the workspace the solution needs for the problem
    /// fits the problem's `workspace_size`.
    WorkspaceCheck,
}

/// Most bytes a split-U kernel's partial sums may take (the source's
/// `max gsu workspace size`, 128 MiB).
const MAX_GSU_WORKSPACE: u128 = 128 << 20;

impl TaskPredicate {
    fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        d.nested(|d| {
            let t = d.typed()?;
            match t.ty.as_str() {
                "TruePred" | "WorkspaceCheck" => {
                    fields(d, t.len, |_, _| Ok(false))?;
                    Ok(if t.ty == "TruePred" {
                        TaskPredicate::True
                    } else {
                        TaskPredicate::WorkspaceCheck
                    })
                }
                "And" => {
                    let items = super::decode::field(d, t.len, "value", |d| {
                        d.array("value", TaskPredicate::decode)
                    })?;
                    Ok(TaskPredicate::And(items.into_boxed_slice()))
                }
                other => Err(d.unknown("task predicate", other)),
            }
        })
    }

    fn encode(&self, w: &mut Writer) {
        match self {
            TaskPredicate::True | TaskPredicate::WorkspaceCheck => {
                w.map(1);
                w.str("type");
                w.str(if *self == TaskPredicate::True {
                    "TruePred"
                } else {
                    "WorkspaceCheck"
                });
            }
            TaskPredicate::And(items) => {
                w.map(2);
                w.str("type");
                w.str("And");
                w.str("value");
                w.array(items.len());
                items.iter().for_each(|i| i.encode(w));
            }
        }
    }

    /// Whether the predicate checks the workspace: with its `And`s
    /// flattened, every task predicate is either `WorkspaceCheck` or
    /// always true.
    pub fn checks_workspace(&self) -> bool {
        match self {
            TaskPredicate::True => false,
            TaskPredicate::And(items) => items.iter().any(TaskPredicate::checks_workspace),
            TaskPredicate::WorkspaceCheck => true,
        }
    }

    /// Whether the predicate holds for `p` run by the solution of `sm`.
    pub fn eval(&self, p: &Problem, sm: &SizeMapping) -> bool {
        match self {
            TaskPredicate::True => true,
            TaskPredicate::And(items) => items.iter().all(|i| i.eval(p, sm)),
            TaskPredicate::WorkspaceCheck => TaskSizes::of(sm).workspace_fits(p),
        }
    }

    /// Evaluates every node and appends trace lines.
    pub fn trace(&self, p: &Problem, sm: &SizeMapping, t: &mut Trace) -> bool {
        match self {
            TaskPredicate::True => {
                t.line(true, "TruePred", "always true");
                true
            }
            TaskPredicate::And(items) => {
                let results: Vec<bool> = items.iter().map(|i| i.trace(p, sm, t)).collect();
                results.iter().all(|&r| r)
            }
            TaskPredicate::WorkspaceCheck => {
                let pass = self.eval(p, sm);
                let need = required_workspace(p, sm)
                    .map_or("more than 128 MiB of partial sums".to_string(), |n| {
                        format!("needs {n}")
                    });
                t.line(
                    pass,
                    "WorkspaceCheck",
                    &format!("workspace={} {need}", p.workspace_size),
                );
                pass
            }
        }
    }
}

/// The workspace in bytes a TensileLite solution needs for `p`
/// (`WorkspaceCheck`, RL `ContractionTaskPredicates.hpp` and
/// `ContractionSolution::requiredWorkspaceSize`): none without a split
/// (GSU 1); with GSU g > 1 a partial tile per split, `ceil(M/MT0) ·
/// ceil(N/MT1) · g · batch · MT0 · MT1 · workspaceSizePerElemC` bytes;
/// `None` (the check fails) when the partial sums would pass 128 MiB or
/// the GSU is automatic (-1, not in hipBLASLt 7.1.1's files). The terms
/// for gradient bias reduction and amax outputs are left out: no problem
/// this crate poses asks for them (a plain GEMM never matches those
/// solutions' `UseGradient`/`AmaxDCheck` leaves).
pub fn required_workspace(p: &Problem, sm: &SizeMapping) -> Option<u128> {
    TaskSizes::of(sm).required_workspace(p)
}

/// What a task predicate reads of its solution's size mapping: the GSU,
/// the macro tile's M and N, and the workspace per element of C.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TaskSizes {
    /// `globalSplitU`.
    pub global_split_u: i64,
    /// `macroTile`'s first two.
    pub macro_tile: [i64; 2],
    /// `workspaceSizePerElemC`.
    pub workspace_size_per_elem_c: i64,
}

impl TaskSizes {
    /// The task sizes of `sm`.
    pub fn of(sm: &SizeMapping) -> TaskSizes {
        TaskSizes {
            global_split_u: sm.global_split_u,
            macro_tile: [sm.macro_tile[0], sm.macro_tile[1]],
            workspace_size_per_elem_c: sm.workspace_size_per_elem_c,
        }
    }

    /// [`required_workspace`] for a solution of these sizes.
    pub fn required_workspace(&self, p: &Problem) -> Option<u128> {
        let gsu = if p.gsu != 0 {
            p.gsu
        } else {
            self.global_split_u
        };
        if gsu < 0 {
            return None;
        }
        if gsu <= 1 {
            return Some(0);
        }
        let (gsu, per_elem) = (gsu as u128, self.workspace_size_per_elem_c.max(0) as u128);
        let elements = u128::from(p.m) * u128::from(p.n) * u128::from(p.batch);
        if elements * per_elem * gsu > MAX_GSU_WORKSPACE {
            return None;
        }
        let (mt0, mt1) = (
            self.macro_tile[0].max(1) as u128,
            self.macro_tile[1].max(1) as u128,
        );
        let tiles = u128::from(p.m).div_ceil(mt0) * u128::from(p.n).div_ceil(mt1) * gsu;
        Some(tiles * u128::from(p.batch) * mt0 * mt1 * per_elem)
    }

    /// Whether `p`'s workspace holds what a solution of these sizes needs
    /// (`WorkspaceCheck`).
    pub fn workspace_fits(&self, p: &Problem) -> bool {
        self.required_workspace(p)
            .is_some_and(|need| need <= u128::from(p.workspace_size))
    }
}

impl Solution {
    /// The kernel symbol to launch: `kernelName` in TensileLite catalogs,
    /// else the solution's name.
    pub fn kernel(&self) -> &str {
        self.kernel_name.as_deref().unwrap_or(&self.name)
    }

    /// Whether the solution may run `p` on `hw`: its hardware, problem and
    /// (TensileLite) task predicates, in that order.
    pub fn holds(&self, hw: &Hardware, p: &Problem) -> bool {
        self.hardware_predicate.eval(hw) && self.problem_predicate.eval(p) && self.task_holds(p)
    }

    /// The task predicate alone (true without one).
    pub fn task_holds(&self, p: &Problem) -> bool {
        self.task_predicate
            .as_ref()
            .is_none_or(|t| t.eval(p, &self.size_mapping))
    }

    /// [`Solution::holds`] with a trace of every evaluation.
    pub fn trace_holds(&self, hw: &Hardware, p: &Problem, t: &mut Trace) -> bool {
        self.hardware_predicate.trace(hw, t)
            && self.problem_predicate.trace(p, t)
            && self
                .task_predicate
                .as_ref()
                .is_none_or(|task| task.trace(p, &self.size_mapping, t))
    }
}

/// A solution's problem predicate, with a compiled form for fast
/// evaluation: when the tree is an `And` of leaves (Tensile writes them so),
/// the leaves' ids in the file's leaf table. A table walk then evaluates
/// each distinct leaf once per query and a solution's predicate costs a
/// few lookups in a small, hot table instead of a walk over a cold tree.
#[derive(Debug, Clone, PartialEq)]
pub struct SolutionPredicate {
    /// The predicate as the catalog writes it.
    pub tree: ProblemPredicate,
    /// When `tree` is an `And` of leaves: each leaf's id in the file's
    /// leaf table ([`crate::File::leaves`]); `None` otherwise (evaluate the
    /// tree).
    pub leaf_ids: Option<Box<[u16]>>,
}

impl std::ops::Deref for SolutionPredicate {
    type Target = ProblemPredicate;
    fn deref(&self) -> &ProblemPredicate {
        &self.tree
    }
}

type Fx = std::hash::BuildHasherDefault<super::FxHasher>;

/// Shares identical solution predicates and numbers their leaves.
///
/// Most solutions repeat a predicate another solution has (rocBLAS: 56 980
/// solutions, 6 587 distinct predicates), so a predicate's bytes are
/// captured first and decoded only the first time they are seen.
#[derive(Default)]
pub struct Interner {
    by_bytes: HashMap<Vec<u8>, Arc<SolutionPredicate>, Fx>,
    types: HashMap<Vec<u8>, Arc<ProblemType>, Fx>,
    mappings: HashMap<Vec<u8>, (SizeMapping, u32), Fx>,
    leaf_ids: HashMap<ProblemLeaf, u16, Fx>,
    /// Items of predicate lists by their bytes, with their leaf ids once
    /// numbered.
    items: HashMap<Vec<u8>, (ProblemPredicate, Option<u16>), Fx>,
    /// The items of the last predicate read, by position, as `items`
    /// holds them.
    recent: Vec<(Vec<u8>, ProblemPredicate, Option<u16>)>,
    item_at: usize,
    item_scratch: Vec<u8>,
    /// The distinct leaves numbered by [`Interner::read`], by id (at most
    /// 65 536: a predicate with a leaf beyond gets no ids).
    pub leaves: Vec<ProblemLeaf>,
    scratch: Vec<u8>,
}

impl Interner {
    /// Captures the value at `d`'s position into the scratch buffer.
    fn capture(&mut self, d: &mut Decoder<'_>) -> Result<()> {
        self.scratch.clear();
        let mut buf = std::mem::take(&mut self.scratch);
        let captured = d.r.capture_into(&mut buf);
        self.scratch = buf;
        captured.map_err(|e| d.msgpack(e))
    }

    /// Reads a problem type, shared with every solution of that type.
    pub fn problem_type(&mut self, d: &mut Decoder<'_>) -> Result<Arc<ProblemType>> {
        self.capture(d)?;
        if let Some(shared) = self.types.get(&self.scratch) {
            return Ok(shared.clone());
        }
        let t = Arc::new(d.decode_captured(&self.scratch, ProblemType::decode)?);
        self.types.insert(self.scratch.clone(), t.clone());
        Ok(t)
    }

    /// Reads a size mapping, decoding each distinct one once, with the
    /// bit set of the required keys it has.
    pub fn size_mapping(&mut self, d: &mut Decoder<'_>) -> Result<(SizeMapping, u32)> {
        self.capture(d)?;
        if let Some(known) = self.mappings.get(&self.scratch) {
            return Ok(known.clone());
        }
        let m = d.decode_captured(&self.scratch, SizeMapping::decode)?;
        self.mappings.insert(self.scratch.clone(), m.clone());
        Ok(m)
    }

    /// Reads a problem predicate at `d`'s position, shared with every
    /// solution that has the same one. When it is an `And` of leaves, the
    /// leaves are numbered (the leaf ids of [`SolutionPredicate`]); an
    /// `And`'s leaves up to its first item that is not one are numbered
    /// either way, no other leaf is. A predicate's items are shared by their
    /// bytes too: TensileLite's predicates are nearly all distinct but are
    /// made of a few hundred distinct leaves (hipBLASLt 7.1.1's largest
    /// file: 691 predicates of 33 leaves, 618 distinct), so a leaf seen
    /// before is looked up, not decoded and numbered again.
    pub fn read(&mut self, d: &mut Decoder<'_>) -> Result<Arc<SolutionPredicate>> {
        self.capture(d)?;
        if let Some(shared) = self.by_bytes.get(&self.scratch) {
            return Ok(shared.clone());
        }
        let bytes = std::mem::take(&mut self.scratch);
        let mut ids = Some(Vec::new());
        self.item_at = 0;
        let tree = d.decode_captured(&bytes, |sub| {
            Predicate::decode_with(sub, &mut |d, within| {
                let number = within == "And" && ids.is_some();
                let (item, id) = self.item(d, number)?;
                match (&mut ids, id) {
                    (Some(ids), Some(id)) if number => ids.push(id),
                    _ => ids = None,
                }
                Ok(item)
            })
        });
        self.scratch = bytes;
        let tree = tree?;
        let leaf_ids = match &tree {
            Predicate::And(_) => ids.map(Vec::into_boxed_slice),
            _ => None,
        };
        let shared = Arc::new(SolutionPredicate { tree, leaf_ids });
        self.by_bytes.insert(self.scratch.clone(), shared.clone());
        Ok(shared)
    }

    /// An item of a predicate's list, by its bytes, and its leaf id when
    /// `number` asks for one (a leaf of an `And`; numbered the first time
    /// it is asked for). Item `n` is compared first with item `n` of the
    /// predicate read before (consecutive predicates mostly differ in a
    /// few leaves), then looked up by hash.
    fn item(
        &mut self,
        d: &mut Decoder<'_>,
        number: bool,
    ) -> Result<(ProblemPredicate, Option<u16>)> {
        let n = self.item_at;
        self.item_at += 1;
        let mut buf = std::mem::take(&mut self.item_scratch);
        buf.clear();
        let captured = d.r.capture_into(&mut buf).map_err(|e| d.msgpack(e));
        let found = captured.and_then(|()| {
            if let Some((bytes, item, id)) = self.recent.get(n)
                && *bytes == buf
                && (id.is_some() || !number)
            {
                return Ok((item.clone(), *id));
            }
            let (item, mut id, mut fresh) = match self.items.get(&buf) {
                Some((item, id)) => (item.clone(), *id, false),
                None => (d.decode_captured(&buf, Predicate::decode)?, None, true),
            };
            if number
                && id.is_none()
                && let Predicate::Leaf(l) = &item
            {
                id = self.leaf_id(l);
                fresh = true;
            }
            if fresh {
                self.items.insert(buf.clone(), (item.clone(), id));
            }
            let entry = (buf.clone(), item.clone(), id);
            match self.recent.get_mut(n) {
                Some(slot) => *slot = entry,
                None => self.recent.push(entry),
            }
            Ok((item, id))
        });
        self.item_scratch = buf;
        found
    }

    fn leaf_id(&mut self, leaf: &ProblemLeaf) -> Option<u16> {
        if let Some(&id) = self.leaf_ids.get(leaf) {
            return Some(id);
        }
        let id = u16::try_from(self.leaves.len()).ok()?;
        self.leaf_ids.insert(leaf.clone(), id);
        self.leaves.push(leaf.clone());
        Some(id)
    }
}

/// A solution's `problemType`: the kind of GEMM its kernel computes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemType {
    /// `operationIdentifier`, e.g. `Contraction_l_Alik_Bljk_Cijk_Dijk`
    /// (see [`Problem::operation_identifier`](crate::Problem::operation_identifier)).
    pub operation_identifier: Box<str>,
    /// `aType`, `bType`, `cType`, `dType`.
    pub types: [DataType; 4],
    /// `useBeta`: the kernel computes the `beta * C` term.
    pub use_beta: bool,
    /// `highPrecisionAccumulate`: it accumulates in a wider type than the
    /// inputs.
    pub high_precision_accumulate: bool,
    /// `useInitialStridesAB`: A's and B's first strides may be other than
    /// 1 (false when absent).
    pub use_initial_strides_ab: bool,
    /// `useInitialStridesCD`: likewise for C and D.
    pub use_initial_strides_cd: bool,
    /// `stridedBatched`: batches are strided, not pointer arrays (true when
    /// absent).
    pub strided_batched: bool,
}

/// A solution's `sizeMapping`: how its kernel tiles the problem and how it
/// is launched (Tensile's `SizeMapping`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SizeMapping {
    /// `workGroup`: work-items per workgroup in x, y, z (missing entries
    /// 0).
    pub work_group: [i64; 3],
    /// Two or three entries in real catalogs; `thread_tile_len` says which.
    pub thread_tile: [i64; 3],
    /// How many entries of `thread_tile` the catalog gave.
    pub thread_tile_len: u8,
    /// `macroTile`: the tile of D one workgroup computes, MT0 (along M) and
    /// MT1 (along N), then the batch depth.
    pub macro_tile: [i64; 3],
    /// `depthU`: K elements consumed per iteration of the unrolled loop.
    pub depth_u: i64,
    /// `staggerU`: how far workgroups stagger their K start to spread
    /// memory-channel traffic (0: off).
    pub stagger_u: i64,
    /// `globalSplitU`: workgroups K is split across (1: no split).
    pub global_split_u: i64,
    /// `staggerStrideShift`: the stagger stride is `depth_u` shifted left
    /// by this.
    pub stagger_stride_shift: i64,
    /// `workGroupMapping`: workgroups grouped along dimension 1 for cache
    /// locality (Tensile's WGM).
    pub work_group_mapping: i64,
    /// `packBatchDims`: Tensile's packing of batch dimensions (0 when
    /// absent).
    pub pack_batch_dims: i64,
    /// `packSummationDims`: Tensile's packing of summation dimensions (0
    /// when absent).
    pub pack_summation_dims: i64,
    /// `magicDivAlg`: the magic-number division algorithm the kernel's
    /// index arithmetic uses (1 when absent).
    pub magic_div_alg: i64,
    /// `persistentKernel`: 0 for an ordinary launch, else the persistent
    /// kernel's workgroups per compute unit.
    pub persistent_kernel: i64,
    /// `persistentKernelAlongBatch`: a persistent kernel also walks the
    /// batch dimension.
    pub persistent_kernel_along_batch: bool,
    /// A HIP-source kernel (`.hsaco`) rather than an assembly one (`.co`).
    pub source_kernel: bool,
    /// `globalAccumulation`: how split-K partial sums are combined (0:
    /// not through a workspace).
    pub global_accumulation: i64,
    /// `workspaceSizePerElemC`: workspace bytes the kernel needs per
    /// element of C.
    pub workspace_size_per_elem_c: i64,
}

fn int_array<const N: usize>(d: &mut Decoder<'_>, min: usize) -> Result<([i64; N], u8)> {
    let n = d.array_len()?;
    if n < min || n > N {
        return Err(d.invalid(format!("expected {min} to {N} integers, found {n}")));
    }
    let mut out = [0; N];
    for slot in out.iter_mut().take(n) {
        *slot = d.i64()?;
    }
    Ok((out, n as u8))
}

/// The keys a `sizeMapping` must have (Tensile's `SizeMapping`), in the
/// order the decoder's bit set numbers them.
pub(crate) const SIZE_MAPPING_KEYS: [&str; 13] = [
    "workGroup",
    "threadTile",
    "macroTile",
    "staggerU",
    "depthU",
    "globalSplitU",
    "staggerStrideShift",
    "workGroupMapping",
    "persistentKernel",
    "persistentKernelAlongBatch",
    "sourceKernel",
    "globalAccumulation",
    "workspaceSizePerElemC",
];

/// The bit of `key` in the required-key set of [`SIZE_MAPPING_KEYS`] (0
/// for the others): one string match, not a scan of the list.
fn required_bit(key: &str) -> u32 {
    let place = match key {
        "workGroup" => 0,
        "threadTile" => 1,
        "macroTile" => 2,
        "staggerU" => 3,
        "depthU" => 4,
        "globalSplitU" => 5,
        "staggerStrideShift" => 6,
        "workGroupMapping" => 7,
        "persistentKernel" => 8,
        "persistentKernelAlongBatch" => 9,
        "sourceKernel" => 10,
        "globalAccumulation" => 11,
        "workspaceSizePerElemC" => 12,
        _ => return 0,
    };
    debug_assert_eq!(SIZE_MAPPING_KEYS[place], key);
    1 << place
}

impl SizeMapping {
    /// Reads a size mapping and the bit set (by [`SIZE_MAPPING_KEYS`]) of
    /// the required keys it has; the caller decides which it needs.
    fn decode(d: &mut Decoder<'_>) -> Result<(Self, u32)> {
        let len = d.map_len()?;
        let mut s = SizeMapping {
            magic_div_alg: 1,
            ..SizeMapping::default()
        };
        let mut seen = 0u32;
        fields(d, len, |d, k| {
            match k {
                "workGroup" => s.work_group = int_array(d, 1)?.0,
                "threadTile" => (s.thread_tile, s.thread_tile_len) = int_array(d, 1)?,
                "macroTile" => s.macro_tile = int_array(d, 1)?.0,
                "staggerU" => s.stagger_u = d.i64()?,
                "depthU" => s.depth_u = d.i64()?,
                "globalSplitU" => s.global_split_u = d.i64()?,
                "staggerStrideShift" => s.stagger_stride_shift = d.i64()?,
                "workGroupMapping" => s.work_group_mapping = d.i64()?,
                "persistentKernel" => s.persistent_kernel = d.i64()?,
                "persistentKernelAlongBatch" => s.persistent_kernel_along_batch = d.bool()?,
                "sourceKernel" => s.source_kernel = d.bool()?,
                "globalAccumulation" => s.global_accumulation = d.i64()?,
                "workspaceSizePerElemC" => s.workspace_size_per_elem_c = d.i64()?,
                "packBatchDims" => s.pack_batch_dims = d.i64()?,
                "packSummationDims" => s.pack_summation_dims = d.i64()?,
                "magicDivAlg" => s.magic_div_alg = d.i64()?,
                _ => return Ok(false),
            }
            seen |= required_bit(k);
            Ok(true)
        })?;
        Ok((s, seen))
    }

    fn encode(&self, w: &mut Writer) {
        w.map(16);
        let arr = |w: &mut Writer, k: &str, v: &[i64]| {
            w.str(k);
            w.array(v.len());
            v.iter().for_each(|x| w.i64(*x));
        };
        arr(w, "workGroup", &self.work_group);
        arr(w, "macroTile", &self.macro_tile);
        arr(
            w,
            "threadTile",
            &self.thread_tile[..self.thread_tile_len as usize],
        );
        for (k, v) in [
            ("depthU", self.depth_u),
            ("staggerU", self.stagger_u),
            ("globalSplitU", self.global_split_u),
            ("staggerStrideShift", self.stagger_stride_shift),
            ("workGroupMapping", self.work_group_mapping),
            ("packSummationDims", self.pack_summation_dims),
            ("packBatchDims", self.pack_batch_dims),
            ("magicDivAlg", self.magic_div_alg),
            ("persistentKernel", self.persistent_kernel),
            ("globalAccumulation", self.global_accumulation),
            ("workspaceSizePerElemC", self.workspace_size_per_elem_c),
        ] {
            w.str(k);
            w.i64(v);
        }
        w.str("persistentKernelAlongBatch");
        w.bool(self.persistent_kernel_along_batch);
        w.str("sourceKernel");
        w.bool(self.source_kernel);
    }
}

impl ProblemType {
    fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let len = d.map_len()?;
        let mut op = None;
        let mut types: [Option<DataType>; 4] = [None; 4];
        let (mut use_beta, mut hpa) = (None, None);
        let mut t = ProblemType {
            operation_identifier: "".into(),
            types: [DataType::Float; 4],
            use_beta: false,
            high_precision_accumulate: false,
            use_initial_strides_ab: false,
            use_initial_strides_cd: false,
            strided_batched: true,
        };
        fields(d, len, |d, k| {
            let slot = match k {
                "aType" => 0,
                "bType" => 1,
                "cType" => 2,
                "dType" => 3,
                "operationIdentifier" => {
                    op = Some(d.boxed_str()?);
                    return Ok(true);
                }
                "useBeta" => {
                    use_beta = Some(d.bool()?);
                    return Ok(true);
                }
                "highPrecisionAccumulate" => {
                    hpa = Some(d.bool()?);
                    return Ok(true);
                }
                "useInitialStridesAB" => {
                    t.use_initial_strides_ab = d.bool()?;
                    return Ok(true);
                }
                "useInitialStridesCD" => {
                    t.use_initial_strides_cd = d.bool()?;
                    return Ok(true);
                }
                "stridedBatched" => {
                    t.strided_batched = d.bool()?;
                    return Ok(true);
                }
                _ => return Ok(false),
            };
            let name = d.string()?;
            types[slot] = Some(DataType::from_name(&name).ok_or_else(|| d.unknown("data", &name))?);
            Ok(true)
        })?;
        t.operation_identifier = op.ok_or_else(|| d.missing("operationIdentifier"))?;
        for (i, key) in ["aType", "bType", "cType", "dType"].into_iter().enumerate() {
            t.types[i] = types[i].ok_or_else(|| d.missing(key))?;
        }
        t.use_beta = use_beta.ok_or_else(|| d.missing("useBeta"))?;
        t.high_precision_accumulate = hpa.ok_or_else(|| d.missing("highPrecisionAccumulate"))?;
        Ok(t)
    }

    fn encode(&self, w: &mut Writer) {
        w.map(10);
        w.str("operationIdentifier");
        w.str(&self.operation_identifier);
        for (k, t) in ["aType", "bType", "cType", "dType"]
            .into_iter()
            .zip(self.types)
        {
            w.str(k);
            w.str(t.name());
        }
        for (k, v) in [
            ("useBeta", self.use_beta),
            ("highPrecisionAccumulate", self.high_precision_accumulate),
            ("useInitialStridesAB", self.use_initial_strides_ab),
            ("useInitialStridesCD", self.use_initial_strides_cd),
            ("stridedBatched", self.strided_batched),
        ] {
            w.str(k);
            w.bool(v);
        }
    }
}

impl Solution {
    /// Reads one solution map; `index`, `name`, `problemType`, both
    /// predicates, `sizeMapping` and `debugKernel` are required, other
    /// unknown keys skipped. Predicates and types are shared through
    /// `interner`.
    pub fn decode(d: &mut Decoder<'_>, interner: &mut Interner) -> Result<Self> {
        let len = d.map_len()?;
        let mut index = None;
        let mut name = None;
        let mut problem_type = None;
        let mut hardware_predicate = None;
        let mut problem_predicate = None;
        let mut size_mapping = None;
        let mut debug_kernel = None;
        let mut library_logic_index = -1;
        let mut ideals = Vec::new();
        let mut linear_model = None;
        let mut code_object = None;
        let mut kernel_name = None;
        let mut task_predicate = None;
        fields(d, len, |d, k| {
            match k {
                "index" => index = Some(d.i64()?),
                "name" => name = Some(d.boxed_str()?),
                "problemType" => {
                    d.push_key("problemType");
                    problem_type = Some(interner.problem_type(d)?);
                    d.pop();
                }
                "hardwarePredicate" => {
                    d.push_key("hardwarePredicate");
                    hardware_predicate = Some(Predicate::decode(d)?);
                    d.pop();
                }
                "problemPredicate" => {
                    d.push_key("problemPredicate");
                    problem_predicate = Some(interner.read(d)?);
                    d.pop();
                }
                "sizeMapping" => {
                    d.push_key("sizeMapping");
                    // TensileLite's size mappings carry per-kernel tuning
                    // values and are nearly all distinct: caching them by
                    // their bytes costs more than it saves (its files put
                    // `taskPredicate` first). rocBLAS's repeat.
                    size_mapping = Some(if task_predicate.is_some() {
                        SizeMapping::decode(d)?
                    } else {
                        interner.size_mapping(d)?
                    });
                    d.pop();
                }
                "debugKernel" => debug_kernel = Some(d.bool()?),
                "libraryLogicIndex" => library_logic_index = d.i32()?,
                "ideals" => {
                    d.push_key("ideals");
                    let n = d.map_len()?;
                    for _ in 0..n {
                        let key = d.key_string()?;
                        let k: i64 = key.parse().map_err(|_| {
                            d.invalid(format!("ideals key {key:?} is not an integer"))
                        })?;
                        ideals.push((k, d.f64()?));
                    }
                    d.pop();
                }
                "linearModel" => {
                    let n = d.map_len()?;
                    let mut m = [1.0, 0.0, 1000.0];
                    let mut any = false;
                    fields(d, n, |d, k| {
                        let slot = match k {
                            "slope" => 0,
                            "intercept" => 1,
                            "max" => 2,
                            _ => return Ok(false),
                        };
                        m[slot] = d.f64()?;
                        any = true;
                        Ok(true)
                    })?;
                    linear_model = any.then_some(m);
                }
                "codeObject" => code_object = Some(d.boxed_str()?),
                "kernelName" => kernel_name = Some(d.boxed_str()?),
                "taskPredicate" => {
                    d.push_key("taskPredicate");
                    task_predicate = Some(TaskPredicate::decode(d)?);
                    d.pop();
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        let (size_mapping, seen) = size_mapping.ok_or_else(|| d.missing("sizeMapping"))?;
        // TensileLite dropped the persistent-kernel keys (a solution with a
        // task predicate is TensileLite's).
        let optional = if task_predicate.is_some() {
            (1 << 8) | (1 << 9)
        } else {
            0
        };
        if let Some(bit) = (0..SIZE_MAPPING_KEYS.len()).find(|b| (seen | optional) & (1 << b) == 0)
        {
            d.push_key("sizeMapping");
            let e = d.missing(SIZE_MAPPING_KEYS[bit]);
            d.pop();
            return Err(e);
        }
        Ok(Solution {
            index: index.ok_or_else(|| d.missing("index"))?,
            name: name.ok_or_else(|| d.missing("name"))?,
            problem_type: problem_type.ok_or_else(|| d.missing("problemType"))?,
            hardware_predicate: hardware_predicate.ok_or_else(|| d.missing("hardwarePredicate"))?,
            problem_predicate: problem_predicate.ok_or_else(|| d.missing("problemPredicate"))?,
            size_mapping,
            debug_kernel: debug_kernel.ok_or_else(|| d.missing("debugKernel"))?,
            library_logic_index,
            ideals: ideals.into_boxed_slice(),
            linear_model,
            code_object,
            kernel_name,
            task_predicate,
        })
    }

    /// Writes the solution map back in Tensile's layout (with
    /// `codeObject` when it has one).
    pub fn encode(&self, w: &mut Writer) {
        w.map(
            10 + usize::from(self.code_object.is_some())
                + usize::from(self.kernel_name.is_some())
                + usize::from(self.task_predicate.is_some()),
        );
        w.str("name");
        w.str(&self.name);
        if let Some(k) = &self.kernel_name {
            w.str("kernelName");
            w.str(k);
        }
        if let Some(t) = &self.task_predicate {
            w.str("taskPredicate");
            t.encode(w);
        }
        w.str("problemType");
        self.problem_type.encode(w);
        w.str("hardwarePredicate");
        self.hardware_predicate.encode(w);
        w.str("problemPredicate");
        self.problem_predicate.encode(w);
        w.str("sizeMapping");
        self.size_mapping.encode(w);
        w.str("debugKernel");
        w.bool(self.debug_kernel);
        w.str("libraryLogicIndex");
        w.i64(self.library_logic_index as i64);
        w.str("index");
        w.i64(self.index);
        w.str("ideals");
        w.map(self.ideals.len());
        for (k, v) in self.ideals.iter() {
            w.str(&k.to_string());
            w.f64(*v);
        }
        w.str("linearModel");
        match self.linear_model {
            Some([slope, intercept, max]) => {
                w.map(3);
                for (k, v) in [("slope", slope), ("intercept", intercept), ("max", max)] {
                    w.str(k);
                    w.f64(v);
                }
            }
            None => w.map(0),
        }
        if let Some(co) = &self.code_object {
            w.str("codeObject");
            w.str(co);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_required_size_mapping_key_has_its_own_bit() {
        for (i, key) in SIZE_MAPPING_KEYS.iter().enumerate() {
            assert_eq!(required_bit(key), 1 << i, "{key}");
        }
        assert_eq!(required_bit("packBatchDims"), 0);
        assert_eq!(required_bit("waveNum"), 0);
    }
    use crate::problem::Transpose;

    /// `WorkspaceCheck` (TENSILELITE.md §6.3): GSU 1 needs nothing; GSU g
    /// needs a partial tile per split; over 128 MiB of partial sums fails.
    #[test]
    fn the_workspace_check_follows_the_split() {
        let mut p = Problem::hipblaslt(
            Transpose::None,
            Transpose::None,
            1000,
            500,
            4096,
            DataType::Half,
            DataType::Half,
            DataType::Half,
            DataType::Float,
        );
        let sm = |gsu| SizeMapping {
            macro_tile: [256, 128, 1],
            global_split_u: gsu,
            workspace_size_per_elem_c: 4,
            ..SizeMapping::default()
        };
        assert_eq!(required_workspace(&p, &sm(1)), Some(0));
        // ceil(1000/256)=4 · ceil(500/128)=4 · 3 splits · 256·128 · 4 B.
        assert_eq!(
            required_workspace(&p, &sm(3)),
            Some(4 * 4 * 3 * 256 * 128 * 4)
        );
        assert!(TaskPredicate::WorkspaceCheck.eval(&p, &sm(1)));
        assert!(!TaskPredicate::WorkspaceCheck.eval(&p, &sm(3)));
        p.workspace_size = 4 * 4 * 3 * 256 * 128 * 4;
        assert!(TaskPredicate::WorkspaceCheck.eval(&p, &sm(3)));
        // The caller's gsu overrides the solution's.
        p.gsu = 1;
        assert_eq!(required_workspace(&p, &sm(3)), Some(0));
        p.gsu = 0;
        (p.m, p.n) = (1 << 14, 1 << 14);
        assert_eq!(
            required_workspace(&p, &sm(2)),
            None,
            "2 GiB of partial sums"
        );
        assert_eq!(required_workspace(&p, &sm(-1)), None, "automatic GSU");
    }
}
