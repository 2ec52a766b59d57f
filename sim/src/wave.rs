//! A wavefront's architectural state and typed operand access.
//!
//! The scalar register file is indexed by operand code (CDNA3 ISA,
//! "Scalar operands"): SGPRs 0..=101, FLAT_SCRATCH 102/103, XNACK_MASK
//! 104/105, VCC 106/107, TTMPs 108..=123, M0 124, EXEC 126/127. Vector
//! registers are stored register-major (`v[r][lane]`) so a VALU op is a
//! tight loop over 64 lanes. gfx90a/gfx942 have a unified register file of
//! architectural VGPRs and AGPRs; each is sized from the kernel's metadata
//! and an access beyond it is a fault, not a silent read of zeros.
//!
//! Inline constants depend on the operand's type: `1.0` is `0x3f800000` to
//! a 32-bit operand, `0x3c00` to a 16-bit one and `0x3ff0000000000000` to a
//! 64-bit float one; integer constants are sign-extended to the width.

use crate::decode::inst::code;
use crate::decode::{Ext, Inst, Src};
use crate::exec::{dpp, sdwa};
use crate::fault::Fault;
use crate::lanes::{LANES, Lanes, WaveSize};

/// Operand types as far as inline constants and literals care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 32-bit integer or float: float constants are f32 bit patterns.
    B32,
    /// 16-bit: float constants are f16 bit patterns.
    B16,
    /// 64-bit unsigned or untyped: a literal is zero-extended.
    U64,
    /// 64-bit signed (`s_ashr_i64`, `v_cmp_*_i64`, ...): a literal is
    /// sign-extended (LLVM's OPERAND_REG_IMM_I64).
    I64,
    /// 64-bit float: constants are f64; a literal is the high dword.
    F64,
}

/// Flat-address apertures (high dword of the 64-bit address). Chosen as
/// ROCr does on x86-64 hosts: above the 47-bit user address space, so no
/// host pointer falls in them.
/// The LDS (shared) aperture: flat addresses whose high dword is this
/// address the workgroup's LDS (`src_shared_base`).
pub const SHARED_APERTURE_HI: u32 = 0x1_0000;
/// The scratch (private) aperture: flat addresses whose high dword is
/// this address the lane's scratch (`src_private_base`).
pub const PRIVATE_APERTURE_HI: u32 = 0x2_0000;

/// Scheduling state of a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Has instructions to run.
    Running,
    /// Waiting at `s_barrier` for the rest of the workgroup.
    Barrier,
    /// Ran `s_endpgm`.
    Ended,
    /// Runs as lanes 32..64 of the wave before it (a wave32 pair,
    /// `crate::pair`); scheduled again once the pair splits.
    Paired,
}

/// The per-lane private (scratch) segment of a wave: lane `l`'s byte `o`
/// lives at `base + (o / 4) * 256 + l * 4 + o % 4` — the hardware's
/// swizzle with 4-byte elements and a 64-lane stride, so MUBUF accesses
/// through a swizzled V# and flat/scratch accesses agree. A wave32 wave
/// keeps the same stride (the upper half of each 256-byte row unused): the
/// layout is the simulator's, seen only through the instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scratch {
    /// Device address of the wave's scratch block (lane 0's byte 0).
    pub base: u64,
    /// Bytes per lane.
    pub lane_bytes: u32,
}

impl Scratch {
    /// The backing address of lane `lane`'s private byte `offset`, if in
    /// range for `size` bytes.
    #[inline]
    pub fn address(&self, lane: usize, offset: u64, size: u64) -> Option<u64> {
        if offset.checked_add(size)? > u64::from(self.lane_bytes) {
            return None;
        }
        Some(self.base + (offset / 4) * 256 + lane as u64 * 4 + offset % 4)
    }
}

