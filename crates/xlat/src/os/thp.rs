//! Transparent huge pages (`os.thp`, `os.khugepaged`): Linux's THP for anonymous memory,
//! on a memory of 4 KiB frames.
//!
//! - **At a fault** (`thp = "always"`): when the aligned 2 MiB range holding the address is
//!   eligible (no base page of it has a translation object: the driver's `huge_eligible`, EMT's
//!   customizable huge-page check, whose work counts for the fault) and an aligned run of 512
//!   free frames exists, the fault maps a 2 MiB page there, zeroed whole
//!   (`do_huge_pmd_anonymous_page`); otherwise a 4 KiB page, as before (a *fallback* when
//!   only the free run was missing, the kernel's `thp_fault_fallback`).
//! - **khugepaged**: every `period` instructions of the machine a pass scans up to
//!   `pages_to_scan` pages, 512 for each 2 MiB range it visits, in address order from where
//!   the last pass stopped (`khugepaged_scan`). A range is collapsed into a 2 MiB page when at
//!   most `max_ptes_none` of its 512 pages are unmapped and a free run exists
//!   (`collapse_huge_page`): its base pages are copied into the new page and unmapped, the
//!   pages never touched zeroed, their frames freed, and the range shot down from the TLBs
//!   once. Scanning a range iterates over its entries (the driver's iterator, the work EMT's
//!   customized iterator saves); a pass's work counts for the `collapse` operation.
//!
//! - **Mappings**: once address-space events name an address space, a huge page goes only
//!   where its aligned range lies wholly inside one mapping, at a fault or by khugepaged
//!   (`super::address_space`); an unmap that cuts a huge page splits it.
//!
//! - **Reclaim**: the eviction policy and the eviction-age metric see a huge page as one
//!   page, known by its first frame, as Linux's LRU lists hold a THP as one compound page
//!   whose accessed bit is its PMD's: a use of any of its base pages is a use of it. Evicting
//!   it swaps it out whole, as Linux does since 4.13 (`THP_SWAP`): its 512 base pages are
//!   written to 512 swap slots, its frames freed, and its mapping split into 512 swap
//!   entries (`split_huge_pmd` before `try_to_unmap`), so each base page comes back on its
//!   own fault. A huge page split in place (a partial unmap) leaves 512 pages the policy
//!   knows, each last used when the huge page was.
//!
//! What the model leaves out, and why (see `docs/configuration.md`): the page-table page
//! Linux deposits at a huge fault for a later split is allocated at the split instead;
//! `madvise` mode has no `madvise` calls to follow; faults under memory pressure fall back
//! to base pages rather than reclaim or compact for a free run (Linux's default `defrag`
//! for faults outside `madvise` ranges). Placement must be fully associative (a huge page
//! needs 512 contiguous frames, which set-associative and iceberg placement hash apart).

use super::kernel_work::Operation;
use super::placement::Placer;
use super::{NoFrame, Os, OutOfMemory, Walk};
use crate::mmu::{Placed, TableNeed};
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn};
use serde::{Deserialize, Serialize};

/// Whether faults map transparent huge pages (`os.thp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Thp {
    /// 4 KiB pages only (the default; Linux's `never`).
    #[default]
    Never,
    /// A fault maps a 2 MiB page where it can, and khugepaged collapses ranges later
    /// (Linux's `always`).
    Always,
}

/// The parameters of khugepaged (`os.khugepaged`), Linux's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct KhugepagedSpec {
    /// Instructions between two passes (10^10: Linux's `scan_sleep_millisecs` of 10 s at one
    /// instruction per nanosecond); 0 turns khugepaged off.
    pub period: u64,
    /// Pages a pass scans, 512 for each 2 MiB range visited (Linux's `pages_to_scan`, 4096).
    pub pages_to_scan: u64,
    /// Most unmapped pages of a range khugepaged still collapses (Linux's `max_ptes_none`,
    /// 511: any range with a page mapped), 0 to 511.
    pub max_ptes_none: u64,
}

impl Default for KhugepagedSpec {
    fn default() -> KhugepagedSpec {
        KhugepagedSpec { period: 10_000_000_000, pages_to_scan: 4096, max_ptes_none: 511 }
    }
}

