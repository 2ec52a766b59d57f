//! The GPU a catalog is asked about, and the PCI chip-ID registry.
//!
//! A catalog's top level is a list of hardware rows: "gfx950 with 256 CUs
//! on an MI355X" and so on. A row matches on the processor (the gfx name),
//! optionally the CU count, and optionally PCI chip IDs. hipBLASLt added
//! chip IDs so that one gfx target can carry kernels tuned per product; a
//! product may also run the kernels of a related one, along a one-way
//! *fallback* edge of the registry (an MI355X, 0x75a3, may use MI350X
//! kernels, 0x75a0; not the other way round).
//!
//! Runtime rule (hipBLASLt `ExactLogicLibrary::findBestSolution`): rows are
//! walked in order; a row matched through the chip ID itself (or a row with
//! no chip ID) is an *exact* match and wins at once; a row matched only
//! through a fallback edge is remembered (the first one only) and used when
//! no exact row answers. Build-time rule (tensilelite `Hardware.py`,
//! `HardwarePredicate.__lt__`): rows are sorted so that specific rows come
//! first, see [`compare_rows`].
//!
//! Sources: hipBLASLt's "PCI chip ID predicates walkthrough", tensilelite
//! `AMDGPUPredicates.hpp` (`ChipIdRegistry`) and `Common/Architectures.py`;
//! the chips and their names are `aqueduct_abi::gfx::CHIPS`.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use aqueduct_abi::gfx::chip_by_id;

/// The GPU a selection is made for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hardware {
    /// The gfx name without target features: `gfx950`.
    pub processor: String,
    /// The full target name as the runtime reports it, for traces:
    /// `gfx950:sramecc+:xnack-`.
    pub arch_name: String,
    /// Compute units, as the runtime reports them (matched by `CUCount`
    /// predicates).
    pub cu_count: u32,
    /// The PCI device (chip) ID, when the runtime reports one.
    pub chip_id: Option<u32>,
    /// The product name, for traces: `AMD Instinct MI355X`.
    pub device_name: String,
}

impl Hardware {
    /// A GPU from its target name (features allowed), CU count and chip ID;
    /// the device name comes from the registry when the ID is known.
    pub fn new(arch_name: &str, cu_count: u32, chip_id: Option<u32>) -> Self {
        let processor = processor_of(arch_name).to_string();
        let device_name = chip_id
            .and_then(device_name)
            .map_or_else(|| format!("AMD GPU ({processor})"), str::to_string);
        Hardware {
            processor,
            arch_name: arch_name.to_string(),
            cu_count,
            chip_id,
            device_name,
        }
    }

    /// The GPU an agent describes (`None` for a CPU agent): with the host
    /// shim, `Hardware::from_agent(agent.info())`.
    pub fn from_agent(agent: &impl GpuDescription) -> Option<Self> {
        let isa = agent.isa_name()?;
        let arch = isa.rsplit("--").next().unwrap_or(isa);
        let chip = (agent.chip_id() != 0).then_some(agent.chip_id());
        let mut hw = Hardware::new(arch, agent.compute_units(), chip);
        let product = agent.product_name();
        if !product.is_empty() {
            hw.device_name = product.to_string();
        }
        Some(hw)
    }
}

/// What a catalog needs to know of a runtime's GPU agent. The catalogs do
/// not depend on the HSA shim; the shim's `AgentInfo` implements this.
pub trait GpuDescription {
    /// The ISA name the runtime reports (`amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`);
    /// `None` for an agent that is no GPU.
    fn isa_name(&self) -> Option<&str>;
    /// Compute units.
    fn compute_units(&self) -> u32;
    /// PCI device ID (0 when the runtime reports none).
    fn chip_id(&self) -> u32;
    /// The marketing name (may be empty).
    fn product_name(&self) -> &str;
}

/// `gfx950:sramecc+:xnack-` → `gfx950` (Tensile compares processors, not
/// target features). An ISA name (`amdgcn-amd-amdhsa--gfx950`) works too.
pub fn processor_of(name: &str) -> &str {
    let base = name.rsplit("--").next().unwrap_or(name);
    base.split(':').next().unwrap_or(base)
}

/// True for a plausible processor name: `gfx` and hex digits.
pub fn is_processor_name(name: &str) -> bool {
    name.strip_prefix("gfx")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The fallback edges of the chip-ID registry: tensilelite's
/// `ChipIdRegistry` (every gfx950 variant falls back to 0x75a0, one hop,
/// one way). The chips themselves (ID, processor, name) are
/// `aqueduct_abi::gfx::CHIPS`, the one table of GPU products.
pub const FALLBACKS: &[(u32, &[u32])] = &[
    (0x75a2, &[0x75a0]),
    (0x75a3, &[0x75a0]),
    (0x75a8, &[0x75a0]),
    (0x75b0, &[0x75a0]),
    (0x75b2, &[0x75a0]),
    (0x75b3, &[0x75a0]),
    (0x75b8, &[0x75a0]),
];

/// The product name of chip `id`, for traces.
pub fn device_name(id: u32) -> Option<&'static str> {
    chip_by_id(id).map(|c| c.name)
}

/// The chips `id` may fall back to (one hop, as the runtime checks).
pub fn fallbacks(id: u32) -> &'static [u32] {
    FALLBACKS
        .iter()
        .find(|(chip, _)| *chip == id)
        .map_or(&[], |(_, to)| to)
}

/// May a GPU with chip `gpu` run a row's kernels for chip `sol`: the same
/// chip, or one of its direct fallbacks (`ChipIdRegistry::canUseSolution`).
pub fn can_use(gpu: u32, sol: u32) -> bool {
    gpu == sol || fallbacks(gpu).contains(&sol)
}

