//! Scalar memory: SMEM loads, stores and buffer loads into SGPRs.
//!
//! CDNA3 ISA, "Scalar Memory Operations": the address is the 64-bit SBASE
//! pair (or a V#'s base for `s_buffer_*`) plus an immediate and/or SGPR
//! offset, with the two low bits ignored. Scalar buffer accesses are range
//! checked against the V#'s NUM_RECORDS: dwords outside read as zero.

use crate::decode::Inst;
use crate::decode::inst::flag;
use crate::exec::ctx::{Ctx, Exec};
use crate::fault::{Fault, Space};
use crate::wave::{Ty, Wave};

type R = Result<(), Fault>;

/// The byte offset an SMEM instruction adds to its base.
fn offset(w: &Wave, i: &Inst) -> Result<u64, Fault> {
    let mut off = if i.flags & flag::IMM != 0 {
        i.imm as i64
    } else {
        0
    };
    if i.flags & flag::IMM == 0 || i.flags & flag::SOE != 0 {
        off += i64::from(w.s32_of(i.src[1], Ty::B32)?);
    }
    Ok(off as u64)
}

fn fault(address: u64, size: u64, write: bool) -> Fault {
    Fault::Memory {
        space: Space::Global,
        address,
        size,
        write,
    }
}

fn load(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, dwords: u8) -> R {
    let base = w.s64_of(i.src[0], Ty::U64)?;
    let address = base.wrapping_add(offset(w, i)?) & !3;
    let size = u64::from(dwords) * 4;
    let mut m = ctx.mem.access();
    m.check(address, size)
        .map_err(|_| fault(address, size, false))?;
    for k in 0..dwords {
        let v = m.load_u32(address + u64::from(k) * 4);
        w.set_s32(i.vdst as u8 + k, v);
    }
    Ok(())
}

fn store(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, dwords: u8) -> R {
    let base = w.s64_of(i.src[0], Ty::U64)?;
    let address = base.wrapping_add(offset(w, i)?) & !3;
    let size = u64::from(dwords) * 4;
    let mut m = ctx.mem.access();
    m.check(address, size)
        .map_err(|_| fault(address, size, true))?;
    for k in 0..dwords {
        let v = w.s[usize::from(i.vdst as u8 + k) & 0x7F];
        m.store_u32(address + u64::from(k) * 4, v);
    }
    Ok(())
}

/// `s_buffer_load_*`: SBASE names a 4-SGPR V#; base = V#[47:0],
/// NUM_RECORDS = dword 2. Dwords past NUM_RECORDS read as zero.
fn buffer_load(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, dwords: u8) -> R {
    let crate::decode::Src::Sgpr(r) = i.src[0] else {
        return Err(Fault::Operand { code: 0 });
    };
    let r = usize::from(r);
    let base = u64::from(w.s[r]) | u64::from(w.s[r + 1] & 0xFFFF) << 32;
    let records = u64::from(w.s[r + 2]);
    let off = offset(w, i)? & !3;
    let m = ctx.mem.access();
    let mut m = m;
    for k in 0..dwords {
        let o = off + u64::from(k) * 4;
        let v = if o + 4 <= records {
            let a = base + o;
            m.check(a, 4).map_err(|_| fault(a, 4, false))?;
            m.load_u32(a)
        } else {
            0
        };
        w.set_s32(i.vdst as u8 + k, v);
    }
    Ok(())
}

macro_rules! sized {
    ($($name:ident => $f:ident($n:expr);)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R { $f(w, i, ctx, $n) })*
        const SIZED: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

sized! {
    s_load_dword => load(1);
    s_load_dwordx2 => load(2);
    // GFX12's three-dword load (SMEM opcode 5 on gfx1201, llvm-objdump).
    s_load_b96 => load(3);
    s_load_dwordx4 => load(4);
    s_load_dwordx8 => load(8);
    s_load_dwordx16 => load(16);
    s_store_dword => store(1);
    s_store_dwordx2 => store(2);
    s_store_dwordx4 => store(4);
    s_buffer_load_dword => buffer_load(1);
    s_buffer_load_dwordx2 => buffer_load(2);
    s_buffer_load_b96 => buffer_load(3);
    s_buffer_load_dwordx4 => buffer_load(4);
    s_buffer_load_dwordx8 => buffer_load(8);
    s_buffer_load_dwordx16 => buffer_load(16);
}

/// Every SMEM executor (`s_memtime`, `s_memrealtime` and the cache
/// operations are with the SALU ones).
pub const OPS: &[&[(&str, Exec)]] = &[SIZED];
