; A wave64 kernel for GFX11/GFX12, written in LLVM IR because the device
; crates are compiled wave32 for RDNA: tests/tests/sim_system.rs compiles it
; with `llc -mattr=+wavefrontsize64` for gfx1100 and gfx1201 and checks the
; simulator's 64-lane waves there (64-bit EXEC and lane masks, ballot,
; readfirstlane/readlane, mbcnt, a divergent branch).
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i64 @llvm.amdgcn.ballot.i64(i1)
declare i32 @llvm.amdgcn.readfirstlane.i32(i32)
declare i32 @llvm.amdgcn.readlane.i32(i32, i32)
declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)
declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)

; out[4 g + 0..4] for work-item g (workgroups of 64):
;   ballot(x odd) low and high dwords, readfirstlane(x), and
;   (x odd ? x * 3 + lane_in_wave : x + readlane(x, 5)) after a divergent branch
define amdgpu_kernel void @wave64_probe(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = shl i32 %wg, 6
  %g = add i32 %base, %tid
  %g64 = zext i32 %g to i64
  %pin = getelementptr i32, ptr addrspace(1) %in, i64 %g64
  %x = load i32, ptr addrspace(1) %pin
  %bit = and i32 %x, 1
  %odd = icmp ne i32 %bit, 0
  %ballot = call i64 @llvm.amdgcn.ballot.i64(i1 %odd)
  %first = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %x)
  %l5 = call i32 @llvm.amdgcn.readlane.i32(i32 %x, i32 5)
  %lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %lane = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)
  br i1 %odd, label %then, label %else
then:
  %t3 = mul i32 %x, 3
  %tv = add i32 %t3, %lane
  br label %join
else:
  %ev = add i32 %x, %l5
  br label %join
join:
  %v = phi i32 [ %tv, %then ], [ %ev, %else ]
  %o = shl i64 %g64, 2
  %p0 = getelementptr i32, ptr addrspace(1) %out, i64 %o
  %blo = trunc i64 %ballot to i32
  %bsh = lshr i64 %ballot, 32
  %bhi = trunc i64 %bsh to i32
  store i32 %blo, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %p0, i64 1
  store i32 %bhi, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %p0, i64 2
  store i32 %first, ptr addrspace(1) %p2
  %p3 = getelementptr i32, ptr addrspace(1) %p0, i64 3
  store i32 %v, ptr addrspace(1) %p3
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="64,64" }
