//! TensileLite's GridBased tables (keys M, N, batch, K): the walk over
//! grid cells that hipBLASLt makes, and the same answer found from the
//! solution groups that pass.
//!
//! The walk ([`Matching::grid_search`]) examines cells in table order (M,
//! then N, then a batch run), takes the passing entry nearest in K, folds
//! a batch into M or N once, and falls back to the last passing entry
//! before the last cell examined. A trace, or a caller asking for it
//! (`walk_cells`), gets the walk itself; otherwise [`Matching::grid_fast`]
//! walks the first cells the same way, then judges each surviving group
//! once (`judge`) and finds the entry the walk would stop at without
//! visiting the cells between, through the table's
//! [`GridIndex`](super::grid_index::GridIndex). May assume: four
//! properties (checked at load), keys sorted, and, for the fast path, no
//! sub-libraries (their tables have no group positions and are walked).
//! Costs: nothing at load (the index is built by `groups`); per query,
//! binary searches over the index and the cells' entries, each group
//! judged at most once, two small vectors (the passing groups, their
//! order) when the first cells do not answer.

use crate::box_tree::{FAILS, PASSES, UNKNOWN};
use crate::error::Result;
use crate::library::{Matching, Target};

use super::grid_index::{GB, GK, GM, GN};
use super::judge::Judge;
use super::query::{Hit, Query};

/// A search that finds no answer in its first cell walks on only when more
/// solution groups than this survive the common leaves: fewer are judged
/// outright faster than a walk over cells.
const FEW_GROUPS: usize = 64;

/// Entries an untraced GridBased search walks, after its first cell,
/// before it judges every solution group instead (12 in this crate's unit
/// tests, whose tables are small).
const GRID_WALK_ENTRIES: usize = if cfg!(test) { 12 } else { 128 };

