//! The C interface of `libhsa-runtime64`, written once: status codes, the
//! enumerators passed to and returned by its functions, the handle types, the
//! callbacks, and the function table.
//!
//! Everything here mirrors `hsa.h` and `hsa_ext_amd.h` and is not ours to
//! change. Three parties use it and none keeps a copy: the host shim resolves
//! [`Api`] from whichever runtime it loads (ROCr or the simulator), the
//! simulator's `cdylib` exports every function of the list and proves at
//! compile time that each export has the table's exact signature (it builds
//! an `Api` from its exports), and the host's unit tests wrap the simulator's
//! table with fault injection. `tests/tests/rocr_headers.rs` checks every
//! enumerator against ROCr's headers, and `host/tests/real_rocr.rs` checks
//! that ROCr exports every symbol and that [`status_text`] is ROCr's own text.
//!
//! The list is handed to macros by [`with_hsa_functions!`](crate::with_hsa_functions):
//! a consumer writes a `macro_rules!` taking the list and calls
//! `with_hsa_functions!(its_macro)` in a module that glob-imports this one
//! (the list names the types here unqualified).
//!
//! Enumerations are plain `u32` constants under their C names, so a reader
//! can hold the headers beside the code; the ones also stored in memory
//! shared with devices are typed newtypes in [`crate::hsa`] and
//! [`crate::aql`].

pub use core::ffi::{CStr, c_char, c_void};

pub use crate::hsa::{HsaQueue, SignalHandle};

// ===========================================================================
// Status codes
// ===========================================================================

/// `hsa_status_t`.
pub type Status = u32;

/// Declares the status constants, their table and `hsa_status_string`'s
/// texts (`"<NAME>: <text>"`, as ROCr composes them).
macro_rules! statuses {
    ($($name:ident = $value:expr, $text:literal;)+) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: ", $text)]
            pub const $name: Status = $value;
        )+

        /// Every status above: value, C name and `hsa_status_string`'s text.
        pub const STATUSES: &[(Status, &str, &CStr)] = &[$((
            $value,
            stringify!($name),
            c_str(concat!(stringify!($name), ": ", $text, "\0")),
        )),+];
    };
}

/// A NUL-terminated literal as a `CStr` (at compile time).
const fn c_str(text: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(text.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("status text is not NUL-terminated or has an inner NUL"),
    }
}

statuses! {
    HSA_STATUS_SUCCESS = 0x0, "The function has been executed successfully.";
    HSA_STATUS_INFO_BREAK = 0x1, "A traversal over a list of elements has been interrupted by the application before completing.";
    HSA_STATUS_ERROR = 0x1000, "A generic error has occurred.";
    HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001, "One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.";
    HSA_STATUS_ERROR_INVALID_QUEUE_CREATION = 0x1002, "The requested queue creation is not valid.";
    HSA_STATUS_ERROR_INVALID_ALLOCATION = 0x1003, "The requested allocation is not valid.";
    HSA_STATUS_ERROR_INVALID_AGENT = 0x1004, "The agent is invalid.";
    HSA_STATUS_ERROR_INVALID_REGION = 0x1005, "The memory region is invalid.";
    HSA_STATUS_ERROR_INVALID_SIGNAL = 0x1006, "The signal is invalid.";
    HSA_STATUS_ERROR_INVALID_QUEUE = 0x1007, "The queue is invalid.";
    HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008, "The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events.";
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT = 0x1009, "The AQL packet is malformed.";
    HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B, "An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero.";
    HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS = 0x100D, "The arguments passed to a functions are not compatible.";
    HSA_STATUS_ERROR_INVALID_ISA = 0x100F, "The instruction set architecture is invalid.";
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010, "The code object is invalid.";
    HSA_STATUS_ERROR_INVALID_EXECUTABLE = 0x1011, "The executable is invalid.";
    HSA_STATUS_ERROR_FROZEN_EXECUTABLE = 0x1012, "The executable is frozen.";
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013, "There is no symbol with the given name.";
    HSA_STATUS_ERROR_EXCEPTION = 0x1016, "An HSAIL operation resulted in a hardware exception.";
    HSA_STATUS_ERROR_INVALID_ISA_NAME = 0x1017, "The instruction set architecture name is invalid.";
    HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL = 0x1019, "The executable symbol is invalid.";
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER = 0x1021, "The code object reader is invalid.";
    // hsa_ext_amd.h numbers its additions from 40, not from 0x1000.
    HSA_STATUS_ERROR_INVALID_MEMORY_POOL = 40, "The memory pool is invalid.";
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION = 41, "The agent attempted to access memory beyond the largest legal address.";
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION = 42, "The agent attempted to execute an illegal shader instruction.";
    HSA_STATUS_ERROR_MEMORY_FAULT = 43, "Agent attempted to access an inaccessible address.";
}

