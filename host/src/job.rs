//! The main job: one GEMM through the device scheduler on one GPU agent,
//! verified against an f64 CPU reference, reported. `aqueduct gemm` and
//! `cargo xtask run` are this module with a command line.
//!
//! The run, as data flows ([`run`]):
//! 1. The agent named by [`GemmJob::device`]; the GEMM catalog of its
//!    processor chooses the kernel for the problem on its hardware
//!    ([`GemmLibrary`]), and the device library starts a scheduler on it
//!    ([`PhysicalDevice`]).
//! 2. One command buffer, recorded once: the device library's
//!    `fill_pattern` writes A, B and C on the device with the pattern of
//!    [`aqueduct_abi::pattern`] (values exact in every input type, no
//!    period a transposed read could hide behind), D is filled with 0xFF
//!    bytes (NaN in every output type), then the GEMM, then a copy of D to
//!    host memory, each after a barrier.
//! 3. One submit with a timeline semaphore to signal; one host wait.
//! 4. D is checked element by element against `alpha · op(A) · op(B) +
//!    beta · C` computed in f64 from the same pattern definition, within a
//!    bound from the output type's rounding and f32 accumulation; a
//!    mismatch is [`JobError::Mismatch`] naming the worst element.
//! 5. The report ([`JobReport`], `Display`): the agent (real or simulated),
//!    the selected solution with the catalog's trace of why, the kernel's
//!    registers, LDS and occupancy, the times — on a GPU the GEMM alone,
//!    timed over ten back-to-back runs, in TFLOP/s (never run yet: no
//!    machine here has a GPU); on the simulator the wall time,
//!    executed wave-instructions and MFMAs, labelled as simulated — the
//!    scheduler's ticks and the host calls, and the trace file written.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aqueduct_abi::gfx::{self, Fp8Format};
use aqueduct_abi::occupancy::{Usage, occupancy};
use aqueduct_abi::packet::Ordering;
use aqueduct_abi::pattern::{self, Element};

use crate::catalog::DataType;
use crate::command_buffer::BufferRef;
use crate::device_code::load_device_library;
use crate::memory::PoolKind;
use crate::scheduler::PhysicalDeviceOptions;
use crate::{Gemm, GemmLibrary, PhysicalDevice, System, Workgroups};

/// What to run: the problem and where.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmJob {
    /// Device string of the agent to run on (`amdgpu:0`, ...): the first
    /// GPU it names runs the job.
    pub device: String,
    /// Rows of D.
    pub m: u32,
    /// Columns of D.
    pub n: u32,
    /// The inner dimension.
    pub k: u32,
    /// Problems in the batch.
    pub batch: u32,
    /// A and B's element type (`Half`, `BFloat16`, `Float`, `Float8`);
    /// C and D are the same type, except for FP8 inputs, whose C and D are
    /// f32 (the kernels' only FP8 form).
    pub input: DataType,
    /// A is stored transposed (K × M).
    pub trans_a: bool,
    /// B is stored transposed (N × K).
    pub trans_b: bool,
    /// Write a Chrome/Perfetto trace of the run here.
    pub trace: Option<PathBuf>,
    /// Test hook: verify against a reference computed from another B, so
    /// the check must fail; shows that a wrong result exits non-zero.
    #[doc(hidden)]
    pub wrong_reference: bool,
}

impl Default for GemmJob {
    /// The main job's defaults: `amdgpu:0`, f16, A as is and B transposed,
    /// 1024 × 1024 × 512, one batch, no trace.
    fn default() -> Self {
        GemmJob {
            device: "amdgpu:0".into(),
            m: 1024,
            n: 1024,
            k: 512,
            batch: 1,
            input: DataType::Half,
            trans_a: false,
            trans_b: true,
            trace: None,
            wrong_reference: false,
        }
    }
}

/// Scalars of the job's GEMM: both non-trivial, both exact.
const ALPHA: f32 = 1.0;
const BETA: f32 = 0.5;
/// Beta of the integer GEMM (Int32 compute takes an i32).
const INT_BETA: f32 = 2.0;
/// Pattern seeds of A, B and C.
const SEEDS: [u32; 3] = [1, 2, 3];
/// Runs of the GEMM alone that a GPU's time is averaged over (the
/// simulator runs it once: its time is not the GPU's).
const TIMED_RUNS: u32 = 10;
/// How long the host waits for the command buffer.
const TIMEOUT: Duration = Duration::from_secs(3600);

/// The input types the job runs, by their command-line names.
const TYPES: [(&str, DataType); 5] = [
    ("f16", DataType::Half),
    ("bf16", DataType::BFloat16),
    ("f32", DataType::Float),
    ("fp8", DataType::Float8),
    ("i8", DataType::Int8),
];

/// Parses `f16`, `bf16`, `f32`, `fp8` or `i8` into the input type.
pub fn parse_type(name: &str) -> Result<DataType, String> {
    TYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, t)| t)
        .ok_or_else(|| format!("unknown type {name:?}: f16, bf16, f32, fp8 or i8"))
}

