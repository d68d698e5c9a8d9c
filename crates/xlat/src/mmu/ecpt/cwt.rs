//! ECPT's cuckoo walk tables (CWTs): which page sizes each section of the address space
//! holds, so that a walk probes only the ways that can hold its address (the research
//! sheet's section 2).
//!
//! A section is the range one cluster of the table's large page size covers: 16 MiB (eight
//! 2 MiB pages) for the PMD-CWT, 8 GiB (eight 1 GiB pages) for the PUD-CWT. Its header says
//! which sizes have clusters in it (and, in the hardware, the way of its large cluster,
//! which a walk here reads from where the cluster is: the header is updated on every
//! placement, so they agree). 64 one-byte headers make a 64-byte line, tagged by the address
//! bits above the line (VA >> 30 and VA >> 39); lines are placed in one of two ways by hash,
//! without kicking or resizing, and a line neither way has room for is not stored (its
//! sections' walks then probe every way; counted as overflows).

use super::hash_slot;
use crate::types::{Pfn, BASE_PAGE_SHIFT};
use rustc_hash::{FxHashMap, FxHashSet};

/// Bytes of a line.
const LINE_BYTES: u64 = 64;
/// Ways of a CWT.
const WAYS: usize = 2;

/// Which page sizes (by class: 4 KiB, 2 MiB, 1 GiB) have clusters in a section.
pub type Present = [bool; 3];

/// One cuckoo walk table of one address space.
#[derive(Clone, Debug)]
pub struct Cwt {
    /// Address bits below a section.
    section_shift: u32,
    /// Address bits below a line (the line's tag is the address above them).
    line_shift: u32,
    /// Hash class of the table (apart from the page tables' size classes).
    class: u64,
    /// Lines per way.
    lines: u64,
    /// Frames of each way's pages.
    pages: [Vec<Pfn>; WAYS],
    /// Pages each way takes.
    pages_needed: usize,
    /// Clusters of each size class in each section with any.
    sections: FxHashMap<u64, [u32; 3]>,
    /// Sections with clusters in each line, and the way the line is stored in (`None`: an
    /// overflow).
    line_of: FxHashMap<u64, (u32, Option<usize>)>,
    /// Slots of each way holding a line.
    taken: [FxHashSet<u64>; WAYS],
    /// Lines that found no slot.
    pub overflows: u64,
}

impl Cwt {
    /// An empty table of `lines` lines per way for sections of `section_shift` address bits,
    /// whose pages (of `page_bytes`) are to be given.
    pub fn new(section_shift: u32, class: u64, lines: u64, page_bytes: u64) -> Cwt {
        Cwt {
            section_shift,
            line_shift: section_shift + 6,
            class,
            lines,
            pages: [Vec::new(), Vec::new()],
            pages_needed: (lines * LINE_BYTES).div_ceil(page_bytes) as usize,
            sections: FxHashMap::default(),
            line_of: FxHashMap::default(),
            taken: [FxHashSet::default(), FxHashSet::default()],
            overflows: 0,
        }
    }

    /// True when every page was given.
    pub fn complete(&self) -> bool {
        self.pages.iter().all(|p| p.len() == self.pages_needed)
    }

    /// Takes `frame` as the next page of the table.
    pub fn give(&mut self, frame: Pfn) {
        let way = self.pages.iter_mut().find(|p| p.len() < self.pages_needed).expect("a page was asked for");
        way.push(frame);
    }

    /// Pages given.
    pub fn page_count(&self) -> usize {
        self.pages.iter().map(Vec::len).sum()
    }

    /// A cluster of size class `class` covering `vaddr` was added (`added`) or removed.
    pub fn changed(&mut self, vaddr: u64, class: usize, added: bool) {
        let section = vaddr >> self.section_shift;
        let counts = self.sections.entry(section).or_default();
        let before = counts.iter().any(|&c| c > 0);
        if added {
            counts[class] += 1;
        } else {
            counts[class] -= 1;
        }
        let after = counts.iter().any(|&c| c > 0);
        if !after {
            self.sections.remove(&section);
        }
        match (before, after) {
            (false, true) => self.section_added(vaddr >> self.line_shift),
            (true, false) => self.section_removed(vaddr >> self.line_shift),
            _ => {}
        }
    }

    fn section_added(&mut self, tag: u64) {
        if let Some((count, _)) = self.line_of.get_mut(&tag) {
            *count += 1;
            return;
        }
        let way = (0..WAYS).find(|&w| self.taken[w].insert(self.slot(tag, w)));
        self.overflows += u64::from(way.is_none());
        self.line_of.insert(tag, (1, way));
    }

    fn section_removed(&mut self, tag: u64) {
        let (count, way) = self.line_of.get_mut(&tag).expect("a line holds the section");
        *count -= 1;
        if *count == 0 {
            if let Some(w) = *way {
                let slot = self.slot(tag, w);
                self.taken[w].remove(&slot);
            }
            self.line_of.remove(&tag);
        }
    }

    fn slot(&self, tag: u64, way: usize) -> u64 {
        hash_slot(0, tag, self.class, way, self.lines)
    }

    /// The sizes present in `vaddr`'s section, if its line is stored (a line with no
    /// section is stored as empty).
    pub fn header(&self, vaddr: u64) -> Option<Present> {
        if self.line_of.get(&(vaddr >> self.line_shift)).is_some_and(|(_, way)| way.is_none()) {
            return None;
        }
        let counts = self.sections.get(&(vaddr >> self.section_shift)).copied().unwrap_or_default();
        Some(counts.map(|c| c > 0))
    }

    /// Physical addresses of the two lines `vaddr`'s line may be in: what a walk-cache miss
    /// fetches.
    pub fn line_addresses(&self, vaddr: u64, page_bytes: u64) -> [u64; WAYS] {
        let tag = vaddr >> self.line_shift;
        std::array::from_fn(|w| {
            let offset = self.slot(tag, w) * LINE_BYTES;
            (self.pages[w][(offset / page_bytes) as usize].0 << BASE_PAGE_SHIFT) + offset % page_bytes
        })
    }

    /// Lines stored.
    pub fn lines(&self) -> usize {
        self.taken.iter().map(FxHashSet::len).sum()
    }
}
