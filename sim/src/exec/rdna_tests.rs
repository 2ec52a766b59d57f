//! GFX11 instructions on the executors, in a wave32 wave: what differs
//! from GFX9 (VOPD, EXEC-only `v_cmpx`, NULL destinations, one-SGPR lane
//! masks, `_b32` saveexec) and the renamed operations. Words from
//! `llvm-objdump --mcpu=gfx1100` (the decoder oracle checks their
//! decoding).

use crate::decode::Target;
use crate::decode::inst::code;
use crate::fault::Fault;
use crate::lanes::{LANES, WaveSize};
use crate::wave::Wave;

const POISON: u32 = 0xDEAD_BEEF;

fn wave32() -> Wave {
    let mut w = Wave::new(64, 0);
    w.set_size(WaveSize::W32);
    w.s[code::EXEC_LO as usize] = u32::MAX;
    w.s[code::EXEC_HI as usize] = POISON;
    w.s[code::VCC_HI as usize] = POISON;
    w.s[code::NULL as usize] = 0;
    w
}

fn run(w: &mut Wave, words: &[u32], mnemonic: &str) -> Result<(), Fault> {
    super::run_words(w, Target::Gfx1100, words, mnemonic, &mut [])
}

#[test]
fn vopd_reads_both_operations_sources_before_either_writes() {
    let mut w = wave32();
    w.v[0] = std::array::from_fn(|l| 10 + l as u32);
    w.v[1] = std::array::from_fn(|l| 1000 * l as u32);
    // v_dual_mov_b32 v1, v0 :: v_dual_add_nc_u32 v0, v1, v0: Y adds the
    // old v1 and v0 although X writes v1.
    run(&mut w, &[0xCA20_0100, 0x0100_0101], "v_dual_mov_b32").unwrap();
    for l in 0..32 {
        assert_eq!(w.v[1][l], 10 + l as u32, "X, lane {l}");
        assert_eq!(w.v[0][l], 1000 * l as u32 + 10 + l as u32, "Y, lane {l}");
    }
    // v_dual_fmac_f32 v35, v17, v45 :: v_dual_fmac_f32 v28, v18, v46.
    w.v[17] = [2.0f32.to_bits(); LANES];
    w.v[45] = [3.0f32.to_bits(); LANES];
    w.v[35] = [1.0f32.to_bits(); LANES];
    w.v[18] = [0.5f32.to_bits(); LANES];
    w.v[46] = [4.0f32.to_bits(); LANES];
    w.v[28] = [(-1.0f32).to_bits(); LANES];
    run(&mut w, &[0xC800_5B11, 0x231C_5D12], "v_dual_fmac_f32").unwrap();
    assert_eq!(f32::from_bits(w.v[35][5]), 7.0);
    assert_eq!(f32::from_bits(w.v[28][5]), 1.0);
}

#[test]
fn cmpx_writes_exec_only_and_null_takes_no_write() {
    let mut w = wave32();
    w.v[15] = std::array::from_fn(|l| (l % 3) as u32);
    w.s[code::VCC_LO as usize] = POISON;
    // v_cmpx_ne_u32_e32 0, v15
    run(&mut w, &[0x7D9A_1E80], "v_cmpx_ne_u32").unwrap();
    let want = (0..32).filter(|l| l % 3 != 0).fold(0u32, |m, l| m | 1 << l);
    assert_eq!(w.s[code::EXEC_LO as usize], want);
    assert_eq!(w.s[code::VCC_LO as usize], POISON, "VCC untouched");
    assert_eq!(w.s[code::NULL as usize], 0, "NULL untouched");
    // v_sub_co_ci_u32_e64 v6, null, v8, v6, s2: the borrow in from s2 (one
    // SGPR in wave32), the borrow out to NULL, discarded.
    w.s[code::EXEC_LO as usize] = u32::MAX;
    w.v[8] = [10; LANES];
    w.v[6] = std::array::from_fn(|l| l as u32);
    w.s[2] = 0x0000_00F0;
    w.s[3] = POISON;
    run(&mut w, &[0xD521_7C06, 0x000A_0D08], "v_sub_co_ci_u32").unwrap();
    for l in 0..32 {
        let borrow = u32::from((4..8).contains(&l));
        assert_eq!(w.v[6][l], 10u32.wrapping_sub(l as u32 + borrow), "lane {l}");
    }
    assert_eq!(w.s[code::NULL as usize], 0);
}

