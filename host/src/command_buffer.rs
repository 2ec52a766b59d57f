//! Command buffers: record once into device memory, issue on the device.
//!
//! A [`CommandBufferBuilder`] writes each command straight into a block in
//! memory the GPU reads ([`aqueduct_abi::command`]: a 64-byte block header,
//! then 128-byte commands), after checking it as the device would: kernel
//! arguments against the kernel's metadata, the launch against the
//! kernel's and the agent's limits, buffer ranges, alignment, fill
//! patterns, the block's capacity, branch targets. A refused command is an
//! [`Error::Command`] naming its block and index; the recording keeps no
//! command and no binding-slot need of it (data it put before the refusal
//! stays unused in the recording's memory).
//!
//! Buffers are [`BufferRef`]s: a direct address, a binding-table slot, or a
//! queue-ordered allocation handle. Slots are bound per submission, so one
//! recording runs on other buffers without being recorded again.
//!
//! A [`CommandQueue`] submits a finished [`CommandBuffer`]: it reserves one
//! packet slot for the block-issue kernel plus the entry block's packets in
//! the execution queue, reserves the submission's issue states and kernel
//! arguments in its kernarg ring, and dispatches `cmd_block_issue` (the
//! device library), one work-item per command; each writes its command's
//! packets into the reserved slots. A block ends in a branch, a conditional
//! branch or a return. A branch's packet runs the device library's
//! `cmd_branch` once everything before it is done, which reserves the next
//! block's packets and dispatches its issue; the RETURN decrements the
//! submission's signal: one submit, one wait, whatever the number of
//! commands and blocks. [`IssueMode`] can have blocks issued serially
//! instead: by one work-item (`cmd_block_issue_serial`) for the entry
//! block, by the branch itself for the others.
//!
//! A direct dispatch with workgroups gets its AQL packet built here, at
//! record time; the issue copies it with the kernarg address filled in.
//!
//! ```text
//!   queue:  [issue][cmd 0][cmd 1] ... [branch] [issue][cmd 0] ... [return]
//!            barrier  written by the issue      (reserved by cmd_branch)
//!   ring:   [Execution][issue args × blocks][BlockIssue × blocks][binding table]
//!           [block 0's kernargs][block 1's kernargs] ...
//! ```
//!
//! Each block's kernel arguments have a fixed place for the whole
//! submission: a block issues again only after a branch with the barrier
//! bit, so after its previous issue's packets completed.
//!
//! Kernel arguments: only what the kernel's metadata asks for. A kernel
//! with hidden arguments gets exactly those, filled at record time from the
//! launch; one that needs the queue pointer, or hidden counts with an
//! indirect workgroup count, is refused (neither is known when recording).
//!
//! The device scheduler ([`crate::scheduler`]) submits the same command
//! buffers from the device, with this module's layout of their state.

use std::collections::VecDeque;
use std::time::Duration;

use aqueduct_abi::aql::FenceScope;
pub use aqueduct_abi::command::{
    AllocationHandle, BindingPatch, BindingTableEntry, BranchCondition, BufferRef, BufferRefKind,
    Command, CommandBlockHeader, CommandView, DispatchCommand, FAST_ARGUMENT_BYTES, FAST_PATCHES,
    IssueShape, MAX_BINDING_SLOTS,
};
use aqueduct_abi::command::{
    BarrierCommand, BlockIssue, BranchArgs, BranchCommand, COMMAND_BUFFER_MAGIC, COMMAND_SIZE,
    CommandBufferHeader, CommandFlags, CommandHeader, CommandOpcode, CondBranchCommand, CopyArgs,
    CopyCommand, DispatchFlags, Execution, FillArgs, FillCommand, KERNARG_ALIGN, KernelInfo,
    PatchArgs, ReturnCommand, UpdateCommand,
};
use aqueduct_abi::hsa::{SignalCondition, SignalHandle};
use aqueduct_abi::packet::KernelDispatch;
pub use aqueduct_abi::packet::Ordering;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::dispatch::{Kernargs, KernelFacts, Launch, plan};
use crate::error::{Error, Result};
use crate::executable::{Executable, Kernel};
use crate::memory::{HostBuffer, MemoryPool};
use crate::queue::{DEFAULT_SPACE_TIMEOUT, Queue};
use crate::signal::{LoadOrder, Signal};

/// Fill pattern sizes, in bytes.
pub const PATTERN_SIZES: [usize; 5] = [1, 2, 4, 8, 16];

/// Work-items per workgroup of the block-issue kernel: its launch bound
/// (`aqueduct_device::command::ISSUE_WORKGROUP`).
pub const ISSUE_WORKGROUP: u16 = 64;

/// Bytes of the device memory the recording's own data (kernel infos,
/// argument templates, binding patches, update bytes) is carved from, in
/// the first chunk; each next one is twice the last, up to
/// [`DATA_CHUNK_MAX`] (an allocation costs more than its bytes: a long
/// recording takes few).
const DATA_CHUNK: usize = 64 * 1024;
const DATA_CHUNK_MAX: usize = 1 << 20;

/// Why the recorder refused a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The kernel arguments do not fit the kernel (unset, wrong kind or
    /// size: the message of [`Kernargs`]).
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
    /// A branch condition that is not one of [`BranchCondition`]'s.
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

/// Device memory for the recording's data, carved in 16-byte-aligned
/// pieces from chunks of [`DATA_CHUNK`] bytes and more (a piece larger
/// than a chunk gets its own).
struct Arena {
    pool: MemoryPool,
    chunks: Vec<HostBuffer<u8>>,
    used: usize,
}

impl Arena {
    fn new(pool: MemoryPool) -> Self {
        Self {
            pool,
            chunks: Vec::new(),
            used: 0,
        }
    }

    /// Copies `bytes` into the arena at an `align`-byte boundary (a power
    /// of two), zero-padded to a multiple of 16 bytes;
    /// returns the device address.
    fn put(&mut self, bytes: &[u8], align: usize) -> Result<u64> {
        self.put_readable(bytes, bytes.len(), align)
    }

    /// [`Arena::put`], with `readable` bytes at least readable from the
    /// returned address (what follows `bytes` in the chunk: zeros, or what
    /// is put next).
    fn put_readable(&mut self, bytes: &[u8], readable: usize, align: usize) -> Result<u64> {
        debug_assert!(align.is_power_of_two() && readable >= bytes.len());
        let size = bytes.len().next_multiple_of(16).max(16);
        let readable = readable.max(size);
        // Chunks start page-aligned, so an offset's alignment is the
        // address's. A mask, not a division: this runs for every command.
        let at = (self.used + align - 1) & !(align - 1);
        let fits = self.chunks.last().is_some_and(|c| at + readable <= c.len());
        let at = if fits {
            at
        } else {
            let grown = (DATA_CHUNK << self.chunks.len().min(4)).min(DATA_CHUNK_MAX);
            self.chunks
                .push(self.pool.alloc_host::<u8>(readable.max(grown))?);
            0
        };
        let chunk = self
            .chunks
            .last_mut()
            .ok_or_else(|| Error::InvalidArgument {
                what: "command buffer",
                problem: "no data chunk".into(),
            })?;
        chunk[at..at + bytes.len()].copy_from_slice(bytes);
        self.used = at + size;
        Ok(chunk.address() + at as u64)
    }
}

/// What the device knows of a kernel ([`KernelInfo`]), from its metadata.
fn kernel_info(kernel: &Kernel) -> KernelInfo {
    let meta = kernel.metadata();
    let mut info = KernelInfo::new_zeroed();
    info.kernel_object = kernel.object();
    info.kernarg_size = kernel.kernarg_segment_size();
    info.kernarg_alignment = kernel.kernarg_segment_alignment().max(16);
    info.group_segment_size = kernel.group_segment_size();
    info.private_segment_size = kernel.private_segment_size();
    info.required_workgroup_size = meta
        .reqd_workgroup_size
        .map_or([0; 3], |r| r.map(|v| u16::try_from(v).unwrap_or(u16::MAX)));
    info.wavefront_size = u16::try_from(meta.wavefront_size).unwrap_or(64);
    info
}

/// The workgroup count and size of a dispatch command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workgroups {
    /// 1, 2 or 3.
    pub dimensions: u8,
    /// Workgroups per dimension (unused dimensions 1). Ignored by an
    /// indirect dispatch, whose count is read at issue.
    pub count: [u32; 3],
    /// Work-items per workgroup and dimension (unused dimensions 1).
    pub size: [u16; 3],
    /// LDS bytes per workgroup on top of the kernel's static size.
    pub dynamic_lds: u32,
}

impl Workgroups {
    /// `count` workgroups of `size` work-items, one-dimensional.
    pub const fn linear(count: u32, size: u16) -> Self {
        Self {
            dimensions: 1,
            count: [count, 1, 1],
            size: [size, 1, 1],
            dynamic_lds: 0,
        }
    }

    /// A two-dimensional grid of workgroups.
    pub const fn planar(count: [u32; 2], size: [u16; 2]) -> Self {
        Self {
            dimensions: 2,
            count: [count[0], count[1], 1],
            size: [size[0], size[1], 1],
            dynamic_lds: 0,
        }
    }
}

/// One block being recorded: a header line, then its command slots.
struct Block {
    storage: HostBuffer<u8>,
    count: u32,
    packets: u32,
    kernarg_size: u32,
    /// Whether its control command (branch, conditional branch, return)
    /// is recorded.
    ended: bool,
}

/// What a prepared dispatch packet depends on: the kernel object, the
/// launch, the header's flags and fence scopes.
type PacketKey = (u64, Workgroups, [u8; 3]);

