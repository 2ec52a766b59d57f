//! Scratch (private segment) memory: a per-work-item array indexed by
//! values computed at run time, too large for LLVM to keep in registers
//! (its promote-alloca-to-vector gives up on arrays this size with
//! dynamic indices), so it lives in scratch: `scratch_load/store_dword` on
//! gfx942 (architected flat scratch), `buffer_load/store_dword ... offen`
//! through the private segment buffer on gfx90a. The kernel descriptor's
//! private_segment_fixed_size is then non-zero.

use crate::work_item_x;

/// u32 slots in each work-item's private array.
pub const SCRATCH_SLOTS: usize = 96;

/// `dst[i]` = a checksum of a private table shuffled by `src[i]`:
///
/// ```text
/// t[k] = v * (k + 1) ^ k          for k < 96
/// repeat `rounds` times, for k < 96:
///     j = t[k] % 96;  t[j] = t[j] + t[k] (wrapping);  t[k] = t[k].rotate_left(j)
/// result = Σ t[k] * (2k + 1)      (wrapping)
/// ```
///
/// Every access after the first loop goes to a data-dependent slot.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn scratch_shuffle(src: *const u32, dst: *mut u32, len: u64, rounds: u32) {
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` and `dst` `len` elements each, and
        // `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        let mut t = [0u32; SCRATCH_SLOTS];
        for (k, slot) in t.iter_mut().enumerate() {
            *slot = v.wrapping_mul(k as u32 + 1) ^ k as u32;
        }
        for _ in 0..rounds {
            for k in 0..SCRATCH_SLOTS {
                let j = (t[k] % SCRATCH_SLOTS as u32) as usize;
                t[j] = t[j].wrapping_add(t[k]);
                t[k] = t[k].rotate_left(j as u32);
            }
        }
        let sum = t.iter().enumerate().fold(0u32, |s, (k, &x)| {
            s.wrapping_add(x.wrapping_mul(2 * k as u32 + 1))
        });
        // SAFETY: as above.
        unsafe { dst.add(i as usize).write(sum) };
    }
}
