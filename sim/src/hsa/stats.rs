//! What the simulated runtime's dispatches executed, per kernel name, and
//! its export ([`aqueduct_abi::hsa_api::SIM_KERNEL_STATS_SYMBOL`]): an
//! aqueduct extension a host looks up optionally (ROCr has no such
//! function), which benchmarks and the main job read to report executed
//! wave-instructions.
//!
//! Totals are process-wide and only grow, across `hsa_init`/`hsa_shut_down`
//! cycles: a reader takes differences.

use std::collections::BTreeMap;
use std::sync::Mutex;

use aqueduct_abi::hsa_api::{SIM_KERNEL_NAME_BYTES, SimKernelStats};

use crate::dispatch::Stats;

/// Per kernel name: dispatches, waves, wave-instructions, lane-operations,
/// matrix instructions.
static TOTALS: Mutex<BTreeMap<String, [u64; 5]>> = Mutex::new(BTreeMap::new());

/// Adds one finished dispatch of `kernel`.
pub(crate) fn record(kernel: &str, stats: &Stats) {
    let mut totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    let t = totals.entry(kernel.to_string()).or_default();
    t[0] += 1;
    t[1] += stats.waves;
    t[2] += stats.instructions;
    t[3] += stats.lane_ops;
    t[4] += stats.matrix_instructions;
}

/// The totals as records, in kernel-name order.
pub fn snapshot() -> Vec<SimKernelStats> {
    let totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    totals
        .iter()
        .map(|(name, t)| {
            let mut record = SimKernelStats {
                name: [0; SIM_KERNEL_NAME_BYTES],
                dispatches: t[0],
                waves: t[1],
                instructions: t[2],
                lane_ops: t[3],
                matrix_instructions: t[4],
            };
            let n = name.len().min(SIM_KERNEL_NAME_BYTES - 1);
            record.name[..n].copy_from_slice(&name.as_bytes()[..n]);
            record
        })
        .collect()
}

/// The export: writes up to `capacity` records to `out` and returns how
/// many kernels there are (call with `capacity` 0 to size the buffer).
///
/// # Safety
/// `out` holds `capacity` writable records (or `capacity` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aqueduct_sim_kernel_stats_v2(
    out: *mut SimKernelStats,
    capacity: usize,
) -> usize {
    let all = snapshot();
    for (k, record) in all.iter().take(capacity).enumerate() {
        // SAFETY: the caller's contract: `k < capacity` records fit.
        unsafe { out.add(k).write(*record) };
    }
    all.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_add_up_per_kernel_and_names_are_cut_to_fit() {
        let long = "k".repeat(200);
        let stats = Stats {
            workgroups: 1,
            waves: 2,
            instructions: 30,
            lane_ops: 400,
            matrix_instructions: 5,
            paired_instructions: 0,
            events: Vec::new(),
        };
        record("stats_test_kernel", &stats);
        record("stats_test_kernel", &stats);
        record(&long, &stats);
        let mut out = vec![
            SimKernelStats {
                name: [0; SIM_KERNEL_NAME_BYTES],
                dispatches: 0,
                waves: 0,
                instructions: 0,
                lane_ops: 0,
                matrix_instructions: 0,
            };
            64
        ];
        // SAFETY: 64 records of room.
        let n = unsafe { aqueduct_sim_kernel_stats_v2(out.as_mut_ptr(), out.len()) };
        let name = |r: &SimKernelStats| {
            let end = r.name.iter().position(|&b| b == 0).unwrap_or(r.name.len());
            String::from_utf8_lossy(&r.name[..end]).into_owned()
        };
        let ours = out[..n.min(64)]
            .iter()
            .find(|r| name(r) == "stats_test_kernel")
            .expect("recorded");
        assert_eq!(
            (
                ours.dispatches,
                ours.waves,
                ours.instructions,
                ours.lane_ops,
                ours.matrix_instructions
            ),
            (2, 4, 60, 800, 10)
        );
        let cut = out[..n.min(64)]
            .iter()
            .find(|r| name(r).starts_with("kkk"))
            .expect("recorded");
        assert_eq!(name(cut).len(), SIM_KERNEL_NAME_BYTES - 1);
        // SAFETY: capacity 0 writes nothing.
        let total = unsafe { aqueduct_sim_kernel_stats_v2(std::ptr::null_mut(), 0) };
        assert_eq!(total, n);
    }
}
