//! Library nodes and how each one selects, following Tensile 4.36
//! (`ExactLogicLibrary.hpp`, `MapLibrary.hpp`, `SingleSolutionLibrary.hpp`,
//! `MatchingLibrary.hpp`/`PropertyMatching.hpp`/`Distance.hpp`,
//! `DecisionTreeLibrary.hpp`, `PlaceholderLibrary.hpp`) and hipBLASLt for
//! the chip-ID fallback of hardware rows.
//!
//! ```text
//!  Hardware rows ──► ProblemMap[operation id] ──► Problem rows ──► Matching / DecisionTree / Single
//!   (GPU predicates)                              (type, feature     (size → solution, then the
//!                                                  predicates)        solution's own predicates)
//! ```
//!
//! Rules a reader of the code should keep in mind (each reproduces
//! Tensile, quirks included):
//! - Hardware and Problem rows are tried in file order; a matching row
//!   whose sub-library finds nothing falls through to the next row. A
//!   hardware row matched only through a chip-ID fallback edge is kept
//!   aside (the first one that answers) and used only when no exact row
//!   answers.
//! - A ProblemMap without the operation has no answer (no fallback).
//! - A Single answers only if its solution's hardware and problem
//!   predicates hold.
//! - A Matching table is sorted at load exactly as libstdc++'s `std::sort`
//!   orders it (key ascending, speed descending, ties as introsort leaves
//!   them). The search starts at the lower bound of the query key, walks
//!   right, then left; an entry replaces the best one only on a strictly
//!   smaller distance, or an equal distance and a strictly higher speed,
//!   and only if its solution's predicates hold; a walk stops at the first
//!   entry whose first key alone cannot improve (Euclidean: `(q0-k0)² >=
//!   best`, unless the whole key equals the query). Euclidean distance is
//!   the squared distance. Equality tries only the first entry with the
//!   exact key. (Untraced, Euclidean and Manhattan tables get the walk's
//!   answer from a tree search instead, `kd.rs`; `Matching::fold` says
//!   why it is the same answer.)
//! - A DecisionTree returns the value of the first tree that predicts
//!   true, even when that solution's predicates fail (then: no answer).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::decode::{Decoder, field, fields};
use super::error::{CatalogError, Result};
use super::hardware::Hardware;
use super::kd::{FAILS, KdIndex, PASSES, UNKNOWN};
use super::msgpack::Writer;
use super::predicate::{HardwarePredicate, Leaf, Predicate, ProblemPredicate, Trace};
use super::problem::Problem;
use super::stdsort::std_sort_by;

/// A solution's position in its file's solution list.
pub type SolutionId = u32;

#[derive(Debug)]
pub enum Node {
    Hardware(Box<[HardwareRow]>),
    Problem(Box<[ProblemRow]>),
    ProblemMap(Box<ProblemMap>),
    Single(SolutionId),
    Matching(Box<Matching>),
    DecisionTree(Box<Forest>),
    Placeholder(Box<Placeholder>),
}

#[derive(Debug)]
pub struct HardwareRow {
    pub predicate: HardwarePredicate,
    /// Every chip ID in the predicate: a match is a fallback match when
    /// the set is not empty and lacks the GPU's chip.
    pub chips: Box<[u32]>,
    pub library: Node,
}

impl HardwareRow {
    pub fn is_fallback_for(&self, hw: &Hardware) -> bool {
        match hw.chip_id {
            Some(id) => !self.chips.is_empty() && !self.chips.contains(&id),
            None => false,
        }
    }
}

#[derive(Debug)]
pub struct ProblemRow {
    pub predicate: ProblemPredicate,
    pub library: Node,
    /// The predicate reads only what fixes a problem's class (worked out
    /// at load, for [`plan`](super::plan)s).
    pub class_only: bool,
}

#[derive(Debug)]
pub struct ProblemMap {
    /// In file order, for writing.
    pub entries: Vec<(Box<str>, Node)>,
    pub index: HashMap<Box<str>, usize, super::FxBuild>,
}

/// A size property: the problem's value becomes one coordinate of a
/// Matching key or a DecisionTree feature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Property {
    FreeSizeA(u64),
    FreeSizeB(u64),
    BatchSize(u64),
    BoundSize(u64),
    AStride(u64),
    BStride(u64),
    CStride(u64),
    DStride(u64),
}

impl Property {
    fn name(self) -> &'static str {
        match self {
            Property::FreeSizeA(_) => "FreeSizeA",
            Property::FreeSizeB(_) => "FreeSizeB",
            Property::BatchSize(_) => "BatchSize",
            Property::BoundSize(_) => "BoundSize",
            Property::AStride(_) => "AStride",
            Property::BStride(_) => "BStride",
            Property::CStride(_) => "CStride",
            Property::DStride(_) => "DStride",
        }
    }

    fn index(self) -> u64 {
        match self {
            Property::FreeSizeA(i)
            | Property::FreeSizeB(i)
            | Property::BatchSize(i)
            | Property::BoundSize(i)
            | Property::AStride(i)
            | Property::BStride(i)
            | Property::CStride(i)
            | Property::DStride(i) => i,
        }
    }

    fn from_name(name: &str, index: u64) -> Option<Self> {
        Some(match name {
            "FreeSizeA" => Property::FreeSizeA(index),
            "FreeSizeB" => Property::FreeSizeB(index),
            "BatchSize" => Property::BatchSize(index),
            "BoundSize" => Property::BoundSize(index),
            "AStride" => Property::AStride(index),
            "BStride" => Property::BStride(index),
            "CStride" => Property::CStride(index),
            "DStride" => Property::DStride(index),
            _ => return None,
        })
    }

    /// The problem's value; `None` for an index a GEMM does not have.
    pub fn value(self, p: &Problem) -> Option<u64> {
        let at = |v: [u64; 3], i: u64| usize::try_from(i).ok().and_then(|i| v.get(i).copied());
        match self {
            Property::FreeSizeA(0) => Some(p.m),
            Property::FreeSizeB(0) => Some(p.n),
            Property::BatchSize(0) => Some(p.batch),
            Property::BoundSize(0) => Some(p.k),
            Property::AStride(i) => at(p.a_strides(), i),
            Property::BStride(i) => at(p.b_strides(), i),
            Property::CStride(i) => at(p.c_strides(), i),
            Property::DStride(i) => at(p.d_strides(), i),
            _ => None,
        }
    }
}

/// Distance functions of Matching tables (`Distance.hpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distance {
    Euclidean,
    Manhattan,
    Ratio,
    Jsd,
    Equality,
}

impl Distance {
    fn name(self) -> &'static str {
        match self {
            Distance::Euclidean => "Euclidean",
            Distance::Manhattan => "Manhattan",
            Distance::Ratio => "Ratio",
            Distance::Jsd => "JSD",
            Distance::Equality => "Equality",
        }
    }

    #[inline(always)]
    fn distance(self, q: &[i64], k: &[i64]) -> f64 {
        match self {
            Distance::Euclidean => q
                .iter()
                .zip(k)
                .map(|(a, b)| {
                    let d = a.wrapping_sub(*b) as f64;
                    d * d
                })
                .sum(),
            Distance::Manhattan => q
                .iter()
                .zip(k)
                .map(|(a, b)| (a.wrapping_sub(*b) as f64).abs())
                .sum(),
            Distance::Ratio => {
                1.0 + q
                    .iter()
                    .zip(k)
                    .map(|(a, b)| {
                        let r = *a as f64 / *b as f64;
                        if *a == 0 || *b == 0 {
                            f64::INFINITY
                        } else {
                            r.ln().abs()
                        }
                    })
                    .sum::<f64>()
            }
            Distance::Jsd => {
                let (np, nq, m) = jsd_parts(q, k);
                (0..3)
                    .map(|i| 0.5 * np[i] * (np[i] / m[i]).ln() + 0.5 * nq[i] * (nq[i] / m[i]).ln())
                    .sum()
            }
            Distance::Equality => 0.0,
        }
    }

    /// Whether an entry whose first coordinate is `k[0]` could still beat
    /// `best` (`Distance.hpp`'s `improvementPossible` at index 0).
    #[inline(always)]
    fn improvement_possible(self, q: &[i64], k: &[i64], best: f64) -> bool {
        let first = match self {
            Distance::Euclidean => {
                let d = q[0].wrapping_sub(k[0]) as f64;
                d * d < best
            }
            Distance::Manhattan => (q[0].wrapping_sub(k[0]) as f64).abs() < best,
            Distance::Jsd => {
                let (np, nq, m) = jsd_parts(q, k);
                0.5 * np[0] * (np[0] / m[0]).ln() + 0.5 * nq[0] * (nq[0] / m[0]).ln() < best
            }
            Distance::Ratio | Distance::Equality => true,
        };
        first || q == k
    }
}

