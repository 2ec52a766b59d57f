//! Benchmarks of command buffers against their goals — host ns per
//! recorded dispatch ([`DISPATCH_GOAL_NS`]) and per fill or copy
//! ([`BLIT_GOAL_NS`]), device wave-instructions per issued command beyond a
//! constant per block ([`ISSUE_GOAL`]) — through the host shim on an HSA
//! runtime (the simulator's `libaqueduct_sim.so` unless told otherwise):
//!
//! ```text
//!   record      host ns per recorded command, amortised over RECORDED
//!               commands of one kind (a dispatch with 2 bound buffers,
//!               the same each time or other offsets each time, fill,
//!               copy): CommandBufferBuilder into kernarg memory
//!   issue       wave-instructions the device's cmd_block_issue executes
//!               per command for a block of ISSUED commands (simulator
//!               counts), grouped by kind and in recording order; for the
//!               goal's block also with 16 and 48 more waves of commands,
//!               whose differences give the marginal cost per command and
//!               the block's constant (the goal: at most ISSUE_GOAL per
//!               command plus a constant)
//!   round trips host calls that wait or submit for one block: one submit,
//!               one wait
//!   serial      a chain of CHAIN blocks of N commands (N - 1 dispatches
//!               and the branch to the next block), issued in parallel
//!               (the branch dispatches the block-issue kernel) and
//!               serially (the branch issues the block itself): dispatches
//!               and wave-instructions of the issue and branch kernels per
//!               block, for N = 1 ..= 6 — where the serial issue stops
//!               costing less, the threshold of `IssueMode::Auto`
//! ```
//!
//! The goal's block is 1,000 dispatches of the test kernels' `sum3_f32`,
//! whose four pointers are bound through the binding table, so each
//! dispatch's issue resolves and patches four bindings. A block of the
//! device library's `saxpy_f32` (two bindings) is counted too, and the
//! mixed block adds `fill_u32` dispatches (one binding) and blit fills.
//!
//! Every block also runs and its output is checked, so a broken issue
//! cannot pass for a cheap one.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use aqueduct::command_buffer::{BindingTableEntry, BufferRef};
use aqueduct::{CommandBufferBuilder, CommandQueue, IssueMode, PoolKind, System, Workgroups};

/// Commands recorded per kind for the host cost.
pub const RECORDED: u32 = 10_000;
/// Runs of RECORDED commands per kind, the kinds taking turns; the
/// fastest is reported (a run takes under a millisecond, so a stall of the
/// shared machine spoils only some of them).
pub const RECORD_RUNS: u32 = 30;
/// Commands in the block whose issue is counted.
pub const ISSUED: u32 = 1_000;
/// The goals: host ns per dispatch and per fill/copy recorded,
/// device wave-instructions per command of the goal's block, amortised:
/// the marginal cost of more commands, beside a constant for the block.
pub const DISPATCH_GOAL_NS: f64 = 50.0;
pub const BLIT_GOAL_NS: f64 = 20.0;
pub const ISSUE_GOAL: f64 = 2.0;

const TIMEOUT: Duration = Duration::from_secs(600);

