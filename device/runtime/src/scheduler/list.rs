//! The one ordered insertion the scheduler's entry lists share: a
//! semaphore's waiters in value order, the tick's ready list in id order.
//! Both are singly linked through a link field of the entries, 0-ended,
//! and owned by whoever links (the semaphore's lock, the tick).

use aqueduct_abi::scheduler::QueueEntry;
use aqueduct_abi::view::{LinkField, View};

/// A link to a queue entry (a list head or an entry's next).
pub(super) type EntryLink<'a> = LinkField<'a, u64, QueueEntry>;

/// Links `entry` into the list at `head` (entries linked by `next`, in
/// `key` order) after every entry whose key is at most its own. The caller
/// owns the list and its entries; `entry` is on no list.
pub(super) fn link_in_order<'a>(
    head: EntryLink<'a>,
    entry: View<'a, QueueEntry>,
    next: impl Fn(View<'a, QueueEntry>) -> EntryLink<'a>,
    key: impl Fn(View<'a, QueueEntry>) -> u64,
) {
    let mine = key(entry);
    let mut prev = None;
    let mut cur = head.get();
    while let Some(c) = cur
        && key(c) <= mine
    {
        prev = Some(c);
        cur = next(c).get();
    }
    next(entry).set(cur);
    match prev {
        None => head.set(Some(entry)),
        Some(p) => next(p).set(Some(entry)),
    }
}
