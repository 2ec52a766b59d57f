//! Execution suite, part 2: the dedicated test kernels of
//! `tests/kernels` (divergent control flow, loops, LDS with barriers,
//! atomics from many waves, f16/bf16 conversions, 64-bit integer math,
//! scratch) run on the simulator for gfx90a and gfx942 and match CPU
//! references on random inputs.
//!
//! Every output buffer is poisoned before each run and has one poisoned
//! element past its end that must survive; lengths are odd, and each
//! kernel runs under several grid/workgroup shapes (single waves, partial
//! waves, multi-wave workgroups, partial last workgroups, grids smaller
//! and larger than the data). The references are computed here, from the
//! definitions in the kernels' doc comments, not from the simulator's
//! helpers: f64 where rounding matters, exact integer arithmetic elsewhere.

use aqueduct_tests::{Args, Rng, TEST_KERNELS, Word, assert_same, simulated};

/// (grid, workgroup) shapes: one full wave; a partial wave per workgroup
/// and a partial last workgroup; multi-wave workgroups with a partial last
/// one; one partial 1024-item workgroup of nine waves, the last of one
/// lane; and fewer work-items than elements in all but the largest inputs.
const SHAPES: &[(u32, u16)] = &[(64, 64), (77, 33), (1000, 256), (300, 128), (513, 1024)];

// ---------------------------------------------------------------------------
// Divergent control flow
// ---------------------------------------------------------------------------

fn collatz_reference(x: u32, limit: u32) -> u32 {
    let mut x = u64::from(x);
    let mut steps = 0;
    while x != 1 && steps < limit {
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

#[test]
fn collatz_lanes_leave_the_loop_on_their_own_step() {
    let mut rng = Rng(0x0C01_1A72);
    let len = 1001;
    let limit = 150;
    for sim in simulated(TEST_KERNELS) {
        // Small values finish early, large ones often hit the limit; 0 and
        // 1 take the never/immediately exits.
        let mut src: Vec<u32> = (0..len)
            .map(|k| match k % 3 {
                0 => rng.below(64) as u32,
                1 => rng.below(100_000) as u32,
                _ => rng.u32(),
            })
            .collect();
        src[0] = 0;
        src[1] = 1;
        let want: Vec<u32> = src.iter().map(|&x| collatz_reference(x, limit)).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for &shape in SHAPES {
            sim.repoison::<u32>(dst, len);
            let args = Args::default().arg(s).arg(dst).arg(len as u64).arg(limit);
            sim.run("collatz_steps", shape, &args);
            let got = sim.output::<u32>(dst, len, "collatz_steps");
            assert_same(&got, &want, &sim.at(&format!("{shape:?}")));
        }
        sim.free(&[s, dst]);
    }
}

#[test]
fn first_pair_search_breaks_out_of_the_inner_loop() {
    let mut rng = Rng(0xF1257);
    let len = 777;
    let window = 11u32;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let target = rng.u32();
        let want: Vec<u32> = (0..len)
            .map(|i| {
                let at = |k: usize| src[k % len];
                for a in 0..window as usize {
                    for b in a + 1..window as usize {
                        if at(i + a).wrapping_add(at(i + b)) % 64 == target % 64 {
                            return (a << 8 | b) as u32;
                        }
                    }
                }
                0xFFFF
            })
            .collect();
        // Both outcomes occur, so both exits of the nest are taken.
        assert!(want.contains(&0xFFFF) && want.iter().any(|&w| w != 0xFFFF));
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for &shape in SHAPES {
            sim.repoison::<u32>(dst, len);
            let args = Args::default()
                .arg(s)
                .arg(dst)
                .arg(len as u64)
                .arg(window)
                .arg(target);
            sim.run("first_pair_mod64", shape, &args);
            let got = sim.output::<u32>(dst, len, "first_pair_mod64");
            assert_same(&got, &want, &sim.at(&format!("{shape:?}")));
        }
        sim.free(&[s, dst]);
    }
}

fn smallest_factor_reference(n: u32) -> u32 {
    if n < 4 {
        return n;
    }
    (2..)
        .take_while(|d| d * d <= n)
        .find(|&d| n.is_multiple_of(d))
        .unwrap_or(n)
}

#[test]
fn four_way_branch_takes_every_arm_in_one_wave() {
    let mut rng = Rng(0xB2A2C4);
    let len = 1003;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let want: Vec<u32> = src
            .iter()
            .map(|&v| match v & 3 {
                0 => smallest_factor_reference(v >> 12),
                1 => v.reverse_bits(),
                2 => v.count_ones() * v.leading_zeros(),
                _ => {
                    let m = v.wrapping_mul(0x9E37_79B9);
                    m ^ m >> 15
                }
            })
            .collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for &shape in SHAPES {
            sim.repoison::<u32>(dst, len);
            let args = Args::default().arg(s).arg(dst).arg(len as u64);
            sim.run("branch_mix", shape, &args);
            let got = sim.output::<u32>(dst, len, "branch_mix");
            assert_same(&got, &want, &sim.at(&format!("{shape:?}")));
        }
        sim.free(&[s, dst]);
    }
}

