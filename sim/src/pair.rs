//! Wave32 pairs: two wave32 waves of a workgroup run as one 64-lane wave,
//! each keeping its own scalar state.
//!
//! # Why
//!
//! The interpreter's cost per instruction is a fixed part (dispatch, the
//! operands, the write-back) and a part per lane. RDNA kernels run as
//! wave32 (the compiler's choice for gfx10+), so the same work takes twice
//! the waves and twice the fixed parts of wave64: the simulator ran wave32
//! code at 0.6–0.9 of wave64's lane-operations per second. Two waves that
//! execute the same instruction stream can pay the vector fixed part once.
//!
//! # The invariant
//!
//! A pair is wave `2k` (lanes 0..32, in its own register file) with wave
//! `2k + 1` (lanes 32..64 of the same file; its own Wave waits as
//! [`Status::Paired`]). They share the pc, MODE and the register files;
//! each has its own scalar operand space and SCC: the first's in
//! [`Wave::s`], the second's in [`Wave::s_hi`] ([`Wave::swap_banks`]
//! exchanges them). That is exact as long as both waves would be at the
//! same pc, which holds at launch for waves of one workgroup without
//! scratch (the dispatch checks it) and is kept by what each instruction
//! may do:
//!
//! ```text
//!   instruction                   pair runs it                 after
//!   ----------------------------  ---------------------------  -----------------
//!   SALU, SMEM, branches          once per wave (Scalar),      same pc, or split
//!                                 each with its own state
//!   VALU lane-wise, plain         once, 64 lanes (Once), if    lane masks banked:
//!   FLAT/GLOBAL/DS loads and      the SGPRs it reads as data   each wave's half in
//!   stores                        agree, else once per wave    its own state
//!   atomics, WMMA, readlane/      once per wave (Halves), in   each wave its own
//!   writelane/readfirstlane       its half of the lanes, with
//!                                 its own scalar state
//!   lane numbers, scratch, wave   -- split first --            each wave its own
//!   identity, MODE
//! ```
//!
//! Run once for both ([`Pairing::Once`]), a vector instruction reads each
//! wave's lane masks (EXEC, VCC, a carry in, `v_cndmask`'s selector) from
//! its own state into its half and writes each half back to its own wave
//! ([`Wave::set_lane_mask`]); a scalar register read as data is one value
//! for all 64 lanes, so the pair runs it once only when both waves hold
//! the same there ([`Reads`]), else once per wave. A load or store run
//! once that faults runs again once per wave, so that the fault names the
//! wave whose lane faulted (a faulting load writes no register; a store
//! writes again what it wrote). Run once per wave
//! ([`Pairing::Halves`]), the second wave's scalar state is swapped in and
//! EXEC limited to its half ([`Wave::set_half`]); WMMA then reads lanes
//! 32..64 ([`Wave::lane_base`]), and a fault names the wave whose lane
//! faulted, as it would unpaired. A scalar instruction runs as a plain
//! wave32 ([`Pairing::Scalar`]): once, its writes given to both, when both
//! waves hold the same in every register it may touch ([`ScalarRegs`]),
//! else once per wave on its own state.
//!
//! Waves that join with equal scalar state (kernels whose waves differ
//! only in their lanes) start as a mirror ([`Wave::mirrored`]): one state
//! serves both and nothing is compared, until a lane mask's halves differ
//! or an instruction runs once per wave, when the second wave gets its
//! own copy ([`Wave::unmirror`]).
//!
//! What a pair never runs (it splits before, [`Pairing::Split`]): lane
//! numbers counted in a mask or moved across lanes (`v_mbcnt`, permutes,
//! swizzles, DPP, `addtid` forms, loads to LDS at M0 + lane), MFMA, wave
//! identity and MODE (`s_getreg`, `s_setreg`, `s_sendmsg`, the GFX11+
//! `s_denorm_mode`/`s_round_mode`), the per-wave scratch and buffer
//! accesses (MUBUF/MTBUF/SCRATCH, whose swizzle or TID uses the lane
//! number), DS's append, consume, GWS and ordered count, and undecodable
//! words; nor does it go on once a branch sent the waves to different pcs.
//! A split copies lanes 32..64 of every register into the second wave's
//! file and gives it its scalar state and pc; both then run as plain
//! wave32.
//!
//! # What changes, and what does not
//!
//! Results do not: every instruction computes, per lane and per wave,
//! what each wave would have. Scheduling does: the two waves advance in
//! lockstep rather than one quantum after the other, which only a program
//! that races its waves through memory could observe (GPUs promise no
//! order between waves either). The statistics count a pair's instruction
//! as two wave-instructions, as the hardware would have issued. When both
//! waves of a pair would fault, the first fault in lockstep order is the
//! one reported. `Gpu::with_wave32_pairs(false)` (or
//! `AQUEDUCT_SIM_WAVE32_PAIRS=0`) runs every wave32 wave on its own.

