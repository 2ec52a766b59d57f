//! The host shim's whole public API through a real HSA runtime:
//! every public function of `host/src` runs here or in `hsa_e2e.rs` on
//! every GPU agent the runtime reports — gfx942 and gfx90a on the
//! simulator's `libaqueduct_sim.so` — against expectations written down
//! independently of the code under test (the products' data sheets, hsa.h,
//! the AQL rules), not just "returned Ok".
//!
//! # Coverage of `host/src`'s public API
//!
//! `e2e` = exercised by `hsa_e2e.rs` before this file; `api` = by a test
//! here (named after the `:`); `unit` = only by the shim's own unit tests
//! on its fake runtime (no runtime behaviour to check through a library).
//!
//! ```text
//! System / Runtime / LoadOptions (hsa/system.rs, agent.rs, device_spec.rs)
//!   System::open, LoadOptions::library .......... e2e (tests/src/lib.rs opens the backend)
//!   System::with_runtime, Runtime::load ......... e2e (through System::open)
//!   System::runtime, Runtime::path/api .......... e2e
//!   Runtime::status_message ..................... e2e; api: runtime_checks_name_the_call_and_status
//!   Runtime::check .............................. api: runtime_checks_name_the_call_and_status
//!   LoadOptions::candidates ..................... unit (pure: no runtime involved)
//!   System version / timestamp frequency ........ api: system_info_counts_time_at_its_frequency
//!     (not public in the shim: read raw through Runtime::api; the shim's
//!     private ticks_per_second is checked through Signal::wait's timeout)
//!   System::agents, System::gpus ................ e2e; api: agents_report_their_products
//!   System::select, DeviceSpec::resolve, FromStr  api: device_strings_select_agents
//!   device_spec::parse_list ..................... api: device_strings_select_agents (via select)
//!   Agent::info/handle/system/is_gpu ............ e2e (info, handle, is_gpu); api: agents_report_their_products
//!   AgentInfo / GpuInfo fields .................. api: agents_report_their_products
//!   PciAddress::from_bdfid ...................... api: agents_report_their_products
//! device_code.rs
//!   path, load_device_library ................... e2e
//!   dir, load, check_abi, DEVICE_LIBRARY ........ api: executables_find_kernels_by_name_and_symbol
//! memory.rs
//!   Agent::memory_pool .......................... e2e (GPU coarse, CPU fine); api: every kind, both agents
//!   Agent::memory_pools, MemoryPool::info/owner/handle/host_accessible
//!                                                 api: memory_pools_match_the_simulated_topology
//!   MemoryPool::alloc_device / alloc_host ....... e2e; api: allocations_are_refused_with_reasons
//!   Buffer::len/is_empty/size_bytes/pool ........ api: buffers_round_trip_and_refuse_ranges_outside_them
//!   Buffer::address ............................. e2e; api: (alignment)
//!   Buffer::write, to_vec ....................... e2e; api: (offsets, range errors)
//!   Buffer::read ................................ api: buffers_round_trip_and_refuse_ranges_outside_them
//!   Buffer::allow_access ........................ not e2e (the simulator's host pool is
//!                                                 accessible_by_all); api: buffers_round_trip_...
//!   Buffer::copy_from ........................... api: synchronous_copies_move_between_every_kind_of_buffer
//!   Buffer::copy_from_async, PendingCopy ........ e2e (one dependency); api: async_copies_wait_for_every_dependency
//!   HostBuffer Deref/DerefMut ................... e2e; api
//! signal.rs
//!   Signal::new/handle .......................... e2e; api
//!   Signal::with_consumers ...................... api: signal_operations_follow_hsa_semantics_with_every_ordering
//!   Signal::load (Acquire only), store (Release only), wait (EQ, Acquire only)
//!                                                 e2e; api: every ordering and every condition
//!   Signal::add, Signal::cas .................... api: signal_operations_..., signal_read_modify_writes_are_atomic
//!   Signal timeout (Error::Timeout, last value) . api: signal_waits_return_the_value_that_satisfied_them,
//!                                                 signal_wait_timeouts_report_the_last_value
//!   (the shim exposes no sub/and/or/xor/exchange: nothing to test)
//! queue.rs
//!   Agent::create_queue, Queue::id/address/fault  e2e; api: queue_sizes_outside_the_agents_range_are_refused
//!   Queue::agent/size/limits, dispatch_limits ... api: queue_sizes_outside_the_agents_range_are_refused
//!   Queue::submit, submit_barrier, wait ......... e2e; api (wrap-around, timeout)
//!   Queue::reserve, Reservation::first_id/remaining/emplace/emplace_barrier/commit, Drop
//!                                                 api: an_abandoned_reservation_is_skipped_and_later_packets_run,
//!                                                 a_full_ring_waits_for_the_packet_processor,
//!                                                 producers_on_many_threads_share_a_queue
//! executable.rs
//!   Agent::load_code_object ..................... e2e; api (errors)
//!   Agent::load_code_object_file ................ api: executables_find_kernels_by_name_and_symbol
//!   Executable::kernel (by name) ................ e2e; api: by `name.kd`, KernelNotFound
//!   Executable::agent/code_object/kernel_names .. api: executables_find_kernels_by_name_and_symbol
//!   Kernel::name/metadata/agent/object/kernarg_segment_size/_alignment/group_/private_segment_size
//!                                                 api: executables_find_kernels_by_name_and_symbol
//!   AgentIsa::parse, check_target ............... api: agents_report_their_products
//! dispatch.rs
//!   Kernel::kernargs, Kernargs::set (by name) ... e2e; api: by index, push, every refusal
//!   Kernargs::push, bytes, ArgKey for usize ..... api: kernargs_by_name_index_and_push_agree
//!   KernelArgument for u32/u64/f32/Buffer/DevicePtr  e2e; for [T; N], &T: api
//!   Kernel::dispatch, dispatch_launch ........... e2e; api: launch_shapes_..., dispatch_refusals_...
//!   Launch::linear, with_ordering ............... e2e
//!   Launch::planar, volume, with_dynamic_lds .... api: launch_shapes_cover_the_grid_in_every_dimension
//!   Dispatch::wait/signal ....................... e2e; Dispatch::packet_id, Drop unwaited: api
//! error.rs
//!   Error::{Timeout, InvalidArgument, KernelNotFound, Io, CodeObject, Packet,
//!   DeviceString, DeviceNotFound, Hsa} .......... api (QueueFault, TargetMismatch: e2e)
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aqueduct::agent::{Agent, AgentKind};
use aqueduct::device_code::DEVICE_LIBRARY;
use aqueduct::hsa::ffi;
use aqueduct::memory::Segment;
use aqueduct::queue::DEFAULT_SPACE_TIMEOUT;
use aqueduct::{
    AgentIsa, DevicePtr, Error, Kernel, Launch, LoadOrder, MemoryPool, PoolKind, RmwOrder, Signal,
    StoreOrder, System, WaitOrder,
};
use aqueduct_abi::gfx::{Gfx, PRODUCTS, Product};
use aqueduct_abi::hsa::SignalCondition;
use aqueduct_abi::packet::{BarrierKind, KernelDispatch, Ordering, PacketError, barrier};
use aqueduct_tests::{
    HOLD, QUEUE_SIZE, TIMEOUT, Word, announced_system, cpu_agent, device_library, device_pool,
    host_pool, hsa_backend, hsa_gpus,
};

/// A short timeout for waits that must expire.
const EXPIRE: Duration = Duration::from_millis(60);

/// hsa.h `HSA_SYSTEM_INFO_TIMESTAMP` (the shim's ffi has no use for it).
const HSA_SYSTEM_INFO_TIMESTAMP: u32 = 2;

/// The device library's kernels (`device/runtime/src/kernels.rs`).
const LIBRARY_KERNELS: [&str; 12] = [
    "blit_copy",
    "blit_fill",
    "cmd_block_issue",
    "cmd_block_issue_serial",
    "cmd_branch",
    "cmd_patch_dispatch",
    "copy_bytes",
    "enqueue_dispatch",
    "fill_pattern",
    "fill_u32",
    "saxpy_f32",
    "sched_tick",
];

