//! A fixed benchmark of the simulator: how fast it runs aqueduct's own
//! kernels on one host thread (saxpy, fill, copy, and our f16 GEMM), one
//! of AMD's GEMM kernels (MFMA-heavy, gfx90a) on one and on two, and AMD's
//! WMMA GEMM kernels on gfx1100 and gfx1201 on one ([`run_rdna_gemms`]).
//!
//! The simulator's speed decides how large the tests can be, so it has a
//! target: a 1,048,576-element `saxpy_f32` on gfx942 (16,384 wave64s) in at
//! most [`SAXPY_TARGET_SECONDS`] on one core, and AMD's f16 GEMM at 512³ in
//! at most [`GEMM_TARGET_SECONDS`]. Each dispatch here runs a few
//! times on fresh inputs and is checked against a CPU reference every time,
//! so a broken run (a fault, a skipped element) cannot pass for a fast one.
//!
//! Numbers are only meaningful with the simulator optimised: `cargo xtask`
//! is a debug build, so `sim-bench` re-runs itself with `--release`.
//! Times are of `Gpu::run` (kernargs placed, the dispatch run, kernargs
//! freed); buffer set-up and the reference check are outside them. Both
//! wall time and the calling thread's CPU time are taken: on a busy machine
//! wall time includes other processes' turns, so the target is judged on
//! CPU time where Linux reports it (`CLOCK_THREAD_CPUTIME_ID`: [`thread_cpu_time`]).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use aqueduct_abi::gemm::{GemmArgs, GemmFlags};
use aqueduct_sim::{Gpu, Program, Stats, Target};
use zerocopy::IntoBytes;

use crate::rng::Rng;

/// The saxpy target: 1 Mi elements on gfx942 within this on one core.
pub const SAXPY_TARGET_SECONDS: f64 = 0.1;

/// Elements (work-items) of every dispatch: 1 Mi, 16,384 wave64s.
pub const ELEMENTS: usize = 1 << 20;
/// Work-items per workgroup (four waves).
pub const WORKGROUP: u16 = 256;
/// Timed runs per dispatch; the best and the median are reported.
pub const RUNS: usize = 5;

/// The GEMM target: AMD's f16 GEMM kernel (f32 accumulation) at 512³ on
/// gfx90a within this on one core.
pub const GEMM_TARGET_SECONDS: f64 = 0.075;
/// The GEMM row's problem size (M = N = K).
pub const GEMM_SIZE: u32 = 512;
/// The GEMM row's kernel: `crate::tensile_gemm::KERNELS`' f16 one.
const GEMM_KERNEL: usize = 1;

/// One benchmarked dispatch.
#[derive(Clone, Debug)]
pub struct Sample {
    pub gfx: &'static str,
    pub kernel: &'static str,
    /// Host threads running workgroups.
    pub threads: usize,
    pub elements: usize,
    /// Wall time of each run.
    pub times: Vec<Duration>,
    /// CPU time of the running thread for each run, where known.
    pub cpu_times: Option<Vec<Duration>>,
    pub stats: Stats,
}

impl Sample {
    pub fn best(&self) -> Duration {
        self.times.iter().copied().min().unwrap_or_default()
    }

    pub fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        t.get(t.len() / 2).copied().unwrap_or_default()
    }

    pub fn best_cpu(&self) -> Option<Duration> {
        self.cpu_times.as_ref()?.iter().copied().min()
    }

    /// The time the target is judged on: CPU time where known, else wall.
    pub fn judged(&self) -> Duration {
        self.best_cpu().unwrap_or_else(|| self.best())
    }

    /// Whether this is the dispatch the target is about, and it met it.
    pub fn saxpy_target(&self) -> Option<bool> {
        (self.kernel == "saxpy_f32" && self.gfx == "gfx942")
            .then(|| self.judged().as_secs_f64() <= SAXPY_TARGET_SECONDS)
    }

    /// Whether this is the one-thread GEMM row, and it met its target.
    pub fn gemm_target(&self) -> Option<bool> {
        (self.kernel == "gemm_f16" && self.threads == 1 && self.gfx == "gfx90a")
            .then(|| self.judged().as_secs_f64() <= GEMM_TARGET_SECONDS)
    }
}

