//! `cargo xtask gemm-report`: our matrix kernels beside AMD's, statically.
//!
//! No AMD GPU is here, so the comparison is of the code itself: for each
//! of aqueduct-gemm's MFMA kernels (gfx90a, gfx942, gfx950) and WMMA
//! kernels (gfx1100, gfx1201) and, on gfx90a, an AMD-compiled rocBLAS
//! kernel of the same types and macro-tile (Debian trixie's `librocblas0`,
//! fetched once and cached: `crate::rocblas_catalog`), the main loop is
//! found in `llvm-objdump`'s disassembly and measured. On gfx1100 and
//! gfx1201 AMD's rows are the RDNA kernels the tests run (rocBLAS's gfx1100
//! ones, hipBLASLt's gfx1100 and gfx1201 ones), WMMA counted as the matrix
//! instructions and each row's wave size the kernel's own ([`amd_rows`]);
//! the packages have no gfx942 or gfx950 kernels.
//!
//! - AMD's gfx90a kernels are the ones rocBLAS's own catalog selects on an MI210
//!   for NT problems of each type ([`amd_selected`]), one per macro-tile;
//! - the **main loop** is the innermost loop (a backward branch's range,
//!   branch target to branch, with no backward branch inside) holding the
//!   most matrix instructions (MFMA, WMMA); among equals, AMD's shortest and our longest ([`Pick`]:
//!   ours has one specialised loop per layout; on gfx90a and gfx942 the
//!   longest is the one whose operands are both row-contiguous, A as is
//!   and B transposed, the NT layout of the AMD kernels compared, with
//!   element-wise LDS writes; on gfx950 the 16- and 8-bit kernels stage
//!   row-contiguous operands transposed, and their per-layout loops differ
//!   by a few instructions, whichever is longest);
//! - per iteration: instructions, matrix instructions (`mma`) and their share, the widest global
//!   (or buffer) load, LDS read and LDS write in bits per instruction
//!   (`ds_read2_b64` moves 128), and `s_waitcnt`s; the K one iteration
//!   covers (MFMAs × the instruction's K ÷ the output blocks), so loops
//!   unrolled differently compare per K too;
//! - per kernel, from the code object's metadata: VGPRs, AGPRs, SGPRs, LDS
//!   bytes, scratch, and the occupancy they allow (`crate::targets`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aqueduct_abi::code_object::CodeObject;
use aqueduct_catalog::{Catalog, DataType, Hardware, Problem, Transpose};

use crate::targets::{self, GfxTarget, Usage};

/// One instruction of a disassembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub address: u64,
    pub mnemonic: String,
    /// The branch target's address, for branches.
    pub target: Option<u64>,
    /// An f8f6f4 MFMA whose A and B are both FP6, BF6 or FP4 (`cbsz:` and
    /// `blgp:` 2 to 4), which runs at twice the FP8 rate
    /// (`crate::gemm_model::NARROW_F8F6F4`).
    pub narrow: bool,
}

impl Line {
    /// The name the throughput model costs the line by: its mnemonic, and
    /// for a narrow f8f6f4 MFMA [`crate::gemm_model::NARROW_F8F6F4`] after
    /// it.
    pub fn model_name(&self) -> String {
        if self.narrow {
            format!("{} {}", self.mnemonic, crate::gemm_model::NARROW_F8F6F4)
        } else {
            self.mnemonic.clone()
        }
    }
}

/// Whether `code` (an instruction as `llvm-objdump` prints it) is an
/// f8f6f4 MFMA with both operands FP6, BF6 or FP4: its `cbsz:` (A's
/// format) and `blgp:` (B's) are 2, 3 or 4 (CDNA4 ISA §7.1.5; absent is
/// 0, FP8).
pub fn narrow_f8f6f4(code: &str) -> bool {
    let format = |key: &str| {
        code.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    };
    code.contains("_f8f6f4")
        && (2..=4).contains(&format("cbsz:"))
        && (2..=4).contains(&format("blgp:"))
}

