//! The AMDHSA kernel descriptor: 64 bytes in the code object's read-only data
//! behind each kernel's `<name>.kd` symbol, read by the command processor at
//! dispatch (the AQL packet's `kernel_object` is its address).
//!
//! Mirrors "Kernel Descriptor" and the `compute_pgm_rsrc1/2/3` tables of
//! LLVM's AMDGPUUsage (code object v3 and later, GFX6-GFX12). The layout is
//! the hardware's and the runtime's, not ours to change. Bitfields are typed
//! accessors over the raw words; where a field exists only on some families
//! the accessor says which, and callers pick it by [`GfxFamily`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `amd_kernel_descriptor` / `kernel_descriptor_t`.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct KernelDescriptor {
    /// GROUP_SEGMENT_FIXED_SIZE: LDS bytes the kernel allocates statically;
    /// the dispatch packet adds the dynamic part.
    pub group_segment_fixed_size: u32,
    /// PRIVATE_SEGMENT_FIXED_SIZE: scratch bytes per work-item, excluding any
    /// dynamic stack.
    pub private_segment_fixed_size: u32,
    /// KERNARG_SIZE: size of the kernarg segment in bytes.
    pub kernarg_size: u32,
    /// Bytes 12..16, reserved (must be zero).
    pub reserved0: [u8; 4],
    /// KERNEL_CODE_ENTRY_BYTE_OFFSET: signed distance from the descriptor's
    /// own address to the kernel's first instruction (256-byte aligned).
    pub kernel_code_entry_byte_offset: i64,
    /// Bytes 24..44, reserved (must be zero).
    pub reserved1: [u8; 20],
    /// COMPUTE_PGM_RSRC3 (GFX90A, GFX940 and GFX10+; zero elsewhere).
    pub compute_pgm_rsrc3: u32,
    /// COMPUTE_PGM_RSRC1.
    pub compute_pgm_rsrc1: u32,
    /// COMPUTE_PGM_RSRC2.
    pub compute_pgm_rsrc2: u32,
    /// Which SGPRs and features the kernel's initial state enables.
    pub kernel_code_properties: u16,
    /// KERNARG_PRELOAD: SPEC_LENGTH (bits 6:0), SPEC_OFFSET (bits 15:7).
    pub kernarg_preload: u16,
    /// Bytes 60..64, reserved (must be zero).
    pub reserved2: [u8; 4],
}

assert_layout!(
    KernelDescriptor,
    size = 64,
    align = 64,
    why = "AMDGPUUsage, Kernel Descriptor (kernel_descriptor_t): the command processor reads \
           exactly 64 bytes at a 64-byte-aligned address, each field at the byte the table gives",
    group_segment_fixed_size = 0,
    private_segment_fixed_size = 4,
    kernarg_size = 8,
    reserved0 = 12,
    kernel_code_entry_byte_offset = 16,
    reserved1 = 24,
    compute_pgm_rsrc3 = 44,
    compute_pgm_rsrc1 = 48,
    compute_pgm_rsrc2 = 52,
    kernel_code_properties = 56,
    kernarg_preload = 58,
    reserved2 = 60,
);

/// Which generation's bit assignments apply to the descriptor's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GfxFamily {
    /// GFX9 without accumulation registers (gfx900..gfx909, gfx90c).
    Gfx9,
    /// GFX9 with the unified VGPR/AGPR file: gfx908, gfx90a, gfx94x, gfx950.
    /// (gfx908 has AGPRs but no COMPUTE_PGM_RSRC3 fields; the reader treats
    /// the shared fields alike.)
    Gfx9Mai,
    /// GFX10 (RDNA1, RDNA2: gfx10xx); COMPUTE_PGM_RSRC3 holds
    /// SHARED_VGPR_COUNT.
    Gfx10,
    /// GFX11 (RDNA3: gfx11xx); INST_PREF_SIZE is bits 9:4 of
    /// COMPUTE_PGM_RSRC3.
    Gfx11,
    /// GFX12 (RDNA4: gfx12xx); INST_PREF_SIZE is bits 11:4 of
    /// COMPUTE_PGM_RSRC3, and bit 21 of COMPUTE_PGM_RSRC1 is WG_RR_EN.
    Gfx12,
}

/// Bits `lo..=hi` of `word`.
const fn bits(word: u32, lo: u32, hi: u32) -> u32 {
    (word >> lo) & (u32::MAX >> (31 - (hi - lo)))
}

/// COMPUTE_PGM_RSRC1 fields (AMDGPUUsage, "compute_pgm_rsrc1 for GFX6-GFX12").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgmRsrc1(pub u32);