// ---------------------------------------------------------------------------
// What the simulated products are
// ---------------------------------------------------------------------------

/// Limits of ROCr's GPU queues (hsa.h attributes; ROCr `GpuAgent::GetInfo`):
/// queues of 64..=131072 packets, 128 queues. The processor's own limits
/// (waves, workgroups, LDS, SIMDs, cache lines) are `aqueduct_abi::gfx`'s.
const QUEUE_MIN: u32 = 64;
const QUEUE_MAX: u32 = 1 << 17;
const QUEUES_MAX: u32 = 128;
/// ROCr's allocation granule and alignment for global pools (`kPageSize`).
const PAGE: u64 = 4096;

/// The simulated product of processor `gfx` (the simulator poses as the
/// first product of each).
fn product(gfx: &str) -> &'static Product {
    PRODUCTS
        .iter()
        .find(|p| p.chip().gfx == gfx)
        .unwrap_or_else(|| panic!("no product of {gfx} in aqueduct_abi::gfx"))
}

/// The facts of processor `gfx`.
fn facts(gfx: &str) -> &'static Gfx {
    aqueduct_abi::gfx::gfx(gfx).unwrap_or_else(|| panic!("no facts of {gfx} in aqueduct_abi::gfx"))
}

// ---------------------------------------------------------------------------
// fill_u32 runs and refusals
// ---------------------------------------------------------------------------

/// `fill_u32`'s arguments for `len` elements of `value` at `dst`.
fn fill_args(fill: &Kernel, dst: u64, len: usize, value: u32) -> aqueduct::Kernargs {
    let mut args = fill.kernargs().expect("kernargs");
    args.set("dst", DevicePtr(dst))
        .and_then(|a| a.set("len", len as u64))
        .and_then(|a| a.set("value", value))
        .expect("fill_u32 arguments");
    args
}

/// A poisoned device buffer of `len` u32.
fn poisoned(gpu: &Agent, len: usize) -> aqueduct::DeviceBuffer<u32> {
    let mut b = device_pool(gpu).alloc_device::<u32>(len).expect("alloc");
    b.write(0, &vec![u32::POISON; len]).expect("poison");
    b
}

/// What `fill_u32` of `len` elements leaves in a poisoned buffer of `total`.
fn filled(len: usize, total: usize, value: u32) -> Vec<u32> {
    let mut v = vec![value; len];
    v.resize(total, u32::POISON);
    v
}

