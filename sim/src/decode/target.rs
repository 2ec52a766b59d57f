//! The processors the decoder knows.

/// The targets this decoder knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// gfx90a (CDNA2: MI200 series).
    Gfx90a,
    /// gfx942 (CDNA3: MI300 series), with architected flat scratch.
    Gfx942,
}

impl Target {
    /// Every target the simulator runs.
    pub const ALL: [Self; 2] = [Self::Gfx90a, Self::Gfx942];

    /// The processor name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Gfx90a => "gfx90a",
            Self::Gfx942 => "gfx942",
        }
    }

    /// By processor name (`gfx90a`, `gfx942`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The processor's facts (`aqueduct_abi::gfx`); looked up by name once
    /// (executors ask per instruction).
    pub fn gfx(self) -> &'static aqueduct_abi::gfx::Gfx {
        static BY_TARGET: std::sync::OnceLock<[&'static aqueduct_abi::gfx::Gfx; 2]> =
            std::sync::OnceLock::new();
        BY_TARGET.get_or_init(|| {
            Self::ALL.map(|t| {
                aqueduct_abi::gfx::gfx(t.name())
                    .expect("every simulated target is in the per-gfx table (a test checks it)")
            })
        })[self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_its_facts_in_the_per_gfx_table() {
        for t in Target::ALL {
            assert_eq!(t.gfx().name, t.name());
            assert_eq!(Target::from_name(t.name()), Some(t));
        }
        assert_eq!(Target::from_name("gfx1100"), None);
    }
}
