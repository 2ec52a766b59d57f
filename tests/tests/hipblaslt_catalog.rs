//! The catalog reader on hipBLASLt's TensileLite catalogs from Debian sid's
//! `libhipblaslt1`, fetched and cached by `xtask::hipblaslt_catalog` (no
//! root). The counts are those `host/catalog/TENSILELITE.md` surveyed in
//! 7.1.1+dfsg-4 with Python's msgpack, independently of this reader; a
//! selected solution's predicates are re-evaluated here from the raw
//! MessagePack of its file, with the predicates' meanings written out
//! again from that survey (§6), not through the catalog crate's leaves.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use aqueduct::catalog::msgpack::{Reader, Value};
use aqueduct::catalog::{Catalog, DataType, LazyMapping, Problem, Transpose};
use xtask::catalog_queries::hipblaslt_problems;
use xtask::hipblaslt_catalog::{MAPPING, PROCESSORS, VERSION, fetch, hardware, root};

fn catalogs() -> (PathBuf, String) {
    fetch().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_lazy_mapping_names_every_child_catalog_once() {
    let (dir, version) = catalogs();
    let mapping = LazyMapping::open(dir.join(MAPPING)).unwrap_or_else(|e| panic!("{e}"));
    let children: Vec<(u32, &str)> = mapping.children().collect();
    let stems: BTreeSet<String> = children.iter().map(|(_, s)| s.to_string()).collect();
    assert_eq!(stems.len(), children.len(), "a child named twice");
    // The children on disk: every catalog but the lazy roots and the
    // mapping itself.
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("the cached catalogs")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".dat") && n != MAPPING && !n.starts_with("TensileLibrary_lazy_"))
        .map(|n| n.trim_end_matches(".dat").to_string())
        .collect();
    assert_eq!(stems, on_disk, "children named and children present");
    // Index 0 starts the first child; every boundary switches child.
    assert_eq!(children.first().map(|c| c.0), Some(0));
    for pair in children.windows(2) {
        let ((_, before), (start, after)) = (pair[0], pair[1]);
        assert_eq!(mapping.child_of(start - 1), Some(before));
        assert_eq!(mapping.child_of(start), Some(after));
    }
    if version == VERSION {
        assert_eq!(mapping.len(), 717);
        assert_eq!(children.last().map(|c| c.0), Some(85_958));
        for gfx in PROCESSORS {
            assert!(root(&dir, gfx).is_file(), "{gfx}");
        }
    } else {
        eprintln!("{version}, not {VERSION}: the version's own counts are not checked");
    }
}

/// Every solution index a Matching table of `file`'s tree leads to.
fn indices_in_tables(file: &aqueduct::catalog::File, out: &mut BTreeSet<i64>) {
    use aqueduct::catalog::library::{Node, Target};
    fn walk(node: &Node, file: &aqueduct::catalog::File, out: &mut BTreeSet<i64>) {
        match node {
            Node::Problem(rows) => rows.iter().for_each(|r| walk(&r.library, file, out)),
            Node::Matching(m) => {
                for t in m.targets.iter() {
                    if let Target::Solution(id) = t {
                        out.insert(file.solutions[*id as usize].index);
                    }
                }
            }
            Node::Single(id) => {
                out.insert(file.solutions[*id as usize].index);
            }
            other => panic!("a TensileLite child holds {other:?}"),
        }
    }
    walk(&file.root, file, out);
}