impl PgmRsrc1 {
    /// GRANULATED_WORKITEM_VGPR_COUNT: VGPR blocks minus one.
    pub const fn granulated_workitem_vgpr_count(self) -> u32 {
        bits(self.0, 0, 5)
    }
    /// GRANULATED_WAVEFRONT_SGPR_COUNT: SGPR blocks minus one (GFX6-GFX9;
    /// reserved, zero, on GFX10+).
    pub const fn granulated_wavefront_sgpr_count(self) -> u32 {
        bits(self.0, 6, 9)
    }
    /// PRIORITY (bits 11:10): must be 0; the command processor sets the
    /// wave's priority.
    pub const fn priority(self) -> u32 {
        bits(self.0, 10, 11)
    }
    /// FLOAT_ROUND_MODE_32 (bits 13:12): the initial rounding mode of f32
    /// operations (0 nearest even, 1 toward +inf, 2 toward -inf, 3 toward
    /// zero); MODE.FP_ROUND bits 1:0 at wave launch.
    pub const fn float_round_mode_32(self) -> u32 {
        bits(self.0, 12, 13)
    }
    /// FLOAT_ROUND_MODE_16_64 (bits 15:14): the same for f16 and f64
    /// operations; MODE.FP_ROUND bits 3:2.
    pub const fn float_round_mode_16_64(self) -> u32 {
        bits(self.0, 14, 15)
    }
    /// FLOAT_DENORM_MODE_32 (bits 17:16): f32 denormal handling (0 flush
    /// source and destination, 1 flush destination, 2 flush source, 3 keep
    /// both); MODE.FP_DENORM bits 1:0.
    pub const fn float_denorm_mode_32(self) -> u32 {
        bits(self.0, 16, 17)
    }
    /// FLOAT_DENORM_MODE_16_64 (bits 19:18): the same for f16 and f64;
    /// MODE.FP_DENORM bits 3:2.
    pub const fn float_denorm_mode_16_64(self) -> u32 {
        bits(self.0, 18, 19)
    }
    /// PRIV (bit 20): must be 0 (start in trap-handler privilege mode).
    pub const fn priv_(self) -> bool {
        bits(self.0, 20, 20) != 0
    }
    /// ENABLE_DX10_CLAMP on GFX6-GFX11 (WG_RR_EN on GFX12).
    pub const fn enable_dx10_clamp(self) -> bool {
        bits(self.0, 21, 21) != 0
    }
    /// DEBUG_MODE (bit 22): must be 0 (start in single-step mode).
    pub const fn debug_mode(self) -> bool {
        bits(self.0, 22, 22) != 0
    }
    /// ENABLE_IEEE_MODE on GFX6-GFX11 (reserved on GFX12).
    pub const fn enable_ieee_mode(self) -> bool {
        bits(self.0, 23, 23) != 0
    }
    /// BULKY (bit 24): must be 0 (only one workgroup per compute unit).
    pub const fn bulky(self) -> bool {
        bits(self.0, 24, 24) != 0
    }
    /// CDBG_USER (bit 25): must be 0 (a flag for debugging code).
    pub const fn cdbg_user(self) -> bool {
        bits(self.0, 25, 25) != 0
    }
    /// FP16_OVFL (GFX9+).
    pub const fn fp16_ovfl(self) -> bool {
        bits(self.0, 26, 26) != 0
    }
    /// WGP_MODE (GFX10+).
    pub const fn wgp_mode(self) -> bool {
        bits(self.0, 29, 29) != 0
    }
    /// MEM_ORDERED (GFX10+).
    pub const fn mem_ordered(self) -> bool {
        bits(self.0, 30, 30) != 0
    }
    /// FWD_PROGRESS (GFX10+).
    pub const fn fwd_progress(self) -> bool {
        bits(self.0, 31, 31) != 0
    }
}

/// COMPUTE_PGM_RSRC2 fields (AMDGPUUsage, "compute_pgm_rsrc2 for GFX6-GFX12").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgmRsrc2(pub u32);

