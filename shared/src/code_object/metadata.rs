//! `NT_AMDGPU_METADATA` contents (AMDGPUUsage, "Code Object V3 to V6
//! Metadata"): a msgpack map with `amdhsa.version`, `amdhsa.target` (v4+) and
//! `amdhsa.kernels`. Required fields missing or of the wrong kind are errors
//! naming the field; keys this reader does not know are ignored, as the
//! document allows vendors to add them.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::CodeObjectError;
use super::msgpack::Value;

/// The whole metadata note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// `amdhsa.version`: [major, minor].
    pub version: [u64; 2],
    /// `amdhsa.target`: the target ID, e.g.
    /// `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-` (code object v4+).
    pub target: Option<String>,
    /// `amdhsa.kernels`, in the note's order; empty when absent.
    pub kernels: Vec<KernelMetadata>,
}

/// One entry of `amdhsa.kernels`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelMetadata {
    /// `.name`: the source-level kernel name.
    pub name: String,
    /// `.symbol`: the kernel descriptor's symbol, `<name>.kd`.
    pub symbol: String,
    /// `.args`: the explicit and hidden kernel arguments in kernarg order;
    /// empty when absent.
    pub args: Vec<KernelArg>,
    /// `.kernarg_segment_size`: bytes of the kernarg segment, hidden
    /// arguments included.
    pub kernarg_segment_size: u64,
    /// `.kernarg_segment_align`: its alignment in bytes, a power of two.
    pub kernarg_segment_align: u64,
    /// `.group_segment_fixed_size`: static LDS bytes per workgroup.
    pub group_segment_fixed_size: u64,
    /// `.private_segment_fixed_size`: static scratch bytes per work-item.
    pub private_segment_fixed_size: u64,
    /// `.wavefront_size`: 32 or 64.
    pub wavefront_size: u64,
    /// `.sgpr_count`: SGPRs one wave uses, special ones (VCC, flat
    /// scratch, XNACK mask) included.
    pub sgpr_count: u64,
    /// `.vgpr_count`: architectural VGPRs one work-item uses.
    pub vgpr_count: u64,
    /// `.agpr_count` (gfx90a and later); 0 when absent.
    pub agpr_count: u64,
    /// `.sgpr_spill_count`: SGPRs spilled; 0 when absent.
    pub sgpr_spill_count: u64,
    /// `.vgpr_spill_count`: VGPRs spilled to scratch; 0 when absent.
    pub vgpr_spill_count: u64,
    /// `.max_flat_workgroup_size`: most work-items a workgroup may have.
    pub max_flat_workgroup_size: u64,
    /// `.uses_dynamic_stack` (v5+); false when absent.
    pub uses_dynamic_stack: bool,
    /// `.reqd_workgroup_size`, when the kernel fixes it.
    pub reqd_workgroup_size: Option<[u64; 3]>,
    /// `.kind`: `normal`, `init` or `fini` (normal when absent).
    pub kind: Option<String>,
}

/// One entry of a kernel's `.args`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelArg {
    /// `.name`: the source-level parameter name, when recorded.
    pub name: Option<String>,
    /// `.type_name`: the source-level type, when recorded.
    pub type_name: Option<String>,
    /// `.offset` in the kernarg segment, bytes.
    pub offset: u64,
    /// `.size` in bytes.
    pub size: u64,
    /// `.value_kind`, e.g. `by_value`, `global_buffer`, `hidden_block_count_x`.
    pub value_kind: String,
    /// `.address_space` of a pointer argument, e.g. `global`, `generic`.
    pub address_space: Option<String>,
    /// `.access` of a pointer argument as declared: `read_only`,
    /// `write_only` or `read_write`.
    pub access: Option<String>,
    /// `.actual_access`: how the kernel really accesses the memory (same
    /// values as `access`).
    pub actual_access: Option<String>,
    /// `.pointee_align` of a dynamic LDS pointer argument, bytes.
    pub pointee_align: Option<u64>,
    /// `.is_const`: the pointee is `const`; false when absent.
    pub is_const: bool,
    /// `.is_restrict`: the pointer is `restrict`; false when absent.
    pub is_restrict: bool,
    /// `.is_volatile`: the pointee is `volatile`; false when absent.
    pub is_volatile: bool,
}

struct Path<'p>(&'p str);

impl Path<'_> {
    fn err(&self, field: &str, problem: &'static str) -> CodeObjectError {
        CodeObjectError::Metadata {
            path: format!("{}{}", self.0, field),
            problem,
        }
    }

    fn req<'v, 'a>(&self, map: &'v Value<'a>, key: &str) -> Result<&'v Value<'a>, CodeObjectError> {
        map.get(key)
            .ok_or_else(|| self.err(key, "required field missing"))
    }

    fn u64(&self, map: &Value<'_>, key: &str) -> Result<u64, CodeObjectError> {
        self.req(map, key)?
            .as_u64()
            .ok_or_else(|| self.err(key, "expected a non-negative integer"))
    }

    fn opt_u64(&self, map: &Value<'_>, key: &str) -> Result<Option<u64>, CodeObjectError> {
        map.get(key)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.err(key, "expected a non-negative integer"))
            })
            .transpose()
    }

    fn str(&self, map: &Value<'_>, key: &str) -> Result<String, CodeObjectError> {
        Ok(self
            .req(map, key)?
            .as_str()
            .ok_or_else(|| self.err(key, "expected a string"))?
            .to_string())
    }

    fn opt_str(&self, map: &Value<'_>, key: &str) -> Result<Option<String>, CodeObjectError> {
        map.get(key)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.err(key, "expected a string"))
            })
            .transpose()
    }

    fn flag(&self, map: &Value<'_>, key: &str) -> Result<bool, CodeObjectError> {
        map.get(key)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| self.err(key, "expected a boolean"))
            })
            .transpose()
            .map(|b| b.unwrap_or(false))
    }
}

