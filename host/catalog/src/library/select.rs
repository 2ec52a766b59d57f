//! Selection: how each node answers a query, with Tensile's rules (see
//! [`super`]), the tree search that answers large Euclidean and Manhattan
//! tables, and the `TENSILE_DB`-style trace.

use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::box_tree::{FAILS, PASSES, UNKNOWN};
use crate::error::Result;
use crate::hardware::Hardware;
use crate::predicate::{Predicate, Trace};
use crate::solution::TaskSizes;

/// Most words a group's mask may take (1,024 distinct leaves per table;
/// rocBLAS's tables use at most 114, hipBLASLt 7.1.1's up to 736).
const MASK_WORDS: usize = 16;

/// Most distinct hardware predicates a table's compiled groups may have
/// (TensileLite's tables: one; rocBLAS's: TruePred only).
const HW_PREDICATES: usize = 8;

/// Most groups a table's common leaves keep a bit set of users for
/// (64 per word); larger tables judge every group one by one.
const PRUNE_WORDS: usize = 32;

/// Most common leaves a table keeps user sets for.
const COMMON_LEAVES: usize = 64;

/// A search that finds no answer in its first cell walks on only when more
/// solution groups than this survive the common leaves: fewer are judged
/// outright faster than a walk over cells.
const FEW_GROUPS: usize = 64;

/// A group's hardware predicate: none to test (TruePred).
const NO_HW: u8 = u8::MAX;

/// Entries an untraced GridBased search walks, after its first cell,
/// before it judges every solution group instead (12 in this crate's unit
/// tests, whose tables are small).
const GRID_WALK_ENTRIES: usize = if cfg!(test) { 12 } else { 128 };

/// A GridBased key's coordinates: M, N, batch, K.
const GM: usize = 0;
const GN: usize = 1;
const GB: usize = 2;
const GK: usize = 3;

/// A table's solution groups in the form a search judges fastest. Most
/// groups' conditions compile to a conjunction of predicate leaves (the
/// hardware predicate is TruePred and the problem predicate an And of
/// leaves): such a group is a bit mask over the distinct leaves the
/// table's groups use, `words` words per group, next to each other. A
/// search then learns each table leaf once per query, rejects a group
/// needing a leaf known to fail without evaluating anything, and reads one
/// small record per group. The other groups are judged the long way.
#[derive(Debug, Default)]
pub(super) struct Conditions {
    /// Table leaf (bit 64w + b) → the file's leaf id.
    leaves: Box<[u16]>,
    words: usize,
    masks: Box<[u64]>,
    /// Per group: whether its mask (with `hw` and its representative's task
    /// predicate) is its whole condition.
    compiled: Box<[bool]>,
    /// Per group: its hardware predicate, an index into `hw_predicates`
    /// ([`NO_HW`] for TruePred).
    hw: Box<[u8]>,
    /// The distinct hardware predicates of the compiled groups.
    hw_predicates: Box<[crate::predicate::HardwarePredicate]>,
    /// Per group: what its task predicate (TensileLite's; rocBLAS's
    /// solutions have none) reads, when it checks the workspace.
    task: Box<[Option<TaskSizes>]>,
    /// The table leaves (bits) that many compiled groups need, most used
    /// first: one failing rejects all its users at once
    /// ([`Judge::prune`]).
    common: Box<[u16]>,
    /// Per common leaf, the groups that need it: `group_words` words each.
    users: Box<[u64]>,
    /// Words of a set of groups.
    group_words: usize,
}