impl PgmRsrc2 {
    /// ENABLE_PRIVATE_SEGMENT (SCRATCH_EN).
    pub const fn enable_private_segment(self) -> bool {
        bits(self.0, 0, 0) != 0
    }
    /// USER_SGPR_COUNT: user SGPRs the command processor loads.
    pub const fn user_sgpr_count(self) -> u32 {
        bits(self.0, 1, 5)
    }
    /// ENABLE_TRAP_HANDLER (bit 6): must be 0 in the descriptor; the
    /// command processor sets TRAP_PRESENT when the runtime installed a
    /// trap handler.
    pub const fn enable_trap_handler(self) -> bool {
        bits(self.0, 6, 6) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_X (bit 7): a system SGPR after the user
    /// SGPRs holds the workgroup id in X.
    pub const fn enable_sgpr_workgroup_id_x(self) -> bool {
        bits(self.0, 7, 7) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_Y (bit 8): likewise for Y, after X's.
    pub const fn enable_sgpr_workgroup_id_y(self) -> bool {
        bits(self.0, 8, 8) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_ID_Z (bit 9): likewise for Z, after Y's.
    pub const fn enable_sgpr_workgroup_id_z(self) -> bool {
        bits(self.0, 9, 9) != 0
    }
    /// ENABLE_SGPR_WORKGROUP_INFO (bit 10): a system SGPR after the
    /// workgroup ids holds workgroup information.
    pub const fn enable_sgpr_workgroup_info(self) -> bool {
        bits(self.0, 10, 10) != 0
    }
    /// ENABLE_VGPR_WORKITEM_ID: 0 = X, 1 = X and Y, 2 = X, Y and Z.
    pub const fn enable_vgpr_workitem_id(self) -> u32 {
        bits(self.0, 11, 12)
    }
    /// ENABLE_EXCEPTION_ADDRESS_WATCH (bit 13): must be 0; the command
    /// processor fills it in from the runtime's debugger state.
    pub const fn enable_exception_address_watch(self) -> bool {
        bits(self.0, 13, 13) != 0
    }
    /// ENABLE_EXCEPTION_MEMORY (bit 14): must be 0; the command processor
    /// fills it in (memory violation exceptions).
    pub const fn enable_exception_memory(self) -> bool {
        bits(self.0, 14, 14) != 0
    }
    /// GRANULATED_LDS_SIZE (must be 0 in the descriptor; CP fills it).
    pub const fn granulated_lds_size(self) -> u32 {
        bits(self.0, 15, 23)
    }
    /// ENABLE_EXCEPTION_* bits 24..30 as one mask (IEEE invalid, denormal
    /// source, divide by zero, overflow, underflow, inexact, int divide by
    /// zero, from bit 0 up).
    pub const fn enable_exceptions(self) -> u32 {
        bits(self.0, 24, 30)
    }
}

/// COMPUTE_PGM_RSRC3 fields; their meaning depends on the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgmRsrc3(pub u32);

impl PgmRsrc3 {
    /// ACCUM_OFFSET (GFX90A, GFX940): first AGPR's index in the unified
    /// register file is `(accum_offset + 1) * 4`.
    pub const fn accum_offset(self) -> u32 {
        bits(self.0, 0, 5)
    }
    /// The first AGPR's index in the unified VGPR file (GFX90A, GFX940).
    pub const fn accum_offset_vgprs(self) -> u32 {
        (self.accum_offset() + 1) * 4
    }
    /// TG_SPLIT (GFX90A, GFX940).
    pub const fn tg_split(self) -> bool {
        bits(self.0, 16, 16) != 0
    }
    /// SHARED_VGPR_COUNT (GFX10, GFX11).
    pub const fn shared_vgpr_count(self) -> u32 {
        bits(self.0, 0, 3)
    }
    /// INST_PREF_SIZE: bits 9:4 on GFX11, bits 11:4 on GFX12.
    pub const fn inst_pref_size(self, family: GfxFamily) -> u32 {
        match family {
            GfxFamily::Gfx12 => bits(self.0, 4, 11),
            _ => bits(self.0, 4, 9),
        }
    }
    /// IMAGE_OP (GFX11+).
    pub const fn image_op(self) -> bool {
        bits(self.0, 31, 31) != 0
    }
}

/// kernel_code_properties bits (AMDGPUUsage, "Kernel Descriptor").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelCodeProperties(pub u16);

impl KernelCodeProperties {
    const fn bit(self, n: u16) -> bool {
        self.0 & (1 << n) != 0
    }
    /// ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER (bit 0): 4 user SGPRs hold the
    /// scratch buffer resource (V#); unused with architected flat scratch
    /// (gfx940+).
    pub const fn enable_sgpr_private_segment_buffer(self) -> bool {
        self.bit(0)
    }
    /// ENABLE_SGPR_DISPATCH_PTR (bit 1): 2 user SGPRs hold the address of
    /// the AQL dispatch packet.
    pub const fn enable_sgpr_dispatch_ptr(self) -> bool {
        self.bit(1)
    }
    /// ENABLE_SGPR_QUEUE_PTR (bit 2): 2 user SGPRs hold the address of the
    /// queue's `amd_queue_t`.
    pub const fn enable_sgpr_queue_ptr(self) -> bool {
        self.bit(2)
    }
    /// ENABLE_SGPR_KERNARG_SEGMENT_PTR (bit 3): 2 user SGPRs hold the
    /// kernarg segment's address.
    pub const fn enable_sgpr_kernarg_segment_ptr(self) -> bool {
        self.bit(3)
    }
    /// ENABLE_SGPR_DISPATCH_ID (bit 4): 2 user SGPRs hold the 64-bit
    /// dispatch id (the packet's index in its queue).
    pub const fn enable_sgpr_dispatch_id(self) -> bool {
        self.bit(4)
    }
    /// ENABLE_SGPR_FLAT_SCRATCH_INIT (bit 5): 2 user SGPRs hold the flat
    /// scratch initialisation values; unused with architected flat scratch
    /// (gfx940+).
    pub const fn enable_sgpr_flat_scratch_init(self) -> bool {
        self.bit(5)
    }
    /// ENABLE_SGPR_PRIVATE_SEGMENT_SIZE (bit 6): 1 user SGPR holds the
    /// scratch bytes per work-item.
    pub const fn enable_sgpr_private_segment_size(self) -> bool {
        self.bit(6)
    }
    /// ENABLE_WAVEFRONT_SIZE32 (GFX10+): the kernel runs in wave32.
    pub const fn enable_wavefront_size32(self) -> bool {
        self.bit(10)
    }
    /// USES_DYNAMIC_STACK.
    pub const fn uses_dynamic_stack(self) -> bool {
        self.bit(11)
    }
}

impl KernelDescriptor {
    /// COMPUTE_PGM_RSRC1 with its fields.
    pub const fn rsrc1(&self) -> PgmRsrc1 {
        PgmRsrc1(self.compute_pgm_rsrc1)
    }
    /// COMPUTE_PGM_RSRC2 with its fields.
    pub const fn rsrc2(&self) -> PgmRsrc2 {
        PgmRsrc2(self.compute_pgm_rsrc2)
    }
    /// COMPUTE_PGM_RSRC3 with its fields (read them by [`GfxFamily`]).
    pub const fn rsrc3(&self) -> PgmRsrc3 {
        PgmRsrc3(self.compute_pgm_rsrc3)
    }
    /// `kernel_code_properties` with its bits.
    pub const fn properties(&self) -> KernelCodeProperties {
        KernelCodeProperties(self.kernel_code_properties)
    }
    /// KERNARG_PRELOAD_SPEC_LENGTH: kernarg dwords preloaded into SGPRs.
    pub const fn kernarg_preload_length(&self) -> u16 {
        self.kernarg_preload & 0x7f
    }
    /// KERNARG_PRELOAD_SPEC_OFFSET: first preloaded kernarg dword.
    pub const fn kernarg_preload_offset(&self) -> u16 {
        self.kernarg_preload >> 7
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitfields_read_their_documented_bits() {
        // Bits set one field at a time, from AMDGPUUsage's tables.
        assert_eq!(PgmRsrc1(0x3f).granulated_workitem_vgpr_count(), 63);
        assert_eq!(PgmRsrc1(0xf << 6).granulated_wavefront_sgpr_count(), 15);
        assert_eq!(PgmRsrc1(3 << 16).float_denorm_mode_32(), 3);
        assert_eq!(PgmRsrc1(3 << 18).float_denorm_mode_16_64(), 3);
        assert!(PgmRsrc1(1 << 23).enable_ieee_mode());
        assert!(PgmRsrc1(1 << 29).wgp_mode());
        assert_eq!(PgmRsrc2(0x1f << 1).user_sgpr_count(), 31);
        assert!(PgmRsrc2(1 << 7).enable_sgpr_workgroup_id_x());
        assert_eq!(PgmRsrc2(2 << 11).enable_vgpr_workitem_id(), 2);
        assert_eq!(PgmRsrc2(0x1ff << 15).granulated_lds_size(), 0x1ff);
        assert_eq!(PgmRsrc3(0x3f).accum_offset(), 63);
        assert_eq!(PgmRsrc3(1).accum_offset_vgprs(), 8);
        assert!(PgmRsrc3(1 << 16).tg_split());
        assert_eq!(PgmRsrc3(0xff << 4).inst_pref_size(GfxFamily::Gfx11), 0x3f);
        assert_eq!(PgmRsrc3(0xff << 4).inst_pref_size(GfxFamily::Gfx12), 0xff);
        assert!(KernelCodeProperties(1 << 10).enable_wavefront_size32());
        assert!(KernelCodeProperties(1 << 11).uses_dynamic_stack());
        assert!(KernelCodeProperties(1 << 3).enable_sgpr_kernarg_segment_ptr());
    }

    #[test]
    fn descriptor_round_trips_through_bytes() {
        let mut raw = [0u8; 64];
        raw[8..12].copy_from_slice(&20u32.to_le_bytes());
        raw[16..24].copy_from_slice(&(-256i64).to_le_bytes());
        raw[56..58].copy_from_slice(&0x0408u16.to_le_bytes());
        let kd = KernelDescriptor::read_from_bytes(&raw).unwrap();
        assert_eq!(kd.kernarg_size, 20);
        assert_eq!(kd.kernel_code_entry_byte_offset, -256);
        assert!(kd.properties().enable_sgpr_kernarg_segment_ptr());
        assert!(kd.properties().enable_wavefront_size32());
        assert_eq!(kd.as_bytes(), &raw);
    }
}
