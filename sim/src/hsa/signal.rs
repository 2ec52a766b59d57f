//! Signals: `amd_signal_t` in simulator memory (hsa_signal_*).
//!
//! A signal handle is the address of its `amd_signal_t` (aqueduct-abi's
//! layout), as in ROCr, so device code reads and writes the value at
//! offset 8 directly. Host waiters park on one condition variable and are
//! woken by host-side writes, by the packet processors (completion
//! signals) and by device interrupts (`s_sendmsg`, [`on_interrupt`]); they
//! also re-check every [`WAIT_SLICE`], which covers device stores that
//! raise no interrupt, without spinning a core.
//!
//! Contract used by other parts of the runtime (the queue registry and its
//! processor, memory.rs):
//! [`value`], [`subtract`], [`wait`], [`create`]/[`destroy`],
//! [`on_interrupt`] and [`State::notify`].
//!
//! # Handles that name no signal
//!
//! The value functions (`load`, `store`, `add`, `cas`, `wait`) have no
//! status to return. ROCr dereferences whatever handle it is given; here
//! every access goes through the simulator's valid-range table, so a
//! handle whose value word is not simulator memory reads as 0 and is
//! never written — the simulator cannot be made to touch memory outside
//! the table through a signal handle. A handle that is simulator memory
//! but not a signal (a buffer) is operated on at offset 8, as ROCr would.
//! `hsa_signal_destroy` does know the live signals and refuses the rest.
//!
//! # Doorbells
//!
//! A signal of kind `AMD_SIGNAL_KIND_DOORBELL` holds a doorbell register's
//! address where a user signal holds its value. As in ROCr, a store to it
//! writes the register (if that is simulator memory); the other operations
//! are not defined on doorbells (ROCr asserts) and act on the union as a
//! value.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use aqueduct_abi::amd_signal::{AMD_SIGNAL_ALIGN_BYTES, AmdSignal, AmdSignalKind};
use aqueduct_abi::hsa::{SignalCondition, SignalHandle};
use zerocopy::IntoBytes;

use super::system::TIMESTAMP_HZ;
use aqueduct_abi::hsa_api::*;

use super::{Runtime, put, runtime, with_runtime};

/// Byte offset of `value` in `amd_signal_t`.
pub const VALUE_OFFSET: u64 = core::mem::offset_of!(AmdSignal, value) as u64;
/// Byte offset of `kind` in `amd_signal_t`.
const KIND_OFFSET: u64 = core::mem::offset_of!(AmdSignal, kind) as u64;
/// `sizeof(amd_signal_t)`.
const SIGNAL_BYTES: u64 = core::mem::size_of::<AmdSignal>() as u64;

/// Longest a waiter sleeps before re-reading its signal: device code may
/// store to a signal without raising an interrupt, and nothing else would
/// wake the waiter then.
pub const WAIT_SLICE: Duration = Duration::from_millis(1);

/// Signal bookkeeping and the waiters' wake-up.
#[derive(Debug)]
pub struct State {
    /// Bumped on every notification; waiters sleep on `changed`.
    epoch: Mutex<u64>,
    changed: Condvar,
    /// Addresses of the signals `hsa_signal_create` made and
    /// `hsa_signal_destroy` has not freed.
    live: Mutex<BTreeSet<u64>>,
    /// How many sleepers watch a signal whose address hashes to each
    /// bucket. A store to a signal nobody watches wakes nobody: a doorbell
    /// rung while its processor waits on a barrier's dependency costs one
    /// load here, not a system call (the condition variable's wake-up is
    /// one even without sleepers). Two signals sharing a bucket cost a
    /// spurious wake-up, never a lost one.
    watched: [AtomicU32; WATCH_BUCKETS],
    /// Sleepers that want every notification.
    watch_all: AtomicU32,
}

