//! aqueduct-abi's HSA/ROCr mirrors against the real ROCr headers.
//!
//! The test writes a C program that prints `sizeof`/`_Alignof` of every
//! mirrored type, `offsetof`/`sizeof` of every mirrored field and the value
//! of every mirrored enumerator, compiles it with the system C compiler
//! against ROCr's headers (`xtask::rocr::headers`: the directory in
//! `AQUEDUCT_ROCR_INCLUDE` that holds `hsa/hsa.h`, `/opt/rocm/include`,
//! Debian's `libhsa-runtime-dev` if installed, else that package fetched
//! from bookworm into the cache), runs it and compares each line with the
//! Rust value.
//! Only the C *names* come from the table below; every number on the C side
//! comes from the compiler reading the headers.
//!
//! Headers differ across ROCr versions (see `aqueduct_abi::amd_queue`): the
//! program reports which generation it sees. Fields newer than the header
//! are checked to sit in bytes the header leaves to no shared field, and the
//! test prints what it could not compare.

use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use aqueduct_abi::amd_queue::{
    AMD_QUEUE_ALIGN_BYTES, AmdQueue, AmdQueueCaps, AmdQueueProperties, AmdQueueV2,
    ScratchLastUsedIndexXcc,
};
use aqueduct_abi::amd_signal::{AMD_SIGNAL_ALIGN_BYTES, AmdSignal, AmdSignalKind};
use aqueduct_abi::aql::{
    AgentDispatchPacket, AmdBarrierValuePacket, AmdPacketType, AmdVendorPacketHeader,
    BarrierAndPacket, BarrierOrPacket, FenceScope, KernelDispatchPacket, PacketType, header_bits,
};
use aqueduct_abi::hsa::{HsaQueue, QueueFeatures, QueueType, SignalCondition, SignalHandle};
use aqueduct_abi::hsa_api;
use aqueduct_abi::kernel_descriptor::{KernelCodeProperties, PgmRsrc1, PgmRsrc2};

/// Which headers a check needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Since {
    /// Every supported ROCr header (ROCm 5.x and later).
    Always,
    /// Headers with `amd_queue_v2_t` (`MAX_NUM_XCC` defined).
    QueueV2,
    /// Headers with the AQL indirect-buffer fields (`AMD_QUEUE_HAS_V2`).
    QueueIb,
    /// Rust-only bytes (explicit tail padding): counted, not compared.
    Padding,
}

impl Since {
    fn condition(self) -> Option<&'static str> {
        match self {
            Self::Always | Self::Padding => None,
            Self::QueueV2 => Some("MAX_NUM_XCC"),
            Self::QueueIb => Some("AMD_QUEUE_HAS_V2"),
        }
    }
}

struct Type {
    rust: &'static str,
    /// The C type in the newest headers.
    c: &'static str,
    /// The C type in headers without `amd_queue_v2_t`, where it differs.
    legacy_c: Option<&'static str>,
    size: usize,
    align: usize,
    /// Headers that have the type.
    since: Since,
    /// Headers whose type has all of the Rust fields (so the sizes agree).
    size_since: Since,
}

struct Field {
    rust_type: &'static str,
    rust: &'static str,
    c_member: &'static str,
    offset: usize,
    size: usize,
    since: Since,
}

struct Const {
    c: &'static str,
    value: i128,
    since: Since,
}

/// A bitfield accessor checked against the header's `NAME` mask (from
/// `AMD_HSA_BITS_CREATE_ENUM_ENTRIES`): with every bit of the mask set it
/// must read all ones, with every other bit set it must read zero.
struct Bitfield {
    c: &'static str,
    read: fn(u32) -> u32,
}

fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! fields {
    ($out:ident, $rust:ty, $since_default:expr; $($field:tt $(as $cname:literal)? $(@ $since:expr)?),+ $(,)?) => {
        $(
            $out.push(Field {
                rust_type: stringify!($rust),
                rust: stringify!($field),
                c_member: fields!(@name $field $($cname)?),
                offset: offset_of!($rust, $field),
                size: field_size(|s: &$rust| &s.$field),
                since: fields!(@since $since_default $(, $since)?),
            });
        )+
    };
    (@name $field:tt) => { stringify!($field) };
    (@name $field:tt $cname:literal) => { $cname };
    (@since $default:expr) => { $default };
    (@since $default:expr, $since:expr) => { $since };
}