use crate::decode::inst::code;
use crate::decode::{Ext, Format, Inst, Src, Target};
use crate::lanes::{LANES, WaveSize};
use crate::wave::{Status, Wave};

/// How a wave32 pair runs an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// Scalar: once per wave, each with its own scalar state, or once for
    /// both when they hold the same in every register it may touch
    /// ([`ScalarRegs`]).
    Scalar(ScalarRegs),
    /// Vector, lane-wise: once for all 64 lanes when both waves hold the
    /// same in the scalar registers it reads as data, else as
    /// [`Pairing::Halves`].
    Once(Reads),
    /// Once per wave, in its own half of the lanes with its own scalar
    /// state.
    Halves,
    /// Not as a pair: split first.
    Split,
}

/// The scalar operands a vector instruction reads as data (not as lane
/// masks, which each wave reads for its own half): operand codes, `NO`
/// where unused, and SCC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    regs: [u8; 4],
    scc: bool,
}

impl Reads {
    const NO: u8 = u8::MAX;

    /// Whether both waves of the pair `w` hold the same in every operand
    /// (a register read as 64 bits included: both dwords of its pair are
    /// compared).
    #[inline]
    pub fn agree(&self, w: &Wave) -> bool {
        let same = |r: u8| {
            r == Self::NO || {
                let r = usize::from(r & 0x7E);
                w.s[r] == w.s_hi[r] && w.s[r + 1] == w.s_hi[r + 1]
            }
        };
        self.regs.iter().all(|&r| same(r)) && (!self.scc || w.scc == w.scc_hi)
    }
}

/// The scalar registers a scalar instruction may read or write, as runs
/// of registers (a superset: VCC, M0 and EXEC, which branches and
/// `s_*_saveexec` read; its sources, as pairs or an SMEM base's four; its
/// destination, two registers or an SMEM load's sixteen), the runs it may
/// write (the destination, and EXEC for the `saveexec`/`wrexec` forms),
/// and SCC; or `never` for one that must run once per wave whatever the
/// state (atomics: each its own; `s_movrel*`: registers by M0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarRegs {
    /// (first register, count), count 0 where unused: the runs read,
    /// then from `written` on the runs written too.
    runs: [(u8, u8); 7],
    written: usize,
    never: bool,
}

impl ScalarRegs {
    /// Whether the instruction may run once for both waves at all (not an
    /// atomic or `s_movrel*`).
    #[inline]
    pub fn once(&self) -> bool {
        !self.never
    }

    /// Whether both waves of the pair `w` hold the same in every register
    /// of the set and in SCC: then one run gives both waves' results.
    #[inline]
    pub fn agree(&self, w: &Wave) -> bool {
        !self.never
            && w.scc == w.scc_hi
            && self.runs.iter().all(|&(from, n)| {
                (usize::from(from)..usize::from(from) + usize::from(n)).all(|r| w.s[r] == w.s_hi[r])
            })
    }

    /// After one run for both ([`Self::agree`]): the second wave's copy of
    /// every register the instruction may have written, and of SCC, is the
    /// first's.
    #[inline]
    pub fn copy_to_second(&self, w: &mut Wave) {
        for &(from, n) in &self.runs[self.written..] {
            for r in usize::from(from)..usize::from(from) + usize::from(n) {
                w.s_hi[r] = w.s[r];
            }
        }
        w.scc_hi = w.scc;
    }

