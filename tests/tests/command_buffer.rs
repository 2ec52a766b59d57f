//! Command buffers end to end: recorded on the host into memory
//! the GPU reads, submitted once, issued on the device by the device
//! library's `cmd_block_issue` (one work-item per command) into the
//! execution queue, run, and checked against a CPU model of the same
//! command list — through the HSA C ABI, on ROCr with a GPU, else on the
//! simulator's runtime (an MI300X and an MI210). Outputs are poisoned first.

use std::time::Duration;

use aqueduct::command_buffer::{
    BindingTableEntry, BranchCondition, BufferRef, CommandError, MAX_BINDING_SLOTS, Ordering,
};
use aqueduct::{CommandBufferBuilder, CommandQueue, DevicePtr, Error, IssueMode, Workgroups};
use aqueduct_tests::{Rng, announced_system, device_library, host_pool, hsa_gpus};

const TIMEOUT: Duration = Duration::from_secs(120);
/// Bytes of the output region each command owns.
const REGION: u64 = 256;
/// Byte the output is poisoned with.
const POISON: u8 = 0xA5;

/// One recorded command and what it does, for the CPU model.
#[derive(Clone, Debug)]
enum Op {
    /// `fill_u32` dispatch: `count` u32s of `value` at `at`.
    FillU32 { at: u64, count: u64, value: u32 },
    /// Blit fill of `len` bytes at `at` with `pattern`.
    Fill { at: u64, len: u64, pattern: Vec<u8> },
    /// Copy of `len` bytes from input offset `from` to output `at`.
    Copy { from: u64, at: u64, len: u64 },
    /// Update: `data` at `at`.
    Update { at: u64, data: Vec<u8> },
    /// `saxpy_f32` over `n` floats at `y` with x at input `x`, `a`.
    Saxpy { y: u64, x: u64, n: u64, a: f32 },
    /// Barrier: nothing to model.
    Barrier,
}