/// Normalised p and q over their first three coordinates, and their mean.
fn jsd_parts(q: &[i64], k: &[i64]) -> ([f64; 3], [f64; 3], [f64; 3]) {
    let sp: f64 = q.iter().take(3).map(|&x| x as f64).sum();
    let sq: f64 = k.iter().take(3).map(|&x| x as f64).sum();
    let mut np = [0.0; 3];
    let mut nq = [0.0; 3];
    let mut m = [0.0; 3];
    for i in 0..3 {
        np[i] = q.get(i).map_or(0.0, |&x| x as f64) / sp;
        nq[i] = k.get(i).map_or(0.0, |&x| x as f64) / sq;
        m[i] = (np[i] + nq[i]) / 2.0;
    }
    (np, nq, m)
}

/// Keys have at most this many coordinates (Tensile's limit).
const MAX_ARITY: usize = 10;

/// What a Matching entry leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Solution(SolutionId),
    /// Index into `Matching::values`.
    Node(u32),
}

#[derive(Debug)]
pub struct Matching {
    pub properties: Box<[Property]>,
    pub distance: Distance,
    /// Keys of all entries, `properties.len()` each, in sorted order.
    pub keys: Box<[i64]>,
    pub speeds: Box<[f64]>,
    pub targets: Box<[Target]>,
    /// Each sorted entry's position in the file, for writing it back.
    pub file_pos: Box<[u32]>,
    pub values: Vec<Node>,
    /// The table's solutions grouped by condition: solutions with the same
    /// (shared) problem predicate and a TruePred hardware predicate pass or
    /// fail together, so a walk asks once per group (rocBLAS's largest
    /// table: 1 631 solutions, 95 groups). One representative solution per
    /// group, and each entry's group (0 for entries leading to a
    /// sub-library).
    pub solutions: Box<[SolutionId]>,
    pub local: Box<[u32]>,
    /// The tree that answers Euclidean and Manhattan tables (None for
    /// other distances, tables with sub-libraries, and tables outside the
    /// tree's exact limits: those are walked as Tensile walks them).
    kd: Option<KdIndex>,
    /// The groups' conditions as masks over the table's leaves.
    conditions: Conditions,
}

/// Most words a group's mask may take (512 distinct leaves per table;
/// rocBLAS's tables use at most 114).
const MASK_WORDS: usize = 8;

/// A table's solution groups in the form a search judges fastest. Most
/// groups' conditions compile to a conjunction of predicate leaves (the
/// hardware predicate is TruePred and the problem predicate an And of
/// leaves): such a group is a bit mask over the distinct leaves the
/// table's groups use, `words` words per group, next to each other. A
/// search then learns each table leaf once per query, rejects a group
/// needing a leaf known to fail without evaluating anything, and reads one
/// small record per group. The other groups are judged the long way.
#[derive(Debug, Default)]
struct Conditions {
    /// Table leaf (bit 64w + b) → the file's leaf id.
    leaves: Box<[u16]>,
    words: usize,
    masks: Box<[u64]>,
    /// Per group: whether its mask is its whole condition.
    compiled: Box<[bool]>,
}

impl Conditions {
    fn build(list: &[super::Solution], groups: &[SolutionId]) -> Conditions {
        let conjunction = |id: SolutionId| {
            list.get(id as usize)
                .filter(|s| matches!(s.hardware_predicate, Predicate::True))
                .and_then(|s| s.problem_predicate.leaf_ids.as_deref())
        };
        // File leaf id → table leaf + 1.
        let mut table_leaf: Vec<u32> = Vec::new();
        let mut leaves = Vec::new();
        for ids in groups.iter().filter_map(|&id| conjunction(id)) {
            for &leaf in ids {
                let leaf = leaf as usize;
                if table_leaf.len() <= leaf {
                    table_leaf.resize(leaf + 1, 0);
                }
                if table_leaf[leaf] == 0 {
                    leaves.push(leaf as u16);
                    table_leaf[leaf] = leaves.len() as u32;
                }
            }
        }
        let words = leaves.len().div_ceil(64);
        if words > MASK_WORDS {
            return Conditions {
                compiled: vec![false; groups.len()].into_boxed_slice(),
                ..Conditions::default()
            };
        }
        let mut masks = vec![0u64; groups.len() * words];
        let compiled = groups
            .iter()
            .enumerate()
            .map(|(g, &id)| {
                let ids = conjunction(id);
                for &leaf in ids.unwrap_or_default() {
                    let bit = table_leaf[leaf as usize] as usize - 1;
                    masks[g * words + bit / 64] |= 1 << (bit % 64);
                }
                ids.is_some()
            })
            .collect();
        Conditions {
            leaves: leaves.into_boxed_slice(),
            words,
            masks: masks.into_boxed_slice(),
            compiled,
        }
    }
}

/// What a search knows of its table's leaves for the current query, and
/// how it judges a group.
struct Judge<'a, 'q> {
    table: &'a Matching,
    file: &'a super::File,
    q: &'a Query<'q>,
    leaf_state: &'a mut [u8],
    pass: [u64; MASK_WORDS],
    fail: [u64; MASK_WORDS],
}

impl Judge<'_, '_> {
    /// Whether group `l` passes its predicates for this query.
    fn judge(&mut self, l: usize) -> bool {
        let c = &self.table.conditions;
        if !c.compiled[l] {
            return single_fast(self.file, self.table.solutions[l], self.q, self.leaf_state);
        }
        let mask = &c.masks[l * c.words..(l + 1) * c.words];
        if mask.iter().zip(&self.fail).any(|(m, f)| m & f != 0) {
            return false;
        }
        for (w, &m) in mask.iter().enumerate() {
            let mut todo = m & !self.pass[w];
            while todo != 0 {
                let b = todo.trailing_zeros() as usize;
                todo &= todo - 1;
                let leaf = c.leaves[w * 64 + b] as usize;
                let pass = match self.leaf_state[leaf] {
                    PASSES => true,
                    FAILS => false,
                    _ => {
                        let pass = self.file.leaves[leaf].eval(self.q.problem);
                        self.leaf_state[leaf] = if pass { PASSES } else { FAILS };
                        pass
                    }
                };
                if !pass {
                    self.fail[w] |= 1 << b;
                    return false;
                }
                self.pass[w] |= 1 << b;
            }
        }
        true
    }
}

impl Matching {
    /// Groups the table's solutions by condition and builds what walks
    /// read about them (needs the solutions themselves).
    fn group(&mut self, list: &[super::Solution]) {
        let mut solutions = Vec::new();
        let mut seen: HashMap<(usize, SolutionId), u32, super::FxBuild> = HashMap::default();
        let local: Box<[u32]> = self
            .targets
            .iter()
            .map(|t| match t {
                Target::Solution(id) => {
                    let group = match list.get(*id as usize) {
                        Some(s) if matches!(s.hardware_predicate, Predicate::True) => {
                            (Arc::as_ptr(&s.problem_predicate) as usize, 0)
                        }
                        _ => (0, *id),
                    };
                    *seen.entry(group).or_insert_with(|| {
                        solutions.push(*id);
                        solutions.len() as u32 - 1
                    })
                }
                Target::Node(_) => 0,
            })
            .collect();
        self.conditions = Conditions::build(list, &solutions);
        if let Some(kd) = &mut self.kd
            && !kd.set_groups(&local, solutions.len())
        {
            self.kd = None;
        }
        self.solutions = solutions.into_boxed_slice();
        self.local = local;
    }

    fn arity(&self) -> usize {
        self.properties.len()
    }

    #[inline(always)]
    fn key(&self, i: usize) -> &[i64] {
        let n = self.arity();
        &self.keys[i * n..(i + 1) * n]
    }

    fn len(&self) -> usize {
        self.speeds.len()
    }

