//! Kernel dispatch: typed kernel arguments checked against the code
//! object's metadata, launch validation, and the dispatch packet.
//!
//! The kernarg segment is laid out by the compiler and described in the
//! code object's `amdhsa.kernels[].args` (LLVM AMDGPUUsage, "Code Object V5
//! Metadata"): explicit arguments (`by_value`, `global_buffer`, ...) at
//! fixed offsets, then hidden arguments the runtime fills. [`Kernargs`]
//! refuses a value whose size or kind does not match its slot, and a
//! dispatch refuses arguments left unset. Hidden arguments are filled at
//! dispatch from the launch shape, as ROCr's language runtimes do:
//!
//! | hidden argument            | value                                  |
//! |----------------------------|----------------------------------------|
//! | `hidden_block_count_{x,y,z}` | full workgroups: grid / workgroup    |
//! | `hidden_group_size_{x,y,z}`  | workgroup size                       |
//! | `hidden_remainder_{x,y,z}`   | work-items of the partial workgroup: grid % workgroup |
//! | `hidden_grid_dims`           | number of dimensions                 |
//! | `hidden_dynamic_lds_size`    | dynamic LDS bytes of the launch      |
//! | `hidden_queue_ptr`           | the queue's `hsa_queue_t` address    |
//! | `hidden_global_offset_*`, `hidden_none`, `hidden_multigrid_sync_arg` | 0 |
//!
//! Kinds that need services aqueduct does not provide (`hidden_printf_buffer`,
//! `hidden_hostcall_buffer`, `hidden_heap_v1`, `hidden_default_queue`,
//! `hidden_completion_action`, `hidden_private_base`, `hidden_shared_base`)
//! make [`Kernel::kernargs`] fail naming the argument, instead of passing a
//! null the kernel would dereference.
//!
//! Each dispatch copies its arguments into a fresh kernarg-pool allocation
//! owned by the returned [`Dispatch`] (or, when that is dropped early, by the
//! queue) until the packet's completion signal says the kernel is done.

use std::time::Duration;

use aqueduct_abi::code_object::{KernelArg as ArgMetadata, KernelMetadata};
use aqueduct_abi::command::{BufferRef, BufferRefKind};
use aqueduct_abi::hsa::SignalCondition;
use aqueduct_abi::packet::{DispatchLimits, KernelDispatch, Ordering};
use zerocopy::{Immutable, IntoBytes};

use crate::error::{Error, Result};
use crate::executable::Kernel;
use crate::memory::{Buffer, HostBuffer, Pod};
use crate::queue::{Queue, Retired};
use crate::signal::{LoadOrder, Signal};

/// What a kernel argument value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgValue {
    /// A device address, for a `global_buffer` argument.
    Pointer(u64),
    /// Plain bytes, for a `by_value` argument of the same size.
    Bytes(Vec<u8>),
}

/// Something that can be passed as a kernel argument.
pub trait KernelArgument {
    /// The value as the kernarg segment holds it.
    fn to_arg(&self) -> ArgValue;
}

macro_rules! by_value {
    ($($t:ty),+) => {$(
        impl KernelArgument for $t {
            fn to_arg(&self) -> ArgValue {
                ArgValue::Bytes(self.to_le_bytes().to_vec())
            }
        }
    )+};
}
by_value!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

impl<T: Pod, const N: usize> KernelArgument for [T; N] {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Bytes(zerocopy::IntoBytes::as_bytes(self.as_slice()).to_vec())
    }
}

impl<T: Pod, L> KernelArgument for Buffer<T, L> {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Pointer(self.address())
    }
}

impl<A: KernelArgument + ?Sized> KernelArgument for &A {
    fn to_arg(&self) -> ArgValue {
        (**self).to_arg()
    }
}

/// A raw device address (memory aqueduct did not allocate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevicePtr(pub u64);

impl KernelArgument for DevicePtr {
    fn to_arg(&self) -> ArgValue {
        ArgValue::Pointer(self.0)
    }
}

/// Names an explicit argument: by position among the explicit arguments, or
/// by its metadata name.
pub trait ArgKey {
    /// Index of the named argument among the explicit arguments `args`.
    fn find(&self, args: &[ArgMetadata]) -> Option<usize>;
    /// How error messages name the key.
    fn describe(&self) -> String;
}

