//! The queue's registry, processor and exports, through the C interface.

use std::time::{Duration, Instant};

use aqueduct_abi::aql::{
    AgentDispatchPacket, AmdBarrierValuePacket, BarrierAndPacket, BarrierOrPacket, FenceScope,
    KernelDispatchPacket, Packet, PacketType,
};
use aqueduct_abi::aql_ring::doorbell_value;
use aqueduct_abi::hsa::SignalCondition;
use zerocopy::{FromBytes, FromZeros};

use super::super::{AgentSpec, signal};
use super::*;
use crate::dispatch::DispatchError;
use crate::fault::Fault;

/// A private runtime (the process-global one is shared with other
/// tests running in parallel).
fn runtime() -> Arc<Runtime> {
    Arc::new(Runtime::new(&AgentSpec::parse_list("gfx942").unwrap()))
}

fn gpu(rt: &Runtime) -> u64 {
    rt.agents.iter().find(|a| a.node == 1).unwrap().handle
}

fn queue(rt: &Arc<Runtime>, seen: Option<&Seen>) -> u64 {
    let data = seen.map_or(std::ptr::null_mut(), |s| {
        (s as *const Seen).cast_mut().cast()
    });
    create(rt, gpu(rt), 64, QueueType::MULTI.0, Some(record), data).unwrap()
}

/// A user signal in device memory, as hsa_signal_create makes them.
fn new_signal(rt: &Runtime, value: i64) -> SignalHandle {
    let a = rt.memory.alloc(64, 64).unwrap();
    rt.memory
        .write_bytes(a, AmdSignal::user(value).as_bytes())
        .unwrap();
    SignalHandle(a)
}

/// A host store to a signal: release, then wake waiters.
fn store(rt: &Runtime, h: SignalHandle, value: i64) {
    signal::value_word(rt, h.0)
        .unwrap()
        .store(value, Ordering::Release);
    rt.signals.notify();
}

fn load(rt: &Runtime, h: SignalHandle) -> i64 {
    signal::value(rt, h.0).unwrap()
}

fn amd_queue(rt: &Runtime, q: u64) -> AmdQueue {
    let mut b = [0u8; size_of::<AmdQueue>()];
    rt.memory.read_bytes(q, &mut b).unwrap();
    AmdQueue::read_from_bytes(&b).unwrap()
}

fn read_index(q: u64) -> u64 {
    // SAFETY: the index functions only look the pointer up.
    unsafe { hsa_queue_load_read_index_scacquire(q as *const HsaQueue) }
}

fn header_at(rt: &Runtime, q: u64, id: u64) -> PacketType {
    let slot = amd_queue(rt, q).hsa_queue.base_address + slot_offset(id, 64);
    let mut b = [0u8; 2];
    rt.memory.read_bytes(slot, &mut b).unwrap();
    PacketHeader(u16::from_le_bytes(b)).packet_type()
}

/// Reserves the next packet id.
fn reserve(q: u64) -> u64 {
    // SAFETY: the index functions only look the pointer up.
    unsafe { hsa_queue_add_write_index_scacq_screl(q as *const HsaQueue, 1) }
}

/// Writes `packet` into slot `id` the way a producer must: body first,
/// then the first dword (header and setup) with one release store. A
/// plain store wakes nobody, as a device store would not.
fn publish<P: Packet>(rt: &Runtime, q: u64, id: u64, packet: &P) {
    let slot = amd_queue(rt, q).hsa_queue.base_address + slot_offset(id, 64);
    let bytes = packet.as_bytes();
    rt.memory.write_bytes(slot + 4, &bytes[4..]).unwrap();
    let first = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    let mut m = rt.memory.access();
    m.check(slot, 4).unwrap();
    m.atomic_u32(slot).unwrap().store(first, Ordering::Release);
}

/// The host's doorbell: a release store of the packet id, which wakes.
fn ring(rt: &Runtime, q: u64, id: u64) {
    let bell = amd_queue(rt, q).hsa_queue.doorbell_signal;
    store(rt, bell, doorbell_value(id));
}

fn submit<P: Packet>(rt: &Runtime, q: u64, packet: &P) -> u64 {
    let id = reserve(q);
    publish(rt, q, id, packet);
    ring(rt, q, id);
    id
}

fn header(kind: PacketType) -> PacketHeader {
    PacketHeader::new(kind, true, FenceScope::SYSTEM, FenceScope::SYSTEM)
}

