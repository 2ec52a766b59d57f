//! The device library's runtime layer executed through the host
//! shim on every GPU agent the HSA runtime reports (gfx942 and gfx90a on
//! the simulator): scoped atomics hammered from many waves, signal
//! operations with an event mailbox, a dispatch enqueued by device code
//! whose completion wakes a host waiter, and device-side enqueue into a
//! full ring under back-pressure.

use aqueduct::agent::Agent;
use aqueduct::{DevicePtr, Signal};
use aqueduct_abi::amd_signal::AmdSignal;
use aqueduct_abi::hsa::SignalCondition;
use aqueduct_tests::{
    QUEUE_SIZE, TEST_KERNELS, TIMEOUT, Word, announced_system, device_library, host_pool, hsa_gpus,
    load_device_crate,
};
use zerocopy::IntoBytes;

/// Runs `kernel` on a fresh queue of `gpu` and waits for it.
fn run(
    gpu: &Agent,
    kernel: &aqueduct::Kernel,
    grid: u32,
    workgroup: u16,
    args: &aqueduct::Kernargs,
) {
    let queue = gpu.create_queue(QUEUE_SIZE).expect("queue");
    let mut d = kernel
        .dispatch(&queue, grid, workgroup, args, None)
        .expect("dispatch");
    d.wait(TIMEOUT)
        .unwrap_or_else(|e| panic!("{} on {}: {e}", kernel.name(), gpu.info().name));
}

/// Which instance of a scope work-item `g` belongs to.
type Instance = fn(u64) -> u64;

/// Slot words, as `tests/kernels/src/device_runtime.rs` lays them out.
const SLOT_WORDS: usize = 4;
/// Starting values of a slot's words: not zero, so a kernel that did
/// nothing (or started from zero) shows.
const START: [u64; SLOT_WORDS] = [1000, 2000, 7, 1 << 63];

#[test]
fn scoped_atomics_from_many_waves_reach_their_exact_final_values() {
    let system = announced_system();
    const WORKGROUPS: u64 = 4;
    const WORKGROUP: u64 = 128;
    const ITEMS: u64 = WORKGROUPS * WORKGROUP;
    const ITERATIONS: u64 = 5;
    for gpu in hsa_gpus(&system) {
        let lib = load_device_crate(&gpu, TEST_KERNELS);
        // (kernel, instance of the scope that item g belongs to).
        let scopes: [(&str, Instance); 5] = [
            ("hammer_workitem", |g| g),
            ("hammer_wavefront", |g| g / 64),
            ("hammer_workgroup", |g| g / WORKGROUP),
            ("hammer_agent", |_| 0),
            ("hammer_system", |_| 0),
        ];
        for (name, instance) in scopes {
            let slots = (0..ITEMS).map(instance).max().unwrap_or(0) as usize + 1;
            let kernel = lib.kernel(name).expect("kernel");
            let mut buf = host_pool(&system)
                .alloc_host::<u64>(slots * SLOT_WORDS)
                .expect("alloc");
            let start: Vec<u64> = (0..slots).flat_map(|_| START).collect();
            buf.write(0, &start).expect("init");
            let mut args = kernel.kernargs().expect("kernargs");
            args.set(0usize, DevicePtr(buf.address()))
                .and_then(|a| a.set(1usize, ITERATIONS as u32))
                .expect("arguments");
            run(&gpu, &kernel, ITEMS as u32, WORKGROUP as u16, &args);
            let got = buf.to_vec().expect("read back");
            // The CPU reference, slot by slot.
            let mut want: Vec<u64> = start.clone();
            for g in 0..ITEMS {
                let s = instance(g) as usize * SLOT_WORDS;
                want[s] += ITERATIONS;
                want[s + 1] += ITERATIONS;
                want[s + 2] = want[s + 2].max(g);
                want[s + 3] |= 1 << (g % 64);
            }
            assert_eq!(got, want, "{}: {name}", gpu.info().name);
            eprintln!("{}: {name}: {slots} slots exact", gpu.info().name);
        }
    }
}

#[test]
fn signal_operations_return_the_old_values_and_post_the_event() {
    let system = announced_system();
    const EVENT_ID: u32 = 0x00AB_CDEF;
    for gpu in hsa_gpus(&system) {
        let lib = load_device_crate(&gpu, TEST_KERNELS);
        let kernel = lib.kernel("signal_ops").expect("signal_ops");
        let pool = host_pool(&system);
        // A device-only signal: plain memory holding an amd_signal_t.
        let mut mailbox = pool.alloc_host::<u64>(1).expect("mailbox");
        mailbox.write(0, &[0x5555]).expect("poison mailbox");
        let mut signal = AmdSignal::user(10);
        signal.event_mailbox_ptr = mailbox.address();
        signal.event_id = EVENT_ID;
        let mut memory = pool.alloc_host::<u8>(64).expect("signal memory");
        memory.write(0, signal.as_bytes()).expect("signal");
        let mut out = pool.alloc_host::<i64>(11).expect("out");
        out.write(0, &[0x7777; 11]).expect("poison");
        let mut args = kernel.kernargs().expect("kernargs");
        args.set("signal", DevicePtr(memory.address()))
            .and_then(|a| a.set("out", DevicePtr(out.address())))
            .expect("arguments");
        run(&gpu, &kernel, 64, 64, &args);
        // By hand from 10: +5, -3, &0xff, |0x100, ^3, exchange 42, a cas
        // expecting 0 that fails, a cas 42 -> 7, load, store -1, load.
        let want = [10, 15, 12, 12, 0x10c, 0x10f, 42, 42, 7, 0, -1];
        assert_eq!(out.to_vec().expect("out"), want, "{}", gpu.info().name);
        assert_eq!(
            mailbox.to_vec().expect("mailbox"),
            [u64::from(EVENT_ID)],
            "{}: the event id is posted to the mailbox",
            gpu.info().name
        );
    }
}

