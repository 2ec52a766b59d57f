//! Matrix fused multiply-add (MFMA) kernels: each runs one `v_mfma_*` of
//! one wave with fixed CBSZ/ABID/BLGP on operands loaded from memory, so
//! tests/tests/sim_mfma.rs can check the simulator's register layouts
//! against a scalar model.
//!
//! Every kernel is `fn(a, b, c, d)`, launched as one wave of 64 work-items:
//! lane `l` loads its A operand `a[l]`, its B operand `b[l]` and its C
//! registers `c[l]` (register `r` of lane `l` is element `r` of `c[l]`),
//! and stores D the same way to `d[l]`. The layout of the matrices over
//! lanes and registers is the instruction's, which is what the test
//! checks (CDNA2/CDNA3 ISA, "Matrix Arithmetic Instructions").
//!
//! The instructions are reached through their LLVM intrinsics
//! (IntrinsicsAMDGPU.td), declared here with LLVM's exact types: an
//! operand of several elements is a `#[repr(simd)]` array, which rustc
//! passes as an LLVM vector (`<16 x float>`, `<4 x half>`, ...), and
//! CBSZ/ABID/BLGP are `immarg`s, written as literals at each call.
//!
//! The forms gfx90a, gfx942 and gfx950 share come first. The others are
//! compiled only for their targets, under `cfg(aqueduct_gfx = "...")`,
//! which this crate's build.rs sets from `-Ctarget-cpu` (rustc has no
//! target-feature cfgs for amdgcn, and LLVM cannot select an intrinsic the
//! processor lacks): gfx942's xf32 shapes (gone on gfx950); the fp8/bf8
//! ones of gfx942 and gfx950 (the same kernels: gfx942 reads the bytes as
//! the FNUZ formats, gfx950 as the OCP ones); the K-doubled i8 shapes and
//! the f64 BLGP-as-negation of gfx942 and gfx950; gfx90a's single-block
//! i8 shapes and the bf16 forms older than `_1k`. Modifier settings are
//! ones AMD's matrix instruction calculator lists as supported for the
//! instruction (`--detail-instruction`, "CBSZ and ABID bits supported",
//! "BLGP bits supported"); the xf32, fp8/bf8 and K-doubled i8 shapes
//! support none, so they run plain. gfx950's `f8f6f4` forms (the `mx_*`
//! kernels) read CBSZ and BLGP as A's and B's formats and take per-lane
//! block scales as two more buffers.

use core::arch::amdgpu::workitem_id_x;

vectors! {
    F32x2 = [f32; 2];
    F32x4 = [f32; 4];
    F32x16 = [f32; 16];
    F32x32 = [f32; 32];
    I32x4 = [i32; 4];
    I32x6 = [i32; 6];
    I32x8 = [i32; 8];
    I32x16 = [i32; 16];
    I32x32 = [i32; 32];
    F16x4 = [f16; 4];
    F16x8 = [f16; 8];
    I16x2 = [i16; 2];
    I16x4 = [i16; 4];
    F64x4 = [f64; 4];
}

/// Declares each intrinsic once, and for each a list of kernels, each
/// `name: cbsz, abid, blgp`. The three are literals in the call, as LLVM
/// requires of `immarg` operands.
macro_rules! mfma {
    ($($intrinsic:literal fn $f:ident($ab:ty, $cd:ty) {
        $($kernel:ident: $cbsz:literal, $abid:literal, $blgp:literal;)*
    })*) => {
        unsafe extern "C" {
            $(
                #[link_name = $intrinsic]
                fn $f(a: $ab, b: $ab, c: $cd, cbsz: i32, abid: i32, blgp: i32) -> $cd;
            )*
        }
        $($(
            #[doc = concat!("`", $intrinsic, "` with CBSZ ", $cbsz, ", ABID ", $abid,
                ", BLGP ", $blgp, " (module doc: one wave, operands by lane).")]
            #[unsafe(no_mangle)]
            pub extern "gpu-kernel" fn $kernel(
                a: *const $ab,
                b: *const $ab,
                c: *const $cd,
                d: *mut $cd,
            ) {
                let lane = workitem_id_x() as usize;
                // SAFETY: the test gives every buffer one element per lane
                // of the single 64-lane wave it launches. The intrinsic's
                // types are LLVM's and its immargs literals.
                unsafe {
                    let r = $f(
                        a.add(lane).read(),
                        b.add(lane).read(),
                        c.add(lane).read(),
                        $cbsz,
                        $abid,
                        $blgp,
                    );
                    d.add(lane).write(r);
                }
            }
        )*)*
    };
}