fn barrier_and(deps: &[SignalHandle], completion: SignalHandle) -> BarrierAndPacket {
    let mut p = BarrierAndPacket::new_zeroed();
    p.header = header(PacketType::BARRIER_AND);
    p.dep_signal[..deps.len()].copy_from_slice(deps);
    p.completion_signal = completion;
    p
}

fn barrier_or(deps: &[SignalHandle], completion: SignalHandle) -> BarrierOrPacket {
    let mut p = BarrierOrPacket::new_zeroed();
    p.header = header(PacketType::BARRIER_OR);
    p.dep_signal[..deps.len()].copy_from_slice(deps);
    p.completion_signal = completion;
    p
}

/// Long enough for an idle processor to have looked several times.
const SETTLE: Duration = Duration::from_millis(30);

fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What the error callback saw.
#[derive(Default)]
struct Seen(Mutex<Vec<(Status, u64)>>);

impl Seen {
    fn errors(&self) -> Vec<(Status, u64)> {
        self.0.lock().unwrap().clone()
    }
}

unsafe extern "C" fn record(s: Status, q: *mut HsaQueue, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: tests pass a `Seen` that outlives the queue.
    let seen = unsafe { &*data.cast::<Seen>() };
    seen.0.lock().unwrap().push((s, q as u64));
}

#[test]
fn create_checks_arguments_in_rocrs_order() {
    let rt = runtime();
    let (g, cpu) = (gpu(&rt), rt.agents[0].handle);
    let multi = QueueType::MULTI.0;
    let nul = std::ptr::null_mut();
    let try_create = |agent, size, ty| create(&rt, agent, size, ty, None, nul).err();
    assert_eq!(
        try_create(g, 100, multi),
        Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    );
    assert_eq!(
        try_create(g, 0, multi),
        Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    );
    assert_eq!(
        try_create(g, 64, 3),
        Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    );
    assert_eq!(
        try_create(0x1234, 64, multi),
        Some(HSA_STATUS_ERROR_INVALID_AGENT)
    );
    assert_eq!(try_create(cpu, 64, multi), Some(HSA_STATUS_ERROR));
    assert_eq!(
        try_create(g, QUEUE_MAX_PACKETS * 2, multi),
        Some(HSA_STATUS_ERROR_OUT_OF_RESOURCES)
    );
    assert_eq!(
        try_create(g, QUEUE_MIN_PACKETS / 2, multi),
        Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    );
    let q = create(
        &rt,
        g,
        QUEUE_MIN_PACKETS,
        QueueType::COOPERATIVE.0,
        None,
        nul,
    )
    .unwrap();
    destroy(q).unwrap();
    rt.queues.shut_down();
}

#[test]
fn a_new_queue_is_laid_out_like_rocrs() {
    let rt = runtime();
    let q = queue(&rt, None);
    let a = amd_queue(&rt, q);
    assert_eq!(q % 64, 0);
    assert_eq!(a.hsa_queue.size, 64);
    assert_eq!(a.hsa_queue.queue_type, QueueType::MULTI);
    assert_eq!(a.hsa_queue.features, QueueFeatures::KERNEL_DISPATCH);
    assert_eq!(a.hsa_queue.base_address % (64 * PACKET_SIZE as u64), 0);
    assert_eq!((a.read_dispatch_id, a.write_dispatch_id), (0, 0));
    assert_eq!(a.read_dispatch_id_field_base_byte_offset, 128);
    assert_eq!(a.group_segment_aperture_base_hi, SHARED_APERTURE_HI);
    assert_eq!(a.private_segment_aperture_base_hi, PRIVATE_APERTURE_HI);
    assert!((0..64).all(|i| header_at(&rt, q, i) == PacketType::INVALID));
    // The doorbell is a signal in device memory whose value is the word
    // the host and device store to.
    let bell = a.hsa_queue.doorbell_signal;
    let mut b = [0u8; 64];
    rt.memory.read_bytes(bell.0, &mut b).unwrap();
    let s = AmdSignal::read_from_bytes(&b).unwrap();
    assert_eq!(s.kind, aqueduct_abi::amd_signal::AmdSignalKind::USER);
    assert_eq!(s.queue_ptr, q);
    store(&rt, bell, 7);
    assert_eq!(load(&rt, bell), 7);
    // Ids are unique.
    let q2 = queue(&rt, None);
    assert_ne!(amd_queue(&rt, q2).hsa_queue.id, a.hsa_queue.id);
    rt.queues.shut_down();
}

