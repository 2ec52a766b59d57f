//! FLAT, GLOBAL and SCRATCH memory instructions.
//!
//! CDNA3 ISA, "Flat, Scratch and Global Instructions":
//! - FLAT: a 64-bit VGPR address plus the offset; an address in the shared
//!   aperture goes to LDS, one in the private aperture to the lane's
//!   scratch, anything else to global memory.
//! - GLOBAL: a 64-bit VGPR address, or an SGPR-pair base plus a 32-bit
//!   VGPR offset when SADDR is given; plus a signed 13-bit offset.
//! - SCRATCH: a per-lane private offset from VADDR and/or SADDR plus the
//!   offset, into the wave's private segment.
//!
//! - Loads to LDS (`global_load_lds_*`, `scratch_load_lds_*`, gfx90a's
//!   LDS bit): the data goes to LDS at an M0-based place per lane instead
//!   of to registers (`load_to_lds`).
//!
//! Cache-policy bits (glc/slc/sc0/sc1/nt) are accepted and have no
//! functional effect, except that atomics return the old value only when
//! GLC (SC0 on gfx942) is set, as the hardware does.

use crate::decode::inst::code::M0;
use crate::decode::inst::flag;
use crate::decode::{Format, Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::fault::{Fault, Space};
use crate::lanes::{LANES, Lanes, for_lanes};
use crate::memory::Access;
use crate::wave::{PRIVATE_APERTURE_HI, SHARED_APERTURE_HI, Wave};

type R = Result<(), Fault>;

/// Where one lane's access goes.
#[derive(Clone, Copy)]
pub(crate) enum Loc {
    Global(u64),
    Lds(u32),
    /// A lane's private bytes, by the backing address of the first. The
    /// wave's scratch is swizzled a dword at a time (see
    /// [`crate::wave::Scratch::address`]: lane `l`'s dword `k` at
    /// `base + 256 k + 4 l`), so a multi-dword access moves on 256 bytes
    /// per dword, not 4. That is the private segment's swizzle with 4-byte
    /// elements and a 64-lane index stride (CDNA3 ISA, "Buffer Resource
    /// Descriptor": ADD_TID_ENABLE, ELEMENT_SIZE, INDEX_STRIDE; the V#
    /// `dispatch::init_scratch_sgprs` builds), which architected flat
    /// scratch on gfx942 shares.
    Private(u64),
}

/// How an instruction's lanes form their addresses.
#[derive(Clone, Copy)]
enum Mode {
    Global,
    Scratch,
    /// By aperture: LDS, the lane's scratch, or global.
    Flat,
}

/// An instruction's address operands, read once for all its lanes: lane
/// `l`'s address is `base + lo[l] + hi[l] << 32` (mod 2^64), where `base`
/// holds the instruction offset and any SADDR. Reading the registers per
/// lane was a tenth of a small kernel's time (sim-bench).
#[derive(Clone, Copy)]
struct Addressing<'w> {
    w: &'w Wave,
    mode: Mode,
    base: u64,
    lo: Option<&'w Lanes>,
    hi: Option<&'w Lanes>,
}

/// The address operands of `i`. A missing register is the fault the first
/// active lane raises, so callers report it only once they meet one.
fn addressing<'w>(w: &'w Wave, i: &Inst) -> Result<Addressing<'w>, Fault> {
    let offset = i64::from(i.imm) as u64;
    let vgpr = |s: Src| -> Result<Option<&'w Lanes>, Fault> {
        match s {
            Src::Vgpr(r) => w.vreg(r, false).map(Some),
            _ => Ok(None),
        }
    };
    // A 64-bit VGPR address: the low register is checked first.
    let pair = |s: Src| -> Result<(Option<&'w Lanes>, Option<&'w Lanes>), Fault> {
        match s {
            Src::Vgpr(r) => Ok((Some(w.vreg(r, false)?), Some(w.vreg(r + 1, false)?))),
            _ => Ok((None, None)),
        }
    };
    let (mode, base, (lo, hi)) = match i.format {
        Format::Global => match i.src[2] {
            Src::Sgpr(s) => (
                Mode::Global,
                w.s64(s).wrapping_add(offset),
                (vgpr(i.src[0])?, None),
            ),
            _ => (Mode::Global, offset, pair(i.src[0])?),
        },
        Format::Scratch => {
            let lo = vgpr(i.src[0])?;
            let saddr = match i.src[2] {
                Src::Sgpr(s) => u64::from(w.s[usize::from(s)]),
                _ => 0,
            };
            (Mode::Scratch, offset.wrapping_add(saddr), (lo, None))
        }
        _ => (Mode::Flat, offset, pair(i.src[0])?),
    };
    Ok(Addressing {
        w,
        mode,
        base,
        lo,
        hi,
    })
}

impl Addressing<'_> {
    /// Lane `l`'s location for `size` bytes.
    #[inline]
    fn lane(&self, l: usize, size: u64) -> Result<Loc, Fault> {
        let lo = self.lo.map_or(0, |r| u64::from(r[l]));
        let hi = self.hi.map_or(0, |r| u64::from(r[l]));
        let address = self.base.wrapping_add(lo).wrapping_add(hi << 32);
        match self.mode {
            Mode::Global => Ok(Loc::Global(address)),
            Mode::Scratch => private(self.w, l, address, size),
            Mode::Flat => {
                let aperture = (address >> 32) as u32;
                if aperture == SHARED_APERTURE_HI {
                    Ok(Loc::Lds(address as u32))
                } else if aperture == PRIVATE_APERTURE_HI {
                    private(self.w, l, address & 0xFFFF_FFFF, size)
                } else {
                    Ok(Loc::Global(address))
                }
            }
        }
    }
}