impl Default for State {
    fn default() -> Self {
        Self {
            epoch: Mutex::new(0),
            changed: Condvar::new(),
            live: Mutex::new(BTreeSet::new()),
            watched: [const { AtomicU32::new(0) }; WATCH_BUCKETS],
            watch_all: AtomicU32::new(0),
        }
    }
}

/// Buckets of [`State::watched`]: more than the sleepers a runtime has at
/// once (one per queue plus the host's waiters), so collisions are rare.
const WATCH_BUCKETS: usize = 256;

/// The bucket of the signal at `address` (signals are 64-byte aligned:
/// the low bits carry nothing; a multiplicative hash spreads the rest).
fn bucket(address: u64) -> usize {
    ((address >> 6).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % WATCH_BUCKETS
}

/// Registration of a sleeper's interest in some signals, for as long as
/// it lives: taken before reading the values, so a store between the read
/// and the sleep still wakes it.
///
/// The registration and a signal write pair up as in Dekker's algorithm:
/// the sleeper counts itself in, fences, then reads the value; the writer
/// writes the value, fences, then reads the count
/// ([`State::notify_signal`]). With both fences sequentially consistent,
/// either the writer sees the count and notifies, or the sleeper sees the
/// new value and does not sleep.
pub struct Watch<'a> {
    state: &'a State,
    /// The buckets counted in; `None` for [`State::watch_all`].
    buckets: Option<Vec<usize>>,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        match &self.buckets {
            Some(buckets) => {
                for &b in buckets {
                    self.state.watched[b].fetch_sub(1, Ordering::Release);
                }
            }
            None => {
                self.state.watch_all.fetch_sub(1, Ordering::Release);
            }
        }
    }
}

impl State {
    /// Wakes every sleeper to re-check what it waits for.
    pub fn notify(&self) {
        let mut e = self.epoch();
        *e = e.wrapping_add(1);
        self.changed.notify_all();
    }

    /// Wakes the sleepers if any of them watches the signal `handle` (or
    /// everything): what a write to a signal does, after the write.
    pub fn notify_signal(&self, handle: u64) {
        // Orders the caller's write before the loads of the counts (see
        // `Watch`).
        fence(Ordering::SeqCst);
        let b = bucket(SignalHandle(handle).address());
        if self.watched[b].load(Ordering::Relaxed) != 0
            || self.watch_all.load(Ordering::Relaxed) != 0
        {
            self.notify();
        }
    }

    /// Registers interest in `handles` (null ones ignored) until the
    /// returned guard drops.
    pub fn watch(&self, handles: impl IntoIterator<Item = u64>) -> Watch<'_> {
        let buckets: Vec<usize> = handles
            .into_iter()
            .filter(|&h| h != 0)
            .map(|h| bucket(SignalHandle(h).address()))
            .collect();
        for &b in &buckets {
            self.watched[b].fetch_add(1, Ordering::Relaxed);
        }
        // Orders the counts before the caller's reads (see `Watch`).
        fence(Ordering::SeqCst);
        Watch {
            state: self,
            buckets: Some(buckets),
        }
    }

    /// Sleeps until the next notification of any signal, or `timeout`.
    pub fn park(&self, timeout: Duration) {
        let _all = self.watch_all();
        let seen = *self.epoch();
        self.park_since(seen, timeout);
    }

    fn watch_all(&self) -> Watch<'_> {
        self.watch_all.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        Watch {
            state: self,
            buckets: None,
        }
    }

    /// The notification count, to pass to [`State::park_since`] after
    /// reading a signal.
    pub fn seen(&self) -> u64 {
        *self.epoch()
    }

    /// Sleeps until a notification later than `seen` or `timeout`: a
    /// notification between reading `seen` and parking is not lost.
    pub fn park_since(&self, seen: u64, timeout: Duration) {
        let e = self.epoch();
        let _ = self
            .changed
            .wait_timeout_while(e, timeout, |e| *e == seen)
            .map_err(|p| p.into_inner());
    }

    fn epoch(&self) -> MutexGuard<'_, u64> {
        // A counter cannot be left inconsistent by a panic.
        self.epoch.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn live(&self) -> MutexGuard<'_, BTreeSet<u64>> {
        // One insert or remove per critical section: never inconsistent.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `handle` names a signal `hsa_signal_create` made and that
    /// is not destroyed.
    pub fn is_live(&self, handle: u64) -> bool {
        self.live().contains(&SignalHandle(handle).address())
    }

    /// Wakes every waiter, so each finds out its signal is gone or the
    /// runtime is closing. The signals' memory goes with the runtime's.
    pub fn shut_down(&self) {
        self.live().clear();
        self.notify();
    }
}

