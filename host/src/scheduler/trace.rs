//! The device trace on the host's side: the scheduler's trace ring
//! ([`TraceRing`]), which the service thread drains as the device asks
//! and every few milliseconds, the records drained so far, and their
//! conversion to the host's clock and to a Chrome/Perfetto trace.
//!
//! ```text
//!   device  ── reserve (write_index), write, header last (release)
//!   drain   ── records in order up to the first header still 0; zero each
//!              header, then read_index := past them (release)
//!   clock   ── one tick timed on the host at start: its record's middle is
//!              the host window's middle (error: half the window)
//! ```

use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use aqueduct_abi::atomic::{Acquire, Relaxed, Release, System};
use aqueduct_abi::scheduler::{TraceKind, TraceRecord, TraceRing};
use aqueduct_abi::view::View;
use zerocopy::{FromZeros, IntoBytes};

use crate::error::Result;
use crate::memory::{HostBuffer, MemoryPool};

/// A device's trace ring and what the host drained from it.
pub(super) struct Trace {
    /// The [`TraceRing`], then its records.
    memory: HostBuffer<u8>,
    records: Mutex<Vec<TraceRecord>>,
    /// A host instant and the device timestamp at the same moment (the
    /// middle of the first tick, taken against the host's clock around
    /// it), and half the window that bounds the error.
    pub(super) epoch: OnceLock<(Instant, u64, Duration)>,
}

impl Trace {
    /// A ring of `records` records (a power of two, checked by the
    /// caller) in `pool`, empty.
    pub(super) fn new(pool: &MemoryPool, records: u32) -> Result<Self> {
        let bytes = size_of::<TraceRing>() + size_of::<TraceRecord>() * records as usize;
        let mut memory = pool.alloc_host::<u8>(bytes)?;
        memory.fill(0);
        let mut ring = TraceRing::new_zeroed();
        ring.base = memory.address() + size_of::<TraceRing>() as u64;
        ring.capacity = u64::from(records);
        ring.timestamp_frequency = aqueduct_abi::gfx::REALTIME_HZ;
        memory[..size_of::<TraceRing>()].copy_from_slice(ring.as_bytes());
        Ok(Self {
            memory,
            records: Mutex::new(Vec::new()),
            epoch: OnceLock::new(),
        })
    }

    /// The ring's device address (the scheduler state's `trace`).
    pub(super) fn address(&self) -> u64 {
        self.memory.address()
    }

    /// The ring, as its device writers see it.
    fn ring(&self) -> View<'_, TraceRing> {
        // SAFETY: the buffer starts with the TraceRing written in `new`
        // (64-byte aligned, kept by `self`), whose records follow it; the
        // host and the writers keep the ring's protocol (TraceRing's doc).
        unsafe {
            View::from_ptr(NonNull::new_unchecked(
                self.memory.address() as *mut TraceRing
            ))
        }
    }

    /// Moves the published records out of the ring, in order.
    pub(super) fn drain(&self) {
        let mut out = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let ring = self.ring();
        let records = ring.base().get();
        let mut read = ring.read_index().load(Relaxed, System);
        let write = ring.write_index().load(Acquire, System);
        while read < write {
            let slot = records.slot(read);
            // The header is published last, with release, by the writer.
            if slot.header().load(Acquire, System) & 0xffff == 0 {
                break; // reserved, not written yet
            }
            out.push(slot.get());
            slot.header().store(0, Relaxed, System);
            read += 1;
        }
        ring.read_index().store(read, Release, System);
    }

    /// The first record of `kind` drained so far.
    pub(super) fn find(&self, kind: TraceKind) -> Option<TraceRecord> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.iter().find(|r| r.kind() == kind).copied()
    }

    /// The trace drained so far on the host's clock, once the clock is
    /// tied to the device's ([`Trace::epoch`]).
    pub(super) fn snapshot(&self) -> Option<DeviceTrace> {
        self.drain();
        let &(epoch, at, error) = self.epoch.get()?;
        let hz = aqueduct_abi::gfx::REALTIME_HZ as f64;
        let to_host = |ts: u64| (ts as f64 - at as f64) / hz;
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        Some(DeviceTrace {
            epoch,
            error,
            dropped: self.ring().dropped().load(Acquire, System),
            events: records
                .iter()
                .map(|r| TraceEvent {
                    kind: r.kind(),
                    id: r.id,
                    flags: r.flags(),
                    start: to_host(r.start_ts),
                    end: to_host(r.end_ts),
                })
                .collect(),
        })
    }
}