/// A lane's private offset as a backing address in the wave's scratch.
fn private(w: &Wave, l: usize, offset: u64, size: u64) -> Result<Loc, Fault> {
    w.scratch
        .address(l, offset, size)
        .map(Loc::Private)
        .ok_or(Fault::Memory {
            space: Space::Scratch,
            address: offset,
            size,
            write: false,
        })
}

/// Memory of one instruction: global through the range table, LDS through
/// the workgroup's slice.
pub(crate) struct Port<'a, 'm> {
    pub m: Access<'m>,
    pub lds: &'a mut [u8],
}

impl Port<'_, '_> {
    #[inline]
    fn check(&mut self, loc: Loc, size: u64, write: bool, space: Space) -> R {
        let ok = match loc {
            Loc::Global(a) => self.m.check(a, size).is_ok(),
            Loc::Lds(o) => u64::from(o) + size <= self.lds.len() as u64,
            // `Scratch::address` checked the whole access against the
            // lane's segment; each dword lies in the wave's region.
            Loc::Private(a) => self.m.check(a, size.min(4)).is_ok(),
        };
        if ok {
            return Ok(());
        }
        Err(match loc {
            Loc::Global(address) | Loc::Private(address) => Fault::Memory {
                space,
                address,
                size,
                write,
            },
            Loc::Lds(o) => Fault::Memory {
                space: Space::Lds,
                address: u64::from(o),
                size,
                write,
            },
        })
    }

    /// `size` (1, 2, 4) bytes zero-extended.
    fn load(&self, loc: Loc, size: u32) -> u32 {
        match loc {
            // Private bytes that cross a dword lie in two swizzled dwords
            // (256 bytes apart): a byte at a time.
            Loc::Private(a) if a % 4 + u64::from(size) > 4 => (0..size).fold(0, |v, k| {
                let b = private_byte(a, k);
                v | self.m.load_small(b, 1) << (8 * k)
            }),
            Loc::Global(a) | Loc::Private(a) => self.m.load_small(a, size),
            Loc::Lds(o) => {
                let o = o as usize;
                (0..size as usize).fold(0, |v, k| v | u32::from(self.lds[o + k]) << (8 * k))
            }
        }
    }

    fn store(&mut self, loc: Loc, size: u32, v: u32) {
        match loc {
            Loc::Private(a) if a % 4 + u64::from(size) > 4 => {
                for k in 0..size {
                    self.m.store_small(private_byte(a, k), 1, v >> (8 * k));
                }
            }
            Loc::Global(a) | Loc::Private(a) => self.m.store_small(a, size, v),
            Loc::Lds(o) => {
                for k in 0..size as usize {
                    self.lds[o as usize + k] = (v >> (8 * k)) as u8;
                }
            }
        }
    }
}

fn advance(loc: Loc, bytes: u32) -> Loc {
    match loc {
        Loc::Global(a) => Loc::Global(a + u64::from(bytes)),
        Loc::Lds(o) => Loc::Lds(o + bytes),
        Loc::Private(a) => Loc::Private(private_byte(a, bytes)),
    }
}

/// The backing address of the private byte `bytes` after the one at `a`:
/// a lane's consecutive dwords are 256 bytes apart (see `Loc::Private`),
/// so the step is taken from the start of `a`'s dword.
fn private_byte(a: u64, bytes: u32) -> u64 {
    let at = a % 4 + u64::from(bytes);
    a - a % 4 + at / 4 * LANES as u64 * 4 + at % 4
}

/// The space a fault outside every range is reported in.
fn space_of(i: &Inst) -> Space {
    match i.format {
        Format::Global => Space::Global,
        Format::Scratch => Space::Scratch,
        _ => Space::Flat,
    }
}

/// How a load puts its data into the destination.
#[derive(Clone, Copy)]
pub(crate) enum Put {
    /// `n` dwords.
    Dwords(u32),
    /// One value of `size` bytes, sign-extended when `signed`.
    Extend { size: u32, signed: bool },
    /// A 16-bit (or 8-bit, extended to 16) value into the low or high half;
    /// the other half as [`d16`] says.
    D16 { size: u32, signed: bool, hi: bool },
}

/// Whether a d16 load keeps the other half of its destination register:
/// not on a processor whose products run with SRAMECC on, where it is
/// zeroed.
///
/// MI200/MI300/CDNA4 ISA §9.1.6 "16-bit Memory Operations": "When ECC is
/// enabled 16-bit memory loads write the full 32-bit VGPR. Unused bits are
/// set to zero." LLVM `GCNSubtarget::d16PreservesUnusedBits()`: the unused bits are
/// preserved only when the subtarget has d16 loads and SRAMECC is not
/// enabled; with SRAMECC a d16 load writes the whole dword (ECC covers
/// whole dwords), and AMD's compilers rely on the other half being 0
/// (they OR two d16 loads into one register). gfx90a and gfx942 products
/// run with `sramecc+` (`aqueduct_abi::gfx`). Every d16 load form follows
/// this: DS (`ds_read_*_d16*`), FLAT/GLOBAL/SCRATCH and MUBUF.
pub(crate) fn d16_keeps_other_half(target: crate::decode::Target) -> bool {
    target.gfx().sramecc != aqueduct_abi::gfx::Feature::On
}

/// `v`'s low 16 bits into the low (or, with `hi`, high) half; the other
/// half from `old` when `keep` ([`d16_keeps_other_half`]), else 0.
#[inline]
pub(crate) fn d16(keep: bool, old: u32, v: u32, hi: bool) -> u32 {
    let (v, other) = (v & 0xFFFF, if keep { old } else { 0 });
    if hi {
        (other & 0xFFFF) | v << 16
    } else {
        (other & 0xFFFF_0000) | v
    }
}