#[test]
fn a_dispatch_enqueued_by_device_code_runs_and_wakes_the_host() {
    let system = announced_system();
    const LEN: usize = 1000;
    for gpu in hsa_gpus(&system) {
        let lib = device_library(&gpu);
        let fill = lib.kernel("fill_u32").expect("fill_u32");
        let enqueue = lib.kernel("enqueue_dispatch").expect("enqueue_dispatch");
        let pool = host_pool(&system);
        let mut dst = pool.alloc_host::<u32>(LEN + 16).expect("dst");
        dst.write(0, &vec![u32::POISON; LEN + 16]).expect("poison");
        // fill_u32's arguments, in a kernarg buffer the device packet names.
        let mut fill_args = fill.kernargs().expect("kernargs");
        fill_args
            .set("dst", &dst)
            .and_then(|a| a.set("len", LEN as u64))
            .and_then(|a| a.set("value", 0x600D_F00D_u32))
            .expect("fill arguments");
        let mut kernargs = pool
            .alloc_host::<u8>(fill_args.bytes().len())
            .expect("kernarg buffer");
        kernargs.write(0, fill_args.bytes()).expect("kernargs");
        // The target queue, and the queue the enqueuing kernel runs on.
        let target = gpu.create_queue(QUEUE_SIZE).expect("target queue");
        let done = Signal::new(&system, 1).expect("completion signal");
        let mut status = pool.alloc_host::<u64>(1).expect("status");
        status.write(0, &[0x5555]).expect("poison");
        let mut args = enqueue.kernargs().expect("kernargs");
        args.set("queue", DevicePtr(target.address()))
            .and_then(|a| a.set("kernel_object", fill.object()))
            .and_then(|a| a.set("kernarg_address", kernargs.address()))
            .and_then(|a| a.set("grid_size", 256u32))
            .and_then(|a| a.set("workgroup_size", 64u32))
            .and_then(|a| a.set("group_segment_size", fill.group_segment_size()))
            .and_then(|a| a.set("completion_signal", done.handle().0))
            .and_then(|a| a.set("status", DevicePtr(status.address())))
            .expect("arguments");
        run(&gpu, &enqueue, 64, 64, &args);
        assert_eq!(status.to_vec().expect("status"), [0], "the first packet id");
        // The host waits on the signal the device-built packet names.
        done.wait(
            SignalCondition::EQ,
            0,
            TIMEOUT,
            aqueduct::WaitOrder::Acquire,
        )
        .expect("the device-enqueued dispatch completes");
        let mut want = vec![0x600D_F00D_u32; LEN];
        want.extend([u32::POISON; 16]);
        assert_eq!(dst.to_vec().expect("dst"), want, "{}", gpu.info().name);
    }
}

#[test]
fn device_enqueue_into_a_full_ring_loses_no_packet() {
    let system = announced_system();
    const RING: u32 = 64;
    const WAVES: u64 = 8;
    const PER_WAVE: u32 = 40;
    let total = WAVES * u64::from(PER_WAVE);
    for gpu in hsa_gpus(&system) {
        let lib = load_device_crate(&gpu, TEST_KERNELS);
        let kernel = lib.kernel("enqueue_barriers").expect("enqueue_barriers");
        let target = gpu.create_queue(RING).expect("small queue");
        let done = Signal::new(&system, total as i64).expect("completion");
        let mut ids = host_pool(&system)
            .alloc_host::<u64>(WAVES as usize)
            .expect("ids");
        ids.write(0, &[0x5555; WAVES as usize]).expect("poison");
        let mut args = kernel.kernargs().expect("kernargs");
        args.set("queue", DevicePtr(target.address()))
            .and_then(|a| a.set("per_wave", PER_WAVE))
            .and_then(|a| a.set("completion", done.handle().0))
            .and_then(|a| a.set("ids", DevicePtr(ids.address())))
            .expect("arguments");
        // 8 waves in 4 workgroups, 320 packets through a ring of 64.
        run(&gpu, &kernel, (WAVES * 64) as u32, 128, &args);
        assert_eq!(
            ids.to_vec().expect("ids"),
            vec![u64::from(PER_WAVE); WAVES as usize],
            "{}: every wave submitted all its packets",
            gpu.info().name
        );
        done.wait(
            SignalCondition::EQ,
            0,
            TIMEOUT,
            aqueduct::WaitOrder::Acquire,
        )
        .expect("every packet completes");
        eprintln!(
            "{}: {total} device-enqueued packets through a ring of {RING}",
            gpu.info().name
        );
    }
}
