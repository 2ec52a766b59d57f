//! A Matching table's answer: the query's key from the table's properties,
//! then the entry Tensile's walk picks (nearest key whose solution's
//! predicates hold, ties to the faster entry, the walk's early exit
//! included).
//!
//! Three ways to it: an Equality table tries the one entry with the exact
//! key; an untraced Euclidean or Manhattan table within the box tree's
//! limits asks the tree (`box_tree`) for the least passing distance and
//! every passing entry at it, and [`Matching::fold`] picks among them what
//! the walk would; every other table, and every traced query, is walked
//! as Tensile walks it. GridBased tables go to `grid`. May assume: the
//! table is sorted as Tensile sorts it at load, its groups are built
//! (`Matching::group`), and it has a box tree only where the tree's answer
//! is exact. Costs: the walk reads entries until the first coordinate
//! alone rules out improvement (computing a distance only for entries
//! whose group is not known to fail); the tree search reads the few leaves
//! near the key; the buffers come from `memo` and a reused thread-local
//! vector.

use crate::box_tree::FAILS;
use crate::error::Result;
use crate::library::{Distance, MAX_ARITY, Matching, Target};

use super::judge::Judge;
use super::memo::{give_state, take_state};
use super::query::{Hit, Query, SolutionId};

thread_local! {
    /// The tree search's entries at the least distance (reused).
    static AT: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Matching {
    /// The table's answer for `q` (see the module docs), with a memo
    /// taken from `memo`'s buffers for the search.
    pub(super) fn select<'c>(
        &'c self,
        file: &'c crate::File,
        q: &mut Query<'_>,
    ) -> Result<Option<Hit<'c>>> {
        let mut buf = [0i64; MAX_ARITY];
        let key = &mut buf[..self.arity()];
        for (slot, p) in key.iter_mut().zip(self.properties.iter()) {
            match p.value(q.problem) {
                Some(v) => *slot = v as i64,
                None => return Ok(None),
            }
        }
        let key = &*key;
        if let Some(t) = q.trace.as_deref_mut() {
            t.raw(&format!("Matching ({}): key {key:?}", self.distance.name()));
        }
        if self.len() == 0 {
            return Ok(None);
        }
        let known = q
            .leaves
            .filter(|(known, leaves)| {
                std::ptr::eq(*known, file) && leaves.len() == file.leaves.len()
            })
            .map(|(_, leaves)| leaves);
        let mut state = take_state(self.solutions.len(), file.leaves.len(), known);
        let result = self.search(file, q, key, &mut state);
        give_state(state);
        result
    }

    fn search<'c>(
        &'c self,
        file: &'c crate::File,
        q: &mut Query<'_>,
        key: &[i64],
        state: &mut [u8],
    ) -> Result<Option<Hit<'c>>> {
        if self.distance == Distance::GridBased {
            return self.grid_search(file, q, key, state);
        }
        if self.distance == Distance::Equality {
            let start = self.lower_bound(key);
            if start < self.len() && self.key(start) == key {
                return Ok(self
                    .transform(file, start, q, state)?
                    .map(|h| Hit { fitness: 0.0, ..h }));
            }
            return Ok(None);
        }
        if q.trace.is_none()
            && let Some(boxes) = self.boxes.as_ref().filter(|boxes| boxes.accepts(key))
        {
            let (groups, leaf_state) = state.split_at_mut(self.solutions.len());
            let mut j = Judge::new(self, file, &*q, leaf_state);
            let mut judge = |l: usize| j.judge(l);
            return Ok(AT.with(|at| {
                let at = &mut at.borrow_mut();
                let euclidean = self.distance == Distance::Euclidean;
                let dstar = boxes.nearest(key, euclidean, groups, &mut judge, at)?;
                self.fold(file, key, dstar, at)
            }));
        }
        let start = self.lower_bound(key);
        let mut best = Best {
            hit: None,
            distance: f64::MAX,
            speed: 0.0,
        };
        for i in start..self.len() {
            if !self.visit(file, q, key, i, &mut best, state)? {
                break;
            }
        }
        for i in (0..start).rev() {
            if !self.visit(file, q, key, i, &mut best, state)? {
                break;
            }
        }
        Ok(best.hit.map(|h| Hit {
            fitness: best.distance,
            ..h
        }))
    }

    /// What Tensile's walk returns, given the least distance D* among
    /// passing entries and all passing entries at D* (sorted positions).
    ///
    /// Why: the walk can only stop at an entry whose first-coordinate term
    /// alone reaches the best distance so far, and that term never exceeds
    /// an entry's whole distance, so no walk stops before the first entry
    /// (in visiting order: rightward from the lower bound, then leftward)
    /// at D*. After it, a later entry at D* replaces it only with a
    /// strictly higher speed, and only if the walk still reaches it: if
    /// its first-coordinate term is below D* (or its key is the query).
    /// An entry is right of the lower bound exactly when its key is not
    /// less than the query, so the order needs no search for the bound.
    fn fold<'c>(
        &'c self,
        file: &'c crate::File,
        key: &[i64],
        dstar: f64,
        at: &mut [u32],
    ) -> Option<Hit<'c>> {
        let n = self.len();
        at.sort_unstable_by_key(|&i| {
            let i = i as usize;
            if self.key(i) >= key { i } else { 2 * n - i }
        });
        let mut best: Option<(SolutionId, f64)> = None;
        for (rank, &i) in at.iter().enumerate() {
            let (i, k) = (i as usize, self.key(i as usize));
            let first = key[0].wrapping_sub(k[0]) as f64;
            let first = match self.distance {
                Distance::Euclidean => first * first,
                _ => first.abs(),
            };
            let reachable = rank == 0 || k == key || first < dstar;
            if reachable
                && best.is_none_or(|(_, speed)| self.speeds[i] > speed)
                && let Target::Solution(id) = self.targets[i]
            {
                best = Some((id, self.speeds[i]));
            }
        }
        best.map(|(id, _)| Hit {
            file,
            id,
            fitness: dstar,
        })
    }

    /// One step of the walk; false when the walk should stop.
    fn visit<'c>(
        &'c self,
        file: &'c crate::File,
        q: &mut Query<'_>,
        key: &[i64],
        i: usize,
        best: &mut Best<'c>,
        state: &mut [u8],
    ) -> Result<bool> {
        let k = self.key(i);
        if best.hit.is_some() && !self.distance.improvement_possible(key, k, best.distance) {
            return Ok(false);
        }
        if matches!(self.targets[i], Target::Solution(_))
            && state[self.local[i] as usize] == FAILS
            && q.trace.is_none()
        {
            return Ok(true);
        }
        let d = self.distance.distance(key, k);
        let speed = self.speeds[i];
        if (d < best.distance || (d == best.distance && speed > best.speed))
            && let Some(hit) = self.transform(file, i, q, state)?
        {
            *best = Best {
                hit: Some(hit),
                distance: d,
                speed,
            };
        }
        Ok(true)
    }
}