/// `hsa_status_string`'s text for `status` (ROCr's, checked against the
/// library by `host/tests/real_rocr.rs`); `None` for a status HSA does not
/// define.
pub fn status_text(status: Status) -> Option<&'static CStr> {
    STATUSES
        .iter()
        .find(|(value, _, _)| *value == status)
        .map(|&(_, _, text)| text)
}

/// The C name of `status`, if HSA defines it.
pub fn status_name(status: Status) -> Option<&'static str> {
    STATUSES
        .iter()
        .find(|(value, _, _)| *value == status)
        .map(|&(_, name, _)| name)
}

// ===========================================================================
// Enumerators passed to and returned by the functions
// ===========================================================================

/// Declares enumerator constants under their C names and lists them for the
/// header check.
macro_rules! enumerators {
    ($($(#[$meta:meta])* $name:ident = $value:expr;)+) => {
        // Each constant is the C enumerator of the same name and value
        // (grouped below by the C enum type it belongs to, from `hsa.h` or
        // `hsa_ext_amd.h`), checked against ROCr's headers; the headers are
        // its documentation.
        $($(#[$meta])* #[allow(missing_docs)] pub const $name: u32 = $value;)+

        /// Every enumerator above with its C name, for the header check.
        pub const ENUMERATORS: &[(&str, u32)] = &[$((stringify!($name), $name)),+];
    };
}

enumerators! {
    // hsa_system_info_t
    HSA_SYSTEM_INFO_VERSION_MAJOR = 0;
    HSA_SYSTEM_INFO_VERSION_MINOR = 1;
    HSA_SYSTEM_INFO_TIMESTAMP = 2;
    HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY = 3;
    HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT = 4;
    HSA_SYSTEM_INFO_ENDIANNESS = 5;
    HSA_SYSTEM_INFO_MACHINE_MODEL = 6;

    // hsa_endianness_t, hsa_machine_model_t, hsa_profile_t
    HSA_ENDIANNESS_LITTLE = 0;
    HSA_ENDIANNESS_BIG = 1;
    HSA_MACHINE_MODEL_SMALL = 0;
    HSA_MACHINE_MODEL_LARGE = 1;
    HSA_PROFILE_BASE = 0;
    HSA_PROFILE_FULL = 1;

    // hsa_default_float_rounding_mode_t
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT = 0;
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO = 1;
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR = 2;

    // hsa_agent_info_t
    HSA_AGENT_INFO_NAME = 0;
    HSA_AGENT_INFO_VENDOR_NAME = 1;
    HSA_AGENT_INFO_FEATURE = 2;
    HSA_AGENT_INFO_MACHINE_MODEL = 3;
    HSA_AGENT_INFO_PROFILE = 4;
    HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE = 5;
    HSA_AGENT_INFO_WAVEFRONT_SIZE = 6;
    HSA_AGENT_INFO_WORKGROUP_MAX_DIM = 7;
    HSA_AGENT_INFO_WORKGROUP_MAX_SIZE = 8;
    HSA_AGENT_INFO_GRID_MAX_DIM = 9;
    HSA_AGENT_INFO_GRID_MAX_SIZE = 10;
    HSA_AGENT_INFO_FBARRIER_MAX_SIZE = 11;
    HSA_AGENT_INFO_QUEUES_MAX = 12;
    HSA_AGENT_INFO_QUEUE_MIN_SIZE = 13;
    HSA_AGENT_INFO_QUEUE_MAX_SIZE = 14;
    HSA_AGENT_INFO_QUEUE_TYPE = 15;
    HSA_AGENT_INFO_NODE = 16;
    HSA_AGENT_INFO_DEVICE = 17;
    HSA_AGENT_INFO_ISA = 19;
    HSA_AGENT_INFO_VERSION_MAJOR = 21;
    HSA_AGENT_INFO_VERSION_MINOR = 22;

    // hsa_agent_feature_t, hsa_device_type_t
    HSA_AGENT_FEATURE_KERNEL_DISPATCH = 1;
    HSA_AGENT_FEATURE_AGENT_DISPATCH = 2;
    HSA_DEVICE_TYPE_CPU = 0;
    HSA_DEVICE_TYPE_GPU = 1;
    HSA_DEVICE_TYPE_DSP = 2;

    // hsa_amd_agent_info_t (hsa_ext_amd.h)
    HSA_AMD_AGENT_INFO_CHIP_ID = 0xA000;
    HSA_AMD_AGENT_INFO_CACHELINE_SIZE = 0xA001;
    HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT = 0xA002;
    HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY = 0xA003;
    HSA_AMD_AGENT_INFO_BDFID = 0xA006;
    HSA_AMD_AGENT_INFO_PRODUCT_NAME = 0xA009;
    HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU = 0xA00A;
    HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU = 0xA00B;
    HSA_AMD_AGENT_INFO_DOMAIN = 0xA00F;
    HSA_AMD_AGENT_INFO_UUID = 0xA011;

    // hsa_isa_info_t
    HSA_ISA_INFO_NAME_LENGTH = 0;
    HSA_ISA_INFO_NAME = 1;

    // hsa_wait_state_t
    HSA_WAIT_STATE_BLOCKED = 0;
    HSA_WAIT_STATE_ACTIVE = 1;

    // hsa_region_segment_t, hsa_region_global_flag_t, hsa_region_info_t
    HSA_REGION_SEGMENT_GLOBAL = 0;
    HSA_REGION_SEGMENT_READONLY = 1;
    HSA_REGION_SEGMENT_PRIVATE = 2;
    HSA_REGION_SEGMENT_GROUP = 3;
    HSA_REGION_SEGMENT_KERNARG = 4;
    HSA_REGION_GLOBAL_FLAG_KERNARG = 1;
    HSA_REGION_GLOBAL_FLAG_FINE_GRAINED = 2;
    HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED = 4;
    HSA_REGION_INFO_SEGMENT = 0;
    HSA_REGION_INFO_GLOBAL_FLAGS = 1;
    HSA_REGION_INFO_SIZE = 2;
    HSA_REGION_INFO_ALLOC_MAX_SIZE = 4;
    HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED = 5;
    HSA_REGION_INFO_RUNTIME_ALLOC_GRANULE = 6;
    HSA_REGION_INFO_RUNTIME_ALLOC_ALIGNMENT = 7;

    // hsa_amd_memory_pool_info_t
    HSA_AMD_MEMORY_POOL_INFO_SEGMENT = 0;
    HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS = 1;
    HSA_AMD_MEMORY_POOL_INFO_SIZE = 2;
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED = 5;
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE = 6;
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT = 7;
    HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL = 15;
    HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE = 16;

    // hsa_amd_segment_t
    HSA_AMD_SEGMENT_GLOBAL = 0;
    HSA_AMD_SEGMENT_READONLY = 1;
    HSA_AMD_SEGMENT_PRIVATE = 2;
    HSA_AMD_SEGMENT_GROUP = 3;

    // hsa_amd_memory_pool_global_flag_t
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT = 1;
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED = 2;
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED = 4;

    // hsa_executable_info_t, hsa_executable_state_t
    HSA_EXECUTABLE_INFO_PROFILE = 1;
    HSA_EXECUTABLE_INFO_STATE = 2;
    HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE = 3;
    HSA_EXECUTABLE_STATE_UNFROZEN = 0;
    HSA_EXECUTABLE_STATE_FROZEN = 1;

    // hsa_executable_symbol_info_t
    HSA_EXECUTABLE_SYMBOL_INFO_TYPE = 0;
    HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH = 1;
    HSA_EXECUTABLE_SYMBOL_INFO_NAME = 2;
    HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE = 5;
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE = 11;
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT = 12;
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE = 13;
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE = 14;
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK = 15;
    HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION = 17;
    HSA_EXECUTABLE_SYMBOL_INFO_AGENT = 20;
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT = 22;

    // hsa_symbol_kind_t, hsa_symbol_linkage_t
    HSA_SYMBOL_KIND_VARIABLE = 0;
    HSA_SYMBOL_KIND_KERNEL = 1;
    HSA_SYMBOL_KIND_INDIRECT_FUNCTION = 2;
    HSA_SYMBOL_LINKAGE_MODULE = 0;
    HSA_SYMBOL_LINKAGE_PROGRAM = 1;
}

// ===========================================================================
// Handles and callbacks
// ===========================================================================

/// Declares the opaque 64-bit handle types (`struct { uint64_t handle; }`
/// in C, passed by value like a `u64`).
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)+) => {$(
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, Default,
            zerocopy::FromBytes, zerocopy::IntoBytes,
            zerocopy::KnownLayout, zerocopy::Immutable,
        )]
        pub struct $name(pub u64);
    )+};
}

