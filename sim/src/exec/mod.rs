//! Instruction semantics, one module per family, keyed by mnemonic.
//!
//! Each family module exports `OPS`: (mnemonic, executor) pairs. An
//! executor runs one instruction for one wave; the program resolves it once
//! at decode time, so execution is an indirect call per instruction and a
//! tight loop over lanes inside. Mnemonics are LLVM's (as the opcode tables
//! and `llvm-objdump` spell them), shared across encodings: `v_add_f32` runs
//! the same executor whether it came as VOP2, VOP3, SDWA or DPP, because the
//! decoder normalised the operands (see `decode::inst`).
//!
//! What an executor is and may touch ([`Exec`], [`Ctx`], [`Event`]) is
//! defined in the child `ctx`, which the family modules import; this module
//! keeps the registry that imports the families.
//!
//! The sources of truth for semantics are AMD's CDNA2 and CDNA3 ISA
//! documents (instruction descriptions) and LLVM's AMDGPUUsage (initial
//! state, memory model); each module cites the sections it follows.

use std::collections::HashMap;
use std::sync::OnceLock;

#[cfg(test)]
use crate::code_index::CodeIndex;
use crate::decode::{Ext, Format, Inst, Mods, Src};
use crate::fault::Fault;
#[cfg(test)]
use crate::memory::Memory;
use crate::wave::Wave;

mod ctx;
pub mod dpp;
pub mod ds;
pub mod flat;
pub mod mfma;
pub mod mfma_mx;
pub mod mubuf;
pub mod names;
#[cfg(test)]
mod rdna_tests;
pub mod salu;
pub mod salu_float;
pub mod sdwa;
pub mod smem;
pub mod valu;
pub mod vop3p;
pub mod vopd;
pub mod wmma;

pub use ctx::{Ctx, Event, Exec};

fn registry() -> &'static HashMap<&'static str, Exec> {
    static REGISTRY: OnceLock<HashMap<&'static str, Exec>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        [
            salu::OPS,
            salu_float::OPS,
            smem::OPS,
            valu::OPS,
            vop3p::OPS,
            flat::OPS,
            ds::OPS,
            mubuf::OPS,
            mfma::OPS,
            mfma_mx::OPS,
            vopd::OPS,
            wmma::OPS,
        ]
        .into_iter()
        .flatten()
        .flat_map(|table| table.iter().copied())
        .collect()
    })
}

/// The executor of a mnemonic, if the simulator implements it: its own,
/// or for a GFX11+ rename the GFX9 operation's ([`names`]).
pub fn lookup(mnemonic: &str) -> Option<Exec> {
    let registry = registry();
    registry.get(mnemonic).copied().or_else(|| {
        names::gfx9_equivalent(mnemonic).and_then(|old| registry.get(old.as_str()).copied())
    })
}

/// Whether the simulator implements a mnemonic.
pub fn implemented(mnemonic: &str) -> bool {
    lookup(mnemonic).is_some()
}

/// The executor of decoded instructions without an implementation.
pub fn unimplemented(_: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> Result<(), Fault> {
    Err(Fault::Unimplemented {
        mnemonic: i.mnemonic,
    })
}

/// The executor of words that decode to nothing; the program turns this
/// into the decode error it recorded.
pub fn invalid(_: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> Result<(), Fault> {
    Err(Fault::Unimplemented {
        mnemonic: "<invalid>",
    })
}

/// The placeholder instruction of an invalid slot.
pub(crate) fn invalid_inst() -> Inst {
    Inst {
        format: Format::Sopp,
        opcode: 0,
        mnemonic: "<invalid>",
        words: 1,
        vdst: 0,
        sdst: 0,
        src: [Src::None; 3],
        imm: 0,
        mods: Mods::default(),
        flags: 0,
        ext: Ext::None,
        fmt: 0,
        cpol: 0,
    }
}

/// Decodes `words` for `target`, checks the mnemonic, and runs the
/// instruction for `w` with `lds` as the workgroup's LDS and no code object
/// around it: the executors' unit tests.
#[cfg(test)]
pub(crate) fn run_words(
    w: &mut Wave,
    target: crate::decode::Target,
    words: &[u32],
    mnemonic: &str,
    lds: &mut [u8],
) -> Result<(), Fault> {
    run_words_in(&Memory::new(), target, w, words, mnemonic, lds)
}

/// [`run_words`] with `mem` as device memory.
#[cfg(test)]
pub(crate) fn run_words_in(
    mem: &Memory,
    target: crate::decode::Target,
    w: &mut Wave,
    words: &[u32],
    mnemonic: &str,
    lds: &mut [u8],
) -> Result<(), Fault> {
    let inst = crate::decode::decode(words, target).expect("decodes");
    assert_eq!(inst.mnemonic, mnemonic);
    let exec = lookup(inst.mnemonic).expect("implemented");
    let mut events = Vec::new();
    let mut ctx = Ctx {
        code: &CodeIndex::default(),
        mem,
        lds,
        target,
        pc: 0,
        events: &mut events,
    };
    exec(w, &inst, &mut ctx)
}
