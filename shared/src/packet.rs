//! Validating builders for AQL packets.
//!
//! A builder checks its inputs against the HSA rules and the agent's limits
//! and returns a [`Prepared`] packet: the body with its header still
//! `INVALID`, and the real header separately. The caller copies the body into
//! the ring slot, then publishes the packet by storing
//! [`Prepared::first_word`] to the slot's first 32 bits with release
//! semantics (atomically, at the fence scope the consumer needs), and only
//! then rings the doorbell.

use core::fmt;

use crate::aql::{
    AgentDispatchPacket, BARRIER_DEPENDENCIES, BarrierAndPacket, BarrierOrPacket, FenceScope,
    KernelDispatchPacket, Packet, PacketHeader, PacketType,
};
use crate::hsa::SignalHandle;

/// A packet ready to publish: `body` has an `INVALID` header; `header` is the
/// header to store last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared<P> {
    /// The whole packet with header `INVALID`: copy it into the slot first.
    pub body: P,
    /// The header that publishes the packet, stored last (as part of
    /// [`Prepared::first_word`]).
    pub header: PacketHeader,
}

impl<P: Packet> Prepared<P> {
    /// The packet's first 32 bits as they must finally read: the header in
    /// the low half, the body's bytes 2..4 (setup, function or reserved) in
    /// the high half. Storing this word with release semantics publishes the
    /// packet.
    pub fn first_word(&self) -> u32 {
        u32::from(self.header.0) | (u32::from(self.body.second_half_word()) << 16)
    }

    /// The packet with its header in place (for copies that are published by
    /// other means, e.g. tests and the simulator).
    pub fn published(&self) -> P {
        let mut p = self.body;
        let bytes = p.as_mut_bytes();
        bytes[..2].copy_from_slice(&self.header.0.to_le_bytes());
        p
    }
}

/// Why a packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketError {
    /// `dimensions` is not 1, 2 or 3.
    Dimensions(u8),
    /// A grid or workgroup size of zero in a used dimension.
    ZeroSize {
        /// The dimension: 0 x, 1 y, 2 z.
        axis: usize,
    },
    /// A dimension beyond `dimensions` whose grid or workgroup size is not 1.
    UnusedDimension {
        /// The dimension: 0 x, 1 y, 2 z.
        axis: usize,
    },
    /// A workgroup dimension above the agent's limit.
    WorkgroupDimTooLarge {
        /// The dimension: 0 x, 1 y, 2 z.
        axis: usize,
        /// Work-items asked for in that dimension.
        size: u32,
        /// The agent's `max_workgroup_dim` for it.
        max: u32,
    },
    /// More work-items per workgroup than the agent allows.
    WorkgroupTooLarge {
        /// Work-items per workgroup asked for (the product of the
        /// dimensions, saturated to `u32::MAX`).
        size: u32,
        /// The agent's `max_workgroup_size`.
        max: u32,
    },
    /// A grid dimension above the agent's limit.
    GridDimTooLarge {
        /// The dimension: 0 x, 1 y, 2 z.
        axis: usize,
        /// Work-items asked for in that dimension.
        size: u32,
        /// The agent's `max_grid_dim` for it.
        max: u32,
    },
    /// More work-items in the grid than the agent allows.
    GridTooLarge {
        /// Work-items in the grid (the product of the dimensions).
        size: u64,
        /// The agent's `max_grid_size`.
        max: u64,
    },
    /// More LDS than a workgroup can have.
    GroupSegmentTooLarge {
        /// LDS bytes per workgroup asked for, static plus dynamic.
        size: u32,
        /// The agent's `max_group_segment_size`.
        max: u32,
    },
    /// `kernel_object` is null or not 64-byte aligned (kernel descriptors
    /// are).
    KernelObject(u64),
    /// `kernarg_address` is not 16-byte aligned.
    KernargAlignment(u64),
    /// A fence scope other than NONE, AGENT or SYSTEM.
    FenceScope(u8),
    /// More than five dependency signals for a barrier packet.
    TooManyDependencies(usize),
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const AXES: [&str; 3] = ["x", "y", "z"];
        let axis = |a: &usize| AXES.get(*a).copied().unwrap_or("?");
        match self {
            Self::Dimensions(d) => write!(f, "grid dimensions must be 1, 2 or 3, not {d}"),
            Self::ZeroSize { axis: a } => {
                write!(
                    f,
                    "grid and workgroup sizes must be at least 1 in {}",
                    axis(a)
                )
            }
            Self::UnusedDimension { axis: a } => write!(
                f,
                "dimension {} is unused (beyond `dimensions`) but its grid or workgroup size is not 1",
                axis(a)
            ),
            Self::WorkgroupDimTooLarge { axis: a, size, max } => write!(
                f,
                "workgroup size {size} in {} exceeds the agent's limit {max}",
                axis(a)
            ),
            Self::WorkgroupTooLarge { size, max } => write!(
                f,
                "workgroup of {size} work-items exceeds the agent's limit {max}"
            ),
            Self::GridDimTooLarge { axis: a, size, max } => write!(
                f,
                "grid size {size} in {} exceeds the agent's limit {max}",
                axis(a)
            ),
            Self::GridTooLarge { size, max } => write!(
                f,
                "grid of {size} work-items exceeds the agent's limit {max}"
            ),
            Self::GroupSegmentTooLarge { size, max } => write!(
                f,
                "group segment of {size} bytes exceeds the agent's {max} bytes of LDS per workgroup"
            ),
            Self::KernelObject(a) => write!(
                f,
                "kernel object {a:#x} is not the address of a kernel descriptor (null or not 64-byte aligned)"
            ),
            Self::KernargAlignment(a) => {
                write!(f, "kernarg address {a:#x} is not 16-byte aligned")
            }
            Self::FenceScope(s) => write!(
                f,
                "fence scope {s} is not NONE (0), AGENT (1) or SYSTEM (2)"
            ),
            Self::TooManyDependencies(n) => write!(
                f,
                "{n} dependency signals, but a barrier packet holds at most {BARRIER_DEPENDENCIES}"
            ),
        }
    }
}

