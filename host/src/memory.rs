//! Memory pools and typed allocations.
//!
//! Every agent owns memory pools (`hsa_amd_memory_pool_t`). The ones that
//! matter to aqueduct:
//!
//! | kind                  | owner | what it is                                   |
//! |-----------------------|-------|----------------------------------------------|
//! | `Kernarg`             | CPU   | system memory the packet processor reads kernel arguments from (`KERNARG_INIT`) |
//! | `FineGrained` (CPU)   | CPU   | system memory, coherent with the GPU while kernels run |
//! | `CoarseGrained` (GPU) | GPU   | device memory (VRAM), coherent only at dispatch boundaries |
//! | `FineGrained` (GPU)   | GPU   | device memory kept coherent with the host     |
//! | `Group`               | GPU   | LDS: sized per dispatch, never allocated here |
//!
//! Allocations are typed: [`DeviceBuffer<T>`] lives in memory the host may
//! not be able to dereference (VRAM without a large BAR), so it is read and
//! written through copies; [`HostBuffer<T>`] lives in a CPU agent's pool and
//! derefs to `[T]`. Both free their memory on drop. `T` is [`Pod`]: any bit
//! pattern a kernel writes is a valid `T`.
//!
//! Access: memory of a pool that is not `accessible_by_all` is reachable
//! only by its owner until [`DeviceBuffer::allow_access`] (or the host
//! twin) grants other agents access — a kernel touching a host buffer it has
//! no access to faults with a memory violation.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::time::Duration;

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::agent::{Agent, AgentKind};
use crate::error::{Error, Result};
use crate::hsa::ffi;
use crate::signal::{Signal, WaitOrder};
use aqueduct_abi::hsa::SignalCondition;

/// Plain data: every bit pattern is a value, and it has no padding. What
/// device memory may hold.
pub trait Pod: FromBytes + IntoBytes + Immutable + Copy + Send + Sync + 'static {}
impl<T: FromBytes + IntoBytes + Immutable + Copy + Send + Sync + 'static> Pod for T {}

/// `hsa_amd_segment_t` of a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// `HSA_AMD_SEGMENT_GLOBAL` (0): memory all work-items see.
    Global,
    /// `HSA_AMD_SEGMENT_READONLY` (1).
    ReadOnly,
    /// `HSA_AMD_SEGMENT_PRIVATE` (2): per-work-item scratch.
    Private,
    /// `HSA_AMD_SEGMENT_GROUP` (3): LDS, per workgroup.
    Group,
    /// A segment value `hsa_ext_amd.h` does not define, as reported.
    Other(u32),
}

/// What kind of pool to look for with [`Agent::memory_pool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// Global, coarse-grained.
    CoarseGrained,
    /// Global, fine-grained (without the kernarg flag when another
    /// fine-grained pool has it).
    FineGrained,
    /// Global with `KERNARG_INIT`: where kernel arguments go.
    Kernarg,
    /// The group segment (LDS).
    Group,
}

impl fmt::Display for PoolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CoarseGrained => "coarse-grained global",
            Self::FineGrained => "fine-grained global",
            Self::Kernarg => "kernarg",
            Self::Group => "group (LDS)",
        })
    }
}

/// A pool's properties, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`.
    pub segment: Segment,
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`.
    pub fine_grained: bool,
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED`.
    pub coarse_grained: bool,
    /// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`: kernel arguments may
    /// live here.
    pub kernarg: bool,
    /// Total size in bytes.
    pub size: u64,
    /// Whether `hsa_amd_memory_pool_allocate` may be used (false for the
    /// group segment).
    pub alloc_allowed: bool,
    /// Allocation granularity in bytes.
    pub granule: u64,
    /// Alignment of every allocation in bytes.
    pub alignment: u64,
    /// Reachable by every agent without `allow_access`.
    pub accessible_by_all: bool,
    /// Largest single allocation in bytes.
    pub alloc_max_size: u64,
}

impl PoolInfo {
    fn matches(&self, kind: PoolKind) -> bool {
        match kind {
            PoolKind::CoarseGrained => self.segment == Segment::Global && self.coarse_grained,
            PoolKind::FineGrained => self.segment == Segment::Global && self.fine_grained,
            PoolKind::Kernarg => self.segment == Segment::Global && self.kernarg,
            PoolKind::Group => self.segment == Segment::Group,
        }
    }
}

/// One memory pool of an agent.
#[derive(Clone)]
pub struct MemoryPool {
    owner: Agent,
    handle: ffi::MemoryPool,
    info: PoolInfo,
}