/// The last direct dispatch recorded: a dispatch of the same kernel and
/// launch under the same ordering differs from it only in its place, its
/// arguments and its bindings, so it is recorded from a copy of it
/// ([`CommandBufferBuilder::dispatch_again`]).
#[derive(Clone, Copy)]
struct Repeat {
    object: u64,
    workgroups: Workgroups,
    ordering: Ordering,
    command: DispatchCommand,
    /// Whether the last dispatch's packet was prepared (so a repeat whose
    /// arguments fit the fast layout is vouched for, whatever the last's
    /// arguments were).
    prepared: bool,
}

/// The last fast-layout template and patch list in the arena, and where
/// (0: none yet).
struct LastFast {
    template: [u8; FAST_ARGUMENT_BYTES as usize],
    template_len: usize,
    template_at: u64,
    patches: [BindingPatch; FAST_PATCHES],
    patches_at: u64,
}

/// What [`CommandBufferBuilder::dispatch_again`] did: small, so that the
/// common answer returns in registers.
enum Again {
    Recorded(u32),
    Refused(Box<Error>),
    Not,
}

/// Records blocks of commands into device memory.
pub struct CommandBufferBuilder {
    agent_name: String,
    agent: crate::agent::Agent,
    limits: aqueduct_abi::packet::DispatchLimits,
    pool: MemoryPool,
    /// Command slots per block.
    capacity: u32,
    blocks: Vec<Block>,
    /// The block commands go to.
    current: usize,
    arena: Arena,
    /// Kernel infos and their addresses by kernel object.
    infos: Vec<(u64, u64, KernelInfo)>,
    /// Keeps the kernels' code loaded while the recording lives.
    kernels: Vec<Kernel>,
    /// Bytes each binding slot must hold: the largest end referenced.
    slot_sizes: Vec<u64>,
    /// Slot needs (slot, end) the command being recorded raises: into
    /// `slot_sizes` once it is recorded ([`Self::append_bytes`]). Each
    /// recording method starts by clearing them, so a refused command's
    /// are dropped rather than raised with the next command.
    pending_needs: Vec<(u32, u64)>,
    ordering: Ordering,
    /// Whether the block gets an issue order grouped by kind.
    sort_by_kind: bool,
    /// The last dispatch's kernel object, workgroups and indirectness,
    /// whose launch was checked: the same again is not checked again.
    last_launch: Option<(u64, Workgroups, bool)>,
    /// The last prepared dispatch packet and what it depends on (kernel
    /// object, launch, header ordering): the next identical dispatch
    /// shares it (the issue fills in each one's kernarg address).
    last_packet: Option<(PacketKey, u64)>,
    /// The last fast-layout template and patch list put in the arena
    /// ([`CommandBufferBuilder::put_fast`]): the next dispatch with
    /// the same bytes shares them, as identical packets are shared.
    last_fast: LastFast,
    /// The last direct dispatch, for [`CommandBufferBuilder::dispatch_again`].
    repeat: Option<Repeat>,
    /// Dispatches recorded from a copy of the last.
    repeated: u32,
    /// Reused for each dispatch's binding patches.
    patches: Vec<BindingPatch>,
}

/// The packets of a block beyond the issue kernel's, at most (a queue must
/// hold them all at once).
pub const MAX_BLOCK_PACKETS: u32 = 1 << 16;
const _: () = assert!(MAX_BLOCK_PACKETS <= aqueduct_abi::command::MAX_BLOCK_COMMANDS);

impl CommandBufferBuilder {
    /// A recording of at most `capacity` commands (the RETURN included)
    /// for `queue`'s agent, in its kernarg pool (memory every agent reads).
    pub fn new(queue: &Queue, capacity: u32) -> Result<Self> {
        if !(1..=MAX_BLOCK_PACKETS).contains(&capacity) {
            return Err(Error::InvalidArgument {
                what: "command buffer",
                problem: format!("capacity {capacity} is not 1..={MAX_BLOCK_PACKETS} commands"),
            });
        }
        let pool = queue.kernarg_pool().clone();
        let mut builder = Self {
            agent_name: queue.agent().info().name.clone(),
            agent: queue.agent().clone(),
            limits: *queue.limits(),
            pool: pool.clone(),
            capacity,
            blocks: Vec::new(),
            current: 0,
            arena: Arena::new(pool),
            infos: Vec::new(),
            kernels: Vec::new(),
            slot_sizes: Vec::new(),
            pending_needs: Vec::new(),
            ordering: Ordering::AGENT,
            sort_by_kind: true,
            last_launch: None,
            last_packet: None,
            last_fast: LastFast {
                template: [0; FAST_ARGUMENT_BYTES as usize],
                template_len: 0,
                template_at: 0,
                patches: [BindingPatch::FILLER; FAST_PATCHES],
                patches_at: 0,
            },
            repeat: None,
            repeated: 0,
            patches: Vec::new(),
        };
        builder.add_block()?;
        Ok(builder)
    }

    /// Adds an empty block (of the builder's capacity) and returns its
    /// index; commands still go to the current block.
    pub fn add_block(&mut self) -> Result<u32> {
        let storage = self
            .pool
            .alloc_host::<u8>(64 + COMMAND_SIZE * self.capacity as usize)?;
        self.blocks.push(Block {
            storage,
            count: 0,
            packets: 0,
            kernarg_size: 0,
            ended: false,
        });
        Ok(self.blocks.len() as u32 - 1)
    }

    /// Makes block `index` the one commands go to; it must not be ended.
    pub fn select_block(&mut self, index: u32) -> Result<&mut Self> {
        match self.blocks.get(index as usize) {
            Some(b) if !b.ended => {
                self.current = index as usize;
                Ok(self)
            }
            Some(_) => Err(Error::InvalidArgument {
                what: "command buffer",
                problem: format!("block {index} already ends in its control command"),
            }),
            None => Err(Error::InvalidArgument {
                what: "command buffer",
                problem: format!("no block {index} ({} blocks)", self.blocks.len()),
            }),
        }
    }

    /// The block commands go to.
    pub fn current_block(&self) -> u32 {
        self.current as u32
    }

    fn cur(&self) -> &Block {
        &self.blocks[self.current]
    }

    /// Whether the block-issue kernel takes the commands grouped by kind
    /// (the default: each wave then runs one kind's code, without
    /// divergence) or in recording order. Results are the same; only the
    /// issue's cost differs (`cargo xtask cmdbuf-bench`).
    pub fn set_sort_by_kind(&mut self, sort: bool) -> &mut Self {
        self.sort_by_kind = sort;
        self
    }

    /// The packet ordering the next commands get: the barrier bit (wait
    /// for every earlier command) and fence scopes. The default,
    /// [`Ordering::AGENT`], suits work inside the command buffer, whose
    /// RETURN releases at system scope.
    pub fn set_ordering(&mut self, ordering: Ordering) -> &mut Self {
        self.ordering = ordering;
        self
    }

    /// Commands recorded so far in the current block.
    pub fn len(&self) -> u32 {
        self.cur().count
    }

    /// Whether the current block has no command yet.
    pub fn is_empty(&self) -> bool {
        self.cur().count == 0
    }

    fn refuse(&self, kind: &'static str, problem: CommandError) -> Error {
        Error::Command {
            block: self.current as u32,
            index: self.cur().count,
            kind,
            problem,
        }
    }

    /// Checks a buffer reference as a command will use it and records how
    /// much of its binding slot it needs.
    fn check_ref(
        &mut self,
        r: &BufferRef,
        align: u64,
        what: &'static str,
    ) -> Result<(), CommandError> {
        // `align` is a power of two: masks, not divisions (this runs for
        // every buffer of every command).
        debug_assert!(align.is_power_of_two());
        let end = r.offset.checked_add(r.length).ok_or(CommandError::Range {
            offset: r.offset,
            length: r.length,
            problem: "overflows",
        })?;
        match r.kind {
            BufferRefKind::DIRECT => {
                if r.address.checked_add(end).is_none() {
                    return Err(CommandError::Range {
                        offset: r.offset,
                        length: r.length,
                        problem: "wraps around the address space",
                    });
                }
                if r.address.wrapping_add(r.offset) & (align - 1) != 0 {
                    return Err(CommandError::Alignment {
                        what,
                        address: r.address,
                        offset: r.offset,
                        align,
                    });
                }
            }
            BufferRefKind::BINDING => {
                // Binding-table entries are bound 16-byte aligned (checked at
                // submit), so the offset decides.
                if r.offset & (align - 1) != 0 {
                    return Err(CommandError::Alignment {
                        what,
                        address: 0,
                        offset: r.offset,
                        align,
                    });
                }
                if r.slot >= MAX_BINDING_SLOTS {
                    return Err(CommandError::Slot { slot: r.slot });
                }
                if self
                    .slot_sizes
                    .get(r.slot as usize)
                    .is_none_or(|&need| need < end)
                {
                    self.pending_needs.push((r.slot, end));
                }
            }
            BufferRefKind::ALLOCATION => {
                if r.address % 8 != 0 || r.address == 0 {
                    return Err(CommandError::Alignment {
                        what: "an allocation handle",
                        address: r.address,
                        offset: 0,
                        align: 8,
                    });
                }
                if r.offset & (align - 1) != 0 {
                    return Err(CommandError::Alignment {
                        what,
                        address: r.address,
                        offset: r.offset,
                        align,
                    });
                }
            }
            other => return Err(CommandError::RefKind(other.0)),
        }
        Ok(())
    }

