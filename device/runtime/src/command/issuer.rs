//! One block's issue, as each work-item of the block-issue kernel sees it
//! ([`BlockIssuer`]): read once from the block's issue state
//! ([`aqueduct_abi::command::BlockIssue`]) and its block header, the
//! values every command uses kept as the wave's (scalar loads), the rest
//! read where a rarer command needs it.

use aqueduct_abi::aql_ring::is_ring_size;
use aqueduct_abi::command::{
    BindingTableEntry, BlockIssue, Command, CommandBlockHeader, FAST_ARGUMENT_BYTES, KERNARG_ALIGN,
};
use aqueduct_abi::view::{List, PlainField, View, Word};

use crate::queue::{MAX_QUEUE_PACKETS, Queue};

use super::error::{IssueError, first_error};

/// One block's issue, as each work-item of the block-issue kernel sees it.
/// It keeps a view of the issue state, whose fields the rarer commands
/// read where they use them, and the fields every command uses, read once
/// as the wave's values with scalar loads
/// ([`PlainField::load_invariant`]): the block header's totals, the issue
/// state's bases and the queue.
pub struct BlockIssuer<'a> {
    pub(super) state: View<'a, BlockIssue>,
    pub(super) block: u64,
    /// The block's commands (its header's `command_count` of them), and
    /// the header's `packet_count`, `kernarg_size` and `issue_order`.
    pub(super) commands: List<'a, Command>,
    pub(super) packets: u32,
    pub(super) kernarg_size: u32,
    pub(super) order: u64,
    /// The block header's `vouched_count`; checked ([`BlockIssuer::new`]),
    /// no more than the block's commands, packets and 64-byte shares hold
    /// (so 0 for a block without room for a vouched dispatch); unchecked
    /// ([`BlockIssuer::trusted`]), as the header says.
    pub(super) vouched: u32,
    /// The last place a vouched dispatch's share of the arguments may
    /// start ([`BlockIssuer::issue_vouched`]).
    pub(super) last_share: u32,
    /// The issue state's `kernarg_base`, `binding_table`, `binding_count`
    /// and `packet_base`.
    pub(super) kernarg_base: u64,
    pub(super) table: List<'a, BindingTableEntry>,
    pub(super) packet_base: u64,
    pub(super) queue: Queue<'a>,
}

/// A field read as the wave's value ([`PlainField::load_invariant`]) if
/// `INVARIANT`, else with a plain load (one this kernel may have written).
#[inline(always)]
fn read<const INVARIANT: bool, F: Word>(field: PlainField<'_, F>) -> F {
    if INVARIANT {
        field.load_invariant()
    } else {
        field.get()
    }
}

impl<'a> BlockIssuer<'a> {
    /// The issue described by `state`, checked: its addresses' alignments
    /// and its queue's size.
    ///
    /// Every active work-item of the wave passes the same `state` (its
    /// fields, block header and queue are read as the wave's), which
    /// nothing changes while the kernel runs and which was written before
    /// it started (by the host or an earlier dispatch; the kernel's packet
    /// has an acquire fence of agent scope or wider, so the scalar cache
    /// holds nothing older). Its view vouches for everything the block's
    /// commands reference (kernel infos, templates, binding patches,
    /// allocation handles, indirect counts, update data).
    pub fn new(state: View<'a, BlockIssue>) -> Result<Self, IssueError> {
        Self::read::<true, true>(state)
    }

    /// [`BlockIssuer::new`] without its checks of the issue state (its
    /// addresses' alignments, the queue's size), for the block-issue
    /// kernel, where they would cost every wave: for an issue state
    /// aqueduct's submission or control kernel wrote, for a block header
    /// and issue order aqueduct's recorder wrote (the block, kernarg base,
    /// binding table and issue order aligned as [`BlockIssuer::new`]
    /// checks, a queue whose size is a power of two of at most
    /// [`MAX_QUEUE_PACKETS`] (the host refuses larger ones), and a block
    /// whose `vouched_count` counts the vouched dispatches its issue order
    /// starts with, each with a packet and a share in the block, so that
    /// the fast path's clamps hold).
    pub fn trusted(state: View<'a, BlockIssue>) -> Self {
        // Unchecked, `read` cannot fail.
        match Self::read::<true, false>(state) {
            Ok(issuer) => issuer,
            Err(_) => unreachable!(),
        }
    }

