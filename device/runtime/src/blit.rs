//! Blits: fill a byte range with a 1/2/4/8/16-byte pattern, or copy one byte
//! range to another, at any alignment and any length.
//!
//! A blit splits its destination range into three parts:
//!
//! ```text
//!  dst                  16-aligned                                   dst + len
//!   |<---- front ---->|<- chunk 0 ->|<- chunk 1 ->| ... |<- chunk N-1 ->|<- back ->|
//!    bytewise            one 16-byte store per chunk (global_store_dwordx4)  bytewise
//!
//!  units:  0 .. N            the chunks, in order
//!          N .. N + front    the front bytes
//!          N + front ..      the back bytes
//! ```
//!
//! Every chunk is stored with one 16-byte-aligned `global_store_dwordx4`;
//! the bytes before and after the body are written one at a time, so a blit
//! never writes a byte outside `[dst, dst + len)`. A grid-stride loop over
//! the units (see [`crate::grid`]) spreads the work over any 1-D dispatch:
//! chunks first, so the few byte units land on the last iteration.
//!
//! **Fill.** Every pattern size divides 16, so all chunks of one fill hold
//! the same 16 bytes: the pattern repeated, rotated by the front length
//! ([`FillPattern::chunk`]). Each work-item computes that value once.
//!
//! **Copy.** Stores are as for fill. How a chunk's 16 source bytes are
//! loaded depends only on `(src - dst) mod 16` ([`SourceRead`]): one
//! 16-byte-aligned `global_load_dwordx4` when source and destination are
//! equally misaligned; four dword loads (`global_load_dwordx4` at dword
//! alignment) when the source is off by a multiple of 4; otherwise five
//! aligned dwords covering the 16 bytes, funnel-shifted into place
//! ([`funnel`]). The five-dword window reaches up to 3 bytes before and
//! after the bytes the chunk needs. Those bytes may belong to another
//! allocation (the simulator checks every access against the exact
//! allocated ranges; hardware may fault on the next page), so a chunk is in
//! the body only if its whole load window lies in `[src, src + len)`
//! ([`CopyPlan::new`]); the first or last chunk that fails this is copied
//! bytewise with the front or back.
//!
//! What the kernels assume: `dst` holds `len` writable and `src` `len`
//! readable bytes of global memory, and for a copy the two ranges do not
//! overlap (work-items run in no defined order, so an overlapping copy
//! would read bytes another work-item already wrote). The cost: a fill or
//! copy of `len` bytes is about `len / 16` chunk units plus at most 30
//! (fill) or 36 (copy) byte units; launch about `len / 16` work-items, or
//! fewer and let the grid stride.
//!
//! The partition, the pattern and the funnel shift are plain Rust, tested on
//! the host; only the two kernels, `kernels::blit_fill` and
//! `kernels::blit_copy`, are amdgpu-only.

/// Bytes per body chunk: one `global_store_dwordx4`, and the alignment of
/// every chunk's destination.
pub const CHUNK: u64 = 16;

/// The pattern sizes a fill accepts, in bytes: each divides [`CHUNK`].
pub const PATTERN_SIZES: [u32; 5] = [1, 2, 4, 8, 16];

// ---------------------------------------------------------------------------
// Partition of the destination range
// ---------------------------------------------------------------------------

/// A destination range split into front bytes, 16-byte chunks and back
/// bytes (offsets relative to the start of the range).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Bytes `[0, front)`, written one at a time.
    pub front: u64,
    /// Chunks at offsets `front + 16 * i`, each at a 16-byte-aligned
    /// destination address.
    pub chunks: u64,
    /// Bytes `[front + 16 * chunks, len)`, written one at a time.
    pub back: u64,
}

/// One unit of work of a blit: a chunk or a single byte, by its offset in
/// the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// 16 bytes at this offset, 16-byte aligned in the destination.
    Chunk(u64),
    /// One byte at this offset.
    Byte(u64),
}

impl Partition {
    /// The partition of `len` bytes at destination address `dst`: front
    /// bytes up to the first 16-byte boundary, then as many whole chunks as
    /// fit, then the rest.
    pub const fn fill(dst: u64, len: u64) -> Self {
        Self::with_body_at(head(dst), len, 0)
    }

