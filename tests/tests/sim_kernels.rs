//! Execution suite: the device crates' kernels run on the simulator for
//! every simulated target, and match CPU references on random inputs.
//! Outputs are
//! poisoned before each run, lengths are odd and grids do not divide them,
//! so a kernel that skips or repeats an element fails.

use aqueduct::device_code::DEVICE_LIBRARY;
use aqueduct_sim::{DispatchError, Fault, Gpu, Target};
use aqueduct_tests::{Args, Rng, Sim, Word, built_code_objects, read, simulated, upload};

/// The device library on every simulated target.
fn device_library() -> Vec<Sim> {
    simulated(DEVICE_LIBRARY)
}

#[test]
fn fill_u32_writes_exactly_the_requested_elements() {
    for Sim { d, p } in device_library() {
        for (len, grid, wg) in [
            (1u64, 64u32, 64u16),
            (1000, 256, 64),
            (4099, 1024, 256),
            (77, 33, 33),
        ] {
            // One element of slack after the end stays poisoned.
            let buf = upload(&d, &vec![0xEF; (len as usize + 1) * 4]);
            let poison: Vec<u8> = std::iter::repeat_n(u32::POISON.to_le_bytes(), len as usize + 1)
                .flatten()
                .collect();
            d.memory().write_bytes(buf, &poison).unwrap();
            let value = 0x1234_5678u32 ^ len as u32;
            let ka = Args::default().arg(buf).arg(len).arg(value).0;
            let stats = d
                .run(&p, "fill_u32", [grid, 1, 1], [wg, 1, 1], &ka)
                .unwrap_or_else(|e| panic!("{:?}: {e}", d.target));
            let out = read::<u32>(&d, buf, len as usize + 1);
            assert!(
                out[..len as usize].iter().all(|&v| v == value),
                "{:?} len {len}",
                d.target
            );
            assert_eq!(
                out[len as usize],
                u32::POISON,
                "{:?} wrote past the end",
                d.target
            );
            assert!(stats.instructions > 0);
            d.memory().free(buf).unwrap();
        }
    }
}

#[test]
fn copy_bytes_copies_odd_lengths() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for Sim { d, p } in device_library() {
        for len in [1usize, 3, 255, 1001] {
            let src_bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let src = upload(&d, &src_bytes);
            let dst = upload(&d, &vec![u8::POISON; len + 3]);
            let ka = Args::default().arg(dst).arg(src).arg(len as u64).0;
            d.run(&p, "copy_bytes", [300, 1, 1], [128, 1, 1], &ka)
                .unwrap_or_else(|e| panic!("{:?}: {e}", d.target));
            let mut out = vec![0u8; len + 3];
            d.memory().read_bytes(dst, &mut out).unwrap();
            assert_eq!(&out[..len], &src_bytes[..], "{:?} len {len}", d.target);
            assert_eq!(
                &out[len..],
                &[u8::POISON; 3],
                "{:?} wrote past the end",
                d.target
            );
            d.memory().free(src).unwrap();
            d.memory().free(dst).unwrap();
        }
    }
}

#[test]
fn saxpy_f32_matches_the_cpu_bit_for_bit() {
    let mut rng = Rng(42);
    for Sim { d, p } in device_library() {
        let len = 3001usize;
        let a = rng.f32();
        let x: Vec<f32> = (0..len).map(|_| rng.f32()).collect();
        let y: Vec<f32> = (0..len).map(|_| rng.f32()).collect();
        let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let yb: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
        let xa = upload(&d, &xb);
        let ya = upload(&d, &yb);
        let ka = Args::default().arg(len as u64).arg(a).arg(xa).arg(ya).0;
        d.run(&p, "saxpy_f32", [512, 1, 1], [64, 1, 1], &ka)
            .unwrap_or_else(|e| panic!("{:?}: {e}", d.target));
        let out = read::<u32>(&d, ya, len);
        for i in 0..len {
            // The kernel rounds the product before the sum, like this.
            let want = a * x[i] + y[i];
            assert_eq!(out[i], want.to_bits(), "{:?} element {i}", d.target);
        }
    }
}