mfma! {
    // f32: A and B one f32 per lane.
    "llvm.amdgcn.mfma.f32.32x32x1f32" fn mfma_f32_32x32x1f32(f32, F32x32) {
        mfma_f32_32x32x1f32_plain: 0, 0, 0;
        mfma_f32_32x32x1f32_cbsz1_abid1: 1, 1, 0;
        mfma_f32_32x32x1f32_blgp3: 0, 0, 3;
    }
    "llvm.amdgcn.mfma.f32.16x16x1f32" fn mfma_f32_16x16x1f32(f32, F32x16) {
        mfma_f32_16x16x1f32_plain: 0, 0, 0;
        mfma_f32_16x16x1f32_cbsz2_abid3: 2, 3, 0;
        mfma_f32_16x16x1f32_cbsz1_blgp5: 1, 0, 5;
    }
    "llvm.amdgcn.mfma.f32.4x4x1f32" fn mfma_f32_4x4x1f32(f32, F32x4) {
        mfma_f32_4x4x1f32_plain: 0, 0, 0;
        mfma_f32_4x4x1f32_cbsz4_abid9: 4, 9, 0;
        mfma_f32_4x4x1f32_cbsz3_abid5_blgp2: 3, 5, 2;
    }
    "llvm.amdgcn.mfma.f32.32x32x2f32" fn mfma_f32_32x32x2f32(f32, F32x16) {
        mfma_f32_32x32x2f32_plain: 0, 0, 0;
        mfma_f32_32x32x2f32_blgp1: 0, 0, 1;
    }
    "llvm.amdgcn.mfma.f32.16x16x4f32" fn mfma_f32_16x16x4f32(f32, F32x4) {
        mfma_f32_16x16x4f32_plain: 0, 0, 0;
        mfma_f32_16x16x4f32_blgp6: 0, 0, 6;
    }
    // f16: four halves per lane.
    "llvm.amdgcn.mfma.f32.32x32x4f16" fn mfma_f32_32x32x4f16(F16x4, F32x32) {
        mfma_f32_32x32x4f16_cbsz1_abid1_blgp4: 1, 1, 4;
    }
    "llvm.amdgcn.mfma.f32.16x16x4f16" fn mfma_f32_16x16x4f16(F16x4, F32x16) {
        mfma_f32_16x16x4f16_cbsz2_abid1_blgp7: 2, 1, 7;
    }
    "llvm.amdgcn.mfma.f32.4x4x4f16" fn mfma_f32_4x4x4f16(F16x4, F32x4) {
        mfma_f32_4x4x4f16_plain: 0, 0, 0;
        mfma_f32_4x4x4f16_cbsz2_abid2_blgp3: 2, 2, 3;
    }
    "llvm.amdgcn.mfma.f32.32x32x8f16" fn mfma_f32_32x32x8f16(F16x4, F32x16) {
        mfma_f32_32x32x8f16_blgp2: 0, 0, 2;
    }
    "llvm.amdgcn.mfma.f32.16x16x16f16" fn mfma_f32_16x16x16f16(F16x4, F32x4) {
        mfma_f32_16x16x16f16_plain: 0, 0, 0;
    }
    // bf16 (the `_1k` forms, the only bf16 ones gfx942 keeps): four
    // bf16 per lane, as i16 in LLVM.
    "llvm.amdgcn.mfma.f32.32x32x4bf16.1k" fn mfma_f32_32x32x4bf16_1k(I16x4, F32x32) {
        mfma_f32_32x32x4bf16_1k_cbsz1_abid1: 1, 1, 0;
    }
    "llvm.amdgcn.mfma.f32.16x16x4bf16.1k" fn mfma_f32_16x16x4bf16_1k(I16x4, F32x16) {
        mfma_f32_16x16x4bf16_1k_blgp3: 0, 0, 3;
    }
    "llvm.amdgcn.mfma.f32.4x4x4bf16.1k" fn mfma_f32_4x4x4bf16_1k(I16x4, F32x4) {
        mfma_f32_4x4x4bf16_1k_cbsz3_abid7_blgp1: 3, 7, 1;
    }
    "llvm.amdgcn.mfma.f32.32x32x8bf16.1k" fn mfma_f32_32x32x8bf16_1k(I16x4, F32x16) {
        mfma_f32_32x32x8bf16_1k_blgp5: 0, 0, 5;
    }
    "llvm.amdgcn.mfma.f32.16x16x16bf16.1k" fn mfma_f32_16x16x16bf16_1k(I16x4, F32x4) {
        mfma_f32_16x16x16bf16_1k_plain: 0, 0, 0;
    }
    // i8: four i8 per lane, packed in an i32. The single-block shapes
    // differ: gfx90a's 32x32x8 and 16x16x16, gfx942's 32x32x16 and
    // 16x16x32 (below).
    "llvm.amdgcn.mfma.i32.32x32x4i8" fn mfma_i32_32x32x4i8(i32, I32x32) {
        mfma_i32_32x32x4i8_cbsz1_abid1_blgp2: 1, 1, 2;
    }
    "llvm.amdgcn.mfma.i32.16x16x4i8" fn mfma_i32_16x16x4i8(i32, I32x16) {
        mfma_i32_16x16x4i8_cbsz2_abid2_blgp6: 2, 2, 6;
    }
    "llvm.amdgcn.mfma.i32.4x4x4i8" fn mfma_i32_4x4x4i8(i32, I32x4) {
        mfma_i32_4x4x4i8_plain: 0, 0, 0;
        mfma_i32_4x4x4i8_cbsz4_abid5_blgp3: 4, 5, 3;
    }
    // f64: one double per lane. No CBSZ/ABID (neither ISA has them for
    // f64), and BLGP stays 0 here: gfx942 reads it as negation and gfx90a
    // has none, so the negating kernels are gfx942's own (below).
    "llvm.amdgcn.mfma.f64.16x16x4f64" fn mfma_f64_16x16x4f64(f64, F64x4) {
        mfma_f64_16x16x4f64_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f64.4x4x4f64" fn mfma_f64_4x4x4f64(f64, f64) {
        mfma_f64_4x4x4f64_plain: 0, 0, 0;
    }
}

