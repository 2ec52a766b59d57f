//! The device scheduler: timeline semaphores, the tick, and the retire of
//! an entry's work, over views of the layouts of
//! [`aqueduct_abi::scheduler`].
//!
//! ```text
//!   submitter ── entry into the mailbox ring, write_index ──► request(INCOMING)
//!   request   ── fetch_or into actions; the one that saw 0 enqueues a tick
//!   tick      ── actions := 0; accept new entries; take the wake stack;
//!                each entry checks its waits in order: reached, or onto
//!                the semaphore's waiter list; ready entries in id order:
//!                BARRIER completes here, EXECUTE issues its entry block;
//!                reclaim retired entries' slots and kernarg space
//!   RETURN    ── the control kernel retires the entry: signals its
//!                semaphores (its slot is reclaimed by the next tick)
//!   signal    ── payload := value, mirror into the HSA signal, detach the
//!                waiters reached, push each on its scheduler's wake stack,
//!                request(WAKE)
//! ```
//!
//! A chain of N entries, each waiting for the one before, takes N ticks:
//! the first accepts them all and issues the head; each retire's wake
//! requests the tick that issues the next. N entries that wait for one
//! value take two: one accepts them, the one the signal's wakes request
//! (coalesced) issues them all.
//!
//! The rooms:
//!
//! | module        | what it holds                                                     |
//! |---------------|-------------------------------------------------------------------|
//! | [`requester`] | what the shared functions need from where they run ([`Requester`], [`Issuer`]), the device's own ([`QueueRequester`]), and [`request`]: asking for a tick |
//! | [`semaphore`] | timeline semaphores: waiter lists, [`signal`], [`fail`], waking entries onto their scheduler's wake stack |
//! | [`entry`]     | a queue entry's life after its issue: [`claim_end`], [`retire`], [`fail_entry`] |
//! | [`tick`](mod@tick) | the tick: accept, wake, issue in id order (BARRIER, EXECUTE, ALLOCA, DEALLOCA), reclaim |
//! | [`pool`]      | the block pool's buckets, which the tick and the host's growth share |
//! | [`trace`](mod@trace) | trace records into the scheduler's ring                            |
//! | `list`        | the one ordered-list insertion the waiter and ready lists share     |
//!
//! Host and device run these functions: the device's tick and control
//! kernel, the host's `Semaphore::signal`. What differs is a [`Requester`]:
//! how to pause in a spin, how to put a tick on a control queue, how to
//! store a mirror signal's value. [`QueueRequester`] is the device's (plain
//! Rust over the queue's `amd_queue_t`, so the host tests run it too).
//!
//! Every function takes [views](aqueduct_abi::view) of the scheduler's
//! memory and is safe to call: whoever made the view vouched for the
//! memory and for the protocol (that module's doc); what protocol a
//! function keeps is in its doc ("the tick's": only the one running tick
//! of that scheduler calls it).
//!
//! Memory: a semaphore's lock is taken and released with system-scope
//! acquire and release, so the fields it guards are plain accesses under
//! it; the action set, the wake stack, entry states, the ring indices and
//! `in_flight` are system-scope atomics (the host reads and writes some of
//! them); the rest of [`SchedulerState`](aqueduct_abi::scheduler::SchedulerState)
//! is the tick's own (ticks run one at a time: one lane, barrier bit, one
//! control queue). The layouts declare which is which.
//!
//! Entry statuses are HSA's ([`aqueduct_abi::hsa_api`]): `HSA_STATUS_ERROR`
//! for an issue that failed, `HSA_STATUS_ERROR_INVALID_ARGUMENT` for an
//! entry kind the scheduler does not run or a DEALLOCA of a handle that
//! holds no block, `HSA_STATUS_ERROR_INVALID_ALLOCATION` for an ALLOCA
//! larger than the pool's large blocks (or with no pool),
//! `HSA_STATUS_ERROR_OUT_OF_RESOURCES` for an ALLOCA whose bucket the host
//! could not grow.

pub mod entry;
mod list;
pub mod pool;
pub mod requester;
pub mod semaphore;
pub mod tick;
pub mod trace;

#[cfg(test)]
mod tests;

pub use entry::{claim_end, fail_entry, retire, state};
pub use pool::{bucket_for, give_block, take_block, with_bucket};
pub use requester::{Issuer, QueueRequester, Requester, is_execution_queue, request};
pub use semaphore::{Origin, Wait, add_waiter, fail, failure, payload, remove_waiter, signal};
pub use tick::{TickReport, tick};
pub use trace::{trace, trace_block, trace_first_block};
