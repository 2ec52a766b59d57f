//! The device scheduler's shared state: queue entries, timeline semaphores
//! and the kernarg and trace rings. Versioned by [`crate::ABI_VERSION`].
//!
//! Rings follow the HSA queue convention: indices only grow (64-bit, never
//! wrap in practice) and are masked by the power-of-two capacity to find the
//! slot; `write - read` is the occupancy.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::amd_queue::AmdQueue;
use crate::command::{AllocationHandle, Command, Execution};
use crate::hsa::SignalHandle;
use crate::view::{Array, Atomic, AtomicLink, Link, ListOf, Nested, Plain, Ref, View};

open_enum! {
    /// What a [`QueueEntry`] asks the scheduler to do.
    pub struct QueueEntryKind(u8) {
        /// Run the command buffer of the [`crate::command::Execution`] at
        /// `execution`.
        EXECUTE = 1,
        /// Run the single command in `command` (fill, copy, update,
        /// dispatch) without a command buffer.
        COMMAND = 2,
        /// Nothing to run: complete once the waits are satisfied (pure
        /// semaphore signal/wait).
        BARRIER = 3,
        /// Take a block of the scheduler's [`BlockPool`] for the
        /// [`crate::command::AllocationHandle`] at `handle` (its `length`
        /// picks the bucket) and commit its `address`.
        ALLOCA = 4,
        /// Give the block of the committed handle at `handle` back to the
        /// pool; its `address` reads 0 again.
        DEALLOCA = 5,
    }
}

open_enum! {
    /// A queue entry's progress, advanced only by the scheduler.
    pub struct QueueEntryState(u32) {
        /// Written by the submitter; not yet seen by the scheduler.
        SUBMITTED = 0,
        /// Accepted; waiting for its semaphores (on the waiter list of
        /// `waits[wait_cursor]`, or on the ready list once all are reached).
        WAITING = 1,
        /// Its packets are in the execution queue.
        ISSUED = 2,
        /// Done: semaphores signalled, slot reusable.
        RETIRED = 3,
        /// Failed; `status` says why. Its signal semaphores are failed too.
        FAILED = 4,
        /// An issued entry whose end is being recorded, by its retire or by
        /// the host's recovery from a queue fault, whichever claimed it
        /// first (ISSUED → ENDING by compare-and-swap); RETIRED or FAILED
        /// next. The other leaves the entry alone.
        ENDING = 5,
    }
}

atomic_word!(enum QueueEntryState: u32);

