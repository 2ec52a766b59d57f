//! `amd_queue_t` (`amd_hsa_queue.h`): ROCr's queue descriptor, which embeds
//! the [`HsaQueue`] and carries the dispatch ids and scratch state the
//! command processor and device code read.
//!
//! # Versions
//!
//! [`AmdQueue`] follows the first 256 bytes of the newest ROCr layout,
//! `amd_queue_v2_t` (rocm-systems, 2025 on), which is what ROCr allocates for
//! every queue; [`AmdQueueV2`] adds its tail. Older headers differ only in names of
//! bytes they reserve:
//!
//! | bytes   | newest (`amd_queue_v2_t`)          | ROCm 5.2 `amd_queue_t` (Debian) |
//! |---------|------------------------------------|------------------------|
//! | 40..44  | `caps`                             | `reserved1[0]`         |
//! | 184..192| `scratch_max_use_index`            | `reserved3[2]`         |
//! | 200..256| `alt_scratch_*`, `reserved5`       | `reserved4[14]`        |
//! | 256..   | per-XCC scratch indices, AQL IB state | (absent)            |
//!
//! The newest header's legacy `amd_queue_t`, kept "for reference only",
//! also renames `scratch_backing_memory_byte_size` to `reserved3`; v2 keeps
//! the field, and so does this mirror.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::view::{Atomic, Nested, Plain};

use crate::hsa::{HsaQueue, SignalHandle};

/// `AMD_QUEUE_ALIGN_BYTES`.
pub const AMD_QUEUE_ALIGN_BYTES: usize = 64;

/// `MAX_NUM_XCC`: per-XCC entries in [`AmdQueueV2`].
pub const MAX_NUM_XCC: usize = 128;

flags_type! {
    /// `amd_queue_properties32_t` (`amd_queue_properties_t`).
    pub struct AmdQueueProperties: u32 {
        /// `AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER`.
        const ENABLE_TRAP_HANDLER = 1 << 0;
        /// `AMD_QUEUE_PROPERTIES_IS_PTR64`: 64-bit addresses (always set on
        /// 64-bit hosts).
        const IS_PTR64 = 1 << 1;
        /// `AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS`.
        const ENABLE_TRAP_HANDLER_DEBUG_SGPRS = 1 << 2;
        /// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`: the packet processor
        /// records start/end timestamps in completion signals.
        const ENABLE_PROFILING = 1 << 3;
        /// `AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE`.
        const USE_SCRATCH_ONCE = 1 << 4;
    }
}

flags_type! {
    /// `amd_queue_capabilities32_t` (`amd_queue_capabilities_t`), in
    /// [`AmdQueue::caps`].
    pub struct AmdQueueCaps: u32 {
        /// `AMD_QUEUE_CAPS_CP_ASYNC_RECLAIM`: the CP firmware supports dual
        /// scratch and asynchronous reclaim.
        const CP_ASYNC_RECLAIM = 1 << 0;
        /// `AMD_QUEUE_CAPS_SW_ASYNC_RECLAIM`: ROCr supports it too; only then
        /// does the CP read the fields past the v1 layout.
        const SW_ASYNC_RECLAIM = 1 << 1;
    }
}

layout! {
    /// The first 256 bytes of `amd_queue_v2_t` (see the module docs).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct AmdQueue {
        /// `hsa_queue`: the architected queue; an `hsa_queue_t*` handed to the
        /// application is the address of this field, hence of the whole struct.
        pub hsa_queue: HsaQueue = 0 => Nested,
        /// `caps`: [`AmdQueueCaps`] (`reserved1[0]` in older headers).
        pub caps: AmdQueueCaps = 40 => Plain,
        /// `reserved1[3]`.
        pub reserved1: [u32; 3] = 44,
        /// `write_dispatch_id`: next packet id a producer will reserve;
        /// producers advance it atomically.
        pub write_dispatch_id: u64 = 56 => Atomic,
        /// `group_segment_aperture_base_hi`: high half of the LDS aperture.
        pub group_segment_aperture_base_hi: u32 = 64 => Plain,
        /// `private_segment_aperture_base_hi`: high half of the scratch aperture.
        pub private_segment_aperture_base_hi: u32 = 68 => Plain,
        /// `max_cu_id`.
        pub max_cu_id: u32 = 72 => Plain,
        /// `max_wave_id`.
        pub max_wave_id: u32 = 76 => Plain,
        /// `max_legacy_doorbell_dispatch_id_plus_1`.
        pub max_legacy_doorbell_dispatch_id_plus_1: u64 = 80 => Plain,
        /// `legacy_doorbell_lock`.
        pub legacy_doorbell_lock: u32 = 88 => Plain,
        /// `reserved2[9]`.
        pub reserved2: [u32; 9] = 92,
        /// `read_dispatch_id`: id of the next packet the processor consumes;
        /// slots below it may be reused.
        pub read_dispatch_id: u64 = 128 => Atomic,
        /// `read_dispatch_id_field_base_byte_offset`: offset of
        /// `read_dispatch_id` from `hsa_queue` (so the CP can find it).
        pub read_dispatch_id_field_base_byte_offset: u32 = 136 => Plain,
        /// `compute_tmpring_size`: COMPUTE_TMPRING_SIZE register value.
        pub compute_tmpring_size: u32 = 140 => Plain,
        /// `scratch_resource_descriptor[4]`: V# of the scratch backing memory.
        pub scratch_resource_descriptor: [u32; 4] = 144 => Plain,
        /// `scratch_backing_memory_location`.
        pub scratch_backing_memory_location: u64 = 160 => Plain,
        /// `scratch_backing_memory_byte_size`.
        pub scratch_backing_memory_byte_size: u64 = 168 => Plain,
        /// `scratch_wave64_lane_byte_size`.
        pub scratch_wave64_lane_byte_size: u32 = 176 => Plain,
        /// `queue_properties`: [`AmdQueueProperties`].
        pub queue_properties: AmdQueueProperties = 180 => Plain,
        /// `scratch_max_use_index` (v2; `reserved3[2]` before).
        pub scratch_max_use_index: u64 = 184 => Plain,
        /// `queue_inactive_signal`: signalled by ROCr when the queue faults or
        /// is deactivated.
        pub queue_inactive_signal: SignalHandle = 192 => Plain,
        /// `alt_scratch_max_use_index` (v2).
        pub alt_scratch_max_use_index: u64 = 200 => Plain,
        /// `alt_scratch_resource_descriptor[4]` (v2).
        pub alt_scratch_resource_descriptor: [u32; 4] = 208 => Plain,
        /// `alt_scratch_backing_memory_location` (v2).
        pub alt_scratch_backing_memory_location: u64 = 224 => Plain,
        /// `alt_scratch_dispatch_limit_x` (v2).
        pub alt_scratch_dispatch_limit_x: u32 = 232 => Plain,
        /// `alt_scratch_dispatch_limit_y` (v2).
        pub alt_scratch_dispatch_limit_y: u32 = 236 => Plain,
        /// `alt_scratch_dispatch_limit_z` (v2).
        pub alt_scratch_dispatch_limit_z: u32 = 240 => Plain,
        /// `alt_scratch_wave64_lane_byte_size` (v2).
        pub alt_scratch_wave64_lane_byte_size: u32 = 244 => Plain,
        /// `alt_compute_tmpring_size` (v2).
        pub alt_compute_tmpring_size: u32 = 248 => Plain,
        /// `reserved5`.
        pub reserved5: u32 = 252,
    }
    size = 256,
    align = 64,
    why = "ROCr's amd_queue_t (amd_hsa_queue.h; the first 256 bytes of amd_queue_v2_t, aligned to \
           AMD_QUEUE_ALIGN_BYTES): the command processor, ROCr and device code (write_dispatch_id, \
           read_dispatch_id) use these offsets";
}

