//! What every GEMM kernel family shares: how an operand is stored
//! ([`Layout`], the `flags` bits, element offsets), the element types and
//! their conversions to and from the f32 the kernels accumulate in (the
//! 8-bit integer kernels accumulate in i32).
//!
//! Every kernel takes the same arguments, the fields of
//! [`aqueduct_abi::gemm::GemmArgs`] in order (the host writes that struct):
//! `a, b, c, d` (pointers), `m, n, k, lda, ldb, ldc, ldd` (u32), `stride_a,
//! stride_b, stride_c, stride_d` (u64, elements between batches), `alpha,
//! beta` (f32), `flags` (u32: [`GemmFlags`] bits [`TRANSPOSE_A`] and
//! [`TRANSPOSE_B`]); the matrices are column-major, and the batch is the
//! launch's z.

use aqueduct_abi::gemm::GemmFlags;

/// How A or B is stored: as the problem's operand, or transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    AsIs,
    Transposed,
}

impl Layout {
    /// Bit `bit` of the kernel's `flags` argument.
    pub fn from_flag(flags: u32, bit: u32) -> Self {
        if flags >> bit & 1 != 0 {
            Self::Transposed
        } else {
            Self::AsIs
        }
    }
}

/// The flags bit for a transposed A ([`GemmFlags::TRANSPOSE_A`]).
pub const TRANSPOSE_A: u32 = GemmFlags::TRANSPOSE_A.bits().trailing_zeros();
/// The flags bit for a transposed B ([`GemmFlags::TRANSPOSE_B`]).
pub const TRANSPOSE_B: u32 = GemmFlags::TRANSPOSE_B.bits().trailing_zeros();

/// Element `(row, col)` of a column-major operand with leading dimension
/// `ld`, stored as is or transposed: its offset in elements.
#[inline(always)]
pub fn offset(layout: Layout, row: u32, col: u32, ld: u32) -> u64 {
    match layout {
        Layout::AsIs => u64::from(row) + u64::from(col) * u64::from(ld),
        Layout::Transposed => u64::from(col) + u64::from(row) * u64::from(ld),
    }
}

/// A stored element type: its bits, and the f32 the kernels compute with.
/// f16 and bf16 widen exactly; f32 narrows to them rounding to nearest
/// even, as `v_cvt_f16_f32` and a bf16 store do.
pub trait Element: Copy {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
}

impl Element for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
}

/// IEEE binary16, as its bits (the conversions are the hardware's on the
/// device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

/// bfloat16 (the high half of an f32), as its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl Element for Bf16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        Bf16(bf16_bits(v))
    }
}

/// FP8 (E4M3) in the target's format, as its bits: FNUZ on gfx942, OCP
/// E4M3FN on gfx950 and gfx1201 (`aqueduct_abi::gfx::Fp8Format`). An
/// input type only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Fp8(pub u8);

/// BF8 (E5M2) in the target's format, as its bits: FNUZ on gfx942, OCP on
/// gfx950 and gfx1201. An input type only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf8(pub u8);

/// OCP FP8 (E4M3FN) with an E8M0 scale per 32 k of each row of op(A)
/// and column of op(B) (MXFP8, OCP Microscaling; `GemmArgs::scale_a`), as
/// its bits: gfx950's block-scaled input only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct MxFp8(pub u8);

/// OCP BF8 (E5M2) with E8M0 block scales, as [`MxFp8`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct MxBf8(pub u8);

/// Two FP4 (E2M1) elements of K in one byte, k even in the low nibble,
/// with E8M0 block scales as [`MxFp8`] (MXFP4, OCP Microscaling): gfx950's
/// block-scaled input only, stored with K contiguous (A transposed, B as
/// is) and K and the leading dimensions of A and B even (they count
/// elements, two a byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct MxFp4(pub u8);

/// Four FP6 elements of K in three bytes (OCP FP6 E2M3), packed
/// little-endian, element `k` of a row in bits `6k .. 6k + 6` of the row's
/// bytes: the order gfx950's f8f6f4 MFMA takes them in its registers
/// (CDNA4 ISA §7.1.5.1), with E8M0 block scales as [`MxFp8`] (MXFP6, OCP
/// Microscaling): gfx950's block-scaled input only, stored with K
/// contiguous (A transposed, B as is) and K and the leading dimensions
/// and strides of A and B multiples of 4 (they count elements, four in
/// three bytes). As a staged type, one byte of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct MxFp6(pub u8);

