use super::*;
use crate::os::iceberg::IcebergSpec;
use crate::os::{EvictionSpec, PlacementSpec, Recency};
use crate::tlb::{ArrayGeometry, Policy};
use crate::types::PageSize;
use crate::MemRef;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn level(entries: usize, ways: usize) -> LevelGeometry {
    LevelGeometry {
        name: "L1".into(),
        arrays: vec![ArrayGeometry { entries, ways, policy: Policy::Lru, page_sizes: vec![PageSize::Size4K] }],
        instr_arrays: vec![],
        inclusive: false,
    }
}

/// A second level of 32 4 KiB entries and an array of 8 for 2 MiB pages.
fn level_with_huge_array() -> LevelGeometry {
    LevelGeometry {
        name: "L2".into(),
        arrays: vec![
            ArrayGeometry { entries: 32, ways: 4, policy: Policy::Lru, page_sizes: vec![PageSize::Size4K] },
            ArrayGeometry { entries: 8, ways: 8, policy: Policy::Lru, page_sizes: vec![PageSize::Size2M] },
        ],
        instr_arrays: vec![],
        inclusive: false,
    }
}

fn spec() -> CpuSpec {
    CpuSpec { name: "m".into(), seed: 1, os: OsSpec::simple(1 << 30, PlacementSpec::Random), tlb: vec![level(4, 4)], mosaic: vec![], pwc: None, timing: None }
}

fn mosaic_spec(memory: u64, eviction: EvictionSpec, arity: u32) -> CpuSpec {
    let os = OsSpec { eviction, ..OsSpec::simple(memory, PlacementSpec::Iceberg(IcebergSpec::default())) };
    let geometry = MosaicGeometry { entries: 64, ways: 4, policy: Policy::Lru, arity };
    CpuSpec { name: "mosaic".into(), seed: 3, os, tlb: vec![level(64, 4)], mosaic: vec![MosaicSpec { name: format!("mosaic-{arity}"), geometry }], pwc: None, timing: None }
}

#[test]
fn straddle_touches_both_pages() {
    let mut m = CpuMachine::new(&spec());
    let batch = Batch::new(vec![MemRef::load(0x1ffc, 8), MemRef::load(0x2000, 4)], 2);
    m.process(&batch).unwrap();
    let s = m.stats();
    assert_eq!(s.counters.refs, 2);
    assert_eq!(s.counters.straddles, 1);
    assert_eq!(s.levels[0].counters.accesses, 3);
    assert_eq!(s.levels[0].counters.misses, 2);
    assert_eq!(s.os.page_faults, 2);
    assert_eq!(s.counters.instructions, 2);
}

#[test]
fn a_reference_larger_than_a_page_touches_every_page_on_every_path() {
    // 16 KiB from 0x1ffc covers pages 1 to 5; 8 KiB at 0x3000 then hits pages 3 and 4. The
    // 4-entry TLB takes the express path; with an eviction policy, the general one.
    for eviction in [EvictionSpec::default(), EvictionSpec::Lru(Default::default())] {
        let os = OsSpec { eviction, ..OsSpec::simple(1 << 30, PlacementSpec::Random) };
        let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![level(8, 8)], ..spec() });
        let batch = Batch::new(vec![MemRef::load(0x1ffc, 16384), MemRef::store(0x3000, 8192)], 2);
        m.process(&batch).unwrap();
        let s = m.stats();
        assert_eq!((s.counters.straddles, s.os.page_faults, s.os.footprint_bytes), (2, 5, 5 << 12), "{eviction:?}");
        let c = &s.levels[0].counters;
        assert_eq!((c.accesses, c.misses), (7, 5), "{eviction:?}");
    }
}

/// A sequential sweep over 64 pages, twice: a spatial-locality stream.
fn sweep() -> Batch {
    let refs = (0..2).flat_map(|_| (0..64u64).flat_map(|p| [MemRef::load(p << 12, 8), MemRef::store((p << 12) + 64, 8)])).collect();
    Batch::new(refs, 0)
}

/// Simulates `refs` one reference per batch, checking after each that every valid sub-entry
/// of every Mosaic TLB decodes to the frame the OS maps its page at (so that a hit on any of
/// them gives the right frame).
fn process_checking_mosaic(m: &mut CpuMachine, refs: Vec<MemRef>) {
    for (i, r) in refs.into_iter().enumerate() {
        m.process(&Batch::new(vec![r], 0)).unwrap();
        if let Err(e) = m.check_mosaic_entries() {
            panic!("after reference {i} ({r:?}): {e}");
        }
    }
}

#[test]
fn mosaic_tlb_fills_whole_mosaic_pages_and_decodes_every_hit() {
    let mut m = CpuMachine::new(&mosaic_spec(64 << 20, EvictionSpec::default(), 4));
    process_checking_mosaic(&mut m, sweep().refs);
    let s = m.stats();
    let vanilla = &s.levels[0].counters;
    let mosaic = &s.mosaic[0].counters;
    assert_eq!(vanilla.accesses, 256);
    assert_eq!(mosaic.accesses, 256);
    // Vanilla misses once per page; a Mosaic-4 entry is filled when its first page faults,
    // when the other three are not mapped yet, so they sub-page miss once each. The second
    // sweep hits everywhere (64 pages fit both TLBs).
    assert_eq!(vanilla.misses, 64);
    assert_eq!((mosaic.misses, mosaic.tag_misses, mosaic.sub_misses), (64, 16, 48));
}

#[test]
fn mosaic_beats_vanilla_on_a_prefaulted_stream_with_spatial_locality() {
    let mut m = CpuMachine::new(&mosaic_spec(64 << 20, EvictionSpec::default(), 8));
    // Sweep 256 pages (more than the 64-entry vanilla TLB holds, fewer than the 64 Mosaic-8
    // entries cover) four times: vanilla misses on every page every time; Mosaic-8 misses
    // only in the first sweep, where each page faults after its entry was filled.
    let pages = 256u64;
    let refs: Vec<MemRef> = (0..4).flat_map(|_| (0..pages).map(|p| MemRef::load(p << 12, 8))).collect();
    m.process(&Batch::new(refs, 0)).unwrap();
    let s = m.stats();
    let vanilla = s.levels[0].counters.misses;
    let mosaic = s.mosaic[0].counters.misses;
    assert_eq!(vanilla, 4 * pages);
    assert_eq!(mosaic, pages);
    assert_eq!(s.mosaic[0].counters.tag_misses, pages / 8);
}

#[test]
fn evicted_pages_are_shot_down_in_every_tlb() {
    // 2 buckets = 128 frames for 512 pages: Horizon LRU evicts constantly, and every entry
    // of the Mosaic TLB must still decode to the OS's current mapping.
    let mut m = CpuMachine::new(&mosaic_spec(2 * 64 * 4096 * 3, EvictionSpec::HorizonLru(Default::default()), 4));
    let refs: Vec<MemRef> = (0..20_000u64).map(|i| MemRef::load((((i * 7919) % 512) << 12) | ((i % 64) * 64), 8)).collect();
    process_checking_mosaic(&mut m, refs);
    let s = m.stats();
    assert!(s.os.swap_outs > 1000 && s.os.swap_ins > 1000, "{:?}", s.os);
}

