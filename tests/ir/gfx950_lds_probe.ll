; gfx950's transposing LDS reads and loads to LDS, in LLVM IR because
; their intrinsics take LDS pointers the device crates do not form:
; tests/tests/sim_system.rs compiles this with `llc -mcpu=gfx950` and
; checks the simulator against the lane formulas it states.
;
; Every kernel runs one wave of 64 work-items over a 4 KiB LDS image.
;   tr4/tr8/tr16/tr6 (out, in, addr): LDS = in[0..1024]; lane l reads with
;     ds_read_b64_tr_b4/_b8/_b16 or ds_read_b96_tr_b6 at byte addr[l] and
;     stores the 2 (3) dwords to out[4l..].
;   dma4/dma12/dma16 (out, bg, src, idx) and buf12/buf16: LDS = bg; then a
;     load to LDS at LDS byte 256 (global_load_lds_dword/x3/x4, or
;     buffer_load_dwordx3/x4 ... lds through a raw V# over src), lane l
;     reading src at dword idx[l] (plus the instruction offset); then
;     out[0..1024] = LDS.
target triple = "amdgcn-amd-amdhsa"

@lds = internal addrspace(3) global [1024 x i32] poison, align 16

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare void @llvm.amdgcn.s.waitcnt(i32)
declare <2 x i32> @llvm.amdgcn.ds.read.tr4.b64.v2i32(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3))
declare <3 x i32> @llvm.amdgcn.ds.read.tr6.b96.v3i32(ptr addrspace(3))
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare void @llvm.amdgcn.global.load.lds(ptr addrspace(1), ptr addrspace(3), i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32>, ptr addrspace(3), i32, i32, i32, i32, i32)

; Lane %tid copies 64 bytes, %from[16 tid ..] to LDS dword 16 tid, or back.
define internal void @copy_in(ptr addrspace(1) %from, i32 %tid) alwaysinline {
  %b = mul i32 %tid, 4
  br label %loop
loop:
  %j = phi i32 [ 0, %0 ], [ %jn, %loop ]
  %k = add i32 %b, %j
  %src = getelementptr <4 x i32>, ptr addrspace(1) %from, i32 %k
  %v = load <4 x i32>, ptr addrspace(1) %src, align 16
  %dst = getelementptr <4 x i32>, ptr addrspace(3) @lds, i32 %k
  store <4 x i32> %v, ptr addrspace(3) %dst, align 16
  %jn = add i32 %j, 1
  %done = icmp eq i32 %jn, 4
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define internal void @copy_out(ptr addrspace(1) %to, i32 %tid) alwaysinline {
  %b = mul i32 %tid, 4
  br label %loop
loop:
  %j = phi i32 [ 0, %0 ], [ %jn, %loop ]
  %k = add i32 %b, %j
  %src = getelementptr <4 x i32>, ptr addrspace(3) @lds, i32 %k
  %v = load <4 x i32>, ptr addrspace(3) %src, align 16
  %dst = getelementptr <4 x i32>, ptr addrspace(1) %to, i32 %k
  store <4 x i32> %v, ptr addrspace(1) %dst, align 16
  %jn = add i32 %j, 1
  %done = icmp eq i32 %jn, 4
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define internal void @sync() alwaysinline {
  call void @llvm.amdgcn.s.waitcnt(i32 0)
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  ret void
}

; The LDS byte addr[tid], after LDS = in.
define internal ptr addrspace(3) @fill_and_address(ptr addrspace(1) %in, ptr addrspace(1) %addr, i32 %tid) alwaysinline {
  call void @copy_in(ptr addrspace(1) %in, i32 %tid)
  call void @sync()
  %pa = getelementptr i32, ptr addrspace(1) %addr, i32 %tid
  %a = load i32, ptr addrspace(1) %pa
  %p = getelementptr i8, ptr addrspace(3) @lds, i32 %a
  ret ptr addrspace(3) %p
}

define amdgpu_kernel void @tr4(ptr addrspace(1) %out, ptr addrspace(1) %in, ptr addrspace(1) %addr) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = call ptr addrspace(3) @fill_and_address(ptr addrspace(1) %in, ptr addrspace(1) %addr, i32 %tid)
  %v = call <2 x i32> @llvm.amdgcn.ds.read.tr4.b64.v2i32(ptr addrspace(3) %p)
  %po = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %tid
  store <2 x i32> %v, ptr addrspace(1) %po
  ret void
}

define amdgpu_kernel void @tr8(ptr addrspace(1) %out, ptr addrspace(1) %in, ptr addrspace(1) %addr) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = call ptr addrspace(3) @fill_and_address(ptr addrspace(1) %in, ptr addrspace(1) %addr, i32 %tid)
  %v = call <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3) %p)
  %po = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %tid
  store <2 x i32> %v, ptr addrspace(1) %po
  ret void
}

define amdgpu_kernel void @tr16(ptr addrspace(1) %out, ptr addrspace(1) %in, ptr addrspace(1) %addr) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = call ptr addrspace(3) @fill_and_address(ptr addrspace(1) %in, ptr addrspace(1) %addr, i32 %tid)
  %h = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %p)
  %v = bitcast <4 x i16> %h to <2 x i32>
  %po = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %tid
  store <2 x i32> %v, ptr addrspace(1) %po
  ret void
}

