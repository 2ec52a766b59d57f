//! The device block pool on the host's side: the pool's layout in
//! host-visible memory (a [`BlockPool`] of two buckets and their free
//! arrays), every block the host allocated for it, and the host's two
//! jobs — growing a bucket when the device asks
//! ([`HostRequest::GROW`](aqueduct_abi::scheduler::HostRequest::GROW)) and
//! trimming free blocks when the user asks. The device's tick takes and
//! gives blocks (`aqueduct_device::scheduler::pool`); both sides take a
//! bucket's lock for its free stack.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Mutex;

use aqueduct_abi::atomic::{AcqRel, Release, System};
use aqueduct_abi::scheduler::{BlockPool, PoolBucket};
use aqueduct_abi::view::View;
use aqueduct_device::scheduler::{Requester, give_block, with_bucket};
use zerocopy::{FromZeros, IntoBytes};

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, HostBuffer, MemoryPool, PoolKind};
use crate::queue::Queue;

use super::options::PhysicalDeviceOptions;

/// Blocks the pool's growth adds at a time, small and large bucket.
const GROW_BLOCKS: [u32; 2] = [16, 1];

/// One bucket of a device's block pool ([`PhysicalDevice::pool_stats`](super::PhysicalDevice::pool_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes per block.
    pub block_size: u64,
    /// Blocks the host allocated for it (grown, not trimmed).
    pub blocks: u64,
    /// Of those, the ones free.
    pub free: u64,
}

/// The device block pool's memory on the host's side: the [`BlockPool`]
/// and its buckets' free arrays, and every block the host allocated.
pub(super) struct PoolMemory {
    /// The [`BlockPool`], then each bucket's `[u64; capacity]`.
    layout: HostBuffer<u8>,
    /// Where blocks come from: the GPU's coarse-grained memory.
    source: MemoryPool,
    /// Every block the host allocated, by address, with its bucket.
    blocks: Mutex<HashMap<u64, (usize, DeviceBuffer<u8>)>>,
}

impl PoolMemory {
    /// The block pool of a new device: its layout in host-visible memory
    /// (the buckets' sizes and empty free arrays of `options.pool_blocks`)
    /// and no block yet; the device asks for blocks as allocations need
    /// them.
    pub(super) fn new(
        agent: &Agent,
        execution: &Queue,
        options: &PhysicalDeviceOptions,
    ) -> Result<Self> {
        let [small, large] = options.pool_block_sizes;
        if small == 0 || small >= large || options.pool_blocks == 0 {
            return Err(Error::InvalidArgument {
                what: "device options",
                problem: format!(
                    "pool block sizes {small} and {large} bytes (0 < small < large), {} blocks \
                     per bucket (at least 1)",
                    options.pool_blocks
                ),
            });
        }
        let capacity = u64::from(options.pool_blocks);
        let arrays_at = size_of::<BlockPool>();
        let bytes = arrays_at + 2 * 8 * capacity as usize;
        let mut layout = execution.kernarg_pool().alloc_host::<u8>(bytes)?;
        layout.fill(0);
        let mut p = BlockPool::new_zeroed();
        for (b, size) in [small, large].into_iter().enumerate() {
            p.buckets[b].block_size = size;
            p.buckets[b].capacity = capacity;
            p.buckets[b].free = layout.address() + (arrays_at + 8 * capacity as usize * b) as u64;
        }
        layout[..size_of::<BlockPool>()].copy_from_slice(p.as_bytes());
        Ok(Self {
            layout,
            source: agent.memory_pool(PoolKind::CoarseGrained)?,
            blocks: Mutex::new(HashMap::new()),
        })
    }

    /// The pool's device address (the scheduler state's `pool`).
    pub(super) fn address(&self) -> u64 {
        self.layout.address()
    }

    /// The pool's layout, as the device's tick sees it.
    fn pool(&self) -> View<'_, BlockPool> {
        // SAFETY: the layout buffer starts with the BlockPool written in
        // `new` (64-byte aligned, kept by `self`), whose buckets' free
        // arrays follow it in the same buffer; the host and the tick keep
        // the pool's protocol (the buckets' locks, atomic growth words).
        unsafe {
            View::from_ptr(NonNull::new_unchecked(
                self.layout.address() as *mut BlockPool
            ))
        }
    }

    /// Bucket `b` (0: small, 1: large).
    fn bucket(&self, b: usize) -> View<'_, PoolBucket> {
        self.pool()
            .buckets()
            .get(b)
            .expect("a block pool has two buckets")
    }

    /// Bytes per block of the large bucket: the largest allocation.
    pub(super) fn largest(&self) -> u64 {
        self.bucket(1).block_size().get()
    }

    /// Grows bucket `b` by [`GROW_BLOCKS`] (up to its capacity), or marks
    /// it exhausted when it cannot; the caller then requests the tick that
    /// serves the allocations waiting on it.
    pub(super) fn grow(&self, b: usize, r: &mut impl Requester) {
        let bucket = self.bucket(b);
        let size = bucket.block_size().get();
        let capacity = bucket.capacity().get();
        let mut blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        let owned = blocks.values().filter(|(bucket, _)| *bucket == b).count() as u64;
        let mut added = 0;
        for _ in 0..u64::from(GROW_BLOCKS[b]).min(capacity - owned) {
            let Ok(block) = self.source.alloc_device::<u8>(size as usize) else {
                break;
            };
            // `owned + added` stays below the capacity: the stack has room.
            if !give_block(bucket, block.address(), r) {
                break;
            }
            blocks.insert(block.address(), (b, block));
            added += 1;
        }
        drop(blocks);
        let growth = if added == 0 { PoolBucket::EXHAUSTED } else { 0 };
        bucket.growth().store(growth, Release, System);
    }

    /// What the pool holds, small bucket then large.
    pub(super) fn stats(&self) -> [PoolStats; 2] {
        let blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        [0, 1].map(|b| {
            let bucket = self.bucket(b);
            PoolStats {
                block_size: bucket.block_size().get(),
                blocks: blocks.values().filter(|(bucket, _)| *bucket == b).count() as u64,
                // Read without the bucket's lock: a moment's count.
                free: bucket.count().observe(),
            }
        })
    }

    /// Gives the pool's free blocks back to the runtime and returns the
    /// bytes freed; blocks in use stay. A bucket that could not grow
    /// before may grow again.
    pub(super) fn trim(&self, r: &mut impl Requester) -> u64 {
        let mut freed = Vec::new();
        for b in 0..2 {
            let bucket = self.bucket(b);
            // Under the bucket's lock: the stack's blocks are the free ones.
            let taken: Vec<u64> = with_bucket(bucket, r, |stack| {
                std::iter::from_fn(|| stack.pop()).collect()
            });
            let mut blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
            freed.extend(taken.iter().filter_map(|a| blocks.remove(a)));
            drop(blocks);
            let _ = bucket
                .growth()
                .compare_exchange(PoolBucket::EXHAUSTED, 0, AcqRel, System);
        }
        freed.iter().map(|(_, block)| block.len() as u64).sum()
    }
}
