//! The simulator's HSA loader (`sim/src/hsa/executable.rs`) with real code
//! objects, through its C exports called in-process: the four-call
//! sequence the host shim makes, symbol attributes against the code
//! object's descriptors and metadata, and ROCr's refusals (another gfx,
//! a frozen executable, an unknown symbol).
//!
//! The runtime is the process's one (`hsa_init`/`hsa_shut_down`,
//! refcounted, shared by this binary's tests); the tests work on whatever
//! GPU agents `AQUEDUCT_SIM_AGENTS` gives (by default one gfx942) and use
//! the other target's code object as the foreign one.

use std::ffi::{CString, c_void};

use aqueduct_abi::code_object::CodeObject;
use aqueduct_abi::hsa_api::*;
use aqueduct_sim::hsa::executable::{
    hsa_code_object_reader_create_from_memory, hsa_code_object_reader_destroy,
    hsa_executable_create_alt, hsa_executable_destroy, hsa_executable_freeze,
    hsa_executable_get_symbol_by_name, hsa_executable_load_agent_code_object,
    hsa_executable_symbol_get_info,
};
use aqueduct_sim::hsa::system::{hsa_init, hsa_shut_down};
use aqueduct_sim::hsa::{AgentKind, Runtime, runtime};
use aqueduct_tests::built_code_objects;

/// One `hsa_init` reference for the length of a test.
struct Session(std::sync::Arc<Runtime>);

impl Session {
    fn new() -> Self {
        // SAFETY: no arguments.
        assert_eq!(unsafe { hsa_init() }, HSA_STATUS_SUCCESS);
        Self(runtime().expect("initialised"))
    }

    /// The GPU agents: handle and processor.
    fn gpus(&self) -> Vec<(Agent, &'static str)> {
        self.0
            .agents
            .iter()
            .filter_map(|a| match a.kind {
                AgentKind::Gpu(p) => Some((Agent(a.handle), p.gfx())),
                AgentKind::Cpu => None,
            })
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: no arguments.
        unsafe { hsa_shut_down() };
    }
}

/// `aqueduct-device` built for `gfx`.
fn device_code(gfx: &str) -> Vec<u8> {
    let built = built_code_objects()
        .into_iter()
        .find(|b| b.gfx == gfx && b.package == "aqueduct-device")
        .unwrap_or_else(|| panic!("aqueduct-device for {gfx} was not built"));
    std::fs::read(&built.path).expect("read code object")
}

/// The simulated target that `gfx` is not.
fn other(gfx: &str) -> &'static str {
    if gfx == "gfx942" { "gfx90a" } else { "gfx942" }
}

fn create() -> Executable {
    let mut exec = Executable(0);
    // SAFETY: a valid out-pointer.
    let s = unsafe {
        hsa_executable_create_alt(
            HSA_PROFILE_BASE,
            HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
            std::ptr::null(),
            &mut exec,
        )
    };
    assert_eq!(s, HSA_STATUS_SUCCESS);
    assert_ne!(exec.0, 0);
    exec
}

fn reader(bytes: &[u8]) -> CodeObjectReader {
    let mut reader = CodeObjectReader(0);
    // SAFETY: `bytes` is valid for its length; a valid out-pointer.
    let s = unsafe {
        hsa_code_object_reader_create_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut reader)
    };
    assert_eq!(s, HSA_STATUS_SUCCESS);
    reader
}

fn load(exec: Executable, agent: Agent, reader: CodeObjectReader) -> Status {
    let mut loaded = LoadedCodeObject(0);
    // SAFETY: a valid out-pointer.
    unsafe {
        hsa_executable_load_agent_code_object(exec, agent, reader, std::ptr::null(), &mut loaded)
    }
}

fn freeze(exec: Executable) -> Status {
    // SAFETY: no pointers.
    unsafe { hsa_executable_freeze(exec, std::ptr::null()) }
}

