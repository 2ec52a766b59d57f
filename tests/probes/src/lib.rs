//! Probe kernels for the memory-model test (`tests/tests/memory_model.rs`):
//! each performs one scoped atomic operation of `aqueduct_device::atomic`
//! on a global pointer (plus the plain accesses that feed it and keep its
//! result), so its disassembly shows the code sequence LLVM's AMDGPU memory
//! model gives that (target, operation, scope, ordering). Built for every
//! default target; never run.
//!
//! Kernel `probe_<op>_<scope>_<ordering>(p: *mut u32, out: *mut u32)`:
//!
//! | op      | body                                                   |
//! |---------|--------------------------------------------------------|
//! | `load`  | `*out = atomic_load(p)`                                 |
//! | `store` | `atomic_store(p, *out)`                                 |
//! | `add`   | `*out = atomic_fetch_add(p, 1)`                         |
//! | `cas`   | `*out = atomic_compare_exchange(p, 0, *out)` (old value) |
//! | `fence` | `let x = *p; fence; *out = x`                           |
#![no_std]
#![cfg_attr(target_arch = "amdgpu", feature(abi_gpu_kernel))]

#[cfg(target_arch = "amdgpu")]
mod probes {
    use aqueduct_device::atomic::*;

    macro_rules! probes {
        ($($name:ident: $op:ident($o:ident, $s:ident);)+) => {$(
            #[unsafe(no_mangle)]
            pub extern "gpu-kernel" fn $name(p: *mut u32, out: *mut u32) {
                probes!(@body $op, $o, $s, p, out);
            }
        )+};
        (@body load, $o:ident, $s:ident, $p:ident, $out:ident) => {
            // SAFETY: the (never run) dispatch gives two valid, aligned
            // words; `p` is only accessed atomically.
            unsafe { $out.write(Atomic::from_ptr($p).load($o, $s)) }
        };
        (@body store, $o:ident, $s:ident, $p:ident, $out:ident) => {
            // SAFETY: as above.
            unsafe { Atomic::from_ptr($p).store($out.read(), $o, $s) }
        };
        (@body add, $o:ident, $s:ident, $p:ident, $out:ident) => {
            // SAFETY: as above.
            unsafe { $out.write(Atomic::from_ptr($p).fetch_add(1, $o, $s)) }
        };
        (@body cas, $o:ident, $s:ident, $p:ident, $out:ident) => {
            // SAFETY: as above.
            unsafe {
                let old = Atomic::from_ptr($p).compare_exchange(0, $out.read(), $o, $s);
                $out.write(old.unwrap_or_else(|x| x));
            }
        };
        (@body fence, $o:ident, $s:ident, $p:ident, $out:ident) => {
            // SAFETY: as above (plain accesses around the fence, which
            // the fence keeps on their sides).
            unsafe {
                let x = $p.read();
                fence($o, $s);
                $out.write(x);
            }
        };
    }

