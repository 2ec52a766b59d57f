//! aqueduct-abi: the layouts that cross between host, device code and the
//! simulator, defined once.
//!
//! `#![no_std]` so the device crates compile it for `amdgcn-amd-amdhsa`; its
//! only dependencies are `zerocopy` and `static_assertions`. With the `reader`
//! feature (host side only, needs `alloc`) it also carries the one
//! code-object reader that host, simulator and xtask share.
#![no_std]

#[cfg(feature = "reader")]
extern crate alloc;

pub mod kernel_descriptor;

#[cfg(feature = "reader")]
pub mod code_object;
