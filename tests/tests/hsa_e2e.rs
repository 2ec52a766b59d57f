//! End-to-end suite: aqueduct's host shim driving a whole HSA
//! runtime — ROCr when it finds an AMD GPU, the simulator's
//! `libaqueduct_sim.so` otherwise (`aqueduct_tests::hsa_backend`; every test
//! prints which ran). Each test runs on every GPU agent the runtime reports:
//! gfx942 and gfx90a on the simulator.
//!
//! What is checked, through the public host API only (except where a test
//! must see a raw HSA status):
//!
//! - the device library's `fill_u32`, `copy_bytes` and `saxpy_f32` against
//!   CPU references, on poisoned buffers longer than the range written, so a
//!   stray write past the end shows;
//! - ordering across queues: a barrier-AND packet on one queue holds back
//!   that queue's dispatch until a dispatch on another queue completes;
//! - `hsa_amd_memory_async_copy` both ways, gated by a dependency signal;
//! - a kernel writing through a wild pointer: the queue's error callback
//!   fires and waits on that queue report `Error::QueueFault`, while another
//!   queue of the same agent keeps working;
//! - agent dispatch packets reaching a host service;
//! - a code object for another gfx refused, by the shim before any HSA call
//!   (`Error::TargetMismatch`) and by the runtime itself (ROCr's status for
//!   an ISA the agent does not support).

use std::time::Instant;

use aqueduct::agent::Agent;
use aqueduct::hsa::ffi;
use aqueduct::{DevicePtr, Error, Launch, Signal, System};
use aqueduct::{LoadOrder, StoreOrder};
use aqueduct_abi::hsa::SignalCondition;
use aqueduct_abi::packet::{BarrierKind, Ordering, barrier};
use aqueduct_tests::{
    HOLD, QUEUE_SIZE, Rng, TIMEOUT, Word, announced_system, device_library, device_pool, host_pool,
    hsa_backend, hsa_gpus,
};

const POISON_F32: f32 = f32::from_bits(0x7FC0_DEAD);

/// Elements past the written range that must keep their poison.
const TAIL: usize = 37;

/// `HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS` (hsa.h): what ROCr's loader
/// returns from `hsa_executable_load_agent_code_object` when "code object's
/// ISA is not supported by the agent" (ROCr `ExecutableImpl::LoadCodeObject`).
const HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: ffi::Status = 0x100D;

/// Waits until a signal reaches 0 (the end of a packet's or copy's life).
fn wait_zero(signal: &Signal) {
    signal
        .wait(
            SignalCondition::EQ,
            0,
            TIMEOUT,
            aqueduct::WaitOrder::Acquire,
        )
        .expect("signal reaches 0");
}

// ---------------------------------------------------------------------------
// Kernels against CPU references
// ---------------------------------------------------------------------------

/// Lengths and launches: grid-stride loops (grid smaller than the length),
/// a partial last workgroup, and a grid larger than the length.
const SHAPES: [(usize, u32, u16); 3] = [(3000, 1024, 256), (1000, 1000, 64), (100, 256, 128)];

#[test]
fn fill_u32_writes_its_range_and_nothing_past_it() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let fill = device_library(&gpu).kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        for (i, &(len, grid, workgroup)) in SHAPES.iter().enumerate() {
            let value = 0x1234_0000 + i as u32;
            let mut out = device_pool(&gpu)
                .alloc_device::<u32>(len + TAIL)
                .expect("alloc");
            out.write(0, &vec![u32::POISON; len + TAIL])
                .expect("poison");
            let mut args = fill.kernargs().expect("kernargs");
            args.set("dst", &out)
                .and_then(|a| a.set("len", len as u64))
                .and_then(|a| a.set("value", value))
                .expect("arguments");
            let done = Signal::new(&system, 1).expect("signal");
            let mut run = fill
                .dispatch(&queue, grid, workgroup, &args, Some(&done))
                .expect("dispatch");
            run.wait(TIMEOUT).expect("fill_u32 completes");
            assert_eq!(done.load(LoadOrder::Acquire), 0, "completion signal");
            let got = out.to_vec().expect("read back");
            let mut want = vec![value; len];
            want.extend([u32::POISON; TAIL]);
            assert_eq!(
                got,
                want,
                "{}: fill_u32 len {len}, grid {grid}, workgroup {workgroup}",
                gpu.info().name
            );
        }
    }
}

