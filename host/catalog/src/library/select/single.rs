//! A solution's own predicates: hardware first, then problem, then
//! TensileLite's task predicate. A Single node answers with its solution
//! only if they hold, and so does a table entry.
//!
//! Two forms: [`single`] as Tensile evaluates them (traced when the query
//! is), and [`single_fast`] for an untraced table search, which reads and
//! fills the search's leaf memo for a problem predicate compiled to leaf
//! ids. May assume: `id` is a position in `file.solutions` (checked at
//! load), and the memo has one slot per leaf of `file`. Costs: the
//! predicates' evaluation; through the memo, each leaf once per search.

use crate::box_tree::{FAILS, PASSES};

use super::query::{Query, SolutionId};
use super::trace::{footer, header};

/// [`single`] for a table walk without a trace: a predicate compiled to
/// leaf ids is evaluated through the walk's leaf memo.
pub(super) fn single_fast(
    file: &crate::File,
    id: SolutionId,
    q: &Query<'_>,
    leaf_state: &mut [u8],
) -> bool {
    let s = &file.solutions[id as usize];
    if !s.hardware_predicate.eval(q.hardware) {
        return false;
    }
    let problem = match &s.problem_predicate.leaf_ids {
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
    };
    problem && s.task_holds(q.problem)
}

/// A solution's own predicates: hardware first, then problem.
pub(super) fn single(file: &crate::File, id: SolutionId, q: &mut Query<'_>) -> bool {
    let s = &file.solutions[id as usize];
    match q.trace.as_deref_mut() {
        Some(t) => {
            header(t, &format!("Solution {} ({})", s.index, s.name));
            let pass = s.trace_holds(q.hardware, q.problem, t);
            footer(t, pass);
            pass
        }
        None => s.holds(q.hardware, q.problem),
    }
}