/// Every function of `llvm-objdump -d` output, by name, in address order.
pub fn parse_disassembly(text: &str) -> BTreeMap<String, Vec<Line>> {
    let mut out: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    let mut current: Option<(String, u64)> = None;
    for line in text.lines() {
        // `0000000000001000 <name>:` opens a function.
        if let Some((addr, rest)) = line.split_once(" <")
            && let Some(name) = rest.strip_suffix(">:")
            && let Ok(start) = u64::from_str_radix(addr.trim(), 16)
        {
            current = Some((name.to_string(), start));
            out.entry(name.to_string()).or_default();
            continue;
        }
        let Some((name, _)) = current.clone() else {
            continue;
        };
        let Some((code, comment)) = line.split_once("//") else {
            continue;
        };
        let Some(mnemonic) = code.split_whitespace().next() else {
            continue;
        };
        let Some(address) = comment
            .trim()
            .split(':')
            .next()
            .and_then(|a| u64::from_str_radix(a.trim(), 16).ok())
        else {
            continue;
        };
        // A branch names its target `<function+0xOFFSET>` (branches stay
        // inside their function).
        let branch = mnemonic.starts_with("s_branch") || mnemonic.starts_with("s_cbranch");
        let target = comment
            .split_once('<')
            .filter(|_| branch)
            .and_then(|(_, t)| {
                let t = t.trim().strip_suffix('>').unwrap_or(t);
                let (function, offset) = t.split_once('+').unwrap_or((t, "0x0"));
                let start = current
                    .as_ref()
                    .filter(|(n, _)| n == function)
                    .map(|(_, s)| *s)?;
                let offset = u64::from_str_radix(offset.trim_start_matches("0x"), 16).ok()?;
                Some(start + offset)
            });
        if let Some(lines) = out.get_mut(&name) {
            lines.push(Line {
                address,
                mnemonic: mnemonic.to_string(),
                target,
                narrow: narrow_f8f6f4(code),
            });
        }
    }
    out
}

/// Bits one memory instruction moves per lane, from its mnemonic.
pub fn access_bits(mnemonic: &str) -> u32 {
    let two = ["read2", "write2", "2addr"]
        .iter()
        .any(|p| mnemonic.contains(p));
    let each = if mnemonic.ends_with("b128") || mnemonic.ends_with("dwordx4") {
        128
    } else if mnemonic.ends_with("b96") || mnemonic.ends_with("dwordx3") {
        96
    } else if mnemonic.ends_with("b64") || mnemonic.ends_with("dwordx2") {
        64
    } else if mnemonic.ends_with("b32") || mnemonic.ends_with("dword") {
        32
    } else if mnemonic.contains("short") || mnemonic.contains("16") {
        16
    } else if mnemonic.contains("byte") || mnemonic.contains("8") {
        8
    } else {
        0
    };
    if two { 2 * each } else { each }
}

/// The main loop's measures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MainLoop {
    pub instructions: usize,
    /// Matrix instructions: MFMA and SMFMAC (CDNA), WMMA and SWMMAC (RDNA).
    pub mfmas: usize,
    pub global_load_bits: u32,
    pub lds_read_bits: u32,
    pub lds_write_bits: u32,
    pub waitcnts: usize,
    /// The loop's mnemonics, in order, as the model costs them
    /// ([`Line::model_name`], for `crate::gemm_model`).
    pub body: Vec<String>,
}

impl MainLoop {
    pub fn mfma_share(&self) -> f64 {
        if self.instructions == 0 {
            0.0
        } else {
            self.mfmas as f64 / self.instructions as f64
        }
    }
}

/// Among innermost loops of equally many MFMAs, which the report takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The one of fewest instructions (AMD's kernels: their best).
    Shortest,
    /// The one of most instructions (ours: the worst of our per-layout
    /// loops, so the comparison never flatters us).
    Longest,
}

/// The innermost loops of a function, each as its lines: a backward
/// branch's range (branch target to branch) with no backward branch
/// inside. A loop around others (a slice loop around an edge copy's own
/// loop, or the whole kernel) is not one.
pub fn innermost_loops(lines: &[Line]) -> Vec<&[Line]> {
    let mut out = Vec::new();
    for (end, branch) in lines.iter().enumerate() {
        let Some(target) = branch.target.filter(|&t| t <= branch.address) else {
            continue;
        };
        let Some(start) = lines.iter().position(|l| l.address == target) else {
            continue;
        };
        let body = &lines[start..=end];
        let inner = body[..body.len() - 1]
            .iter()
            .any(|l| l.target.is_some_and(|t| t <= l.address));
        if !inner {
            out.push(body);
        }
    }
    out
}

