//! Recording dispatches: kernel arguments checked against the kernel's
//! metadata and bound buffers patched in, the launch checked against the
//! kernel's and the agent's limits, the packet prepared at record time,
//! and the fast layout ([`IssueShape`]) the device's fast path issues
//! without a check — with a repeat of the last dispatch recorded from a
//! copy of it.

use aqueduct_abi::command::{
    BindingPatch, BufferRef, BufferRefKind, CommandOpcode, DispatchCommand, DispatchFlags,
    FAST_ARGUMENT_BYTES, FAST_PATCHES, IssueShape, KERNARG_ALIGN, KernelInfo, PatchArgs,
};
use aqueduct_abi::packet::{KernelDispatch, Ordering};
use zerocopy::{FromZeros, IntoBytes};

use crate::dispatch::{Kernargs, KernelFacts, Launch, plan};
use crate::error::Result;
use crate::executable::Kernel;

use super::super::error::CommandError;
use super::{Again, CommandBufferBuilder, Repeat, Workgroups, kernel_info};

impl CommandBufferBuilder {
    /// `kernel`'s [`KernelInfo`] and its device address, written once per
    /// recording.
    fn info_of(&mut self, kernel: &Kernel) -> Result<(u64, KernelInfo)> {
        if let Some(&(_, at, info)) = self.infos.iter().find(|(o, ..)| *o == kernel.object()) {
            return Ok((at, info));
        }
        let info = kernel_info(kernel);
        let at = self.arena.put(info.as_bytes(), 64)?;
        self.infos.push((kernel.object(), at, info));
        self.kernels.push(kernel.clone());
        Ok((at, info))
    }

    /// How many dispatches were recorded from a copy of the one before:
    /// a dispatch of the same kernel and launch as the last direct one,
    /// under the same ordering, with arguments that need nothing from the
    /// launch, is checked and written only where it differs. For tests and
    /// benchmarks; what is recorded is the same either way.
    pub fn repeated_dispatches(&self) -> u32 {
        self.repeated
    }

    /// Records a dispatch of `kernel` over `workgroups` with `args`
    /// (pointer arguments may be [`Kernargs::bind`] references). Returns
    /// the command's index.
    pub fn dispatch(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        args: &Kernargs,
    ) -> Result<u32> {
        self.pending_needs.clear();
        match self.dispatch_again(kernel, &workgroups, args) {
            Again::Recorded(index) => Ok(index),
            Again::Refused(e) => Err(*e),
            Again::Not => self.record_dispatch(kernel, workgroups, args, None),
        }
    }

    /// A dispatch of the same kernel and launch as the last direct one,
    /// under the same ordering, with arguments that need nothing from the
    /// launch: recorded from a copy of the last, which
    /// [`CommandBufferBuilder::record_dispatch`] checked, with only what
    /// differs checked and filled in (its place, arguments and bindings).
    /// [`Again::Not`] for anything else (another kernel, launch or
    /// ordering, a full block, incomplete arguments), which the full path
    /// then records or refuses with its error; [`Again::Refused`] for
    /// arguments it refuses, with the full path's error.
    fn dispatch_again(
        &mut self,
        kernel: &Kernel,
        workgroups: &Workgroups,
        args: &Kernargs,
    ) -> Again {
        const KIND: &str = "dispatch";
        let Some(r) = self.repeat.as_ref() else {
            return Again::Not;
        };
        let b = &self.blocks[self.current];
        let size = r.command.kernarg_size;
        let same = r.object == kernel.object()
            && args.kernel_object() == r.object
            && kernel.agent().handle() == self.agent.handle()
            && r.workgroups == *workgroups
            && r.ordering == self.ordering
            && !b.ended
            && b.count + 1 < self.capacity
            && u64::from(b.kernarg_size)
                + u64::from(
                    size.next_multiple_of(KERNARG_ALIGN)
                        .max(FAST_ARGUMENT_BYTES),
                )
                <= u64::from(u32::MAX);
        let Some(segment) = args.complete().filter(|_| same) else {
            return Again::Not;
        };
        let (mut d, prepared) = (r.command, r.prepared);
        d.header.packet_offset = b.packets;
        d.header.kernarg_offset = b.kernarg_size;
        if prepared {
            match self.place_vouched(args, segment, &mut d) {
                Ok(true) => {
                    self.repeated += 1;
                    return Again::Recorded(self.append_bytes(
                        d.as_bytes(),
                        d.header.packet_count,
                        FAST_ARGUMENT_BYTES,
                    ));
                }
                Ok(false) => {}
                Err(e) => return Again::Refused(Box::new(e)),
            }
        }
        let mut patches = std::mem::take(&mut self.patches);
        patches.clear();
        // The fast layout only for a repeat that is vouched for: one whose
        // packet is prepared (as the full path decides).
        let placed = self.place_arguments(KIND, args, segment, &mut patches, prepared);
        d.binding_count = patches.len() as u16;
        self.patches = patches;
        match placed {
            Ok((template, bindings, shape)) => {
                d.kernarg_template = template;
                d.bindings = bindings;
                // What `issue_shape` says, known without asking: the
                // repeat's packet, flags and places are as vouchable as the
                // last's (direct, 64- and 16-byte aligned), so its
                // arguments decide (placed in the fast layout only if
                // `prepared`).
                d.header.issue_shape = shape.unwrap_or(IssueShape::NONE);
                debug_assert_eq!(d.header.issue_shape, d.issue_shape(&self.patches));
                self.repeated += 1;
                let share = if shape.is_some() {
                    FAST_ARGUMENT_BYTES
                } else {
                    size
                };
                Again::Recorded(self.append_bytes(d.as_bytes(), d.header.packet_count, share))
            }
            Err(e) => Again::Refused(Box::new(e)),
        }
    }