    /// First entry whose key is not less than `q`.
    fn lower_bound(&self, q: &[i64]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < q {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// A feature of a decision tree (`MLFeatures.hpp`), computed in f32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feature {
    Size(Property),
    Tile0Granularity(f32),
    Tile1Granularity(f32),
    CuGranularity {
        mt0: f32,
        mt1: f32,
        cus: f32,
    },
    WavesPerSimd {
        mt0: f32,
        mt1: f32,
        cus: f32,
        ws: f32,
    },
}

fn granularity(x: f32) -> f32 {
    x / x.ceil()
}

impl Feature {
    fn value(self, p: &Problem) -> Option<f32> {
        let tiles_per_cu = |mt0: f32, mt1: f32, cus: f32| {
            (p.m as f32 * mt0).ceil() * (p.n as f32 * mt1).ceil() * cus
        };
        Some(match self {
            Feature::Size(prop) => prop.value(p)? as f32,
            Feature::Tile0Granularity(v) => granularity(p.m as f32 * v),
            Feature::Tile1Granularity(v) => granularity(p.n as f32 * v),
            Feature::CuGranularity { mt0, mt1, cus } => granularity(tiles_per_cu(mt0, mt1, cus)),
            Feature::WavesPerSimd { mt0, mt1, cus, ws } => tiles_per_cu(mt0, mt1, cus).ceil() * ws,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeNode {
    pub feature: u32,
    pub threshold: f32,
    pub next_lte: i32,
    pub next_gt: i32,
}

#[derive(Debug)]
pub struct Tree {
    pub nodes: Box<[TreeNode]>,
    pub value: Node,
}

/// Tree links: -1 predicts false, -2 true.
const LEAF_FALSE: i32 = -1;
const LEAF_TRUE: i32 = -2;

impl Tree {
    fn predict(&self, key: &[f32]) -> bool {
        // Load checked every link and feature index; a cycle is cut after
        // as many steps as there are nodes.
        let mut idx = 0usize;
        for _ in 0..=self.nodes.len() {
            let Some(node) = self.nodes.get(idx) else {
                return false;
            };
            let next = if key[node.feature as usize] <= node.threshold {
                node.next_lte
            } else {
                node.next_gt
            };
            match next {
                LEAF_FALSE => return false,
                LEAF_TRUE => return true,
                n => idx = n as usize,
            }
        }
        false
    }
}

#[derive(Debug)]
pub struct Forest {
    pub features: Box<[Feature]>,
    pub trees: Box<[Tree]>,
}

/// A lazily loaded child catalog (`{type: Placeholder, value: <prefix>}`).
#[derive(Debug)]
pub struct Placeholder {
    pub prefix: Box<str>,
    /// How to find and load the child: the parent file's directory and
    /// suffix, and the chain of files above it (for cycle detection).
    pub origin: Arc<Origin>,
    pub child: OnceLock<std::result::Result<Box<super::File>, CatalogError>>,
}

/// Where a file came from, shared by the placeholders in it.
#[derive(Debug)]
pub struct Origin {
    pub dir: PathBuf,
    pub suffix: String,
    /// Files from the root catalog down to this one.
    pub chain: Vec<PathBuf>,
}

// ---------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------

/// One query: the problem, the GPU, and an optional trace.
pub struct Query<'q> {
    pub problem: &'q Problem,
    pub hardware: &'q Hardware,
    pub trace: Option<&'q mut Trace>,
}

/// A selected solution and the file that holds it.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'c> {
    pub file: &'c super::File,
    pub id: SolutionId,
    /// The matching distance that chose it (0 for non-matching paths).
    pub fitness: f64,
}

const RULE: &str =
    "--------------------------------------------------------------------------------";

fn header(t: &mut Trace, title: &str) {
    t.raw("");
    t.raw(RULE);
    t.raw(&format!("PREDICATE: {title}"));
    t.raw(RULE);
}

fn footer(t: &mut Trace, pass: bool) {
    t.raw(RULE);
    t.raw(if pass {
        "Result: MATCH"
    } else {
        "Result: NO MATCH"
    });
    t.raw(RULE);
}

impl Node {
    pub fn select<'c>(
        &'c self,
        file: &'c super::File,
        q: &mut Query<'_>,
    ) -> Result<Option<Hit<'c>>> {
        match self {
            Node::Hardware(rows) => {
                let mut fallback: Option<Hit<'c>> = None;
                let mut fallback_taken = false;
                for row in rows.iter() {
                    let pass = match q.trace.as_deref_mut() {
                        Some(t) => {
                            header(t, "ExactLogic: Hardware");
                            let pass = row.predicate.trace(q.hardware, t);
                            footer(t, pass);
                            pass
                        }
                        None => row.predicate.eval(q.hardware),
                    };
                    if !pass {
                        continue;
                    }
                    if !row.is_fallback_for(q.hardware) {
                        if let Some(hit) = row.library.select(file, q)? {
                            if let Some(t) = q.trace.as_deref_mut() {
                                let name = &hit.file.solutions[hit.id as usize].name;
                                t.raw(&format!("  Solution found (exact): {name}"));
                            }
                            return Ok(Some(hit));
                        }
                    } else if !fallback_taken {
                        fallback = row.library.select(file, q)?;
                        fallback_taken = fallback.is_some();
                    }
                }
                if let (Some(hit), Some(t)) = (&fallback, q.trace.as_deref_mut()) {
                    t.raw(&format!(
                        "  Solution found (fallback): {}",
                        hit.file.solutions[hit.id as usize].name
                    ));
                }
                Ok(fallback)
            }
            Node::Problem(rows) => {
                for row in rows.iter() {
                    let pass = match q.trace.as_deref_mut() {
                        Some(t) => {
                            header(t, "ExactLogic: Problem");
                            let pass = row.predicate.trace(q.problem, t);
                            footer(t, pass);
                            pass
                        }
                        None => row.predicate.eval(q.problem),
                    };
                    if pass && let Some(hit) = row.library.select(file, q)? {
                        return Ok(Some(hit));
                    }
                }
                Ok(None)
            }
            Node::ProblemMap(map) => {
                let op = q.problem.operation_identifier();
                let found = map.index.get(op);
                if let Some(t) = q.trace.as_deref_mut() {
                    t.raw(&format!(
                        "ProblemMap: {op} {}",
                        if found.is_some() {
                            "found"
                        } else {
                            "not found"
                        }
                    ));
                }
                match found {
                    Some(&i) => map.entries[i].1.select(file, q),
                    None => Ok(None),
                }
            }
            Node::Single(id) => Ok(single(file, *id, q).then_some(Hit {
                file,
                id: *id,
                fitness: 0.0,
            })),
            Node::Matching(m) => m.select(file, q),
            Node::DecisionTree(f) => f.select(file, q),
            Node::Placeholder(p) => {
                let child = p.child(q.trace.as_deref_mut())?;
                child.root.select(child, q)
            }
        }
    }
}

/// [`single`] for a table walk without a trace: a predicate compiled to
/// leaf ids is evaluated through the walk's leaf memo.
fn single_fast(file: &super::File, id: SolutionId, q: &Query<'_>, leaf_state: &mut [u8]) -> bool {
    let s = &file.solutions[id as usize];
    if !s.hardware_predicate.eval(q.hardware) {
        return false;
    }
    match &s.problem_predicate.leaf_ids {
        Some(ids) => ids.iter().all(|&l| {
            let l = l as usize;
            match leaf_state[l] {
                PASSES => true,
                FAILS => false,
                _ => {
                    let pass = file.leaves[l].eval(q.problem);
                    leaf_state[l] = if pass { PASSES } else { FAILS };
                    pass
                }
            }
        }),
        None => s.problem_predicate.eval(q.problem),
    }
}

/// A solution's own predicates: hardware first, then problem.
fn single(file: &super::File, id: SolutionId, q: &mut Query<'_>) -> bool {
    let s = &file.solutions[id as usize];
    match q.trace.as_deref_mut() {
        Some(t) => {
            header(t, &format!("Solution {} ({})", s.index, s.name));
            let pass = s.hardware_predicate.trace(q.hardware, t)
                && s.problem_predicate.trace(q.problem, t);
            footer(t, pass);
            pass
        }
        None => s.hardware_predicate.eval(q.hardware) && s.problem_predicate.eval(q.problem),
    }
}

// A search keeps, per group of the table's solutions, what it knows for
// the current query: not yet asked, passes, fails (`kd::UNKNOWN`, `PASSES`,
// `FAILS`), and per predicate leaf of the file the same. A search meets the
// same solutions again and again (rocBLAS's tables hold up to 21 725
// entries for at most 1 631 kernels) and their predicates cannot change
// within a query, so each is evaluated once; entries of a failing group are
// then passed over without computing their distance. The plain walk still
// runs the early-exit test at every entry, as in Tensile, so it stops where
// Tensile's stops.
thread_local! {
    /// The tree search's entries at the least distance (reused).
    static AT: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Spare state buffers (a walk may nest through a Matching entry's
    /// sub-library into another walk).
    static STATES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn take_state(len: usize) -> Vec<u8> {
    let mut v = STATES.with(|s| s.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.resize(len, UNKNOWN);
    v
}

fn give_state(v: Vec<u8>) {
    STATES.with(|s| s.borrow_mut().push(v));
}

impl Matching {
    fn transform<'c>(
        &'c self,
        file: &'c super::File,
        i: usize,
        q: &mut Query<'_>,
        state: &mut [u8],
    ) -> Result<Option<Hit<'c>>> {
        match self.targets[i] {
            Target::Solution(id) => {
                let local = self.local[i] as usize;
                // A trace shows every evaluation; otherwise remember them.
                let pass = match state[local] {
                    PASSES if q.trace.is_none() => true,
                    FAILS if q.trace.is_none() => false,
                    _ => {
                        let pass = single(file, id, q);
                        state[local] = if pass { PASSES } else { FAILS };
                        pass
                    }
                };
                Ok(pass.then_some(Hit {
                    file,
                    id,
                    fitness: 0.0,
                }))
            }
            Target::Node(n) => self.values[n as usize].select(file, q),
        }
    }
    fn select<'c>(&'c self, file: &'c super::File, q: &mut Query<'_>) -> Result<Option<Hit<'c>>> {
        let mut buf = [0i64; MAX_ARITY];
        let key = &mut buf[..self.arity()];
        for (slot, p) in key.iter_mut().zip(self.properties.iter()) {
            match p.value(q.problem) {
                Some(v) => *slot = v as i64,
                None => return Ok(None),
            }
        }
        let key = &*key;
        if let Some(t) = q.trace.as_deref_mut() {
            t.raw(&format!("Matching ({}): key {key:?}", self.distance.name()));
        }
        if self.len() == 0 {
            return Ok(None);
        }
        let mut state = take_state(self.solutions.len() + file.leaves.len());
        let result = self.search(file, q, key, &mut state);
        give_state(state);
        result
    }

    fn search<'c>(
        &'c self,
        file: &'c super::File,
        q: &mut Query<'_>,
        key: &[i64],
        state: &mut [u8],
    ) -> Result<Option<Hit<'c>>> {
        if self.distance == Distance::Equality {
            let start = self.lower_bound(key);
            if start < self.len() && self.key(start) == key {
                return Ok(self
                    .transform(file, start, q, state)?
                    .map(|h| Hit { fitness: 0.0, ..h }));
            }
            return Ok(None);
        }
        if q.trace.is_none()
            && let Some(kd) = self.kd.as_ref().filter(|kd| kd.accepts(key))
        {
            let (groups, leaf_state) = state.split_at_mut(self.solutions.len());
            let mut j = Judge {
                table: self,
                file,
                q: &*q,
                leaf_state,
                pass: [0; MASK_WORDS],
                fail: [0; MASK_WORDS],
            };
            let mut judge = |l: usize| j.judge(l);
            return Ok(AT.with(|at| {
                let at = &mut at.borrow_mut();
                let euclidean = self.distance == Distance::Euclidean;
                let dstar = kd.nearest(key, euclidean, groups, &mut judge, at)?;
                self.fold(file, key, dstar, at)
            }));
        }
        let start = self.lower_bound(key);
        let mut best = Best {
            hit: None,
            distance: f64::MAX,
            speed: 0.0,
        };
        for i in start..self.len() {
            if !self.visit(file, q, key, i, &mut best, state)? {
                break;
            }
        }
        for i in (0..start).rev() {
            if !self.visit(file, q, key, i, &mut best, state)? {
                break;
            }
        }
        Ok(best.hit.map(|h| Hit {
            fitness: best.distance,
            ..h
        }))
    }

    /// What Tensile's walk returns, given the least distance D* among
    /// passing entries and all passing entries at D* (sorted positions).
    ///
    /// Why: the walk can only stop at an entry whose first-coordinate term
    /// alone reaches the best distance so far, and that term never exceeds
    /// an entry's whole distance, so no walk stops before the first entry
    /// (in visiting order: rightward from the lower bound, then leftward)
    /// at D*. After it, a later entry at D* replaces it only with a
    /// strictly higher speed, and only if the walk still reaches it: if
    /// its first-coordinate term is below D* (or its key is the query).
    /// An entry is right of the lower bound exactly when its key is not
    /// less than the query, so the order needs no search for the bound.
    fn fold<'c>(
        &'c self,
        file: &'c super::File,
        key: &[i64],
        dstar: f64,
        at: &mut [u32],
    ) -> Option<Hit<'c>> {
        let n = self.len();
        at.sort_unstable_by_key(|&i| {
            let i = i as usize;
            if self.key(i) >= key { i } else { 2 * n - i }
        });
        let mut best: Option<(SolutionId, f64)> = None;
        for (rank, &i) in at.iter().enumerate() {
            let (i, k) = (i as usize, self.key(i as usize));
            let first = key[0].wrapping_sub(k[0]) as f64;
            let first = match self.distance {
                Distance::Euclidean => first * first,
                _ => first.abs(),
            };
            let reachable = rank == 0 || k == key || first < dstar;
            if reachable
                && best.is_none_or(|(_, speed)| self.speeds[i] > speed)
                && let Target::Solution(id) = self.targets[i]
            {
                best = Some((id, self.speeds[i]));
            }
        }
        best.map(|(id, _)| Hit {
            file,
            id,
            fitness: dstar,
        })
    }

    /// One step of the walk; false when the walk should stop.
    fn visit<'c>(
        &'c self,
        file: &'c super::File,
        q: &mut Query<'_>,
        key: &[i64],
        i: usize,
        best: &mut Best<'c>,
        state: &mut [u8],
    ) -> Result<bool> {
        let k = self.key(i);
        if best.hit.is_some() && !self.distance.improvement_possible(key, k, best.distance) {
            return Ok(false);
        }
        if matches!(self.targets[i], Target::Solution(_))
            && state[self.local[i] as usize] == FAILS
            && q.trace.is_none()
        {
            return Ok(true);
        }
        let d = self.distance.distance(key, k);
        let speed = self.speeds[i];
        if (d < best.distance || (d == best.distance && speed > best.speed))
            && let Some(hit) = self.transform(file, i, q, state)?
        {
            *best = Best {
                hit: Some(hit),
                distance: d,
                speed,
            };
        }
        Ok(true)
    }
}