impl core::error::Error for PacketError {}

/// An agent's dispatch limits (`HSA_AGENT_INFO_WORKGROUP_MAX_DIM`,
/// `_WORKGROUP_MAX_SIZE`, `_GRID_MAX_DIM`, `_GRID_MAX_SIZE`, and the LDS
/// size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DispatchLimits {
    /// Most work-items per workgroup in x, y, z
    /// (`HSA_AGENT_INFO_WORKGROUP_MAX_DIM`).
    pub max_workgroup_dim: [u32; 3],
    /// Most work-items per workgroup in all
    /// (`HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`).
    pub max_workgroup_size: u32,
    /// Most work-items of a grid in x, y, z (`HSA_AGENT_INFO_GRID_MAX_DIM`).
    pub max_grid_dim: [u32; 3],
    /// Most work-items of a grid in all (`HSA_AGENT_INFO_GRID_MAX_SIZE`).
    pub max_grid_size: u64,
    /// LDS bytes a workgroup can have (the group segment, static plus
    /// dynamic).
    pub max_group_segment_size: u32,
}

impl DispatchLimits {
    /// What ROCr reports for every current AMD GPU agent: workgroups of up
    /// to 1024 work-items in each dimension and in total, grids of up to
    /// 2^32 - 1 work-items per dimension and in total, 64 KiB of LDS. Agents
    /// with more LDS (gfx950: 160 KiB) report it in their own limits.
    pub const AMD_GPU: Self = Self {
        max_workgroup_dim: [1024; 3],
        max_workgroup_size: 1024,
        max_grid_dim: [u32::MAX; 3],
        max_grid_size: u32::MAX as u64,
        max_group_segment_size: 64 * 1024,
    };
}

/// How a packet orders itself against its queue and memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ordering {
    /// Wait for every earlier packet of the queue to complete first.
    pub barrier: bool,
    /// Scope of the acquire fence before the packet runs: NONE, AGENT or
    /// SYSTEM (others are refused).
    pub acquire: FenceScope,
    /// Scope of the release fence when it completes: NONE, AGENT or SYSTEM
    /// (others are refused).
    pub release: FenceScope,
}

