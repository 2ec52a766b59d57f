//! Execution suite, part 3: program control and the system side of a
//! wave, with the kernels of `tests/kernels/src/system.rs`, on every
//! simulated target.
//!
//! Calls (`s_getpc_b64` / `s_swappc_b64` / `s_setpc_b64`, direct and
//! through a per-lane function pointer) match CPU references. The ways a
//! wave stops early are each pinned down exactly: `s_trap` and
//! `s_sethalt` stop the dispatch with a fault report naming the
//! instruction, kernel, workgroup and wave; `s_endpgm` ends waves quietly.
//! `s_sendmsg sendmsg(MSG_INTERRUPT)` reaches the host as one event per
//! wave with that wave's M0, and the clocks never run backwards. Global,
//! LDS and scratch accesses outside what the kernel owns stop the wave
//! with a memory fault carrying the address, and host memory at a wild
//! global address stays as it was.

use aqueduct_abi::aql::KernelDispatchPacket;
use aqueduct_sim::exec::Event;
use aqueduct_sim::memory::TAIL_POISON;
use aqueduct_sim::wave::PRIVATE_APERTURE_HI;
use aqueduct_sim::{Fault, Space, Target};
use aqueduct_tests::{Args, Rng, Sim, TEST_KERNELS, Word, assert_same, simulated};
use zerocopy::{FromZeros, IntoBytes};

// ---------------------------------------------------------------------------
// What the kernels and the ISA fix
// ---------------------------------------------------------------------------

/// `llvm.trap`'s trap id under the HSA ABI (LLVM AMDGPUUsage, "Trap
/// Handler ABI": `s_trap 0x2`, "LLVM trap").
const LLVM_TRAP_ID: u16 = 2;

/// `sendmsg(MSG_INTERRUPT)`'s SIMM16: message id 1 in bits 3:0, no
/// operation or stream (LLVM SIDefines.h `ID_INTERRUPT`; objdump shows
/// the kernel's `s_sendmsg` as `0xBF900001`).
const MSG_INTERRUPT: u16 = 1;

/// Bytes of LDS `lds_read_at` has: the 1024-u32 array of
/// `tests/kernels/llvm/workgroup.ll`.
const LDS_BYTES: u32 = 4096;

/// What `lds_read_at` writes at its `mark_address` (`system::LDS_MARK`).
const LDS_MARK: u32 = 0x600D_F00D;

/// The LDS allocation granule of gfx90a and gfx942 (CDNA2/CDNA3 ISA
/// §3.6.5 "LDS Allocation and Clamping": blocks of 512 bytes; AMDGPUUsage,
/// COMPUTE_PGM_RSRC2 GRANULATED_LDS_SIZE in units of 128 dwords).
const LDS_GRANULE: u32 = 512;

// ---------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------

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

#[test]
fn called_function_returns_to_each_lane_its_result() {
    let mut rng = Rng(0xCA11_0001);
    let len = 1001;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        // 0 rounds: the callee's loop is skipped; 13: not a multiple of
        // its unrolling.
        for rounds in [0, 1, 13] {
            for (grid, wg) in [(64, 64), (300, 128), (1001, 256)] {
                let what = format!("call_hash rounds {rounds} grid {grid}");
                sim.d
                    .memory()
                    .write_bytes(dst, &vec![0xEF; len * 4])
                    .expect("write");
                let args = Args::default().u64(s).u64(dst).u64(len as u64).u32(rounds);
                sim.run("call_hash", (grid, wg), &args);
                let want: Vec<u32> = src.iter().map(|&v| hash_rounds(v, rounds)).collect();
                assert_same(&sim.output(dst, len, &what), &want, &sim.at(&what));
            }
        }
        sim.free(&[s, dst]);
    }
}

fn pointer_selected(v: u32) -> u32 {
    match v & 3 {
        0 => v.rotate_left(7) ^ 0xA5A5_0F0F,
        1 => v.wrapping_mul(v).wrapping_neg(),
        2 => v.count_ones() << 16 | v.leading_zeros() << 8 | v.trailing_zeros(),
        _ if v % 2 == 0 => v / 2,
        _ => v.wrapping_mul(3).wrapping_add(1),
    }
}

#[test]
fn indirect_call_reaches_each_lanes_own_function() {
    let mut rng = Rng(0xCA11_0002);
    let len = 999;
    for sim in simulated(TEST_KERNELS) {
        // Random selectors (every wave wants all four targets), then runs
        // of one selector (waves that agree, one trip of the loop).
        let mut src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        for (k, v) in src[512..].iter_mut().enumerate() {
            *v = (*v & !3) | ((k / 128) as u32 % 4);
        }
        src[0] = 0;
        let want: Vec<u32> = src.iter().map(|&v| pointer_selected(v)).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for (grid, wg) in [(64, 64), (77, 33), (999, 128)] {
            let what = format!("call_indirect grid {grid} workgroup {wg}");
            let args = Args::default().u64(s).u64(dst).u64(len as u64);
            sim.run("call_indirect", (grid, wg), &args);
            assert_same(&sim.output(dst, len, &what), &want, &sim.at(&what));
            sim.d
                .memory()
                .write_bytes(dst, &vec![0xEF; len * 4])
                .expect("write");
        }
        sim.free(&[s, dst]);
    }
}

fn select_op(op: u32, v: u32) -> u32 {
    match op {
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
    }
}

#[test]
fn many_armed_match_on_a_uniform_value_takes_each_arm() {
    let mut rng = Rng(0xCA11_0003);
    let len = 333;
    for sim in simulated(TEST_KERNELS) {
        let src: Vec<u32> = (0..len).map(|_| rng.u32()).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        for op in (0..=12).chain([u32::MAX]) {
            let what = format!("select_op {op}");
            let args = Args::default().u64(s).u64(dst).u64(len as u64).u32(op);
            sim.run("select_op", (200, 64), &args);
            let want: Vec<u32> = src.iter().map(|&v| select_op(op, v)).collect();
            assert_same(&sim.output(dst, len, &what), &want, &sim.at(&what));
        }
        sim.free(&[s, dst]);
    }
}

