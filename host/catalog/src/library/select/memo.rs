//! What a table search remembers within one query, and an entry's answer
//! through it.
//!
//! A search keeps, per group of the table's solutions, what it knows for
//! the current query: not yet asked, passes, fails (`box_tree::UNKNOWN`,
//! `PASSES`, `FAILS`), and per predicate leaf of the file the same. A
//! search meets the same solutions again and again (rocBLAS's tables hold
//! up to 21 725 entries for at most 1 631 kernels) and their predicates
//! cannot change within a query, so each is evaluated once; entries of a
//! failing group are then passed over without computing their distance.
//! The plain walk still runs the early-exit test at every entry, as in
//! Tensile, so it stops where Tensile's stops.
//!
//! May assume: a state buffer is the table's groups, then the file's
//! leaves; a traced query shows every evaluation, so it reads nothing from
//! the memo (it still writes). Costs: buffers are kept per thread and
//! reused (one per nesting depth), so a search allocates nothing once
//! warm; each search clears its buffer, or copies a plan's leaf template
//! into it.

use crate::box_tree::{FAILS, PASSES, UNKNOWN};
use crate::error::Result;
use crate::library::{Matching, Target};

use super::query::{Hit, Query};
use super::single::single;

thread_local! {
    /// Spare state buffers (a walk may nest through a Matching entry's
    /// sub-library into another walk).
    static STATES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A state buffer: `groups` unknown groups, then the file's `leaves`
/// leaves, unknown or as `known` (a plan's template) says.
pub(super) fn take_state(groups: usize, leaves: usize, known: Option<&[u8]>) -> Vec<u8> {
    let mut v = STATES.with(|s| s.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    match known {
        Some(known) => {
            v.resize(groups, UNKNOWN);
            v.extend_from_slice(known);
        }
        None => v.resize(groups + leaves, UNKNOWN),
    }
    v
}

pub(super) fn give_state(v: Vec<u8>) {
    STATES.with(|s| s.borrow_mut().push(v));
}

impl Matching {
    /// Entry `i`'s answer: its solution if the solution's predicates hold
    /// (remembered per group), or what its sub-library selects.
    pub(super) fn transform<'c>(
        &'c self,
        file: &'c crate::File,
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
}
