//! DS (local data share) instructions: LDS loads, stores, atomics and the
//! cross-lane ops that use the LDS crossbar without touching LDS.
//!
//! CDNA3 ISA, "Data Share Operations" and the DS opcode descriptions (the
//! CDNA2 text is the same for every op gfx90a has):
//! - the address of a lane is its 32-bit ADDR VGPR plus the unsigned 16-bit
//!   OFFSET (`imm`); `read2`/`write2` take two 8-bit offsets in units of the
//!   element size, times 64 for the `st64` forms;
//! - DATA0/DATA1 are VGPRs, or AGPRs when ACC is set (so is VDST);
//! - `_rtn` atomics return the value before the operation; the others
//!   write no register. DS `cmpst` compares with DATA0 and stores DATA1
//!   (`tmp == DATA ? DATA2 : tmp`), the reverse of the FLAT/MUBUF
//!   `cmpswap` data order.
//!
//! Bounds. On GFX9 M0 no longer bounds DS accesses (LLVM's
//! `ldsRequiresM0Init` is false from GFX9 on, so compilers never set it
//! for DS; the CDNA2/CDNA3 ISA text that M0 clamps is carried over from
//! older chips), so M0 is not read here. The bound is the workgroup's LDS
//! allocation: its group segment rounded up to the LDS granule (CDNA3 ISA
//! §3.6.5 "LDS Allocation and Clamping": blocks of 512 bytes;
//! `aqueduct_abi::gfx` `lds_granule`). CDNA3 ISA §3.6.1 "Out-of-Range
//! behavior": an LDS address at or past it reads zero and a write there
//! is discarded, and AMD's f64 GEMM kernels rely on it (they zero
//! accumulators with `ds_read_b32` from 0xF00000). The documents do not
//! say how a multi-dword access straddling the bound splits; here, as
//! buffer dwordx2-4 accesses are (CDNA3 ISA §9.1.5.1), each dword of a
//! `b64`/`b96`/`b128` access and each element of `read2`/`write2` is in
//! or out on its own, and byte, short and atomic accesses are all or
//! nothing (an atomic out of range changes nothing and returns 0).
//!
//! In strict mode (`crate::memory`) the allocation is the group segment's
//! exact size and any access past it stops the wave with a memory fault
//! in [`Space::Lds`]; every lane's address is checked before any lane
//! touches LDS, so a faulting instruction leaves LDS and registers
//! unchanged.
//!
//! Plain loads and stores do not check alignment: GFX9 performs unaligned
//! DS accesses when SH_MEM_CONFIG selects the unaligned mode, which the
//! ROCm kernel driver does. Atomics need natural alignment, as FLAT's do.
//!
//! Atomics run lane by lane in lane order, which is one of the orders the
//! hardware may choose and makes results deterministic.
//!
//! Not implemented (no executor, so they fault as unimplemented): GDS
//! (no GDS in the model), `ds_gws_*`, `ds_append`/`ds_consume`,
//! `ds_read_addtid_b32`/`ds_write_addtid_b32`, `ds_condxchg32_rtn_b64`
//! and the FFT mode of `ds_swizzle_b32`.

use crate::decode::inst::flag;
use crate::decode::{Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::flat::{Put, Rmw, d16, d16_keeps_other_half, extend};
use crate::fault::{Fault, Space};
use crate::lanes::{LANES, Lanes, for_lanes};
use crate::wave::Wave;

type R = Result<(), Fault>;

/// `st64` forms scale both offsets by this many elements.
const ST64: u64 = 64;

/// `ds_swizzle_b32` offset modes (CDNA3 ISA, DS_SWIZZLE_B32): at or above
/// `SWIZZLE_FFT` FFT decomposition, at or above `SWIZZLE_ROTATE` rotation,
/// with bit 15 alone quad permutation, else bit-masks over 32 lanes.
const SWIZZLE_FFT: u32 = 0xE000;
const SWIZZLE_ROTATE: u32 = 0xC000;
const SWIZZLE_QUAD: u32 = 0x8000;

/// GDS instructions address a memory the model does not have.
fn no_gds(i: &Inst) -> R {
    if i.flags & flag::GDS != 0 {
        return Err(Fault::Unimplemented {
            mnemonic: i.mnemonic,
        });
    }
    Ok(())
}

/// The ADDR VGPR's lanes.
fn address_lanes(w: &Wave, i: &Inst) -> Result<Lanes, Fault> {
    address_ref(w, i).copied()
}

/// The ADDR VGPR itself, for what writes no register (no copy of its
/// lanes).
fn address_ref<'w>(w: &'w Wave, i: &Inst) -> Result<&'w Lanes, Fault> {
    match i.src[0] {
        Src::Vgpr(r) => w.vreg(r, false),
        _ => Err(Fault::Operand { code: 0 }),
    }
}

/// The register number of DATA0 (`n` = 1) or DATA1 (`n` = 2).
fn data_reg(i: &Inst, n: usize) -> Result<u16, Fault> {
    match i.src[n] {
        Src::Vgpr(r) | Src::Agpr(r) => Ok(r),
        _ => Err(Fault::Operand { code: 0 }),
    }
}

/// The register at `first` (with the next one when `wide`) as u64 lanes.
fn read_values(w: &Wave, first: u16, acc: bool, wide: bool) -> Result<[u64; LANES], Fault> {
    let lo = w.vreg(first, acc)?;
    if !wide {
        return Ok(std::array::from_fn(|l| u64::from(lo[l])));
    }
    let hi = w.vreg(first + 1, acc)?;
    Ok(std::array::from_fn(|l| {
        u64::from(lo[l]) | u64::from(hi[l]) << 32
    }))
}

/// Where `size` bytes at `address` lie in the workgroup's LDS, as a slice
/// index, or None when they are out of range (reads give 0, writes are
/// dropped); out of range is a fault in strict mode.
#[inline(always)]
fn check(
    lds: &[u8],
    strict: bool,
    address: u64,
    size: u64,
    write: bool,
) -> Result<Option<usize>, Fault> {
    if address + size <= lds.len() as u64 {
        return Ok(Some(address as usize));
    }
    if !strict {
        return Ok(None);
    }
    Err(Fault::Memory {
        space: Space::Lds,
        address,
        size,
        write,
    })
}

/// [`load`] of a checked place; 0 out of range.
#[inline(always)]
fn load_at(lds: &[u8], at: Option<usize>, size: usize) -> u64 {
    at.map_or(0, |at| load(lds, at, size))
}

/// [`store`] to a checked place; nothing out of range.
#[inline(always)]
fn store_at(lds: &mut [u8], at: Option<usize>, size: usize, v: u64) {
    if let Some(at) = at {
        store(lds, at, size, v);
    }
}

/// Little-endian `size` (≤ 8) bytes at a checked index.
#[inline(always)]
fn load(lds: &[u8], at: usize, size: usize) -> u64 {
    match size {
        1 => u64::from(lds[at]),
        2 => {
            // One bounds check for both bytes.
            let b = &lds[at..at + 2];
            u64::from(u16::from_le_bytes([b[0], b[1]]))
        }
        4 => u64::from(dword(lds, at)),
        _ => lds[at..at + size]
            .iter()
            .rev()
            .fold(0, |v, &b| v << 8 | u64::from(b)),
    }
}

#[inline(always)]
fn store(lds: &mut [u8], at: usize, size: usize, v: u64) {
    lds[at..at + size].copy_from_slice(&v.to_le_bytes()[..size]);
}

/// Whether the `bytes` at the address of every lane in `mask` lie inside
/// LDS: whether the highest address's do (a maximum over all 64 lanes
/// vectorises).
#[inline(always)]
fn all_in_range(lds: &[u8], addr: &Lanes, i: &Inst, mask: u64, bytes: u32) -> bool {
    let highest = if mask & mask.wrapping_add(1) == 0 {
        // Lanes 0..n (a whole wave64 or wave32): a maximum that vectorises.
        let n = 64 - mask.leading_zeros() as usize;
        addr[..n].iter().fold(0, |m, &a| m.max(a))
    } else {
        let mut m = 0;
        for_lanes!(mask, |l| {
            m = m.max(addr[l]);
        });
        m
    };
    u64::from(highest) + u64::from(i.imm as u32 & 0xFFFF) + u64::from(bytes) <= lds.len() as u64
}

