//! Memory pools, allocation, access and copies (hsa_amd_memory_pool_*,
//! hsa_memory_copy, hsa_amd_memory_async_copy). To be filled in.

use super::AgentInfo;
use crate::memory::Memory;

/// Pools and allocations.
#[derive(Debug, Default)]
pub struct State {}

impl State {
    pub fn new(_agents: &[AgentInfo]) -> Self {
        Self {}
    }

    pub fn shut_down(&self, _memory: &Memory) {}
}
