//! `cargo xtask report`: one row per kernel per code object, with occupancy.
//!
//! Occupancy is waves per SIMD from register and LDS use with the target's
//! limits ([`crate::targets`]). The LDS bound assumes workgroups of the
//! kernel's `max_flat_workgroup_size`, as LLVM does for the top of a kernel's
//! flat-workgroup-size range; scratch does not bound it (LLVM's model, too).

use std::fmt::Write as _;
use std::path::Path;

use aqueduct_abi::code_object::CodeObject;

use crate::targets::{GfxTarget, Usage, occupancy};

/// One report row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub kernel: String,
    pub gfx: String,
    pub code_object: String,
    pub sgprs: u64,
    pub vgprs: u64,
    pub agprs: u64,
    pub lds_bytes: u64,
    pub scratch_bytes: u64,
    pub sgpr_spills: u64,
    pub vgpr_spills: u64,
    pub dynamic_stack: bool,
    pub waves_per_simd: u32,
    pub limiter: &'static str,
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Rows for every kernel of one code object built for `target`.
pub fn rows(code_object: &str, co: &CodeObject, target: &GfxTarget) -> Vec<Row> {
    co.kernels
        .iter()
        .map(|k| {
            let md = &k.metadata;
            let (waves, limiter) = occupancy(
                target,
                Usage {
                    sgprs: clamp_u32(md.sgpr_count),
                    vgprs: clamp_u32(md.vgpr_count),
                    agprs: clamp_u32(md.agpr_count),
                    lds_bytes: clamp_u32(md.group_segment_fixed_size),
                    workgroup_size: clamp_u32(md.max_flat_workgroup_size),
                },
            );
            Row {
                kernel: md.name.clone(),
                gfx: target.name.to_owned(),
                code_object: code_object.to_owned(),
                sgprs: md.sgpr_count,
                vgprs: md.vgpr_count,
                agprs: md.agpr_count,
                lds_bytes: md.group_segment_fixed_size,
                scratch_bytes: md.private_segment_fixed_size,
                sgpr_spills: md.sgpr_spill_count,
                vgpr_spills: md.vgpr_spill_count,
                dynamic_stack: md.uses_dynamic_stack,
                waves_per_simd: waves,
                limiter: limiter.name(),
            }
        })
        .collect()
}

/// Reads a code object file and makes its rows.
pub fn rows_for_file(
    path: &Path,
    code_object: &str,
    target: &GfxTarget,
) -> Result<Vec<Row>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let co = CodeObject::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(rows(code_object, &co, target))
}

const HEADER: [&str; 12] = [
    "kernel",
    "gfx",
    "code object",
    "SGPR",
    "VGPR",
    "AGPR",
    "LDS B",
    "scratch B",
    "spills s/v",
    "dyn stack",
    "waves/SIMD",
    "bound by",
];

/// The rows as an aligned text table.
pub fn format_table(rows: &[Row]) -> String {
    let cells: Vec<[String; 12]> = rows
        .iter()
        .map(|r| {
            [
                r.kernel.clone(),
                r.gfx.clone(),
                r.code_object.clone(),
                r.sgprs.to_string(),
                r.vgprs.to_string(),
                r.agprs.to_string(),
                r.lds_bytes.to_string(),
                r.scratch_bytes.to_string(),
                format!("{}/{}", r.sgpr_spills, r.vgpr_spills),
                if r.dynamic_stack { "yes" } else { "no" }.to_owned(),
                r.waves_per_simd.to_string(),
                r.limiter.to_owned(),
            ]
        })
        .collect();
    let mut widths = HEADER.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let mut line = |cols: &mut dyn Iterator<Item = &str>| {
        let mut first = true;
        for (i, c) in cols.enumerate() {
            if !first {
                out.push_str("  ");
            }
            first = false;
            // Text columns left-aligned, numbers right-aligned.
            if i < 3 {
                let _ = write!(out, "{c:<w$}", w = widths[i]);
            } else {
                let _ = write!(out, "{c:>w$}", w = widths[i]);
            }
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(&mut HEADER.iter().copied());
    for row in &cells {
        line(&mut row.iter().map(String::as_str));
    }
    out
}
