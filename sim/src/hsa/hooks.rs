//! Knobs a test harness turns to make the simulated runtime less forgiving
//! than a fast, idle machine would be (feature `test-hooks`; the product
//! never turns them).
//!
//! - `set_async_copy_delay`: every `hsa_amd_memory_async_copy` worker
//!   sleeps this long after its dependencies are met and before it copies,
//!   as a DMA engine busy with other work would. A caller that does not wait
//!   for the completion signal then reads the old bytes instead of passing
//!   by luck. The host crate's unit tests set it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The async-copy delay in nanoseconds; 0 without the feature's setter.
static ASYNC_COPY_DELAY_NS: AtomicU64 = AtomicU64::new(0);

/// Delays every later async copy by `delay` (process-wide).
#[cfg(feature = "test-hooks")]
pub fn set_async_copy_delay(delay: Duration) {
    let ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
    ASYNC_COPY_DELAY_NS.store(ns, Ordering::Relaxed);
}

/// The delay an async copy waits before copying.
pub(crate) fn async_copy_delay() -> Duration {
    Duration::from_nanos(ASYNC_COPY_DELAY_NS.load(Ordering::Relaxed))
}