    /// [`BlockIssuer::new`] for an issue state this kernel has just written
    /// (the control kernel issuing a small block itself): read with plain
    /// loads, which the compiler keeps after the stores.
    pub fn new_written(state: View<'a, BlockIssue>) -> Result<Self, IssueError> {
        Self::read::<false, true>(state)
    }

    /// [`BlockIssuer::new`], the issue state's fields read with scalar
    /// loads if `INVARIANT`, checked if `CHECKED`.
    #[inline(always)]
    fn read<const INVARIANT: bool, const CHECKED: bool>(
        state: View<'a, BlockIssue>,
    ) -> Result<Self, IssueError> {
        let block_at = if INVARIANT {
            state.block().load_invariant()
        } else {
            state.block().get()
        };
        let block = block_at.device_address();
        let kernarg_base = read::<INVARIANT, _>(state.kernarg_base());
        let table = if INVARIANT {
            state.binding_table().load_invariant()
        } else {
            state.binding_table().get()
        };
        let queue = if INVARIANT {
            state.queue().load_invariant()
        } else {
            state.queue().get()
        };
        // The block header; checked, at the block's address rounded down
        // to its alignment, which is checked below, before any use of what
        // this reads. (Unchecked, the block is aligned: no masking.)
        let header: View<'a, CommandBlockHeader> = if CHECKED {
            // SAFETY: the issue state's view vouches for the block header
            // at `block`; rounding its address down to the header's
            // alignment is that address whenever the issue state is whole,
            // and a damaged one is refused below before anything read here
            // is used.
            unsafe { View::at_nonzero(block & !63) }
        } else {
            block_at
        };
        let order = read::<INVARIANT, _>(header.issue_order());
        let (commands, (packets, kernarg_size)) = if INVARIANT {
            (header.commands_invariant(), header.sizes_invariant())
        } else {
            let sizes = (header.packet_count().get(), header.kernarg_size().get());
            (header.commands(), sizes)
        };
        let vouched_count = read::<INVARIANT, _>(header.vouched_count());
        let (size, ring, doorbell) = if INVARIANT {
            Queue::wave_fields(queue)
        } else {
            Queue::fields(queue)
        };
        // One branch for every check (a kernel that cannot issue the
        // block traps there); the first that fails names the error.
        let bad = ((block | kernarg_base) & 63) | (table.device_address() & 7) | (order & 3);
        if CHECKED && ((bad != 0) | !is_ring_size(size) | (size > MAX_QUEUE_PACKETS)) {
            return Err(first_error(
                &[
                    (block, 64),
                    (kernarg_base, 64),
                    (table.device_address(), 8),
                    (order, 4),
                ],
                size,
            ));
        }
        // The queue's own fields, its size checked above (or trusted).
        let queue = Queue::from_fields(queue, size, ring, doorbell);
        Ok(Self {
            state,
            block,
            commands,
            packets,
            kernarg_size,
            order,
            // Checked: no more than the block's commands, and than its
            // packets and 64-byte shares hold (a block's vouched
            // dispatches have a packet and a share each), so that the
            // fast path's clamps hold: with a vouched dispatch, the block
            // has a packet and a share's room. Unchecked, the header is
            // trusted to say so (see `trusted`).
            vouched: if CHECKED {
                vouched_count
                    .min(commands.len() as u32)
                    .min(packets)
                    .min(kernarg_size / FAST_ARGUMENT_BYTES)
            } else {
                vouched_count
            },
            // (Used only with a vouched dispatch: no wrap.)
            last_share: kernarg_size.wrapping_sub(FAST_ARGUMENT_BYTES) & !(KERNARG_ALIGN - 1),
            kernarg_base,
            table,
            packet_base: read::<INVARIANT, _>(state.packet_base()),
            queue,
        })
    }

    /// The issue state.
    pub(super) fn state(&self) -> View<'a, BlockIssue> {
        self.state
    }

    /// The block's binding table.
    pub(super) fn table(&self) -> List<'a, BindingTableEntry> {
        self.table
    }
}
