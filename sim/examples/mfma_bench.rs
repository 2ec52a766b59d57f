//! Times single MFMA instructions on the simulator's executor, the way the
//! interpreter runs them: decode once, then call the executor over and
//! over on one wave whose A, B and C registers hold pseudo-random ordinary
//! numbers of the instruction's types (no denormals, which some processors
//! handle slowly, and no NaNs).
//!
//! ```text
//! cargo run --release -p aqueduct-sim --example mfma_bench [-- SECONDS [FILTER]]
//! ```
//!
//! Each shape (those whose mnemonic contains FILTER, if given) runs for
//! about SECONDS (0.5 by default) in five rounds; the
//! figure printed is the best round's instructions per second, the least
//! disturbed by whatever else the machine runs. D is written away from C,
//! so every execution sees the same inputs.

use std::hint::black_box;
use std::time::{Duration, Instant};

use aqueduct_sim::Memory;
use aqueduct_sim::code_index::CodeIndex;
use aqueduct_sim::decode::opcodes::VOP3P;
use aqueduct_sim::decode::{Target, decode};
use aqueduct_sim::exec::{Ctx, lookup};
use aqueduct_sim::float::f32_to_f16;
use aqueduct_sim::wave::Wave;

/// The shapes timed, gfx90a spellings.
const SHAPES: &[&str] = &[
    "v_mfma_f32_32x32x8f16",
    "v_mfma_f32_16x16x16f16",
    "v_mfma_f32_32x32x2f32",
    "v_mfma_f64_16x16x4f64",
    "v_mfma_i32_32x32x8i8",
];

/// First registers of the operands: A and B need at most 4 registers, C and
/// D at most 16.
const A_REG: u32 = 0;
const B_REG: u32 = 8;
const C_REG: u32 = 16;
const D_REG: u32 = 64;

/// Rounds per shape; the best is reported.
const ROUNDS: usize = 5;

/// VOP3P-MAI (CDNA2 ISA, "VOP3P-MAI") with every operand a VGPR and no
/// CBSZ/ABID/BLGP.
fn encode(op: u16) -> [u32; 2] {
    const MAI: u32 = 0xD380_0000;
    [
        MAI | u32::from(op) << 16 | D_REG,
        (0x100 | A_REG) | (0x100 | B_REG) << 9 | (0x100 | C_REG) << 18,
    ]
}

/// xorshift64: deterministic register contents.
fn next(state: &mut u64) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 16) as u32
}

/// A value in ±[0.25, 2), as operands of a GEMM might be.
fn unit(state: &mut u64) -> f32 {
    let mag = 0.25 + (next(state) % 7000) as f32 / 4000.0;
    if next(state) & 1 == 0 { mag } else { -mag }
}

/// One register word of shape `name`'s A/B operands or (`c`) its C, the
/// `high` word of a pair for f64: ordinary numbers of the operand's type.
fn word(name: &str, c: bool, high: bool, state: &mut u64) -> u32 {
    if name.contains("f64") {
        let v = f64::from(unit(state)).to_bits() ^ u64::from(next(state) & 0xFFFF);
        return if high { (v >> 32) as u32 } else { v as u32 };
    }
    if name.contains("i8") || (c && name.contains("i32")) {
        return next(state);
    }
    if !c && name.contains("f16") {
        let lo = f32_to_f16(unit(state));
        return u32::from(lo) | u32::from(f32_to_f16(unit(state))) << 16;
    }
    unit(state).to_bits()
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.5);
    let filter = std::env::args().nth(2).unwrap_or_default();
    let round = Duration::from_secs_f64(seconds / ROUNDS as f64);
    let code = CodeIndex::default();
    let mem = Memory::new();
    let mut lds = [0u8; 0];
    let mut events = Vec::new();
    for name in SHAPES.iter().filter(|n| n.contains(filter.as_str())) {
        let Some(op) = VOP3P.iter().find(|o| o.on(Target::Gfx90a) == *name) else {
            eprintln!("{name}: not in the opcode table");
            std::process::exit(1);
        };
        let inst = match decode(&encode(op.opcode), Target::Gfx90a) {
            Ok(inst) if inst.mnemonic == *name => inst,
            other => {
                eprintln!("{name}: decodes as {other:?}");
                std::process::exit(1);
            }
        };
        let Some(exec) = lookup(name) else {
            eprintln!("{name}: not implemented");
            std::process::exit(1);
        };
        let mut w = Wave::new(128, 128);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for r in A_REG..D_REG {
            let c = r >= C_REG;
            let regs = w.v.get_mut(r as usize).expect("register in range");
            for x in regs.iter_mut() {
                *x = word(name, c, r % 2 == 1, &mut state);
            }
        }
        let mut ctx = Ctx {
            code: &code,
            mem: &mem,
            lds: &mut lds,
            target: Target::Gfx90a,
            pc: 0,
            events: &mut events,
        };
        let mut best = 0f64;
        for _ in 0..ROUNDS {
            let start = Instant::now();
            let mut runs = 0u64;
            while start.elapsed() < round {
                for _ in 0..64 {
                    if let Err(e) = exec(black_box(&mut w), black_box(&inst), &mut ctx) {
                        eprintln!("{name}: {e:?}");
                        std::process::exit(1);
                    }
                }
                runs += 64;
            }
            best = best.max(runs as f64 / start.elapsed().as_secs_f64());
        }
        let sum = w.v[D_REG as usize..]
            .iter()
            .flatten()
            .fold(0u32, |s, &x| s.rotate_left(1) ^ x);
        println!("{name:28} {best:>12.0} inst/s  (D checksum {sum:08x})");
    }
}
