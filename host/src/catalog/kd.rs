//! Exact nearest-entry search over a Matching table's keys.
//!
//! Tensile answers a Euclidean or Manhattan table by walking it in sorted
//! order from the query's lower bound, rightward then leftward, until the
//! first coordinate alone rules out improvement. For a query far from every
//! tuned size that walk reads thousands of entries, and even a short walk
//! reads several arrays at scattered places. [`KdIndex`] finds the same
//! answer through a tree of bounding boxes instead: it returns the least
//! distance D* among entries whose solutions pass, with every passing entry
//! at D*, and [`Matching`](super::library::Matching) folds those in the
//! walk's visiting order (see `Matching::fold`), which is what the walk
//! returns.
//!
//! The tree: each node splits its entries into up to [`FAN`] parts by three
//! rounds of median cuts along the widest coordinate; parts of at most
//! [`BUCKET`] entries are leaves. Per part the node keeps its box and a
//! 64-bit summary of the solution groups in it (bit `g % 64` for group
//! `g`). A search descends nearest part first, skips parts whose box cannot
//! come within D* and parts whose groups are all known to fail, and asks a
//! group's predicates only when one of its entries could win. The entries
//! are stored again in tree order (keys as `i32`, their sorted positions
//! and groups), so that a leaf is a few adjacent cache lines.
//!
//! Exactness: keys and queries are limited to |x| < 2^24 and tables to
//! [`MAX_ARITY`] coordinates, so every squared gap is below 2^50 and every
//! sum below 2^53: box bounds and distances are exact integers, and the
//! distance equals Tensile's `double` sum bit for bit. Tables outside these
//! limits, and queries outside them, are walked the plain way.

/// Parts per node (three rounds of halving).
const FAN: usize = 8;
/// Entries a part may hold and still be a leaf.
const BUCKET: usize = 16;
/// Coordinates a table may have for the tree to be built.
pub const MAX_ARITY: usize = 8;
/// Keys and queries must lie strictly within ±LIMIT.
pub const LIMIT: i64 = 1 << 24;
/// Entries a search examines without finding a passing one before it asks
/// every group at once (in a table where nothing passes, this ends the
/// search after a few dozen evaluations instead of a whole-table scan).
const BLIND_STEPS: usize = 48;

/// What a search knows about each group: not yet asked, passes, fails.
pub const UNKNOWN: u8 = 0;
pub const PASSES: u8 = 1;
pub const FAILS: u8 = 2;

/// One part of a node: entries `lo..hi` in tree order, split further by
/// node `node` (0: a leaf; node 0 is the root and never a part).
#[derive(Debug, Clone, Copy, Default)]
struct Part {
    mask: u64,
    lo: u32,
    hi: u32,
    node: u32,
}

#[derive(Debug)]
pub struct KdIndex {
    arity: usize,
    /// `FAN` parts per node.
    parts: Box<[Part]>,
    /// Per part, its box: `arity` minima, then `arity` maxima.
    boxes: Box<[i32]>,
    /// Entries in tree order: keys, sorted positions, groups.
    keys: Box<[i32]>,
    pos: Box<[u32]>,
    group: Box<[u16]>,
    /// Groups per residue `g % 64`, and the residues in use.
    residues: [u16; 64],
    all: u64,
}

impl KdIndex {
    /// Builds the tree over sorted keys (`arity` each), or None when the
    /// table is outside the exact limits.
    pub fn build(keys: &[i64], arity: usize) -> Option<KdIndex> {
        let n = keys.len() / arity.max(1);
        if arity == 0
            || arity > MAX_ARITY
            || n == 0
            || n >= u32::MAX as usize
            || keys.iter().any(|&k| k.unsigned_abs() >= LIMIT as u64)
        {
            return None;
        }
        let mut b = Builder {
            keys,
            arity,
            perm: (0..n as u32).collect(),
            parts: Vec::new(),
            boxes: Vec::new(),
        };
        b.node(0, n);
        let mut tree_keys = Vec::with_capacity(n * arity);
        for &p in &b.perm {
            let k = &keys[p as usize * arity..(p as usize + 1) * arity];
            tree_keys.extend(k.iter().map(|&x| x as i32));
        }
        Some(KdIndex {
            arity,
            parts: b.parts.into_boxed_slice(),
            boxes: b.boxes.into_boxed_slice(),
            keys: tree_keys.into_boxed_slice(),
            pos: b.perm.into_boxed_slice(),
            group: Box::new([]),
            residues: [0; 64],
            all: 0,
        })
    }

