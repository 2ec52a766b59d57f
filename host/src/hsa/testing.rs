//! The HSA runtime of the host's unit tests: aqueduct's simulator, linked
//! in-process (a dev-dependency), behind a thin layer that adds what tests
//! need to steer and observe it. There is one model of the runtime — the
//! simulator's, which executes every packet — and no second one here.
//!
//! Each function of the simulator's table ([`aqueduct_sim::hsa::EXPORTS`])
//! is wrapped by a function of the same C signature (generated from the one
//! list, [`aqueduct_abi::with_hsa_functions!`]) that, before calling it:
//!
//! - logs the call in this thread's [`calls`] (libtest runs each test on
//!   its own thread; with `--test-threads=1` tests share the main thread, so
//!   a test that reads the log starts with [`clear_calls`]);
//! - returns a status injected with [`set_fail`] instead, once (only for
//!   functions that return a status);
//! - notes in this thread's [`misuse`] any signal or queue argument that is
//!   not live (destroyed, or never created): ROCr would dereference it, the
//!   simulator reads 0 and writes nothing, and a test wants to know.
//!
//! So that tests cannot pass by luck, `hsa_amd_memory_pool_allocate` fills
//! new memory with [`POISON`] (the simulator's memory comes zeroed; a GPU's
//! does not), and the simulator's test hook delays every async copy by
//! [`ASYNC_COPY_DELAY`], so a caller that does not wait for the completion
//! signal reads stale bytes.
//!
//! Why in-process rather than loading `libaqueduct_sim.so`: the call log
//! and the injected failures are per test thread, and tests also ask the
//! simulator directly what is live ([`is_live`], [`signal_is_live`]). The
//! integration tests (`tests/tests/hsa_*.rs`) load the `cdylib` through the
//! real loader path.

use std::cell::RefCell;
use std::mem::offset_of;
use std::time::Duration;

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::aql::{AqlPacket, PACKET_SIZE};
use aqueduct_abi::aql_ring::{is_published, slot_offset};
use aqueduct_abi::hsa_api::*;
use aqueduct_abi::with_hsa_functions;
use aqueduct_sim::hsa::EXPORTS as SIM;
use zerocopy::FromBytes;

use super::Runtime;

/// The byte fresh allocations are filled with.
pub(crate) const POISON: u8 = 0xA5;

/// How long the simulator (its test hook) holds each async copy back.
pub(crate) const ASYNC_COPY_DELAY: Duration = Duration::from_millis(5);