/// The walk's answer so far: the entry, its distance and its speed.
struct Best<'c> {
    hit: Option<Hit<'c>>,
    distance: f64,
    speed: f64,
}

#[cfg(test)]
mod tests {
    use crate::Catalog;
    use crate::hardware::Hardware;
    use crate::library::select::test_support::{Rng, map, s, solution};
    use crate::library::{Matching, Node, SolutionId, Target};
    use crate::msgpack::Value;
    use crate::problem::{DataType, Problem, Transpose};

    /// A catalog whose root is one Matching table over (M, N, K).
    fn matching_catalog(sols: Vec<Value>, table: Vec<Value>, distance: &str) -> Catalog {
        let prop = |t: &str| map(vec![("type", s(t)), ("index", Value::UInt(0))]);
        let properties = Value::Array(vec![
            prop("FreeSizeA"),
            prop("FreeSizeB"),
            prop("BoundSize"),
        ]);
        let tree = map(vec![
            ("solutions", Value::Array(sols)),
            (
                "library",
                map(vec![
                    ("type", s("Matching")),
                    ("properties", properties),
                    ("table", Value::Array(table)),
                    ("distance", s(distance)),
                ]),
            ),
        ]);
        let mut w = crate::msgpack::Writer::new();
        tree.write(&mut w);
        Catalog::from_msgpack(&w.out).unwrap()
    }