// ---------------------------------------------------------------------------
// Ending a wave
// ---------------------------------------------------------------------------

#[test]
fn trap_stops_the_dispatch_naming_its_id_workgroup_and_wave() {
    let mut rng = Rng(0x7EA9_0001);
    let len = 1000;
    let trap_on = 0x7EA9_7EA9;
    for sim in simulated(TEST_KERNELS) {
        let mut src: Vec<u32> = (0..len).map(|_| rng.u32() | 1).collect();
        let s = sim.upload(&src);
        let dst = sim.poisoned::<u32>(len);
        let args = Args::default().u64(s).u64(dst).u64(len as u64).u32(trap_on);

        // No element asks: every work-item writes, none traps.
        sim.run("trap_on_value", (1024, 256), &args);
        let want: Vec<u32> = src.iter().map(|&v| v ^ 0x5A5A_5A5A).collect();
        assert_same(&sim.output(dst, len, "no trap"), &want, &sim.at("no trap"));

        // Element 700 asks: workgroup 700 / 256 = 2, its wave
        // (700 - 512) / 64 = 2 (wave64), / 32 = 5 (wave32).
        src[700] = trap_on;
        let s2 = sim.upload(&src);
        let args = Args::default()
            .u64(s2)
            .u64(dst)
            .u64(len as u64)
            .u32(trap_on);
        let report = sim.fault("trap_on_value", (1024, 256), &args, "s_trap");
        assert_eq!(
            report.fault,
            Fault::Trap { id: LLVM_TRAP_ID },
            "{}",
            sim.at("trap")
        );
        assert_eq!(report.workgroup, [2, 0, 0], "{}", sim.at("trap"));
        assert_eq!(
            report.wave,
            (700 - 512) / wave_size(&sim),
            "{}",
            sim.at("trap")
        );
        // s_trap is SOPP opcode 0x12 on GFX9, 0x10 on GFX11/GFX12
        // (llvm-objdump).
        let sopp = if sim.d.target.wave32() {
            0xBF90_0000
        } else {
            0xBF92_0000
        };
        assert_eq!(report.word, sopp | u32::from(LLVM_TRAP_ID));
        sim.output::<u32>(dst, len, "trap");
        sim.free(&[s, s2, dst]);
    }
}

#[test]
fn sethalt_stops_the_dispatch_with_a_halt_fault() {
    let len = 512;
    for sim in simulated(TEST_KERNELS) {
        let dst = sim.poisoned::<u32>(len);
        // Halting from a workgroup past the last one: nothing halts.
        let args = Args::default().u64(dst).u64(len as u64).u32(4);
        sim.run("halt_from_workgroup", (512, 128), &args);
        let want: Vec<u32> = (0..len as u32).collect();
        assert_same(&sim.output(dst, len, "no halt"), &want, &sim.at("no halt"));

        let args = Args::default().u64(dst).u64(len as u64).u32(3);
        let report = sim.fault("halt_from_workgroup", (512, 128), &args, "s_sethalt");
        assert_eq!(report.fault, Fault::Halt, "{}", sim.at("halt"));
        // Workgroups run in order on one host thread: workgroup 3's first
        // wave is the first to halt.
        assert_eq!(report.workgroup, [3, 0, 0], "{}", sim.at("halt"));
        assert_eq!(report.wave, 0, "{}", sim.at("halt"));
        // s_sethalt 1: SOPP opcode 0xD on GFX9, 0x2 on GFX11/GFX12
        // (llvm-objdump).
        let word = if sim.d.target.wave32() {
            0xBF82_0001
        } else {
            0xBF8D_0001
        };
        assert_eq!(report.word, word, "{}", sim.at("halt"));
        sim.output::<u32>(dst, len, "halt");
        sim.free(&[dst]);
    }
}

#[test]
fn endpgm_ends_waves_before_they_write() {
    let len = 640;
    for sim in simulated(TEST_KERNELS) {
        let dst = sim.poisoned::<u32>(len);
        let args = Args::default().u64(dst).u64(len as u64).u32(2);
        let stats = sim.run("end_from_workgroup", (640, 128), &args);
        assert_eq!(
            stats.waves,
            u64::from(640 / wave_size(&sim)),
            "{}",
            sim.at("waves")
        );
        let want: Vec<u32> = (0..len as u32)
            .map(|i| if i < 256 { i } else { u32::POISON })
            .collect();
        assert_same(&sim.output(dst, len, "endpgm"), &want, &sim.at("endpgm"));
        sim.free(&[dst]);
    }
}

// ---------------------------------------------------------------------------
// Messages and clocks
// ---------------------------------------------------------------------------