impl Ordering {
    /// System-scope acquire and release, no barrier bit: the safe default
    /// for work whose results the host reads.
    pub const SYSTEM: Self = Self {
        barrier: false,
        acquire: FenceScope::SYSTEM,
        release: FenceScope::SYSTEM,
    };
    /// Agent-scope fences: for work consumed only by the same agent.
    pub const AGENT: Self = Self {
        barrier: false,
        acquire: FenceScope::AGENT,
        release: FenceScope::AGENT,
    };

    /// The same ordering with the barrier bit set.
    pub const fn with_barrier(mut self) -> Self {
        self.barrier = true;
        self
    }

    fn header(self, packet_type: PacketType) -> Result<PacketHeader, PacketError> {
        for scope in [self.acquire, self.release] {
            if !scope.is_known() {
                return Err(PacketError::FenceScope(scope.0));
            }
        }
        Ok(PacketHeader::new(
            packet_type,
            self.barrier,
            self.acquire,
            self.release,
        ))
    }
}

/// Inputs of a kernel dispatch packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDispatch {
    /// Address of the kernel descriptor (the `.kd` symbol's address).
    pub kernel_object: u64,
    /// Address of the kernarg segment (0 if the kernel takes none).
    pub kernarg_address: u64,
    /// 1, 2 or 3; sizes beyond it must be 1.
    pub dimensions: u8,
    /// Grid size in work-items per dimension (need not be a multiple of the
    /// workgroup size: the last workgroup is partial).
    pub grid_size: [u32; 3],
    /// Workgroup size in work-items per dimension.
    pub workgroup_size: [u16; 3],
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
    /// LDS bytes per workgroup, static plus dynamic.
    pub group_segment_size: u32,
    /// Signal the packet processor decrements by one when the dispatch
    /// completes ([`SignalHandle::NULL`]: none).
    pub completion_signal: SignalHandle,
    /// Barrier bit and fence scopes of the packet's header.
    pub ordering: Ordering,
}

impl KernelDispatch {
    /// A one-dimensional dispatch of `grid` work-items in workgroups of
    /// `workgroup`, with system-scope fences and no completion signal.
    pub const fn linear(
        kernel_object: u64,
        kernarg_address: u64,
        grid: u32,
        workgroup: u16,
    ) -> Self {
        Self {
            kernel_object,
            kernarg_address,
            dimensions: 1,
            grid_size: [grid, 1, 1],
            workgroup_size: [workgroup, 1, 1],
            private_segment_size: 0,
            group_segment_size: 0,
            completion_signal: SignalHandle::NULL,
            ordering: Ordering::SYSTEM,
        }
    }

    /// Validates against `limits` and builds the packet.
    pub fn build(
        &self,
        limits: &DispatchLimits,
    ) -> Result<Prepared<KernelDispatchPacket>, PacketError> {
        let dims = usize::from(self.dimensions);
        if !(1..=3).contains(&dims) {
            return Err(PacketError::Dimensions(self.dimensions));
        }
        let mut workgroup_total = 1u64;
        let mut grid_total = 1u64;
        for axis in 0..3 {
            let grid = self.grid_size[axis];
            let wg = u32::from(self.workgroup_size[axis]);
            if axis >= dims {
                if grid != 1 || wg != 1 {
                    return Err(PacketError::UnusedDimension { axis });
                }
                continue;
            }
            if grid == 0 || wg == 0 {
                return Err(PacketError::ZeroSize { axis });
            }
            let max = limits.max_workgroup_dim[axis];
            if wg > max {
                return Err(PacketError::WorkgroupDimTooLarge {
                    axis,
                    size: wg,
                    max,
                });
            }
            let max = limits.max_grid_dim[axis];
            if grid > max {
                return Err(PacketError::GridDimTooLarge {
                    axis,
                    size: grid,
                    max,
                });
            }
            workgroup_total *= u64::from(wg);
            grid_total *= u64::from(grid);
        }
        if workgroup_total > u64::from(limits.max_workgroup_size) {
            return Err(PacketError::WorkgroupTooLarge {
                size: u32::try_from(workgroup_total).unwrap_or(u32::MAX),
                max: limits.max_workgroup_size,
            });
        }
        if grid_total > limits.max_grid_size {
            return Err(PacketError::GridTooLarge {
                size: grid_total,
                max: limits.max_grid_size,
            });
        }
        if self.group_segment_size > limits.max_group_segment_size {
            return Err(PacketError::GroupSegmentTooLarge {
                size: self.group_segment_size,
                max: limits.max_group_segment_size,
            });
        }
        if self.kernel_object == 0 || self.kernel_object % 64 != 0 {
            return Err(PacketError::KernelObject(self.kernel_object));
        }
        if self.kernarg_address % 16 != 0 {
            return Err(PacketError::KernargAlignment(self.kernarg_address));
        }
        self.build_unchecked()
    }

