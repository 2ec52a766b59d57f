//! The host GEMM API end to end: `aqueduct::GemmLibrary` opens
//! the catalog `cargo xtask build` wrote for each agent's processor, selects
//! through it for the agent's hardware (processor, CU count, chip ID), loads
//! the kernel and runs it through the host shim — on ROCr with a GPU, else
//! on the simulator's runtime (the agents of `aqueduct_tests::SIM_AGENTS`) — against an f64 CPU
//! reference. Inputs are small integers, so every result is exact in the
//! output type; D is poisoned before each run.

#![feature(f16)]

use std::time::Duration;

use aqueduct::catalog::DataType;
use aqueduct::{Error, Gemm, GemmLibrary, PoolKind};
use aqueduct_abi::gfx::MatrixCore;
use aqueduct_tests::{Rng, Word, announced_system, hsa_gpus};
use xtask::gemm_catalog::{Models, choice, kernels_for, models};

const TIMEOUT: Duration = Duration::from_secs(120);

fn library(gpu: &aqueduct::agent::Agent) -> GemmLibrary {
    GemmLibrary::open(gpu).unwrap_or_else(|e| panic!("{}: {e}", gpu.info().name))
}

/// The throughput model's view of `gfx`'s built GEMM kernels: what the
/// catalog's size tables were chosen by.
fn modelled(gfx: &str) -> Models {
    let workspace = xtask::workspace_root();
    let target = xtask::targets::target(gfx).expect("a target");
    let objdump = xtask::device_build::llvm_tool(&workspace, "llvm-objdump").expect("objdump");
    let co = xtask::gemm_report::our_code_object(&workspace, gfx);
    models(target, &co, &objdump).unwrap_or_else(|e| panic!("{gfx}: {e}"))
}

/// The kernel the model picks for (m, n, k) among `stem`'s tiles on `cus`.
fn model_choice(gfx: &str, models: &Models, cus: u32, stem: &str, mnk: (u32, u32, u32)) -> String {
    let target = xtask::targets::target(gfx).expect("a target");
    let group: Vec<_> = kernels_for(target)
        .into_iter()
        .filter(|k| {
            k.name.strip_prefix(stem).is_some_and(|t| {
                t.starts_with('_') && t[1..].starts_with(|c: char| c.is_ascii_digit())
            })
        })
        .collect();
    assert!(group.len() > 1, "{gfx}: {stem}");
    let (m, n, k) = mnk;
    choice(target, models, cus, &group, (m.into(), n.into(), k.into()))
        .expect("a choice")
        .name
        .to_string()
}

#[test]
fn selection_follows_the_hardware_rows_and_the_size_table() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let lib = library(&gpu);
        let cus = lib.hardware().cu_count;
        let gfx = lib.hardware().processor.clone();
        let family = match matrix_core(&gfx) {
            MatrixCore::Mfma => "mfma",
            MatrixCore::Wmma => "wmma",
            MatrixCore::None => {
                fma_only_selection(&lib);
                continue;
            }
        };
        let models = modelled(&gfx);
        let mut tiles_of_f16 = Vec::new();
        for (m, n, k) in [
            (256, 256, 256),
            (1024, 1024, 256),
            (2048, 2048, 256),
            (4096, 4096, 256),
            (8192, 8192, 4096),
        ] {
            let mut types = vec![
                (
                    DataType::Half,
                    DataType::Float,
                    format!("gemm_f16_f32_{family}"),
                ),
                (
                    DataType::BFloat16,
                    DataType::BFloat16,
                    format!("gemm_bf16_{family}"),
                ),
            ];
            // f32: MFMA kernels on CDNA; RDNA's WMMA takes no f32.
            if family == "mfma" {
                types.push((
                    DataType::Float,
                    DataType::Float,
                    "gemm_f32_mfma".to_string(),
                ));
            }
            for (input, output, stem) in types {
                let gemm = Gemm::new(m, n, k, input, output).transposed(false, true);
                let plan = lib
                    .select(&gemm)
                    .unwrap_or_else(|e| panic!("{}: {gemm}: {e}", gpu.info().name));
                // The catalog holds the model's choice at its grid points
                // (these are grid points), and the host finds it there.
                let want = model_choice(&gfx, &models, cus, &stem, (m, n, k));
                assert_eq!(plan.name, want, "{gemm} on {cus} CUs");
                let tile = want.rsplit_once('_').map(|t| t.1).unwrap_or("");
                assert_eq!(
                    tile,
                    format!("{}x{}", plan.macro_tile[0], plan.macro_tile[1])
                );
                if input == DataType::Half {
                    tiles_of_f16.push(plan.macro_tile);
                }
                let threads = if family == "mfma" { 256 } else { 128 };
                assert_eq!(plan.workgroup, threads, "{}", plan.name);
                let trace = lib.explain(&gemm);
                assert!(trace.contains(&plan.name), "{trace}");
                assert!(trace.contains("RESULT"), "{trace}");
            }
        }
        // xf32 where the catalog has it (gfx942), else the f32 kernels
        // (RDNA: the FMA one).
        let f32_stem = if family == "mfma" {
            "gemm_f32_mfma_"
        } else {
            "gemm_f32_fma"
        };
        let xf32 = Gemm::new(4096, 4096, 256, DataType::Float, DataType::Float)
            .with_f32_math(DataType::XFloat32);
        let plan = lib.select(&xf32).expect("select xf32");
        let want = if gfx == "gfx942" {
            "gemm_xf32_mfma_"
        } else {
            f32_stem
        };
        assert!(plan.name.starts_with(want), "{}: {}", xf32, plan.name);
        let plain = lib
            .select(&Gemm::new(
                4096,
                4096,
                256,
                DataType::Float,
                DataType::Float,
            ))
            .expect("select f32");
        assert!(plain.name.starts_with(f32_stem), "{}", plain.name);
        // On CDNA the model does discriminate: a 256² problem (one 128 ×
        // 128 tile: one busy CU) and an 8192² one do not get the same
        // tile. (On RDNA it picks 64 × 64 at every one of these sizes:
        // `cargo xtask gemm-report --model`.)
        tiles_of_f16.sort();
        tiles_of_f16.dedup();
        if family == "mfma" {
            assert!(
                tiles_of_f16.len() > 1,
                "{gfx}: one f16 tile for every size: {tiles_of_f16:?}"
            );
        }
    }
}

