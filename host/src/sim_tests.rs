//! The safe API end to end on the simulator's HSA runtime, in-process
//! (`hsa::testing`): allocation and freeing, copies, signal waits and
//! timeouts, queue reservation and header-last emplacement, the four-call
//! code-object load, dispatches that really run, and queue faults that
//! really happen.
//!
//! The simulator's packet processor consumes packets as soon as they are
//! published, so a test that looks at packets in the ring first *gates* the
//! queue: a barrier-AND packet whose dependency it holds at 1 stops the
//! processor there, as it would stop ROCr's.

use std::time::{Duration, Instant};

use aqueduct_abi::aql::{KernelDispatchPacket, PacketHeader, PacketType};
use aqueduct_abi::gfx::{PRODUCTS, gfx};
use aqueduct_abi::hsa::{HsaQueue, SignalCondition};
use aqueduct_abi::hsa_api::{HSA_STATUS_ERROR, HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION};
use aqueduct_abi::packet::{self, BarrierKind, Ordering};

use crate::agent::{Agent, AgentKind};
use crate::hsa::testing;
use crate::{Error, Launch, LoadOrder, PoolKind, RmwOrder, Signal, StoreOrder, System, WaitOrder};

fn system() -> System {
    System::with_runtime(testing::runtime()).expect("hsa_init on the simulator")
}

fn gpu(system: &System) -> Agent {
    system.gpus().expect("agents").remove(0)
}

fn raw(queue: &crate::Queue) -> *mut HsaQueue {
    queue.address() as *mut HsaQueue
}

fn device_library() -> Vec<u8> {
    match crate::device_code::load("gfx942", crate::device_code::DEVICE_LIBRARY) {
        Ok((bytes, _)) => bytes,
        Err(e) => panic!("{e} (the test command builds device code first)"),
    }
}

/// Stops `queue`'s processor at a barrier packet until the returned signal
/// is set to 0.
fn gate(system: &System, queue: &crate::Queue) -> Signal {
    let gate = Signal::new(system, 1).unwrap();
    let barrier = packet::barrier(
        BarrierKind::And,
        &[gate.handle()],
        aqueduct_abi::hsa::SignalHandle::NULL,
        Ordering::SYSTEM,
    )
    .unwrap();
    queue.submit_barrier(&barrier).unwrap();
    gate
}

/// The packets after the gate (the first packet in the ring).
fn after_gate(queue: &crate::Queue) -> Vec<aqueduct_abi::aql::AqlPacket> {
    let mut packets = testing::peek(raw(queue));
    assert_eq!(
        packets.first().map(|p| p.header.packet_type()),
        Some(PacketType::BARRIER_AND),
        "the gate holds the queue"
    );
    packets.remove(0);
    packets
}

/// The queue's write index: how many packets were ever reserved.
fn reserved(queue: &crate::Queue) -> u64 {
    // A reservation of a whole ring with nothing consumed would wait; a
    // reservation of one slot right after the last id tells the index.
    let r = queue.reserve(1, Duration::from_secs(5)).unwrap();
    r.first_id()
}

#[test]
fn agents_report_the_runtime_values() {
    let system = system();
    let agents = system.agents().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0].info().kind, AgentKind::Cpu);
    // The simulator's default agent: an MI300X, as the per-gfx table
    // describes it.
    let mi300x = PRODUCTS[0];
    let chip = mi300x.chip();
    let facts = gfx(chip.gfx).unwrap();
    let info = agents[1].info();
    assert_eq!(info.name, "gfx942");
    let g = info.gpu.as_ref().unwrap();
    assert_eq!(g.isa, "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-");
    assert_eq!(
        (g.chip_id, g.compute_units, g.product_name.as_str()),
        (mi300x.chip, mi300x.compute_units, chip.name)
    );
    assert_eq!(g.lds_size, u64::from(facts.lds_per_workgroup));
    assert_eq!(info.wavefront_size, facts.wave_size);
    assert_eq!(g.max_waves_per_cu, facts.max_waves_per_cu());
    assert_eq!((info.queue_min_size, info.queue_max_size), (64, 1 << 17));
}

