//! The safe API run end to end against the in-process fake HSA runtime
//! (`hsa::fake`): allocation and freeing, copies, signal waits and
//! timeouts, queue reservation and header-last emplacement, fault
//! reporting, the four-call code-object load and dispatch packets.
//!
//! The fake follows ROCr's documented C semantics but executes no kernel:
//! a test plays packet processor with `fake::process`, which consumes the
//! published packets and decrements their completion signals. The same
//! paths run again on aqueduct's simulator, which executes the kernels.

use std::time::{Duration, Instant};

use aqueduct_abi::aql::{KernelDispatchPacket, PacketType};
use aqueduct_abi::hsa::{HsaQueue, SignalCondition};
use aqueduct_abi::packet::{self, BarrierKind, Ordering};

use crate::agent::{Agent, AgentKind};
use crate::hsa::fake;
use crate::{Error, Launch, LoadOrder, PoolKind, RmwOrder, Signal, StoreOrder, System, WaitOrder};

fn system() -> System {
    System::with_runtime(fake::runtime()).expect("fake hsa_init")
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

#[test]
fn agents_report_the_runtime_values() {
    let system = system();
    let agents = system.agents().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0].info().kind, AgentKind::Cpu);
    let gpu = &agents[1];
    let info = gpu.info();
    assert_eq!(info.name, fake::GPU_NAME);
    let g = info.gpu.as_ref().unwrap();
    assert_eq!(g.isa, fake::GPU_ISA);
    assert_eq!(g.chip_id, 0x74a1);
    assert_eq!(g.compute_units, 304);
    assert_eq!(g.lds_size, u64::from(fake::LDS));
    assert_eq!(info.queue_min_size, fake::QUEUE_MIN);
    assert_eq!(info.queue_max_size, fake::QUEUE_MAX);
}

#[test]
fn pools_are_found_by_kind_and_lds_cannot_be_allocated() {
    let system = system();
    let gpu = gpu(&system);
    let coarse = gpu.memory_pool(PoolKind::CoarseGrained).unwrap();
    assert!(coarse.info().coarse_grained && !coarse.host_accessible());
    let group = gpu.memory_pool(PoolKind::Group).unwrap();
    assert_eq!(group.info().size, u64::from(fake::LDS));
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
    assert!(fake::is_live(address as *const _));
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
    assert!(!fake::is_live(address as *const _));
}

#[test]
fn host_buffers_are_zeroed_and_dereference() {
    let system = system();
    let cpu = system.agents().unwrap().remove(0);
    let pool = cpu.memory_pool(PoolKind::FineGrained).unwrap();
    let mut buf = pool.alloc_host::<u64>(64).unwrap();
    assert!(
        buf.iter().all(|&v| v == 0),
        "alloc_host must not expose old bytes"
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
    for size in [0, 3, 32, fake::QUEUE_MAX * 2] {
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
    let done = Signal::new(&system, 1).unwrap();
    let barrier = packet::barrier(BarrierKind::And, &[], done.handle(), Ordering::SYSTEM).unwrap();
    let id = queue.submit_barrier(&barrier).unwrap();
    assert_eq!(id, 0);
    assert_eq!(fake::last_doorbell(raw(&queue)), Some(0));
    let consumed = fake::process(raw(&queue));
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].header.packet_type(), PacketType::BARRIER_AND);
    assert_eq!(consumed[0].header, barrier_header(&barrier));
    queue
        .wait(&done, SignalCondition::EQ, 0, Duration::from_secs(1))
        .unwrap();
    assert_eq!(fake::misuse(), Vec::<String>::new());
}

fn barrier_header(p: &packet::BarrierPacket) -> aqueduct_abi::aql::PacketHeader {
    aqueduct_abi::aql::PacketHeader(p.first_word() as u16)
}

#[test]
fn a_full_ring_makes_producers_wait_and_a_dropped_reservation_leaves_no_hole() {
    let system = system();
    let queue = gpu(&system).create_queue(64).unwrap();
    let all = queue.reserve(64, Duration::from_secs(1)).unwrap();
    assert_eq!(all.first_id(), 0);
    // Dropped unwritten: its 64 slots become no-op barriers.
    drop(all);
    assert_eq!(fake::last_doorbell(raw(&queue)), Some(63));
    let err = queue.reserve(1, Duration::from_millis(30)).err().unwrap();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    let consumed = fake::process(raw(&queue));
    assert_eq!(consumed.len(), 64);
    assert!(
        consumed
            .iter()
            .all(|p| p.header.packet_type() == PacketType::BARRIER_AND)
    );
    let r = queue.reserve(1, Duration::from_secs(1)).unwrap();
    assert_eq!(r.first_id(), 64);
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
    fake::clear_calls();
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let calls = fake::calls();
    let sequence: Vec<&str> = calls
        .iter()
        .map(String::as_str)
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
    fake::clear_calls();
    let err = gpu.load_code_object(&bytes).unwrap_err();
    assert!(
        err.to_string().contains("code object targets gfx90a"),
        "{err}"
    );
    assert!(err.to_string().contains("the agent is gfx942"), "{err}");
    assert!(
        fake::calls()
            .iter()
            .all(|c| !c.starts_with("hsa_executable")),
        "{:?}",
        fake::calls()
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
    fake::clear_calls();
    fake::set_fail("hsa_executable_freeze", crate::hsa::ffi::HSA_STATUS_ERROR);
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
    let calls = fake::calls();
    assert!(
        calls.iter().any(|c| c == "hsa_executable_destroy"),
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c == "hsa_code_object_reader_destroy"),
        "{calls:?}"
    );
}