    /// Records each entry's group (`local[i]` for sorted entry i, of
    /// `groups` groups) and the parts' group summaries. False when there
    /// are too many groups for the tree to hold.
    pub fn set_groups(&mut self, local: &[u32], groups: usize) -> bool {
        if groups > u16::MAX as usize + 1 {
            return false;
        }
        self.group = self.pos.iter().map(|&p| local[p as usize] as u16).collect();
        self.residues = [0; 64];
        for g in 0..groups {
            self.residues[g % 64] += 1;
        }
        self.all = (0..64)
            .filter(|&r| self.residues[r] > 0)
            .fold(0, |m, r| m | 1 << r);
        // Nodes are numbered parents first: fill from the last.
        for node in (0..self.parts.len() / FAN).rev() {
            for slot in node * FAN..(node + 1) * FAN {
                let p = self.parts[slot];
                let mask = if p.node != 0 {
                    let c = p.node as usize * FAN;
                    self.parts[c..c + FAN].iter().fold(0, |m, q| m | q.mask)
                } else {
                    self.group[p.lo as usize..p.hi as usize]
                        .iter()
                        .fold(0, |m, &g| m | 1u64 << (g % 64))
                };
                self.parts[slot].mask = mask;
            }
        }
        true
    }

    /// True when the query can be searched exactly.
    pub fn accepts(&self, q: &[i64]) -> bool {
        q.len() == self.arity && q.iter().all(|&x| x.unsigned_abs() < LIMIT as u64)
    }

    /// The least distance among entries whose group passes, with the
    /// sorted positions of all passing entries at that distance in `at`
    /// (in no particular order). `state` holds what is known of each group
    /// and is updated; `judge(g)` asks group g's predicates. Returns None
    /// when no entry passes.
    pub fn nearest(
        &self,
        q: &[i64],
        euclidean: bool,
        state: &mut [u8],
        judge: &mut dyn FnMut(usize) -> bool,
        at: &mut Vec<u32>,
    ) -> Option<f64> {
        at.clear();
        let mut query = [0i64; MAX_ARITY];
        query[..self.arity].copy_from_slice(q);
        let mut s = Search {
            index: self,
            q: query,
            euclidean,
            state,
            judge,
            residues: self.residues,
            alive: self.all,
            best: u64::MAX,
            at,
            blind: 0,
            all_known: false,
            done: false,
        };
        s.node(0);
        (!s.at.is_empty()).then_some(s.best as f64)
    }
}

struct Builder<'k> {
    keys: &'k [i64],
    arity: usize,
    perm: Vec<u32>,
    parts: Vec<Part>,
    boxes: Vec<i32>,
}

impl Builder<'_> {
    fn coord(&self, p: u32, c: usize) -> i64 {
        self.keys[p as usize * self.arity + c]
    }

    /// Builds the node over `perm[lo..hi]`; returns its number.
    fn node(&mut self, lo: usize, hi: usize) -> u32 {
        let number = self.parts.len() / FAN;
        self.parts.resize(self.parts.len() + FAN, Part::default());
        self.boxes
            .resize(self.boxes.len() + FAN * 2 * self.arity, 0);
        let mut ranges = vec![(lo, hi)];
        for _ in 0..3 {
            let mut next = Vec::with_capacity(ranges.len() * 2);
            for &(a, b) in &ranges {
                if b - a <= BUCKET {
                    next.push((a, b));
                    continue;
                }
                let c = self.widest(a, b);
                let mid = (b - a) / 2;
                let keys = self.keys;
                let arity = self.arity;
                self.perm[a..b].select_nth_unstable_by_key(mid, |&p| keys[p as usize * arity + c]);
                next.push((a, a + mid));
                next.push((a + mid, b));
            }
            ranges = next;
        }
        for (j, &(a, b)) in ranges.iter().enumerate() {
            let slot = number * FAN + j;
            for c in 0..self.arity {
                let (mut min, mut max) = (i64::MAX, i64::MIN);
                for &p in &self.perm[a..b] {
                    let x = self.coord(p, c);
                    min = min.min(x);
                    max = max.max(x);
                }
                let at = slot * 2 * self.arity;
                self.boxes[at + c] = min as i32;
                self.boxes[at + self.arity + c] = max as i32;
            }
            let node = if b - a > BUCKET { self.node(a, b) } else { 0 };
            self.parts[slot] = Part {
                mask: 0,
                lo: a as u32,
                hi: b as u32,
                node,
            };
        }
        number as u32
    }

    /// The coordinate with the widest spread over `perm[a..b]`.
    fn widest(&self, a: usize, b: usize) -> usize {
        (0..self.arity)
            .max_by_key(|&c| {
                let it = self.perm[a..b].iter().map(|&p| self.coord(p, c));
                let (min, max) =
                    it.fold((i64::MAX, i64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
                (max - min, std::cmp::Reverse(c))
            })
            .unwrap_or(0)
    }
}

struct Search<'s> {
    index: &'s KdIndex,
    q: [i64; MAX_ARITY],
    euclidean: bool,
    state: &'s mut [u8],
    judge: &'s mut dyn FnMut(usize) -> bool,
    /// Groups per residue not known to fail, and the residues with any.
    residues: [u16; 64],
    alive: u64,
    /// The least passing distance so far (exact), and its entries.
    best: u64,
    at: &'s mut Vec<u32>,
    blind: usize,
    all_known: bool,
    done: bool,
}