fn types() -> Vec<Type> {
    macro_rules! ty {
        ($rust:ty, $c:literal) => {
            ty!($rust, $c, None, Since::Always, Since::Always)
        };
        ($rust:ty, $c:literal, $legacy:expr, $since:expr, $size_since:expr) => {
            Type {
                rust: stringify!($rust),
                c: $c,
                legacy_c: $legacy,
                size: size_of::<$rust>(),
                align: align_of::<$rust>(),
                since: $since,
                size_since: $size_since,
            }
        };
    }
    vec![
        ty!(SignalHandle, "hsa_signal_t"),
        ty!(HsaQueue, "hsa_queue_t"),
        ty!(KernelDispatchPacket, "hsa_kernel_dispatch_packet_t"),
        ty!(AgentDispatchPacket, "hsa_agent_dispatch_packet_t"),
        ty!(BarrierAndPacket, "hsa_barrier_and_packet_t"),
        ty!(BarrierOrPacket, "hsa_barrier_or_packet_t"),
        ty!(AmdVendorPacketHeader, "hsa_amd_vendor_packet_header_t"),
        ty!(AmdBarrierValuePacket, "hsa_amd_barrier_value_packet_t"),
        // AmdQueue is the first 256 bytes of amd_queue_v2_t: as large as the
        // legacy amd_queue_t in every header.
        ty!(AmdQueue, "amd_queue_t"),
        ty!(
            ScratchLastUsedIndexXcc,
            "scratch_last_used_index_xcc_t",
            None,
            Since::QueueV2,
            Since::QueueV2
        ),
        ty!(
            AmdQueueV2,
            "amd_queue_v2_t",
            None,
            Since::QueueV2,
            Since::QueueIb
        ),
        ty!(AmdSignal, "amd_signal_t"),
    ]
}

fn fields() -> Vec<Field> {
    let mut f = Vec::new();
    fields!(f, SignalHandle, Since::Always; 0 as "handle");
    fields!(f, HsaQueue, Since::Always;
        queue_type as "type", features, base_address, doorbell_signal, size, reserved1, id);
    fields!(f, KernelDispatchPacket, Since::Always;
        header, setup, workgroup_size_x, workgroup_size_y, workgroup_size_z, reserved0,
        grid_size_x, grid_size_y, grid_size_z, private_segment_size, group_segment_size,
        kernel_object, kernarg_address, reserved2, completion_signal);
    fields!(f, AgentDispatchPacket, Since::Always;
        header, function as "type", reserved0, return_address, arg, reserved2, completion_signal);
    fields!(f, BarrierAndPacket, Since::Always;
        header, reserved0, reserved1, dep_signal, reserved2, completion_signal);
    fields!(f, BarrierOrPacket, Since::Always;
        header, reserved0, reserved1, dep_signal, reserved2, completion_signal);
    fields!(f, AmdVendorPacketHeader, Since::Always; header, amd_format as "AmdFormat", reserved);
    fields!(f, AmdBarrierValuePacket, Since::Always;
        header, reserved0, signal, value, mask, cond, reserved1, reserved2, reserved3,
        completion_signal);
    fields!(f, AmdQueue, Since::Always;
        hsa_queue,
        caps @ Since::QueueV2,
        reserved1 @ Since::QueueV2,
        write_dispatch_id, group_segment_aperture_base_hi, private_segment_aperture_base_hi,
        max_cu_id, max_wave_id, max_legacy_doorbell_dispatch_id_plus_1, legacy_doorbell_lock,
        reserved2, read_dispatch_id, read_dispatch_id_field_base_byte_offset,
        compute_tmpring_size, scratch_resource_descriptor, scratch_backing_memory_location,
        scratch_backing_memory_byte_size, scratch_wave64_lane_byte_size, queue_properties,
        scratch_max_use_index @ Since::QueueV2,
        queue_inactive_signal,
        alt_scratch_max_use_index @ Since::QueueV2,
        alt_scratch_resource_descriptor @ Since::QueueV2,
        alt_scratch_backing_memory_location @ Since::QueueV2,
        alt_scratch_dispatch_limit_x @ Since::QueueV2,
        alt_scratch_dispatch_limit_y @ Since::QueueV2,
        alt_scratch_dispatch_limit_z @ Since::QueueV2,
        alt_scratch_wave64_lane_byte_size @ Since::QueueV2,
        alt_compute_tmpring_size @ Since::QueueV2,
        reserved5 @ Since::QueueV2);
    fields!(f, ScratchLastUsedIndexXcc, Since::QueueV2; main, alt);
    fields!(f, AmdQueueV2, Since::QueueV2;
        queue as "hsa_queue" @ Since::Padding,
        scratch_last_used_index,
        aql_ib_active_packet @ Since::QueueIb,
        aql_ib_root_packet @ Since::QueueIb,
        tail_padding @ Since::Padding);
    fields!(f, AmdSignal, Since::Always;
        kind, value, event_mailbox_ptr, event_id, reserved1, start_ts, end_ts, queue_ptr,
        reserved3);
    f
}

