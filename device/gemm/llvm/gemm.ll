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

attributes #0 = { alwaysinline nounwind speculatable willreturn memory(none) }
attributes #1 = { alwaysinline convergent nounwind willreturn }
