//! Why a wave stopped other than by `s_endpgm`, and where.
//!
//! The issue-5 contract: an unknown or unimplemented encoding, an access
//! outside device memory, LDS or scratch, and a trap each stop the dispatch
//! with a report naming the instruction word, the pc, the kernel and the
//! wave, never a silent wrong answer.

use crate::decode::DecodeError;

/// Which address space an out-of-range access was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Lds,
    Scratch,
    /// A flat address in no aperture and no valid range.
    Flat,
}

/// What went wrong in one instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// An access outside the valid ranges of its space.
    Memory {
        space: Space,
        address: u64,
        size: u64,
        write: bool,
    },
    /// An atomic at an address not naturally aligned.
    Misaligned { address: u64, size: u64 },
    /// Words that decode to no instruction of the target.
    Decode(DecodeError),
    /// An instruction the simulator does not implement.
    Unimplemented { mnemonic: &'static str },
    /// An implemented instruction asked for a case the simulator does not
    /// model (e.g. a buffer format whose conversion the ISA text leaves
    /// open); `case` names it.
    UnimplementedCase {
        mnemonic: &'static str,
        case: &'static str,
    },
    /// A VGPR or AGPR beyond the kernel's allocation.
    Register { index: u16, acc: bool },
    /// An operand code the instruction cannot use.
    Operand { code: u8 },
    /// A branch or `s_setpc` to an address that is not an instruction.
    BranchTarget { address: u64 },
    /// `s_trap` with its trap id.
    Trap { id: u16 },
    /// `s_sethalt` with a non-zero halt.
    Halt,
    /// The wave ran past the end of the code.
    RanOffEnd,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory {
                space,
                address,
                size,
                write,
            } => write!(
                f,
                "memory fault: {} of {size} bytes at {address:#x} outside {space:?} memory",
                if *write { "write" } else { "read" }
            ),
            Self::Misaligned { address, size } => {
                write!(f, "{size}-byte atomic at misaligned address {address:#x}")
            }
            Self::Decode(e) => write!(f, "invalid instruction: {e}"),
            Self::Unimplemented { mnemonic } => {
                write!(f, "{mnemonic} is not implemented by the simulator")
            }
            Self::UnimplementedCase { mnemonic, case } => {
                write!(
                    f,
                    "{mnemonic} with {case} is not implemented by the simulator"
                )
            }
            Self::Register { index, acc } => write!(
                f,
                "{}{index} is beyond the kernel's register allocation",
                if *acc { "a" } else { "v" }
            ),
            Self::Operand { code } => write!(f, "operand code {code} is not valid here"),
            Self::BranchTarget { address } => {
                write!(f, "jump to {address:#x}, which is not an instruction")
            }
            Self::Trap { id } => write!(f, "s_trap {id}"),
            Self::Halt => write!(f, "s_sethalt"),
            Self::RanOffEnd => write!(f, "execution ran past the end of the code"),
        }
    }
}

/// A fault with its place: the dispatch stops and reports this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultReport {
    pub fault: Fault,
    /// Address of the faulting instruction.
    pub pc: u64,
    /// Its first word.
    pub word: u32,
    pub kernel: String,
    pub workgroup: [u32; 3],
    /// Wave index within the workgroup.
    pub wave: u32,
}

impl std::fmt::Display for FaultReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.workgroup;
        write!(
            f,
            "{} at pc {:#x} (word {:#010x}) in kernel {}, workgroup ({x}, {y}, {z}) wave {}",
            self.fault, self.pc, self.word, self.kernel, self.wave
        )
    }
}

impl std::error::Error for FaultReport {}