/// No TLB ever holds a translation the OS no longer has: checked after every reference, on
/// machines that evict constantly under every eviction policy (with the swap cache's copies
/// at stores and accessed-bit scans, which shoot pages down too), over one level, two with an
/// inclusive second, a split first level, and pages of 2 MiB.
#[test]
fn tlbs_never_hold_a_translation_the_os_no_longer_has() {
    let refs = mixed_refs(6_000, 600.0, 0x5ca1_ab1e);
    let inclusive = LevelGeometry { name: "L2".into(), inclusive: true, ..level(64, 4) };
    let split = LevelGeometry { instr_arrays: vec![ArrayGeometry { entries: 8, ways: 2, policy: Policy::Fifo, page_sizes: vec![PageSize::Size4K] }], ..level(16, 4) };
    let hierarchies = [vec![level(32, 4)], vec![level(16, 4), inclusive], vec![split, level(64, 8)]];
    let linux = EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: crate::os::InactiveRatio::Kernel, workingset: true, look_twice: true });
    let scan = Recency::Scan { period: 500, hot_sample: 0.2, history: 8 };
    let iceberg = PlacementSpec::Iceberg(IcebergSpec::default());
    let policies = [
        (EvictionSpec::Lru(Default::default()), Recency::Access, PlacementSpec::Random),
        (linux, Recency::Access, PlacementSpec::Random),
        (EvictionSpec::HorizonLru(Default::default()), scan, iceberg),
        (EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.05 }), scan, iceberg),
    ];
    for (h, tlb) in hierarchies.iter().enumerate() {
        for (p, (eviction, recency, placement)) in policies.iter().enumerate() {
            let mut os = OsSpec { eviction: *eviction, recency: *recency, ..OsSpec::simple(2 * 64 * 4096 * 3, *placement) };
            (os.swap_cache, os.swap_cache_cow) = (true, true);
            let mut m = CpuMachine::new(&CpuSpec { os, tlb: tlb.clone(), ..spec() });
            for (i, r) in refs.iter().enumerate() {
                m.process(&Batch::new(vec![*r], 0)).unwrap();
                if let Err(e) = m.check_tlb_entries() {
                    panic!("hierarchy {h}, policy {p}, after reference {i} ({r:?}): {e}");
                }
            }
            let s = m.stats();
            assert!(s.os.swap_outs > 500 && s.os.shootdowns > 500, "hierarchy {h}, policy {p}: {:?}", s.os);
        }
    }
    // Pages of 2 MiB, evicted whole.
    let size = PageSize::Size2M;
    let sized = ArrayGeometry { entries: 16, ways: 4, policy: Policy::Lru, page_sizes: vec![size] };
    let os = OsSpec { page_size: size, eviction: EvictionSpec::Lru(Default::default()), ..OsSpec::simple(64 << 21, PlacementSpec::Random) };
    let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![LevelGeometry { arrays: vec![sized], ..level(16, 4) }], ..spec() });
    for r in &refs {
        m.process(&Batch::new(vec![MemRef { vaddr: r.vaddr << 9, ..*r }], 0)).unwrap();
        m.check_tlb_entries().unwrap();
    }
    assert!(m.stats().os.swap_outs > 500);
}

#[test]
fn a_refaulted_page_decodes_its_new_cpfn() {
    // 128 Mosaic-4 pages in 64 sets of 4 ways: every Mosaic page keeps its entry while
    // Horizon LRU evicts its pages and faults place them elsewhere (the entry is refilled in
    // place), so the same page hits again and again with a new CPFN. Each hit must decode the
    // current CPFN (every entry is checked against the page table after each reference),
    // not reuse a frame the memo of decoded frames kept for the page.
    let mut spec = mosaic_spec(2 * 64 * 4096 * 3, EvictionSpec::HorizonLru(Default::default()), 4);
    spec.mosaic[0].geometry.entries = 256;
    let mut m = CpuMachine::new(&spec);
    // Half the references go to 200 hot pages, half to all 512 (384 frames): hot pages stay
    // mostly resident and hit, and are now and then evicted and refaulted.
    let mut draw = xorshift(0x9e37_79b9_7f4a_7c15);
    let refs: Vec<MemRef> = (0..40_000u64).map(|i| MemRef::load((draw() % if i % 2 == 0 { 200 } else { 512 }) << 12, 8)).collect();
    process_checking_mosaic(&mut m, refs);
    let s = m.stats();
    assert!(s.os.swap_ins > 1000, "{:?}", s.os);
    assert!(s.mosaic[0].counters.hits > 1000, "{:?}", s.mosaic[0].counters);
}

/// Faults of exact LRU over `frames` page frames on the pages (of `1 << shift` bytes) of
/// `refs`, counted directly from the page sequence (the reference model: a list in recency
/// order).
fn lru_faults(refs: &[MemRef], frames: usize, shift: u32) -> u64 {
    let mut recency: Vec<u64> = Vec::new();
    let mut faults = 0;
    for r in refs {
        let page = r.vaddr >> shift;
        match recency.iter().position(|&p| p == page) {
            Some(i) => {
                recency.remove(i);
            }
            None => {
                faults += 1;
                if recency.len() == frames {
                    recency.remove(0);
                }
            }
        }
        recency.push(page);
    }
    faults
}

/// Under exact LRU on a fully associative memory, a machine's faults are those of LRU over
/// its reference stream, whichever of its TLB levels translated each reference: the use
/// of a page is credited to its frame on TLB hits at the first level, hits at the second
/// and walks alike. Fails if a hit reports another frame's use.
#[test]
fn use_is_tracked_through_every_tlb_level() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut page = 0u64;
    let refs: Vec<MemRef> = (0..20_000)
        .map(|_| {
            // Runs on one page and jumps among 96 pages: hits at both levels, walks, faults.
            if rng.random_bool(0.3) {
                page = rng.random_range(0..96);
            }
            MemRef::load(page << 12 | 8, 8)
        })
        .collect();
    let l2 = LevelGeometry { name: "L2".into(), ..level(32, 4) };
    for tlb in [vec![level(16, 4)], vec![level(8, 2), l2]] {
        let os = OsSpec { eviction: EvictionSpec::Lru(Default::default()), ..OsSpec::simple(64 << 12, PlacementSpec::Random) };
        let mut m = CpuMachine::new(&CpuSpec { name: "lru".into(), seed: 2, os, tlb, mosaic: vec![], pwc: None, timing: None });
        m.process(&Batch::new(refs.clone(), 0)).unwrap();
        let s = m.stats();
        assert!(s.levels.iter().all(|l| l.counters.hits > 0), "every level hits");
        assert_eq!(s.os.page_faults, lru_faults(&refs, 64, 12), "{} levels", s.levels.len());
    }
}

/// An evicted huge page leaves no entry in any TLB, also where the TLBs hold it as 4 KiB
/// splinters: every later reference to it faults, so the faults are LRU's over the huge
/// pages, whatever the TLBs. Fails if a splinter other than the page's first survives the
/// shootdown (a reference would then hit a swapped-out page).
#[test]
fn an_evicted_huge_page_leaves_no_splinter() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let refs: Vec<MemRef> = (0..20_000).map(|_| MemRef::load(rng.random_range(0..12u64) << 21 | rng.random_range(0..4u64) << 12, 8)).collect();
    let l2 = LevelGeometry { name: "L2".into(), ..level(64, 4) };
    for tlb in [vec![level(16, 4)], vec![level(8, 2), l2]] {
        let os = OsSpec { eviction: EvictionSpec::Lru(Default::default()), page_size: PageSize::Size2M, ..OsSpec::simple(8 << 21, PlacementSpec::Random) };
        let mut m = CpuMachine::new(&CpuSpec { name: "huge".into(), seed: 2, os, tlb, mosaic: vec![], pwc: None, timing: None });
        m.process(&Batch::new(refs.clone(), 0)).unwrap();
        let s = m.stats();
        assert!(s.levels[0].counters.hits > 0);
        assert_eq!(s.os.page_faults, lru_faults(&refs, 8, 21), "{} levels", s.levels.len());
    }
}

/// A Zipf-like stream over 512 pages (skewed by squaring a uniform draw), so that recency
/// decides what Horizon LRU evicts.
fn skewed_refs(n: u64) -> Batch {
    let mut draw = xorshift(0x2545_f491_4f6c_dd1d);
    let refs = (0..n).map(|_| MemRef::load(skewed_page(draw(), 512.0) << 12, 8)).collect();
    Batch::new(refs, 0)
}