    /// The body starts at offset `start` (when `len` reaches that far) and
    /// every chunk needs `extra` bytes of the range after its own 16.
    const fn with_body_at(start: u64, len: u64, extra: u64) -> Self {
        let front = if start < len { start } else { len };
        // `front + extra` is below 2^6: no overflow.
        let chunks = len.saturating_sub(front + extra) / CHUNK;
        Self {
            front,
            chunks,
            back: len - front - chunks * CHUNK,
        }
    }

    /// Length of the range: every byte is in exactly one unit.
    pub const fn len(&self) -> u64 {
        self.front + self.chunks * CHUNK + self.back
    }

    /// Whether the range is empty.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Offset of the first byte after the body.
    const fn body_end(&self) -> u64 {
        self.front + self.chunks * CHUNK
    }

    /// How many units a grid-stride loop visits.
    pub const fn units(&self) -> u64 {
        self.chunks + self.front + self.back
    }

    /// Unit `u` (below [`Partition::units`]): chunks first, then the front
    /// bytes, then the back bytes.
    #[inline(always)]
    pub const fn unit(&self, u: u64) -> Unit {
        if u < self.chunks {
            return Unit::Chunk(self.front + u * CHUNK);
        }
        let e = u - self.chunks;
        if e < self.front {
            Unit::Byte(e)
        } else {
            Unit::Byte(self.body_end() + (e - self.front))
        }
    }
}

/// Bytes from `address` up to the next 16-byte boundary (0 if aligned).
const fn head(address: u64) -> u64 {
    address.wrapping_neg() % CHUNK
}

// ---------------------------------------------------------------------------
// Fill
// ---------------------------------------------------------------------------

/// A fill pattern, repeated out to 16 bytes (one period of every pattern
/// size), little-endian: byte `k` of the fill is byte `k % 16` of `ring`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FillPattern {
    ring: [u64; 2],
}

impl FillPattern {
    /// The pattern of `size` bytes taken little-endian from `lo`, then
    /// `hi`; bytes past `size` are ignored. `None` unless `size` is one of
    /// [`PATTERN_SIZES`].
    pub const fn new(lo: u64, hi: u64, size: u32) -> Option<Self> {
        let ring = match size {
            16 => [lo, hi],
            8 => [lo, lo],
            1 | 2 | 4 => {
                let mut bits = 8 * size;
                let mut word = lo & ((1 << bits) - 1);
                while bits < 64 {
                    word |= word << bits;
                    bits *= 2;
                }
                [word, word]
            }
            _ => return None,
        };
        Some(Self { ring })
    }

    /// Byte `offset` of the fill.
    #[inline(always)]
    pub const fn byte(&self, offset: u64) -> u8 {
        let k = offset % CHUNK;
        // A select, not `ring[k / 8]`: a dynamically indexed array would
        // be promoted to LDS (AMDGPUPromoteAlloca).
        let word = if k < 8 { self.ring[0] } else { self.ring[1] };
        (word >> (8 * (k % 8))) as u8
    }

    /// Bytes `offset .. offset + 16` of the fill, as four little-endian
    /// dwords: the ring rotated right by `offset % 16` bytes.
    #[inline(always)]
    pub const fn chunk(&self, offset: u64) -> [u32; 4] {
        let k = offset % CHUNK;
        let (a, b) = if k < 8 {
            (self.ring[0], self.ring[1])
        } else {
            (self.ring[1], self.ring[0])
        };
        let bits = 8 * (k % 8) as u32;
        // `x << 1 << (63 - bits)` is `x << (64 - bits)`, and 0 for
        // `bits == 0`, where a shift by 64 would overflow.
        let lo = (a >> bits) | (b << 1 << (63 - bits));
        let hi = (b >> bits) | (a << 1 << (63 - bits));
        [lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32]
    }
}

// ---------------------------------------------------------------------------
// Copy
// ---------------------------------------------------------------------------

