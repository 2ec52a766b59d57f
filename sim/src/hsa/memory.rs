//! Memory pools, allocation, access and copies (hsa_amd_memory_pool_*,
//! hsa_agent_iterate_regions and hsa_region_get_info over the same pools,
//! hsa_amd_agents_allow_access, hsa_memory_copy,
//! hsa_amd_memory_async_copy).
//!
//! Every agent's memory is the host process's memory behind the one
//! valid-range table ([`crate::memory::Memory`]), so the pools differ only
//! in what they report; an allocation from any of them is entered in the
//! table and so is reachable by device code of every agent. The pools are
//! the ones ROCr reports for an APU-less system with Instinct GPUs
//! (`amd_memory_region.cpp` `MemoryRegion::GetPoolInfo`), in its order:
//!
//! ```text
//!   agent   pool                     segment  flags           alloc  size
//!   CPU     system, kernarg          GLOBAL   FINE|KERNARG    yes    host RAM
//!   CPU     system, coarse           GLOBAL   COARSE          yes    host RAM
//!   GPU     VRAM                     GLOBAL   COARSE          yes    product HBM
//!   GPU     VRAM, fine-grained       GLOBAL   FINE            yes    product HBM
//!   GPU     LDS                      GROUP    0               no     LDS per workgroup
//! ```
//!
//! Copies touch simulator memory only through the table (relaxed atomics,
//! with the table's read lock held so nothing is freed mid-copy); a range
//! that is not simulator memory is host memory, which hsa.h makes the
//! caller responsible for, as ROCr does (`Runtime::CopyMemory` is a
//! `memcpy`). A range that starts in simulator memory but runs past its
//! allocation is refused with INVALID_ARGUMENT instead of being copied
//! (ROCr would fault or corrupt a neighbour).
//!
//! `hsa_amd_memory_async_copy` runs each copy on its own worker thread,
//! which waits for the dependency signals, copies and decrements the
//! completion signal; the call returns at once, as ROCr's does with its
//! DMA engines. Workers are joined at `hsa_shut_down`.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use aqueduct_abi::hsa::{SignalCondition, SignalHandle};

use super::{AgentInfo, AgentKind, Info, Runtime, answer, put, runtime, signal};
use crate::memory::{Access, Memory, MemoryError};
use aqueduct_abi::hsa_api::*;

/// Granule and alignment of the global pools: ROCr's `kPageSize`.
pub const PAGE: u64 = 4096;
/// The system pools' size when /proc/meminfo cannot say.
const SYSTEM_MEMORY_FALLBACK: u64 = 16 << 30;

/// Installed host memory (`MemTotal`), what ROCr reports as the system
/// pools' size.
fn system_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        })
        .unwrap_or(SYSTEM_MEMORY_FALLBACK)
}