impl ArgKey for usize {
    fn find(&self, args: &[ArgMetadata]) -> Option<usize> {
        (*self < args.len()).then_some(*self)
    }
    fn describe(&self) -> String {
        format!("argument #{self}")
    }
}

impl ArgKey for &str {
    fn find(&self, args: &[ArgMetadata]) -> Option<usize> {
        args.iter().position(|a| a.name.as_deref() == Some(*self))
    }
    fn describe(&self) -> String {
        format!("argument {self:?}")
    }
}

/// Hidden kinds whose service aqueduct does not provide.
const UNSUPPORTED_HIDDEN: [&str; 7] = [
    "hidden_printf_buffer",
    "hidden_hostcall_buffer",
    "hidden_heap_v1",
    "hidden_default_queue",
    "hidden_completion_action",
    "hidden_private_base",
    "hidden_shared_base",
];

/// A kernel's argument segment being filled.
#[derive(Clone, Debug)]
pub struct Kernargs {
    kernel_name: String,
    kernel_object: u64,
    explicit: Vec<ArgMetadata>,
    hidden: Vec<ArgMetadata>,
    bytes: Vec<u8>,
    set: Vec<bool>,
    /// Pointer arguments given as binding-table or allocation references,
    /// by kernarg offset: a command buffer's issue patches them in.
    patches: Vec<(u32, BufferRef)>,
}

impl Kernel {
    /// An empty argument segment for this kernel.
    pub fn kernargs(&self) -> Result<Kernargs> {
        Kernargs::new(self.metadata(), self.object(), self.kernarg_segment_size())
    }
}

impl Kernargs {
    pub(crate) fn new(
        meta: &KernelMetadata,
        kernel_object: u64,
        segment_size: u32,
    ) -> Result<Self> {
        let refuse = |problem: String| Error::InvalidArgument {
            what: "kernel arguments",
            problem: format!("{}: {problem}", meta.name),
        };
        let mut explicit = Vec::new();
        let mut hidden = Vec::new();
        for arg in &meta.args {
            let end = arg.offset.checked_add(arg.size);
            if end.is_none_or(|end| end > u64::from(segment_size)) {
                return Err(refuse(format!(
                    "argument at offset {} of {} bytes lies outside the {segment_size}-byte segment",
                    arg.offset, arg.size
                )));
            }
            if UNSUPPORTED_HIDDEN.contains(&arg.value_kind.as_str()) {
                return Err(refuse(format!(
                    "needs {} (at offset {}), a runtime service aqueduct does not provide",
                    arg.value_kind, arg.offset
                )));
            }
            if arg.value_kind.starts_with("hidden_") {
                hidden.push(arg.clone());
            } else {
                explicit.push(arg.clone());
            }
        }
        Ok(Self {
            kernel_name: meta.name.clone(),
            kernel_object,
            set: vec![false; explicit.len()],
            explicit,
            hidden,
            bytes: vec![0; segment_size as usize],
            patches: Vec::new(),
        })
    }

    /// Sets an explicit argument, checking its kind and size against the
    /// metadata.
    pub fn set(&mut self, key: impl ArgKey, value: impl KernelArgument) -> Result<&mut Self> {
        let Some(index) = key.find(&self.explicit) else {
            return Err(Error::InvalidArgument {
                what: "kernel argument",
                problem: format!(
                    "{}: no {} (it takes {})",
                    self.kernel_name,
                    key.describe(),
                    self.signature()
                ),
            });
        };
        let arg = &self.explicit[index];
        let name = arg.name.clone().unwrap_or_else(|| format!("#{index}"));
        let refuse = |problem: String| Error::InvalidArgument {
            what: "kernel argument",
            problem: format!("{}: argument {name}: {problem}", self.kernel_name),
        };
        let bytes = match (value.to_arg(), arg.value_kind.as_str()) {
            (ArgValue::Pointer(address), "global_buffer") if arg.size == 8 => {
                address.to_le_bytes().to_vec()
            }
            (ArgValue::Pointer(_), kind) => {
                return Err(refuse(format!(
                    "a pointer was given for a {kind} argument of {} bytes",
                    arg.size
                )));
            }
            (ArgValue::Bytes(bytes), "by_value") if bytes.len() as u64 == arg.size => bytes,
            (ArgValue::Bytes(bytes), "by_value") => {
                return Err(refuse(format!(
                    "{} bytes given for a value of {} bytes",
                    bytes.len(),
                    arg.size
                )));
            }
            (ArgValue::Bytes(_), kind) => {
                return Err(refuse(format!("a value was given for a {kind} argument")));
            }
        };
        let start = arg.offset as usize;
        self.bytes[start..start + bytes.len()].copy_from_slice(&bytes);
        self.set[index] = true;
        Ok(self)
    }