/// A wavefront.
#[derive(Clone, Debug)]
pub struct Wave {
    /// Index of the next instruction in the program.
    pub pc: usize,
    /// Scalar operand space 0..=127 (see module doc), boxed so that a
    /// wave32 pair exchanges its two waves' ([`Self::swap_banks`]) by
    /// pointer.
    pub s: Box<[u32; 128]>,
    /// The scalar condition code.
    pub scc: bool,
    /// Architectural VGPRs, as many as the kernel allocates.
    pub v: Vec<Lanes>,
    /// Accumulation VGPRs (AGPRs), as many as the kernel allocates.
    pub a: Vec<Lanes>,
    /// MODE register (denormal and round modes, as set from the kernel
    /// descriptor and by `s_setreg`).
    pub mode: u32,
    /// TRAPSTS register (exception status), as `s_getreg`/`s_setreg` see
    /// it.
    pub trapsts: u32,
    /// GFX12 SCHED_MODE register, as `s_getreg`/`s_setreg` see it
    /// (`exec::salu`: it changes how the hardware checks dependencies,
    /// not what an instruction computes).
    pub sched_mode: u32,
    /// Running, at a barrier or ended.
    pub status: Status,
    /// Wave index within its workgroup.
    pub id: u32,
    /// 32 or 64 lanes (the kernel descriptor's choice; GFX9: 64), or a
    /// wave32 pair: [`Self::size`], [`Self::set_size`].
    size: WaveSize,
    /// Where the lanes' private segments are.
    pub scratch: Scratch,
    /// Instructions executed.
    pub executed: u64,
    /// The lanes EXEC can name: the wave's, or in a wave32 pair running
    /// an instruction once per half (`crate::pair::Pairing::Halves`), that
    /// half's ([`Self::set_half`]).
    limit: u64,
    /// The register EXEC's lanes 32..64 come from: EXEC_HI, or EXEC_LO
    /// again in a pair running one half (that wave's own mask, placed in
    /// its half).
    exec_hi: usize,
    /// In a wave32 pair, the second wave's scalar operand space (`s` holds
    /// the first's; [`Self::swap_banks`] exchanges them, so an instruction
    /// run for the second wave alone sees its own in `s`).
    pub s_hi: Box<[u32; 128]>,
    /// In a wave32 pair, the second wave's SCC (as `s_hi`).
    pub scc_hi: bool,
    /// In a wave32 pair running a vector instruction once for both waves:
    /// lane masks are banked, lanes 0..32 from `s` and 32..64 from
    /// `s_hi` (EXEC, VCC, carries, compares). A pair running both halves
    /// unbanked is a mirror ([`Self::mirrored`]): both waves' scalar state
    /// is `s` (`s_hi` is stale), each lane mask one SGPR read for both.
    banked: bool,
}

impl Wave {
    /// A wave at pc 0 with zeroed registers: `vgprs` VGPRs and `agprs`
    /// AGPRs per lane.
    pub fn new(vgprs: usize, agprs: usize) -> Self {
        Self {
            pc: 0,
            s: Box::new([0; 128]),
            scc: false,
            v: vec![[0; LANES]; vgprs],
            a: vec![[0; LANES]; agprs],
            mode: 0,
            trapsts: 0,
            sched_mode: 0,
            status: Status::Running,
            id: 0,
            size: WaveSize::W64,
            scratch: Scratch::default(),
            executed: 0,
            limit: u64::MAX,
            exec_hi: code::EXEC_HI as usize,
            s_hi: Box::new([0; 128]),
            scc_hi: false,
            banked: false,
        }
    }

    /// The EXEC mask: 64 bits in wave64, EXEC_LO in wave32 (EXEC_HI is
    /// not a lane mask there, RDNA3 ISA "Wave32 and Wave64"); in a pair
    /// each wave's EXEC_LO in its half (run once for both: banked), or the
    /// running wave's in its half ([`Self::set_half`]).
    #[inline]
    pub fn exec(&self) -> u64 {
        let lo = u64::from(self.s[code::EXEC_LO as usize]);
        let hi = if self.banked {
            self.s_hi[code::EXEC_LO as usize]
        } else {
            self.s[self.exec_hi & 0x7F]
        };
        (lo | u64::from(hi) << 32) & self.limit
    }

