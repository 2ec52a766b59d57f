//! Executables: the four-call loading sequence and symbols
//! (hsa_executable_*, hsa_code_object_reader_*).
//!
//! Contract used by the packet processor (queue.rs):
//! [`State::kernel_at`] maps an AQL packet's `kernel_object` (the kernel
//! descriptor's device address) to the loaded program and kernel. The rest
//! is to be filled in.

use std::sync::Arc;

use crate::program::Program;

/// Loaded programs and the handles of readers, executables and symbols.
#[derive(Debug, Default)]
pub struct State {}

impl State {
    /// The program and kernel (index into `program.code_object.kernels`)
    /// whose descriptor is at device address `kernel_object`, on `agent`.
    pub fn kernel_at(&self, _agent: u64, _kernel_object: u64) -> Option<(Arc<Program>, usize)> {
        None
    }

    pub fn shut_down(&self) {}
}