/// A xorshift64 generator seeded with `x` (not 0): cheap reproducible draws for test streams.
fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A page below `pages`, skewed towards page 0 by squaring the uniform value of `draw`'s top
/// 24 bits.
fn skewed_page(draw: u64, pages: f64) -> u64 {
    let u = (draw >> 40) as f64 / (1u64 << 24) as f64;
    (u * u * pages) as u64
}

#[test]
fn fill_recency_follows_the_first_tlb_only() {
    // Under `recency = "fill"`, the OS's evictions must not depend on which other TLBs ride
    // it: adding a second Mosaic TLB (tiny, so it walks on pages the first one hits) changes
    // nothing the OS does, with or without a conventional TLB in front.
    for conventional in [true, false] {
        let mut spec = mosaic_spec(2 * 64 * 4096 * 3, EvictionSpec::HorizonLru(Default::default()), 4);
        spec.os.recency = crate::os::Recency::Fill;
        if !conventional {
            spec.tlb.clear();
        }
        let mut extra = spec.clone();
        let geometry = MosaicGeometry { entries: 4, ways: 4, policy: Policy::Lru, arity: 2 };
        extra.mosaic.push(MosaicSpec { name: "tiny".into(), geometry });
        let batch = skewed_refs(30_000);
        let [one, two] = [spec, extra].map(|spec| {
            let mut m = CpuMachine::new(&spec);
            m.process(&batch).unwrap();
            m.stats()
        });
        assert!(one.os.swap_outs > 1000, "{:?}", one.os);
        assert_eq!(one.os.swap_outs, two.os.swap_outs, "conventional TLB: {conventional}");
        assert_eq!(one.os.page_faults, two.os.page_faults);
        assert_eq!(one.mosaic[0].counters, two.mosaic[0].counters);
        assert!(two.os.walks > one.os.walks);
    }
}

#[test]
fn every_tlb_miss_counts_one_walk() {
    // A Mosaic TLB that misses on a page the conventional TLB (or another Mosaic TLB) has just
    // walked for the same reference reuses that walk, but still counts its own: walks are
    // the misses and sub-page misses of every TLB, with and without eviction, with and
    // without a conventional TLB.
    for eviction in [EvictionSpec::default(), EvictionSpec::HorizonLru(Default::default())] {
        for conventional in [true, false] {
            // Memory for 384 pages of the 900 or so touched; all of them without eviction.
            let memory = if eviction == EvictionSpec::default() { 64 << 20 } else { 384 << 12 };
            let mut spec = mosaic_spec(memory, eviction, 4);
            let geometry = MosaicGeometry { entries: 16, ways: 2, policy: Policy::Lru, arity: 8 };
            spec.mosaic.push(MosaicSpec { name: "mosaic-8".into(), geometry });
            if !conventional {
                spec.tlb.clear();
            }
            if eviction == EvictionSpec::default() {
                spec.os.memory = 64 << 20;
            }
            let mut m = CpuMachine::new(&spec);
            m.process(&skewed_refs(30_000)).unwrap();
            let s = m.stats();
            let conventional_misses: u64 = s.levels.iter().map(|l| l.counters.misses).sum();
            let mosaic_misses: u64 = s.mosaic.iter().map(|t| t.counters.misses).sum();
            assert_eq!(s.os.walks, conventional_misses + mosaic_misses, "{eviction:?}, conventional TLB: {conventional}");
            assert!(mosaic_misses > 1000 && s.os.page_faults > 100, "{:?}", s.os);
        }
    }
}

#[test]
fn a_scan_shoots_down_the_pages_whose_accessed_bit_it_clears() {
    // Four pages in turn, 2000 references, a scan every 100 (20 scans, the last one after
    // the last reference): a scan that clears a page's bit invalidates its TLB entry, so the
    // page misses once more. Pages used in all of the last `history` scans turn hot and, with
    // no sampling, are not read (nor shot down) again.
    let misses = |recency| {
        let os = OsSpec { eviction: EvictionSpec::Lru(Default::default()), recency, ..OsSpec::simple(16 << 12, PlacementSpec::Random) };
        let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![level(64, 4)], ..spec() });
        let refs = (0..2000u64).map(|i| MemRef::load((i % 4) << 12, 8)).collect();
        m.process(&Batch::new(refs, 0)).unwrap();
        let s = m.stats();
        (s.levels[0].counters.misses, s.os.scan_shootdowns)
    };
    let scan = |hot_sample, history| crate::os::Recency::Scan { period: 100, hot_sample, history };
    assert_eq!(misses(crate::os::Recency::Access), (4, 0));
    assert_eq!(misses(scan(1.0, 8)), (4 + 19 * 4, 20 * 4));
    assert_eq!(misses(scan(0.0, 8)), (4 + 8 * 4, 8 * 4));
    assert_eq!(misses(scan(0.0, 2)), (4 + 2 * 4, 2 * 4));
}

/// A machine whose one TLB level is split, with a data array of a specialized shape (4-way
/// LRU) and an instruction array that is not (FIFO), over an OS without eviction: the express
/// path declines it (`express_ways` is `None`), `express_single_level` accepts it, and
/// `process` then picks `process_single_level::<TRACK = true, MOSAIC = true>` for a machine
/// that neither tracks use nor has a Mosaic TLB. Such a machine must simply run.
#[test]
fn split_single_level_without_eviction_runs() {
    let l1 = LevelGeometry {
        name: "L1".into(),
        arrays: vec![ArrayGeometry { entries: 16, ways: 4, policy: Policy::Lru, page_sizes: vec![PageSize::Size4K] }],
        instr_arrays: vec![ArrayGeometry { entries: 16, ways: 4, policy: Policy::Fifo, page_sizes: vec![PageSize::Size4K] }],
        inclusive: false,
    };
    let mut m = CpuMachine::new(&CpuSpec { tlb: vec![l1], ..spec() });
    assert!(matches!(m.loop_path(), LoopPath::SingleLevel { track: false, mosaic: false, .. }), "{:?}", m.loop_path());
    let refs = (0..100u64).map(|i| if i % 3 == 0 { MemRef::ifetch((i % 5) << 12, 4) } else { MemRef::load((i % 7) << 12, 8) }).collect();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.process(&Batch::new(refs, 100))));
    assert!(matches!(result, Ok(Ok(()))), "processing panicked or failed");
    assert_eq!(m.stats().loops.len(), 1, "one loop for every batch");
}

/// Each shape of machine takes the loop its shape calls for, and reports it.
#[test]
fn every_shape_takes_its_loop() {
    let fifo = ArrayGeometry { entries: 16, ways: 4, policy: Policy::Fifo, page_sizes: vec![PageSize::Size4K] };
    let l2 = LevelGeometry { name: "L2".into(), ..level(256, 8) };
    let lru = EvictionSpec::Lru(Default::default());
    let tracking = |tlb: Vec<LevelGeometry>| CpuSpec { os: OsSpec { eviction: lru, ..OsSpec::simple(1 << 30, PlacementSpec::Random) }, tlb, ..spec() };
    let shaped = |one_level, track, mosaic| LoopPath::General { one_level, track, mosaic };
    let mut mosaic_only = mosaic_spec(64 << 20, EvictionSpec::default(), 4);
    mosaic_only.tlb = vec![];
    let cases = [
        (CpuSpec { tlb: vec![level(64, 4)], ..spec() }, "express 4", LoopPath::Express { ways: 4 }),
        (CpuSpec { tlb: vec![level(48, 12), l2.clone()], ..spec() }, "express 12 over an L2", LoopPath::Express { ways: 12 }),
        (CpuSpec { tlb: vec![LevelGeometry { arrays: vec![fifo.clone()], ..level(16, 4) }], ..spec() }, "FIFO", shaped(true, false, false)),
        (CpuSpec { tlb: vec![level(60, 3)], ..spec() }, "3 ways", shaped(true, false, false)),
        (CpuSpec { tlb: vec![level(60, 3), l2.clone()], ..spec() }, "3 ways over an L2", shaped(false, false, false)),
        (tracking(vec![level(60, 3)]), "3 ways, tracked", shaped(true, true, false)),
        (tracking(vec![level(64, 4), l2]), "two levels, tracked", shaped(false, true, false)),
        (mosaic_only, "Mosaic only", shaped(false, false, true)),
    ];
    for (spec, case, path) in cases {
        assert_eq!(CpuMachine::new(&spec).loop_path(), path, "{case}");
    }
    for (spec, track, mosaic) in [(tracking(vec![level(64, 8)]), true, false), (mosaic_spec(64 << 20, EvictionSpec::default(), 4), false, true)] {
        let path = CpuMachine::new(&spec).loop_path();
        assert!(matches!(path, LoopPath::SingleLevel { level, track: t, mosaic: m } if level.ways == 8 * usize::from(track) + 4 * usize::from(mosaic) && t == track && m == mosaic), "{path:?}");
    }
}

