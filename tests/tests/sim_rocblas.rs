//! GEMM kernels compiled by AMD's toolchain (rocBLAS 5.5.1's Tensile
//! assembly kernels for gfx90a and gfx1100, from Debian trixie's
//! `librocblas0`) run on
//! the simulator with exactly sized buffers at odd sizes, against an exact
//! CPU reference (`xtask::tensile_gemm`). Code this project did not write
//! is the simulator's harder judge: these kernels found its d16, LDS-range,
//! buffer-range and load-to-LDS defects.

use aqueduct_sim::{Gpu, Target};
use aqueduct_tests::Rng;
use xtask::tensile_gemm::{Case, KERNELS, KERNELS_GFX1100, Kernel, Problem};

/// Runs each of `kernels` (in the code object at `path`, on a simulated
/// `target`) on an odd problem (M, N and K tails, batches, beta nonzero)
/// and a larger one (several tiles each way, beta zero), `big`, checking
/// every element against the CPU.
fn run_all(
    target: Target,
    path: Result<std::path::PathBuf, String>,
    kernels: &'static [Kernel],
    big: [u32; 3],
    seed: u64,
) {
    let path = path.unwrap_or_else(|e| panic!("AMD's GEMM kernels (needs network once): {e}"));
    let bytes = std::fs::read(&path).expect("read the kernels");
    let device = Gpu::new(target).with_threads(2);
    let program = device.load(&bytes).expect("load");
    let mut rng = Rng(seed);
    for kernel in kernels {
        let [m, n, k] = big;
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
                m,
                n,
                k,
                batch: 1,
                alpha: 1,
                beta: 0,
            },
        ] {
            let what = format!("{target:?} {} {p:?}", kernel.what);
            let case = Case::new(&device, &program, kernel, p, &mut rng)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            case.run(&device, &program)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            case.check(&device)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            case.free(&device);
        }
    }
}

#[test]
fn amd_compiled_gemm_kernels_match_the_cpu_at_odd_sizes() {
    let path = xtask::rocblas_catalog::fetch_gemm_kernels();
    run_all(Target::Gfx90a, path, KERNELS, [250, 190, 70], 0x90A_6E33);
}

/// The same package's gfx1100 kernels (`TensileLibrary_gfx1100.co`, the
/// gfx90a arguments): WMMA in f16 (NN, NT) and bf16 in wave32, and a
/// wave64 f32 FMA kernel, on a simulated RX 7900 XTX. They use GFX11's
/// buffer loads and stores with d16 halves, `ds_bpermute`, split waits
/// and WMMA, each checked here on code AMD compiled.
#[test]
fn amd_compiled_gfx1100_gemm_kernels_match_the_cpu_at_odd_sizes() {
    let path = xtask::rocblas_catalog::fetch_gfx1100_gemm_kernels();
    run_all(
        Target::Gfx1100,
        path,
        KERNELS_GFX1100,
        [130, 70, 50],
        0x1100_6E33,
    );
}