#[test]
fn copy_bytes_copies_its_range_and_nothing_past_it() {
    let system = announced_system();
    let mut rng = Rng(0xC0FF_EE00_0000_0006);
    for gpu in hsa_gpus(&system) {
        let copy = device_library(&gpu)
            .kernel("copy_bytes")
            .expect("copy_bytes");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        // Odd lengths: the kernel copies byte by byte.
        for &(len, grid, workgroup) in &[(4099usize, 1024u32, 256u16), (777, 777, 64)] {
            let bytes: Vec<u8> = (0..len + TAIL).map(|_| rng.u32() as u8).collect();
            let mut src = device_pool(&gpu)
                .alloc_device::<u8>(len + TAIL)
                .expect("alloc");
            src.write(0, &bytes).expect("upload");
            let mut dst = device_pool(&gpu)
                .alloc_device::<u8>(len + TAIL)
                .expect("alloc");
            dst.write(0, &vec![u8::POISON; len + TAIL]).expect("poison");
            let mut args = copy.kernargs().expect("kernargs");
            args.set("dst", &dst)
                .and_then(|a| a.set("src", &src))
                .and_then(|a| a.set("len", len as u64))
                .expect("arguments");
            let done = Signal::new(&system, 1).expect("signal");
            let mut run = copy
                .dispatch(&queue, grid, workgroup, &args, Some(&done))
                .expect("dispatch");
            run.wait(TIMEOUT).expect("copy_bytes completes");
            assert_eq!(done.load(LoadOrder::Acquire), 0, "completion signal");
            let got = dst.to_vec().expect("read back");
            let mut want = bytes[..len].to_vec();
            want.extend([u8::POISON; TAIL]);
            assert!(
                got == want,
                "{}: copy_bytes len {len}: first difference at byte {:?}",
                gpu.info().name,
                got.iter().zip(&want).position(|(g, w)| g != w)
            );
        }
    }
}

