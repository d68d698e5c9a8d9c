//! The translation databases of every driver against a plain map of objects, and the
//! customizable operations' overrides against their defaults.

use super::*;
use crate::mmu::ecpt::EcptSpec;
use crate::mmu::fpt::{FptMode, FptSpec};
use crate::mmu::radix::RadixSpec;
use crate::mmu::PageTableSpec;
use crate::os::PlacementSpec;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The tag of an unmapped page in these tests.
const NO_TAG: u8 = 0xff;

/// Every driver, ECPT with small ways so that a few hundred pages resize and kick.
fn drivers() -> Vec<PageTableSpec> {
    let ecpt = EcptSpec { initial_clusters: 16, rehash_step: 8, pud_cwt_lines: 4, pmd_cwt_lines: 4, ..EcptSpec::default() };
    let fpt = |mode| PageTableSpec::Fpt(FptSpec { mode });
    vec![
        PageTableSpec::default(),
        PageTableSpec::Radix(RadixSpec { levels: 4 }),
        PageTableSpec::Radix(RadixSpec { levels: 5 }),
        fpt(FptMode::L3L2),
        fpt(FptMode::L4L3),
        fpt(FptMode::L4L3L2L1),
        PageTableSpec::Ecpt(ecpt),
        PageTableSpec::Ecpt(EcptSpec { iterator: crate::mmu::ecpt::Iteration::Find, ..ecpt }),
    ]
}

/// Databases of one driver, with the OS's side of the table exchange played by a bump
/// allocator of frames far above the data's.
struct Rig {
    db: Translations,
    next_table: u64,
}

impl Rig {
    fn new(page_table: PageTableSpec) -> Rig {
        let os = OsSpec { page_table, ..OsSpec::simple(1 << 40, PlacementSpec::Sequential) };
        Rig { db: Translations::new(&os, NO_TAG), next_table: 1 << 30 }
    }

    fn map(&mut self, asid: Asid, page: u64, frame: u64) {
        self.map_sized(asid, Vpn(page), frame, PageSize::Size4K);
    }

    /// Maps the page of `size` at `vpn` at base frame `frame`, placing the tables it needs.
    fn map_sized(&mut self, asid: Asid, vpn: Vpn, frame: u64, size: PageSize) {
        while let Some(need) = self.db.need(asid, vpn, size) {
            let placed = match need {
                TableNeed::Page => Placed::Page(Pfn(self.next_table)),
                TableNeed::Block(pages) => {
                    self.next_table = self.next_table.next_multiple_of(pages);
                    Placed::Block(Pfn(self.next_table))
                }
            };
            self.next_table += match need {
                TableNeed::Page => 1,
                TableNeed::Block(pages) => pages,
            };
            self.db.given(asid, vpn, size, placed);
        }
        let t = Translation { asid, vpn, pfn: Pfn(frame), size };
        self.db.map(t, (frame % 100) as u8).expect("small sequences fit");
        let mut released = Vec::new();
        self.db.take_released(&mut released);
    }
}