/// The matrix cores of `gfx` (the shared product facts).
fn matrix_core(gfx: &str) -> MatrixCore {
    aqueduct_abi::gfx::gfx(gfx)
        .expect("a known processor")
        .matrix_core
}

/// A processor without matrix cores (none is simulated today) has only the
/// FMA kernels in its catalog, one 64 × 64 tile for every size.
fn fma_only_selection(lib: &GemmLibrary) {
    let gfx = &lib.hardware().processor;
    for (m, n, k) in [(256, 256, 256), (4096, 4096, 256)] {
        for (input, output, name) in [
            (DataType::Half, DataType::Float, "gemm_f16_f32_fma"),
            (DataType::Half, DataType::Half, "gemm_f16_fma"),
            (DataType::BFloat16, DataType::BFloat16, "gemm_bf16_fma"),
            (DataType::Float, DataType::Float, "gemm_f32_fma"),
        ] {
            let gemm = Gemm::new(m, n, k, input, output).transposed(false, true);
            let plan = lib
                .select(&gemm)
                .unwrap_or_else(|e| panic!("{gfx}: {gemm}: {e}"));
            assert_eq!(plan.name, name, "{gfx}: {gemm}");
            assert_eq!(plan.macro_tile, [64, 64], "{gfx}: {gemm}");
            assert_eq!(plan.workgroup, 256, "{gfx}: {gemm}");
            assert!(lib.explain(&gemm).contains(name), "{gfx}: {gemm}");
        }
    }
    let xf32 = Gemm::new(4096, 4096, 256, DataType::Float, DataType::Float)
        .with_f32_math(DataType::XFloat32);
    // xf32 math runs as f32 where there is no xf32 hardware (as on
    // gfx90a).
    let plan = lib.select(&xf32).expect("select xf32");
    assert_eq!(plan.name, "gemm_f32_fma", "{gfx}: {xf32}");
}

#[test]
fn no_kernel_and_bad_problems_are_errors_naming_them() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let lib = library(&gpu);
        let f64_gemm = Gemm::new(64, 64, 64, DataType::Double, DataType::Double);
        match lib.select(&f64_gemm) {
            Err(e @ Error::NoGemmSolution { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("Double") && text.contains("64×64×64"),
                    "{text}"
                );
                assert!(text.contains(&lib.hardware().arch_name), "{text}");
            }
            Err(e) => panic!("{e}"),
            Ok(plan) => panic!("{} for f64", plan.name),
        }
        let bad_ld = Gemm::new(64, 64, 64, DataType::Float, DataType::Float)
            .with_leading_dims(63, 64, 64, 64);
        let e = lib.select(&bad_ld).err().expect("lda below M is refused");
        assert!(e.to_string().contains("lda 63"), "{e}");

        // A D shorter than the problem spans is refused before dispatch.
        let gemm = Gemm::new(8, 8, 8, DataType::Float, DataType::Float);
        let plan = lib.select(&gemm).expect("select");
        let pool = gpu.memory_pool(PoolKind::CoarseGrained).expect("pool");
        let a = pool.alloc_device::<f32>(64).expect("alloc");
        let mut short = pool.alloc_device::<f32>(63).expect("alloc");
        let queue = gpu.create_queue(64).expect("queue");
        let e = plan
            .dispatch(&queue, &gemm, &a, &a, &a, &mut short)
            .expect_err("a short D is refused");
        assert!(e.to_string().contains("D holds 63"), "{e}");
        // Elements of the wrong size.
        let wide_c = pool.alloc_device::<u64>(64).expect("alloc");
        let mut wide_d = pool.alloc_device::<u64>(64).expect("alloc");
        let e = plan
            .dispatch(&queue, &gemm, &a, &a, &wide_c, &mut wide_d)
            .expect_err("8-byte elements for Float are refused");
        assert!(e.to_string().contains("8-byte"), "{e}");
    }
}

/// A stored element type's bits, and back.
fn encode(t: DataType, v: f32) -> u32 {
    match t {
        DataType::Float => v.to_bits(),
        DataType::Half => u32::from((v as f16).to_bits()),
        DataType::BFloat16 => v.to_bits() >> 16,
        DataType::Int8 => v as i8 as u8 as u32,
        DataType::Int32 => v as i32 as u32,
        other => panic!("{other}"),
    }
}

fn decode(t: DataType, bits: u32) -> f64 {
    match t {
        DataType::Float => f64::from(f32::from_bits(bits)),
        DataType::Half => f64::from(f16::from_bits(bits as u16)),
        DataType::BFloat16 => f64::from(f32::from_bits(bits << 16)),
        DataType::Int8 => f64::from(bits as u8 as i8),
        DataType::Int32 => f64::from(bits as i32),
        other => panic!("{other}"),
    }
}

/// An element as the buffers hold it: u16 or u32 bits.
trait Bits: aqueduct_tests::Word + aqueduct::memory::Pod + Into<u32> {
    fn narrow(bits: u32) -> Self;
}

impl Bits for u16 {
    fn narrow(bits: u32) -> Self {
        bits as u16
    }
}

impl Bits for u32 {
    fn narrow(bits: u32) -> Self {
        bits
    }
}

