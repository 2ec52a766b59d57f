//! The command issue's host tests: a block, its issue state and what its
//! commands reference in host memory (a rig), issued into a host queue.

extern crate std;

use std::boxed::Box;
use std::vec::Vec;

use core::ptr::NonNull;

use aqueduct_abi::aql::{BarrierAndPacket, FenceScope, KernelDispatchPacket, PacketType};
use aqueduct_abi::command::{
    AllocationHandle, BarrierCommand, BindingPatch, BindingTableEntry, BlockIssue, BufferRef,
    BufferRefKind, COMMAND_SIZE, Command, CommandBlockHeader, CommandBufferHeader, CommandFlags,
    CommandHeader, CommandOpcode, CopyCommand, DispatchCommand, DispatchFlags, Execution,
    FAST_ARGUMENT_BYTES, FAST_PATCHES, FillCommand, IssueShape, KERNARG_ALIGN, KernelInfo,
    PatchArgs, ReturnCommand, UpdateCommand,
};
use aqueduct_abi::hsa::{PacketSlot, SignalHandle};
use aqueduct_abi::view::View;

use super::*;
use crate::blit::Partition;
use crate::queue::testing::HostQueue;

/// The view of the test's layout at `ptr`.
fn view<T>(ptr: *const T) -> View<'static, T> {
    // SAFETY: the tests pass live, aligned layouts they keep (with
    // everything they link to) while the view is used.
    unsafe { View::from_ptr(NonNull::new(ptr.cast_mut()).expect("a test layout")) }
}

/// `T` at a host address of the test's memory.
///
/// # Safety
/// `size_of::<T>()` readable bytes at `address`, aligned for `T`.
unsafe fn load<T: Copy>(address: u64) -> T {
    // SAFETY: the caller's contract.
    unsafe { (address as *const T).read() }
}

/// Writes `value` at a host address of the test's memory.
///
/// # Safety
/// `size_of::<T>()` writable bytes at `address`, aligned for `T`.
unsafe fn store<T: Copy>(address: u64, value: T) {
    // SAFETY: the caller's contract.
    unsafe { (address as *mut T).write(value) }
}

/// One 64-byte line, so blocks and kernargs get their alignment.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

fn lines(bytes: usize) -> Vec<Line> {
    std::vec![Line([0; 64]); bytes.div_ceil(64)]
}

/// Sentinel kernel objects: 64-aligned, never run.
const USER_KERNEL: u64 = 0x1000_0040;
const FILL_KERNEL: u64 = 0x2000_0080;
const COPY_KERNEL: u64 = 0x3000_00c0;

fn info(kernel_object: u64, kernarg_size: u32, lds: u32) -> KernelInfo {
    KernelInfo {
        kernel_object,
        kernarg_size,
        kernarg_alignment: 16,
        group_segment_size: lds,
        private_segment_size: 48,
        required_workgroup_size: [0; 3],
        wavefront_size: 64,
        trace_id: 7,
        reserved: [0; 3],
    }
}

/// A block being put together in host memory, with everything its
/// commands reference.
struct Rig {
    block: Vec<Line>,
    commands: Vec<Command>,
    kernargs: Vec<Line>,
    kernarg_size: u32,
    packets: u32,
    infos: Box<[KernelInfo; 3]>,
    table: Vec<BindingTableEntry>,
    host: HostQueue,
    /// The submission's execution: a host submission (no entry)
    /// unless a test sets one.
    execution: Box<Execution>,
    /// The block header's `vouched_count`.
    vouched: u32,
}

impl Rig {
    fn new() -> Self {
        Self {
            block: Vec::new(),
            commands: Vec::new(),
            kernargs: Vec::new(),
            kernarg_size: 0,
            packets: 0,
            infos: Box::new([
                info(USER_KERNEL, 24, 512),
                info(FILL_KERNEL, 40, 0),
                info(COPY_KERNEL, 24, 0),
            ]),
            table: Vec::new(),
            host: HostQueue::new(64, 1000),
            execution: Box::new(zeroed()),
            vouched: 0,
        }
    }

    fn user_kernel(&self) -> u64 {
        &raw const self.infos[0] as u64
    }

    /// Appends `c`, giving it the next packets and kernarg bytes.
    fn push(&mut self, c: impl Into<Command>) -> u32 {
        let mut c: Command = c.into();
        c.header.packet_offset = self.packets;
        c.header.packet_count = packets_of(&c).unwrap();
        c.header.kernarg_offset = self.kernarg_size;
        self.packets += u32::from(c.header.packet_count);
        self.kernarg_size += c.kernarg_bytes().next_multiple_of(KERNARG_ALIGN);
        self.commands.push(c);
        self.commands.len() as u32 - 1
    }

    /// Lays the block out and returns its issue state.
    fn issue_state(&mut self) -> Box<BlockIssue> {
        let header = CommandBlockHeader {
            block_index: 0,
            command_count: self.commands.len() as u32,
            packet_count: self.packets,
            kernarg_size: self.kernarg_size,
            issue_order: 0,
            vouched_count: self.vouched,
            reserved0: 0,
            reserved: [0; 4],
        };
        self.block = lines(64 + COMMAND_SIZE * self.commands.len());
        let base = self.block.as_mut_ptr() as u64;
        // SAFETY: the lines hold the header and every command.
        unsafe {
            store(base, header);
            for (i, c) in self.commands.iter().enumerate() {
                store(base + 64 + (COMMAND_SIZE * i) as u64, *c);
            }
        }
        self.kernargs = lines(self.kernarg_size as usize + 64);
        Box::new(BlockIssue {
            block: base,
            queue: &raw mut *self.host.amd as u64,
            packet_base: 1000,
            kernarg_base: self.kernargs.as_mut_ptr() as u64,
            binding_table: self.table.as_ptr() as u64,
            binding_count: self.table.len() as u32,
            reserved0: 0,
            completion_signal: SignalHandle(0x5150),
            fill_kernel: &raw const self.infos[1] as u64,
            copy_kernel: &raw const self.infos[2] as u64,
            control_kernel: &raw const self.infos[0] as u64,
            execution: &raw const *self.execution as u64,
            patch_kernel: &raw const self.infos[0] as u64,
            reserved: [0; 4],
        })
    }

