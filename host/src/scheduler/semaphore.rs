//! Timeline semaphores on the host's side: a [`Semaphore`] is device
//! memory every agent reaches ([`aqueduct_abi::scheduler::DeviceSemaphore`])
//! and an HSA signal that mirrors its payload, so host waits block in the
//! runtime's own `hsa_signal_wait_scacquire`. Signalling and failing from
//! the host run the very functions the device runs
//! (`aqueduct_device::scheduler::semaphore`), with the host's requester.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use aqueduct_abi::hsa::SignalCondition;
use aqueduct_abi::scheduler::DeviceSemaphore;
use aqueduct_abi::view::View;
use aqueduct_device::scheduler as shared;
use zerocopy::{FromZeros, IntoBytes};

use crate::error::{Error, Result};
use crate::memory::HostBuffer;
use crate::signal::{Signal, WaitOrder};

use super::inner::{HostRequester, SCHEDULERS};

struct SemaphoreInner {
    memory: HostBuffer<u8>,
    mirror: Signal,
    system: crate::System,
}

/// A timeline semaphore in device memory: a 64-bit payload that only
/// grows, waited for by device entries and host threads alike. Cheap to
/// clone; `Send + Sync`.
#[derive(Clone)]
pub struct Semaphore {
    inner: Arc<SemaphoreInner>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Semaphore({:#x})", self.address())
    }
}

impl Semaphore {
    /// A semaphore at `initial` for the agents of `system`, in
    /// host-visible memory of `pool` (which every agent reaches).
    pub(super) fn new(
        system: &crate::System,
        pool: &crate::memory::MemoryPool,
        initial: u64,
    ) -> Result<Self> {
        check_value(initial)?;
        let mirror = Signal::new(system, initial as i64)?;
        let mut memory = pool.alloc_host::<u8>(size_of::<DeviceSemaphore>())?;
        let mut s = DeviceSemaphore::new_zeroed();
        s.payload = initial;
        s.signal = mirror.handle();
        memory.copy_from_slice(s.as_bytes());
        Ok(Self {
            inner: Arc::new(SemaphoreInner {
                memory,
                mirror,
                system: system.clone(),
            }),
        })
    }

    /// The semaphore's device address.
    pub fn address(&self) -> u64 {
        self.inner.memory.address()
    }

    /// The semaphore, as the device's functions see it.
    fn view(&self) -> View<'_, DeviceSemaphore> {
        // SAFETY: the buffer holds the Semaphore written in `new` (64-byte
        // aligned, kept by `self`); its waiters are entries of live
        // schedulers (each keeps its waits' semaphores alive until the
        // entry is reclaimed, and takes its entries off the waiter lists
        // before it goes); host and device keep the semaphore's protocol
        // (its lock).
        unsafe {
            View::from_ptr(NonNull::new_unchecked(
                self.address() as *mut DeviceSemaphore
            ))
        }
    }

    /// What an entry that waits for or signals this semaphore keeps alive
    /// while the device may reach it.
    pub(super) fn keep_alive(&self) -> Arc<dyn Send + Sync> {
        self.inner.clone()
    }

    /// The current payload, or the failure.
    pub fn query(&self) -> Result<u64> {
        if let Some(status) = shared::failure(self.view()) {
            return Err(self.failed(status, None));
        }
        Ok(shared::payload(self.view()))
    }

    fn failed(&self, status: u32, value: Option<u64>) -> Error {
        // A failed semaphore's origin is written before its FAILED flag
        // and never again.
        let origin = shared::Origin::of_semaphore(self.view());
        let (sched, entry) = (origin.scheduler, origin.entry);
        let cause = (sched != 0).then(|| {
            // The Weak cloned out first: a device's last Arc may drop here,
            // and its drop takes this lock.
            let weak = {
                let all = SCHEDULERS.lock().unwrap_or_else(|p| p.into_inner());
                all.iter()
                    .find(|(at, _)| *at == sched)
                    .map(|(_, w)| w.clone())
            };
            let why = weak.and_then(|w| w.upgrade()).and_then(|d| {
                d.failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&entry)
                    .cloned()
            });
            match why {
                Some(why) => format!("entry {entry} failed: {why}"),
                None => format!("entry {entry} failed"),
            }
        });
        Error::SemaphoreFailed {
            semaphore: self.address(),
            value,
            status,
            cause,
        }
    }

    /// Advances the payload to `value` (a smaller value changes nothing)
    /// and releases the entries and host waits it satisfies.
    pub fn signal(&self, value: u64) -> Result<()> {
        check_value(value)?;
        let mut r = HostRequester {
            system: &self.inner.system,
            device: None,
            error: None,
        };
        // Its waiters are live entries of live schedulers (each keeps its
        // waits' semaphores alive until reclaimed, and a device outlives
        // its semaphores).
        shared::signal(self.view(), value, &mut r)
            .map_err(|status| self.failed(status, Some(value)))?;
        r.error.map_or(Ok(()), Err)
    }

    /// Fails the semaphore with `status` (an HSA status): every waiter,
    /// device or host, gets the error.
    pub fn fail(&self, status: u32) -> Result<()> {
        let mut r = HostRequester {
            system: &self.inner.system,
            device: None,
            error: None,
        };
        shared::fail(self.view(), status, shared::Origin::default(), &mut r);
        r.error.map_or(Ok(()), Err)
    }

    /// Blocks until the payload reaches `value` (in the runtime's signal
    /// wait on the mirror), the semaphore fails, or `timeout` passes.
    pub fn wait(&self, value: u64, timeout: Duration) -> Result<()> {
        check_value(value)?;
        // A failure also ends the wait even if the mirror missed it.
        let failed = || shared::failure(self.view());
        let waited = self.inner.mirror.wait_checked(
            SignalCondition::GTE,
            value as i64,
            timeout,
            WaitOrder::Acquire,
            "semaphore",
            || match failed() {
                Some(_) => Err(Error::InvalidArgument {
                    what: "semaphore",
                    problem: "failed".into(),
                }),
                None => Ok(()),
            },
        );
        if let Some(status) = shared::failure(self.view()) {
            return Err(self.failed(status, Some(value)));
        }
        match waited {
            Ok(_) => Ok(()),
            Err(Error::Timeout {
                condition, waited, ..
            }) => Err(Error::Timeout {
                what: format!("semaphore {:#x}", self.address()),
                condition,
                expected: value as i64,
                observed: shared::payload(self.view()) as i64,
                waited,
            }),
            Err(e) => Err(e),
        }
    }
}

/// The largest payload: the mirror signal is an i64, and `i64::MAX` means
/// failed.
pub const MAX_SEMAPHORE_VALUE: u64 = i64::MAX as u64 - 1;

fn check_value(value: u64) -> Result<()> {
    if value > MAX_SEMAPHORE_VALUE {
        return Err(Error::InvalidArgument {
            what: "semaphore value",
            problem: format!("{value} is above {MAX_SEMAPHORE_VALUE}"),
        });
    }
    Ok(())
}