#[test]
fn pools_are_found_by_kind_and_lds_cannot_be_allocated() {
    let system = system();
    let gpu = gpu(&system);
    let coarse = gpu.memory_pool(PoolKind::CoarseGrained).unwrap();
    assert!(coarse.info().coarse_grained && !coarse.host_accessible());
    let group = gpu.memory_pool(PoolKind::Group).unwrap();
    assert_eq!(group.info().size, 64 << 10, "gfx942's LDS per workgroup");
    let err = group.alloc_device::<u32>(4).unwrap_err();
    assert!(
        err.to_string()
            .contains("does not allow runtime allocation"),
        "{err}"
    );
    let err = gpu.memory_pool(PoolKind::Kernarg).unwrap_err();
    assert!(err.to_string().contains("has no kernarg pool"), "{err}");
    let err = coarse.alloc_host::<u32>(4).unwrap_err();
    assert!(err.to_string().contains("not host-accessible"), "{err}");
}

#[test]
fn device_buffers_round_trip_and_are_freed_on_drop() {
    let system = system();
    let gpu = gpu(&system);
    let pool = gpu.memory_pool(PoolKind::CoarseGrained).unwrap();
    let mut buf = pool.alloc_device::<u32>(1000).unwrap();
    let address = buf.address();
    assert!(testing::is_live(address));
    assert_eq!(
        buf.to_vec().unwrap()[999],
        u32::from_ne_bytes([testing::POISON; 4]),
        "new memory is poisoned, not zeroed"
    );
    let data: Vec<u32> = (0..1000).map(|i| i * 7 + 3).collect();
    buf.write(0, &data).unwrap();
    assert_eq!(buf.to_vec().unwrap(), data);
    buf.write(990, &[1; 10]).unwrap();
    let mut tail = [0u32; 12];
    buf.read(988, &mut tail).unwrap();
    assert_eq!(tail, [6919, 6926, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    let err = buf.write(995, &[0; 6]).unwrap_err();
    assert!(
        err.to_string()
            .contains("995..1001 are outside the buffer of 1000"),
        "{err}"
    );
    drop(buf);
    assert!(!testing::is_live(address));
}

#[test]
fn host_buffers_are_zeroed_and_dereference() {
    let system = system();
    let cpu = system.agents().unwrap().remove(0);
    let pool = cpu.memory_pool(PoolKind::FineGrained).unwrap();
    let mut buf = pool.alloc_host::<u64>(64).unwrap();
    assert!(
        buf.iter().all(|&v| v == 0),
        "alloc_host must not expose old bytes (the runtime's are poisoned)"
    );
    buf[5] = 0xfeed;
    assert_eq!(buf.to_vec().unwrap()[5], 0xfeed);
    buf.allow_access(&[&gpu(&system)]).unwrap();
    let err = buf.allow_access(&[]).unwrap_err();
    assert!(err.to_string().contains("no agents given"), "{err}");
}

#[test]
fn async_copies_complete_through_their_signal() {
    let system = system();
    let gpu = gpu(&system);
    let cpu = system.agents().unwrap().remove(0);
    let mut host = cpu
        .memory_pool(PoolKind::FineGrained)
        .unwrap()
        .alloc_host::<f32>(256)
        .unwrap();
    for (i, v) in host.iter_mut().enumerate() {
        *v = i as f32 * 0.5 - 3.0;
    }
    let mut dev = gpu
        .memory_pool(PoolKind::CoarseGrained)
        .unwrap()
        .alloc_device::<f32>(256)
        .unwrap();
    let gate = Signal::new(&system, 1).unwrap();
    let mut copy = dev.copy_from_async(&host, &[&gate]).unwrap();
    // The copy waits for its dependency.
    let err = copy.wait(Duration::from_millis(30)).unwrap_err();
    assert!(matches!(err, Error::Timeout { observed: 1, .. }), "{err}");
    gate.store(0, StoreOrder::Release);
    copy.wait(Duration::from_secs(10)).unwrap();
    drop(copy);
    assert_eq!(dev.to_vec().unwrap(), host.to_vec().unwrap());
    let small = gpu
        .memory_pool(PoolKind::CoarseGrained)
        .unwrap()
        .alloc_device::<f32>(255)
        .unwrap();
    let err = dev.copy_from_async(&small, &[]).err().unwrap();
    assert!(
        err.to_string()
            .contains("source has 255 elements, destination 256"),
        "{err}"
    );
}

#[test]
fn signal_operations_follow_hsa_semantics() {
    let system = system();
    let s = Signal::new(&system, 10).unwrap();
    assert_eq!(s.load(LoadOrder::Acquire), 10);
    s.add(5, RmwOrder::AcqRel);
    s.add(-3, RmwOrder::Relaxed);
    assert_eq!(s.load(LoadOrder::Relaxed), 12);
    assert_eq!(s.cas(12, 40, RmwOrder::Release), 12);
    assert_eq!(s.cas(12, 99, RmwOrder::Acquire), 40);
    s.store(7, StoreOrder::Relaxed);
    assert_eq!(
        s.wait(
            SignalCondition::GTE,
            7,
            Duration::from_secs(1),
            WaitOrder::Relaxed
        )
        .unwrap(),
        7
    );
    let handle = s.handle();
    assert!(testing::signal_is_live(handle));
    drop(s);
    assert!(
        !testing::signal_is_live(handle),
        "destroyed with its last clone"
    );
    assert_eq!(testing::misuse(), Vec::<String>::new());
}

#[test]
fn a_wait_that_times_out_is_an_error_with_the_last_value() {
    let system = system();
    let s = Signal::new(&system, 3).unwrap();
    let start = Instant::now();
    let err = s
        .wait(
            SignalCondition::EQ,
            0,
            Duration::from_millis(60),
            WaitOrder::Acquire,
        )
        .unwrap_err();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(60) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    match err {
        Error::Timeout {
            observed,
            expected,
            condition,
            ..
        } => {
            assert_eq!((observed, expected, condition), (3, 0, "=="));
        }
        other => panic!("{other}"),
    }
    // A value set by another thread ends the wait.
    let s2 = s.clone();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        s2.store(0, StoreOrder::Release);
    });
    let v = s
        .wait(
            SignalCondition::EQ,
            0,
            Duration::from_secs(10),
            WaitOrder::Acquire,
        )
        .unwrap();
    assert_eq!(v, 0);
    setter.join().unwrap();
}

