//! The scheduler's soak test, alone in its process: it measures the
//! process's memory (RSS), which tests running beside it in the same
//! process would move.

use std::time::Duration;

use aqueduct_tests::{announced_system, host_pool, hsa_gpus};

mod scheduler_common;
use scheduler_common::*;

/// Resident set size of this process, in bytes (Linux; 0 elsewhere). On
/// the simulator the device's memory is part of it.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// 100,000 small entries from 4 host threads (barriers, and every 16th a
/// one-copy command buffer), in bursts: every one completes (each
/// thread's semaphore reaches its count, every copy lands) and the
/// process's memory, device memory included on the simulator, comes back
/// to where it was after a warm-up run.
#[test]
fn soak_100k_entries_from_4_threads_complete_without_leaking() {
    let system = announced_system();
    let host = host_pool(&system);
    let gpu = hsa_gpus(&system).remove(0);
    let (device, queue, buffer) = scheduler_on(&gpu);
    const THREADS: u64 = 4;
    let run = |per_thread: u64| {
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (device, queue, buffer, host) = (&device, &queue, &buffer, &host);
                s.spawn(move || {
                    let sem = device.semaphore(0).expect("semaphore");
                    let copies = per_thread.div_ceil(16);
                    let (links, pattern) = chain_buffer(host, copies);
                    let mut k = 0;
                    while k < per_thread {
                        let mut batch = queue.batch();
                        for _ in 0..500.min(per_thread - k) {
                            let signal = [(&sem, k + 1)];
                            if k % 16 == 0 {
                                let table = link(&links, 0, k / 16 + 1);
                                batch.execute(&[], buffer, &table, &signal)
                            } else {
                                batch.barrier(&[], &signal)
                            }
                            .unwrap_or_else(|e| panic!("thread {t}, entry {k}: {e}"));
                            k += 1;
                        }
                        batch.submit().expect("submit");
                    }
                    // Entries complete in any order; the payload is the
                    // largest value signalled, so wait for the copies too.
                    sem.wait(per_thread, TIMEOUT).expect("thread's entries");
                    let deadline = std::time::Instant::now() + TIMEOUT;
                    while links.chunks(LINK as usize).any(|l| l != &pattern[..]) {
                        assert!(std::time::Instant::now() < deadline, "thread {t}: copies");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                });
            }
        });
    };
    run(2_500);
    let before = rss();
    let submitted = device.stats().submitted;
    run(25_000);
    let after = rss();
    assert_eq!(device.stats().submitted - submitted, 100_000);
    let growth = after.saturating_sub(before);
    eprintln!("RSS {before} -> {after} bytes; {:?}", device.stats());
    // Fixed-size rings: what grows is allocator noise and the threads'
    // link buffers (a few KiB each), not per-entry state.
    assert!(
        growth < 16 << 20,
        "RSS grew by {growth} bytes over 100,000 entries"
    );
}
