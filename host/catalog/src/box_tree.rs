//! Exact nearest-entry search over a Matching table's keys.
//!
//! Tensile answers a Euclidean or Manhattan table by walking it in sorted
//! order from the query's lower bound, rightward then leftward, until the
//! first coordinate alone rules out improvement. For a query far from every
//! tuned size that walk reads thousands of entries, and even a short walk
//! reads several arrays at scattered places. [`BoxTree`] finds the same
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
/// Groups a search finds failing, with nothing passing found yet, before it
/// asks every group at once. In a table where nothing passes this ends the
/// search early instead of a scan of the whole table; judging all groups
/// is cheap (one small mask per group, most rejected by a leaf already
/// known to fail), and on rocBLAS's catalog 8 gave the lowest p99 of 8,
/// 16, 32 and 48.
const BLIND_STEPS: usize = 8;

/// What a search knows about each group: not yet asked, passes, fails.
pub const UNKNOWN: u8 = 0;
pub const PASSES: u8 = 1;
pub const FAILS: u8 = 2;

#[derive(Debug)]
pub struct BoxTree {
    arity: usize,
    /// Nodes, `FAN` parts each, one record per part ([`Layout`]): its box,
    /// its entries `lo..hi` in tree order, the node that splits them
    /// further (0: a leaf; node 0 is the root and never a part), and its
    /// group summary. A node's parts sit together, so a visit reads a few
    /// adjacent cache lines.
    nodes: Box<[u32]>,
    /// Entries in tree order, one record each: the key (as `i32`), the
    /// entry's sorted position, its group.
    entries: Box<[u32]>,
    /// Groups per residue `g % 64`, and the residues in use.
    residues: [u16; 64],
    all: u64,
}

/// Where the fields of the records sit, in 32-bit words.
#[derive(Clone, Copy)]
struct Layout {
    arity: usize,
}

impl Layout {
    /// A part: `arity` minima, `arity` maxima, lo, hi, node, mask (2 words).
    fn part(self) -> usize {
        2 * self.arity + 5
    }
    fn node(self) -> usize {
        FAN * self.part()
    }
    fn lo(self) -> usize {
        2 * self.arity
    }
    fn hi(self) -> usize {
        2 * self.arity + 1
    }
    fn child(self) -> usize {
        2 * self.arity + 2
    }
    fn mask(self) -> usize {
        2 * self.arity + 3
    }
    /// An entry: `arity` key values, the sorted position, the group.
    fn entry(self) -> usize {
        self.arity + 2
    }
}

fn mask_of(part: &[u32], l: Layout) -> u64 {
    part[l.mask()] as u64 | (part[l.mask() + 1] as u64) << 32
}

impl BoxTree {
    fn layout(&self) -> Layout {
        Layout { arity: self.arity }
    }