#[test]
fn queues_refuse_bad_sizes_and_non_gpu_agents() {
    let system = system();
    let gpu = gpu(&system);
    for size in [0, 3, 32, gpu.info().queue_max_size * 2] {
        let err = gpu.create_queue(size).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    what: "queue size",
                    ..
                }
            ),
            "{size}: {err}"
        );
    }
    let cpu = system.agents().unwrap().remove(0);
    let err = cpu.create_queue(64).unwrap_err();
    assert!(err.to_string().contains("is not a GPU"), "{err}");
}

#[test]
fn packets_are_published_header_last_and_the_doorbell_names_the_last_id() {
    let system = system();
    let queue = gpu(&system).create_queue(64).unwrap();
    let gate = gate(&system, &queue);
    assert_eq!(testing::doorbell(raw(&queue)), Some(0));
    let done = Signal::new(&system, 1).unwrap();
    let barrier = packet::barrier(BarrierKind::And, &[], done.handle(), Ordering::SYSTEM).unwrap();
    let id = queue.submit_barrier(&barrier).unwrap();
    assert_eq!(id, 1);
    assert_eq!(testing::doorbell(raw(&queue)), Some(1));
    let pending = after_gate(&queue);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].header, PacketHeader(barrier.first_word() as u16));
    assert_eq!(done.load(LoadOrder::Acquire), 1, "held behind the gate");
    gate.store(0, StoreOrder::Release);
    queue
        .wait(&done, SignalCondition::EQ, 0, Duration::from_secs(5))
        .unwrap();
    assert_eq!(testing::misuse(), Vec::<String>::new());
}

#[test]
fn a_full_ring_makes_producers_wait_and_a_dropped_reservation_leaves_no_hole() {
    let system = system();
    let queue = gpu(&system).create_queue(64).unwrap();
    let gate = gate(&system, &queue);
    let rest = queue.reserve(63, Duration::from_secs(1)).unwrap();
    assert_eq!(rest.first_id(), 1);
    // Dropped unwritten: its 63 slots become no-op barriers.
    drop(rest);
    assert_eq!(testing::doorbell(raw(&queue)), Some(63));
    let err = queue.reserve(1, Duration::from_millis(30)).err().unwrap();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    let filled = after_gate(&queue);
    assert_eq!(filled.len(), 63);
    assert!(
        filled
            .iter()
            .all(|p| p.header.packet_type() == PacketType::BARRIER_AND)
    );
    gate.store(0, StoreOrder::Release);
    // Room appears as the processor consumes the ring.
    assert_eq!(reserved(&queue), 64);
    let err = queue.reserve(65, Duration::from_secs(1)).err().unwrap();
    assert!(
        err.to_string()
            .contains("65 slots requested from a ring of 64"),
        "{err}"
    );
}