/// The main loop of a function (module doc), if it has a loop with MFMAs.
pub fn main_loop(lines: &[Line], pick: Pick) -> Option<MainLoop> {
    let mut best: Option<MainLoop> = None;
    for body in innermost_loops(lines) {
        let mut m = MainLoop {
            instructions: body.len(),
            body: body.iter().map(Line::model_name).collect(),
            ..MainLoop::default()
        };
        for l in body {
            // GFX9's names and GFX11/GFX12's (`ds_load`, `ds_store`, the
            // split `s_wait_*` counters, WMMA).
            let name = l.mnemonic.as_str();
            if ["v_mfma", "v_smfmac", "v_wmma", "v_swmmac"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                m.mfmas += 1;
            } else if name.starts_with("s_waitcnt")
                || name.starts_with("s_wait_") && name.ends_with("cnt")
            {
                m.waitcnts += 1;
            } else if name.starts_with("global_load") || name.starts_with("buffer_load") {
                m.global_load_bits = m.global_load_bits.max(access_bits(name));
            } else if name.starts_with("ds_read") || name.starts_with("ds_load") {
                m.lds_read_bits = m.lds_read_bits.max(access_bits(name));
            } else if name.starts_with("ds_write") || name.starts_with("ds_store") {
                m.lds_write_bits = m.lds_write_bits.max(access_bits(name));
            }
        }
        if m.mfmas == 0 {
            continue;
        }
        let better = match &best {
            None => true,
            Some(b) => {
                m.mfmas > b.mfmas
                    || m.mfmas == b.mfmas
                        && match pick {
                            Pick::Shortest => m.instructions < b.instructions,
                            Pick::Longest => m.instructions > b.instructions,
                        }
            }
        };
        if better {
            best = Some(m);
        }
    }
    best
}

/// One row of the report.
#[derive(Clone, Debug)]
pub struct Row {
    pub who: &'static str,
    pub kernel: String,
    pub gfx: String,
    pub tile: String,
    pub main_loop: Option<MainLoop>,
    pub vgprs: u64,
    pub agprs: u64,
    pub sgprs: u64,
    pub lds_bytes: u64,
    pub scratch: u64,
    pub waves: u32,
    /// Work-items per workgroup (the kernel's launch bound) and lanes per
    /// wave.
    pub workgroup_size: u64,
    pub wave_size: u32,
}

/// The rows of every kernel of `co` named in `kernels` (all if empty).
pub fn rows(
    who: &'static str,
    path: &Path,
    objdump: &Path,
    target: &GfxTarget,
    kernels: &[(String, String)],
) -> Result<Vec<Row>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let co = CodeObject::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let out = std::process::Command::new(objdump)
        .arg("-d")
        .arg(format!("--mcpu={}", target.name))
        .arg(path)
        .output()
        .map_err(|e| format!("{}: {e}", objdump.display()))?;
    if !out.status.success() {
        return Err(format!(
            "llvm-objdump {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let functions = parse_disassembly(&String::from_utf8_lossy(&out.stdout));
    let mut rows = Vec::new();
    for (name, tile) in kernels {
        let k = co
            .kernels
            .iter()
            .find(|k| &k.metadata.name == name)
            .ok_or_else(|| format!("{} has no kernel {name}", path.display()))?;
        let md = &k.metadata;
        let lines = functions
            .get(name)
            .ok_or_else(|| format!("llvm-objdump shows no function {name}"))?;
        let (waves, _) = targets::occupancy(
            target,
            Usage {
                sgprs: md.sgpr_count as u32,
                vgprs: md.vgpr_count as u32,
                agprs: md.agpr_count as u32,
                lds_bytes: md.group_segment_fixed_size as u32,
                workgroup_size: md.max_flat_workgroup_size as u32,
            },
        );
        rows.push(Row {
            who,
            kernel: name.clone(),
            gfx: target.name.to_string(),
            tile: tile.clone(),
            main_loop: main_loop(
                lines,
                if who == "ours" {
                    Pick::Longest
                } else {
                    Pick::Shortest
                },
            ),
            vgprs: md.vgpr_count,
            agprs: md.agpr_count,
            sgprs: md.sgpr_count,
            lds_bytes: md.group_segment_fixed_size,
            scratch: md.private_segment_fixed_size,
            waves,
            workgroup_size: md.max_flat_workgroup_size,
            // The kernel's own: GFX11/GFX12 kernels may be either.
            wave_size: match md.wavefront_size {
                32 | 64 => md.wavefront_size as u32,
                _ => target.wave_size,
            },
        });
    }
    Ok(rows)
}

/// The report as a table.
pub fn format(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<6} {:<7} {:<9} {:>6} {:>5} {:>6} {:>6} {:>6} {:>6} {:>5} {:>4} {:>4} {:>4} {:>6} {:>4} {:>5}  kernel\n",
        "who",
        "gfx",
        "tile",
        "insts",
        "mma",
        "share",
        "gload",
        "dsread",
        "dswrt",
        "wait",
        "vgpr",
        "agpr",
        "sgpr",
        "lds",
        "occ",
        "scr"
    );
    for r in rows {
        let l = r.main_loop.clone().unwrap_or_default();
        out.push_str(&format!(
            "{:<6} {:<7} {:<9} {:>6} {:>5} {:>5.1}% {:>6} {:>6} {:>6} {:>5} {:>4} {:>4} {:>4} {:>6} {:>4} {:>5}  {}\n",
            r.who,
            r.gfx,
            r.tile,
            l.instructions,
            l.mfmas,
            100.0 * l.mfma_share(),
            l.global_load_bits,
            l.lds_read_bits,
            l.lds_write_bits,
            l.waitcnts,
            r.vgprs,
            r.agprs,
            r.sgprs,
            r.lds_bytes,
            r.waves,
            r.scratch,
            short(&r.kernel)
        ));
    }
    out.push_str(
        "per main-loop iteration: insts, mfma (count, share of insts), widest global load / LDS read / LDS write (bits per instruction), s_waitcnt count;\n\
         per kernel: registers, LDS bytes, occupancy (waves per SIMD), scratch bytes\n",
    );
    out
}