layout! {
    /// A semaphore and a payload value: "wait until it reaches `value`" in a
    /// wait list, "advance it to `value`" in a signal list.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct SemaphoreRef {
        /// Device address of the [`DeviceSemaphore`].
        pub semaphore: u64 = 0 => Ref<DeviceSemaphore>,
        /// The payload: waited for until the semaphore's payload is at least
        /// this (wait list), or the one it is advanced to (signal list).
        pub value: u64 = 8 => Plain,
    }
    size = 16,
    align = 8,
    why = "a queue entry's wait and signal lists are arrays of these, which the scheduler reads \
           (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// One submission in a scheduler's mailbox ring: written by the submitter,
    /// then advanced by the scheduler (its tick and the retire of its work).
    ///
    /// Bytes 64..128 are the scheduler's: links of the waiter list the entry
    /// is on, of the scheduler's wake stack and its ready list.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct QueueEntry {
        /// What the entry asks for; says which of `execution`, `command` and
        /// `handle` is read.
        pub kind: QueueEntryKind = 0 => Plain,
        /// Keeps `wait_count` 2-byte aligned; written as zero.
        pub reserved0: u8 = 1,
        /// Entries at `waits`.
        pub wait_count: u16 = 2 => Plain,
        /// Entries at `signals`.
        pub signal_count: u16 = 4 => Plain,
        /// Keeps `state` 4-byte aligned; written as zero.
        pub reserved1: u16 = 6,
        /// [`QueueEntryState`], updated by the scheduler with release stores.
        pub state: QueueEntryState = 8 => Atomic,
        /// Keeps `id` 8-byte aligned; written as zero.
        pub reserved2: u32 = 12,
        /// Submission id: the entry's index in the ring's unbounded sequence.
        pub id: u64 = 16 => Plain,
        /// Device address of `[SemaphoreRef; wait_count]`.
        pub waits: u64 = 24 => ListOf<SemaphoreRef>[wait_count: u16],
        /// Device address of `[SemaphoreRef; signal_count]`.
        pub signals: u64 = 32 => ListOf<SemaphoreRef>[signal_count: u16],
        /// Device address of the [`crate::command::Execution`] of kind
        /// `EXECUTE` (its command buffer, issue states and bindings, prepared
        /// by the submitter in the kernarg ring).
        pub execution: u64 = 40 => Link<Execution>,
        /// Device address of the [`SchedulerState`] the entry belongs to.
        pub scheduler: u64 = 48 => Ref<SchedulerState>,
        /// The kernarg ring's write offset after this entry's reservation:
        /// the read offset once the entry and all before it retired.
        pub kernarg_end: u64 = 56 => Plain,
        /// HSA-style status of a failed entry (0 while fine).
        pub status: u32 = 64 => Plain,
        /// The wait the entry looks at next (`waits[wait_cursor]`): the ones
        /// before it were reached.
        pub wait_cursor: u32 = 68 => Plain,
        /// Next entry (device address, 0: none) on the waiter list of the
        /// semaphore `waits[wait_cursor]` names.
        pub wait_next: u64 = 72 => Link<QueueEntry>,
        /// The payload this entry waits for on that semaphore.
        pub wait_value: u64 = 80 => Plain,
        /// Next entry on the scheduler's wake stack.
        pub wake_next: u64 = 88 => Link<QueueEntry>,
        /// Next entry on the scheduler's ready list (or on a pool bucket's
        /// list of allocations waiting for a block).
        pub ready_next: u64 = 96 => Link<QueueEntry>,
        /// Device address of the [`crate::command::AllocationHandle`] of an
        /// ALLOCA or DEALLOCA entry.
        pub handle: u64 = 104 => Link<AllocationHandle>,
        /// Pads the scheduler's line to 64 bytes, so `command` starts a line;
        /// written as zero.
        pub reserved3: [u64; 2] = 112,
        /// The operation for kind `COMMAND`.
        pub command: Command = 128 => Nested,
    }
    size = 256,
    align = 64,
    why = "one slot of the scheduler's mailbox ring, four 64-byte lines: the submitter writes \
           the first, the scheduler links the second, and the last two are a whole Command, \
           64-byte aligned (aqueduct ABI: change it with ABI_VERSION)";
}

flags_type! {
    /// [`DeviceSemaphore::flags`].
    pub struct SemaphoreFlags: u32 {
        /// The semaphore failed: `status` says why, and its mirror signal
        /// holds `i64::MAX` so that every host wait returns.
        const FAILED = 1 << 0;
    }
}

layout! {
    /// A timeline semaphore in device memory: a payload that only grows, and
    /// the entries waiting for it to reach a value, in value order.
    ///
    /// `lock` guards `waiters_head`, `waiters_tail`, the waiting entries'
    /// `wait_next` and `wait_value`, `status`, `flags`, and changes of
    /// `payload` and of the mirror signal's value; `payload` is also read
    /// without it (an acquire load: a value reached stays reached).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct DeviceSemaphore {
        /// Current payload; only increases.
        pub payload: u64 = 0 => Atomic,
        /// An HSA signal whose value mirrors `payload` (`i64::MAX` once
        /// failed), so the host can block in `hsa_signal_wait_*`; null: none.
        pub signal: SignalHandle = 8 => Plain,
        /// [`SemaphoreFlags::FAILED`] once the semaphore failed.
        pub flags: SemaphoreFlags = 16 => Atomic,
        /// Spin lock: 0 free, 1 held.
        pub lock: u32 = 20 => Atomic,
        /// HSA-style status of a failed semaphore (0 while fine).
        pub status: u32 = 24 => Plain,
        /// Keeps `waiters_head` 8-byte aligned; written as zero.
        pub reserved0: u32 = 28,
        /// First waiting [`QueueEntry`] (device address, 0: none): the one
        /// needing the smallest payload.
        pub waiters_head: u64 = 32 => Link<QueueEntry>,
        /// Last waiting entry: the one needing the largest payload.
        pub waiters_tail: u64 = 40 => Link<QueueEntry>,
        /// Of a failed semaphore: the [`SchedulerState`] of the entry whose
        /// failure failed it (0: failed by the host).
        pub failed_scheduler: u64 = 48 => Plain,
        /// And that entry's id.
        pub failed_entry: u64 = 56 => Plain,
        /// Pads the semaphore to two 64-byte lines; written as zero.
        pub reserved: [u64; 8] = 64,
    }
    size = 128,
    align = 64,
    why = "two 64-byte lines whose payload, flags and lock host and device code update with \
           atomics (aqueduct ABI: change it with ABI_VERSION)";
}

