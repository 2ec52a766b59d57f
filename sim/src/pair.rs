//! Wave32 pairs: two wave32 waves of a workgroup run as one 64-lane wave
//! while nothing tells them apart.
//!
//! # Why
//!
//! The interpreter's cost per instruction is a fixed part (dispatch, the
//! operands, the write-back) and a part per lane. RDNA kernels run as
//! wave32 (the compiler's choice for gfx10+), so the same work takes twice
//! the waves and twice the fixed parts of wave64: the simulator ran wave32
//! code at 0.6–0.9 of wave64's lane-operations per second. Two waves that
//! execute the same instruction stream with the same scalar state can pay
//! the fixed part once.
//!
//! # The invariant
//!
//! A pair is wave `2k` (lanes 0..32, in its own register file) with wave
//! `2k + 1` (lanes 32..64 of the same file; its own Wave waits as
//! [`Status::Paired`]), and **one** scalar state: SGPRs, SCC, M0, MODE,
//! the pc and EXEC_LO. That is exact as long as both waves' scalar state
//! would be equal, which holds at launch for waves of one workgroup
//! without scratch (the dispatch checks it, register by register) and is
//! kept by what each instruction may do:
//!
//! ```text
//!   instruction                  pair runs it          scalar state after
//!   ---------------------------  --------------------  ------------------------
//!   SALU, SMEM, branches         once                  equal (same inputs)
//!   VALU lane-wise               once, 64 lanes        equal, unless a lane
//!                                                      mask's halves differ
//!   FLAT/GLOBAL, DS lane-wise    once per half         equal (no scalar write)
//!   anything that names a lane,  -- split first --     each wave its own
//!   a wave or the scratch
//! ```
//!
//! A lane mask read by a vector instruction (EXEC, VCC, a carry in) is the
//! one SGPR placed in both halves; a lane mask written (a compare, a carry
//! out, `v_cmpx`) is split into its halves: equal halves keep the pair,
//! different ones are recorded ([`Wave::hi_writes`]) and the pair splits
//! after the instruction, the second wave taking its halves. Memory
//! instructions run once per half ([`Wave::set_half`]) so a fault is reported
//! against the wave whose lane faulted, as it would be unpaired.
//!
//! What a pair never runs (it splits before, [`Pairing::Split`]): lane
//! numbers (`v_readlane`, `v_readfirstlane`, `v_writelane`, `v_mbcnt`,
//! permutes, swizzles, DPP, `addtid` forms, loads to LDS at M0 + lane), whole
//! wave operands (WMMA, MFMA), wave identity (`s_getreg`, `s_sendmsg`), the
//! per-wave scratch and buffer accesses (MUBUF/MTBUF/SCRATCH, whose
//! swizzle or TID uses the lane number), what each wave does once (scalar
//! stores and atomics; DS's append, consume, GWS and ordered count) and
//! undecodable words. A split copies lanes
//! 32..64 of every register into the second wave's file and gives it the
//! scalar state; both then run as plain wave32.
//!
//! # What changes, and what does not
//!
//! Results do not: every instruction a pair runs once computes, per lane,
//! what each wave would have. Scheduling does: the two waves advance in
//! lockstep rather than one quantum after the other, which only a program
//! that races its waves through memory could observe (GPUs promise no
//! order between waves either). The statistics count a pair's instruction
//! as two wave-instructions, as the hardware would have issued. When both
//! waves of a pair would fault, the first fault in lockstep order is the
//! one reported. `Gpu::with_wave32_pairs(false)` (or
//! `AQUEDUCT_SIM_WAVE32_PAIRS=0`) runs every wave32 wave on its own.

use crate::decode::{Ext, Format, Inst};
use crate::lanes::{LANES, WaveSize};
use crate::wave::{Status, Wave};

/// How a wave32 pair runs an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// Once for both waves: scalar, or the same per-lane work in all 64
    /// lanes.
    Once,
    /// Once per wave, in its own half of the lanes (memory: a fault names
    /// its wave).
    Halves,
    /// Not as a pair: split first.
    Split,
}

