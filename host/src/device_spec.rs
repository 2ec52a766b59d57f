//! Device strings and device selection.
//!
//! The forms, as in IREE's `amdgpu` driver:
//!
//! | string                          | selects                                   |
//! |---------------------------------|-------------------------------------------|
//! | `amdgpu`                        | every GPU agent                           |
//! | `amdgpu:N`                      | GPU ordinal N (runtime order; may change) |
//! | `amdgpu://GPU-<16 hex digits>`  | the GPU with that UUID (stable)           |
//! | `amdgpu://0,2` or `amdgpu://GPU-…,1` | a list, in the syntax of `ROCR_VISIBLE_DEVICES` |
//!
//! Ordinals count GPU agents only, after the runtime applied its own
//! `ROCR_VISIBLE_DEVICES` filter.

use crate::agent::{Agent, AgentInfo};
use crate::error::{Error, Result};
use crate::hsa::System;

/// One entry of a device list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceId {
    /// Position among the GPU agents.
    Ordinal(usize),
    /// `GPU-<hex>` as the agent reports it (compared case-insensitively).
    Uuid(String),
}

/// A parsed device string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// Every GPU.
    All,
    /// These GPUs, in this order.
    List(Vec<DeviceId>),
}

const SCHEME: &str = "amdgpu";

fn bad(input: &str, problem: impl Into<String>) -> Error {
    Error::DeviceString {
        input: input.to_string(),
        problem: problem.into(),
    }
}

/// Parses a `ROCR_VISIBLE_DEVICES`-style list: comma-separated ordinals and
/// `GPU-<uuid>`s, at least one, no duplicates.
pub fn parse_list(input: &str, list: &str) -> Result<Vec<DeviceId>> {
    let mut out = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        let id = if item.is_empty() {
            return Err(bad(input, "empty entry in the device list"));
        } else if let Some(hex) = item
            .strip_prefix("GPU-")
            .or_else(|| item.strip_prefix("gpu-"))
        {
            if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(
                    input,
                    format!("{item:?} is not GPU- followed by 16 hex digits"),
                ));
            }
            DeviceId::Uuid(format!("GPU-{}", hex.to_ascii_lowercase()))
        } else if item.bytes().all(|b| b.is_ascii_digit()) {
            DeviceId::Ordinal(
                item.parse()
                    .map_err(|_| bad(input, format!("ordinal {item} is too large")))?,
            )
        } else {
            return Err(bad(
                input,
                format!("{item:?} is neither an ordinal nor GPU-<uuid>"),
            ));
        };
        if out.contains(&id) {
            return Err(bad(input, format!("{item} is listed twice")));
        }
        out.push(id);
    }
    Ok(out)
}

impl std::str::FromStr for DeviceSpec {
    type Err = Error;

    fn from_str(input: &str) -> Result<Self> {
        let Some(rest) = input.strip_prefix(SCHEME) else {
            return Err(bad(
                input,
                "device strings start with `amdgpu` (amdgpu, amdgpu:N, amdgpu://ID[,ID...])",
            ));
        };
        if rest.is_empty() {
            return Ok(Self::All);
        }
        if let Some(list) = rest.strip_prefix("://") {
            if list.is_empty() {
                return Err(bad(
                    input,
                    "amdgpu:// needs at least one ordinal or GPU-<uuid>",
                ));
            }
            return Ok(Self::List(parse_list(input, list)?));
        }
        if let Some(ordinal) = rest.strip_prefix(':') {
            if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(input, "amdgpu:N needs a decimal ordinal"));
            }
            let n = ordinal
                .parse()
                .map_err(|_| bad(input, format!("ordinal {ordinal} is too large")))?;
            return Ok(Self::List(vec![DeviceId::Ordinal(n)]));
        }
        Err(bad(
            input,
            "expected amdgpu, amdgpu:N or amdgpu://ID[,ID...]",
        ))
    }
}

impl DeviceSpec {
    /// Indices into `gpus` (the GPU agents in runtime order) that the spec
    /// selects, in the spec's order.
    pub fn resolve(&self, input: &str, gpus: &[&AgentInfo]) -> Result<Vec<usize>> {
        let not_found = |problem: String| Error::DeviceNotFound {
            input: input.to_string(),
            problem,
        };
        if gpus.is_empty() {
            return Err(not_found("the runtime reports no GPU agents".into()));
        }
        match self {
            Self::All => Ok((0..gpus.len()).collect()),
            Self::List(ids) => ids
                .iter()
                .map(|id| match id {
                    DeviceId::Ordinal(n) if *n < gpus.len() => Ok(*n),
                    DeviceId::Ordinal(n) => Err(not_found(format!(
                        "GPU ordinal {n}, but there are {} GPU agents (0..={})",
                        gpus.len(),
                        gpus.len() - 1
                    ))),
                    DeviceId::Uuid(uuid) => gpus
                        .iter()
                        .position(|g| {
                            g.gpu
                                .as_ref()
                                .is_some_and(|g| g.uuid.eq_ignore_ascii_case(uuid))
                        })
                        .ok_or_else(|| {
                            let known: Vec<&str> = gpus
                                .iter()
                                .filter_map(|g| g.gpu.as_ref().map(|g| g.uuid.as_str()))
                                .collect();
                            not_found(format!(
                                "no GPU has UUID {uuid} (known: {})",
                                known.join(", ")
                            ))
                        }),
                })
                .collect(),
        }
    }
}

