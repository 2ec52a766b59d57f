//! Program control and the system side of a wave: calls, traps, halts,
//! messages to the host, clocks, early ends, and accesses outside the
//! memory a kernel owns.
//!
//! The simulator must run `s_getpc`/`s_swappc`/`s_setpc`, `s_trap`,
//! `s_sethalt`, `s_sendmsg`, `s_sleep`, the clocks (`s_memtime`/
//! `s_memrealtime` on GFX9; `s_getreg_b32` SHADER_CYCLES and
//! `s_sendmsg_rtn_b64` GET_REALTIME on GFX11/GFX12) and `s_endpgm` as
//! the hardware runs them, and a global, LDS or scratch
//! access out of range must stop the wave with a fault report instead of
//! touching host memory. These kernels produce each of those, most of
//! them only when the test asks (a kernarg or an element says so), so the
//! same kernel also shows the quiet path is unharmed.
//!
//! Inline assembly is used only where Rust has no way to say the
//! instruction (an `s_sendmsg` with M0, a `ds_read_b32` at an address the
//! compiler cannot see); everything else is the code rustc emits for
//! ordinary Rust, which is what the simulator has to run.

use core::arch::amdgpu::s_sleep;
use core::arch::asm;
use core::hint::black_box;

use crate::work_item_x;

unsafe extern "C" {
    /// The shader-clock counter: `s_memtime` on GFX9, `s_getreg_b32`
    /// SHADER_CYCLES (20 bits) on GFX11, SHADER_CYCLES_HI/LO (64 bits)
    /// on GFX12 (LLVM's lowering of `llvm.readcyclecounter`).
    #[link_name = "llvm.readcyclecounter"]
    safe fn shader_cycles() -> u64;
    /// The constant-rate real-time clock (device/runtime/llvm/clock.ll,
    /// which every code object links): `s_memrealtime` on GFX9,
    /// `s_sendmsg_rtn_b64 MSG_RTN_GET_REALTIME` on GFX11 and later.
    safe fn aqueduct_realtime() -> u64;
    /// The workgroup's 1024 u32 of LDS (`llvm/workgroup.ll`).
    safe fn aqueduct_test_lds_u32() -> *mut u32;
    /// `s_barrier` between workgroup-scope release and acquire fences.
    safe fn aqueduct_test_workgroup_barrier();
}

// ---------------------------------------------------------------------------
// Calls: s_getpc_b64 + s_swappc_b64 into a function, s_setpc_b64 back
// ---------------------------------------------------------------------------

/// `rounds` rounds of a multiply-xorshift hash, each salted with its round
/// number: a loop, so the callee has a body worth a call, and no
/// recursion.
fn hash_rounds(x: u32, rounds: u32) -> u32 {
    let mut h = x;
    for r in 0..rounds {
        h ^= h >> 16;
        h = h.wrapping_mul(0x7FEB_352D);
        h ^= h >> 15;
        h = h.wrapping_add(r);
    }
    h
}

/// `dst[i] = hash_rounds(src[i], rounds)` (see [`hash_rounds`]).
///
/// The pinned rustc puts no `noinline` on an `#[inline(never)]` function
/// for amdgcn (the crate's bitcode has none), so LLVM inlines a plain
/// call. Its address instead goes through an empty asm that holds it in
/// an SGPR pair: the call stays, uniform, as `s_getpc_b64`, an
/// `s_add_u32`/`s_addc_u32` of the callee's pc-relative offset and
/// `s_swappc_b64`, and the callee returns with `s_setpc_b64`.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn call_hash(src: *const u32, dst: *mut u32, len: u64, rounds: u32) {
    let mut address = hash_rounds as fn(u32, u32) -> u32 as usize;
    // SAFETY: the asm is empty; it only hides the value from the optimiser.
    unsafe { asm!("; {0}", inout(sgpr64) address, options(pure, nomem, nostack)) };
    // SAFETY: `address` is still `hash_rounds`'s address, unchanged.
    let hash: fn(u32, u32) -> u32 = unsafe { core::mem::transmute(address) };
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` and `dst` `len` elements each, and
        // `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        // SAFETY: as above.
        unsafe { dst.add(i as usize).write(hash(v, rounds)) };
    }
}