#[test]
fn a_wild_pointer_stops_the_dispatch_with_a_memory_fault() {
    for Sim { d, p } in device_library() {
        // A host address the simulator never handed out.
        let wild = 0x10u64;
        let ka = Args::default().arg(wild).arg(8u64).arg(1u32).0;
        let err = d
            .run(&p, "fill_u32", [64, 1, 1], [64, 1, 1], &ka)
            .unwrap_err();
        let DispatchError::Fault(report) = err else {
            panic!("{:?}: expected a fault, got {err}", d.target);
        };
        assert!(
            matches!(
                report.fault,
                Fault::Memory {
                    address: 0x10,
                    write: true,
                    ..
                }
            ),
            "{report}"
        );
        assert_eq!(report.kernel, "fill_u32");
        assert!(report.pc > p.base, "{report}");
    }
}

#[test]
fn results_do_not_depend_on_how_many_threads_run_the_workgroups() {
    let mut rng = Rng(7);
    let len = 20_001usize;
    let a = rng.f32();
    let x: Vec<u8> = (0..len).flat_map(|_| rng.f32().to_le_bytes()).collect();
    let y: Vec<u8> = (0..len).flat_map(|_| rng.f32().to_le_bytes()).collect();
    for built in built_code_objects() {
        let Some(target) = Target::from_name(built.gfx) else {
            continue;
        };
        if built.package != DEVICE_LIBRARY {
            continue;
        }
        let bytes = std::fs::read(&built.path).expect("read code object");
        let outputs: Vec<Vec<u32>> = [1, 4]
            .map(|threads| {
                let d = Gpu::new(target).with_threads(threads);
                let p = d.load(&bytes).expect("load");
                let xa = upload(&d, &x);
                let ya = upload(&d, &y);
                let ka = Args::default().arg(len as u64).arg(a).arg(xa).arg(ya).0;
                let stats = d
                    .run(&p, "saxpy_f32", [2048, 1, 1], [128, 1, 1], &ka)
                    .expect("run");
                assert_eq!(stats.workgroups, 16);
                read::<u32>(&d, ya, len)
            })
            .into();
        assert_eq!(outputs[0], outputs[1], "{target:?}");
    }
}