    probes! {
    probe_load_workitem_relaxed: load(Relaxed, WorkItem);
    probe_load_workitem_acquire: load(Acquire, WorkItem);
    probe_load_workitem_seq_cst: load(SeqCst, WorkItem);
    probe_load_wavefront_relaxed: load(Relaxed, Wavefront);
    probe_load_wavefront_acquire: load(Acquire, Wavefront);
    probe_load_wavefront_seq_cst: load(SeqCst, Wavefront);
    probe_load_workgroup_relaxed: load(Relaxed, Workgroup);
    probe_load_workgroup_acquire: load(Acquire, Workgroup);
    probe_load_workgroup_seq_cst: load(SeqCst, Workgroup);
    probe_load_agent_relaxed: load(Relaxed, Agent);
    probe_load_agent_acquire: load(Acquire, Agent);
    probe_load_agent_seq_cst: load(SeqCst, Agent);
    probe_load_system_relaxed: load(Relaxed, System);
    probe_load_system_acquire: load(Acquire, System);
    probe_load_system_seq_cst: load(SeqCst, System);
    probe_store_workitem_relaxed: store(Relaxed, WorkItem);
    probe_store_workitem_release: store(Release, WorkItem);
    probe_store_workitem_seq_cst: store(SeqCst, WorkItem);
    probe_store_wavefront_relaxed: store(Relaxed, Wavefront);
    probe_store_wavefront_release: store(Release, Wavefront);
    probe_store_wavefront_seq_cst: store(SeqCst, Wavefront);
    probe_store_workgroup_relaxed: store(Relaxed, Workgroup);
    probe_store_workgroup_release: store(Release, Workgroup);
    probe_store_workgroup_seq_cst: store(SeqCst, Workgroup);
    probe_store_agent_relaxed: store(Relaxed, Agent);
    probe_store_agent_release: store(Release, Agent);
    probe_store_agent_seq_cst: store(SeqCst, Agent);
    probe_store_system_relaxed: store(Relaxed, System);
    probe_store_system_release: store(Release, System);
    probe_store_system_seq_cst: store(SeqCst, System);
    probe_add_workitem_relaxed: add(Relaxed, WorkItem);
    probe_add_workitem_acquire: add(Acquire, WorkItem);
    probe_add_workitem_release: add(Release, WorkItem);
    probe_add_workitem_acq_rel: add(AcqRel, WorkItem);
    probe_add_workitem_seq_cst: add(SeqCst, WorkItem);
    probe_add_wavefront_relaxed: add(Relaxed, Wavefront);
    probe_add_wavefront_acquire: add(Acquire, Wavefront);
    probe_add_wavefront_release: add(Release, Wavefront);
    probe_add_wavefront_acq_rel: add(AcqRel, Wavefront);
    probe_add_wavefront_seq_cst: add(SeqCst, Wavefront);
    probe_add_workgroup_relaxed: add(Relaxed, Workgroup);
    probe_add_workgroup_acquire: add(Acquire, Workgroup);
    probe_add_workgroup_release: add(Release, Workgroup);
    probe_add_workgroup_acq_rel: add(AcqRel, Workgroup);
    probe_add_workgroup_seq_cst: add(SeqCst, Workgroup);
    probe_add_agent_relaxed: add(Relaxed, Agent);
    probe_add_agent_acquire: add(Acquire, Agent);
    probe_add_agent_release: add(Release, Agent);
    probe_add_agent_acq_rel: add(AcqRel, Agent);
    probe_add_agent_seq_cst: add(SeqCst, Agent);
    probe_add_system_relaxed: add(Relaxed, System);
    probe_add_system_acquire: add(Acquire, System);
    probe_add_system_release: add(Release, System);
    probe_add_system_acq_rel: add(AcqRel, System);
    probe_add_system_seq_cst: add(SeqCst, System);
    probe_cas_workitem_relaxed: cas(Relaxed, WorkItem);
    probe_cas_workitem_acquire: cas(Acquire, WorkItem);
    probe_cas_workitem_release: cas(Release, WorkItem);
    probe_cas_workitem_acq_rel: cas(AcqRel, WorkItem);
    probe_cas_workitem_seq_cst: cas(SeqCst, WorkItem);
    probe_cas_wavefront_relaxed: cas(Relaxed, Wavefront);
    probe_cas_wavefront_acquire: cas(Acquire, Wavefront);
    probe_cas_wavefront_release: cas(Release, Wavefront);
    probe_cas_wavefront_acq_rel: cas(AcqRel, Wavefront);
    probe_cas_wavefront_seq_cst: cas(SeqCst, Wavefront);
    probe_cas_workgroup_relaxed: cas(Relaxed, Workgroup);
    probe_cas_workgroup_acquire: cas(Acquire, Workgroup);
    probe_cas_workgroup_release: cas(Release, Workgroup);
    probe_cas_workgroup_acq_rel: cas(AcqRel, Workgroup);
    probe_cas_workgroup_seq_cst: cas(SeqCst, Workgroup);
    probe_cas_agent_relaxed: cas(Relaxed, Agent);
    probe_cas_agent_acquire: cas(Acquire, Agent);
    probe_cas_agent_release: cas(Release, Agent);
    probe_cas_agent_acq_rel: cas(AcqRel, Agent);
    probe_cas_agent_seq_cst: cas(SeqCst, Agent);
    probe_cas_system_relaxed: cas(Relaxed, System);
    probe_cas_system_acquire: cas(Acquire, System);
    probe_cas_system_release: cas(Release, System);
    probe_cas_system_acq_rel: cas(AcqRel, System);
    probe_cas_system_seq_cst: cas(SeqCst, System);
    probe_fence_workitem_acquire: fence(Acquire, WorkItem);
    probe_fence_workitem_release: fence(Release, WorkItem);
    probe_fence_workitem_acq_rel: fence(AcqRel, WorkItem);
    probe_fence_workitem_seq_cst: fence(SeqCst, WorkItem);
    probe_fence_wavefront_acquire: fence(Acquire, Wavefront);
    probe_fence_wavefront_release: fence(Release, Wavefront);
    probe_fence_wavefront_acq_rel: fence(AcqRel, Wavefront);
    probe_fence_wavefront_seq_cst: fence(SeqCst, Wavefront);
    probe_fence_workgroup_acquire: fence(Acquire, Workgroup);
    probe_fence_workgroup_release: fence(Release, Workgroup);
    probe_fence_workgroup_acq_rel: fence(AcqRel, Workgroup);
    probe_fence_workgroup_seq_cst: fence(SeqCst, Workgroup);
    probe_fence_agent_acquire: fence(Acquire, Agent);
    probe_fence_agent_release: fence(Release, Agent);
    probe_fence_agent_acq_rel: fence(AcqRel, Agent);
    probe_fence_agent_seq_cst: fence(SeqCst, Agent);
    probe_fence_system_acquire: fence(Acquire, System);
    probe_fence_system_release: fence(Release, System);
    probe_fence_system_acq_rel: fence(AcqRel, System);
    probe_fence_system_seq_cst: fence(SeqCst, System);
    }
}
