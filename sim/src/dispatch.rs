//! Running a kernel dispatch: workgroups, waves and their initial state.
//!
//! The initial state follows LLVM AMDGPUUsage, "Initial Kernel Execution
//! State" for GFX9 (gfx90a, gfx942, gfx950):
//! - user SGPRs from s0, in this order, each only when the descriptor's
//!   kernel_code_properties enable it: private segment buffer (4; not with
//!   architected flat scratch, i.e. gfx942 and gfx950), dispatch ptr (2),
//!   queue ptr (2), kernarg segment ptr (2), dispatch id (2), flat scratch
//!   init (2; not on gfx942/gfx950), private segment size (1); then
//!   preloaded kernarg dwords (gfx942/gfx950 KERNARG_PRELOAD) up to
//!   COMPUTE_PGM_RSRC2.USER_SGPR_COUNT;
//! - system SGPRs right after: workgroup id X, Y, Z and workgroup info
//!   (each when enabled in RSRC2), then the private segment wave byte offset
//!   (when ENABLE_PRIVATE_SEGMENT);
//! - v0 holds the packed work-item id (X in bits 9:0, Y 19:10, Z 29:20;
//!   Y and Z only when ENABLE_VGPR_WORKITEM_ID asks for them);
//! - EXEC has one bit per work-item of the wave (a wave at the end of a
//!   partial workgroup has fewer); MODE comes from RSRC1's float modes;
//!   on gfx942/gfx950 FLAT_SCRATCH holds the wave's scratch base.
//!
//! Work-group sizes and the grid come from the AQL packet fields in
//! [`Launch`]; the last workgroup in a dimension is partial when the grid
//! is not a multiple of the workgroup size (HSA "partial workgroups").
//! Workgroups run on `threads` host threads, each workgroup's waves
//! cooperatively on one: round-robin in quanta, with `s_barrier` releasing
//! once every wave that has not ended has reached it. Wave32 waves run two
//! at a time in lockstep while nothing tells them apart ([`crate::pair`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use aqueduct_abi::code_object::Kernel;
use aqueduct_abi::kernel_descriptor::GfxFamily;

use crate::decode::inst::code;
use crate::exec::{Ctx, Event};
use crate::fault::{Fault, FaultReport};
use crate::lanes::{LANES, WaveSize};
use crate::memory::MemoryError;
use crate::pair::{self, HALVES, Pairing, ScalarRegs};
use crate::program::{Program, Slot};
use crate::wave::{Scratch, Status, Wave};

/// The fields of an AQL kernel dispatch packet the interpreter needs, and
/// the addresses the runtime around it supplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Work-items per dimension (`grid_size_x/y/z`).
    pub grid: [u32; 3],
    /// `workgroup_size_x/y/z`.
    pub workgroup: [u16; 3],
    /// Device address of the kernarg segment.
    pub kernarg_address: u64,
    /// `group_segment_size`: LDS bytes beyond the kernel's static need
    /// (the packet's value includes the static part; the larger is used).
    pub group_segment_size: u32,
    /// `private_segment_size`: scratch bytes per work-item.
    pub private_segment_size: u32,
    /// Address of the dispatch packet (the dispatch ptr SGPRs).
    pub packet_address: u64,
    /// Address of the `amd_queue_t` (the queue ptr SGPRs).
    pub queue_address: u64,
    /// The packet's index in its queue (the dispatch id SGPRs).
    pub dispatch_id: u64,
}

impl Launch {
    /// The launch a kernel dispatch packet at `packet_address` describes.
    pub fn from_packet(p: &aqueduct_abi::aql::KernelDispatchPacket, packet_address: u64) -> Self {
        Self {
            grid: [p.grid_size_x, p.grid_size_y, p.grid_size_z],
            workgroup: [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z],
            kernarg_address: p.kernarg_address,
            group_segment_size: p.group_segment_size,
            private_segment_size: p.private_segment_size,
            packet_address,
            queue_address: 0,
            dispatch_id: 0,
        }
    }
}

