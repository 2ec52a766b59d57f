//! Runtime lifetime, system information, agents and ISAs.
//!
//! ROCr behaviour mirrored here: `hsa_init` is reference-counted and the
//! last `hsa_shut_down` tears everything down (joining every queue's
//! processor thread); before `hsa_init` every call answers
//! NOT_INITIALIZED; `hsa_iterate_agents` lists the CPU first; GPU-only
//! attributes asked of the CPU are INVALID_ARGUMENT.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::{
    AgentKind, AgentSpec, Info, Runtime, Status, answer, chars, global, profile, put, status,
};

/// `hsa_agent_t`, `hsa_isa_t`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle(pub u64);

// hsa_system_info_t
const SYSTEM_VERSION_MAJOR: u32 = 0;
const SYSTEM_VERSION_MINOR: u32 = 1;
const SYSTEM_TIMESTAMP: u32 = 2;
const SYSTEM_TIMESTAMP_FREQUENCY: u32 = 3;
const SYSTEM_SIGNAL_MAX_WAIT: u32 = 4;
const SYSTEM_ENDIANNESS: u32 = 5;
const SYSTEM_MACHINE_MODEL: u32 = 6;

/// The system timestamp counts nanoseconds (HSA_SYSTEM_INFO_TIMESTAMP).
pub const TIMESTAMP_HZ: u64 = 1_000_000_000;

/// `hsa_init`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_init() -> Status {
    let mut g = global();
    if g.0 == 0 {
        let text = std::env::var(profile::AGENTS_ENV).unwrap_or_default();
        let specs = match AgentSpec::parse_list(&text) {
            Ok(s) => s,
            Err(why) => {
                // The status alone cannot say what was wrong.
                eprintln!("aqueduct-sim: {}: {why}", profile::AGENTS_ENV);
                return status::INVALID_ARGUMENT;
            }
        };
        g.1 = Some(Arc::new(Runtime::new(&specs)));
        super::runtime_changed();
    }
    g.0 = g.0.saturating_add(1);
    status::SUCCESS
}

/// `hsa_shut_down`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_shut_down() -> Status {
    let last = {
        let mut g = global();
        if g.0 == 0 {
            return status::NOT_INITIALIZED;
        }
        g.0 -= 1;
        if g.0 == 0 {
            super::runtime_changed();
            g.1.take()
        } else {
            None
        }
    };
    // Outside the lock: processor threads may be calling `runtime()`.
    if let Some(rt) = last {
        rt.shut_down();
    }
    status::SUCCESS
}

/// `hsa_status_string`: ROCr's texts for the statuses it defines.
///
/// # Safety
/// `text` is null or valid for a pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_status_string(s: Status, text: *mut *const c_char) -> Status {
    let msg: &'static [u8] = match s {
        status::SUCCESS => b"HSA_STATUS_SUCCESS: The function has been executed successfully.\0",
        status::INFO_BREAK => b"HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by the application before completing.\0",
        status::ERROR => b"HSA_STATUS_ERROR: A generic error has occurred.\0",
        status::INVALID_ARGUMENT => b"HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.\0",
        status::INVALID_QUEUE_CREATION => b"HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue creation is not valid.\0",
        status::INVALID_ALLOCATION => b"HSA_STATUS_ERROR_INVALID_ALLOCATION: The requested allocation is not valid.\0",
        status::INVALID_AGENT => b"HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.\0",
        status::INVALID_SIGNAL => b"HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid.\0",
        status::INVALID_QUEUE => b"HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.\0",
        status::OUT_OF_RESOURCES => b"HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events.\0",
        status::INVALID_PACKET_FORMAT => b"HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: The AQL packet is malformed.\0",
        status::NOT_INITIALIZED => b"HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero.\0",
        status::INCOMPATIBLE_ARGUMENTS => b"HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: Arguments passed to a function are not compatible.\0",
        status::INVALID_ISA => b"HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.\0",
        status::INVALID_CODE_OBJECT => b"HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.\0",
        status::INVALID_EXECUTABLE => b"HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid.\0",
        status::FROZEN_EXECUTABLE => b"HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen.\0",
        status::INVALID_SYMBOL_NAME => b"HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: There is no symbol with the given name.\0",
        status::EXCEPTION => b"HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception.\0",
        status::INVALID_ISA_NAME => b"HSA_STATUS_ERROR_INVALID_ISA_NAME: The instruction set architecture name is invalid.\0",
        status::INVALID_EXECUTABLE_SYMBOL => b"HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid.\0",
        status::INVALID_CODE_OBJECT_READER => b"HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object reader is invalid.\0",
        status::INVALID_MEMORY_POOL => b"HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid.\0",
        status::MEMORY_APERTURE_VIOLATION => b"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The memory access was to an invalid address.\0",
        status::ILLEGAL_INSTRUCTION => b"HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: The queue received an illegal instruction.\0",
        status::MEMORY_FAULT => b"HSA_STATUS_ERROR_MEMORY_FAULT: Agent attempted to access an inaccessible address.\0",
        _ => return status::INVALID_ARGUMENT,
    };
    // SAFETY: `text` is null or valid for a pointer write (caller).
    unsafe { put(text, msg.as_ptr().cast::<c_char>()) }
}

