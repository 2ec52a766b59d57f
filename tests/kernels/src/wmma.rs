//! Wave matrix multiply-accumulate (WMMA) kernels of gfx1100 and gfx1201:
//! each runs one `v_wmma_*` of one wave32 wave on operands loaded from
//! memory, so tests/tests/sim_wmma.rs can check the simulator's register
//! layouts against a scalar model of AMD's matrix instruction calculator.
//!
//! Every kernel is `fn(a, b, c, d)`, launched as one wave of 32
//! work-items: lane `l` loads its A registers `a[l]`, its B registers
//! `b[l]` and its C registers `c[l]` (register `r` of lane `l` is element
//! `r` of `c[l]`), and stores D the same way to `d[l]`.
//!
//! The instructions are reached through their LLVM intrinsics
//! (IntrinsicsAMDGPU.td: `AMDGPUWmmaIntrinsic`, `…OPSEL` with the 16-bit
//! outputs' half, `…IU` with the integer operands' signs and the clamp),
//! declared with the types LLVM gives each target: GFX11 holds a whole
//! 16-element row per lane (`<16 x half>`), GFX12 half a row
//! (`<8 x half>`). The flags are `immarg`s, written as literals at each
//! call.

use core::arch::amdgpu::workitem_id_x;

vectors! {
    F32x8 = [f32; 8];
    I32x8 = [i32; 8];
    I32x2 = [i32; 2];
}

#[cfg(aqueduct_gfx = "gfx1100")]
vectors! {
    F16x16 = [f16; 16];
    I16x16 = [i16; 16];
    I32x4 = [i32; 4];
}

#[cfg(aqueduct_gfx = "gfx1201")]
vectors! {
    F16x8 = [f16; 8];
    I16x8 = [i16; 8];
}

/// One kernel per call: `name(a, b, c, d)` runs `call` on lane `l`'s
/// `a[l]`, `b[l]`, `c[l]` and stores the result to `d[l]`.
macro_rules! kernel {
    ($name:ident($ab:ty, $cd:ty) => |$a:ident, $b:ident, $c:ident| $call:expr) => {
        #[doc = concat!("`", stringify!($call), "` (module doc: one wave32 wave, registers by lane).")]
        #[unsafe(no_mangle)]
        pub extern "gpu-kernel" fn $name(a: *const $ab, b: *const $ab, c: *const $cd, d: *mut $cd) {
            let lane = workitem_id_x() as usize;
            // SAFETY: the test gives every buffer one element per lane of
            // the single 32-lane wave it launches; the intrinsics' types
            // are LLVM's for this target and their immargs literals.
            unsafe {
                let ($a, $b, $c) = (a.add(lane).read(), b.add(lane).read(), c.add(lane).read());
                d.add(lane).write($call);
            }
        }
    };
}

#[cfg(aqueduct_gfx = "gfx1100")]
mod gfx11 {
    use super::*;

    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16"]
        fn f32_f16(a: F16x16, b: F16x16, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v16i16"]
        fn f32_bf16(a: I16x16, b: I16x16, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f16.16x16x16.f16.v16f16.v16f16"]
        fn f16_f16(a: F16x16, b: F16x16, c: F16x16, high: bool) -> F16x16;
        #[link_name = "llvm.amdgcn.wmma.bf16.16x16x16.bf16.v16i16.v16i16"]
        fn bf16_bf16(a: I16x16, b: I16x16, c: I16x16, high: bool) -> I16x16;
        #[link_name = "llvm.amdgcn.wmma.i32.16x16x16.iu8.v8i32.v4i32"]
        fn i32_iu8(
            a_signed: bool,
            a: I32x4,
            b_signed: bool,
            b: I32x4,
            c: I32x8,
            clamp: bool,
        ) -> I32x8;
        #[link_name = "llvm.amdgcn.wmma.i32.16x16x16.iu4.v8i32.v2i32"]
        fn i32_iu4(
            a_signed: bool,
            a: I32x2,
            b_signed: bool,
            b: I32x2,
            c: I32x8,
            clamp: bool,
        ) -> I32x8;
    }

    kernel!(wmma_gfx11_f32_f16(F16x16, F32x8) => |a, b, c| f32_f16(a, b, c));
    kernel!(wmma_gfx11_f32_bf16(I16x16, F32x8) => |a, b, c| f32_bf16(a, b, c));
    kernel!(wmma_gfx11_f16_f16_lo(F16x16, F16x16) => |a, b, c| f16_f16(a, b, c, false));
    kernel!(wmma_gfx11_f16_f16_hi(F16x16, F16x16) => |a, b, c| f16_f16(a, b, c, true));
    kernel!(wmma_gfx11_bf16_bf16_hi(I16x16, I16x16) => |a, b, c| bf16_bf16(a, b, c, true));
    kernel!(wmma_gfx11_i32_iu8_su(I32x4, I32x8) => |a, b, c| i32_iu8(true, a, false, b, c, false));
    kernel!(wmma_gfx11_i32_iu8_us_clamp(I32x4, I32x8) => |a, b, c| i32_iu8(false, a, true, b, c, true));
    kernel!(wmma_gfx11_i32_iu4_ss(I32x2, I32x8) => |a, b, c| i32_iu4(true, a, true, b, c, false));
}

#[cfg(aqueduct_gfx = "gfx1201")]
mod gfx12 {
    use super::*;

