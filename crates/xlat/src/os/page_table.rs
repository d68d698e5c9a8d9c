//! The store of translation objects ([`super::translation`]): the mapping of every page of
//! every address space, of one page size, as its page-table entry's value would hold it
//! (present at a frame with a tag, or swapped out). Every driver shares it: where the entries
//! lie and what a walk reads is the driver's ([`crate::mmu`]); with the `map` driver it is
//! the page table itself, walked at no cost.
//!
//! Layout, chosen for simulation speed, like the two last levels of an x86-64 radix table: a
//! small directory maps (ASID, page >> 18) to a middle node of 512 leaf numbers, and each leaf
//! holds 512 frame numbers (2 KiB). A flat hash map of every page was measured at ~100 ns per
//! lookup at 64 Ki pages (two cache misses per walk); the leaves of a 256 MiB footprint take
//! 256 KiB and stay in the L2 cache. The middle level makes one directory entry cover 1 GiB
//! of 4 KiB pages, so the directory cache in front of the hash map hits on nearly every walk
//! (with a directory of leaves it missed on half the walks of a 256 MiB footprint).

use super::translation::{Presence, TranslationObject};
use crate::types::{Asid, PageSize, Pfn, Translation, BASE_PAGE_SHIFT};
use rustc_hash::FxHashMap;

/// The host refused memory for a new node of the page table ([`PageTable::insert_tagged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostFull;

/// log2 of the pages per leaf.
const LEAF_BITS: u32 = 9;
/// log2 of the leaves per middle node.
const MID_BITS: u32 = 9;
/// Entries of the directory cache.
const RECENT: usize = 64;
/// A key no middle node has (ASIDs are 16 bits, so bit 63 is never set in a real key).
const NO_KEY: u64 = u64::MAX;

/// A leaf slot with no mapping, and a middle-node slot with no leaf.
const UNMAPPED: u32 = u32::MAX;
/// A leaf slot whose page was evicted to swap: unmapped, but its next fault is a major one.
const SWAPPED: u32 = u32::MAX - 1;

/// A node of 512 frame numbers (a leaf) or of 512 leaf numbers (a middle node).
type Node = [u32; 1 << LEAF_BITS];

/// The directory key of the middle node covering `page`: one word, because hashing one word is
/// measurably cheaper than hashing a tuple. Pages are below 2^52, so `page >> 18` fits in 34
/// bits under the 16-bit ASID.
#[inline]
fn mid_key(asid: Asid, page: u64) -> u64 {
    u64::from(asid) << 48 | page >> (LEAF_BITS + MID_BITS)
}

/// The slot of `page`'s leaf in its middle node.
#[inline]
fn mid_slot(page: u64) -> usize {
    (page >> LEAF_BITS) as usize & ((1 << MID_BITS) - 1)
}

/// The slot of directory key `key` in the directory cache: its page bits mixed with its ASID,
/// so that address spaces at the same addresses do not all share one slot.
#[inline]
fn recent_slot(key: u64) -> usize {
    (key ^ key >> 48) as usize % RECENT
}

/// The slot of `page` in its leaf.
#[inline]
fn leaf_slot(page: u64) -> usize {
    page as usize & ((1 << LEAF_BITS) - 1)
}

/// Where a page's entry is: its leaf, which never moves once made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf(u32);

/// Mappings of every address space, in pages of one size.
#[derive(Clone, Debug)]
pub struct PageTable {
    size: PageSize,
    directory: FxHashMap<u64, u32>,
    /// A direct-mapped cache of directory entries (like a page-walk cache), checked before the
    /// hash map: one compare instead of hashing and probing on most walks.
    recent: [(u64, u32); RECENT],
    mids: Vec<Node>,
    leaves: Vec<Node>,
    /// A byte per leaf entry for the OS's own use (the CPFN of a hashed placement), so that a
    /// Mosaic walk reads a whole ToC from one place, like the paper's ToC leaves.
    /// `no_tag` where nothing is mapped.
    tags: Vec<[u8; 1 << LEAF_BITS]>,
    /// The tag of an unmapped page: the Mosaic TLBs' unmapped code, so that a run of tags is
    /// a ToC as it stands.
    no_tag: u8,
    mapped: usize,
    /// Per leaf: it maps one huge page of 512 base pages (transparent huge pages, in a
    /// table of 4 KiB pages), its entries the huge page's base frames in order.
    huge: Vec<bool>,
    /// Leaves mapping a huge page: while 0, lookups skip the flag.
    huge_leaves: usize,
}

