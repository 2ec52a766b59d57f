//! Selection plans: the library tree pre-walked for one GPU and one class
//! of problem.
//!
//! Most of a query's path through a catalog does not depend on its sizes:
//! the hardware rows test the GPU, the ProblemMap the operation, and most
//! Problem rows the types and flags. rocBLAS's catalog makes a query test
//! ~45 such predicates before it reaches a size table. A plan evaluates
//! them once per (GPU, class) (the hardware rows once per GPU: a
//! selector keeps them as [`GpuRows`]), where a class is everything a
//! [`ProblemLeaf::class_only`](super::predicate::ProblemLeaf::class_only)
//! leaf can read, and keeps, in the tree's own depth-first order, the
//! libraries a query of that class could end in, each with the
//! size-dependent row predicates on its path as guards.
//!
//! Running a plan visits the same libraries in the same order as walking
//! the tree (a row whose library answers nothing falls through to the
//! next; hardware rows matched only through a chip-ID fallback are kept
//! aside as in [`Node::select`]), so it returns exactly what the tree walk
//! returns. It is not a result cache: sizes are looked at on every query.

use super::File;
use super::error::Result;
use super::hardware::Hardware;
use super::library::{Hit, Node, Query};
use super::predicate::ProblemPredicate;
use super::problem::Problem;

/// What fixes a problem's class.
pub type ClassKey = [u64; 6];

/// The problem's class: its four data types, transposes, flags (without
/// C == D), mode bits and TensileLite's class fields, packed. Problems with the same key follow the
/// same plan.
pub fn class_key(p: &Problem) -> ClassKey {
    let types = (p.a_type as u64)
        | (p.b_type as u64) << 8
        | (p.c_type as u64) << 16
        | (p.d_type as u64) << 24;
    let trans = (p.trans_a as u64) | (p.trans_b as u64) << 4;
    // C == D is not part of a class: no class-only leaf reads it.
    let flags = p.flag_bits() & !(1 << 5);
    let [lite_types, lite_flags] = p.lite_bits();
    [types, trans, flags, p.mode_bits(), lite_types, lite_flags]
}

/// A library a query may end in, behind the size-dependent predicates of
/// the rows that lead to it.
pub struct Step<'c> {
    /// The size-dependent row predicates on the path, outermost first: all
    /// must hold for a query to reach `node`.
    pub guards: Vec<&'c ProblemPredicate>,
    /// The library reached: a table, tree, single solution, nested
    /// Hardware node or placeholder.
    pub node: &'c Node,
}

/// The steps under one matching hardware row.
pub struct RowPlan<'c> {
    /// The row matched the GPU only through a chip-ID fallback: its answer
    /// counts only when no exact row answers.
    pub fallback: bool,
    /// The row's libraries, in tree order.
    pub steps: Vec<Step<'c>>,
}

/// The tree pre-walked for one GPU and one problem class.
pub enum Plan<'c> {
    /// The root is a Hardware node: its matching rows, in order.
    Rows(Vec<RowPlan<'c>>),
    /// Any other root: its steps.
    Steps(Vec<Step<'c>>),
}

fn flatten<'c>(
    node: &'c Node,
    problem: &Problem,
    guards: &mut Vec<&'c ProblemPredicate>,
    out: &mut Vec<Step<'c>>,
) {
    match node {
        Node::ProblemMap(map) => {
            if let Some(&i) = map.index.get(problem.operation_identifier()) {
                flatten(&map.entries[i].1, problem, guards, out);
            }
        }
        Node::Problem(rows) => {
            for row in rows.iter() {
                if row.class_only {
                    if row.predicate.eval(problem) {
                        flatten(&row.library, problem, guards, out);
                    }
                } else {
                    guards.push(&row.predicate);
                    flatten(&row.library, problem, guards, out);
                    guards.pop();
                }
            }
        }
        // Leaves of the plan: tables, trees, single solutions, nested
        // hardware rows and placeholders (whose child is read only when a
        // query reaches it).
        other => out.push(Step {
            guards: guards.clone(),
            node: other,
        }),
    }
}

/// The part of a plan that depends on the GPU alone: the hardware rows
/// that match it, each with whether it matched only through a chip-ID
/// fallback (None when the root is not a Hardware node). A selector works
/// it out once.
pub struct GpuRows<'c>(Option<Vec<(&'c Node, bool)>>);

impl<'c> GpuRows<'c> {
    /// Evaluates `root`'s hardware rows (if it is a Hardware node) for
    /// `hw`.
    pub fn new(root: &'c Node, hw: &Hardware) -> GpuRows<'c> {
        GpuRows(match root {
            Node::Hardware(rows) => Some(
                rows.iter()
                    .filter(|r| r.predicate.eval(hw))
                    .map(|r| (&r.library, r.is_fallback_for(hw)))
                    .collect(),
            ),
            _ => None,
        })
    }
}

impl<'c> Plan<'c> {
    /// The plan of `problem`'s class under `root`, whose hardware rows
    /// `gpu` evaluated; the class-only predicates are evaluated here, the
    /// others kept as guards.
    pub fn build(root: &'c Node, gpu: &GpuRows<'c>, problem: &Problem) -> Plan<'c> {
        match &gpu.0 {
            Some(rows) => Plan::Rows(
                rows.iter()
                    .map(|&(library, fallback)| {
                        let mut steps = Vec::new();
                        flatten(library, problem, &mut Vec::new(), &mut steps);
                        RowPlan { fallback, steps }
                    })
                    .collect(),
            ),
            None => {
                let mut steps = Vec::new();
                flatten(root, problem, &mut Vec::new(), &mut steps);
                Plan::Steps(steps)
            }
        }
    }

    fn run_steps(steps: &[Step<'c>], file: &'c File, q: &mut Query<'_>) -> Result<Option<Hit<'c>>> {
        for step in steps {
            if step.guards.iter().all(|g| g.eval(q.problem))
                && let Some(hit) = step.node.select(file, q)?
            {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    /// Answers `q` (a problem of the plan's class, on its GPU) from the
    /// catalog `file`: the tree walk's answer, exact rows before fallback
    /// rows.
    pub fn run(&self, file: &'c File, q: &mut Query<'_>) -> Result<Option<Hit<'c>>> {
        match self {
            Plan::Steps(steps) => Self::run_steps(steps, file, q),
            Plan::Rows(rows) => {
                let mut fallback = None;
                for row in rows {
                    if !row.fallback {
                        if let Some(hit) = Self::run_steps(&row.steps, file, q)? {
                            return Ok(Some(hit));
                        }
                    } else if fallback.is_none() {
                        fallback = Self::run_steps(&row.steps, file, q)?;
                    }
                }
                Ok(fallback)
            }
        }
    }
}