/// A Tensile kernel name cut to its first fields (type, macro-tile, MFMA).
pub fn short(name: &str) -> String {
    if name.len() <= 60 {
        return name.to_string();
    }
    let fields: Vec<&str> = name.split('_').take(7).collect();
    format!("{}_…", fields.join("_"))
}

/// The types of the report's AMD kernels: Tensile's type code in kernel
/// names, and A/B and C/D types with high-precision accumulation.
pub const AMD_TYPES: [(&str, DataType, DataType, bool); 3] = [
    ("SB", DataType::Float, DataType::Float, false),
    ("HHS_BH", DataType::Half, DataType::Half, true),
    ("BBS_BH", DataType::BFloat16, DataType::BFloat16, true),
];

/// The macro-tiles of our MFMA kernels (`aqueduct_gemm::mfma::KERNELS`),
/// as `<rows>x<cols>`, smallest first.
fn tiles() -> Vec<String> {
    let mut out: Vec<(u32, String)> = aqueduct_gemm::mfma::KERNELS
        .iter()
        .map(|k| {
            (
                k.tile_rows * k.tile_cols,
                format!("{}x{}", k.tile_rows, k.tile_cols),
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out.into_iter().map(|(_, t)| t).collect()
}

/// The kernels rocBLAS's own catalog runs on an MI210 (gfx90a, 104 CUs,
/// chip 0x740f) for NT problems (A as is, B transposed: our layout) of
/// each type, square sizes from 128 to 8192: per type and macro-tile, the
/// one chosen for the largest size that got that tile. Those are AMD's
/// tuned choices, where a kernel picked by name alone may be a poor one.
pub fn amd_selected(catalog: &Catalog) -> Result<Vec<(String, String)>, String> {
    let hw = Hardware::new("gfx90a:sramecc+:xnack-", 104, Some(0x740f));
    let mut out = Vec::new();
    for (_, input, output, hpa) in AMD_TYPES {
        let mut by_tile: BTreeMap<String, String> = BTreeMap::new();
        for n in [
            128u64, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
        ] {
            let mut p = Problem::gemm(Transpose::None, Transpose::Transpose, n, n, n, input);
            (p.c_type, p.d_type, p.high_precision_accumulate) = (output, output, hpa);
            let Some(s) = catalog.select(&p, &hw).map_err(|e| e.to_string())? else {
                continue;
            };
            let mt = &s.solution.size_mapping.macro_tile;
            by_tile.insert(format!("{}x{}", mt[0], mt[1]), s.solution.name.to_string());
        }
        for tile in tiles() {
            if let Some(name) = by_tile.get(&tile) {
                out.push((name.clone(), tile));
            }
        }
    }
    Ok(out)
}

/// AMD's kernel names that match our kernels by name alone (for a type and
/// tile [`amd_selected`] found no kernel for): same types (Tensile's type
/// code), A as is and B transposed (`Ailk_Bjlk`, our NT), the macro-tile,
/// 32 × 32 MFMAs where the package has them; the first in name order.
pub fn amd_counterparts(names: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (code, ..) in AMD_TYPES {
        for tile in tiles() {
            let prefix = format!("Cijk_Ailk_Bjlk_{code}_MT{tile}x");
            let mut matches: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| n.starts_with(&prefix) && n.contains("_MI"))
                .collect();
            matches.sort_unstable();
            let pick = matches
                .iter()
                .find(|n| n.contains("_MI32x32x"))
                .or(matches.first());
            if let Some(n) = pick {
                out.push((n.to_string(), tile.clone()));
            }
        }
    }
    out
}

/// A Tensile kernel's macro-tile, `<rows>x<cols>`, from its name's
/// `MT<rows>x<cols>x<depth>`.
pub fn tile_of(name: &str) -> Option<String> {
    let mt = name.split("_MT").nth(1)?;
    let mut dims = mt.split('x');
    Some(format!("{}x{}", dims.next()?, dims.next()?))
}

/// Every Tensile kernel of `names` with its tile, in name order: the
/// AMD kernels of the RDNA targets, whose tiles are not ours.
pub fn all_tiles<'n>(names: impl Iterator<Item = &'n str>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = names
        .filter_map(|n| Some((n.to_string(), tile_of(n)?)))
        .collect();
    out.sort();
    out
}

/// Tensile kernels of our macro-tiles with their tiles (from the names'
/// `MT<rows>x<cols>x<depth>`), sorted by type and tile.
pub fn with_tiles<'n>(names: impl Iterator<Item = &'n str>) -> Vec<(String, String)> {
    let ours = tiles();
    let mut out: Vec<(String, String)> = names
        .filter_map(|n| {
            let tile = tile_of(n)?;
            ours.contains(&tile).then(|| (n.to_string(), tile))
        })
        .collect();
    let rank = |n: &str| {
        AMD_TYPES
            .iter()
            .position(|t| n.contains(&format!("_{}_MT", t.0)))
    };
    out.sort_by_key(|(n, t)| (rank(n), t.len(), t.clone()));
    out
}