/// Applies `ops` to `out` (the output slot) reading `input`, in order.
fn model(ops: &[Op], out: &mut [u8], input: &[u8]) {
    for op in ops {
        match op {
            Op::FillU32 { at, count, value } => {
                for k in 0..*count as usize {
                    let o = *at as usize + 4 * k;
                    out[o..o + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
            Op::Fill { at, len, pattern } => {
                for k in 0..*len as usize {
                    out[*at as usize + k] = pattern[k % pattern.len()];
                }
            }
            Op::Copy { from, at, len } => {
                let (f, a, l) = (*from as usize, *at as usize, *len as usize);
                out[a..a + l].copy_from_slice(&input[f..f + l]);
            }
            Op::Update { at, data } => {
                out[*at as usize..*at as usize + data.len()].copy_from_slice(data);
            }
            Op::Saxpy { y, x, n, a } => {
                for k in 0..*n as usize {
                    let yo = *y as usize + 4 * k;
                    let xo = *x as usize + 4 * k;
                    let yv = f32::from_le_bytes(out[yo..yo + 4].try_into().unwrap());
                    let xv = f32::from_le_bytes(input[xo..xo + 4].try_into().unwrap());
                    out[yo..yo + 4].copy_from_slice(&(a * xv + yv).to_le_bytes());
                }
            }
            Op::Barrier => {}
        }
    }
}

#[test]
fn blocks_of_mixed_commands_match_a_cpu_model() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let lib = device_library(&gpu);
        let fill_u32 = lib.kernel("fill_u32").expect("fill_u32");
        let saxpy = lib.kernel("saxpy_f32").expect("saxpy_f32");
        let queue = gpu.create_queue(4096).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 20).expect("command queue");
        for total in [1u32, 63, 64, 65, 1000] {
            let mut rng = Rng::new(0xC0DE_0000 + u64::from(total));
            // The first half of the input: finite floats for saxpy's x; the
            // rest random bytes for copies.
            let input_len = 4096usize;
            let mut input: Vec<u8> = (0..input_len).map(|_| rng.u32() as u8).collect();
            for k in 0..input_len / 8 {
                let v = rng.below(17) as f32 - 8.0;
                input[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
            let mut input_buf = host.alloc_host::<u8>(input_len).expect("alloc");
            input_buf.copy_from_slice(&input);
            let out_len = (REGION * u64::from(total)) as usize;
            let mut out = host.alloc_host::<u8>(out_len).expect("alloc");
            out.fill(POISON);
            let slot = |offset: u64, length: u64| BufferRef::binding(0, offset, length);
            let input_ref = |offset: u64, length: u64| BufferRef::binding(1, offset, length);

            let mut b = CommandBufferBuilder::new(&queue, total).expect("builder");
            // Issued grouped by kind, except the 65-command block, in
            // recording order.
            b.set_sort_by_kind(total != 65);
            let mut ops = Vec::new();
            // Commands until the last slot, the RETURN's; each writes only
            // the output region of its own index.
            while b.len() + 1 < total {
                let i = u64::from(b.len());
                let at = REGION * i;
                let room = total - 1 - b.len();
                match i % 7 {
                    0 => {
                        let count = 1 + rng.below(64);
                        let value = rng.u32();
                        let mut args = fill_u32.kernargs().expect("args");
                        args.bind(0, slot(at, 4 * count)).expect("dst");
                        args.set(1, count).expect("len");
                        args.set(2, value).expect("value");
                        b.dispatch(&fill_u32, Workgroups::linear(1, 64), &args)
                            .expect("dispatch");
                        ops.push(Op::FillU32 { at, count, value });
                    }
                    2 => {
                        let len = 1 + rng.below(REGION - 8);
                        let from = rng.below(input_len as u64 - len);
                        let offset = rng.below(REGION - len);
                        b.copy(input_ref(from, len), slot(at + offset, len))
                            .expect("copy");
                        ops.push(Op::Copy {
                            from,
                            at: at + offset,
                            len,
                        });
                    }
                    3 => {
                        let len = 1 + rng.below(100) as usize;
                        let data: Vec<u8> = (0..len).map(|_| rng.u32() as u8).collect();
                        let offset = rng.below(REGION - len as u64);
                        b.update(slot(at + offset, 0), &data).expect("update");
                        ops.push(Op::Update {
                            at: at + offset,
                            data,
                        });
                    }
                    4 if room >= 2 => {
                        // A barrier, then a saxpy into the region of its
                        // own index (still poison: a finite float) reading
                        // the input's floats.
                        b.barrier().expect("barrier");
                        ops.push(Op::Barrier);
                        let n = 1 + rng.below(48);
                        let x = 4 * rng.below(256);
                        let a = rng.below(9) as f32 - 4.0;
                        let at = REGION * (i + 1);
                        let mut args = saxpy.kernargs().expect("args");
                        args.set(0, n).expect("len");
                        args.set(1, a).expect("a");
                        args.bind(2, input_ref(x, 4 * n)).expect("x");
                        args.bind(3, slot(at, 4 * n)).expect("y");
                        b.dispatch(&saxpy, Workgroups::linear(1, 64), &args)
                            .expect("dispatch");
                        ops.push(Op::Saxpy { y: at, x, n, a });
                    }
                    _ => {
                        let size = [1usize, 2, 4, 8, 16][rng.below(5) as usize];
                        let offset = rng.below(16);
                        let len = size as u64 * (1 + rng.below((REGION - 16) / size as u64));
                        let pattern: Vec<u8> = (0..size).map(|_| rng.u32() as u8).collect();
                        b.fill(slot(at + offset, len), &pattern).expect("fill");
                        ops.push(Op::Fill {
                            at: at + offset,
                            len,
                            pattern,
                        });
                    }
                }
            }
            let buffer = b.finish().expect("finish");
            assert_eq!(buffer.len(), total.max(1), "{gfx}: commands recorded");
            let bindings = [
                BindingTableEntry {
                    address: out.address(),
                    length: out_len as u64,
                },
                BindingTableEntry {
                    address: input_buf.address(),
                    length: input_len as u64,
                },
            ];
            let submission = cq.submit(&buffer, &bindings).expect("submit");
            submission
                .wait(TIMEOUT)
                .unwrap_or_else(|e| panic!("{gfx}: {total} commands: {e}"));
            let mut want = vec![POISON; out_len];
            model(&ops, &mut want, &input);
            if let Some(k) = (0..out_len).find(|&k| out[k] != want[k]) {
                panic!(
                    "{gfx}: {total} commands: byte {k} (command {}) is {:#04x}, want {:#04x}",
                    k as u64 / REGION,
                    out[k],
                    want[k]
                );
            }
        }
    }
}

/// The recorder vouches for a direct dispatch with workgroups whose
/// arguments fit the issue's fast layout, and lays it out so: a template
/// with 64 bytes readable, a list of 4 patches (its own,
/// then copies of its last; fillers without bindings), a share of 64
/// argument bytes; the issue order takes the vouched ones first and the
/// block counts them. An indirect dispatch, one without workgroups and
/// one with an allocation reference are not vouched for, whatever their
/// arguments.
#[test]
fn the_recorder_vouches_for_prepared_dispatches_in_the_fast_layout() {
    use aqueduct::command_buffer::{
        BindingPatch, CommandView, DispatchCommand, FAST_ARGUMENT_BYTES, FAST_PATCHES, IssueShape,
    };
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let lib = device_library(&gpu);
        let saxpy = lib.kernel("saxpy_f32").expect("saxpy_f32");
        let queue = gpu.create_queue(256).expect("queue");
        let host = host_pool(&system);
        let count = host.alloc_host::<u32>(4).expect("count");
        let args = |x: BufferRef, y: BufferRef| {
            let mut args = saxpy.kernargs().expect("args");
            args.set(0, 16u64).expect("n");
            args.set(1, 2.0f32).expect("a");
            args.bind(2, x).expect("x");
            args.bind(3, y).expect("y");
            args
        };
        let bound = args(BufferRef::binding(1, 0, 64), BufferRef::binding(0, 64, 64));
        let direct = args(
            BufferRef::direct(count.address(), 16),
            BufferRef::direct(count.address(), 16),
        );
        let allocated = args(
            BufferRef::binding(1, 0, 64),
            BufferRef::allocation(count.address(), 0, 16),
        );
        let wg = Workgroups::linear(1, 64);
        let mut b = CommandBufferBuilder::new(&queue, 16).expect("builder");
        b.fill(BufferRef::binding(0, 0, 64), &[1]).expect("0: fill");
        b.dispatch(&saxpy, wg, &bound).expect("1: bound");
        b.dispatch(&saxpy, wg, &direct).expect("2: direct");
        b.dispatch(&saxpy, Workgroups::linear(0, 64), &bound)
            .expect("3: no workgroups");
        b.dispatch_indirect(&saxpy, wg, BufferRef::direct(count.address(), 16), &bound)
            .expect("4: indirect");
        b.dispatch(&saxpy, wg, &allocated).expect("5: allocation");
        b.dispatch(&saxpy, wg, &bound).expect("6: bound, repeated");
        let buffer = b.finish().expect("finish");
        let dispatch = |index: u32| -> DispatchCommand {
            match buffer.command(0, index).expect("recorded").view() {
                Ok(CommandView::Dispatch(d)) => *d,
                other => panic!("command {index}: {other:?}"),
            }
        };
        let patches = |d: &DispatchCommand| -> Vec<BindingPatch> {
            buffer
                .data(d.bindings, 16 * FAST_PATCHES)
                .expect("patches")
                .chunks(16)
                .map(|p| zerocopy::FromBytes::read_from_bytes(p).expect("patch"))
                .collect()
        };
        let size = dispatch(1).kernarg_size;
        assert!(size <= 56, "saxpy's arguments fit without bindings too");
        for (index, bindings) in [(1, 2), (2, 0), (6, 2)] {
            let d = dispatch(index);
            assert_eq!(
                d.header.issue_shape,
                IssueShape::new(size.div_ceil(16), bindings).expect("shape"),
                "command {index}"
            );
            assert!(
                buffer
                    .data(d.kernarg_template, FAST_ARGUMENT_BYTES as usize)
                    .is_some(),
                "command {index}: 64 template bytes readable"
            );
            let list = patches(&d);
            let own = &list[..bindings as usize];
            let rest = &list[bindings as usize..];
            let fill = own.last().copied().unwrap_or(BindingPatch::FILLER);
            assert!(rest.iter().all(|&p| p == fill), "command {index}: {list:?}");
            // The share: 64 bytes, whatever the kernel's size.
            let next = buffer.command(0, index + 1).expect("next");
            assert_eq!(
                next.header.kernarg_offset - d.header.kernarg_offset,
                FAST_ARGUMENT_BYTES,
                "command {index}"
            );
        }
        for index in [3, 4, 5] {
            assert_eq!(
                dispatch(index).header.issue_shape,
                IssueShape::NONE,
                "command {index}"
            );
        }
        let block = buffer.block_header(0).expect("block");
        assert_eq!(block.vouched_count, 3);
        let order = buffer
            .data(block.issue_order, 4 * block.command_count as usize)
            .expect("order");
        let order: Vec<u32> = order
            .chunks(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        assert_eq!(&order[..3], &[1, 2, 6], "the vouched first, in order");

        // In recording order, the vouched dispatches the block starts
        // with; a repeat without workgroups gets no fast layout (its share
        // is its own size).
        let mut b = CommandBufferBuilder::new(&queue, 16).expect("builder");
        b.set_sort_by_kind(false);
        b.dispatch(&saxpy, wg, &bound).expect("0");
        b.dispatch(&saxpy, wg, &bound).expect("1");
        b.fill(BufferRef::binding(0, 0, 64), &[1]).expect("2");
        b.dispatch(&saxpy, wg, &bound).expect("3");
        let none = Workgroups::linear(0, 64);
        b.dispatch(&saxpy, none, &bound).expect("4");
        b.dispatch(&saxpy, none, &bound).expect("5: repeat");
        let buffer = b.finish().expect("finish");
        let block = buffer.block_header(0).expect("block");
        assert_eq!((block.vouched_count, block.issue_order), (2, 0));
        for index in [4, 5] {
            let d = buffer.command(0, index).expect("recorded");
            let next = buffer.command(0, index + 1).expect("next");
            assert_eq!(d.header.issue_shape, IssueShape::NONE);
            assert_eq!(
                next.header.kernarg_offset - d.header.kernarg_offset,
                d.kernarg_bytes().next_multiple_of(16),
                "command {index}"
            );
        }
    }
}

/// A dispatch repeating the last one's kernel, launch and ordering is
/// recorded from a copy of it (the builder's quick path): it records
/// exactly what the full path records for the same dispatch, which the
/// same dispatch after another kernel's takes.
#[test]
fn a_repeated_dispatch_records_what_the_full_path_records() {
    use aqueduct::command_buffer::{BindingPatch, CommandBuffer, CommandView, DispatchCommand};
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let lib = device_library(&gpu);
        let fill_u32 = lib.kernel("fill_u32").expect("fill_u32");
        let saxpy = lib.kernel("saxpy_f32").expect("saxpy_f32");
        let queue = gpu.create_queue(256).expect("queue");
        let saxpy_args = |a: f32, x: u64, y: u64| {
            let mut args = saxpy.kernargs().expect("args");
            args.set(0, 16u64).expect("n");
            args.set(1, a).expect("a");
            args.bind(2, BufferRef::binding(1, x, 64)).expect("x");
            args.bind(3, BufferRef::binding(0, y, 64)).expect("y");
            args
        };
        let fill_args = {
            let mut args = fill_u32.kernargs().expect("args");
            args.bind(0, BufferRef::binding(2, 0, 64)).expect("dst");
            args.set(1, 16u64).expect("len");
            args.set(2, 7u32).expect("value");
            args
        };
        let wg = Workgroups::linear(1, 64);
        let mut b = CommandBufferBuilder::new(&queue, 16).expect("builder");
        // 0: full path; 1, 2: repeats; 3: another kernel; 4: full path
        // again (the same dispatch as 2); 5: a repeat under another
        // ordering takes the full path, 6 repeats it.
        b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64)).expect("0");
        b.dispatch(&saxpy, wg, &saxpy_args(2.0, 64, 128))
            .expect("1");
        b.dispatch(&saxpy, wg, &saxpy_args(3.0, 128, 192))
            .expect("2");
        b.dispatch(&fill_u32, wg, &fill_args).expect("3");
        b.dispatch(&saxpy, wg, &saxpy_args(3.0, 128, 192))
            .expect("4");
        b.set_ordering(Ordering::AGENT.with_barrier());
        b.dispatch(&saxpy, wg, &saxpy_args(3.0, 128, 192))
            .expect("5");
        b.dispatch(&saxpy, wg, &saxpy_args(3.0, 128, 192))
            .expect("6");
        assert_eq!(b.repeated_dispatches(), 3, "1, 2 and 6 repeat");
        // A repeat into another block: its place is that block's.
        let other = b.add_block().expect("block");
        b.select_block(0).expect("select");
        b.ret().expect("return");
        b.select_block(other).expect("select");
        b.dispatch(&saxpy, wg, &saxpy_args(3.0, 128, 192))
            .expect("7");
        assert_eq!(b.repeated_dispatches(), 4);
        b.ret().expect("return");
        let buffer = b.finish().expect("finish");
        let moved = buffer.command(other, 0).expect("recorded");
        assert_eq!(
            (moved.header.packet_offset, moved.header.kernarg_offset),
            (0, 0)
        );
        let dispatch = |index: u32| -> DispatchCommand {
            let c = buffer.command(0, index).expect("recorded");
            match c.view() {
                Ok(CommandView::Dispatch(d)) => *d,
                other => panic!("command {index}: {other:?}"),
            }
        };
        // What a dispatch records, its place in the block aside, with its
        // template, patches and prepared packet read back.
        let recorded = |buffer: &CommandBuffer, d: &DispatchCommand| {
            let packet = buffer.data(d.packet, 64).expect("packet").to_vec();
            let template = buffer
                .data(d.kernarg_template, d.kernarg_size as usize)
                .expect("template")
                .to_vec();
            let patches = buffer
                .data(
                    d.bindings,
                    d.binding_count as usize * size_of::<BindingPatch>(),
                )
                .expect("patches")
                .to_vec();
            let mut d = *d;
            d.header.packet_offset = 0;
            d.header.kernarg_offset = 0;
            d.kernarg_template = 0;
            d.bindings = 0;
            d.packet = 0;
            (d, template, patches, packet)
        };
        let (two, four) = (dispatch(2), dispatch(4));
        assert_eq!(
            recorded(&buffer, &two),
            recorded(&buffer, &four),
            "{}",
            gpu.info().name
        );
        assert_eq!(
            recorded(&buffer, &dispatch(5)),
            recorded(&buffer, &dispatch(6))
        );
        assert_ne!(dispatch(4).header.flags, dispatch(5).header.flags);
        // The places follow one another, and the repeats' arguments are
        // their own: x and y of 1 differ from 0's.
        for k in 1..7u32 {
            let (p, d) = (buffer.command(0, k - 1).unwrap(), dispatch(k));
            assert_eq!(d.header.packet_offset, p.header.packet_offset + 1);
            assert_eq!(
                d.header.kernarg_offset,
                p.header.kernarg_offset + p.kernarg_bytes().next_multiple_of(16)
            );
        }
        assert_ne!(
            recorded(&buffer, &dispatch(0)),
            recorded(&buffer, &dispatch(1))
        );
        let patch = |index: u32, k: usize| {
            let d = dispatch(index);
            let bytes = buffer.data(d.bindings + 16 * k as u64, 16).expect("patch");
            (
                u32::from_le_bytes(bytes[0..4].try_into().unwrap()),
                u64::from_le_bytes(bytes[8..16].try_into().unwrap()),
            )
        };
        assert_eq!([patch(1, 0), patch(1, 1)], [(1, 64), (0, 128)]);
        // The repeats' slot needs count: 2's y ends at byte 256 of slot 0,
        // its x at 192 of slot 1 (3 fills 64 bytes of slot 2).
        assert_eq!(buffer.binding_sizes(), &[256, 192, 64]);
        // A repeat binding a slot not seen yet records its need and its
        // patch as the full path does.
        let mut b = CommandBufferBuilder::new(&queue, 4).expect("builder");
        b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64)).expect("0");
        let mut new_slot = saxpy_args(2.0, 0, 64);
        new_slot.bind(3, BufferRef::binding(5, 32, 16)).expect("y");
        b.dispatch(&saxpy, wg, &new_slot).expect("1");
        assert_eq!(b.repeated_dispatches(), 1);
        b.ret().expect("return");
        let slots = b.finish().expect("finish");
        assert_eq!(slots.binding_sizes(), &[128, 64, 0, 0, 0, 48]);
        let d = match slots.command(0, 1).expect("recorded").view() {
            Ok(CommandView::Dispatch(d)) => *d,
            other => panic!("{other:?}"),
        };
        assert!(d.header.issue_shape.is_vouched());
        let bytes = slots.data(d.bindings + 16, 16).expect("patch");
        assert_eq!(u32::from_le_bytes(bytes[0..4].try_into().unwrap()), 5);
        assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 32);

        // What the quick path would refuse, the full path refuses with its
        // error, as after another kernel.
        let refused = |after_fill: bool, args: &aqueduct::Kernargs| {
            let mut b = CommandBufferBuilder::new(&queue, 3).expect("builder");
            if after_fill {
                b.dispatch(&fill_u32, wg, &fill_args).expect("fill");
            } else {
                b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64))
                    .expect("first");
            }
            let e = b.dispatch(&saxpy, wg, args).expect_err("refused");
            (e.to_string(), b.repeated_dispatches())
        };
        let mut wrapping = saxpy.kernargs().expect("args");
        wrapping
            .set(0, 16u64)
            .expect("n")
            .set(1, 1.0f32)
            .expect("a");
        wrapping
            .bind(2, BufferRef::binding(1, u64::MAX, 2))
            .expect("x");
        wrapping.bind(3, BufferRef::binding(0, 0, 64)).expect("y");
        let (quick, full) = (refused(false, &wrapping), refused(true, &wrapping));
        assert!(quick.0.contains("overflows"), "{}", quick.0);
        assert_eq!(quick, full);
        let (quick, full) = (refused(false, &fill_args), refused(true, &fill_args));
        assert_eq!(quick, full, "another kernel's arguments");
        // A repeat refused for its second binding (a slot past the table)
        // keeps no need of its first, though that one passed and reaches
        // further than slot 1 did.
        let mut b = CommandBufferBuilder::new(&queue, 3).expect("builder");
        b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64)).expect("0");
        let mut far = saxpy_args(1.0, 1024, 64);
        far.bind(3, BufferRef::binding(MAX_BINDING_SLOTS, 0, 64))
            .expect("y");
        match b.dispatch(&saxpy, wg, &far) {
            Err(Error::Command {
                index: 1,
                problem: CommandError::Slot { .. },
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        b.ret().expect("return");
        let kept = b.finish().expect("finish");
        assert_eq!(kept.binding_sizes(), &[128, 64]);
        // A full block: the repeat leaves it to the full path.
        let mut b = CommandBufferBuilder::new(&queue, 3).expect("builder");
        b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64)).expect("0");
        b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64)).expect("1");
        match b.dispatch(&saxpy, wg, &saxpy_args(1.0, 0, 64)) {
            Err(Error::Command {
                index: 2,
                problem: CommandError::BlockFull { capacity: 3 },
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(b.repeated_dispatches(), 1);
    }
}

#[test]
fn one_recording_replays_with_two_binding_tables() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let lib = device_library(&gpu);
        let fill_u32 = lib.kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(256).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");
        let mut b = CommandBufferBuilder::new(&queue, 4).expect("builder");
        let mut args = fill_u32.kernargs().expect("args");
        args.bind(0, BufferRef::binding(0, 16, 64)).expect("dst");
        args.set(1, 16u64).expect("len");
        args.set(2, 0xFEED_0001u32).expect("value");
        b.dispatch(&fill_u32, Workgroups::linear(1, 64), &args)
            .expect("dispatch");
        b.set_ordering(Ordering::AGENT.with_barrier());
        b.copy(BufferRef::binding(0, 16, 64), BufferRef::binding(1, 0, 64))
            .expect("copy");
        let buffer = b.finish().expect("finish");
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut a = host.alloc_host::<u8>(128).expect("alloc");
            let mut c = host.alloc_host::<u8>(64).expect("alloc");
            a.fill(POISON);
            c.fill(POISON);
            let table = [
                BindingTableEntry {
                    address: a.address(),
                    length: 128,
                },
                BindingTableEntry {
                    address: c.address(),
                    length: 64,
                },
            ];
            cq.submit(&buffer, &table)
                .expect("submit")
                .wait(TIMEOUT)
                .expect("wait");
            runs.push((a, c));
        }
        for (a, c) in &runs {
            let word = 0xFEED_0001u32.to_le_bytes();
            assert!(a[..16].iter().all(|&x| x == POISON), "before the range");
            assert!(a[80..].iter().all(|&x| x == POISON), "after the range");
            for k in 0..64 {
                assert_eq!(a[16 + k], word[k % 4]);
                assert_eq!(c[k], word[k % 4], "copied after the barrier");
            }
        }
    }
}