    fn of(inst: &Inst) -> Self {
        let smem = inst.format == Format::Smem;
        // A run of `n` registers from `from`, within the 128.
        let run = |from: u8, n: u8| -> (u8, u8) {
            let from = from & 0x7F;
            (from, n.min(128 - from))
        };
        let mut runs = [(0, 0); 7];
        // Read: VCC, then M0 to EXEC_HI (M0, NULL, EXEC_LO, EXEC_HI).
        runs[0] = run(code::VCC_LO, 2);
        runs[1] = run(code::M0, 4);
        let mut at = 2;
        for src in inst.src {
            if let Src::Sgpr(r) = src {
                runs[at] = run(r & 0x7E, if smem { 4 } else { 2 });
                at += 1;
            }
        }
        // Written (and read: `s_addk`, `s_bitset*` read their destination).
        // SMEM names its SDATA in `vdst` (`exec::smem`); SOPP and SOPC
        // write none (SOPC: SCC alone).
        let written = at;
        runs[at] = match inst.format {
            Format::Smem => run(inst.vdst as u8, 16),
            Format::Sopp | Format::Sopc => (0, 0),
            _ => run(inst.sdst, 2),
        };
        if names(inst.mnemonic, &["saveexec", "wrexec"]) {
            runs[at + 1] = run(code::EXEC_LO, 2);
        }
        ScalarRegs {
            runs,
            written,
            never: names(inst.mnemonic, &["atomic", "movrel"]),
        }
    }
}

/// Mnemonic fragments of instructions a pair cannot run (see the module
/// doc), by family: they number lanes, read the wave's identity or MODE.
const SCALAR_SPLIT: &[&str] = &[
    "s_getreg",
    "s_setreg",
    "s_sendmsg",
    "s_ttrace",
    "s_denorm_mode",
    "s_round_mode",
    "scratch",
];
const VALU_SPLIT: &[&str] = &[
    "permlane", "mbcnt", "mfma", "smfmac", "swmmac", "interp", "v_s_",
];
/// Vector instructions a pair runs once per wave: whole-wave operands
/// (WMMA) and lanes named by number (read from or written to an SGPR).
const VALU_HALVES: &[&str] = &["wmma", "readlane", "writelane", "readfirstlane"];
/// VALU instructions whose third source is a lane mask (a carry in, a
/// selector), which each wave reads for its own half.
const MASK_SOURCE: &[&str] = &["addc", "subb", "cndmask"];
const DS_SPLIT: &[&str] = &[
    "swizzle", "permute", // ds_permute_b32, ds_bpermute_b32
    "append", "consume", "gws", "ordered", "addtid", "_tr", // transposing loads (cross-lane)
    "bvh",
];
const FLAT_SPLIT: &[&str] = &[
    "lds", // global_load_lds_*: LDS at M0 + lane
    "addtid",
];

/// Whether `mnemonic` contains one of `fragments`.
fn names(mnemonic: &str, fragments: &[&str]) -> bool {
    let m = mnemonic.as_bytes();
    fragments
        .iter()
        .any(|f| m.windows(f.len()).any(|w| w == f.as_bytes()))
}

/// How a pair runs `inst` (`valid`: it decoded) on `target`.
pub fn pairing(inst: &Inst, valid: bool, target: Target) -> Pairing {
    if !valid {
        return Pairing::Split;
    }
    match inst.ext {
        Ext::Dpp(_) | Ext::Dpp8(_) | Ext::Mai(_) => return Pairing::Split,
        Ext::None | Ext::Sdwa(_) | Ext::Vopd(_) => {}
    }
    let m = inst.mnemonic;
    match inst.format {
        Format::Sop2 | Format::Sopk | Format::Sop1 | Format::Sopc | Format::Sopp | Format::Smem => {
            if names(m, SCALAR_SPLIT) {
                Pairing::Split
            } else {
                Pairing::Scalar(ScalarRegs::of(inst))
            }
        }
        Format::Vop2
        | Format::Vop1
        | Format::Vopc
        | Format::Vop3
        | Format::Vop3p
        | Format::Vopd => {
            if names(m, VALU_SPLIT) {
                Pairing::Split
            } else if names(m, VALU_HALVES) {
                Pairing::Halves
            } else {
                reads(inst, target).map_or(Pairing::Halves, Pairing::Once)
            }
        }
        // Plain loads and stores run once when both waves address alike
        // (the same SGPR base); atomics (each wave's own return) and the
        // rest once per wave.
        Format::Flat | Format::Global if !names(m, FLAT_SPLIT) => {
            if names(m, &["load", "store"]) && !names(m, &["atomic"]) {
                reads(inst, target).map_or(Pairing::Halves, Pairing::Once)
            } else {
                Pairing::Halves
            }
        }
        Format::Ds if !names(m, DS_SPLIT) => {
            if names(m, &["ds_read", "ds_load", "ds_write", "ds_store"]) && !names(m, &["rtn"]) {
                reads(inst, target).map_or(Pairing::Halves, Pairing::Once)
            } else {
                Pairing::Halves
            }
        }
        Format::Flat | Format::Global | Format::Ds => Pairing::Split,
        // GFX10+'s cache invalidations (`buffer_gl0_inv`, `buffer_gl1_inv`)
        // sit in the MUBUF encoding but name no lane: each wave runs its own.
        Format::Mubuf if names(m, &["_inv"]) && inst.src.iter().all(|s| *s == Src::None) => {
            Pairing::Scalar(ScalarRegs {
                runs: [(0, 0); 7],
                written: 0,
                never: true,
            })
        }
        Format::Scratch | Format::Mubuf | Format::Mtbuf => Pairing::Split,
    }
}

