//! Solution catalogs end to end: descriptions written by
//! `xtask::catalog_write` (eager MessagePack, eager YAML, Tensile's lazy
//! layout) read back with `aqueduct::catalog` and asked for kernels; the
//! hardware-row order and the chip-ID runtime rule of hipBLASLt's "PCI chip
//! ID predicates walkthrough"; `AQUEDUCT_CATALOG_DEBUG` traces; lazy loading
//! (what is read, when, and only once across threads); every way a catalog
//! can be broken, each a typed error naming the culprit; and the code object
//! behind a selected solution, loaded once through the host shim and run on
//! the simulator (or a real GPU).
//!
//! Sources: /work/shared/seeds/tensile-solution-selection-catalogs.txt and
//! /work/shared/seeds/hipblaslt-pci-chip-id-predicates.txt.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aqueduct::PoolKind;
use aqueduct::catalog::hardware::RowKey;
use aqueduct::catalog::library::Node;
use aqueduct::catalog::msgpack::MsgpackErrorKind;
use aqueduct::catalog::{
    Catalog, CatalogError, CodeObjects, DataType, Hardware, Problem, Selected, Transpose, yaml,
};
use xtask::catalog_write::from_description;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const NN: &str = "Contraction_l_Ailk_Bljk_Cijk_Dijk";
const NT: &str = "Contraction_l_Ailk_Bjlk_Cijk_Dijk";
const TN: &str = "Contraction_l_Alik_Bljk_Cijk_Dijk";

/// A fresh scratch directory for one test (under cargo's per-target tmp).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("catalog")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch directory");
    dir
}

/// Writes `text` as a description in `dir` and builds it into `dir/out`.
fn build(dir: &Path, text: &str) -> Vec<PathBuf> {
    let desc = dir.join("description.yaml");
    std::fs::write(&desc, text).expect("write description");
    from_description(&desc, &dir.join("out"))
        .unwrap_or_else(|e| panic!("from_description: {e}\n{text}"))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

fn open(path: &Path) -> Catalog {
    Catalog::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

fn gemm(a: Transpose, b: Transpose, m: u64, n: u64, k: u64, ty: DataType) -> Problem {
    Problem::gemm(a, b, m, n, k, ty)
}

fn nn(m: u64, n: u64, k: u64, ty: DataType) -> Problem {
    gemm(Transpose::None, Transpose::None, m, n, k, ty)
}

fn nt(m: u64, n: u64, k: u64, ty: DataType) -> Problem {
    gemm(Transpose::None, Transpose::Transpose, m, n, k, ty)
}

fn tn(m: u64, n: u64, k: u64, ty: DataType) -> Problem {
    gemm(Transpose::Transpose, Transpose::None, m, n, k, ty)
}

fn hpa(mut p: Problem) -> Problem {
    p.high_precision_accumulate = true;
    p
}

/// An MI300X as ROCr reports it (and as the simulator poses).
fn mi300x() -> Hardware {
    Hardware::new("gfx942:sramecc+:xnack-", 304, Some(0x74a1))
}

fn mi210() -> Hardware {
    Hardware::new("gfx90a:sramecc+:xnack-", 104, Some(0x740f))
}

fn gfx950(cu: u32, chip: Option<u32>) -> Hardware {
    Hardware::new("gfx950:sramecc+:xnack-", cu, chip)
}

/// Selects and returns the solution's name (`None`: no answer); panics on
/// an error.
fn pick<'c>(c: &'c Catalog, p: &Problem, hw: &Hardware) -> Option<&'c str> {
    select(c, p, hw).map(|s| &*s.solution.name)
}

fn select<'c>(c: &'c Catalog, p: &Problem, hw: &Hardware) -> Option<Selected<'c>> {
    c.select(p, hw).unwrap_or_else(|e| {
        panic!(
            "select {} {}x{}x{} on {}: {e}",
            p.operation_identifier(),
            p.m,
            p.n,
            p.k,
            hw.arch_name
        )
    })
}

/// The catalog's files read so far, by file name.
fn loaded_names(c: &Catalog) -> Vec<String> {
    c.loaded_files().iter().map(|p| file_name(p)).collect()
}

// --- Catalogs as YAML text, in Tensile's layout ---------------------------

/// A Float NN solution whose own predicates always hold.
fn solution(index: i64, name: &str) -> String {
    format!(
        "{{index: {index}, name: {name}, \
         problemType: {{operationIdentifier: {NN}, aType: Float, bType: Float, cType: Float, \
         dType: Float, useBeta: true, highPrecisionAccumulate: false}}, \
         hardwarePredicate: {{type: TruePred}}, problemPredicate: {{type: TruePred}}, \
         sizeMapping: {{workGroup: [256, 1, 1], threadTile: [1, 1], macroTile: [64, 64, 1], \
         staggerU: 0, depthU: 1, globalSplitU: 1, staggerStrideShift: 0, workGroupMapping: 1, \
         persistentKernel: 0, persistentKernelAlongBatch: false, sourceKernel: false, \
         globalAccumulation: 0, workspaceSizePerElemC: 0}}, debugKernel: false}}"
    )
}

fn catalog_yaml(solutions: &[String], library: &str) -> String {
    format!(
        "{{solutions: [{}], library: {library}}}",
        solutions.join(", ")
    )
}

fn hardware_node(rows: &[(String, String)]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|(p, l)| format!("{{predicate: {p}, library: {l}}}"))
        .collect();
    format!("{{type: Hardware, rows: [{}]}}", rows.join(", "))
}

fn single(index: i64) -> String {
    format!("{{type: Single, index: {index}}}")
}

/// A ProblemMap holding only operation `op`.
fn problem_map(op: &str, library: &str) -> String {
    format!(
        "{{type: ProblemMap, property: {{type: OperationIdentifier}}, map: {{{op}: {library}}}}}"
    )
}

/// An AMDGPU predicate on gfx950: processor, optional CU count, chip IDs
/// (one inline, several as an `Or`), in the walkthrough's order.
fn gfx950_row(cu: Option<u32>, chips: &[u32]) -> String {
    let mut parts = vec!["{type: Processor, value: gfx950}".to_string()];
    if let Some(cu) = cu {
        parts.push(format!("{{type: CUCount, value: {cu}}}"));
    }
    let chip = |id: &u32| format!("{{type: PciChipId, value: {id}}}");
    match chips {
        [] => {}
        [one] => parts.push(chip(one)),
        many => parts.push(format!(
            "{{type: Or, value: [{}]}}",
            many.iter().map(chip).collect::<Vec<_>>().join(", ")
        )),
    }
    format!(
        "{{type: AMDGPU, value: {{type: And, value: [{}]}}}}",
        parts.join(", ")
    )
}

/// A catalog of gfx950 rows, one Single solution per row, in the given
/// order (no sorting: the runtime rule must hold whatever the order).
fn gfx950_catalog(rows: &[(Option<u32>, &[u32], &str)]) -> Catalog {
    let solutions: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, (_, _, name))| solution(i as i64, name))
        .collect();
    let rows: Vec<(String, String)> = rows
        .iter()
        .enumerate()
        .map(|(i, (cu, chips, _))| (gfx950_row(*cu, chips), single(i as i64)))
        .collect();
    let text = catalog_yaml(&solutions, &hardware_node(&rows));
    Catalog::from_yaml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Writes a YAML catalog as a MessagePack `.dat` file.
fn write_dat(path: &Path, text: &str) {
    let bytes = yaml::to_msgpack(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    std::fs::write(path, bytes).expect("write .dat");
}

// ---------------------------------------------------------------------------
// 1. Description → catalog, end to end
// ---------------------------------------------------------------------------

/// gfx942: three tuned NN SGEMM sizes, one NT SGEMM, an HPA HGEMM; gfx90a:
/// one NN SGEMM. Solution indices follow description order (0..=5).
const GEMM_DESCRIPTION: &str = "\
hardware:
  - processor: gfx942
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_small
            code_object: aqueduct-device.hsaco
            macro_tile: [32, 32, 1]
            work_group: [64, 1, 1]
            sizes: [[128, 128, 128, 10.0]]
          - name: sgemm_medium
            sizes: [[1024, 1024, 1024, 20.0]]
          - name: sgemm_large
            macro_tile: [256, 128, 1]
            sizes: [[4096, 4096, 4096, 30.0]]
      - operation: Contraction_l_Ailk_Bjlk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_nt
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Half, Half, Half, Half]
        high_precision_accumulate: true
        solutions:
          - name: hgemm_hpa
  - processor: gfx90a
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_90a
";

