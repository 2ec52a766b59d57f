//! The C ABI of `libhsa-runtime64`, as `aqueduct_abi::hsa_api` defines it
//! once for the host, the simulator and the tests; re-exported here so the
//! host's layers (and users who need a raw value) reach it as
//! `aqueduct::hsa::ffi`.

pub use aqueduct_abi::hsa_api::*;

/// Resolves every function of [`Api`] from `lib`; the first missing symbol
/// is the error.
///
/// # Safety
/// `lib` must be an HSA runtime: each symbol must have the C signature the
/// table declares. The pointers are valid while `lib` stays loaded.
pub(crate) unsafe fn resolve(lib: &libloading::Library) -> Result<Api, &'static str> {
    // SAFETY: per the caller's contract; a symbol looked up as a data
    // pointer is the function's address.
    unsafe {
        Api::resolve(|name| {
            lib.get::<*const c_void>(name.to_bytes_with_nul())
                .ok()
                .map(|symbol| *symbol)
        })
    }
}