fn invalid_argument(result: Result<impl std::fmt::Debug, Error>, what: &str, needle: &str) {
    match result {
        Err(Error::InvalidArgument { what: w, problem }) => {
            assert_eq!(w, what, "{problem}");
            assert!(
                problem.contains(needle),
                "{what}: {problem:?} should mention {needle:?}"
            );
        }
        other => panic!("{what}: expected InvalidArgument mentioning {needle:?}, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// System
// ---------------------------------------------------------------------------

/// Reads a `hsa_system_get_info` attribute of C type `T`.
fn system_info<T: Copy>(system: &System, attribute: u32, mut value: T) -> T {
    // SAFETY: `value` is a live `T`, the attribute's C type (hsa.h).
    let status =
        unsafe { (system.runtime().api().hsa_system_get_info)(attribute, (&raw mut value).cast()) };
    system
        .runtime()
        .check("hsa_system_get_info", status)
        .unwrap_or_else(|e| panic!("attribute {attribute}: {e}"));
    value
}

#[test]
fn system_info_counts_time_at_its_frequency() {
    let system = announced_system();
    let major = system_info(&system, ffi::HSA_SYSTEM_INFO_VERSION_MAJOR, 0u16);
    let minor = system_info(&system, ffi::HSA_SYSTEM_INFO_VERSION_MINOR, 0u16);
    eprintln!("HSA {major}.{minor}");
    // ROCr implements HSA 1.1 (hsa.h HSA_VERSION_1_1).
    assert_eq!((major, minor), (1, 1), "HSA version");
    let hz = system_info(&system, ffi::HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, 0u64);
    // hsa.h: between 1 MHz and 400 MHz on real systems; the simulator's
    // timestamp counts nanoseconds.
    if hsa_backend().is_simulator() {
        assert_eq!(hz, 1_000_000_000, "simulator timestamp frequency");
    } else {
        assert!((1_000_000..=1_000_000_000).contains(&hz), "{hz} Hz");
    }

    // The timestamp advances at that frequency: compare with a measured
    // interval. Each timestamp read sits between two host clock reads, so
    // the timestamp interval lies between the inner and outer host
    // intervals (plus one tick of rounding each way).
    let outer_start = Instant::now();
    let t0 = system_info(&system, HSA_SYSTEM_INFO_TIMESTAMP, 0u64);
    let inner_start = Instant::now();
    std::thread::sleep(Duration::from_millis(100));
    let inner = inner_start.elapsed();
    let t1 = system_info(&system, HSA_SYSTEM_INFO_TIMESTAMP, 0u64);
    let outer = outer_start.elapsed();
    let ticks = t1.checked_sub(t0).expect("the timestamp never goes back");
    let secs = |d: Duration| d.as_secs_f64();
    let measured = ticks as f64 / hz as f64;
    let tick = 1.0 / hz as f64;
    assert!(
        measured >= secs(inner) - tick && measured <= secs(outer) + tick,
        "{ticks} ticks at {hz} Hz = {measured} s, but {inner:?}..{outer:?} passed"
    );

    // The shim converts wait timeouts to ticks with that frequency: a wait
    // that cannot succeed ends close to its timeout, not a frequency
    // error's factor away.
    let never = Signal::new(&system, 1).expect("signal");
    let start = Instant::now();
    let err = never
        .wait(SignalCondition::EQ, 0, HOLD, WaitOrder::Relaxed)
        .expect_err("nothing changes the signal");
    let took = start.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(
        took >= HOLD && took < HOLD + Duration::from_millis(500),
        "a {HOLD:?} wait took {took:?}"
    );
}

#[test]
fn runtime_checks_name_the_call_and_status() {
    let system = announced_system();
    let runtime = system.runtime();
    runtime
        .check("hsa_init", ffi::HSA_STATUS_SUCCESS)
        .expect("success is Ok");
    match runtime.check("hsa_queue_create", ffi::HSA_STATUS_ERROR_INVALID_ARGUMENT) {
        Err(Error::Hsa {
            call,
            status,
            message,
        }) => {
            assert_eq!(call, "hsa_queue_create");
            assert_eq!(status, ffi::HSA_STATUS_ERROR_INVALID_ARGUMENT);
            // hsa_status_string's text names the status (ROCr's texts do).
            assert!(
                message.contains("HSA_STATUS_ERROR_INVALID_ARGUMENT"),
                "{message}"
            );
        }
        other => panic!("expected Error::Hsa, got {other:?}"),
    }
    // A status no runtime defines has no text.
    assert_eq!(
        runtime.status_message(0x7777_0000),
        "unknown HSA status 0x77770000"
    );
}

// ---------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------

#[test]
fn agents_report_their_products() {
    let system = announced_system();
    let agents = system.agents().expect("agents");
    let cpu = cpu_agent(&system);
    assert_eq!(cpu.info().kind, AgentKind::Cpu);
    assert!(!cpu.is_gpu());
    assert!(cpu.info().gpu.is_none(), "a CPU has no GPU properties");
    if hsa_backend().is_simulator() {
        // ROCr lists the CPU agents first.
        assert_eq!(agents[0].handle(), cpu.handle(), "the CPU comes first");
    }
    let gpus = hsa_gpus(&system);
    assert_eq!(
        agents.iter().filter(|a| a.is_gpu()).count(),
        gpus.len(),
        "gpus() is agents() filtered"
    );
    let handles: BTreeSet<u64> = agents.iter().map(|a| a.handle().0).collect();
    assert_eq!(handles.len(), agents.len(), "agent handles are distinct");

    let mut uuids = BTreeSet::new();
    for gpu in &gpus {
        let info = gpu.info();
        let g = info.gpu.as_ref().expect("GPU properties");
        eprintln!("{}: {info:?}", info.name);
        assert_eq!(info.kind, AgentKind::Gpu);
        assert!(gpu.is_gpu());
        assert!(
            gpu.system().runtime().path() == system.runtime().path(),
            "an agent belongs to its system"
        );
        assert!(info.name.starts_with("gfx"), "{}", info.name);
        assert_eq!(info.vendor, "AMD");
        let facts = facts(&info.name);
        assert_eq!(info.wavefront_size, facts.wave_size);
        assert_eq!(info.workgroup_max_dim, [facts.max_workgroup_size as u16; 3]);
        assert_eq!(info.workgroup_max_size, facts.max_workgroup_size);
        assert_eq!(info.queue_min_size, QUEUE_MIN);
        assert_eq!(info.queue_max_size, QUEUE_MAX);
        assert_eq!(lds_size(info), u64::from(facts.lds_per_workgroup));
        // The ISA names the agent's processor, with its features.
        let isa = AgentIsa::parse(&g.isa).expect("ISA name parses");
        assert_eq!(isa.processor, info.name, "ISA {}", g.isa);
        assert!(
            g.isa.starts_with("amdgcn-amd-amdhsa--"),
            "ISA {} lacks the triple",
            g.isa
        );
        // UUIDs: `GPU-` and 16 hex digits (ROCr `GpuAgent::GetInfo`),
        // distinct per GPU.
        let hex = g.uuid.strip_prefix("GPU-").unwrap_or("");
        assert!(
            hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: UUID {:?} is not GPU-<16 hex digits>",
            info.name,
            g.uuid
        );
        assert!(uuids.insert(g.uuid.clone()), "duplicate UUID {}", g.uuid);

        if !hsa_backend().is_simulator() {
            continue;
        }
        let p = product(&info.name);
        let name = p.chip().name;
        assert_eq!(g.product_name, name);
        assert_eq!(g.chip_id, p.chip, "{name} chip id");
        assert_eq!(g.compute_units, p.compute_units, "{name} CUs");
        assert_eq!(g.max_clock_mhz, p.max_clock_mhz, "{name} clock");
        // Instinct parts run with SRAM ECC on and XNACK off; the RDNA
        // processors support neither feature (AMDGPUUsage's processor
        // table), so ROCr names none.
        let features = if facts.wave_size == 64 {
            ":sramecc+:xnack-"
        } else {
            ""
        };
        assert_eq!(
            g.isa,
            format!("amdgcn-amd-amdhsa--{}{features}", info.name),
            "the ISA name's target features"
        );
        assert_eq!(g.simds_per_cu, facts.simds_per_cu);
        assert_eq!(g.max_waves_per_cu, facts.max_waves_per_cu());
        assert_eq!(g.cacheline_size, facts.cacheline_bytes);
        assert_eq!(info.queues_max, QUEUES_MAX);
        assert_eq!(info.grid_max_dim, [u32::MAX; 3]);
        assert_eq!(info.grid_max_size, u32::MAX);
        // The simulator puts GPU node n on PCI bus n, device 0, function 0.
        assert_eq!(
            g.pci,
            aqueduct::agent::PciAddress::from_bdfid(0, info.node << 8)
        );
        assert_eq!(
            g.pci.to_string(),
            format!("0000:{:02x}:00.0", info.node),
            "lspci form"
        );

        // The code object built for this processor passes the shim's
        // target check; one for the other processor does not.
        let (_, code) = aqueduct::device_code::load_device_library(&info.name).expect("library");
        aqueduct::check_target(&code.target, &info.name, &g.isa).expect("own target");
        for other in aqueduct_sim::Target::ALL.map(|t| t.name()) {
            if other == info.name {
                continue;
            }
            let (_, code) = aqueduct::device_code::load_device_library(other).expect("library");
            assert!(
                matches!(
                    aqueduct::check_target(&code.target, &info.name, &g.isa),
                    Err(Error::TargetMismatch { .. })
                ),
                "{other} code on {}",
                info.name
            );
        }
    }
    if hsa_backend().is_simulator() {
        // The simulator poses as every product of the table it runs.
        let profiles: Vec<_> = aqueduct_sim::hsa::profiles().collect();
        for t in aqueduct_sim::Target::ALL {
            let want = product(t.name());
            let p = profiles
                .iter()
                .find(|p| p.key == want.key)
                .expect("profile");
            assert_eq!(
                (p.product, p.chip_id, p.compute_units, p.max_clock_mhz),
                (
                    want.chip().name,
                    want.chip,
                    want.compute_units,
                    want.max_clock_mhz
                )
            );
        }
    }
}

/// The agent's LDS bytes per workgroup (0 for a CPU).
fn lds_size(info: &aqueduct::agent::AgentInfo) -> u64 {
    info.gpu.as_ref().map_or(0, |g| g.lds_size)
}

#[test]
fn device_strings_select_agents() {
    let system = announced_system();
    let gpus = hsa_gpus(&system);
    let handles = |agents: &[Agent]| agents.iter().map(|a| a.handle().0).collect::<Vec<_>>();
    assert_eq!(
        handles(&system.select("amdgpu").expect("all")),
        handles(&gpus)
    );
    for (i, gpu) in gpus.iter().enumerate() {
        assert_eq!(
            handles(&system.select(&format!("amdgpu:{i}")).expect("ordinal")),
            [gpu.handle().0]
        );
        let uuid = &gpu.info().gpu.as_ref().expect("GPU").uuid;
        let picked = system
            .select(&format!("amdgpu://{uuid}"))
            .unwrap_or_else(|e| panic!("{}: select by UUID {uuid}: {e}", gpu.info().name));
        assert_eq!(handles(&picked), [gpu.handle().0], "UUID {uuid}");
    }
    if gpus.len() >= 2 {
        let uuid = &gpus[1].info().gpu.as_ref().expect("GPU").uuid;
        let picked = system
            .select(&format!("amdgpu://{uuid},0"))
            .expect("a list");
        assert_eq!(
            handles(&picked),
            [gpus[1].handle().0, gpus[0].handle().0],
            "a list keeps its order"
        );
    }
    match system.select(&format!("amdgpu:{}", gpus.len())) {
        Err(Error::DeviceNotFound { problem, .. }) => {
            assert!(
                problem.contains(&format!("there are {} GPU agents", gpus.len())),
                "{problem}"
            );
        }
        other => panic!("an ordinal past the end: {other:?}"),
    }
    match system.select("amdgpu://GPU-0123456789abcdef") {
        Err(Error::DeviceNotFound { problem, .. }) => {
            assert!(problem.contains("no GPU has UUID"), "{problem}")
        }
        other => panic!("an unknown UUID: {other:?}"),
    }
    assert!(
        matches!(system.select("cuda:0"), Err(Error::DeviceString { .. })),
        "another scheme"
    );
}

// ---------------------------------------------------------------------------
// Memory pools and buffers
// ---------------------------------------------------------------------------

/// Installed memory (`MemTotal`): what ROCr reports as the system pools'
/// size.
fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    let line = text
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .expect("MemTotal");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("MemTotal in kB");
    kib * 1024
}

/// A pool as the test expects it: segment, (fine, coarse, kernarg), size,
/// allocatable, accessible by all.
type PoolShape = (Segment, (bool, bool, bool), u64, bool, bool);

fn shape(pool: &MemoryPool) -> PoolShape {
    let i = pool.info();
    (
        i.segment,
        (i.fine_grained, i.coarse_grained, i.kernarg),
        i.size,
        i.alloc_allowed,
        i.accessible_by_all,
    )
}

#[test]
fn memory_pools_match_the_simulated_topology() {
    let system = announced_system();
    let cpu = cpu_agent(&system);
    let on_sim = hsa_backend().is_simulator();
    let cpu_pools = cpu.memory_pools().expect("CPU pools");
    if on_sim {
        // ROCr on a dGPU system: the CPU's system memory as a fine-grained
        // kernarg pool, then a coarse-grained one (`MemoryRegion`).
        let ram = mem_total();
        assert_eq!(
            cpu_pools.iter().map(shape).collect::<Vec<_>>(),
            [
                (Segment::Global, (true, false, true), ram, true, true),
                (Segment::Global, (false, true, false), ram, true, true),
            ],
            "CPU pools"
        );
    }
    for pool in &cpu_pools {
        assert_eq!(pool.owner().handle(), cpu.handle());
        assert!(pool.host_accessible(), "CPU global memory is host memory");
        let i = pool.info();
        assert_eq!((i.granule, i.alignment), (PAGE, PAGE), "{i:?}");
        assert!(i.alloc_max_size > 0 && i.alloc_max_size <= i.size, "{i:?}");
    }
    // Kind lookups on the CPU: on the simulator the one fine-grained pool
    // is also the kernarg pool (ROCr may report a separate kernarg pool,
    // which FineGrained then avoids); there is no LDS.
    let handle = |kind| cpu.memory_pool(kind).map(|p| p.handle()).expect("CPU pool");
    if on_sim {
        assert_eq!(handle(PoolKind::Kernarg), cpu_pools[0].handle());
        assert_eq!(handle(PoolKind::FineGrained), cpu_pools[0].handle());
        assert_eq!(handle(PoolKind::CoarseGrained), cpu_pools[1].handle());
    } else {
        handle(PoolKind::Kernarg);
        handle(PoolKind::FineGrained);
    }
    invalid_argument(
        cpu.memory_pool(PoolKind::Group),
        "memory pool",
        "has no group (LDS) pool",
    );

    let mut all = BTreeSet::new();
    for gpu in hsa_gpus(&system) {
        let name = gpu.info().name.clone();
        let pools = gpu.memory_pools().expect("GPU pools");
        if on_sim {
            let vram = product(&name).memory_bytes;
            assert_eq!(
                pools.iter().map(shape).collect::<Vec<_>>(),
                [
                    (Segment::Global, (false, true, false), vram, true, false),
                    (Segment::Global, (true, false, false), vram, true, false),
                    (
                        Segment::Group,
                        (false, false, false),
                        u64::from(facts(&name).lds_per_workgroup),
                        false,
                        false
                    ),
                ],
                "{name} pools"
            );
        }
        for pool in &pools {
            assert!(all.insert(pool.handle().0), "pool handles are distinct");
            assert_eq!(pool.owner().handle(), gpu.handle());
            assert!(!pool.host_accessible(), "{name}: device memory");
            let i = pool.info();
            if i.alloc_allowed {
                assert_eq!((i.granule, i.alignment), (PAGE, PAGE), "{name}: {i:?}");
                assert!(i.alloc_max_size > 0 && i.alloc_max_size <= i.size);
            } else {
                // The shim reads no allocation properties of LDS.
                assert_eq!((i.granule, i.alignment, i.alloc_max_size), (0, 0, 0));
            }
        }
        // Each kind finds the pool with that property.
        for (k, index) in [
            (PoolKind::CoarseGrained, 0),
            (PoolKind::FineGrained, 1),
            (PoolKind::Group, 2),
        ] {
            let p = gpu
                .memory_pool(k)
                .unwrap_or_else(|e| panic!("{name} {k}: {e}"));
            if on_sim {
                assert_eq!(p.handle(), pools[index].handle(), "{name}: {k}");
            }
            assert_eq!(
                p.info(),
                pools
                    .iter()
                    .find(|q| q.handle() == p.handle())
                    .unwrap()
                    .info()
            );
        }
        assert_eq!(
            gpu.memory_pool(PoolKind::Group).expect("LDS").info().size,
            lds_size(gpu.info()),
            "the agent's LDS size is its group pool's"
        );
        invalid_argument(
            gpu.memory_pool(PoolKind::Kernarg),
            "memory pool",
            "has no kernarg pool",
        );
    }
}

#[test]
fn allocations_are_refused_with_reasons() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let vram = device_pool(&gpu);
        invalid_argument(
            vram.alloc_device::<u32>(0),
            "allocation",
            "zero elements requested",
        );
        invalid_argument(
            vram.alloc_device::<u8>(vram.info().alloc_max_size as usize + 1),
            "allocation",
            "exceed the pool's largest allocation",
        );
        invalid_argument(
            vram.alloc_device::<u64>(usize::MAX / 4),
            "allocation",
            "overflow usize",
        );
        invalid_argument(
            vram.alloc_host::<u32>(4),
            "alloc_host",
            "not host-accessible",
        );
        let lds = gpu.memory_pool(PoolKind::Group).expect("LDS pool");
        invalid_argument(
            lds.alloc_device::<u32>(4),
            "allocation",
            "does not allow runtime allocation",
        );
        // Both global pools of the GPU allocate.
        for kind in [PoolKind::CoarseGrained, PoolKind::FineGrained] {
            let pool = gpu.memory_pool(kind).expect("pool");
            let mut b = pool.alloc_device::<u16>(3).expect("alloc");
            b.write(0, &[1, 2, 3]).expect("write");
            assert_eq!(b.to_vec().expect("read"), [1, 2, 3], "{kind}");
        }
    }
}

