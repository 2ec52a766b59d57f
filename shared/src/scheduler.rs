//! The device scheduler's shared state: queue entries, timeline semaphores
//! and the kernarg and trace rings. Versioned by [`crate::ABI_VERSION`].
//!
//! Rings follow the HSA queue convention: indices only grow (64-bit, never
//! wrap in practice) and are masked by the power-of-two capacity to find the
//! slot; `write - read` is the occupancy.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::command::Command;
use crate::hsa::SignalHandle;

open_enum! {
    /// What a [`QueueEntry`] asks the scheduler to do.
    pub struct QueueEntryKind(u8) {
        /// Run the command buffer at `command_buffer` with `binding_table`.
        EXECUTE = 1,
        /// Run the single command in `command` (fill, copy, update,
        /// dispatch) without a command buffer.
        COMMAND = 2,
        /// Nothing to run: complete once the waits are satisfied (pure
        /// semaphore signal/wait).
        BARRIER = 3,
    }
}

open_enum! {
    /// A queue entry's progress, advanced only by the scheduler.
    pub struct QueueEntryState(u32) {
        /// Written by the submitter; not yet seen by the scheduler.
        SUBMITTED = 0,
        /// Accepted; waiting for its semaphores.
        WAITING = 1,
        /// Its packets are in the execution queue.
        ISSUED = 2,
        /// Done: semaphores signalled, slot reusable.
        RETIRED = 3,
        /// Failed; `status` says why. Its signal semaphores are failed too.
        FAILED = 4,
    }
}

/// A semaphore and a payload value: "wait until it reaches `value`" in a
/// wait list, "advance it to `value`" in a signal list.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SemaphoreRef {
    /// Device address of the [`Semaphore`].
    pub semaphore: u64,
    pub value: u64,
}

assert_layout!(
    SemaphoreRef,
    size = 16,
    align = 8,
    why = "a queue entry's wait and signal lists are arrays of these, which the scheduler reads \
           (aqueduct ABI: change it with ABI_VERSION)",
    semaphore = 0,
    value = 8,
);

/// One submission in a scheduler's queue (a ring of these).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct QueueEntry {
    pub kind: QueueEntryKind,
    pub reserved0: u8,
    /// Entries at `waits`.
    pub wait_count: u16,
    /// Entries at `signals`.
    pub signal_count: u16,
    pub reserved1: u16,
    /// [`QueueEntryState`], updated by the scheduler with release stores.
    pub state: QueueEntryState,
    pub reserved2: u32,
    /// Submission id: the entry's index in the ring's unbounded sequence.
    pub id: u64,
    /// Device address of `[SemaphoreRef; wait_count]`.
    pub waits: u64,
    /// Device address of `[SemaphoreRef; signal_count]`.
    pub signals: u64,
    /// Device address of a `CommandBufferHeader` (kind `EXECUTE`).
    pub command_buffer: u64,
    /// Device address of `[BindingTableEntry; binding_count]`.
    pub binding_table: u64,
    /// Slots at `binding_table`.
    pub binding_count: u32,
    /// HSA-style status of a failed entry (0 while fine).
    pub status: u32,
    pub reserved3: [u64; 8],
    /// The operation for kind `COMMAND`.
    pub command: Command,
}

assert_layout!(
    QueueEntry,
    size = 256,
    align = 64,
    why = "one slot of the scheduler's queue ring, four 64-byte lines: submitters write the first \
           two, and the last two are a whole Command, 64-byte aligned (aqueduct ABI: change it \
           with ABI_VERSION)",
    kind = 0,
    reserved0 = 1,
    wait_count = 2,
    signal_count = 4,
    reserved1 = 6,
    state = 8,
    reserved2 = 12,
    id = 16,
    waits = 24,
    signals = 32,
    command_buffer = 40,
    binding_table = 48,
    binding_count = 56,
    status = 60,
    reserved3 = 64,
    command = 128,
);

/// Waiters a semaphore records inline.
pub const SEMAPHORE_WAITERS: usize = 6;

/// Someone to wake when a semaphore reaches `value`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct SemaphoreWaiter {
    /// Payload the waiter needs.
    pub value: u64,
    /// Device address of the waiting scheduler's wake word (an `amd_signal_t`
    /// the scheduler's tick waits on); 0 marks a free slot.
    pub wake: u64,
}

