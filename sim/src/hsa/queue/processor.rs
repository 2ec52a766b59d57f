//! The command processor of a simulated queue: one thread per queue
//! consumes its packets.
//!
//! One packet-processor thread per queue plays the command processor,
//! following the AQL rules (HSA Platform System Architecture Specification
//! 1.2, §2.9 "Architected Queuing Language"):
//!
//! - packets are processed one at a time, in order, from
//!   `read_dispatch_id`; a slot is consumed only once its header type is not
//!   INVALID, so a doorbell rung before the header store is harmless;
//! - the processor does not trust the doorbell: device code may write
//!   packets and ring it with plain stores that wake nobody. When the next
//!   slot is INVALID it parks on the runtime's signal condition variable
//!   ([`crate::hsa::signal::State::park`]) with a short timeout that backs off
//!   from [`IDLE_PARK_MIN`] to [`IDLE_PARK_MAX`], then re-reads the header:
//!   host doorbell stores (which notify) are seen at once, device-written
//!   packets within the timeout, and an idle queue costs a few hundred
//!   wake-ups a second, not a core;
//! - the barrier bit asks that earlier packets be complete; processing is
//!   sequential, so it always holds. Acquire and release fence scopes are
//!   functional no-ops: every simulated agent shares the host's coherent
//!   memory, and the processor's own accesses are acquire (header) and
//!   release (header reset, read index, completion signal);
//! - after a packet, the header goes back to INVALID, `read_dispatch_id`
//!   advances (release) and then the completion signal, if any, is
//!   decremented, so a waiter that sees completion also sees the slot free.
//!
//! Packet types, as ROCr's GPU queues treat them:
//!
//! | type                       | processing                                  |
//! |----------------------------|---------------------------------------------|
//! | KERNEL_DISPATCH            | `dispatch::run` on the kernel at `kernel_object` |
//! | BARRIER_AND / BARRIER_OR   | wait for all / any non-null dependency = 0   |
//! | VENDOR_SPECIFIC, AMD BARRIER_VALUE | wait for `(value & mask) cond value` |
//! | AGENT_DISPATCH             | the handler of [`super::State::set_agent_dispatch_handler`] |
//! | anything else              | queue error INVALID_PACKET_FORMAT            |
//!
//! Queue errors: the processor calls the error callback given to
//! `hsa_queue_create` (on its own thread, as ROCr calls it from its
//! exception-handler thread), prints what happened to stderr once (the
//! status alone cannot carry a pc or a kernel name), and stops: the faulting
//! packet is never consumed and its completion signal never decremented, as
//! on hardware, where ROCr suspends the queue. [`error_status`] maps faults
//! to the statuses ROCr reports.

use std::ffi::c_void;
use std::sync::LazyLock;
use std::sync::atomic::Ordering;
use std::time::Duration;

use aqueduct_abi::aql::{
    AgentDispatchPacket, AmdBarrierValuePacket, AqlPacket, BarrierAndPacket, BarrierOrPacket,
    KernelDispatchPacket, PACKET_SIZE, PacketType,
};
use aqueduct_abi::aql_ring::{consumed, is_published};
use aqueduct_abi::hsa::{HsaQueue, SignalHandle};
use aqueduct_abi::hsa_api::*;
use zerocopy::{FromBytes, IntoBytes};

use super::Entry;
use crate::dispatch::{self, DispatchError, Launch};
use crate::exec::Event;
use crate::fault::Fault;
use crate::hsa::Runtime;

/// The first sleep of an idle processor (see the module docs for why it
/// polls at all).
pub const IDLE_PARK_MIN: Duration = Duration::from_micros(20);
/// Its longest sleep: the latency of a device-written packet, and of a
/// destroy noticing that it should stop.
pub const IDLE_PARK_MAX: Duration = Duration::from_millis(2);

/// Host threads a dispatch's workgroups run on: every core, so that
/// workgroups waiting on each other (a grid-wide barrier) make progress.
static DISPATCH_THREADS: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(1, usize::from));

/// An AGENT_DISPATCH packet handed to the host-service handler.
#[derive(Clone, Copy, Debug)]
pub struct AgentCall {
    /// The `hsa_queue_t*` the packet came from.
    pub queue: u64,
    /// The packet's id in that queue.
    pub dispatch_id: u64,
    /// The packet as read from the ring (its header is the one published).
    pub packet: AgentDispatchPacket,
}

