//! The shared code-object reader against the toolchain's own LLVM tools, for
//! every code object the build produced: ELF header and flags
//! (`llvm-readobj -h`), metadata note (`llvm-readobj --notes`), symbols
//! (`llvm-readobj --symbols`) and every kernel-descriptor field that
//! `llvm-objdump` decodes into `.amdhsa_*` directives. Then the descriptor
//! against the metadata it must agree with.

use std::collections::BTreeMap;

use aqueduct_abi::code_object::target::MACH_TABLE;
use aqueduct_abi::code_object::{CodeObject, CodeObjectVersion, FeatureSetting, Kernel};
use aqueduct_abi::kernel_descriptor::GfxFamily;
use aqueduct_tests::{built_code_objects, run_llvm_tool};

fn parse(path: &std::path::Path) -> CodeObject {
    let bytes = std::fs::read(path).unwrap();
    CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn path_str(path: &std::path::Path) -> &str {
    path.to_str().expect("workspace paths are UTF-8")
}

#[test]
fn elf_header_agrees_with_llvm_readobj() {
    for built in built_code_objects() {
        let co = parse(&built.path);
        let out = run_llvm_tool("llvm-readobj", &["-h", path_str(&built.path)]);
        let abi_version = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("ABIVersion: "))
            .and_then(|v| v.trim().parse::<u8>().ok())
            .expect("readobj prints ABIVersion");
        assert_eq!(
            CodeObjectVersion::from_abi_version(abi_version),
            Some(co.version)
        );
        assert!(out.contains("OS/ABI: AMDGPU_HSA (0x40)"), "{out}");
        let mach = format!(
            "EF_AMDGPU_MACH_AMDGCN_{} (0x{:X})",
            co.target.processor.to_uppercase(),
            co.target.mach
        );
        assert!(
            out.contains(&mach),
            "{}: expected {mach} in\n{out}",
            built.path.display()
        );
        for (feature, setting) in [("XNACK", co.target.xnack), ("SRAMECC", co.target.sramecc)] {
            let name = match setting {
                FeatureSetting::Unsupported => {
                    format!("EF_AMDGPU_FEATURE_{feature}_UNSUPPORTED_V4")
                }
                FeatureSetting::Any => format!("EF_AMDGPU_FEATURE_{feature}_ANY_V4"),
                FeatureSetting::Off => format!("EF_AMDGPU_FEATURE_{feature}_OFF_V4"),
                FeatureSetting::On => format!("EF_AMDGPU_FEATURE_{feature}_ON_V4"),
            };
            // readobj names only non-zero feature fields.
            if setting != FeatureSetting::Unsupported {
                assert!(
                    out.contains(&name),
                    "{}: expected {name} in\n{out}",
                    built.path.display()
                );
            }
        }
        assert_eq!(co.target.processor, built.gfx);
    }
}

