//! AQL packets: the 64-byte packets of an HSA queue's ring (`hsa.h`, and the
//! AMD vendor-specific packets of `hsa_ext_amd.h`).
//!
//! Every packet starts with a 16-bit [`PacketHeader`]. A packet is handed to
//! the packet processor by storing its header last, with release semantics,
//! after the rest of the packet is in place: until then the slot's type is
//! `INVALID` and the processor waits. [`crate::packet`] builds packets that
//! way.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::hsa::{SignalCondition, SignalHandle};

/// Size of every AQL packet.
pub const PACKET_SIZE: usize = 64;

open_enum! {
    /// `hsa_packet_type_t`: bits 0..8 of the header.
    pub struct PacketType(u8) {
        /// `HSA_PACKET_TYPE_VENDOR_SPECIFIC`: format given by the vendor
        /// header ([`AmdVendorPacketHeader`]).
        VENDOR_SPECIFIC = 0,
        /// `HSA_PACKET_TYPE_INVALID`: the slot holds no packet yet (or any
        /// more: the processor writes it back after consuming a packet).
        INVALID = 1,
        /// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
        KERNEL_DISPATCH = 2,
        /// `HSA_PACKET_TYPE_BARRIER_AND`.
        BARRIER_AND = 3,
        /// `HSA_PACKET_TYPE_AGENT_DISPATCH`.
        AGENT_DISPATCH = 4,
        /// `HSA_PACKET_TYPE_BARRIER_OR`.
        BARRIER_OR = 5,
    }
}

open_enum! {
    /// `hsa_fence_scope_t`: scope of a packet's acquire or release fence.
    pub struct FenceScope(u8) {
        /// `HSA_FENCE_SCOPE_NONE`.
        NONE = 0,
        /// `HSA_FENCE_SCOPE_AGENT`.
        AGENT = 1,
        /// `HSA_FENCE_SCOPE_SYSTEM`.
        SYSTEM = 2,
    }
}

/// `hsa_packet_header_t` / `hsa_packet_header_width_t`: bit positions and
/// widths of the header fields.
pub mod header_bits {
    /// `HSA_PACKET_HEADER_TYPE`.
    pub const TYPE_SHIFT: u32 = 0;
    /// `HSA_PACKET_HEADER_WIDTH_TYPE`.
    pub const TYPE_WIDTH: u32 = 8;
    /// `HSA_PACKET_HEADER_BARRIER`.
    pub const BARRIER_SHIFT: u32 = 8;
    /// `HSA_PACKET_HEADER_WIDTH_BARRIER`.
    pub const BARRIER_WIDTH: u32 = 1;
    /// `HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE` (older spelling
    /// `HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE`).
    pub const ACQUIRE_FENCE_SCOPE_SHIFT: u32 = 9;
    /// `HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE`.
    pub const ACQUIRE_FENCE_SCOPE_WIDTH: u32 = 2;
    /// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE` (older spelling
    /// `HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE`).
    pub const RELEASE_FENCE_SCOPE_SHIFT: u32 = 11;
    /// `HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE`.
    pub const RELEASE_FENCE_SCOPE_WIDTH: u32 = 2;

    /// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`: bits of the dispatch
    /// packet's `setup` word holding the number of grid dimensions.
    pub const SETUP_DIMENSIONS_SHIFT: u32 = 0;
    /// `HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS`.
    pub const SETUP_DIMENSIONS_WIDTH: u32 = 2;
}

/// The 16-bit AQL packet header: type (bits 0..8), barrier bit (8), acquire
/// fence scope (9..11), release fence scope (11..13); bits 13..16 reserved.
#[repr(transparent)]
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Default, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PacketHeader(pub u16);

impl PacketHeader {
    /// The header of a slot with no packet.
    pub const INVALID: Self = Self::new(
        PacketType::INVALID,
        false,
        FenceScope::NONE,
        FenceScope::NONE,
    );

