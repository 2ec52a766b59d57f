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
//!   answer from a tree search instead, `box_tree.rs`; `Matching::fold` says
//!   why it is the same answer.)
//! - A DecisionTree returns the value of the first tree that predicts
//!   true, even when that solution's predicates fail (then: no answer).
//! - TensileLite (hipBLASLt 7.x, `host/catalog/TENSILELITE.md`): a solution
//!   also needs its task predicate (`WorkspaceCheck`). A `GridBased` table
//!   (keys M, N, batch, K) is walked cell by cell: the cell at the least
//!   grid M not below the query's (or the largest), in it the least N not
//!   below (or the largest), its first batch run not below; there the
//!   passing entry nearest in K, ties to the later entry; no passing entry
//!   moves the walk to the next cell in table order (a later M again from
//!   its first N not below the query's); on the first pass a batch other
//!   than 1 is folded into the larger of M and N and the walk restarts;
//!   off the table's end, the latest passing entry before the last cell
//!   examined answers. Untraced, the same answer is found from the passing
//!   solution groups without visiting the cells in between.
//!
//! Three rooms: this one is the node model; `select` answers queries on
//! it (the rules above); `codec` reads and writes it as Tensile's
//! MessagePack. Both import the model, and the model imports neither: it
//! names only three leaves of `select` that import nothing of it (the
//! query and hit types with [`SolutionId`], a table's compiled conditions,
//! a GridBased table's index), and the crate takes the codec's context
//! from `codec` itself.

pub(crate) mod codec;
mod select;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::box_tree::BoxTree;
use crate::error::CatalogError;
use crate::hardware::Hardware;
use crate::predicate::{HardwarePredicate, ProblemPredicate};
use crate::problem::Problem;

use select::conditions::Conditions;
use select::grid_index::GridIndex;
pub use select::query::{Hit, Query, SolutionId};

/// A library node (`{type: ..., ...}` in the file), by Tensile's node type.
#[derive(Debug)]
pub enum Node {
    /// `Hardware`: rows of GPU predicates, tried in file order.
    Hardware(Box<[HardwareRow]>),
    /// `Problem`: rows of problem predicates, tried in file order.
    Problem(Box<[ProblemRow]>),
    /// `ProblemMap`: one sub-library per operation identifier.
    ProblemMap(Box<ProblemMap>),
    /// `Single`: one solution, if its own predicates hold.
    Single(SolutionId),
    /// `Matching`: a table of tuned sizes, nearest one wins.
    Matching(Box<Matching>),
    /// `DecisionTree`: the first tree that predicts true gives the answer.
    DecisionTree(Box<Forest>),
    /// `Placeholder`: a child catalog file, read on first use.
    Placeholder(Box<Placeholder>),
}

/// One row of a `Hardware` node.
#[derive(Debug)]
pub struct HardwareRow {
    /// Which GPUs the row is for (processor, CU count, chip IDs).
    pub predicate: HardwarePredicate,
    /// Every chip ID in the predicate: a match is a fallback match when
    /// the set is not empty and lacks the GPU's chip.
    pub chips: Box<[u32]>,
    /// What the row selects with when it matches.
    pub library: Node,
}

impl HardwareRow {
    /// Whether a match of this row on `hw` is only a chip-ID fallback: the
    /// row names chip IDs and `hw`'s (known) chip is not among them.
    pub fn is_fallback_for(&self, hw: &Hardware) -> bool {
        match hw.chip_id {
            Some(id) => !self.chips.is_empty() && !self.chips.contains(&id),
            None => false,
        }
    }
}

/// One row of a `Problem` node.
#[derive(Debug)]
pub struct ProblemRow {
    /// Which problems the row is for (data types, transposes, ...).
    pub predicate: ProblemPredicate,
    /// What the row selects with when it matches.
    pub library: Node,
    /// The predicate reads only what fixes a problem's class (worked out
    /// at load, for [`plan`](super::plan)s).
    pub class_only: bool,
}

