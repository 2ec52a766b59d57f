//! The simulator as an HSA runtime: `libaqueduct_sim.so` exports the
//! `hsa_*`/`hsa_amd_*` functions of `libhsa-runtime64` that aqueduct's host
//! shim resolves, with the same C signatures and, for every case aqueduct
//! relies on, the same semantics and status codes as ROCr. The host shim
//! loads it exactly as it loads ROCr (`AQUEDUCT_HSA_LIB`).
//!
//! ```text
//!   hsa_init ──► Runtime (refcounted, one per process)
//!                 ├─ agents: CPU + simulated GPUs from product profiles
//!                 ├─ memory: one valid-range table, shared by all agents
//!                 ├─ signals (amd_signal_t in simulator memory)
//!                 ├─ queues (amd_queue_t + ring, one packet processor
//!                 │          thread each, dispatching on the interpreter)
//!                 └─ executables (the four-call loading sequence)
//! ```
//!
//! One room per concern, like ROCr's: [`system`] (init, agents, ISAs),
//! [`memory`] (pools, allocation, copies), [`signal`], [`queue`] (the
//! registry, with [`queue::processor`], the command processor, and
//! [`queue::exports`]), [`executable`]; [`hooks`] are knobs for test
//! harnesses. Each keeps its state in a field of [`Runtime`]. The C
//! signatures are `aqueduct_abi::hsa_api`'s, which [`EXPORTS`] proves at
//! compile time. Dependencies go one way: queue → signal → memory. Handles
//! are what ROCr makes them where device code or the host shim depends on
//! it (a signal handle is its `amd_signal_t`'s address, a queue is its
//! `hsa_queue_t`'s address, a kernel object is its descriptor's address);
//! elsewhere they are opaque non-zero numbers.
//!
//! The exported functions are `unsafe extern "C"`: their pointer arguments
//! carry hsa.h's contracts, which the caller (C or the host shim) upholds.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use aqueduct_abi::hsa_api::*;
use aqueduct_abi::with_hsa_functions;

use crate::memory::Memory;

pub mod executable;
pub mod hooks;
pub mod memory;
pub mod profile;
pub mod queue;
pub mod signal;
pub mod stats;
pub mod system;

pub use profile::{AgentSpec, Profile, profiles};

/// Every exported `hsa_*` function, as the one HSA function table
/// ([`aqueduct_abi::hsa_api::Api`]) the host shim resolves. Building it is
/// the compile-time proof that each export has exactly the signature the
/// table declares: a drift on either side breaks the build. The host's
/// unit tests run on the simulator in-process through it.
pub const EXPORTS: Api = with_hsa_functions!(exports_table);

/// Builds [`EXPORTS`] from the list, one field per function.
macro_rules! exports_table {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)+) => {
        Api { $($name: exported::$name,)+ }
    };
}
use exports_table;

/// Where the exports live.
mod exported {
    pub use super::executable::*;
    pub use super::memory::*;
    pub use super::queue::*;
    pub use super::signal::*;
    pub use super::system::*;
}

/// What kind of agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    /// The host CPU (`HSA_DEVICE_TYPE_CPU`): owns the system memory pools.
    Cpu,
    /// A simulated GPU of this profile (possibly with overrides).
    Gpu(Profile),
}

/// One agent of the runtime.
#[derive(Clone, Debug)]
pub struct AgentInfo {
    /// `hsa_agent_t::handle`.
    pub handle: u64,
    /// CPU, or a GPU and its profile.
    pub kind: AgentKind,
    /// KFD-style node id: 0 for the CPU, 1.. for GPUs.
    pub node: u32,
}

/// Agent handles: opaque, non-zero, recognisably the simulator's.
const AGENT_HANDLE_BASE: u64 = 0xA9E0_0000;

/// The process's runtime between `hsa_init` and the last `hsa_shut_down`.
pub struct Runtime {
    /// The one simulated memory every agent shares (system and device
    /// pools alike are host memory registered here).
    pub memory: Arc<Memory>,
    /// The CPU agent first, then the GPUs in spec order.
    pub agents: Vec<AgentInfo>,
    /// Memory pools and live allocations.
    pub pools: memory::State,
    /// Live signals and the sleepers waiting on them.
    pub signals: signal::State,
    /// Which queues are this runtime's, and its agent-dispatch handler.
    pub queues: queue::State,
    /// Live executables, code-object readers and symbols.
    pub executables: executable::State,
}

impl Runtime {
    /// A runtime with the CPU agent and one GPU agent per spec.
    pub fn new(specs: &[AgentSpec]) -> Self {
        let mut agents = vec![AgentInfo {
            handle: AGENT_HANDLE_BASE,
            kind: AgentKind::Cpu,
            node: 0,
        }];
        for (i, spec) in specs.iter().enumerate() {
            agents.push(AgentInfo {
                handle: AGENT_HANDLE_BASE + 1 + i as u64,
                kind: AgentKind::Gpu(spec.profile()),
                node: 1 + i as u32,
            });
        }
        let memory = Arc::new(Memory::new());
        Self {
            pools: memory::State::new(&agents),
            signals: signal::State::default(),
            queues: queue::State::default(),
            executables: executable::State::default(),
            memory,
            agents,
        }
    }

