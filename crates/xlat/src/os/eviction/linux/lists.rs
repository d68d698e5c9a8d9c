//! Linux-like page reclaim: an inactive and an active list with an accessed bit per page
//! (a model of the kernel's split LRU for anonymous memory, without its per-zone and
//! per-cgroup details).
//!
//! New pages enter the inactive list. Reclaim takes the inactive list's oldest page and
//! evicts it unless it was referenced since it was last looked at. What a referenced page
//! gets depends on the rule modelled:
//! * **Look twice** (the kernel's `page_check_references` for mapped pages, 5.9 on for
//!   anonymous ones): each page has its page-table entries' accessed bit (`young`, set by the
//!   fault that maps it and by each use) and the kernel's `PG_referenced` flag (`marked`).
//!   A young page that is not marked is marked and rotated to the inactive list's young end,
//!   for another trip; a young page already marked is promoted to the active list, and stays
//!   marked. A page that is not young is evicted, its mark cleared. So a new page survives its
//!   first look on the strength of its fault, and is promoted only if it is referenced again
//!   before its second look.
//! * **One look** (`look_twice = false`): the fault is not a reference, and one reference
//!   since the page entered the inactive list, or since it was last looked at, promotes it.
//!
//! Whenever the inactive list is low, the active list's oldest page is moved to the inactive
//! list with its accessed bit cleared (its mark kept), as the kernel deactivates anonymous
//! pages regardless of references. "Low" is the kernel's
//! `inactive_is_low` (Linux 4.10 to 5.x, the paper's 5.11.6 included): `inactive × ratio <
//! active`, with `ratio = isqrt(10 × GiB on the two lists)` (1 below 1 GiB), so a 4 GiB memory
//! keeps a sixth of its pages inactive; a fixed ratio can be configured instead.
//!
//! With refault detection ([`Workingset`], the kernel's for anonymous pages from 5.9), a page
//! that faults back in soon enough after its eviction goes straight to the active list.

use super::workingset::Workingset;
use super::InactiveRatio;
use crate::types::Asid;
use serde::Serialize;
use std::collections::VecDeque;

/// The accessed bit of a frame's page-table entry: set by use, cleared by reclaim.
const YOUNG: u8 = 1;
/// The kernel's `PG_referenced` of a frame's page, under the look-twice rule: set when
/// reclaim finds the page young, cleared when it finds it not young.
const MARKED: u8 = 2;
/// The frame's page is on the active list (else on the inactive list, if listed).
const ACTIVE: u8 = 4;

/// What Linux-like reclaim did, counted as the kernel's `/proc/vmstat` counts it for
/// anonymous pages (its names in brackets), to tell apart how the model's rules act on a
/// workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReclaimStats {
    /// Pages promoted from the inactive to the active list by reclaim (`pgactivate`).
    pub activations: u64,
    /// Pages demoted from the active to the inactive list (`pgdeactivate`).
    pub deactivations: u64,
    /// Pages found referenced at their first look under the look-twice rule, marked and
    /// rotated for another trip (the kernel's `PAGEREF_KEEP`, which it does not count; not
    /// its `pgrotated`, another event).
    pub rotations: u64,
    /// Faults on pages that still had a shadow entry (`workingset_refault_anon`); 0 without
    /// refault detection.
    pub refaults: u64,
    /// Those refaults activated at once (`workingset_activate_anon`).
    pub refault_activations: u64,
}

/// The reclaim lists of a fully associative memory.
///
/// A page freed by an unmap leaves its lists at once, as the kernel's `del_page_from_lru_list`
/// does, without a search: its frame's generation moves on, which leaves the entry in the
/// list stale (an entry is its frame in the low 32 bits and the generation it was listed at
/// in the high 32), and the live lengths are counted apart. Without frees, no entry is stale.
#[derive(Clone, Debug)]
pub struct LinuxLists {
    inactive: VecDeque<u64>,
    active: VecDeque<u64>,
    /// Live entries of each list.
    inactive_len: u64,
    active_len: u64,
    /// One byte per frame: [`YOUNG`], [`MARKED`] and [`ACTIVE`].
    flags: Vec<u8>,
    /// Per frame: frees of its pages so far (see the type's documentation).
    generation: Vec<u32>,
    /// The look-twice rule; else one look.
    look_twice: bool,
    ratio: InactiveRatio,
    /// log2 of the pages in 1 GiB, for the kernel's ratio.
    pages_per_gib_log2: u32,
    /// Refault detection, if modelled.
    workingset: Option<Workingset>,
    stats: ReclaimStats,
}

