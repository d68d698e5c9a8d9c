//! Swap readahead: a page fault that reads a page back from swap reads its swapped-out
//! neighbours with it, as the kernel's VMA-based readahead does (`swap_vma_readahead`,
//! Linux 4.16 on, used for swap on a non-rotational device such as the Mosaic paper's
//! ramdisk; the paper's Linux 5.11.6 in both its Mosaic and its stock runs, the Mosaic patch
//! placing each page read ahead at its own hashed slot).
//!
//! The window of a major fault (`__swapin_nr_pages`): with no hits since the last major
//! fault, 2 pages when the fault is next to the last one (either side), else 1; after `h`
//! hits, `h + 2` rounded up to a power of two, at least 4; never more than `2^page_cluster`
//! pages, and never less than half the last window (it shrinks slowly). An address space
//! that has not faulted yet counts 4 hits (the kernel reads a VMA's empty state as 4,
//! `GET_SWAP_RA_VAL`), so its first major fault reads a full window of 8 pages. A window of more
//! than one page (`swap_ra_info`) runs forward from a fault just after the last one,
//! backward from one just before it, and otherwise centred, a page more after the fault
//! than before when it is even; it is clamped to the 512 pages one page-table page maps
//! (and, in the kernel, to the VMA: pages never touched are skipped here as there). Each
//! page in it whose entry is a swap entry and which is not in memory already is read.
//!
//! Pages read ahead stay in the swap cache, unmapped, until a fault finds them there (a
//! minor fault, a readahead hit, which counts towards the next window and moves its
//! reference point) or reclaim takes them, writing nothing.
//!
//! The kernel keeps this state per VMA; this model, which sees no VMAs, keeps it per address
//! space. A process's large allocations are adjacent anonymous mappings, which the kernel
//! merges into one VMA, so the two differ only where faults alternate between the heap, the
//! stack and the mapped area.

use crate::types::Asid;
use rustc_hash::FxHashMap;
use std::ops::Range;

/// The largest `page_cluster` (the kernel's `SWAP_RA_ORDER_CEILING` on 64-bit machines).
pub const MAX_PAGE_CLUSTER: u32 = 5;
/// Readahead hits remembered (the kernel's `SWAP_RA_HITS_MAX`).
const MAX_HITS: u64 = 63;
/// The hits of an address space with no history (the kernel's `GET_SWAP_RA_VAL` of a VMA
/// whose state is still 0).
const FIRST_HITS: u64 = 4;
/// Pages one page-table page maps: a window never crosses their boundary.
const PMD_PAGES: u64 = 512;

/// What an address space's last swap faults left (the kernel's `swap_readahead_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct History {
    /// The page of the last major fault or readahead hit.
    page: u64,
    /// The last major fault's window, in pages.
    window: u64,
    /// Readahead hits since the last major fault.
    hits: u64,
}

impl History {
    /// The history of an address space that has not faulted yet.
    const FIRST: History = History { page: 0, window: 0, hits: FIRST_HITS };
}

/// The readahead windows of every address space, and the pages read ahead and not yet
/// mapped.
#[derive(Clone, Debug)]
pub struct Readahead {
    /// `2^page_cluster`: the largest window.
    max_window: u64,
    history: FxHashMap<Asid, History>,
    /// Pages read ahead, in memory but not mapped: their frame and its placement tag.
    unmapped: FxHashMap<(Asid, u64), (u64, u8)>,
}

impl Readahead {
    /// Readahead of at most `2^page_cluster` pages per fault (`page_cluster` from 1 to
    /// [`MAX_PAGE_CLUSTER`]).
    pub fn new(page_cluster: u32) -> Readahead {
        debug_assert!((1..=MAX_PAGE_CLUSTER).contains(&page_cluster));
        Readahead { max_window: 1 << page_cluster, history: FxHashMap::default(), unmapped: FxHashMap::default() }
    }

    /// The pages a major fault on page `page` of `asid` reads: a range holding `page`.
    pub fn window(&mut self, asid: Asid, page: u64) -> Range<u64> {
        let last = self.history.get(&asid).copied().unwrap_or(History::FIRST);
        let adjacent = page == last.page.wrapping_add(1) || page.wrapping_add(1) == last.page;
        let wanted = match last.hits {
            0 if adjacent => 2,
            0 => 1,
            hits => (hits + 2).next_power_of_two().max(4),
        };
        let window = wanted.min(self.max_window).max(last.window / 2);
        self.history.insert(asid, History { page, window, hits: 0 });
        // Pages before the fault, and from it on.
        let (before, from) = if page == last.page.wrapping_add(1) {
            (0, window)
        } else if page.wrapping_add(1) == last.page {
            (window - 1, 1)
        } else {
            ((window - 1) / 2, window - (window - 1) / 2)
        };
        let pmd = page & !(PMD_PAGES - 1);
        page.saturating_sub(before).max(pmd)..(page + from).min(pmd + PMD_PAGES)
    }

    /// Registers page `page` of `asid`, just read ahead into `frame` with placement tag `tag`.
    pub fn insert(&mut self, asid: Asid, page: u64, frame: u64, tag: u8) {
        self.unmapped.insert((asid, page), (frame, tag));
    }

    /// True when page `page` of `asid` was read ahead and is still in memory, unmapped.
    pub fn contains(&self, asid: Asid, page: u64) -> bool {
        self.unmapped.contains_key(&(asid, page))
    }

