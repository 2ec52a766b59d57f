//! A code object loaded into device memory and decoded once.
//!
//! Loading copies the `PT_LOAD` segments to one simulator allocation (so
//! kernels reach their read-only data pc-relatively, as on hardware), then
//! decodes every executable segment front to back into [`Inst`]s with their
//! executors resolved. Execution never decodes again: a pc is an index into
//! that array, and a jump maps its byte address back through a per-word
//! index. Words that decode to nothing, or to an instruction the simulator
//! does not implement, are kept as such and fault only when executed.

use std::collections::HashMap;
use std::sync::Arc;

use aqueduct_abi::code_object::{CodeObject, CodeObjectError, Kernel};

use crate::code_index::CodeIndex;
use crate::decode::{DecodeError, Inst, Target, decode};
use crate::exec::{self, Exec};
use crate::fault::Fault;
use crate::memory::{Memory, MemoryError};
use crate::pair::{Pairing, pairing};

/// Why a code object could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The code-object reader refused the bytes.
    CodeObject(CodeObjectError),
    /// The code object is for a processor the simulator does not run.
    UnsupportedTarget {
        /// The processor its `e_flags` name, e.g. `gfx1100`.
        processor: String,
    },
    /// Built for another processor than the device's.
    TargetMismatch {
        /// The device's processor.
        device: Target,
        /// The code object's processor.
        code_object: String,
    },
    /// Its image could not be placed in device memory.
    Memory(MemoryError),
    /// No `PT_LOAD` segment is executable: there is nothing to run.
    NoCode,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CodeObject(e) => write!(f, "bad code object: {e}"),
            Self::UnsupportedTarget { processor } => {
                write!(f, "the simulator does not run {processor} code")
            }
            Self::TargetMismatch {
                device,
                code_object,
            } => write!(
                f,
                "code object for {code_object} cannot run on a {device:?} device"
            ),
            Self::Memory(e) => write!(f, "cannot place the code object: {e}"),
            Self::NoCode => write!(f, "the code object has no executable segment"),
        }
    }
}

impl std::error::Error for LoadError {}

/// A decoded instruction, its executor and its address.
pub(crate) struct Slot {
    pub inst: Inst,
    pub exec: Exec,
    /// Offset from the image base.
    pub offset: u64,
    pub word: u32,
    /// Why the words here are no instruction, if they are not.
    pub invalid: Option<DecodeError>,
    /// A matrix instruction (MFMA, SMFMAC, WMMA, SWMMAC): counted apart in
    /// the stats.
    pub matrix: bool,
    /// How many of the slots directly after this one are no-ops
    /// (`exec::salu::is_no_op`: waits and scheduling hints, which RDNA
    /// code places between most dependent instructions). When execution
    /// falls through into them, the
    /// interpreter counts them as executed without dispatching each.
    pub no_ops_after: u16,
    /// How a wave32 pair runs it (`crate::pair`).
    pub pairing: Pairing,
}

/// A loaded, decoded code object.
pub struct Program {
    /// The processor it was loaded for.
    pub target: Target,
    /// The parsed code object (metadata, kernels, segments).
    pub code_object: CodeObject,
    memory: Arc<Memory>,
    /// Device address of the image (vaddr 0 of the code object).
    pub base: u64,
    pub(crate) slots: Vec<Slot>,
    /// The slot starting at each word of the executable range.
    pub(crate) code: CodeIndex,
    kernels: HashMap<String, usize>,
}