/// The answers GEMM_DESCRIPTION must give on gfx942, whatever the layout.
fn check_gfx942_selections(c: &Catalog, out: &Path) {
    let hw = mi300x();
    let f = DataType::Float;
    // Nearest tuned size wins (squared Euclidean distance over M, N, K).
    let small = select(c, &nn(100, 100, 100, f), &hw).expect("an answer for 100^3");
    assert_eq!(&*small.solution.name, "sgemm_small");
    assert_eq!(small.solution.index, 0);
    assert_eq!(
        small.fitness,
        3.0 * 28.0 * 28.0,
        "squared distance to 128^3"
    );
    assert_eq!(small.solution.size_mapping.macro_tile, [32, 32, 1]);
    assert_eq!(small.solution.size_mapping.work_group, [64, 1, 1]);
    assert_eq!(
        small.code_object(&hw),
        Some(
            small
                .file
                .path
                .as_deref()
                .unwrap()
                .with_file_name("aqueduct-device.hsaco")
        )
    );
    assert_eq!(
        small
            .code_object(&hw)
            .and_then(|p| p.parent().map(Path::to_path_buf)),
        Some(out.to_path_buf()),
        "the code object sits next to the catalog file"
    );
    assert_eq!(pick(c, &nn(128, 128, 128, f), &hw), Some("sgemm_small"));
    assert_eq!(pick(c, &nn(900, 1100, 1000, f), &hw), Some("sgemm_medium"));
    assert_eq!(pick(c, &nn(2000, 2000, 2000, f), &hw), Some("sgemm_medium"));
    assert_eq!(pick(c, &nn(3000, 3000, 3000, f), &hw), Some("sgemm_large"));
    let large = select(c, &nn(8192, 8192, 8192, f), &hw).expect("an answer for 8192^3");
    assert_eq!(
        (&*large.solution.name, large.solution.index),
        ("sgemm_large", 2)
    );
    assert_eq!(large.solution.size_mapping.macro_tile, [256, 128, 1]);
    assert_eq!(large.fitness, 3.0 * 4096.0 * 4096.0);
    // Other problem types.
    let nt_sel = select(c, &nt(10, 20, 30, f), &hw).expect("an NT answer");
    assert_eq!(
        (&*nt_sel.solution.name, nt_sel.solution.index),
        ("sgemm_nt", 3)
    );
    assert_eq!(nt_sel.fitness, 0.0, "a Single involves no table");
    assert_eq!(
        pick(c, &hpa(nn(512, 512, 512, DataType::Half)), &hw),
        Some("hgemm_hpa")
    );
    // Problem types the description does not hold.
    assert_eq!(
        pick(c, &nn(512, 512, 512, DataType::Half), &hw),
        None,
        "HGEMM without HPA"
    );
    assert_eq!(
        pick(c, &nn(1024, 1024, 1024, DataType::Double), &hw),
        None,
        "DGEMM"
    );
    assert_eq!(pick(c, &tn(1024, 1024, 1024, f), &hw), None, "TN SGEMM");
    assert_eq!(
        pick(c, &nt(64, 64, 64, DataType::Double), &hw),
        None,
        "NT DGEMM"
    );
    // A processor the catalog has no row for.
    let rdna3 = Hardware::new("gfx1100", 96, Some(0x744c));
    assert_eq!(pick(c, &nn(1024, 1024, 1024, f), &rdna3), None, "gfx1100");
}

#[test]
fn an_eager_msgpack_description_writes_one_catalog_that_selects_the_nearest_size() {
    let dir = scratch("eager_msgpack");
    let out = dir.join("out");
    let files = build(&dir, GEMM_DESCRIPTION);
    assert_eq!(files, [out.join("TensileLibrary.dat")]);
    let bytes = std::fs::read(&files[0]).expect("read the catalog");
    assert_eq!(bytes[0], 0x82, "a MessagePack map of two keys");
    assert!(
        !bytes.starts_with(b"solutions"),
        "MessagePack, not YAML text"
    );
    let c = open(&files[0]);
    assert_eq!(c.file().solutions.len(), 6);
    let names: Vec<&str> = c.file().solutions.iter().map(|s| &*s.name).collect();
    assert_eq!(
        names,
        [
            "sgemm_small",
            "sgemm_medium",
            "sgemm_large",
            "sgemm_nt",
            "hgemm_hpa",
            "sgemm_90a"
        ]
    );
    check_gfx942_selections(&c, &out);
    assert_eq!(
        pick(&c, &nn(64, 64, 64, DataType::Float), &mi210()),
        Some("sgemm_90a")
    );
    assert_eq!(pick(&c, &nt(64, 64, 64, DataType::Float), &mi210()), None);
    assert_eq!(loaded_names(&c), ["TensileLibrary.dat"]);
}

#[test]
fn an_eager_yaml_description_writes_a_yaml_catalog_with_the_same_answers() {
    let dir = scratch("eager_yaml");
    let out = dir.join("out");
    let files = build(&dir, &format!("format: yaml\n{GEMM_DESCRIPTION}"));
    assert_eq!(files, [out.join("TensileLibrary.yaml")]);
    let text = std::fs::read_to_string(&files[0]).expect("a YAML catalog is text");
    assert!(text.contains("solutions:"), "{text}");
    assert!(text.contains("type: Hardware"), "{text}");
    assert!(text.contains("sgemm_medium"), "{text}");
    let c = open(&files[0]);
    assert_eq!(c.file().solutions.len(), 6);
    check_gfx942_selections(&c, &out);
    assert_eq!(
        pick(&c, &nn(64, 64, 64, DataType::Float), &mi210()),
        Some("sgemm_90a")
    );
    // Both formats hold the same catalog.
    let msgpack_dir = scratch("eager_yaml_vs_msgpack");
    let msgpack = open(&build(&msgpack_dir, GEMM_DESCRIPTION)[0]);
    assert_eq!(c.to_msgpack(), msgpack.to_msgpack());
}

/// Lazy: one parent per processor and one child per problem type, each a
/// Tensile file name; the parent alone loads, children come in on use.
fn check_lazy_layout(format: &str, ext: &str) {
    let dir = scratch(&format!("lazy_{format}"));
    let out = dir.join("out");
    let files = build(
        &dir,
        &format!("lazy: true\nformat: {format}\n{GEMM_DESCRIPTION}"),
    );
    let names: BTreeSet<String> = files.iter().map(|p| file_name(p)).collect();
    for f in &files {
        assert!(f.is_file(), "{} was reported but not written", f.display());
        assert_eq!(f.parent(), Some(out.as_path()));
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(&out)
        .expect("list output")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, on_disk, "every file written is reported");
    let parents: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("TensileLibrary_lazy_"))
        .collect();
    assert_eq!(
        parents,
        [
            &format!("TensileLibrary_lazy_gfx90a{ext}"),
            &format!("TensileLibrary_lazy_gfx942{ext}")
        ]
    );
    let children: Vec<&String> = names
        .iter()
        .filter(|n| !n.starts_with("TensileLibrary_lazy_"))
        .collect();
    assert_eq!(children.len(), 4, "{children:?}");
    for child in &children {
        assert!(child.starts_with("TensileLibrary_Type_"), "{child}");
        assert!(child.ends_with(ext), "{child}");
    }
    let for_gfx = |gfx: &str, op: &str| -> Vec<&String> {
        children
            .iter()
            .copied()
            .filter(|n| n.contains(op) && n.contains(&format!("_{gfx}")))
            .collect()
    };
    assert_eq!(for_gfx("gfx942", NN).len(), 2, "NN SGEMM and HPA HGEMM");
    assert_eq!(for_gfx("gfx942", NT).len(), 1);
    assert_eq!(for_gfx("gfx90a", NN).len(), 1);
    assert!(
        for_gfx("gfx942", NN).iter().any(|n| n.contains("HPA")),
        "the accumulate setting is in the child's name: {children:?}"
    );

    let parent = out.join(format!("TensileLibrary_lazy_gfx942{ext}"));
    let c = open(&parent);
    assert!(
        c.file().solutions.is_empty(),
        "a lazy parent holds no solutions"
    );
    assert_eq!(c.loaded_files(), std::slice::from_ref(&parent));
    check_gfx942_selections(&c, &out);
    // gfx942's parent knows nothing of gfx90a.
    assert_eq!(pick(&c, &nn(64, 64, 64, DataType::Float), &mi210()), None);
    let loaded = loaded_names(&c);
    assert_eq!(
        loaded.len(),
        4,
        "the parent and gfx942's three children: {loaded:?}"
    );
    assert!(loaded.iter().all(|n| !n.contains("gfx90a")), "{loaded:?}");

    let c90 = open(&out.join(format!("TensileLibrary_lazy_gfx90a{ext}")));
    let s = select(&c90, &nn(64, 64, 64, DataType::Float), &mi210()).expect("gfx90a SGEMM");
    assert_eq!((&*s.solution.name, s.solution.index), ("sgemm_90a", 5));
    assert_eq!(
        pick(&c90, &nn(64, 64, 64, DataType::Float), &mi300x()),
        None
    );
    assert_eq!(pick(&c90, &nt(64, 64, 64, DataType::Float), &mi210()), None);
}

