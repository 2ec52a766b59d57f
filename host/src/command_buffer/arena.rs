//! The recording's own device memory: kernel infos, argument templates,
//! binding patches, prepared packets and update data, carved from chunks
//! that grow as a long recording needs them.

use crate::error::{Error, Result};
use crate::memory::{HostBuffer, MemoryPool};

/// Bytes of the device memory the recording's own data (kernel infos,
/// argument templates, binding patches, update bytes) is carved from, in
/// the first chunk; each next one is twice the last, up to
/// [`DATA_CHUNK_MAX`] (an allocation costs more than its bytes: a long
/// recording takes few).
const DATA_CHUNK: usize = 64 * 1024;
const DATA_CHUNK_MAX: usize = 1 << 20;

/// Device memory for the recording's data, carved in 16-byte-aligned
/// pieces from chunks of [`DATA_CHUNK`] bytes and more (a piece larger
/// than a chunk gets its own).
pub(super) struct Arena {
    pool: MemoryPool,
    pub(super) chunks: Vec<HostBuffer<u8>>,
    used: usize,
}

impl Arena {
    pub(super) fn new(pool: MemoryPool) -> Self {
        Self {
            pool,
            chunks: Vec::new(),
            used: 0,
        }
    }

    /// Copies `bytes` into the arena at an `align`-byte boundary (a power
    /// of two), zero-padded to a multiple of 16 bytes;
    /// returns the device address.
    pub(super) fn put(&mut self, bytes: &[u8], align: usize) -> Result<u64> {
        self.put_readable(bytes, bytes.len(), align)
    }

    /// [`Arena::put`], with `readable` bytes at least readable from the
    /// returned address (what follows `bytes` in the chunk: zeros, or what
    /// is put next).
    pub(super) fn put_readable(
        &mut self,
        bytes: &[u8],
        readable: usize,
        align: usize,
    ) -> Result<u64> {
        debug_assert!(align.is_power_of_two() && readable >= bytes.len());
        let size = bytes.len().next_multiple_of(16).max(16);
        let readable = readable.max(size);
        // Chunks start page-aligned, so an offset's alignment is the
        // address's. A mask, not a division: this runs for every command.
        let at = (self.used + align - 1) & !(align - 1);
        let fits = self.chunks.last().is_some_and(|c| at + readable <= c.len());
        let at = if fits {
            at
        } else {
            let grown = (DATA_CHUNK << self.chunks.len().min(4)).min(DATA_CHUNK_MAX);
            self.chunks
                .push(self.pool.alloc_host::<u8>(readable.max(grown))?);
            0
        };
        let chunk = self.chunks.last_mut().ok_or_else(no_chunk)?;
        chunk[at..at + bytes.len()].copy_from_slice(bytes);
        self.used = at + size;
        Ok(chunk.address() + at as u64)
    }

    /// Writes `bytes` over what [`Arena::put`] placed at `address` (what
    /// must hold its own address, such as the block table, is put first
    /// and filled in after).
    pub(super) fn overwrite(&mut self, address: u64, bytes: &[u8]) -> Result<()> {
        let chunk = self
            .chunks
            .iter_mut()
            .find(|c| (c.address()..c.address() + c.len() as u64).contains(&address))
            .ok_or_else(no_chunk)?;
        let start = (address - chunk.address()) as usize;
        chunk
            .get_mut(start..start + bytes.len())
            .ok_or_else(no_chunk)?
            .copy_from_slice(bytes);
        Ok(())
    }
}

fn no_chunk() -> Error {
    Error::InvalidArgument {
        what: "command buffer",
        problem: "no data chunk".into(),
    }
}