/// How a copy's chunks load their 16 source bytes, fixed for the whole copy
/// by `(src - dst) mod 16` (every chunk's destination is 16-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceRead {
    /// The source is 16-byte aligned too: one `global_load_dwordx4`.
    Aligned,
    /// The source is dword aligned: four dwords (one `global_load_dwordx4`
    /// at dword alignment).
    Dwords,
    /// The source is `shift` (1..=3) bytes past a dword boundary: the five
    /// aligned dwords from `shift` bytes before the chunk's source,
    /// funnel-shifted ([`funnel`]).
    Funnel { shift: u32 },
}

impl SourceRead {
    /// The read for a copy whose source is `(src - dst) mod 16` bytes past
    /// a 16-byte boundary wherever the destination is on one.
    pub const fn for_relative(src: u64, dst: u64) -> Self {
        let relative = src.wrapping_sub(dst) % CHUNK;
        if relative == 0 {
            Self::Aligned
        } else if relative % 4 == 0 {
            Self::Dwords
        } else {
            Self::Funnel {
                shift: (relative % 4) as u32,
            }
        }
    }

    /// Bytes the loads start before a chunk's first source byte.
    pub const fn lead(self) -> u64 {
        match self {
            Self::Funnel { shift } => shift as u64,
            Self::Aligned | Self::Dwords => 0,
        }
    }

    /// Bytes the loads read per chunk, from `lead` bytes before its source.
    pub const fn window(self) -> u64 {
        match self {
            Self::Funnel { .. } => CHUNK + 4,
            Self::Aligned | Self::Dwords => CHUNK,
        }
    }

    /// Alignment of the first byte the loads read.
    pub const fn alignment(self) -> u64 {
        match self {
            Self::Aligned => CHUNK,
            Self::Dwords | Self::Funnel { .. } => 4,
        }
    }
}

/// A copy: its destination partition, and how chunks read the source.
///
/// Invariant (what the kernel's loads rely on): for every chunk at offset
/// `o`, the `read.window()` bytes from `src + o - read.lead()` lie inside
/// `[src, src + len)` and start at a multiple of `read.alignment()`, and
/// `dst + o` is 16-byte aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    pub partition: Partition,
    pub read: SourceRead,
}

impl CopyPlan {
    /// The plan for copying `len` bytes from `src` to `dst`.
    pub const fn new(dst: u64, src: u64, len: u64) -> Self {
        let read = SourceRead::for_relative(src, dst);
        let mut start = head(dst);
        if start < read.lead() {
            // The first chunk's window would start before `src`.
            start += CHUNK;
        }
        let extra = read.window() - read.lead() - CHUNK;
        Self {
            partition: Partition::with_body_at(start, len, extra),
            read,
        }
    }
}

