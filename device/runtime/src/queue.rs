//! AQL queue operations from device code, on the `amd_queue_t` layout of
//! `aqueduct-abi`: reserve packet slots, write bodies, publish headers,
//! ring the doorbell, the producer half of HSA's queue protocol (HSA
//! Platform System Architecture Specification 1.2, section 2.8).
//!
//! ```text
//!   first = write_dispatch_id.fetch_add(n)      reserve n slots
//!   while first + n - read_dispatch_id > size   back-pressure: wait for the
//!       pause()                                 packet processor to consume
//!   slot[id] = body (header INVALID)            bytes 4..64
//!   slot[id].first_word = header | setup        release store: publishes
//!   doorbell = last id                          signal store (wakes the
//!                                               processor)
//! ```
//!
//! The same code runs on the host (where [`aqueduct_abi::atomic`] maps to core
//! atomics), so the ring arithmetic and the protocol are unit-tested with
//! `cargo test`.
//!
//! # Scopes
//!
//! The consumer of a queue is its packet processor, which is not a
//! work-item of any agent: on hardware the command processor reads the
//! ring (in system memory for ROCr's queues) through its own path, and on
//! the simulator it is a host thread. Every queue access here is therefore
//! system scope: the write index and read index as ROCr's own device code
//! (`__ockl_hsa_queue_*`) accesses them, and the header with a system-scope
//! release store so the body is visible to the processor first.

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::aql::{PACKET_SIZE, Packet};
use aqueduct_abi::aql_ring::{doorbell_value, has_room, is_ring_size, slot_offset};
use aqueduct_abi::atomic::{Acquire, Atomic, Relaxed, Release, System};
use aqueduct_abi::global;
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::packet::{BarrierPacket, Prepared};
use aqueduct_abi::view::View;

use crate::signal::Signal;

pub use aqueduct_abi::aql_ring::MAX_QUEUE_PACKETS;

/// Why an enqueue gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// More slots asked for than the ring has: back-pressure would wait
    /// forever.
    TooManySlots { asked: u64, size: u64 },
    /// The ring's size is not a power of two (not a queue), or past
    /// [`MAX_QUEUE_PACKETS`].
    BadSize(u32),
    /// The wait for room was given up ([`Queue::reserve_until`]): the
    /// slots stay reserved and unpublished, so the queue is one nobody
    /// uses any more (a faulted one the host has replaced).
    Abandoned,
}

/// A queue some other party created (the host, with `hsa_queue_create`),
/// used from device code through a view of its `amd_queue_t`.
///
/// The ring's slots are the one part written through raw addresses: a
/// slot's address is the ring's (wave-uniform) base plus a 32-bit offset,
/// which the GPU's global stores take as such ([`aqueduct_abi::global`]);
/// a view of the slot would cost every lane 64-bit address arithmetic.
#[derive(Clone, Copy)]
pub struct Queue<'a> {
    queue: View<'a, AmdQueue>,
    ring: u64,
    size: u64,
    /// The doorbell signal's handle as the queue holds it: ROCr's queues
    /// carry doorbell handles without hint bits
    /// ([`aqueduct_abi::amd_signal::hint`]), and the issue kernel's waves
    /// use it unmasked, as ROCr's device code does.
    doorbell: SignalHandle,
}

impl<'a> Queue<'a> {
    /// The queue of the `amd_queue_t` (equivalently, `hsa_queue_t`) at
    /// `queue`, whose ring and doorbell the view vouches for.
    pub fn new(queue: View<'a, AmdQueue>) -> Result<Self, QueueError> {
        let (size, base, doorbell) = Self::fields(queue);
        if !is_ring_size(size) || size > MAX_QUEUE_PACKETS {
            return Err(QueueError::BadSize(size));
        }
        Ok(Self::from_fields(queue, size, base, doorbell))
    }