    /// The patch a bound argument at kernarg byte `offset` becomes, its
    /// reference checked (and, for a binding slot, its need recorded: the
    /// submission checks the table against it); an allocation's reference
    /// goes into the arena, where the issue reads it.
    fn binding_patch(
        &mut self,
        kind: &'static str,
        offset: u32,
        r: &BufferRef,
    ) -> Result<BindingPatch> {
        let kernarg_offset = u16::try_from(offset).map_err(|_| {
            self.refuse(
                kind,
                CommandError::Arguments(format!(
                    "a bound argument at kernel-argument byte {offset}: the issue patches the first 64 KiB"
                )),
            )
        })?;
        self.check_ref(r, 1, "a bound argument")
            .map_err(|e| self.refuse(kind, e))?;
        match r.kind {
            BufferRefKind::BINDING => Ok(BindingPatch::binding(r.slot, r.offset, kernarg_offset)),
            BufferRefKind::ALLOCATION => Ok(BindingPatch::allocation(
                self.arena.put(r.as_bytes(), 8)?,
                kernarg_offset,
            )),
            // Kernargs::bind writes a direct reference's address into the
            // template; check_ref refused unknown kinds.
            other => Err(self.refuse(kind, CommandError::RefKind(other.0))),
        }
    }

    /// Claims the next slot for a command emitting one packet and
    /// `kernarg_bytes` of arguments; returns its header.
    fn claim(
        &mut self,
        kind: &'static str,
        opcode: CommandOpcode,
        kernarg_bytes: u32,
    ) -> Result<CommandHeader> {
        // The last slot is the control command's.
        if self.cur().ended || self.cur().count + 1 >= self.capacity {
            return Err(self.refuse(
                kind,
                CommandError::BlockFull {
                    capacity: self.capacity,
                },
            ));
        }
        for scope in [self.ordering.acquire, self.ordering.release] {
            if !scope.is_known() {
                return Err(self.refuse(kind, CommandError::Scope(scope.0)));
            }
        }
        let kernargs = u64::from(self.cur().kernarg_size)
            + u64::from(kernarg_bytes.next_multiple_of(KERNARG_ALIGN));
        if kernargs > u64::from(u32::MAX) {
            return Err(self.refuse(
                kind,
                CommandError::BlockSize {
                    what: "kernel-argument bytes",
                    need: kernargs,
                    max: u64::from(u32::MAX),
                },
            ));
        }
        Ok(CommandHeader {
            opcode,
            flags: if self.ordering.barrier {
                CommandFlags::BARRIER
            } else {
                CommandFlags::empty()
            },
            acquire_scope: self.ordering.acquire,
            release_scope: self.ordering.release,
            packet_offset: self.cur().packets,
            packet_count: 1,
            issue_shape: IssueShape::NONE,
            kernarg_offset: self.cur().kernarg_size,
        })
    }

    /// Writes `command` into the next slot (whose header `claim` gave).
    fn append(&mut self, command: Command) -> u32 {
        self.append_bytes(
            command.as_bytes(),
            command.header.packet_count,
            command.kernarg_bytes(),
        )
    }

    /// Writes a command's bytes into the next slot (whose header `claim`
    /// gave); it emits `packets` packets and takes `kernarg_bytes` of
    /// arguments. (Inlined: every command's path ends here.)
    #[inline(always)]
    fn append_bytes(&mut self, command: &[u8], packets: u16, kernarg_bytes: u32) -> u32 {
        if !self.pending_needs.is_empty() {
            self.raise_needs();
        }
        let b = &mut self.blocks[self.current];
        let at = 64 + COMMAND_SIZE * b.count as usize;
        b.storage[at..at + COMMAND_SIZE].copy_from_slice(command);
        b.packets += u32::from(packets);
        b.kernarg_size += kernarg_bytes.next_multiple_of(KERNARG_ALIGN);
        b.count += 1;
        b.count - 1
    }

    /// Raises the slot needs of the command being recorded (rare once a
    /// recording's slots have been used: out of the common path).
    #[cold]
    #[inline(never)]
    fn raise_needs(&mut self) {
        for (slot, end) in self.pending_needs.drain(..) {
            let slot = slot as usize;
            if self.slot_sizes.len() <= slot {
                self.slot_sizes.resize(slot + 1, 0);
            }
            self.slot_sizes[slot] = self.slot_sizes[slot].max(end);
        }
    }

    /// The header of the current block's control command, in its reserved
    /// last slot (or any free slot before it).
    fn control_header(&self, opcode: CommandOpcode) -> Result<CommandHeader> {
        const KIND: &str = "control";
        if self.cur().ended {
            return Err(self.refuse(
                KIND,
                CommandError::BlockFull {
                    capacity: self.capacity,
                },
            ));
        }
        Ok(CommandHeader {
            opcode,
            flags: CommandFlags::BARRIER,
            acquire_scope: FenceScope::AGENT,
            release_scope: if opcode == CommandOpcode::RETURN {
                FenceScope::SYSTEM
            } else {
                FenceScope::AGENT
            },
            packet_offset: self.cur().packets,
            packet_count: 1,
            issue_shape: IssueShape::NONE,
            kernarg_offset: self.cur().kernarg_size,
        })
    }

    /// Ends the current block with a branch to block `target` (recorded
    /// or still to add: checked at [`CommandBufferBuilder::finish`]); the
    /// next block issues once everything before the branch is done.
    pub fn branch(&mut self, target: u32) -> Result<u32> {
        self.pending_needs.clear();
        let header = self.control_header(CommandOpcode::BRANCH)?;
        let mut c = BranchCommand::new_zeroed();
        c.header = header;
        c.target_block = target;
        Ok(self.end_block(c.into()))
    }

    /// Ends the current block with a conditional branch: to `if_true` when
    /// the 8 bytes at `condition`, read once everything before the branch
    /// is done, compare `cond` with `value` (as signed or unsigned
    /// integers, per the condition), else to `if_false`.
    pub fn cond_branch(
        &mut self,
        condition: BufferRef,
        cond: BranchCondition,
        value: u64,
        if_true: u32,
        if_false: u32,
    ) -> Result<u32> {
        const KIND: &str = "conditional branch";
        self.pending_needs.clear();
        if !cond.is_known() {
            return Err(self.refuse(KIND, CommandError::Condition(cond.0)));
        }
        let condition = BufferRef {
            length: 8,
            ..condition
        };
        self.check_ref(&condition, 8, "a branch condition")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.control_header(CommandOpcode::COND_BRANCH)?;
        let mut c = CondBranchCommand::new_zeroed();
        c.header = header;
        c.condition = condition;
        c.cond = cond;
        c.value = value as i64;
        c.true_block = if_true;
        c.false_block = if_false;
        Ok(self.end_block(c.into()))
    }

    /// Ends the current block with a RETURN: the submission completes once
    /// everything before it is done (system-scope release, so the host sees
    /// every result).
    pub fn ret(&mut self) -> Result<u32> {
        self.pending_needs.clear();
        let header = self.control_header(CommandOpcode::RETURN)?;
        let mut r = ReturnCommand::new_zeroed();
        r.header = header;
        Ok(self.end_block(r.into()))
    }

    /// Appends the control command and marks the block ended.
    fn end_block(&mut self, command: Command) -> u32 {
        let index = self.append(command);
        self.blocks[self.current].ended = true;
        index
    }

    /// `kernel`'s [`KernelInfo`] and its device address, written once per
    /// recording.
    fn info_of(&mut self, kernel: &Kernel) -> Result<(u64, KernelInfo)> {
        if let Some(&(_, at, info)) = self.infos.iter().find(|(o, ..)| *o == kernel.object()) {
            return Ok((at, info));
        }
        let info = kernel_info(kernel);
        let at = self.arena.put(info.as_bytes(), 64)?;
        self.infos.push((kernel.object(), at, info));
        self.kernels.push(kernel.clone());
        Ok((at, info))
    }

    /// How many dispatches were recorded from a copy of the one before:
    /// a dispatch of the same kernel and launch as the last direct one,
    /// under the same ordering, with arguments that need nothing from the
    /// launch, is checked and written only where it differs. For tests and
    /// benchmarks; what is recorded is the same either way.
    pub fn repeated_dispatches(&self) -> u32 {
        self.repeated
    }

    /// Records a dispatch of `kernel` over `workgroups` with `args`
    /// (pointer arguments may be [`Kernargs::bind`] references). Returns
    /// the command's index.
    pub fn dispatch(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        args: &Kernargs,
    ) -> Result<u32> {
        self.pending_needs.clear();
        match self.dispatch_again(kernel, &workgroups, args) {
            Again::Recorded(index) => Ok(index),
            Again::Refused(e) => Err(*e),
            Again::Not => self.record_dispatch(kernel, workgroups, args, None),
        }
    }