    /// Sets every explicit argument at once from `block`, a `repr(C)`
    /// struct laid out as the compiler lays out the kernel's arguments (an
    /// aqueduct-abi argument struct such as
    /// [`aqueduct_abi::gemm::GemmArgs`], whose layout a test checks against
    /// the kernels' metadata). Refuses a block that does not cover every
    /// explicit argument, or that reaches past the kernarg segment with
    /// anything but zeros (its trailing padding). Earlier
    /// [`Kernargs::bind`] references are dropped: bind after it.
    pub fn set_all(&mut self, block: &(impl IntoBytes + Immutable)) -> Result<&mut Self> {
        let bytes = block.as_bytes();
        let refuse = |problem: String| Error::InvalidArgument {
            what: "kernel arguments",
            problem: format!("{}: {problem}", self.kernel_name),
        };
        if let Some(arg) = self
            .explicit
            .iter()
            .find(|a| a.offset + a.size > bytes.len() as u64)
        {
            return Err(refuse(format!(
                "a block of {} bytes for the argument {} at offset {} of {} bytes",
                bytes.len(),
                arg.name.as_deref().unwrap_or("?"),
                arg.offset,
                arg.size
            )));
        }
        let (inside, past) = bytes.split_at(bytes.len().min(self.bytes.len()));
        if past.iter().any(|&b| b != 0) {
            return Err(refuse(format!(
                "a block of {} bytes with values past the {}-byte segment",
                bytes.len(),
                self.bytes.len()
            )));
        }
        self.bytes[..inside.len()].copy_from_slice(inside);
        self.set.fill(true);
        self.patches.clear();
        Ok(self)
    }

    /// Sets a pointer argument to a buffer reference: a direct one is its
    /// address now; a binding-table slot or a queue-ordered allocation is
    /// resolved when a command buffer recording these arguments issues
    /// (a plain dispatch refuses them).
    pub fn bind(&mut self, key: impl ArgKey, buffer: BufferRef) -> Result<&mut Self> {
        if buffer.kind == BufferRefKind::DIRECT {
            return self.set(key, DevicePtr(buffer.address.wrapping_add(buffer.offset)));
        }
        // Checks the slot's kind and size like any pointer.
        let index = key.find(&self.explicit);
        self.set(key, DevicePtr(0))?;
        let offset = index
            .and_then(|i| self.explicit.get(i))
            .map_or(0, |a| a.offset as u32);
        self.patches.retain(|(o, _)| *o != offset);
        self.patches.push((offset, buffer));
        Ok(self)
    }

    /// The arguments [`Kernargs::bind`] left to the issue, by kernarg
    /// offset.
    pub(crate) fn patches(&self) -> &[(u32, BufferRef)] {
        &self.patches
    }

    /// The kernel these arguments were built for.
    pub(crate) fn kernel_object(&self) -> u64 {
        self.kernel_object
    }

    /// Hidden arguments the kernel's metadata asks for.
    pub(crate) fn hidden(&self) -> &[ArgMetadata] {
        &self.hidden
    }

    /// Sets the first explicit argument not set yet.
    pub fn push(&mut self, value: impl KernelArgument) -> Result<&mut Self> {
        let Some(index) = self.set.iter().position(|s| !s) else {
            return Err(Error::InvalidArgument {
                what: "kernel argument",
                problem: format!(
                    "{}: all {} arguments are already set ({})",
                    self.kernel_name,
                    self.explicit.len(),
                    self.signature()
                ),
            });
        };
        self.set(index, value)
    }