#[test]
fn barrier_and_waits_for_every_dependency_and_packets_complete_in_order() {
    let rt = runtime();
    let q = queue(&rt, None);
    let (a, b) = (new_signal(&rt, 1), new_signal(&rt, 1));
    let (c0, c1) = (new_signal(&rt, 1), new_signal(&rt, 1));
    submit(&rt, q, &barrier_and(&[a, SignalHandle::NULL, b], c0));
    // No dependencies: ready at once, but behind the first.
    submit(&rt, q, &barrier_and(&[], c1));
    std::thread::sleep(SETTLE);
    store(&rt, a, 0);
    std::thread::sleep(SETTLE);
    assert_eq!((load(&rt, c0), load(&rt, c1), read_index(q)), (1, 1, 0));
    store(&rt, b, 0);
    eventually("the second barrier completes", || load(&rt, c1) == 0);
    assert_eq!(load(&rt, c0), 0);
    assert_eq!(read_index(q), 2);
    assert_eq!(header_at(&rt, q, 0), PacketType::INVALID);
    assert_eq!(header_at(&rt, q, 1), PacketType::INVALID);
    rt.queues.shut_down();
}

#[test]
fn barrier_or_completes_once_any_dependency_is_zero() {
    let rt = runtime();
    let q = queue(&rt, None);
    let (a, b, c) = (new_signal(&rt, 1), new_signal(&rt, 1), new_signal(&rt, 1));
    submit(&rt, q, &barrier_or(&[a, b], c));
    std::thread::sleep(SETTLE);
    assert_eq!(load(&rt, c), 1);
    store(&rt, b, 0);
    eventually("the barrier completes", || load(&rt, c) == 0);
    assert_eq!(load(&rt, a), 1);
    rt.queues.shut_down();
}

#[test]
fn a_header_stored_after_the_doorbell_is_still_picked_up() {
    let rt = runtime();
    let q = queue(&rt, None);
    let c = new_signal(&rt, 1);
    let id = reserve(q);
    ring(&rt, q, id);
    std::thread::sleep(SETTLE);
    assert_eq!(read_index(q), 0);
    // Published with a plain store, as device code would: no wake-up,
    // so the processor must find it by itself.
    publish(&rt, q, id, &barrier_and(&[], c));
    eventually("the late packet completes", || load(&rt, c) == 0);
    assert_eq!(read_index(q), 1);
    rt.queues.shut_down();
}

#[test]
fn the_ring_wraps_around() {
    let rt = runtime();
    let q = queue(&rt, None);
    let c = new_signal(&rt, 150);
    for _ in 0..150 {
        let id = reserve(q);
        eventually("a slot is free", || id - read_index(q) < 64);
        publish(&rt, q, id, &barrier_and(&[], c));
        ring(&rt, q, id);
    }
    eventually("every packet completes", || load(&rt, c) == 0);
    assert_eq!(read_index(q), 150);
    rt.queues.shut_down();
}

#[test]
fn an_invalid_packet_type_stops_the_queue_with_invalid_packet_format() {
    let rt = runtime();
    let seen = Seen::default();
    let q = queue(&rt, Some(&seen));
    let (c0, c1) = (new_signal(&rt, 1), new_signal(&rt, 1));
    let mut bad = barrier_and(&[], c0);
    bad.header = PacketHeader(7);
    submit(&rt, q, &bad);
    submit(&rt, q, &barrier_and(&[], c1));
    eventually("the error callback runs", || !seen.errors().is_empty());
    std::thread::sleep(SETTLE);
    assert_eq!(
        seen.errors(),
        vec![(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, q)]
    );
    // Nothing after the bad packet runs, and it is not consumed.
    assert_eq!((load(&rt, c0), load(&rt, c1), read_index(q)), (1, 1, 0));
    rt.queues.shut_down();
}