    /// The packet without [`KernelDispatch::build`]'s checks against an
    /// agent's limits and the HSA rules: only the fence scopes, which
    /// decide the header's bits. For packets validated earlier (the device
    /// library's command-buffer issue, whose commands the host validated
    /// when recording); the packet processor still checks what reaches it.
    pub fn build_unchecked(&self) -> Result<Prepared<KernelDispatchPacket>, PacketError> {
        let header = self.ordering.header(PacketType::KERNEL_DISPATCH)?;
        Ok(Prepared {
            body: KernelDispatchPacket {
                header: PacketHeader::INVALID,
                setup: u16::from(self.dimensions),
                workgroup_size_x: self.workgroup_size[0],
                workgroup_size_y: self.workgroup_size[1],
                workgroup_size_z: self.workgroup_size[2],
                reserved0: 0,
                grid_size_x: self.grid_size[0],
                grid_size_y: self.grid_size[1],
                grid_size_z: self.grid_size[2],
                private_segment_size: self.private_segment_size,
                group_segment_size: self.group_segment_size,
                kernel_object: self.kernel_object,
                kernarg_address: self.kernarg_address,
                reserved2: 0,
                completion_signal: self.completion_signal,
            },
            header,
        })
    }
}

/// Which barrier packet to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierKind {
    /// Complete when every dependency is zero.
    And,
    /// Complete when any dependency is zero.
    Or,
}

/// A barrier packet, AND or OR; both share one layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierPacket {
    /// A barrier-AND packet (`HSA_PACKET_TYPE_BARRIER_AND`).
    And(Prepared<BarrierAndPacket>),
    /// A barrier-OR packet (`HSA_PACKET_TYPE_BARRIER_OR`).
    Or(Prepared<BarrierOrPacket>),
}

impl BarrierPacket {
    /// The 64 bytes to copy into the slot (header `INVALID`).
    pub fn body_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        match self {
            Self::And(p) => out.copy_from_slice(p.body.as_bytes()),
            Self::Or(p) => out.copy_from_slice(p.body.as_bytes()),
        }
        out
    }

    /// See [`Prepared::first_word`].
    pub fn first_word(&self) -> u32 {
        match self {
            Self::And(p) => p.first_word(),
            Self::Or(p) => p.first_word(),
        }
    }
}

/// Builds a barrier packet waiting on up to five signals (null handles are
/// allowed and ignored by the processor).
pub fn barrier(
    kind: BarrierKind,
    dependencies: &[SignalHandle],
    completion_signal: SignalHandle,
    ordering: Ordering,
) -> Result<BarrierPacket, PacketError> {
    if dependencies.len() > BARRIER_DEPENDENCIES {
        return Err(PacketError::TooManyDependencies(dependencies.len()));
    }
    let mut dep_signal = [SignalHandle::NULL; BARRIER_DEPENDENCIES];
    dep_signal[..dependencies.len()].copy_from_slice(dependencies);
    Ok(match kind {
        BarrierKind::And => BarrierPacket::And(Prepared {
            body: BarrierAndPacket {
                header: PacketHeader::INVALID,
                reserved0: 0,
                reserved1: 0,
                dep_signal,
                reserved2: 0,
                completion_signal,
            },
            header: ordering.header(PacketType::BARRIER_AND)?,
        }),
        BarrierKind::Or => BarrierPacket::Or(Prepared {
            body: BarrierOrPacket {
                header: PacketHeader::INVALID,
                reserved0: 0,
                reserved1: 0,
                dep_signal,
                reserved2: 0,
                completion_signal,
            },
            header: ordering.header(PacketType::BARRIER_OR)?,
        }),
    })
}

