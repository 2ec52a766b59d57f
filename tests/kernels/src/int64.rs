//! 64-bit integer arithmetic. GFX9 has no 64-bit integer divide, and only
//! 32-bit multiplies (`v_mul_lo_u32`, `v_mul_hi_u32`, `v_mad_u64_u32`), so
//! LLVM expands u64 division into a long reciprocal-and-correct sequence
//! (`v_rcp_f32`, `v_cvt_*`, carry chains with `v_addc_co_u32`/
//! `v_subb_co_u32`), multiplication into 32-bit partial products, and
//! shifts into `v_lshlrev_b64`/`v_lshrrev_b64`/`v_ashrrev_i64`.

use crate::work_item_x;

/// Results per element of [`int64_ops`].
pub const INT64_RESULTS: usize = 8;

/// For each `i < len`, with `x = a[i]`, `y = b[i]`, writes to
/// `out[8 i ..]`:
/// 0. `x * y` (wrapping);
/// 1. the high 64 bits of the 128-bit product `x * y`;
/// 2. `x / y`, or `u64::MAX` when `y == 0`;
/// 3. `x % y`, or `x` when `y == 0`;
/// 4. `(x as i64) / (y as i64)` wrapping (`MIN / -1 = MIN`), or 0 when
///    `y == 0`;
/// 5. `(x as i64) % (y as i64)` wrapping, or 0 when `y == 0`;
/// 6. `(x << (y & 63)) ^ (x >> (y >> 58)) ^ ((x as i64) >> (y & 31)) as u64`;
/// 7. the comparisons `x < y`, `x as i64 < y as i64`, `x == y`,
///    `x >= y`, as bits 0..4.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn int64_ops(a: *const u64, b: *const u64, out: *mut u64, len: u64) {
    for i in work_item_x().stride(len) {
        let i = i as usize;
        // SAFETY: the test gives `a` and `b` `len` elements, and `i < len`.
        let (x, y) = unsafe { (a.add(i).read(), b.add(i).read()) };
        let (sx, sy) = (x as i64, y as i64);
        let put = |k: usize, v: u64| {
            // SAFETY: the test gives `out` `INT64_RESULTS * len` elements,
            // and `k < INT64_RESULTS`.
            unsafe { out.add(i * INT64_RESULTS + k).write(v) };
        };
        // Stored one by one: collected in an array first, the results
        // would go through scratch, and this kernel is about arithmetic.
        put(0, x.wrapping_mul(y));
        put(1, ((u128::from(x) * u128::from(y)) >> 64) as u64);
        put(2, x.checked_div(y).unwrap_or(u64::MAX));
        put(3, x.checked_rem(y).unwrap_or(x));
        put(
            4,
            if y == 0 {
                0
            } else {
                sx.wrapping_div(sy) as u64
            },
        );
        put(
            5,
            if y == 0 {
                0
            } else {
                sx.wrapping_rem(sy) as u64
            },
        );
        put(
            6,
            (x << (y & 63)) ^ (x >> (y >> 58)) ^ (sx >> (y & 31)) as u64,
        );
        put(
            7,
            u64::from(x < y)
                | u64::from(sx < sy) << 1
                | u64::from(x == y) << 2
                | u64::from(x >= y) << 3,
        );
    }
}