#[test]
fn b32_saveexec_works_on_exec_lo() {
    let mut w = wave32();
    w.s[code::EXEC_LO as usize] = 0xF0F0_F0F0;
    w.s[8] = 0xFF00_FF00;
    // s_and_saveexec_b32 s7, s8
    run(&mut w, &[0xBE87_2008], "s_and_saveexec_b32").unwrap();
    assert_eq!(w.s[7], 0xF0F0_F0F0);
    assert_eq!(w.s[code::EXEC_LO as usize], 0xF000_F000);
    assert_eq!(w.s[code::EXEC_HI as usize], POISON);
    assert!(w.scc);
}

/// RDNA3 ISA, "16-bit VGPRs" (true16): a 16-bit result goes to the named
/// half and leaves the other as it was; sources read the named half.
#[test]
fn true16_results_write_one_half_and_keep_the_other() {
    let mut w = wave32();
    let fill = |v: u32| [v; LANES];
    // v_mov_b16_e32 v35.h, 0
    w.v[35] = fill(0x1234_5678);
    run(&mut w, &[0x7F46_3880], "v_mov_b16").unwrap();
    assert_eq!(w.v[35][0], 0x0000_5678);
    // v_or_b16 v36.l, 0x103, v0.h op_sel:[0,1,0]
    w.v[36] = fill(0xAAAA_BBBB);
    w.v[0] = fill(0x0F00_00FF);
    run(&mut w, &[0xD763_1024, 0x0202_00FF, 0x0000_0103], "v_or_b16").unwrap();
    assert_eq!(w.v[36][0], 0xAAAA_0F03);
    // v_cndmask_b16 v1.h, 1, 2, s3: 2 where s3's bit is set.
    w.v[1] = fill(0x7777_7777);
    w.s[3] = 0b10;
    run(&mut w, &[0xD65D_4001, 0x000D_0481], "v_cndmask_b16").unwrap();
    assert_eq!((w.v[1][0], w.v[1][1]), (0x0001_7777, 0x0002_7777));
    // v_cvt_u32_u16_e32 v13, v1.l: the whole register.
    w.v[13] = fill(POISON);
    run(&mut w, &[0x7E1A_D701], "v_cvt_u32_u16").unwrap();
    assert_eq!(w.v[13][1], 0x7777);
    // v_add_nc_u16 v2.l, v5.l, -1 (a GFX9 executor, the high half kept).
    w.v[2] = fill(0xCCCC_0000);
    w.v[5] = fill(0x9999_0005);
    run(&mut w, &[0xD703_0002, 0x0201_8305], "v_add_nc_u16").unwrap();
    assert_eq!(w.v[2][0], 0xCCCC_0004);
    // v_lshlrev_b16 v3.h, 11, v4.l op_sel:[0,0,1]
    w.v[3] = fill(0x1111_2222);
    w.v[4] = fill(0x0000_0003);
    run(&mut w, &[0xD738_4003, 0x0202_088B], "v_lshlrev_b16").unwrap();
    assert_eq!(w.v[3][0], 0x1800_2222);
}

#[test]
fn sendmsg_rtn_answers_the_realtime_clock_and_refuses_the_rest() {
    let mut w = wave32();
    // s_sendmsg_rtn_b64 s[4:5], sendmsg(MSG_RTN_GET_REALTIME)
    run(&mut w, &[0xBE84_4D83], "s_sendmsg_rtn_b64").unwrap();
    let first = u64::from(w.s[4]) | u64::from(w.s[5]) << 32;
    run(&mut w, &[0xBE84_4D83], "s_sendmsg_rtn_b64").unwrap();
    let second = u64::from(w.s[4]) | u64::from(w.s[5]) << 32;
    assert!(first > 0 && second >= first, "{first} then {second}");
    // s_sendmsg_rtn_b32 s0, sendmsg(MSG_RTN_GET_DOORBELL): no doorbell here.
    let err = run(&mut w, &[0xBE80_4C80], "s_sendmsg_rtn_b32").unwrap_err();
    assert!(matches!(err, Fault::Unimplemented { .. }), "{err}");
}

