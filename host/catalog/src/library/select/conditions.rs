//! A table's solution groups compiled, at load, into the form an untraced
//! search judges fastest: for each group that is a conjunction of predicate
//! leaves, a bit mask over the distinct leaves the table's groups use; the
//! table's few hardware predicates; what each task predicate reads; and,
//! for the leaves many groups need, the set of groups needing each (one
//! failing leaf then rejects them all at once).
//!
//! This room holds the layout and its limits; `judge` reads it per query.
//! May assume: the groups are the table's (`groups`), one representative
//! solution each. Beyond the limits below a group is judged the long way
//! (every group of a table that uses too many distinct leaves; a group
//! whose hardware predicate is one too many, or whose problem predicate is
//! not a conjunction of leaves), and a table with too many groups is not
//! pruned: the limits cost speed, never answers. Costs: at load, one pass
//! over the groups' leaves; in memory, `words` words per group and
//! `group_words` words per common leaf.

use crate::predicate::Predicate;
use crate::solution::TaskSizes;

use super::query::SolutionId;

/// Most words a group's mask may take (1,024 distinct leaves per table;
/// rocBLAS's tables use at most 114, hipBLASLt 7.1.1's up to 736).
pub(super) const MASK_WORDS: usize = 16;

/// Most distinct hardware predicates a table's compiled groups may have
/// (TensileLite's tables: one; rocBLAS's: TruePred only).
pub(super) const HW_PREDICATES: usize = 8;

/// Most groups a table's common leaves keep a bit set of users for
/// (64 per word); larger tables judge every group one by one.
pub(super) const PRUNE_WORDS: usize = 32;

/// Most common leaves a table keeps user sets for.
const COMMON_LEAVES: usize = 64;

/// A group's hardware predicate: none to test (TruePred).
pub(super) const NO_HW: u8 = u8::MAX;

/// A table's solution groups in the form a search judges fastest. Most
/// groups' conditions compile to a conjunction of predicate leaves (the
/// hardware predicate is TruePred and the problem predicate an And of
/// leaves): such a group is a bit mask over the distinct leaves the
/// table's groups use, `words` words per group, next to each other. A
/// search then learns each table leaf once per query, rejects a group
/// needing a leaf known to fail without evaluating anything, and reads one
/// small record per group. The other groups are judged the long way.
#[derive(Debug, Default)]
pub(in crate::library) struct Conditions {
    /// Table leaf (bit 64w + b) → the file's leaf id.
    pub(super) leaves: Box<[u16]>,
    pub(super) words: usize,
    pub(super) masks: Box<[u64]>,
    /// Per group: whether its mask (with `hw` and its representative's task
    /// predicate) is its whole condition.
    pub(super) compiled: Box<[bool]>,
    /// Per group: its hardware predicate, an index into `hw_predicates`
    /// ([`NO_HW`] for TruePred).
    pub(super) hw: Box<[u8]>,
    /// The distinct hardware predicates of the compiled groups.
    pub(super) hw_predicates: Box<[crate::predicate::HardwarePredicate]>,
    /// Per group: what its task predicate (TensileLite's; rocBLAS's
    /// solutions have none) reads, when it checks the workspace.
    pub(super) task: Box<[Option<TaskSizes>]>,
    /// The table leaves (bits) that many compiled groups need, most used
    /// first: one failing rejects all its users at once
    /// ([`Judge::prune`](super::judge::Judge::prune)).
    pub(super) common: Box<[u16]>,
    /// Per common leaf, the groups that need it: `group_words` words each.
    pub(super) users: Box<[u64]>,
    /// Words of a set of groups.
    pub(super) group_words: usize,
}

impl Conditions {
    pub(super) fn build(list: &[crate::Solution], groups: &[SolutionId]) -> Conditions {
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