/// The OS's clock, and with it `scan_period`, counts page accesses (docs/configuration.md):
/// a reference that straddles two pages counts twice. Four references, each straddling
/// pages 0 and 1, with a scan period of 4: scans after the fourth and the eighth page access,
/// each clearing the bits of both pages (2 shootdowns each).
#[test]
fn scan_period_counts_page_accesses() {
    let recency = crate::os::Recency::Scan { period: 4, hot_sample: 1.0, history: 8 };
    let os = OsSpec { eviction: EvictionSpec::Lru(Default::default()), recency, ..OsSpec::simple(16 << 12, PlacementSpec::Random) };
    let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![level(64, 4)], ..spec() });
    let refs = (0..4).map(|_| MemRef::load(0xffc, 8)).collect();
    m.process(&Batch::new(refs, 0)).unwrap();
    let s = m.stats();
    assert_eq!((s.counters.refs, s.counters.straddles), (4, 4));
    assert_eq!(s.os.scan_shootdowns, 4);
}

/// Adding Mosaic TLBs to a machine with a conventional TLB changes nothing the OS does
/// (docs/configuration.md, `recency`), over two address spaces and straddling references,
/// for every recency mode.
#[test]
fn mosaic_tlbs_change_nothing_the_os_does_over_two_asids() {
    let mut draw = xorshift(0x1234_5678_9abc_def1);
    let refs: Vec<MemRef> = (0..30_000u64)
        .map(|i| {
            let page = skewed_page(draw(), 600.0);
            let off = if i % 97 == 0 { 0xffc } else { 64 };
            MemRef { asid: (i % 5 == 0) as u16, ..MemRef::load(page << 12 | off, 8) }
        })
        .collect();
    let batch = Batch::new(refs, 0);
    let recencies = [
        crate::os::Recency::Access,
        crate::os::Recency::Fill,
        crate::os::Recency::Scan { period: 1000, hot_sample: 0.2, history: 8 },
    ];
    for recency in recencies {
        let mut with = mosaic_spec(2 * 64 * 4096 * 3, EvictionSpec::HorizonLru(Default::default()), 4);
        with.os.recency = recency;
        with.os.age_window = Some(100);
        let mut without = with.clone();
        without.mosaic.clear();
        let [a, b] = [with, without].map(|spec| {
            let mut m = CpuMachine::new(&spec);
            m.process(&batch).unwrap();
            m.stats().os
        });
        assert!(a.swap_outs > 1000, "{a:?}");
        let key = |s: &crate::os::OsStats| (s.swap_outs, s.swap_ins, s.page_faults, s.ghost_evictions, s.scan_shootdowns, s.conflicts, s.eviction_age.clone());
        assert_eq!(key(&a), key(&b), "{recency:?}");
    }
}

/// A stream for the replay test: skewed pages of two address spaces, a tenth of them stores
/// and a tenth instruction fetches, with references that straddle pages or cover several.
fn mixed_refs(n: u64, pages: f64, seed: u64) -> Vec<MemRef> {
    let mut draw = xorshift(seed);
    (0..n)
        .map(|i| {
            let addr = skewed_page(draw(), pages) << 12;
            let r = match i % 10 {
                0 => MemRef::store(addr | 0x40, 8),
                1 => MemRef::ifetch(addr | 0x10, 4),
                2 if i % 70 == 2 => MemRef::load(addr | 0xffc, 8),
                3 if i % 290 == 3 => MemRef::store(addr | 0x800, 9000),
                _ => MemRef::load(addr | 0x80, 8),
            };
            MemRef { asid: u16::from(i % 7 == 0), ..r }
        })
        .collect()
}

/// Feeds `refs` in batches of varied sizes to two machines of `spec`, one in sequence, the
/// other on two cores (now and then a batch in sequence, which replays what is left first),
/// and checks after every batch that their statistics agree, and that the second machine
/// used the second core (`second_core`) or never did; returns the last.
fn same_on_two_cores(spec: &CpuSpec, refs: &[MemRef], second_core: bool, case: &str) -> MachineStats {
    let (mut sequential, mut replayed) = (CpuMachine::new(spec), CpuMachine::new(spec));
    let mut sizes = [5000, 7000, 300, 6000, 9000, 4000, 8700].into_iter().cycle();
    let mut rest = refs;
    for b in 0.. {
        if rest.is_empty() {
            break;
        }
        let (chunk, after) = rest.split_at(sizes.next().expect("cycles").min(rest.len()));
        rest = after;
        let batch = Batch::new(chunk.to_vec(), chunk.len() as u64);
        sequential.process(&batch).unwrap();
        if b % 4 == 3 { replayed.process(&batch) } else { replayed.process_on_two_cores(&batch) }.unwrap();
        assert_eq!(simulated(replayed.stats()), simulated(sequential.stats()), "{case}, batch {b}");
    }
    let used = replayed.stats().loops;
    assert_eq!(used.iter().any(|u| u.second_core != SecondCore::None), second_core, "{case}: loops used: {used:?}");
    sequential.stats()
}

/// `stats` without the loops that simulated them: what a machine simulated, the same on
/// every loop.
fn simulated(stats: MachineStats) -> MachineStats {
    MachineStats { loops: Vec::new(), ..stats }
}

