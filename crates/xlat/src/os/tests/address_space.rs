//! Address-space events: unmapping frees frames, swap slots and TLB entries; partial unmaps
//! split huge pages; mappings decide where huge pages go; and the OS's mappings against a
//! brute-force model through faults, collapses, splits, unmaps and evictions.

use super::*;
use crate::memref::AddressSpaceEvent;
use crate::mmu::PageTableSpec;
use crate::os::kernel_work::OperationStats;
use std::collections::{BTreeMap, BTreeSet};

const HUGE: u64 = 2 << 20;
const BASE: u64 = 0x4000_0000;

/// An OS of `driver` over `memory` bytes of sequential placement, with THP if `thp`.
fn os_of(driver: &str, memory: u64, thp: bool) -> Os {
    let spec = OsSpec {
        page_table: PageTableSpec::named(driver).unwrap(),
        thp: if thp { Thp::Always } else { Thp::Never },
        khugepaged: KhugepagedSpec { period: 1000, ..KhugepagedSpec::default() },
        ..OsSpec::simple(memory, PlacementSpec::Sequential)
    };
    Os::new(&spec, 1)
}

/// The report of `name` in `os`'s kernel work.
fn op(os: &Os, name: &str) -> OperationStats {
    os.kernel_work().operations.into_iter().find(|o| o.operation == name).unwrap()
}

/// The pages `os` left for a shootdown since the last call.
fn shot(os: &mut Os) -> Vec<Page> {
    os.take_shootdowns().map(|d| d.collect()).unwrap_or_default()
}

/// Unmapping three of five base pages frees their frames, removes their mappings and
/// shoots each down, on every driver; each page's entry is written once, and the unmap is
/// one call.
#[test]
fn unmapping_frees_frames_and_shoots_pages_down_on_every_driver() {
    for driver in ["map", "radix", "fpt", "ecpt"] {
        let mut os = os_of(driver, 64 << 20, false);
        for page in 0..5 {
            os.miss(0, BASE + page * 4096).unwrap();
        }
        let used = os.frames().used();
        os.apply(&AddressSpaceEvent::unmap(BASE + 4096, 3 * 4096)).unwrap();
        assert_eq!(os.frames().used(), used - 3, "{driver}");
        let pages: Vec<u64> = shot(&mut os).iter().map(|p| p.vpn.0).collect();
        assert_eq!(pages, [1, 2, 3].map(|p| (BASE >> 12) + p), "{driver}");
        for page in 0..5 {
            assert_eq!(os.mapping(0, BASE + page * 4096).is_some(), !(1..4).contains(&page), "{driver} page {page}");
        }
        let unmap = op(&os, "unmap");
        assert_eq!((unmap.calls, unmap.primitives.shootdowns, unmap.primitives.frame_allocations), (1, 3, 0), "{driver}");
        if driver != "map" {
            assert_eq!(unmap.primitives.entries_written, 3, "{driver}: one entry cleared per page");
        }
        let stats = os.stats().address_space.unwrap();
        assert_eq!((stats.unmaps, stats.pages_freed, os.stats().mapped_pages), (1, 3, 2), "{driver}");
        // A touch again faults in a new, zeroed page.
        let faults = os.stats().page_faults;
        os.miss(0, BASE + 2 * 4096).unwrap();
        assert_eq!(os.stats().page_faults, faults + 1, "{driver}");
    }
}

/// A partial unmap of a 2 MiB page splits it: its base pages keep their frames, the ones
/// unmapped go; the huge page is shot down whole, then each unmapped page.
#[test]
fn a_partial_unmap_splits_a_huge_page() {
    for driver in ["map", "radix", "ecpt"] {
        let mut os = os_of(driver, 64 << 20, true);
        let t = os.miss(0, BASE).unwrap();
        assert_eq!(t.size, PageSize::Size2M, "{driver}");
        shot(&mut os);
        let (used, tables) = (os.frames().used(), os.stats().page_table_frames);
        os.apply(&AddressSpaceEvent::unmap(BASE + 10 * 4096, 2 * 4096)).unwrap();
        let sizes: Vec<PageSize> = shot(&mut os).iter().map(|p| p.size).collect();
        assert_eq!(sizes, [PageSize::Size2M, PageSize::Size4K, PageSize::Size4K], "{driver}");
        for page in [0, 9, 12, 511] {
            let base_page = os.mapping(0, BASE + page * 4096).unwrap();
            assert_eq!((base_page.size, base_page.pfn.0), (PageSize::Size4K, t.pfn.0 + page), "{driver} page {page}");
        }
        assert_eq!((os.mapping(0, BASE + 10 * 4096), os.mapping(0, BASE + 11 * 4096)), (None, None), "{driver}");
        let new_tables = os.stats().page_table_frames - tables;
        assert_eq!(os.frames().used(), used - 2 + new_tables, "{driver}: two frames freed, the base pages' table placed");
        let thp = os.stats().thp.unwrap();
        assert_eq!((thp.splits, thp.huge_pages), (1, 0), "{driver}");
        let split = op(&os, "split");
        assert_eq!((split.calls, split.primitives.shootdowns), (1, 1), "{driver}");
        assert!(split.primitives.entries_written >= 512, "{driver}: the base pages' entries are written");
    }
}