/// A, B and C for `gemm`: small integers (-1, 0, 1) as the stored types'
/// bits; Int8 over all of i8, Int32 C in -1000 ..= 1000.
fn draw_inputs(gemm: &Gemm, rng: &mut Rng) -> [Vec<u32>; 3] {
    let [sa, sb, sc, _] = gemm.spans().map(|s| s as usize);
    let mut draw = |t: DataType, len: usize| -> Vec<u32> {
        let (range, low) = match t {
            DataType::Int8 => (256, -128.0),
            DataType::Int32 => (2001, -1000.0),
            _ => (3, -1.0),
        };
        (0..len)
            .map(|_| encode(t, rng.below(range) as f32 + low))
            .collect()
    };
    [
        draw(gemm.input, sa),
        draw(gemm.input, sb),
        draw(gemm.output, sc),
    ]
}

/// Checks D (`d`, its span) exactly against the f64 CPU reference of
/// `gemm` on A, B and C; `what` names the run.
fn check_exact(gemm: &Gemm, what: &str, [a, b, c]: &[Vec<u32>; 3], d: &[u32]) {
    let (ti, to) = (gemm.input, gemm.output);
    for bi in 0..gemm.batch as usize {
        for j in 0..gemm.n as usize {
            for i in 0..gemm.m as usize {
                let mut sum = 0f64;
                for l in 0..gemm.k as usize {
                    let av = if gemm.trans_a {
                        a[bi * gemm.stride_a as usize + l + i * gemm.lda as usize]
                    } else {
                        a[bi * gemm.stride_a as usize + i + l * gemm.lda as usize]
                    };
                    let bv = if gemm.trans_b {
                        b[bi * gemm.stride_b as usize + j + l * gemm.ldb as usize]
                    } else {
                        b[bi * gemm.stride_b as usize + l + j * gemm.ldb as usize]
                    };
                    sum += decode(ti, av) * decode(ti, bv);
                }
                let cv = decode(
                    to,
                    c[bi * gemm.stride_c as usize + i + j * gemm.ldc as usize],
                );
                let want = f64::from(gemm.alpha) * sum + f64::from(gemm.beta) * cv;
                let got = decode(
                    to,
                    d[bi * gemm.stride_d as usize + i + j * gemm.ldd as usize],
                );
                assert_eq!(got, want, "{what} {gemm}: D[{i}, {j}, {bi}]");
            }
        }
    }
}

/// `v`'s elements as `T`s in a new device buffer of `pool`.
fn upload<T: Bits>(pool: &aqueduct::MemoryPool, v: &[u32]) -> aqueduct::DeviceBuffer<T> {
    let v: Vec<T> = v.iter().map(|&x| T::narrow(x)).collect();
    let mut buf = pool.alloc_device::<T>(v.len().max(1)).expect("alloc");
    buf.write(0, &v).expect("write");
    buf
}

/// Runs `gemm` through the library on `gpu` with A and B in `I` and C and
/// D in `O` (2- or 4-byte elements), checks D exactly against the CPU, and
/// returns the kernel's name.
fn run_exact<I: Bits, O: Bits>(
    gpu: &aqueduct::agent::Agent,
    lib: &GemmLibrary,
    gemm: &Gemm,
    rng: &mut Rng,
) -> String {
    let plan = lib
        .select(gemm)
        .unwrap_or_else(|e| panic!("{}: {gemm}: {e}", gpu.info().name));
    let sd = gemm.spans()[3] as usize;
    let inputs = draw_inputs(gemm, rng);
    let [a, b, c] = &inputs;
    let pool = gpu.memory_pool(PoolKind::CoarseGrained).expect("pool");
    let (a_dev, b_dev) = (upload::<I>(&pool, a), upload::<I>(&pool, b));
    let c_dev = upload::<O>(&pool, c);
    let mut d_dev = upload::<O>(&pool, &vec![O::POISON.into(); sd + 1]);
    let queue = gpu.create_queue(64).expect("queue");
    plan.dispatch(&queue, gemm, &a_dev, &b_dev, &c_dev, &mut d_dev)
        .unwrap_or_else(|e| panic!("{gemm}: {e}"))
        .wait(TIMEOUT)
        .unwrap_or_else(|e| panic!("{gemm}: {e}"));
    let d: Vec<u32> = d_dev
        .to_vec()
        .expect("read")
        .into_iter()
        .map(Into::into)
        .collect();
    assert_eq!(d[sd], O::POISON.into(), "{gemm}: wrote past D");
    check_exact(gemm, &plan.name, &inputs, &d);
    plan.name
}

