//! Solution catalogs: which GEMM kernel to run for a problem on a GPU.
//!
//! A catalog is Tensile's "master solution library": a list of solutions
//! (kernels, with the conditions under which each may run) and a tree of
//! library nodes that narrows a query down to one of them:
//!
//! ```text
//! Hardware rows (AMDGPU predicates: processor, CU count, PCI chip IDs)
//!   └─ ProblemMap (operation: Contraction_l_Alik_Bjlk_Cijk_Dijk, ...)
//!        └─ Problem rows (types, high-precision accumulate, ... predicates)
//!             └─ Matching (sizes → nearest tuned size) / DecisionTree / Single
//!                  └─ solution: index, kernel name, predicates, tile sizes
//! ```
//!
//! Catalogs are read from Tensile's MessagePack (`.dat`) or YAML files and
//! written back in the same layout. Both formats in use load and select:
//! Tensile 4.x (rocBLAS 5.5's catalogs) and TensileLite (hipBLASLt 7.x:
//! five-type `TypesEqual`, feature predicates, task predicates, `GridBased`
//! tables, the lazy mapping file; `host/catalog/TENSILELITE.md`). With lazy
//! loading, a parent `TensileLibrary_lazy_<gfx>.dat` holds `Placeholder`
//! nodes naming child files, read the first time a query reaches them and
//! kept ([`Catalog::open_eager`] reads them all up front); a TensileLite
//! [`LazyMapping`] finds a solution's child by its index
//! ([`Catalog::solution_by_index`]); the code object behind a selected
//! solution is loaded on first use, once ([`CodeObjects`]).
//!
//! Selection reproduces Tensile's and TensileLite's semantics (see
//! [`library`]); with `AQUEDUCT_CATALOG_DEBUG=1` every selection prints a
//! trace in the manner of `TENSILE_DB` to standard error.
//!
//! Module map: [`msgpack`] (streaming reader, writer), [`yaml`], [`problem`]
//! (the GEMM as Tensile and hipBLASLt pose it), [`lazy_mapping`], [`hardware`] (the GPU, chip-ID fallback
//! edges, hardware-row order), [`predicate`], [`solution`], [`library`]
//! (the node model, with its selection and its MessagePack codec in rooms of
//! their own), `box_tree` (the exact nearest-entry search of large Matching
//! tables), [`plan`] (per-class selection plans), [`stdsort`] (libstdc++'s
//! sort order).
//!
//! The crate has no HSA dependency: the host shim re-exports it as
//! `aqueduct::catalog` and describes its agents through [`GpuDescription`].

#![deny(missing_docs)]

mod box_tree;
mod decode;
mod error;
pub mod hardware;
pub mod lazy_mapping;
pub mod library;
pub mod msgpack;
pub mod plan;
pub mod predicate;
pub mod problem;
mod problem_leaf;
pub mod solution;
pub mod stdsort;
pub mod yaml;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use error::{CatalogError, Location, Result};
pub use hardware::{GpuDescription, Hardware};
pub use lazy_mapping::LazyMapping;
pub use library::Node;
pub use predicate::Trace;
pub use problem::{Activation, DataType, Problem, ScaleMode, Transpose};
pub use solution::Solution;

use decode::{Decoder, fields};
use library::codec::Ctx;
use library::{Origin, Placeholder, Query, SolutionId};
use msgpack::{Reader, Writer};

/// One catalog file: its solutions and its library tree.
#[derive(Debug)]
pub struct File {
    /// The file it was read from; `None` when read from memory.
    pub path: Option<PathBuf>,
    /// The `solutions` list, in file order; library nodes refer to them by
    /// position (a `SolutionId`), not by their `index`.
    pub solutions: Box<[Solution]>,
    /// The distinct leaves of the solutions' problem predicates.
    pub leaves: Box<[predicate::ProblemLeaf]>,
    /// The `library` tree.
    pub root: Node,
    /// The placeholder name this file was reached through, if lazy.
    pub prefix: Option<Box<str>>,
}

/// Is this path a YAML catalog (by extension); otherwise MessagePack.
fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// A reader of an open file from its own offset (positioned reads), so
/// that threads can share the file.
struct At<'f> {
    file: &'f std::fs::File,
    offset: u64,
}

