; LLVM IR for the test kernels' workgroup-shared memory and barrier.
;
; Rust cannot declare a static in address space 3 (LDS), and its only
; barrier, core::arch::amdgpu::s_barrier, is `llvm.amdgcn.s.barrier`, which
; LLVM treats as touching no memory: LDS accesses may move across it. These
; wrappers fill both gaps. `cargo xtask build` links every crate's llvm/*.ll
; into every code object; everything here is internal or linkonce_odr and
; always inlined, so code objects that do not use it keep none of it (and no
; LDS).

; One u32 per work-item of the largest workgroup (1024, the kernels'
; default max_flat_workgroup_size): 4 KiB of the 64 KiB a workgroup has.
; Every kernel that uses it gets its own copy in its group segment
; (group_segment_fixed_size), as LLVM allocates LDS per kernel.
@aqueduct_test_lds = internal addrspace(3) global [1024 x i32] poison, align 16

; The LDS array as a generic pointer. After inlining, LLVM's
; InferAddressSpaces turns accesses through it back into DS instructions.
define linkonce_odr ptr @aqueduct_test_lds_u32() #0 {
  %g = addrspacecast ptr addrspace(3) @aqueduct_test_lds to ptr
  ret ptr %g
}

; llvm.amdgcn.s.barrier is declared in device/runtime/llvm/intrinsics.ll.

; A workgroup execution and memory barrier, as HIP's __syncthreads: release
; this work-item's earlier workgroup-scope writes, wait for every wave of the
; workgroup, acquire theirs (LLVM AMDGPUUsage, "Memory Model GFX90A/GFX942":
; workgroup-scope fences become s_waitcnt lgkmcnt(0)/vmcnt(0) around
; s_barrier).
define linkonce_odr void @aqueduct_test_workgroup_barrier() #1 {
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  ret void
}

attributes #0 = { alwaysinline nounwind speculatable willreturn memory(none) }
attributes #1 = { alwaysinline convergent nounwind willreturn }
