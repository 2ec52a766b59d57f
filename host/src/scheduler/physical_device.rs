//! One GPU with its device scheduler, from the host: the [`PhysicalDevice`]
//! starts the scheduler (the device library, a control queue for the
//! ticks, execution queues, the scheduler's state, mailbox and kernarg
//! ring, the block pool, the trace ring, the host service thread) and
//! hands out its submission queue, semaphores, counters and trace.

use std::sync::atomic::Ordering as MemOrdering;
use std::sync::{Arc, Mutex};

use aqueduct_abi::atomic::{Acquire, System};
use aqueduct_abi::packet::{KernelDispatch, Ordering};
use aqueduct_abi::scheduler::{QueueEntry, SchedulerState};
use zerocopy::{FromZeros, IntoBytes};

use crate::agent::Agent;
use crate::command_buffer::{IssueKernels, KernargProducer};
use crate::error::{Error, Result};
use crate::executable::Executable;
use crate::service::HostQueue;

use super::inner::{DeviceInner, HostRequester, Producer, SCHEDULERS, SERVICE_QUEUE_SIZE, serve};
use super::options::PhysicalDeviceOptions;
use super::pool::{PoolMemory, PoolStats};
use super::queue::DeviceQueue;
use super::semaphore::Semaphore;
use super::trace::{DeviceTrace, Trace};

/// One GPU with its device scheduler: the device library, a control queue
/// for the scheduler's ticks, an execution queue, the scheduler's state,
/// mailbox and kernarg ring. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct PhysicalDevice {
    inner: Arc<DeviceInner>,
}

impl std::fmt::Debug for PhysicalDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhysicalDevice")
            .field("agent", &self.inner.agent.info().name)
            .field("scheduler", &format_args!("{:#x}", self.inner.sched()))
            .finish()
    }
}

/// Counters of a scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Ticks run.
    pub ticks: u64,
    /// Entries submitted.
    pub submitted: u64,
    /// Entries reclaimed (done, and their slots free): reclaiming happens
    /// in the next tick after an entry is done, so this lags.
    pub reclaimed: u64,
    /// Device → host requests served: entries released as they retired.
    pub released: u64,
    /// Device → host requests served: trace drains asked for.
    pub trace_flushes: u64,
    /// Device → host requests served: block pool buckets to grow.
    pub pool_grows: u64,
    /// Entries whose command buffer and semaphores the host still keeps
    /// alive for the device.
    pub held: usize,
}

impl PhysicalDevice {
    /// Starts a scheduler on `agent` with the device library `library`
    /// (loaded on it).
    pub fn new(
        agent: &Agent,
        library: &Executable,
        options: PhysicalDeviceOptions,
    ) -> Result<Self> {
        let capacity = u64::from(options.entries);
        if !capacity.is_power_of_two() {
            return Err(Error::InvalidArgument {
                what: "device options",
                problem: format!("{} mailbox entries is not a power of two", options.entries),
            });
        }
        let count = options.execution_queues as usize;
        if !(1..=aqueduct_abi::scheduler::MAX_EXECUTION_QUEUES).contains(&count) {
            return Err(Error::InvalidArgument {
                what: "device options",
                problem: format!(
                    "{count} execution queues (1 to {})",
                    aqueduct_abi::scheduler::MAX_EXECUTION_QUEUES
                ),
            });
        }
        let control = agent.create_queue(64)?;
        let executions = (0..count)
            .map(|_| agent.create_queue(options.queue_size))
            .collect::<Result<Vec<_>>>()?;
        let execution = &executions[0];
        let kernels = IssueKernels::new(execution, library)?;
        let tick_kernel = library.kernel("sched_tick")?;
        let pool = execution.kernarg_pool().clone();
        let entries_at = size_of::<SchedulerState>();
        let args_at = entries_at + size_of::<QueueEntry>() * capacity as usize;
        let mut state = pool.alloc_host::<u8>(args_at + 64)?;
        state.fill(0);
        let base = state.address();
        state[args_at..args_at + 8].copy_from_slice(&base.to_le_bytes());
        let tick = KernelDispatch {
            ordering: Ordering::SYSTEM.with_barrier(),
            private_segment_size: tick_kernel.private_segment_size(),
            group_segment_size: tick_kernel.group_segment_size(),
            ..KernelDispatch::linear(tick_kernel.object(), base + args_at as u64, 1, 1)
        }
        .build(control.limits())?;
        let storage =
            pool.alloc_host::<u8>(options.kernarg_bytes.next_multiple_of(64).max(4096))?;
        let trace = match options.trace_records {
            0 => None,
            n if !n.is_power_of_two() => {
                return Err(Error::InvalidArgument {
                    what: "device options",
                    problem: format!("{n} trace records is not a power of two"),
                });
            }
            n => Some(Trace::new(&pool, n)?),
        };
        let service = Arc::new(HostQueue::new(agent.system(), SERVICE_QUEUE_SIZE)?);
        let pool = PoolMemory::new(agent, execution, &options)?;
        let mut s = SchedulerState::new_zeroed();
        s.host_queue = service.address();
        s.pool = pool.address();
        s.entries = base + entries_at as u64;
        s.capacity = capacity;
        let mut words = [0u8; 64];
        words.copy_from_slice(tick.body.as_bytes());
        words[..4].copy_from_slice(&tick.first_word().to_le_bytes());
        for (k, w) in words.as_chunks::<8>().0.iter().enumerate() {
            s.tick_packet[k] = u64::from_le_bytes(*w);
        }
        s.control_queue = control.address();
        s.execution_count = count as u64;
        for (slot, q) in s.execution_queues.iter_mut().zip(&executions) {
            *slot = q.address();
        }
        s.trace = trace.as_ref().map_or(0, Trace::address);
        s.kernarg.base = storage.address();
        s.kernarg.capacity = storage.len() as u64;
        state[..size_of::<SchedulerState>()].copy_from_slice(s.as_bytes());
        let inner = Arc::new(DeviceInner {
            agent: agent.clone(),
            control,
            execution: Mutex::new(executions),
            faulted: Mutex::new(Vec::new()),
            failures: Mutex::new(std::collections::HashMap::new()),
            kernels,
            _tick_kernel: tick_kernel,
            mode: options.issue_mode,
            state,
            tick,
            producer: Mutex::new(Producer {
                ring: KernargProducer::new(storage),
            }),
            held: Mutex::new(std::collections::BTreeMap::new()),
            pool,
            _service: Arc::clone(&service),
            served: Default::default(),
            capacity,
            trace,
        });
        SCHEDULERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((inner.sched(), Arc::downgrade(&inner)));
        if inner.trace.is_some() {
            inner.calibrate()?;
        }
        let device = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("aqueduct-scheduler".into())
            .spawn(move || serve(&device, &service))
            .map_err(|e| Error::InvalidArgument {
                what: "device",
                problem: format!("cannot start the scheduler's service thread: {e}"),
            })?;
        Ok(Self { inner })
    }

