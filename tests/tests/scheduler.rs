//! The device scheduler end to end: entries submitted to a
//! `PhysicalDevice`'s mailbox, accepted, ordered by timeline semaphores and issued
//! by the device's tick (`sched_tick`), retired by their command buffer's
//! RETURN — through the HSA C ABI, on ROCr with a GPU, else on the
//! simulator's runtime (an MI300X and an MI210). Outputs are poisoned
//! first.

use std::time::Duration;

use aqueduct::command_buffer::BufferRef;
use aqueduct::scheduler::PhysicalDeviceOptions;
use aqueduct::{CommandBuffer, CommandBufferBuilder, Error, HostBuffer, PhysicalDevice, Semaphore};
use aqueduct_tests::{announced_system, device_library, host_pool, hsa_gpus};

mod scheduler_common;
use scheduler_common::*;

/// A chain of N entries, entry k copying link k to link k + 1 once the
/// semaphore reaches k and advancing it to k + 1: one submit burst, one
/// host wait; every link ends up holding the pattern only if every entry
/// ran after the one before it.
#[test]
fn a_chain_of_dependent_entries_completes_with_one_host_wait() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let (device, queue, buffer) = scheduler_on(&gpu);
        for n in [1u64, 10, 1000] {
            let (links, pattern) = chain_buffer(&host, n);
            let sem = device.semaphore(0).expect("semaphore");
            let before = device.stats();
            // One burst: the small chains' entries announced one by one,
            // the long one's as a batch.
            let mut batch = queue.batch();
            for k in 0..n {
                let waits: Vec<_> = if k == 0 { vec![] } else { vec![(&sem, k)] };
                let (table, signal) = (link(&links, k, k + 1), [(&sem, k + 1)]);
                if n < 1000 {
                    queue.execute(&waits, &buffer, &table, &signal)
                } else {
                    batch.execute(&waits, &buffer, &table, &signal)
                }
                .unwrap_or_else(|e| panic!("{gfx}: submit {k}: {e}"));
            }
            batch.submit().expect("submit the batch");
            sem.wait(n, TIMEOUT)
                .unwrap_or_else(|e| panic!("{gfx}: chain of {n}: {e}"));
            assert_eq!(sem.query().expect("query"), n);
            for (k, l) in links.chunks(LINK as usize).enumerate() {
                assert_eq!(l, &pattern[..], "{gfx}: chain of {n}, link {k}");
            }
            let after = device.stats();
            let ticks = after.ticks - before.ticks;
            eprintln!("{gfx}: chain of {n}: {ticks} ticks");
            // Every entry is issued by a tick that a retire's wake
            // requested (one per entry after the first) or that the submit
            // did: N + 1 with a batch. Entries announced one by one may
            // each meet a tick that just began: at most 2N. A scheduler
            // enqueuing a tick per request would run about 3N.
            let most = if n < 1000 { 2 * n + 1 } else { n + 1 };
            assert!(ticks <= most, "{gfx}: {ticks} ticks for a chain of {n}");
            assert_eq!(after.submitted - before.submitted, n);
        }
        // Across queues: with two execution queues the tick deals the
        // links out in turn, so each waits for one on the other queue.
        let options = PhysicalDeviceOptions {
            execution_queues: 2,
            ..PhysicalDeviceOptions::default()
        };
        let two = device_with(&gpu, options);
        let (links, pattern) = chain_buffer(&host, 10);
        let sem = two.semaphore(0).expect("semaphore");
        let two_queue = two.queue();
        let mut batch = two_queue.batch();
        for k in 0..10 {
            let (table, signal) = (link(&links, k, k + 1), [(&sem, k + 1)]);
            batch
                .execute(&[(&sem, k)], &buffer, &table, &signal)
                .expect("submit");
        }
        batch.submit().expect("submit");
        sem.wait(10, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: chain across two queues: {e}"));
        for (k, l) in links.chunks(LINK as usize).enumerate() {
            assert_eq!(l, &pattern[..], "{gfx}: two queues, link {k}");
        }
    }
}

/// Entries that wait for 3, 1 and 2, submitted in that order, run in
/// dependency order once the host signals 1; a wait for a value nobody
/// signals times out naming the semaphore and the value.
#[test]
fn out_of_order_waits_run_in_dependency_order_and_a_missing_signal_times_out() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let (device, queue, buffer) = scheduler_on(&gpu);
        let (links, pattern) = chain_buffer(&host, 3);
        let sem = device.semaphore(0).expect("semaphore");
        // Link 2 → 3 waits for 3, link 0 → 1 for 1, link 1 → 2 for 2.
        for (from, wait) in [(2u64, 3u64), (0, 1), (1, 2)] {
            queue
                .execute(
                    &[(&sem, wait)],
                    &buffer,
                    &link(&links, from, from + 1),
                    &[(&sem, wait + 1)],
                )
                .expect("submit");
        }
        // Nothing runs before the host's signal.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(sem.query().expect("query"), 0, "{gfx}");
        assert!(links[LINK as usize..].iter().all(|&b| b == POISON), "{gfx}");
        sem.signal(1).expect("host signal");
        sem.wait(4, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: {e}"));
        for (k, l) in links.chunks(LINK as usize).enumerate() {
            assert_eq!(l, &pattern[..], "{gfx}: link {k}");
        }
        // A barrier entry with nothing to run still orders: it waits for
        // 4 (reached) and signals another semaphore.
        let other = device.semaphore(7).expect("semaphore");
        queue
            .barrier(&[(&sem, 4)], &[(&other, 9)])
            .expect("barrier");
        other.wait(9, TIMEOUT).expect("barrier signalled");
        match sem.wait(10, Duration::from_millis(50)) {
            Err(Error::Timeout {
                what,
                expected,
                observed,
                ..
            }) => {
                assert_eq!(what, format!("semaphore {:#x}", sem.address()));
                assert_eq!((expected, observed), (10, 4));
            }
            other => panic!("{gfx}: a wait for 10 gave {other:?}"),
        }
    }
}

