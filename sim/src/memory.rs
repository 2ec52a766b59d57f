//! Device memory: the host process's memory, behind a table of valid ranges.
//!
//! A simulated GPU address is a host virtual address, so the host (and the
//! HSA layer of part 2) reads device buffers with plain pointers. What the
//! simulated device may touch is what this table holds: allocations made
//! here, code-object images, and ranges an embedder registers (queues,
//! signals, kernarg buffers living elsewhere). Every global or flat access
//! of a wave is checked against it; an access outside stops the wave with a
//! memory fault and never reaches host memory.
//!
//! What faults, as on the hardware: a GPU maps memory in whole pages, and
//! ROCr hands out allocations in 4 KiB granules (its pools report
//! `RUNTIME_ALLOC_GRANULE` 4096), so an access a few bytes past the end of
//! a buffer reads or writes mapped memory and does not fault.
//! [`Memory::alloc`] therefore maps the request rounded up
//! to [`PAGE`], page-aligned, and fills the tail past the requested size
//! with [`TAIL_POISON`] (a NaN as f32, f64 and in the high half as f16), so
//! no test can rely on what it reads there. Only an access outside every
//! mapped range faults.
//!
//! Strict mode ([`Memory::set_strict`], `Gpu::strict`, or
//! `AQUEDUCT_SIM_STRICT=1` for the HSA runtime) narrows every allocation to
//! the bytes requested, and makes an LDS access beyond the group segment a
//! fault instead of the hardware's zero read or dropped write
//! (see `exec::ds`): for debugging our own kernels, where any access past
//! the requested size is a bug even when the hardware would not notice.
//!
//! Accesses go through relaxed atomics, byte- or dword-wise: host threads
//! (signal waiters, a packet processor) may touch the same memory while a
//! kernel runs, and the hardware gives no stronger guarantee than that to
//! plain loads and stores either.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

/// What a valid range is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeKind {
    /// Allocated by [`Memory::alloc`]; owned and freed here.
    Allocation,
    /// Registered by the embedder, who keeps it alive.
    Registered,
}

/// The granule of device memory: allocations are mapped in whole pages.
pub const PAGE: u64 = 4096;

/// The dword the mapped tail of an allocation is filled with.
pub const TAIL_POISON: u32 = 0x7FF0_DEAD;

#[derive(Debug)]
struct Range {
    start: u64,
    /// The end of the mapping (what faults outside it).
    end: u64,
    /// The end of the bytes requested (what faults in strict mode).
    requested_end: u64,
    kind: RangeKind,
    layout: Option<Layout>,
}

impl Range {
    fn end(&self, strict: bool) -> u64 {
        if strict { self.requested_end } else { self.end }
    }
}

/// Why a memory request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryError {
    /// Zero size, an alignment that is not a power of two, or too large.
    BadRequest {
        /// Bytes asked for.
        size: u64,
        /// Alignment asked for, bytes.
        align: u64,
    },
    /// The host allocator refused.
    OutOfMemory {
        /// Bytes asked for (before rounding to [`PAGE`]).
        size: u64,
    },
    /// The range overlaps one already in the table.
    Overlap {
        /// First byte of the range refused.
        start: u64,
        /// One past its last byte.
        end: u64,
    },
    /// No range starts at this address.
    NotAllocated {
        /// The address given.
        address: u64,
    },
    /// The access lies outside every valid range.
    OutOfRange {
        /// First byte accessed.
        address: u64,
        /// Bytes accessed.
        size: u64,
    },
}

impl std::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadRequest { size, align } => {
                write!(f, "bad allocation request: {size} bytes aligned to {align}")
            }
            Self::OutOfMemory { size } => write!(f, "out of host memory for {size} bytes"),
            Self::Overlap { start, end } => {
                write!(f, "range {start:#x}..{end:#x} overlaps a registered range")
            }
            Self::NotAllocated { address } => {
                write!(f, "{address:#x} is not the start of a simulator allocation")
            }
            Self::OutOfRange { address, size } => {
                write!(f, "{size} bytes at {address:#x} are outside device memory")
            }
        }
    }
}

impl std::error::Error for MemoryError {}

/// The valid-range table and the allocator behind it.
#[derive(Debug, Default)]
pub struct Memory {
    ranges: RwLock<Vec<Range>>,
    strict: AtomicBool,
}

impl Memory {
    /// An empty table: nothing is valid until allocated or registered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns strict mode (see the module doc) on or off for the accesses
    /// that start after the call.
    pub fn set_strict(&self, strict: bool) {
        self.strict.store(strict, Ordering::Relaxed);
    }

    /// Whether strict mode is on.
    pub fn is_strict(&self) -> bool {
        self.strict.load(Ordering::Relaxed)
    }

