//! [`Node::select`]: the walk down the library tree, one arm per node type.
//!
//! Hardware rows are tried in file order, a chip-ID fallback row kept aside
//! until no exact row answers; Problem rows in file order; a ProblemMap by
//! the operation identifier; a Single by its solution's predicates
//! (`single`). Tables (`matching`, `grid`), decision trees (`forest`) and
//! placeholders (a child file, read on first use) answer for themselves.
//! May assume: the node was built by the codec (rows, map index and
//! solution ids checked). Costs: one predicate evaluation per row tried,
//! recursion as deep as the tree; a placeholder's first query reads its
//! child file.

use crate::error::Result;
use crate::library::Node;

use super::query::{Hit, Query};
use super::single::single;
use super::trace::{footer, header};

impl Node {
    /// The solution this node selects for the query (under `file`, which
    /// holds the node), following Tensile's rules (the
    /// [`library`](crate::library) module docs); `None` when nothing
    /// matches. Errors come from child catalogs that fail to load.
    pub fn select<'c>(
        &'c self,
        file: &'c crate::File,
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