flags_type! {
    /// Why a scheduler tick is wanted: the bits requesters `fetch_or` into
    /// [`SchedulerState::actions`]. The requester that found no bit set
    /// enqueues the tick; the tick exchanges the set for 0 before it looks
    /// at anything, so a request after that enqueues the next tick.
    pub struct SchedulerActions: u32 {
        /// Entries were added to the mailbox.
        const INCOMING = 1 << 0;
        /// Entries were pushed on the wake stack.
        const WAKE = 1 << 1;
        /// A submitter needs room: reclaim retired entries.
        const RETIRE = 1 << 2;
        /// Set by the host when the scheduler goes away: a request that
        /// finds it enqueues no tick.
        const CLOSED = 1 << 31;
    }
}

atomic_word!(flags SemaphoreFlags: u32);
atomic_word!(flags SchedulerActions: u32);

/// Most execution queues a scheduler deals its entries to.
pub const MAX_EXECUTION_QUEUES: usize = 4;

/// What device code asks of the host service: the `type` (function) of an
/// AGENT_DISPATCH packet on [`SchedulerState::host_queue`]. Its `arg[0]` is
/// always the scheduler's state address; the packets carry no completion
/// signal and no return address (nothing waits for the answer).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct HostRequest(pub u16);

impl HostRequest {
    /// An entry retired: `arg[1]` is its id. The host drops what it kept
    /// alive for the device while the entry ran (its command buffer, its
    /// semaphores): the device reads none of it any more.
    pub const RELEASE: Self = Self(1);
    /// The trace ring filled another half: `arg[1]` is the write index
    /// reached. The host drains the ring before it overflows.
    pub const TRACE_FLUSH: Self = Self(2);
    /// An allocation found bucket `arg[1]` of the block pool empty: the
    /// host adds blocks (or marks it exhausted) and requests a tick.
    pub const GROW: Self = Self(3);
}

