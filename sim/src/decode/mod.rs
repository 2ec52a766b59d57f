//! Instruction decoding: the GFX9 encodings (gfx90a, gfx942, gfx950), the
//! GFX11 (gfx1100) and GFX12 (gfx1201) ones (the child `rdna`: the same [`Inst`]
//! model, scalar codes and true16 halves normalised). Not read on GFX11+:
//! GFX11's typed buffer encoding (MTBUF), images, exports, VINTERP and LDSDIR, and
//! TFE on buffer accesses (refused by name: no compute code of ours, nor
//! AMD's kernels we run, has them); MUBUF/VBUFFER is read.
//!
//! Step one is classification ([`classify`]): the first word names the
//! microcode format, the format the opcode and size, and the opcode tables
//! ([`opcodes`], generated from LLVM's disassembler by `cargo xtask
//! isa-tables`) the mnemonic per target. Step two is operand decoding
//! ([`decode`] into an [`Inst`]). Execution builds on this.
//!
//! This module only names the parts; each lives in its own child, and the
//! children import from one another, never from here.

mod format;
pub mod inst;
mod op_name;
pub mod opcodes;
/// The LLVM-syntax printer is a test oracle (it checks the decoder against
/// `llvm-objdump`), so the product does not compile it.
#[cfg(any(test, feature = "llvm-syntax"))]
pub mod print;
mod rdna;
mod target;

pub use format::{Classified, DecodeError, Encoding, Format, classify};
pub use inst::{Dpp8, Ext, Inst, Mods, Src, VopdY, decode};
pub use op_name::OpName;
pub use target::Target;
