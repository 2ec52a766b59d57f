//! Writing catalogs: `cargo xtask catalog` turns a description file into
//! Tensile-layout catalogs (eager or lazy), and [`split_lazy`] rewrites a
//! whole catalog into Tensile's lazy layout.
//!
//! A description is YAML:
//!
//! ```yaml
//! lazy: true                     # write TensileLibrary_lazy_<gfx> + children
//! format: msgpack                # or yaml
//! layout: tensile                # or tensilelite (below)
//! hardware:                      # one row per entry; rows are sorted with
//!   - processor: gfx942          # the chip-ID-aware comparator
//!     cu_count: 304              # optional
//!     chip_ids: [0x74a1]         # optional; two or more become an Or
//!     problems:
//!       - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
//!         types: [Float, Float, Float, Float]
//!         high_precision_accumulate: false
//!         distance: Euclidean    # optional (default Euclidean)
//!         solutions:
//!           - name: saxpy_f32                # kernel symbol
//!             code_object: aqueduct-device.hsaco
//!             macro_tile: [64, 64, 1]        # optional tile sizes
//!             work_group: [256, 1, 1]
//!             predicates:                    # optional extra problem
//!               - {type: Free0SizeMultiple, index: 0, value: 4}
//!             sizes: [[1024, 1024, 1024, 12.5]]  # M, N, K, speed
//! ```
//!
//! Each solution gets Tensile's standard problem predicates (operation,
//! types, accumulate) plus its own; a problem with `sizes` becomes a
//! Matching table over (FreeSizeA, FreeSizeB, BoundSize), one without
//! becomes a Single. Solution indices are assigned in description order.
//!
//! `layout: tensilelite` writes hipBLASLt's TensileLite form instead
//! (`host/catalog/TENSILELITE.md`): `TypesEqual` with the compute-input
//! type as a fifth entry; every problem row and solution carries
//! TensileLite's feature leaves set for a kernel without epilogue
//! features (no activation, bias, E output, scaling, grouping, sparsity
//! or swizzle), so problems asking for those never select it; each
//! solution has a `kernelName` and the `WorkspaceCheck` task predicate;
//! sizes become a `GridBased` table over (M, N, batch 1, K) (no speeds);
//! a lazy split also writes `TensileLiteLibrary_lazy_Mapping.dat` (least
//! solution index of each child → its stem). Hardware rows keep their
//! chip-ID predicates.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use aqueduct_catalog::hardware::compare_rows;
use aqueduct_catalog::library::{Node, SolutionId, Target};
use aqueduct_catalog::msgpack::{Reader, Value, Writer};
use aqueduct_catalog::{Catalog, DataType, yaml};

// ---------------------------------------------------------------------------
// Lazy split of an existing catalog
// ---------------------------------------------------------------------------

fn solutions_in(node: &Node, out: &mut BTreeSet<SolutionId>) {
    match node {
        Node::Hardware(rows) => rows.iter().for_each(|r| solutions_in(&r.library, out)),
        Node::Problem(rows) => rows.iter().for_each(|r| solutions_in(&r.library, out)),
        Node::ProblemMap(m) => m.entries.iter().for_each(|(_, n)| solutions_in(n, out)),
        Node::Single(id) => {
            out.insert(*id);
        }
        Node::Matching(m) => {
            for t in m.targets.iter() {
                if let Target::Solution(id) = t {
                    out.insert(*id);
                }
            }
            m.values.iter().for_each(|n| solutions_in(n, out));
        }
        Node::DecisionTree(f) => f.trees.iter().for_each(|t| solutions_in(&t.value, out)),
        Node::Placeholder(_) => {}
    }
}

struct Splitter<'a> {
    catalog: &'a Catalog,
    dir: &'a Path,
    suffix: &'a str,
    written: Vec<PathBuf>,
    names: BTreeSet<String>,
    /// Each child's solution indices: least, greatest, how many, its stem.
    ranges: Vec<(i64, i64, usize, String)>,
}

