//! The row type of the opcode tables ([`super::opcodes`]).

use super::target::Target;

/// One opcode of one format: its mnemonic on each target (`""` if none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpName {
    /// The opcode field's value.
    pub opcode: u16,
    /// LLVM's mnemonic on each target, in [`Target::ALL`]'s order, or `""`.
    pub names: [&'static str; Target::ALL.len()],
}

impl OpName {
    /// A table row (the generated tables are lists of these).
    pub const fn new(opcode: u16, names: [&'static str; Target::ALL.len()]) -> Self {
        Self { opcode, names }
    }

    /// The mnemonic on `target`, or `""`.
    pub const fn on(&self, target: Target) -> &'static str {
        self.names[target as usize]
    }

    /// The `N` rows of `a` then `b`, for a table that starts with another
    /// format's rows ([`super::opcodes::VOP3`] with the VOPC compares); a
    /// compile error unless `N` is both lengths.
    pub(crate) const fn concat<const N: usize>(a: &[Self], b: &[Self]) -> [Self; N] {
        assert!(a.len() + b.len() == N, "N must be both tables' rows");
        let mut out = [Self::new(0, [""; Target::ALL.len()]); N];
        let mut i = 0;
        while i < N {
            out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
            i += 1;
        }
        out
    }
}
