//! The HSA runtime, loaded at run time: ROCr on a machine with an AMD GPU,
//! aqueduct's simulator elsewhere. Both export the same C functions.

pub(crate) mod checked;
#[cfg(test)]
pub(crate) mod fake;
pub mod ffi;
mod system;

pub use system::{LoadOptions, Runtime, System};