/// What a dispatch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Workgroups run.
    pub workgroups: u64,
    /// Waves run.
    pub waves: u64,
    /// Wave-instructions executed.
    pub instructions: u64,
    /// Sum over executed instructions of active lanes (EXEC bits).
    pub lane_ops: u64,
    /// Wave-instructions executed that were matrix instructions (MFMA,
    /// SMFMAC, WMMA, SWMMAC).
    pub matrix_instructions: u64,
    /// Of `instructions`, those wave32 waves executed as a pair
    /// ([`crate::pair`]): a host-side figure, zero without pairs.
    pub paired_instructions: u64,
    /// Messages raised, in no particular order across workgroups.
    pub events: Vec<Event>,
}

/// Why a dispatch did not run to completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatchError {
    /// A wave faulted; the whole dispatch stopped.
    Fault(Box<FaultReport>),
    /// The packet's fields are invalid (zero sizes, too many work-items,
    /// more LDS than the device has).
    BadLaunch(String),
    /// Scratch could not be allocated.
    Memory(MemoryError),
}

impl std::fmt::Display for DispatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fault(r) => r.fmt(f),
            Self::BadLaunch(why) => write!(f, "invalid dispatch: {why}"),
            Self::Memory(e) => write!(f, "cannot allocate scratch: {e}"),
        }
    }
}

impl std::error::Error for DispatchError {}

/// Instructions a wave runs before the next wave of its workgroup gets a
/// turn: large enough to keep the loop tight, small enough that waves
/// spinning on each other make progress.
const QUANTUM: u32 = 4096;

/// How a dispatch runs on the host; results do not depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Host threads running workgroups.
    pub threads: usize,
    /// Run consecutive wave32 waves of a workgroup as pairs while nothing
    /// tells them apart ([`crate::pair`]).
    pub wave32_pairs: bool,
}

impl Options {
    /// `threads` host threads; wave32 pairs as [`wave32_pairs_default`]
    /// says.
    pub fn threads(threads: usize) -> Self {
        Self {
            threads,
            wave32_pairs: wave32_pairs_default(),
        }
    }
}

/// Whether wave32 waves run in pairs unless told otherwise: yes, unless
/// the environment sets `AQUEDUCT_SIM_WAVE32_PAIRS` to `0`, `off` or
/// `false` (to compare both ways).
pub fn wave32_pairs_default() -> bool {
    !matches!(
        std::env::var("AQUEDUCT_SIM_WAVE32_PAIRS").as_deref(),
        Ok("0" | "off" | "false")
    )
}

/// Per-kernel facts the waves share.
struct Shape {
    vgprs: usize,
    agprs: usize,
    lds: usize,
    lane_bytes: u32,
    mode: u32,
    user_sgprs: Vec<(u8, u32)>,
    sgpr_wg: [Option<u8>; 3],
    sgpr_wg_info: Option<u8>,
    sgpr_wave_offset: Option<u8>,
    workitem_dims: u32,
    architected_scratch: bool,
    /// gfx942/gfx950: architected scratch's base is the FLAT_SCRATCH pair.
    scratch_pair: bool,
    /// GFX12: the workgroup ids arrive in TTMP9 (X) and TTMP7 (Y in bits
    /// 15:0, Z in 31:16), LLVM's "architected SGPRs" (`SIISelLowering`
    /// `getPreloadedValue`; on by default for gfx1201).
    ttmp_workgroup_ids: bool,
    /// gfx90a: the private segment buffer V# is in s[0:3].
    segment_buffer: bool,
    /// gfx90a: where the flat scratch init pair goes.
    flat_scratch_init_at: Option<u8>,
    entry: usize,
    /// The descriptor's wave size.
    wave: WaveSize,
}