/// `scratch_last_used_index_xcc_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct ScratchLastUsedIndexXcc {
    /// `main`.
    pub main: u64,
    /// `alt`.
    pub alt: u64,
}

assert_layout!(
    ScratchLastUsedIndexXcc,
    size = 16,
    align = 8,
    why = "amd_hsa_queue.h scratch_last_used_index_xcc_t, one element of the per-XCC array of \
           amd_queue_v2_t that the command processor reads",
    main = 0,
    alt = 8,
);

/// The whole `amd_queue_v2_t`: [`AmdQueue`] followed by the per-XCC scratch
/// indices and the AQL indirect-buffer state of the newest ROCr. The CP reads
/// past the first 256 bytes only when `caps` has `SW_ASYNC_RECLAIM`;
/// aqueduct's device code never does.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct AmdQueueV2 {
    /// Fields up to `reserved5`.
    pub queue: AmdQueue,
    /// `scratch_last_used_index[MAX_NUM_XCC]`.
    pub scratch_last_used_index: [ScratchLastUsedIndexXcc; MAX_NUM_XCC],
    /// `aql_ib_active_packet`.
    pub aql_ib_active_packet: u64,
    /// `aql_ib_root_packet`.
    pub aql_ib_root_packet: u64,
    /// Padding to the 64-byte alignment (the C struct's implicit tail).
    pub tail_padding: [u64; 6],
}

assert_layout!(
    AmdQueueV2,
    size = 2368,
    align = 64,
    why = "amd_hsa_queue.h amd_queue_v2_t, what ROCr allocates for every queue: the command \
           processor reads past byte 256 when caps has SW_ASYNC_RECLAIM",
    queue = 0,
    scratch_last_used_index = 256,
    aql_ib_active_packet = 2304,
    aql_ib_root_packet = 2312,
    tail_padding = 2320,
);

impl AmdQueue {
    /// A zeroed descriptor with the invariant fields set: ring, doorbell,
    /// `IS_PTR64`, and `read_dispatch_id_field_base_byte_offset`.
    pub fn new(hsa_queue: HsaQueue) -> Self {
        let mut q = Self::new_zeroed();
        q.hsa_queue = hsa_queue;
        q.queue_properties = AmdQueueProperties::IS_PTR64;
        q.read_dispatch_id_field_base_byte_offset =
            core::mem::offset_of!(AmdQueue, read_dispatch_id) as u32;
        q
    }

    /// Packets reserved but not yet consumed.
    pub fn pending(&self) -> u64 {
        self.write_dispatch_id.wrapping_sub(self.read_dispatch_id)
    }

    /// Slot index of packet id `id` in the ring (size is a power of two).
    pub fn slot_of(&self, id: u64) -> u64 {
        id & u64::from(self.hsa_queue.size.wrapping_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hsa::{QueueFeatures, QueueType};

    #[test]
    fn new_queue_points_the_cp_at_read_dispatch_id() {
        let q = AmdQueue::new(HsaQueue {
            queue_type: QueueType::MULTI,
            features: QueueFeatures::KERNEL_DISPATCH,
            base_address: 0x1000,
            doorbell_signal: SignalHandle(0x2000),
            size: 256,
            reserved1: 0,
            id: 1,
        });
        assert_eq!(q.read_dispatch_id_field_base_byte_offset, 128);
        assert!(q.queue_properties.contains(AmdQueueProperties::IS_PTR64));
        assert_eq!(q.slot_of(257), 1);
        let bytes = q.as_bytes();
        assert_eq!(AmdQueue::read_from_bytes(bytes).unwrap(), q);
        assert_eq!(&bytes[136..140], &128u32.to_le_bytes());
    }
}
