//! Which instructions of aqueduct's own code objects the simulator runs.
//!
//! The simulator is how every device-side claim gets executed, so every
//! instruction aqueduct builds for gfx90a and gfx942 must be one it
//! implements: a kernel that reaches an unimplemented instruction faults,
//! and one that never reaches it in a test today will tomorrow. This reads
//! each code object's executable segments, decodes them front to back with
//! the simulator's own decoder (the way `Program::load` does, so the two
//! cannot disagree about what is there) and asks the executor registry about
//! each mnemonic. Words that decode to nothing count as missing, named by
//! address and value: the simulator could not run them either.
//!
//! This is static coverage: it says an instruction *can* run, not that a
//! test exercised it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use aqueduct_abi::code_object::CodeObject;
use aqueduct_sim::decode::{self, DecodeError, Target};
use aqueduct_sim::exec;

/// The targets the simulator runs, and so the ones checked.
pub const SIMULATED_TARGETS: [&str; Target::ALL.len()] = {
    let mut names = [""; Target::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Target::ALL[i].name();
        i += 1;
    }
    names
};

/// Words that are no instruction of the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undecodable {
    /// Offset from the code object's load base (its vaddr).
    pub address: u64,
    pub word: u32,
    pub error: DecodeError,
}

/// One mnemonic's occurrences in a code object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kind {
    pub count: u64,
    pub implemented: bool,
}

/// The instruction kinds of one code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    pub gfx: &'static str,
    /// What the code object is (`aqueduct-device`, a file name).
    pub name: String,
    pub kinds: BTreeMap<&'static str, Kind>,
    pub undecodable: Vec<Undecodable>,
}

impl Coverage {
    /// Mnemonics the simulator has no executor for.
    pub fn missing(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds
            .iter()
            .filter(|(_, k)| !k.implemented)
            .map(|(&m, _)| m)
    }

    /// Whether the simulator runs every instruction here.
    pub fn complete(&self) -> bool {
        self.undecodable.is_empty() && self.missing().next().is_none()
    }

    /// Names every instruction the simulator cannot run, one per line.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .missing()
            .map(|m| {
                format!(
                    "{} {}: {m} ({} occurrences) is not implemented",
                    self.gfx, self.name, self.kinds[m].count
                )
            })
            .collect();
        out.extend(self.undecodable.iter().map(|u| {
            format!(
                "{} {}: word {:#010x} at {:#x} does not decode: {:?}",
                self.gfx, self.name, u.word, u.address, u.error
            )
        }));
        out
    }
}

/// Decodes every executable segment of `bytes`, a code object for `gfx`.
pub fn coverage(gfx: &'static str, name: &str, bytes: &[u8]) -> Result<Coverage, String> {
    let target =
        Target::from_name(gfx).ok_or_else(|| format!("the simulator does not run {gfx}"))?;
    let co = CodeObject::parse(bytes).map_err(|e| format!("{name}: {e}"))?;
    if co.target.processor != gfx {
        return Err(format!("{name} is for {}, not {gfx}", co.target.processor));
    }
    let mut kinds: BTreeMap<&'static str, Kind> = BTreeMap::new();
    let mut undecodable = Vec::new();
    for s in co.segments.iter().filter(|s| s.executable) {
        let from = s.file_offset as usize;
        let file = bytes
            .get(from..from + s.filesz as usize)
            .ok_or_else(|| format!("{name}: segment at {:#x} runs past the file", s.vaddr))?;
        let words: Vec<u32> = file
            .as_chunks::<4>()
            .0
            .iter()
            .map(|&c| u32::from_le_bytes(c))
            .collect();
        let mut at = 0;
        while at < words.len() {
            match decode::decode(&words[at..], target) {
                Ok(inst) => {
                    let kind = kinds.entry(inst.mnemonic).or_insert(Kind {
                        count: 0,
                        implemented: exec::implemented(inst.mnemonic),
                    });
                    kind.count += 1;
                    at += usize::from(inst.words);
                }
                Err(error) => {
                    undecodable.push(Undecodable {
                        address: s.vaddr + at as u64 * 4,
                        word: words[at],
                        error,
                    });
                    at += 1;
                }
            }
        }
    }
    Ok(Coverage {
        gfx,
        name: name.to_owned(),
        kinds,
        undecodable,
    })
}

/// The table of one code object: one row per mnemonic, most frequent first.
pub fn format_table(c: &Coverage) -> String {
    let instructions: u64 = c.kinds.values().map(|k| k.count).sum();
    let implemented = c.kinds.values().filter(|k| k.implemented).count();
    let mut out = format!(
        "{} {}: {} instructions, {} kinds, {implemented} implemented{}\n",
        c.gfx,
        c.name,
        instructions + c.undecodable.len() as u64,
        c.kinds.len(),
        match c.undecodable.len() {
            0 => String::new(),
            n => format!(", {n} undecodable words"),
        }
    );
    let mut rows: Vec<_> = c.kinds.iter().collect();
    rows.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    for (m, k) in rows {
        let state = if k.implemented { "" } else { "  MISSING" };
        let _ = writeln!(out, "  {:>6}  {m}{state}", k.count);
    }
    for u in &c.undecodable {
        let _ = writeln!(
            out,
            "  {:>6}  word {:#010x} at {:#x}  UNDECODABLE ({:?})",
            1, u.word, u.address, u.error
        );
    }
    out
}

/// Per target: distinct kinds over all its code objects, how many the
/// simulator implements (an undecodable word is a kind of its own, never
/// implemented), and the percentage.
pub fn totals(all: &[Coverage]) -> Vec<(&'static str, usize, usize, f64)> {
    let mut out = Vec::new();
    for gfx in SIMULATED_TARGETS {
        let mut kinds: BTreeMap<String, bool> = BTreeMap::new();
        for c in all.iter().filter(|c| c.gfx == gfx) {
            for (m, k) in &c.kinds {
                kinds.insert((*m).to_owned(), k.implemented);
            }
            for u in &c.undecodable {
                kinds.insert(format!("{:#010x}", u.word), false);
            }
        }
        if kinds.is_empty() {
            continue;
        }
        let implemented = kinds.values().filter(|&&i| i).count();
        let percent = 100.0 * implemented as f64 / kinds.len() as f64;
        out.push((gfx, implemented, kinds.len(), percent));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unimplemented_and_undecodable_instructions_make_coverage_incomplete() {
        let mut c = Coverage {
            gfx: "gfx942",
            name: "k".into(),
            kinds: BTreeMap::from([(
                "s_endpgm",
                Kind {
                    count: 1,
                    implemented: true,
                },
            )]),
            undecodable: Vec::new(),
        };
        assert!(c.complete());
        c.kinds.insert(
            "v_made_up",
            Kind {
                count: 2,
                implemented: false,
            },
        );
        assert_eq!(c.missing().collect::<Vec<_>>(), ["v_made_up"]);
        c.kinds.remove("v_made_up");
        c.undecodable.push(Undecodable {
            address: 0x100,
            word: 0xFFFF_FFFF,
            error: DecodeError::UnknownFormat { word: 0xFFFF_FFFF },
        });
        assert!(!c.complete());
        assert!(c.problems()[0].contains("0xffffffff at 0x100"));
        assert_eq!(totals(&[c]), [("gfx942", 1, 2, 50.0)]);
    }
}
