//! Benchmarks of the device scheduler against its goals — a chain of N
//! dependent entries in at most N + 1 ticks, N entries released together in
//! at most N/8 + 2 ([`tick_goal`]) — through the host shim on an HSA runtime
//! (the simulator's `libaqueduct_sim.so` unless told otherwise):
//!
//! ```text
//!   chain     N entries, each a one-copy command buffer that waits for the
//!             semaphore value the one before signals, submitted as one
//!             batch: scheduler ticks run (goal ≤ N + 1), host calls (N
//!             entries written, 1 tick request, 1 wait)
//!   together  N entries that all wait for one value the host signals once
//!             they are submitted: ticks (goal ≤ N/8 + 2)
//!   tick      wave-instructions per tick (simulator counts of sched_tick)
//!   submit    host ns per submitted entry (DeviceQueue::execute), best of
//!             three bursts
//! ```
//!
//! Every run's copies are checked (a chain of links that only ends up all
//! equal if every entry ran after the one before), so a broken scheduler
//! cannot pass for a fast one.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use aqueduct::command_buffer::{BindingTableEntry, BufferRef};
use aqueduct::scheduler::PhysicalDeviceOptions;
use aqueduct::{CommandBufferBuilder, PhysicalDevice};

use crate::cmdbuf_bench::{kernel_counts, open_simulator};

/// Entries per chain and per "together" burst.
pub const SIZES: [u64; 3] = [10, 100, 1000];

const TIMEOUT: Duration = Duration::from_secs(600);
const LINK: u64 = 16;

/// One measurement.
pub struct Row {
    pub case: &'static str,
    pub n: u64,
    pub ticks: u64,
    /// Host calls that reach the device: tick requests and signals, waits.
    pub calls: (u64, u64),
    /// Wave-instructions of sched_tick per tick.
    pub per_tick: f64,
    /// Host ns per submit.
    pub submit_ns: f64,
}

/// One agent's figures.
pub struct AgentResult {
    pub gfx: String,
    pub rows: Vec<Row>,
}