    /// 32 or 64 lanes, or a wave32 pair.
    #[inline]
    pub fn size(&self) -> WaveSize {
        self.size
    }

    /// Makes this a wave32 or wave64 wave, or a wave32 pair.
    pub fn set_size(&mut self, size: WaveSize) {
        self.size = size;
        self.limit = size.full();
        self.exec_hi = usize::from(match size {
            WaveSize::Pair => code::EXEC_LO,
            WaveSize::W32 | WaveSize::W64 => code::EXEC_HI,
        });
        self.banked = size == WaveSize::Pair;
    }

    /// Whether this pair is a mirror: both waves' scalar state is `s`
    /// (equal since they joined, kept so by every instruction the pair ran
    /// once), `s_hi` stale. A mirror pair needs no comparison of the two
    /// waves' SGPRs to run an instruction once.
    #[inline]
    pub fn mirrored(&self) -> bool {
        self.size == WaveSize::Pair && !self.banked && self.limit == u64::MAX
    }

    /// Makes this pair a mirror ([`Self::mirrored`]): its two waves' scalar
    /// states must be equal (`crate::pair::join` checks it; a mirror that
    /// ran a scalar instruction once stays one).
    pub fn mirror(&mut self) {
        self.banked = false;
    }

    /// Ends a mirror: the second wave's scalar state becomes a copy of the
    /// shared one, and lane masks are banked again. Nothing for a pair
    /// that is no mirror.
    #[inline]
    pub fn unmirror(&mut self) {
        if self.mirrored() {
            *self.s_hi = *self.s;
            self.scc_hi = self.scc;
            self.banked = true;
        }
    }

    /// In a wave32 pair, limits EXEC to the lanes of `half` (one wave's,
    /// `crate::pair::HALVES`, whose scalar state must then be in `s`:
    /// [`Self::swap_banks`]), or with `u64::MAX` runs both halves again,
    /// each wave's lane masks from its own bank.
    pub fn set_half(&mut self, half: u64) {
        self.limit = self.size.full() & half;
        self.banked = self.size == WaveSize::Pair && half == u64::MAX;
    }

    /// In a wave32 pair, exchanges the two waves' scalar state (`s` and
    /// `s_hi`, SCC and `scc_hi`).
    pub fn swap_banks(&mut self) {
        std::mem::swap(&mut self.s, &mut self.s_hi);
        std::mem::swap(&mut self.scc, &mut self.scc_hi);
    }

    /// The first storage lane of the running wave: 32 for the second wave
    /// of a pair running alone ([`Self::set_half`]), else 0. What reads a
    /// whole wave32's registers (WMMA) reads lanes `base..base + 32`.
    #[inline]
    pub fn lane_base(&self) -> usize {
        if self.size == WaveSize::Pair && self.limit & 1 == 0 {
            32
        } else {
            0
        }
    }

    /// In a pair running one half, that half's 32 bits of a 64-lane mask.
    #[inline]
    fn own_half(&self, v: u64) -> u32 {
        (v >> self.lane_base()) as u32
    }

    /// Sets the EXEC mask (EXEC_LO only in wave32).
    #[inline]
    pub fn set_exec(&mut self, v: u64) {
        self.set_lane_mask(code::EXEC_LO, v);
    }

    /// The VCC mask (VCC_LO in wave32).
    #[inline]
    pub fn vcc(&self) -> u64 {
        self.lane_mask_at(code::VCC_LO)
    }

    /// The lane mask in the scalar register(s) at operand code `r`: an
    /// SGPR pair in wave64, one SGPR in wave32.
    #[inline]
    pub fn lane_mask_at(&self, r: u8) -> u64 {
        if self.size == WaveSize::W64 {
            return self.s64(r);
        }
        let r = usize::from(r & 0x7F);
        if self.banked {
            // A pair run once: each wave's in its half.
            return u64::from(self.s[r]) | u64::from(self.s_hi[r]) << 32;
        }
        // One SGPR: a pair running one half reads it for that half (and
        // the other, which EXEC leaves out), wave32 for its own.
        twice(self.s[r]) & self.size.full()
    }