    /// The explicit part of the segment as it stands.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn signature(&self) -> String {
        let list: Vec<String> = self
            .explicit
            .iter()
            .map(|a| {
                format!(
                    "{}: {} {}B",
                    a.name.as_deref().unwrap_or("?"),
                    a.value_kind,
                    a.size
                )
            })
            .collect();
        format!("({})", list.join(", "))
    }

    /// The complete segment for `launch` on `queue_address`, or which
    /// arguments are missing.
    pub(crate) fn finish(&self, launch: &Launch, queue_address: u64) -> Result<Vec<u8>> {
        if let Some((offset, _)) = self.patches.first() {
            return Err(Error::InvalidArgument {
                what: "kernel arguments",
                problem: format!(
                    "{}: the argument at offset {offset} is a binding-table or allocation reference, which only a command buffer resolves",
                    self.kernel_name
                ),
            });
        }
        self.segment(launch, queue_address)
    }

    /// [`Kernargs::segment`] without a copy when the kernel has no hidden
    /// arguments (the explicit bytes are the whole segment).
    pub(crate) fn template(
        &self,
        launch: &Launch,
        queue_address: u64,
    ) -> Result<std::borrow::Cow<'_, [u8]>> {
        if let Some(bytes) = self.complete() {
            return Ok(std::borrow::Cow::Borrowed(bytes));
        }
        self.segment(launch, queue_address)
            .map(std::borrow::Cow::Owned)
    }

    /// The segment as it is, when a launch adds nothing to it: no hidden
    /// arguments and every explicit one set ([`Kernargs::bind`]'s
    /// references left as zeros).
    pub(crate) fn complete(&self) -> Option<&[u8]> {
        (self.hidden.is_empty() && self.set.iter().all(|&s| s)).then_some(&self.bytes[..])
    }

    /// The segment for `launch` with the hidden arguments filled, or which
    /// explicit arguments are missing; [`Kernargs::bind`]'s references
    /// left as zeros.
    pub(crate) fn segment(&self, launch: &Launch, queue_address: u64) -> Result<Vec<u8>> {
        let missing: Vec<String> = self
            .explicit
            .iter()
            .zip(&self.set)
            .enumerate()
            .filter(|(_, (_, set))| !**set)
            .map(|(i, (a, _))| a.name.clone().unwrap_or_else(|| format!("#{i}")))
            .collect();
        if !missing.is_empty() {
            return Err(Error::InvalidArgument {
                what: "kernel arguments",
                problem: format!("{}: not set: {}", self.kernel_name, missing.join(", ")),
            });
        }
        let mut out = self.bytes.clone();
        for arg in &self.hidden {
            let value: u64 = match arg.value_kind.as_str() {
                "hidden_block_count_x" => {
                    u64::from(launch.grid[0] / u32::from(launch.workgroup[0]))
                }
                "hidden_block_count_y" => {
                    u64::from(launch.grid[1] / u32::from(launch.workgroup[1]))
                }
                "hidden_block_count_z" => {
                    u64::from(launch.grid[2] / u32::from(launch.workgroup[2]))
                }
                "hidden_group_size_x" => u64::from(launch.workgroup[0]),
                "hidden_group_size_y" => u64::from(launch.workgroup[1]),
                "hidden_group_size_z" => u64::from(launch.workgroup[2]),
                "hidden_remainder_x" => u64::from(launch.grid[0] % u32::from(launch.workgroup[0])),
                "hidden_remainder_y" => u64::from(launch.grid[1] % u32::from(launch.workgroup[1])),
                "hidden_remainder_z" => u64::from(launch.grid[2] % u32::from(launch.workgroup[2])),
                "hidden_grid_dims" => u64::from(launch.dimensions),
                "hidden_dynamic_lds_size" => u64::from(launch.dynamic_lds),
                "hidden_queue_ptr" => queue_address,
                _ => 0,
            };
            let start = arg.offset as usize;
            let size = (arg.size as usize).min(8);
            out[start..start + size].copy_from_slice(&value.to_le_bytes()[..size]);
        }
        Ok(out)
    }
}

/// The shape of a dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// 1, 2 or 3.
    pub dimensions: u8,
    /// Work-items per dimension (unused dimensions 1).
    pub grid: [u32; 3],
    /// Workgroup size per dimension (unused dimensions 1).
    pub workgroup: [u16; 3],
    /// LDS bytes per workgroup on top of the kernel's static size.
    pub dynamic_lds: u32,
    /// Barrier bit and acquire/release fence scopes of the packet.
    pub ordering: Ordering,
}

impl Launch {
    /// A one-dimensional launch of `grid` work-items in workgroups of
    /// `workgroup`, system-scope fences.
    pub const fn linear(grid: u32, workgroup: u16) -> Self {
        Self {
            dimensions: 1,
            grid: [grid, 1, 1],
            workgroup: [workgroup, 1, 1],
            dynamic_lds: 0,
            ordering: Ordering::SYSTEM,
        }
    }