    /// [`Self::place_arguments`] for the common repeat, checked without
    /// building an error: arguments in the fast layout whose bound
    /// arguments are all binding-table references to slots already seen,
    /// each in range. Places them and sets `d`'s template, patch list,
    /// binding count and [`IssueShape`]; `false` (`d` untouched) for
    /// anything else, which the full path decides and, if wrong, names.
    fn place_vouched(
        &mut self,
        args: &Kernargs,
        segment: &[u8],
        d: &mut DispatchCommand,
    ) -> Result<bool> {
        let bound = args.patches();
        if bound.len() > FAST_PATCHES {
            return Ok(false);
        }
        let mut own = [BindingPatch::FILLER; FAST_PATCHES];
        for (patch, &(offset, r)) in own.iter_mut().zip(bound) {
            // What check_ref and binding_patch accept: a slot already seen
            // (so below MAX_BINDING_SLOTS), a range that does not overflow;
            // a bound argument needs no alignment. (A need pended here
            // before a later argument sends the dispatch down the full path
            // is pended there again: the larger end wins.)
            let (Some(end), true, Ok(place)) = (
                r.offset.checked_add(r.length),
                r.kind == BufferRefKind::BINDING,
                u16::try_from(offset),
            ) else {
                return Ok(false);
            };
            let Some(&need) = self.slot_sizes.get(r.slot as usize) else {
                return Ok(false);
            };
            if need < end {
                self.pending_needs.push((r.slot, end));
            }
            *patch = BindingPatch::binding(r.slot, r.offset, place);
        }
        let own = &own[..bound.len()];
        let (Some(shape), Some(list)) = (
            DispatchCommand::fast_shape(segment.len() as u32, own),
            BindingPatch::fast_list(own),
        ) else {
            return Ok(false);
        };
        let (template, bindings) = self.put_fast(segment, list)?;
        d.kernarg_template = template;
        d.bindings = bindings;
        d.binding_count = own.len() as u16;
        d.header.issue_shape = shape;
        debug_assert_eq!(shape, d.issue_shape(own));
        Ok(true)
    }

    /// A dispatch's binding patches (into `patches`), then its template
    /// and patches in the arena: their device addresses (0 for none), and
    /// the [`IssueShape`] of the issue's fast layout if they have it, which
    /// they get if `fast` and the arguments fit it
    /// ([`DispatchCommand::fast_shape`]): the template readable for
    /// [`FAST_ARGUMENT_BYTES`], the list padded to [`FAST_PATCHES`] with
    /// copies of its last patch (`patches` keeps the dispatch's own).
    fn place_arguments(
        &mut self,
        kind: &'static str,
        args: &Kernargs,
        segment: &[u8],
        patches: &mut Vec<BindingPatch>,
        fast: bool,
    ) -> Result<(u64, u64, Option<IssueShape>)> {
        for &(offset, buffer) in args.patches() {
            patches.push(self.binding_patch(kind, offset, &buffer)?);
        }
        // (A shape allows at most FAST_PATCHES patches.)
        if fast
            && let Some(shape) = DispatchCommand::fast_shape(segment.len() as u32, patches)
            && let Some(list) = BindingPatch::fast_list(patches)
        {
            let (template, bindings) = self.put_fast(segment, list)?;
            return Ok((template, bindings, Some(shape)));
        }
        let template = if segment.is_empty() {
            0
        } else {
            self.arena.put(segment, 16)?
        };
        let bindings = if patches.is_empty() {
            0
        } else {
            self.arena.put(patches.as_bytes(), 16)?
        };
        Ok((template, bindings, None))
    }