#[test]
fn agent_dispatch_goes_to_the_registered_handler() {
    let rt = runtime();
    let seen = Seen::default();
    let q = queue(&rt, Some(&seen));
    let mut p = AgentDispatchPacket::new_zeroed();
    p.header = header(PacketType::AGENT_DISPATCH);
    p.function = 9;
    p.arg = [1, 2, 3, 4];
    // No handler yet: the packet type is unsupported.
    p.completion_signal = new_signal(&rt, 1);
    submit(&rt, q, &p);
    eventually("the error callback runs", || !seen.errors().is_empty());
    assert_eq!(
        seen.errors(),
        vec![(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, q)]
    );

    let calls = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&calls);
    rt.queues
        .set_agent_dispatch_handler(Some(Arc::new(move |call: &AgentCall| {
            log.lock().unwrap().push(*call);
            Ok(())
        })));
    let q2 = queue(&rt, None);
    p.completion_signal = new_signal(&rt, 1);
    let id = submit(&rt, q2, &p);
    eventually("the agent dispatch completes", || {
        load(&rt, p.completion_signal) == 0
    });
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].queue, calls[0].dispatch_id), (q2, id));
    assert_eq!(
        (calls[0].packet.function, calls[0].packet.arg),
        (9, [1, 2, 3, 4])
    );
    rt.queues.shut_down();
}

#[test]
fn a_soft_queue_is_a_ring_nobody_consumes_with_the_callers_doorbell() {
    let rt = runtime();
    let cpu = rt.agents.iter().find(|a| a.node == 0).unwrap().handle;
    let pools: Vec<_> = rt.pools.pools_of(cpu).map(|p| p.handle).collect();
    let lds = rt.pools.pools_of(gpu(&rt)).nth(2).unwrap().handle;
    let bell = SignalHandle(signal::create(&rt, 0).unwrap());
    let (multi, single, agent_dispatch) = (
        QueueType::MULTI.0,
        QueueType::SINGLE.0,
        QueueFeatures::AGENT_DISPATCH.bits(),
    );
    // ROCr's checks, in its order: one argument wrong at a time.
    #[derive(Clone, Copy, Debug)]
    struct Args {
        region: u64,
        size: u32,
        ty: u32,
        features: u32,
        doorbell: SignalHandle,
    }
    let good = Args {
        region: pools[0],
        size: 16,
        ty: multi,
        features: agent_dispatch,
        doorbell: bell,
    };
    let invalid = HSA_STATUS_ERROR_INVALID_ARGUMENT;
    for (a, status) in [
        (Args { region: 0, ..good }, invalid),
        (
            Args {
                doorbell: SignalHandle::NULL,
                ..good
            },
            invalid,
        ),
        (Args { size: 0, ..good }, invalid),
        (Args { size: 24, ..good }, invalid),
        (
            Args {
                ty: QueueType::COOPERATIVE.0,
                ..good
            },
            invalid,
        ),
        (
            Args {
                features: 0,
                ..good
            },
            invalid,
        ),
        (Args { region: 7, ..good }, HSA_STATUS_ERROR_INVALID_REGION),
        (
            Args {
                doorbell: SignalHandle(0x1000),
                ..good
            },
            HSA_STATUS_ERROR_INVALID_SIGNAL,
        ),
        (
            Args {
                region: lds,
                ..good
            },
            HSA_STATUS_ERROR_INVALID_ALLOCATION,
        ),
    ] {
        let made = create_soft(&rt, a.region, a.size, a.ty, a.features, a.doorbell);
        assert_eq!(made, Err(status), "{a:?}");
    }

    let q = create_soft(&rt, pools[0], 16, single, agent_dispatch, bell).unwrap();
    let a = amd_queue(&rt, q);
    assert_eq!(a.hsa_queue.size, 16);
    assert_eq!(a.hsa_queue.queue_type, QueueType::SINGLE);
    assert_eq!(a.hsa_queue.features, QueueFeatures::AGENT_DISPATCH);
    assert_eq!(a.hsa_queue.doorbell_signal, bell);
    assert_eq!(a.hsa_queue.base_address % (16 * 64), 0);
    assert!(is_live(q));
    // A packet published and rung stays where it is: the application
    // consumes a soft queue's packets, not a processor, and no
    // agent-dispatch handler sees it.
    let calls = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&calls);
    rt.queues
        .set_agent_dispatch_handler(Some(Arc::new(move |_: &AgentCall| {
            count.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })));
    let mut p = AgentDispatchPacket::new_zeroed();
    p.header = header(PacketType::AGENT_DISPATCH);
    p.function = 5;
    let id = reserve(q);
    publish(&rt, q, id, &p);
    store(&rt, bell, id as i64);
    std::thread::sleep(SETTLE);
    assert_eq!(read_index(q), 0);
    assert_eq!(header_at(&rt, q, id), PacketType::AGENT_DISPATCH);
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    assert_eq!(load(&rt, bell), id as i64);
    // Destroying it frees the ring and the queue, not the doorbell.
    destroy(q).unwrap();
    assert!(!is_live(q));
    assert!(rt.signals.is_live(bell.0));
    assert_eq!(signal::destroy(&rt, bell.0), HSA_STATUS_SUCCESS);
    rt.queues.shut_down();
}