    /// A dispatch of the same kernel and launch as the last direct one,
    /// under the same ordering, with arguments that need nothing from the
    /// launch: recorded from a copy of the last, which
    /// [`CommandBufferBuilder::record_dispatch`] checked, with only what
    /// differs checked and filled in (its place, arguments and bindings).
    /// [`Again::Not`] for anything else (another kernel, launch or
    /// ordering, a full block, incomplete arguments), which the full path
    /// then records or refuses with its error; [`Again::Refused`] for
    /// arguments it refuses, with the full path's error.
    fn dispatch_again(
        &mut self,
        kernel: &Kernel,
        workgroups: &Workgroups,
        args: &Kernargs,
    ) -> Again {
        const KIND: &str = "dispatch";
        let Some(r) = self.repeat.as_ref() else {
            return Again::Not;
        };
        let b = &self.blocks[self.current];
        let size = r.command.kernarg_size;
        let same = r.object == kernel.object()
            && args.kernel_object() == r.object
            && kernel.agent().handle() == self.agent.handle()
            && r.workgroups == *workgroups
            && r.ordering == self.ordering
            && !b.ended
            && b.count + 1 < self.capacity
            && u64::from(b.kernarg_size)
                + u64::from(
                    size.next_multiple_of(KERNARG_ALIGN)
                        .max(FAST_ARGUMENT_BYTES),
                )
                <= u64::from(u32::MAX);
        let Some(segment) = args.complete().filter(|_| same) else {
            return Again::Not;
        };
        let (mut d, prepared) = (r.command, r.prepared);
        d.header.packet_offset = b.packets;
        d.header.kernarg_offset = b.kernarg_size;
        if prepared {
            match self.place_vouched(args, segment, &mut d) {
                Ok(true) => {
                    self.repeated += 1;
                    return Again::Recorded(self.append_bytes(
                        d.as_bytes(),
                        d.header.packet_count,
                        FAST_ARGUMENT_BYTES,
                    ));
                }
                Ok(false) => {}
                Err(e) => return Again::Refused(Box::new(e)),
            }
        }
        let mut patches = std::mem::take(&mut self.patches);
        patches.clear();
        // The fast layout only for a repeat that is vouched for: one whose
        // packet is prepared (as the full path decides).
        let placed = self.place_arguments(KIND, args, segment, &mut patches, prepared);
        d.binding_count = patches.len() as u16;
        self.patches = patches;
        match placed {
            Ok((template, bindings, shape)) => {
                d.kernarg_template = template;
                d.bindings = bindings;
                // What `issue_shape` says, known without asking: the
                // repeat's packet, flags and places are as vouchable as the
                // last's (direct, 64- and 16-byte aligned), so its
                // arguments decide (placed in the fast layout only if
                // `prepared`).
                d.header.issue_shape = shape.unwrap_or(IssueShape::NONE);
                debug_assert_eq!(d.header.issue_shape, d.issue_shape(&self.patches));
                self.repeated += 1;
                let share = if shape.is_some() {
                    FAST_ARGUMENT_BYTES
                } else {
                    size
                };
                Again::Recorded(self.append_bytes(d.as_bytes(), d.header.packet_count, share))
            }
            Err(e) => Again::Refused(Box::new(e)),
        }
    }

    /// [`Self::place_arguments`] for the common repeat, checked without
    /// building an error: arguments in the fast layout whose bound
    /// arguments are all binding-table references to slots already seen,
    /// each in range. Places them and sets `d`'s template, patch list,
    /// binding count and [`IssueShape`]; `false` (`d` untouched) for
    /// anything else, which the full path decides and, if wrong, names.
    fn place_vouched(
        &mut self,
        args: &Kernargs,
        segment: &[u8],
        d: &mut DispatchCommand,
    ) -> Result<bool> {
        let bound = args.patches();
        if bound.len() > FAST_PATCHES {
            return Ok(false);
        }
        let mut own = [BindingPatch::FILLER; FAST_PATCHES];
        for (patch, &(offset, r)) in own.iter_mut().zip(bound) {
            // What check_ref and binding_patch accept: a slot already seen
            // (so below MAX_BINDING_SLOTS), a range that does not overflow;
            // a bound argument needs no alignment. (A need pended here
            // before a later argument sends the dispatch down the full path
            // is pended there again: the larger end wins.)
            let (Some(end), true, Ok(place)) = (
                r.offset.checked_add(r.length),
                r.kind == BufferRefKind::BINDING,
                u16::try_from(offset),
            ) else {
                return Ok(false);
            };
            let Some(&need) = self.slot_sizes.get(r.slot as usize) else {
                return Ok(false);
            };
            if need < end {
                self.pending_needs.push((r.slot, end));
            }
            *patch = BindingPatch::binding(r.slot, r.offset, place);
        }
        let own = &own[..bound.len()];
        let (Some(shape), Some(list)) = (
            DispatchCommand::fast_shape(segment.len() as u32, own),
            BindingPatch::fast_list(own),
        ) else {
            return Ok(false);
        };
        let (template, bindings) = self.put_fast(segment, list)?;
        d.kernarg_template = template;
        d.bindings = bindings;
        d.binding_count = own.len() as u16;
        d.header.issue_shape = shape;
        debug_assert_eq!(shape, d.issue_shape(own));
        Ok(true)
    }

    /// A dispatch's binding patches (into `patches`), then its template
    /// and patches in the arena: their device addresses (0 for none), and
    /// the [`IssueShape`] of the issue's fast layout if they have it, which
    /// they get if `fast` and the arguments fit it
    /// ([`DispatchCommand::fast_shape`]): the template readable for
    /// [`FAST_ARGUMENT_BYTES`], the list padded to [`FAST_PATCHES`] with
    /// copies of its last patch (`patches` keeps the dispatch's own).
    fn place_arguments(
        &mut self,
        kind: &'static str,
        args: &Kernargs,
        segment: &[u8],
        patches: &mut Vec<BindingPatch>,
        fast: bool,
    ) -> Result<(u64, u64, Option<IssueShape>)> {
        for &(offset, buffer) in args.patches() {
            patches.push(self.binding_patch(kind, offset, &buffer)?);
        }
        // (A shape allows at most FAST_PATCHES patches.)
        if fast
            && let Some(shape) = DispatchCommand::fast_shape(segment.len() as u32, patches)
            && let Some(list) = BindingPatch::fast_list(patches)
        {
            let (template, bindings) = self.put_fast(segment, list)?;
            return Ok((template, bindings, Some(shape)));
        }
        let template = if segment.is_empty() {
            0
        } else {
            self.arena.put(segment, 16)?
        };
        let bindings = if patches.is_empty() {
            0
        } else {
            self.arena.put(patches.as_bytes(), 16)?
        };
        Ok((template, bindings, None))
    }

    /// Puts a template and patch list in the fast layout (the template
    /// readable for [`FAST_ARGUMENT_BYTES`]), or shares what was put last
    /// if equal; returns their device addresses. (Inlined: a call costs the
    /// repeat's path about 15 instructions of its 460.)
    #[inline(always)]
    fn put_fast(
        &mut self,
        segment: &[u8],
        list: [BindingPatch; FAST_PATCHES],
    ) -> Result<(u64, u64)> {
        let last = &mut self.last_fast;
        let len = segment.len();
        if last.template_at == 0 || last.template_len != len || last.template[..len] != *segment {
            last.template_at =
                self.arena
                    .put_readable(segment, FAST_ARGUMENT_BYTES as usize, 16)?;
            last.template[..len].copy_from_slice(segment);
            last.template_len = len;
        }
        // As bytes: one wide compare, not field by field.
        if last.patches_at == 0 || last.patches.as_bytes() != list.as_bytes() {
            last.patches_at = self.arena.put(list.as_bytes(), 16)?;
            last.patches = list;
        }
        Ok((last.template_at, last.patches_at))
    }

    /// Records a dispatch whose workgroup count, three u32s, is read from
    /// `count` when the block issues (its contents must be final by
    /// then: written before the submission). `workgroups.count` is ignored.
    pub fn dispatch_indirect(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        count: BufferRef,
        args: &Kernargs,
    ) -> Result<u32> {
        self.record_dispatch(
            kernel,
            workgroups,
            args,
            Some((count, DispatchFlags::INDIRECT_STATIC)),
        )
    }

    /// Records a dispatch whose workgroup count is read when the dispatch
    /// is about to run, after everything before it: earlier commands of the
    /// same command buffer may compute it. It costs a second packet, a
    /// one-work-item patch kernel that writes the count into the dispatch's
    /// packet and publishes it (a count of 0 makes it a no-op).
    pub fn dispatch_indirect_dynamic(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        count: BufferRef,
        args: &Kernargs,
    ) -> Result<u32> {
        self.record_dispatch(
            kernel,
            workgroups,
            args,
            Some((count, DispatchFlags::INDIRECT_DYNAMIC)),
        )
    }