impl LinuxLists {
    /// Lists for `frames` frames of `page_bytes` each, all empty, keeping the inactive list
    /// at `ratio`, with refault detection if `workingset`, under the look-twice rule if
    /// `look_twice`.
    pub fn new(frames: u64, page_bytes: u64, ratio: InactiveRatio, workingset: bool, look_twice: bool) -> LinuxLists {
        LinuxLists {
            inactive: VecDeque::new(),
            active: VecDeque::new(),
            inactive_len: 0,
            active_len: 0,
            flags: vec![0; frames as usize],
            generation: vec![0; frames as usize],
            look_twice,
            ratio,
            pages_per_gib_log2: 30u32.saturating_sub(page_bytes.trailing_zeros()),
            workingset: workingset.then(Workingset::default),
            stats: ReclaimStats::default(),
        }
    }

    /// What reclaim did so far.
    pub fn stats(&self) -> ReclaimStats {
        self.stats
    }

    /// True when the inactive list is too short for the active list.
    fn inactive_is_low(&self) -> bool {
        let (inactive, active) = (self.inactive_len, self.active_len);
        let ratio = match self.ratio {
            InactiveRatio::Kernel => {
                let gib = (inactive + active) >> self.pages_per_gib_log2;
                if gib == 0 { 1 } else { (10 * gib).isqrt() }
            }
            InactiveRatio::Fixed(ratio) => u64::from(ratio),
        };
        inactive * ratio < active
    }

    /// Sets the accessed bit of the page in `frame` (a use).
    #[inline]
    pub fn reference(&mut self, frame: u64) {
        self.flags[frame as usize] |= YOUNG;
    }

    /// A fault mapped the page in `frame`, which was read ahead: under the look-twice rule
    /// its access leaves it young, as a fault's does (see [`LinuxLists::insert`]).
    pub fn mapped_by_fault(&mut self, frame: u64) {
        if self.look_twice {
            self.flags[frame as usize] |= YOUNG;
        }
    }

    /// The page in `frame` lost its page-table entry (a store copied it elsewhere), and its
    /// accessed bit with it: reclaim finds it unreferenced.
    pub fn unmapped(&mut self, frame: u64) {
        self.flags[frame as usize] &= !YOUNG;
    }

    /// Registers page `page` of `asid` just placed in `frame`: on the inactive list, or on
    /// the active list when it refaults within the working set (a page read ahead from swap
    /// too, as the kernel checks every page it reads into the swap cache). If a fault
    /// `mapped` it, under the look-twice rule the fault's access leaves it young (the access
    /// sets the accessed bit once the fault has mapped the page); under one look it is not
    /// yet referenced (the fault is its first use and is what put it here). A page read
    /// ahead is in no page-table entry, so nothing has set its bit.
    pub fn insert(&mut self, frame: u64, asid: Asid, page: u64, mapped: bool) {
        self.flags[frame as usize] = if self.look_twice && mapped { YOUNG } else { 0 };
        let active = self.active_len as usize;
        let refault = self.workingset.as_mut().and_then(|w| w.refault(asid, page, active));
        self.stats.refaults += u64::from(refault.is_some());
        let activate = refault == Some(true);
        self.stats.refault_activations += u64::from(activate);
        if activate {
            self.push_active(frame);
        } else {
            self.push_inactive(frame);
        }
    }

    /// The page in `frame` was freed (unmapped): it leaves its list.
    pub fn freed(&mut self, frame: u64) {
        let f = frame as usize;
        self.generation[f] = self.generation[f].wrapping_add(1);
        if self.flags[f] & ACTIVE != 0 {
            self.active_len -= 1;
        } else {
            self.inactive_len -= 1;
        }
        self.flags[f] = 0;
    }

    /// Appends the page in `frame` to the active list's young end.
    fn push_active(&mut self, frame: u64) {
        self.flags[frame as usize] |= ACTIVE;
        self.active.push_back(frame | u64::from(self.generation[frame as usize]) << 32);
        self.active_len += 1;
    }

    /// Appends the page in `frame` to the inactive list's young end.
    fn push_inactive(&mut self, frame: u64) {
        self.flags[frame as usize] &= !ACTIVE;
        self.inactive.push_back(frame | u64::from(self.generation[frame as usize]) << 32);
        self.inactive_len += 1;
    }