/// A device trace on the host's clock ([`PhysicalDevice::trace`](super::PhysicalDevice::trace)).
#[derive(Clone, Debug)]
pub struct DeviceTrace {
    /// The host instant the events' times count from.
    pub epoch: Instant,
    /// How far off the device-to-host correlation may be: half the host's
    /// window around the calibrating tick.
    pub error: Duration,
    /// Records the device could not write (ring full).
    pub dropped: u64,
    /// The records, in the order the device wrote them.
    pub events: Vec<TraceEvent>,
}

/// One record: seconds from [`DeviceTrace::epoch`] on the host's clock
/// (negative before it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceEvent {
    /// What the record describes: a tick, an issue, a retire, a block.
    pub kind: TraceKind,
    /// The tick's number, or the entry's id.
    pub id: u64,
    /// Of a tick: the entries it accepted.
    pub flags: u16,
    /// When it began, seconds from the epoch.
    pub start: f64,
    /// When it ended, seconds from the epoch (`start` for a point event).
    pub end: f64,
}

impl DeviceTrace {
    /// The Chrome trace-event JSON of the trace (microseconds): ticks as
    /// complete events on track 1, entries from issue to retire on track 2
    /// (an entry not retired yet as an instant at its issue).
    pub fn chrome_json(&self, device: &str) -> String {
        use std::fmt::Write as _;
        let us = |s: f64| s * 1e6;
        let device: String = device
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let mut events = vec![
            format!(
                r#"{{"ph":"M","name":"process_name","pid":1,"args":{{"name":"{device} device scheduler"}}}}"#
            ),
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"scheduler ticks"}}"#
                .to_string(),
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"queue entries"}}"#
                .to_string(),
        ];
        let retired: std::collections::HashMap<u64, f64> = self
            .events
            .iter()
            .filter(|e| e.kind == TraceKind::RETIRE)
            .map(|e| (e.id, e.start))
            .collect();
        for e in &self.events {
            let mut s = String::new();
            let _ = match (e.kind, retired.get(&e.id)) {
                (TraceKind::SCHEDULER_TICK, _) => write!(
                    s,
                    r#"{{"ph":"X","name":"tick {}","cat":"scheduler","pid":1,"tid":1,"ts":{:.3},"dur":{:.3},"args":{{"accepted":{}}}}}"#,
                    e.id,
                    us(e.start),
                    us(e.end - e.start),
                    e.flags
                ),
                (TraceKind::ISSUE, Some(&end)) => write!(
                    s,
                    r#"{{"ph":"X","name":"entry {}","cat":"entry","pid":1,"tid":2,"ts":{:.3},"dur":{:.3}}}"#,
                    e.id,
                    us(e.start),
                    us((end - e.start).max(0.0))
                ),
                (TraceKind::ISSUE, None) => write!(
                    s,
                    r#"{{"ph":"i","s":"t","name":"entry {} issued","cat":"entry","pid":1,"tid":2,"ts":{:.3}}}"#,
                    e.id,
                    us(e.start)
                ),
                (TraceKind::BLOCK, _) => write!(
                    s,
                    r#"{{"ph":"i","s":"t","name":"block {} of entry {}","cat":"block","pid":1,"tid":2,"ts":{:.3}}}"#,
                    e.flags,
                    e.id,
                    us(e.start)
                ),
                _ => continue,
            };
            events.push(s);
        }
        format!(
            r#"{{"traceEvents":[{}],"displayTimeUnit":"ms","otherData":{{"dropped":{},"clock_error_us":{:.3}}}}}"#,
            events.join(","),
            self.dropped,
            self.error.as_secs_f64() * 1e6
        )
    }
}
