//! Address-space events (`mmap`, `munmap`, `brk`): the OS's side of
//! [`AddressSpaceEvent`]s in the reference stream.
//!
//! - **Map** records the range as mapped ([`Mappings`](super::vma::Mappings)), after unmapping whatever it held,
//!   as `mmap` over an existing mapping (`MAP_FIXED`) does. Its pages are mapped lazily, at
//!   their first touch, as before.
//! - **Unmap** (Linux's `zap_page_range`, then the VMA's removal) finds every object in the
//!   range through the driver's iterator (whose work counts for the unmap), removes it,
//!   frees its frame (and the swap slot of a page swapped out, or read ahead), and shoots
//!   the page down. A 2 MiB page the range covers in part is split first
//!   ([`super::kernel_work::Operation::Split`]): its base pages stay in their frames, and
//!   those inside the range go.
//!
//! Once an event names an address space, its mappings decide where transparent huge pages
//! may go (an aligned 2 MiB range wholly inside one mapping), and faults outside every
//! mapping are counted (`os.address_space.faults_outside_mappings`; the page is mapped all
//! the same, since a recording may miss mappings made before it started).
//!
//! After an unmap that removed a mapping, the driver frees the page-table pages left empty
//! whose whole reach lies in the unmapped space around the range (Linux's `free_pgtables`,
//! whose floor and ceiling are the neighbouring mappings; [`crate::mmu::PageTableDriver::free_tables`]):
//! radix and FPT tables; ECPT's ways are not per range and stay.

use super::kernel_work::Operation;
use super::placement::Placer;
use super::{NoFrame, Os, OutOfMemory, Presence, TranslationObject};
use crate::memref::{AddressSpaceEvent, RangeOp};
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn};
use serde::Serialize;
use std::ops::{ControlFlow, Range};

/// What address-space events did (`results.json`'s `os.address_space`, present once the
/// stream held an event).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AddressSpaceStats {
    /// Map events applied.
    pub maps: u64,
    /// Unmap events applied.
    pub unmaps: u64,
    /// Base pages whose frames unmapping freed (512 for a 2 MiB page).
    pub pages_freed: u64,
    /// Pages swapped out (not in memory) that unmapping dropped, freeing their swap slots.
    pub swapped_pages_dropped: u64,
    /// Page faults on addresses outside every mapping of an address space that events
    /// name.
    pub faults_outside_mappings: u64,
}

/// Bytes of a 2 MiB page.
const HUGE_BYTES: u64 = 2 << 20;

impl Os {
    /// Applies `event`: a call of [`Operation::Map`] or [`Operation::Unmap`]. Pages it
    /// unmaps are left for a shootdown ([`Os::take_shootdowns`]). Fails only when a split
    /// finds no frame for the page-table page its base pages need.
    pub fn apply(&mut self, event: &AddressSpaceEvent) -> std::result::Result<(), OutOfMemory> {
        let (asid, range) = (event.asid, event.pages());
        let stats = self.address_space.get_or_insert_with(AddressSpaceStats::default);
        let op = match event.op {
            RangeOp::Map => {
                stats.maps += 1;
                Operation::Map
            }
            RangeOp::Unmap => {
                stats.unmaps += 1;
                Operation::Unmap
            }
        };
        self.call(op, |os| os.unmap_range(asid, range.clone())).map_err(|reason| OutOfMemory { asid, vaddr: range.start, reason })?;
        if event.op == RangeOp::Map {
            self.mappings.map(asid, range);
        }
        Ok(())
    }

    /// Unmaps `range` of `asid`, as `munmap` does (and `mmap` over a mapping first): its
    /// pages go, then the mappings, then the page-table pages left empty in the unmapped
    /// space around it (`free_pgtables`, only where a mapping was removed).
    fn unmap_range(&mut self, asid: Asid, range: Range<u64>) -> std::result::Result<(), NoFrame> {
        let removed = self.mappings.overlaps(asid, range.clone());
        self.zap(asid, range.clone())?;
        self.mappings.unmap(asid, range.clone());
        if self.walks_read {
            if removed {
                let gap = self.mappings.gap(asid, range.start);
                self.translations.free_tables(asid, range, gap);
            }
            self.release_tables();
        }
        Ok(())
    }

    /// Unmaps every page of `range` of `asid` that has an object. Only the 2 MiB runs
    /// holding a leaf of the store are iterated: a run without one has no object, and the
    /// kernel skips its empty directory entry (a huge reservation costs nothing).
    fn zap(&mut self, asid: Asid, range: Range<u64>) -> std::result::Result<(), NoFrame> {
        let objects = self.objects_in(asid, range.clone());
        for (vaddr, object) in objects {
            let bytes = object.size.bytes();
            if vaddr < range.start || vaddr + bytes > range.end {
                // A page of the OS's own size is kept whole while part of it stays mapped;
                // a transparent huge page is split.
                if object.size == self.spec.page_size {
                    continue;
                }
                self.split(asid, vaddr)?;
                let inside = vaddr.max(range.start)..(vaddr + bytes).min(range.end);
                for page in inside.step_by(PageSize::Size4K.bytes() as usize) {
                    let frame = self.translations.remove(asid, Vpn(page >> PageSize::Size4K.shift()));
                    self.page_unmapped(asid, page, PageSize::Size4K, frame);
                }
                continue;
            }
            let frame = self.translations.remove(asid, object.size.first_vpn(vaddr));
            match object.presence {
                Presence::Present { .. } => self.page_unmapped(asid, vaddr, object.size, frame),
                Presence::Swapped => self.swapped_page_unmapped(asid, vaddr),
            }
        }
        self.stats.mapped_pages = self.translations.store().len() as u64;
        Ok(())
    }