fn load(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, put: Put) -> R {
    let exec = w.exec();
    let acc = i.acc();
    let (bytes, dwords) = match put {
        Put::Dwords(n) => (4 * n, n),
        Put::Extend { size, .. } | Put::D16 { size, .. } => (size, 1),
    };
    // gfx90a spells a load to LDS as the plain load with the LDS bit.
    if i.flags & flag::LDS != 0 {
        return match put {
            Put::Dwords(1) | Put::Extend { .. } => load_to_lds(w, i, ctx, bytes),
            _ => Err(Fault::Unimplemented {
                mnemonic: i.mnemonic,
            }),
        };
    }
    // Destination registers exist before anything is read; with no lane
    // on, nothing is read or written (not even the addressing checked).
    w.vreg(i.vdst + dwords as u16 - 1, acc)?;
    if exec == 0 {
        return Ok(());
    }
    let mut out = [[0u32; LANES]; 4];
    let mut port = Port {
        m: ctx.mem.access(),
        lds: ctx.lds,
    };
    let space = space_of(i);
    let keep = d16_keeps_other_half(ctx.target);
    let at = addressing(w, i)?;
    for_lanes!(exec, |l| {
        let loc = at.lane(l, u64::from(bytes))?;
        port.check(loc, u64::from(bytes), false, space)?;
        match put {
            Put::Dwords(n) => {
                for k in 0..n {
                    out[k as usize][l] = port.load(advance(loc, 4 * k), 4);
                }
            }
            Put::Extend { size, signed } => out[0][l] = extend(port.load(loc, size), size, signed),
            Put::D16 { size, signed, hi } => {
                let v = extend(port.load(loc, size), size, signed);
                out[0][l] = d16(keep, w.vreg(i.vdst, acc)?[l], v, hi);
            }
        }
    });
    drop(port);
    w.write_regs(i.vdst, acc, &out[..dwords as usize], exec)
}

/// Loads to LDS ("LDS DMA": `global_load_lds_*`, `scratch_load_lds_*`,
/// and gfx90a's loads with the LDS bit): each lane in EXEC reads `size`
/// bytes (1, 2, 4; 12 or 16 on gfx950) at its address as the load would,
/// and writes them to LDS at `M0[17:2]·4 + OFFSET + lane·4`, `lane·16`
/// for the 12- and 16-byte forms, whose 12-byte one leaves the slot's
/// fourth dword as it was; no register is written.
///
/// CDNA4 ISA §10.3 (`LDS_ADDR = LDSbase + M0[17:2]*4 + INST.OFFSET +
/// ThreadID*4`, `ThreadID*16` for DWORDX4) and §9.1.9 ("LOAD_DWORDX3
/// writes 3 dwords and skips the 4th"); LLVM's `global.load.lds`
/// intrinsic adds its offset to "both global and LDS address". A byte or
/// short load writes its own size, as the buffer form does
/// (`exec::mubuf`). Every lane reads before any LDS byte is written. An
/// LDS place out of range is skipped (§3.11: LDS DMA "masks off EXEC
/// bits" rather than faulting) and faults in strict mode, before
/// anything is read.
fn load_to_lds(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, size: u32) -> R {
    let exec = w.exec();
    let stride: u64 = if size > 4 { 16 } else { 4 };
    let base = u64::from(w.s[usize::from(M0)] & 0x3_FFFC).wrapping_add(i64::from(i.imm) as u64);
    let place = |l: usize| base.wrapping_add(stride * l as u64);
    let lds_len = ctx.lds.len() as u64;
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    let past = |l: &usize| place(*l).saturating_add(u64::from(size)) > lds_len;
    if let Some(l) = lanes.clone().find(past)
        && ctx.mem.is_strict()
    {
        return Err(Fault::Memory {
            space: Space::Lds,
            address: place(l),
            size: u64::from(size),
            write: true,
        });
    }
    let mut data = [[0u32; 4]; LANES];
    let mut port = Port {
        m: ctx.mem.access(),
        lds: ctx.lds,
    };
    let (space, at) = (space_of(i), addressing(w, i));
    for l in lanes.clone() {
        let loc = at.clone()?.lane(l, u64::from(size))?;
        port.check(loc, u64::from(size), false, space)?;
        for (k, d) in data[l]
            .iter_mut()
            .enumerate()
            .take(size.div_ceil(4) as usize)
        {
            *d = port.load(advance(loc, 4 * k as u32), size.min(4));
        }
    }
    for l in lanes.filter(|l| !past(l)) {
        for (k, &d) in data[l].iter().enumerate().take(size.div_ceil(4) as usize) {
            let o = place(l) + 4 * k as u64;
            port.store(Loc::Lds(o as u32), size.min(4), d);
        }
    }
    Ok(())
}

/// `v`'s low `size` bytes, sign-extended when `signed`.
pub(crate) fn extend(v: u32, size: u32, signed: bool) -> u32 {
    match (size, signed) {
        (1, true) => v as u8 as i8 as i32 as u32,
        (2, true) => v as u16 as i16 as i32 as u32,
        _ => v,
    }
}

/// How a store takes its data: `n` dwords, or `size` bytes from the low
/// (or, with `hi`, the high) half of one register.
#[derive(Clone, Copy)]
enum Take {
    Dwords(u32),
    Part { size: u32, hi: bool },
}

