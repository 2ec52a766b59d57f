//! Blit suite: the device library's `blit_fill` and
//! `blit_copy` against CPU references at odd sizes and alignments.
//!
//! Two ways in:
//!
//! - **through the host shim**, on every GPU agent the HSA runtime reports
//!   (gfx942 and gfx90a on the simulator, real hardware when present):
//!   every pattern size at every destination misalignment, copies at every
//!   relative alignment, on poisoned buffers whose bytes around the range
//!   must keep their poison;
//! - **on the simulator directly**, with the blit's ranges registered with
//!   the simulator at their exact bytes (host memory; see [`Exact`]), so any
//!   access outside `[dst, dst + len)` or `[src, src + len)` — even a load
//!   of a byte the kernel then discards — stops the dispatch with a memory
//!   fault. The ranges of the host-shim tests are pool allocations, rounded
//!   up to pages, where such a read would go unnoticed.
//!
//! And one check of the code objects themselves: the blit kernels must keep
//! their 16-byte loads and stores, so vectorisation cannot regress silently.

use aqueduct::agent::Agent;
use aqueduct::device_code::DEVICE_LIBRARY;
use aqueduct::{DeviceBuffer, DevicePtr, Kernel, Queue};
use aqueduct_sim::{DispatchError, Fault, Memory};
use aqueduct_tests::{
    Args, QUEUE_SIZE, Rng, TIMEOUT, Word, announced_system, built_code_objects, device_pool,
    hsa_gpus, load_device_crate, run_llvm_tool, simulated,
};

/// Bytes before and after every range, holding poison that must survive.
const MARGIN: usize = 48;

/// The fill pattern sizes the kernel accepts (`aqueduct_device::blit::PATTERN_SIZES`).
const PATTERN_SIZES: [u32; 5] = [1, 2, 4, 8, 16];

/// Odd lengths: empty, shorter than a chunk, a chunk and a bit, and long
/// enough that the grid strides (up to 256 chunks).
const LENGTHS: [usize; 8] = [0, 1, 15, 17, 33, 1001, 2731, 4099];

/// Launches `(grid, workgroup)`: fewer work-items than units (grid
/// stride), a partial last workgroup, and more work-items than units.
const LAUNCHES: [(u32, u16); 3] = [(64, 64), (200, 128), (1024, 256)];

/// The fill pattern's source words: distinct bytes, so a byte taken from
/// the wrong place in the pattern shows.
const PATTERN: (u64, u64) = (0x8877_6655_4433_2211, 0x00ff_eedd_ccbb_aa99);

/// What a fill of `len` bytes with the first `size` bytes of [`PATTERN`]
/// writes.
fn fill_reference(size: u32, len: usize) -> Vec<u8> {
    let bytes: Vec<u8> = PATTERN
        .0
        .to_le_bytes()
        .into_iter()
        .chain(PATTERN.1.to_le_bytes())
        .collect();
    (0..len).map(|k| bytes[k % size as usize]).collect()
}

/// The first index where `got` and `want` differ.
fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g != w)
}

/// `before` poison bytes, then `range`, then poison up to `total` bytes:
/// what a buffer holds after a correct blit into `[before, before + len)`.
fn poisoned_around(range: &[u8], before: usize, total: usize) -> Vec<u8> {
    let mut want = vec![u8::POISON; before];
    want.extend_from_slice(range);
    want.resize(total, u8::POISON);
    want
}

/// The fill cases: every pattern size at every destination misalignment,
/// each size meeting every length twice.
fn fill_cases() -> impl Iterator<Item = (u32, usize, usize)> {
    PATTERN_SIZES.into_iter().enumerate().flat_map(|(i, size)| {
        (0..16).map(move |mis| (size, mis, LENGTHS[(mis + i) % LENGTHS.len()]))
    })
}

/// The copy cases `(dst misalignment, src misalignment, len)`: every
/// relative alignment (the kernel's three load paths and all funnel
/// shifts) at three destination misalignments and lengths each.
fn copy_cases() -> impl Iterator<Item = (usize, usize, usize)> {
    (0..16).flat_map(|relative| {
        (0..3).map(move |k| {
            let dst = (relative * 5 + k * 7) % 16;
            let src = (dst + relative) % 16;
            (dst, src, LENGTHS[(relative + 3 * k) % LENGTHS.len()])
        })
    })
}