impl Metadata {
    /// The metadata of one `NT_AMDGPU_METADATA` note's descriptor.
    pub fn from_note(desc: &[u8]) -> Result<Self, CodeObjectError> {
        Self::from_msgpack(&super::msgpack::decode(desc)?)
    }

    /// Reads the metadata map.
    pub fn from_msgpack(root: &Value<'_>) -> Result<Self, CodeObjectError> {
        let top = Path("");
        if root.as_map().is_none() {
            return Err(top.err("<root>", "expected a map"));
        }
        let version = match top.req(root, "amdhsa.version")?.as_array() {
            Some([major, minor, ..]) => match (major.as_u64(), minor.as_u64()) {
                (Some(major), Some(minor)) => [major, minor],
                _ => return Err(top.err("amdhsa.version", "expected [major, minor] integers")),
            },
            _ => return Err(top.err("amdhsa.version", "expected [major, minor] integers")),
        };
        let target = top.opt_str(root, "amdhsa.target")?;
        let kernels = match root.get("amdhsa.kernels") {
            None => Vec::new(),
            Some(list) => list
                .as_array()
                .ok_or_else(|| top.err("amdhsa.kernels", "expected an array"))?
                .iter()
                .enumerate()
                .map(|(i, k)| KernelMetadata::from_msgpack(k, &format!("amdhsa.kernels[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        Ok(Self {
            version,
            target,
            kernels,
        })
    }
}

impl KernelMetadata {
    fn from_msgpack(k: &Value<'_>, at: &str) -> Result<Self, CodeObjectError> {
        let p = Path(at);
        if k.as_map().is_none() {
            return Err(p.err("", "expected a map"));
        }
        let args = match k.get(".args") {
            None => Vec::new(),
            Some(list) => list
                .as_array()
                .ok_or_else(|| p.err(".args", "expected an array"))?
                .iter()
                .enumerate()
                .map(|(i, a)| KernelArg::from_msgpack(a, &format!("{at}.args[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        let reqd_workgroup_size = match k.get(".reqd_workgroup_size") {
            None => None,
            Some(v) => match v.as_array() {
                Some([x, y, z]) => match (x.as_u64(), y.as_u64(), z.as_u64()) {
                    (Some(x), Some(y), Some(z)) => Some([x, y, z]),
                    _ => return Err(p.err(".reqd_workgroup_size", "expected three integers")),
                },
                _ => return Err(p.err(".reqd_workgroup_size", "expected three integers")),
            },
        };
        Ok(Self {
            name: p.str(k, ".name")?,
            symbol: p.str(k, ".symbol")?,
            args,
            kernarg_segment_size: p.u64(k, ".kernarg_segment_size")?,
            kernarg_segment_align: p.u64(k, ".kernarg_segment_align")?,
            group_segment_fixed_size: p.u64(k, ".group_segment_fixed_size")?,
            private_segment_fixed_size: p.u64(k, ".private_segment_fixed_size")?,
            wavefront_size: p.u64(k, ".wavefront_size")?,
            sgpr_count: p.u64(k, ".sgpr_count")?,
            vgpr_count: p.u64(k, ".vgpr_count")?,
            agpr_count: p.opt_u64(k, ".agpr_count")?.unwrap_or(0),
            sgpr_spill_count: p.opt_u64(k, ".sgpr_spill_count")?.unwrap_or(0),
            vgpr_spill_count: p.opt_u64(k, ".vgpr_spill_count")?.unwrap_or(0),
            max_flat_workgroup_size: p.u64(k, ".max_flat_workgroup_size")?,
            uses_dynamic_stack: p.flag(k, ".uses_dynamic_stack")?,
            reqd_workgroup_size,
            kind: p.opt_str(k, ".kind")?,
        })
    }
}

impl KernelArg {
    fn from_msgpack(a: &Value<'_>, at: &str) -> Result<Self, CodeObjectError> {
        let p = Path(at);
        if a.as_map().is_none() {
            return Err(p.err("", "expected a map"));
        }
        Ok(Self {
            name: p.opt_str(a, ".name")?,
            type_name: p.opt_str(a, ".type_name")?,
            offset: p.u64(a, ".offset")?,
            size: p.u64(a, ".size")?,
            value_kind: p.str(a, ".value_kind")?,
            address_space: p.opt_str(a, ".address_space")?,
            access: p.opt_str(a, ".access")?,
            actual_access: p.opt_str(a, ".actual_access")?,
            pointee_align: p.opt_u64(a, ".pointee_align")?,
            is_const: p.flag(a, ".is_const")?,
            is_restrict: p.flag(a, ".is_restrict")?,
            is_volatile: p.flag(a, ".is_volatile")?,
        })
    }
}
