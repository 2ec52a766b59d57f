//! An in-process fake of `libhsa-runtime64`, so the safe wrappers can be
//! unit-tested without a GPU.
//!
//! [`api`] fills every field of [`Api`] with a function of exactly the C
//! signature ROCr exports; [`runtime`] wraps it as a [`Runtime`]. The fake
//! models one machine: a CPU agent, then one MI300X-like `gfx942` GPU agent,
//! their memory pools, user signals, AQL queues and an executable loader
//! that reads real code objects with the shared reader.
//!
//! What it mimics, and where it stops:
//!
//! - Status values are ROCr's, not merely the spec's: each check below names
//!   the ROCr source it follows (`ROCm/ROCR-Runtime`, `runtime/hsa-runtime/`,
//!   read at commit c7785a6d). Every function that returns a status except
//!   `hsa_init` and `hsa_status_string` fails with
//!   `HSA_STATUS_ERROR_NOT_INITIALIZED` while the init count is zero, as
//!   ROCr's `IS_OPEN()` does. Unlike ROCr, the last `hsa_shut_down` does not
//!   tear anything down: tests run in parallel and share this one "runtime".
//! - Memory is host memory (`std::alloc`, 4096-byte aligned), poisoned with
//!   [`POISON`] so a test never reads zeros by accident.
//! - Nothing executes packets. A test plays the packet processor with
//!   [`process`], and raises queue errors with [`fault`].
//! - `hsa_amd_memory_async_copy` copies on a helper thread after
//!   [`ASYNC_COPY_DELAY`], so callers must really wait for the signal.
//! - Misuse that ROCr would turn into undefined behaviour or an abort (a
//!   destroyed signal, an unknown queue passed to a function that returns no
//!   status) is logged per thread in [`misuse`] and otherwise ignored: a
//!   panic must not cross the C boundary.
//!
//! Tests inspect and steer it per thread: [`calls`] is the order of `hsa_*`
//! calls this thread made, [`set_fail`] makes the next call of a function
//! fail with a chosen status. Libtest runs each test on its own thread; with
//! `--test-threads=1` tests share the main thread, so a test that reads
//! [`calls`] starts with [`reset_thread`].
//!
//! Locks: one registry per kind of object. A thread holds at most one
//! registry lock at a time, except that a signal waiter holds `WAKE` while it
//! reads the signal (`WAKE` → `SIGNALS`); writers release `SIGNALS` before
//! taking `WAKE` to notify, so no cycle exists.

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicI64, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::amd_signal::{AmdSignal, AmdSignalKind};
use aqueduct_abi::aql::{AmdPacketType, AqlPacket, PACKET_SIZE, PacketHeader, PacketType};
use aqueduct_abi::code_object::{CodeObject, FeatureSetting, Kernel, Target};
use aqueduct_abi::hsa::{HsaQueue, QueueFeatures, QueueType, SignalCondition, SignalHandle};
use aqueduct_abi::kernel_descriptor::KernelDescriptor;

use super::ffi::{
    self, Agent, AgentCallback, Api, CodeObjectReader, Executable, ExecutableSymbol, Isa,
    IsaCallback, LoadedCodeObject, MemoryPool, PoolCallback, QueueErrorCallback, Status,
};
use crate::hsa::Runtime;

// ===========================================================================
// Status values ffi.rs does not declare (hsa.h / hsa_ext_amd.h)
// ===========================================================================

pub(crate) const HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: Status = 0x1002;
pub(crate) const HSA_STATUS_ERROR_INVALID_ALLOCATION: Status = 0x1003;
pub(crate) const HSA_STATUS_ERROR_INVALID_AGENT: Status = 0x1004;
pub(crate) const HSA_STATUS_ERROR_INVALID_SIGNAL: Status = 0x1006;
pub(crate) const HSA_STATUS_ERROR_INVALID_QUEUE: Status = 0x1007;
pub(crate) const HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: Status = 0x100D;
pub(crate) const HSA_STATUS_ERROR_INVALID_ISA: Status = 0x100F;
pub(crate) const HSA_STATUS_ERROR_INVALID_CODE_OBJECT: Status = 0x1010;
pub(crate) const HSA_STATUS_ERROR_INVALID_EXECUTABLE: Status = 0x1011;
pub(crate) const HSA_STATUS_ERROR_FROZEN_EXECUTABLE: Status = 0x1012;
pub(crate) const HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: Status = 0x1013;
pub(crate) const HSA_STATUS_ERROR_EXCEPTION: Status = 0x1016;
pub(crate) const HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: Status = 0x1019;
pub(crate) const HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: Status = 0x1021;
/// `hsa_ext_amd.h` numbers its additions from 40, not from 0x1000.
pub(crate) const HSA_STATUS_ERROR_INVALID_MEMORY_POOL: Status = 40;
pub(crate) const HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: Status = 41;
pub(crate) const HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: Status = 42;
pub(crate) const HSA_STATUS_ERROR_MEMORY_FAULT: Status = 43;

use ffi::{
    HSA_STATUS_ERROR, HSA_STATUS_ERROR_INVALID_ARGUMENT, HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES, HSA_STATUS_INFO_BREAK, HSA_STATUS_SUCCESS,
};

/// `hsa_status_string`'s texts, copied from ROCr (`core/runtime/hsa.cpp`,
/// `hsa_status_string`) for every status the fake returns or a test raises.
const STATUS_TEXT: &[(Status, &CStr)] = &[
    (
        HSA_STATUS_SUCCESS,
        c"HSA_STATUS_SUCCESS: The function has been executed successfully.",
    ),
    (
        HSA_STATUS_INFO_BREAK,
        c"HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by the application before completing.",
    ),
    (
        HSA_STATUS_ERROR,
        c"HSA_STATUS_ERROR: A generic error has occurred.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        c"HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_QUEUE_CREATION,
        c"HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue creation is not valid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        c"HSA_STATUS_ERROR_INVALID_ALLOCATION: The requested allocation is not valid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_AGENT,
        c"HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_SIGNAL,
        c"HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_QUEUE,
        c"HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.",
    ),
    (
        HSA_STATUS_ERROR_OUT_OF_RESOURCES,
        c"HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events.",
    ),
    (
        HSA_STATUS_ERROR_NOT_INITIALIZED,
        c"HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero.",
    ),
    (
        HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
        c"HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: The arguments passed to a functions are not compatible.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_ISA,
        c"HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
        c"HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        c"HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid.",
    ),
    (
        HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
        c"HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
        c"HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: There is no symbol with the given name.",
    ),
    (
        HSA_STATUS_ERROR_EXCEPTION,
        c"HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL,
        c"HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
        c"HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object reader is invalid.",
    ),
    (
        HSA_STATUS_ERROR_INVALID_MEMORY_POOL,
        c"HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid.",
    ),
    (
        HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
        c"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address.",
    ),
    (
        HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
        c"HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: The agent attempted to execute an illegal shader instruction.",
    ),
    (
        HSA_STATUS_ERROR_MEMORY_FAULT,
        c"HSA_STATUS_ERROR_MEMORY_FAULT: Agent attempted to access an inaccessible address.",
    ),
];

// ===========================================================================
// The fake machine
// ===========================================================================

/// The GPU agent's `HSA_AGENT_INFO_NAME`.
pub(crate) const GPU_NAME: &str = "gfx942";
/// The GPU's one ISA (`HSA_ISA_INFO_NAME`), as ROCr names an MI300X's.
pub(crate) const GPU_ISA: &str = "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-";
/// The GPU's `HSA_AMD_AGENT_INFO_PRODUCT_NAME`.
pub(crate) const GPU_PRODUCT: &str = "AMD Instinct MI300X";
/// The GPU's `HSA_AMD_AGENT_INFO_UUID`: "GPU-" and 16 hex digits (char[21]
/// with the NUL).
pub(crate) const GPU_UUID: &str = "GPU-0123456789abcdef";
/// The CPU's `HSA_AGENT_INFO_NAME` and `HSA_AMD_AGENT_INFO_PRODUCT_NAME`
/// (ROCr reports the marketing name for both).
pub(crate) const CPU_NAME: &str = "AMD EPYC 9654 96-Core Processor";
/// ROCr hard-codes the CPU's vendor name (`amd_cpu_agent.cpp`).
pub(crate) const CPU_VENDOR: &str = "CPU";
/// ROCr's UUID for agents without one (`amd_cpu_agent.cpp`).
pub(crate) const CPU_UUID: &str = "CPU-XX";

pub(crate) const CPU_AGENT: Agent = Agent(0x1000);
pub(crate) const GPU_AGENT: Agent = Agent(0x2000);
pub(crate) const GPU_ISA_HANDLE: Isa = Isa(0x2001);

/// CPU: fine-grained system memory, where kernargs go.
pub(crate) const CPU_KERNARG_POOL: MemoryPool = MemoryPool(0x1100);
/// CPU: coarse-grained system memory.
pub(crate) const CPU_COARSE_POOL: MemoryPool = MemoryPool(0x1200);
/// GPU: VRAM, coarse-grained.
pub(crate) const GPU_VRAM_POOL: MemoryPool = MemoryPool(0x2100);
/// GPU: VRAM, fine-grained.
pub(crate) const GPU_FINE_POOL: MemoryPool = MemoryPool(0x2200);
/// GPU: the group segment (LDS); not allocatable by the runtime.
pub(crate) const GPU_GROUP_POOL: MemoryPool = MemoryPool(0x2300);

/// `HSA_AGENT_INFO_QUEUE_MIN_SIZE` / `_MAX_SIZE`, in packets (ROCr's values
/// for gfx9).
pub(crate) const QUEUE_MIN: u32 = 64;
pub(crate) const QUEUE_MAX: u32 = 131072;
/// Group segment (LDS) bytes per workgroup on gfx942 (the group pool's
/// SIZE).
pub(crate) const LDS: u32 = 65536;
/// VRAM size and largest single allocation of the GPU pools.
pub(crate) const VRAM: usize = 64 << 30;
/// System memory size and largest allocation of the CPU pools.
pub(crate) const SYSTEM_MEMORY: usize = 256 << 30;
/// Allocation granule and alignment of every allocatable pool (ROCr:
/// `kPageSize()`).
pub(crate) const PAGE: usize = 4096;
/// Fill of fresh pool memory.
pub(crate) const POISON: u8 = 0xA5;
/// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`: a tick is a nanosecond.
pub(crate) const TIMESTAMP_FREQUENCY: u64 = 1_000_000_000;
/// How long `hsa_amd_memory_async_copy` waits before it starts copying.
pub(crate) const ASYNC_COPY_DELAY: Duration = Duration::from_millis(5);
/// How long an async copy waits for its dependencies before giving up (it
/// then neither copies nor signals, like a hung engine).
const ASYNC_COPY_DEPENDENCY_LIMIT: Duration = Duration::from_secs(30);
/// Longest a signal waiter sleeps before re-reading the value, which packet
/// processors and device code change without notifying.
const WAIT_SLICE: Duration = Duration::from_millis(1);
/// The doorbell register value before anyone rang it.
const DOORBELL_NEVER_RUNG: u64 = u64::MAX;

/// One memory pool: the attributes `hsa_amd_memory_pool_get_info` reports,
/// following ROCr's `MemoryRegion::GetPoolInfo` (`amd_memory_region.cpp`):
/// the group pool reports zero flags, granule, alignment and maximum.
struct Pool {
    handle: MemoryPool,
    owner: Agent,
    segment: u32,
    global_flags: u32,
    size: usize,
    runtime_alloc_allowed: bool,
    granule: usize,
    alignment: usize,
    accessible_by_all: bool,
    alloc_max: usize,
}

const FINE: u32 = ffi::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
const COARSE: u32 = ffi::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
const KERNARG: u32 = ffi::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT;
const GLOBAL: u32 = ffi::HSA_AMD_SEGMENT_GLOBAL;
const GROUP: u32 = ffi::HSA_AMD_SEGMENT_GROUP;
const LDS_BYTES: usize = LDS as usize;