    /// Packs the fields. Fence scopes are truncated to their two bits;
    /// builders in [`crate::packet`] refuse out-of-range scopes first.
    pub const fn new(
        packet_type: PacketType,
        barrier: bool,
        acquire: FenceScope,
        release: FenceScope,
    ) -> Self {
        use header_bits::*;
        Self(
            ((packet_type.0 as u16) << TYPE_SHIFT)
                | ((barrier as u16) << BARRIER_SHIFT)
                | (((acquire.0 & 0b11) as u16) << ACQUIRE_FENCE_SCOPE_SHIFT)
                | (((release.0 & 0b11) as u16) << RELEASE_FENCE_SCOPE_SHIFT),
        )
    }

    /// Bits 0..8: the packet's type.
    pub const fn packet_type(self) -> PacketType {
        PacketType((self.0 >> header_bits::TYPE_SHIFT) as u8)
    }

    /// Bit 8: the packet starts only after every earlier packet of the
    /// queue has completed.
    pub const fn barrier(self) -> bool {
        (self.0 >> header_bits::BARRIER_SHIFT) & 1 != 0
    }

    /// Bits 9..11: the scope of the acquire fence applied before the packet
    /// runs.
    pub const fn acquire_fence_scope(self) -> FenceScope {
        FenceScope(((self.0 >> header_bits::ACQUIRE_FENCE_SCOPE_SHIFT) & 0b11) as u8)
    }

    /// Bits 11..13: the scope of the release fence applied when the packet
    /// completes.
    pub const fn release_fence_scope(self) -> FenceScope {
        FenceScope(((self.0 >> header_bits::RELEASE_FENCE_SCOPE_SHIFT) & 0b11) as u8)
    }

    /// Bits 13..16, which the HSA spec reserves (must be zero).
    pub const fn reserved_bits(self) -> u16 {
        self.0 >> 13
    }
}

impl core::fmt::Debug for PacketHeader {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PacketHeader")
            .field("type", &self.packet_type())
            .field("barrier", &self.barrier())
            .field("acquire", &self.acquire_fence_scope())
            .field("release", &self.release_fence_scope())
            .finish()
    }
}

/// Any packet slot of a queue's ring, before its type is known.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct AqlPacket {
    /// The 16-bit header every packet starts with (`header` in C); its type
    /// field says how to read the rest.
    pub header: PacketHeader,
    /// Bytes 2..64, whose meaning the header's type gives.
    pub body: [u8; 62],
}

assert_layout!(
    AqlPacket,
    size = 64,
    align = 64,
    why = "one AQL ring slot: packets are 64 bytes, rings 64-byte aligned, and every packet opens \
           with its 16-bit header (HSA PSA 1.2 section 2.9)",
    header = 0,
    body = 2,
);

/// `hsa_kernel_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct KernelDispatchPacket {
    /// `header`.
    pub header: PacketHeader,
    /// `setup`: number of dimensions in bits 0..2, the rest reserved.
    pub setup: u16,
    /// `workgroup_size_x`, in work-items.
    pub workgroup_size_x: u16,
    /// `workgroup_size_y`.
    pub workgroup_size_y: u16,
    /// `workgroup_size_z`.
    pub workgroup_size_z: u16,
    /// `reserved0`.
    pub reserved0: u16,
    /// `grid_size_x`, in work-items (not workgroups).
    pub grid_size_x: u32,
    /// `grid_size_y`.
    pub grid_size_y: u32,
    /// `grid_size_z`.
    pub grid_size_z: u32,
    /// `private_segment_size`: scratch bytes per work-item.
    pub private_segment_size: u32,
    /// `group_segment_size`: LDS bytes per workgroup (static plus dynamic).
    pub group_segment_size: u32,
    /// `kernel_object`: address of the kernel descriptor.
    pub kernel_object: u64,
    /// `kernarg_address` (`void*`): the kernarg segment, 16-byte aligned.
    pub kernarg_address: u64,
    /// `reserved2`.
    pub reserved2: u64,
    /// `completion_signal`: decremented when the dispatch completes.
    pub completion_signal: SignalHandle,
}