/// `layout: tensilelite`: hipBLASLt's form (TENSILELITE.md), read back
/// and selected with TensileLite's rules: five-type `TypesEqual`, the
/// feature leaves that keep epilogue problems away, task predicates,
/// GridBased tables, the mapping file, chip-ID rows.
#[test]
fn a_tensilelite_description_writes_hipblaslts_layout() {
    let dir = scratch("tensilelite");
    let out = dir.join("out");
    // (Continued lines would lose their indentation: the row is indented.)
    let chip_row = "  - processor: gfx942
    cu_count: 304
    chip_ids: [0x74a1]
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_mi300x
";
    let description = format!("lazy: true\nlayout: tensilelite\n{GEMM_DESCRIPTION}{chip_row}");
    let files = build(&dir, &description);
    let names: BTreeSet<String> = files.iter().map(|p| file_name(p)).collect();
    assert!(
        names.contains("TensileLiteLibrary_lazy_Mapping.dat"),
        "{names:?}"
    );
    let mapping =
        aqueduct::catalog::LazyMapping::open(out.join("TensileLiteLibrary_lazy_Mapping.dat"))
            .expect("the mapping reads");
    assert_eq!(mapping.len(), 5, "one entry per child");
    let c = open(&out.join("TensileLibrary_lazy_gfx942.dat"));
    // Every gfx942 solution is found by its index in the child the mapping
    // names; gfx90a's (5) is not this catalog's.
    for index in [0, 1, 2, 3, 4, 6] {
        let s = c
            .solution_by_index(&mapping, index)
            .expect("reads")
            .unwrap_or_else(|| panic!("solution {index}"));
        assert_eq!(s.solution.index, index);
        assert_eq!(s.solution.kernel(), &*s.solution.name);
        assert!(s.solution.task_predicate.is_some(), "{index}");
    }
    assert!(c.solution_by_index(&mapping, 5).expect("reads").is_none());

    let f = DataType::Float;
    let hw = mi300x();
    let generic = Hardware::new("gfx942", 228, None);
    // The chip's own row answers the MI300X; other gfx942 parts fall to
    // the processor row.
    assert_eq!(pick(&c, &nn(100, 100, 100, f), &hw), Some("sgemm_mi300x"));
    // GridBased: the cell at or above (M, N), then the nearest K — not
    // the nearest point overall (Tensile's Euclidean table above picks
    // sgemm_medium for 2000³; the grid's next M above 2000 is 4096).
    let small = select(&c, &nn(100, 100, 100, f), &generic).expect("100³");
    assert_eq!(
        (&*small.solution.name, small.fitness),
        ("sgemm_small", 28.0)
    );
    assert_eq!(
        pick(&c, &nn(900, 1100, 1000, f), &generic),
        Some("sgemm_medium")
    );
    assert_eq!(
        pick(&c, &nn(2000, 2000, 2000, f), &generic),
        Some("sgemm_large")
    );
    assert_eq!(
        pick(&c, &nn(9000, 9000, 1, f), &generic),
        Some("sgemm_large")
    );
    assert_eq!(pick(&c, &nt(10, 20, 30, f), &generic), Some("sgemm_nt"));
    assert_eq!(
        pick(&c, &hpa(nn(512, 512, 512, DataType::Half)), &generic),
        Some("hgemm_hpa")
    );
    // A problem asking for an epilogue the kernels do not have.
    let mut bias = nn(128, 128, 128, f);
    bias.use_bias = 1;
    assert_eq!(pick(&c, &bias, &generic), None, "bias");
    let mut gelu = nn(128, 128, 128, f);
    (gelu.activation, gelu.activation_enum) = (
        aqueduct::catalog::Activation::HipblasltAll,
        aqueduct::catalog::Activation::Gelu,
    );
    assert_eq!(pick(&c, &gelu, &generic), None, "activation");
    let mut other_compute_input = nn(128, 128, 128, f);
    other_compute_input.compute_input_type = DataType::BFloat16;
    assert_eq!(pick(&c, &other_compute_input, &generic), None, "fifth type");
    // The trace names the TensileLite leaves, the chip row and the task
    // predicate.
    let (_, trace) = c.select_traced(&nn(100, 100, 100, f), &hw);
    for name in [
        "PciChipId",
        "[Float, Float, Float, Float, Float]",
        "UseBias",
        "WorkspaceCheck",
    ] {
        assert!(trace.contains(name), "{name}:\n{trace}");
    }
    let (_, trace) = c.select_traced(&nn(100, 100, 100, f), &generic);
    assert!(trace.contains("GridBased: query"), "{trace}");
    // Wrong settings are refused with the reason.
    let e = xtask::catalog_write::from_description_text(
        "layout: tensilelite\nhardware:\n  - processor: gfx942\n    problems:\n      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk\n        types: [Float, Float, Float, Float]\n        distance: Euclidean\n        solutions:\n          - {name: a, sizes: [[1, 1, 1, 1.0]]}\n",
        &dir.join("bad"),
    )
    .expect_err("Euclidean in TensileLite");
    assert!(e.contains("GridBased or Equality"), "{e}");
    let e = xtask::catalog_write::from_description_text(
        "layout: rocblas\nhardware: []\n",
        &dir.join("bad"),
    )
    .expect_err("an unknown layout");
    assert!(e.contains("layout must be"), "{e}");
}

#[test]
fn a_lazy_msgpack_description_writes_tensile_named_parents_and_children() {
    check_lazy_layout("msgpack", ".dat");
}

#[test]
fn a_lazy_yaml_description_writes_tensile_named_yaml_files() {
    check_lazy_layout("yaml", ".yaml");
}