/// A machine replaying its conventional hierarchy on a second core
/// (`Machine::process_on_two_cores`) gives, after every batch and with sequential batches
/// mixed in, the statistics of the same machine simulated in sequence: for every eviction
/// policy of an iceberg memory and recency mode (under `fill` nothing is replayed: the
/// fallback), swap mechanism and number of Mosaic TLBs, over hierarchies of one to three
/// levels, split or not, inclusive or not, with LRU, tree-PLRU, FIFO and random replacement.
#[test]
fn replaying_the_hierarchy_on_a_second_core_changes_no_statistic() {
    let refs = mixed_refs(40_000, 900.0, 0x0dd_ba11);
    let split_l1 = LevelGeometry { instr_arrays: vec![ArrayGeometry { entries: 16, ways: 4, policy: Policy::Lru, page_sizes: vec![PageSize::Size4K] }], ..level(16, 4) };
    let plru = LevelGeometry { arrays: vec![ArrayGeometry { entries: 48, ways: 6, policy: Policy::TreePlru, page_sizes: vec![PageSize::Size4K] }], ..level(48, 6) };
    let with = |entries, ways, policy| ArrayGeometry { entries, ways, policy, page_sizes: vec![PageSize::Size4K] };
    let random_l1 = LevelGeometry { arrays: vec![with(16, 4, Policy::Random)], ..level(16, 4) };
    let inclusive_fifo = LevelGeometry { name: "L2".into(), arrays: vec![with(64, 4, Policy::Fifo)], inclusive: true, ..level(64, 4) };
    let l3 = LevelGeometry { name: "L3".into(), ..level(256, 8) };
    let hierarchies = [vec![level(64, 4)], vec![level(60, 3)], vec![split_l1, level(128, 8)], vec![plru], vec![random_l1, inclusive_fifo, l3]];
    let scan = Recency::Scan { period: 700, hot_sample: 0.2, history: 8 };
    let policies = [
        (EvictionSpec::default(), Recency::Access),
        (EvictionSpec::HorizonLru(Default::default()), Recency::Access),
        (EvictionSpec::HorizonLru(Default::default()), scan),
        (EvictionSpec::HorizonLru(Default::default()), Recency::Fill),
        (EvictionSpec::Lru(Default::default()), Recency::Access),
        (EvictionSpec::IcebergLru(crate::os::eviction::IcebergLruSpec { delta: 0.05 }), Recency::Access),
        (EvictionSpec::LazyIcebergLru(crate::os::eviction::LazyIcebergLruSpec { delta: 0.05 }), scan),
    ];
    let mut cases = 0;
    for (h, tlb) in hierarchies.iter().enumerate() {
        for (p, &(eviction, recency)) in policies.iter().enumerate() {
            // Memory for 384 pages of the 900 or so touched; all of them without eviction.
            let memory = if eviction == EvictionSpec::default() { 64 << 20 } else { 384 << 12 };
            let mut spec = mosaic_spec(memory, eviction, 4);
            spec.tlb = tlb.clone();
            spec.os.recency = recency;
            if eviction != EvictionSpec::default() {
                // Swap readahead, the swap cache's copies at stores and a bounded swap area
                // on every other case.
                (spec.os.swap_cache, spec.os.swap_cache_cow, spec.os.page_cluster) = (true, true, 3);
                spec.os.swap_slots = (p % 2 == 0).then_some(2000);
            }
            if h % 2 == 1 {
                let geometry = MosaicGeometry { entries: 32, ways: 2, policy: Policy::Lru, arity: 16 };
                spec.mosaic.push(MosaicSpec { name: "mosaic-16".into(), geometry });
            }
            // Under recency on fill nothing is replayed (the fallback).
            let s = same_on_two_cores(&spec, &refs, recency != Recency::Fill, &format!("hierarchy {h}, policy {p}"));
            assert!(s.os.page_faults > 900 && s.levels[0].counters.misses > 5000, "{s:?}");
            if eviction != EvictionSpec::default() {
                assert!(s.os.swap_outs > 1000 && s.os.shootdowns > 1000, "hierarchy {h}, policy {p}: {:?}", s.os);
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 35);
}

/// A machine on the express path whose levels below the first replay the first level's
/// misses on a second core (`Machine::process_on_two_cores`) gives, after every batch and
/// with sequential batches mixed in, the statistics of the same machine simulated in
/// sequence: two and three levels, a split first level, pages of 4 KiB and 2 MiB.
#[test]
fn replaying_the_lower_levels_on_a_second_core_changes_no_statistic() {
    let refs = mixed_refs(40_000, 3000.0, 0xfee1_900d);
    let sized = |entries, ways, size| ArrayGeometry { entries, ways, policy: Policy::Lru, page_sizes: vec![size] };
    let split = |size| LevelGeometry { arrays: vec![sized(16, 4, size)], instr_arrays: vec![sized(8, 2, size)], ..level(16, 4) };
    let lower = |entries, ways, size| LevelGeometry { name: "L2".into(), arrays: vec![sized(entries, ways, size)], ..level(entries, ways) };
    let mut cases = 0;
    for size in [PageSize::Size4K, PageSize::Size2M] {
        let hierarchies = [
            vec![LevelGeometry { arrays: vec![sized(64, 4, size)], ..level(64, 4) }, lower(1536, 12, size)],
            vec![split(size), lower(256, 8, size), lower(1024, 16, size)],
        ];
        for (h, tlb) in hierarchies.into_iter().enumerate() {
            // The stream's pages spread to pages of `size`.
            let spread = size.shift() - 12;
            let refs: Vec<MemRef> = refs.iter().map(|r| MemRef { vaddr: (r.vaddr >> 12) << size.shift() | (r.vaddr & 0xfff) << spread, ..*r }).collect();
            // For 2 MiB pages, large enough that their base frames need more than 32 bits.
            let memory = if size == PageSize::Size4K { 64 << 30 } else { 32 << 40 };
            let os = OsSpec { page_size: size, ..OsSpec::simple(memory, PlacementSpec::Random) };
            let spec = CpuSpec { os, tlb, ..spec() };
            assert!(CpuMachine::new(&spec).descends_apart().is_some(), "{size:?}, hierarchy {h}: the express path");
            let s = same_on_two_cores(&spec, &refs, true, &format!("{size:?}, hierarchy {h}"));
            assert!(s.levels.iter().all(|l| l.counters.misses > 100), "{size:?}, hierarchy {h}: {:?}", s.levels);
            cases += 1;
        }
    }
    assert_eq!(cases, 4);
}

/// `refs` spread over a sparse address space: each page moved to one of 64 regions 1 GiB
/// apart, so that radix tables of every level are many.
fn sparse(refs: &[MemRef]) -> Vec<MemRef> {
    refs.iter().map(|r| MemRef { vaddr: r.vaddr + (((r.vaddr >> 12) % 64) << 30), ..*r }).collect()
}

/// The radix tables the pages of `refs` need (4 levels, 4 KiB pages): a root per address
/// space, a PDPT per 512 GiB, a PD per 1 GiB, a PT per 2 MiB, counted from the pages.
fn radix_tables(refs: &[MemRef]) -> u64 {
    let pages: std::collections::HashSet<(Asid, u64)> = refs.iter().flat_map(|r| std::iter::once(r.vaddr >> 12).chain(r.later_pages().map(|p| p.0)).map(move |p| (r.asid, p))).collect();
    (0..4).map(|level| pages.iter().map(|&(asid, page)| (asid, page >> (9 * (level + 1)))).collect::<std::collections::HashSet<_>>().len() as u64).sum()
}

/// A machine over radix page tables simulates what the same machine over the `map` driver
/// does (walks find the same pages), while its walks read a table entry per level and its
/// tables take frames of its memory, one per table the pages need.
#[test]
fn a_radix_machine_walks_its_tables_and_keeps_them_in_memory() {
    let refs = sparse(&mixed_refs(30_000, 900.0, 0x7ab1e));
    let radix = crate::mmu::PageTableSpec::named("radix").unwrap();
    for tlb in [vec![level(64, 4)], vec![level(16, 4), LevelGeometry { name: "L2".into(), ..level(256, 8) }]] {
        let map = CpuSpec { os: OsSpec::simple(1 << 30, PlacementSpec::Sequential), tlb, ..spec() };
        let over_radix = CpuSpec { os: OsSpec { page_table: radix, ..map.os.clone() }, ..map.clone() };
        let (mut a, mut b) = (CpuMachine::new(&map), CpuMachine::new(&over_radix));
        assert!(!matches!(b.loop_path(), LoopPath::Express { .. }), "walks that read memory are not made ahead");
        for chunk in refs.chunks(7000) {
            let batch = Batch::new(chunk.to_vec(), 0);
            a.process(&batch).unwrap();
            b.process_on_two_cores(&batch).unwrap();
        }
        let (a, b) = (a.stats(), b.stats());
        assert_eq!((&a.levels, a.os.walks, a.os.page_faults), (&b.levels, b.os.walks, b.os.page_faults));
        assert_eq!(b.walker.entries[..4], [b.os.walks; 4], "a read per level per walk");
        assert_eq!((a.walker.entries.iter().sum::<u64>(), a.os.page_table_frames), (0, 0));
        assert_eq!(b.os.page_table_frames, radix_tables(&refs));
    }
}

/// Under memory pressure the radix tables stay (pinned frames are never evicted), every
/// page the OS maps back in is walked through them, and they leave the data fewer frames.
#[test]
fn radix_tables_stay_in_memory_under_pressure() {
    let refs = sparse(&mixed_refs(40_000, 900.0, 0xbee5));
    let tables = radix_tables(&refs);
    let radix = crate::mmu::PageTableSpec::named("radix").unwrap();
    for (placement, eviction) in [
        (PlacementSpec::Sequential, EvictionSpec::Lru(Default::default())),
        (PlacementSpec::SetAssociative { ways: 16 }, EvictionSpec::Lru(Default::default())),
        (PlacementSpec::Iceberg(IcebergSpec::default()), EvictionSpec::HorizonLru(Default::default())),
    ] {
        let frames = (tables + 400).next_multiple_of(64);
        let os = OsSpec { eviction, page_table: radix, ..OsSpec::simple(frames << 12, placement) };
        let map = CpuSpec { os: OsSpec { page_table: Default::default(), ..os.clone() }, tlb: vec![level(64, 4)], ..spec() };
        let mut m = CpuMachine::new(&CpuSpec { os, ..map.clone() });
        let mut without = CpuMachine::new(&map);
        let batch = Batch::new(refs.clone(), 0);
        m.process(&batch).unwrap();
        without.process(&batch).unwrap();
        let (s, w) = (m.stats(), without.stats());
        assert_eq!(s.os.page_table_frames, tables, "{placement:?}");
        let pinned = (0..m.os.frames().capacity()).filter(|&f| m.os.frames().is_pinned(f)).count() as u64;
        assert_eq!(pinned, tables, "{placement:?}: every table is still in memory");
        assert!(s.os.swap_ins > w.os.swap_ins, "{placement:?}: tables leave data fewer frames: {} against {}", s.os.swap_ins, w.os.swap_ins);
        assert_eq!(s.walker.entries[0], s.os.walks, "{placement:?}");
    }
}

/// With EMT's walk caches, each 4 KiB walk over 4-level tables probes the PD entries' cache
/// first, and each level's misses probe the level above: the PT entry always goes to memory,
/// each upper entry when its cache and every deeper one missed.
#[test]
fn walk_caches_serve_the_upper_levels_of_radix_walks() {
    let refs = sparse(&mixed_refs(30_000, 900.0, 0x9c));
    let radix = crate::mmu::PageTableSpec::named("radix").unwrap();
    let spec = CpuSpec {
        os: OsSpec { page_table: radix, ..OsSpec::simple(1 << 30, PlacementSpec::Sequential) },
        tlb: vec![level(64, 4)],
        pwc: Some(crate::mmu::pwc::PwcSpec::default()),
        ..spec()
    };
    let mut m = CpuMachine::new(&spec);
    m.process(&Batch::new(refs, 0)).unwrap();
    let s = m.stats();
    let (w, walks) = (&s.walker, s.os.walks);
    let [pml4, pdpt, pd] = [w.pwc[0], w.pwc[1], w.pwc[2]];
    assert_eq!(w.entries[..4], [walks; 4]);
    assert_eq!((pd.hits + pd.misses, pdpt.hits + pdpt.misses, pml4.hits + pml4.misses), (walks, pd.misses, pdpt.misses));
    assert_eq!(w.memory_reads[..4], [walks, pd.misses, pdpt.misses, pml4.misses]);
    // 64 regions of 1 GiB over 900 pages: the 32-entry PD cache misses often, the PML4's
    // two entries hold the one 512 GiB region nearly always.
    assert!(pd.hits > 0 && pd.misses > 0 && pml4.hits > pml4.misses, "{:?}", w.pwc);
}

/// A timed machine over radix tables with walk caches simulates what the untimed one does,
/// takes neither the express path nor the second core, and accounts for every reference and
/// every walk: a TLB access and an L1 access per page translated, each walk's memory reads
/// entering the caches at the L2.
#[test]
fn a_timed_machine_accounts_for_every_reference_and_walk() {
    let refs = sparse(&mixed_refs(30_000, 900.0, 0x71));
    let radix = crate::mmu::PageTableSpec::named("radix").unwrap();
    let untimed = CpuSpec {
        os: OsSpec { page_table: radix, ..OsSpec::simple(1 << 30, PlacementSpec::Sequential) },
        tlb: vec![level(64, 4), LevelGeometry { name: "L2".into(), ..level(256, 8) }],
        pwc: Some(crate::mmu::pwc::PwcSpec::default()),
        ..spec()
    };
    let timed = CpuSpec { timing: Some(timing::TimingSpec::default()), ..untimed.clone() };
    let (mut a, mut b) = (CpuMachine::new(&untimed), CpuMachine::new(&timed));
    assert!(!matches!(b.loop_path(), LoopPath::Express { .. }));
    for chunk in refs.chunks(6000) {
        let batch = Batch::new(chunk.to_vec(), 3 * chunk.len() as u64);
        a.process(&batch).unwrap();
        b.process_on_two_cores(&batch).unwrap();
    }
    let (a, b) = (a.stats(), b.stats());
    assert_eq!((&a.levels, &a.os, &a.walker), (&b.levels, &b.os, &b.walker));
    assert!(b.loops.iter().all(|u| u.second_core == SecondCore::Timing), "{:?}", b.loops);
    let t = b.timing.expect("timed");
    let pages = b.counters.refs + (b.levels[0].counters.accesses - b.counters.refs);
    assert_eq!(t.tlb_cycles, pages as f64);
    let l1 = &t.caches[0];
    assert_eq!(l1.data.hits + l1.data.misses, pages);
    assert_eq!(l1.walk.hits + l1.walk.misses, 0, "walk reads enter at the L2");
    let walk_reads: u64 = b.walker.memory_reads.iter().sum();
    assert_eq!((t.caches[1].walk.hits + t.caches[1].walk.misses, t.walks), (walk_reads, b.os.walks));
    assert!(t.mean_walk_cycles.is_some_and(|c| c > 16.0) && t.ipc.is_some_and(|ipc| ipc > 0.0 && ipc < 2.0), "{t:?}");
}

/// A timed machine whose cycle model replays each batch's accesses on a second core
/// (`Machine::process_on_two_cores`) gives, after every batch and with sequential batches
/// mixed in, the statistics of the same machine simulated in sequence: over every driver,
/// with walk caches or without, with eviction (and the swap cache's copies) or without.
#[test]
fn replaying_the_cycle_model_on_a_second_core_changes_no_statistic() {
    let refs = sparse(&mixed_refs(30_000, 900.0, 0x7173));
    let drivers = [crate::mmu::PageTableSpec::named("radix").unwrap(), crate::mmu::PageTableSpec::default()].into_iter().chain(other_drivers());
    let mut cases = 0;
    for (d, driver) in drivers.enumerate() {
        for evict in [false, true] {
            let mut os = OsSpec { page_table: driver, ..OsSpec::simple(if evict { 8 << 20 } else { 1 << 30 }, PlacementSpec::Sequential) };
            if evict {
                os.eviction = EvictionSpec::Lru(Default::default());
                (os.swap_cache, os.swap_cache_cow) = (true, true);
            }
            let spec = CpuSpec { os, tlb: vec![level(64, 4)], pwc: (d % 2 == 0).then(Default::default), timing: Some(timing::TimingSpec::default()), ..spec() };
            let case = format!("{driver:?}, eviction {evict}");
            let s = same_on_two_cores(&spec, &refs, true, &case);
            let t = s.timing.expect("timed");
            // `map` walks read nothing: no walk is timed.
            assert!((t.walks > 1000) == (driver.name() != "map") && t.caches[2].data.misses > 0, "{case}: {t:?}");
            if evict {
                assert!(s.os.swap_outs > 100, "{case}: {:?}", s.os);
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 14);
}

/// The drivers other than radix, as configurations write them.
fn other_drivers() -> Vec<crate::mmu::PageTableSpec> {
    let table = |json: serde_json::Value| serde_json::from_value::<crate::mmu::PageTableSpec>(json).unwrap();
    vec![
        table(serde_json::json!({ "kind": "fpt", "mode": "l3l2" })),
        table(serde_json::json!({ "kind": "fpt", "mode": "l4l3" })),
        table(serde_json::json!({ "kind": "fpt" })),
        table(serde_json::json!({ "kind": "ecpt" })),
        table(serde_json::json!({ "kind": "ecpt", "probe": "correct", "initial_clusters": 64 })),
    ]
}

/// A machine over FPT or ECPT simulates what the same machine over `map` does (walks find
/// the same pages), while its walks read what the format reads and its tables take frames.
#[test]
fn fpt_and_ecpt_machines_walk_the_pages_map_walks() {
    let refs = sparse(&mixed_refs(30_000, 900.0, 0xf97));
    let map = CpuSpec { os: OsSpec::simple(1 << 30, PlacementSpec::Sequential), tlb: vec![level(64, 4)], pwc: Some(Default::default()), ..spec() };
    let mut a = CpuMachine::new(&map);
    a.process(&Batch::new(refs.clone(), 0)).unwrap();
    let a = a.stats();
    for driver in other_drivers() {
        let mut b = CpuMachine::new(&CpuSpec { os: OsSpec { page_table: driver, ..map.os.clone() }, ..map.clone() });
        b.process(&Batch::new(refs.clone(), 0)).unwrap();
        let b = b.stats();
        assert_eq!((&a.levels, a.os.walks, a.os.page_faults), (&b.levels, b.os.walks, b.os.page_faults), "{driver:?}");
        assert!(b.os.page_table_frames > 0, "{driver:?}");
        let reads: u64 = b.walker.entries.iter().sum();
        match driver.name() {
            // One read per node: 2 or 3 per 4 KiB walk.
            "fpt" => assert!(reads >= 2 * b.os.walks && reads <= 3 * b.os.walks, "{driver:?}: {reads}"),
            _ => {
                assert_eq!(b.page_table["walks"], b.os.walks, "{driver:?}");
                assert_eq!(b.page_table["table_pages"], b.os.page_table_frames, "{driver:?}");
                assert_eq!(b.walker.pwc.iter().map(|l| l.hits + l.misses).sum::<u64>(), 0, "ECPT walks pass the PWC by");
            }
        }
    }
}

/// Under memory pressure and every kind of placement, FPT and ECPT tables stay pinned while
/// data pages come and go (ECPT removes and reinserts their entries, resizes its ways and
/// frees the old tables' frames), and every page walked is found. FPT's 2 MiB nodes in a
/// memory of 8 MiB leave some sets or buckets of the restricted placements nothing but
/// tables: the run ends with the error that says so.
#[test]
fn fpt_and_ecpt_tables_live_with_eviction() {
    let refs = sparse(&mixed_refs(40_000, 900.0, 0xbee6));
    for driver in other_drivers() {
        for (placement, eviction) in [
            (PlacementSpec::Sequential, EvictionSpec::Lru(Default::default())),
            (PlacementSpec::Random, EvictionSpec::Lru(Default::default())),
            (PlacementSpec::SetAssociative { ways: 16 }, EvictionSpec::Lru(Default::default())),
            (PlacementSpec::Iceberg(IcebergSpec::default()), EvictionSpec::HorizonLru(Default::default())),
        ] {
            let os = OsSpec { eviction, page_table: driver, ..OsSpec::simple(8 << 20, placement) };
            let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![level(64, 4)], ..spec() });
            let restricted = !matches!(placement, PlacementSpec::Sequential | PlacementSpec::Random);
            if let Err(e) = m.process(&Batch::new(refs.clone(), 0)) {
                assert!(driver.name() == "fpt" && restricted, "{driver:?} {placement:?}: {e}");
                assert!(e.to_string().contains("holds a page-table page"), "{e}");
                continue;
            }
            let s = m.stats();
            assert!(s.os.evictions > 0, "{driver:?} {placement:?}: under pressure");
            let pinned = (0..m.os.frames().capacity()).filter(|&f| m.os.frames().is_pinned(f)).count() as u64;
            assert_eq!(pinned, s.os.page_table_frames, "{driver:?} {placement:?}");
            if driver.name() == "ecpt" {
                assert_eq!(s.page_table["table_pages"], s.os.page_table_frames, "{driver:?} {placement:?}");
            }
        }
    }
}

/// Page tables that outgrow the machine's memory end the run with the OS's error, not a
/// panic: ECPT's first tables alone take 960 pages (3.75 MiB), more than 2 MiB of memory.
#[test]
fn tables_larger_than_memory_end_the_run_with_an_error() {
    let refs = sparse(&mixed_refs(1000, 100.0, 0x1e55));
    for (driver, eviction) in [("ecpt", EvictionSpec::None(Default::default())), ("ecpt", EvictionSpec::Lru(Default::default())), ("radix", EvictionSpec::None(Default::default()))] {
        let os = OsSpec { eviction, page_table: crate::mmu::PageTableSpec::named(driver).unwrap(), ..OsSpec::simple(if driver == "radix" { 16 << 12 } else { 2 << 20 }, PlacementSpec::Sequential) };
        let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![level(64, 4)], ..spec() });
        let e = m.process(&Batch::new(refs.clone(), 0)).unwrap_err().to_string();
        assert!(e.contains("out of physical memory"), "{driver}: {e}");
    }
}