/// Every lazy root and every child file opens; each solution is found by
/// its index through the mapping, in the file the mapping names; and the
/// solutions no table leads to are the survey's 118.
#[test]
fn every_file_opens_and_every_solution_is_found_by_its_index() {
    let (dir, version) = catalogs();
    let mapping = LazyMapping::open(dir.join(MAPPING)).unwrap_or_else(|e| panic!("{e}"));
    let (mut files, mut solutions) = (0usize, 0usize);
    let mut all: BTreeSet<i64> = BTreeSet::new();
    let mut in_tables: BTreeSet<i64> = BTreeSet::new();
    for gfx in PROCESSORS {
        let catalog = Catalog::open_eager(root(&dir, gfx)).unwrap_or_else(|e| panic!("{gfx}: {e}"));
        assert!(
            catalog.file().solutions.is_empty(),
            "{gfx}: a lazy root holds no solutions"
        );
        let mut children = Vec::new();
        catalog.file().placeholders(&mut |p| children.push(p));
        assert!(!children.is_empty(), "{gfx}");
        // A second catalog, read lazily, finds solutions by index alone.
        let lazy = Catalog::open(root(&dir, gfx)).unwrap_or_else(|e| panic!("{gfx}: {e}"));
        for p in children {
            let child = p.child(None).unwrap_or_else(|e| panic!("{e}"));
            files += 1;
            for s in child.solutions.iter() {
                solutions += 1;
                assert!(all.insert(s.index), "solution {} twice", s.index);
                let found = lazy
                    .solution_by_index(&mapping, s.index)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .unwrap_or_else(|| panic!("{gfx}: solution {} not found by index", s.index));
                assert_eq!(found.solution.index, s.index);
                assert_eq!(found.solution.name, s.name);
                assert_eq!(found.file.prefix, child.prefix, "{}", s.index);
            }
            indices_in_tables(child, &mut in_tables);
        }
        // Another processor's index is not this catalog's.
        let foreign = PROCESSORS.iter().find(|&&g| g != gfx).copied();
        if let Some(other) = foreign {
            let theirs = Catalog::open_eager(root(&dir, other)).expect("opens");
            let mut one = None;
            theirs.file().placeholders(&mut |p| {
                one = one.or_else(|| p.child(None).ok()?.solutions.first().map(|s| s.index));
            });
            let one = one.expect("a solution");
            assert!(
                lazy.solution_by_index(&mapping, one)
                    .expect("reads")
                    .is_none(),
                "{gfx}"
            );
        }
    }
    let unreachable = all.difference(&in_tables).count();
    eprintln!("{files} child files, {solutions} solutions, {unreachable} in no table");
    assert_eq!(all.first(), Some(&0));
    assert_eq!(
        all.last().copied(),
        Some(all.len() as i64 - 1),
        "indices 0.. without a gap"
    );
    if version == VERSION {
        assert_eq!((files, solutions, unreachable), (717, 87_426, 118));
    }
}

// ---------------------------------------------------------------------------
// An independent judge: a solution's predicates from the raw file
// ---------------------------------------------------------------------------