impl Conditions {
    fn build(list: &[crate::Solution], groups: &[SolutionId]) -> Conditions {
        // Hardware predicates, each tested once per query.
        let mut hw_predicates: Vec<crate::predicate::HardwarePredicate> = Vec::new();
        let hw: Box<[u8]> = groups
            .iter()
            .map(
                |&id| match list.get(id as usize).map(|s| &s.hardware_predicate) {
                    Some(Predicate::True) | None => NO_HW,
                    Some(p) => match hw_predicates.iter().position(|q| q == p) {
                        Some(i) => i as u8,
                        None if hw_predicates.len() < HW_PREDICATES => {
                            hw_predicates.push(p.clone());
                            (hw_predicates.len() - 1) as u8
                        }
                        None => NO_HW - 1,
                    },
                },
            )
            .collect();
        let task: Box<[Option<TaskSizes>]> = groups
            .iter()
            .map(|&id| {
                list.get(id as usize)
                    .filter(|s| {
                        s.task_predicate
                            .as_ref()
                            .is_some_and(|t| t.checks_workspace())
                    })
                    .map(|s| TaskSizes::of(&s.size_mapping))
            })
            .collect();
        let hw_ok = |g: usize| hw[g] == NO_HW || (hw[g] as usize) < hw_predicates.len();
        let conjunction = |g: usize| {
            list.get(groups[g] as usize)
                .filter(|_| hw_ok(g))
                .and_then(|s| s.problem_predicate.leaf_ids.as_deref())
        };
        // File leaf id → table leaf + 1.
        let mut table_leaf: Vec<u32> = Vec::new();
        let mut leaves = Vec::new();
        for ids in (0..groups.len()).filter_map(conjunction) {
            for &leaf in ids {
                let leaf = leaf as usize;
                if table_leaf.len() <= leaf {
                    table_leaf.resize(leaf + 1, 0);
                }
                if table_leaf[leaf] == 0 {
                    leaves.push(leaf as u16);
                    table_leaf[leaf] = leaves.len() as u32;
                }
            }
        }
        let words = leaves.len().div_ceil(64);
        if words > MASK_WORDS {
            return Conditions {
                compiled: vec![false; groups.len()].into_boxed_slice(),
                hw,
                task,
                ..Conditions::default()
            };
        }
        let mut masks = vec![0u64; groups.len() * words];
        let mut uses = vec![0usize; leaves.len()];
        let compiled: Box<[bool]> = (0..groups.len())
            .map(|g| {
                let ids = conjunction(g);
                for &leaf in ids.unwrap_or_default() {
                    let bit = table_leaf[leaf as usize] as usize - 1;
                    masks[g * words + bit / 64] |= 1 << (bit % 64);
                    uses[bit] += 1;
                }
                ids.is_some()
            })
            .collect();
        // Common leaves: needed by at least an eighth of the groups (and
        // two), most used first.
        let group_words = groups.len().div_ceil(64);
        let mut common: Vec<u16> = Vec::new();
        if group_words <= PRUNE_WORDS {
            common = (0..leaves.len())
                .filter(|&b| uses[b] >= 2 && uses[b] * 8 >= groups.len())
                .map(|b| b as u16)
                .collect();
            common.sort_by_key(|&b| (std::cmp::Reverse(uses[b as usize]), b));
            common.truncate(COMMON_LEAVES);
        }
        let mut users = vec![0u64; common.len() * group_words];
        for (k, &b) in common.iter().enumerate() {
            let (w, bit) = (b as usize / 64, 1u64 << (b % 64));
            for g in (0..groups.len()).filter(|&g| masks[g * words + w] & bit != 0) {
                users[k * group_words + g / 64] |= 1 << (g % 64);
            }
        }
        Conditions {
            leaves: leaves.into_boxed_slice(),
            words,
            masks: masks.into_boxed_slice(),
            compiled,
            hw,
            hw_predicates: hw_predicates.into_boxed_slice(),
            task,
            common: common.into_boxed_slice(),
            users: users.into_boxed_slice(),
            group_words,
        }
    }
}

/// What a search knows of its table's leaves for the current query, and
/// how it judges a group.
struct Judge<'a, 'q> {
    table: &'a Matching,
    file: &'a crate::File,
    q: &'a Query<'q>,
    leaf_state: &'a mut [u8],
    pass: [u64; MASK_WORDS],
    fail: [u64; MASK_WORDS],
    /// What each of the table's hardware predicates gave for this query.
    hw_state: [u8; HW_PREDICATES],
    /// Groups known to fail (by [`Judge::prune`]).
    dead: [u64; PRUNE_WORDS],
}

impl<'a, 'q> Judge<'a, 'q> {
    fn new(
        table: &'a Matching,
        file: &'a crate::File,
        q: &'a Query<'q>,
        leaf_state: &'a mut [u8],
    ) -> Self {
        Judge {
            table,
            file,
            q,
            leaf_state,
            pass: [0; MASK_WORDS],
            fail: [0; MASK_WORDS],
            hw_state: [UNKNOWN; HW_PREDICATES],
            dead: [0; PRUNE_WORDS],
        }
    }