assert_layout!(
    SemaphoreWaiter,
    size = 16,
    align = 8,
    why = "SEMAPHORE_WAITERS of these fill a Semaphore after its 32-byte head (aqueduct ABI: \
           change it with ABI_VERSION)",
    value = 0,
    wake = 8,
);

flags_type! {
    /// [`Semaphore::flags`].
    pub struct SemaphoreFlags: u32 {
        /// `signal` mirrors the payload for host waits.
        const HOST_MIRROR = 1 << 0;
        /// The semaphore failed; `payload` holds the failure status.
        const FAILED = 1 << 1;
    }
}

/// A timeline semaphore in device memory.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct Semaphore {
    /// Current payload; only increases.
    pub payload: u64,
    /// An HSA signal whose value mirrors `payload`, so the host can block in
    /// `hsa_signal_wait_*` (null without `HOST_MIRROR`).
    pub signal: SignalHandle,
    pub flags: SemaphoreFlags,
    /// Spin lock (0 free, 1 held) guarding `waiters` and `waiter_count`.
    pub lock: u32,
    /// Used entries of `waiters`.
    pub waiter_count: u32,
    pub reserved: u32,
    pub waiters: [SemaphoreWaiter; SEMAPHORE_WAITERS],
}

assert_layout!(
    Semaphore,
    size = 128,
    align = 64,
    why = "two 64-byte lines whose payload, flags and lock host and device code update with \
           atomics (aqueduct ABI: change it with ABI_VERSION)",
    payload = 0,
    signal = 8,
    flags = 16,
    lock = 20,
    waiter_count = 24,
    reserved = 28,
    waiters = 32,
);

/// The kernarg ring: byte-granular reservations for packets' kernel
/// arguments. Each reservation is aligned to 64 bytes and never wraps (a
/// request that would straddle the end skips to the start).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct KernargRing {
    /// Device address of the storage.
    pub base: u64,
    /// Bytes of storage, a power of two.
    pub capacity: u64,
    /// Bytes ever reserved (advanced atomically by producers).
    pub write_offset: u64,
    /// Bytes ever released (advanced by the scheduler as work retires).
    pub read_offset: u64,
    pub reserved: [u64; 4],
}

assert_layout!(
    KernargRing,
    size = 64,
    align = 64,
    why = "one 64-byte line of offsets that producers and the scheduler update with atomics \
           (aqueduct ABI: change it with ABI_VERSION)",
    base = 0,
    capacity = 8,
    write_offset = 16,
    read_offset = 24,
    reserved = 32,
);

/// The trace ring: fixed-size [`TraceRecord`]s written by device code and
/// drained by the host's trace worker.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct TraceRing {
    /// Device address of `[TraceRecord; capacity]`.
    pub base: u64,
    /// Records of storage, a power of two.
    pub capacity: u64,
    /// Records ever reserved by device code.
    pub write_index: u64,
    /// Records ever consumed by the host.
    pub read_index: u64,
    /// Records dropped because the ring was full.
    pub dropped: u64,
    /// Agent timestamp frequency in Hz, to convert record timestamps.
    pub timestamp_frequency: u64,
    pub reserved: [u64; 2],
}

assert_layout!(
    TraceRing,
    size = 64,
    align = 64,
    why = "one 64-byte line of indices shared by device writers and the host's trace worker \
           (aqueduct ABI: change it with ABI_VERSION)",
    base = 0,
    capacity = 8,
    write_index = 16,
    read_index = 24,
    dropped = 32,
    timestamp_frequency = 40,
    reserved = 48,
);

open_enum! {
    /// What a [`TraceRecord`] describes.
    pub struct TraceKind(u16) {
        /// A span of device work: `id` is a kernel's trace id.
        DISPATCH = 1,
        /// A scheduler tick.
        SCHEDULER_TICK = 2,
        /// A queue entry retired: `id` is the entry id.
        RETIRE = 3,
        /// A counter sample in `payload`.
        VALUE = 4,
    }
}

/// One trace event.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct TraceRecord {
    pub kind: TraceKind,
    pub flags: u16,
    pub reserved: u32,
    pub id: u64,
    /// Agent timestamps (`s_memrealtime` domain).
    pub start_ts: u64,
    pub end_ts: u64,
}

assert_layout!(
    TraceRecord,
    size = 32,
    align = 8,
    why = "a trace ring slot: the host reads record i at base + 32 * i (aqueduct ABI: change it \
           with ABI_VERSION)",
    kind = 0,
    flags = 2,
    reserved = 4,
    id = 8,
    start_ts = 16,
    end_ts = 24,
);

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