impl fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPool")
            .field("owner", &self.owner.info().name)
            .field("handle", &self.handle)
            .field("info", &self.info)
            .finish()
    }
}

impl Agent {
    /// Every memory pool of this agent, in the runtime's order.
    pub fn memory_pools(&self) -> Result<Vec<MemoryPool>> {
        let system = self.system();
        system
            .pool_handles(self.handle())?
            .into_iter()
            .map(|handle| {
                let segment =
                    match system.pool_info::<u32>(handle, ffi::HSA_AMD_MEMORY_POOL_INFO_SEGMENT)? {
                        ffi::HSA_AMD_SEGMENT_GLOBAL => Segment::Global,
                        ffi::HSA_AMD_SEGMENT_READONLY => Segment::ReadOnly,
                        ffi::HSA_AMD_SEGMENT_PRIVATE => Segment::Private,
                        ffi::HSA_AMD_SEGMENT_GROUP => Segment::Group,
                        other => Segment::Other(other),
                    };
                // GLOBAL_FLAGS is only defined for the global segment.
                let flags = if segment == Segment::Global {
                    system.pool_info::<u32>(handle, ffi::HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)?
                } else {
                    0
                };
                let size: usize = system.pool_info(handle, ffi::HSA_AMD_MEMORY_POOL_INFO_SIZE)?;
                let alloc_allowed: bool = system
                    .pool_info(handle, ffi::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED)?;
                let (granule, alignment, alloc_max): (usize, usize, usize) = if alloc_allowed {
                    (
                        system.pool_info(
                            handle,
                            ffi::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE,
                        )?,
                        system.pool_info(
                            handle,
                            ffi::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT,
                        )?,
                        system.pool_info(handle, ffi::HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE)?,
                    )
                } else {
                    (0, 0, 0)
                };
                let accessible_by_all: bool =
                    system.pool_info(handle, ffi::HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL)?;
                Ok(MemoryPool {
                    owner: self.clone(),
                    handle,
                    info: PoolInfo {
                        segment,
                        fine_grained: flags & ffi::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                            != 0,
                        coarse_grained: flags & ffi::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                            != 0,
                        kernarg: flags & ffi::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0,
                        size: size as u64,
                        alloc_allowed,
                        granule: granule as u64,
                        alignment: alignment as u64,
                        accessible_by_all,
                        alloc_max_size: alloc_max as u64,
                    },
                })
            })
            .collect()
    }

    /// The first pool of `kind`. A fine-grained request prefers a pool
    /// without the kernarg flag (kernarg memory is small and precious on
    /// some systems).
    pub fn memory_pool(&self, kind: PoolKind) -> Result<MemoryPool> {
        let pools = self.memory_pools()?;
        let pick = |skip_kernarg: bool| {
            pools
                .iter()
                .find(|p| p.info.matches(kind) && !(skip_kernarg && p.info.kernarg))
        };
        let found = if kind == PoolKind::FineGrained {
            pick(true).or_else(|| pick(false))
        } else {
            pick(false)
        };
        found.cloned().ok_or_else(|| Error::InvalidArgument {
            what: "memory pool",
            problem: format!(
                "agent {} has no {kind} pool (it has {})",
                self.info().name,
                describe_pools(&pools)
            ),
        })
    }
}