    /// A lane-mask source operand (a carry in, `v_cndmask_b32`'s
    /// selector): 64 bits in wave64, 32 in wave32.
    #[inline]
    pub fn lane_mask(&self, src: Src) -> Result<u64, Fault> {
        if self.size == WaveSize::W64 {
            return self.s64_of(src, Ty::U64);
        }
        if let (true, Src::Sgpr(r)) = (self.banked, src) {
            return Ok(self.lane_mask_at(r));
        }
        let full = self.size.full();
        self.s32_of(src, Ty::B32).map(|m| twice(m) & full)
    }

    /// Writes a lane mask to the scalar register(s) at `r`: a pair in
    /// wave64, one SGPR in wave32 (the VOPC/VOP3 `sdst` of RDNA's wave32).
    /// In a wave32 pair each wave gets its own half: run once, the second
    /// wave's into `s_hi`; run one half, that half's into `s`.
    #[inline]
    pub fn set_lane_mask(&mut self, r: u8, v: u64) {
        match self.size {
            WaveSize::W64 => self.set_s64(r, v),
            WaveSize::W32 => self.set_s32(r, v as u32),
            WaveSize::Pair if self.banked || self.mirrored() => {
                let (lo, hi) = (v as u32, (v >> 32) as u32);
                if lo != hi {
                    // The waves' masks part: each its own state from here.
                    self.unmirror();
                }
                self.set_s32(r, lo);
                if self.banked
                    && r != code::NULL
                    && let Some(x) = self.s_hi.get_mut(usize::from(r))
                {
                    *x = hi;
                }
            }
            WaveSize::Pair => self.set_s32(r, self.own_half(v)),
        }
    }

    /// The lane a lane-select operand names (`v_readlane_b32`'s SSRC1,
    /// a permute's address / 4): its low 5 or 6 bits.
    #[inline]
    pub fn lane_select(&self, v: u32) -> usize {
        // A pair runs a lane-selecting instruction one wave at a time
        // (`crate::pair`): the lane of the running wave's half.
        match self.size {
            WaveSize::Pair => self.lane_base() + (v as usize & 31),
            s => v as usize & (s.lanes() - 1),
        }
    }

    /// The 64-bit value of the scalar pair at operand code `r` (rounded
    /// down to even).
    #[inline]
    pub fn s64(&self, r: u8) -> u64 {
        let r = usize::from(r & 0x7E);
        u64::from(self.s[r]) | u64::from(self.s[r + 1]) << 32
    }

    /// Writes the scalar pair starting at operand code `r`; a pair starting
    /// at 127, or NULL, is ignored.
    #[inline]
    pub fn set_s64(&mut self, r: u8, v: u64) {
        let r = usize::from(r & 0x7F);
        if r < 127 && r != usize::from(code::NULL) {
            self.s[r] = v as u32;
            self.s[r + 1] = (v >> 32) as u32;
        }
    }

    /// Writes the scalar at operand code `r` (codes past 127 and NULL, which
    /// reads as zero, are ignored: GFX11+ code names NULL as a destination
    /// it does not want, e.g. a carry out).
    #[inline]
    pub fn set_s32(&mut self, r: u8, v: u32) {
        if r == code::NULL {
            return;
        }
        if let Some(x) = self.s.get_mut(usize::from(r)) {
            *x = v;
        }
    }

    /// A VGPR (or AGPR with `acc`), checked against the allocation.
    #[inline]
    pub fn vreg(&self, r: u16, acc: bool) -> Result<&Lanes, Fault> {
        let file = if acc { &self.a } else { &self.v };
        file.get(usize::from(r))
            .ok_or(Fault::Register { index: r, acc })
    }