#[test]
fn saxpy_f32_rounds_like_the_cpu() {
    let system = announced_system();
    let mut rng = Rng(0x5A_0000_0006);
    for gpu in hsa_gpus(&system) {
        let saxpy = device_library(&gpu).kernel("saxpy_f32").expect("saxpy_f32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        for &(len, grid, workgroup) in &SHAPES {
            let a = rng.f32();
            let x: Vec<f32> = (0..len).map(|_| rng.f32()).collect();
            let y0: Vec<f32> = (0..len).map(|_| rng.f32()).collect();
            let mut xs = device_pool(&gpu).alloc_device::<f32>(len).expect("alloc");
            xs.write(0, &x).expect("upload x");
            let mut ys = device_pool(&gpu)
                .alloc_device::<f32>(len + TAIL)
                .expect("alloc");
            ys.write(0, &y0).expect("upload y");
            ys.write(len, &[POISON_F32; TAIL]).expect("poison");
            let mut args = saxpy.kernargs().expect("kernargs");
            args.set("len", len as u64)
                .and_then(|k| k.set("a", a))
                .and_then(|k| k.set("x", &xs))
                .and_then(|k| k.set("y", &ys))
                .expect("arguments");
            let done = Signal::new(&system, 1).expect("signal");
            let mut run = saxpy
                .dispatch(&queue, grid, workgroup, &args, Some(&done))
                .expect("dispatch");
            run.wait(TIMEOUT).expect("saxpy_f32 completes");
            assert_eq!(done.load(LoadOrder::Acquire), 0, "completion signal");
            // The kernel rounds the product before the sum, as `a * x + y`
            // does on the host: the results agree bit for bit.
            let got: Vec<u32> = ys
                .to_vec()
                .expect("read back")
                .iter()
                .map(|v| v.to_bits())
                .collect();
            let mut want: Vec<u32> = x
                .iter()
                .zip(&y0)
                .map(|(x, y)| (a * x + y).to_bits())
                .collect();
            want.extend([POISON_F32.to_bits(); TAIL]);
            assert!(
                got == want,
                "{}: saxpy_f32 len {len}, a = {a}: first difference at {:?}",
                gpu.info().name,
                got.iter().zip(&want).position(|(g, w)| g != w)
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Ordering across queues
// ---------------------------------------------------------------------------

#[test]
fn a_barrier_and_holds_a_queue_until_another_queues_dispatch_completes() {
    let system = announced_system();
    const LEN: usize = 512;
    const VALUE: u32 = 0x0BAD_CAFE;
    for gpu in hsa_gpus(&system) {
        let lib = device_library(&gpu);
        let fill = lib.kernel("fill_u32").expect("fill_u32");
        let copy = lib.kernel("copy_bytes").expect("copy_bytes");
        let producer_queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let consumer_queue = gpu.create_queue(QUEUE_SIZE).expect("queue");

        let mut middle = device_pool(&gpu).alloc_device::<u32>(LEN).expect("alloc");
        middle.write(0, &[u32::POISON; LEN]).expect("poison");
        let mut out = device_pool(&gpu).alloc_device::<u32>(LEN).expect("alloc");
        out.write(0, &[0; LEN]).expect("clear");

        // Consumer first: barrier-AND on the producer's completion signal,
        // then (barrier bit set) copy middle -> out.
        let produced = Signal::new(&system, 1).expect("signal");
        let barrier_done = Signal::new(&system, 1).expect("signal");
        let packet = barrier(
            BarrierKind::And,
            &[produced.handle()],
            barrier_done.handle(),
            Ordering::SYSTEM,
        )
        .expect("barrier packet");
        consumer_queue
            .submit_barrier(&packet)
            .expect("submit barrier");
        let mut args = copy.kernargs().expect("kernargs");
        args.set("dst", &out)
            .and_then(|a| a.set("src", &middle))
            .and_then(|a| a.set("len", (LEN * 4) as u64))
            .expect("arguments");
        let launch = Launch::linear(256, 64).with_ordering(Ordering::SYSTEM.with_barrier());
        let mut consumer = copy
            .dispatch_launch(&consumer_queue, &launch, &args, None)
            .expect("dispatch copy");

        // Nothing has decremented `produced`: the consumer queue must sit.
        std::thread::sleep(HOLD);
        assert_eq!(
            barrier_done.load(LoadOrder::Acquire),
            1,
            "barrier ran early"
        );
        assert_eq!(
            consumer.signal().load(LoadOrder::Acquire),
            1,
            "copy ran early"
        );
        assert_eq!(out.to_vec().expect("read"), vec![0; LEN], "copy ran early");

        let mut args = fill.kernargs().expect("kernargs");
        args.set("dst", &middle)
            .and_then(|a| a.set("len", LEN as u64))
            .and_then(|a| a.set("value", VALUE))
            .expect("arguments");
        let mut producer = fill
            .dispatch(&producer_queue, 256, 64, &args, Some(&produced))
            .expect("dispatch fill");
        producer.wait(TIMEOUT).expect("producer completes");
        consumer.wait(TIMEOUT).expect("consumer completes");
        wait_zero(&barrier_done);
        assert_eq!(
            out.to_vec().expect("read"),
            vec![VALUE; LEN],
            "{}: the copy saw the fill's result",
            gpu.info().name
        );
    }
}

// ---------------------------------------------------------------------------
// Asynchronous copies
// ---------------------------------------------------------------------------

#[test]
fn async_copies_wait_for_their_dependencies_and_complete() {
    let system = announced_system();
    let host = host_pool(&system);
    let mut rng = Rng(0xA5C0_0000_0006);
    const LEN: usize = 10_000;
    for gpu in hsa_gpus(&system) {
        let data: Vec<u32> = (0..LEN).map(|_| rng.u32()).collect();
        let mut staging = host.alloc_host::<u32>(LEN).expect("host alloc");
        staging.copy_from_slice(&data);
        if !host.info().accessible_by_all {
            staging.allow_access(&[&gpu]).expect("allow access");
        }
        let mut device = device_pool(&gpu).alloc_device::<u32>(LEN).expect("alloc");
        device.write(0, &[u32::POISON; LEN]).expect("poison");

        // Host -> device, held back by a gate signal.
        let gate = Signal::new(&system, 1).expect("signal");
        {
            let mut copy = device
                .copy_from_async(&staging, &[&gate])
                .expect("start copy");
            std::thread::sleep(HOLD);
            assert_eq!(
                copy.signal().load(LoadOrder::Acquire),
                1,
                "the copy completed before its dependency was satisfied"
            );
            gate.store(0, StoreOrder::Release);
            copy.wait(TIMEOUT).expect("host-to-device copy completes");
            assert_eq!(copy.signal().load(LoadOrder::Acquire), 0);
        }
        assert!(
            device.to_vec().expect("read") == data,
            "{}: host-to-device async copy",
            gpu.info().name
        );

        // Device -> host, no dependencies.
        let mut back = host.alloc_host::<u32>(LEN).expect("host alloc");
        back.fill(u32::POISON);
        if !host.info().accessible_by_all {
            back.allow_access(&[&gpu]).expect("allow access");
        }
        back.copy_from_async(&device, &[])
            .expect("start copy")
            .wait(TIMEOUT)
            .expect("device-to-host copy completes");
        assert!(
            back[..] == data[..],
            "{}: device-to-host async copy",
            gpu.info().name
        );
    }
}

// ---------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------

/// An address no allocation covers: below the first page.
const WILD: u64 = 0x40;

/// On ROCr, a GPU page fault without a system event handler ends the
/// process (ROCr prints "Memory access fault by GPU" and aborts), taking the
/// whole test binary with it; the fault test runs there only on request.
const ROCR_FAULTS_ENV: &str = "AQUEDUCT_E2E_ROCR_FAULTS";

#[test]
fn a_wild_write_faults_its_queue_and_every_later_wait_reports_it() {
    let system = announced_system();
    if !hsa_backend().is_simulator() && std::env::var_os(ROCR_FAULTS_ENV).is_none() {
        eprintln!("skipped on ROCr: set {ROCR_FAULTS_ENV}=1 to run (a page fault may abort)");
        return;
    }
    for gpu in hsa_gpus(&system) {
        let fill = device_library(&gpu).kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let mut args = fill.kernargs().expect("kernargs");
        args.set("dst", DevicePtr(WILD))
            .and_then(|a| a.set("len", 64u64))
            .and_then(|a| a.set("value", 1u32))
            .expect("arguments");
        let mut bad = fill
            .dispatch(&queue, 64, 64, &args, None)
            .expect("dispatch");
        let err = bad.wait(TIMEOUT).expect_err("a wild write must fault");
        eprintln!("{}: {err}", gpu.info().name);
        let Error::QueueFault {
            queue_id, status, ..
        } = err
        else {
            panic!("{}: expected a queue fault, got {err}", gpu.info().name);
        };
        assert_eq!(queue_id, queue.id());
        assert_ne!(status, 0);

        // The fault sticks: the queue reports it, a wait on any signal
        // through it fails at once, and so does a new submission.
        assert!(matches!(queue.fault(), Some(Error::QueueFault { status: s, .. }) if s == status));
        let unrelated = Signal::new(&system, 1).expect("signal");
        let start = Instant::now();
        let err = queue
            .wait(&unrelated, SignalCondition::LT, 1, TIMEOUT)
            .expect_err("waits through a faulted queue fail");
        assert!(matches!(err, Error::QueueFault { .. }), "{err}");
        assert!(
            start.elapsed() < TIMEOUT / 2,
            "the wait noticed the fault late"
        );
        let mut out = device_pool(&gpu).alloc_device::<u32>(64).expect("alloc");
        out.write(0, &[u32::POISON; 64]).expect("poison");
        let mut good_args = fill.kernargs().expect("kernargs");
        good_args
            .set("dst", &out)
            .and_then(|a| a.set("len", 64u64))
            .and_then(|a| a.set("value", 2u32))
            .expect("arguments");
        match fill.dispatch(&queue, 64, 64, &good_args, None) {
            Err(Error::QueueFault { .. }) => {}
            Err(e) => panic!("dispatch on a faulted queue: {e}"),
            Ok(mut d) => {
                let e = d
                    .wait(TIMEOUT)
                    .expect_err("a faulted queue runs nothing more");
                assert!(matches!(e, Error::QueueFault { .. }), "{e}");
            }
        }

        // Another queue of the same agent is unaffected.
        let healthy = gpu.create_queue(QUEUE_SIZE).expect("queue");
        fill.dispatch(&healthy, 64, 64, &good_args, None)
            .expect("dispatch")
            .wait(TIMEOUT)
            .expect("a healthy queue still runs");
        assert_eq!(out.to_vec().expect("read"), vec![2; 64]);
    }
}

// ---------------------------------------------------------------------------
// Code objects for another processor
// ---------------------------------------------------------------------------

/// A gfx target the device library was built for that `gpu` is not.
fn other_gfx(gpu: &Agent) -> &'static str {
    xtask::targets::DEFAULT_TARGETS
        .iter()
        .map(|t| t.name)
        .find(|&gfx| {
            gfx != gpu.info().name && aqueduct::device_code::path(gfx, "aqueduct-device").exists()
        })
        .expect("the device library for another gfx")
}

#[test]
fn a_code_object_for_another_gfx_is_refused_by_the_shim_and_the_runtime() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let other = other_gfx(&gpu);
        let (wrong, _) = aqueduct::device_code::load_device_library(other).expect("load");
        let (right, _) = aqueduct::device_code::load_device_library(&gfx).expect("load");

        // The shim: refused before any HSA call, naming both processors.
        match gpu.load_code_object(&wrong) {
            Err(Error::TargetMismatch {
                code_object, agent, ..
            }) => {
                assert!(code_object.contains(other), "{code_object}");
                assert_eq!(agent, gfx);
            }
            Err(e) => panic!("{gfx}: {other} code object: expected TargetMismatch, got {e}"),
            Ok(_) => panic!("{gfx}: the shim loaded a {other} code object"),
        }

        // The runtime: the four loading calls by hand. The right code
        // object loads; the wrong one is refused at the load call.
        let status = raw_load(&system, &gpu, &right);
        assert_eq!(
            status,
            ffi::HSA_STATUS_SUCCESS,
            "{gfx}: loading its own code object: {}",
            system.runtime().status_message(status)
        );
        let status = raw_load(&system, &gpu, &wrong);
        eprintln!(
            "{gfx}: {other} code object: status {status:#x} ({})",
            system.runtime().status_message(status)
        );
        assert_eq!(
            status,
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
            "{gfx}: {other} code object through hsa_executable_load_agent_code_object: {}",
            system.runtime().status_message(status)
        );
    }
}

/// Creates an executable and a reader for `bytes`, loads it on `gpu` and
/// freezes it; returns the load call's status (every other call must
/// succeed). Destroys what it made.
fn raw_load(system: &System, gpu: &Agent, bytes: &[u8]) -> ffi::Status {
    let api = system.runtime().api();
    let check = |call: &str, status: ffi::Status| {
        assert_eq!(
            status,
            ffi::HSA_STATUS_SUCCESS,
            "{call}: {}",
            system.runtime().status_message(status)
        );
    };
    let mut exec = ffi::Executable(0);
    // SAFETY: out-parameter call with null options, as hsa.h allows.
    check("hsa_executable_create_alt", unsafe {
        (api.hsa_executable_create_alt)(
            ffi::HSA_PROFILE_FULL,
            ffi::HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
            std::ptr::null(),
            &mut exec,
        )
    });
    let mut reader = ffi::CodeObjectReader(0);
    // SAFETY: `bytes` outlives the reader, destroyed below.
    check("hsa_code_object_reader_create_from_memory", unsafe {
        (api.hsa_code_object_reader_create_from_memory)(
            bytes.as_ptr().cast(),
            bytes.len(),
            &mut reader,
        )
    });
    let mut loaded = ffi::LoadedCodeObject(0);
    // SAFETY: live handles by value, null options, an out-parameter.
    let status = unsafe {
        (api.hsa_executable_load_agent_code_object)(
            exec,
            gpu.handle(),
            reader,
            std::ptr::null(),
            &mut loaded,
        )
    };
    if status == ffi::HSA_STATUS_SUCCESS {
        // SAFETY: a live executable, null options.
        check("hsa_executable_freeze", unsafe {
            (api.hsa_executable_freeze)(exec, std::ptr::null())
        });
    }
    // SAFETY: nothing of the executable runs or is looked up any more.
    check("hsa_executable_destroy", unsafe {
        (api.hsa_executable_destroy)(exec)
    });
    // SAFETY: the reader came from create and is destroyed once.
    check("hsa_code_object_reader_destroy", unsafe {
        (api.hsa_code_object_reader_destroy)(reader)
    });
    status
}

// ---------------------------------------------------------------------------
// Agent dispatch to a host service (simulator only)
// ---------------------------------------------------------------------------
//
// ROCr's GPU queues have no host service for AGENT_DISPATCH packets; the
// simulator serves them with a handler the embedder registers. The handler
// must be registered in the runtime the shim loaded — the cdylib — not in
// the copy of `aqueduct-sim` linked into this test binary as an rlib
// (`aqueduct_sim::hsa::runtime()` here is a different, uninitialised
// runtime), so it goes through a C-ABI export of the library:
//
//   hsa_status_t aqueduct_sim_set_agent_dispatch_handler(
//       hsa_status_t (*handler)(const hsa_agent_dispatch_packet_t *packet,
//                               hsa_queue_t *queue, uint64_t dispatch_id,
//                               void *data),   /* NULL removes it */
//       void *data);

/// The simulator's C-ABI registration of an agent-dispatch handler.
const SET_AGENT_DISPATCH_HANDLER: &[u8] = b"aqueduct_sim_set_agent_dispatch_handler\0";

type AgentDispatchFn = unsafe extern "C" fn(
    *const aqueduct_abi::aql::AgentDispatchPacket,
    *mut aqueduct_abi::hsa::HsaQueue,
    u64,
    *mut std::ffi::c_void,
) -> ffi::Status;
type SetAgentDispatchHandler =
    unsafe extern "C" fn(Option<AgentDispatchFn>, *mut std::ffi::c_void) -> ffi::Status;

/// The service's functions (`hsa_agent_dispatch_packet_t::type`).
const SERVICE_SUM: u16 = 0x8001;
const SERVICE_FAIL: u16 = 0x8002;
/// What `SERVICE_FAIL` answers: a status the queue error then carries.
const SERVICE_FAIL_STATUS: ffi::Status = 0x1000;

/// Sums the four arguments into the u64 at `return_address`; records the
/// queue and packet id it served in `data` (a `Mutex<Vec<(u64, u64)>>`).
unsafe extern "C" fn service(
    packet: *const aqueduct_abi::aql::AgentDispatchPacket,
    queue: *mut aqueduct_abi::hsa::HsaQueue,
    dispatch_id: u64,
    data: *mut std::ffi::c_void,
) -> ffi::Status {
    // SAFETY: the simulator passes the packet it read, valid for the call.
    let p = unsafe { packet.read_unaligned() };
    // SAFETY: `data` is the test's `Mutex`, alive until it unregisters.
    let served = unsafe { &*data.cast::<std::sync::Mutex<Vec<(u64, u64)>>>() };
    served
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((queue as u64, dispatch_id));
    match p.function {
        SERVICE_SUM => {
            let sum = p.arg.iter().fold(0u64, |a, &b| a.wrapping_add(b));
            // SAFETY: the test points `return_address` at a live,
            // 8-byte-aligned host buffer of one u64.
            unsafe { (p.return_address as *mut u64).write_volatile(sum) };
            ffi::HSA_STATUS_SUCCESS
        }
        SERVICE_FAIL => SERVICE_FAIL_STATUS,
        _ => ffi::HSA_STATUS_ERROR_INVALID_ARGUMENT,
    }
}

#[test]
fn agent_dispatch_packets_reach_the_host_service() {
    let system = announced_system();
    let backend = hsa_backend();
    if !backend.is_simulator() {
        eprintln!("skipped on ROCr: its GPU queues serve no agent dispatches");
        return;
    }
    // SAFETY: the library the shim already loaded (same handle, its
    // initialisers have run).
    let lib = unsafe { libloading::Library::new(&backend.library) }.expect("reopen the simulator");
    // SAFETY: the symbol has the signature documented above.
    let set: libloading::Symbol<SetAgentDispatchHandler> =
        unsafe { lib.get(SET_AGENT_DISPATCH_HANDLER) }
            .expect("the simulator exports aqueduct_sim_set_agent_dispatch_handler");
    let served = Box::new(std::sync::Mutex::new(Vec::<(u64, u64)>::new()));
    let data = (&raw const *served).cast_mut().cast();
    // SAFETY: `service` has the handler signature; `data` outlives the
    // registration (removed below before `served` drops).
    let status = unsafe { set(Some(service), data) };
    assert_eq!(status, ffi::HSA_STATUS_SUCCESS, "register the handler");

    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let mut answer = host.alloc_host::<u64>(1).expect("host alloc");
        answer[0] = u64::MAX;
        let done = Signal::new(&system, 1).expect("signal");
        let args = [1, 20, 300, 4000_0000_0000];
        let packet = aqueduct_abi::packet::agent_dispatch(
            SERVICE_SUM,
            args,
            answer.address(),
            done.handle(),
            Ordering::SYSTEM,
        )
        .expect("agent dispatch packet");
        let id = queue.submit(&packet).expect("submit");
        queue
            .wait(&done, SignalCondition::EQ, 0, TIMEOUT)
            .expect("the service completes the packet");
        assert_eq!(answer[0], args.iter().sum::<u64>(), "{}", gpu.info().name);
        assert!(
            served.lock().unwrap().contains(&(queue.address(), id)),
            "the service saw queue {:#x} packet {id}",
            queue.address()
        );

        // A failing service is a queue error carrying its status.
        let failing = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let done = Signal::new(&system, 1).expect("signal");
        let packet = aqueduct_abi::packet::agent_dispatch(
            SERVICE_FAIL,
            [0; 4],
            0,
            done.handle(),
            Ordering::SYSTEM,
        )
        .expect("agent dispatch packet");
        failing.submit(&packet).expect("submit");
        match failing.wait(&done, SignalCondition::EQ, 0, TIMEOUT) {
            Err(Error::QueueFault { status, .. }) => assert_eq!(status, SERVICE_FAIL_STATUS),
            other => panic!("{}: a failing service: {other:?}", gpu.info().name),
        }
    }
    // SAFETY: removing the handler takes no data.
    let status = unsafe { set(None, std::ptr::null_mut()) };
    assert_eq!(status, ffi::HSA_STATUS_SUCCESS, "unregister the handler");
}