/// An FPT node that finds no free 2 MiB block falls back to plain tables, counted, and its
/// walks read one entry more: on a memory of 600 frames the root takes the only block (frames
/// 0 to 511), so the PD+PT node of the first page falls back to a plain PD and PT.
#[test]
fn an_fpt_node_without_a_free_block_falls_back_to_plain_tables() {
    let fpt = serde_json::from_value::<crate::mmu::PageTableSpec>(serde_json::json!({ "kind": "fpt" })).unwrap();
    let os = OsSpec { page_table: fpt, ..OsSpec::simple(600 << 12, PlacementSpec::Sequential) };
    let mut m = CpuMachine::new(&CpuSpec { os, tlb: vec![level(64, 4)], ..spec() });
    let refs: Vec<MemRef> = (0..8).map(|i| MemRef { asid: 0, vaddr: 0x7f00_0000_0000 + i * 4096, size: 8, kind: AccessKind::Load }).collect();
    m.process(&Batch::new(refs, 0)).unwrap();
    let s = m.stats();
    assert_eq!(s.page_table["flattened_nodes"], 1);
    assert_eq!(s.page_table["fallbacks"], 1);
    assert_eq!(s.page_table["plain_tables"], 2);
    assert_eq!(s.os.page_table_frames, 512 + 2);
    assert!((0..512).all(|f| !m.os.frames().is_free(f)), "the block is the lowest aligned run of free frames");
    // Root (flattened: resolves the PDPT's level), then the plain PD and PT.
    assert_eq!(s.walker.entries[..3], [s.os.walks; 3]);
    assert_eq!(s.walker.entries[3], 0);
}