impl std::io::Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        #[cfg(unix)]
        let read = std::os::unix::fs::FileExt::read_at(self.file, buf, self.offset)?;
        #[cfg(windows)]
        let read = std::os::windows::fs::FileExt::seek_read(self.file, buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

/// Files at least this big are read with two threads, each streaming
/// the file; smaller ones are read into memory whole first. Streaming
/// keeps the peak memory of rocBLAS's 117 MB catalog low, and it is
/// faster than reading hipBLASLt's 4-9 MB children whole: a fresh buffer
/// of that size is paged in at every load.
const PARALLEL_BYTES: u64 = 4 << 20;

/// A file's solutions, their index → position map, and the leaf table of
/// their predicates.
type Solutions = (
    Vec<Solution>,
    HashMap<i64, SolutionId, FxBuild>,
    Box<[predicate::ProblemLeaf]>,
);

impl File {
    fn decode_solutions(d: &mut Decoder<'_>) -> Result<Solutions> {
        let mut interner = solution::Interner::default();
        let mut index: HashMap<i64, SolutionId, FxBuild> = HashMap::default();
        let list = d.array("solutions", |d| {
            let s = Solution::decode(d, &mut interner)?;
            if index.insert(s.index, index.len() as SolutionId).is_some() {
                return Err(CatalogError::DuplicateSolution {
                    at: d.at(),
                    index: s.index,
                });
            }
            Ok(s)
        })?;
        Ok((list, index, interner.leaves.into_boxed_slice()))
    }

    fn decode(d: &mut Decoder<'_>, origin: &Arc<Origin>, prefix: Option<Box<str>>) -> Result<File> {
        let len = d.map_len()?;
        let mut solutions: Option<Vec<Solution>> = None;
        let mut index: HashMap<i64, SolutionId, FxBuild> = HashMap::default();
        let mut leaves: Box<[predicate::ProblemLeaf]> = Box::new([]);
        let mut root = None;
        let mut deferred: Option<Vec<u8>> = None;
        fields(d, len, |d, k| match k {
            "solutions" => {
                let (list, map, table) = Self::decode_solutions(d)?;
                solutions = Some(list);
                index = map;
                leaves = table;
                Ok(true)
            }
            "library" if solutions.is_some() => {
                d.push_key("library");
                let cx = Ctx {
                    solutions: &index,
                    list: solutions.as_deref().unwrap_or_default(),
                    origin,
                    raw: None,
                };
                root = Some(Node::decode(d, &cx)?);
                d.pop();
                Ok(true)
            }
            "library" => {
                // The tree refers to solutions by index: keep its bytes
                // until the solutions have been read.
                deferred = Some(d.r.capture().map_err(|e| d.msgpack(e))?);
                Ok(true)
            }
            _ => Ok(false),
        })?;
        let solutions = solutions.ok_or_else(|| d.missing("solutions"))?;
        let root = match (root, deferred) {
            (Some(root), _) => root,
            (None, Some(bytes)) => {
                let mut inner =
                    Decoder::new(Reader::from_bytes(&bytes), d.file().map(Path::to_path_buf));
                inner.push_key("library");
                let cx = Ctx {
                    solutions: &index,
                    list: &solutions,
                    origin,
                    raw: None,
                };
                Node::decode(&mut inner, &cx)?
            }
            (None, None) => return Err(d.missing("library")),
        };
        d.r.finish().map_err(|e| d.msgpack(e))?;
        Ok(File {
            path: d.file().map(Path::to_path_buf),
            solutions: solutions.into_boxed_slice(),
            leaves,
            root,
            prefix,
        })
    }

    /// Reads a big MessagePack file `file` (opened from `path`) with two
    /// threads, each streaming it with reads at its own offset of the one
    /// open file (so both read the same file even if `path` is replaced
    /// meanwhile): this one reads the solutions and passes over the
    /// library, the other passes over the solutions and reads the library,
    /// holding solution indices as they are written until [`Node::link`]
    /// resolves them. rocBLAS's catalog: 97 MB of solutions, 20 MB of
    /// library.
    fn load_parallel(
        path: &Path,
        file: &std::fs::File,
        origin: &Arc<Origin>,
        prefix: Option<Box<str>>,
    ) -> Result<File> {
        let open = || -> Result<Reader<'_>> { Ok(Reader::from_reader(At { file, offset: 0 })) };
        let library_side = || -> Result<(Node, Vec<i64>)> {
            let mut d = Decoder::new(open()?, Some(path.to_path_buf()));
            let raw = std::cell::RefCell::new(Vec::new());
            let no_solutions = HashMap::default();
            let cx = Ctx {
                solutions: &no_solutions,
                list: &[],
                origin,
                raw: Some(&raw),
            };
            let len = d.map_len()?;
            let mut root = None;
            // This side walks the whole map: it claims `solutions` too (and
            // skips it), so a repeated key is found here.
            fields(&mut d, len, |d, k| match k {
                "library" => {
                    d.push_key("library");
                    root = Some(Node::decode(d, &cx)?);
                    d.pop();
                    Ok(true)
                }
                "solutions" => {
                    d.skip()?;
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            d.r.finish().map_err(|e| d.msgpack(e))?;
            let root = root.ok_or_else(|| d.missing("library"))?;
            Ok((root, raw.into_inner()))
        };
        let (solutions_side, library) = std::thread::scope(|scope| {
            let library = scope.spawn(library_side);
            let solutions_side = (|| -> Result<Solutions> {
                // This side stops once it has the solutions: the other
                // walks (and checks) the whole map.
                let mut d = Decoder::new(open()?, Some(path.to_path_buf()));
                let len = d.map_len()?;
                for _ in 0..len {
                    let key = d.key()?;
                    if key.text() == Some("solutions") {
                        return Self::decode_solutions(&mut d);
                    }
                    d.skip()?;
                }
                Err(d.missing("solutions"))
            })();
            (solutions_side, library.join())
        });
        let (solutions, index, leaves) = solutions_side?;
        let (mut root, raw) = match library {
            Ok(result) => result?,
            Err(_) => {
                return Err(CatalogError::Invalid {
                    at: Location {
                        file: Some(path.to_path_buf()),
                        path: "library".into(),
                    },
                    problem: "the thread reading the library panicked".into(),
                });
            }
        };
        let resolve = |provisional: SolutionId| -> Result<SolutionId> {
            let wanted = raw.get(provisional as usize).copied().unwrap_or(i64::MIN);
            index
                .get(&wanted)
                .copied()
                .ok_or_else(|| CatalogError::MissingSolution {
                    at: Location {
                        file: Some(path.to_path_buf()),
                        path: "library".into(),
                    },
                    index: wanted,
                })
        };
        root.link(&resolve, &solutions)?;
        Ok(File {
            path: Some(path.to_path_buf()),
            solutions: solutions.into_boxed_slice(),
            leaves,
            root,
            prefix,
        })
    }

    /// Reads a catalog file; `chain` lists the files above it.
    fn load(path: &Path, chain: Vec<PathBuf>, prefix: Option<Box<str>>) -> Result<File> {
        let io = |e: std::io::Error| CatalogError::Io {
            file: path.to_path_buf(),
            message: e.to_string(),
        };
        let origin = Arc::new(Origin {
            dir: path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
            suffix: path
                .extension()
                .and_then(|e| e.to_str())
                .map(|e| format!(".{e}"))
                .unwrap_or_default(),
            chain,
        });
        if is_yaml(path) {
            let text = std::fs::read_to_string(path).map_err(io)?;
            let bytes = yaml::to_msgpack(&text).map_err(|message| CatalogError::Yaml {
                at: Location {
                    file: Some(path.to_path_buf()),
                    path: String::new(),
                },
                message,
            })?;
            let mut d = Decoder::new(Reader::from_bytes(&bytes), Some(path.to_path_buf()));
            return File::decode(&mut d, &origin, prefix);
        }
        let file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_or(u64::MAX, |m| m.len());
        if size >= PARALLEL_BYTES {
            return File::load_parallel(path, &file, &origin, prefix);
        }
        // Decoding from memory needs no buffer refills.
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(io)?;
        let mut d = Decoder::new(Reader::from_bytes(&bytes), Some(path.to_path_buf()));
        File::decode(&mut d, &origin, prefix)
    }

    /// Every loaded file in this subtree (this one and loaded children).
    fn loaded(&self, out: &mut Vec<PathBuf>) {
        if let Some(p) = &self.path {
            out.push(p.clone());
        }
        self.placeholders(&mut |p| {
            if let Some(Ok(child)) = p.child.get() {
                child.loaded(out);
            }
        });
    }

    /// Visits every placeholder of this file's tree, in tree order (not
    /// those of its children).
    pub fn placeholders<'a>(&'a self, f: &mut impl FnMut(&'a Placeholder)) {
        fn walk<'a>(node: &'a Node, f: &mut impl FnMut(&'a Placeholder)) {
            match node {
                Node::Hardware(rows) => rows.iter().for_each(|r| walk(&r.library, f)),
                Node::Problem(rows) => rows.iter().for_each(|r| walk(&r.library, f)),
                Node::ProblemMap(m) => m.entries.iter().for_each(|(_, n)| walk(n, f)),
                Node::Matching(m) => m.values.iter().for_each(|n| walk(n, f)),
                Node::DecisionTree(t) => t.trees.iter().for_each(|t| walk(&t.value, f)),
                Node::Placeholder(p) => f(p),
                Node::Single(_) => {}
            }
        }
        walk(&self.root, f);
    }

    /// Reads every child file below this one now (each once), on up to
    /// `threads` threads; the first error found is returned.
    fn load_children(&self, threads: usize) -> Result<()> {
        let mut all = Vec::new();
        self.placeholders(&mut |p| all.push(p));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let first_error: Mutex<Option<CatalogError>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..threads.clamp(1, all.len().max(1)) {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(p) = all.get(i) else { break };
                        let loaded = p.child(None).and_then(|child| child.load_children(1));
                        if let Err(e) = loaded {
                            first_error
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(e);
                        }
                    }
                });
            }
        });
        match first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Writes the file back as Tensile's MessagePack layout: a map of
    /// `solutions` and `library`.
    pub fn encode(&self, w: &mut Writer) {
        w.map(2);
        w.str("solutions");
        w.array(self.solutions.len());
        self.solutions.iter().for_each(|s| s.encode(w));
        w.str("library");
        let index_of = |id: SolutionId| self.solutions[id as usize].index;
        self.root.encode(w, &index_of);
    }
}

