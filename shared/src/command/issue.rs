//! A submission's issue state, in a kernarg ring: its [`Execution`] (the
//! queue, the device library's kernels, the serial threshold, the
//! scheduler entry it belongs to), each block's [`BlockIssue`], and the
//! kernel arguments of the device library's issue kernels
//! ([`PatchArgs`], [`BranchArgs`], [`FillArgs`], [`CopyArgs`]).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::amd_queue::AmdQueue;
use crate::view::{List, ListOf, Plain, Ref, View};

use super::{BindingTableEntry, CommandBlockHeader, CommandBufferHeader, KernelInfo};

layout! {
    /// One submission of a command buffer, as its control kernels see it: a
    /// BRANCH or COND_BRANCH reserves the target block's packets in `queue` and
    /// dispatches the block-issue kernel on `issues[target]` (whose argument is
    /// at `issue_args[target]`, a 16-byte slot holding that issue's address).
    /// Each block has its own issue state and kernarg space for the whole
    /// submission: a block issues again only after a branch with the barrier
    /// bit, so after its previous issue's packets completed.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct Execution {
        /// Device address of the [`CommandBufferHeader`].
        pub command_buffer: u64 = 0 => Ref<CommandBufferHeader>,
        /// Device address of `[BlockIssue; block_count]`.
        pub issues: u64 = 8 => Plain,
        /// Device address of `[[u64; 2]; block_count]`: block `b`'s issue
        /// kernel arguments (the address of `issues[b]`).
        pub issue_args: u64 = 16 => Plain,
        /// Kernel object of the block-issue kernel.
        pub issue_kernel: u64 = 24 => Plain,
        /// Device address of the execution queue's `amd_queue_t`.
        pub queue: u64 = 32 => Ref<AmdQueue>,
        /// Blocks of at most this many commands that a branch continues with
        /// are issued serially by the branch's control kernel itself, saving
        /// the block-issue dispatch (0: never; `u32::MAX`: always).
        pub serial_threshold: u32 = 40 => Plain,
        /// Keeps `entry` 8-byte aligned; written as zero.
        pub reserved0: u32 = 44,
        /// Device address of the scheduler's [`crate::scheduler::QueueEntry`]
        /// this submission runs (0: submitted by the host, no scheduler). With
        /// one, RETURN dispatches the control kernel, which retires the entry.
        pub entry: u64 = 48 => Plain,
        /// Pads the record to one 64-byte line; written as zero.
        pub reserved: u64 = 56,
    }
    size = 64,
    align = 64,
    why = "the control kernels read it at these offsets (aqueduct ABI: change it with \
           ABI_VERSION)";
}

impl<'a> View<'a, Execution> {
    /// The issue states of the submission's blocks, one per block of its
    /// command buffer (`issues` holds `block_count` of them).
    #[inline(always)]
    pub fn issue_states(self) -> List<'a, BlockIssue> {
        let blocks = self.command_buffer().get().block_count().get();
        // SAFETY: the view's contract: an execution's `issues` holds one
        // live BlockIssue per block of its command buffer (this layout's
        // docs), which its submitter wrote with it.
        unsafe { List::from_raw(self.issues().get(), u64::from(blocks)) }
    }
}

layout! {
    /// The kernel arguments of the patch kernel (`cmd_patch_dispatch`) an
    /// INDIRECT_DYNAMIC dispatch emits before its real dispatch packet: when it
    /// runs (after everything before it, barrier bit set) it reads the
    /// workgroup count, fills in the real packet's grid and publishes its
    /// header, or turns the slot into a no-op barrier-AND when a used
    /// dimension's count is 0.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct PatchArgs {
        /// Device address of the real dispatch packet's slot (body written,
        /// header INVALID).
        pub packet: u64 = 0 => Plain,
        /// Device address of the `[u32; 3]` workgroup count (resolved when the
        /// block issued; read when the patch runs).
        pub count: u64 = 8 => Plain,
        /// The real packet's first 32 bits once published: header and setup.
        pub first_word: u32 = 16 => Plain,
        /// The header of the no-op barrier-AND that replaces an empty dispatch
        /// (the command's ordering).
        pub no_op_header: u16 = 20 => Plain,
        /// Grid dimensions of the real dispatch, 1..=3: counts beyond them are
        /// ignored.
        pub dimensions: u16 = 22 => Plain,
        /// Workgroup size per dimension.
        pub workgroup_size: [u16; 3] = 24 => Plain,
        /// Pads the arguments to 32 bytes; written as zero.
        pub reserved: u16 = 30,
    }
    size = 32,
    align = 8,
    why = "the kernarg segment of cmd_patch_dispatch as the compiler lays it out (a test checks \
           it against the code object's metadata)";
}