/// The scalar operands `inst` (a VALU instruction, VOPD's Y half
/// included) reads as data, or None when one of them is a per-wave
/// condition (VCCZ, EXECZ, LDS_DIRECT) that only each wave can read.
fn reads(inst: &Inst, target: Target) -> Option<Reads> {
    let mut out = Reads {
        regs: [Reads::NO; 4],
        scc: false,
    };
    let mut n = 0;
    let mut halves: Vec<(&str, [Src; 3])> = vec![(inst.mnemonic, inst.src)];
    if let Ext::Vopd(y) = inst.ext {
        halves.push((y.mnemonic(target), y.sources(inst, target)));
    }
    for (mnemonic, srcs) in halves {
        let masks = names(mnemonic, MASK_SOURCE);
        for (k, src) in srcs.into_iter().enumerate() {
            match src {
                Src::Sgpr(_) if masks && k == 2 => {}
                Src::Sgpr(r) => {
                    *out.regs.get_mut(n)? = r;
                    n += 1;
                }
                Src::Special(code::SCC) => out.scc = true,
                Src::Special(
                    code::SHARED_BASE
                    | code::SHARED_LIMIT
                    | code::PRIVATE_BASE
                    | code::PRIVATE_LIMIT
                    | code::POPS_EXITING_WAVE_ID,
                ) => {}
                Src::Special(_) => return None,
                Src::Vgpr(_) | Src::Agpr(_) | Src::Inline(_) | Src::Literal(_) | Src::None => {}
            }
        }
    }
    Some(out)
}

/// The lanes of each half of a pair.
pub const HALVES: [u64; 2] = [0xFFFF_FFFF, 0xFFFF_FFFF_0000_0000];

/// Makes `a` and `b` (consecutive wave32 waves, both just launched) one
/// pair if they can run as one (same pc, MODE and register allocation, no
/// scratch of their own); `b`'s work-item ids (v0) move to lanes 32..64 of
/// `a`, its scalar state to `a`'s second bank. Returns whether they
/// paired.
pub fn join(a: &mut Wave, b: &mut Wave) -> bool {
    let same = a.size() == WaveSize::W32
        && b.size() == WaveSize::W32
        && a.status == Status::Running
        && b.status == Status::Running
        && a.pc == b.pc
        && a.mode == b.mode
        && a.trapsts == b.trapsts
        && a.sched_mode == b.sched_mode
        && a.scratch == b.scratch
        && a.v.len() == b.v.len()
        && a.a.len() == b.a.len();
    if !same {
        return false;
    }
    if let (Some(av), Some(bv)) = (a.v.first_mut(), b.v.first()) {
        av[32..].copy_from_slice(&bv[..32]);
    }
    *a.s_hi = *b.s;
    a.scc_hi = b.scc;
    a.set_size(WaveSize::Pair);
    if a.s == a.s_hi && a.scc == a.scc_hi {
        a.mirror();
    }
    b.status = Status::Paired;
    true
}