impl Placeholder {
    /// The child file, read on first use (once, whatever the threads).
    pub fn child(&self, trace: Option<&mut Trace>) -> Result<&File> {
        let first = self.child.get().is_none();
        let loaded = self.child.get_or_init(|| {
            if self.origin.chain.is_empty() {
                // Read from memory: there is no directory to look in.
                return Err(CatalogError::NoDirectory {
                    name: self.prefix.to_string(),
                });
            }
            let name = format!("{}{}", self.prefix, self.origin.suffix);
            let path = self.origin.dir.join(&name);
            if !path.is_file() {
                return Err(CatalogError::MissingChild {
                    parent: self.origin.chain.last().cloned().unwrap_or_default(),
                    name: self.prefix.to_string(),
                    tried: vec![path],
                });
            }
            let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
            let mut chain = self.origin.chain.clone();
            let cycle = chain.contains(&canonical);
            chain.push(canonical);
            if cycle {
                return Err(CatalogError::PlaceholderCycle { chain });
            }
            File::load(&path, chain, Some(self.prefix.clone())).map(Box::new)
        });
        if first && let (Some(t), Ok(child)) = (trace, loaded) {
            t.raw("");
            t.raw(&"=".repeat(80));
            t.raw(&format!(
                "LIBRARY: {}",
                child.path.as_deref().unwrap_or(Path::new("?")).display()
            ));
            t.raw(&"=".repeat(80));
        }
        loaded.as_deref().map_err(Clone::clone)
    }
}