/// Runs the benchmarks on every GPU agent of the runtime at `library`.
pub fn run(
    library: &Path,
    mut device_library: impl FnMut(&str) -> Result<Vec<u8>, String>,
) -> Result<Vec<AgentResult>, String> {
    let err = |e: aqueduct::Error| e.to_string();
    let (system, host) = open_simulator(library, "a tick's cost")?;
    let mut out = Vec::new();
    for gpu in system.gpus().map_err(err)? {
        let gfx = gpu.info().name.clone();
        let lib = gpu.load_code_object(&device_library(&gfx)?).map_err(err)?;
        let device =
            PhysicalDevice::new(&gpu, &lib, PhysicalDeviceOptions::default()).map_err(err)?;
        let queue = device.queue();
        let rq = gpu.create_queue(64).map_err(err)?;
        let mut b = CommandBufferBuilder::new(&rq, 2).map_err(err)?;
        b.copy(
            BufferRef::binding(0, 0, LINK),
            BufferRef::binding(1, 0, LINK),
        )
        .map_err(err)?;
        let copy = b.finish().map_err(err)?;
        let mut rows = Vec::new();
        for case in ["chain", "together"] {
            for n in SIZES {
                let mut best_ns = f64::INFINITY;
                let mut row = None;
                for _ in 0..3 {
                    let mut links = host
                        .alloc_host::<u8>((LINK * (n + 1)) as usize)
                        .map_err(err)?;
                    links.fill(0xA5);
                    for (k, x) in links[..LINK as usize].iter_mut().enumerate() {
                        *x = k as u8 ^ 0x3C;
                    }
                    let sem = device.semaphore(0).map_err(err)?;
                    let done = device.semaphore(0).map_err(err)?;
                    let before = device.stats();
                    let (_, _, before_insts) = kernel_counts(&system, &["sched_tick"]);
                    let started = Instant::now();
                    let mut batch = queue.batch();
                    for k in 0..n {
                        // A chain links k to k + 1; together, every entry
                        // copies link 0 to its own.
                        let (from, to) = if case == "chain" {
                            (k, k + 1)
                        } else {
                            (0, k + 1)
                        };
                        let table = [
                            BindingTableEntry {
                                address: links.address() + LINK * from,
                                length: LINK,
                            },
                            BindingTableEntry {
                                address: links.address() + LINK * to,
                                length: LINK,
                            },
                        ];
                        let (wait, signal) = if case == "chain" {
                            ((&sem, k), (&sem, k + 1))
                        } else {
                            ((&sem, 1), (&done, k + 1))
                        };
                        let waits = if k == 0 && case == "chain" {
                            &[][..]
                        } else {
                            std::slice::from_ref(&wait)
                        };
                        batch
                            .execute(waits, &copy, &table, &[signal])
                            .map_err(err)?;
                    }
                    batch.submit().map_err(err)?;
                    let ns = started.elapsed().as_secs_f64() * 1e9 / n as f64;
                    best_ns = best_ns.min(ns);
                    let last = if case == "chain" {
                        &sem
                    } else {
                        sem.signal(1).map_err(err)?;
                        &done
                    };
                    // Together, the entries signal `done` in any order: the
                    // wait is for all of them through the chain of links
                    // instead (each checked below).
                    let target = if case == "chain" { n } else { 1 };
                    last.wait(target, TIMEOUT).map_err(err)?;
                    if case == "together" {
                        // Wait for every entry: the scheduler's count.
                        let deadline = Instant::now() + TIMEOUT;
                        while links
                            .chunks(LINK as usize)
                            .any(|l| l != &links[..LINK as usize])
                        {
                            if Instant::now() > deadline {
                                return Err(format!("{gfx}: {case} {n}: copies missing"));
                            }
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    for (k, l) in links.chunks(LINK as usize).enumerate() {
                        if l != &links[..LINK as usize] {
                            return Err(format!("{gfx}: {case} of {n}: link {k} wrong"));
                        }
                    }
                    // Let a tick that is still to run finish before
                    // counting.
                    std::thread::sleep(Duration::from_millis(20));
                    let after = device.stats();
                    let (_, _, insts) = kernel_counts(&system, &["sched_tick"]);
                    let ticks = after.ticks - before.ticks;
                    row = Some(Row {
                        case,
                        n,
                        ticks,
                        // The batch's one request, and the host's signal.
                        calls: (1 + u64::from(case == "together"), 1),
                        per_tick: (insts - before_insts) as f64 / ticks.max(1) as f64,
                        submit_ns: 0.0,
                    });
                }
                if let Some(mut r) = row {
                    r.submit_ns = best_ns;
                    rows.push(r);
                }
            }
        }
        out.push(AgentResult { gfx, rows });
    }
    Ok(out)
}

/// The goal for the ticks of `case` with `n` entries: a chain of `n`
/// dependent entries in at most `n + 1` ticks, `n` entries released
/// together in at most `n / 8 + 2`.
pub fn tick_goal(case: &str, n: u64) -> u64 {
    if case == "chain" { n + 1 } else { n / 8 + 2 }
}

/// The report: one table per agent, with the goals.
pub fn format_report(library: &Path, results: &[AgentResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "device scheduler on {}", library.display());
    for r in results {
        let _ = writeln!(s, "\n{}:", r.gfx);
        let _ = writeln!(
            s,
            "  {:<9} {:>6} {:>7} {:>8} {:>14} {:>12} {:>14}",
            "case", "N", "ticks", "goal", "round trips", "insts/tick", "submit ns/entry"
        );
        for row in &r.rows {
            let goal = tick_goal(row.case, row.n);
            let _ = writeln!(
                s,
                "  {:<9} {:>6} {:>7} {:>8} {:>14} {:>12.0} {:>14.0}",
                row.case,
                row.n,
                row.ticks,
                format!("<= {goal}"),
                format!("{} in + {} wait", row.calls.0, row.calls.1),
                row.per_tick,
                row.submit_ns
            );
        }
    }
    s
}