/// Ends the pair `a` (whose second wave is `b`): `b` takes lanes 32..64
/// of every register, its scalar state, and `pc` and `status` (where its
/// own run of the last instruction left it), and runs on its own.
pub fn split(a: &mut Wave, b: &mut Wave, (pc, status): (usize, Status)) {
    debug_assert_eq!(a.size(), WaveSize::Pair);
    debug_assert_eq!(b.status, Status::Paired);
    a.unmirror();
    for (bv, av) in b.v.iter_mut().zip(&a.v) {
        bv[..LANES / 2].copy_from_slice(&av[LANES / 2..]);
    }
    for (bv, av) in b.a.iter_mut().zip(&a.a) {
        bv[..LANES / 2].copy_from_slice(&av[LANES / 2..]);
    }
    b.pc = pc;
    *b.s = *a.s_hi;
    b.scc = a.scc_hi;
    b.mode = a.mode;
    b.trapsts = a.trapsts;
    b.sched_mode = a.sched_mode;
    b.status = status;
    b.executed = a.executed;
    b.set_size(WaveSize::W32);
    a.set_size(WaveSize::W32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::inst::code;
    use crate::decode::{Target, decode};

    fn launched(id: u32) -> Wave {
        let mut w = Wave::new(4, 0);
        w.set_size(WaveSize::W32);
        w.id = id;
        w.s[5] = 0x1234;
        w.set_exec(0xFFFF_FFFF);
        w.v[0] = std::array::from_fn(|l| 100 * id + l as u32);
        w
    }

    #[test]
    fn a_pair_keeps_each_waves_scalar_state_and_reads_its_lane_masks_into_its_half() {
        let (mut a, mut b) = (launched(0), launched(1));
        b.s[5] = 0x5678;
        b.scc = true;
        b.set_exec(0xFF);
        assert!(join(&mut a, &mut b), "waves at one pc pair");
        assert_eq!(b.status, Status::Paired);
        assert_eq!(
            (a.s[5], a.s_hi[5], a.scc, a.scc_hi),
            (0x1234, 0x5678, false, true)
        );
        // Run once for both: each wave's EXEC and VCC in its half.
        assert_eq!(a.exec(), 0x0000_00FF_FFFF_FFFF);
        a.s[code::VCC_LO as usize] = 0xF1;
        a.s_hi[code::VCC_LO as usize] = 0x0F;
        assert_eq!(a.vcc(), 0x0000_000F_0000_00F1);
        // The second wave alone: its state swapped in, its half of EXEC.
        a.swap_banks();
        a.set_half(HALVES[1]);
        assert_eq!((a.exec(), a.lane_base(), a.s[5]), (0xFF << 32, 32, 0x5678));
        a.swap_banks();
        a.set_half(u64::MAX);
        assert_eq!((a.exec(), a.lane_base()), (0x0000_00FF_FFFF_FFFF, 0));
        // Lanes 32..64 hold the second wave's work-item ids.
        assert_eq!(a.v[0][31], 31);
        assert_eq!(a.v[0][32], 100);
        assert_eq!(a.v[0][63], 131);
    }

    #[test]
    fn equal_waves_mirror_one_state_until_a_lane_mask_parts_them() {
        let (mut a, mut b) = (launched(0), launched(1));
        assert!(join(&mut a, &mut b));
        assert!(a.mirrored(), "equal scalar states: one for both");
        assert_eq!(a.exec(), u64::MAX);
        // Equal halves keep the mirror; `s_hi` may go stale meanwhile.
        a.set_lane_mask(code::VCC_LO, 0x0000_0003_0000_0003);
        a.s[7] = 70;
        assert!(a.mirrored());
        assert_eq!(a.vcc(), 0x0000_0003_0000_0003);
        // Different halves: the second wave gets a copy of the shared
        // state, and each its own half of the mask.
        a.set_lane_mask(10, 0x0000_0007_0000_0001);
        assert!(!a.mirrored());
        assert_eq!((a.s[10], a.s_hi[10], a.s_hi[7]), (1, 7, 70));
        assert_eq!(a.lane_mask_at(10), 0x0000_0007_0000_0001);
        // A split of a mirror gives the second wave the shared state.
        let (mut c, mut d) = (launched(0), launched(1));
        assert!(join(&mut c, &mut d));
        c.s[9] = 99;
        split(&mut c, &mut d, (4, Status::Running));
        assert_eq!((d.s[9], d.s[5]), (99, 0x1234));
    }

    #[test]
    fn waves_at_different_places_do_not_pair() {
        let (mut a, mut b) = (launched(0), launched(1));
        b.pc = 3;
        assert!(!join(&mut a, &mut b));
        assert_eq!((a.size(), b.status), (WaveSize::W32, Status::Running));
        let (mut a, mut b) = (launched(0), launched(1));
        b.mode ^= 1;
        assert!(!join(&mut a, &mut b), "MODE is shared");
    }

    #[test]
    fn lane_masks_go_to_each_wave_and_a_split_gives_the_second_its_own() {
        let (mut a, mut b) = (launched(0), launched(1));
        assert!(join(&mut a, &mut b));
        // Written once for both: each half to its wave.
        a.set_lane_mask(10, 0x0000_0007_0000_0001);
        assert_eq!((a.s[10], a.s_hi[10]), (1, 7));
        // Written by the second wave alone: its half, to its state.
        a.swap_banks();
        a.set_half(HALVES[1]);
        a.set_lane_mask(11, 0x0000_0005_0000_0000);
        a.swap_banks();
        a.set_half(u64::MAX);
        assert_eq!((a.s[11], a.s_hi[11]), (0, 5));
        a.v[2] = std::array::from_fn(|l| 1000 + l as u32);
        a.pc = 9;
        split(&mut a, &mut b, (12, Status::Barrier));
        assert_eq!((a.size(), b.size()), (WaveSize::W32, WaveSize::W32));
        assert_eq!((a.s[10], b.s[10]), (1, 7));
        assert_eq!((a.s[11], b.s[11]), (0, 5));
        assert_eq!((a.pc, b.pc, b.status), (9, 12, Status::Barrier));
        assert_eq!(b.v[0][0], 100, "the second wave's ids come back");
        assert_eq!(b.v[2][..32], a.v[2][32..]);
        assert_eq!(
            (b.s[5], a.exec(), b.exec()),
            (0x1234, 0xFFFF_FFFF, 0xFFFF_FFFF)
        );
    }

    fn pairing_of(words: &[u32], target: Target) -> Pairing {
        let i = decode(words, target).expect("decodes");
        pairing(&i, true, target)
    }

    #[test]
    fn instructions_are_classed_by_what_they_name() {
        // Words and text from `llvm-objdump -d --mcpu=gfx1201`.
        let t = Target::Gfx1201;
        // v_add_co_u32 v4, vcc_lo, s4, v4: lane-wise, once when both waves
        // hold the same s4 (a lane mask out, one half each).
        let Pairing::Once(reads) = pairing_of(&[0xD7006A04, 0x02020804], t) else {
            panic!("v_add_co_u32 is not run once");
        };
        let (mut a, mut b) = (launched(0), launched(1));
        assert!(join(&mut a, &mut b));
        a.s[4] = 7;
        a.s_hi[4] = 7;
        assert!(reads.agree(&a));
        a.s_hi[4] = 8;
        assert!(!reads.agree(&a), "s4 differs: each wave runs it");
        // s_load_b64 s[0:1], s[2:3], 0x10
        let Pairing::Scalar(regs) = pairing_of(&[0xF4002001, 0xF8000010], t) else {
            panic!("s_load_b64 is not scalar");
        };
        // Once for both while the base, the destination, EXEC, VCC, M0 and
        // SCC agree; a register it cannot touch may differ.
        a.s_hi[4] = a.s[4];
        assert!(regs.agree(&a));
        a.s_hi[40] = 1;
        assert!(regs.agree(&a), "s40 is not s_load_b64 s[0:1], s[2:3]'s");
        a.s_hi[2] = 9;
        assert!(!regs.agree(&a), "its base differs");
        a.s_hi[2] = a.s[2];
        a.s_hi[1] = 9;
        assert!(!regs.agree(&a), "its destination differs");
        a.s_hi[1] = a.s[1];
        a.s[0] = 0x77;
        regs.copy_to_second(&mut a);
        assert_eq!(a.s_hi[0], 0x77);
        // global_load_b32 v0, v[4:5], off: a plain load, once.
        assert!(matches!(
            pairing_of(&[0xEE05007C, 0x00000000, 0x00000004], t),
            Pairing::Once(_)
        ));
        // v_readfirstlane_b32 s0, v0: the running wave's first lane.
        assert_eq!(pairing_of(&[0x7E000500], t), Pairing::Halves);
        // v_mbcnt_lo_u32_b32 v4, exec_lo, 0
        assert_eq!(pairing_of(&[0xD71F0004, 0x0201007E], t), Pairing::Split);
    }
}