// ===========================================================================
// Access to a signal's words, through the valid-range table
// ===========================================================================

/// The value word of the signal `handle`, if it is a live signal in
/// simulator memory.
pub fn value_word(rt: &Runtime, handle: u64) -> Option<&'static AtomicI64> {
    let at = SignalHandle(handle).address().checked_add(VALUE_OFFSET)?;
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

/// Runs `op` on the qword at `at` while the table guarantees it stays
/// allocated; `None` if it is not 8-aligned simulator memory.
fn with_word<R>(rt: &Runtime, at: u64, op: impl FnOnce(&AtomicU64) -> R) -> Option<R> {
    let mut m = rt.memory.access();
    m.check(at, 8).ok()?;
    m.atomic_u64(at).map(op)
}

/// Runs `op` on the value word of `handle` (see the module doc for
/// handles that are not signals).
fn with_value<R>(rt: &Runtime, handle: u64, op: impl FnOnce(&AtomicU64) -> R) -> Option<R> {
    let at = SignalHandle(handle).address().checked_add(VALUE_OFFSET)?;
    with_word(rt, at, op)
}

/// The current value of signal `handle` (acquire), if it is a signal.
pub fn value(rt: &Runtime, handle: u64) -> Option<i64> {
    load(rt, handle, Ordering::Acquire)
}

fn load(rt: &Runtime, handle: u64, order: Ordering) -> Option<i64> {
    with_value(rt, handle, |v| v.load(order) as i64)
}

/// Atomically subtracts `n` (release) and wakes waiters: how a packet
/// processor completes a packet's completion signal.
pub fn subtract(rt: &Runtime, handle: u64, n: i64) -> bool {
    add(rt, handle, n.wrapping_neg(), Ordering::AcqRel)
}

/// Adds `delta` (two's complement wraps, as ROCr's atomics do) and wakes
/// waiters; false if `handle` is not simulator memory.
fn add(rt: &Runtime, handle: u64, delta: i64, order: Ordering) -> bool {
    let done = with_value(rt, handle, |v| v.fetch_add(delta as u64, order)).is_some();
    rt.signals.notify_signal(handle);
    done
}

/// A store a higher layer can serve without the valid-range table: the
/// queue registry's doorbell of the queue this thread used last. The
/// registry installs it with its first queue, so that signals need not know
/// queues (the dependency goes queue → signal only).
pub type FastStore = fn(handle: u64, value: i64, order: Ordering) -> bool;

static FAST_STORE: OnceLock<FastStore> = OnceLock::new();

/// Installs the fast path of the `hsa_signal_store_*` exports (the first
/// call wins).
pub fn set_fast_store(fast: FastStore) {
    let _ = FAST_STORE.set(fast);
}

/// Stores `value`: into a doorbell's register, else into the value word.
fn store(rt: &Runtime, handle: u64, value: i64, order: Ordering) {
    let base = SignalHandle(handle).address();
    // A producer ringing the queue it just reserved slots in (a user-kind
    // signal) skips the table.
    if !FAST_STORE
        .get()
        .is_some_and(|fast| fast(handle, value, order))
    {
        let mut m = rt.memory.access();
        let words = base
            .checked_add(KIND_OFFSET)
            .filter(|&at| m.check(at, 16).is_ok())
            .and_then(|at| Some((m.atomic_u64(at)?, m.atomic_u64(base + VALUE_OFFSET)?)));
        if let Some((kind, union)) = words {
            if kind.load(Ordering::Acquire) as i64 == AmdSignalKind::DOORBELL.0 {
                let register = union.load(Ordering::Acquire);
                if m.check(register, 8).is_ok()
                    && let Some(r) = m.atomic_u64(register)
                {
                    r.store(value as u64, order);
                }
            } else {
                union.store(value as u64, order);
            }
        }
    }
    rt.signals.notify_signal(handle);
}