impl System {
    /// The GPU agents a device string names.
    pub fn select(&self, device: &str) -> Result<Vec<Agent>> {
        let spec: DeviceSpec = device.parse()?;
        let gpus = self.gpus()?;
        let infos: Vec<&AgentInfo> = gpus.iter().map(Agent::info).collect();
        let picked = spec.resolve(device, &infos)?;
        Ok(picked.into_iter().map(|i| gpus[i].clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(uuid: &str) -> AgentInfo {
        let mut info = crate::agent::test_gpu_info();
        if let Some(g) = info.gpu.as_mut() {
            g.uuid = uuid.into();
        }
        info
    }

    #[test]
    fn parses_every_form() {
        let p = |s: &str| s.parse::<DeviceSpec>().unwrap();
        assert_eq!(p("amdgpu"), DeviceSpec::All);
        assert_eq!(p("amdgpu:3"), DeviceSpec::List(vec![DeviceId::Ordinal(3)]));
        assert_eq!(
            p("amdgpu://GPU-0E12865A3BF5B7AB"),
            DeviceSpec::List(vec![DeviceId::Uuid("GPU-0e12865a3bf5b7ab".into())])
        );
        assert_eq!(
            p("amdgpu://GPU-0e12865a3bf5b7ab, 1"),
            DeviceSpec::List(vec![
                DeviceId::Uuid("GPU-0e12865a3bf5b7ab".into()),
                DeviceId::Ordinal(1)
            ])
        );
        assert_eq!(
            p("amdgpu://2,3"),
            DeviceSpec::List(vec![DeviceId::Ordinal(2), DeviceId::Ordinal(3)])
        );
    }

    #[test]
    fn refuses_malformed_strings_with_a_reason() {
        let cases = [
            ("cuda:0", "start with `amdgpu`"),
            ("", "start with `amdgpu`"),
            ("amdgpu:", "needs a decimal ordinal"),
            ("amdgpu:-1", "needs a decimal ordinal"),
            ("amdgpu:x", "needs a decimal ordinal"),
            ("amdgpu:99999999999999999999999", "too large"),
            ("amdgpu://", "at least one"),
            ("amdgpu://1,,2", "empty entry"),
            ("amdgpu://GPU-123", "16 hex digits"),
            ("amdgpu://GPU-0e12865a3bf5b7zz", "16 hex digits"),
            ("amdgpu://fast", "neither an ordinal nor GPU-<uuid>"),
            ("amdgpu://1,1", "listed twice"),
            ("amdgpux", "expected amdgpu"),
        ];
        for (input, reason) in cases {
            let err = input.parse::<DeviceSpec>().expect_err(input);
            let text = err.to_string();
            assert!(matches!(err, Error::DeviceString { .. }), "{input}: {text}");
            assert!(text.contains(reason), "{input}: {text}");
        }
    }

    #[test]
    fn resolves_against_the_agents() {
        let a = gpu("GPU-0e12865a3bf5b7ab");
        let b = gpu("GPU-89e8bdf59a10cf6d");
        let gpus = [&a, &b];
        let r = |s: &str| s.parse::<DeviceSpec>().unwrap().resolve(s, &gpus);
        assert_eq!(r("amdgpu").unwrap(), vec![0, 1]);
        assert_eq!(r("amdgpu:1").unwrap(), vec![1]);
        assert_eq!(r("amdgpu://GPU-89E8BDF59A10CF6D,0").unwrap(), vec![1, 0]);
        let err = r("amdgpu:2").unwrap_err().to_string();
        assert!(
            err.contains("GPU ordinal 2, but there are 2 GPU agents"),
            "{err}"
        );
        let err = r("amdgpu://GPU-ffffffffffffffff").unwrap_err().to_string();
        assert!(
            err.contains("no GPU has UUID GPU-ffffffffffffffff")
                && err.contains("GPU-0e12865a3bf5b7ab"),
            "{err}"
        );
        let none: [&AgentInfo; 0] = [];
        let err = DeviceSpec::All
            .resolve("amdgpu", &none)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no GPU agents"), "{err}");
    }
}
