use super::*;
use crate::os::PlacementSpec;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// A driver and the frames an OS would give it, counting pages placed and released.
struct Rig {
    ecpt: Ecpt,
    next_frame: u64,
    live: BTreeSet<u64>,
    meter: Meter,
}

impl Rig {
    fn new(spec: EcptSpec) -> Rig {
        let os = OsSpec::simple(1 << 40, PlacementSpec::Sequential);
        Rig { ecpt: Ecpt::new(&spec, &os), next_frame: 1, live: BTreeSet::new(), meter: Meter::default() }
    }

    /// Maps page `page` (4 KiB) of `asid` as the OS does: tables first, then the page, then
    /// the tables let go of are freed.
    fn map(&mut self, asid: Asid, page: u64) -> Result<(), TableFull> {
        let t = Translation { asid, vpn: Vpn(page), pfn: Pfn(0), size: PageSize::Size4K };
        while let Some(need) = self.ecpt.need(asid, t.vpn, t.size) {
            assert_eq!(need, TableNeed::Page);
            self.live.insert(self.next_frame);
            self.ecpt.given(asid, t.vpn, t.size, Placed::Page(Pfn(self.next_frame)), &mut self.meter);
            self.next_frame += 1;
        }
        self.ecpt.mapped(&t, &mut self.meter)?;
        let mut released = Vec::new();
        self.ecpt.take_released(&mut released);
        for frame in released {
            assert!(self.live.remove(&frame.0), "a released page was live");
        }
        Ok(())
    }

    fn unmap(&mut self, asid: Asid, page: u64) {
        self.ecpt.unmapped(asid, Vpn(page), PageSize::Size4K, &mut self.meter);
    }

    /// Checks every invariant against `mapped`, the pages mapped per address space.
    fn check(&self, mapped: &BTreeMap<Asid, BTreeSet<u64>>) {
        for (asid, pages) in mapped {
            let Some(space) = self.ecpt.spaces.get(asid) else {
                assert!(pages.is_empty());
                continue;
            };
            let ways = space.sizes[0].as_ref().expect("4 KiB ways");
            // Clusters are exactly those of the mapped pages, each with the mapped pages' bits.
            let mut want: BTreeMap<u64, u8> = BTreeMap::new();
            for &page in pages {
                *want.entry(page >> 3).or_default() |= 1 << (page & 7);
            }
            let mut have: BTreeMap<u64, u8> = BTreeMap::new();
            for (way, cluster) in ways.clusters() {
                assert!(have.insert(cluster.key, cluster.mask).is_none(), "key {} is in two slots", cluster.key);
                // The one slot it is in is its candidate in its way: found there.
                assert_eq!(ways.find(cluster.key).map(|(w, _)| w), Some(way));
            }
            assert_eq!(have, want);
            let used: u64 = ways.ways.iter().map(|w| w.used).sum();
            assert_eq!(used, want.len() as u64);
        }
        // Every table page the driver holds is live; none is held twice.
        let held: usize = self.ecpt.spaces.values().map(|s| s.pmd.page_count() + s.pud.page_count() + s.sizes.iter().flatten().map(Ways::pages).sum::<usize>()).sum();
        assert_eq!(held, self.live.len());
    }
}

/// Small ways, so that sequences of a few hundred pages resize them several times and kick.
fn small() -> EcptSpec {
    EcptSpec { initial_clusters: 16, rehash_step: 8, pud_cwt_lines: 4, pmd_cwt_lines: 4, ..EcptSpec::default() }
}

proptest! {
    /// No entry is lost or duplicated through kicks, resizes and rehashes, lookups find every
    /// mapped page at any point of a rehash, and the pages of replaced tables are freed.
    #[test]
    fn entries_survive_kicks_and_resizes(
        ops in proptest::collection::vec((0u16..2, 0u64..600, proptest::bool::weighted(0.8)), 1..400),
        seed in any::<u64>(),
        step in 4u64..20,
    ) {
        let mut rig = Rig::new(EcptSpec { seed, rehash_step: step, ..small() });
        let mut mapped: BTreeMap<Asid, BTreeSet<u64>> = BTreeMap::new();
        for (asid, page, map) in ops {
            let pages = mapped.entry(asid).or_default();
            if map {
                rig.map(asid, page).expect("room at occupancy 0.6");
                pages.insert(page);
            } else if pages.remove(&page) {
                rig.unmap(asid, page);
            }
            rig.check(&mapped);
        }
    }

    /// A walk probes the slot its entry is in, whatever the walk caches say, and with
    /// `correct` probing only that one.
    #[test]
    fn walks_probe_the_entrys_slot(pages in proptest::collection::btree_set(0u64..1 << 22, 1..200), correct in any::<bool>()) {
        let probe = if correct { Probe::Correct } else { Probe::Chosen };
        let mut rig = Rig::new(EcptSpec { probe, ..small() });
        for &page in &pages {
            rig.map(0, page).unwrap();
        }
        for &page in &pages {
            let t = Translation { asid: 0, vpn: Vpn(page), pfn: Pfn(0), size: PageSize::Size4K };
            let mut reads = Vec::new();
            rig.ecpt.walk(&t, &mut reads);
            let ways = rig.ecpt.spaces[&0].sizes[0].as_ref().unwrap();
            let (way, _) = ways.find(page >> 3).unwrap();
            let slot = ways.address(way, page >> 3, 4096);
            let probes: Vec<u64> = reads.iter().filter(|r| r.step == Step::Probe).map(|r| r.addr.0).collect();
            prop_assert!(probes.contains(&slot));
            if correct {
                prop_assert_eq!(probes.len(), 1);
            }
        }
    }
}