/// The seed: children are `TensileLibrary_Type_<precision>_<problem
/// type>_<gfx>`, e.g. `TensileLibrary_Type_HH_Contraction_l_Alik_Bjlk_Cijk_Dijk_<gfx>`
/// for HGEMM TT; Tensile's precision code is the A and C types' letters
/// (`SS` for SGEMM, `HH` plus `_HPA` for high-precision accumulate).
#[test]
fn lazy_children_carry_tensiles_precision_codes() {
    let dir = scratch("lazy_precision_codes");
    let files = build(&dir, &format!("lazy: true\n{GEMM_DESCRIPTION}"));
    let names: BTreeSet<String> = files.iter().map(|p| file_name(p)).collect();
    let want: BTreeSet<String> = [
        "TensileLibrary_lazy_gfx942.dat",
        "TensileLibrary_lazy_gfx90a.dat",
        "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942.dat",
        "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx942.dat",
        "TensileLibrary_Type_HH_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942.dat",
        "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx90a.dat",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(names, want);
}

#[test]
fn equal_keys_are_decided_by_the_higher_speed() {
    let dir = scratch("equal_keys");
    let files = build(
        &dir,
        "\
hardware:
  - processor: gfx942
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: slow
            sizes: [[1024, 1024, 1024, 10.0], [64, 64, 64, 50.0]]
          - name: fast
            sizes: [[1024, 1024, 1024, 90.0]]
",
    );
    let c = open(&files[0]);
    let f = DataType::Float;
    assert_eq!(pick(&c, &nn(1024, 1024, 1024, f), &mi300x()), Some("fast"));
    assert_eq!(pick(&c, &nn(1000, 1000, 1000, f), &mi300x()), Some("fast"));
    assert_eq!(pick(&c, &nn(60, 60, 70, f), &mi300x()), Some("slow"));
}

// ---------------------------------------------------------------------------
// 2. Hardware-row order written by the writer
// ---------------------------------------------------------------------------

const MI355X: u32 = 0x75a3;
const MI350X: u32 = 0x75a0;
const MI355X_OTHER: u32 = 0x75a2;

/// One gfx950 hardware entry of a description, with one Single solution.
fn gfx950_entry(cu: Option<u32>, chips: &[u32], name: &str) -> String {
    let mut s = "  - processor: gfx950\n".to_string();
    if let Some(cu) = cu {
        s += &format!("    cu_count: {cu}\n");
    }
    if !chips.is_empty() {
        let ids: Vec<String> = chips.iter().map(|c| format!("{c:#x}")).collect();
        s += &format!("    chip_ids: [{}]\n", ids.join(", "));
    }
    s += &format!(
        "    problems:\n      - operation: {NN}\n        types: [Float, Float, Float, Float]\n        solutions:\n          - name: {name}\n"
    );
    s
}

/// The walkthrough's "minimal ordering example (same processor)", in the
/// order it documents, with a solution name per row.
fn documented_rows() -> Vec<(Option<u32>, Vec<u32>, &'static str)> {
    vec![
        (Some(256), vec![MI355X], "r_75a3_cu256"),
        (Some(64), vec![MI355X], "r_75a3_cu64"),
        (Some(256), vec![MI350X], "r_75a0_cu256"),
        (Some(64), vec![MI350X], "r_75a0_cu64"),
        (None, vec![MI355X, MI350X], "r_75a3_75a0"),
        (None, vec![], "r_no_chip"),
    ]
}

/// The documented rows in a shuffled order, as a description.
fn shuffled_description(header: &str) -> String {
    let rows = documented_rows();
    let mut text = format!("{header}hardware:\n");
    for i in [5, 3, 4, 1, 2, 0] {
        let (cu, chips, name) = &rows[i];
        text += &gfx950_entry(*cu, chips, name);
    }
    text
}

fn row_keys(c: &Catalog) -> Vec<RowKey> {
    let Node::Hardware(rows) = &c.file().root else {
        panic!("the root is not a Hardware node: {:?}", c.file().root)
    };
    rows.iter().map(|r| r.predicate.row_key()).collect()
}

fn expected_row_keys() -> Vec<RowKey> {
    documented_rows()
        .into_iter()
        .map(|(cu, chips, _)| RowKey {
            processor: Some("gfx950".into()),
            cu_count: cu,
            chip_ids: chips.into_iter().collect(),
            always: false,
        })
        .collect()
}

#[test]
fn the_writer_orders_hardware_rows_as_the_walkthrough_documents() {
    let dir = scratch("row_order");
    let files = build(&dir, &shuffled_description(""));
    let c = open(&files[0]);
    assert_eq!(row_keys(&c), expected_row_keys());
    // Each row still leads to its own solution.
    let Node::Hardware(rows) = &c.file().root else {
        unreachable!()
    };
    let hw = [
        gfx950(256, Some(MI355X)),
        gfx950(64, Some(MI355X)),
        gfx950(256, Some(MI350X)),
        gfx950(64, Some(MI350X)),
    ];
    for (i, (hw, (_, _, name))) in hw.iter().zip(documented_rows()).enumerate() {
        assert!(rows[i].predicate.eval(hw), "row {i} for {hw:?}");
        assert_eq!(
            pick(&c, &nn(256, 256, 256, DataType::Float), hw),
            Some(name),
            "{hw:?}"
        );
    }
}

#[test]
fn a_lazy_parent_keeps_the_documented_hardware_row_order() {
    let dir = scratch("row_order_lazy");
    build(&dir, &shuffled_description("lazy: true\n"));
    let c = open(&dir.join("out").join("TensileLibrary_lazy_gfx950.dat"));
    assert_eq!(row_keys(&c), expected_row_keys());
    assert_eq!(
        pick(
            &c,
            &nn(256, 256, 256, DataType::Float),
            &gfx950(64, Some(MI355X))
        ),
        Some("r_75a3_cu64")
    );
}

/// The runtime consequences of that order (and of the exact/fallback
/// rule) for GPUs of every kind on the documented rows.
#[test]
fn selection_over_the_documented_rows_prefers_the_most_specific_row() {
    let dir = scratch("row_order_select");
    let c = open(&build(&dir, &shuffled_description(""))[0]);
    let p = nn(256, 256, 256, DataType::Float);
    let cases = [
        (gfx950(256, Some(MI355X)), Some("r_75a3_cu256")),
        (gfx950(64, Some(MI355X)), Some("r_75a3_cu64")),
        // No CU-specific row for 128 CUs: the mixed set names 75a3 itself.
        (gfx950(128, Some(MI355X)), Some("r_75a3_75a0")),
        (gfx950(64, Some(MI350X)), Some("r_75a0_cu64")),
        (gfx950(128, Some(MI350X)), Some("r_75a3_75a0")),
        // 0x75a2 reaches the 75a0 rows only through fallback; the row
        // without chip IDs is an exact match and wins over them.
        (gfx950(256, Some(MI355X_OTHER)), Some("r_no_chip")),
        // No chip ID reported: only the row without chip IDs matches.
        (gfx950(256, None), Some("r_no_chip")),
        (Hardware::new("gfx942", 256, Some(MI355X)), None),
    ];
    for (hw, want) in cases {
        assert_eq!(pick(&c, &p, &hw), want, "{hw:?}");
    }
}

// ---------------------------------------------------------------------------
// 3. The runtime rule of the walkthrough
// ---------------------------------------------------------------------------

#[test]
fn an_exact_chip_row_beats_an_earlier_fallback_row() {
    let c = gfx950_catalog(&[
        (None, &[MI350X], "mi350x_kernel"),
        (None, &[MI355X], "mi355x_kernel"),
    ]);
    let p = nn(512, 512, 512, DataType::Float);
    assert_eq!(
        pick(&c, &p, &gfx950(256, Some(MI355X))),
        Some("mi355x_kernel"),
        "MI355X: its own row, though the MI350X row comes first"
    );
    let (traced, trace) = c.select_traced(&p, &gfx950(256, Some(MI355X)));
    assert_eq!(
        traced.expect("no error").map(|s| s.solution.index),
        Some(1),
        "{trace}"
    );
    assert!(
        trace.contains("Solution found (exact): mi355x_kernel"),
        "{trace}"
    );
    assert_eq!(
        pick(&c, &p, &gfx950(256, Some(MI350X))),
        Some("mi350x_kernel"),
        "MI350X: its own row"
    );
    assert_eq!(
        pick(&c, &p, &gfx950(256, Some(MI355X_OTHER))),
        Some("mi350x_kernel"),
        "0x75a2 falls back to 0x75a0, never to its sibling 0x75a3"
    );
    assert_eq!(
        pick(&c, &p, &gfx950(256, Some(0x1234))),
        None,
        "unknown chip"
    );
    assert_eq!(pick(&c, &p, &gfx950(256, None)), None, "no chip ID");
}

#[test]
fn a_row_without_chip_ids_is_an_exact_match_and_beats_an_earlier_fallback() {
    let c = gfx950_catalog(&[(None, &[MI350X], "mi350x_kernel"), (None, &[], "generic")]);
    let p = nn(512, 512, 512, DataType::Float);
    assert_eq!(pick(&c, &p, &gfx950(256, Some(MI355X))), Some("generic"));
    assert_eq!(
        pick(&c, &p, &gfx950(256, Some(MI350X))),
        Some("mi350x_kernel")
    );
}

#[test]
fn the_first_fallback_match_is_returned_when_no_row_matches_exactly() {
    let c = gfx950_catalog(&[
        (None, &[MI355X], "mi355x_kernel"),
        (None, &[MI350X], "mi350x_first"),
        (Some(256), &[MI350X], "mi350x_second"),
    ]);
    let p = nn(512, 512, 512, DataType::Float);
    let hw = gfx950(256, Some(MI355X_OTHER));
    assert_eq!(pick(&c, &p, &hw), Some("mi350x_first"));
    let (traced, trace) = c.select_traced(&p, &hw);
    assert_eq!(traced.expect("no error").map(|s| s.solution.index), Some(1));
    assert!(
        trace.contains("Solution found (fallback): mi350x_first"),
        "{trace}"
    );
    assert!(
        trace.contains("Using fallback kernel: device 0x75a2 matches solution for 0x75a0"),
        "{trace}"
    );
}

#[test]
fn a_matching_row_whose_library_answers_nothing_falls_through_to_the_next() {
    let p = nn(512, 512, 512, DataType::Float);
    // An exact row whose ProblemMap lacks the operation, then another.
    let text = catalog_yaml(
        &[solution(0, "tn_only"), solution(1, "second_row")],
        &hardware_node(&[
            (gfx950_row(None, &[MI355X]), problem_map(TN, &single(0))),
            (gfx950_row(None, &[MI355X]), problem_map(NN, &single(1))),
        ]),
    );
    let c = Catalog::from_yaml(&text).expect("catalog");
    assert_eq!(pick(&c, &p, &gfx950(256, Some(MI355X))), Some("second_row"));
    // The same among fallback rows: the first fallback row that answers.
    let text = catalog_yaml(
        &[solution(0, "tn_only"), solution(1, "answers")],
        &hardware_node(&[
            (gfx950_row(None, &[MI350X]), problem_map(TN, &single(0))),
            (gfx950_row(None, &[MI350X]), problem_map(NN, &single(1))),
        ]),
    );
    let c = Catalog::from_yaml(&text).expect("catalog");
    assert_eq!(pick(&c, &p, &gfx950(256, Some(MI355X))), Some("answers"));
    // A Single whose solution's own predicates fail answers nothing too.
    let failing = solution(0, "never").replace(
        "problemPredicate: {type: TruePred}",
        "problemPredicate: {type: FalsePred}",
    );
    let text = catalog_yaml(
        &[failing, solution(1, "next")],
        &hardware_node(&[
            (gfx950_row(None, &[MI355X]), single(0)),
            (gfx950_row(None, &[]), single(1)),
        ]),
    );
    let c = Catalog::from_yaml(&text).expect("catalog");
    assert_eq!(pick(&c, &p, &gfx950(256, Some(MI355X))), Some("next"));
}

/// The walkthrough's TENSILE_DB example: an MI355X with 256 CUs against a
/// row for 64 CUs and chips {75a3, 75a2}.
const DOCUMENTED_NO_MATCH: &str = "
--------------------------------------------------------------------------------
PREDICATE: ExactLogic: Hardware
--------------------------------------------------------------------------------
[!!]  And                           (3 predicates)
[OK]    Processor                   gpu=gfx950:sramecc+:xnack- == sol=gfx950
[!!]    CUCount                     gpu=256 == sol=64
[OK]    Or                          (2 predicates)
[OK]      PciChipId                 [AMD Instinct MI355X] gpu=0x75a3 == sol=0x75a3
[!!]      PciChipId                 [AMD Instinct MI355X] gpu=0x75a3 == sol=0x75a2
--------------------------------------------------------------------------------
Result: NO MATCH
--------------------------------------------------------------------------------
";

fn cu_mismatch_catalog() -> Catalog {
    gfx950_catalog(&[
        (Some(64), &[MI355X, MI355X_OTHER], "mi355x_cu64"),
        (None, &[MI355X], "mi355x_any_cu"),
    ])
}

#[test]
fn the_documented_cu_mismatch_traces_no_match_and_selects_the_next_row() {
    let c = cu_mismatch_catalog();
    let p = nn(512, 512, 512, DataType::Float);
    let hw = gfx950(256, Some(MI355X));
    let (result, trace) = c.select_traced(&p, &hw);
    let s = result.expect("no error").expect("the second row answers");
    assert_eq!(&*s.solution.name, "mi355x_any_cu");
    assert!(
        trace.contains("[!!]    CUCount                     gpu=256 == sol=64\n"),
        "{trace}"
    );
    assert!(trace.contains("Result: NO MATCH\n"), "{trace}");
    assert!(
        trace.contains(DOCUMENTED_NO_MATCH),
        "the documented block, line for line:\n{trace}"
    );
    assert!(
        trace.contains("RESULT: solution 1 mi355x_any_cu"),
        "{trace}"
    );
    // Tracing does not change the answer, and a 64-CU MI355X takes row 0.
    assert_eq!(pick(&c, &p, &hw), Some("mi355x_any_cu"));
    assert_eq!(pick(&c, &p, &gfx950(64, Some(MI355X))), Some("mi355x_cu64"));
    let (_, trace64) = c.select_traced(&p, &gfx950(64, Some(MI355X)));
    assert!(trace64.contains("Result: MATCH\n"), "{trace64}");
    assert!(!trace64.contains("Result: NO MATCH"), "{trace64}");
}

// ---------------------------------------------------------------------------
// 4. AQUEDUCT_CATALOG_DEBUG
// ---------------------------------------------------------------------------

/// Selects once on the documented CU-mismatch rows. Run by itself it just
/// checks the answer; the test below re-runs it in a child process with and
/// without `AQUEDUCT_CATALOG_DEBUG` and reads its standard error.
#[test]
fn debug_child_selects_past_a_cu_mismatch() {
    let c = cu_mismatch_catalog();
    let got = pick(
        &c,
        &nn(512, 512, 512, DataType::Float),
        &gfx950(256, Some(MI355X)),
    );
    assert_eq!(got, Some("mi355x_any_cu"));
}

fn run_debug_child(debug: Option<&str>) -> (String, String) {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "--exact",
        "debug_child_selects_past_a_cu_mismatch",
        "--nocapture",
        "--test-threads=1",
    ]);
    match debug {
        Some(v) => cmd.env("AQUEDUCT_CATALOG_DEBUG", v),
        None => cmd.env_remove("AQUEDUCT_CATALOG_DEBUG"),
    };
    let out = cmd.output().expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the helper test did not run:\n{stdout}"
    );
    (stdout, stderr)
}

