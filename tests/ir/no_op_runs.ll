; Runs of no-op instructions (waits and hints the simulator counts without
; dispatching each), a branch that lands inside a run and one that skips
; part of it: tests/tests/sim_system.rs compiles this with llc for a GFX9
; and a GFX12 target and checks the dispatch's instruction and lane-op
; counts against the count of the path below, instruction by instruction.
;
; Executed path (16 wave-instructions):
;   s_nop 0, s_nop 0                        2   (a run at the entry)
;   s_mov_b32 s0, 0                         1
;   s_nop 0, s_nop 0, s_sleep 0             3   (a run after an instruction)
;   s_cmp_eq_u32 s0, 0                      1
;   s_cbranch_scc1 -> .Lin                  1   (taken: skips two s_nop)
;   .Lin: s_nop 0, s_nop 0                  2   (a run entered by the branch)
;   s_mov_b32 s1, 1                         1
;   s_branch -> .Lend                       1   (skips a run and an s_mov)
;   .Lend: s_nop 0                          1
;   s_mov_b32 s2, 2                         1
;   s_nop 0                                 1   (a run before s_endpgm)
;   s_endpgm                                1   (llc's)
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @no_op_runs() #0 {
entry:
  call void asm sideeffect "s_nop 0\0As_nop 0\0As_mov_b32 s0, 0\0As_nop 0\0As_nop 0\0As_sleep 0\0As_cmp_eq_u32 s0, 0\0As_cbranch_scc1 .Lno_op_in\0As_nop 0\0As_nop 0\0A.Lno_op_in:\0As_nop 0\0As_nop 0\0As_mov_b32 s1, 1\0As_branch .Lno_op_end\0As_nop 0\0As_nop 0\0As_mov_b32 s3, 3\0A.Lno_op_end:\0As_nop 0\0As_mov_b32 s2, 2\0As_nop 0", "~{s0},~{s1},~{s2},~{s3},~{scc}"()
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