fn shape(program: &Program, kernel: &Kernel, launch: &Launch) -> Result<Shape, DispatchError> {
    let d = &kernel.descriptor;
    let (r1, r2, r3, p) = (d.rsrc1(), d.rsrc2(), d.rsrc3(), d.properties());
    let bad = |s: String| DispatchError::BadLaunch(s);
    // AMDGPUUsage, "Kernel Descriptor": ENABLE_WAVEFRONT_SIZE32 is
    // reserved (must be 0) on GFX6-GFX9; GFX10+ kernels choose.
    let wave = if p.enable_wavefront_size32() {
        if !program.target.wave32() {
            return Err(bad(format!(
                "a wave32 kernel cannot run on {}: GFX9 runs wave64 only",
                program.target.name()
            )));
        }
        WaveSize::W32
    } else {
        WaveSize::W64
    };
    // AMDGPUUsage, COMPUTE_PGM_RSRC1.GRANULATED_WORKITEM_VGPR_COUNT:
    // granules of 8 (GFX90A+ with AGPRs; GFX10+ wave32), of 4 (GFX10+
    // wave64). COMPUTE_PGM_RSRC3's ACCUM_OFFSET splits VGPRs from AGPRs
    // on GFX90A+ only (GFX10+ keep other fields there).
    let family = program.target.family();
    let gfx9 = matches!(family, GfxFamily::Gfx9 | GfxFamily::Gfx9Mai);
    let granule = if gfx9 || wave == WaveSize::W32 { 8 } else { 4 };
    let total = (r1.granulated_workitem_vgpr_count() as usize + 1) * granule;
    let arch = if family == GfxFamily::Gfx9Mai && r3.0 != 0 {
        (r3.accum_offset_vgprs() as usize).min(total)
    } else {
        total
    };
    let lds = d.group_segment_fixed_size.max(launch.group_segment_size);
    let gfx = program.target.gfx();
    if lds > gfx.lds_per_workgroup {
        return Err(bad(format!(
            "{lds} bytes of LDS exceed the {} a workgroup has",
            gfx.lds_per_workgroup
        )));
    }
    // The hardware allocates LDS in granules, and an access inside the
    // last one is in range (`exec::ds`); strict mode keeps the group
    // segment's exact size, so any access past it faults.
    let lds = if program.memory().is_strict() {
        lds
    } else {
        lds.next_multiple_of(gfx.lds_granule)
    };
    let lane_bytes = d
        .private_segment_fixed_size
        .max(launch.private_segment_size)
        .next_multiple_of(4);
    // Architected flat scratch (AMDGPUUsage, "Flat Scratch"): gfx942 and
    // gfx950 (with a FLAT_SCRATCH SGPR pair) and GFX11+ (no such operand):
    // no private segment buffer or flat scratch init.
    let architected_scratch = program.target.gfx940_insts() || !gfx9;
    let scratch_pair = program.target.gfx940_insts();
    let kernarg = launch.kernarg_address;
    let mut user = Vec::new();
    let push2 = |user: &mut Vec<(u8, u32)>, v: u64| {
        let at = user.len() as u8;
        user.push((at, v as u32));
        user.push((at + 1, (v >> 32) as u32));
    };
    // The scratch SGPRs depend on the worker's scratch region: reserved
    // here, filled per wave by `init_scratch_sgprs`.
    let segment_buffer = p.enable_sgpr_private_segment_buffer() && !architected_scratch;
    if segment_buffer {
        for _ in 0..4 {
            let at = user.len() as u8;
            user.push((at, 0));
        }
    }
    if p.enable_sgpr_dispatch_ptr() {
        push2(&mut user, launch.packet_address);
    }
    if p.enable_sgpr_queue_ptr() {
        push2(&mut user, launch.queue_address);
    }
    if p.enable_sgpr_kernarg_segment_ptr() {
        push2(&mut user, kernarg);
    }
    if p.enable_sgpr_dispatch_id() {
        push2(&mut user, launch.dispatch_id);
    }
    let mut flat_scratch_init_at = None;
    if p.enable_sgpr_flat_scratch_init() && !architected_scratch {
        flat_scratch_init_at = Some(user.len() as u8);
        push2(&mut user, 0);
    }
    if p.enable_sgpr_private_segment_size() {
        let at = user.len() as u8;
        user.push((at, lane_bytes));
    }
    // gfx942 kernarg preloading: KERNARG_PRELOAD_SPEC_LENGTH dwords from
    // SPEC_OFFSET dwords into the kernarg segment follow the other user
    // SGPRs, read from the kernarg segment as the hardware does.
    let offset = u64::from(d.kernarg_preload_offset()) * 4;
    let mut m = program.memory().access();
    for k in 0..u64::from(d.kernarg_preload_length()) {
        let a = launch.kernarg_address + offset + k * 4;
        m.check(a, 4).map_err(|_| {
            bad(format!(
                "preloaded kernarg dword {k} at {a:#x} is outside device memory"
            ))
        })?;
        let at = user.len() as u8;
        user.push((at, m.load_u32(a)));
    }
    drop(m);
    let count = r2.user_sgpr_count() as u8;
    // Preloaded kernargs fill the rest of the user SGPRs (the values are
    // read at wave launch from the kernarg segment; see `launch_wave`).
    let mut next = count;
    let mut take = |on: bool| {
        on.then(|| {
            let r = next;
            next += 1;
            r
        })
    };
    let sgpr_wg = [
        take(r2.enable_sgpr_workgroup_id_x()),
        take(r2.enable_sgpr_workgroup_id_y()),
        take(r2.enable_sgpr_workgroup_id_z()),
    ];
    let sgpr_wg_info = take(r2.enable_sgpr_workgroup_info());
    let sgpr_wave_offset = take(r2.enable_private_segment());
    // MODE: FP_ROUND[3:0] = round 32 | round 16/64 << 2, FP_DENORM[7:4]
    // likewise, DX10_CLAMP bit 8, IEEE bit 9.
    let mode = r1.float_round_mode_32()
        | r1.float_round_mode_16_64() << 2
        | r1.float_denorm_mode_32() << 4
        | r1.float_denorm_mode_16_64() << 6
        | u32::from(r1.enable_dx10_clamp()) << 8
        | u32::from(r1.enable_ieee_mode()) << 9;
    let entry = program
        .index_of(program.base + kernel.entry_address)
        .map_err(|_| bad(format!("kernel {} has no code at its entry", kernel.name())))?;
    Ok(Shape {
        vgprs: arch,
        agprs: total - arch,
        lds: lds as usize,
        lane_bytes,
        mode,
        user_sgprs: user,
        sgpr_wg,
        sgpr_wg_info,
        sgpr_wave_offset,
        workitem_dims: r2.enable_vgpr_workitem_id(),
        architected_scratch,
        scratch_pair,
        ttmp_workgroup_ids: family == GfxFamily::Gfx12,
        segment_buffer,
        flat_scratch_init_at,
        entry,
        wave,
    })
}

