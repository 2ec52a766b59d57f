//! HSA agents: the CPU and GPU devices the runtime reports, and their
//! properties, read once at enumeration.

use crate::error::Result;
use crate::hsa::System;

use crate::hsa::ffi;

/// `hsa_device_type_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentKind {
    /// `HSA_DEVICE_TYPE_CPU` (0).
    Cpu,
    /// `HSA_DEVICE_TYPE_GPU` (1).
    Gpu,
    /// `HSA_DEVICE_TYPE_DSP` (2).
    Dsp,
    /// A device type `hsa.h` does not define, as reported.
    Other(u32),
}

/// PCI location, from `HSA_AMD_AGENT_INFO_DOMAIN` and `_BDFID`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PciAddress {
    /// PCI segment (domain), `HSA_AMD_AGENT_INFO_DOMAIN`.
    pub domain: u32,
    /// Bus number.
    pub bus: u8,
    /// Device number, 0..32.
    pub device: u8,
    /// Function number, 0..8.
    pub function: u8,
}

impl PciAddress {
    /// Splits ROCr's BDF id: bus in bits 8..16, device 3..8, function 0..3.
    pub fn from_bdfid(domain: u32, bdfid: u32) -> Self {
        Self {
            domain,
            bus: ((bdfid >> 8) & 0xff) as u8,
            device: ((bdfid >> 3) & 0x1f) as u8,
            function: (bdfid & 0x7) as u8,
        }
    }
}

impl std::fmt::Display for PciAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// What a GPU agent reports beyond the common properties.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GpuInfo {
    /// ISA name, e.g. `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`.
    pub isa: String,
    /// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`: active compute units.
    pub compute_units: u32,
    /// `HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU` (4 on CDNA).
    pub simds_per_cu: u32,
    /// `HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU`: resident waves a compute
    /// unit can hold.
    pub max_waves_per_cu: u32,
    /// LDS bytes per workgroup (the agent's group-segment pool).
    pub lds_size: u64,
    /// PCI device id (`HSA_AMD_AGENT_INFO_CHIP_ID`), e.g. 0x74a1 for MI300X.
    pub chip_id: u32,
    /// Where the GPU sits on the PCI bus (`HSA_AMD_AGENT_INFO_BDFID`).
    pub pci: PciAddress,
    /// `GPU-<16 hex digits>`, stable across reboots.
    pub uuid: String,
    /// Marketing name, e.g. `AMD Instinct MI300X`.
    pub product_name: String,
    /// `HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY`: peak engine clock, MHz.
    pub max_clock_mhz: u32,
    /// `HSA_AMD_AGENT_INFO_CACHELINE_SIZE`: bytes.
    pub cacheline_size: u32,
}

/// Properties of one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentInfo {
    /// `HSA_AGENT_INFO_DEVICE`.
    pub kind: AgentKind,
    /// `HSA_AGENT_INFO_NAME`: the gfx name for GPUs (`gfx942`), the CPU's
    /// name otherwise.
    pub name: String,
    /// `HSA_AGENT_INFO_VENDOR_NAME`, e.g. `AMD`.
    pub vendor: String,
    /// KFD node id.
    pub node: u32,
    /// `HSA_AGENT_INFO_WAVEFRONT_SIZE`: 64 on CDNA, 32 on RDNA (0 for CPU
    /// agents: the dispatch limits below are read for GPUs only).
    pub wavefront_size: u32,
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_DIM`: most work-items per workgroup
    /// in x, y, z.
    pub workgroup_max_dim: [u16; 3],
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`: most work-items per workgroup.
    pub workgroup_max_size: u32,
    /// `HSA_AGENT_INFO_GRID_MAX_DIM`: most work-items of a grid in x, y, z.
    pub grid_max_dim: [u32; 3],
    /// `HSA_AGENT_INFO_GRID_MAX_SIZE`: most work-items of a grid.
    pub grid_max_size: u32,
    /// `HSA_AGENT_INFO_QUEUES_MAX`: queues the agent can have at once.
    pub queues_max: u32,
    /// `HSA_AGENT_INFO_QUEUE_MIN_SIZE`: smallest queue, in packets.
    pub queue_min_size: u32,
    /// `HSA_AGENT_INFO_QUEUE_MAX_SIZE`: largest queue, in packets.
    pub queue_max_size: u32,
    /// GPU-only properties (`None` for CPU agents).
    pub gpu: Option<GpuInfo>,
}

