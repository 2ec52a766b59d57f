//! HSA signals from device code, on the `amd_signal_t` layout of
//! `aqueduct-abi`, with explicit orderings and scopes.
//!
//! A signal is 64 bytes of memory: `kind`, the 64-bit `value` (or, for a
//! doorbell, the hardware doorbell's address), and optionally an event
//! mailbox through which a store wakes host waiters. Any suitably aligned
//! device memory can be a signal ([`Signal::new`] on a view of it): device-only
//! signals need no runtime call, so a scheduler can carve them from a slab.
//!
//! What ROCr's own device code does (`__ockl_hsa_signal_*` in the AMD
//! device libraries), and so what this module does:
//!
//! - the value operations act on `value` with the caller's ordering;
//! - after an operation that may change the value (store, add, sub, and,
//!   or, xor, exchange, and a compare-and-swap that succeeded), if the
//!   signal has an event mailbox, the event id is stored to the mailbox
//!   (release, system scope) and an interrupt is raised (`s_sendmsg` with
//!   MSG_INTERRUPT, the masked event id in M0), which makes the host
//!   runtime re-check its waiters;
//! - a store to a signal whose kind is not USER (a doorbell) writes the
//!   value to the hardware doorbell at `hardware_doorbell_ptr` with a
//!   system-scope release store, and raises no event.

use aqueduct_abi::amd_signal::{AmdSignal, AmdSignalKind};
use aqueduct_abi::atomic::{Atomic, LoadOrdering, Ordering, Release, Scope, StoreOrdering, System};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::view::{AtomicField, View};

/// The bits of an event id that fit the interrupt message's M0 on gfx9,
/// gfx11 and gfx12 (the device libraries' mask for those ISA versions).
pub const EVENT_ID_MASK: u32 = 0x00ff_ffff;

/// Raises the interrupt that tells the host runtime to look at event `id`.
fn interrupt(id: u32) {
    #[cfg(target_arch = "amdgpu")]
    {
        unsafe extern "C" {
            /// Defined in `llvm/signal.ll`: `s_sendmsg sendmsg(MSG_INTERRUPT)`
            /// with the masked id, from the first active lane, in M0.
            safe fn aqueduct_interrupt(id: u32);
        }
        aqueduct_interrupt(id & EVENT_ID_MASK);
    }
    #[cfg(not(target_arch = "amdgpu"))]
    let _ = id;
}

/// A signal in memory that device code operates on directly.
#[derive(Clone, Copy, Debug)]
pub struct Signal<'a>(View<'a, AmdSignal>);

impl<'a> Signal<'a> {
    /// The signal in `signal`'s memory.
    pub fn new(signal: View<'a, AmdSignal>) -> Self {
        Self(signal)
    }

    /// The signal named by an HSA handle (its `amd_signal_t` address, as
    /// the handle holds it: without hint bits).
    ///
    /// # Safety
    /// `handle` names an initialised `amd_signal_t` (not null) that meets
    /// a view's contract ([`aqueduct_abi::view`]) for `'a`.
    pub unsafe fn from_handle(handle: SignalHandle) -> Self {
        // SAFETY: the caller's contract.
        Self(unsafe { View::at_nonzero(handle.0) })
    }

    /// The signal's handle, to put in a packet.
    pub fn handle(&self) -> SignalHandle {
        SignalHandle(self.0.device_address())
    }

