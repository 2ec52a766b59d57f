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
//!
//! Three rooms: this one is the node model; [`select`] answers queries on
//! it (the rules above); [`codec`] reads and writes it as Tensile's
//! MessagePack.

mod codec;
mod select;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::box_tree::BoxTree;
use crate::error::CatalogError;
use crate::hardware::Hardware;
use crate::predicate::{HardwarePredicate, ProblemPredicate};
use crate::problem::Problem;

pub(crate) use codec::Ctx;
use select::Conditions;
pub use select::{Hit, Query};

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
    pub index: HashMap<Box<str>, usize, crate::FxBuild>,
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
    boxes: Option<BoxTree>,
    /// The groups' conditions as masks over the table's leaves.
    conditions: Conditions,
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
    pub child: OnceLock<std::result::Result<Box<crate::File>, CatalogError>>,
}

/// Where a file came from, shared by the placeholders in it.
#[derive(Debug)]
pub struct Origin {
    pub dir: PathBuf,
    pub suffix: String,
    /// Files from the root catalog down to this one.
    pub chain: Vec<PathBuf>,
}