impl KhugepagedSpec {
    /// Checks the parameters; errors name the field under `path`.
    pub fn check(&self, path: &str) -> crate::Result<()> {
        if self.max_ptes_none > 511 {
            return Err(crate::Error::config(format!("{path}.max_ptes_none"), format!("{}: a 2 MiB range has 512 pages, so at most 511 can be unmapped", self.max_ptes_none)));
        }
        if self.pages_to_scan == 0 {
            return Err(crate::Error::config(format!("{path}.pages_to_scan"), "a pass scans at least one page (turn khugepaged off with `period = 0`)"));
        }
        Ok(())
    }
}

/// Base pages of a huge page.
const HUGE_PAGES: u64 = 512;
/// Bytes of a huge page.
const HUGE_BYTES: u64 = 2 << 20;

/// The state of THP: khugepaged's schedule and cursor, and where free runs may start.
#[derive(Clone, Debug)]
pub(crate) struct ThpState {
    khugepaged: KhugepagedSpec,
    /// The machine's instruction count at which the next pass runs.
    next_pass: u64,
    /// The last range a pass scanned: the next pass starts after it.
    cursor: Option<(Asid, u64)>,
    /// No aligned run of 512 free frames starts below this run (in runs): frames freed
    /// lower it.
    free_hint: u64,
    /// Faults may map huge pages (as `enabled` switched at run time; tests turn it off to
    /// leave base pages for khugepaged).
    faults: bool,
    /// A bit per aligned run of 512 frames: set while the run holds a huge page.
    huge_runs: Vec<u64>,
}

impl ThpState {
    /// THP as `thp` and `khugepaged` configure it, if on, over `frames` frames.
    pub fn new(thp: Thp, khugepaged: KhugepagedSpec, frames: u64) -> Option<ThpState> {
        // A bit for every run, the last one partial too: uses of its frames ask.
        let huge_runs = vec![0; frames.div_ceil(HUGE_PAGES).div_ceil(64) as usize];
        (thp == Thp::Always).then_some(ThpState { khugepaged, next_pass: khugepaged.period, cursor: None, free_hint: 0, faults: true, huge_runs })
    }

    /// The frame the eviction policy knows the page in `frame` by: a huge page's first
    /// frame, else `frame`.
    #[inline(always)]
    pub fn unit(&self, frame: u64) -> u64 {
        let run = frame / HUGE_PAGES;
        if self.huge_runs[(run / 64) as usize] & (1 << (run % 64)) != 0 {
            run * HUGE_PAGES
        } else {
            frame
        }
    }

    /// True when `frame` is the first frame of a huge page.
    pub fn is_huge(&self, frame: u64) -> bool {
        frame % HUGE_PAGES == 0 && self.unit(frame) == frame && self.unit(frame + 1) == frame
    }

    /// True when `frame` holds a base page of a huge page other than its first.
    pub fn is_tail(&self, frame: u64) -> bool {
        self.unit(frame) != frame
    }

    /// Records whether the run from frame `first` holds a huge page.
    fn set_huge(&mut self, first: u64, huge: bool) {
        let run = first / HUGE_PAGES;
        let (word, bit) = ((run / 64) as usize, 1 << (run % 64));
        if huge {
            self.huge_runs[word] |= bit;
        } else {
            self.huge_runs[word] &= !bit;
        }
    }
}

/// What THP did (`results.json`'s `os.thp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThpStats {
    /// Faults that mapped a 2 MiB page.
    pub huge_faults: u64,
    /// Faults in an eligible range that found no free run and mapped a 4 KiB page.
    pub fallbacks: u64,
    /// khugepaged passes.
    pub passes: u64,
    /// Ranges khugepaged scanned.
    pub ranges_scanned: u64,
    /// Ranges collapsed into a 2 MiB page.
    pub collapses: u64,
    /// Huge pages split into base pages (a partial unmap, or an eviction: see
    /// `evictions`).
    pub splits: u64,
    /// Huge pages evicted, each swapped out whole and its mapping split into swap entries.
    pub evictions: u64,
    /// Huge pages mapped now.
    pub huge_pages: u64,
}

