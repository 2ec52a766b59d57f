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
//! A plan goes on into the lazy children already read (TensileLite's
//! roots end in placeholders, and their children's rows test the types
//! and features again): a placeholder whose child is not read yet stays a
//! step, and the plan is built again once a query has read it.
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
    /// Hardware node or placeholder (whose child is not read yet, or
    /// could not be).
    pub node: &'c Node,
    /// The file holding `node`: the root or a lazy child.
    pub file: &'c File,
    /// The file's leaves the class decides, judged once here: for each
    /// leaf of `file.leaves`, passes or fails if it is class-only
    /// ([`ProblemLeaf::class_only`](super::predicate::ProblemLeaf::class_only)),
    /// else not known. A table search starts its leaf memo from it, so a
    /// query evaluates only the leaves its sizes decide.
    pub leaves: std::sync::Arc<[u8]>,
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
pub struct Plan<'c> {
    /// The steps, under the GPU's hardware rows if the root has them.
    pub kind: PlanKind<'c>,
    /// A step is a placeholder whose child is not read yet: once a query
    /// has read it, a plan built again goes on into it.
    pub pending: bool,
}

/// How a plan's steps hang together.
pub enum PlanKind<'c> {
    /// The root is a Hardware node: its matching rows, in order.
    Rows(Vec<RowPlan<'c>>),
    /// Any other root: its steps.
    Steps(Vec<Step<'c>>),
}

/// Where [`flatten`] puts what it finds.
struct Flat<'c, 'p> {
    problem: &'p Problem,
    guards: Vec<&'c ProblemPredicate>,
    out: Vec<Step<'c>>,
    pending: bool,
    /// Each file's leaf template, made once.
    leaves: Vec<(&'c File, std::sync::Arc<[u8]>)>,
}

impl<'c> Flat<'c, '_> {
    /// `node` of `file` as a step behind the current guards.
    fn step(&mut self, node: &'c Node, file: &'c File) {
        let leaves = self.leaves(file);
        self.out.push(Step {
            guards: self.guards.clone(),
            node,
            file,
            leaves,
        });
    }

    fn leaves(&mut self, file: &'c File) -> std::sync::Arc<[u8]> {
        use crate::box_tree::{FAILS, PASSES, UNKNOWN};
        if let Some((_, t)) = self.leaves.iter().find(|(f, _)| std::ptr::eq(*f, file)) {
            return t.clone();
        }
        let t: std::sync::Arc<[u8]> = file
            .leaves
            .iter()
            .map(|l| match l.class_only() {
                false => UNKNOWN,
                true if l.eval(self.problem) => PASSES,
                true => FAILS,
            })
            .collect();
        self.leaves.push((file, t.clone()));
        t
    }
}

fn flatten<'c>(node: &'c Node, file: &'c File, f: &mut Flat<'c, '_>) {
    match node {
        Node::ProblemMap(map) => {
            if let Some(&i) = map.index.get(f.problem.operation_identifier()) {
                flatten(&map.entries[i].1, file, f);
            }
        }
        Node::Problem(rows) => {
            for row in rows.iter() {
                if row.class_only {
                    if row.predicate.eval(f.problem) {
                        flatten(&row.library, file, f);
                    }
                } else {
                    f.guards.push(&row.predicate);
                    flatten(&row.library, file, f);
                    f.guards.pop();
                }
            }
        }
        Node::Placeholder(p) => match p.child.get() {
            // A child already read: its tree, as if it were in this one
            // (a placeholder's select is its child root's select).
            Some(Ok(child)) => flatten(&child.root, child, f),
            // Not read yet (the plan is built again once it is), or failed
            // (its error answers a query that reaches it).
            loaded => {
                f.pending |= loaded.is_none();
                f.step(node, file);
            }
        },
        // The other leaves of the plan: tables, trees, single solutions
        // and nested hardware rows.
        other => f.step(other, file),
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
    /// The plan of `problem`'s class in catalog `file`, whose root's
    /// hardware rows `gpu` evaluated; the class-only predicates are
    /// evaluated here, the others kept as guards.
    pub fn build(file: &'c File, gpu: &GpuRows<'c>, problem: &Problem) -> Plan<'c> {
        let mut f = Flat {
            problem,
            guards: Vec::new(),
            out: Vec::new(),
            pending: false,
            leaves: Vec::new(),
        };
        let steps = |node: &'c Node, f: &mut Flat<'c, '_>| {
            flatten(node, file, f);
            std::mem::take(&mut f.out)
        };
        let kind = match &gpu.0 {
            Some(rows) => PlanKind::Rows(
                rows.iter()
                    .map(|&(library, fallback)| RowPlan {
                        fallback,
                        steps: steps(library, &mut f),
                    })
                    .collect(),
            ),
            None => PlanKind::Steps(steps(&file.root, &mut f)),
        };
        Plan {
            kind,
            pending: f.pending,
        }
    }

    /// A placeholder step's child has been read since the plan was built:
    /// built again, the plan goes on into it.
    pub fn stale(&self) -> bool {
        // A child that failed to load stays a step (its error is the
        // query's answer, as in the tree walk): only a child read since
        // counts.
        let read = |steps: &[Step<'c>]| {
            steps.iter().any(
                |s| matches!(s.node, Node::Placeholder(p) if matches!(p.child.get(), Some(Ok(_)))),
            )
        };
        self.pending
            && match &self.kind {
                PlanKind::Steps(steps) => read(steps),
                PlanKind::Rows(rows) => rows.iter().any(|r| read(&r.steps)),
            }
    }

    fn run_steps<'q>(steps: &'q [Step<'c>], q: &mut Query<'q>) -> Result<Option<Hit<'c>>>
    where
        'c: 'q,
    {
        for step in steps {
            if step.guards.iter().all(|g| g.eval(q.problem)) {
                q.leaves = Some((step.file, &step.leaves));
                if let Some(hit) = step.node.select(step.file, q)? {
                    return Ok(Some(hit));
                }
            }
        }
        Ok(None)
    }

    /// Answers `q` (a problem of the plan's class, on its GPU): the tree
    /// walk's answer, exact rows before fallback rows.
    pub fn run<'q>(&'q self, q: &mut Query<'q>) -> Result<Option<Hit<'c>>>
    where
        'c: 'q,
    {
        match &self.kind {
            PlanKind::Steps(steps) => Self::run_steps(steps, q),
            PlanKind::Rows(rows) => {
                let mut fallback = None;
                for row in rows {
                    if !row.fallback {
                        if let Some(hit) = Self::run_steps(&row.steps, q)? {
                            return Ok(Some(hit));
                        }
                    } else if fallback.is_none() {
                        fallback = Self::run_steps(&row.steps, q)?;
                    }
                }
                Ok(fallback)
            }
        }
    }
}