/// A failed semaphore fails the entries waiting for it, which fail the
/// semaphores they would have signalled: the host's wait downstream
/// returns the error instead of hanging.
#[test]
fn a_failure_propagates_to_every_waiter_as_an_error() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let (device, queue, buffer) = scheduler_on(&gpu);
        let (links, _) = chain_buffer(&host, 2);
        let a = device.semaphore(0).expect("semaphore");
        let b = device.semaphore(0).expect("semaphore");
        let c = device.semaphore(0).expect("semaphore");
        queue
            .execute(&[(&a, 1)], &buffer, &link(&links, 0, 1), &[(&b, 1)])
            .expect("submit");
        queue.barrier(&[(&b, 1)], &[(&c, 1)]).expect("barrier");
        a.fail(0x2b).expect("fail");
        match c.wait(1, TIMEOUT) {
            Err(Error::SemaphoreFailed {
                semaphore, status, ..
            }) => assert_eq!((semaphore, status), (c.address(), 0x2b), "{gfx}"),
            other => panic!("{gfx}: the wait downstream gave {other:?}"),
        }
        assert!(matches!(b.query(), Err(Error::SemaphoreFailed { .. })));
        assert!(matches!(a.signal(5), Err(Error::SemaphoreFailed { .. })));
        // The copy never ran.
        assert!(links[LINK as usize..].iter().all(|&x| x == POISON), "{gfx}");
        // The scheduler goes on.
        let d = device.semaphore(0).expect("semaphore");
        queue
            .execute(&[], &buffer, &link(&links, 0, 1), &[(&d, 1)])
            .expect("submit");
        d.wait(1, TIMEOUT).unwrap_or_else(|e| panic!("{gfx}: {e}"));
        assert_eq!(
            &links[LINK as usize..2 * LINK as usize],
            &links[..LINK as usize]
        );
    }
}

/// A kernel that traps in entry 1 of three: its semaphore fails, the
/// barrier waiting for it fails, and the host's wait downstream returns
/// the error naming the entry, the command and the kernel; another
/// scheduler on the same GPU runs on meanwhile, and this one goes on with
/// a new execution queue.
#[test]
fn a_trapped_kernel_fails_its_entry_and_what_follows_and_the_scheduler_goes_on() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let (device, queue, buffer) = scheduler_on(&gpu);
        let (other, other_queue, _) = scheduler_on(&gpu);
        let (trapping, _kept) = trapping_buffer(&gpu, &host);

        let (links, pattern) = chain_buffer(&host, 10);
        let s = device.semaphore(0).expect("semaphore");
        let t = device.semaphore(0).expect("semaphore");
        queue
            .execute(&[], &buffer, &link(&links, 0, 1), &[(&s, 1)])
            .expect("submit");
        let bad = queue
            .execute(&[(&s, 1)], &trapping, &[], &[(&s, 2)])
            .expect("submit");
        queue.barrier(&[(&s, 2)], &[(&t, 1)]).expect("barrier");
        // Meanwhile another scheduler runs a chain.
        let (other_links, other_pattern) = chain_buffer(&host, 9);
        let o = other.semaphore(0).expect("semaphore");
        let mut batch = other_queue.batch();
        for k in 0..9 {
            let table = link(&other_links, k, k + 1);
            batch
                .execute(&[(&o, k)], &buffer, &table, &[(&o, k + 1)])
                .expect("submit");
        }
        batch.submit().expect("submit");
        match t.wait(1, TIMEOUT) {
            Err(Error::SemaphoreFailed {
                semaphore, cause, ..
            }) => {
                assert_eq!(semaphore, t.address(), "{gfx}");
                let cause = cause.unwrap_or_default();
                assert!(cause.contains(&format!("entry {bad}")), "{gfx}: {cause}");
                assert!(cause.contains("trap_on_value"), "{gfx}: {cause}");
            }
            other => panic!("{gfx}: the wait downstream gave {other:?}"),
        }
        // The semaphore the faulted entry would have signalled failed on
        // the host's side (the service thread's recovery): its mirror says
        // so, and a wait returns at once instead of at its timeout.
        let started = std::time::Instant::now();
        assert!(
            matches!(s.wait(2, TIMEOUT), Err(Error::SemaphoreFailed { .. })),
            "{gfx}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{gfx}: the wait hung"
        );
        let why = device.failure(bad).expect("the failure is recorded");
        assert!(why.contains("command 0 of block 0"), "{gfx}: {why}");
        assert!(matches!(s.query(), Err(Error::SemaphoreFailed { .. })));
        o.wait(9, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: the other scheduler: {e}"));
        for (k, l) in other_links.chunks(LINK as usize).enumerate() {
            assert_eq!(l, &other_pattern[..], "{gfx}: the other chain's link {k}");
        }
        assert_eq!(
            &links[..LINK as usize * 2],
            &[&pattern[..], &pattern[..]].concat()[..]
        );
        for (k, l) in links.chunks(LINK as usize).enumerate().skip(2) {
            assert_eq!(l, vec![POISON; LINK as usize], "{gfx}: link {k}");
        }
        // This scheduler goes on, on a new execution queue.
        let u = device.semaphore(0).expect("semaphore");
        queue
            .execute(&[], &buffer, &link(&links, 1, 2), &[(&u, 1)])
            .expect("submit");
        u.wait(1, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: after the fault: {e}"));
        assert_eq!(&links[2 * LINK as usize..3 * LINK as usize], &pattern[..]);
        device.check().expect("the control queue is fine");
    }
}