    /// Puts a template and patch list in the fast layout (the template
    /// readable for [`FAST_ARGUMENT_BYTES`]), or shares what was put last
    /// if equal; returns their device addresses. (Inlined: a call costs the
    /// repeat's path about 15 instructions of its 460.)
    #[inline(always)]
    fn put_fast(
        &mut self,
        segment: &[u8],
        list: [BindingPatch; FAST_PATCHES],
    ) -> Result<(u64, u64)> {
        let last = &mut self.last_fast;
        let len = segment.len();
        if last.template_at == 0 || last.template_len != len || last.template[..len] != *segment {
            last.template_at =
                self.arena
                    .put_readable(segment, FAST_ARGUMENT_BYTES as usize, 16)?;
            last.template[..len].copy_from_slice(segment);
            last.template_len = len;
        }
        // As bytes: one wide compare, not field by field.
        if last.patches_at == 0 || last.patches.as_bytes() != list.as_bytes() {
            last.patches_at = self.arena.put(list.as_bytes(), 16)?;
            last.patches = list;
        }
        Ok((last.template_at, last.patches_at))
    }

    /// Records a dispatch whose workgroup count, three u32s, is read from
    /// `count` when the block issues (its contents must be final by
    /// then: written before the submission). `workgroups.count` is ignored.
    pub fn dispatch_indirect(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        count: BufferRef,
        args: &Kernargs,
    ) -> Result<u32> {
        self.record_dispatch(
            kernel,
            workgroups,
            args,
            Some((count, DispatchFlags::INDIRECT_STATIC)),
        )
    }

    /// Records a dispatch whose workgroup count is read when the dispatch
    /// is about to run, after everything before it: earlier commands of the
    /// same command buffer may compute it. It costs a second packet, a
    /// one-work-item patch kernel that writes the count into the dispatch's
    /// packet and publishes it (a count of 0 makes it a no-op).
    pub fn dispatch_indirect_dynamic(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        count: BufferRef,
        args: &Kernargs,
    ) -> Result<u32> {
        self.record_dispatch(
            kernel,
            workgroups,
            args,
            Some((count, DispatchFlags::INDIRECT_DYNAMIC)),
        )
    }

    fn record_dispatch(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        args: &Kernargs,
        indirect: Option<(BufferRef, DispatchFlags)>,
    ) -> Result<u32> {
        const KIND: &str = "dispatch";
        // (dispatch_again pends nothing before it leaves the dispatch here.)
        self.pending_needs.clear();
        let name = || kernel.name().to_string();
        if kernel.agent().handle() != self.agent.handle() {
            return Err(self.refuse(
                KIND,
                CommandError::Agent {
                    kernel: name(),
                    loaded: kernel.agent().info().name.clone(),
                    recording: self.agent_name.clone(),
                },
            ));
        }
        if args.kernel_object() != kernel.object() {
            return Err(self.refuse(KIND, CommandError::OtherKernel(name())));
        }
        // The launch as a plain dispatch would check it, with one
        // workgroup per dimension standing in for an indirect count.
        let count = if indirect.is_some() {
            [1; 3]
        } else {
            workgroups.count
        };
        let mut grid = [1u32; 3];
        for axis in 0..3 {
            grid[axis] = count[axis]
                .checked_mul(u32::from(workgroups.size[axis]))
                .ok_or_else(|| {
                    self.refuse(
                        KIND,
                        CommandError::Launch(format!(
                            "{}: {count:?} workgroups of {:?} overflow the grid",
                            name(),
                            workgroups.size
                        )),
                    )
                })?;
        }
        let launch = Launch {
            dimensions: workgroups.dimensions,
            grid,
            workgroup: workgroups.size,
            dynamic_lds: workgroups.dynamic_lds,
            ordering: Ordering::AGENT,
        };
        let facts = KernelFacts {
            meta: kernel.metadata(),
            object: kernel.object(),
            group_segment_size: kernel.group_segment_size(),
            private_segment_size: kernel.private_segment_size(),
        };
        // Zero workgroups is a valid recording (the issue writes a no-op).
        // A launch checked for this kernel just before is not checked again.
        let this = (kernel.object(), workgroups, indirect.is_some());
        if !count.contains(&0) && self.last_launch != Some(this) {
            let checked: Result<KernelDispatch> = plan(facts, &self.limits, &launch, args);
            checked.map_err(|e| self.refuse(KIND, CommandError::Launch(e.to_string())))?;
        }
        for arg in args.hidden() {
            let unknown = arg.value_kind == "hidden_queue_ptr"
                || (indirect.is_some()
                    && (arg.value_kind.starts_with("hidden_block_count")
                        || arg.value_kind.starts_with("hidden_remainder")));
            if unknown {
                return Err(self.refuse(
                    KIND,
                    CommandError::Hidden {
                        kernel: name(),
                        argument: arg.value_kind.clone(),
                    },
                ));
            }
        }
        let segment = args
            .template(&launch, 0)
            .map_err(|e| self.refuse(KIND, CommandError::Arguments(e.to_string())))?;
        if let Some((r, _)) = &indirect {
            if r.length < 12 {
                return Err(self.refuse(
                    KIND,
                    CommandError::Range {
                        offset: r.offset,
                        length: r.length,
                        problem: "is shorter than the 12 bytes of a workgroup count",
                    },
                ));
            }
            self.check_ref(r, 4, "an indirect workgroup count")
                .map_err(|e| self.refuse(KIND, e))?;
        }
        let mut patches = std::mem::take(&mut self.patches);
        patches.clear();
        // The fast layout for a dispatch whose packet the recorder
        // prepares (direct, with workgroups).
        let prepared = indirect.is_none() && !count.contains(&0);
        let placed = self.place_arguments(KIND, args, &segment, &mut patches, prepared);
        let binding_count = patches.len() as u16;
        self.patches = patches;
        let (template, bindings, shape) = placed?;
        let recorded = self.record_dispatch_with(
            kernel,
            workgroups,
            indirect,
            (template, bindings, binding_count, shape.is_some()),
        );
        if recorded.is_ok() {
            self.last_launch = Some(this);
        }
        recorded
    }