#[test]
fn each_wave_raises_one_interrupt_with_its_m0() {
    let base = 0x0051_6E00;
    for sim in simulated(TEST_KERNELS) {
        // 300 work-items in 128-item workgroups: 2 + 2 + 1 waves of 64,
        // 4 + 4 + 2 of 32.
        let stats = sim.run("interrupt_per_wave", (300, 128), &Args::default().u32(base));
        let mut m0s: Vec<u32> = stats
            .events
            .iter()
            .map(|e| match *e {
                Event::Message { id, m0 } => {
                    assert_eq!(id, MSG_INTERRUPT, "{}: {e:?}", sim.at("message id"));
                    m0
                }
            })
            .collect();
        m0s.sort_unstable();
        let per_group = 128 / wave_size(&sim) as usize;
        let last = (300 - 256usize).div_ceil(wave_size(&sim) as usize);
        let want: Vec<u32> = (0..2)
            .flat_map(|g| [base + g; 8].into_iter().take(per_group))
            .chain([base + 2; 8].into_iter().take(last))
            .collect();
        assert_eq!(m0s, want, "{}", sim.at("interrupts"));
        assert_eq!(stats.waves, want.len() as u64, "{}", sim.at("waves"));
        // The same events reach an observer while the kernel runs (how the
        // HSA layer wakes signal waiters on a device interrupt).
        let seen = std::sync::Mutex::new(Vec::new());
        let args = Args::default().u32(base);
        let stats = sim
            .d
            .run_observed(
                &sim.p,
                "interrupt_per_wave",
                [300, 1, 1],
                [128, 1, 1],
                &args.0,
                &|e| seen.lock().unwrap().push(e),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", sim.at("observed")));
        let mut seen = seen.into_inner().unwrap();
        let mut all = stats.events.clone();
        seen.sort_unstable_by_key(|e| format!("{e:?}"));
        all.sort_unstable_by_key(|e| format!("{e:?}"));
        assert_eq!(seen, all, "{}", sim.at("observed events"));
    }
}

/// Lanes per wave of the test kernels on `sim`'s target: the compiler
/// builds them wave64 for GFX9 and wave32 for RDNA.
fn wave_size(sim: &Sim) -> u32 {
    if sim.d.target.wave32() { 32 } else { 64 }
}

#[test]
fn clocks_never_run_backwards_across_sleep() {
    let workgroups = 4;
    for sim in simulated(TEST_KERNELS) {
        // The shader-clock counter is 64 bits wide on GFX9 (`s_memtime`)
        // and GFX12 (SHADER_CYCLES_HI/LO), 20 bits on GFX11
        // (SHADER_CYCLES, RDNA3 ISA "Hardware Registers"): it wraps there
        // about every millisecond, longer than the sleep takes on a slow
        // host, so on GFX11 it is checked for its width and for moving,
        // not for order.
        let wide = sim.d.target.family() != aqueduct_abi::kernel_descriptor::GfxFamily::Gfx11;
        let dst = sim.upload(&vec![0u32; workgroups * 8]);
        let args = Args::default().u64(dst).u32(50);
        sim.run("clocks_around_sleep", (64 * workgroups as u32, 64), &args);
        let t = sim.read::<u64>(dst, workgroups * 4);
        for g in 0..workgroups {
            let [cycles0, ticks0, cycles1, ticks1] = t[g * 4..g * 4 + 4] else {
                unreachable!()
            };
            let what = sim.at(&format!("workgroup {g}: {:?}", &t[g * 4..g * 4 + 4]));
            assert!(ticks0 > 0, "{what}: the real-time clock read 0");
            assert!(
                ticks1 >= ticks0,
                "{what}: the real-time clock ran backwards"
            );
            // One clock for the whole device: a later workgroup never
            // reads an earlier time than one that finished before it.
            if g > 0 {
                assert!(
                    ticks0 >= t[g * 4 - 1],
                    "{what}: the real-time clock across workgroups"
                );
            }
            if !wide {
                assert!(
                    cycles0 < 1 << 20 && cycles1 < 1 << 20,
                    "{what}: past 20 bits"
                );
                assert_ne!(cycles0, cycles1, "{what}: the shader clock stood still");
                continue;
            }
            assert!(cycles0 > 0, "{what}: the shader clock read 0");
            assert!(cycles1 >= cycles0, "{what}: the shader clock ran backwards");
            if g > 0 {
                assert!(
                    cycles0 >= t[g * 4 - 2],
                    "{what}: the shader clock across workgroups"
                );
            }
        }
        sim.free(&[dst]);
    }
}

// ---------------------------------------------------------------------------
// Out-of-range accesses
// ---------------------------------------------------------------------------

#[test]
fn wild_global_pointer_faults_and_host_memory_stays_untouched() {
    let len = 5;
    for sim in simulated(TEST_KERNELS) {
        // Host memory the device does not own: the simulator's device
        // addresses are host addresses, so this is the address a stray
        // kernel pointer would hit.
        let host = vec![u32::POISON; len].into_boxed_slice();
        let host_address = host.as_ptr() as u64;
        let device = sim.upload(&[1u32, 2, 3, 4, 5]);
        let dst = sim.poisoned::<u32>(len);

        let args = Args::default().u64(host_address).u64(dst).u64(len as u64);
        let report = sim.fault("copy_u32", (64, 64), &args, "global_load_dword");
        let want = Fault::Memory {
            space: Space::Global,
            address: host_address,
            size: 4,
            write: false,
        };
        assert_eq!(report.fault, want, "{}", sim.at("wild read"));
        assert_eq!((report.workgroup, report.wave), ([0, 0, 0], 0));
        assert_same(
            &sim.output(dst, len, "wild read"),
            &[u32::POISON; 5],
            &sim.at("wild read"),
        );

        let args = Args::default()
            .u64(device)
            .u64(host_address)
            .u64(len as u64);
        let report = sim.fault("copy_u32", (64, 64), &args, "global_store_dword");
        let want = Fault::Memory {
            space: Space::Global,
            address: host_address,
            size: 4,
            write: true,
        };
        assert_eq!(report.fault, want, "{}", sim.at("wild write"));
        assert_same(&host, &[u32::POISON; 5], &sim.at("host memory"));

        // A read far past a device buffer is no more the kernel's.
        let far = device + (1 << 40);
        let args = Args::default().u64(far).u64(dst).u64(1);
        let report = sim.fault("copy_u32", (64, 64), &args, "global_load_dword");
        let want = Fault::Memory {
            space: Space::Global,
            address: far,
            size: 4,
            write: false,
        };
        assert_eq!(report.fault, want, "{}", sim.at("far read"));
        sim.free(&[device, dst]);
    }
}

/// A kernel that reads and writes one element past exactly sized buffers
/// touches the rest of their last page: mapped on the hardware, so it runs
/// (and reads the simulator's tail poison); strict mode reports the first
/// byte past the request.
#[test]
fn a_one_element_overrun_stays_in_the_page_and_strict_mode_catches_it() {
    let len = 5;
    for sim in simulated(TEST_KERNELS) {
        let src = sim.upload(&[1u32, 2, 3, 4, 5]);
        let dst = sim.poisoned::<u32>(len);
        let args = Args::default().u64(src).u64(dst).u64(len as u64 + 1);
        sim.run("copy_u32", (64, 64), &args);
        let mem = sim.d.memory();
        let out = mem
            .read_vec(dst, 4 * (len + 1))
            .expect("the page is mapped");
        let words: Vec<u32> = out
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_same(&words, &[1, 2, 3, 4, 5, TAIL_POISON], &sim.at("overrun"));

        mem.set_strict(true);
        let report = sim.fault("copy_u32", (64, 64), &args, "global_load_dword");
        mem.set_strict(false);
        let want = Fault::Memory {
            space: Space::Global,
            address: src + 4 * len as u64,
            size: 4,
            write: false,
        };
        assert_eq!(report.fault, want, "{}", sim.at("strict overrun"));
        sim.free(&[src, dst]);
    }
}

/// A kernel built with a launch bound (xtask's `launch_bounds`: copy_u32,
/// 64) carries it in its metadata, and a larger workgroup is refused.
#[test]
fn a_launch_bound_reaches_the_code_object_and_the_launch_check() {
    for sim in simulated(TEST_KERNELS) {
        let bound = |name: &str| {
            sim.p
                .kernel(name)
                .expect("kernel")
                .metadata
                .max_flat_workgroup_size
        };
        assert_eq!(bound("copy_u32"), 64, "{}", sim.at("copy_u32"));
        assert_eq!(bound("lds_read_at"), 1024, "{}", sim.at("lds_read_at"));
        let src = sim.upload(&[7u32; 128]);
        let dst = sim.poisoned::<u32>(128);
        let args = Args::default().u64(src).u64(dst).u64(128);
        match sim.try_run("copy_u32", (128, 128), &args) {
            Err(e) => assert!(
                e.to_string().contains("exceeds the kernel's limit 64"),
                "{e}"
            ),
            Ok(_) => panic!("{}: a workgroup of 128 ran", sim.at("copy_u32")),
        }
        sim.run("copy_u32", (128, 64), &args);
        assert_same(
            &sim.output::<u32>(dst, 128, "copy"),
            &[7; 128],
            &sim.at("copy"),
        );
        sim.free(&[src, dst]);
    }
}

/// Past the workgroup's LDS allocation a read gives 0 (CDNA3 ISA §3.6.1,
/// "Out-of-Range behavior"); strict mode makes it a fault.
#[test]
fn lds_read_past_the_group_segment_reads_zero_and_faults_in_strict_mode() {
    for sim in simulated(TEST_KERNELS) {
        let group = sim
            .p
            .kernel("lds_read_at")
            .expect("lds_read_at")
            .descriptor
            .group_segment_fixed_size;
        assert_eq!(group, LDS_BYTES, "{}", sim.at("group segment"));
        let len = 256;
        let dst = sim.poisoned::<u32>(len);
        // In range: slot 200 holds 200 * 3 + 1; so does the last slot,
        // written by work-item 1023.
        for (address, wg, want) in [(800, 256, 601), (LDS_BYTES - 4, 1024, 1023 * 3 + 1)] {
            let what = format!("lds_read_at {address}");
            let args = Args::default().u64(dst).u64(len as u64).u32(address).u32(0);
            sim.run("lds_read_at", (1024, wg), &args);
            assert_same(
                &sim.output::<u32>(dst, len, &what),
                &[want; 256],
                &sim.at(&what),
            );
        }
        // Just past the allocation (4 KiB, a whole number of 512-byte
        // granules), far past it but inside the 64 KiB a workgroup could
        // have, and where AMD's f64 GEMM kernels read their zeros.
        for address in [LDS_BYTES, 0xFFFC, 0xF0_0000] {
            let what = format!("lds_read_at {address:#x}");
            let args = Args::default().u64(dst).u64(len as u64).u32(address).u32(0);
            sim.run("lds_read_at", (1024, 256), &args);
            assert_same(
                &sim.output::<u32>(dst, len, &what),
                &[0; 256],
                &sim.at(&what),
            );
            sim.d.memory().set_strict(true);
            let report = sim.fault("lds_read_at", (1024, 256), &args, "ds_read_b32");
            sim.d.memory().set_strict(false);
            let want = Fault::Memory {
                space: Space::Lds,
                address: u64::from(address),
                size: 4,
                write: false,
            };
            assert_eq!(report.fault, want, "{}", sim.at(&what));
            assert_eq!((report.workgroup, report.wave), ([0, 0, 0], 0));
        }
        sim.free(&[dst]);
    }
}

/// The hardware allocates a workgroup's LDS in whole granules, so an
/// access past the group segment but inside its last granule is in range
/// (writes land, reads see them); past the granule a write is dropped and
/// a read gives 0 (CDNA3 ISA §3.6.1). Strict mode keeps the segment's
/// exact size. A launch asks for 4 bytes beyond the kernel's 4 KiB
/// (`group_segment_size` 4100), so the allocation is 4608 bytes (gfx950:
/// 5120).
#[test]
fn lds_past_the_group_segment_inside_its_granule_is_in_range() {
    for sim in simulated(TEST_KERNELS) {
        // AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE: GFX7-GFX10 (and so
        // gfx90a, gfx942) roundup(lds-size / (128 * 4)), GFX950
        // roundup(lds-size / (320 * 4)).
        let granule = if sim.d.target == Target::Gfx950 {
            1280
        } else {
            LDS_GRANULE
        };
        assert_eq!(sim.d.target.gfx().lds_granule, granule);
        let len = 64;
        let dst = sim.poisoned::<u32>(len);
        let allocated = (LDS_BYTES + 4).next_multiple_of(granule);
        assert_eq!(allocated, if granule == 1280 { 5120 } else { 4608 });
        let run = |address: u32| {
            let args = Args::default()
                .u64(dst)
                .u64(len as u64)
                .u32(address)
                .u32(address);
            let kernargs = aqueduct_tests::upload(&sim.d, &args.0);
            // The kernel reads its workgroup size from the packet.
            let mut packet = KernelDispatchPacket::new_zeroed();
            packet.setup = 1;
            (packet.workgroup_size_x, packet.workgroup_size_y) = (64, 1);
            packet.workgroup_size_z = 1;
            (packet.grid_size_x, packet.grid_size_y, packet.grid_size_z) = (64, 1, 1);
            packet.group_segment_size = LDS_BYTES + 4;
            packet.kernarg_address = kernargs;
            let at = aqueduct_tests::upload(&sim.d, packet.as_bytes());
            let launch = aqueduct_sim::Launch::from_packet(&packet, at);
            let r = sim.d.dispatch(&sim.p, "lds_read_at", &launch);
            sim.free(&[kernargs, at]);
            r
        };
        // In the last granule, past the 4100 bytes asked for; its last
        // dword; the first dword past the allocation.
        for (address, want) in [
            (LDS_BYTES + 256, LDS_MARK),
            (allocated - 4, LDS_MARK),
            (allocated, 0),
        ] {
            let what = format!("lds_read_at {address} with 4100 bytes of LDS");
            sim.repoison::<u32>(dst, len);
            run(address).unwrap_or_else(|e| panic!("{}: {e}", sim.at(&what)));
            assert_same(
                &sim.output::<u32>(dst, len, &what),
                &[want; 64],
                &sim.at(&what),
            );
        }
        // Strict: the first write past the 4100 bytes faults.
        sim.d.memory().set_strict(true);
        let r = run(LDS_BYTES + 4);
        sim.d.memory().set_strict(false);
        match r {
            Err(aqueduct_sim::DispatchError::Fault(report)) => assert_eq!(
                report.fault,
                Fault::Memory {
                    space: Space::Lds,
                    address: u64::from(LDS_BYTES + 4),
                    size: 4,
                    write: true,
                },
                "{}",
                sim.at("strict")
            ),
            other => panic!("{}: {other:?}, want an LDS fault", sim.at("strict")),
        }
        sim.free(&[dst]);
    }
}

#[test]
fn private_read_past_the_segment_faults_in_scratch() {
    let len = 100;
    let seed = 0x1234;
    for sim in simulated(TEST_KERNELS) {
        let value = sim.poisoned::<u32>(len);
        let place = sim.upload(&vec![0u32; 2 * len]);
        let args = |index: u32| {
            Args::default()
                .u64(value)
                .u64(place)
                .u64(len as u64)
                .u32(seed)
                .u32(index)
        };
        sim.run("private_read_at", (128, 64), &args(5));
        assert_same(
            &sim.output(value, len, "in range"),
            &[5 * 7 + seed; 100],
            &sim.at("in range"),
        );
        // The array's generic address is in the private aperture, and
        // every lane's is the same offset into its own segment.
        let places = sim.read::<u64>(place, len);
        let array = places[0];
        assert!(places.iter().all(|&p| p == array), "{}", sim.at("places"));
        assert_eq!(
            array >> 32,
            u64::from(PRIVATE_APERTURE_HI),
            "{}",
            sim.at("aperture")
        );

        let private_bytes = sim
            .p
            .kernel("private_read_at")
            .expect("private_read_at")
            .descriptor
            .private_segment_fixed_size;
        let index = 1 << 20;
        let report = sim.fault(
            "private_read_at",
            (128, 64),
            &args(index),
            "flat_load_dword",
        );
        let want = Fault::Memory {
            space: Space::Scratch,
            address: (array & 0xFFFF_FFFF) + 4 * u64::from(index),
            size: 4,
            write: false,
        };
        assert!(
            4 * u64::from(index) > u64::from(private_bytes),
            "{}",
            sim.at("segment")
        );
        assert_eq!(report.fault, want, "{}", sim.at("far read"));
        assert_eq!((report.workgroup, report.wave), ([0, 0, 0], 0));
        sim.free(&[value, place]);
    }
}

/// AMDGPUUsage, "Kernel Descriptor": ENABLE_WAVEFRONT_SIZE32 is reserved
/// on GFX9. A GFX9 code object whose descriptor sets it (patched into a
/// built one) loads, and its dispatch is refused by name, not run as
/// wave64.
#[test]
fn a_wave32_descriptor_is_refused_on_gfx9() {
    use aqueduct_abi::code_object::CodeObject;
    use aqueduct_abi::kernel_descriptor::KernelDescriptor;
    let mut checked = Vec::new();
    for built in aqueduct_tests::built_code_objects() {
        let Some(target) = Target::from_name(built.gfx) else {
            continue;
        };
        if built.package != TEST_KERNELS || target.wave32() {
            continue;
        }
        let mut bytes = std::fs::read(&built.path).expect("read code object");
        let co = CodeObject::parse(&bytes).expect("parse");
        let kernel = co.kernel("copy_u32").expect("copy_u32");
        let seg = co
            .segments
            .iter()
            .find(|s| (s.vaddr..s.vaddr + s.filesz).contains(&kernel.descriptor_address))
            .expect("the descriptor is in a loaded segment");
        let at = (seg.file_offset + kernel.descriptor_address - seg.vaddr) as usize
            + std::mem::offset_of!(KernelDescriptor, kernel_code_properties);
        // Bit 10 of the little-endian u16: bit 2 of its second byte.
        bytes[at + 1] |= 1 << 2;
        let d = aqueduct_sim::Gpu::new(target);
        let p = d.load(&bytes).expect("load");
        assert!(
            p.kernel("copy_u32")
                .expect("copy_u32")
                .descriptor
                .properties()
                .enable_wavefront_size32()
        );
        let sim = aqueduct_tests::Sim { d, p };
        let src = sim.upload(&[7u32; 64]);
        let dst = sim.poisoned::<u32>(64);
        let args = Args::default().u64(src).u64(dst).u64(64);
        match sim.try_run("copy_u32", (64, 64), &args) {
            Err(e) => assert!(
                e.to_string()
                    .contains(&format!("wave32 kernel cannot run on {}", built.gfx)),
                "{e}"
            ),
            Ok(_) => panic!("{}: a wave32 kernel ran", sim.at("copy_u32")),
        }
        assert_same(
            &sim.read::<u32>(dst, 64),
            &[u32::POISON; 64],
            &sim.at("dst"),
        );
        sim.free(&[src, dst]);
        checked.push(target);
    }
    let gfx9: Vec<Target> = Target::ALL.into_iter().filter(|t| !t.wave32()).collect();
    assert_eq!(checked, gfx9, "every GFX9 target checked");
}

/// gfx1100 and gfx1201 run wave64 code too (the kernel descriptor's
/// ENABLE_WAVEFRONT_SIZE32 = 0): a small kernel in LLVM IR
/// (tests/ir/wave64_probe.ll), compiled here by the toolchain's `llc` with
/// `+wavefrontsize64` and linked by `rust-lld`, takes a ballot of odd
/// inputs, reads lane 0 and lane 5, and branches divergently, over two
/// full waves and a partial one; every result is checked against the
/// host's reading of 64-lane waves.
#[test]
fn rdna_runs_wave64_kernels_with_64_lane_masks() {
    for target in [Target::Gfx1100, Target::Gfx1201] {
        let sim = compile_ir("wave64_probe", target, "+wavefrontsize64");
        let kernel = sim.p.kernel("wave64_probe").expect("wave64_probe");
        assert!(!kernel.descriptor.properties().enable_wavefront_size32());

        // Two full waves and one of 36 lanes (grid 164, workgroups of 64).
        let n = 164;
        let mut rng = Rng::new(0x64 + target as u64);
        let input: Vec<u32> = (0..n).map(|_| rng.u32() % 1000).collect();
        let src = sim.upload(&input);
        let dst = sim.poisoned::<u32>(4 * n);
        let stats = sim.run(
            "wave64_probe",
            (n as u32, 64),
            &Args::default().u64(dst).u64(src),
        );
        assert_eq!(stats.waves, 3, "{}", sim.at("waves of 64"));
        let out = sim.output::<u32>(dst, 4 * n, &sim.at("wave64_probe"));
        for (wave, lanes) in input.chunks(64).enumerate() {
            let ballot = lanes
                .iter()
                .enumerate()
                .filter(|(_, x)| *x % 2 == 1)
                .fold(0u64, |m, (l, _)| m | 1 << l);
            for (l, &x) in lanes.iter().enumerate() {
                let g = 64 * wave + l;
                let what = sim.at(&format!("work-item {g}"));
                let got = &out[4 * g..4 * g + 4];
                assert_eq!(
                    u64::from(got[0]) | u64::from(got[1]) << 32,
                    ballot,
                    "{what}: ballot"
                );
                assert_eq!(got[2], lanes[0], "{what}: readfirstlane");
                let want = if x % 2 == 1 {
                    x * 3 + l as u32
                } else {
                    x + lanes[5]
                };
                assert_eq!(got[3], want, "{what}: the branch's value");
            }
        }
        sim.free(&[src, dst]);
    }
}

/// tests/ir/`name`.ll compiled by the toolchain's `llc` for `target` (with
/// `attrs`, e.g. `+wavefrontsize64`, or none) and linked by `rust-lld`,
/// loaded on a fresh simulated device: kernels the device crates cannot
/// express.
fn compile_ir(name: &str, target: Target, attrs: &str) -> Sim {
    let dir = std::env::temp_dir().join(format!("aqueduct-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("ir/{name}.ll"));
    // Tests running side by side may compile the same file: each build
    // gets its own name.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stem = format!("{name}-{}{attrs}-{n}", target.name());
    let (object, hsaco) = (
        dir.join(format!("{stem}.o")),
        dir.join(format!("{stem}.hsaco")),
    );
    let path = |p: &std::path::Path| p.to_str().expect("UTF-8 path").to_string();
    let cpu = format!("-mcpu={}", target.name());
    let mut args = vec!["-O2", "-mtriple=amdgcn-amd-amdhsa", &cpu, "-filetype=obj"];
    let mattr = format!("-mattr={attrs}");
    if !attrs.is_empty() {
        args.push(&mattr);
    }
    let (ir, object_path, hsaco_path) = (path(&ir), path(&object), path(&hsaco));
    args.extend([ir.as_str(), "-o", object_path.as_str()]);
    aqueduct_tests::run_llvm_tool("llc", &args);
    aqueduct_tests::run_llvm_tool(
        "rust-lld",
        &["-flavor", "gnu", "-shared", &object_path, "-o", &hsaco_path],
    );
    let d = aqueduct_sim::Gpu::new(target);
    let p = d.load(&std::fs::read(&hsaco).expect("read")).expect("load");
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_file(&hsaco);
    Sim { d, p }
}

/// Runs of no-ops (waits and scheduling hints) are counted without being
/// dispatched one by one (`Slot::no_ops_after`): the counts must be those
/// of the path instruction by instruction, whether a run is entered by
/// falling through, at the entry, or by a branch into its middle, and not
/// include the runs a taken branch skips (tests/ir/no_op_runs.ll: 16
/// wave-instructions). GFX9 in wave64 and GFX12 in wave32.
#[test]
fn runs_of_no_ops_count_as_the_instructions_on_the_path() {
    const PATH: u64 = 16;
    for (target, lanes) in [(Target::Gfx942, 64u64), (Target::Gfx1201, 32)] {
        let sim = compile_ir("no_op_runs", target, "");
        // Two workgroups of 64 work-items, the second one partial.
        let stats = sim.run("no_op_runs", (64 + 40, 64), &Args::default());
        let waves = 64u64.div_ceil(lanes) + 40u64.div_ceil(lanes);
        assert_eq!(stats.waves, waves, "{target:?}");
        assert_eq!(stats.instructions, waves * PATH, "{target:?}");
        assert_eq!(stats.lane_ops, (64 + 40) * PATH, "{target:?}");
    }
}

/// Buffer loads and stores on GFX11 and GFX12 through V#s the test
/// describes (tests/ir/buffer_probe.ll: `buffer_load_b128`,
/// `buffer_load_u8`, `buffer_store_b32` and a returning
/// `buffer_atomic_add_u32`, raw, with OFFEN and a SOFFSET),
/// for each OUT_OF_BOUNDS_SELECT and an unbound resource, lanes walking
/// across NUM_RECORDS. The expectations are the RDNA3.5 ISA's "Range
/// Checking" table (out of range when: 0, the index reaches NUM_RECORDS or
/// offset + payload passes STRIDE; 1, the index reaches NUM_RECORDS; 2,
/// NUM_RECORDS is 0; 3, offset + payload passes NUM_RECORDS - SOFFSET),
/// checked per dword for the 128-bit load, and its "unbound resource"
/// (FORMAT 0 without ADD_TID: nothing in range). Word 3 values are what
/// AMD's own libraries build: hipBLASLt's gfx11 0x31004000 and gfx12
/// 0x30020000 (OOB_SELECT 3).
#[test]
fn rdna_buffer_accesses_follow_the_out_of_bounds_select() {
    const RECORDS: u32 = 100;
    const SOFFSET: u32 = 8;
    const BYTES: usize = 256;
    let word3 = |oob: u32, format: u32| oob << 28 | format << 12;
    for target in [Target::Gfx1100, Target::Gfx1201] {
        let sim = compile_ir("buffer_probe", target, "");
        let amd = if target == Target::Gfx1100 {
            0x3100_4000
        } else {
            0x3002_0000
        };
        for (flags, mode) in [
            (amd, Some(3)),
            (word3(0, 4), Some(0)),
            (word3(1, 4), Some(1)),
            (word3(2, 4), Some(2)),
            (word3(3, 0), None),
        ] {
            let what = sim.at(&format!("word 3 {flags:#010x}"));
            // In range? (offset, payload) of one access, by the ISA table;
            // raw buffers have index 0 and the V# stride is 0.
            // (The V#'s STRIDE is 0: mode 0 takes nothing.)
            let ok = |offset: u32, payload: u32| match mode {
                Some(0) => offset + payload == 0,
                Some(1) => 0 < RECORDS,
                Some(2) => RECORDS != 0,
                Some(_) => offset + payload <= RECORDS - SOFFSET,
                None => false,
            };
            let bytes: Vec<u8> = (0..BYTES).map(|b| (b * 7 + 3) as u8).collect();
            let src = sim.upload(&bytes);
            let dst = sim.poisoned::<u8>(BYTES);
            let out = sim.poisoned::<u32>(6 * 32);
            let (first, step) = (60u32, 4u32);
            let args = Args::default()
                .u64(out)
                .u64(src)
                .u64(dst)
                .u32(RECORDS)
                .u32(flags)
                .u32(first)
                .u32(step)
                .u32(SOFFSET);
            sim.run("buffer_probe", (32, 32), &args);
            let got = sim.output::<u32>(out, 6 * 32, &what);
            let stored = sim.output::<u8>(dst, BYTES, &what);
            let word =
                |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
            let mut want_dst = vec![u8::POISON; BYTES];
            for l in 0..32u32 {
                let vo = first + l * step;
                let at = (SOFFSET + vo) as usize;
                for k in 0..4 {
                    let want = if ok(vo + 4 * k, 4) {
                        word(at + 4 * k as usize)
                    } else {
                        0
                    };
                    assert_eq!(
                        got[(6 * l + k) as usize],
                        want,
                        "{what}: lane {l} dword {k}"
                    );
                }
                let byte = if ok(vo + 1, 1) {
                    u32::from(bytes[at + 1])
                } else {
                    0
                };
                assert_eq!(got[(6 * l + 4) as usize], byte, "{what}: lane {l} u8");
                // The store, then the atomic's 100 on top; an atomic out
                // of range returns 0.
                let (old, stored) = if ok(vo, 4) { (l + 1, l + 101) } else { (0, 0) };
                assert_eq!(got[(6 * l + 5) as usize], old, "{what}: lane {l} atomic");
                if ok(vo, 4) {
                    want_dst[at..at + 4].copy_from_slice(&stored.to_le_bytes());
                }
            }
            assert_same(&stored, &want_dst, &format!("{what}: stores"));
            sim.free(&[src, dst, out]);
        }
    }
}

/// gfx950's transposing LDS reads (tests/ir/gfx950_lds_probe.ll: one
/// wave, LDS filled with random words, each lane reading at a random
/// address). Within each 16-lane group the lanes' chunks (64 bits, 96 for
/// b6) form a matrix of `bits`-wide elements, E to a chunk: row n is the
/// chunks of lanes n·R..n·R+R−1 side by side (R = 16/E), and lane c
/// receives column c, its n-th element from row n. That is the layout
/// AMD's hardware test of these reads expects (rocRoller's
/// `TransposeLoadsTest`) and Triton's `lowerDsReadTr` states ("lane 0
/// receives [t0,t4,t8,t12]" for b16); the CDNA4 ISA (§12.12, §11.4)
/// gives no formula.
#[test]
fn gfx950_transposing_lds_reads_give_each_lane_a_column() {
    let sim = compile_ir("gfx950_lds_probe", Target::Gfx950, "");
    let mut rng = Rng::new(0x7A95);
    for (kernel, bits, chunk_bytes) in [
        ("tr4", 4, 8),
        ("tr8", 8, 8),
        ("tr16", 16, 8),
        ("tr6", 6, 12),
    ] {
        let lds: Vec<u32> = (0..1024).map(|_| rng.u32()).collect();
        // b64 reads 8-byte aligned; b96 16-byte aligned, as rocRoller pads.
        let align = if bits == 6 { 16 } else { 8 };
        let addr: Vec<u32> = (0..64)
            .map(|_| rng.u32() % (4096 / align - 1) * align)
            .collect();
        let (input, addresses) = (sim.upload(&lds), sim.upload(&addr));
        let out = sim.poisoned::<u32>(4 * 64);
        sim.run(
            kernel,
            (64, 64),
            &Args::default().u64(out).u64(input).u64(addresses),
        );
        let got = sim.output::<u32>(out, 4 * 64, &sim.at(kernel));
        let bytes: Vec<u8> = lds.iter().flat_map(|w| w.to_le_bytes()).collect();
        let chunk = |lane: usize| -> u128 {
            let at = addr[lane] as usize;
            (0..chunk_bytes).fold(0, |v, k| v | u128::from(bytes[at + k]) << (8 * k))
        };
        let per_chunk = if bits == 6 { 16 } else { 64 / bits };
        let element = |x: u128, e: usize| (x >> (bits * e)) & ((1 << bits) - 1);
        for lane in 0..64 {
            let (group, c) = (lane / 16 * 16, lane % 16);
            let mut want = 0u128;
            for n in 0..per_chunk {
                // Row n, column c: chunk ⌊c/E⌋ of the row, element c mod E.
                let row_lane = group + n * (16 / per_chunk) + c / per_chunk;
                want |= element(chunk(row_lane), c % per_chunk) << (bits * n);
            }
            let dwords = chunk_bytes / 4;
            let got = (0..dwords).fold(0u128, |v, k| v | u128::from(got[4 * lane + k]) << (32 * k));
            assert_eq!(got, want, "{} lane {lane}", sim.at(kernel));
        }
        // Triton's b16 example, from the chunks themselves.
        if bits == 16 {
            let halves: Vec<u128> = [0, 4, 8, 12].map(|t| element(chunk(t), 0)).to_vec();
            let lane0 = u128::from(got[0]) | u128::from(got[1]) << 32;
            assert_eq!(
                (0..4).map(|n| element(lane0, n)).collect::<Vec<_>>(),
                halves
            );
        }
        sim.free(&[input, addresses, out]);
    }
}

/// gfx950's loads to LDS (tests/ir/gfx950_lds_probe.ll): `global_load_lds_
/// dword/x3/x4` and `buffer_load_dwordx3/x4 ... lds`, M0 = 256, each lane
/// reading src at its own random dword. Lane l's data lands at LDS byte
/// 256 + offset + 4·l (one dword) or + 16·l (three or four dwords; CDNA4
/// ISA §10.3, §9.1.9), the offset moving the source and LDS address alike
/// (LLVM's `global.load.lds`: "applied to both global and LDS address");
/// a three-dword load leaves its slot's fourth dword as it was ("writes 3
/// dwords and skips the 4th"), and every other LDS byte keeps its value.
#[test]
fn gfx950_loads_to_lds_place_lanes_by_their_width() {
    let sim = compile_ir("gfx950_lds_probe", Target::Gfx950, "");
    let mut rng = Rng::new(0xD3A);
    for (kernel, dwords, offset) in [
        ("dma4", 1, 0),
        ("dma12", 3, 0),
        ("dma16", 4, 32),
        ("buf12", 3, 0),
        ("buf16", 4, 32),
    ] {
        let bg: Vec<u32> = (0..1024).map(|_| rng.u32()).collect();
        let src: Vec<u32> = (0..2048).map(|_| rng.u32()).collect();
        let idx: Vec<u32> = (0..64).map(|_| rng.u32() % 2000).collect();
        let (b, s, i) = (sim.upload(&bg), sim.upload(&src), sim.upload(&idx));
        let out = sim.poisoned::<u32>(1024);
        sim.run(
            kernel,
            (64, 64),
            &Args::default().u64(out).u64(b).u64(s).u64(i),
        );
        let got = sim.output::<u32>(out, 1024, &sim.at(kernel));
        let mut want = bg.clone();
        let stride = if dwords == 1 { 1 } else { 4 };
        for (lane, &at) in idx.iter().enumerate() {
            let first = (256 + offset) / 4 + stride * lane;
            for k in 0..dwords {
                want[first + k] = src[at as usize + offset / 4 + k];
            }
        }
        assert_eq!(got, want, "{}", sim.at(kernel));
        sim.free(&[b, s, i, out]);
    }
}
