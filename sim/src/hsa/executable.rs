//! Executables: the four-call loading sequence and kernel symbols
//! (hsa_executable_*, hsa_code_object_reader_*; HSA Runtime Programmer's
//! Reference Manual §2.9 "Code object loading" and ROCr's `hsa.cpp` /
//! `loader/executable.cpp`).
//!
//! ```text
//!   reader ── bytes (copied) ──┐
//!                              ▼  load_agent_code_object (unfrozen only)
//!   executable ── loaded ── Arc<Program> (image in simulator memory,
//!      │                        decoded once; shared with queue processors)
//!      └─ symbols ── `<kernel>.kd` per kernel, per agent
//! ```
//!
//! As in ROCr, a reader does not parse: bad bytes are reported by the load
//! (INVALID_CODE_OBJECT), and a code object for another processor than the
//! agent's is INCOMPATIBLE_ARGUMENTS. A kernel's KERNEL_OBJECT is its
//! descriptor's device address in the loaded image, which is what AQL
//! packets carry; [`State::kernel_at`] maps it back for the packet
//! processor (`queue::processor`). Handles of readers, executables, loaded code
//! objects and symbols are opaque non-zero numbers.
//!
//! Divergence from ROCr: the simulator runs only code objects built for
//! the agent's exact processor; a generic target (`gfx9-4-generic`),
//! which ROCr loads on its members, is refused as incompatible.
//!
//! Destroying an executable drops its programs; a dispatch still running
//! holds its own `Arc<Program>`, which keeps the image mapped until it ends.

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use aqueduct_abi::code_object::{CodeObject, FeatureSetting, Kernel, Target as CoTarget};

use aqueduct_abi::hsa_api::{self, *};

use super::{Info, Profile, Runtime, answer, put, runtime};
use crate::program::{LoadError, Program};

// hsa_profile_t, hsa_default_float_rounding_mode_t (hsa.h).
/// First handle: opaque, non-zero, recognisably the loader's (agent
/// handles start at 0xA9E0_0000).
const HANDLE_BASE: u64 = 0xC0DE_0000;

// ===========================================================================
// State
// ===========================================================================

/// Loaded programs and the handles of readers, executables, loaded code
/// objects and symbols.
#[derive(Debug, Default)]
pub struct State {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Handles handed out so far (offset from [`HANDLE_BASE`]).
    issued: u64,
    /// Reader → its copy of the caller's bytes (shared with a load in
    /// progress, which works outside the lock).
    readers: BTreeMap<u64, Arc<[u8]>>,
    executables: BTreeMap<u64, Executable>,
    symbols: BTreeMap<u64, Symbol>,
}

impl Inner {
    fn next_handle(&mut self) -> u64 {
        self.issued += 1;
        HANDLE_BASE + self.issued
    }
}

#[derive(Debug)]
struct Executable {
    profile: u32,
    rounding_mode: u32,
    frozen: bool,
    loaded: Vec<Loaded>,
}

/// One code object loaded for one agent (`hsa_loaded_code_object_t`).
#[derive(Debug)]
struct Loaded {
    #[allow(dead_code)] // the loaded-code-object queries are not exported
    handle: u64,
    agent: u64,
    program: Arc<Program>,
}

/// A kernel symbol, with the values `hsa_executable_symbol_get_info`
/// answers (checked to fit their C types at load).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    executable: u64,
    /// The GPU agent's handle (`HSA_EXECUTABLE_SYMBOL_INFO_AGENT`).
    pub agent: u64,
    /// `<kernel>.kd`, the name ROCr looks kernels up by.
    pub name: String,
    /// The descriptor's device address.
    pub kernel_object: u64,
    /// Kernarg bytes (`..._KERNEL_KERNARG_SEGMENT_SIZE`, metadata
    /// `.kernarg_segment_size`).
    pub kernarg_segment_size: u32,
    /// Kernarg alignment in bytes (`..._KERNEL_KERNARG_SEGMENT_ALIGNMENT`).
    pub kernarg_segment_alignment: u32,
    /// Static LDS bytes (`..._KERNEL_GROUP_SEGMENT_SIZE`).
    pub group_segment_size: u32,
    /// Static scratch bytes per work-item
    /// (`..._KERNEL_PRIVATE_SEGMENT_SIZE`).
    pub private_segment_size: u32,
    /// The kernel uses a dynamic stack
    /// (`..._KERNEL_DYNAMIC_CALLSTACK`, metadata `.uses_dynamic_stack`).
    pub dynamic_callstack: bool,
}