#[test]
fn amd_barrier_value_waits_for_its_condition() {
    let rt = runtime();
    let q = queue(&rt, None);
    let (s, c) = (new_signal(&rt, 0x13), new_signal(&rt, 1));
    let mut p = AmdBarrierValuePacket::new_zeroed();
    p.header.header = header(PacketType::VENDOR_SPECIFIC);
    p.header.amd_format = aqueduct_abi::aql::AmdPacketType::BARRIER_VALUE;
    p.signal = s;
    p.value = 0x20;
    p.mask = 0xf0;
    p.cond = SignalCondition::EQ;
    p.completion_signal = c;
    submit(&rt, q, &p);
    std::thread::sleep(SETTLE);
    assert_eq!(load(&rt, c), 1);
    store(&rt, s, 0x2f);
    eventually("the barrier-value packet completes", || load(&rt, c) == 0);
    rt.queues.shut_down();
}

#[test]
fn a_dispatch_of_an_unknown_kernel_object_is_invalid_code_object() {
    let rt = runtime();
    let seen = Seen::default();
    let q = queue(&rt, Some(&seen));
    let mut p = KernelDispatchPacket::new_zeroed();
    p.header = header(PacketType::KERNEL_DISPATCH);
    p.setup = 1;
    (p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z) = (64, 1, 1);
    (p.grid_size_x, p.grid_size_y, p.grid_size_z) = (64, 1, 1);
    p.kernel_object = 0xdead_0000;
    p.completion_signal = new_signal(&rt, 1);
    submit(&rt, q, &p);
    eventually("the error callback runs", || !seen.errors().is_empty());
    assert_eq!(
        seen.errors(),
        vec![(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, q)]
    );
    assert_eq!(load(&rt, p.completion_signal), 1);

    // Packet checks come first, with the statuses of their CP errors.
    let seen2 = Seen::default();
    let q2 = queue(&rt, Some(&seen2));
    p.setup = 0;
    submit(&rt, q2, &p);
    eventually("the error callback runs", || !seen2.errors().is_empty());
    assert_eq!(
        seen2.errors(),
        vec![(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, q2)]
    );
    rt.queues.shut_down();
}

#[test]
fn faults_map_to_rocrs_queue_error_statuses() {
    let fault = |f| {
        DispatchError::Fault(Box::new(crate::FaultReport {
            fault: f,
            pc: 0,
            word: 0,
            kernel: "k".into(),
            workgroup: [0; 3],
            wave: 0,
        }))
    };
    let mem = Fault::Memory {
        space: crate::Space::Global,
        address: 0,
        size: 4,
        write: true,
    };
    assert_eq!(
        error_status(&fault(mem)),
        HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
    );
    assert_eq!(
        error_status(&fault(Fault::RanOffEnd)),
        HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
    );
    assert_eq!(
        error_status(&fault(Fault::Trap { id: 2 })),
        HSA_STATUS_ERROR_EXCEPTION
    );
}

#[test]
fn index_functions_operate_on_the_queue_in_device_memory() {
    let rt = runtime();
    let q = queue(&rt, None) as *const HsaQueue;
    // SAFETY: the index functions only look the pointer up.
    unsafe {
        assert_eq!(hsa_queue_add_write_index_scacq_screl(q, 3), 0);
        assert_eq!(hsa_queue_cas_write_index_scacq_screl(q, 2, 9), 3);
        assert_eq!(hsa_queue_cas_write_index_scacq_screl(q, 3, 9), 3);
        assert_eq!(hsa_queue_load_write_index_relaxed(q), 9);
        hsa_queue_store_write_index_screlease(q, 11);
        assert_eq!(hsa_queue_load_write_index_scacquire(q), 11);
        assert_eq!(hsa_queue_load_read_index_relaxed(q), 0);
    }
    assert_eq!(amd_queue(&rt, q as u64).write_dispatch_id, 11);
    rt.queues.shut_down();
    // A queue that is gone reads as 0 rather than crashing.
    // SAFETY: as above.
    assert_eq!(unsafe { hsa_queue_load_write_index_relaxed(q) }, 0);
}