/// `hsa_system_get_info`.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_system_get_info(attribute: u32, value: *mut c_void) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        answer(value, |_| {
            Ok(match attribute {
                SYSTEM_VERSION_MAJOR | SYSTEM_VERSION_MINOR => Info::U16(1),
                SYSTEM_TIMESTAMP => Info::U64(crate::clock::shader_cycles()),
                SYSTEM_TIMESTAMP_FREQUENCY => Info::U64(TIMESTAMP_HZ),
                SYSTEM_SIGNAL_MAX_WAIT => Info::U64(u64::MAX),
                // HSA_ENDIANNESS_LITTLE, HSA_MACHINE_MODEL_LARGE.
                SYSTEM_ENDIANNESS => Info::U32(0),
                SYSTEM_MACHINE_MODEL => Info::U32(1),
                _ => return Err(status::INVALID_ARGUMENT),
            })
        })
    }
}

/// `hsa_iterate_agents`: the CPU, then the GPUs in `AQUEDUCT_SIM_AGENTS`
/// order.
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_iterate_agents(
    callback: Option<unsafe extern "C" fn(Handle, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        super::iterate_listed(callback, data, |rt| {
            Ok(rt.agents.iter().map(|a| Handle(a.handle)).collect())
        })
    }
}

// hsa_agent_info_t / hsa_amd_agent_info_t values used below.
mod agent_info {
    pub const NAME: u32 = 0;
    pub const VENDOR_NAME: u32 = 1;
    pub const FEATURE: u32 = 2;
    pub const MACHINE_MODEL: u32 = 3;
    pub const PROFILE: u32 = 4;
    pub const DEFAULT_FLOAT_ROUNDING_MODE: u32 = 5;
    pub const WAVEFRONT_SIZE: u32 = 6;
    pub const WORKGROUP_MAX_DIM: u32 = 7;
    pub const WORKGROUP_MAX_SIZE: u32 = 8;
    pub const GRID_MAX_DIM: u32 = 9;
    pub const GRID_MAX_SIZE: u32 = 10;
    pub const FBARRIER_MAX_SIZE: u32 = 11;
    pub const QUEUES_MAX: u32 = 12;
    pub const QUEUE_MIN_SIZE: u32 = 13;
    pub const QUEUE_MAX_SIZE: u32 = 14;
    pub const QUEUE_TYPE: u32 = 15;
    pub const NODE: u32 = 16;
    pub const DEVICE: u32 = 17;
    pub const ISA: u32 = 19;
    pub const VERSION_MAJOR: u32 = 21;
    pub const VERSION_MINOR: u32 = 22;
    pub const CHIP_ID: u32 = 0xA000;
    pub const CACHELINE_SIZE: u32 = 0xA001;
    pub const COMPUTE_UNIT_COUNT: u32 = 0xA002;
    pub const MAX_CLOCK_FREQUENCY: u32 = 0xA003;
    pub const BDFID: u32 = 0xA006;
    pub const PRODUCT_NAME: u32 = 0xA009;
    pub const MAX_WAVES_PER_CU: u32 = 0xA00A;
    pub const NUM_SIMDS_PER_CU: u32 = 0xA00B;
    pub const DOMAIN: u32 = 0xA00F;
    pub const UUID: u32 = 0xA011;
}