/// The pools, in iteration order per agent.
#[rustfmt::skip]
const POOLS: [Pool; 5] = [
    //   handle            owner      segment flags           size           alloc  granule align all    alloc_max
    pool(CPU_KERNARG_POOL, CPU_AGENT, GLOBAL, FINE | KERNARG, SYSTEM_MEMORY, true,  PAGE,   PAGE, true,  SYSTEM_MEMORY),
    pool(CPU_COARSE_POOL,  CPU_AGENT, GLOBAL, COARSE,         SYSTEM_MEMORY, true,  PAGE,   PAGE, true,  SYSTEM_MEMORY),
    pool(GPU_VRAM_POOL,    GPU_AGENT, GLOBAL, COARSE,         VRAM,          true,  PAGE,   PAGE, false, VRAM),
    pool(GPU_FINE_POOL,    GPU_AGENT, GLOBAL, FINE,           VRAM,          true,  PAGE,   PAGE, false, VRAM),
    pool(GPU_GROUP_POOL,   GPU_AGENT, GROUP,  0,              LDS_BYTES,     false, 0,      0,    false, 0),
];

#[allow(clippy::too_many_arguments)]
const fn pool(
    handle: MemoryPool,
    owner: Agent,
    segment: u32,
    global_flags: u32,
    size: usize,
    runtime_alloc_allowed: bool,
    granule: usize,
    alignment: usize,
    accessible_by_all: bool,
    alloc_max: usize,
) -> Pool {
    Pool {
        handle,
        owner,
        segment,
        global_flags,
        size,
        runtime_alloc_allowed,
        granule,
        alignment,
        accessible_by_all,
        alloc_max,
    }
}

fn find_pool(handle: MemoryPool) -> Option<&'static Pool> {
    POOLS.iter().find(|p| p.handle == handle)
}

fn is_agent(agent: Agent) -> bool {
    agent == CPU_AGENT || agent == GPU_AGENT
}

// Attributes ffi.rs does not declare, with their hsa.h / hsa_ext_amd.h values.
const HSA_SYSTEM_INFO_TIMESTAMP: u32 = 2;
const HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT: u32 = 4;
const HSA_SYSTEM_INFO_ENDIANNESS: u32 = 5;
const HSA_SYSTEM_INFO_MACHINE_MODEL: u32 = 6;
const HSA_AGENT_INFO_FEATURE: u32 = 2;
const HSA_AGENT_INFO_PROFILE: u32 = 4;
const HSA_AGENT_INFO_QUEUE_TYPE: u32 = 15;
const HSA_AGENT_INFO_ISA: u32 = 19;
const HSA_AGENT_INFO_VERSION_MAJOR: u32 = 21;
const HSA_AGENT_INFO_VERSION_MINOR: u32 = 22;
const HSA_EXECUTABLE_SYMBOL_INFO_TYPE: u32 = 0;
const HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH: u32 = 1;
const HSA_EXECUTABLE_SYMBOL_INFO_NAME: u32 = 2;
const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: u32 = 15;
const HSA_EXECUTABLE_SYMBOL_INFO_AGENT: u32 = 20;
// Enumerators written by those attributes.
const HSA_ENDIANNESS_LITTLE: u32 = 0;
const HSA_MACHINE_MODEL_LARGE: u32 = 1;
const HSA_PROFILE_BASE: u32 = 0;
const HSA_AGENT_FEATURE_KERNEL_DISPATCH: u32 = 1;
const HSA_SYMBOL_KIND_KERNEL: u32 = 1;
const HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR: u32 = 2;

/// An attribute value, written in its C type.
enum Info {
    U16(u16),
    U32(u32),
    U64(u64),
    Usize(usize),
    Bool(bool),
    U16x3([u16; 3]),
    U32x3([u32; 3]),
    /// A `char[]`: exactly these bytes.
    Bytes(Vec<u8>),
}

/// `text` as a `char[len]`, NUL-padded (and truncated to keep one NUL).
fn chars(text: &str, len: usize) -> Info {
    let mut bytes = vec![0u8; len];
    let n = text.len().min(len.saturating_sub(1));
    bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
    Info::Bytes(bytes)
}

impl Info {
    /// # Safety
    /// `value` must be valid for writes of this value's C type (any
    /// alignment).
    unsafe fn write_to(self, value: *mut c_void) {
        // SAFETY: (all arms) the caller guarantees `value` holds the C type
        // this variant stands for; unaligned writes need no alignment.
        unsafe {
            match self {
                Self::U16(v) => value.cast::<u16>().write_unaligned(v),
                Self::U32(v) => value.cast::<u32>().write_unaligned(v),
                Self::U64(v) => value.cast::<u64>().write_unaligned(v),
                Self::Usize(v) => value.cast::<usize>().write_unaligned(v),
                Self::Bool(v) => value.cast::<bool>().write_unaligned(v),
                Self::U16x3(v) => value.cast::<[u16; 3]>().write_unaligned(v),
                Self::U32x3(v) => value.cast::<[u32; 3]>().write_unaligned(v),
                Self::Bytes(v) => {
                    std::ptr::copy_nonoverlapping(v.as_ptr(), value.cast::<u8>(), v.len())
                }
            }
        }
    }
}