#[test]
fn buffers_round_trip_and_refuse_ranges_outside_them() {
    let system = announced_system();
    let cpu = cpu_agent(&system);
    let host = host_pool(&system);
    let gpus = hsa_gpus(&system);
    for gpu in &gpus {
        let name = &gpu.info().name;
        let pool = device_pool(gpu);
        let mut b = pool.alloc_device::<u32>(100).expect("alloc");
        assert_eq!((b.len(), b.is_empty(), b.size_bytes()), (100, false, 400));
        assert_eq!(
            b.address() % PAGE,
            0,
            "{name}: allocations are page-aligned"
        );
        assert_eq!(b.pool().handle(), pool.handle());

        // Writes at offsets land there; reads at offsets read there.
        b.write(0, &[7; 100]).expect("clear");
        let data: Vec<u32> = (0..10).map(|i| 0x100 + i).collect();
        b.write(90, &data).expect("write the tail");
        b.write(3, &data[..2]).expect("write inside");
        let mut tail = [0u32; 10];
        b.read(90, &mut tail).expect("read the tail");
        assert_eq!(tail[..], data[..]);
        let mut want = vec![7u32; 100];
        want[90..].copy_from_slice(&data);
        want[3..5].copy_from_slice(&data[..2]);
        assert_eq!(b.to_vec().expect("to_vec"), want, "{name}");
        // Empty ranges at the end are fine; anything past it is refused,
        // naming the range and the length, and nothing is written.
        b.write(100, &[]).expect("empty write at the end");
        b.read(100, &mut []).expect("empty read at the end");
        invalid_argument(
            b.write(95, &[0; 10]),
            "write",
            "elements 95..105 are outside the buffer of 100 elements",
        );
        invalid_argument(b.read(101, &mut []), "read", "elements 101..101");
        invalid_argument(
            b.write(usize::MAX, &[1]),
            "write",
            "18446744073709551615..18446744073709551616",
        );
        assert_eq!(
            b.to_vec().expect("to_vec"),
            want,
            "{name}: refused writes wrote"
        );

        // Access for other agents: the CPU and every GPU.
        let mut everyone: Vec<&Agent> = gpus.iter().collect();
        everyone.push(&cpu);
        b.allow_access(&everyone).expect("allow access");
        invalid_argument(b.allow_access(&[]), "allow_access", "no agents given");

        // Host buffers: zero-filled, readable through the slice and
        // through copies alike.
        let mut h = host.alloc_host::<u64>(33).expect("host alloc");
        assert!(h.iter().all(|&v| v == 0), "alloc_host zero-fills");
        h[5] = 0x0123_4567_89AB_CDEF;
        let mut five = [0u64; 1];
        h.read(5, &mut five).expect("read");
        assert_eq!(five[0], 0x0123_4567_89AB_CDEF);
        h.write(32, &[9]).expect("write");
        assert_eq!(h[32], 9);
        h.allow_access(&[gpu])
            .expect("allow access to a host buffer");
        invalid_argument(
            h.write(33, &[1]),
            "write",
            "outside the buffer of 33 elements",
        );
    }
}

