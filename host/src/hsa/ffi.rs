//! The C ABI of `libhsa-runtime64` that aqueduct uses: handle types, the
//! enumerator values it passes, and the function table resolved at load.
//!
//! Names follow `hsa.h` / `hsa_ext_amd.h`; the values are checked against the
//! installed ROCr headers by `tests/tests/rocr_headers.rs`.

use std::ffi::{c_char, c_void};

use aqueduct_abi::hsa::{HsaQueue, SignalHandle};

/// `hsa_status_t`.
pub type Status = u32;

pub const HSA_STATUS_SUCCESS: Status = 0x0;
pub const HSA_STATUS_INFO_BREAK: Status = 0x1;
pub const HSA_STATUS_ERROR: Status = 0x1000;
pub const HSA_STATUS_ERROR_INVALID_ARGUMENT: Status = 0x1001;
pub const HSA_STATUS_ERROR_OUT_OF_RESOURCES: Status = 0x1008;
pub const HSA_STATUS_ERROR_NOT_INITIALIZED: Status = 0x100B;

/// Declares the opaque 64-bit HSA handle types (`struct { uint64_t handle; }`
/// in C, passed by value like a `u64`).
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)+) => {$(
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// `hsa_executable_t`.
    Executable;
    /// `hsa_code_object_reader_t`.
    CodeObjectReader;
    /// `hsa_executable_symbol_t`.
    ExecutableSymbol;
    /// `hsa_loaded_code_object_t`.
    LoadedCodeObject;
}

// hsa_system_info_t
pub const HSA_SYSTEM_INFO_VERSION_MAJOR: u32 = 0;
pub const HSA_SYSTEM_INFO_VERSION_MINOR: u32 = 1;
pub const HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: u32 = 3;

// hsa_agent_info_t
pub const HSA_AGENT_INFO_NAME: u32 = 0;
pub const HSA_AGENT_INFO_VENDOR_NAME: u32 = 1;
pub const HSA_AGENT_INFO_WAVEFRONT_SIZE: u32 = 6;
pub const HSA_AGENT_INFO_WORKGROUP_MAX_DIM: u32 = 7;
pub const HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: u32 = 8;
pub const HSA_AGENT_INFO_GRID_MAX_DIM: u32 = 9;
pub const HSA_AGENT_INFO_GRID_MAX_SIZE: u32 = 10;
pub const HSA_AGENT_INFO_QUEUES_MAX: u32 = 12;
pub const HSA_AGENT_INFO_QUEUE_MIN_SIZE: u32 = 13;
pub const HSA_AGENT_INFO_QUEUE_MAX_SIZE: u32 = 14;
pub const HSA_AGENT_INFO_NODE: u32 = 16;
pub const HSA_AGENT_INFO_DEVICE: u32 = 17;

// hsa_device_type_t
pub const HSA_DEVICE_TYPE_CPU: u32 = 0;
pub const HSA_DEVICE_TYPE_GPU: u32 = 1;
pub const HSA_DEVICE_TYPE_DSP: u32 = 2;

// hsa_amd_agent_info_t
pub const HSA_AMD_AGENT_INFO_CHIP_ID: u32 = 0xA000;
pub const HSA_AMD_AGENT_INFO_CACHELINE_SIZE: u32 = 0xA001;
pub const HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: u32 = 0xA002;
pub const HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: u32 = 0xA003;
pub const HSA_AMD_AGENT_INFO_BDFID: u32 = 0xA006;
pub const HSA_AMD_AGENT_INFO_PRODUCT_NAME: u32 = 0xA009;
pub const HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU: u32 = 0xA00A;
pub const HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU: u32 = 0xA00B;
pub const HSA_AMD_AGENT_INFO_DOMAIN: u32 = 0xA00F;
pub const HSA_AMD_AGENT_INFO_UUID: u32 = 0xA011;

// hsa_isa_info_t
pub const HSA_ISA_INFO_NAME_LENGTH: u32 = 0;
pub const HSA_ISA_INFO_NAME: u32 = 1;

// hsa_amd_memory_pool_info_t
pub const HSA_AMD_MEMORY_POOL_INFO_SEGMENT: u32 = 0;
pub const HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: u32 = 1;
pub const HSA_AMD_MEMORY_POOL_INFO_SIZE: u32 = 2;
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE: u32 = 6;
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: u32 = 7;
pub const HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL: u32 = 15;
pub const HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE: u32 = 16;

// hsa_amd_segment_t
pub const HSA_AMD_SEGMENT_GLOBAL: u32 = 0;
pub const HSA_AMD_SEGMENT_READONLY: u32 = 1;
pub const HSA_AMD_SEGMENT_PRIVATE: u32 = 2;
pub const HSA_AMD_SEGMENT_GROUP: u32 = 3;

// hsa_amd_memory_pool_global_flag_t
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT: u32 = 1;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED: u32 = 2;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;

// hsa_executable_symbol_info_t
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT: u32 = 12;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;

// hsa_profile_t, hsa_default_float_rounding_mode_t, hsa_wait_state_t
pub const HSA_PROFILE_FULL: u32 = 1;
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT: u32 = 0;
pub const HSA_WAIT_STATE_BLOCKED: u32 = 0;
pub const HSA_WAIT_STATE_ACTIVE: u32 = 1;

pub type AgentCallback = unsafe extern "C" fn(Agent, *mut c_void) -> Status;
pub type IsaCallback = unsafe extern "C" fn(Isa, *mut c_void) -> Status;
pub type PoolCallback = unsafe extern "C" fn(MemoryPool, *mut c_void) -> Status;
pub type QueueErrorCallback = unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void);