layout! {
    /// One scheduler's state in device memory: its requests, its mailbox ring
    /// of [`QueueEntry`]s, the tick packet requesters enqueue, its queues and
    /// its kernarg ring.
    ///
    /// Mailbox ring indices: entries `retire_index..accept_index` are the
    /// scheduler's (waiting, ready, issued or finished, not yet reclaimed),
    /// `accept_index..write_index` are submitted and not yet accepted. Slots
    /// below `retire_index` are free for the submitter again.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct SchedulerState {
        /// [`SchedulerActions`] requested since the last tick began.
        pub actions: SchedulerActions = 0 => Atomic,
        /// Entries issued and not retired yet.
        pub in_flight: u32 = 4 => Atomic,
        /// Top of the wake stack (device address of a [`QueueEntry`], linked by
        /// `wake_next`; 0: empty): entries whose semaphore reached its value.
        pub wake_head: u64 = 8 => AtomicLink<QueueEntry>,
        /// Ticks run so far.
        pub ticks: u64 = 16 => Plain,
        /// The tick's own list of ready entries not issued yet, in id order
        /// (linked by `ready_next`).
        pub ready_head: u64 = 24 => Link<QueueEntry>,
        /// The last entry of that list.
        pub ready_tail: u64 = 32 => Link<QueueEntry>,
        /// Device address of the scheduler's [`BlockPool`] (0: none: ALLOCA
        /// entries fail).
        pub pool: u64 = 40 => Link<BlockPool>,
        /// How many entries the tick has put on execution queues: the next
        /// goes to `execution_queues[next_queue % execution_count]`. The
        /// tick's own.
        pub next_queue: u64 = 48 => Plain,
        /// Pads the request line to 64 bytes; written as zero.
        pub reserved0: u64 = 56,
        /// Device address of `[QueueEntry; capacity]`.
        pub entries: u64 = 64 => ListOf<QueueEntry>[capacity: u64],
        /// Slots of the mailbox ring, a power of two.
        pub capacity: u64 = 72 => Plain,
        /// Entries ever submitted (advanced by the submitter, release).
        pub write_index: u64 = 80 => Atomic,
        /// Entries ever accepted by a tick.
        pub accept_index: u64 = 88 => Plain,
        /// Entries ever reclaimed (advanced by the tick, release).
        pub retire_index: u64 = 96 => Atomic,
        /// Entries of this scheduler that a signaller has taken off a
        /// semaphore's waiter list and not yet pushed on the wake stack (with
        /// its tick requested): a scheduler going away waits for 0 before its
        /// memory goes. Raised under the semaphore's lock.
        pub waking: u64 = 104 => Atomic,
        /// Pads the mailbox line to 64 bytes; written as zero.
        pub reserved1: [u64; 2] = 112,
        /// The tick's AQL packet as eight words, header first: a requester
        /// copies it into a control-queue slot and publishes it.
        pub tick_packet: [u64; 8] = 128 => Plain,
        /// Device address of the control queue's `amd_queue_t` (ticks).
        pub control_queue: u64 = 192 => Ref<AmdQueue>,
        /// How many of `execution_queues` there are (1 to
        /// [`MAX_EXECUTION_QUEUES`]).
        pub execution_count: u64 = 200 => Plain,
        /// Device address of the [`TraceRing`] the scheduler records into (0:
        /// tracing off).
        pub trace: u64 = 208 => Link<TraceRing>,
        /// The `hsa_queue_t*` of the host service's soft queue (0: none):
        /// device code posts [`HostRequest`]s to it as AGENT_DISPATCH packets.
        pub host_queue: u64 = 216 => Link<AmdQueue>,
        /// Device addresses of the execution queues' `amd_queue_t`s (the
        /// entries' packets), `execution_count` of them: the tick deals the
        /// entries out in turn; the host replaces one that faults (release
        /// store).
        pub execution_queues: [u64; MAX_EXECUTION_QUEUES] = 224 => Array<AtomicLink<AmdQueue>>,
        /// Kernel arguments and issue states of the entries: the submitter
        /// reserves, the tick releases as entries are reclaimed.
        pub kernarg: KernargRing = 256 => Nested,
    }
    size = 320,
    align = 64,
    why = "five 64-byte lines: requests, mailbox indices, the tick packet, queues, kernarg \
           ring; host and device code update them with atomics at these offsets (aqueduct ABI: \
           change it with ABI_VERSION)";
}