#[test]
fn synchronous_copies_move_between_every_kind_of_buffer() {
    let system = announced_system();
    let host = host_pool(&system);
    let gpus = hsa_gpus(&system);
    const LEN: usize = 1000;
    let data: Vec<u32> = (0..LEN as u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9))
        .collect();
    for (i, gpu) in gpus.iter().enumerate() {
        let other = &gpus[(i + 1) % gpus.len()];
        let mut staging = host.alloc_host::<u32>(LEN).expect("host");
        staging.copy_from_slice(&data);
        // host -> device -> other agent's device -> host
        let mut d0 = poisoned(gpu, LEN);
        d0.copy_from(&staging).expect("host to device");
        let mut d1 = poisoned(other, LEN);
        d1.copy_from(&d0).expect("device to device");
        let mut back = host.alloc_host::<u32>(LEN).expect("host");
        back.copy_from(&d1).expect("device to host");
        assert!(
            back[..] == data[..],
            "{}: copies round trip",
            gpu.info().name
        );
        let mut h2 = host.alloc_host::<u32>(LEN).expect("host");
        h2.copy_from(&back).expect("host to host");
        assert!(h2[..] == data[..]);

        let short = host.alloc_host::<u32>(LEN - 1).expect("host");
        invalid_argument(
            d0.copy_from(&short),
            "copy_from",
            &format!("source has {} elements, destination {LEN}", LEN - 1),
        );
        invalid_argument(
            d0.copy_from_async(&short, &[]).map(|_| ()),
            "copy_from_async",
            "source has 999 elements",
        );
    }
}

#[test]
fn async_copies_wait_for_every_dependency() {
    let system = announced_system();
    const LEN: usize = 4096;
    for gpu in hsa_gpus(&system) {
        let data: Vec<u32> = (0..LEN as u32).rev().collect();
        let mut src = device_pool(&gpu).alloc_device::<u32>(LEN).expect("alloc");
        src.write(0, &data).expect("upload");
        let mut dst = poisoned(&gpu, LEN);
        let ready = Signal::new(&system, 0).expect("signal");
        let gate = Signal::new(&system, 2).expect("signal");
        {
            let mut copy = dst
                .copy_from_async(&src, &[&ready, &gate])
                .expect("start copy");
            // One dependency is satisfied, the other not: the copy waits.
            gate.add(-1, RmwOrder::Release);
            std::thread::sleep(HOLD);
            assert_eq!(
                copy.signal().load(LoadOrder::Relaxed),
                1,
                "{}: the copy ran with a dependency at 1",
                gpu.info().name
            );
            assert!(matches!(
                copy.wait(EXPIRE),
                Err(Error::Timeout { observed: 1, .. })
            ));
            gate.add(-1, RmwOrder::Release);
            copy.wait(TIMEOUT).expect("the copy completes");
            copy.wait(TIMEOUT).expect("waiting again is Ok");
        }
        assert!(dst.to_vec().expect("read") == data, "{}", gpu.info().name);
    }
}

// ---------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------

const LOADS: [LoadOrder; 2] = [LoadOrder::Relaxed, LoadOrder::Acquire];
const STORES: [StoreOrder; 2] = [StoreOrder::Relaxed, StoreOrder::Release];
const RMWS: [RmwOrder; 4] = [
    RmwOrder::Relaxed,
    RmwOrder::Acquire,
    RmwOrder::Release,
    RmwOrder::AcqRel,
];
const WAITS: [WaitOrder; 2] = [WaitOrder::Relaxed, WaitOrder::Acquire];
const CONDITIONS: [(SignalCondition, &str); 4] = [
    (SignalCondition::EQ, "=="),
    (SignalCondition::NE, "!="),
    (SignalCondition::LT, "<"),
    (SignalCondition::GTE, ">="),
];

#[test]
fn signal_operations_follow_hsa_semantics_with_every_ordering() {
    let system = announced_system();
    let gpus = hsa_gpus(&system);
    let consumers: Vec<&Agent> = gpus.iter().collect();
    let only_gpus = Signal::with_consumers(&system, -7, &consumers).expect("signal");
    assert_eq!(only_gpus.load(LoadOrder::Acquire), -7, "initial value");
    let a = Signal::new(&system, 0).expect("signal");
    assert_ne!(a.handle(), only_gpus.handle(), "distinct signals");
    assert_ne!(a.handle().0, 0, "a signal handle is never null");

    for store in STORES {
        for load in LOADS {
            for v in [0, 1, -1, i64::MIN, i64::MAX] {
                a.store(v, store);
                assert_eq!(a.load(load), v, "{store:?} then {load:?}");
            }
        }
    }
    for order in RMWS {
        a.store(10, StoreOrder::Relaxed);
        a.add(5, order);
        assert_eq!(a.load(LoadOrder::Acquire), 15, "add {order:?}");
        a.add(-20, order);
        assert_eq!(
            a.load(LoadOrder::Acquire),
            -5,
            "add of a negative {order:?}"
        );
        // HSA's add wraps (two's complement).
        a.store(i64::MAX, StoreOrder::Release);
        a.add(1, order);
        assert_eq!(
            a.load(LoadOrder::Acquire),
            i64::MIN,
            "wrapping add {order:?}"
        );

        // cas: success returns the expected value and stores; failure
        // returns what is there and stores nothing.
        a.store(42, StoreOrder::Release);
        assert_eq!(a.cas(42, 43, order), 42, "successful cas {order:?}");
        assert_eq!(a.load(LoadOrder::Acquire), 43);
        assert_eq!(a.cas(42, 99, order), 43, "failed cas {order:?}");
        assert_eq!(a.load(LoadOrder::Acquire), 43, "a failed cas stored");
    }
    // Clones are the same signal.
    let b = a.clone();
    b.store(1234, StoreOrder::Release);
    assert_eq!(a.load(LoadOrder::Acquire), 1234);
    assert_eq!(a.handle(), b.handle());
    assert!(format!("{a:?}").contains("1234"), "{a:?}");
}

#[test]
fn signal_read_modify_writes_are_atomic() {
    let system = announced_system();
    let s = Arc::new(Signal::new(&system, 0).expect("signal"));
    const THREADS: i64 = 4;
    const EACH: i64 = 2000;
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let s = s.clone();
            scope.spawn(move || {
                for i in 0..EACH {
                    if (t + i) % 2 == 0 {
                        s.add(1, RMWS[(i % 4) as usize]);
                    } else {
                        // An increment by cas loop.
                        let mut seen = s.load(LoadOrder::Relaxed);
                        loop {
                            let got = s.cas(seen, seen + 1, RmwOrder::AcqRel);
                            if got == seen {
                                break;
                            }
                            seen = got;
                        }
                    }
                }
            });
        }
    });
    assert_eq!(s.load(LoadOrder::Acquire), THREADS * EACH, "lost updates");
}

#[test]
fn signal_waits_return_the_value_that_satisfied_them() {
    let system = announced_system();
    let s = Signal::new(&system, 5).expect("signal");
    for order in WAITS {
        // Already satisfied: return at once with the value.
        for (condition, compare) in [
            (SignalCondition::EQ, 5),
            (SignalCondition::NE, 4),
            (SignalCondition::LT, 6),
            (SignalCondition::GTE, 5),
        ] {
            assert_eq!(
                s.wait(condition, compare, TIMEOUT, order)
                    .expect("already satisfied"),
                5,
                "{condition:?} {compare} {order:?}"
            );
        }
    }
    // Satisfied later, by another thread: the wait returns the new value.
    for (condition, compare, later) in [
        (SignalCondition::EQ, 0, 0),
        (SignalCondition::NE, 5, 6),
        (SignalCondition::LT, 0, -3),
        (SignalCondition::GTE, 100, 101),
    ] {
        for order in WAITS {
            s.store(5, StoreOrder::Release);
            let got = std::thread::scope(|scope| {
                scope.spawn(|| {
                    std::thread::sleep(Duration::from_millis(30));
                    s.store(later, StoreOrder::Release);
                });
                s.wait(condition, compare, TIMEOUT, order)
            });
            assert_eq!(
                got.expect("the store satisfies the wait"),
                later,
                "{condition:?} {compare} {order:?}"
            );
        }
    }
    invalid_argument(
        s.wait(SignalCondition(7), 0, EXPIRE, WaitOrder::Acquire),
        "signal wait",
        "unknown condition",
    );
}