fn consts() -> Vec<Const> {
    macro_rules! c {
        ($c:literal = $v:expr) => {
            Const {
                c: $c,
                value: ($v) as i128,
                since: Since::Always,
            }
        };
        ($c:literal = $v:expr, $since:expr) => {
            Const {
                c: $c,
                value: ($v) as i128,
                since: $since,
            }
        };
    }
    vec![
        c!("HSA_PACKET_TYPE_VENDOR_SPECIFIC" = PacketType::VENDOR_SPECIFIC.0),
        c!("HSA_PACKET_TYPE_INVALID" = PacketType::INVALID.0),
        c!("HSA_PACKET_TYPE_KERNEL_DISPATCH" = PacketType::KERNEL_DISPATCH.0),
        c!("HSA_PACKET_TYPE_BARRIER_AND" = PacketType::BARRIER_AND.0),
        c!("HSA_PACKET_TYPE_AGENT_DISPATCH" = PacketType::AGENT_DISPATCH.0),
        c!("HSA_PACKET_TYPE_BARRIER_OR" = PacketType::BARRIER_OR.0),
        c!("HSA_FENCE_SCOPE_NONE" = FenceScope::NONE.0),
        c!("HSA_FENCE_SCOPE_AGENT" = FenceScope::AGENT.0),
        c!("HSA_FENCE_SCOPE_SYSTEM" = FenceScope::SYSTEM.0),
        c!("HSA_PACKET_HEADER_TYPE" = header_bits::TYPE_SHIFT),
        c!("HSA_PACKET_HEADER_WIDTH_TYPE" = header_bits::TYPE_WIDTH),
        c!("HSA_PACKET_HEADER_BARRIER" = header_bits::BARRIER_SHIFT),
        c!("HSA_PACKET_HEADER_WIDTH_BARRIER" = header_bits::BARRIER_WIDTH),
        c!("HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE" = header_bits::ACQUIRE_FENCE_SCOPE_SHIFT),
        c!("HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE" = header_bits::ACQUIRE_FENCE_SCOPE_SHIFT),
        c!("HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE" =
            header_bits::ACQUIRE_FENCE_SCOPE_WIDTH),
        c!("HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE" = header_bits::RELEASE_FENCE_SCOPE_SHIFT),
        c!("HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE" = header_bits::RELEASE_FENCE_SCOPE_SHIFT),
        c!("HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE" =
            header_bits::RELEASE_FENCE_SCOPE_WIDTH),
        c!("HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS" = header_bits::SETUP_DIMENSIONS_SHIFT),
        c!("HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS" =
            header_bits::SETUP_DIMENSIONS_WIDTH),
        c!("HSA_QUEUE_TYPE_MULTI" = QueueType::MULTI.0),
        c!("HSA_QUEUE_TYPE_SINGLE" = QueueType::SINGLE.0),
        c!("HSA_QUEUE_TYPE_COOPERATIVE" = QueueType::COOPERATIVE.0),
        c!("HSA_QUEUE_FEATURE_KERNEL_DISPATCH" = QueueFeatures::KERNEL_DISPATCH.bits()),
        c!("HSA_QUEUE_FEATURE_AGENT_DISPATCH" = QueueFeatures::AGENT_DISPATCH.bits()),
        c!("HSA_SIGNAL_CONDITION_EQ" = SignalCondition::EQ.0),
        c!("HSA_SIGNAL_CONDITION_NE" = SignalCondition::NE.0),
        c!("HSA_SIGNAL_CONDITION_LT" = SignalCondition::LT.0),
        c!("HSA_SIGNAL_CONDITION_GTE" = SignalCondition::GTE.0),
        c!("HSA_AMD_PACKET_TYPE_BARRIER_VALUE" = AmdPacketType::BARRIER_VALUE.0),
        c!("AMD_SIGNAL_KIND_INVALID" = AmdSignalKind::INVALID.0),
        c!("AMD_SIGNAL_KIND_USER" = AmdSignalKind::USER.0),
        c!("AMD_SIGNAL_KIND_DOORBELL" = AmdSignalKind::DOORBELL.0),
        c!("AMD_SIGNAL_KIND_LEGACY_DOORBELL" = AmdSignalKind::LEGACY_DOORBELL.0),
        c!("AMD_SIGNAL_ALIGN_BYTES" = AMD_SIGNAL_ALIGN_BYTES),
        c!("AMD_QUEUE_ALIGN_BYTES" = AMD_QUEUE_ALIGN_BYTES),
        c!("AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER" =
            AmdQueueProperties::ENABLE_TRAP_HANDLER.bits()),
        c!("AMD_QUEUE_PROPERTIES_IS_PTR64" = AmdQueueProperties::IS_PTR64.bits()),
        c!("AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS" =
            AmdQueueProperties::ENABLE_TRAP_HANDLER_DEBUG_SGPRS.bits()),
        c!("AMD_QUEUE_PROPERTIES_ENABLE_PROFILING" = AmdQueueProperties::ENABLE_PROFILING.bits()),
        c!("AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE" = AmdQueueProperties::USE_SCRATCH_ONCE.bits()),
        c!(
            "AMD_QUEUE_CAPS_CP_ASYNC_RECLAIM" = AmdQueueCaps::CP_ASYNC_RECLAIM.bits(),
            Since::QueueV2
        ),
        c!(
            "AMD_QUEUE_CAPS_SW_ASYNC_RECLAIM" = AmdQueueCaps::SW_ASYNC_RECLAIM.bits(),
            Since::QueueV2
        ),
        c!(
            "MAX_NUM_XCC" = aqueduct_abi::amd_queue::MAX_NUM_XCC,
            Since::QueueV2
        ),
    ]
    .into_iter()
    // The C interface of libhsa-runtime64, every status and enumerator of
    // its one definition.
    .chain(hsa_api::STATUSES.iter().map(|&(value, c, _)| Const {
        c,
        value: i128::from(value),
        since: Since::Always,
    }))
    .chain(hsa_api::ENUMERATORS.iter().map(|&(c, value)| Const {
        c,
        value: i128::from(value),
        since: Since::Always,
    }))
    .collect()
}

