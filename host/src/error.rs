//! `aqueduct::Error`: every failure of the host layer, with enough context to
//! act on it.

use std::path::PathBuf;
use std::time::Duration;

use aqueduct_abi::code_object::CodeObjectError;
use aqueduct_abi::packet::PacketError;

/// One place the loader looked for the HSA runtime, and why it was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadAttempt {
    /// Where the candidate came from (`explicit path`, `AQUEDUCT_HSA_LIB`,
    /// `$ROCM_PATH/lib`, `system loader path`).
    pub source: &'static str,
    pub candidate: String,
    pub problem: String,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No candidate library could be loaded.
    #[error("cannot load the HSA runtime (libhsa-runtime64); tried:{}", format_attempts(.tried))]
    RuntimeNotFound { tried: Vec<LoadAttempt> },

    /// The library lacks a function aqueduct needs.
    #[error(
        "{path}: the HSA runtime lacks `{symbol}`, which aqueduct needs (too old a ROCr, or not an HSA runtime)"
    )]
    MissingSymbol { path: String, symbol: &'static str },

    /// `hsa_init` failed and the machine has no KFD device.
    #[error(
        "no AMD GPU is available: {kfd} does not exist (the amdgpu driver's KFD interface is missing), and `hsa_init` in {path} failed with {message} (status {status:#x})"
    )]
    NoGpu {
        path: String,
        kfd: &'static str,
        status: u32,
        message: String,
    },

    /// An HSA call returned an error status.
    #[error("{call} failed: {message} (status {status:#x})")]
    Hsa {
        call: &'static str,
        status: u32,
        message: String,
    },

    /// A command buffer refused a command while recording; nothing of it
    /// was written.
    #[error("command {index} ({kind}) of block {block} of the command buffer: {problem}")]
    Command {
        block: u32,
        index: u32,
        kind: &'static str,
        problem: crate::command_buffer::CommandError,
    },

    /// A caller-supplied value was refused before reaching HSA.
    #[error("{what}: {problem}")]
    InvalidArgument { what: &'static str, problem: String },

    /// A device string did not parse.
    #[error("bad device string {input:?}: {problem}")]
    DeviceString { input: String, problem: String },

    /// A device string named a device the system does not have.
    #[error("no such device for {input:?}: {problem}")]
    DeviceNotFound { input: String, problem: String },

    /// A wait reached its timeout before the condition held.
    #[error(
        "timed out after {waited:?} waiting for {what} to become {condition} {expected} (last value {observed})"
    )]
    Timeout {
        what: String,
        condition: &'static str,
        expected: i64,
        observed: i64,
        waited: Duration,
    },

    /// The runtime reported a fault on a queue (memory violation, illegal
    /// instruction, ...): its packets will not complete.
    #[error("queue {queue_id} on {agent} faulted: {message} (status {status:#x})")]
    QueueFault {
        queue_id: u64,
        agent: String,
        status: u32,
        message: String,
    },

    /// A command of a submitted command buffer faulted (or the issue of its
    /// block did): the queue stopped at that command's packet.
    #[error("command {index} of block {block} of the command buffer ({what}) faulted: {fault}")]
    CommandFault {
        /// The block the command is in.
        block: u32,
        /// The command's index in its block; the block's command count when
        /// the block-issue kernel itself faulted.
        index: u32,
        /// The command's kind, with the kernel's name for a dispatch.
        what: String,
        /// The queue's fault.
        fault: Box<Error>,
    },

    /// A timeline semaphore failed (an entry that signals it failed, or
    /// someone failed it): every wait on it returns this.
    #[error("semaphore {semaphore:#x} failed (status {status:#x}){}{}", match value { Some(v) => format!(" while waiting for or signalling {v}"), None => String::new() }, match cause { Some(c) => format!(": {c}"), None => String::new() })]
    SemaphoreFailed {
        semaphore: u64,
        /// The value waited for or signalled, if any.
        value: Option<u64>,
        status: u32,
        /// The entry whose failure failed it, and why (the command and
        /// kernel a faulted queue stopped at), if an entry did.
        cause: Option<String>,
    },

    /// A code object was built for another processor than the agent's.
    #[error(
        "code object targets {code_object}, but the agent is {agent} ({agent_isa}); build it with `cargo xtask build --gfx {agent}`"
    )]
    TargetMismatch {
        code_object: String,
        agent: String,
        agent_isa: String,
    },

    /// A code object did not parse.
    #[error("invalid code object{}: {source}", origin.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    CodeObject {
        origin: Option<PathBuf>,
        #[source]
        source: CodeObjectError,
    },

    /// A kernel name the code object does not define.
    #[error("no kernel {name:?} in the code object; it has: {available}")]
    KernelNotFound { name: String, available: String },

    /// A packet failed validation.
    #[error("packet refused: {0}")]
    Packet(#[from] PacketError),

    /// A solution catalog could not be opened or used.
    #[error("catalog {}: {message}", path.display())]
    Catalog { path: PathBuf, message: String },

    /// The catalog has no kernel for a GEMM on this hardware.
    #[error("no GEMM kernel for {problem} on {hardware} in {}", catalog.display())]
    NoGemmSolution {
        problem: String,
        hardware: String,
        catalog: PathBuf,
    },

    /// A file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// "read" or "write".
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn format_attempts(tried: &[LoadAttempt]) -> String {
    tried
        .iter()
        .map(|a| format!("\n  {} ({}): {}", a.candidate, a.source, a.problem))
        .collect()
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