/// Compare-and-swap; returns the value observed (the old value either
/// way), or 0 if `handle` is not simulator memory.
fn cas(
    rt: &Runtime,
    handle: u64,
    expected: i64,
    value: i64,
    success: Ordering,
    failure: Ordering,
) -> i64 {
    let observed = with_value(rt, handle, |v| {
        v.compare_exchange(expected as u64, value as u64, success, failure)
            .unwrap_or_else(|current| current) as i64
    });
    rt.signals.notify_signal(handle);
    observed.unwrap_or(0)
}

/// What device code's `s_sendmsg` (an `Event::Message`) means to host
/// waiters: a signal may have changed, re-check. The queue processor calls
/// this when a wave raises an interrupt.
pub fn on_interrupt(rt: &Runtime) {
    rt.signals.notify();
}

/// Blocks until `condition` holds for the value of `handle` or `deadline`
/// (`None`: never) passes, and returns the value last read; `None` once
/// `handle` is not simulator memory (never a signal, or destroyed while
/// waiting). An unknown condition returns `Some(0)` at once, as ROCr's
/// waits do (`default: return 0` in their condition switch).
pub fn wait(
    rt: &Runtime,
    handle: u64,
    condition: SignalCondition,
    compare: i64,
    deadline: Option<Instant>,
    order: Ordering,
) -> Option<i64> {
    let _watch = rt.signals.watch([handle]);
    loop {
        let seen = rt.signals.seen();
        let value = load(rt, handle, order)?;
        match condition.holds(value, compare) {
            Some(true) => return Some(value),
            Some(false) => {}
            None => return Some(0),
        }
        let mut slice = WAIT_SLICE;
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Some(value);
            }
            slice = slice.min(left);
        }
        rt.signals.park_since(seen, slice);
    }
}

/// The instant `ticks` of the system timestamp after now; `None` for
/// "forever" (`u64::MAX`, `HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT`) or past what
/// `Instant` can represent.
fn deadline_after(ticks: u64) -> Option<Instant> {
    if ticks == u64::MAX {
        return None;
    }
    let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(TIMESTAMP_HZ);
    let nanos = u64::try_from(nanos).ok()?;
    Instant::now().checked_add(Duration::from_nanos(nanos))
}

// ===========================================================================
// Creation and destruction
// ===========================================================================

/// Makes a user signal holding `initial` in simulator memory (64-byte
/// aligned, as `AMD_SIGNAL_ALIGN_BYTES` requires) and returns its handle.
pub fn create(rt: &Runtime, initial: i64) -> Result<u64, Status> {
    let at = rt
        .memory
        .alloc(SIGNAL_BYTES, AMD_SIGNAL_ALIGN_BYTES as u64)
        .map_err(|_| HSA_STATUS_ERROR_OUT_OF_RESOURCES)?;
    let signal = AmdSignal::user(initial);
    if rt.memory.write_bytes(at, signal.as_bytes()).is_err() {
        let _ = rt.memory.free(at);
        return Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    }
    rt.signals.live().insert(at);
    Ok(at)
}