// ---------------------------------------------------------------------------
// gfx942 only (CDNA3): xf32
// ---------------------------------------------------------------------------

#[cfg(aqueduct_gfx = "gfx942")]
mfma! {
    // xf32: two f32 per lane, `<2 x float>` in LLVM.
    "llvm.amdgcn.mfma.f32.16x16x8.xf32" fn mfma_f32_16x16x8_xf32(F32x2, F32x4) {
        mfma_f32_16x16x8_xf32_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.32x32x4.xf32" fn mfma_f32_32x32x4_xf32(F32x2, F32x16) {
        mfma_f32_32x32x4_xf32_plain: 0, 0, 0;
    }
}

// ---------------------------------------------------------------------------
// gfx942 and gfx950: fp8/bf8 (FNUZ on gfx942, OCP on gfx950)
// ---------------------------------------------------------------------------

#[cfg(any(aqueduct_gfx = "gfx942", aqueduct_gfx = "gfx950"))]
mfma! {
    // fp8/bf8: eight per lane, packed in an i64; the first type
    // named is A's, the second B's.
    "llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8" fn mfma_f32_16x16x32_fp8_fp8(i64, F32x4) {
        mfma_f32_16x16x32_fp8_fp8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.16x16x32.fp8.bf8" fn mfma_f32_16x16x32_fp8_bf8(i64, F32x4) {
        mfma_f32_16x16x32_fp8_bf8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.16x16x32.bf8.fp8" fn mfma_f32_16x16x32_bf8_fp8(i64, F32x4) {
        mfma_f32_16x16x32_bf8_fp8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.16x16x32.bf8.bf8" fn mfma_f32_16x16x32_bf8_bf8(i64, F32x4) {
        mfma_f32_16x16x32_bf8_bf8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.32x32x16.fp8.fp8" fn mfma_f32_32x32x16_fp8_fp8(i64, F32x16) {
        mfma_f32_32x32x16_fp8_fp8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.32x32x16.fp8.bf8" fn mfma_f32_32x32x16_fp8_bf8(i64, F32x16) {
        mfma_f32_32x32x16_fp8_bf8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.32x32x16.bf8.fp8" fn mfma_f32_32x32x16_bf8_fp8(i64, F32x16) {
        mfma_f32_32x32x16_bf8_fp8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.32x32x16.bf8.bf8" fn mfma_f32_32x32x16_bf8_bf8(i64, F32x16) {
        mfma_f32_32x32x16_bf8_bf8_plain: 0, 0, 0;
    }
}

