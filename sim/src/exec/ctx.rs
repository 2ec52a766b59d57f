//! What an executor is and what it may touch: its signature, its context
//! beyond the wave, and the events it raises. The family modules build on
//! this; the parent module keeps their registry.

use crate::code_index::CodeIndex;
use crate::decode::{Inst, Target};
use crate::fault::Fault;
use crate::memory::Memory;
use crate::wave::Wave;

/// Runs one instruction for one wave.
pub type Exec = fn(&mut Wave, &Inst, &mut Ctx<'_>) -> Result<(), Fault>;

/// Something a wave raised for the host to see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `s_sendmsg` with its message id and M0 at the time (an interrupt,
    /// `MSG_INTERRUPT` = 1, is how device code wakes host signal waiters).
    Message {
        /// SIMM16: the message id in bits 3:0, its operation above.
        id: u16,
        /// M0 when the message was sent.
        m0: u32,
    },
}

/// What an executor may touch beyond its wave.
pub struct Ctx<'a> {
    /// Where the running program's instructions start (branch targets).
    pub code: &'a CodeIndex,
    /// Device memory: every global, flat and scratch access goes through
    /// it.
    pub mem: &'a Memory,
    /// The workgroup's LDS allocation.
    pub lds: &'a mut [u8],
    /// The processor the wave runs on.
    pub target: Target,
    /// Address of the executing instruction.
    pub pc: u64,
    /// Where events raised go (collected into the dispatch's
    /// [`Stats::events`](crate::Stats::events)).
    pub events: &'a mut Vec<Event>,
}

impl Ctx<'_> {
    /// Jumps to the instruction at `address`.
    #[inline]
    pub fn jump(&self, w: &mut Wave, address: u64) -> Result<(), Fault> {
        w.pc = self.code.index_of(address)?;
        Ok(())
    }
}
