//! The fast path: a direct dispatch the recorder vouched for
//! ([`IssueShape`](aqueduct_abi::command::IssueShape)), issued by one code
//! without a branch whatever its kernel.
//!
//! ```text
//!   load   the command's words, its 64-byte argument template, its packet,
//!          its four binding patches, their table entries (scalar base +
//!          32-bit offsets: no per-lane 64-bit address arithmetic)
//!   clamp  its share into the block's arguments, its packet into the block's
//!   store  the template, then each binding (table entry + patch value)
//!   publish the packet with its kernarg address filled in (header last)
//! ```
//!
//! This is the hot path of command-buffer issue (the command-buffer
//! benchmark's goal: under 2 wave-instructions per command), and it is the
//! one part of the issue that reads and writes raw addresses: a view of a
//! command at `block + 64 + 128 · index` costs every lane 64-bit address
//! arithmetic, where the global instructions take the block's address in
//! SGPRs and the 32-bit offset in one VGPR ([`aqueduct_abi::global`]).
//! Each access says why it stays inside what the recorder vouched for.

use aqueduct_abi::aql::KernelDispatchPacket;
use aqueduct_abi::command::{
    BindingPatch, COMMAND_SIZE, CommandHeader, DispatchCommand, FAST_ARGUMENT_BYTES, FAST_PATCHES,
    KERNARG_ALIGN,
};
use aqueduct_abi::global::{keep_order, load_u32, load_u64, store_u64};

use super::issuer::BlockIssuer;

/// Bytes of a [`BindingPatch`].
const PATCH_SIZE: u64 = size_of::<BindingPatch>() as u64;

// The fast path reads a command's header as two words (packet offset in
// the first's high half; issue shape and kernarg offset in the second's)
// and a patch as two (slot in the first's low half, place in its top 16
// bits; the offset).
const _: () = {
    assert!(core::mem::offset_of!(CommandHeader, packet_offset) == 4);
    assert!(core::mem::offset_of!(CommandHeader, issue_shape) == 10);
    assert!(core::mem::offset_of!(CommandHeader, kernarg_offset) == 12);
    assert!(core::mem::offset_of!(BindingPatch, slot) == 0);
    assert!(core::mem::offset_of!(BindingPatch, kernarg_offset) == 6);
    assert!(core::mem::offset_of!(BindingPatch, value) == 8);
};

/// The 8-byte word of a kernel dispatch packet that holds its
/// `kernarg_address`.
const KERNARG_ADDRESS_WORD: usize =
    core::mem::offset_of!(KernelDispatchPacket, kernarg_address) / 8;