// ---------------------------------------------------------------------------
// gfx942 and gfx950 (CDNA3 and CDNA4)
// ---------------------------------------------------------------------------

#[cfg(any(aqueduct_gfx = "gfx942", aqueduct_gfx = "gfx950"))]
mfma! {
    // i8 with K doubled (the gfx90a single-block shapes' successors):
    // eight i8 per lane, packed in an i64.
    "llvm.amdgcn.mfma.i32.16x16x32.i8" fn mfma_i32_16x16x32_i8(i64, I32x4) {
        mfma_i32_16x16x32_i8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.i32.32x32x16.i8" fn mfma_i32_32x32x16_i8(i64, I32x16) {
        mfma_i32_32x32x16_i8_plain: 0, 0, 0;
    }
}

// f64 on gfx942: the BLGP field is NEG, bit 0 negating A, bit 1 B and
// bit 2 C (CDNA3 ISA; LLVM prints it as `neg:[a,b,c]`). The same
// intrinsics as the shared f64 kernels, so declared under other names.
// Negating A and negating B give the same D, so the settings tell apart
// the product's sign from C's: A only, B and C, C only. gfx950 reads the
// field alike (CDNA4 ISA).
#[cfg(any(aqueduct_gfx = "gfx942", aqueduct_gfx = "gfx950"))]
mfma! {
    "llvm.amdgcn.mfma.f64.16x16x4f64" fn mfma_f64_16x16x4f64_neg(f64, F64x4) {
        mfma_f64_16x16x4f64_neg_a: 0, 0, 1;
        mfma_f64_16x16x4f64_neg_b_c: 0, 0, 6;
    }
    "llvm.amdgcn.mfma.f64.4x4x4f64" fn mfma_f64_4x4x4f64_neg(f64, f64) {
        mfma_f64_4x4x4f64_neg_c: 0, 0, 4;
    }
}

// ---------------------------------------------------------------------------
// gfx950 only (CDNA4): K doubled. f16 and i8 here; the bf16 forms take
// `<8 x bfloat>`, a type Rust cannot name, so the simulator's own scalar
// model checks those (sim/src/exec/mfma.rs).
// ---------------------------------------------------------------------------