/// Runs `kernel` of `program` over the grid of `launch`.
pub fn run(
    program: &Program,
    kernel: &Kernel,
    launch: &Launch,
    options: Options,
) -> Result<Stats, DispatchError> {
    run_observed(program, kernel, launch, options, &|_| {})
}

/// [`run`], calling `on_event` for each event as its wave raises it (at
/// the end of the wave's scheduling quantum at the latest) rather than
/// only in the final [`Stats`]: a packet processor wakes host signal
/// waiters on a device interrupt while the kernel still runs.
pub fn run_observed(
    program: &Program,
    kernel: &Kernel,
    launch: &Launch,
    options: Options,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<Stats, DispatchError> {
    let Options {
        threads,
        wave32_pairs,
    } = options;
    let bad = |s: String| DispatchError::BadLaunch(s);
    let [gx, gy, gz] = launch.grid;
    let [wx, wy, wz] = launch.workgroup.map(u32::from);
    if gx == 0 || gy == 0 || gz == 0 || wx == 0 || wy == 0 || wz == 0 {
        return Err(bad(format!(
            "grid {:?} / workgroup {:?} has a zero dimension",
            launch.grid, launch.workgroup
        )));
    }
    let wg_items = wx * wy * wz;
    let max = kernel.metadata.max_flat_workgroup_size.max(1);
    if u64::from(wg_items) > max.min(1024) {
        return Err(bad(format!(
            "workgroup of {wg_items} work-items exceeds the kernel's limit {max}"
        )));
    }
    let s = shape(program, kernel, launch)?;
    let counts = [gx.div_ceil(wx), gy.div_ceil(wy), gz.div_ceil(wz)];
    let total = u64::from(counts[0]) * u64::from(counts[1]) * u64::from(counts[2]);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let result: Mutex<Result<Stats, DispatchError>> = Mutex::new(Ok(Stats::default()));
    let waves_per_group = wg_items.div_ceil(s.wave.lanes() as u32) as usize;
    let worker = || {
        let mut local = Stats::default();
        let mut lds = vec![0u8; s.lds];
        let scratch_bytes = waves_per_group as u64 * LANES as u64 * u64::from(s.lane_bytes);
        let scratch = if scratch_bytes > 0 {
            match program.memory().alloc(scratch_bytes, 256) {
                Ok(a) => Some(a),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    *result.lock().unwrap_or_else(|p| p.into_inner()) =
                        Err(DispatchError::Memory(e));
                    return;
                }
            }
        } else {
            None
        };
        let mut waves: Vec<Wave> = Vec::new();
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let n = next.fetch_add(1, Ordering::Relaxed) as u64;
            if n >= total {
                break;
            }
            let id = [
                (n % u64::from(counts[0])) as u32,
                (n / u64::from(counts[0]) % u64::from(counts[1])) as u32,
                (n / (u64::from(counts[0]) * u64::from(counts[1]))) as u32,
            ];
            lds.fill(0);
            if let Err(e) = run_group(
                program,
                kernel,
                launch,
                &s,
                id,
                scratch.unwrap_or(0),
                &mut lds,
                &mut waves,
                wave32_pairs,
                &mut local,
                on_event,
            ) {
                stop.store(true, Ordering::Relaxed);
                let mut r = result.lock().unwrap_or_else(|p| p.into_inner());
                if r.is_ok() {
                    *r = Err(DispatchError::Fault(Box::new(e)));
                }
                break;
            }
        }
        if let Some(a) = scratch {
            let _ = program.memory().free(a);
        }
        let mut r = result.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(t) = r.as_mut() {
            t.workgroups += local.workgroups;
            t.waves += local.waves;
            t.instructions += local.instructions;
            t.lane_ops += local.lane_ops;
            t.matrix_instructions += local.matrix_instructions;
            t.paired_instructions += local.paired_instructions;
            t.events.append(&mut local.events);
        }
    };
    let threads = threads.clamp(1, total.min(256) as usize);
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|sc| {
            for _ in 0..threads {
                sc.spawn(worker);
            }
        });
    }
    result.into_inner().unwrap_or_else(|p| p.into_inner())
}