#[test]
fn bad_commands_are_refused_at_record_time_naming_the_command() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let lib = device_library(&gpu);
        let fill_u32 = lib.kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(64).expect("queue");
        let mut b = CommandBufferBuilder::new(&queue, 3).expect("builder");
        b.fill(BufferRef::binding(0, 0, 16), &[1]).expect("fill");
        let command = |e: Error| match e {
            Error::Command { index, problem, .. } => (index, problem),
            e => panic!("not a command error: {e}"),
        };
        // Arguments: one left unset.
        let mut args = fill_u32.kernargs().expect("args");
        args.set(1, 4u64).expect("len");
        args.set(2, 1u32).expect("value");
        let (index, problem) = command(
            b.dispatch(&fill_u32, Workgroups::linear(1, 64), &args)
                .unwrap_err(),
        );
        assert_eq!(index, 1);
        assert!(
            matches!(problem, CommandError::Arguments(ref m) if m.contains("not set")),
            "{problem}"
        );
        args.set(0, DevicePtr(0x1000)).expect("dst");
        // Workgroups beyond the agent's limit.
        let (_, problem) = command(
            b.dispatch(&fill_u32, Workgroups::linear(1, 2048), &args)
                .unwrap_err(),
        );
        assert!(matches!(problem, CommandError::Launch(_)), "{problem}");
        // Ranges, alignment, patterns, copies, updates.
        let (_, problem) = command(
            b.fill(BufferRef::binding(0, u64::MAX - 4, 8), &[0; 4])
                .unwrap_err(),
        );
        assert!(matches!(problem, CommandError::Range { .. }), "{problem}");
        // A binding-table slot past the most a submission binds.
        let (_, problem) = command(
            b.fill(BufferRef::binding(1 << 16, 0, 16), &[1])
                .unwrap_err(),
        );
        assert!(
            matches!(problem, CommandError::Slot { slot: 65536 }),
            "{problem}"
        );
        let (_, problem) = command(b.fill(BufferRef::binding(0, 0, 12), &[0; 3]).unwrap_err());
        assert!(
            matches!(problem, CommandError::Pattern { pattern: 3, .. }),
            "{problem}"
        );
        let (_, problem) = command(b.fill(BufferRef::binding(0, 0, 12), &[0; 8]).unwrap_err());
        assert!(
            matches!(problem, CommandError::Pattern { pattern: 8, .. }),
            "{problem}"
        );
        let (_, problem) = command(
            b.copy(BufferRef::binding(0, 0, 12), BufferRef::binding(1, 0, 16))
                .unwrap_err(),
        );
        assert!(
            matches!(problem, CommandError::CopyLength { .. }),
            "{problem}"
        );
        let (_, problem) = command(b.update(BufferRef::binding(0, 0, 0), &[]).unwrap_err());
        assert!(
            matches!(problem, CommandError::UpdateLength(0)),
            "{problem}"
        );
        let (_, problem) = command(
            b.dispatch_indirect(
                &fill_u32,
                Workgroups::linear(0, 64),
                BufferRef::binding(0, 2, 12),
                &args,
            )
            .unwrap_err(),
        );
        assert!(
            matches!(problem, CommandError::Alignment { align: 4, .. }),
            "{problem}"
        );
        // A branch condition 4 bytes off its 8-byte alignment, through a
        // binding and at an address; an aligned one at an address passes
        // the check (and ends the block, so it goes last in a builder of
        // its own).
        for condition in [BufferRef::binding(0, 4, 8), BufferRef::direct(0x1004, 8)] {
            let (_, problem) = command(
                b.cond_branch(condition, BranchCondition::EQ, 0, 0, 0)
                    .unwrap_err(),
            );
            assert!(
                matches!(problem, CommandError::Alignment { align: 8, .. }),
                "{problem}"
            );
        }
        CommandBufferBuilder::new(&queue, 3)
            .expect("builder")
            .cond_branch(BufferRef::direct(0x1008, 8), BranchCondition::EQ, 0, 0, 0)
            .expect("an aligned condition");
        // A refused command leaves no slot need: a copy whose source
        // (slot 7) passed before its target was refused ...
        let (_, problem) = command(
            b.copy(
                BufferRef::binding(7, 0, 16),
                BufferRef::binding(MAX_BINDING_SLOTS, 0, 16),
            )
            .unwrap_err(),
        );
        assert!(matches!(problem, CommandError::Slot { .. }), "{problem}");
        // Capacity: 3 slots, the last the RETURN's.
        b.barrier().expect("second command");
        let (index, problem) = command(b.barrier().unwrap_err());
        assert_eq!(index, 2);
        assert_eq!(problem, CommandError::BlockFull { capacity: 3 });
        // ... nor a fill or dispatch refused for a full block after its
        // buffers passed (slots 9 and 5).
        let (_, problem) = command(b.fill(BufferRef::binding(9, 0, 64), &[1]).unwrap_err());
        assert_eq!(problem, CommandError::BlockFull { capacity: 3 });
        let mut bound = fill_u32.kernargs().expect("args");
        bound.bind(0, BufferRef::binding(5, 0, 64)).expect("dst");
        bound.set(1, 16u64).expect("len");
        bound.set(2, 1u32).expect("value");
        let (_, problem) = command(
            b.dispatch(&fill_u32, Workgroups::linear(1, 64), &bound)
                .unwrap_err(),
        );
        assert_eq!(problem, CommandError::BlockFull { capacity: 3 });
        let buffer = b.finish().expect("finish");
        assert_eq!(buffer.len(), 3);
        assert_eq!(buffer.binding_sizes(), &[16]);
        // A branch to a block the recording does not have is refused when
        // the recording is finished.
        let mut bad = CommandBufferBuilder::new(&queue, 2).expect("builder");
        bad.branch(4).expect("recorded");
        match bad.finish().expect_err("no block 4") {
            Error::Command {
                block: 0,
                index: 0,
                problem:
                    CommandError::Target {
                        target: 4,
                        blocks: 1,
                    },
                ..
            } => {}
            e => panic!("{e}"),
        }
        // Submit-time checks: a missing or short binding.
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");
        let e = cq.submit(&buffer, &[]).err().expect("unbound slot");
        assert!(e.to_string().contains("slot 0 is not bound"), "{e}");
        let e = cq
            .submit(
                &buffer,
                &[BindingTableEntry {
                    address: 0x1000,
                    length: 8,
                }],
            )
            .err()
            .expect("short slot");
        assert!(e.to_string().contains("holds 8 bytes"), "{e}");
        // A table longer than MAX_BINDING_SLOTS (the issue's slot offsets
        // are 32-bit) is refused, even with every used slot bound; one of
        // exactly that length runs.
        let mut dst = host_pool(&system).alloc_host::<u8>(16).expect("alloc");
        dst.fill(POISON);
        let entry = BindingTableEntry {
            address: dst.address(),
            length: 16,
        };
        let max = MAX_BINDING_SLOTS as usize;
        let long = vec![entry; max + 1];
        let e = cq.submit(&buffer, &long).err().expect("too many slots");
        assert!(
            e.to_string()
                .contains("65537 slots, more than the 65536 a submission binds"),
            "{e}"
        );
        // (The table is copied into the kernarg ring: 1 MiB.)
        let mut big = CommandQueue::new(&queue, &lib, 1 << 21).expect("command queue");
        big.submit(&buffer, &long[..max])
            .expect("a full table")
            .wait(TIMEOUT)
            .expect("ran");
        assert_eq!(&dst[..], &[1; 16], "the fill wrote slot 0");
    }
}

