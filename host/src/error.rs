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
    /// The path (or bare library name) tried.
    pub candidate: String,
    /// Why it was not used: the dynamic loader's message.
    pub problem: String,
}

/// Every failure of the host layer. HSA failures carry the call, the status
/// and the runtime's text; the others say what was refused and why.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No candidate library could be loaded.
    #[error("cannot load the HSA runtime (libhsa-runtime64); tried:{}", format_attempts(.tried))]
    RuntimeNotFound {
        /// Every candidate, in the order tried.
        tried: Vec<LoadAttempt>,
    },

    /// The library lacks a function aqueduct needs.
    #[error(
        "{path}: the HSA runtime lacks `{symbol}`, which aqueduct needs (too old a ROCr, or not an HSA runtime)"
    )]
    MissingSymbol {
        /// The library loaded.
        path: String,
        /// The C function it lacks.
        symbol: &'static str,
    },

    /// `hsa_init` failed and the machine has no KFD device.
    #[error(
        "no AMD GPU is available: {kfd} does not exist (the amdgpu driver's KFD interface is missing), and `hsa_init` in {path} failed with {message} (status {status:#x})"
    )]
    NoGpu {
        /// The runtime library loaded.
        path: String,
        /// The KFD device node looked for (`/dev/kfd`).
        kfd: &'static str,
        /// `hsa_init`'s `hsa_status_t`.
        status: u32,
        /// `hsa_status_string`'s text for it.
        message: String,
    },

    /// An HSA call returned an error status.
    #[error("{call} failed: {message} (status {status:#x})")]
    Hsa {
        /// The C function called, e.g. `hsa_queue_create`.
        call: &'static str,
        /// Its `hsa_status_t`, e.g. `HSA_STATUS_ERROR_OUT_OF_RESOURCES`
        /// (0x1008).
        status: u32,
        /// `hsa_status_string`'s text for it.
        message: String,
    },

    /// A command buffer refused a command while recording; the recording
    /// keeps no command and no binding-slot need of it.
    #[error("command {index} ({kind}) of block {block} of the command buffer: {problem}")]
    Command {
        /// The block being recorded.
        block: u32,
        /// The index the command would have had in it.
        index: u32,
        /// The command's kind: "fill", "copy", "dispatch", ...
        kind: &'static str,
        /// Why it was refused.
        problem: crate::command_buffer::error::CommandError,
    },

    /// A caller-supplied value was refused before reaching HSA.
    #[error("{what}: {problem}")]
    InvalidArgument {
        /// The call or value refused.
        what: &'static str,
        /// Why.
        problem: String,
    },

    /// A device string did not parse.
    #[error("bad device string {input:?}: {problem}")]
    DeviceString {
        /// The string given.
        input: String,
        /// What is wrong with it.
        problem: String,
    },

    /// A device string named a device the system does not have.
    #[error("no such device for {input:?}: {problem}")]
    DeviceNotFound {
        /// The string given.
        input: String,
        /// What is missing, e.g. the GPUs there are.
        problem: String,
    },

    /// A wait reached its timeout before the condition held.
    #[error(
        "timed out after {waited:?} waiting for {what} to become {condition} {expected} (last value {observed})"
    )]
    Timeout {
        /// What was waited on, e.g. a signal and its handle.
        what: String,
        /// The comparison: `==`, `!=`, `<` or `>=`.
        condition: &'static str,
        /// The value compared with.
        expected: i64,
        /// The value last read.
        observed: i64,
        /// How long the wait lasted.
        waited: Duration,
    },

    /// The runtime reported a fault on a queue (memory violation, illegal
    /// instruction, ...): its packets will not complete.
    #[error("queue {queue_id} on {agent} faulted: {message} (status {status:#x})")]
    QueueFault {
        /// `hsa_queue_t::id` of the queue.
        queue_id: u64,
        /// The agent's name, e.g. `gfx942`.
        agent: String,
        /// The `hsa_status_t` the runtime reported, e.g.
        /// `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION` (41).
        status: u32,
        /// `hsa_status_string`'s text for it.
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
        /// The semaphore's device address.
        semaphore: u64,
        /// The value waited for or signalled, if any.
        value: Option<u64>,
        /// The HSA-style status it failed with.
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
        /// The code object's target, e.g. `gfx90a:xnack+`.
        code_object: String,
        /// The agent's processor, e.g. `gfx942`.
        agent: String,
        /// The agent's full ISA name.
        agent_isa: String,
    },

    /// A code object did not parse.
    #[error("invalid code object{}: {source}", origin.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    CodeObject {
        /// The file it was read from, if any.
        origin: Option<PathBuf>,
        /// Why the reader refused it.
        #[source]
        source: CodeObjectError,
    },

    /// A kernel name the code object does not define.
    #[error("no kernel {name:?} in the code object; it has: {available}")]
    KernelNotFound {
        /// The name asked for.
        name: String,
        /// The kernels it does define, comma-separated.
        available: String,
    },

    /// A packet failed validation.
    #[error("packet refused: {0}")]
    Packet(#[from] PacketError),

    /// A solution catalog could not be opened or used.
    #[error("catalog {}: {message}", path.display())]
    Catalog {
        /// The catalog file.
        path: PathBuf,
        /// What went wrong (the catalog error's text).
        message: String,
    },

    /// The catalog has no kernel for a GEMM on this hardware.
    #[error("no GEMM kernel for {problem} on {hardware} in {}", catalog.display())]
    NoGemmSolution {
        /// The GEMM, as [`Gemm`](crate::Gemm) displays it.
        problem: String,
        /// The GPU: target, CU count, chip ID.
        hardware: String,
        /// The catalog searched.
        catalog: PathBuf,
    },

    /// A file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// "read" or "write".
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
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

/// A result whose error is an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
