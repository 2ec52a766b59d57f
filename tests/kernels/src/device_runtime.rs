//! Kernels that exercise the device library's runtime layer on the
//! simulator: scoped atomics hammered from many waves, signal operations
//! with an event mailbox, and AQL packets enqueued from device code under
//! back-pressure (`tests/tests/device_runtime.rs`).

use aqueduct_device::abi::amd_queue::AmdQueue;
use aqueduct_device::abi::amd_signal::AmdSignal;
use aqueduct_device::abi::hsa::SignalHandle;
use aqueduct_device::abi::packet::{BarrierKind, Ordering as PacketOrdering, barrier};
use aqueduct_device::abi::view::View;
use aqueduct_device::atomic::*;
use aqueduct_device::queue::Queue;
use aqueduct_device::signal::Signal;

use crate::work_item_x;

/// Words per hammered slot: add, compare-exchange increment, max, or.
pub const SLOT_WORDS: usize = 4;

/// Lanes per wave on the CDNA targets these kernels are built for.
const WAVE: u64 = 64;

macro_rules! hammer {
    ($($name:ident: $scope:ident, |$g:ident, $w:ident| $slot:expr;)+) => {$(
        /// Every work-item hammers the slot of its scope's instance
        /// (itself, its wave, its workgroup, or one slot for the agent or
        /// system) `iterations` times at that scope: `fetch_add(1)`, a
        /// compare-exchange loop that increments, then once `fetch_max` of
        /// its global id and `fetch_or` of bit `id % 64`.
        #[unsafe(no_mangle)]
        pub extern "gpu-kernel" fn $name(slots: *mut u64, iterations: u32) {
            let item = work_item_x();
            let ($g, $w) = (item.global_id(), u64::from(item.workgroup_id));
            let slot: u64 = $slot;
            // SAFETY: the test gives one slot of SLOT_WORDS u64 per
            // instance of the scope, accessed only atomically.
            let [add, cas, max, or] = [0, 1, 2, 3].map(|k| unsafe {
                Atomic::from_ptr(slots.add(slot as usize * SLOT_WORDS + k))
            });
            for _ in 0..iterations {
                add.fetch_add(1, Relaxed, $scope);
                let mut seen = cas.load(Relaxed, $scope);
                while let Err(now) = cas.compare_exchange(seen, seen + 1, AcqRel, $scope) {
                    seen = now;
                }
            }
            max.fetch_max($g, Relaxed, $scope);
            or.fetch_or(1 << ($g % 64), Release, $scope);
        }
    )+};
}

hammer! {
    hammer_workitem: WorkItem, |g, _w| g;
    hammer_wavefront: Wavefront, |g, _w| g / WAVE;
    hammer_workgroup: Workgroup, |_g, w| w;
    hammer_agent: Agent, |_g, _w| 0;
    hammer_system: System, |_g, _w| 0;
}

/// Work-item 0 runs a fixed sequence of signal operations on `signal` and
/// writes each result to `out[0..11]`: add 5, sub 3, and 0xff, or 0x100,
/// xor 3, exchange 42, cas 0→9 (fails), cas 42→7, load, store -1, load.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn signal_ops(signal: *mut AmdSignal, out: *mut i64) {
    if work_item_x().global_id() != 0 {
        return;
    }
    // SAFETY: the test gives a live, 64-aligned amd_signal_t (not null),
    // whose mailbox, if any, is live too.
    let s = Signal::new(unsafe { View::at_nonzero(signal as u64) });
    let results = [
        s.add(5, AcqRel, System),
        s.sub(3, Release, Agent),
        s.and(0xff, Relaxed, Agent),
        s.or(0x100, Relaxed, Workgroup),
        s.xor(3, SeqCst, System),
        s.exchange(42, AcqRel, System),
        s.cas(0, 9, AcqRel, System),
        s.cas(42, 7, AcqRel, Agent),
        s.load(Acquire, System),
        {
            s.store(-1, Release, System);
            0
        },
        s.load(Acquire, Agent),
    ];
    for (i, r) in results.into_iter().enumerate() {
        // SAFETY: the test gives `out` eleven i64.
        unsafe { out.add(i).write(r) };
    }
}

/// The first lane of every wave submits `per_wave` barrier-AND packets
/// (no dependencies, completion signal `completion`) to the queue at
/// `queue`, one at a time: reserve (waiting while the ring is full),
/// write, publish, ring. `ids[wave]` receives the number submitted.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn enqueue_barriers(
    queue: *mut AmdQueue,
    per_wave: u32,
    completion: u64,
    ids: *mut u64,
) {
    let item = work_item_x();
    if item.local_id % WAVE as u32 != 0 {
        return;
    }
    let wave = item.global_id() / WAVE;
    // SAFETY: the test passes a live queue (not null) with its ring and
    // doorbell.
    let Ok(q) = Queue::new(unsafe { View::at_nonzero(queue as u64) }) else {
        return;
    };
    let mut done = 0u64;
    for _ in 0..per_wave {
        let Ok(packet) = barrier(
            BarrierKind::And,
            &[],
            SignalHandle(completion),
            PacketOrdering::SYSTEM,
        ) else {
            break;
        };
        if q.submit_barrier(&packet, || core::arch::amdgpu::s_sleep::<1>())
            .is_err()
        {
            break;
        }
        done += 1;
    }
    // SAFETY: the test gives one u64 per wave.
    unsafe { ids.add(wave as usize).write(done) };
}
