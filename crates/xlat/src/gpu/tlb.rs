//! The GPU's TLBs: each level has separate arrays for base (4 KiB) and large (2 MiB) entries,
//! probed together, as GPU Mosaic's Table 1 gives them (per-SM L1: 128 base + 16 large,
//! fully associative; shared L2: 512 base 16-way + 256 large fully associative; LRU;
//! entries tagged with the application's ASID).

mod fully_associative;

use super::memory::{AppId, PAGES_PER_LARGE};
use crate::tlb::array::{ArrayGeometry, TlbArray, INDEX_ABOVE_WAYS};
use crate::tlb::Policy;
use crate::types::{PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};
use fully_associative::FullyAssociative;
use serde::Serialize;

/// The shape of one level: its base and large arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LevelShape {
    /// Entries for 4 KiB pages.
    pub base_entries: usize,
    /// Ways of the base array (equal to `base_entries` when fully associative).
    pub base_ways: usize,
    /// Entries for 2 MiB pages.
    pub large_entries: usize,
    /// Ways of the large array.
    pub large_ways: usize,
}

impl LevelShape {
    /// Bytes of host memory the level's arrays take at most.
    pub fn host_bytes(&self) -> u64 {
        self.arrays().iter().map(Array::host_bytes).sum()
    }

    fn arrays(&self) -> [ArrayGeometry; 2] {
        let geometry = |entries: usize, ways: usize, size| ArrayGeometry { entries, ways, policy: Policy::Lru, page_sizes: vec![size] };
        [geometry(self.base_entries, self.base_ways, PageSize::Size4K), geometry(self.large_entries, self.large_ways, PageSize::Size2M)]
    }
}

/// One array of a level, of one page size: a [`FullyAssociative`] one when it is fully
/// associative and wider than a set the general array scans (beyond that the general array
/// goes through a hash index and replacement lists of its own, at nearly twice the
/// instructions a fill), else a [`TlbArray`] of its sets.
#[derive(Clone, Debug)]
#[expect(clippy::large_enum_variant, reason = "two arrays per TLB: a box would cost every probe an indirection")]
enum Array {
    Sets(TlbArray),
    Full(FullyAssociative),
}

impl Array {
    /// Whether `geometry` is served by a [`FullyAssociative`] array.
    fn is_full(geometry: &ArrayGeometry) -> bool {
        geometry.ways == geometry.entries && geometry.ways > INDEX_ABOVE_WAYS
    }

    /// An empty array of `geometry` (of one page size), or none for no entries.
    fn new(geometry: &ArrayGeometry) -> Option<Array> {
        match geometry.entries {
            0 => None,
            entries if Array::is_full(geometry) => Some(Array::Full(FullyAssociative::new(entries, geometry.page_sizes[0]))),
            _ => Some(Array::Sets(TlbArray::new(geometry, 0))),
        }
    }

    /// Bytes of host memory an array of `geometry` takes at most.
    fn host_bytes(geometry: &ArrayGeometry) -> u64 {
        if Array::is_full(geometry) { FullyAssociative::host_bytes(geometry.entries as u64) } else { geometry.host_bytes() }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        match self {
            Array::Sets(a) => a.is_empty(),
            Array::Full(a) => a.is_empty(),
        }
    }

    #[inline]
    fn lookup(&mut self, app: AppId, vaddr: u64) -> Option<Translation> {
        match self {
            Array::Sets(a) => a.lookup(app, vaddr),
            Array::Full(a) => a.lookup(app, vaddr),
        }
    }

    /// Caches `t`, which must be absent.
    #[inline]
    fn insert_absent(&mut self, t: &Translation) {
        match self {
            Array::Sets(a) => a.insert_absent_quiet(t),
            Array::Full(a) => a.insert_absent(t),
        }
    }

    fn invalidate(&mut self, app: AppId, vaddr: u64) {
        match self {
            Array::Sets(a) => {
                a.invalidate(app, vaddr);
            }
            Array::Full(a) => {
                a.invalidate(app, vaddr);
            }
        }
    }

    fn valid_translations(&self) -> Box<dyn Iterator<Item = Translation> + '_> {
        match self {
            Array::Sets(a) => Box::new(a.valid_translations()),
            Array::Full(a) => Box::new(a.valid_translations()),
        }
    }
}

/// Hits and misses of one TLB level, summed over its copies (the SMs' L1s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlbCounts {
    /// Lookups that hit a base entry.
    pub base_hits: u64,
    /// Lookups that hit a large entry.
    pub large_hits: u64,
    /// Lookups that hit neither.
    pub misses: u64,
}

impl TlbCounts {
    /// Lookups.
    pub fn accesses(&self) -> u64 {
        self.base_hits + self.large_hits + self.misses
    }