    /// Whether table leaf `bit` (not yet known to pass) holds for this
    /// query: evaluated once per query and file, and noted in the table's
    /// pass and fail bits.
    fn leaf(&mut self, bit: usize) -> bool {
        let (w, b) = (bit / 64, bit % 64);
        if self.fail[w] & (1 << b) != 0 {
            return false;
        }
        let leaf = self.table.conditions.leaves[bit] as usize;
        let pass = match self.leaf_state[leaf] {
            PASSES => true,
            FAILS => false,
            _ => {
                let pass = self.file.leaves[leaf].eval(self.q.problem);
                self.leaf_state[leaf] = if pass { PASSES } else { FAILS };
                pass
            }
        };
        if pass {
            self.pass[w] |= 1 << b;
        } else {
            self.fail[w] |= 1 << b;
        }
        pass
    }

    /// Rejects, without judging them one by one, the groups that need a
    /// common leaf that fails for this query (a leaf is evaluated only
    /// while a group not yet rejected needs it). Returns how many groups
    /// are left.
    fn prune(&mut self) -> usize {
        let c = &self.table.conditions;
        let gw = c.group_words;
        for (k, &b) in c.common.iter().enumerate() {
            let users = &c.users[k * gw..(k + 1) * gw];
            let (w, bit) = (b as usize / 64, 1u64 << (b % 64));
            if self.pass[w] & bit != 0
                || users.iter().zip(&self.dead).all(|(u, d)| u & !d == 0)
                || self.leaf(b as usize)
            {
                continue;
            }
            self.dead.iter_mut().zip(users).for_each(|(d, u)| *d |= u);
        }
        let dead: u32 = self.dead.iter().map(|d| d.count_ones()).sum();
        self.table.solutions.len() - dead as usize
    }

    /// The groups [`Judge::prune`] left, in order.
    fn left(&self) -> impl Iterator<Item = usize> + use<> {
        let (groups, dead) = (self.table.solutions.len(), self.dead);
        (0..groups.div_ceil(64)).flat_map(move |w| {
            let mut live = !dead.get(w).copied().unwrap_or(0);
            if (w + 1) * 64 > groups {
                live &= (1u64 << (groups % 64)) - 1;
            }
            std::iter::from_fn(move || {
                (live != 0).then(|| {
                    let b = live.trailing_zeros() as usize;
                    live &= live - 1;
                    w * 64 + b
                })
            })
        })
    }

    /// Whether group `l` passes its predicates for this query.
    fn judge(&mut self, l: usize) -> bool {
        if self
            .dead
            .get(l / 64)
            .is_some_and(|d| d & (1 << (l % 64)) != 0)
        {
            return false;
        }
        let c = &self.table.conditions;
        if !c.compiled[l] {
            return single_fast(self.file, self.table.solutions[l], self.q, self.leaf_state);
        }
        let mask = &c.masks[l * c.words..(l + 1) * c.words];
        if mask.iter().zip(&self.fail).any(|(m, f)| m & f != 0) {
            return false;
        }
        for (w, &m) in mask.iter().enumerate() {
            let mut todo = m & !self.pass[w];
            while todo != 0 {
                let b = todo.trailing_zeros() as usize;
                todo &= todo - 1;
                if !self.leaf(w * 64 + b) {
                    return false;
                }
            }
        }
        let hw = c.hw[l] as usize;
        if hw != NO_HW as usize {
            if self.hw_state[hw] == UNKNOWN {
                let pass = c.hw_predicates[hw].eval(self.q.hardware);
                self.hw_state[hw] = if pass { PASSES } else { FAILS };
            }
            if self.hw_state[hw] == FAILS {
                return false;
            }
        }
        c.task[l].is_none_or(|t| t.workspace_fits(self.q.problem))
    }
}

/// A GridBased table's runs of equal M and, within them, its cells (runs
/// of equal N), each with where it starts, and a closing sentinel each:
/// the fast walk searches these few kilobytes instead of the table's keys.
#[derive(Debug, Default)]
pub(super) struct GridIndex {
    /// (M, first entry, first cell), then (i64::MAX, table length, cell count).
    runs: Box<[(i64, u32, u32)]>,
    /// (N, first entry), then (i64::MAX, table length).
    cells: Box<[(i64, u32)]>,
}

impl GridIndex {
    fn build(m: &Matching) -> GridIndex {
        let (mut runs, mut cells) = (Vec::new(), Vec::new());
        for i in 0..m.len() {
            let k = m.key(i);
            let new_run = i == 0 || m.key(i - 1)[GM] != k[GM];
            if new_run {
                runs.push((k[GM], i as u32, cells.len() as u32));
            }
            if new_run || m.key(i - 1)[GN] != k[GN] {
                cells.push((k[GN], i as u32));
            }
        }
        runs.push((i64::MAX, m.len() as u32, cells.len() as u32));
        cells.push((i64::MAX, m.len() as u32));
        GridIndex {
            runs: runs.into_boxed_slice(),
            cells: cells.into_boxed_slice(),
        }
    }