#[cfg(aqueduct_gfx = "gfx950")]
mfma! {
    "llvm.amdgcn.mfma.f32.32x32x16.f16" fn mfma_f32_32x32x16_f16(F16x8, F32x16) {
        mfma_f32_32x32x16_f16_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.f32.16x16x32.f16" fn mfma_f32_16x16x32_f16(F16x8, F32x4) {
        mfma_f32_16x16x32_f16_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.i32.32x32x32.i8" fn mfma_i32_32x32x32_i8(I32x4, I32x16) {
        mfma_i32_32x32x32_i8_plain: 0, 0, 0;
    }
    "llvm.amdgcn.mfma.i32.16x16x64.i8" fn mfma_i32_16x16x64_i8(I32x4, I32x4) {
        mfma_i32_16x16x64_i8_plain: 0, 0, 0;
    }
}

// ---------------------------------------------------------------------------
// gfx950 only (CDNA4): the f8f6f4 forms with OCP Microscaling block scales
// ---------------------------------------------------------------------------

/// Declares each `llvm.amdgcn.mfma.scale.*.f8f6f4` overload once (A's and
/// B's vector widths: 8, 6 or 4 dwords for FP8/BF8, FP6/BF6, FP4), and for
/// each a list of kernels `name: cbsz, blgp, sel_a, sel_b`: A's and B's
/// formats (0 FP8, 1 BF8, 2 FP6, 3 BF6, 4 FP4) and the byte of each scale
/// register that holds the scale, all `immarg`s. The kernels are `fn(a,
/// b, c, d, scale_a, scale_b)`, the scales one u32 per lane.
#[cfg(aqueduct_gfx = "gfx950")]
macro_rules! mfma_scale {
    ($($intrinsic:literal fn $f:ident($a:ty, $b:ty, $cd:ty) {
        $($kernel:ident: $cbsz:literal, $blgp:literal, $sel_a:literal, $sel_b:literal;)*
    })*) => {
        unsafe extern "C" {
            $(
                #[link_name = $intrinsic]
                fn $f(a: $a, b: $b, c: $cd, cbsz: i32, blgp: i32, sel_a: i32, scale_a: u32,
                    sel_b: i32, scale_b: u32) -> $cd;
            )*
        }
        $($(
            #[doc = concat!("`", $intrinsic, "` with CBSZ ", $cbsz, ", BLGP ", $blgp,
                ", scale bytes ", $sel_a, " and ", $sel_b, " (one wave, operands by lane).")]
            #[unsafe(no_mangle)]
            pub extern "gpu-kernel" fn $kernel(
                a: *const $a,
                b: *const $b,
                c: *const $cd,
                d: *mut $cd,
                scale_a: *const u32,
                scale_b: *const u32,
            ) {
                let lane = workitem_id_x() as usize;
                // SAFETY: the test gives every buffer one element per lane
                // of the single 64-lane wave it launches. The intrinsic's
                // types are LLVM's and its immargs literals.
                unsafe {
                    let r = $f(
                        a.add(lane).read(),
                        b.add(lane).read(),
                        c.add(lane).read(),
                        $cbsz,
                        $blgp,
                        $sel_a,
                        scale_a.add(lane).read(),
                        $sel_b,
                        scale_b.add(lane).read(),
                    );
                    d.add(lane).write(r);
                }
            }
        )*)*
    };
}

