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
    w.size = WaveSize::W32;
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