impl Splitter<'_> {
    fn index_of(&self, id: SolutionId) -> i64 {
        self.catalog.file().solutions[id as usize].index
    }

    /// Writes `node` as a child file and returns its placeholder name.
    fn child(&mut self, node: &Node, stem: &str) -> Result<String, String> {
        let mut name = stem.to_string();
        let mut n = 1;
        while !self.names.insert(name.clone()) {
            n += 1;
            name = format!("{stem}_{n}");
        }
        let mut ids = BTreeSet::new();
        solutions_in(node, &mut ids);
        let sols = &self.catalog.file().solutions;
        let indices: Vec<i64> = ids.iter().map(|&id| sols[id as usize].index).collect();
        if let (Some(lo), Some(hi)) = (indices.iter().min(), indices.iter().max()) {
            self.ranges.push((*lo, *hi, indices.len(), name.clone()));
        }
        let mut w = Writer::new();
        w.map(2);
        w.str("solutions");
        w.array(ids.len());
        ids.iter().for_each(|&id| sols[id as usize].encode(&mut w));
        w.str("library");
        node.encode(&mut w, &|id| self.index_of(id));
        self.write(&format!("{name}{}", self.suffix), &w.out)?;
        Ok(name)
    }

    fn write(&mut self, file: &str, msgpack: &[u8]) -> Result<(), String> {
        let path = self.dir.join(file);
        let bytes = if self.suffix == ".yaml" {
            yaml::from_msgpack(msgpack)?.into_bytes()
        } else {
            msgpack.to_vec()
        };
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        self.written.push(path);
        Ok(())
    }
}

fn placeholder(w: &mut Writer, name: &str) {
    w.map(2);
    w.str("type");
    w.str("Placeholder");
    w.str("value");
    w.str(name);
}

/// Tensile's one-letter (or few-letter) precision codes (`DataType.toChar`).
fn precision(t: DataType) -> &'static str {
    match t {
        DataType::Float => "S",
        DataType::Double => "D",
        DataType::ComplexFloat => "C",
        DataType::ComplexDouble => "Z",
        DataType::Half => "H",
        DataType::BFloat16 => "B",
        DataType::Int32 => "I",
        DataType::Int8x4 => "4xi8",
        DataType::Int8 => "I8",
        DataType::Int64 => "I64",
        DataType::XFloat32 => "X",
        DataType::Float8 => "F8",
        DataType::BFloat8 => "B8",
        DataType::Float8BFloat8 => "F8B8",
        DataType::BFloat8Float8 => "B8F8",
        DataType::E8 => "E8",
        DataType::Float4 => "F4",
        DataType::Float6 => "F6",
        DataType::BFloat6 => "B6",
    }
}

/// A lazy child's type part, as Tensile names it: A's and C's precision
/// codes (`SS`, `HH`, `BB`), then `_HPA` for high-precision accumulate,
/// then TensileLite's `_MXA<scale type>B<block>` and `_MXB..` for block
/// scales.
fn type_code(pred: &aqueduct_catalog::predicate::ProblemPredicate) -> String {
    use aqueduct_catalog::predicate::{ProblemLeafKind as Kind, Value};
    let mut code = String::new();
    let mut hpa = false;
    let (mut mx_a, mut mx_b) = (0, 0);
    pred.leaves(&mut |l| match (l.kind, &l.value) {
        (Kind::TypesEqual, Value::Types(t, _)) => {
            code = format!("{}{}", precision(t[0]), precision(t[2]))
        }
        (Kind::HighPrecisionAccumulate, Value::Bool(true)) => hpa = true,
        (Kind::MxBlockA, Value::U64(n)) => mx_a = *n,
        (Kind::MxBlockB, Value::U64(n)) => mx_b = *n,
        _ => {}
    });
    if code.is_empty() {
        code = "Any".into();
    }
    if hpa {
        code.push_str("_HPA");
    }
    // The scale type is E8 wherever aqueduct writes a block.
    for (side, block) in [("A", mx_a), ("B", mx_b)] {
        if block != 0 {
            code.push_str(&format!("_MX{side}E8B{block}"));
        }
    }
    code
}

/// Rewrites `catalog` (a Hardware root) into Tensile's lazy layout in `dir`:
/// `TensileLibrary_lazy_<gfx>.dat` per processor, holding that processor's
/// hardware rows (and the catalog's TruePred rows) down to the Problem
/// rows, whose libraries become placeholders for
/// `TensileLibrary_Type_<types>_<operation>_<gfx>[_CU<n>].dat` children.
/// Returns every file written.
pub fn split_lazy(catalog: &Catalog, dir: &Path) -> Result<Vec<PathBuf>, String> {
    split_lazy_as(catalog, dir, ".dat")
}