#[allow(clippy::too_many_arguments)]
fn run_group(
    program: &Program,
    kernel: &Kernel,
    launch: &Launch,
    s: &Shape,
    id: [u32; 3],
    scratch_region: u64,
    lds: &mut [u8],
    waves: &mut Vec<Wave>,
    pairs: bool,
    stats: &mut Stats,
    on_event: &(dyn Fn(Event) + Sync),
) -> Result<(), FaultReport> {
    let [wx, wy, wz] = launch.workgroup.map(u32::from);
    // This workgroup's extent: partial at the grid's edge.
    let ext = [0, 1, 2].map(|d| {
        let w = [wx, wy, wz][d];
        w.min(launch.grid[d] - id[d] * w)
    });
    let items = ext[0] * ext[1] * ext[2];
    let lanes = s.wave.lanes();
    let n_waves = items.div_ceil(lanes as u32) as usize;
    waves.truncate(n_waves);
    while waves.len() < n_waves {
        waves.push(Wave::new(s.vgprs, s.agprs));
    }
    let wave_bytes = LANES as u64 * u64::from(s.lane_bytes);
    for (k, w) in waves.iter_mut().enumerate() {
        w.pc = s.entry;
        *w.s = [0; 128];
        w.scc = false;
        w.status = Status::Running;
        w.mode = s.mode;
        w.trapsts = 0;
        w.sched_mode = 0;
        w.id = k as u32;
        w.set_size(s.wave);
        w.executed = 0;
        if w.v.len() != s.vgprs {
            w.v.resize(s.vgprs, [0; LANES]);
        }
        if w.a.len() != s.agprs {
            w.a.resize(s.agprs, [0; LANES]);
        }
        let wave_offset = k as u64 * wave_bytes;
        w.scratch = Scratch {
            base: scratch_region + wave_offset,
            lane_bytes: s.lane_bytes,
        };
        for &(r, v) in &s.user_sgprs {
            w.s[usize::from(r)] = v;
        }
        init_scratch_sgprs(w, s, scratch_region, wave_offset);
        for d in 0..3 {
            if let Some(r) = s.sgpr_wg[d] {
                w.s[usize::from(r)] = id[d];
            }
        }
        if s.ttmp_workgroup_ids {
            w.s[usize::from(code::TTMP0 + 9)] = id[0];
            w.s[usize::from(code::TTMP0 + 7)] = id[1] & 0xFFFF | id[2] << 16;
        }
        if let Some(r) = s.sgpr_wg_info {
            w.s[usize::from(r)] = 0;
        }
        if let Some(r) = s.sgpr_wave_offset {
            w.s[usize::from(r)] = wave_offset as u32;
        }
        // Work-item ids, packed in v0; EXEC covers the wave's work-items.
        // The first lane's id is divided out once and the others counted
        // up from it: three divisions per lane were a tenth of the time of
        // a small kernel (sim-bench).
        let first = (k * lanes) as u32;
        let mut exec = 0u64;
        let (mut x, mut y, mut z) = (
            first % ext[0],
            (first / ext[0]) % ext[1],
            first / (ext[0] * ext[1]),
        );
        if let Some(v0) = w.v.first_mut() {
            for l in 0..lanes {
                let t = first + l as u32;
                if t >= items {
                    v0[l] = 0;
                    continue;
                }
                exec |= 1 << l;
                let y_id = if s.workitem_dims >= 1 { y } else { 0 };
                let z_id = if s.workitem_dims >= 2 { z } else { 0 };
                v0[l] = x | y_id << 10 | z_id << 20;
                x += 1;
                if x == ext[0] {
                    x = 0;
                    y += 1;
                    if y == ext[1] {
                        y = 0;
                        z += 1;
                    }
                }
            }
        }
        w.set_exec(exec);
    }
    if pairs && s.wave == WaveSize::W32 {
        for [a, b] in waves.as_chunks_mut::<2>().0 {
            pair::join(a, b);
        }
    }
    let mut events = Vec::new();
    loop {
        let mut running = false;
        let mut at_barrier = false;
        for k in 0..waves.len() {
            let (head, tail) = waves.split_at_mut(k + 1);
            let w = &mut head[k];
            if w.status == Status::Running {
                let before = events.len();
                // A pair's second wave is the next one (`pair::join`).
                match tail.first_mut() {
                    Some(b) if w.size() == WaveSize::Pair => {
                        if let Some(second) =
                            run_pair(program, kernel, w, id, lds, &mut events, stats)?
                        {
                            pair::split(w, b, second);
                        }
                    }
                    _ => run_wave(program, kernel, w, id, lds, &mut events, stats)?,
                }
                for &e in &events[before..] {
                    on_event(e);
                }
            }
            running |= w.status == Status::Running;
            at_barrier |= w.status == Status::Barrier;
        }
        if !running {
            if !at_barrier {
                break;
            }
            for w in waves.iter_mut() {
                if w.status == Status::Barrier {
                    w.status = Status::Running;
                }
            }
        }
    }
    stats.workgroups += 1;
    stats.waves += n_waves as u64;
    stats.events.append(&mut events);
    Ok(())
}

