//! Runtime lifetime, system information, agents and ISAs.
//!
//! ROCr behaviour mirrored here: `hsa_init` is reference-counted and the
//! last `hsa_shut_down` tears everything down (joining every queue's
//! processor thread); before `hsa_init` every call answers
//! NOT_INITIALIZED; `hsa_iterate_agents` lists the CPU first; GPU-only
//! attributes asked of the CPU are INVALID_ARGUMENT.

use std::sync::Arc;

use aqueduct_abi::hsa::QueueType;
use aqueduct_abi::hsa_api::*;

use super::{AgentKind, AgentSpec, Info, Runtime, answer, chars, global, profile, put};

/// The system timestamp counts nanoseconds (HSA_SYSTEM_INFO_TIMESTAMP).
pub const TIMESTAMP_HZ: u64 = 1_000_000_000;

/// Turns the simulator's strict memory mode on (see `crate::memory`).
pub const STRICT_ENV: &str = "AQUEDUCT_SIM_STRICT";

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
                return HSA_STATUS_ERROR_INVALID_ARGUMENT;
            }
        };
        let runtime = Runtime::new(&specs);
        // Any value but empty or "0" turns strict mode on (`memory`).
        let strict = std::env::var(STRICT_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        runtime.memory.set_strict(strict);
        g.1 = Some(Arc::new(runtime));
        super::runtime_changed();
    }
    g.0 = g.0.saturating_add(1);
    HSA_STATUS_SUCCESS
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
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
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
    HSA_STATUS_SUCCESS
}

/// `hsa_status_string`: ROCr's texts for the statuses it defines
/// ([`status_text`]); INVALID_ARGUMENT for any other.
///
/// # Safety
/// `status_string` is null or valid for a pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_status_string(
    status: Status,
    status_string: *mut *const c_char,
) -> Status {
    match status_text(status) {
        // SAFETY: `status_string` is null or valid for a pointer write
        // (caller).
        Some(text) => unsafe { put(status_string, text.as_ptr()) },
        None => HSA_STATUS_ERROR_INVALID_ARGUMENT,
    }
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
                HSA_SYSTEM_INFO_VERSION_MAJOR | HSA_SYSTEM_INFO_VERSION_MINOR => Info::U16(1),
                HSA_SYSTEM_INFO_TIMESTAMP => Info::U64(crate::clock::shader_cycles()),
                HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY => Info::U64(TIMESTAMP_HZ),
                HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT => Info::U64(u64::MAX),
                HSA_SYSTEM_INFO_ENDIANNESS => Info::U32(HSA_ENDIANNESS_LITTLE),
                HSA_SYSTEM_INFO_MACHINE_MODEL => Info::U32(HSA_MACHINE_MODEL_LARGE),
                _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
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
    callback: Option<AgentCallback>,
    data: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        super::iterate_listed(callback, data, |rt| {
            Ok(rt.agents.iter().map(|a| Agent(a.handle)).collect())
        })
    }
}

/// Queue sizes in packets: ROCr's limits for GPU agents. This is the
/// smallest (`HSA_AGENT_INFO_QUEUE_MIN_SIZE`).
pub const QUEUE_MIN_PACKETS: u32 = 64;
/// The largest queue, in packets (`HSA_AGENT_INFO_QUEUE_MAX_SIZE`).
pub const QUEUE_MAX_PACKETS: u32 = 1 << 17;

/// The high bytes of a simulated GPU's unique id: "SIM" in ASCII.
const SIM_UNIQUE_ID: u64 = 0x5349_4d00_0000_0000;

/// ISA handles: one per GPU agent, derived from the agent's.
const ISA_HANDLE_OFFSET: u64 = 0x100;

