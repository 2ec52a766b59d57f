//! The C interface of queues: `hsa_queue_create`, `hsa_soft_queue_create`,
//! `destroy`/`inactivate`,
//! the write- and read-index functions in every memory order ROCr exports,
//! and the simulator's own `aqueduct_sim_set_agent_dispatch_handler`.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aqueduct_abi::aql::AgentDispatchPacket;
use aqueduct_abi::hsa::HsaQueue;
use aqueduct_abi::hsa_api::*;

use super::{AgentCall, create, create_soft, destroy, with_queue};
use crate::hsa::runtime;

// ===========================================================================
// Exports
// ===========================================================================

/// `hsa_queue_create`: see [`create`] for the checks. The segment-size
/// hints are ignored (the simulator sizes scratch and LDS per dispatch).
///
/// # Safety
/// `queue` is null or valid for a pointer write; `callback`/`data` follow
/// hsa.h's contract.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_queue_create(
    agent: Agent,
    size: u32,
    queue_type: u32,
    callback: Option<QueueErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        made(queue, |rt| {
            create(rt, agent.0, size, queue_type, callback, data)
        })
    }
}

/// The shape both queue-creating exports share: NOT_INITIALIZED before
/// `hsa_init`, a null `queue` INVALID_ARGUMENT, else the queue `make`
/// makes written to `queue`, or its status.
///
/// # Safety
/// `queue` is null or valid for a pointer write.
unsafe fn made(
    queue: *mut *mut HsaQueue,
    make: impl FnOnce(&Arc<crate::hsa::Runtime>) -> Result<u64, Status>,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    match make(&rt) {
        // SAFETY: `queue` is non-null and valid for a write (caller).
        Ok(q) => unsafe { crate::hsa::put(queue, q as *mut HsaQueue) },
        Err(s) => s,
    }
}

/// `hsa_soft_queue_create`: see [`create_soft`] for the checks. A null
/// `queue` is INVALID_ARGUMENT.
///
/// # Safety
/// `queue` is null or valid for a pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_soft_queue_create(
    region: Region,
    size: u32,
    queue_type: u32,
    features: u32,
    doorbell_signal: SignalHandle,
    queue: *mut *mut HsaQueue,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        made(queue, |rt| {
            create_soft(rt, region.0, size, queue_type, features, doorbell_signal)
        })
    }
}

/// `hsa_queue_destroy`: null is INVALID_ARGUMENT, an unknown queue
/// INVALID_QUEUE (ROCr `hsa.cpp`).
///
/// # Safety
/// None beyond the C ABI: the pointer is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_destroy(queue: *mut HsaQueue) -> Status {
    if let Err(s) = runtime() {
        return s;
    }
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    crate::hsa::done(destroy(queue as u64))
}

/// `hsa_queue_inactivate`: the processor stops taking packets (ROCr
/// destroys the hardware queue); the queue must still be destroyed.
///
/// # Safety
/// None beyond the C ABI: the pointer is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_inactivate(queue: *mut HsaQueue) -> Status {
    if let Err(s) = runtime() {
        return s;
    }
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let found = with_queue(queue, |e| {
        e.stop.store(true, Ordering::Release);
        true
    });
    if found {
        HSA_STATUS_SUCCESS
    } else {
        HSA_STATUS_ERROR_INVALID_QUEUE
    }
}

// The index functions return no status and ROCr does not check their
// argument. Here an unknown queue is ignored (loads return 0), since a
// panic must not cross the C boundary. hsa.h's deprecated spellings
// (`_acquire`, `_release`, `_acq_rel`) are exported too, as ROCr does.

/// Which dispatch id of an `amd_queue_t`.
#[derive(Clone, Copy)]
enum Index {
    Read,
    Write,
}

fn with_index<R: Default>(
    queue: *const HsaQueue,
    index: Index,
    op: impl FnOnce(&AtomicU64) -> R,
) -> R {
    with_queue(queue, |e| match index {
        Index::Read => op(e.read_dispatch_id()),
        Index::Write => op(e.write_dispatch_id()),
    })
}

/// The load ordering a `_scacquire`/`_relaxed` suffix names.
const ACQUIRE: Ordering = Ordering::Acquire;
const RELAXED: Ordering = Ordering::Relaxed;
const RELEASE: Ordering = Ordering::Release;
const ACQ_REL: Ordering = Ordering::AcqRel;

/// The failure ordering of a compare-and-swap with `success` ordering.
const fn failure(success: Ordering) -> Ordering {
    match success {
        Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst => Ordering::Acquire,
        _ => Ordering::Relaxed,
    }
}

macro_rules! load_index {
    ($($name:ident: $index:ident, $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue) -> u64 {
            with_index(queue, Index::$index, |i| i.load($order))
        }
    )*};
}

macro_rules! store_index {
    ($($name:ident: $index:ident, $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, value: u64) {
            with_index(queue, Index::$index, |i| i.store(value, $order))
        }
    )*};
}