struct Best<'c> {
    hit: Option<Hit<'c>>,
    distance: f64,
    speed: f64,
}

impl Forest {
    fn select<'c>(&'c self, file: &'c super::File, q: &mut Query<'_>) -> Result<Option<Hit<'c>>> {
        let mut key = Vec::with_capacity(self.features.len());
        for f in self.features.iter() {
            match f.value(q.problem) {
                Some(v) => key.push(v),
                None => return Ok(None),
            }
        }
        for (i, tree) in self.trees.iter().enumerate() {
            if tree.predict(&key) {
                if let Some(t) = q.trace.as_deref_mut() {
                    t.raw(&format!("DecisionTree: tree {i} predicts true"));
                }
                return tree.value.select(file, q);
            }
        }
        Ok(None)
    }
}

// ---------------------------------------------------------------------------
// Decoding and encoding
// ---------------------------------------------------------------------------

/// What decoding a library tree needs besides the reader.
pub(crate) struct Ctx<'a> {
    /// Solution `index` → position in the file's list.
    pub solutions: &'a HashMap<i64, SolutionId, super::FxBuild>,
    /// The solutions themselves (read before the library).
    pub list: &'a [super::Solution],
    pub origin: &'a Arc<Origin>,
    /// When the library is read before (or beside) the solutions: the
    /// indices met so far; nodes hold positions in this list until
    /// [`Node::link`] replaces them.
    pub raw: Option<&'a std::cell::RefCell<Vec<i64>>>,
}

fn solution_ref(d: &Decoder<'_>, cx: &Ctx<'_>, index: i64) -> Result<SolutionId> {
    if let Some(raw) = cx.raw {
        let mut raw = raw.borrow_mut();
        raw.push(index);
        return u32::try_from(raw.len() - 1)
            .map_err(|_| d.invalid("more than 2^32 solution references"));
    }
    cx.solutions
        .get(&index)
        .copied()
        .ok_or_else(|| CatalogError::MissingSolution { at: d.at(), index })
}

