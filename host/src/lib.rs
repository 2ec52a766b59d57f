//! aqueduct: the host side of aqueduct, a thin and safe layer over the HSA
//! runtime, loaded at run time (ROCr on a machine with an AMD GPU, aqueduct's
//! simulator elsewhere: both export the same C functions).
//!
//! - [`System`]: loads the runtime ([`LoadOptions`]: explicit path,
//!   `AQUEDUCT_HSA_LIB`, `$ROCM_PATH/lib`, the system loader path) and holds
//!   one `hsa_init` reference.
//! - [`agent`]: CPU and GPU agents and their properties; [`device`]: device
//!   strings (`amdgpu`, `amdgpu:0`, `amdgpu://GPU-<uuid>,1`) and selection.
//! - [`device_code`]: the code objects `cargo xtask build` wrote, read with
//!   the shared reader (re-exported as [`code_object`]).
//! - [`memory`]: pools and typed allocations ([`DeviceBuffer`],
//!   [`HostBuffer`]), copies; [`Signal`]; [`Queue`] with reservation and
//!   header-last packet emplacement.
//! - [`Executable`] and [`Kernel`]: code objects loaded through the four HSA
//!   calls after a target check; [`Kernargs`] checked against the metadata;
//!   [`Kernel::dispatch`] returning a [`Dispatch`] to wait on.
//! - [`gemm`]: GEMM problems ([`Gemm`]) and the kernel a catalog selects
//!   for them on an agent ([`GemmLibrary`], [`GemmPlan`]).
//!
//! Errors are [`Error`] values: HSA failures carry the call, the status and
//! `hsa_status_string`'s text.

// f16 values of GEMM outputs (the main job's check).
#![feature(f16)]
#![deny(missing_docs)]

pub mod agent;
pub mod command_buffer;
/// Solution catalogs: the `aqueduct-catalog` crate, with [`catalog::GpuDescription`]
/// implemented for agents.
pub use aqueduct_catalog as catalog;
#[cfg(feature = "cli")]
pub mod cli;
pub mod device;
pub mod device_code;
mod dispatch;
mod error;
mod executable;
pub mod gemm;
pub mod hsa;
pub mod job;
pub mod memory;
pub mod queue;
pub mod scheduler;
mod service;
mod signal;
#[cfg(test)]
mod sim_tests;

pub use aqueduct_abi::code_object;
pub use command_buffer::{
    CommandBuffer, CommandBufferBuilder, CommandQueue, IssueMode, Submission, Workgroups,
};
pub use dispatch::{ArgKey, ArgValue, DevicePtr, Dispatch, Kernargs, KernelArgument, Launch};
pub use error::{Error, LoadAttempt, Result};
pub use executable::{AgentIsa, Executable, Kernel, check_target};
pub use gemm::{Gemm, GemmLibrary, GemmPlan};
pub use hsa::{LoadOptions, Runtime, System};
pub use memory::{DeviceBuffer, HostBuffer, MemoryPool, PoolKind};
pub use queue::{Queue, Reservation};
pub use scheduler::{
    Allocation, Device, DeviceOptions, DeviceQueue, DeviceTrace, LogicalDevice, Semaphore,
};
pub use signal::{LoadOrder, RmwOrder, Signal, StoreOrder, WaitOrder};

// The handles may cross threads: HSA's functions are thread-safe, queues are
// multi-producer, and buffers are plain memory.
#[cfg(test)]
mod thread_safety {
    static_assertions::assert_impl_all!(crate::System: Send, Sync);
    static_assertions::assert_impl_all!(crate::agent::Agent: Send, Sync);
    static_assertions::assert_impl_all!(crate::Signal: Send, Sync);
    static_assertions::assert_impl_all!(crate::Queue: Send, Sync);
    static_assertions::assert_impl_all!(crate::Executable: Send, Sync);
    static_assertions::assert_impl_all!(crate::Kernel: Send, Sync);
    static_assertions::assert_impl_all!(crate::DeviceBuffer<f32>: Send, Sync);
    static_assertions::assert_impl_all!(crate::HostBuffer<u8>: Send, Sync);
    static_assertions::assert_impl_all!(crate::Dispatch: Send, Sync);
    static_assertions::assert_impl_all!(crate::MemoryPool: Send, Sync);
    static_assertions::assert_impl_all!(crate::Device: Send, Sync);
    static_assertions::assert_impl_all!(crate::DeviceQueue: Send, Sync);
    static_assertions::assert_impl_all!(crate::Semaphore: Send, Sync);
    static_assertions::assert_impl_all!(crate::LogicalDevice: Send, Sync);
    static_assertions::assert_impl_all!(crate::Allocation: Send, Sync);
}