    /// A two-dimensional launch.
    pub const fn planar(grid: [u32; 2], workgroup: [u16; 2]) -> Self {
        Self {
            dimensions: 2,
            grid: [grid[0], grid[1], 1],
            workgroup: [workgroup[0], workgroup[1], 1],
            dynamic_lds: 0,
            ordering: Ordering::SYSTEM,
        }
    }

    /// A three-dimensional launch.
    pub const fn volume(grid: [u32; 3], workgroup: [u16; 3]) -> Self {
        Self {
            dimensions: 3,
            grid,
            workgroup,
            dynamic_lds: 0,
            ordering: Ordering::SYSTEM,
        }
    }

    /// Adds `bytes` of dynamic LDS per workgroup.
    pub const fn with_dynamic_lds(mut self, bytes: u32) -> Self {
        self.dynamic_lds = bytes;
        self
    }

    /// Replaces the packet ordering (default: system-scope fences).
    pub const fn with_ordering(mut self, ordering: Ordering) -> Self {
        self.ordering = ordering;
        self
    }
}

/// The static facts of a kernel a launch is checked against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelFacts<'a> {
    pub meta: &'a KernelMetadata,
    pub object: u64,
    pub group_segment_size: u32,
    pub private_segment_size: u32,
}

/// Checks `launch` against the kernel and the agent and builds the packet
/// inputs (without kernarg address and completion signal).
pub(crate) fn plan(
    kernel: KernelFacts<'_>,
    limits: &DispatchLimits,
    launch: &Launch,
    kernargs: &Kernargs,
) -> Result<KernelDispatch> {
    let name = &kernel.meta.name;
    let refuse = |problem: String| Error::InvalidArgument {
        what: "dispatch",
        problem: format!("{name}: {problem}"),
    };
    if kernargs.kernel_object != kernel.object {
        return Err(refuse(format!(
            "the arguments were built for kernel {}",
            kernargs.kernel_name
        )));
    }
    let total: u64 = launch.workgroup.iter().map(|&w| u64::from(w)).product();
    let max_flat = kernel.meta.max_flat_workgroup_size;
    if max_flat != 0 && total > max_flat {
        return Err(refuse(format!(
            "workgroup {:?} has {total} work-items; the kernel was compiled for at most {max_flat}",
            launch.workgroup
        )));
    }
    if let Some(required) = kernel.meta.reqd_workgroup_size {
        let given = launch.workgroup.map(u64::from);
        if given != required {
            return Err(refuse(format!(
                "workgroup {given:?} differs from the kernel's required size {required:?}"
            )));
        }
    }
    let group = kernel
        .group_segment_size
        .checked_add(launch.dynamic_lds)
        .ok_or_else(|| {
            refuse(format!(
                "static LDS {} + dynamic LDS {} overflow",
                kernel.group_segment_size, launch.dynamic_lds
            ))
        })?;
    let dispatch = KernelDispatch {
        kernel_object: kernel.object,
        kernarg_address: 0,
        dimensions: launch.dimensions,
        grid_size: launch.grid,
        workgroup_size: launch.workgroup,
        private_segment_size: kernel.private_segment_size,
        group_segment_size: group,
        completion_signal: aqueduct_abi::hsa::SignalHandle::NULL,
        ordering: launch.ordering,
    };
    // The builder checks dimensions, zero sizes, agent limits and LDS.
    dispatch.build(limits)?;
    Ok(dispatch)
}

impl Kernel {
    /// Dispatches this kernel on `queue`: `grid` work-items in workgroups of
    /// `workgroup` (one-dimensional; see [`Kernel::dispatch_launch`] for
    /// more), with `kernargs`. The packet decrements `completion` (a fresh
    /// signal when `None`) when the kernel is done; see [`Dispatch`].
    pub fn dispatch(
        &self,
        queue: &Queue,
        grid: u32,
        workgroup: u16,
        kernargs: &Kernargs,
        completion: Option<&Signal>,
    ) -> Result<Dispatch> {
        self.dispatch_launch(
            queue,
            &Launch::linear(grid, workgroup),
            kernargs,
            completion,
        )
    }

