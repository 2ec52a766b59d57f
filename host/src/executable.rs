//! Code objects loaded onto an agent: HSA executables and their kernels.
//!
//! Loading follows ROCr's four calls (`../shared/seeds/rocm-runtime-notes.txt`,
//! "Loading ROC code object"): `hsa_executable_create_alt`,
//! `hsa_code_object_reader_create_from_memory`,
//! `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`.
//!
//! Before any of them, the code object is parsed with the shared reader and
//! its target checked against the agent's ISA: a gfx942 code object on a
//! gfx90a is refused with both names, rather than with ROCr's generic
//! "incompatible ISA" status. The parsed metadata stays with the executable:
//! kernels know their arguments (offsets, sizes, kinds), which the kernarg
//! builder checks against.

use std::ffi::CString;
use std::path::Path;
use std::sync::Arc;

use aqueduct_abi::code_object::{CodeObject, FeatureSetting, KernelMetadata, Target};

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::hsa::ffi;

/// A frozen executable holding one code object for one agent; destroyed
/// when it and all its [`Kernel`]s are dropped.
#[derive(Clone)]
pub struct Executable {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) agent: Agent,
    handle: ffi::Executable,
    reader: ffi::CodeObjectReader,
    pub(crate) code_object: CodeObject,
    /// The bytes the reader was created from: kept until the reader is
    /// destroyed.
    _bytes: Vec<u8>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let system = self.agent.system();
        // SAFETY: every Kernel holds this Inner, and every in-flight dispatch
        // holds its Kernel; none is left.
        let _ = unsafe { system.executable_destroy(self.handle) };
        let _ = system.code_object_reader_destroy(self.reader);
    }
}

/// The processors a generic target covers (AMDGPUUsage, "Generic Processor
/// Versioning" table).
const GENERIC_MEMBERS: &[(&str, &[&str])] = &[
    (
        "gfx9-generic",
        &["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"],
    ),
    ("gfx9-4-generic", &["gfx942", "gfx950"]),
    (
        "gfx10-1-generic",
        &["gfx1010", "gfx1011", "gfx1012", "gfx1013"],
    ),
    (
        "gfx10-3-generic",
        &[
            "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
        ],
    ),
    (
        "gfx11-generic",
        &[
            "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
        ],
    ),
    ("gfx12-generic", &["gfx1200", "gfx1201"]),
];

/// An agent's ISA as its name spells it:
/// `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-` → (`gfx942`, sramecc on,
/// xnack off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentIsa {
    /// The processor, e.g. `gfx942`.
    pub processor: String,
    /// The sramecc setting: on or off when the name says, else any.
    pub sramecc: FeatureSetting,
    /// The xnack setting: on or off when the name says, else any.
    pub xnack: FeatureSetting,
}

impl AgentIsa {
    /// Parses an ISA name; an agent name without the triple (`gfx942`) is
    /// accepted too (features then unknown: `Any`).
    pub fn parse(isa: &str) -> Result<Self> {
        let target_id = isa.rsplit_once("--").map_or(isa, |(_, t)| t);
        let mut parts = target_id.split(':');
        let processor = parts.next().unwrap_or_default();
        if !processor.starts_with("gfx") || processor.len() < 4 {
            return Err(Error::InvalidArgument {
                what: "ISA name",
                problem: format!("{isa:?} names no gfx processor"),
            });
        }
        let mut out = Self {
            processor: processor.to_string(),
            sramecc: FeatureSetting::Any,
            xnack: FeatureSetting::Any,
        };
        for feature in parts {
            let (name, setting) = match feature.split_at_checked(feature.len().saturating_sub(1)) {
                Some((name, "+")) => (name, FeatureSetting::On),
                Some((name, "-")) => (name, FeatureSetting::Off),
                _ => {
                    return Err(Error::InvalidArgument {
                        what: "ISA name",
                        problem: format!("{isa:?}: feature {feature:?} is not `name+` or `name-`"),
                    });
                }
            };
            match name {
                "sramecc" => out.sramecc = setting,
                "xnack" => out.xnack = setting,
                _ => {} // features that do not affect compatibility
            }
        }
        Ok(out)
    }
}

/// Refuses a code object whose target cannot run on `agent`: another
/// processor (unless a generic target that covers it), or a feature the code
/// requires on that the agent has off (or the reverse).
pub fn check_target(target: &Target, agent_name: &str, agent_isa: &str) -> Result<()> {
    let isa = AgentIsa::parse(if agent_isa.is_empty() {
        agent_name
    } else {
        agent_isa
    })?;
    let mismatch = || Error::TargetMismatch {
        code_object: target.to_string(),
        agent: isa.processor.clone(),
        agent_isa: agent_isa.to_string(),
    };
    let processor_ok = target.processor == isa.processor
        || GENERIC_MEMBERS.iter().any(|(g, members)| {
            *g == target.processor && members.contains(&isa.processor.as_str())
        });
    if !processor_ok {
        return Err(mismatch());
    }
    for (code, agent) in [(target.sramecc, isa.sramecc), (target.xnack, isa.xnack)] {
        let clash = matches!(
            (code, agent),
            (FeatureSetting::On, FeatureSetting::Off) | (FeatureSetting::Off, FeatureSetting::On)
        );
        if clash {
            return Err(mismatch());
        }
    }
    Ok(())
}