impl Symbol {
    /// The symbol of `kernel` in `program` loaded for `agent`, or None if
    /// the metadata's sizes do not fit hsa.h's `uint32_t`s.
    fn of(executable: u64, agent: u64, program: &Program, kernel: &Kernel) -> Option<Self> {
        let m = &kernel.metadata;
        Some(Self {
            executable,
            agent,
            name: m.symbol.clone(),
            kernel_object: program.base + kernel.descriptor_address,
            kernarg_segment_size: u32::try_from(m.kernarg_segment_size).ok()?,
            kernarg_segment_alignment: u32::try_from(m.kernarg_segment_align).ok()?,
            // What the hardware is given is the descriptor's, so that is
            // what a dispatch must provide (ROCr reads the same fields).
            group_segment_size: kernel.descriptor.group_segment_fixed_size,
            private_segment_size: kernel.descriptor.private_segment_fixed_size,
            dynamic_callstack: m.uses_dynamic_stack,
        })
    }
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves the maps consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The program and kernel (index into `program.code_object.kernels`)
    /// whose descriptor is at device address `kernel_object`, on `agent`.
    pub fn kernel_at(&self, agent: u64, kernel_object: u64) -> Option<(Arc<Program>, usize)> {
        let inner = self.lock();
        inner
            .executables
            .values()
            .flat_map(|e| &e.loaded)
            .filter(|l| l.agent == agent)
            .find_map(|l| {
                let p = &l.program;
                let index = p
                    .code_object
                    .kernels
                    .iter()
                    .position(|k| p.base + k.descriptor_address == kernel_object)?;
                Some((Arc::clone(p), index))
            })
    }

    /// Drops every reader, executable and symbol (after the queues have
    /// stopped, so no dispatch holds a program but its own).
    pub fn shut_down(&self) {
        let mut inner = self.lock();
        inner.readers.clear();
        inner.executables.clear();
        inner.symbols.clear();
    }
}

// ===========================================================================
// The operations, on a runtime
// ===========================================================================

/// Whether the simulator runs code for `target` on an agent of `profile`:
/// the same processor, each feature unspecified or as the agent has it
/// (ROCr `IsaSupportedByAgent`; agents are `sramecc+:xnack-`, see
/// [`Profile::isa_name`]). Generic targets: see the module comment.
fn runs_on(target: &CoTarget, profile: Profile) -> bool {
    use FeatureSetting::{Any, Off, On, Unsupported};
    target.processor == profile.gfx()
        && matches!(target.sramecc, Any | Unsupported | On)
        && matches!(target.xnack, Any | Unsupported | Off)
}

/// `hsa_executable_create_alt` (ROCr `hsa.cpp`): a profile other than
/// BASE/FULL or a rounding mode other than DEFAULT/ZERO/NEAR is
/// INVALID_ARGUMENT.
pub fn create(rt: &Runtime, profile: u32, rounding_mode: u32) -> Result<u64, Status> {
    if profile > HSA_PROFILE_FULL || rounding_mode > HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    let mut inner = rt.executables.lock();
    let handle = inner.next_handle();
    inner.executables.insert(
        handle,
        Executable {
            profile,
            rounding_mode,
            frozen: false,
            loaded: Vec::new(),
        },
    );
    Ok(handle)
}

