//! `AQUEDUCT_SIM_STRICT` turns the simulator's HSA runtime's memory strict
//! at `hsa_init` (sim/src/memory.rs), and leaves it off when unset or "0".
//! A test binary of its own: it sets a process environment variable.

use aqueduct_sim::hsa::runtime;
use aqueduct_sim::hsa::system::{STRICT_ENV, hsa_init, hsa_shut_down};

fn strict_after_init(value: Option<&str>) -> bool {
    // SAFETY: this binary's only test is the only thread that reads or
    // writes the environment.
    unsafe {
        match value {
            Some(v) => std::env::set_var(STRICT_ENV, v),
            None => std::env::remove_var(STRICT_ENV),
        }
    }
    // SAFETY: the C entry points take no arguments; init and shut down pair.
    unsafe { hsa_init() };
    let strict = runtime().expect("initialised").memory.is_strict();
    // SAFETY: as above.
    unsafe { hsa_shut_down() };
    strict
}

#[test]
fn the_environment_variable_turns_strict_mode_on_at_init() {
    assert!(!strict_after_init(None));
    assert!(strict_after_init(Some("1")));
    assert!(!strict_after_init(Some("0")));
    assert!(!strict_after_init(Some("")));
}