/// A `ProblemMap` node keyed by the `OperationIdentifier` property, e.g.
/// `Contraction_l_Alik_Bjlk_Cijk_Dijk`.
#[derive(Debug)]
pub struct ProblemMap {
    /// In file order, for writing.
    pub entries: Vec<(Box<str>, Node)>,
    /// Operation identifier → position in `entries` (each key once).
    pub index: HashMap<Box<str>, usize, crate::FxBuild>,
}

/// A size property: the problem's value becomes one coordinate of a
/// Matching key or a DecisionTree feature.
///
/// Each carries Tensile's `index`; a GEMM has only index 0 of the sizes
/// (a larger one has no value).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Property {
    /// `FreeSizeA`: index 0 is M.
    FreeSizeA(u64),
    /// `FreeSizeB`: index 0 is N.
    FreeSizeB(u64),
    /// `BatchSize`: index 0 is the batch count.
    BatchSize(u64),
    /// `BoundSize`: index 0 is K.
    BoundSize(u64),
    /// `AStride`: A's stride of that index (elements).
    AStride(u64),
    /// `BStride`: B's stride of that index (elements).
    BStride(u64),
    /// `CStride`: C's stride of that index (elements).
    CStride(u64),
    /// `DStride`: D's stride of that index (elements).
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
    /// `Euclidean`: the sum of squared coordinate differences (not its
    /// square root).
    Euclidean,
    /// `Manhattan`: the sum of absolute coordinate differences.
    Manhattan,
    /// `Ratio`: 1 plus the sum of `|ln(q / k)|` (infinite when a
    /// coordinate is 0).
    Ratio,
    /// `JSD`: the Jensen-Shannon divergence of the first three coordinates,
    /// each key normalised to sum 1.
    Jsd,
    /// `Equality`: only an entry with exactly the query's key matches
    /// (distance 0).
    Equality,
    /// TensileLite's `GridBased` (keys M, N, batch, K): `|ΔK|` within the
    /// grid cell a walk over M, then N, then batch finds (`select/grid.rs`,
    /// `Matching::grid_search`; TENSILELITE.md §8.4).
    GridBased,
}

