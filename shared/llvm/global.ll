; Loads and stores in the global and constant address spaces, for the
; device library's hot paths (`aqueduct_abi::global`, and the views'
; word accessors built on it).
;
; Rust has no pointer type in an address space, so its own loads and stores
; are flat (generic): each addresses memory through a 64-bit VGPR pair, and
; a value loaded that way counts as per-work-item to the compiler. Through
; these wrappers, always inlined:
;
; - a global access takes the global instructions' SADDR form (a 64-bit SGPR
;   base plus a 32-bit VGPR offset) where the address is a wave-uniform base
;   plus a 32-bit offset, which saves the per-lane 64-bit address arithmetic
;   (AMDGPUUsage, "Address Spaces": global memory is visible to all agents;
;   the ISA documents' "Flat, Scratch and Global Instructions": SADDR);
; - an invariant load goes through the constant address space with
;   !invariant.load, so at a wave-uniform address it is a scalar load
;   (s_load) into SGPRs. Only for memory that does not change while the
;   kernel runs, and that nothing wrote in it before: the scalar cache is
;   not kept coherent with vector stores, and LLVM may move such a load
;   above a store. AMDGPUUsage's memory model sections (GFX942, GFX90A,
;   GFX10-GFX11, GFX12) use scalar loads only for memory that cannot change
;   during a dispatch, and have the command processor invalidate the scalar
;   cache between dispatches (at a packet's acquire fence of agent scope or
;   wider, which every packet of the block-issue kernel has).
;
; Attributes are written inline: the shims are linked as one file, where
; numbered attribute groups or metadata of different files would collide.

define linkonce_odr i32 @aqueduct_load_invariant_u32(ptr %p) alwaysinline nounwind willreturn memory(argmem: read) {
  %c = addrspacecast ptr %p to ptr addrspace(4)
  %v = load i32, ptr addrspace(4) %c, align 4, !invariant.load !{}
  ret i32 %v
}

define linkonce_odr i64 @aqueduct_load_invariant_u64(ptr %p) alwaysinline nounwind willreturn memory(argmem: read) {
  %c = addrspacecast ptr %p to ptr addrspace(4)
  %v = load i64, ptr addrspace(4) %c, align 8, !invariant.load !{}
  ret i64 %v
}

define linkonce_odr i32 @aqueduct_global_load_u32(ptr %p) alwaysinline nounwind willreturn memory(argmem: read) {
  %g = addrspacecast ptr %p to ptr addrspace(1)
  %v = load i32, ptr addrspace(1) %g, align 4
  ret i32 %v
}

define linkonce_odr i64 @aqueduct_global_load_u64(ptr %p) alwaysinline nounwind willreturn memory(argmem: read) {
  %g = addrspacecast ptr %p to ptr addrspace(1)
  %v = load i64, ptr addrspace(1) %g, align 8
  ret i64 %v
}

define linkonce_odr void @aqueduct_global_store_u32(ptr %p, i32 %v) alwaysinline nounwind willreturn memory(argmem: write) {
  %g = addrspacecast ptr %p to ptr addrspace(1)
  store i32 %v, ptr addrspace(1) %g, align 4
  ret void
}

define linkonce_odr void @aqueduct_global_store_u64(ptr %p, i64 %v) alwaysinline nounwind willreturn memory(argmem: write) {
  %g = addrspacecast ptr %p to ptr addrspace(1)
  store i64 %v, ptr addrspace(1) %g, align 8
  ret void
}

; A system-scope release store (LLVM's default syncscope is system): what
; publishes an AQL packet's header, its body being visible first.
define linkonce_odr void @aqueduct_global_store_release_u32(ptr %p, i32 %v) alwaysinline nounwind willreturn {
  %g = addrspacecast ptr %p to ptr addrspace(1)
  store atomic i32 %v, ptr addrspace(1) %g release, align 4
  ret void
}