    /// The agent with this handle, if there is one.
    pub fn agent(&self, handle: u64) -> Option<&AgentInfo> {
        self.agents.iter().find(|a| a.handle == handle)
    }

    /// The agent if it is a simulated GPU.
    pub fn gpu(&self, handle: u64) -> Option<(&AgentInfo, Profile)> {
        let a = self.agent(handle)?;
        match a.kind {
            AgentKind::Gpu(p) => Some((a, p)),
            AgentKind::Cpu => None,
        }
    }

    /// Stops every thread and frees every resource: queues first (their
    /// processors may touch signals and executables), then the rest.
    fn shut_down(&self) {
        self.queues.shut_down();
        self.executables.shut_down();
        self.signals.shut_down();
        self.pools.shut_down(&self.memory);
        // Whatever is left (signals, code images): a thread may keep the
        // runtime's shell cached (`CACHED`) after this, but not its memory.
        self.memory.clear();
    }
}

/// `hsa_init` calls minus `hsa_shut_down` calls, and the runtime while
/// positive.
static GLOBAL: Mutex<(u32, Option<Arc<Runtime>>)> = Mutex::new((0, None));

fn global() -> MutexGuard<'static, (u32, Option<Arc<Runtime>>)> {
    // Every critical section leaves the pair consistent, so a panic in
    // another thread does not make it unusable.
    GLOBAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bumped (under [`GLOBAL`]'s lock) whenever the runtime is made or
/// taken away, so a thread's cached runtime can be checked with one load.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Marks a change of [`GLOBAL`]'s runtime; call with its lock held.
pub(crate) fn runtime_changed() {
    GENERATION.fetch_add(1, Ordering::Release);
}

thread_local! {
    /// This thread's copy of the runtime and the [`GENERATION`] it is of:
    /// the value functions (signal stores, queue indices) run per packet,
    /// and the global lock plus a reference count cost more than the rest
    /// of a packet. A stale copy is dropped at the thread's next call (or
    /// exit); the resources of a shut-down runtime are released by
    /// `hsa_shut_down` itself, so a copy holds only the empty shell.
    static CACHED: RefCell<Option<(u64, Arc<Runtime>)>> = const { RefCell::new(None) };
}

/// The runtime, or NOT_INITIALIZED (ROCr's answer before `hsa_init`).
pub fn runtime() -> Result<Arc<Runtime>, Status> {
    with_runtime(|rt| rt.clone())
}

/// Runs `f` on the runtime without taking the global lock or a reference
/// when this thread's cached copy is current; NOT_INITIALIZED if there is
/// none.
pub fn with_runtime<R>(f: impl FnOnce(&Arc<Runtime>) -> R) -> Result<R, Status> {
    let now = GENERATION.load(Ordering::Acquire);
    let mut f = Some(f);
    let fast = CACHED.try_with(|c| {
        // Taken while `f` runs: a call back in from `f` finds it taken and
        // goes the slow way.
        let mut slot = c.try_borrow_mut().ok()?;
        if slot.as_ref().is_none_or(|(g, _)| *g != now) {
            // Dropped before the lock is taken: the last reference to a
            // shut-down runtime frees it, which must not happen under it.
            *slot = None;
            let g = global();
            *slot =
                g.1.clone()
                    .map(|rt| (GENERATION.load(Ordering::Relaxed), rt));
        }
        let f = f.take()?;
        Some(match slot.as_ref() {
            Some((_, rt)) => Ok(f(rt)),
            None => Err(HSA_STATUS_ERROR_NOT_INITIALIZED),
        })
    });
    if let Ok(Some(result)) = fast {
        return result;
    }
    // Re-entered, or the thread is ending: the slow path.
    let rt = global().1.clone().ok_or(HSA_STATUS_ERROR_NOT_INITIALIZED)?;
    let f = f.take().ok_or(HSA_STATUS_ERROR)?;
    Ok(f(&rt))
}

/// Writes `value` to `*out` if `out` is non-null.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> Status {
    if out.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null, and valid for a write of T by the caller's contract.
    unsafe { out.write_unaligned(value) };
    HSA_STATUS_SUCCESS
}

/// Collapses a `Result<(), Status>` to a status.
#[allow(dead_code)] // used by the parts being filled in
pub(crate) fn done(r: Result<(), Status>) -> Status {
    match r {
        Ok(()) => HSA_STATUS_SUCCESS,
        Err(s) => s,
    }
}

/// A value an `*_get_info` function writes: the attribute's C type.
pub(crate) enum Info {
    U16(u16),
    U32(u32),
    U64(u64),
    #[allow(dead_code)] // pool and symbol attributes
    Bool(bool),
    U16x3([u16; 3]),
    U32x3([u32; 3]),
    /// A `char[]` or byte array: exactly these bytes.
    Bytes(Vec<u8>),
}