    /// [`CommandBufferBuilder::record_dispatch`] once everything is
    /// checked and the arguments are placed (`arguments`: the template's
    /// and the patches' addresses, the number of patches): the slot, the
    /// kernel's info, the command.
    fn record_dispatch_with(
        &mut self,
        kernel: &Kernel,
        workgroups: Workgroups,
        indirect: Option<(BufferRef, DispatchFlags)>,
        arguments: (u64, u64, u16, bool),
    ) -> Result<u32> {
        let (template, bindings, binding_count, fast) = arguments;
        const KIND: &str = "dispatch";
        let size = kernel.kernarg_segment_size();
        let dynamic = matches!(indirect, Some((_, DispatchFlags::INDIRECT_DYNAMIC)));
        let claimed = if dynamic {
            size.next_multiple_of(KERNARG_ALIGN) + size_of::<PatchArgs>() as u32
        } else if fast {
            FAST_ARGUMENT_BYTES
        } else {
            size
        };
        let mut header = self.claim(KIND, CommandOpcode::DISPATCH, claimed)?;
        if dynamic {
            header.packet_count = 2;
        }
        let (info_at, info) = self.info_of(kernel)?;
        let mut d = DispatchCommand::new_zeroed();
        d.header = header;
        d.kernel = info_at;
        d.dispatch_flags = indirect.map_or(DispatchFlags::empty(), |(_, flags)| flags);
        d.workgroup_size = workgroups.size;
        d.workgroup_count = workgroups.count;
        d.dynamic_group_segment_size = workgroups.dynamic_lds;
        d.kernarg_template = template;
        d.kernarg_size = size;
        d.binding_count = binding_count;
        d.dimensions = workgroups.dimensions;
        d.bindings = bindings;
        if let Some((r, _)) = indirect {
            d.workgroup_count_ref = r;
        } else {
            // The packet the issue would build, prepared now: the issue
            // copies it and fills in the kernarg address. The launch was
            // checked above, so a refusal here cannot happen; the issue
            // would build (and refuse) it again. Identical dispatches in a
            // row share one.
            let h = &d.header;
            let key = (
                kernel.object(),
                workgroups,
                [h.flags.bits(), h.acquire_scope.0, h.release_scope.0],
            );
            match self.last_packet {
                Some((k, at)) if k == key => d.packet = at,
                _ => {
                    if let Ok(Some(packet)) = d.build_packet(&info, 0, d.workgroup_count) {
                        d.packet = self.arena.put(packet.published().as_bytes(), 64)?;
                        self.last_packet = Some((key, d.packet));
                    }
                }
            }
        }
        d.header.issue_shape = d.issue_shape(&self.patches);
        if indirect.is_none() {
            self.repeat = Some(Repeat {
                object: kernel.object(),
                workgroups,
                ordering: self.ordering,
                command: d,
                prepared: d.packet != 0,
            });
        }
        Ok(self.append_bytes(d.as_bytes(), d.header.packet_count, claimed))
    }
}