/// One memory pool and what `hsa_amd_memory_pool_get_info` reports of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// `hsa_amd_memory_pool_t::handle`: opaque, non-zero.
    pub handle: u64,
    /// The agent whose pool it is.
    pub owner: u64,
    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`: an `HSA_AMD_SEGMENT_*` value.
    pub segment: u32,
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`: `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_*`
    /// bits (kernarg, fine- or coarse-grained).
    pub global_flags: u32,
    /// `HSA_AMD_MEMORY_POOL_INFO_SIZE`: bytes.
    pub size: u64,
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED`.
    pub alloc_allowed: bool,
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE`: sizes are rounded
    /// up to this many bytes.
    pub granule: u64,
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT`: bytes.
    pub alignment: u64,
    /// `HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL`.
    pub accessible_by_all: bool,
    /// `HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE`: the largest single
    /// allocation, bytes.
    pub alloc_max: u64,
}

impl Pool {
    fn global(owner: &AgentInfo, index: u64, flags: u32, size: u64, all: bool) -> Self {
        Self {
            handle: pool_handle(owner, index),
            owner: owner.handle,
            segment: HSA_AMD_SEGMENT_GLOBAL,
            global_flags: flags,
            size,
            alloc_allowed: true,
            granule: PAGE,
            alignment: PAGE,
            accessible_by_all: all,
            alloc_max: size,
        }
    }

    /// ROCr reports zero flags, granule, alignment and maximum for LDS,
    /// and the LDS one workgroup can allocate as the size.
    fn group(owner: &AgentInfo, index: u64, lds_bytes: u32) -> Self {
        Self {
            handle: pool_handle(owner, index),
            owner: owner.handle,
            segment: HSA_AMD_SEGMENT_GROUP,
            global_flags: 0,
            size: u64::from(lds_bytes),
            alloc_allowed: false,
            granule: 0,
            alignment: 0,
            accessible_by_all: false,
            alloc_max: 0,
        }
    }
}

/// Pool handles: the owner's handle with the pool's index below it.
fn pool_handle(owner: &AgentInfo, index: u64) -> u64 {
    (owner.handle << 8) | (index + 1)
}

/// A live pool allocation.
#[derive(Debug)]
struct Allocation {
    /// Bytes allocated: the request rounded up to the pool's granule.
    len: u64,
    pool: u64,
}

/// Pools, allocations and the async copies in flight.
#[derive(Debug)]
pub struct State {
    pools: Vec<Pool>,
    /// Pool allocations by start address.
    allocations: Mutex<BTreeMap<u64, Allocation>>,
    /// Async copy workers not yet joined.
    copies: Mutex<Vec<JoinHandle<()>>>,
    /// Set by [`State::shut_down`]: workers still waiting give up.
    closing: AtomicBool,
}

/// How often a copy worker waiting for a dependency checks for shutdown.
const CLOSING_POLL: Duration = Duration::from_millis(10);

/// Bytes a copy moves per step through its bounce buffer.
const COPY_CHUNK: u64 = 1 << 16;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each critical section is one insert, remove or take: never left
    // inconsistent by a panic.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl State {
    /// The pools of `agents` (see the module doc's table).
    pub fn new(agents: &[AgentInfo]) -> Self {
        let system = system_memory_bytes();
        let mut pools = Vec::new();
        for a in agents {
            match a.kind {
                AgentKind::Cpu => {
                    let fine = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                        | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT;
                    pools.push(Pool::global(a, 0, fine, system, true));
                    pools.push(Pool::global(
                        a,
                        1,
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                        system,
                        true,
                    ));
                }
                AgentKind::Gpu(p) => {
                    let vram = p.memory_bytes;
                    pools.push(Pool::global(
                        a,
                        0,
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                        vram,
                        false,
                    ));
                    pools.push(Pool::global(
                        a,
                        1,
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                        vram,
                        false,
                    ));
                    pools.push(Pool::group(a, 2, p.facts().lds_per_workgroup));
                }
            }
        }
        Self {
            pools,
            allocations: Mutex::new(BTreeMap::new()),
            copies: Mutex::new(Vec::new()),
            closing: AtomicBool::new(false),
        }
    }

    /// The pool with this handle, if there is one.
    pub fn pool(&self, handle: u64) -> Option<&Pool> {
        self.pools.iter().find(|p| p.handle == handle)
    }

    /// The pools of `agent`, in ROCr's iteration order.
    pub fn pools_of(&self, agent: u64) -> impl Iterator<Item = &Pool> {
        self.pools.iter().filter(move |p| p.owner == agent)
    }

    /// The pool a live allocation starting at `address` came from.
    pub fn pool_of(&self, address: u64) -> Option<u64> {
        lock(&self.allocations).get(&address).map(|a| a.pool)
    }

    /// Allocates from `pool` as `hsa_amd_memory_pool_allocate` does after
    /// its argument checks: INVALID_MEMORY_POOL for an unknown pool,
    /// INVALID_ALLOCATION for one that does not allow runtime allocation
    /// (LDS) or a size above its maximum; the size is rounded up to the
    /// granule.
    pub fn allocate(&self, memory: &Memory, pool: u64, size: u64) -> Result<u64, Status> {
        let pool = self
            .pool(pool)
            .ok_or(HSA_STATUS_ERROR_INVALID_MEMORY_POOL)?;
        if !pool.alloc_allowed || pool.segment != HSA_AMD_SEGMENT_GLOBAL || size > pool.alloc_max {
            return Err(HSA_STATUS_ERROR_INVALID_ALLOCATION);
        }
        let len = size
            .checked_next_multiple_of(pool.granule)
            .ok_or(HSA_STATUS_ERROR_INVALID_ALLOCATION)?;
        // The memory maps whole pages (the granule); strict mode narrows
        // the allocation to the `size` asked for.
        let start = memory.alloc(size, pool.alignment).map_err(|e| match e {
            MemoryError::OutOfMemory { .. } => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
            _ => HSA_STATUS_ERROR_INVALID_ALLOCATION,
        })?;
        lock(&self.allocations).insert(
            start,
            Allocation {
                len,
                pool: pool.handle,
            },
        );
        Ok(start)
    }

    /// Frees a pool allocation: null is SUCCESS, an address that does not
    /// start one INVALID_ALLOCATION (ROCr `Runtime::FreeMemory`).
    pub fn free(&self, memory: &Memory, address: u64) -> Status {
        if address == 0 {
            return HSA_STATUS_SUCCESS;
        }
        if lock(&self.allocations).remove(&address).is_none() {
            return HSA_STATUS_ERROR_INVALID_ALLOCATION;
        }
        match memory.free(address) {
            Ok(()) => HSA_STATUS_SUCCESS,
            Err(_) => HSA_STATUS_ERROR_INVALID_ALLOCATION,
        }
    }

    /// Bytes of the live allocation starting at `address`.
    pub fn allocation_len(&self, address: u64) -> Option<u64> {
        lock(&self.allocations).get(&address).map(|a| a.len)
    }

    fn closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Starts an async copy worker and keeps its handle for shutdown,
    /// joining the ones that are done.
    fn spawn_copy(&self, work: impl FnOnce() + Send + 'static) -> Status {
        let spawned = std::thread::Builder::new()
            .name("aqueduct-sim-copy".into())
            .spawn(work);
        let Ok(handle) = spawned else {
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        };
        let mut copies = lock(&self.copies);
        let (done, running): (Vec<_>, Vec<_>) = copies.drain(..).partition(|h| h.is_finished());
        *copies = running;
        copies.push(handle);
        drop(copies);
        for h in done {
            // A worker's panic is already reported on stderr.
            let _ = h.join();
        }
        HSA_STATUS_SUCCESS
    }

    /// Joins every async copy worker (those still waiting for a dependency
    /// give up) and frees every pool allocation still live.
    pub fn shut_down(&self, memory: &Memory) {
        self.closing.store(true, Ordering::Release);
        let workers = std::mem::take(&mut *lock(&self.copies));
        for h in workers {
            let _ = h.join();
        }
        let allocations = std::mem::take(&mut *lock(&self.allocations));
        for &start in allocations.keys() {
            let _ = memory.free(start);
        }
    }
}

// ===========================================================================
// Copies
// ===========================================================================

/// Where one side of a copy lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// Wholly inside one valid range of the table.
    Simulator,
    /// Outside the table: host memory, the caller's responsibility.
    Host,
}

/// Classifies `len` bytes at `at`; INVALID_ARGUMENT for a range that
/// starts in simulator memory but overruns its allocation.
fn side(m: &mut Access<'_>, at: u64, len: u64) -> Result<Side, Status> {
    if m.check(at, len).is_ok() {
        Ok(Side::Simulator)
    } else if m.check(at, 1).is_ok() || at.checked_add(len).is_none() {
        Err(HSA_STATUS_ERROR_INVALID_ARGUMENT)
    } else {
        Ok(Side::Host)
    }
}

/// Reads simulator memory at `at` (checked by the caller) into `out`:
/// qwords where aligned, bytes elsewhere.
fn read_simulator(m: &Access<'_>, at: u64, out: &mut [u8]) {
    let mut i = 0;
    while i < out.len() {
        let a = at + i as u64;
        match m.atomic_u64(a) {
            Some(w) if out.len() - i >= 8 => {
                out[i..i + 8].copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
                i += 8;
            }
            _ => {
                out[i] = m.load_u8(a);
                i += 1;
            }
        }
    }
}

/// Writes `data` to simulator memory at `at` (checked by the caller).
fn write_simulator(m: &mut Access<'_>, at: u64, data: &[u8]) {
    let mut i = 0;
    while i < data.len() {
        let a = at + i as u64;
        let word = (data.len() - i >= 8)
            .then(|| m.atomic_u64(a))
            .flatten()
            .map(|w| {
                (
                    w,
                    u64::from_le_bytes(data[i..i + 8].try_into().unwrap_or([0; 8])),
                )
            });
        match word {
            Some((w, v)) => {
                w.store(v, Ordering::Relaxed);
                i += 8;
            }
            None => {
                m.store_u8(a, data[i]);
                i += 1;
            }
        }
    }
}

/// Copies `len` bytes from `src` to `dst` (overlap allowed), each side
/// simulator or host memory (see the module doc).
///
/// # Safety
/// A side that is not simulator memory must be valid for `len` bytes of
/// reads (`src`) or writes (`dst`) for the duration of the call.
unsafe fn copy(memory: &Memory, dst: u64, src: u64, len: u64) -> Result<(), Status> {
    let mut m = memory.access();
    let to = side(&mut m, dst, len)?;
    let from = side(&mut m, src, len)?;
    if (to, from) == (Side::Host, Side::Host) {
        drop(m);
        let len = usize::try_from(len).map_err(|_| HSA_STATUS_ERROR_INVALID_ARGUMENT)?;
        // SAFETY: both ranges are host memory valid for `len` bytes
        // (caller's contract); `copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
        return Ok(());
    }
    // Through a bounce buffer, a chunk at a time; back to front when the
    // destination overlaps the source from above.
    let mut buf = vec![0u8; COPY_CHUNK.min(len) as usize];
    let chunks = len.div_ceil(COPY_CHUNK);
    let backwards = dst > src && dst - src < len;
    for k in 0..chunks {
        let k = if backwards { chunks - 1 - k } else { k };
        let off = k * COPY_CHUNK;
        let n = COPY_CHUNK.min(len - off) as usize;
        let chunk = &mut buf[..n];
        match from {
            Side::Simulator => read_simulator(&m, src + off, chunk),
            // SAFETY: host memory valid for `len` bytes of reads (caller's
            // contract), `chunk` is ours.
            Side::Host => unsafe {
                std::ptr::copy_nonoverlapping((src + off) as *const u8, chunk.as_mut_ptr(), n)
            },
        }
        match to {
            Side::Simulator => write_simulator(&mut m, dst + off, chunk),
            // SAFETY: host memory valid for `len` bytes of writes (caller's
            // contract), `chunk` is ours.
            Side::Host => unsafe {
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), (dst + off) as *mut u8, n)
            },
        }
    }
    Ok(())
}

