//! How an untraced table search judges a solution group for one query:
//! through the group's compiled conditions (`conditions`) when it has
//! them, else the long way ([`single_fast`]).
//!
//! A [`Judge`] learns each of the table's leaves once per query (through
//! the search's memo of the file's leaves, which a plan may have filled
//! in), rejects a group that needs a leaf known to fail without evaluating
//! anything, and can first reject every group that needs a failing common
//! leaf ([`Judge::prune`]). May assume: the table's groups were built
//! (`Matching::group`), and `leaf_state` is the search's leaf memo, one
//! slot per leaf of the file. Costs: a few hundred bytes of stack per
//! search; each leaf and hardware predicate evaluated at most once; a
//! compiled group judged in a few word operations.

use crate::box_tree::{FAILS, PASSES, UNKNOWN};
use crate::library::Matching;

use super::conditions::{HW_PREDICATES, MASK_WORDS, NO_HW, PRUNE_WORDS};
use super::query::Query;
use super::single::single_fast;

/// What a search knows of its table's leaves for the current query, and
/// how it judges a group.
pub(super) struct Judge<'a, 'q> {
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
    pub(super) fn new(
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
    pub(super) fn prune(&mut self) -> usize {
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
    pub(super) fn left(&self) -> impl Iterator<Item = usize> + use<> {
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
    pub(super) fn judge(&mut self, l: usize) -> bool {
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
