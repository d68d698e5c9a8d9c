//! Page-walk caches: x86's paging-structure caches as EMT's radix simulator models them
//! (the research sheet's "radix PWC"): one small cache per upper level of the tables (by
//! default the PML4, PDPT and PD entries: 2, 4 and 32 entries, 1-, 4- and 4-way, LRU),
//! each keyed by the address bits above that level's index (VA >> 39, >> 30, >> 21) and the
//! ASID. A walk probes them from the deepest level it reads upward to the first hit; the
//! reads at that level and above are served by the cache (no memory access), the ones below
//! go to memory; every level probed that missed is filled. The entry that maps the page
//! itself (the PT's, or a PD's for a 2 MiB page) is never cached here: that is the TLB's.
//!
//! The caches serve the steps of a chain ([`super::Step::Chain`]: radix and FPT walks); a walk
//! that does not start with one passes them by (ECPT's MMU has walk caches of its own, and
//! configurations do not give it these). An FPT entry is cached at the level of the lowest radix level it resolves (a
//! flattened PML4+PDPT entry at the PDPT's, keyed by VA >> 30).

use super::WalkRead;
use crate::cache::tags::{Lookups, TagArray};
use crate::tlb::Policy;
use crate::types::Asid;
use serde::Serialize;

/// Index bits per radix level.
const INDEX_BITS: u32 = 9;
/// Levels a walk-cache configuration may have (the entries above the PT of 5-level tables).
pub const MAX_LEVELS: usize = 4;

/// A validated walk-cache configuration: per cached level, deepest last (the PD's), its
/// entries and ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PwcSpec {
    /// Entries of each level's cache, top level first.
    pub entries: Vec<usize>,
    /// Ways of each level's cache.
    pub ways: Vec<usize>,
    /// Replacement policy of every level.
    pub policy: Policy,
}

impl Default for PwcSpec {
    /// EMT's: PML4 2 entries direct-mapped, PDPT 4 and PD 32 entries 4-way, LRU.
    fn default() -> PwcSpec {
        PwcSpec { entries: vec![2, 4, 32], ways: vec![1, 4, 4], policy: Policy::Lru }
    }
}

impl PwcSpec {
    /// Bytes of host memory the walk caches take at most ([`TagArray::host_bytes`] per
    /// level).
    pub fn host_bytes(&self) -> u64 {
        let levels = self.entries.iter().zip(&self.ways);
        levels.map(|(&entries, &ways)| TagArray::host_bytes(entries as u64, ways as u64, self.policy)).fold(0, u64::saturating_add)
    }
}

/// The walk caches of a machine.
#[derive(Clone, Debug)]
pub struct PageWalkCache {
    /// The cache of each level, by the level whose entries it holds (1 for the PD, above the
    /// PT), `None` above the cached levels.
    levels: Vec<Option<TagArray>>,
}

/// The tag of the entry at `level` that `vaddr` of `asid` goes through.
fn tag(asid: Asid, vaddr: u64, level: u8) -> u64 {
    let bits = vaddr >> (12 + INDEX_BITS * u32::from(level));
    u64::from(asid) << 48 | bits & ((1 << 48) - 1)
}

impl PageWalkCache {
    /// Empty caches of `spec`; `seed` drives the random policy.
    pub fn new(spec: &PwcSpec, seed: u64) -> PageWalkCache {
        let n = spec.entries.len();
        let mut levels: Vec<Option<TagArray>> = vec![None; n + 1];
        for (i, (&entries, &ways)) in spec.entries.iter().zip(&spec.ways).enumerate() {
            levels[n - i] = Some(TagArray::new(entries, ways, spec.policy, seed.wrapping_add(i as u64)));
        }
        PageWalkCache { levels }
    }

    /// Of `reads`, a walk of `vaddr` in `asid` (top level first, the read that maps the page
    /// last), how many leading reads the caches serve, and how many cache lookups that took;
    /// probes and fills the caches.
    pub fn serve(&mut self, asid: Asid, vaddr: u64, reads: &[WalkRead]) -> (usize, u32) {
        let chain = reads.iter().take_while(|r| r.step == super::Step::Chain).count();
        let Some((_, upper)) = reads[..chain].split_last() else { return (0, 0) };
        let mut probes = 0;
        for (i, read) in upper.iter().enumerate().rev() {
            let Some(Some(cache)) = self.levels.get_mut(usize::from(read.level)) else { break };
            probes += 1;
            // A level that misses is filled at once: each level's cache is probed once a
            // walk, so filling it now or after the walk's last probe is the same.
            if cache.access(tag(asid, vaddr, read.level)) {
                return (i + 1, probes);
            }
        }
        (0, probes)
    }

    /// Lookups of each level's cache, top level first.
    pub fn lookups(&self) -> Vec<Lookups> {
        self.levels.iter().rev().flatten().map(TagArray::lookups).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reads of a 4-level walk of a 4 KiB page (their addresses do not matter here).
    fn walk() -> Vec<WalkRead> {
        (0..4).rev().map(|level| WalkRead::chain(level, 0)).collect()
    }

    #[test]
    fn a_walk_skips_the_levels_above_its_deepest_hit() {
        let mut pwc = PageWalkCache::new(&PwcSpec::default(), 1);
        let reads = walk();
        // Cold: every level misses and is filled; nothing is served.
        assert_eq!(pwc.serve(0, 0x7f00_0000_1000, &reads), (0, 3));
        // The same 2 MiB region: the PD entry hits, only the PT read is left.
        assert_eq!(pwc.serve(0, 0x7f00_0000_3000, &reads), (3, 1));
        // Another 2 MiB region of the same 1 GiB one: the PDPT entry hits.
        assert_eq!(pwc.serve(0, 0x7f00_0020_0000, &reads), (2, 2));
        // Another 1 GiB region of the same 512 GiB one: the PML4 entry hits.
        assert_eq!(pwc.serve(0, 0x7f40_0000_0000, &reads), (1, 3));
        // Another address space: every level misses.
        assert_eq!(pwc.serve(1, 0x7f00_0000_1000, &reads), (0, 3));
        let lookups = pwc.lookups();
        assert_eq!(lookups.iter().map(|l| l.hits).collect::<Vec<_>>(), [1, 1, 1]);
        assert_eq!(lookups.iter().map(|l| l.misses).collect::<Vec<_>>(), [2, 3, 4]);
    }

    #[test]
    fn a_huge_page_walk_never_caches_its_leaf_entry() {
        let mut pwc = PageWalkCache::new(&PwcSpec::default(), 1);
        // A 2 MiB page: PML4, PDPT, PD (the leaf) reads.
        let reads: Vec<WalkRead> = (1..4).rev().map(|level| WalkRead::chain(level, 0)).collect();
        assert_eq!(pwc.serve(0, 0x4000_0000, &reads), (0, 2));
        assert_eq!(pwc.serve(0, 0x4000_0000, &reads), (2, 1), "the PDPT entry serves; the PD entry maps the page");
        assert_eq!(pwc.lookups()[2], Lookups::default(), "the PD cache was never probed");
    }
}
