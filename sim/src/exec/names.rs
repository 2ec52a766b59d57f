//! GFX11/GFX12 mnemonics that name an operation GFX9 has under another
//! name, with the same semantics: the executor registry answers for them
//! with the GFX9 executor ([`super::lookup`]).
//!
//! LLVM renamed instructions for GFX11 (`AMDGPU.td`'s `Renamed`
//! mnemonic aliases; the RDNA3 ISA document's names): memory data sizes
//! as bit widths (`flat_load_dwordx2` → `flat_load_b64`, `ds_read_b32` →
//! `ds_load_b32`), the carry-in adds (`v_addc_co_u32` →
//! `v_add_co_ci_u32`), the no-carry adds (`v_add_u32` → `v_add_nc_u32`),
//! the negated-operand logic ops (`s_andn2_b32` → `s_and_not1_b32`), the
//! bit scans (`s_ff1_i32_b32` → `s_ctz_i32_b32`). Only whole renames are
//! listed: an operation whose semantics changed (true16 results, `v_cmpx`
//! without an SGPR result, which the decoder expresses) keeps its own
//! executor.

/// The GFX9 mnemonic of the operation GFX11+ calls `m`, if it is a rename.
pub fn gfx9_equivalent(m: &str) -> Option<String> {
    if let Some(n) = RENAMED
        .iter()
        .find(|(new, _)| *new == m)
        .map(|(_, old)| *old)
    {
        return Some(n.to_string());
    }
    memory(m)
}

/// Renames that no rule covers.
const RENAMED: &[(&str, &str)] = &[
    ("v_add_co_ci_u32", "v_addc_co_u32"),
    ("v_sub_co_ci_u32", "v_subb_co_u32"),
    ("v_subrev_co_ci_u32", "v_subbrev_co_u32"),
    ("v_add_nc_u32", "v_add_u32"),
    // Signed, saturating with clamp (RDNA3.5 ISA V_ADD_NC_I32; GFX9's
    // VOP3 V_ADD_I32); hipBLASLt's gfx1201 kernels use it.
    ("v_add_nc_i32", "v_add_i32"),
    ("v_sub_nc_i32", "v_sub_i32"),
    ("v_add_nc_u16", "v_add_u16"),
    ("v_sub_nc_u16", "v_sub_u16"),
    ("v_sub_nc_u32", "v_sub_u32"),
    ("v_subrev_nc_u32", "v_subrev_u32"),
    ("v_mad_co_u64_u32", "v_mad_u64_u32"),
    ("v_mad_co_i64_i32", "v_mad_i64_i32"),
    ("v_ctz_i32_b32", "v_ffbl_b32"),
    ("v_clz_i32_u32", "v_ffbh_u32"),
    ("v_cls_i32", "v_ffbh_i32"),
    ("v_mul_dx9_zero_f32", "v_mul_legacy_f32"),
    ("v_dot2acc_f32_f16", "v_dot2c_f32_f16"),
    ("s_and_not1_b32", "s_andn2_b32"),
    ("s_and_not1_b64", "s_andn2_b64"),
    ("s_or_not1_b32", "s_orn2_b32"),
    ("s_or_not1_b64", "s_orn2_b64"),
    ("s_and_not1_saveexec_b64", "s_andn2_saveexec_b64"),
    ("s_or_not1_saveexec_b64", "s_orn2_saveexec_b64"),
    ("s_ctz_i32_b32", "s_ff1_i32_b32"),
    ("s_ctz_i32_b64", "s_ff1_i32_b64"),
    ("s_clz_i32_u32", "s_flbit_i32_b32"),
    ("s_clz_i32_u64", "s_flbit_i32_b64"),
    ("s_cls_i32", "s_flbit_i32"),
    ("s_cls_i32_i64", "s_flbit_i32_i64"),
    ("s_add_co_u32", "s_add_u32"),
    ("s_sub_co_u32", "s_sub_u32"),
    ("s_add_co_i32", "s_add_i32"),
    ("s_sub_co_i32", "s_sub_i32"),
    ("s_addk_co_i32", "s_addk_i32"),
    ("s_add_co_ci_u32", "s_addc_u32"),
    ("s_sub_co_ci_u32", "s_subb_u32"),
    ("s_load_b32", "s_load_dword"),
    ("s_load_b64", "s_load_dwordx2"),
    ("s_load_b128", "s_load_dwordx4"),
    ("s_load_b256", "s_load_dwordx8"),
    ("s_load_b512", "s_load_dwordx16"),
    ("s_buffer_load_b32", "s_buffer_load_dword"),
    ("s_buffer_load_b64", "s_buffer_load_dwordx2"),
    ("s_buffer_load_b128", "s_buffer_load_dwordx4"),
    ("s_buffer_load_b256", "s_buffer_load_dwordx8"),
    ("s_buffer_load_b512", "s_buffer_load_dwordx16"),
];

/// FLAT/GLOBAL/SCRATCH, MUBUF and DS data names: `load_b32` ↔ `load_dword`,
/// `load_u8` ↔ `load_ubyte`, `load_d16_hi_b16` ↔ `load_short_d16_hi`,
/// `atomic_add_u64` ↔ `atomic_add_x2`, `ds_load_2addr_stride64_b32` ↔
/// `ds_read2st64_b32`.
fn memory(m: &str) -> Option<String> {
    let (space, rest) = ["flat_", "global_", "scratch_", "buffer_", "ds_"]
        .iter()
        .find_map(|s| m.strip_prefix(s).map(|r| (*s, r)))?;
    let old = if space == "ds_" {
        ds(rest)?
    } else {
        flat(rest)?
    };
    Some(format!("{space}{old}"))
}

