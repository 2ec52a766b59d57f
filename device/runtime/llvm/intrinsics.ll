; Declarations of LLVM intrinsics more than one crate's IR uses. `cargo
; xtask build` concatenates every crate's llvm/*.ll into one file, where a
; second `declare` of the same intrinsic is an error, so each lives here once.

declare void @llvm.amdgcn.s.barrier() #2

attributes #2 = { convergent nounwind willreturn }