    fn record_dispatch(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        args: &Kernargs,
        indirect: Option<(BufferRef, DispatchFlags)>,
    ) -> Result<u32> {
        const KIND: &str = "dispatch";
        // (dispatch_again pends nothing before it leaves the dispatch here.)
        self.pending_needs.clear();
        let name = || kernel.name().to_string();
        if kernel.agent().handle() != self.agent.handle() {
            return Err(self.refuse(
                KIND,
                CommandError::Agent {
                    kernel: name(),
                    loaded: kernel.agent().info().name.clone(),
                    recording: self.agent_name.clone(),
                },
            ));
        }
        if args.kernel_object() != kernel.object() {
            return Err(self.refuse(KIND, CommandError::OtherKernel(name())));
        }
        // The launch as a plain dispatch would check it, with one
        // workgroup per dimension standing in for an indirect count.
        let count = if indirect.is_some() {
            [1; 3]
        } else {
            workgroups.count
        };
        let mut grid = [1u32; 3];
        for axis in 0..3 {
            grid[axis] = count[axis]
                .checked_mul(u32::from(workgroups.size[axis]))
                .ok_or_else(|| {
                    self.refuse(
                        KIND,
                        CommandError::Launch(format!(
                            "{}: {count:?} workgroups of {:?} overflow the grid",
                            name(),
                            workgroups.size
                        )),
                    )
                })?;
        }
        let launch = Launch {
            dimensions: workgroups.dimensions,
            grid,
            workgroup: workgroups.size,
            dynamic_lds: workgroups.dynamic_lds,
            ordering: Ordering::AGENT,
        };
        let facts = KernelFacts {
            meta: kernel.metadata(),
            object: kernel.object(),
            group_segment_size: kernel.group_segment_size(),
            private_segment_size: kernel.private_segment_size(),
        };
        // Zero workgroups is a valid recording (the issue writes a no-op).
        // A launch checked for this kernel just before is not checked again.
        let this = (kernel.object(), workgroups, indirect.is_some());
        if !count.contains(&0) && self.last_launch != Some(this) {
            let checked: Result<KernelDispatch> = plan(facts, &self.limits, &launch, args);
            checked.map_err(|e| self.refuse(KIND, CommandError::Launch(e.to_string())))?;
        }
        for arg in args.hidden() {
            let unknown = arg.value_kind == "hidden_queue_ptr"
                || (indirect.is_some()
                    && (arg.value_kind.starts_with("hidden_block_count")
                        || arg.value_kind.starts_with("hidden_remainder")));
            if unknown {
                return Err(self.refuse(
                    KIND,
                    CommandError::Hidden {
                        kernel: name(),
                        argument: arg.value_kind.clone(),
                    },
                ));
            }
        }
        let segment = args
            .template(&launch, 0)
            .map_err(|e| self.refuse(KIND, CommandError::Arguments(e.to_string())))?;
        if let Some((r, _)) = &indirect {
            if r.length < 12 {
                return Err(self.refuse(
                    KIND,
                    CommandError::Range {
                        offset: r.offset,
                        length: r.length,
                        problem: "is shorter than the 12 bytes of a workgroup count",
                    },
                ));
            }
            self.check_ref(r, 4, "an indirect workgroup count")
                .map_err(|e| self.refuse(KIND, e))?;
        }
        let mut patches = std::mem::take(&mut self.patches);
        patches.clear();
        // The fast layout for a dispatch whose packet the recorder
        // prepares (direct, with workgroups).
        let prepared = indirect.is_none() && !count.contains(&0);
        let placed = self.place_arguments(KIND, args, &segment, &mut patches, prepared);
        let binding_count = patches.len() as u16;
        self.patches = patches;
        let (template, bindings, shape) = placed?;
        let recorded = self.record_dispatch_with(
            kernel,
            workgroups,
            indirect,
            (template, bindings, binding_count, shape.is_some()),
        );
        if recorded.is_ok() {
            self.last_launch = Some(this);
        }
        recorded
    }

    /// [`CommandBufferBuilder::record_dispatch`] once everything is
    /// checked and the arguments are placed (`arguments`: the template's
    /// and the patches' addresses, the number of patches): the slot, the
    /// kernel's info, the command.
    fn record_dispatch_with(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        indirect: Option<(BufferRef, DispatchFlags)>,
        arguments: (u64, u64, u16, bool),
    ) -> Result<u32> {
        let (template, bindings, binding_count, fast) = arguments;
        const KIND: &str = "dispatch";
        let size = kernel.kernarg_segment_size();
        let dynamic = matches!(indirect, Some((_, DispatchFlags::INDIRECT_DYNAMIC)));
        let claimed = if dynamic {
            size.next_multiple_of(KERNARG_ALIGN) + size_of::<PatchArgs>() as u32
        } else if fast {
            FAST_ARGUMENT_BYTES
        } else {
            size
        };
        let mut header = self.claim(KIND, CommandOpcode::DISPATCH, claimed)?;
        if dynamic {
            header.packet_count = 2;
        }
        let (info_at, info) = self.info_of(kernel)?;
        let mut d = DispatchCommand::new_zeroed();
        d.header = header;
        d.kernel = info_at;
        d.dispatch_flags = indirect.map_or(DispatchFlags::empty(), |(_, flags)| flags);
        d.workgroup_size = workgroups.size;
        d.workgroup_count = workgroups.count;
        d.dynamic_group_segment_size = workgroups.dynamic_lds;
        d.kernarg_template = template;
        d.kernarg_size = size;
        d.binding_count = binding_count;
        d.dimensions = workgroups.dimensions;
        d.bindings = bindings;
        if let Some((r, _)) = indirect {
            d.workgroup_count_ref = r;
        } else {
            // The packet the issue would build, prepared now: the issue
            // copies it and fills in the kernarg address. The launch was
            // checked above, so a refusal here cannot happen; the issue
            // would build (and refuse) it again. Identical dispatches in a
            // row share one.
            let h = &d.header;
            let key = (
                kernel.object(),
                workgroups,
                [h.flags.bits(), h.acquire_scope.0, h.release_scope.0],
            );
            match self.last_packet {
                Some((k, at)) if k == key => d.packet = at,
                _ => {
                    if let Ok(Some(packet)) = d.build_packet(&info, 0, d.workgroup_count) {
                        d.packet = self.arena.put(packet.published().as_bytes(), 64)?;
                        self.last_packet = Some((key, d.packet));
                    }
                }
            }
        }
        d.header.issue_shape = d.issue_shape(&self.patches);
        if indirect.is_none() {
            self.repeat = Some(Repeat {
                object: kernel.object(),
                workgroups,
                ordering: self.ordering,
                command: d,
                prepared: d.packet != 0,
            });
        }
        Ok(self.append_bytes(d.as_bytes(), d.header.packet_count, claimed))
    }

    /// Records a fill of `target` with `pattern` (1, 2, 4, 8 or 16 bytes;
    /// the length a whole number of patterns).
    pub fn fill(&mut self, target: BufferRef, pattern: &[u8]) -> Result<u32> {
        const KIND: &str = "fill";
        self.pending_needs.clear();
        let problem = if !PATTERN_SIZES.contains(&pattern.len()) {
            Some("a pattern is 1, 2, 4, 8 or 16 bytes")
        } else if !target.length.is_multiple_of(pattern.len() as u64) {
            Some("the length is not a whole number of patterns")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(self.refuse(
                KIND,
                CommandError::Pattern {
                    pattern: pattern.len(),
                    length: target.length,
                    problem,
                },
            ));
        }
        self.check_ref(&target, 1, "a fill target")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.claim(KIND, CommandOpcode::FILL, size_of::<FillArgs>() as u32)?;
        let mut f = FillCommand::new_zeroed();
        f.header = header;
        f.target = target;
        f.pattern[..pattern.len()].copy_from_slice(pattern);
        f.pattern_length = pattern.len() as u8;
        Ok(self.append_bytes(f.as_bytes(), 1, size_of::<FillArgs>() as u32))
    }

    /// Records a copy of `source` to `target` (equal lengths, any
    /// alignment, not overlapping).
    pub fn copy(&mut self, source: BufferRef, target: BufferRef) -> Result<u32> {
        const KIND: &str = "copy";
        self.pending_needs.clear();
        if source.length != target.length {
            return Err(self.refuse(
                KIND,
                CommandError::CopyLength {
                    source_length: source.length,
                    target_length: target.length,
                },
            ));
        }
        self.check_ref(&source, 1, "a copy source")
            .map_err(|e| self.refuse(KIND, e))?;
        self.check_ref(&target, 1, "a copy target")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.claim(KIND, CommandOpcode::COPY, size_of::<CopyArgs>() as u32)?;
        let mut c = CopyCommand::new_zeroed();
        c.header = header;
        c.source = source;
        c.target = target;
        Ok(self.append_bytes(c.as_bytes(), 1, size_of::<CopyArgs>() as u32))
    }

    /// Records a write of `data`, kept with the recording, to `target`
    /// (whose length is `data`'s).
    pub fn update(&mut self, target: BufferRef, data: &[u8]) -> Result<u32> {
        const KIND: &str = "update";
        self.pending_needs.clear();
        if data.is_empty() || data.len() > UPDATE_MAX {
            return Err(self.refuse(KIND, CommandError::UpdateLength(data.len())));
        }
        let target = BufferRef {
            length: data.len() as u64,
            ..target
        };
        self.check_ref(&target, 1, "an update target")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.claim(KIND, CommandOpcode::UPDATE, size_of::<CopyArgs>() as u32)?;
        let source = self.arena.put(data, 16)?;
        let mut u = UpdateCommand::new_zeroed();
        u.header = header;
        u.source_data = source;
        u.target = target;
        Ok(self.append(u.into()))
    }

    /// Records an execution barrier: later commands start after every
    /// earlier one completed, with the current ordering's fence scopes.
    pub fn barrier(&mut self) -> Result<u32> {
        self.pending_needs.clear();
        let mut header = self.claim("barrier", CommandOpcode::BARRIER, 0)?;
        header.flags = CommandFlags::BARRIER;
        let mut b = BarrierCommand::new_zeroed();
        b.header = header;
        Ok(self.append(b.into()))
    }