/// A lane's byte address: ADDR + the instruction's 16-bit offset, modulo
/// 2^32. LLVM folds an offset into DS instructions whatever the sign of
/// the base from CI on (`AMDGPUDAGToDAGISel::isDSOffsetLegal` refuses only
/// Southern Islands, where "a negative base value and an offset don't
/// seem to work"), so its loops address LDS byte 0 as ADDR 0xFFFFFFC0
/// with OFFSET 64 (tests/ir/gfx950_lds_probe.ll compiles to that).
fn lane_address(addr: &Lanes, i: &Inst, l: usize) -> u64 {
    u64::from(addr[l].wrapping_add(i.imm as u32 & 0xFFFF))
}

// ---------------------------------------------------------------------
// Loads and stores
// ---------------------------------------------------------------------

/// The registers from `first` of the VGPRs or (`acc`) AGPRs, `n` of them,
/// faulting on the first that does not exist.
pub(super) fn regs_mut(
    w: &mut Wave,
    first: u16,
    n: usize,
    acc: bool,
) -> Result<&mut [Lanes], Fault> {
    w.vreg(first + n as u16 - 1, acc)?;
    let file = if acc { &mut w.a } else { &mut w.v };
    Ok(&mut file[usize::from(first)..][..n])
}

/// The dword at a checked index.
#[inline(always)]
fn dword(lds: &[u8], at: usize) -> u32 {
    let b = &lds[at..at + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Inlined into each opcode's executor, where `put` is a constant: one
/// loop per form, which writes the destination registers in place.
#[inline(always)]
fn read(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, put: Put) -> R {
    no_gds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let (bytes, dwords) = match put {
        Put::Dwords(n) => (4 * n, n as usize),
        Put::Extend { size, .. } | Put::D16 { size, .. } => (size, 1),
    };
    let strict = ctx.mem.is_strict();
    let lds = &*ctx.lds;
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    if strict {
        // Every lane checked before any register is written.
        for l in lanes.clone() {
            check(
                lds,
                strict,
                lane_address(&addr, i, l),
                u64::from(bytes),
                false,
            )?;
        }
    }
    let dst = regs_mut(w, i.vdst, dwords, acc)?;
    let keep = d16_keeps_other_half(ctx.target);
    if all_in_range(lds, &addr, i, exec, bytes) {
        // The common case: every lane's bytes inside LDS, read directly.
        let at = |l| lane_address(&addr, i, l) as usize;
        match put {
            Put::Dwords(_) => for_lanes!(exec, |l| {
                let (bytes, _) = lds[at(l)..][..4 * dwords].as_chunks::<4>();
                for (reg, &d) in dst.iter_mut().zip(bytes) {
                    reg[l] = u32::from_le_bytes(d);
                }
            }),
            Put::Extend { size, signed } => for_lanes!(exec, |l| {
                dst[0][l] = extend(load(lds, at(l), size as usize) as u32, size, signed);
            }),
            Put::D16 { size, signed, hi } => for_lanes!(exec, |l| {
                let v = extend(load(lds, at(l), size as usize) as u32, size, signed);
                dst[0][l] = d16(keep, dst[0][l], v, hi);
            }),
        }
        return Ok(());
    }
    // Past the strict pass above, `check` no longer fails.
    match put {
        Put::Dwords(n) => {
            let n = n as usize;
            for l in lanes {
                let a = lane_address(&addr, i, l);
                if let Some(at) = check(lds, strict, a, u64::from(bytes), false)? {
                    // All in range: the common case, dwords read directly.
                    for (k, reg) in dst.iter_mut().enumerate().take(n) {
                        reg[l] = dword(lds, at + 4 * k);
                    }
                    continue;
                }
                for (k, reg) in dst.iter_mut().enumerate().take(n) {
                    let at = check(lds, strict, a + 4 * k as u64, 4, false)?;
                    reg[l] = load_at(lds, at, 4) as u32;
                }
            }
        }
        Put::Extend { size, signed } => {
            for l in lanes {
                let a = lane_address(&addr, i, l);
                let at = check(lds, strict, a, u64::from(size), false)?;
                dst[0][l] = extend(load_at(lds, at, size as usize) as u32, size, signed);
            }
        }
        Put::D16 { size, signed, hi } => {
            for l in lanes {
                let a = lane_address(&addr, i, l);
                let at = check(lds, strict, a, u64::from(size), false)?;
                let v = extend(load_at(lds, at, size as usize) as u32, size, signed);
                dst[0][l] = d16(keep, dst[0][l], v, hi);
            }
        }
    }
    Ok(())
}

/// How a write takes its data from DATA0: `n` dwords, or `size` bytes of
/// the low (or, with `hi`, the high) half.
#[derive(Clone, Copy)]
enum Take {
    Dwords(u32),
    Part { size: u32, hi: bool },
}

/// Inlined into each opcode's executor, where `take` is a constant.
#[inline(always)]
fn write(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, take: Take) -> R {
    no_gds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_ref(w, i)?;
    let data = data_reg(i, 1)?;
    let (bytes, dwords) = match take {
        Take::Dwords(n) => (4 * n, n as usize),
        Take::Part { size, .. } => (size, 1),
    };
    w.vreg(data + dwords as u16 - 1, acc)?;
    let file = if acc { &w.a } else { &w.v };
    let regs = &file[usize::from(data)..][..dwords];
    let strict = ctx.mem.is_strict();
    let lds = &mut *ctx.lds;
    // The lanes in EXEC, walked more than once without collecting them.
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    if all_in_range(lds, addr, i, exec, bytes) {
        // The common case: every lane's bytes inside LDS, written directly.
        let at = |l| lane_address(addr, i, l) as usize;
        match take {
            Take::Dwords(_) => for_lanes!(exec, |l| {
                let (bytes, _) = lds[at(l)..][..4 * dwords].as_chunks_mut::<4>();
                for (reg, d) in regs.iter().zip(bytes) {
                    *d = reg[l].to_le_bytes();
                }
            }),
            Take::Part { size, hi } => for_lanes!(exec, |l| {
                let v = if hi { regs[0][l] >> 16 } else { regs[0][l] };
                store(lds, at(l), size as usize, u64::from(v));
            }),
        }
        return Ok(());
    }
    if strict {
        // Every lane checked before any writes.
        for l in lanes.clone() {
            let a = lane_address(addr, i, l);
            check(lds, strict, a, u64::from(bytes), true)?;
        }
    }
    match take {
        Take::Dwords(_) => {
            for l in lanes {
                let a = lane_address(addr, i, l);
                if let Some(at) = check(lds, strict, a, u64::from(bytes), true)? {
                    // All in range: the common case, dwords written directly.
                    for (k, reg) in regs.iter().enumerate() {
                        lds[at + 4 * k..at + 4 * k + 4].copy_from_slice(&reg[l].to_le_bytes());
                    }
                    continue;
                }
                for (k, reg) in regs.iter().enumerate() {
                    let at = check(lds, strict, a + 4 * k as u64, 4, true)?;
                    store_at(lds, at, 4, u64::from(reg[l]));
                }
            }
        }
        Take::Part { size, hi } => {
            for l in lanes {
                let a = lane_address(addr, i, l);
                let v = if hi { regs[0][l] >> 16 } else { regs[0][l] };
                let at = check(lds, strict, a, u64::from(size), true)?;
                store_at(lds, at, size as usize, u64::from(v));
            }
        }
    }
    Ok(())
}

/// The two addresses of `read2`/`write2`/`wrxchg2`: OFFSET0 and OFFSET1
/// in elements of `elem` bytes (times 64 for `st64`).
fn pair_addresses(addr: &Lanes, i: &Inst, l: usize, elem: u64, st64: bool) -> [u64; 2] {
    let scale = elem * if st64 { ST64 } else { 1 };
    let o0 = u64::from(i.imm as u32 & 0xFF);
    let o1 = u64::from(i.imm as u32 >> 8 & 0xFF);
    // Modulo 2^32, as [`lane_address`].
    [o0, o1].map(|o| u64::from(addr[l].wrapping_add((o * scale) as u32)))
}

fn read2(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, elem: u64, st64: bool) -> R {
    no_gds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let per = (elem / 4) as usize;
    let strict = ctx.mem.is_strict();
    // At most four dwords (`ds_read2_b64`), on the stack: no allocation
    // per instruction, and in-range dwords read directly.
    let mut out = [[0u32; LANES]; 4];
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        for (e, a) in pair_addresses(&addr, i, l, elem, st64)
            .into_iter()
            .enumerate()
        {
            let Some(at) = check(ctx.lds, strict, a, elem, false)? else {
                continue;
            };
            for k in 0..per {
                let d = &ctx.lds[at + 4 * k..at + 4 * k + 4];
                out[e * per + k][l] = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            }
        }
    }
    w.write_regs(i.vdst, acc, &out[..2 * per], exec)
}

fn write2(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, elem: u64, st64: bool) -> R {
    no_gds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let wide = elem == 8;
    let d0 = read_values(w, data_reg(i, 1)?, acc, wide)?;
    let d1 = read_values(w, data_reg(i, 2)?, acc, wide)?;
    let strict = ctx.mem.is_strict();
    // The lanes in EXEC, walked more than once without collecting them.
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    let mut at = [[None; 2]; LANES];
    for l in lanes.clone() {
        let [a0, a1] = pair_addresses(&addr, i, l, elem, st64);
        at[l] = [
            check(ctx.lds, strict, a0, elem, true)?,
            check(ctx.lds, strict, a1, elem, true)?,
        ];
    }
    for l in lanes.clone() {
        store_at(ctx.lds, at[l][0], elem as usize, d0[l]);
        store_at(ctx.lds, at[l][1], elem as usize, d1[l]);
    }
    Ok(())
}

// ---------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------

/// DS atomic operations: FLAT's where the semantics agree, and the ones
/// only DS has.
#[derive(Clone, Copy)]
enum Op {
    Rmw(Rmw),
    /// `DATA - MEM`.
    Rsub,
    /// `(MEM & ~DATA) | DATA2`.
    Mskor,
    /// `MEM == DATA ? DATA2 : MEM`, bitwise.
    CmpSt,
    /// The same with a float compare (-0 == +0, NaN never equal).
    CmpStF,
    /// `DATA < MEM ? DATA : MEM` as floats (the ISA's pseudocode: a NaN in
    /// DATA keeps MEM).
    MinF,
    /// `DATA > MEM ? DATA : MEM` as floats.
    MaxF,
    /// `MEM >= DATA ? MEM - DATA : MEM + DATA2` (`ds_wrap_rtn_b32`).
    Wrap,
}

impl Op {
    /// Whether the op reads DATA1.
    fn two_data(self) -> bool {
        matches!(self, Self::Mskor | Self::CmpSt | Self::CmpStF | Self::Wrap)
    }

    fn apply(self, old: u64, d0: u64, d1: u64, wide: bool) -> u64 {
        let mask = if wide { u64::MAX } else { 0xFFFF_FFFF };
        let (lt, gt, eq) = if wide {
            let (d, m) = (f64::from_bits(d0), f64::from_bits(old));
            (d < m, d > m, d == m)
        } else {
            let (d, m) = (f32::from_bits(d0 as u32), f32::from_bits(old as u32));
            (d < m, d > m, d == m)
        };
        (match self {
            Self::Rmw(op) => op.apply(old, d0, d1, wide),
            Self::Rsub => d0.wrapping_sub(old),
            Self::Mskor => (old & !d0) | d1,
            Self::CmpSt => {
                if old == d0 {
                    d1
                } else {
                    old
                }
            }
            Self::CmpStF => {
                if eq {
                    d1
                } else {
                    old
                }
            }
            Self::MinF => {
                if lt {
                    d0
                } else {
                    old
                }
            }
            Self::MaxF => {
                if gt {
                    d0
                } else {
                    old
                }
            }
            Self::Wrap => {
                if old >= d0 {
                    old - d0
                } else {
                    old.wrapping_add(d1)
                }
            }
        }) & mask
    }
}

fn atomic(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, op: Op, wide: bool, rtn: bool) -> R {
    no_gds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let size: u64 = if wide { 8 } else { 4 };
    let d0 = read_values(w, data_reg(i, 1)?, acc, wide)?;
    let d1 = if op.two_data() {
        read_values(w, data_reg(i, 2)?, acc, wide)?
    } else {
        [0; LANES]
    };
    let strict = ctx.mem.is_strict();
    // The lanes in EXEC, walked more than once without collecting them.
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    let mut at = [None; LANES];
    for l in lanes.clone() {
        let a = lane_address(&addr, i, l);
        at[l] = check(ctx.lds, strict, a, size, true)?;
        if !a.is_multiple_of(size) {
            return Err(Fault::Misaligned { address: a, size });
        }
    }
    // Out of range: nothing changes and the old value reads as 0.
    let mut old = [0u64; LANES];
    for l in lanes.clone() {
        if let Some(p) = at[l] {
            old[l] = load(ctx.lds, p, size as usize);
            store(
                ctx.lds,
                p,
                size as usize,
                op.apply(old[l], d0[l], d1[l], wide),
            );
        }
    }
    if !rtn {
        return Ok(());
    }
    let out = split(&old, wide);
    w.write_regs(i.vdst, acc, &out, exec)
}

/// u64 lanes as one or two registers' worth of dword lanes.
fn split(v: &[u64; LANES], wide: bool) -> Vec<Lanes> {
    let lo: Lanes = std::array::from_fn(|l| v[l] as u32);
    if !wide {
        return vec![lo];
    }
    vec![lo, std::array::from_fn(|l| (v[l] >> 32) as u32)]
}

/// `ds_wrxchg2[st64]_rtn`: two exchanges, DATA0 at OFFSET0 and DATA1 at
/// OFFSET1; the old values come back in VDST order.
fn wrxchg2(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, wide: bool, st64: bool) -> R {
    no_gds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let size: u64 = if wide { 8 } else { 4 };
    let d = [
        read_values(w, data_reg(i, 1)?, acc, wide)?,
        read_values(w, data_reg(i, 2)?, acc, wide)?,
    ];
    let strict = ctx.mem.is_strict();
    // The lanes in EXEC, walked more than once without collecting them.
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    let mut at = [[None; 2]; LANES];
    for l in lanes.clone() {
        for (e, a) in pair_addresses(&addr, i, l, size, st64)
            .into_iter()
            .enumerate()
        {
            at[l][e] = check(ctx.lds, strict, a, size, true)?;
            if !a.is_multiple_of(size) {
                return Err(Fault::Misaligned { address: a, size });
            }
        }
    }
    let mut old = [[0u64; LANES]; 2];
    for l in lanes.clone() {
        for e in 0..2 {
            old[e][l] = load_at(ctx.lds, at[l][e], size as usize);
            store_at(ctx.lds, at[l][e], size as usize, d[e][l]);
        }
    }
    let mut out = split(&old[0], wide);
    out.extend(split(&old[1], wide));
    w.write_regs(i.vdst, acc, &out, exec)
}

// ---------------------------------------------------------------------
// Cross-lane ops (no LDS access)
// ---------------------------------------------------------------------

/// `ds_swizzle_b32`: lane `i` takes the ADDR VGPR of a lane chosen by the
/// offset's mode; a source lane outside EXEC gives 0.
fn swizzle(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let exec = w.exec();
    let acc = i.acc();
    // The swizzled operand is the ADDR field (`ds_swizzle_b32 vdst, vaddr`).
    let src = address_lanes(w, i)?;
    let offset = i.imm as u32 & 0xFFFF;
    let pick = |j: usize| if exec >> j & 1 != 0 { src[j] } else { 0 };
    let out: Lanes = if offset >= SWIZZLE_FFT {
        return Err(Fault::Unimplemented {
            mnemonic: "ds_swizzle_b32 (FFT mode)",
        });
    } else if offset >= SWIZZLE_ROTATE {
        // Rotation within each half-wave: offset[9:5] lanes, towards lower
        // lanes unless offset[10]; lanes under offset[4:0] stay fixed.
        let mask = (offset & 0x1F) as usize;
        let amount = (offset >> 5 & 0x1F) as usize;
        let rotate = if offset & (1 << 10) != 0 {
            32 - amount
        } else {
            amount
        };
        std::array::from_fn(|l| {
            let j = ((l & mask) | ((l + rotate) & !mask)) & 0x1F;
            pick(j | (l & 0x20))
        })
    } else if offset & SWIZZLE_QUAD != 0 {
        // Full permutation within each group of four lanes.
        std::array::from_fn(|l| {
            let sel = (offset >> (2 * (l & 3)) & 3) as usize;
            pick((l & !3) | sel)
        })
    } else {
        // Bit masks over each half-wave.
        let and = (offset & 0x1F) as usize;
        let or = (offset >> 5 & 0x1F) as usize;
        let xor = (offset >> 10 & 0x1F) as usize;
        std::array::from_fn(|l| {
            let j = ((l & 0x1F & and) | or) ^ xor;
            pick(j | (l & 0x20))
        })
    };
    w.write_regs(i.vdst, acc, &[out], exec)
}

/// The lane a permute names: (ADDR + OFFSET) / 4, the bits above the
/// wave's lane count ignored.
fn permute_lane(w: &Wave, addr: &Lanes, i: &Inst, l: usize) -> usize {
    w.lane_select(addr[l].wrapping_add(i.imm as u32 & 0xFFFF) / 4)
}

/// `ds_permute_b32` (push): each active lane sends DATA0 to the lane its
/// address names; when several send to one lane the highest wins; lanes
/// nobody sends to get 0.
fn permute(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let src = *w.vreg(data_reg(i, 1)?, acc)?;
    let mut out = [0u32; LANES];
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        out[permute_lane(w, &addr, i, l)] = src[l];
    }
    w.write_regs(i.vdst, acc, &[out], exec)
}

