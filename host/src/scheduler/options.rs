//! The sizes and modes a [`PhysicalDevice`](super::PhysicalDevice)'s scheduler is made
//! with.

use crate::command_buffer::IssueMode;

/// Sizes of a [`PhysicalDevice`](super::PhysicalDevice)'s scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysicalDeviceOptions {
    /// Slots of the mailbox ring (a power of two): entries submitted and
    /// not yet reclaimed.
    pub entries: u32,
    /// Bytes of the kernarg ring: the entries' wait and signal lists and
    /// command-buffer issue state.
    pub kernarg_bytes: usize,
    /// Packets of each execution queue (a power of two).
    pub queue_size: u32,
    /// Execution queues (1 to 4): the tick deals the entries out to them
    /// in turn, so independent entries run side by side.
    pub execution_queues: u32,
    /// How command buffers' blocks are issued.
    pub issue_mode: IssueMode,
    /// Records of the device trace ring (a power of two; 0: no tracing):
    /// ticks, entries issued, started and retired, blocks, with device
    /// timestamps, drained by the service thread when the device asks and
    /// every few milliseconds ([`PhysicalDevice::write_trace`](super::PhysicalDevice::write_trace)).
    pub trace_records: u32,
    /// Block sizes of the device block pool's small and large buckets
    /// (bytes, small < large): an [`DeviceQueue::alloca`](super::DeviceQueue::alloca) takes a block of
    /// the smaller one that holds it; more than the large size is refused.
    pub pool_block_sizes: [u64; 2],
    /// Most blocks each bucket holds: the pool grows (the device asks the
    /// host service) up to this, then allocations that find no free block
    /// fail with `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    pub pool_blocks: u32,
}

impl Default for PhysicalDeviceOptions {
    fn default() -> Self {
        Self {
            entries: 1024,
            kernarg_bytes: 1 << 20,
            queue_size: 1024,
            execution_queues: 1,
            issue_mode: IssueMode::Auto,
            trace_records: 0,
            pool_block_sizes: [64 << 10, 16 << 20],
            pool_blocks: 256,
        }
    }
}