fn flat(rest: &str) -> Option<String> {
    const SIZES: [(&str, &str); 4] = [
        ("b32", "dword"),
        ("b64", "dwordx2"),
        ("b96", "dwordx3"),
        ("b128", "dwordx4"),
    ];
    if let Some((op, size)) = rest.rsplit_once('_')
        && matches!(op, "load" | "store")
    {
        let small = match size {
            "u8" if op == "load" => Some("ubyte"),
            "i8" if op == "load" => Some("sbyte"),
            "u16" if op == "load" => Some("ushort"),
            "i16" if op == "load" => Some("sshort"),
            "b8" if op == "store" => Some("byte"),
            "b16" if op == "store" => Some("short"),
            _ => None,
        };
        let name = small.or_else(|| SIZES.iter().find(|(b, _)| *b == size).map(|(_, d)| *d))?;
        return Some(format!("{op}_{name}"));
    }
    // d16 forms: load_d16[_hi]_{u8,i8,b16}, store_d16_hi_{b8,b16}.
    let d16 = |hi: bool, t: &str, load: bool| -> Option<String> {
        let ty = match (t, load) {
            ("u8", true) => "ubyte",
            ("i8", true) => "sbyte",
            ("b16", true) => "short",
            ("b8", false) => "byte",
            ("b16", false) => "short",
            _ => return None,
        };
        let op = if load { "load" } else { "store" };
        Some(format!("{op}_{ty}_d16{}", if hi { "_hi" } else { "" }))
    };
    if let Some(t) = rest.strip_prefix("load_d16_hi_") {
        return d16(true, t, true);
    }
    if let Some(t) = rest.strip_prefix("load_d16_") {
        return d16(false, t, true);
    }
    if let Some(t) = rest.strip_prefix("store_d16_hi_") {
        return d16(true, t, false);
    }
    // Atomics: the 32-bit ones drop the type, the 64-bit ones take `_x2`;
    // min/max name their signedness by prefix.
    let op = rest.strip_prefix("atomic_")?;
    let (name, ty) = op.rsplit_once('_')?;
    let wide = ty.ends_with("64");
    let name = match (name, ty.as_bytes().first()) {
        ("min", Some(b'i')) => "smin",
        ("max", Some(b'i')) => "smax",
        ("min", Some(b'u')) => "umin",
        ("max", Some(b'u')) => "umax",
        ("add", _)
        | ("sub", _)
        | ("swap", _)
        | ("cmpswap", _)
        | ("and", _)
        | ("or", _)
        | ("xor", _) => name,
        ("inc", _) | ("dec", _) => name,
        _ => return None,
    };
    Some(format!("atomic_{name}{}", if wide { "_x2" } else { "" }))
}

fn ds(rest: &str) -> Option<String> {
    // `ds_cmpstore_*` is not `ds_cmpst_*`: GFX11 swapped its data operands.
    const PREFIXES: [(&str, &str); 8] = [
        ("load_2addr_stride64_", "read2st64_"),
        ("store_2addr_stride64_", "write2st64_"),
        ("load_2addr_", "read2_"),
        ("store_2addr_", "write2_"),
        ("storexchg_2addr_stride64_rtn_", "wrxchg2st64_rtn_"),
        ("storexchg_2addr_rtn_", "wrxchg2_rtn_"),
        ("load_", "read_"),
        ("store_", "write_"),
    ];
    PREFIXES
        .iter()
        .find_map(|(new, old)| rest.strip_prefix(new).map(|r| format!("{old}{r}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx11_names_map_to_the_gfx9_operations() {
        for (new, old) in [
            ("flat_load_b64", "flat_load_dwordx2"),
            ("global_store_b32", "global_store_dword"),
            ("scratch_load_b128", "scratch_load_dwordx4"),
            ("flat_load_u16", "flat_load_ushort"),
            ("scratch_store_b8", "scratch_store_byte"),
            ("flat_load_d16_hi_u8", "flat_load_ubyte_d16_hi"),
            ("global_load_d16_b16", "global_load_short_d16"),
            ("global_store_d16_hi_b16", "global_store_short_d16_hi"),
            ("flat_atomic_add_u64", "flat_atomic_add_x2"),
            ("flat_atomic_cmpswap_b32", "flat_atomic_cmpswap"),
            ("global_atomic_swap_b64", "global_atomic_swap_x2"),
            ("global_atomic_min_i32", "global_atomic_smin"),
            ("ds_load_2addr_b32", "ds_read2_b32"),
            ("ds_store_2addr_stride64_b64", "ds_write2st64_b64"),
            ("ds_load_u8_d16_hi", "ds_read_u8_d16_hi"),
            ("ds_store_b16_d16_hi", "ds_write_b16_d16_hi"),
            ("v_add_co_ci_u32", "v_addc_co_u32"),
            ("s_and_not1_b32", "s_andn2_b32"),
            ("s_load_b128", "s_load_dwordx4"),
        ] {
            assert_eq!(gfx9_equivalent(new).as_deref(), Some(old), "{new}");
        }
        assert_eq!(gfx9_equivalent("v_mov_b16"), None);
        assert_eq!(gfx9_equivalent("ds_cmpstore_b32"), None);
        assert_eq!(gfx9_equivalent("flat_load_lds_b32"), None);
    }
}