/// Declares the function table: one field per C function, the list of
/// symbol names, and a loader that resolves them all.
macro_rules! api {
    ($( $name:ident : fn($($arg:ty),*) $(-> $ret:ty)?; )+) => {
        /// The HSA functions aqueduct calls, resolved from one library.
        #[allow(non_snake_case)]
        pub struct Api {
            $( pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )+
        }

        /// Every symbol [`Api`] resolves, in declaration order.
        pub const SYMBOLS: &[&str] = &[$(stringify!($name)),+];

        impl Api {
            /// Resolves every symbol; the first missing one is the error.
            ///
            /// # Safety
            /// `lib` must be an HSA runtime: each symbol must have the C
            /// signature declared here. The pointers are valid while `lib`
            /// stays loaded.
            pub unsafe fn resolve(lib: &libloading::Library) -> Result<Self, &'static str> {
                Ok(Self {
                    $(
                        // SAFETY: the caller guarantees the symbol has this
                        // signature; the pointer is copied out and used only
                        // while the library is loaded (System keeps it).
                        $name: unsafe {
                            *lib.get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                            .map_err(|_| stringify!($name))?
                        },
                    )+
                })
            }
        }
    };
}

api! {
    hsa_init: fn() -> Status;
    hsa_shut_down: fn() -> Status;
    hsa_status_string: fn(Status, *mut *const c_char) -> Status;
    hsa_system_get_info: fn(u32, *mut c_void) -> Status;
    hsa_iterate_agents: fn(AgentCallback, *mut c_void) -> Status;
    hsa_agent_get_info: fn(Agent, u32, *mut c_void) -> Status;
    hsa_agent_iterate_isas: fn(Agent, IsaCallback, *mut c_void) -> Status;
    hsa_isa_get_info_alt: fn(Isa, u32, *mut c_void) -> Status;
    hsa_amd_agent_iterate_memory_pools: fn(Agent, PoolCallback, *mut c_void) -> Status;
    hsa_amd_memory_pool_get_info: fn(MemoryPool, u32, *mut c_void) -> Status;
    hsa_amd_memory_pool_allocate: fn(MemoryPool, usize, u32, *mut *mut c_void) -> Status;
    hsa_amd_memory_pool_free: fn(*mut c_void) -> Status;
    hsa_amd_agents_allow_access: fn(u32, *const Agent, *const u32, *const c_void) -> Status;
    hsa_memory_copy: fn(*mut c_void, *const c_void, usize) -> Status;
    hsa_amd_memory_async_copy: fn(*mut c_void, Agent, *const c_void, Agent, usize, u32, *const SignalHandle, SignalHandle) -> Status;
    hsa_signal_create: fn(i64, u32, *const Agent, *mut SignalHandle) -> Status;
    hsa_signal_destroy: fn(SignalHandle) -> Status;
    hsa_signal_load_relaxed: fn(SignalHandle) -> i64;
    hsa_signal_load_scacquire: fn(SignalHandle) -> i64;
    hsa_signal_store_relaxed: fn(SignalHandle, i64);
    hsa_signal_store_screlease: fn(SignalHandle, i64);
    hsa_signal_add_relaxed: fn(SignalHandle, i64);
    hsa_signal_add_scacquire: fn(SignalHandle, i64);
    hsa_signal_add_screlease: fn(SignalHandle, i64);
    hsa_signal_add_scacq_screl: fn(SignalHandle, i64);
    hsa_signal_cas_relaxed: fn(SignalHandle, i64, i64) -> i64;
    hsa_signal_cas_scacquire: fn(SignalHandle, i64, i64) -> i64;
    hsa_signal_cas_screlease: fn(SignalHandle, i64, i64) -> i64;
    hsa_signal_cas_scacq_screl: fn(SignalHandle, i64, i64) -> i64;
    hsa_signal_wait_relaxed: fn(SignalHandle, u32, i64, u64, u32) -> i64;
    hsa_signal_wait_scacquire: fn(SignalHandle, u32, i64, u64, u32) -> i64;
    hsa_queue_create: fn(Agent, u32, u32, Option<QueueErrorCallback>, *mut c_void, u32, u32, *mut *mut HsaQueue) -> Status;
    hsa_queue_destroy: fn(*mut HsaQueue) -> Status;
    hsa_queue_load_read_index_scacquire: fn(*const HsaQueue) -> u64;
    hsa_queue_load_write_index_relaxed: fn(*const HsaQueue) -> u64;
    hsa_queue_add_write_index_scacq_screl: fn(*const HsaQueue, u64) -> u64;
    hsa_queue_cas_write_index_scacq_screl: fn(*const HsaQueue, u64, u64) -> u64;
    hsa_executable_create_alt: fn(u32, u32, *const c_char, *mut Executable) -> Status;
    hsa_executable_destroy: fn(Executable) -> Status;
    hsa_code_object_reader_create_from_memory: fn(*const c_void, usize, *mut CodeObjectReader) -> Status;
    hsa_code_object_reader_destroy: fn(CodeObjectReader) -> Status;
    hsa_executable_load_agent_code_object: fn(Executable, Agent, CodeObjectReader, *const c_char, *mut LoadedCodeObject) -> Status;
    hsa_executable_freeze: fn(Executable, *const c_char) -> Status;
    hsa_executable_get_symbol_by_name: fn(Executable, *const c_char, *const Agent, *mut ExecutableSymbol) -> Status;
    hsa_executable_symbol_get_info: fn(ExecutableSymbol, u32, *mut c_void) -> Status;
}