/// `text` as a `char[len]`, NUL-padded (truncated to keep one NUL).
pub(crate) fn chars(text: &str, len: usize) -> Info {
    let mut bytes = vec![0u8; len];
    let n = text.len().min(len.saturating_sub(1));
    bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
    Info::Bytes(bytes)
}

/// The shape every `*_get_info` shares: NOT_INITIALIZED before `hsa_init`,
/// INVALID_ARGUMENT for a null `value`, else the attribute's value written
/// as its C type, or the status `get` refused with.
///
/// # Safety
/// `value` is null or valid for a write of the attribute's C type (the
/// caller's contract in hsa.h).
pub(crate) unsafe fn answer(
    value: *mut c_void,
    get: impl FnOnce(&Runtime) -> Result<Info, Status>,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if value.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let info = match get(&rt) {
        Ok(info) => info,
        Err(s) => return s,
    };
    // SAFETY: `value` is non-null and valid for the attribute's C type,
    // which is what `get` returned for the attribute (caller's contract).
    unsafe {
        match info {
            Info::U16(v) => put(value.cast(), v),
            Info::U32(v) => put(value.cast(), v),
            Info::U64(v) => put(value.cast(), v),
            Info::Bool(v) => put(value.cast(), v),
            Info::U16x3(v) => put(value.cast(), v),
            Info::U32x3(v) => put(value.cast(), v),
            Info::Bytes(b) => {
                std::ptr::copy_nonoverlapping(b.as_ptr(), value.cast::<u8>(), b.len());
                HSA_STATUS_SUCCESS
            }
        }
    }
}

/// Calls an `hsa_*_iterate_*` callback for each handle: stops at the
/// first status other than SUCCESS and returns it (INFO_BREAK included,
/// as ROCr does).
///
/// # Safety
/// `callback` and `data` follow hsa.h's iteration contract.
pub(crate) unsafe fn iterate<H: Copy>(
    handles: impl IntoIterator<Item = H>,
    callback: unsafe extern "C" fn(H, *mut c_void) -> Status,
    data: *mut c_void,
) -> Status {
    for h in handles {
        // SAFETY: the caller passes a callback of this C signature and the
        // data it expects.
        let s = unsafe { callback(h, data) };
        if s != HSA_STATUS_SUCCESS {
            return s;
        }
    }
    HSA_STATUS_SUCCESS
}

/// The shape of the `hsa_*iterate*` functions: NOT_INITIALIZED before
/// `hsa_init`, INVALID_ARGUMENT for a null callback, the status `list`
/// refuses with (e.g. INVALID_AGENT), then the callback per listed handle.
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
pub(crate) unsafe fn iterate_listed<H: Copy>(
    callback: Option<unsafe extern "C" fn(H, *mut c_void) -> Status>,
    data: *mut c_void,
    list: impl FnOnce(&Runtime) -> Result<Vec<H>, Status>,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    let Some(callback) = callback else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    match list(&rt) {
        // SAFETY: forwarded caller contract.
        Ok(handles) => unsafe { iterate(handles, callback, data) },
        Err(s) => s,
    }
}

/// [`iterate_listed`] over one agent's objects (`hsa_agent_iterate_isas`,
/// `hsa_amd_agent_iterate_memory_pools`): INVALID_AGENT for an unknown
/// agent.
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
pub(crate) unsafe fn iterate_of_agent<H: Copy>(
    agent: Agent,
    callback: Option<unsafe extern "C" fn(H, *mut c_void) -> Status>,
    data: *mut c_void,
    of: impl FnOnce(&Runtime, &AgentInfo) -> Vec<H>,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        iterate_listed(callback, data, |rt| {
            let a = rt.agent(agent.0).ok_or(HSA_STATUS_ERROR_INVALID_AGENT)?;
            Ok(of(rt, a))
        })
    }
}

/// Test support shared by the runtime's modules.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use super::system::{hsa_init, hsa_shut_down};
    use super::{Runtime, runtime};
    use aqueduct_abi::hsa::SignalHandle;
    use aqueduct_abi::hsa_api::HSA_STATUS_SUCCESS;

    /// One `hsa_init` reference for a test's duration (the runtime is
    /// process-global and shared with tests running in parallel).
    pub struct Init(pub Arc<Runtime>);

    impl Init {
        pub fn new() -> Self {
            // SAFETY: plain C ABI call.
            assert_eq!(unsafe { hsa_init() }, HSA_STATUS_SUCCESS);
            Self(runtime().expect("initialised"))
        }

        pub fn signal(&self, initial: i64) -> SignalHandle {
            let mut s = SignalHandle::NULL;
            // SAFETY: `s` is a valid out-pointer; no consumers.
            let st =
                unsafe { super::signal::hsa_signal_create(initial, 0, std::ptr::null(), &mut s) };
            assert_eq!(st, HSA_STATUS_SUCCESS);
            s
        }
    }

    impl Drop for Init {
        fn drop(&mut self) {
            // SAFETY: plain C ABI call, balancing `new`.
            unsafe { hsa_shut_down() };
        }
    }
}
