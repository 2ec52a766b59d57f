//! Decoder oracle: the simulator decodes every instruction of every code
//! object `cargo xtask build` made for the targets it knows the way the
//! toolchain's `llvm-objdump` does: classification on all five (GFX9,
//! GFX11, GFX12), operands on the GFX9 ones (the GFX11/GFX12 operand
//! decoder is not written yet).
//!
//! Two stages. Classification: same mnemonic, same size; the words come
//! from objdump's own listing, so a wrong size in the simulator
//! desynchronises the walk and fails at once. Operands: the decoded
//! [`Inst`](aqueduct_sim::decode::Inst), printed back in LLVM's syntax by
//! `decode::print` (which reads only the decoded fields), must equal
//! objdump's text — every register, constant, offset and modifier the
//! executors read is checked against LLVM's disassembler.

use aqueduct_sim::decode::print::print;
use aqueduct_sim::decode::{Target, classify, decode};
use aqueduct_tests::{built_code_objects, run_llvm_tool};

/// One instruction of objdump's listing: its text (operands included,
/// whitespace collapsed) and its words.
struct Listed {
    text: String,
    words: Vec<u32>,
}

impl Listed {
    /// The mnemonic without the encoding suffix objdump adds.
    fn base_mnemonic(&self) -> &str {
        base(self.text.split(' ').next().unwrap_or(""))
    }

    /// A VOPD pair's second (Y) mnemonic: the one after `::`.
    fn paired_mnemonic(&self) -> Option<&str> {
        let (_, y) = self.text.split_once(" :: ")?;
        Some(base(y.split(' ').next().unwrap_or("")))
    }
}

/// `mnemonic` without the encoding suffix objdump adds.
fn base(mnemonic: &str) -> &str {
    ["_e32", "_e64", "_sdwa", "_dpp"]
        .iter()
        .find_map(|s| mnemonic.strip_suffix(s))
        .unwrap_or(mnemonic)
}

/// Whitespace collapsed to single spaces: objdump pads the operand column
/// and sometimes runs a long line into its comment.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Instruction lines of `llvm-objdump -d`: `<text> // <address>: <words>`,
/// where branches carry ` <symbol+offset>` after the words. Branch offsets
/// are in the text as objdump prints them (SIMM16 as an unsigned decimal),
/// so they compare exactly.
fn listing(text: &str) -> Vec<Listed> {
    text.lines()
        .filter_map(|line| {
            let (insn, comment) = line.split_once("//")?;
            let (_, rest) = comment.split_once(':')?;
            let hex = rest.split('<').next().unwrap_or(rest);
            let words: Vec<u32> = hex
                .split_whitespace()
                .map(|w| u32::from_str_radix(w, 16))
                .collect::<Result<_, _>>()
                .ok()?;
            (!words.is_empty()).then(|| Listed {
                text: normalise(insn),
                words,
            })
        })
        .collect()
}

/// objdump's listing of every built code object of a target the decoder
/// knows, with the target and the object's path.
fn built_listings() -> Vec<(Target, String, Vec<Listed>)> {
    built_code_objects()
        .into_iter()
        .filter_map(|built| {
            let target = Target::from_name(built.gfx)?;
            let path = built.path.to_string_lossy().into_owned();
            let text = run_llvm_tool(
                "llvm-objdump",
                &["-d", &format!("--mcpu={}", built.gfx), &path],
            );
            // A device crate without kernels yet (aqueduct-gemm) has no code.
            Some((target, path, listing(&text)))
        })
        .collect()
}

#[test]
fn every_built_instruction_classifies_like_llvm_objdump() {
    let mut checked = 0;
    let mut per_target = std::collections::BTreeMap::new();
    for (target, path, lines) in built_listings() {
        let code: Vec<u32> = lines.iter().flat_map(|l| l.words.iter().copied()).collect();
        let mut at = 0;
        for line in &lines {
            let c = classify(&code[at..], target)
                .unwrap_or_else(|e| panic!("{path} word {at}: {e} (objdump: {})", line.text));
            assert_eq!(
                (c.mnemonic, c.paired, c.words),
                (
                    line.base_mnemonic(),
                    line.paired_mnemonic(),
                    line.words.len()
                ),
                "{path} word {at}: {:08x?}",
                line.words
            );
            at += c.words;
            checked += 1;
            *per_target.entry(target.name()).or_insert(0) += 1;
        }
    }
    assert!(checked > 100, "only {checked} instructions checked");
    for t in Target::ALL {
        let n = per_target.get(t.name()).copied().unwrap_or(0);
        assert!(n > 1000, "{}: only {n} instructions classified", t.name());
    }
    eprintln!("{checked} instructions classify like llvm-objdump: {per_target:?}");
}

#[test]
fn every_built_instruction_decodes_to_llvm_objdump_operands() {
    let mut checked = 0;
    let mut distinct = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for (target, path, lines) in built_listings() {
        for line in &lines {
            // Each instruction alone: a wrong size cannot hide behind the
            // next instruction's words.
            let inst = match decode(&line.words, target) {
                Ok(inst) => inst,
                Err(e) => {
                    wrong.push(format!("{path}: {:08x?}: {e}", line.words));
                    continue;
                }
            };
            let ours = normalise(&print(&inst, target));
            if ours != line.text {
                wrong.push(format!(
                    "{path}: {:08x?}\n  objdump:   {}\n  simulator: {ours}",
                    line.words, line.text
                ));
            }
            distinct.insert(line.text.split(' ').next().unwrap_or("").to_string());
            checked += 1;
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} instructions decode differently from llvm-objdump:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 100, "only {checked} instructions checked");
    eprintln!(
        "{checked} instructions ({} distinct mnemonics) decode like llvm-objdump",
        distinct.len()
    );
}
