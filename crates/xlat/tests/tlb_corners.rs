//! TLB hierarchy corners beyond `tlb_differential.rs`, against the same reference model:
//! shootdowns of whole 2 MiB and 1 GiB pages held as huge entries or splinters, random mixed
//! hierarchies (several arrays per side, size sets not nested between levels, odd geometries),
//! and counters that must not depend on the simulation path a machine takes (express, one
//! level, general) or on Mosaic TLBs riding the same OS.

mod common;

use common::tlb_ref::{RefArray, RefHierarchy};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlat::os::{EvictionSpec, OsSpec, PlacementSpec};
use xlat::sim::{CpuMachine, CpuSpec, Machine};
use xlat::tlb::{ArrayGeometry, LevelGeometry, Policy, TlbHierarchy};
use xlat::{AccessKind, Asid, Batch, MemRef, PageSize, Pfn, Translation, Vpn};

const K4: PageSize = PageSize::Size4K;
const M2: PageSize = PageSize::Size2M;
const G1: PageSize = PageSize::Size1G;
const POLICIES: [Policy; 4] = [Policy::Lru, Policy::TreePlru, Policy::Fifo, Policy::Random];

fn g(entries: usize, ways: usize, policy: Policy, sizes: &[PageSize]) -> ArrayGeometry {
    ArrayGeometry { entries, ways, policy, page_sizes: sizes.to_vec() }
}
fn level(name: &str, arrays: Vec<ArrayGeometry>, instr: Vec<ArrayGeometry>, inclusive: bool) -> LevelGeometry {
    LevelGeometry { name: name.to_string(), arrays, instr_arrays: instr, inclusive }
}

/// The sum of `count` over every array of every side of every level of `reference`: what a
/// shootdown removes there.
fn over_arrays(reference: &mut RefHierarchy, mut count: impl FnMut(&mut RefArray) -> usize) -> usize {
    let mut total = 0;
    for level in &mut reference.levels {
        for side in std::iter::once(&mut level.data).chain(level.instr.as_mut()) {
            total += side.arrays.iter_mut().map(&mut count).sum::<usize>();
        }
    }
    total
}

/// Pages of `size` everywhere.
fn walk_all(size: PageSize) -> impl Fn(Asid, u64) -> Translation {
    move |asid, va| {
        let span = size.base_pages();
        let vpn = (va >> size.shift()) * span;
        Translation { asid, vpn: Vpn(vpn), pfn: Pfn((vpn + 7 * span * (asid as u64 + 1)) % (1 << 30)), size }
    }
}

fn shapes(policy: Policy, inclusive: bool) -> Vec<Vec<LevelGeometry>> {
    vec![
        vec![
            level("L1", vec![g(16, 4, policy, &[K4])], vec![g(8, 2, policy, &[K4])], false),
            level("L2", vec![g(64, 8, policy, &[K4]), g(16, 4, policy, &[M2])], vec![], inclusive),
            level("L3", vec![g(96, 12, policy, &[K4, M2, G1])], vec![], inclusive),
        ],
        vec![
            level("L1", vec![g(8, 2, policy, &[K4, M2, G1])], vec![g(4, 4, policy, &[K4, G1])], false),
            level("L2", vec![g(32, 4, policy, &[M2, K4, G1])], vec![], inclusive),
        ],
        vec![
            level("L1", vec![g(4, 4, policy, &[K4]), g(4, 2, policy, &[M2]), g(2, 2, policy, &[G1])], vec![], false),
            level("L2", vec![g(12, 3, policy, &[K4, M2]), g(3, 3, policy, &[G1])], vec![], inclusive),
        ],
    ]
}

/// Whole-page shootdowns of 1 GiB (and 2 MiB) pages in hierarchies holding them as 1 GiB
/// entries, 2 MiB splinters and 4 KiB splinters, checked against the reference (removing every
/// entry overlapping the page), then the following hits and the statistics.
#[test]
fn huge_page_shootdowns_match_reference() {
    for size in [G1, M2] {
        for policy in POLICIES {
            for inclusive in [false, true] {
                for (si, levels) in shapes(policy, inclusive).into_iter().enumerate() {
                    let walk = walk_all(size);
                    let mut model = TlbHierarchy::new(&levels, 5);
                    let mut reference = RefHierarchy::new(&levels, 5);
                    let mut rng = Xoshiro256PlusPlus::seed_from_u64(si as u64 * 7 + inclusive as u64);
                    for i in 0..4000 {
                        let asid = rng.random_range(0..2u16);
                        let region = rng.random_range(0..4u64);
                        let va = (region << size.shift()) | (rng.random_range(0..64u64) << 12) | rng.random_range(0..4096u64);
                        let ctx = format!("{size:?} {policy:?} incl {inclusive} shape {si} op {i}");
                        if rng.random_bool(0.04) {
                            let page = walk(asid, va);
                            let expected = over_arrays(&mut reference, |a| a.invalidate_overlapping(&page));
                            assert_eq!(model.invalidate(asid, page.vpn, page.size), expected, "shootdown {ctx}");
                        } else {
                            let kind = AccessKind::ALL[rng.random_range(0..3)];
                            let m = model.access(asid, va, kind, || Ok::<_, ()>(walk(asid, va))).unwrap();
                            let r = reference.access(asid, va, kind, || walk(asid, va));
                            assert_eq!(m, r, "hit level {ctx}");
                        }
                        if i % 97 == 0 {
                            assert_eq!(model.stats(), reference.stats(), "stats {ctx}");
                        }
                    }
                    assert_eq!(model.stats(), reference.stats(), "final stats");
                }
            }
        }
    }
}