layout! {
    /// The kernel arguments of the control kernel (`cmd_branch`) a BRANCH or
    /// COND_BRANCH dispatches.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BranchArgs {
        /// Device address of the submission's [`Execution`].
        pub execution: u64 = 0 => Plain,
        /// Device address of the branch command.
        pub command: u64 = 8 => Plain,
    }
    size = 16,
    align = 8,
    why = "the kernarg segment of cmd_branch as the compiler lays it out (a test checks it \
           against the code object's metadata)";
}

layout! {
    /// One block's issue: what the block-issue kernel (`cmd_block_issue` in the
    /// device library) reads through its single argument, a pointer to this.
    /// Whoever issues the block fills it after reserving the block's
    /// `packet_count` packet slots and `kernarg_size` kernarg bytes.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BlockIssue {
        /// Device address of the block's [`CommandBlockHeader`].
        pub block: u64 = 0 => Ref<CommandBlockHeader>,
        /// Device address of the execution queue's `amd_queue_t`.
        pub queue: u64 = 8 => Ref<AmdQueue>,
        /// Packet id of the first reserved slot: command `i`'s packets go at
        /// `packet_base + packet_offset ..`.
        pub packet_base: u64 = 16 => Plain,
        /// Device address of the block's kernarg reservation (64-byte aligned):
        /// command `i`'s arguments go at `kernarg_base + kernarg_offset`.
        pub kernarg_base: u64 = 24 => Plain,
        /// Device address of `[BindingTableEntry; binding_count]`.
        pub binding_table: u64 = 32 => ListOf<BindingTableEntry>[binding_count: u32],
        /// Slots at `binding_table`.
        pub binding_count: u32 = 40 => Plain,
        /// Keeps `completion_signal` 8-byte aligned; written as zero.
        pub reserved0: u32 = 44,
        /// The signal the block's RETURN packet decrements (null: none).
        pub completion_signal: crate::hsa::SignalHandle = 48 => Plain,
        /// Device address of the [`KernelInfo`] of the device library's fill
        /// kernel, which FILL commands dispatch with [`FillArgs`].
        pub fill_kernel: u64 = 56 => Ref<KernelInfo>,
        /// The same for the copy kernel, which COPY and UPDATE commands dispatch
        /// with [`CopyArgs`].
        pub copy_kernel: u64 = 64 => Ref<KernelInfo>,
        /// The same for the control kernel, which BRANCH and COND_BRANCH
        /// dispatch with [`BranchArgs`].
        pub control_kernel: u64 = 72 => Ref<KernelInfo>,
        /// Device address of the submission's [`Execution`].
        pub execution: u64 = 80 => Ref<Execution>,
        /// Device address of the [`KernelInfo`] of the patch kernel, which an
        /// INDIRECT_DYNAMIC dispatch emits before its dispatch, with
        /// [`PatchArgs`].
        pub patch_kernel: u64 = 88 => Ref<KernelInfo>,
        /// Pads the issue state to two 64-byte lines; written as zero.
        pub reserved: [u64; 4] = 96,
    }
    size = 128,
    align = 64,
    why = "the block-issue kernel reads it at these offsets through its one pointer argument \
           (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// The kernel arguments of the device library's fill kernel (`blit_fill`:
    /// `dst`, `len`, the pattern's first and second 8 bytes, its size), as a
    /// FILL command's packet passes them.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct FillArgs {
        /// Device address of the first byte written.
        pub dst: u64 = 0 => Plain,
        /// Bytes written: `dst[k] = pattern[k % pattern_size]` for `k < len`.
        pub len: u64 = 8 => Plain,
        /// Pattern bytes 0..8, little-endian.
        pub pattern_lo: u64 = 16 => Plain,
        /// Pattern bytes 8..16, little-endian (read only for a 16-byte
        /// pattern).
        pub pattern_hi: u64 = 24 => Plain,
        /// Pattern length in bytes: 1, 2, 4, 8 or 16 (any other traps, a queue
        /// error, before a byte is written).
        pub pattern_size: u32 = 32 => Plain,
        /// Pads the arguments to 40 bytes; written as zero.
        pub reserved: u32 = 36,
    }
    size = 40,
    align = 8,
    why = "the kernarg segment of blit_fill as the compiler lays it out (a test checks it against \
           the code object's metadata)";
}

layout! {
    /// The kernel arguments of the device library's copy kernel (`blit_copy`:
    /// `dst`, `src`, `len`), as COPY and UPDATE commands' packets pass them.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CopyArgs {
        /// Device address of the first byte written.
        pub dst: u64 = 0 => Plain,
        /// Device address of the first byte read; `[src, src + len)` must not
        /// overlap `[dst, dst + len)`.
        pub src: u64 = 8 => Plain,
        /// Bytes copied; any alignment of either address.
        pub len: u64 = 16 => Plain,
    }
    size = 24,
    align = 8,
    why = "the kernarg segment of blit_copy as the compiler lays it out (a test checks it against \
           the code object's metadata)";
}