/// Unmapping a whole huge page frees its 512 frames with one shootdown.
#[test]
fn unmapping_a_whole_huge_page_frees_its_run() {
    let mut os = os_of("radix", 64 << 20, true);
    os.miss(0, BASE).unwrap();
    shot(&mut os);
    let used = os.frames().used();
    os.apply(&AddressSpaceEvent::unmap(BASE, HUGE)).unwrap();
    assert_eq!(shot(&mut os), vec![Page { asid: 0, vpn: Vpn(BASE >> 12), size: PageSize::Size2M }]);
    assert_eq!(os.frames().used(), used - 512);
    assert_eq!((os.stats().thp.unwrap().huge_pages, os.stats().thp.unwrap().splits), (0, 0));
}

/// Once events name an address space, a huge page goes only where its aligned range lies
/// inside one mapping, and faults outside every mapping are counted (and served). An
/// address space no event names keeps the old behaviour.
#[test]
fn mappings_decide_where_huge_pages_go() {
    let mut os = os_of("radix", 64 << 20, true);
    os.apply(&AddressSpaceEvent::map(BASE, 3 << 20)).unwrap();
    assert_eq!(os.miss(0, BASE + 4096).unwrap().size, PageSize::Size2M);
    assert_eq!(os.miss(0, BASE + HUGE).unwrap().size, PageSize::Size4K, "the second range sticks out of the mapping");
    assert_eq!(os.miss(0, BASE + 5 * HUGE).unwrap().size, PageSize::Size4K, "outside every mapping");
    assert_eq!(os.stats().address_space.unwrap().faults_outside_mappings, 1);
    // Growing the mapping (brk) makes the second range eligible for khugepaged.
    os.apply(&AddressSpaceEvent::map(BASE + (3 << 20), 1 << 20)).unwrap();
    let other = AddressSpaceEvent { asid: 1, ..AddressSpaceEvent::map(0, 4096) };
    assert_eq!(os.miss(1, BASE).unwrap().size, PageSize::Size2M, "ASID 1 is unknown: every range counts as mapped");
    os.apply(&other).unwrap();
    os.advance(1000).unwrap();
    let collapsed = os.mapping(0, BASE + HUGE).unwrap();
    assert_eq!(collapsed.size, PageSize::Size2M, "khugepaged collapses the range now inside the mapping");
    assert_eq!(os.mapping(0, BASE + 5 * HUGE).unwrap().size, PageSize::Size4K, "nor a range outside every mapping");
}

/// A mapping over pages already mapped unmaps them first (`MAP_FIXED`).
#[test]
fn a_mapping_replaces_what_was_there() {
    let mut os = os_of("ecpt", 64 << 20, false);
    os.miss(0, BASE).unwrap();
    os.apply(&AddressSpaceEvent::map(BASE, 4096)).unwrap();
    assert_eq!(os.mapping(0, BASE), None);
    assert_eq!(shot(&mut os).len(), 1);
    assert_eq!((op(&os, "map").calls, op(&os, "unmap").calls), (1, 0));
}

/// Events for ranges with nothing in them change nothing but the mappings (munmap of an
/// unmapped range succeeds), also at the top of the address space and for a huge range
/// (whose empty spans are skipped, not iterated).
#[test]
fn events_on_empty_ranges_do_nothing() {
    for driver in ["radix", "ecpt", "fpt"] {
        let mut os = os_of(driver, 64 << 20, false);
        os.miss(0, BASE).unwrap();
        os.apply(&AddressSpaceEvent::unmap(u64::MAX - 4095, 4096)).unwrap();
        os.apply(&AddressSpaceEvent::unmap(BASE + 4096, 1 << 46)).unwrap();
        os.apply(&AddressSpaceEvent::map(0, u64::MAX)).unwrap();
        assert!(shot(&mut os).len() == 1 && os.mapping(0, BASE).is_none(), "{driver}: the last map replaced the page");
    }
}