/// Frees a signal [`create`] made: INVALID_ARGUMENT for the null handle,
/// INVALID_SIGNAL for anything else that is not a live signal (ROCr
/// `Signal::Convert`), which includes a queue's doorbell and a buffer.
pub fn destroy(rt: &Runtime, handle: u64) -> Status {
    if handle == 0 {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let at = SignalHandle(handle).address();
    if !rt.signals.live().remove(&at) {
        return HSA_STATUS_ERROR_INVALID_SIGNAL;
    }
    let freed = rt.memory.free(at);
    // Waiters on the destroyed signal must find out.
    rt.signals.notify();
    match freed {
        Ok(()) => HSA_STATUS_SUCCESS,
        Err(_) => HSA_STATUS_ERROR_INVALID_SIGNAL,
    }
}

/// The status for a signal argument of a call that has one
/// (`hsa_amd_memory_async_copy`): null is INVALID_ARGUMENT, anything but a
/// live signal INVALID_SIGNAL (ROCr `Signal::Convert`).
pub fn check(rt: &Runtime, handle: SignalHandle) -> Result<(), Status> {
    if handle.is_null() {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    if !rt.signals.is_live(handle.0) {
        return Err(HSA_STATUS_ERROR_INVALID_SIGNAL);
    }
    Ok(())
}

// ===========================================================================
// Exports
// ===========================================================================

/// `hsa_signal_create`: checks as ROCr (`hsa.cpp` / `hsa_ext_amd.cpp`
/// `hsa_amd_signal_create`): a null out-pointer, a null consumer list with
/// a non-zero count, or an agent listed twice is INVALID_ARGUMENT. ROCr
/// dereferences a consumer that is no agent; the simulator answers
/// INVALID_AGENT. Consumers change nothing else: every signal is
/// reachable by every agent.
///
/// # Safety
/// `signal` is null or valid for a write of `hsa_signal_t`; `consumers`
/// is null or holds `num_consumers` agent handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_create(
    initial_value: i64,
    num_consumers: u32,
    consumers: *const Agent,
    signal: *mut SignalHandle,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if signal.is_null() || (num_consumers != 0 && consumers.is_null()) {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if num_consumers != 0 {
        // SAFETY: non-null and holding `num_consumers` handles (caller's
        // contract).
        let list = unsafe { std::slice::from_raw_parts(consumers, num_consumers as usize) };
        let distinct: BTreeSet<u64> = list.iter().map(|a| a.0).collect();
        if distinct.len() != list.len() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if list.iter().any(|a| rt.agent(a.0).is_none()) {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
    }
    match create(&rt, initial_value) {
        // SAFETY: `signal` is non-null and valid for the write (caller).
        Ok(handle) => unsafe { put(signal, SignalHandle(handle)) },
        Err(s) => s,
    }
}

/// `hsa_signal_destroy`: see [`destroy`].
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_signal_destroy(signal: SignalHandle) -> Status {
    match runtime() {
        Ok(rt) => destroy(&rt, signal.0),
        Err(s) => s,
    }
}

/// The value functions without a status: one line each, named after the C
/// function, forwarding to the shared implementation with its ordering.
/// Before `hsa_init` they do nothing and read 0.
macro_rules! value_ops {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $imp:ident($($ord:ident),+);)+) => {$(
        #[doc = concat!("`", stringify!($name), "` (see the module doc for handles that are no signal).")]
        ///
        /// # Safety
        /// None beyond the C ABI: the handle is checked against simulator
        /// memory.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(signal: SignalHandle $(, $arg: $ty)*) $(-> $ret)? {
            with_runtime(|rt| {
                value_ops!(@call $imp, rt, signal.0 $(, $arg)*, $(Ordering::$ord),+)
            })
            .unwrap_or_default()
        }
    )+};
    (@call load, $($a:expr),+) => { load($($a),+).unwrap_or(0) };
    (@call add, $($a:expr),+) => { { add($($a),+); } };
    (@call $imp:ident, $($a:expr),+) => { $imp($($a),+) };
}

