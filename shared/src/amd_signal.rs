//! `amd_signal_t` (`amd_hsa_signal.h`): the 64-byte memory behind an HSA
//! signal handle, which host, packet processor and device code all operate on
//! with atomics.
//!
//! # Versions
//!
//! The 64-byte layout is frozen in ROCr. Differences across versions are
//! names only: ROCm 5.x also spells the value union's members
//! `legacy_hardware_doorbell_ptr`; the newest ROCr calls `reserved1` the "v2
//! properties" word and adds `amd_signal_v2_t`, a 1024-byte signal whose first
//! 64 bytes are this layout (not mirrored: ROCr creates v1 signals unless
//! asked otherwise, and aqueduct only reads the first line), plus hint bits in
//! the low bits of a signal handle ([`hint`]).

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::view::{Atomic, Link, Plain};

/// `AMD_SIGNAL_ALIGN_BYTES`.
pub const AMD_SIGNAL_ALIGN_BYTES: usize = 64;

open_enum! {
    /// `amd_signal_kind64_t` (`amd_signal_kind_t`).
    pub struct AmdSignalKind(i64) {
        /// `AMD_SIGNAL_KIND_INVALID`.
        INVALID = 0,
        /// `AMD_SIGNAL_KIND_USER`: `value` holds the signal value.
        USER = 1,
        /// `AMD_SIGNAL_KIND_DOORBELL`: a queue's doorbell; the union holds the
        /// hardware doorbell address.
        DOORBELL = -1,
        /// `AMD_SIGNAL_KIND_LEGACY_DOORBELL`: pre-GFX9 32-bit doorbell.
        LEGACY_DOORBELL = -2,
    }
}

layout! {
    /// The word an [`AmdSignal`]'s `event_mailbox_ptr` names (a slot of
    /// ROCr's event page): a device that changed the signal stores the
    /// signal's `event_id` here before it raises the interrupt that wakes
    /// the host's waiters.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct EventMailbox {
        /// The event id, stored with release at system scope.
        pub event: u64 = 0 => Atomic,
    }
    size = 8,
    align = 8,
    why = "a u64 of ROCr's event page (amd_hsa_signal.h: event_mailbox_ptr is a uint64_t*)";
}

layout! {
    /// `amd_signal_t`.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct AmdSignal {
        /// `kind`.
        pub kind: AmdSignalKind = 0 => Plain,
        /// The union of `value` (user signals: the signal value) and
        /// `hardware_doorbell_ptr` (doorbell signals: the doorbell's address).
        pub value: i64 = 8 => Atomic,
        /// `event_mailbox_ptr`: if non-zero, the address a device writes
        /// `event_id` to before raising an interrupt, to wake host waiters.
        pub event_mailbox_ptr: u64 = 16 => Link<EventMailbox>,
        /// `event_id`.
        pub event_id: u32 = 24 => Plain,
        /// `reserved1` (zero; the properties word in v2 signals).
        pub reserved1: u32 = 28,
        /// `start_ts`: dispatch start, written by the packet processor when
        /// profiling is on.
        pub start_ts: u64 = 32 => Plain,
        /// `end_ts`: dispatch end.
        pub end_ts: u64 = 40 => Plain,
        /// The union of `queue_ptr` (doorbell signals: the `amd_queue_t`) and
        /// `reserved2`.
        pub queue_ptr: u64 = 48 => Plain,
        /// `reserved3[2]`.
        pub reserved3: [u32; 2] = 56,
    }
    size = 64,
    align = 64,
    why = "amd_hsa_signal.h amd_signal_t, frozen in ROCr at one 64-byte line \
           (AMD_SIGNAL_ALIGN_BYTES): host, packet processor and device code reach kind and value \
           (byte 8) with atomics";
}

impl AmdSignal {
    /// A user signal holding `value`, with no event mailbox.
    pub fn user(value: i64) -> Self {
        let mut s = Self::new_zeroed();
        s.kind = AmdSignalKind::USER;
        s.value = value;
        s
    }

    /// The doorbell address of a doorbell signal (the union read as a
    /// pointer).
    pub fn hardware_doorbell_ptr(&self) -> u64 {
        self.value as u64
    }
}

/// Signal handle hints of the newest ROCr (`amd_signal_hint_t`): a producer
/// may set bits below the signal's alignment in the handle it puts in a
/// packet. A v1 handle (bit 0 clear) may use bits 0..6, a v2 handle (bit 0
/// set, 1024-byte-aligned signal) bits 0..10. Consumers that ignore hints
/// still must strip them to find the signal.
pub mod hint {
    /// `AMD_SIGNAL_HINT_FORMAT_MASK`: set on a v2 handle.
    pub const FORMAT_V2: u64 = 1;
    /// `AMD_SIGNAL_HINT_MASK_V1`.
    pub const MASK_V1: u64 = 0x3f;
    /// `AMD_SIGNAL_HINT_MASK_V2`.
    pub const MASK_V2: u64 = 0x3ff;

    /// The hint bits of `handle` (`amd_signal_hint_mask`).
    pub const fn mask_of(handle: u64) -> u64 {
        if handle & FORMAT_V2 != 0 {
            MASK_V2
        } else {
            MASK_V1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hsa::SignalHandle;

    #[test]
    fn user_signal_bytes() {
        let s = AmdSignal::user(-5);
        let b = s.as_bytes();
        assert_eq!(&b[0..8], &1i64.to_le_bytes());
        assert_eq!(&b[8..16], &(-5i64).to_le_bytes());
        assert_eq!(AmdSignal::read_from_bytes(b).unwrap(), s);
        assert_eq!(
            format!("{:?}", AmdSignalKind(-1)),
            "AmdSignalKind::DOORBELL"
        );
        assert_eq!(AmdSignalKind(42).name(), None);
    }

    #[test]
    fn handles_lose_their_hints() {
        assert_eq!(SignalHandle(0x7f00_1040).address(), 0x7f00_1040);
        assert_eq!(SignalHandle(0x7f00_1040 | 0b10_0110).address(), 0x7f00_1040);
        // A v2 handle (bit 0) may carry hints up to bit 9.
        assert_eq!(SignalHandle(0x7f00_1400 | 0x3c1).address(), 0x7f00_1400);
        assert!(SignalHandle::NULL.is_null());
    }
}