impl PageTable {
    /// An empty table of pages of `size` whose unmapped pages have tag `no_tag`.
    pub fn new(size: PageSize, no_tag: u8) -> PageTable {
        PageTable {
            size,
            directory: FxHashMap::default(),
            recent: [(NO_KEY, 0); RECENT],
            mids: Vec::new(),
            leaves: Vec::new(),
            tags: Vec::new(),
            no_tag,
            mapped: 0,
            huge: Vec::new(),
            huge_leaves: 0,
        }
    }

    /// Largest frame number (in units of the page size) a table can hold.
    pub const MAX_FRAMES: u64 = SWAPPED as u64;

    /// The mapping covering `vaddr`, if any, and the leaf holding it.
    #[inline(always)]
    pub fn lookup(&mut self, asid: Asid, vaddr: u64) -> Option<(Translation, Leaf)> {
        let page = vaddr >> self.size.shift();
        let leaf = self.leaf_of(asid, page)?;
        if self.is_huge(leaf) {
            return Some((self.huge_translation(asid, vaddr, leaf), Leaf(leaf as u32)));
        }
        let pfn = self.base_frame(self.leaves[leaf][leaf_slot(page)])?;
        Some((Translation { asid, vpn: self.size.first_vpn(vaddr), pfn, size: self.size }, Leaf(leaf as u32)))
    }

    /// The translation of the huge page `leaf` maps, which holds `vaddr`.
    #[cold]
    fn huge_translation(&self, asid: Asid, vaddr: u64, leaf: usize) -> Translation {
        let size = PageSize::Size2M;
        Translation { asid, vpn: size.first_vpn(vaddr), pfn: Pfn(u64::from(self.leaves[leaf][0])), size }
    }

    /// True when `leaf` maps a huge page (see [`PageTable::insert_huge`]); while none does,
    /// the flag is not read.
    #[inline(always)]
    fn is_huge(&self, leaf: usize) -> bool {
        self.huge_leaves > 0 && self.huge[leaf]
    }

    /// True when a leaf holds the entries of the page holding `vaddr` in `asid`: some page
    /// of its aligned run of 512 was mapped once. A range with no leaf has no object.
    pub fn has_leaf(&mut self, asid: Asid, vaddr: u64) -> bool {
        self.leaf_of(asid, vaddr >> self.size.shift()).is_some()
    }

    /// The leaf of the huge page holding `page`, if a huge page holds it.
    fn in_huge(&mut self, asid: Asid, page: u64) -> Option<usize> {
        let leaf = self.leaf_of(asid, page)?;
        self.is_huge(leaf).then_some(leaf)
    }

    /// The first base frame of the page a leaf entry maps, if it maps one.
    #[inline(always)]
    fn base_frame(&self, entry: u32) -> Option<Pfn> {
        (entry < SWAPPED).then(|| Pfn(u64::from(entry) << (self.size.shift() - BASE_PAGE_SHIFT)))
    }

    /// Starts loading the leaf entry (and with `tag`, the tag) of the page holding `vaddr`
    /// into the host's caches, for a walk a few references later. Only a middle node in the
    /// directory cache is followed: a hint must cost less than the miss it hides.
    #[inline(always)]
    pub fn prefetch(&self, asid: Asid, vaddr: u64, tag: bool) {
        let page = vaddr >> self.size.shift();
        let key = mid_key(asid, page);
        let (cached, mid) = self.recent[recent_slot(key)];
        if cached != key {
            return;
        }
        let leaf = self.mids[mid as usize][mid_slot(page)];
        if leaf != UNMAPPED {
            crate::host::prefetch(&self.leaves[leaf as usize][leaf_slot(page)]);
            if tag {
                crate::host::prefetch(&self.tags[leaf as usize][leaf_slot(page)]);
            }
        }
    }

    /// The leaf (index into `leaves` and `tags`) holding `page`, if it exists, found through
    /// the directory cache.
    #[inline(always)]
    fn leaf_of(&mut self, asid: Asid, page: u64) -> Option<usize> {
        let key = mid_key(asid, page);
        let slot = recent_slot(key);
        let mid = if self.recent[slot].0 == key {
            self.recent[slot].1
        } else {
            let mid = *self.directory.get(&key)?;
            self.recent[slot] = (key, mid);
            mid
        };
        let leaf = self.mids[mid as usize][mid_slot(page)];
        (leaf != UNMAPPED).then_some(leaf as usize)
    }

