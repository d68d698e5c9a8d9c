//! The express path: a whole batch through a hierarchy that is one TLB of a specialized shape.
//!
//! The most common simulated machine is a single TLB (`single-tlb`, `mosaic-paper` without
//! Mosaic TLBs): one unsplit level holding one exact-LRU array, with a power-of-two number of
//! sets, of the pages the OS maps, over an OS that does not track use.
//! For it, the per-reference work of the general path (side and level choice, the loop over
//! arrays, the shape dispatch, the side's bookkeeping in memory) is chosen once per batch
//! instead, and the loop keeps the side's last hit and counters in registers. The steps and
//! their results are the same as [`TlbHierarchy::lookup`] followed, on a miss, by the walk and
//! [`TlbHierarchy::fill_after_walk`]; a differential test checks that they agree.

use super::array::TlbArray;
use super::hierarchy::{LastHit, TlbHierarchy};
use crate::memref::MemRef;
use crate::types::{Asid, PageSize, Pfn, BASE_PAGE_SHIFT};

/// What a batch on the express path did besides the TLB's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpressRun {
    /// References that straddled a page boundary (two TLB accesses).
    pub straddles: u64,
}

/// What the express path asks of the OS model it runs over.
pub trait Walker {
    /// Why a walk failed.
    type Error;
    /// The first base frame of the page holding `vaddr`, after every TLB missed (mapping it
    /// on first touch).
    fn walk(&mut self, asid: Asid, vaddr: u64) -> Result<Pfn, Self::Error>;
    /// A hint that `vaddr` will be walked soon: start loading what the walk reads.
    fn prefetch(&self, asid: Asid, vaddr: u64);
}

impl TlbHierarchy {
    /// The associativity of the hierarchy's only array when batches can take the express path
    /// for an OS that maps pages of `size`: one unsplit level with one array of a specialized
    /// LRU shape whose smallest page size is `size`.
    pub fn express_ways(&self, size: PageSize) -> Option<usize> {
        let [level] = &self.levels[..] else { return None };
        if level.instr.is_some() {
            return None;
        }
        let [array] = &level.data.arrays[..] else { return None };
        array.lru_ways(size)
    }

    /// Simulates `refs` in order on a hierarchy for which [`TlbHierarchy::express_ways`] is
    /// `W`, asking `walker` for the frame of every miss (in pages of the size `express_ways`
    /// was asked about). With `PREFETCH`, reference `i + distance` is handed to
    /// [`Walker::prefetch`] before reference `i` is simulated. An error from the walker stops
    /// the batch.
    #[inline(never)]
    pub fn run_express<const W: usize, const PREFETCH: bool, K: Walker>(
        &mut self,
        refs: &[MemRef],
        walker: &mut K,
        distance: usize,
    ) -> Result<ExpressRun, K::Error> {
        let side = &mut self.levels[0].data;
        let mut run = Run { array: &mut side.arrays[0], last: side.last, hits: 0, misses: 0, filled: false };
        let mut straddles = 0;
        let result = refs.iter().enumerate().try_for_each(|(i, r)| {
            if PREFETCH {
                if let Some(ahead) = refs.get(i + distance) {
                    walker.prefetch(ahead.asid, ahead.vaddr);
                }
            }
            let first = r.vaddr >> BASE_PAGE_SHIFT;
            run.page::<W, _>(r.asid, first, walker)?;
            if r.last_vpn().0 != first {
                straddles += 1;
                run.later_pages::<W, _>(r, walker)?;
            }
            Ok(())
        });
        let Run { last, hits, misses, filled, .. } = run;
        side.last = last;
        side.counters.hits += hits;
        side.counters.misses += misses;
        side.nonempty |= u64::from(filled);
        result.map(|()| ExpressRun { straddles })
    }
}

/// The state of an express run: the side's array, and its last hit and counters, kept in
/// registers until the batch ends.
struct Run<'a> {
    array: &'a mut TlbArray,
    last: LastHit,
    hits: u64,
    misses: u64,
    /// Whether anything was inserted (the side's array is then not empty).
    filled: bool,
}

impl Run<'_> {
    /// The accesses to the pages of `r` after its first: rare, so kept out of the loop.
    #[cold]
    #[inline(never)]
    fn later_pages<const W: usize, K: Walker>(&mut self, r: &MemRef, walker: &mut K) -> Result<(), K::Error> {
        r.later_pages().try_for_each(|page| self.page::<W, _>(r.asid, page.0, walker))
    }

    /// One access to base page `page` of `asid`.
    #[inline(always)]
    fn page<const W: usize, K: Walker>(&mut self, asid: Asid, page: u64, walker: &mut K) -> Result<(), K::Error> {
        if self.last.page == page && self.last.asid == asid {
            self.hits += 1;
        } else if let Some(slot) = self.array.probe_lru::<W>(asid, page << BASE_PAGE_SHIFT) {
            self.hits += 1;
            self.last = LastHit { page, asid, array: 0, slot: slot as u32 };
        } else {
            self.misses += 1;
            self.last = LastHit::NONE;
            let vaddr = page << BASE_PAGE_SHIFT;
            let pfn = walker.walk(asid, vaddr)?;
            self.array.insert_lru::<W, false>(asid, vaddr, pfn.0);
            self.filled = true;
        }
        Ok(())
    }
}