    /// Ends the current block with a RETURN if it has no control command
    /// yet, checks that every block ends in one and that every branch
    /// target exists, and hands over the recording.
    pub fn finish(mut self) -> Result<CommandBuffer> {
        if !self.cur().ended {
            self.ret()?;
        }
        let count = self.blocks.len() as u32;
        let mut recorded = Vec::new();
        for index in 0..self.blocks.len() {
            let b = &self.blocks[index];
            if !b.ended {
                return Err(Error::InvalidArgument {
                    what: "command buffer",
                    problem: format!("block {index} does not end in a branch or return"),
                });
            }
            let last = 64 + COMMAND_SIZE * (b.count as usize - 1);
            let control =
                Command::read_from_bytes(&b.storage[last..last + COMMAND_SIZE]).map_err(|_| {
                    Error::InvalidArgument {
                        what: "command buffer",
                        problem: "unreadable command".into(),
                    }
                })?;
            let targets = match control.view() {
                Ok(CommandView::Branch(c)) => vec![c.target_block],
                Ok(CommandView::CondBranch(c)) => vec![c.true_block, c.false_block],
                _ => Vec::new(),
            };
            if let Some(&t) = targets.iter().find(|&&t| t >= count) {
                return Err(Error::Command {
                    block: index as u32,
                    index: b.count - 1,
                    kind: "branch",
                    problem: CommandError::Target {
                        target: t,
                        blocks: count,
                    },
                });
            }
            // The issue order: the dispatches the recorder vouches for
            // first, then the others grouped by kind (stably), so each
            // wave of the block-issue kernel runs one kind's code. Without
            // it, the vouched dispatches the block starts with.
            let vouched = |i: u32| {
                let header = 64 + COMMAND_SIZE * i as usize;
                let shape = core::mem::offset_of!(CommandHeader, issue_shape);
                let shape =
                    u16::from_le_bytes([b.storage[header + shape], b.storage[header + shape + 1]]);
                IssueShape(shape).is_vouched()
            };
            let (issue_order, vouched_count) = if self.sort_by_kind {
                // A counting sort, stable: key 0 for the vouched, then
                // 1 + the opcode.
                let key = |i: u32| {
                    if vouched(i) {
                        0
                    } else {
                        1 + usize::from(b.storage[64 + COMMAND_SIZE * i as usize])
                    }
                };
                let mut starts = [0u32; 258];
                for i in 0..b.count {
                    starts[key(i) + 1] += 1;
                }
                let vouched_count = starts[1];
                for k in 1..starts.len() {
                    starts[k] += starts[k - 1];
                }
                let mut order = vec![0u32; b.count as usize];
                for i in 0..b.count {
                    let k = key(i);
                    order[starts[k] as usize] = i;
                    starts[k] += 1;
                }
                (self.arena.put(order.as_bytes(), 16)?, vouched_count)
            } else {
                (0, (0..b.count).take_while(|&i| vouched(i)).count() as u32)
            };
            let b = &mut self.blocks[index];
            let header = CommandBlockHeader {
                block_index: index as u32,
                command_count: b.count,
                packet_count: b.packets,
                kernarg_size: b.kernarg_size,
                issue_order,
                vouched_count,
                reserved0: 0,
                reserved: [0; 4],
            };
            b.storage[..64].copy_from_slice(header.as_bytes());
        }
        // The command buffer header and its block list.
        let mut head = CommandBufferHeader::new_zeroed();
        head.magic = COMMAND_BUFFER_MAGIC;
        head.abi_version = aqueduct_abi::ABI_VERSION;
        head.block_count = count;
        head.entry_block = 0;
        head.binding_count = self.slot_sizes.len() as u32;
        head.max_block_packet_count = self.blocks.iter().map(|b| b.packets).max().unwrap_or(0);
        head.max_block_kernarg_size = self
            .blocks
            .iter()
            .map(|b| b.kernarg_size)
            .max()
            .unwrap_or(0);
        let mut bytes = vec![0u8; 64 + 8 * self.blocks.len()];
        let at = self.arena.put(&bytes, 64)?;
        head.blocks = at + 64;
        bytes[..64].copy_from_slice(head.as_bytes());
        for (k, b) in self.blocks.iter().enumerate() {
            bytes[64 + 8 * k..72 + 8 * k].copy_from_slice(&b.storage.address().to_le_bytes());
        }
        let chunk = self
            .arena
            .chunks
            .last_mut()
            .ok_or_else(|| Error::InvalidArgument {
                what: "command buffer",
                problem: "no data chunk".into(),
            })?;
        let start = (at - chunk.address()) as usize;
        chunk[start..start + bytes.len()].copy_from_slice(&bytes);
        for b in self.blocks {
            recorded.push(RecordedBlock {
                commands: b.count,
                packets: b.packets,
                kernarg_size: b.kernarg_size,
                storage: b.storage,
            });
        }
        Ok(CommandBuffer {
            inner: std::sync::Arc::new(Recorded {
                header: at,
                blocks: recorded,
                arena: self.arena,
                kernels: self
                    .infos
                    .iter()
                    .map(|&(_, at, _)| at)
                    .zip(self.kernels)
                    .collect(),
                slot_sizes: self.slot_sizes,
                agent: self.agent,
            }),
        })
    }
}

/// A finished recording: one block in device memory, replayable with any
/// binding table. Submissions keep it alive until they complete.
#[derive(Clone)]
pub struct CommandBuffer {
    inner: std::sync::Arc<Recorded>,
}

struct Recorded {
    header: u64,
    blocks: Vec<RecordedBlock>,
    arena: Arena,
    /// The dispatched kernels, with their info's device address.
    kernels: Vec<(u64, Kernel)>,
    slot_sizes: Vec<u64>,
    agent: crate::agent::Agent,
}

/// One recorded block.
struct RecordedBlock {
    storage: HostBuffer<u8>,
    commands: u32,
    packets: u32,
    kernarg_size: u32,
}

impl RecordedBlock {
    /// The command whose packets include the block's packet `offset`: its
    /// index and kind (with the kernel for a dispatch, named from
    /// `kernels`).
    fn command_at_packet(&self, offset: u32, kernels: &[(u64, Kernel)]) -> Option<(u32, String)> {
        (0..self.commands).find_map(|index| {
            let at = 64 + COMMAND_SIZE * index as usize;
            let command = Command::read_from_bytes(&self.storage[at..at + COMMAND_SIZE]).ok()?;
            let h = command.header;
            let end = h.packet_offset + u32::from(h.packet_count);
            if !(h.packet_offset..end).contains(&offset) {
                return None;
            }
            let what = match command.view() {
                Ok(CommandView::Dispatch(d)) => {
                    let name = kernels
                        .iter()
                        .find(|(info, _)| *info == d.kernel)
                        .map_or("an unknown kernel", |(_, k)| k.name());
                    format!("dispatch of {name}")
                }
                Ok(CommandView::Fill(_)) => "fill".into(),
                Ok(CommandView::Copy(_)) => "copy".into(),
                Ok(CommandView::Update(_)) => "update".into(),
                Ok(CommandView::Barrier(_)) => "barrier".into(),
                Ok(CommandView::Branch(_)) => "branch".into(),
                Ok(CommandView::CondBranch(_)) => "conditional branch".into(),
                Ok(CommandView::Return(_)) => "return".into(),
                _ => format!("opcode {}", h.opcode.0),
            };
            Some((index, what))
        })
    }
}

impl std::fmt::Debug for CommandBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("blocks", &self.inner.blocks.len())
            .field("commands", &self.len())
            .field("packets", &self.packets())
            .field("kernarg_size", &self.kernarg_size())
            .field("binding_slots", &self.inner.slot_sizes.len())
            .finish()
    }
}

impl CommandBuffer {
    /// Blocks recorded.
    pub fn blocks(&self) -> u32 {
        self.inner.blocks.len() as u32
    }

    /// Commands in all blocks, control commands included.
    pub fn len(&self) -> u32 {
        self.inner.blocks.iter().map(|b| b.commands).sum()
    }

    /// Whether no block holds a command.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// AQL packets of the largest block (what a queue must hold at once,
    /// with one more for its issue).
    pub fn packets(&self) -> u32 {
        self.inner
            .blocks
            .iter()
            .map(|b| b.packets)
            .max()
            .unwrap_or(0)
    }

    /// Kernel-argument bytes of all blocks: what one submission reserves.
    pub fn kernarg_size(&self) -> u32 {
        self.inner.blocks.iter().map(|b| b.kernarg_size).sum()
    }

    /// Binding-table slots the commands use, with the bytes each must hold.
    pub fn binding_sizes(&self) -> &[u64] {
        &self.inner.slot_sizes
    }

    /// Device address of the [`CommandBufferHeader`].
    pub fn address(&self) -> u64 {
        self.inner.header
    }

    /// Block `block`'s header as the device reads it (`None` past the
    /// recording).
    pub fn block_header(&self, block: u32) -> Option<CommandBlockHeader> {
        let b = self.inner.blocks.get(block as usize)?;
        CommandBlockHeader::read_from_bytes(&b.storage[..64]).ok()
    }

    /// Command `index` of block `block` as the device reads it (`None`
    /// past the recording).
    pub fn command(&self, block: u32, index: u32) -> Option<Command> {
        let b = self.inner.blocks.get(block as usize)?;
        if index >= b.commands {
            return None;
        }
        let at = 64 + COMMAND_SIZE * index as usize;
        Command::read_from_bytes(&b.storage[at..at + COMMAND_SIZE]).ok()
    }

    /// The `len` bytes of the recording's own data (kernel-argument
    /// templates, binding patches and the allocation references they name,
    /// kernel infos, prepared packets, update data) at `address`, a device
    /// address a command names (`None` if they are not all in one of its
    /// chunks; bytes of a chunk past what was recorded read as zeros).
    pub fn data(&self, address: u64, len: usize) -> Option<&[u8]> {
        self.inner.arena.chunks.iter().find_map(|c| {
            let at = usize::try_from(address.checked_sub(c.address())?).ok()?;
            c.get(at..at.checked_add(len)?)
        })
    }
}

/// Host-accessible memory the host writes through a shared reference: the
/// kernarg ring, whose regions belong each to one submission, and which
/// submissions read back (a fault's block) after the device is done.
pub(crate) struct SharedBytes(pub(crate) HostBuffer<u8>);

impl SharedBytes {
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn address(&self) -> u64 {
        self.0.address()
    }

    /// Copies `bytes` to offset `at`.
    pub(crate) fn write(&self, at: usize, bytes: &[u8]) {
        assert!(at + bytes.len() <= self.0.len(), "inside the ring");
        // SAFETY: inside the allocation (asserted), host-accessible memory;
        // the region belongs to the submission being written, which no
        // other host thread writes and the device reads only after the
        // doorbell.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (self.0.address() as *mut u8).add(at),
                bytes.len(),
            )
        };
    }
}

