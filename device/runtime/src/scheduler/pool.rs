//! The block pool's buckets ([`aqueduct_abi::scheduler::BlockPool`]):
//! fixed-size blocks on a free stack per bucket, which the tick pops and
//! pushes (ALLOCA, DEALLOCA) and the host's service fills when it grows a
//! bucket and empties when it trims one, each under the bucket's lock
//! (system-scope acquire and release).

use aqueduct_abi::atomic::{Acquire, Release, System};
use aqueduct_abi::scheduler::{BlockPool, PoolBucket};
use aqueduct_abi::view::View;

use super::requester::Requester;

/// The bucket of `pool` that serves `length` bytes: the smallest whose
/// blocks hold it; none for 0 bytes, more than the large blocks, or no
/// pool.
pub fn bucket_for<'a>(
    pool: Option<View<'a, BlockPool>>,
    length: u64,
) -> Option<(u64, View<'a, PoolBucket>)> {
    let pool = pool?;
    if length == 0 {
        return None;
    }
    (0..2u64).find_map(|b| {
        let bucket = pool.buckets().get(b as usize)?;
        (length <= bucket.block_size().get()).then_some((b, bucket))
    })
}

/// Runs `f` on the free-block stack of `bucket` (its array's address, its
/// count, its capacity) under the bucket's lock.
pub fn with_bucket<R>(
    bucket: View<'_, PoolBucket>,
    r: &mut impl Requester,
    f: impl FnOnce(&mut FreeStack<'_>) -> R,
) -> R {
    let lock = bucket.lock();
    while lock.compare_exchange(0, 1, Acquire, System).is_err() {
        r.pause();
    }
    // The lock makes the plain accesses of `free` and `count` exclusive
    // (the host takes it too).
    let mut stack = FreeStack {
        blocks: bucket.free().get(),
        count: bucket.count().get(),
    };
    let out = f(&mut stack);
    bucket.count().set(stack.count);
    lock.store(0, Release, System);
    out
}

/// A bucket's free blocks while its lock is held ([`with_bucket`]).
pub struct FreeStack<'a> {
    blocks: aqueduct_abi::view::List<'a, u64>,
    count: u64,
}

impl FreeStack<'_> {
    /// Free blocks on the stack.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Pushes `block`; false if the stack is full.
    pub fn push(&mut self, block: u64) -> bool {
        let Some(slot) = self.blocks.get(self.count) else {
            return false;
        };
        slot.set(block);
        self.count += 1;
        true
    }

    /// Pops a free block, if there is one.
    pub fn pop(&mut self) -> Option<u64> {
        let top = self.blocks.get(self.count.checked_sub(1)?)?;
        self.count -= 1;
        Some(top.get())
    }
}

/// Pushes `block` on the free stack of `bucket`; false if it is full.
pub fn give_block(bucket: View<'_, PoolBucket>, block: u64, r: &mut impl Requester) -> bool {
    with_bucket(bucket, r, |stack| stack.push(block))
}

/// Pops a free block of `bucket`, if it has one.
pub fn take_block(bucket: View<'_, PoolBucket>, r: &mut impl Requester) -> Option<u64> {
    with_bucket(bucket, r, |stack| stack.pop())
}