// ===========================================================================
// Exports
// ===========================================================================

/// `hsa_amd_agent_iterate_memory_pools`: null callback INVALID_ARGUMENT,
/// unknown agent INVALID_AGENT.
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: Agent,
    callback: Option<PoolCallback>,
    data: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { iterate_pools(agent, callback, data, MemoryPool) }
}

/// Iterates the pools of `agent` as handles `as_handle` makes (pools or
/// regions: ROCr's are the same objects).
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
unsafe fn iterate_pools<H: Copy>(
    agent: Agent,
    callback: Option<unsafe extern "C" fn(H, *mut c_void) -> Status>,
    data: *mut c_void,
    as_handle: fn(u64) -> H,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        super::iterate_of_agent(agent, callback, data, |rt, a| {
            rt.pools
                .pools_of(a.handle)
                .map(|p| as_handle(p.handle))
                .collect()
        })
    }
}

fn pool_info(rt: &Runtime, pool: MemoryPool, attribute: u32) -> Result<Info, Status> {
    let p = rt
        .pools
        .pool(pool.0)
        .ok_or(HSA_STATUS_ERROR_INVALID_MEMORY_POOL)?;
    // size_t attributes are u64 on the 64-bit hosts the simulator runs on.
    Ok(match attribute {
        HSA_AMD_MEMORY_POOL_INFO_SEGMENT => Info::U32(p.segment),
        HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS => Info::U32(p.global_flags),
        HSA_AMD_MEMORY_POOL_INFO_SIZE => Info::U64(p.size),
        HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED => Info::Bool(p.alloc_allowed),
        HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE => Info::U64(p.granule),
        HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT => Info::U64(p.alignment),
        HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL => Info::Bool(p.accessible_by_all),
        HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE => Info::U64(p.alloc_max),
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

/// `hsa_agent_iterate_regions`: the agent's pools, as regions. ROCr keeps
/// one list of `core::MemoryRegion` objects per agent and hands the same
/// objects out as regions and as pools (`hsa.cpp`
/// `hsa_agent_iterate_regions`, `hsa_ext_amd.cpp`
/// `hsa_amd_agent_iterate_memory_pools`), so a region's handle is its
/// pool's. Null callback INVALID_ARGUMENT, unknown agent INVALID_AGENT.
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_iterate_regions(
    agent: Agent,
    callback: Option<RegionCallback>,
    data: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { iterate_pools(agent, callback, data, Region) }
}

/// A region's attributes, as ROCr's `MemoryRegion::GetInfo` reports them
/// for its `hsa_region_info_t`: segment GLOBAL or GROUP; the global flags
/// FINE_GRAINED or COARSE_GRAINED, with KERNARG for the kernarg pool (the
/// region flags have the pool flags' values); size, maximum allocation,
/// whether, and in what granule and alignment, the runtime allocates.
/// `HSA_REGION_INFO_ALLOC_MAX_PRIVATE_WORKGROUP_SIZE` (private segment
/// regions, which neither ROCr nor the simulator has) is INVALID_ARGUMENT.
fn region_info(rt: &Runtime, region: Region, attribute: u32) -> Result<Info, Status> {
    let p = rt
        .pools
        .pool(region.0)
        .ok_or(HSA_STATUS_ERROR_INVALID_REGION)?;
    Ok(match attribute {
        HSA_REGION_INFO_SEGMENT => Info::U32(if p.segment == HSA_AMD_SEGMENT_GROUP {
            HSA_REGION_SEGMENT_GROUP
        } else {
            HSA_REGION_SEGMENT_GLOBAL
        }),
        HSA_REGION_INFO_GLOBAL_FLAGS => Info::U32(p.global_flags),
        HSA_REGION_INFO_SIZE => Info::U64(p.size),
        HSA_REGION_INFO_ALLOC_MAX_SIZE => Info::U64(p.alloc_max),
        HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED => Info::Bool(p.alloc_allowed),
        HSA_REGION_INFO_RUNTIME_ALLOC_GRANULE => Info::U64(p.granule),
        HSA_REGION_INFO_RUNTIME_ALLOC_ALIGNMENT => Info::U64(p.alignment),
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

/// `hsa_region_get_info`: unknown region INVALID_REGION, unknown attribute
/// INVALID_ARGUMENT; see `region_info`.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_region_get_info(
    region: Region,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { answer(value, |rt| region_info(rt, region, attribute)) }
}

/// `hsa_amd_memory_pool_get_info`: unknown pool INVALID_MEMORY_POOL,
/// unknown attribute INVALID_ARGUMENT.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    pool: MemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { answer(value, |rt| pool_info(rt, pool, attribute)) }
}

/// `hsa_amd_memory_pool_allocate`, checks in ROCr's order
/// (`hsa_ext_amd.cpp`, then `MemoryRegion::AllocateImpl`): size 0 or a
/// null out-pointer INVALID_ARGUMENT, then [`State::allocate`]'s. `flags`
/// is ignored, as ROCr does for the bits it does not know (hsa_ext_amd.h
/// calls it reserved; ROCr does not enforce that).
///
/// # Safety
/// `ptr` is null or valid for a write of `void*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: MemoryPool,
    size: usize,
    _flags: u32,
    ptr: *mut *mut c_void,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if size == 0 || ptr.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    match rt.pools.allocate(&rt.memory, pool.0, size as u64) {
        // SAFETY: `ptr` is non-null and valid for the write (caller).
        Ok(start) => unsafe { put(ptr, start as *mut c_void) },
        Err(s) => s,
    }
}

/// `hsa_amd_memory_pool_free`: see [`State::free`].
///
/// # Safety
/// None beyond the C ABI: the pointer is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> Status {
    match runtime() {
        Ok(rt) => rt.pools.free(&rt.memory, ptr as u64),
        Err(s) => s,
    }
}

/// `hsa_amd_agents_allow_access`, checks as ROCr (`hsa_ext_amd.cpp`,
/// `Runtime::AllowAccess`): no agents, a null agent list, non-null
/// (reserved) `flags` or a null pointer INVALID_ARGUMENT; a pointer that
/// does not start a pool allocation INVALID_ALLOCATION; an unknown agent
/// INVALID_AGENT. Nothing else to do: every agent reaches all simulator
/// memory.
///
/// # Safety
/// `agents` is null or holds `num_agents` agent handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const Agent,
    flags: *const u32,
    ptr: *const c_void,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if num_agents == 0 || agents.is_null() || !flags.is_null() || ptr.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null and holding `num_agents` handles (caller's
    // contract).
    let agents = unsafe { std::slice::from_raw_parts(agents, num_agents as usize) };
    if rt.pools.pool_of(ptr as u64).is_none() {
        return HSA_STATUS_ERROR_INVALID_ALLOCATION;
    }
    if agents.iter().any(|a| rt.agent(a.0).is_none()) {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_memory_copy`: null INVALID_ARGUMENT, size 0 SUCCESS (`hsa.cpp`),
/// overlap allowed; see the module doc for which memory it may touch.
///
/// # Safety
/// A range that is not simulator memory must be valid for `size` bytes
/// (hsa.h's contract).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_memory_copy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if dst.is_null() || src.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if size == 0 {
        return HSA_STATUS_SUCCESS;
    }
    // SAFETY: forwarded caller contract.
    match unsafe { copy(&rt.memory, dst as u64, src as u64, size as u64) } {
        Ok(()) => HSA_STATUS_SUCCESS,
        Err(s) => s,
    }
}

/// `hsa_amd_memory_async_copy`, checks as ROCr (`hsa_ext_amd.cpp`): null
/// pointers or a dependency count that disagrees with the list
/// INVALID_ARGUMENT; an unknown agent INVALID_AGENT; a null signal
/// INVALID_ARGUMENT and one that is not a live signal INVALID_SIGNAL
/// ([`signal::check`]). Like ROCr, size 0 is SUCCESS and never signals
/// `completion`. A range that overruns simulator memory is refused here
/// (INVALID_ARGUMENT) rather than faulting later.
///
/// The worker waits until every dependency reads 0, copies, then subtracts
/// 1 from `completion` with release semantics, so a waiter that sees the
/// decrement sees the bytes. Should the memory be freed before the copy
/// runs, the worker reports it on stderr and leaves `completion` alone, as
/// a faulted engine would.
///
/// # Safety
/// `dep_signals` is null or holds `num_dep_signals` handles; host-memory
/// ranges stay valid for `size` bytes until `completion` is decremented.
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const SignalHandle,
    completion: SignalHandle,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if dst.is_null() || src.is_null() || (num_dep_signals == 0) != dep_signals.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if rt.agent(dst_agent.0).is_none() || rt.agent(src_agent.0).is_none() {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    let deps: Vec<SignalHandle> = if num_dep_signals == 0 {
        Vec::new()
    } else {
        // SAFETY: non-null and holding `num_dep_signals` handles (caller's
        // contract).
        unsafe { std::slice::from_raw_parts(dep_signals, num_dep_signals as usize) }.to_vec()
    };
    for &s in deps.iter().chain([&completion]) {
        if let Err(status) = signal::check(&rt, s) {
            return status;
        }
    }
    if size == 0 {
        return HSA_STATUS_SUCCESS;
    }
    let (dst, src, len) = (dst as u64, src as u64, size as u64);
    {
        let mut m = rt.memory.access();
        if let Err(s) = side(&mut m, dst, len).and_then(|_| side(&mut m, src, len)) {
            return s;
        }
    }
    let worker_rt: Arc<Runtime> = rt.clone();
    rt.pools.spawn_copy(move || {
        let rt = worker_rt;
        for dep in deps {
            if !wait_for_zero(&rt, dep) {
                return;
            }
        }
        let delay = super::hooks::async_copy_delay();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        // SAFETY: host-memory ranges stay valid until `completion` is
        // decremented (caller's contract), which happens only below.
        match unsafe { copy(&rt.memory, dst, src, len) } {
            Ok(()) => {
                signal::subtract(&rt, completion.0, 1);
            }
            Err(_) => eprintln!(
                "aqueduct-sim: async copy of {len} bytes {src:#x} -> {dst:#x}: \
                 memory freed before the copy ran; completion not signalled"
            ),
        }
    })
}

/// Blocks until `dep` reads 0; false if the runtime is shutting down or
/// the signal was destroyed first.
fn wait_for_zero(rt: &Runtime, dep: SignalHandle) -> bool {
    loop {
        if rt.pools.closing() {
            return false;
        }
        let deadline = Some(Instant::now() + CLOSING_POLL);
        match signal::wait(
            rt,
            dep.0,
            SignalCondition::EQ,
            0,
            deadline,
            Ordering::Acquire,
        ) {
            Some(0) => return true,
            Some(_) => {}
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hsa::AgentSpec;
    use crate::hsa::signal::{
        hsa_signal_destroy, hsa_signal_load_scacquire, hsa_signal_store_screlease,
        hsa_signal_wait_scacquire,
    };
    use crate::hsa::testing::Init;

    impl Init {
        fn cpu(&self) -> u64 {
            self.0.agents[0].handle
        }

        fn gpu(&self) -> u64 {
            self.0
                .agents
                .iter()
                .find(|a| a.kind != AgentKind::Cpu)
                .unwrap()
                .handle
        }

        fn pools(&self, agent: u64) -> Vec<u64> {
            unsafe extern "C" fn push(pool: MemoryPool, data: *mut c_void) -> Status {
                // SAFETY: `data` is the Vec passed below.
                unsafe { (*data.cast::<Vec<u64>>()).push(pool.0) };
                HSA_STATUS_SUCCESS
            }
            let mut out = Vec::<u64>::new();
            // SAFETY: the callback casts `data` back to this Vec.
            let s = unsafe {
                hsa_amd_agent_iterate_memory_pools(Agent(agent), Some(push), (&raw mut out).cast())
            };
            assert_eq!(s, HSA_STATUS_SUCCESS);
            out
        }

        fn alloc(&self, pool: u64, size: usize) -> u64 {
            let mut p = std::ptr::null_mut();
            // SAFETY: `p` is a valid out-pointer.
            let s = unsafe { hsa_amd_memory_pool_allocate(MemoryPool(pool), size, 0, &mut p) };
            assert_eq!(s, HSA_STATUS_SUCCESS);
            p as u64
        }
    }

    fn info<T: Default>(pool: u64, attribute: u32) -> T {
        let mut v = T::default();
        // SAFETY: every attribute asked below has C type T.
        let s = unsafe {
            hsa_amd_memory_pool_get_info(MemoryPool(pool), attribute, (&raw mut v).cast())
        };
        assert_eq!(s, HSA_STATUS_SUCCESS, "attribute {attribute}");
        v
    }

    #[test]
    fn each_agent_has_rocr_s_pools_in_rocr_s_order() {
        let specs = AgentSpec::parse_list("mi300x,mi210").unwrap();
        let rt = Runtime::new(&specs);
        let shape = |agent: u64| -> Vec<(u32, u32, bool)> {
            rt.pools
                .pools_of(agent)
                .map(|p| (p.segment, p.global_flags, p.alloc_allowed))
                .collect()
        };
        assert_eq!(
            shape(rt.agents[0].handle),
            [
                (
                    HSA_AMD_SEGMENT_GLOBAL,
                    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                        | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT,
                    true
                ),
                (
                    HSA_AMD_SEGMENT_GLOBAL,
                    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                    true
                ),
            ]
        );
        for gpu in &rt.agents[1..] {
            assert_eq!(
                shape(gpu.handle),
                [
                    (
                        HSA_AMD_SEGMENT_GLOBAL,
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
                        true
                    ),
                    (
                        HSA_AMD_SEGMENT_GLOBAL,
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                        true
                    ),
                    (HSA_AMD_SEGMENT_GROUP, 0, false),
                ]
            );
        }
        let mi210_vram = rt.pools.pools_of(rt.agents[2].handle).next().unwrap();
        assert_eq!(mi210_vram.size, 64 << 30);
        let mut handles: Vec<u64> = rt.pools.pools.iter().map(|p| p.handle).collect();
        handles.sort_unstable();
        handles.dedup();
        assert_eq!(handles.len(), 2 + 3 + 3);
        assert!(handles.iter().all(|&h| h != 0));
    }

    #[test]
    fn regions_are_the_pools_and_report_rocr_s_region_attributes() {
        let init = Init::new();
        unsafe extern "C" fn push(region: Region, data: *mut c_void) -> Status {
            // SAFETY: `data` is the Vec passed below.
            unsafe { (*data.cast::<Vec<u64>>()).push(region.0) };
            HSA_STATUS_SUCCESS
        }
        let regions = |agent: u64| {
            let mut out = Vec::<u64>::new();
            // SAFETY: the callback casts `data` back to this Vec.
            let s = unsafe {
                hsa_agent_iterate_regions(Agent(agent), Some(push), (&raw mut out).cast())
            };
            assert_eq!(s, HSA_STATUS_SUCCESS);
            out
        };
        let region_info = |region: u64, attribute: u32| -> u64 {
            let mut v = 0u64;
            // SAFETY: `v` holds any attribute's C type (at most 8 bytes).
            let s = unsafe { hsa_region_get_info(Region(region), attribute, (&raw mut v).cast()) };
            assert_eq!(s, HSA_STATUS_SUCCESS, "attribute {attribute}");
            v
        };
        let (cpu, gpu) = (regions(init.cpu()), regions(init.gpu()));
        assert_eq!(cpu, init.pools(init.cpu()));
        assert_eq!(gpu, init.pools(init.gpu()));
        // (segment, global flags, runtime allocation allowed) per region,
        // as ROCr's `MemoryRegion::GetInfo` reports them.
        let shape = |r: u64| {
            (
                region_info(r, HSA_REGION_INFO_SEGMENT) as u32,
                region_info(r, HSA_REGION_INFO_GLOBAL_FLAGS) as u32,
                region_info(r, HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED) as u8,
            )
        };
        let fine = HSA_REGION_GLOBAL_FLAG_FINE_GRAINED;
        assert_eq!(
            shape(cpu[0]),
            (
                HSA_REGION_SEGMENT_GLOBAL,
                fine | HSA_REGION_GLOBAL_FLAG_KERNARG,
                1
            )
        );
        let coarse = HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED;
        assert_eq!(shape(cpu[1]), (HSA_REGION_SEGMENT_GLOBAL, coarse, 1));
        assert_eq!(shape(gpu[0]), (HSA_REGION_SEGMENT_GLOBAL, coarse, 1));
        assert_eq!(shape(gpu[1]), (HSA_REGION_SEGMENT_GLOBAL, fine, 1));
        assert_eq!(shape(gpu[2]), (HSA_REGION_SEGMENT_GROUP, 0, 0));
        assert_eq!(
            region_info(cpu[0], HSA_REGION_INFO_RUNTIME_ALLOC_GRANULE),
            PAGE
        );
        assert_eq!(
            region_info(cpu[0], HSA_REGION_INFO_RUNTIME_ALLOC_ALIGNMENT),
            PAGE
        );
        assert_eq!(
            region_info(gpu[0], HSA_REGION_INFO_SIZE),
            info::<u64>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_SIZE)
        );
        assert_eq!(
            region_info(gpu[0], HSA_REGION_INFO_ALLOC_MAX_SIZE),
            info::<u64>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE)
        );
        let mut v = 0u64;
        // SAFETY: `v` is a valid out-pointer; the calls fail before writing.
        unsafe {
            assert_eq!(
                hsa_region_get_info(Region(1), HSA_REGION_INFO_SIZE, (&raw mut v).cast()),
                HSA_STATUS_ERROR_INVALID_REGION
            );
            assert_eq!(
                hsa_region_get_info(Region(cpu[0]), 3, (&raw mut v).cast()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_region_get_info(Region(cpu[0]), HSA_REGION_INFO_SIZE, std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_agent_iterate_regions(Agent(init.cpu()), None, std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_agent_iterate_regions(Agent(0xdead), Some(push), (&raw mut v).cast()),
                HSA_STATUS_ERROR_INVALID_AGENT
            );
        }
    }

    #[test]
    fn pool_info_reports_each_attribute_in_its_c_type() {
        let init = Init::new();
        let cpu = init.pools(init.cpu());
        let gpu = init.pools(init.gpu());
        assert_eq!(
            info::<u32>(cpu[0], HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS),
            HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
        );
        assert!(info::<bool>(
            cpu[0],
            HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL
        ));
        assert!(!info::<bool>(
            gpu[0],
            HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL
        ));
        assert_eq!(
            info::<u32>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_SEGMENT),
            HSA_AMD_SEGMENT_GLOBAL
        );
        assert_eq!(
            info::<u32>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS),
            HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
        );
        assert_eq!(
            info::<u64>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE),
            PAGE
        );
        assert_eq!(
            info::<u64>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT),
            PAGE
        );
        assert!(info::<bool>(
            gpu[0],
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED
        ));
        assert_eq!(
            info::<u64>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE),
            info::<u64>(gpu[0], HSA_AMD_MEMORY_POOL_INFO_SIZE)
        );
        assert_eq!(
            info::<u32>(gpu[2], HSA_AMD_MEMORY_POOL_INFO_SEGMENT),
            HSA_AMD_SEGMENT_GROUP
        );
        assert_eq!(info::<u64>(gpu[2], HSA_AMD_MEMORY_POOL_INFO_SIZE), 64 << 10);
        assert!(!info::<bool>(
            gpu[2],
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED
        ));
        assert_eq!(
            info::<u64>(gpu[2], HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE),
            0
        );

        let mut v = 0u64;
        // SAFETY: `v` is valid for any attribute asked.
        unsafe {
            let out = (&raw mut v).cast();
            assert_eq!(
                hsa_amd_memory_pool_get_info(MemoryPool(gpu[0]), 99, out),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_amd_memory_pool_get_info(MemoryPool(1), HSA_AMD_MEMORY_POOL_INFO_SIZE, out),
                HSA_STATUS_ERROR_INVALID_MEMORY_POOL
            );
            assert_eq!(
                hsa_amd_agent_iterate_memory_pools(Agent(7), None, std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
        }
    }

    #[test]
    fn allocations_are_device_memory_rounded_to_the_granule() {
        let init = Init::new();
        let gpu = init.pools(init.gpu());
        let p = init.alloc(gpu[0], 100);
        assert_eq!(p % PAGE, 0);
        assert_eq!(init.0.pools.allocation_len(p), Some(PAGE));
        assert!(init.0.memory.access().check(p, PAGE).is_ok());
        assert!(init.0.memory.access().check(p, PAGE + 1).is_err());

        let (cpu, gpu_agent) = (Agent(init.cpu()), Agent(init.gpu()));
        let both = [cpu, gpu_agent];
        // SAFETY: valid agent lists and pointers throughout.
        unsafe {
            let ptr = p as *const c_void;
            assert_eq!(
                hsa_amd_agents_allow_access(2, both.as_ptr(), std::ptr::null(), ptr),
                HSA_STATUS_SUCCESS
            );
            let inside = (p + 8) as *const c_void;
            assert_eq!(
                hsa_amd_agents_allow_access(2, both.as_ptr(), std::ptr::null(), inside),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
            let bad = [Agent(3)];
            assert_eq!(
                hsa_amd_agents_allow_access(1, bad.as_ptr(), std::ptr::null(), ptr),
                HSA_STATUS_ERROR_INVALID_AGENT
            );
            assert_eq!(
                hsa_amd_agents_allow_access(0, both.as_ptr(), std::ptr::null(), ptr),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );

            assert_eq!(
                hsa_amd_memory_pool_free(p as *mut c_void),
                HSA_STATUS_SUCCESS
            );
            assert!(init.0.memory.access().check(p, 1).is_err());
            assert_eq!(
                hsa_amd_memory_pool_free(p as *mut c_void),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
            assert_eq!(
                hsa_amd_memory_pool_free(std::ptr::null_mut()),
                HSA_STATUS_SUCCESS
            );

            let mut out = std::ptr::null_mut();
            assert_eq!(
                hsa_amd_memory_pool_allocate(MemoryPool(gpu[0]), 0, 0, &mut out),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_amd_memory_pool_allocate(MemoryPool(gpu[0]), 8, 0, std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_amd_memory_pool_allocate(MemoryPool(gpu[2]), 8, 0, &mut out),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
            assert_eq!(
                hsa_amd_memory_pool_allocate(MemoryPool(1), 8, 0, &mut out),
                HSA_STATUS_ERROR_INVALID_MEMORY_POOL
            );
            assert_eq!(
                hsa_amd_memory_pool_allocate(MemoryPool(gpu[0]), usize::MAX, 0, &mut out),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
        }
    }

    #[test]
    fn copies_move_bytes_between_host_and_device_and_refuse_overruns() {
        let init = Init::new();
        let cpu = init.pools(init.cpu());
        let dev = init.alloc(cpu[0], 64);
        let host: Vec<u8> = (0..64).collect();
        let mut back = vec![0u8; 64];
        // SAFETY: `host` and `back` are valid for 64 bytes; `dev` is a
        // 4096-byte allocation.
        unsafe {
            let d = dev as *mut c_void;
            assert_eq!(
                hsa_memory_copy(d.byte_add(3), host.as_ptr().cast(), 61),
                HSA_STATUS_SUCCESS
            );
            assert_eq!(
                hsa_memory_copy(back.as_mut_ptr().cast(), d.byte_add(3), 61),
                HSA_STATUS_SUCCESS
            );
            assert_eq!(back[..61], host[..61]);
            // Overlapping, within device memory.
            assert_eq!(
                hsa_memory_copy(d.byte_add(4), d.byte_add(3), 61),
                HSA_STATUS_SUCCESS
            );
            assert_eq!(
                hsa_memory_copy(back.as_mut_ptr().cast(), d.byte_add(4), 61),
                HSA_STATUS_SUCCESS
            );
            assert_eq!(back[..61], host[..61]);
            assert_eq!(
                hsa_memory_copy(d.byte_add(4050), host.as_ptr().cast(), 64),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_memory_copy(d, std::ptr::null(), 1),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_memory_copy(d, host.as_ptr().cast(), 0),
                HSA_STATUS_SUCCESS
            );
            assert_eq!(hsa_amd_memory_pool_free(d), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn async_copy_waits_for_its_dependency_then_signals_completion() {
        let init = Init::new();
        let (cpu, gpu) = (Agent(init.cpu()), Agent(init.gpu()));
        let vram = init.pools(gpu.0)[0];
        let dst = init.alloc(vram, 4096);
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let dep = init.signal(1);
        let done = init.signal(1);
        // SAFETY: `src` outlives the copy (we wait for `done` below); the
        // signal list holds one handle.
        let s = unsafe {
            hsa_amd_memory_async_copy(
                dst as *mut c_void,
                gpu,
                src.as_ptr().cast(),
                cpu,
                4096,
                1,
                &dep,
                done,
            )
        };
        assert_eq!(s, HSA_STATUS_SUCCESS);

        // SAFETY: plain C ABI calls on live signals.
        unsafe {
            // Not before the dependency is released.
            let early = hsa_signal_wait_scacquire(done, SignalCondition::EQ.0, 0, 20_000_000, 0);
            assert_eq!(early, 1);
            assert_eq!(init.0.memory.access().load_u8(dst + 1), 0);

            let releaser = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                hsa_signal_store_screlease(dep, 0);
            });
            let seen = hsa_signal_wait_scacquire(done, SignalCondition::EQ.0, 0, 10_000_000_000, 0);
            assert_eq!(seen, 0);
            releaser.join().unwrap();
            assert_eq!(hsa_signal_load_scacquire(done), 0);
        }
        let mut out = vec![0u8; 4096];
        init.0.memory.read_bytes(dst, &mut out).unwrap();
        assert_eq!(out, src);

        // SAFETY: plain C ABI calls; the list pointer is valid for one.
        unsafe {
            let null = std::ptr::null();
            let d = dst as *mut c_void;
            let s = src.as_ptr().cast();
            assert_eq!(
                hsa_amd_memory_async_copy(d, gpu, s, cpu, 8, 1, null, done),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_amd_memory_async_copy(d, Agent(9), s, cpu, 8, 0, null, done),
                HSA_STATUS_ERROR_INVALID_AGENT
            );
            let buffer = SignalHandle(dst);
            assert_eq!(
                hsa_amd_memory_async_copy(d, gpu, s, cpu, 8, 0, null, buffer),
                HSA_STATUS_ERROR_INVALID_SIGNAL
            );
            assert_eq!(
                hsa_amd_memory_async_copy(d, gpu, s, cpu, 8, 0, null, SignalHandle::NULL),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(hsa_signal_destroy(dep), HSA_STATUS_SUCCESS);
            assert_eq!(hsa_signal_destroy(done), HSA_STATUS_SUCCESS);
            assert_eq!(hsa_amd_memory_pool_free(d), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn shut_down_joins_a_copy_whose_dependency_never_comes() {
        let specs = AgentSpec::parse_list("mi300x").unwrap();
        let rt = Arc::new(Runtime::new(&specs));
        let dep = signal::create(&rt, 1).unwrap();
        let done = signal::create(&rt, 1).unwrap();
        let buf = rt
            .pools
            .allocate(&rt.memory, rt.pools.pools[2].handle, 64)
            .unwrap();
        let worker_rt = rt.clone();
        let started = rt.pools.spawn_copy(move || {
            let _ = wait_for_zero(&worker_rt, SignalHandle(dep));
        });
        assert_eq!(started, HSA_STATUS_SUCCESS);
        let t = Instant::now();
        rt.pools.shut_down(&rt.memory);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(signal::value(&rt, done), Some(1));
        assert!(rt.memory.access().check(buf, 1).is_err());
    }
}