/// Under eviction, unmapping frees a resident page's frame and the policy forgets it (a
/// later eviction never picks a freed frame), and drops a swapped-out page's slot.
#[test]
fn unmapping_under_eviction_frees_frames_and_swap_slots() {
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true });
    for eviction in [linux, EvictionSpec::Lru(Default::default())] {
        let spec = OsSpec { eviction, ..OsSpec::simple(8 << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 3);
        for page in 0..12 {
            touch(&mut os, page);
        }
        let swapped = os.stats().swap_outs;
        assert_eq!(swapped, 4, "{eviction:?}");
        os.apply(&AddressSpaceEvent::unmap(0, 12 * 4096)).unwrap();
        let stats = os.stats().address_space.unwrap();
        assert_eq!((stats.pages_freed, stats.swapped_pages_dropped, os.frames().used()), (8, 4, 0), "{eviction:?}");
        // Refill memory twice over: every eviction picks a page placed after the unmap.
        for page in 100..116 {
            touch(&mut os, page);
        }
        assert_eq!(os.frames().used(), 8, "{eviction:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Through faults (huge where a fault may), khugepaged passes, maps and unmaps (which
    /// split the huge pages they cut), on every driver: the OS maps exactly the pages a
    /// model says are live, each at the frame the model says (its own, or its huge page's
    /// run, or a collapse's), no two pages share a frame, and the frames in use are theirs
    /// plus the tables'.
    #[test]
    fn mappings_agree_with_a_brute_force_model(
        driver in 0usize..3,
        ops in proptest::collection::vec((0u8..8, 0u64..2048, 1u64..1200), 1..80),
    ) {
        let driver = ["map", "radix", "ecpt"][driver];
        let spec = OsSpec { khugepaged: KhugepagedSpec { period: 1, pages_to_scan: 1024, max_ptes_none: 500 }, ..os_of(driver, 32 << 20, true).spec };
        let mut os = Os::new(&spec, 1);
        // The model: each live page's base frame.
        let mut live: BTreeMap<u64, u64> = BTreeMap::new();
        let mut clock = 0;
        for (kind, page, len) in ops {
            let len = len.min(2048 - page);
            match kind {
                0..=4 => {
                    let Ok(t) = os.miss(0, BASE + page * 4096) else { break };
                    if let Some(&frame) = live.get(&page) {
                        proptest::prop_assert_eq!(t.pfn_of(BASE + page * 4096).0, frame);
                    } else if t.size == PageSize::Size2M {
                        let first = page & !511;
                        proptest::prop_assert!((first..first + 512).all(|p| !live.contains_key(&p)), "a huge fault over base pages");
                        live.extend((0..512).map(|i| (first + i, t.pfn.0 + i)));
                    } else {
                        live.insert(page, t.pfn.0);
                    }
                }
                5 => {
                    clock += 1;
                    os.advance(clock).unwrap();
                    // Collapsed ranges: their pages now live in the huge page's run.
                    for range in 0..4u64 {
                        if let Some(t) = os.mapping(0, BASE + range * HUGE).filter(|t| t.size == PageSize::Size2M) {
                            live.extend((0..512).map(|i| (range * 512 + i, t.pfn.0 + i)));
                        }
                    }
                }
                6 | 7 => {
                    let event = if kind == 6 { AddressSpaceEvent::unmap(BASE + page * 4096, len * 4096) } else { AddressSpaceEvent::map(BASE + page * 4096, len * 4096) };
                    os.apply(&event).unwrap();
                    live.retain(|&p, _| !(page..page + len).contains(&p));
                }
                _ => unreachable!(),
            }
            os.take_shootdowns();
        }
        let mut frames = BTreeSet::new();
        for page in 0..2048u64 {
            let mapped = os.mapping(0, BASE + page * 4096).map(|t| t.pfn_of(BASE + page * 4096).0);
            proptest::prop_assert_eq!(mapped, live.get(&page).copied(), "page {}", page);
        }
        for &frame in live.values() {
            proptest::prop_assert!(frames.insert(frame), "frame {} mapped twice", frame);
        }
        proptest::prop_assert_eq!(os.frames().used(), frames.len() as u64 + os.stats().page_table_frames);
    }

    /// Under Linux-like reclaim over a small memory, through touches and unmaps: a page is
    /// mapped or swapped out exactly while the model says it is live; the swap area holds
    /// exactly the live pages not in memory.
    #[test]
    fn unmaps_under_eviction_agree_with_a_brute_force_model(
        ops in proptest::collection::vec((0u8..6, 0u64..64, 1u64..16), 1..200),
    ) {
        let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true });
        let spec = OsSpec { eviction: linux, ..OsSpec::simple(16 << 12, PlacementSpec::Random) };
        let mut os = Os::new(&spec, 5);
        let mut live = BTreeSet::new();
        for (kind, page, len) in ops {
            if kind < 5 {
                touch(&mut os, page);
                live.insert(page);
            } else {
                os.apply(&AddressSpaceEvent::unmap(page * 4096, len * 4096)).unwrap();
                live.retain(|&p| !(page..page + len).contains(&p));
            }
            os.take_shootdowns();
        }
        let mut resident = 0;
        for page in 0..80u64 {
            let object = os.translations.object(0, page * 4096);
            proptest::prop_assert_eq!(object.is_some(), live.contains(&page), "page {}", page);
            resident += u64::from(matches!(object, Some(o) if matches!(o.presence, Presence::Present { .. })));
        }
        proptest::prop_assert_eq!(os.frames().used(), resident);
        proptest::prop_assert_eq!(os.swap.used(), live.len() as u64 - resident);
    }
}
