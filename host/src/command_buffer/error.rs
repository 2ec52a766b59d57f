//! Why the recorder refused a command ([`CommandError`]), and the limits
//! its messages name.

use aqueduct_abi::command::MAX_BINDING_SLOTS;

/// Why the recorder refused a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The kernel arguments do not fit the kernel (unset, wrong kind or
    /// size: the message of [`Kernargs`](crate::Kernargs)).
    #[error("{0}")]
    Arguments(String),
    /// The launch does not fit the kernel or the agent.
    #[error("{0}")]
    Launch(String),
    /// A hidden argument that cannot be known when recording.
    #[error(
        "kernel {kernel} needs {argument}, which is not known when a command buffer is recorded"
    )]
    Hidden {
        /// The kernel's name.
        kernel: String,
        /// The hidden argument's `.value_kind`.
        argument: String,
    },
    /// The arguments were built for another kernel.
    #[error("the arguments were built for another kernel than {0}")]
    OtherKernel(String),
    /// The kernel is loaded on another agent than the recording's.
    #[error("kernel {kernel} is loaded on {loaded}, the command buffer records for {recording}")]
    Agent {
        /// The kernel's name.
        kernel: String,
        /// The agent its executable is loaded on.
        loaded: String,
        /// The agent the command buffer is recorded for.
        recording: String,
    },
    /// A buffer range whose end overflows, or a zero-length one where bytes
    /// are needed.
    #[error("buffer range at offset {offset} of {length} bytes {problem}")]
    Range {
        /// Byte offset into the buffer.
        offset: u64,
        /// Byte length of the range.
        length: u64,
        /// What is wrong: "overflows", "wraps around the address space", ...
        problem: &'static str,
    },
    /// A reference not aligned as the command needs.
    #[error("{what} must be {align}-byte aligned (address {address:#x} + offset {offset})")]
    Alignment {
        /// The reference's role, e.g. "a fill target", "an allocation
        /// handle".
        what: &'static str,
        /// The buffer's device address (0 for a binding slot).
        address: u64,
        /// The offset into it.
        offset: u64,
        /// The alignment required, bytes.
        align: u64,
    },
    /// A reference of an unknown kind.
    #[error("buffer reference of unknown kind {0}")]
    RefKind(u32),
    /// A fill pattern of another size than 1, 2, 4, 8 or 16 bytes, or a
    /// fill length not a whole number of patterns.
    #[error("fill pattern of {pattern} bytes over {length} bytes: {problem}")]
    Pattern {
        /// The pattern's length, bytes.
        pattern: usize,
        /// The fill's length, bytes.
        length: u64,
        /// Which rule it breaks.
        problem: &'static str,
    },
    /// A copy's source and target lengths differ.
    #[error("copy of {source_length} bytes into {target_length}")]
    CopyLength {
        /// Bytes of the source range.
        source_length: u64,
        /// Bytes of the target range.
        target_length: u64,
    },
    /// An update with no data, or more than a command buffer carries.
    #[error("update of {0} bytes (1 to {max})", max = UPDATE_MAX)]
    UpdateLength(usize),
    /// A binding-table slot past the most a submission binds.
    #[error("binding-table slot {slot}: a submission binds at most {max} slots", max = MAX_BINDING_SLOTS)]
    Slot {
        /// The slot referenced.
        slot: u32,
    },
    /// An unknown fence scope.
    #[error("fence scope {0} is not none, agent or system")]
    Scope(u8),
    /// A branch condition that is not one of [`BranchCondition`](aqueduct_abi::command::BranchCondition)'s.
    #[error("branch condition {0} is unknown")]
    Condition(u32),
    /// A branch to a block the recording does not have.
    #[error("branch to block {target}, of {blocks}")]
    Target {
        /// The block index branched to.
        target: u32,
        /// Blocks the recording has.
        blocks: u32,
    },
    /// The block has no room for another command (its last slot is kept
    /// for its branch or return), or has ended.
    #[error("the block holds {capacity} commands, the last one the return")]
    BlockFull {
        /// Command slots per block, the control command's included.
        capacity: u32,
    },
    /// More packets or kernel-argument bytes than a block may have.
    #[error("the block would need {need} {what}, more than {max}")]
    BlockSize {
        /// What would overflow: packets or kernel-argument bytes.
        what: &'static str,
        /// How many the block would need.
        need: u64,
        /// The most it may have.
        max: u64,
    },
}

/// Most bytes one UPDATE carries.
pub const UPDATE_MAX: usize = 64 * 1024;
