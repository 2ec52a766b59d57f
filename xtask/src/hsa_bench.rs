//! Benchmarks of the host shim on an HSA runtime (the simulator's
//! `libaqueduct_sim.so` unless told otherwise): what a dispatch costs around
//! the kernel, measured on `empty_kernel` (tests/kernels/src/bench.rs),
//! against the goal of at most [`SUBMIT_TARGET_NS`] per packet on the host.
//!
//! ```text
//!   round trip   Kernel::dispatch ─► packet processor ─► completion ─► wait
//!                (kernargs placed, packet built and submitted), one at a time
//!   batch        the same N times, then a wait on the last: throughput
//!   submit       KernelDispatch::build + Queue::submit (reserve, body,
//!                release header store, doorbell) per packet, no wait
//!   bulk submit  one reserve of BULK slots, BULK emplaces, one commit
//!   body build   KernelDispatch::build alone (aqueduct-abi's builder)
//! ```
//!
//! The host-side packet cost has a target: at most [`SUBMIT_TARGET_NS`] per
//! packet amortised, since it is a handful of stores. The submit runs are
//! gated: the queue's first packet is a barrier-AND on a signal the host
//! holds at 1, so the packet processor stays parked at packet 0 while the
//! host fills the ring and only the host's own work is timed (on real
//! hardware the command processor runs on other silicon; on the simulator
//! it would otherwise share the host's cores). Opening the gate then times
//! the processor draining the ring.
//!
//! Every run is checked so a broken one cannot pass for a fast one: each
//! round trip's completion signal must read 0, each batch dispatch must be
//! complete, and each submit run's shared completion signal (one decrement
//! per packet) must reach exactly 0 with the read index at the write index.
//!
//! As in `sim-bench`, times are wall time and the calling thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`: [`thread_cpu_time`]); the
//! target is judged on CPU time where Linux reports it. Numbers are only meaningful optimised, so the command
//! re-runs itself with `--release` and loads a release build of the
//! simulator.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use aqueduct::agent::Agent;
use aqueduct::{Kernel, LoadOrder, PoolKind, Queue, Signal, StoreOrder, System};
use aqueduct_abi::hsa::SignalCondition;
use aqueduct_abi::packet::{self, BarrierKind, KernelDispatch, Ordering};
use xtask::sim_bench::thread_cpu_time;

/// The host-side cost target for building and submitting one packet.
pub const SUBMIT_TARGET_NS: f64 = 100.0;

/// The kernel every dispatch runs, and the device crate that has it.
pub const KERNEL: &str = "empty_kernel";
pub const KERNEL_PACKAGE: &str = "aqueduct-test-kernels";

/// Round trips timed one by one (after [`WARM_UP`] untimed ones).
pub const ROUND_TRIPS: usize = 2000;
/// Dispatches of the batch run, submitted before one wait.
pub const BATCH: usize = 2000;
/// Packets per submit run: 64 Ki.
pub const SUBMIT_PACKETS: u32 = 1 << 16;
/// Slots per reservation of the bulk submit run.
pub const BULK: u32 = 256;
/// Body builds timed.
pub const BUILDS: u32 = 1 << 22;
/// Untimed round trips first: code paths, caches and the kernarg pool warm.
const WARM_UP: usize = 50;
/// Ring sizes: the batch fits; 64 Ki packets and the gate fit.
const BATCH_QUEUE: u32 = 4096;
const SUBMIT_QUEUE: u32 = 1 << 17;
/// Longest wait for any completion: the simulator runs ~10⁵ empty kernels.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Wall and calling-thread CPU time of one timed region.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub wall: Duration,
    pub cpu: Option<Duration>,
}

impl Span {
    /// The time judged: CPU where known, else wall.
    pub fn judged(&self) -> Duration {
        self.cpu.unwrap_or(self.wall)
    }
}

/// Times `f` by wall clock and the calling thread's CPU time.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Span) {
    let cpu_started = thread_cpu_time();
    let started = Instant::now();
    let out = f();
    let wall = started.elapsed();
    let cpu = cpu_started
        .zip(thread_cpu_time())
        .map(|(from, to)| to.saturating_sub(from));
    (out, Span { wall, cpu })
}