fn l(name: &str, entries: usize, ways: usize, sizes: &[PageSize]) -> LevelGeometry {
    level(name, vec![g(entries, ways, Policy::Lru, sizes)], vec![], false)
}

fn refs(n: usize, pages: u64, page_shift: u32, seed: u64) -> Vec<MemRef> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut page = 0;
    (0..n)
        .map(|_| {
            if rng.random_bool(0.4) {
                page = rng.random_range(0..pages);
            }
            let off = if rng.random_bool(0.05) { 4090 } else { rng.random_range(0..4000u64) };
            let sub = rng.random_range(0..4u64) << 12;
            let kind = AccessKind::ALL[rng.random_range(0..3)];
            MemRef { vaddr: (page << page_shift) | sub | off, asid: rng.random_range(0..2), size: 8, kind }
        })
        .collect()
}

/// The first level's counters do not depend on a non-inclusive level below it when the OS
/// sees every reference (recency on access): a one-level machine (per-reference express forms
/// or the express path) and a two-level one (general path) must count the same at L1.
#[test]
fn first_level_counters_do_not_depend_on_the_path() {
    for (page_size, memory_pages) in [(K4, 48u64), (M2, 6)] {
        for eviction in [EvictionSpec::default(), EvictionSpec::Lru(Default::default())] {
            for split in [false, true] {
                let instr = if split { vec![g(8, 2, Policy::Lru, &[page_size])] } else { vec![] };
                let l1 = level("L1", vec![g(16, 4, Policy::Lru, &[page_size])], instr, false);
                let memory = if eviction == EvictionSpec::default() { 1 << 34 } else { memory_pages * page_size.bytes() };
                let os = OsSpec { eviction, page_size, ..OsSpec::simple(memory, PlacementSpec::Random) };
                let stream = refs(30_000, 64, page_size.shift(), 3);
                let mut rows = Vec::new();
                for tlb in [vec![l1.clone()], vec![l1.clone(), l("L2", 64, 4, &[page_size])], vec![l1.clone(), l("L2", 60, 5, &[page_size])]] {
                    let mut m = CpuMachine::new(&CpuSpec { name: "m".into(), seed: 2, os: os.clone(), tlb, mosaic: vec![], pwc: None, timing: None });
                    for chunk in stream.chunks(1000) {
                        m.process(&Batch::new(chunk.to_vec(), 0)).unwrap();
                    }
                    let s = m.stats();
                    let l1_rows: Vec<_> = s.levels.iter().filter(|r| r.level == "L1").cloned().collect();
                    rows.push((l1_rows, s.os.page_faults));
                }
                assert_eq!(rows[0], rows[1], "{page_size:?} {eviction:?} split {split}");
                assert_eq!(rows[0], rows[2], "{page_size:?} {eviction:?} split {split}");
            }
        }
    }
}

fn mixed_walk(asid: Asid, va: u64) -> Translation {
    let h = |x: u64| x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ u64::from(asid);
    let size = if h(va >> 30) % 3 == 0 {
        G1
    } else if h(va >> 21) % 2 == 0 {
        M2
    } else {
        K4
    };
    let span = size.base_pages();
    let vpn = (va >> size.shift()) * span;
    Translation { asid, vpn: Vpn(vpn), pfn: Pfn((h(vpn) % (1 << 20)) * span), size }
}

fn random_side(rng: &mut Xoshiro256PlusPlus) -> Vec<ArrayGeometry> {
    let subsets: [&[&[PageSize]]; 6] = [
        &[&[K4]],
        &[&[K4, M2]],
        &[&[K4, M2, G1]],
        &[&[K4], &[M2], &[G1]],
        &[&[M2], &[K4, G1]],
        &[&[K4, G1], &[M2]],
    ];
    let pick = subsets[rng.random_range(0..subsets.len())];
    pick.iter()
        .map(|sizes| {
            let ways = [1, 2, 3, 4, 8, 12, 16, 33][rng.random_range(0..8)];
            let sets = [1, 2, 3, 4, 5, 8][rng.random_range(0..6)];
            let policy = POLICIES[rng.random_range(0..4)];
            g(ways * sets, ways, policy, sizes)
        })
        .collect()
}

