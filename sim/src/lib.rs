//! aqueduct-sim: aqueduct's software AMD GPU.
//!
//! No machine aqueduct is developed on has an AMD GPU, so the simulator is
//! how every device-side claim gets executed: an interpreter of GFX9-family
//! (gfx90a, gfx942) machine code that runs the very code objects the hardware
//! would, behind a C API identical to `libhsa-runtime64`, so the host shim
//! loads it exactly as it loads ROCr.
//!
//! So far: [`decode`], the instruction classifier (format, opcode, mnemonic
//! per target, size) over opcode tables read out of LLVM's disassembler.
//! The interpreter and the HSA runtime build on it in their own steps; they
//! read code objects with `aqueduct_abi::code_object`, the reader host and
//! xtask share.

pub mod decode;