fn symbol(exec: Executable, name: &str, agent: Option<Agent>) -> Result<ExecutableSymbol, Status> {
    let name = CString::new(name).unwrap();
    let mut symbol = ExecutableSymbol(0);
    let agent_ptr = agent
        .as_ref()
        .map_or(std::ptr::null(), |a| a as *const Agent);
    // SAFETY: a NUL-terminated name, null or a valid agent, a valid
    // out-pointer.
    match unsafe { hsa_executable_get_symbol_by_name(exec, name.as_ptr(), agent_ptr, &mut symbol) }
    {
        HSA_STATUS_SUCCESS => Ok(symbol),
        s => Err(s),
    }
}

/// A symbol attribute of C type `T`.
fn info<T: Copy + Default>(symbol: ExecutableSymbol, attribute: u32) -> T {
    let mut value = T::default();
    // SAFETY: `value` is the attribute's C type.
    let s = unsafe {
        hsa_executable_symbol_get_info(symbol, attribute, (&raw mut value).cast::<c_void>())
    };
    assert_eq!(s, HSA_STATUS_SUCCESS, "attribute {attribute}");
    value
}

fn destroy(exec: Executable, reader: CodeObjectReader) {
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(hsa_executable_destroy(exec), HSA_STATUS_SUCCESS);
        assert_eq!(hsa_code_object_reader_destroy(reader), HSA_STATUS_SUCCESS);
    }
}

#[test]
fn the_four_calls_load_every_kernel_with_the_code_objects_attributes() {
    let session = Session::new();
    for (agent, gfx) in session.gpus() {
        let bytes = device_code(gfx);
        let co = CodeObject::parse(&bytes).expect("parse");
        assert!(!co.kernels.is_empty());

        let exec = create();
        let r = reader(&bytes);
        assert_eq!(load(exec, agent, r), HSA_STATUS_SUCCESS);
        assert_eq!(freeze(exec), HSA_STATUS_SUCCESS);

        for kernel in &co.kernels {
            let m = &kernel.metadata;
            let d = &kernel.descriptor;
            assert!(m.symbol.ends_with(".kd"), "{}", m.symbol);
            let sym = symbol(exec, &m.symbol, Some(agent)).expect(&m.symbol);
            let object: u64 = info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
            assert_eq!(
                object % 64,
                0,
                "{}: descriptors are 64-byte aligned",
                m.name
            );
            assert_eq!(
                info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE),
                m.kernarg_segment_size as u32
            );
            assert_eq!(
                info::<u32>(
                    sym,
                    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT
                ),
                m.kernarg_segment_align as u32
            );
            assert_eq!(
                info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE),
                d.group_segment_fixed_size
            );
            assert_eq!(
                info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE),
                d.private_segment_fixed_size
            );
            assert_eq!(
                info::<bool>(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK),
                m.uses_dynamic_stack
            );
            assert_eq!(
                info::<u32>(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE),
                1,
                "HSA_SYMBOL_KIND_KERNEL"
            );
            assert_eq!(info::<u64>(sym, HSA_EXECUTABLE_SYMBOL_INFO_AGENT), agent.0);
            // NAME_LENGTH counts no NUL; NAME writes exactly that many bytes.
            let len: u32 = info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH);
            assert_eq!(len as usize, m.symbol.len());
            let mut name = vec![0xAAu8; len as usize + 1];
            // SAFETY: `name` holds NAME_LENGTH bytes and one more.
            let s = unsafe {
                hsa_executable_symbol_get_info(
                    sym,
                    HSA_EXECUTABLE_SYMBOL_INFO_NAME,
                    name.as_mut_ptr().cast(),
                )
            };
            assert_eq!(s, HSA_STATUS_SUCCESS);
            assert_eq!(&name[..len as usize], m.symbol.as_bytes());
            assert_eq!(name[len as usize], 0xAA, "NAME wrote past NAME_LENGTH");

            // The kernel object is the descriptor, in simulator memory.
            let mut at = [0u8; 64];
            session
                .0
                .memory
                .read_bytes(object, &mut at)
                .expect("mapped");
            let word = |i: usize| u32::from_le_bytes(at[i..i + 4].try_into().unwrap());
            assert_eq!(word(0), d.group_segment_fixed_size);
            assert_eq!(word(4), d.private_segment_fixed_size);
            assert_eq!(word(8), d.kernarg_size);
            assert_eq!(
                i64::from_le_bytes(at[16..24].try_into().unwrap()),
                d.kernel_code_entry_byte_offset
            );

            // And the packet processor finds the kernel by it, on this
            // agent only.
            let (program, index) = session
                .0
                .executables
                .kernel_at(agent.0, object)
                .expect("kernel_at");
            assert_eq!(program.code_object.kernels[index].metadata.symbol, m.symbol);
            assert!(
                session
                    .0
                    .executables
                    .kernel_at(agent.0 + 1, object)
                    .is_none()
            );
        }
        let first = &co.kernels[0];
        let sym = symbol(exec, &first.metadata.symbol, Some(agent)).unwrap();
        let object: u64 = info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);

        destroy(exec, r);
        assert!(session.0.executables.kernel_at(agent.0, object).is_none());
        let mut stale = 0u64;
        // SAFETY: a valid out-pointer.
        let s = unsafe {
            hsa_executable_symbol_get_info(
                sym,
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                (&raw mut stale).cast(),
            )
        };
        assert_eq!(s, HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
    }
}