fn agent_info(rt: &Runtime, agent: Agent, attribute: u32) -> Result<Info, Status> {
    let a = rt.agent(agent.0).ok_or(HSA_STATUS_ERROR_INVALID_AGENT)?;
    let gpu = match a.kind {
        AgentKind::Gpu(p) => Some(p),
        AgentKind::Cpu => None,
    };
    let cpu_name = "AQUEDUCT-SIM-CPU";
    Ok(match (attribute, gpu) {
        (HSA_AGENT_INFO_NAME, Some(p)) => chars(p.gfx(), 64),
        (HSA_AGENT_INFO_NAME, None) => chars(cpu_name, 64),
        (HSA_AGENT_INFO_VENDOR_NAME, Some(_)) => chars("AMD", 64),
        (HSA_AGENT_INFO_VENDOR_NAME, None) => chars("CPU", 64),
        (HSA_AGENT_INFO_FEATURE, Some(_)) => Info::U32(HSA_AGENT_FEATURE_KERNEL_DISPATCH),
        (HSA_AGENT_INFO_FEATURE, None) => Info::U32(0),
        (HSA_AGENT_INFO_MACHINE_MODEL, _) => Info::U32(HSA_MACHINE_MODEL_LARGE),
        (HSA_AGENT_INFO_PROFILE, Some(_)) => Info::U32(HSA_PROFILE_BASE),
        (HSA_AGENT_INFO_PROFILE, None) => Info::U32(HSA_PROFILE_FULL),
        // ROCr answers NEAR for every agent (`GpuAgent::GetInfo`,
        // `CpuAgent::GetInfo`).
        (HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE, _) => {
            Info::U32(HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
        }
        (HSA_AGENT_INFO_QUEUE_TYPE, _) => Info::U32(QueueType::MULTI.0),
        (HSA_AGENT_INFO_NODE, _) => Info::U32(a.node),
        (HSA_AGENT_INFO_DEVICE, Some(_)) => Info::U32(HSA_DEVICE_TYPE_GPU),
        (HSA_AGENT_INFO_DEVICE, None) => Info::U32(HSA_DEVICE_TYPE_CPU),
        (HSA_AGENT_INFO_ISA, Some(_)) => Info::U64(agent.0 + ISA_HANDLE_OFFSET),
        (HSA_AGENT_INFO_ISA, None) => Info::U64(0),
        (HSA_AGENT_INFO_VERSION_MAJOR | HSA_AGENT_INFO_VERSION_MINOR, _) => Info::U16(1),
        (HSA_AGENT_INFO_WAVEFRONT_SIZE, Some(p)) => Info::U32(p.facts().wave_size),
        (HSA_AGENT_INFO_WORKGROUP_MAX_DIM, Some(p)) => {
            Info::U16x3([p.facts().max_workgroup_size as u16; 3])
        }
        (HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, Some(p)) => Info::U32(p.facts().max_workgroup_size),
        (HSA_AGENT_INFO_GRID_MAX_DIM, Some(_)) => Info::U32x3([u32::MAX; 3]),
        (HSA_AGENT_INFO_GRID_MAX_SIZE, Some(_)) => Info::U32(u32::MAX),
        (HSA_AGENT_INFO_FBARRIER_MAX_SIZE, Some(_)) => Info::U32(32),
        (HSA_AGENT_INFO_QUEUES_MAX, Some(_)) => Info::U32(128),
        (HSA_AGENT_INFO_QUEUE_MIN_SIZE, Some(_)) => Info::U32(QUEUE_MIN_PACKETS),
        (HSA_AGENT_INFO_QUEUE_MAX_SIZE, Some(_)) => Info::U32(QUEUE_MAX_PACKETS),
        (HSA_AMD_AGENT_INFO_CHIP_ID, Some(p)) => Info::U32(p.chip_id),
        (HSA_AMD_AGENT_INFO_CHIP_ID, None) => Info::U32(0),
        (HSA_AMD_AGENT_INFO_CACHELINE_SIZE, Some(p)) => Info::U32(p.facts().cacheline_bytes),
        (HSA_AMD_AGENT_INFO_CACHELINE_SIZE, None) => Info::U32(64),
        (HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, Some(p)) => Info::U32(p.compute_units),
        (HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, None) => {
            Info::U32(std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
        }
        (HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY, Some(p)) => Info::U32(p.max_clock_mhz),
        (HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY, None) => Info::U32(0),
        // A made-up bus per GPU node: bus = node, device 0, function 0.
        (HSA_AMD_AGENT_INFO_BDFID, Some(_)) => Info::U32(a.node << 8),
        (HSA_AMD_AGENT_INFO_BDFID, None) => Info::U32(0),
        (HSA_AMD_AGENT_INFO_DOMAIN, _) => Info::U32(0),
        (HSA_AMD_AGENT_INFO_PRODUCT_NAME, Some(p)) => chars(p.product, 64),
        (HSA_AMD_AGENT_INFO_PRODUCT_NAME, None) => chars(cpu_name, 64),
        (HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU, Some(p)) => Info::U32(p.facts().max_waves_per_cu()),
        (HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU, Some(p)) => Info::U32(p.facts().simds_per_cu),
        // ROCr: `GPU-` and the KFD unique id as 16 hex digits, the form
        // `amdgpu://GPU-…` device strings parse. Ours spells "SIM" in its
        // high bytes and the node below, so it is stable and distinct.
        (HSA_AMD_AGENT_INFO_UUID, Some(_)) => chars(
            &format!("GPU-{:016x}", SIM_UNIQUE_ID | u64::from(a.node)),
            21,
        ),
        (HSA_AMD_AGENT_INFO_UUID, None) => chars("CPU-XX", 7),
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

/// `hsa_agent_get_info`.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_agent_get_info(
    agent: Agent,
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
    agent: Agent,
    callback: Option<IsaCallback>,
    data: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        super::iterate_of_agent(agent, callback, data, |_, a| match a.kind {
            AgentKind::Gpu(_) => vec![Isa(a.handle + ISA_HANDLE_OFFSET)],
            AgentKind::Cpu => Vec::new(),
        })
    }
}

/// The GPU profile behind an ISA handle.
pub fn isa_profile(rt: &Runtime, isa: Isa) -> Option<super::Profile> {
    rt.gpu(isa.0.checked_sub(ISA_HANDLE_OFFSET)?)
        .map(|(_, p)| p)
}

/// `hsa_isa_get_info_alt`: NAME_LENGTH counts the NUL and NAME writes it
/// (ROCr `Isa::GetInfo`).
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_isa_get_info_alt(
    isa: Isa,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        answer(value, |rt| {
            let p = isa_profile(rt, isa).ok_or(HSA_STATUS_ERROR_INVALID_ISA)?;
            let name = p.isa_name();
            Ok(match attribute {
                HSA_ISA_INFO_NAME_LENGTH => Info::U32(name.len() as u32 + 1),
                HSA_ISA_INFO_NAME => chars(&name, name.len() + 1),
                _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;
    use crate::hsa::testing::Init;

    #[test]
    fn status_strings_need_no_init_and_cover_every_status() {
        // Before any hsa_init of this test (another test may hold one: the
        // answer must not depend on it).
        for &(status, name, _) in STATUSES {
            let mut text: *const c_char = std::ptr::null();
            // SAFETY: a valid out-pointer.
            let rc = unsafe { hsa_status_string(status, &mut text) };
            assert_eq!(rc, HSA_STATUS_SUCCESS, "{name}");
            // SAFETY: a static NUL-terminated text.
            let text = unsafe { CStr::from_ptr(text) }.to_str().unwrap();
            assert!(text.starts_with(name), "{text}");
        }
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: a valid out-pointer.
        let rc = unsafe { hsa_status_string(0x7777, &mut text) };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        // SAFETY: a null out-pointer is refused, not written.
        let rc = unsafe { hsa_status_string(HSA_STATUS_SUCCESS, std::ptr::null_mut()) };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }

    #[test]
    fn agent_attributes_are_written_in_their_c_types() {
        let init = Init::new();
        let (cpu, gpu) = (
            Agent(init.0.agents[0].handle),
            Agent(init.0.agents[1].handle),
        );
        let mut name = [0xffu8; 64];
        // SAFETY: NAME is char[64].
        let rc = unsafe { hsa_agent_get_info(gpu, HSA_AGENT_INFO_NAME, name.as_mut_ptr().cast()) };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        let gfx = init.0.gpu(gpu.0).unwrap().1.gfx();
        assert_eq!(&name[..gfx.len()], gfx.as_bytes());
        assert!(name[gfx.len()..].iter().all(|&b| b == 0), "NUL-padded");
        let mut dims = [0u16; 4];
        // SAFETY: WORKGROUP_MAX_DIM is uint16_t[3]; the fourth stays put.
        let rc = unsafe {
            hsa_agent_get_info(
                gpu,
                HSA_AGENT_INFO_WORKGROUP_MAX_DIM,
                dims.as_mut_ptr().cast(),
            )
        };
        assert_eq!((rc, dims), (HSA_STATUS_SUCCESS, [1024, 1024, 1024, 0]));
        let mut rounding = 0u32;
        // SAFETY: a hsa_default_float_rounding_mode_t (32 bits).
        let rc = unsafe {
            hsa_agent_get_info(
                cpu,
                HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE,
                (&raw mut rounding).cast(),
            )
        };
        assert_eq!(
            (rc, rounding),
            (HSA_STATUS_SUCCESS, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
        );
        let mut waves = 0u32;
        // SAFETY: a u32 attribute, asked of the CPU, which has none.
        let rc = unsafe {
            hsa_agent_get_info(cpu, HSA_AGENT_INFO_WAVEFRONT_SIZE, (&raw mut waves).cast())
        };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        let mut isa = Isa(0);
        // SAFETY: ISA is an hsa_isa_t.
        let rc = unsafe { hsa_agent_get_info(gpu, HSA_AGENT_INFO_ISA, (&raw mut isa).cast()) };
        assert_eq!(rc, HSA_STATUS_SUCCESS);
        let mut len = 0u32;
        // SAFETY: NAME_LENGTH is a u32.
        let rc =
            unsafe { hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, (&raw mut len).cast()) };
        let full = init.0.gpu(gpu.0).unwrap().1.isa_name();
        assert_eq!((rc, len as usize), (HSA_STATUS_SUCCESS, full.len() + 1));
    }

    unsafe extern "C" fn break_at_first<H>(_: H, data: *mut c_void) -> Status {
        // SAFETY: the test passes a `&mut u32` counter.
        unsafe { *data.cast::<u32>() += 1 };
        HSA_STATUS_INFO_BREAK
    }

    #[test]
    fn iteration_stops_with_the_callbacks_status() {
        let init = Init::new();
        let (cpu, gpu) = (
            Agent(init.0.agents[0].handle),
            Agent(init.0.agents[1].handle),
        );
        let mut seen = 0u32;
        // SAFETY: the callback only bumps the counter.
        let rc = unsafe { hsa_iterate_agents(Some(break_at_first), (&raw mut seen).cast()) };
        assert_eq!((rc, seen), (HSA_STATUS_INFO_BREAK, 1));
        // SAFETY: as above.
        let rc = unsafe {
            super::super::memory::hsa_amd_agent_iterate_memory_pools(
                gpu,
                Some(break_at_first),
                (&raw mut seen).cast(),
            )
        };
        assert_eq!((rc, seen), (HSA_STATUS_INFO_BREAK, 2));
        // SAFETY: as above.
        let rc =
            unsafe { hsa_agent_iterate_isas(cpu, Some(break_at_first), (&raw mut seen).cast()) };
        assert_eq!((rc, seen), (HSA_STATUS_SUCCESS, 2), "the CPU has no ISA");
        // SAFETY: a null callback is refused before anything is called.
        let rc = unsafe { hsa_iterate_agents(None, std::ptr::null_mut()) };
        assert_eq!(rc, HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
}
