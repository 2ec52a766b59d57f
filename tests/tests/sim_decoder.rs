//! Decoder oracle, first stage: the simulator classifies every instruction
//! of every code object `cargo xtask build` made for gfx90a and gfx942 the
//! way the toolchain's `llvm-objdump` does — same mnemonic, same size. The
//! words come from objdump's own listing, so a wrong size in the simulator
//! desynchronises the walk and fails at once.

use aqueduct_sim::decode::{Target, classify};
use aqueduct_tests::{built_code_objects, run_llvm_tool};

/// (mnemonic without encoding suffix, the instruction's words) per line.
fn listing(text: &str) -> Vec<(String, Vec<u32>)> {
    text.lines()
        .filter_map(|line| {
            let (insn, comment) = line.split_once("//")?;
            let (_, hex) = comment.split_once(':')?;
            let words: Vec<u32> = hex
                .split_whitespace()
                .map(|w| u32::from_str_radix(w, 16))
                .collect::<Result<_, _>>()
                .ok()?;
            let mnemonic = insn.split_whitespace().next()?;
            let base = ["_e32", "_e64", "_sdwa", "_dpp"]
                .iter()
                .find_map(|s| mnemonic.strip_suffix(s))
                .unwrap_or(mnemonic);
            (!words.is_empty()).then(|| (base.to_string(), words))
        })
        .collect()
}

#[test]
fn every_built_instruction_classifies_like_llvm_objdump() {
    let mut checked = 0;
    for built in built_code_objects() {
        let Some(target) = Target::from_name(built.gfx) else {
            continue;
        };
        let path = built.path.to_string_lossy().into_owned();
        let text = run_llvm_tool(
            "llvm-objdump",
            &["-d", &format!("--mcpu={}", built.gfx), &path],
        );
        // A device crate without kernels yet (aqueduct-gemm) has no code.
        let lines = listing(&text);
        let code: Vec<u32> = lines.iter().flat_map(|(_, w)| w.iter().copied()).collect();
        let mut at = 0;
        for (mnemonic, words) in &lines {
            let c = classify(&code[at..], target)
                .unwrap_or_else(|e| panic!("{path} word {at}: {e} (objdump: {mnemonic})"));
            assert_eq!(
                (c.mnemonic, c.words),
                (mnemonic.as_str(), words.len()),
                "{path} word {at}: {words:08x?}"
            );
            at += c.words;
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} instructions checked");
}