#[test]
fn signal_wait_timeouts_report_the_last_value() {
    let system = announced_system();
    let s = Signal::new(&system, 5).expect("signal");
    for (condition, symbol) in CONDITIONS {
        // Compare values none of which 5 satisfies.
        let compare = match symbol {
            "==" => 4,
            "!=" => 5,
            "<" => 5,
            _ => 6,
        };
        for order in WAITS {
            s.store(5, StoreOrder::Release);
            let start = Instant::now();
            match s.wait(condition, compare, EXPIRE, order) {
                Err(Error::Timeout {
                    what,
                    condition: c,
                    expected,
                    observed,
                    waited,
                }) => {
                    assert_eq!((c, expected, observed), (symbol, compare, 5), "{what}");
                    assert!(waited >= EXPIRE && start.elapsed() >= EXPIRE, "{waited:?}");
                    assert!(
                        what.contains(&format!("{:#x}", s.handle().0)),
                        "the timeout names the signal: {what}"
                    );
                }
                other => panic!("{symbol} {compare}: expected a timeout, got {other:?}"),
            }
        }
    }
    // The value reported is the last one seen, not the initial one.
    s.store(5, StoreOrder::Release);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            s.store(7, StoreOrder::Release);
        });
        s.wait(SignalCondition::EQ, 0, HOLD, WaitOrder::Acquire)
    });
    assert!(
        matches!(result, Err(Error::Timeout { observed: 7, .. })),
        "{result:?}"
    );

    // A wait through a healthy queue times out the same way, naming the
    // queue.
    for gpu in hsa_gpus(&system) {
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        match queue.wait(&s, SignalCondition::LT, 7, EXPIRE) {
            Err(Error::Timeout { what, observed, .. }) => {
                assert_eq!(observed, 7);
                assert!(what.contains(&format!("queue {}", queue.id())), "{what}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert_eq!(
            queue
                .wait(&s, SignalCondition::GTE, 7, EXPIRE)
                .expect("holds"),
            7
        );
    }
}

// ---------------------------------------------------------------------------
// Queues
// ---------------------------------------------------------------------------

#[test]
fn queue_sizes_outside_the_agents_range_are_refused() {
    let system = announced_system();
    let cpu = cpu_agent(&system);
    invalid_argument(cpu.create_queue(QUEUE_SIZE), "queue size", "is not a GPU");
    for gpu in hsa_gpus(&system) {
        let name = gpu.info().name.clone();
        for (size, needle) in [
            (0, "0 is not a power of two".to_string()),
            (100, "100 is not a power of two".to_string()),
            (
                QUEUE_MIN / 2,
                format!("outside agent {name}'s range {QUEUE_MIN}..={QUEUE_MAX}"),
            ),
            (QUEUE_MAX * 2, format!("outside agent {name}'s range")),
        ] {
            invalid_argument(gpu.create_queue(size), "queue size", &needle);
        }
        let mut ids = BTreeSet::new();
        for size in [QUEUE_MIN, 1024, QUEUE_MAX] {
            let queue = gpu
                .create_queue(size)
                .unwrap_or_else(|e| panic!("{name}: a queue of {size}: {e}"));
            assert_eq!(queue.size(), size);
            assert_eq!(queue.agent().handle(), gpu.handle());
            assert!(ids.insert(queue.id()), "queue ids are unique");
            assert_ne!(queue.address(), 0);
            assert!(queue.fault().is_none(), "a new queue is healthy");
            assert_eq!(
                *queue.limits(),
                aqueduct::queue::dispatch_limits(gpu.info())
            );
            let facts = facts(&name);
            assert_eq!(
                queue.limits().max_group_segment_size,
                facts.lds_per_workgroup
            );
            assert_eq!(queue.limits().max_workgroup_size, facts.max_workgroup_size);
            // A clone is the same queue.
            assert_eq!(queue.clone().id(), queue.id());
        }
    }
}

/// A barrier-AND with a completion signal and no dependencies.
fn marker(done: &Signal) -> aqueduct_abi::packet::BarrierPacket {
    barrier(BarrierKind::And, &[], done.handle(), Ordering::SYSTEM).expect("barrier packet")
}

#[test]
fn an_abandoned_reservation_is_skipped_and_later_packets_run() {
    let system = announced_system();
    let cpu = cpu_agent(&system);
    let kernarg_pool = cpu.memory_pool(PoolKind::Kernarg).expect("kernarg pool");
    const LEN: usize = 300;
    for gpu in hsa_gpus(&system) {
        let name = gpu.info().name.clone();
        let fill = device_library(&gpu).kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        invalid_argument(
            queue.reserve(0, EXPIRE).map(|_| ()),
            "queue reservation",
            "0 slots",
        );
        invalid_argument(
            queue.reserve(QUEUE_SIZE + 1, EXPIRE).map(|_| ()),
            "queue reservation",
            &format!(
                "{} slots requested from a ring of {QUEUE_SIZE}",
                QUEUE_SIZE + 1
            ),
        );

        // A kernel dispatch packet by hand, through Reservation::emplace:
        // the kernarg segment in the kernarg pool, explicit part from
        // Kernargs (fill_u32 reads its size from the packet).
        let out_a = poisoned(&gpu, LEN);
        let args = fill_args(&fill, out_a.address(), LEN, 0xA);
        let mut segment = kernarg_pool
            .alloc_host::<u8>(fill.kernarg_segment_size() as usize)
            .expect("kernarg segment");
        segment[..args.bytes().len()].copy_from_slice(args.bytes());
        let done_a = Signal::new(&system, 1).expect("signal");
        let packet = KernelDispatch {
            group_segment_size: fill.group_segment_size(),
            private_segment_size: fill.private_segment_size(),
            completion_signal: done_a.handle(),
            ..KernelDispatch::linear(fill.object(), segment.address(), 256, 64)
        }
        .build(queue.limits())
        .expect("dispatch packet");
        let barrier_done = Signal::new(&system, 1).expect("signal");

        let mut r = queue.reserve(4, DEFAULT_SPACE_TIMEOUT).expect("reserve 4");
        let first = r.first_id();
        assert_eq!(first, 0, "a new queue starts at packet 0");
        assert_eq!(r.remaining(), 4);
        assert_eq!(r.emplace(&packet).expect("emplace"), first);
        assert_eq!(
            r.emplace_barrier(&marker(&barrier_done)).expect("emplace"),
            first + 1
        );
        assert_eq!(r.remaining(), 2);
        drop(r); // two slots left: no-op barriers

        // An empty reservation committed: four no-ops.
        let r = queue.reserve(4, DEFAULT_SPACE_TIMEOUT).expect("reserve");
        assert_eq!(r.first_id(), first + 4);
        r.commit();

        // Over-filling a reservation is refused.
        let mut r = queue.reserve(1, DEFAULT_SPACE_TIMEOUT).expect("reserve");
        let after = Signal::new(&system, 1).expect("signal");
        assert_eq!(
            r.emplace_barrier(&marker(&after)).expect("emplace"),
            first + 8
        );
        invalid_argument(
            r.emplace_barrier(&marker(&after)),
            "reservation",
            "all 1 reserved slots are already written",
        );
        r.commit();

        // A later dispatch through the safe API runs after the no-ops.
        let mut out_b = poisoned(&gpu, LEN);
        let args = fill_args(&fill, out_b.address(), LEN, 0xB);
        let mut b = fill
            .dispatch(&queue, 256, 64, &args, None)
            .expect("dispatch");
        assert_eq!(
            b.packet_id(),
            first + 9,
            "{name}: packet ids count every slot"
        );
        b.wait(TIMEOUT).expect("the later dispatch completes");
        queue
            .wait(&done_a, SignalCondition::EQ, 0, TIMEOUT)
            .expect("the emplaced dispatch completed");
        queue
            .wait(&barrier_done, SignalCondition::EQ, 0, TIMEOUT)
            .expect("the emplaced barrier completed");
        queue
            .wait(&after, SignalCondition::EQ, 0, TIMEOUT)
            .expect("the barrier after the no-ops completed");
        assert_eq!(
            out_a.to_vec().expect("read"),
            filled(LEN, LEN, 0xA),
            "{name}"
        );
        assert_eq!(
            out_b.to_vec().expect("read"),
            filled(LEN, LEN, 0xB),
            "{name}"
        );
        assert!(queue.fault().is_none(), "{name}: {:?}", queue.fault());
        out_b.write(0, &[0]).expect("the buffer is free again");
        drop(segment);
    }
}

#[test]
fn a_full_ring_waits_for_the_packet_processor() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let name = gpu.info().name.clone();
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        // Slot 0 holds the processor; the other 63 fill the ring.
        let gate = Signal::new(&system, 1).expect("signal");
        let held = Signal::new(&system, 1).expect("signal");
        let packet = barrier(
            BarrierKind::And,
            &[gate.handle()],
            held.handle(),
            Ordering::SYSTEM,
        )
        .expect("barrier packet");
        assert_eq!(queue.submit_barrier(&packet).expect("submit"), 0);
        queue
            .reserve(QUEUE_SIZE - 1, EXPIRE)
            .expect("the rest of the ring")
            .commit();
        let start = Instant::now();
        match queue.reserve(1, EXPIRE) {
            Err(Error::Timeout { what, observed, .. }) => {
                assert_eq!(observed, 0, "the read index has not moved");
                assert!(what.contains("room for 1 packets"), "{what}");
            }
            Err(e) => panic!("{name}: a full ring: {e}"),
            Ok(_) => panic!("{name}: reserved a slot in a full ring"),
        }
        assert!(start.elapsed() >= EXPIRE);
        assert_eq!(held.load(LoadOrder::Acquire), 1, "the barrier waited");

        // Opening the gate drains the ring; the ring then wraps around
        // several times.
        gate.store(0, StoreOrder::Release);
        let last = Signal::new(&system, 3 * i64::from(QUEUE_SIZE)).expect("signal");
        let counted = marker(&last);
        for _ in 0..3 * QUEUE_SIZE {
            queue.submit_barrier(&counted).expect("submit");
        }
        queue
            .wait(&last, SignalCondition::EQ, 0, TIMEOUT)
            .unwrap_or_else(|e| panic!("{name}: every wrapped packet completes: {e}"));
        assert_eq!(held.load(LoadOrder::Acquire), 0);
    }
}