/// Scratch-related SGPRs: the private segment buffer V# and flat scratch
/// init (gfx90a), FLAT_SCRATCH (gfx942).
fn init_scratch_sgprs(w: &mut Wave, s: &Shape, region: u64, wave_offset: u64) {
    if s.architected_scratch {
        if s.scratch_pair {
            w.set_s64(code::FLAT_SCRATCH_LO, region + wave_offset);
        }
        return;
    }
    if s.segment_buffer {
        w.s[..4].copy_from_slice(&private_segment_buffer(region));
    }
    if let Some(at) = s.flat_scratch_init_at {
        w.set_s64(at, region);
    }
}

/// The private segment buffer V# over a scratch region: swizzled,
/// ADD_TID_ENABLE, 4-byte elements, 64-lane index stride, NUM_RECORDS
/// unlimited (CDNA3 ISA, "Buffer Resource Descriptor"; the layout ROCr
/// gives the CP).
pub(crate) fn private_segment_buffer(region: u64) -> [u32; 4] {
    [
        region as u32,
        ((region >> 32) as u32 & 0xFFFF) | 1 << 31,
        u32::MAX,
        1 << 23 | 3 << 21 | 1 << 19,
    ]
}

fn run_wave(
    program: &Program,
    kernel: &Kernel,
    w: &mut Wave,
    group: [u32; 3],
    lds: &mut [u8],
    events: &mut Vec<Event>,
    stats: &mut Stats,
) -> Result<(), FaultReport> {
    let slots = &program.slots;
    let mut ctx = context(program, lds, events);
    let mut n = 0u32;
    let mut lane_ops = 0u64;
    let mut matrix = 0u32;
    let result = loop {
        if w.status != Status::Running || n >= QUANTUM {
            break Ok(());
        }
        let at = w.pc;
        let Some(slot) = slots.get(at) else {
            break Err((Fault::RanOffEnd, at));
        };
        w.pc = at + 1;
        ctx.pc = program.base + slot.offset;
        lane_ops += u64::from(w.exec().count_ones());
        matrix += u32::from(slot.matrix);
        if let Err(f) = (slot.exec)(w, &slot.inst, &mut ctx) {
            break Err((f, at));
        }
        n += 1;
        skip_no_ops(w, slot.no_ops_after, at, &mut n, &mut lane_ops);
    };
    w.executed += u64::from(n);
    stats.instructions += u64::from(n);
    stats.lane_ops += lane_ops;
    stats.matrix_instructions += u64::from(matrix);
    result.map_err(|(fault, at)| report(program, kernel, at, fault, group, w.id))
}