/// Random hierarchies of arrays of every size mix (several arrays per side, sizes not nested
/// between levels), every policy, inclusive levels, a page table mixing 4 KiB, 2 MiB and
/// 1 GiB pages, and shootdowns of single addresses and of whole pages of every size.
#[test]
fn random_mixed_hierarchies_match_reference() {
    for case in 0..300u64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(case);
        let depth = rng.random_range(1..=3);
        let levels: Vec<LevelGeometry> = (0..depth)
            .map(|i| {
                let instr = if rng.random_bool(0.5) { random_side(&mut rng) } else { vec![] };
                level(&format!("L{i}"), random_side(&mut rng), instr, rng.random_bool(0.5))
            })
            .collect();
        let mut model = TlbHierarchy::new(&levels, case);
        let mut reference = RefHierarchy::new(&levels, case);
        let mut page = 0u64;
        for i in 0..1500 {
            let asid = rng.random_range(0..2u16);
            if rng.random_bool(0.5) {
                page = rng.random_range(0..6u64) << 18 | rng.random_range(0..3u64) << 9 | rng.random_range(0..6u64);
            }
            let va = page << 12 | rng.random_range(0..4096u64);
            let ctx = || format!("case {case} op {i} {levels:?}");
            let r = rng.random_range(0..100);
            if r < 3 {
                let expected = over_arrays(&mut reference, |a| a.invalidate(asid, va));
                assert_eq!(model.invalidate(asid, Vpn(va >> 12), K4), expected, "4K shootdown {}", ctx());
            } else if r < 6 {
                let t = mixed_walk(asid, va);
                let expected = over_arrays(&mut reference, |a| a.invalidate_overlapping(&t));
                assert_eq!(model.invalidate(asid, t.vpn, t.size), expected, "page shootdown {}", ctx());
            } else {
                let kind = AccessKind::ALL[rng.random_range(0..3)];
                let m = model.access(asid, va, kind, || Ok::<_, ()>(mixed_walk(asid, va))).unwrap();
                let rf = reference.access(asid, va, kind, || mixed_walk(asid, va));
                assert_eq!(m, rf, "hit level {}", ctx());
            }
            if i % 50 == 0 {
                assert_eq!(model.stats(), reference.stats(), "stats {}", ctx());
            }
        }
        assert_eq!(model.stats(), reference.stats(), "final stats case {case}");
    }
}

/// Mosaic TLBs riding the OS change nothing the OS does, so the conventional TLB's rows
/// must be the same with and without them, whichever loop each machine takes.
#[test]
fn conventional_rows_do_not_depend_on_mosaic_tlbs() {
    use xlat::os::iceberg::IcebergSpec;
    use xlat::os::Recency;
    use xlat::sim::MosaicSpec;
    use xlat::tlb::MosaicGeometry;
    let stream = refs(30_000, 600, 12, 11);
    let lru = |e, w| g(e, w, Policy::Lru, &[K4]);
    let tlbs = vec![
        vec![level("L1", vec![lru(64, 4)], vec![], false)],
        vec![level("L1", vec![lru(32, 4)], vec![lru(16, 2)], false)],
        vec![level("L1", vec![lru(32, 4)], vec![g(12, 3, Policy::Fifo, &[K4])], false)],
        vec![level("L1", vec![lru(16, 4)], vec![lru(8, 8)], false), level("L2", vec![lru(128, 8)], vec![], true)],
        vec![level("L1", vec![g(24, 3, Policy::TreePlru, &[K4])], vec![], false)],
    ];
    for recency in [Recency::Access, Recency::Fill] {
        for eviction in [EvictionSpec::default(), EvictionSpec::HorizonLru(Default::default())] {
            for tlb in &tlbs {
                let memory = if eviction == EvictionSpec::default() { 1 << 30 } else { 2 * 64 * 4096 * 3 };
                let os = OsSpec { eviction, recency, ..OsSpec::simple(memory, PlacementSpec::Iceberg(IcebergSpec::default())) };
                let geometry = MosaicGeometry { entries: 64, ways: 4, policy: Policy::Lru, arity: 4 };
                let with = CpuSpec { name: "m".into(), seed: 3, os: os.clone(), tlb: tlb.clone(), mosaic: vec![MosaicSpec { name: "mosaic-4".into(), geometry }], pwc: None, timing: None };
                let without = CpuSpec { mosaic: vec![], ..with.clone() };
                let [a, b] = [with, without].map(|spec| {
                    let mut m = CpuMachine::new(&spec);
                    for chunk in stream.chunks(777) {
                        m.process(&Batch::new(chunk.to_vec(), 0)).unwrap();
                    }
                    let s = m.stats();
                    (s.levels, s.os.page_faults, s.os.swap_outs)
                });
                assert_eq!(a, b, "{recency:?} {eviction:?} {tlb:?}");
            }
        }
    }
}