/// The argument structs the issue writes for the blit kernels
/// (`FillArgs`, `CopyArgs`) and the issue kernel's one pointer are what the
/// compiler laid out, on every target.
#[test]
fn the_issue_writes_the_blit_kernels_arguments_where_their_metadata_puts_them() {
    use aqueduct::code_object::CodeObject;
    use aqueduct_abi::command::{CopyArgs, FillArgs, PatchArgs};
    use std::mem::offset_of;
    let fill = [
        (offset_of!(FillArgs, dst), 8),
        (offset_of!(FillArgs, len), 8),
        (offset_of!(FillArgs, pattern_lo), 8),
        (offset_of!(FillArgs, pattern_hi), 8),
        (offset_of!(FillArgs, pattern_size), 4),
    ];
    let patch = [
        (offset_of!(PatchArgs, packet), 8),
        (offset_of!(PatchArgs, count), 8),
        (offset_of!(PatchArgs, first_word), 4),
        (offset_of!(PatchArgs, no_op_header), 2),
        (offset_of!(PatchArgs, dimensions), 2),
        (offset_of!(PatchArgs, workgroup_size), 2),
        (offset_of!(PatchArgs, workgroup_size) + 2, 2),
        (offset_of!(PatchArgs, workgroup_size) + 4, 2),
    ];
    let copy = [
        (offset_of!(CopyArgs, dst), 8),
        (offset_of!(CopyArgs, src), 8),
        (offset_of!(CopyArgs, len), 8),
    ];
    let libraries: Vec<_> = aqueduct_tests::built_code_objects()
        .into_iter()
        .filter(|b| b.package == "aqueduct-device")
        .collect();
    assert!(!libraries.is_empty());
    for built in libraries {
        let bytes = std::fs::read(&built.path).expect("read");
        let code = CodeObject::parse(&bytes).expect("parse");
        let kernel = |name: &str| {
            code.kernels
                .iter()
                .find(|k| k.metadata.name == name)
                .unwrap_or_else(|| panic!("{}: no {name}", built.gfx))
                .metadata
                .clone()
        };
        for (name, want, size) in [
            ("blit_fill", &fill[..], size_of::<FillArgs>()),
            ("blit_copy", &copy[..], size_of::<CopyArgs>()),
            ("cmd_block_issue", &[(0, 8)][..], 8),
            ("cmd_block_issue_serial", &[(0, 8)][..], 8),
            ("cmd_branch", &[(0, 8), (8, 8)][..], 16),
            // The tick's kernarg: the scheduler state's address.
            ("sched_tick", &[(0, 8)][..], 8),
            ("cmd_patch_dispatch", &patch[..], size_of::<PatchArgs>()),
        ] {
            let meta = kernel(name);
            let got: Vec<(usize, usize)> = meta
                .args
                .iter()
                .map(|a| (a.offset as usize, a.size as usize))
                .collect();
            assert_eq!(got, want, "{}: {name}", built.gfx);
            assert!(
                meta.kernarg_segment_size as usize <= size,
                "{}: {name} takes {} bytes",
                built.gfx,
                meta.kernarg_segment_size
            );
        }
        let issue = kernel("cmd_block_issue");
        assert_eq!(
            issue.max_flat_workgroup_size, 64,
            "{}: launch bound",
            built.gfx
        );
    }
}