    /// The size, ring and doorbell of the queue, with plain loads, for
    /// [`Queue::from_fields`].
    #[inline(always)]
    pub fn fields(queue: View<'a, AmdQueue>) -> (u32, u64, SignalHandle) {
        let hsa = queue.hsa_queue();
        (
            hsa.size().get(),
            hsa.base_address().address(),
            hsa.doorbell_signal().raw(),
        )
    }

    /// The size, ring and doorbell of the queue every active work-item of
    /// the wave names, read as the wave's, with scalar loads
    /// ([`PlainField::load_invariant`](aqueduct_abi::view::PlainField::load_invariant)),
    /// for [`Queue::from_fields`]: branches on them are scalar. For a
    /// queue whose fields nothing writes while the kernel runs (they are
    /// written once, at its creation).
    #[inline(always)]
    pub fn wave_fields(queue: View<'a, AmdQueue>) -> (u32, u64, SignalHandle) {
        let hsa = queue.hsa_queue();
        (
            hsa.size().load_invariant(),
            hsa.base_address().address_invariant(),
            hsa.doorbell_signal().raw_invariant(),
        )
    }

    /// The queue with these fields, as [`Queue::wave_fields`] or
    /// [`Queue::fields`] read them: for a caller that trusts the queue
    /// (its view vouches for a ring of `size` packets, a power of two, as
    /// `hsa_queue_t` documents it) and so skips [`Queue::new`]'s check of
    /// the size.
    #[inline(always)]
    pub fn from_fields(
        queue: View<'a, AmdQueue>,
        size: u32,
        base: u64,
        doorbell: SignalHandle,
    ) -> Self {
        Self {
            queue,
            ring: base,
            size: u64::from(size),
            doorbell,
        }
    }

    /// Ring size in packets.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The packet processor's read index (acquire: the slots before it are
    /// free to overwrite).
    pub fn load_read_index(&self) -> u64 {
        self.queue.read_dispatch_id().load(Acquire, System)
    }

    /// The write index (relaxed).
    pub fn load_write_index(&self) -> u64 {
        self.queue.write_dispatch_id().load(Relaxed, System)
    }

    /// Reserves `n` consecutive slots and waits, calling `pause` between
    /// looks, until the processor has consumed enough for all of them to
    /// be free; returns the first packet id. Every reserved slot must then
    /// be published (a reservation cannot be undone: the processor stops at
    /// the first unpublished slot).
    ///
    /// Call it from one lane of a wave (or reserve for the whole wave at
    /// once): lanes of one wave leave a wait loop together, so a lane whose
    /// slot waits for a slot another lane of the same wave has reserved but
    /// not yet written would wait forever.
    pub fn reserve(&self, n: u64, mut pause: impl FnMut()) -> Result<u64, QueueError> {
        self.reserve_until(n, || {
            pause();
            true
        })
    }

    /// [`Queue::reserve`], giving up ([`QueueError::Abandoned`]) when
    /// `pause` returns false: for a producer that can tell the queue was
    /// abandoned (a faulted queue's processor never frees a slot again).
    pub fn reserve_until(
        &self,
        n: u64,
        mut pause: impl FnMut() -> bool,
    ) -> Result<u64, QueueError> {
        if n > self.size {
            return Err(QueueError::TooManySlots {
                asked: n,
                size: self.size,
            });
        }
        let first = self.queue.write_dispatch_id().fetch_add(n, Relaxed, System);
        while !has_room(first, self.load_read_index(), n, self.size) {
            if !pause() {
                return Err(QueueError::Abandoned);
            }
        }
        Ok(first)
    }

    /// The slot of packet `id`: inside the ring, whose `size` packets the
    /// queue's view vouches for (the index is below `size`).
    fn slot(&self, id: u64) -> *mut u8 {
        (self.ring + slot_offset(id, self.size)) as *mut u8
    }