// ---------------------------------------------------------------------------
// Through the host shim, on every GPU agent
// ---------------------------------------------------------------------------

/// A device buffer of `len` bytes plus [`MARGIN`] on either side and 16 to
/// shift the range by, holding `bytes` at `MARGIN + mis` and poison around.
fn staged(gpu: &Agent, bytes: &[u8], mis: usize, capacity: usize) -> DeviceBuffer<u8> {
    let total = 2 * MARGIN + 16 + capacity;
    let mut buf = device_pool(gpu).alloc_device::<u8>(total).expect("alloc");
    buf.write(0, &poisoned_around(bytes, MARGIN + mis, total))
        .expect("stage");
    buf
}

/// Runs `kernel` with the arguments `set` fills in and waits for it.
fn run(
    kernel: &Kernel,
    queue: &Queue,
    (grid, workgroup): (u32, u16),
    set: impl FnOnce(&mut aqueduct::Kernargs) -> aqueduct::Result<&mut aqueduct::Kernargs>,
) {
    let mut args = kernel.kernargs().expect("kernargs");
    set(&mut args).expect("arguments");
    kernel
        .dispatch(queue, grid, workgroup, &args, None)
        .expect("dispatch")
        .wait(TIMEOUT)
        .expect("the blit completes");
}

#[test]
fn fill_writes_every_pattern_size_at_any_alignment_and_nothing_around_it() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let fill = load_device_crate(&gpu, DEVICE_LIBRARY)
            .kernel("blit_fill")
            .expect("blit_fill");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let capacity = LENGTHS.into_iter().max().unwrap_or(0);
        let mut buf = staged(&gpu, &[], 0, capacity);
        let total = buf.len();
        for (i, (size, mis, len)) in fill_cases().enumerate() {
            buf.write(0, &vec![u8::POISON; total]).expect("poison");
            let dst = buf.address() + (MARGIN + mis) as u64;
            run(&fill, &queue, LAUNCHES[i % LAUNCHES.len()], |a| {
                a.set("dst", DevicePtr(dst))?
                    .set("len", len as u64)?
                    .set("pattern_lo", PATTERN.0)?
                    .set("pattern_hi", PATTERN.1)?
                    .set("pattern_size", size)
            });
            let got = buf.to_vec().expect("read back");
            let want = poisoned_around(&fill_reference(size, len), MARGIN + mis, total);
            assert!(
                got == want,
                "{gfx}: fill of {len} bytes with a {size}-byte pattern at misalignment {mis}: \
                 first wrong byte at buffer offset {:?} (range starts at {})",
                first_difference(&got, &want),
                MARGIN + mis
            );
        }
    }
}

#[test]
fn copy_matches_the_source_at_every_relative_alignment_and_writes_nothing_around_it() {
    let system = announced_system();
    let mut rng = Rng(0xB117_0000_0007_0004);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let copy = load_device_crate(&gpu, DEVICE_LIBRARY)
            .kernel("blit_copy")
            .expect("blit_copy");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        for (i, (dst_mis, src_mis, len)) in copy_cases().enumerate() {
            let data: Vec<u8> = (0..len).map(|_| rng.u32() as u8).collect();
            let src = staged(&gpu, &data, src_mis, len);
            let dst = staged(&gpu, &[], 0, len);
            run(&copy, &queue, LAUNCHES[i % LAUNCHES.len()], |a| {
                a.set("dst", DevicePtr(dst.address() + (MARGIN + dst_mis) as u64))?
                    .set("src", DevicePtr(src.address() + (MARGIN + src_mis) as u64))?
                    .set("len", len as u64)
            });
            let got = dst.to_vec().expect("read back");
            let want = poisoned_around(&data, MARGIN + dst_mis, dst.len());
            assert!(
                got == want,
                "{gfx}: copy of {len} bytes, dst misalignment {dst_mis}, src misalignment \
                 {src_mis}: first wrong byte at buffer offset {:?} (range starts at {})",
                first_difference(&got, &want),
                MARGIN + dst_mis
            );
        }
    }
}

// ---------------------------------------------------------------------------
// On the simulator, with exact ranges
// ---------------------------------------------------------------------------