/// A GEMM recorded into a command buffer (with its buffers in binding-table
/// slots) replays with other buffers: one recording — poison D on the
/// device, barrier, the GEMM, barrier, copy D to host memory — submitted
/// twice with two sets of inputs, each checked against the CPU; the
/// element past D and past the copy keep their poison.
#[test]
fn a_recorded_gemm_replays_with_other_buffers() {
    use aqueduct::command_buffer::{BindingTableEntry, BufferRef, Ordering};
    use aqueduct::{CommandBufferBuilder, CommandQueue};
    let system = announced_system();
    let host = aqueduct_tests::host_pool(&system);
    let mut rng = Rng(0x5EC0_7D3D);
    for gpu in hsa_gpus(&system) {
        let lib = library(&gpu);
        let gemm = Gemm::new(70, 45, 33, DataType::Half, DataType::Float)
            .transposed(true, false)
            .with_leading_dims(40, 35, 72, 71)
            .scaled(1.5, -0.5);
        let plan = lib.select(&gemm).expect("select");
        let [sa, sb, sc, sd] = gemm.spans();
        let (ti, to) = (2u64, 4u64);
        let queue = gpu.create_queue(256).expect("queue");
        let device_lib = aqueduct_tests::device_library(&gpu);
        let mut cq = CommandQueue::new(&queue, &device_lib, 1 << 16).expect("command queue");
        let mut rec = CommandBufferBuilder::new(&queue, 8).expect("builder");
        let d_ref = BufferRef::binding(3, 0, sd * to);
        rec.fill(d_ref, &0xFFC0_DEADu32.to_le_bytes())
            .expect("fill");
        rec.set_ordering(Ordering::AGENT.with_barrier());
        let refs = [
            BufferRef::binding(0, 0, sa * ti),
            BufferRef::binding(1, 0, sb * ti),
            BufferRef::binding(2, 0, sc * to),
            d_ref,
        ];
        // A matrix off its element boundary, or shorter than it spans, is
        // refused before anything is recorded.
        let odd = [BufferRef::binding(0, 1, sa * ti), refs[1], refs[2], refs[3]];
        let e = plan.record(&mut rec, &gemm, odd).expect_err("misaligned A");
        assert!(e.to_string().contains("not on a 2-byte"), "{e}");
        let short = [
            refs[0],
            refs[1],
            refs[2],
            BufferRef::binding(3, 0, sd * to - 1),
        ];
        let e = plan.record(&mut rec, &gemm, short).expect_err("short D");
        assert!(e.to_string().contains("D holds"), "{e}");
        let index = plan.record(&mut rec, &gemm, refs).expect("record");
        assert_eq!(index, 1);
        rec.copy(d_ref, BufferRef::binding(4, 0, sd * to))
            .expect("copy");
        let recording = rec.finish().expect("finish");
        let pool = gpu.memory_pool(PoolKind::CoarseGrained).expect("pool");
        let mut runs = Vec::new();
        for _ in 0..2 {
            let inputs = draw_inputs(&gemm, &mut rng);
            let [a, b, c] = &inputs;
            let (a_dev, b_dev) = (upload::<u16>(&pool, a), upload::<u16>(&pool, b));
            let c_dev = upload::<u32>(&pool, c);
            let d_dev = upload::<u32>(&pool, &vec![u32::POISON; sd as usize + 1]);
            let mut out = host.alloc_host::<u32>(sd as usize + 1).expect("alloc");
            out.fill(u32::POISON);
            let entry = |address: u64, length: u64| BindingTableEntry { address, length };
            let table = [
                entry(a_dev.address(), sa * ti),
                entry(b_dev.address(), sb * ti),
                entry(c_dev.address(), sc * to),
                entry(d_dev.address(), (sd + 1) * to),
                entry(out.address(), (sd + 1) * to),
            ];
            let submission = cq.submit(&recording, &table).expect("submit");
            runs.push((inputs, submission, out, (a_dev, b_dev, c_dev, d_dev)));
        }
        for (inputs, submission, out, _) in &runs {
            submission
                .wait(TIMEOUT)
                .unwrap_or_else(|e| panic!("{gemm}: {e}"));
            let d: Vec<u32> = out.to_vec().expect("read");
            assert_eq!(d[sd as usize], u32::POISON, "copied past D");
            check_exact(&gemm, &format!("recorded {}", plan.name), inputs, &d);
        }
    }
}

#[test]
fn selected_kernels_run_and_match_the_cpu() {
    let system = announced_system();
    let mut rng = Rng(0x06E3_3A11);
    for gpu in hsa_gpus(&system) {
        let lib = library(&gpu);
        let f16_f32 = Gemm::new(127, 131, 61, DataType::Half, DataType::Float)
            .transposed(false, true)
            .scaled(2.0, -1.0);
        let name = run_exact::<u16, u32>(&gpu, &lib, &f16_f32, &mut rng);
        assert!(name.starts_with("gemm_f16_f32_"), "{name}");
        let bf16 = Gemm::new(70, 33, 40, DataType::BFloat16, DataType::BFloat16)
            .transposed(true, false)
            .batched(2)
            .scaled(1.0, 1.0);
        let name = run_exact::<u16, u16>(&gpu, &lib, &bf16, &mut rng);
        assert!(name.starts_with("gemm_bf16_"), "{name}");
        let f32_padded = Gemm::new(65, 66, 9, DataType::Float, DataType::Float)
            .with_leading_dims(70, 12, 67, 68)
            .scaled(0.5, 0.0);
        let name = run_exact::<u32, u32>(&gpu, &lib, &f32_padded, &mut rng);
        assert!(name.starts_with("gemm_f32_"), "{name}");
    }
}

impl Bits for u8 {
    fn narrow(bits: u32) -> Self {
        bits as u8
    }
}

/// Int8 GEMMs (Int32 out and compute, Tensile's I8II) select the integer
/// matrix kernels (MFMA on CDNA, WMMA on RDNA) and match the CPU exactly
/// (A and B over all of i8, odd sizes, both transposes, batch 2, alpha 3,
/// beta -2) on every simulated target. A non-integer alpha, and Int8
/// inputs with another output, are refused naming them.
#[test]
fn int8_gemms_select_the_integer_kernels_and_match_the_cpu() {
    let system = announced_system();
    let mut rng = Rng(0x0018_1132);
    let mut ran = 0;
    for gpu in hsa_gpus(&system) {
        let lib = library(&gpu);
        let gfx = gpu.info().name.clone();
        let gemm = Gemm::new(133, 70, 150, DataType::Int8, DataType::Int32)
            .transposed(true, false)
            .batched(2)
            .scaled(3.0, -2.0);
        let e = lib
            .select(&gemm.scaled(1.5, 0.0))
            .err()
            .expect("alpha 1.5 for Int32 compute");
        assert!(e.to_string().contains("alpha 1.5 is not an i32"), "{e}");
        let e = lib
            .select(&Gemm::new(64, 64, 64, DataType::Int8, DataType::Float))
            .err()
            .expect("Int8 with Float output");
        assert!(
            e.to_string().contains("Int8 inputs with Float output"),
            "{e}"
        );
        let family = match matrix_core(&gfx) {
            MatrixCore::Mfma => "mfma",
            MatrixCore::Wmma => "wmma",
            MatrixCore::None => continue,
        };
        ran += 1;
        let want = format!("gemm_i8_i32_{family}_");
        let name = run_exact::<u8, u32>(&gpu, &lib, &gemm, &mut rng);
        assert!(name.starts_with(&want), "{gfx}: {name}");
        let as_is = Gemm::new(64, 64, 128, DataType::Int8, DataType::Int32);
        let name = run_exact::<u8, u32>(&gpu, &lib, &as_is, &mut rng);
        assert!(name.starts_with(&want), "{gfx}: {name}");
    }
    assert!(ran > 0, "no agent with integer matrix kernels");
}