impl Program {
    /// Loads `bytes` for `target` into `memory`.
    pub fn load(memory: Arc<Memory>, target: Target, bytes: &[u8]) -> Result<Self, LoadError> {
        let code_object = CodeObject::parse(bytes).map_err(LoadError::CodeObject)?;
        let processor = code_object.target.processor.to_string();
        let co_target =
            Target::from_name(&processor).ok_or_else(|| LoadError::UnsupportedTarget {
                processor: processor.clone(),
            })?;
        if co_target != target {
            return Err(LoadError::TargetMismatch {
                device: target,
                code_object: processor,
            });
        }
        let size = code_object
            .segments
            .iter()
            .map(|s| s.vaddr + s.memsz)
            .max()
            .ok_or(LoadError::NoCode)?;
        let base = memory.alloc(size, 4096).map_err(LoadError::Memory)?;
        let mut program = Self {
            target,
            code_object,
            memory,
            base,
            slots: Vec::new(),
            code: CodeIndex::default(),
            kernels: HashMap::new(),
        };
        // The image is zero-filled; copy each segment's file part.
        for s in &program.code_object.segments {
            let from = s.file_offset as usize;
            let data = &bytes[from..from + s.filesz as usize];
            program
                .memory
                .write_bytes(base + s.vaddr, data)
                .map_err(LoadError::Memory)?;
        }
        let code: Vec<_> = program
            .code_object
            .segments
            .iter()
            .filter(|s| s.executable)
            .copied()
            .collect();
        let start = code
            .iter()
            .map(|s| s.vaddr)
            .min()
            .ok_or(LoadError::NoCode)?;
        let end = code
            .iter()
            .map(|s| s.vaddr + s.filesz)
            .max()
            .unwrap_or(start);
        program.code = CodeIndex::new(base + start, end - start);
        for s in &code {
            let from = s.file_offset as usize;
            let words: Vec<u32> = bytes[from..from + s.filesz as usize]
                .as_chunks::<4>()
                .0
                .iter()
                .map(|&c| u32::from_le_bytes(c))
                .collect();
            program.decode_segment(s.vaddr, &words);
        }
        for (i, k) in program.code_object.kernels.iter().enumerate() {
            program.kernels.insert(k.name().to_string(), i);
        }
        Ok(program)
    }

    fn decode_segment(&mut self, vaddr: u64, words: &[u32]) {
        let first = self.slots.len();
        let mut at = 0;
        while at < words.len() {
            let offset = vaddr + at as u64 * 4;
            let (inst, exec, invalid, n) = match decode(&words[at..], self.target) {
                Ok(inst) => {
                    let exec = exec::lookup(inst.mnemonic).unwrap_or(exec::unimplemented);
                    (inst, exec, None, usize::from(inst.words))
                }
                Err(e) => (exec::invalid_inst(), exec::invalid as Exec, Some(e), 1),
            };
            self.code.insert(self.base + offset, self.slots.len());
            self.slots.push(Slot {
                matrix: invalid.is_none() && crate::decode::inst::is_matrix(inst.mnemonic),
                inst,
                exec,
                offset,
                word: words[at],
                // GFX9 is wave64 only: no wave32 pair ever asks.
                pairing: if self.target.wave32() {
                    pairing(&inst, invalid.is_none(), self.target)
                } else {
                    Pairing::Split
                },
                invalid,
                no_ops_after: 0,
            });
            at += n;
        }
        // Each slot's run of no-ops after it, from the segment's end back.
        let mut run = 0u16;
        for slot in self.slots[first..].iter_mut().rev() {
            slot.no_ops_after = run;
            let no_op = slot.invalid.is_none() && exec::salu::is_no_op(slot.inst.mnemonic);
            run = if no_op { run.saturating_add(1) } else { 0 };
        }
    }

    /// A kernel by name (or by its `.kd` symbol name).
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        let name = name.strip_suffix(".kd").unwrap_or(name);
        self.kernels
            .get(name)
            .map(|&i| &self.code_object.kernels[i])
    }

    /// The slot index of the instruction at device address `address`.
    pub(crate) fn index_of(&self, address: u64) -> Result<usize, Fault> {
        self.code.index_of(address)
    }

    /// Device address of slot `i`.
    pub(crate) fn address_of(&self, i: usize) -> u64 {
        self.slots.get(i).map_or(0, |s| self.base + s.offset)
    }

    /// Every decoded instruction with its address offset, in order; for
    /// tools (coverage, disassembly comparisons).
    pub fn instructions(&self) -> impl Iterator<Item = (u64, Result<&Inst, DecodeError>)> {
        self.slots.iter().map(|s| {
            (
                s.offset,
                match s.invalid {
                    Some(e) => Err(e),
                    None => Ok(&s.inst),
                },
            )
        })
    }

    /// The memory the image was placed in.
    pub fn memory(&self) -> &Arc<Memory> {
        &self.memory
    }
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("target", &self.target)
            .field("base", &format_args!("{:#x}", self.base))
            .field("instructions", &self.slots.len())
            .finish()
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // The image was allocated in `load`; nothing else frees it.
        let _ = self.memory.free(self.base);
    }
}
