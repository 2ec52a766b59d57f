//! Mirrors of the core HSA types in `hsa.h`: the signal handle, the user-mode
//! queue and the enumerations stored inside them.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::amd_signal::AmdSignal;
use crate::view::{Address, Array, Atomic, Link, ListOf, Plain, Word};

/// `hsa_signal_t`: an opaque 64-bit handle. On ROCr (and in aqueduct's
/// simulator) it is the address of the signal's [`AmdSignal`] in memory both
/// the host and the agents can reach; the null handle (0) means "no signal".
///
/// Newer ROCr may set hint bits in the low bits of a handle (below the
/// signal's alignment); [`SignalHandle::address`] strips them.
///
/// [`AmdSignal`]: crate::amd_signal::AmdSignal
#[repr(transparent)]
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Default, Debug, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SignalHandle(pub u64);

impl SignalHandle {
    /// The null handle: no signal.
    pub const NULL: Self = Self(0);

    /// Whether this is [`SignalHandle::NULL`] (handle 0: no signal).
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// The address of the `amd_signal_t` this handle names, with ROCr's
    /// handle hint bits removed (see [`crate::amd_signal::hint`]).
    pub const fn address(self) -> u64 {
        self.0 & !crate::amd_signal::hint::mask_of(self.0)
    }
}

// A handle is a link to its signal (`Link<AmdSignal>` fields): its
// address is the handle without ROCr's hint bits.
impl Address for SignalHandle {
    #[inline(always)]
    fn address(self) -> u64 {
        SignalHandle::address(self)
    }
    #[inline(always)]
    fn from_address(address: u64) -> Self {
        SignalHandle(address)
    }
}

// A handle is one u64 word for the views' global and scalar loads.
impl Word for SignalHandle {
    #[inline(always)]
    unsafe fn load_invariant(p: *const Self) -> Self {
        // SAFETY: the caller's contract; a handle is a transparent u64.
        SignalHandle(unsafe { u64::load_invariant(p.cast()) })
    }
    #[inline(always)]
    unsafe fn load_global(p: *const Self) -> Self {
        // SAFETY: as above.
        SignalHandle(unsafe { u64::load_global(p.cast()) })
    }
    #[inline(always)]
    unsafe fn store_global(p: *mut Self, value: Self) {
        // SAFETY: as above.
        unsafe { u64::store_global(p.cast(), value.0) }
    }
}

assert_layout!(
    SignalHandle,
    size = 8,
    align = 8,
    why = "hsa.h hsa_signal_t, a 64-bit handle AQL packets, amd_queue_t and ROCr's C API carry by \
           value"
);

open_enum! {
    /// `hsa_queue_type32_t` (`hsa_queue_type_t`): who may submit to a queue.
    pub struct QueueType(u32) {
        /// `HSA_QUEUE_TYPE_MULTI`: any number of producers.
        MULTI = 0,
        /// `HSA_QUEUE_TYPE_SINGLE`: one producer at a time.
        SINGLE = 1,
        /// `HSA_QUEUE_TYPE_COOPERATIVE`: multiple producers, shared among
        /// agents (ROCr's cooperative queue).
        COOPERATIVE = 2,
    }
}

flags_type! {
    /// `hsa_queue_feature_t` bits in `hsa_queue_t::features`.
    pub struct QueueFeatures: u32 {
        /// `HSA_QUEUE_FEATURE_KERNEL_DISPATCH`.
        const KERNEL_DISPATCH = 1;
        /// `HSA_QUEUE_FEATURE_AGENT_DISPATCH`.
        const AGENT_DISPATCH = 2;
    }
}

open_enum! {
    /// `hsa_signal_condition32_t` (`hsa_signal_condition_t`): the comparison
    /// of a signal wait or an AMD barrier-value packet.
    pub struct SignalCondition(u32) {
        /// `HSA_SIGNAL_CONDITION_EQ`.
        EQ = 0,
        /// `HSA_SIGNAL_CONDITION_NE`.
        NE = 1,
        /// `HSA_SIGNAL_CONDITION_LT`.
        LT = 2,
        /// `HSA_SIGNAL_CONDITION_GTE`.
        GTE = 3,
    }
}

