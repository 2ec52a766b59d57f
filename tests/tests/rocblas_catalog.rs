//! A real Tensile catalog: rocBLAS 5.5.1's `TensileLibrary.dat` from Debian
//! trixie (fetched once and cached; see `xtask::rocblas_catalog`) loads, and
//! every selection it answers obeys Tensile's rules.

use std::sync::OnceLock;

use aqueduct::catalog::library::Node;
use aqueduct::catalog::predicate::{GpuLeaf, Predicate};
use aqueduct::catalog::{Catalog, Hardware, Problem};

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let path = xtask::rocblas_catalog::fetch()
            .unwrap_or_else(|e| panic!("fetching the rocBLAS catalog: {e}"));
        Catalog::open(&path).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn mi210() -> Hardware {
    Hardware::new("gfx90a:sramecc+:xnack-", 104, Some(0x740f))
}

#[test]
fn the_rocblas_catalog_loads_with_its_hardware_rows() {
    let c = catalog();
    assert!(
        c.file().solutions.len() > 50_000,
        "{} solutions",
        c.file().solutions.len()
    );
    let Node::Hardware(rows) = &c.file().root else {
        panic!("the root is not a Hardware node")
    };
    // rocBLAS 5.5.1: gfx90a with 104 CUs first (the CU-specific row sorts
    // ahead of the plain gfx90a row), a TruePred fallback row last.
    let Predicate::Leaf(GpuLeaf::Amdgpu(first)) = &rows[0].predicate else {
        panic!("row 0: {:?}", rows[0].predicate)
    };
    let Predicate::And(parts) = &**first else {
        panic!("{first:?}")
    };
    assert_eq!(parts.len(), 2);
    assert!(matches!(&parts[0], Predicate::Leaf(GpuLeaf::Processor(p)) if &**p == "gfx90a"));
    assert!(matches!(&parts[1], Predicate::Leaf(GpuLeaf::CuCount(104))));
    assert!(matches!(
        rows.last().map(|r| &r.predicate),
        Some(Predicate::True)
    ));
}

/// Every answer satisfies the solution's own predicates, is for the asked
/// operation and types, and is the nearest passing entry of its table.
#[test]
fn selections_obey_their_predicates_across_varied_problems() {
    let c = catalog();
    let hw = [
        mi210(),
        Hardware::new("gfx908", 120, None),
        Hardware::new("gfx1100", 96, Some(0x744c)),
    ];
    let problems = xtask::catalog_queries::problems(600, 0xca7a_1065);
    let mut found = 0;
    for hw in &hw {
        for p in &problems {
            let Some(s) = c.select(p, hw).unwrap_or_else(|e| panic!("{e}")) else {
                continue;
            };
            found += 1;
            let sol = s.solution;
            assert!(sol.hardware_predicate.eval(hw), "{}", sol.name);
            assert!(sol.problem_predicate.eval(p), "{} for {p:?}", sol.name);
            assert_eq!(
                &*sol.problem_type.operation_identifier,
                p.operation_identifier()
            );
            assert_eq!(
                sol.problem_type.types,
                [p.a_type, p.b_type, p.c_type, p.d_type]
            );
            assert!(s.fitness >= 0.0);
        }
    }
    assert!(
        found > problems.len(),
        "only {found} answers for {} queries on 3 GPUs",
        problems.len()
    );
}

#[test]
fn a_large_sgemm_on_mi210_gets_a_single_precision_kernel() {
    let p = Problem::gemm(
        aqueduct::catalog::Transpose::None,
        aqueduct::catalog::Transpose::None,
        4096,
        4096,
        4096,
        aqueduct::catalog::DataType::Float,
    );
    let s = catalog()
        .select(&p, &mi210())
        .unwrap()
        .expect("an SGEMM kernel");
    assert!(
        s.solution.name.starts_with("Cijk_Ailk_Bljk_S"),
        "{}",
        s.solution.name
    );
}