/// Queue sizes in packets: ROCr's limits for GPU agents.
pub const QUEUE_MIN_PACKETS: u32 = 64;
pub const QUEUE_MAX_PACKETS: u32 = 1 << 17;
/// `HSA_AGENT_FEATURE_KERNEL_DISPATCH | HSA_AGENT_FEATURE_AGENT_DISPATCH`.
const FEATURE_KERNEL_DISPATCH: u32 = 1;
/// `HSA_QUEUE_TYPE_MULTIPLE`.
const QUEUE_TYPE_MULTIPLE: u32 = 1;
/// `HSA_PROFILE_BASE` (GPUs), `HSA_PROFILE_FULL` (the CPU).
const PROFILE_BASE: u32 = 0;
const PROFILE_FULL: u32 = 1;

/// The high bytes of a simulated GPU's unique id: "SIM" in ASCII.
const SIM_UNIQUE_ID: u64 = 0x5349_4d00_0000_0000;

/// ISA handles: one per GPU agent, derived from the agent's.
const ISA_HANDLE_OFFSET: u64 = 0x100;

fn agent_info(rt: &Runtime, agent: Handle, attribute: u32) -> Result<Info, Status> {
    use agent_info::*;
    let a = rt.agent(agent.0).ok_or(status::INVALID_AGENT)?;
    let gpu = match a.kind {
        AgentKind::Gpu(p) => Some(p),
        AgentKind::Cpu => None,
    };
    let cpu_name = "AQUEDUCT-SIM-CPU";
    Ok(match (attribute, gpu) {
        (NAME, Some(p)) => chars(p.gfx(), 64),
        (NAME, None) => chars(cpu_name, 64),
        (VENDOR_NAME, Some(_)) => chars("AMD", 64),
        (VENDOR_NAME, None) => chars("CPU", 64),
        (FEATURE, Some(_)) => Info::U32(FEATURE_KERNEL_DISPATCH),
        (FEATURE, None) => Info::U32(0),
        (MACHINE_MODEL, _) => Info::U32(1),
        (PROFILE, Some(_)) => Info::U32(PROFILE_BASE),
        (PROFILE, None) => Info::U32(PROFILE_FULL),
        (DEFAULT_FLOAT_ROUNDING_MODE, _) => Info::U32(1),
        (QUEUE_TYPE, _) => Info::U32(QUEUE_TYPE_MULTIPLE),
        (NODE, _) => Info::U32(a.node),
        (DEVICE, Some(_)) => Info::U32(1),
        (DEVICE, None) => Info::U32(0),
        (ISA, Some(_)) => Info::U64(agent.0 + ISA_HANDLE_OFFSET),
        (ISA, None) => Info::U64(0),
        (VERSION_MAJOR | VERSION_MINOR, _) => Info::U16(1),
        (WAVEFRONT_SIZE, Some(_)) => Info::U32(64),
        (WORKGROUP_MAX_DIM, Some(_)) => Info::U16x3([1024; 3]),
        (WORKGROUP_MAX_SIZE, Some(_)) => Info::U32(1024),
        (GRID_MAX_DIM, Some(_)) => Info::U32x3([u32::MAX; 3]),
        (GRID_MAX_SIZE, Some(_)) => Info::U32(u32::MAX),
        (FBARRIER_MAX_SIZE, Some(_)) => Info::U32(32),
        (QUEUES_MAX, Some(_)) => Info::U32(128),
        (QUEUE_MIN_SIZE, Some(_)) => Info::U32(QUEUE_MIN_PACKETS),
        (QUEUE_MAX_SIZE, Some(_)) => Info::U32(QUEUE_MAX_PACKETS),
        (CHIP_ID, Some(p)) => Info::U32(p.chip_id),
        (CHIP_ID, None) => Info::U32(0),
        (CACHELINE_SIZE, Some(_)) => Info::U32(128),
        (CACHELINE_SIZE, None) => Info::U32(64),
        (COMPUTE_UNIT_COUNT, Some(p)) => Info::U32(p.compute_units),
        (COMPUTE_UNIT_COUNT, None) => {
            Info::U32(std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
        }
        (MAX_CLOCK_FREQUENCY, Some(p)) => Info::U32(p.max_clock_mhz),
        (MAX_CLOCK_FREQUENCY, None) => Info::U32(0),
        // A made-up bus per GPU node: bus = node, device 0, function 0.
        (BDFID, Some(_)) => Info::U32(a.node << 8),
        (BDFID, None) => Info::U32(0),
        (DOMAIN, _) => Info::U32(0),
        (PRODUCT_NAME, Some(p)) => chars(p.product, 64),
        (PRODUCT_NAME, None) => chars(cpu_name, 64),
        (MAX_WAVES_PER_CU, Some(_)) => Info::U32(32),
        (NUM_SIMDS_PER_CU, Some(_)) => Info::U32(4),
        // ROCr: `GPU-` and the KFD unique id as 16 hex digits, the form
        // `amdgpu://GPU-…` device strings parse. Ours spells "SIM" in its
        // high bytes and the node below, so it is stable and distinct.
        (UUID, Some(_)) => chars(
            &format!("GPU-{:016x}", SIM_UNIQUE_ID | u64::from(a.node)),
            21,
        ),
        (UUID, None) => chars("CPU-XX", 7),
        _ => return Err(status::INVALID_ARGUMENT),
    })
}

/// `hsa_agent_get_info`.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_get_info(
    agent: Handle,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { answer(value, |rt| agent_info(rt, agent, attribute)) }
}