/// Mnemonic fragments of instructions a pair cannot run (see the module
/// doc), by family: they number lanes, read the wave's identity, or act
/// once per wave.
const SCALAR_SPLIT: &[&str] = &[
    "s_getreg",
    "s_sendmsg",
    "s_ttrace",
    "store",  // s_store_*, s_buffer_store_*: once per wave
    "atomic", // s_atomic_*, s_buffer_atomic_*: once per wave, each its own return
    "scratch",
];
const VALU_SPLIT: &[&str] = &[
    "lane", // v_readlane, v_readfirstlane, v_writelane, v_permlane*
    "mbcnt", "mma", // v_wmma, v_swmmac, v_mfma, v_smfmac
    "interp", "v_s_",
];
const DS_SPLIT: &[&str] = &[
    "swizzle", "permute", // ds_permute_b32, ds_bpermute_b32
    "append", "consume", "gws", "ordered", "addtid", "_tr", // transposing loads (cross-lane)
    "bvh",
];
const FLAT_SPLIT: &[&str] = &[
    "lds", // global_load_lds_*: LDS at M0 + lane
    "addtid",
];

/// How a pair runs `inst` (`valid`: it decoded).
pub fn pairing(inst: &Inst, valid: bool) -> Pairing {
    if !valid {
        return Pairing::Split;
    }
    match inst.ext {
        Ext::Dpp(_) | Ext::Dpp8(_) | Ext::Mai(_) => return Pairing::Split,
        Ext::None | Ext::Sdwa(_) | Ext::Vopd(_) => {}
    }
    let (split, pairing) = match inst.format {
        Format::Sop2 | Format::Sopk | Format::Sop1 | Format::Sopc | Format::Sopp | Format::Smem => {
            (SCALAR_SPLIT, Pairing::Once)
        }
        Format::Vop2
        | Format::Vop1
        | Format::Vopc
        | Format::Vop3
        | Format::Vop3p
        | Format::Vopd => (VALU_SPLIT, Pairing::Once),
        Format::Flat | Format::Global => (FLAT_SPLIT, Pairing::Halves),
        Format::Ds => (DS_SPLIT, Pairing::Halves),
        Format::Scratch | Format::Mubuf | Format::Mtbuf => return Pairing::Split,
    };
    let m = inst.mnemonic.as_bytes();
    let named = |f: &&str| m.windows(f.len()).any(|w| w == f.as_bytes());
    if split.iter().any(named) {
        Pairing::Split
    } else {
        pairing
    }
}

/// The lanes of each half of a pair.
pub const HALVES: [u64; 2] = [0xFFFF_FFFF, 0xFFFF_FFFF_0000_0000];

/// Makes `a` and `b` (consecutive wave32 waves, both just launched) one
/// pair if their scalar state is equal; `b`'s work-item ids (v0) move to
/// lanes 32..64 of `a`. Returns whether they paired.
pub fn join(a: &mut Wave, b: &mut Wave) -> bool {
    let same = a.size() == WaveSize::W32
        && b.size() == WaveSize::W32
        && a.status == Status::Running
        && b.status == Status::Running
        && a.pc == b.pc
        && a.s == b.s
        && a.scc == b.scc
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
    a.set_size(WaveSize::Pair);
    a.set_half(u64::MAX);
    a.hi_writes.clear();
    b.status = Status::Paired;
    true
}