/// MXFP6 with BF6 (OCP E3M2) elements, packed as [`MxFp6`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct MxBf6(pub u8);

/// A signed 8-bit integer, as its bits: an input type of the integer
/// kernels, which accumulate in i32 and write i32 ([`ElementType::I8`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct I8(pub u8);

/// An f32 the xf32 kernels multiply at xf32 precision, as its bits: an
/// input type only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Xf32(pub u32);

/// f32 to bf16 bits, rounding to nearest even; a NaN stays a (quiet) NaN.
#[inline(always)]
pub fn bf16_bits(v: f32) -> u16 {
    let b = v.to_bits();
    if v.is_nan() {
        return (b >> 16) as u16 | 0x0040;
    }
    let round = 0x7FFF + (b >> 16 & 1);
    (b.wrapping_add(round) >> 16) as u16
}

#[cfg(target_arch = "amdgpu")]
impl Element for F16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::from_bits(self.0) as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        F16((v as f16).to_bits())
    }
}

/// A kernel's arguments ([`aqueduct_abi::gemm::GemmArgs`]' fields, the
/// matrices as typed pointers), as the generic bodies take them. Its own
/// fields rather than a `GemmArgs` and the pointers: with the struct
/// nested, LLVM schedules the MFMA kernels' main loops differently (same
/// registers, other code).
#[derive(Clone, Copy)]
pub struct Problem<In, Out> {
    pub a: *const In,
    pub b: *const In,
    pub c: *const Out,
    pub d: *mut Out,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub lda: u32,
    pub ldb: u32,
    pub ldc: u32,
    pub ldd: u32,
    pub stride_a: u64,
    pub stride_b: u64,
    pub stride_c: u64,
    pub stride_d: u64,
    pub alpha: f32,
    pub beta: f32,
    pub flags: u32,
    /// E8M0 block scales of A and B (block-scaled kernels only).
    pub scale_a: *const u8,
    pub scale_b: *const u8,
}

impl<In, Out> Problem<In, Out> {
    /// Bytes of block scales before batch `z`'s, for `rows` rows (M for
    /// A, N for B) of `⌈K / 32⌉` scales each.
    #[inline(always)]
    fn scales(&self, z: u64, rows: u32) -> usize {
        (z * u64::from(rows) * u64::from(aqueduct_abi::gemm::scale_blocks(self.k))) as usize
    }

    /// The problem of batch `z`: each matrix `stride_*` elements on per
    /// batch. The pointers are only computed here (the kernels read them
    /// inside the batch's matrices).
    #[inline(always)]
    pub fn batch(self, z: u32) -> Self {
        let z = u64::from(z);
        Self {
            a: self.a.wrapping_add((z * self.stride_a) as usize),
            b: self.b.wrapping_add((z * self.stride_b) as usize),
            c: self.c.wrapping_add((z * self.stride_c) as usize),
            d: self.d.wrapping_add((z * self.stride_d) as usize),
            scale_a: self.scale_a.wrapping_add(self.scales(z, self.m)),
            scale_b: self.scale_b.wrapping_add(self.scales(z, self.n)),
            ..self
        }
    }
}

/// An element type as the kernels store it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    F32,
    F16,
    Bf16,
    /// FP8, E4M3 in the target's format (`aqueduct_abi::gfx::Fp8Format`):
    /// FNUZ on gfx942 (CDNA3 ISA, "Float8"), OCP E4M3FN on gfx950 (CDNA4
    /// ISA §7.3) and gfx1201.
    Fp8,
    /// BF8, E5M2 in the target's format: FNUZ on gfx942, OCP on gfx950
    /// and gfx1201.
    Bf8,
    /// MXFP8: OCP E4M3FN with an E8M0 scale per 32 k of each row of op(A)
    /// and column of op(B) (`aqueduct_abi::gemm::GemmArgs::scale_a`);
    /// gfx950 (CDNA4 ISA §7.2).
    MxFp8,
    /// MXFP8 with E5M2 elements (OCP BF8), as [`ElementType::MxFp8`].
    MxBf8,
    /// MXFP4: OCP FP4 (E2M1), two elements a byte, with E8M0 block scales
    /// as [`ElementType::MxFp8`]; K contiguous only, K and the leading
    /// dimensions even ([`MxFp4`]).
    MxFp4,
    /// MXFP6: OCP FP6 (E2M3), four elements in three bytes, with E8M0
    /// block scales as [`ElementType::MxFp8`]; K contiguous only, K and the
    /// leading dimensions and strides multiples of 4 ([`MxFp6`]).
    MxFp6,
    /// MXFP6 with BF6 (OCP E3M2) elements, as [`ElementType::MxFp6`].
    MxBf6,
    /// f32 in memory, multiplied as gfx942's xf32 (reduced-precision f32
    /// MFMAs; Tensile's `F32XdlMathOp` XFloat32).
    Xf32,
    /// Signed 8-bit integers (Tensile's `Int8`): the integer kernels' input,
    /// multiplied exactly and summed in i32 (Tensile's I8II: Int32 compute).
    I8,
    /// Signed 32-bit integers: the integer kernels' C and D. The epilogue is
    /// i32 arithmetic modulo 2^32, alpha and beta converted to i32 (the host
    /// passes them integral).
    I32,
}

