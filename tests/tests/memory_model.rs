//! The device library's scoped atomics compile to the code sequences of
//! LLVM's AMDGPU memory model, for every default target.
//!
//! The probe kernels of `tests/probes` each perform one atomic operation
//! (load, store, fetch_add, compare_exchange, fence) at one scope and
//! ordering, through `aqueduct_device::atomic`. This test disassembles the
//! built code objects with the toolchain's llvm-objdump, reduces each
//! kernel to the instructions that carry the memory model (the atomic
//! access with its cache-policy bits, cache write-backs and invalidations,
//! and waits on vector memory), and compares them with tables transcribed
//! from the LLVM AMDGPU guide (`llvm/docs/AMDGPUUsage.rst`, sections
//! "Memory Model GFX90A", "Memory Model GFX942" (which gfx950 follows: its
//! feature set includes gfx942's), "Memory Model GFX10-GFX11" and "Memory
//! Model GFX12"), for the global address space, default modes (no
//! threadgroup split; WGP mode on gfx11/gfx12).
//!
//! Reduction, applied alike to the disassembly and the table:
//!
//! - `W` is any wait on vector-memory counters (`s_waitcnt vmcnt`,
//!   `s_waitcnt_vscnt`, gfx12's `s_wait_loadcnt`/`storecnt`/...). Waits on
//!   LDS and scalar loads alone (`lgkmcnt`, `dscnt`, `kmcnt`) are dropped:
//!   the probes' kernel-argument loads make them. LLVM inserts the memory
//!   model's waits as "soft" waits that the wait-count pass removes when
//!   nothing is outstanding, so leading and trailing `W`s (before the
//!   first and after the last memory-model instruction) are trimmed; a
//!   `W` between two of them (after a write-back, after an acquire access)
//!   always waits for something and must be there.
//! - The access is `load`, `store` or `rmw` with its scope bits; the bit
//!   that only asks an RMW to return the old value (`glc` on gfx90a and
//!   gfx11, `sc0` on gfx942, `th:TH_ATOMIC_RETURN` on gfx12) is dropped.
//! - The probes' own plain store of the result, the last store of every
//!   kernel except the store probes, is dropped.

use std::collections::BTreeMap;

use aqueduct_tests::{built_code_objects, run_llvm_tool};

const SCOPES: [&str; 5] = ["workitem", "wavefront", "workgroup", "agent", "system"];

/// One row of a memory-model table: the operation and ordering, then the
/// sequence for singlethread/wavefront, workgroup, agent and system scope.
type Row = (&'static str, [&'static str; 4]);

