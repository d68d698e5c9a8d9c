//! The page table of the first OS model: a map from (ASID, page) to its translation, with one
//! page size. It answers walks without modelling their memory accesses; radix, FPT and ECPT
//! tables with walk costs are separate models.

use crate::types::{Asid, PageSize, Translation, BASE_PAGE_SHIFT};
use rustc_hash::FxHashMap;

/// Mappings of every address space, keyed by page number in units of the page size.
#[derive(Clone, Debug)]
pub struct PageTable {
    size: PageSize,
    map: FxHashMap<(Asid, u64), u64>,
}

impl PageTable {
    /// An empty table of pages of `size`.
    pub fn new(size: PageSize) -> PageTable {
        PageTable { size, map: FxHashMap::default() }
    }

    /// The mapping covering `vaddr`, if any.
    #[inline]
    pub fn lookup(&self, asid: Asid, vaddr: u64) -> Option<Translation> {
        let page = vaddr >> self.size.shift();
        self.map.get(&(asid, page)).map(|&pfn| self.translation(asid, page, pfn))
    }

    /// Adds (or replaces) the mapping `t`, which must be of this table's page size.
    pub fn insert(&mut self, t: Translation) {
        debug_assert_eq!(t.size, self.size);
        self.map.insert((t.asid, t.vpn.0 >> (self.size.shift() - BASE_PAGE_SHIFT)), t.pfn.0);
    }

    /// Number of mapped pages.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn translation(&self, asid: Asid, page: u64, pfn: u64) -> Translation {
        let vpn = crate::Vpn(page << (self.size.shift() - BASE_PAGE_SHIFT));
        Translation { asid, vpn, pfn: crate::Pfn(pfn), size: self.size }
    }
}