/// The name [`parse_type`] reads for an input type (`"?"` for others).
pub fn type_name(t: DataType) -> &'static str {
    TYPES
        .iter()
        .find(|&&(_, d)| d == t)
        .map_or("?", |&(n, _)| n)
}

/// Parses `NN`, `NT`, `TN` or `TT` (A's letter first; `T`: stored
/// transposed) into `(trans_a, trans_b)`.
pub fn parse_trans(name: &str) -> Result<(bool, bool), String> {
    let letter = |c: u8| match c {
        b'N' => Some(false),
        b'T' => Some(true),
        _ => None,
    };
    match name.as_bytes() {
        &[a, b] => letter(a).zip(letter(b)),
        _ => None,
    }
    .ok_or_else(|| format!("unknown transpose {name:?}: NN, NT, TN or TT"))
}

/// The name [`parse_trans`] reads for `(trans_a, trans_b)`.
pub fn trans_name(trans_a: bool, trans_b: bool) -> &'static str {
    match (trans_a, trans_b) {
        (false, false) => "NN",
        (false, true) => "NT",
        (true, false) => "TN",
        (true, true) => "TT",
    }
}

impl GemmJob {
    /// The output type: the input's, except f32 for FP8 and i32 for i8.
    pub fn output(&self) -> DataType {
        match self.input {
            DataType::Float8 => DataType::Float,
            DataType::Int8 => DataType::Int32,
            t => t,
        }
    }

    /// The problem the job poses: alpha 1, beta 0.5 (2 for the integer
    /// GEMM, whose beta is an i32).
    pub fn gemm(&self) -> Gemm {
        let beta = if self.input == DataType::Int8 {
            INT_BETA
        } else {
            BETA
        };
        Gemm::new(self.m, self.n, self.k, self.input, self.output())
            .transposed(self.trans_a, self.trans_b)
            .batched(self.batch)
            .scaled(ALPHA, beta)
    }
}

/// What a run found and measured.
#[derive(Debug)]
pub struct JobReport {
    /// The agent's marketing name, processor, CUs, chip ID.
    pub agent: AgentSummary,
    /// The HSA runtime the run went through.
    pub runtime: String,
    /// The problem (`Gemm`'s `Display`).
    pub problem: String,
    /// The selected solution's kernel name.
    pub solution: String,
    /// Its macro-tile (rows × columns of D per workgroup) and workgroup.
    pub macro_tile: [u32; 2],
    /// Work-items per workgroup.
    pub workgroup: u16,
    /// The catalog file and the trace of the selection: every predicate
    /// the catalog evaluated and the row that chose the kernel.
    pub catalog: String,
    /// The catalog's trace of the selection.
    pub selection_trace: String,
    /// The kernel's resources: SGPRs, VGPRs, AGPRs, LDS bytes, scratch
    /// bytes, waves per SIMD and what bounds them.
    pub kernel: KernelSummary,
    /// Wall time of the whole command buffer, submit to wait.
    pub command_buffer_time: Duration,
    /// On a GPU: the GEMM alone, mean over ten back-to-back runs from the
    /// submit to the last one's completion (so host and scheduler latency
    /// are in it: a lower bound on the kernel's rate).
    pub gemm_time: Option<Duration>,
    /// On the simulator: what the GEMM kernel executed (the simulator's
    /// counts are per process: jobs run at the same time in one process
    /// add to each other's).
    pub simulated: Option<SimulatedWork>,
    /// Scheduler ticks, entries, host calls.
    pub scheduler: SchedulerSummary,
    /// The check against the CPU.
    pub check: Check,
    /// The trace file and the events it holds.
    pub trace: Option<(PathBuf, usize)>,
    /// FLOPs of the problem: 2 · M · N · K · batch.
    pub flops: f64,
}

/// The agent a job ran on.
#[derive(Debug, Clone)]
pub struct AgentSummary {
    /// Marketing name (`AMD Instinct MI300X`).
    pub product: String,
    /// Processor (`gfx942`).
    pub gfx: String,
    /// Compute units.
    pub compute_units: u32,
    /// PCI device ID.
    pub chip_id: u32,
    /// The simulator's runtime, not a GPU.
    pub simulated: bool,
}

/// A kernel's resources as its metadata states them, and the occupancy
/// they allow.
#[derive(Debug, Clone, Copy)]
pub struct KernelSummary {
    /// Scalar registers.
    pub sgprs: u64,
    /// Vector registers.
    pub vgprs: u64,
    /// Accumulation registers.
    pub agprs: u64,
    /// Static LDS bytes per workgroup.
    pub lds_bytes: u64,
    /// Scratch bytes per work-item.
    pub scratch_bytes: u64,
    /// Waves of this kernel one SIMD holds.
    pub waves_per_simd: u32,
    /// What bounds them (`vgpr`, `sgpr`, `lds`, `waves`).
    pub bound_by: &'static str,
}