    /// Every object in `range` of `asid` (a page that starts before it included) with its
    /// page's first address, found through the driver's iterator. Only the spans of 512 pages
    /// holding a leaf of the store are iterated: a span without one has no object, and the
    /// kernel skips its empty directory entry (a huge reservation costs nothing).
    fn objects_in(&mut self, asid: Asid, range: Range<u64>) -> Vec<(u64, TranslationObject)> {
        let mut objects = Vec::new();
        for first in self.spans_with_leaves(asid, &range) {
            let part = first.max(range.start)..first.saturating_add(self.spec.page_size.bytes() << 9).min(range.end);
            let _ = self.translations.iterate(asid, part, &mut |vaddr, object| {
                objects.push((vaddr, object));
                ControlFlow::Continue(())
            });
        }
        objects
    }

    /// The first addresses of the spans of 512 pages overlapping `range` of `asid` that
    /// hold a leaf, in order: each span tested when they are fewer than the leaves, else the
    /// leaves listed (a range of the whole address space costs what the table holds).
    fn spans_with_leaves(&mut self, asid: Asid, range: &Range<u64>) -> Vec<u64> {
        let span = self.spec.page_size.bytes() << 9;
        let first = range.start & !(span - 1);
        let store = self.translations.store_mut();
        if (range.end - first) / span > store.leaf_count() as u64 {
            let leaves = store.leaf_ranges().into_iter();
            return leaves.filter(|&(a, start)| a == asid && start >= first && start < range.end).map(|(_, start)| start).collect();
        }
        let spans = (first..range.end).step_by(span as usize);
        spans.filter(|&start| store.has_leaf(asid, start)).collect()
    }

    /// The present page of `size` at `vaddr` of `asid`, whose object was just removed from
    /// `frame` (in units of the OS's page size; a 2 MiB page's first base frame), leaves
    /// memory: its frames freed, its TLB entries shot down.
    fn page_unmapped(&mut self, asid: Asid, vaddr: u64, size: PageSize, frame: Option<u64>) {
        let frame = frame.expect("a present page has a frame");
        if size == PageSize::Size2M && self.spec.page_size != size {
            self.free_huge(frame);
            self.thp_stats.huge_pages -= 1;
        } else {
            self.free_frame(frame);
        }
        self.address_space.as_mut().expect("set by apply").pages_freed += size.base_pages();
        self.shoot_down(asid, size.first_vpn(vaddr), size);
    }

    /// The swapped-out page at `vaddr` of `asid`, whose object was just removed: its swap
    /// slot is freed, and its frame too if it was read ahead (its slot then goes with the
    /// frame's copy flag). No TLB holds it.
    fn swapped_page_unmapped(&mut self, asid: Asid, vaddr: u64) {
        let page = vaddr >> self.spec.page_size.shift();
        match self.readahead.as_mut().and_then(|ra| ra.forget(asid, page)) {
            Some((frame, _)) => self.free_frame(frame),
            None => {
                self.swap.free();
                self.address_space.as_mut().expect("set by apply").swapped_pages_dropped += 1;
            }
        }
    }

    /// Frees `frame` (in units of the OS's page size), whose page left memory other than by
    /// eviction: no swap write, no eviction counted, and the policies forget the page.
    pub(super) fn free_frame(&mut self, frame: u64) {
        self.utilization.change(self.clock, self.frames.used());
        if let Some(age) = &mut self.age {
            age.forget(self.frames.stamp(frame));
        }
        self.frames.vacate(frame);
        // A page with a good copy in swap held its slot.
        if self.swap_copy.get_mut(frame as usize).is_some_and(std::mem::take) {
            self.swap.free();
        }
        if let Some(scanner) = &mut self.scanner {
            scanner.forget(frame);
        }
        self.policy.freed(frame);
        if let Placer::Fully(alloc) = &mut self.placer {
            alloc.free(frame);
        }
        self.frame_freed(frame);
    }

    /// Splits the 2 MiB page holding `vaddr` of `asid` into its 512 base pages, in the same
    /// frames (a call of [`Operation::Split`]): the huge entry removed, the base pages'
    /// table placed and their entries written, the huge page shot down.
    fn split(&mut self, asid: Asid, vaddr: u64) -> std::result::Result<(), NoFrame> {
        self.call(Operation::Split, |os| {
            let vpn = PageSize::Size2M.first_vpn(vaddr);
            let first = os.translations.remove(asid, vpn).expect("a huge page is present");
            os.place_split_tables(asid, vpn);
            for i in 0..PageSize::Size2M.base_pages() {
                os.map_translation(Translation { asid, vpn: Vpn(vpn.0 + i), pfn: Pfn(first + i), size: PageSize::Size4K }, 0)?;
            }
            os.split_in_place(asid, vpn, first);
            os.thp_stats.huge_pages -= 1;
            os.thp_stats.splits += 1;
            os.shoot_down(asid, vpn, PageSize::Size2M);
            Ok(())
        })
    }

    /// Counts a fault on `vaddr` of `asid` outside its mappings, when events name `asid`.
    pub(super) fn check_mapped(&mut self, asid: Asid, vaddr: u64) {
        if let Some(stats) = &mut self.address_space {
            if !self.mappings.contains(asid, vaddr) {
                stats.faults_outside_mappings += 1;
            }
        }
    }

    /// True when transparent huge pages may map the aligned 2 MiB range holding `vaddr`
    /// of `asid`: it lies wholly inside one mapping (any range does while no event names
    /// `asid`).
    pub(super) fn huge_allowed(&self, asid: Asid, vaddr: u64) -> bool {
        let first = vaddr & !(HUGE_BYTES - 1);
        self.mappings.inside_one(asid, first..first + HUGE_BYTES)
    }
}