#[test]
fn producers_on_many_threads_share_a_queue() {
    // Queues are multi-producer: reservations race on the write index
    // (compare-and-swap) and every packet still runs exactly once.
    let system = announced_system();
    const THREADS: u32 = 4;
    const EACH: u32 = 100;
    for gpu in hsa_gpus(&system) {
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let count = Signal::new(&system, i64::from(THREADS * EACH)).expect("signal");
        let ids = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    let packet = marker(&count);
                    for _ in 0..EACH {
                        let id = queue.submit_barrier(&packet).expect("submit");
                        ids.lock().unwrap().push(id);
                    }
                });
            }
        });
        queue
            .wait(&count, SignalCondition::EQ, 0, TIMEOUT)
            .expect("every packet completes");
        let mut ids = ids.into_inner().unwrap();
        ids.sort_unstable();
        let want: Vec<u64> = (0..u64::from(THREADS * EACH)).collect();
        assert_eq!(ids, want, "{}: each slot given out once", gpu.info().name);
        // Nothing completes twice.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(count.load(LoadOrder::Acquire), 0);
    }
}

// ---------------------------------------------------------------------------
// Executables and kernels
// ---------------------------------------------------------------------------

#[test]
fn executables_find_kernels_by_name_and_symbol() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let path = aqueduct::device_code::path(&gpu.info().name, DEVICE_LIBRARY);
        assert!(
            path.starts_with(aqueduct::device_code::dir()),
            "{}",
            path.display()
        );
        let (bytes, parsed) =
            aqueduct::device_code::load(&gfx, aqueduct::device_code::DEVICE_LIBRARY).expect("load");
        aqueduct::device_code::check_abi(&path, &parsed).expect("ABI version");
        assert_eq!(
            bytes,
            std::fs::read(&path).expect("read"),
            "load reads the path"
        );

        let exec = gpu.load_code_object_file(&path).expect("load from file");
        assert_eq!(exec.agent().handle(), gpu.handle());
        assert_eq!(exec.code_object().target.processor, gfx);
        let mut names = exec.kernel_names();
        names.sort_unstable();
        assert_eq!(names, LIBRARY_KERNELS, "{gfx}");

        for name in LIBRARY_KERNELS {
            let by_name = exec.kernel(name).expect("by name");
            let by_symbol = exec.kernel(&format!("{name}.kd")).expect("by symbol");
            assert_eq!(by_name.name(), name);
            assert_eq!(by_symbol.name(), name, "the .kd symbol names the kernel");
            assert_eq!(
                by_name.object(),
                by_symbol.object(),
                "{name}: one descriptor"
            );
            assert_ne!(by_name.object(), 0);
            assert_eq!(by_name.object() % 64, 0, "descriptors are 64-byte aligned");
            assert_eq!(by_name.agent().handle(), gpu.handle());
            let meta = by_name.metadata();
            assert_eq!(meta.symbol, format!("{name}.kd"));
            assert_eq!(
                u64::from(by_name.kernarg_segment_size()),
                meta.kernarg_segment_size
            );
            assert_eq!(
                u64::from(by_name.kernarg_segment_alignment()),
                meta.kernarg_segment_align
            );
            assert_eq!(
                u64::from(by_name.group_segment_size()),
                meta.group_segment_fixed_size
            );
            assert_eq!(
                u64::from(by_name.private_segment_size()),
                meta.private_segment_fixed_size
            );
            assert_eq!(meta.wavefront_size, u64::from(facts(&gfx).wave_size));
        }
        // Two kernels are two descriptors.
        assert_ne!(
            exec.kernel("fill_u32").expect("fill").object(),
            exec.kernel("copy_bytes").expect("copy").object()
        );

        match exec.kernel("fill_u64") {
            Err(Error::KernelNotFound { name, available }) => {
                assert_eq!(name, "fill_u64");
                for k in LIBRARY_KERNELS {
                    assert!(available.contains(k), "{available}");
                }
            }
            other => panic!("{gfx}: an unknown kernel: {other:?}"),
        }
        invalid_argument(exec.kernel(""), "kernel name", "is empty");

        // Loading from memory gives the same kernels.
        let again = gpu.load_code_object(&bytes).expect("from memory");
        assert_eq!(again.kernel_names(), exec.kernel_names());
    }

    // Refusals: a missing file, a file that is no code object, a CPU.
    let gpu = &hsa_gpus(&system)[0];
    let missing = std::env::temp_dir().join("aqueduct-hsa-api-no-such.hsaco");
    match gpu.load_code_object_file(&missing) {
        Err(Error::Io { path, .. }) => assert_eq!(path, missing),
        other => panic!("a missing file: {other:?}"),
    }
    let junk = std::env::temp_dir().join(format!("aqueduct-hsa-api-{}.hsaco", std::process::id()));
    std::fs::write(&junk, b"not an ELF file").expect("write");
    match gpu.load_code_object_file(&junk) {
        Err(Error::CodeObject { origin, .. }) => {
            assert_eq!(origin.as_deref(), Some(junk.as_path()))
        }
        other => panic!("a junk file: {other:?}"),
    }
    let _ = std::fs::remove_file(&junk);
    assert!(matches!(
        gpu.load_code_object(b"\x7fELF"),
        Err(Error::CodeObject { origin: None, .. })
    ));
    let (bytes, _) = aqueduct::device_code::load_device_library(&gpu.info().name).expect("library");
    invalid_argument(
        cpu_agent(&system).load_code_object(&bytes),
        "load_code_object",
        "is not a GPU",
    );
}

// ---------------------------------------------------------------------------
// Kernel arguments and dispatch
// ---------------------------------------------------------------------------