value_ops! {
    fn hsa_signal_load_relaxed() -> i64 => load(Relaxed);
    fn hsa_signal_load_scacquire() -> i64 => load(Acquire);
    fn hsa_signal_store_relaxed(value: i64) => store(Relaxed);
    fn hsa_signal_store_screlease(value: i64) => store(Release);
    fn hsa_signal_add_relaxed(value: i64) => add(Relaxed);
    fn hsa_signal_add_scacquire(value: i64) => add(Acquire);
    fn hsa_signal_add_screlease(value: i64) => add(Release);
    fn hsa_signal_add_scacq_screl(value: i64) => add(AcqRel);
    fn hsa_signal_cas_relaxed(expected: i64, value: i64) -> i64 => cas(Relaxed, Relaxed);
    fn hsa_signal_cas_scacquire(expected: i64, value: i64) -> i64 => cas(Acquire, Acquire);
    fn hsa_signal_cas_screlease(expected: i64, value: i64) -> i64 => cas(Release, Relaxed);
    fn hsa_signal_cas_scacq_screl(expected: i64, value: i64) -> i64 => cas(AcqRel, Acquire);
}

/// `hsa_signal_wait_*`: the value once `condition` holds, or the value
/// last read when `timeout_hint` ticks of the system timestamp have
/// passed; 0 before `hsa_init`, for a handle that is not simulator memory
/// and for an unknown condition. The wait state is a hint and ignored:
/// waiters always block (see [`wait`]).
fn wait_export(
    signal: SignalHandle,
    condition: u32,
    compare: i64,
    timeout_hint: u64,
    order: Ordering,
) -> i64 {
    let Ok(rt) = runtime() else {
        return 0;
    };
    let deadline = deadline_after(timeout_hint);
    wait(
        &rt,
        signal.0,
        SignalCondition(condition),
        compare,
        deadline,
        order,
    )
    .unwrap_or(0)
}

/// The two waits, one line each: name and memory order.
macro_rules! wait_exports {
    ($($name:ident: $order:ident;)+) => {$(
        #[doc = concat!(
            "`", stringify!($name), "` (", stringify!($order), " order): the signal's value once \
             `condition` holds against `compare_value`, or the value last read when \
             `timeout_hint` ticks of the system timestamp have passed; 0 before `hsa_init`, \
             for a handle that is not simulator memory and for an unknown condition. The \
             wait-state hint is ignored: waiters always block."
        )]
        ///
        /// # Safety
        /// None beyond the C ABI.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            signal: SignalHandle,
            condition: u32,
            compare_value: i64,
            timeout_hint: u64,
            _wait_state_hint: u32,
        ) -> i64 {
            wait_export(signal, condition, compare_value, timeout_hint, Ordering::$order)
        }
    )+};
}