/// Fallback-topology rank: 0 for a root (no outgoing edge, or unknown),
/// else one more than the highest rank among its targets. Farther from the
/// roots means more specific.
pub fn rank(id: u32) -> u32 {
    fn go(id: u32, depth: u32) -> u32 {
        // The registry is acyclic; the depth bound only guards edits.
        if depth > FALLBACKS.len() as u32 {
            return 0;
        }
        fallbacks(id)
            .iter()
            .map(|&t| 1 + go(t, depth + 1))
            .max()
            .unwrap_or(0)
    }
    go(id, 0)
}

/// What the build-time comparator needs to know about a hardware row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowKey {
    /// The row's processor, when it names one.
    pub processor: Option<String>,
    /// The row's CU count, when it names one (a missing count sorts as 0).
    pub cu_count: Option<u32>,
    /// The PCI chip IDs the row's predicate accepts (empty: it names none).
    pub chip_ids: BTreeSet<u32>,
    /// A `TruePred` row (the "fallback" architecture): always last.
    pub always: bool,
}

/// tensilelite's hardware-row order (`HardwarePredicate.__lt__`, the version
/// the hipBLASLt walkthrough documents):
/// 1. rows with chip IDs before rows without;
/// 2. between different chip sets, the smaller set first; for equal sizes,
///    the set whose IDs sort higher by (fallback rank, chip ID), compared
///    from the highest down;
/// 3. for equal chip sets, the higher CU count first (a missing count
///    counts as 0); when neither row has a CU count, processor names in
///    string order;
/// 4. `TruePred` rows last.
///
/// Newer tensilelite (after the walkthrough was written) ranks by the
/// highest fallback rank before the set size; that reorders the document's
/// example, so aqueduct keeps the documented order.
pub fn compare_rows(a: &RowKey, b: &RowKey) -> Ordering {
    match (a.always, b.always) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    match (a.chip_ids.is_empty(), b.chip_ids.is_empty()) {
        (false, true) => return Ordering::Less,
        (true, false) => return Ordering::Greater,
        _ => {}
    }
    if a.chip_ids != b.chip_ids {
        if a.chip_ids.len() != b.chip_ids.len() {
            return a.chip_ids.len().cmp(&b.chip_ids.len());
        }
        // Higher key first.
        return set_key(&b.chip_ids).cmp(&set_key(&a.chip_ids));
    }
    if a.cu_count.is_none() && b.cu_count.is_none() {
        return a.processor.cmp(&b.processor);
    }
    b.cu_count.unwrap_or(0).cmp(&a.cu_count.unwrap_or(0))
}

/// `(rank, id)` pairs, highest first: the set's sort key.
fn set_key(ids: &BTreeSet<u32>) -> Vec<(u32, u32)> {
    let mut key: Vec<(u32, u32)> = ids.iter().map(|&id| (rank(id), id)).collect();
    key.sort_unstable_by(|x, y| y.cmp(x));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ids: &[u32], cu: Option<u32>) -> RowKey {
        RowKey {
            processor: Some("gfx950".into()),
            cu_count: cu,
            chip_ids: ids.iter().copied().collect(),
            always: false,
        }
    }

    /// The walkthrough's "minimal ordering example (same processor)".
    #[test]
    fn rows_sort_into_the_documented_minimal_order() {
        let expected = vec![
            row(&[0x75a3], Some(256)),
            row(&[0x75a3], Some(64)),
            row(&[0x75a0], Some(256)),
            row(&[0x75a0], Some(64)),
            row(&[0x75a3, 0x75a0], None),
            row(&[], None),
        ];
        // Every rotation and the reversal of the input give the same order.
        for shift in 0..expected.len() {
            let mut rows = expected.clone();
            rows.rotate_left(shift);
            if shift % 2 == 1 {
                rows.reverse();
            }
            rows.sort_by(compare_rows);
            assert_eq!(rows, expected, "from rotation {shift}");
        }
    }

    #[test]
    fn equal_rank_chips_sort_higher_id_first_and_truepred_last() {
        let mut rows = [
            RowKey {
                always: true,
                ..RowKey::default()
            },
            row(&[0x75a0], None),
            row(&[0x75a8], None),
            row(&[0x75a3], None),
        ];
        rows.sort_by(compare_rows);
        let ids: Vec<_> = rows
            .iter()
            .map(|r| r.chip_ids.iter().next().copied())
            .collect();
        assert_eq!(ids, [Some(0x75a8), Some(0x75a3), Some(0x75a0), None]);
        assert!(rows[3].always);
    }

    #[test]
    fn fallback_is_one_way_and_one_hop() {
        assert!(can_use(0x75a3, 0x75a0));
        assert!(can_use(0x75a2, 0x75a0));
        assert!(!can_use(0x75a0, 0x75a3));
        assert!(
            !can_use(0x75a3, 0x75a2),
            "siblings do not fall back to each other"
        );
        assert!(can_use(0x74a1, 0x74a1));
        assert_eq!((rank(0x75a0), rank(0x75a3), rank(0x1234)), (0, 1, 0));
    }

    #[test]
    fn processor_names_drop_target_features() {
        assert_eq!(processor_of("gfx950:sramecc+:xnack-"), "gfx950");
        assert_eq!(processor_of("amdgcn-amd-amdhsa--gfx90a:xnack-"), "gfx90a");
        assert!(
            is_processor_name("gfx90a") && !is_processor_name("gfx") && !is_processor_name("sm_90")
        );
        assert_eq!(
            Hardware::new("gfx950", 256, Some(0x75a3)).device_name,
            "AMD Instinct MI355X"
        );
    }
}