#[test]
fn loading_uses_the_four_calls_and_lookup_reports_segment_sizes() {
    let system = system();
    let gpu = gpu(&system);
    testing::clear_calls();
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let sequence: Vec<&str> = testing::calls()
        .into_iter()
        .filter(|c| c.starts_with("hsa_executable") || c.starts_with("hsa_code_object"))
        .collect();
    assert_eq!(
        sequence,
        [
            "hsa_executable_create_alt",
            "hsa_code_object_reader_create_from_memory",
            "hsa_executable_load_agent_code_object",
            "hsa_executable_freeze"
        ]
    );
    let fill = exec.kernel("fill_u32").unwrap();
    assert_eq!(fill.kernarg_segment_size(), 20);
    assert_eq!(fill.object() % 64, 0);
    assert_eq!(exec.kernel("fill_u32.kd").unwrap().object(), fill.object());
    let err = exec.kernel("gemm").unwrap_err();
    assert!(
        err.to_string()
            .contains("no kernel \"gemm\" in the code object; it has: "),
        "{err}"
    );
    assert!(err.to_string().contains("fill_u32"), "{err}");
}

#[test]
fn a_code_object_for_another_gfx_is_refused_before_hsa_is_called() {
    let system = system();
    let gpu = gpu(&system);
    let Ok((bytes, _)) = crate::device_code::load("gfx90a", crate::device_code::DEVICE_LIBRARY)
    else {
        panic!("gfx90a device library not built (the test command builds all default targets)");
    };
    testing::clear_calls();
    let err = gpu.load_code_object(&bytes).unwrap_err();
    assert!(
        err.to_string().contains("code object targets gfx90a"),
        "{err}"
    );
    assert!(err.to_string().contains("the agent is gfx942"), "{err}");
    let calls = testing::calls();
    assert!(
        calls.iter().all(|c| !c.starts_with("hsa_executable")),
        "{calls:?}"
    );
    let err = gpu.load_code_object(b"\x7fELF but not really").unwrap_err();
    assert!(matches!(err, Error::CodeObject { .. }), "{err}");
    let err = gpu
        .load_code_object_file("/nonexistent/x.hsaco")
        .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/x.hsaco"), "{err}");
}

#[test]
fn a_failed_load_destroys_what_it_created() {
    let system = system();
    let gpu = gpu(&system);
    testing::clear_calls();
    testing::set_fail("hsa_executable_freeze", HSA_STATUS_ERROR);
    let err = gpu.load_code_object(&device_library()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Hsa {
                call: "hsa_executable_freeze",
                ..
            }
        ),
        "{err}"
    );
    let calls = testing::calls();
    assert!(calls.contains(&"hsa_executable_destroy"), "{calls:?}");
    assert!(
        calls.contains(&"hsa_code_object_reader_destroy"),
        "{calls:?}"
    );
    // The failure was injected once: the next load succeeds.
    gpu.load_code_object(&device_library()).unwrap();
}

#[test]
fn a_dispatch_writes_the_packet_and_kernargs_and_runs() {
    let system = system();
    let gpu = gpu(&system);
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let fill = exec.kernel("fill_u32").unwrap();
    let queue = gpu.create_queue(128).unwrap();
    let out = gpu
        .memory_pool(PoolKind::CoarseGrained)
        .unwrap()
        .alloc_device::<u32>(1000)
        .unwrap();
    let mut args = fill.kernargs().unwrap();
    args.set("dst", &out)
        .unwrap()
        .set("len", 1000u64)
        .unwrap()
        .set("value", 0xC0FFEEu32)
        .unwrap();
    let gate = gate(&system, &queue);
    let mut dispatch = fill
        .dispatch_launch(&queue, &Launch::linear(1000, 256), &args, None)
        .unwrap();
    let pending = after_gate(&queue);
    assert_eq!(pending.len(), 1);
    let p = pending[0].as_typed::<KernelDispatchPacket>().unwrap();
    assert_eq!(p.header.packet_type(), PacketType::KERNEL_DISPATCH);
    assert_eq!((p.setup, p.grid_size_x, p.workgroup_size_x), (1, 1000, 256));
    assert_eq!(p.kernel_object, fill.object());
    assert_eq!(p.completion_signal, dispatch.signal().handle());
    // The kernarg segment holds dst, len, value at the metadata offsets.
    let mut seg = [0u8; 20];
    aqueduct_sim::hsa::runtime()
        .unwrap()
        .memory
        .read_bytes(p.kernarg_address, &mut seg)
        .unwrap();
    assert_eq!(&seg[0..8], &out.address().to_le_bytes());
    assert_eq!(&seg[8..16], &1000u64.to_le_bytes());
    assert_eq!(&seg[16..20], &0xC0FFEEu32.to_le_bytes());
    assert!(
        out.to_vec().unwrap().iter().all(|&v| v != 0xC0FFEE),
        "nothing ran behind the gate"
    );
    gate.store(0, StoreOrder::Release);
    dispatch.wait(Duration::from_secs(30)).unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 0xC0FFEE));
    assert!(
        !testing::is_live(p.kernarg_address),
        "kernargs freed after completion"
    );
}

