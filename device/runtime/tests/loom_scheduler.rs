//! Models of the device scheduler's lock-free protocols
//! (`src/scheduler/`), checked with loom over every interleaving of a
//! few threads. Each model repeats the protocol's steps and orderings on
//! loom's atomics (the scheduler's own code works on raw device addresses,
//! which loom cannot track):
//!
//! - request coalescing with the wake stack: a requester pushes its entry,
//!   then `fetch_or`s the action set and enqueues a tick only if it found
//!   the set empty; a tick exchanges the set for 0, then takes the whole
//!   stack. No entry is left on the stack with no tick to come, and no two
//!   ticks are pending at once for one burst;
//! - the mailbox: the submitter writes an entry, then stores the write
//!   index with release; a tick that sees the index sees the entry;
//! - a wait against a signal: the waiter checks the payload and, under
//!   the semaphore's lock, checks again and registers; the signaller
//!   advances the payload and detaches the waiters under the lock. The
//!   waiter is either told "reached" or woken, never neither;
//! - the kernarg ring: the submitter reserves (the host's
//!   `KernargProducer::reserve` arithmetic) after reading the read offset with
//!   acquire, writes, publishes; the tick reads an entry's bytes, then
//!   releases its range in order (`reclaim`: the read offset, release).
//!   No byte is rewritten while it is being read (loom's cells check).

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use loom::thread;

/// The scheduler's request state: the action set, the wake stack (as a
/// bitmask of pushed entries: a push is an atomic or, a take a swap, as
/// for the Treiber stack whose head exchange they stand for) and the
/// count of ticks enqueued and not yet run.
struct Sched {
    actions: AtomicU32,
    stack: AtomicU64,
    pending_ticks: AtomicU32,
}

impl Sched {
    fn new() -> Self {
        Self {
            actions: AtomicU32::new(0),
            stack: AtomicU64::new(0),
            pending_ticks: AtomicU32::new(0),
        }
    }

    /// `request`: the one that finds the set empty enqueues a tick.
    fn request(&self, bit: u32) {
        if self.actions.fetch_or(bit, AcqRel) == 0 {
            self.pending_ticks.fetch_add(1, AcqRel);
        }
    }

    /// `push_wake` then `request(WAKE)`.
    fn wake(&self, entry: u64) {
        self.stack.fetch_or(1 << entry, Release);
        self.request(2);
    }

    /// One tick, if one is pending: exchange the set, take the stack.
    fn tick(&self) -> Option<u64> {
        let pending = self.pending_ticks.load(Acquire);
        if pending == 0 {
            return None;
        }
        self.pending_ticks.fetch_sub(1, AcqRel);
        self.actions.swap(0, AcqRel);
        Some(self.stack.swap(0, Acquire))
    }
}

#[test]
fn every_woken_entry_is_taken_by_a_tick() {
    loom::model(|| {
        let s = Arc::new(Sched::new());
        let wakers: Vec<_> = (0..2)
            .map(|e| {
                let s = s.clone();
                thread::spawn(move || s.wake(e))
            })
            .collect();
        // The control queue runs ticks as they come, concurrently with the
        // wakers.
        let mut taken = s.tick().unwrap_or(0);
        for w in wakers {
            w.join().unwrap();
        }
        // Then drains: every tick still pending runs.
        while let Some(t) = s.tick() {
            taken |= t;
        }
        assert_eq!(taken, 0b11, "an entry was pushed and never taken");
        assert_eq!(s.stack.load(Relaxed), 0);
        // A tick is pending exactly while the set is non-empty: a set
        // left non-empty with no tick would swallow every later request.
        assert_eq!(s.actions.load(Relaxed), 0);
    });
}