/// The rows of AMD's kernels in the code object at `path`: those of our
/// macro-tiles if `our_tiles` ([`with_tiles`]), else all ([`all_tiles`]).
pub fn amd_rows(
    path: &Path,
    objdump: &Path,
    target: &GfxTarget,
    our_tiles: bool,
) -> Result<Vec<Row>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let co = CodeObject::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let names = co.kernels.iter().map(|k| k.metadata.name.as_str());
    let kernels = if our_tiles {
        with_tiles(names)
    } else {
        all_tiles(names)
    };
    rows("amd", path, objdump, target, &kernels)
}

/// Our matrix kernels (MFMA, WMMA) on `gfx`: names and tiles.
pub fn ours(gfx: &str) -> Vec<(String, String)> {
    aqueduct_gemm::mfma::KERNELS
        .iter()
        .chain(aqueduct_gemm::wmma::KERNELS)
        .filter(|k| k.built_for(gfx))
        .map(|k| {
            (
                k.name.to_string(),
                format!("{}x{}", k.tile_rows, k.tile_cols),
            )
        })
        .collect()
}

/// The report's code objects: ours for `gfx`, and the cached AMD one.
pub fn our_code_object(workspace: &Path, gfx: &str) -> PathBuf {
    crate::device_build::artifact_path(workspace, gfx, crate::device_build::GEMM_PACKAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "
0000000000001000 <k>:
\ts_mov_b32 s0, 0                                            // 000000001000: BE800080
\tglobal_load_dwordx4 v[0:3], v[4:5], off                    // 000000001004: DC5C8000 007F0004
\tds_read_b128 v[8:11], v1                                   // 00000000100C: D9FE0000 08000001
\tv_mfma_f32_32x32x8f16 v[0:15], v[8:9], v[10:11], v[0:15]  // 000000001014: D3D40000 04021508
\ts_waitcnt lgkmcnt(0)                                       // 00000000101C: BF8CC07F
\tds_write2_b64 v1, v[0:1], v[2:3] offset1:1                // 000000001020: D89C0100 00000201
\ts_cbranch_scc1 65529                                       // 000000001028: BF85FFF9 <k+0x4>
\ts_endpgm                                                   // 00000000102C: BF810000
";

    #[test]
    fn the_loop_of_the_sample_is_measured() {
        let f = parse_disassembly(SAMPLE);
        let lines = &f["k"];
        assert_eq!(lines.len(), 8);
        assert_eq!(lines[6].target, Some(0x1004));
        let m = main_loop(lines, Pick::Shortest).expect("a loop");
        assert_eq!(
            m,
            MainLoop {
                instructions: 6,
                mfmas: 1,
                global_load_bits: 128,
                lds_read_bits: 128,
                lds_write_bits: 128,
                waitcnts: 1,
                body: [
                    "global_load_dwordx4",
                    "ds_read_b128",
                    "v_mfma_f32_32x32x8f16",
                    "s_waitcnt",
                    "ds_write2_b64",
                    "s_cbranch_scc1",
                ]
                .map(String::from)
                .to_vec(),
            }
        );
    }

    /// A loop around another is not the main loop, even with more MFMAs.
    #[test]
    fn the_main_loop_is_an_innermost_one() {
        let line = |address: u64, mnemonic: &str, target: Option<u64>| Line {
            address,
            mnemonic: mnemonic.into(),
            target,
            narrow: false,
        };
        let lines = [
            line(0, "v_mfma_f32_32x32x8f16", None),
            line(8, "v_mfma_f32_32x32x8f16", None),
            line(16, "v_mfma_f32_32x32x8f16", None),
            line(24, "s_cbranch_scc1", Some(16)),
            line(28, "s_cbranch_scc1", Some(0)),
        ];
        let m = main_loop(&lines, Pick::Longest).expect("a loop");
        assert_eq!((m.instructions, m.mfmas), (2, 1));
    }

    /// The model costs an f8f6f4 MFMA by its operands' formats, which
    /// only the disassembly's `cbsz:`/`blgp:` give: both FP6, BF6 or FP4
    /// (2, 3, 4) is narrow; FP8 (0 or absent) or BF8 (1) on either side
    /// is not.
    #[test]
    fn f8f6f4_mfmas_are_narrow_when_both_formats_are_six_or_four_bits() {
        let scaled = "v_mfma_scale_f32_32x32x64_f8f6f4 v[2:17], v[50:55], v[56:61], v[2:17], \
                      v48, v47 op_sel_hi:[0,0,0]";
        for (formats, narrow) in [
            ("", false),
            (" cbsz:2 blgp:2", true),
            (" cbsz:3 blgp:3", true),
            (" cbsz:4 blgp:4", true),
            (" cbsz:4 blgp:2", true),
            (" cbsz:4", false),
            (" cbsz:1 blgp:4", false),
        ] {
            assert_eq!(
                narrow_f8f6f4(&format!("{scaled}{formats}")),
                narrow,
                "{formats}"
            );
        }
        assert!(!narrow_f8f6f4(
            "v_mfma_f32_32x32x8_f16 v[0:15], v[0:1], v[2:3], v[0:15] cbsz:2 blgp:2"
        ));
        let text =
            format!("0000000000001000 <k>:\n\t{scaled} cbsz:2 blgp:2// 000000001000: D3AC0000\n");
        let lines = &parse_disassembly(&text)["k"];
        assert_eq!(
            lines[0].model_name(),
            format!(
                "v_mfma_scale_f32_32x32x64_f8f6f4 {}",
                crate::gemm_model::NARROW_F8F6F4
            )
        );
    }

    #[test]
    fn widths_follow_the_mnemonics() {
        for (m, bits) in [
            ("ds_read_b128", 128),
            ("ds_read2_b64", 128),
            ("ds_read_b64", 64),
            ("ds_read2_b32", 64),
            ("ds_read_u16_d16_hi", 16),
            ("ds_write_b16", 16),
            ("buffer_load_dwordx4", 128),
            ("buffer_load_dword", 32),
            ("global_load_short_d16", 16),
            ("global_load_ubyte", 8),
        ] {
            assert_eq!(access_bits(m), bits, "{m}");
        }
    }

    #[test]
    fn counterparts_match_types_layout_and_tile() {
        let names = [
            "Cijk_Ailk_Bjlk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_x",
            "Cijk_Ailk_Bjlk_HHS_BH_MT128x128x32_MI16x16x16x1_SN_x",
            "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_x",
            "Cijk_Ailk_Bjlk_SB_MT64x64x16_MI32x32x2x1_SN_x",
        ];
        let got = amd_counterparts(&names);
        assert_eq!(
            got,
            [
                (names[3].to_string(), "64x64".to_string()),
                (names[0].to_string(), "128x128".to_string()),
            ]
        );
    }
}
