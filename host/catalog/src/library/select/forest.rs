//! A DecisionTree node's answer: the features computed once per query, the
//! trees tried in order, and the value of the first that predicts true
//! answering (even when it finds nothing: then no answer, as in Tensile).
//!
//! May assume: every tree's links and feature indices were checked at
//! load (`Tree::predict`). Costs: one small vector of features per query,
//! and a walk from root to leaf per tree tried.

use crate::error::Result;
use crate::library::Forest;

use super::query::{Hit, Query};

impl Forest {
    pub(super) fn select<'c>(
        &'c self,
        file: &'c crate::File,
        q: &mut Query<'_>,
    ) -> Result<Option<Hit<'c>>> {
        let mut key = Vec::with_capacity(self.features.len());
        for f in self.features.iter() {
            match f.value(q.problem) {
                Some(v) => key.push(v),
                None => return Ok(None),
            }
        }
        for (i, tree) in self.trees.iter().enumerate() {
            if tree.predict(&key) {
                if let Some(t) = q.trace.as_deref_mut() {
                    t.raw(&format!("DecisionTree: tree {i} predicts true"));
                }
                return tree.value.select(file, q);
            }
        }
        Ok(None)
    }
}