/// Host bytes of which the simulator may touch exactly one range.
///
/// The buffer holds poison (or data) with [`MARGIN`] bytes either side of a
/// 16-byte-aligned origin plus 16; [`Exact::expose`] registers
/// `[origin + offset, .. + len)` with the simulator's memory, and nothing
/// else of the buffer is device memory, so a kernel access one byte outside
/// faults.
struct Exact {
    bytes: Vec<u8>,
    /// Index of the 16-byte-aligned byte that offsets count from.
    origin: usize,
}

impl Exact {
    /// `range` at `offset` (below 16) from the origin, poison around it, and
    /// room for `capacity` bytes there.
    fn new(range: &[u8], offset: usize, capacity: usize) -> Self {
        let mut bytes = vec![u8::POISON; 2 * MARGIN + 32 + capacity];
        let origin = MARGIN + bytes.as_ptr().addr().wrapping_neg() % 16;
        bytes[origin + offset..origin + offset + range.len()].copy_from_slice(range);
        Self { bytes, origin }
    }

    /// The device address of byte `offset` from the origin.
    fn address(&self, offset: usize) -> u64 {
        // Exposed: the simulator accesses the bytes through this address.
        (self.bytes.as_ptr().expose_provenance() + self.origin + offset) as u64
    }

    /// Lets the simulator access `len` bytes at `offset` from the origin
    /// until the returned guard drops; `None` for an empty range (which
    /// the simulator cannot register, and a kernel must not touch).
    ///
    /// The guard must drop before `self` is read or dropped.
    fn expose<'m>(&self, memory: &'m Memory, offset: usize, len: usize) -> Option<Registered<'m>> {
        if len == 0 {
            return None;
        }
        assert!(self.origin + offset + len <= self.bytes.len());
        let address = self.address(offset);
        // SAFETY: the range lies inside `self.bytes` (asserted), whose heap
        // buffer neither moves nor is touched by this test until the guard
        // unregisters the range: each test drops the guard before it reads
        // the bytes, and declares the guard after `self`, so an unwinding
        // panic drops it first too.
        unsafe { memory.register(address, len as u64) }.expect("register the range");
        Some(Registered { memory, address })
    }

    /// The buffer from [`MARGIN`] bytes before the origin to its end: the
    /// range and the poison around it.
    fn all(&self) -> &[u8] {
        &self.bytes[self.origin - MARGIN..]
    }
}

/// A range registered with the simulator's memory; unregistered on drop.
struct Registered<'m> {
    memory: &'m Memory,
    address: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.memory
            .free(self.address)
            .expect("unregister the range");
    }
}

#[test]
fn fill_touches_nothing_outside_its_exact_range() {
    for sim in simulated(DEVICE_LIBRARY) {
        for (i, (size, mis, len)) in fill_cases().enumerate() {
            let buf = Exact::new(&[], 0, len + 16);
            let what =
                format!("fill of {len} bytes with a {size}-byte pattern at misalignment {mis}");
            let args = Args::default()
                .u64(buf.address(mis))
                .u64(len as u64)
                .u64(PATTERN.0)
                .u64(PATTERN.1)
                .u32(size);
            {
                let _dst = buf.expose(sim.d.memory(), mis, len);
                sim.try_run("blit_fill", LAUNCHES[i % LAUNCHES.len()], &args)
                    .unwrap_or_else(|e| panic!("{}: {e}", sim.at(&what)));
            }
            let want = poisoned_around(&fill_reference(size, len), MARGIN + mis, buf.all().len());
            assert!(
                buf.all() == want,
                "{}: first wrong byte at {:?}",
                sim.at(&what),
                first_difference(buf.all(), &want)
            );
        }
    }
}