// ---------------------------------------------------------------------------
// LDS and barriers
// ---------------------------------------------------------------------------

/// The LDS the kernels' shared array needs (`llvm/workgroup.ll`).
const LDS_BYTES: u32 = 4096;

#[test]
fn workgroup_sums_reduce_through_lds_across_waves() {
    let mut rng = Rng(0x5_11A);
    let len = 4099;
    for sim in simulated(TEST_KERNELS) {
        let k = sim.p.kernel("workgroup_sum_u32").expect("kernel");
        assert!(k.descriptor.group_segment_fixed_size >= LDS_BYTES);
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let s = sim.upload(&src);
        for &(grid, wg) in SHAPES {
            let groups = grid.div_ceil(u32::from(wg)) as usize;
            // Element i belongs to the work-item i mod grid, and that to
            // workgroup (i mod grid) / wg.
            let mut want = vec![0u32; groups];
            for (i, &v) in src.iter().enumerate() {
                let g = (i % grid as usize) / usize::from(wg);
                want[g] = want[g].wrapping_add(v);
            }
            let partial = sim.poisoned::<u32>(groups);
            let args = Args::default().arg(s).arg(partial).arg(len as u64);
            sim.run("workgroup_sum_u32", (grid, wg), &args);
            let got = sim.output::<u32>(partial, groups, "workgroup_sum_u32");
            assert_same(&got, &want, &sim.at(&format!("grid {grid} workgroup {wg}")));
            sim.free(&[partial]);
        }
        sim.free(&[s]);
    }
}

/// What `workgroup_reverse_u32` reads from work-items past the end
/// (`lds::OUT_OF_RANGE`).
const OUT_OF_RANGE: u32 = 0x0BAD_0BAD;

#[test]
fn workgroup_reverse_reads_other_waves_slots_after_the_barrier() {
    let mut rng = Rng(0x2E7E25E);
    let len = 1001usize;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        // One element per work-item: grids cover `len`, exactly or with
        // idle work-items in the last workgroup.
        for (grid, wg) in [(1001u32, 64u16), (1001, 1024), (1024, 256), (1100, 96)] {
            sim.repoison::<u32>(dst, len);
            let wg32 = u32::from(wg);
            let want: Vec<u32> = (0..len as u32)
                .map(|g| {
                    let group = g / wg32;
                    let items = wg32.min(grid - group * wg32);
                    let mirror = group * wg32 + items - 1 - g % wg32;
                    src.get(mirror as usize).copied().unwrap_or(OUT_OF_RANGE)
                })
                .collect();
            let args = Args::default().arg(s).arg(dst).arg(len as u64);
            sim.run("workgroup_reverse_u32", (grid, wg), &args);
            let got = sim.output::<u32>(dst, len, "workgroup_reverse_u32");
            assert_same(&got, &want, &sim.at(&format!("grid {grid} workgroup {wg}")));
        }
        sim.free(&[s, dst]);
    }
}