    /// The run holding entry `p`.
    fn run_of(&self, p: usize) -> usize {
        self.runs.partition_point(|r| r.1 as usize <= p) - 1
    }

    /// The cell holding entry `p` of run `r`.
    fn cell_of(&self, r: usize, p: usize) -> usize {
        let (lo, hi) = (self.runs[r].2 as usize, self.runs[r + 1].2 as usize);
        lo + self.cells[lo..hi].partition_point(|c| c.1 as usize <= p) - 1
    }

    /// The first cell of run `r` from cell `c` on whose N is at least the
    /// walk's threshold for `want_n` (the least of it and the run's
    /// largest N, so there is one).
    fn examined_from(&self, r: usize, c: usize, want_n: i64) -> usize {
        let end = self.runs[r + 1].2 as usize;
        let threshold = want_n.min(self.cells[end - 1].0);
        c + self.cells[c..end].partition_point(|x| x.0 < threshold)
    }

    /// The first entry from `from` whose M is at least `m` (or the
    /// table's length).
    fn m_from(&self, from: usize, m: i64) -> usize {
        let len = self.runs[self.runs.len() - 1].1 as usize;
        if from >= len {
            return len;
        }
        let r = self.run_of(from);
        if self.runs[r].0 >= m {
            return from;
        }
        let runs = &self.runs[..self.runs.len() - 1];
        let next = runs.partition_point(|x| x.0 < m);
        runs.get(next).map_or(len, |x| x.1 as usize)
    }
}