    /// Tensile's search as its host library writes it: no tree, no memo,
    /// each candidate's predicates evaluated when it could win.
    fn reference(
        m: &Matching,
        file: &crate::File,
        q: &Problem,
        hw: &Hardware,
    ) -> Option<(SolutionId, f64)> {
        let key: Vec<i64> = m
            .properties
            .iter()
            .map(|p| p.value(q).unwrap_or(0) as i64)
            .collect();
        let start = m.lower_bound(&key);
        let (mut best, mut best_d, mut best_speed) = (None, f64::MAX, 0.0);
        let mut visit = |i: usize, best: &mut Option<SolutionId>, best_d: &mut f64| -> bool {
            let k = m.key(i);
            if best.is_some() && !m.distance.improvement_possible(&key, k, *best_d) {
                return false;
            }
            let d = m.distance.distance(&key, k);
            if (d < *best_d || (d == *best_d && m.speeds[i] > best_speed))
                && let Target::Solution(id) = m.targets[i]
            {
                let sol = &file.solutions[id as usize];
                if sol.holds(hw, q) {
                    (*best, *best_d, best_speed) = (Some(id), d, m.speeds[i]);
                }
            }
            true
        };
        for i in start..m.len() {
            if !visit(i, &mut best, &mut best_d) {
                break;
            }
        }
        for i in (0..start).rev() {
            if !visit(i, &mut best, &mut best_d) {
                break;
            }
        }
        best.map(|b| (b, best_d))
    }