/// A one-dispatch recording of `trap_on_value` that traps (its element 33
/// is 33), with the buffers it uses (keep them until it has run).
fn trapping_buffer(
    gpu: &aqueduct::agent::Agent,
    host: &aqueduct::MemoryPool,
) -> (CommandBuffer, (HostBuffer<u32>, HostBuffer<u32>)) {
    use aqueduct::Workgroups;
    let kernels = aqueduct_tests::load_device_crate(gpu, "aqueduct-test-kernels");
    let trap = kernels.kernel("trap_on_value").expect("trap_on_value");
    let mut src = host.alloc_host::<u32>(64).expect("alloc");
    let dst = host.alloc_host::<u32>(64).expect("alloc");
    for (k, v) in src.iter_mut().enumerate() {
        *v = k as u32;
    }
    let rq = gpu.create_queue(64).expect("queue");
    let mut b = CommandBufferBuilder::new(&rq, 2).expect("builder");
    let mut args = trap.kernargs().expect("args");
    args.set(0, &src).expect("src");
    args.set(1, &dst).expect("dst");
    args.set(2, 64u64).expect("len");
    args.set(3, 33u32).expect("trap_on");
    b.dispatch(&trap, Workgroups::linear(1, 64), &args)
        .expect("dispatch");
    (b.finish().expect("finish"), (src, dst))
}

/// The scheduler goes on after a fault: an entry copying link 0 to link
/// 1 of `links` completes, and the control queue is fine.
fn goes_on(device: &PhysicalDevice, buffer: &CommandBuffer, links: &HostBuffer<u8>, gfx: &str) {
    let u = device.semaphore(0).expect("semaphore");
    device
        .queue()
        .execute(&[], buffer, &link(links, 0, 1), &[(&u, 1)])
        .expect("submit");
    u.wait(1, TIMEOUT)
        .unwrap_or_else(|e| panic!("{gfx}: after the fault: {e}"));
    device.check().expect("the control queue is fine");
}

/// A one-dispatch recording on `device` of `wait_for_flag`, which holds its
/// queue until the returned flag is set (then traps if `then_trap`), the
/// flag (0), and the code object (keep it while the recording may run).
fn flag_waiter(
    gpu: &aqueduct::agent::Agent,
    host: &aqueduct::MemoryPool,
    device: &PhysicalDevice,
    then_trap: bool,
) -> (CommandBuffer, HostBuffer<u32>, aqueduct::Executable) {
    use aqueduct::Workgroups;
    let kernels = aqueduct_tests::load_device_crate(gpu, "aqueduct-test-kernels");
    let wait = kernels.kernel("wait_for_flag").expect("wait_for_flag");
    let mut flag = host.alloc_host::<u32>(1).expect("alloc");
    flag[0] = 0;
    let mut b = device.command_buffer(2).expect("builder");
    let mut args = wait.kernargs().expect("args");
    args.set(0, &flag).expect("flag");
    args.set(1, u32::from(then_trap)).expect("then_trap");
    b.dispatch(&wait, Workgroups::linear(1, 64), &args)
        .expect("dispatch");
    (b.finish().expect("finish"), flag, kernels)
}

/// Sets a flag a `wait_for_flag` kernel is waiting on.
fn set_flag(flag: &mut HostBuffer<u32>) {
    // SAFETY: a live u32 the kernel loads atomically.
    unsafe { std::sync::atomic::AtomicU32::from_ptr(flag.as_mut_ptr()) }
        .store(1, std::sync::atomic::Ordering::Release);
}