/// The 16 bytes that start `shift` (1..=3) bytes into the five
/// little-endian dwords `w`: each output dword is the 64-bit pair
/// `w[j + 1]:w[j]` shifted right by `8 * shift` (a funnel shift, what
/// `v_alignbit_b32` computes).
#[inline(always)]
pub const fn funnel(w: [u32; 5], shift: u32) -> [u32; 4] {
    let mut out = [0; 4];
    let mut j = 0;
    while j < 4 {
        let pair = ((w[j + 1] as u64) << 32) | w[j] as u64;
        out[j] = (pair >> (8 * shift)) as u32;
        j += 1;
    }
    out
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// Base addresses the misalignments are added to: different 16-byte
    /// boundaries, one near the top of a page, one high in the address
    /// space.
    const BASES: [u64; 3] = [0x1_0000, 0x2_0ff0, 0x7f00_0000_1000];

    /// Every unit's bytes, each once, in unit order.
    fn covered(part: &Partition) -> Vec<u32> {
        let mut hits = vec![0u32; part.len() as usize];
        for u in 0..part.units() {
            match part.unit(u) {
                Unit::Chunk(o) => (o..o + CHUNK).for_each(|k| hits[k as usize] += 1),
                Unit::Byte(o) => hits[o as usize] += 1,
            }
        }
        hits
    }

    #[test]
    fn fill_units_cover_the_range_once_with_aligned_chunks() {
        for base in BASES {
            for mis in 0..16 {
                let dst = base + mis;
                for len in 0..80 {
                    let part = Partition::fill(dst, len);
                    assert_eq!(part.len(), len);
                    assert!(
                        covered(&part).iter().all(|&h| h == 1),
                        "dst {dst:#x} len {len}: {part:?}"
                    );
                    for u in 0..part.chunks {
                        let Unit::Chunk(o) = part.unit(u) else {
                            panic!("unit {u} of {part:?} is not a chunk");
                        };
                        assert_eq!((dst + o) % CHUNK, 0, "dst {dst:#x} len {len}");
                    }
                    // Bytewise only up to the first boundary and after the
                    // last: the body is as long as it can be.
                    assert!(part.front < 16 && part.back < 16, "{part:?}");
                    assert_eq!(part.front, len.min((16 - mis) % 16), "{part:?}");
                }
            }
        }
    }

    #[test]
    fn copy_chunks_read_only_inside_the_source() {
        for (dst_base, src_base) in [(BASES[0], BASES[1]), (BASES[2], BASES[0])] {
            for dst_mis in 0..16 {
                for src_mis in 0..16 {
                    let (dst, src) = (dst_base + dst_mis, src_base + src_mis);
                    for len in 0..80 {
                        let plan = CopyPlan::new(dst, src, len);
                        let part = plan.partition;
                        let what = std::format!("dst {dst:#x} src {src:#x} len {len}: {plan:?}");
                        assert_eq!(part.len(), len, "{what}");
                        assert!(covered(&part).iter().all(|&h| h == 1), "{what}");
                        let read = plan.read;
                        for u in 0..part.chunks {
                            let Unit::Chunk(o) = part.unit(u) else {
                                panic!("{what}: unit {u} is not a chunk");
                            };
                            assert_eq!((dst + o) % CHUNK, 0, "{what}");
                            let start = src + o - read.lead();
                            let end = start + read.window();
                            assert!(start >= src && end <= src + len, "{what}: chunk at {o}");
                            assert_eq!(start % read.alignment(), 0, "{what}: chunk at {o}");
                            // The window holds the chunk's own 16 bytes.
                            assert!(start <= src + o && src + o + CHUNK <= end, "{what}");
                        }
                        // Beyond the alignment edges, at most the one chunk
                        // whose window crosses an end of the source is
                        // given up at each end.
                        assert!(part.front <= 18 && part.back <= 18, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn source_read_follows_the_relative_alignment() {
        for dst in 0..16u64 {
            for src in 0..16u64 {
                let read = SourceRead::for_relative(0x100 + src, 0x300 + dst);
                let rel = (16 + src - dst) % 16;
                let want = match rel {
                    0 => SourceRead::Aligned,
                    4 | 8 | 12 => SourceRead::Dwords,
                    r => SourceRead::Funnel {
                        shift: (r % 4) as u32,
                    },
                };
                assert_eq!(read, want, "dst mis {dst}, src mis {src}");
            }
        }
    }

    /// The 16 pattern bytes a (lo, hi) pair holds, little-endian.
    fn pattern_bytes(lo: u64, hi: u64) -> Vec<u8> {
        lo.to_le_bytes()
            .into_iter()
            .chain(hi.to_le_bytes())
            .collect()
    }

    #[test]
    fn every_pattern_size_repeats_its_bytes() {
        let lo = 0x0807_0605_0403_0201u64;
        let hi = 0x100f_0e0d_0c0b_0a09u64;
        let bytes = pattern_bytes(lo, hi);
        for size in PATTERN_SIZES {
            let p = FillPattern::new(lo, hi, size).expect("a valid size");
            for offset in 0..64u64 {
                let want: Vec<u8> = (offset..offset + 16)
                    .map(|k| bytes[(k % u64::from(size)) as usize])
                    .collect();
                assert_eq!(p.byte(offset), want[0], "size {size} offset {offset}");
                let got: Vec<u8> = p
                    .chunk(offset)
                    .iter()
                    .flat_map(|d| d.to_le_bytes())
                    .collect();
                assert_eq!(got, want, "size {size} offset {offset}");
            }
        }
    }

    #[test]
    fn pattern_sizes_that_do_not_divide_a_chunk_are_refused() {
        for size in [0, 3, 5, 6, 7, 9, 12, 15, 17, 32, u32::MAX] {
            assert_eq!(FillPattern::new(1, 2, size), None, "size {size}");
        }
    }

    #[test]
    fn funnel_picks_the_bytes_at_its_shift() {
        let bytes: Vec<u8> = (0..20).map(|i| 0x30 + i).collect();
        let w: [u32; 5] = core::array::from_fn(|j| {
            u32::from_le_bytes(bytes[4 * j..4 * j + 4].try_into().unwrap())
        });
        for shift in 1..=3u32 {
            let got: Vec<u8> = funnel(w, shift)
                .iter()
                .flat_map(|d| d.to_le_bytes())
                .collect();
            assert_eq!(
                got,
                bytes[shift as usize..shift as usize + 16],
                "shift {shift}"
            );
        }
    }

    /// A source buffer that refuses reads outside `[src, src + len)`, as the
    /// simulator does.
    struct Source<'a> {
        src: u64,
        bytes: &'a [u8],
    }

    impl Source<'_> {
        fn byte(&self, address: u64) -> u8 {
            let i = address
                .checked_sub(self.src)
                .filter(|&i| i < self.bytes.len() as u64)
                .unwrap_or_else(|| panic!("read at {address:#x} outside the source"));
            self.bytes[i as usize]
        }

        fn dword(&self, address: u64) -> u32 {
            u32::from_le_bytes(core::array::from_fn(|i| self.byte(address + i as u64)))
        }
    }

    /// The copy kernel's loads and stores, on the host.
    fn emulate_copy(dst: u64, src: &Source<'_>, len: u64) -> Vec<u8> {
        let plan = CopyPlan::new(dst, src.src, len);
        let mut out = vec![0u8; len as usize];
        for u in 0..plan.partition.units() {
            match plan.partition.unit(u) {
                Unit::Chunk(o) => {
                    let at = src.src + o;
                    let value = match plan.read {
                        SourceRead::Aligned | SourceRead::Dwords => {
                            core::array::from_fn(|j| src.dword(at + 4 * j as u64))
                        }
                        SourceRead::Funnel { shift } => funnel(
                            core::array::from_fn(|j| {
                                src.dword(at - u64::from(shift) + 4 * j as u64)
                            }),
                            shift,
                        ),
                    };
                    let bytes = value.iter().flat_map(|d| d.to_le_bytes());
                    for (k, b) in bytes.enumerate() {
                        out[o as usize + k] = b;
                    }
                }
                Unit::Byte(o) => out[o as usize] = src.byte(src.src + o),
            }
        }
        out
    }

    #[test]
    fn emulated_copy_matches_the_source_at_every_alignment() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for dst_mis in 0..16 {
            for src_mis in 0..16 {
                for len in (0..80).chain([127, 128, 129, 200]) {
                    let source = Source {
                        src: 0x4000 + src_mis,
                        bytes: &bytes[..len as usize],
                    };
                    let got = emulate_copy(0x9000 + dst_mis, &source, len);
                    assert_eq!(
                        got, source.bytes,
                        "dst mis {dst_mis} src mis {src_mis} len {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn emulated_fill_matches_the_pattern_at_every_alignment() {
        let (lo, hi) = (0xf1e2_d3c4_b5a6_9788u64, 0x1122_3344_5566_7788u64);
        let bytes = pattern_bytes(lo, hi);
        for size in PATTERN_SIZES {
            let pattern = FillPattern::new(lo, hi, size).expect("a valid size");
            for mis in 0..16 {
                for len in [0u64, 1, 15, 16, 17, 31, 33, 64, 79] {
                    let part = Partition::fill(0x8000 + mis, len);
                    let chunk = pattern.chunk(part.front);
                    let mut out = vec![0u8; len as usize];
                    for u in 0..part.units() {
                        match part.unit(u) {
                            Unit::Chunk(o) => {
                                let b = chunk.iter().flat_map(|d| d.to_le_bytes());
                                for (k, b) in b.enumerate() {
                                    out[o as usize + k] = b;
                                }
                            }
                            Unit::Byte(o) => out[o as usize] = pattern.byte(o),
                        }
                    }
                    let want: Vec<u8> = (0..len)
                        .map(|k| bytes[(k % u64::from(size)) as usize])
                        .collect();
                    assert_eq!(out, want, "size {size} mis {mis} len {len}");
                }
            }
        }
    }
}
