//! The `TENSILE_DB`-style frame around each predicate a trace shows: a
//! header naming what is tested, the evaluation's own lines, and a footer
//! with the result, as Tensile prints them (so the two traces can be read
//! side by side).
//!
//! May assume: called only for a traced query. Costs: a few lines of text
//! per predicate, only when tracing.

use crate::predicate::Trace;

const RULE: &str =
    "--------------------------------------------------------------------------------";

pub(super) fn header(t: &mut Trace, title: &str) {
    t.raw("");
    t.raw(RULE);
    t.raw(&format!("PREDICATE: {title}"));
    t.raw(RULE);
}

pub(super) fn footer(t: &mut Trace, pass: bool) {
    t.raw(RULE);
    t.raw(if pass {
        "Result: MATCH"
    } else {
        "Result: NO MATCH"
    });
    t.raw(RULE);
}