    /// Builds the tree over sorted keys (`arity` each), or None when the
    /// table is outside the exact limits.
    pub fn build(keys: &[i64], arity: usize) -> Option<BoxTree> {
        let n = keys.len() / arity.max(1);
        if arity == 0
            || arity > MAX_ARITY
            || n == 0
            || n >= i32::MAX as usize
            || keys.iter().any(|&k| k.unsigned_abs() >= LIMIT as u64)
        {
            return None;
        }
        let l = Layout { arity };
        let mut b = Builder {
            keys,
            l,
            perm: (0..n as u32).collect(),
            nodes: Vec::new(),
        };
        b.node(0, n);
        let mut entries = Vec::with_capacity(n * l.entry());
        for &p in &b.perm {
            let k = &keys[p as usize * arity..(p as usize + 1) * arity];
            entries.extend(k.iter().map(|&x| x as i32 as u32));
            entries.extend([p, 0]);
        }
        Some(BoxTree {
            arity,
            nodes: b.nodes.into_boxed_slice(),
            entries: entries.into_boxed_slice(),
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
        let l = self.layout();
        for e in self.entries.chunks_exact_mut(l.entry()) {
            e[l.arity + 1] = local[e[l.arity] as usize];
        }
        self.residues = [0; 64];
        for g in 0..groups {
            self.residues[g % 64] += 1;
        }
        self.all = (0..64)
            .filter(|&r| self.residues[r] > 0)
            .fold(0, |m, r| m | 1 << r);
        // Nodes are numbered parents first: fill from the last.
        for node in (0..self.nodes.len() / l.node()).rev() {
            for j in 0..FAN {
                let at = node * l.node() + j * l.part();
                let p = &self.nodes[at..at + l.part()];
                let (lo, hi, child) = (p[l.lo()] as usize, p[l.hi()] as usize, p[l.child()]);
                let mask = if child != 0 {
                    let c = child as usize * l.node();
                    self.nodes[c..c + l.node()]
                        .chunks_exact(l.part())
                        .fold(0, |m, q| m | mask_of(q, l))
                } else {
                    self.entries[lo * l.entry()..hi * l.entry()]
                        .chunks_exact(l.entry())
                        .fold(0, |m, e| m | 1u64 << (e[l.arity + 1] % 64))
                };
                self.nodes[at + l.mask()] = mask as u32;
                self.nodes[at + l.mask() + 1] = (mask >> 32) as u32;
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
            l: self.layout(),
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
    l: Layout,
    perm: Vec<u32>,
    nodes: Vec<u32>,
}

impl Builder<'_> {
    fn coord(&self, p: u32, c: usize) -> i64 {
        self.keys[p as usize * self.l.arity + c]
    }

    /// Builds the node over `perm[lo..hi]`; returns its number.
    fn node(&mut self, lo: usize, hi: usize) -> u32 {
        let l = self.l;
        let number = self.nodes.len() / l.node();
        self.nodes.resize(self.nodes.len() + l.node(), 0);
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
                let (keys, arity) = (self.keys, l.arity);
                self.perm[a..b].select_nth_unstable_by_key(mid, |&p| keys[p as usize * arity + c]);
                next.push((a, a + mid));
                next.push((a + mid, b));
            }
            ranges = next;
        }
        for (j, &(a, b)) in ranges.iter().enumerate() {
            let at = number * l.node() + j * l.part();
            for c in 0..l.arity {
                let (mut min, mut max) = (i64::MAX, i64::MIN);
                for &p in &self.perm[a..b] {
                    let x = self.coord(p, c);
                    min = min.min(x);
                    max = max.max(x);
                }
                self.nodes[at + c] = min as i32 as u32;
                self.nodes[at + l.arity + c] = max as i32 as u32;
            }
            let child = if b - a > BUCKET { self.node(a, b) } else { 0 };
            self.nodes[at + l.lo()] = a as u32;
            self.nodes[at + l.hi()] = b as u32;
            self.nodes[at + l.child()] = child;
        }
        number as u32
    }

    /// The coordinate with the widest spread over `perm[a..b]`.
    fn widest(&self, a: usize, b: usize) -> usize {
        (0..self.l.arity)
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
    index: &'s BoxTree,
    l: Layout,
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

    /// The least distance any entry of a part (its record) can have.
    #[inline]
    fn bound(&self, part: &[u32]) -> u64 {
        let n = self.l.arity;
        let mut sum = 0;
        for c in 0..n {
            let (lo, hi, x) = (part[c] as i32 as i64, part[n + c] as i32 as i64, self.q[c]);
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
        let l = self.l;
        let record = &self.index.nodes[node * l.node()..(node + 1) * l.node()];
        let mut order = [(0u64, 0usize); FAN];
        let mut count = 0;
        for (j, part) in record.chunks_exact(l.part()).enumerate() {
            if part[l.lo()] == part[l.hi()] || mask_of(part, l) & self.alive == 0 {
                continue;
            }
            let lb = self.bound(part);
            if lb > self.best {
                continue;
            }
            // Insertion into the few parts kept, nearest first.
            let mut i = count;
            while i > 0 && order[i - 1].0 > lb {
                order[i] = order[i - 1];
                i -= 1;
            }
            order[i] = (lb, j);
            count += 1;
        }
        // Start every kept part's lines on their way from memory at once:
        // a cold table then costs a few round trips, not one per part.
        for &(_, j) in &order[..count] {
            let part = &record[j * l.part()..(j + 1) * l.part()];
            let lines = match part[l.child()] {
                0 => {
                    let e = l.entry();
                    &self.index.entries[part[l.lo()] as usize * e..part[l.hi()] as usize * e]
                }
                child => {
                    &self.index.nodes[child as usize * l.node()..(child as usize + 1) * l.node()]
                }
            };
            for line in lines.iter().step_by(16) {
                std::hint::black_box(*line);
            }
        }
        for &(lb, j) in &order[..count] {
            let part = &record[j * l.part()..(j + 1) * l.part()];
            if self.done || lb > self.best || mask_of(part, l) & self.alive == 0 {
                continue;
            }
            match part[l.child()] {
                0 => self.leaf(part[l.lo()] as usize, part[l.hi()] as usize),
                child => self.node(child as usize),
            }
        }
    }

    fn leaf(&mut self, lo: usize, hi: usize) {
        let (n, stride) = (self.l.arity, self.l.entry());
        let entries = &self.index.entries[lo * stride..hi * stride];
        for e in entries.chunks_exact(stride) {
            let g = e[n + 1] as usize;
            let known = self.state[g];
            if known == FAILS {
                continue;
            }
            let mut d = 0;
            for c in 0..n {
                d += self.term(self.q[c] - e[c] as i32 as i64);
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
            self.at.push(e[n]);
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
