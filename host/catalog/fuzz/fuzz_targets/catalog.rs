//! Any bytes given to the catalog reader yield a catalog or a typed error;
//! a panic, overflow, out-of-bounds access or runaway allocation is a
//! finding. A catalog that loads must survive a round trip through
//! `to_msgpack` (it reloads, and re-encoding it is idempotent), and
//! selection on it must not panic. Bytes that are UTF-8 also go to the YAML
//! reader. Seed the corpus with `corpus/catalog/seed-*` (small valid
//! catalogs: Hardware/ProblemMap/Problem/Matching, Single, DecisionTree,
//! keys out of order, a repeated key, deep YAML nesting) and use
//! `-dict=catalog.dict` (the keys and type names catalogs use).
//!
//! Each input runs on a thread with a small stack ([`STACK`]): recursion
//! that grows with the input then overflows within libFuzzer's default
//! input size (a few kilobytes), where on an 8 MiB main thread it would
//! need inputs far larger than the fuzzer tries.
#![no_main]

use aqueduct_catalog::{Catalog, DataType, Hardware, Problem, Transpose};
use libfuzzer_sys::fuzz_target;

/// Loads, round-trips and queries one catalog.
fn exercise(catalog: &Catalog) {
    let first = catalog.to_msgpack();
    let reloaded = match Catalog::from_msgpack(&first) {
        Ok(c) => c,
        Err(e) => panic!("a catalog's own encoding does not load again: {e}"),
    };
    let second = reloaded.to_msgpack();
    assert!(
        first == second,
        "re-encoding is not idempotent ({} bytes, then {} bytes)",
        first.len(),
        second.len()
    );

    let problems = [
        Problem::gemm(
            Transpose::None,
            Transpose::Transpose,
            64,
            32,
            16,
            DataType::Float,
        ),
        Problem::gemm(
            Transpose::None,
            Transpose::None,
            1024,
            1,
            4096,
            DataType::Half,
        ),
    ];
    let gpus = [
        Hardware::new("gfx90a", 104, Some(0x740f)),
        Hardware::new("gfx942:sramecc+:xnack-", 304, None),
    ];
    for p in &problems {
        for hw in &gpus {
            let _ = catalog.select(p, hw);
        }
    }
    let _ = reloaded.select(&problems[0], &gpus[0]);
}

/// The stack each input runs on: enough for the readers' bounded nesting
/// (64 library levels, 128 YAML levels), far too little for recursion that
/// follows the input's depth.
const STACK: usize = 256 << 10;

fn run(data: &[u8]) {
    if let Ok(catalog) = Catalog::from_msgpack(data) {
        exercise(&catalog);
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(catalog) = Catalog::from_yaml(text)
    {
        exercise(&catalog);
    }
}

fuzz_target!(|data: &[u8]| {
    let data = data.to_vec();
    let worker = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || run(&data))
        .expect("spawn the worker thread");
    if let Err(panic) = worker.join() {
        std::panic::resume_unwind(panic);
    }
});