// ---------------------------------------------------------------------------
// Atomics from many waves
// ---------------------------------------------------------------------------

#[test]
fn u32_atomics_from_every_wave_reach_the_exact_totals() {
    let mut rng = Rng(0xA7_0A1C);
    let len = 3001;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let init = [7u32, 11, 5, u32::MAX - 3, 0x55AA_55AA];
        let want = [
            init[0] + len as u32,
            src.iter().fold(init[1], |a, &v| a.wrapping_add(v)),
            src.iter().fold(init[2], |a, &v| a.max(v)),
            src.iter().fold(init[3], |a, &v| a.min(v)),
            src.iter().fold(init[4], |a, &v| a ^ v),
        ];
        let s = sim.upload(&src);
        for &shape in SHAPES {
            let mut with_guard = init.to_vec();
            with_guard.push(u32::POISON);
            let stats = sim.upload(&with_guard);
            let args = Args::default().arg(s).arg(len as u64).arg(stats);
            sim.run("atomic_stats_u32", shape, &args);
            let got = sim.output::<u32>(stats, init.len(), "atomic_stats_u32");
            assert_same(&got, &want, &sim.at(&format!("{shape:?}")));
            sim.free(&[stats]);
        }
        sim.free(&[s]);
    }
}

#[test]
fn fetch_add_hands_out_each_ticket_once() {
    let mut rng = Rng(0x71C_CE75);
    let len = 2049usize;
    for sim in simulated(TEST_KERNELS) {
        let tickets = sim.poisoned::<u32>(len);
        for &shape in SHAPES {
            sim.repoison::<u32>(tickets, len);
            // Near the top of u32, so the tickets wrap.
            let start = u32::MAX - rng.below(len as u64) as u32;
            let counter = sim.upload(&[start, u32::POISON]);
            let args = Args::default().arg(counter).arg(tickets).arg(len as u64);
            sim.run("atomic_tickets_u32", shape, &args);
            let what = sim.at(&format!("{shape:?}"));
            let end = sim.output::<u32>(counter, 1, "atomic_tickets_u32 counter");
            assert_eq!(end, [start.wrapping_add(len as u32)], "{what}");
            let mut got = sim.output::<u32>(tickets, len, "atomic_tickets_u32");
            got.sort_unstable();
            let mut want: Vec<u32> = (0..len as u32).map(|k| start.wrapping_add(k)).collect();
            want.sort_unstable();
            assert_same(&got, &want, &what);
            sim.free(&[counter]);
        }
        sim.free(&[tickets]);
    }
}

#[test]
fn u64_atomics_and_a_cas_loop_reach_the_exact_totals() {
    let mut rng = Rng(0x64_A70);
    let len = 1999;
    for sim in simulated(TEST_KERNELS) {
        // Mostly set bits, so the running AND keeps some until the end.
        let src: Vec<u64> = (0..len)
            .map(|_| rng.next_u64() | 0xF000_0000_0000_000F)
            .collect();
        let init = [u64::MAX - 1000, i64::MIN as u64 + 1, u64::MAX, 3];
        let want = [
            src.iter().fold(init[0], |a, &v| a.wrapping_add(v)),
            src.iter().fold(init[1] as i64, |a, &v| a.max(v as i64)) as u64,
            src.iter().fold(init[2], |a, &v| a & v),
            src.iter().fold(init[3], |a, &v| {
                a.wrapping_mul(v.wrapping_mul(2).wrapping_add(1))
            }),
        ];
        let s = sim.upload(&src);
        for &shape in SHAPES {
            let mut with_guard = init.to_vec();
            with_guard.push(u64::POISON);
            let acc = sim.upload(&with_guard);
            let args = Args::default().arg(s).arg(len as u64).arg(acc);
            sim.run("atomic_stats_u64", shape, &args);
            let got = sim.output::<u64>(acc, init.len(), "atomic_stats_u64");
            assert_same(&got, &want, &sim.at(&format!("{shape:?}")));
            sim.free(&[acc]);
        }
        sim.free(&[s]);
    }
}