/// What the simulator executed for the GEMM kernel.
#[derive(Debug, Clone, Copy)]
pub struct SimulatedWork {
    /// Waves run.
    pub waves: u64,
    /// Wave-instructions executed.
    pub instructions: u64,
    /// Of them, matrix (MFMA) instructions.
    pub matrix_instructions: u64,
    /// Wave-instructions of every kernel of the run (fills, the copy, the
    /// scheduler's ticks and block issues included).
    pub all_instructions: u64,
}

/// The scheduler's side of the run.
#[derive(Debug, Clone, Copy)]
pub struct SchedulerSummary {
    /// Ticks the device ran.
    pub ticks: u64,
    /// Entries submitted.
    pub entries: u64,
    /// Submissions the host made for the checked run.
    pub submits: u32,
    /// Host waits for the checked run.
    pub waits: u32,
}

/// The comparison with the CPU reference.
#[derive(Debug, Clone)]
pub struct Check {
    /// Elements compared.
    pub elements: u64,
    /// Largest absolute difference.
    pub max_error: f64,
    /// The element whose error is largest relative to its bound.
    pub worst: Worst,
}

/// One element of D against the reference.
#[derive(Debug, Clone, Copy, Default)]
pub struct Worst {
    /// Row.
    pub row: u32,
    /// Column.
    pub column: u32,
    /// Batch.
    pub batch: u32,
    /// What the GPU wrote.
    pub got: f64,
    /// The reference.
    pub expected: f64,
    /// The allowed difference.
    pub bound: f64,
}

impl fmt::Display for Worst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "D[{}, {}] of batch {} = {} (expected {}, |difference| {:e}, allowed {:e})",
            self.row,
            self.column,
            self.batch,
            self.got,
            self.expected,
            (self.got - self.expected).abs(),
            self.bound
        )
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The runtime, the device code, the catalog or the scheduler failed.
    #[error(transparent)]
    Runtime(#[from] crate::Error),
    /// The device library is not built for the agent, or not this host's.
    #[error(transparent)]
    DeviceCode(#[from] crate::device_code::DeviceCodeError),
    /// D differs from the CPU reference beyond the bound.
    #[error(
        "D differs from the CPU reference: {worst} (of {elements} elements, {wrong} out of bounds)"
    )]
    Mismatch {
        /// The worst element.
        worst: Worst,
        /// Elements compared.
        elements: u64,
        /// Elements out of bounds.
        wrong: u64,
    },
    /// The job cannot run as posed (a zero size, FP8 on a GPU without it,
    /// no GPU behind the device string).
    #[error("{0}")]
    Usage(String),
}

/// How a type's elements are stored, on `gfx`.
fn element(t: DataType, gfx_name: &str) -> Result<Element, JobError> {
    Ok(match t {
        DataType::Float => Element::F32,
        DataType::Half => Element::F16,
        DataType::BFloat16 => Element::Bf16,
        DataType::Int8 => Element::I8,
        DataType::Int32 => Element::I32,
        DataType::Float8 => match gfx::gfx(gfx_name).map(|g| g.fp8) {
            Some(Fp8Format::Fnuz) => Element::Fp8Fnuz,
            Some(Fp8Format::Ocp) => Element::Fp8Ocp,
            _ => {
                return Err(JobError::Usage(format!(
                    "{gfx_name} has no FP8 matrix instructions"
                )));
            }
        },
        other => return Err(JobError::Usage(format!("the job does not run {other}"))),
    })
}

