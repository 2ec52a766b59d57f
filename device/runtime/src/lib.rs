//! aqueduct's device library.
//!
//! Everything here is `#![no_std]` and compiles for two targets:
//!
//! - `amdgcn-amd-amdhsa`, where `cargo xtask build` turns the crate into one
//!   code object per gfx target (`target/amdgpu/<gfx>/aqueduct-device.hsaco`);
//! - the host, where the same logic is unit-tested with `cargo test`.
//!
//! The split follows the house rule "device logic is plain Rust first": index
//! arithmetic and (later) command translation and scheduling live in safe,
//! host-testable modules such as [`grid`]; only the thin layer of intrinsics
//! and `extern "gpu-kernel"` entry points is `#[cfg(target_arch = "amdgpu")]`.
#![no_std]
#![cfg_attr(
    target_arch = "amdgpu",
    feature(abi_gpu_kernel, stdarch_amdgpu, abort_immediate)
)]

/// The layouts the device library shares with host and simulator.
pub use aqueduct_abi as abi;

pub mod atomic;
pub mod blit;
pub mod command;
pub mod grid;
pub mod memory;
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