/// `hsa_executable_destroy`: unknown is INVALID_EXECUTABLE; its symbols
/// and programs go with it.
pub fn destroy(rt: &Runtime, executable: u64) -> Result<(), Status> {
    let gone = {
        let mut inner = rt.executables.lock();
        let gone = inner
            .executables
            .remove(&executable)
            .ok_or(HSA_STATUS_ERROR_INVALID_EXECUTABLE)?;
        inner.symbols.retain(|_, s| s.executable != executable);
        gone
    };
    // Freeing the images takes the memory's lock: outside ours.
    drop(gone);
    Ok(())
}

/// `hsa_code_object_reader_create_from_memory`: the bytes are copied and
/// not parsed (ROCr parses at load). No bytes is INVALID_ARGUMENT.
pub fn create_reader(rt: &Runtime, bytes: &[u8]) -> Result<u64, Status> {
    if bytes.is_empty() {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    let mut inner = rt.executables.lock();
    let handle = inner.next_handle();
    inner.readers.insert(handle, Arc::from(bytes));
    Ok(handle)
}

/// `hsa_code_object_reader_destroy`: unknown is INVALID_CODE_OBJECT_READER.
/// Executables loaded from it keep their programs.
pub fn destroy_reader(rt: &Runtime, reader: u64) -> Result<(), Status> {
    match rt.executables.lock().readers.remove(&reader) {
        Some(_) => Ok(()),
        None => Err(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER),
    }
}

/// `hsa_executable_load_agent_code_object`, checking in ROCr's order
/// (`hsa.cpp`, then `ExecutableImpl::LoadCodeObject`):
///
/// | condition                                  | status                     |
/// |--------------------------------------------|----------------------------|
/// | unknown executable                         | INVALID_EXECUTABLE         |
/// | unknown reader                             | INVALID_CODE_OBJECT_READER |
/// | executable frozen                          | FROZEN_EXECUTABLE          |
/// | bytes the shared reader rejects            | INVALID_CODE_OBJECT        |
/// | unknown agent (the null agent included)    | INVALID_AGENT              |
/// | the CPU, or code for another processor     | INCOMPATIBLE_ARGUMENTS     |
/// | no room in simulator memory                | OUT_OF_RESOURCES           |
///
/// Returns the loaded code object's handle.
pub fn load(rt: &Runtime, executable: u64, agent: u64, reader: u64) -> Result<u64, Status> {
    let bytes = {
        let inner = rt.executables.lock();
        let exec = inner
            .executables
            .get(&executable)
            .ok_or(HSA_STATUS_ERROR_INVALID_EXECUTABLE)?;
        let bytes = inner
            .readers
            .get(&reader)
            .ok_or(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)?;
        if exec.frozen {
            return Err(HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
        }
        Arc::clone(bytes)
    };
    let code_object =
        CodeObject::parse(&bytes).map_err(|_| HSA_STATUS_ERROR_INVALID_CODE_OBJECT)?;
    let agent_info = rt.agent(agent).ok_or(HSA_STATUS_ERROR_INVALID_AGENT)?;
    let profile = match agent_info.kind {
        super::AgentKind::Gpu(p) if runs_on(&code_object.target, p) => p,
        _ => return Err(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS),
    };
    // Placing and decoding takes a while: done outside the lock, so queue
    // processors looking kernels up are not held up.
    let program =
        Program::load(Arc::clone(&rt.memory), profile.target, &bytes).map_err(|e| match e {
            LoadError::Memory(_) => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
            LoadError::UnsupportedTarget { .. } | LoadError::TargetMismatch { .. } => {
                HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
            }
            LoadError::CodeObject(_) | LoadError::NoCode => HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
        })?;
    let program = Arc::new(program);

    let mut inner = rt.executables.lock();
    // Checked again: destroyed or frozen while the image was being loaded.
    match inner.executables.get(&executable) {
        None => return Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE),
        Some(e) if e.frozen => return Err(HSA_STATUS_ERROR_FROZEN_EXECUTABLE),
        Some(_) => {}
    }
    let symbols: Vec<Symbol> = program
        .code_object
        .kernels
        .iter()
        .map(|k| Symbol::of(executable, agent, &program, k))
        .collect::<Option<_>>()
        .ok_or(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)?;
    for symbol in symbols {
        let handle = inner.next_handle();
        inner.symbols.insert(handle, symbol);
    }
    let handle = inner.next_handle();
    let exec = inner
        .executables
        .get_mut(&executable)
        .expect("checked above, under the same lock");
    exec.loaded.push(Loaded {
        handle,
        agent,
        program,
    });
    Ok(handle)
}

/// `hsa_executable_freeze`: unknown is INVALID_EXECUTABLE, freezing twice
/// FROZEN_EXECUTABLE (ROCr `ExecutableImpl::Freeze`).
pub fn freeze(rt: &Runtime, executable: u64) -> Result<(), Status> {
    match rt.executables.lock().executables.get_mut(&executable) {
        None => Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE),
        Some(e) if e.frozen => Err(HSA_STATUS_ERROR_FROZEN_EXECUTABLE),
        Some(e) => {
            e.frozen = true;
            Ok(())
        }
    }
}