fn int(v: &Value) -> i64 {
    match v {
        Value::UInt(u) => *u as i64,
        Value::Int(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

fn text(v: &Value) -> &str {
    match v {
        Value::Str(s) => s,
        other => panic!("not a string: {other:?}"),
    }
}

fn flag(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        other => panic!("not a boolean: {other:?}"),
    }
}

fn list(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

/// The sizes and settings a query poses, as TENSILELITE.md §5 names them.
struct Posed<'a> {
    p: &'a Problem,
    gfx: &'a str,
    cus: u32,
}

fn type_name(t: DataType) -> String {
    t.to_string()
}

/// TENSILELITE.md §6: each predicate's meaning, for the problems this test
/// poses (plain GEMMs: no bias, activation, scaling, E, grouping, swizzle;
/// `params.gsu` 0).
fn holds(pred: &Value, q: &Posed<'_>, size_mapping: &Value) -> bool {
    let p = q.p;
    let ty = text(pred.get("type").expect("type"));
    let value = pred.get("value");
    let v = || value.expect("value");
    let ceil = |a: u64, b: i64| (a as f64 / b as f64).ceil();
    match ty {
        "And" => list(v()).iter().all(|x| holds(x, q, size_mapping)),
        "TruePred" => true,
        "AMDGPU" => holds(v(), q, size_mapping),
        "Processor" => text(v()) == q.gfx,
        "CUCount" => int(v()) == i64::from(q.cus),
        "WorkspaceCheck" => {
            // No workspace is posed: only a solution without a split runs.
            assert_eq!(p.workspace_size, 0);
            int(size_mapping.get("globalSplitU").expect("GSU")) <= 1
        }
        "OperationIdentifierEqual" => text(v()) == p.operation_identifier(),
        "TypesEqual" => {
            let want = [p.a_type, p.b_type, p.c_type, p.d_type, p.compute_input_type];
            let names: Vec<&str> = list(v()).iter().map(text).collect();
            names == want.map(type_name)
        }
        "HighPrecisionAccumulate" => flag(v()) == p.high_precision_accumulate,
        // Plain problems ask for none of these features: a kernel with
        // them serves a problem without them, except where the kernel's
        // value must equal the problem's.
        "BiasDataTypeWhiteList" | "BiasSrcWhiteList" | "ActivationEnumWhiteList" => true,
        "Activation" | "ActivationComputeType" | "UseBias" | "DataTypeE" => true,
        "UseScaleAB" | "UseScaleCD" | "UseScaleAlphaVec" | "SupportDeviceUserArguments" => true,
        "AmaxDCheck" | "ActivationNoGuard" | "UseGradient" | "UseE" | "GroupedGemm" => !flag(v()),
        "SwizzleTensorA" | "SwizzleTensorB" | "DeterministicMode" => !flag(v()),
        "StridedBatched" => flag(v()),
        "Sparse" => int(v()) == 0,
        "F32XdlMathOp" => text(v()) == "Float",
        "KernelLanguageCompatible" => true,
        "LeadingFree0SizesGreaterOrEqual" => p.m as i64 >= int(v()),
        "LeadingFree1SizesGreaterOrEqual" => p.n as i64 >= int(v()),
        "Free0SizeMultiple" => p.m as i64 % int(v()) == 0,
        "Free1SizeMultiple" => p.n as i64 % int(v()) == 0,
        "BoundSizeMultiple" => p.k as i64 % int(v()) == 0,
        "WorkgroupNumberCheck" => {
            let w = list(v());
            let gsu = int(&w[2]);
            gsu == -1
                || ceil(p.m, int(&w[0]))
                    * ceil(p.n, int(&w[1]))
                    * gsu.max(1) as f64
                    * p.batch as f64
                    <= 16_777_216.0
        }
        "GlobalSplitUCheckMinK" => {
            let w = list(v());
            let gsu = int(&w[1]);
            gsu == 1 || gsu == -1 || p.k as i64 >= gsu * int(&w[0])
        }
        "WorkgroupMappingXCCCheck" => {
            let w = list(v());
            let xcc = int(&w[0]);
            xcc == -1 || (xcc > 0 && (xcc & (xcc - 1)) == 0)
        }
        "SynchronizerSizeCheck" => {
            let w = list(v());
            let gsu = int(&w[5]);
            gsu == 1
                || gsu == -1
                || ceil(p.m, int(&w[0]))
                    * ceil(p.n, int(&w[1]))
                    * (int(&w[2]) * int(&w[3]) * int(&w[4])) as f64
                    * p.batch as f64
                    <= 409_600.0
        }
        "BufferLoadOffsetLimitCheck" => {
            let field = |k: &str| int((v()).get(k).expect(k)) as u128;
            let (sa, sb) = (
                p.a_type.element_bytes() as u128,
                p.b_type.element_bytes() as u128,
            );
            (p.lda as u128 * field("DUorMT0") + field("ShiftPtrElemA")) * sa < 1 << 32
                && (p.ldb as u128 * field("DUorMT1") + field("ShiftPtrElemB")) * sb < 1 << 32
        }
        "BufferLoadOffsetLimitCheck_Beta" => {
            p.beta == 0.0
                || p.ldc as u128 * p.c_type.element_bytes() as u128 * (int(v()) as u128) < 1 << 32
        }
        "BufferStoreOffsetLimitCheck" => {
            p.ldd as u128 * p.d_type.element_bytes() as u128 * (int(v()) as u128) < 1 << 32
        }
        other => panic!("a predicate this judge does not know: {other}"),
    }
}

/// Raw solution maps of the files a test met, by file and index.
struct RawFile {
    solutions: HashMap<i64, Value>,
    library: Value,
}

#[derive(Default)]
struct RawSolutions(HashMap<PathBuf, RawFile>);

impl RawSolutions {
    fn file(&mut self, file: &Path) -> &RawFile {
        self.0.entry(file.to_path_buf()).or_insert_with(|| {
            let bytes = std::fs::read(file).expect("the child file");
            let mut r = Reader::from_bytes(&bytes);
            let whole = r.value(64).expect("MessagePack");
            let Some(Value::Array(list)) = whole.get("solutions").cloned() else {
                panic!("{}: no solutions", file.display());
            };
            RawFile {
                solutions: list
                    .into_iter()
                    .map(|s| (int(s.get("index").expect("index")), s))
                    .collect(),
                library: whole.get("library").expect("library").clone(),
            }
        })
    }

    fn get(&mut self, file: &Path, index: i64) -> &Value {
        &self.file(file).solutions[&index]
    }
}

/// Whether raw solution `sol` may run the posed problem: its hardware,
/// problem and task predicates, by [`holds`].
fn runs(sol: &Value, q: &Posed<'_>) -> bool {
    let sm = sol.get("sizeMapping").expect("sizeMapping");
    ["hardwarePredicate", "problemPredicate", "taskPredicate"]
        .iter()
        .all(|key| holds(sol.get(key).expect(key), q, sm))
}

/// A child file's answer, worked out from its raw MessagePack with
/// TENSILELITE.md's rules and nothing of the catalog crate: its rows in
/// order (a row whose table answers nothing falls through); an Equality
/// table answers its entry with the query's key if that entry's solution
/// runs (`None` when several entries share the key: their order is
/// libstdc++'s sort's, not the file's); a GridBased table by §8.4's walk,
/// in linear scans. Returns the chosen entry's key and solution index.
fn raw_answer(file: &RawFile, q: &Posed<'_>) -> Option<Option<([i64; 4], i64)>> {
    let p = q.p;
    let query = [p.m as i64, p.n as i64, p.batch as i64, p.k as i64];
    for row in list(file.library.get("rows").expect("rows")) {
        let pred = row.get("predicate").expect("predicate");
        let accepted = match text(pred.get("type").expect("type")) {
            "TruePred" | "EqualityMatching" => true,
            _ => holds(pred, q, &Value::Nil),
        };
        if !accepted {
            continue;
        }
        let table = row.get("library").expect("library");
        let entries: Vec<([i64; 4], i64)> = list(table.get("table").expect("table"))
            .iter()
            .map(|e| {
                let k: Vec<i64> = list(e.get("key").expect("key")).iter().map(int).collect();
                (
                    [k[0], k[1], k[2], k[3]],
                    int(e.get("index").expect("index")),
                )
            })
            .collect();
        let ok = |i: usize| runs(&file.solutions[&entries[i].1], q);
        let found = match text(table.get("distance").expect("distance")) {
            "Equality" => {
                let same: Vec<usize> = (0..entries.len())
                    .filter(|&i| entries[i].0 == query)
                    .collect();
                match same.len() {
                    0 => None,
                    1 => ok(same[0]).then_some(same[0]),
                    _ => return None,
                }
            }
            "GridBased" => grid_walk(&entries, query, ok),
            other => panic!("distance {other}"),
        };
        if let Some(i) = found {
            return Some(Some(entries[i]));
        }
    }
    Some(None)
}

/// TENSILELITE.md §8.4's walk for one solution, over entries sorted by
/// key, in plain linear scans.
fn grid_walk(t: &[([i64; 4], i64)], mut q: [i64; 4], ok: impl Fn(usize) -> bool) -> Option<usize> {
    let len = t.len();
    let first_from = |from: usize, to: usize, c: usize, v: i64| {
        (from..to).find(|&i| t[i].0[c] >= v).unwrap_or(to)
    };
    let run_end =
        |at: usize, to: usize, c: usize| (at..to).find(|&i| t[i].0[c] != t[at].0[c]).unwrap_or(to);
    let (mut from, mut b_lo, mut first) = (0, 0, true);
    while from < len {
        let m_lo = first_from(from, len, 0, q[0].min(t[len - 1].0[0]));
        if m_lo >= len {
            break;
        }
        let m_end = run_end(m_lo, len, 0);
        let n_lo = first_from(m_lo, m_end, 1, q[1].min(t[m_end - 1].0[1]));
        let cell_end = run_end(n_lo, m_end, 1);
        b_lo = first_from(n_lo, cell_end, 2, q[2].min(t[cell_end - 1].0[2]));
        let b_hi = run_end(b_lo, cell_end, 2);
        let mut best: Option<usize> = None;
        for i in b_lo..b_hi {
            let d = (q[3] - t[i].0[3]).abs();
            if best.is_none_or(|b| d <= (q[3] - t[b].0[3]).abs()) && ok(i) {
                best = Some(i);
            }
        }
        if first {
            first = false;
            if q[2] != 1 {
                let folded = if q[0] > q[1] { 0 } else { 1 };
                q[folded] *= q[2];
                q[2] = 1;
                if t[best.unwrap_or(0)].0[2] == 1 {
                    from = 0;
                    continue;
                }
            }
        }
        if best.is_some() || b_hi == len {
            return best.or_else(|| (0..b_lo).rev().find(|&i| ok(i)));
        }
        from = cell_end;
    }
    (0..b_lo).rev().find(|&i| ok(i))
}

/// A few hundred plain GEMMs per processor, on [`hardware`] (gfx90a's
/// CU104 rows are tried too): what the lazy catalog selects, an eagerly
/// loaded one selects, a selector's plans select (on an eager catalog, and
/// on a lazy one whose plans are built again as children are read) and a
/// walk of GridBased tables cell by cell selects are the same solution; it is the entry the
/// test works out itself from the child's raw file ([`raw_answer`]); and
/// its own predicates hold for the problem (judged from the raw file).
#[test]
fn selections_agree_and_their_predicates_hold() {
    let (dir, _) = catalogs();
    let mut raw = RawSolutions::default();
    let problems = hipblaslt_problems(300 * PROCESSORS.len(), 22);
    let (mut asked, mut answered, mut independent) = (0usize, 0usize, 0usize);
    for (gfx, problems) in PROCESSORS.iter().copied().zip(problems.chunks(300)) {
        let hw = hardware(gfx);
        let cus = hw.cu_count;
        let lazy = Catalog::open(root(&dir, gfx)).unwrap_or_else(|e| panic!("{e}"));
        let eager = Catalog::open_eager(root(&dir, gfx)).unwrap_or_else(|e| panic!("{e}"));
        let selector = eager.selector(hw.clone());
        let lazy_plans = Catalog::open(root(&dir, gfx)).unwrap_or_else(|e| panic!("{e}"));
        let lazy_selector = lazy_plans.selector(hw.clone());
        let mut found_here = 0;
        for p in problems {
            let a = lazy.select(p, &hw).unwrap_or_else(|e| panic!("{e}"));
            let b = eager.select(p, &hw).unwrap_or_else(|e| panic!("{e}"));
            let c = selector
                .select_uncached(p)
                .unwrap_or_else(|e| panic!("{e}"));
            let d = eager
                .select_walking(p, &hw)
                .unwrap_or_else(|e| panic!("{e}"));
            let e = lazy_selector
                .select_uncached(p)
                .unwrap_or_else(|e| panic!("{e}"));
            let index = |s: &Option<aqueduct::catalog::Selected<'_>>| {
                s.map(|s| (s.solution.index, s.fitness))
            };
            assert_eq!(index(&a), index(&b), "{gfx} {p:?}: lazy vs eager");
            assert_eq!(index(&b), index(&c), "{gfx} {p:?}: tree vs plan");
            assert_eq!(index(&b), index(&d), "{gfx} {p:?}: fast vs cell by cell");
            assert_eq!(index(&b), index(&e), "{gfx} {p:?}: tree vs lazy plan");
            asked += 1;
            let Some(s) = a else { continue };
            found_here += 1;
            let file = s.file.path.clone().expect("a child file");
            let q = Posed { p, gfx, cus };
            // The child's own answer, worked out independently: the same
            // entry (key and solution; among equal keys any of them).
            if let Some(expected) = raw_answer(raw.file(&file), &q) {
                let (key, index) = expected.unwrap_or_else(|| {
                    panic!("{gfx} {p:?}: the child answers nothing by the raw walk")
                });
                let raw_file = raw.file(&file);
                let same_key = |i: i64| {
                    list(raw_file.library.get("rows").expect("rows"))
                        .iter()
                        .any(|row| {
                            let table = row.get("library").expect("library");
                            list(table.get("table").expect("table")).iter().any(|e| {
                                int(e.get("index").expect("index")) == i
                                    && list(e.get("key").expect("key")).iter().map(int).eq(key)
                            })
                        })
                };
                assert!(
                    index == s.solution.index || same_key(s.solution.index),
                    "{gfx} {p:?}: chose {} (fitness {}), the raw walk {index} at {key:?}",
                    s.solution.index,
                    s.fitness
                );
                independent += 1;
            }
            let sol = raw.get(&file, s.solution.index);
            let sm = sol.get("sizeMapping").expect("sizeMapping");
            for key in ["hardwarePredicate", "problemPredicate", "taskPredicate"] {
                let pred = sol.get(key).expect(key);
                assert!(
                    holds(pred, &q, sm),
                    "{gfx} {p:?}: solution {} fails its {key}",
                    s.solution.index
                );
            }
        }
        // Not a vacuous pass: most classes have solutions on every
        // processor (fp8 only on gfx12, int8 not everywhere).
        assert!(
            found_here >= 120,
            "{gfx}: only {found_here} of 300 queries answered"
        );
        answered += found_here;
    }
    eprintln!("{answered} of {asked} queries answered, {independent} checked against the raw walk");
    assert!(
        independent * 10 >= answered * 9,
        "most answers checked against the raw walk"
    );
}

/// A traced selection on the MI210 shows the CU104 row, the TensileLite
/// predicates by name, the task predicate and the GridBased walk.
#[test]
fn a_traced_selection_names_the_tensilelite_predicates() {
    let (dir, _) = catalogs();
    let catalog = Catalog::open(root(&dir, "gfx90a")).unwrap_or_else(|e| panic!("{e}"));
    let p = Problem::hipblaslt(
        Transpose::None,
        Transpose::Transpose,
        1000,
        1000,
        1000,
        DataType::Half,
        DataType::Half,
        DataType::Half,
        DataType::Float,
    );
    let (selected, trace) = catalog.select_traced(&p, &hardware("gfx90a"));
    let selected = selected.expect("reads").expect("a solution");
    for name in [
        "CUCount",
        "TypesEqual",
        "[Half, Half, Half, Half, Half]",
        "UseScaleAB",
        "SupportDeviceUserArguments",
        "WorkgroupNumberCheck",
        "GlobalSplitUCheckMinK",
        "WorkspaceCheck",
        "GridBased: query",
    ] {
        assert!(trace.contains(name), "{name} not in the trace:\n{trace}");
    }
    assert!(trace.contains(&format!("RESULT: solution {}", selected.solution.index)));
}

/// The two-thread streaming reader (children of 4 MB and more: the ten
/// largest here) builds the same catalog as the one-pass reader over the
/// same bytes in memory, written back byte for byte; and the same leaf
/// table and leaf ids.
#[test]
fn the_parallel_and_sequential_readers_agree_on_the_largest_children() {
    let (dir, _) = catalogs();
    let mut children: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
        .expect("the cached catalogs")
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            (name.ends_with(".dat") && name != MAPPING && !name.starts_with("TensileLibrary_lazy_"))
                .then(|| Some((e.metadata().ok()?.len(), e.path())))?
        })
        .collect();
    children.sort();
    let largest = &children[children.len().saturating_sub(10)..];
    assert!(
        largest.iter().all(|(size, _)| *size >= 4 << 20),
        "{largest:?}"
    );
    for (_, path) in largest {
        let bytes = std::fs::read(path).expect("readable");
        let sequential = Catalog::from_msgpack(&bytes).unwrap_or_else(|e| panic!("{e}"));
        let parallel = Catalog::open(path).unwrap_or_else(|e| panic!("{e}"));
        let (s, p) = (sequential.file(), parallel.file());
        assert_eq!(s.leaves, p.leaves, "{}", path.display());
        for (a, b) in s.solutions.iter().zip(p.solutions.iter()) {
            assert_eq!(a.problem_predicate.leaf_ids, b.problem_predicate.leaf_ids);
        }
        assert!(
            sequential.to_msgpack() == parallel.to_msgpack(),
            "{}",
            path.display()
        );
    }
}