impl SignalCondition {
    /// Whether `value` satisfies this condition against `compare`; `None`
    /// for a value that is not one of the four conditions.
    pub const fn holds(self, value: i64, compare: i64) -> Option<bool> {
        match self.0 {
            0 => Some(value == compare),
            1 => Some(value != compare),
            2 => Some(value < compare),
            3 => Some(value >= compare),
            _ => None,
        }
    }
}

layout! {
    /// `hsa_queue_t`: the architected part of a user-mode queue. ROCr embeds it
    /// at offset 0 of [`AmdQueue`](crate::amd_queue::AmdQueue).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct HsaQueue {
        /// `type`: [`QueueType`].
        pub queue_type: QueueType = 0 => Plain,
        /// `features`: [`QueueFeatures`].
        pub features: QueueFeatures = 4 => Plain,
        /// `base_address` (`void*`): the ring of `size` 64-byte packets, aligned
        /// to the ring's size in bytes.
        pub base_address: u64 = 8 => ListOf<PacketSlot>[size: u32],
        /// `doorbell_signal`: written with the packet id after publishing packets.
        pub doorbell_signal: SignalHandle = 16 => Link<AmdSignal>,
        /// `size`: ring capacity in packets, a power of two.
        pub size: u32 = 24 => Plain,
        /// `reserved1`.
        pub reserved1: u32 = 28,
        /// `id`: queue identifier, unique over the application's lifetime.
        pub id: u64 = 32 => Plain,
    }
    size = 40,
    align = 8,
    why = "hsa.h hsa_queue_t (ROCr's ABI), embedded at byte 0 of amd_queue_t: applications and \
           device code find the ring, doorbell and size through an hsa_queue_t pointer";
}

layout! {
    /// A ring slot as its producer writes it: the body as dwords, then the
    /// first dword — the 16-bit header and the 16 bits after it — stored
    /// last, with release, to publish the packet (HSA PSA 1.2 section
    /// 2.8.3: the packet processor reads a slot once its header says so).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct PacketSlot {
        /// Header and setup (or the body's first 16 bits): INVALID until
        /// published; the packet processor reads it atomically.
        pub first_word: u32 = 0 => Atomic,
        /// Bytes 4..64: dword `k` is bytes `4 + 4k ..`.
        pub body: [u32; 15] = 4 => Array<Plain>,
    }
    size = 64,
    align = 64,
    why = "one AQL ring slot: packets are 64 bytes, rings 64-byte aligned (HSA PSA 1.2 section \
           2.9), and the first dword is what publishes one";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_compare_like_hsa() {
        assert_eq!(SignalCondition::EQ.holds(3, 3), Some(true));
        assert_eq!(SignalCondition::NE.holds(3, 3), Some(false));
        assert_eq!(SignalCondition::LT.holds(-1, 0), Some(true));
        assert_eq!(SignalCondition::GTE.holds(0, 0), Some(true));
        assert_eq!(SignalCondition(9).holds(0, 0), None);
    }

    #[test]
    fn unknown_values_are_representable() {
        let q = QueueType(77);
        assert_eq!(q.name(), None);
        assert_eq!(format!("{q:?}"), "QueueType(77)");
        assert_eq!(format!("{:?}", QueueType::SINGLE), "QueueType::SINGLE");
        let f = QueueFeatures::from_bits_retain(0x8000_0001);
        assert!(f.contains(QueueFeatures::KERNEL_DISPATCH));
        assert_eq!(f.bits(), 0x8000_0001);
    }

    #[test]
    fn queue_round_trips_through_bytes() {
        let q = HsaQueue {
            queue_type: QueueType::MULTI,
            features: QueueFeatures::KERNEL_DISPATCH | QueueFeatures::AGENT_DISPATCH,
            base_address: 0x7f00_0000_1000,
            doorbell_signal: SignalHandle(0x7f00_0000_2040),
            size: 4096,
            reserved1: 0,
            id: 7,
        };
        let bytes = q.as_bytes();
        assert_eq!(&bytes[24..28], &4096u32.to_le_bytes());
        assert_eq!(HsaQueue::read_from_bytes(bytes).unwrap(), q);
    }
}
