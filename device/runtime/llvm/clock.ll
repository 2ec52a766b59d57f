; The agent's constant-rate clock for trace timestamps (the device
; scheduler's trace ring).
;
; `llvm.readsteadycounter` is LLVM's target-independent name for it: the
; AMDGPU backend selects `s_memrealtime` on GFX9/GFX10 and `s_sendmsg_rtn_b64
; MSG_RTN_GET_REALTIME` on GFX11 and later, which have no s_memrealtime (LLVM
; AMDGPUUsage; Rust's `core::arch::amdgpu::s_memrealtime` fails to select
; there).

declare i64 @llvm.readsteadycounter()

define linkonce_odr i64 @aqueduct_realtime() #3 {
  %t = call i64 @llvm.readsteadycounter()
  ret i64 %t
}

attributes #3 = { alwaysinline nounwind willreturn }