/// `fill_u32` loaded on `gpu`, a 64-packet queue, and arguments that fill
/// `dst` (4 elements).
fn fill_on_queue(
    gpu: &Agent,
    dst: crate::DevicePtr,
) -> (crate::Kernel, crate::Queue, crate::Kernargs) {
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let fill = exec.kernel("fill_u32").unwrap();
    let queue = gpu.create_queue(64).unwrap();
    let mut args = fill.kernargs().unwrap();
    args.set("dst", dst).unwrap();
    args.set("len", 4u64).unwrap();
    args.set("value", 1u32).unwrap();
    (fill, queue, args)
}

#[test]
fn a_queue_fault_is_reported_by_the_next_wait() {
    let system = system();
    let gpu = gpu(&system);
    // An address no allocation covers: the kernel's store faults.
    let (fill, queue, args) = fill_on_queue(&gpu, crate::DevicePtr(0x1000));
    let mut dispatch = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    let start = Instant::now();
    let err = dispatch.wait(Duration::from_secs(30)).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the fault must end the wait early"
    );
    match &err {
        Error::QueueFault {
            status, queue_id, ..
        } => {
            assert_eq!(
                (*status, *queue_id),
                (HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, queue.id())
            );
        }
        other => panic!("{other}"),
    }
    assert!(queue.fault().is_some());
    let err = queue.reserve(1, Duration::from_secs(1)).err().unwrap();
    assert!(matches!(err, Error::QueueFault { .. }), "{err}");
}

#[test]
fn a_dropped_dispatch_keeps_its_kernargs_until_done() {
    let system = system();
    let gpu = gpu(&system);
    let out = gpu
        .memory_pool(PoolKind::CoarseGrained)
        .unwrap()
        .alloc_device::<u32>(4)
        .unwrap();
    let (fill, queue, args) = fill_on_queue(&gpu, crate::DevicePtr(out.address()));
    let gate_1 = gate(&system, &queue);
    let dispatch = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    drop(dispatch);
    // Not consumed yet: the kernarg memory must still be there.
    let kernarg = after_gate(&queue)[0]
        .as_typed::<KernelDispatchPacket>()
        .unwrap()
        .kernarg_address;
    let mut second = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    assert!(testing::is_live(kernarg));
    gate_1.store(0, StoreOrder::Release);
    second.wait(Duration::from_secs(30)).unwrap();
    // The next dispatch reclaims the first one's arguments. The allocator
    // may hand the freed block straight to the third dispatch's own
    // arguments; the first's allocation is gone either way (unreclaimed, it
    // would still be live and the third would sit elsewhere).
    let gate_2 = gate(&system, &queue);
    let mut third = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    let third_kernarg = after_gate(&queue)
        .last()
        .and_then(|p| p.as_typed::<KernelDispatchPacket>())
        .map(|p| p.kernarg_address);
    assert!(!testing::is_live(kernarg) || third_kernarg == Some(kernarg));
    gate_2.store(0, StoreOrder::Release);
    third.wait(Duration::from_secs(30)).unwrap();
    assert_eq!(out.to_vec().unwrap(), [1; 4]);
    assert_eq!(testing::misuse(), Vec::<String>::new());
}

#[test]
fn dispatch_validation_refuses_before_writing_a_packet() {
    let system = system();
    let gpu = gpu(&system);
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let fill = exec.kernel("fill_u32").unwrap();
    let copy = exec.kernel("copy_bytes").unwrap();
    let queue = gpu.create_queue(64).unwrap();
    let mut args = fill.kernargs().unwrap();
    args.push(crate::DevicePtr(0x1000))
        .unwrap()
        .push(4u64)
        .unwrap();
    let err = fill.dispatch(&queue, 64, 64, &args, None).unwrap_err();
    assert!(err.to_string().contains("not set: value"), "{err}");
    args.push(1u32).unwrap();
    let err = copy.dispatch(&queue, 64, 64, &args, None).unwrap_err();
    assert!(
        err.to_string().contains("built for kernel fill_u32"),
        "{err}"
    );
    let err = fill.dispatch(&queue, 64, 2048, &args, None).unwrap_err();
    assert!(err.to_string().contains("at most 1024"), "{err}");
    let lds = u32::try_from(gpu.info().gpu.as_ref().unwrap().lds_size).unwrap();
    let err = fill
        .dispatch_launch(
            &queue,
            &Launch::linear(64, 64).with_dynamic_lds(lds + 1),
            &args,
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("LDS per workgroup"), "{err}");
    assert_eq!(reserved(&queue), 0, "nothing was submitted");
}