/// OCP FP8 E4M3FN bits of -1, 0 and 1 (gfx950's FP8: sign, exponent bias
/// 7, 1.0 = 0x38).
fn ocp_fp8(v: i32) -> u32 {
    match v {
        -1 => 0xB8,
        0 => 0,
        1 => 0x38,
        _ => panic!("{v}"),
    }
}

/// Block-scaled (MXFP8) GEMMs through the library on the agents whose
/// catalogs hold MX kernels (gfx950): the catalog keeps plain and
/// block-scaled problems apart (an FP8 problem gets an FP8 kernel, the
/// same problem with scales an MXFP8 one); missing, unwanted or short
/// scales and scales on non-FP8 inputs are refused naming them; and the
/// scaled GEMM matches an f64 reference that applies each block's
/// scales (E8M0 2^-3 .. 2^4), batch 2, exactly.
#[test]
fn block_scaled_gemms_select_mx_kernels_and_match_the_cpu() {
    let mut rng = Rng(0x3C8_E8E8);
    on_each("gfx950", |gpu, lib| {
        let plain = mx_problem(DataType::Float8, (false, true));
        let gemm = plain.with_block_scales();
        let name = lib.select(&plain).expect("fp8").name;
        assert!(name.starts_with("gemm_fp8_f32_mfma_"), "{name}");
        let plan = lib.select(&gemm).expect("mxfp8");
        assert!(
            plan.name.starts_with("gemm_mxfp8_f32_mfma_"),
            "{}",
            plan.name
        );
        let Err(e) =
            lib.select(&Gemm::new(64, 64, 64, DataType::Half, DataType::Float).with_block_scales())
        else {
            panic!("f16 with block scales selected a kernel");
        };
        assert!(e.to_string().contains("block scales with Half"), "{e}");

        let [sa, sb, sc, sd] = gemm.spans().map(|s| s as usize);
        let mut draw =
            |n: usize| -> Vec<u32> { (0..n).map(|_| ocp_fp8(rng.below(3) as i32 - 1)).collect() };
        let (a, b) = (draw(sa), draw(sb));
        let [na, nb] = gemm.scale_bytes().map(|n| n as usize);
        let pool = gpu.memory_pool(PoolKind::CoarseGrained).expect("pool");
        let (a_dev, b_dev) = (upload::<u8>(&pool, &a), upload::<u8>(&pool, &b));
        let mut mx = MxRest::upload(&gemm, &pool, 0x11);
        let short = upload::<u8>(&pool, &mx.scale_b[..nb - 1]);
        let queue = gpu.create_queue(64).expect("queue");
        let e = plan
            .dispatch(&queue, &gemm, &a_dev, &b_dev, &mx.c_dev, &mut mx.d_dev)
            .expect_err("no scales");
        assert!(e.to_string().contains("block scales not given"), "{e}");
        let e = plan
            .dispatch_scaled(
                &queue,
                &gemm,
                &a_dev,
                &b_dev,
                &mx.c_dev,
                &mut mx.d_dev,
                &mx.sa_dev,
                &short,
            )
            .expect_err("short scale_b");
        assert!(e.to_string().contains("scale_b holds"), "{e}");
        // Recorded: the same refusals, and the scales bound by name.
        {
            use aqueduct::CommandBufferBuilder;
            use aqueduct::command_buffer::BufferRef;
            let mut rec = CommandBufferBuilder::new(&queue, 8).expect("builder");
            let slot = |i: u32, bytes: usize| BufferRef::binding(i, 0, bytes as u64);
            let refs = [slot(0, sa), slot(1, sb), slot(2, 4 * sc), slot(3, 4 * sd)];
            let e = plan.record(&mut rec, &gemm, refs).expect_err("no scales");
            assert!(e.to_string().contains("block scales not given"), "{e}");
            let e = plan
                .record_scaled(&mut rec, &gemm, refs, [slot(4, na), slot(5, nb - 1)])
                .expect_err("short scale_b");
            assert!(e.to_string().contains("scale_b holds"), "{e}");
            plan.record_scaled(&mut rec, &gemm, refs, [slot(4, na), slot(5, nb)])
                .expect("record");
            let e = lib
                .select(&plain)
                .and_then(|p| p.record_scaled(&mut rec, &plain, refs, [slot(4, na), slot(5, nb)]))
                .expect_err("scales for a plain GEMM");
            assert!(e.to_string().contains("without them"), "{e}");
        }
        let d = mx.run(&plan, &queue, &gemm, [&a_dev, &b_dev]);
        let value = |bits: u32| match bits {
            0x38 => 1.0,
            0xB8 => -1.0,
            _ => 0.0,
        };
        let inputs = [a, b].map(|v| v.into_iter().map(value).collect());
        check_block_scaled(
            &gemm,
            &plan.name,
            &inputs,
            [&mx.scale_a, &mx.scale_b],
            &mx.c,
            &d,
        );
    });
}

/// Runs `f` with each agent of processor `gfx` and its library; fails
/// when the system has none.
fn on_each(gfx: &str, mut f: impl FnMut(&aqueduct::agent::Agent, &GemmLibrary)) {
    let system = announced_system();
    let mut ran = 0;
    for gpu in hsa_gpus(&system) {
        if gpu.info().name == gfx {
            ran += 1;
            f(&gpu, &library(&gpu));
        }
    }
    assert!(ran > 0, "no {gfx} agent");
}

/// The block-scaled tests' problem: 100 × 70 × 96 of `input` (f32 out),
/// stored with `trans`, batch 2, alpha 2, beta -1, no scales yet.
fn mx_problem(input: DataType, (trans_a, trans_b): (bool, bool)) -> Gemm {
    Gemm::new(100, 70, 96, input, DataType::Float)
        .transposed(trans_a, trans_b)
        .batched(2)
        .scaled(2.0, -1.0)
}