#[test]
fn a_code_object_for_another_gfx_is_incompatible() {
    let session = Session::new();
    for (agent, gfx) in session.gpus() {
        let exec = create();
        let r = reader(&device_code(other(gfx)));
        // ROCr: "code object's ISA is not supported by the agent".
        assert_eq!(
            load(exec, agent, r),
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
        );
        // Nor does the CPU run GPU code.
        let cpu = Agent(session.0.agents[0].handle);
        let r2 = reader(&device_code(gfx));
        assert_eq!(load(exec, cpu, r2), HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
        assert_eq!(load(exec, Agent(0), r2), HSA_STATUS_ERROR_INVALID_AGENT);
        destroy(exec, r);
        // SAFETY: no pointers.
        let s = unsafe { hsa_code_object_reader_destroy(r2) };
        assert_eq!(s, HSA_STATUS_SUCCESS);
    }
}

#[test]
fn a_frozen_executable_takes_no_more_code_objects() {
    let session = Session::new();
    let (agent, gfx) = session.gpus()[0];
    let exec = create();
    let r = reader(&device_code(gfx));
    assert_eq!(load(exec, agent, r), HSA_STATUS_SUCCESS);
    assert_eq!(freeze(exec), HSA_STATUS_SUCCESS);
    assert_eq!(load(exec, agent, r), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    assert_eq!(freeze(exec), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    destroy(exec, r);
}

#[test]
fn symbols_are_found_by_kd_name_on_their_agent_only() {
    let session = Session::new();
    let (agent, gfx) = session.gpus()[0];
    let bytes = device_code(gfx);
    let co = CodeObject::parse(&bytes).unwrap();
    let kernel = &co.kernels[0].metadata;
    let exec = create();
    let r = reader(&bytes);
    assert_eq!(load(exec, agent, r), HSA_STATUS_SUCCESS);
    // Lookups need not wait for the freeze (ROCr does not check).
    assert!(symbol(exec, &kernel.symbol, Some(agent)).is_ok());
    assert_eq!(freeze(exec), HSA_STATUS_SUCCESS);
    for (name, agent) in [
        ("no_such_kernel.kd", Some(agent)),
        // The kernel's name, not its symbol's.
        (kernel.name.as_str(), Some(agent)),
        // Kernels are agent symbols: no program-symbol lookup finds them.
        (kernel.symbol.as_str(), None),
        (
            kernel.symbol.as_str(),
            Some(Agent(session.0.agents[0].handle)),
        ),
    ] {
        assert_eq!(
            symbol(exec, name, agent),
            Err(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME),
            "{name} on {agent:?}"
        );
    }
    destroy(exec, r);
}
