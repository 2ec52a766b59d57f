//! aqueduct-sim: aqueduct's software AMD GPU.
//!
//! No machine aqueduct is developed on has an AMD GPU, so the simulator is
//! how every device-side claim gets executed: an interpreter of the
//! machine code of the GFX9 family (gfx90a, gfx942, gfx950: wave64),
//! GFX11 (gfx1100) and GFX12 (gfx1201, both wave32 or wave64, as the
//! kernel descriptor says) that runs the very code objects the hardware
//! would, behind a C API identical to `libhsa-runtime64` (part 2), so the
//! host shim loads it exactly as it loads ROCr.
//!
//! Part 1 is the interpreter, with a Rust API:
//!
//! ```text
//!   Gpu ── memory: Memory (valid-range table over host memory)
//!    │
//!    ├─ load(code object) → Program   segments placed in device memory,
//!    │                                 every instruction decoded once
//!    └─ dispatch(program, kernel, Launch) → Stats | DispatchError
//!           workgroups on host threads → waves round-robin → executors
//! ```
//!
//! - [`decode`]: classification and operand decoding over opcode tables
//!   read out of LLVM's disassembler;
//! - [`exec`]: instruction semantics per family, keyed by mnemonic;
//! - [`lanes`]: a wave's lanes (32 or 64), the leaf the rest builds on;
//! - [`wave`]: a wavefront's registers and typed operand access;
//! - [`memory`]: the valid-range table every device access goes through;
//! - [`dispatch`]: initial kernel state and the workgroup scheduler.
//!
//! Code objects are read with `aqueduct_abi::code_object`, the reader host
//! and xtask share.

// Lane loops index several 64-entry arrays by lane number; that reads like
// the ISA's pseudocode, so clippy's iterator suggestion is not taken.
#![allow(clippy::needless_range_loop)]
#![deny(missing_docs)]

use std::sync::Arc;

use aqueduct_abi::aql::KernelDispatchPacket;
use zerocopy::{FromZeros, IntoBytes};

pub mod clock;
pub mod code_index;
pub mod decode;
pub mod dispatch;
pub mod exec;
pub mod fault;
pub mod float;
pub mod hsa;
pub mod lanes;
pub mod memory;
pub mod pair;
pub mod program;
pub mod wave;

pub use decode::Target;
pub use dispatch::{DispatchError, Launch, Options, Stats};
pub use fault::{Fault, FaultReport, Space};
pub use memory::{Memory, MemoryError};
pub use program::{LoadError, Program};

/// One simulated GPU: a target and its memory.
pub struct Gpu {
    /// The processor simulated: which code objects load and how
    /// instructions decode and execute.
    pub target: Target,
    memory: Arc<Memory>,
    options: dispatch::Options,
}

impl Gpu {
    /// A simulated GPU of `target`, running workgroups on one host thread.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            memory: Arc::new(Memory::new()),
            options: dispatch::Options::threads(1),
        }
    }

    /// Runs workgroups on `n` host threads (results do not depend on it).
    pub fn with_threads(mut self, n: usize) -> Self {
        self.options.threads = n.max(1);
        self
    }

    /// Runs consecutive wave32 waves of a workgroup as one 64-lane pair
    /// while nothing tells them apart ([`pair`]; results do not depend on
    /// it). On by default unless `AQUEDUCT_SIM_WAVE32_PAIRS=0`.
    pub fn with_wave32_pairs(mut self, on: bool) -> Self {
        self.options.wave32_pairs = on;
        self
    }

    /// Strict mode (see [`memory`]): any access past the bytes an
    /// allocation asked for, and any LDS access beyond the kernel's group
    /// segment, is a fault.
    pub fn strict(self) -> Self {
        self.memory.set_strict(true);
        self
    }

    /// The device's memory: allocate buffers and kernel arguments here,
    /// read results back.
    pub fn memory(&self) -> &Arc<Memory> {
        &self.memory
    }

    /// Loads and decodes a code object built for this device's target.
    pub fn load(&self, code_object: &[u8]) -> Result<Program, LoadError> {
        Program::load(Arc::clone(&self.memory), self.target, code_object)
    }

    /// Runs `kernel` (by name) of `program` to completion.
    pub fn dispatch(
        &self,
        program: &Program,
        kernel: &str,
        launch: &Launch,
    ) -> Result<Stats, DispatchError> {
        let k = program
            .kernel(kernel)
            .ok_or_else(|| DispatchError::BadLaunch(format!("no kernel named {kernel}")))?;
        dispatch::run(program, k, launch, self.options)
    }

    /// Runs `kernel` over `grid` work-items in `workgroup`-sized groups
    /// with the given kernarg bytes, the way a packet processor would: the
    /// kernargs and a kernel dispatch packet are placed in device memory
    /// (the kernel reads both), and freed afterwards.
    pub fn run(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        workgroup: [u16; 3],
        kernargs: &[u8],
    ) -> Result<Stats, DispatchError> {
        self.run_observed(program, kernel, grid, workgroup, kernargs, &|_| {})
    }

    /// [`Gpu::run`], calling `on_event` for each device event
    /// (`s_sendmsg`) while the kernel runs.
    pub fn run_observed(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        workgroup: [u16; 3],
        kernargs: &[u8],
        on_event: &(dyn Fn(exec::Event) + Sync),
    ) -> Result<Stats, DispatchError> {
        let k = program
            .kernel(kernel)
            .ok_or_else(|| DispatchError::BadLaunch(format!("no kernel named {kernel}")))?;
        let mem = &self.memory;
        let kernarg_address = mem
            .alloc(kernargs.len().max(64) as u64, 64)
            .map_err(DispatchError::Memory)?;
        let packet_address = match mem.alloc(64, 64) {
            Ok(a) => a,
            Err(e) => {
                let _ = mem.free(kernarg_address);
                return Err(DispatchError::Memory(e));
            }
        };
        let dims = if grid[2] > 1 {
            3
        } else if grid[1] > 1 {
            2
        } else {
            1
        };
        let mut packet = KernelDispatchPacket::new_zeroed();
        packet.setup = dims;
        packet.workgroup_size_x = workgroup[0];
        packet.workgroup_size_y = workgroup[1];
        packet.workgroup_size_z = workgroup[2];
        packet.grid_size_x = grid[0];
        packet.grid_size_y = grid[1];
        packet.grid_size_z = grid[2];
        packet.private_segment_size = k.descriptor.private_segment_fixed_size;
        packet.group_segment_size = k.descriptor.group_segment_fixed_size;
        packet.kernel_object = program.base + k.descriptor_address;
        packet.kernarg_address = kernarg_address;
        let launch = Launch::from_packet(&packet, packet_address);
        let result = mem
            .write_bytes(kernarg_address, kernargs)
            .and_then(|()| mem.write_bytes(packet_address, packet.as_bytes()))
            .map_err(DispatchError::Memory)
            .and_then(|()| dispatch::run_observed(program, k, &launch, self.options, on_event));
        let _ = mem.free(packet_address);
        let _ = mem.free(kernarg_address);
        result
    }
}