fn bitfields() -> Vec<Bitfield> {
    macro_rules! b {
        ($c:literal, $ty:ident :: $acc:ident) => {
            Bitfield {
                c: $c,
                read: |w| u32::from($ty(w as _).$acc()),
            }
        };
    }
    vec![
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_GRANULATED_WORKITEM_VGPR_COUNT",
            PgmRsrc1::granulated_workitem_vgpr_count
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_GRANULATED_WAVEFRONT_SGPR_COUNT",
            PgmRsrc1::granulated_wavefront_sgpr_count
        ),
        b!("AMD_COMPUTE_PGM_RSRC_ONE_PRIORITY", PgmRsrc1::priority),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_ROUND_MODE_32",
            PgmRsrc1::float_round_mode_32
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_ROUND_MODE_16_64",
            PgmRsrc1::float_round_mode_16_64
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_DENORM_MODE_32",
            PgmRsrc1::float_denorm_mode_32
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_DENORM_MODE_16_64",
            PgmRsrc1::float_denorm_mode_16_64
        ),
        b!("AMD_COMPUTE_PGM_RSRC_ONE_PRIV", PgmRsrc1::priv_),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_ENABLE_DX10_CLAMP",
            PgmRsrc1::enable_dx10_clamp
        ),
        b!("AMD_COMPUTE_PGM_RSRC_ONE_DEBUG_MODE", PgmRsrc1::debug_mode),
        b!(
            "AMD_COMPUTE_PGM_RSRC_ONE_ENABLE_IEEE_MODE",
            PgmRsrc1::enable_ieee_mode
        ),
        b!("AMD_COMPUTE_PGM_RSRC_ONE_BULKY", PgmRsrc1::bulky),
        b!("AMD_COMPUTE_PGM_RSRC_ONE_CDBG_USER", PgmRsrc1::cdbg_user),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_PRIVATE_SEGMENT_WAVE_BYTE_OFFSET",
            PgmRsrc2::enable_private_segment
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_USER_SGPR_COUNT",
            PgmRsrc2::user_sgpr_count
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_TRAP_HANDLER",
            PgmRsrc2::enable_trap_handler
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_X",
            PgmRsrc2::enable_sgpr_workgroup_id_x
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_Y",
            PgmRsrc2::enable_sgpr_workgroup_id_y
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_Z",
            PgmRsrc2::enable_sgpr_workgroup_id_z
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_INFO",
            PgmRsrc2::enable_sgpr_workgroup_info
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_VGPR_WORKITEM_ID",
            PgmRsrc2::enable_vgpr_workitem_id
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_ADDRESS_WATCH",
            PgmRsrc2::enable_exception_address_watch
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_MEMORY_VIOLATION",
            PgmRsrc2::enable_exception_memory
        ),
        b!(
            "AMD_COMPUTE_PGM_RSRC_TWO_GRANULATED_LDS_SIZE",
            PgmRsrc2::granulated_lds_size
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER",
            KernelCodeProperties::enable_sgpr_private_segment_buffer
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_DISPATCH_PTR",
            KernelCodeProperties::enable_sgpr_dispatch_ptr
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_QUEUE_PTR",
            KernelCodeProperties::enable_sgpr_queue_ptr
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_KERNARG_SEGMENT_PTR",
            KernelCodeProperties::enable_sgpr_kernarg_segment_ptr
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_DISPATCH_ID",
            KernelCodeProperties::enable_sgpr_dispatch_id
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_FLAT_SCRATCH_INIT",
            KernelCodeProperties::enable_sgpr_flat_scratch_init
        ),
        b!(
            "AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_PRIVATE_SEGMENT_SIZE",
            KernelCodeProperties::enable_sgpr_private_segment_size
        ),
    ]
}