impl Matching {
    /// Groups the table's solutions by condition and builds what walks
    /// read about them (needs the solutions themselves).
    pub(super) fn group(&mut self, list: &[crate::Solution]) {
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
            self.grid = GridIndex::build(self);
        }
        self.solutions = solutions.into_boxed_slice();
        self.local = local;
    }

    pub(super) fn arity(&self) -> usize {
        self.properties.len()
    }

    #[inline(always)]
    pub(super) fn key(&self, i: usize) -> &[i64] {
        let n = self.arity();
        &self.keys[i * n..(i + 1) * n]
    }

    pub(super) fn len(&self) -> usize {
        self.speeds.len()
    }

    /// First entry whose key is not less than `q`.
    pub(super) fn lower_bound(&self, q: &[i64]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < q {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

// ---------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------

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

const RULE: &str =
    "--------------------------------------------------------------------------------";

fn header(t: &mut Trace, title: &str) {
    t.raw("");
    t.raw(RULE);
    t.raw(&format!("PREDICATE: {title}"));
    t.raw(RULE);
}

fn footer(t: &mut Trace, pass: bool) {
    t.raw(RULE);
    t.raw(if pass {
        "Result: MATCH"
    } else {
        "Result: NO MATCH"
    });
    t.raw(RULE);
}

impl Node {
    /// The solution this node selects for the query (under `file`, which
    /// holds the node), following Tensile's rules (module docs); `None`
    /// when nothing matches. Errors come from child catalogs that fail to
    /// load.
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

/// [`single`] for a table walk without a trace: a predicate compiled to
/// leaf ids is evaluated through the walk's leaf memo.
fn single_fast(file: &crate::File, id: SolutionId, q: &Query<'_>, leaf_state: &mut [u8]) -> bool {
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
fn single(file: &crate::File, id: SolutionId, q: &mut Query<'_>) -> bool {
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

// A search keeps, per group of the table's solutions, what it knows for
// the current query: not yet asked, passes, fails (`box_tree::UNKNOWN`, `PASSES`,
// `FAILS`), and per predicate leaf of the file the same. A search meets the
// same solutions again and again (rocBLAS's tables hold up to 21 725
// entries for at most 1 631 kernels) and their predicates cannot change
// within a query, so each is evaluated once; entries of a failing group are
// then passed over without computing their distance. The plain walk still
// runs the early-exit test at every entry, as in Tensile, so it stops where
// Tensile's stops.
thread_local! {
    /// The tree search's entries at the least distance (reused).
    static AT: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Spare state buffers (a walk may nest through a Matching entry's
    /// sub-library into another walk).
    static STATES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A state buffer: `groups` unknown groups, then the file's `leaves`
/// leaves, unknown or as `known` (a plan's template) says.
fn take_state(groups: usize, leaves: usize, known: Option<&[u8]>) -> Vec<u8> {
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

fn give_state(v: Vec<u8>) {
    STATES.with(|s| s.borrow_mut().push(v));
}

impl Matching {
    fn transform<'c>(
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
    fn select<'c>(&'c self, file: &'c crate::File, q: &mut Query<'_>) -> Result<Option<Hit<'c>>> {
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

    /// [`Matching::grid_cell`] through the table's [`GridIndex`] (the fast
    /// path; the literal walk keeps the plain search as its reference).
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
    fn grid_search<'c>(
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

struct Best<'c> {
    hit: Option<Hit<'c>>,
    distance: f64,
    speed: f64,
}

impl Forest {
    fn select<'c>(&'c self, file: &'c crate::File, q: &mut Query<'_>) -> Result<Option<Hit<'c>>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgpack::Value;
    use crate::problem::{DataType, Transpose};
    use crate::{Catalog, Hardware};

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    fn map(entries: Vec<(&str, Value)>) -> Value {
        Value::Map(entries.into_iter().map(|(k, v)| (s(k), v)).collect())
    }

    /// A predicate node: `{type, ...extra}`.
    fn typed(ty: &str, extra: Vec<(&str, Value)>) -> Value {
        let mut e = vec![("type", s(ty))];
        e.extend(extra);
        map(e)
    }

    /// A size mapping with every key one needs: macro tile `mt` × `mt`,
    /// `globalSplitU` `gsu`, `workspaceSizePerElemC` `ws`; arrays of ones,
    /// flags false, else 1.
    fn size_mapping(mt: u64, gsu: u64, ws: u64) -> Value {
        map(crate::solution::SIZE_MAPPING_KEYS
            .into_iter()
            .map(|k| {
                let v = match k {
                    "workGroup" | "threadTile" => Value::Array(vec![Value::UInt(1); 3]),
                    "macroTile" => {
                        Value::Array(vec![Value::UInt(mt), Value::UInt(mt), Value::UInt(1)])
                    }
                    "persistentKernelAlongBatch" | "sourceKernel" => Value::Bool(false),
                    "globalSplitU" => Value::UInt(gsu),
                    "workspaceSizePerElemC" => Value::UInt(ws),
                    _ => Value::UInt(1),
                };
                (k, v)
            })
            .collect())
    }

    /// An NN single-precision solution `index` with these predicates and
    /// size mapping.
    fn solution_with(
        index: u64,
        hardware: Value,
        problem: Value,
        task: Option<Value>,
        size_mapping: Value,
    ) -> Value {
        let mut fields = vec![
            ("name", s(&format!("k{index}"))),
            ("index", Value::UInt(index)),
            ("debugKernel", Value::Bool(false)),
            ("hardwarePredicate", hardware),
            ("problemPredicate", problem),
            ("problemType", float_nn_type()),
            ("sizeMapping", size_mapping),
        ];
        if let Some(t) = task {
            fields.push(("taskPredicate", t));
        }
        map(fields)
    }

    /// A solution whose predicate passes when M is a multiple of `m` and
    /// K is at least `min_k`: enough variety for walks to skip, fall back
    /// and tie.
    fn solution(index: u64, m: u64, min_k: u64) -> Value {
        let problem = typed(
            "And",
            vec![(
                "value",
                Value::Array(vec![
                    typed(
                        "SizeMultiple",
                        vec![("index", Value::UInt(0)), ("value", Value::UInt(m))],
                    ),
                    typed("GlobalSplitUCheckMinK", vec![("value", Value::UInt(min_k))]),
                ]),
            )],
        );
        solution_with(
            index,
            typed("TruePred", vec![]),
            problem,
            None,
            size_mapping(1, 1, 1),
        )
    }

    /// The problem type of an NN single-precision GEMM.
    fn float_nn_type() -> Value {
        map(vec![
            (
                "operationIdentifier",
                s("Contraction_l_Ailk_Bljk_Cijk_Dijk"),
            ),
            ("aType", s("Float")),
            ("bType", s("Float")),
            ("cType", s("Float")),
            ("dType", s("Float")),
            ("useBeta", Value::Bool(true)),
            ("highPrecisionAccumulate", Value::Bool(false)),
        ])
    }

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