#[test]
fn sixteen_bit_operands_read_the_half_op_sel_names() {
    // Found by the block-issue kernel on gfx1100: the 16-bit compares read
    // the low half whatever OP_SEL said, so a command's high-half field
    // compared as its neighbour.
    let mut w = wave32();
    // Lane l: low half 1, high half l % 2.
    w.v[1] = std::array::from_fn(|l| ((l % 2) as u32) << 16 | 1);
    // v_cmp_ne_u16_e64 s3, 0, v1.h op_sel:[0,1,0]
    run(&mut w, &[0xD43D_1003, 0x0202_0280], "v_cmp_ne_u16").unwrap();
    assert_eq!(w.s[3], 0xAAAA_AAAA, "odd lanes have a nonzero high half");
    // v_alignbit_b32 v8, v8, v8, v10.l and .h op_sel:[0,0,1,0]: the shift
    // is a 16-bit operand on GFX11.
    w.v[10] = [8 << 16 | 4; LANES];
    for (word, shift) in [(0xD616_0008, 4), (0xD616_2008, 8)] {
        w.v[8] = [0x1234_5678; LANES];
        run(&mut w, &[word, 0x042A_1108], "v_alignbit_b32").unwrap();
        assert_eq!(
            w.v[8][3],
            0x1234_5678u32.rotate_right(shift),
            "shift {shift}"
        );
    }
}

#[test]
fn shader_cycles_read_twenty_bits_on_gfx11_and_sixty_four_on_gfx12() {
    let mut w = wave32();
    // s_getreg_b32 s2, hwreg(HW_REG_SHADER_CYCLES, 0, 20)
    w.s[2] = POISON;
    run(&mut w, &[0xB882_981D], "s_getreg_b32").unwrap();
    assert!(w.s[2] < 1 << 20, "{:#x}", w.s[2]);
    // gfx1201: s_getreg_b32 s2, hwreg(HW_REG_SHADER_CYCLES_HI), then s4
    // LO, then s3 HI again (LLVM's readcyclecounter): a 64-bit count
    // that moves forward.
    let gfx12 = |w: &mut Wave, word: u32| {
        super::run_words(w, Target::Gfx1201, &[word], "s_getreg_b32", &mut []).unwrap()
    };
    let before = crate::clock::shader_cycles();
    gfx12(&mut w, 0xB882_F81E);
    gfx12(&mut w, 0xB884_F81D);
    gfx12(&mut w, 0xB883_F81E);
    assert_eq!(w.s[2], w.s[3], "the high half did not move between reads");
    let cycles = u64::from(w.s[3]) << 32 | u64::from(w.s[4]);
    assert!(cycles >= before && cycles <= crate::clock::shader_cycles());
    // A GFX9 register id means something else on RDNA: refused.
    // s_getreg_b32 s2, hwreg(4) (GFX9's HW_ID)
    let refused = run(&mut w, &[0xB882_F804], "s_getreg_b32");
    assert!(
        matches!(refused, Err(Fault::Operand { code: 4 })),
        "{refused:?}"
    );
}

fn run12(w: &mut Wave, words: &[u32], mnemonic: &str) -> Result<(), Fault> {
    super::run_words(w, Target::Gfx1201, words, mnemonic, &mut [])
}

#[test]
fn gfx12_scalar_floats_follow_ieee_and_set_scc() {
    let mut w = wave32();
    let f = |x: f32| x.to_bits();
    // The u64 division prologue LLVM emits on gfx1201: s_cvt_f32_u32,
    // s_fmac_f32 with a literal, v_s_rcp_f32, s_mul_f32, s_trunc_f32,
    // s_cvt_u32_f32.
    w.s[2] = 3;
    run12(&mut w, &[0xBE80_6502], "s_cvt_f32_u32").unwrap();
    assert_eq!(w.s[0], f(3.0));
    w.s[5] = f(0.5);
    // s_fmac_f32 s0, s5, 0x4f800000 (2^32): s0 = 0.5 * 2^32 + 3.
    run12(&mut w, &[0xA380_FF05, 0x4F80_0000], "s_fmac_f32").unwrap();
    assert_eq!(w.s[0], f(0.5f32.mul_add(4_294_967_296.0, 3.0)));
    w.s[0] = f(4.0);
    // v_s_rcp_f32 s0, s0
    run12(&mut w, &[0xD684_0000, 0x0201_0000], "v_s_rcp_f32").unwrap();
    assert_eq!(w.s[0], f(0.25));
    // s_mul_f32 s0, s0, 0x5f7ffffc
    run12(&mut w, &[0xA200_FF00, 0x5F7F_FFFC], "s_mul_f32").unwrap();
    assert_eq!(w.s[0], f(0.25 * f32::from_bits(0x5F7F_FFFC)));
    w.s[5] = f(-7.75);
    // s_trunc_f32 s5, s5; s_cvt_u32_f32 s7, s5: -7 saturates to 0.
    run12(&mut w, &[0xBE85_6205], "s_trunc_f32").unwrap();
    assert_eq!(w.s[5], f(-7.0));
    run12(&mut w, &[0xBE87_6705], "s_cvt_u32_f32").unwrap();
    assert_eq!(w.s[7], 0);
    w.s[5] = f(1e10);
    run12(&mut w, &[0xBE87_6705], "s_cvt_u32_f32").unwrap();
    assert_eq!(w.s[7], u32::MAX, "saturates");
    // s_cmp_neq_f32 s25, 0 and s_cmp_eq_f32 s24, 0: a NaN is not equal,
    // and -0 equals 0.
    for (value, neq) in [(f32::NAN, true), (-0.0, false), (1.5, true)] {
        w.s[25] = f(value);
        w.s[24] = f(value);
        run12(&mut w, &[0xBF4D_8019], "s_cmp_neq_f32").unwrap();
        assert_eq!(w.scc, neq, "{value} != 0");
        run12(&mut w, &[0xBF42_8018], "s_cmp_eq_f32").unwrap();
        assert_eq!(w.scc, !neq && !value.is_nan(), "{value} == 0");
    }
}