handles! {
    /// `hsa_agent_t`.
    Agent;
    /// `hsa_isa_t`.
    Isa;
    /// `hsa_amd_memory_pool_t`.
    MemoryPool;
    /// `hsa_region_t`. ROCr's regions and memory pools are the same
    /// objects (`core::MemoryRegion`), so a region's handle is its pool's.
    Region;
    /// `hsa_executable_t`.
    Executable;
    /// `hsa_code_object_reader_t`.
    CodeObjectReader;
    /// `hsa_executable_symbol_t`.
    ExecutableSymbol;
    /// `hsa_loaded_code_object_t`.
    LoadedCodeObject;
}

/// The callback of `hsa_iterate_agents`.
pub type AgentCallback = unsafe extern "C" fn(Agent, *mut c_void) -> Status;
/// The callback of `hsa_agent_iterate_isas`.
pub type IsaCallback = unsafe extern "C" fn(Isa, *mut c_void) -> Status;
/// The callback of `hsa_amd_agent_iterate_memory_pools`.
pub type PoolCallback = unsafe extern "C" fn(MemoryPool, *mut c_void) -> Status;
/// The callback of `hsa_agent_iterate_regions`.
pub type RegionCallback = unsafe extern "C" fn(Region, *mut c_void) -> Status;
/// The error callback of `hsa_queue_create`: called with the queue's error
/// status, the queue and the `data` given at creation.
pub type QueueErrorCallback = unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void);