    /// Writes `body` (whose header must read INVALID) into the slot of
    /// packet `id`, then publishes it with a system-scope release store of
    /// `first_word` (header and setup). `id` must be reserved by the caller
    /// and its slot free ([`Queue::reserve`] guarantees both).
    pub fn write_bytes(&self, id: u64, body: &[u8; PACKET_SIZE], first_word: u32) {
        let slot = self.slot(id);
        // SAFETY: the slot is inside the ring, reserved by this producer
        // and consumed by the processor (reserve waited for the read
        // index), so nobody reads bytes 4..64 until the header below says
        // so. The first word is 64-aligned (slots are) and accessed
        // atomically by producer and processor.
        unsafe {
            core::ptr::copy_nonoverlapping(body.as_ptr().add(4), slot.add(4), PACKET_SIZE - 4);
            Atomic::<u32>::from_ptr(slot.cast()).store(first_word, Release, System);
        }
    }

    /// Writes a packet given as eight little-endian words (the first
    /// holding header, setup and the first body bytes) into the slot of
    /// packet `id` and publishes it (see [`Queue::write_bytes`]).
    pub fn write_words(&self, id: u64, words: &[u64; 8]) {
        // A slot's offset in the ring fits 32 bits (`MAX_QUEUE_PACKETS`):
        // global stores at the ring's (wave-uniform) address plus that
        // offset, with no per-lane 64-bit address arithmetic
        // ([`aqueduct_abi::global`]).
        let offset = ((id as u32) & (self.size as u32 - 1)) << 6;
        let slot = self.ring + u64::from(offset);
        // SAFETY: as in `write_bytes`: the slot is inside the ring (its
        // index is below `size`), reserved by this producer, 64-byte
        // aligned, so every word below is naturally aligned; the first
        // word's upper half is body bytes 4..8, written before the header,
        // which the release store publishes.
        unsafe {
            global::store_u32(slot + 4, (words[0] >> 32) as u32);
            for (k, &w) in words.iter().enumerate().skip(1) {
                global::store_u64(slot + 8 * k as u64, w);
            }
            global::store_release_u32(slot, words[0] as u32);
        }
    }

    /// The device address of packet `id`'s slot.
    pub fn slot_address(&self, id: u64) -> u64 {
        self.slot(id) as u64
    }

    /// Writes bytes 4..64 of `packet`'s body into the slot of packet `id`
    /// and leaves its header INVALID: someone else publishes it later (an
    /// indirect dispatch's patch kernel, with [`Prepared::first_word`]).
    /// `id` must be reserved and its slot free.
    pub fn write_unpublished<P: Packet>(&self, id: u64, packet: &Prepared<P>) {
        let mut body = [0u8; PACKET_SIZE];
        body.copy_from_slice(packet.body.as_bytes());
        let slot = self.slot(id);
        // SAFETY: as in `write_bytes`; the header is not touched, so the
        // processor keeps waiting at this slot.
        unsafe {
            core::ptr::copy_nonoverlapping(body.as_ptr().add(4), slot.add(4), PACKET_SIZE - 4);
        }
    }

    /// Writes and publishes a prepared packet (see [`Queue::write_bytes`]).
    pub fn write<P: Packet>(&self, id: u64, packet: &Prepared<P>) {
        let mut bytes = [0u8; PACKET_SIZE];
        bytes.copy_from_slice(packet.body.as_bytes());
        self.write_bytes(id, &bytes, packet.first_word());
    }

    /// Writes and publishes a barrier-AND or barrier-OR packet.
    pub fn write_barrier(&self, id: u64, packet: &BarrierPacket) {
        self.write_bytes(id, &packet.body_bytes(), packet.first_word());
    }

    /// Rings the doorbell for packets up to `id`: a system-scope release
    /// store of `id` to the doorbell signal (whatever its kind, as ROCr's
    /// device code does it).
    pub fn ring_doorbell(&self, id: u64) {
        // SAFETY: the queue's own doorbell signal, which its view vouches
        // for (a link of the `hsa_queue_t`), named by its handle as ROCr
        // gives it (no hint bits to strip).
        let bell = unsafe { Signal::from_handle(self.doorbell) };
        bell.store(doorbell_value(id), Release, System);
    }