    /// A fault on page `page` of `asid`: if it was read ahead, a hit, which counts towards
    /// the next window and moves its reference point; the page's frame and tag, which it is
    /// now mapped at.
    pub fn hit(&mut self, asid: Asid, page: u64) -> Option<(u64, u8)> {
        let found = self.unmapped.remove(&(asid, page))?;
        let history = self.history.entry(asid).or_insert(History::FIRST);
        history.hits = (history.hits + 1).min(MAX_HITS);
        history.page = page;
        Some(found)
    }

    /// Page `page` of `asid` was unmapped: if it was read ahead, it is forgotten, and its
    /// frame and tag returned (no hit counts).
    pub fn forget(&mut self, asid: Asid, page: u64) -> Option<(u64, u8)> {
        self.unmapped.remove(&(asid, page))
    }

    /// Page `page` of `asid` was evicted: true if it was an unmapped page read ahead (which
    /// no TLB holds).
    pub fn evicted(&mut self, asid: Asid, page: u64) -> bool {
        self.unmapped.remove(&(asid, page)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows of a run of major faults on `pages` of ASID 0, each after `hits` readahead
    /// hits on the page just before it (when the list says so).
    fn windows(ra: &mut Readahead, faults: &[(u64, u64)]) -> Vec<Range<u64>> {
        faults
            .iter()
            .map(|&(page, hits)| {
                for h in 0..hits {
                    ra.insert(0, 1_000_000 + h, 0, 0);
                    ra.hit(0, 1_000_000 + h).unwrap();
                }
                if hits > 0 {
                    // The last hit is the page just before the fault, as in a forward sweep.
                    ra.history.get_mut(&0).unwrap().page = page - 1;
                }
                ra.window(0, page)
            })
            .collect()
    }

    #[test]
    fn a_sweep_grows_the_window_from_one_page_to_the_cluster() {
        // Traced by hand through `__swapin_nr_pages` and `swap_ra_info` (page_cluster 3):
        // the first fault counts 4 hits (6 pages, rounded up to 8: centred, 3 before it);
        // faults apart, without hits, halve the window to 1. Then a fault apart reads
        // itself alone; the next page, adjacent with no hits, reads 2 forward; after 1
        // hit, 3 rounds up to 4; after 3 hits, 5 rounds up to 8; after 7 hits, 9 rounds up
        // to 16 and is capped at 8.
        let mut ra = Readahead::new(3);
        let got = windows(&mut ra, &[(5000, 0), (9000, 0), (13000, 0), (17000, 0)]);
        assert_eq!(got, [4997..5005, 8999..9003, 13000..13002, 17000..17001]);
        let got = windows(&mut ra, &[(1000, 0), (1001, 0), (1003, 1), (1007, 3), (1015, 7)]);
        assert_eq!(got, [1000..1001, 1001..1003, 1003..1007, 1007..1015, 1015..1023]);
    }

    #[test]
    fn random_faults_shrink_the_window_by_half_at_most_per_fault() {
        let mut ra = Readahead::new(3);
        windows(&mut ra, &[(1000, 0), (1001, 0), (1003, 1), (1007, 3)]);
        // Windows 8, then (no hits, not adjacent) 4, 2, 1, 1: centred, one more page after
        // the fault than before when even.
        let got = windows(&mut ra, &[(5000, 0), (9000, 0), (13000, 0), (17000, 0), (21000, 0)]);
        assert_eq!(got, [4999..5003, 9000..9002, 13000..13001, 17000..17001, 21000..21001]);
    }

    #[test]
    fn a_backward_sweep_reads_backward() {
        let mut ra = Readahead::new(3);
        assert_eq!(ra.window(0, 2000), 1997..2005, "the first fault: 8 pages");
        assert_eq!(ra.window(0, 1999), 1996..2000, "2 pages, or half the last window, ending at the fault");
        ra.insert(0, 1998, 7, 1);
        assert_eq!(ra.hit(0, 1998), Some((7, 1)));
        assert_eq!(ra.window(0, 1997), 1994..1998, "1 hit: 4 pages ending at the fault");
    }

    #[test]
    fn windows_stay_within_one_page_table_page() {
        let mut ra = Readahead::new(5);
        assert_eq!(ra.window(0, 511), 508..512, "8 centred pages, cut at 512");
        assert_eq!(ra.window(0, 512), 512..516, "forward from the start of the next");
        let mut ra = Readahead::new(5);
        ra.history.insert(0, History { page: 0, window: 32, hits: 0 });
        assert_eq!(ra.window(0, 1030), 1024..1039, "16 centred pages, 7 before it, cut at 1024");
        ra.history.insert(0, History { page: 0, window: 32, hits: 0 });
        assert_eq!(ra.window(0, 3), 0..12, "cut at page 0 without wrapping or moving the end");
    }

    #[test]
    fn address_spaces_and_hits_are_kept_apart() {
        let mut ra = Readahead::new(3);
        ra.window(0, 100);
        ra.window(1, 500);
        assert_eq!(ra.window(0, 101), 101..105, "adjacent in its own address space");
        assert_eq!(ra.window(1, 900), 899..903);
        assert_eq!(ra.hit(0, 102), None, "nothing read ahead");
        ra.insert(1, 902, 3, 0);
        assert!(ra.contains(1, 902) && !ra.contains(0, 902));
        assert!(ra.evicted(1, 902), "an unmapped page read ahead");
        assert!(!ra.evicted(1, 902) && ra.hit(1, 902).is_none());
        let hits = (0..100).map(|p| ra.insert(2, p, p, 0)).count() as u64;
        (0..hits).for_each(|p| _ = ra.hit(2, p));
        assert_eq!(ra.history[&2].hits, MAX_HITS);
    }
}
