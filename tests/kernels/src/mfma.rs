//! MFMA test kernels: load A, B and C from memory, run one matrix
//! instruction, store D (see tests/tests/sim_mfma.rs).

/// Placeholder so the module is not empty until the MFMA kernels land.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn mfma_probe_nop() {}