    /// A VGPR (or AGPR with `acc`) to write, checked against the
    /// allocation.
    #[inline]
    pub fn vreg_mut(&mut self, r: u16, acc: bool) -> Result<&mut Lanes, Fault> {
        let file = if acc { &mut self.a } else { &mut self.v };
        file.get_mut(usize::from(r))
            .ok_or(Fault::Register { index: r, acc })
    }

    /// The value of a special scalar operand code.
    fn special(&self, c: u8) -> Result<u32, Fault> {
        Ok(match c {
            code::VCCZ => u32::from(self.vcc() == 0),
            code::EXECZ => u32::from(self.exec() == 0),
            code::SCC => u32::from(self.scc),
            code::SHARED_BASE => SHARED_APERTURE_HI,
            code::SHARED_LIMIT => SHARED_APERTURE_HI,
            code::PRIVATE_BASE => PRIVATE_APERTURE_HI,
            code::PRIVATE_LIMIT => PRIVATE_APERTURE_HI,
            code::POPS_EXITING_WAVE_ID => 0,
            _ => return Err(Fault::Operand { code: c }),
        })
    }

    /// A scalar 32-bit operand.
    #[inline]
    pub fn s32_of(&self, src: Src, ty: Ty) -> Result<u32, Fault> {
        match src {
            Src::Sgpr(r) => Ok(self.s[usize::from(r & 0x7F)]),
            Src::Inline(c) => Ok(inline32(c, ty)),
            Src::Literal(l) => Ok(l),
            Src::Special(c) => self.special(c),
            Src::Vgpr(r) | Src::Agpr(r) => Err(Fault::Operand { code: r as u8 }),
            Src::None => Ok(0),
        }
    }

    /// A scalar 64-bit operand.
    #[inline]
    pub fn s64_of(&self, src: Src, ty: Ty) -> Result<u64, Fault> {
        match src {
            Src::Sgpr(r) => Ok(self.s64(r)),
            Src::Inline(c) => Ok(inline64(c, ty)),
            Src::Literal(l) => Ok(literal64(l, ty)),
            // Read as 64 bits, the aperture bases give the aperture's
            // address, the value in the high dword: LLVM materialises a
            // segment aperture with `s_mov_b64 s[n:n+1], src_private_base`
            // and uses the high register (`getSegmentAperture`, whose note
            // says these registers read right only as 64-bit operands).
            Src::Special(c @ (code::SHARED_BASE | code::PRIVATE_BASE)) => {
                Ok(u64::from(self.special(c)?) << 32)
            }
            Src::Special(c) => self.special(c).map(u64::from),
            Src::Vgpr(r) | Src::Agpr(r) => Err(Fault::Operand { code: r as u8 }),
            Src::None => Ok(0),
        }
    }

    /// A vector 32-bit source as lanes, with SDWA selection and DPP
    /// movement applied (source `n` of `i`), no float modifiers.
    #[inline]
    pub fn lanes(&self, i: &Inst, n: usize, ty: Ty) -> Result<Lanes, Fault> {
        self.lanes_in(i, n, ty, &mut None).copied()
    }