/// `hsa_executable_get_symbol_by_name` (ROCr `ExecutableImpl::GetSymbol`):
/// unknown executable is INVALID_EXECUTABLE. Kernels are agent symbols:
/// with no agent (a program-symbol lookup) or another agent than the one
/// loaded for, the name is not found, INVALID_SYMBOL_NAME. Lookups need
/// not wait for the freeze. If a name was loaded twice, the first load
/// wins.
pub fn symbol_by_name(
    rt: &Runtime,
    executable: u64,
    name: &[u8],
    agent: Option<u64>,
) -> Result<u64, Status> {
    let inner = rt.executables.lock();
    if !inner.executables.contains_key(&executable) {
        return Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    }
    inner
        .symbols
        .iter()
        .find(|(_, s)| {
            s.executable == executable && Some(s.agent) == agent && s.name.as_bytes() == name
        })
        .map(|(&h, _)| h)
        .ok_or(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
}

/// The symbol behind a handle, or INVALID_EXECUTABLE_SYMBOL.
pub fn symbol(rt: &Runtime, symbol: u64) -> Result<Symbol, Status> {
    rt.executables
        .lock()
        .symbols
        .get(&symbol)
        .cloned()
        .ok_or(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL)
}

/// `hsa_executable_symbol_get_info` for a kernel symbol, in the
/// attributes' C types (hsa.h). NAME is the name without a NUL and
/// NAME_LENGTH does not count one (ROCr `SymbolImpl::GetInfo`); variable
/// attributes are INVALID_ARGUMENT, as ROCr answers for a kernel.
fn symbol_info(rt: &Runtime, handle: u64, attribute: u32) -> Result<Info, Status> {
    let s = symbol(rt, handle)?;
    Ok(match attribute {
        HSA_EXECUTABLE_SYMBOL_INFO_TYPE => Info::U32(HSA_SYMBOL_KIND_KERNEL),
        HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH => Info::U32(s.name.len() as u32),
        HSA_EXECUTABLE_SYMBOL_INFO_NAME => Info::Bytes(s.name.into_bytes()),
        HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE => {
            // ROCr's linkage for a global ELF symbol, which every `.kd` is.
            Info::U32(HSA_SYMBOL_LINKAGE_PROGRAM)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION => Info::Bool(true),
        HSA_EXECUTABLE_SYMBOL_INFO_AGENT => Info::U64(s.agent),
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT => Info::U64(s.kernel_object),
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE => Info::U32(s.kernarg_segment_size),
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT => {
            Info::U32(s.kernarg_segment_alignment)
        }
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE => Info::U32(s.group_segment_size),
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE => Info::U32(s.private_segment_size),
        HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK => Info::Bool(s.dynamic_callstack),
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

/// `hsa_executable_get_info`.
fn executable_info(rt: &Runtime, executable: u64, attribute: u32) -> Result<Info, Status> {
    let inner = rt.executables.lock();
    let e = inner
        .executables
        .get(&executable)
        .ok_or(HSA_STATUS_ERROR_INVALID_EXECUTABLE)?;
    Ok(match attribute {
        HSA_EXECUTABLE_INFO_PROFILE => Info::U32(e.profile),
        HSA_EXECUTABLE_INFO_STATE => Info::U32(if e.frozen {
            HSA_EXECUTABLE_STATE_FROZEN
        } else {
            HSA_EXECUTABLE_STATE_UNFROZEN
        }),
        HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE => Info::U32(e.rounding_mode),
        _ => return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT),
    })
}

// ===========================================================================
// Exports
// ===========================================================================

/// Runs `f` on the runtime and writes its handle to `out` (null `out`:
/// INVALID_ARGUMENT, checked first, as ROCr's `IS_BAD_PTR`).
///
/// # Safety
/// `out` is null or valid for a write of a handle.
unsafe fn make<H>(
    out: *mut H,
    handle: fn(u64) -> H,
    f: impl FnOnce(&Runtime) -> Result<u64, Status>,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if out.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    match f(&rt) {
        // SAFETY: non-null and valid for a handle write (caller's contract).
        Ok(h) => unsafe { put(out, handle(h)) },
        Err(s) => s,
    }
}

/// Runs `f` on the runtime.
fn with(f: impl FnOnce(&Runtime) -> Result<(), Status>) -> Status {
    match runtime().and_then(|rt| f(&rt)) {
        Ok(()) => HSA_STATUS_SUCCESS,
        Err(s) => s,
    }
}

/// `hsa_executable_create_alt`.
///
/// # Safety
/// `executable` is null or valid for a write of `hsa_executable_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_create_alt(
    profile: u32,
    default_float_rounding_mode: u32,
    _options: *const c_char,
    executable: *mut hsa_api::Executable,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe {
        make(executable, hsa_api::Executable, |rt| {
            create(rt, profile, default_float_rounding_mode)
        })
    }
}

/// `hsa_executable_destroy`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_destroy(executable: hsa_api::Executable) -> Status {
    with(|rt| destroy(rt, executable.0))
}

/// `hsa_code_object_reader_create_from_memory`: a null or empty buffer or
/// a null out-pointer is INVALID_ARGUMENT (ROCr `hsa.cpp`).
///
/// # Safety
/// `code_object` is null or valid for reads of `size` bytes;
/// `code_object_reader` is null or valid for a write of
/// `hsa_code_object_reader_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    code_object_reader: *mut CodeObjectReader,
) -> Status {
    let copy = |rt: &Runtime| {
        if code_object.is_null() {
            return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null and holds `size` bytes (caller's contract);
        // copied before returning.
        let bytes = unsafe { std::slice::from_raw_parts(code_object.cast::<u8>(), size) };
        create_reader(rt, bytes)
    };
    // SAFETY: forwarded caller contract.
    unsafe { make(code_object_reader, CodeObjectReader, copy) }
}

/// `hsa_code_object_reader_destroy`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_code_object_reader_destroy(
    code_object_reader: CodeObjectReader,
) -> Status {
    with(|rt| destroy_reader(rt, code_object_reader.0))
}

/// `hsa_executable_load_agent_code_object`; `loaded_code_object` may be
/// null.
///
/// # Safety
/// `loaded_code_object` is null or valid for a write of
/// `hsa_loaded_code_object_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: hsa_api::Executable,
    agent: Agent,
    code_object_reader: CodeObjectReader,
    _options: *const c_char,
    loaded_code_object: *mut LoadedCodeObject,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    match load(&rt, executable.0, agent.0, code_object_reader.0) {
        Ok(_) if loaded_code_object.is_null() => HSA_STATUS_SUCCESS,
        // SAFETY: non-null and valid for a handle write (caller's contract).
        Ok(h) => unsafe { put(loaded_code_object, LoadedCodeObject(h)) },
        Err(s) => s,
    }
}

/// `hsa_executable_freeze`.
///
/// # Safety
/// None beyond the C ABI.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_freeze(
    executable: hsa_api::Executable,
    _options: *const c_char,
) -> Status {
    with(|rt| freeze(rt, executable.0))
}