/// Builds an agent dispatch packet calling `function` with `args`.
pub fn agent_dispatch(
    function: u16,
    args: [u64; 4],
    return_address: u64,
    completion_signal: SignalHandle,
    ordering: Ordering,
) -> Result<Prepared<AgentDispatchPacket>, PacketError> {
    Ok(Prepared {
        body: AgentDispatchPacket {
            header: PacketHeader::INVALID,
            function,
            reserved0: 0,
            return_address,
            arg: args,
            reserved2: 0,
            completion_signal,
        },
        header: ordering.header(PacketType::AGENT_DISPATCH)?,
    })
}

// Packets need `as_mut_bytes` above.
use zerocopy::IntoBytes;

#[cfg(test)]
mod tests {
    use super::*;

    const KD: u64 = 0x7f12_3456_7800;
    const KERNARG: u64 = 0x7f00_0000_0010;

    #[test]
    fn linear_dispatch_builds_the_expected_packet() {
        let mut spec = KernelDispatch::linear(KD, KERNARG, 1000, 256);
        spec.completion_signal = SignalHandle(0x5000);
        spec.group_segment_size = 4096;
        let p = spec.build(&DispatchLimits::AMD_GPU).unwrap();
        assert_eq!(p.body.header, PacketHeader::INVALID);
        assert_eq!(p.header.packet_type(), PacketType::KERNEL_DISPATCH);
        assert_eq!(p.header.acquire_fence_scope(), FenceScope::SYSTEM);
        // header: type 2 | system acquire (2 << 9) | system release (2 << 11);
        // setup (dimensions = 1) in the high half.
        assert_eq!(p.first_word(), (2 | 2 << 9 | 2 << 11) | 1 << 16);
        let full = p.published();
        assert_eq!(full.header, p.header);
        assert_eq!(full.grid_size_x, 1000);
        assert_eq!(full.workgroup_size_x, 256);
        assert_eq!((full.grid_size_y, full.grid_size_z), (1, 1));
        assert_eq!(full.kernel_object, KD);
        assert_eq!(full.kernarg_address, KERNARG);
        assert_eq!(full.completion_signal, SignalHandle(0x5000));
        assert_eq!(full.group_segment_size, 4096);
        assert_eq!(full.dimensions(), 1);
    }