    fn packet_header(&self, offset: u32) -> aqueduct_abi::aql::PacketHeader {
        let s = self.host.slot(1000 + u64::from(offset));
        aqueduct_abi::aql::PacketHeader(u16::from_le_bytes([s[0], s[1]]))
    }

    fn dispatch_at(&self, offset: u32) -> KernelDispatchPacket {
        let s = self.host.slot(1000 + u64::from(offset));
        // SAFETY: a 64-byte slot holds the 64-byte packet.
        unsafe { load(s.as_ptr() as u64) }
    }

    fn barrier_at(&self, offset: u32) -> BarrierAndPacket {
        let s = self.host.slot(1000 + u64::from(offset));
        // SAFETY: as above.
        unsafe { load(s.as_ptr() as u64) }
    }

    fn kernargs_at(&self, offset: u32, len: usize) -> Vec<u8> {
        let base = self.kernargs.as_ptr() as *const u8;
        // SAFETY: inside the reservation.
        unsafe { core::slice::from_raw_parts(base.add(offset as usize), len) }.to_vec()
    }
}

fn header(opcode: CommandOpcode) -> CommandHeader {
    CommandHeader {
        opcode,
        flags: CommandFlags::empty(),
        acquire_scope: FenceScope::AGENT,
        release_scope: FenceScope::SYSTEM,
        packet_offset: 0,
        packet_count: 0,
        issue_shape: IssueShape::NONE,
        kernarg_offset: 0,
    }
}

fn zeroed<T: Copy>() -> T {
    // SAFETY: only the shared command layouts, plain integers, for
    // which zero bytes are valid.
    unsafe { core::mem::zeroed() }
}

/// Prepares `d`'s packet as the recorder does
/// ([`DispatchCommand::packet`]), in a line the caller keeps while the
/// block issues.
fn prepare(rig: &Rig, d: &mut DispatchCommand) -> Box<Line> {
    let packet = d
        .build_packet(&rig.infos[0], 0, d.workgroup_count)
        .unwrap()
        .unwrap();
    let words = Box::new(Line(
        zerocopy::IntoBytes::as_bytes(&packet.published())
            .try_into()
            .unwrap(),
    ));
    d.packet = words.0.as_ptr() as u64;
    words
}

/// A kernel-argument template: 16-byte aligned, as the recorder puts
/// them.
#[repr(C, align(16))]
struct Template([u8; 32]);

/// A dispatch of the user kernel: 24 bytes of arguments, a pointer at
/// 0 and 8 patched from `bindings`, a u32 at 16 from the template.
fn dispatch(
    rig: &Rig,
    template: &Template,
    bindings: &[BindingPatch],
    count: [u32; 3],
) -> DispatchCommand {
    let mut d: DispatchCommand = zeroed();
    d.header = header(CommandOpcode::DISPATCH);
    d.kernel = rig.user_kernel();
    d.workgroup_size = [64, 2, 1];
    d.workgroup_count = count;
    d.dimensions = 2;
    d.dynamic_group_segment_size = 256;
    d.kernarg_template = template.0.as_ptr() as u64;
    d.kernarg_size = 24;
    d.binding_count = bindings.len() as u16;
    d.bindings = bindings.as_ptr() as u64;
    d
}