/// Two execution queues: the tick deals entries out in turn, so an entry
/// runs while an independent one before it holds the other queue (with
/// one queue it waits behind it); when the holding kernel then traps, the
/// host replaces that queue alone and both queues take entries again.
#[test]
fn with_two_execution_queues_independent_entries_run_side_by_side() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        for queues in [2, 1] {
            let options = PhysicalDeviceOptions {
                execution_queues: queues,
                ..PhysicalDeviceOptions::default()
            };
            let device = device_with(&gpu, options);
            let queue = device.queue();
            let (_, _, buffer) = scheduler_on(&gpu);
            let trap = queues == 2;
            let (holding, mut flag, _kernels) = flag_waiter(&gpu, &host, &device, trap);
            let (links, pattern) = chain_buffer(&host, 1);
            let (a, b) = (
                device.semaphore(0).expect("sem"),
                device.semaphore(0).expect("sem"),
            );
            queue
                .execute(&[], &holding, &[], &[(&a, 1)])
                .expect("submit");
            queue
                .execute(&[], &buffer, &link(&links, 0, 1), &[(&b, 1)])
                .expect("submit");
            let second = b.wait(
                1,
                Duration::from_millis(if queues == 2 { 60_000 } else { 300 }),
            );
            if queues == 2 {
                second.unwrap_or_else(|e| panic!("{gfx}: the second entry: {e}"));
                assert_eq!(&links[LINK as usize..], &pattern[..], "{gfx}");
                assert_eq!(a.query().expect("query"), 0, "{gfx}: the first still holds");
            } else {
                assert!(
                    matches!(second, Err(Error::Timeout { .. })),
                    "{gfx}: one queue: the second entry ran beside the first ({second:?})"
                );
            }
            set_flag(&mut flag);
            b.wait(1, TIMEOUT).expect("the second entry");
            if !trap {
                a.wait(1, TIMEOUT).expect("the first entry");
                continue;
            }
            assert!(
                matches!(a.wait(1, TIMEOUT), Err(Error::SemaphoreFailed { .. })),
                "{gfx}: the trapping entry"
            );
            // Four more, dealt to both queues in turn (the new one and the
            // other): every one runs.
            for _ in 0..4 {
                goes_on(&device, &buffer, &links, &gfx);
            }
        }
    }
}