/// Serves AGENT_DISPATCH packets on the processor thread. `Ok` completes
/// the packet (the processor then decrements its completion signal);
/// `Err(status)` is a queue error with that status. The handler may block,
/// which holds up its queue as a long kernel would.
pub type AgentDispatchHandler = dyn Fn(&AgentCall) -> Result<(), Status> + Send + Sync;

// ===========================================================================
// The packet processor
// ===========================================================================

/// Why processing stopped.
enum Halt {
    /// The queue was destroyed, inactivated or shut down.
    Asked,
    /// A queue error: the status for the callback and the text for stderr.
    Error(Status, String),
}

fn error(s: Status, why: impl Into<String>) -> Halt {
    Halt::Error(s, why.into())
}

/// Sleeps of an idle processor: doubling from [`IDLE_PARK_MIN`] to
/// [`IDLE_PARK_MAX`], back to the minimum after each packet.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Self(IDLE_PARK_MIN)
    }

    /// Sleeps until a notification after `seen` of a watched signal, or
    /// the backoff's timeout.
    fn park(&mut self, rt: &Runtime, seen: u64) {
        rt.signals.park_since(seen, self.0);
        self.0 = (self.0 * 2).min(IDLE_PARK_MAX);
    }
}

pub(super) fn process(rt: &Runtime, q: &Entry) {
    let mut idle = Backoff::new();
    while !q.stop.load(Ordering::Acquire) {
        // Only this thread writes `read_dispatch_id` (producers never do).
        let id = q.read_dispatch_id().load(Ordering::Relaxed);
        let slot = q.slot(id);
        // Watch the doorbell before looking at the slot, so a ring between
        // the look and the sleep still wakes this thread.
        let watch = rt.signals.watch([q.doorbell]);
        let seen = rt.signals.seen();
        let first = q.first_dword(id).load(Ordering::Acquire);
        if !is_published(first) {
            idle.park(rt, seen);
            continue;
        }
        drop(watch);
        idle = Backoff::new();
        let mut bytes = [0u8; PACKET_SIZE];
        if rt.memory.read_bytes(slot, &mut bytes).is_err() {
            // The ring lives as long as `q`: not reachable.
            return;
        }
        let Ok(packet) = AqlPacket::read_from_bytes(&bytes) else {
            return;
        };
        let completion = match execute(rt, q, id, slot, &packet) {
            Ok(c) => c,
            Err(Halt::Asked) => return,
            Err(Halt::Error(s, why)) => {
                report(q, id, s, &why);
                return;
            }
        };
        // Free the slot, then publish the new read index, then complete.
        q.first_dword(id).store(consumed(first), Ordering::Release);
        q.read_dispatch_id()
            .store(id.wrapping_add(1), Ordering::Release);
        if !completion.is_null() && !crate::hsa::signal::subtract(rt, completion.address(), 1) {
            let why = format!(
                "completion signal {:#x} is not a signal in device memory",
                completion.0
            );
            report(q, id, HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, &why);
            return;
        }
    }
}

/// Prints what stopped the queue and calls its error callback.
fn report(q: &Entry, id: u64, s: Status, why: &str) {
    eprintln!(
        "aqueduct-sim: queue {} (hsa_queue_t {:#x}), packet {id}: {why}; \
         queue error {s:#x}, the queue stops processing",
        q.id, q.address
    );
    if let Some(cb) = q.callback {
        // SAFETY: the callback and its data are what the application gave
        // hsa_queue_create for this queue, called as ROCr calls them.
        unsafe { cb(s, q.address as *mut HsaQueue, q.data as *mut c_void) };
    }
}