#[test]
fn destroy_joins_the_processor_and_frees_the_queue() {
    let rt = runtime();
    let q = queue(&rt, None);
    let ring = amd_queue(&rt, q).hsa_queue.base_address;
    // This thread's use caches the queue; destroying it still frees it.
    assert_eq!(read_index(q), 0);
    // The processor holds the runtime.
    assert_eq!(Arc::strong_count(&rt), 2);
    destroy(q).unwrap();
    assert_eq!(Arc::strong_count(&rt), 1);
    assert_eq!(rt.memory.kind_of(q), None);
    assert_eq!(rt.memory.kind_of(ring), None);
    assert_eq!(destroy(q), Err(HSA_STATUS_ERROR_INVALID_QUEUE));

    // A processor waiting on a barrier stops too.
    let q = queue(&rt, None);
    submit(
        &rt,
        q,
        &barrier_and(&[new_signal(&rt, 1)], SignalHandle::NULL),
    );
    std::thread::sleep(SETTLE);
    destroy(q).unwrap();
    assert_eq!(Arc::strong_count(&rt), 1);
}

#[test]
fn only_the_doorbell_of_the_current_cached_queue_skips_the_table() {
    let rt = runtime();
    let (a, b) = (queue(&rt, None), queue(&rt, None));
    let bell = |q| amd_queue(&rt, q).hsa_queue.doorbell_signal.0;
    // Caches `a`, as a producer's reservation does. (Tests running in
    // parallel make queues too, which may make the cache stale before
    // the store: then it is cached again.)
    let cached_store = (0..1000).any(|_| {
        assert_eq!(read_index(a), 0);
        store_own_doorbell(bell(a), 5, Ordering::Release)
    });
    assert!(cached_store);
    assert_eq!(signal::value(&rt, bell(a)), Some(5));
    assert!(!store_own_doorbell(bell(b), 6, Ordering::Release));
    assert_eq!(signal::value(&rt, bell(b)), Some(0));
    // A queue made or destroyed anywhere makes the cache stale, and
    // stores go through the table (which still reaches `a`'s doorbell).
    let c = queue(&rt, None);
    assert!(!store_own_doorbell(bell(a), 7, Ordering::Release));
    store(&rt, SignalHandle(bell(a)), 8);
    assert_eq!(signal::value(&rt, bell(a)), Some(8));
    // A destroyed queue's stale cache never takes a store.
    assert_eq!(read_index(c), 0);
    destroy(c).unwrap();
    assert!(!store_own_doorbell(bell(a), 9, Ordering::Release));
    assert_eq!(read_index(c), 0);
    rt.queues.shut_down();
}

#[test]
fn shut_down_joins_every_processor_of_its_runtime_only() {
    let (rt, other) = (runtime(), runtime());
    let _ = (queue(&rt, None), queue(&rt, None));
    let kept = queue(&other, None);
    assert_eq!(Arc::strong_count(&rt), 3);
    rt.queues.shut_down();
    assert_eq!(Arc::strong_count(&rt), 1);
    assert_eq!(read_index(kept), 0);
    assert_eq!(Arc::strong_count(&other), 2);
    other.queues.shut_down();
}

#[test]
fn the_exports_create_and_destroy_on_the_process_runtime() {
    // SAFETY: plain C calls with valid out-pointers.
    unsafe {
        assert_eq!(super::super::system::hsa_init(), HSA_STATUS_SUCCESS);
        let rt = super::super::runtime().unwrap();
        let agent = Agent(gpu(&rt));
        let mut q: *mut HsaQueue = std::ptr::null_mut();
        let create = |out| {
            hsa_queue_create(
                agent,
                64,
                0,
                None,
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                out,
            )
        };
        assert_eq!(
            create(std::ptr::null_mut()),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(create(&mut q), HSA_STATUS_SUCCESS);
        assert_eq!((*q).size, 64);
        assert_eq!(hsa_queue_destroy(q), HSA_STATUS_SUCCESS);
        assert_eq!(hsa_queue_destroy(q), HSA_STATUS_ERROR_INVALID_QUEUE);
        assert_eq!(
            hsa_queue_destroy(std::ptr::null_mut()),
            HSA_STATUS_ERROR_INVALID_ARGUMENT
        );
        drop(rt);
        assert_eq!(super::super::system::hsa_shut_down(), HSA_STATUS_SUCCESS);
    }
}
