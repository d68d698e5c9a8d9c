//! Parts of a machine's conventional TLB hierarchy replayed apart, one batch behind, on a
//! second core: the whole hierarchy of a machine with Mosaic TLBs, or the levels below the
//! first of a machine on the express path ([`crate::tlb::LowerLevels`], whose first level
//! logs its misses as [`Descent`]s).
//!
//! When Mosaic TLBs ride the OS, and the OS does not count the conventional TLBs' fills as
//! uses (every `recency` but `fill`), nothing the OS or the Mosaic TLBs do depends on the
//! conventional hierarchy: a fault maps the page whichever TLB walks first, the frame a
//! reference uses comes from a Mosaic TLB, and a walk that does not fault changes nothing
//! but the walk count. The hierarchy's hits and misses then depend only on the pages
//! translated, their frames, and the pages shot down between translations. The rest of the
//! machine records those in a [`Log`] as it simulates a batch, and the hierarchy replays the
//! log on another thread while the rest simulates the next batch.
//!
//! Order within one translation is kept: the hierarchy looks up and, on a miss, fills
//! before it sees the shootdowns the translation caused (the fault's evictions, a store's
//! copy), as in the sequential loop, where the hierarchy comes first. A Mosaic TLB sees
//! those shootdowns before its lookup and fill there, and after them here (its lookup even
//! comes before the fault), which changes nothing: an invalidation only marks a sub-page
//! unmapped, touching neither tags nor replacement state; the evicted page is another page
//! than the one looked up; and a fill reads the ToC from the page table, where the evicted
//! page is already unmapped.
//!
//! A run stops at an error (a fault that finds no frame or no swap slot) and reports no
//! statistics; after one, the machine's statistics are not those of the sequential loop,
//! which had counted the failing translation's lookups.

use super::clock::TimingLog;
use crate::memref::AccessKind;
use crate::tlb::{Descent, SingleLevel, TlbHierarchy};
use crate::types::{Asid, PageSize, Pfn, Translation, Vpn, BASE_PAGE_SHIFT};

/// One page translated by the rest of the machine: 16 bytes, since a batch's log streams
/// from one core to the other.
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    /// Address translated (the first byte of a later page of a straddling reference).
    vaddr: u64,
    /// The base frame the page was mapped at then: page-table leaves hold frames in 32 bits.
    frame: u32,
    asid: Asid,
    kind: AccessKind,
}

impl Step {
    /// The translation of `vaddr` of `asid` to `pfn` for a `kind` access.
    #[inline(always)]
    pub fn new(asid: Asid, vaddr: u64, kind: AccessKind, pfn: Pfn) -> Step {
        debug_assert!(pfn.0 <= u64::from(u32::MAX), "page tables hold frames in 32 bits");
        Step { vaddr, frame: pfn.0 as u32, asid, kind }
    }
}

/// A page shot down during the translation of `log.steps[after]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shootdown {
    pub after: u32,
    pub asid: Asid,
    pub vpn: Vpn,
}

/// What the rest of the machine did in one batch, as the part replayed apart needs it.
#[derive(Debug)]
pub(super) struct Log {
    /// For a whole hierarchy replayed apart: the pages translated...
    pub steps: Vec<Step>,
    /// ...and the pages shot down, in the order the OS asked for them.
    pub shootdowns: Vec<Shootdown>,
    /// For the levels below the first replayed apart: the first level's misses...
    pub descents: Vec<Descent>,
    /// ...and the size of every page they translated (the express path runs over an OS that
    /// maps one size).
    pub descent_size: PageSize,
    /// For a timed machine's cycle model replayed apart: its accesses.
    pub timed: TimingLog,
}

impl Default for Log {
    fn default() -> Log {
        Log { steps: Vec::new(), shootdowns: Vec::new(), descents: Vec::new(), descent_size: PageSize::Size4K, timed: TimingLog::default() }
    }
}