fn store(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, take: Take) -> R {
    let exec = w.exec();
    let acc = i.acc();
    let (Src::Vgpr(data) | Src::Agpr(data)) = i.src[1] else {
        return Err(Fault::Operand { code: 0 });
    };
    let bytes = match take {
        Take::Dwords(n) => 4 * n,
        Take::Part { size, .. } => size,
    };
    let dwords = bytes.div_ceil(4);
    w.vreg(data + dwords as u16 - 1, acc)?;
    if exec == 0 {
        return Ok(());
    }
    let space = space_of(i);
    let mut port = Port {
        m: ctx.mem.access(),
        lds: ctx.lds,
    };
    let at = addressing(w, i)?;
    for_lanes!(exec, |l| {
        let loc = at.lane(l, u64::from(bytes))?;
        port.check(loc, u64::from(bytes), true, space)?;
        match take {
            Take::Dwords(n) => {
                for k in 0..n {
                    let v = w.vreg(data + k as u16, acc)?[l];
                    port.store(advance(loc, 4 * k), 4, v);
                }
            }
            Take::Part { size, hi } => {
                let v = w.vreg(data, acc)?[l];
                port.store(loc, size, if hi { v >> 16 } else { v });
            }
        }
    });
    Ok(())
}

/// Atomic operations on one 32- or 64-bit location.
#[derive(Clone, Copy)]
pub(crate) enum Rmw {
    Swap,
    CmpSwap,
    Add,
    Sub,
    SMin,
    UMin,
    SMax,
    UMax,
    And,
    Or,
    Xor,
    Inc,
    Dec,
    AddF32,
    AddF64,
    MinF64,
    MaxF64,
    PkAddF16,
    PkAddBf16,
}

impl Rmw {
    /// The new value from the old one, the data and (for cmpswap) the
    /// compare value. 32-bit ops see the low halves.
    pub(crate) fn apply(self, old: u64, data: u64, cmp: u64, wide: bool) -> u64 {
        let mask = if wide { u64::MAX } else { 0xFFFF_FFFF };
        let sx = |v: u64| {
            if wide {
                v as i64
            } else {
                i64::from(v as u32 as i32)
            }
        };
        (match self {
            Self::Swap => data,
            Self::CmpSwap => {
                if old == cmp {
                    data
                } else {
                    old
                }
            }
            Self::Add => old.wrapping_add(data),
            Self::Sub => old.wrapping_sub(data),
            Self::SMin => sx(old).min(sx(data)) as u64,
            Self::UMin => old.min(data),
            Self::SMax => sx(old).max(sx(data)) as u64,
            Self::UMax => old.max(data),
            Self::And => old & data,
            Self::Or => old | data,
            Self::Xor => old ^ data,
            // inc: old >= data ? 0 : old + 1; dec: old == 0 || old > data ? data : old - 1.
            Self::Inc => {
                if old >= data {
                    0
                } else {
                    old + 1
                }
            }
            Self::Dec => {
                if old == 0 || old > data {
                    data
                } else {
                    old - 1
                }
            }
            Self::AddF32 => {
                u64::from((f32::from_bits(old as u32) + f32::from_bits(data as u32)).to_bits())
            }
            Self::AddF64 => (f64::from_bits(old) + f64::from_bits(data)).to_bits(),
            Self::MinF64 => f64::from_bits(old).min(f64::from_bits(data)).to_bits(),
            Self::MaxF64 => f64::from_bits(old).max(f64::from_bits(data)).to_bits(),
            Self::PkAddF16 => u64::from(crate::float::pk_add_f16(old as u32, data as u32)),
            Self::PkAddBf16 => u64::from(crate::float::pk_add_bf16(old as u32, data as u32)),
        }) & mask
    }
}

fn atomic(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, op: Rmw, wide: bool) -> R {
    let exec = w.exec();
    let acc = i.acc();
    let (Src::Vgpr(data) | Src::Agpr(data)) = i.src[1] else {
        return Err(Fault::Operand { code: 0 });
    };
    let size: u64 = if wide { 8 } else { 4 };
    let n = if wide { 2 } else { 1 };
    let returns = i.flags & flag::GLC != 0;
    // cmpswap's data is (src, cmp): two registers (four when wide).
    let regs = if matches!(op, Rmw::CmpSwap) { 2 * n } else { n };
    w.vreg(data + regs - 1, acc)?;
    if returns {
        w.vreg(i.vdst + n - 1, acc)?;
    }
    let space = space_of(i);
    let mut olds = [0u64; LANES];
    {
        let mut port = Port {
            m: ctx.mem.access(),
            lds: ctx.lds,
        };
        let at = addressing(w, i);
        for l in 0..LANES {
            if exec >> l & 1 == 0 {
                continue;
            }
            let get = |r: u16| -> Result<u64, Fault> {
                let lo = u64::from(w.vreg(data + r, acc)?[l]);
                Ok(if wide {
                    lo | u64::from(w.vreg(data + r + 1, acc)?[l]) << 32
                } else {
                    lo
                })
            };
            let d = get(0)?;
            let cmp = if matches!(op, Rmw::CmpSwap) {
                get(n)?
            } else {
                0
            };
            let loc = at.clone()?.lane(l, size)?;
            port.check(loc, size, true, space)?;
            olds[l] = rmw(&mut port, loc, op, d, cmp, wide)?;
        }
    }
    if returns {
        let lo: [u32; LANES] = std::array::from_fn(|l| olds[l] as u32);
        let hi: [u32; LANES] = std::array::from_fn(|l| (olds[l] >> 32) as u32);
        // The destination registers were checked before any access.
        let regs = if wide { 2 } else { 1 };
        w.write_regs(i.vdst, acc, &[lo, hi][..regs], exec)?;
    }
    Ok(())
}