pub fn split_lazy_as(catalog: &Catalog, dir: &Path, suffix: &str) -> Result<Vec<PathBuf>, String> {
    let Node::Hardware(rows) = &catalog.file().root else {
        return Err("only a catalog whose root is a Hardware node can be split".into());
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut s = Splitter {
        catalog,
        dir,
        suffix,
        written: Vec::new(),
        names: BTreeSet::new(),
        ranges: Vec::new(),
    };
    let keys: Vec<_> = rows.iter().map(|r| r.predicate.row_key()).collect();
    let processors: BTreeSet<String> = keys.iter().filter_map(|k| k.processor.clone()).collect();
    for proc in &processors {
        let mine: Vec<usize> = (0..rows.len())
            .filter(|&i| keys[i].processor.as_deref() == Some(proc.as_str()) || keys[i].always)
            .collect();
        let mut w = Writer::new();
        w.map(2);
        w.str("solutions");
        w.array(0);
        w.str("library");
        w.map(2);
        w.str("type");
        w.str("Hardware");
        w.str("rows");
        w.array(mine.len());
        for &i in &mine {
            let row = &rows[i];
            let arch = if keys[i].always {
                "fallback".to_string()
            } else {
                match keys[i].cu_count {
                    Some(cu) => format!("{proc}_CU{cu}"),
                    None => proc.clone(),
                }
            };
            w.map(2);
            w.str("predicate");
            row.predicate.encode(&mut w);
            w.str("library");
            match &row.library {
                Node::ProblemMap(map) => {
                    w.map(3);
                    w.str("type");
                    w.str("ProblemMap");
                    w.str("property");
                    w.map(1);
                    w.str("type");
                    w.str("OperationIdentifier");
                    w.str("map");
                    w.map(map.entries.len());
                    for (op, node) in &map.entries {
                        w.str(op);
                        match node {
                            Node::Problem(prows) => {
                                w.map(2);
                                w.str("type");
                                w.str("Problem");
                                w.str("rows");
                                w.array(prows.len());
                                for pr in prows.iter() {
                                    w.map(2);
                                    w.str("predicate");
                                    pr.predicate.encode(&mut w);
                                    w.str("library");
                                    let stem = format!(
                                        "TensileLibrary_Type_{}_{op}_{arch}",
                                        type_code(&pr.predicate)
                                    );
                                    let name = s.child(&pr.library, &stem)?;
                                    placeholder(&mut w, &name);
                                }
                            }
                            other => {
                                let name =
                                    s.child(other, &format!("TensileLibrary_Type_{op}_{arch}"))?;
                                placeholder(&mut w, &name);
                            }
                        }
                    }
                }
                other => {
                    let name = s.child(other, &format!("TensileLibrary_{arch}"))?;
                    placeholder(&mut w, &name);
                }
            }
        }
        s.write(&format!("TensileLibrary_lazy_{proc}{suffix}"), &w.out)?;
    }
    if catalog
        .file()
        .solutions
        .iter()
        .any(|s| s.task_predicate.is_some())
    {
        let mapping = lazy_mapping(&mut s.ranges)?;
        s.write(
            &format!("TensileLiteLibrary_lazy_Mapping{suffix}"),
            &mapping,
        )?;
    }
    Ok(s.written)
}

/// TensileLite's lazy mapping file (least solution index of each child →
/// its stem, as `aqueduct_catalog::LazyMapping` reads it) for children
/// whose indices are each one contiguous run, the runs not overlapping.
fn lazy_mapping(ranges: &mut [(i64, i64, usize, String)]) -> Result<Vec<u8>, String> {
    ranges.sort();
    for (i, (lo, hi, n, name)) in ranges.iter().enumerate() {
        if *lo < 0 || (hi - lo + 1) as usize != *n {
            return Err(format!(
                "child {name}: solution indices {lo}..={hi} are not one run of {n}: a TensileLite mapping cannot name it"
            ));
        }
        if let Some((next, _, _, other)) = ranges.get(i + 1)
            && next <= hi
        {
            return Err(format!(
                "children {name} and {other} share solution indices"
            ));
        }
    }
    let mut w = Writer::new();
    w.map(ranges.len());
    for (lo, _, _, name) in ranges.iter() {
        w.u64(*lo as u64);
        w.str(name);
    }
    Ok(w.out)
}

// ---------------------------------------------------------------------------
// Catalogs from a description
// ---------------------------------------------------------------------------

fn list(v: Option<&Value>) -> &[Value] {
    match v {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

fn text<'v>(v: &'v Value, key: &str, at: &str) -> Result<&'v str, String> {
    match v.get(key) {
        Some(Value::Str(s)) => Ok(s),
        _ => Err(format!("{at}: `{key}` must be a string")),
    }
}

fn uint(v: &Value) -> Option<u64> {
    match v {
        Value::UInt(u) => Some(*u),
        _ => None,
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::UInt(u) => Some(*u as f64),
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn ints3(v: Option<&Value>, default: [i64; 3], at: &str) -> Result<Vec<i64>, String> {
    match v {
        None => Ok(default.to_vec()),
        Some(Value::Array(items)) if (1..=3).contains(&items.len()) => items
            .iter()
            .map(|x| {
                uint(x)
                    .map(|u| u as i64)
                    .ok_or_else(|| format!("{at}: tile sizes must be integers"))
            })
            .collect(),
        Some(_) => Err(format!("{at}: expected a list of 1 to 3 integers")),
    }
}

fn s(v: &str) -> Value {
    Value::Str(v.into())
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (s(k), v)).collect())
}

fn typed(ty: &str, value: Option<Value>) -> Value {
    let mut e = vec![("type", s(ty))];
    if let Some(v) = value {
        e.push(("value", v));
    }
    map(e)
}

/// The standard problem predicates Tensile gives every solution of a type.
fn type_predicates(op: &str, types: &[Value], hpa: bool) -> Vec<Value> {
    vec![
        typed("OperationIdentifierEqual", Some(s(op))),
        typed("TypesEqual", Some(Value::Array(types.to_vec()))),
        typed("HighPrecisionAccumulate", Some(Value::Bool(hpa))),
    ]
}

/// Builds the catalogs a description asks for in `out`; returns the files.
pub fn from_description(desc_path: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    let text_in =
        std::fs::read_to_string(desc_path).map_err(|e| format!("{}: {e}", desc_path.display()))?;
    from_description_text(&text_in, out).map_err(|e| format!("{}: {e}", desc_path.display()))
}

/// [`from_description`] of a description held in memory.
pub fn from_description_text(text_in: &str, out: &Path) -> Result<Vec<PathBuf>, String> {
    let bytes = yaml::to_msgpack(text_in)?;
    let desc = Reader::from_bytes(&bytes)
        .value(64)
        .map_err(|e| e.to_string())?;
    let lazy = matches!(desc.get("lazy"), Some(Value::Bool(true)));
    let suffix = match desc.get("format") {
        None => ".dat",
        Some(Value::Str(f)) if f == "msgpack" => ".dat",
        Some(Value::Str(f)) if f == "yaml" => ".yaml",
        Some(other) => return Err(format!("format must be msgpack or yaml, not {other:?}")),
    };
    let lite = match desc.get("layout") {
        None => false,
        Some(Value::Str(l)) if l == "tensile" => false,
        Some(Value::Str(l)) if l == "tensilelite" => true,
        Some(other) => {
            return Err(format!(
                "layout must be tensile or tensilelite, not {other:?}"
            ));
        }
    };
    let mut solutions = Vec::new();
    let mut rows = Vec::new();
    for (hi, hw) in list(desc.get("hardware")).iter().enumerate() {
        let at = format!("hardware[{hi}]");
        let processor = text(hw, "processor", &at)?;
        if !aqueduct_catalog::hardware::is_processor_name(processor) {
            return Err(format!("{at}: {processor:?} is not a gfx processor name"));
        }
        let mut parts = vec![typed("Processor", Some(s(processor)))];
        if let Some(cu) = hw.get("cu_count") {
            let cu = uint(cu).ok_or_else(|| format!("{at}: cu_count must be an integer"))?;
            parts.push(typed("CUCount", Some(Value::UInt(cu))));
        }
        let chips: Vec<Value> = list(hw.get("chip_ids"))
            .iter()
            .map(|c| {
                uint(c)
                    .map(|c| typed("PciChipId", Some(Value::UInt(c))))
                    .ok_or(format!("{at}: chip ids are integers"))
            })
            .collect::<Result<_, _>>()?;
        match chips.len() {
            0 => {}
            1 => parts.extend(chips),
            _ => parts.push(typed("Or", Some(Value::Array(chips)))),
        }
        let gpu = if parts.len() == 1 {
            parts.remove(0)
        } else {
            typed("And", Some(Value::Array(parts)))
        };
        let hw_pred = typed("AMDGPU", Some(gpu));
        let mut ops: Vec<(String, Vec<Value>)> = Vec::new();
        for (pi, prob) in list(hw.get("problems")).iter().enumerate() {
            let at = format!("{at}.problems[{pi}]");
            let op = text(prob, "operation", &at)?;
            let types = list(prob.get("types"));
            if types.len() != 4
                || types
                    .iter()
                    .any(|t| !matches!(t, Value::Str(n) if DataType::from_name(n).is_some()))
            {
                return Err(format!("{at}: types must be 4 Tensile type names"));
            }
            let hpa = matches!(
                prob.get("high_precision_accumulate"),
                Some(Value::Bool(true))
            );
            // Elements of K per E8M0 block scale of A and B (MX), or 0.
            let block = match prob.get("block_scales") {
                None => 0,
                Some(v) => {
                    uint(v).ok_or_else(|| format!("{at}: block_scales must be an integer"))?
                }
            };
            let distance = match prob.get("distance") {
                None if lite => "GridBased",
                None => "Euclidean",
                Some(Value::Str(d)) if lite && d != "GridBased" && d != "Equality" => {
                    return Err(format!(
                        "{at}: a TensileLite table's distance is GridBased or Equality, not {d}"
                    ));
                }
                Some(Value::Str(d)) => d,
                Some(_) => return Err(format!("{at}: distance must be a name")),
            };
            // TensileLite: the five types and the feature leaves of a
            // kernel without epilogue features (TENSILELITE.md §6.2).
            let class = lite
                .then(|| lite_class_predicates(types, hpa, block))
                .transpose()?
                .unwrap_or_default();
            let mut table = Vec::new();
            let mut single = None;
            for (si, sol) in list(prob.get("solutions")).iter().enumerate() {
                let at = format!("{at}.solutions[{si}]");
                let index = solutions.len() as u64;
                let mut preds = if lite {
                    let mut p = vec![typed("OperationIdentifierEqual", Some(s(op)))];
                    p.extend(class.iter().cloned());
                    let own = list(sol.get("predicates"));
                    let has_math = own.iter().any(
                        |l| matches!(l.get("type"), Some(Value::Str(t)) if t == "F32XdlMathOp"),
                    );
                    if !has_math {
                        p.push(typed("F32XdlMathOp", Some(s("Float"))));
                    }
                    p
                } else {
                    type_predicates(op, types, hpa)
                };
                preds.extend(list(sol.get("predicates")).iter().cloned());
                let mut fields = vec![
                    ("name", s(text(sol, "name", &at)?)),
                    (
                        "problemType",
                        map(vec![
                            ("operationIdentifier", s(op)),
                            ("aType", types[0].clone()),
                            ("bType", types[1].clone()),
                            ("cType", types[2].clone()),
                            ("dType", types[3].clone()),
                            ("useBeta", Value::Bool(true)),
                            ("highPrecisionAccumulate", Value::Bool(hpa)),
                            ("useInitialStridesAB", Value::Bool(false)),
                            ("useInitialStridesCD", Value::Bool(false)),
                            ("stridedBatched", Value::Bool(true)),
                        ]),
                    ),
                    ("hardwarePredicate", typed("TruePred", None)),
                    ("problemPredicate", typed("And", Some(Value::Array(preds)))),
                    (
                        "sizeMapping",
                        map(vec![
                            (
                                "workGroup",
                                Value::Array(
                                    ints3(sol.get("work_group"), [256, 1, 1], &at)?
                                        .into_iter()
                                        .map(|x| Value::UInt(x as u64))
                                        .collect(),
                                ),
                            ),
                            (
                                "threadTile",
                                Value::Array(vec![Value::UInt(1), Value::UInt(1)]),
                            ),
                            (
                                "macroTile",
                                Value::Array(
                                    ints3(sol.get("macro_tile"), [1, 1, 1], &at)?
                                        .into_iter()
                                        .map(|x| Value::UInt(x as u64))
                                        .collect(),
                                ),
                            ),
                            ("staggerU", Value::UInt(0)),
                            ("depthU", Value::UInt(1)),
                            ("globalSplitU", Value::UInt(1)),
                            ("staggerStrideShift", Value::UInt(0)),
                            ("workGroupMapping", Value::UInt(1)),
                            ("persistentKernel", Value::UInt(0)),
                            ("persistentKernelAlongBatch", Value::Bool(false)),
                            (
                                "sourceKernel",
                                Value::Bool(matches!(
                                    sol.get("source_kernel"),
                                    Some(Value::Bool(true))
                                )),
                            ),
                            ("globalAccumulation", Value::UInt(0)),
                            ("workspaceSizePerElemC", Value::UInt(0)),
                        ]),
                    ),
                    ("debugKernel", Value::Bool(false)),
                    ("libraryLogicIndex", Value::UInt(index)),
                    ("index", Value::UInt(index)),
                    ("ideals", Value::Map(vec![])),
                    ("linearModel", Value::Map(vec![])),
                ];
                if let Some(co) = sol.get("code_object") {
                    let Value::Str(co) = co else {
                        return Err(format!("{at}: code_object must be a file name"));
                    };
                    fields.push(("codeObject", s(co)));
                }
                if lite {
                    fields.push(("kernelName", s(text(sol, "name", &at)?)));
                    fields.push(("taskPredicate", typed("WorkspaceCheck", None)));
                }
                solutions.push(map(fields));
                let sizes = list(sol.get("sizes"));
                if sizes.is_empty() {
                    if single.is_some() || !table.is_empty() {
                        return Err(format!("{at}: with several solutions, each needs `sizes`"));
                    }
                    single = Some(index);
                }
                for size in sizes {
                    let Value::Array(v) = size else {
                        return Err(format!("{at}: sizes are [M, N, K, speed] lists"));
                    };
                    let (Some(m), Some(n), Some(k), Some(speed)) = (
                        v.first().and_then(uint),
                        v.get(1).and_then(uint),
                        v.get(2).and_then(uint),
                        v.get(3).and_then(number),
                    ) else {
                        return Err(format!("{at}: sizes are [M, N, K, speed] lists"));
                    };
                    table.push(if lite {
                        // (M, N, batch, K); TensileLite's tables have no
                        // speeds.
                        let key = [m, n, 1, k].map(Value::UInt).to_vec();
                        map(vec![
                            ("key", Value::Array(key)),
                            ("index", Value::UInt(index)),
                        ])
                    } else {
                        map(vec![
                            (
                                "key",
                                Value::Array(vec![Value::UInt(m), Value::UInt(n), Value::UInt(k)]),
                            ),
                            ("index", Value::UInt(index)),
                            ("speed", Value::Float(speed)),
                        ])
                    });
                }
            }
            let library = match (single, table.is_empty()) {
                (Some(i), true) => map(vec![("type", s("Single")), ("index", Value::UInt(i))]),
                (None, false) => map(vec![
                    ("type", s("Matching")),
                    (
                        "properties",
                        Value::Array(
                            if lite {
                                &["FreeSizeA", "FreeSizeB", "BatchSize", "BoundSize"][..]
                            } else {
                                &["FreeSizeA", "FreeSizeB", "BoundSize"][..]
                            }
                            .iter()
                            .map(|p| map(vec![("type", s(p)), ("index", Value::UInt(0))]))
                            .collect(),
                        ),
                    ),
                    ("table", Value::Array(table)),
                    ("distance", s(distance)),
                ]),
                _ => return Err(format!("{at}: no solutions")),
            };
            let row_leaves = if lite {
                class.clone()
            } else {
                vec![
                    typed("TypesEqual", Some(Value::Array(types.to_vec()))),
                    typed("HighPrecisionAccumulate", Some(Value::Bool(hpa))),
                ]
            };
            let row = map(vec![
                ("predicate", typed("And", Some(Value::Array(row_leaves)))),
                ("library", library),
            ]);
            match ops.iter_mut().find(|(o, _)| o == op) {
                Some((_, rows)) => rows.push(row),
                None => ops.push((op.to_string(), vec![row])),
            }
        }
        let problem_map = map(vec![
            ("type", s("ProblemMap")),
            ("property", typed("OperationIdentifier", None)),
            (
                "map",
                Value::Map(
                    ops.into_iter()
                        .map(|(op, rows)| {
                            (
                                s(&op),
                                map(vec![("type", s("Problem")), ("rows", Value::Array(rows))]),
                            )
                        })
                        .collect(),
                ),
            ),
        ]);
        rows.push(map(vec![("predicate", hw_pred), ("library", problem_map)]));
    }
    if rows.is_empty() {
        return Err("the description has no hardware entries".into());
    }
    let tree = map(vec![
        ("solutions", Value::Array(solutions)),
        (
            "library",
            map(vec![("type", s("Hardware")), ("rows", Value::Array(rows))]),
        ),
    ]);
    let mut w = Writer::new();
    tree.write(&mut w);
    // Read it back (this validates it), order the hardware rows with the
    // build-time comparator, and write it in the requested layout.
    let mut catalog = Catalog::from_msgpack(&w.out).map_err(|e| e.to_string())?;
    sort_hardware_rows(&mut catalog);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    if lazy {
        return split_lazy_as(&catalog, out, suffix);
    }
    let path = out.join(format!("TensileLibrary{suffix}"));
    let bytes = if suffix == ".yaml" {
        catalog.to_yaml().into_bytes()
    } else {
        catalog.to_msgpack()
    };
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(vec![path])
}

/// TensileLite's class leaves of a row and its solutions for a kernel of
/// `types` (A, B, C, D) without epilogue features: the 18 of hipBLASLt
/// 7.1.1's lazy rows but `F32XdlMathOp` (which solutions carry, so one row
/// holds f32 and xf32 kernels), in its order, then newer TensileLite's
/// block-scale leaves: `MXBlockA`/`MXBlockB` (`block` elements of K per
/// scale, 0 without), and with scales their type, `DataTypeMXSA`/`B` E8.
/// The compute type is hipBLASLt's for the output type: `Double` for f64,
/// `Int32` for integers, `Float` otherwise.
fn lite_class_predicates(types: &[Value], hpa: bool, block: u64) -> Result<Vec<Value>, String> {
    let ty = |v: &Value| match v {
        Value::Str(n) => DataType::from_name(n).ok_or(format!("{n:?} is not a type name")),
        other => Err(format!("{other:?} is not a type name")),
    };
    let (a, b, d) = (ty(&types[0])?, ty(&types[1])?, ty(&types[3])?);
    let compute = match d {
        DataType::Double => DataType::Double,
        DataType::Int8 | DataType::Int32 | DataType::Int8x4 | DataType::Int64 => DataType::Int32,
        _ => DataType::Float,
    };
    let mut five = types.to_vec();
    five.push(s(DataType::compute_input_of(a, b).name()));
    let flag = |name: &str, v: bool| typed(name, Some(Value::Bool(v)));
    let mut leaves = vec![
        typed("TypesEqual", Some(Value::Array(five))),
        flag("HighPrecisionAccumulate", hpa),
        typed("Activation", Some(s("None"))),
        typed("ActivationComputeType", Some(s(compute.name()))),
        flag("ActivationNoGuard", false),
        flag("UseGradient", false),
        typed("UseBias", Some(Value::UInt(0))),
        flag("UseE", false),
        typed("DataTypeE", Some(s(d.name()))),
        flag("StridedBatched", true),
        flag("GroupedGemm", false),
        typed("UseScaleAB", Some(s(""))),
        flag("UseScaleCD", false),
        typed("UseScaleAlphaVec", Some(Value::UInt(0))),
        typed("Sparse", Some(Value::UInt(0))),
        flag("SupportDeviceUserArguments", false),
        flag("SwizzleTensorA", false),
        flag("SwizzleTensorB", false),
        typed("MXBlockA", Some(Value::UInt(block))),
        typed("MXBlockB", Some(Value::UInt(block))),
    ];
    if block != 0 {
        let e8 = s(DataType::E8.name());
        leaves.push(typed("DataTypeMXSA", Some(e8.clone())));
        leaves.push(typed("DataTypeMXSB", Some(e8)));
    }
    Ok(leaves)
}

/// Orders the root's hardware rows with tensilelite's comparator (stable,
/// so rows that compare equal keep the description's order).
pub fn sort_hardware_rows(catalog: &mut Catalog) {
    if let Node::Hardware(rows) = &mut catalog.file_mut().root {
        rows.sort_by(|a, b| compare_rows(&a.predicate.row_key(), &b.predicate.row_key()));
    }
}