#[inline(never)]
fn rotate_xor(v: u32) -> u32 {
    v.rotate_left(7) ^ 0xA5A5_0F0F
}

#[inline(never)]
fn negate_square(v: u32) -> u32 {
    v.wrapping_mul(v).wrapping_neg()
}

#[inline(never)]
fn bit_summary(v: u32) -> u32 {
    v.count_ones() << 16 | v.leading_zeros() << 8 | v.trailing_zeros()
}

#[inline(never)]
fn halve_or_triple(v: u32) -> u32 {
    if v % 2 == 0 {
        v / 2
    } else {
        v.wrapping_mul(3).wrapping_add(1)
    }
}

/// `dst[i]` = one of four functions of `src[i]`, chosen by its low two
/// bits: 0 → `rotl(v, 7) ^ 0xA5A50F0F`, 1 → `-(v * v)`, 2 →
/// `popcount << 16 | clz << 8 | ctz`, 3 → `v / 2` if even else `3v + 1`
/// (all wrapping).
///
/// The function is picked through a pointer, so the call is indirect:
/// each lane may want a different target, and LLVM calls them one at a
/// time in a loop over the distinct targets (`v_readfirstlane` of the
/// address, `s_and_saveexec` of the lanes that agree, `s_swappc_b64`).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn call_indirect(src: *const u32, dst: *mut u32, len: u64) {
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` and `dst` `len` elements each, and
        // `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        let f: fn(u32) -> u32 = match v & 3 {
            0 => rotate_xor,
            1 => negate_square,
            2 => bit_summary,
            _ => halve_or_triple,
        };
        // The optimiser could otherwise see through the selection and
        // turn the indirect call back into four direct ones.
        let f = black_box(f);
        // SAFETY: as above.
        unsafe { dst.add(i as usize).write(f(v)) };
    }
}

/// `dst[i]` = operation `op` (uniform, from the kernarg) applied to
/// `src[i]`:
///
/// ```text
/// 0: v + 1          4: v >> 3         8: v * 0x9E3779B9
/// 1: v * 5          5: v.reverse_bits 9: v.rotate_right(11)
/// 2: v ^ 0xFFFF     6: v.count_ones   10: v.swap_bytes
/// 3: v << 3         7: !v             _: 0
/// ```
///
/// A many-armed `match` on a uniform value, the shape that becomes a
/// branch tree or jump table.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn select_op(src: *const u32, dst: *mut u32, len: u64, op: u32) {
    for i in work_item_x().stride(len) {
        // SAFETY: the test gives `src` and `dst` `len` elements each, and
        // `i < len`.
        let v = unsafe { src.add(i as usize).read() };
        let out = match op {
            0 => v.wrapping_add(1),
            1 => v.wrapping_mul(5),
            2 => v ^ 0xFFFF,
            3 => v << 3,
            4 => v >> 3,
            5 => v.reverse_bits(),
            6 => v.count_ones(),
            7 => !v,
            8 => v.wrapping_mul(0x9E37_79B9),
            9 => v.rotate_right(11),
            10 => v.swap_bytes(),
            _ => 0,
        };
        // SAFETY: as above.
        unsafe { dst.add(i as usize).write(out) };
    }
}

// ---------------------------------------------------------------------------
// Ending a wave: s_trap, s_sethalt, s_endpgm
// ---------------------------------------------------------------------------

/// `dst[i] = src[i] ^ 0x5A5A_5A5A` for `i < len`, one element per
/// work-item (index-guarded, not grid-stride); a work-item whose element
/// equals `trap_on` aborts instead, which LLVM lowers to `s_trap 2`
/// (`llvm.trap` under the HSA ABI).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn trap_on_value(src: *const u32, dst: *mut u32, len: u64, trap_on: u32) {
    let i = work_item_x().global_id();
    if i >= len {
        return;
    }
    // SAFETY: the test gives `src` and `dst` `len` elements each, and
    // `i < len`.
    let v = unsafe { src.add(i as usize).read() };
    if v == trap_on {
        core::process::abort_immediate();
    }
    // SAFETY: as above.
    unsafe { dst.add(i as usize).write(v ^ 0x5A5A_5A5A) };
}