    #[test]
    fn dispatch_validation_names_the_problem() {
        let ok = KernelDispatch {
            dimensions: 2,
            grid_size: [64, 64, 1],
            workgroup_size: [16, 16, 1],
            ..KernelDispatch::linear(KD, KERNARG, 1, 1)
        };
        let limits = DispatchLimits::AMD_GPU;
        assert!(ok.build(&limits).is_ok());
        let cases: [(KernelDispatch, PacketError); 11] = [
            (
                KernelDispatch {
                    dimensions: 0,
                    ..ok
                },
                PacketError::Dimensions(0),
            ),
            (
                KernelDispatch {
                    dimensions: 4,
                    ..ok
                },
                PacketError::Dimensions(4),
            ),
            (
                KernelDispatch {
                    grid_size: [64, 0, 1],
                    ..ok
                },
                PacketError::ZeroSize { axis: 1 },
            ),
            (
                KernelDispatch {
                    workgroup_size: [0, 16, 1],
                    ..ok
                },
                PacketError::ZeroSize { axis: 0 },
            ),
            (
                KernelDispatch {
                    grid_size: [64, 64, 2],
                    ..ok
                },
                PacketError::UnusedDimension { axis: 2 },
            ),
            (
                KernelDispatch {
                    workgroup_size: [2048, 1, 1],
                    ..ok
                },
                PacketError::WorkgroupDimTooLarge {
                    axis: 0,
                    size: 2048,
                    max: 1024,
                },
            ),
            (
                KernelDispatch {
                    workgroup_size: [64, 32, 1],
                    ..ok
                },
                PacketError::WorkgroupTooLarge {
                    size: 2048,
                    max: 1024,
                },
            ),
            (
                KernelDispatch {
                    dimensions: 3,
                    grid_size: [65536, 65536, 2],
                    workgroup_size: [1, 1, 1],
                    ..ok
                },
                PacketError::GridTooLarge {
                    size: 1 << 33,
                    max: u32::MAX as u64,
                },
            ),
            (
                KernelDispatch {
                    kernel_object: KD + 8,
                    ..ok
                },
                PacketError::KernelObject(KD + 8),
            ),
            (
                KernelDispatch {
                    kernarg_address: KERNARG + 4,
                    ..ok
                },
                PacketError::KernargAlignment(KERNARG + 4),
            ),
            (
                KernelDispatch {
                    ordering: Ordering {
                        barrier: false,
                        acquire: FenceScope(3),
                        release: FenceScope::NONE,
                    },
                    ..ok
                },
                PacketError::FenceScope(3),
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(spec.build(&limits), Err(expected), "{spec:?}");
            // Every refusal explains itself.
            assert!(!format!("{expected}").is_empty());
        }
        let small = DispatchLimits {
            max_group_segment_size: 1024,
            max_grid_dim: [100, 100, 100],
            ..limits
        };
        assert_eq!(
            KernelDispatch {
                group_segment_size: 2048,
                ..ok
            }
            .build(&small),
            Err(PacketError::GroupSegmentTooLarge {
                size: 2048,
                max: 1024
            })
        );
        assert_eq!(
            KernelDispatch {
                grid_size: [101, 1, 1],
                ..ok
            }
            .build(&small),
            Err(PacketError::GridDimTooLarge {
                axis: 0,
                size: 101,
                max: 100
            })
        );
        // A partial last workgroup and a workgroup larger than the grid are
        // both legal AQL.
        assert!(
            KernelDispatch::linear(KD, KERNARG, 7, 256)
                .build(&limits)
                .is_ok()
        );
    }

    #[test]
    fn barriers_fill_dependencies_in_order() {
        let deps = [SignalHandle(0x40), SignalHandle(0x80)];
        let p = barrier(
            BarrierKind::And,
            &deps,
            SignalHandle(0xc0),
            Ordering::AGENT.with_barrier(),
        )
        .unwrap();
        let BarrierPacket::And(and) = p else {
            panic!("not an AND barrier")
        };
        assert_eq!(
            and.body.dep_signal,
            [
                SignalHandle(0x40),
                SignalHandle(0x80),
                SignalHandle::NULL,
                SignalHandle::NULL,
                SignalHandle::NULL
            ]
        );
        assert_eq!(and.header.packet_type(), PacketType::BARRIER_AND);
        assert!(and.header.barrier());
        assert_eq!(p.first_word(), 3 | 1 << 8 | 1 << 9 | 1 << 11);
        let bytes = p.body_bytes();
        assert_eq!(
            &bytes[0..2],
            &1u16.to_le_bytes(),
            "body header stays INVALID"
        );
        assert_eq!(&bytes[8..16], &0x40u64.to_le_bytes());
        assert_eq!(&bytes[56..64], &0xc0u64.to_le_bytes());

        let or = barrier(BarrierKind::Or, &[], SignalHandle::NULL, Ordering::SYSTEM).unwrap();
        assert_eq!(or.first_word() & 0xff, 5);
        assert_eq!(
            barrier(
                BarrierKind::Or,
                &[SignalHandle(64); 6],
                SignalHandle::NULL,
                Ordering::SYSTEM
            ),
            Err(PacketError::TooManyDependencies(6))
        );
    }

    #[test]
    fn agent_dispatch_keeps_its_function_in_the_first_word() {
        let p = agent_dispatch(
            0x1234,
            [1, 2, 3, 4],
            0x9000,
            SignalHandle(0x40),
            Ordering::SYSTEM,
        )
        .unwrap();
        assert_eq!(p.first_word() >> 16, 0x1234);
        assert_eq!(p.first_word() & 0xff, 4);
        assert_eq!(p.published().arg, [1, 2, 3, 4]);
    }
}