/// "Memory Model GFX90A", global, tgsplit off.
const GFX90A: &[Row] = &[
    ("load relaxed", ["load", "load", "load glc", "load glc"]),
    (
        "load acquire",
        [
            "load",
            "load",
            "load glc; W; buffer_wbinvl1_vol",
            "load glc; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    (
        "load seq_cst",
        [
            "load",
            "W; load",
            "W; load glc; W; buffer_wbinvl1_vol",
            "W; load glc; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    ("store relaxed", ["store", "store", "store", "store"]),
    (
        "store release",
        ["store", "store", "W; store", "buffer_wbl2; W; store"],
    ),
    (
        "store seq_cst",
        ["store", "store", "W; store", "buffer_wbl2; W; store"],
    ),
    ("rmw relaxed", ["rmw", "rmw", "rmw", "rmw"]),
    (
        "rmw acquire",
        [
            "rmw",
            "rmw",
            "rmw; W; buffer_wbinvl1_vol",
            "rmw; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    (
        "rmw release",
        ["rmw", "rmw", "W; rmw", "buffer_wbl2; W; rmw"],
    ),
    (
        "rmw acq_rel",
        [
            "rmw",
            "rmw",
            "W; rmw; W; buffer_wbinvl1_vol",
            "buffer_wbl2; W; rmw; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    (
        "rmw seq_cst",
        [
            "rmw",
            "rmw",
            "W; rmw; W; buffer_wbinvl1_vol",
            "buffer_wbl2; W; rmw; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    (
        "fence acquire",
        [
            "",
            "",
            "W; buffer_wbinvl1_vol",
            "W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    ("fence release", ["", "", "W", "buffer_wbl2; W"]),
    (
        "fence acq_rel",
        [
            "",
            "",
            "W; buffer_wbinvl1_vol",
            "buffer_wbl2; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
    (
        "fence seq_cst",
        [
            "",
            "",
            "W; buffer_wbinvl1_vol",
            "buffer_wbl2; W; buffer_invl2; buffer_wbinvl1_vol",
        ],
    ),
];

/// "Memory Model GFX942" (gfx942 and gfx950), global, tgsplit off.
const GFX942: &[Row] = &[
    (
        "load relaxed",
        ["load", "load sc0", "load sc1", "load sc0 sc1"],
    ),
    (
        "load acquire",
        [
            "load",
            "load sc0",
            "load sc1; W; buffer_inv sc1",
            "load sc0 sc1; W; buffer_inv sc0 sc1",
        ],
    ),
    (
        "load seq_cst",
        [
            "load",
            "W; load sc0",
            "W; load sc1; W; buffer_inv sc1",
            "W; load sc0 sc1; W; buffer_inv sc0 sc1",
        ],
    ),
    (
        "store relaxed",
        ["store", "store sc0", "store sc1", "store sc0 sc1"],
    ),
    (
        "store release",
        [
            "store",
            "W; store sc0",
            "buffer_wbl2 sc1; W; store sc1",
            "buffer_wbl2 sc0 sc1; W; store sc0 sc1",
        ],
    ),
    (
        "store seq_cst",
        [
            "store",
            "W; store sc0",
            "buffer_wbl2 sc1; W; store sc1",
            "buffer_wbl2 sc0 sc1; W; store sc0 sc1",
        ],
    ),
    ("rmw relaxed", ["rmw", "rmw", "rmw", "rmw sc1"]),
    (
        "rmw acquire",
        [
            "rmw",
            "rmw",
            "rmw; W; buffer_inv sc1",
            "rmw sc1; W; buffer_inv sc0 sc1",
        ],
    ),
    (
        "rmw release",
        [
            "rmw",
            "W; rmw",
            "buffer_wbl2 sc1; W; rmw",
            "buffer_wbl2 sc0 sc1; W; rmw sc1",
        ],
    ),
    (
        "rmw acq_rel",
        [
            "rmw",
            "W; rmw",
            "buffer_wbl2 sc1; W; rmw; W; buffer_inv sc1",
            "buffer_wbl2 sc0 sc1; W; rmw sc1; W; buffer_inv sc0 sc1",
        ],
    ),
    (
        "rmw seq_cst",
        [
            "rmw",
            "W; rmw",
            "buffer_wbl2 sc1; W; rmw; W; buffer_inv sc1",
            "buffer_wbl2 sc0 sc1; W; rmw sc1; W; buffer_inv sc0 sc1",
        ],
    ),
    (
        "fence acquire",
        ["", "", "W; buffer_inv sc1", "W; buffer_inv sc0 sc1"],
    ),
    (
        "fence release",
        ["", "", "buffer_wbl2 sc1; W", "buffer_wbl2 sc0 sc1; W"],
    ),
    (
        "fence acq_rel",
        [
            "",
            "",
            "buffer_wbl2 sc1; W; buffer_inv sc1",
            "buffer_wbl2 sc0 sc1; W; buffer_inv sc0 sc1",
        ],
    ),
    (
        "fence seq_cst",
        [
            "",
            "",
            "buffer_wbl2 sc1; W; buffer_inv sc1",
            "buffer_wbl2 sc0 sc1; W; buffer_inv sc0 sc1",
        ],
    ),
];

/// "Memory Model GFX10-GFX11" (gfx1100), global, WGP mode. Agent and
/// system are the same on gfx11.
const GFX11: &[Row] = &[
    ("load relaxed", ["load", "load glc", "load glc", "load glc"]),
    (
        "load acquire",
        [
            "load",
            "load glc; W; buffer_gl0_inv",
            "load glc; W; buffer_gl1_inv; buffer_gl0_inv",
            "load glc; W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    (
        "load seq_cst",
        [
            "load",
            "W; load glc; W; buffer_gl0_inv",
            "W; load glc; W; buffer_gl1_inv; buffer_gl0_inv",
            "W; load glc; W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    ("store relaxed", ["store", "store", "store", "store"]),
    (
        "store release",
        ["store", "W; store", "W; store", "W; store"],
    ),
    (
        "store seq_cst",
        ["store", "W; store", "W; store", "W; store"],
    ),
    ("rmw relaxed", ["rmw", "rmw", "rmw", "rmw"]),
    (
        "rmw acquire",
        [
            "rmw",
            "rmw; W; buffer_gl0_inv",
            "rmw; W; buffer_gl1_inv; buffer_gl0_inv",
            "rmw; W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    ("rmw release", ["rmw", "W; rmw", "W; rmw", "W; rmw"]),
    (
        "rmw acq_rel",
        [
            "rmw",
            "W; rmw; W; buffer_gl0_inv",
            "W; rmw; W; buffer_gl1_inv; buffer_gl0_inv",
            "W; rmw; W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    (
        "rmw seq_cst",
        [
            "rmw",
            "W; rmw; W; buffer_gl0_inv",
            "W; rmw; W; buffer_gl1_inv; buffer_gl0_inv",
            "W; rmw; W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    (
        "fence acquire",
        [
            "",
            "W; buffer_gl0_inv",
            "W; buffer_gl1_inv; buffer_gl0_inv",
            "W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    ("fence release", ["", "W", "W", "W"]),
    (
        "fence acq_rel",
        [
            "",
            "W; buffer_gl0_inv",
            "W; buffer_gl1_inv; buffer_gl0_inv",
            "W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
    (
        "fence seq_cst",
        [
            "",
            "W; buffer_gl0_inv",
            "W; buffer_gl1_inv; buffer_gl0_inv",
            "W; buffer_gl1_inv; buffer_gl0_inv",
        ],
    ),
];

/// "Memory Model GFX12" (gfx1201), global, WGP mode. The scope operand is
/// SCOPE_SE at workgroup scope, SCOPE_DEV at agent and SCOPE_SYS at system;
/// only system-scope releases write back (`global_wb`) on GFX12.0.
const GFX12: &[Row] = &[
    (
        "load relaxed",
        [
            "load",
            "load scope:SCOPE_SE",
            "load scope:SCOPE_DEV",
            "load scope:SCOPE_SYS",
        ],
    ),
    (
        "load acquire",
        [
            "load",
            "load scope:SCOPE_SE; W; global_inv scope:SCOPE_SE",
            "load scope:SCOPE_DEV; W; global_inv scope:SCOPE_DEV",
            "load scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "load seq_cst",
        [
            "load",
            "W; load scope:SCOPE_SE; W; global_inv scope:SCOPE_SE",
            "W; load scope:SCOPE_DEV; W; global_inv scope:SCOPE_DEV",
            "W; load scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "store relaxed",
        [
            "store",
            "store scope:SCOPE_SE",
            "store scope:SCOPE_DEV",
            "store scope:SCOPE_SYS",
        ],
    ),
    (
        "store release",
        [
            "store",
            "W; store scope:SCOPE_SE",
            "W; store scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; store scope:SCOPE_SYS",
        ],
    ),
    (
        "store seq_cst",
        [
            "store",
            "W; store scope:SCOPE_SE",
            "W; store scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; store scope:SCOPE_SYS",
        ],
    ),
    (
        "rmw relaxed",
        [
            "rmw",
            "rmw scope:SCOPE_SE",
            "rmw scope:SCOPE_DEV",
            "rmw scope:SCOPE_SYS",
        ],
    ),
    (
        "rmw acquire",
        [
            "rmw",
            "rmw scope:SCOPE_SE; W; global_inv scope:SCOPE_SE",
            "rmw scope:SCOPE_DEV; W; global_inv scope:SCOPE_DEV",
            "rmw scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "rmw release",
        [
            "rmw",
            "W; rmw scope:SCOPE_SE",
            "W; rmw scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; rmw scope:SCOPE_SYS",
        ],
    ),
    (
        "rmw acq_rel",
        [
            "rmw",
            "W; rmw scope:SCOPE_SE; W; global_inv scope:SCOPE_SE",
            "W; rmw scope:SCOPE_DEV; W; global_inv scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; rmw scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "rmw seq_cst",
        [
            "rmw",
            "W; rmw scope:SCOPE_SE; W; global_inv scope:SCOPE_SE",
            "W; rmw scope:SCOPE_DEV; W; global_inv scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; rmw scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "fence acquire",
        [
            "",
            "W; global_inv scope:SCOPE_SE",
            "W; global_inv scope:SCOPE_DEV",
            "W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "fence release",
        ["", "W", "W", "global_wb scope:SCOPE_SYS; W"],
    ),
    (
        "fence acq_rel",
        [
            "",
            "W; global_inv scope:SCOPE_SE",
            "W; global_inv scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
    (
        "fence seq_cst",
        [
            "",
            "W; global_inv scope:SCOPE_SE",
            "W; global_inv scope:SCOPE_DEV",
            "global_wb scope:SCOPE_SYS; W; global_inv scope:SCOPE_SYS",
        ],
    ),
];

fn table(gfx: &str) -> &'static [Row] {
    match gfx {
        "gfx90a" => GFX90A,
        "gfx942" | "gfx950" => GFX942,
        "gfx1100" => GFX11,
        "gfx1201" => GFX12,
        other => panic!("no memory-model table for {other}"),
    }
}

/// Collapses runs of `W` and trims leading and trailing ones.
fn trim_waits(tokens: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tokens {
        if t == "W" && out.last().is_none_or(|l| l == "W") {
            continue;
        }
        out.push(t);
    }
    while out.last().is_some_and(|t| t == "W") {
        out.pop();
    }
    out
}

fn expected(gfx: &str, op: &str, scope: &str, ordering: &str) -> String {
    let kind = if op == "add" || op == "cas" {
        "rmw"
    } else {
        op
    };
    let key = format!("{kind} {ordering}");
    let row = table(gfx)
        .iter()
        .find(|(k, _)| *k == key)
        .unwrap_or_else(|| panic!("{gfx}: no row {key}"));
    let column = match scope {
        "workitem" | "wavefront" => 0,
        "workgroup" => 1,
        "agent" => 2,
        _ => 3,
    };
    let tokens = row.1[column]
        .split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect();
    trim_waits(tokens).join("; ")
}

/// Reduces one disassembled instruction to its memory-model token, if it
/// has one (see the module doc).
fn token(gfx: &str, text: &str) -> Option<String> {
    let mut words = text.split([' ', ',']).filter(|w| !w.is_empty());
    let op = words.next()?;
    let rest: Vec<&str> = words.collect();
    let wait = |t: &str| {
        [
            "vmcnt",
            "vscnt",
            "loadcnt",
            "storecnt",
            "samplecnt",
            "bvhcnt",
        ]
        .iter()
        .any(|c| t.contains(c))
    };
    if op.starts_with("s_waitcnt") || op.starts_with("s_wait_") {
        return wait(text).then(|| "W".to_owned());
    }
    let access = ["global_", "flat_"]
        .iter()
        .find_map(|p| op.strip_prefix(p))
        .map(|o| {
            if o.starts_with("atomic") {
                "rmw"
            } else if o.starts_with("load") {
                "load"
            } else if o.starts_with("store") {
                "store"
            } else {
                o
            }
        });
    let cache_op = op.starts_with("buffer_wb")
        || op.starts_with("buffer_inv")
        || op.starts_with("buffer_gl")
        || op == "global_inv"
        || op == "global_wb"
        || op == "global_wbinv";
    let name = if cache_op { op } else { access? };
    if !cache_op && !matches!(name, "load" | "store" | "rmw") {
        return None;
    }
    let returns_bit = match gfx {
        "gfx942" | "gfx950" => "sc0",
        _ => "glc",
    };
    let bits: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|w| {
            matches!(*w, "sc0" | "sc1" | "nt" | "glc" | "slc" | "dlc") || w.starts_with("scope:")
        })
        .filter(|w| !(name == "rmw" && *w == returns_bit))
        .collect();
    Some(
        std::iter::once(name)
            .chain(bits)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Every probe kernel's instructions, by kernel name.
fn kernels(gfx: &str, path: &str) -> BTreeMap<String, Vec<String>> {
    let text = run_llvm_tool("llvm-objdump", &["-d", &format!("--mcpu={gfx}"), path]);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(name) = line
            .strip_suffix(">:")
            .and_then(|l| l.split_once(" <"))
            .map(|(_, n)| n.to_owned())
        {
            current = Some(name.clone());
            out.entry(name).or_default();
        } else if let (Some(k), Some(inst)) = (&current, line.strip_prefix('\t')) {
            let inst = inst.split("//").next().unwrap_or("").trim();
            if !inst.is_empty() {
                out.entry(k.clone()).or_default().push(inst.to_owned());
            }
        }
    }
    out
}

/// The memory-model tokens of one probe kernel.
fn reduce(gfx: &str, op: &str, instructions: &[String]) -> String {
    let mut tokens: Vec<String> = instructions.iter().filter_map(|i| token(gfx, i)).collect();
    if op != "store" {
        // The probe's plain store of its result.
        let last = tokens.iter().rposition(|t| t == "store");
        assert!(
            last.is_some(),
            "{gfx} {op}: no result store in {instructions:?}"
        );
        tokens.truncate(last.unwrap_or(0));
    }
    // Leading waits: the soft waits with nothing outstanding may go.
    let first = tokens.iter().position(|t| t != "W").unwrap_or(tokens.len());
    trim_waits(tokens.split_off(first)).join("; ")
}

#[test]
fn scoped_atomics_compile_to_the_memory_model_of_every_target() {
    let probes: Vec<_> = built_code_objects()
        .into_iter()
        .filter(|b| b.package == "aqueduct-probes")
        .collect();
    let targets: Vec<&str> = probes.iter().map(|b| b.gfx).collect();
    assert_eq!(
        targets,
        ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"]
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for built in &probes {
        let path = built.path.to_string_lossy();
        let all = kernels(built.gfx, &path);
        for (name, instructions) in &all {
            assert!(
                !instructions.iter().any(|i| i.starts_with("s_swappc")),
                "{} {name}: calls out (an IR function was not inlined)",
                built.gfx
            );
        }
        for op in ["load", "store", "add", "cas", "fence"] {
            for scope in SCOPES {
                for ordering in ["relaxed", "acquire", "release", "acq_rel", "seq_cst"] {
                    let name = format!("probe_{op}_{scope}_{ordering}");
                    let Some(instructions) = all.get(&name) else {
                        // Orderings an operation cannot have have no probe.
                        let impossible = (op == "load"
                            && matches!(ordering, "release" | "acq_rel"))
                            || (op == "store" && matches!(ordering, "acquire" | "acq_rel"))
                            || (op == "fence" && ordering == "relaxed");
                        assert!(impossible, "{}: no kernel {name}", built.gfx);
                        continue;
                    };
                    let got = reduce(built.gfx, op, instructions);
                    let want = expected(built.gfx, op, scope, ordering);
                    eprintln!("{:8} {op:6} {scope:10} {ordering:8} {got}", built.gfx);
                    checked += 1;
                    if got != want {
                        failures.push(format!(
                            "{} {name}:\n  want {want}\n  got  {got}\n  from {instructions:?}",
                            built.gfx
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(checked, 5 * 5 * (3 + 3 + 5 + 5 + 4));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_reduction_keeps_what_the_model_needs() {
    // A gfx942 system-scope acq_rel RMW as llc prints it (AMDGPUUsage's
    // example sequence): the write-back, the wait after it, the access
    // with its scope bit but not its return bit, the wait after it, the
    // invalidate; the kernel-argument wait before it goes.
    let text = [
        "s_load_dwordx4 s[0:3], s[0:1], 0x0",
        "s_waitcnt lgkmcnt(0)",
        "buffer_wbl2 sc0 sc1",
        "s_waitcnt vmcnt(0) lgkmcnt(0)",
        "global_atomic_add v1, v1, v2, s[0:1] sc0 sc1",
        "s_waitcnt vmcnt(0)",
        "buffer_inv sc0 sc1",
        "global_store_dword v2, v0, s[2:3]",
        "s_endpgm",
    ]
    .map(String::from);
    assert_eq!(
        reduce("gfx942", "add", &text),
        "buffer_wbl2 sc0 sc1; W; rmw sc1; W; buffer_inv sc0 sc1"
    );
    assert_eq!(
        expected("gfx942", "add", "system", "acq_rel"),
        reduce("gfx942", "add", &text)
    );
    // A missing invalidate is a difference.
    let mut broken = text.to_vec();
    broken.remove(6);
    assert_ne!(
        reduce("gfx942", "add", &broken),
        expected("gfx942", "add", "system", "acq_rel")
    );
}