#[test]
fn catalog_debug_prints_the_selection_trace_to_stderr() {
    let (_, stderr) = run_debug_child(Some("1"));
    assert!(stderr.contains("[OK]"), "{stderr}");
    assert!(stderr.contains("[!!]"), "{stderr}");
    assert!(
        stderr.contains("[!!]    CUCount                     gpu=256 == sol=64"),
        "{stderr}"
    );
    assert!(stderr.contains("Result: NO MATCH"), "{stderr}");
    assert!(stderr.contains(DOCUMENTED_NO_MATCH), "{stderr}");
    let result: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("RESULT:"))
        .collect();
    assert_eq!(result, ["RESULT: solution 1 mi355x_any_cu (fitness 0)"]);
}

#[test]
fn without_catalog_debug_selection_prints_nothing() {
    for debug in [None, Some("0"), Some("")] {
        let (_, stderr) = run_debug_child(debug);
        for marker in ["[OK]", "[!!]", "RESULT:", "PREDICATE:"] {
            assert!(
                !stderr.contains(marker),
                "AQUEDUCT_CATALOG_DEBUG={debug:?}: {marker} in\n{stderr}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 5. Lazy loading
// ---------------------------------------------------------------------------

/// gfx942 rows for 80 and 304 CUs and a gfx90a row; four problem types on
/// the 304-CU row.
const LAZY_DESCRIPTION: &str = "\
lazy: true
hardware:
  - processor: gfx942
    cu_count: 80
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_nn_cu80
  - processor: gfx942
    cu_count: 304
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_nn_small
            sizes: [[64, 64, 64, 1.0]]
          - name: sgemm_nn_large
            sizes: [[4096, 4096, 4096, 2.0]]
      - operation: Contraction_l_Ailk_Bjlk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_nt
      - operation: Contraction_l_Alik_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_tn
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Double, Double, Double, Double]
        solutions:
          - name: dgemm_nn
  - processor: gfx90a
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: sgemm_90a
";

fn lazy_catalog(name: &str) -> PathBuf {
    let dir = scratch(name);
    let files = build(&dir, LAZY_DESCRIPTION);
    assert_eq!(files.len(), 2 + 5 + 1, "{files:?}");
    dir.join("out").join("TensileLibrary_lazy_gfx942.dat")
}

/// The problems of LAZY_DESCRIPTION's 304-CU row and their answers.
fn lazy_queries() -> Vec<(Problem, &'static str)> {
    let f = DataType::Float;
    vec![
        (nn(32, 32, 32, f), "sgemm_nn_small"),
        (nn(5000, 4000, 4000, f), "sgemm_nn_large"),
        (nt(100, 100, 100, f), "sgemm_nt"),
        (tn(100, 100, 100, f), "sgemm_tn"),
        (nn(100, 100, 100, DataType::Double), "dgemm_nn"),
    ]
}

#[test]
fn lazy_children_load_on_first_use_one_problem_type_at_a_time() {
    let parent = lazy_catalog("lazy_loading");
    let c = open(&parent);
    assert_eq!(
        c.loaded_files(),
        std::slice::from_ref(&parent),
        "only the parent at open"
    );
    let hw = mi300x();
    let f = DataType::Float;

    assert_eq!(pick(&c, &nn(32, 32, 32, f), &hw), Some("sgemm_nn_small"));
    let after_one = c.loaded_files();
    assert_eq!(after_one.len(), 2, "{after_one:?}");
    assert_eq!(after_one[0], parent);
    let nn_child = file_name(&after_one[1]);
    assert!(
        nn_child.starts_with("TensileLibrary_Type_")
            && nn_child.contains(NN)
            && nn_child.contains("gfx942")
            && nn_child.contains("304")
            && nn_child.ends_with(".dat"),
        "{nn_child}"
    );
    // Same type again (another size): nothing new.
    assert_eq!(
        pick(&c, &nn(4096, 4096, 4096, f), &hw),
        Some("sgemm_nn_large")
    );
    assert_eq!(c.loaded_files(), after_one);

    // Another problem type: one more child.
    assert_eq!(pick(&c, &nt(100, 100, 100, f), &hw), Some("sgemm_nt"));
    let after_two = c.loaded_files();
    assert_eq!(after_two.len(), 3, "{after_two:?}");
    let new: Vec<&PathBuf> = after_two
        .iter()
        .filter(|p| !after_one.contains(p))
        .collect();
    assert_eq!(new.len(), 1, "{after_two:?}");
    assert!(file_name(new[0]).contains(NT), "{new:?}");
    assert!(file_name(new[0]).contains("gfx942"), "{new:?}");

    // A type no row of this GPU holds: nothing loads.
    assert_eq!(pick(&c, &nn(100, 100, 100, DataType::Half), &hw), None);
    assert_eq!(c.loaded_files().len(), 3);

    for (p, want) in lazy_queries() {
        assert_eq!(pick(&c, &p, &hw), Some(want));
    }
    let all = loaded_names(&c);
    assert_eq!(all.len(), 1 + 4, "{all:?}");
    assert!(
        all.iter()
            .all(|n| !n.contains("CU80") && !n.contains("_80") && !n.contains("gfx90a")),
        "children of other hardware rows stay on disk: {all:?}"
    );
    let unique: BTreeSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "{all:?}");

    // The 80-CU row's child loads only for an 80-CU GPU.
    let small = Hardware::new("gfx942:sramecc+:xnack-", 80, Some(0x74a1));
    assert_eq!(pick(&c, &nn(32, 32, 32, f), &small), Some("sgemm_nn_cu80"));
    assert_eq!(pick(&c, &nt(32, 32, 32, f), &small), None);
    assert_eq!(c.loaded_files().len(), 1 + 4 + 1);
}

#[test]
fn concurrent_selections_on_a_fresh_lazy_catalog_load_each_child_once() {
    const THREADS: usize = 8;
    let parent = lazy_catalog("lazy_concurrent");
    let c = open(&parent);
    let queries = lazy_queries();
    let start = std::sync::Barrier::new(THREADS);
    let answers: Vec<Vec<(String, i64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (c, queries, start) = (&c, &queries, &start);
                s.spawn(move || {
                    start.wait();
                    let mut got = vec![(String::new(), -1); queries.len()];
                    // Each thread walks the problems from another start.
                    for round in 0..3 {
                        for i in 0..queries.len() {
                            let q = (i + t + round) % queries.len();
                            let sel = c
                                .select(&queries[q].0, &mi300x())
                                .unwrap_or_else(|e| panic!("thread {t}: {e}"))
                                .unwrap_or_else(|| panic!("thread {t}: no answer for {q}"));
                            got[q] = (sel.solution.name.to_string(), sel.solution.index);
                        }
                    }
                    got
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a selecting thread panicked"))
            .collect()
    });
    for (t, got) in answers.iter().enumerate() {
        assert_eq!(got, &answers[0], "thread {t} disagrees with thread 0");
    }
    let names: Vec<&str> = answers[0].iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = queries.iter().map(|(_, w)| *w).collect();
    assert_eq!(names, want);
    let loaded = c.loaded_files();
    let unique: BTreeSet<&PathBuf> = loaded.iter().collect();
    assert_eq!(
        unique.len(),
        loaded.len(),
        "a child loaded twice: {loaded:?}"
    );
    assert_eq!(loaded.len(), 1 + 4, "{loaded:?}");
    assert_eq!(loaded[0], parent);
}

// ---------------------------------------------------------------------------
// 6. Broken catalogs: typed errors naming the culprit
// ---------------------------------------------------------------------------

/// A small valid catalog as MessagePack bytes.
/// Built once per process: several tests read it concurrently.
fn small_catalog_bytes() -> Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(build_small_catalog).clone()
}

fn build_small_catalog() -> Vec<u8> {
    let dir = scratch("small_catalog");
    let files = build(
        &dir,
        "\
hardware:
  - processor: gfx942
    cu_count: 304
    chip_ids: [0x74a1]
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: a
            sizes: [[64, 64, 64, 1.5], [128, 64, 32, 2.5]]
          - name: b
            predicates:
              - {type: Free0SizeMultiple, index: 0, value: 4}
            sizes: [[1024, 1024, 1024, 3.0]]
",
    );
    std::fs::read(&files[0]).expect("read")
}

fn msgpack_kind(e: &CatalogError) -> &MsgpackErrorKind {
    match e {
        CatalogError::Msgpack { source, .. } => &source.kind,
        other => panic!("expected a MessagePack error, got {other:?}: {other}"),
    }
}

#[test]
fn every_truncation_of_a_catalog_is_a_truncation_error_never_a_panic() {
    let bytes = small_catalog_bytes();
    assert!(Catalog::from_msgpack(&bytes).is_ok());
    assert!(bytes.len() > 500, "{} bytes", bytes.len());
    for len in 0..bytes.len() {
        let result = std::panic::catch_unwind(|| Catalog::from_msgpack(&bytes[..len]));
        let result = result.unwrap_or_else(|_| panic!("panicked on a {len}-byte prefix"));
        let e = result
            .err()
            .unwrap_or_else(|| panic!("a {len}-byte prefix loaded"));
        assert_eq!(
            msgpack_kind(&e),
            &MsgpackErrorKind::Truncated,
            "prefix {len}: {e}"
        );
        let text = e.to_string();
        assert!(text.contains("input ends inside a value"), "{text}");
        assert!(text.starts_with("<memory>"), "{text}");
        if let CatalogError::Msgpack { source, .. } = &e {
            assert!(source.offset <= len as u64, "prefix {len}: {e}");
        }
    }
}

#[test]
fn every_truncation_of_a_catalog_file_is_an_error_naming_the_file() {
    let bytes = small_catalog_bytes();
    let dir = scratch("truncated_files");
    let path = dir.join("TensileLibrary.dat");
    for len in 0..bytes.len() {
        std::fs::write(&path, &bytes[..len]).expect("write prefix");
        let result = std::panic::catch_unwind(|| Catalog::open(&path));
        let result = result.unwrap_or_else(|_| panic!("panicked on a {len}-byte file"));
        let e = result
            .err()
            .unwrap_or_else(|| panic!("a {len}-byte file loaded"));
        assert_eq!(
            msgpack_kind(&e),
            &MsgpackErrorKind::Truncated,
            "prefix {len}: {e}"
        );
        assert!(
            e.to_string().contains(&path.display().to_string()),
            "prefix {len}: {e}"
        );
    }
    std::fs::write(&path, &bytes).expect("write whole");
    assert!(Catalog::open(&path).is_ok());
}

/// The reader reports 0xc1 as `Reserved` where any value may stand (a key,
/// a skipped value) and as `Unexpected` where a typed read expected another
/// kind (a map header); both name the byte.
fn is_reserved_byte(kind: &MsgpackErrorKind) -> bool {
    matches!(
        kind,
        MsgpackErrorKind::Reserved
            | MsgpackErrorKind::Unexpected {
                found: "the reserved byte 0xc1",
                ..
            }
    )
}

#[test]
fn a_reserved_marker_byte_is_a_typed_error_at_its_offset() {
    let bytes = small_catalog_bytes();
    // The root library node's map header, right after the "library" key.
    let key = b"\xa7library";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("a library key")
        + key.len();
    let mut corrupt = bytes.clone();
    corrupt[at] = 0xc1;
    let e = Catalog::from_msgpack(&corrupt).expect_err("0xc1 is reserved");
    assert!(is_reserved_byte(msgpack_kind(&e)), "{e}");
    let CatalogError::Msgpack { at: loc, source } = &e else {
        unreachable!()
    };
    assert_eq!(source.offset, at as u64, "{e}");
    assert_eq!(loc.path, "library", "{e}");
    assert!(e.to_string().contains("0xc1"), "{e}");
    // The first key's marker.
    let mut corrupt = bytes.clone();
    corrupt[1] = 0xc1;
    let e = Catalog::from_msgpack(&corrupt).expect_err("0xc1 is reserved");
    assert!(is_reserved_byte(msgpack_kind(&e)), "{e}");
    assert!(e.to_string().contains("0xc1 (at byte 1)"), "{e}");
    // 0xc1 anywhere: an error or (inside a number) a catalog, never a panic.
    for i in 0..bytes.len() {
        let mut corrupt = bytes.clone();
        corrupt[i] = 0xc1;
        let r = std::panic::catch_unwind(|| Catalog::from_msgpack(&corrupt).map(|_| ()));
        assert!(r.is_ok(), "panicked with 0xc1 at byte {i}");
    }
}

fn unknown_type(text: &str) -> (String, &'static str, String) {
    let e = Catalog::from_yaml(text).expect_err("an unknown type is refused");
    match &e {
        CatalogError::UnknownType { at, what, name } => (at.path.clone(), *what, name.clone()),
        other => panic!("expected UnknownType, got {other:?}: {other}"),
    }
}

#[test]
fn an_unknown_node_type_is_refused_by_name() {
    let text = catalog_yaml(
        &[solution(0, "k")],
        &hardware_node(&[(
            "{type: TruePred}".into(),
            "{type: Frobnicate, index: 0}".into(),
        )]),
    );
    let (path, what, name) = unknown_type(&text);
    assert_eq!((what, name.as_str()), ("library node", "Frobnicate"));
    assert_eq!(path, "library.rows[0].library");
    let e = Catalog::from_yaml(&text).unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown library node type \"Frobnicate\""),
        "{e}"
    );
}

