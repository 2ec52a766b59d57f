//! Queue-ordered allocations ([`DeviceQueue::alloca`](super::DeviceQueue::alloca)):
//! a handle in device memory whose address the device's tick commits when
//! the allocation runs and clears when it is deallocated.

use std::ptr::NonNull;
use std::sync::Arc;

use aqueduct_abi::command::{AllocationHandle, BufferRef};
use aqueduct_abi::view::View;
use zerocopy::IntoBytes;

use crate::error::Result;
use crate::memory::HostBuffer;

/// A queue-ordered allocation ([`DeviceQueue::alloca`](super::DeviceQueue::alloca)):
/// a handle in device memory whose address the device commits when the
/// allocation runs and clears when it is deallocated. Cheap to clone.
/// Dropping it without a
/// [`DeviceQueue::dealloca`](super::DeviceQueue::dealloca) leaves its
/// block taken until the device goes (nothing else knows the block is
/// free).
#[derive(Clone)]
pub struct Allocation {
    inner: Arc<AllocationInner>,
}

struct AllocationInner {
    /// The [`AllocationHandle`].
    handle: HostBuffer<u8>,
    length: u64,
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocation")
            .field("handle", &format_args!("{:#x}", self.handle()))
            .field("length", &self.inner.length)
            .field("address", &self.address())
            .finish()
    }
}

impl Allocation {
    pub(super) fn new(pool: &crate::memory::MemoryPool, length: u64) -> Result<Self> {
        let mut handle = pool.alloc_host::<u8>(size_of::<AllocationHandle>())?;
        handle.copy_from_slice(AllocationHandle { address: 0, length }.as_bytes());
        Ok(Self {
            inner: Arc::new(AllocationInner { handle, length }),
        })
    }

    /// Bytes asked for.
    pub fn length(&self) -> u64 {
        self.inner.length
    }

    /// The device address of the handle (what
    /// [`BufferRef::allocation`] takes).
    pub fn handle(&self) -> u64 {
        self.inner.handle.address()
    }

    /// The handle, as the device's tick sees it.
    fn view(&self) -> View<'_, AllocationHandle> {
        // SAFETY: the buffer holds the AllocationHandle written above
        // (8-byte aligned: runtime allocations are 64-byte aligned), kept
        // by `self`; the tick writes its address while no one else does
        // (the entry runs) and the host reads it after the entry's
        // semaphores say so.
        unsafe {
            View::from_ptr(NonNull::new_unchecked(
                self.handle() as *mut AllocationHandle
            ))
        }
    }

    /// The device address of the block, once the allocation has run and
    /// until it is deallocated (read after the entry's semaphores said it
    /// ran; the device writes it before it signals them).
    pub fn address(&self) -> Option<u64> {
        Some(self.view().address().observe()).filter(|&a| a != 0)
    }

    /// A reference to `length` bytes at `offset` of the allocation, for
    /// commands of a recording (resolved when the command is issued: keep
    /// the `Allocation` alive while entries that run such commands may
    /// run, as their recordings name its handle).
    pub fn buffer(&self, offset: u64, length: u64) -> BufferRef {
        BufferRef::allocation(self.handle(), offset, length)
    }

    /// What an entry of this allocation keeps alive while the device may
    /// read the handle.
    pub(super) fn keep_alive(&self) -> Arc<dyn Send + Sync> {
        self.inner.clone()
    }
}