assert_layout!(
    KernelDispatchPacket,
    size = 64,
    align = 8,
    why = "hsa.h hsa_kernel_dispatch_packet_t: one 64-byte AQL slot whose fields the packet \
           processor reads at these bytes (HSA PSA 1.2 section 2.9); the C struct is 8-byte \
           aligned, the ring supplies 64",
    header = 0,
    setup = 2,
    workgroup_size_x = 4,
    workgroup_size_y = 6,
    workgroup_size_z = 8,
    reserved0 = 10,
    grid_size_x = 12,
    grid_size_y = 16,
    grid_size_z = 20,
    private_segment_size = 24,
    group_segment_size = 28,
    kernel_object = 32,
    kernarg_address = 40,
    reserved2 = 48,
    completion_signal = 56,
);

impl KernelDispatchPacket {
    /// Grid dimensions from `setup` (1..=3 in a valid packet).
    pub const fn dimensions(&self) -> u16 {
        (self.setup >> header_bits::SETUP_DIMENSIONS_SHIFT)
            & ((1 << header_bits::SETUP_DIMENSIONS_WIDTH) - 1)
    }
}

/// `hsa_agent_dispatch_packet_t`: a call into an agent-defined function
/// (aqueduct's host-service worker serves these).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct AgentDispatchPacket {
    /// `header`.
    pub header: PacketHeader,
    /// `type`: the function the agent runs (application-defined).
    pub function: u16,
    /// `reserved0`.
    pub reserved0: u32,
    /// `return_address` (`void*`): where the agent writes its result.
    pub return_address: u64,
    /// `arg[4]`.
    pub arg: [u64; 4],
    /// `reserved2`.
    pub reserved2: u64,
    /// `completion_signal`.
    pub completion_signal: SignalHandle,
}

assert_layout!(
    AgentDispatchPacket,
    size = 64,
    align = 8,
    why = "hsa.h hsa_agent_dispatch_packet_t: one 64-byte AQL slot whose fields the packet \
           processor and the agent's service read at these bytes; the C struct is 8-byte aligned, \
           the ring supplies 64",
    header = 0,
    function = 2,
    reserved0 = 4,
    return_address = 8,
    arg = 16,
    reserved2 = 48,
    completion_signal = 56,
);

/// Number of dependency signals in a barrier packet.
pub const BARRIER_DEPENDENCIES: usize = 5;

/// Declares a barrier packet type: AND and OR share one layout
/// (`hsa_barrier_and_packet_t`, `hsa_barrier_or_packet_t`).
macro_rules! barrier_packet {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct $name {
            /// `header`.
            pub header: PacketHeader,
            /// `reserved0`.
            pub reserved0: u16,
            /// `reserved1`.
            pub reserved1: u32,
            /// `dep_signal[5]`: null handles are ignored.
            pub dep_signal: [SignalHandle; BARRIER_DEPENDENCIES],
            /// `reserved2`.
            pub reserved2: u64,
            /// `completion_signal`.
            pub completion_signal: SignalHandle,
        }

        assert_layout!(
            $name,
            size = 64,
            align = 8,
            why = "hsa.h hsa_barrier_and_packet_t and hsa_barrier_or_packet_t: one 64-byte AQL \
                   slot whose fields the packet processor reads at these bytes; the C structs are \
                   8-byte aligned, the ring supplies 64",
            header = 0,
            reserved0 = 2,
            reserved1 = 4,
            dep_signal = 8,
            reserved2 = 48,
            completion_signal = 56,
        );
    };
}

barrier_packet! {
    /// `hsa_barrier_and_packet_t`: completes once every non-null dependency
    /// signal reads zero.
    BarrierAndPacket
}

barrier_packet! {
    /// `hsa_barrier_or_packet_t`: completes once any non-null dependency
    /// signal reads zero.
    BarrierOrPacket
}

open_enum! {
    /// `hsa_amd_packet_type8_t` (`hsa_amd_packet_type_t`): the format of a
    /// vendor-specific packet. (Newer ROCr also defines 3, AIE_ERT, for NPU
    /// queues; it never appears on a GPU queue and is not mirrored.)
    pub struct AmdPacketType(u8) {
        /// `HSA_AMD_PACKET_TYPE_BARRIER_VALUE`.
        BARRIER_VALUE = 2,
    }
}

/// `hsa_amd_vendor_packet_header_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct AmdVendorPacketHeader {
    /// `header`: an AQL header whose type is `VENDOR_SPECIFIC`.
    pub header: PacketHeader,
    /// `AmdFormat`.
    pub amd_format: AmdPacketType,
    /// `reserved`.
    pub reserved: u8,
}