/// Under transparent huge pages, no TLB holds a translation the OS no longer has: after
/// every batch (khugepaged runs between batches, collapsing ranges of base pages that faults
/// left while huge faults were off), each valid entry of every level is the OS's mapping of
/// its page. With a level of 2 MiB arrays and with 4 KiB arrays only (huge pages held as
/// splinters), and at least one collapse on each.
#[test]
fn thp_collapses_leave_no_stale_tlb_entry() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let with_huge = level_with_huge_array();
    for tlb in [vec![level(16, 4), with_huge], vec![level(16, 4)]] {
        let os = OsSpec {
            thp: crate::os::Thp::Always,
            khugepaged: crate::os::KhugepagedSpec { period: 200, pages_to_scan: 1024, max_ptes_none: 400 },
            page_table: crate::mmu::PageTableSpec::named("radix").unwrap(),
            ..OsSpec::simple(64 << 20, PlacementSpec::Sequential)
        };
        let mut m = CpuMachine::new(&CpuSpec { name: "thp".into(), seed: 2, os, tlb, mosaic: vec![], pwc: None, timing: None });
        for b in 0..40 {
            // Ranges 0 to 11 see base pages only; 12 to 15 are first touched by huge faults.
            let on = b % 4 == 3;
            m.os.set_thp_faults(on);
            let ranges = if on { 12..16u64 } else { 0..12 };
            let refs = (0..500).map(|_| MemRef::load(0x4000_0000 + (rng.random_range(ranges.clone()) << 21) + (rng.random_range(0..200u64) << 12), 8)).collect();
            m.process(&Batch::new(refs, 100)).unwrap();
            let entries: Vec<Translation> = m.tlb.as_ref().unwrap().valid_translations().collect();
            for t in entries {
                let os = m.os.mapping(t.asid, t.vpn.addr().0).expect("a TLB entry of an unmapped page");
                let inside = os.vpn.0 <= t.vpn.0 && t.vpn.0 + t.size.base_pages() <= os.vpn.0 + os.size.base_pages();
                assert!(inside && t.pfn.0 - os.pfn.0 == t.vpn.0 - os.vpn.0, "stale entry {t:?}, the OS maps {os:?}");
            }
        }
        let thp = m.stats().os.thp.unwrap();
        assert!(thp.collapses > 0 && thp.huge_faults > 0, "{thp:?}");
    }
}