impl Matching {
    /// First position in `from..to` whose key coordinate `c` is at least
    /// `v` (the table is sorted, so within a run of equal earlier
    /// coordinates coordinate `c` ascends).
    fn first_at_least(&self, from: usize, to: usize, c: usize, v: i64) -> usize {
        let (mut lo, mut hi) = (from, to);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid)[c] < v {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// End of the run of entries from `at` (before `to`) whose coordinate
    /// `c` equals `at`'s.
    fn run_end(&self, at: usize, to: usize, c: usize) -> usize {
        let v = self.key(at)[c];
        self.first_at_least(at, to, c, v.saturating_add(1))
    }

    /// The cell TensileLite's GridBased walk examines next, from entry
    /// `from` for the (folded) query `want`: the first M at least the
    /// query's (or the largest), in it the first N at least the query's
    /// (or its largest), in that cell the first batch run likewise.
    /// Returns (cell end, batch run start, batch run end), `None` past the
    /// table.
    fn grid_cell(&self, from: usize, want: &[i64; 4]) -> Option<(usize, usize, usize)> {
        let len = self.len();
        if from >= len {
            return None;
        }
        let m_lo = self.first_at_least(from, len, GM, want[GM].min(self.key(len - 1)[GM]));
        if m_lo >= len {
            return None;
        }
        let m_end = self.run_end(m_lo, len, GM);
        let n_lo = self.first_at_least(m_lo, m_end, GN, want[GN].min(self.key(m_end - 1)[GN]));
        let cell_end = self.run_end(n_lo, m_end, GN);
        let (b_lo, b_hi) = self.grid_batch_run(n_lo, cell_end, want);
        Some((cell_end, b_lo, b_hi))
    }

    /// The batch run the walk examines in the cell ending at `cell_end`,
    /// looking from `from`: the first batch at least the query's (or the
    /// cell's largest) and the end of its run.
    fn grid_batch_run(&self, from: usize, cell_end: usize, want: &[i64; 4]) -> (usize, usize) {
        let b_lo =
            self.first_at_least(from, cell_end, GB, want[GB].min(self.key(cell_end - 1)[GB]));
        (b_lo, self.run_end(b_lo, cell_end, GB))
    }

    /// [`Matching::grid_cell`] through the table's
    /// [`GridIndex`](super::grid_index::GridIndex) (the fast path; the
    /// literal walk keeps the plain search as its reference).
    fn grid_cell_fast(&self, from: usize, want: &[i64; 4]) -> Option<(usize, usize, usize)> {
        let g = &self.grid;
        let len = self.len();
        let last_m = g.runs[g.runs.len() - 2].0;
        let m_lo = g.m_from(from, want[GM].min(last_m));
        if m_lo >= len {
            return None;
        }
        let r = g.run_of(m_lo);
        let c = g.examined_from(r, g.cell_of(r, m_lo), want[GN]);
        let n_lo = (g.cells[c].1 as usize).max(m_lo);
        let cell_end = g.cells[c + 1].1 as usize;
        let (b_lo, b_hi) = self.grid_batch_run(n_lo, cell_end, want);
        Some((cell_end, b_lo, b_hi))
    }

    /// The batch fold of the walk's first pass: a batch other than 1 goes
    /// into the larger of M and N (N on a tie). Whether it changed `want`.
    fn grid_fold(want: &mut [i64; 4]) -> bool {
        if want[GB] == 1 {
            return false;
        }
        if want[GM] > want[GN] {
            want[GM] = want[GM].wrapping_mul(want[GB]);
        } else {
            want[GN] = want[GN].wrapping_mul(want[GB]);
        }
        want[GB] = 1;
        true
    }

    /// The passing entry of `lo..hi` nearest in K to `want`, ties to the
    /// later entry.
    fn grid_nearest(
        &self,
        lo: usize,
        hi: usize,
        want: &[i64; 4],
        mut ok: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let mut best = None;
        let mut best_distance = f64::INFINITY;
        for i in lo..hi {
            let distance = (want[GK].wrapping_sub(self.key(i)[GK]) as f64).abs();
            if distance <= best_distance && ok(i) {
                (best, best_distance) = (Some(i), distance);
            }
        }
        best
    }

    /// TensileLite's GridBased search for the best solution (hipBLASLt's
    /// `findTopSolutions(…, 1)`, the default non-k-d-tree path; RL
    /// `PropertyMatching.hpp` `findBestKeyMatch_GridBased`, TENSILELITE.md
    /// §8.4). Keys are (M, N, batch, K), sorted. The walk examines cells
    /// ([`Matching::grid_cell`]); in a cell it takes the passing entry
    /// nearest in K, ties to the later entry. A cell with no passing entry
    /// moves the walk to the next cell in table order (within a later M,
    /// again from the first N at least the query's). On the first pass a
    /// batch other than 1 is folded into the larger of M and N (N on a
    /// tie) and, when the table's entry there has batch 1, the walk starts
    /// again with the folded key. When the walk runs off the table, the
    /// passing entry latest in table order before the last cell examined
    /// answers, whatever its distance.
    ///
    /// A traced search, or one asked to walk cells
    /// ([`Catalog::select_walking`](crate::Catalog::select_walking)), walks
    /// cell by cell as the source does. Otherwise [`Matching::grid_fast`]
    /// answers: the first cells as the walk takes them, then from the
    /// solution groups that pass — the same entry, found without visiting
    /// the cells in between.
    pub(super) fn grid_search<'c>(
        &'c self,
        file: &'c crate::File,
        q: &mut Query<'_>,
        key: &[i64],
        state: &mut [u8],
    ) -> Result<Option<Hit<'c>>> {
        let mut want = [key[GM], key[GN], key[GB], key[GK]];
        if !q.walk_cells && q.trace.is_none() && !self.group_positions.is_empty() {
            return Ok(self.grid_fast(file, q, want, state));
        }
        let (mut from, mut b_lo, mut b_hi) = (0usize, 0usize, 0usize);
        let mut first_pass = true;
        while b_hi != self.len() {
            let Some(cell) = self.grid_cell(from, &want) else {
                break;
            };
            (from, b_lo, b_hi) = cell;
            if let Some(t) = q.trace.as_deref_mut() {
                let c = self.key(b_lo);
                t.raw(&format!(
                    "GridBased: query {want:?}, cell (M {}, N {}, batch {}), entries {b_lo}..{b_hi}",
                    c[GM], c[GN], c[GB]
                ));
            }
            let mut best: Option<(usize, Hit<'c>)> = None;
            let mut best_distance = f64::INFINITY;
            for i in b_lo..b_hi {
                let distance = (want[GK].wrapping_sub(self.key(i)[GK]) as f64).abs();
                if distance <= best_distance
                    && let Some(hit) = self.transform(file, i, q, state)?
                {
                    best = Some((
                        i,
                        Hit {
                            fitness: distance,
                            ..hit
                        },
                    ));
                    best_distance = distance;
                }
            }
            if first_pass {
                first_pass = false;
                let at = best.as_ref().map_or(0, |(i, _)| *i);
                if Self::grid_fold(&mut want) && self.key(at)[GB] == 1 {
                    if let Some(t) = q.trace.as_deref_mut() {
                        t.raw("GridBased: batch folded into M or N; the walk starts again");
                    }
                    (from, b_lo, b_hi) = (0, 0, 0);
                    continue;
                }
            }
            if let Some((_, hit)) = best {
                return Ok(Some(hit));
            }
        }
        if let Some(t) = q.trace.as_deref_mut() {
            t.raw(&format!(
                "GridBased: no cell answered; backward from entry {b_lo}"
            ));
        }
        for i in (0..b_lo).rev() {
            if let Some(hit) = self.transform(file, i, q, state)? {
                let distance = (want[GK].wrapping_sub(self.key(i)[GK]) as f64).abs();
                return Ok(Some(Hit {
                    fitness: distance,
                    ..hit
                }));
            }
        }
        Ok(None)
    }