impl Os {
    /// A fault's 2 MiB page, when THP is on and the range holding `vaddr` can take one;
    /// `None` to map a base page instead.
    pub(super) fn huge_fault(&mut self, asid: Asid, vaddr: u64) -> Option<std::result::Result<Walk, OutOfMemory>> {
        if !self.thp.as_ref()?.faults || !self.huge_allowed(asid, vaddr) {
            return None;
        }
        if !self.translations.huge_eligible(asid, vaddr, PageSize::Size2M) {
            return None;
        }
        // The run is looked for before the tables are placed (none are for a fallback) and
        // again after (a table may have taken a frame of it). The tables include those its
        // base pages would need, which the kernel allocates at the fault and deposits for a
        // split (`pgtable_trans_huge_deposit`), so that a split never needs memory.
        let vpn = PageSize::Size2M.first_vpn(vaddr);
        let tables = |os: &mut Os| os.place_tables(asid, vpn, PageSize::Size2M).and_then(|()| os.place_tables(asid, vpn, PageSize::Size4K));
        let first = self.free_run().and_then(|_| match tables(self) {
            Ok(()) => self.free_run().map(Ok),
            Err(reason) => Some(Err(reason)),
        });
        let first = match first {
            Some(Ok(first)) => first,
            Some(Err(reason)) => return Some(Err(OutOfMemory { asid, vaddr, reason })),
            None => {
                self.thp_stats.fallbacks += 1;
                return None;
            }
        };
        let work = self.translations.meter().add();
        work.frame_allocations += 1;
        work.data_bytes_zeroed += HUGE_BYTES;
        let walk = self.map_huge(asid, vpn, first).map_err(|reason| OutOfMemory { asid, vaddr, reason });
        self.stats.page_faults += 1;
        self.stats.footprint_bytes += HUGE_BYTES;
        self.thp_stats.huge_faults += 1;
        self.fault_clock = self.clock;
        Some(walk)
    }

    /// The first frame of the lowest aligned run of 512 free frames, if any.
    fn free_run(&mut self) -> Option<u64> {
        let state = self.thp.as_mut().expect("THP is on");
        let runs = self.frames.capacity() / HUGE_PAGES;
        let run = (state.free_hint..runs).find(|&run| self.frames.run_is_free(run * HUGE_PAGES, HUGE_PAGES));
        state.free_hint = run.unwrap_or(runs);
        run.map(|run| run * HUGE_PAGES)
    }

    /// Maps the 2 MiB page `vpn` of `asid` at the free run from frame `first`, which it
    /// occupies: the policy is told of its first frame only.
    fn map_huge(&mut self, asid: Asid, vpn: Vpn, first: u64) -> std::result::Result<Walk, NoFrame> {
        self.utilization.change(self.clock, self.frames.used());
        for i in 0..HUGE_PAGES {
            if let Placer::Fully(alloc) = &mut self.placer {
                alloc.reserve(first + i);
            }
            if i > 0 {
                self.frames.occupy(first + i, asid, Vpn(vpn.0 + i), self.clock);
            }
        }
        self.install(asid, vpn, first, false, true);
        self.thp.as_mut().expect("THP is on").set_huge(first, true);
        let walk = self.map_translation(Translation { asid, vpn, pfn: Pfn(first), size: PageSize::Size2M }, 0)?;
        self.thp_stats.huge_pages += 1;
        Ok(walk)
    }

    /// The huge page at frame `first` (page `vpn` of `asid`) was split in place: its other
    /// 511 base pages become pages the policy knows, each last used when the huge page was.
    pub(super) fn split_in_place(&mut self, asid: Asid, vpn: Vpn, first: u64) {
        self.thp.as_mut().expect("THP is on").set_huge(first, false);
        if !self.policy.evicts() {
            // Only eviction keeps frames' owners and stamps.
            return;
        }
        let stamp = self.frames.stamp(first);
        for i in 1..HUGE_PAGES {
            self.frames.touch(first + i, stamp);
            self.policy.placed(&self.frames, first + i, asid, Vpn(vpn.0 + i), true);
            if let Some(age) = &mut self.age {
                age.insert(stamp);
            }
        }
    }

    /// Places what the driver needs before the base pages of the huge page `vpn` of
    /// `asid` are mapped at a split, from free frames only: a split never reclaims. Radix
    /// and FPT need nothing (their table was placed at the huge fault, or held the pages a
    /// collapse gathered, as the kernel deposits it); ECPT may ask for a resize's table,
    /// which otherwise waits for the next fault, the old table serving meanwhile.
    pub(super) fn place_split_tables(&mut self, asid: Asid, vpn: Vpn) {
        if !self.walks_read {
            return;
        }
        while let Some(need) = self.translations.need(asid, vpn, PageSize::Size4K) {
            let placed = match need {
                TableNeed::Block(pages) => self.place_block(asid, pages).map(Placed::Block),
                TableNeed::Page => self.place_table(asid, false).ok().map(Placed::Page),
            };
            let Some(placed) = placed else { return };
            self.translations.given(asid, vpn, PageSize::Size4K, placed);
        }
    }