/// `hsa_agent_iterate_isas`: a GPU's one ISA; none for the CPU.
///
/// # Safety
/// `callback`/`data` follow hsa.h's iteration contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: Handle,
    callback: Option<unsafe extern "C" fn(Handle, *mut c_void) -> Status>,
    data: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        super::iterate_of_agent(agent, callback, data, |_, a| match a.kind {
            AgentKind::Gpu(_) => vec![Handle(a.handle + ISA_HANDLE_OFFSET)],
            AgentKind::Cpu => Vec::new(),
        })
    }
}

/// The GPU profile behind an ISA handle.
pub fn isa_profile(rt: &Runtime, isa: Handle) -> Option<super::Profile> {
    rt.gpu(isa.0.checked_sub(ISA_HANDLE_OFFSET)?)
        .map(|(_, p)| p)
}

// hsa_isa_info_t
const ISA_NAME_LENGTH: u32 = 0;
const ISA_NAME: u32 = 1;

/// `hsa_isa_get_info_alt`: NAME_LENGTH counts the NUL and NAME writes it
/// (ROCr `Isa::GetInfo`).
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_isa_get_info_alt(
    isa: Handle,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        answer(value, |rt| {
            let p = isa_profile(rt, isa).ok_or(status::INVALID_ISA)?;
            let name = p.isa_name();
            Ok(match attribute {
                ISA_NAME_LENGTH => Info::U32(name.len() as u32 + 1),
                ISA_NAME => chars(&name, name.len() + 1),
                _ => return Err(status::INVALID_ARGUMENT),
            })
        })
    }
}
