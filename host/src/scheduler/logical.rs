//! Several GPUs as one ([`LogicalDevice`]): a [`PhysicalDevice`] on each GPU a
//! device string selects, whose entries wait for each other's semaphores.

use crate::agent::Agent;
use crate::error::Result;
use crate::executable::Executable;

use super::options::PhysicalDeviceOptions;
use super::physical_device::PhysicalDevice;

/// Several GPUs as one: a [`PhysicalDevice`] (device library, scheduler, queues)
/// on each GPU a device string selects (`amdgpu://0,1`, `amdgpu`, …: the
/// forms of [`crate::device_spec`]). Their entries wait for each other's
/// semaphores like a single device's do: a semaphore is device memory every
/// agent reaches, and a signal on one GPU wakes entries on another through
/// that scheduler's own control queue.
#[derive(Clone, Debug)]
pub struct LogicalDevice {
    devices: Vec<PhysicalDevice>,
}

impl LogicalDevice {
    /// A scheduler on every GPU of `system` that `device` selects, each
    /// with the device library `library` gives for its agent (its gfx's
    /// code object, loaded on it).
    pub fn open(
        system: &crate::System,
        device: &str,
        options: PhysicalDeviceOptions,
        mut library: impl FnMut(&Agent) -> Result<Executable>,
    ) -> Result<Self> {
        let devices = system
            .select(device)?
            .iter()
            .map(|agent| PhysicalDevice::new(agent, &library(agent)?, options))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { devices })
    }

    /// The devices, in the device string's order.
    pub fn devices(&self) -> &[PhysicalDevice] {
        &self.devices
    }
}