impl Log {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.shootdowns.is_empty() && self.descents.is_empty() && self.timed.is_empty()
    }

    pub fn clear(&mut self) {
        self.steps.clear();
        self.shootdowns.clear();
        self.descents.clear();
        self.timed.clear();
    }

    /// Records that page `vpn` of `asid` was shot down during the translation being made.
    pub fn shoot_down(&mut self, asid: Asid, vpn: Vpn) {
        let after = u32::try_from(self.steps.len()).expect("a batch has fewer than 2^32 pages");
        self.shootdowns.push(Shootdown { after, asid, vpn });
    }
}

/// Replays `log` in `tlb` as the sequential loop would have simulated it: its steps in the
/// whole hierarchy, its descents in the levels below the first. Returns the walks its misses
/// made.
pub(super) fn replay(tlb: &mut TlbHierarchy, log: &Log) -> u64 {
    let mut walks = replay_steps(tlb, log);
    if !log.descents.is_empty() {
        let mut lower = tlb.take_lower();
        walks += lower.replay(log.descent_size, &log.descents);
        tlb.put_lower(lower);
    }
    walks
}

/// The steps of `log` replayed in `tlb`, a hierarchy over an OS of 4 KiB pages; returns the
/// walks its misses made.
pub(super) fn replay_steps(tlb: &mut TlbHierarchy, log: &Log) -> u64 {
    if log.steps.is_empty() && log.shootdowns.is_empty() {
        return 0;
    }
    if let Some(single) = tlb.express_single_level(PageSize::Size4K) {
        return match single.ways {
            1 => replay_shaped::<true, 1>(tlb, Some(single), log),
            2 => replay_shaped::<true, 2>(tlb, Some(single), log),
            4 => replay_shaped::<true, 4>(tlb, Some(single), log),
            8 => replay_shaped::<true, 8>(tlb, Some(single), log),
            12 => replay_shaped::<true, 12>(tlb, Some(single), log),
            16 => replay_shaped::<true, 16>(tlb, Some(single), log),
            _ => unreachable!("express_single_level returns the ways of a specialized shape"),
        };
    }
    if tlb.is_one_level() {
        replay_shaped::<true, 0>(tlb, None, log)
    } else {
        replay_shaped::<false, 0>(tlb, None, log)
    }
}

/// [`replay_steps`] for a hierarchy of one level or any number, whose data array of a
/// specialized shape has `W` ways (0 and `None` for the general path), as in
/// `Machine::translate`.
fn replay_shaped<const ONE_LEVEL: bool, const W: usize>(tlb: &mut TlbHierarchy, single: Option<SingleLevel>, log: &Log) -> u64 {
    let mut walks = 0;
    let mut shootdowns = log.shootdowns.iter().peekable();
    for (i, s) in log.steps.iter().enumerate() {
        let hit = match single {
            Some(single) if W != 0 => tlb.lookup_single::<W>(single, s.asid, s.vaddr, s.kind, false).is_some(),
            _ => tlb.lookup_shaped::<ONE_LEVEL>(s.asid, s.vaddr, s.kind).is_some(),
        };
        if !hit {
            walks += 1;
            let t = Translation { asid: s.asid, vpn: Vpn(s.vaddr >> BASE_PAGE_SHIFT), pfn: Pfn(u64::from(s.frame)), size: PageSize::Size4K };
            match single {
                Some(single) if W != 0 => tlb.fill_single::<W>(single, &t, s.vaddr, s.kind),
                _ => tlb.fill_after_walk_shaped::<ONE_LEVEL>(&t, s.vaddr, s.kind),
            }
        }
        while let Some(d) = shootdowns.next_if(|d| d.after as usize == i) {
            tlb.invalidate(d.asid, d.vpn, PageSize::Size4K);
        }
    }
    // Those of a translation that failed, after which the run stops (see the module
    // documentation).
    for d in shootdowns {
        tlb.invalidate(d.asid, d.vpn, PageSize::Size4K);
    }
    walks
}