#[test]
fn copy_reads_and_writes_nothing_outside_its_exact_ranges() {
    let mut rng = Rng(0xB117_0000_0007_0005);
    // Every (dst, src) misalignment pair, with lengths around the edges of
    // the body: no chunk, the first chunks whose load windows fit, and a
    // few more.
    const SHORT: [usize; 8] = [0, 3, 16, 19, 35, 36, 52, 101];
    for sim in simulated(DEVICE_LIBRARY) {
        for dst_mis in 0..16 {
            for src_mis in 0..16 {
                let len = SHORT[(dst_mis * 3 + src_mis) % SHORT.len()];
                let data: Vec<u8> = (0..len).map(|_| rng.u32() as u8).collect();
                let src = Exact::new(&data, src_mis, len + 16);
                let dst = Exact::new(&[], 0, len + 16);
                let what = format!(
                    "copy of {len} bytes, dst misalignment {dst_mis}, src misalignment {src_mis}"
                );
                let args = Args::default()
                    .u64(dst.address(dst_mis))
                    .u64(src.address(src_mis))
                    .u64(len as u64);
                {
                    let _src = src.expose(sim.d.memory(), src_mis, len);
                    let _dst = dst.expose(sim.d.memory(), dst_mis, len);
                    let launch = LAUNCHES[(dst_mis + src_mis) % LAUNCHES.len()];
                    sim.try_run("blit_copy", launch, &args)
                        .unwrap_or_else(|e| panic!("{}: {e}", sim.at(&what)));
                }
                let want = poisoned_around(&data, MARGIN + dst_mis, dst.all().len());
                assert!(
                    dst.all() == want,
                    "{}: first wrong byte at {:?}",
                    sim.at(&what),
                    first_difference(dst.all(), &want)
                );
            }
        }
    }
}

#[test]
fn fill_with_a_pattern_size_that_does_not_divide_a_chunk_traps_before_writing() {
    for sim in simulated(DEVICE_LIBRARY) {
        for size in [0u32, 3, 5, 12, 32] {
            let buf = Exact::new(&[], 0, 64);
            let args = Args::default()
                .u64(buf.address(0))
                .u64(64)
                .u64(PATTERN.0)
                .u64(PATTERN.1)
                .u32(size);
            let result = {
                let _dst = buf.expose(sim.d.memory(), 0, 64);
                sim.try_run("blit_fill", (64, 64), &args)
            };
            match result {
                Err(DispatchError::Fault(report)) => {
                    assert!(matches!(report.fault, Fault::Trap { .. }), "{report}");
                }
                other => panic!(
                    "{}: expected a trap, got {other:?}",
                    sim.at(&format!("pattern size {size}"))
                ),
            }
            assert!(
                buf.all().iter().all(|&b| b == u8::POISON),
                "{}: the fill wrote before trapping",
                sim.at(&format!("pattern size {size}"))
            );
        }
    }
}

// ---------------------------------------------------------------------------
// The code objects
// ---------------------------------------------------------------------------

/// The instructions of `kernel` in `llvm-objdump -d` output.
fn disassembly_of<'a>(text: &'a str, kernel: &str) -> Vec<&'a str> {
    let header = format!("<{kernel}>:");
    text.lines()
        .skip_while(|l| !l.trim_end().ends_with(&header))
        .skip(1)
        .take_while(|l| !l.trim().is_empty() && !l.trim_end().ends_with(">:"))
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .collect()
}

#[test]
fn blit_kernels_keep_their_16_byte_loads_and_stores() {
    let mut checked = 0;
    for built in built_code_objects() {
        if built.package != DEVICE_LIBRARY {
            continue;
        }
        let path = built.path.to_str().expect("UTF-8 path");
        let mcpu = format!("--mcpu={}", built.gfx);
        let text = run_llvm_tool("llvm-objdump", &["-d", &mcpu, path]);
        // GFX9 spells the 16-byte accesses dwordx4; GFX11 and later b128.
        let (load, store) = if built.gfx.starts_with("gfx9") {
            ("global_load_dwordx4", "global_store_dwordx4")
        } else {
            ("global_load_b128", "global_store_b128")
        };
        for (kernel, wanted) in [
            ("blit_fill", &[store][..]),
            ("blit_copy", &[load, store][..]),
        ] {
            let code = disassembly_of(&text, kernel);
            assert!(
                !code.is_empty(),
                "{}: no {kernel} in the disassembly",
                built.gfx
            );
            for mnemonic in wanted {
                assert!(
                    code.iter().any(|i| i.starts_with(mnemonic)),
                    "{}: {kernel} has no {mnemonic}",
                    built.gfx
                );
            }
            // Nothing kept in scratch or (promoted from a private array)
            // in LDS.
            for i in &code {
                assert!(
                    !i.starts_with("scratch_")
                        && !i.starts_with("buffer_")
                        && !i.starts_with("ds_"),
                    "{}: {kernel} uses {i}",
                    built.gfx
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "checked {checked} kernels");
}