/// CPU time the calling thread has run, from `CLOCK_THREAD_CPUTIME_ID`
/// (clock_gettime(2)); `None` off Linux.
///
/// Not `/proc/thread-self/schedstat`: the kernel adds to that count only
/// at scheduler ticks and switches (every 4 ms on these machines), which
/// quantised `sim-bench`'s 40 ms GEMM rows by a tenth and is useless for
/// `hsa-bench`'s few-ms regions; the clock brings the running thread's
/// count up to date when read.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn thread_cpu_time() -> Option<Duration> {
    /// `struct timespec` on 64-bit Linux.
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    /// linux/time.h.
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    unsafe extern "C" {
        /// The C library's, which std links on Linux.
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is defined on
    // every Linux since 2.6.12.
    let ok = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &raw mut t) } == 0;
    ok.then(|| Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn thread_cpu_time() -> Option<Duration> {
    None
}

/// A device buffer holding `bytes`.
fn upload(d: &Gpu, bytes: &[u8]) -> Result<u64, String> {
    d.memory().alloc_bytes(bytes).map_err(|e| e.to_string())
}

fn download(d: &Gpu, a: u64, len: usize) -> Result<Vec<u8>, String> {
    d.memory().read_vec(a, len).map_err(|e| e.to_string())
}

/// The kernarg segment of `kernel`: each explicit argument's bytes at the
/// offset the code object's metadata gives it, so a change of the kernel's
/// signature fails here instead of passing garbage.
fn kernargs(program: &Program, kernel: &str, values: &[&[u8]]) -> Result<Vec<u8>, String> {
    let k = program
        .kernel(kernel)
        .ok_or_else(|| format!("no kernel {kernel}"))?;
    let md = &k.metadata;
    let explicit: Vec<_> = md
        .args
        .iter()
        .filter(|a| !a.value_kind.starts_with("hidden_"))
        .collect();
    if explicit.len() != values.len() {
        return Err(format!(
            "{kernel} takes {} arguments, the benchmark passes {}",
            explicit.len(),
            values.len()
        ));
    }
    let mut out = vec![0u8; md.kernarg_segment_size as usize];
    for (arg, v) in explicit.iter().zip(values) {
        if arg.size as usize != v.len() {
            return Err(format!(
                "{kernel}: argument at {} is {} bytes, the benchmark passes {}",
                arg.offset,
                arg.size,
                v.len()
            ));
        }
        let at = arg.offset as usize;
        out.get_mut(at..at + v.len())
            .ok_or_else(|| format!("{kernel}: argument at {at} is outside the segment"))?
            .copy_from_slice(v);
    }
    Ok(out)
}

/// Runs `kernel` [`RUNS`] times over [`ELEMENTS`] work-items, calling
/// `prepare` before and `verify` after each run (both untimed).
fn time(
    d: &Gpu,
    program: &Program,
    kernel: &'static str,
    ka: &[u8],
    prepare: impl FnMut() -> Result<(), String>,
    verify: impl FnMut() -> Result<(), String>,
) -> Result<Sample, String> {
    let grid = [ELEMENTS as u32, 1, 1];
    let run = || {
        d.run(program, kernel, grid, [WORKGROUP, 1, 1], ka)
            .map_err(|e| e.to_string())
    };
    let sample = Sample {
        gfx: d.target.name(),
        kernel,
        threads: 1,
        elements: ELEMENTS,
        times: Vec::new(),
        cpu_times: None,
        stats: Stats::default(),
    };
    timed_runs(sample, prepare, run, verify)
}

/// Fills `sample`'s times and stats from [`RUNS`] runs of `run`, each
/// between an untimed `prepare` and `verify`. CPU time is the calling
/// thread's, so it is kept only for one-thread samples.
fn timed_runs(
    mut sample: Sample,
    mut prepare: impl FnMut() -> Result<(), String>,
    mut run: impl FnMut() -> Result<Stats, String>,
    mut verify: impl FnMut() -> Result<(), String>,
) -> Result<Sample, String> {
    let what = format!("{} {}", sample.gfx, sample.kernel);
    let mut cpu_times = (sample.threads == 1).then(Vec::new);
    for _ in 0..RUNS {
        prepare()?;
        let cpu_started = thread_cpu_time();
        let started = Instant::now();
        sample.stats = run().map_err(|e| format!("{what}: {e}"))?;
        sample.times.push(started.elapsed());
        cpu_times = cpu_times
            .zip(cpu_started.zip(thread_cpu_time()))
            .map(|(mut v, (from, to))| {
                v.push(to.saturating_sub(from));
                v
            });
        verify().map_err(|e| format!("{what}: wrong result: {e}"))?;
    }
    sample.cpu_times = cpu_times;
    Ok(sample)
}

/// aqueduct's own f16 GEMM kernels at [`GEMM_SIZE`]³ on one thread, f16
/// in, f32 out: on gfx90a the FMA fallback (`gemm_f16_f32_fma`, row
/// `ours_f16`) and the MFMA kernels of 128 × 128 (row `ours_f16_mfma`) and
/// 64 × 64 (`ours_f16_mfma64`); on gfx1100 and gfx1201 the 64 × 64 WMMA
/// kernel (`ours_f16_wmma64`): one kernel source, one tile, one LDS
/// layout on CDNA and RDNA, so their rows compare the simulator's
/// families like for like.
pub const OUR_GEMMS: [(Target, &str, &str); 5] = [
    (Target::Gfx90a, "gemm_f16_f32_fma", "ours_f16"),
    (Target::Gfx90a, "gemm_f16_f32_mfma_128x128", "ours_f16_mfma"),
    (Target::Gfx90a, "gemm_f16_f32_mfma_64x64", "ours_f16_mfma64"),
    (
        Target::Gfx1100,
        "gemm_f16_f32_wmma_64x64",
        "ours_f16_wmma64",
    ),
    (
        Target::Gfx1201,
        "gemm_f16_f32_wmma_64x64",
        "ours_f16_wmma64",
    ),
];

/// One of [`OUR_GEMMS`] at [`GEMM_SIZE`]³ on one thread, from
/// `code_object` (aqueduct-gemm for its target), checked exactly (inputs
/// in {-1, 0, 1}).
pub fn run_our_gemm(
    code_object: &[u8],
    gemm: (Target, &str, &'static str),
) -> Result<Sample, String> {
    run_our_gemm_on(Gpu::new(gemm.0), code_object, gemm)
}

/// [`run_our_gemm`] on `d`, a simulated GPU of the GEMM's target (built
/// with the options a test compares: wave32 pairs on or off).
pub fn run_our_gemm_on(
    d: Gpu,
    code_object: &[u8],
    (target, kernel, row): (Target, &str, &'static str),
) -> Result<Sample, String> {
    let info = aqueduct_gemm::fma::KERNELS
        .iter()
        .chain(aqueduct_gemm::mfma::KERNELS)
        .chain(aqueduct_gemm::wmma::KERNELS)
        .find(|k| k.name == kernel)
        .ok_or_else(|| format!("{kernel} is not an aqueduct-gemm kernel"))?;
    let n = GEMM_SIZE as usize;
    let p = d.load(code_object).map_err(|e| e.to_string())?;
    let mut rng = Rng(0x0512_F16F);
    let draw = |rng: &mut Rng| {
        (0..n * n)
            .map(|_| rng.below(3) as i64 - 1)
            .collect::<Vec<_>>()
    };
    let (a, b) = (draw(&mut rng), draw(&mut rng));
    let f16 = |v: &[i64]| -> Vec<u8> {
        v.iter()
            .flat_map(|&x| (x as f16).to_bits().to_le_bytes())
            .collect()
    };
    let (a_dev, b_dev) = (upload(&d, &f16(&a))?, upload(&d, &f16(&b))?);
    let c_dev = upload(&d, &vec![0xFF; n * n * 4])?;
    let d_dev = upload(&d, &vec![0xFF; n * n * 4])?;
    let mut want = vec![0i64; n * n];
    for j in 0..n {
        for l in 0..n {
            let bv = b[l + j * n];
            if bv != 0 {
                for i in 0..n {
                    want[i + j * n] += a[i + l * n] * bv;
                }
            }
        }
    }
    let want: Vec<u8> = want
        .iter()
        .flat_map(|&x| (x as f32).to_le_bytes())
        .collect();
    let m = GEMM_SIZE;
    let stride = u64::from(m) * u64::from(m);
    let args = GemmArgs {
        a: a_dev,
        b: b_dev,
        c: c_dev,
        d: d_dev,
        m,
        n: m,
        k: m,
        lda: m,
        ldb: m,
        ldc: m,
        ldd: m,
        reserved0: 0,
        stride_a: stride,
        stride_b: stride,
        stride_c: stride,
        stride_d: stride,
        alpha: 1.0,
        beta: 0.0,
        flags: GemmFlags::empty(),
        reserved: 0,
        scale_a: 0,
        scale_b: 0,
    };
    let poison = vec![0xFF; n * n * 4];
    let grid = info.grid(m, m, 1);
    let sample = Sample {
        gfx: target.name(),
        kernel: row,
        threads: 1,
        elements: n * n,
        times: Vec::new(),
        cpu_times: None,
        stats: Stats::default(),
    };
    let sample = timed_runs(
        sample,
        || {
            d.memory()
                .write_bytes(d_dev, &poison)
                .map_err(|e| e.to_string())
        },
        || {
            d.run(
                &p,
                kernel,
                grid,
                [info.threads as u16, 1, 1],
                args.as_bytes(),
            )
            .map_err(|e| e.to_string())
        },
        || first_difference(&download(&d, d_dev, n * n * 4)?, &want, 4),
    );
    for a in [a_dev, b_dev, c_dev, d_dev] {
        let _ = d.memory().free(a);
    }
    sample
}

/// AMD's f16 GEMM kernel (`crate::tensile_gemm`) at [`GEMM_SIZE`]³ on
/// gfx90a, on one host thread and on `threads`, checked exactly against
/// the CPU after every run. The kernel comes from rocBLAS's Debian package
/// (downloaded once, `crate::rocblas_catalog`). With several threads the
/// CPU time is only the calling thread's, so those rows are judged on wall
/// time.
pub fn run_gemm(threads: usize) -> Result<Vec<Sample>, String> {
    let path = crate::rocblas_catalog::fetch_gemm_kernels()?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let kernel = &crate::tensile_gemm::KERNELS[GEMM_KERNEL];
    [1, threads.max(2)]
        .into_iter()
        .map(|t| amd_gemm(Target::Gfx90a, &bytes, kernel, "gemm_f16", t))
        .collect()
}

/// AMD's f16 WMMA GEMM kernels at [`GEMM_SIZE`]³ on RDNA, one thread each:
/// rocBLAS 5.5.1's on gfx1100 (`crate::tensile_gemm::KERNELS_GFX1100`)
/// and hipBLASLt 7.1.1's on gfx1201 (`HIPBLASLT_GFX1201`), the wave32
/// counterparts of [`run_gemm`]'s gfx90a row: 32x32 tiles of four waves on
/// gfx1100 as on gfx90a; on gfx1201 the package's smallest tile (16x16,
/// one wave, element-wise loads) and the kernel hipBLASLt's own catalog
/// selects for the problem on an RX 9070 XT (64x64, four waves, 128-bit
/// loads), row `gemm_f16_64x64`.
pub fn run_rdna_gemms() -> Result<Vec<Sample>, String> {
    use crate::tensile_gemm::{HIPBLASLT_GFX1201, KERNELS_GFX1100};
    let rocblas = crate::rocblas_catalog::fetch_gfx1100_gemm_kernels()?;
    let hipblaslt = crate::hipblaslt_catalog::fetch_gemm_kernels("gfx1201")?;
    let selected = HIPBLASLT_GFX1201
        .iter()
        .find(|k| k.what.contains("choice at 512³"))
        .ok_or("no hipBLASLt kernel of the 512³ choice")?;
    let mut out = Vec::new();
    for (target, path, kernel, label) in [
        (Target::Gfx1100, &rocblas, &KERNELS_GFX1100[0], "gemm_f16"),
        (
            Target::Gfx1201,
            &hipblaslt,
            &HIPBLASLT_GFX1201[0],
            "gemm_f16",
        ),
        (Target::Gfx1201, &hipblaslt, selected, "gemm_f16_64x64"),
    ] {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(amd_gemm(target, &bytes, kernel, label, 1)?);
    }
    Ok(out)
}

/// One AMD GEMM kernel of the code object `bytes` at [`GEMM_SIZE`]³ on
/// `threads` host threads, checked against the CPU after every run, as
/// row `label`.
fn amd_gemm(
    target: Target,
    bytes: &[u8],
    kernel: &'static crate::tensile_gemm::Kernel,
    label: &'static str,
    threads: usize,
) -> Result<Sample, String> {
    let n = GEMM_SIZE;
    let problem = crate::tensile_gemm::Problem {
        m: n,
        n,
        k: n,
        batch: 1,
        alpha: 1,
        beta: 0,
    };
    let d = Gpu::new(target).with_threads(threads);
    let p = d.load(bytes).map_err(|e| e.to_string())?;
    let case = crate::tensile_gemm::Case::new(&d, &p, kernel, problem, &mut Rng(0x6E33_0512))?;
    let sample = Sample {
        gfx: target.name(),
        kernel: label,
        threads,
        elements: (n * n) as usize,
        times: Vec::new(),
        cpu_times: None,
        stats: Stats::default(),
    };
    let sample = timed_runs(
        sample,
        || case.poison(&d),
        || case.run(&d, &p),
        || case.check(&d),
    );
    case.free(&d);
    sample
}

fn first_difference(got: &[u8], want: &[u8], elem: usize) -> Result<(), String> {
    match got
        .chunks(elem)
        .zip(want.chunks(elem))
        .position(|(g, w)| g != w)
    {
        None => Ok(()),
        Some(i) => Err(format!(
            "element {i} is {:02x?}, the CPU says {:02x?}",
            &got[i * elem..(i + 1) * elem],
            &want[i * elem..(i + 1) * elem]
        )),
    }
}

/// The benchmark dispatches on one code object of `aqueduct-device`.
pub fn run(target: Target, code_object: &[u8]) -> Result<Vec<Sample>, String> {
    // One thread is `Gpu::new`'s default; said here because the target
    // is per core.
    let d = Gpu::new(target).with_threads(1);
    let p = d.load(code_object).map_err(|e| e.to_string())?;
    let mut rng = Rng(0x5A5A_1234_9876_ABCD);
    let len = ELEMENTS as u64;
    let mut out = Vec::new();

    // saxpy_f32(len, a, x, y): y = a * x + y, rounded twice as on the CPU.
    let a = rng.f32();
    let x: Vec<f32> = (0..ELEMENTS).map(|_| rng.f32()).collect();
    let y: Vec<f32> = (0..ELEMENTS).map(|_| rng.f32()).collect();
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|f| f.to_le_bytes()).collect() };
    let want = bytes(&x.iter().zip(&y).map(|(x, y)| a * x + y).collect::<Vec<_>>());
    let y_bytes = bytes(&y);
    let xa = upload(&d, &bytes(&x))?;
    let ya = upload(&d, &y_bytes)?;
    let ka = kernargs(
        &p,
        "saxpy_f32",
        &[
            &len.to_le_bytes(),
            &a.to_le_bytes(),
            &xa.to_le_bytes(),
            &ya.to_le_bytes(),
        ],
    )?;
    out.push(time(
        &d,
        &p,
        "saxpy_f32",
        &ka,
        || {
            d.memory()
                .write_bytes(ya, &y_bytes)
                .map_err(|e| e.to_string())
        },
        || first_difference(&download(&d, ya, ELEMENTS * 4)?, &want, 4),
    )?);
    let _ = d.memory().free(xa);
    let _ = d.memory().free(ya);

    // fill_u32(dst, len, value).
    let value = 0x600D_F00Du32;
    let dst = upload(&d, &vec![0; ELEMENTS * 4])?;
    let want: Vec<u8> = std::iter::repeat_n(value.to_le_bytes(), ELEMENTS)
        .flatten()
        .collect();
    let zeros = vec![0; ELEMENTS * 4];
    let ka = kernargs(
        &p,
        "fill_u32",
        &[&dst.to_le_bytes(), &len.to_le_bytes(), &value.to_le_bytes()],
    )?;
    out.push(time(
        &d,
        &p,
        "fill_u32",
        &ka,
        || {
            d.memory()
                .write_bytes(dst, &zeros)
                .map_err(|e| e.to_string())
        },
        || first_difference(&download(&d, dst, ELEMENTS * 4)?, &want, 4),
    )?);
    let _ = d.memory().free(dst);

    // copy_bytes(dst, src, len): one byte per work-item.
    let src_bytes: Vec<u8> = (0..ELEMENTS).map(|_| rng.next_u64() as u8).collect();
    let src = upload(&d, &src_bytes)?;
    let dst = upload(&d, &vec![0; ELEMENTS])?;
    let zeros = vec![0; ELEMENTS];
    let ka = kernargs(
        &p,
        "copy_bytes",
        &[&dst.to_le_bytes(), &src.to_le_bytes(), &len.to_le_bytes()],
    )?;
    out.push(time(
        &d,
        &p,
        "copy_bytes",
        &ka,
        || {
            d.memory()
                .write_bytes(dst, &zeros)
                .map_err(|e| e.to_string())
        },
        || first_difference(&download(&d, dst, ELEMENTS)?, &src_bytes, 1),
    )?);
    let _ = d.memory().free(src);
    let _ = d.memory().free(dst);
    Ok(out)
}

/// One row per dispatch, and the target's verdict.
pub fn format_table(samples: &[Sample]) -> String {
    let mut out = format!(
        "{:<7} {:<16} {:>3} {:>8} {:>6} {:>10} {:>8} {:>8} {:>8} {:>11} {:>12}\n",
        "target",
        "kernel",
        "thr",
        "elements",
        "waves",
        "wave-insts",
        "cpu ms",
        "wall ms",
        "med ms",
        "M wave-i/s",
        "M lane-op/s"
    );
    for s in samples {
        let judged = s.judged().as_secs_f64();
        let cpu = s
            .best_cpu()
            .map_or("-".to_owned(), |t| format!("{:.2}", t.as_secs_f64() * 1e3));
        let _ = writeln!(
            out,
            "{:<7} {:<16} {:>3} {:>8} {:>6} {:>10} {cpu:>8} {:>8.2} {:>8.2} {:>11.1} {:>12.1}",
            s.gfx,
            s.kernel,
            s.threads,
            s.elements,
            s.stats.waves,
            s.stats.instructions,
            s.best().as_secs_f64() * 1e3,
            s.median().as_secs_f64() * 1e3,
            s.stats.instructions as f64 / judged / 1e6,
            s.stats.lane_ops as f64 / judged / 1e6,
        );
    }
    let _ = writeln!(
        out,
        "best of {RUNS} runs each; cpu = the dispatching thread's CPU time, wall = wall time, med = median wall time; rates per cpu (else wall) second"
    );
    for s in samples {
        if let Some(met) = s.gemm_target() {
            let _ = writeln!(
                out,
                "GEMM target (AMD's f16 kernel, {GEMM_SIZE}³ on gfx90a in ≤ {GEMM_TARGET_SECONDS} s on one thread): {} ({:.3} s)",
                if met { "met" } else { "MISSED" },
                s.judged().as_secs_f64(),
            );
        }
        if let Some(met) = s.saxpy_target() {
            let _ = writeln!(
                out,
                "saxpy target (1 Mi elements on gfx942 in ≤ {SAXPY_TARGET_SECONDS} s on one thread): {} ({:.3} s {})",
                if met { "met" } else { "MISSED" },
                s.judged().as_secs_f64(),
                if s.best_cpu().is_some() {
                    "CPU time"
                } else {
                    "wall time"
                },
            );
        }
    }
    out
}