    /// Frees the 512 frames of the huge page at frame `first`, which left memory other
    /// than by eviction: the policy forgets it once.
    pub(super) fn free_huge(&mut self, first: u64) {
        self.thp.as_mut().expect("THP is on").set_huge(first, false);
        self.free_frame(first);
        self.utilization.change(self.clock, self.frames.used());
        self.vacate_run(first + 1..first + HUGE_PAGES);
    }

    /// Vacates `frames` of a huge page and gives them back to the allocator: what its tails
    /// need when it is freed, all of it when it is evicted.
    fn vacate_run(&mut self, frames: std::ops::Range<u64>) {
        for frame in frames {
            self.frames.vacate(frame);
            if let Placer::Fully(alloc) = &mut self.placer {
                alloc.free(frame);
            }
        }
    }

    /// Evicts the huge page at frame `first`, as Linux's reclaim with `THP_SWAP` does: its
    /// 512 base pages written to swap whole and its frames freed, then its mapping split
    /// into 512 swap entries (a call of [`Operation::Split`] inside the swap-out) and shot
    /// down. Fails, changing nothing, when swap has fewer than 512 free slots.
    pub(super) fn evict_huge(&mut self, first: u64) -> std::result::Result<(), NoFrame> {
        if !self.swap.write_pages(HUGE_PAGES) {
            return Err(NoFrame::SwapFull);
        }
        let (asid, vpn) = self.frames.owner(first).expect("a huge page occupies its frames");
        let stamp = self.frames.stamp(first);
        if self.stats.evictions == 0 {
            self.utilization.start(self.clock);
        }
        self.utilization.change(self.clock, self.frames.used());
        self.vacate_run(first..first + HUGE_PAGES);
        self.thp.as_mut().expect("THP is on").set_huge(first, false);
        self.frame_freed(first);
        self.policy.evicted(first, asid, vpn, stamp);
        if let Some(age) = &mut self.age {
            age.evict(stamp);
        }
        self.stats.evictions += HUGE_PAGES;
        self.stats.swap_outs += HUGE_PAGES;
        self.thp_stats.evictions += 1;
        self.call(Operation::Split, |os| os.split_into_swap_entries(asid, vpn, first))
    }

    /// The mapping of the evicted huge page `vpn` of `asid` (at frame `first`) becomes 512
    /// swap entries: the huge entry removed, the base pages' table placed and their entries
    /// written, the huge page shot down.
    fn split_into_swap_entries(&mut self, asid: Asid, vpn: Vpn, first: u64) -> std::result::Result<(), NoFrame> {
        self.translations.remove(asid, vpn);
        self.place_split_tables(asid, vpn);
        for i in 0..HUGE_PAGES {
            self.translations.map_swapped(Translation { asid, vpn: Vpn(vpn.0 + i), pfn: Pfn(first + i), size: PageSize::Size4K })?;
        }
        if self.walks_read {
            self.release_tables();
        }
        self.stats.mapped_pages = self.translations.store().len() as u64;
        self.thp_stats.huge_pages -= 1;
        self.thp_stats.splits += 1;
        self.shoot_down(asid, vpn, PageSize::Size2M);
        Ok(())
    }

    /// Lets faults map huge pages or not, as writing `enabled` at run time does (pages
    /// mapped meanwhile are base pages, for khugepaged to collapse).
    #[cfg(test)]
    pub(crate) fn set_thp_faults(&mut self, on: bool) {
        self.thp.as_mut().expect("THP is on").faults = on;
    }

    /// Frame `frame` was freed: a free run may start lower now.
    pub(super) fn frame_freed(&mut self, frame: u64) {
        if let Some(state) = &mut self.thp {
            state.free_hint = state.free_hint.min(frame / HUGE_PAGES);
        }
    }

    /// Runs the khugepaged passes due by the time the machine has run `instructions`. Fails
    /// when the page table found no slot for a collapsed page (the range's base pages are
    /// unmapped by then, so the run cannot go on).
    pub fn advance(&mut self, instructions: u64) -> std::result::Result<(), OutOfMemory> {
        let Some(state) = &self.thp else { return Ok(()) };
        let period = state.khugepaged.period;
        if period == 0 {
            return Ok(());
        }
        while self.thp.as_ref().is_some_and(|s| instructions >= s.next_pass) {
            self.thp.as_mut().expect("THP is on").next_pass += period;
            self.khugepaged_pass()?;
        }
        Ok(())
    }