/// `hsa_executable_get_info`.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_get_info(
    executable: hsa_api::Executable,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { answer(value, |rt| executable_info(rt, executable.0, attribute)) }
}

/// `hsa_executable_get_symbol_by_name`: a null name or out-pointer is
/// INVALID_ARGUMENT (ROCr `hsa.cpp`).
///
/// # Safety
/// `symbol_name` is null or NUL-terminated; `agent` is null or points to
/// an `hsa_agent_t`; `symbol` is null or valid for a write of
/// `hsa_executable_symbol_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: hsa_api::Executable,
    symbol_name: *const c_char,
    agent: *const Agent,
    symbol: *mut ExecutableSymbol,
) -> Status {
    let find = |rt: &Runtime| {
        if symbol_name.is_null() {
            return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: non-null and NUL-terminated (caller's contract).
        let name = unsafe { CStr::from_ptr(symbol_name) }.to_bytes();
        // SAFETY: non-null and points to an `hsa_agent_t` (caller's
        // contract).
        let agent = (!agent.is_null()).then(|| unsafe { agent.read_unaligned() }.0);
        symbol_by_name(rt, executable.0, name, agent)
    };
    // SAFETY: forwarded caller contract.
    unsafe { make(symbol, ExecutableSymbol, find) }
}

/// `hsa_executable_symbol_get_info`.
///
/// # Safety
/// `value` is null or valid for the attribute's C type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_executable_symbol_get_info(
    executable_symbol: ExecutableSymbol,
    attribute: u32,
    value: *mut c_void,
) -> Status {
    // SAFETY: forwarded caller contract.
    unsafe { answer(value, |rt| symbol_info(rt, executable_symbol.0, attribute)) }
}

// ===========================================================================
// Tests (code-object ones: tests/tests/sim_hsa_executable.rs)
// ===========================================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hsa::AgentSpec;

    fn rt() -> Runtime {
        Runtime::new(&AgentSpec::parse_list("gfx942,gfx90a").unwrap())
    }

    fn gpu(rt: &Runtime) -> u64 {
        rt.agents[1].handle
    }

    #[test]
    fn a_reader_keeps_bad_bytes_and_the_load_refuses_them() {
        let rt = rt();
        let exec = create(&rt, 0, 0).unwrap();
        let reader = create_reader(&rt, b"\x7fELF not really").unwrap();
        assert_eq!(
            load(&rt, exec, gpu(&rt), reader),
            Err(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
        );
        destroy_reader(&rt, reader).unwrap();
        destroy(&rt, exec).unwrap();
    }

    #[test]
    fn a_reader_needs_bytes() {
        assert_eq!(
            create_reader(&rt(), &[]),
            Err(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
    }

    #[test]
    fn handles_are_distinct_and_non_zero() {
        let rt = rt();
        let a = create(&rt, 0, 0).unwrap();
        let b = create(&rt, 1, 2).unwrap();
        let r = create_reader(&rt, b"x").unwrap();
        assert!(a != 0 && a != b && r != a && r != b);
    }

    #[test]
    fn unknown_handles_are_refused_with_their_kind() {
        let rt = rt();
        let exec = create(&rt, 0, 0).unwrap();
        let reader = create_reader(&rt, b"x").unwrap();
        assert_eq!(
            destroy(&rt, 12345),
            Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE)
        );
        assert_eq!(freeze(&rt, 12345), Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE));
        assert_eq!(
            destroy_reader(&rt, 12345),
            Err(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)
        );
        assert_eq!(
            load(&rt, 12345, gpu(&rt), reader),
            Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE)
        );
        assert_eq!(
            load(&rt, exec, gpu(&rt), 12345),
            Err(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)
        );
        assert_eq!(
            symbol_by_name(&rt, 12345, b"k.kd", Some(gpu(&rt))),
            Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE)
        );
        assert_eq!(
            symbol_info(&rt, 12345, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT).err(),
            Some(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL)
        );
        // A reader is not an executable, nor the reverse.
        assert_eq!(
            destroy(&rt, reader),
            Err(HSA_STATUS_ERROR_INVALID_EXECUTABLE)
        );
        assert_eq!(
            destroy_reader(&rt, exec),
            Err(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)
        );
    }

    #[test]
    fn a_frozen_executable_refuses_loads_and_a_second_freeze() {
        let rt = rt();
        let exec = create(&rt, 0, 0).unwrap();
        // Checked before the bytes are parsed, as in ROCr.
        let reader = create_reader(&rt, b"not a code object").unwrap();
        freeze(&rt, exec).unwrap();
        assert_eq!(
            load(&rt, exec, gpu(&rt), reader),
            Err(HSA_STATUS_ERROR_FROZEN_EXECUTABLE)
        );
        assert_eq!(freeze(&rt, exec), Err(HSA_STATUS_ERROR_FROZEN_EXECUTABLE));
        assert!(matches!(
            executable_info(&rt, exec, HSA_EXECUTABLE_INFO_STATE),
            Ok(Info::U32(HSA_EXECUTABLE_STATE_FROZEN))
        ));
    }

    #[test]
    fn an_empty_executable_has_no_symbols() {
        let rt = rt();
        let exec = create(&rt, 0, 0).unwrap();
        freeze(&rt, exec).unwrap();
        assert_eq!(
            symbol_by_name(&rt, exec, b"fill_u32.kd", Some(gpu(&rt))),
            Err(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
        );
        assert!(rt.executables.kernel_at(gpu(&rt), 0x1000).is_none());
    }

    #[test]
    fn create_refuses_unknown_profiles_and_rounding_modes() {
        let rt = rt();
        assert_eq!(create(&rt, 2, 0), Err(HSA_STATUS_ERROR_INVALID_ARGUMENT));
        assert_eq!(create(&rt, 0, 3), Err(HSA_STATUS_ERROR_INVALID_ARGUMENT));
        let exec = create(&rt, HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR).unwrap();
        assert!(matches!(
            executable_info(&rt, exec, HSA_EXECUTABLE_INFO_PROFILE),
            Ok(Info::U32(HSA_PROFILE_FULL))
        ));
        assert!(matches!(
            executable_info(&rt, exec, HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE),
            Ok(Info::U32(HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR))
        ));
    }

    #[test]
    fn only_the_agents_processor_with_compatible_features_runs() {
        use aqueduct_abi::code_object::CodeObjectVersion;
        let target =
            |e_flags| CoTarget::from_e_flags(e_flags, CodeObjectVersion::V5).expect("known mach");
        let mut profiles = crate::hsa::profiles();
        let (mi300x, mi210) = (profiles.next().unwrap(), profiles.next().unwrap());
        // gfx942 (mach 0x4c) with both features "any" (0x100 | 0x400).
        let gfx942_any = target(0x04c | 0x100 | 0x400);
        assert!(runs_on(&gfx942_any, mi300x));
        assert!(!runs_on(&gfx942_any, mi210));
        // xnack+ (0x300) clashes with the agents' xnack-.
        assert!(!runs_on(&target(0x04c | 0x300 | 0x400), mi300x));
        // gfx9-4-generic (0x5f): ROCr would load it; the simulator does not.
        assert!(!runs_on(&target(0x05f | 0x100 | 0x400), mi300x));
    }
}
