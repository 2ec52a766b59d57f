//! The recorder ([`CommandBufferBuilder`]): commands written straight into
//! blocks in memory the GPU reads, each checked as the device would check
//! it; a refused command leaves nothing behind.
//!
//! | module | what it records |
//! |---|---|
//! | here | blocks, buffer references and binding-slot needs, the finished recording |
//! | `dispatch` | dispatches: kernel arguments, launches, prepared packets, the fast layout the device's fast path issues |
//! | [`transfer`] | fills, copies, updates and barriers |
//! | `control` | branches, conditional branches and returns, which end a block |

use aqueduct_abi::command::{
    BindingPatch, BufferRef, BufferRefKind, COMMAND_SIZE, Command, CommandFlags, CommandHeader,
    CommandOpcode, DispatchCommand, FAST_ARGUMENT_BYTES, FAST_PATCHES, IssueShape, KERNARG_ALIGN,
    KernelInfo, MAX_BINDING_SLOTS,
};
use aqueduct_abi::packet::Ordering;
use zerocopy::{FromZeros, IntoBytes};

use crate::error::{Error, Result};
use crate::executable::Kernel;
use crate::memory::{HostBuffer, MemoryPool};
use crate::queue::Queue;

use super::arena::Arena;
use super::error::CommandError;

mod control;
mod dispatch;
pub mod transfer;

/// What the device knows of a kernel ([`KernelInfo`]), from its metadata.
pub(super) fn kernel_info(kernel: &Kernel) -> KernelInfo {
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
pub(super) struct Block {
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
pub(super) type PacketKey = (u64, Workgroups, [u8; 3]);

/// The last direct dispatch recorded: a dispatch of the same kernel and
/// launch under the same ordering differs from it only in its place, its
/// arguments and its bindings, so it is recorded from a copy of it
/// ([`CommandBufferBuilder::dispatch_again`]).
#[derive(Clone, Copy)]
pub(super) struct Repeat {
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
pub(super) struct LastFast {
    template: [u8; FAST_ARGUMENT_BYTES as usize],
    template_len: usize,
    template_at: u64,
    patches: [BindingPatch; FAST_PATCHES],
    patches_at: u64,
}

/// What [`CommandBufferBuilder::dispatch_again`] did: small, so that the
/// common answer returns in registers.
pub(super) enum Again {
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
}