    /// The untraced GridBased search ([`Matching::grid_search`]'s
    /// answer): groups judged through the leaf masks, once each. Its first
    /// cells are examined as the walk examines them (up to
    /// [`GRID_WALK_ENTRIES`] entries after the first cell); when no entry
    /// there passes, every group is judged, and the walk's answer is the
    /// first entry of a passing group that lies in a cell the walk
    /// examines or, if there is none, the last entry of a passing group
    /// before the last cell the walk examines.
    fn grid_fast<'c>(
        &'c self,
        file: &'c crate::File,
        q: &Query<'_>,
        mut want: [i64; 4],
        state: &mut [u8],
    ) -> Option<Hit<'c>> {
        let len = self.len();
        let (groups, leaf_state) = state.split_at_mut(self.solutions.len());
        let mut j = Judge::new(self, file, q, leaf_state);
        let judged = |j: &mut Judge<'_, '_>, g: usize, groups: &mut [u8]| {
            if groups[g] == UNKNOWN {
                groups[g] = if j.judge(g) { PASSES } else { FAILS };
            }
            groups[g] == PASSES
        };
        let hit = |i: usize, want: &[i64; 4]| match self.targets[i] {
            Target::Solution(id) => Some(Hit {
                file,
                id,
                fitness: (want[GK].wrapping_sub(self.key(i)[GK]) as f64).abs(),
            }),
            Target::Node(_) => None,
        };
        // The first cell, and again after a fold that restarts the walk.
        let (mut from, mut b_lo, mut b_hi) = self.grid_cell_fast(0, &want)?;
        let mut best = self.grid_nearest(b_lo, b_hi, &want, |i| {
            judged(&mut j, self.local[i] as usize, groups)
        });
        if Self::grid_fold(&mut want) && self.key(best.unwrap_or(0))[GB] == 1 {
            (from, b_lo, b_hi) = self.grid_cell_fast(0, &want)?;
            best = self.grid_nearest(b_lo, b_hi, &want, |i| {
                judged(&mut j, self.local[i] as usize, groups)
            });
        }
        if let Some(i) = best {
            return hit(i, &want);
        }
        // A few more cells as the walk takes them, their groups judged as
        // met (an answer is often near), unless few groups survive the
        // common leaves; past that many entries, the passing groups answer
        // for the rest of the walk.
        let alive = j.prune();
        if alive == 0 {
            return None;
        }
        let mut budget = if alive <= FEW_GROUPS {
            0
        } else {
            GRID_WALK_ENTRIES
        };
        while b_hi != len && budget > 0 {
            let Some(cell) = self.grid_cell_fast(from, &want) else {
                break;
            };
            (from, b_lo, b_hi) = cell;
            budget = budget.saturating_sub(b_hi - b_lo + 1);
            let best = self.grid_nearest(b_lo, b_hi, &want, |i| {
                judged(&mut j, self.local[i] as usize, groups)
            });
            if let Some(i) = best {
                return hit(i, &want);
            }
        }
        let want = &want;
        let mut passing = Vec::new();
        for g in j.left() {
            if judged(&mut j, g, groups) {
                passing.push(g);
            }
        }
        let positions = |g: usize| {
            let (lo, hi) = (
                self.group_starts[g] as usize,
                self.group_starts[g + 1] as usize,
            );
            &self.group_positions[lo..hi]
        };
        // Where the walk looks next: the first entry from `from` whose M is
        // at least the (possibly folded) query's, or the largest M. Past
        // the table, the walk ends with the first cell's batch run.
        let from = if b_hi != len {
            self.grid.m_from(from, want[GM].min(self.key(len - 1)[GM]))
        } else {
            len
        };
        if from < len {
            // The first examined entry of a passing group: groups in order
            // of their first entry from `from`, until none can come first.
            let mut order: Vec<(u32, usize)> = passing
                .iter()
                .filter_map(|&g| {
                    let pos = positions(g);
                    let i = pos.partition_point(|&p| (p as usize) < from);
                    pos.get(i).map(|&p| (p, g))
                })
                .collect();
            order.sort_unstable();
            let mut first: Option<usize> = None;
            for (start, g) in order {
                let limit = first.unwrap_or(len);
                if start as usize >= limit {
                    break;
                }
                if let Some(p) = self.grid_first_examined(positions(g), from, limit, want) {
                    first = Some(p);
                }
            }
            if let Some(p) = first {
                // Its cell answers: the passing entry nearest in K.
                let (_, lo, hi) = self.grid_examined_cell(p, want)?;
                debug_assert!(lo <= p && p < hi);
                let best =
                    self.grid_nearest(lo, hi, want, |i| groups[self.local[i] as usize] == PASSES);
                return best.and_then(|i| hit(i, want));
            }
            // The walk runs to the table's last cell; the backward scan
            // starts at its batch run.
            let cell_lo = self.grid.cells[self.grid.cells.len() - 2].1 as usize;
            b_lo = self.grid_batch_run(cell_lo, len, want).0;
        }
        passing
            .iter()
            .filter_map(|&g| {
                let pos = positions(g);
                let i = pos.partition_point(|&p| (p as usize) < b_lo);
                i.checked_sub(1).map(|i| pos[i] as usize)
            })
            .max()
            .and_then(|i| hit(i, want))
    }

    /// The cell entry `p` is in, when the walk (past its first cell, in
    /// an M run it enters at its first N at least the query's, or its
    /// largest) examines that cell for `want`: the cell's end and its
    /// examined batch run (which `p` may lie outside of). `None` when the
    /// walk passes over the cell.
    fn grid_examined_cell(&self, p: usize, want: &[i64; 4]) -> Option<(usize, usize, usize)> {
        let g = &self.grid;
        let r = g.run_of(p);
        let c = g.cell_of(r, p);
        let last = g.runs[r + 1].2 as usize - 1;
        if g.cells[c].0 < want[GN].min(g.cells[last].0) {
            return None;
        }
        let (cell_lo, cell_hi) = (g.cells[c].1 as usize, g.cells[c + 1].1 as usize);
        let (b_lo, b_hi) = self.grid_batch_run(cell_lo, cell_hi, want);
        Some((cell_hi, b_lo, b_hi))
    }

    /// The first of `positions` (sorted) in `from..limit` that the walk
    /// examines (`from` at or past the walk's M threshold).
    fn grid_first_examined(
        &self,
        positions: &[u32],
        from: usize,
        limit: usize,
        want: &[i64; 4],
    ) -> Option<usize> {
        let mut i = positions.partition_point(|&p| (p as usize) < from);
        while let Some(&p) = positions.get(i) {
            let p = p as usize;
            if p >= limit {
                return None;
            }
            // Skip to where the walk could next examine: the run's first
            // examined N, the cell's examined batch run, or the next cell.
            let next = match self.grid_examined_cell(p, want) {
                Some((_, lo, hi)) if lo <= p && p < hi => return Some(p),
                Some((_, lo, _)) if p < lo => lo,
                Some((cell_hi, _, _)) => cell_hi,
                None => {
                    let g = &self.grid;
                    let r = g.run_of(p);
                    g.cells[g.examined_from(r, g.cell_of(r, p), want[GN])].1 as usize
                }
            };
            i = positions.partition_point(|&x| (x as usize) < next.max(p + 1));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::Catalog;
    use crate::hardware::Hardware;
    use crate::library::select::test_support::{
        Rng, map, s, size_mapping, solution, solution_with, typed,
    };
    use crate::msgpack::Value;
    use crate::problem::{DataType, Problem, Transpose};

    /// A catalog whose root is one GridBased table over (M, N, batch, K):
    /// `entries` are (key, solution index).
    fn grid_catalog(sols: Vec<Value>, entries: &[([u64; 4], u64)]) -> Catalog {
        let table = entries
            .iter()
            .map(|(k, i)| {
                map(vec![
                    (
                        "key",
                        Value::Array(k.iter().map(|&x| Value::UInt(x)).collect()),
                    ),
                    ("index", Value::UInt(*i)),
                ])
            })
            .collect();
        let prop = |t: &str| map(vec![("type", s(t)), ("index", Value::UInt(0))]);
        let properties = ["FreeSizeA", "FreeSizeB", "BatchSize", "BoundSize"].map(prop);
        let tree = map(vec![
            ("solutions", Value::Array(sols)),
            (
                "library",
                map(vec![
                    ("type", s("Matching")),
                    ("properties", Value::Array(properties.to_vec())),
                    ("table", Value::Array(table)),
                    ("distance", s("GridBased")),
                ]),
            ),
        ]);
        let mut w = crate::msgpack::Writer::new();
        tree.write(&mut w);
        Catalog::from_msgpack(&w.out).unwrap()
    }

    /// The untraced GridBased search (answered from the passing groups
    /// after the first cell) against the cell-by-cell walk, on random small
    /// tables with several batch values per cell (folds that restart and
    /// folds that do not), duplicate keys and solutions that fail.
    #[test]
    fn grid_based_fast_answers_as_the_walk_on_random_tables() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let hw = Hardware::new("gfx90a", 104, None);
        let pick = |rng: &mut Rng, from: &[u64]| from[rng.below(from.len() as u64) as usize];
        let mut disagreements = Vec::new();
        for trial in 0..4000 {
            // Six solutions: M a multiple of 1, 2 or 3; K at least 0 or 4.
            let sols = (0..6)
                .map(|i| solution(i, pick(&mut rng, &[1, 1, 2, 3]), pick(&mut rng, &[0, 0, 4])))
                .collect();
            let entries: Vec<([u64; 4], u64)> = (0..1 + rng.below(14))
                .map(|_| {
                    let key = [
                        pick(&mut rng, &[1, 2, 4, 8]),
                        pick(&mut rng, &[1, 2, 4]),
                        pick(&mut rng, &[1, 1, 2, 4]),
                        pick(&mut rng, &[1, 2, 4, 8]),
                    ];
                    (key, rng.below(6))
                })
                .collect();
            let catalog = grid_catalog(sols, &entries);
            for _ in 0..8 {
                let (m, n) = (1 + rng.below(12), 1 + rng.below(6));
                let (k, batch) = (1 + rng.below(10), pick(&mut rng, &[1, 1, 2, 3, 4]));
                let p = Problem::gemm(Transpose::None, Transpose::None, m, n, k, DataType::Float)
                    .with_batch(batch);
                if let Some(d) = disagreement(&catalog, &p, &hw) {
                    disagreements.push(format!(
                        "trial {trial}: {m}x{n}x{k} batch {batch} on {entries:?}: {d}"
                    ));
                }
            }
        }
        assert_agreed(&disagreements, 4000);
    }

    /// The fast path's and the walk's answers to `p`, when they differ.
    fn disagreement(catalog: &Catalog, p: &Problem, hw: &Hardware) -> Option<String> {
        let answer = |s: Option<crate::Selected<'_>>| s.map(|s| (s.solution.index, s.fitness));
        let fast = answer(catalog.select(p, hw).unwrap());
        let walked = answer(catalog.select_walking(p, hw).unwrap());
        (fast != walked).then(|| format!("fast {fast:?}, walk {walked:?}"))
    }

    fn assert_agreed(disagreements: &[String], tables: usize) {
        let shown = &disagreements[..disagreements.len().min(5)];
        assert!(
            disagreements.is_empty(),
            "{} disagreements in {tables} tables:\n{}",
            disagreements.len(),
            shown.join("\n")
        );
    }

    /// The fast GridBased path against the walk on tables of up to 2,100
    /// solution groups (group sets of several words, and more than
    /// `PRUNE_WORDS` words, where nothing is pruned), with groups that do
    /// not compile (Or and Not predicates), hardware predicates, task
    /// predicates, random workspaces and GSU overrides: the pruning by
    /// common leaves, the walk after it and the group search. (Written by
    /// the review of 56622cb..dca8b53.)
    #[test]
    fn grid_based_fast_answers_as_the_walk_with_many_groups() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let hw = Hardware::new("gfx90a", 104, None);
        let pick = |rng: &mut Rng, from: &[u64]| from[rng.below(from.len() as u64) as usize];
        let mut disagreements = Vec::new();
        let mut trials = 0;
        for &ngroups in &[3usize, 40, 70, 130, 200, 700, 2100] {
            let rounds = if ngroups > 1000 { 3 } else { 60 };
            for _ in 0..rounds {
                trials += 1;
                let mut sols = Vec::new();
                for i in 0..ngroups as u64 {
                    // Common leaves, drawn from a small pool.
                    let mut items = Vec::new();
                    let mult = if ngroups > 500 {
                        pick(&mut rng, &[2, 3, 5, 7, 11])
                    } else {
                        pick(&mut rng, &[1, 1, 2, 3])
                    };
                    items.push(typed(
                        "SizeMultiple",
                        vec![("index", Value::UInt(0)), ("value", Value::UInt(mult))],
                    ));
                    if rng.below(2) == 0 {
                        items.push(typed(
                            "SizeMultiple",
                            vec![
                                ("index", Value::UInt(1)),
                                ("value", Value::UInt(pick(&mut rng, &[1, 2]))),
                            ],
                        ));
                    }
                    if rng.below(2) == 0 {
                        items.push(typed(
                            "GlobalSplitUCheckMinK",
                            vec![("value", Value::UInt(pick(&mut rng, &[0, 4])))],
                        ));
                    }
                    if rng.below(3) == 0 {
                        items.push(typed(
                            "SizeGreaterThan",
                            vec![
                                ("index", Value::UInt(3)),
                                ("value", Value::UInt(pick(&mut rng, &[0, 3, 6]))),
                            ],
                        ));
                    }
                    // A unique leaf (always true) so that the group is its own.
                    items.push(typed(
                        "SizeLessThan",
                        vec![
                            ("index", Value::UInt(2)),
                            ("value", Value::UInt(1000 + i % 300)),
                        ],
                    ));
                    let pred = match rng.below(10) {
                        0 => typed("Or", vec![("value", Value::Array(items))]),
                        1 => typed(
                            "Not",
                            vec![("value", typed("And", vec![("value", Value::Array(items))]))],
                        ),
                        _ => typed("And", vec![("value", Value::Array(items))]),
                    };
                    let hwp = match rng.below(8) {
                        0 => typed("Processor", vec![("value", s("gfx942"))]),
                        1 => typed("Processor", vec![("value", s("gfx90a"))]),
                        2 => typed(
                            "CUCount",
                            vec![("value", Value::UInt(pick(&mut rng, &[104, 110])))],
                        ),
                        _ => typed("TruePred", vec![]),
                    };
                    let task = match rng.below(5) {
                        0 => None,
                        1 => Some(typed("TruePred", vec![])),
                        2 => Some(typed(
                            "And",
                            vec![(
                                "value",
                                Value::Array(vec![
                                    typed("TruePred", vec![]),
                                    typed("WorkspaceCheck", vec![]),
                                ]),
                            )],
                        )),
                        _ => Some(typed("WorkspaceCheck", vec![])),
                    };
                    let gsu = pick(&mut rng, &[1, 2, 4]);
                    let ws = pick(&mut rng, &[0, 4]);
                    let mt = 1 + rng.below(40);
                    sols.push(solution_with(i, hwp, pred, task, size_mapping(mt, gsu, ws)));
                }
                let nentries = ngroups + rng.below(ngroups as u64 + 20) as usize;
                let entries: Vec<([u64; 4], u64)> = (0..nentries)
                    .map(|e| {
                        let key = [
                            1 + rng.below(if ngroups > 500 { 64 } else { 16 }),
                            1 + rng.below(if ngroups > 500 { 32 } else { 8 }),
                            pick(&mut rng, &[1, 1, 2, 4]),
                            pick(&mut rng, &[1, 2, 4, 8]),
                        ];
                        (
                            key,
                            if e < ngroups {
                                e as u64
                            } else {
                                rng.below(ngroups as u64)
                            },
                        )
                    })
                    .collect();
                let catalog = grid_catalog(sols, &entries);
                for _ in 0..12 {
                    let (m, n) = if ngroups > 500 {
                        (1 + rng.below(70), 1 + rng.below(36))
                    } else {
                        (1 + rng.below(20), 1 + rng.below(10))
                    };
                    let (k, batch) = (1 + rng.below(10), pick(&mut rng, &[1, 1, 2, 3, 4]));
                    let mut p =
                        Problem::gemm(Transpose::None, Transpose::None, m, n, k, DataType::Float)
                            .with_batch(batch);
                    p.workspace_size = pick(&mut rng, &[0, 64, 1 << 10, 1 << 20]);
                    p.gsu = [0i64, 0, 0, 1, 2, -1][rng.below(6) as usize];
                    if let Some(d) = disagreement(&catalog, &p, &hw) {
                        disagreements
                            .push(format!("groups {ngroups}: {m}x{n}x{k} batch {batch}: {d}"));
                    }
                }
            }
        }
        assert_agreed(&disagreements, trials);
    }

    /// TensileLite's GridBased walk (TENSILELITE.md §8.4) on a small grid,
    /// each answer worked out by hand from that description. Entries
    /// (M, N, batch, K) → solution: (128,128,1,64) → 0, (128,128,1,256) →
    /// 1, (128,256,1,128) → 2, (256,128,1,128) → 3, (256,256,1,512) → 4,
    /// (512,512,1,1024) → 5. Solutions 0 and 1 need M % 3 == 0, 4 an even
    /// M, 5 M % 1000 == 0; 2 and 3 always pass.
    #[test]
    fn grid_based_walks_cells_then_k_then_backward() {
        let sols = vec![
            solution(0, 3, 0),
            solution(1, 3, 0),
            solution(2, 1, 0),
            solution(3, 1, 0),
            solution(4, 2, 0),
            solution(5, 1000, 0),
        ];
        let entries: [([u64; 4], u64); 6] = [
            ([512, 512, 1, 1024], 5),
            ([128, 128, 1, 256], 1),
            ([256, 256, 1, 512], 4),
            ([128, 128, 1, 64], 0),
            ([256, 128, 1, 128], 3),
            ([128, 256, 1, 128], 2),
        ];
        let catalog = grid_catalog(sols, &entries);
        let hw = Hardware::new("gfx90a", 104, None);
        let pick = |m, n, batch, k| {
            let p = Problem::gemm(Transpose::None, Transpose::None, m, n, k, DataType::Float)
                .with_batch(batch);
            let tree = catalog
                .select(&p, &hw)
                .unwrap()
                .map(|s| (s.solution.index, s.fitness));
            let (traced, _) = catalog.select_traced(&p, &hw);
            let traced = traced.unwrap().map(|s| (s.solution.index, s.fitness));
            assert_eq!(tree, traced, "{m}x{n}x{k} batch {batch}");
            tree
        };
        // Cell (128, 128): the nearer K.
        assert_eq!(pick(99, 100, 1, 200), Some((1, 56.0)));
        // Equal distances (96): the later entry, the larger K.
        assert_eq!(pick(99, 100, 1, 160), Some((1, 96.0)));
        // N above the cell's: the next N of the same M.
        assert_eq!(pick(99, 200, 1, 10), Some((2, 118.0)));
        // M % 3 fails both entries of (128, 128): the next cell in table
        // order, (128, 256), answers whatever its K.
        assert_eq!(pick(100, 100, 1, 200), Some((2, 72.0)));
        // Past the largest M and N: clamped to the last cell.
        assert_eq!(pick(5000, 5000, 1, 1), Some((5, 1023.0)));
        // The last cell fails and no cell follows: backward from it, the
        // first passing entry (4 needs an even M, 3 always passes).
        assert_eq!(pick(300, 300, 1, 10), Some((4, 502.0)));
        assert_eq!(pick(301, 300, 1, 10), Some((3, 118.0)));
        // Batch 4: the first pass finds (128, 128) → 1, then the batch is
        // folded into N (M 63 ≤ N 100): N 400 → the (128, 256) cell.
        assert_eq!(pick(63, 100, 4, 200), Some((2, 72.0)));
        assert_eq!(pick(63, 100, 1, 200), Some((1, 56.0)));
    }
}
