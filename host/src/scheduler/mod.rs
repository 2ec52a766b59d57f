//! The device scheduler from the host: a [`PhysicalDevice`] (one GPU with its
//! scheduler), its [`DeviceQueue`], and timeline [`Semaphore`]s.
//!
//! Submitting writes one queue entry into the scheduler's mailbox ring in
//! device memory ([`aqueduct_abi::scheduler::QueueEntry`]: its kind, its
//! wait and signal lists, and for a command buffer the whole issue state,
//! in the scheduler's kernarg ring) and requests a tick
//! ([`aqueduct_device::scheduler::request`]): the one request that finds
//! no other pending enqueues the tick on the control queue. Everything
//! after that happens on the device: the tick (`sched_tick`) accepts the
//! entry, waits for its semaphores, issues it; the command buffer's RETURN
//! retires it and signals its semaphores, which wakes the entries waiting
//! for them. A chain of dependent entries needs one submit burst and one
//! host wait.
//!
//! A [`Semaphore`] lives in device memory and mirrors its payload into an
//! HSA signal, so [`Semaphore::wait`] blocks in the runtime's own
//! `hsa_signal_wait_scacquire`. Signalling from the host runs the very
//! function the device runs ([`aqueduct_device::scheduler::signal`]), with
//! the host's way to enqueue a tick and store a signal.
//!
//! Back-pressure: a full mailbox or kernarg ring makes the submitter wait
//! (up to [`DEFAULT_SPACE_TIMEOUT`](crate::queue::DEFAULT_SPACE_TIMEOUT)) until the tick reclaims retired
//! entries, polling the ring's read side every 50 µs.
//!
//! A service thread per device serves the device's requests to the host
//! ([`HostRequest`](aqueduct_abi::scheduler::HostRequest)): device code posts them as AGENT_DISPATCH packets to
//! a soft queue the thread waits on with the runtime's signal wait
//! (`crate::service`). A retiring entry asks the host to release what it
//! kept alive for the device (the command buffer, the semaphores), at
//! once rather than at the next submit; a trace ring that filled another
//! half asks to be drained, which the thread also does every few
//! milliseconds ([`PhysicalDeviceOptions::trace_records`], [`PhysicalDevice::trace`],
//! [`PhysicalDevice::write_trace`]). The thread also watches the execution
//! queues: when a kernel faults, the entries issued on its queue fail (and
//! with them their semaphores and everything waiting on those), and a new
//! queue takes its place.
//!
//! Queue-ordered allocations ([`DeviceQueue::alloca`], `dealloca`) come
//! from a device block pool of two buckets of fixed-size blocks that the
//! tick serves (`aqueduct_device::scheduler`); an empty bucket asks the
//! host service to grow it ([`HostRequest::GROW`](aqueduct_abi::scheduler::HostRequest::GROW)), and
//! [`PhysicalDevice::trim`] gives the free blocks back.
//!
//! [`PhysicalDeviceOptions::execution_queues`] gives a device up to four execution
//! queues; the tick deals the entries out to them in turn, and a queue
//! that faults is replaced alone.
//!
//!
//! The rooms:
//!
//! | module | what it holds |
//! |---|---|
//! | [`physical_device`] | [`PhysicalDevice`]: starting a scheduler on a GPU, its counters, trace, pool and failures |
//! | [`options`] | [`PhysicalDeviceOptions`]: the scheduler's sizes and modes |
//! | [`queue`] | [`DeviceQueue`] and [`Batch`]: writing entries into the mailbox |
//! | [`semaphore`] | [`Semaphore`]: timeline semaphores, signalled and waited for from the host |
//! | [`allocation`] | [`Allocation`]: queue-ordered allocations' handles |
//! | `inner` | the scheduler's host-side state, the host requester, recovery from faults, the service thread |
//! | `pool` | the block pool's memory on the host: growth and trimming |
//! | `trace` | the trace ring's drain and the trace on the host's clock |
//! | [`logical`] | [`LogicalDevice`]: several GPUs as one |

pub mod allocation;
mod inner;
pub mod logical;
pub mod options;
pub mod physical_device;
mod pool;
pub mod queue;
pub mod semaphore;
mod trace;

pub use allocation::Allocation;
pub use logical::LogicalDevice;
pub use options::PhysicalDeviceOptions;
pub use physical_device::{PhysicalDevice, SchedulerStats};
pub use pool::PoolStats;
pub use queue::{Batch, DeviceQueue, SemaphoreValue};
pub use semaphore::{MAX_SEMAPHORE_VALUE, Semaphore};
pub use trace::{DeviceTrace, TraceEvent};