/// Wraps `line` in `#ifdef` for checks that need newer headers.
fn guarded(since: Since, line: String) -> String {
    match since.condition() {
        Some(macro_name) => format!("#ifdef {macro_name}\n{line}\n#endif\n"),
        None => format!("{line}\n"),
    }
}

fn c_program(types: &[Type], fields: &[Field], consts: &[Const], bitfields: &[Bitfield]) -> String {
    let c_type_of = |rust: &str| {
        types
            .iter()
            .find(|t| t.rust == rust)
            .unwrap_or_else(|| panic!("no C type for {rust}"))
    };
    let mut p = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <stdint.h>\n\
         #include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\n\
         #include <hsa/amd_hsa_queue.h>\n#include <hsa/amd_hsa_signal.h>\n\
         #include <hsa/amd_hsa_kernel_code.h>\n\
         #define SIZE(T) printf(\"size %s %zu %zu\\n\", #T, sizeof(T), _Alignof(T))\n\
         #define FIELD(R, T, M) printf(\"field %s %s %zu %zu\\n\", R, #M, offsetof(T, M), sizeof(((T *)0)->M))\n\
         #define CONST(N) printf(\"const %s %lld\\n\", #N, (long long)(N))\n\
         int main(void) {\n",
    );
    for m in ["MAX_NUM_XCC", "AMD_QUEUE_HAS_V2"] {
        p += &format!("#ifdef {m}\nputs(\"have {m}\");\n#endif\n");
    }
    for t in types {
        p += &guarded(t.since, format!("SIZE({});", t.c));
    }
    for f in fields.iter().filter(|f| f.since != Since::Padding) {
        let t = c_type_of(f.rust_type);
        let line =
            |c_type: &str| format!("FIELD(\"{}\", {}, {});", f.rust_type, c_type, f.c_member);
        if f.rust_type == "AmdQueue" {
            // The newest layout is amd_queue_v2_t; older headers only have
            // amd_queue_t, whose shared fields sit at the same offsets.
            p += &format!("#ifdef MAX_NUM_XCC\n{}\n", line("amd_queue_v2_t"));
            if f.since == Since::Always {
                p += &format!("#else\n{}\n", line(t.legacy_c.unwrap_or(t.c)));
            }
            p += "#endif\n";
        } else {
            p += &guarded(f.since.max_of(t.since), line(t.c));
        }
    }
    for c in consts {
        p += &guarded(c.since, format!("CONST({});", c.c));
    }
    for b in bitfields {
        p += &format!("CONST({0}); CONST({0}_SHIFT); CONST({0}_WIDTH);\n", b.c);
    }
    p += "return 0;\n}\n";
    p
}