#[test]
fn kernargs_by_name_index_and_push_agree() {
    let system = announced_system();
    for gpu in hsa_gpus(&system) {
        let name = gpu.info().name.clone();
        let lib = device_library(&gpu);
        let fill = lib.kernel("fill_u32").expect("fill_u32");
        let saxpy = lib.kernel("saxpy_f32").expect("saxpy_f32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        const LEN: usize = 200;
        let out = poisoned(&gpu, LEN + 8);

        let mut by_name = fill.kernargs().expect("kernargs");
        by_name
            .set("value", 5u32)
            .and_then(|a| a.set("dst", &out))
            .and_then(|a| a.set("len", LEN as u64))
            .expect("by name");
        let mut by_index = fill.kernargs().expect("kernargs");
        by_index
            .set(2usize, 5u32)
            .and_then(|a| a.set(0usize, &out))
            .and_then(|a| a.set(1usize, LEN as u64))
            .expect("by index");
        let mut pushed = fill.kernargs().expect("kernargs");
        pushed
            .push(DevicePtr(out.address()))
            .and_then(|a| a.push(LEN as u64))
            .and_then(|a| a.push([5u32]))
            .expect("push");
        assert_eq!(by_name.bytes(), by_index.bytes(), "{name}");
        assert_eq!(by_name.bytes(), pushed.bytes(), "{name}");
        // The bytes sit at the metadata's offsets.
        let meta = fill.metadata();
        let at = |arg: usize| meta.args[arg].offset as usize;
        let b = by_name.bytes();
        assert_eq!(b[at(0)..at(0) + 8], out.address().to_le_bytes());
        assert_eq!(b[at(1)..at(1) + 8], (LEN as u64).to_le_bytes());
        assert_eq!(b[at(2)..at(2) + 4], 5u32.to_le_bytes());

        // Refusals name the kernel and the argument.
        let mut args = fill.kernargs().expect("kernargs");
        invalid_argument(
            args.set("nope", 1u32).map(|_| ()),
            "kernel argument",
            "fill_u32: no argument \"nope\" (it takes (dst: global_buffer 8B, len: by_value 8B, value: by_value 4B))",
        );
        invalid_argument(
            args.set(3usize, 1u32).map(|_| ()),
            "kernel argument",
            "no argument #3",
        );
        invalid_argument(
            args.set("len", 5u32).map(|_| ()),
            "kernel argument",
            "argument len: 4 bytes given for a value of 8 bytes",
        );
        invalid_argument(
            args.set("dst", 5u64).map(|_| ()),
            "kernel argument",
            "argument dst: a value was given for a global_buffer argument",
        );
        invalid_argument(
            args.set("value", DevicePtr(8)).map(|_| ()),
            "kernel argument",
            "argument value: a pointer was given for a by_value argument of 4 bytes",
        );
        // Unset arguments are named at dispatch, and nothing is submitted.
        args.set("dst", &out).expect("dst");
        invalid_argument(
            fill.dispatch(&queue, 64, 64, &args, None),
            "kernel arguments",
            "fill_u32: not set: len, value",
        );
        args.push(LEN as u64)
            .and_then(|a| a.push(9u32))
            .expect("push the rest");
        invalid_argument(
            args.push(1u32).map(|_| ()),
            "kernel argument",
            "all 3 arguments are already set",
        );
        // Arguments of another kernel are refused.
        let mut other = saxpy.kernargs().expect("kernargs");
        other
            .set("len", 1u64)
            .and_then(|a| a.set("a", 2.0f32))
            .and_then(|a| a.set("x", &out))
            .and_then(|a| a.set("y", &out))
            .expect("saxpy arguments");
        invalid_argument(
            fill.dispatch(&queue, 64, 64, &other, None),
            "dispatch",
            "the arguments were built for kernel saxpy_f32",
        );

        // Each form dispatches to the same result.
        for args in [&by_index, &pushed] {
            let mut d = fill.dispatch(&queue, 64, 64, args, None).expect("dispatch");
            d.wait(TIMEOUT).expect("completes");
            d.wait(TIMEOUT).expect("waiting again is Ok");
            assert_eq!(d.signal().load(LoadOrder::Acquire), 0);
            assert_eq!(
                out.to_vec().expect("read"),
                filled(LEN, LEN + 8, 5),
                "{name}"
            );
        }
    }
}

#[test]
fn launch_shapes_cover_the_grid_in_every_dimension() {
    // The device kernels are 1-D grid-stride: rows and slices of a 2-D or
    // 3-D grid repeat the x work, so fill_u32 writes the same bytes once
    // per row. What a multi-dimensional launch must get right is that
    // every workgroup of every row runs, to completion, with the packet's
    // x sizes.
    let system = announced_system();
    const LEN: usize = 1000;
    for gpu in hsa_gpus(&system) {
        let name = gpu.info().name.clone();
        let fill = device_library(&gpu).kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let launches = [
            Launch::linear(100, 64),
            Launch::planar([256, 3], [64, 2]),
            Launch::planar([96, 5], [32, 4]),
            Launch::volume([128, 2, 3], [64, 1, 2]),
            Launch::volume([64, 3, 3], [32, 2, 2]).with_dynamic_lds(4096),
            Launch::linear(LEN as u32 + 64, 256).with_ordering(Ordering::AGENT),
        ];
        for (i, launch) in launches.iter().enumerate() {
            let value = 0x5000 + i as u32;
            let out = poisoned(&gpu, LEN + 16);
            let args = fill_args(&fill, out.address(), LEN, value);
            let done = Signal::new(&system, 1).expect("signal");
            let mut d = fill
                .dispatch_launch(&queue, launch, &args, Some(&done))
                .unwrap_or_else(|e| panic!("{name}: {launch:?}: {e}"));
            d.wait(TIMEOUT)
                .unwrap_or_else(|e| panic!("{name}: {launch:?}: {e}"));
            assert_eq!(done.load(LoadOrder::Acquire), 0, "{launch:?}");
            assert_eq!(
                out.to_vec().expect("read"),
                filled(LEN, LEN + 16, value),
                "{name}: {launch:?}"
            );
        }

        // A dispatch dropped without waiting still runs; its queue keeps
        // its kernel arguments until then.
        let out = poisoned(&gpu, LEN);
        let args = fill_args(&fill, out.address(), LEN, 77);
        let done = Signal::new(&system, 1).expect("signal");
        drop(
            fill.dispatch(&queue, 256, 64, &args, Some(&done))
                .expect("dispatch"),
        );
        queue
            .wait(&done, SignalCondition::EQ, 0, TIMEOUT)
            .expect("the dropped dispatch completes");
        assert_eq!(out.to_vec().expect("read"), filled(LEN, LEN, 77));
    }
}

#[test]
fn dispatch_refusals_name_what_is_wrong() {
    let system = announced_system();
    let gpus = hsa_gpus(&system);
    for gpu in &gpus {
        let fill = device_library(gpu).kernel("fill_u32").expect("fill_u32");
        let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
        let out = poisoned(gpu, 64);
        let args = fill_args(&fill, out.address(), 64, 1);
        let refused = |launch: Launch| {
            fill.dispatch_launch(&queue, &launch, &args, None)
                .map(|_| ())
                .expect_err("refused")
        };
        assert!(matches!(
            refused(Launch::linear(0, 64)),
            Error::Packet(PacketError::ZeroSize { axis: 0 })
        ));
        assert!(matches!(
            refused(Launch::volume([64, 1, 0], [64, 1, 1])),
            Error::Packet(PacketError::ZeroSize { axis: 2 })
        ));
        assert!(matches!(
            refused(
                Launch::linear(64, 64)
                    .with_dynamic_lds(facts(&gpu.info().name).lds_per_workgroup + 4)
            ),
            Error::Packet(PacketError::GroupSegmentTooLarge { .. })
        ));
        // More work-items per workgroup than the kernel or agent allows.
        let too_big = refused(Launch::planar([2048, 2], [1024, 2]));
        assert!(
            too_big.to_string().contains("2048"),
            "a 1024x2 workgroup: {too_big}"
        );
        // A queue of another agent.
        if let Some(other) = gpus.iter().find(|g| g.handle() != gpu.handle()) {
            let foreign = other.create_queue(QUEUE_SIZE).expect("queue");
            invalid_argument(
                fill.dispatch(&foreign, 64, 64, &args, None),
                "dispatch",
                &format!("fill_u32: loaded on agent {}", gpu.info().name),
            );
        }
        // Nothing above reached the queue: it still runs work.
        let mut d = fill
            .dispatch(&queue, 64, 64, &args, None)
            .expect("dispatch");
        assert_eq!(d.packet_id(), 0, "refused dispatches used no slot");
        d.wait(TIMEOUT).expect("completes");
        assert_eq!(out.to_vec().expect("read"), vec![1; 64]);
    }
}