/// Runs `job` on the first GPU `job.device` names in `system`.
pub fn run(system: &System, job: &GemmJob) -> Result<JobReport, JobError> {
    if [job.m, job.n, job.k, job.batch].contains(&0) {
        return Err(JobError::Usage(format!(
            "M, N, K and batch must be at least 1 (got {} × {} × {}, batch {})",
            job.m, job.n, job.k, job.batch
        )));
    }
    let gpu = system
        .select(&job.device)?
        .into_iter()
        .find(|a| a.is_gpu())
        .ok_or_else(|| JobError::Usage(format!("{} names no GPU agent", job.device)))?;
    let info = gpu.info();
    let gfx_name = info.name.clone();
    let gpu_info = info
        .gpu
        .as_ref()
        .ok_or_else(|| JobError::Usage(format!("agent {gfx_name} has no GPU properties")))?;
    let sim_before = system.runtime().simulator_kernel_stats();
    let agent = AgentSummary {
        product: gpu_info.product_name.clone(),
        gfx: gfx_name.clone(),
        compute_units: gpu_info.compute_units,
        chip_id: gpu_info.chip_id,
        simulated: sim_before.is_some(),
    };
    let gemm = job.gemm();
    let (input, output) = (
        element(gemm.input, &gfx_name)?,
        element(gemm.output, &gfx_name)?,
    );

    // The kernel the catalog chooses, and the scheduler.
    let library = GemmLibrary::open(&gpu)?;
    let plan = library.select(&gemm)?;
    let selection_trace = library.explain(&gemm);
    let (bytes, _) = load_device_library(&gfx_name)?;
    let device_library = gpu.load_code_object(&bytes)?;
    let fill = device_library.kernel("fill_pattern")?;
    // A, B, C, D on the GPU; D's copy in host memory, poisoned. Allocated
    // before the scheduler starts, so they are freed after it stops: a
    // dropped PhysicalDevice waits for the work in flight (a failed wait below
    // returns early with entries still running).
    let spans = gemm.spans();
    let sizes = [
        spans[0] * u64::from(input.bytes()),
        spans[1] * u64::from(input.bytes()),
        spans[2] * u64::from(output.bytes()),
        spans[3] * u64::from(output.bytes()),
    ];
    let pool = gpu.memory_pool(PoolKind::CoarseGrained)?;
    let buffers = sizes
        .iter()
        .map(|&s| pool.alloc_device::<u8>(s as usize))
        .collect::<crate::Result<Vec<_>>>()?;
    let refs: Vec<BufferRef> = buffers
        .iter()
        .zip(sizes)
        .map(|(b, s)| BufferRef::direct(b.address(), s))
        .collect();
    let host_pool = system
        .agents()?
        .into_iter()
        .find(|a| !a.is_gpu())
        .ok_or_else(|| JobError::Usage("the runtime has no CPU agent".into()))?
        .memory_pool(PoolKind::FineGrained)?;
    let mut d_host = host_pool.alloc_host::<u8>(sizes[3] as usize)?;
    d_host.fill(0xFF);

    let options = PhysicalDeviceOptions {
        trace_records: if job.trace.is_some() { 4096 } else { 0 },
        ..PhysicalDeviceOptions::default()
    };
    let device = PhysicalDevice::new(&gpu, &device_library, options)?;

    // Record once: the operands, D poisoned, the GEMM, D to the host.
    let mut recording = device.command_buffer(8)?;
    for ((r, seed), (len, kind)) in
        refs.iter()
            .zip(SEEDS)
            .zip([(spans[0], input), (spans[1], input), (spans[2], output)])
    {
        let mut args = fill.kernargs()?;
        args.bind(0, *r)?
            .set(1, len)?
            .set(2, kind as u32)?
            .set(3, seed)?;
        let groups = len.div_ceil(256).min(4096) as u32;
        recording.dispatch(&fill, Workgroups::linear(groups, 256), &args)?;
    }
    recording.fill(refs[3], &[0xFF])?;
    recording.set_ordering(Ordering::AGENT.with_barrier());
    plan.record(&mut recording, &gemm, [refs[0], refs[1], refs[2], refs[3]])?;
    recording.copy(refs[3], BufferRef::direct(d_host.address(), sizes[3]))?;
    let commands = recording.finish()?;

    // One submit, one wait.
    let queue = device.queue();
    let done = device.semaphore(0)?;
    let started = Instant::now();
    queue.execute(&[], &commands, &[], &[(&done, 1)])?;
    done.wait(1, TIMEOUT)?;
    let command_buffer_time = started.elapsed();
    let stats = device.stats();
    let scheduler = SchedulerSummary {
        ticks: stats.ticks,
        entries: stats.submitted,
        submits: 1,
        waits: 1,
    };
    let simulated = system.runtime().simulator_kernel_stats().map(|after| {
        let before = sim_before.unwrap_or_default();
        let spent = |name: Option<&str>| {
            let sum = |all: &[crate::hsa::KernelStats]| {
                all.iter()
                    .filter(|s| name.is_none_or(|n| s.name == n))
                    .fold([0u64; 3], |[w, i, m], s| {
                        [w + s.waves, i + s.instructions, m + s.matrix_instructions]
                    })
            };
            let (a, b) = (sum(&after), sum(&before));
            [0, 1, 2].map(|x| a[x].saturating_sub(b[x]))
        };
        let [waves, instructions, matrix_instructions] = spent(Some(&plan.name));
        SimulatedWork {
            waves,
            instructions,
            matrix_instructions,
            all_instructions: spent(None)[1],
        }
    });

    // Check D before anything else is timed.
    let d: Vec<f64> = d_host
        .chunks_exact(output.bytes() as usize)
        .map(|e| decode(output, e))
        .collect();
    let check = verify(&gemm, &d, job.wrong_reference)?;

    // On a GPU, the GEMM alone, several times.
    let gemm_time = if agent.simulated {
        None
    } else {
        let mut alone = device.command_buffer(1)?;
        plan.record(&mut alone, &gemm, [refs[0], refs[1], refs[2], refs[3]])?;
        let alone = alone.finish()?;
        let timeline = device.semaphore(0)?;
        let started = Instant::now();
        let mut batch = queue.batch();
        for run in 0..u64::from(TIMED_RUNS) {
            batch.execute(&[(&timeline, run)], &alone, &[], &[(&timeline, run + 1)])?;
        }
        batch.submit()?;
        timeline.wait(u64::from(TIMED_RUNS), TIMEOUT)?;
        Some(started.elapsed() / TIMED_RUNS)
    };

    let trace = match &job.trace {
        Some(path) => device
            .write_trace(path)?
            .map(|events| (path.clone(), events)),
        None => None,
    };
    let meta = plan.kernel.metadata();
    let (waves_per_simd, limiter) = gfx::gfx(&gfx_name).map_or((0, "unknown"), |g| {
        let (w, l) = occupancy(
            g,
            Usage {
                sgprs: meta.sgpr_count as u32,
                vgprs: meta.vgpr_count as u32,
                agprs: meta.agpr_count as u32,
                lds_bytes: meta.group_segment_fixed_size as u32,
                workgroup_size: u32::from(plan.workgroup),
            },
        );
        (w, l.name())
    });
    Ok(JobReport {
        agent,
        runtime: system.runtime().path().to_string(),
        problem: gemm.to_string(),
        solution: plan.name.clone(),
        macro_tile: plan.macro_tile,
        workgroup: plan.workgroup,
        catalog: {
            let file = plan.catalog_file.as_deref().unwrap_or(library.path());
            std::fs::canonicalize(file)
                .unwrap_or_else(|_| file.to_path_buf())
                .display()
                .to_string()
        },
        selection_trace,
        kernel: KernelSummary {
            sgprs: meta.sgpr_count,
            vgprs: meta.vgpr_count,
            agprs: meta.agpr_count,
            lds_bytes: meta.group_segment_fixed_size,
            scratch_bytes: meta.private_segment_fixed_size,
            waves_per_simd,
            bound_by: limiter,
        },
        command_buffer_time,
        gemm_time,
        simulated,
        scheduler,
        check,
        trace,
        flops: 2.0
            * f64::from(gemm.m)
            * f64::from(gemm.n)
            * f64::from(gemm.k)
            * f64::from(gemm.batch),
    })
}