/// Wave32 pairs (`aqueduct_sim::pair`: two wave32 waves run as one
/// 64-lane wave while their scalar state agrees) only change how fast the
/// host runs: with them and without, the same results, the same counts
/// and the same fault, named against the same wave.
#[test]
fn wave32_pairs_change_no_result_count_or_fault() {
    let mut rng = Rng(0x0DD_5EED);
    let len = 20_001usize;
    let a = rng.f32();
    let x: Vec<u8> = (0..len).flat_map(|_| rng.f32().to_le_bytes()).collect();
    let y: Vec<u8> = (0..len).flat_map(|_| rng.f32().to_le_bytes()).collect();
    let mut wave32_targets = 0;
    for built in built_code_objects() {
        let Some(target) = Target::from_name(built.gfx) else {
            continue;
        };
        if built.package != DEVICE_LIBRARY || !target.wave32() {
            continue;
        }
        wave32_targets += 1;
        let bytes = std::fs::read(&built.path).expect("read code object");
        let [alone, paired] = [false, true].map(|pairs| {
            let d = Gpu::new(target).with_wave32_pairs(pairs).strict();
            let p = d.load(&bytes).expect("load");
            // The grid does not divide the length: the waves that straddle
            // the end see different bounds checks, which splits their pair.
            let xa = upload(&d, &x);
            let ya = upload(&d, &y);
            let ka = Args::default().arg(len as u64).arg(a).arg(xa).arg(ya).0;
            let s = d
                .run(&p, "saxpy_f32", [20_480, 1, 1], [128, 1, 1], &ka)
                .unwrap_or_else(|e| panic!("{target:?}: {e}"));
            let out = read::<u32>(&d, ya, len);
            // 40 elements of room for 64 work-items: the second wave's
            // ninth lane is the first to fault, after the first wave and
            // eight lanes of the second stored.
            let buf = upload(&d, &[0u8; 40 * 4]);
            let ka = Args::default().arg(buf).arg(64u64).arg(0x600D_F00Du32).0;
            let err = d
                .run(&p, "fill_u32", [64, 1, 1], [64, 1, 1], &ka)
                .expect_err("a store past the buffer faults");
            let DispatchError::Fault(report) = err else {
                panic!("{target:?}: expected a fault, got {err}");
            };
            let filled = read::<u32>(&d, buf, 40);
            let Fault::Memory { address, write, .. } = report.fault else {
                panic!("{target:?}: expected a memory fault: {report}");
            };
            assert!(write, "{report}");
            // Where, relative to the code and the buffer (each device
            // places them apart), and who.
            let at = (report.pc - p.base, address - buf, report.word, report.wave);
            (
                out,
                [s.workgroups, s.waves, s.instructions, s.lane_ops],
                s.paired_instructions,
                at,
                filled,
            )
        });
        assert_eq!(alone.0, paired.0, "{target:?}: saxpy results");
        assert_eq!(
            alone.1, paired.1,
            "{target:?}: workgroups, waves, instructions, lane-ops"
        );
        assert_eq!(alone.2, 0, "{target:?}: no pairs when they are off");
        // Most of the 640 wave32 waves run as pairs.
        assert!(
            paired.2 > alone.1[2] / 2,
            "{target:?}: {} of {} instructions paired",
            paired.2,
            alone.1[2]
        );
        assert_eq!(alone.3, paired.3, "{target:?}: the fault report");
        assert_eq!(paired.3.1, 40 * 4, "{target:?}: the first byte past");
        assert_eq!(paired.3.3, 1, "{target:?}: the second wave faults");
        assert_eq!(alone.4, paired.4, "{target:?}: stores before the fault");
        assert!(paired.4.iter().all(|&v| v == 0x600D_F00D), "{target:?}");
    }
    assert_eq!(wave32_targets, 2, "gfx1100 and gfx1201");
}

/// The same on our 64×64 WMMA GEMM at 512³ (`cargo xtask sim-bench`'s
/// wave32 rows): scalar, vector, memory and WMMA instructions run by a
/// pair give D exactly (against the CPU, by `run_our_gemm_on`) and the
/// counts of the waves run one by one, and the pairs cover all but the
/// last two instructions of each wave (an `s_sendmsg`, which splits the
/// pair, then `s_endpgm`).
#[test]
fn wave32_pairs_run_the_wmma_gemm_with_the_counts_of_single_waves() {
    use xtask::sim_bench::{OUR_GEMMS, run_our_gemm_on};
    let mut ran = 0;
    for gemm in OUR_GEMMS.into_iter().filter(|g| g.0.wave32()) {
        let built = built_code_objects()
            .into_iter()
            .find(|b| b.package == "aqueduct-gemm" && b.gfx == gemm.0.name())
            .unwrap_or_else(|| panic!("{}: no aqueduct-gemm code object", gemm.0.name()));
        let bytes = std::fs::read(&built.path).expect("read code object");
        let [alone, paired] = [false, true].map(|pairs| {
            let d = Gpu::new(gemm.0).with_wave32_pairs(pairs);
            run_our_gemm_on(d, &bytes, gemm).unwrap_or_else(|e| panic!("{e}"))
        });
        let counts =
            |s: &aqueduct_sim::Stats| [s.waves, s.instructions, s.lane_ops, s.matrix_instructions];
        assert_eq!(counts(&alone.stats), counts(&paired.stats), "{gemm:?}");
        let (all, two) = (paired.stats.instructions, paired.stats.paired_instructions);
        assert_eq!(alone.stats.paired_instructions, 0, "{gemm:?}");
        assert!(
            all - two <= 2 * paired.stats.waves,
            "{gemm:?}: {two} of {all} paired"
        );
        ran += 1;
    }
    assert_eq!(ran, 2, "gfx1100 and gfx1201");
}