/// One agent's figures.
pub struct AgentResult {
    pub gfx: String,
    /// (kind, ns per command, best of runs).
    pub record: Vec<(&'static str, f64)>,
    /// (order, commands, waves, wave-instructions) of the block issue.
    pub issue: Vec<(&'static str, u32, u64, u64)>,
    /// (commands, wave-instructions) of the goal's block at larger sizes:
    /// with the first row, the marginal cost per command and the
    /// block's constant.
    pub issue_larger: Vec<(u32, u64)>,
    /// Host submits and waits for one block.
    pub round_trips: (u32, u32),
    /// Per block of a chain of N-command blocks, issued in parallel and
    /// serially.
    pub serial: Vec<SerialRow>,
}

/// (N, parallel, serial): dispatches and wave-instructions of the issue
/// and branch kernels per block.
pub type SerialRow = (u32, (f64, f64), (f64, f64));

/// Blocks in the chain of the serial-issue comparison.
pub const CHAIN: u32 = 8;

/// The kernels whose work the issue of a branched block costs.
const ISSUE_KERNELS: [&str; 3] = ["cmd_block_issue", "cmd_block_issue_serial", "cmd_branch"];

/// Runs the benchmarks on every GPU agent of the runtime at `library`;
/// `code_object(gfx, package)` gives an agent's code object of a device
/// package (the device library, the test kernels).
pub fn run(
    library: &Path,
    mut code_object: impl FnMut(&str, &str) -> Result<Vec<u8>, String>,
) -> Result<Vec<AgentResult>, String> {
    let err = |e: aqueduct::Error| e.to_string();
    let (system, host) = open_simulator(library, "the issue cost")?;
    let mut out = Vec::new();
    for gpu in system.gpus().map_err(err)? {
        let gfx = gpu.info().name.clone();
        let bytes = code_object(&gfx, "aqueduct-device")?;
        let lib = gpu.load_code_object(&bytes).map_err(err)?;
        let fill_u32 = lib.kernel("fill_u32").map_err(err)?;
        let saxpy = lib.kernel("saxpy_f32").map_err(err)?;
        let test_kernels = gpu
            .load_code_object(&code_object(&gfx, "aqueduct-test-kernels")?)
            .map_err(err)?;
        let sum3 = test_kernels.kernel("sum3_f32").map_err(err)?;
        let queue = gpu.create_queue(4096).map_err(err)?;
        let mut cq = CommandQueue::new(&queue, &lib, 1 << 22).map_err(err)?;
        // saxpy over 16 floats at byte `at` of x (binding 1) and y
        // (binding 0), with factor `a`.
        let saxpy_args = |a: f32, at: u64| -> Result<aqueduct::Kernargs, String> {
            let mut args = saxpy.kernargs().map_err(err)?;
            args.set(0, 16u64).map_err(err)?;
            args.set(1, a).map_err(err)?;
            args.bind(2, BufferRef::binding(1, at, 64)).map_err(err)?;
            args.bind(3, BufferRef::binding(0, at, 64)).map_err(err)?;
            Ok(args)
        };

        // Host cost per recorded command, the best of RECORD_RUNS: the
        // least a run took is the recording's cost on this shared machine.
        // The kinds take turns, run after run, so that a noisy stretch of
        // the machine (they last seconds) spoils some runs of every kind
        // rather than all runs of one.
        const KINDS: [&str; 4] = ["dispatch", "dispatch, other bindings", "fill", "copy"];
        let mut best = [f64::INFINITY; KINDS.len()];
        // A dispatch with other bindings each time (64 argument sets in
        // turn) shares no patch list with the one before.
        let various = (0..64u64)
            .map(|k| saxpy_args(2.0, 16 * k))
            .collect::<Result<Vec<_>, _>>()?;
        let args = saxpy_args(2.0, 0)?;
        for _ in 0..RECORD_RUNS {
            for (kind, best) in KINDS.iter().zip(&mut best) {
                let mut b = CommandBufferBuilder::new(&queue, RECORDED + 1).map_err(err)?;
                let started = Instant::now();
                for k in 0..u64::from(RECORDED) {
                    match *kind {
                        "dispatch" => {
                            b.dispatch(&saxpy, Workgroups::linear(1, 64), &args)
                                .map_err(err)?;
                        }
                        "dispatch, other bindings" => {
                            b.dispatch(
                                &saxpy,
                                Workgroups::linear(1, 64),
                                &various[k as usize % 64],
                            )
                            .map_err(err)?;
                        }
                        "fill" => {
                            b.fill(BufferRef::binding(0, 16 * (k % 64), 16), &[1, 2, 3, 4])
                                .map_err(err)?;
                        }
                        _ => {
                            b.copy(BufferRef::binding(1, 0, 16), BufferRef::binding(0, 16, 16))
                                .map_err(err)?;
                        }
                    }
                }
                let ns = started.elapsed().as_secs_f64() * 1e9 / f64::from(RECORDED);
                *best = best.min(ns);
            }
        }
        let record: Vec<_> = KINDS.into_iter().zip(best).collect();

        // Device issue cost: a block of dispatches, and a mixed block
        // grouped by kind and in recording order.
        let mut issue = Vec::new();
        let n = 64usize * 16;
        let mut x = host.alloc_host::<f32>(n).map_err(err)?;
        let mut y = host.alloc_host::<f32>(n).map_err(err)?;
        let mut b2 = host.alloc_host::<f32>(n).map_err(err)?;
        let mut b3 = host.alloc_host::<f32>(n).map_err(err)?;
        b2.fill(2.0);
        b3.fill(4.0);
        // The goal's block again with 16 and 48 more waves' worth of
        // commands (the cost grows by whole waves: the partial last wave,
        // with the block's RETURN, stays the same): the differences are
        // the marginal cost per command, the rest the block's constant.
        let mut larger = Vec::new();
        for (block, sorted, count) in [
            ("sum3", true, ISSUED),
            ("sum3", true, ISSUED + 16 * 64),
            ("sum3", true, ISSUED + 48 * 64),
            ("saxpy", true, ISSUED),
            ("mixed", true, ISSUED),
            ("mixed", false, ISSUED),
        ] {
            x.fill(1.0);
            // The sum3 block overwrites what it touches: poisoned first.
            let start = if block == "sum3" { -1.0 } else { 0.0 };
            y.fill(start);
            let mut b = CommandBufferBuilder::new(&queue, count).map_err(err)?;
            b.set_sort_by_kind(sorted);
            let mut want = vec![start; n];
            for k in 0..u64::from(count - 1) {
                let at = 64 * (k % 16);
                let kind = match block {
                    "sum3" => 3,
                    "saxpy" => 0,
                    _ => k % 3,
                };
                match kind {
                    0 => {
                        let args = saxpy_args(1.0, at)?;
                        b.set_ordering(aqueduct::command_buffer::Ordering::AGENT.with_barrier());
                        b.dispatch(&saxpy, Workgroups::linear(1, 64), &args)
                            .map_err(err)?;
                        for v in &mut want[at as usize / 4..at as usize / 4 + 16] {
                            *v += 1.0;
                        }
                    }
                    1 => {
                        let mut args = fill_u32.kernargs().map_err(err)?;
                        args.bind(0, BufferRef::binding(2, 0, 64)).map_err(err)?;
                        args.set(1, 16u64).map_err(err)?;
                        args.set(2, 7u32).map_err(err)?;
                        b.dispatch(&fill_u32, Workgroups::linear(1, 64), &args)
                            .map_err(err)?;
                    }
                    2 => {
                        b.fill(BufferRef::binding(2, 64, 64), &[9]).map_err(err)?;
                    }
                    _ => {
                        // out (y) = x + b2 + b3 over 16 floats at `at`.
                        let mut args = sum3.kernargs().map_err(err)?;
                        args.set(0, 16u64).map_err(err)?;
                        args.bind(1, BufferRef::binding(1, at, 64)).map_err(err)?;
                        args.bind(2, BufferRef::binding(3, at, 64)).map_err(err)?;
                        args.bind(3, BufferRef::binding(4, at, 64)).map_err(err)?;
                        args.bind(4, BufferRef::binding(0, at, 64)).map_err(err)?;
                        b.set_ordering(aqueduct::command_buffer::Ordering::AGENT.with_barrier());
                        b.dispatch(&sum3, Workgroups::linear(1, 64), &args)
                            .map_err(err)?;
                        want[at as usize / 4..at as usize / 4 + 16].fill(1.0 + 2.0 + 4.0);
                    }
                }
            }
            let buffer = b.finish().map_err(err)?;
            let scratch = host.alloc_host::<u8>(256).map_err(err)?;
            let whole = |a: u64| BindingTableEntry {
                address: a,
                length: (4 * n) as u64,
            };
            let table = [
                whole(y.address()),
                whole(x.address()),
                BindingTableEntry {
                    address: scratch.address(),
                    length: 256,
                },
                whole(b2.address()),
                whole(b3.address()),
            ];
            let before = kernel_counts(&system, &["cmd_block_issue"]);
            cq.submit(&buffer, &table)
                .map_err(err)?
                .wait(TIMEOUT)
                .map_err(err)?;
            let after = kernel_counts(&system, &["cmd_block_issue"]);
            if y[..] != want[..] {
                return Err(format!("{gfx}: {block} block: wrong results"));
            }
            if count != ISSUED {
                larger.push((count, after.2 - before.2));
                continue;
            }
            let label: &'static str = match (block, sorted) {
                ("sum3", _) => "dispatches (sum3_f32, 4 bindings each): the goal",
                ("saxpy", _) => "dispatches (saxpy_f32, 2 bindings each)",
                (_, true) => "mixed (saxpy, fill_u32, fill), grouped by kind",
                _ => "mixed (saxpy, fill_u32, fill), in recording order",
            };
            issue.push((label, ISSUED, after.1 - before.1, after.2 - before.2));
        }
        // Serial against parallel issue of branched blocks.
        let mut serial = Vec::new();
        for n in 1..=6u32 {
            let mut per_mode = [(0.0, 0.0); 2];
            for (m, mode) in [IssueMode::Parallel, IssueMode::Serial]
                .into_iter()
                .enumerate()
            {
                x.fill(1.0);
                y.fill(0.0);
                let mut b = CommandBufferBuilder::new(&queue, n).map_err(err)?;
                for _ in 1..CHAIN {
                    b.add_block().map_err(err)?;
                }
                for k in 0..CHAIN {
                    b.select_block(k).map_err(err)?;
                    for _ in 1..n {
                        let args = saxpy_args(1.0, 0)?;
                        b.set_ordering(aqueduct::command_buffer::Ordering::AGENT.with_barrier());
                        b.dispatch(&saxpy, Workgroups::linear(1, 64), &args)
                            .map_err(err)?;
                    }
                    if k + 1 < CHAIN {
                        b.branch(k + 1).map_err(err)?;
                    } else {
                        b.ret().map_err(err)?;
                    }
                }
                let buffer = b.finish().map_err(err)?;
                let table = [
                    BindingTableEntry {
                        address: y.address(),
                        length: 64,
                    },
                    BindingTableEntry {
                        address: x.address(),
                        length: 64,
                    },
                ];
                cq.set_issue_mode(mode);
                let before = kernel_counts(&system, &ISSUE_KERNELS);
                cq.submit(&buffer, &table)
                    .map_err(err)?
                    .wait(TIMEOUT)
                    .map_err(err)?;
                let after = kernel_counts(&system, &ISSUE_KERNELS);
                let want = (CHAIN * (n - 1)) as f32;
                if y[..16].iter().any(|&v| v != want) {
                    return Err(format!(
                        "{gfx}: {mode:?} chain of {n}-command blocks: wrong results"
                    ));
                }
                let blocks = f64::from(CHAIN);
                per_mode[m] = (
                    (after.0 - before.0) as f64 / blocks,
                    (after.2 - before.2) as f64 / blocks,
                );
            }
            serial.push((n, per_mode[0], per_mode[1]));
        }
        cq.set_issue_mode(IssueMode::Auto);
        out.push(AgentResult {
            gfx,
            record,
            issue,
            issue_larger: larger,
            round_trips: (1, 1),
            serial,
        });
    }
    Ok(out)
}

/// The runtime at `library`, which must be the simulator (it counts
/// `what`), and its host's fine-grained pool.
pub(crate) fn open_simulator(
    library: &Path,
    what: &str,
) -> Result<(System, aqueduct::MemoryPool), String> {
    let err = |e: aqueduct::Error| e.to_string();
    let system = System::open(&aqueduct::LoadOptions::library(library))
        .map_err(|e| format!("cannot open {}: {e}", library.display()))?;
    if system.runtime().simulator_kernel_stats().is_none() {
        return Err(format!(
            "{} reports no executed instructions (not the simulator): {what} is counted there",
            library.display()
        ));
    }
    let host = system
        .agents()
        .map_err(err)?
        .into_iter()
        .find(|a| !a.is_gpu())
        .ok_or("no CPU agent")?
        .memory_pool(PoolKind::FineGrained)
        .map_err(err)?;
    Ok((system, host))
}

/// Dispatches, waves and wave-instructions of the kernels `names` so far.
pub(crate) fn kernel_counts(system: &System, names: &[&str]) -> (u64, u64, u64) {
    system
        .runtime()
        .simulator_kernel_stats()
        .unwrap_or_default()
        .iter()
        .filter(|s| names.contains(&s.name.as_str()))
        .fold((0, 0, 0), |(d, w, i), s| {
            (d + s.dispatches, w + s.waves, i + s.instructions)
        })
}

/// The largest N up to which the serial issue executes no more
/// wave-instructions than the parallel one (0 when it always executes
/// more).
pub fn serial_threshold(rows: &[SerialRow]) -> u32 {
    rows.iter()
        .take_while(|(_, (_, parallel), (_, serial))| serial <= parallel)
        .last()
        .map_or(0, |&(n, ..)| n)
}

/// The report.
pub fn format_report(library: &Path, results: &[AgentResult]) -> String {
    let mut out = format!("runtime: {}\n", library.display());
    for r in results {
        let _ = writeln!(out, "\n{}", r.gfx);
        let _ = writeln!(
            out,
            "  host cost per recorded command ({RECORDED} of a kind, best of {RECORD_RUNS}):"
        );
        for (kind, ns) in &r.record {
            let goal = if kind.starts_with("dispatch") {
                DISPATCH_GOAL_NS
            } else {
                BLIT_GOAL_NS
            };
            let verdict = if *ns <= goal { "met" } else { "MISSED" };
            let _ = writeln!(
                out,
                "    {kind:<24} {ns:8.1} ns   goal ≤ {goal} ns: {verdict}"
            );
        }
        let _ = writeln!(
            out,
            "  device issue (cmd_block_issue, simulator counts), per command of a {ISSUED}-command block:"
        );
        for (label, commands, waves, instructions) in &r.issue {
            let per = *instructions as f64 / f64::from(*commands);
            let _ = writeln!(
                out,
                "    {label:<52} {waves:4} waves {instructions:8} wave-insts  {per:6.2} per command"
            );
        }
        if let Some(&(_, commands, _, instructions)) = r.issue.first() {
            // Each larger block against the one before: the marginal cost.
            let mut worst = 0.0f64;
            let mut previous = (commands, instructions);
            for &(more, more_instructions) in &r.issue_larger {
                let per = (more_instructions as f64 - previous.1 as f64)
                    / (f64::from(more) - f64::from(previous.0));
                let constant = more_instructions as f64 - per * f64::from(more);
                worst = worst.max(per);
                let _ = writeln!(
                    out,
                    "    the goal's block at {more} commands: {more_instructions} wave-insts; from {} commands, {per:.2} per command more, plus {constant:.0} for the block",
                    previous.0
                );
                previous = (more, more_instructions);
            }
            let verdict = if worst <= ISSUE_GOAL { "met" } else { "MISSED" };
            let _ = writeln!(
                out,
                "    goal ≤ {ISSUE_GOAL} wave-insts per command plus a constant for the block (the larger marginal, {worst:.2}): {verdict}"
            );
        }
        let (submits, waits) = r.round_trips;
        let _ = writeln!(
            out,
            "  host round trips for one block: {submits} submit, {waits} wait"
        );
        let _ = writeln!(
            out,
            "  branched blocks of N commands, per block (issue and branch kernels: dispatches, wave-insts):"
        );
        for (n, (pd, pi), (sd, si)) in &r.serial {
            let cheaper = if si <= pi { "serial" } else { "parallel" };
            let _ = writeln!(
                out,
                "    N = {n}: parallel {pd:4.1} dispatches {pi:7.0} wave-insts, serial {sd:4.1} dispatches {si:7.0} wave-insts: {cheaper} executes less"
            );
        }
        let measured = serial_threshold(&r.serial);
        let verdict = if measured == aqueduct::command_buffer::SERIAL_THRESHOLD {
            "as SERIAL_THRESHOLD says".to_string()
        } else {
            format!(
                "SERIAL_THRESHOLD says {}: update it",
                aqueduct::command_buffer::SERIAL_THRESHOLD
            )
        };
        let _ = writeln!(
            out,
            "  serial issue threshold (largest N whose serial issue executes no more): {measured}, {verdict}"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::serial_threshold;

    #[test]
    fn the_threshold_is_the_last_size_before_serial_costs_more() {
        let row = |n, parallel, serial| (n, (2.0, parallel), (1.0, serial));
        assert_eq!(serial_threshold(&[row(1, 600.0, 1100.0)]), 0);
        assert_eq!(
            serial_threshold(&[
                row(1, 600.0, 500.0),
                row(2, 700.0, 700.0),
                row(3, 700.0, 900.0)
            ]),
            2
        );
        assert_eq!(serial_threshold(&[]), 0);
    }
}
