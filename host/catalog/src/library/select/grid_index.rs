//! A GridBased table's index: its runs of equal M and, within them, its
//! cells (runs of equal N), where the walk over cells (`grid`) looks
//! instead of the table's keys; and the names of a GridBased key's four
//! coordinates.
//!
//! A leaf: it reads keys only, so the node model can hold an index without
//! this room knowing the model. May assume: the keys sorted ascending, four
//! to an entry (checked at load). Costs: built once at load, one record per
//! run and per cell (a few kilobytes for hipBLASLt's tables); each lookup
//! is a binary search over them.

/// A GridBased key's coordinates: M, N, batch, K.
pub(super) const GM: usize = 0;
pub(super) const GN: usize = 1;
pub(super) const GB: usize = 2;
pub(super) const GK: usize = 3;

/// A GridBased table's runs of equal M and, within them, its cells (runs
/// of equal N), each with where it starts, and a closing sentinel each:
/// the fast walk searches these few kilobytes instead of the table's keys.
#[derive(Debug, Default)]
pub(in crate::library) struct GridIndex {
    /// (M, first entry, first cell), then (i64::MAX, table length, cell count).
    pub(super) runs: Box<[(i64, u32, u32)]>,
    /// (N, first entry), then (i64::MAX, table length).
    pub(super) cells: Box<[(i64, u32)]>,
}

impl GridIndex {
    /// The index of a table's sorted keys, `arity` values each.
    pub(super) fn build(keys: &[i64], arity: usize) -> GridIndex {
        let key = |i: usize| &keys[i * arity..(i + 1) * arity];
        let len = keys.len() / arity;
        let (mut runs, mut cells) = (Vec::new(), Vec::new());
        for i in 0..len {
            let k = key(i);
            let new_run = i == 0 || key(i - 1)[GM] != k[GM];
            if new_run {
                runs.push((k[GM], i as u32, cells.len() as u32));
            }
            if new_run || key(i - 1)[GN] != k[GN] {
                cells.push((k[GN], i as u32));
            }
        }
        runs.push((i64::MAX, len as u32, cells.len() as u32));
        cells.push((i64::MAX, len as u32));
        GridIndex {
            runs: runs.into_boxed_slice(),
            cells: cells.into_boxed_slice(),
        }
    }

    /// The run holding entry `p`.
    pub(super) fn run_of(&self, p: usize) -> usize {
        self.runs.partition_point(|r| r.1 as usize <= p) - 1
    }

    /// The cell holding entry `p` of run `r`.
    pub(super) fn cell_of(&self, r: usize, p: usize) -> usize {
        let (lo, hi) = (self.runs[r].2 as usize, self.runs[r + 1].2 as usize);
        lo + self.cells[lo..hi].partition_point(|c| c.1 as usize <= p) - 1
    }

    /// The first cell of run `r` from cell `c` on whose N is at least the
    /// walk's threshold for `want_n` (the least of it and the run's
    /// largest N, so there is one).
    pub(super) fn examined_from(&self, r: usize, c: usize, want_n: i64) -> usize {
        let end = self.runs[r + 1].2 as usize;
        let threshold = want_n.min(self.cells[end - 1].0);
        c + self.cells[c..end].partition_point(|x| x.0 < threshold)
    }

    /// The first entry from `from` whose M is at least `m` (or the
    /// table's length).
    pub(super) fn m_from(&self, from: usize, m: i64) -> usize {
        let len = self.runs[self.runs.len() - 1].1 as usize;
        if from >= len {
            return len;
        }
        let r = self.run_of(from);
        if self.runs[r].0 >= m {
            return from;
        }
        let runs = &self.runs[..self.runs.len() - 1];
        let next = runs.partition_point(|x| x.0 < m);
        runs.get(next).map_or(len, |x| x.1 as usize)
    }
}