/// One agent's results.
#[derive(Clone, Debug)]
pub struct AgentResult {
    pub gfx: String,
    /// Wall time of each round trip, sorted.
    pub round_trips: Vec<Duration>,
    /// The whole round-trip loop.
    pub round_trip_total: Span,
    /// Submitting [`BATCH`] dispatches, and until the last is complete.
    pub batch_submit: Span,
    pub batch_total: Span,
    /// [`SUBMIT_PACKETS`] packets built and submitted one by one.
    pub submit: Span,
    /// The processor draining them once the gate opens (wall).
    pub drain: Duration,
    /// [`SUBMIT_PACKETS`] packets emplaced [`BULK`] per reservation.
    pub bulk: Span,
    /// [`BUILDS`] packet bodies built.
    pub build: Span,
}

impl AgentResult {
    fn round_trip_percentile(&self, p: f64) -> Duration {
        let n = self.round_trips.len();
        let at = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        self.round_trips[at]
    }

    fn round_trip_mean(&self) -> Duration {
        self.round_trips.iter().sum::<Duration>() / self.round_trips.len() as u32
    }

    /// Host CPU per packet of the one-by-one submit run, in ns.
    pub fn submit_ns(&self) -> f64 {
        per(self.submit.judged(), SUBMIT_PACKETS as usize)
    }

    /// Whether building and submitting a packet met [`SUBMIT_TARGET_NS`].
    pub fn submit_target_met(&self) -> bool {
        self.submit_ns() <= SUBMIT_TARGET_NS
    }
}

/// Nanoseconds per item.
fn per(span: Duration, items: usize) -> f64 {
    span.as_secs_f64() * 1e9 / items as f64
}

/// Opens the runtime at `library` and benchmarks every GPU agent it reports,
/// loading `code_object(gfx)` (the test kernels built for that processor).
pub fn run(
    library: &Path,
    mut code_object: impl FnMut(&str) -> Result<Vec<u8>, String>,
) -> Result<Vec<AgentResult>, String> {
    let system = System::open(&aqueduct::LoadOptions::library(library))
        .map_err(|e| format!("cannot open {}: {e}", library.display()))?;
    let gpus = system.gpus().map_err(|e| e.to_string())?;
    if gpus.is_empty() {
        return Err(format!("{} reports no GPU agent", library.display()));
    }
    let mut out = Vec::new();
    for gpu in &gpus {
        let gfx = gpu.info().name.clone();
        let bytes = code_object(&gfx)?;
        let kernel = gpu
            .load_code_object(&bytes)
            .and_then(|e| e.kernel(KERNEL))
            .map_err(|e| format!("{gfx}: {KERNEL}: {e}"))?;
        out.push(bench_agent(&system, gpu, &kernel).map_err(|e| format!("{gfx}: {e}"))?);
    }
    Ok(out)
}