thread_local! {
    /// This thread's calls, in order.
    static CALLS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    /// Failures to inject: the next call of the function returns the status.
    static FAIL: RefCell<Vec<(&'static str, Status)>> = const { RefCell::new(Vec::new()) };
    /// Arguments that named no live object.
    static MISUSE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// A runtime whose table is the wrapped simulator.
pub(crate) fn runtime() -> Runtime {
    aqueduct_sim::hsa::hooks::set_async_copy_delay(ASYNC_COPY_DELAY);
    Runtime::from_api(api(), "aqueduct-sim (in-process, with test hooks)")
}

/// The names of this thread's HSA calls since the last [`clear_calls`].
pub(crate) fn calls() -> Vec<&'static str> {
    CALLS.with_borrow(Clone::clone)
}

pub(crate) fn clear_calls() {
    CALLS.with_borrow_mut(Vec::clear);
}

/// The next call of `name` on this thread returns `status` without
/// reaching the simulator. Panics for a function that returns no status.
pub(crate) fn set_fail(name: &'static str, status: Status) {
    assert!(
        FAILABLE.contains(&(name, true)),
        "{name} is no HSA function that returns a status"
    );
    FAIL.with_borrow_mut(|f| f.push((name, status)));
}

/// What this thread passed that named no live signal or queue.
pub(crate) fn misuse() -> Vec<String> {
    MISUSE.with_borrow(Clone::clone)
}

/// Whether `ptr` lies in a live pool allocation of the simulator.
pub(crate) fn is_live(ptr: u64) -> bool {
    aqueduct_sim::hsa::runtime().is_ok_and(|rt| rt.pools.allocation_len(ptr).is_some())
}

/// Whether `signal` is a live signal of the simulator: one
/// `hsa_signal_create` made, or a live queue's doorbell.
pub(crate) fn signal_is_live(signal: SignalHandle) -> bool {
    let address = signal.address();
    aqueduct_sim::hsa::runtime().is_ok_and(|rt| rt.signals.is_live(address))
        || aqueduct_sim::hsa::queue::is_doorbell(address)
}

/// Whether `queue` is a live queue of the simulator.
pub(crate) fn queue_is_live(queue: *const HsaQueue) -> bool {
    aqueduct_sim::hsa::queue::is_live(queue as u64)
}

/// The packets published in `queue`'s ring and not yet consumed, read from
/// simulator memory (a test gates the queue first, or the processor may
/// consume them while they are read).
pub(crate) fn peek(queue: *const HsaQueue) -> Vec<AqlPacket> {
    let Ok(rt) = aqueduct_sim::hsa::runtime() else {
        return Vec::new();
    };
    let word = |offset: usize| {
        let mut bytes = [0u8; 8];
        rt.memory
            .read_bytes(queue as u64 + offset as u64, &mut bytes)
            .map(|()| u64::from_le_bytes(bytes))
    };
    let (Ok(base), Ok(size), Ok(read), Ok(write)) = (
        word(offset_of!(HsaQueue, base_address)),
        word(offset_of!(HsaQueue, size)),
        word(offset_of!(AmdQueue, read_dispatch_id)),
        word(offset_of!(AmdQueue, write_dispatch_id)),
    ) else {
        return Vec::new();
    };
    let size = u64::from(size as u32);
    let mut out = Vec::new();
    for id in read..write {
        let mut bytes = [0u8; PACKET_SIZE];
        if rt
            .memory
            .read_bytes(base + slot_offset(id, size), &mut bytes)
            .is_err()
        {
            break;
        }
        match AqlPacket::read_from_bytes(&bytes) {
            Ok(p) if is_published(u32::from(p.header.0)) => out.push(p),
            _ => break,
        }
    }
    out
}

/// The value of `queue`'s doorbell signal: the last packet id a producer
/// announced.
pub(crate) fn doorbell(queue: *const HsaQueue) -> Option<i64> {
    let rt = aqueduct_sim::hsa::runtime().ok()?;
    let mut bytes = [0u8; 8];
    rt.memory
        .read_bytes(
            queue as u64 + offset_of!(HsaQueue, doorbell_signal) as u64,
            &mut bytes,
        )
        .ok()?;
    aqueduct_sim::hsa::signal::value(&rt, u64::from_le_bytes(bytes))
}

/// Logs the call; the status to inject, if one is due.
fn enter(name: &'static str) -> Option<Status> {
    CALLS.with_borrow_mut(|c| c.push(name));
    FAIL.with_borrow_mut(|f| {
        let i = f.iter().position(|(n, _)| *n == name)?;
        Some(f.remove(i).1)
    })
}

fn note_misuse(call: &str, what: String) {
    MISUSE.with_borrow_mut(|m| m.push(format!("{call}: {what}")));
}

/// What a wrapper returns for an injected status: the status itself for a
/// function that returns one; nothing for the others, which go ahead.
trait Injected: Sized {
    /// Whether the function can fail with an injected status.
    const FAILS: bool;
    fn injected(status: Status) -> Option<Self>;
}

impl Injected for Status {
    const FAILS: bool = true;
    fn injected(status: Status) -> Option<Self> {
        Some(status)
    }
}

macro_rules! not_injectable {
    ($($t:ty),+) => {$(
        impl Injected for $t {
            const FAILS: bool = false;
            fn injected(_: Status) -> Option<Self> {
                None
            }
        }
    )+};
}
not_injectable!(i64, u64, ());

/// Checks an argument for liveness where its type names an object: signal
/// handles and queues. The autoref trick picks [`Live::check`] for those
/// types and [`Ignored::check`] for every other.
struct Arg<T>(T);

trait Live {
    fn check(&self, call: &str);
}

impl Live for Arg<SignalHandle> {
    fn check(&self, call: &str) {
        if !self.0.is_null() && !signal_is_live(self.0) {
            note_misuse(call, format!("signal {:#x} is not live", self.0.0));
        }
    }
}

impl Live for Arg<*const HsaQueue> {
    fn check(&self, call: &str) {
        if !self.0.is_null() && !queue_is_live(self.0) {
            note_misuse(call, format!("queue {:#x} is not live", self.0 as u64));
        }
    }
}

impl Live for Arg<*mut HsaQueue> {
    fn check(&self, call: &str) {
        Arg(self.0.cast_const()).check(call);
    }
}

trait Ignored {
    fn check(&self, _call: &str) {}
}

impl<T> Ignored for &Arg<T> {}

macro_rules! wrap {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)+) => {
        /// Every function with whether it returns a status (so that
        /// [`set_fail`] can fail it).
        const FAILABLE: &[(&str, bool)] = &[
            $((stringify!($name), <return_type!($($ret)?) as Injected>::FAILS),)+
        ];

        mod wrapped {
            use super::*;
            $(
                #[doc = concat!("`", stringify!($name), "` through the test layer.")]
                pub(super) unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                    if let Some(status) = enter(stringify!($name)) {
                        if let Some(out) = Injected::injected(status) {
                            return out;
                        }
                    }
                    $((&Arg($arg)).check(stringify!($name));)*
                    // SAFETY: the caller's contract is hsa.h's, which the
                    // simulator's function has too.
                    unsafe { (SIM.$name)($($arg),*) }
                }
            )+
        }

        /// The simulator's table with every function wrapped.
        fn api() -> Api {
            let mut api = Api {
                $($name: wrapped::$name,)+
            };
            api.hsa_amd_memory_pool_allocate = allocate_poisoned;
            api
        }
    };
}

/// A function's return type: `()` where the list has none.
macro_rules! return_type {
    () => {
        ()
    };
    ($ret:ty) => {
        $ret
    };
}

with_hsa_functions!(wrap);

/// `hsa_amd_memory_pool_allocate`, then [`POISON`] over the new memory.
unsafe extern "C" fn allocate_poisoned(
    memory_pool: MemoryPool,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    let status = unsafe { wrapped::hsa_amd_memory_pool_allocate(memory_pool, size, flags, ptr) };
    if status == HSA_STATUS_SUCCESS {
        let poison = vec![POISON; size];
        // SAFETY: the simulator just allocated `size` bytes at `*ptr`
        // (`ptr` was valid for the write it made); the poison is host
        // memory of that size.
        let copied = unsafe { (SIM.hsa_memory_copy)(*ptr, poison.as_ptr().cast(), size) };
        debug_assert_eq!(copied, HSA_STATUS_SUCCESS);
    }
    status
}