/// What a block-scaled test uploads besides A and B: C (small integers),
/// D poisoned one element past its span, and the E8M0 scales ([`mx_scales`]
/// salted by `salt` and `salt + 1`), on the host and on the device.
struct MxRest {
    c: Vec<u32>,
    scale_a: Vec<u32>,
    scale_b: Vec<u32>,
    c_dev: aqueduct::DeviceBuffer<u32>,
    d_dev: aqueduct::DeviceBuffer<u32>,
    sa_dev: aqueduct::DeviceBuffer<u8>,
    sb_dev: aqueduct::DeviceBuffer<u8>,
}

impl MxRest {
    fn upload(gemm: &Gemm, pool: &aqueduct::MemoryPool, salt: u64) -> Self {
        let [_, _, sc, sd] = gemm.spans().map(|s| s as usize);
        let [na, nb] = gemm.scale_bytes().map(|n| n as usize);
        let c: Vec<u32> = (0..sc).map(|i| (i as f32 % 5.0 - 2.0).to_bits()).collect();
        let (scale_a, scale_b) = (mx_scales(na, salt), mx_scales(nb, salt + 1));
        MxRest {
            c_dev: upload::<u32>(pool, &c),
            d_dev: upload::<u32>(pool, &vec![u32::POISON; sd + 1]),
            sa_dev: upload::<u8>(pool, &scale_a),
            sb_dev: upload::<u8>(pool, &scale_b),
            c,
            scale_a,
            scale_b,
        }
    }
}

impl MxRest {
    /// Dispatches `gemm` with A and B from `ab` and the rest from here,
    /// waits, and returns D, checked unwritten one element past its span.
    fn run(
        &mut self,
        plan: &aqueduct::GemmPlan,
        queue: &aqueduct::Queue,
        gemm: &Gemm,
        [a, b]: [&aqueduct::DeviceBuffer<u8>; 2],
    ) -> Vec<u32> {
        plan.dispatch_scaled(
            queue,
            gemm,
            a,
            b,
            &self.c_dev,
            &mut self.d_dev,
            &self.sa_dev,
            &self.sb_dev,
        )
        .unwrap_or_else(|e| panic!("{gemm}: {e}"))
        .wait(TIMEOUT)
        .unwrap_or_else(|e| panic!("{gemm}: {e}"));
        let d = self.d_dev.to_vec().expect("read");
        let sd = gemm.spans()[3] as usize;
        assert_eq!(d[sd], u32::POISON, "{gemm}: wrote past D");
        d
    }

    /// Records `gemm` into a command buffer of `queue` with A and B bound
    /// at `bytes` (binding-table slots 0 and 1, the rest after them), but
    /// first with operand `short` (0: A, 1: B) bound one byte short, which
    /// must be refused before anything is recorded: its error. The full
    /// binding then records.
    fn recorded_one_byte_short(
        &self,
        plan: &aqueduct::GemmPlan,
        queue: &aqueduct::Queue,
        gemm: &Gemm,
        bytes: [usize; 2],
        short: usize,
    ) -> String {
        use aqueduct::CommandBufferBuilder;
        use aqueduct::command_buffer::BufferRef;
        let [_, _, sc, sd] = gemm.spans().map(|s| s as usize);
        let [na, nb] = gemm.scale_bytes().map(|n| n as usize);
        let mut rec = CommandBufferBuilder::new(queue, 8).expect("builder");
        let slot = |i: u32, bytes: usize| BufferRef::binding(i, 0, bytes as u64);
        let scales = [slot(4, na), slot(5, nb)];
        let refs = |[a, b]: [usize; 2]| [slot(0, a), slot(1, b), slot(2, 4 * sc), slot(3, 4 * sd)];
        let mut less = bytes;
        less[short] -= 1;
        let e = plan
            .record_scaled(&mut rec, gemm, refs(less), scales)
            .expect_err("one byte short")
            .to_string();
        plan.record_scaled(&mut rec, gemm, refs(bytes), scales)
            .unwrap_or_else(|e| panic!("{gemm}: {e}"));
        e
    }

    /// The error of dispatching `gemm` with A and B from `ab`, which must
    /// be refused.
    fn refused(
        &mut self,
        plan: &aqueduct::GemmPlan,
        queue: &aqueduct::Queue,
        gemm: &Gemm,
        [a, b]: [&aqueduct::DeviceBuffer<u8>; 2],
    ) -> String {
        plan.dispatch_scaled(
            queue,
            gemm,
            a,
            b,
            &self.c_dev,
            &mut self.d_dev,
            &self.sa_dev,
            &self.sb_dev,
        )
        .err()
        .unwrap_or_else(|| panic!("{gemm}: dispatched"))
        .to_string()
    }
}

