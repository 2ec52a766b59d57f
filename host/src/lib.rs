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
//!
//! Errors are [`Error`] values: HSA failures carry the call, the status and
//! `hsa_status_string`'s text.

pub mod agent;
pub mod device;
pub mod device_code;
mod error;
pub mod hsa;

pub use aqueduct_abi::code_object;
pub use error::{Error, LoadAttempt, Result};
pub use hsa::{LoadOptions, Runtime, System};