/// A byte ring in kernarg memory: per-submission reservations, released in
/// submission order.
pub(crate) struct KernargRing {
    pub(crate) storage: std::sync::Arc<SharedBytes>,
    /// Bytes ever reserved and ever released (offsets mod the capacity).
    pub(crate) write: u64,
    pub(crate) read: u64,
}

impl KernargRing {
    pub(crate) fn capacity(&self) -> u64 {
        self.storage.len() as u64
    }

    /// `size` bytes, 64-byte aligned, never wrapping: the offset in the
    /// storage and the new write position, or None without room.
    pub(crate) fn reserve(&self, size: u64) -> Option<(u64, u64)> {
        let cap = self.capacity();
        let size = size.next_multiple_of(64);
        let at = self.write % cap;
        // Skip the tail if the reservation would straddle the end.
        let start = if at + size > cap {
            self.write + (cap - at)
        } else {
            self.write
        };
        let end = start + size;
        (end - self.read <= cap).then_some((start % cap, end))
    }
}

/// A submitted command buffer: wait for it with [`Submission::wait`].
#[must_use = "a submission is only known complete after wait()"]
pub struct Submission {
    queue: Queue,
    signal: Signal,
    /// The recording, alive while the device may read it.
    buffer: CommandBuffer,
    /// The kernarg ring, and where this submission's block issue states
    /// are in it (their packet bases say where each block's packets went).
    ring: std::sync::Arc<SharedBytes>,
    issues_at: usize,
}

impl Submission {
    /// Waits until the block's RETURN completed (everything before it is
    /// done and visible to the host), or fails on a queue fault or timeout.
    ///
    /// A fault names the command whose packet the queue stopped at
    /// ([`Error::CommandFault`]): its index and, for a dispatch, the kernel.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        match self
            .queue
            .wait(&self.signal, SignalCondition::LT, 1, timeout)
        {
            Ok(_) => Ok(()),
            Err(fault @ Error::QueueFault { .. }) => Err(self.blame(fault)),
            Err(e) => Err(e),
        }
    }

    /// The command the queue stopped at ([`blame`]).
    fn blame(&self, fault: Error) -> Error {
        blame(
            &self.buffer,
            self.ring.address() + self.issues_at as u64,
            self.queue.read_index(),
            fault,
        )
    }

    /// Whether the block's RETURN completed.
    pub fn is_done(&self) -> bool {
        self.signal.load(LoadOrder::Acquire) < 1
    }
}

/// The command of `buffer` a queue stopped at, given its read index `at`
/// (a faulting packet is never consumed) and the submission's issue states
/// at `issues` (each block's packet base says where its packets went), as
/// an [`Error::CommandFault`] around `fault`; `fault` itself when the
/// queue stopped elsewhere.
///
/// The issue states must be live: the caller keeps the ring holding them.
pub(crate) fn blame(buffer: &CommandBuffer, issues: u64, at: u64, fault: Error) -> Error {
    let inner = &buffer.inner;
    for (b, block) in inner.blocks.iter().enumerate() {
        // The block's latest issue: its first packet, or 0 if never
        // issued.
        let base = issues
            + (size_of::<BlockIssue>() * b + std::mem::offset_of!(BlockIssue, packet_base)) as u64;
        // SAFETY: the caller's contract: live, host-accessible issue
        // states (8-aligned: 64-aligned states, an 8-aligned field), which
        // the device no longer writes (its queue stopped).
        let first = unsafe { std::ptr::read_volatile(base as *const u64) };
        if first == 0 {
            continue;
        }
        let found = if at == first.wrapping_sub(1) {
            Some((block.commands, "the block-issue kernel".to_string()))
        } else {
            at.checked_sub(first)
                .filter(|&o| o < u64::from(block.packets))
                .and_then(|o| block.command_at_packet(o as u32, &inner.kernels))
        };
        if let Some((index, what)) = found {
            return Error::CommandFault {
                block: b as u32,
                index,
                what,
                fault: Box::new(fault),
            };
        }
    }
    fault
}

/// How a submission's blocks are issued on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueMode {
    /// The measured default: branches issue blocks of at most
    /// [`SERIAL_THRESHOLD`] commands themselves, the rest go through the
    /// block-issue kernel.
    Auto,
    /// Every block through the block-issue kernel (`cmd_block_issue`), one
    /// work-item per command.
    Parallel,
    /// Every block issued serially by one work-item: the entry block by
    /// `cmd_block_issue_serial`, the others by the branch that continues
    /// with them (for debugging: commands issue one at a time, in the
    /// block's issue order, grouped by kind unless
    /// [`CommandBufferBuilder::set_sort_by_kind`] turned that off).
    Serial,
    /// A branch issues a block of at most this many commands itself,
    /// serially, saving the block-issue dispatch (to tune on hardware,
    /// where a dispatch's launch costs what the simulator cannot show).
    SerialUpTo(u32),
}

/// The largest block [`IssueMode::Auto`] has a branch issue serially: 0,
/// measured. `cargo xtask cmdbuf-bench` runs chains of N-command blocks
/// both ways: for every N from 1 to 6 the serial issue executes more
/// wave-instructions (gfx942, N = 1: about 1,150 against 650 for the
/// branch plus the issue dispatch), and saves 0.9 dispatches per block, whose
/// launch cost only hardware shows. Until a hardware run says otherwise,
/// blocks go through the block-issue kernel.
pub const SERIAL_THRESHOLD: u32 = 0;

impl IssueMode {
    /// [`Execution::serial_threshold`] for this mode.
    fn serial_threshold(self) -> u32 {
        match self {
            Self::Auto => SERIAL_THRESHOLD,
            Self::Parallel => 0,
            Self::Serial => u32::MAX,
            Self::SerialUpTo(n) => n,
        }
    }
}

/// The device library's kernels a command buffer's issue dispatches: the
/// block-issue kernels, and the fill, copy, control and patch kernels'
/// infos, in kernarg memory, 64 bytes each.
pub(crate) struct IssueKernels {
    pub(crate) issue: Kernel,
    /// `cmd_block_issue_serial`, the entry block's issue in
    /// [`IssueMode::Serial`].
    pub(crate) serial: Kernel,
    infos: HostBuffer<u8>,
    _kernels: [Kernel; 4],
}

impl IssueKernels {
    /// The kernels of `library`, their infos in `queue`'s kernarg pool.
    pub(crate) fn new(queue: &Queue, library: &Executable) -> Result<Self> {
        let issue = library.kernel("cmd_block_issue")?;
        let serial = library.kernel("cmd_block_issue_serial")?;
        let fill = library.kernel("blit_fill")?;
        let copy = library.kernel("blit_copy")?;
        let control = library.kernel("cmd_branch")?;
        let patch = library.kernel("cmd_patch_dispatch")?;
        for (kernel, want) in [
            (&fill, size_of::<FillArgs>()),
            (&copy, size_of::<CopyArgs>()),
            (&control, size_of::<BranchArgs>()),
            (&patch, size_of::<PatchArgs>()),
        ] {
            if kernel.kernarg_segment_size() as usize > want.next_multiple_of(16) {
                return Err(Error::InvalidArgument {
                    what: "command queue",
                    problem: format!(
                        "{} takes {} bytes of arguments, the issue writes {want}",
                        kernel.name(),
                        kernel.kernarg_segment_size()
                    ),
                });
            }
        }
        let mut infos = queue.kernarg_pool().alloc_host::<u8>(256)?;
        for (k, kernel) in [&fill, &copy, &control, &patch].into_iter().enumerate() {
            infos[64 * k..64 * k + 64].copy_from_slice(kernel_info(kernel).as_bytes());
        }
        Ok(Self {
            issue,
            serial,
            infos,
            _kernels: [fill, copy, control, patch],
        })
    }
}

/// Refuses a queue larger than the device library issues into
/// ([`aqueduct_abi::aql_ring::MAX_QUEUE_PACKETS`]).
fn check_queue_size(queue: &Queue) -> Result<()> {
    let max = aqueduct_abi::aql_ring::MAX_QUEUE_PACKETS;
    if queue.size() > max {
        return Err(Error::InvalidArgument {
            what: "queue",
            problem: format!(
                "{} packets: the device library issues into queues of at most {max}",
                queue.size()
            ),
        });
    }
    Ok(())
}