    /// Takes the oldest live page off the front of `list` (the active list if `active`).
    fn pop(&mut self, active: bool) -> Option<u64> {
        loop {
            let list = if active { &mut self.active } else { &mut self.inactive };
            let entry = list.pop_front()?;
            let frame = entry & u64::from(u32::MAX);
            if (entry >> 32) as u32 == self.generation[frame as usize] {
                *(if active { &mut self.active_len } else { &mut self.inactive_len }) -= 1;
                return Some(frame);
            }
        }
    }

    /// Notes that page `page` of `asid`, in the frame [`LinuxLists::victim`] chose, was
    /// evicted.
    pub fn evicted(&mut self, asid: Asid, page: u64) {
        if let Some(w) = &mut self.workingset {
            w.evicted(asid, page);
        }
    }

    /// Chooses and unlinks the frame to evict; `None` when no page is resident. Each frame
    /// reclaim promotes on the way is handed to `activated` (the kernel frees the swap slot
    /// of a page it activates while swap is more than half full).
    pub fn victim(&mut self, mut activated: impl FnMut(u64)) -> Option<u64> {
        // Ends: a look clears the accessed bit, which nothing sets again within one call, so
        // the second look at a page in this call evicts it.
        loop {
            if self.inactive_is_low() {
                let frame = self.pop(true).expect("a low inactive list is shorter than the active list");
                self.flags[frame as usize] &= !YOUNG;
                self.push_inactive(frame);
                self.stats.deactivations += 1;
            }
            let frame = self.pop(false)?;
            let bits = std::mem::take(&mut self.flags[frame as usize]);
            if bits & YOUNG == 0 {
                return Some(frame);
            }
            if self.look_twice {
                self.flags[frame as usize] = MARKED;
                if bits & MARKED == 0 {
                    self.push_inactive(frame);
                    self.stats.rotations += 1;
                    continue;
                }
            }
            self.stats.activations += 1;
            if let Some(w) = &mut self.workingset {
                w.activated();
            }
            activated(frame);
            self.push_active(frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lists of 8 frames at ratio 1 holding pages 0 to 3 (page `f` in frame `f`, ASID 0),
    /// just faulted in.
    fn lists_of_four_pages(workingset: bool, look_twice: bool) -> LinuxLists {
        let mut l = LinuxLists::new(8, 4096, InactiveRatio::Fixed(1), workingset, look_twice);
        for f in 0..4 {
            l.insert(f, 0, f, true);
        }
        l
    }

    /// [`lists_of_four_pages`] under one look, with pages 0 and 1 referenced.
    fn lists_with_0_and_1_referenced(workingset: bool) -> LinuxLists {
        let mut l = lists_of_four_pages(workingset, false);
        l.reference(0);
        l.reference(1);
        l
    }

    #[test]
    fn referenced_pages_get_a_second_chance() {
        let mut l = lists_with_0_and_1_referenced(false);
        // 0 and 1 are promoted; 2 is the first unreferenced page.
        assert_eq!(l.victim(|_| {}), Some(2));
        assert_eq!(l.victim(|_| {}), Some(3));
        // Now inactive is empty and active holds 0, 1: they are demoted, unreferenced.
        assert_eq!(l.victim(|_| {}), Some(0));
        assert_eq!(l.victim(|_| {}), Some(1));
        assert_eq!(l.victim(|_| {}), None);
    }

    #[test]
    fn a_hot_page_survives_a_scan_of_cold_ones() {
        let mut l = LinuxLists::new(100, 4096, InactiveRatio::Kernel, false, false);
        for f in 0..100 {
            l.insert(f, 0, f, true);
        }
        let mut evicted = Vec::new();
        for _ in 0..50 {
            l.reference(7);
            let v = l.victim(|_| {}).unwrap();
            evicted.push(v);
            l.insert(v, 0, v, true);
        }
        assert!(!evicted.contains(&7));
    }

    /// The kernel's ratio: 1 below 1 GiB on the lists, isqrt(10 × GiB) above; the active
    /// list is demoted until `inactive × ratio ≥ active`.
    #[test]
    fn the_kernel_ratio_grows_with_the_lists() {
        // 1 GiB of 1 MiB pages: ratio isqrt(10) = 3.
        let mut l = LinuxLists::new(2048, 1 << 20, InactiveRatio::Kernel, false, false);
        for f in 0..1024 {
            l.insert(f, 0, f, true);
            l.reference(f);
        }
        // Every page is referenced: reclaim promotes the inactive pages until the list is
        // low, then demotes (clearing bits) and evicts the first unreferenced one, leaving a
        // quarter of the pages inactive with the victim.
        let victim = l.victim(|_| {}).expect("a page to evict");
        assert_eq!((l.inactive.len() + 1, l.active.len()), (256, 768), "victim {victim}");
        let mut small = LinuxLists::new(64, 4096, InactiveRatio::Kernel, false, false);
        for f in 0..64 {
            small.insert(f, 0, f, true);
            small.reference(f);
        }
        small.victim(|_| {});
        assert_eq!((small.inactive.len() + 1, small.active.len()), (32, 32));
    }

    /// A page that faults back in after fewer evictions and activations than the active list
    /// holds goes straight to the active list; without refault detection, to the inactive one.
    #[test]
    fn a_quick_refault_is_activated_only_with_refault_detection() {
        for workingset in [false, true] {
            let mut l = lists_with_0_and_1_referenced(workingset);
            // 0 and 1 are promoted (the age reaches 2), 2 is evicted (3).
            assert_eq!(l.victim(|_| {}), Some(2));
            l.evicted(0, 2);
            l.insert(2, 0, 2, true);
            assert_eq!(l.active.contains(&2), workingset, "workingset {workingset}");
            assert_eq!(l.inactive.contains(&2), !workingset);
        }
    }

    /// Under the look-twice rule the fault counts: every page survives its first look, and
    /// the first page looked at twice without a reference between goes. Page 0, used again
    /// before the first look (its accessed bit cannot count two uses), is evicted first; page
    /// 1, used again between the looks, is promoted.
    #[test]
    fn looking_twice_a_page_survives_its_first_look_on_its_fault() {
        let mut l = lists_of_four_pages(false, true);
        l.reference(0);
        // All four are young and unmarked: each is marked and rotated, then 0 is looked at
        // again, not young.
        assert_eq!(l.victim(|_| {}), Some(0));
        assert_eq!(l.inactive, [1, 2, 3]);
        l.reference(1);
        assert_eq!(l.victim(|_| {}), Some(2), "1 was young and marked: promoted");
        assert_eq!((l.active.len(), l.flags[1] & !ACTIVE), (1, MARKED), "an activated page stays marked");
        assert_eq!(l.victim(|_| {}), Some(3));
        let stats = ReclaimStats { activations: 1, rotations: 4, ..ReclaimStats::default() };
        assert_eq!(l.stats(), stats, "each of the four rotated once, 1 promoted, nothing demoted");
    }

    /// A promoted page keeps its mark through its demotion, so one use after it promotes it
    /// at its next look (the kernel's "recently deactivated but used pages are quickly
    /// recovered"), where a new page needs a use after its first look.
    #[test]
    fn looking_twice_a_demoted_page_comes_back_on_one_use() {
        let mut l = lists_of_four_pages(false, true);
        assert_eq!(l.victim(|_| {}), Some(0), "all four rotated on their faults, then 0 goes");
        l.reference(1);
        l.reference(2);
        // 1 and 2 are promoted; the inactive list is then low, so 1 is demoted behind 3,
        // which goes.
        assert_eq!(l.victim(|_| {}), Some(3));
        assert_eq!((Vec::from(l.inactive.clone()), Vec::from(l.active.clone())), (vec![1], vec![2]));
        assert_eq!(l.flags[1], MARKED, "demoted: not young, still marked");
        l.reference(1);
        assert_eq!(l.victim(|_| {}), Some(2), "1 is promoted at one look; 2, demoted, goes");
        assert_eq!(Vec::from(l.active.clone()), vec![1]);
    }

    /// Pages `0..resident` used often, then a loop over `later` new pages, on `frames`
    /// frames: the faults of the loop's second to last rounds.
    fn faults_of_a_new_working_set(workingset: bool, frames: u64, resident: u64, later: u64) -> u64 {
        let mut l = LinuxLists::new(frames, 4096, InactiveRatio::Fixed(1), workingset, false);
        let mut frame_of = std::collections::HashMap::new();
        let mut page_in = vec![None; frames as usize];
        let mut faults = 0;
        let mut access = |l: &mut LinuxLists, page: u64, count: bool| {
            if let Some(&frame) = frame_of.get(&page) {
                l.reference(frame);
                return;
            }
            faults += u64::from(count);
            let frame = match page_in.iter().position(Option::is_none) {
                Some(free) => free as u64,
                None => {
                    let frame = l.victim(|_| {}).unwrap();
                    let old = page_in[frame as usize].take().unwrap();
                    frame_of.remove(&old);
                    l.evicted(0, old);
                    frame
                }
            };
            page_in[frame as usize] = Some(page);
            frame_of.insert(page, frame);
            l.insert(frame, 0, page, true);
        };
        for _ in 0..4 {
            (0..resident).for_each(|p| access(&mut l, p, false));
        }
        for round in 0..20 {
            (1000..1000 + later).for_each(|p| access(&mut l, p, round > 0));
        }
        faults
    }

    /// The kernel's reason for refault detection: a new working set (70 pages) that fits in
    /// memory (100 frames) but not in the inactive list, while an old one (60 pages, no longer
    /// used) holds the active list. Without it, the old pages are demoted only while the
    /// inactive list is low, so 50 of them stay active and the loop thrashes in every round;
    /// with it, the loop's refaults are activated, the old pages are pushed out, and the loop
    /// is established within two rounds.
    #[test]
    fn refault_detection_establishes_a_new_working_set() {
        let (without, with) = (faults_of_a_new_working_set(false, 100, 60, 70), faults_of_a_new_working_set(true, 100, 60, 70));
        assert_eq!(without, 19 * 70, "without refault detection every round faults");
        assert!(with <= 2 * 70, "with refault detection: {with} faults");
    }

    /// The counter's events, each where a plausible slip would move a refault across the
    /// active list's length: a demotion does not age it, a promotion does, and the refault
    /// is tested against the active list alone (after the kernel's 5.11 `move_pages_to_lru`,
    /// `shrink_active_list` and `workingset_refault`).
    #[test]
    fn demotions_do_not_age_promotions_do_and_only_the_active_list_counts() {
        // A demotion (of 0, when the inactive list is low) between the evictions of 2 and 3:
        // page 2 refaults at distance 1 with one active page, so it is activated.
        let mut l = lists_with_0_and_1_referenced(true);
        assert_eq!(l.victim(|_| {}), Some(2));
        l.evicted(0, 2);
        assert_eq!(l.victim(|_| {}), Some(3), "0 is demoted first, unreferenced");
        l.evicted(0, 3);
        assert_eq!(l.active.len(), 1);
        l.insert(2, 0, 2, true);
        assert!(l.active.contains(&2), "distance 1 against one active page");
        // Two promotions between the evictions of 0 and 3: page 0 refaults at distance 3,
        // with 2 pages active and 3 inactive, so it stays inactive.
        let mut l = LinuxLists::new(8, 4096, InactiveRatio::Fixed(1), true, false);
        for f in 0..7 {
            l.insert(f, 0, f, true);
        }
        assert_eq!(l.victim(|_| {}), Some(0));
        l.evicted(0, 0);
        l.reference(1);
        l.reference(2);
        assert_eq!(l.victim(|_| {}), Some(3));
        l.evicted(0, 3);
        assert_eq!((l.active.len(), l.inactive.len()), (2, 3));
        l.insert(0, 0, 0, true);
        assert!(l.inactive.contains(&0), "distance 3 against two active pages");
    }

    /// A page of [`Model`]: where it is, and its bits.
    struct Resident {
        frame: u64,
        page: u64,
        active: bool,
        /// When it last entered its list's young end: the oldest page of a list has the
        /// smallest.
        since: u64,
        young: bool,
        marked: bool,
    }

    /// The rules of the module documentation, kept as a plain list of resident pages with
    /// timestamps (each list's oldest found by a search), and refault detection as a map of
    /// eviction times, for a differential test of [`LinuxLists`].
    struct Model {
        pages: Vec<Resident>,
        clock: u64,
        age: u64,
        shadows: std::collections::HashMap<u64, u64>,
        ratio: u64,
        workingset: bool,
        look_twice: bool,
        stats: ReclaimStats,
    }

    impl Model {
        fn tick(&mut self) -> u64 {
            self.clock += 1;
            self.clock
        }

        fn oldest(&self, active: bool) -> Option<usize> {
            (0..self.pages.len()).filter(|&i| self.pages[i].active == active).min_by_key(|&i| self.pages[i].since)
        }

        fn insert(&mut self, frame: u64, page: u64, mapped: bool) {
            let active_len = self.pages.iter().filter(|p| p.active).count() as u64;
            let eviction = self.shadows.remove(&page).filter(|_| self.workingset);
            let active = eviction.is_some_and(|e| self.age - e <= active_len);
            self.age += u64::from(active);
            self.stats.refaults += u64::from(eviction.is_some());
            self.stats.refault_activations += u64::from(active);
            let since = self.tick();
            self.pages.push(Resident { frame, page, active, since, young: self.look_twice && mapped, marked: false });
        }

        fn reference(&mut self, frame: u64) {
            self.pages.iter_mut().filter(|p| p.frame == frame).for_each(|p| p.young = true);
        }

        /// The evicted page's frame and page.
        fn victim(&mut self) -> Option<(u64, u64)> {
            loop {
                let active = self.pages.iter().filter(|p| p.active).count() as u64;
                if (self.pages.len() as u64 - active) * self.ratio < active {
                    let i = self.oldest(true).expect("active pages");
                    let since = self.tick();
                    let p = &mut self.pages[i];
                    (p.active, p.since, p.young) = (false, since, false);
                    self.stats.deactivations += 1;
                }
                let i = self.oldest(false)?;
                let since = self.tick();
                let p = &mut self.pages[i];
                // The kernel's `page_check_references` (one look: a young page is promoted).
                let referenced_ptes = std::mem::take(&mut p.young);
                let referenced_page = std::mem::take(&mut p.marked);
                if !referenced_ptes {
                    let p = self.pages.swap_remove(i);
                    self.age += 1;
                    self.shadows.insert(p.page, self.age);
                    return Some((p.frame, p.page));
                }
                p.marked = self.look_twice; // SetPageReferenced
                if self.look_twice && !referenced_page {
                    p.since = since; // PAGEREF_KEEP
                    self.stats.rotations += 1;
                    continue;
                }
                (p.active, p.since) = (true, since); // PAGEREF_ACTIVATE
                self.age += u64::from(self.workingset);
                self.stats.activations += 1;
            }
        }
    }

    proptest::proptest! {
        /// [`LinuxLists`] evicts what the model evicts, keeps the same pages active and
        /// counts the same events, through any mix of faults (of pages evicted before, too),
        /// pages read ahead (placed unmapped), uses and evictions, under either rule, with or without refault detection, at
        /// ratios 1 to 3.
        #[test]
        fn the_lists_agree_with_a_model_of_their_rules(
            ops in proptest::collection::vec((0u8..4, 0u64..24), 1..300),
            ratio in 1u32..4,
            workingset: bool,
            look_twice: bool,
        ) {
            const FRAMES: u64 = 12;
            let mut lists = LinuxLists::new(FRAMES, 4096, InactiveRatio::Fixed(ratio), workingset, look_twice);
            let mut model = Model { pages: Vec::new(), clock: 0, age: 0, shadows: Default::default(), ratio: ratio.into(), workingset, look_twice, stats: ReclaimStats::default() };
            let mut page_in: Vec<Option<u64>> = vec![None; FRAMES as usize];
            for (op, x) in ops {
                match op {
                    // A fault (0) or readahead (3) of page x, if not resident, into a free frame.
                    0 | 3 if !page_in.contains(&Some(x)) => {
                        let Some(frame) = page_in.iter().position(Option::is_none) else { continue };
                        page_in[frame] = Some(x);
                        lists.insert(frame as u64, 0, x, op == 0);
                        model.insert(frame as u64, x, op == 0);
                    }
                    0 | 3 => {}
                    1 => {
                        lists.reference(x % FRAMES);
                        model.reference(x % FRAMES);
                    }
                    _ => {
                        let expected = model.victim();
                        let before = lists.stats().activations;
                        let mut activated = Vec::new();
                        let frame = lists.victim(|f| activated.push(f));
                        proptest::prop_assert_eq!(frame, expected.map(|(f, _)| f));
                        // Every promotion is reported (a page may be demoted again in the same call).
                        proptest::prop_assert_eq!(activated.len() as u64, lists.stats().activations - before);
                        if let Some((frame, page)) = expected {
                            lists.evicted(0, page);
                            page_in[frame as usize] = None;
                        }
                    }
                }
                let mut active: Vec<u64> = model.pages.iter().filter(|p| p.active).map(|p| p.frame).collect();
                let mut listed = Vec::from(lists.active.clone());
                active.sort_unstable();
                listed.sort_unstable();
                proptest::prop_assert_eq!(listed, active);
                proptest::prop_assert_eq!(lists.stats(), model.stats);
            }
        }
    }
}
