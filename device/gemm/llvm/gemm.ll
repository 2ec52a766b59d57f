; LLVM IR for the GEMM kernels' workgroup-shared tiles and barrier.
;
; Rust cannot declare a static in address space 3 (LDS), and its only
; barrier, core::arch::amdgpu::s_barrier, is `llvm.amdgcn.s.barrier`, which
; LLVM treats as touching no memory. `cargo xtask build` links every crate's
; llvm/*.ll into every code object; everything here is internal or
; linkonce_odr and always inlined, so code objects that do not use it keep
; none of it (and no LDS).

; The FMA kernel's A and B tiles: 64 × 8 and 8 × 64 f32 (4 KiB).
@aqueduct_gemm_fma_tiles = internal addrspace(3) global [1024 x float] poison, align 16

; The tiles as a generic pointer. After inlining, LLVM's InferAddressSpaces
; turns accesses through it back into DS instructions.
define linkonce_odr ptr @aqueduct_gemm_fma_tiles_ptr() #0 {
  %g = addrspacecast ptr addrspace(3) @aqueduct_gemm_fma_tiles to ptr
  ret ptr %g
}

; The MFMA kernels' LDS, one array per kernel of its macro-tile's size, is
; not here: `cargo xtask build` writes it from the kernel table
; (aqueduct_gemm::mfma::write_lds_ir).

; llvm.amdgcn.s.barrier is declared in device/runtime/llvm/intrinsics.ll.

; A workgroup execution and memory barrier (release, s_barrier, acquire at
; workgroup scope; LLVM AMDGPUUsage, "Memory Model GFX90A/GFX942").
define linkonce_odr void @aqueduct_gemm_barrier() #1 {
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  ret void
}

; gfx950's doubled-K bf16 MFMA (CDNA4 ISA: v_mfma_f32_32x32x16_bf16, eight
; bf16 a lane). Its intrinsic takes <8 x bfloat>, a type Rust cannot name:
; the MFMA kernels pass the lane's 16 bytes as <4 x i32> and this wrapper
; reinterprets them. Only gfx950's code object calls it; elsewhere `opt`
; drops it unused before `llc` would have to select it.
declare <16 x float> @llvm.amdgcn.mfma.f32.32x32x16.bf16(<8 x bfloat>, <8 x bfloat>, <16 x float>, i32 immarg, i32 immarg, i32 immarg)

define linkonce_odr <16 x float> @aqueduct_gemm_mfma_32x32x16_bf16(<4 x i32> %a, <4 x i32> %b, <16 x float> %c) #0 {
  %a8 = bitcast <4 x i32> %a to <8 x bfloat>
  %b8 = bitcast <4 x i32> %b to <8 x bfloat>
  %d = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x16.bf16(<8 x bfloat> %a8, <8 x bfloat> %b8, <16 x float> %c, i32 0, i32 0, i32 0)
  ret <16 x float> %d
}

; gfx950's transposing LDS reads of 16- and 8-bit elements (CDNA4 ISA
; §12.12: ds_read_b64_tr_b16, ds_read_b64_tr_b8). Their intrinsics take an
; LDS pointer, which Rust cannot name: the MFMA kernels pass a generic
; pointer into their LDS array, which these wrappers cast back (after
; inlining the casts fold to the array's own address). Convergent: the
; reads exchange data across lanes and need EXEC all ones. Only gfx950's
; code object calls them.
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3))

define linkonce_odr i64 @aqueduct_gemm_ds_read_tr16_b64(ptr %p) #4 {
  %l = addrspacecast ptr %p to ptr addrspace(3)
  %v = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %l)
  %w = bitcast <4 x i16> %v to i64
  ret i64 %w
}

define linkonce_odr i64 @aqueduct_gemm_ds_read_tr8_b64(ptr %p) #4 {
  %l = addrspacecast ptr %p to ptr addrspace(3)
  %v = call <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3) %l)
  %w = bitcast <2 x i32> %v to i64
  ret i64 %w
}

attributes #0 = { alwaysinline nounwind speculatable willreturn memory(none) }
attributes #1 = { alwaysinline convergent nounwind willreturn }
attributes #4 = { alwaysinline convergent nounwind willreturn memory(argmem: read) }