impl Agent {
    /// Loads a code object from memory: parse, check its target against
    /// this agent, then the four HSA calls.
    pub fn load_code_object(&self, bytes: &[u8]) -> Result<Executable> {
        self.load_code_object_from(bytes.to_vec(), None)
    }

    /// [`Self::load_code_object`] from a file.
    pub fn load_code_object_file(&self, path: impl AsRef<Path>) -> Result<Executable> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            action: "read",
            path: path.to_owned(),
            source,
        })?;
        self.load_code_object_from(bytes, Some(path))
    }

    fn load_code_object_from(&self, bytes: Vec<u8>, origin: Option<&Path>) -> Result<Executable> {
        let code_object = CodeObject::parse(&bytes).map_err(|source| Error::CodeObject {
            origin: origin.map(Path::to_owned),
            source,
        })?;
        let gpu = self
            .info()
            .gpu
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument {
                what: "load_code_object",
                problem: format!("agent {} is not a GPU", self.info().name),
            })?;
        check_target(&code_object.target, &self.info().name, &gpu.isa)?;

        let system = self.system();
        let handle = system.executable_create()?;
        // From here on the executable (and then the reader) must be
        // destroyed on every error path: the guard does that.
        let mut guard = LoadGuard {
            agent: self,
            handle,
            reader: None,
        };
        // SAFETY: `bytes` moves into the Inner below, which destroys the
        // reader before dropping them; the guard destroys it on failure
        // while `bytes` is still alive.
        let reader = unsafe { system.code_object_reader_create(&bytes)? };
        guard.reader = Some(reader);
        system.executable_load_agent_code_object(handle, self.handle(), reader)?;
        system.executable_freeze(handle)?;
        std::mem::forget(guard);
        Ok(Executable {
            inner: Arc::new(Inner {
                agent: self.clone(),
                handle,
                reader,
                code_object,
                _bytes: bytes,
            }),
        })
    }
}

/// Destroys a half-built executable.
struct LoadGuard<'a> {
    agent: &'a Agent,
    handle: ffi::Executable,
    reader: Option<ffi::CodeObjectReader>,
}

impl Drop for LoadGuard<'_> {
    fn drop(&mut self) {
        let system = self.agent.system();
        // SAFETY: never frozen or used; nothing refers to it.
        let _ = unsafe { system.executable_destroy(self.handle) };
        if let Some(reader) = self.reader {
            let _ = system.code_object_reader_destroy(reader);
        }
    }
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("agent", &self.inner.agent.info().name)
            .field("target", &self.inner.code_object.target.to_string())
            .field("kernels", &self.kernel_names())
            .finish()
    }
}

impl Executable {
    /// The agent the code object is loaded on.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The parsed code object (metadata, descriptors, target).
    pub fn code_object(&self) -> &CodeObject {
        &self.inner.code_object
    }

    /// Names of the kernels the code object defines, in metadata order.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.inner
            .code_object
            .kernels
            .iter()
            .map(|k| k.metadata.name.as_str())
            .collect()
    }

    /// Looks a kernel up by name (`fill_u32`, or its symbol `fill_u32.kd`).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let index = find_kernel(&self.inner.code_object, name)?;
        let meta = &self.inner.code_object.kernels[index].metadata;
        let symbol_name =
            CString::new(meta.symbol.as_str()).map_err(|_| Error::InvalidArgument {
                what: "kernel symbol",
                problem: format!("{:?} contains a NUL byte", meta.symbol),
            })?;
        let system = self.inner.agent.system();
        let symbol =
            system.executable_symbol(self.inner.handle, &symbol_name, self.inner.agent.handle())?;
        let object: u64 =
            system.symbol_info(symbol, ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)?;
        let kernarg_size: u32 = system.symbol_info(
            symbol,
            ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
        )?;
        let kernarg_align: u32 = system.symbol_info(
            symbol,
            ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT,
        )?;
        let group_size: u32 = system.symbol_info(
            symbol,
            ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
        )?;
        let private_size: u32 = system.symbol_info(
            symbol,
            ffi::HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
        )?;
        // The runtime and the metadata describe the same kernel; if they
        // disagree, the kernarg builder's layout cannot be trusted.
        if u64::from(kernarg_size) != meta.kernarg_segment_size {
            return Err(Error::InvalidArgument {
                what: "kernel",
                problem: format!(
                    "{}: the runtime reports a {kernarg_size}-byte kernarg segment, the metadata {}",
                    meta.name, meta.kernarg_segment_size
                ),
            });
        }
        Ok(Kernel {
            exec: self.inner.clone(),
            index,
            object,
            kernarg_size,
            kernarg_align,
            group_size,
            private_size,
        })
    }
}

