//! HSA signals: 64-bit values in memory both the host and agents reach,
//! used for completion (packets and copies decrement them), dependencies
//! (barrier packets wait on them) and doorbells.
//!
//! Operations keep HSA's explicit memory orderings: loads are relaxed or
//! acquire, stores relaxed or release, read-modify-writes any of the four.
//! The ordering types make other combinations unrepresentable.
//!
//! Waiting: `hsa_signal_wait_*` may return before its condition holds (the
//! spec allows spurious returns) and takes its timeout as a hint, so
//! [`Signal::wait`] loops on the observed value against its own deadline. A
//! timeout is an [`Error::Timeout`] carrying the last value seen — never a
//! hang.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aqueduct_abi::hsa::{SignalCondition, SignalHandle};

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::hsa::{System, ffi};

/// Ordering of a signal load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadOrder {
    /// `hsa_signal_load_relaxed`.
    Relaxed,
    /// `hsa_signal_load_scacquire`: later accesses see what the signaller
    /// released.
    Acquire,
}

/// Ordering of a signal store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOrder {
    /// `hsa_signal_store_relaxed`.
    Relaxed,
    /// `hsa_signal_store_screlease`: earlier accesses are visible to an
    /// acquiring reader of the value.
    Release,
}

/// Ordering of a signal read-modify-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOrder {
    /// `hsa_signal_*_relaxed`.
    Relaxed,
    /// `hsa_signal_*_scacquire`.
    Acquire,
    /// `hsa_signal_*_screlease`.
    Release,
    /// `hsa_signal_*_scacq_screl`.
    AcqRel,
}

/// Ordering of a signal wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOrder {
    /// `hsa_signal_wait_relaxed`.
    Relaxed,
    /// `hsa_signal_wait_scacquire`: once the wait returns, accesses see
    /// what the signaller released.
    Acquire,
}

/// Longest single `hsa_signal_wait_*` call, so that a caller's extra check
/// (a queue's fault flag) runs at least this often.
pub(crate) const WAIT_SLICE: Duration = Duration::from_millis(10);

/// An HSA signal, destroyed when the last clone is dropped.
#[derive(Clone)]
pub struct Signal {
    inner: Arc<Inner>,
}

struct Inner {
    system: System,
    handle: SignalHandle,
    /// Ticks per second of wait timeout hints.
    ticks_per_second: u64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: the last clone is gone, so no wait or operation of ours
        // uses the handle; packets and copies that name it hold a clone
        // until they are known complete.
        let _ = unsafe { self.system.signal_destroy(self.handle) };
    }
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("handle", &format_args!("{:#x}", self.inner.handle.0))
            .field("value", &self.load(LoadOrder::Relaxed))
            .finish()
    }
}

impl Signal {
    /// A signal with value `initial` that any agent may wait on.
    pub fn new(system: &System, initial: i64) -> Result<Self> {
        Self::with_consumers(system, initial, &[])
    }

    /// A signal only `consumers` wait on (lets the runtime pick a cheaper
    /// implementation; an empty list means any agent).
    pub fn with_consumers(system: &System, initial: i64, consumers: &[&Agent]) -> Result<Self> {
        let handles: Vec<ffi::Agent> = consumers.iter().map(|a| a.handle()).collect();
        let ticks_per_second = system.ticks_per_second()?;
        if ticks_per_second == 0 {
            return Err(Error::Hsa {
                call: "hsa_system_get_info",
                status: ffi::HSA_STATUS_ERROR,
                message: "reported a timestamp frequency of 0".into(),
            });
        }
        let handle = system.signal_create(initial, &handles)?;
        Ok(Self {
            inner: Arc::new(Inner {
                system: system.clone(),
                handle,
                ticks_per_second,
            }),
        })
    }

    /// The `hsa_signal_t` (for packets).
    pub fn handle(&self) -> SignalHandle {
        self.inner.handle
    }

    /// The current value.
    pub fn load(&self, order: LoadOrder) -> i64 {
        // SAFETY: the handle is live while `self` is.
        unsafe { self.inner.system.signal_load(self.inner.handle, order) }
    }