    /// [`Self::lanes`] without a copy where it can: the register itself
    /// when nothing changes it (most sources), else the lanes built in
    /// `buf` (a scalar broadcast, SDWA selection, DPP movement): a plain
    /// register source costs no copy of its 64 lanes.
    #[inline(always)]
    pub fn lanes_in<'a>(
        &'a self,
        i: &Inst,
        n: usize,
        ty: Ty,
        buf: &'a mut Option<Lanes>,
    ) -> Result<&'a Lanes, Fault> {
        let src = i.src[n];
        let moved = match i.ext {
            Ext::Sdwa(_) => n < 2,
            Ext::Dpp(_) | Ext::Dpp8(_) => n == 0,
            // A VOPD's X sources are the instruction's own.
            Ext::None | Ext::Mai(_) | Ext::Vopd(_) => false,
        };
        if !moved {
            return match src {
                Src::Vgpr(r) => self.vreg(r, false),
                Src::Agpr(r) => self.vreg(r, true),
                _ => Ok(buf.insert([self.s32_of(src, ty)?; LANES])),
            };
        }
        let raw = match src {
            Src::Vgpr(r) => *self.vreg(r, false)?,
            Src::Agpr(r) => *self.vreg(r, true)?,
            _ => [self.s32_of(src, ty)?; LANES],
        };
        Ok(buf.insert(match i.ext {
            Ext::Sdwa(s) => {
                let (sel, sext) = if n == 0 {
                    (s.src0_sel, s.src0_sext)
                } else {
                    (s.src1_sel, s.src1_sext)
                };
                raw.map(|x| sdwa::select(x, sel, sext))
            }
            Ext::Dpp(d) => dpp::permute(&raw, d.ctrl, d.bound_ctrl),
            Ext::Dpp8(d) => dpp::permute8(&raw, d, self.exec()),
            Ext::None | Ext::Mai(_) | Ext::Vopd(_) => raw,
        }))
    }

    /// A vector 64-bit source as lanes (register pairs).
    #[inline]
    pub fn lanes64(&self, i: &Inst, n: usize, ty: Ty) -> Result<[u64; LANES], Fault> {
        let mut out = [0; LANES];
        self.lanes64_in(i, n, ty, &mut out)?;
        Ok(out)
    }

    /// [`Self::lanes64`] written into `out` (the wave's lanes only).
    #[inline(always)]
    pub fn lanes64_in(
        &self,
        i: &Inst,
        n: usize,
        ty: Ty,
        out: &mut [u64; LANES],
    ) -> Result<(), Fault> {
        let src = i.src[n];
        match src {
            Src::Vgpr(r) | Src::Agpr(r) => {
                let acc = matches!(src, Src::Agpr(_));
                let lo = self.vreg(r, acc)?;
                let hi = self.vreg(r + 1, acc)?;
                self.size
                    .fill(out, |l| u64::from(lo[l]) | u64::from(hi[l]) << 32);
            }
            _ => {
                let x = self.s64_of(src, ty)?;
                self.size.fill(out, |_| x);
            }
        }
        // DPP64 (gfx90a/gfx942) moves source 0's whole 64-bit lanes.
        if let Ext::Dpp(d) = i.ext
            && n == 0
        {
            let v = *out;
            self.size
                .fill(out, |l| dpp::source_lane(d.ctrl, l).map_or(0, |s| v[s]));
        }
        Ok(())
    }

    /// Writes `vals` to VGPR `r` in the lanes of `mask`.
    #[inline]
    pub fn write_lanes(&mut self, r: u16, vals: &Lanes, mask: u64) -> Result<(), Fault> {
        put_lanes(self.vreg_mut(r, false)?, vals, mask);
        Ok(())
    }

    /// Writes `out[k]` to register `first + k` (AGPRs with `acc`) in the
    /// lanes of `mask`, after checking every register exists, so a fault
    /// writes nothing: how memory instructions return their data.
    pub fn write_regs(
        &mut self,
        first: u16,
        acc: bool,
        out: &[Lanes],
        mask: u64,
    ) -> Result<(), Fault> {
        if out.is_empty() {
            return Ok(());
        }
        self.vreg(first + out.len() as u16 - 1, acc)?;
        for (k, vals) in out.iter().enumerate() {
            put_lanes(self.vreg_mut(first + k as u16, acc)?, vals, mask);
        }
        Ok(())
    }

    /// Writes a 64-bit result to the VGPR pair at `r` in the lanes of `mask`.
    #[inline]
    pub fn write_lanes64(&mut self, r: u16, vals: &[u64; LANES], mask: u64) -> Result<(), Fault> {
        let lo: Lanes = self.size.map(|l| vals[l] as u32);
        let hi: Lanes = self.size.map(|l| (vals[l] >> 32) as u32);
        // Check both before writing either, so a fault leaves no half write.
        self.vreg(r + 1, false)?;
        self.write_lanes(r, &lo, mask)?;
        self.write_lanes(r + 1, &hi, mask)
    }
}

