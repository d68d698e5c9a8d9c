//! Transparent huge pages: faults and their fallbacks, khugepaged's collapses, the work each
//! driver counts for them, and the OS's mappings against a brute-force model.

use super::*;
use crate::mmu::ecpt::{EcptSpec, Iteration};
use crate::mmu::PageTableSpec;
use crate::os::kernel_work::{OperationStats, Primitives};
use std::collections::{BTreeMap, BTreeSet};

const HUGE: u64 = 2 << 20;

/// An OS of `driver` over `memory` bytes of sequential placement with THP, khugepaged
/// scanning every 1,000 instructions.
fn thp_os(driver: &str, memory: u64) -> Os {
    let spec = OsSpec {
        page_table: PageTableSpec::named(driver).unwrap(),
        thp: Thp::Always,
        khugepaged: KhugepagedSpec { period: 1000, ..KhugepagedSpec::default() },
        ..OsSpec::simple(memory, PlacementSpec::Sequential)
    };
    Os::new(&spec, 1)
}

/// The report of `name` in `os`'s kernel work.
fn op(os: &Os, name: &str) -> OperationStats {
    os.kernel_work().operations.into_iter().find(|o| o.operation == name).unwrap()
}

/// The mapping of `vaddr` after a walk, with the shootdowns the walk left dropped.
fn fault(os: &mut Os, vaddr: u64) -> Translation {
    let t = os.miss(0, vaddr).unwrap();
    os.take_shootdowns();
    t
}

/// A first touch of an empty 2 MiB range maps a 2 MiB page on every driver that holds
/// them: one frame allocation, 2 MiB zeroed, the page at an aligned run, and walks of any
/// address of the range find it.
#[test]
fn a_fault_in_an_empty_range_maps_a_huge_page_on_every_driver() {
    for driver in ["map", "radix", "fpt", "ecpt"] {
        let mut os = if driver == "fpt" {
            let spec = OsSpec { page_table: PageTableSpec::Fpt(crate::mmu::fpt::FptSpec { mode: crate::mmu::fpt::FptMode::L3L2 }), ..thp_os("map", 64 << 20).spec };
            Os::new(&spec, 1)
        } else {
            thp_os(driver, 64 << 20)
        };
        let t = fault(&mut os, 0x4012_3456);
        assert_eq!((t.size, t.vpn, t.pfn.0 % 512), (PageSize::Size2M, Vpn(0x4000_0000 >> 12), 0), "{driver}");
        assert_eq!(os.mapping(0, 0x401f_ffff), Some(t), "{driver}");
        let work = op(&os, "fault").primitives;
        assert_eq!((work.frame_allocations, work.data_bytes_zeroed), (1, HUGE), "{driver}");
        let thp = os.stats().thp.unwrap();
        assert_eq!((thp.huge_faults, thp.huge_pages, os.stats().page_faults, os.stats().footprint_bytes), (1, 1, 1, HUGE), "{driver}");
        assert_eq!(os.uniform_page_size(), None, "{driver}: the machine must take its general path");
    }
}