#[test]
fn an_unknown_predicate_type_is_refused_by_name() {
    let text = catalog_yaml(
        &[solution(0, "k")],
        &hardware_node(&[(
            "{type: AMDGPU, value: {type: And, value: [{type: Processor, value: gfx950}, {type: ShinyChipCheck, value: 3}]}}".into(),
            single(0),
        )]),
    );
    let (path, what, name) = unknown_type(&text);
    assert_eq!((what, name.as_str()), ("predicate", "ShinyChipCheck"));
    assert!(path.starts_with("library.rows[0].predicate"), "{path}");
    assert!(path.ends_with("[1]"), "{path}");
    // In a solution's problem predicate too.
    let sol = solution(0, "k").replace(
        "problemPredicate: {type: TruePred}",
        "problemPredicate: {type: And, value: [{type: TruePred}, {type: FancyNewCheck}]}",
    );
    let (path, what, name) = unknown_type(&catalog_yaml(&[sol], &single(0)));
    assert_eq!((what, name.as_str()), ("predicate", "FancyNewCheck"));
    assert!(path.starts_with("solutions[0].problemPredicate"), "{path}");
}

#[test]
fn an_unknown_distance_is_refused_by_name() {
    let text = catalog_yaml(
        &[solution(0, "k")],
        "{type: Matching, properties: [{type: FreeSizeA, index: 0}], table: [{key: [64], index: 0, speed: 1.0}], distance: Chebyshev}",
    );
    let (path, what, name) = unknown_type(&text);
    assert_eq!((what, name.as_str()), ("distance", "Chebyshev"));
    assert_eq!(path, "library");
    let e = Catalog::from_yaml(&text).unwrap_err();
    assert!(e.to_string().contains("Chebyshev"), "{e}");
}

#[test]
fn an_unknown_data_type_is_refused_by_name() {
    let sol = solution(0, "k").replace("cType: Float", "cType: Quad");
    let (path, what, name) = unknown_type(&catalog_yaml(&[sol], &single(0)));
    assert_eq!((what, name.as_str()), ("data", "Quad"));
    assert!(path.starts_with("solutions[0].problemType"), "{path}");
    // And in a TypesEqual predicate.
    let text = catalog_yaml(
        &[solution(0, "k")],
        "{type: Problem, rows: [{predicate: {type: TypesEqual, value: [Float, Float, Float, Octuple]}, library: {type: Single, index: 0}}]}",
    );
    let e = Catalog::from_yaml(&text).expect_err("Octuple is no type");
    assert!(e.to_string().contains("Octuple"), "{e}");
    assert!(
        matches!(
            e,
            CatalogError::UnknownType { .. } | CatalogError::Invalid { .. }
        ),
        "{e:?}"
    );
}

#[test]
fn a_missing_solution_index_is_refused() {
    let text = catalog_yaml(&[solution(0, "k")], &single(7));
    let e = Catalog::from_yaml(&text).expect_err("index 7 is not in the list");
    let CatalogError::MissingSolution { at, index } = &e else {
        panic!("expected MissingSolution, got {e:?}")
    };
    assert_eq!(*index, 7);
    assert_eq!(at.path, "library");
    assert!(e.to_string().contains("solution index 7"), "{e}");
    // In a Matching table.
    let text = catalog_yaml(
        &[solution(0, "k")],
        "{type: Matching, properties: [{type: FreeSizeA, index: 0}], table: [{key: [64], index: 0, speed: 1.0}, {key: [128], index: 9, speed: 1.0}], distance: Euclidean}",
    );
    let e = Catalog::from_yaml(&text).expect_err("index 9 is not in the list");
    assert!(
        matches!(e, CatalogError::MissingSolution { index: 9, .. }),
        "{e:?}"
    );
}

#[test]
fn a_duplicate_solution_index_is_refused() {
    let text = catalog_yaml(&[solution(3, "first"), solution(3, "second")], &single(3));
    let e = Catalog::from_yaml(&text).expect_err("two solutions share index 3");
    let CatalogError::DuplicateSolution { at, index } = &e else {
        panic!("expected DuplicateSolution, got {e:?}")
    };
    assert_eq!(*index, 3);
    assert_eq!(at.path, "solutions[1]");
    assert!(
        e.to_string().contains("solution index 3 appears twice"),
        "{e}"
    );
}

const LAZY_PARENT: &str = "TensileLibrary_lazy_gfx942";

/// A lazy parent whose one TruePred row leads to placeholder `child`.
fn lazy_parent(dir: &Path, child: &str) -> PathBuf {
    lazy_parent_over(dir, &[], &format!("{{type: Placeholder, value: {child}}}"))
}

/// A lazy parent with `solutions` whose one TruePred row leads to
/// `library`.
fn lazy_parent_over(dir: &Path, solutions: &[String], library: &str) -> PathBuf {
    let path = dir.join(format!("{LAZY_PARENT}.dat"));
    write_dat(
        &path,
        &catalog_yaml(
            solutions,
            &hardware_node(&[("{type: TruePred}".into(), library.into())]),
        ),
    );
    path
}

fn expect_cycle(c: &Catalog, looped: &Path) {
    let p = nn(64, 64, 64, DataType::Float);
    for attempt in 0..2 {
        let e = c.select(&p, &mi300x()).expect_err("a cycle cannot answer");
        let CatalogError::PlaceholderCycle { chain } = &e else {
            panic!("attempt {attempt}: expected PlaceholderCycle, got {e:?}: {e}")
        };
        let looped = looped.canonicalize().expect("canonical");
        assert_eq!(chain.last(), Some(&looped), "{e}");
        assert!(chain.len() >= 3, "{e}");
        assert!(
            e.to_string()
                .contains(&looped.file_name().unwrap().to_string_lossy().to_string()),
            "{e}"
        );
    }
}

#[test]
fn a_child_whose_placeholder_names_itself_is_a_placeholder_cycle() {
    let dir = scratch("cycle_self");
    let parent = lazy_parent(&dir, "loop_self");
    let child = dir.join("loop_self.dat");
    write_dat(
        &child,
        &catalog_yaml(&[], "{type: Placeholder, value: loop_self}"),
    );
    let c = open(&parent);
    expect_cycle(&c, &child);
}

#[test]
fn a_child_whose_placeholder_names_its_parent_is_a_placeholder_cycle() {
    let dir = scratch("cycle_parent");
    let parent = lazy_parent(&dir, "loop_parent");
    write_dat(
        &dir.join("loop_parent.dat"),
        &catalog_yaml(&[], &format!("{{type: Placeholder, value: {LAZY_PARENT}}}")),
    );
    let c = open(&parent);
    expect_cycle(&c, &parent);
}

