//! The row type of the opcode tables ([`super::opcodes`]).

/// One opcode of one format: its mnemonic on each target (`""` if none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpName {
    /// The opcode field's value.
    pub opcode: u16,
    /// LLVM's mnemonic on gfx90a, or `""`.
    pub gfx90a: &'static str,
    /// LLVM's mnemonic on gfx942, or `""`.
    pub gfx942: &'static str,
}

impl OpName {
    /// A table row (the generated tables are lists of these).
    pub const fn new(opcode: u16, gfx90a: &'static str, gfx942: &'static str) -> Self {
        Self {
            opcode,
            gfx90a,
            gfx942,
        }
    }

    /// The `N` rows of `a` then `b`, for a table that starts with another
    /// format's rows ([`super::opcodes::VOP3`] with the VOPC compares); a
    /// compile error unless `N` is both lengths.
    pub(crate) const fn concat<const N: usize>(a: &[Self], b: &[Self]) -> [Self; N] {
        assert!(a.len() + b.len() == N, "N must be both tables' rows");
        let mut out = [Self::new(0, "", ""); N];
        let mut i = 0;
        while i < N {
            out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
            i += 1;
        }
        out
    }
}