    /// Unmaps the page holding `vaddr`, marking it swapped out; returns its frame (in units
    /// of the page size) if it was mapped.
    pub fn swap_out(&mut self, asid: Asid, vaddr: u64) -> Option<u64> {
        let page = vaddr >> self.size.shift();
        debug_assert!(self.in_huge(asid, page).is_none(), "a huge page is split into swap entries, not swapped out as one");
        let leaf = self.leaf_of(asid, page)?;
        let frame = self.leaves[leaf][leaf_slot(page)];
        if frame >= SWAPPED {
            return None;
        }
        self.leaves[leaf][leaf_slot(page)] = SWAPPED;
        self.tags[leaf][leaf_slot(page)] = self.no_tag;
        self.mapped -= 1;
        Some(u64::from(frame))
    }

    /// The translation object of the page holding `vaddr`: mapped (with its frame and tag)
    /// or swapped out; `None` when it has none.
    pub fn object(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject> {
        let page = vaddr >> self.size.shift();
        let leaf = self.leaf_of(asid, page)?;
        if self.is_huge(leaf) {
            let t = self.huge_translation(asid, vaddr, leaf);
            return Some(TranslationObject { size: t.size, presence: Presence::Present { frame: t.pfn, tag: self.tags[leaf][0] } });
        }
        let presence = match self.leaves[leaf][leaf_slot(page)] {
            UNMAPPED => return None,
            SWAPPED => Presence::Swapped,
            entry => Presence::Present { frame: self.base_frame(entry)?, tag: self.tags[leaf][leaf_slot(page)] },
        };
        Some(TranslationObject { size: self.size, presence })
    }

    /// Removes the object of the page holding `vaddr`, mapped or swapped out: the page has
    /// no translation after. Returns the frame (in units of the page size) it was mapped at.
    pub fn remove(&mut self, asid: Asid, vaddr: u64) -> Option<u64> {
        let page = vaddr >> self.size.shift();
        if let Some(leaf) = self.in_huge(asid, page) {
            return Some(self.remove_huge(leaf));
        }
        let leaf = self.leaf_of(asid, page)?;
        let frame = std::mem::replace(&mut self.leaves[leaf][leaf_slot(page)], UNMAPPED);
        self.tags[leaf][leaf_slot(page)] = self.no_tag;
        if frame < SWAPPED {
            self.mapped -= 1;
            return Some(u64::from(frame));
        }
        None
    }

    /// Unmaps the huge page of `leaf`; returns its first base frame.
    fn remove_huge(&mut self, leaf: usize) -> u64 {
        let first = u64::from(self.leaves[leaf][0]);
        self.leaves[leaf] = [UNMAPPED; 1 << LEAF_BITS];
        self.tags[leaf] = [self.no_tag; 1 << LEAF_BITS];
        self.huge[leaf] = false;
        self.huge_leaves -= 1;
        self.mapped -= 1;
        first
    }

    /// The size of the pages this table maps.
    pub fn page_size(&self) -> PageSize {
        self.size
    }

    /// The tags of `count` consecutive pages from the one holding `vaddr`, which must lie in
    /// one leaf (an aligned run of at most 512 pages), the unmapped ones [`PageTable::no_tag`];
    /// `None` when no page of the leaf was ever mapped.
    pub fn tags(&mut self, asid: Asid, vaddr: u64, count: usize) -> Option<&[u8]> {
        let page = vaddr >> self.size.shift();
        let leaf = self.leaf_of(asid, page)?;
        Some(self.tags_in(Leaf(leaf as u32), vaddr, count))
    }

    /// [`PageTable::tags`] in `leaf`, the leaf of the pages (as a lookup or an insertion of
    /// one of them gave it): a Mosaic miss reads the ToC of the page its walk just found.
    #[inline(always)]
    pub fn tags_in(&self, leaf: Leaf, vaddr: u64, count: usize) -> &[u8] {
        let slot = leaf_slot(vaddr >> self.size.shift());
        debug_assert!(slot + count <= 1 << LEAF_BITS);
        &self.tags[leaf.0 as usize][slot..slot + count]
    }

    /// The tag of an unmapped page.
    pub fn no_tag(&self) -> u8 {
        self.no_tag
    }

    /// Adds (or replaces) the mapping `t` with a zero tag; see [`PageTable::insert_tagged`].
    #[cfg(test)]
    pub fn insert(&mut self, t: Translation) {
        self.insert_tagged(t, 0).expect("a test's table fits the host");
    }

    /// Adds (or replaces) the mapping `t` with `tag`, returning its leaf. `t` must be of this
    /// table's page size and its frame, in units of the page size, below
    /// [`PageTable::MAX_FRAMES`]. Fails, changing nothing, when the host refuses the memory
    /// for a new node: a footprint spread thin takes a 2.5 KiB leaf per 2 MiB region touched,
    /// which no up-front estimate bounds, and must end the run with an error, not an abort.
    pub fn insert_tagged(&mut self, t: Translation, tag: u8) -> Result<Leaf, HostFull> {
        debug_assert_eq!(t.size, self.size);
        let page = t.vpn.0 >> (self.size.shift() - BASE_PAGE_SHIFT);
        let frame = u32::try_from(t.pfn.0 / self.size.base_pages()).expect("frame number fits the page table");
        let leaf = self.leaf_for(t.asid, page)?;
        debug_assert!(!self.huge[leaf as usize], "a base page mapped inside a huge page");
        self.tags[leaf as usize][leaf_slot(page)] = tag;
        let slot = &mut self.leaves[leaf as usize][leaf_slot(page)];
        if *slot >= SWAPPED {
            self.mapped += 1;
        }
        *slot = frame;
        Ok(Leaf(leaf))
    }

    /// Maps the 2 MiB page `t` in a table of 4 KiB pages, with `tag`, in place of every
    /// base page of its range (which the caller unmapped): its leaf's entries hold its 512
    /// base frames in order, and the leaf is marked huge, so that a lookup anywhere in it
    /// finds `t`. Fails, changing nothing, when the host refuses a new node.
    pub fn insert_huge(&mut self, t: Translation, tag: u8) -> Result<Leaf, HostFull> {
        debug_assert_eq!((t.size, self.size), (PageSize::Size2M, PageSize::Size4K));
        let leaf = self.leaf_for(t.asid, t.vpn.0)? as usize;
        debug_assert!(self.leaves[leaf].iter().all(|&e| e >= SWAPPED), "the base pages of a huge page's range are unmapped first");
        let first = u32::try_from(t.pfn.0).expect("frame number fits the page table");
        for (slot, entry) in self.leaves[leaf].iter_mut().enumerate() {
            *entry = first + slot as u32;
        }
        self.tags[leaf] = [tag; 1 << LEAF_BITS];
        if !self.huge[leaf] {
            self.huge[leaf] = true;
            self.huge_leaves += 1;
            self.mapped += 1;
        }
        Ok(Leaf(leaf as u32))
    }

    /// The leaf of `page` (in units of the page size) in `asid`, made if missing.
    fn leaf_for(&mut self, asid: Asid, page: u64) -> Result<u32, HostFull> {
        self.reserve_node()?;
        let next_mid = self.mids.len() as u32;
        let mid = *self.directory.entry(mid_key(asid, page)).or_insert(next_mid);
        if mid == next_mid {
            self.mids.push([UNMAPPED; 1 << MID_BITS]);
        }
        let mut leaf = self.mids[mid as usize][mid_slot(page)];
        if leaf == UNMAPPED {
            leaf = u32::try_from(self.leaves.len()).expect("leaf count fits 32 bits");
            self.mids[mid as usize][mid_slot(page)] = leaf;
            self.leaves.push([UNMAPPED; 1 << LEAF_BITS]);
            self.tags.push([self.no_tag; 1 << LEAF_BITS]);
            self.huge.push(false);
        }
        Ok(leaf)
    }

    /// Leaves allocated: ranges of 512 pages where a page was ever mapped.
    pub fn leaf_count(&self) -> usize {
        self.leaves.len()
    }

    /// Every leaf's range, as (ASID, first address), sorted: the 2 MiB ranges (of a table of
    /// 4 KiB pages) where a page was ever mapped, which khugepaged scans in this order.
    pub fn leaf_ranges(&self) -> Vec<(Asid, u64)> {
        let mut ranges = Vec::with_capacity(self.leaves.len());
        #[expect(clippy::iter_over_hash_type, reason = "the ranges are sorted after, so the map's order does not show")]
        for (&key, &mid) in &self.directory {
            let (asid, high) = ((key >> 48) as Asid, key & ((1 << 48) - 1));
            for (slot, &leaf) in self.mids[mid as usize].iter().enumerate() {
                if leaf != UNMAPPED {
                    let page = (high << MID_BITS | slot as u64) << LEAF_BITS;
                    ranges.push((asid, page << self.size.shift()));
                }
            }
        }
        ranges.sort_unstable();
        ranges
    }

    /// Room for one more directory entry, middle node and leaf, or [`HostFull`].
    fn reserve_node(&mut self) -> Result<(), HostFull> {
        self.directory.try_reserve(1).map_err(|_| HostFull)?;
        self.mids.try_reserve(1).map_err(|_| HostFull)?;
        self.leaves.try_reserve(1).map_err(|_| HostFull)?;
        self.huge.try_reserve(1).map_err(|_| HostFull)?;
        self.tags.try_reserve(1).map_err(|_| HostFull)
    }

    /// Bytes of leaves and tags: what walks read, spread over the host's memory.
    pub fn leaf_bytes(&self) -> usize {
        self.leaves.len() * std::mem::size_of::<Node>() + self.tags.len() * (1 << LEAF_BITS)
    }

    /// Number of mapped pages (a huge page counts once).
    pub fn len(&self) -> usize {
        self.mapped
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.mapped == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Vpn;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The unmapped tag of the tests: a 7-bit CPFN's unmapped code.
    const NO_TAG: u8 = 0x7f;

    proptest! {
        /// The table agrees with a plain map on every lookup.
        #[test]
        fn agrees_with_a_map(
            inserts in proptest::collection::vec((0u16..3, 0u64..5000, 0u32..100_000), 0..300),
            probes in proptest::collection::vec((0u16..3, 0u64..5000), 0..300),
        ) {
            let mut table = PageTable::new(PageSize::Size4K, NO_TAG);
            let mut model = HashMap::new();
            // Each page's tag is derived from its frame, so that a tag read from the wrong
            // leaf shows.
            let tag = |frame: u32| (frame % 100) as u8;
            for &(asid, page, frame) in &inserts {
                table.insert_tagged(Translation { asid, vpn: Vpn(page), pfn: Pfn(u64::from(frame)), size: PageSize::Size4K }, tag(frame)).unwrap();
                model.insert((asid, page), frame);
            }
            prop_assert_eq!(table.len(), model.len());
            for &(asid, page) in probes.iter().chain(inserts.iter().map(|(a, p, _)| (a, p)).map(|(a, p)| (*a, *p)).collect::<Vec<_>>().iter()) {
                let got = table.lookup(asid, (page << 12) + 0x123).map(|(t, _)| t.pfn.0);
                prop_assert_eq!(got, model.get(&(asid, page)).map(|&f| u64::from(f)));
                // A ToC read after the walk, and of a neighbour that may lie in another leaf.
                for page in [page, page ^ 0x200] {
                    let tags = table.tags(asid, page << 12, 1).map(|t| t[0]);
                    match model.get(&(asid, page)) {
                        Some(&frame) => prop_assert_eq!(tags, Some(tag(frame))),
                        None => prop_assert!(tags.is_none_or(|t| t == NO_TAG)),
                    }
                }
            }
        }
    }

    #[test]
    fn swapped_pages_are_unmapped_and_remembered() {
        let mut table = PageTable::new(PageSize::Size4K, NO_TAG);
        let t = Translation { asid: 2, vpn: Vpn(77), pfn: Pfn(5), size: PageSize::Size4K };
        table.insert(t);
        assert_eq!(table.swap_out(2, 77 << 12), Some(5));
        assert_eq!(table.swap_out(2, 77 << 12), None);
        assert!(table.lookup(2, 77 << 12).is_none());
        assert_eq!(table.object(2, 77 << 12).map(|o| o.presence), Some(Presence::Swapped));
        assert_eq!(table.object(2, 78 << 12), None);
        assert_eq!(table.len(), 0);
        table.insert(t);
        assert_eq!(table.object(2, 77 << 12).map(|o| o.presence), Some(Presence::Present { frame: Pfn(5), tag: 0 }));
        assert_eq!(table.len(), 1);
        table.insert_tagged(Translation { vpn: Vpn(78), ..t }, 9).unwrap();
        assert_eq!(table.tags(2, 76 << 12, 4), Some(&[NO_TAG, 0, 9, NO_TAG][..]));
        table.swap_out(2, 78 << 12);
        assert_eq!(table.tags(2, 76 << 12, 4), Some(&[NO_TAG, 0, NO_TAG, NO_TAG][..]));
        assert_eq!(table.tags(2, 1 << 30, 4), None);
        assert_eq!(table.remove(2, 77 << 12), Some(5));
        assert_eq!((table.object(2, 77 << 12), table.len()), (None, 0));
    }

    #[test]
    fn huge_page_frames_are_in_base_units() {
        let mut table = PageTable::new(PageSize::Size2M, NO_TAG);
        table.insert(Translation { asid: 0, vpn: Vpn(1024), pfn: Pfn(3 * 512), size: PageSize::Size2M });
        let (t, _) = table.lookup(0, 0x40_0000 + 0x1f_ffff).unwrap();
        assert_eq!((t.vpn, t.pfn), (Vpn(1024), Pfn(1536)));
        assert!(table.lookup(0, 0x60_0000).is_none());
    }
}