/// A walker over pages of one size everywhere ([`walk_all`]), for the express path.
struct PagesOf(PageSize);

impl xlat::tlb::Walker for PagesOf {
    type Error = ();
    fn walk(&mut self, asid: Asid, vaddr: u64) -> Result<Pfn, ()> {
        Ok(walk_all(self.0)(asid, vaddr).pfn)
    }
    fn prefetch(&self, _: Asid, _: u64) {}
}

/// The express path agrees with the general path at the top of the address space (references
/// wrapping past 2^64) and with the largest ASIDs.
#[test]
fn express_at_address_space_edges() {
    let levels = vec![
        level("L1", vec![g(16, 4, Policy::Lru, &[K4])], vec![g(8, 2, Policy::Lru, &[K4])], false),
        level("L2", vec![g(64, 8, Policy::Lru, &[K4])], vec![], false),
    ];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let top = u64::MAX >> 12;
    let stream: Vec<MemRef> = (0..5000)
        .map(|_| {
            let page = if rng.random_bool(0.5) { top - rng.random_range(0..40u64) } else { rng.random_range(0..40u64) };
            let off = if rng.random_bool(0.2) { 4090 } else { rng.random_range(0..4000u64) };
            let asid = [0u16, 1, u16::MAX, u16::MAX - 1][rng.random_range(0..4)];
            MemRef { vaddr: page << 12 | off, asid, size: 8, kind: AccessKind::ALL[rng.random_range(0..3)] }
        })
        .collect();
    check_express_4way(&levels, K4, &stream, 100);
}

/// The skylake-like data side over an OS of 1 GiB pages takes the express path (its 1 GiB
/// arrays are of a specialized shape): it must agree with the general path and the reference.
#[test]
fn express_with_1g_pages() {
    let lru = |e, w, s: &[PageSize]| g(e, w, Policy::Lru, s);
    let levels = vec![
        level("L1", vec![lru(64, 4, &[K4]), lru(32, 4, &[M2]), lru(4, 4, &[G1])], vec![], false),
        level("L2", vec![lru(1536, 12, &[K4, M2]), lru(16, 4, &[G1])], vec![], false),
    ];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let stream: Vec<MemRef> = (0..20000)
        .map(|_| {
            let gpage = rng.random_range(0..40u64);
            let off = rng.random_range(0..(1u64 << 30) - 8);
            MemRef { vaddr: gpage << 30 | off, asid: rng.random_range(0..2), size: 8, kind: AccessKind::ALL[rng.random_range(0..2)] }
        })
        .collect();
    check_express_4way(&levels, G1, &stream, 300);
}

/// Runs `stream` over an OS of `size` pages through the express path of a hierarchy whose
/// first level is 4-way, `chunk` references a batch, and page by page through the general
/// path and the reference hierarchy: after every batch all three have the same statistics,
/// and the express and general paths the same state, entry by entry (through `Debug`).
fn check_express_4way(levels: &[LevelGeometry], size: PageSize, stream: &[MemRef], chunk: usize) {
    let mut express = TlbHierarchy::new(levels, 1);
    let mut general = TlbHierarchy::new(levels, 1);
    let mut reference = RefHierarchy::new(levels, 1);
    assert_eq!(express.express_ways(size), Some(4));
    for chunk in stream.chunks(chunk) {
        express.run_express::<4, false, _>(size, chunk, &mut PagesOf(size), 3).unwrap();
        for r in chunk {
            let mut pages = vec![r.first_vpn()];
            pages.extend(r.later_pages());
            for p in pages {
                let va = p.addr().0 | ((r.vaddr & 0xfff) * u64::from(p == r.first_vpn()));
                if general.lookup(r.asid, va, r.kind).is_none() {
                    general.fill_after_walk(&walk_all(size)(r.asid, va), va, r.kind);
                }
                reference.access(r.asid, va, r.kind, || walk_all(size)(r.asid, va));
            }
        }
        assert_eq!(general.stats(), reference.stats(), "general vs reference");
        assert_eq!(express.stats(), reference.stats(), "express vs reference");
        let (e, g) = (format!("{express:?}"), format!("{general:?}"));
        if e != g {
            let i = e.bytes().zip(g.bytes()).position(|(a, b)| a != b).unwrap_or(e.len().min(g.len()));
            let lo = i.saturating_sub(300);
            panic!("state differs at {i}:\n express ...{}\n general ...{}", &e[lo..(i + 200).min(e.len())], &g[lo..(i + 200).min(g.len())]);
        }
    }
}