impl BlockIssuer<'_> {
    /// Issues command `index`, a dispatch the recorder vouched for
    /// ([`IssueShape`](aqueduct_abi::command::IssueShape)): the fast path,
    /// which the work-items below the block's `vouched_count` take
    /// ([`BlockIssuer::issue_work_item`]).
    ///
    /// It checks nothing the recorder vouched for (that is the point of
    /// vouching), and does not look at what kind of command it has:
    /// every vouched dispatch has one layout whatever its kernel, so one
    /// code without a branch, its offsets immediates, serves a whole wave
    /// of them. It loads everything first (the command's fields; its
    /// argument units, patches and packet; the patches' table entries),
    /// then writes the arguments and the bindings, then the packet with
    /// its kernarg address, and publishes it. It clamps every write into
    /// the block's reservations (the command's share into the block's
    /// arguments, its packet into the block's packets, a binding into its
    /// share: the block has room for one, [`BlockIssuer::new`] counts no
    /// vouched dispatch otherwise and [`BlockIssuer::trusted`]'s caller
    /// vouches for it), so that a damaged command (its fields, template or
    /// patches; not the block header or issue order) writes only inside
    /// its block's reservations. It may still publish its packet over
    /// another command's slot, leaving that one's empty, so the queue
    /// stops there instead of faulting; and a damaged slot reads whatever
    /// lies at the table's address plus 16 times it.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    pub fn issue_vouched(&self, index: u32) {
        const UNITS: usize = (FAST_ARGUMENT_BYTES / KERNARG_ALIGN) as usize;
        let at = self.block + u64::from(64 + COMMAND_SIZE as u32 * index);
        let table = self.table.device_address();
        // SAFETY: every load below reads what the issue state's view
        // vouches for, naturally aligned:
        // - the command's words: its block's commands follow the header
        //   and the issue order names them (a block holds at most
        //   MAX_BLOCK_COMMANDS, so the offset fits 32 bits); each word is
        //   inside the command (128 bytes, 64-byte aligned: the block is);
        // - what a vouched command references (`IssueShape`): its template,
        //   FAST_ARGUMENT_BYTES readable, 16-byte aligned; its prepared
        //   packet, 64-byte aligned; its patch list, FAST_PATCHES long,
        //   16-byte aligned;
        // - the binding table: 8-byte aligned, holding every slot the
        //   recording uses (the submission checked), slot 0 at least
        //   (`BindingPatch::FILLER`), at most MAX_BINDING_SLOTS, so a
        //   slot's offset fits 32 bits.
        let (packet_offset, kernarg_offset, units, words, patches, entries) = unsafe {
            let word = |offset: usize| load_u64(at + offset as u64);
            let half = |offset: usize| load_u32(at + offset as u64);
            let (packet_offset, kernarg_offset) = (
                half(core::mem::offset_of!(CommandHeader, packet_offset)),
                half(core::mem::offset_of!(CommandHeader, kernarg_offset)),
            );
            let template = word(core::mem::offset_of!(DispatchCommand, kernarg_template));
            let bindings = word(core::mem::offset_of!(DispatchCommand, bindings));
            let packet = word(core::mem::offset_of!(DispatchCommand, packet));
            // Loads in the order their data is needed last: on gfx9 stores
            // count in the same counter as loads, so the wait for the
            // patches covers the units and the packet, and their stores
            // wait no more.
            let units: [[u64; 2]; UNITS] = core::array::from_fn(|u| {
                let at = template + 16 * u as u64;
                [load_u64(at), load_u64(at + 8)]
            });
            let words: [u64; 8] = core::array::from_fn(|k| load_u64(packet + 8 * k as u64));
            keep_order();
            let patches: [[u64; 2]; FAST_PATCHES] = core::array::from_fn(|b| {
                let at = bindings + PATCH_SIZE * b as u64;
                [load_u64(at), load_u64(at + 8)]
            });
            // The last loaded patch's slot first: its wait covers the
            // others.
            let mut entries = [0u64; FAST_PATCHES];
            for b in (0..FAST_PATCHES).rev() {
                let slot = patches[b][0] as u32;
                entries[b] = load_u64(table + u64::from(16 * slot));
            }
            (
                packet_offset,
                kernarg_offset,
                units,
                words,
                patches,
                entries,
            )
        };
        // The share clamped into the block's arguments, the packet into
        // the block's.
        let kernarg_offset = (kernarg_offset & !(KERNARG_ALIGN - 1)).min(self.last_share);
        let packet_offset = packet_offset.min(self.packets.wrapping_sub(1));
        let share = self.kernarg_base + u64::from(kernarg_offset);
        // SAFETY: every store below is inside the command's share of the
        // block's kernarg reservation, which only this command writes: the
        // share's offset clamped above (the block has room for a share:
        // `BlockIssuer::new` counts no vouched dispatch otherwise), each
        // unit 16-byte aligned inside it, each binding's place masked into
        // it, 8-byte aligned.
        unsafe {
            for u in 0..UNITS {
                let [lo, hi] = units[u];
                let at = share + 16 * u as u64;
                store_u64(at, lo);
                store_u64(at + 8, hi);
            }
            // The last loaded first: its wait covers the others.
            for b in (0..FAST_PATCHES).rev() {
                let [head, value] = patches[b];
                let place = (head >> 48) as u32 & (FAST_ARGUMENT_BYTES - 8);
                store_u64(
                    self.kernarg_base + u64::from(kernarg_offset + place),
                    entries[b].wrapping_add(value),
                );
            }
        }
        self.publish_prepared(words, share, packet_offset);
    }

    /// Publishes a prepared dispatch's packet ([`DispatchCommand::packet`],
    /// given as its eight words) at the block's packet `packet_offset`,
    /// with its kernel arguments at `kernargs`: the one place every path
    /// of a prepared dispatch fills in the kernarg address.
    #[inline(always)]
    pub(super) fn publish_prepared(&self, mut words: [u64; 8], kernargs: u64, packet_offset: u32) {
        words[KERNARG_ADDRESS_WORD] = kernargs;
        self.queue.write_words(
            self.packet_base.wrapping_add(u64::from(packet_offset)),
            &words,
        );
    }
}