#[test]
fn every_command_kind_becomes_its_packets_in_any_issue_order() {
    let mut rig = Rig::new();
    let mut a = std::vec![0u8; 256];
    let mut b = std::vec![0u8; 256];
    let source = [7u8; 40];
    let committed = Box::new(AllocationHandle {
        address: b.as_mut_ptr() as u64,
        length: 256,
    });
    let counts: Box<[u32; 3]> = Box::new([5, 3, 1]);
    rig.table.push(BindingTableEntry {
        address: 0x9999_0000,
        length: 64,
    });
    rig.table.push(BindingTableEntry {
        address: a.as_mut_ptr() as u64,
        length: 256,
    });
    let template = Template([0xAB; 32]);
    let reference = Box::new(BufferRef::allocation(&raw const *committed as u64, 8, 8));
    let bindings = [
        BindingPatch::binding(1, 16, 0),
        BindingPatch::allocation(&raw const *reference as u64, 8),
    ];
    let mut d = dispatch(&rig, &template, &bindings, [4, 2, 1]);
    d.header.flags = CommandFlags::BARRIER;
    let direct = rig.push(d);
    let mut ind = dispatch(&rig, &template, &[], [0; 3]);
    ind.dispatch_flags = DispatchFlags::INDIRECT_STATIC;
    ind.workgroup_count_ref = BufferRef::direct(counts.as_ptr() as u64, 12);
    let indirect = rig.push(ind);
    let empty = rig.push(dispatch(&rig, &template, &[], [3, 0, 1]));
    let mut f: FillCommand = zeroed();
    f.header = header(CommandOpcode::FILL);
    f.target = BufferRef::binding(1, 3, 200);
    f.pattern[..4].copy_from_slice(&[1, 2, 3, 4]);
    f.pattern_length = 4;
    let fill = rig.push(f);
    let mut c: CopyCommand = zeroed();
    c.header = header(CommandOpcode::COPY);
    c.source = BufferRef::binding(1, 0, 100);
    c.target = BufferRef::direct(b.as_mut_ptr() as u64 + 1, 100);
    let copy = rig.push(c);
    let mut u: UpdateCommand = zeroed();
    u.header = header(CommandOpcode::UPDATE);
    u.source_data = source.as_ptr() as u64;
    u.target = BufferRef::binding(1, 200, 40);
    let update = rig.push(u);
    let mut bar: BarrierCommand = zeroed();
    bar.header = header(CommandOpcode::BARRIER);
    let bar = rig.push(bar);
    let mut r: ReturnCommand = zeroed();
    r.header = header(CommandOpcode::RETURN);
    let ret = rig.push(r);

    let state = rig.issue_state();
    let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
    assert_eq!(issuer.command_count(), 8);
    for i in (0..8).rev() {
        issuer.issue(i).unwrap();
    }

    // The direct dispatch: grid = count × size, LDS static + dynamic,
    // arguments from the template with both bindings patched in.
    let h = rig.packet_header(direct);
    assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
    assert!(h.barrier());
    assert_eq!(h.acquire_fence_scope(), FenceScope::AGENT);
    assert_eq!(h.release_fence_scope(), FenceScope::SYSTEM);
    let p = rig.dispatch_at(direct);
    assert_eq!(p.setup, 2);
    assert_eq!((p.grid_size_x, p.grid_size_y, p.grid_size_z), (256, 4, 1));
    assert_eq!(
        (p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z),
        (64, 2, 1)
    );
    assert_eq!(p.kernel_object, USER_KERNEL);
    assert_eq!(p.group_segment_size, 512 + 256);
    assert_eq!(p.private_segment_size, 48);
    assert_eq!(p.kernarg_address, state.kernarg_base);
    let args = rig.kernargs_at(0, 24);
    assert_eq!(&args[..8], &(a.as_ptr() as u64 + 16).to_le_bytes());
    assert_eq!(&args[8..16], &(b.as_ptr() as u64 + 8).to_le_bytes());
    assert_eq!(&args[16..], &[0xAB; 8]);

    // The indirect one reads its count now.
    let p = rig.dispatch_at(indirect);
    assert_eq!((p.grid_size_x, p.grid_size_y), (5 * 64, 3 * 2));
    assert!(!rig.packet_header(indirect).barrier());
    assert_eq!(p.kernarg_address, state.kernarg_base + 32);
    assert_eq!(rig.kernargs_at(32, 24), std::vec![0xAB; 24]);

    // No workgroups: a barrier-AND in the slot, the command's scopes.
    let h = rig.packet_header(empty);
    assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
    assert!(!h.barrier());
    assert_eq!(h.acquire_fence_scope(), FenceScope::AGENT);

    // Fill: blit_fill over the resolved range.
    let p = rig.dispatch_at(fill);
    assert_eq!(p.kernel_object, FILL_KERNEL);
    assert_eq!(u32::from(p.workgroup_size_x), u32::from(BLIT_WORKGROUP));
    let dst = a.as_ptr() as u64 + 3;
    assert_eq!(u64::from(p.grid_size_x), Partition::fill(dst, 200).units());
    let args = rig.kernargs_at(96, 40);
    let mut want = Vec::new();
    want.extend_from_slice(&dst.to_le_bytes());
    want.extend_from_slice(&200u64.to_le_bytes());
    want.extend_from_slice(&u64::from_le_bytes([1, 2, 3, 4, 0, 0, 0, 0]).to_le_bytes());
    want.extend_from_slice(&0u64.to_le_bytes());
    want.extend_from_slice(&4u32.to_le_bytes());
    want.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(args, want);

    // Copy and update: blit_copy with (dst, src, len).
    let p = rig.dispatch_at(copy);
    assert_eq!(p.kernel_object, COPY_KERNEL);
    let args = rig.kernargs_at(144, 24);
    assert_eq!(&args[..8], &(b.as_ptr() as u64 + 1).to_le_bytes());
    assert_eq!(&args[8..16], &(a.as_ptr() as u64).to_le_bytes());
    assert_eq!(&args[16..], &100u64.to_le_bytes());
    let p = rig.dispatch_at(update);
    assert_eq!(p.kernel_object, COPY_KERNEL);
    let args = rig.kernargs_at(176, 24);
    assert_eq!(&args[..8], &(a.as_ptr() as u64 + 200).to_le_bytes());
    assert_eq!(&args[8..16], &(source.as_ptr() as u64).to_le_bytes());
    assert_eq!(&args[16..], &40u64.to_le_bytes());

    // Barrier and return: barrier bit forced; return signals.
    let h = rig.packet_header(bar);
    assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
    assert!(h.barrier());
    assert_eq!(rig.barrier_at(bar).completion_signal, SignalHandle::NULL);
    let h = rig.packet_header(ret);
    assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
    assert!(h.barrier());
    assert_eq!(rig.barrier_at(ret).completion_signal, SignalHandle(0x5150));
    // Eight slots, no more.
    assert_eq!(rig.packet_header(8).packet_type(), PacketType::INVALID);
}

/// A dispatch whose packet the host prepared at record time (the
/// shared `DispatchCommand::build_packet` with a zero kernarg address)
/// publishes exactly what the issue builds for the same command, its
/// kernarg address filled in and its arguments written the same way;
/// one that does not fit the block publishes nothing.
#[test]
fn a_prepared_dispatch_publishes_what_the_issue_would_build() {
    let mut rig = Rig::new();
    let mut a = std::vec![0u8; 256];
    rig.table.push(BindingTableEntry {
        address: a.as_mut_ptr() as u64,
        length: 256,
    });
    let template = Template([0x5A; 32]);
    let bindings = [BindingPatch::binding(0, 32, 8)];
    let mut built = dispatch(&rig, &template, &bindings, [4, 3, 1]);
    built.header.flags = CommandFlags::BARRIER;
    let mut prepared = built;
    let packet = prepared
        .build_packet(&rig.infos[0], 0, prepared.workgroup_count)
        .unwrap()
        .unwrap();
    fn bytes<P: aqueduct_abi::aql::Packet>(p: &P) -> &[u8] {
        p.as_bytes()
    }
    let words: Box<Line> = Box::new(Line(bytes(&packet.published()).try_into().unwrap()));
    prepared.packet = words.0.as_ptr() as u64;
    let built = rig.push(built);
    let prepared = rig.push(prepared);
    // Too many kernel arguments for the block: refused, nothing
    // published.
    let mut late = dispatch(&rig, &template, &bindings, [1, 1, 1]);
    late.packet = words.0.as_ptr() as u64;
    let late = rig.push(late);
    let state = rig.issue_state();
    let bad = Box::new(*state);
    // SAFETY: the block header lives in `rig`.
    let block = unsafe { &mut *(bad.block as *mut CommandBlockHeader) };
    block.kernarg_size = rig.commands[late as usize].header.kernarg_offset + 8;

    let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
    issuer.issue(prepared).unwrap();
    issuer.issue(built).unwrap();
    let short = BlockIssuer::new(view(&raw const *bad)).unwrap();
    assert!(matches!(
        short.issue(late),
        Err(IssueError::Prepared { .. })
    ));
    assert_eq!(
        rig.packet_header(late).packet_type(),
        PacketType::INVALID,
        "not published"
    );

    let (p, b) = (rig.dispatch_at(prepared), rig.dispatch_at(built));
    let offset = |c: u32| u64::from(rig.commands[c as usize].header.kernarg_offset);
    assert_eq!(p.kernarg_address, state.kernarg_base + offset(prepared));
    assert_eq!(b.kernarg_address, state.kernarg_base + offset(built));
    let same = KernelDispatchPacket {
        kernarg_address: b.kernarg_address,
        ..p
    };
    assert_eq!(same, b);
    assert!(rig.packet_header(prepared).barrier());
    assert_eq!(
        rig.kernargs_at(offset(prepared) as u32, 24),
        rig.kernargs_at(offset(built) as u32, 24)
    );
    let patched = u64::from_le_bytes(
        rig.kernargs_at(offset(prepared) as u32, 24)[8..16]
            .try_into()
            .unwrap(),
    );
    assert_eq!(patched, a.as_ptr() as u64 + 32);
}