fn bench_agent(system: &System, gpu: &Agent, kernel: &Kernel) -> Result<AgentResult, String> {
    let err = |e: aqueduct::Error| e.to_string();
    let args = kernel.kernargs().map_err(err)?;

    // (a) Round trips through the whole dispatch API, one signal reused.
    let queue = gpu.create_queue(BATCH_QUEUE).map_err(err)?;
    let done = Signal::new(system, 1).map_err(err)?;
    let round_trip = || -> Result<Duration, String> {
        done.store(1, StoreOrder::Relaxed);
        let started = Instant::now();
        kernel
            .dispatch(&queue, 1, 1, &args, Some(&done))
            .and_then(|mut d| d.wait(TIMEOUT))
            .map_err(err)?;
        let t = started.elapsed();
        match done.load(LoadOrder::Acquire) {
            0 => Ok(t),
            v => Err(format!("round trip: completion signal reads {v}, not 0")),
        }
    };
    for _ in 0..WARM_UP {
        round_trip()?;
    }
    let (round_trips, round_trip_total) = timed(|| {
        (0..ROUND_TRIPS)
            .map(|_| round_trip())
            .collect::<Result<Vec<_>, _>>()
    });
    let mut round_trips = round_trips?;
    round_trips.sort();

    // (a') The batch: every dispatch submitted, then one wait on the last.
    let signals = (0..BATCH)
        .map(|_| Signal::new(system, 1))
        .collect::<aqueduct::Result<Vec<_>>>()
        .map_err(err)?;
    let ((dispatches, batch_submit), batch_total) = timed(|| {
        let (dispatches, submit) = timed(|| {
            signals
                .iter()
                .map(|s| kernel.dispatch(&queue, 1, 1, &args, Some(s)))
                .collect::<aqueduct::Result<Vec<_>>>()
        });
        // Waiting on the last is enough: the processor is in order.
        let last = dispatches.and_then(|d| {
            queue.wait(&signals[BATCH - 1], SignalCondition::EQ, 0, TIMEOUT)?;
            Ok(d)
        });
        (last, submit)
    });
    for (i, mut d) in dispatches.map_err(err)?.into_iter().enumerate() {
        d.wait(Duration::ZERO)
            .map_err(|e| format!("batch dispatch {i} not complete after the last: {e}"))?;
    }
    drop(queue);

    // (b) Host-side packet cost, gated so only the host's work is timed.
    let kernarg_pool = system
        .agents()
        .map_err(err)?
        .into_iter()
        .filter(|a| !a.is_gpu())
        .find_map(|a| a.memory_pool(PoolKind::Kernarg).ok())
        .ok_or("no CPU agent with a kernarg pool")?;
    // `empty_kernel` reads no argument; the segment is there because the
    // code object declares one (hidden arguments), zero-filled.
    let segment = kernarg_pool
        .alloc_host::<u64>((kernel.kernarg_segment_size() as usize).div_ceil(8).max(1))
        .map_err(err)?;
    if !kernarg_pool.info().accessible_by_all {
        segment.allow_access(&[gpu]).map_err(err)?;
    }
    let queue = gpu.create_queue(SUBMIT_QUEUE).map_err(err)?;
    let completion = Signal::new(system, 0).map_err(err)?;
    let dispatch = KernelDispatch {
        kernel_object: kernel.object(),
        kernarg_address: segment.address(),
        private_segment_size: kernel.private_segment_size(),
        group_segment_size: kernel.group_segment_size(),
        completion_signal: completion.handle(),
        ..KernelDispatch::linear(0, 0, 1, 1)
    };
    let limits = *queue.limits();

    let (submit, drain) = gated(system, &queue, &completion, |q| {
        for _ in 0..SUBMIT_PACKETS {
            let prepared = dispatch.build(&limits).map_err(|e| e.to_string())?;
            q.submit(&prepared).map_err(err)?;
        }
        Ok(())
    })?;
    let (bulk, _) = gated(system, &queue, &completion, |q| {
        let prepared = dispatch.build(&limits).map_err(|e| e.to_string())?;
        for _ in 0..SUBMIT_PACKETS / BULK {
            let mut r = q
                .reserve(BULK, aqueduct::queue::DEFAULT_SPACE_TIMEOUT)
                .map_err(err)?;
            for _ in 0..BULK {
                r.emplace(&prepared).map_err(err)?;
            }
            r.commit();
        }
        Ok(())
    })?;

    // The body alone; black_box keeps the builder from being hoisted.
    let (built, build) = timed(|| {
        let mut headers = 0u64;
        for _ in 0..BUILDS {
            let p = std::hint::black_box(&dispatch).build(std::hint::black_box(&limits));
            headers += p.map_or(0, |p| {
                u64::from(std::hint::black_box(p).first_word() & 0xFF)
            });
        }
        headers
    });
    if built == 0 {
        return Err("the body builder refused the packet".into());
    }

    Ok(AgentResult {
        gfx: gpu.info().name.clone(),
        round_trips,
        round_trip_total,
        batch_submit,
        batch_total,
        submit,
        drain,
        bulk,
        build,
    })
}

/// Holds `queue`'s processor behind a barrier on a gate signal, times
/// `submit` (which must submit [`SUBMIT_PACKETS`] packets decrementing
/// `completion`), opens the gate and times the drain; checks every packet
/// completed.
fn gated(
    system: &System,
    queue: &Queue,
    completion: &Signal,
    submit: impl FnOnce(&Queue) -> Result<(), String>,
) -> Result<(Span, Duration), String> {
    let err = |e: aqueduct::Error| e.to_string();
    let gate = Signal::new(system, 1).map_err(err)?;
    completion.store(i64::from(SUBMIT_PACKETS), StoreOrder::Release);
    let barrier = packet::barrier(
        BarrierKind::And,
        &[gate.handle()],
        aqueduct_abi::hsa::SignalHandle::NULL,
        Ordering::SYSTEM,
    )
    .map_err(|e| e.to_string())?;
    let first = queue.submit_barrier(&barrier).map_err(err)?;
    let (submitted, span) = timed(|| submit(queue));
    // Open the gate even after a failure, so the queue can be destroyed.
    gate.store(0, StoreOrder::Release);
    submitted?;
    let started = Instant::now();
    let left = queue
        .wait(completion, SignalCondition::EQ, 0, TIMEOUT)
        .map_err(err)?;
    let drain = started.elapsed();
    if left != 0 {
        return Err(format!(
            "{left} of {SUBMIT_PACKETS} packets did not complete"
        ));
    }
    // The last packet's id, by one more reservation.
    let next = queue
        .reserve(1, Duration::from_secs(1))
        .map_err(err)?
        .first_id();
    if next != first + 1 + u64::from(SUBMIT_PACKETS) {
        return Err(format!(
            "submitted packets {}..{next}, expected {}",
            first + 1,
            SUBMIT_PACKETS
        ));
    }
    Ok((span, drain))
}