    unsafe extern "C" {
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v8f16"]
        fn f32_f16(a: F16x8, b: F16x8, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v8i16"]
        fn f32_bf16(a: I16x8, b: I16x8, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f16.16x16x16.f16.v8f16.v8f16"]
        fn f16_f16(a: F16x8, b: F16x8, c: F16x8, high: bool) -> F16x8;
        #[link_name = "llvm.amdgcn.wmma.bf16.16x16x16.bf16.v8i16.v8i16"]
        fn bf16_bf16(a: I16x8, b: I16x8, c: I16x8, high: bool) -> I16x8;
        #[link_name = "llvm.amdgcn.wmma.i32.16x16x16.iu8.v8i32.v2i32"]
        fn i32_iu8(
            a_signed: bool,
            a: I32x2,
            b_signed: bool,
            b: I32x2,
            c: I32x8,
            clamp: bool,
        ) -> I32x8;
        #[link_name = "llvm.amdgcn.wmma.i32.16x16x16.iu4.v8i32.i32"]
        fn i32_iu4(a_signed: bool, a: i32, b_signed: bool, b: i32, c: I32x8, clamp: bool) -> I32x8;
        #[link_name = "llvm.amdgcn.wmma.i32.16x16x32.iu4.v8i32.v2i32"]
        fn i32_iu4_k32(
            a_signed: bool,
            a: I32x2,
            b_signed: bool,
            b: I32x2,
            c: I32x8,
            clamp: bool,
        ) -> I32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.fp8.fp8.v8f32.v2i32"]
        fn fp8_fp8(a: I32x2, b: I32x2, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.fp8.bf8.v8f32.v2i32"]
        fn fp8_bf8(a: I32x2, b: I32x2, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf8.fp8.v8f32.v2i32"]
        fn bf8_fp8(a: I32x2, b: I32x2, c: F32x8) -> F32x8;
        #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf8.bf8.v8f32.v2i32"]
        fn bf8_bf8(a: I32x2, b: I32x2, c: F32x8) -> F32x8;
    }

    kernel!(wmma_gfx12_f32_f16(F16x8, F32x8) => |a, b, c| f32_f16(a, b, c));
    kernel!(wmma_gfx12_f32_bf16(I16x8, F32x8) => |a, b, c| f32_bf16(a, b, c));
    kernel!(wmma_gfx12_f16_f16(F16x8, F16x8) => |a, b, c| f16_f16(a, b, c, false));
    kernel!(wmma_gfx12_bf16_bf16(I16x8, I16x8) => |a, b, c| bf16_bf16(a, b, c, false));
    kernel!(wmma_gfx12_i32_iu8_su(I32x2, I32x8) => |a, b, c| i32_iu8(true, a, false, b, c, false));
    kernel!(wmma_gfx12_i32_iu8_us_clamp(I32x2, I32x8) => |a, b, c| i32_iu8(false, a, true, b, c, true));
    kernel!(wmma_gfx12_i32_iu4_ss(i32, I32x8) => |a, b, c| i32_iu4(true, a, true, b, c, false));
    kernel!(wmma_gfx12_i32_iu4_k32_us(I32x2, I32x8) => |a, b, c| i32_iu4_k32(false, a, true, b, c, false));
    kernel!(wmma_gfx12_f32_fp8_fp8(I32x2, F32x8) => |a, b, c| fp8_fp8(a, b, c));
    kernel!(wmma_gfx12_f32_fp8_bf8(I32x2, F32x8) => |a, b, c| fp8_bf8(a, b, c));
    kernel!(wmma_gfx12_f32_bf8_fp8(I32x2, F32x8) => |a, b, c| bf8_fp8(a, b, c));
    kernel!(wmma_gfx12_f32_bf8_bf8(I32x2, F32x8) => |a, b, c| bf8_bf8(a, b, c));
}