#[test]
fn gfx12_scalar_u64_arithmetic_leaves_scc_alone() {
    let mut w = wave32();
    let set = |w: &mut Wave, r: usize, v: u64| {
        w.s[r] = v as u32;
        w.s[r + 1] = (v >> 32) as u32;
    };
    let get = |w: &Wave, r: usize| u64::from(w.s[r]) | u64::from(w.s[r + 1]) << 32;
    w.scc = true;
    set(&mut w, 4, 0xFFFF_FFFF_FFFF_FFF0);
    // s_add_nc_u64 s[0:1], s[4:5], 32: wraps, no carry out.
    run12(&mut w, &[0xA980_A004], "s_add_nc_u64").unwrap();
    assert_eq!(get(&w, 0), 0x10);
    assert!(w.scc, "SCC unchanged");
    // s_sub_nc_u64 s[8:9], 4, s[16:17]
    set(&mut w, 16, 5);
    run12(&mut w, &[0xAA08_1084], "s_sub_nc_u64").unwrap();
    assert_eq!(get(&w, 8), u64::MAX);
    // s_mul_u64 s[4:5], s[6:7], s[4:5]: the low 64 bits.
    set(&mut w, 4, 0x1_0000_0003);
    set(&mut w, 6, 0x2_0000_0005);
    run12(&mut w, &[0xAA84_0406], "s_mul_u64").unwrap();
    assert_eq!(get(&w, 4), 0x1_0000_0003u64.wrapping_mul(0x2_0000_0005));
    assert!(w.scc);
}

/// GFX12's SCHED_MODE (hwreg 26), which hipBLASLt's gfx1201 GEMM kernels
/// set, is kept and read back; GFX11 has no register 26.
#[test]
fn gfx12_sched_mode_is_kept_for_getreg_and_gfx11_refuses_it() {
    let mut w = wave32();
    // s_setreg_imm32_b32 hwreg(HW_REG_WAVE_SCHED_MODE, 0, 2), 2
    let set = [0xB980_081A, 0x0000_0002];
    run12(&mut w, &set, "s_setreg_imm32_b32").unwrap();
    assert_eq!(w.sched_mode, 2);
    // s_getreg_b32 s0, hwreg(HW_REG_WAVE_SCHED_MODE, 0, 2)
    w.s[0] = POISON;
    run12(&mut w, &[0xB880_081A], "s_getreg_b32").unwrap();
    assert_eq!(w.s[0], 2);
    assert!(matches!(
        run(&mut w, &set, "s_setreg_imm32_b32"),
        Err(Fault::Operand { code: 26 })
    ));
}

#[test]
fn gfx12_split_barrier_holds_the_wave_at_its_signal() {
    let mut w = wave32();
    // s_barrier_signal -1
    run12(&mut w, &[0xBE80_4EC1], "s_barrier_signal").unwrap();
    assert_eq!(w.status, crate::wave::Status::Barrier);
    w.status = crate::wave::Status::Running;
    // s_barrier_wait 0xffff
    run12(&mut w, &[0xBF94_FFFF], "s_barrier_wait").unwrap();
    assert_eq!(w.status, crate::wave::Status::Running);
    // s_barrier_wait 1: a named barrier, refused.
    assert!(matches!(
        run12(&mut w, &[0xBF94_0001], "s_barrier_wait"),
        Err(Fault::Unimplemented { .. })
    ));
}