/// Processes one published packet; returns its completion signal.
fn execute(
    rt: &Runtime,
    q: &Entry,
    id: u64,
    slot: u64,
    packet: &AqlPacket,
) -> Result<SignalHandle, Halt> {
    let kind = packet.header.packet_type();
    match kind {
        PacketType::KERNEL_DISPATCH => {
            let p = read::<KernelDispatchPacket>(packet);
            kernel_dispatch(rt, q, id, slot, &p)?;
            Ok(p.completion_signal)
        }
        PacketType::BARRIER_AND => {
            let p = read::<BarrierAndPacket>(packet);
            wait_until(rt, q, &p.dep_signal, || {
                Ok(deps(rt, &p.dep_signal)?.iter().all(|&v| v == 0))
            })?;
            Ok(p.completion_signal)
        }
        PacketType::BARRIER_OR => {
            let p = read::<BarrierOrPacket>(packet);
            wait_until(rt, q, &p.dep_signal, || {
                let values = deps(rt, &p.dep_signal)?;
                // With no dependencies at all there is nothing to wait for.
                Ok(values.is_empty() || values.contains(&0))
            })?;
            Ok(p.completion_signal)
        }
        PacketType::VENDOR_SPECIFIC => {
            let Some(p) = packet.as_typed::<AmdBarrierValuePacket>() else {
                // ROCr: EC_QUEUE_PACKET_VENDOR_UNSUPPORTED.
                return Err(error(
                    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                    format!(
                        "vendor-specific packet of AMD format {} is not supported",
                        packet.body[0]
                    ),
                ));
            };
            if p.cond.holds(0, 0).is_none() {
                return Err(error(
                    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                    format!(
                        "barrier-value condition {} is not one of EQ/NE/LT/GTE",
                        p.cond.0
                    ),
                ));
            }
            wait_until(rt, q, &[p.signal], || {
                let v = signal_value(rt, p.signal)?;
                Ok(p.cond.holds(v & p.mask, p.value) == Some(true))
            })?;
            Ok(p.completion_signal)
        }
        PacketType::AGENT_DISPATCH => {
            let p = read::<AgentDispatchPacket>(packet);
            let Some(handler) = rt.queues.agent_dispatch_handler() else {
                return Err(error(
                    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                    "agent-dispatch packet and no agent-dispatch handler is registered",
                ));
            };
            let call = AgentCall {
                queue: q.address,
                dispatch_id: id,
                packet: p,
            };
            handler(&call)
                .map_err(|s| error(s, format!("agent-dispatch function {} failed", p.function)))?;
            Ok(p.completion_signal)
        }
        _ => Err(error(
            HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
            format!("packet type {} is not an AQL packet type", kind.0),
        )),
    }
}

/// `packet` as the layout its header selected (every layout is 64 bytes of
/// plain integers, so this cannot fail).
fn read<P: FromBytes>(packet: &AqlPacket) -> P {
    P::read_from_bytes(packet.as_bytes()).unwrap_or_else(|_| P::new_zeroed())
}

/// The value of signal `h`: a handle that is not a signal in device memory
/// is a fault, as the command processor's read of it would be.
fn signal_value(rt: &Runtime, h: SignalHandle) -> Result<i64, Halt> {
    crate::hsa::signal::value(rt, h.address()).ok_or_else(|| {
        error(
            HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
            format!("signal {:#x} is not a signal in device memory", h.0),
        )
    })
}

/// The values of a barrier's non-null dependency signals.
fn deps(rt: &Runtime, signals: &[SignalHandle]) -> Result<Vec<i64>, Halt> {
    signals
        .iter()
        .filter(|h| !h.is_null())
        .map(|&h| signal_value(rt, h))
        .collect()
}

/// Parks until `ready` holds (signal writes through the runtime notify;
/// device stores are seen within the backoff's timeout), or the queue is
/// asked to stop.
fn wait_until(
    rt: &Runtime,
    q: &Entry,
    watch: &[SignalHandle],
    mut ready: impl FnMut() -> Result<bool, Halt>,
) -> Result<(), Halt> {
    let mut idle = Backoff::new();
    let _watch = rt.signals.watch(watch.iter().map(|h| h.0));
    loop {
        let seen = rt.signals.seen();
        if ready()? {
            return Ok(());
        }
        if q.stop.load(Ordering::Acquire) {
            return Err(Halt::Asked);
        }
        idle.park(rt, seen);
    }
}

