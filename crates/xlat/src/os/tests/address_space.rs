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

/// Unmapping a whole huge page frees its 512 frames with one shootdown, and the tables
/// left empty: the PDPT, the PD and the PT deposited at the huge fault (the root stays).
#[test]
fn unmapping_a_whole_huge_page_frees_its_run() {
    let mut os = os_of("radix", 64 << 20, true);
    os.miss(0, BASE).unwrap();
    shot(&mut os);
    let used = os.frames().used();
    os.apply(&AddressSpaceEvent::unmap(BASE, HUGE)).unwrap();
    assert_eq!(shot(&mut os), vec![Page { asid: 0, vpn: Vpn(BASE >> 12), size: PageSize::Size2M }]);
    assert_eq!(os.frames().used(), used - 512 - 3);
    assert_eq!(os.stats().page_table_frames, 1);
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

proptest::proptest! {
    /// Transparent huge pages under reclaim (exact LRU and Linux-like), through faults,
    /// khugepaged's collapses, splits, unmaps and evictions, on every driver: a page has a
    /// translation exactly while the model says it is live (a huge fault or a collapse
    /// makes its whole range live), the frames in use are the resident pages' and the
    /// tables', and swap holds exactly the live pages not in memory.
    #[test]
    fn thp_under_reclaim_and_unmaps_agrees_with_a_brute_force_model(
        driver in 0usize..3,
        linux in proptest::bool::ANY,
        ops in proptest::collection::vec((0u8..8, 0u64..3072, 1u64..600), 1..300),
    ) {
        let eviction = if linux {
            EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true })
        } else {
            EvictionSpec::Lru(Default::default())
        };
        let driver = ["map", "radix", "ecpt"][driver];
        // ECPT's ways take 6 MiB, placed at its first fault of each size.
        let base = os_of(driver, if driver == "ecpt" { 10 << 20 } else { 4 << 20 }, true).spec;
        let spec = OsSpec { eviction, khugepaged: KhugepagedSpec { period: 1, pages_to_scan: 1024, max_ptes_none: 500 }, ..base };
        let mut os = Os::new(&spec, 5);
        let mut live = BTreeSet::new();
        let mut clock = 0;
        for (kind, page, len) in ops {
            let len = len.min(3072 - page);
            match kind {
                0..=4 => {
                    let t = os.miss(0, BASE + page * 4096).unwrap();
                    let _ = os.access(t.pfn_of(BASE + page * 4096), false).unwrap();
                    if t.size == PageSize::Size2M {
                        live.extend(page & !511..(page & !511) + 512);
                    }
                    live.insert(page);
                }
                5 => {
                    clock += 1;
                    os.advance(clock).unwrap();
                    for range in 0..6u64 {
                        if os.mapping(0, BASE + range * HUGE).is_some_and(|t| t.size == PageSize::Size2M) {
                            live.extend(range * 512..range * 512 + 512);
                        }
                    }
                }
                _ => {
                    os.apply(&AddressSpaceEvent::unmap(BASE + page * 4096, len * 4096)).unwrap();
                    live.retain(|&p| !(page..page + len).contains(&p));
                }
            }
            os.take_shootdowns();
        }
        let mut resident = 0;
        for page in 0..3072u64 {
            let object = os.translations.object(0, BASE + page * 4096);
            proptest::prop_assert_eq!(object.is_some(), live.contains(&page), "page {}", page);
            resident += u64::from(matches!(object, Some(o) if matches!(o.presence, Presence::Present { .. })));
        }
        proptest::prop_assert_eq!(os.frames().used(), resident + os.stats().page_table_frames);
        proptest::prop_assert_eq!(os.swap.used(), live.len() as u64 - resident);
    }
}