layout! {
    /// One size class of a [`BlockPool`]: blocks of `block_size` bytes, the
    /// free ones in an array stack the tick pops and pushes and the host fills
    /// (growing) and empties (trimming), each under the bucket's `lock`.
    /// Allocations that find no free block wait on the bucket's own list
    /// (linked by `QueueEntry::ready_next`, in id order) while the host
    /// service grows the bucket ([`HostRequest::GROW`]).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct PoolBucket {
        /// Bytes per block: a request of at most this many (and more than the
        /// smaller bucket's) takes a block here.
        pub block_size: u64 = 0 => Plain,
        /// Device address of `[u64; capacity]`: the free blocks' addresses,
        /// `count` of them at the start.
        pub free: u64 = 8 => ListOf<u64>[capacity: u64],
        /// Free blocks at `free` now (at most `capacity`).
        pub count: u64 = 16 => Plain,
        /// Most blocks the bucket can hold free (the array's length).
        pub capacity: u64 = 24 => Plain,
        /// Held by whoever touches `free`/`count` (0 free, 1 held;
        /// system-scope acquire/release).
        pub lock: u32 = 32 => Atomic,
        /// [`PoolBucket::GROWING`] while a request to grow is out;
        /// [`PoolBucket::EXHAUSTED`] when the host could not grow it (the
        /// waiting allocations fail).
        pub growth: u32 = 36 => Atomic,
        /// The allocations waiting for a block: first and last entry (0:
        /// none). The tick's own.
        pub starved_head: u64 = 40 => Link<QueueEntry>,
        /// The last of those entries (0: none). The tick's own.
        pub starved_tail: u64 = 48 => Link<QueueEntry>,
        /// Pads the bucket to one 64-byte line; written as zero.
        pub reserved: u64 = 56,
    }
    size = 64,
    align = 64,
    why = "one line per bucket of the block pool the tick and the host's service update \
           at these offsets (aqueduct ABI: change it with ABI_VERSION)";
}

impl PoolBucket {
    /// `growth`: a request to grow is with the host.
    pub const GROWING: u32 = 1;
    /// `growth`: the host could not grow the bucket.
    pub const EXHAUSTED: u32 = 2;
}

layout! {
    /// The device block pool queue-ordered allocations come from: a small and
    /// a large bucket of fixed-size blocks, device memory the host allocates
    /// as the device asks ([`HostRequest::GROW`]) and frees when trimmed.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BlockPool {
        /// The small-block bucket, then the large-block one (a larger
        /// `block_size`); a request takes the first whose `block_size` holds
        /// it.
        pub buckets: [PoolBucket; 2] = 0 => Array<Nested>,
    }
    size = 128,
    align = 64,
    why = "the scheduler's block pool: two buckets (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// The kernarg ring: byte-granular reservations for packets' kernel
    /// arguments. Each reservation is aligned to 64 bytes and never wraps (a
    /// request that would straddle the end skips to the start).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct KernargRing {
        /// Device address of the storage.
        pub base: u64 = 0 => Plain,
        /// Bytes of storage, a power of two.
        pub capacity: u64 = 8 => Plain,
        /// Bytes ever reserved (advanced atomically by producers).
        pub write_offset: u64 = 16 => Atomic,
        /// Bytes ever released (advanced by the scheduler as work retires).
        pub read_offset: u64 = 24 => Atomic,
        /// Pads the ring's offsets to one 64-byte line; written as zero.
        pub reserved: [u64; 4] = 32,
    }
    size = 64,
    align = 64,
    why = "one 64-byte line of offsets that producers and the scheduler update with atomics \
           (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// The trace ring: fixed-size [`TraceRecord`]s written by device code and
    /// drained by the host's trace worker.
    ///
    /// A writer reserves a slot by advancing `write_index` only while the ring
    /// has room (else it counts the record in `dropped`), writes the record
    /// and stores its `kind` last (release): the host reads records in order
    /// up to the first whose kind is still 0, zeroes each kind it consumed,
    /// then advances `read_index` (release).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct TraceRing {
        /// Device address of `[TraceRecord; capacity]`.
        pub base: u64 = 0 => ListOf<TraceRecord>[capacity: u64],
        /// Records of storage, a power of two.
        pub capacity: u64 = 8 => Plain,
        /// Records ever reserved by device code.
        pub write_index: u64 = 16 => Atomic,
        /// Records ever consumed by the host.
        pub read_index: u64 = 24 => Atomic,
        /// Records dropped because the ring was full.
        pub dropped: u64 = 32 => Atomic,
        /// Agent timestamp frequency in Hz, to convert record timestamps.
        pub timestamp_frequency: u64 = 40 => Plain,
        /// Pads the ring's indices to one 64-byte line; written as zero.
        pub reserved: [u64; 2] = 48,
    }
    size = 64,
    align = 64,
    why = "one 64-byte line of indices shared by device writers and the host's trace worker \
           (aqueduct ABI: change it with ABI_VERSION)";
}