/// The work of a huge fault counted by hand. Radix: the entry's read and the eligibility
/// check find no root (the range is skipped whole, reading nothing); four tables (PML4,
/// PDPT, PD, and the PT deposited for a split) placed and linked; the PD entry found
/// through them (3 reads) and written.
/// ECPT: before the first fault no ways exist, so neither iterator hashes before the
/// insertion; the fault places the 2 MiB ways and, for a later split, the 4 KiB ones. At
/// the second fault, in the next range (the same 2 MiB cluster of 8 entries), each lookup
/// of the range's 2 MiB entry finds the cluster after the same k probes (1 to 3), and each
/// lookup in the 4 KiB ways probes their 3 ways: the cluster iterator looks up each of the
/// range's 64 clusters of 4 KiB entries and the 2 MiB entry once (192 + k hashes), the
/// find-based iterator each of the 512 pages in both (512 × (3 + k)).
#[test]
fn huge_faults_count_what_each_driver_does() {
    let tuple = |p: Primitives| (p.entries_read, p.entries_written, p.table_allocations, p.hashes);
    let mut radix = thp_os("radix", 64 << 20);
    fault(&mut radix, 0x4000_0000);
    assert_eq!(tuple(op(&radix, "fault").primitives), (3, 4 + 1, 4, 0));
    let ecpt = |iterator| {
        let spec = OsSpec { page_table: PageTableSpec::Ecpt(EcptSpec { iterator, ..EcptSpec::default() }), ..thp_os("map", 64 << 20).spec };
        let mut os = Os::new(&spec, 1);
        fault(&mut os, 0x4000_0000);
        let first = op(&os, "fault").primitives.hashes;
        fault(&mut os, 0x4020_0000);
        (first, op(&os, "fault").primitives.hashes - first)
    };
    let (cluster, find) = (ecpt(Iteration::Cluster), ecpt(Iteration::Find));
    // The first fault: the insertion's probes only, the same under both iterators.
    assert_eq!(cluster.0, find.0);
    // The second: 512 × (3 + k) against 192 + k.
    let extra = find.1 - cluster.1 - (512 * 3 - 192);
    assert!(extra % 511 == 0 && (1..=3).contains(&(extra / 511)), "{find:?} against {cluster:?}");
}

/// A memory whose last run of 512 frames is partial, after 64 whole runs (a word of the
/// huge-run bitmap), serves uses of that run's frames under eviction.
#[test]
fn a_partial_last_run_is_served() {
    let spec = OsSpec { eviction: EvictionSpec::Lru(Default::default()), ..thp_os("radix", (64 * 512 + 100) << 12).spec };
    let mut os = Os::new(&spec, 1);
    for page in 0..66 * 512 {
        let vaddr = 0x4000_0000 + page * 4096;
        let t = os.miss(0, vaddr).unwrap();
        os.access(t.pfn_of(vaddr), false).unwrap();
    }
    assert!(os.stats().evictions > 0);
    assert!((64 * 512..64 * 512 + 100).all(|f| !os.frames().is_free(f)), "the last run's frames are used");
}

/// A range holding a base page is not eligible: its other pages are base pages too.
#[test]
fn a_range_with_a_base_page_takes_base_pages() {
    let mut os = thp_os("radix", 64 << 20);
    os.set_thp_faults(false);
    assert_eq!(fault(&mut os, 0x4000_0000).size, PageSize::Size4K);
    os.set_thp_faults(true);
    assert_eq!(fault(&mut os, 0x4010_0000).size, PageSize::Size4K);
    assert_eq!(fault(&mut os, 0x4020_0000).size, PageSize::Size2M, "the next range is empty");
}

/// With no aligned run of 512 free frames the fault falls back to a base page: in a memory
/// of one run, the radix tables of the first fault take frames of it.
#[test]
fn a_fault_without_a_free_run_falls_back() {
    let mut os = thp_os("radix", HUGE);
    let t = fault(&mut os, 0x4000_0000);
    assert_eq!(t.size, PageSize::Size4K);
    let thp = os.stats().thp.unwrap();
    assert_eq!((thp.huge_faults, thp.fallbacks), (0, 1));
}