/// `n` E8M0 scales between 2^-3 and 2^4 (bytes 124 ..= 131), mixed by
/// `salt`.
fn mx_scales(n: usize, salt: u64) -> Vec<u32> {
    (0..n)
        .map(|i| 124 + ((i as u64 ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61) as u32)
        .collect()
}

/// Checks f32 D of the block-scaled `gemm` (kernel `name`) exactly against
/// an f64 reference: A's and B's element values (by stored index), each
/// product times `2^(sa + sb − 254)` of its row's and column's K-block
/// scales, summed, then `alpha · sum + beta · C`.
fn check_block_scaled(
    gemm: &Gemm,
    name: &str,
    [a, b]: &[Vec<f64>; 2],
    [scale_a, scale_b]: [&[u32]; 2],
    c: &[u32],
    d: &[u32],
) {
    let blocks = gemm.k.div_ceil(gemm.block_scales) as usize;
    let (m, n, k) = (gemm.m as usize, gemm.n as usize, gemm.k as usize);
    let (lda, ldb) = (gemm.lda as usize, gemm.ldb as usize);
    for bi in 0..gemm.batch as usize {
        for j in 0..n {
            for i in 0..m {
                let mut sum = 0f64;
                for l in 0..k {
                    let ai = if gemm.trans_a {
                        l + i * lda
                    } else {
                        i + l * lda
                    };
                    let bi_ = if gemm.trans_b {
                        j + l * ldb
                    } else {
                        l + j * ldb
                    };
                    let av = a[bi * gemm.stride_a as usize + ai];
                    let bv = b[bi * gemm.stride_b as usize + bi_];
                    let e = scale_a[(bi * m + i) * blocks + l / 32]
                        + scale_b[(bi * n + j) * blocks + l / 32];
                    sum += av * bv * 2f64.powi(e as i32 - 254);
                }
                let cv = f64::from(f32::from_bits(
                    c[bi * gemm.stride_c as usize + i + j * gemm.ldc as usize],
                ));
                let want = f64::from(gemm.alpha) * sum + f64::from(gemm.beta) * cv;
                let got = f64::from(f32::from_bits(
                    d[bi * gemm.stride_d as usize + i + j * gemm.ldd as usize],
                ));
                assert_eq!(got, want, "{name} {gemm}: D[{i}, {j}, {bi}]");
            }
        }
    }
}

/// OCP FP4 (E2M1) nibbles of 0, ±0.5, ±1 and ±1.5 (sign in bit 3, two
/// exponent bits of bias 1, one mantissa bit: 0x1 is the subnormal 0.5,
/// 0x2 is 1.0; OCP Microscaling specification, FP4 E2M1), and their
/// values.
const FP4: [(u32, f64); 7] = [
    (0x0, 0.0),
    (0x1, 0.5),
    (0x2, 1.0),
    (0x3, 1.5),
    (0x9, -0.5),
    (0xA, -1.0),
    (0xB, -1.5),
];

/// MXFP4 GEMMs through the library on gfx950: Float4 inputs with block
/// scales select an MXFP4 kernel; what MXFP4 cannot take is refused
/// before anything runs, naming it (no scales, M- or N-contiguous
/// operands, an odd K, leading dimension or stride); A and B are bytes of two
/// elements (k even in the low nibble) whose spans are checked in
/// elements, dispatched and recorded; and D matches an f64 reference that
/// applies each block's scales (E8M0 2^-3 .. 2^4), batch 2, exactly (every
/// partial sum is a multiple of 2^-8 below 2^16).
#[test]
fn mxfp4_gemms_select_the_fp4_kernels_and_match_the_cpu() {
    let mut rng = Rng(0xF4_E2A1);
    on_each("gfx950", |gpu, lib| {
        let unscaled = mx_problem(DataType::Float4, (true, false));
        let gemm = unscaled.with_block_scales();
        let refused = |g: &Gemm| match lib.select(g) {
            Ok(p) => panic!("{g} selected {}", p.name),
            Err(e) => e.to_string(),
        };
        let e = refused(&unscaled);
        assert!(e.contains("Float4 inputs without block scales"), "{e}");
        for (a, b) in [(false, false), (false, true), (true, true)] {
            let e = refused(&gemm.transposed(a, b));
            assert!(e.contains("MXFP4 takes K contiguous"), "{e}");
        }
        let e = refused(
            &Gemm::new(64, 64, 95, DataType::Float4, DataType::Float)
                .transposed(true, false)
                .with_block_scales(),
        );
        assert!(e.contains("k 95 is odd"), "{e}");
        let e = refused(&gemm.with_leading_dims(97, 96, 100, 100));
        assert!(e.contains("lda 97 is odd"), "{e}");
        let e = refused(&gemm.with_leading_dims(96, 99, 100, 100));
        assert!(e.contains("ldb 99 is odd"), "{e}");
        let e = refused(&gemm.with_strides(9600, 6721, 7000, 7000));
        assert!(e.contains("stride_b 6721 is odd"), "{e}");
        let plan = lib.select(&gemm).expect("mxfp4");
        assert!(
            plan.name.starts_with("gemm_mxfp4_f32_mfma_"),
            "{}",
            plan.name
        );

        let [sa, sb, ..] = gemm.spans().map(|s| s as usize);
        assert!(sa % 2 == 0 && sb % 2 == 0, "{gemm}: spans {sa} {sb}");
        let mut draw = |n: usize| -> Vec<usize> { (0..n).map(|_| rng.below(7) as usize).collect() };
        let (a, b) = (draw(sa), draw(sb));
        // Two elements a byte, the even one in the low nibble.
        let pack = |v: &[usize]| -> Vec<u32> {
            v.chunks(2)
                .map(|p| FP4[p[0]].0 | FP4[p[1]].0 << 4)
                .collect()
        };
        let pool = gpu.memory_pool(PoolKind::CoarseGrained).expect("pool");
        let (a_bytes, b_bytes) = (pack(&a), pack(&b));
        let (a_dev, b_dev) = (upload::<u8>(&pool, &a_bytes), upload::<u8>(&pool, &b_bytes));
        let short_a = upload::<u8>(&pool, &a_bytes[..sa / 2 - 1]);
        let mut mx = MxRest::upload(&gemm, &pool, 0x41);
        let queue = gpu.create_queue(64).expect("queue");
        // A byte short of A's span is two elements short.
        let e = mx.refused(&plan, &queue, &gemm, [&short_a, &b_dev]);
        assert!(
            e.contains(&format!(
                "A holds {} elements, the problem spans {sa}",
                sa - 2
            )),
            "{e}"
        );
        // Recorded, A's binding-table range is checked the same way.
        let e = mx.recorded_one_byte_short(&plan, &queue, &gemm, [sa / 2, sb / 2], 0);
        assert!(e.contains("A holds"), "{e}");
        let d = mx.run(&plan, &queue, &gemm, [&a_dev, &b_dev]);
        let inputs = [a, b].map(|v| v.into_iter().map(|e| FP4[e].1).collect());
        check_block_scaled(
            &gemm,
            &plan.name,
            &inputs,
            [&mx.scale_a, &mx.scale_b],
            &mx.c,
            &d,
        );
    });
}

/// OCP FP6 bit patterns of 0, ±0.5, ±1 and ±1.5 in E2M3 (two exponent
/// bits of bias 1, three mantissa bits: 0x04 is the subnormal 0.5, 0x08
/// is 1.0) and in E3M2 (three of bias 3, two: 0x08 is 0.5, 0x0C is 1.0),
/// sign in bit 5 (OCP Microscaling specification, FP6), and their values.
const FP6: [(u32, u32, f64); 7] = [
    (0x00, 0x00, 0.0),
    (0x04, 0x08, 0.5),
    (0x08, 0x0C, 1.0),
    (0x0C, 0x0E, 1.5),
    (0x24, 0x28, -0.5),
    (0x28, 0x2C, -1.0),
    (0x2C, 0x2E, -1.5),
];

/// MXFP6 GEMMs through the library on gfx950, for Float6 (E2M3) and
/// BFloat6 (E3M2): with block scales they select an MXFP6 kernel of their
/// format; what MXFP6 cannot take is refused before anything runs, naming
/// it (no scales, M- or N-contiguous operands, a K, lda, ldb or stride
/// not a multiple of 4); A and B are bytes of four elements in three
/// (element `i` in bits `6 i ..`) whose spans are checked in elements,
/// dispatched and recorded; D
/// matches an f64 reference that applies each block's scales, batch 2,
/// exactly. K = 128 keeps the columns 16-byte aligned (96 bytes), so the
/// first tile runs the main loop.
#[test]
fn mxfp6_gemms_select_the_fp6_kernels_and_match_the_cpu() {
    let mut rng = Rng(0xF6_E2A3);
    on_each("gfx950", |gpu, lib| {
        for (input, prefix, e3m2) in [
            (DataType::Float6, "gemm_mxfp6_f32_mfma_", false),
            (DataType::BFloat6, "gemm_mxbf6_f32_mfma_", true),
        ] {
            let unscaled = Gemm::new(100, 70, 128, input, DataType::Float)
                .transposed(true, false)
                .batched(2)
                .scaled(2.0, -1.0);
            let gemm = unscaled.with_block_scales();
            let refused = |g: &Gemm| match lib.select(g) {
                Ok(p) => panic!("{g} selected {}", p.name),
                Err(e) => e.to_string(),
            };
            let e = refused(&unscaled);
            assert!(
                e.contains(&format!("{input} inputs without block scales")),
                "{e}"
            );
            for (a, b) in [(false, false), (false, true), (true, true)] {
                let e = refused(&gemm.transposed(a, b));
                assert!(e.contains("MXFP6 takes K contiguous"), "{e}");
            }
            let e = refused(
                &Gemm::new(64, 64, 94, input, DataType::Float)
                    .transposed(true, false)
                    .with_block_scales(),
            );
            assert!(e.contains("k 94 is not a multiple of 4"), "{e}");
            let e = refused(&gemm.with_leading_dims(128, 130, 100, 100));
            assert!(e.contains("ldb 130 is not a multiple of 4"), "{e}");
            let e = refused(&gemm.with_strides(12802, 128 * 70, 7000, 7000));
            assert!(e.contains("stride_a 12802 is not a multiple of 4"), "{e}");
            let plan = lib.select(&gemm).expect("mxfp6");
            assert!(plan.name.starts_with(prefix), "{input}: {}", plan.name);

            let [sa, sb, ..] = gemm.spans().map(|s| s as usize);
            assert!(sa % 4 == 0 && sb % 4 == 0, "{gemm}: spans {sa} {sb}");
            let mut draw =
                |n: usize| -> Vec<usize> { (0..n).map(|_| rng.below(7) as usize).collect() };
            let (a, b) = (draw(sa), draw(sb));
            // Element i in bits 6 i .. of the bytes: four in three.
            let pack = |v: &[usize]| -> Vec<u32> {
                let mut out = vec![0u32; v.len() * 6 / 8];
                for (i, &e) in v.iter().enumerate() {
                    let bits = if e3m2 { FP6[e].1 } else { FP6[e].0 };
                    let at = i * 6;
                    out[at / 8] |= bits << (at % 8) & 0xFF;
                    if at % 8 > 2 {
                        out[at / 8 + 1] |= bits >> (8 - at % 8);
                    }
                }
                out
            };
            let pool = gpu.memory_pool(PoolKind::CoarseGrained).expect("pool");
            let (a_bytes, b_bytes) = (pack(&a), pack(&b));
            assert_eq!(a_bytes.len(), sa * 3 / 4);
            let (a_dev, b_dev) = (upload::<u8>(&pool, &a_bytes), upload::<u8>(&pool, &b_bytes));
            let short_b = upload::<u8>(&pool, &b_bytes[..sb * 3 / 4 - 1]);
            let mut mx = MxRest::upload(&gemm, &pool, 0x61);
            let queue = gpu.create_queue(64).expect("queue");
            // A byte short of B's span leaves a whole element fewer than
            // four in its last three bytes: 8 · (3 s / 4 − 1) / 6 = s − 2.
            let e = mx.refused(&plan, &queue, &gemm, [&a_dev, &short_b]);
            let short = format!("B holds {} elements, the problem spans {sb}", sb - 2);
            assert!(e.contains(&short), "{e}");
            // Recorded, B's binding-table range is checked the same way.
            let bytes = [sa * 3 / 4, sb * 3 / 4];
            let e = mx.recorded_one_byte_short(&plan, &queue, &gemm, bytes, 1);
            let whole = format!("B holds {} whole elements, the problem spans {sb}", sb - 2);
            assert!(e.contains(&whole), "{e}");
            let d = mx.run(&plan, &queue, &gemm, [&a_dev, &b_dev]);
            let inputs = [a, b].map(|v| v.into_iter().map(|e| FP6[e].2).collect());
            check_block_scaled(
                &gemm,
                &plan.name,
                &inputs,
                [&mx.scale_a, &mx.scale_b],
                &mx.c,
                &d,
            );
        }
    });
}
