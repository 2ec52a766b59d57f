//! The node model as Tensile's MessagePack: reading (with the solution
//! references resolved, or held raw for the parallel reader to link) and
//! writing back in the file's own order.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::select::conditions::Conditions;
use super::{
    Distance, Feature, Forest, HardwareRow, MAX_ARITY, Matching, Node, Origin, Placeholder,
    ProblemMap, ProblemRow, Property, SolutionId, Target, Tree, TreeNode,
};
use crate::box_tree::BoxTree;
use crate::decode::{Decoder, field, fields, fields_after};
use crate::error::{CatalogError, Result};
use crate::msgpack::Writer;
use crate::predicate::{HardwarePredicate, Predicate};
use crate::stdsort::std_sort_by;

// ---------------------------------------------------------------------------
// Decoding and encoding
// ---------------------------------------------------------------------------

/// What decoding a library tree needs besides the reader.
pub(crate) struct Ctx<'a> {
    /// Solution `index` → position in the file's list.
    pub solutions: &'a HashMap<i64, SolutionId, crate::FxBuild>,
    /// The solutions themselves (read before the library).
    pub list: &'a [crate::Solution],
    pub origin: &'a Arc<Origin>,
    /// When the library is read before (or beside) the solutions: the
    /// indices met so far; nodes hold positions in this list until
    /// [`Node::link`] replaces them.
    pub raw: Option<&'a std::cell::RefCell<Vec<i64>>>,
}

/// Most bytes a table entry [`plain_entry`] reads may take: a map
/// header, `key` with ten 9-byte integers, `index` and `speed`.
const ENTRY_BYTES: usize = 1 + 4 + 1 + 10 * 9 + 6 + 9 + 6 + 9;

/// A key of a table entry, as [`plain_entry`] reads it.
struct EntryKey {
    values: [i64; MAX_ARITY],
    len: usize,
}

