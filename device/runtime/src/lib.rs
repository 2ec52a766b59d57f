//! aqueduct's device library.
//!
//! Everything here is `#![no_std]` and compiles for two targets:
//!
//! - `amdgcn-amd-amdhsa`, where `cargo xtask build` turns the crate into one
//!   code object per gfx target (`target/amdgpu/<gfx>/aqueduct-device.hsaco`);
//! - the host, where the same logic is unit-tested with `cargo test`.
//!
//! The split follows the house rule "device logic is plain Rust first": the
//! logic is safe, host-testable Rust over [views](aqueduct_abi::view) of the
//! shared layouts; only the thin layer of intrinsics (`arch`) and the
//! `extern "gpu-kernel"` entry points (`kernels`) is
//! `#[cfg(target_arch = "amdgpu")]`.
//!
//! | module | what it is |
//! |---|---|
//! | [`grid`] | a work-item's place in a 1-D dispatch and the grid-stride loop |
//! | [`queue`] | AQL queue operations from device code: reserve, write, publish, ring |
//! | [`signal`] | HSA signals from device code, with their event mailbox |
//! | [`blit`] | the fill and copy kernels' partitioning of a byte range |
//! | [`command`] | command-buffer issue: a recorded block to AQL packets |
//! | [`scheduler`] | the device scheduler: semaphores, the tick, retire |
//! | `kernels` | every kernel entry point (amdgpu only) |
//! | [`atomic`], [`memory`] | the scoped atomics and global loads of `aqueduct-abi`, re-exported |
#![no_std]
#![cfg_attr(target_arch = "amdgpu", feature(abort_immediate))]
#![cfg_attr(
    all(target_arch = "amdgpu", feature = "kernels"),
    feature(abi_gpu_kernel, stdarch_amdgpu)
)]

/// The layouts the device library shares with host and simulator.
pub use aqueduct_abi as abi;
/// Scoped atomics (the same API the views of shared layouts use).
pub use aqueduct_abi::atomic;
/// Global-memory and scalar loads for hot paths.
pub use aqueduct_abi::global as memory;

pub mod blit;
pub mod command;
pub mod grid;
pub mod queue;
pub mod scheduler;
pub mod signal;

#[cfg(target_arch = "amdgpu")]
mod arch;
#[cfg(all(target_arch = "amdgpu", feature = "kernels"))]
pub mod kernels;

/// The [`aqueduct_abi::ABI_VERSION`] this library was built against, under
/// the symbol the host reads before it instantiates the library
/// ([`aqueduct_abi::code_object::ABI_VERSION_SYMBOL`]).
#[cfg(target_arch = "amdgpu")]
#[unsafe(no_mangle)]
#[used]
pub static aqueduct_abi_version: u32 = aqueduct_abi::ABI_VERSION;