/// `d[l] = vals[l]` for the lanes of `mask`: a copy of constant size for
/// a full wave64 or wave32 or either wave of a pair (inlined), of the run
/// for a partial last wave, else lane by lane.
#[inline]
fn put_lanes(d: &mut Lanes, vals: &Lanes, mask: u64) {
    let from = mask.trailing_zeros() as usize & 63;
    let run = mask >> from;
    if mask == u64::MAX {
        *d = *vals;
    } else if mask == 0xFFFF_FFFF {
        d[..32].copy_from_slice(&vals[..32]);
    } else if mask == 0xFFFF_FFFF_0000_0000 {
        d[32..].copy_from_slice(&vals[32..]);
    } else if run & run.wrapping_add(1) == 0 {
        let to = from + run.trailing_ones() as usize;
        d[from..to].copy_from_slice(&vals[from..to]);
    } else {
        for l in 0..LANES {
            if mask >> l & 1 != 0 {
                d[l] = vals[l];
            }
        }
    }
}

/// A wave32 lane mask as both halves of a pair see it.
#[inline]
fn twice(m: u32) -> u64 {
    u64::from(m) | u64::from(m) << 32
}

/// The 32-bit (or 16-bit, by `ty`) value of an inline-constant code.
#[inline]
pub fn inline32(c: u8, ty: Ty) -> u32 {
    match c {
        code::ZERO..=code::INT_MAX => u32::from(c - code::ZERO),
        193..=code::INT_NEG_MAX => (-(i32::from(c) - 192)) as u32,
        _ => match ty {
            Ty::B16 => u32::from(match c {
                240 => 0x3800u16,
                241 => 0xB800,
                242 => 0x3C00,
                243 => 0xBC00,
                244 => 0x4000,
                245 => 0xC000,
                246 => 0x4400,
                247 => 0xC400,
                _ => 0x3118,
            }),
            // A 64-bit float's constant read as a 32-bit value is its high
            // dword; callers asking for 32 bits of an F64 get the f32 form.
            _ => match c {
                240 => 0.5f32.to_bits(),
                241 => (-0.5f32).to_bits(),
                242 => 1.0f32.to_bits(),
                243 => (-1.0f32).to_bits(),
                244 => 2.0f32.to_bits(),
                245 => (-2.0f32).to_bits(),
                246 => 4.0f32.to_bits(),
                247 => (-4.0f32).to_bits(),
                _ => 0x3E22_F983,
            },
        },
    }
}

/// The 64-bit value of an inline-constant code.
#[inline]
pub fn inline64(c: u8, ty: Ty) -> u64 {
    match c {
        code::ZERO..=code::INT_NEG_MAX => i64::from(inline32(c, Ty::B32) as i32) as u64,
        // Float constants of any 64-bit operand are doubles.
        _ => match ty {
            Ty::F64 | Ty::I64 | Ty::U64 => match c {
                240 => 0.5f64.to_bits(),
                241 => (-0.5f64).to_bits(),
                242 => 1.0f64.to_bits(),
                243 => (-1.0f64).to_bits(),
                244 => 2.0f64.to_bits(),
                245 => (-2.0f64).to_bits(),
                246 => 4.0f64.to_bits(),
                247 => (-4.0f64).to_bits(),
                _ => 0x3FC4_5F30_6DC9_C882,
            },
            _ => u64::from(inline32(c, ty)),
        },
    }
}

/// A 32-bit literal as a 64-bit operand: the high dword of a double,
/// sign-extended for signed operands, else zero-extended.
#[inline]
pub fn literal64(l: u32, ty: Ty) -> u64 {
    match ty {
        Ty::F64 => u64::from(l) << 32,
        Ty::I64 => i64::from(l as i32) as u64,
        _ => u64::from(l),
    }
}
