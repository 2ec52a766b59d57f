//! The clocks `s_memtime` and `s_memrealtime` read.
//!
//! `s_memtime` counts shader-clock cycles and `s_memrealtime` the constant
//! 100 MHz reference clock (CDNA3 ISA, "S_MEMREALTIME"; ROCr reports the
//! same frequency as `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY` on MI200 and
//! MI300). A functional model has no cycles, so both derive from the host's
//! monotonic clock: nanoseconds for cycles (a nominal 1 GHz shader clock)
//! and nanoseconds / 10 for the reference clock. Both only ever increase.

use std::sync::OnceLock;
use std::time::Instant;

/// Reference clock frequency in Hz (one definition, in `aqueduct-abi`).
pub use aqueduct_abi::gfx::REALTIME_HZ;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn nanos() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

/// What `s_memtime` reads: nanoseconds since the first clock read in this
/// process, as cycles of a nominal 1 GHz shader clock.
pub fn shader_cycles() -> u64 {
    nanos()
}

/// What `s_memrealtime` reads: ticks of the [`REALTIME_HZ`] reference
/// clock since the first clock read in this process.
pub fn realtime_ticks() -> u64 {
    nanos() / (1_000_000_000 / REALTIME_HZ)
}
