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
/// check find no root (the range is skipped whole, reading nothing); three tables (PML4,
/// PDPT, PD) placed and linked; the PD entry found through them (3 reads) and written.
/// ECPT: before the first fault no ways exist, so neither iterator hashes before the
/// insertion. At the second fault, in the next range (the same 2 MiB cluster of 8 entries),
/// each lookup of the range's 2 MiB entry finds the cluster after the same k probes (1 to
/// 3): the cluster iterator looks once (no 4 KiB ways exist to look in), the find-based
/// iterator once per page, 512 times.
#[test]
fn huge_faults_count_what_each_driver_does() {
    let tuple = |p: Primitives| (p.entries_read, p.entries_written, p.table_allocations, p.hashes);
    let mut radix = thp_os("radix", 64 << 20);
    fault(&mut radix, 0x4000_0000);
    assert_eq!(tuple(op(&radix, "fault").primitives), (3, 3 + 1, 3, 0));
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
    // The second: one lookup of the range's 2 MiB entry against 512, of k probes each.
    let extra = find.1 - cluster.1;
    assert!(extra % 511 == 0 && (1..=3).contains(&(extra / 511)), "{find:?} against {cluster:?}");
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
