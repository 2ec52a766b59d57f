//! aqueduct-abi: the layouts that cross between host, device code and the
//! simulator, defined once.
//!
//! `#![no_std]` so the device crates compile it for `amdgcn-amd-amdhsa`; its
//! only dependencies are `zerocopy` and `bitflags`.
//!
//! - [`hsa`], [`aql`], [`amd_queue`], [`amd_signal`]: mirrors of the HSA and
//!   ROCr structures (`hsa.h`, `hsa_ext_amd.h`, `amd_hsa_queue.h`,
//!   `amd_hsa_signal.h`), checked against the installed ROCr headers by
//!   `tests/tests/rocr_headers.rs`.
//! - [`hsa_api`]: the C interface of `libhsa-runtime64` (status codes,
//!   enumerators, handles, the function table) that the host shim resolves
//!   and the simulator exports.
//! - [`aql_ring`]: the AQL ring protocol's arithmetic (room, slots,
//!   publication, doorbell values) that producers and the packet processor
//!   share.
//! - [`packet`]: validating builders for AQL packets.
//! - [`kernel_descriptor`]: the 64-byte AMDHSA kernel descriptor.
//! - [`gfx`]: per-processor facts (waves, registers, LDS, matrix cores,
//!   target features) and the GPU products behind PCI chip IDs.
//! - [`gemm`]: the kernel arguments of aqueduct's GEMM kernels.
//! - [`command`], [`scheduler`]: aqueduct's own command-buffer and scheduler
//!   layouts, versioned by [`ABI_VERSION`].
//! - [`view`]: typed views of the layouts in memory others also write (the
//!   one way host, device code and simulator reach their fields), over
//!   [`atomic`] (scoped atomics) and [`global`] (the device's global and
//!   scalar loads).
//!
//! Conventions: every type is `#[repr(C)]` with compile-time assertions on its
//! size, alignment and field offsets, each saying why they are fixed (an
//! outside ABI and its header, an AQL slot, a shared line). Pointers that
//! cross the host/device line are `u64` addresses (the HSA "large model":
//! `void*` is 8 bytes on both sides), so layouts are the same on x86-64 and
//! amdgcn and every type can be read from raw bytes with zerocopy.
//! Enumerations read from memory are newtypes over their integer with named
//! constants (any value is representable), flags are `bitflags` types over a
//! plain integer that keep unknown bits.
//!
//! With the `reader` feature (host side only, needs `alloc`) the crate also
//! carries the one code-object reader that host, simulator and xtask share.
#![no_std]
#![deny(missing_docs)]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu))]

#[cfg(feature = "reader")]
extern crate alloc;

#[cfg(test)]
#[macro_use]
extern crate std;

/// Declares an "open" enumeration: a `repr(transparent)` newtype over an
/// integer with named constants. Reading any integer from a queue or signal
/// gives a valid value; [`name`](#method.name) tells whether it is a known one.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident($repr:ty) {
            $(
                $(#[$cmeta:meta])*
                $konst:ident = $value:expr
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(
            Clone, Copy, PartialEq, Eq, Hash, Default,
            zerocopy::FromBytes, zerocopy::IntoBytes,
            zerocopy::KnownLayout, zerocopy::Immutable,
        )]
        $vis struct $name(pub $repr);

        impl $name {
            $(
                $(#[$cmeta])*
                pub const $konst: Self = Self($value);
            )+

            /// Whether the value is one of the named constants (without
            /// touching the names: device code that validates carries no
            /// strings).
            pub const fn is_known(self) -> bool {
                $(
                    if self.0 == $value {
                        return true;
                    }
                )+
                false
            }

            /// The constant's name for a known value, `None` otherwise.
            pub const fn name(self) -> Option<&'static str> {
                $(
                    if self.0 == $value {
                        return Some(stringify!($konst));
                    }
                )+
                None
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(name) => write!(f, "{}::{}", stringify!($name), name),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}

/// Declares a flags type: a `repr(transparent)` newtype over an integer,
/// readable from any bytes, with `bitflags` operations. Unknown bits are kept
/// (`const _ = !0`), so a value read from memory round-trips unchanged.
macro_rules! flags_type {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident: $repr:ty {
            $(
                $(#[$($cattr:tt)*])*
                const $flag:ident = $value:expr;
            )+
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(
            Clone, Copy, PartialEq, Eq, Hash, Default,
            zerocopy::FromBytes, zerocopy::IntoBytes,
            zerocopy::KnownLayout, zerocopy::Immutable,
        )]
        $vis struct $name($repr);

        bitflags::bitflags! {
            impl $name: $repr {
                $(
                    $(#[$($cattr)*])*
                    const $flag = $value;
                )+
                const _ = !0;
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}(", stringify!($name))?;
                bitflags::parser::to_writer(self, &mut *f)?;
                write!(f, ")")
            }
        }
    };
}

/// Asserts at compile time a `repr(C)` type's size and alignment and the
/// byte offset of each listed field, and says why they are fixed:
/// `assert_layout!(Type, size = 64, align = 64, why = "one AQL slot", header = 0, body = 2)`.
/// The reason is part of the error a failing assert gives, so whoever
/// changes the layout learns what reads it.
macro_rules! assert_layout {
    (
        $ty:ty, size = $size:expr, align = $align:expr, why = $why:literal
        $(, $field:ident = $offset:expr)* $(,)?
    ) => {
        const _: () = assert!(
            core::mem::size_of::<$ty>() == $size && core::mem::align_of::<$ty>() == $align,
            concat!(
                stringify!($ty), " must be ", stringify!($size), " bytes, ",
                stringify!($align), "-byte aligned: ", $why
            )
        );
        $(
            const _: () = assert!(
                core::mem::offset_of!($ty, $field) == $offset,
                concat!(
                    stringify!($ty), "::", stringify!($field), " must be at byte ",
                    stringify!($offset), ": ", $why
                )
            );
        )*
    };
    ($($unexpected:tt)*) => {
        compile_error!(
            "assert_layout!(Type, size = N, align = N, why = \"...\", field = offset, ...): \
             say why the layout is fixed"
        );
    };
}

#[macro_use]
pub mod atomic;
#[macro_use]
pub mod view;

pub mod amd_queue;
pub mod amd_signal;
pub mod aql;
pub mod aql_ring;
pub mod command;
pub mod gemm;
pub mod gfx;
pub mod global;
pub mod hsa;
pub mod hsa_api;
pub mod kernel_descriptor;
pub mod occupancy;
pub mod packet;
pub mod pattern;
pub mod scheduler;

#[cfg(feature = "reader")]
pub mod code_object;

/// Version of aqueduct's own host/device layouts ([`command`] and
/// [`scheduler`]). The device library exports it and the host refuses to
/// instantiate a device library built against another version. Bump it on
/// any change to those layouts; the HSA/ROCr mirrors are versioned by ROCr.
pub const ABI_VERSION: u32 = 8;
