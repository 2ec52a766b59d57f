//! aqueduct: the host side of aqueduct, a thin and safe layer over the HSA
//! runtime, loaded at run time (ROCr on a machine with an AMD GPU, aqueduct's
//! simulator elsewhere: both export the same C functions).
//!
//! The whole API, one line each (in "device", the word means the GPU, as in
//! HSA: a [`PhysicalDevice`] is one GPU, a [`DeviceBuffer`] lives in its
//! memory, the `aqueduct-device` crate is the code that runs on it):
//!
//! | area | where | what |
//! |---|---|---|
//! | runtime | [`hsa`], [`System`], [`LoadOptions`] | loads libhsa-runtime64 (explicit path, `AQUEDUCT_HSA_LIB`, `$ROCM_PATH/lib`, the loader path) and holds one `hsa_init` reference; [`Error`] carries the call, status and its text |
//! | agents | [`agent`], [`device_spec`] | CPU and GPU agents and their properties; device strings (`amdgpu`, `amdgpu:0`, `amdgpu://GPU-<uuid>,1`) that select GPUs |
//! | memory | [`memory`], [`MemoryPool`], [`DeviceBuffer`], [`HostBuffer`] | pools and typed allocations (device-only or host-accessible), copies |
//! | signals | [`Signal`] | HSA signals with explicit memory orders |
//! | queues | [`queue`], [`Queue`] | AQL queues: reservation with a timeout, header-last packet emplacement |
//! | code | [`device_code`], [`code_object`], [`Executable`], [`Kernel`], [`Kernargs`] | finding the code objects `cargo xtask build` wrote, loading them after a target check, kernel arguments checked against the metadata, [`Kernel::dispatch`] |
//! | command buffers | [`command_buffer`], [`CommandBufferBuilder`], [`CommandBuffer`], [`CommandQueue`] | recorded once into device memory, each command checked; issued on the device by the device library, from a host queue |
//! | scheduler | [`scheduler`], [`PhysicalDevice`], [`DeviceQueue`], [`Semaphore`], [`LogicalDevice`] | the device scheduler on each GPU: entries ordered by timeline semaphores and issued by the GPU itself, queue-ordered allocations, traces |
//! | GEMM | [`gemm`], [`Gemm`], [`GemmLibrary`], [`GemmPlan`] | GEMM problems and the kernel a catalog selects for them on an agent |
//! | catalogs | [`catalog`] | Tensile and TensileLite solution catalogs (the `aqueduct-catalog` crate) |
//! | the job | [`job`] | the main job: a GEMM through the device scheduler, checked against an f64 CPU reference, reported (`cargo xtask run`, `aqueduct gemm`) |
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
pub mod device_code;
pub mod device_spec;
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
    Allocation, DeviceQueue, DeviceTrace, LogicalDevice, PhysicalDevice, PhysicalDeviceOptions,
    Semaphore,
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
    static_assertions::assert_impl_all!(crate::PhysicalDevice: Send, Sync);
    static_assertions::assert_impl_all!(crate::DeviceQueue: Send, Sync);
    static_assertions::assert_impl_all!(crate::Semaphore: Send, Sync);
    static_assertions::assert_impl_all!(crate::LogicalDevice: Send, Sync);
    static_assertions::assert_impl_all!(crate::Allocation: Send, Sync);
}