#[test]
fn saturating_add_by_cas_stops_at_the_cap() {
    let mut rng = Rng(0x5A7);
    let len = 1501;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.below(1 << 20) as u32).collect();
        let total: u64 = src.iter().map(|&v| u64::from(v)).sum();
        let s = sim.upload(&src);
        for &shape in SHAPES {
            // A cap the sum passes halfway, and one it never reaches.
            for cap in [(total / 2) as u32, u32::MAX] {
                let start = 12_345u32;
                let out = sim.upload(&[start, u32::POISON]);
                let args = Args::default().arg(s).arg(len as u64).arg(out).arg(cap);
                sim.run("atomic_saturating_add_u32", shape, &args);
                let got = sim.output::<u32>(out, 1, "atomic_saturating_add_u32");
                let want = (u64::from(start) + total).min(u64::from(cap)) as u32;
                assert_eq!(got, [want], "{:?} {shape:?} cap {cap}", sim.d.target);
                sim.free(&[out]);
            }
        }
        sim.free(&[s]);
    }
}

// ---------------------------------------------------------------------------
// f16 and bf16 conversions
// ---------------------------------------------------------------------------

/// `x` rounded to a binary float with `mantissa` stored bits, minimum
/// normal exponent `min_exp` and largest finite value `max` (nearest, ties
/// to even, gradual underflow, overflow to infinity), computed in f64:
/// scaling by a power of two is exact and `round_ties_even` rounds once.
fn round_to_format(x: f64, mantissa: i32, min_exp: i32, max: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    // The exponent read from the bits: exact, unlike a rounded log2 just
    // below a power of two.
    let e = ((x.to_bits() >> 52 & 0x7FF) as i32 - 1023).max(min_exp);
    let quantum = 2f64.powi(e - mantissa);
    let r = (x / quantum).round_ties_even() * quantum;
    // Anything rounded past the largest finite value is the next power of
    // two, which the format cannot hold: infinity.
    if r.abs() > max {
        f64::INFINITY.copysign(x)
    } else {
        r
    }
}

/// f64 → f16 value (not bits), IEEE binary16.
fn round_f16(x: f64) -> f64 {
    round_to_format(x, 10, -14, 65504.0)
}