    /// Dispatches with a full [`Launch`].
    ///
    /// A caller-supplied `completion` signal must belong to this dispatch
    /// until it completes: [`Dispatch::wait`] waits for it to drop below the
    /// value it had at submission.
    pub fn dispatch_launch(
        &self,
        queue: &Queue,
        launch: &Launch,
        kernargs: &Kernargs,
        completion: Option<&Signal>,
    ) -> Result<Dispatch> {
        if queue.agent().handle() != self.agent().handle() {
            return Err(Error::InvalidArgument {
                what: "dispatch",
                problem: format!(
                    "{}: loaded on agent {} but queue {} belongs to agent {}",
                    self.name(),
                    self.agent().info().name,
                    queue.id(),
                    queue.agent().info().name
                ),
            });
        }
        let facts = KernelFacts {
            meta: self.metadata(),
            object: self.object(),
            group_segment_size: self.group_segment_size(),
            private_segment_size: self.private_segment_size(),
        };
        let mut packet = plan(facts, queue.limits(), launch, kernargs)?;
        let segment = kernargs.finish(launch, queue.address())?;
        queue.reclaim();

        let buffer = if segment.is_empty() {
            None
        } else {
            let pool = queue.kernarg_pool();
            if u64::from(self.kernarg_segment_alignment()) > pool.info().alignment.max(16) {
                return Err(Error::InvalidArgument {
                    what: "dispatch",
                    problem: format!(
                        "{}: kernarg alignment {} exceeds the kernarg pool's {}",
                        self.name(),
                        self.kernarg_segment_alignment(),
                        pool.info().alignment
                    ),
                });
            }
            let mut buffer: HostBuffer<u8> = pool.alloc_host(segment.len())?;
            buffer.copy_from_slice(&segment);
            if !pool.info().accessible_by_all {
                buffer.allow_access(&[queue.agent()])?;
            }
            packet.kernarg_address = buffer.address();
            Some(buffer)
        };
        let signal = match completion {
            Some(s) => s.clone(),
            None => Signal::new(queue.agent().system(), 1)?,
        };
        let below = signal.load(LoadOrder::Acquire);
        packet.completion_signal = signal.handle();
        let prepared = packet.build(queue.limits())?;
        let id = queue.submit(&prepared)?;
        Ok(Dispatch {
            queue: queue.clone(),
            kernel: self.clone(),
            signal,
            below,
            kernargs: buffer,
            id,
            done: false,
        })
    }
}

/// A submitted dispatch. [`Dispatch::wait`] waits for completion (and
/// reports a queue fault); dropping it earlier hands its kernel arguments to
/// the queue, which frees them once the kernel is done.
#[must_use = "a dispatch is only known complete after wait()"]
pub struct Dispatch {
    queue: Queue,
    kernel: Kernel,
    signal: Signal,
    below: i64,
    kernargs: Option<HostBuffer<u8>>,
    id: u64,
    done: bool,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("kernel", &self.kernel.name())
            .field("queue", &self.queue.id())
            .field("packet_id", &self.id)
            .field("done", &self.done)
            .finish()
    }
}

impl Dispatch {
    /// Packet id (write index) of the dispatch packet.
    pub fn packet_id(&self) -> u64 {
        self.id
    }

    /// The completion signal.
    pub fn signal(&self) -> &Signal {
        &self.signal
    }