/// A solution chosen for a problem.
#[derive(Debug, Clone, Copy)]
pub struct Selected<'c> {
    /// The chosen solution (kernel name, tile sizes, predicates).
    pub solution: &'c Solution,
    /// The file that holds it (a lazy child, or the catalog itself).
    pub file: &'c File,
    /// The matching distance that chose it (0 when no table was involved).
    pub fitness: f64,
}

impl Selected<'_> {
    /// The code object that holds the kernel, next to the file: the
    /// solution's `codeObject` if it names one; otherwise Tensile's rule for
    /// lazy children: `<child>.co` for assembly kernels, `<child>.hsaco` for
    /// source kernels (`<child>_<gfx>.hsaco` for a "fallback" child).
    pub fn code_object(&self, hw: &Hardware) -> Option<PathBuf> {
        let dir = self.file.path.as_deref()?.parent()?;
        if let Some(name) = &self.solution.code_object {
            return Some(dir.join(&**name));
        }
        let prefix = self.file.prefix.as_deref()?;
        let name = if !self.solution.size_mapping.source_kernel {
            format!("{prefix}.co")
        } else if prefix.contains("fallback") {
            format!("{prefix}_{}.hsaco", hw.processor)
        } else {
            format!("{prefix}.hsaco")
        };
        Some(dir.join(name))
    }
}