/// khugepaged collapses a range of base pages: 300 mapped (212 unmapped, under the
/// default `max_ptes_none` of 511) become one 2 MiB page at a free run; the 300 pages are
/// copied, 212 zeroed, their frames freed, the range shot down once; walks then find the
/// huge page. Under `max_ptes_none = 100` it is left alone.
#[test]
fn khugepaged_collapses_a_range_of_base_pages() {
    for (max_ptes_none, collapses) in [(511, 1), (100, 0)] {
        let spec = OsSpec { khugepaged: KhugepagedSpec { period: 1000, pages_to_scan: 4096, max_ptes_none }, ..thp_os("radix", 8 << 20).spec };
        let mut os = Os::new(&spec, 1);
        os.set_thp_faults(false);
        for page in 0..300 {
            fault(&mut os, 0x4000_0000 + page * 4096);
        }
        let used = os.frames().used();
        os.advance(999).unwrap();
        assert_eq!(os.stats().thp.unwrap().passes, 0, "not due yet");
        os.advance(1000).unwrap();
        let thp = os.stats().thp.unwrap();
        assert_eq!((thp.passes, thp.ranges_scanned, thp.collapses), (1, 1, collapses));
        let shot: Vec<Page> = os.take_shootdowns().map(|d| d.collect()).unwrap_or_default();
        let t = os.mapping(0, 0x4000_0000 + 4096 * 17).unwrap();
        if collapses == 0 {
            assert_eq!((t.size, shot.len()), (PageSize::Size4K, 0));
            continue;
        }
        assert_eq!((t.size, t.pfn.0 % 512), (PageSize::Size2M, 0));
        assert_eq!(shot, vec![Page { asid: 0, vpn: t.vpn, size: PageSize::Size2M }]);
        assert_eq!(os.frames().used(), used - 300 + 512, "the base pages' frames are freed");
        let work = op(&os, "collapse");
        assert_eq!((work.calls, work.primitives.data_bytes_copied, work.primitives.data_bytes_zeroed, work.primitives.shootdowns), (1, 300 * 4096, 212 * 4096, 1));
        assert_eq!(os.stats().mapped_pages, 1);
    }
}

/// A pass scans `pages_to_scan / 512` ranges, from where the last stopped, wrapping around.
#[test]
fn passes_scan_their_share_of_ranges_in_turn() {
    let spec = OsSpec { khugepaged: KhugepagedSpec { period: 10, pages_to_scan: 1024, max_ptes_none: 0 }, ..thp_os("map", 64 << 20).spec };
    let mut os = Os::new(&spec, 1);
    os.set_thp_faults(false);
    for range in 0..5 {
        fault(&mut os, 0x4000_0000 + range * HUGE);
    }
    os.advance(30).unwrap();
    let thp = os.stats().thp.unwrap();
    assert_eq!((thp.passes, thp.ranges_scanned, thp.collapses), (3, 6, 0));
}

proptest::proptest! {
    /// Through faults (some with huge faults off, as a run-time switch leaves them) and
    /// khugepaged passes, on every driver: every page touched stays mapped at the frame it
    /// was given, or in a huge page that took its range whole; no two mappings share a
    /// frame; a huge page maps an aligned run and only ranges with no base page at the
    /// fault (or collapsed) are huge; the frames in use are the pages' plus the tables'.
    #[test]
    fn mappings_agree_with_a_brute_force_model(
        driver in 0usize..3,
        ops in proptest::collection::vec((0u64..4, 0u64..40, proptest::bool::weighted(0.2), 0u8..4), 1..150),
    ) {
        let driver = ["map", "radix", "ecpt"][driver];
        let spec = OsSpec { khugepaged: KhugepagedSpec { period: 1, pages_to_scan: 512, max_ptes_none: 500 }, ..thp_os(driver, 16 << 20).spec };
        let mut os = Os::new(&spec, 1);
        // The model: each range's base pages and frames, or its huge page's first frame.
        let mut base: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new();
        let mut huge: BTreeMap<u64, u64> = BTreeMap::new();
        let mut clock = 0;
        for (range, page, huge_faults, pass) in ops {
            let vaddr = 0x7000_0000 + range * HUGE + page * 4096;
            os.set_thp_faults(huge_faults);
            let Ok(t) = os.miss(0, vaddr) else { break };
            os.take_shootdowns();
            match (huge.get(&range), base.get(&range).and_then(|b| b.get(&page))) {
                (Some(&first), _) => proptest::prop_assert_eq!((t.size, t.pfn.0), (PageSize::Size2M, first)),
                (None, Some(&frame)) => proptest::prop_assert_eq!((t.size, t.pfn.0), (PageSize::Size4K, frame)),
                (None, None) if t.size == PageSize::Size2M => {
                    proptest::prop_assert!(huge_faults && !base.contains_key(&range), "a huge page in a range with base pages");
                    proptest::prop_assert_eq!(t.pfn.0 % 512, 0);
                    huge.insert(range, t.pfn.0);
                }
                (None, None) => {
                    base.entry(range).or_default().insert(page, t.pfn.0);
                }
            }
            if pass == 0 {
                clock += 1;
                os.advance(clock).unwrap();
                os.take_shootdowns();
                // Collapsed ranges move to the model's huge pages.
                let collapsed: Vec<(u64, Translation)> = base.keys().filter_map(|&range| Some((range, os.mapping(0, 0x7000_0000 + range * HUGE).filter(|t| t.size == PageSize::Size2M)?))).collect();
                for (range, t) in collapsed {
                    let pages = base.remove(&range).expect("a range of base pages");
                    proptest::prop_assert!(pages.len() as u64 >= 512 - 500, "collapsed with too few pages");
                    huge.insert(range, t.pfn.0);
                }
            }
        }
        let mut frames = BTreeSet::new();
        for (&range, &first) in &huge {
            let t = os.mapping(0, 0x7000_0000 + range * HUGE + 4096 * 9).unwrap();
            proptest::prop_assert_eq!((t.size, t.pfn.0), (PageSize::Size2M, first));
            for f in first..first + 512 {
                proptest::prop_assert!(frames.insert(f), "frame {} mapped twice", f);
            }
        }
        for (&range, pages) in &base {
            for (&page, &frame) in pages {
                let t = os.mapping(0, 0x7000_0000 + range * HUGE + page * 4096).unwrap();
                proptest::prop_assert_eq!((t.size, t.pfn.0), (PageSize::Size4K, frame));
                proptest::prop_assert!(frames.insert(frame), "frame {} mapped twice", frame);
            }
        }
        proptest::prop_assert!(frames.iter().all(|&f| f < (16 << 20) / 4096));
        proptest::prop_assert_eq!(os.frames().used(), frames.len() as u64 + os.stats().page_table_frames);
    }
}

