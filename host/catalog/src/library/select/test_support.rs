//! Builders the selection tests share: a small random generator, and
//! MessagePack trees of predicates and solutions to make catalogs from.
//!
//! Tests only. May assume: nothing. Costs: nothing at run time.

use crate::msgpack::Value;

pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub(super) fn s(v: &str) -> Value {
    Value::Str(v.into())
}

pub(super) fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (s(k), v)).collect())
}

/// A predicate node: `{type, ...extra}`.
pub(super) fn typed(ty: &str, extra: Vec<(&str, Value)>) -> Value {
    let mut e = vec![("type", s(ty))];
    e.extend(extra);
    map(e)
}

/// A size mapping with every key one needs: macro tile `mt` × `mt`,
/// `globalSplitU` `gsu`, `workspaceSizePerElemC` `ws`; arrays of ones,
/// flags false, else 1.
pub(super) fn size_mapping(mt: u64, gsu: u64, ws: u64) -> Value {
    map(crate::solution::SIZE_MAPPING_KEYS
        .into_iter()
        .map(|k| {
            let v = match k {
                "workGroup" | "threadTile" => Value::Array(vec![Value::UInt(1); 3]),
                "macroTile" => Value::Array(vec![Value::UInt(mt), Value::UInt(mt), Value::UInt(1)]),
                "persistentKernelAlongBatch" | "sourceKernel" => Value::Bool(false),
                "globalSplitU" => Value::UInt(gsu),
                "workspaceSizePerElemC" => Value::UInt(ws),
                _ => Value::UInt(1),
            };
            (k, v)
        })
        .collect())
}

/// An NN single-precision solution `index` with these predicates and
/// size mapping.
pub(super) fn solution_with(
    index: u64,
    hardware: Value,
    problem: Value,
    task: Option<Value>,
    size_mapping: Value,
) -> Value {
    let mut fields = vec![
        ("name", s(&format!("k{index}"))),
        ("index", Value::UInt(index)),
        ("debugKernel", Value::Bool(false)),
        ("hardwarePredicate", hardware),
        ("problemPredicate", problem),
        ("problemType", float_nn_type()),
        ("sizeMapping", size_mapping),
    ];
    if let Some(t) = task {
        fields.push(("taskPredicate", t));
    }
    map(fields)
}

/// A solution whose predicate passes when M is a multiple of `m` and
/// K is at least `min_k`: enough variety for walks to skip, fall back
/// and tie.
pub(super) fn solution(index: u64, m: u64, min_k: u64) -> Value {
    let problem = typed(
        "And",
        vec![(
            "value",
            Value::Array(vec![
                typed(
                    "SizeMultiple",
                    vec![("index", Value::UInt(0)), ("value", Value::UInt(m))],
                ),
                typed("GlobalSplitUCheckMinK", vec![("value", Value::UInt(min_k))]),
            ]),
        )],
    );
    solution_with(
        index,
        typed("TruePred", vec![]),
        problem,
        None,
        size_mapping(1, 1, 1),
    )
}

/// The problem type of an NN single-precision GEMM.
fn float_nn_type() -> Value {
    map(vec![
        (
            "operationIdentifier",
            s("Contraction_l_Ailk_Bljk_Cijk_Dijk"),
        ),
        ("aType", s("Float")),
        ("bType", s("Float")),
        ("cType", s("Float")),
        ("dType", s("Float")),
        ("useBeta", Value::Bool(true)),
        ("highPrecisionAccumulate", Value::Bool(false)),
    ])
}
