//! At load: which of a Matching table's solutions pass or fail together,
//! and what searches read about those groups.
//!
//! Solutions that share the problem predicate (an `Arc`, shared by the
//! reader among predicates of the same bytes), the hardware predicate and
//! what the task predicate reads pass or fail together, so a search asks
//! once per group (rocBLAS's largest table: 1 631 solutions, 95 groups).
//! From the groups this builds the compiled conditions (`conditions`), the
//! box tree's group summaries, and, for GridBased tables, each group's
//! entry positions and the table's index (`grid_index`). May assume: the
//! solution ids are resolved (called after the file's solutions are
//! linked). Costs: at load only, hashing once per entry; in memory a `u32`
//! per entry (two for GridBased tables).

use std::collections::HashMap;
use std::sync::Arc;

use crate::library::{Distance, Matching, Target};
use crate::solution::TaskSizes;

use super::conditions::Conditions;
use super::grid_index::GridIndex;

impl Matching {
    /// Groups the table's solutions by condition and builds what walks
    /// read about them (needs the solutions themselves).
    pub(in crate::library) fn group(&mut self, list: &[crate::Solution]) {
        let mut solutions = Vec::new();
        // Solutions pass or fail together when they share the problem
        // predicate (an Arc), the hardware predicate and what the task
        // predicate reads (the predicate, GSU, macro tile, workspace per
        // element).
        type Task = (Option<crate::solution::TaskPredicate>, TaskSizes);
        let mut hardware: Vec<&crate::predicate::HardwarePredicate> = Vec::new();
        let mut tasks: HashMap<Task, u32, crate::FxBuild> = HashMap::default();
        // Each solution's group, once it has one (by position in `list`).
        let mut group_of: Vec<u32> = vec![u32::MAX; list.len()];
        let mut seen: HashMap<(usize, u32, u32), u32, crate::FxBuild> = HashMap::default();
        let local: Box<[u32]> = self
            .targets
            .iter()
            .map(|t| match t {
                Target::Solution(id) => {
                    if let Some(&g) = group_of.get(*id as usize)
                        && g != u32::MAX
                    {
                        return g;
                    }
                    let group = match list.get(*id as usize) {
                        Some(s) => {
                            let hw = match hardware.iter().position(|h| **h == s.hardware_predicate)
                            {
                                Some(i) => i,
                                None => {
                                    hardware.push(&s.hardware_predicate);
                                    hardware.len() - 1
                                }
                            } as u32;
                            let sig = (s.task_predicate.clone(), TaskSizes::of(&s.size_mapping));
                            let n = tasks.len() as u32;
                            let task = *tasks.entry(sig).or_insert(n);
                            (Arc::as_ptr(&s.problem_predicate) as usize, hw, task)
                        }
                        None => (0, u32::MAX, *id),
                    };
                    let g = *seen.entry(group).or_insert_with(|| {
                        solutions.push(*id);
                        solutions.len() as u32 - 1
                    });
                    if let Some(slot) = group_of.get_mut(*id as usize) {
                        *slot = g;
                    }
                    g
                }
                Target::Node(_) => 0,
            })
            .collect();
        self.conditions = Conditions::build(list, &solutions);
        if let Some(boxes) = &mut self.boxes
            && !boxes.set_groups(&local, solutions.len())
        {
            self.boxes = None;
        }
        // GridBased tables: each group's entries, in table order.
        if self.distance == Distance::GridBased && self.values.is_empty() {
            let mut starts = vec![0u32; solutions.len() + 1];
            for &g in local.iter() {
                starts[g as usize + 1] += 1;
            }
            for g in 0..solutions.len() {
                starts[g + 1] += starts[g];
            }
            let mut fill = starts.clone();
            let mut positions = vec![0u32; local.len()];
            for (i, &g) in local.iter().enumerate() {
                positions[fill[g as usize] as usize] = i as u32;
                fill[g as usize] += 1;
            }
            self.group_starts = starts.into_boxed_slice();
            self.group_positions = positions.into_boxed_slice();
            self.grid = GridIndex::build(&self.keys, self.arity());
        }
        self.solutions = solutions.into_boxed_slice();
        self.local = local;
    }
}