/// Checks a submission of `buffer` with `bindings` to `queue`: the agent,
/// every binding slot the commands use, the queue's size.
pub(crate) fn check_submission(
    buffer: &CommandBuffer,
    bindings: &[BindingTableEntry],
    queue: &Queue,
) -> Result<()> {
    if buffer.inner.agent.handle() != queue.agent().handle() {
        return Err(Error::InvalidArgument {
            what: "submit",
            problem: format!(
                "the command buffer was recorded for {}, the queue is on {}",
                buffer.inner.agent.info().name,
                queue.agent().info().name
            ),
        });
    }
    check_queue_size(queue)?;
    if bindings.len() > MAX_BINDING_SLOTS as usize {
        return Err(Error::InvalidArgument {
            what: "binding table",
            problem: format!(
                "{} slots, more than the {MAX_BINDING_SLOTS} a submission binds",
                bindings.len()
            ),
        });
    }
    for (slot, &need) in buffer.inner.slot_sizes.iter().enumerate() {
        let problem = match bindings.get(slot) {
            None => Some(format!(
                "slot {slot} is not bound ({} bound)",
                bindings.len()
            )),
            Some(b) if b.length < need => Some(format!(
                "slot {slot} holds {} bytes, the commands reach {need}",
                b.length
            )),
            Some(b) if b.address % 16 != 0 => Some(format!(
                "slot {slot} at {:#x} is not 16-byte aligned",
                b.address
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            return Err(Error::InvalidArgument {
                what: "binding table",
                problem,
            });
        }
    }
    let slots = u64::from(buffer.packets()) + 1;
    if slots + 1 > u64::from(queue.size()) {
        return Err(Error::InvalidArgument {
            what: "submit",
            problem: format!(
                "a block needs {slots} packet slots at once (and its branch one more), the queue holds {}",
                queue.size()
            ),
        });
    }
    Ok(())
}

/// Where a submission's state goes in its kernarg reservation: the
/// execution state, each block's issue-kernel argument and issue state, the
/// binding table, then each block's kernel arguments (64-byte aligned
/// each). Offsets from the reservation's start.
pub(crate) struct SubmissionLayout {
    pub(crate) issue_args_at: u64,
    pub(crate) issues_at: u64,
    table_at: u64,
    args_at: Vec<u64>,
    /// Bytes in all.
    pub(crate) size: u64,
}

/// Who runs a submission: what [`SubmissionLayout::write`] puts in its
/// execution and issue states.
pub(crate) struct SubmissionTarget<'a> {
    pub(crate) kernels: &'a IssueKernels,
    pub(crate) queue: &'a Queue,
    pub(crate) mode: IssueMode,
    /// The signal the RETURN decrements (null: none).
    pub(crate) signal: SignalHandle,
    /// The entry block's first packet if the host reserved them (0: the
    /// device reserves them).
    pub(crate) entry_packets: u64,
    /// The scheduler's entry (0: none).
    pub(crate) entry: u64,
}

impl SubmissionLayout {
    pub(crate) fn of(buffer: &CommandBuffer, bindings: &[BindingTableEntry]) -> Self {
        let blocks = &buffer.inner.blocks;
        let issue_args_at = 64;
        let issues_at = (issue_args_at + 16 * blocks.len() as u64).next_multiple_of(64);
        let table_at = issues_at + 128 * blocks.len() as u64;
        // Room for one entry at least: a vouched dispatch without
        // bindings reads slot 0 ([`BindingPatch::FILLER`]).
        let table_bytes = (size_of::<BindingTableEntry>() * bindings.len().max(1)) as u64;
        let mut args_at = Vec::with_capacity(blocks.len());
        let mut end = (table_at + table_bytes).next_multiple_of(64);
        for b in blocks {
            args_at.push(end);
            end = (end + u64::from(b.kernarg_size)).next_multiple_of(64);
        }
        Self {
            issue_args_at,
            issues_at,
            table_at,
            args_at,
            size: end,
        }
    }

    /// Writes the submission's state at offset `o` of `ring`.
    pub(crate) fn write(
        &self,
        ring: &SharedBytes,
        o: usize,
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
        t: &SubmissionTarget<'_>,
    ) {
        let base = ring.address() + o as u64;
        let infos = t.kernels.infos.address();
        let mut execution = Execution::new_zeroed();
        execution.command_buffer = buffer.inner.header;
        execution.issues = base + self.issues_at;
        execution.issue_args = base + self.issue_args_at;
        // The device's own issue of the entry block dispatches this kernel
        // (it leaves nothing to issue serially).
        execution.issue_kernel = if t.entry != 0 && t.mode == IssueMode::Serial {
            t.kernels.serial.object()
        } else {
            t.kernels.issue.object()
        };
        execution.queue = t.queue.address();
        execution.serial_threshold = t.mode.serial_threshold();
        execution.entry = t.entry;
        ring.write(o, execution.as_bytes());
        for (k, b) in buffer.inner.blocks.iter().enumerate() {
            let issue_at = base + self.issues_at + 128 * k as u64;
            let mut issue = BlockIssue::new_zeroed();
            issue.block = b.storage.address();
            issue.queue = t.queue.address();
            // The entry block's packets may be reserved already; whoever
            // reserves a block's packets sets its base.
            issue.packet_base = if k == 0 { t.entry_packets } else { 0 };
            issue.kernarg_base = base + self.args_at[k];
            issue.binding_table = base + self.table_at;
            issue.binding_count = bindings.len() as u32;
            issue.completion_signal = t.signal;
            issue.fill_kernel = infos;
            issue.copy_kernel = infos + 64;
            issue.control_kernel = infos + 128;
            issue.patch_kernel = infos + 192;
            issue.execution = base;
            ring.write(
                o + (self.issues_at + 128 * k as u64) as usize,
                issue.as_bytes(),
            );
            ring.write(
                o + (self.issue_args_at + 16 * k as u64) as usize,
                &issue_at.to_le_bytes(),
            );
        }
        ring.write(o + self.table_at as usize, bindings.as_bytes());
    }
}

/// An execution queue that runs command buffers: the device library's
/// issue, blit and control kernels, and a kernarg ring for the blocks'
/// arguments and issue states.
pub struct CommandQueue {
    queue: Queue,
    kernels: IssueKernels,
    mode: IssueMode,
    ring: KernargRing,
    /// Submissions whose ring space is not released yet: their signal and
    /// the write position after them.
    pending: VecDeque<(Signal, u64)>,
}

impl CommandQueue {
    /// Command buffers on `queue`, issued by `library` (the device library
    /// loaded on the queue's agent), with `ring_bytes` of kernarg ring.
    pub fn new(queue: &Queue, library: &Executable, ring_bytes: usize) -> Result<Self> {
        check_queue_size(queue)?;
        let kernels = IssueKernels::new(queue, library)?;
        let storage = queue
            .kernarg_pool()
            .alloc_host::<u8>(ring_bytes.next_multiple_of(64).max(4096))?;
        Ok(Self {
            queue: queue.clone(),
            kernels,
            mode: IssueMode::Auto,
            ring: KernargRing {
                storage: std::sync::Arc::new(SharedBytes(storage)),
                write: 0,
                read: 0,
            },
            pending: VecDeque::new(),
        })
    }

    /// The execution queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// How later submissions' blocks are issued ([`IssueMode::Auto`]
    /// unless set).
    pub fn set_issue_mode(&mut self, mode: IssueMode) -> &mut Self {
        self.mode = mode;
        self
    }

    /// The issue mode of later submissions.
    pub fn issue_mode(&self) -> IssueMode {
        self.mode
    }

    /// Releases the ring space of finished submissions, in order.
    fn reclaim(&mut self) {
        while let Some((signal, end)) = self.pending.front() {
            if signal.load(LoadOrder::Acquire) >= 1 {
                break;
            }
            self.ring.read = *end;
            self.pending.pop_front();
        }
    }

    /// Submits `buffer` with `bindings` (at least as many slots as it uses,
    /// each at least as large as its commands reference, 16-byte aligned).
    /// Waits up to the queue's default timeout for ring and queue space.
    pub fn submit(
        &mut self,
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
    ) -> Result<Submission> {
        check_submission(buffer, bindings, &self.queue)?;
        let inner = &buffer.inner;
        let layout = SubmissionLayout::of(buffer, bindings);
        let size = layout.size;
        if size > self.ring.capacity() {
            return Err(Error::InvalidArgument {
                what: "submit",
                problem: format!(
                    "the submission needs {size} bytes of kernel arguments and issue state, the ring holds {}",
                    self.ring.capacity()
                ),
            });
        }
        let start = std::time::Instant::now();
        let (offset, ring_end) = loop {
            self.reclaim();
            if let Some(r) = self.ring.reserve(size) {
                break r;
            }
            if start.elapsed() > DEFAULT_SPACE_TIMEOUT {
                return Err(Error::Timeout {
                    what: "room in the kernarg ring".into(),
                    condition: ">=",
                    expected: size as i64,
                    observed: (self.ring.capacity() - (self.ring.write - self.ring.read)) as i64,
                    waited: start.elapsed(),
                });
            }
            if let Some((signal, _)) = self.pending.front() {
                self.queue
                    .wait(signal, SignalCondition::LT, 1, Duration::from_millis(10))
                    .or_else(|e| match e {
                        Error::Timeout { .. } => Ok(0),
                        e => Err(e),
                    })?;
            }
        };
        let base = self.ring.storage.address() + offset;
        let o = offset as usize;
        let signal = Signal::new(self.queue.agent().system(), 1)?;
        // The issue kernel's slot and exactly the entry block's packets: a
        // slot reserved here and not written would stall the queue.
        let entry_slots = 1 + inner.blocks[0].packets;
        let mut reservation = self.queue.reserve(entry_slots, DEFAULT_SPACE_TIMEOUT)?;
        let entry_packets = reservation.first_id() + 1;
        layout.write(
            &self.ring.storage,
            o,
            buffer,
            bindings,
            &SubmissionTarget {
                kernels: &self.kernels,
                queue: &self.queue,
                mode: self.mode,
                signal: signal.handle(),
                entry_packets,
                entry: 0,
            },
        );
        let issues_at = layout.issues_at;
        let issue_args_at = layout.issue_args_at;
        let entry = &inner.blocks[0];
        let (kernel, items, workgroup) = if self.mode == IssueMode::Serial {
            (&self.kernels.serial, 1, 1)
        } else {
            (&self.kernels.issue, entry.commands.max(1), ISSUE_WORKGROUP)
        };
        let packet = KernelDispatch {
            ordering: Ordering::AGENT.with_barrier(),
            ..KernelDispatch::linear(kernel.object(), base + issue_args_at, items, workgroup)
        }
        .build(self.queue.limits())?;
        reservation.emplace(&packet)?;
        reservation.leave_to_device();
        self.ring.write = ring_end;
        self.pending.push_back((signal.clone(), ring_end));
        Ok(Submission {
            queue: self.queue.clone(),
            signal,
            buffer: buffer.clone(),
            ring: self.ring.storage.clone(),
            issues_at: o + issues_at as usize,
        })
    }
}