/// A kernel that traps inside a block: the wait names the command and the
/// kernel; the faulted queue is dead, another runs on. An allocation handle
/// committed before the submission is followed; one never committed makes
/// the issue itself stop, which the wait names as the block-issue kernel.
#[test]
fn faults_name_the_command_and_allocation_handles_resolve_at_issue() {
    use aqueduct::command_buffer::AllocationHandle;
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let lib = device_library(&gpu);
        let fill_u32 = lib.kernel("fill_u32").expect("fill_u32");
        let kernels = aqueduct_tests::load_device_crate(&gpu, "aqueduct-test-kernels");
        let trap = kernels.kernel("trap_on_value").expect("trap_on_value");

        let mut src = host.alloc_host::<u32>(64).expect("alloc");
        let dst = host.alloc_host::<u32>(64).expect("alloc");
        for (k, v) in src.iter_mut().enumerate() {
            *v = k as u32;
        }
        let queue = gpu.create_queue(64).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");
        let mut b = CommandBufferBuilder::new(&queue, 4).expect("builder");
        b.fill(BufferRef::direct(dst.address(), 256), &[7])
            .expect("fill");
        b.set_ordering(Ordering::AGENT.with_barrier());
        let mut args = trap.kernargs().expect("args");
        args.set(0, &src).expect("src");
        args.set(1, &dst).expect("dst");
        args.set(2, 64u64).expect("len");
        args.set(3, 33u32).expect("trap_on");
        b.dispatch(&trap, Workgroups::linear(1, 64), &args)
            .expect("dispatch");
        let buffer = b.finish().expect("finish");
        let e = cq
            .submit(&buffer, &[])
            .expect("submit")
            .wait(TIMEOUT)
            .expect_err("the kernel traps");
        match &e {
            Error::CommandFault { index, what, .. } => {
                assert_eq!(*index, 1, "{gfx}: {e}");
                assert!(what.contains("trap_on_value"), "{gfx}: {e}");
            }
            _ => panic!("{gfx}: not a command fault: {e}"),
        }

        // Another queue works, and follows a committed allocation handle.
        let queue = gpu.create_queue(64).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");
        let mut target = host.alloc_host::<u32>(16).expect("alloc");
        target.fill(0xA5A5_A5A5);
        let mut handle = host.alloc_host::<AllocationHandle>(2).expect("alloc");
        handle[0] = AllocationHandle {
            address: target.address(),
            length: 64,
        };
        let mut b = CommandBufferBuilder::new(&queue, 2).expect("builder");
        let mut args = fill_u32.kernargs().expect("args");
        args.bind(0, BufferRef::allocation(handle.address(), 16, 32))
            .expect("dst");
        args.set(1, 8u64).expect("len");
        args.set(2, 0x600D_F00Du32).expect("value");
        b.dispatch(&fill_u32, Workgroups::linear(1, 64), &args)
            .expect("dispatch");
        let buffer = b.finish().expect("finish");
        cq.submit(&buffer, &[])
            .expect("submit")
            .wait(TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: {e}"));
        let want: Vec<u32> = (0..16)
            .map(|k| {
                if (4..12).contains(&k) {
                    0x600D_F00D
                } else {
                    0xA5A5_A5A5
                }
            })
            .collect();
        assert_eq!(&target[..], &want[..], "{gfx}: through the handle");

        // The second handle was never committed: the issue stops.
        let mut b = CommandBufferBuilder::new(&queue, 2).expect("builder");
        let mut args = fill_u32.kernargs().expect("args");
        args.bind(0, BufferRef::allocation(handle.address() + 16, 0, 32))
            .expect("dst");
        args.set(1, 8u64).expect("len");
        args.set(2, 1u32).expect("value");
        b.dispatch(&fill_u32, Workgroups::linear(1, 64), &args)
            .expect("dispatch");
        let buffer = b.finish().expect("finish");
        let e = cq
            .submit(&buffer, &[])
            .expect("submit")
            .wait(TIMEOUT)
            .expect_err("an uncommitted allocation");
        match &e {
            Error::CommandFault { index, what, .. } => {
                assert_eq!(*index, 2, "{gfx}: {e}");
                assert!(what.contains("block-issue"), "{gfx}: {e}");
            }
            _ => panic!("{gfx}: not a command fault: {e}"),
        }
    }
}