    /// Allocates `size` zeroed bytes aligned to `align` (at least a page)
    /// and enters them in the table, mapped to the end of their last page;
    /// the bytes past `size` hold [`TAIL_POISON`].
    pub fn alloc(&self, size: u64, align: u64) -> Result<u64, MemoryError> {
        let bad = MemoryError::BadRequest { size, align };
        if size == 0 {
            return Err(bad);
        }
        let mapped = size.checked_next_multiple_of(PAGE).ok_or(bad.clone())?;
        let layout = Layout::from_size_align(
            usize::try_from(mapped).map_err(|_| bad.clone())?,
            usize::try_from(align.max(PAGE)).map_err(|_| bad.clone())?,
        )
        .map_err(|_| bad.clone())?;
        // SAFETY: the layout has a non-zero size (checked above).
        let p = unsafe { alloc_zeroed(layout) };
        if p.is_null() {
            return Err(MemoryError::OutOfMemory { size });
        }
        let start = p as u64;
        // SAFETY: `p` is a fresh allocation of `mapped` bytes that nothing
        // else can see yet.
        let tail = unsafe { std::slice::from_raw_parts_mut(p, mapped as usize) };
        for (i, b) in tail.iter_mut().enumerate().skip(size as usize) {
            *b = TAIL_POISON.to_le_bytes()[i % 4];
        }
        self.insert(Range {
            start,
            end: start + mapped,
            requested_end: start + size,
            kind: RangeKind::Allocation,
            layout: Some(layout),
        })?;
        Ok(start)
    }

    /// Frees an allocation made by [`Memory::alloc`], or unregisters a
    /// range entered by [`Memory::register`].
    pub fn free(&self, address: u64) -> Result<(), MemoryError> {
        let mut ranges = self.write();
        let at = ranges
            .binary_search_by_key(&address, |r| r.start)
            .map_err(|_| MemoryError::NotAllocated { address })?;
        let r = ranges.remove(at);
        if let Some(layout) = r.layout {
            // SAFETY: `r` came from `alloc_zeroed` with this layout in
            // `alloc`, and removing it from the table under the write lock
            // means no wave can be inside it: waves hold the read lock for
            // the duration of each access.
            unsafe { dealloc(r.start as *mut u8, layout) };
        }
        Ok(())
    }

    /// Lets the device access `len` bytes at `address`, memory the caller
    /// owns.
    ///
    /// # Safety
    /// The range must stay valid for reads and writes by any thread until
    /// it is freed with [`Memory::free`].
    pub unsafe fn register(&self, address: u64, len: u64) -> Result<(), MemoryError> {
        if len == 0 || address.checked_add(len).is_none() {
            return Err(MemoryError::BadRequest {
                size: len,
                align: 1,
            });
        }
        self.insert(Range {
            start: address,
            end: address + len,
            requested_end: address + len,
            kind: RangeKind::Registered,
            layout: None,
        })
    }

    /// Frees every allocation and forgets every registered range: the end
    /// of a runtime, once nothing runs on its memory.
    pub fn clear(&self) {
        for r in self.write().drain(..) {
            if let Some(layout) = r.layout {
                // SAFETY: allocated in `alloc` with this layout; removed
                // from the table under the write lock, so no access is in
                // flight (accesses hold the read lock) and none can start.
                unsafe { dealloc(r.start as *mut u8, layout) };
            }
        }
    }

    /// The kind of the range holding `address`, if any.
    pub fn kind_of(&self, address: u64) -> Option<RangeKind> {
        let ranges = self.read();
        find(&ranges, address, 1, self.is_strict()).map(|r| r.kind)
    }