assert_layout!(
    AmdVendorPacketHeader,
    size = 4,
    align = 2,
    why = "hsa_ext_amd.h hsa_amd_vendor_packet_header_t, the first 4 bytes of every AMD \
           vendor-specific packet: ROCr's packet processor reads AmdFormat at byte 2 to pick the \
           layout",
    header = 0,
    amd_format = 2,
    reserved = 3,
);

/// `hsa_amd_barrier_value_packet_t`: completes once
/// `(signal value & mask) cond value` holds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct AmdBarrierValuePacket {
    /// `header`.
    pub header: AmdVendorPacketHeader,
    /// `reserved0`.
    pub reserved0: u32,
    /// `signal`: the signal compared.
    pub signal: SignalHandle,
    /// `value`: compared against.
    pub value: i64,
    /// `mask`: applied to the signal's value first.
    pub mask: i64,
    /// `cond`.
    pub cond: SignalCondition,
    /// `reserved1`.
    pub reserved1: u32,
    /// `reserved2`.
    pub reserved2: u64,
    /// `reserved3`.
    pub reserved3: u64,
    /// `completion_signal`.
    pub completion_signal: SignalHandle,
}

assert_layout!(
    AmdBarrierValuePacket,
    size = 64,
    align = 8,
    why = "hsa_ext_amd.h hsa_amd_barrier_value_packet_t: one 64-byte AQL slot whose fields the \
           packet processor reads at these bytes; the C struct is 8-byte aligned, the ring \
           supplies 64",
    header = 0,
    reserved0 = 4,
    signal = 8,
    value = 16,
    mask = 24,
    cond = 32,
    reserved1 = 36,
    reserved2 = 40,
    reserved3 = 48,
    completion_signal = 56,
);

/// Implemented by every typed packet: its AQL type and its first 32 bits.
pub trait Packet: IntoBytes + FromBytes + Immutable + Copy {
    /// The header type that selects this layout.
    const TYPE: PacketType;

    /// The header as stored (`INVALID` while the packet is being written).
    fn header(&self) -> PacketHeader;

    /// The 16 bits after the header (setup, function or reserved), which
    /// share the first 32-bit word with it.
    fn second_half_word(&self) -> u16 {
        let bytes = self.as_bytes();
        u16::from_le_bytes([bytes[2], bytes[3]])
    }
}

impl Packet for KernelDispatchPacket {
    const TYPE: PacketType = PacketType::KERNEL_DISPATCH;
    fn header(&self) -> PacketHeader {
        self.header
    }
}

impl Packet for AgentDispatchPacket {
    const TYPE: PacketType = PacketType::AGENT_DISPATCH;
    fn header(&self) -> PacketHeader {
        self.header
    }
}

impl Packet for BarrierAndPacket {
    const TYPE: PacketType = PacketType::BARRIER_AND;
    fn header(&self) -> PacketHeader {
        self.header
    }
}

impl Packet for BarrierOrPacket {
    const TYPE: PacketType = PacketType::BARRIER_OR;
    fn header(&self) -> PacketHeader {
        self.header
    }
}

impl Packet for AmdBarrierValuePacket {
    const TYPE: PacketType = PacketType::VENDOR_SPECIFIC;
    fn header(&self) -> PacketHeader {
        self.header.header
    }
}

impl AqlPacket {
    /// Views this slot as the typed packet `P` if its header says so
    /// (vendor packets also need the matching AMD format).
    pub fn as_typed<P: Packet + KnownLayout>(&self) -> Option<P> {
        if self.header.packet_type() != P::TYPE {
            return None;
        }
        let packet = P::read_from_bytes(self.as_bytes()).ok()?;
        if P::TYPE == PacketType::VENDOR_SPECIFIC && self.body[0] != AmdPacketType::BARRIER_VALUE.0
        {
            return None;
        }
        Some(packet)
    }