impl ElementType {
    /// Bytes per stored unit: one element; for MXFP4 the byte of two,
    /// for MXFP6 the three bytes of four ([`ElementType::per_unit`]).
    pub const fn bytes(self) -> u32 {
        match self {
            Self::F32 | Self::Xf32 | Self::I32 => 4,
            Self::MxFp6 | Self::MxBf6 => 3,
            Self::F16 | Self::Bf16 => 2,
            Self::Fp8 | Self::Bf8 | Self::MxFp8 | Self::MxBf8 | Self::MxFp4 | Self::I8 => 1,
        }
    }

    /// Elements per stored unit ([`ElementType::bytes`]): 2 for MXFP4's
    /// nibbles, 4 for MXFP6's three bytes, else 1.
    pub const fn per_unit(self) -> u32 {
        match self {
            Self::MxFp4 => 2,
            Self::MxFp6 | Self::MxBf6 => 4,
            _ => 1,
        }
    }

    /// Bytes the staging moves as one element: the element's, or for the
    /// packed types (several elements a unit) a byte of them.
    pub const fn staged_bytes(self) -> u32 {
        if self.per_unit() > 1 { 1 } else { self.bytes() }
    }

    /// Bytes of each row of K a slice of the matrix kernels holds
    /// (`crate::mfma::SLICE_BYTES`, 64), but 48 for MXFP6 (`FP6_SLICE`): the 64 k of
    /// one f8f6f4 MFMA, whose 6-bit elements would not fill a 64-byte
    /// row with whole MFMAs.
    pub const fn slice_bytes(self) -> u32 {
        match self {
            Self::MxFp6 | Self::MxBf6 => crate::mfma::FP6_SLICE,
            _ => crate::mfma::SLICE_BYTES,
        }
    }

    /// Whether A and B come with E8M0 block scales (the MX types): the
    /// kernels read `scale_a` and `scale_b`.
    pub const fn block_scaled(self) -> bool {
        matches!(
            self,
            Self::MxFp8 | Self::MxBf8 | Self::MxFp4 | Self::MxFp6 | Self::MxBf6
        )
    }
}

/// A stored element type's [`ElementType`]: what a kernel table's row,
/// which names the Rust types its entry point takes, says to the host.
pub trait Stored {
    /// The type as the kernels store it.
    const TYPE: ElementType;
}

/// [`Stored`] for each of `type => ElementType`.
macro_rules! stored {
    ($($ty:ty => $element:ident),* $(,)?) => {$(
        impl Stored for $ty {
            const TYPE: ElementType = ElementType::$element;
        }
    )*};
}

stored!(
    f32 => F32, F16 => F16, Bf16 => Bf16, Fp8 => Fp8, Bf8 => Bf8, MxFp8 => MxFp8, MxBf8 => MxBf8,
    MxFp4 => MxFp4, MxFp6 => MxFp6, MxBf6 => MxBf6,
    Xf32 => Xf32, I8 => I8, i32 => I32,
);

/// The matrix hardware a kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// The VALU: every target.
    Fma,
    /// Matrix cores: the CDNA targets (gfx90a, gfx942, gfx950).
    Mfma,
    /// WMMA: the RDNA3/RDNA4 targets (gfx1100, gfx1201).
    Wmma,
}

