//! Every instruction aqueduct builds for the simulated targets is one the
//! simulator implements (`cargo xtask sim-coverage` prints the table; this
//! keeps CI at 100 %). The code objects are the ones the build script made,
//! profile `device`; `cargo xtask sim-coverage` also checks `device-dev`.

use aqueduct_tests::built_code_objects;
use xtask::sim_coverage::{SIMULATED_TARGETS, coverage, totals};

#[test]
fn the_simulator_implements_every_instruction_aqueduct_builds() {
    let mut all = Vec::new();
    for built in built_code_objects() {
        if !SIMULATED_TARGETS.contains(&built.gfx) {
            continue;
        }
        let bytes = std::fs::read(&built.path).expect("read code object");
        all.push(coverage(built.gfx, built.package, &bytes).expect("decode code object"));
    }
    let targets: Vec<_> = totals(&all).into_iter().map(|t| t.0).collect();
    assert_eq!(
        targets, SIMULATED_TARGETS,
        "a simulated target built nothing"
    );
    let problems: Vec<String> = all.iter().flat_map(|c| c.problems()).collect();
    assert!(
        problems.is_empty(),
        "the simulator cannot run:\n  {}",
        problems.join("\n  ")
    );
}
