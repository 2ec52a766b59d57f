//! GEMM kernels compiled by AMD's toolchain (rocBLAS 5.5.1's Tensile
//! assembly kernels for gfx90a and gfx1100, from Debian trixie's
//! `librocblas0`, and hipBLASLt 7.1.1's TensileLite ones for gfx1100 and
//! gfx1201, from sid's `libhipblaslt1`) run on
//! the simulator with exactly sized buffers at odd sizes, against an exact
//! CPU reference (`xtask::tensile_gemm`). Code this project did not write
//! is the simulator's harder judge: these kernels found its d16, LDS-range,
//! buffer-range and load-to-LDS defects.

use aqueduct_sim::{Gpu, Target};
use aqueduct_tests::Rng;
use xtask::tensile_gemm::{
    Case, HIPBLASLT_GFX1100, HIPBLASLT_GFX1201, KERNELS, KERNELS_GFX1100, Kernel, Problem,
};

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
        // Sizes the kernel's predicates accept (`asserted_multiples`,
        // `asserted_k_multiple`).
        let [mm, nm] = kernel.asserted_multiples();
        let km = kernel.asserted_k_multiple();
        let [m, n, k] = [
            big[0].next_multiple_of(mm),
            big[1].next_multiple_of(nm),
            big[2].next_multiple_of(km),
        ];
        for p in [
            Problem {
                m: 37u32.next_multiple_of(mm),
                n: 21u32.next_multiple_of(nm),
                k: 9u32.next_multiple_of(km),
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

/// hipBLASLt 7.1.1's gfx1201 kernels (Debian sid's `libhipblaslt1`, taken
/// out of their compressed offload bundles): WMMA in f16 (NN, NT) and
/// bf16 with their epilogues switched off, a wave64 f32 one and a plain
/// f32 one, on a simulated RX 9070 XT, launched with the TensileLite
/// argument header (`xtask::tensile_gemm::Abi::UserArgs`). They use
/// GFX12's VBUFFER loads and stores, split waits and barriers, `s_delay_alu`,
/// long jumps and calls (`s_swappc_b64` into the activation stub) and
/// WMMA with GFX12's operand layout.
#[test]
fn hipblaslt_compiled_gfx1201_gemm_kernels_match_the_cpu_at_odd_sizes() {
    let path = xtask::hipblaslt_catalog::fetch_gemm_kernels("gfx1201");
    run_all(
        Target::Gfx1201,
        path,
        HIPBLASLT_GFX1201,
        [70, 90, 50],
        0x1201_6E33,
    );
}

/// hipBLASLt 7.1.1's gfx1100 kernels, the same way: WMMA in f16 (NN, NT,
/// TN) and bf16, WorkGroupMapping 4 and 2 on two of them, and a wave64 f32
/// one, on a simulated RX 7900 XTX.
#[test]
fn hipblaslt_compiled_gfx1100_gemm_kernels_match_the_cpu_at_odd_sizes() {
    let path = xtask::hipblaslt_catalog::fetch_gemm_kernels("gfx1100");
    run_all(
        Target::Gfx1100,
        path,
        HIPBLASLT_GFX1100,
        [130, 70, 50],
        0x1100_B1A5,
    );
}
