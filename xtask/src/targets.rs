//! The gfx targets aqueduct builds for (the per-gfx table of
//! `aqueduct_abi::gfx`), and the occupancy a kernel reaches on each
//! (`aqueduct_abi::occupancy`, re-exported).

pub use aqueduct_abi::gfx::Gfx as GfxTarget;

/// The targets `cargo xtask build` builds when none are named: every
/// target of the one per-gfx table, in its order.
pub const DEFAULT_TARGETS: &[GfxTarget] = aqueduct_abi::gfx::TARGETS;

/// Looks a target up by name.
pub fn target(name: &str) -> Option<&'static GfxTarget> {
    aqueduct_abi::gfx::gfx(name)
}

/// Names of all supported targets, for error messages.
pub fn supported_names() -> String {
    DEFAULT_TARGETS
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a comma-separated target list; an unknown name is refused with the
/// supported ones. Duplicates are dropped, order kept.
pub fn parse_list(list: &str) -> Result<Vec<&'static GfxTarget>, String> {
    let mut out: Vec<&'static GfxTarget> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let t = target(name).ok_or_else(|| {
            format!(
                "unknown gfx target `{name}`; supported: {}",
                supported_names()
            )
        })?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no gfx target given; supported: {}",
            supported_names()
        ));
    }
    Ok(out)
}

pub use aqueduct_abi::occupancy::{Limiter, Usage, allocated_vgprs, occupancy};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_target_is_refused_with_the_supported_list() {
        let err = parse_list("gfx942,gfx1030").unwrap_err();
        assert!(
            err.contains("gfx1030") && err.contains("gfx90a, gfx942, gfx950"),
            "{err}"
        );
        assert_eq!(parse_list("gfx942, gfx942").unwrap().len(), 1);
        assert!(parse_list(" , ").is_err());
    }
}