/// Ends the pair `a` (whose second wave is `b`): `b` takes lanes 32..64
/// of every register, the shared scalar state with the second halves of
/// any lane masks that differed, and runs on its own from `a`'s pc.
pub fn split(a: &mut Wave, b: &mut Wave) {
    debug_assert_eq!(a.size(), WaveSize::Pair);
    debug_assert_eq!(b.status, Status::Paired);
    for (bv, av) in b.v.iter_mut().zip(&a.v) {
        bv[..LANES / 2].copy_from_slice(&av[LANES / 2..]);
    }
    for (bv, av) in b.a.iter_mut().zip(&a.a) {
        bv[..LANES / 2].copy_from_slice(&av[LANES / 2..]);
    }
    b.pc = a.pc;
    b.s = a.s;
    b.scc = a.scc;
    b.mode = a.mode;
    b.trapsts = a.trapsts;
    b.sched_mode = a.sched_mode;
    b.status = a.status;
    b.executed = a.executed;
    b.set_size(WaveSize::W32);
    b.set_half(u64::MAX);
    b.hi_writes.clear();
    for (r, v) in a.hi_writes.drain(..) {
        b.set_s32(r, v);
    }
    a.set_size(WaveSize::W32);
    a.set_half(u64::MAX);
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
    fn a_pair_reads_one_lane_mask_for_both_halves() {
        let (mut a, mut b) = (launched(0), launched(1));
        assert!(join(&mut a, &mut b));
        assert_eq!(b.status, Status::Paired);
        a.s[code::VCC_LO as usize] = 0x0000_00F1;
        assert_eq!(a.vcc(), 0x0000_00F1_0000_00F1);
        assert_eq!(a.exec(), u64::MAX);
        a.set_half(HALVES[1]);
        assert_eq!(a.exec(), 0xFFFF_FFFF_0000_0000);
        // Lanes 32..64 hold the second wave's work-item ids.
        assert_eq!(a.v[0][31], 31);
        assert_eq!(a.v[0][32], 100);
        assert_eq!(a.v[0][63], 131);
    }

    #[test]
    fn waves_whose_scalar_state_differs_do_not_pair() {
        let (mut a, mut b) = (launched(0), launched(1));
        b.s[7] = 1;
        assert!(!join(&mut a, &mut b));
        assert_eq!((a.size(), b.status), (WaveSize::W32, Status::Running));
        let (mut a, mut b) = (launched(0), launched(1));
        b.set_exec(0xFF);
        assert!(!join(&mut a, &mut b), "a partial wave has its own EXEC");
    }

    #[test]
    fn equal_lane_mask_halves_keep_the_pair_and_different_ones_split_it() {
        let (mut a, mut b) = (launched(0), launched(1));
        assert!(join(&mut a, &mut b));
        a.set_lane_mask(code::VCC_LO, 0x0000_0003_0000_0003);
        assert!(a.hi_writes.is_empty());
        assert_eq!(a.s[code::VCC_LO as usize], 3);
        a.set_lane_mask(10, 0x0000_0007_0000_0001);
        assert_eq!(a.hi_writes, vec![(10, 7)]);
        a.v[2] = std::array::from_fn(|l| 1000 + l as u32);
        a.pc = 9;
        split(&mut a, &mut b);
        assert_eq!((a.size(), b.size()), (WaveSize::W32, WaveSize::W32));
        assert_eq!((a.s[10], b.s[10]), (1, 7));
        assert_eq!(
            (a.s[code::VCC_LO as usize], b.s[code::VCC_LO as usize]),
            (3, 3)
        );
        assert_eq!((b.pc, b.status), (9, Status::Running));
        assert_eq!(b.v[0][0], 100, "the second wave's ids come back");
        assert_eq!(b.v[2][..32], a.v[2][32..]);
        assert_eq!(b.s[5], 0x1234);
        assert!(a.hi_writes.is_empty());
    }

    fn pairing_of(words: &[u32], target: Target) -> Pairing {
        let i = decode(words, target).expect("decodes");
        pairing(&i, true)
    }

    #[test]
    fn instructions_are_classed_by_what_they_name() {
        // Words and text from `llvm-objdump -d --mcpu=gfx1201`.
        let t = Target::Gfx1201;
        // v_add_co_u32 v4, vcc_lo, s4, v4: lane-wise, a lane mask out.
        assert_eq!(pairing_of(&[0xD7006A04, 0x02020804], t), Pairing::Once);
        // s_load_b64 s[0:1], s[2:3], 0x10
        assert_eq!(pairing_of(&[0xF4002001, 0xF8000010], t), Pairing::Once);
        // global_load_b32 v0, v[4:5], off
        assert_eq!(
            pairing_of(&[0xEE05007C, 0x00000000, 0x00000004], t),
            Pairing::Halves
        );
        // v_readfirstlane_b32 s0, v0
        assert_eq!(pairing_of(&[0x7E000500], t), Pairing::Split);
        // v_mbcnt_lo_u32_b32 v4, exec_lo, 0
        assert_eq!(pairing_of(&[0xD71F0004, 0x0201007E], t), Pairing::Split);
    }
}
