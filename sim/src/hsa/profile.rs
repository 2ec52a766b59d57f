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

use aqueduct_abi::gfx::{Gfx, PRODUCTS, Product};

use crate::decode::Target;

/// A simulated GPU: one of the products of `aqueduct_abi::gfx::PRODUCTS`
/// whose processor the simulator runs, possibly posing with another CU
/// count or chip id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Short name for `AQUEDUCT_SIM_AGENTS`.
    pub key: &'static str,
    /// `HSA_AMD_AGENT_INFO_PRODUCT_NAME`: the chip's name.
    pub product: &'static str,
    /// The processor simulated.
    pub target: Target,
    /// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`.
    pub compute_units: u32,
    /// PCI device id (`HSA_AMD_AGENT_INFO_CHIP_ID`).
    pub chip_id: u32,
    /// Peak engine clock in MHz.
    pub max_clock_mhz: u32,
    /// HBM, what the VRAM pools report (allocations come from host memory).
    pub memory_bytes: u64,
}

impl Profile {
    /// The profile of `product`, if the simulator runs its processor.
    fn of(product: &Product) -> Option<Self> {
        let chip = product.chip();
        Some(Self {
            key: product.key,
            product: chip.name,
            target: Target::from_name(chip.gfx)?,
            compute_units: product.compute_units,
            chip_id: product.chip,
            max_clock_mhz: product.max_clock_mhz,
            memory_bytes: product.memory_bytes,
        })
    }

    /// The processor name (`HSA_AGENT_INFO_NAME`).
    pub fn gfx(&self) -> &'static str {
        self.target.name()
    }

    /// The processor's facts (waves, LDS, limits).
    pub fn facts(&self) -> &'static Gfx {
        self.target.gfx()
    }

    /// The full ISA name ROCr reports for the agent.
    pub fn isa_name(&self) -> String {
        format!("amdgcn-amd-amdhsa--{}", self.facts().target_id())
    }
}

/// The products the simulator models, in the table's order: AMD Instinct
/// MI300X (gfx942), MI210 (gfx90a) and MI355X (gfx950).
pub fn profiles() -> impl Iterator<Item = Profile> {
    PRODUCTS.iter().filter_map(Profile::of)
}

/// The environment variable naming the simulated GPUs.
pub const AGENTS_ENV: &str = "AQUEDUCT_SIM_AGENTS";
/// Used when [`AGENTS_ENV`] is unset or empty.
pub const DEFAULT_AGENTS: &str = "mi300x";

/// One GPU to simulate: a profile and overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentSpec {
    /// The product simulated.
    pub base: Profile,
    /// A CU count to report instead of the product's.
    pub compute_units: Option<u32>,
    /// A PCI chip id to report instead of the product's.
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
        let base = profiles()
            .find(|p| p.key == name)
            .or_else(|| profiles().find(|p| p.gfx() == name))
            .ok_or_else(|| {
                let known: Vec<String> = profiles()
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
        // Every target has a profile; a processor the simulator does not
        // run is refused, naming the ones it has.
        for t in Target::ALL {
            let v = AgentSpec::parse_list(t.name()).unwrap_or_else(|e| panic!("{t:?}: {e}"));
            assert_eq!(v[0].profile().target, t);
        }
        let e = AgentSpec::parse_list("gfx1010").unwrap_err();
        assert!(
            e.contains("mi300x (gfx942)") && e.contains("rx9070xt (gfx1201)"),
            "{e}"
        );
        assert!(AgentSpec::parse_list("mi210:cu=0").is_err());
        assert!(AgentSpec::parse_list("mi210:speed=3").is_err());
    }
}
