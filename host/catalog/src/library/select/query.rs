//! What a query carries and what it gets back: the types every room of
//! selection passes along, and the solution id they name.
//!
//! For: [`Query`] bundles the problem, the GPU, an optional trace and the
//! options a caller sets (walk GridBased cells, a plan's leaf template);
//! [`Hit`] names the selected solution by file and position. May assume:
//! nothing about the tree; a table checks that a template is its own
//! file's before it uses it. Costs: nothing; a query borrows, a hit is
//! three words and `Copy`.

use crate::hardware::Hardware;
use crate::predicate::Trace;
use crate::problem::Problem;

/// A solution's position in its file's solution list.
pub type SolutionId = u32;

/// One query: the problem, the GPU, and an optional trace.
pub struct Query<'q> {
    /// The GEMM to find a solution for.
    pub problem: &'q Problem,
    /// The GPU it runs on.
    pub hardware: &'q Hardware,
    /// Where every predicate evaluation is recorded (`TENSILE_DB` style),
    /// if tracing.
    pub trace: Option<&'q mut Trace>,
    /// Walk GridBased tables cell by cell, as hipBLASLt does (a trace
    /// always does), not from the passing solution groups.
    pub walk_cells: bool,
    /// What a plan knows of a file's leaves for the query's class (see
    /// [`crate::plan::Step::leaves`]): tables of that file start their
    /// leaf memo from it.
    pub leaves: Option<(&'q crate::File, &'q [u8])>,
}

/// A selected solution and the file that holds it.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'c> {
    /// The file holding the solution (a lazy child, or the root).
    pub file: &'c crate::File,
    /// The solution's position in `file.solutions`.
    pub id: SolutionId,
    /// The matching distance that chose it (0 for non-matching paths).
    pub fitness: f64,
}