    fn insert(&self, r: Range) -> Result<(), MemoryError> {
        let mut ranges = self.write();
        let at = ranges.partition_point(|x| x.start < r.start);
        let overlaps_prev = at > 0 && ranges[at - 1].end > r.start;
        let overlaps_next = ranges.get(at).is_some_and(|n| n.start < r.end);
        if overlaps_prev || overlaps_next {
            return Err(MemoryError::Overlap {
                start: r.start,
                end: r.end,
            });
        }
        ranges.insert(at, r);
        Ok(())
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<Range>> {
        // A panic while holding the lock cannot leave the vector invalid
        // (every mutation is one insert or remove), so poisoning is ignored.
        self.ranges.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Range>> {
        self.ranges.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the table for a batch of accesses (one instruction's lanes).
    pub fn access(&self) -> Access<'_> {
        Access {
            ranges: self.read(),
            hit: (0, 0),
            strict: self.is_strict(),
        }
    }

    /// Host-side copy into device memory, checked like a device access.
    pub fn write_bytes(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        let mut a = self.access();
        a.check(address, data.len() as u64)?;
        for (i, &b) in data.iter().enumerate() {
            a.store_u8(address + i as u64, b);
        }
        Ok(())
    }

    /// Host-side copy out of device memory, checked like a device access.
    pub fn read_bytes(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let mut a = self.access();
        a.check(address, out.len() as u64)?;
        for (i, b) in out.iter_mut().enumerate() {
            *b = a.load_u8(address + i as u64);
        }
        Ok(())
    }

    /// A new allocation (256-aligned, at least one byte) holding `bytes`:
    /// how tests and benchmarks hand a kernel its inputs.
    pub fn alloc_bytes(&self, bytes: &[u8]) -> Result<u64, MemoryError> {
        let a = self.alloc(bytes.len().max(1) as u64, 256)?;
        if let Err(e) = self.write_bytes(a, bytes) {
            let _ = self.free(a);
            return Err(e);
        }
        Ok(a)
    }

    /// `len` bytes at `address`, checked like a device access.
    pub fn read_vec(&self, address: u64, len: usize) -> Result<Vec<u8>, MemoryError> {
        let mut out = vec![0; len];
        self.read_bytes(address, &mut out)?;
        Ok(out)
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        self.clear();
    }
}

fn find(ranges: &[Range], address: u64, size: u64, strict: bool) -> Option<&Range> {
    let at = ranges.partition_point(|r| r.start <= address);
    let r = ranges.get(at.checked_sub(1)?)?;
    (address.checked_add(size)? <= r.end(strict)).then_some(r)
}

/// The table held open for a batch of accesses. Every load and store
/// through it must be preceded by a successful [`Access::check`] of a range
/// covering it.
pub struct Access<'m> {
    ranges: RwLockReadGuard<'m, Vec<Range>>,
    /// The last range hit, as (start, end).
    hit: (u64, u64),
    strict: bool,
}

impl Access<'_> {
    /// Checks that `size` bytes at `address` lie in one valid range.
    #[inline]
    pub fn check(&mut self, address: u64, size: u64) -> Result<(), MemoryError> {
        let end = address.wrapping_add(size);
        if address >= self.hit.0 && end <= self.hit.1 && end >= address {
            return Ok(());
        }
        self.check_in_table(address, size)
    }

    /// [`Access::check`] past the last range hit: a search of the table.
    /// Out of line, so the hit test above stays small enough for every
    /// executor to inline.
    #[inline(never)]
    fn check_in_table(&mut self, address: u64, size: u64) -> Result<(), MemoryError> {
        let r = find(&self.ranges, address, size, self.strict)
            .ok_or(MemoryError::OutOfRange { address, size })?;
        self.hit = (r.start, r.end(self.strict));
        Ok(())
    }

    /// The byte at a checked address.
    #[inline]
    pub fn load_u8(&self, address: u64) -> u8 {
        // SAFETY: callers checked the address against the table, whose
        // ranges are live, and hold the table's read lock so none can be
        // freed; AtomicU8 has no alignment requirement.
        unsafe { AtomicU8::from_ptr(address as *mut u8) }.load(Ordering::Relaxed)
    }

    /// Stores a byte at a checked address.
    #[inline]
    pub fn store_u8(&mut self, address: u64, v: u8) {
        // SAFETY: as in `load_u8`.
        unsafe { AtomicU8::from_ptr(address as *mut u8) }.store(v, Ordering::Relaxed)
    }

    /// A little-endian dword at any alignment.
    #[inline]
    pub fn load_u32(&self, address: u64) -> u32 {
        if address % 4 == 0 {
            // SAFETY: as in `load_u8`, and the address is 4-aligned.
            unsafe { AtomicU32::from_ptr(address as *mut u32) }.load(Ordering::Relaxed)
        } else {
            u32::from_le_bytes(std::array::from_fn(|i| self.load_u8(address + i as u64)))
        }
    }

    /// Stores a little-endian dword at a checked address, any alignment
    /// (bytewise when unaligned).
    #[inline]
    pub fn store_u32(&mut self, address: u64, v: u32) {
        if address % 4 == 0 {
            // SAFETY: as in `load_u8`, and the address is 4-aligned.
            unsafe { AtomicU32::from_ptr(address as *mut u32) }.store(v, Ordering::Relaxed)
        } else {
            for (i, b) in v.to_le_bytes().into_iter().enumerate() {
                self.store_u8(address + i as u64, b);
            }
        }
    }

    /// `size` (1, 2 or 4) bytes, zero-extended.
    #[inline]
    pub fn load_small(&self, address: u64, size: u32) -> u32 {
        match size {
            1 => u32::from(self.load_u8(address)),
            2 if address % 2 == 0 => {
                // SAFETY: as in `load_u8`, and the address is 2-aligned.
                let v = unsafe { AtomicU16::from_ptr(address as *mut u16) }.load(Ordering::Relaxed);
                u32::from(u16::from_le(v))
            }
            2 => u32::from(self.load_u8(address)) | u32::from(self.load_u8(address + 1)) << 8,
            _ => self.load_u32(address),
        }
    }

    /// Stores the low `size` (1, 2 or 4) bytes of `v`, little-endian, at
    /// a checked address.
    #[inline]
    pub fn store_small(&mut self, address: u64, size: u32, v: u32) {
        match size {
            1 => self.store_u8(address, v as u8),
            2 => {
                self.store_u8(address, v as u8);
                self.store_u8(address + 1, (v >> 8) as u8);
            }
            _ => self.store_u32(address, v),
        }
    }

    /// The dword atomic at a 4-aligned, checked address.
    ///
    /// Returns `None` when misaligned (the hardware's atomics need natural
    /// alignment; callers report a fault).
    #[inline]
    pub fn atomic_u32(&self, address: u64) -> Option<&AtomicU32> {
        // SAFETY: as in `load_u8`; alignment is checked here.
        (address % 4 == 0).then(|| unsafe { AtomicU32::from_ptr(address as *mut u32) })
    }

    /// The qword atomic at an 8-aligned, checked address.
    #[inline]
    pub fn atomic_u64(&self, address: u64) -> Option<&AtomicU64> {
        // SAFETY: as in `load_u8`; alignment is checked here.
        (address % 8 == 0).then(|| unsafe { AtomicU64::from_ptr(address as *mut u64) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_outside_the_mapped_pages_are_refused() {
        let m = Memory::new();
        let a = m.alloc(64, 64).unwrap();
        assert_eq!(a % PAGE, 0, "allocations start a page");
        m.write_bytes(a + 60, &[1, 2, 3, 4]).unwrap();
        // Past the 64 bytes requested but inside the page: mapped.
        m.write_bytes(a + 61, &[1, 2, 3, 4]).unwrap();
        assert_eq!(
            m.write_bytes(a + PAGE - 2, &[1, 2, 3, 4]),
            Err(MemoryError::OutOfRange {
                address: a + PAGE - 2,
                size: 4
            })
        );
        let mut out = [0u8; 4];
        m.read_bytes(a + 60, &mut out).unwrap();
        assert_eq!(out, [1, 1, 2, 3]);
        m.free(a).unwrap();
        assert!(m.read_bytes(a, &mut out).is_err());
        assert_eq!(m.free(a), Err(MemoryError::NotAllocated { address: a }));
    }

    #[test]
    fn the_tail_of_the_last_page_is_poisoned_and_the_rest_zeroed() {
        let m = Memory::new();
        let a = m.alloc(4096 + 6, 256).unwrap();
        let bytes = m.read_vec(a, 2 * PAGE as usize).unwrap();
        assert!(bytes[..4102].iter().all(|&b| b == 0));
        // Dword-aligned pattern from the allocation's start.
        assert_eq!(&bytes[4102..4104], &TAIL_POISON.to_le_bytes()[2..]);
        for d in bytes[4104..].chunks(4) {
            assert_eq!(u32::from_le_bytes(d.try_into().unwrap()), TAIL_POISON);
        }
        assert!(f32::from_bits(TAIL_POISON).is_nan());
        assert!(f64::from_bits(u64::from(TAIL_POISON) << 32 | u64::from(TAIL_POISON)).is_nan());
        m.free(a).unwrap();
    }

    #[test]
    fn strict_mode_refuses_any_byte_past_the_request() {
        let m = Memory::new();
        let a = m.alloc(64, 64).unwrap();
        m.set_strict(true);
        assert_eq!(
            m.write_bytes(a + 61, &[1, 2, 3, 4]),
            Err(MemoryError::OutOfRange {
                address: a + 61,
                size: 4
            })
        );
        m.write_bytes(a + 60, &[1, 2, 3, 4]).unwrap();
        m.set_strict(false);
        m.write_bytes(a + 61, &[1, 2, 3, 4]).unwrap();
        m.free(a).unwrap();
    }

    #[test]
    fn registered_ranges_may_not_overlap() {
        let m = Memory::new();
        let mut backing = vec![0u32; 16];
        let p = backing.as_mut_ptr() as u64;
        // SAFETY: `backing` outlives `m`'s use of it (freed below).
        unsafe { m.register(p, 64) }.unwrap();
        // SAFETY: refused before any access.
        assert!(unsafe { m.register(p + 32, 64) }.is_err());
        m.write_bytes(p + 4, &7u32.to_le_bytes()).unwrap();
        m.free(p).unwrap();
        assert_eq!(backing[1], 7);
    }
}