/// One kernel as the host launches it: the common arguments, a grid of
/// `(ceil(M / tile_rows) · threads, ceil(N / tile_cols), batch)`
/// work-items in workgroups of `(threads, 1, 1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmKernel {
    pub name: &'static str,
    pub family: Family,
    /// A and B.
    pub input: ElementType,
    /// C and D; the kernels accumulate in f32, the integer ones (I8 in,
    /// I32 out) in i32.
    pub output: ElementType,
    pub tile_rows: u32,
    pub tile_cols: u32,
    /// Work-items per workgroup: the kernel's launch bound.
    pub threads: u32,
    /// The only gfx targets it is built for; empty: every target of its
    /// family.
    pub only_on: &'static [&'static str],
}

impl GemmKernel {
    /// Whether the kernel is built for `gfx`: FMA kernels everywhere, MFMA
    /// and WMMA ones where the processor has those (`aqueduct_abi::gfx`),
    /// each within its `only_on` targets.
    pub fn built_for(&self, gfx: &str) -> bool {
        let family = match self.family {
            Family::Fma => true,
            Family::Mfma => aqueduct_abi::gfx::gfx(gfx)
                .is_some_and(|g| g.matrix_core == aqueduct_abi::gfx::MatrixCore::Mfma),
            Family::Wmma => aqueduct_abi::gfx::gfx(gfx)
                .is_some_and(|g| g.matrix_core == aqueduct_abi::gfx::MatrixCore::Wmma),
        };
        family && (self.only_on.is_empty() || self.only_on.contains(&gfx))
    }

    /// The launch grid in work-items for an M × N × batch problem (at least
    /// one workgroup in each dimension).
    pub fn grid(&self, m: u32, n: u32, batch: u32) -> [u32; 3] {
        [
            m.div_ceil(self.tile_rows).max(1) * self.threads,
            n.div_ceil(self.tile_cols).max(1),
            batch.max(1),
        ]
    }
}

/// Defines `gpu-kernel` entry points with the common arguments (module
/// doc: [`aqueduct_abi::gemm::GemmArgs`]' fields, in order), each calling a generic body with
/// the leading arguments given and then the common ones:
/// `name: In => Out = body::<..>(leading, ..);`.
#[cfg(target_arch = "amdgpu")]
macro_rules! entry_points {
    ($($(#[$doc:meta])* $name:ident: $in:ty => $out:ty =
        $body:ident::<$($generic:tt),*>($($leading:expr),*);)*) => {$(
        $(#[$doc])*
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub extern "gpu-kernel" fn $name(
            a: *const $in,
            b: *const $in,
            c: *const $out,
            d: *mut $out,
            m: u32,
            n: u32,
            k: u32,
            lda: u32,
            ldb: u32,
            ldc: u32,
            ldd: u32,
            stride_a: u64,
            stride_b: u64,
            stride_c: u64,
            stride_d: u64,
            alpha: f32,
            beta: f32,
            flags: u32,
            scale_a: *const u8,
            scale_b: *const u8,
        ) {
            let p = $crate::common::Problem {
                a, b, c, d, m, n, k, lda, ldb, ldc, ldd, stride_a, stride_b, stride_c,
                stride_d, alpha, beta, flags, scale_a, scale_b,
            };
            $body::<$($generic),*>($($leading,)* p)
        }
    )*};
}
#[cfg(target_arch = "amdgpu")]
pub(crate) use entry_points;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16_bits(1.0), 0x3F80);
        // 1 + 2^-8 is a tie: to even (1.0); 1 + 3·2^-8 rounds up.
        assert_eq!(bf16_bits(1.0 + 2f32.powi(-8)), 0x3F80);
        assert_eq!(bf16_bits(1.0 + 3.0 * 2f32.powi(-8)), 0x3F82);
        assert_eq!(bf16_bits(-2.0), 0xC000);
        assert!(Bf16(bf16_bits(f32::NAN)).to_f32().is_nan());
        assert_eq!(bf16_bits(f32::INFINITY), 0x7F80);
    }

    #[test]
    fn offsets_follow_the_layout() {
        assert_eq!(offset(Layout::AsIs, 3, 2, 10), 23);
        assert_eq!(offset(Layout::Transposed, 3, 2, 10), 32);
        assert_eq!(Layout::from_flag(0b10, TRANSPOSE_B), Layout::Transposed);
        assert_eq!(Layout::from_flag(0b10, TRANSPOSE_A), Layout::AsIs);
    }
}