/// The results, and the target's verdict per agent.
pub fn format_report(library: &Path, results: &[AgentResult]) -> String {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let cpu_us = |s: &Span, n: usize| {
        s.cpu
            .map_or("-".into(), |c| format!("{:.2}", us(c) / n as f64))
    };
    let mut out = format!("runtime: {}\n\n", library.display());
    let _ = writeln!(
        out,
        "round trip of {KERNEL} (grid 1, workgroup 1): Kernel::dispatch + wait, {ROUND_TRIPS} times"
    );
    let _ = writeln!(
        out,
        "{:<7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "target", "mean µs", "med µs", "p99 µs", "min µs", "max µs", "host cpu µs"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<7} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>12}",
            r.gfx,
            us(r.round_trip_mean()),
            us(r.round_trip_percentile(0.5)),
            us(r.round_trip_percentile(0.99)),
            us(r.round_trips[0]),
            us(r.round_trips[r.round_trips.len() - 1]),
            cpu_us(&r.round_trip_total, ROUND_TRIPS),
        );
    }
    let _ = writeln!(
        out,
        "\nbatch: {BATCH} dispatches submitted, then one wait on the last"
    );
    let _ = writeln!(
        out,
        "{:<7} {:>13} {:>13} {:>12} {:>13}",
        "target", "submit µs/d", "host cpu µs/d", "total ms", "dispatches/s"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<7} {:>13.2} {:>13} {:>12.1} {:>13.0}",
            r.gfx,
            us(r.batch_submit.wall) / BATCH as f64,
            cpu_us(&r.batch_submit, BATCH),
            r.batch_total.wall.as_secs_f64() * 1e3,
            BATCH as f64 / r.batch_total.wall.as_secs_f64(),
        );
    }
    let _ = writeln!(
        out,
        "\nhost-side packet cost: {SUBMIT_PACKETS} packets into a ring of {SUBMIT_QUEUE}, processor held at a gate"
    );
    let _ = writeln!(
        out,
        "{:<7} {:>15} {:>12} {:>14} {:>12} {:>13} {:>11}",
        "target",
        "build+submit ns",
        "(wall ns)",
        "bulk/256 ns",
        "body ns",
        "drain pkt/s",
        "≤ 100 ns"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<7} {:>15.1} {:>12.1} {:>14.1} {:>12.1} {:>13.0} {:>11}",
            r.gfx,
            r.submit_ns(),
            per(r.submit.wall, SUBMIT_PACKETS as usize),
            per(r.bulk.judged(), SUBMIT_PACKETS as usize),
            per(r.build.judged(), BUILDS as usize),
            f64::from(SUBMIT_PACKETS) / r.drain.as_secs_f64(),
            if r.submit_target_met() {
                "met"
            } else {
                "MISSED"
            },
        );
    }
    let cpu = results.iter().all(|r| r.submit.cpu.is_some());
    let _ = writeln!(
        out,
        "ns per packet amortised, {} time of the submitting thread; build+submit = KernelDispatch::build + Queue::submit (reserve, body, header, doorbell) per packet; bulk = one reserve/commit per {BULK}; body = KernelDispatch::build alone ({BUILDS} times); drain = the packet processor running them once the gate opens",
        if cpu { "CPU" } else { "wall" }
    );
    let met = results.iter().all(AgentResult::submit_target_met);
    let _ = writeln!(
        out,
        "packet target (build + submit ≤ {SUBMIT_TARGET_NS} ns amortised): {}",
        if met { "met" } else { "MISSED" }
    );
    out
}