#[test]
fn a_missing_child_file_is_an_error_on_every_selection() {
    let dir = scratch("missing_child");
    let parent = lazy_parent(&dir, "not_there");
    let c = open(&parent);
    assert_eq!(c.loaded_files(), std::slice::from_ref(&parent));
    let p = nn(64, 64, 64, DataType::Float);
    let first = c.select(&p, &mi300x()).expect_err("no child file");
    let CatalogError::MissingChild {
        parent: from,
        name,
        tried,
    } = &first
    else {
        panic!("expected MissingChild, got {first:?}: {first}")
    };
    assert_eq!(name, "not_there");
    assert_eq!(from, &parent.canonicalize().expect("canonical"));
    assert_eq!(tried, &[dir.join("not_there.dat")]);
    assert!(first.to_string().contains("not_there"), "{first}");
    assert!(first.to_string().contains(LAZY_PARENT), "{first}");
    let second = c.select(&p, &mi300x()).expect_err("still no child file");
    assert_eq!(second, first);
    assert_eq!(c.loaded_files(), [parent]);
}

#[test]
fn a_placeholder_naming_a_path_is_refused_at_load() {
    let dir = scratch("placeholder_path");
    for name in ["sub/child", "../escape", "..", "a\\b"] {
        let parent = lazy_parent(&dir, &format!("'{name}'"));
        let e = Catalog::open(&parent).expect_err("a path is not a child name");
        let CatalogError::Invalid { at, problem } = &e else {
            panic!("{name}: expected Invalid, got {e:?}: {e}")
        };
        assert_eq!(at.file.as_deref(), Some(parent.as_path()), "{e}");
        assert!(problem.contains(&format!("{name:?}")), "{name}: {problem}");
        assert!(e.to_string().contains("placeholder"), "{e}");
    }
}

// ---------------------------------------------------------------------------
// 7. Code objects behind selected solutions, on the simulator or a GPU
// ---------------------------------------------------------------------------

const TIMEOUT: Duration = Duration::from_secs(120);
const POISON_U32: u32 = 0xDEAD_BEEF;

/// A catalog for one GPU whose solutions are the device library's kernels,
/// with the device library copied next to it.
fn device_library_catalog(dir: &Path, hw: &Hardware, gfx: &str) -> PathBuf {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("out");
    let built = aqueduct::device_code::path(gfx, "aqueduct-device");
    std::fs::copy(&built, out.join("aqueduct-device.hsaco"))
        .unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    let chips = hw
        .chip_id
        .map(|c| format!("    chip_ids: [{c:#x}]\n"))
        .unwrap_or_default();
    let text = format!(
        "\
hardware:
  - processor: {proc}
    cu_count: {cu}
{chips}    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: fill_u32
            code_object: aqueduct-device.hsaco
            work_group: [64, 1, 1]
            sizes: [[64, 64, 64, 5.0]]
          - name: saxpy_f32
            code_object: aqueduct-device.hsaco
            sizes: [[2048, 2048, 2048, 5.0]]
      - operation: Contraction_l_Ailk_Bjlk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: copy_bytes
            code_object: aqueduct-device.hsaco
",
        proc = hw.processor,
        cu = hw.cu_count,
    );
    let files = build(dir, &text);
    assert_eq!(files, [out.join("TensileLibrary.dat")]);
    files[0].clone()
}

#[test]
fn a_selected_kernels_code_object_loads_once_through_the_host_shim_and_runs() {
    let system = aqueduct_tests::announced_system();
    for gpu in aqueduct_tests::hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let hw = Hardware::from_agent(gpu.info()).expect("a GPU agent describes hardware");
        assert_eq!(hw.processor, gfx);
        let dir = scratch(&format!("code_objects_{gfx}"));
        let c = open(&device_library_catalog(&dir, &hw, &gfx));
        let fill = select(&c, &nn(64, 64, 64, DataType::Float), &hw).expect("fill_u32");
        let saxpy = select(&c, &nn(2000, 2000, 2000, DataType::Float), &hw).expect("saxpy_f32");
        let copy = select(&c, &nt(8, 8, 8, DataType::Float), &hw).expect("copy_bytes");
        assert_eq!(
            [
                &*fill.solution.name,
                &*saxpy.solution.name,
                &*copy.solution.name
            ],
            ["fill_u32", "saxpy_f32", "copy_bytes"]
        );
        let expected_path = dir.join("out").join("aqueduct-device.hsaco");
        for s in [&fill, &saxpy, &copy] {
            assert_eq!(s.code_object(&hw), Some(expected_path.clone()));
        }

        let code_objects: CodeObjects<aqueduct::Executable> = CodeObjects::new();
        assert!(code_objects.is_empty());
        let loads = AtomicUsize::new(0);
        let loader = |path: &Path| {
            loads.fetch_add(1, Ordering::SeqCst);
            gpu.load_code_object_file(path).map_err(|e| e.to_string())
        };
        let first = code_objects.get(&fill, &hw, loader).expect("load");
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        let again = code_objects.get(&fill, &hw, loader).expect("cached");
        let other = code_objects.get(&saxpy, &hw, loader).expect("shared file");
        let third = code_objects.get(&copy, &hw, loader).expect("shared file");
        assert_eq!(loads.load(Ordering::SeqCst), 1, "one file, one load");
        assert!(Arc::ptr_eq(&first, &again));
        assert!(Arc::ptr_eq(&first, &other));
        assert!(Arc::ptr_eq(&first, &third));
        assert_eq!(code_objects.len(), 1);
        for s in [&fill, &saxpy, &copy] {
            let name = &*s.solution.name;
            assert!(first.kernel_names().contains(&name), "{gfx}: {name}");
            first
                .kernel(name)
                .unwrap_or_else(|e| panic!("{gfx}: {name}: {e}"));
        }

        // Run the selected fill_u32 with the solution's workgroup size.
        let kernel = first.kernel(&fill.solution.name).expect("fill_u32");
        let workgroup = fill.solution.size_mapping.work_group[0];
        assert_eq!(workgroup, 64);
        const LEN: usize = 1000;
        const TAIL: usize = 29;
        const VALUE: u32 = 0x0C47_A106;
        let mut out = gpu
            .memory_pool(PoolKind::CoarseGrained)
            .expect("device pool")
            .alloc_device::<u32>(LEN + TAIL)
            .expect("alloc");
        out.write(0, &[POISON_U32; LEN + TAIL]).expect("poison");
        let mut args = kernel.kernargs().expect("kernargs");
        args.set("dst", &out)
            .and_then(|a| a.set("len", LEN as u64))
            .and_then(|a| a.set("value", VALUE))
            .expect("arguments");
        let queue = gpu.create_queue(64).expect("queue");
        let mut run = kernel
            .dispatch(&queue, 512, workgroup as u16, &args, None)
            .expect("dispatch");
        run.wait(TIMEOUT).expect("fill_u32 completes");
        let got = out.to_vec().expect("read back");
        let mut want = vec![VALUE; LEN];
        want.extend([POISON_U32; TAIL]);
        assert_eq!(got, want, "{gfx}: the selected fill_u32");
    }
}

#[test]
fn a_failed_code_object_load_is_remembered_and_reported_per_solution() {
    let dir = scratch("code_object_failure");
    let files = build(
        &dir,
        "\
hardware:
  - processor: gfx942
    problems:
      - operation: Contraction_l_Ailk_Bljk_Cijk_Dijk
        types: [Float, Float, Float, Float]
        solutions:
          - name: fill_u32
            code_object: missing.hsaco
",
    );
    let c = open(&files[0]);
    let hw = mi300x();
    let s = select(&c, &nn(64, 64, 64, DataType::Float), &hw).expect("fill_u32");
    let code_objects: CodeObjects<()> = CodeObjects::new();
    let loads = AtomicUsize::new(0);
    let loader = |path: &Path| {
        loads.fetch_add(1, Ordering::SeqCst);
        Err(format!("{} is not there", file_name(path)))
    };
    for _ in 0..2 {
        let e = code_objects.get(&s, &hw, loader).expect_err("no such file");
        let CatalogError::CodeObject {
            file,
            solution,
            message,
        } = &e
        else {
            panic!("expected CodeObject, got {e:?}")
        };
        assert_eq!(file, &dir.join("out").join("missing.hsaco"));
        assert_eq!(solution, "fill_u32");
        assert_eq!(message, "missing.hsaco is not there");
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1, "a failure is not retried");
}

/// Found by the fuzzer: a map header claiming a billion entries, on a node
/// whose `type` is not its first key, once made the reader reserve 51 GB.
#[test]
fn a_forged_entry_count_on_a_reordered_node_is_a_truncation_error() {
    let bytes = [
        0x82, 0xa9, b's', b'o', b'l', b'u', b't', b'i', b'o', b'n', b's', 0x92, 0x87, 0xb1, b'h',
        b'a', b'r', b'd', b'w', b'a', b'r', b'e', b'P', b'r', b'e', b'd', b'i', b'c', b'a', b't',
        b'e', 0xdf, 0x40, 0x00, 0xa5, 0x76, 0x61,
    ];
    let err = Catalog::from_msgpack(&bytes).expect_err("37 bytes are no catalog");
    assert!(
        matches!(&err, CatalogError::Msgpack { source, .. } if source.kind == MsgpackErrorKind::Truncated),
        "{err}"
    );
}