impl EntryKey {
    fn as_slice(&self) -> &[i64] {
        &self.values[..self.len]
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// A table entry as Tensile and TensileLite write it, read straight from
/// its bytes: `{key: [1 to 10 integers], index: integer}` and, in a map of
/// three, `speed: float` last (speed 0 when absent). Returns the bytes
/// used, the key, the index and the speed; `None` when the entry has any
/// other form (other keys or order, another encoding, an index that is
/// not a solution's), which the caller then reads the long way, with its
/// checks and errors.
#[inline]
fn plain_entry(b: &[u8]) -> Option<(usize, EntryKey, i64, f64)> {
    use crate::msgpack::{float_prefix, i64_prefix};
    // Each step reads from `b[*at..]` and moves `at` past what it read.
    let literal = |at: &mut usize, lit: &[u8]| {
        (b.get(*at..*at + lit.len())? == lit).then(|| *at += lit.len())
    };
    let int = |at: &mut usize| {
        let (v, used) = i64_prefix(b.get(*at..)?)?;
        *at += used;
        Some(v)
    };
    let fields = match *b.first()? {
        0x82 => 2,
        0x83 => 3,
        _ => return None,
    };
    let mut at = 1;
    literal(&mut at, b"\xa3key")?;
    let arity = match *b.get(at)? {
        m @ 0x91..=0x9a => (m & 0x0f) as usize,
        _ => return None,
    };
    at += 1;
    let mut key = EntryKey {
        values: [0; MAX_ARITY],
        len: arity,
    };
    for v in &mut key.values[..arity] {
        *v = int(&mut at)?;
    }
    literal(&mut at, b"\xa5index")?;
    let index = int(&mut at)?;
    if index == -1 {
        return None;
    }
    let mut speed = 0.0;
    if fields == 3 {
        literal(&mut at, b"\xa5speed")?;
        let (value, used) = float_prefix(b.get(at..)?)?;
        (speed, at) = (value, at + used);
    }
    Some((at, key, index, speed))
}

fn solution_ref(d: &Decoder<'_>, cx: &Ctx<'_>, index: i64) -> Result<SolutionId> {
    if let Some(raw) = cx.raw {
        let mut raw = raw.borrow_mut();
        raw.push(index);
        return u32::try_from(raw.len() - 1)
            .map_err(|_| d.invalid("more than 2^32 solution references"));
    }
    cx.solutions
        .get(&index)
        .copied()
        .ok_or_else(|| CatalogError::MissingSolution { at: d.at(), index })
}

fn rows<P>(
    d: &mut Decoder<'_>,
    cx: &Ctx<'_>,
    len: usize,
    mut decode_pred: impl FnMut(&mut Decoder<'_>) -> Result<P>,
) -> Result<Vec<(P, Node)>> {
    field(d, len, "rows", |d| {
        d.array("rows", |d| {
            let m = d.map_len()?;
            let (mut pred, mut lib) = (None, None);
            fields(d, m, |d, k| match k {
                "predicate" => {
                    d.push_key("predicate");
                    pred = Some(decode_pred(d)?);
                    d.pop();
                    Ok(true)
                }
                "library" => {
                    d.push_key("library");
                    lib = Some(Node::decode(d, cx)?);
                    d.pop();
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            let pred = pred.ok_or_else(|| d.missing("predicate"))?;
            let lib = lib.ok_or_else(|| d.missing("library"))?;
            Ok((pred, lib))
        })
    })
}

fn property(d: &mut Decoder<'_>) -> Result<Property> {
    let t = d.typed()?;
    let mut index = None;
    fields(d, t.len, |d, k| {
        if k != "index" {
            return Ok(false);
        }
        index = Some(d.u64()?);
        Ok(true)
    })?;
    let name = t.ty.to_string();
    if Property::from_name(&name, 0).is_none() {
        return Err(d.unknown("property", &name));
    }
    let index = index.ok_or_else(|| d.missing("index"))?;
    Property::from_name(&name, index).ok_or_else(|| d.unknown("property", &name))
}

fn feature(d: &mut Decoder<'_>) -> Result<Feature> {
    let t = d.typed()?;
    let ty = t.ty.to_string();
    let mut index = None;
    let mut scalar = None;
    let mut parts: [Option<f32>; 4] = [None; 4];
    let is_map = matches!(ty.as_str(), "CUGranularity" | "WavesPerSIMD");
    fields(d, t.len, |d, k| match k {
        "index" => {
            index = Some(d.u64()?);
            Ok(true)
        }
        "value" if is_map => {
            let n = d.map_len()?;
            fields(d, n, |d, k| {
                let slot = match k {
                    "mt0" => 0,
                    "mt1" => 1,
                    "cus" => 2,
                    "ws" => 3,
                    _ => return Ok(false),
                };
                parts[slot] = Some(d.f64()? as f32);
                Ok(true)
            })?;
            Ok(true)
        }
        "value" => {
            scalar = Some(d.f64()? as f32);
            Ok(true)
        }
        _ => Ok(false),
    })?;
    let part = |i: usize, name: &'static str| parts[i].ok_or_else(|| d.missing(name));
    let f = match ty.as_str() {
        "Tile0Granularity" => Feature::Tile0Granularity(scalar.ok_or_else(|| d.missing("value"))?),
        "Tile1Granularity" => Feature::Tile1Granularity(scalar.ok_or_else(|| d.missing("value"))?),
        "CUGranularity" => Feature::CuGranularity {
            mt0: part(0, "mt0")?,
            mt1: part(1, "mt1")?,
            cus: part(2, "cus")?,
        },
        "WavesPerSIMD" => Feature::WavesPerSimd {
            mt0: part(0, "mt0")?,
            mt1: part(1, "mt1")?,
            cus: part(2, "cus")?,
            ws: part(3, "ws")?,
        },
        "FreeSizeA" | "FreeSizeB" | "BoundSize" | "BatchSize" => {
            let i = index.ok_or_else(|| d.missing("index"))?;
            Feature::Size(Property::from_name(&ty, i).ok_or_else(|| d.unknown("feature", &ty))?)
        }
        other => return Err(d.unknown("decision-tree feature", other)),
    };
    Ok(f)
}

impl Node {
    /// Replaces the provisional solution ids of a tree read with
    /// [`Ctx::raw`] by real ones, and finishes its tables.
    pub(crate) fn link(
        &mut self,
        resolve: &dyn Fn(SolutionId) -> Result<SolutionId>,
        list: &[crate::Solution],
    ) -> Result<()> {
        match self {
            Node::Hardware(rows) => rows
                .iter_mut()
                .try_for_each(|r| r.library.link(resolve, list)),
            Node::Problem(rows) => rows
                .iter_mut()
                .try_for_each(|r| r.library.link(resolve, list)),
            Node::ProblemMap(m) => m
                .entries
                .iter_mut()
                .try_for_each(|(_, n)| n.link(resolve, list)),
            Node::Single(id) => {
                *id = resolve(*id)?;
                Ok(())
            }
            Node::Matching(m) => {
                for t in m.targets.iter_mut() {
                    if let Target::Solution(id) = t {
                        *id = resolve(*id)?;
                    }
                }
                m.values
                    .iter_mut()
                    .try_for_each(|n| n.link(resolve, list))?;
                m.group(list);
                Ok(())
            }
            Node::DecisionTree(f) => f
                .trees
                .iter_mut()
                .try_for_each(|t| t.value.link(resolve, list)),
            Node::Placeholder(_) => Ok(()),
        }
    }
}

/// Writes a Hardware or Problem node: `{type, rows: [{predicate, library}]}`.
fn encode_rows<'a, P: 'a>(
    w: &mut Writer,
    ty: &str,
    rows: impl ExactSizeIterator<Item = (&'a P, &'a Node)>,
    encode_predicate: impl Fn(&P, &mut Writer),
    index_of: &dyn Fn(SolutionId) -> i64,
) {
    w.map(2);
    w.str("type");
    w.str(ty);
    w.str("rows");
    w.array(rows.len());
    for (predicate, library) in rows {
        w.map(2);
        w.str("predicate");
        encode_predicate(predicate, w);
        w.str("library");
        library.encode(w, index_of);
    }
}

impl Node {
    pub(crate) fn decode(d: &mut Decoder<'_>, cx: &Ctx<'_>) -> Result<Node> {
        d.nested(|d| {
            let t = d.typed()?;
            let node = match t.ty.as_str() {
                "Hardware" => {
                    let rows = rows(d, cx, t.len, Predicate::decode)?;
                    Node::Hardware(
                        rows.into_iter()
                            .map(
                                |(predicate, library): (HardwarePredicate, Node)| HardwareRow {
                                    chips: predicate.chip_ids().into_iter().collect(),
                                    predicate,
                                    library,
                                },
                            )
                            .collect(),
                    )
                }
                "Problem" => {
                    let rows = rows(d, cx, t.len, Predicate::decode)?;
                    Node::Problem(
                        rows.into_iter()
                            .map(|(predicate, library)| ProblemRow {
                                class_only: predicate.class_only(),
                                predicate,
                                library,
                            })
                            .collect(),
                    )
                }
                "ProblemMap" => Node::ProblemMap(Box::new(Self::problem_map(d, cx, t.len)?)),
                "Single" => {
                    let index = field(d, t.len, "index", Decoder::i64)?;
                    Node::Single(solution_ref(d, cx, index)?)
                }
                "Matching" => Node::Matching(Box::new(Self::matching(d, cx, t.len)?)),
                "DecisionTree" => Node::DecisionTree(Box::new(Self::forest(d, cx, t.len)?)),
                "Placeholder" => {
                    let prefix = field(d, t.len, "value", Decoder::boxed_str)?;
                    if prefix.is_empty()
                        || prefix.contains('/')
                        || prefix.contains('\\')
                        || &*prefix == ".."
                    {
                        return Err(
                            d.invalid(format!("placeholder {prefix:?} is not a plain file name"))
                        );
                    }
                    Node::Placeholder(Box::new(Placeholder {
                        prefix,
                        origin: cx.origin.clone(),
                        child: OnceLock::new(),
                    }))
                }
                other => return Err(d.unknown("library node", other)),
            };
            Ok(node)
        })
    }

    fn problem_map(d: &mut Decoder<'_>, cx: &Ctx<'_>, len: usize) -> Result<ProblemMap> {
        let mut map = None;
        let mut property_ok = false;
        fields(d, len, |d, k| match k {
            "property" => {
                d.push_key("property");
                let t = d.typed()?;
                if t.ty != "OperationIdentifier" {
                    return Err(d.unknown("problem-map property", &t.ty));
                }
                fields(d, t.len, |_, _| Ok(false))?;
                d.pop();
                property_ok = true;
                Ok(true)
            }
            "map" => {
                d.push_key("map");
                let n = d.map_len()?;
                let mut m = ProblemMap {
                    entries: Vec::with_capacity(d.r.reservation(n).min(4096)),
                    index: HashMap::with_capacity_and_hasher(
                        d.r.reservation(n).min(4096),
                        Default::default(),
                    ),
                };
                for _ in 0..n {
                    let key: Box<str> = d.key_string()?.into();
                    d.push_name(&key);
                    let node = Node::decode(d, cx)?;
                    d.pop();
                    if m.index.insert(key.clone(), m.entries.len()).is_some() {
                        return Err(d.invalid(format!("operation {key:?} appears twice")));
                    }
                    m.entries.push((key, node));
                }
                d.pop();
                map = Some(m);
                Ok(true)
            }
            _ => Ok(false),
        })?;
        if !property_ok {
            return Err(d.missing("property"));
        }
        map.ok_or_else(|| d.missing("map"))
    }

    fn matching(d: &mut Decoder<'_>, cx: &Ctx<'_>, len: usize) -> Result<Matching> {
        /// A table entry's keys as Tensile writes them, which the decoder
        /// reads by their bytes.
        const FAST_KEYS: [&str; 3] = ["key", "index", "speed"];
        let mut properties: Option<Vec<Property>> = None;
        let mut distance = None;
        // The table may precede `properties`; entries are kept raw until
        // both are known.
        let mut keys: Vec<i64> = Vec::new();
        let mut arities: Vec<u8> = Vec::new();
        let mut speeds: Vec<f64> = Vec::new();
        let mut targets: Vec<Target> = Vec::new();
        let mut values: Vec<Node> = Vec::new();
        let mut table_seen = false;
        fields(d, len, |d, k| match k {
            "properties" => {
                properties = Some(d.array("properties", property)?);
                Ok(true)
            }
            "distance" => {
                let name = d.string()?;
                distance = Some(match name.as_str() {
                    "Euclidean" => Distance::Euclidean,
                    "Manhattan" => Distance::Manhattan,
                    "Ratio" => Distance::Ratio,
                    "JSD" => Distance::Jsd,
                    "Equality" => Distance::Equality,
                    "GridBased" => Distance::GridBased,
                    "Random" => {
                        return Err(d.invalid(
                            "distance Random is not supported (it draws rand(): no answer is reproducible)",
                        ));
                    }
                    other => return Err(d.unknown("distance", other)),
                });
                Ok(true)
            }
            "table" => {
                table_seen = true;
                d.push_key("table");
                let n = d.array_len()?;
                let cap = d.r.reservation(n);
                speeds.reserve(cap);
                if let Some(raw) = cx.raw {
                    raw.borrow_mut().reserve(cap);
                }
                keys.reserve(cap * 4);
                targets.reserve(cap);
                arities.reserve(cap);
                for i in 0..n {
                    if let Some((used, key, index, speed)) = plain_entry(d.r.ahead(ENTRY_BYTES)) {
                        d.r.consume(used);
                        keys.extend_from_slice(key.as_slice());
                        arities.push(key.len() as u8);
                        speeds.push(speed);
                        // The entry's place is named only in an error.
                        let id = solution_ref(d, cx, index).or_else(|_| {
                            d.push_index(i);
                            let found = solution_ref(d, cx, index);
                            d.pop();
                            found
                        })?;
                        targets.push(Target::Solution(id));
                        continue;
                    }
                    d.push_index(i);
                    let m = d.map_len()?;
                    let mut arity = None;
                    let mut speed = 0.0;
                    let mut index = -1i64;
                    let mut value = None;
                    // Tensile writes every entry as {key, index, speed},
                    // TensileLite's GridBased ones as {key, index}: read
                    // those bytes directly, and anything else the long way.
                    let mut rest = m;
                    if (m == 3 || m == 2) && d.r.literal(b"\xa3key") {
                        let a = d.array_len()?;
                        if a == 0 || a > MAX_ARITY {
                            return Err(d.invalid(format!("a key of {a} values (1 to 10 allowed)")));
                        }
                        for _ in 0..a {
                            keys.push(d.i64()?);
                        }
                        arity = Some(a as u8);
                        rest = m - 1;
                        if d.r.literal(b"\xa5index") {
                            index = d.i64()?;
                            rest = m - 2;
                            if rest == 1 && d.r.literal(b"\xa5speed") {
                                speed = d.f64()?;
                                rest = 0;
                            }
                        }
                    }
                    fields_after(d, rest, &FAST_KEYS[..m - rest], |d, k| match k {
                        "key" => {
                            let a = d.array_len()?;
                            if a == 0 || a > MAX_ARITY {
                                return Err(
                                    d.invalid(format!("a key of {a} values (1 to 10 allowed)"))
                                );
                            }
                            for _ in 0..a {
                                keys.push(d.i64()?);
                            }
                            arity = Some(a as u8);
                            Ok(true)
                        }
                        "speed" => {
                            speed = d.f64()?;
                            Ok(true)
                        }
                        "index" => {
                            index = d.i64()?;
                            Ok(true)
                        }
                        "value" => {
                            value = Some(Node::decode(d, cx)?);
                            Ok(true)
                        }
                        _ => Ok(false),
                    })?;
                    arities.push(arity.ok_or_else(|| d.missing("key"))?);
                    speeds.push(speed);
                    targets.push(if index != -1 {
                        Target::Solution(solution_ref(d, cx, index)?)
                    } else {
                        let node = value.ok_or_else(|| d.missing("value"))?;
                        values.push(node);
                        Target::Node(values.len() as u32 - 1)
                    });
                    d.pop();
                }
                d.pop();
                Ok(true)
            }
            _ => Ok(false),
        })?;
        let properties = properties.ok_or_else(|| d.missing("properties"))?;
        let distance = distance.ok_or_else(|| d.missing("distance"))?;
        if !table_seen {
            return Err(d.missing("table"));
        }
        let arity = properties.len();
        if arity == 0 {
            return Err(d.invalid("a matching table needs at least one property"));
        }
        if distance == Distance::GridBased && arity != 4 {
            return Err(d.invalid(format!(
                "a GridBased table needs 4 properties (M, N, batch, K), found {arity}"
            )));
        }
        if let Some(i) = arities.iter().position(|&a| a as usize != arity) {
            return Err(d.invalid(format!(
                "table entry {i} has a key of {} values for {arity} properties",
                arities[i]
            )));
        }
        // Sort as Tensile's loader does, with libstdc++'s algorithm so that
        // ties end up where Tensile's end up.
        let n = speeds.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let key_of = |i: u32| &keys[i as usize * arity..(i as usize + 1) * arity];
        // A table already in strictly ascending key order (TensileLite
        // writes its tables sorted) is what any sort leaves it as: no two
        // entries compare equal, so there are no ties to place.
        let strictly_sorted = (1..n as u32).all(|i| key_of(i - 1) < key_of(i));
        if !strictly_sorted {
            std_sort_by(&mut order, |&a, &b| {
                let (ka, kb) = (key_of(a), key_of(b));
                ka < kb || (ka == kb && speeds[a as usize] > speeds[b as usize])
            });
        }
        // Already in order: the vectors are the sorted table as they are.
        let (sorted_keys, targets, speeds): (Vec<i64>, Box<[Target]>, Box<[f64]>) =
            if strictly_sorted {
                (keys, targets.into_boxed_slice(), speeds.into_boxed_slice())
            } else {
                let mut sorted_keys = Vec::with_capacity(keys.len());
                for &i in &order {
                    sorted_keys.extend_from_slice(key_of(i));
                }
                (
                    sorted_keys,
                    order.iter().map(|&i| targets[i as usize]).collect(),
                    order.iter().map(|&i| speeds[i as usize]).collect(),
                )
            };
        let boxes = match distance {
            Distance::Euclidean | Distance::Manhattan if values.is_empty() => {
                BoxTree::build(&sorted_keys, arity)
            }
            _ => None,
        };
        let mut m = Matching {
            boxes,
            conditions: Conditions::default(),
            properties: properties.into_boxed_slice(),
            distance,
            keys: sorted_keys.into_boxed_slice(),
            speeds,
            targets,
            file_pos: order.into_boxed_slice(),
            values,
            solutions: Box::new([]),
            local: Box::new([]),
            group_starts: Box::new([]),
            group_positions: Box::new([]),
            grid: Default::default(),
        };
        if cx.raw.is_none() {
            m.group(cx.list);
        }
        Ok(m)
    }

    fn forest(d: &mut Decoder<'_>, cx: &Ctx<'_>, len: usize) -> Result<Forest> {
        let mut features = None;
        let mut trees = None;
        fields(d, len, |d, k| match k {
            "features" => {
                features = Some(d.array("features", feature)?);
                Ok(true)
            }
            "trees" => {
                d.push_key("trees");
                let n = d.array_len()?;
                let mut v = Vec::with_capacity(d.r.reservation(n).min(4096));
                for i in 0..n {
                    d.push_index(i);
                    let m = d.map_len()?;
                    let (mut nodes, mut value) = (None, None);
                    fields(d, m, |d, k| match k {
                        "tree" => {
                            let count = d.array_len()?;
                            let mut t = Vec::with_capacity(d.r.reservation(count));
                            for _ in 0..count {
                                let fm = d.map_len()?;
                                let mut node = [None; 4];
                                fields(d, fm, |d, k| {
                                    let slot = match k {
                                        "featureIdx" => 0,
                                        "threshold" => 1,
                                        "nextIdxLTE" => 2,
                                        "nextIdxGT" => 3,
                                        _ => return Ok(false),
                                    };
                                    node[slot] = Some(d.f64()?);
                                    Ok(true)
                                })?;
                                let names = ["featureIdx", "threshold", "nextIdxLTE", "nextIdxGT"];
                                let mut vals = [0.0; 4];
                                for s in 0..4 {
                                    vals[s] = node[s].ok_or_else(|| d.missing(names[s]))?;
                                }
                                t.push((vals[0], vals[1] as f32, vals[2], vals[3]));
                            }
                            nodes = Some(t);
                            Ok(true)
                        }
                        "value" => {
                            value = Some(Node::decode(d, cx)?);
                            Ok(true)
                        }
                        _ => Ok(false),
                    })?;
                    let raw = nodes.ok_or_else(|| d.missing("tree"))?;
                    let value = value.ok_or_else(|| d.missing("value"))?;
                    v.push((raw, value));
                    d.pop();
                }
                d.pop();
                trees = Some(v);
                Ok(true)
            }
            _ => Ok(false),
        })?;
        let features = features.ok_or_else(|| d.missing("features"))?;
        let raw_trees = trees.ok_or_else(|| d.missing("trees"))?;
        let mut out = Vec::with_capacity(raw_trees.len());
        for (ti, (raw, value)) in raw_trees.into_iter().enumerate() {
            let count = raw.len();
            let link = |x: f64| -> Option<i32> {
                let i = x as i64;
                (x == i as f64 && (i == -1 || i == -2 || (0..count as i64).contains(&i)))
                    .then_some(i as i32)
            };
            let mut nodes = Vec::with_capacity(count);
            for (ni, (f, threshold, lte, gt)) in raw.into_iter().enumerate() {
                let feature = f as i64;
                if f != feature as f64 || feature < 0 || feature as usize >= features.len() {
                    return Err(d.invalid(format!(
                        "tree {ti} node {ni}: feature index {f} out of range"
                    )));
                }
                let (Some(next_lte), Some(next_gt)) = (link(lte), link(gt)) else {
                    return Err(d.invalid(format!(
                        "tree {ti} node {ni}: a link leads outside the tree"
                    )));
                };
                nodes.push(TreeNode {
                    feature: feature as u32,
                    threshold,
                    next_lte,
                    next_gt,
                });
            }
            out.push(Tree {
                nodes: nodes.into_boxed_slice(),
                value,
            });
        }
        Ok(Forest {
            features: features.into_boxed_slice(),
            trees: out.into_boxed_slice(),
        })
    }

    /// Writes the node; `index_of` maps a solution position to its index.
    pub fn encode(&self, w: &mut Writer, index_of: &dyn Fn(SolutionId) -> i64) {
        let head = |w: &mut Writer, n: usize, ty: &str| {
            w.map(n);
            w.str("type");
            w.str(ty);
        };
        match self {
            Node::Hardware(rows) => {
                let rows = rows.iter().map(|r| (&r.predicate, &r.library));
                encode_rows(w, "Hardware", rows, |p, w| p.encode(w), index_of);
            }
            Node::Problem(rows) => {
                let rows = rows.iter().map(|r| (&r.predicate, &r.library));
                encode_rows(w, "Problem", rows, |p, w| p.encode(w), index_of);
            }
            Node::ProblemMap(m) => {
                head(w, 3, "ProblemMap");
                w.str("property");
                w.map(1);
                w.str("type");
                w.str("OperationIdentifier");
                w.str("map");
                w.map(m.entries.len());
                for (k, node) in &m.entries {
                    w.str(k);
                    node.encode(w, index_of);
                }
            }
            Node::Single(id) => {
                head(w, 2, "Single");
                w.str("index");
                w.i64(index_of(*id));
            }
            Node::Matching(m) => {
                head(w, 4, "Matching");
                w.str("properties");
                w.array(m.properties.len());
                for p in m.properties.iter() {
                    w.map(2);
                    w.str("type");
                    w.str(p.name());
                    w.str("index");
                    w.u64(p.index());
                }
                w.str("table");
                w.array(m.len());
                // Back in file order, so that a re-sort reproduces ours.
                let mut by_file: Vec<usize> = (0..m.len()).collect();
                by_file.sort_unstable_by_key(|&i| m.file_pos[i]);
                for i in by_file {
                    w.map(3);
                    w.str("key");
                    w.array(m.arity());
                    m.key(i).iter().for_each(|k| w.i64(*k));
                    match m.targets[i] {
                        Target::Solution(id) => {
                            w.str("index");
                            w.i64(index_of(id));
                        }
                        Target::Node(n) => {
                            w.str("value");
                            m.values[n as usize].encode(w, index_of);
                        }
                    }
                    w.str("speed");
                    w.f64(m.speeds[i]);
                }
                w.str("distance");
                w.str(m.distance.name());
            }
            Node::DecisionTree(f) => {
                head(w, 3, "DecisionTree");
                w.str("features");
                w.array(f.features.len());
                for feat in f.features.iter() {
                    match *feat {
                        Feature::Size(p) => {
                            w.map(2);
                            w.str("type");
                            w.str(p.name());
                            w.str("index");
                            w.u64(p.index());
                        }
                        Feature::Tile0Granularity(v) | Feature::Tile1Granularity(v) => {
                            w.map(2);
                            w.str("type");
                            w.str(if matches!(feat, Feature::Tile0Granularity(_)) {
                                "Tile0Granularity"
                            } else {
                                "Tile1Granularity"
                            });
                            w.str("value");
                            w.f64(v as f64);
                        }
                        Feature::CuGranularity { mt0, mt1, cus } => {
                            w.map(2);
                            w.str("type");
                            w.str("CUGranularity");
                            w.str("value");
                            w.map(3);
                            for (k, v) in [("mt0", mt0), ("mt1", mt1), ("cus", cus)] {
                                w.str(k);
                                w.f64(v as f64);
                            }
                        }
                        Feature::WavesPerSimd { mt0, mt1, cus, ws } => {
                            w.map(2);
                            w.str("type");
                            w.str("WavesPerSIMD");
                            w.str("value");
                            w.map(4);
                            for (k, v) in [("mt0", mt0), ("mt1", mt1), ("cus", cus), ("ws", ws)] {
                                w.str(k);
                                w.f64(v as f64);
                            }
                        }
                    }
                }
                w.str("trees");
                w.array(f.trees.len());
                for t in f.trees.iter() {
                    w.map(2);
                    w.str("tree");
                    w.array(t.nodes.len());
                    for n in t.nodes.iter() {
                        w.map(4);
                        w.str("featureIdx");
                        w.u64(n.feature as u64);
                        w.str("threshold");
                        w.f64(n.threshold as f64);
                        w.str("nextIdxLTE");
                        w.i64(n.next_lte as i64);
                        w.str("nextIdxGT");
                        w.i64(n.next_gt as i64);
                    }
                    w.str("value");
                    t.value.encode(w, index_of);
                }
            }
            Node::Placeholder(p) => {
                head(w, 2, "Placeholder");
                w.str("value");
                w.str(&p.prefix);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{key: [..], index: i[, speed: s]}` with each integer in the given
    /// MessagePack encoding.
    fn entry(key: &[&[u8]], index: &[u8], speed: Option<&[u8]>) -> Vec<u8> {
        let mut b = vec![if speed.is_some() { 0x83 } else { 0x82 }];
        b.extend_from_slice(b"\xa3key");
        b.push(0x90 | key.len() as u8);
        key.iter().for_each(|k| b.extend_from_slice(k));
        b.extend_from_slice(b"\xa5index");
        b.extend_from_slice(index);
        if let Some(s) = speed {
            b.extend_from_slice(b"\xa5speed");
            b.extend_from_slice(s);
        }
        b
    }

    #[test]
    fn plain_entries_are_read_in_every_integer_encoding() {
        let key: [&[u8]; 10] = [
            &[0x05],
            &[0xff],
            &[0xcc, 0xc8],
            &[0xcd, 0x01, 0x00],
            &[0xce, 0x00, 0x01, 0x00, 0x00],
            &[0xcf, 0, 0, 0, 1, 0, 0, 0, 0],
            &[0xd0, 0x80],
            &[0xd1, 0xff, 0x00],
            &[0xd2, 0xff, 0xff, 0xff, 0x00],
            &[0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
        ];
        let want = [5, -1, 200, 256, 65_536, 1 << 32, -128, -256, -256, -2];
        let speed = 2.5f64.to_be_bytes();
        let mut speed_bytes = vec![0xcb];
        speed_bytes.extend_from_slice(&speed);
        let mut bytes = entry(&key, &[0xcd, 0x30, 0x39], Some(&speed_bytes));
        let len = bytes.len();
        bytes.extend_from_slice(b"trailing");
        let (used, k, index, s) = plain_entry(&bytes).expect("plain");
        assert_eq!(
            (used, k.as_slice(), index, s),
            (len, &want[..], 12_345, 2.5)
        );
        // No speed: 0. A float32 speed.
        let (_, _, _, s) = plain_entry(&entry(&[&[1]], &[2], None)).expect("plain");
        assert_eq!(s, 0.0);
        let (_, _, _, s) =
            plain_entry(&entry(&[&[1]], &[2], Some(&[0xca, 0x40, 0x20, 0, 0]))).expect("plain");
        assert_eq!(s, 2.5);
    }

    #[test]
    fn other_entries_are_left_to_the_long_way() {
        let cases: [Vec<u8>; 8] = [
            // A solution index of -1 (the entry holds a `value` instead).
            entry(&[&[1]], &[0xff], None),
            // An integer speed (accepted, but the long way).
            entry(&[&[1]], &[2], Some(&[0x03])),
            // A float key value.
            entry(&[&[0xca, 0x3f, 0x80, 0, 0]], &[2], None),
            // An empty key and an eleven-value key.
            entry(&[], &[2], None),
            entry(&[&[1u8][..]; 11], &[2], None),
            // A u64 past i64.
            entry(&[&[0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0]], &[2], None),
            // Truncated.
            entry(&[&[1], &[2]], &[0xcd, 0x30], None),
            // Another third key.
            {
                let mut b = entry(&[&[1]], &[2], None);
                b[0] = 0x83;
                b.extend_from_slice(b"\xa5value\xc0");
                b
            },
        ];
        for (i, c) in cases.iter().enumerate() {
            assert!(plain_entry(c).is_none(), "case {i}");
        }
    }
}
