//! Divergent control flow: loops whose trip counts depend on each lane's
//! data, branches that split a wave, nested loops left early.
//!
//! These exist so the simulator's EXEC-mask handling (`s_and_saveexec`,
//! `s_or_b64 exec`, `s_cbranch_execz`/`execnz`, `s_andn2_b64` loop exits)
//! meets what LLVM's structurizer really emits. Each kernel is grid-stride;
//! the test computes the same functions on the CPU.

use crate::work_item_x;

/// `dst[i]` = the number of Collatz steps from `src[i]` to 1, or `limit`
/// if it takes that many (0 stays 0: it never reaches 1, so report `limit`).
///
/// Each lane leaves the loop on its own iteration, and the even/odd branch
/// splits the wave on every step.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn collatz_steps(src: *const u32, dst: *mut u32, len: u64, limit: u32) {
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` and `dst` `len` elements each, and
        // `i < len`.
        let x = unsafe { src.add(i as usize).read() };
        let mut x = u64::from(x);
        let mut steps = 0;
        while x != 1 && steps < limit {
            x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
            steps += 1;
        }
        // SAFETY: as above.
        unsafe { dst.add(i as usize).write(steps) };
    }
}

/// `dst[i]` = the first pair `(a, b)`, `a < b < window`, of `src[i + a]`
/// and `src[i + b]` (indices past `len` wrap to the start) whose sum is
/// `target` modulo 64, encoded `a << 8 | b`; `0xFFFF` when none is.
///
/// A nested loop left from the inner level with a labelled break, with a
/// memory load in the inner body; a lane that finds its pair early idles
/// while the others search.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn first_pair_mod64(
    src: *const u32,
    dst: *mut u32,
    len: u64,
    window: u32,
    target: u32,
) {
    let at = |k: u64| -> u32 {
        // SAFETY: `k % len < len`, and `src` holds `len` elements.
        unsafe { src.add((k % len) as usize).read() }
    };
    for i in work_item_x().stride(len) {
        let mut found = 0xFFFF;
        'search: for a in 0..window {
            let va = at(i + u64::from(a));
            for b in a + 1..window {
                if va.wrapping_add(at(i + u64::from(b))) % 64 == target % 64 {
                    found = a << 8 | b;
                    break 'search;
                }
            }
        }
        // SAFETY: the test gives `dst` `len` elements, and `i < len`.
        unsafe { dst.add(i as usize).write(found) };
    }
}

/// `dst[i]` = a value computed down one of four paths chosen by the low
/// bits of `src[i]`: the smallest prime factor (trial division, an early
/// exit), the bit-reversal, the population count times the number of
/// leading zeros, or a multiply-xorshift round.
///
/// A multi-way branch that LLVM cannot turn into selects, since one arm is
/// a loop.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn branch_mix(src: *const u32, dst: *mut u32, len: u64) {
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` and `dst` `len` elements each, and
        // `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        let out = match v & 3 {
            0 => smallest_factor(v >> 12),
            1 => v.reverse_bits(),
            2 => v.count_ones() * v.leading_zeros(),
            _ => {
                let m = v.wrapping_mul(0x9E37_79B9);
                m ^ m >> 15
            }
        };
        // SAFETY: as above.
        unsafe { dst.add(i as usize).write(out) };
    }
}

/// The smallest prime factor of `n` (`n` itself when prime; 0 and 1 map to
/// themselves).
#[inline(always)]
fn smallest_factor(n: u32) -> u32 {
    if n < 4 {
        return n;
    }
    let mut d = 2;
    while d * d <= n {
        if n % d == 0 {
            return d;
        }
        d += 1;
    }
    n
}