/// Blocks bigger than the queue's free room, submitted back to back into a
/// 64-slot queue and an 8 KiB kernarg ring: each submission waits for room
/// and none loses a packet.
#[test]
fn back_to_back_blocks_wait_for_room_and_lose_nothing() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let lib = device_library(&gpu);
        let queue = gpu.create_queue(64).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 8 << 10).expect("command queue");
        const FILLS: u64 = 40;
        let mut b = CommandBufferBuilder::new(&queue, FILLS as u32 + 1).expect("builder");
        for k in 0..FILLS {
            b.fill(BufferRef::binding(0, 16 * k, 16), &[k as u8 + 1])
                .expect("fill");
        }
        let buffer = b.finish().expect("finish");
        assert_eq!(buffer.packets(), FILLS as u32 + 1);
        let outputs: Vec<_> = (0..5)
            .map(|_| {
                let mut o = host.alloc_host::<u8>(16 * FILLS as usize).expect("alloc");
                o.fill(POISON);
                o
            })
            .collect();
        let submissions: Vec<_> = outputs
            .iter()
            .map(|o| {
                let table = [BindingTableEntry {
                    address: o.address(),
                    length: 16 * FILLS,
                }];
                cq.submit(&buffer, &table).expect("submit")
            })
            .collect();
        for s in &submissions {
            s.wait(TIMEOUT).unwrap_or_else(|e| panic!("{gfx}: {e}"));
        }
        for o in &outputs {
            for (k, chunk) in o.chunks(16).enumerate() {
                assert!(chunk.iter().all(|&x| x == k as u8 + 1), "{gfx}: fill {k}");
            }
        }
    }
}