/// What the eviction test's model knows of a 2 MiB range: a huge page at its first frame,
/// or base pages, each present at a frame or swapped out.
#[derive(Clone, Debug, PartialEq)]
enum Range {
    Huge(u64),
    Base { present: BTreeMap<u64, u64>, swapped: BTreeSet<u64> },
}

proptest::proptest! {
    /// Under memory pressure with exact LRU eviction, on every driver: a huge page is one
    /// page to the policy (a use of any of its base pages is its use), and the pages each
    /// fault evicts are the least recently used ones, a huge page counting 512; an evicted
    /// huge page is swapped out whole and its mapping split into 512 swap entries, whose
    /// pages come back one at a time as base pages (a range with swap entries is not
    /// eligible for a huge page); no two pages share a frame, the frames in use are the
    /// pages' and the tables', and swap holds the swapped-out pages.
    #[test]
    fn huge_pages_are_evicted_whole_least_recently_used_first(
        driver in 0usize..3,
        ops in proptest::collection::vec((0u64..64, 0u64..24), 400..900),
    ) {
        let driver = ["map", "radix", "ecpt"][driver];
        // Room for one huge page beside the tables (ECPT's ways take 6 MiB) and some 500
        // base pages: the run a huge page's eviction frees soon holds base pages, as
        // memory under pressure fragments.
        let memory = if driver == "ecpt" { 10 << 20 } else { 4 << 20 };
        let spec = OsSpec {
            eviction: EvictionSpec::Lru(Default::default()),
            khugepaged: KhugepagedSpec { period: 0, ..KhugepagedSpec::default() },
            ..thp_os(driver, memory).spec
        };
        let mut os = Os::new(&spec, 1);
        let mut ranges: BTreeMap<u64, Range> = BTreeMap::new();
        // The resident units by last use, and each one's: (range, None) for a huge page,
        // (range, Some(page)) for a base page.
        let mut by_use: BTreeMap<usize, (u64, Option<u64>)> = BTreeMap::new();
        let mut last_use: BTreeMap<(u64, Option<u64>), usize> = BTreeMap::new();
        let addr = |(range, page): (u64, Option<u64>)| 0x7000_0000 + range * HUGE + page.unwrap_or(0) * 4096;
        let mut huge_evictions = 0;
        for (step, (range, page)) in ops.into_iter().enumerate() {
            let evictions = os.stats().evictions;
            let vaddr = addr((range, Some(page)));
            let t = os.miss(0, vaddr).unwrap();
            os.access(t.pfn_of(vaddr), false).unwrap();
            os.take_shootdowns();
            // The fault evicted the least recently used units, oldest first, as many base
            // pages as the OS counts.
            let mut left = os.stats().evictions - evictions;
            while left > 0 {
                let (_, unit) = by_use.pop_first().expect("an evicted unit");
                last_use.remove(&unit);
                proptest::prop_assert_eq!(os.mapping(0, addr(unit)), None, "{:?} was the oldest and should be evicted", unit);
                let pages = if unit.1.is_none() { 512 } else { 1 };
                proptest::prop_assert!(left >= pages, "evicted more than the OS counts");
                left -= pages;
                match (unit.1, ranges.get_mut(&unit.0)) {
                    (None, Some(r)) => {
                        huge_evictions += 1;
                        *r = Range::Base { present: BTreeMap::new(), swapped: (0..512).collect() };
                    }
                    (Some(p), Some(Range::Base { present, swapped })) => {
                        present.remove(&p);
                        swapped.insert(p);
                    }
                    other => proptest::prop_assert!(false, "an evicted unit the model does not hold: {:?}", other),
                }
            }
            if let Some((_, &unit)) = by_use.first_key_value() {
                proptest::prop_assert!(os.mapping(0, addr(unit)).is_some(), "{:?} evicted though not the oldest", unit);
            }
            // The touched page, against the model.
            let unit = if t.size == PageSize::Size2M { (range, None) } else { (range, Some(page)) };
            let entry = ranges.entry(range).or_insert(Range::Base { present: BTreeMap::new(), swapped: BTreeSet::new() });
            match entry {
                Range::Huge(first) => proptest::prop_assert_eq!((t.size, t.pfn.0), (PageSize::Size2M, *first)),
                Range::Base { present, swapped } => {
                    if t.size == PageSize::Size2M {
                        proptest::prop_assert!(present.is_empty() && swapped.is_empty(), "a huge page over a range with pages");
                        *entry = Range::Huge(t.pfn.0);
                    } else {
                        if let Some(&frame) = present.get(&page) {
                            proptest::prop_assert_eq!(t.pfn.0, frame);
                        }
                        swapped.remove(&page);
                        present.insert(page, t.pfn.0);
                    }
                }
            }
            if let Some(old) = last_use.insert(unit, step) {
                by_use.remove(&old);
            }
            by_use.insert(step, unit);
        }
        proptest::prop_assert_eq!(os.stats().thp.unwrap().evictions, huge_evictions);
        // Every page where the model has it; frames and swap slots add up.
        let mut frames = BTreeSet::new();
        let mut swapped_pages = 0;
        for (&range, r) in &ranges {
            let base = 0x7000_0000 + range * HUGE;
            match r {
                Range::Huge(first) => {
                    proptest::prop_assert_eq!(os.mapping(0, base + 4096 * 7).map(|t| (t.size, t.pfn.0)), Some((PageSize::Size2M, *first)));
                    for f in *first..*first + 512 {
                        proptest::prop_assert!(frames.insert(f), "frame {} held twice", f);
                    }
                }
                Range::Base { present, swapped } => {
                    for (&page, &frame) in present {
                        proptest::prop_assert_eq!(os.mapping(0, base + page * 4096).map(|t| (t.size, t.pfn.0)), Some((PageSize::Size4K, frame)));
                        proptest::prop_assert!(frames.insert(frame), "frame {} held twice", frame);
                    }
                    for &page in swapped {
                        let object = os.translations.store_mut().object(0, base + page * 4096);
                        proptest::prop_assert_eq!(object.map(|o| (o.size, o.presence)), Some((PageSize::Size4K, Presence::Swapped)));
                    }
                    swapped_pages += swapped.len() as u64;
                }
            }
        }
        proptest::prop_assert_eq!(os.frames().used(), frames.len() as u64 + os.stats().page_table_frames);
        proptest::prop_assert_eq!(os.swap.used(), swapped_pages);
    }
}