/// The shape every `*_get_info` function shares: count the call (and honour
/// a planned failure), refuse a null `value`, then write what `lookup`
/// answers or return its status.
///
/// # Safety
/// A non-null `value` must be valid for writes of the C type of the `Info`
/// `lookup` returns.
unsafe fn answer(
    call: &'static str,
    value: *mut c_void,
    lookup: impl FnOnce() -> Result<Info, Status>,
) -> Status {
    if let Some(status) = enter(call) {
        return status;
    }
    if value.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    match lookup() {
        Ok(info) => {
            // SAFETY: per this function's contract.
            unsafe { info.write_to(value) };
            HSA_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `hsa_agent_get_info`'s table. C types per hsa.h / hsa_ext_amd.h.
///
/// Deviation from ROCr: ROCr's CPU agent writes 0 for the kernel-agent
/// attributes (wavefront, workgroup, grid, queue limits; `CpuAgent::GetInfo`)
/// and its SIMD/wave counts; the fake refuses them with INVALID_ARGUMENT so
/// a wrapper that asks a CPU for GPU properties is caught.
fn agent_info(agent: Agent, attribute: u32) -> Result<Info, Status> {
    use Info::*;
    let gpu = match agent {
        GPU_AGENT => true,
        CPU_AGENT => false,
        _ => return Err(HSA_STATUS_ERROR_INVALID_AGENT),
    };
    Ok(match (attribute, gpu) {
        (ffi::HSA_AGENT_INFO_NAME, true) => chars(GPU_NAME, 64),
        (ffi::HSA_AGENT_INFO_NAME, false) => chars(CPU_NAME, 64),
        (ffi::HSA_AGENT_INFO_VENDOR_NAME, true) => chars("AMD", 64),
        (ffi::HSA_AGENT_INFO_VENDOR_NAME, false) => chars(CPU_VENDOR, 64),
        (HSA_AGENT_INFO_FEATURE, true) => U32(HSA_AGENT_FEATURE_KERNEL_DISPATCH),
        (HSA_AGENT_INFO_FEATURE, false) => U32(0),
        (HSA_AGENT_INFO_PROFILE, true) => U32(HSA_PROFILE_BASE),
        (HSA_AGENT_INFO_PROFILE, false) => U32(ffi::HSA_PROFILE_FULL),
        (HSA_AGENT_INFO_QUEUE_TYPE, _) => U32(QueueType::MULTI.0),
        (HSA_AGENT_INFO_ISA, true) => U64(GPU_ISA_HANDLE.0),
        (HSA_AGENT_INFO_ISA, false) => U64(0),
        (HSA_AGENT_INFO_VERSION_MAJOR | HSA_AGENT_INFO_VERSION_MINOR, _) => U16(1),
        (ffi::HSA_AGENT_INFO_NODE, true) => U32(1),
        (ffi::HSA_AGENT_INFO_NODE, false) => U32(0),
        (ffi::HSA_AGENT_INFO_DEVICE, true) => U32(ffi::HSA_DEVICE_TYPE_GPU),
        (ffi::HSA_AGENT_INFO_DEVICE, false) => U32(ffi::HSA_DEVICE_TYPE_CPU),
        (ffi::HSA_AGENT_INFO_WAVEFRONT_SIZE, true) => U32(64),
        (ffi::HSA_AGENT_INFO_WORKGROUP_MAX_DIM, true) => U16x3([1024; 3]),
        (ffi::HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, true) => U32(1024),
        // hsa_dim3_t: three uint32_t.
        (ffi::HSA_AGENT_INFO_GRID_MAX_DIM, true) => U32x3([u32::MAX; 3]),
        (ffi::HSA_AGENT_INFO_GRID_MAX_SIZE, true) => U32(u32::MAX),
        (ffi::HSA_AGENT_INFO_QUEUES_MAX, true) => U32(128),
        (ffi::HSA_AGENT_INFO_QUEUE_MIN_SIZE, true) => U32(QUEUE_MIN),
        (ffi::HSA_AGENT_INFO_QUEUE_MAX_SIZE, true) => U32(QUEUE_MAX),
        (ffi::HSA_AMD_AGENT_INFO_CHIP_ID, true) => U32(0x74a1),
        (ffi::HSA_AMD_AGENT_INFO_CHIP_ID, false) => U32(0),
        (ffi::HSA_AMD_AGENT_INFO_CACHELINE_SIZE, true) => U32(128),
        // ROCr hard-codes 64 for CPUs.
        (ffi::HSA_AMD_AGENT_INFO_CACHELINE_SIZE, false) => U32(64),
        (ffi::HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, true) => U32(304),
        (ffi::HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, false) => U32(96),
        (ffi::HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY, true) => U32(2100),
        (ffi::HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY, false) => U32(3700),
        // Bus 0xc1, device 0, function 0.
        (ffi::HSA_AMD_AGENT_INFO_BDFID, true) => U32(0xc100),
        (ffi::HSA_AMD_AGENT_INFO_BDFID, false) => U32(0),
        (ffi::HSA_AMD_AGENT_INFO_DOMAIN, _) => U32(0),
        (ffi::HSA_AMD_AGENT_INFO_PRODUCT_NAME, true) => chars(GPU_PRODUCT, 64),
        (ffi::HSA_AMD_AGENT_INFO_PRODUCT_NAME, false) => chars(CPU_NAME, 64),
        (ffi::HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU, true) => U32(32),
        (ffi::HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU, true) => U32(4),
        (ffi::HSA_AMD_AGENT_INFO_UUID, true) => chars(GPU_UUID, 21),
        // ROCr writes exactly sizeof("CPU-XX") bytes.
        (ffi::HSA_AMD_AGENT_INFO_UUID, false) => chars(CPU_UUID, CPU_UUID.len() + 1),
        // GPU-only attributes asked of the CPU (see above), and the rest.
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

fn pool_info(pool: &Pool, attribute: u32) -> Result<Info, Status> {
    use Info::*;
    Ok(match attribute {
        ffi::HSA_AMD_MEMORY_POOL_INFO_SEGMENT => U32(pool.segment),
        ffi::HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS => U32(pool.global_flags),
        ffi::HSA_AMD_MEMORY_POOL_INFO_SIZE => Usize(pool.size),
        ffi::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED => Bool(pool.runtime_alloc_allowed),
        ffi::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE => Usize(pool.granule),
        ffi::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT => Usize(pool.alignment),
        ffi::HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL => Bool(pool.accessible_by_all),
        ffi::HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE => Usize(pool.alloc_max),
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

// ===========================================================================
// Global state
// ===========================================================================

/// Locks a registry; a test that panicked while holding it does not make the
/// fake unusable for the others.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `hsa_init` references.
static INIT_COUNT: AtomicU32 = AtomicU32::new(0);

/// Zero of `HSA_SYSTEM_INFO_TIMESTAMP`.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Handles of executables, readers, symbols and loaded code objects.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0x10_0000);
/// `hsa_queue_t::id`: unique over the process's lifetime.
static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(0);

fn next_handle() -> u64 {
    NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed)
}

/// A live pool allocation.
struct Allocation {
    /// Bytes allocated (the request rounded up to the granule).
    len: usize,
    pool: MemoryPool,
    /// Agents granted access with `hsa_amd_agents_allow_access`.
    access: Vec<Agent>,
}

/// Pool allocations by start address.
static ALLOCATIONS: Mutex<BTreeMap<usize, Allocation>> = Mutex::new(BTreeMap::new());

/// A live signal, by the address of its `AmdSignal`.
struct SignalEntry {
    /// For a queue's doorbell: the address of its `AtomicU64` register.
    doorbell: Option<usize>,
}

static SIGNALS: Mutex<BTreeMap<usize, SignalEntry>> = Mutex::new(BTreeMap::new());

/// Held by a signal waiter while it checks the value; every change made
/// through the API takes it to notify.
static WAKE: Mutex<()> = Mutex::new(());
static WAKE_CV: Condvar = Condvar::new();

/// A live queue, by the address of its `AmdQueue`.
struct QueueEntry {
    ring: usize,
    ring_layout: Layout,
    doorbell_signal: usize,
    doorbell_register: usize,
    callback: Option<QueueErrorCallback>,
    data: usize,
}

static QUEUES: Mutex<BTreeMap<usize, QueueEntry>> = Mutex::new(BTreeMap::new());

/// A kernel symbol of a loaded code object.
struct Symbol {
    executable: u64,
    agent: Agent,
    /// `<kernel>.kd`, the name ROCr looks kernels up by.
    name: String,
    /// Address of the boxed descriptor copy (the KERNEL_OBJECT).
    descriptor: usize,
    kernarg_segment_size: u32,
    kernarg_segment_alignment: u32,
    group_segment_size: u32,
    private_segment_size: u32,
    dynamic_callstack: bool,
}

struct ExecutableEntry {
    frozen: bool,
}

struct Loader {
    readers: BTreeMap<u64, Vec<u8>>,
    executables: BTreeMap<u64, ExecutableEntry>,
    symbols: BTreeMap<u64, Symbol>,
}

static LOADER: Mutex<Loader> = Mutex::new(Loader {
    readers: BTreeMap::new(),
    executables: BTreeMap::new(),
    symbols: BTreeMap::new(),
});

// ===========================================================================
// Per-thread test controls
// ===========================================================================

thread_local! {
    static CALLS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static FAILURES: RefCell<BTreeMap<&'static str, Status>> = const { RefCell::new(BTreeMap::new()) };
    static MISUSE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The functions of [`Api`] that return no status, so [`set_fail`] cannot
/// make them fail.
const NO_STATUS: &[&str] = &[
    "hsa_signal_load_relaxed",
    "hsa_signal_load_scacquire",
    "hsa_signal_store_relaxed",
    "hsa_signal_store_screlease",
    "hsa_signal_add_relaxed",
    "hsa_signal_add_scacquire",
    "hsa_signal_add_screlease",
    "hsa_signal_add_scacq_screl",
    "hsa_signal_cas_relaxed",
    "hsa_signal_cas_scacquire",
    "hsa_signal_cas_screlease",
    "hsa_signal_cas_scacq_screl",
    "hsa_signal_wait_relaxed",
    "hsa_signal_wait_scacquire",
    "hsa_queue_load_read_index_scacquire",
    "hsa_queue_load_write_index_relaxed",
    "hsa_queue_add_write_index_scacq_screl",
    "hsa_queue_cas_write_index_scacq_screl",
];

/// The `hsa_*` functions this thread called, in order.
pub(crate) fn calls() -> Vec<String> {
    CALLS.with_borrow(Clone::clone)
}

pub(crate) fn clear_calls() {
    CALLS.with_borrow_mut(Vec::clear);
}

/// Makes this thread's next call of `name` return `status` without doing
/// anything. Panics for a name that is not a status-returning [`Api`]
/// function (a typo would otherwise make the test pass vacuously).
pub(crate) fn set_fail(name: &'static str, status: Status) {
    assert!(
        ffi::SYMBOLS.contains(&name) && !NO_STATUS.contains(&name),
        "{name} is not an HSA function that returns a status"
    );
    FAILURES.with_borrow_mut(|f| f.insert(name, status));
}

/// Misuse this thread committed that ROCr would not have reported (unknown
/// or destroyed handles passed to functions without a status).
pub(crate) fn misuse() -> Vec<String> {
    MISUSE.with_borrow(Clone::clone)
}

/// Clears this thread's call log, misuse log and pending failures.
pub(crate) fn reset_thread() {
    clear_calls();
    MISUSE.with_borrow_mut(Vec::clear);
    FAILURES.with_borrow_mut(BTreeMap::clear);
}

fn note_misuse(text: String) {
    MISUSE.with_borrow_mut(|m| m.push(text));
}

/// Logs a call; returns the status an injected failure asks for.
fn note_call(name: &'static str) -> Option<Status> {
    CALLS.with_borrow_mut(|c| c.push(name.to_string()));
    FAILURES.with_borrow_mut(|f| f.remove(name))
}

/// Entry of every status-returning function but `hsa_init` and
/// `hsa_status_string`: an injected failure, or NOT_INITIALIZED while the
/// init count is zero (ROCr's `IS_OPEN()`), ends the call early.
fn enter(name: &'static str) -> Option<Status> {
    note_call(name).or_else(|| {
        (INIT_COUNT.load(Ordering::Acquire) == 0).then_some(HSA_STATUS_ERROR_NOT_INITIALIZED)
    })
}

// ===========================================================================
// The function table
// ===========================================================================

/// Every [`Api`] function, faked.
pub(crate) fn api() -> Api {
    Api {
        hsa_init,
        hsa_shut_down,
        hsa_status_string,
        hsa_system_get_info,
        hsa_iterate_agents,
        hsa_agent_get_info,
        hsa_agent_iterate_isas,
        hsa_isa_get_info_alt,
        hsa_amd_agent_iterate_memory_pools,
        hsa_amd_memory_pool_get_info,
        hsa_amd_memory_pool_allocate,
        hsa_amd_memory_pool_free,
        hsa_amd_agents_allow_access,
        hsa_memory_copy,
        hsa_amd_memory_async_copy,
        hsa_signal_create,
        hsa_signal_destroy,
        hsa_signal_load_relaxed,
        hsa_signal_load_scacquire,
        hsa_signal_store_relaxed,
        hsa_signal_store_screlease,
        hsa_signal_add_relaxed,
        hsa_signal_add_scacquire,
        hsa_signal_add_screlease,
        hsa_signal_add_scacq_screl,
        hsa_signal_cas_relaxed,
        hsa_signal_cas_scacquire,
        hsa_signal_cas_screlease,
        hsa_signal_cas_scacq_screl,
        hsa_signal_wait_relaxed,
        hsa_signal_wait_scacquire,
        hsa_queue_create,
        hsa_queue_destroy,
        hsa_queue_load_read_index_scacquire,
        hsa_queue_load_write_index_relaxed,
        hsa_queue_add_write_index_scacq_screl,
        hsa_queue_cas_write_index_scacq_screl,
        hsa_executable_create_alt,
        hsa_executable_destroy,
        hsa_code_object_reader_create_from_memory,
        hsa_code_object_reader_destroy,
        hsa_executable_load_agent_code_object,
        hsa_executable_freeze,
        hsa_executable_get_symbol_by_name,
        hsa_executable_symbol_get_info,
    }
}

/// The fake as a loaded runtime.
pub(crate) fn runtime() -> Runtime {
    Runtime::from_api(api(), "fake-hsa")
}

// ===========================================================================
// Init, status strings, system
// ===========================================================================

unsafe extern "C" fn hsa_init() -> Status {
    if let Some(status) = note_call("hsa_init") {
        return status;
    }
    LazyLock::force(&EPOCH);
    INIT_COUNT.fetch_add(1, Ordering::AcqRel);
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_shut_down() -> Status {
    if let Some(status) = enter("hsa_shut_down") {
        return status;
    }
    match INIT_COUNT.try_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)) {
        Ok(_) => HSA_STATUS_SUCCESS,
        // Another thread's shut-down won the race for the last reference.
        Err(_) => HSA_STATUS_ERROR_NOT_INITIALIZED,
    }
}

/// Valid before `hsa_init`, as in ROCr; unknown statuses are INVALID_ARGUMENT.
unsafe extern "C" fn hsa_status_string(status: Status, text: *mut *const c_char) -> Status {
    if let Some(status) = note_call("hsa_status_string") {
        return status;
    }
    if text.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let Some((_, s)) = STATUS_TEXT.iter().find(|(code, _)| *code == status) else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    // SAFETY: `text` is non-null and, per the API, points to a `const char*`.
    unsafe { text.write_unaligned(s.as_ptr()) };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_system_get_info(attribute: u32, value: *mut c_void) -> Status {
    // SAFETY: `value` points to the attribute's C type (caller's contract).
    unsafe {
        answer("hsa_system_get_info", value, || {
            Ok(match attribute {
                ffi::HSA_SYSTEM_INFO_VERSION_MAJOR | ffi::HSA_SYSTEM_INFO_VERSION_MINOR => {
                    Info::U16(1)
                }
                HSA_SYSTEM_INFO_TIMESTAMP => Info::U64(timestamp()),
                ffi::HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY => Info::U64(TIMESTAMP_FREQUENCY),
                HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT => Info::U64(u64::MAX),
                HSA_SYSTEM_INFO_ENDIANNESS => Info::U32(HSA_ENDIANNESS_LITTLE),
                HSA_SYSTEM_INFO_MACHINE_MODEL => Info::U32(HSA_MACHINE_MODEL_LARGE),
                _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
            })
        })
    }
}

fn timestamp() -> u64 {
    u64::try_from(EPOCH.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

// ===========================================================================
// Agents and ISAs
// ===========================================================================

/// Calls `callback` for each item until it returns anything but SUCCESS,
/// and returns that (ROCr's iterate functions all behave so).
fn iterate<H: Copy>(
    items: impl IntoIterator<Item = H>,
    callback: unsafe extern "C" fn(H, *mut c_void) -> Status,
    data: *mut c_void,
) -> Status {
    for item in items {
        // SAFETY: the caller of the iterate function vouches for its
        // callback and data.
        let status = unsafe { callback(item, data) };
        if status != HSA_STATUS_SUCCESS {
            return status;
        }
    }
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_iterate_agents(callback: AgentCallback, data: *mut c_void) -> Status {
    if let Some(status) = enter("hsa_iterate_agents") {
        return status;
    }
    iterate([CPU_AGENT, GPU_AGENT], callback, data)
}

unsafe extern "C" fn hsa_agent_get_info(
    agent: Agent,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: `value` points to the attribute's C type (caller's contract,
    // per hsa.h).
    unsafe { answer("hsa_agent_get_info", value, || agent_info(agent, attribute)) }
}

/// ROCr (`hsa.cpp`, `hsa_agent_iterate_isas`) calls the callback once for
/// the agent's ISA and returns its status as is (INFO_BREAK included); an
/// agent without an ISA (the CPU) gives SUCCESS with no call.
unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: Agent,
    callback: IsaCallback,
    data: *mut c_void,
) -> Status {
    if let Some(status) = enter("hsa_agent_iterate_isas") {
        return status;
    }
    match agent {
        GPU_AGENT => iterate([GPU_ISA_HANDLE], callback, data),
        CPU_AGENT => HSA_STATUS_SUCCESS,
        _ => HSA_STATUS_ERROR_INVALID_AGENT,
    }
}

/// NAME_LENGTH counts the NUL, and NAME writes it (ROCr `isa.cpp`,
/// `Isa::GetInfo`).
unsafe extern "C" fn hsa_isa_get_info_alt(isa: Isa, attribute: u32, value: *mut c_void) -> Status {
    // SAFETY: `value` points to the attribute's C type (caller's contract).
    unsafe {
        answer("hsa_isa_get_info_alt", value, || {
            if isa != GPU_ISA_HANDLE {
                return Err(HSA_STATUS_ERROR_INVALID_ISA);
            }
            Ok(match attribute {
                ffi::HSA_ISA_INFO_NAME_LENGTH => Info::U32(GPU_ISA.len() as u32 + 1),
                ffi::HSA_ISA_INFO_NAME => chars(GPU_ISA, GPU_ISA.len() + 1),
                _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
            })
        })
    }
}

// ===========================================================================
// Memory
// ===========================================================================

unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: Agent,
    callback: PoolCallback,
    data: *mut c_void,
) -> Status {
    if let Some(status) = enter("hsa_amd_agent_iterate_memory_pools") {
        return status;
    }
    if !is_agent(agent) {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    let pools = POOLS.iter().filter(|p| p.owner == agent).map(|p| p.handle);
    iterate(pools, callback, data)
}

unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    pool: MemoryPool,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: `value` points to the attribute's C type (caller's contract,
    // per hsa_ext_amd.h).
    unsafe {
        answer("hsa_amd_memory_pool_get_info", value, || {
            let pool = find_pool(pool).ok_or(HSA_STATUS_ERROR_INVALID_MEMORY_POOL)?;
            pool_info(pool, attribute)
        })
    }
}

/// Checks in ROCr's order (`hsa_ext_amd.cpp` `hsa_amd_memory_pool_allocate`,
/// then `amd_memory_region.cpp` `MemoryRegion::AllocateImpl`): size 0 or a
/// null out-pointer is INVALID_ARGUMENT, an unknown pool
/// INVALID_MEMORY_POOL, a pool that is not global memory (the group pool)
/// or a size above the pool's maximum INVALID_ALLOCATION; the size is then
/// rounded up to the page. Flags are ignored.
unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    pool: MemoryPool,
    size: usize,
    _flags: u32,
    ptr: *mut *mut c_void,
) -> Status {
    if let Some(status) = enter("hsa_amd_memory_pool_allocate") {
        return status;
    }
    if size == 0 || ptr.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let Some(pool) = find_pool(pool) else {
        return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
    };
    if pool.segment != ffi::HSA_AMD_SEGMENT_GLOBAL || size > pool.alloc_max {
        return HSA_STATUS_ERROR_INVALID_ALLOCATION;
    }
    let len = size.div_ceil(PAGE) * PAGE;
    let Ok(layout) = Layout::from_size_align(len, PAGE) else {
        return HSA_STATUS_ERROR_INVALID_ALLOCATION;
    };
    // SAFETY: `layout` has a non-zero size.
    let memory = unsafe { alloc(layout) };
    if memory.is_null() {
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    // SAFETY: `memory` was just allocated with `len` bytes.
    unsafe { memory.write_bytes(POISON, len) };
    lock(&ALLOCATIONS).insert(
        memory as usize,
        Allocation {
            len,
            pool: pool.handle,
            access: Vec::new(),
        },
    );
    // SAFETY: `ptr` is non-null and points to a `void*` (caller's contract).
    unsafe { ptr.write_unaligned(memory.cast()) };
    HSA_STATUS_SUCCESS
}

/// ROCr (`hsa.cpp` `hsa_memory_free`, `runtime.cpp` `Runtime::FreeMemory`):
/// null is SUCCESS; a pointer that does not start a live allocation is
/// INVALID_ALLOCATION.
unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> Status {
    if let Some(status) = enter("hsa_amd_memory_pool_free") {
        return status;
    }
    if ptr.is_null() {
        return HSA_STATUS_SUCCESS;
    }
    let Some(allocation) = lock(&ALLOCATIONS).remove(&(ptr as usize)) else {
        return HSA_STATUS_ERROR_INVALID_ALLOCATION;
    };
    // SAFETY: the registry held `ptr` as a live allocation made with this
    // layout (checked when it was made); it is unregistered now, so it is
    // freed once.
    unsafe {
        dealloc(
            ptr.cast(),
            Layout::from_size_align_unchecked(allocation.len, PAGE),
        )
    };
    HSA_STATUS_SUCCESS
}

/// ROCr (`hsa_ext_amd.cpp` `hsa_amd_agents_allow_access`): no agents, a
/// null agent list, non-null `flags` (reserved) or a null pointer is
/// INVALID_ARGUMENT. A pointer that does not start a pool allocation is
/// INVALID_ALLOCATION (`Runtime::AllowAccess` falls through to
/// `VMemoryMapAllowAccess`, which finds no mapping); an unknown agent is
/// INVALID_AGENT.
unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const Agent,
    flags: *const u32,
    ptr: *const c_void,
) -> Status {
    if let Some(status) = enter("hsa_amd_agents_allow_access") {
        return status;
    }
    if num_agents == 0 || agents.is_null() || !flags.is_null() || ptr.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: `agents` is non-null and holds `num_agents` handles (caller's
    // contract).
    let agents = unsafe { std::slice::from_raw_parts(agents, num_agents as usize) };
    let mut allocations = lock(&ALLOCATIONS);
    let Some(allocation) = allocations.get_mut(&(ptr as usize)) else {
        return HSA_STATUS_ERROR_INVALID_ALLOCATION;
    };
    if !agents.iter().all(|&a| is_agent(a)) {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    for &agent in agents {
        if !allocation.access.contains(&agent) {
            allocation.access.push(agent);
        }
    }
    HSA_STATUS_SUCCESS
}

/// ROCr copies between any host pointers with `memcpy` (`runtime.cpp`
/// `Runtime::CopyMemory`); null is INVALID_ARGUMENT and size 0 SUCCESS
/// (`hsa.cpp`). Overlap is allowed here.
unsafe extern "C" fn hsa_memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> Status {
    if let Some(status) = enter("hsa_memory_copy") {
        return status;
    }
    if dst.is_null() || src.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: both ranges are valid for `size` bytes (caller's contract).
    unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
    HSA_STATUS_SUCCESS
}

/// Checks as ROCr (`hsa_ext_amd.cpp` `hsa_amd_memory_async_copy`): null
/// pointers, a dependency count that disagrees with the list, or a null
/// signal handle is INVALID_ARGUMENT; an unknown agent INVALID_AGENT; an
/// unknown signal INVALID_SIGNAL. Like ROCr, a zero-size copy returns
/// SUCCESS and never signals `completion`.
///
/// The copy runs on a helper thread: after [`ASYNC_COPY_DELAY`] it waits for
/// every dependency to read 0, copies, then decrements `completion` with
/// release semantics, so a waiter that sees the decrement sees the bytes.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const SignalHandle,
    completion: SignalHandle,
) -> Status {
    if let Some(status) = enter("hsa_amd_memory_async_copy") {
        return status;
    }
    if dst.is_null() || src.is_null() || (num_dep_signals == 0) != dep_signals.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if !is_agent(dst_agent) || !is_agent(src_agent) {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    let deps = if num_dep_signals == 0 {
        Vec::new()
    } else {
        // SAFETY: non-null and holding `num_dep_signals` handles (caller's
        // contract).
        unsafe { std::slice::from_raw_parts(dep_signals, num_dep_signals as usize) }.to_vec()
    };
    for &signal in deps.iter().chain([&completion]) {
        if let Err(status) = check_user_signal(signal) {
            return status;
        }
    }
    if size == 0 {
        return HSA_STATUS_SUCCESS;
    }
    let (dst, src) = (dst as usize, src as usize);
    let copy = move || {
        std::thread::sleep(ASYNC_COPY_DELAY);
        let limit = ASYNC_COPY_DEPENDENCY_LIMIT.as_nanos() as u64;
        for &dep in &deps {
            let value = wait_signal(
                "hsa_amd_memory_async_copy",
                dep,
                SignalCondition::EQ.0,
                0,
                limit,
                Ordering::Acquire,
            );
            if value != Some(0) {
                return;
            }
        }
        // SAFETY: the caller of hsa_amd_memory_async_copy keeps both ranges
        // valid for `size` bytes until `completion` is signalled, which
        // happens only below.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
        signal_add(
            "hsa_amd_memory_async_copy",
            completion,
            -1,
            Ordering::Release,
        );
    };
    match std::thread::Builder::new()
        .name("fake-hsa-copy".into())
        .spawn(copy)
    {
        Ok(_) => HSA_STATUS_SUCCESS,
        Err(_) => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    }
}

/// Whether `ptr` is the start of a live pool allocation.
pub(crate) fn is_live(ptr: *const c_void) -> bool {
    lock(&ALLOCATIONS).contains_key(&(ptr as usize))
}

/// The start and length of the live pool allocation holding `ptr`.
pub(crate) fn live_bytes_containing(ptr: *const c_void) -> Option<(usize, usize)> {
    let at = ptr as usize;
    let allocations = lock(&ALLOCATIONS);
    let (&start, allocation) = allocations.range(..=at).next_back()?;
    (at - start < allocation.len).then_some((start, allocation.len))
}

/// The pool a live allocation came from.
pub(crate) fn pool_of(ptr: *const c_void) -> Option<MemoryPool> {
    lock(&ALLOCATIONS).get(&(ptr as usize)).map(|a| a.pool)
}

/// The agents `hsa_amd_agents_allow_access` granted access to a live
/// allocation, in the order first granted.
pub(crate) fn allowed_agents(ptr: *const c_void) -> Option<Vec<Agent>> {
    lock(&ALLOCATIONS)
        .get(&(ptr as usize))
        .map(|a| a.access.clone())
}

// ===========================================================================
// Signals
// ===========================================================================

/// What a live signal handle names.
enum SignalRef<'a> {
    /// A user signal's value.
    User(&'a AtomicI64),
    /// A doorbell signal's register.
    Doorbell(&'a AtomicU64),
}

/// Runs `op` on the signal `handle` names while the registry guarantees it
/// stays alive; `None` (and a misuse note) for a handle that names none.
fn with_signal<R>(
    call: &'static str,
    handle: SignalHandle,
    op: impl FnOnce(SignalRef<'_>) -> R,
) -> Option<R> {
    let signals = lock(&SIGNALS);
    let address = handle.address() as usize;
    let Some(entry) = signals.get(&address) else {
        note_misuse(format!("{call}: {handle:?} is not a live signal"));
        return None;
    };
    let signal = address as *mut AmdSignal;
    match entry.doorbell {
        None => {
            // SAFETY: a registered address is a live, 64-byte-aligned
            // `AmdSignal` that only destroy (which takes this lock) frees;
            // its value is only accessed atomically.
            let value = unsafe { AtomicI64::from_ptr(&raw mut (*signal).value) };
            Some(op(SignalRef::User(value)))
        }
        Some(register) => {
            // SAFETY: the doorbell register lives as long as the signal's
            // registration (queue destroy unregisters first).
            let register = unsafe { AtomicU64::from_ptr(register as *mut u64) };
            Some(op(SignalRef::Doorbell(register)))
        }
    }
}

/// Runs `op` on a user signal's value; a doorbell is misuse (ROCr's
/// doorbell signals assert on anything but a store).
fn with_user_signal<R>(
    call: &'static str,
    handle: SignalHandle,
    op: impl FnOnce(&AtomicI64) -> R,
) -> Option<R> {
    with_signal(call, handle, |s| match s {
        SignalRef::User(value) => Some(op(value)),
        SignalRef::Doorbell(_) => {
            note_misuse(format!("{call}: {handle:?} is a doorbell signal"));
            None
        }
    })
    .flatten()
}

/// A status for a signal argument: null is INVALID_ARGUMENT and an unknown
/// or doorbell handle INVALID_SIGNAL (ROCr `signal.h`, `Signal::Convert`).
fn check_user_signal(handle: SignalHandle) -> Result<(), Status> {
    if handle.is_null() {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    match lock(&SIGNALS).get(&(handle.address() as usize)) {
        Some(SignalEntry { doorbell: None }) => Ok(()),
        _ => Err(HSA_STATUS_ERROR_INVALID_SIGNAL),
    }
}

/// Wakes every waiter to re-check its signal.
fn wake_waiters() {
    drop(lock(&WAKE));
    WAKE_CV.notify_all();
}

fn signal_load(call: &'static str, handle: SignalHandle, order: Ordering) -> i64 {
    with_user_signal(call, handle, |v| v.load(order)).unwrap_or(0)
}

fn signal_store(call: &'static str, handle: SignalHandle, value: i64, order: Ordering) {
    with_signal(call, handle, |s| match s {
        SignalRef::User(v) => v.store(value, order),
        // A doorbell store is the "ring": the register takes the value.
        SignalRef::Doorbell(register) => register.store(value as u64, Ordering::Release),
    });
    wake_waiters();
}

fn signal_add(call: &'static str, handle: SignalHandle, delta: i64, order: Ordering) {
    with_user_signal(call, handle, |v| v.fetch_add(delta, order));
    wake_waiters();
}

fn signal_cas(
    call: &'static str,
    handle: SignalHandle,
    expected: i64,
    value: i64,
    success: Ordering,
    failure: Ordering,
) -> i64 {
    let observed = with_user_signal(call, handle, |v| {
        v.compare_exchange(expected, value, success, failure)
            .unwrap_or_else(|current| current)
    });
    wake_waiters();
    observed.unwrap_or(0)
}

/// Blocks until `condition` holds for the signal's value or `timeout_ns`
/// passed (`u64::MAX`: forever), re-reading at least every [`WAIT_SLICE`].
/// Returns the value last read, as HSA's wait does, or `None` once the
/// handle names no live user signal. An unknown condition returns at once.
fn wait_signal(
    call: &'static str,
    handle: SignalHandle,
    condition: u32,
    compare: i64,
    timeout_ns: u64,
    order: Ordering,
) -> Option<i64> {
    let deadline = (timeout_ns != u64::MAX)
        .then(|| Instant::now().checked_add(Duration::from_nanos(timeout_ns)))
        .flatten();
    let mut guard = lock(&WAKE);
    loop {
        let value = with_user_signal(call, handle, |v| v.load(order))?;
        if SignalCondition(condition).holds(value, compare) != Some(false) {
            return Some(value);
        }
        let mut slice = WAIT_SLICE;
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Some(value);
            }
            slice = slice.min(left);
        }
        guard = WAKE_CV
            .wait_timeout(guard, slice)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// ROCr (`hsa_ext_amd.cpp` `hsa_amd_signal_create`): a null out-pointer or
/// consumers listed twice is INVALID_ARGUMENT. The signal is an
/// `AmdSignal` of kind USER; the handle is its address.
unsafe extern "C" fn hsa_signal_create(
    initial_value: i64,
    num_consumers: u32,
    consumers: *const Agent,
    signal: *mut SignalHandle,
) -> Status {
    if let Some(status) = enter("hsa_signal_create") {
        return status;
    }
    if signal.is_null() || (num_consumers != 0 && consumers.is_null()) {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if num_consumers != 0 {
        // SAFETY: non-null and holding `num_consumers` handles (caller's
        // contract).
        let list = unsafe { std::slice::from_raw_parts(consumers, num_consumers as usize) };
        let mut sorted: Vec<u64> = list.iter().map(|a| a.0).collect();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != list.len() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
    }
    let address = Box::into_raw(Box::new(AmdSignal::user(initial_value))) as usize;
    lock(&SIGNALS).insert(address, SignalEntry { doorbell: None });
    // SAFETY: `signal` is non-null and points to an `hsa_signal_t`.
    unsafe { signal.write_unaligned(SignalHandle(address as u64)) };
    HSA_STATUS_SUCCESS
}

/// Null is INVALID_ARGUMENT, an unknown or already destroyed handle
/// INVALID_SIGNAL (ROCr `Signal::Convert`). A queue's doorbell is not the
/// application's to destroy: INVALID_SIGNAL too.
unsafe extern "C" fn hsa_signal_destroy(signal: SignalHandle) -> Status {
    if let Some(status) = enter("hsa_signal_destroy") {
        return status;
    }
    if signal.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let address = signal.address() as usize;
    {
        let mut signals = lock(&SIGNALS);
        match signals.get(&address) {
            Some(SignalEntry { doorbell: None }) => signals.remove(&address),
            _ => return HSA_STATUS_ERROR_INVALID_SIGNAL,
        };
    }
    // SAFETY: the address came from `Box::into_raw` in hsa_signal_create
    // and was registered until now; unregistering under the lock makes this
    // the only free.
    drop(unsafe { Box::from_raw(address as *mut AmdSignal) });
    // A waiter on the destroyed signal must find out.
    wake_waiters();
    HSA_STATUS_SUCCESS
}

/// The signal operations without a status: one line each, named after the
/// C function, forwarding to the shared implementation with its ordering.
macro_rules! signal_ops {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $imp:ident($($ord:ident),+);)+) => {$(
        unsafe extern "C" fn $name(signal: SignalHandle $(, $arg: $ty)*) $(-> $ret)? {
            let call = stringify!($name);
            note_call(call);
            $imp(call, signal $(, $arg)*, $(Ordering::$ord),+)
        }
    )+};
}

signal_ops! {
    fn hsa_signal_load_relaxed() -> i64 => signal_load(Relaxed);
    fn hsa_signal_load_scacquire() -> i64 => signal_load(Acquire);
    fn hsa_signal_store_relaxed(value: i64) => signal_store(Relaxed);
    fn hsa_signal_store_screlease(value: i64) => signal_store(Release);
    fn hsa_signal_add_relaxed(value: i64) => signal_add(Relaxed);
    fn hsa_signal_add_scacquire(value: i64) => signal_add(Acquire);
    fn hsa_signal_add_screlease(value: i64) => signal_add(Release);
    fn hsa_signal_add_scacq_screl(value: i64) => signal_add(AcqRel);
    fn hsa_signal_cas_relaxed(expected: i64, value: i64) -> i64 => signal_cas(Relaxed, Relaxed);
    fn hsa_signal_cas_scacquire(expected: i64, value: i64) -> i64 => signal_cas(Acquire, Acquire);
    fn hsa_signal_cas_screlease(expected: i64, value: i64) -> i64 => signal_cas(Release, Relaxed);
    fn hsa_signal_cas_scacq_screl(expected: i64, value: i64) -> i64 => signal_cas(AcqRel, Acquire);
}

/// `timeout_hint` is in timestamp ticks (nanoseconds here); the wait state
/// is a hint and ignored.
unsafe extern "C" fn hsa_signal_wait_relaxed(
    signal: SignalHandle,
    condition: u32,
    compare: i64,
    timeout_hint: u64,
    _wait_state: u32,
) -> i64 {
    let call = "hsa_signal_wait_relaxed";
    note_call(call);
    wait_signal(
        call,
        signal,
        condition,
        compare,
        timeout_hint,
        Ordering::Relaxed,
    )
    .unwrap_or(0)
}

unsafe extern "C" fn hsa_signal_wait_scacquire(
    signal: SignalHandle,
    condition: u32,
    compare: i64,
    timeout_hint: u64,
    _wait_state: u32,
) -> i64 {
    let call = "hsa_signal_wait_scacquire";
    note_call(call);
    wait_signal(
        call,
        signal,
        condition,
        compare,
        timeout_hint,
        Ordering::Acquire,
    )
    .unwrap_or(0)
}

/// Whether `handle` names a live signal (user or doorbell).
pub(crate) fn signal_is_live(handle: SignalHandle) -> bool {
    lock(&SIGNALS).contains_key(&(handle.address() as usize))
}

// ===========================================================================
// Queues
// ===========================================================================

/// Checks in ROCr's order (`hsa.cpp` `hsa_queue_create`, then
/// `amd_gpu_agent.cpp` `GpuAgent::QueueCreate`, `amd_cpu_agent.cpp`
/// `CpuAgent::QueueCreate`):
///
/// | condition                                     | status                 |
/// |-----------------------------------------------|------------------------|
/// | null out-pointer, size 0 or not a power of 2 | INVALID_ARGUMENT       |
/// | type > COOPERATIVE                            | INVALID_ARGUMENT       |
/// | unknown agent                                 | INVALID_AGENT          |
/// | the CPU agent (no packet processor)           | ERROR                  |
/// | COOPERATIVE (the fake has no GWS queue)       | INVALID_QUEUE_CREATION |
/// | size > QUEUE_MAX                              | OUT_OF_RESOURCES       |
/// | size < QUEUE_MIN                              | INVALID_ARGUMENT       |
///
/// The queue is an `AmdQueue` (the `hsa_queue_t*` is its address) with a
/// ring aligned to its size, every header INVALID, and a doorbell signal of
/// kind DOORBELL whose value (`hardware_doorbell_ptr`) is the address of a
/// fake 64-bit doorbell register.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn hsa_queue_create(
    agent: Agent,
    size: u32,
    queue_type: u32,
    callback: Option<QueueErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> Status {
    if let Some(status) = enter("hsa_queue_create") {
        return status;
    }
    if queue.is_null() || !size.is_power_of_two() || queue_type > QueueType::COOPERATIVE.0 {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    match agent {
        GPU_AGENT => {}
        CPU_AGENT => return HSA_STATUS_ERROR,
        _ => return HSA_STATUS_ERROR_INVALID_AGENT,
    }
    if queue_type == QueueType::COOPERATIVE.0 {
        return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION;
    }
    if size > QUEUE_MAX {
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    if size < QUEUE_MIN {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }

    let ring_bytes = size as usize * PACKET_SIZE;
    let Ok(ring_layout) = Layout::from_size_align(ring_bytes, ring_bytes) else {
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    };
    // SAFETY: the layout has a non-zero size.
    let ring = unsafe { alloc_zeroed(ring_layout) };
    if ring.is_null() {
        return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    for slot in 0..size as usize {
        // SAFETY: slot `slot` lies inside the ring just allocated, and
        // every slot is 64-byte aligned.
        unsafe {
            ring.add(slot * PACKET_SIZE)
                .cast::<u16>()
                .write(PacketHeader::INVALID.0)
        };
    }

    let register = Box::into_raw(Box::new(AtomicU64::new(DOORBELL_NEVER_RUNG))) as usize;
    let mut doorbell = AmdSignal::user(register as i64);
    doorbell.kind = AmdSignalKind::DOORBELL;
    let doorbell_signal = Box::into_raw(Box::new(doorbell)) as usize;

    let amd_queue = Box::into_raw(Box::new(AmdQueue::new(HsaQueue {
        queue_type: QueueType(queue_type),
        features: QueueFeatures::KERNEL_DISPATCH,
        base_address: ring as u64,
        doorbell_signal: SignalHandle(doorbell_signal as u64),
        size,
        reserved1: 0,
        id: NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed),
    })));
    // SAFETY: `doorbell_signal` is the live box made above, not yet shared.
    unsafe { (*(doorbell_signal as *mut AmdSignal)).queue_ptr = amd_queue as u64 };

    lock(&SIGNALS).insert(
        doorbell_signal,
        SignalEntry {
            doorbell: Some(register),
        },
    );
    lock(&QUEUES).insert(
        amd_queue as usize,
        QueueEntry {
            ring: ring as usize,
            ring_layout,
            doorbell_signal,
            doorbell_register: register,
            callback,
            data: data as usize,
        },
    );
    // SAFETY: `queue` is non-null and points to an `hsa_queue_t*`.
    unsafe { queue.write_unaligned(amd_queue.cast()) };
    HSA_STATUS_SUCCESS
}

/// Null is INVALID_ARGUMENT, an unknown queue INVALID_QUEUE (ROCr `hsa.cpp`
/// `hsa_queue_destroy`).
unsafe extern "C" fn hsa_queue_destroy(queue: *mut HsaQueue) -> Status {
    if let Some(status) = enter("hsa_queue_destroy") {
        return status;
    }
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let Some(entry) = lock(&QUEUES).remove(&(queue as usize)) else {
        return HSA_STATUS_ERROR_INVALID_QUEUE;
    };
    lock(&SIGNALS).remove(&entry.doorbell_signal);
    wake_waiters();
    // SAFETY: each pointer came from the allocation in hsa_queue_create and
    // was reachable only through the registrations just removed, so each is
    // freed once.
    unsafe {
        drop(Box::from_raw(queue.cast::<AmdQueue>()));
        drop(Box::from_raw(entry.doorbell_signal as *mut AmdSignal));
        drop(Box::from_raw(entry.doorbell_register as *mut AtomicU64));
        dealloc(entry.ring as *mut u8, entry.ring_layout);
    }
    HSA_STATUS_SUCCESS
}

/// Which dispatch id of an `amd_queue_t`.
#[derive(Clone, Copy)]
enum Index {
    Read,
    Write,
}

/// Runs `op` on a live queue's read or write dispatch id; `None` (and a
/// misuse note) for an unknown queue.
fn with_index<R>(
    call: &'static str,
    queue: *const HsaQueue,
    index: Index,
    op: impl FnOnce(&AtomicU64) -> R,
) -> Option<R> {
    let queues = lock(&QUEUES);
    if !queues.contains_key(&(queue as usize)) {
        note_misuse(format!("{call}: {queue:?} is not a live queue"));
        return None;
    }
    let amd = queue.cast::<AmdQueue>().cast_mut();
    // SAFETY: a registered queue is a live `AmdQueue` that only destroy
    // (which takes this lock) frees; its dispatch ids are 8-byte aligned
    // and only accessed atomically.
    let id = unsafe {
        AtomicU64::from_ptr(match index {
            Index::Read => &raw mut (*amd).read_dispatch_id,
            Index::Write => &raw mut (*amd).write_dispatch_id,
        })
    };
    Some(op(id))
}

unsafe extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const HsaQueue) -> u64 {
    let call = "hsa_queue_load_read_index_scacquire";
    note_call(call);
    with_index(call, queue, Index::Read, |i| i.load(Ordering::Acquire)).unwrap_or(0)
}

unsafe extern "C" fn hsa_queue_load_write_index_relaxed(queue: *const HsaQueue) -> u64 {
    let call = "hsa_queue_load_write_index_relaxed";
    note_call(call);
    with_index(call, queue, Index::Write, |i| i.load(Ordering::Relaxed)).unwrap_or(0)
}

unsafe extern "C" fn hsa_queue_add_write_index_scacq_screl(
    queue: *const HsaQueue,
    value: u64,
) -> u64 {
    let call = "hsa_queue_add_write_index_scacq_screl";
    note_call(call);
    with_index(call, queue, Index::Write, |i| {
        i.fetch_add(value, Ordering::AcqRel)
    })
    .unwrap_or(0)
}

unsafe extern "C" fn hsa_queue_cas_write_index_scacq_screl(
    queue: *const HsaQueue,
    expected: u64,
    value: u64,
) -> u64 {
    let call = "hsa_queue_cas_write_index_scacq_screl";
    note_call(call);
    with_index(call, queue, Index::Write, |i| {
        i.compare_exchange(expected, value, Ordering::AcqRel, Ordering::Acquire)
            .unwrap_or_else(|current| current)
    })
    .unwrap_or(0)
}

/// The published packets of a live queue: from the read index up to the
/// write index, stopping at the first slot whose header is still INVALID.
/// With `consume`, each slot is set back to INVALID and the read index
/// advanced (release) past it, as a packet processor does.
fn scan(call: &'static str, queue: *const HsaQueue, consume: bool) -> Vec<AqlPacket> {
    let mut packets = Vec::new();
    let queues = lock(&QUEUES);
    let Some(entry) = queues.get(&(queue as usize)) else {
        note_misuse(format!("{call}: {queue:?} is not a live queue"));
        return packets;
    };
    let amd = queue.cast::<AmdQueue>().cast_mut();
    // SAFETY: a registered queue's `AmdQueue` and ring stay alive while the
    // registry lock is held; the dispatch ids and headers are only accessed
    // atomically, and a slot's body is complete once its header (stored
    // last, with release) is seen with acquire.
    unsafe {
        let read_id = AtomicU64::from_ptr(&raw mut (*amd).read_dispatch_id);
        let write_id = AtomicU64::from_ptr(&raw mut (*amd).write_dispatch_id);
        let size = u64::from((*amd).hsa_queue.size);
        let mut read = read_id.load(Ordering::Acquire);
        while read < write_id.load(Ordering::Acquire) {
            let slot = (entry.ring as *mut AqlPacket).add((read & (size - 1)) as usize);
            let header = AtomicU16::from_ptr(slot.cast::<u16>());
            if PacketHeader(header.load(Ordering::Acquire)).packet_type() == PacketType::INVALID {
                break;
            }
            packets.push(slot.read());
            read += 1;
            if consume {
                header.store(PacketHeader::INVALID.0, Ordering::Release);
                read_id.store(read, Ordering::Release);
            }
        }
    }
    packets
}

/// One packet-processor step over a live queue: consumes the published
/// packets (see [`peek`]), setting each slot back to INVALID and advancing
/// the read index past it; then decrements by one the completion signal of
/// every kernel-dispatch, barrier-AND/OR and AMD barrier-value packet.
/// Barrier dependencies are not evaluated, and agent-dispatch packets
/// complete nothing: a test that cares plays that part itself.
pub(crate) fn process(queue: *mut HsaQueue) -> Vec<AqlPacket> {
    let consumed = scan("process", queue, true);
    for packet in &consumed {
        let completes = match packet.header.packet_type() {
            PacketType::KERNEL_DISPATCH | PacketType::BARRIER_AND | PacketType::BARRIER_OR => true,
            PacketType::VENDOR_SPECIFIC => packet.body[0] == AmdPacketType::BARRIER_VALUE.0,
            _ => false,
        };
        // Every completing packet keeps `completion_signal` in bytes 56..64
        // (body bytes 54..62).
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&packet.body[54..62]);
        let signal = SignalHandle(u64::from_le_bytes(raw));
        if completes && !signal.is_null() {
            signal_add("process", signal, -1, Ordering::Release);
        }
    }
    consumed
}

/// The packets [`process`] would consume now, left in place.
pub(crate) fn peek(queue: *const HsaQueue) -> Vec<AqlPacket> {
    scan("peek", queue, false)
}

/// Raises a queue error: calls the callback given to `hsa_queue_create`
/// with `(status, queue, data)` on a fresh thread, as ROCr's async-events
/// thread does, and waits for it. Returns false if the queue is unknown or
/// has no callback (ROCr's default handler would abort the process).
pub(crate) fn fault(queue: *mut HsaQueue, status: Status) -> bool {
    let found = lock(&QUEUES)
        .get(&(queue as usize))
        .map(|e| (e.callback, e.data));
    let Some((Some(callback), data)) = found else {
        return false;
    };
    let queue = queue as usize;
    std::thread::spawn(move || {
        // SAFETY: the callback and its data are the ones the application
        // registered for this queue, and ROCr calls them exactly so.
        unsafe { callback(status, queue as *mut HsaQueue, data as *mut c_void) }
    })
    .join()
    .is_ok()
}

/// The value last stored to the queue's doorbell signal (or written to its
/// register), or `None` if it was never rung or the queue is unknown.
pub(crate) fn last_doorbell(queue: *const HsaQueue) -> Option<i64> {
    let queues = lock(&QUEUES);
    let entry = queues.get(&(queue as usize))?;
    // SAFETY: the register lives while the queue is registered.
    let value =
        unsafe { AtomicU64::from_ptr(entry.doorbell_register as *mut u64) }.load(Ordering::Acquire);
    (value != DOORBELL_NEVER_RUNG).then_some(value as i64)
}

/// Whether `queue` is a live queue.
pub(crate) fn queue_is_live(queue: *const HsaQueue) -> bool {
    lock(&QUEUES).contains_key(&(queue as usize))
}

// ===========================================================================
// Code objects and executables
// ===========================================================================

/// ROCr (`hsa.cpp` `hsa_executable_create_alt`): a profile other than BASE
/// or FULL, a rounding mode other than DEFAULT/ZERO/NEAR, or a null
/// out-pointer is INVALID_ARGUMENT.
unsafe extern "C" fn hsa_executable_create_alt(
    profile: u32,
    rounding_mode: u32,
    _options: *const c_char,
    executable: *mut Executable,
) -> Status {
    if let Some(status) = enter("hsa_executable_create_alt") {
        return status;
    }
    if profile > ffi::HSA_PROFILE_FULL
        || rounding_mode > HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR
        || executable.is_null()
    {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let handle = next_handle();
    lock(&LOADER)
        .executables
        .insert(handle, ExecutableEntry { frozen: false });
    // SAFETY: non-null, points to an `hsa_executable_t`.
    unsafe { executable.write_unaligned(Executable(handle)) };
    HSA_STATUS_SUCCESS
}

/// Unknown is INVALID_EXECUTABLE; the kernel descriptors go with it.
unsafe extern "C" fn hsa_executable_destroy(executable: Executable) -> Status {
    if let Some(status) = enter("hsa_executable_destroy") {
        return status;
    }
    let mut loader = lock(&LOADER);
    if loader.executables.remove(&executable.0).is_none() {
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    }
    let symbols = std::mem::take(&mut loader.symbols);
    let (gone, kept): (BTreeMap<u64, Symbol>, _) = symbols
        .into_iter()
        .partition(|(_, s)| s.executable == executable.0);
    loader.symbols = kept;
    drop(loader);
    for symbol in gone.values() {
        // SAFETY: each descriptor was boxed at load and owned by its symbol,
        // now unregistered: freed once.
        drop(unsafe { Box::from_raw(symbol.descriptor as *mut KernelDescriptor) });
    }
    HSA_STATUS_SUCCESS
}

/// The bytes are copied. (HSA lets ROCr keep the application's buffer
/// instead, which must outlive the reader; the fake cannot catch a caller
/// that frees it early.)
unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    reader: *mut CodeObjectReader,
) -> Status {
    if let Some(status) = enter("hsa_code_object_reader_create_from_memory") {
        return status;
    }
    if code_object.is_null() || size == 0 || reader.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: `code_object` holds `size` bytes (caller's contract).
    let bytes = unsafe { std::slice::from_raw_parts(code_object.cast::<u8>(), size) }.to_vec();
    let handle = next_handle();
    lock(&LOADER).readers.insert(handle, bytes);
    // SAFETY: non-null, points to an `hsa_code_object_reader_t`.
    unsafe { reader.write_unaligned(CodeObjectReader(handle)) };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn hsa_code_object_reader_destroy(reader: CodeObjectReader) -> Status {
    if let Some(status) = enter("hsa_code_object_reader_destroy") {
        return status;
    }
    match lock(&LOADER).readers.remove(&reader.0) {
        Some(_) => HSA_STATUS_SUCCESS,
        None => HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
    }
}

/// Whether a code object for `target` runs on the fake GPU: ROCr's
/// `IsaSupportedByAgent` accepts the agent's processor or its generic
/// family, with each feature either unspecified or matching the agent's
/// (`sramecc+`, `xnack-`).
fn runs_on_gpu(target: &Target) -> bool {
    matches!(target.processor, "gfx942" | "gfx9-4-generic")
        && matches!(
            target.sramecc,
            FeatureSetting::Any | FeatureSetting::Unsupported | FeatureSetting::On
        )
        && matches!(
            target.xnack,
            FeatureSetting::Any | FeatureSetting::Unsupported | FeatureSetting::Off
        )
}

fn symbol_of(executable: u64, agent: Agent, kernel: &Kernel) -> Option<Symbol> {
    let m = &kernel.metadata;
    Some(Symbol {
        executable,
        agent,
        name: m.symbol.clone(),
        descriptor: 0,
        kernarg_segment_size: u32::try_from(m.kernarg_segment_size).ok()?,
        kernarg_segment_alignment: u32::try_from(m.kernarg_segment_align).ok()?,
        group_segment_size: u32::try_from(m.group_segment_fixed_size).ok()?,
        private_segment_size: u32::try_from(m.private_segment_fixed_size).ok()?,
        dynamic_callstack: m.uses_dynamic_stack,
    })
}

/// Checks in ROCr's order (`hsa.cpp` `hsa_executable_load_agent_code_object`,
/// then `loader/executable.cpp` `ExecutableImpl::LoadCodeObject`):
///
/// | condition                                  | status                     |
/// |--------------------------------------------|----------------------------|
/// | unknown executable                         | INVALID_EXECUTABLE         |
/// | unknown reader                             | INVALID_CODE_OBJECT_READER |
/// | executable frozen                          | FROZEN_EXECUTABLE          |
/// | bytes the shared reader rejects            | INVALID_CODE_OBJECT        |
/// | unknown agent (the null agent included)    | INVALID_AGENT              |
/// | an ISA the agent cannot run (1)            | INCOMPATIBLE_ARGUMENTS     |
///
/// (1) `executable.cpp`: "code object's ISA (…) is not supported by the
/// agent", after `IsaSupportedByAgent`.
///
/// Each kernel's descriptor is copied to a fresh 64-byte-aligned box whose
/// address is the symbol's KERNEL_OBJECT. ROCr also accepts the null agent
/// (a program code object); the fake does not.
unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: Executable,
    agent: Agent,
    reader: CodeObjectReader,
    _options: *const c_char,
    loaded: *mut LoadedCodeObject,
) -> Status {
    if let Some(status) = enter("hsa_executable_load_agent_code_object") {
        return status;
    }
    let mut loader = lock(&LOADER);
    let Some(entry) = loader.executables.get(&executable.0) else {
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    };
    let frozen = entry.frozen;
    let Some(bytes) = loader.readers.get(&reader.0) else {
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
    };
    if frozen {
        return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
    }
    let Ok(code_object) = CodeObject::parse(bytes) else {
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    };
    if !is_agent(agent) {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    if agent != GPU_AGENT || !runs_on_gpu(&code_object.target) {
        return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
    }
    let mut symbols = Vec::with_capacity(code_object.kernels.len());
    for kernel in &code_object.kernels {
        let Some(symbol) = symbol_of(executable.0, agent, kernel) else {
            return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        };
        symbols.push((symbol, kernel.descriptor));
    }
    for (mut symbol, descriptor) in symbols {
        symbol.descriptor = Box::into_raw(Box::new(descriptor)) as usize;
        loader.symbols.insert(next_handle(), symbol);
    }
    if !loaded.is_null() {
        // SAFETY: non-null, points to an `hsa_loaded_code_object_t`.
        unsafe { loaded.write_unaligned(LoadedCodeObject(next_handle())) };
    }
    HSA_STATUS_SUCCESS
}

/// Unknown is INVALID_EXECUTABLE; freezing twice FROZEN_EXECUTABLE (ROCr
/// `ExecutableImpl::Freeze`).
unsafe extern "C" fn hsa_executable_freeze(
    executable: Executable,
    _options: *const c_char,
) -> Status {
    if let Some(status) = enter("hsa_executable_freeze") {
        return status;
    }
    match lock(&LOADER).executables.get_mut(&executable.0) {
        None => HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        Some(e) if e.frozen => HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
        Some(e) => {
            e.frozen = true;
            HSA_STATUS_SUCCESS
        }
    }
}

/// ROCr (`hsa.cpp`, `ExecutableImpl::GetSymbolInternal`): a null name or
/// out-pointer is INVALID_ARGUMENT, an unknown executable
/// INVALID_EXECUTABLE. Kernels are agent symbols: with a null agent (a
/// program-symbol lookup) or another agent than the one loaded for, the
/// name is not found, INVALID_SYMBOL_NAME. If a name was loaded twice, the
/// first load wins.
unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: Executable,
    name: *const c_char,
    agent: *const Agent,
    symbol: *mut ExecutableSymbol,
) -> Status {
    if let Some(status) = enter("hsa_executable_get_symbol_by_name") {
        return status;
    }
    if name.is_null() || symbol.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: a non-null name is a NUL-terminated string (caller's contract).
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    let agent = if agent.is_null() {
        None
    } else {
        // SAFETY: non-null, points to an `hsa_agent_t`.
        Some(unsafe { agent.read_unaligned() })
    };
    let loader = lock(&LOADER);
    if !loader.executables.contains_key(&executable.0) {
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    }
    let found = loader.symbols.iter().find(|(_, s)| {
        s.executable == executable.0 && Some(s.agent) == agent && s.name.as_bytes() == name
    });
    let Some((&handle, _)) = found else {
        return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
    };
    // SAFETY: non-null, points to an `hsa_executable_symbol_t`.
    unsafe { symbol.write_unaligned(ExecutableSymbol(handle)) };
    HSA_STATUS_SUCCESS
}

/// Kernel symbol attributes (C types per hsa.h); NAME has no NUL and
/// NAME_LENGTH does not count one (ROCr `loader/executable.cpp`,
/// `SymbolImpl::GetInfo`). Unknown symbol: INVALID_EXECUTABLE_SYMBOL.
unsafe extern "C" fn hsa_executable_symbol_get_info(
    symbol: ExecutableSymbol,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: `value` points to the attribute's C type (caller's contract).
    unsafe {
        answer("hsa_executable_symbol_get_info", value, || {
            let loader = lock(&LOADER);
            let s = loader
                .symbols
                .get(&symbol.0)
                .ok_or(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL)?;
            Ok(match attribute {
                HSA_EXECUTABLE_SYMBOL_INFO_TYPE => Info::U32(HSA_SYMBOL_KIND_KERNEL),
                HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH => Info::U32(s.name.len() as u32),
                HSA_EXECUTABLE_SYMBOL_INFO_NAME => Info::Bytes(s.name.as_bytes().to_vec()),
                HSA_EXECUTABLE_SYMBOL_INFO_AGENT => Info::U64(s.agent.0),
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT => Info::U64(s.descriptor as u64),
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE => {
                    Info::U32(s.kernarg_segment_size)
                }
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT => {
                    Info::U32(s.kernarg_segment_alignment)
                }
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE => {
                    Info::U32(s.group_segment_size)
                }
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE => {
                    Info::U32(s.private_segment_size)
                }
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK => {
                    Info::Bool(s.dynamic_callstack)
                }
                _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
            })
        })
    }
}

/// Whether `executable` is live.
pub(crate) fn executable_is_live(executable: Executable) -> bool {
    lock(&LOADER).executables.contains_key(&executable.0)
}

/// Whether `executable` is live and frozen.
pub(crate) fn is_frozen(executable: Executable) -> bool {
    lock(&LOADER)
        .executables
        .get(&executable.0)
        .is_some_and(|e| e.frozen)
}

/// Whether `reader` is live.
pub(crate) fn reader_is_live(reader: CodeObjectReader) -> bool {
    lock(&LOADER).readers.contains_key(&reader.0)
}

// ===========================================================================
// Tests of the fake itself
// ===========================================================================

#[cfg(test)]
mod tests {
    use super::*;
    use aqueduct_abi::aql::{BarrierAndPacket, FenceScope, KernelDispatchPacket};

    /// Holds one `hsa_init` reference for a test and clears the thread's
    /// controls.
    struct Session(Api);

    impl Session {
        fn new() -> Self {
            reset_thread();
            let api = api();
            // SAFETY: the fake's hsa_init has no preconditions.
            assert_eq!(unsafe { (api.hsa_init)() }, HSA_STATUS_SUCCESS);
            Self(api)
        }
    }

    impl Drop for Session {
        fn drop(&mut self) {
            // SAFETY: pairs the hsa_init of `new`.
            unsafe { (self.0.hsa_shut_down)() };
        }
    }

    impl std::ops::Deref for Session {
        type Target = Api;
        fn deref(&self) -> &Api {
            &self.0
        }
    }

    fn signal(api: &Api, initial: i64) -> SignalHandle {
        let mut s = SignalHandle::NULL;
        // SAFETY: valid out-pointer; no consumers.
        let rc = unsafe { (api.hsa_signal_create)(initial, 0, std::ptr::null(), &mut s) };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        s
    }

    fn device_code(gfx: &str) -> Option<Vec<u8>> {
        let path = format!(
            "{}/../target/amdgpu/{gfx}/aqueduct-device.hsaco",
            env!("CARGO_MANIFEST_DIR")
        );
        match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                eprintln!("skipped: {path}: {e} (run `cargo xtask build --gfx {gfx}`)");
                None
            }
        }
    }

    #[test]
    fn status_strings_need_no_init_and_init_can_fail() {
        reset_thread();
        let api = api();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: valid out-pointer.
        let rc = unsafe { (api.hsa_status_string)(HSA_STATUS_ERROR_INVALID_ALLOCATION, &mut text) };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        // SAFETY: a static NUL-terminated text.
        let text = unsafe { CStr::from_ptr(text) }.to_str().unwrap();
        assert!(text.starts_with("HSA_STATUS_ERROR_INVALID_ALLOCATION"));
        // SAFETY: valid out-pointer.
        let rc = unsafe { (api.hsa_status_string)(0x7777, &mut std::ptr::null()) };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        set_fail("hsa_init", HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        // SAFETY: no preconditions.
        let rc = unsafe { (api.hsa_init)() };
        assert_eq!(rc, HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        assert_eq!(
            calls(),
            ["hsa_status_string", "hsa_status_string", "hsa_init"]
        );
    }

    #[test]
    fn gpu_attributes_have_their_c_types() {
        let api = Session::new();
        let mut name = [0xffu8; 64];
        // SAFETY: NAME is char[64].
        let rc = unsafe {
            (api.hsa_agent_get_info)(
                GPU_AGENT,
                ffi::HSA_AGENT_INFO_NAME,
                name.as_mut_ptr().cast(),
            )
        };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        assert_eq!(&name[..7], b"gfx942\0");
        assert!(name[7..].iter().all(|&b| b == 0));
        let mut dims = [0u16; 4];
        // SAFETY: WORKGROUP_MAX_DIM is uint16_t[3]; the fourth stays put.
        let rc = unsafe {
            (api.hsa_agent_get_info)(
                GPU_AGENT,
                ffi::HSA_AGENT_INFO_WORKGROUP_MAX_DIM,
                dims.as_mut_ptr().cast(),
            )
        };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        assert_eq!(dims, [1024, 1024, 1024, 0]);
        let mut waves = 0u32;
        // SAFETY: a u32 attribute, asked of the CPU.
        let rc = unsafe {
            (api.hsa_agent_get_info)(
                CPU_AGENT,
                ffi::HSA_AGENT_INFO_WAVEFRONT_SIZE,
                (&raw mut waves).cast(),
            )
        };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        let mut len = 0u32;
        // SAFETY: NAME_LENGTH is a u32.
        let rc = unsafe {
            (api.hsa_isa_get_info_alt)(
                GPU_ISA_HANDLE,
                ffi::HSA_ISA_INFO_NAME_LENGTH,
                (&raw mut len).cast(),
            )
        };
        assert_eq!((rc, len as usize), (HSA_STATUS_SUCCESS, GPU_ISA.len() + 1));
    }

    unsafe extern "C" fn break_at_first<H>(_: H, data: *mut c_void) -> Status {
        // SAFETY: the test passes a `&mut u32` counter.
        unsafe { *data.cast::<u32>() += 1 };
        HSA_STATUS_INFO_BREAK
    }

    #[test]
    fn iteration_stops_with_the_callbacks_status() {
        let api = Session::new();
        let mut seen = 0u32;
        // SAFETY: the callback only bumps the counter.
        let rc = unsafe {
            (api.hsa_amd_agent_iterate_memory_pools)(
                GPU_AGENT,
                break_at_first::<MemoryPool>,
                (&raw mut seen).cast(),
            )
        };
        assert_eq!((rc, seen), (HSA_STATUS_INFO_BREAK, 1));
        // SAFETY: as above.
        let rc = unsafe {
            (api.hsa_agent_iterate_isas)(CPU_AGENT, break_at_first::<Isa>, (&raw mut seen).cast())
        };
        assert_eq!((rc, seen), (HSA_STATUS_SUCCESS, 1), "the CPU has no ISA");
    }

    #[test]
    fn allocations_are_poisoned_page_rounded_and_tracked() {
        let api = Session::new();
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let rc = unsafe { (api.hsa_amd_memory_pool_allocate)(GPU_VRAM_POOL, 100, 0, &mut ptr) };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        assert_eq!(ptr as usize % PAGE, 0);
        // SAFETY: the allocation holds a whole page.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), PAGE) };
        assert!(bytes.iter().all(|&b| b == POISON));
        assert!(is_live(ptr));
        let inside = ptr.cast::<u8>().wrapping_add(4000).cast();
        assert!(!is_live(inside));
        assert_eq!(live_bytes_containing(inside), Some((ptr as usize, PAGE)));
        assert_eq!(pool_of(ptr), Some(GPU_VRAM_POOL));
        // SAFETY: an interior pointer is refused before anything is read.
        let rc =
            unsafe { (api.hsa_amd_agents_allow_access)(1, &CPU_AGENT, std::ptr::null(), inside) };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ALLOCATION);
        // SAFETY: one valid agent.
        let rc = unsafe { (api.hsa_amd_agents_allow_access)(1, &CPU_AGENT, std::ptr::null(), ptr) };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        assert_eq!(allowed_agents(ptr), Some(vec![CPU_AGENT]));
        // SAFETY: a live allocation, freed once; the second free is refused.
        unsafe {
            assert_eq!((api.hsa_amd_memory_pool_free)(ptr), HSA_STATUS_SUCCESS);
            assert_eq!(
                (api.hsa_amd_memory_pool_free)(ptr),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
        }
        assert!(!is_live(ptr));
    }

    #[test]
    fn allocations_rocr_refuses_are_refused() {
        let api = Session::new();
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointer; nothing is allocated.
        unsafe {
            assert_eq!(
                (api.hsa_amd_memory_pool_allocate)(GPU_VRAM_POOL, VRAM + 1, 0, &mut ptr),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
            assert_eq!(
                (api.hsa_amd_memory_pool_allocate)(GPU_GROUP_POOL, 64, 0, &mut ptr),
                HSA_STATUS_ERROR_INVALID_ALLOCATION
            );
            assert_eq!(
                (api.hsa_amd_memory_pool_allocate)(GPU_VRAM_POOL, 0, 0, &mut ptr),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                (api.hsa_amd_memory_pool_allocate)(MemoryPool(7), 64, 0, &mut ptr),
                HSA_STATUS_ERROR_INVALID_MEMORY_POOL
            );
        }
        assert!(ptr.is_null());
    }

    #[test]
    fn signal_wait_times_out_with_the_current_value() {
        let api = Session::new();
        let s = signal(&api, 5);
        let start = Instant::now();
        // SAFETY: a live signal.
        let v = unsafe {
            (api.hsa_signal_wait_scacquire)(
                s,
                SignalCondition::EQ.0,
                0,
                30_000_000,
                ffi::HSA_WAIT_STATE_BLOCKED,
            )
        };
        let waited = start.elapsed();
        assert_eq!(v, 5);
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        // SAFETY: live, destroyed once; the second destroy is refused.
        unsafe {
            assert_eq!((api.hsa_signal_destroy)(s), HSA_STATUS_SUCCESS);
            assert_eq!((api.hsa_signal_destroy)(s), HSA_STATUS_ERROR_INVALID_SIGNAL);
        }
        assert!(!signal_is_live(s));
    }

    #[test]
    fn a_store_on_another_thread_wakes_the_waiter() {
        let api = Session::new();
        let s = signal(&api, 1);
        let storer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            // SAFETY: the signal outlives this thread (joined below).
            unsafe { (super::api().hsa_signal_store_screlease)(s, 0) };
        });
        // SAFETY: a live signal; no timeout.
        let v =
            unsafe { (api.hsa_signal_wait_scacquire)(s, SignalCondition::LT.0, 1, u64::MAX, 0) };
        assert_eq!(v, 0);
        storer.join().unwrap();
        // SAFETY: live; cas returns the value it saw.
        unsafe {
            assert_eq!((api.hsa_signal_cas_scacq_screl)(s, 0, 7), 0);
            assert_eq!((api.hsa_signal_cas_scacq_screl)(s, 0, 9), 7);
            (api.hsa_signal_add_relaxed)(s, -2);
            assert_eq!((api.hsa_signal_load_relaxed)(s), 5);
            (api.hsa_signal_destroy)(s);
            assert_eq!((api.hsa_signal_load_relaxed)(s), 0);
        }
        assert_eq!(misuse().len(), 1, "{:?}", misuse());
    }

    #[test]
    fn async_copy_signals_after_the_bytes_land() {
        let api = Session::new();
        let src = [7u8; 256];
        let mut dst = [0u8; 256];
        let dep = signal(&api, 1);
        let done = signal(&api, 1);
        // SAFETY: both buffers outlive the copy (we wait for `done`).
        let rc = unsafe {
            (api.hsa_amd_memory_async_copy)(
                dst.as_mut_ptr().cast(),
                GPU_AGENT,
                src.as_ptr().cast(),
                CPU_AGENT,
                src.len(),
                1,
                &dep,
                done,
            )
        };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        // SAFETY: live signals.
        unsafe {
            let v = (api.hsa_signal_wait_scacquire)(done, SignalCondition::EQ.0, 0, 50_000_000, 0);
            assert_eq!(v, 1, "the copy must wait for its dependency");
            (api.hsa_signal_store_screlease)(dep, 0);
            let v = (api.hsa_signal_wait_scacquire)(done, SignalCondition::EQ.0, 0, u64::MAX, 0);
            assert_eq!(v, 0);
        }
        assert_eq!(dst, src);
        // SAFETY: live signals, no copy in flight.
        unsafe {
            (api.hsa_signal_destroy)(dep);
            (api.hsa_signal_destroy)(done);
        }
    }

    fn create_queue(api: &Api, size: u32, data: *mut c_void) -> Result<*mut HsaQueue, Status> {
        unsafe extern "C" fn on_error(status: Status, queue: *mut HsaQueue, data: *mut c_void) {
            // SAFETY: the test passes a `&AtomicU64` that outlives the queue.
            let seen = unsafe { &*data.cast::<AtomicU64>() };
            seen.store(
                (u64::from(status) << 32) | (queue as u64 & 0xffff_ffff),
                Ordering::SeqCst,
            );
        }
        let mut queue = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the callback matches its type.
        let rc = unsafe {
            (api.hsa_queue_create)(
                GPU_AGENT,
                size,
                QueueType::MULTI.0,
                Some(on_error),
                data,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        if rc == HSA_STATUS_SUCCESS {
            Ok(queue)
        } else {
            Err(rc)
        }
    }

    #[test]
    fn queue_sizes_outside_the_agents_limits_are_refused() {
        let api = Session::new();
        let none = std::ptr::null_mut();
        assert_eq!(
            create_queue(&api, 100, none),
            Err(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        assert_eq!(
            create_queue(&api, 32, none),
            Err(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        assert_eq!(
            create_queue(&api, QUEUE_MAX * 2, none),
            Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES)
        );
    }

    #[test]
    fn process_consumes_only_published_packets() {
        let api = Session::new();
        let seen = AtomicU64::new(0);
        let queue = create_queue(&api, QUEUE_MIN, (&raw const seen).cast_mut().cast()).unwrap();
        // SAFETY: the queue is live until destroyed at the end.
        let q = unsafe { &*queue };
        assert_eq!(q.base_address % (u64::from(q.size) * 64), 0);
        let done = signal(&api, 2);
        // SAFETY: a live queue.
        let first = unsafe { (api.hsa_queue_add_write_index_scacq_screl)(queue, 3) };
        assert_eq!(first, 0);
        let ring = q.base_address as *mut AqlPacket;
        let publish = |slot: usize, packet: AqlPacket| {
            // SAFETY: the slot is reserved and inside the ring; the header
            // goes last, with release.
            unsafe {
                let p = ring.add(slot);
                let mut body = packet;
                body.header = PacketHeader::INVALID;
                p.write(body);
                AtomicU16::from_ptr(p.cast()).store(packet.header.0, Ordering::Release);
            }
        };
        let header = |t| PacketHeader::new(t, false, FenceScope::SYSTEM, FenceScope::SYSTEM);
        // SAFETY: every field of the packet is an integer or a handle, for
        // which zero is valid.
        let mut dispatch: KernelDispatchPacket = unsafe { std::mem::zeroed() };
        dispatch.header = header(PacketType::KERNEL_DISPATCH);
        dispatch.completion_signal = done;
        // SAFETY: as above.
        let mut barrier: BarrierAndPacket = unsafe { std::mem::zeroed() };
        barrier.header = header(PacketType::BARRIER_AND);
        barrier.completion_signal = done;
        publish(0, AqlPacket::from_typed(&dispatch));
        publish(1, AqlPacket::from_typed(&barrier));
        // Slot 2 is reserved but not yet published.
        assert_eq!(peek(queue).len(), 2);
        let out = process(queue);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_typed::<KernelDispatchPacket>(), Some(dispatch));
        // SAFETY: live queue and signal.
        unsafe {
            assert_eq!((api.hsa_queue_load_read_index_scacquire)(queue), 2);
            assert_eq!((api.hsa_signal_load_scacquire)(done), 0);
            assert_eq!((*ring).header, PacketHeader::INVALID);
        }
        publish(2, AqlPacket::from_typed(&barrier));
        assert_eq!(process(queue).len(), 1);
        assert!(process(queue).is_empty());

        assert_eq!(last_doorbell(queue), None);
        // SAFETY: the queue's own doorbell.
        unsafe { (api.hsa_signal_store_screlease)(q.doorbell_signal, 2) };
        assert_eq!(last_doorbell(queue), Some(2));

        assert!(fault(queue, HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION));
        let expected = (u64::from(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION) << 32)
            | (queue as u64 & 0xffff_ffff);
        assert_eq!(seen.load(Ordering::SeqCst), expected);

        // SAFETY: live queue and signal, destroyed once.
        unsafe {
            assert_eq!((api.hsa_queue_destroy)(queue), HSA_STATUS_SUCCESS);
            assert_eq!(
                (api.hsa_queue_destroy)(queue),
                HSA_STATUS_ERROR_INVALID_QUEUE
            );
            (api.hsa_signal_destroy)(done);
        }
        assert!(!queue_is_live(queue));
        assert!(misuse().is_empty(), "{:?}", misuse());
    }

    fn load(api: &Api, bytes: &[u8], agent: Agent) -> (Executable, CodeObjectReader, Status) {
        let (mut exec, mut reader) = (Executable(0), CodeObjectReader(0));
        // SAFETY: valid out-pointers; `bytes` outlives the reader.
        unsafe {
            let rc = (api.hsa_executable_create_alt)(
                ffi::HSA_PROFILE_FULL,
                ffi::HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                std::ptr::null(),
                &mut exec,
            );
            assert_eq!(rc, HSA_STATUS_SUCCESS);
            let rc = (api.hsa_code_object_reader_create_from_memory)(
                bytes.as_ptr().cast(),
                bytes.len(),
                &mut reader,
            );
            assert_eq!(rc, HSA_STATUS_SUCCESS);
            let rc = (api.hsa_executable_load_agent_code_object)(
                exec,
                agent,
                reader,
                std::ptr::null(),
                std::ptr::null_mut(),
            );
            (exec, reader, rc)
        }
    }

    #[test]
    fn the_device_library_loads_and_its_kernels_are_found() {
        let Some(bytes) = device_code("gfx942") else {
            return;
        };
        let api = Session::new();
        let (exec, reader, rc) = load(&api, &bytes, GPU_AGENT);
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        let expected = CodeObject::parse(&bytes).unwrap();
        let kernel = expected.kernel("fill_u32").unwrap();
        let mut sym = ExecutableSymbol(0);
        // SAFETY: live handles, valid out-pointers and value types.
        unsafe {
            assert_eq!(
                (api.hsa_executable_freeze)(exec, std::ptr::null()),
                HSA_STATUS_SUCCESS
            );
            let rc = (api.hsa_executable_get_symbol_by_name)(
                exec,
                c"fill_u32.kd".as_ptr(),
                &GPU_AGENT,
                &mut sym,
            );
            assert_eq!(rc, HSA_STATUS_SUCCESS);
            let rc = (api.hsa_executable_get_symbol_by_name)(
                exec,
                c"fill_u32".as_ptr(),
                &GPU_AGENT,
                &mut ExecutableSymbol(0),
            );
            assert_eq!(rc, HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
            let mut object = 0u64;
            let rc = (api.hsa_executable_symbol_get_info)(
                sym,
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                (&raw mut object).cast(),
            );
            assert_eq!(rc, HSA_STATUS_SUCCESS);
            assert_eq!(object % 64, 0);
            assert_eq!(*(object as *const KernelDescriptor), kernel.descriptor);
            let mut kernarg = 0u32;
            (api.hsa_executable_symbol_get_info)(
                sym,
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                (&raw mut kernarg).cast(),
            );
            assert_eq!(u64::from(kernarg), kernel.metadata.kernarg_segment_size);
            let rc = (api.hsa_executable_load_agent_code_object)(
                exec,
                GPU_AGENT,
                reader,
                std::ptr::null(),
                std::ptr::null_mut(),
            );
            assert_eq!(rc, HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
            assert_eq!(
                (api.hsa_code_object_reader_destroy)(reader),
                HSA_STATUS_SUCCESS
            );
            assert_eq!((api.hsa_executable_destroy)(exec), HSA_STATUS_SUCCESS);
            let rc = (api.hsa_executable_symbol_get_info)(
                sym,
                ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                (&raw mut object).cast(),
            );
            assert_eq!(rc, HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
        }
        assert_eq!(
            calls()[..4],
            [
                "hsa_init",
                "hsa_executable_create_alt",
                "hsa_code_object_reader_create_from_memory",
                "hsa_executable_load_agent_code_object",
            ]
        );
        assert!(!executable_is_live(exec) && !reader_is_live(reader));
    }

    #[test]
    fn code_for_another_gpu_or_no_gpu_is_refused() {
        let api = Session::new();
        if let Some(bytes) = device_code("gfx90a") {
            let (exec, reader, rc) = load(&api, &bytes, GPU_AGENT);
            assert_eq!(rc, HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
            // SAFETY: live handles.
            unsafe {
                (api.hsa_code_object_reader_destroy)(reader);
                (api.hsa_executable_destroy)(exec);
            }
        }
        let (exec, reader, rc) = load(&api, b"not an ELF file", GPU_AGENT);
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
        assert!(!is_frozen(exec));
        // SAFETY: live handles.
        unsafe {
            (api.hsa_code_object_reader_destroy)(reader);
            (api.hsa_executable_destroy)(exec);
        }
    }

    #[test]
    fn an_injected_failure_fires_once() {
        let api = Session::new();
        set_fail("hsa_signal_create", HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        let mut s = SignalHandle::NULL;
        // SAFETY: valid out-pointer.
        let rc = unsafe { (api.hsa_signal_create)(0, 0, std::ptr::null(), &mut s) };
        assert_eq!(rc, HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        assert!(s.is_null());
        let s = signal(&api, 0);
        // SAFETY: live signal.
        unsafe { (api.hsa_signal_destroy)(s) };
    }
}