#[test]
fn a_first_walk_probes_every_way_and_fetches_both_cwt_lines_then_the_caches_narrow_it() {
    let mut rig = Rig::new(EcptSpec::default());
    rig.map(0, 0x7f000).unwrap();
    rig.map(0, 0x7f001).unwrap();
    let t = |page| Translation { asid: 0, vpn: Vpn(page), pfn: Pfn(0), size: PageSize::Size4K };
    let mut reads = Vec::new();
    rig.ecpt.walk(&t(0x7f000), &mut reads);
    let count = |reads: &[WalkRead], step| reads.iter().filter(|r| r.step == step).count();
    // Both caches missed: the three 4 KiB ways (only 4 KiB ways exist), and two lines of
    // each CWT.
    assert_eq!((count(&reads, Step::Probe), count(&reads, Step::Fill)), (3, 4));
    reads.clear();
    rig.ecpt.walk(&t(0x7f001), &mut reads);
    // Both hit: the PUD header says 4 KiB only, so the three 4 KiB ways; nothing fetched.
    assert_eq!((count(&reads, Step::Probe), count(&reads, Step::Fill)), (3, 0));
    let s = rig.ecpt.stats();
    assert_eq!((s.pud_cwc.hits, s.pud_cwc.misses, s.pmd_cwc.hits, s.pmd_cwc.misses), (1, 1, 1, 1));
    assert_eq!((s.walks, s.ways_probed), (2, 6));
    // 3 ways of 1 MiB, a PMD-CWT of 2 × 4096 lines and a PUD-CWT of 2 × 2048: 4 KiB pages.
    assert_eq!(s.table_pages, 3 * 256 + 2 * 64 + 2 * 32);
    assert_eq!(s.cwt_lines, 2);
}

#[test]
fn a_way_at_the_threshold_is_resized_and_its_old_pages_freed() {
    let mut rig = Rig::new(EcptSpec { initial_clusters: 256, ..EcptSpec::default() });
    let mut cluster = 0;
    // Until a way holds 0.6 × 256 = 153.6 clusters: the insertion of the 154th starts the
    // resize (a table of 1024 clusters, 16 pages).
    while rig.ecpt.spaces.get(&0).is_none_or(|s| !s.sizes[0].as_ref().unwrap().has_incomplete()) {
        rig.map(0, cluster * 8).unwrap();
        cluster += 1;
    }
    let ways = rig.ecpt.spaces[&0].sizes[0].as_ref().unwrap();
    assert_eq!(ways.ways.iter().map(|w| w.used).max(), Some(154));
    let before = rig.live.len();
    // The next fault places the new table; 16 insertions of 16 slots each empty the old one,
    // whose 4 pages are freed.
    for _ in 0..16 {
        rig.map(0, cluster * 8).unwrap();
        cluster += 1;
    }
    assert_eq!(rig.live.len(), before + 16 - 4);
    let s = rig.ecpt.stats();
    assert_eq!(s.sizes[0].counts.resizes, 1);
    assert!(s.sizes[0].slots.contains(&1024));
    assert_eq!(s.sizes[0].counts.inserts, cluster);
    rig.check(&BTreeMap::from([(0, (0..cluster).map(|c| c * 8).collect())]));
}

#[test]
fn bad_parameters_name_their_field() {
    let os = OsSpec::simple(1 << 30, PlacementSpec::Sequential);
    for (spec, field) in [
        (EcptSpec { ways: 0, ..EcptSpec::default() }, "ways"),
        (EcptSpec { resize_threshold: 1.0, ..EcptSpec::default() }, "resize_threshold"),
        (EcptSpec { resize_threshold: 0.0, ..EcptSpec::default() }, "resize_threshold"),
        (EcptSpec { initial_clusters: 0, ..EcptSpec::default() }, "initial_clusters"),
        (EcptSpec { resize_factor: 1, ..EcptSpec::default() }, "resize_factor"),
        (EcptSpec { pmd_cwc: 0, ..EcptSpec::default() }, "pmd_cwc"),
    ] {
        let e = spec.check(&os, "machine[0].os.page_table").unwrap_err().to_string();
        assert!(e.contains(&format!("machine[0].os.page_table.{field}")), "{e}");
    }
}