fn describe_pools(pools: &[MemoryPool]) -> String {
    if pools.is_empty() {
        return "none".into();
    }
    pools
        .iter()
        .map(|p| {
            let i = &p.info;
            let mut kinds = Vec::new();
            if i.coarse_grained {
                kinds.push("coarse");
            }
            if i.fine_grained {
                kinds.push("fine");
            }
            if i.kernarg {
                kinds.push("kernarg");
            }
            format!("{:?}[{}]", i.segment, kinds.join(","))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl MemoryPool {
    /// Its properties, as read when the pool was listed.
    pub fn info(&self) -> &PoolInfo {
        &self.info
    }

    /// The agent the pool belongs to (a CPU agent for system memory).
    pub fn owner(&self) -> &Agent {
        &self.owner
    }

    /// The raw `hsa_amd_memory_pool_t`.
    pub fn handle(&self) -> ffi::MemoryPool {
        self.handle
    }

    /// Whether the host may dereference this pool's memory: global memory
    /// of a CPU agent.
    pub fn host_accessible(&self) -> bool {
        self.owner.info().kind == AgentKind::Cpu && self.info.segment == Segment::Global
    }

    /// Allocates `len` elements of `T` for device use. The contents are
    /// whatever the memory held: write before reading.
    pub fn alloc_device<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        Ok(Buffer {
            raw: self.allocate(len, std::mem::size_of::<T>(), std::mem::align_of::<T>())?,
            len,
            _marker: PhantomData,
        })
    }

    /// Allocates `len` elements of `T` in host-accessible memory (a CPU
    /// agent's global pool), zero-filled.
    pub fn alloc_host<T: Pod>(&self, len: usize) -> Result<HostBuffer<T>> {
        if !self.host_accessible() {
            return Err(Error::InvalidArgument {
                what: "alloc_host",
                problem: format!(
                    "the {:?} pool of agent {} is not host-accessible; use a CPU agent's pool (or alloc_device and copies)",
                    self.info.segment,
                    self.owner.info().name
                ),
            });
        }
        let raw = self.allocate(len, std::mem::size_of::<T>(), std::mem::align_of::<T>())?;
        // SAFETY: the allocation is host-accessible (checked above), `bytes`
        // long and exclusively ours.
        unsafe { raw.ptr.as_ptr().write_bytes(0, raw.bytes) };
        Ok(Buffer {
            raw,
            len,
            _marker: PhantomData,
        })
    }

    fn allocate(&self, len: usize, elem_size: usize, elem_align: usize) -> Result<RawAllocation> {
        let bytes = check_allocation(
            &self.info,
            &self.owner.info().name,
            len,
            elem_size,
            elem_align,
        )?;
        let system = self.owner.system();
        let ptr = system.pool_allocate(self.handle, bytes)?;
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::Hsa {
            call: "hsa_amd_memory_pool_allocate",
            status: ffi::HSA_STATUS_ERROR,
            message: "returned success and a null pointer".into(),
        })?;
        Ok(RawAllocation {
            pool: self.clone(),
            ptr,
            bytes,
        })
    }
}

/// The byte size of `len` elements, or why the pool cannot hold them.
pub(crate) fn check_allocation(
    info: &PoolInfo,
    agent: &str,
    len: usize,
    elem_size: usize,
    elem_align: usize,
) -> Result<usize> {
    let refuse = |problem: String| Error::InvalidArgument {
        what: "allocation",
        problem,
    };
    if !info.alloc_allowed {
        return Err(refuse(format!(
            "the {:?} pool of agent {agent} does not allow runtime allocation",
            info.segment
        )));
    }
    if elem_size == 0 {
        return Err(refuse("zero-sized element type".into()));
    }
    if len == 0 {
        return Err(refuse("zero elements requested".into()));
    }
    let bytes = len.checked_mul(elem_size).ok_or_else(|| {
        refuse(format!(
            "{len} elements of {elem_size} bytes overflow usize"
        ))
    })?;
    if bytes as u64 > info.alloc_max_size {
        return Err(refuse(format!(
            "{bytes} bytes exceed the pool's largest allocation ({} bytes) on agent {agent}",
            info.alloc_max_size
        )));
    }
    if info.alignment != 0 && elem_align as u64 > info.alignment {
        return Err(refuse(format!(
            "element alignment {elem_align} exceeds the pool's allocation alignment {}",
            info.alignment
        )));
    }
    Ok(bytes)
}

/// One live pool allocation; freed on drop.
struct RawAllocation {
    pool: MemoryPool,
    ptr: NonNull<u8>,
    bytes: usize,
}

// SAFETY: the allocation is plain memory owned by this value; HSA's free
// may be called from any thread.
unsafe impl Send for RawAllocation {}
// SAFETY: shared references only expose the address and sizes.
unsafe impl Sync for RawAllocation {}

impl Drop for RawAllocation {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from pool_allocate and is dropped once; the
        // typed buffers above guarantee no copy or dispatch that borrows it
        // is still running (async copies hold a borrow; dispatches hold
        // their kernarg allocations themselves).
        let _ = unsafe { self.pool.owner.system().pool_free(self.ptr.as_ptr()) };
    }
}

/// Marker: memory the host may not dereference.
#[derive(Debug)]
pub enum DeviceOnly {}
/// Marker: host-accessible memory.
#[derive(Debug)]
pub enum Host {}

/// A typed allocation of `len` elements of `T` in a pool; `L` says whether
/// the host may dereference it ([`Host`]) or not ([`DeviceOnly`]).
pub struct Buffer<T, L> {
    raw: RawAllocation,
    len: usize,
    _marker: PhantomData<(fn() -> L, T)>,
}

/// A typed allocation in device memory.
pub type DeviceBuffer<T> = Buffer<T, DeviceOnly>;
/// A typed allocation in host-accessible memory.
pub type HostBuffer<T> = Buffer<T, Host>;