wait_exports! {
    hsa_signal_wait_relaxed: Relaxed;
    hsa_signal_wait_scacquire: Acquire;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hsa::AgentSpec;
    use crate::hsa::testing::Init;

    const EQ: u32 = SignalCondition::EQ.0;
    const NE: u32 = SignalCondition::NE.0;
    const LT: u32 = SignalCondition::LT.0;
    const GTE: u32 = SignalCondition::GTE.0;
    /// A timeout hint of `ms` milliseconds in timestamp ticks.
    fn ms(ms: u64) -> u64 {
        ms * TIMESTAMP_HZ / 1000
    }

    #[test]
    fn a_write_wakes_sleepers_only_when_someone_watches_its_signal() {
        let state = State::default();
        let (watched, other) = (0x1_0000u64, 0x2_0040u64);
        assert_ne!(bucket(watched), bucket(other));
        state.notify_signal(watched);
        assert_eq!(state.seen(), 0, "nobody watches: no wake-up");
        {
            let _w = state.watch([watched, 0]);
            state.notify_signal(other);
            assert_eq!(state.seen(), 0);
            state.notify_signal(watched);
            assert_eq!(state.seen(), 1);
        }
        state.notify_signal(watched);
        assert_eq!(state.seen(), 1, "the watch ended with its guard");
        let _all = state.watch_all();
        state.notify_signal(other);
        assert_eq!(state.seen(), 2, "a sleeper on every signal is woken");
    }

    #[test]
    fn a_signal_is_a_user_amd_signal_in_device_memory() {
        let init = Init::new();
        let s = init.signal(-5);
        assert_eq!(s.0 % AMD_SIGNAL_ALIGN_BYTES as u64, 0);
        let mut bytes = [0u8; 64];
        init.0.memory.read_bytes(s.0, &mut bytes).unwrap();
        assert_eq!(bytes, AmdSignal::user(-5).as_bytes());
        // SAFETY: plain C ABI call.
        assert_eq!(unsafe { hsa_signal_destroy(s) }, HSA_STATUS_SUCCESS);
        assert!(init.0.memory.access().check(s.0, 1).is_err());
    }

    #[test]
    fn wait_that_times_out_returns_the_last_value() {
        let init = Init::new();
        let s = init.signal(7);
        let t = Instant::now();
        // SAFETY: plain C ABI calls on a live signal.
        unsafe {
            assert_eq!(hsa_signal_wait_scacquire(s, EQ, 0, ms(30), 0), 7);
            assert!(t.elapsed() >= Duration::from_millis(30));
            assert_eq!(hsa_signal_wait_relaxed(s, LT, 7, 0, 0), 7);
            // Conditions that hold return at once.
            assert_eq!(hsa_signal_wait_relaxed(s, NE, 0, u64::MAX, 0), 7);
            assert_eq!(hsa_signal_wait_relaxed(s, GTE, 7, u64::MAX, 0), 7);
            assert_eq!(hsa_signal_wait_relaxed(s, LT, 8, u64::MAX, 0), 7);
            // ROCr's answer to a condition it does not know.
            assert_eq!(hsa_signal_wait_relaxed(s, 9, 0, u64::MAX, 0), 0);
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn waiter_wakes_when_another_thread_changes_the_value() {
        let init = Init::new();
        let s = init.signal(3);
        let adder = std::thread::spawn(move || {
            for _ in 0..3 {
                std::thread::sleep(Duration::from_millis(5));
                // SAFETY: plain C ABI call on a live signal.
                unsafe { hsa_signal_add_screlease(s, -1) };
            }
        });
        // SAFETY: plain C ABI calls on a live signal.
        unsafe {
            assert_eq!(hsa_signal_wait_scacquire(s, EQ, 0, ms(10_000), 0), 0);
            adder.join().unwrap();
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn device_stores_without_interrupt_are_seen_within_a_slice() {
        let init = Init::new();
        let s = init.signal(1);
        let rt = init.0.clone();
        let device = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            // What a wave's global store does: no notification.
            rt.memory
                .write_bytes(s.0 + VALUE_OFFSET, &0i64.to_le_bytes())
                .unwrap();
            on_interrupt(&rt);
        });
        // SAFETY: plain C ABI calls on a live signal.
        unsafe {
            assert_eq!(hsa_signal_wait_relaxed(s, EQ, 0, ms(10_000), 0), 0);
            device.join().unwrap();
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn cas_swaps_only_on_a_match_and_returns_the_value_it_saw() {
        let init = Init::new();
        let s = init.signal(10);
        // SAFETY: plain C ABI calls on a live signal.
        unsafe {
            assert_eq!(hsa_signal_cas_scacq_screl(s, 11, 20), 10);
            assert_eq!(hsa_signal_load_relaxed(s), 10);
            assert_eq!(hsa_signal_cas_relaxed(s, 10, 20), 10);
            assert_eq!(hsa_signal_load_scacquire(s), 20);
            assert_eq!(hsa_signal_cas_screlease(s, 20, i64::MIN), 20);
            assert_eq!(hsa_signal_cas_scacquire(s, i64::MIN, -1), i64::MIN);
            hsa_signal_add_relaxed(s, 2);
            hsa_signal_add_scacquire(s, i64::MAX);
            // Two's complement wraps, as the hardware's atomics do.
            assert_eq!(hsa_signal_load_relaxed(s), 1i64.wrapping_add(i64::MAX));
            hsa_signal_store_relaxed(s, 4);
            hsa_signal_add_scacq_screl(s, 1);
            assert_eq!(hsa_signal_load_relaxed(s), 5);
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn handles_that_name_no_signal_read_zero_and_are_never_written() {
        let init = Init::new();
        let mut host = AmdSignal::user(42);
        let outside = SignalHandle(&raw mut host as u64);
        let s = init.signal(0);
        // SAFETY: plain C ABI calls; none may touch `host`.
        unsafe {
            assert_eq!(hsa_signal_load_scacquire(outside), 0);
            hsa_signal_store_screlease(outside, 1);
            hsa_signal_add_relaxed(outside, 1);
            assert_eq!(hsa_signal_cas_relaxed(outside, 42, 1), 0);
            assert_eq!(hsa_signal_wait_scacquire(outside, EQ, 1, u64::MAX, 0), 0);
            assert_eq!(hsa_signal_load_relaxed(SignalHandle::NULL), 0);
            assert_eq!(hsa_signal_destroy(outside), HSA_STATUS_ERROR_INVALID_SIGNAL);
            assert_eq!(
                hsa_signal_destroy(SignalHandle::NULL),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_SUCCESS);
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_ERROR_INVALID_SIGNAL);
            assert_eq!(hsa_signal_load_relaxed(s), 0);
        }
        assert_eq!(host, AmdSignal::user(42));
    }

    #[test]
    fn create_checks_its_consumers() {
        let init = Init::new();
        let gpu = Agent(init.0.agents[1].handle);
        let cpu = Agent(init.0.agents[0].handle);
        let mut s = SignalHandle::NULL;
        // SAFETY: the lists hold the counts given; `s` is writable.
        unsafe {
            let twice = [gpu, gpu];
            assert_eq!(
                hsa_signal_create(0, 2, twice.as_ptr(), &mut s),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_signal_create(0, 1, std::ptr::null(), &mut s),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                hsa_signal_create(0, 0, std::ptr::null(), std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            let stranger = [Agent(5)];
            assert_eq!(
                hsa_signal_create(0, 1, stranger.as_ptr(), &mut s),
                HSA_STATUS_ERROR_INVALID_AGENT
            );
            let both = [cpu, gpu];
            assert_eq!(
                hsa_signal_create(9, 2, both.as_ptr(), &mut s),
                HSA_STATUS_SUCCESS
            );
            assert_eq!(hsa_signal_load_relaxed(s), 9);
            assert_eq!(hsa_signal_destroy(s), HSA_STATUS_SUCCESS);
        }
    }

    #[test]
    fn a_store_to_a_doorbell_rings_its_register() {
        let specs = AgentSpec::parse_list("mi300x").unwrap();
        let rt = Runtime::new(&specs);
        let register = rt.memory.alloc(8, 8).unwrap();
        let bell = rt.memory.alloc(64, 64).unwrap();
        let mut signal = AmdSignal::user(register as i64);
        signal.kind = AmdSignalKind::DOORBELL;
        rt.memory.write_bytes(bell, signal.as_bytes()).unwrap();
        store(&rt, bell, 77, Ordering::Release);
        let mut word = [0u8; 8];
        rt.memory.read_bytes(register, &mut word).unwrap();
        assert_eq!(i64::from_le_bytes(word), 77);
        assert_eq!(value(&rt, bell), Some(register as i64));
    }

    #[test]
    fn hint_bits_in_a_handle_are_ignored() {
        let specs = AgentSpec::parse_list("mi300x").unwrap();
        let rt = Runtime::new(&specs);
        let s = create(&rt, 3).unwrap();
        assert_eq!(value(&rt, s | 0b10_0110), Some(3));
        assert!(subtract(&rt, s | 0b10, 1));
        assert_eq!(value(&rt, s), Some(2));
        assert_eq!(destroy(&rt, s | 0b100), HSA_STATUS_SUCCESS);
        assert_eq!(value(&rt, s), None);
    }
}