#[test]
fn concurrent_requests_enqueue_one_tick() {
    loom::model(|| {
        let s = Arc::new(Sched::new());
        let threads: Vec<_> = [1u32, 2, 4]
            .into_iter()
            .map(|bit| {
                let s = s.clone();
                thread::spawn(move || s.request(bit))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // No tick ran in between: the three requests coalesce.
        assert_eq!(s.pending_ticks.load(Relaxed), 1);
        assert_eq!(s.actions.load(Relaxed), 7);
    });
}

#[test]
fn a_tick_that_sees_the_write_index_sees_the_entry() {
    loom::model(|| {
        let entry = Arc::new(AtomicU64::new(0));
        let write_index = Arc::new(AtomicU64::new(0));
        let submitter = {
            let (entry, write_index) = (entry.clone(), write_index.clone());
            thread::spawn(move || {
                // The entry's bytes (plain stores on the device; relaxed
                // here), then the index with release.
                entry.store(0xE17, Relaxed);
                write_index.store(1, Release);
            })
        };
        if write_index.load(Acquire) == 1 {
            assert_eq!(entry.load(Relaxed), 0xE17);
        }
        submitter.join().unwrap();
    });
}

/// A semaphore: payload (read without the lock too), the lock, and its
/// waiter list (as a flag: one waiter).
struct Sem {
    payload: AtomicU64,
    lock: AtomicU32,
    waiter: AtomicU32,
}

impl Sem {
    fn lock(&self) {
        while self.lock.compare_exchange(0, 1, Acquire, Relaxed).is_err() {
            thread::yield_now();
        }
    }

    fn unlock(&self) {
        self.lock.store(0, Release);
    }

    /// `add_waiter`: true when reached, false when registered.
    fn add_waiter(&self, value: u64) -> bool {
        if self.payload.load(Acquire) >= value {
            return true;
        }
        self.lock();
        let reached = self.payload.load(Acquire) >= value;
        if !reached {
            self.waiter.store(1, Relaxed);
        }
        self.unlock();
        reached
    }

    /// `signal`: true when it detached (woke) the waiter.
    fn signal(&self, value: u64) -> bool {
        self.lock();
        self.payload.store(value, Release);
        let woke = self.waiter.swap(0, Relaxed) == 1;
        self.unlock();
        woke
    }
}

#[test]
fn a_wait_racing_a_signal_is_reached_or_woken() {
    loom::model(|| {
        let s = Arc::new(Sem {
            payload: AtomicU64::new(0),
            lock: AtomicU32::new(0),
            waiter: AtomicU32::new(0),
        });
        let signaller = {
            let s = s.clone();
            thread::spawn(move || s.signal(1))
        };
        let reached = s.add_waiter(1);
        let woke = signaller.join().unwrap();
        assert!(reached ^ woke, "reached {reached}, woken {woke}");
    });
}

/// The kernarg ring of the scheduler, two 64-byte lines, three entries of
/// a line each: the third reuses the first's line only after the tick
/// released it.
#[test]
fn the_kernarg_ring_reuses_bytes_only_after_the_tick_released_them() {
    const CAP: u64 = 128;
    const ENTRIES: u64 = 3;
    struct Ring {
        /// One word per 64-byte line: the bytes an entry writes.
        lines: [UnsafeCell<u64>; 2],
        /// Each entry's `kernarg_end` (in its mailbox slot).
        ends: [AtomicU64; ENTRIES as usize],
        write_index: AtomicU64,
        read_offset: AtomicU64,
    }
    // SAFETY: the model's threads share it as the device and the host
    // share the ring; loom checks every access to the cells.
    unsafe impl Sync for Ring {}
    loom::model(|| {
        let ring = Arc::new(Ring {
            lines: [UnsafeCell::new(0), UnsafeCell::new(0)],
            ends: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            write_index: AtomicU64::new(0),
            read_offset: AtomicU64::new(0),
        });
        let submitter = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut write = 0;
                for k in 0..ENTRIES {
                    // `KernargProducer::reserve` of 64 bytes, waiting for room.
                    let (start, end) = loop {
                        let read = ring.read_offset.load(Acquire);
                        let at = write % CAP;
                        let start = if at + 64 > CAP {
                            write + (CAP - at)
                        } else {
                            write
                        };
                        if start + 64 - read <= CAP {
                            break (start, start + 64);
                        }
                        thread::yield_now();
                    };
                    let line = &ring.lines[(start % CAP / 64) as usize];
                    // SAFETY: loom checks that nobody reads it meanwhile.
                    line.with_mut(|p| unsafe { *p = 100 + k });
                    ring.ends[k as usize].store(end, Relaxed);
                    ring.write_index.store(k + 1, Release);
                    write = end;
                }
            })
        };
        // The tick: entries in order as they are published; each one's
        // bytes read, then its range released.
        let mut taken = 0;
        while taken < ENTRIES {
            if ring.write_index.load(Acquire) == taken {
                thread::yield_now();
                continue;
            }
            let end = ring.ends[taken as usize].load(Relaxed);
            let line = &ring.lines[((end - 64) % CAP / 64) as usize];
            // SAFETY: loom checks that nobody writes it meanwhile.
            let bytes = line.with(|p| unsafe { *p });
            assert_eq!(bytes, 100 + taken);
            ring.read_offset.store(end, Release);
            taken += 1;
        }
        submitter.join().unwrap();
    });
}
