; LLVM IR linked into every aqueduct code object by `cargo xtask build`.
;
; Rust has no pointer type in address space 4 (constant), so it cannot declare
; AMDGPU intrinsics that return one. These wrappers call them and cast to a
; generic pointer; they are always inlined, so after `opt` no call remains and
; the kernel descriptor enables exactly the SGPRs the intrinsic needs.

declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()

; The kernel's own AQL kernel dispatch packet (HSA spec 2.9.6; LLVM AMDGPU
; guide, "Initial Kernel Execution State": dispatch ptr).
define linkonce_odr ptr @aqueduct_dispatch_ptr() #0 {
  %p = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %g = addrspacecast ptr addrspace(4) %p to ptr
  ret ptr %g
}

attributes #0 = { alwaysinline nounwind speculatable willreturn memory(none) }