    /// Hits over lookups (0 without lookups).
    pub fn hit_rate(&self) -> f64 {
        let accesses = self.accesses();
        if accesses == 0 { 0.0 } else { (self.base_hits + self.large_hits) as f64 / accesses as f64 }
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &TlbCounts) {
        self.base_hits += other.base_hits;
        self.large_hits += other.large_hits;
        self.misses += other.misses;
    }
}

/// One TLB: a base-page array and a large-page array (an array of no entries is absent).
#[derive(Clone, Debug)]
pub struct SplitTlb {
    base: Option<Array>,
    large: Option<Array>,
    /// The entry the last lookup hit or the last fill put in, while nothing else has been
    /// filled or invalidated since: it is still the most recent of its array, and a lookup
    /// it covers would find it and leave the arrays as they are, so it is answered without
    /// searching. A warp's coalesced requests mostly fall in one page, and an SM's L1 sees
    /// them one after another.
    last_hit: Option<Translation>,
    counts: TlbCounts,
}

impl SplitTlb {
    /// An empty TLB of `shape`.
    pub fn new(shape: &LevelShape) -> SplitTlb {
        let [base, large] = shape.arrays().map(|g| Array::new(&g));
        SplitTlb { base, large, last_hit: None, counts: TlbCounts::default() }
    }

    /// Looks `vaddr` of `app` up in both arrays (as hardware probes them in parallel) and
    /// counts the outcome; a hit updates the array's LRU order. An empty large array (every
    /// one under a manager that maps no large page) is not searched.
    #[inline]
    pub fn lookup(&mut self, app: AppId, vaddr: u64) -> Option<Translation> {
        let hit = match self.last_hit.filter(|t| t.covers(app, vaddr)) {
            Some(t) => Some(t),
            None => self.search(app, vaddr),
        };
        match hit {
            Some(t) if t.size == PageSize::Size2M => self.counts.large_hits += 1,
            Some(_) => self.counts.base_hits += 1,
            None => self.counts.misses += 1,
        }
        hit
    }

    /// [`SplitTlb::lookup`]'s search of the arrays, which remembers the entry it hits.
    fn search(&mut self, app: AppId, vaddr: u64) -> Option<Translation> {
        let large = self.large.as_mut().filter(|a| !a.is_empty()).and_then(|a| a.lookup(app, vaddr));
        let hit = large.or_else(|| self.base.as_mut().and_then(|a| a.lookup(app, vaddr)));
        if hit.is_some() {
            self.last_hit = hit;
        }
        hit
    }

    /// Counts a lookup that hits by definition (an ideal TLB's), without looking.
    pub fn count_ideal_hit(&mut self) {
        self.counts.base_hits += 1;
    }

    /// Caches `t` in the array of its size (nothing when the TLB has no array of that size).
    /// `t` must be absent, as it is when a lookup of an address it covers has just missed
    /// and nothing was filled since: the array's search for it is skipped (debug builds
    /// check).
    pub fn fill(&mut self, t: &Translation) {
        let array = if t.size == PageSize::Size2M { &mut self.large } else { &mut self.base };
        // The entry filled is the most recent of its array, as one a lookup has just hit is.
        self.last_hit = array.as_mut().map(|array| {
            array.insert_absent(t);
            *t
        });
    }

    /// Removes the entry of `app` for base page `vpn` (a base entry) or for the large page
    /// holding it (`large`).
    pub fn invalidate(&mut self, app: AppId, vpn: u64, large: bool) {
        self.last_hit = None;
        let array = if large { &mut self.large } else { &mut self.base };
        if let Some(array) = array {
            array.invalidate(app, vpn << BASE_PAGE_SHIFT);
        }
    }

    /// Every valid entry, for checks against the memory manager's mappings.
    pub fn valid_translations(&self) -> impl Iterator<Item = Translation> + '_ {
        self.base.iter().chain(&self.large).flat_map(Array::valid_translations)
    }

    /// The counts so far.
    pub fn counts(&self) -> TlbCounts {
        self.counts
    }
}