/// The value of an f16 encoding (NaN for NaNs), decoded by hand.
fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from(bits >> 10 & 0x1F);
    let man = f64::from(bits & 0x3FF);
    sign * match exp {
        0 => man * 2f64.powi(-24),
        0x1F if man == 0.0 => f64::INFINITY,
        0x1F => f64::NAN,
        _ => (1.0 + man / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Compares an f32 result with an f64 reference exactly; NaN matches NaN,
/// and the sign of zero counts.
fn same_f32(got: u32, want: f64) -> bool {
    let g = f32::from_bits(got);
    if want.is_nan() {
        return g.is_nan();
    }
    g.to_bits() == (want as f32).to_bits()
}

#[test]
fn f32_to_f16_rounds_to_nearest_even_and_widens_exactly() {
    let mut rng = Rng(0xF16);
    for sim in simulated(TEST_KERNELS) {
        // Exponents from below the f16 subnormals to past its range, and
        // the edges by name: ties at 1 + 2^-11, the subnormal tie 2^-25,
        // the largest finite and the first value that rounds to infinity.
        let mut src: Vec<f32> = (0..1500).map(|_| rng.f32_exp(-27, 17)).collect();
        src.extend([
            0.0,
            -0.0,
            1.0 + 2f32.powi(-11),
            1.0 + 3.0 * 2f32.powi(-11),
            2f32.powi(-25),
            3.0 * 2f32.powi(-25),
            2f32.powi(-24),
            65504.0,
            65519.99,
            65520.0,
            -1e9,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
        ]);
        let len = src.len();
        assert!(len % 2 == 1);
        let s = sim.upload(&src.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let half = sim.poisoned::<u16>(len);
        let back = sim.poisoned::<u32>(len);
        let square = sim.poisoned::<u32>(len);
        for &shape in &SHAPES[..3] {
            for (a, words) in [(half, 2), (back, 4), (square, 4)] {
                if words == 2 {
                    sim.repoison::<u16>(a, len);
                } else {
                    sim.repoison::<u32>(a, len);
                }
            }
            let args = Args::default()
                .arg(s)
                .arg(half)
                .arg(back)
                .arg(square)
                .arg(len as u64);
            sim.run("f32_f16_round_trip", shape, &args);
            let what = sim.at(&format!("{shape:?}"));
            let h = sim.output::<u16>(half, len, "f32_f16_round_trip half");
            let b = sim.output::<u32>(back, len, "f32_f16_round_trip back");
            let q = sim.output::<u32>(square, len, "f32_f16_round_trip square");
            for i in 0..len {
                let want = round_f16(f64::from(src[i]));
                let got = f16_value(h[i]);
                let ok = if want.is_nan() {
                    got.is_nan()
                } else {
                    got == want && (got.is_sign_negative() == want.is_sign_negative())
                };
                assert!(
                    ok,
                    "{what}: {:e} ({:#010x}) → f16 {:#06x} = {got:e}, want {want:e}",
                    src[i],
                    src[i].to_bits(),
                    h[i]
                );
                assert!(same_f32(b[i], want), "{what}: widened {:#06x}", h[i]);
                // The f16 product of two f16 values is exact in f64.
                let sq = round_f16(want * want);
                assert!(
                    same_f32(q[i], sq),
                    "{what}: {:#06x} squared in f16 = {:e}, want {sq:e}",
                    h[i],
                    f32::from_bits(q[i])
                );
            }
        }
        sim.free(&[s, half, back, square]);
    }
}

#[test]
fn every_f16_encoding_widens_to_its_f32_value() {
    for sim in simulated(TEST_KERNELS) {
        // All 65536 encodings and one more, so the length is odd.
        let src: Vec<u16> = (0..=u16::MAX).chain([0x3C00]).collect();
        let len = src.len();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for shape in [(4096, 256), (1001, 1024)] {
            sim.repoison::<u32>(dst, len);
            let args = Args::default().arg(s).arg(dst).arg(len as u64);
            sim.run("f16_bits_to_f32", shape, &args);
            let got = sim.output::<u32>(dst, len, "f16_bits_to_f32");
            for (i, &bits) in src.iter().enumerate() {
                // NaNs come out quiet with the payload moved up 13 bits
                // (IEEE 754-2019 §6.2.3 recommends keeping the payload).
                let want = if bits & 0x7C00 == 0x7C00 && bits & 0x3FF != 0 {
                    u32::from(bits & 0x8000) << 16 | 0x7FC0_0000 | u32::from(bits & 0x3FF) << 13
                } else {
                    (f16_value(bits) as f32).to_bits()
                };
                assert_eq!(
                    got[i], want,
                    "{:?} {shape:?}: f16 {bits:#06x} → {:#010x}, want {want:#010x}",
                    sim.d.target, got[i]
                );
            }
        }
        sim.free(&[s, dst]);
    }
}

/// f32 → bf16 bits: f64 rounding to 8 significand bits with f32's exponent
/// range, NaNs quieted.
fn bf16_reference(x: f32) -> u16 {
    if x.is_nan() {
        return (x.to_bits() >> 16) as u16 | 0x0040;
    }
    let r = round_to_format(f64::from(x), 7, -126, f64::from(f32::MAX));
    let bits = (r as f32).to_bits();
    assert_eq!(bits & 0xFFFF, 0, "{x:e} rounded to {r:e}");
    (bits >> 16) as u16
}

#[test]
fn f32_to_bf16_rounds_ties_to_even_and_products_are_exact() {
    let mut rng = Rng(0xBF16);
    for sim in simulated(TEST_KERNELS) {
        let mut src: Vec<f32> = (0..1200).map(|_| rng.f32_exp(-60, 60)).collect();
        src.extend(
            [
                0x3F80_8000u32, // tie, rounds down to even
                0x3F81_8000,    // tie, rounds up to even
                0x3F80_8001,    // just past the tie
                0x7F7F_FFFF,    // f32::MAX rounds to infinity
                0x0000_0001,    // the smallest subnormal rounds to zero
                0x0000_8000,    // a subnormal tie
                0x8001_8000,    // a negative subnormal tie that rounds up
                0x7F80_0000,
                0xFF80_0000,
                0x7FC0_0001,
                0x7F80_0001, // signalling NaN: quieted
            ]
            .map(f32::from_bits),
        );
        let len = src.len();
        assert!(len % 2 == 1);
        let want_bf: Vec<u16> = src.iter().map(|&x| bf16_reference(x)).collect();
        let widen = |b: u16| f64::from(f32::from_bits(u32::from(b) << 16));
        let s = sim.upload(&src.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let bf = sim.poisoned::<u16>(len);
        let prod = sim.poisoned::<u32>(len);
        for &shape in &SHAPES[..3] {
            sim.repoison::<u16>(bf, len);
            sim.repoison::<u32>(prod, len);
            let args = Args::default().arg(s).arg(bf).arg(prod).arg(len as u64);
            sim.run("f32_bf16_round", shape, &args);
            let what = sim.at(&format!("{shape:?}"));
            let got_bf = sim.output::<u16>(bf, len, "f32_bf16_round bf");
            let got_prod = sim.output::<u32>(prod, len, "f32_bf16_round prod");
            assert_same(&got_bf, &want_bf, &what);
            for i in 0..len {
                // Two 8-bit significands: the f64 product is exact, and
                // one rounding to f32 is the f32 multiply.
                let want = widen(want_bf[i]) * widen(want_bf[len - 1 - i]);
                assert!(
                    same_f32(got_prod[i], want),
                    "{what}: product {i} = {:e}, want {want:e}",
                    f32::from_bits(got_prod[i])
                );
            }
        }
        sim.free(&[s, bf, prod]);
    }
}

// ---------------------------------------------------------------------------
// 64-bit integers
// ---------------------------------------------------------------------------

/// Results per element of `int64_ops` (`int64::INT64_RESULTS`).
const INT64_RESULTS: usize = 8;

fn int64_reference(x: u64, y: u64) -> [u64; INT64_RESULTS] {
    let (sx, sy) = (x as i64, y as i64);
    let wide = u128::from(x) * u128::from(y);
    [
        wide as u64,
        (wide >> 64) as u64,
        x.checked_div(y).unwrap_or(u64::MAX),
        if y == 0 { x } else { x % y },
        match (y, sx, sy) {
            (0, ..) => 0,
            (_, i64::MIN, -1) => i64::MIN as u64,
            _ => (sx / sy) as u64,
        },
        match (y, sx, sy) {
            (0, ..) | (_, i64::MIN, -1) => 0,
            _ => (sx % sy) as u64,
        },
        (x << (y & 63)) ^ (x >> (y >> 58)) ^ (sx >> (y & 31)) as u64,
        u64::from(x < y)
            | u64::from(sx < sy) << 1
            | u64::from(x == y) << 2
            | u64::from(x >= y) << 3,
    ]
}

#[test]
fn u64_and_i64_arithmetic_matches_the_cpu() {
    let mut rng = Rng(0x6464);
    for sim in simulated(TEST_KERNELS) {
        // Random pairs, divisors of every magnitude (the expansion takes
        // different paths for divisors above and below 2^32), and the
        // edge cases by name.
        let mut pairs: Vec<(u64, u64)> = (0..600)
            .map(|_| {
                let y = rng.next_u64() >> rng.below(64);
                (rng.next_u64(), y)
            })
            .collect();
        pairs.extend([
            (5, 0),
            (i64::MIN as u64, u64::MAX),
            (i64::MIN as u64, 1),
            (u64::MAX, u64::MAX),
            (u64::MAX, 1),
            (12345, 12345),
            (1 << 32, (1 << 32) - 1),
            ((1 << 32) - 1, 1 << 32),
            (0, 7),
            (-7i64 as u64, 2),
            (7, -2i64 as u64),
        ]);
        let len = pairs.len();
        assert!(len % 2 == 1);
        let a = sim.upload(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
        let b = sim.upload(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
        let out = sim.poisoned::<u64>(len * INT64_RESULTS);
        for &shape in SHAPES {
            sim.repoison::<u64>(out, len * INT64_RESULTS);
            let args = Args::default().arg(a).arg(b).arg(out).arg(len as u64);
            sim.run("int64_ops", shape, &args);
            let got = sim.output::<u64>(out, len * INT64_RESULTS, "int64_ops");
            for (i, &(x, y)) in pairs.iter().enumerate() {
                let want = int64_reference(x, y);
                let got = &got[i * INT64_RESULTS..][..INT64_RESULTS];
                assert_eq!(
                    got, want,
                    "{:?} {shape:?}: x = {x:#x}, y = {y:#x}",
                    sim.d.target
                );
            }
        }
        sim.free(&[a, b, out]);
    }
}

// ---------------------------------------------------------------------------
// Scratch
// ---------------------------------------------------------------------------

/// Slots of the private table (`scratch::SCRATCH_SLOTS`).
const SCRATCH_SLOTS: usize = 96;

fn scratch_reference(v: u32, rounds: u32) -> u32 {
    let mut t: Vec<u32> = (0..SCRATCH_SLOTS as u32)
        .map(|k| v.wrapping_mul(k + 1) ^ k)
        .collect();
    for _ in 0..rounds {
        for k in 0..SCRATCH_SLOTS {
            let j = (t[k] % SCRATCH_SLOTS as u32) as usize;
            t[j] = t[j].wrapping_add(t[k]);
            t[k] = t[k].rotate_left(j as u32);
        }
    }
    (0..SCRATCH_SLOTS as u32).fold(0, |s, k| {
        s.wrapping_add(t[k as usize].wrapping_mul(2 * k + 1))
    })
}

#[test]
fn private_arrays_indexed_at_run_time_live_in_scratch() {
    let mut rng = Rng(0x05C2_A7C4);
    let len = 301;
    let rounds = 3;
    for sim in simulated(TEST_KERNELS) {
        let k = sim.p.kernel("scratch_shuffle").expect("kernel");
        let private = k.descriptor.private_segment_fixed_size;
        assert!(
            private as usize >= SCRATCH_SLOTS * 4,
            "{:?}: private_segment_fixed_size {private}",
            sim.d.target
        );
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let want: Vec<u32> = src.iter().map(|&v| scratch_reference(v, rounds)).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for &shape in SHAPES {
            sim.repoison::<u32>(dst, len);
            let args = Args::default().arg(s).arg(dst).arg(len as u64).arg(rounds);
            sim.run("scratch_shuffle", shape, &args);
            let got = sim.output::<u32>(dst, len, "scratch_shuffle");
            assert_same(&got, &want, &sim.at(&format!("{shape:?}")));
        }
        sim.free(&[s, dst]);
    }
}