/// The value of one stored output element.
fn decode(element: Element, bytes: &[u8]) -> f64 {
    match element {
        Element::F32 => f64::from(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        Element::F16 => f64::from(f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]]))),
        Element::Bf16 => f64::from(f32::from_bits(
            u32::from(u16::from_le_bytes([bytes[0], bytes[1]])) << 16,
        )),
        Element::I32 => f64::from(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        // Never an output: FP8 GEMMs write f32, i8 ones i32.
        Element::Fp8Fnuz | Element::Fp8Ocp | Element::I8 => f64::NAN,
    }
}

/// Unit roundoff of storing a result as `t` (half an ulp, relative): 0
/// for Int32, whose sums of the pattern are exact.
fn unit_roundoff(t: DataType) -> f64 {
    match t {
        DataType::Half => 2f64.powi(-11),
        DataType::BFloat16 => 2f64.powi(-8),
        DataType::Int32 => 0.0,
        _ => 2f64.powi(-24),
    }
}

/// One element of D: what the GPU wrote, the reference, the bound.
type Compared = (f64, f64, f64);

/// Compares `d` (D as the GPU wrote it, tight, batch after batch) with
/// `alpha · op(A) · op(B) + beta · C` in f64 from the pattern. An element
/// passes within `u_out · |ref|`, the rounding to the output type: the
/// pattern keeps every f32 partial sum exact while K ≤ 671,088 (with
/// alpha 1). Beyond that `K · 2^-24 · Σ|alpha · a · b| + |beta · c|`, the
/// f32 accumulation's worst case, is allowed too. An Int8 GEMM reads
/// the pattern's integers (`pattern::int_value`, four times the values)
/// and must match exactly. With `wrong_reference` B is read from another
/// seed.
pub fn verify(gemm: &Gemm, d: &[f64], wrong_reference: bool) -> Result<Check, JobError> {
    let (m, n, k) = (gemm.m as usize, gemm.n as usize, gemm.k as usize);
    let span = gemm.spans()[3];
    if (d.len() as u64) < span {
        return Err(JobError::Usage(format!(
            "D holds {} elements, the problem spans {span}",
            d.len()
        )));
    }
    let seed_b = if wrong_reference {
        SEEDS[1] + 100
    } else {
        SEEDS[1]
    };
    let u_out = unit_roundoff(gemm.output);
    // The integer GEMM's elements hold q - 5, the float ones (q - 5) / 4.
    let integer = gemm.input == DataType::Int8;
    let value = |seed: u32, at: u64| {
        if integer {
            f64::from(pattern::int_value(seed, at))
        } else {
            f64::from(pattern::value(seed, at))
        }
    };
    // Products of pattern values are multiples of 1/16 of at most 1.5625,
    // and beta · C multiples of 1/8 of at most 0.625: every partial sum, in
    // any order, is exact in f32 while its magnitude stays within 2^20.
    // Then only the conversion to the output type rounds; beyond, the f32
    // accumulation's worst case is allowed too.
    let exact_sums = 1.5625 * k as f64 * f64::from(gemm.alpha).abs()
        + 0.625 * f64::from(gemm.beta).abs()
        <= 2f64.powi(20);
    let accumulation = if exact_sums || integer {
        0.0
    } else {
        k as f64 * 2f64.powi(-24)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut worst = Worst::default();
    let mut worst_ratio = -1.0f64;
    let (mut max_error, mut wrong) = (0.0f64, 0u64);
    for batch in 0..gemm.batch as usize {
        // op(A) by rows and op(B) by columns, each contiguous along K.
        let a_at = |i: usize, l: usize| {
            let (r, c) = if gemm.trans_a { (l, i) } else { (i, l) };
            batch as u64 * gemm.stride_a + r as u64 + c as u64 * u64::from(gemm.lda)
        };
        let b_at = |l: usize, j: usize| {
            let (r, c) = if gemm.trans_b { (j, l) } else { (l, j) };
            batch as u64 * gemm.stride_b + r as u64 + c as u64 * u64::from(gemm.ldb)
        };
        let a: Vec<f64> = (0..m * k)
            .map(|x| value(SEEDS[0], a_at(x / k, x % k)))
            .collect();
        let b: Vec<f64> = (0..n * k)
            .map(|x| value(seed_b, b_at(x % k, x / k)))
            .collect();
        // Columns of D in parallel: (column, [(got, expected, bound)]).
        let columns: Vec<(usize, Vec<Compared>)> = std::thread::scope(|s| {
            let per = n.div_ceil(threads);
            let (a, b) = (&a, &b);
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let mut out = Vec::new();
                        for j in (t * per)..((t + 1) * per).min(n) {
                            let bj = &b[j * k..(j + 1) * k];
                            let column = (0..m)
                                .map(|i| {
                                    let ai = &a[i * k..(i + 1) * k];
                                    let (mut dot, mut abs) = (0.0f64, 0.0f64);
                                    for (x, y) in ai.iter().zip(bj) {
                                        dot += x * y;
                                        abs += (x * y).abs();
                                    }
                                    let c_index = batch as u64 * gemm.stride_c
                                        + i as u64
                                        + j as u64 * u64::from(gemm.ldc);
                                    let c = value(SEEDS[2], c_index);
                                    let alpha = f64::from(gemm.alpha);
                                    let beta = f64::from(gemm.beta);
                                    let want = alpha * dot + beta * c;
                                    let bound = u_out * want.abs()
                                        + accumulation * (alpha.abs() * abs + (beta * c).abs());
                                    let got = d[batch * gemm.stride_d as usize
                                        + i
                                        + j * gemm.ldd as usize];
                                    (got, want, bound)
                                })
                                .collect();
                            out.push((j, column));
                        }
                        out
                    })
                })
                .collect();
            // A worker's panic is this call's: no column goes unchecked.
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for (j, column) in columns {
            for (i, (got, want, bound)) in column.into_iter().enumerate() {
                let error = (got - want).abs();
                // NaN (the poison, or a NaN written) is worse than anything.
                let ratio = if error.is_nan() {
                    f64::INFINITY
                } else {
                    error / bound.max(f64::MIN_POSITIVE)
                };
                if error.is_nan() || error > bound {
                    wrong += 1;
                }
                if error > max_error || error.is_nan() {
                    max_error = if error.is_nan() { f64::NAN } else { error };
                }
                if ratio > worst_ratio {
                    worst_ratio = ratio;
                    worst = Worst {
                        row: i as u32,
                        column: j as u32,
                        batch: batch as u32,
                        got,
                        expected: want,
                        bound,
                    };
                }
            }
        }
    }
    let elements = u64::from(gemm.m) * u64::from(gemm.n) * u64::from(gemm.batch);
    if wrong > 0 {
        return Err(JobError::Mismatch {
            worst,
            elements,
            wrong,
        });
    }
    Ok(Check {
        elements,
        max_error,
        worst,
    })
}