impl<T, L> fmt::Debug for Buffer<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("address", &self.raw.ptr)
            .field("len", &self.len)
            .field("element", &std::any::type_name::<T>())
            .field("agent", &self.raw.pool.owner.info().name)
            .finish()
    }
}

impl<T: Pod, L> Buffer<T, L> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes (`len * size_of::<T>()`).
    pub fn size_bytes(&self) -> usize {
        self.raw.bytes
    }

    /// The device address (what a kernel argument holds).
    pub fn address(&self) -> u64 {
        self.raw.ptr.as_ptr() as u64
    }

    /// The pool this buffer came from.
    pub fn pool(&self) -> &MemoryPool {
        &self.raw.pool
    }

    /// Lets `agents` reach this buffer (`hsa_amd_agents_allow_access`).
    pub fn allow_access(&self, agents: &[&Agent]) -> Result<()> {
        if agents.is_empty() {
            return Err(Error::InvalidArgument {
                what: "allow_access",
                problem: "no agents given".into(),
            });
        }
        let handles: Vec<ffi::Agent> = agents.iter().map(|a| a.handle()).collect();
        self.raw
            .pool
            .owner
            .system()
            .allow_access(&handles, self.raw.ptr.as_ptr())
    }

    /// Copies `src` into elements `offset..offset + src.len()`
    /// (`hsa_memory_copy`, synchronous).
    pub fn write(&mut self, offset: usize, src: &[T]) -> Result<()> {
        let range = check_range("write", offset, src.len(), self.len)?;
        // SAFETY: the range lies inside this allocation (checked), `src` is
        // a live slice, and `&mut self` excludes other users.
        unsafe {
            self.raw.pool.owner.system().memory_copy(
                self.raw.ptr.as_ptr().add(range.start * size_of::<T>()),
                src.as_ptr().cast(),
                std::mem::size_of_val(src),
            )
        }
    }

    /// Copies elements `offset..offset + dst.len()` into `dst`
    /// (`hsa_memory_copy`, synchronous).
    pub fn read(&self, offset: usize, dst: &mut [T]) -> Result<()> {
        let range = check_range("read", offset, dst.len(), self.len)?;
        // SAFETY: as in `write`; `T: Pod` makes any bytes a valid `T`.
        unsafe {
            self.raw.pool.owner.system().memory_copy(
                dst.as_mut_ptr().cast(),
                self.raw.ptr.as_ptr().add(range.start * size_of::<T>()),
                std::mem::size_of_val(dst),
            )
        }
    }

    /// The whole buffer as a vector (`hsa_memory_copy`).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = vec![T::new_zeroed(); self.len];
        self.read(0, &mut out)?;
        Ok(out)
    }

    /// Copies all of `src` (same length) into this buffer
    /// (`hsa_memory_copy`, synchronous).
    pub fn copy_from<L2>(&mut self, src: &Buffer<T, L2>) -> Result<()> {
        check_same_len("copy_from", self.len, src.len)?;
        // SAFETY: both allocations are `size_bytes` long and live; `&mut
        // self` excludes other users of the destination.
        unsafe {
            self.raw.pool.owner.system().memory_copy(
                self.raw.ptr.as_ptr(),
                src.raw.ptr.as_ptr(),
                self.raw.bytes,
            )
        }
    }

    /// Starts copying all of `src` into this buffer
    /// (`hsa_amd_memory_async_copy`) once every signal of `dependencies` is
    /// zero. The copy decrements the returned [`PendingCopy`]'s signal when
    /// done; both buffers stay borrowed until then.
    pub fn copy_from_async<'a, L2>(
        &'a mut self,
        src: &'a Buffer<T, L2>,
        dependencies: &[&Signal],
    ) -> Result<PendingCopy<'a>> {
        check_same_len("copy_from_async", self.len, src.len)?;
        let system = self.raw.pool.owner.system().clone();
        let completion = Signal::new(&system, 1)?;
        let deps: Vec<_> = dependencies.iter().map(|s| s.handle()).collect();
        // The engine doing the copy: the GPU side of the pair (a host-to-
        // host copy names the CPU agent on both sides).
        let dst_agent = self.raw.pool.owner.handle();
        let src_agent = src.raw.pool.owner.handle();
        // SAFETY: both allocations are `size_bytes` long and stay borrowed
        // (dst exclusively) by the returned PendingCopy, which does not let
        // go before the completion signal has been decremented.
        unsafe {
            system.memory_async_copy(
                self.raw.ptr.as_ptr(),
                dst_agent,
                src.raw.ptr.as_ptr(),
                src_agent,
                self.raw.bytes,
                &deps,
                completion.handle(),
            )?;
        }
        Ok(PendingCopy {
            completion,
            done: false,
            _borrow: PhantomData,
        })
    }
}