// ===========================================================================
// The functions
// ===========================================================================

/// Hands the list of HSA functions to `$callback!`, one entry per function:
/// `fn name(arg: Type, ...) -> Ret;` (no `-> Ret` for `void`). Callbacks that
/// C allows to be null are `Option`s. The types are named unqualified: call
/// it where `aqueduct_abi::hsa_api::*` is imported.
///
/// This is every function aqueduct's simulator exports, and a superset of
/// what the host shim calls; ROCr exports all of them.
#[macro_export]
macro_rules! with_hsa_functions {
    ($callback:ident) => {
        $callback! {
            // Runtime, system and agents (hsa.h).
            fn hsa_init() -> Status;
            fn hsa_shut_down() -> Status;
            fn hsa_status_string(status: Status, status_string: *mut *const c_char) -> Status;
            fn hsa_system_get_info(attribute: u32, value: *mut c_void) -> Status;
            fn hsa_iterate_agents(callback: Option<AgentCallback>, data: *mut c_void) -> Status;
            fn hsa_agent_get_info(agent: Agent, attribute: u32, value: *mut c_void) -> Status;
            fn hsa_agent_iterate_isas(agent: Agent, callback: Option<IsaCallback>, data: *mut c_void) -> Status;
            fn hsa_isa_get_info_alt(isa: Isa, attribute: u32, value: *mut c_void) -> Status;

            // Memory (hsa_ext_amd.h, hsa.h).
            fn hsa_amd_agent_iterate_memory_pools(agent: Agent, callback: Option<PoolCallback>, data: *mut c_void) -> Status;
            fn hsa_amd_memory_pool_get_info(memory_pool: MemoryPool, attribute: u32, value: *mut c_void) -> Status;
            fn hsa_amd_memory_pool_allocate(memory_pool: MemoryPool, size: usize, flags: u32, ptr: *mut *mut c_void) -> Status;
            fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> Status;
            fn hsa_agent_iterate_regions(agent: Agent, callback: Option<RegionCallback>, data: *mut c_void) -> Status;
            fn hsa_region_get_info(region: Region, attribute: u32, value: *mut c_void) -> Status;
            fn hsa_amd_agents_allow_access(num_agents: u32, agents: *const Agent, flags: *const u32, ptr: *const c_void) -> Status;
            fn hsa_memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> Status;
            fn hsa_amd_memory_async_copy(dst: *mut c_void, dst_agent: Agent, src: *const c_void, src_agent: Agent, size: usize, num_dep_signals: u32, dep_signals: *const SignalHandle, completion_signal: SignalHandle) -> Status;

            // Signals.
            fn hsa_signal_create(initial_value: i64, num_consumers: u32, consumers: *const Agent, signal: *mut SignalHandle) -> Status;
            fn hsa_signal_destroy(signal: SignalHandle) -> Status;
            fn hsa_signal_load_relaxed(signal: SignalHandle) -> i64;
            fn hsa_signal_load_scacquire(signal: SignalHandle) -> i64;
            fn hsa_signal_store_relaxed(signal: SignalHandle, value: i64);
            fn hsa_signal_store_screlease(signal: SignalHandle, value: i64);
            fn hsa_signal_add_relaxed(signal: SignalHandle, value: i64);
            fn hsa_signal_add_scacquire(signal: SignalHandle, value: i64);
            fn hsa_signal_add_screlease(signal: SignalHandle, value: i64);
            fn hsa_signal_add_scacq_screl(signal: SignalHandle, value: i64);
            fn hsa_signal_cas_relaxed(signal: SignalHandle, expected: i64, value: i64) -> i64;
            fn hsa_signal_cas_scacquire(signal: SignalHandle, expected: i64, value: i64) -> i64;
            fn hsa_signal_cas_screlease(signal: SignalHandle, expected: i64, value: i64) -> i64;
            fn hsa_signal_cas_scacq_screl(signal: SignalHandle, expected: i64, value: i64) -> i64;
            fn hsa_signal_wait_relaxed(signal: SignalHandle, condition: u32, compare_value: i64, timeout_hint: u64, wait_state_hint: u32) -> i64;
            fn hsa_signal_wait_scacquire(signal: SignalHandle, condition: u32, compare_value: i64, timeout_hint: u64, wait_state_hint: u32) -> i64;

            // Queues.
            fn hsa_queue_create(agent: Agent, size: u32, queue_type: u32, callback: Option<QueueErrorCallback>, data: *mut c_void, private_segment_size: u32, group_segment_size: u32, queue: *mut *mut HsaQueue) -> Status;
            fn hsa_soft_queue_create(region: Region, size: u32, queue_type: u32, features: u32, doorbell_signal: SignalHandle, queue: *mut *mut HsaQueue) -> Status;
            fn hsa_queue_destroy(queue: *mut HsaQueue) -> Status;
            fn hsa_queue_inactivate(queue: *mut HsaQueue) -> Status;
            fn hsa_queue_load_read_index_scacquire(queue: *const HsaQueue) -> u64;
            fn hsa_queue_load_read_index_acquire(queue: *const HsaQueue) -> u64;
            fn hsa_queue_load_read_index_relaxed(queue: *const HsaQueue) -> u64;
            fn hsa_queue_load_write_index_scacquire(queue: *const HsaQueue) -> u64;
            fn hsa_queue_load_write_index_acquire(queue: *const HsaQueue) -> u64;
            fn hsa_queue_load_write_index_relaxed(queue: *const HsaQueue) -> u64;
            fn hsa_queue_store_write_index_relaxed(queue: *const HsaQueue, value: u64);
            fn hsa_queue_store_write_index_screlease(queue: *const HsaQueue, value: u64);
            fn hsa_queue_store_write_index_release(queue: *const HsaQueue, value: u64);
            fn hsa_queue_store_read_index_relaxed(queue: *const HsaQueue, value: u64);
            fn hsa_queue_store_read_index_screlease(queue: *const HsaQueue, value: u64);
            fn hsa_queue_store_read_index_release(queue: *const HsaQueue, value: u64);
            fn hsa_queue_add_write_index_scacq_screl(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_add_write_index_acq_rel(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_add_write_index_scacquire(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_add_write_index_acquire(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_add_write_index_relaxed(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_add_write_index_screlease(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_add_write_index_release(queue: *const HsaQueue, value: u64) -> u64;
            fn hsa_queue_cas_write_index_scacq_screl(queue: *const HsaQueue, expected: u64, value: u64) -> u64;
            fn hsa_queue_cas_write_index_acq_rel(queue: *const HsaQueue, expected: u64, value: u64) -> u64;
            fn hsa_queue_cas_write_index_scacquire(queue: *const HsaQueue, expected: u64, value: u64) -> u64;
            fn hsa_queue_cas_write_index_acquire(queue: *const HsaQueue, expected: u64, value: u64) -> u64;
            fn hsa_queue_cas_write_index_relaxed(queue: *const HsaQueue, expected: u64, value: u64) -> u64;
            fn hsa_queue_cas_write_index_screlease(queue: *const HsaQueue, expected: u64, value: u64) -> u64;
            fn hsa_queue_cas_write_index_release(queue: *const HsaQueue, expected: u64, value: u64) -> u64;

            // Code objects and executables.
            fn hsa_executable_create_alt(profile: u32, default_float_rounding_mode: u32, options: *const c_char, executable: *mut Executable) -> Status;
            fn hsa_executable_destroy(executable: Executable) -> Status;
            fn hsa_code_object_reader_create_from_memory(code_object: *const c_void, size: usize, code_object_reader: *mut CodeObjectReader) -> Status;
            fn hsa_code_object_reader_destroy(code_object_reader: CodeObjectReader) -> Status;
            fn hsa_executable_load_agent_code_object(executable: Executable, agent: Agent, code_object_reader: CodeObjectReader, options: *const c_char, loaded_code_object: *mut LoadedCodeObject) -> Status;
            fn hsa_executable_freeze(executable: Executable, options: *const c_char) -> Status;
            fn hsa_executable_get_info(executable: Executable, attribute: u32, value: *mut c_void) -> Status;
            fn hsa_executable_get_symbol_by_name(executable: Executable, symbol_name: *const c_char, agent: *const Agent, symbol: *mut ExecutableSymbol) -> Status;
            fn hsa_executable_symbol_get_info(executable_symbol: ExecutableSymbol, attribute: u32, value: *mut c_void) -> Status;
        }
    };
}

/// Declares [`Api`], [`SYMBOLS`] and [`Api::resolve`] from the list.
macro_rules! declare_api {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)+) => {
        /// The HSA functions, one field per C function, resolved from one
        /// runtime (or, in the simulator, its own exports).
        #[allow(non_snake_case)]
        #[derive(Clone, Copy)]
        pub struct Api {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($ty),*) $(-> $ret)?,
            )+
        }

        /// Every function of [`Api`], by C name, in declaration order.
        pub const SYMBOLS: &[&str] = &[$(stringify!($name)),+];

        impl Api {
            /// Looks every function up with `lookup` (a C symbol name to its
            /// address); the first name it cannot find is the error.
            ///
            /// # Safety
            /// Each address `lookup` returns must be the C function of that
            /// name with the signature declared here, and stay valid while
            /// the table is used.
            pub unsafe fn resolve(
                mut lookup: impl FnMut(&CStr) -> Option<*const c_void>,
            ) -> Result<Self, &'static str> {
                Ok(Self {
                    $(
                        $name: {
                            let name = c_str(concat!(stringify!($name), "\0"));
                            let address = lookup(name)
                                .filter(|a| !a.is_null())
                                .ok_or(stringify!($name))?;
                            // SAFETY: per the caller's contract, `address` is
                            // this function, with this signature; a data
                            // pointer and a function pointer have the same
                            // size on every target the host runs on.
                            unsafe {
                                core::mem::transmute::<
                                    *const c_void,
                                    unsafe extern "C" fn($($ty),*) $(-> $ret)?,
                                >(address)
                            }
                        },
                    )+
                })
            }
        }
    };
}

with_hsa_functions!(declare_api);

/// aqueduct's simulator extension, not part of ROCr's ABI: the simulated
/// runtime exports this function, ROCr does not, so a host looks it up
/// optionally. It writes up to `capacity` records of what the runtime's
/// dispatches executed so far, one per kernel name, and returns how many
/// kernels there are.
pub const SIM_KERNEL_STATS_SYMBOL: &str = "aqueduct_sim_kernel_stats_v2";

/// [`SIM_KERNEL_STATS_SYMBOL`]'s signature.
pub type SimKernelStatsFn =
    unsafe extern "C" fn(out: *mut SimKernelStats, capacity: usize) -> usize;

/// Bytes of a [`SimKernelStats`] name, its NUL included (longer names are
/// cut).
pub const SIM_KERNEL_NAME_BYTES: usize = 112;

/// What the simulated runtime's dispatches of one kernel executed, summed.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimKernelStats {
    /// The kernel's name, NUL-terminated UTF-8.
    pub name: [u8; SIM_KERNEL_NAME_BYTES],
    /// Dispatches of the kernel (AQL kernel dispatch packets processed).
    pub dispatches: u64,
    /// Waves run.
    pub waves: u64,
    /// Wave-instructions executed.
    pub instructions: u64,
    /// Sum over executed instructions of active lanes.
    pub lane_ops: u64,
    /// Wave-instructions executed that were matrix instructions (MFMA,
    /// SMFMAC).
    pub matrix_instructions: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_texts_name_their_status() {
        for &(value, name, text) in STATUSES {
            let text = text.to_str().expect("ASCII");
            assert!(text.starts_with(&format!("{name}: ")), "{text}");
            assert_eq!(
                status_text(value).map(CStr::to_bytes),
                Some(text.as_bytes())
            );
            assert_eq!(status_name(value), Some(name));
        }
        assert_eq!(status_text(0x7777), None);
        assert_eq!(
            status_name(HSA_STATUS_ERROR_MEMORY_FAULT),
            Some("HSA_STATUS_ERROR_MEMORY_FAULT")
        );
    }

    #[test]
    fn statuses_and_symbols_are_unique() {
        for (i, (a, name, _)) in STATUSES.iter().enumerate() {
            assert!(STATUSES[i + 1..].iter().all(|(b, _, _)| a != b), "{name}");
        }
        for (i, a) in SYMBOLS.iter().enumerate() {
            assert!(!SYMBOLS[i + 1..].contains(a), "{a} twice");
        }
        assert_eq!(SYMBOLS.len(), 72);
    }

    #[test]
    fn resolve_names_the_first_missing_symbol() {
        // SAFETY: nothing is resolved (the lookup finds nothing).
        let missing = unsafe { Api::resolve(|_| None) }.err();
        assert_eq!(missing, Some("hsa_init"));
        let mut asked = 0;
        // SAFETY: as above: the lookup fails at the third name.
        let missing = unsafe {
            Api::resolve(|_| {
                asked += 1;
                (asked < 3).then_some(core::ptr::dangling::<c_void>())
            })
        }
        .err();
        assert_eq!(missing, Some("hsa_status_string"));
    }
}