/// Runs a wave32 pair ([`crate::pair`]) until it ends, waits at a barrier,
/// uses its quantum or must split; returns, when it must split, where the
/// second wave goes on from (pc and status): before an instruction a pair
/// cannot run (the pc left on it), or after a scalar one that sent the
/// two waves to different places.
fn run_pair(
    program: &Program,
    kernel: &Kernel,
    w: &mut Wave,
    group: [u32; 3],
    lds: &mut [u8],
    events: &mut Vec<Event>,
    stats: &mut Stats,
) -> Result<Option<(usize, Status)>, FaultReport> {
    let slots = &program.slots;
    let mut ctx = context(program, lds, events);
    let mut n = 0u32;
    let mut lane_ops = 0u64;
    let mut matrix = 0u32;
    let result = loop {
        if w.status != Status::Running || n >= QUANTUM {
            break Ok(None);
        }
        let at = w.pc;
        let Some(slot) = slots.get(at) else {
            break Err((Fault::RanOffEnd, at, w.id));
        };
        if slot.pairing == Pairing::Split {
            break Ok(Some((at, Status::Running)));
        }
        ctx.pc = program.base + slot.offset;
        // Both waves' lanes: each wave's EXEC in its half.
        lane_ops += u64::from(w.exec().count_ones());
        matrix += 2 * u32::from(slot.matrix);
        let step = match slot.pairing {
            Pairing::Once(reads) if w.mirrored() || reads.agree(w) => {
                w.pc = at + 1;
                // A fault runs it again wave by wave, to name the wave
                // whose lane faulted (a load writes no register when it
                // faults, a store rewrites what it wrote: the same result).
                (slot.exec)(w, &slot.inst, &mut ctx).or_else(|_| halves(w, slot, at, &mut ctx))
            }
            Pairing::Scalar(regs) => match scalar(w, slot, at, regs, &mut ctx) {
                Ok(None) => Ok(()),
                Ok(Some(second)) => {
                    n += 1;
                    break Ok(Some(second));
                }
                Err(e) => Err(e),
            },
            // Halves, or a Once whose SGPRs differ (a Split left above).
            _ => halves(w, slot, at, &mut ctx),
        };
        if let Err(e) = step {
            break Err(e);
        }
        n += 1;
        skip_no_ops(w, slot.no_ops_after, at, &mut n, &mut lane_ops);
    };
    // Each pair instruction is one of each wave.
    w.executed += u64::from(n);
    stats.instructions += 2 * u64::from(n);
    stats.paired_instructions += 2 * u64::from(n);
    stats.lane_ops += lane_ops;
    stats.matrix_instructions += u64::from(matrix);
    result.map_err(|(fault, at, wave)| report(program, kernel, at, fault, group, wave))
}