/// An operation on a database.
#[derive(Clone, Debug)]
enum Op {
    Map(Asid, u64, u64),
    SwapOut(Asid, u64),
    Remove(Asid, u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // Pages in a few clusters of 2 MiB regions, some 1 GiB apart, so that ranges cross
    // tables that exist and tables that do not.
    let page = (0u64..4, 0u64..3, 0u64..600).prop_map(|(gib, mib2, page)| (gib << 18) | ((mib2 << 9) + page));
    let op = prop_oneof![
        3 => (0u16..2, page.clone(), 0u64..1 << 20).prop_map(|(a, p, f)| Op::Map(a, p, f)),
        1 => (0u16..2, page.clone()).prop_map(|(a, p)| Op::SwapOut(a, p)),
        1 => (0u16..2, page).prop_map(|(a, p)| Op::Remove(a, p)),
    ];
    proptest::collection::vec(op, 1..250)
}

/// The objects `model` holds in `range` of `asid`, in order.
fn model_range(model: &BTreeMap<(Asid, u64), Presence>, asid: Asid, range: &Range<u64>) -> Vec<(u64, Presence)> {
    model.range((asid, range.start >> 12)..(asid, range.end.div_ceil(4096))).map(|(&(_, page), &p)| (page << 12, p)).collect()
}

proptest! {
    /// Under any sequence of maps, swap-outs and removes, every driver's databases hold what
    /// a plain map holds, and every customizable operation (overridden or not) answers as the
    /// map does.
    #[test]
    fn every_driver_agrees_with_a_map(ops in ops(), ranges in proptest::collection::vec((0u16..2, 0u64..1 << 32, 1u64..1 << 23), 1..20)) {
        for driver in drivers() {
            let mut rig = Rig::new(driver);
            let mut model = BTreeMap::new();
            for op in &ops {
                match *op {
                    Op::Map(asid, page, frame) => {
                        rig.map(asid, page, frame);
                        model.insert((asid, page), Presence::Present { frame: Pfn(frame), tag: (frame % 100) as u8 });
                    }
                    Op::SwapOut(asid, page) => {
                        let present = matches!(model.get(&(asid, page)), Some(Presence::Present { .. }));
                        prop_assert_eq!(rig.db.swap_out(asid, Vpn(page)).is_some(), present);
                        if present {
                            model.insert((asid, page), Presence::Swapped);
                        }
                    }
                    Op::Remove(asid, page) => {
                        let was = model.remove(&(asid, page));
                        let frame = was.and_then(|p| match p { Presence::Present { frame, .. } => Some(frame.0), Presence::Swapped => None });
                        prop_assert_eq!(rig.db.remove(asid, Vpn(page)), frame);
                    }
                }
            }
            for (&(asid, page), &presence) in &model {
                prop_assert_eq!(rig.db.object(asid, page << 12), Some(TranslationObject { size: PageSize::Size4K, presence }), "{:?}", driver);
                prop_assert_eq!(rig.db.swapped(asid, page << 12), presence == Presence::Swapped);
                if let Presence::Present { frame, .. } = presence {
                    prop_assert_eq!(rig.db.find(asid, page << 12).map(|(t, _)| t.pfn), Some(frame));
                }
            }
            for &(asid, start, len) in &ranges {
                let range = start..start + len;
                let want = model_range(&model, asid, &range);
                let mut got = Vec::new();
                let flow = rig.db.iterate(asid, range.clone(), &mut |vaddr, object| {
                    got.push((vaddr, object.presence));
                    ControlFlow::Continue(())
                });
                prop_assert!(flow.is_continue());
                prop_assert_eq!(&got, &want, "{:?} {:?}", driver, range);
                prop_assert_eq!(rig.db.range_is_void(asid, range.clone()), want.is_empty());
                let huge = start & !((2 << 20) - 1);
                let eligible = model_range(&model, asid, &(huge..huge + (2 << 20))).is_empty();
                prop_assert_eq!(rig.db.huge_eligible(asid, start, PageSize::Size2M), eligible);
            }
        }
    }
}

proptest! {
    /// With 2 MiB pages beside 4 KiB ones (transparent huge pages), every driver that holds
    /// both finds, iterates and checks eligibility as a plain map of both does: a huge page
    /// is one object, visited once at its first address.
    #[test]
    fn every_driver_agrees_with_a_map_of_two_sizes(
        ops in proptest::collection::vec((0u64..4, 0u64..3, proptest::option::of(0u64..512), 1u64..1 << 20), 1..120),
        ranges in proptest::collection::vec((0u64..4, 0u64..3 << 21, 1u64..1 << 23), 1..20),
    ) {
        let two_sizes = drivers().into_iter().filter(|d| !matches!(d, PageTableSpec::Fpt(FptSpec { mode: FptMode::L4L3L2L1 })));
        for driver in two_sizes {
            let mut rig = Rig::new(driver);
            // Per range (a GiB, a 2 MiB range in it): its huge page's frame, or its base pages.
            let mut huge: BTreeMap<u64, u64> = BTreeMap::new();
            let mut base: BTreeMap<u64, u64> = BTreeMap::new();
            for &(gib, range, page, frame) in &ops {
                let first = (gib << 18) | (range << 9);
                let busy = huge.contains_key(&first) || base.range(first..first + 512).next().is_some();
                match page {
                    Some(page) if !huge.contains_key(&first) => {
                        rig.map(0, first + page, frame);
                        base.insert(first + page, frame);
                    }
                    None if !busy => {
                        let frame = frame << 9;
                        rig.map_sized(0, Vpn(first), frame, PageSize::Size2M);
                        huge.insert(first, frame);
                    }
                    _ => {}
                }
            }
            let mut model: BTreeMap<u64, (PageSize, u64)> = base.iter().map(|(&p, &f)| (p << 12, (PageSize::Size4K, f))).collect();
            model.extend(huge.iter().map(|(&p, &f)| (p << 12, (PageSize::Size2M, f))));
            for (&vaddr, &(size, frame)) in &model {
                let want = TranslationObject { size, presence: Presence::Present { frame: Pfn(frame), tag: (frame % 100) as u8 } };
                prop_assert_eq!(rig.db.object(0, vaddr + 4096 * (size.base_pages() - 1)), Some(want), "{:?}", driver);
            }
            for &(gib, start, len) in &ranges {
                let start = (gib << 30) + start;
                let range = start..start + len;
                let want: Vec<(u64, PageSize)> = model.iter().filter(|(&v, &(size, _))| v < range.end && v + size.bytes() > range.start).map(|(&v, &(size, _))| (v, size)).collect();
                let mut got = Vec::new();
                let _ = rig.db.iterate(0, range.clone(), &mut |vaddr, object| {
                    got.push((vaddr, object.size));
                    ControlFlow::Continue(())
                });
                prop_assert_eq!(&got, &want, "{:?} {:?}", driver, range);
                let first = start & !((2 << 20) - 1);
                let eligible = !model.iter().any(|(&v, &(size, _))| v < first + (2 << 20) && v + size.bytes() > first);
                prop_assert_eq!(rig.db.huge_eligible(0, start, PageSize::Size2M), eligible, "{:?}", driver);
            }
        }
    }
}

#[test]
fn an_iteration_stops_where_the_visit_breaks() {
    let mut rig = Rig::new(PageTableSpec::Radix(RadixSpec { levels: 4 }));
    for page in [1, 2, 3, 1 << 18] {
        rig.map(0, page, page);
    }
    let mut seen = Vec::new();
    let flow = rig.db.iterate(0, 0..1 << 40, &mut |vaddr, _| {
        seen.push(vaddr >> 12);
        if seen.len() == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert!(flow.is_break());
    assert_eq!(seen, [1, 2]);
}

/// Radix's override skips the parts of a range with no table: over a terabyte holding one
/// page, it finds the 512 pages of that page's table, where the default finds 2^28.
#[test]
fn the_radix_iterator_finds_only_under_tables_that_exist() {
    /// A store that counts its finds.
    struct Counting<'a>(&'a mut PageTable, u64, Meter);
    impl Find for Counting<'_> {
        fn find(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject> {
            self.1 += 1;
            self.0.object(asid, vaddr)
        }
        fn peek(&mut self, asid: Asid, vaddr: u64) -> Option<TranslationObject> {
            self.0.object(asid, vaddr)
        }
        fn page_size(&self) -> PageSize {
            PageSize::Size4K
        }
        fn meter(&mut self) -> &mut Meter {
            &mut self.2
        }
    }
    let mut rig = Rig::new(PageTableSpec::Radix(RadixSpec { levels: 4 }));
    rig.map(0, 0x12345, 7);
    let Translations { store, driver, .. } = &mut rig.db;
    let mut counting = Counting(store, 0, Meter::default());
    let mut found = Vec::new();
    let flow = driver.iterate(&mut counting, 0, 0..1 << 40, &mut |vaddr, _| {
        found.push(vaddr);
        ControlFlow::Continue(())
    });
    assert!(flow.is_continue());
    assert_eq!(found, [0x12345 << 12]);
    assert_eq!(counting.1, 512);
}

/// ECPT's cluster iterator over 64 mapped pages (8 clusters) and 64 unmapped ones: a lookup
/// per cluster, the other entries read in place; the default finds every page.
#[test]
fn the_ecpt_cluster_iterator_hashes_once_a_cluster() {
    let work = |iterator| {
        let mut rig = Rig::new(PageTableSpec::Ecpt(EcptSpec { iterator, ..EcptSpec::default() }));
        for page in 0..64 {
            rig.map(0, 0x1000 + page, page);
        }
        let before = rig.db.kernel_work(&Default::default()).primitives;
        rig.db.meter().enter(crate::os::kernel_work::Operation::Scan);
        let mut seen = 0;
        let flow = rig.db.iterate(0, 0x1000 << 12..0x1080 << 12, &mut |_, _| {
            seen += 1;
            ControlFlow::Continue(())
        });
        assert!(flow.is_continue());
        assert_eq!(seen, 64);
        let after = rig.db.kernel_work(&Default::default()).primitives;
        (after.hashes - before.hashes, after.entries_read - before.entries_read)
    };
    let (cluster_hashes, cluster_reads) = work(crate::mmu::ecpt::Iteration::Cluster);
    let (find_hashes, find_reads) = work(crate::mmu::ecpt::Iteration::Find);
    // 16 lookups (8 found after 1 to 3 probes, 8 missing after 3) and 56 entries in place.
    assert!((8 + 24..=24 + 24).contains(&cluster_hashes), "{cluster_hashes}");
    assert_eq!(cluster_reads, cluster_hashes + 56);
    // 128 lookups: at least one probe for each present page, three for each missing one.
    assert!(find_hashes >= 64 + 64 * 3, "{find_hashes}");
    assert_eq!(find_reads, find_hashes);
}