    /// One pass of khugepaged: the next ranges in address order, from where the last pass
    /// stopped (wrapping around), each scanned and collapsed where it qualifies.
    fn khugepaged_pass(&mut self) -> std::result::Result<(), OutOfMemory> {
        self.thp_stats.passes += 1;
        let state = self.thp.as_ref().expect("THP is on");
        let ranges = self.translations.store().leaf_ranges();
        let budget = state.khugepaged.pages_to_scan.div_ceil(HUGE_PAGES) as usize;
        let start = state.cursor.map_or(0, |c| ranges.partition_point(|&r| r <= c));
        let mut scanned = 0;
        for i in 0..ranges.len() {
            if scanned == budget {
                break;
            }
            let (asid, first) = ranges[(start + i) % ranges.len()];
            self.thp.as_mut().expect("THP is on").cursor = Some((asid, first));
            // khugepaged visits the aligned ranges inside its mappings only.
            if !self.huge_allowed(asid, first) {
                continue;
            }
            scanned += 1;
            self.call(Operation::Collapse, |os| os.scan_range(asid, first)).map_err(|reason| OutOfMemory { asid, vaddr: first, reason })?;
        }
        Ok(())
    }

    /// khugepaged's scan of the 2 MiB range at `first` of `asid`: its entries read through
    /// the driver's iterator; collapsed when it is made of base pages in memory, at most
    /// `max_ptes_none` of them unmapped (none swapped out), and a free run exists.
    fn scan_range(&mut self, asid: Asid, first: u64) -> std::result::Result<(), NoFrame> {
        self.thp_stats.ranges_scanned += 1;
        let mut present = Vec::new();
        let (mut huge, mut swapped) = (false, false);
        let _ = self.translations.iterate(asid, first..first + HUGE_BYTES, &mut |vaddr, object| {
            huge |= object.size != PageSize::Size4K;
            match object.presence {
                super::Presence::Present { frame, .. } => present.push((vaddr, frame)),
                super::Presence::Swapped => swapped = true,
            }
            std::ops::ControlFlow::Continue(())
        });
        let max_none = self.thp.as_ref().expect("THP is on").khugepaged.max_ptes_none;
        // A range holding a swap entry is left (Linux's `max_ptes_swap` taken as 0: the
        // kernel would swap up to 64 pages in first).
        if huge || swapped || present.is_empty() || HUGE_PAGES - present.len() as u64 > max_none || self.free_run().is_none() {
            return Ok(());
        }
        let vpn = PageSize::Size2M.first_vpn(first);
        // khugepaged gives up on a range it finds no memory for, and tries it again later.
        if self.place_tables(asid, vpn, PageSize::Size2M).is_err() {
            return Ok(());
        }
        let Some(run) = self.free_run() else { return Ok(()) };
        if !self.still_present(asid, &present) {
            return Ok(());
        }
        self.collapse(asid, vpn, run, &present)
    }

    /// True when each page of `present` (address and frame) of `asid` is still in its
    /// frame: placing the collapse's table may have evicted some, and the kernel, finding
    /// the range changed, gives up (`__collapse_huge_page_isolate`).
    fn still_present(&mut self, asid: Asid, present: &[(u64, Pfn)]) -> bool {
        let store = self.translations.store_mut();
        present.iter().all(|&(vaddr, frame)| matches!(store.object(asid, vaddr), Some(o) if matches!(o.presence, super::Presence::Present { frame: f, .. } if f == frame)))
    }

    /// Collapses the range of `vpn` (its mapped base pages `present`, address and frame)
    /// into a 2 MiB page at the free run from frame `run`.
    fn collapse(&mut self, asid: Asid, vpn: Vpn, run: u64, present: &[(u64, Pfn)]) -> std::result::Result<(), NoFrame> {
        let work = self.translations.meter().add();
        work.frame_allocations += 1;
        work.data_bytes_copied += present.len() as u64 * PageSize::Size4K.bytes();
        work.data_bytes_zeroed += (HUGE_PAGES - present.len() as u64) * PageSize::Size4K.bytes();
        for &(vaddr, frame) in present {
            self.translations.remove(asid, PageSize::Size4K.first_vpn(vaddr));
            self.free_frame(frame.0);
        }
        self.map_huge(asid, vpn, run)?;
        self.thp_stats.collapses += 1;
        self.shoot_down(asid, vpn, PageSize::Size2M);
        Ok(())
    }
}
