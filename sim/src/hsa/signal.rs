//! Signals: `amd_signal_t` in simulator memory (hsa_signal_*).
//!
//! A signal handle is the address of its `amd_signal_t` (aqueduct-abi's
//! layout), as in ROCr, so device code reads and writes the value at
//! offset 8 directly. Host waiters park on one condition variable and are
//! woken by host-side writes, by the packet processors (completion
//! signals) and by device interrupts (`s_sendmsg`); they also re-check on a
//! short timeout, which covers device stores that raise no interrupt,
//! without spinning a core.
//!
//! Contract used by other parts of the runtime (queue.rs, memory.rs):
//! [`value`], [`subtract`] and [`State::notify`]. The rest is to be
//! filled in: create/destroy/load/store/add/cas/wait exports.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Condvar, Mutex};

use aqueduct_abi::amd_signal::AmdSignal;

use super::Runtime;

/// Byte offset of `value` in `amd_signal_t`.
pub const VALUE_OFFSET: u64 = core::mem::offset_of!(AmdSignal, value) as u64;

/// Signal bookkeeping and the waiters' wake-up.
#[derive(Debug, Default)]
pub struct State {
    /// Bumped on every notification; waiters sleep on `changed`.
    epoch: Mutex<u64>,
    changed: Condvar,
}

impl State {
    /// Wakes every host waiter to re-check its signal.
    pub fn notify(&self) {
        let mut e = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
        *e = e.wrapping_add(1);
        self.changed.notify_all();
    }

    /// Sleeps until the next [`State::notify`] or `timeout`, whichever is
    /// first.
    pub fn park(&self, timeout: std::time::Duration) {
        let e = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
        let start = *e;
        let _ = self
            .changed
            .wait_timeout_while(e, timeout, |e| *e == start)
            .map_err(|p| p.into_inner());
    }

    pub fn shut_down(&self) {
        self.notify();
    }
}

/// The value word of the signal `handle`, if it is a live signal in
/// simulator memory.
pub fn value_word(rt: &Runtime, handle: u64) -> Option<&'static AtomicI64> {
    let at = handle.checked_add(VALUE_OFFSET)?;
    if at % 8 != 0 {
        return None;
    }
    let mut m = rt.memory.access();
    m.check(at, 8).ok()?;
    // SAFETY: the range is live simulator memory (checked above) and
    // 8-aligned. Signals are freed only by hsa_signal_destroy, after which
    // using the handle is the caller's error (as in ROCr); the reference is
    // used immediately by the callers in this module's contract.
    Some(unsafe { AtomicI64::from_ptr(at as *mut i64) })
}

/// The current value of signal `handle` (acquire), if it is a signal.
pub fn value(rt: &Runtime, handle: u64) -> Option<i64> {
    value_word(rt, handle).map(|v| v.load(Ordering::Acquire))
}

/// Atomically subtracts `n` (release) and wakes waiters: how a packet
/// processor completes a packet's completion signal.
pub fn subtract(rt: &Runtime, handle: u64, n: i64) -> bool {
    let Some(v) = value_word(rt, handle) else {
        return false;
    };
    v.fetch_sub(n, Ordering::AcqRel);
    rt.signals.notify();
    true
}