/// `ds_bpermute_b32` (pull): each active lane reads DATA0 of the lane its
/// address names, or 0 when that lane is outside EXEC.
fn bpermute(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let exec = w.exec();
    let acc = i.acc();
    let addr = address_lanes(w, i)?;
    let src = *w.vreg(data_reg(i, 1)?, acc)?;
    let out: Lanes = std::array::from_fn(|l| {
        let j = permute_lane(w, &addr, i, l);
        if exec >> j & 1 != 0 { src[j] } else { 0 }
    });
    w.write_regs(i.vdst, acc, &[out], exec)
}

fn nop(_: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> R {
    Ok(())
}

// ---------------------------------------------------------------------
// gfx950's transposing reads
// ---------------------------------------------------------------------

/// `ds_read_b64_tr_b{4,8,16}` and `ds_read_b96_tr_b6` (gfx950): each lane
/// reads a 64-bit (96-bit for b6) chunk at its address, and every group
/// of 16 lanes transposes its chunks as a matrix of `bits`-wide elements.
///
/// ```text
///   E = elements per chunk (4 b16, 8 b8, 16 b4, 16 b6), R = 16 / E
///   group G = lanes 16G..16G+15; chunk X_p read at lane p's address
///   rows: row n = the chunks of lanes 16G + n·R .. 16G + n·R + R − 1
///   lane 16G + c, element n  =  element (c mod E) of X_{16G + n·R + ⌊c/E⌋}
///   (b16: lane 0 gets element 0 of lanes 0, 4, 8, 12)
/// ```
///
/// CDNA4 ISA §12.12 (opcodes 224–227: "interpret the data as a matrix …
/// and transpose") and §11.4 (their use for column-major A or row-major
/// B) give no lane formula; the one above is what AMD's hardware test of
/// these reads expects (rocRoller `TransposeLoadsTest`), as Triton's
/// `lowerDsReadTr` ("lane 0 receives [t0,t4,t8,t12]") and rocjitsu's
/// corrected model agree. Elements are packed from bit 0 of a chunk and
/// of the destination registers (§7.1.4). EXEC must be all ones (§11.4);
/// other masks are refused. Addresses out of range read zero per dword
/// (the module's rule), and alignment is not checked, as for plain reads.
fn read_transposed(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, bits: u32) -> R {
    no_gds(i)?;
    if w.exec() != u64::MAX {
        return Err(Fault::UnimplementedCase {
            mnemonic: i.mnemonic,
            case: "EXEC not all ones (CDNA4 ISA §11.4: it must be)",
        });
    }
    let dwords = if bits == 6 { 3 } else { 2 };
    let per_chunk = if bits == 6 { 16 } else { 64 / bits as usize };
    let rows_per = 16 / per_chunk;
    let addr = address_lanes(w, i)?;
    let (lds, strict) = (&*ctx.lds, ctx.mem.is_strict());
    let mut chunks = [0u128; LANES];
    for (l, x) in chunks.iter_mut().enumerate() {
        let a = lane_address(&addr, i, l);
        for k in 0..dwords {
            let at = check(lds, strict, a + 4 * k as u64, 4, false)?;
            *x |= u128::from(load_at(lds, at, 4)) << (32 * k);
        }
    }
    let mask = (1u128 << bits) - 1;
    let bits = bits as usize;
    let dst = regs_mut(w, i.vdst, dwords, i.acc())?;
    for lane in 0..LANES {
        let (group, c) = (lane & !15, lane & 15);
        let v = (0..per_chunk).fold(0u128, |v, n| {
            let x = chunks[group + n * rows_per + c / per_chunk];
            v | (x >> (bits * (c % per_chunk)) & mask) << (bits * n)
        });
        for (k, reg) in dst.iter_mut().enumerate() {
            reg[lane] = (v >> (32 * k)) as u32;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------

macro_rules! ds_ops {
    ($($name:literal => |$w:ident, $i:ident, $c:ident| $body:expr;)*) => {
        const TABLE: &[(&str, Exec)] = &[
            $(($name, { fn f($w: &mut Wave, $i: &Inst, $c: &mut Ctx<'_>) -> R { $body } f }),)*
        ];
    };
}

ds_ops! {
    "ds_read_b32" => |w, i, c| read(w, i, c, Put::Dwords(1));
    "ds_read_b64" => |w, i, c| read(w, i, c, Put::Dwords(2));
    "ds_read_b96" => |w, i, c| read(w, i, c, Put::Dwords(3));
    "ds_read_b128" => |w, i, c| read(w, i, c, Put::Dwords(4));
    "ds_read_u8" => |w, i, c| read(w, i, c, Put::Extend { size: 1, signed: false });
    "ds_read_i8" => |w, i, c| read(w, i, c, Put::Extend { size: 1, signed: true });
    "ds_read_u16" => |w, i, c| read(w, i, c, Put::Extend { size: 2, signed: false });
    "ds_read_i16" => |w, i, c| read(w, i, c, Put::Extend { size: 2, signed: true });
    "ds_read_u8_d16" => |w, i, c| read(w, i, c, Put::D16 { size: 1, signed: false, hi: false });
    "ds_read_u8_d16_hi" => |w, i, c| read(w, i, c, Put::D16 { size: 1, signed: false, hi: true });
    "ds_read_i8_d16" => |w, i, c| read(w, i, c, Put::D16 { size: 1, signed: true, hi: false });
    "ds_read_i8_d16_hi" => |w, i, c| read(w, i, c, Put::D16 { size: 1, signed: true, hi: true });
    "ds_read_u16_d16" => |w, i, c| read(w, i, c, Put::D16 { size: 2, signed: false, hi: false });
    "ds_read_u16_d16_hi" => |w, i, c| read(w, i, c, Put::D16 { size: 2, signed: false, hi: true });
    "ds_read2_b32" => |w, i, c| read2(w, i, c, 4, false);
    "ds_read2st64_b32" => |w, i, c| read2(w, i, c, 4, true);
    "ds_read2_b64" => |w, i, c| read2(w, i, c, 8, false);
    "ds_read2st64_b64" => |w, i, c| read2(w, i, c, 8, true);
    "ds_write_b8" => |w, i, c| write(w, i, c, Take::Part { size: 1, hi: false });
    "ds_write_b16" => |w, i, c| write(w, i, c, Take::Part { size: 2, hi: false });
    "ds_write_b8_d16_hi" => |w, i, c| write(w, i, c, Take::Part { size: 1, hi: true });
    "ds_write_b16_d16_hi" => |w, i, c| write(w, i, c, Take::Part { size: 2, hi: true });
    "ds_write_b32" => |w, i, c| write(w, i, c, Take::Dwords(1));
    "ds_write_b64" => |w, i, c| write(w, i, c, Take::Dwords(2));
    "ds_write_b96" => |w, i, c| write(w, i, c, Take::Dwords(3));
    "ds_write_b128" => |w, i, c| write(w, i, c, Take::Dwords(4));
    "ds_write2_b32" => |w, i, c| write2(w, i, c, 4, false);
    "ds_write2st64_b32" => |w, i, c| write2(w, i, c, 4, true);
    "ds_write2_b64" => |w, i, c| write2(w, i, c, 8, false);
    "ds_write2st64_b64" => |w, i, c| write2(w, i, c, 8, true);
    "ds_wrxchg2_rtn_b32" => |w, i, c| wrxchg2(w, i, c, false, false);
    "ds_wrxchg2st64_rtn_b32" => |w, i, c| wrxchg2(w, i, c, false, true);
    "ds_wrxchg2_rtn_b64" => |w, i, c| wrxchg2(w, i, c, true, false);
    "ds_wrxchg2st64_rtn_b64" => |w, i, c| wrxchg2(w, i, c, true, true);
    "ds_swizzle_b32" => |w, i, c| swizzle(w, i, c);
    "ds_permute_b32" => |w, i, c| permute(w, i, c);
    "ds_bpermute_b32" => |w, i, c| bpermute(w, i, c);
    "ds_nop" => |w, i, c| nop(w, i, c);
    "ds_read_b64_tr_b4" => |w, i, c| read_transposed(w, i, c, 4);
    "ds_read_b64_tr_b8" => |w, i, c| read_transposed(w, i, c, 8);
    "ds_read_b64_tr_b16" => |w, i, c| read_transposed(w, i, c, 16);
    "ds_read_b96_tr_b6" => |w, i, c| read_transposed(w, i, c, 6);
}

/// The atomics: (stem, op) for each 32-bit op, with and without `_rtn`.
macro_rules! ds_atomics {
    ($table:ident, $wide:expr, $($plain:literal, $rtn:literal => $op:expr;)*) => {
        const $table: &[(&str, Exec)] = &[
            $(
                ($plain, { fn f(w: &mut Wave, i: &Inst, c: &mut Ctx<'_>) -> R { atomic(w, i, c, $op, $wide, false) } f }),
                ($rtn, { fn f(w: &mut Wave, i: &Inst, c: &mut Ctx<'_>) -> R { atomic(w, i, c, $op, $wide, true) } f }),
            )*
        ];
    };
}

ds_atomics! { ATOMIC32, false,
    "ds_add_u32", "ds_add_rtn_u32" => Op::Rmw(Rmw::Add);
    "ds_sub_u32", "ds_sub_rtn_u32" => Op::Rmw(Rmw::Sub);
    "ds_rsub_u32", "ds_rsub_rtn_u32" => Op::Rsub;
    "ds_inc_u32", "ds_inc_rtn_u32" => Op::Rmw(Rmw::Inc);
    "ds_dec_u32", "ds_dec_rtn_u32" => Op::Rmw(Rmw::Dec);
    "ds_min_i32", "ds_min_rtn_i32" => Op::Rmw(Rmw::SMin);
    "ds_max_i32", "ds_max_rtn_i32" => Op::Rmw(Rmw::SMax);
    "ds_min_u32", "ds_min_rtn_u32" => Op::Rmw(Rmw::UMin);
    "ds_max_u32", "ds_max_rtn_u32" => Op::Rmw(Rmw::UMax);
    "ds_and_b32", "ds_and_rtn_b32" => Op::Rmw(Rmw::And);
    "ds_or_b32", "ds_or_rtn_b32" => Op::Rmw(Rmw::Or);
    "ds_xor_b32", "ds_xor_rtn_b32" => Op::Rmw(Rmw::Xor);
    "ds_mskor_b32", "ds_mskor_rtn_b32" => Op::Mskor;
    "ds_cmpst_b32", "ds_cmpst_rtn_b32" => Op::CmpSt;
    "ds_cmpst_f32", "ds_cmpst_rtn_f32" => Op::CmpStF;
    "ds_min_f32", "ds_min_rtn_f32" => Op::MinF;
    "ds_max_f32", "ds_max_rtn_f32" => Op::MaxF;
    "ds_add_f32", "ds_add_rtn_f32" => Op::Rmw(Rmw::AddF32);
    "ds_pk_add_f16", "ds_pk_add_rtn_f16" => Op::Rmw(Rmw::PkAddF16);
    "ds_pk_add_bf16", "ds_pk_add_rtn_bf16" => Op::Rmw(Rmw::PkAddBf16);
}

ds_atomics! { ATOMIC64, true,
    "ds_add_u64", "ds_add_rtn_u64" => Op::Rmw(Rmw::Add);
    "ds_sub_u64", "ds_sub_rtn_u64" => Op::Rmw(Rmw::Sub);
    "ds_rsub_u64", "ds_rsub_rtn_u64" => Op::Rsub;
    "ds_inc_u64", "ds_inc_rtn_u64" => Op::Rmw(Rmw::Inc);
    "ds_dec_u64", "ds_dec_rtn_u64" => Op::Rmw(Rmw::Dec);
    "ds_min_i64", "ds_min_rtn_i64" => Op::Rmw(Rmw::SMin);
    "ds_max_i64", "ds_max_rtn_i64" => Op::Rmw(Rmw::SMax);
    "ds_min_u64", "ds_min_rtn_u64" => Op::Rmw(Rmw::UMin);
    "ds_max_u64", "ds_max_rtn_u64" => Op::Rmw(Rmw::UMax);
    "ds_and_b64", "ds_and_rtn_b64" => Op::Rmw(Rmw::And);
    "ds_or_b64", "ds_or_rtn_b64" => Op::Rmw(Rmw::Or);
    "ds_xor_b64", "ds_xor_rtn_b64" => Op::Rmw(Rmw::Xor);
    "ds_mskor_b64", "ds_mskor_rtn_b64" => Op::Mskor;
    "ds_cmpst_b64", "ds_cmpst_rtn_b64" => Op::CmpSt;
    "ds_cmpst_f64", "ds_cmpst_rtn_f64" => Op::CmpStF;
    "ds_min_f64", "ds_min_rtn_f64" => Op::MinF;
    "ds_max_f64", "ds_max_rtn_f64" => Op::MaxF;
    "ds_add_f64", "ds_add_rtn_f64" => Op::Rmw(Rmw::AddF64);
}

/// Exchanges and `ds_wrap_rtn_b32`, which exist only with `_rtn`.
const RTN_ONLY: &[(&str, Exec)] = &[
    ("ds_wrxchg_rtn_b32", |w, i, c| {
        atomic(w, i, c, Op::Rmw(Rmw::Swap), false, true)
    }),
    ("ds_wrxchg_rtn_b64", |w, i, c| {
        atomic(w, i, c, Op::Rmw(Rmw::Swap), true, true)
    }),
    ("ds_wrap_rtn_b32", |w, i, c| {
        atomic(w, i, c, Op::Wrap, false, true)
    }),
];

/// Every DS executor.
pub const OPS: &[&[(&str, Exec)]] = &[TABLE, ATOMIC32, ATOMIC64, RTN_ONLY];

#[cfg(test)]
mod tests {
    //! Instruction words and their disassembly come from the toolchain's
    //! `llc`/`llvm-objdump` for gfx90a (module asm assembled into an
    //! object, then disassembled).

    use super::*;
    use crate::decode::Target;
    use crate::exec::run_words_in;
    use crate::memory::Memory;

    const POISON: u32 = 0xDEAD_BEEF;

    /// Runs the instruction `words` (whose mnemonic must be `mnemonic`) for
    /// `w` over `lds`.
    fn run(w: &mut Wave, words: [u32; 2], mnemonic: &str, lds: &mut [u8]) -> R {
        crate::exec::run_words(w, Target::Gfx90a, &words, mnemonic, lds)
    }

    fn wave(exec: u64) -> Wave {
        let mut w = Wave::new(16, 8);
        w.set_exec(exec);
        for r in 0..16 {
            w.v[r] = [POISON; LANES];
        }
        w
    }

    fn dword(lds: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(lds[at..at + 4].try_into().expect("4 bytes"))
    }

    /// LDS whose dword at byte `4k` is `0x5000_0000 + k`.
    fn patterned(len: usize) -> Vec<u8> {
        (0..len / 4)
            .flat_map(|k| (0x5000_0000u32 + k as u32).to_le_bytes())
            .collect()
    }

    const NOT_LANE_5: u64 = !(1 << 5);

    #[test]
    fn read2_offsets_count_elements() {
        let mut lds = patterned(2048);
        let mut w = wave(NOT_LANE_5);
        w.v[1] = std::array::from_fn(|l| l as u32 * 8);
        // ds_read2_b32 v[4:5], v1 offset0:3 offset1:200
        run(&mut w, [0xD86EC803, 0x04000001], "ds_read2_b32", &mut lds).unwrap();
        for l in 0..LANES {
            if l == 5 {
                assert_eq!((w.v[4][l], w.v[5][l]), (POISON, POISON));
                continue;
            }
            assert_eq!(w.v[4][l], dword(&lds, l * 8 + 3 * 4), "lane {l}");
            assert_eq!(w.v[5][l], dword(&lds, l * 8 + 200 * 4), "lane {l}");
        }
    }

    #[test]
    fn read2st64_b64_offsets_count_64_elements() {
        let mut lds = patterned(4096);
        let mut w = wave(u64::MAX);
        w.v[1] = std::array::from_fn(|l| l as u32 * 8);
        // ds_read2st64_b64 v[4:7], v1 offset0:1 offset1:2
        run(
            &mut w,
            [0xD8F00201, 0x04000001],
            "ds_read2st64_b64",
            &mut lds,
        )
        .unwrap();
        for l in 0..LANES {
            let (a0, a1) = (l * 8 + 512, l * 8 + 1024);
            let got = [w.v[4][l], w.v[5][l], w.v[6][l], w.v[7][l]];
            let want = [
                dword(&lds, a0),
                dword(&lds, a0 + 4),
                dword(&lds, a1),
                dword(&lds, a1 + 4),
            ];
            assert_eq!(got, want, "lane {l}");
        }
    }

    #[test]
    fn write2_puts_data0_and_data1_at_their_offsets() {
        let mut lds = vec![0u8; 1024];
        let mut w = wave(NOT_LANE_5);
        w.v[1] = std::array::from_fn(|l| l as u32 * 8);
        w.v[2] = std::array::from_fn(|l| 0x1000 + l as u32);
        w.v[3] = std::array::from_fn(|l| 0x2000 + l as u32);
        // ds_write2_b32 v1, v2, v3 offset0:7 offset1:9 (28 and 36 bytes on).
        run(&mut w, [0xD81C0907, 0x00030201], "ds_write2_b32", &mut lds).unwrap();
        // Lane l writes l*8+28 and l*8+36; lane l+1's first write (l*8+36)
        // lands on lane l's second, and the later lane wins.
        for l in 0..LANES {
            if l != 5 {
                assert_eq!(dword(&lds, l * 8 + 28), 0x1000 + l as u32, "lane {l}");
            }
        }
        assert_eq!(dword(&lds, 63 * 8 + 36), 0x2000 + 63);
        assert_eq!(dword(&lds, 4 * 8 + 36), 0x2000 + 4, "lane 5 is off");
    }

    #[test]
    fn write2st64_b64_scales_offsets_by_64_qwords() {
        let mut lds = vec![0u8; 4096];
        let mut w = wave(1 << 3);
        w.v[1][3] = 16;
        w.v[2][3] = 0x1111_1111;
        w.v[3][3] = 0x2222_2222;
        w.v[6][3] = 0x3333_3333;
        w.v[7][3] = 0x4444_4444;
        // ds_write2st64_b64 v1, v[2:3], v[6:7] offset0:1 offset1:3
        run(
            &mut w,
            [0xD89E0301, 0x00060201],
            "ds_write2st64_b64",
            &mut lds,
        )
        .unwrap();
        let (a0, a1) = (16 + 512, 16 + 3 * 512);
        assert_eq!(
            [dword(&lds, a0), dword(&lds, a0 + 4)],
            [0x1111_1111, 0x2222_2222]
        );
        assert_eq!(
            [dword(&lds, a1), dword(&lds, a1 + 4)],
            [0x3333_3333, 0x4444_4444]
        );
        assert_eq!(lds.iter().filter(|&&b| b != 0).count(), 16);
    }

    #[test]
    fn add_rtn_returns_values_in_lane_order() {
        let mut lds = vec![0u8; 64];
        lds[16..20].copy_from_slice(&100u32.to_le_bytes());
        let mut w = wave(NOT_LANE_5);
        w.v[1] = [0; LANES];
        w.v[2] = std::array::from_fn(|l| l as u32 + 1);
        // ds_add_rtn_u32 v4, v1, v2 offset:16
        run(&mut w, [0xD8400010, 0x04000201], "ds_add_rtn_u32", &mut lds).unwrap();
        let mut sum = 100u32;
        for l in 0..LANES {
            if l == 5 {
                assert_eq!(w.v[4][l], POISON);
                continue;
            }
            assert_eq!(w.v[4][l], sum, "lane {l}");
            sum += l as u32 + 1;
        }
        assert_eq!(dword(&lds, 16), sum);
    }

    #[test]
    fn non_returning_atomic_leaves_vdst_alone() {
        let mut lds = vec![0u8; 64];
        let mut w = wave(u64::MAX);
        w.v[1] = [4; LANES];
        w.v[2] = [3; LANES];
        // ds_add_u32 v1, v2: VDST field 0 is not written.
        w.v[0] = [POISON; LANES];
        run(&mut w, [0xD8000000, 0x00000201], "ds_add_u32", &mut lds).unwrap();
        assert_eq!(dword(&lds, 4), 3 * 64);
        assert_eq!(w.v[0], [POISON; LANES]);
    }

    #[test]
    fn cmpst_compares_with_data0_and_stores_data1() {
        let mut lds = vec![0u8; 256 + 8];
        for l in 0..LANES {
            lds[8 + 4 * l..12 + 4 * l].copy_from_slice(&(l as u32 * 3).to_le_bytes());
        }
        let mut w = wave(u64::MAX);
        w.v[1] = std::array::from_fn(|l| 4 * l as u32);
        // Even lanes compare equal.
        w.v[2] = std::array::from_fn(|l| if l % 2 == 0 { l as u32 * 3 } else { 7 });
        w.v[3] = std::array::from_fn(|l| 0xABC0 + l as u32);
        // ds_cmpst_rtn_b32 v4, v1, v2, v3 offset:8
        run(
            &mut w,
            [0xD8600008, 0x04030201],
            "ds_cmpst_rtn_b32",
            &mut lds,
        )
        .unwrap();
        for l in 0..LANES {
            assert_eq!(w.v[4][l], l as u32 * 3, "returns the old value");
            let want = if l % 2 == 0 {
                0xABC0 + l as u32
            } else {
                l as u32 * 3
            };
            assert_eq!(dword(&lds, 8 + 4 * l), want, "lane {l}");
        }
    }

    #[test]
    fn cmpst_b64_compares_all_64_bits() {
        let mut lds = vec![0u8; 16];
        lds[..8].copy_from_slice(&0x1_0000_0002u64.to_le_bytes());
        lds[8..].copy_from_slice(&0x1_0000_0002u64.to_le_bytes());
        let mut w = wave(0b11);
        w.v[1] = std::array::from_fn(|l| 8 * l as u32);
        // Lane 0's compare differs only in the high dword.
        w.v[2] = [2; LANES];
        w.v[3] = std::array::from_fn(|l| l as u32);
        w.v[6] = [0x55; LANES];
        w.v[7] = [0x66; LANES];
        // ds_cmpst_rtn_b64 v[4:5], v1, v[2:3], v[6:7]
        run(
            &mut w,
            [0xD8E00000, 0x04060201],
            "ds_cmpst_rtn_b64",
            &mut lds,
        )
        .unwrap();
        assert_eq!((w.v[4][0], w.v[5][0]), (2, 1));
        assert_eq!(lds[..8], 0x1_0000_0002u64.to_le_bytes());
        assert_eq!(lds[8..], 0x66_0000_0055u64.to_le_bytes());
    }

    #[test]
    fn mskor_clears_mask_then_ors() {
        let mut lds = 0xF0F0_F0F0u32.to_le_bytes().to_vec();
        let mut w = wave(1);
        w.v[1][0] = 0;
        w.v[2][0] = 0xFF00_0000;
        w.v[3][0] = 0x0300_0001;
        // ds_mskor_rtn_b32 v4, v1, v2, v3
        run(
            &mut w,
            [0xD8580000, 0x04030201],
            "ds_mskor_rtn_b32",
            &mut lds,
        )
        .unwrap();
        assert_eq!(w.v[4][0], 0xF0F0_F0F0);
        assert_eq!(dword(&lds, 0), 0x03F0_F0F1);
    }

    #[test]
    fn float_atomics_follow_their_pseudocode() {
        let mut lds = 1.5f32.to_bits().to_le_bytes().to_vec();
        let mut w = wave(0b111);
        w.v[1] = [0; LANES];
        w.v[2][0] = 1.0f32.to_bits();
        w.v[2][1] = 2.5f32.to_bits();
        w.v[2][2] = f32::NAN.to_bits();
        // ds_max_rtn_f32 v4, v1, v2: 1.5, then 2.5 wins, then NaN loses.
        run(&mut w, [0xD8660000, 0x04000201], "ds_max_rtn_f32", &mut lds).unwrap();
        assert_eq!(w.v[4][..3], [1.5f32, 1.5, 2.5].map(f32::to_bits));
        assert_eq!(dword(&lds, 0), 2.5f32.to_bits());

        let mut lds = 0.25f64.to_bits().to_le_bytes().to_vec();
        let mut w = wave(0b11);
        w.v[1] = [0; LANES];
        let d = [1.0f64, 2.0].map(f64::to_bits);
        w.v[2][..2].copy_from_slice(&d.map(|b| b as u32));
        w.v[3][..2].copy_from_slice(&d.map(|b| (b >> 32) as u32));
        // ds_add_rtn_f64 v[4:5], v1, v[2:3]
        run(&mut w, [0xD8F80000, 0x04000201], "ds_add_rtn_f64", &mut lds).unwrap();
        let got = |l: usize| f64::from_bits(u64::from(w.v[4][l]) | u64::from(w.v[5][l]) << 32);
        assert_eq!((got(0), got(1)), (0.25, 1.25));
        assert_eq!(lds, 3.25f64.to_bits().to_le_bytes());
    }

    #[test]
    fn wrxchg2st64_returns_both_old_values() {
        let mut lds = patterned(1024);
        let before = lds.clone();
        let mut w = wave(1);
        w.v[1][0] = 8;
        w.v[2][0] = 0xAAAA;
        w.v[3][0] = 0xBBBB;
        // ds_wrxchg2st64_rtn_b32 v[4:5], v1, v2, v3 offset0:1 offset1:2
        run(
            &mut w,
            [0xD85E0201, 0x04030201],
            "ds_wrxchg2st64_rtn_b32",
            &mut lds,
        )
        .unwrap();
        assert_eq!(w.v[4][0], dword(&before, 8 + 256));
        assert_eq!(w.v[5][0], dword(&before, 8 + 512));
        assert_eq!(
            (dword(&lds, 8 + 256), dword(&lds, 8 + 512)),
            (0xAAAA, 0xBBBB)
        );
    }

    #[test]
    fn d16_hi_read_sign_extends_into_the_high_half() {
        let mut lds = vec![0u8; 16];
        lds[7] = 0x80;
        let mut w = wave(1);
        w.v[1][0] = 4;
        w.v[4][0] = 0x1234_5678;
        // ds_read_i8_d16_hi v4, v1 offset:3
        run(
            &mut w,
            [0xD8B20003, 0x04000001],
            "ds_read_i8_d16_hi",
            &mut lds,
        )
        .unwrap();
        // SRAMECC: the low half is zeroed (`flat::d16`).
        assert_eq!(w.v[4][0], 0xFF80_0000);
    }

    #[test]
    fn acc_bit_reads_into_agprs() {
        let mut lds = patterned(64);
        let mut w = wave(1);
        w.v[1][0] = 12;
        w.v[4][0] = POISON;
        // ds_read_b32 a4, v1
        run(&mut w, [0xDA6C0000, 0x04000001], "ds_read_b32", &mut lds).unwrap();
        assert_eq!(w.a[4][0], 0x5000_0003);
        assert_eq!(w.v[4][0], POISON);
        // ds_read_b32 v2, v1: VDST bit 1 (word 1 bit 25) is not ACC.
        run(&mut w, [0xD86C0000, 0x02000001], "ds_read_b32", &mut lds).unwrap();
        assert_eq!(w.v[2][0], 0x5000_0003);
        assert_eq!(w.a[2][0], 0);
    }

    #[test]
    fn access_past_the_allocation_faults_in_strict_mode_and_changes_nothing() {
        let strict = Memory::new();
        strict.set_strict(true);
        let mut lds = vec![0u8; 1 << 16];
        let mut w = wave(u64::MAX);
        w.v[1] = [0; LANES];
        // ds_read_b32 v4, v1 offset:65535: bytes 65535..65539.
        let words = [0xD86CFFFF, 0x04000001];
        let r = run_words_in(
            &strict,
            Target::Gfx90a,
            &mut w,
            &words,
            "ds_read_b32",
            &mut lds,
        );
        assert_eq!(
            r,
            Err(Fault::Memory {
                space: Space::Lds,
                address: 65535,
                size: 4,
                write: false
            })
        );
        assert_eq!(w.v[4], [POISON; LANES]);

        // ds_write_b128 v1, v[8:11] offset:32: lane 62 is the first past
        // the end of 1 KiB; no lane may have written.
        let mut lds = vec![0u8; 1024];
        w.v[1] = std::array::from_fn(|l| 16 * l as u32);
        let words = [0xD9BE0020, 0x00000801];
        let r = run_words_in(
            &strict,
            Target::Gfx90a,
            &mut w,
            &words,
            "ds_write_b128",
            &mut lds,
        );
        assert_eq!(
            r,
            Err(Fault::Memory {
                space: Space::Lds,
                address: 62 * 16 + 32,
                size: 16,
                write: true
            })
        );
        assert!(lds.iter().all(|&b| b == 0));
    }

    /// CDNA3 ISA §3.6.1 "Out-of-Range behavior": an LDS address at or past
    /// the allocation reads 0 and a write there is discarded; per dword
    /// for wide accesses, all or nothing for atomics (module doc).
    #[test]
    fn out_of_range_reads_give_zero_and_writes_are_dropped() {
        let mut lds = patterned(1024);
        let before = lds.clone();
        let mut w = wave(u64::MAX);
        // ds_read_b32 v4, v1 offset:65535: far past the 1 KiB.
        w.v[1] = [0; LANES];
        run(&mut w, [0xD86CFFFF, 0x04000001], "ds_read_b32", &mut lds).unwrap();
        assert_eq!(w.v[4], [0; LANES]);
        // AMD's f64 GEMM kernels: ds_read_b32 from 0xF00000 gives 0.
        w.v[1] = [0xF0_0000; LANES];
        w.v[4] = [POISON; LANES];
        run(&mut w, [0xD86C0000, 0x04000001], "ds_read_b32", &mut lds).unwrap();
        assert_eq!(w.v[4], [0; LANES]);

        // ds_read_b128 v[4:7], v1 at 1016: dwords at 1016 and 1020 are in,
        // 1024 and 1028 out.
        w.v[1] = [1016; LANES];
        run(&mut w, [0xD9FE0000, 0x04000001], "ds_read_b128", &mut lds).unwrap();
        assert_eq!(w.v[4], [dword(&before, 1016); LANES]);
        assert_eq!(w.v[5], [dword(&before, 1020); LANES]);
        assert_eq!((w.v[6], w.v[7]), ([0; LANES], [0; LANES]));

        // ds_write_b128 v1, v[8:11] offset:32 from lane l at 16 l: lanes
        // up to 61 write, lane 62 and 63 are dropped.
        w.v[1] = std::array::from_fn(|l| 16 * l as u32);
        for r in 8..12 {
            w.v[r] = std::array::from_fn(|l| 0x0100_0000 * r as u32 + l as u32);
        }
        run(&mut w, [0xD9BE0020, 0x00000801], "ds_write_b128", &mut lds).unwrap();
        for l in 0..62 {
            assert_eq!(dword(&lds, 16 * l + 32), 0x0800_0000 + l as u32, "lane {l}");
        }
        assert_eq!(lds.len(), 1024);

        // ds_add_rtn_u32 v4, v1, v2 past the end: returns 0, changes nothing.
        let snapshot = lds.clone();
        w.v[1] = [2048; LANES];
        w.v[2] = [5; LANES];
        w.v[4] = [POISON; LANES];
        run(&mut w, [0xD8400000, 0x04000201], "ds_add_rtn_u32", &mut lds).unwrap();
        assert_eq!(w.v[4], [0; LANES]);
        assert_eq!(lds, snapshot);
    }

    #[test]
    fn bpermute_pulls_by_byte_address_modulo_the_wave_size() {
        let mut lds = Vec::new();
        let off: u64 = !(1 << 9);
        let mut w = wave(off);
        // Lane l reads lane (5l + 7) % 64; high address bits wrap away.
        w.v[1] = std::array::from_fn(|l| ((5 * l as u32 + 7) % 64) * 4 + 256 * (l as u32 % 3));
        w.v[2] = std::array::from_fn(|l| 1000 + l as u32);
        // ds_bpermute_b32 v4, v1, v2
        let bpermute = |w: &mut Wave, lds: &mut Vec<u8>| {
            run(w, [0xD87E0000, 0x04000201], "ds_bpermute_b32", lds).unwrap();
        };
        bpermute(&mut w, &mut lds);
        for l in 0..LANES {
            let src = (5 * l + 7) % 64;
            let want = match (l, src) {
                (9, _) => POISON,
                (_, 9) => 0,
                _ => 1000 + src as u32,
            };
            assert_eq!(w.v[4][l], want, "lane {l}");
        }
        // In wave32 the lane wraps at 32: lane l names l + 33, which is
        // lane (l + 1) % 32; lanes 32..64 are not the wave's.
        w.set_size(crate::lanes::WaveSize::W32);
        w.set_exec(u64::MAX);
        w.v[4] = [POISON; LANES];
        w.v[1] = std::array::from_fn(|l| 4 * (l as u32 + 33));
        bpermute(&mut w, &mut lds);
        for l in 0..LANES {
            let want = if l < 32 {
                1000 + (l as u32 + 1) % 32
            } else {
                POISON
            };
            assert_eq!(w.v[4][l], want, "wave32 lane {l}");
        }
    }

    #[test]
    fn permute_pushes_and_the_highest_lane_wins() {
        let mut lds = Vec::new();
        let mut w = wave(u64::MAX);
        // With offset:4, lane l sends to lane 63 - l, except that lane 0
        // (address -4, wrapping) also sends to lane 0, where lane 63 wins,
        // and nobody sends to lane 63.
        w.v[1] = std::array::from_fn(|l| (4 * (63 - l as u32)).wrapping_sub(4));
        w.v[1][0] = 0xFFFF_FFFC;
        w.v[2] = std::array::from_fn(|l| 1000 + l as u32);
        // ds_permute_b32 v4, v1, v2 offset:4
        run(&mut w, [0xD87C0004, 0x04000201], "ds_permute_b32", &mut lds).unwrap();
        assert_eq!(w.v[4][0], 1063);
        assert_eq!(w.v[4][63], 0);
        for l in 1..63 {
            assert_eq!(w.v[4][l], 1000 + 63 - l as u32, "lane {l}");
        }
    }

    #[test]
    fn swizzle_modes_pick_their_lanes() {
        let mut lds = Vec::new();
        let src: Lanes = std::array::from_fn(|l| 100 + l as u32);
        let check = |words: [u32; 2], lds: &mut Vec<u8>, pick: &dyn Fn(usize) -> usize| {
            let mut w = wave(u64::MAX);
            w.v[2] = src;
            run(&mut w, words, "ds_swizzle_b32", lds).unwrap();
            for l in 0..LANES {
                assert_eq!(w.v[4][l], src[pick(l)], "lane {l} of {words:x?}");
            }
        };
        // swizzle(QUAD_PERM,3,2,1,0)
        check([0xD87A801B, 0x04000002], &mut lds, &|l| {
            (l & !3) | (3 - (l & 3))
        });
        // swizzle(REVERSE,4): and 0x1f, xor 3.
        check([0xD87A0C1F, 0x04000002], &mut lds, &|l| l ^ 3);
        // swizzle(ROTATE,1,3): right by 3 within each half-wave.
        check([0xD87AC460, 0x04000002], &mut lds, &|l| {
            (l & 0x20) | ((l + 32 - 3) % 32)
        });
    }

    #[test]
    fn swizzle_reads_zero_from_inactive_lanes() {
        let mut lds = Vec::new();
        let mut w = wave(!0b1000);
        w.v[2] = std::array::from_fn(|l| 100 + l as u32);
        // swizzle(QUAD_PERM,3,2,1,0): lane 0 reads lane 3, which is off.
        run(&mut w, [0xD87A801B, 0x04000002], "ds_swizzle_b32", &mut lds).unwrap();
        assert_eq!(w.v[4][0], 0);
        assert_eq!(w.v[4][3], POISON);
    }

    #[test]
    fn gds_is_refused() {
        let mut lds = vec![0u8; 64];
        let mut w = wave(1);
        w.v[1][0] = 0;
        // ds_add_u32 v1, v2 with the GDS bit (16) set by hand: the
        // assembler refuses `gds` for gfx90a.
        let r = run(&mut w, [0xD8010000, 0x00000201], "ds_add_u32", &mut lds);
        assert_eq!(
            r,
            Err(Fault::Unimplemented {
                mnemonic: "ds_add_u32"
            })
        );
    }
}