/// One atomic read-modify-write; returns the old value.
pub(crate) fn rmw(
    port: &mut Port<'_, '_>,
    loc: Loc,
    op: Rmw,
    d: u64,
    cmp: u64,
    wide: bool,
) -> Result<u64, Fault> {
    let size = if wide { 8 } else { 4 };
    match loc {
        Loc::Global(a) => {
            let misaligned = Fault::Misaligned { address: a, size };
            if wide {
                let x = port.m.atomic_u64(a).ok_or(misaligned)?;
                let mut old = x.load(std::sync::atomic::Ordering::Relaxed);
                loop {
                    let new = op.apply(old, d, cmp, true);
                    match x.compare_exchange_weak(
                        old,
                        new,
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::Relaxed,
                    ) {
                        Ok(_) => return Ok(old),
                        Err(o) => old = o,
                    }
                }
            } else {
                let x = port.m.atomic_u32(a).ok_or(misaligned)?;
                let mut old = x.load(std::sync::atomic::Ordering::Relaxed);
                loop {
                    let new = op.apply(u64::from(old), d, cmp, false) as u32;
                    match x.compare_exchange_weak(
                        old,
                        new,
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::Relaxed,
                    ) {
                        Ok(_) => return Ok(u64::from(old)),
                        Err(o) => old = o,
                    }
                }
            }
        }
        // Only this lane sees its private bytes, so a plain
        // read-modify-write is atomic.
        Loc::Lds(_) | Loc::Private(_) => {
            let at = match loc {
                Loc::Lds(o) => u64::from(o),
                Loc::Global(a) | Loc::Private(a) => a,
            };
            if at % 4 != 0 || matches!(loc, Loc::Lds(_)) && at % size != 0 {
                return Err(Fault::Misaligned { address: at, size });
            }
            let lo = u64::from(port.load(loc, 4));
            let old = if wide {
                lo | u64::from(port.load(advance(loc, 4), 4)) << 32
            } else {
                lo
            };
            let new = op.apply(old, d, cmp, wide);
            port.store(loc, 4, new as u32);
            if wide {
                port.store(advance(loc, 4), 4, (new >> 32) as u32);
            }
            Ok(old)
        }
    }
}

