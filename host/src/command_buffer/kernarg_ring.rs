//! The host's producer side of a kernarg ring: the byte ring in kernarg
//! memory (memory every agent reads) where a submission's state and kernel
//! arguments go — per-submission reservations, 64-byte aligned and never
//! wrapping, released in submission order. A [`CommandQueue`] keeps one
//! for its submissions; a device's scheduler keeps one whose read side
//! its tick advances
//! ([`KernargRing`](aqueduct_abi::scheduler::KernargRing)'s
//! `read_offset`).
//!
//! [`CommandQueue`]: super::CommandQueue

use std::sync::Arc;

use crate::memory::HostBuffer;

/// Host-accessible memory the host writes through a shared reference: the
/// kernarg ring, whose regions belong each to one submission, and which
/// submissions read back (a fault's block) after the device is done.
pub(crate) struct SharedBytes(HostBuffer<u8>);

impl SharedBytes {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// The storage's device address.
    pub(crate) fn address(&self) -> u64 {
        self.0.address()
    }

    /// Copies `bytes` to offset `at`.
    pub(crate) fn write(&self, at: usize, bytes: &[u8]) {
        assert!(at + bytes.len() <= self.0.len(), "inside the ring");
        // SAFETY: inside the allocation (asserted), host-accessible memory;
        // the region belongs to the submission being written, which no
        // other host thread writes and the device reads only after the
        // doorbell.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (self.0.address() as *mut u8).add(at),
                bytes.len(),
            )
        };
    }
}

/// The producer of a kernarg ring: its storage and the bytes ever reserved
/// and ever released (offsets mod the capacity).
pub(crate) struct KernargProducer {
    storage: Arc<SharedBytes>,
    write: u64,
    read: u64,
}

impl KernargProducer {
    /// An empty ring over `storage`.
    pub(crate) fn new(storage: HostBuffer<u8>) -> Self {
        Self {
            storage: Arc::new(SharedBytes(storage)),
            write: 0,
            read: 0,
        }
    }

    /// Bytes of storage.
    pub(crate) fn capacity(&self) -> u64 {
        self.storage.len() as u64
    }

    /// Bytes free now.
    pub(crate) fn room(&self) -> u64 {
        self.capacity() - (self.write - self.read)
    }

    /// The storage, which submissions keep to read their state back.
    pub(crate) fn storage(&self) -> &Arc<SharedBytes> {
        &self.storage
    }

    /// The consumer has released every byte below `read` (bytes ever).
    pub(crate) fn release_to(&mut self, read: u64) {
        self.read = read;
    }

    /// `size` bytes, 64-byte aligned, never wrapping: the offset in the
    /// storage and the new write position, or None without room.
    pub(crate) fn reserve(&self, size: u64) -> Option<(u64, u64)> {
        let cap = self.capacity();
        let size = size.next_multiple_of(64);
        let at = self.write % cap;
        // Skip the tail if the reservation would straddle the end.
        let start = if at + size > cap {
            self.write + (cap - at)
        } else {
            self.write
        };
        let end = start + size;
        (end - self.read <= cap).then_some((start % cap, end))
    }

    /// A reservation [`KernargProducer::reserve`] gave is written: the next
    /// starts at `end`.
    pub(crate) fn commit(&mut self, end: u64) {
        self.write = end;
    }
}
