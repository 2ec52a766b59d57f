//! LDS with workgroup barriers: data crossing waves of one workgroup.
//!
//! The shared array and the barrier come from `llvm/workgroup.ll` (Rust
//! can declare neither an address-space-3 static nor a barrier that orders
//! memory). Work-items of a workgroup exchange values through LDS, so a
//! simulator that runs waves out of step at a barrier, or loses a store,
//! gives wrong sums. The barrier is only ever reached in workgroup-uniform
//! control flow: every loop around it has a trip count the whole workgroup
//! agrees on.

use crate::work_item_x;

unsafe extern "C" {
    /// The workgroup's 1024 u32 of LDS, as a generic pointer.
    safe fn aqueduct_test_lds_u32() -> *mut u32;
    /// `s_barrier` between workgroup-scope release and acquire fences.
    safe fn aqueduct_test_workgroup_barrier();
}

/// Capacity of the LDS array, in u32 (`llvm/workgroup.ll`).
const LDS_WORDS: u32 = 1024;

/// How many work-items this workgroup has: all of `workgroup_size`, except
/// in the partial last workgroup of a grid that is not a multiple of it.
#[inline(always)]
fn workgroup_items(workgroup_id: u32, workgroup_size: u32, grid_size: u32) -> u32 {
    workgroup_size.min(grid_size - workgroup_id * workgroup_size)
}

/// `partial[g]` = the wrapping sum of the `src` elements that the work-items
/// of workgroup `g` own under the grid-stride rule, reduced through LDS.
///
/// Each work-item sums its own elements into its LDS slot; then the
/// workgroup folds the upper half of the live slots onto the lower half,
/// with a barrier between rounds, until one slot is left. Odd counts and
/// partial workgroups fold the middle slot forward unchanged.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn workgroup_sum_u32(src: *const u32, partial: *mut u32, len: u64) {
    let item = work_item_x();
    let lds = aqueduct_test_lds_u32();
    let lid = item.local_id;
    let mut sum = 0u32;
    for i in item.stride(len) {
        // SAFETY: the test gives `src` `len` elements, and `i < len`.
        sum = sum.wrapping_add(unsafe { src.add(i as usize).read() });
    }
    if lid >= LDS_WORDS {
        return;
    }
    // SAFETY: `lid < LDS_WORDS`; each work-item writes only its own slot
    // before the barrier.
    unsafe { lds.add(lid as usize).write(sum) };
    aqueduct_test_workgroup_barrier();
    let mut live = workgroup_items(item.workgroup_id, item.workgroup_size, item.grid_size);
    while live > 1 {
        let half = live.div_ceil(2);
        if lid < live - half {
            // SAFETY: `lid + half < live <= LDS_WORDS`; slot `lid + half`
            // was last written before the barrier above, and only this
            // work-item writes slot `lid` in this round.
            unsafe {
                let other = lds.add((lid + half) as usize).read();
                let mine = lds.add(lid as usize);
                mine.write(mine.read().wrapping_add(other));
            }
        }
        aqueduct_test_workgroup_barrier();
        live = half;
    }
    if lid == 0 {
        // SAFETY: the test gives `partial` one element per workgroup; slot
        // 0 holds the total after the last barrier.
        unsafe { partial.add(item.workgroup_id as usize).write(lds.read()) };
    }
}

/// `dst[g] = src[g']` where `g'` mirrors `g` within its workgroup
/// (`local_id` ↦ `items - 1 - local_id`), for `g < len`.
///
/// Index-guarded, not grid-stride (one element per work-item, so the grid
/// must cover `len`). Every work-item stores before the barrier and loads
/// another's slot after it; in a multi-wave workgroup the loads cross
/// waves.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn workgroup_reverse_u32(src: *const u32, dst: *mut u32, len: u64) {
    let item = work_item_x();
    let lds = aqueduct_test_lds_u32();
    let lid = item.local_id;
    let g = item.global_id();
    let items = workgroup_items(item.workgroup_id, item.workgroup_size, item.grid_size);
    if lid >= LDS_WORDS {
        return;
    }
    // Work-items past `len` still take part in the barrier. In a workgroup
    // that straddles `len` the mirror of an in-range item may be out of
    // range; it then reads their marker.
    let value = if g < len {
        // SAFETY: the test gives `src` `len` elements, and `g < len`.
        unsafe { src.add(g as usize).read() }
    } else {
        OUT_OF_RANGE
    };
    // SAFETY: `lid < LDS_WORDS`; each work-item writes only its own slot.
    unsafe { lds.add(lid as usize).write(value) };
    aqueduct_test_workgroup_barrier();
    if g < len {
        // SAFETY: `items - 1 - lid < items <= LDS_WORDS` (`lid < items`
        // since this work-item exists); that slot was written before the
        // barrier. The test gives `dst` `len` elements.
        unsafe {
            let mirrored = lds.add((items - 1 - lid) as usize).read();
            dst.add(g as usize).write(mirrored);
        }
    }
}

/// What [`workgroup_reverse_u32`] stores for work-items past the end.
pub const OUT_OF_RANGE: u32 = 0x0BAD_0BAD;