macro_rules! mem_ops {
    ($($suffix:literal => |$w:ident, $i:ident, $c:ident| $body:expr;)*) => {
        const MEM: &[(&str, Exec)] = &[
            $(
                (concat!("flat_", $suffix), { fn f($w: &mut Wave, $i: &Inst, $c: &mut Ctx<'_>) -> R { $body } f }),
                (concat!("global_", $suffix), { fn f($w: &mut Wave, $i: &Inst, $c: &mut Ctx<'_>) -> R { $body } f }),
                (concat!("scratch_", $suffix), { fn f($w: &mut Wave, $i: &Inst, $c: &mut Ctx<'_>) -> R { $body } f }),
            )*
        ];
    };
}

mem_ops! {
    "load_ubyte" => |w, i, c| load(w, i, c, Put::Extend { size: 1, signed: false });
    "load_sbyte" => |w, i, c| load(w, i, c, Put::Extend { size: 1, signed: true });
    "load_ushort" => |w, i, c| load(w, i, c, Put::Extend { size: 2, signed: false });
    "load_sshort" => |w, i, c| load(w, i, c, Put::Extend { size: 2, signed: true });
    "load_dword" => |w, i, c| load(w, i, c, Put::Dwords(1));
    "load_dwordx2" => |w, i, c| load(w, i, c, Put::Dwords(2));
    "load_dwordx3" => |w, i, c| load(w, i, c, Put::Dwords(3));
    "load_dwordx4" => |w, i, c| load(w, i, c, Put::Dwords(4));
    "load_ubyte_d16" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: false, hi: false });
    "load_ubyte_d16_hi" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: false, hi: true });
    "load_sbyte_d16" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: true, hi: false });
    "load_sbyte_d16_hi" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: true, hi: true });
    "load_short_d16" => |w, i, c| load(w, i, c, Put::D16 { size: 2, signed: false, hi: false });
    "load_short_d16_hi" => |w, i, c| load(w, i, c, Put::D16 { size: 2, signed: false, hi: true });
    "store_byte" => |w, i, c| store(w, i, c, Take::Part { size: 1, hi: false });
    "store_byte_d16_hi" => |w, i, c| store(w, i, c, Take::Part { size: 1, hi: true });
    "store_short" => |w, i, c| store(w, i, c, Take::Part { size: 2, hi: false });
    "store_short_d16_hi" => |w, i, c| store(w, i, c, Take::Part { size: 2, hi: true });
    "store_dword" => |w, i, c| store(w, i, c, Take::Dwords(1));
    "store_dwordx2" => |w, i, c| store(w, i, c, Take::Dwords(2));
    "store_dwordx3" => |w, i, c| store(w, i, c, Take::Dwords(3));
    "store_dwordx4" => |w, i, c| store(w, i, c, Take::Dwords(4));
    "atomic_swap" => |w, i, c| atomic(w, i, c, Rmw::Swap, false);
    "atomic_cmpswap" => |w, i, c| atomic(w, i, c, Rmw::CmpSwap, false);
    "atomic_add" => |w, i, c| atomic(w, i, c, Rmw::Add, false);
    "atomic_sub" => |w, i, c| atomic(w, i, c, Rmw::Sub, false);
    "atomic_smin" => |w, i, c| atomic(w, i, c, Rmw::SMin, false);
    "atomic_umin" => |w, i, c| atomic(w, i, c, Rmw::UMin, false);
    "atomic_smax" => |w, i, c| atomic(w, i, c, Rmw::SMax, false);
    "atomic_umax" => |w, i, c| atomic(w, i, c, Rmw::UMax, false);
    "atomic_and" => |w, i, c| atomic(w, i, c, Rmw::And, false);
    "atomic_or" => |w, i, c| atomic(w, i, c, Rmw::Or, false);
    "atomic_xor" => |w, i, c| atomic(w, i, c, Rmw::Xor, false);
    "atomic_inc" => |w, i, c| atomic(w, i, c, Rmw::Inc, false);
    "atomic_dec" => |w, i, c| atomic(w, i, c, Rmw::Dec, false);
    "atomic_add_f32" => |w, i, c| atomic(w, i, c, Rmw::AddF32, false);
    "atomic_pk_add_f16" => |w, i, c| atomic(w, i, c, Rmw::PkAddF16, false);
    "atomic_pk_add_bf16" => |w, i, c| atomic(w, i, c, Rmw::PkAddBf16, false);
    "atomic_swap_x2" => |w, i, c| atomic(w, i, c, Rmw::Swap, true);
    "atomic_cmpswap_x2" => |w, i, c| atomic(w, i, c, Rmw::CmpSwap, true);
    "atomic_add_x2" => |w, i, c| atomic(w, i, c, Rmw::Add, true);
    "atomic_sub_x2" => |w, i, c| atomic(w, i, c, Rmw::Sub, true);
    "atomic_smin_x2" => |w, i, c| atomic(w, i, c, Rmw::SMin, true);
    "atomic_umin_x2" => |w, i, c| atomic(w, i, c, Rmw::UMin, true);
    "atomic_smax_x2" => |w, i, c| atomic(w, i, c, Rmw::SMax, true);
    "atomic_umax_x2" => |w, i, c| atomic(w, i, c, Rmw::UMax, true);
    "atomic_and_x2" => |w, i, c| atomic(w, i, c, Rmw::And, true);
    "atomic_or_x2" => |w, i, c| atomic(w, i, c, Rmw::Or, true);
    "atomic_xor_x2" => |w, i, c| atomic(w, i, c, Rmw::Xor, true);
    "atomic_inc_x2" => |w, i, c| atomic(w, i, c, Rmw::Inc, true);
    "atomic_dec_x2" => |w, i, c| atomic(w, i, c, Rmw::Dec, true);
    "atomic_add_f64" => |w, i, c| atomic(w, i, c, Rmw::AddF64, true);
    "atomic_min_f64" => |w, i, c| atomic(w, i, c, Rmw::MinF64, true);
    "atomic_max_f64" => |w, i, c| atomic(w, i, c, Rmw::MaxF64, true);
}

fn buffer_wbl2(_: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> R {
    Ok(())
}

/// Cache maintenance: functional no-ops (the model has no caches; every
/// access goes to the one memory). `buffer_invl2` is gfx90a's L2 invalidate, which LLVM emits after a
/// system-scope acquire (AMDGPUUsage, "Memory Model GFX90A": `buffer_invl2;
/// buffer_wbinvl1_vol`); gfx942 spells it `buffer_inv sc1`.
const CACHE: &[(&str, Exec)] = &[
    ("buffer_wbl2", buffer_wbl2),
    ("buffer_inv", buffer_wbl2),
    ("buffer_invl2", buffer_wbl2),
    ("buffer_wbinvl1", buffer_wbl2),
    ("buffer_wbinvl1_vol", buffer_wbl2),
    // GFX11's GL0/GL1 invalidates and GFX12's scoped invalidate and
    // write-back (AMDGPUUsage, "Memory Model GFX10-GFX11", "... GFX12").
    ("buffer_gl0_inv", buffer_wbl2),
    ("buffer_gl1_inv", buffer_wbl2),
    ("global_inv", buffer_wbl2),
    ("global_wb", buffer_wbl2),
    ("global_wbinv", buffer_wbl2),
];

/// The loads to LDS of gfx942 and gfx950 (separate opcodes there), by
/// GLOBAL and SCRATCH, and the bytes each moves ([`load_to_lds`]).
macro_rules! lds_dma {
    ($($suffix:literal => $size:literal;)*) => {
        const LDS_DMA: &[(&str, Exec)] = &[$(
            (concat!("global_load_lds_", $suffix), |w, i, c| load_to_lds(w, i, c, $size)),
            (concat!("scratch_load_lds_", $suffix), |w, i, c| load_to_lds(w, i, c, $size)),
        )*];
    };
}

lds_dma! {
    "ubyte" => 1;
    "sbyte" => 1;
    "ushort" => 2;
    "sshort" => 2;
    "dword" => 4;
    "dwordx3" => 12;
    "dwordx4" => 16;
}

/// Every FLAT/GLOBAL/SCRATCH executor.
pub const OPS: &[&[(&str, Exec)]] = &[MEM, CACHE, LDS_DMA];

#[cfg(test)]
mod tests {

    use super::*;
    use crate::decode::Target;
    use crate::exec::run_words_in;
    use crate::memory::Memory;
    use crate::wave::Scratch;

    /// Every d16 load form (DS, FLAT, GLOBAL, SCRATCH, MUBUF; lo and hi;
    /// u8, i8, u16), on both simulated targets: the value lands in its half
    /// and the other half is zeroed (SRAMECC, see [`d16`]). Encodings from
    /// LLVM's assembler (`llc` of module asm, read back with
    /// `llvm-objdump`); the same words on gfx90a and gfx942 except
    /// SCRATCH, whose SVE bit gfx942 sets.
    #[test]
    fn every_d16_load_form_writes_its_half_and_zeroes_the_other() {
        // Memory bytes 0x81 0x8F at the loaded address: u8 0x0081, i8
        // 0xFF81, u16 0x8F81.
        let forms: [(&str, [u32; 2], [u32; 2], u32); 30] = [
            (
                "global_load_ubyte_d16",
                [0xDC80_8008, 0x047F_0002],
                [0; 2],
                0x0081,
            ),
            (
                "flat_load_ubyte_d16",
                [0xDC80_0008, 0x0400_0002],
                [0; 2],
                0x0081,
            ),
            (
                "scratch_load_ubyte_d16",
                [0xDC80_4008, 0x047F_0002],
                [0xDC80_6008, 0x047F_0002],
                0x0081,
            ),
            (
                "buffer_load_ubyte_d16",
                [0xE080_1008, 0x8002_0402],
                [0; 2],
                0x0081,
            ),
            (
                "global_load_ubyte_d16_hi",
                [0xDC84_8008, 0x047F_0002],
                [0; 2],
                0x0081,
            ),
            (
                "flat_load_ubyte_d16_hi",
                [0xDC84_0008, 0x0400_0002],
                [0; 2],
                0x0081,
            ),
            (
                "scratch_load_ubyte_d16_hi",
                [0xDC84_4008, 0x047F_0002],
                [0xDC84_6008, 0x047F_0002],
                0x0081,
            ),
            (
                "buffer_load_ubyte_d16_hi",
                [0xE084_1008, 0x8002_0402],
                [0; 2],
                0x0081,
            ),
            (
                "global_load_sbyte_d16",
                [0xDC88_8008, 0x047F_0002],
                [0; 2],
                0xFF81,
            ),
            (
                "flat_load_sbyte_d16",
                [0xDC88_0008, 0x0400_0002],
                [0; 2],
                0xFF81,
            ),
            (
                "scratch_load_sbyte_d16",
                [0xDC88_4008, 0x047F_0002],
                [0xDC88_6008, 0x047F_0002],
                0xFF81,
            ),
            (
                "buffer_load_sbyte_d16",
                [0xE088_1008, 0x8002_0402],
                [0; 2],
                0xFF81,
            ),
            (
                "global_load_sbyte_d16_hi",
                [0xDC8C_8008, 0x047F_0002],
                [0; 2],
                0xFF81,
            ),
            (
                "flat_load_sbyte_d16_hi",
                [0xDC8C_0008, 0x0400_0002],
                [0; 2],
                0xFF81,
            ),
            (
                "scratch_load_sbyte_d16_hi",
                [0xDC8C_4008, 0x047F_0002],
                [0xDC8C_6008, 0x047F_0002],
                0xFF81,
            ),
            (
                "buffer_load_sbyte_d16_hi",
                [0xE08C_1008, 0x8002_0402],
                [0; 2],
                0xFF81,
            ),
            (
                "global_load_short_d16",
                [0xDC90_8008, 0x047F_0002],
                [0; 2],
                0x8F81,
            ),
            (
                "flat_load_short_d16",
                [0xDC90_0008, 0x0400_0002],
                [0; 2],
                0x8F81,
            ),
            (
                "scratch_load_short_d16",
                [0xDC90_4008, 0x047F_0002],
                [0xDC90_6008, 0x047F_0002],
                0x8F81,
            ),
            (
                "buffer_load_short_d16",
                [0xE090_1008, 0x8002_0402],
                [0; 2],
                0x8F81,
            ),
            (
                "global_load_short_d16_hi",
                [0xDC94_8008, 0x047F_0002],
                [0; 2],
                0x8F81,
            ),
            (
                "flat_load_short_d16_hi",
                [0xDC94_0008, 0x0400_0002],
                [0; 2],
                0x8F81,
            ),
            (
                "scratch_load_short_d16_hi",
                [0xDC94_4008, 0x047F_0002],
                [0xDC94_6008, 0x047F_0002],
                0x8F81,
            ),
            (
                "buffer_load_short_d16_hi",
                [0xE094_1008, 0x8002_0402],
                [0; 2],
                0x8F81,
            ),
            ("ds_read_u8_d16", [0xD8AC_0008, 0x0400_0002], [0; 2], 0x0081),
            (
                "ds_read_u8_d16_hi",
                [0xD8AE_0008, 0x0400_0002],
                [0; 2],
                0x0081,
            ),
            ("ds_read_i8_d16", [0xD8B0_0008, 0x0400_0002], [0; 2], 0xFF81),
            (
                "ds_read_i8_d16_hi",
                [0xD8B2_0008, 0x0400_0002],
                [0; 2],
                0xFF81,
            ),
            (
                "ds_read_u16_d16",
                [0xD8B4_0008, 0x0400_0002],
                [0; 2],
                0x8F81,
            ),
            (
                "ds_read_u16_d16_hi",
                [0xD8B6_0008, 0x0400_0002],
                [0; 2],
                0x8F81,
            ),
        ];
        let memory = Memory::new();
        let base = memory.alloc(4096, 256).unwrap();
        // Global, flat and buffer read base + 8; scratch lane 0's byte 8,
        // which the swizzle puts in row 2 (64 lanes × 4 bytes a row).
        memory.write_bytes(base + 8, &[0x81, 0x8F]).unwrap();
        memory.write_bytes(base + 512, &[0x81, 0x8F]).unwrap();
        let mut lds = vec![0u8; 64];
        lds[8..10].copy_from_slice(&[0x81, 0x8F]);
        for target in [Target::Gfx90a, Target::Gfx942] {
            for (mnemonic, words, gfx942_words, value) in forms {
                let words = if target == Target::Gfx942 && gfx942_words != [0; 2] {
                    gfx942_words
                } else {
                    words
                };
                let mut w = Wave::new(16, 0);
                w.set_exec(1);
                w.v[4][0] = 0x1234_5678;
                // v[2:3]: the address (global, flat); v2: 0 (scratch, the
                // buffer's offen offset, the DS address).
                let (v2, v3) = if mnemonic.starts_with("global") || mnemonic.starts_with("flat") {
                    (base as u32, (base >> 32) as u32)
                } else {
                    (0, 0)
                };
                (w.v[2][0], w.v[3][0]) = (v2, v3);
                // s[8:11]: a raw V# over the allocation.
                w.s[8..12].copy_from_slice(&[base as u32, (base >> 32) as u32, 4096, 0]);
                w.scratch = Scratch {
                    base,
                    lane_bytes: 16,
                };
                run_words_in(&memory, target, &mut w, &words, mnemonic, &mut lds)
                    .unwrap_or_else(|e| panic!("{target:?} {mnemonic}: {e}"));
                let want = if mnemonic.ends_with("_hi") {
                    value << 16
                } else {
                    value
                };
                assert_eq!(w.v[4][0], want, "{target:?} {mnemonic}: {:#x}", w.v[4][0]);
            }
        }
    }

    /// gfx942's byte, short and dword loads to LDS (words from `llc`
    /// and `llvm-objdump --mcpu=gfx942`): each lane's bytes land at
    /// M0 + OFFSET + 4·lane, only their own size, the rest of the slot
    /// kept; the offset moves the source too, and SADDR forms add the
    /// lane's 32-bit VGPR offset. An LDS place past the end is skipped.
    #[test]
    fn sub_dword_loads_to_lds_write_their_own_size_at_m0_plus_four_per_lane() {
        let memory = Memory::new();
        let base = memory.alloc(4096, 256).unwrap();
        let bytes: Vec<u8> = (0..4096u32).map(|b| (b * 7 + 3) as u8).collect();
        memory.write_bytes(base, &bytes).unwrap();
        // (mnemonic, words, bytes moved, offset, SADDR form)
        let forms: [(&str, [u32; 2], usize, i64, bool); 3] = [
            (
                "global_load_lds_ushort",
                [0xDCA0_8008, 0x007F_0002],
                2,
                8,
                false,
            ),
            (
                "global_load_lds_dword",
                [0xDCA8_9FFC, 0x0004_0002],
                4,
                -4,
                true,
            ),
            (
                "global_load_lds_sbyte",
                [0xDC9C_8000, 0x007F_0002],
                1,
                0,
                false,
            ),
        ];
        for (mnemonic, words, size, offset, saddr) in forms {
            let mut w = Wave::new(8, 0);
            w.set_exec(0xFFFF_FFFF_FFFF_FFF0); // lanes 0-3 off
            // Lane l reads at base + 16 + 12·l (+ offset).
            for l in 0..LANES {
                let a = base + 16 + 12 * l as u64;
                if saddr {
                    w.v[2][l] = (a - base) as u32;
                } else {
                    (w.v[2][l], w.v[3][l]) = (a as u32, (a >> 32) as u32);
                }
            }
            w.s[4..6].copy_from_slice(&[base as u32, (base >> 32) as u32]);
            w.s[usize::from(M0)] = 0x40;
            let mut lds = vec![0xEEu8; 0x40 + 4 * 60 + 2];
            run_words_in(&memory, Target::Gfx942, &mut w, &words, mnemonic, &mut lds)
                .unwrap_or_else(|e| panic!("{mnemonic}: {e}"));
            for l in 0..LANES {
                let slot = (0x40 + offset + 4 * l as i64) as usize;
                let from = (16 + 12 * l as i64 + offset) as usize;
                for k in 0..4 {
                    let Some(&got) = lds.get(slot + k) else {
                        continue;
                    };
                    // Lanes off, bytes past the size and places past the
                    // end keep their value; lane 60's dword does not fit.
                    let fits = slot + size <= lds.len();
                    let want = if l >= 4 && k < size && fits {
                        bytes[from + k]
                    } else {
                        0xEE
                    };
                    assert_eq!(got, want, "{mnemonic} lane {l} byte {k}");
                }
            }
        }
    }

    #[test]
    fn a_processor_without_sramecc_keeps_the_other_half() {
        assert_eq!(d16(true, 0x1234_5678, 0xFF81, false), 0x1234_FF81);
        assert_eq!(d16(true, 0x1234_5678, 0xFF81, true), 0xFF81_5678);
        assert_eq!(d16(false, 0x1234_5678, 0xFF81, false), 0x0000_FF81);
        assert_eq!(d16(false, 0x1234_5678, 0xFF81, true), 0xFF81_0000);
        // Only the low 16 bits of the loaded value count.
        assert_eq!(d16(true, 0, 0xFFFF_8F81, false), 0x8F81);
    }

    #[test]
    fn a_private_dword_across_a_dword_boundary_is_split_by_the_swizzle() {
        let memory = Memory::new();
        let lane_bytes = 16u32;
        let base = memory
            .alloc(LANES as u64 * u64::from(lane_bytes), 256)
            .unwrap();
        let mut w = Wave::new(8, 0);
        w.set_exec(u64::MAX);
        w.scratch = Scratch { base, lane_bytes };
        w.v[1] = std::array::from_fn(|l| 0x4433_2211 + l as u32);
        // scratch_store_dword off, v1, off offset:2: bytes 2..4 of the
        // lane's dword 0 and bytes 0..2 of its dword 1, 256 bytes on.
        run_words_in(
            &memory,
            Target::Gfx942,
            &mut w,
            &[0xDC70_4002, 0x007F_0100],
            "scratch_store_dword",
            &mut [],
        )
        .unwrap();
        let dword = |a: u64| {
            let mut b = [0u8; 4];
            memory.read_bytes(a, &mut b).unwrap();
            u32::from_le_bytes(b)
        };
        for l in 0..LANES as u64 {
            let v = 0x4433_2211 + l as u32;
            assert_eq!(dword(base + 4 * l) >> 16, v & 0xffff, "lane {l}");
            assert_eq!(dword(base + 256 + 4 * l) & 0xffff, v >> 16, "lane {l}");
        }
        // scratch_load_dword v2, off, off offset:2 reads the same bytes back.
        run_words_in(
            &memory,
            Target::Gfx942,
            &mut w,
            &[0xDC50_4002, 0x027F_0000],
            "scratch_load_dword",
            &mut [],
        )
        .unwrap();
        assert_eq!(w.v[2], w.v[1]);
    }
}
