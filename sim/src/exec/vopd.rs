//! VOPD (GFX11+, wave32): two VALU operations, X and Y, in one
//! instruction. Each is one of a few VOP2-shaped operations (RDNA3 ISA,
//! "VOPD"; LLVM's `VOPDInstructions.td`), which run here on the GFX9
//! executors of the same operations. Both read their sources before
//! either writes its destination (LLVM never pairs an X whose result Y
//! reads, `GCNVOPDUtils.cpp`; the order below is exact even if it did).

use std::sync::OnceLock;

use super::ctx::{Ctx, Exec};
use crate::decode::{Ext, Format, Inst};
use crate::fault::Fault;
use crate::wave::Wave;

type R = Result<(), Fault>;

/// The VOPD operations, each with the GFX9 operation it is: `PAIRS` for
/// the components, `OPS` registering [`vopd`] under each name (the Y-only
/// ones never come as X, and are there for the one list).
macro_rules! vopd_ops {
    ($(($dual:literal, $op:literal),)*) => {
        const PAIRS: &[(&str, &str)] = &[$(($dual, $op)),*];
        /// Every VOPD mnemonic runs `vopd`.
        pub const OPS: &[&[(&str, Exec)]] = &[&[$(($dual, vopd as Exec)),*]];
    };
}

vopd_ops! {
    ("v_dual_fmac_f32", "v_fmac_f32"),
    ("v_dual_fmaak_f32", "v_fmaak_f32"),
    ("v_dual_fmamk_f32", "v_fmamk_f32"),
    ("v_dual_mul_f32", "v_mul_f32"),
    ("v_dual_add_f32", "v_add_f32"),
    ("v_dual_sub_f32", "v_sub_f32"),
    ("v_dual_subrev_f32", "v_subrev_f32"),
    ("v_dual_mul_dx9_zero_f32", "v_mul_legacy_f32"),
    ("v_dual_mov_b32", "v_mov_b32"),
    ("v_dual_cndmask_b32", "v_cndmask_b32"),
    ("v_dual_max_f32", "v_max_f32"),
    ("v_dual_min_f32", "v_min_f32"),
    ("v_dual_dot2acc_f32_f16", "v_dot2c_f32_f16"),
    ("v_dual_add_nc_u32", "v_add_u32"),
    ("v_dual_lshlrev_b32", "v_lshlrev_b32"),
    ("v_dual_and_b32", "v_and_b32"),
}

/// The executor of one VOPD operation: a scan of sixteen names, which
/// costs less than hashing one (this runs twice per VOPD instruction).
fn component(mnemonic: &str) -> Option<Exec> {
    static BY_NAME: OnceLock<Vec<(&'static str, Exec)>> = OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            PAIRS
                .iter()
                .filter_map(|&(dual, op)| super::lookup(op).map(|e| (dual, e)))
                .collect()
        })
        .iter()
        .find(|(dual, _)| *dual == mnemonic)
        .map(|&(_, e)| e)
}

/// Runs X (this instruction's own fields) and Y (its [`Ext::Vopd`]).
fn vopd(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    let Ext::Vopd(y) = i.ext else {
        return Err(Fault::Unimplemented {
            mnemonic: i.mnemonic,
        });
    };
    let y_mnemonic = y.mnemonic(ctx.target);
    let unimplemented = |mnemonic| Fault::Unimplemented { mnemonic };
    let x_exec = component(i.mnemonic).ok_or(unimplemented(i.mnemonic))?;
    let y_exec = component(y_mnemonic).ok_or(unimplemented(y_mnemonic))?;
    // Each as the VOP2 it is.
    let x = Inst {
        format: Format::Vop2,
        ext: Ext::None,
        ..*i
    };
    let y_inst = Inst {
        format: Format::Vop2,
        mnemonic: y_mnemonic,
        vdst: y.vdst.into(),
        src: y.sources(i, ctx.target),
        ext: Ext::None,
        ..*i
    };
    // X computes into its register, which is then put back until Y has
    // read its sources: both see the registers as they were.
    let before = *w.vreg(x.vdst, false)?;
    x_exec(w, &x, ctx)?;
    let x_result = *w.vreg(x.vdst, false)?;
    *w.vreg_mut(x.vdst, false)? = before;
    y_exec(w, &y_inst, ctx)?;
    *w.vreg_mut(x.vdst, false)? = x_result;
    Ok(())
}