/// What the solution catalogs select by: `Hardware::from_agent(agent.info())`.
impl crate::catalog::GpuDescription for AgentInfo {
    fn isa_name(&self) -> Option<&str> {
        self.gpu.as_ref().map(|g| g.isa.as_str())
    }

    fn compute_units(&self) -> u32 {
        self.gpu.as_ref().map_or(0, |g| g.compute_units)
    }

    fn chip_id(&self) -> u32 {
        self.gpu.as_ref().map_or(0, |g| g.chip_id)
    }

    fn product_name(&self) -> &str {
        self.gpu.as_ref().map_or("", |g| g.product_name.as_str())
    }
}

/// One agent of a [`System`].
#[derive(Clone)]
pub struct Agent {
    system: System,
    handle: ffi::Agent,
    info: AgentInfo,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("handle", &self.handle)
            .field("info", &self.info)
            .finish()
    }
}

impl Agent {
    /// Its properties, as read at enumeration.
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// The raw `hsa_agent_t`, for calls through [`System`]'s runtime.
    pub fn handle(&self) -> ffi::Agent {
        self.handle
    }

    /// The runtime the agent belongs to (the agent keeps it loaded).
    pub fn system(&self) -> &System {
        &self.system
    }

    /// Whether it is a GPU (`HSA_DEVICE_TYPE_GPU`).
    pub fn is_gpu(&self) -> bool {
        self.info.kind == AgentKind::Gpu
    }
}

/// The text of a C `char` buffer up to its first NUL (or its end).
fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl System {
    /// Every agent, in the runtime's order (CPUs and GPUs).
    pub fn agents(&self) -> Result<Vec<Agent>> {
        let handles = self.agent_handles()?;
        handles
            .into_iter()
            .map(|handle| {
                Ok(Agent {
                    system: self.clone(),
                    handle,
                    info: self.agent_info(handle)?,
                })
            })
            .collect()
    }

    /// The GPU agents, in the runtime's order (ordinals of device strings
    /// count these).
    pub fn gpus(&self) -> Result<Vec<Agent>> {
        Ok(self.agents()?.into_iter().filter(Agent::is_gpu).collect())
    }

    /// Reads a `char[N]` attribute as a string.
    fn get_string<const N: usize>(&self, agent: ffi::Agent, attribute: u32) -> Result<String> {
        let bytes: [u8; N] = self.agent_attribute(agent, attribute)?;
        Ok(c_string(&bytes).trim().to_string())
    }

    fn agent_info(&self, agent: ffi::Agent) -> Result<AgentInfo> {
        let kind = match self.agent_attribute::<u32>(agent, ffi::HSA_AGENT_INFO_DEVICE)? {
            ffi::HSA_DEVICE_TYPE_CPU => AgentKind::Cpu,
            ffi::HSA_DEVICE_TYPE_GPU => AgentKind::Gpu,
            ffi::HSA_DEVICE_TYPE_DSP => AgentKind::Dsp,
            other => AgentKind::Other(other),
        };
        let mut info = AgentInfo {
            kind,
            name: self.get_string::<64>(agent, ffi::HSA_AGENT_INFO_NAME)?,
            vendor: self.get_string::<64>(agent, ffi::HSA_AGENT_INFO_VENDOR_NAME)?,
            node: self.agent_attribute(agent, ffi::HSA_AGENT_INFO_NODE)?,
            wavefront_size: 0,
            workgroup_max_dim: [0; 3],
            workgroup_max_size: 0,
            grid_max_dim: [0; 3],
            grid_max_size: 0,
            queues_max: 0,
            queue_min_size: 0,
            queue_max_size: 0,
            gpu: None,
        };
        if kind != AgentKind::Gpu {
            return Ok(info);
        }
        info.wavefront_size = self.agent_attribute(agent, ffi::HSA_AGENT_INFO_WAVEFRONT_SIZE)?;
        info.workgroup_max_dim =
            self.agent_attribute(agent, ffi::HSA_AGENT_INFO_WORKGROUP_MAX_DIM)?;
        info.workgroup_max_size =
            self.agent_attribute(agent, ffi::HSA_AGENT_INFO_WORKGROUP_MAX_SIZE)?;
        info.grid_max_dim = self.agent_attribute(agent, ffi::HSA_AGENT_INFO_GRID_MAX_DIM)?;
        info.grid_max_size = self.agent_attribute(agent, ffi::HSA_AGENT_INFO_GRID_MAX_SIZE)?;
        info.queues_max = self.agent_attribute(agent, ffi::HSA_AGENT_INFO_QUEUES_MAX)?;
        info.queue_min_size = self.agent_attribute(agent, ffi::HSA_AGENT_INFO_QUEUE_MIN_SIZE)?;
        info.queue_max_size = self.agent_attribute(agent, ffi::HSA_AGENT_INFO_QUEUE_MAX_SIZE)?;
        let bdfid: u32 = self.agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_BDFID)?;
        let domain: u32 = self.agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_DOMAIN)?;
        info.gpu = Some(GpuInfo {
            isa: self.isa_name(agent)?,
            compute_units: self
                .agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)?,
            simds_per_cu: self.agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU)?,
            max_waves_per_cu: self
                .agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU)?,
            lds_size: self.group_segment_size(agent)?,
            chip_id: self.agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_CHIP_ID)?,
            pci: PciAddress::from_bdfid(domain, bdfid),
            uuid: self.get_string::<21>(agent, ffi::HSA_AMD_AGENT_INFO_UUID)?,
            product_name: self.get_string::<64>(agent, ffi::HSA_AMD_AGENT_INFO_PRODUCT_NAME)?,
            max_clock_mhz: self
                .agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY)?,
            cacheline_size: self.agent_attribute(agent, ffi::HSA_AMD_AGENT_INFO_CACHELINE_SIZE)?,
        });
        Ok(info)
    }

    /// The first ISA's name.
    fn isa_name(&self, agent: ffi::Agent) -> Result<String> {
        let Some(&isa) = self.isa_handles(agent)?.first() else {
            return Ok(String::new());
        };
        Ok(c_string(&self.isa_name_bytes(isa)?))
    }

    /// Size of the agent's group-segment (LDS) pool.
    fn group_segment_size(&self, agent: ffi::Agent) -> Result<u64> {
        for pool in self.pool_handles(agent)? {
            // SEGMENT is a hsa_amd_segment_t (C enum, 32 bits).
            let segment: u32 = self.pool_info(pool, ffi::HSA_AMD_MEMORY_POOL_INFO_SEGMENT)?;
            if segment == ffi::HSA_AMD_SEGMENT_GROUP {
                // SIZE is a size_t.
                let size: usize = self.pool_info(pool, ffi::HSA_AMD_MEMORY_POOL_INFO_SIZE)?;
                return Ok(size as u64);
            }
        }
        Ok(0)
    }
}