/// The TLB entry for base page `vpn` of `app` mapped at base frame `pfn`: a large entry for
/// its whole aligned 2 MiB page when `large`.
pub fn entry(app: AppId, vpn: u64, pfn: u64, large: bool) -> Translation {
    if large {
        let offset = vpn % PAGES_PER_LARGE;
        Translation { asid: app, vpn: Vpn(vpn - offset), pfn: Pfn(pfn - offset), size: PageSize::Size2M }
    } else {
        Translation { asid: app, vpn: Vpn(vpn), pfn: Pfn(pfn), size: PageSize::Size4K }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const SHAPE: LevelShape = LevelShape { base_entries: 8, base_ways: 8, large_entries: 2, large_ways: 2 };

    /// A fully associative LRU list of (app, page) keys, least recent first, for one array.
    #[derive(Default)]
    pub(super) struct NaiveLru {
        pub(super) keys: Vec<(AppId, u64)>,
        pub(super) capacity: usize,
    }

    impl NaiveLru {
        pub(super) fn hit(&mut self, key: (AppId, u64)) -> bool {
            let Some(i) = self.keys.iter().position(|&k| k == key) else { return false };
            let k = self.keys.remove(i);
            self.keys.push(k);
            true
        }

        pub(super) fn fill(&mut self, key: (AppId, u64)) {
            if self.capacity > 0 && !self.hit(key) {
                if self.keys.len() == self.capacity {
                    self.keys.remove(0);
                }
                self.keys.push(key);
            }
        }
    }

    proptest! {
        /// The split TLB hits exactly when naive fully associative LRU lists of its two
        /// arrays do, with ASIDs kept apart and large entries covering their 512 pages, and
        /// translates and counts what it hits, through runs of lookups of one page (which
        /// the last hit answers), nearby pages and invalidations; with arrays of sets and with
        /// wide fully associative ones.
        #[test]
        fn split_tlb_matches_naive_lru_lists(no_large: bool, wide: bool, ops in prop::collection::vec((0u8..8, 0u16..3, 0u64..4096, any::<bool>()), 1..400)) {
            let wide_entries = INDEX_ABOVE_WAYS + 1;
            let shape = if wide { LevelShape { base_entries: wide_entries, base_ways: wide_entries, large_entries: wide_entries, large_ways: wide_entries } } else { SHAPE };
            // With no large array too: large pages then always miss.
            let shape = if no_large { LevelShape { large_entries: 0, large_ways: 0, ..shape } } else { shape };
            prop_assert_eq!(matches!(SplitTlb::new(&shape).base, Some(Array::Full(_))), wide);
            let mut tlb = SplitTlb::new(&shape);
            let mut base = NaiveLru { capacity: shape.base_entries, ..NaiveLru::default() };
            let mut large = NaiveLru { capacity: shape.large_entries, ..NaiveLru::default() };
            let mut is_large = HashMap::new();
            let mut counts = TlbCounts::default();
            let (mut app, mut vpn) = (0, 0);
            for (op, new_app, new_vpn, want_large) in ops {
                match op {
                    0..=2 => {} // the same page again
                    3 => vpn ^= new_vpn % 4, // a neighbour, often in the same chunk
                    _ => (app, vpn) = (new_app, new_vpn),
                }
                // A chunk keeps the size it was first seen with, as a mapping would.
                let chunk_large = *is_large.entry((app, vpn / PAGES_PER_LARGE)).or_insert(want_large);
                if op == 7 {
                    tlb.invalidate(app, vpn, chunk_large);
                    let (list, key) = if chunk_large { (&mut large, (app, vpn / PAGES_PER_LARGE)) } else { (&mut base, (app, vpn)) };
                    list.keys.retain(|&k| k != key);
                    continue;
                }
                let hit = tlb.lookup(app, vpn << BASE_PAGE_SHIFT);
                let naive_large = large.hit((app, vpn / PAGES_PER_LARGE));
                let naive = naive_large || base.hit((app, vpn));
                prop_assert_eq!(hit.is_some(), naive);
                match hit {
                    Some(t) => {
                        prop_assert_eq!(t.pfn_of(vpn << BASE_PAGE_SHIFT), Pfn(vpn + 1_000_000));
                        if naive_large { counts.large_hits += 1 } else { counts.base_hits += 1 }
                    }
                    None => {
                        counts.misses += 1;
                        tlb.fill(&entry(app, vpn, vpn + 1_000_000, chunk_large));
                        if chunk_large { large.fill((app, vpn / PAGES_PER_LARGE)) } else { base.fill((app, vpn)) }
                    }
                }
            }
            prop_assert_eq!(tlb.counts(), counts);
        }
    }

    #[test]
    fn a_large_entry_translates_every_page_of_its_chunk_and_is_invalidated_whole() {
        let mut tlb = SplitTlb::new(&SHAPE);
        tlb.fill(&entry(1, 1024 + 7, 4096 + 7, true));
        let t = tlb.lookup(1, (1024 + 300) << BASE_PAGE_SHIFT).expect("hit");
        assert_eq!(t.pfn_of((1024 + 300) << BASE_PAGE_SHIFT), Pfn(4096 + 300));
        assert!(tlb.lookup(0, 1024 << BASE_PAGE_SHIFT).is_none(), "another application's page");
        tlb.invalidate(1, 1024 + 511, true);
        assert!(tlb.lookup(1, 1024 << BASE_PAGE_SHIFT).is_none());
        assert_eq!(tlb.counts(), TlbCounts { base_hits: 0, large_hits: 1, misses: 2 });
    }
}
