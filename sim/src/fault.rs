//! Why a wave stopped other than by `s_endpgm`, and where.
//!
//! The simulator's fault contract: an unknown or unimplemented encoding,
//! an access outside device memory, LDS or scratch, and a trap each stop
//! the dispatch with a report naming the instruction word, the pc, the
//! kernel and the wave, never a silent wrong answer.

use crate::decode::DecodeError;

/// Which address space an out-of-range access was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Device memory, through global, buffer or scalar memory
    /// instructions.
    Global,
    /// The workgroup's LDS allocation.
    Lds,
    /// The lane's private (scratch) segment.
    Scratch,
    /// A flat address in no aperture and no valid range.
    Flat,
}

/// What went wrong in one instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// An access outside the valid ranges of its space.
    Memory {
        /// The address space accessed.
        space: Space,
        /// The first byte's address (an offset within LDS or the lane's
        /// scratch for those spaces).
        address: u64,
        /// Bytes accessed.
        size: u64,
        /// A store or atomic (true), or a load.
        write: bool,
    },
    /// An atomic at an address not naturally aligned.
    Misaligned {
        /// The address.
        address: u64,
        /// The atomic's width in bytes.
        size: u64,
    },
    /// Words that decode to no instruction of the target.
    Decode(DecodeError),
    /// An instruction the simulator does not implement.
    Unimplemented {
        /// Its mnemonic.
        mnemonic: &'static str,
    },
    /// An implemented instruction asked for a case the simulator does not
    /// model (e.g. a buffer format whose conversion the ISA text leaves
    /// open); `case` names it.
    UnimplementedCase {
        /// The instruction's mnemonic.
        mnemonic: &'static str,
        /// The case not modelled.
        case: &'static str,
    },
    /// A VGPR or AGPR beyond the kernel's allocation.
    Register {
        /// The register number.
        index: u16,
        /// An AGPR (true) or a VGPR.
        acc: bool,
    },
    /// An operand code the instruction cannot use.
    Operand {
        /// The operand code (low 8 bits of a register number).
        code: u8,
    },
    /// A branch or `s_setpc` to an address that is not an instruction.
    BranchTarget {
        /// The target address.
        address: u64,
    },
    /// `s_trap` with its trap id.
    Trap {
        /// The trap id (`s_trap 2` is the device library's abort).
        id: u16,
    },
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
    /// What went wrong.
    pub fault: Fault,
    /// Address of the faulting instruction.
    pub pc: u64,
    /// Its first word.
    pub word: u32,
    /// The kernel's name.
    pub kernel: String,
    /// The workgroup's id in x, y, z.
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