/// The index of kernel `name` (kernel name or `.kd` symbol) in the code
/// object, or an error listing what the code object has.
pub(crate) fn find_kernel(code_object: &CodeObject, name: &str) -> Result<usize> {
    if name.is_empty() || name.contains('\0') {
        return Err(Error::InvalidArgument {
            what: "kernel name",
            problem: format!("{name:?} is empty or contains a NUL byte"),
        });
    }
    code_object
        .kernels
        .iter()
        .position(|k| k.metadata.name == name || k.metadata.symbol == name)
        .ok_or_else(|| Error::KernelNotFound {
            name: name.to_string(),
            available: code_object
                .kernels
                .iter()
                .map(|k| k.metadata.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// A kernel of a loaded executable, ready to dispatch.
#[derive(Clone)]
pub struct Kernel {
    pub(crate) exec: Arc<Inner>,
    index: usize,
    object: u64,
    kernarg_size: u32,
    kernarg_align: u32,
    group_size: u32,
    private_size: u32,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name())
            .field("object", &format_args!("{:#x}", self.object))
            .field("kernarg_segment_size", &self.kernarg_size)
            .field("group_segment_size", &self.group_size)
            .field("private_segment_size", &self.private_size)
            .finish()
    }
}

impl Kernel {
    /// The kernel's source-level name (metadata `.name`).
    pub fn name(&self) -> &str {
        &self.metadata().name
    }

    /// The code object's metadata for this kernel (arguments, limits).
    pub fn metadata(&self) -> &KernelMetadata {
        &self.exec.code_object.kernels[self.index].metadata
    }

    /// The agent its executable is loaded on: dispatch it on a queue of
    /// this agent.
    pub fn agent(&self) -> &Agent {
        &self.exec.agent
    }

    /// Address of the kernel descriptor (`HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`).
    pub fn object(&self) -> u64 {
        self.object
    }

    /// Bytes of the kernarg segment (explicit and hidden arguments).
    pub fn kernarg_segment_size(&self) -> u32 {
        self.kernarg_size
    }

    /// Required alignment of the kernarg segment.
    pub fn kernarg_segment_alignment(&self) -> u32 {
        self.kernarg_align
    }

    /// Static LDS bytes per workgroup.
    pub fn group_segment_size(&self) -> u32 {
        self.group_size
    }

    /// Scratch bytes per work-item.
    pub fn private_segment_size(&self) -> u32 {
        self.private_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqueduct_abi::code_object::CodeObjectVersion;

    fn target(e_flags: u32) -> Target {
        Target::from_e_flags(e_flags, CodeObjectVersion::V5).expect("known mach")
    }

    #[test]
    fn agent_isa_names_parse() {
        let isa = AgentIsa::parse("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-").unwrap();
        assert_eq!(isa.processor, "gfx942");
        assert_eq!(
            (isa.sramecc, isa.xnack),
            (FeatureSetting::On, FeatureSetting::Off)
        );
        let isa = AgentIsa::parse("gfx1100").unwrap();
        assert_eq!(
            (isa.sramecc, isa.xnack),
            (FeatureSetting::Any, FeatureSetting::Any)
        );
        for bad in [
            "",
            "amdgcn-amd-amdhsa--",
            "x86_64",
            "gfx942:xnack",
            "gfx942:xnack*",
        ] {
            assert!(AgentIsa::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_code_object_for_another_gfx_is_refused_naming_both() {
        // gfx942 (mach 0x4c), features "any".
        let t = target(0x04c | 0x100 | 0x400);
        check_target(&t, "gfx942", "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-").unwrap();
        let err =
            check_target(&t, "gfx90a", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("code object targets gfx942"), "{text}");
        assert!(text.contains("the agent is gfx90a"), "{text}");
    }

    #[test]
    fn feature_settings_must_not_clash() {
        // gfx942 with xnack+ (0x300) and sramecc any (0x400).
        let xnack_on = target(0x04c | 0x300 | 0x400);
        let err = check_target(
            &xnack_on,
            "gfx942",
            "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        );
        assert!(matches!(err, Err(Error::TargetMismatch { .. })), "{err:?}");
        check_target(
            &xnack_on,
            "gfx942",
            "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack+",
        )
        .unwrap();
    }

    #[test]
    fn generic_targets_cover_their_members_only() {
        // gfx9-4-generic is mach 0x05f.
        let generic = target(0x05f | 0x100 | 0x400);
        check_target(
            &generic,
            "gfx942",
            "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        )
        .unwrap();
        check_target(
            &generic,
            "gfx950",
            "amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-",
        )
        .unwrap();
        assert!(check_target(&generic, "gfx90a", "amdgcn-amd-amdhsa--gfx90a").is_err());
    }
}
