//! Global atomics from many waves and workgroups onto a few locations.
//!
//! Every operation here is commutative and associative, so the final
//! values do not depend on the order in which the simulator runs waves or
//! host threads, and the test checks them exactly. Orderings are `Relaxed`
//! except where a kernel says otherwise: only the read-modify-write itself
//! matters, and relaxed atomics compile to the bare `global_atomic_*`
//! instructions (LLVM AMDGPUUsage, memory model: no cache maintenance for
//! monotonic).

use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::work_item_x;

/// `stats[0] += 1`, `stats[1] += v`, `stats[2] = max(stats[2], v)`,
/// `stats[3] = min(stats[3], v)` and `stats[4] ^= v` for every `v` in
/// `src[..len]` (u32, wrapping), starting from whatever `stats` holds.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn atomic_stats_u32(src: *const u32, len: u64, stats: *mut u32) {
    // SAFETY: the test gives `stats` five u32, 4-byte aligned, accessed only
    // atomically during the dispatch.
    let [count, sum, max, min, xor] =
        [0, 1, 2, 3, 4].map(|k| unsafe { AtomicU32::from_ptr(stats.add(k)) });
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` `len` elements, and `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        count.fetch_add(1, Ordering::Relaxed);
        sum.fetch_add(v, Ordering::Relaxed);
        max.fetch_max(v, Ordering::Relaxed);
        min.fetch_min(v, Ordering::Relaxed);
        xor.fetch_xor(v, Ordering::Relaxed);
    }
}

/// `tickets[i]` = the value `counter` held when element `i` took it
/// (`fetch_add(1)`, acquire-release): the tickets are a permutation of
/// `start..start + len` whatever the order.
///
/// Uses the returned old value (GLC/SC0 atomics) and, being `AcqRel` at
/// system scope, the cache-maintenance instructions around it.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn atomic_tickets_u32(counter: *mut u32, tickets: *mut u32, len: u64) {
    // SAFETY: the test gives `counter` one aligned u32, accessed only
    // atomically during the dispatch.
    let counter = unsafe { AtomicU32::from_ptr(counter) };
    for i in work_item_x().stride(len) {
        let t = counter.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the test gives `tickets` `len` elements, and `i < len`.
        unsafe { tickets.add(i as usize).write(t) };
    }
}

/// `acc[0] += v`, `acc[1] = max(acc[1], v)` (signed), `acc[2] &= v`, and
/// `acc[3] *= 2v + 1` by a compare-exchange loop (multiplication mod 2^64
/// has no atomic instruction), for every `v` in `src[..len]`.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn atomic_stats_u64(src: *const u64, len: u64, acc: *mut u64) {
    // SAFETY: the test gives `acc` four u64, 8-byte aligned, accessed only
    // atomically during the dispatch; i64 and u64 share a layout.
    let (sum, max, and, product) = unsafe {
        (
            AtomicU64::from_ptr(acc),
            AtomicI64::from_ptr(acc.add(1).cast()),
            AtomicU64::from_ptr(acc.add(2)),
            AtomicU64::from_ptr(acc.add(3)),
        )
    };
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` `len` elements, and `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        sum.fetch_add(v, Ordering::Relaxed);
        max.fetch_max(v as i64, Ordering::Relaxed);
        and.fetch_and(v, Ordering::Relaxed);
        let factor = v.wrapping_mul(2).wrapping_add(1);
        let mut old = product.load(Ordering::Relaxed);
        while let Err(seen) = product.compare_exchange_weak(
            old,
            old.wrapping_mul(factor),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            old = seen;
        }
    }
}

/// `total = min(cap, total + Σ src)` by a 32-bit compare-exchange loop: a
/// saturating add of non-negative values reaches the same result in any
/// order.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn atomic_saturating_add_u32(
    src: *const u32,
    len: u64,
    total: *mut u32,
    cap: u32,
) {
    // SAFETY: the test gives `total` one aligned u32, accessed only
    // atomically during the dispatch.
    let total = unsafe { AtomicU32::from_ptr(total) };
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` `len` elements, and `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        total.update(Ordering::Relaxed, Ordering::Relaxed, |t| {
            t.saturating_add(v).min(cap)
        });
    }
}
