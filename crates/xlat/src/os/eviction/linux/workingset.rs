//! Refault detection for Linux-like reclaim, after the kernel's `mm/workingset.c` (for
//! anonymous pages since Linux 5.9, so in the paper's 5.11.6).
//!
//! The kernel cannot tell from the inactive list alone whether a page it evicted is part of
//! a working set that is merely larger than the inactive list. So at each eviction it leaves
//! a shadow entry where the page was: the value of a counter, `nonresident_age`, which counts
//! evictions and activations. When the page faults back in, the counter has grown by the
//! refault distance: how much the inactive list moved on while the page was out. Had the
//! page been given the active list's room as well, it would have stayed resident if that
//! distance is at most the active list's length, so then the page is activated at once
//! instead of starting again on the inactive list.
//!
//! For anonymous pages with swap and no page cache, as here, the kernel's `workingset_size`
//! is the active anonymous list's length. The counter grows by one at every eviction (before
//! its value is recorded, as in 5.11), every promotion from the inactive to the active list,
//! and every activation on refault; never at a demotion. Not modelled: the kernel reclaiming
//! shadow entries when they take more than about an eighth of memory's worth of nodes (it
//! then forgets refaults this model sees), and the low bits its shadow entries drop on
//! memories too large for their timestamp (`bucket_order`, 0 up to far beyond the paper's
//! 4 GiB), which only makes distances coarser.

use crate::types::Asid;
use rustc_hash::FxHashMap;

/// The nonresident age and the shadow entries of evicted pages.
#[derive(Clone, Debug, Default)]
pub struct Workingset {
    /// `nonresident_age`: evictions and activations so far.
    age: u64,
    /// The age at which each page now out was evicted, by ASID and page number.
    shadows: FxHashMap<(Asid, u64), u64>,
}

impl Workingset {
    /// Notes a promotion from the inactive to the active list.
    pub fn activated(&mut self) {
        self.age += 1;
    }

    /// Notes the eviction of page `page` of `asid`, leaving its shadow entry.
    pub fn evicted(&mut self, asid: Asid, page: u64) {
        self.age += 1;
        self.shadows.insert((asid, page), self.age);
    }

    /// For page `page` of `asid` faulting in while the active list holds `active` pages:
    /// `None` when it left no shadow entry (a first fault), else whether it refaults within
    /// the working set, and is then activated (which counts). Consumes its shadow entry.
    pub fn refault(&mut self, asid: Asid, page: u64, active: usize) -> Option<bool> {
        let eviction = self.shadows.remove(&(asid, page))?;
        let activate = self.age - eviction <= active as u64;
        if activate {
            self.activated();
        }
        Some(activate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_refaulting_within_the_active_list_is_activated() {
        let mut w = Workingset::default();
        w.evicted(1, 100);
        // Two evictions and one promotion later: distance 3.
        w.evicted(1, 101);
        w.evicted(1, 102);
        w.activated();
        assert_eq!(w.refault(1, 100, 2), Some(false), "distance 3 is beyond an active list of 2");
        assert_eq!(w.refault(1, 100, 3), None, "the shadow was consumed");
        // Page 101: evicted at age 2; the age is now 4.
        assert_eq!(w.refault(1, 101, 2), Some(true));
        // That activation counted: page 102 (evicted at 3) is now at distance 2.
        assert_eq!(w.refault(1, 102, 1), Some(false));
    }

    #[test]
    fn pages_are_told_apart_by_asid_and_first_faults_have_no_shadow() {
        let mut w = Workingset::default();
        w.evicted(1, 7);
        assert_eq!(w.refault(2, 7, 100), None, "another address space's page 7");
        assert_eq!(w.refault(1, 8, 100), None, "never evicted");
        assert_eq!(w.refault(1, 7, 100), Some(true));
    }
}