trait MaxOf {
    fn max_of(self, other: Self) -> Self;
}

impl MaxOf for Since {
    /// The stricter of a field's and its type's requirement.
    fn max_of(self, other: Self) -> Self {
        let rank = |s: Since| match s {
            Since::Always => 0,
            Since::QueueV2 => 1,
            Since::QueueIb => 2,
            Since::Padding => 3,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// Compiles and runs the probe; returns its output lines.
fn run_probe(program: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rocr_headers");
    std::fs::create_dir_all(&dir).expect("create probe dir");
    let src = dir.join("probe.c");
    let exe = dir.join("probe");
    std::fs::write(&src, program).expect("write probe.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    cmd.arg("-std=c11")
        .arg("-Wall")
        .arg("-o")
        .arg(&exe)
        .arg(&src);
    let rocr = xtask::rocr::headers().unwrap_or_else(|e| panic!("ROCr's headers: {e}"));
    eprintln!("ROCr headers: {} ({})", rocr.include.display(), rocr.origin);
    cmd.arg("-I").arg(&rocr.include);
    let headers = rocr.include.join("hsa/hsa.h");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "compiling {} against {} failed:\n{}",
        src.display(),
        headers.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run probe");
    assert!(run.status.success(), "probe failed");
    String::from_utf8(run.stdout).expect("probe output is ASCII")
}

#[test]
fn layouts_and_enumerators_match_rocrs_headers() {
    let types = types();
    let fields = fields();
    let consts = consts();
    let bitfields = bitfields();

    // The table must name every Rust field: per type, the fields tile the
    // whole struct without gaps or overlaps.
    for t in &types {
        let mut mine: Vec<&Field> = fields.iter().filter(|f| f.rust_type == t.rust).collect();
        mine.sort_by_key(|f| f.offset);
        let mut end = 0;
        for f in &mine {
            assert_eq!(
                f.offset, end,
                "{}: the table skips bytes {end}..{} before {}",
                t.rust, f.offset, f.rust
            );
            end = f.offset + f.size;
        }
        assert_eq!(
            end, t.size,
            "{}: the table stops at byte {end} of {}",
            t.rust, t.size
        );
    }

    let output = run_probe(&c_program(&types, &fields, &consts, &bitfields));
    let have = |m: &str| output.lines().any(|l| l == format!("have {m}"));
    let mut c_sizes = BTreeMap::new();
    let mut c_fields = BTreeMap::new();
    let mut c_consts = BTreeMap::new();
    for line in output.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["size", name, size, align] => {
                c_sizes.insert(
                    name.to_string(),
                    (
                        size.parse::<usize>().unwrap(),
                        align.parse::<usize>().unwrap(),
                    ),
                );
            }
            ["field", rust_type, member, offset, size] => {
                c_fields.insert(
                    (rust_type.to_string(), member.to_string()),
                    (
                        offset.parse::<usize>().unwrap(),
                        size.parse::<usize>().unwrap(),
                    ),
                );
            }
            ["const", name, value] => {
                c_consts.insert(name.to_string(), value.parse::<i128>().unwrap());
            }
            ["have", _] => {}
            _ => panic!("unexpected probe line {line:?}"),
        }
    }

    let mut failures = Vec::new();
    let mut compared = 0;
    let mut not_in_header = Vec::new();
    let available = |since: Since| match since {
        Since::Always => true,
        Since::QueueV2 => have("MAX_NUM_XCC"),
        Since::QueueIb => have("AMD_QUEUE_HAS_V2"),
        Since::Padding => false,
    };

    for t in &types {
        if !available(t.size_since) {
            not_in_header.push(format!("size of {} ({})", t.c, t.rust));
            continue;
        }
        match c_sizes.get(t.c) {
            Some(&(size, align)) => {
                compared += 1;
                if (size, align) != (t.size, t.align) {
                    failures.push(format!(
                        "{} ({}): C size/align {size}/{align}, Rust {}/{}",
                        t.c, t.rust, t.size, t.align
                    ));
                }
            }
            None => failures.push(format!("{}: the probe printed no size", t.c)),
        }
    }

    for f in fields.iter().filter(|f| f.since != Since::Padding) {
        let t = types.iter().find(|t| t.rust == f.rust_type).unwrap();
        if !available(f.since.max_of(t.since)) {
            not_in_header.push(format!("{}.{}", t.c, f.c_member));
            if f.rust_type == "AmdQueue" {
                // Newer than the header: its bytes must not belong to any
                // field this header shares with the Rust layout.
                for other in fields
                    .iter()
                    .filter(|o| o.rust_type == "AmdQueue" && o.since == Since::Always)
                {
                    let (off, size) =
                        c_fields[&(other.rust_type.to_string(), other.c_member.to_string())];
                    if f.offset < off + size && off < f.offset + f.size {
                        failures.push(format!(
                            "amd_queue_t.{} (bytes {}..{}) overlaps the header's {} at {off}..{}",
                            f.c_member,
                            f.offset,
                            f.offset + f.size,
                            other.c_member,
                            off + size
                        ));
                    }
                }
            }
            continue;
        }
        let key = (f.rust_type.to_string(), f.c_member.to_string());
        match c_fields.get(&key) {
            Some(&(offset, size)) => {
                compared += 1;
                if (offset, size) != (f.offset, f.size) {
                    failures.push(format!(
                        "{}.{} (Rust {}::{}): C offset/size {offset}/{size}, Rust {}/{}",
                        t.c, f.c_member, f.rust_type, f.rust, f.offset, f.size
                    ));
                }
            }
            None => failures.push(format!("{}.{}: the probe printed nothing", t.c, f.c_member)),
        }
    }

    for c in &consts {
        if !available(c.since) {
            not_in_header.push(c.c.to_string());
            continue;
        }
        compared += 1;
        match c_consts.get(c.c) {
            Some(&v) if v == c.value => {}
            Some(&v) => failures.push(format!("{}: C {v}, Rust {}", c.c, c.value)),
            None => failures.push(format!("{}: the probe printed nothing", c.c)),
        }
    }

    for b in &bitfields {
        compared += 1;
        let mask = c_consts[b.c] as u32;
        let shift = c_consts[&format!("{}_SHIFT", b.c)] as u32;
        let width = c_consts[&format!("{}_WIDTH", b.c)] as u32;
        let ones = if width == 32 {
            u32::MAX
        } else {
            (1 << width) - 1
        };
        if mask != ones << shift {
            failures.push(format!(
                "{}: header mask {mask:#x} disagrees with its shift/width",
                b.c
            ));
        }
        if (b.read)(mask) != ones || (b.read)(!mask) != 0 {
            failures.push(format!(
                "{}: header bits {shift}..{} but the accessor reads {:#x} from the mask and {:#x} from its complement",
                b.c,
                shift + width,
                (b.read)(mask),
                (b.read)(!mask)
            ));
        }
    }

    eprintln!("compared {compared} sizes, offsets and values with the ROCr headers");
    if !not_in_header.is_empty() {
        eprintln!(
            "not in these headers (newer ROCr), not compared by name: {}",
            not_in_header.join(", ")
        );
    }
    assert!(
        failures.is_empty(),
        "mismatches with the ROCr headers:\n  {}",
        failures.join("\n  ")
    );
}