fn rows<P>(
    d: &mut Decoder<'_>,
    cx: &Ctx<'_>,
    len: usize,
    mut decode_pred: impl FnMut(&mut Decoder<'_>) -> Result<P>,
) -> Result<Vec<(P, Node)>> {
    field(d, len, "rows", |d| {
        d.array("rows", |d| {
            let m = d.map_len()?;
            let (mut pred, mut lib) = (None, None);
            fields(d, m, |d, k| match k {
                "predicate" => {
                    d.push_key("predicate");
                    pred = Some(decode_pred(d)?);
                    d.pop();
                    Ok(true)
                }
                "library" => {
                    d.push_key("library");
                    lib = Some(Node::decode(d, cx)?);
                    d.pop();
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            let pred = pred.ok_or_else(|| d.missing("predicate"))?;
            let lib = lib.ok_or_else(|| d.missing("library"))?;
            Ok((pred, lib))
        })
    })
}

fn property(d: &mut Decoder<'_>) -> Result<Property> {
    let t = d.typed()?;
    let mut index = None;
    fields(d, t.len, |d, k| {
        if k != "index" {
            return Ok(false);
        }
        index = Some(d.u64()?);
        Ok(true)
    })?;
    let name = t.ty.clone();
    if Property::from_name(&name, 0).is_none() {
        return Err(d.unknown("property", &name));
    }
    let index = index.ok_or_else(|| d.missing("index"))?;
    Property::from_name(&name, index).ok_or_else(|| d.unknown("property", &name))
}

fn feature(d: &mut Decoder<'_>) -> Result<Feature> {
    let t = d.typed()?;
    let ty = t.ty.clone();
    let mut index = None;
    let mut scalar = None;
    let mut parts: [Option<f32>; 4] = [None; 4];
    let is_map = matches!(ty.as_str(), "CUGranularity" | "WavesPerSIMD");
    fields(d, t.len, |d, k| match k {
        "index" => {
            index = Some(d.u64()?);
            Ok(true)
        }
        "value" if is_map => {
            let n = d.map_len()?;
            fields(d, n, |d, k| {
                let slot = match k {
                    "mt0" => 0,
                    "mt1" => 1,
                    "cus" => 2,
                    "ws" => 3,
                    _ => return Ok(false),
                };
                parts[slot] = Some(d.f64()? as f32);
                Ok(true)
            })?;
            Ok(true)
        }
        "value" => {
            scalar = Some(d.f64()? as f32);
            Ok(true)
        }
        _ => Ok(false),
    })?;
    let part = |i: usize, name: &'static str| parts[i].ok_or_else(|| d.missing(name));
    let f = match ty.as_str() {
        "Tile0Granularity" => Feature::Tile0Granularity(scalar.ok_or_else(|| d.missing("value"))?),
        "Tile1Granularity" => Feature::Tile1Granularity(scalar.ok_or_else(|| d.missing("value"))?),
        "CUGranularity" => Feature::CuGranularity {
            mt0: part(0, "mt0")?,
            mt1: part(1, "mt1")?,
            cus: part(2, "cus")?,
        },
        "WavesPerSIMD" => Feature::WavesPerSimd {
            mt0: part(0, "mt0")?,
            mt1: part(1, "mt1")?,
            cus: part(2, "cus")?,
            ws: part(3, "ws")?,
        },
        "FreeSizeA" | "FreeSizeB" | "BoundSize" | "BatchSize" => {
            let i = index.ok_or_else(|| d.missing("index"))?;
            Feature::Size(Property::from_name(&ty, i).ok_or_else(|| d.unknown("feature", &ty))?)
        }
        other => return Err(d.unknown("decision-tree feature", other)),
    };
    Ok(f)
}

impl Node {
    /// Replaces the provisional solution ids of a tree read with
    /// [`Ctx::raw`] by real ones, and finishes its tables.
    pub(crate) fn link(
        &mut self,
        resolve: &dyn Fn(SolutionId) -> Result<SolutionId>,
        list: &[super::Solution],
    ) -> Result<()> {
        match self {
            Node::Hardware(rows) => rows
                .iter_mut()
                .try_for_each(|r| r.library.link(resolve, list)),
            Node::Problem(rows) => rows
                .iter_mut()
                .try_for_each(|r| r.library.link(resolve, list)),
            Node::ProblemMap(m) => m
                .entries
                .iter_mut()
                .try_for_each(|(_, n)| n.link(resolve, list)),
            Node::Single(id) => {
                *id = resolve(*id)?;
                Ok(())
            }
            Node::Matching(m) => {
                for t in m.targets.iter_mut() {
                    if let Target::Solution(id) = t {
                        *id = resolve(*id)?;
                    }
                }
                m.values
                    .iter_mut()
                    .try_for_each(|n| n.link(resolve, list))?;
                m.group(list);
                Ok(())
            }
            Node::DecisionTree(f) => f
                .trees
                .iter_mut()
                .try_for_each(|t| t.value.link(resolve, list)),
            Node::Placeholder(_) => Ok(()),
        }
    }
}

/// Writes a Hardware or Problem node: `{type, rows: [{predicate, library}]}`.
fn encode_rows<'a, P: 'a>(
    w: &mut Writer,
    ty: &str,
    rows: impl ExactSizeIterator<Item = (&'a P, &'a Node)>,
    encode_predicate: impl Fn(&P, &mut Writer),
    index_of: &dyn Fn(SolutionId) -> i64,
) {
    w.map(2);
    w.str("type");
    w.str(ty);
    w.str("rows");
    w.array(rows.len());
    for (predicate, library) in rows {
        w.map(2);
        w.str("predicate");
        encode_predicate(predicate, w);
        w.str("library");
        library.encode(w, index_of);
    }
}

impl Node {
    pub(crate) fn decode(d: &mut Decoder<'_>, cx: &Ctx<'_>) -> Result<Node> {
        d.nested(|d| {
            let t = d.typed()?;
            let node = match t.ty.as_str() {
                "Hardware" => {
                    let rows = rows(d, cx, t.len, Predicate::decode)?;
                    Node::Hardware(
                        rows.into_iter()
                            .map(
                                |(predicate, library): (HardwarePredicate, Node)| HardwareRow {
                                    chips: predicate.chip_ids().into_iter().collect(),
                                    predicate,
                                    library,
                                },
                            )
                            .collect(),
                    )
                }
                "Problem" => {
                    let rows = rows(d, cx, t.len, Predicate::decode)?;
                    Node::Problem(
                        rows.into_iter()
                            .map(|(predicate, library)| ProblemRow {
                                class_only: predicate.class_only(),
                                predicate,
                                library,
                            })
                            .collect(),
                    )
                }
                "ProblemMap" => Node::ProblemMap(Box::new(Self::problem_map(d, cx, t.len)?)),
                "Single" => {
                    let index = field(d, t.len, "index", Decoder::i64)?;
                    Node::Single(solution_ref(d, cx, index)?)
                }
                "Matching" => Node::Matching(Box::new(Self::matching(d, cx, t.len)?)),
                "DecisionTree" => Node::DecisionTree(Box::new(Self::forest(d, cx, t.len)?)),
                "Placeholder" => {
                    let prefix = field(d, t.len, "value", Decoder::boxed_str)?;
                    if prefix.is_empty()
                        || prefix.contains('/')
                        || prefix.contains('\\')
                        || &*prefix == ".."
                    {
                        return Err(
                            d.invalid(format!("placeholder {prefix:?} is not a plain file name"))
                        );
                    }
                    Node::Placeholder(Box::new(Placeholder {
                        prefix,
                        origin: cx.origin.clone(),
                        child: OnceLock::new(),
                    }))
                }
                other => return Err(d.unknown("library node", other)),
            };
            Ok(node)
        })
    }

    fn problem_map(d: &mut Decoder<'_>, cx: &Ctx<'_>, len: usize) -> Result<ProblemMap> {
        let mut map = None;
        let mut property_ok = false;
        fields(d, len, |d, k| match k {
            "property" => {
                d.push_key("property");
                let t = d.typed()?;
                if t.ty != "OperationIdentifier" {
                    return Err(d.unknown("problem-map property", &t.ty));
                }
                fields(d, t.len, |_, _| Ok(false))?;
                d.pop();
                property_ok = true;
                Ok(true)
            }
            "map" => {
                d.push_key("map");
                let n = d.map_len()?;
                let mut m = ProblemMap {
                    entries: Vec::with_capacity(d.r.reservation(n).min(4096)),
                    index: HashMap::with_capacity_and_hasher(
                        d.r.reservation(n).min(4096),
                        Default::default(),
                    ),
                };
                for _ in 0..n {
                    let key: Box<str> = d.key_string()?.into();
                    d.push_name(&key);
                    let node = Node::decode(d, cx)?;
                    d.pop();
                    if m.index.insert(key.clone(), m.entries.len()).is_some() {
                        return Err(d.invalid(format!("operation {key:?} appears twice")));
                    }
                    m.entries.push((key, node));
                }
                d.pop();
                map = Some(m);
                Ok(true)
            }
            _ => Ok(false),
        })?;
        if !property_ok {
            return Err(d.missing("property"));
        }
        map.ok_or_else(|| d.missing("map"))
    }

    fn matching(d: &mut Decoder<'_>, cx: &Ctx<'_>, len: usize) -> Result<Matching> {
        let mut properties: Option<Vec<Property>> = None;
        let mut distance = None;
        // The table may precede `properties`; entries are kept raw until
        // both are known.
        let mut keys: Vec<i64> = Vec::new();
        let mut arities: Vec<u8> = Vec::new();
        let mut speeds: Vec<f64> = Vec::new();
        let mut targets: Vec<Target> = Vec::new();
        let mut values: Vec<Node> = Vec::new();
        let mut table_seen = false;
        fields(d, len, |d, k| match k {
            "properties" => {
                properties = Some(d.array("properties", property)?);
                Ok(true)
            }
            "distance" => {
                let name = d.string()?;
                distance = Some(match name.as_str() {
                    "Euclidean" => Distance::Euclidean,
                    "Manhattan" => Distance::Manhattan,
                    "Ratio" => Distance::Ratio,
                    "JSD" => Distance::Jsd,
                    "Equality" => Distance::Equality,
                    "Random" | "GridBased" => {
                        return Err(d.invalid(format!(
                            "distance {name} is not supported (Random draws rand(); GridBased is not implemented)"
                        )));
                    }
                    other => return Err(d.unknown("distance", other)),
                });
                Ok(true)
            }
            "table" => {
                table_seen = true;
                d.push_key("table");
                let n = d.array_len()?;
                let cap = d.r.reservation(n);
                speeds.reserve(cap);
                keys.reserve(cap * 4);
                targets.reserve(cap);
                arities.reserve(cap);
                for i in 0..n {
                    d.push_index(i);
                    let m = d.map_len()?;
                    let mut arity = None;
                    let mut speed = 0.0;
                    let mut index = -1i64;
                    let mut value = None;
                    // Tensile writes every entry as {key, index, speed}: read
                    // those bytes directly, and anything else the long way.
                    let mut rest = m;
                    if m == 3 && d.r.literal(b"\xa3key") {
                        let a = d.array_len()?;
                        if a == 0 || a > MAX_ARITY {
                            return Err(d.invalid(format!("a key of {a} values (1 to 10 allowed)")));
                        }
                        for _ in 0..a {
                            keys.push(d.i64()?);
                        }
                        arity = Some(a as u8);
                        rest = 2;
                        if d.r.literal(b"\xa5index") {
                            index = d.i64()?;
                            rest = 1;
                            if d.r.literal(b"\xa5speed") {
                                speed = d.f64()?;
                                rest = 0;
                            }
                        }
                    }
                    fields(d, rest, |d, k| match k {
                        "key" => {
                            let a = d.array_len()?;
                            if a == 0 || a > MAX_ARITY {
                                return Err(
                                    d.invalid(format!("a key of {a} values (1 to 10 allowed)"))
                                );
                            }
                            for _ in 0..a {
                                keys.push(d.i64()?);
                            }
                            arity = Some(a as u8);
                            Ok(true)
                        }
                        "speed" => {
                            speed = d.f64()?;
                            Ok(true)
                        }
                        "index" => {
                            index = d.i64()?;
                            Ok(true)
                        }
                        "value" => {
                            value = Some(Node::decode(d, cx)?);
                            Ok(true)
                        }
                        _ => Ok(false),
                    })?;
                    arities.push(arity.ok_or_else(|| d.missing("key"))?);
                    speeds.push(speed);
                    targets.push(if index != -1 {
                        Target::Solution(solution_ref(d, cx, index)?)
                    } else {
                        let node = value.ok_or_else(|| d.missing("value"))?;
                        values.push(node);
                        Target::Node(values.len() as u32 - 1)
                    });
                    d.pop();
                }
                d.pop();
                Ok(true)
            }
            _ => Ok(false),
        })?;
        let properties = properties.ok_or_else(|| d.missing("properties"))?;
        let distance = distance.ok_or_else(|| d.missing("distance"))?;
        if !table_seen {
            return Err(d.missing("table"));
        }
        let arity = properties.len();
        if arity == 0 {
            return Err(d.invalid("a matching table needs at least one property"));
        }
        if let Some(i) = arities.iter().position(|&a| a as usize != arity) {
            return Err(d.invalid(format!(
                "table entry {i} has a key of {} values for {arity} properties",
                arities[i]
            )));
        }
        // Sort as Tensile's loader does, with libstdc++'s algorithm so that
        // ties end up where Tensile's end up.
        let n = speeds.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let key_of = |i: u32| &keys[i as usize * arity..(i as usize + 1) * arity];
        std_sort_by(&mut order, |&a, &b| {
            let (ka, kb) = (key_of(a), key_of(b));
            ka < kb || (ka == kb && speeds[a as usize] > speeds[b as usize])
        });
        let mut sorted_keys = Vec::with_capacity(keys.len());
        for &i in &order {
            sorted_keys.extend_from_slice(key_of(i));
        }
        let targets: Box<[Target]> = order.iter().map(|&i| targets[i as usize]).collect();
        let kd = match distance {
            Distance::Euclidean | Distance::Manhattan if values.is_empty() => {
                KdIndex::build(&sorted_keys, arity)
            }
            _ => None,
        };
        let mut m = Matching {
            kd,
            conditions: Conditions::default(),
            properties: properties.into_boxed_slice(),
            distance,
            keys: sorted_keys.into_boxed_slice(),
            speeds: order.iter().map(|&i| speeds[i as usize]).collect(),
            targets,
            file_pos: order.into_boxed_slice(),
            values,
            solutions: Box::new([]),
            local: Box::new([]),
        };
        if cx.raw.is_none() {
            m.group(cx.list);
        }
        Ok(m)
    }

    fn forest(d: &mut Decoder<'_>, cx: &Ctx<'_>, len: usize) -> Result<Forest> {
        let mut features = None;
        let mut trees = None;
        fields(d, len, |d, k| match k {
            "features" => {
                features = Some(d.array("features", feature)?);
                Ok(true)
            }
            "trees" => {
                d.push_key("trees");
                let n = d.array_len()?;
                let mut v = Vec::with_capacity(d.r.reservation(n).min(4096));
                for i in 0..n {
                    d.push_index(i);
                    let m = d.map_len()?;
                    let (mut nodes, mut value) = (None, None);
                    fields(d, m, |d, k| match k {
                        "tree" => {
                            let count = d.array_len()?;
                            let mut t = Vec::with_capacity(d.r.reservation(count));
                            for _ in 0..count {
                                let fm = d.map_len()?;
                                let mut node = [None; 4];
                                fields(d, fm, |d, k| {
                                    let slot = match k {
                                        "featureIdx" => 0,
                                        "threshold" => 1,
                                        "nextIdxLTE" => 2,
                                        "nextIdxGT" => 3,
                                        _ => return Ok(false),
                                    };
                                    node[slot] = Some(d.f64()?);
                                    Ok(true)
                                })?;
                                let names = ["featureIdx", "threshold", "nextIdxLTE", "nextIdxGT"];
                                let mut vals = [0.0; 4];
                                for s in 0..4 {
                                    vals[s] = node[s].ok_or_else(|| d.missing(names[s]))?;
                                }
                                t.push((vals[0], vals[1] as f32, vals[2], vals[3]));
                            }
                            nodes = Some(t);
                            Ok(true)
                        }
                        "value" => {
                            value = Some(Node::decode(d, cx)?);
                            Ok(true)
                        }
                        _ => Ok(false),
                    })?;
                    let raw = nodes.ok_or_else(|| d.missing("tree"))?;
                    let value = value.ok_or_else(|| d.missing("value"))?;
                    v.push((raw, value));
                    d.pop();
                }
                d.pop();
                trees = Some(v);
                Ok(true)
            }
            _ => Ok(false),
        })?;
        let features = features.ok_or_else(|| d.missing("features"))?;
        let raw_trees = trees.ok_or_else(|| d.missing("trees"))?;
        let mut out = Vec::with_capacity(raw_trees.len());
        for (ti, (raw, value)) in raw_trees.into_iter().enumerate() {
            let count = raw.len();
            let link = |x: f64| -> Option<i32> {
                let i = x as i64;
                (x == i as f64 && (i == -1 || i == -2 || (0..count as i64).contains(&i)))
                    .then_some(i as i32)
            };
            let mut nodes = Vec::with_capacity(count);
            for (ni, (f, threshold, lte, gt)) in raw.into_iter().enumerate() {
                let feature = f as i64;
                if f != feature as f64 || feature < 0 || feature as usize >= features.len() {
                    return Err(d.invalid(format!(
                        "tree {ti} node {ni}: feature index {f} out of range"
                    )));
                }
                let (Some(next_lte), Some(next_gt)) = (link(lte), link(gt)) else {
                    return Err(d.invalid(format!(
                        "tree {ti} node {ni}: a link leads outside the tree"
                    )));
                };
                nodes.push(TreeNode {
                    feature: feature as u32,
                    threshold,
                    next_lte,
                    next_gt,
                });
            }
            out.push(Tree {
                nodes: nodes.into_boxed_slice(),
                value,
            });
        }
        Ok(Forest {
            features: features.into_boxed_slice(),
            trees: out.into_boxed_slice(),
        })
    }

    /// Writes the node; `index_of` maps a solution position to its index.
    pub fn encode(&self, w: &mut Writer, index_of: &dyn Fn(SolutionId) -> i64) {
        let head = |w: &mut Writer, n: usize, ty: &str| {
            w.map(n);
            w.str("type");
            w.str(ty);
        };
        match self {
            Node::Hardware(rows) => {
                let rows = rows.iter().map(|r| (&r.predicate, &r.library));
                encode_rows(w, "Hardware", rows, |p, w| p.encode(w), index_of);
            }
            Node::Problem(rows) => {
                let rows = rows.iter().map(|r| (&r.predicate, &r.library));
                encode_rows(w, "Problem", rows, |p, w| p.encode(w), index_of);
            }
            Node::ProblemMap(m) => {
                head(w, 3, "ProblemMap");
                w.str("property");
                w.map(1);
                w.str("type");
                w.str("OperationIdentifier");
                w.str("map");
                w.map(m.entries.len());
                for (k, node) in &m.entries {
                    w.str(k);
                    node.encode(w, index_of);
                }
            }
            Node::Single(id) => {
                head(w, 2, "Single");
                w.str("index");
                w.i64(index_of(*id));
            }
            Node::Matching(m) => {
                head(w, 4, "Matching");
                w.str("properties");
                w.array(m.properties.len());
                for p in m.properties.iter() {
                    w.map(2);
                    w.str("type");
                    w.str(p.name());
                    w.str("index");
                    w.u64(p.index());
                }
                w.str("table");
                w.array(m.len());
                // Back in file order, so that a re-sort reproduces ours.
                let mut by_file: Vec<usize> = (0..m.len()).collect();
                by_file.sort_unstable_by_key(|&i| m.file_pos[i]);
                for i in by_file {
                    w.map(3);
                    w.str("key");
                    w.array(m.arity());
                    m.key(i).iter().for_each(|k| w.i64(*k));
                    match m.targets[i] {
                        Target::Solution(id) => {
                            w.str("index");
                            w.i64(index_of(id));
                        }
                        Target::Node(n) => {
                            w.str("value");
                            m.values[n as usize].encode(w, index_of);
                        }
                    }
                    w.str("speed");
                    w.f64(m.speeds[i]);
                }
                w.str("distance");
                w.str(m.distance.name());
            }
            Node::DecisionTree(f) => {
                head(w, 3, "DecisionTree");
                w.str("features");
                w.array(f.features.len());
                for feat in f.features.iter() {
                    match *feat {
                        Feature::Size(p) => {
                            w.map(2);
                            w.str("type");
                            w.str(p.name());
                            w.str("index");
                            w.u64(p.index());
                        }
                        Feature::Tile0Granularity(v) | Feature::Tile1Granularity(v) => {
                            w.map(2);
                            w.str("type");
                            w.str(if matches!(feat, Feature::Tile0Granularity(_)) {
                                "Tile0Granularity"
                            } else {
                                "Tile1Granularity"
                            });
                            w.str("value");
                            w.f64(v as f64);
                        }
                        Feature::CuGranularity { mt0, mt1, cus } => {
                            w.map(2);
                            w.str("type");
                            w.str("CUGranularity");
                            w.str("value");
                            w.map(3);
                            for (k, v) in [("mt0", mt0), ("mt1", mt1), ("cus", cus)] {
                                w.str(k);
                                w.f64(v as f64);
                            }
                        }
                        Feature::WavesPerSimd { mt0, mt1, cus, ws } => {
                            w.map(2);
                            w.str("type");
                            w.str("WavesPerSIMD");
                            w.str("value");
                            w.map(4);
                            for (k, v) in [("mt0", mt0), ("mt1", mt1), ("cus", cus), ("ws", ws)] {
                                w.str(k);
                                w.f64(v as f64);
                            }
                        }
                    }
                }
                w.str("trees");
                w.array(f.trees.len());
                for t in f.trees.iter() {
                    w.map(2);
                    w.str("tree");
                    w.array(t.nodes.len());
                    for n in t.nodes.iter() {
                        w.map(4);
                        w.str("featureIdx");
                        w.u64(n.feature as u64);
                        w.str("threshold");
                        w.f64(n.threshold as f64);
                        w.str("nextIdxLTE");
                        w.i64(n.next_lte as i64);
                        w.str("nextIdxGT");
                        w.i64(n.next_gt as i64);
                    }
                    w.str("value");
                    t.value.encode(w, index_of);
                }
            }
            Node::Placeholder(p) => {
                head(w, 2, "Placeholder");
                w.str("value");
                w.str(&p.prefix);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgpack::Value;
    use crate::problem::{DataType, Transpose};
    use crate::{Catalog, Hardware};

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    fn map(entries: Vec<(&str, Value)>) -> Value {
        Value::Map(entries.into_iter().map(|(k, v)| (s(k), v)).collect())
    }

    /// A solution whose predicate passes when M is a multiple of `m` and
    /// K is at least `min_k`: enough variety for walks to skip, fall back
    /// and tie.
    fn solution(index: u64, m: u64, min_k: u64) -> Value {
        let leaf = |ty: &str, extra: Vec<(&str, Value)>| {
            let mut e = vec![("type", s(ty))];
            e.extend(extra);
            map(e)
        };
        let mut sm: Vec<(&str, Value)> = [
            "staggerU",
            "depthU",
            "globalSplitU",
            "staggerStrideShift",
            "workGroupMapping",
            "persistentKernel",
            "globalAccumulation",
            "workspaceSizePerElemC",
        ]
        .into_iter()
        .map(|k| (k, Value::UInt(1)))
        .collect();
        for k in ["workGroup", "threadTile", "macroTile"] {
            sm.push((k, Value::Array(vec![Value::UInt(1); 3])));
        }
        sm.push(("persistentKernelAlongBatch", Value::Bool(false)));
        sm.push(("sourceKernel", Value::Bool(false)));
        map(vec![
            ("name", s(&format!("k{index}"))),
            ("index", Value::UInt(index)),
            ("debugKernel", Value::Bool(false)),
            ("hardwarePredicate", leaf("TruePred", vec![])),
            (
                "problemPredicate",
                leaf(
                    "And",
                    vec![(
                        "value",
                        Value::Array(vec![
                            leaf(
                                "SizeMultiple",
                                vec![("index", Value::UInt(0)), ("value", Value::UInt(m))],
                            ),
                            leaf("GlobalSplitUCheckMinK", vec![("value", Value::UInt(min_k))]),
                        ]),
                    )],
                ),
            ),
            (
                "problemType",
                map(vec![
                    (
                        "operationIdentifier",
                        s("Contraction_l_Ailk_Bljk_Cijk_Dijk"),
                    ),
                    ("aType", s("Float")),
                    ("bType", s("Float")),
                    ("cType", s("Float")),
                    ("dType", s("Float")),
                    ("useBeta", Value::Bool(true)),
                    ("highPrecisionAccumulate", Value::Bool(false)),
                ]),
            ),
            ("sizeMapping", map(sm)),
        ])
    }

    /// A catalog whose root is one Matching table over (M, N, K).
    fn matching_catalog(sols: Vec<Value>, table: Vec<Value>, distance: &str) -> Catalog {
        let prop = |t: &str| map(vec![("type", s(t)), ("index", Value::UInt(0))]);
        let properties = Value::Array(vec![
            prop("FreeSizeA"),
            prop("FreeSizeB"),
            prop("BoundSize"),
        ]);
        let tree = map(vec![
            ("solutions", Value::Array(sols)),
            (
                "library",
                map(vec![
                    ("type", s("Matching")),
                    ("properties", properties),
                    ("table", Value::Array(table)),
                    ("distance", s(distance)),
                ]),
            ),
        ]);
        let mut w = crate::msgpack::Writer::new();
        tree.write(&mut w);
        Catalog::from_msgpack(&w.out).unwrap()
    }

    /// Tensile's search as its host library writes it: no tree, no memo,
    /// each candidate's predicates evaluated when it could win.
    fn reference(
        m: &Matching,
        file: &crate::File,
        q: &Problem,
        hw: &Hardware,
    ) -> Option<(SolutionId, f64)> {
        let key: Vec<i64> = m
            .properties
            .iter()
            .map(|p| p.value(q).unwrap_or(0) as i64)
            .collect();
        let start = m.lower_bound(&key);
        let (mut best, mut best_d, mut best_speed) = (None, f64::MAX, 0.0);
        let mut visit = |i: usize, best: &mut Option<SolutionId>, best_d: &mut f64| -> bool {
            let k = m.key(i);
            if best.is_some() && !m.distance.improvement_possible(&key, k, *best_d) {
                return false;
            }
            let d = m.distance.distance(&key, k);
            if (d < *best_d || (d == *best_d && m.speeds[i] > best_speed))
                && let Target::Solution(id) = m.targets[i]
            {
                let sol = &file.solutions[id as usize];
                if sol.hardware_predicate.eval(hw) && sol.problem_predicate.eval(q) {
                    (*best, *best_d, best_speed) = (Some(id), d, m.speeds[i]);
                }
            }
            true
        };
        for i in start..m.len() {
            if !visit(i, &mut best, &mut best_d) {
                break;
            }
        }
        for i in (0..start).rev() {
            if !visit(i, &mut best, &mut best_d) {
                break;
            }
        }
        best.map(|b| (b, best_d))
    }

    /// The tree search answers exactly what Tensile's plain walk answers,
    /// on random tables full of ties, for both distances it serves; Ratio
    /// takes the memoised plain walk. The later rounds have more than 64
    /// solution groups (their summaries share bits), few distinct keys
    /// (each repeated across many leaves of the tree), keys beyond the
    /// tree's limits (the table is walked), and queries beyond them.
    #[test]
    fn searches_agree_with_tensiles_plain_walk() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let hw = Hardware::new("gfx90a", 104, None);
        let grid: &[u64] = &[1, 2, 3, 64, 100, 128, 256, 1000];
        let few: &[u64] = &[100, 300];
        let rounds = [
            ("Euclidean", 40, 1u64, grid),
            ("Manhattan", 40, 1, grid),
            ("Ratio", 40, 1, grid),
            ("Euclidean", 40, 1, grid),
            ("Euclidean", 40, 1, grid),
            ("Euclidean", 200, 1, grid),
            ("Manhattan", 200, 1, grid),
            ("Euclidean", 40, 1, few),
            ("Manhattan", 200, 1, few),
            ("Euclidean", 40, 1 << 25, grid),
        ];
        for (round, &(distance, kernels, scale, grid)) in rounds.iter().enumerate() {
            let mut searched = 0;
            let sols: Vec<Value> = (0..kernels)
                .map(|i| {
                    let (m, min_k) = if kernels > 64 {
                        // Mostly distinct conditions: many groups.
                        (1 + i % 5, (i / 5) * 37)
                    } else {
                        (
                            [1, 2, 3, 4, 7, 9, 11][rng.below(7) as usize],
                            rng.below(6) * 200,
                        )
                    };
                    solution(i, m, min_k)
                })
                .collect();
            let entries = 300 + rng.below(700);
            let table: Vec<Value> = (0..entries)
                .map(|_| {
                    let key = (0..3).map(|c| {
                        let x = grid[rng.below(grid.len() as u64) as usize] * (1 + rng.below(2));
                        Value::UInt(if c == 1 { x * scale } else { x })
                    });
                    map(vec![
                        ("key", Value::Array(key.collect())),
                        ("index", Value::UInt(rng.below(kernels))),
                        (
                            "speed",
                            Value::Float([0.0, 1.0, 2.0][rng.below(3) as usize]),
                        ),
                    ])
                })
                .collect();
            let catalog = matching_catalog(sols, table, distance);
            let Node::Matching(m) = &catalog.file().root else {
                panic!()
            };
            assert_eq!(
                m.kd.is_some(),
                distance != "Ratio" && scale == 1,
                "round {round}: the tree is built exactly for tables within its limits"
            );
            if kernels > 64 {
                assert!(
                    m.solutions.len() > 64,
                    "round {round}: {} groups",
                    m.solutions.len()
                );
            }
            for j in 0..400 {
                let size = |rng: &mut Rng| 1 + rng.below(1200);
                let mut n = size(&mut rng);
                if j % 50 == 49 {
                    n += 1 << 24; // beyond the tree's limit
                }
                let p = Problem::gemm(
                    Transpose::None,
                    Transpose::None,
                    size(&mut rng),
                    n,
                    size(&mut rng),
                    DataType::Float,
                );
                let key = [p.m as i64, n as i64, p.k as i64];
                searched += usize::from(m.kd.as_ref().is_some_and(|kd| kd.accepts(&key)));
                let expected = reference(m, catalog.file(), &p, &hw);
                let got = catalog
                    .select(&p, &hw)
                    .unwrap()
                    .map(|s| (s.solution.index as u32, s.fitness));
                assert_eq!(
                    got, expected,
                    "round {round} ({distance}), {}x{}x{}",
                    p.m, p.n, p.k
                );
            }
            if m.kd.is_some() {
                assert_eq!(searched, 392, "round {round}: queries the tree answered");
            }
        }
    }

    /// Tensile's early exit, reproduced by the tree search: two entries at
    /// the least distance, the later one faster, but the walk stops on
    /// reaching it (its first coordinate alone is at that distance), so
    /// the earlier one wins.
    #[test]
    fn a_long_walk_stops_where_tensiles_does_before_a_faster_equal_entry() {
        let entry = |key: [u64; 3], index: u64, speed: f64| {
            map(vec![
                (
                    "key",
                    Value::Array(key.iter().map(|&k| Value::UInt(k)).collect()),
                ),
                ("index", Value::UInt(index)),
                ("speed", Value::Float(speed)),
            ])
        };
        // Solution 0 fails for M = 100 (not a multiple of 7); 1 and 2 pass.
        let sols = vec![solution(0, 7, 0), solution(1, 1, 0), solution(2, 1, 0)];
        let mut table: Vec<Value> = (0..200).map(|j| entry([100, 20 + j, 10], 0, 9.0)).collect();
        table.push(entry([110, 10, 10], 1, 1.0));
        table.push(entry([90, 10, 10], 2, 5.0));
        let catalog = matching_catalog(sols, table, "Euclidean");
        let Node::Matching(m) = &catalog.file().root else {
            panic!()
        };
        let hw = Hardware::new("gfx90a", 104, None);
        let p = Problem::gemm(
            Transpose::None,
            Transpose::None,
            100,
            10,
            10,
            DataType::Float,
        );
        assert!(m.kd.is_some());
        assert_eq!(reference(m, catalog.file(), &p, &hw), Some((1, 100.0)));
        let got = catalog
            .select(&p, &hw)
            .unwrap()
            .map(|s| (s.solution.index, s.fitness));
        assert_eq!(
            got,
            Some((1, 100.0)),
            "the entry at (110, 10, 10), reached first"
        );
    }
}