/// The checked path ([`BlockIssuer::issue`]) issues a prepared
/// dispatch, or names what is wrong with it and publishes nothing.
#[test]
fn the_checked_path_issues_a_prepared_dispatch_or_names_what_is_wrong() {
    let mut a = std::vec![0u8; 256];
    let mut b = std::vec![0u8; 256];
    let committed = Box::new(AllocationHandle {
        address: b.as_mut_ptr() as u64,
        length: 64,
    });
    let reference = Box::new(BufferRef::allocation(&raw const *committed as u64, 8, 8));
    let template = Box::new(Template([0x5A; 32]));
    let buffers = [a.as_mut_ptr() as u64, b.as_mut_ptr() as u64];
    let bind = BindingPatch::binding;
    type Edit = fn(&mut DispatchCommand);
    let keep: Edit = |_| {};
    // (patches, an edit of the recorded command, what the checked path
    // says)
    type Case = (std::vec::Vec<BindingPatch>, Edit, Result<(), IssueError>);
    let cases: std::vec::Vec<Case> = std::vec![
        (std::vec![bind(0, 32, 8), bind(1, 16, 0)], keep, Ok(())),
        (std::vec![], keep, Ok(())),
        (
            std::vec![BindingPatch::allocation(&raw const *reference as u64, 8)],
            keep,
            Ok(()),
        ),
        (
            std::vec![bind(0, 0, 8), bind(5, 0, 0)],
            keep,
            Err(IssueError::Binding { slot: 5, count: 2 }),
        ),
        (
            std::vec![bind(0, 0, 4)],
            keep,
            Err(IssueError::Kernargs {
                offset: 4,
                size: 8,
                block: 24
            }),
        ),
        (
            std::vec![bind(0, 0, 24)],
            keep,
            Err(IssueError::Kernargs {
                offset: 24,
                size: 8,
                block: 24
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.dispatch_flags = DispatchFlags::INDIRECT_STATIC,
            Err(IssueError::Prepared {
                packet_offset: 0,
                kernarg_offset: 0
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.kernarg_template += 8,
            Err(IssueError::Misaligned {
                address: 0,
                align: 16
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.bindings += 4,
            Err(IssueError::Misaligned {
                address: 0,
                align: 8
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.packet += 8,
            Err(IssueError::Prepared {
                packet_offset: 0,
                kernarg_offset: 0
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.header.packet_offset = 2,
            Err(IssueError::Prepared {
                packet_offset: 2,
                kernarg_offset: 0
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.header.packet_count = 2,
            Err(IssueError::Prepared {
                packet_offset: 0,
                kernarg_offset: 0
            }),
        ),
        (
            std::vec![bind(0, 0, 8)],
            |d| d.header.kernarg_offset = 8,
            Err(IssueError::Prepared {
                packet_offset: 0,
                kernarg_offset: 8
            }),
        ),
        // A size whose 16-byte rounding overflows a u32.
        (
            std::vec![bind(0, 0, 8)],
            |d| d.kernarg_size = 0xFFFF_FFF8,
            Err(IssueError::Prepared {
                packet_offset: 0,
                kernarg_offset: 0
            }),
        ),
    ];
    for (k, (patches, edit, checked)) in cases.into_iter().enumerate() {
        let mut rig = Rig::new();
        for address in buffers {
            rig.table.push(BindingTableEntry {
                address,
                length: 256,
            });
        }
        let mut d = dispatch(&rig, &template, &patches, [4, 3, 1]);
        let _words = prepare(&rig, &mut d);
        rig.push(d);
        // The edit once the rig has placed the command.
        let c = &mut rig.commands[0];
        let mut d = <DispatchCommand as zerocopy::FromBytes>::read_from_bytes(
            zerocopy::IntoBytes::as_bytes(c),
        )
        .unwrap();
        edit(&mut d);
        *c = d.into();
        // A second command, so that a share or a slot past the first's
        // is still inside the block.
        rig.push(dispatch(&rig, &template, &[], [1, 1, 1]));
        let state = rig.issue_state();
        let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
        match (issuer.issue(0), checked) {
            (
                Err(IssueError::Misaligned { align: g, .. }),
                Err(IssueError::Misaligned { align: w, .. }),
            ) => assert_eq!(g, w, "case {k}"),
            (got, want) => assert_eq!(got, want, "case {k}"),
        }
        if checked.is_err() {
            assert_eq!(
                rig.packet_header(0).packet_type(),
                PacketType::INVALID,
                "case {k}: nothing published"
            );
        } else {
            assert_eq!(
                rig.packet_header(0).packet_type(),
                PacketType::KERNEL_DISPATCH,
                "case {k}"
            );
        }
    }
}

/// A template as the recorder lays out a vouched dispatch's: 64 bytes,
/// 64-byte aligned.
#[repr(C, align(64))]
struct FastTemplate([u8; FAST_ARGUMENT_BYTES as usize]);

/// A patch list as the recorder lays out a vouched dispatch's.
#[repr(C, align(16))]
struct FastPatches([BindingPatch; FAST_PATCHES]);

/// What a vouched dispatch points at, kept alive while it issues.
struct Vouched {
    _template: Box<FastTemplate>,
    patches: Box<FastPatches>,
    _packet: Box<Line>,
}

/// A dispatch of the user kernel with `size` bytes of arguments (the
/// leading bytes of `bytes`) and the binding patches `patches`, laid
/// out as the recorder lays out one it vouches for
/// ([`IssueShape`]), and vouched for if the shape allows.
fn vouched(
    rig: &Rig,
    bytes: &[u8; 64],
    size: u32,
    patches: &[BindingPatch],
) -> (DispatchCommand, Vouched) {
    // (Past 64 bytes, only the first 64: such a dispatch is not
    // vouched for, and the test does not issue it.)
    let mut template = Box::new(FastTemplate([0; 64]));
    let copied = (size as usize).min(64);
    template.0[..copied].copy_from_slice(&bytes[..copied]);
    let list = Box::new(FastPatches(BindingPatch::fast_list(patches).unwrap()));
    let mut d: DispatchCommand = zeroed();
    d.header = header(CommandOpcode::DISPATCH);
    d.header.packet_count = 1;
    d.kernel = rig.user_kernel();
    d.workgroup_size = [64, 2, 1];
    d.workgroup_count = [5, 2, 1];
    d.dimensions = 2;
    d.kernarg_template = template.0.as_ptr() as u64;
    d.kernarg_size = size;
    d.binding_count = patches.len() as u16;
    d.bindings = list.0.as_ptr() as u64;
    let packet = prepare(rig, &mut d);
    d.header.issue_shape = d.issue_shape(patches);
    (
        d,
        Vouched {
            _template: template,
            patches: list,
            _packet: packet,
        },
    )
}

/// A rig with a binding table of `buffers`, the dispatch `d` first,
/// then a RETURN, and `vouched` vouched dispatches; `edit` changes the
/// dispatch once the rig has placed it.
fn rig_with(
    buffers: &[u64],
    d: DispatchCommand,
    vouched: u32,
    edit: fn(&mut CommandHeader),
) -> (Rig, Box<BlockIssue>) {
    let mut rig = Rig::new();
    for &address in buffers {
        rig.table.push(BindingTableEntry {
            address,
            length: 256,
        });
    }
    // The kernel this rig holds (the packet was prepared from an
    // identical one).
    let mut d = d;
    d.kernel = rig.user_kernel();
    rig.push(d);
    edit(&mut rig.commands[0].header);
    rig.push(ReturnCommand {
        header: header(CommandOpcode::RETURN),
        ..zeroed()
    });
    rig.vouched = vouched;
    let state = rig.issue_state();
    (rig, state)
}

/// Every shape the fast layout holds (1 to 4 argument units, sizes a
/// multiple of 8 and 4 short of one, up to 4 bindings; without
/// bindings, arguments that leave the share's last word free) is
/// vouched for, and the fast path ([`BlockIssuer::issue_vouched`])
/// issues it exactly as the checked path does: the same packet, the
/// same arguments.
#[test]
fn a_vouched_dispatch_issues_as_the_checked_path() {
    let mut bytes = [0u8; 64];
    for (k, byte) in bytes.iter_mut().enumerate() {
        *byte = 0x40 + k as u8;
    }
    let buffers = [0x1000_0000u64, 0x2000_0000, 0x3000_0000];
    let mut shapes = 0;
    for size in (4..=64u32).step_by(4) {
        for count in 0..=4u32 {
            let places = size / 8;
            if count > places || (count == 0 && size > 56) {
                continue;
            }
            // Bindings at the last places, of slots and offsets their
            // own.
            let patches: Vec<BindingPatch> = (0..count)
                .map(|b| {
                    let place = 8 * (places - 1 - b) as u16;
                    BindingPatch::binding(b % 3, 8 * u64::from(b) + 4, place)
                })
                .collect();
            let (d, _fast_keep) = vouched(&Rig::new(), &bytes, size, &patches);
            let shape = d.header.issue_shape;
            assert!(shape.is_vouched(), "size {size}, {count} bindings");
            assert_eq!(
                (shape.units(), shape.bindings()),
                (size.div_ceil(16), count)
            );
            let (fast, fast_state) = rig_with(&buffers, d, 1, |_| {});
            let (checked, checked_state) = rig_with(&buffers, d, 0, |_| {});
            let issuer = BlockIssuer::new(view(&raw const *fast_state)).unwrap();
            let checker = BlockIssuer::new(view(&raw const *checked_state)).unwrap();
            issuer.issue_work_item(0).unwrap();
            checker.issue_work_item(0).unwrap();
            assert_eq!(
                fast.dispatch_at(0),
                KernelDispatchPacket {
                    kernarg_address: fast_state.kernarg_base,
                    ..checked.dispatch_at(0)
                },
                "size {size}, {count} bindings"
            );
            assert_eq!(
                fast.kernargs_at(0, size as usize),
                checked.kernargs_at(0, size as usize),
                "size {size}, {count} bindings"
            );
            shapes += 1;
        }
    }
    assert_eq!(shapes, 62);
    // Past the fast layout: not vouched for.
    for (size, count) in [(68, 1), (60, 0), (64, 0)] {
        let patches = std::vec![BindingPatch::binding(0, 0, 0); count];
        let (d, _keep) = vouched(&Rig::new(), &bytes, size, &patches);
        assert_eq!(d.header.issue_shape, IssueShape::NONE, "{size}, {count}");
    }
}

/// The fast path checks nothing, but a damaged vouched dispatch (its
/// share, packet and binding places past the block's) writes only
/// inside the block's reservations: its share at the last place one
/// fits, its packet at the block's last, its bindings inside its share.
#[test]
fn a_damaged_vouched_dispatch_writes_only_inside_the_block() {
    let bytes = [0x33u8; 64];
    let buffers = [0x1000_0000u64];
    let patches = [BindingPatch::binding(0, 8, 0)];
    let (mut d, mut keep) = vouched(&Rig::new(), &bytes, 40, &patches);
    for (b, p) in keep.patches.0.iter_mut().enumerate() {
        p.kernarg_offset = 0xFFF8 - 8 * b as u16;
    }
    d.bindings = keep.patches.0.as_ptr() as u64;
    let (rig, state) = rig_with(&buffers, d, 1, |h| {
        h.kernarg_offset = 0xFFFF_FF00;
        h.packet_offset = 1000;
    });
    // Canaries past the block's arguments (the rig leaves 64 bytes).
    let end = rig.kernarg_size as usize;
    let canary = |rig: &Rig| rig.kernargs_at(end as u32, 64);
    // SAFETY: inside the rig's argument lines.
    unsafe { core::ptr::write_bytes((rig.kernargs.as_ptr() as *mut u8).add(end), 0xEE, 64) };
    // The block-issue kernel's issuer, which checks nothing of the
    // issue state (the rig's is whole).
    let issuer = BlockIssuer::trusted(view(&raw const *state));
    issuer.issue_work_item(0).unwrap();
    assert_eq!(canary(&rig), std::vec![0xEE; 64]);
    // The share at the last place a share fits: the RETURN's 16
    // bytes follow the dispatch's 64, so that is 16.
    assert_eq!(rig.kernarg_size, 80);
    let share = rig.kernargs_at(16, 64);
    assert_eq!(&share[..32], &bytes[..32]);
    // Every binding landed in the share's words.
    let words: Vec<u64> = share
        .chunks(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    assert!(words.contains(&(0x1000_0000 + 8)), "{words:x?}");
    // The packet at the block's last (the RETURN's, unpublished: the
    // RETURN has not issued), nothing past it.
    assert_eq!(rig.packets, 2);
    assert_eq!(
        rig.packet_header(1).packet_type(),
        PacketType::KERNEL_DISPATCH
    );
    assert_eq!(rig.packet_header(0).packet_type(), PacketType::INVALID);
    assert_eq!(rig.packet_header(2).packet_type(), PacketType::INVALID);
}

/// Work-items below the block's vouched count take the fast path,
/// which checks nothing; the others the checked path. A dispatch
/// vouched for and then damaged (a flag the checked path refuses)
/// tells which ran. The checked issue state counts no vouched
/// dispatch for a block without room for one.
#[test]
fn work_items_below_the_vouched_count_take_the_fast_path() {
    let bytes = [7u8; 64];
    let buffers = [0x1000_0000u64];
    let (mut d, _keep) = vouched(&Rig::new(), &bytes, 24, &[BindingPatch::binding(0, 0, 8)]);
    d.dispatch_flags = DispatchFlags::INDIRECT_STATIC;
    for vouched in [0, 1] {
        let (rig, state) = rig_with(&buffers, d, vouched, |_| {});
        let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
        assert_eq!(issuer.all_vouched(1), vouched == 1);
        assert!(!issuer.all_vouched(2));
        let got = issuer.issue_work_item(0);
        if vouched == 1 {
            assert_eq!(got, Ok(()));
            assert_eq!(
                rig.packet_header(0).packet_type(),
                PacketType::KERNEL_DISPATCH
            );
        } else {
            assert!(matches!(got, Err(IssueError::Prepared { .. })), "{got:?}");
        }
        // Work-item 1 is the RETURN's, checked either way.
        issuer.issue_work_item(1).unwrap();
    }
    // A block whose arguments cannot hold a vouched dispatch's share:
    // the checked state counts none, whatever the header says.
    let mut rig = Rig::new();
    rig.push(ReturnCommand {
        header: header(CommandOpcode::RETURN),
        ..zeroed()
    });
    rig.vouched = 1;
    let state = rig.issue_state();
    let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
    assert!(!issuer.all_vouched(1));
    issuer.issue_work_item(0).unwrap();
}

#[test]
fn a_branch_dispatches_the_control_kernel_with_its_arguments() {
    use aqueduct_abi::command::BranchCommand;
    let mut rig = Rig::new();
    let mut b: BranchCommand = zeroed();
    b.header = header(CommandOpcode::BRANCH);
    b.target_block = 1;
    rig.push(b);
    let state = rig.issue_state();
    let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
    issuer.issue(0).unwrap();
    let h = rig.packet_header(0);
    assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
    assert!(h.barrier(), "a branch waits for the block's work");
    let p = rig.dispatch_at(0);
    assert_eq!(p.kernel_object, USER_KERNEL);
    assert_eq!((p.grid_size_x, p.workgroup_size_x), (1, 1));
    let args = rig.kernargs_at(0, 16);
    assert_eq!(
        &args[..8],
        &(&raw const *rig.execution as u64).to_le_bytes()
    );
    assert_eq!(&args[8..], &(state.block + 64).to_le_bytes());
}

#[test]
fn a_scheduled_return_dispatches_the_control_kernel_and_still_signals() {
    use aqueduct_abi::command::ReturnCommand;
    for entry in [0u64, 0xE17_0000] {
        let mut rig = Rig::new();
        rig.execution.entry = entry;
        let mut r: ReturnCommand = zeroed();
        r.header = header(CommandOpcode::RETURN);
        rig.push(r);
        let state = rig.issue_state();
        let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
        issuer.issue(0).unwrap();
        let h = rig.packet_header(0);
        assert!(h.barrier());
        if entry == 0 {
            assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
            assert_eq!(rig.barrier_at(0).completion_signal, SignalHandle(0x5150));
            continue;
        }
        assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
        let p = rig.dispatch_at(0);
        assert_eq!(p.kernel_object, USER_KERNEL, "the control kernel");
        assert_eq!(p.completion_signal, SignalHandle(0x5150));
        let args = rig.kernargs_at(0, 16);
        assert_eq!(
            &args[..8],
            &(&raw const *rig.execution as u64).to_le_bytes()
        );
        assert_eq!(&args[8..], &(state.block + 64).to_le_bytes());
    }
}

#[test]
fn a_dynamic_dispatch_is_patched_and_published_when_the_patch_runs() {
    for (count, want_grid) in [([5u32, 3, 9], Some((320, 6))), ([4, 0, 1], None)] {
        let mut rig = Rig::new();
        let counts: Box<[u32; 4]> = Box::new([count[0], count[1], count[2], 0]);
        let template = Template([0xCD; 32]);
        let mut d = dispatch(&rig, &template, &[], [0; 3]);
        d.dispatch_flags = DispatchFlags::INDIRECT_DYNAMIC;
        d.workgroup_count_ref = BufferRef::direct(counts.as_ptr() as u64, 12);
        rig.push(d);
        let state = rig.issue_state();
        let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
        issuer.issue(0).unwrap();
        // The patch first (barrier bit: after the count's producer),
        // the dispatch after it, not published yet.
        let h = rig.packet_header(0);
        assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
        assert!(h.barrier());
        assert_eq!(rig.packet_header(1).packet_type(), PacketType::INVALID);
        let patch = rig.dispatch_at(0);
        // The kernel's 24 bytes, padded to 32, then the patch's.
        assert_eq!(patch.kernarg_address, state.kernarg_base + 32);
        // SAFETY: the patch's arguments, written by the issue.
        let args = unsafe { load::<PatchArgs>(patch.kernarg_address) };
        assert_eq!(args.count, counts.as_ptr() as u64);
        assert_eq!(rig.kernargs_at(0, 24), std::vec![0xCD; 24]);
        patch_dispatch(
            &args,
            view(args.count as *const [u32; 3]),
            view(args.packet as *const PacketSlot),
        )
        .unwrap();
        let h = rig.packet_header(1);
        match want_grid {
            Some((x, y)) => {
                assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
                let p = rig.dispatch_at(1);
                // Two dimensions: z's count is ignored.
                assert_eq!((p.grid_size_x, p.grid_size_y, p.grid_size_z), (x, y, 1));
                assert_eq!(p.kernel_object, USER_KERNEL);
                assert_eq!(p.kernarg_address, state.kernarg_base);
            }
            None => {
                assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
                assert_eq!(rig.barrier_at(1).completion_signal, SignalHandle::NULL);
                assert_eq!(h.acquire_fence_scope(), FenceScope::AGENT);
            }
        }
    }
}

#[test]
fn a_conditional_branch_picks_its_block_and_issues_it() {
    use aqueduct_abi::command::{BranchCondition, CondBranchCommand, Execution};
    // Two blocks: the target's issue state and arguments, a queue.
    let mut rig = Rig::new();
    let mut r: ReturnCommand = zeroed();
    r.header = header(CommandOpcode::RETURN);
    rig.push(r);
    rig.push(r);
    let state = rig.issue_state();
    let value: Box<[u64; 2]> = Box::new([7, 0]);
    rig.table.push(BindingTableEntry {
        address: value.as_ptr() as u64,
        length: 16,
    });
    let mut issues = lines(256);
    let base = issues.as_mut_ptr() as u64;
    let mut issue = *state;
    issue.binding_table = rig.table.as_ptr() as u64;
    issue.binding_count = 1;
    // SAFETY: two 128-byte issue states fit the lines.
    unsafe {
        store(base, issue);
        store(base + 128, issue);
    }
    let args: Box<[[u64; 2]; 2]> = Box::new([[base, 0], [base + 128, 0]]);
    let mut head: CommandBufferHeader = zeroed();
    head.block_count = 2;
    let blocks: Box<[u64; 2]> = Box::new([state.block, state.block]);
    head.blocks = blocks.as_ptr() as u64;
    let mut head_line = lines(64);
    // SAFETY: one line holds the header.
    unsafe { store(head_line.as_mut_ptr() as u64, head) };
    let execution = Execution {
        command_buffer: head_line.as_ptr() as u64,
        issues: base,
        issue_args: args.as_ptr() as u64,
        issue_kernel: COPY_KERNEL,
        queue: state.queue,
        serial_threshold: 1,
        reserved0: 0,
        entry: 0,
        reserved: 0,
    };
    let mut c: CondBranchCommand = zeroed();
    c.header = header(CommandOpcode::COND_BRANCH);
    c.condition = BufferRef::binding(0, 0, 8);
    c.value = 7;
    c.true_block = 1;
    c.false_block = 0;
    for (cond, want) in [
        (BranchCondition::EQ, 1),
        (BranchCondition::ULT, 0),
        (BranchCondition::GE, 1),
    ] {
        c.cond = cond;
        let command = Command::from(c);
        let target = branch_target(view(&raw const execution), view(&raw const command)).unwrap();
        assert_eq!(target, want, "{cond:?}");
    }
    c.cond = BranchCondition(77);
    let command = Command::from(c);
    assert!(branch_target(view(&raw const execution), view(&raw const command)).is_err());
    // Issuing block 1 (2 commands, above the serial threshold of 1):
    // its issue kernel in the next free slot, the block's 2 packets
    // reserved after it, its issue state told where.
    let write = rig.host.amd.write_dispatch_id;
    issue_block(view(&raw const execution), 1, || panic!("room")).unwrap();
    assert_eq!(rig.host.amd.write_dispatch_id, write + 3);
    let p = rig.dispatch_at((write - 1000) as u32);
    assert_eq!(p.kernel_object, COPY_KERNEL);
    assert_eq!(p.kernarg_address, args.as_ptr() as u64 + 16);
    assert_eq!(p.grid_size_x, 2);
    // SAFETY: block 1's issue state.
    let packet_base = unsafe { load::<BlockIssue>(base + 128) }.packet_base;
    assert_eq!(packet_base, write + 1);
    assert!(issue_block(view(&raw const execution), 2, || panic!("room")).is_err());

    // At or below the threshold the branch issues the block itself:
    // exactly its 2 packets, published, and no issue dispatch.
    let serial = Execution {
        serial_threshold: 2,
        ..execution
    };
    let write = rig.host.amd.write_dispatch_id;
    issue_block(view(&raw const serial), 1, || panic!("room")).unwrap();
    assert_eq!(rig.host.amd.write_dispatch_id, write + 2);
    // SAFETY: block 1's issue state.
    let packet_base = unsafe { load::<BlockIssue>(base + 128) }.packet_base;
    assert_eq!(packet_base, write);
    for k in 0..2 {
        let h = rig.packet_header((write - 1000) as u32 + k);
        assert_eq!(h.packet_type(), PacketType::BARRIER_AND, "packet {k}");
    }
}

#[test]
fn an_issue_order_maps_work_items_to_commands() {
    let mut rig = Rig::new();
    for _ in 0..3 {
        let mut b: BarrierCommand = zeroed();
        b.header = header(CommandOpcode::BARRIER);
        rig.push(b);
    }
    let state = rig.issue_state();
    let plain = BlockIssuer::new(view(&raw const *state)).unwrap();
    assert_eq!(
        (0..3).map(|g| plain.command_for(g)).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let order: Box<[u32; 3]> = Box::new([2, 0, 1]);
    // SAFETY: the block header at the start of the rig's block.
    unsafe {
        let mut header = load::<CommandBlockHeader>(state.block);
        header.issue_order = order.as_ptr() as u64;
        store(state.block, header);
    }
    let ordered = BlockIssuer::new(view(&raw const *state)).unwrap();
    assert_eq!(
        (0..3).map(|g| ordered.command_for(g)).collect::<Vec<_>>(),
        [2, 0, 1]
    );
}

#[test]
fn bad_commands_are_refused_and_publish_nothing() {
    let template = Template([0; 32]);
    let unc = Box::new(AllocationHandle {
        address: 0,
        length: 64,
    });
    let committed = Box::new(AllocationHandle {
        address: 0x9000,
        length: 64,
    });
    // The references allocation patches point at.
    let refs = Box::new([
        BufferRef::allocation(&raw const *committed as u64, 60, 8),
        BufferRef::allocation(&raw const *unc as u64, 0, 8),
        BufferRef::binding(0, 0, 8),
    ]);
    let at = |k: usize| &raw const refs[k] as u64;
    // A binding's range is checked when the submission binds the
    // table (the host's `check_submission`), not here.
    let cases: [(BindingPatch, IssueError); 5] = [
        (
            BindingPatch::binding(2, 0, 8),
            IssueError::Binding { slot: 2, count: 1 },
        ),
        (
            BindingPatch::allocation(at(0), 8),
            IssueError::Range {
                offset: 60,
                length: 8,
                size: 64,
            },
        ),
        (
            BindingPatch::allocation(at(1), 8),
            IssueError::NotCommitted {
                handle: &raw const *unc as u64,
            },
        ),
        (
            BindingPatch::allocation(at(2), 8),
            IssueError::RefKind(BufferRefKind::BINDING.0),
        ),
        (
            BindingPatch {
                kind: 9,
                ..BindingPatch::binding(0, 0, 8)
            },
            IssueError::RefKind(9),
        ),
    ];
    for (patch, want) in cases {
        let mut rig = Rig::new();
        rig.table.push(BindingTableEntry {
            address: 0x7000,
            length: 64,
        });
        let patch = [patch];
        rig.push(dispatch(&rig, &template, &patch, [1, 1, 1]));
        let state = rig.issue_state();
        let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
        assert_eq!(issuer.issue(0), Err(want));
        assert_eq!(
            rig.packet_header(0).packet_type(),
            PacketType::INVALID,
            "{want:?}"
        );
    }

    // Bindings into arguments too small for any: refused before any
    // argument is written (the template's bytes stay zero), for the
    // built and the prepared dispatch alike.
    for prepared in [false, true] {
        let mut rig = Rig::new();
        rig.table.push(BindingTableEntry {
            address: 0x7000,
            length: 64,
        });
        let patch = [BindingPatch::binding(0, 0, 0)];
        let marked = Template([0xAB; 32]);
        let mut d = dispatch(&rig, &marked, &patch, [1, 1, 1]);
        d.kernarg_size = 4;
        let packet = Box::new(Line([0; 64]));
        if prepared {
            d.packet = packet.0.as_ptr() as u64;
        }
        rig.push(d);
        let state = rig.issue_state();
        let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
        let want = IssueError::Kernargs {
            offset: 0,
            size: 8,
            block: 4,
        };
        assert_eq!(issuer.issue(0), Err(want), "prepared {prepared}");
        assert_eq!(rig.packet_header(0).packet_type(), PacketType::INVALID);
        assert_eq!(
            rig.kernargs_at(0, 16),
            std::vec![0u8; 16],
            "nothing written"
        );
    }

    // A command announcing a packet outside the block, a fill pattern of
    // 3 bytes, a copy of unequal lengths, a zeroed slot.
    let mut rig = Rig::new();
    let mut f: FillCommand = zeroed();
    f.header = header(CommandOpcode::FILL);
    f.target = BufferRef::direct(0x8000, 12);
    f.pattern_length = 3;
    rig.push(f);
    let mut c: CopyCommand = zeroed();
    c.header = header(CommandOpcode::COPY);
    c.source = BufferRef::direct(0x8000, 12);
    c.target = BufferRef::direct(0x9000, 16);
    rig.push(c);
    let mut r: ReturnCommand = zeroed();
    r.header = header(CommandOpcode::RETURN);
    rig.push(r);
    rig.commands[2].header.packet_offset = 3;
    rig.commands.push(zeroed());
    let state = rig.issue_state();
    let issuer = BlockIssuer::new(view(&raw const *state)).unwrap();
    assert_eq!(issuer.issue(0), Err(IssueError::Pattern(3)));
    assert_eq!(
        issuer.issue(1),
        Err(IssueError::Length { need: 16, have: 12 })
    );
    assert_eq!(
        issuer.issue(2),
        Err(IssueError::Packets {
            offset: 3,
            count: 1,
            block: 3
        })
    );
    assert_eq!(issuer.issue(3), Err(IssueError::Opcode(0)));
    assert_eq!(
        issuer.issue(4),
        Err(IssueError::NoCommand { index: 4, count: 4 })
    );
    for p in 0..4 {
        assert_eq!(rig.packet_header(p).packet_type(), PacketType::INVALID);
    }
}