/// The simulated runtime counts what each kernel executed
/// (`System::runtime().simulator_kernel_stats()`): a block's issue shows
/// up as one dispatch of `cmd_block_issue` with a wave per 64 commands.
/// On ROCr there are no counts.
#[test]
fn the_simulator_counts_the_block_issue() {
    let system = announced_system();
    let Some(before) = system.runtime().simulator_kernel_stats() else {
        assert!(!aqueduct_tests::hsa_backend().is_simulator());
        return;
    };
    let issue_of = |stats: &[aqueduct::hsa::KernelStats]| {
        stats
            .iter()
            .find(|s| s.name == "cmd_block_issue")
            .map_or((0, 0, 0), |s| (s.dispatches, s.waves, s.instructions))
    };
    let gpu = hsa_gpus(&system).remove(0);
    let lib = device_library(&gpu);
    let queue = gpu.create_queue(256).expect("queue");
    let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");
    let mut b = CommandBufferBuilder::new(&queue, 100).expect("builder");
    for _ in 0..99 {
        b.barrier().expect("barrier");
    }
    let buffer = b.finish().expect("finish");
    // Other tests run alongside in this process: look for our dispatch's
    // waves among the growth, not for an exact total.
    cq.submit(&buffer, &[])
        .expect("submit")
        .wait(TIMEOUT)
        .expect("wait");
    let after = system
        .runtime()
        .simulator_kernel_stats()
        .expect("still the simulator");
    let (d0, w0, i0) = issue_of(&before);
    let (d1, w1, i1) = issue_of(&after);
    assert!(d1 > d0, "a dispatch of cmd_block_issue");
    assert!(w1 - w0 >= 2, "100 commands take two waves");
    assert!(i1 > i0, "instructions counted");
}