    /// Sets the value and wakes waiters.
    pub fn store(&self, value: i64, order: StoreOrder) {
        // SAFETY: the handle is live while `self` is.
        unsafe {
            self.inner
                .system
                .signal_store(self.inner.handle, value, order)
        }
    }

    /// Adds `value` (wrapping, as HSA does).
    pub fn add(&self, value: i64, order: RmwOrder) {
        // SAFETY: the handle is live while `self` is.
        unsafe {
            self.inner
                .system
                .signal_add(self.inner.handle, value, order)
        }
    }

    /// Stores `new` if the value is `expected`; returns the value observed
    /// (equal to `expected` when the exchange happened).
    pub fn cas(&self, expected: i64, new: i64, order: RmwOrder) -> i64 {
        // SAFETY: the handle is live while `self` is.
        unsafe {
            self.inner
                .system
                .signal_cas(self.inner.handle, expected, new, order)
        }
    }

    /// Waits until `condition` holds between the value and `compare`, and
    /// returns the value that satisfied it; [`Error::Timeout`] after
    /// `timeout`.
    pub fn wait(
        &self,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
        order: WaitOrder,
    ) -> Result<i64> {
        self.wait_checked(condition, compare, timeout, order, "signal", || Ok(()))
    }

    /// [`Self::wait`], calling `check` at least every [`WAIT_SLICE`]; an
    /// error from `check` ends the wait.
    pub(crate) fn wait_checked(
        &self,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
        order: WaitOrder,
        what: &str,
        mut check: impl FnMut() -> Result<()>,
    ) -> Result<i64> {
        let Some(condition_name) = condition_symbol(condition) else {
            return Err(Error::InvalidArgument {
                what: "signal wait",
                problem: format!("unknown condition {condition:?}"),
            });
        };
        let start = Instant::now();
        loop {
            check()?;
            let remaining = timeout.saturating_sub(start.elapsed());
            let hint = ticks(remaining.min(WAIT_SLICE), self.inner.ticks_per_second);
            // SAFETY: the handle is live while `self` is; the condition is
            // one of the four HSA defines (checked above).
            let value = unsafe {
                self.inner
                    .system
                    .signal_wait(self.inner.handle, condition.0, compare, hint, order)
            };
            if condition.holds(value, compare) == Some(true) {
                return Ok(value);
            }
            if start.elapsed() >= timeout {
                check()?;
                return Err(Error::Timeout {
                    what: format!("{what} {:#x}", self.inner.handle.0),
                    condition: condition_name,
                    expected: compare,
                    observed: value,
                    waited: start.elapsed(),
                });
            }
        }
    }
}

/// A duration in timestamp ticks, saturating (and at least one tick, so a
/// zero-length slice still polls once).
fn ticks(d: Duration, ticks_per_second: u64) -> u64 {
    let t = d.as_nanos().saturating_mul(u128::from(ticks_per_second)) / 1_000_000_000;
    u64::try_from(t).unwrap_or(u64::MAX).max(1)
}

fn condition_symbol(c: SignalCondition) -> Option<&'static str> {
    Some(match c {
        SignalCondition::EQ => "==",
        SignalCondition::NE => "!=",
        SignalCondition::LT => "<",
        SignalCondition::GTE => ">=",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_convert_to_ticks_without_overflow() {
        assert_eq!(ticks(Duration::from_millis(10), 1_000_000_000), 10_000_000);
        assert_eq!(ticks(Duration::from_millis(10), 100_000_000), 1_000_000);
        assert_eq!(ticks(Duration::ZERO, 1_000_000_000), 1);
        assert_eq!(ticks(Duration::MAX, u64::MAX), u64::MAX);
    }

    #[test]
    fn every_hsa_condition_has_a_symbol_and_others_are_refused() {
        for (c, s) in [
            (SignalCondition::EQ, "=="),
            (SignalCondition::NE, "!="),
            (SignalCondition::LT, "<"),
            (SignalCondition::GTE, ">="),
        ] {
            assert_eq!(condition_symbol(c), Some(s));
        }
        assert_eq!(condition_symbol(SignalCondition(7)), None);
    }
}