open_enum! {
    /// What a [`TraceRecord`] describes.
    pub struct TraceKind(u16) {
        /// A scheduler tick, begin to end: `id` is the tick's number,
        /// `flags` the entries it accepted (saturating).
        SCHEDULER_TICK = 1,
        /// A queue entry issued by a tick (or completed there, a barrier):
        /// `id` is the entry id.
        ISSUE = 2,
        /// A queue entry retired (its work done): `id` is the entry id.
        RETIRE = 3,
        /// A block of a queue entry's command buffer begins: the first
        /// when its block-issue kernel runs on the execution queue (the
        /// entry starts), a later one when the control kernel of the
        /// branch before it issues it. `id` is the entry id, `flags` the
        /// block's index. (A branch back to block 0 that goes through the
        /// block-issue kernel records it twice.)
        BLOCK = 4,
    }
}

layout! {
    /// One trace event.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct TraceRecord {
        /// What the record describes and its kind-specific flags, as one
        /// word ([`TraceRecord::header`]), stored last (release) by the
        /// writer; 0 marks a slot not yet written (or already consumed).
        pub header: u32 = 0 => Atomic,
        /// Keeps `id` 8-byte aligned; written as zero.
        pub reserved: u32 = 4,
        /// The tick's number (`SCHEDULER_TICK`) or the queue entry's id (the
        /// other kinds).
        pub id: u64 = 8 => Plain,
        /// Agent timestamps (`s_memrealtime` domain); a point event has
        /// `end_ts == start_ts`.
        pub start_ts: u64 = 16 => Plain,
        /// Agent timestamp of the event's end (see `start_ts`).
        pub end_ts: u64 = 24 => Plain,
    }
    size = 32,
    align = 8,
    why = "a trace ring slot: the host reads record i at base + 32 * i (aqueduct ABI: change it \
           with ABI_VERSION)";
}

impl TraceRecord {
    /// The `header` word of a record of `kind` with `flags`: the kind in
    /// bits 0..16, the flags in bits 16..32.
    pub const fn header(kind: TraceKind, flags: u16) -> u32 {
        kind.0 as u32 | (flags as u32) << 16
    }

    /// What the record describes (the low half of `header`).
    pub const fn kind(&self) -> TraceKind {
        TraceKind(self.header as u16)
    }

    /// Kind-specific: entries accepted (`SCHEDULER_TICK`), block index
    /// (`BLOCK`), else 0 (the high half of `header`).
    pub const fn flags(&self) -> u16 {
        (self.header >> 16) as u16
    }
}

impl<'a> View<'a, Execution> {
    /// The scheduler's entry the submission runs as (its `entry`; `None`
    /// for a submission of the host's, outside a scheduler). Declared here,
    /// not with the field: command buffers are below the scheduler, which
    /// runs them.
    #[inline(always)]
    pub fn queue_entry(self) -> Option<View<'a, QueueEntry>> {
        // SAFETY: the view's contract: an execution's `entry` is 0 or the
        // address of the live QueueEntry that runs it (Execution's docs).
        unsafe { View::at(self.entry().get()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{BufferRef, CommandOpcode, CopyCommand};
    use zerocopy::FromZeros;

    #[test]
    fn queue_entry_carries_a_whole_command() {
        let mut copy = CopyCommand::new_zeroed();
        copy.header.opcode = CommandOpcode::COPY;
        copy.source = BufferRef::direct(0x1000, 256);
        copy.target = BufferRef::direct(0x2000, 256);
        let mut e = QueueEntry::new_zeroed();
        e.kind = QueueEntryKind::COMMAND;
        e.command = copy.into();
        e.id = 99;
        let back = QueueEntry::read_from_bytes(e.as_bytes()).unwrap();
        assert_eq!(back, e);
        assert_eq!(back.command.header.opcode, CommandOpcode::COPY);
        assert_eq!(&e.as_bytes()[128 + 24..128 + 32], &0x1000u64.to_le_bytes());
        assert_eq!(
            format!("{:?}", QueueEntryState(0)),
            "QueueEntryState::SUBMITTED"
        );
    }
}
