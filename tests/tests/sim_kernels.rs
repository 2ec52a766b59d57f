//! Execution suite: the device crates' kernels run on the simulator for
//! gfx90a and gfx942 and match CPU references on random inputs. Outputs are
//! poisoned before each run, lengths are odd and grids do not divide them,
//! so a kernel that skips or repeats an element fails.

use aqueduct_sim::{Device, DispatchError, Fault, Program, Target};
use aqueduct_tests::{Args, Rng, built_code_objects, simulated, upload};

const POISON: u32 = 0xDEAD_BEEF;

/// Each device code object for a simulated target, loaded.
fn programs() -> Vec<(Device, Program)> {
    simulated("aqueduct-device")
}

fn alloc_with(d: &Device, bytes: &[u8]) -> u64 {
    upload(d, bytes)
}

fn read_u32s(d: &Device, a: u64, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; n * 4];
    d.memory().read_bytes(a, &mut b).expect("read");
    b.as_chunks::<4>()
        .0
        .iter()
        .map(|&c| u32::from_le_bytes(c))
        .collect()
}

#[test]
fn fill_u32_writes_exactly_the_requested_elements() {
    for (d, p) in programs() {
        for (len, grid, wg) in [
            (1u64, 64u32, 64u16),
            (1000, 256, 64),
            (4099, 1024, 256),
            (77, 33, 33),
        ] {
            // One element of slack after the end stays poisoned.
            let buf = alloc_with(&d, &vec![0xEF; (len as usize + 1) * 4]);
            let poison: Vec<u8> = std::iter::repeat_n(POISON.to_le_bytes(), len as usize + 1)
                .flatten()
                .collect();
            d.memory().write_bytes(buf, &poison).unwrap();
            let value = 0x1234_5678u32 ^ len as u32;
            let ka = Args::default().arg(buf).arg(len).arg(value).0;
            let stats = d
                .run(&p, "fill_u32", [grid, 1, 1], [wg, 1, 1], &ka)
                .unwrap_or_else(|e| panic!("{:?}: {e}", d.target));
            let out = read_u32s(&d, buf, len as usize + 1);
            assert!(
                out[..len as usize].iter().all(|&v| v == value),
                "{:?} len {len}",
                d.target
            );
            assert_eq!(
                out[len as usize], POISON,
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
    for (d, p) in programs() {
        for len in [1usize, 3, 255, 1001] {
            let src_bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let src = alloc_with(&d, &src_bytes);
            let dst = alloc_with(&d, &vec![0xA5; len + 3]);
            let ka = Args::default().arg(dst).arg(src).arg(len as u64).0;
            d.run(&p, "copy_bytes", [300, 1, 1], [128, 1, 1], &ka)
                .unwrap_or_else(|e| panic!("{:?}: {e}", d.target));
            let mut out = vec![0u8; len + 3];
            d.memory().read_bytes(dst, &mut out).unwrap();
            assert_eq!(&out[..len], &src_bytes[..], "{:?} len {len}", d.target);
            assert_eq!(&out[len..], &[0xA5; 3], "{:?} wrote past the end", d.target);
            d.memory().free(src).unwrap();
            d.memory().free(dst).unwrap();
        }
    }
}

#[test]
fn saxpy_f32_matches_the_cpu_bit_for_bit() {
    let mut rng = Rng(42);
    for (d, p) in programs() {
        let len = 3001usize;
        let a = rng.f32();
        let x: Vec<f32> = (0..len).map(|_| rng.f32()).collect();
        let y: Vec<f32> = (0..len).map(|_| rng.f32()).collect();
        let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let yb: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
        let xa = alloc_with(&d, &xb);
        let ya = alloc_with(&d, &yb);
        let ka = Args::default().arg(len as u64).arg(a).arg(xa).arg(ya).0;
        d.run(&p, "saxpy_f32", [512, 1, 1], [64, 1, 1], &ka)
            .unwrap_or_else(|e| panic!("{:?}: {e}", d.target));
        let out = read_u32s(&d, ya, len);
        for i in 0..len {
            // The kernel rounds the product before the sum, like this.
            let want = a * x[i] + y[i];
            assert_eq!(out[i], want.to_bits(), "{:?} element {i}", d.target);
        }
    }
}

#[test]
fn a_wild_pointer_stops_the_dispatch_with_a_memory_fault() {
    for (d, p) in programs() {
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
        if built.package != "aqueduct-device" {
            continue;
        }
        let bytes = std::fs::read(&built.path).expect("read code object");
        let outputs: Vec<Vec<u32>> = [1, 4]
            .map(|threads| {
                let d = Device::new(target).with_threads(threads);
                let p = d.load(&bytes).expect("load");
                let xa = alloc_with(&d, &x);
                let ya = alloc_with(&d, &y);
                let ka = Args::default().arg(len as u64).arg(a).arg(xa).arg(ya).0;
                let stats = d
                    .run(&p, "saxpy_f32", [2048, 1, 1], [128, 1, 1], &ka)
                    .expect("run");
                assert_eq!(stats.workgroups, 16);
                read_u32s(&d, ya, len)
            })
            .into();
        assert_eq!(outputs[0], outputs[1], "{target:?}");
    }
}