#[test]
fn mach_table_agrees_with_llvm_readobj() {
    let dir = std::env::temp_dir().join(format!("aqueduct-mach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    for &(mach, name) in MACH_TABLE {
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2; // ELFCLASS64
        header[5] = 1; // little-endian
        header[6] = 1; // EV_CURRENT
        header[7] = 64; // ELFOSABI_AMDGPU_HSA
        header[8] = 4; // code object v6
        header[16..18].copy_from_slice(&3u16.to_le_bytes());
        header[18..20].copy_from_slice(&224u16.to_le_bytes());
        header[20..24].copy_from_slice(&1u32.to_le_bytes());
        header[48..52].copy_from_slice(&mach.to_le_bytes());
        header[52..54].copy_from_slice(&64u16.to_le_bytes());
        let file = dir.join(format!("{mach:x}.elf"));
        std::fs::write(&file, &header).unwrap();
        let out = run_llvm_tool("llvm-readobj", &["-h", path_str(&file)]);
        let expected = format!(
            "EF_AMDGPU_MACH_AMDGCN_{} (0x{mach:X})",
            name.to_uppercase().replace('-', "_")
        );
        if out.contains("EF_AMDGPU_MACH_AMDGCN_") {
            assert!(
                out.contains(&expected),
                "mach {mach:#x}: expected {expected} in\n{out}"
            );
            checked += 1;
        } else {
            // Only the retired gfx940/gfx941 values are unknown to current LLVM.
            assert!(
                matches!(mach, 0x40 | 0x4b),
                "llvm-readobj does not know mach {mach:#x} ({name})"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(checked, MACH_TABLE.len() - 2);
}

/// `key: value` lines of llvm-readobj's YAML rendering of the metadata,
/// grouped per kernel (indent 4) and per argument (indent 8).
struct YamlKernel {
    fields: BTreeMap<String, String>,
    args: Vec<BTreeMap<String, String>>,
}

fn readobj_metadata(text: &str) -> (BTreeMap<String, String>, Vec<YamlKernel>) {
    let mut top: BTreeMap<String, String> = BTreeMap::new();
    let mut kernels: Vec<YamlKernel> = Vec::new();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("AMDGPU Metadata: ---"));
    lines.next();
    let mut last_top_key = String::new();
    for line in lines {
        if line.trim() == "..." {
            break;
        }
        let indent = line.len() - line.trim_start().len();
        let item = line.trim_start().strip_prefix("- ");
        let body = item.unwrap_or(line.trim_start());
        let Some((key, value)) = body.split_once(':') else {
            // A scalar element of a top-level list: amdhsa.version.
            if let (2, Some(element)) = (indent, item) {
                let entry = top.entry(last_top_key.clone()).or_default();
                entry.push_str(&format!(
                    "{}{}",
                    if entry.is_empty() { "" } else { "," },
                    element.trim()
                ));
            }
            continue;
        };
        let (key, value) = (key.trim().to_owned(), value.trim().to_owned());
        match (indent, item.is_some()) {
            (0, false) => {
                last_top_key = key.clone();
                top.insert(key, value);
            }
            (2, true) if last_top_key == "amdhsa.kernels" => kernels.push(YamlKernel {
                fields: BTreeMap::from([(key, value)]),
                args: Vec::new(),
            }),
            (4, false) => {
                kernels.last_mut().unwrap().fields.insert(key, value);
            }
            (6, true) => kernels
                .last_mut()
                .unwrap()
                .args
                .push(BTreeMap::from([(key, value)])),
            (8, false) => {
                kernels
                    .last_mut()
                    .unwrap()
                    .args
                    .last_mut()
                    .unwrap()
                    .insert(key, value);
            }
            _ => {}
        }
    }
    (top, kernels)
}

/// Metadata fields AMDGPUUsage marks optional (or target-specific).
const OPTIONAL: &[&str] = &[
    ".agpr_count",
    ".sgpr_spill_count",
    ".vgpr_spill_count",
    ".uses_dynamic_stack",
];

#[test]
fn metadata_agrees_with_llvm_readobj_notes() {
    let mut kernels_seen = 0;
    for built in built_code_objects() {
        let co = parse(&built.path);
        let out = run_llvm_tool("llvm-readobj", &["--notes", path_str(&built.path)]);
        let (top, yaml_kernels) = readobj_metadata(&out);
        let ctx = built.path.display();
        assert_eq!(
            top.get("amdhsa.target"),
            co.metadata.target.as_ref(),
            "{ctx}"
        );
        assert_eq!(
            top.get("amdhsa.version").map(String::as_str),
            Some(format!("{},{}", co.metadata.version[0], co.metadata.version[1]).as_str()),
            "{ctx}"
        );
        assert_eq!(yaml_kernels.len(), co.kernels.len(), "{ctx}");
        for (y, k) in yaml_kernels.iter().zip(&co.kernels) {
            let md = &k.metadata;
            let expect = [
                (".name", md.name.clone()),
                (".symbol", md.symbol.clone()),
                (".kernarg_segment_size", md.kernarg_segment_size.to_string()),
                (
                    ".kernarg_segment_align",
                    md.kernarg_segment_align.to_string(),
                ),
                (
                    ".group_segment_fixed_size",
                    md.group_segment_fixed_size.to_string(),
                ),
                (
                    ".private_segment_fixed_size",
                    md.private_segment_fixed_size.to_string(),
                ),
                (".wavefront_size", md.wavefront_size.to_string()),
                (".sgpr_count", md.sgpr_count.to_string()),
                (".vgpr_count", md.vgpr_count.to_string()),
                (".agpr_count", md.agpr_count.to_string()),
                (".sgpr_spill_count", md.sgpr_spill_count.to_string()),
                (".vgpr_spill_count", md.vgpr_spill_count.to_string()),
                (
                    ".max_flat_workgroup_size",
                    md.max_flat_workgroup_size.to_string(),
                ),
                (".uses_dynamic_stack", md.uses_dynamic_stack.to_string()),
            ];
            for (key, ours) in expect {
                match y.fields.get(key) {
                    Some(theirs) => assert_eq!(theirs, &ours, "{ctx}: {} {key}", md.name),
                    // Optional fields the note leaves out read as their defaults.
                    None => assert!(
                        OPTIONAL.contains(&key) && (ours == "0" || ours == "false"),
                        "{ctx}: {} {key} absent from the note but read as {ours}",
                        md.name
                    ),
                }
            }
            assert_eq!(y.args.len(), md.args.len(), "{ctx}: {} args", md.name);
            for (ya, a) in y.args.iter().zip(&md.args) {
                assert_eq!(
                    ya.get(".offset"),
                    Some(&a.offset.to_string()),
                    "{ctx}: {}",
                    md.name
                );
                assert_eq!(
                    ya.get(".size"),
                    Some(&a.size.to_string()),
                    "{ctx}: {}",
                    md.name
                );
                assert_eq!(
                    ya.get(".value_kind"),
                    Some(&a.value_kind),
                    "{ctx}: {}",
                    md.name
                );
                assert_eq!(
                    ya.get(".address_space"),
                    a.address_space.as_ref(),
                    "{ctx}: {}",
                    md.name
                );
            }
            kernels_seen += 1;
        }
    }
    // The device library's twelve kernels (fill_u32, copy_bytes,
    // saxpy_f32, fill_pattern, blit_fill, blit_copy, enqueue_dispatch, the command
    // buffers' cmd_block_issue, cmd_block_issue_serial, cmd_branch and
    // cmd_patch_dispatch, and the scheduler's sched_tick) on each of the
    // five targets, the simulator's test kernels on gfx90a and gfx942, the memory-model
    // probes on all five, and the GEMM kernels on all five.
    let kernels_of = |package: &str| -> usize {
        built_code_objects()
            .iter()
            .filter(|b| b.package == package)
            .map(|b| {
                let bytes = std::fs::read(&b.path).expect("read code object");
                CodeObject::parse(&bytes).expect("parse").kernels.len()
            })
            .sum()
    };
    let test_kernels = kernels_of("aqueduct-test-kernels");
    let probes = kernels_of("aqueduct-probes");
    assert!(test_kernels > 2, "the test kernels are missing");
    assert_eq!(probes, 5 * 100, "the memory-model probes");
    let gemm = kernels_of("aqueduct-gemm");
    // Every kernel of aqueduct-gemm's lists on each target it is built for.
    let listed: usize = xtask::targets::DEFAULT_TARGETS
        .iter()
        .map(|t| xtask::device_build::gemm_launch_bounds(t.name).len())
        .sum();
    assert_eq!(gemm, listed, "the GEMM kernels");
    assert_eq!(kernels_seen, 12 * 5 + test_kernels + probes + gemm);
}

#[test]
fn symbols_agree_with_llvm_readobj() {
    for built in built_code_objects() {
        let co = parse(&built.path);
        let out = run_llvm_tool("llvm-readobj", &["--symbols", path_str(&built.path)]);
        let value_of = |name: &str| {
            let block = out.split("Symbol {").find(|b| {
                b.lines().any(|l| {
                    l.trim()
                        .strip_prefix("Name: ")
                        .is_some_and(|n| n.split(' ').next() == Some(name))
                })
            })?;
            let v = block
                .lines()
                .find_map(|l| l.trim().strip_prefix("Value: 0x"))?;
            u64::from_str_radix(v.trim(), 16).ok()
        };
        for k in &co.kernels {
            assert_eq!(
                value_of(&k.metadata.symbol),
                Some(k.descriptor_address),
                "{}",
                k.name()
            );
            assert_eq!(value_of(k.name()), Some(k.entry_address), "{}", k.name());
        }
    }
}

/// Granule of COMPUTE_PGM_RSRC1.GRANULATED_WORKITEM_VGPR_COUNT (AMDGPUUsage,
/// "compute_pgm_rsrc1"): 8 on GFX90A/GFX940, 8 in wave32 and 4 in wave64 on
/// GFX10+, 4 on other GFX9.
fn vgpr_encoding_granule(family: GfxFamily, wave32: bool) -> u64 {
    match family {
        GfxFamily::Gfx9Mai => 8,
        GfxFamily::Gfx9 => 4,
        _ if wave32 => 8,
        _ => 4,
    }
}

/// The value our reader gives for one `.amdhsa_*` directive, or `None` for
/// directives this test does not map.
fn directive_value(k: &Kernel, family: GfxFamily, name: &str) -> Option<u64> {
    let kd = &k.descriptor;
    let (r1, r2, r3, p) = (kd.rsrc1(), kd.rsrc2(), kd.rsrc3(), kd.properties());
    let b = |v: bool| u64::from(v);
    Some(match name {
        "group_segment_fixed_size" => u64::from(kd.group_segment_fixed_size),
        "private_segment_fixed_size" => u64::from(kd.private_segment_fixed_size),
        "kernarg_size" => u64::from(kd.kernarg_size),
        "accum_offset" => u64::from(r3.accum_offset_vgprs()),
        "tg_split" => b(r3.tg_split()),
        "next_free_vgpr" => {
            (u64::from(r1.granulated_workitem_vgpr_count()) + 1)
                * vgpr_encoding_granule(family, p.enable_wavefront_size32())
        }
        "float_round_mode_32" => u64::from(r1.float_round_mode_32()),
        "float_round_mode_16_64" => u64::from(r1.float_round_mode_16_64()),
        "float_denorm_mode_32" => u64::from(r1.float_denorm_mode_32()),
        "float_denorm_mode_16_64" => u64::from(r1.float_denorm_mode_16_64()),
        "dx10_clamp" => b(r1.enable_dx10_clamp()),
        "ieee_mode" => b(r1.enable_ieee_mode()),
        "fp16_overflow" => b(r1.fp16_ovfl()),
        "workgroup_processor_mode" => b(r1.wgp_mode()),
        "memory_ordered" => b(r1.mem_ordered()),
        "forward_progress" => b(r1.fwd_progress()),
        "system_sgpr_private_segment_wavefront_offset" | "enable_private_segment" => {
            b(r2.enable_private_segment())
        }
        "system_sgpr_workgroup_id_x" => b(r2.enable_sgpr_workgroup_id_x()),
        "system_sgpr_workgroup_id_y" => b(r2.enable_sgpr_workgroup_id_y()),
        "system_sgpr_workgroup_id_z" => b(r2.enable_sgpr_workgroup_id_z()),
        "system_sgpr_workgroup_info" => b(r2.enable_sgpr_workgroup_info()),
        "system_vgpr_workitem_id" => u64::from(r2.enable_vgpr_workitem_id()),
        "exception_fp_ieee_invalid_op" => u64::from(r2.enable_exceptions() & 1),
        "exception_fp_denorm_src" => u64::from(r2.enable_exceptions() >> 1 & 1),
        "exception_fp_ieee_div_zero" => u64::from(r2.enable_exceptions() >> 2 & 1),
        "exception_fp_ieee_overflow" => u64::from(r2.enable_exceptions() >> 3 & 1),
        "exception_fp_ieee_underflow" => u64::from(r2.enable_exceptions() >> 4 & 1),
        "exception_fp_ieee_inexact" => u64::from(r2.enable_exceptions() >> 5 & 1),
        "exception_int_div_zero" => u64::from(r2.enable_exceptions() >> 6 & 1),
        "user_sgpr_private_segment_buffer" => b(p.enable_sgpr_private_segment_buffer()),
        "user_sgpr_dispatch_ptr" => b(p.enable_sgpr_dispatch_ptr()),
        "user_sgpr_queue_ptr" => b(p.enable_sgpr_queue_ptr()),
        "user_sgpr_kernarg_segment_ptr" => b(p.enable_sgpr_kernarg_segment_ptr()),
        "user_sgpr_dispatch_id" => b(p.enable_sgpr_dispatch_id()),
        "user_sgpr_flat_scratch_init" => b(p.enable_sgpr_flat_scratch_init()),
        "user_sgpr_private_segment_size" => b(p.enable_sgpr_private_segment_size()),
        "user_sgpr_count" => u64::from(r2.user_sgpr_count()),
        "wavefront_size32" => b(p.enable_wavefront_size32()),
        "uses_dynamic_stack" => b(p.uses_dynamic_stack()),
        "shared_vgpr_count" => u64::from(r3.shared_vgpr_count()),
        "inst_pref_size" => u64::from(r3.inst_pref_size(family)),
        _ => return None,
    })
}

/// `.amdhsa_kernel` blocks of `llvm-objdump -D -j .rodata`, by kernel name.
fn objdump_descriptors(text: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, BTreeMap<String, u64>)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix(".amdhsa_kernel ") {
            current = Some((name.to_owned(), BTreeMap::new()));
        } else if line == ".end_amdhsa_kernel" {
            if let Some((name, fields)) = current.take() {
                out.insert(name, fields);
            }
        } else if let (Some((_, fields)), Some(rest)) =
            (current.as_mut(), line.strip_prefix(".amdhsa_"))
            && let Some((key, value)) = rest.split_once(' ')
            && let Ok(v) = value.trim().parse::<u64>()
        {
            fields.insert(key.to_owned(), v);
        }
    }
    out
}

#[test]
fn kernel_descriptors_agree_with_llvm_objdump() {
    // Directives that must be present and compared for every kernel.
    const CORE: &[&str] = &[
        "group_segment_fixed_size",
        "private_segment_fixed_size",
        "kernarg_size",
        "next_free_vgpr",
        "float_denorm_mode_32",
        "system_sgpr_workgroup_id_x",
        "system_vgpr_workitem_id",
        "user_sgpr_dispatch_ptr",
        "user_sgpr_kernarg_segment_ptr",
        "uses_dynamic_stack",
    ];
    let mut compared = 0;
    for built in built_code_objects() {
        let co = parse(&built.path);
        let family = co.target.family().unwrap();
        let out = run_llvm_tool(
            "llvm-objdump",
            &["-D", "-j", ".rodata", path_str(&built.path)],
        );
        let mut decoded = objdump_descriptors(&out);
        // llvm-objdump decodes a descriptor only when its symbol's region
        // (up to the next symbol) is 64 bytes: unnamed read-only data after
        // the last one (the device library's dispatch limits, since the
        // command-buffer kernels) makes it print that one as bytes. Such a
        // descriptor is decoded again on its own 64 bytes.
        let missing: Vec<_> = co
            .kernels
            .iter()
            .filter(|k| !decoded.contains_key(k.name()))
            .collect();
        for k in missing {
            let start = format!("--start-address={:#x}", k.descriptor_address);
            let stop = format!("--stop-address={:#x}", k.descriptor_address + 64);
            let one = run_llvm_tool(
                "llvm-objdump",
                &["-D", "-j", ".rodata", &start, &stop, path_str(&built.path)],
            );
            decoded.extend(objdump_descriptors(&one));
        }
        assert_eq!(decoded.len(), co.kernels.len(), "{}", built.path.display());
        for k in &co.kernels {
            let fields = decoded
                .get(k.name())
                .unwrap_or_else(|| panic!("objdump lacks {}", k.name()));
            for core in CORE {
                assert!(
                    fields.contains_key(*core),
                    "{} {}: objdump printed no .amdhsa_{core}",
                    built.gfx,
                    k.name()
                );
            }
            for (key, &theirs) in fields {
                if let Some(ours) = directive_value(k, family, key) {
                    assert_eq!(ours, theirs, "{} {}: .amdhsa_{key}", built.gfx, k.name());
                    compared += 1;
                }
            }
        }
    }
    assert!(
        compared >= 15 * CORE.len(),
        "only {compared} directives compared"
    );
}

#[test]
fn kernel_descriptors_agree_with_metadata() {
    for built in built_code_objects() {
        let co = parse(&built.path);
        let family = co.target.family().unwrap();
        for k in &co.kernels {
            let (kd, md) = (&k.descriptor, &k.metadata);
            let ctx = format!("{} {}", built.gfx, md.name);
            assert_eq!(
                u64::from(kd.group_segment_fixed_size),
                md.group_segment_fixed_size,
                "{ctx}"
            );
            assert_eq!(
                u64::from(kd.private_segment_fixed_size),
                md.private_segment_fixed_size,
                "{ctx}"
            );
            assert_eq!(u64::from(kd.kernarg_size), md.kernarg_segment_size, "{ctx}");
            assert_eq!(
                kd.properties().uses_dynamic_stack(),
                md.uses_dynamic_stack,
                "{ctx}"
            );
            let wave32 = kd.properties().enable_wavefront_size32();
            assert_eq!(if wave32 { 32 } else { 64 }, md.wavefront_size, "{ctx}");
            // The descriptor's VGPR blocks cover the metadata's registers
            // (VGPRs, and on GFX90A+ the AGPRs placed after accum_offset).
            let granule = vgpr_encoding_granule(family, wave32);
            let covered = (u64::from(kd.rsrc1().granulated_workitem_vgpr_count()) + 1) * granule;
            let needed = if family == GfxFamily::Gfx9Mai {
                let accum = u64::from(kd.rsrc3().accum_offset_vgprs());
                if md.agpr_count > 0 {
                    // With AGPRs in use, `.vgpr_count` is the unified
                    // total: the architected VGPRs rounded up to 4, then
                    // the AGPRs (LLVM's AMDGPU::getTotalNumVGPRs for
                    // GFX90A+), so the AGPRs start at accum_offset.
                    assert_eq!(
                        accum + md.agpr_count,
                        md.vgpr_count,
                        "{ctx}: AGPRs at {accum} and {} of them make the {} registers",
                        md.agpr_count,
                        md.vgpr_count
                    );
                    assert!(accum <= 256, "{ctx}: accum_offset {accum}");
                } else {
                    assert!(
                        accum >= md.vgpr_count,
                        "{ctx}: AGPRs start at {accum} below {} VGPRs",
                        md.vgpr_count
                    );
                }
                md.vgpr_count
            } else {
                md.vgpr_count
            };
            // LLVM raises the allocation up to the fewest VGPRs that
            // already cost the occupancy the kernel has anyway (its LDS or
            // workgroup size bound it: `getMinNumVGPRs` for the waves per
            // EU it reaches), so more than a granule of slack must leave
            // the occupancy as it was.
            assert!(covered >= needed, "{ctx}: {covered} vs {needed}");
            if covered >= needed.max(1) + granule {
                let target = xtask::targets::target(built.gfx).expect("a known target");
                let waves = |vgprs: u64| {
                    xtask::targets::occupancy(
                        target,
                        xtask::targets::Usage {
                            sgprs: md.sgpr_count as u32,
                            vgprs: vgprs as u32,
                            agprs: 0,
                            lds_bytes: md.group_segment_fixed_size as u32,
                            workgroup_size: md.max_flat_workgroup_size as u32,
                        },
                    )
                    .0
                };
                assert_eq!(
                    waves(covered),
                    waves(needed),
                    "{ctx}: {covered} VGPRs allocated for {needed} cost occupancy"
                );
            }
            // The kernel entry is 256-byte aligned (AMDGPUUsage, kernel descriptor).
            assert_eq!(k.entry_address % 256, 0, "{ctx}");
        }
    }
}

/// A code object linked from several objects carries one metadata note per
/// object (rocBLAS's kernel libraries are built this way): the reader takes
/// the kernels of every note, as `llvm-readobj --notes` lists them.
#[test]
fn every_metadata_note_of_a_linked_code_object_is_read() {
    let dir = std::env::temp_dir().join(format!("aqueduct-notes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Three kernels of one, two and three arguments, in three objects.
    let mut objects = Vec::new();
    for (i, name) in ["k_one", "k_two", "k_three"].into_iter().enumerate() {
        let params = (0..=i)
            .map(|j| format!("i32 %a{j}"))
            .collect::<Vec<_>>()
            .join(", ");
        let ir = format!(
            "target triple = \"amdgcn-amd-amdhsa\"\n\
             define amdgpu_kernel void @{name}({params}) {{\n  ret void\n}}\n\
             !llvm.module.flags = !{{!0}}\n\
             !0 = !{{i32 1, !\"amdhsa_code_object_version\", i32 500}}\n"
        );
        let ll = dir.join(format!("{name}.ll"));
        let obj = dir.join(format!("{name}.o"));
        std::fs::write(&ll, ir).unwrap();
        run_llvm_tool(
            "llc",
            &[
                "-mtriple=amdgcn-amd-amdhsa",
                "-mcpu=gfx90a",
                "-filetype=obj",
                "-o",
                path_str(&obj),
                path_str(&ll),
            ],
        );
        objects.push(obj);
    }
    let linked = dir.join("linked.co");
    let mut args = vec!["-flavor", "gnu", "-shared", "-o", path_str(&linked)];
    args.extend(objects.iter().map(|o| path_str(o)));
    run_llvm_tool("rust-lld", &args);

    let notes = run_llvm_tool("llvm-readobj", &["--notes", path_str(&linked)]);
    assert_eq!(
        notes.matches("NT_AMDGPU_METADATA").count(),
        3,
        "the linker keeps one note per object:\n{notes}"
    );
    let co = parse(&linked);
    let kernels: Vec<(&str, usize)> = co
        .kernels
        .iter()
        .map(|k| {
            let by_value = k.metadata.args.iter();
            let by_value = by_value.filter(|a| a.value_kind == "by_value").count();
            (k.metadata.name.as_str(), by_value)
        })
        .collect();
    assert_eq!(kernels, [("k_one", 1), ("k_two", 2), ("k_three", 3)]);
    assert_eq!(co.metadata.kernels.len(), 3);
    // Notes that disagree on the target are refused, naming the note.
    let mut bytes = std::fs::read(&linked).unwrap();
    let target = co
        .metadata
        .target
        .clone()
        .expect("v5 metadata names its target");
    let needle = target.as_bytes();
    let second = bytes
        .windows(needle.len())
        .enumerate()
        .filter(|&(_, w)| w == needle)
        .nth(1)
        .map(|(at, _)| at)
        .expect("each note names the target");
    bytes[second + needle.len() - 1] = b'c';
    let e = CodeObject::parse(&bytes).expect_err("two targets");
    assert_eq!(
        e.to_string(),
        "bad metadata: note 1: amdhsa.target: differs from the first metadata note's"
    );
    std::fs::remove_dir_all(&dir).ok();
}