/// A catalog read from memory has no directory to find children in: a
/// placeholder is an error saying so, not a look in the working directory.
#[test]
fn a_placeholder_in_a_catalog_read_from_memory_is_a_no_directory_error() {
    let text = "solutions: []\nlibrary: {type: Placeholder, value: TensileLibrary_Type_SS_child}\n";
    let catalog = Catalog::from_yaml(text).unwrap();
    let p = Problem::gemm(Transpose::None, Transpose::None, 8, 8, 8, DataType::Float);
    let err = catalog
        .select(&p, &Hardware::new("gfx942", 304, None))
        .unwrap_err();
    assert!(
        matches!(&err, CatalogError::NoDirectory { name } if name == "TensileLibrary_Type_SS_child"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// Hostile catalogs found by hand: each was a crash or a silent wrong
// answer before.
// ---------------------------------------------------------------------------

/// A second `solutions` key after `library` replaced the list the library
/// had been read against: an empty second list made selection index out of
/// bounds, a different one made it select the wrong kernel. A duplicate key
/// is now an error, in YAML and in MessagePack, wherever it stands.
#[test]
fn a_second_solutions_list_is_refused_not_swapped_in() {
    let library = single(0);
    for second in ["[]", &format!("[{}]", solution(0, "impostor"))] {
        let yaml = format!(
            "{{solutions: [{}], library: {library}, solutions: {second}}}",
            solution(0, "real")
        );
        let bytes = yaml::to_msgpack(&yaml).expect("YAML parses");
        for e in [
            Catalog::from_yaml(&yaml).expect_err("a duplicate key is refused"),
            Catalog::from_msgpack(&bytes).expect_err("a duplicate key is refused"),
        ] {
            assert!(
                matches!(&e, CatalogError::DuplicateKey { key, .. } if key == "solutions"),
                "{e}"
            );
        }
    }
    // Deeper in the tree too: a node with two `index` keys.
    let yaml = catalog_yaml(
        &[solution(0, "a"), solution(1, "b")],
        "{type: Single, index: 0, index: 1}",
    );
    let e = Catalog::from_yaml(&yaml).expect_err("a duplicate key is refused");
    assert!(e.to_string().contains("key \"index\" appears twice"), "{e}");
    // In a Matching table's entry, whose usual `{key, index, speed}` order
    // the decoder reads by its bytes before it reads the rest as fields: a
    // second `key` (or `index`) among the rest is still a repeat.
    for entry in [
        "{key: [64], key: [128], index: 0}",
        "{key: [64], index: 0, index: 1}",
        "{key: [64], index: 0, speed: 1.0, speed: 2.0}",
    ] {
        let yaml = catalog_yaml(
            &[solution(0, "a"), solution(1, "b")],
            &format!(
                "{{type: Matching, properties: [{{type: FreeSizeA, index: 0}}], table: [{entry}], distance: Euclidean}}"
            ),
        );
        let bytes = yaml::to_msgpack(&yaml).expect("YAML parses");
        for e in [
            Catalog::from_yaml(&yaml).expect_err("a duplicate key is refused"),
            Catalog::from_msgpack(&bytes).expect_err("a duplicate key is refused"),
        ] {
            assert!(
                matches!(&e, CatalogError::DuplicateKey { .. }),
                "{entry}: {e}"
            );
        }
    }
    // The same keys in separate maps are fine.
    Catalog::from_yaml(&catalog_yaml(&[solution(0, "a")], &single(0))).expect("loads");
}

/// 100,000 nested predicates with `type` written last: each level used to
/// copy the rest of the input to move `type` first (387 MiB and 0.63 s
/// before the nesting limit answered). The decoder now finds `type` and
/// reads the entries in place; the limit still answers.
#[test]
fn deeply_nested_nodes_with_type_last_reach_the_nesting_limit() {
    const LEVELS: usize = 100_000;
    // Built as MessagePack directly: YAML that deep is refused earlier.
    let mut w = aqueduct::catalog::msgpack::Writer::new();
    w.map(2);
    w.str("solutions");
    w.out
        .extend_from_slice(&yaml::to_msgpack(&format!("[{}]", solution(0, "k"))).expect("YAML"));
    w.str("library");
    w.map(2);
    w.str("type");
    w.str("Hardware");
    w.str("rows");
    w.array(1);
    w.map(2);
    w.str("library");
    w.out
        .extend_from_slice(&yaml::to_msgpack(&single(0)).expect("YAML"));
    w.str("predicate");
    for _ in 0..LEVELS {
        w.map(2);
        w.str("value");
    }
    w.out
        .extend_from_slice(&yaml::to_msgpack("{type: TruePred}").expect("YAML"));
    for _ in 0..LEVELS {
        w.str("type");
        w.str("Not");
    }
    let e = Catalog::from_msgpack(&w.out).expect_err("too deep");
    assert!(matches!(e, CatalogError::TooDeep { .. }), "{e}");
}

/// A class plan stops at a placeholder whose child failed to load (its
/// error is the answer of a query that reaches it, as in the tree walk)
/// and is not built again for it: 100 later queries of the class that do
/// not reach it build no plan, though another placeholder of the plan is
/// never read. (From the review of 56622cb..dca8b53: a failed child made
/// every query rebuild the plan.)
#[test]
fn a_failed_child_does_not_rebuild_the_plan_at_every_query() {
    let problem_node = "{type: Problem, rows: [\
        {predicate: {type: SizeGreaterThan, index: 0, value: 1000}, library: {type: Placeholder, value: not_there}}, \
        {predicate: {type: TruePred}, library: {type: Single, index: 0}}, \
        {predicate: {type: TruePred}, library: {type: Placeholder, value: never_read}}]}";
    let dir = scratch("failed_child_plan");
    let c = open(&lazy_parent_over(&dir, &[solution(0, "k0")], problem_node));
    let sel = c.selector(mi300x());
    let big = nn(2000, 64, 64, DataType::Float);
    assert!(sel.select_uncached(&big).is_err(), "the missing child");
    assert!(c.select(&big, &mi300x()).is_err(), "the tree walk agrees");
    assert_eq!(sel.plan_builds(), 1);
    for m in 1..=100 {
        let s = sel
            .select_uncached(&nn(m, 64, 64, DataType::Float))
            .expect("answers");
        assert_eq!(s.map(|s| &*s.solution.name), Some("k0"));
    }
    assert_eq!(
        sel.plan_builds(),
        1,
        "plans built for 101 queries of one class"
    );
}

/// A lazy child read by a query is planned into once: the class's plan is
/// built again after the query that read it, not after later ones.
#[test]
fn a_plan_is_built_again_once_after_a_child_is_read() {
    let dir = scratch("child_read_plan");
    write_dat(
        &dir.join("child_a.dat"),
        &catalog_yaml(&[solution(0, "ka")], &single(0)),
    );
    let c = open(&lazy_parent(&dir, "child_a"));
    let sel = c.selector(mi300x());
    for m in 1..=20 {
        let s = sel
            .select_uncached(&nn(m, 64, 64, DataType::Float))
            .expect("answers");
        assert_eq!(s.map(|s| &*s.solution.name), Some("ka"));
    }
    assert_eq!(
        sel.plan_builds(),
        2,
        "the first plan, and one into the child"
    );
}

/// A table entry naming a solution that is not there: the error names the
/// entry, on the fast path for plain entries as on the long one. (From
/// the review of 56622cb..dca8b53.)
#[test]
fn a_missing_solution_names_its_table_entry() {
    for entry in [
        "{key: [128], index: 9, speed: 1.0}",
        "{speed: 1.0, key: [128], index: 9}",
    ] {
        let text = catalog_yaml(
            &[solution(0, "k")],
            &format!(
                "{{type: Matching, properties: [{{type: FreeSizeA, index: 0}}], table: [{{key: [64], index: 0, speed: 1.0}}, {entry}], distance: Euclidean}}"
            ),
        );
        let e = Catalog::from_yaml(&text).expect_err("index 9 is not in the list");
        let CatalogError::MissingSolution { at, index } = &e else {
            panic!("{e:?}")
        };
        assert_eq!((at.path.as_str(), *index), ("library.table[1]", 9), "{e}");
    }
}

/// Only the leaves of `And` predicates are numbered for the table walk's
/// leaf memo, up to the first item that is not a leaf: `Or` and `Not`
/// predicates, and an `And` that starts with an `Or`, number none; an
/// `And` of leaves numbers its own. (From the review of 56622cb..dca8b53.)
#[test]
fn only_and_of_leaves_predicates_number_their_leaves() {
    let sol = |i: i64, pred: &str| {
        solution(i, &format!("k{i}")).replace(
            "problemPredicate: {type: TruePred}",
            &format!("problemPredicate: {pred}"),
        )
    };
    let text = catalog_yaml(
        &[
            sol(
                0,
                "{type: Or, value: [{type: SizeMultiple, index: 0, value: 2}, {type: SizeMultiple, index: 0, value: 3}]}",
            ),
            sol(
                1,
                "{type: Not, value: {type: SizeMultiple, index: 1, value: 5}}",
            ),
            sol(
                2,
                "{type: And, value: [{type: Or, value: [{type: SizeMultiple, index: 0, value: 7}]}, {type: SizeMultiple, index: 0, value: 11}]}",
            ),
        ],
        &single(0),
    );
    let c = Catalog::from_yaml(&text).unwrap();
    assert_eq!(c.file().leaves.len(), 0);
    let text = catalog_yaml(
        &[
            sol(
                0,
                "{type: And, value: [{type: SizeMultiple, index: 0, value: 2}, {type: SizeMultiple, index: 1, value: 3}]}",
            ),
            sol(
                1,
                "{type: And, value: [{type: SizeMultiple, index: 1, value: 3}, {type: Or, value: [{type: SizeMultiple, index: 0, value: 13}]}, {type: SizeMultiple, index: 0, value: 17}]}",
            ),
        ],
        &single(0),
    );
    let c = Catalog::from_yaml(&text).unwrap();
    assert_eq!(c.file().leaves.len(), 2, "{:?}", c.file().leaves);
    let ids = |i: usize| c.file().solutions[i].problem_predicate.leaf_ids.clone();
    assert_eq!(ids(0).as_deref(), Some(&[0u16, 1][..]));
    assert_eq!(ids(1), None);
}