/// Runs the vector instruction of `slot` (at `at`) for each wave of the
/// pair `w` in turn, in its half of the lanes with its own scalar state.
fn halves(w: &mut Wave, slot: &Slot, at: usize, ctx: &mut Ctx<'_>) -> Result<(), PairFault> {
    w.unmirror();
    let mut result = Ok(());
    for (k, half) in HALVES.into_iter().enumerate() {
        let second = k == 1;
        if second {
            w.swap_banks();
        }
        w.set_half(half);
        w.pc = at + 1;
        result = (slot.exec)(w, &slot.inst, ctx).map_err(|f| (f, at, w.id + k as u32));
        if second {
            w.swap_banks();
        }
        if result.is_err() {
            break;
        }
    }
    w.set_half(u64::MAX);
    result
}

/// Runs the scalar instruction of `slot` (at `at`) for the pair `w`, as a
/// plain wave32 on each wave's own scalar state: once, its result given to
/// both, when both waves hold the same in every register it may read or
/// write (`regs`) and in SCC; else once per wave. Returns the second wave's
/// pc and status when they differ from the first's (the pair must split: a
/// branch went two ways).
fn scalar(
    w: &mut Wave,
    slot: &Slot,
    at: usize,
    regs: ScalarRegs,
    ctx: &mut Ctx<'_>,
) -> Result<Option<(usize, Status)>, PairFault> {
    if w.mirrored() && regs.once() {
        // One state for both: run it once, and both keep it.
        w.set_size(WaveSize::W32);
        w.pc = at + 1;
        let result = (slot.exec)(w, &slot.inst, ctx).map_err(|f| (f, at, w.id));
        w.set_size(WaveSize::Pair);
        w.mirror();
        return result.map(|()| None);
    }
    w.unmirror();
    w.set_size(WaveSize::W32);
    w.pc = at + 1;
    if regs.agree(w) {
        let result = (slot.exec)(w, &slot.inst, ctx).map_err(|f| (f, at, w.id));
        regs.copy_to_second(w);
        w.set_size(WaveSize::Pair);
        return result.map(|()| None);
    }
    let first = (slot.exec)(w, &slot.inst, ctx).map_err(|f| (f, at, w.id));
    let (pc, status) = (w.pc, w.status);
    let second = first.and_then(|()| {
        w.swap_banks();
        w.pc = at + 1;
        w.status = Status::Running;
        let r = (slot.exec)(w, &slot.inst, ctx).map_err(|f| (f, at, w.id + 1));
        w.swap_banks();
        r
    });
    let there = (w.pc, w.status);
    (w.pc, w.status) = (pc, status);
    w.set_size(WaveSize::Pair);
    second?;
    Ok((there != (pc, status)).then_some(there))
}

/// A fault in a pair: the fault, its slot and the wave it names.
type PairFault = (Fault, usize, u32);

/// What a wave's instructions run with: the program's code and memory,
/// the workgroup's LDS, the dispatch's events.
fn context<'a>(program: &'a Program, lds: &'a mut [u8], events: &'a mut Vec<Event>) -> Ctx<'a> {
    Ctx {
        code: &program.code,
        mem: program.memory(),
        lds,
        target: program.target,
        pc: 0,
        events,
    }
}

/// After the instruction at slot `at`, when execution falls through into
/// the `skip` no-ops after it: counts them as executed (with the EXEC this
/// instruction left) and moves past them without dispatching each.
#[inline(always)]
fn skip_no_ops(w: &mut Wave, skip: u16, at: usize, n: &mut u32, lane_ops: &mut u64) {
    if skip > 0 && w.pc == at + 1 && w.status == Status::Running {
        w.pc += usize::from(skip);
        *n += u32::from(skip);
        *lane_ops += u64::from(skip) * u64::from(w.exec().count_ones());
    }
}

/// The report of `fault` at slot `at`: a decode error where the words
/// there are no instruction.
fn report(
    program: &Program,
    kernel: &Kernel,
    at: usize,
    fault: Fault,
    group: [u32; 3],
    wave: u32,
) -> FaultReport {
    let slot = program.slots.get(at);
    let fault = match slot.and_then(|s| s.invalid) {
        Some(e) => Fault::Decode(e),
        None => fault,
    };
    FaultReport {
        fault,
        pc: program.address_of(at),
        word: slot.map_or(0, |s| s.word),
        kernel: kernel.name().to_string(),
        workgroup: group,
        wave,
    }
}
