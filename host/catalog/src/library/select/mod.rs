//! Selection: how each node answers a query, with Tensile's rules (see
//! [`super`]), the tree search that answers large Euclidean and Manhattan
//! tables, and the `TENSILE_DB`-style trace.
//!
//! One room per concept, by what a query meets on its way down:
//! - `query`: what a query carries ([`Query`](super::Query)) and what it
//!   gets back ([`Hit`](super::Hit)).
//! - `node`: [`Node::select`](super::Node::select), the tree walk: hardware
//!   rows (exact before fallback), problem rows, the ProblemMap, Single
//!   nodes and placeholders; tables and decision trees are handed on.
//! - `single`: a solution's own predicates (a Single node, a table entry).
//! - `matching`: a Matching table: its key, then the entry Tensile's walk
//!   picks, found by the walk or by the tree search (`box_tree`).
//! - `grid`: TensileLite's GridBased tables: the walk over cells, and the
//!   same answer from the passing solution groups, through `grid_index`.
//! - `forest`: a DecisionTree node.
//! - `memo`: what a table search remembers within one query, and an
//!   entry's answer through it.
//! - `judge`: how an untraced search judges a solution group, through
//!   `conditions`, the groups' conditions compiled to bit masks at load.
//! - `groups`: at load, which of a table's solutions pass or fail together.
//! - `trace`: the framing of each predicate in a trace.
//!
//! Imports run one way, each room importing only rooms below it:
//!
//! ```text
//! node       ─► single, trace, query
//! matching   ─► memo, judge, query
//! grid       ─► judge, grid_index, query
//! forest     ─► query
//! groups     ─► grid_index, conditions
//! memo       ─► single, query
//! judge      ─► single, conditions, query
//! single     ─► trace, query
//! conditions ─► query
//! ```
//!
//! `query`, `trace` and `grid_index` import no room, and `query`,
//! `conditions` and `grid_index` nothing of the node model either: they
//! are the three the model imports (for [`Hit`](super::Hit),
//! [`Query`](super::Query), [`SolutionId`](super::SolutionId) and the
//! types of two of a table's fields), so the model and selection do not
//! import each other. `groups` is used only at load. This module names the
//! rooms and defines nothing. Rooms also call methods defined in others,
//! which takes no import: `node` hands a table to `matching` and a
//! decision tree to `forest`, `matching` hands a GridBased table to
//! `grid`, and both ask `memo` for an entry's answer. Only one call goes
//! back up: a table entry or a decision tree that leads to a sub-library
//! asks [`Node::select`](super::Node::select) again (the node tree is
//! recursive).
//!
//! What selection may assume: the tree is as the codec (`super::codec`)
//! built it: tables sorted as Tensile sorts them and grouped
//! (`Matching::group`), solution ids and tree links checked. What it
//! costs: a table search takes its memo and the tree search's list from
//! per-thread buffers, reused once warm; a GridBased group search and a
//! DecisionTree's features take small vectors per query; untraced, each
//! predicate leaf of a file is evaluated at most once per table search. A
//! trace evaluates and writes out every predicate it meets, in Tensile's
//! order.

pub(super) mod conditions;
mod forest;
mod grid;
pub(super) mod grid_index;
mod groups;
mod judge;
mod matching;
mod memo;
mod node;
pub(super) mod query;
mod single;
#[cfg(test)]
mod test_support;
mod trace;