    /// The GPU.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The execution queue's submission API.
    pub fn queue(&self) -> DeviceQueue {
        DeviceQueue::new(Arc::clone(&self.inner))
    }

    /// A recording of at most `capacity` commands for this device
    /// ([`crate::CommandBufferBuilder::new`] on its execution queue).
    pub fn command_buffer(&self, capacity: u32) -> Result<crate::CommandBufferBuilder> {
        crate::CommandBufferBuilder::new(&self.inner.execution(), capacity)
    }

    /// A new semaphore at `initial`, usable by this device's entries and
    /// the host.
    pub fn semaphore(&self, initial: u64) -> Result<Semaphore> {
        Semaphore::new(
            self.agent().system(),
            self.inner.execution().kernarg_pool(),
            initial,
        )
    }

    /// The scheduler's counters.
    pub fn stats(&self) -> SchedulerStats {
        let state = self.inner.state();
        SchedulerStats {
            ticks: state.ticks().observe(),
            submitted: state.write_index().load(Acquire, System),
            reclaimed: state.retire_index().load(Acquire, System),
            released: self.inner.served[0].load(MemOrdering::Relaxed),
            trace_flushes: self.inner.served[1].load(MemOrdering::Relaxed),
            pool_grows: self.inner.served[3].load(MemOrdering::Relaxed),
            held: self
                .inner
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len(),
        }
    }

    /// A fault of the control queue, if any: the scheduler stops after
    /// one. (A fault of the execution queue fails the entries on it and
    /// the queue is replaced.)
    pub fn check(&self) -> Result<()> {
        self.inner.check_control()
    }

    /// The trace so far (tracing on: [`PhysicalDeviceOptions::trace_records`]),
    /// drained from the device's ring: each record with its time on the
    /// host's clock, and the records the ring had no room for.
    pub fn trace(&self) -> Option<DeviceTrace> {
        self.inner.trace.as_ref()?.snapshot()
    }

    /// Writes the trace so far as a Chrome/Perfetto JSON trace (open it in
    /// `ui.perfetto.dev` or `chrome://tracing`): the ticks on one track,
    /// each entry from its issue to its retire on another, with an instant
    /// where each of its blocks began. Returns the
    /// events written; `None` without tracing.
    pub fn write_trace(&self, path: &std::path::Path) -> Result<Option<usize>> {
        let Some(trace) = self.trace() else {
            return Ok(None);
        };
        let json = trace.chrome_json(&self.inner.agent.info().name);
        std::fs::write(path, json).map_err(|source| Error::Io {
            action: "write",
            path: path.to_owned(),
            source,
        })?;
        Ok(Some(trace.events.len()))
    }

    /// What the device block pool holds, small bucket then large.
    pub fn pool_stats(&self) -> [PoolStats; 2] {
        self.inner.pool.stats()
    }

    /// Gives the pool's free blocks back to the runtime and returns the
    /// bytes freed; blocks in use stay. A bucket that could not grow
    /// before may grow again.
    pub fn trim(&self) -> u64 {
        let d = &*self.inner;
        let mut r = HostRequester {
            system: d.agent.system(),
            device: Some(d),
            error: None,
        };
        d.pool.trim(&mut r)
    }

    /// Why entry `id` failed, when a queue fault made it fail: the command
    /// and kernel the queue stopped at.
    pub fn failure(&self, id: u64) -> Option<String> {
        let failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        failures.get(&id).cloned()
    }
}