/// Three blocks: the entry copies N (read from device memory) into a
/// counter and branches to the body; the body adds x to y, decrements the
/// counter and branches back while it is not zero; the exit returns. The
/// body runs N times — replayed with N = 5 and N = 1 through the binding
/// table — with one submit and one wait each.
#[test]
fn a_conditional_loop_runs_its_block_n_times_read_from_memory() {
    use aqueduct::command_buffer::BranchCondition;
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let lib = device_library(&gpu);
        let saxpy = lib.kernel("saxpy_f32").expect("saxpy_f32");
        let kernels = aqueduct_tests::load_device_crate(&gpu, "aqueduct-test-kernels");
        let add = kernels
            .kernel("atomic_stats_u64")
            .expect("atomic_stats_u64");
        let queue = gpu.create_queue(256).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");

        let slot = |s: u32, len: u64| BufferRef::binding(s, 0, len);
        let mut b = CommandBufferBuilder::new(&queue, 8).expect("builder");
        let body = b.add_block().expect("block");
        let exit = b.add_block().expect("block");
        b.copy(slot(0, 8), slot(1, 8)).expect("copy");
        b.branch(body).expect("branch");
        b.select_block(body).expect("select");
        let mut args = saxpy.kernargs().expect("args");
        args.set(0, 16u64).expect("len");
        args.set(1, 1.0f32).expect("a");
        args.bind(2, slot(3, 64)).expect("x");
        args.bind(3, slot(4, 64)).expect("y");
        b.dispatch(&saxpy, Workgroups::linear(1, 64), &args)
            .expect("saxpy");
        let mut args = add.kernargs().expect("args");
        args.bind(0, slot(2, 8)).expect("src");
        args.set(1, 1u64).expect("len");
        args.bind(2, slot(1, 32)).expect("acc");
        b.dispatch(&add, Workgroups::linear(1, 64), &args)
            .expect("decrement");
        b.cond_branch(slot(1, 8), BranchCondition::NE, 0, body, exit)
            .expect("loop");
        b.select_block(exit).expect("select");
        b.ret().expect("return");
        let buffer = b.finish().expect("finish");
        assert_eq!(buffer.blocks(), 3);

        // SerialUpTo(1): the 1-command exit block is issued by the branch
        // itself; Parallel (and Auto, measured): every block by the
        // block-issue kernel; Serial: every block by one work-item (the
        // entry by cmd_block_issue_serial).
        let serial_dispatches = || {
            system.runtime().simulator_kernel_stats().map(|stats| {
                stats
                    .iter()
                    .find(|s| s.name == "cmd_block_issue_serial")
                    .map_or(0, |s| s.dispatches)
            })
        };
        let modes = [
            IssueMode::Auto,
            IssueMode::SerialUpTo(1),
            IssueMode::Parallel,
            IssueMode::Serial,
        ];
        for (mode, n) in modes.into_iter().flat_map(|mode| [(mode, 5u64), (mode, 1)]) {
            cq.set_issue_mode(mode);
            let serial_before = serial_dispatches();
            let mut n_buf = host.alloc_host::<u64>(2).expect("alloc");
            n_buf[0] = n;
            let counter = host.alloc_host::<u64>(4).expect("alloc");
            let mut minus_one = host.alloc_host::<u64>(2).expect("alloc");
            minus_one[0] = u64::MAX;
            let mut x = host.alloc_host::<f32>(16).expect("alloc");
            x.fill(1.0);
            let mut y = host.alloc_host::<f32>(16).expect("alloc");
            y.fill(0.5);
            let entry = |address: u64, length: u64| BindingTableEntry { address, length };
            let table = [
                entry(n_buf.address(), 16),
                entry(counter.address(), 32),
                entry(minus_one.address(), 16),
                entry(x.address(), 64),
                entry(y.address(), 64),
            ];
            cq.submit(&buffer, &table)
                .expect("submit")
                .wait(TIMEOUT)
                .unwrap_or_else(|e| panic!("{gfx} {mode:?}: N = {n}: {e}"));
            assert_eq!(counter[0], 0, "{gfx} {mode:?}: N = {n}: counted down");
            assert!(
                y.iter().all(|&v| v == 0.5 + n as f32),
                "{gfx} {mode:?}: N = {n}: y = {:?}",
                &y[..4]
            );
            if let (Some(before), Some(after)) = (serial_before, serial_dispatches()) {
                assert_eq!(
                    after > before,
                    mode == IssueMode::Serial,
                    "{gfx} {mode:?}: the serial issue kernel ran for the entry block"
                );
            }
        }
    }
}

/// Indirect dispatches: a dynamic one whose workgroup count a copy earlier
/// in the same command buffer produces (read when the dispatch is about to
/// run), replayed with counts 3 and 0; a static one whose count the host
/// wrote before submitting (read when the block issues). The kernel writes
/// one element per work-item, so the output shows the grid.
#[test]
fn indirect_dispatches_read_their_count_at_issue_or_just_before_running() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let lib = device_library(&gpu);
        let kernels = aqueduct_tests::load_device_crate(&gpu, "aqueduct-test-kernels");
        let per_item = kernels.kernel("trap_on_value").expect("trap_on_value");
        let queue = gpu.create_queue(256).expect("queue");
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 16).expect("command queue");
        const LEN: usize = 512;
        let slot = |s: u32, len: u64| BufferRef::binding(s, 0, len);
        let mut b = CommandBufferBuilder::new(&queue, 8).expect("builder");
        // The count is produced in the command buffer: a copy into slot 0.
        b.copy(slot(2, 12), slot(0, 12)).expect("copy");
        let args = |dst: u32| {
            let mut a = per_item.kernargs().expect("args");
            a.bind(0, slot(3, 4 * LEN as u64)).expect("src");
            a.bind(1, slot(dst, 4 * LEN as u64)).expect("dst");
            a.set(2, LEN as u64).expect("len");
            a.set(3, u32::MAX).expect("trap_on");
            a
        };
        b.dispatch_indirect_dynamic(&per_item, Workgroups::linear(0, 64), slot(0, 12), &args(1))
            .expect("dynamic");
        b.dispatch_indirect(&per_item, Workgroups::linear(0, 64), slot(4, 12), &args(5))
            .expect("static");
        let buffer = b.finish().expect("finish");
        assert_eq!(
            buffer.packets(),
            5,
            "copy, patch, dispatch, dispatch, return"
        );

        for k in [3u32, 0] {
            let count = host.alloc_host::<u32>(4).expect("alloc");
            let mut dst = host.alloc_host::<u32>(LEN).expect("alloc");
            dst.fill(0xDEAD_BEEF);
            let mut produced = host.alloc_host::<u32>(4).expect("alloc");
            produced[..3].copy_from_slice(&[k, 7, 7]);
            let mut src = host.alloc_host::<u32>(LEN).expect("alloc");
            for (i, v) in src.iter_mut().enumerate() {
                *v = i as u32;
            }
            let mut fixed = host.alloc_host::<u32>(4).expect("alloc");
            fixed[..3].copy_from_slice(&[2, 1, 1]);
            let mut dst2 = host.alloc_host::<u32>(LEN).expect("alloc");
            dst2.fill(0xDEAD_BEEF);
            let entry = |address: u64, length: u64| BindingTableEntry { address, length };
            let table = [
                entry(count.address(), 16),
                entry(dst.address(), 4 * LEN as u64),
                entry(produced.address(), 16),
                entry(src.address(), 4 * LEN as u64),
                entry(fixed.address(), 16),
                entry(dst2.address(), 4 * LEN as u64),
            ];
            cq.submit(&buffer, &table)
                .expect("submit")
                .wait(TIMEOUT)
                .unwrap_or_else(|e| panic!("{gfx}: count {k}: {e}"));
            for (name, out, items) in [("dynamic", &dst, 64 * k), ("static", &dst2, 128)] {
                for (i, &v) in out.iter().enumerate() {
                    let want = if (i as u32) < items {
                        i as u32 ^ 0x5A5A_5A5A
                    } else {
                        0xDEAD_BEEF
                    };
                    assert_eq!(v, want, "{gfx}: {name} with count {k}: element {i}");
                }
            }
        }
    }
}