#[test]
fn wmma_refuses_what_the_hardware_leaves_undefined() {
    // v_wmma_f32_16x16x16_f16 v[16:23], v[0:7], v[8:15], v[16:23]
    let word = [0xCC40_4010, 0x1C42_1100];
    let mut w = wave32();
    // Identical copies in both lane halves: runs. A = 1.0 everywhere, B =
    // 2.0, C = 0.5: every D element is 16 · 2 + 0.5.
    for r in 0..8 {
        w.v[r] = [0x3C00_3C00; LANES];
        w.v[8 + r] = [0x4000_4000; LANES];
        w.v[16 + r] = [0.5f32.to_bits(); LANES];
    }
    run(&mut w, &word, "v_wmma_f32_16x16x16_f16").unwrap();
    assert!((0..8).all(|r| w.v[16 + r][..32].iter().all(|&d| d == 32.5f32.to_bits())));
    // Lane 20's copy of row 4 differs from lane 4's: refused.
    w.v[3][20] ^= 1;
    assert!(matches!(
        run(&mut w, &word, "v_wmma_f32_16x16x16_f16"),
        Err(Fault::Unimplemented { mnemonic }) if mnemonic.contains("copies differ")
    ));
    w.v[3][20] ^= 1;
    // A wave64 WMMA (other layouts; ours are wave32): refused.
    w.set_size(WaveSize::W64);
    assert!(matches!(
        run(&mut w, &word, "v_wmma_f32_16x16x16_f16"),
        Err(Fault::Unimplemented { mnemonic }) if mnemonic.contains("wave64")
    ));
}

#[test]
fn dpp8_moves_lanes_within_groups_of_eight_and_reads_inactive_ones_as_zero() {
    let mut w = wave32();
    w.v[1] = std::array::from_fn(|l| 100 + l as u32);
    w.v[3] = [1000; LANES];
    // v_mov_b32_dpp v0, v1 dpp8:[7,6,5,4,3,2,1,0]: each group reversed.
    run(&mut w, &[0x7E00_02E9, 0x0539_7701], "v_mov_b32").unwrap();
    for l in 0..32 {
        assert_eq!(w.v[0][l], 100 + ((l & !7) + 7 - l % 8) as u32, "lane {l}");
    }
    // v_add_nc_u32_dpp v2, v1, v3 dpp8:[3,2,1,0,7,6,5,4] with lane 1 of
    // each group outside EXEC: lanes reading it get 0 (RDNA3.5 ISA,
    // "DPP8"), and lanes outside EXEC keep their value.
    let exec = !0x0202_0202u32;
    w.s[code::EXEC_LO as usize] = exec;
    w.v[2] = [POISON; LANES];
    run(&mut w, &[0x4A04_06E9, 0x9770_5301], "v_add_nc_u32").unwrap();
    let sel = [3, 2, 1, 0, 7, 6, 5, 4];
    for l in 0..32 {
        let from = (l & !7) + sel[l % 8];
        let want = if exec >> l & 1 == 0 {
            POISON
        } else if exec >> from & 1 == 0 {
            1000
        } else {
            1000 + 100 + from as u32
        };
        assert_eq!(w.v[2][l], want, "lane {l}");
    }
    // v_mov_b32_dpp v0, v1 dpp8:[1,1,1,1,1,1,1,1] fi:1: the inactive lane
    // 1 of each group is read anyway.
    run(&mut w, &[0x7E00_02EA, 0x2492_4901], "v_mov_b32").unwrap();
    for l in (0..32).filter(|l| exec >> l & 1 != 0) {
        assert_eq!(w.v[0][l], 100 + (l & !7) as u32 + 1, "lane {l}");
    }
}

#[test]
fn format_loads_through_an_rdna_buffer_resource_are_refused_by_name() {
    let mut w = wave32();
    // A V# as hipBLASLt builds it on gfx11 (word 3 0x31004000: FORMAT 4,
    // OOB_SELECT 3): its unified format table is not modelled.
    w.s[4..8].copy_from_slice(&[0x1000, 0, 256, 0x3100_4000]);
    w.s[3] = 0;
    w.v[1] = [0; LANES];
    // buffer_load_format_x v5, v1, s[4:7], s3 offen
    let r = run(&mut w, &[0xE000_0000, 0x0341_0501], "buffer_load_format_x");
    assert!(
        matches!(r, Err(Fault::UnimplementedCase { case, .. }) if case.contains("unified formats")),
        "{r:?}"
    );
}