impl Search<'_> {
    #[inline(always)]
    fn term(&self, gap: i64) -> u64 {
        if self.euclidean {
            (gap * gap) as u64
        } else {
            gap.unsigned_abs()
        }
    }

    /// The least distance any entry of part `slot` can have.
    #[inline]
    fn bound(&self, slot: usize) -> u64 {
        let n = self.index.arity;
        let b = &self.index.boxes[slot * 2 * n..(slot + 1) * 2 * n];
        let mut sum = 0;
        for c in 0..n {
            let (lo, hi, x) = (b[c] as i64, b[n + c] as i64, self.q[c]);
            let gap = if x < lo {
                lo - x
            } else if x > hi {
                x - hi
            } else {
                0
            };
            sum += self.term(gap);
        }
        sum
    }

    fn node(&mut self, node: usize) {
        let mut order = [(0u64, 0usize); FAN];
        let mut count = 0;
        for slot in node * FAN..(node + 1) * FAN {
            let p = &self.index.parts[slot];
            if p.lo == p.hi || p.mask & self.alive == 0 {
                continue;
            }
            let lb = self.bound(slot);
            if lb > self.best {
                continue;
            }
            // Insertion into the few parts kept, nearest first.
            let mut j = count;
            while j > 0 && order[j - 1].0 > lb {
                order[j] = order[j - 1];
                j -= 1;
            }
            order[j] = (lb, slot);
            count += 1;
        }
        for &(lb, slot) in &order[..count] {
            let p = self.index.parts[slot];
            if self.done || lb > self.best || p.mask & self.alive == 0 {
                continue;
            }
            if p.node != 0 {
                self.node(p.node as usize);
            } else {
                self.leaf(p.lo as usize, p.hi as usize);
            }
        }
    }

    fn leaf(&mut self, lo: usize, hi: usize) {
        let n = self.index.arity;
        for t in lo..hi {
            let g = self.index.group[t] as usize;
            let known = self.state[g];
            if known == FAILS {
                continue;
            }
            let k = &self.index.keys[t * n..(t + 1) * n];
            let mut d = 0;
            for c in 0..n {
                d += self.term(self.q[c] - k[c] as i64);
            }
            if d > self.best {
                continue;
            }
            if known == UNKNOWN && !self.ask(g) {
                if self.done {
                    return;
                }
                continue;
            }
            if d < self.best {
                self.best = d;
                self.at.clear();
            }
            self.at.push(self.index.pos[t]);
        }
    }

    /// Asks group g; a failure drops its residue when no group of that
    /// residue is left. A search that keeps meeting failures with nothing
    /// found asks every group once, and ends when none passes.
    fn ask(&mut self, g: usize) -> bool {
        let pass = (self.judge)(g);
        self.record(g, pass);
        if !pass && self.at.is_empty() && !self.all_known {
            self.blind += 1;
            if self.blind > BLIND_STEPS {
                self.all_known = true;
                let mut any = false;
                for h in 0..self.state.len() {
                    if self.state[h] == UNKNOWN {
                        let pass = (self.judge)(h);
                        self.record(h, pass);
                    }
                    any |= self.state[h] == PASSES;
                }
                self.done = !any;
            }
        }
        pass
    }

    fn record(&mut self, g: usize, pass: bool) {
        self.state[g] = if pass { PASSES } else { FAILS };
        if !pass {
            let r = g % 64;
            self.residues[r] -= 1;
            if self.residues[r] == 0 {
                self.alive &= !(1 << r);
            }
        }
    }
}
