//! The arguments of aqueduct's GEMM kernels (the `aqueduct-gemm` crate):
//! the block the host writes into a dispatch's kernarg segment, and what
//! every kernel of the crate receives, one field per kernel argument, in
//! this order.
//!
//! `D = alpha · op(A) · op(B) + beta · C`, the matrices column-major, the
//! batch the launch's z: batch `z`'s matrices start `z · stride_*` elements
//! after `a`, `b`, `c`, `d`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

flags_type! {
    /// The kernels' `flags` argument: how A and B are stored.
    pub struct GemmFlags: u32 {
        /// A is stored transposed (K × M, leading dimension `lda`).
        const TRANSPOSE_A = 1 << 0;
        /// B is stored transposed (N × K, leading dimension `ldb`).
        const TRANSPOSE_B = 1 << 1;
    }
}

impl GemmFlags {
    /// The flags of a problem with A and B stored transposed or not.
    pub const fn transposed(a: bool, b: bool) -> Self {
        let mut bits = 0;
        if a {
            bits |= Self::TRANSPOSE_A.bits();
        }
        if b {
            bits |= Self::TRANSPOSE_B.bits();
        }
        Self::from_bits_retain(bits)
    }
}

/// Elements of K one block scale covers (OCP Microscaling: 32).
pub const MX_BLOCK: u32 = 32;

/// Block scales per row of op(A) (column of op(B)) of a K-deep problem:
/// `⌈K / 32⌉`.
pub const fn scale_blocks(k: u32) -> u32 {
    k.div_ceil(MX_BLOCK)
}

/// The kernel arguments of every aqueduct-gemm kernel. The kernels take
/// them as separate arguments (the four matrices as pointers, so that a
/// command buffer can bind each to a buffer reference by its name),
/// which the compiler lays out as this struct: every argument at its
/// natural alignment, in order.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GemmArgs {
    /// Device address of A (`In` elements).
    pub a: u64,
    /// Device address of B (`In` elements).
    pub b: u64,
    /// Device address of C (`Out` elements; not read when `beta` is 0).
    pub c: u64,
    /// Device address of D (`Out` elements), written.
    pub d: u64,
    /// Rows of op(A), C and D.
    pub m: u32,
    /// Columns of op(B), C and D.
    pub n: u32,
    /// Columns of op(A) and rows of op(B): the summed size.
    pub k: u32,
    /// Elements between A's stored columns.
    pub lda: u32,
    /// Elements between B's stored columns.
    pub ldb: u32,
    /// Elements between C's columns.
    pub ldc: u32,
    /// Elements between D's columns.
    pub ldd: u32,
    /// Keeps `stride_a` 8-byte aligned, as the compiler does; written as
    /// zero.
    pub reserved0: u32,
    /// Elements from one batch's A to the next.
    pub stride_a: u64,
    /// Elements from one batch's B to the next.
    pub stride_b: u64,
    /// Elements from one batch's C to the next.
    pub stride_c: u64,
    /// Elements from one batch's D to the next.
    pub stride_d: u64,
    /// Scales op(A) · op(B) (0: A and B are not read). The integer
    /// kernels (i8 in, i32 out) convert it to i32: an integer there.
    pub alpha: f32,
    /// Scales C (0: C is not read); an integer for the integer kernels.
    pub beta: f32,
    /// How A and B are stored.
    pub flags: GemmFlags,
    /// Pads the arguments to a multiple of 8 bytes; written as zero.
    pub reserved: u32,
    /// Device address of A's block scales, for the block-scaled (MX)
    /// kernels only (0 for the others, which do not read it): one E8M0
    /// byte (`2^(e − 127)`, 0xFF NaN: the OCP Microscaling format) per 32
    /// consecutive k of each row of op(A), row `i`'s block `kb` at `kb + i
    /// · ⌈K / 32⌉`, batch `z`'s `z · M · ⌈K / 32⌉` bytes on.
    pub scale_a: u64,
    /// B's block scales, as A's: column `j` of op(B)'s block `kb` at `kb +
    /// j · ⌈K / 32⌉`, batch `z`'s `z · N · ⌈K / 32⌉` bytes on.
    pub scale_b: u64,
}

assert_layout!(
    GemmArgs,
    size = 128,
    align = 8,
    why = "the kernarg segment of every aqueduct-gemm kernel as the compiler lays it out (a test \
           checks it against the code objects' metadata)",
    a = 0,
    b = 8,
    c = 16,
    d = 24,
    m = 32,
    n = 36,
    k = 40,
    lda = 44,
    ldb = 48,
    ldc = 52,
    ldd = 56,
    reserved0 = 60,
    stride_a = 64,
    stride_b = 72,
    stride_c = 80,
    stride_d = 88,
    alpha = 96,
    beta = 100,
    flags = 104,
    reserved = 108,
    scale_a = 112,
    scale_b = 120,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_the_kernels_bits() {
        assert_eq!(GemmFlags::transposed(false, false).bits(), 0);
        assert_eq!(GemmFlags::transposed(true, false).bits(), 0b01);
        assert_eq!(GemmFlags::transposed(false, true).bits(), 0b10);
        assert_eq!(GemmFlags::transposed(true, true).bits(), 0b11);
    }
}