impl<T: Pod> std::ops::Deref for HostBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: host-accessible memory (alloc_host checked), initialised
        // (zero-filled at allocation), `len` elements of a Pod type. A GPU
        // writing it concurrently is the caller's to prevent: wait for the
        // dispatch before reading.
        unsafe { std::slice::from_raw_parts(self.raw.ptr.as_ptr().cast(), self.len) }
    }
}

impl<T: Pod> std::ops::DerefMut for HostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only host
        // reference.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.as_ptr().cast(), self.len) }
    }
}

fn check_range(
    what: &'static str,
    offset: usize,
    count: usize,
    len: usize,
) -> Result<std::ops::Range<usize>> {
    match offset.checked_add(count) {
        Some(end) if end <= len => Ok(offset..end),
        _ => Err(Error::InvalidArgument {
            what,
            problem: format!(
                "elements {offset}..{} are outside the buffer of {len} elements",
                offset as u128 + count as u128
            ),
        }),
    }
}

fn check_same_len(what: &'static str, dst: usize, src: usize) -> Result<()> {
    if dst == src {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what,
            problem: format!("source has {src} elements, destination {dst}"),
        })
    }
}

/// An asynchronous copy in flight. Wait for it with [`PendingCopy::wait`];
/// dropping it unfinished blocks until the copy completes (the buffers it
/// borrows may not be touched before), however long that takes.
#[must_use = "a copy is only known complete after wait()"]
pub struct PendingCopy<'a> {
    completion: Signal,
    done: bool,
    _borrow: PhantomData<&'a mut ()>,
}

impl PendingCopy<'_> {
    /// The signal the copy decrements from 1 to 0 (for use as a dependency
    /// of barrier packets or other copies).
    pub fn signal(&self) -> &Signal {
        &self.completion
    }

    /// Waits until the copy is done, or fails with [`Error::Timeout`]
    /// (the copy then stays pending).
    pub fn wait(&mut self, timeout: Duration) -> Result<()> {
        if !self.done {
            self.completion
                .wait(SignalCondition::LT, 1, timeout, WaitOrder::Acquire)?;
            self.done = true;
        }
        Ok(())
    }
}

impl Drop for PendingCopy<'_> {
    fn drop(&mut self) {
        // The borrow may not end before the engine is done with the memory.
        while !self.done {
            let _ = self.wait(Duration::from_secs(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(alloc_allowed: bool) -> PoolInfo {
        PoolInfo {
            segment: Segment::Global,
            fine_grained: false,
            coarse_grained: true,
            kernarg: false,
            size: 1 << 30,
            alloc_allowed,
            granule: 4096,
            alignment: 4096,
            accessible_by_all: false,
            alloc_max_size: 1 << 30,
        }
    }

    #[test]
    fn allocation_requests_are_checked_before_hsa() {
        let ok = pool(true);
        assert_eq!(check_allocation(&ok, "gfx942", 10, 4, 4).unwrap(), 40);
        let cases: [(PoolInfo, usize, usize, usize, &str); 5] = [
            (pool(false), 1, 4, 4, "does not allow runtime allocation"),
            (ok.clone(), 1, 0, 1, "zero-sized element type"),
            (ok.clone(), 0, 4, 4, "zero elements requested"),
            (ok.clone(), usize::MAX, 2, 2, "overflow usize"),
            (
                ok.clone(),
                (1 << 30) / 4 + 1,
                4,
                4,
                "exceed the pool's largest allocation",
            ),
        ];
        for (info, len, size, align, message) in cases {
            let err = check_allocation(&info, "gfx942", len, size, align).unwrap_err();
            assert!(err.to_string().contains(message), "{len}x{size}: {err}");
        }
        let err = check_allocation(&ok, "gfx942", 1, 8192, 8192).unwrap_err();
        assert!(err.to_string().contains("alignment 8192"), "{err}");
    }

    #[test]
    fn ranges_outside_a_buffer_are_refused() {
        assert_eq!(check_range("read", 2, 3, 5).unwrap(), 2..5);
        assert_eq!(check_range("read", 5, 0, 5).unwrap(), 5..5);
        for (offset, count) in [(4, 2), (6, 0), (usize::MAX, 2)] {
            let err = check_range("read", offset, count, 5).unwrap_err();
            assert!(err.to_string().contains("outside the buffer of 5"), "{err}");
        }
        assert!(
            check_same_len("copy_from", 3, 4)
                .unwrap_err()
                .to_string()
                .contains("source has 4 elements, destination 3")
        );
    }
}