    fn value(&self) -> AtomicField<'a, i64> {
        self.0.value()
    }

    /// Stores the event id to the mailbox and raises the interrupt, if the
    /// signal has a mailbox.
    fn notify(&self) {
        let Some(mailbox) = self.0.event_mailbox_ptr().get() else {
            return;
        };
        let id = self.0.event_id().get();
        mailbox.event().store(u64::from(id), Release, System);
        interrupt(id);
    }

    /// Loads the value.
    pub fn load<O: LoadOrdering, S: Scope>(&self, o: O, s: S) -> i64 {
        self.value().load(o, s)
    }

    /// Stores `v`: to the value (then the event), or, for a doorbell, to
    /// the hardware doorbell (release, system scope, whatever `O` and `S`).
    pub fn store<O: StoreOrdering, S: Scope>(&self, v: i64, o: O, s: S) {
        if self.0.kind().get() == AmdSignalKind::USER {
            self.value().store(v, o, s);
            self.notify();
        } else {
            // The union holds the doorbell register's address, read as
            // ROCr's device code reads it (a plain load of the word).
            let register = self.0.value().device_address() as *const u64;
            // SAFETY: a doorbell signal's union holds the doorbell
            // register's address, which the runtime keeps mapped while the
            // queue lives (the hardware edge: a register, not a layout);
            // stores to it are 64-bit.
            let bell = unsafe { Atomic::<u64>::from_ptr(register.read() as *mut u64) };
            bell.store(v as u64, Release, System);
        }
    }

    /// Adds `v`; returns the previous value.
    pub fn add<O: Ordering, S: Scope>(&self, v: i64, o: O, s: S) -> i64 {
        let old = self.value().fetch_add(v, o, s);
        self.notify();
        old
    }

    /// Subtracts `v`; returns the previous value.
    pub fn sub<O: Ordering, S: Scope>(&self, v: i64, o: O, s: S) -> i64 {
        let old = self.value().fetch_sub(v, o, s);
        self.notify();
        old
    }

    /// Bitwise and; returns the previous value.
    pub fn and<O: Ordering, S: Scope>(&self, v: i64, o: O, s: S) -> i64 {
        let old = self.value().fetch_and(v, o, s);
        self.notify();
        old
    }

    /// Bitwise or; returns the previous value.
    pub fn or<O: Ordering, S: Scope>(&self, v: i64, o: O, s: S) -> i64 {
        let old = self.value().fetch_or(v, o, s);
        self.notify();
        old
    }

    /// Bitwise xor; returns the previous value.
    pub fn xor<O: Ordering, S: Scope>(&self, v: i64, o: O, s: S) -> i64 {
        let old = self.value().fetch_xor(v, o, s);
        self.notify();
        old
    }

    /// Stores `v`; returns the previous value.
    pub fn exchange<O: Ordering, S: Scope>(&self, v: i64, o: O, s: S) -> i64 {
        let old = self.value().swap(v, o, s);
        self.notify();
        old
    }

    /// Stores `new` if the value is `expected`; returns the value seen
    /// (equal to `expected` when it succeeded, which raises the event).
    pub fn cas<O: Ordering, S: Scope>(&self, expected: i64, new: i64, o: O, s: S) -> i64 {
        match self.value().compare_exchange(expected, new, o, s) {
            Ok(old) => {
                self.notify();
                old
            }
            Err(seen) => seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqueduct_abi::atomic::{AcqRel, Acquire, Agent, Relaxed};

    #[test]
    fn operations_return_the_previous_value_and_post_the_event() {
        let mut mailbox = 0u64;
        let mut s = AmdSignal::user(10);
        s.event_mailbox_ptr = &raw mut mailbox as u64;
        s.event_id = 0x0123_4567;
        // SAFETY: `s` and `mailbox` live through the test.
        let sig = Signal::new(unsafe { View::from_ptr(core::ptr::NonNull::from(&mut s)) });
        assert_eq!(sig.add(5, AcqRel, System), 10);
        assert_eq!(mailbox, 0x0123_4567);
        mailbox = 0;
        assert_eq!(sig.sub(3, Release, Agent), 15);
        assert_eq!(sig.and(0xff, Relaxed, Agent), 12);
        assert_eq!(sig.or(0x100, Relaxed, Agent), 12);
        assert_eq!(sig.xor(0x3, Relaxed, Agent), 0x10c);
        assert_eq!(sig.exchange(42, AcqRel, System), 0x10f);
        assert_eq!(mailbox, 0x0123_4567);
        mailbox = 0;
        // A failed compare-and-swap changes nothing and posts nothing.
        assert_eq!(sig.cas(0, 9, AcqRel, System), 42);
        assert_eq!(mailbox, 0);
        assert_eq!(sig.cas(42, 7, AcqRel, System), 42);
        assert_eq!(mailbox, 0x0123_4567);
        sig.store(-1, Release, System);
        assert_eq!(sig.load(Acquire, System), -1);
    }

    #[test]
    fn a_store_to_a_doorbell_goes_to_the_register() {
        let mut register = 0u64;
        let mut mailbox = 0u64;
        let mut s = AmdSignal::user(0);
        s.kind = AmdSignalKind::DOORBELL;
        s.value = &raw mut register as i64;
        s.event_mailbox_ptr = &raw mut mailbox as u64;
        s.event_id = 5;
        // SAFETY: as above.
        let sig = Signal::new(unsafe { View::from_ptr(core::ptr::NonNull::from(&mut s)) });
        sig.store(77, Relaxed, Agent);
        assert_eq!(register, 77);
        assert_eq!(mailbox, 0, "doorbell stores raise no event");
    }
}