define amdgpu_kernel void @tr6(ptr addrspace(1) %out, ptr addrspace(1) %in, ptr addrspace(1) %addr) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = call ptr addrspace(3) @fill_and_address(ptr addrspace(1) %in, ptr addrspace(1) %addr, i32 %tid)
  %v = call <3 x i32> @llvm.amdgcn.ds.read.tr6.b96.v3i32(ptr addrspace(3) %p)
  %po = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %tid
  store <3 x i32> %v, ptr addrspace(1) %po
  ret void
}

; Lane tid's source: src + 4 idx[tid] bytes.
define internal ptr addrspace(1) @source(ptr addrspace(1) %src, ptr addrspace(1) %idx, i32 %tid) alwaysinline {
  %pi = getelementptr i32, ptr addrspace(1) %idx, i32 %tid
  %i = load i32, ptr addrspace(1) %pi
  %s = getelementptr i32, ptr addrspace(1) %src, i32 %i
  ret ptr addrspace(1) %s
}

define amdgpu_kernel void @dma4(ptr addrspace(1) %out, ptr addrspace(1) %bg, ptr addrspace(1) %src, ptr addrspace(1) %idx) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  call void @copy_in(ptr addrspace(1) %bg, i32 %tid)
  %s = call ptr addrspace(1) @source(ptr addrspace(1) %src, ptr addrspace(1) %idx, i32 %tid)
  call void @sync()
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %s, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @lds, i32 256), i32 4, i32 0, i32 0)
  call void @sync()
  call void @copy_out(ptr addrspace(1) %out, i32 %tid)
  ret void
}

define amdgpu_kernel void @dma12(ptr addrspace(1) %out, ptr addrspace(1) %bg, ptr addrspace(1) %src, ptr addrspace(1) %idx) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  call void @copy_in(ptr addrspace(1) %bg, i32 %tid)
  %s = call ptr addrspace(1) @source(ptr addrspace(1) %src, ptr addrspace(1) %idx, i32 %tid)
  call void @sync()
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %s, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @lds, i32 256), i32 12, i32 0, i32 0)
  call void @sync()
  call void @copy_out(ptr addrspace(1) %out, i32 %tid)
  ret void
}

; With an instruction offset of 32, which moves both addresses.
define amdgpu_kernel void @dma16(ptr addrspace(1) %out, ptr addrspace(1) %bg, ptr addrspace(1) %src, ptr addrspace(1) %idx) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  call void @copy_in(ptr addrspace(1) %bg, i32 %tid)
  %s = call ptr addrspace(1) @source(ptr addrspace(1) %src, ptr addrspace(1) %idx, i32 %tid)
  call void @sync()
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %s, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @lds, i32 256), i32 16, i32 32, i32 0)
  call void @sync()
  call void @copy_out(ptr addrspace(1) %out, i32 %tid)
  ret void
}

; A raw V# over src (NUM_RECORDS 0xFFFFFFFF, stride 0, DATA_FORMAT 32).
define internal <4 x i32> @rsrc(ptr addrspace(1) %src) alwaysinline {
  %a = ptrtoint ptr addrspace(1) %src to i64
  %lo = trunc i64 %a to i32
  %sh = lshr i64 %a, 32
  %hi = trunc i64 %sh to i32
  %r0 = insertelement <4 x i32> poison, i32 %lo, i32 0
  %r1 = insertelement <4 x i32> %r0, i32 %hi, i32 1
  %r2 = insertelement <4 x i32> %r1, i32 -1, i32 2
  %r3 = insertelement <4 x i32> %r2, i32 159744, i32 3
  ret <4 x i32> %r3
}

define internal i32 @voffset(ptr addrspace(1) %idx, i32 %tid) alwaysinline {
  %pi = getelementptr i32, ptr addrspace(1) %idx, i32 %tid
  %i = load i32, ptr addrspace(1) %pi
  %o = shl i32 %i, 2
  ret i32 %o
}

define amdgpu_kernel void @buf12(ptr addrspace(1) %out, ptr addrspace(1) %bg, ptr addrspace(1) %src, ptr addrspace(1) %idx) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  call void @copy_in(ptr addrspace(1) %bg, i32 %tid)
  %r = call <4 x i32> @rsrc(ptr addrspace(1) %src)
  %o = call i32 @voffset(ptr addrspace(1) %idx, i32 %tid)
  call void @sync()
  call void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32> %r, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @lds, i32 256), i32 12, i32 %o, i32 0, i32 0, i32 0)
  call void @sync()
  call void @copy_out(ptr addrspace(1) %out, i32 %tid)
  ret void
}

define amdgpu_kernel void @buf16(ptr addrspace(1) %out, ptr addrspace(1) %bg, ptr addrspace(1) %src, ptr addrspace(1) %idx) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  call void @copy_in(ptr addrspace(1) %bg, i32 %tid)
  %r = call <4 x i32> @rsrc(ptr addrspace(1) %src)
  %o = call i32 @voffset(ptr addrspace(1) %idx, i32 %tid)
  call void @sync()
  call void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32> %r, ptr addrspace(3) getelementptr (i8, ptr addrspace(3) @lds, i32 256), i32 16, i32 %o, i32 0, i32 32, i32 0)
  call void @sync()
  call void @copy_out(ptr addrspace(1) %out, i32 %tid)
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="64,64" }
