//! Where each decoded instruction of a loaded program starts: the map a
//! branch uses to turn its target address into the index of the instruction
//! to run next.
//!
//! Its own room so that the executors (which jump) and the program (which
//! builds the map while decoding) each depend on it and not on each other:
//! `program` → `exec` → `code_index` ← `program`.

use crate::fault::Fault;

/// Per 4-byte word of a program's executable range, the index of the
/// instruction starting there.
#[derive(Clone, Debug, Default)]
pub struct CodeIndex {
    /// Device address of the range's first word.
    start: u64,
    /// Instruction index per word; [`NOT_AN_INSTRUCTION`] inside one.
    index: Vec<u32>,
}

/// A word in the middle of an instruction (or outside the decoded code).
const NOT_AN_INSTRUCTION: u32 = u32::MAX;

impl CodeIndex {
    /// An index for `bytes` bytes of code at device address `start`, with
    /// no instruction yet.
    pub fn new(start: u64, bytes: u64) -> Self {
        Self {
            start,
            index: vec![NOT_AN_INSTRUCTION; (bytes / 4) as usize],
        }
    }

    /// Records that instruction `i` starts at device address `address`
    /// (inside the range; the decoder only visits addresses of its words).
    pub fn insert(&mut self, address: u64, i: usize) {
        let word = ((address - self.start) / 4) as usize;
        self.index[word] = i as u32;
    }

    /// The index of the instruction at `address`; a branch-target fault if
    /// no instruction starts there.
    pub fn index_of(&self, address: u64) -> Result<usize, Fault> {
        let bad = Fault::BranchTarget { address };
        let rel = address.checked_sub(self.start).ok_or(bad.clone())?;
        if rel % 4 != 0 {
            return Err(bad);
        }
        match self.index.get((rel / 4) as usize) {
            Some(&i) if i != NOT_AN_INSTRUCTION => Ok(i as usize),
            _ => Err(bad),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_instruction_starts_are_branch_targets() {
        let mut code = CodeIndex::new(0x1000, 16);
        code.insert(0x1000, 0);
        code.insert(0x1008, 1); // an 8-byte instruction at 0x1000
        assert_eq!(code.index_of(0x1000).ok(), Some(0));
        assert_eq!(code.index_of(0x1008).ok(), Some(1));
        for bad in [0x1004, 0x1002, 0xffc, 0x1010, 0x100c] {
            assert!(code.index_of(bad).is_err(), "{bad:#x}");
        }
        assert!(CodeIndex::default().index_of(0).is_err());
    }
}
