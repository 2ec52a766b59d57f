//! Product profiles of the simulated GPUs, and `AQUEDUCT_SIM_AGENTS`.
//!
//! A profile carries what ROCr reports for the product (KFD topology and
//! the PCI chip id): catalogs select kernels by processor, CU count and
//! chip id, so tests can pose as any device by overriding the last two:
//!
//! ```text
//! AQUEDUCT_SIM_AGENTS=mi300x                 one MI300X (the default)
//! AQUEDUCT_SIM_AGENTS=gfx942,gfx90a          an MI300X and an MI210
//! AQUEDUCT_SIM_AGENTS=mi300x:cu=80:chip=0x74b5
//! ```

use crate::decode::Target;

/// A simulated GPU product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Short name for `AQUEDUCT_SIM_AGENTS`.
    pub key: &'static str,
    /// `HSA_AMD_AGENT_INFO_PRODUCT_NAME`.
    pub product: &'static str,
    pub target: Target,
    pub compute_units: u32,
    /// PCI device id (`HSA_AMD_AGENT_INFO_CHIP_ID`).
    pub chip_id: u32,
    /// Peak engine clock in MHz.
    pub max_clock_mhz: u32,
}

impl Profile {
    /// The processor name (`HSA_AGENT_INFO_NAME`).
    pub fn gfx(&self) -> &'static str {
        match self.target {
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
        }
    }

    /// The full ISA name ROCr reports for the agent.
    pub fn isa_name(&self) -> String {
        format!("amdgcn-amd-amdhsa--{}:sramecc+:xnack-", self.gfx())
    }
}

/// The products the simulator models: AMD Instinct MI300X (gfx942, 304
/// CUs, device id 0x74a1) and MI210 (gfx90a, 104 CUs, device id 0x740f),
/// as ROCr/KFD report them.
pub const PROFILES: &[Profile] = &[
    Profile {
        key: "mi300x",
        product: "AMD Instinct MI300X",
        target: Target::Gfx942,
        compute_units: 304,
        chip_id: 0x74a1,
        max_clock_mhz: 2100,
    },
    Profile {
        key: "mi210",
        product: "AMD Instinct MI210",
        target: Target::Gfx90a,
        compute_units: 104,
        chip_id: 0x740f,
        max_clock_mhz: 1700,
    },
];

/// The environment variable naming the simulated GPUs.
pub const AGENTS_ENV: &str = "AQUEDUCT_SIM_AGENTS";
/// Used when [`AGENTS_ENV`] is unset or empty.
pub const DEFAULT_AGENTS: &str = "mi300x";

/// One GPU to simulate: a profile and overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentSpec {
    pub base: Profile,
    pub compute_units: Option<u32>,
    pub chip_id: Option<u32>,
}

impl AgentSpec {
    /// The profile with the overrides applied.
    pub fn profile(&self) -> Profile {
        Profile {
            compute_units: self.compute_units.unwrap_or(self.base.compute_units),
            chip_id: self.chip_id.unwrap_or(self.base.chip_id),
            ..self.base
        }
    }

    /// Parses a comma-separated list of `name[:cu=N][:chip=0xID]`, where
    /// a name is a profile key or a processor (the first profile of it).
    pub fn parse_list(text: &str) -> Result<Vec<Self>, String> {
        let text = if text.trim().is_empty() {
            DEFAULT_AGENTS
        } else {
            text
        };
        text.split(',').map(|s| Self::parse(s.trim())).collect()
    }

    fn parse(item: &str) -> Result<Self, String> {
        let mut parts = item.split(':');
        let name = parts.next().unwrap_or("").to_ascii_lowercase();
        let base = PROFILES
            .iter()
            .find(|p| p.key == name)
            .or_else(|| PROFILES.iter().find(|p| p.gfx() == name))
            .copied()
            .ok_or_else(|| {
                let known: Vec<String> = PROFILES
                    .iter()
                    .map(|p| format!("{} ({})", p.key, p.gfx()))
                    .collect();
                format!(
                    "unknown simulated GPU `{name}`; known: {}",
                    known.join(", ")
                )
            })?;
        let mut spec = Self {
            base,
            compute_units: None,
            chip_id: None,
        };
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` in `{item}` is not key=value"))?;
            let n = parse_number(value)
                .ok_or_else(|| format!("`{value}` in `{item}` is not a number"))?;
            match key {
                "cu" if n > 0 => spec.compute_units = Some(n),
                "chip" => spec.chip_id = Some(n),
                _ => {
                    return Err(format!(
                        "`{part}` in `{item}`: keys are cu=N (N > 0) and chip=ID"
                    ));
                }
            }
        }
        Ok(spec)
    }
}

fn parse_number(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_lists_name_profiles_processors_and_overrides() {
        let v = AgentSpec::parse_list("").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].profile().chip_id, 0x74a1);
        let v = AgentSpec::parse_list("gfx942, gfx90a").unwrap();
        assert_eq!(v[1].profile().product, "AMD Instinct MI210");
        assert_eq!(v[1].profile().compute_units, 104);
        let v = AgentSpec::parse_list("mi300x:cu=80:chip=0x74b5").unwrap();
        let p = v[0].profile();
        assert_eq!(
            (p.compute_units, p.chip_id, p.target),
            (80, 0x74b5, Target::Gfx942)
        );
        assert!(
            AgentSpec::parse_list("gfx1100")
                .unwrap_err()
                .contains("mi300x (gfx942)")
        );
        assert!(AgentSpec::parse_list("mi210:cu=0").is_err());
        assert!(AgentSpec::parse_list("mi210:speed=3").is_err());
    }
}