impl fmt::Display for JobReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.agent;
        let kind = if a.simulated {
            "simulated by aqueduct-sim"
        } else {
            "GPU"
        };
        writeln!(
            f,
            "agent      {} ({}, {} CUs, chip {:#06x}): {kind}",
            a.product, a.gfx, a.compute_units, a.chip_id
        )?;
        writeln!(f, "runtime    {}", self.runtime)?;
        writeln!(f, "problem    {}", self.problem)?;
        writeln!(
            f,
            "solution   {} (macro-tile {}×{}, {} work-items per workgroup)",
            self.solution, self.macro_tile[0], self.macro_tile[1], self.workgroup
        )?;
        writeln!(f, "catalog    {}", self.catalog)?;
        writeln!(
            f,
            "  chosen by (the rows that matched; AQUEDUCT_CATALOG_DEBUG=1 prints every row tried):"
        )?;
        for line in matched_rows(&self.selection_trace).lines() {
            writeln!(f, "    {line}")?;
        }
        let k = &self.kernel;
        writeln!(
            f,
            "kernel     {} SGPRs, {} VGPRs, {} AGPRs, {} B LDS, {} B scratch: {} waves per SIMD (bound by {})",
            k.sgprs, k.vgprs, k.agprs, k.lds_bytes, k.scratch_bytes, k.waves_per_simd, k.bound_by
        )?;
        writeln!(
            f,
            "run        command buffer (fill A, B, C; poison D; GEMM; D to host) {:.3} s wall",
            self.command_buffer_time.as_secs_f64()
        )?;
        if let Some(t) = self.gemm_time {
            writeln!(
                f,
                "           GEMM alone {:.3} ms (mean of {TIMED_RUNS} back-to-back runs, submit to completion): {:.2} TFLOP/s",
                t.as_secs_f64() * 1e3,
                self.flops / t.as_secs_f64() / 1e12
            )?;
        }
        if let Some(s) = &self.simulated {
            writeln!(
                f,
                "simulated  GEMM kernel: {} waves, {} wave-instructions, {} matrix instructions ({:.1} % of them); all kernels {} wave-instructions (simulator counts, not GPU time)",
                s.waves,
                s.instructions,
                s.matrix_instructions,
                100.0 * s.matrix_instructions as f64 / s.instructions.max(1) as f64,
                s.all_instructions
            )?;
        }
        let s = &self.scheduler;
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        writeln!(
            f,
            "scheduler  {} for {}; host: {}, {} for the checked run",
            plural(s.ticks, "tick", "ticks"),
            plural(s.entries, "entry", "entries"),
            plural(u64::from(s.submits), "submit", "submits"),
            plural(u64::from(s.waits), "wait", "waits")
        )?;
        let c = &self.check;
        if c.max_error == 0.0 {
            writeln!(
                f,
                "check      all {} elements of D equal the f64 CPU reference exactly",
                c.elements
            )?;
        } else {
            writeln!(
                f,
                "check      {} elements of D match the f64 CPU reference; largest difference {:e}; closest to its bound: {}",
                c.elements, c.max_error, c.worst
            )?;
        }
        if let Some((path, events)) = &self.trace {
            writeln!(f, "trace      {} ({events} events)", path.display())?;
        }
        Ok(())
    }
}