/// A gfx942 agent as ROCr reports an MI300X (unit-test fixture), with the
/// processor's facts from `aqueduct_abi::gfx`.
#[cfg(test)]
pub(crate) fn test_gpu_info() -> AgentInfo {
    let gfx942 = aqueduct_abi::gfx::gfx("gfx942").expect("in the table");
    AgentInfo {
        kind: AgentKind::Gpu,
        name: gfx942.name.into(),
        vendor: "AMD".into(),
        node: 1,
        wavefront_size: gfx942.wave_size,
        workgroup_max_dim: [gfx942.max_workgroup_size as u16; 3],
        workgroup_max_size: gfx942.max_workgroup_size,
        grid_max_dim: [u32::MAX; 3],
        grid_max_size: u32::MAX,
        queues_max: 128,
        queue_min_size: 64,
        queue_max_size: 131072,
        gpu: Some(GpuInfo {
            lds_size: u64::from(gfx942.lds_per_workgroup),
            ..GpuInfo::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdfid_splits_like_lspci() {
        // 0000:c1:00.0 -> bus 0xc1, device 0, function 0.
        let p = PciAddress::from_bdfid(0, 0xc100);
        assert_eq!(p.to_string(), "0000:c1:00.0");
        // bus 0x03, device 0x1f, function 7.
        let p = PciAddress::from_bdfid(1, 0x03 << 8 | 0x1f << 3 | 7);
        assert_eq!((p.bus, p.device, p.function), (3, 0x1f, 7));
        assert_eq!(p.to_string(), "0001:03:1f.7");
    }
}