    /// The slot holding `packet`, bytes unchanged.
    pub fn from_typed<P: Packet>(packet: &P) -> Self {
        let mut slot = Self::new_zeroed();
        slot.as_mut_bytes().copy_from_slice(packet.as_bytes());
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bits_sit_where_hsa_puts_them() {
        let h = PacketHeader::new(
            PacketType::KERNEL_DISPATCH,
            true,
            FenceScope::SYSTEM,
            FenceScope::AGENT,
        );
        // type 2 | barrier << 8 | system(2) << 9 | agent(1) << 11
        assert_eq!(h.0, 2 | 1 << 8 | 2 << 9 | 1 << 11);
        assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
        assert!(h.barrier());
        assert_eq!(h.acquire_fence_scope(), FenceScope::SYSTEM);
        assert_eq!(h.release_fence_scope(), FenceScope::AGENT);
        assert_eq!(h.reserved_bits(), 0);
        assert_eq!(PacketHeader::INVALID.0, 1);
        let odd = PacketHeader(0xffff);
        assert_eq!(odd.packet_type(), PacketType(0xff));
        assert_eq!(odd.reserved_bits(), 0b111);
    }

    /// A distinct non-zero byte pattern, so a swapped or dropped field shows.
    fn patterned<P: FromBytes + IntoBytes>() -> P {
        let mut p = P::new_zeroed();
        for (i, b) in p.as_mut_bytes().iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        p
    }

    fn round_trip<P: Packet + KnownLayout + PartialEq + core::fmt::Debug>(mut p: P) {
        // Force the header to this packet's type so the slot view accepts it.
        let mut bytes = [0u8; 64];
        bytes.copy_from_slice(p.as_bytes());
        let mut header = PacketHeader(u16::from_le_bytes([bytes[0], bytes[1]]));
        header.0 = (header.0 & !0xff) | u16::from(P::TYPE.0);
        bytes[..2].copy_from_slice(&header.0.to_le_bytes());
        if P::TYPE == PacketType::VENDOR_SPECIFIC {
            bytes[2] = AmdPacketType::BARRIER_VALUE.0;
        }
        p = P::read_from_bytes(&bytes).unwrap();
        let slot = AqlPacket::from_typed(&p);
        assert_eq!(slot.as_bytes(), &bytes);
        assert_eq!(slot.as_typed::<P>().unwrap(), p);
        assert_eq!(
            P::read_from_bytes(slot.as_bytes()).unwrap().as_bytes(),
            &bytes
        );
    }

    #[test]
    fn every_packet_round_trips_through_bytes() {
        round_trip(patterned::<KernelDispatchPacket>());
        round_trip(patterned::<AgentDispatchPacket>());
        round_trip(patterned::<BarrierAndPacket>());
        round_trip(patterned::<BarrierOrPacket>());
        round_trip(patterned::<AmdBarrierValuePacket>());
    }

    #[test]
    fn slot_refuses_the_wrong_type() {
        let mut d = patterned::<KernelDispatchPacket>();
        d.header = PacketHeader::new(
            PacketType::KERNEL_DISPATCH,
            false,
            FenceScope::NONE,
            FenceScope::NONE,
        );
        let slot = AqlPacket::from_typed(&d);
        assert!(slot.as_typed::<BarrierAndPacket>().is_none());
        assert!(slot.as_typed::<KernelDispatchPacket>().is_some());
        let mut v = patterned::<AmdBarrierValuePacket>();
        v.header.header = PacketHeader::new(
            PacketType::VENDOR_SPECIFIC,
            false,
            FenceScope::NONE,
            FenceScope::NONE,
        );
        v.header.amd_format = AmdPacketType(9);
        assert!(
            AqlPacket::from_typed(&v)
                .as_typed::<AmdBarrierValuePacket>()
                .is_none()
        );
    }

    #[test]
    fn dispatch_fields_land_at_their_bytes() {
        let mut d = KernelDispatchPacket::new_zeroed();
        d.setup = 3;
        d.grid_size_x = 0x0102_0304;
        d.kernel_object = 0x1122_3344_5566_7788;
        d.completion_signal = SignalHandle(0xaabb);
        let b = d.as_bytes();
        assert_eq!(&b[2..4], &[3, 0]);
        assert_eq!(&b[12..16], &[4, 3, 2, 1]);
        assert_eq!(&b[32..40], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[56..64], &0xaabbu64.to_le_bytes());
        assert_eq!(d.dimensions(), 3);
    }
}
