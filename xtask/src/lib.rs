//! The library behind `cargo xtask`: building the device crates per gfx
//! target, the targets' limits, the code-object report, and the
//! simulator's instruction coverage and benchmark, and the Debian packages
//! the tests fetch (`debian`: rocBLAS's catalog, ROCr's headers and runtime).
//!
//! It is a library so the test crate's build script can run the very same
//! device build (without the command-line front end, feature `cli`).

// The GEMM checks read and write f16 with Rust's own (nightly) `f16`.
#![feature(f16)]

pub mod atomics_ir;
pub mod catalog_bench;
pub mod catalog_queries;
pub mod catalog_write;
pub mod debian;
pub mod device_build;
pub mod gemm_catalog;
pub mod gemm_model;
pub mod gemm_report;
pub mod hipblaslt_catalog;
pub mod isa_tables;
pub mod offload_bundle;
pub mod report;
pub mod rng;
pub mod rocblas_catalog;
pub mod rocblas_kernels;
pub mod rocr;
pub mod sim_bench;
pub mod sim_coverage;
pub mod targets;
pub mod tensile_gemm;

use std::path::PathBuf;

/// The workspace root, fixed when xtask was compiled.
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
