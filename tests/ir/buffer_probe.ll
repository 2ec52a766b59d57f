; Buffer loads and stores through a V# the test describes (its NUM_RECORDS
; and word 3 come from the kernel arguments), for GFX11 and GFX12:
; tests/tests/sim_system.rs compiles it with llc for gfx1100 and gfx1201 and
; checks each lane's results against the RDNA range-checking rules.
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1), i16, i64, i32)
declare <4 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v4i32(ptr addrspace(8), i32, i32, i32)
declare i8 @llvm.amdgcn.raw.ptr.buffer.load.i8(ptr addrspace(8), i32, i32, i32)
declare void @llvm.amdgcn.raw.ptr.buffer.store.i32(i32, ptr addrspace(8), i32, i32, i32)
declare i32 @llvm.amdgcn.raw.ptr.buffer.atomic.add.i32(i32, ptr addrspace(8), i32, i32, i32)

; One wave; lane l uses voffset = first + l * step, the SOFFSET `soffset`,
; and buffers of `records` bytes with descriptor word 3 `flags`:
;   out[6 l .. 6 l + 4] = buffer_load_b128 of src at voffset
;   out[6 l + 4]       = buffer_load_u8 of src at voffset + 1
;   dst at voffset     = buffer_store_b32 of l + 1, then
;                        buffer_atomic_add_u32 of 100 there
;   out[6 l + 5]       = what the atomic returned (the value before it)
define amdgpu_kernel void @buffer_probe(ptr addrspace(1) %out, ptr addrspace(1) %src,
    ptr addrspace(1) %dst, i32 %records, i32 %flags, i32 %first, i32 %step, i32 %soffset) #0 {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %ls = mul i32 %l, %step
  %vo = add i32 %first, %ls
  %rec = zext i32 %records to i64
  %rs = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %src, i16 0, i64 %rec, i32 %flags)
  %rd = call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %dst, i16 0, i64 %rec, i32 %flags)
  %v = call <4 x i32> @llvm.amdgcn.raw.ptr.buffer.load.v4i32(ptr addrspace(8) %rs, i32 %vo, i32 %soffset, i32 0)
  %vo1 = add i32 %vo, 1
  %b = call i8 @llvm.amdgcn.raw.ptr.buffer.load.i8(ptr addrspace(8) %rs, i32 %vo1, i32 %soffset, i32 0)
  %bz = zext i8 %b to i32
  %l1 = add i32 %l, 1
  call void @llvm.amdgcn.raw.ptr.buffer.store.i32(i32 %l1, ptr addrspace(8) %rd, i32 %vo, i32 %soffset, i32 0)
  %old = call i32 @llvm.amdgcn.raw.ptr.buffer.atomic.add.i32(i32 100, ptr addrspace(8) %rd, i32 %vo, i32 %soffset, i32 0)
  %o = mul i32 %l, 6
  %o64 = zext i32 %o to i64
  %p = getelementptr i32, ptr addrspace(1) %out, i64 %o64
  store <4 x i32> %v, ptr addrspace(1) %p, align 4
  %p4 = getelementptr i32, ptr addrspace(1) %p, i64 4
  store i32 %bz, ptr addrspace(1) %p4
  %p5 = getelementptr i32, ptr addrspace(1) %p, i64 5
  store i32 %old, ptr addrspace(1) %p5
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="32,32" }