/// Work-item 0 waits (`s_sleep 1` between looks) until the host sets
/// `*flag` to non-zero, then, if `then_trap` is not 0, aborts (`s_trap
/// 2`): a kernel that holds its queue until the host lets it go, or lets
/// it fault.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn wait_for_flag(flag: *const u32, then_trap: u32) {
    if work_item_x().global_id() != 0 {
        return;
    }
    // SAFETY: the test gives a live, aligned u32 that the host stores to
    // while this runs; both sides access it atomically.
    let flag = unsafe { core::sync::atomic::AtomicU32::from_ptr(flag.cast_mut()) };
    while flag.load(core::sync::atomic::Ordering::Acquire) == 0 {
        s_sleep::<1>();
    }
    if then_trap != 0 {
        core::process::abort_immediate();
    }
}

/// `dst[i] = i` for `i < len`, one element per work-item; workgroups
/// numbered `halt_from` or above execute `s_sethalt 1` first.
///
/// Not `core::arch::amdgpu::s_sethalt`: it is declared `-> !` over an
/// intrinsic LLVM knows returns, so LLVM reads the call as unreachable
/// and deletes the branch that leads to it (the code object then has no
/// `s_sethalt` at all).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn halt_from_workgroup(dst: *mut u32, len: u64, halt_from: u32) {
    let item = work_item_x();
    if item.workgroup_id >= halt_from {
        // SAFETY: halting the wave touches no memory or register.
        unsafe { asm!("s_sethalt 1", options(noreturn, nomem, nostack)) };
    }
    let i = item.global_id();
    if i < len {
        // SAFETY: the test gives `dst` `len` elements, and `i < len`.
        unsafe { dst.add(i as usize).write(i as u32) };
    }
}

/// `dst[i] = i` for `i < len`, one element per work-item; workgroups
/// numbered `end_from` or above end with `s_endpgm` before writing.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn end_from_workgroup(dst: *mut u32, len: u64, end_from: u32) {
    let item = work_item_x();
    if item.workgroup_id >= end_from {
        core::arch::amdgpu::endpgm();
    }
    let i = item.global_id();
    if i < len {
        // SAFETY: the test gives `dst` `len` elements, and `i < len`.
        unsafe { dst.add(i as usize).write(i as u32) };
    }
}

// ---------------------------------------------------------------------------
// Messages and clocks
// ---------------------------------------------------------------------------

/// Every wave raises one interrupt (`s_sendmsg sendmsg(MSG_INTERRUPT)`)
/// with M0 = `base + workgroup_id`: the host sees one message per wave
/// and can tell the workgroups apart.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn interrupt_per_wave(base: u32) {
    let m0 = base.wrapping_add(core::arch::amdgpu::workgroup_id_x());
    // Rust's asm! cannot name M0 as a clobber, so the asm keeps the
    // compiler's M0 in a scratch SGPR around the message.
    // SAFETY: the asm sends a message and restores M0; it touches no
    // memory and no register but its own temporary.
    unsafe {
        asm!(
            "s_mov_b32 {saved}, m0",
            "s_mov_b32 m0, {m0}",
            "s_sendmsg sendmsg(MSG_INTERRUPT)",
            "s_mov_b32 m0, {saved}",
            m0 = in(sgpr32) m0,
            saved = out(sgpr32) _,
            options(nostack, nomem),
        );
    }
}

/// Work-item 0 of each workgroup `g` stores four u64 at `dst[4g..]`:
/// the shader-clock counter and the real-time clock, then the same two
/// again after `spins` rounds of `s_sleep 1`.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn clocks_around_sleep(dst: *mut u64, spins: u32) {
    let item = work_item_x();
    let cycles_before = shader_cycles();
    let ticks_before = aqueduct_realtime();
    for _ in 0..black_box(spins) {
        s_sleep::<1>();
    }
    let cycles_after = shader_cycles();
    let ticks_after = aqueduct_realtime();
    if item.local_id == 0 {
        let at = item.workgroup_id as usize * 4;
        // SAFETY: the test gives `dst` four elements per workgroup.
        unsafe {
            dst.add(at).write(cycles_before);
            dst.add(at + 1).write(ticks_before);
            dst.add(at + 2).write(cycles_after);
            dst.add(at + 3).write(ticks_after);
        }
    }
}

// ---------------------------------------------------------------------------
// Out-of-range accesses
// ---------------------------------------------------------------------------