/// Bad input to every public entry point that takes a size, an index, a
/// name or a condition: each is refused before HSA sees it, with a message
/// naming the problem. (Device strings, library paths, packet shapes and
/// kernel arguments have their own tables in their modules.)
#[test]
fn bad_input_is_refused_with_a_message() {
    let system = system();
    let gpu = gpu(&system);
    let pool = gpu.memory_pool(PoolKind::CoarseGrained).unwrap();
    let mut a = pool.alloc_device::<u16>(8).unwrap();
    let b = pool.alloc_device::<u16>(9).unwrap();
    let queue = gpu.create_queue(64).unwrap();
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let signal = Signal::new(&system, 1).unwrap();
    let mut dst = [0u16; 4];
    let cases: Vec<(crate::Result<()>, &str)> = vec![
        (
            pool.alloc_device::<u16>(0).map(drop),
            "zero elements requested",
        ),
        (
            pool.alloc_device::<u64>(usize::MAX / 4).map(drop),
            "overflow usize",
        ),
        (
            pool.alloc_device::<()>(4).map(drop),
            "zero-sized element type",
        ),
        (
            a.write(7, &[1, 2]),
            "elements 7..9 are outside the buffer of 8",
        ),
        (
            b.read(6, &mut dst),
            "elements 6..10 are outside the buffer of 9",
        ),
        (a.copy_from(&b), "source has 9 elements, destination 8"),
        (
            queue.reserve(0, Duration::from_secs(1)).map(drop),
            "0 slots requested",
        ),
        (exec.kernel("").map(drop), "is empty or contains a NUL byte"),
        (
            exec.kernel("fill\0u32").map(drop),
            "is empty or contains a NUL byte",
        ),
        (exec.kernel("fill").map(drop), "no kernel \"fill\""),
        (
            signal
                .wait(
                    SignalCondition(9),
                    0,
                    Duration::from_secs(1),
                    WaitOrder::Relaxed,
                )
                .map(drop),
            "unknown condition",
        ),
        (gpu.create_queue(96).map(drop), "96 is not a power of two"),
    ];
    for (i, (result, message)) in cases.into_iter().enumerate() {
        let err = result.expect_err(message);
        assert!(err.to_string().contains(message), "case {i}: {err}");
    }
    assert_eq!(reserved(&queue), 0, "nothing was submitted");
}

#[test]
fn the_test_layer_logs_calls_injects_failures_once_and_notes_misuse() {
    let system = system();
    testing::clear_calls();
    testing::set_fail("hsa_signal_create", HSA_STATUS_ERROR);
    let err = Signal::new(&system, 1).err().unwrap();
    assert!(
        matches!(
            err,
            Error::Hsa {
                call: "hsa_signal_create",
                status: HSA_STATUS_ERROR,
                ..
            }
        ),
        "{err}"
    );
    let s = Signal::new(&system, 1).unwrap();
    assert_eq!(
        testing::calls()
            .into_iter()
            .filter(|c| *c == "hsa_signal_create")
            .count(),
        2
    );
    let handle = s.handle();
    drop(s);
    // A use after destruction, as only a bug in the host layer would make.
    let api = system.runtime().api();
    // SAFETY: the simulator reads a destroyed signal as 0 and writes
    // nothing; the test layer notes the call.
    let value = unsafe { (api.hsa_signal_load_relaxed)(handle) };
    assert_eq!(value, 0);
    let misuse = testing::misuse();
    assert_eq!(misuse.len(), 1, "{misuse:?}");
    assert!(
        misuse[0].starts_with("hsa_signal_load_relaxed: signal"),
        "{misuse:?}"
    );
}

#[test]
#[should_panic(expected = "returns a status")]
fn only_functions_with_a_status_can_fail() {
    testing::set_fail("hsa_signal_load_relaxed", HSA_STATUS_ERROR);
}
