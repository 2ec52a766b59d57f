//! Work distribution for one-dimensional grid-stride kernels.
//!
//! An AQL dispatch launches `grid_size` work-items in workgroups of
//! `workgroup_size` (HSA spec 2.9.6: the grid size counts work-items, not
//! workgroups, and need not be a multiple of the workgroup size; the last
//! workgroup is then partial). A grid-stride kernel lets work-item `g` handle
//! elements `g, g + grid_size, g + 2 * grid_size, ...` below `len`, so any grid
//! covers any length exactly once. This module is that arithmetic, and nothing
//! else; it runs unchanged on the host, where it is tested.

/// The x dimension of a dispatch as one work-item sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkItem {
    /// `workgroup_id_x` of the work-item's workgroup.
    pub workgroup_id: u32,
    /// `workitem_id_x` within the workgroup.
    pub local_id: u32,
    /// `workgroup_size_x` of the dispatch packet.
    pub workgroup_size: u32,
    /// `grid_size_x` of the dispatch packet, in work-items.
    pub grid_size: u32,
}

impl WorkItem {
    /// The flat index of this work-item in the grid.
    ///
    /// Computed in `u64`: `workgroup_id * workgroup_size` can exceed `u32`
    /// only for grids the packet cannot describe, but the product is formed
    /// before that is known.
    pub fn global_id(&self) -> u64 {
        u64::from(self.workgroup_id) * u64::from(self.workgroup_size) + u64::from(self.local_id)
    }

    /// The element indices below `len` that this work-item owns.
    pub fn stride(&self, len: u64) -> GridStride {
        GridStride {
            next: self.global_id(),
            step: u64::from(self.grid_size),
            len,
        }
    }
}

/// Iterator over `start, start + step, ...` below `len`.
///
/// A `step` of zero (a grid of no work-items, which no valid packet
/// describes) yields at most the first index instead of looping forever; an
/// index that would overflow `u64` ends the iteration.
#[derive(Clone, Debug)]
pub struct GridStride {
    next: u64,
    step: u64,
    len: u64,
}

impl Iterator for GridStride {
    type Item = u64;

    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        if self.next >= self.len {
            return None;
        }
        let current = self.next;
        self.next = match current.checked_add(self.step) {
            Some(next) if self.step != 0 => next,
            _ => self.len,
        };
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// Every work-item of a dispatch, as the packet processor would launch it.
    fn work_items(grid_size: u32, workgroup_size: u32) -> Vec<WorkItem> {
        let groups = grid_size.div_ceil(workgroup_size);
        let mut items = Vec::new();
        for workgroup_id in 0..groups {
            for local_id in 0..workgroup_size {
                let item = WorkItem {
                    workgroup_id,
                    local_id,
                    workgroup_size,
                    grid_size,
                };
                // The partial last workgroup has no work-items past the grid.
                if item.global_id() < u64::from(grid_size) {
                    items.push(item);
                }
            }
        }
        items
    }

    fn coverage(grid_size: u32, workgroup_size: u32, len: u64) -> Vec<u32> {
        let mut hits = vec![0u32; len as usize];
        for item in work_items(grid_size, workgroup_size) {
            for i in item.stride(len) {
                hits[i as usize] += 1;
            }
        }
        hits
    }

    #[test]
    fn every_element_is_visited_exactly_once() {
        for (grid, wg) in [(1, 1), (64, 64), (256, 64), (100, 64), (1000, 256), (7, 3)] {
            for len in [0u64, 1, 2, 63, 64, 65, 255, 256, 257, 1000, 4099] {
                let hits = coverage(grid, wg, len);
                assert!(
                    hits.iter().all(|&h| h == 1),
                    "grid {grid}, workgroup {wg}, len {len}: {hits:?}"
                );
            }
        }
    }

    #[test]
    fn global_id_does_not_wrap_in_u32() {
        let item = WorkItem {
            workgroup_id: u32::MAX,
            local_id: 5,
            workgroup_size: 1024,
            grid_size: u32::MAX,
        };
        assert_eq!(item.global_id(), u64::from(u32::MAX) * 1024 + 5);
    }

    #[test]
    fn stride_stops_before_overflowing_u64() {
        let item = WorkItem {
            workgroup_id: 0,
            local_id: 0,
            workgroup_size: 1,
            grid_size: 4,
        };
        let mut it = item.stride(u64::MAX);
        it.next = u64::MAX - 2;
        assert_eq!(it.collect::<Vec<_>>(), vec![u64::MAX - 2]);
    }

    #[test]
    fn zero_grid_yields_only_the_first_index() {
        let item = WorkItem {
            workgroup_id: 0,
            local_id: 3,
            workgroup_size: 8,
            grid_size: 0,
        };
        assert_eq!(item.stride(100).collect::<Vec<_>>(), vec![3]);
    }
}