    /// Reserve one slot, write `packet`, publish it, ring the doorbell;
    /// returns the packet id.
    pub fn submit<P: Packet>(
        &self,
        packet: &Prepared<P>,
        pause: impl FnMut(),
    ) -> Result<u64, QueueError> {
        let id = self.reserve(1, pause)?;
        self.write(id, packet);
        self.ring_doorbell(id);
        Ok(id)
    }

    /// [`Queue::submit`] for a barrier packet.
    pub fn submit_barrier(
        &self,
        packet: &BarrierPacket,
        pause: impl FnMut(),
    ) -> Result<u64, QueueError> {
        let id = self.reserve(1, pause)?;
        self.write_barrier(id, packet);
        self.ring_doorbell(id);
        Ok(id)
    }
}

/// A queue in host memory for the host tests of this crate.
#[cfg(test)]
pub(crate) mod testing {
    extern crate std;

    use std::boxed::Box;
    use std::vec::Vec;

    use aqueduct_abi::amd_queue::AmdQueue;
    use aqueduct_abi::amd_signal::AmdSignal;
    use aqueduct_abi::aql::PacketHeader;
    use aqueduct_abi::hsa::{HsaQueue, QueueFeatures, QueueType, SignalHandle};

    use super::Queue;

    /// A queue in host memory: the amd_queue_t, its ring and doorbell.
    pub struct HostQueue {
        pub amd: Box<AmdQueue>,
        pub ring: Vec<AqlSlot>,
        pub bell: Box<AmdSignal>,
    }

    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    pub struct AqlSlot(pub [u8; 64]);

    impl HostQueue {
        pub fn new(size: u32, start: u64) -> Self {
            let mut ring = std::vec![AqlSlot([0; 64]); size as usize];
            for s in &mut ring {
                s.0[..2].copy_from_slice(&PacketHeader::INVALID.0.to_le_bytes());
            }
            let mut bell = Box::new(AmdSignal::user(0));
            let mut amd = Box::new(AmdQueue::new(HsaQueue {
                queue_type: QueueType::MULTI,
                features: QueueFeatures::KERNEL_DISPATCH,
                base_address: ring.as_mut_ptr() as u64,
                doorbell_signal: SignalHandle(&raw mut *bell as u64),
                size,
                reserved1: 0,
                id: 1,
            }));
            amd.write_dispatch_id = start;
            amd.read_dispatch_id = start;
            Self { amd, ring, bell }
        }

        /// The queue's view, for as long as the test keeps `self`.
        pub fn view(&mut self) -> aqueduct_abi::view::View<'static, AmdQueue> {
            // SAFETY: the queue, ring and doorbell live in `self`, which
            // the tests keep while they use the view.
            unsafe { aqueduct_abi::view::View::from_ptr(core::ptr::NonNull::from(&mut *self.amd)) }
        }

