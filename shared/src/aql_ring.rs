//! The AQL ring protocol's arithmetic, written once for every party: the
//! host shim and device code (producers) and the simulator's packet
//! processor (the consumer). HSA Platform System Architecture Specification
//! 1.2, §2.8 (queues) and §2.9 (AQL):
//!
//! ```text
//!   write_dispatch_id ─ ids handed out ─►  [ ring of `size` 64-byte slots ]
//!   read_dispatch_id  ─ ids consumed  ─►   slot of id = id mod size
//!
//!   producer: reserve n ids (fetch_add, or CAS while there is room)
//!             wait until has_room(first, read, n, size)
//!             write bytes 4..64 of each slot, then its first word with
//!             release ordering: the header is published last
//!             store the last id in the doorbell signal
//!   consumer: a slot is a packet once its header type is not INVALID;
//!             after it, the header goes back to INVALID (release), then
//!             read_dispatch_id = id + 1 (release)
//! ```
//!
//! Packet ids are 64-bit and only grow; every comparison here wraps, so the
//! answers stay right across the (theoretical) overflow of the ids. Only the
//! arithmetic lives here; how each party reaches the indices (HSA calls,
//! scoped device atomics, host atomics on simulator memory) is its own.

use crate::aql::{PACKET_SIZE, PacketHeader, PacketType};

/// Whether `n` more packets fit in a ring of `size` slots when the write
/// index is `write` and the read index `read`: every slot from `write` to
/// `write + n - 1` has been consumed.
pub const fn has_room(write: u64, read: u64, n: u64, size: u64) -> bool {
    write.wrapping_add(n).wrapping_sub(read) <= size
}

/// The slot of packet `id` in a ring of `size` slots (a power of two).
pub const fn slot_of(id: u64, size: u64) -> u64 {
    id & (size - 1)
}

/// The byte offset of packet `id`'s slot from the ring's base.
pub const fn slot_offset(id: u64, size: u64) -> u64 {
    slot_of(id, size) * PACKET_SIZE as u64
}

/// Most packets of a queue aqueduct's device library takes: slot offsets
/// in the ring (64 bytes each: 4 GiB) fit 32 bits, so the issue addresses a
/// slot with one, from the ring's wave-uniform address. ROCr's queues hold
/// far fewer on the agents we know of (a `queue_max_size` of 2^17 packets;
/// not checked here).
pub const MAX_QUEUE_PACKETS: u32 = 1 << 26;

/// Whether `size` can be a ring's size: a non-zero power of two (HSA
/// requires it, so `slot_of` is a mask).
pub const fn is_ring_size(size: u32) -> bool {
    size.is_power_of_two()
}

/// The value a producer stores to the doorbell signal after publishing
/// packets up to `id`: the id itself (ROCr and the hardware read it as the
/// last valid write index).
pub const fn doorbell_value(id: u64) -> i64 {
    id as i64
}

/// Whether the first 32-bit word of a slot (header and setup) holds a
/// published packet.
pub const fn is_published(first_word: u32) -> bool {
    PacketHeader(first_word as u16).packet_type().0 != PacketType::INVALID.0
}

/// The first word the consumer stores back after consuming a packet: the
/// header reads INVALID, the upper 16 bits are left as they were.
pub const fn consumed(first_word: u32) -> u32 {
    (first_word & 0xffff_0000) | PacketHeader::INVALID.0 as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_counts_only_consumed_slots() {
        assert!(has_room(0, 0, 64, 64), "an empty ring holds `size` packets");
        assert!(!has_room(0, 0, 65, 64));
        assert!(has_room(100, 40, 4, 64));
        assert!(!has_room(100, 40, 5, 64), "a full ring has no room");
        assert!(has_room(104, 104, 1, 64));
    }

    #[test]
    fn room_survives_index_overflow() {
        // The write index has wrapped past u64::MAX, the read index not.
        let read = u64::MAX - 10;
        assert!(has_room(read.wrapping_add(60), read, 4, 64));
        assert!(!has_room(read.wrapping_add(60), read, 5, 64));
        // Both wrapped.
        assert!(has_room(3, 2, 63, 64));
        assert!(!has_room(3, 2, 64, 64));
    }

    #[test]
    fn slots_wrap_around_the_ring() {
        assert_eq!(slot_of(130, 64), 2);
        assert_eq!(slot_of(u64::MAX, 64), 63);
        assert_eq!(slot_of(u64::MAX.wrapping_add(1), 64), 0);
        assert_eq!(slot_offset(65, 64), 64);
        assert_eq!(slot_offset(63, 64), 63 * 64);
        assert!(is_ring_size(64) && is_ring_size(1 << 17));
        assert!(!is_ring_size(0) && !is_ring_size(96));
        assert_eq!(
            doorbell_value(u64::MAX),
            -1,
            "the id's bits, as a signal value"
        );
    }

    #[test]
    fn consuming_a_slot_invalidates_only_the_header() {
        let dispatch = 0x0003_0000 | u32::from(PacketType::KERNEL_DISPATCH.0) | (1 << 8);
        assert!(is_published(dispatch));
        let after = consumed(dispatch);
        assert!(!is_published(after));
        assert_eq!(after >> 16, 3, "setup kept");
        assert!(!is_published(u32::from(PacketHeader::INVALID.0)));
    }
}