#[cfg(aqueduct_gfx = "gfx950")]
mfma_scale! {
    "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32"
    fn mfma_scale_16x16x128_8_8(I32x8, I32x8, F32x4) {
        mx_16x16x128_fp8_fp8_sel1_2: 0, 0, 1, 2;
        mx_16x16x128_bf8_fp8_sel3_0: 1, 0, 3, 0;
    }
    "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v6i32.v4i32"
    fn mfma_scale_16x16x128_6_4(I32x6, I32x4, F32x4) {
        mx_16x16x128_fp6_fp4_sel0_3: 2, 4, 0, 3;
    }
    "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v8i32.v6i32"
    fn mfma_scale_32x32x64_8_6(I32x8, I32x6, F32x16) {
        mx_32x32x64_bf8_bf6_sel2_1: 1, 3, 2, 1;
    }
    "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v4i32.v8i32"
    fn mfma_scale_32x32x64_4_8(I32x4, I32x8, F32x16) {
        mx_32x32x64_fp4_bf8_sel0_0: 4, 1, 0, 0;
    }
}

/// The unscaled `v_mfma_f32_16x16x128_f8f6f4`: LLVM has no intrinsic of
/// its own and selects it for the scaled one with both scales the
/// constant 0 and byte 0. The instruction scales by 1 (CDNA4 ISA §7.1.5),
/// so the scale operands here never reach the machine.
#[cfg(aqueduct_gfx = "gfx950")]
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn mx_16x16x128_fp8_bf8_unscaled(
    a: *const I32x8,
    b: *const I32x8,
    c: *const F32x4,
    d: *mut F32x4,
) {
    let lane = workitem_id_x() as usize;
    // SAFETY: as the kernels above; 0 and 1 are FP8 and BF8.
    unsafe {
        let r = mfma_scale_16x16x128_8_8(
            a.add(lane).read(),
            b.add(lane).read(),
            c.add(lane).read(),
            0,
            1,
            0,
            0,
            0,
            0,
        );
        d.add(lane).write(r);
    }
}

// ---------------------------------------------------------------------------
// gfx90a only (CDNA2)
// ---------------------------------------------------------------------------

#[cfg(aqueduct_gfx = "gfx90a")]
mfma! {
    // i8, one block: four i8 per lane in an i32. BLGP, no CBSZ/ABID.
    "llvm.amdgcn.mfma.i32.32x32x8i8" fn mfma_i32_32x32x8i8(i32, I32x16) {
        mfma_i32_32x32x8i8_plain: 0, 0, 0;
        mfma_i32_32x32x8i8_blgp3: 0, 0, 3;
    }
    "llvm.amdgcn.mfma.i32.16x16x16i8" fn mfma_i32_16x16x16i8(i32, I32x4) {
        mfma_i32_16x16x16i8_blgp4: 0, 0, 4;
    }
    // bf16 before `_1k`: two bf16 per lane, `<2 x i16>` in LLVM, half the
    // K of the `_1k` forms.
    "llvm.amdgcn.mfma.f32.32x32x2bf16" fn mfma_f32_32x32x2bf16(I16x2, F32x32) {
        mfma_f32_32x32x2bf16_cbsz1_abid1_blgp2: 1, 1, 2;
    }
    "llvm.amdgcn.mfma.f32.16x16x2bf16" fn mfma_f32_16x16x2bf16(I16x2, F32x16) {
        mfma_f32_16x16x2bf16_cbsz2_abid3_blgp5: 2, 3, 5;
    }
    "llvm.amdgcn.mfma.f32.4x4x2bf16" fn mfma_f32_4x4x2bf16(I16x2, F32x4) {
        mfma_f32_4x4x2bf16_plain: 0, 0, 0;
        mfma_f32_4x4x2bf16_cbsz4_abid11: 4, 11, 0;
    }
    "llvm.amdgcn.mfma.f32.32x32x4bf16" fn mfma_f32_32x32x4bf16(I16x2, F32x16) {
        mfma_f32_32x32x4bf16_blgp1: 0, 0, 1;
    }
    "llvm.amdgcn.mfma.f32.16x16x8bf16" fn mfma_f32_16x16x8bf16(I16x2, F32x4) {
        mfma_f32_16x16x8bf16_plain: 0, 0, 0;
        mfma_f32_16x16x8bf16_blgp7: 0, 0, 7;
    }
}