    /// The tree search answers exactly what Tensile's plain walk answers,
    /// on random tables full of ties, for both distances it serves; Ratio
    /// takes the memoised plain walk. The later rounds have more than 64
    /// solution groups (their summaries share bits), few distinct keys
    /// (each repeated across many leaves of the tree), keys beyond the
    /// tree's limits (the table is walked), and queries beyond them.
    #[test]
    fn searches_agree_with_tensiles_plain_walk() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let hw = Hardware::new("gfx90a", 104, None);
        let grid: &[u64] = &[1, 2, 3, 64, 100, 128, 256, 1000];
        let few: &[u64] = &[100, 300];
        let rounds = [
            ("Euclidean", 40, 1u64, grid),
            ("Manhattan", 40, 1, grid),
            ("Ratio", 40, 1, grid),
            ("Euclidean", 40, 1, grid),
            ("Euclidean", 40, 1, grid),
            ("Euclidean", 200, 1, grid),
            ("Manhattan", 200, 1, grid),
            ("Euclidean", 40, 1, few),
            ("Manhattan", 200, 1, few),
            ("Euclidean", 40, 1 << 25, grid),
        ];
        for (round, &(distance, kernels, scale, grid)) in rounds.iter().enumerate() {
            let mut searched = 0;
            let sols: Vec<Value> = (0..kernels)
                .map(|i| {
                    let (m, min_k) = if kernels > 64 {
                        // Mostly distinct conditions: many groups.
                        (1 + i % 5, (i / 5) * 37)
                    } else {
                        (
                            [1, 2, 3, 4, 7, 9, 11][rng.below(7) as usize],
                            rng.below(6) * 200,
                        )
                    };
                    solution(i, m, min_k)
                })
                .collect();
            let entries = 300 + rng.below(700);
            let table: Vec<Value> = (0..entries)
                .map(|_| {
                    let key = (0..3).map(|c| {
                        let x = grid[rng.below(grid.len() as u64) as usize] * (1 + rng.below(2));
                        Value::UInt(if c == 1 { x * scale } else { x })
                    });
                    map(vec![
                        ("key", Value::Array(key.collect())),
                        ("index", Value::UInt(rng.below(kernels))),
                        (
                            "speed",
                            Value::Float([0.0, 1.0, 2.0][rng.below(3) as usize]),
                        ),
                    ])
                })
                .collect();
            let catalog = matching_catalog(sols, table, distance);
            let Node::Matching(m) = &catalog.file().root else {
                panic!()
            };
            assert_eq!(
                m.boxes.is_some(),
                distance != "Ratio" && scale == 1,
                "round {round}: the tree is built exactly for tables within its limits"
            );
            if kernels > 64 {
                assert!(
                    m.solutions.len() > 64,
                    "round {round}: {} groups",
                    m.solutions.len()
                );
            }
            for j in 0..400 {
                let size = |rng: &mut Rng| 1 + rng.below(1200);
                let mut n = size(&mut rng);
                if j % 50 == 49 {
                    n += 1 << 24; // beyond the tree's limit
                }
                let p = Problem::gemm(
                    Transpose::None,
                    Transpose::None,
                    size(&mut rng),
                    n,
                    size(&mut rng),
                    DataType::Float,
                );
                let key = [p.m as i64, n as i64, p.k as i64];
                searched += usize::from(m.boxes.as_ref().is_some_and(|boxes| boxes.accepts(&key)));
                let expected = reference(m, catalog.file(), &p, &hw);
                let got = catalog
                    .select(&p, &hw)
                    .unwrap()
                    .map(|s| (s.solution.index as u32, s.fitness));
                assert_eq!(
                    got, expected,
                    "round {round} ({distance}), {}x{}x{}",
                    p.m, p.n, p.k
                );
            }
            if m.boxes.is_some() {
                assert_eq!(searched, 392, "round {round}: queries the tree answered");
            }
        }
    }

    /// Tensile's early exit, reproduced by the tree search: two entries at
    /// the least distance, the later one faster, but the walk stops on
    /// reaching it (its first coordinate alone is at that distance), so
    /// the earlier one wins.
    #[test]
    fn a_long_walk_stops_where_tensiles_does_before_a_faster_equal_entry() {
        let entry = |key: [u64; 3], index: u64, speed: f64| {
            map(vec![
                (
                    "key",
                    Value::Array(key.iter().map(|&k| Value::UInt(k)).collect()),
                ),
                ("index", Value::UInt(index)),
                ("speed", Value::Float(speed)),
            ])
        };
        // Solution 0 fails for M = 100 (not a multiple of 7); 1 and 2 pass.
        let sols = vec![solution(0, 7, 0), solution(1, 1, 0), solution(2, 1, 0)];
        let mut table: Vec<Value> = (0..200).map(|j| entry([100, 20 + j, 10], 0, 9.0)).collect();
        table.push(entry([110, 10, 10], 1, 1.0));
        table.push(entry([90, 10, 10], 2, 5.0));
        let catalog = matching_catalog(sols, table, "Euclidean");
        let Node::Matching(m) = &catalog.file().root else {
            panic!()
        };
        let hw = Hardware::new("gfx90a", 104, None);
        let p = Problem::gemm(
            Transpose::None,
            Transpose::None,
            100,
            10,
            10,
            DataType::Float,
        );
        assert!(m.boxes.is_some());
        assert_eq!(reference(m, catalog.file(), &p, &hw), Some((1, 100.0)));
        let got = catalog
            .select(&p, &hw)
            .unwrap()
            .map(|s| (s.solution.index, s.fitness));
        assert_eq!(
            got,
            Some((1, 100.0)),
            "the entry at (110, 10, 10), reached first"
        );
    }
}