/// An unmap frees the tables it leaves empty whose whole reach is unmapped (Linux's
/// `free_pgtables`), on radix and FPT: a mapping alone in its GiB loses its PTs and its PD
/// (FPT: its 2 MiB lower node); one whose PT a neighbouring mapping shares keeps it. Each
/// freed table is an entry read and cleared and a table freed, in the unmap's work; a touch
/// again places them anew. ECPT's ways stay.
#[test]
fn unmapping_frees_the_tables_it_empties() {
    // (driver, tables freed, their frames)
    for (driver, freed, frames) in [("radix", 3, 3), ("fpt", 1, 512), ("ecpt", 0, 0)] {
        let mut os = os_of(driver, 64 << 20, false);
        let (a, b, c) = (0x7000_0000, 0x9000_0000, 0x9010_0000);
        for (start, len) in [(a, 4 << 20), (b, 4096), (c, 4096)] {
            os.apply(&AddressSpaceEvent::map(start, len)).unwrap();
        }
        for vaddr in [a, a + 4096, a + HUGE, b, c] {
            os.miss(0, vaddr).unwrap();
        }
        let (used, tables) = (os.frames().used(), os.stats().page_table_frames);
        os.apply(&AddressSpaceEvent::unmap(a, 4 << 20)).unwrap();
        assert_eq!(os.stats().page_table_frames, tables - frames, "{driver}");
        assert_eq!(os.frames().used(), used - 3 - frames, "{driver}: the pages' frames and the tables'");
        let work = op(&os, "unmap").primitives;
        assert_eq!(work.table_frees, freed, "{driver}");
        if driver == "radix" {
            // Three pages' entries cleared, three tables' directory entries read and cleared.
            assert_eq!(work.entries_written, 3 + 3, "{driver}");
        }
        // B's PT is shared with C, whose mapping stays: nothing is freed.
        os.apply(&AddressSpaceEvent::unmap(b, 4096)).unwrap();
        assert_eq!(op(&os, "unmap").primitives.table_frees, freed, "{driver}");
        os.apply(&AddressSpaceEvent::map(a, 4 << 20)).unwrap();
        os.miss(0, a).unwrap();
        assert_eq!(os.stats().page_table_frames, tables - frames + if driver == "radix" { 2 } else { frames }, "{driver}: a touch places A's tables again");
    }
}

proptest::proptest! {
    /// Through touches, maps and unmaps over pages spread across PTs and PDs, radix holds
    /// exactly the tables a brute-force model of Linux's rule keeps: a table is placed when
    /// a page under it is first touched and freed by an unmap that removed a mapping when
    /// its reach overlaps the range, lies wholly in the unmapped space around it, and holds
    /// no page and no table.
    #[test]
    fn radix_tables_agree_with_a_brute_force_free_pgtables(
        ops in proptest::collection::vec((0u8..4, 0usize..96, 0usize..96), 1..120),
    ) {
        // 96 pages: 3 GiBs, 4 PTs in each, 8 pages in each PT.
        let page = |i: usize| 0x40_0000_0000 + (i as u64 / 32) * (1 << 30) + (i as u64 / 8 % 4) * HUGE + (i as u64 % 8) * 4096;
        let mut os = os_of("radix", 64 << 20, false);
        // The mapped ranges, unmerged.
        let mut mapped: Vec<(u64, u64)> = Vec::new();
        let mut named = false;
        let mut live: BTreeSet<u64> = BTreeSet::new();
        // Tables below the root, as (level, address >> the bits their reach covers).
        let mut tables: BTreeSet<(u32, u64)> = BTreeSet::new();
        let key = |level: u32, vaddr: u64| (level, vaddr >> (12 + 9 * (level + 1)));
        for (kind, i, j) in ops {
            let (lo, hi) = (page(i.min(j)), page(i.max(j)) + 4096);
            match kind {
                0 | 1 => {
                    os.miss(0, page(i)).unwrap();
                    live.insert(page(i));
                    tables.extend((0..3).map(|level| key(level, page(i))));
                }
                _ => {
                    let removed = !named || mapped.iter().any(|&(s, e)| s < hi && e > lo);
                    named = true;
                    let event = if kind == 2 { AddressSpaceEvent::unmap(lo, hi - lo) } else { AddressSpaceEvent::map(lo, hi - lo) };
                    os.apply(&event).unwrap();
                    live.retain(|p| !(lo..hi).contains(p));
                    mapped = mapped.iter().flat_map(|&(s, e)| [(s, e.min(lo)), (s.max(hi), e)]).filter(|&(s, e)| s < e).collect();
                    if removed {
                        let floor = mapped.iter().map(|&(_, e)| e).filter(|&e| e <= lo).max().unwrap_or(0);
                        let ceiling = mapped.iter().map(|&(s, _)| s).filter(|&s| s >= hi).min().unwrap_or(u64::MAX);
                        for level in 0..3 {
                            let reach = 1u64 << (12 + 9 * (level + 1));
                            let frees: Vec<(u32, u64)> = tables
                                .iter()
                                .filter(|&&(l, k)| {
                                    let start = k * reach;
                                    l == level && start < hi && start + reach > lo && floor <= start && start + reach <= ceiling
                                        && !live.iter().any(|&p| key(level, p) == (l, k))
                                        && !tables.iter().any(|&(cl, ck)| cl + 1 == level && ck >> 9 == k)
                                })
                                .copied()
                                .collect();
                            for t in frees {
                                tables.remove(&t);
                            }
                        }
                    }
                    if kind == 3 {
                        mapped.push((lo, hi));
                    }
                }
            }
            os.take_shootdowns();
        }
        let root = u64::from(!tables.is_empty() || os.stats().page_table_frames > 0);
        proptest::prop_assert_eq!(os.stats().page_table_frames, root + tables.len() as u64);
        proptest::prop_assert_eq!(os.frames().used(), live.len() as u64 + os.stats().page_table_frames);
    }
}