/// `dst[i] = src[i]` for `i < len`, one element per work-item. The test
/// passes addresses the device does not own to see the fault.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn copy_u32(src: *const u32, dst: *mut u32, len: u64) {
    let i = work_item_x().global_id();
    if i < len {
        // SAFETY: the test's in-range runs give `src` and `dst` `len`
        // elements each; its fault runs pass addresses the simulator
        // must refuse, and the access never reaches the host.
        unsafe { dst.add(i as usize).write(src.add(i as usize).read()) };
    }
}

/// Each work-item stores `local_id * 3 + 1` in LDS slot `local_id` of
/// the workgroup's 4 KiB array; then work-item 0 writes [`LDS_MARK`] at
/// LDS byte address `mark_address` with `ds_write_b32`; after a barrier,
/// `dst[i]` = the u32 at LDS byte address `lds_address` (the same for
/// all), read with `ds_read_b32` (one element per work-item, `i < len`).
/// An address at or past 4096 is outside the kernel's static LDS (its
/// group segment is exactly the array); a launch may give it more.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn lds_read_at(
    dst: *mut u32,
    len: u64,
    lds_address: u32,
    mark_address: u32,
) {
    let item = work_item_x();
    let lds = aqueduct_test_lds_u32();
    if item.local_id < 1024 {
        // SAFETY: slot `local_id` < 1024 lies in the array, and only this
        // work-item writes it.
        unsafe { lds.add(item.local_id as usize).write(item.local_id * 3 + 1) };
    }
    if item.local_id == 0 {
        // SAFETY: a DS write touches only LDS; an address past the
        // workgroup's allocation is the point of the test and is dropped
        // (a fault in the simulator's strict mode). Slot 0 (address 0)
        // is this work-item's own.
        unsafe {
            asm!(
                "ds_write_b32 {address}, {value}",
                "s_waitcnt lgkmcnt(0)",
                address = in(vgpr32) mark_address,
                value = in(vgpr32) LDS_MARK,
                options(nostack),
            );
        }
    }
    aqueduct_test_workgroup_barrier();
    let value: u32;
    // SAFETY: a DS read touches only LDS; an out-of-range address is the
    // point of the test and reads 0 (a fault in the simulator's strict
    // mode).
    unsafe {
        asm!(
            "ds_read_b32 {value}, {address}",
            "s_waitcnt lgkmcnt(0)",
            value = out(vgpr32) value,
            address = in(vgpr32) lds_address,
            options(nostack, readonly),
        );
    }
    let i = item.global_id();
    if i < len {
        // SAFETY: the test gives `dst` `len` elements, and `i < len`.
        unsafe { dst.add(i as usize).write(value) };
    }
}

/// What [`lds_read_at`] writes at its `mark_address`.
pub const LDS_MARK: u32 = 0x600D_F00D;

/// u32 slots of [`private_read_at`]'s private array: more than LLVM
/// promotes to registers, so it lives in scratch.
pub const PRIVATE_SLOTS: usize = 64;

/// Each work-item fills a private array `t[k] = k * 7 + seed` and stores,
/// for `i < len` (one element per work-item), `value[i] = t[index]` and
/// `place[i]` = the generic (flat) address of `t`. The pointer goes
/// through `black_box`, so the read is a flat load whose address is in
/// the private aperture; an `index` past the array, and past the
/// private segment, faults in scratch.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn private_read_at(
    value: *mut u32,
    place: *mut u64,
    len: u64,
    seed: u32,
    index: u32,
) {
    let mut t = [0u32; PRIVATE_SLOTS];
    for (k, slot) in t.iter_mut().enumerate() {
        *slot = (k as u32).wrapping_mul(7).wrapping_add(seed);
    }
    let p = black_box(t.as_mut_ptr());
    // SAFETY: in range for `index < PRIVATE_SLOTS`; beyond it the test
    // expects the simulator to refuse the access.
    let v = unsafe { p.add(index as usize).read_volatile() };
    let i = work_item_x().global_id();
    if i < len {
        // SAFETY: the test gives `value` and `place` `len` elements each,
        // and `i < len`.
        unsafe {
            value.add(i as usize).write(v);
            place.add(i as usize).write(p as u64);
        }
    }
}