/// Under transparent huge pages and exact LRU over a memory of three huge pages beside the
/// tables, sweeps over six 2 MiB ranges in turn (with an unmap now and then) evict huge
/// pages whole and bring their base pages back one at a time; after every batch no TLB
/// level holds a translation the OS no longer has.
#[test]
fn thp_evictions_leave_no_stale_tlb_entry() {
    use crate::memref::AddressSpaceEvent;
    let os = OsSpec {
        thp: crate::os::Thp::Always,
        eviction: EvictionSpec::Lru(Default::default()),
        page_table: crate::mmu::PageTableSpec::named("radix").unwrap(),
        ..OsSpec::simple(8 << 20, PlacementSpec::Sequential)
    };
    let mut m = CpuMachine::new(&CpuSpec { name: "thp".into(), seed: 2, os, tlb: vec![level(16, 4), level_with_huge_array()], mosaic: vec![], pwc: None, timing: None });
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    for b in 0..24u64 {
        let range = 0x4000_0000 + (b % 6) * (2 << 20);
        let mut batch = Batch::with_capacity(700);
        for page in 0..512 {
            batch.refs.push(MemRef::load(range + (page << 12), 8));
        }
        for _ in 0..188 {
            batch.refs.push(MemRef::load(range + (rng.random_range(0..512u64) << 12), 8));
        }
        if b % 5 == 4 {
            batch.push_event(AddressSpaceEvent::unmap(range + (rng.random_range(0..512u64) << 12), 16 << 12));
        }
        m.process_on_two_cores(&batch).unwrap();
        for t in m.tlb.as_ref().unwrap().valid_translations().collect::<Vec<_>>() {
            let os = m.os.mapping(t.asid, t.vpn.addr().0).unwrap_or_else(|| panic!("a TLB holds {t:?}, unmapped"));
            let inside = os.vpn.0 <= t.vpn.0 && t.vpn.0 + t.size.base_pages() <= os.vpn.0 + os.size.base_pages();
            assert!(inside && t.pfn.0 - os.pfn.0 == t.vpn.0 - os.vpn.0, "stale entry {t:?}, the OS maps {os:?}");
        }
    }
    let stats = m.stats();
    let thp = stats.os.thp.unwrap();
    // The first three ranges take huge pages, evicted whole by the next sweeps (whose base
    // pages then take the freed runs).
    assert!(thp.evictions >= 3 && thp.huge_faults >= 3, "{thp:?}");
    assert!(stats.os.swap_ins > 0, "{:?}", stats.os);
}

/// Address-space events: fed batches that end with an event, and carry more among their
/// references, each machine shape (THP with a 2 MiB array, where partial unmaps split huge
/// pages; the express path; Mosaic TLBs over an evicting iceberg memory; a timed machine of
/// ECPT) holds after every batch no translation the OS no longer has, in any level or Mosaic
/// TLB, and each unmapped page faults again when touched.
#[test]
fn address_space_events_leave_no_stale_tlb_entry() {
    use crate::memref::AddressSpaceEvent;
    let with_huge = level_with_huge_array();
    let thp_os = OsSpec { thp: crate::os::Thp::Always, page_table: crate::mmu::PageTableSpec::named("radix").unwrap(), ..OsSpec::simple(64 << 20, PlacementSpec::Sequential) };
    let thp = CpuSpec { name: "thp".into(), seed: 2, os: thp_os, tlb: vec![level(16, 4), with_huge], mosaic: vec![], pwc: None, timing: None };
    let express = CpuSpec { tlb: vec![level(64, 4)], ..spec() };
    let mosaic = mosaic_spec(4 << 20, EvictionSpec::HorizonLru(Default::default()), 4);
    let ecpt = OsSpec { page_table: crate::mmu::PageTableSpec::named("ecpt").unwrap(), ..OsSpec::simple(64 << 20, PlacementSpec::Random) };
    let timed = CpuSpec { os: ecpt, timing: Some(TimingSpec::default()), tlb: vec![level(64, 4)], ..spec() };
    for spec in [thp, express, mosaic, timed] {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut m = CpuMachine::new(&spec);
        let event = |rng: &mut Xoshiro256PlusPlus| {
            let (start, len) = (0x4000_0000 + (rng.random_range(0..4096u64) << 12), rng.random_range(1..700u64) << 12);
            if rng.random_bool(0.8) { AddressSpaceEvent::unmap(start, len) } else { AddressSpaceEvent::map(start, len) }
        };
        for _ in 0..60 {
            let mut batch = Batch::with_capacity(400);
            for i in 0..400 {
                if i % 150 == 149 {
                    batch.push_event(event(&mut rng));
                }
                batch.refs.push(MemRef::load(0x4000_0000 + (rng.random_range(0..4096u64) << 12), 8));
            }
            batch.push_event(event(&mut rng));
            m.process_on_two_cores(&batch).unwrap();
            for t in m.tlb.as_ref().unwrap().valid_translations().collect::<Vec<_>>() {
                let os = m.os.mapping(t.asid, t.vpn.addr().0).unwrap_or_else(|| panic!("{}: a TLB holds {t:?}, unmapped", spec.name));
                let inside = os.vpn.0 <= t.vpn.0 && t.vpn.0 + t.size.base_pages() <= os.vpn.0 + os.size.base_pages();
                assert!(inside && t.pfn.0 - os.pfn.0 == t.vpn.0 - os.vpn.0, "{}: stale entry {t:?}, the OS maps {os:?}", spec.name);
            }
            m.check_mosaic_entries().unwrap();
        }
        let stats = m.stats();
        let events = stats.os.address_space.unwrap();
        assert_eq!(events.maps + events.unmaps, 60 * 3, "{}", spec.name);
        assert!(events.pages_freed > 1000, "{}: {events:?}", spec.name);
        assert!(stats.os.page_faults > 4096, "{}: unmapped pages fault again", spec.name);
        if spec.name == "thp" {
            assert!(stats.os.thp.unwrap().splits > 0, "{:?}", stats.os.thp);
        }
    }
}