/// A loaded catalog.
#[derive(Debug)]
pub struct Catalog {
    root: File,
}

fn debug_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("AQUEDUCT_CATALOG_DEBUG").is_ok_and(|v| !v.is_empty() && v != "0")
    })
}

impl Catalog {
    /// Reads a catalog file: YAML for `.yaml`/`.yml`, MessagePack otherwise.
    /// Placeholders are resolved next to it, with its extension.
    pub fn open(path: impl AsRef<Path>) -> Result<Catalog> {
        let path = path.as_ref();
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        Ok(Catalog {
            root: File::load(path, vec![canonical], None)?,
        })
    }

    /// Reads MessagePack bytes (placeholders cannot be resolved).
    pub fn from_msgpack(bytes: &[u8]) -> Result<Catalog> {
        let origin = Arc::new(Origin {
            dir: PathBuf::new(),
            suffix: ".dat".into(),
            chain: Vec::new(),
        });
        let mut d = Decoder::new(Reader::from_bytes(bytes), None);
        Ok(Catalog {
            root: File::decode(&mut d, &origin, None)?,
        })
    }

    /// Reads YAML text (placeholders cannot be resolved).
    pub fn from_yaml(text: &str) -> Result<Catalog> {
        let bytes = yaml::to_msgpack(text).map_err(|message| CatalogError::Yaml {
            at: Location::default(),
            message,
        })?;
        Self::from_msgpack(&bytes)
    }

    /// The catalog's own file (not its lazy children).
    pub fn file(&self) -> &File {
        &self.root
    }

    /// The catalog's own file, for writers that reorder it.
    pub fn file_mut(&mut self) -> &mut File {
        &mut self.root
    }

    /// Reads a catalog and every lazy child below it now: the eager form
    /// of [`Catalog::open`] (which reads a child when a query first needs
    /// it). Selection answers the same either way. Children are read on
    /// the machine's threads.
    pub fn open_eager(path: impl AsRef<Path>) -> Result<Catalog> {
        let catalog = Catalog::open(path)?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        catalog.root.load_children(threads)?;
        Ok(catalog)
    }

