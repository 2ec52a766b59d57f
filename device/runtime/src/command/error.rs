//! Why a command could not be issued, and the alignment checks every path
//! shares.

use aqueduct_abi::packet::PacketError;

use crate::queue::QueueError;

/// Why a command could not be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueError {
    /// The index is past the block's commands.
    NoCommand { index: u32, count: u32 },
    /// An opcode the issue kernel does not know, or cannot issue yet.
    Opcode(u8),
    /// A dispatch flag the issue kernel cannot honour yet.
    DispatchFlags(u16),
    /// The command's packets lie outside the block's reservation, or it
    /// announces another number than its kind emits.
    Packets { offset: u32, count: u16, block: u32 },
    /// The command's arguments lie outside the block's reservation or are
    /// misaligned.
    Kernargs { offset: u32, size: u32, block: u32 },
    /// A binding-table slot at or past the table's end.
    Binding { slot: u32, count: u32 },
    /// A reference of unknown kind.
    RefKind(u32),
    /// A queue-ordered allocation not committed yet.
    NotCommitted { handle: u64 },
    /// A reference reaching past the buffer it resolves to.
    Range { offset: u64, length: u64, size: u64 },
    /// A buffer shorter than the command needs (an indirect count, a copy
    /// of unequal lengths, a fill not a whole number of patterns).
    Length { need: u64, have: u64 },
    /// A fill pattern size other than 1, 2, 4, 8 or 16.
    Pattern(u8),
    /// The workgroup count times the workgroup size overflows a grid.
    Grid { count: [u32; 3], size: [u16; 3] },
    /// The packet builder refused the packet.
    Packet(PacketError),
    /// The execution queue's `amd_queue_t` is not a queue.
    Queue(QueueError),
    /// A prepared dispatch's packet or kernel arguments do not fit the
    /// block, or its packet is misaligned.
    Prepared {
        packet_offset: u32,
        kernarg_offset: u32,
    },
    /// An address the recording or the issue state gives is not aligned
    /// for what it points at.
    Misaligned { address: u64, align: u32 },
}

impl From<PacketError> for IssueError {
    fn from(e: PacketError) -> Self {
        Self::Packet(e)
    }
}

/// Whether `address` is a multiple of `align` (a power of two).
pub(super) fn aligned(address: u64, align: u64) -> bool {
    address & (align - 1) == 0
}

/// `address`, if it is a multiple of `align` (a power of two).
pub(super) fn check_aligned(address: u64, align: u32) -> Result<u64, IssueError> {
    if aligned(address, u64::from(align)) {
        Ok(address)
    } else {
        Err(IssueError::Misaligned { address, align })
    }
}

/// The first of these checks that fails (addresses and their alignments,
/// then a queue's size), for an issue state known to fail one: the common
/// path computes one flag and branches once.
#[cold]
pub(super) fn first_error(aligned: &[(u64, u32)], size: u32) -> IssueError {
    for &(address, align) in aligned {
        if let Err(e) = check_aligned(address, align) {
            return e;
        }
    }
    IssueError::Queue(QueueError::BadSize(size))
}