#[test]
fn a_dispatch_writes_the_packet_and_kernargs_and_completes() {
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
    let mut dispatch = fill
        .dispatch_launch(&queue, &Launch::linear(1000, 256), &args, None)
        .unwrap();
    let consumed = fake::process(raw(&queue));
    assert_eq!(consumed.len(), 1);
    let p = consumed[0].as_typed::<KernelDispatchPacket>().unwrap();
    assert_eq!(p.header.packet_type(), PacketType::KERNEL_DISPATCH);
    assert_eq!((p.setup, p.grid_size_x, p.workgroup_size_x), (1, 1000, 256));
    assert_eq!(p.kernel_object, fill.object());
    assert_eq!(p.completion_signal, dispatch.signal().handle());
    // The kernarg segment holds dst, len, value at the metadata offsets.
    let mut seg = [0u8; 20];
    // SAFETY: the kernarg allocation is live until the dispatch is waited on.
    unsafe { std::ptr::copy_nonoverlapping(p.kernarg_address as *const u8, seg.as_mut_ptr(), 20) };
    assert_eq!(&seg[0..8], &out.address().to_le_bytes());
    assert_eq!(&seg[8..16], &1000u64.to_le_bytes());
    assert_eq!(&seg[16..20], &0xC0FFEEu32.to_le_bytes());
    dispatch.wait(Duration::from_secs(5)).unwrap();
    assert!(
        !fake::is_live(p.kernarg_address as *const _),
        "kernargs freed after completion"
    );
}

/// `fill_u32` loaded on `gpu`, a 64-packet queue, and complete arguments
/// (the fake runs no kernel, so the address need not be real).
fn fill_on_queue(gpu: &Agent) -> (crate::Kernel, crate::Queue, crate::Kernargs) {
    let exec = gpu.load_code_object(&device_library()).unwrap();
    let fill = exec.kernel("fill_u32").unwrap();
    let queue = gpu.create_queue(64).unwrap();
    let mut args = fill.kernargs().unwrap();
    args.set("dst", crate::DevicePtr(0x1000)).unwrap();
    args.set("len", 4u64).unwrap();
    args.set("value", 1u32).unwrap();
    (fill, queue, args)
}

#[test]
fn a_queue_fault_is_reported_by_the_next_wait() {
    let system = system();
    let gpu = gpu(&system);
    let (fill, queue, args) = fill_on_queue(&gpu);
    let mut dispatch = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    fake::fault(
        raw(&queue),
        fake::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    );
    let start = Instant::now();
    let err = dispatch.wait(Duration::from_secs(30)).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the fault must end the wait early"
    );
    match &err {
        Error::QueueFault {
            status, queue_id, ..
        } => {
            assert_eq!(
                (*status, *queue_id),
                (fake::HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, queue.id())
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
    let (fill, queue, args) = fill_on_queue(&gpu);
    let dispatch = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    drop(dispatch);
    // Not consumed yet: the kernarg memory must still be there.
    let pending = fake::peek(raw(&queue));
    let kernarg = pending[0]
        .as_typed::<KernelDispatchPacket>()
        .unwrap()
        .kernarg_address;
    let mut second = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    assert!(fake::is_live(kernarg as *const _));
    fake::process(raw(&queue));
    second.wait(Duration::from_secs(5)).unwrap();
    // The next dispatch reclaims the first one's arguments. The allocator
    // may hand the freed block straight to the third dispatch's own
    // arguments; the first's allocation is gone either way (unreclaimed, it
    // would still be live and the third would sit elsewhere).
    let mut third = fill.dispatch(&queue, 4, 4, &args, None).unwrap();
    let third_kernarg = fake::peek(raw(&queue))
        .last()
        .and_then(|p| p.as_typed::<KernelDispatchPacket>())
        .map(|p| p.kernarg_address);
    assert!(!fake::is_live(kernarg as *const _) || third_kernarg == Some(kernarg));
    fake::process(raw(&queue));
    third.wait(Duration::from_secs(5)).unwrap();
    assert_eq!(fake::misuse(), Vec::<String>::new());
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
    let err = fill
        .dispatch_launch(
            &queue,
            &Launch::linear(64, 64).with_dynamic_lds(fake::LDS + 1),
            &args,
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("LDS per workgroup"), "{err}");
    assert!(fake::peek(raw(&queue)).is_empty(), "nothing was submitted");
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
    assert!(fake::peek(raw(&queue)).is_empty());
}