    /// Waits until the kernel is done; [`Error::QueueFault`] if the queue
    /// faulted, [`Error::Timeout`] after `timeout` (the dispatch then stays
    /// pending and may be waited on again).
    pub fn wait(&mut self, timeout: Duration) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.queue
            .wait(&self.signal, SignalCondition::LT, self.below, timeout)?;
        self.done = true;
        self.kernargs = None;
        Ok(())
    }
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let retired = Retired {
            signal: self.signal.clone(),
            below: self.below,
            kernargs: self.kernargs.take(),
            kernel: self.kernel.clone(),
        };
        self.queue
            .inner()
            .retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(retired);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(name: &str, offset: u64, size: u64, kind: &str) -> ArgMetadata {
        ArgMetadata {
            name: (!name.is_empty()).then(|| name.into()),
            offset,
            size,
            value_kind: kind.into(),
            ..ArgMetadata::default()
        }
    }

    /// `saxpy_f32(len: u64, a: f32, x: *const f32, y: *mut f32)` as rustc
    /// lays it out, plus v5 hidden arguments.
    fn saxpy() -> KernelMetadata {
        KernelMetadata {
            name: "saxpy_f32".into(),
            symbol: "saxpy_f32.kd".into(),
            args: vec![
                arg("len", 0, 8, "by_value"),
                arg("a", 8, 4, "by_value"),
                arg("x", 16, 8, "global_buffer"),
                arg("y", 24, 8, "global_buffer"),
                arg("", 32, 4, "hidden_block_count_x"),
                arg("", 36, 2, "hidden_group_size_x"),
                arg("", 38, 2, "hidden_remainder_x"),
                arg("", 40, 2, "hidden_grid_dims"),
                arg("", 48, 8, "hidden_queue_ptr"),
                arg("", 56, 8, "hidden_global_offset_x"),
            ],
            kernarg_segment_size: 64,
            kernarg_segment_align: 8,
            max_flat_workgroup_size: 256,
            ..KernelMetadata::default()
        }
    }

    const OBJECT: u64 = 0x7000_0040;

    fn facts(meta: &KernelMetadata) -> KernelFacts<'_> {
        KernelFacts {
            meta,
            object: OBJECT,
            group_segment_size: 1024,
            private_segment_size: 0,
        }
    }

    #[test]
    fn arguments_land_at_their_metadata_offsets_and_hidden_ones_are_filled() {
        let meta = saxpy();
        let mut k = Kernargs::new(&meta, OBJECT, 64).unwrap();
        k.push(1000u64)
            .unwrap()
            .push(2.5f32)
            .unwrap()
            .set("x", DevicePtr(0x1111_2222_3333))
            .unwrap()
            .set(3, DevicePtr(0x4444_5555_6666))
            .unwrap();
        let launch = Launch::linear(1000, 256);
        let seg = k.finish(&launch, 0xabcd_0000).unwrap();
        assert_eq!(seg.len(), 64);
        assert_eq!(&seg[0..8], &1000u64.to_le_bytes());
        assert_eq!(&seg[8..12], &2.5f32.to_le_bytes());
        assert_eq!(&seg[16..24], &0x1111_2222_3333u64.to_le_bytes());
        assert_eq!(&seg[24..32], &0x4444_5555_6666u64.to_le_bytes());
        // 1000 = 3 full workgroups of 256 + 232.
        assert_eq!(&seg[32..36], &3u32.to_le_bytes());
        assert_eq!(&seg[36..38], &256u16.to_le_bytes());
        assert_eq!(&seg[38..40], &232u16.to_le_bytes());
        assert_eq!(&seg[40..42], &1u16.to_le_bytes());
        assert_eq!(&seg[48..56], &0xabcd_0000u64.to_le_bytes());
        assert_eq!(&seg[56..64], &0u64.to_le_bytes());
    }

    #[test]
    fn wrong_arguments_are_refused_with_a_message() {
        let meta = saxpy();
        let fresh = || Kernargs::new(&meta, OBJECT, 64).unwrap();
        type Case = (fn(&mut Kernargs) -> Result<()>, &'static str);
        let cases: Vec<Case> = vec![
            (
                (|k| k.set(0, 5u32).map(drop)),
                "argument len: 4 bytes given for a value of 8 bytes",
            ),
            (
                (|k| k.set("a", 1.0f64).map(drop)),
                "argument a: 8 bytes given for a value of 4 bytes",
            ),
            (
                (|k| k.set("x", 7u64).map(drop)),
                "a value was given for a global_buffer argument",
            ),
            (
                (|k| k.set("len", DevicePtr(8)).map(drop)),
                "a pointer was given for a by_value argument",
            ),
            (
                (|k| k.set(4, 1u32).map(drop)),
                "no argument #4 (it takes (len: by_value 8B, a: by_value 4B, x: global_buffer 8B, y: global_buffer 8B))",
            ),
            ((|k| k.set("z", 1u32).map(drop)), "no argument \"z\""),
            (
                (|k| {
                    k.push(0u64)?
                        .push(0f32)?
                        .push(DevicePtr(1))?
                        .push(DevicePtr(2))?;
                    k.push(DevicePtr(3)).map(drop)
                }),
                "all 4 arguments are already set",
            ),
        ];
        for (apply, message) in cases {
            let mut k = fresh();
            let err = apply(&mut k).unwrap_err();
            assert!(err.to_string().contains(message), "{message}: {err}");
        }
        let mut k = fresh();
        k.push(1u64).unwrap();
        let err = k.finish(&Launch::linear(1, 1), 0).unwrap_err();
        assert!(
            err.to_string().contains("saxpy_f32: not set: a, x, y"),
            "{err}"
        );
    }

    /// The arguments of [`saxpy`] as one `repr(C)` block.
    #[repr(C)]
    #[derive(zerocopy::IntoBytes, zerocopy::Immutable)]
    struct SaxpyArgs {
        len: u64,
        a: f32,
        reserved: u32,
        x: u64,
        y: u64,
    }

    #[test]
    fn a_block_sets_every_argument_and_binds_come_after_it() {
        let meta = saxpy();
        let block = SaxpyArgs {
            len: 1000,
            a: 2.5,
            reserved: 0,
            x: 0x1111_2222_3333,
            y: 0x4444_5555_6666,
        };
        let mut k = Kernargs::new(&meta, OBJECT, 64).unwrap();
        let slot = BufferRef::binding(3, 0, 4000);
        k.bind("x", slot).unwrap();
        k.set_all(&block).unwrap();
        assert!(k.patches().is_empty(), "the block replaces earlier binds");
        let seg = k.finish(&Launch::linear(1000, 256), 0).unwrap();
        assert_eq!(&seg[..32], block.as_bytes());
        assert_eq!(&seg[32..36], &3u32.to_le_bytes(), "hidden arguments");
        k.bind("y", slot).unwrap();
        assert_eq!(k.patches(), &[(24, slot)]);

        let err = k.set_all(&[0u64; 3]).unwrap_err();
        assert!(
            err.to_string()
                .contains("a block of 24 bytes for the argument y at offset 24 of 8 bytes"),
            "{err}"
        );
        let mut long = [0u64; 9];
        k.set_all(&long).unwrap();
        long[8] = 1;
        let err = k.set_all(&long).unwrap_err();
        assert!(
            err.to_string()
                .contains("a block of 72 bytes with values past the 64-byte segment"),
            "{err}"
        );
    }

    #[test]
    fn metadata_the_host_cannot_serve_is_refused() {
        let mut meta = saxpy();
        meta.args.push(arg("", 64, 8, "hidden_hostcall_buffer"));
        meta.kernarg_segment_size = 72;
        let err = Kernargs::new(&meta, OBJECT, 72).unwrap_err();
        assert!(
            err.to_string().contains("needs hidden_hostcall_buffer"),
            "{err}"
        );
        let err = Kernargs::new(&saxpy(), OBJECT, 40).unwrap_err();
        assert!(
            err.to_string().contains("outside the 40-byte segment"),
            "{err}"
        );
    }

    #[test]
    fn launches_are_checked_against_kernel_and_agent() {
        let meta = saxpy();
        let args = Kernargs::new(&meta, OBJECT, 64).unwrap();
        let limits = DispatchLimits::AMD_GPU;
        let plan_ok = plan(
            facts(&meta),
            &limits,
            &Launch::linear(4096, 256).with_dynamic_lds(2048),
            &args,
        )
        .unwrap();
        assert_eq!(plan_ok.group_segment_size, 1024 + 2048);
        assert_eq!(plan_ok.kernel_object, OBJECT);

        let mut required = saxpy();
        required.reqd_workgroup_size = Some([64, 1, 1]);
        let other = Kernargs::new(&meta, OBJECT + 64, 64).unwrap();
        let cases: Vec<(KernelFacts<'_>, Launch, &Kernargs, &str)> = vec![
            (
                facts(&meta),
                Launch::linear(4096, 512),
                &args,
                "512 work-items; the kernel was compiled for at most 256",
            ),
            (
                facts(&required),
                Launch::linear(4096, 128),
                &args,
                "differs from the kernel's required size [64, 1, 1]",
            ),
            (
                facts(&meta),
                Launch::linear(4096, 256).with_dynamic_lds(65536),
                &args,
                "LDS",
            ),
            (
                facts(&meta),
                Launch::linear(4096, 256).with_dynamic_lds(u32::MAX),
                &args,
                "overflow",
            ),
            (facts(&meta), Launch::linear(0, 64), &args, "at least 1"),
            (
                facts(&meta),
                Launch::linear(64, 64),
                &other,
                "the arguments were built for kernel saxpy_f32",
            ),
            (
                facts(&meta),
                Launch {
                    dimensions: 4,
                    ..Launch::linear(64, 64)
                },
                &args,
                "grid dimensions must be",
            ),
        ];
        for (f, launch, a, message) in cases {
            let err = plan(f, &limits, &launch, a).unwrap_err();
            assert!(
                err.to_string()
                    .to_lowercase()
                    .contains(&message.to_lowercase()),
                "{message}: {err}"
            );
        }
    }
}
