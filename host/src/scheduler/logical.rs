//! Several GPUs as one ([`LogicalDevice`]): a [`Device`] on each GPU a
//! device string selects, whose entries wait for each other's semaphores.

use crate::agent::Agent;
use crate::error::Result;
use crate::executable::Executable;

use super::device::Device;
use super::options::DeviceOptions;

/// Several GPUs as one: a [`Device`] (device library, scheduler, queues)
/// on each GPU a device string selects (`amdgpu://0,1`, `amdgpu`, …: the
/// forms of [`crate::device`]). Their entries wait for each other's
/// semaphores like a single device's do: a semaphore is device memory every
/// agent reaches, and a signal on one GPU wakes entries on another through
/// that scheduler's own control queue.
#[derive(Clone, Debug)]
pub struct LogicalDevice {
    devices: Vec<Device>,
}

impl LogicalDevice {
    /// A scheduler on every GPU of `system` that `device` selects, each
    /// with the device library `library` gives for its agent (its gfx's
    /// code object, loaded on it).
    pub fn open(
        system: &crate::System,
        device: &str,
        options: DeviceOptions,
        mut library: impl FnMut(&Agent) -> Result<Executable>,
    ) -> Result<Self> {
        let devices = system
            .select(device)?
            .iter()
            .map(|agent| Device::new(agent, &library(agent)?, options))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { devices })
    }

    /// The devices, in the device string's order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }
}