macro_rules! add_write_index {
    ($($name:ident: $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns the previous write index.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, value: u64) -> u64 {
            with_index(queue, Index::Write, |i| i.fetch_add(value, $order))
        }
    )*};
}

macro_rules! cas_write_index {
    ($($name:ident: $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns the write index before the operation.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, expected: u64, value: u64) -> u64 {
            with_index(queue, Index::Write, |i| {
                i.compare_exchange(expected, value, $order, failure($order))
                    .unwrap_or_else(|current| current)
            })
        }
    )*};
}

load_index! {
    hsa_queue_load_read_index_scacquire: Read, ACQUIRE;
    hsa_queue_load_read_index_acquire: Read, ACQUIRE;
    hsa_queue_load_read_index_relaxed: Read, RELAXED;
    hsa_queue_load_write_index_scacquire: Write, ACQUIRE;
    hsa_queue_load_write_index_acquire: Write, ACQUIRE;
    hsa_queue_load_write_index_relaxed: Write, RELAXED;
}

store_index! {
    hsa_queue_store_write_index_relaxed: Write, RELAXED;
    hsa_queue_store_write_index_screlease: Write, RELEASE;
    hsa_queue_store_write_index_release: Write, RELEASE;
    hsa_queue_store_read_index_relaxed: Read, RELAXED;
    hsa_queue_store_read_index_screlease: Read, RELEASE;
    hsa_queue_store_read_index_release: Read, RELEASE;
}

add_write_index! {
    hsa_queue_add_write_index_scacq_screl: ACQ_REL;
    hsa_queue_add_write_index_acq_rel: ACQ_REL;
    hsa_queue_add_write_index_scacquire: ACQUIRE;
    hsa_queue_add_write_index_acquire: ACQUIRE;
    hsa_queue_add_write_index_relaxed: RELAXED;
    hsa_queue_add_write_index_screlease: RELEASE;
    hsa_queue_add_write_index_release: RELEASE;
}

cas_write_index! {
    hsa_queue_cas_write_index_scacq_screl: ACQ_REL;
    hsa_queue_cas_write_index_acq_rel: ACQ_REL;
    hsa_queue_cas_write_index_scacquire: ACQUIRE;
    hsa_queue_cas_write_index_acquire: ACQUIRE;
    hsa_queue_cas_write_index_relaxed: RELAXED;
    hsa_queue_cas_write_index_screlease: RELEASE;
    hsa_queue_cas_write_index_release: RELEASE;
}

/// A host service as C code registers it with
/// [`aqueduct_sim_set_agent_dispatch_handler`]: called on the queue's
/// processor thread with the packet, its queue and its id; SUCCESS
/// completes the packet, any other status is the queue's error.
pub type AgentDispatchCallback =
    unsafe extern "C" fn(*const AgentDispatchPacket, *mut HsaQueue, u64, *mut c_void) -> Status;

/// The registrant's `data` pointer, carried to the processor threads.
struct CallbackData(*mut c_void);

// SAFETY: the registrant of a C callback promises that `data` may be used
// from the queues' processor threads (the contract of
// `aqueduct_sim_set_agent_dispatch_handler`); the simulator only passes it
// back to the callback.
unsafe impl Send for CallbackData {}
// SAFETY: as above; the pointer is never dereferenced here.
unsafe impl Sync for CallbackData {}

/// The simulator's C-ABI registration of a host service for AGENT_DISPATCH
/// packets, so a program that loaded the library (the host shim's tests,
/// a C embedder) can serve them: the Rust API
/// [`State::set_agent_dispatch_handler`] lives in whichever copy of the
/// simulator one links, while packets go to the runtime in the loaded
/// library. `handler` null removes the service. NOT_INITIALIZED before
/// `hsa_init`.
///
/// [`State::set_agent_dispatch_handler`]: super::State::set_agent_dispatch_handler
///
/// # Safety
/// `handler` must be safe to call from any thread with the packets the
/// processors pass and with `data`, until it is replaced or the runtime is
/// shut down.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aqueduct_sim_set_agent_dispatch_handler(
    handler: Option<AgentDispatchCallback>,
    data: *mut c_void,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    let Some(handler) = handler else {
        rt.queues.set_agent_dispatch_handler(None);
        return HSA_STATUS_SUCCESS;
    };
    let data = CallbackData(data);
    let service = move |call: &AgentCall| {
        let data = &data;
        // SAFETY: the registrant's contract: `handler` accepts these
        // arguments from this thread; the packet outlives the call.
        let s = unsafe {
            handler(
                &call.packet,
                call.queue as *mut HsaQueue,
                call.dispatch_id,
                data.0,
            )
        };
        if s == HSA_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(s)
        }
    };
    rt.queues
        .set_agent_dispatch_handler(Some(Arc::new(service)));
    HSA_STATUS_SUCCESS
}
