//! A GEMM through aqueduct's catalog on the first GPU agent: f16 A and B,
//! f32 C and D, checked against the CPU.
//!
//! ```sh
//! cargo xtask build --release                    # kernels and their catalogs
//! cargo run -p aqueduct --example gemm           # ROCr, on a machine with an AMD GPU
//! cargo build -p aqueduct-sim                    # or the simulator's runtime:
//! AQUEDUCT_HSA_LIB=target/debug/libaqueduct_sim.so cargo run -p aqueduct --example gemm
//! ```
#![feature(f16)]

use std::time::Duration;

use aqueduct::catalog::DataType;
use aqueduct::{Gemm, GemmLibrary, LoadOptions, PoolKind, System};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (m, n, k) = (192, 160, 96);
    let system = System::open(&LoadOptions::default())?;
    let gpu = system.gpus()?.into_iter().next().ok_or("no GPU agent")?;

    // D = 0.5 · A · Bᵀ + 2 · C, A M×K and B N×K in f16, C and D in f32.
    let gemm = Gemm::new(m, n, k, DataType::Half, DataType::Float)
        .transposed(false, true)
        .scaled(0.5, 2.0);
    let library = GemmLibrary::open(&gpu)?; // the catalog for this GPU's processor
    let plan = library.select(&gemm)?; // AQUEDUCT_CATALOG_DEBUG=1 shows why
    println!(
        "{} on {}: {} (macro-tile {:?})",
        gemm,
        library.hardware().arch_name,
        plan.name,
        plan.macro_tile
    );

    let [sa, sb, sc, sd] = gemm.spans().map(|s| s as usize);
    let value = |i: usize| ((i * 7 + 3) % 11) as f32 / 4.0 - 1.25; // exact in f16
    let a: Vec<f16> = (0..sa).map(|i| value(i) as f16).collect();
    let b: Vec<f16> = (0..sb).map(|i| value(i + 5) as f16).collect();
    let c: Vec<f32> = (0..sc).map(|i| value(i + 9)).collect();

    let pool = gpu.memory_pool(PoolKind::CoarseGrained)?;
    let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    let mut a_dev = pool.alloc_device::<u16>(sa)?;
    let mut b_dev = pool.alloc_device::<u16>(sb)?;
    let mut c_dev = pool.alloc_device::<f32>(sc)?;
    let mut d_dev = pool.alloc_device::<f32>(sd)?;
    a_dev.write(0, &bits(&a))?;
    b_dev.write(0, &bits(&b))?;
    c_dev.write(0, &c)?;
    d_dev.write(0, &vec![f32::NAN; sd])?;

    let queue = gpu.create_queue(64)?;
    plan.dispatch(&queue, &gemm, &a_dev, &b_dev, &c_dev, &mut d_dev)?
        .wait(Duration::from_secs(600))?;
    let d = d_dev.to_vec()?;

    let mut worst = 0f64;
    for j in 0..n as usize {
        for i in 0..m as usize {
            let dot: f64 = (0..k as usize)
                .map(|l| f64::from(a[i + l * m as usize]) * f64::from(b[j + l * n as usize]))
                .sum();
            let want = 0.5 * dot + 2.0 * f64::from(c[i + j * m as usize]);
            let diff = (f64::from(d[i + j * m as usize]) - want).abs();
            // A NaN (an element left as poisoned) sticks: `f64::max` would
            // drop it.
            if diff > worst || diff.is_nan() {
                worst = diff;
            }
        }
    }
    println!("largest difference from the CPU: {worst:e}");
    if worst != 0.0 {
        return Err("D differs from the CPU reference".into());
    }
    Ok(())
}