        pub fn queue(&mut self) -> Queue<'static> {
            Queue::new(self.view()).unwrap()
        }

        /// The 64 bytes of packet `id`'s slot.
        pub fn slot(&self, id: u64) -> [u8; 64] {
            self.ring[(id % self.ring.len() as u64) as usize].0
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
    use std::thread;
    use std::vec::Vec;

    use aqueduct_abi::aql::{PacketHeader, PacketType};
    use aqueduct_abi::aql_ring::{consumed, is_published};
    use aqueduct_abi::packet::{BarrierKind, Ordering as PacketOrdering, barrier};

    use super::testing::HostQueue;
    use super::*;

    #[test]
    fn a_full_ring_waits_for_the_processor_and_loses_no_packet() {
        const SIZE: u32 = 8;
        const PACKETS: u64 = 100;
        // Start near the top of the id space: the ids overflow u64 midway.
        let start = u64::MAX - 40;
        let mut host = HostQueue::new(SIZE, start);
        let q = host.queue();
        let ring = host.ring.as_ptr() as usize;
        let read = &raw mut host.amd.read_dispatch_id as usize;
        let stop = Arc::new(AtomicBool::new(false));
        // The packet processor: consumes published slots in order and
        // records each packet's completion-signal field (its sequence
        // number here).
        let consumer = {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut seen = Vec::new();
                let mut id = start;
                while (seen.len() as u64) < PACKETS && !stop.load(Ordering::Relaxed) {
                    let slot = ring + slot_offset(id, u64::from(SIZE)) as usize;
                    // SAFETY: slots of the live ring, accessed as the
                    // protocol says (first word atomically).
                    let first = unsafe { AtomicU32::from_ptr(slot as *mut u32) };
                    let word = first.load(Ordering::Acquire);
                    if !is_published(word) {
                        std::hint::spin_loop();
                        continue;
                    }
                    // SAFETY: published, so the body is complete.
                    let bytes = unsafe { *(slot as *const [u8; 64]) };
                    let header = PacketHeader(u16::from_le_bytes([bytes[0], bytes[1]]));
                    assert_eq!(header.packet_type(), PacketType::BARRIER_AND);
                    // completion_signal: the last 8 bytes of a barrier packet.
                    let mut completion = [0u8; 8];
                    completion.copy_from_slice(&bytes[56..]);
                    seen.push(u64::from_le_bytes(completion));
                    first.store(consumed(word), Ordering::Release);
                    id = id.wrapping_add(1);
                    // SAFETY: the live amd_queue_t's read index.
                    unsafe { AtomicU64::from_ptr(read as *mut u64) }.store(id, Ordering::Release);
                }
                seen
            })
        };
        // Four producers, as many work-items would be.
        let producers: Vec<_> = (0..4u64)
            .map(|t| {
                thread::spawn(move || {
                    for i in 0..PACKETS / 4 {
                        let tag = SignalHandle(1 + t * 1000 + i);
                        let p =
                            barrier(BarrierKind::And, &[], tag, PacketOrdering::SYSTEM).unwrap();
                        q.submit_barrier(&p, std::thread::yield_now).unwrap();
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        let mut seen = consumer.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(seen.len() as u64, PACKETS);
        seen.sort_unstable();
        let mut want: Vec<u64> = (0..4u64)
            .flat_map(|t| (0..PACKETS / 4).map(move |i| 1 + t * 1000 + i))
            .collect();
        want.sort_unstable();
        assert_eq!(seen, want, "every packet exactly once");
        assert_eq!(q.load_write_index(), start.wrapping_add(PACKETS));
        // The doorbell holds the id of one of this run's packets. Not
        // necessarily one of the last four: each producer rings with its
        // own packet's id after publishing it, and a producer delayed
        // between the two rings last with an older id. (This test once
        // failed on a loaded 2-core machine asking for one of the last
        // four.)
        let rung = (host.bell.value as u64).wrapping_sub(start);
        assert!(rung < PACKETS, "doorbell {rung} packets from the start");
    }

    #[test]
    fn more_slots_than_the_ring_is_an_error_not_a_hang() {
        let mut host = HostQueue::new(4, 0);
        let q = host.queue();
        assert_eq!(
            q.reserve(5, || panic!("must not wait")),
            Err(QueueError::TooManySlots { asked: 5, size: 4 })
        );
        assert_eq!(q.reserve(4, || panic!("room")), Ok(0));
        assert_eq!(q.load_write_index(), 4);
    }

    #[test]
    fn a_wait_for_room_given_up_is_an_error_and_keeps_its_slots() {
        let mut host = HostQueue::new(4, 0);
        let q = host.queue();
        assert_eq!(q.reserve(4, || panic!("room")), Ok(0));
        // Full, and nobody consumes: the third look gives up.
        let mut looks = 0;
        let r = q.reserve_until(2, || {
            looks += 1;
            looks < 3
        });
        assert_eq!((r, looks), (Err(QueueError::Abandoned), 3));
        // The slots stay reserved (the queue is abandoned, not reused).
        assert_eq!(q.load_write_index(), 6);
    }
}
