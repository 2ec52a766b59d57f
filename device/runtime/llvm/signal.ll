; LLVM IR linked into every aqueduct code object by `cargo xtask build`.
;
; The interrupt that tells the host runtime an event fired, as the AMD device
; libraries raise it after posting a signal's event: s_sendmsg with message
; MSG_INTERRUPT (1), the event id from the first active lane in M0. Rust
; cannot pass the message's immediate operand to the intrinsic. Attributes
; are inline: the shims are linked as one file, where numbered attribute
; groups of different files would collide.

declare void @llvm.amdgcn.s.sendmsg(i32 immarg, i32)
declare i32 @llvm.amdgcn.readfirstlane.i32(i32)

define linkonce_odr void @aqueduct_interrupt(i32 %id) alwaysinline nounwind {
  %m0 = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %id)
  call void @llvm.amdgcn.s.sendmsg(i32 1, i32 %m0)
  ret void
}
