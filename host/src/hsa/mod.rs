//! The HSA runtime, loaded at run time: ROCr on a machine with an AMD GPU,
//! aqueduct's simulator elsewhere. Both export the same C functions.

pub(crate) mod checked;
pub mod ffi;
mod system;
#[cfg(test)]
pub(crate) mod testing;

pub use system::{KernelStats, LoadOptions, Runtime, System};