/// The catalog's selection trace without the rows that did not match:
/// each matching predicate block (title and predicates), the lines between
/// blocks (problem map, matching table, result), and how many rows before
/// were passed over.
fn matched_rows(trace: &str) -> String {
    let mut out = String::new();
    let mut block: Option<Vec<&str>> = None;
    let mut last: Vec<&str> = Vec::new();
    let (mut passed, mut again) = (0, 0);
    let flush = |out: &mut String, again: &mut u32| {
        if *again > 0 {
            out.push_str(&format!(
                "(the same, {again} more times as the table was walked)\n"
            ));
            *again = 0;
        }
    };
    for line in trace.lines() {
        let text = line.trim_end();
        if text.is_empty() || text.chars().all(|c| c == '-') {
            continue;
        }
        if text.starts_with("PREDICATE:") {
            block = Some(vec![text]);
        } else if let Some(lines) = block.take() {
            let Some(result) = text.strip_prefix("Result:") else {
                block = Some(lines);
                if let Some(l) = &mut block {
                    l.push(text);
                }
                continue;
            };
            if result.trim() != "MATCH" {
                passed += 1;
            } else if lines == last {
                again += 1;
            } else {
                flush(&mut out, &mut again);
                if passed > 0 {
                    let rows = if passed == 1 { "row" } else { "rows" };
                    out.push_str(&format!("({passed} {rows} before did not match)\n"));
                    passed = 0;
                }
                for l in &lines {
                    out.push_str(l);
                    out.push('\n');
                }
                last = lines;
            }
        } else {
            flush(&mut out, &mut again);
            last.clear();
            out.push_str(text);
            out.push('\n');
        }
    }
    flush(&mut out, &mut again);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(gemm: &Gemm) -> Vec<f64> {
        // D from the same definitions the check uses, independently: a
        // plain triple loop over stored indices.
        let mut d = vec![0.0; gemm.spans()[3] as usize];
        for b in 0..gemm.batch as u64 {
            for j in 0..gemm.n as u64 {
                for i in 0..gemm.m as u64 {
                    let mut dot = 0.0f64;
                    for l in 0..gemm.k as u64 {
                        let ai = if gemm.trans_a {
                            l + i * u64::from(gemm.lda)
                        } else {
                            i + l * u64::from(gemm.lda)
                        };
                        let bi = if gemm.trans_b {
                            j + l * u64::from(gemm.ldb)
                        } else {
                            l + j * u64::from(gemm.ldb)
                        };
                        dot += f64::from(pattern::value(SEEDS[0], b * gemm.stride_a + ai))
                            * f64::from(pattern::value(SEEDS[1], b * gemm.stride_b + bi));
                    }
                    let c = f64::from(pattern::value(
                        SEEDS[2],
                        b * gemm.stride_c + i + j * u64::from(gemm.ldc),
                    ));
                    d[(b * gemm.stride_d + i + j * u64::from(gemm.ldd)) as usize] =
                        f64::from(gemm.alpha) * dot + f64::from(gemm.beta) * c;
                }
            }
        }
        d
    }

    #[test]
    fn the_check_passes_the_reference_and_names_a_wrong_element() {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let gemm = Gemm::new(13, 7, 5, DataType::Half, DataType::Float)
                .transposed(ta, tb)
                .batched(2)
                .scaled(ALPHA, BETA);
            let mut d = reference(&gemm);
            let check = verify(&gemm, &d, false).expect("the reference passes");
            assert_eq!((check.elements, check.max_error), (13 * 7 * 2, 0.0));
            // One element off by a quarter in batch 1, row 4, column 6.
            let at = (gemm.stride_d + 4 + 6 * u64::from(gemm.ldd)) as usize;
            d[at] += 0.25;
            match verify(&gemm, &d, false) {
                Err(JobError::Mismatch { worst, wrong, .. }) => {
                    assert_eq!((worst.row, worst.column, worst.batch, wrong), (4, 6, 1, 1));
                }
                other => panic!("{other:?}"),
            }
            d[at] = f64::NAN;
            assert!(matches!(
                verify(&gemm, &d, false),
                Err(JobError::Mismatch { wrong: 1, .. })
            ));
        }
    }

    #[test]
    fn a_wrong_reference_fails_and_output_rounding_is_allowed() {
        let gemm = Gemm::new(8, 8, 64, DataType::Half, DataType::Half).scaled(ALPHA, BETA);
        let d = reference(&gemm);
        assert!(matches!(
            verify(&gemm, &d, true),
            Err(JobError::Mismatch { .. })
        ));
        // D rounded to f16 passes.
        let rounded: Vec<f64> = d.iter().map(|&v| f64::from(v as f32 as f16)).collect();
        verify(&gemm, &rounded, false).expect("f16 rounding is within the bound");
    }

    #[test]
    fn the_trace_keeps_the_matching_rows_once() {
        let block = |title: &str, result: &str| {
            format!(
                "-----\nPREDICATE: {title}\n-----\n[OK]  Pred  x\n-----\nResult: {result}\n-----\n\n"
            )
        };
        let trace = format!(
            "SELECT p\n\n{}{}ProblemMap: found\n{}{}{}RESULT: s",
            block("Hardware", "NO MATCH"),
            block("Hardware", "MATCH"),
            block("Solution 3", "MATCH"),
            block("Solution 3", "MATCH"),
            block("Solution 4", "NO MATCH"),
        );
        assert_eq!(
            matched_rows(&trace),
            "SELECT p\n(1 row before did not match)\nPREDICATE: Hardware\n[OK]  Pred  x\n\
             ProblemMap: found\nPREDICATE: Solution 3\n[OK]  Pred  x\n\
             (the same, 1 more times as the table was walked)\nRESULT: s\n"
        );
    }

    #[test]
    fn types_and_transposes_parse() {
        assert_eq!(parse_type("bf16"), Ok(DataType::BFloat16));
        for name in ["f16", "bf16", "f32", "fp8", "i8"] {
            assert_eq!(parse_type(name).map(type_name), Ok(name));
        }
        assert!(parse_type("f64").is_err());
        assert_eq!(parse_trans("TN"), Ok((true, false)));
        for name in ["NN", "NT", "TN", "TT"] {
            assert_eq!(parse_trans(name).map(|(a, b)| trans_name(a, b)), Ok(name));
        }
        assert!(parse_trans("NTN").is_err());
        assert!(parse_trans("nt").is_err());
        let job = GemmJob {
            input: DataType::Float8,
            ..GemmJob::default()
        };
        assert_eq!(job.output(), DataType::Float);
        assert_eq!(
            element(DataType::Float8, "gfx942").ok(),
            Some(Element::Fp8Fnuz)
        );
        assert!(element(DataType::Float8, "gfx90a").is_err());
        // i8: i32 out, an integral beta, integer pattern elements.
        let job = GemmJob {
            input: DataType::Int8,
            ..GemmJob::default()
        };
        assert_eq!(job.output(), DataType::Int32);
        assert_eq!((job.gemm().alpha, job.gemm().beta), (1.0, 2.0));
        assert_eq!(job.gemm().validate().ok(), Some(()));
        assert_eq!(element(DataType::Int32, "gfx90a").ok(), Some(Element::I32));
    }

    /// The integer GEMM's check: exact against the pattern's integers, so
    /// an element off by one is wrong.
    #[test]
    fn an_integer_gemm_must_match_exactly() {
        let gemm = Gemm::new(5, 3, 4, DataType::Int8, DataType::Int32).scaled(1.0, 2.0);
        let mut d: Vec<f64> = (0..15)
            .map(|x| {
                let (i, j) = (x % 5, x / 5);
                let dot: i32 = (0..4)
                    .map(|l| {
                        pattern::int_value(SEEDS[0], (i + 5 * l) as u64)
                            * pattern::int_value(SEEDS[1], (l + 4 * j) as u64)
                    })
                    .sum();
                f64::from(dot + 2 * pattern::int_value(SEEDS[2], x as u64))
            })
            .collect();
        let check = verify(&gemm, &d, false).expect("exact");
        assert_eq!((check.elements, check.max_error), (15, 0.0));
        d[7] += 1.0;
        let Err(JobError::Mismatch { worst, wrong, .. }) = verify(&gemm, &d, false) else {
            panic!("an element off by one passed");
        };
        assert_eq!((wrong, worst.row, worst.column), (1, 2, 1));
    }
}