/// A selector's pre-walked plans answer exactly what the tree walk
/// answers, solution and fitness, across GPUs and varied problems; its
/// result cache returns the same again.
#[test]
fn planned_and_cached_selection_equal_the_tree_walk() {
    let c = catalog();
    let problems = xtask::catalog_queries::problems(1500, 0x0b5e_55ed);
    for hw in [
        mi210(),
        Hardware::new("gfx906", 60, None),
        Hardware::new("gfx1030", 40, None),
    ] {
        let selector = c.selector(hw.clone());
        for p in &problems {
            let walk = c
                .select(p, &hw)
                .unwrap()
                .map(|s| (s.solution.index, s.fitness));
            let planned = selector
                .select_uncached(p)
                .unwrap()
                .map(|s| (s.solution.index, s.fitness));
            let cached = selector
                .select(p)
                .unwrap()
                .map(|s| (s.solution.index, s.fitness));
            assert_eq!(planned, walk, "{p:?} on {}", hw.arch_name);
            assert_eq!(cached, walk);
        }
    }
}

/// On the real tables, the tree search answers exactly what Tensile's
/// plain walk answers: a traced selection walks every table entry by entry
/// as Tensile does (its trace prints each step), an untraced one searches
/// the tree. Solution and fitness agree on every problem.
#[test]
fn the_tree_search_equals_tensiles_walk_on_the_real_tables() {
    let c = catalog();
    let problems = xtask::catalog_queries::problems(500, 0x7ee5_ea7c);
    let mut answered = 0;
    for hw in [
        mi210(),
        Hardware::new("gfx908:sramecc+:xnack-", 120, Some(0x738c)),
        Hardware::new("gfx1100", 96, Some(0x744c)),
    ] {
        for p in &problems {
            let searched = c
                .select(p, &hw)
                .unwrap()
                .map(|s| (s.solution.index, s.fitness));
            let (walked, _trace) = c.select_traced(p, &hw);
            let walked = walked.unwrap().map(|s| (s.solution.index, s.fitness));
            assert_eq!(searched, walked, "{p:?} on {}", hw.arch_name);
            answered += usize::from(searched.is_some());
        }
    }
    assert!(answered > 1000, "{answered} of 1500 answered");
}

/// The two-thread reader (files of 4 MB and more) builds the same catalog
/// as the one-pass reader: the same bytes when written back.
#[test]
fn the_parallel_and_sequential_readers_agree() {
    let path = xtask::rocblas_catalog::fetch().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let sequential = Catalog::from_msgpack(&bytes).unwrap();
    let parallel = catalog();
    assert_eq!(sequential.to_msgpack(), parallel.to_msgpack());
}

/// `aqueduct::Gemm` poses an Int8 GEMM as rocBLAS poses its I8II one
/// (Int8 A and B, Int32 C and D, Int32 compute, high-precision
/// accumulate): AMD's own catalog answers it, for every transpose, with
/// an I8II kernel of the asked types that accepts the problem.
#[test]
fn an_int8_gemm_as_aqueduct_poses_it_gets_rocblas_i8ii_kernels() {
    use aqueduct::Gemm;
    use aqueduct::catalog::DataType;
    let c = catalog();
    for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
        for (m, n, k) in [(4096, 4096, 4096), (1000, 300, 77)] {
            let gemm = Gemm::new(m, n, k, DataType::Int8, DataType::Int32)
                .transposed(ta, tb)
                .scaled(3.0, -2.0);
            let p = gemm.problem();
            let s = c
                .select(&p, &mi210())
                .unwrap_or_else(|e| panic!("{gemm}: {e}"))
                .unwrap_or_else(|| panic!("{gemm}: no rocBLAS solution"));
            let sol = s.solution;
            assert!(sol.name.contains("_I8II_"), "{gemm}: {}", sol.name);
            assert_eq!(
                sol.problem_type.types,
                [
                    DataType::Int8,
                    DataType::Int8,
                    DataType::Int32,
                    DataType::Int32
                ],
                "{gemm}: {}",
                sol.name
            );
            assert!(sol.problem_predicate.eval(&p), "{gemm}: {}", sol.name);
            // What the posing decides: without high-precision accumulate
            // (an Int32 sum of Int8 products) rocBLAS has no kernel.
            let mut low = p.clone();
            low.high_precision_accumulate = false;
            let other = c.select(&low, &mi210()).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                other.is_none(),
                "{gemm} without HPA: {:?}",
                other.map(|s| &s.solution.name)
            );
        }
    }
}
