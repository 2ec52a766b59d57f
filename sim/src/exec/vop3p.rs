//! VOP3P: packed math on two 16-bit (or, on gfx90a/gfx942, two 32-bit)
//! halves, and the moves of the accumulation registers.
//!
//! CDNA3 ISA, "VOP3P": OP_SEL chooses which half of each source feeds the
//! low result, OP_SEL_HI which feeds the high one; NEG and NEG_HI negate
//! per half.

use crate::decode::Inst;
use crate::exec::{Ctx, Exec};
use crate::fault::Fault;
use crate::wave::{LANES, Ty, Wave};

type R = Result<(), Fault>;

/// `v_pk_mov_b32`: D.dword0 = S0.dword[op_sel[0]], D.dword1 =
/// S1.dword[op_sel[1]], over 64-bit register pairs.
fn v_pk_mov_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let a = w.lanes64(i, 0, Ty::U64)?;
    let b = w.lanes64(i, 1, Ty::U64)?;
    let pick = |v: u64, hi: bool| if hi { (v >> 32) as u32 } else { v as u32 };
    let sel0 = i.mods.op_sel & 1 != 0;
    let sel1 = i.mods.op_sel & 2 != 0;
    let out: [u64; LANES] =
        std::array::from_fn(|l| u64::from(pick(a[l], sel0)) | u64::from(pick(b[l], sel1)) << 32);
    let exec = w.exec();
    w.write_lanes64(i.vdst, &out, exec)
}

/// Every VOP3P executor.
pub const OPS: &[&[(&str, Exec)]] = &[&[("v_pk_mov_b32", v_pk_mov_b32)]];