    /// The solution with global index `index`, found as hipBLASLt's
    /// `getSolutionByIndex` finds it in a lazy TensileLite catalog: the
    /// mapping names the child file holding it, which is read if it was
    /// not yet (through the placeholder naming it). `Ok(None)` when the
    /// mapping has no child for the index, this catalog has no
    /// placeholder for that child (another processor's), or the child
    /// holds no such solution.
    pub fn solution_by_index(
        &self,
        mapping: &LazyMapping,
        index: i64,
    ) -> Result<Option<Selected<'_>>> {
        let Some(stem) = u32::try_from(index).ok().and_then(|i| mapping.child_of(i)) else {
            return Ok(None);
        };
        let mut found = None;
        self.root.placeholders(&mut |p| {
            if found.is_none() && *p.prefix == *stem {
                found = Some(p);
            }
        });
        let Some(placeholder) = found else {
            return Ok(None);
        };
        let file = placeholder.child(None)?;
        Ok(file
            .solutions
            .iter()
            .find(|s| s.index == index)
            .map(|solution| Selected {
                solution,
                file,
                fitness: 0.0,
            }))
    }

    /// The files read so far: the catalog, then each child loaded.
    pub fn loaded_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        self.root.loaded(&mut out);
        out
    }

    /// The catalog as MessagePack, in Tensile's layout.
    pub fn to_msgpack(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.root.encode(&mut w);
        w.out
    }

    /// The catalog as YAML.
    pub fn to_yaml(&self) -> String {
        // Our own encoding always reads back.
        yaml::from_msgpack(&self.to_msgpack()).unwrap_or_default()
    }

    /// Selects the solution for `problem` on `hardware`: `Ok(None)` when
    /// the catalog has none. With `AQUEDUCT_CATALOG_DEBUG=1` the trace goes
    /// to standard error.
    pub fn select(&self, problem: &Problem, hardware: &Hardware) -> Result<Option<Selected<'_>>> {
        if debug_enabled() {
            let (result, trace) = self.select_traced(problem, hardware);
            eprint!("{trace}");
            return result;
        }
        let mut q = Query {
            problem,
            hardware,
            trace: None,
            walk_cells: false,
            leaves: None,
        };
        self.finish(self.root.root.select(&self.root, &mut q))
    }

    /// Selects as [`Catalog::select`] does, but walks TensileLite's
    /// GridBased tables cell by cell as hipBLASLt does (as a traced
    /// selection does), where `select` answers the rest of a walk from the
    /// solution groups that pass: the reference the fast path is tested
    /// against. Much slower when many cells fail.
    pub fn select_walking(
        &self,
        problem: &Problem,
        hardware: &Hardware,
    ) -> Result<Option<Selected<'_>>> {
        let mut q = Query {
            problem,
            hardware,
            trace: None,
            walk_cells: true,
            leaves: None,
        };
        self.finish(self.root.root.select(&self.root, &mut q))
    }

    /// Selects and returns the trace of every predicate evaluated.
    pub fn select_traced(
        &self,
        problem: &Problem,
        hardware: &Hardware,
    ) -> (Result<Option<Selected<'_>>>, String) {
        let mut t = Trace::default();
        t.raw(&format!(
            "SELECT {} {}x{}x{} batch {} [{}, {}, {}, {}] on {} ({} CUs, chip {})",
            problem.operation_identifier(),
            problem.m,
            problem.n,
            problem.k,
            problem.batch,
            problem.a_type,
            problem.b_type,
            problem.c_type,
            problem.d_type,
            hardware.arch_name,
            hardware.cu_count,
            hardware
                .chip_id
                .map_or("none".into(), |c| format!("{c:#x}")),
        ));
        let mut q = Query {
            problem,
            hardware,
            trace: Some(&mut t),
            walk_cells: true,
            leaves: None,
        };
        let result = self.finish(self.root.root.select(&self.root, &mut q));
        match &result {
            Ok(Some(s)) => t.raw(&format!(
                "RESULT: solution {} {} (fitness {})",
                s.solution.index, s.solution.name, s.fitness
            )),
            Ok(None) => t.raw("RESULT: no solution"),
            Err(e) => t.raw(&format!("RESULT: error: {e}")),
        }
        (result, t.out)
    }

    fn finish<'c>(&'c self, hit: Result<Option<library::Hit<'c>>>) -> Result<Option<Selected<'c>>> {
        Ok(hit?.map(|h| Selected {
            solution: &h.file.solutions[h.id as usize],
            file: h.file,
            fitness: h.fitness,
        }))
    }

    /// A selector for one GPU: it pre-walks the tree once per class of
    /// problem ([`plan`]) and remembers its answers.
    pub fn selector(&self, hardware: Hardware) -> Selector<'_> {
        Selector {
            catalog: self,
            gpu_rows: plan::GpuRows::new(&self.root.root, &hardware),
            hardware,
            cache: Mutex::new(HashMap::default()),
            plans: Mutex::new(HashMap::default()),
            plan_builds: Default::default(),
        }
    }
}

/// The FxHash mixing step: cache keys are a few integers, and SipHash
/// would cost more than the lookup it protects.
#[derive(Default)]
pub struct FxHasher(u64);

/// Builds [`FxHasher`]s: the hasher of the catalog's integer-keyed maps.
pub type FxBuild = BuildHasherDefault<FxHasher>;

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Arrays of integers arrive here as one byte slice.
        let (words, rest) = bytes.as_chunks::<8>();
        for w in words {
            self.write_u64(u64::from_le_bytes(*w));
        }
        for b in rest {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type CacheKey = [u64; 20];

/// Every field of the problem, packed: the small ones share a word.
fn cache_key(p: &Problem) -> CacheKey {
    let types = (p.a_type as u64)
        | (p.b_type as u64) << 8
        | (p.c_type as u64) << 16
        | (p.d_type as u64) << 24;
    let small = types | (p.trans_a as u64) << 32 | (p.trans_b as u64) << 36 | p.flag_bits() << 40;
    [
        small,
        p.mode_bits(),
        p.m,
        p.n,
        p.k,
        p.batch,
        p.lda,
        p.ldb,
        p.ldc,
        p.ldd,
        p.stride_a,
        p.stride_b,
        p.stride_c,
        p.stride_d,
        p.workspace_size,
        p.alpha.to_bits(),
        p.beta.to_bits(),
        p.lite_bits()[0],
        p.lite_bits()[1],
        p.gsu as u64,
    ]
}

/// Selection for one GPU with a result cache. Unlike Tensile's
/// `CachingLibrary`, whose key leaves out alpha, beta and C == D (so its
/// answers can depend on earlier queries when predicates test them), the key
/// here is every field of the problem.
pub struct Selector<'c> {
    catalog: &'c Catalog,
    hardware: Hardware,
    gpu_rows: plan::GpuRows<'c>,
    cache: Mutex<HashMap<CacheKey, Option<Selected<'c>>, BuildHasherDefault<FxHasher>>>,
    plans: Mutex<HashMap<plan::ClassKey, Arc<plan::Plan<'c>>, BuildHasherDefault<FxHasher>>>,
    plan_builds: std::sync::atomic::AtomicUsize,
}