fn kernel_dispatch(
    rt: &Runtime,
    q: &Entry,
    id: u64,
    slot: u64,
    p: &KernelDispatchPacket,
) -> Result<(), Halt> {
    // The command processor's packet checks, with the statuses of ROCr's
    // `AqlQueue::ExceptionHandler` for each EC_QUEUE_PACKET_* code.
    let dims = p.dimensions();
    if !(1..=3).contains(&dims) {
        return Err(error(
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
            format!("dispatch packet with {dims} grid dimensions"),
        ));
    }
    let wg = [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z].map(u64::from);
    let items: u64 = wg.iter().product();
    let Some(gfx) = q.gfx() else {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_QUEUE,
            "a soft queue has no processor",
        ));
    };
    let max_items = gfx.max_workgroup_size;
    if items == 0 || items > u64::from(max_items) {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            format!("workgroup {wg:?} is empty or larger than {max_items} work-items"),
        ));
    }
    let max_lds = gfx.lds_per_workgroup;
    if p.group_segment_size > max_lds {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_ALLOCATION,
            format!(
                "group segment of {} bytes exceeds the {max_lds} of LDS",
                p.group_segment_size
            ),
        ));
    }
    let Some((program, k)) = rt.executables.kernel_at(q.agent, p.kernel_object) else {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
            format!(
                "kernel_object {:#x} is not a kernel loaded for this agent",
                p.kernel_object
            ),
        ));
    };
    let kernel = &program.code_object.kernels[k];
    let mut launch = Launch::from_packet(p, slot);
    launch.queue_address = q.address;
    launch.dispatch_id = id;
    // A device interrupt (s_sendmsg) wakes host signal waiters while the
    // kernel still runs, as the hardware's interrupt does.
    let wake = |e: Event| {
        if matches!(e, Event::Message { .. }) {
            crate::hsa::signal::on_interrupt(rt);
        }
    };
    match dispatch::run_observed(
        &program,
        kernel,
        &launch,
        dispatch::Options::threads(*DISPATCH_THREADS),
        &wake,
    ) {
        Ok(stats) => {
            crate::hsa::stats::record(kernel.name(), &stats);
            Ok(())
        }
        Err(e) => Err(error(
            error_status(&e),
            format!("kernel {}: {e}", kernel.name()),
        )),
    }
}

/// The status ROCr's queue error callback reports for what stopped a
/// dispatch. Sources: ROCr `AqlQueue::ExceptionHandler`'s table of KFD
/// exception codes (newest rocm-systems), and the older
/// `DynamicScratchHandler` error bits for the same events:
///
/// | simulator                                   | hardware event                   | status |
/// |---------------------------------------------|----------------------------------|--------|
/// | access outside device memory, misaligned atomic | EC_DEVICE_MEMORY_VIOLATION / EC_QUEUE_WAVE_APERTURE_VIOLATION (bit 0x20000000) | MEMORY_APERTURE_VIOLATION (41) |
/// | undecodable, unimplemented or invalid instruction, bad branch, running off the code | EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION (0x40000000) | ILLEGAL_INSTRUCTION (42) |
/// | `s_trap`, `s_sethalt`                        | EC_QUEUE_WAVE_TRAP (0x80000000)  | EXCEPTION |
/// | invalid launch                              | EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID | INVALID_ARGUMENT |
/// | no memory for scratch                       | out of scratch                   | OUT_OF_RESOURCES |
///
/// MEMORY_FAULT (43) is not used: newest ROCr maps a wave's page fault
/// (EC_QUEUE_WAVE_MEMORY_VIOLATION) to it but then suppresses it from the
/// queue callback, reporting the fault through the system event handler
/// (and by default aborting the process); the simulator reports it on the
/// queue, so it uses the status ROCr's callback gives a memory violation.
pub fn error_status(e: &DispatchError) -> Status {
    match e {
        DispatchError::Fault(r) => match r.fault {
            Fault::Memory { .. } | Fault::Misaligned { .. } => {
                HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
            }
            Fault::Decode(_)
            | Fault::Unimplemented { .. }
            | Fault::UnimplementedCase { .. }
            | Fault::Register { .. }
            | Fault::Operand { .. }
            | Fault::BranchTarget { .. }
            | Fault::RanOffEnd => HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
            Fault::Trap { .. } | Fault::Halt => HSA_STATUS_ERROR_EXCEPTION,
        },
        DispatchError::BadLaunch(_) => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        DispatchError::Memory(_) => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    }
}
