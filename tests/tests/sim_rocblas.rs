//! GEMM kernels compiled by AMD's toolchain (rocBLAS 5.5.1's Tensile
//! assembly kernels for gfx90a, from Debian trixie's `librocblas0`) run on
//! the simulator with exactly sized buffers at odd sizes, against an exact
//! CPU reference (`xtask::tensile_gemm`). Code this project did not write
//! is the simulator's harder judge: these kernels found its d16, LDS-range,
//! buffer-range and load-to-LDS defects.

use aqueduct_sim::{Gpu, Target};
use aqueduct_tests::Rng;
use xtask::tensile_gemm::{Case, KERNELS, Problem};

#[test]
fn amd_compiled_gemm_kernels_match_the_cpu_at_odd_sizes() {
    let path = xtask::rocblas_catalog::fetch_gemm_kernels()
        .unwrap_or_else(|e| panic!("AMD's GEMM kernels (needs network once): {e}"));
    let bytes = std::fs::read(&path).expect("read the kernels");
    let device = Gpu::new(Target::Gfx90a).with_threads(2);
    let program = device.load(&bytes).expect("load");
    let mut rng = Rng(0x90A_6E33);
    for kernel in KERNELS {
        // Odd everywhere (M, N and K tails, batches), beta nonzero; then
        // larger, several tiles each way, beta zero.
        for p in [
            Problem {
                m: 37,
                n: 21,
                k: 9,
                batch: 2,
                alpha: 2,
                beta: -1,
            },
            Problem {
                m: 250,
                n: 190,
                k: 70,
                batch: 1,
                alpha: 1,
                beta: 0,
            },
        ] {
            let case = Case::new(&device, &program, kernel, p, &mut rng).unwrap();
            case.run(&device, &program).unwrap();
            case.check(&device).unwrap();
            case.free(&device);
        }
    }
}