/// The gfx1201 kernel `sim_rocblas` and `sim-bench` run as "hipBLASLt's
/// choice at 512³" is the one the package's catalog selects for a 512³
/// f16 NN GEMM (f32 compute) on an RX 9070 XT (64 CUs): its code-object
/// symbol is the selected solution's name without the fields the host
/// passes at launch (GSU, StaggerU, WorkGroupMapping).
#[test]
fn the_512_cube_kernel_is_the_one_hipblaslt_selects_on_an_rx_9070_xt() {
    let (dir, _) = catalogs();
    let hw = aqueduct::catalog::Hardware::new("gfx1201", 64, None);
    let catalog = Catalog::open(root(&dir, "gfx1201")).unwrap_or_else(|e| panic!("{e}"));
    let p = Problem::hipblaslt(
        Transpose::None,
        Transpose::None,
        512,
        512,
        512,
        DataType::Half,
        DataType::Half,
        DataType::Half,
        DataType::Float,
    );
    let selected = catalog
        .select(&p, &hw)
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a solution");
    let host_fields = ["GSU1", "GSUC0", "GSUWGMRR0", "SU32", "SUM0", "SUS256"];
    let name = selected.solution.name.to_string();
    let name = name.split("_WGM8_").next().expect("a name");
    let symbol: Vec<&str> = name
        .split('_')
        .filter(|f| !host_fields.contains(f))
        .collect();
    let kernel = xtask::tensile_gemm::HIPBLASLT_GFX1201
        .iter()
        .find(|k| k.what.contains("choice at 512³"))
        .expect("the 512³ kernel");
    assert_eq!(symbol.join("_"), kernel.name);
}