impl<'c> Selector<'c> {
    /// The GPU this selector answers for.
    pub fn hardware(&self) -> &Hardware {
        &self.hardware
    }

    /// Class plans this selector has built: one at each problem class's
    /// first query, and again once a query of the class reads a lazy
    /// child file its plan stops at.
    pub fn plan_builds(&self) -> usize {
        self.plan_builds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Like [`Catalog::select`], answering repeated problems from memory.
    /// Errors (a child catalog that fails to load) are not remembered.
    pub fn select(&self, problem: &Problem) -> Result<Option<Selected<'c>>> {
        let key = cache_key(problem);
        if let Some(hit) = self.lock().get(&key) {
            return Ok(*hit);
        }
        let result = self.select_uncached(problem)?;
        self.lock().insert(key, result);
        Ok(result)
    }

    /// Selects without the result cache: the problem's class plan is
    /// built once, sizes are looked at every time. The answer is the tree
    /// walk's ([`Catalog::select`]), which also serves traced selections.
    pub fn select_uncached(&self, problem: &Problem) -> Result<Option<Selected<'c>>> {
        if debug_enabled() {
            return self.catalog.select(problem, &self.hardware);
        }
        let class = plan::class_key(problem);
        let found = self
            .plans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&class)
            .cloned();
        // Plans are built outside the lock: other threads' queries go on.
        let build = || {
            self.plan_builds
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Arc::new(plan::Plan::build(
                &self.catalog.root,
                &self.gpu_rows,
                problem,
            ))
        };
        let plan = match found {
            Some(plan) => plan,
            None => {
                let built = build();
                self.plans
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(class)
                    .or_insert(built)
                    .clone()
            }
        };
        let mut q = Query {
            problem,
            hardware: &self.hardware,
            trace: None,
            walk_cells: false,
            leaves: None,
        };
        let result = plan.run(&mut q);
        if plan.stale() {
            let built = build();
            self.plans
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(class, built);
        }
        self.catalog.finish(result)
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        HashMap<CacheKey, Option<Selected<'c>>, BuildHasherDefault<FxHasher>>,
    > {
        // A panic while holding the lock leaves a valid map behind.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Code objects behind selected solutions, each loaded on first use and
/// only once, however many solutions and threads ask for it.
pub struct CodeObjects<T> {
    loaded: Mutex<HashMap<PathBuf, Arc<LoadCell<T>>>>,
}

/// One code object's load, done once: the object or the reason it failed.
type LoadCell<T> = OnceLock<std::result::Result<Arc<T>, String>>;

impl<T> Default for CodeObjects<T> {
    fn default() -> Self {
        CodeObjects {
            loaded: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> CodeObjects<T> {
    /// No code object loaded yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The selected solution's code object, loaded with `load` the first
    /// time this file is asked for. A failed load is remembered too.
    pub fn get(
        &self,
        selected: &Selected<'_>,
        hardware: &Hardware,
        load: impl FnOnce(&Path) -> std::result::Result<T, String>,
    ) -> Result<Arc<T>> {
        let Some(path) = selected.code_object(hardware) else {
            return Err(CatalogError::CodeObject {
                file: PathBuf::new(),
                solution: selected.solution.name.to_string(),
                message:
                    "the solution names no code object and was not reached through a placeholder"
                        .into(),
            });
        };
        let cell = self
            .loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(path.clone())
            .or_default()
            .clone();
        cell.get_or_init(|| load(&path).map(Arc::new))
            .clone()
            .map_err(|message| CatalogError::CodeObject {
                file: path,
                solution: selected.solution.name.to_string(),
                message,
            })
    }

    /// How many distinct code objects have been asked for.
    pub fn len(&self) -> usize {
        self.loaded.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no code object has been asked for yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