/// A kernel that faults while the tick waits for room in the full
/// execution queue it runs on: the queue never frees a slot again, so the
/// tick gives up that wait when the host replaces the queue and issues the
/// rest on the new one. The kernel (`wait_for_flag`) holds the queue until
/// the trace shows the tick stuck, then traps. Every entry ends, completed
/// or failed, none hangs, and the scheduler goes on.
#[test]
fn a_fault_while_the_tick_waits_for_room_in_the_full_queue_is_recovered() {
    use aqueduct_abi::scheduler::TraceKind;
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let options = PhysicalDeviceOptions {
            queue_size: gpu.info().queue_min_size,
            trace_records: 1024,
            ..PhysicalDeviceOptions::default()
        };
        let device = device_with(&gpu, options);
        let queue = device.queue();
        let (_, _, buffer) = scheduler_on(&gpu);
        let (trapping, mut flag, _kernels) = flag_waiter(&gpu, &host, &device, true);
        // Two packets or more each: more than the queue holds.
        const N: u64 = 100;
        let (links, _) = chain_buffer(&host, N);
        let sems: Vec<Semaphore> = (0..=N)
            .map(|_| device.semaphore(0).expect("semaphore"))
            .collect();
        let mut batch = queue.batch();
        batch
            .execute(&[], &trapping, &[], &[(&sems[0], 1)])
            .expect("submit");
        for k in 0..N {
            let table = link(&links, k, k + 1);
            batch
                .execute(&[], &buffer, &table, &[(&sems[k as usize + 1], 1)])
                .expect("submit");
        }
        batch.submit().expect("submit");
        // The tick issues until the queue is full, then waits for room:
        // the issues stop (for 200 ms) short of N + 1.
        let issues = || {
            let t = device.trace().expect("tracing is on");
            t.events
                .iter()
                .filter(|e| e.kind == TraceKind::ISSUE)
                .count() as u64
        };
        let (start, mut seen, mut since) =
            (std::time::Instant::now(), 0, std::time::Instant::now());
        while since.elapsed() < Duration::from_millis(200) {
            assert!(start.elapsed() < TIMEOUT, "{gfx}: the issues never stopped");
            let now = issues();
            if now != seen || now == 0 {
                (seen, since) = (now, std::time::Instant::now());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(seen < N + 1, "{gfx}: all {seen} entries fit in the queue");
        set_flag(&mut flag);
        let (mut done, mut failed) = (0, 0);
        for (k, s) in sems.iter().enumerate() {
            match s.wait(1, TIMEOUT) {
                Ok(()) => done += 1,
                Err(Error::SemaphoreFailed { .. }) => failed += 1,
                Err(e) => panic!("{gfx}: entry {k}: {e}"),
            }
        }
        eprintln!(
            "{gfx}: {seen} entries issued before the fault; {done} completed, {failed} failed \
             with the queue"
        );
        assert!(
            matches!(sems[0].query(), Err(Error::SemaphoreFailed { .. })),
            "{gfx}: the trapping entry"
        );
        // The ones the tick could not put on the queue ran on the new one.
        assert!(done >= N + 1 - seen, "{gfx}");
        assert_eq!(done + failed, N + 1, "{gfx}");
        goes_on(&device, &buffer, &links, &gfx);
    }
}

/// More entries than the mailbox, the kernarg ring and the execution
/// queue hold at once: the submitter waits for the scheduler to reclaim,
/// and every entry completes (each copies its own link, counted).
#[test]
fn back_pressure_waits_and_loses_nothing() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let options = PhysicalDeviceOptions {
            entries: 8,
            kernarg_bytes: 4096,
            queue_size: 64,
            ..PhysicalDeviceOptions::default()
        };
        let device = device_with(&gpu, options);
        let queue = device.queue();
        let (_, _, buffer) = scheduler_on(&gpu);
        const N: u64 = 200;
        let (links, pattern) = chain_buffer(&host, N);
        let done = device.semaphore(0).expect("semaphore");
        let gate = device.semaphore(0).expect("semaphore");
        for k in 0..N {
            // Every entry copies link 0 to its own; every fourth waits for
            // the gate, which the host opens a little later.
            let waits: Vec<_> = if k % 4 == 0 && k < 40 {
                vec![(&gate, 1)]
            } else {
                vec![]
            };
            queue
                .execute(&waits, &buffer, &link(&links, 0, k + 1), &[(&done, k + 1)])
                .unwrap_or_else(|e| panic!("{gfx}: entry {k}: {e}"));
            if k == 3 {
                gate.signal(1).expect("open the gate");
            }
        }
        done.wait(N, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: {e}"));
        // `done` reached N when the last signalled; wait for all copies.
        let deadline = std::time::Instant::now() + TIMEOUT;
        while links.chunks(LINK as usize).any(|l| l != &pattern[..]) {
            assert!(
                std::time::Instant::now() < deadline,
                "{gfx}: copies missing"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let stats = device.stats();
        assert_eq!(stats.submitted, N, "{gfx}");
        // The mailbox holds 8: all but the last few were reclaimed on the
        // way.
        assert!(stats.reclaimed >= N - 8, "{gfx}: {stats:?}");
    }
}

/// Entries on two devices of a logical device (`amdgpu://0,1`: the two
/// simulated GPUs; on one GPU, `amdgpu://0,0`: two schedulers on it) wait
/// for each other's semaphore values in turn: a chain that crosses
/// between them at every step.
#[test]
fn cross_device_waits_alternate_between_two_schedulers() {
    let system = announced_system();
    let host = host_pool(&system);
    let gpus = hsa_gpus(&system);
    let spec = if gpus.len() > 1 {
        "amdgpu://0,1"
    } else {
        "amdgpu://0,0"
    };
    let logical =
        aqueduct::LogicalDevice::open(&system, spec, PhysicalDeviceOptions::default(), |agent| {
            Ok(device_library(agent))
        })
        .expect("logical device");
    let [a, b] = logical.devices() else {
        panic!("{spec} selected {} devices", logical.devices().len());
    };
    if gpus.len() > 1 {
        assert_ne!(a.agent().handle(), b.agent().handle(), "two GPUs");
    }
    let record = |d: &PhysicalDevice| {
        let mut r = d.command_buffer(2).expect("builder");
        r.copy(
            BufferRef::binding(0, 0, LINK),
            BufferRef::binding(1, 0, LINK),
        )
        .expect("copy");
        r.finish().expect("finish")
    };
    let (a_queue, a_buffer) = (a.queue(), record(a));
    let (b_queue, b_buffer) = (b.queue(), record(b));
    const N: u64 = 20;
    let (links, pattern) = chain_buffer(&host, N);
    let sem = a.semaphore(0).expect("semaphore");
    for k in 0..N {
        let table = link(&links, k, k + 1);
        let (queue, buffer) = if k % 2 == 0 {
            (&a_queue, &a_buffer)
        } else {
            (&b_queue, &b_buffer)
        };
        queue
            .execute(&[(&sem, k)], buffer, &table, &[(&sem, k + 1)])
            .expect("submit");
    }
    sem.wait(N, TIMEOUT).expect("the crossing chain");
    for (k, l) in links.chunks(LINK as usize).enumerate() {
        assert_eq!(l, &pattern[..], "link {k}");
    }
}

/// With tracing on, a chain of 10 entries leaves one tick record per tick
/// and an issue and a retire per entry, on the host's clock (between the
/// device's creation and now, issue before retire, each entry after the
/// one it waited for), and a Chrome trace file with those spans.
/// A new device on `gpu` tracing into a ring of `records`, with a chain
/// of `n` links submitted as one batch: entry k waits for the semaphore's
/// value k and signals k + 1 (the first runs at once). Returns the device,
/// the semaphore, the links and the pattern each link must end up with.
fn traced_chain(
    gpu: &aqueduct::agent::Agent,
    host: &aqueduct::MemoryPool,
    records: u32,
    n: u64,
) -> (PhysicalDevice, Semaphore, HostBuffer<u8>, Vec<u8>) {
    let options = PhysicalDeviceOptions {
        trace_records: records,
        ..PhysicalDeviceOptions::default()
    };
    let device = device_with(gpu, options);
    let (_, _, buffer) = scheduler_on(gpu);
    let queue = device.queue();
    let (links, pattern) = chain_buffer(host, n);
    let sem = device.semaphore(0).expect("semaphore");
    let mut batch = queue.batch();
    for k in 0..n {
        let (table, signal) = (link(&links, k, k + 1), [(&sem, k + 1)]);
        batch
            .execute(&[(&sem, k)], &buffer, &table, &signal)
            .expect("submit");
    }
    batch.submit().expect("submit");
    (device, sem, links, pattern)
}

/// The device's trace once it holds `records` records, collected or
/// counted dropped (or after TIMEOUT), and 20 ms more, so that a record
/// written past the count shows: the caller checks it holds exactly
/// `records`. The tick that retires the last entry writes its own record
/// when it ends, which can be after the entry's semaphore signal and
/// release (a CI run saw 160 of 161 right after them).
fn trace_of(device: &PhysicalDevice, records: u64) -> aqueduct::scheduler::DeviceTrace {
    let start = std::time::Instant::now();
    loop {
        let t = device.trace().expect("tracing is on");
        if t.events.len() as u64 + t.dropped >= records || start.elapsed() > TIMEOUT {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
    device.trace().expect("tracing is on")
}

#[test]
fn a_traced_chain_records_its_ticks_and_entries_on_the_hosts_clock() {
    use aqueduct::scheduler::TraceEvent;
    use aqueduct_abi::scheduler::TraceKind;
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let created = std::time::Instant::now();
        const N: u64 = 10;
        // The links stay alive (bound) until the chain is done.
        let (device, sem, _links, _) = traced_chain(&gpu, &host, 1024, N);
        sem.wait(N, TIMEOUT).expect("chain");
        // The ticks, an issue, a block and a retire per entry.
        let trace = trace_of(&device, (N + 1) + 3 * N);
        let done = trace.epoch.elapsed().as_secs_f64();
        let since = created.elapsed().as_secs_f64();
        assert_eq!(trace.dropped, 0, "{gfx}");
        let of =
            |kind| -> Vec<&TraceEvent> { trace.events.iter().filter(|e| e.kind == kind).collect() };
        // The calibrating tick, the one that accepts the chain, and one
        // per wake.
        assert_eq!(of(TraceKind::SCHEDULER_TICK).len() as u64, N + 1, "{gfx}");
        let slack = trace.error.as_secs_f64() + 1e-3;
        for e in &trace.events {
            assert!(e.start <= e.end, "{gfx}: {e:?}");
            assert!(
                e.start >= done - since - slack && e.end <= done + slack,
                "{gfx}: {e:?} outside the device's life"
            );
        }
        let issued = of(TraceKind::ISSUE);
        let retired = of(TraceKind::RETIRE);
        let blocks = of(TraceKind::BLOCK);
        assert_eq!((issued.len() as u64, retired.len() as u64), (N, N), "{gfx}");
        // One block each: it begins (the entry starts, on the execution
        // queue) after the tick issued it and before it retires.
        assert_eq!(blocks.len() as u64, N, "{gfx}");
        for k in 0..N {
            let i = issued.iter().find(|e| e.id == k).expect("issued");
            let r = retired.iter().find(|e| e.id == k).expect("retired");
            let b = blocks.iter().find(|e| e.id == k).expect("started");
            assert!(
                i.start <= b.start && b.start <= r.start && b.flags == 0,
                "{gfx}: entry {k}: issue {i:?}, block {b:?}, retire {r:?}"
            );
            if k > 0 {
                let before = retired.iter().find(|e| e.id == k - 1).expect("retired");
                assert!(
                    before.start <= i.start,
                    "{gfx}: entry {k} issued before {} retired",
                    k - 1
                );
            }
        }
        let path =
            std::env::temp_dir().join(format!("aqueduct-trace-{gfx}-{}.json", std::process::id()));
        let written = device.write_trace(&path).expect("write").expect("tracing");
        let json = std::fs::read_to_string(&path).expect("read back");
        std::fs::remove_file(&path).ok();
        assert_eq!(written, trace.events.len());
        assert!(json.starts_with(r#"{"traceEvents":["#), "{gfx}");
        assert_eq!(json.matches(r#""cat":"scheduler""#).count() as u64, N + 1);
        assert_eq!(json.matches(r#""cat":"block""#).count() as u64, N);
        assert_eq!(
            json.matches(r#""name":"entry "#).count() as u64,
            N,
            "{gfx}: {json}"
        );
        assert!(json.ends_with("}"), "{gfx}");
    }
}

/// The host service: each retiring entry posts a RELEASE request to the
/// host's soft queue, so the host lets go of the entry's command buffer
/// and semaphores with no further submit; a trace ring smaller than the
/// run asks for drains as it fills, so the host collects more records than
/// the ring holds, and every record is either collected or counted
/// dropped.
#[test]
fn the_host_service_releases_retired_entries_and_drains_the_trace_on_request() {
    use aqueduct_abi::scheduler::TraceKind;
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        const RING: u64 = 16;
        const N: u64 = 40;
        let (device, sem, links, pattern) = traced_chain(&gpu, &host, RING as u32, N);
        // Nothing released before the chain: the device is new.
        assert_eq!(device.stats().released, 0, "{gfx}");
        // (A chain of 40 ticks cannot have finished yet.)
        assert!(device.stats().held > 0, "{gfx}: nothing held while running");
        sem.wait(N, TIMEOUT).expect("chain");
        for (k, l) in links.chunks(LINK as usize).enumerate() {
            assert_eq!(l, &pattern[..], "{gfx}: link {k}");
        }
        // Released by the device's requests, not by a submit (there is
        // none) nor a reclaim (below).
        let start = std::time::Instant::now();
        let stats = loop {
            let s = device.stats();
            if s.released == N || start.elapsed() > TIMEOUT {
                break s;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(stats.released, N, "{gfx}: released");
        assert_eq!(stats.held, 0, "{gfx}: still held");
        // `released` counts only the device's RELEASE requests the host
        // served, so the releases above were not reclaims. Usually the last
        // slot is not reclaimed either (no tick runs after the last
        // retire), but on a loaded machine the tick that issued the last
        // entry can still be running when that entry retires, and reclaim
        // it: a timing, not a guarantee (a CI run under load saw 40).
        assert!(stats.reclaimed <= N, "{gfx}: reclaimed {}", stats.reclaimed);
        // The calibrating tick, the accepting one, one per wake; an issue,
        // a block and a retire per entry.
        let records = (N + 1) + 3 * N;
        let trace = trace_of(&device, records);
        let stats = device.stats();
        assert!(stats.trace_flushes >= 1, "{gfx}: no drain was asked for");
        assert_eq!(
            trace.events.len() as u64 + trace.dropped,
            records,
            "{gfx}: records collected and dropped"
        );
        assert!(
            trace.events.len() as u64 > RING,
            "{gfx}: {} records collected of {records} ({} dropped, {} drains asked): \
             no more than the ring holds",
            trace.events.len(),
            trace.dropped,
            stats.trace_flushes
        );
        let retires = trace
            .events
            .iter()
            .filter(|e| e.kind == TraceKind::RETIRE)
            .count();
        eprintln!(
            "{gfx}: {} of {records} trace records through a ring of {RING} ({} drains asked, \
             {retires} retires seen)",
            trace.events.len(),
            stats.trace_flushes
        );
    }
}

/// Queue-ordered allocations from the device block pool: an ALLOCA
/// commits a block that a later command fills and copies out, a DEALLOCA
/// gives it back and the next ALLOCA of the bucket takes the same block;
/// the pool grows through the host service up to its capacity, past it an
/// allocation fails with OUT_OF_RESOURCES (not a hang), and a trim gives
/// the free blocks back after which the pool grows again.
#[test]
fn queue_ordered_allocations_come_from_a_device_pool_that_grows_and_trims() {
    use aqueduct::scheduler::PoolStats;
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let options = PhysicalDeviceOptions {
            pool_block_sizes: [4096, 1 << 20],
            pool_blocks: 20,
            ..PhysicalDeviceOptions::default()
        };
        let device = device_with(&gpu, options);
        let queue = device.queue();
        let mut out = host.alloc_host::<u8>(256).expect("alloc");
        out.fill(POISON);
        let sem = device.semaphore(0).expect("semaphore");
        let a = queue.alloca(&[], 256, &[(&sem, 1)]).expect("alloca");
        sem.wait(1, TIMEOUT).expect("alloca");
        let block = a.address().expect("committed");
        let mut b = device.command_buffer(3).expect("builder");
        let pattern = [0x5C, 0x11, 0x22, 0x33];
        b.fill(a.buffer(0, 256), &pattern).expect("fill");
        b.copy(a.buffer(0, 256), BufferRef::direct(out.address(), 256))
            .expect("copy");
        let use_a = b.finish().expect("finish");
        queue
            .execute(&[(&sem, 1)], &use_a, &[], &[(&sem, 2)])
            .expect("execute");
        queue
            .dealloca(&[(&sem, 2)], &a, &[(&sem, 3)])
            .expect("dealloca");
        let again = queue
            .alloca(&[(&sem, 3)], 100, &[(&sem, 4)])
            .expect("alloca");
        let large = queue
            .alloca(&[(&sem, 4)], 5000, &[(&sem, 5)])
            .expect("alloca");
        sem.wait(5, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: {e}"));
        assert_eq!(&out[..], &pattern.repeat(64)[..], "{gfx}");
        assert_eq!(a.address(), None, "{gfx}: deallocated");
        assert_eq!(again.address(), Some(block), "{gfx}: the block is reused");
        let large_block = large.address().expect("committed");
        let stats = device.pool_stats();
        assert_eq!(
            stats,
            [
                PoolStats {
                    block_size: 4096,
                    blocks: 16,
                    free: 15
                },
                PoolStats {
                    block_size: 1 << 20,
                    blocks: 1,
                    free: 0
                },
            ],
            "{gfx}"
        );
        assert!(large_block != block);
        // More than the bucket can hold: 19 more take the small bucket to
        // its 20 blocks, the next fails.
        // First come, first served: the last one fails.
        let each: Vec<Semaphore> = (0..20)
            .map(|_| device.semaphore(0).expect("semaphore"))
            .collect();
        let many: Vec<_> = each
            .iter()
            .map(|s| queue.alloca(&[], 64, &[(s, 1)]).expect("alloca"))
            .collect();
        for (k, s) in each.iter().enumerate() {
            match (k, s.wait(1, TIMEOUT)) {
                (0..19, Ok(())) => assert!(many[k].address().is_some()),
                (19, Err(Error::SemaphoreFailed { status, .. })) => {
                    assert_eq!(status, 0x1008, "{gfx}: OUT_OF_RESOURCES");
                    assert_eq!(many[k].address(), None);
                }
                (k, other) => panic!("{gfx}: allocation {k} gave {other:?}"),
            }
        }
        assert_eq!(device.pool_stats()[0].blocks, 20, "{gfx}");
        assert!(
            device.stats().pool_grows >= 3,
            "{gfx}: {:?}",
            device.stats()
        );
        // Too large for any block: refused before it reaches the device.
        assert!(matches!(
            queue.alloca(&[], 2 << 20, &[]),
            Err(Error::InvalidArgument { .. })
        ));
        // Everything back, then trimmed: the blocks go back to the runtime
        // and the bucket grows again.
        let s3 = device.semaphore(0).expect("semaphore");
        for m in many
            .iter()
            .filter(|m| m.address().is_some())
            .chain([&again, &large])
        {
            queue.dealloca(&[], m, &[(&s3, 1)]).expect("dealloca");
        }
        queue.barrier(&[(&s3, 1)], &[(&s3, 2)]).expect("barrier");
        s3.wait(2, TIMEOUT).expect("deallocas");
        let deadline = std::time::Instant::now() + TIMEOUT;
        while device.pool_stats()[0].free < 20 {
            assert!(std::time::Instant::now() < deadline, "{gfx}: frees");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(device.trim(), 20 * 4096 + (1 << 20), "{gfx}");
        assert_eq!(
            device.pool_stats().map(|p| (p.blocks, p.free)),
            [(0, 0), (0, 0)],
            "{gfx}"
        );
        let s4 = device.semaphore(0).expect("semaphore");
        let last = queue.alloca(&[], 64, &[(&s4, 1)]).expect("alloca");
        s4.wait(1, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: after the trim: {e}"));
        assert!(last.address().is_some());
    }
}

/// Fill, copy and update entries (one-command recordings of the blit
/// kernels) ordered by a semaphore: fill A, copy A to B, update the middle
/// of B; B holds exactly that.
#[test]
fn fill_copy_and_update_entries_run_in_order() {
    let system = announced_system();
    let host = host_pool(&system);
    for gpu in hsa_gpus(&system) {
        let gfx = gpu.info().name.clone();
        let (device, queue, _) = scheduler_on(&gpu);
        let mut a = host.alloc_host::<u8>(256).expect("alloc");
        let mut b = host.alloc_host::<u8>(256).expect("alloc");
        a.fill(POISON);
        b.fill(POISON);
        let (ra, rb) = (
            BufferRef::direct(a.address(), 256),
            BufferRef::direct(b.address(), 256),
        );
        let sem = device.semaphore(0).expect("semaphore");
        queue
            .fill(&[], ra, &[1, 2, 3, 4], &[(&sem, 1)])
            .expect("fill");
        queue
            .copy(&[(&sem, 1)], ra, rb, &[(&sem, 2)])
            .expect("copy");
        queue
            .update(
                &[(&sem, 2)],
                b"scheduled",
                BufferRef::direct(b.address() + 100, 9),
                &[(&sem, 3)],
            )
            .expect("update");
        sem.wait(3, TIMEOUT)
            .unwrap_or_else(|e| panic!("{gfx}: {e}"));
        let mut want: Vec<u8> = [1, 2, 3, 4].repeat(64);
        want[100..109].copy_from_slice(b"scheduled");
        assert_eq!(&b[..], &want[..], "{gfx}");
        // A fill pattern the blit cannot repeat is refused at once.
        assert!(queue.fill(&[], ra, &[1, 2, 3], &[]).is_err(), "{gfx}");
    }
}

/// A device dropped while an entry waits for a semaphore takes the entry
/// off the semaphore's waiter list, so a later signal (the semaphore
/// outlives the device) reaches nothing that is gone.
#[test]
fn dropping_a_device_unhooks_its_waiting_entries() {
    let system = announced_system();
    let gpu = hsa_gpus(&system).remove(0);
    let (device, queue, _) = scheduler_on(&gpu);
    let sem = device.semaphore(0).expect("semaphore");
    let waiters_head = |s: &aqueduct::Semaphore| {
        // SAFETY: the semaphore's live device memory, host-accessible;
        // `waiters_head` is at byte 32 of the shared layout.
        unsafe { std::ptr::read_volatile((s.address() + 32) as *const u64) }
    };
    queue.barrier(&[(&sem, 5)], &[]).expect("barrier");
    let deadline = std::time::Instant::now() + TIMEOUT;
    while waiters_head(&sem) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the entry never waited"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(queue);
    drop(device);
    assert_eq!(waiters_head(&sem), 0, "the waiting entry is unhooked");
    sem.signal(5).expect("signal after the device is gone");
    assert_eq!(sem.query().expect("query"), 5);
}