impl Distance {
    fn name(self) -> &'static str {
        match self {
            Distance::Euclidean => "Euclidean",
            Distance::Manhattan => "Manhattan",
            Distance::Ratio => "Ratio",
            Distance::Jsd => "JSD",
            Distance::Equality => "Equality",
            Distance::GridBased => "GridBased",
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
            Distance::GridBased => (q[3].wrapping_sub(k[3]) as f64).abs(),
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
            Distance::Ratio | Distance::Equality | Distance::GridBased => true,
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
    /// A solution, whose own predicates must still hold.
    Solution(SolutionId),
    /// Index into `Matching::values`.
    Node(u32),
}

/// A `Matching` node: a table of tuned problem sizes (keys), each leading
/// to a solution or a sub-library, sorted as Tensile sorts it at load.
#[derive(Debug)]
pub struct Matching {
    /// The key's coordinates, in order (1 to 10 of them).
    pub properties: Box<[Property]>,
    /// How a query's key is compared with an entry's.
    pub distance: Distance,
    /// Keys of all entries, `properties.len()` each, in sorted order.
    pub keys: Box<[i64]>,
    /// Each sorted entry's measured speed: among equal distances the
    /// faster entry wins.
    pub speeds: Box<[f64]>,
    /// Each sorted entry's target.
    pub targets: Box<[Target]>,
    /// Each sorted entry's position in the file, for writing it back.
    pub file_pos: Box<[u32]>,
    /// The sub-libraries entries lead to ([`Target::Node`] indexes them).
    pub values: Vec<Node>,
    /// The table's solutions grouped by condition: solutions with the same
    /// (shared) problem predicate and a TruePred hardware predicate pass or
    /// fail together, so a walk asks once per group (rocBLAS's largest
    /// table: 1 631 solutions, 95 groups). One representative solution per
    /// group, and each entry's group (0 for entries leading to a
    /// sub-library).
    pub solutions: Box<[SolutionId]>,
    /// Each sorted entry's condition group, an index into `solutions`.
    pub local: Box<[u32]>,
    /// GridBased tables: where each group's entries start in
    /// `group_positions` (one more than there are groups); empty for other
    /// tables.
    pub group_starts: Box<[u32]>,
    /// GridBased tables: each group's entry positions, ascending.
    pub group_positions: Box<[u32]>,
    /// GridBased tables: the runs and cells the fast walk searches.
    grid: GridIndex,
    /// The tree that answers Euclidean and Manhattan tables (None for
    /// other distances, tables with sub-libraries, and tables outside the
    /// tree's exact limits: those are walked as Tensile walks them).
    boxes: Option<BoxTree>,
    /// The groups' conditions as masks over the table's leaves.
    conditions: Conditions,
}

// The table's layout, read by selection and by the codec alike: entry
// `i`'s key is `keys[i * arity..(i + 1) * arity]`, entries sorted by key.
impl Matching {
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
///
/// Granularity is `x / ceil(x)`: the filled fraction of the last tile or
/// round. The tile parameters are the reciprocals Tensile stores (`mt0`
/// is 1 / macro tile 0, `cus` 1 / CU count).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feature {
    /// A size property's value.
    Size(Property),
    /// `Tile0Granularity`: granularity of M times the value (1 / MT0).
    Tile0Granularity(f32),
    /// `Tile1Granularity`: granularity of N times the value (1 / MT1).
    Tile1Granularity(f32),
    /// `CUGranularity`: granularity of the tiles per CU,
    /// `ceil(M * mt0) * ceil(N * mt1) * cus`.
    CuGranularity {
        /// 1 / macro tile 0.
        mt0: f32,
        /// 1 / macro tile 1.
        mt1: f32,
        /// 1 / CU count.
        cus: f32,
    },
    /// `WavesPerSIMD`: `ceil(tiles per CU) * ws`.
    WavesPerSimd {
        /// 1 / macro tile 0.
        mt0: f32,
        /// 1 / macro tile 1.
        mt1: f32,
        /// 1 / CU count.
        cus: f32,
        /// The factor the rounded-up tiles per CU are multiplied by
        /// (Tensile's `ws`).
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

/// One decision of a tree: compare a feature with a threshold, go on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeNode {
    /// Index into the forest's `features` (checked at load).
    pub feature: u32,
    /// Go to `next_lte` when the feature is `<=` this, else `next_gt`.
    pub threshold: f32,
    /// Next node index when `<= threshold`; -1 predicts false, -2 true.
    pub next_lte: i32,
    /// Next node index when `> threshold`; -1 predicts false, -2 true.
    pub next_gt: i32,
}

/// One tree of a `DecisionTree` node: nodes from index 0, and the library
/// answering when it predicts true.
#[derive(Debug)]
pub struct Tree {
    /// The decisions; the walk starts at 0 (an empty tree predicts false).
    pub nodes: Box<[TreeNode]>,
    /// What the node selects with when this tree predicts true.
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

/// A `DecisionTree` node: features computed once per query, and trees
/// tried in order.
#[derive(Debug)]
pub struct Forest {
    /// The features the trees' nodes index.
    pub features: Box<[Feature]>,
    /// The trees; the first to predict true answers.
    pub trees: Box<[Tree]>,
}

/// A lazily loaded child catalog (`{type: Placeholder, value: <prefix>}`).
#[derive(Debug)]
pub struct Placeholder {
    /// The child's file name without extension: a plain name (no path
    /// separators, not `..`).
    pub prefix: Box<str>,
    /// How to find and load the child: the parent file's directory and
    /// suffix, and the chain of files above it (for cycle detection).
    pub origin: Arc<Origin>,
    /// The child file, or why it could not be read, once first asked for.
    pub child: OnceLock<std::result::Result<Box<crate::File>, CatalogError>>,
}

/// Where a file came from, shared by the placeholders in it.
#[derive(Debug)]
pub struct Origin {
    /// The directory of the file: children are looked for here.
    pub dir: PathBuf,
    /// The file's extension with its dot (e.g. `.dat`), appended to a
    /// placeholder's prefix.
    pub suffix: String,
    /// Files from the root catalog down to this one.
    pub chain: Vec<PathBuf>,
}
