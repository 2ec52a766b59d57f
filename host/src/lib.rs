//! aqueduct: the host side of aqueduct, a thin and safe layer over the HSA
//! runtime (loaded at run time, ROCr or aqueduct's simulator alike).
//!
//! Today it holds what the build pipeline needs on the host: finding the code
//! objects `cargo xtask build` wrote ([`device_code`]) and reading them with
//! the shared reader (re-exported as [`code_object`]). The HSA layers come
//! with their own issue.

pub mod device_code;

pub use aqueduct_abi::code_object;
