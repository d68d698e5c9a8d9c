//! Differential tests of `xlat::tlb` (arrays, replacement policies, hierarchies) against the
//! naive reference model in `common/tlb_ref.rs`: every lookup result, every returned
//! translation, every evicted entry, every invalidation count, occupancy and the final
//! statistics must agree exactly. Also property tests of invariants and adversarial streams
//! with known outcomes.

mod common;

use common::tlb_ref::{self, RefArray, RefHierarchy};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlat::memref::MemRef;
use xlat::tlb::{ArrayGeometry, ExpressRun, LevelGeometry, Policy, TlbArray, TlbHierarchy, SingleLevel, Walker};
use xlat::{AccessKind, Asid, PageSize, Pfn, Translation, Vpn};

const POLICIES: [Policy; 4] = [Policy::Lru, Policy::TreePlru, Policy::Fifo, Policy::Random];

const K4: PageSize = PageSize::Size4K;
const M2: PageSize = PageSize::Size2M;
const G1: PageSize = PageSize::Size1G;

/// (entries, ways): associativities 1, 2, 3, 4, 8, 12, 16, 33, 64 and fully associative, with
/// power-of-two and other set counts. Ways above 32 use the model's hash index.
const SHAPES: &[(usize, usize)] = &[
    (48, 1),
    (10, 1),
    (32, 2),
    (14, 2),
    (96, 3),
    (12, 3),
    (64, 4),
    (24, 4),
    (128, 8),
    (40, 8),
    (1536, 12),
    (36, 12),
    (96, 16),
    (99, 33),
    (33, 33),
    (192, 64),
    (64, 64),
    (48, 48),
    (1024, 1024),
];

fn geometry(entries: usize, ways: usize, policy: Policy, sizes: &[PageSize]) -> ArrayGeometry {
    ArrayGeometry { entries, ways, policy, page_sizes: sizes.to_vec() }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn mix(asid: Asid, n: u64, salt: u64) -> u64 {
    splitmix(splitmix(n ^ salt.rotate_left(40)) ^ u64::from(asid))
}

/// A fixed, consistent page table: one 1 GiB region in `one_in_1g` is a 1 GiB page, else one
/// 2 MiB region in `one_in_2m` is a 2 MiB page, else 4 KiB pages (0 disables a size).
#[derive(Clone, Copy, Debug)]
struct PageTable {
    one_in_2m: u64,
    one_in_1g: u64,
}

const BASE_ONLY: PageTable = PageTable { one_in_2m: 0, one_in_1g: 0 };
const SOME_2M: PageTable = PageTable { one_in_2m: 3, one_in_1g: 0 };
const SOME_2M_1G: PageTable = PageTable { one_in_2m: 3, one_in_1g: 4 };

impl PageTable {
    fn walk(&self, asid: Asid, vaddr: u64) -> Translation {
        let size = if self.one_in_1g != 0 && mix(asid, vaddr >> 30, 1) % self.one_in_1g == 0 {
            G1
        } else if self.one_in_2m != 0 && mix(asid, vaddr >> 21, 2) % self.one_in_2m == 0 {
            M2
        } else {
            K4
        };
        let span = tlb_ref::base_pages(size);
        let vpn = tlb_ref::page_number(vaddr, size) * span;
        let pfn = (mix(asid, vpn, 3) % (1 << 26)) / span * span;
        Translation { asid, vpn: Vpn(vpn), pfn: Pfn(pfn), size }
    }

    /// The walk as an array holding only `sizes` would store it (splintered to the largest
    /// held size not above the page's), or `None` if it holds no such size.
    fn walk_for(&self, sizes: &[PageSize], asid: Asid, vaddr: u64) -> Option<Translation> {
        let t = self.walk(asid, vaddr);
        let size = [G1, M2, K4].into_iter().find(|s| *s <= t.size && sizes.contains(s))?;
        Some(if size == t.size { t } else { tlb_ref::splinter(&t, vaddr, size) })
    }
}

// ------------------------------------------------------------------------------------------
// Array-level driver
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Op {
    /// Lookup, and on a miss fill the walked translation (what a TLB does).
    Access(Asid, u64),
    /// Lookup only.
    Lookup(Asid, u64),
    /// Fill only (possibly refreshing a present entry).
    Fill(Asid, u64),
    /// Invalidate every entry translating the address.
    Invalidate(Asid, u64),
}

/// Runs `ops` on the model and the reference, asserting agreement after every step. Returns,
/// for every `Access`, whether it hit.
fn run_array(g: &ArrayGeometry, seed: u64, pt: PageTable, ops: &[Op]) -> Vec<bool> {
    let mut model = TlbArray::new(g, seed);
    let mut reference = RefArray::new(g, seed);
    let mut hits = Vec::new();
    // The reference's O(ways^2) self-check is run often for small arrays only.
    let check_every = if g.entries <= 128 { 1 } else { 509 };
    for (i, &op) in ops.iter().enumerate() {
        let ctx = || format!("{g:?} seed {seed} op #{i} {op:?}");
        match op {
            Op::Access(asid, va) | Op::Lookup(asid, va) => {
                let m = model.lookup(asid, va);
                let r = reference.lookup(asid, va);
                assert_eq!(m, r, "lookup: {}", ctx());
                if let Some(t) = m {
                    assert!(tlb_ref::covers(&t, asid, va), "hit does not cover the address: {}", ctx());
                }
                if let Op::Access(..) = op {
                    hits.push(m.is_some());
                    if m.is_none() {
                        if let Some(t) = pt.walk_for(&g.page_sizes, asid, va) {
                            assert_eq!(model.fill(&t), reference.fill(&t), "evicted: {}", ctx());
                        }
                    }
                }
            }
            Op::Fill(asid, va) => {
                if let Some(t) = pt.walk_for(&g.page_sizes, asid, va) {
                    assert_eq!(model.fill(&t), reference.fill(&t), "evicted: {}", ctx());
                }
            }
            Op::Invalidate(asid, va) => {
                assert_eq!(model.invalidate(asid, va), reference.invalidate(asid, va), "invalidate: {}", ctx());
            }
        }
        assert_eq!(model.occupancy(), reference.occupancy(), "occupancy: {}", ctx());
        assert!(model.occupancy() <= g.entries, "over-full: {}", ctx());
        if i % check_every == 0 {
            reference.check_invariants();
        }
    }
    reference.check_invariants();
    hits
}

#[derive(Clone, Copy, Debug)]
enum Stream {
    /// Uniform over 64 base pages.
    Small,
    /// Uniform over 2^24 base pages (64 GiB).
    Large,
    /// 85% over a hot set of `2 * entries` pages, 15% uniform over 2^22 pages.
    Hot,
    /// Walks with locality over 16 GiB: half the references stay within 16 pages of the last.
    Local,
    /// Runs: 70% repeat the previous page (as most references of a real stream do), else a
    /// page of a hot set; exercises the hierarchy's repeated-hit shortcut.
    Runs,
}

struct StreamSpec {
    kind: Stream,
    asids: u16,
    /// Percent of operations that are invalidations.
    inval_pct: u32,
    /// Percent of operations that are bare lookups / bare fills (each).
    raw_pct: u32,
}

/// The next data page of a `kind` stream after `last`: `hot` pages form the hot set, and a
/// local walk stays near `last` with probability `stay`.
fn next_page(kind: &Stream, rng: &mut Xoshiro256PlusPlus, last: u64, hot: u64, stay: f64) -> u64 {
    match kind {
        Stream::Small => rng.random_range(0..64),
        Stream::Large => rng.random_range(0..1 << 24),
        Stream::Hot => {
            if rng.random_range(0..100) < 85 {
                rng.random_range(0..hot)
            } else {
                rng.random_range(0..1 << 22)
            }
        }
        Stream::Local => {
            if rng.random_bool(stay) {
                last.saturating_add_signed(rng.random_range(-16..=16))
            } else {
                rng.random_range(0..1 << 22)
            }
        }
        Stream::Runs => {
            if rng.random_bool(0.7) {
                last
            } else {
                rng.random_range(0..hot)
            }
        }
    }
}

fn gen_ops(spec: &StreamSpec, entries: usize, n: usize, seed: u64) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut last = 0u64;
    (0..n)
        .map(|_| {
            let page = next_page(&spec.kind, &mut rng, last, 2 * entries as u64, 0.5);
            last = page;
            let va = page << 12 | rng.random_range(0..4096);
            let asid = rng.random_range(0..spec.asids);
            let r = rng.random_range(0..100);
            if r < spec.inval_pct {
                Op::Invalidate(asid, va)
            } else if r < spec.inval_pct + spec.raw_pct {
                Op::Lookup(asid, va)
            } else if r < spec.inval_pct + 2 * spec.raw_pct {
                Op::Fill(asid, va)
            } else {
                Op::Access(asid, va)
            }
        })
        .collect()
}

const ARRAY_STREAMS: [StreamSpec; 4] = [
    StreamSpec { kind: Stream::Small, asids: 1, inval_pct: 0, raw_pct: 0 },
    StreamSpec { kind: Stream::Hot, asids: 3, inval_pct: 5, raw_pct: 5 },
    StreamSpec { kind: Stream::Large, asids: 2, inval_pct: 2, raw_pct: 5 },
    StreamSpec { kind: Stream::Local, asids: 2, inval_pct: 3, raw_pct: 3 },
];

// ------------------------------------------------------------------------------------------
// Sanity checks of the reference itself against hand-worked sequences, so that the reference
// is not merely "the same code written twice".
// ------------------------------------------------------------------------------------------

fn t4k(asid: Asid, vpn: u64) -> Translation {
    Translation { asid, vpn: Vpn(vpn), pfn: Pfn(vpn + 1000), size: K4 }
}

#[test]
fn reference_hand_worked_sequences() {
    // 4-way single set, pages 0..4 fill ways 0..3.
    let fill4 = |policy| {
        let mut r = RefArray::new(&geometry(4, 4, policy, &[K4]), 7);
        for v in 0..4 {
            assert_eq!(r.fill(&t4k(0, v)), None);
        }
        r
    };
    // LRU: touch 0 and 2, so page 1 is least recent, then page 3.
    let mut lru = fill4(Policy::Lru);
    lru.lookup(0, 0);
    lru.lookup(0, 2 << 12);
    assert_eq!(lru.fill(&t4k(0, 10)), Some(t4k(0, 1)));
    assert_eq!(lru.fill(&t4k(0, 11)), Some(t4k(0, 3)));
    // FIFO: hits do not matter; page 0 went in first.
    let mut fifo = fill4(Policy::Fifo);
    fifo.lookup(0, 0);
    assert_eq!(fifo.fill(&t4k(0, 10)), Some(t4k(0, 0)));
    assert_eq!(fifo.fill(&t4k(0, 11)), Some(t4k(0, 1)));
    // Tree-PLRU over 4 ways: after filling 0,1,2,3 in order the root points left (away from 3),
    // the left node points to way 0 (away from 1): victim way 0. Touch 0: root -> right, right
    // node points at way 2 (away from 3): victim way 2.
    let mut plru = fill4(Policy::TreePlru);
    plru.lookup(0, 0);
    assert_eq!(plru.fill(&t4k(0, 10)), Some(t4k(0, 2)));
    // Now the root points left (away from 2) and the left node at way 1 (away from 0).
    assert_eq!(plru.fill(&t4k(0, 11)), Some(t4k(0, 1)));
    // Tree-PLRU over 3 ways (tree of 4 leaves, leaf 3 absent): fill 0,1,2; root points left
    // (away from 2), left node at 0 (away from 1): victim 0. Then root points right, and the
    // right node points at absent leaf 3, so the walk takes way 2.
    let mut plru3 = RefArray::new(&geometry(3, 3, Policy::TreePlru, &[K4]), 0);
    for v in 0..3 {
        plru3.fill(&t4k(0, v));
    }
    assert_eq!(plru3.fill(&t4k(0, 10)), Some(t4k(0, 0)));
    assert_eq!(plru3.fill(&t4k(0, 11)), Some(t4k(0, 2)));
    // Invalidation frees the way; the next fill takes the lowest free way and evicts nothing.
    let mut inv = fill4(Policy::Lru);
    assert_eq!(inv.invalidate(0, 2 << 12 | 0x123), 1);
    assert_eq!(inv.fill(&t4k(0, 20)), None);
    assert_eq!(inv.occupancy(), 4);
}

// ------------------------------------------------------------------------------------------
// Array-level differential tests
// ------------------------------------------------------------------------------------------

#[test]
fn array_every_policy_and_shape_fixed_seeds() {
    for policy in POLICIES {
        for (s, &(entries, ways)) in SHAPES.iter().enumerate() {
            let g = geometry(entries, ways, policy, &[K4]);
            for (k, spec) in ARRAY_STREAMS.iter().enumerate() {
                let seed = 1000 * s as u64 + k as u64;
                let n = if entries >= 1024 { 6000 } else { 1500 };
                let ops = gen_ops(spec, entries, n, seed);
                run_array(&g, seed ^ 0xfeed, BASE_ONLY, &ops);
            }
        }
    }
}

#[test]
fn array_mixed_page_sizes_fixed_seeds() {
    let size_sets: [&[PageSize]; 5] = [&[K4, M2], &[M2, K4, G1], &[M2], &[M2, G1], &[K4, G1]];
    let shapes = [(48, 1), (96, 3), (64, 4), (1536, 12), (36, 12), (99, 33), (64, 64), (32, 32)];
    for policy in POLICIES {
        for (s, &(entries, ways)) in shapes.iter().enumerate() {
            for (z, sizes) in size_sets.iter().enumerate() {
                let g = geometry(entries, ways, policy, sizes);
                for (k, spec) in ARRAY_STREAMS[1..].iter().enumerate() {
                    let seed = 77 * s as u64 + 13 * z as u64 + k as u64;
                    let ops = gen_ops(spec, entries, 1200, seed);
                    run_array(&g, seed, SOME_2M_1G, &ops);
                }
            }
        }
    }
}

/// `ways + 1` pages that all map to one set, accessed cyclically: LRU and FIFO must miss on
/// every access after warm-up (indeed on every access). For a fully associative array this is
/// the cycle over `entries + 1` pages. The other policies are checked differentially.
#[test]
fn array_conflict_cycle_of_ways_plus_one() {
    for policy in POLICIES {
        for &(entries, ways) in SHAPES {
            let sets = (entries / ways) as u64;
            let base = 5 % sets;
            for asid in [0, 9] {
                let ops: Vec<Op> = (0..6)
                    .flat_map(|_| (0..=ways as u64).map(|k| Op::Access(asid, (base + k * sets) << 12 | 0x18)))
                    .collect();
                let hits = run_array(&geometry(entries, ways, policy, &[K4]), 3, BASE_ONLY, &ops);
                if matches!(policy, Policy::Lru | Policy::Fifo) {
                    assert!(hits.iter().all(|h| !h), "{policy:?} {entries}/{ways}: a cyclic conflict stream hit");
                }
            }
        }
    }
}

/// One hot page touched between every access of a cycle of `ways` other pages of the same set
/// (`ways + 1` pages in a `ways`-way set). LRU and tree-PLRU never evict the most recently used
/// way, so the hot page hits on every access after the first (for ways >= 2), while under LRU
/// the others miss every time.
#[test]
fn array_hot_way_while_others_cycle() {
    for policy in POLICIES {
        for &(entries, ways) in SHAPES {
            let sets = (entries / ways) as u64;
            let hot = 2 % sets;
            let mut ops = Vec::new();
            for round in 0..4 {
                for k in 1..=ways as u64 {
                    ops.push(Op::Access(1, hot << 12));
                    ops.push(Op::Access(1, (hot + k * sets) << 12 | round));
                }
            }
            let hits = run_array(&geometry(entries, ways, policy, &[K4]), 11, BASE_ONLY, &ops);
            if ways >= 2 && matches!(policy, Policy::Lru | Policy::TreePlru) {
                let hot_hits: Vec<bool> = hits.iter().step_by(2).copied().collect();
                assert!(
                    !hot_hits[0] && hot_hits[1..].iter().all(|&h| h),
                    "{policy:?} {entries}/{ways}: hot page evicted"
                );
            }
            if ways >= 2 && policy == Policy::Lru {
                assert!(hits.iter().skip(1).step_by(2).all(|&h| !h), "{policy:?} {entries}/{ways}: cold page hit");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Array-level property tests
// ------------------------------------------------------------------------------------------

const PROP_WAYS: [usize; 11] = [1, 2, 3, 4, 5, 8, 12, 16, 33, 40, 64];

fn policy_strategy() -> impl Strategy<Value = Policy> {
    prop_oneof![Just(Policy::Lru), Just(Policy::TreePlru), Just(Policy::Fifo), Just(Policy::Random)]
}

fn sizes_strategy() -> impl Strategy<Value = (Vec<PageSize>, PageTable)> {
    prop_oneof![
        3 => Just((vec![K4], BASE_ONLY)),
        2 => Just((vec![K4, M2], SOME_2M)),
        1 => Just((vec![K4, M2, G1], SOME_2M_1G)),
        1 => Just((vec![M2], SOME_2M_1G)),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let page = prop_oneof![4 => 0u64..48, 2 => 0u64..4096, 1 => 0u64..(1 << 22)];
    (0u8..10, 0u16..3, page, 0u64..4096).prop_map(|(k, asid, page, off)| {
        let va = page << 12 | off;
        match k {
            0 => Op::Invalidate(asid, va),
            1 => Op::Lookup(asid, va),
            2 => Op::Fill(asid, va),
            _ => Op::Access(asid, va),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random geometry (including non-power-of-two set counts and hash-indexed ways), random
    /// policy, seed, page-size mix and operation stream: exact agreement at every step.
    #[test]
    fn prop_array_matches_reference(
        policy in policy_strategy(),
        ways_i in 0..PROP_WAYS.len(),
        sets in 1usize..=7,
        (sizes, pt) in sizes_strategy(),
        seed in any::<u64>(),
        ops in proptest::collection::vec(op_strategy(), 1..400),
    ) {
        let ways = PROP_WAYS[ways_i];
        run_array(&geometry(ways * sets, ways, policy, &sizes), seed, pt, &ops);
    }

    /// Invariants checked on the model alone: never more valid entries than `entries`; a fill
    /// after a lookup miss makes the next lookup of that address hit with that translation; an
    /// invalidation leaves no entry for the address (so no set held a duplicate tag); a refill
    /// of a present entry evicts nothing and does not change occupancy.
    #[test]
    fn prop_array_invariants(
        policy in policy_strategy(),
        ways_i in 0..PROP_WAYS.len(),
        sets in 1usize..=5,
        (sizes, pt) in sizes_strategy(),
        seed in any::<u64>(),
        ops in proptest::collection::vec(op_strategy(), 1..300),
    ) {
        let ways = PROP_WAYS[ways_i];
        let g = geometry(ways * sets, ways, policy, &sizes);
        let mut model = TlbArray::new(&g, seed);
        for op in ops {
            match op {
                Op::Access(asid, va) | Op::Lookup(asid, va) | Op::Fill(asid, va) => {
                    let Some(t) = pt.walk_for(&sizes, asid, va) else { continue };
                    if model.lookup(asid, va).is_none() {
                        let before = model.occupancy();
                        let evicted = model.fill(&t);
                        prop_assert_eq!(model.occupancy(), before + usize::from(evicted.is_none()));
                        prop_assert_eq!(model.lookup(asid, va), Some(t));
                    } else {
                        let before = model.occupancy();
                        prop_assert_eq!(model.fill(&t), None);
                        prop_assert_eq!(model.occupancy(), before);
                    }
                }
                Op::Invalidate(asid, va) => {
                    let before = model.occupancy();
                    let removed = model.invalidate(asid, va);
                    prop_assert_eq!(model.occupancy() + removed, before);
                    prop_assert_eq!(model.lookup(asid, va), None);
                    prop_assert_eq!(model.invalidate(asid, va), 0);
                }
            }
            prop_assert!(model.occupancy() <= g.entries);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Hierarchy driver
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum HOp {
    Access(Asid, u64, AccessKind),
    /// Shoot down one address: every entry translating it, at every level.
    Shootdown(Asid, u64),
    /// Shoot down the whole page holding the address (as the page table maps it), one base
    /// page at a time, which also removes the splinters of a huge page (at most 2 MiB here).
    ShootdownPage(Asid, u64),
}

/// Runs `ops` through the model and the reference hierarchy; asserts the hit level of every
/// access, that the walk is called exactly on a full miss, every shootdown count, the stats
/// (periodically and at the end) and, if asked, the inclusion invariant after every access.
fn run_hierarchy(
    levels: &[LevelGeometry],
    seed: u64,
    walk: &dyn Fn(Asid, u64) -> Translation,
    ops: &[HOp],
    check_inclusion: bool,
) -> Vec<Option<usize>> {
    let mut model = TlbHierarchy::new(levels, seed);
    let mut reference = RefHierarchy::new(levels, seed);
    assert_eq!(model.depth(), levels.len());
    let mut results = Vec::new();
    for (i, &op) in ops.iter().enumerate() {
        let ctx = || {
            format!(
                "{} seed {seed} op #{i} {op:?}",
                levels.iter().map(|l| l.name.as_str()).collect::<Vec<_>>().join("/")
            )
        };
        match op {
            HOp::Access(asid, va, kind) => {
                let mut model_walked = false;
                let m = model
                    .access(asid, va, kind, || {
                        model_walked = true;
                        Ok::<_, ()>(walk(asid, va))
                    })
                    .unwrap();
                let mut ref_walked = false;
                let r = reference.access(asid, va, kind, || {
                    ref_walked = true;
                    walk(asid, va)
                });
                assert_eq!(m, r, "hit level: {}", ctx());
                assert_eq!(model_walked, m.is_none(), "walk iff full miss: {}", ctx());
                assert_eq!(ref_walked, r.is_none());
                results.push(m);
            }
            HOp::Shootdown(asid, va) => {
                assert_eq!(model.invalidate(asid, Vpn(va >> 12), K4), reference.invalidate(asid, va), "shootdown: {}", ctx());
            }
            HOp::ShootdownPage(asid, va) => {
                // The whole page in one call, against the reference's shootdown of every base
                // page in it (the entries covering any of them).
                let t = walk(asid, va);
                assert!(t.size <= M2, "whole-page shootdowns of 1 GiB pages are too slow");
                let pages = t.vpn.0..t.vpn.0 + tlb_ref::base_pages(t.size);
                let expected: usize = pages.map(|p| reference.invalidate(asid, p << 12)).sum();
                assert_eq!(model.invalidate(asid, t.vpn, t.size), expected, "shootdown: {}", ctx());
            }
        }
        if check_inclusion {
            if let Err(e) = reference.check_inclusion() {
                panic!("inclusion broken: {e}: {}", ctx());
            }
        }
        if i % 257 == 0 {
            assert_eq!(model.stats(), reference.stats(), "stats: {}", ctx());
            reference.check_invariants();
        }
    }
    assert_eq!(model.stats(), reference.stats(), "final stats");
    reference.check_invariants();
    results
}

fn level(name: &str, arrays: Vec<ArrayGeometry>, instr: Vec<ArrayGeometry>, inclusive: bool) -> LevelGeometry {
    LevelGeometry { name: name.to_string(), arrays, instr_arrays: instr, inclusive }
}

/// L1 data 64 entries 4-way 4 KiB + L1 instr 128 entries 8-way 4 KiB; L2 unified 1536 entries
/// 12-way holding 4 KiB and 2 MiB (2 MiB pages are splintered into L1).
fn skylake_like(policy: Policy, inclusive: bool) -> Vec<LevelGeometry> {
    vec![
        level("L1", vec![geometry(64, 4, policy, &[K4])], vec![geometry(128, 8, policy, &[K4])], false),
        level("L2", vec![geometry(1536, 12, policy, &[K4, M2])], vec![], inclusive),
    ]
}

/// Three levels: a split L1 of 4 KiB only (splinters everything), an L2 of split page-size
/// arrays (4 KiB 8-way + 2 MiB 4-way; splinters 1 GiB into 2 MiB), and an L3 holding all three
/// sizes with 32 sets of 12 ways.
fn three_level_split_sizes(policy: Policy, inclusive: bool) -> Vec<LevelGeometry> {
    vec![
        level("L1", vec![geometry(16, 4, policy, &[K4])], vec![geometry(8, 2, policy, &[K4])], false),
        level("L2", vec![geometry(64, 8, policy, &[K4]), geometry(16, 4, policy, &[M2])], vec![], inclusive),
        level("L3", vec![geometry(384, 12, policy, &[K4, M2, G1])], vec![], inclusive),
    ]
}

/// Three unified levels with non-power-of-two set counts: L1 3-way with 4 KiB + 2 MiB, L2 fully
/// associative (48 ways, so the model's hash index), L3 of 33 ways (3 sets) holding 4 KiB
/// only, so 2 MiB entries are splintered into L3 and the strict inclusion check does not apply
/// (a 2 MiB entry above cannot be covered by 4 KiB entries below); inclusive back-invalidation
/// of the splinter removes the larger entry above that contains it.
fn three_level_unified(policy: Policy, inclusive: bool) -> Vec<LevelGeometry> {
    vec![
        level("L1", vec![geometry(12, 3, policy, &[K4, M2])], vec![], false),
        level("L2", vec![geometry(48, 48, policy, &[K4, M2])], vec![], inclusive),
        level("L3", vec![geometry(99, 33, policy, &[K4])], vec![], inclusive),
    ]
}

struct HStreamSpec {
    kind: Stream,
    asids: u16,
    shootdown_pct: u32,
    ifetch_pct: u32,
}

fn gen_hops(spec: &HStreamSpec, hot_pages: u64, n: usize, whole_pages: bool, seed: u64) -> Vec<HOp> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut last = 0u64;
    (0..n)
        .map(|_| {
            let asid = rng.random_range(0..spec.asids);
            let r = rng.random_range(0..100);
            if r < spec.ifetch_pct {
                // Code: a small region far from data, with locality.
                let page = (1u64 << 30) + rng.random_range(0..hot_pages / 2 + 8);
                return HOp::Access(asid, page << 12 | rng.random_range(0..4096), AccessKind::IFetch);
            }
            let page = next_page(&spec.kind, &mut rng, last, hot_pages, 0.6);
            last = page;
            let va = page << 12 | rng.random_range(0..4096);
            if r < spec.ifetch_pct + spec.shootdown_pct {
                if whole_pages {
                    HOp::ShootdownPage(asid, va)
                } else {
                    HOp::Shootdown(asid, va)
                }
            } else {
                let kind = if rng.random_bool(0.7) { AccessKind::Load } else { AccessKind::Store };
                HOp::Access(asid, va, kind)
            }
        })
        .collect()
}

const HIER_STREAMS: [HStreamSpec; 5] = [
    HStreamSpec { kind: Stream::Small, asids: 1, shootdown_pct: 0, ifetch_pct: 20 },
    HStreamSpec { kind: Stream::Hot, asids: 2, shootdown_pct: 2, ifetch_pct: 20 },
    HStreamSpec { kind: Stream::Local, asids: 3, shootdown_pct: 1, ifetch_pct: 15 },
    HStreamSpec { kind: Stream::Large, asids: 2, shootdown_pct: 1, ifetch_pct: 10 },
    HStreamSpec { kind: Stream::Runs, asids: 1, shootdown_pct: 2, ifetch_pct: 15 },
];

fn hierarchy_matrix(shape: fn(Policy, bool) -> Vec<LevelGeometry>, hot_pages: u64, n: usize, inclusion_holds: bool) {
    for policy in POLICIES {
        for inclusive in [false, true] {
            let levels = shape(policy, inclusive);
            for (k, spec) in HIER_STREAMS.iter().enumerate() {
                for (p, pt) in [BASE_ONLY, SOME_2M, SOME_2M_1G].into_iter().enumerate() {
                    let seed = 31 * k as u64 + p as u64;
                    // Single-address shootdowns of huge pages legitimately leave splinters of
                    // other base pages above (see the reference's notes): shoot down whole pages
                    // where possible, and skip the inclusion check where not (1 GiB pages).
                    let whole_pages = pt.one_in_1g == 0 && k % 2 == 1;
                    let check =
                        inclusive && inclusion_holds && (spec.shootdown_pct == 0 || whole_pages || pt.one_in_2m == 0);
                    let ops = gen_hops(spec, hot_pages, n, whole_pages, seed);
                    run_hierarchy(&levels, seed ^ 0xabc, &|a, v| pt.walk(a, v), &ops, check);
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Hierarchy differential tests
// ------------------------------------------------------------------------------------------

#[test]
fn hierarchy_skylake_like_inclusive_and_not() {
    hierarchy_matrix(skylake_like, 3000, 2500, true);
}

#[test]
fn hierarchy_three_level_split_page_size_arrays() {
    hierarchy_matrix(three_level_split_sizes, 600, 2000, true);
}

#[test]
fn hierarchy_three_level_unified_with_splintering_into_l3() {
    hierarchy_matrix(three_level_unified, 200, 2000, false);
}

/// Inclusive L2 holding a 2 MiB page whose 4 KiB splinters sit in a 4 KiB-only L1: evicting the
/// 2 MiB entry from L2 must remove *all* its splinters from L1, not only the one covering the
/// page's first 4 KiB. (The model used to back-invalidate just the victim's first address.)
#[test]
fn inclusive_eviction_of_huge_page_removes_all_splinters_above() {
    let levels = vec![
        level("L1", vec![geometry(64, 4, Policy::Lru, &[K4])], vec![], false),
        level("L2", vec![geometry(4, 1, Policy::Lru, &[K4, M2])], vec![], true),
    ];
    // Everything is 2 MiB pages.
    let walk = |asid: Asid, va: u64| {
        let vpn = (va >> 21) << 9;
        Translation { asid, vpn: Vpn(vpn), pfn: Pfn(vpn + (1 << 20)), size: M2 }
    };
    let huge = 1u64 << 21;
    let ops = [
        HOp::Access(0, 0x0000, AccessKind::Load), // walk; L2 holds 2M page 0, L1 its splinter 0
        HOp::Access(0, 0x1000, AccessKind::Load), // L2 hit; L1 gets splinter 1
        HOp::Access(0, 0x5000, AccessKind::Load), // L2 hit; L1 gets splinter 5
        HOp::Access(0, 4 * huge, AccessKind::Load), // 2M page 4 maps to L2 set 0: evicts page 0
        HOp::Access(0, 0x1000, AccessKind::Load), // must miss everywhere
        HOp::Access(0, 0x5000, AccessKind::Load), // L2 hit again (refilled just now)
    ];
    let results = run_hierarchy(&levels, 0, &walk, &ops, true);
    assert_eq!(results, vec![None, Some(1), Some(1), None, None, Some(1)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random two- and three-level hierarchies (split or not, inclusive or not, random policy per
    /// level, page sizes per level nested so that inclusion is checkable) on random streams.
    #[test]
    fn prop_hierarchy_matches_reference(
        depth in 2usize..=3,
        policies in proptest::collection::vec(policy_strategy(), 3),
        ways in proptest::collection::vec(0..PROP_WAYS.len(), 3),
        sets in proptest::collection::vec(1usize..=6, 3),
        split in any::<bool>(),
        inclusive in proptest::collection::vec(any::<bool>(), 3),
        huge_from_level in 0usize..=3,
        seed in any::<u64>(),
        raw in proptest::collection::vec(
            (0u8..20, 0u16..2, prop_oneof![3 => 0u64..64, 1 => 0u64..(1 << 20)], 0u64..4096),
            1..300,
        ),
    ) {
        // Levels from `huge_from_level` on hold 4 KiB + 2 MiB; those above hold 4 KiB only and
        // splinter. Deeper levels hold a superset of the sizes of the levels above, so the
        // inclusion check applies.
        let levels: Vec<LevelGeometry> = (0..depth)
            .map(|i| {
                let w = PROP_WAYS[ways[i]];
                let sizes: &[PageSize] = if i >= huge_from_level { &[K4, M2] } else { &[K4] };
                let g = geometry(w * sets[i] * (i + 1), w, policies[i], sizes);
                let instr = if split && i == 0 { vec![geometry(w * sets[i], w, policies[i], sizes)] } else { vec![] };
                level(&format!("L{}", i + 1), vec![g], instr, inclusive[i] && i > 0)
            })
            .collect();
        let ops: Vec<HOp> = raw
            .into_iter()
            .map(|(k, asid, page, off)| {
                let va = page << 12 | off;
                match k {
                    0 => HOp::ShootdownPage(asid, va),
                    1..=4 => HOp::Access(asid, va, AccessKind::IFetch),
                    5..=11 => HOp::Access(asid, va, AccessKind::Load),
                    _ => HOp::Access(asid, va, AccessKind::Store),
                }
            })
            .collect();
        run_hierarchy(&levels, seed, &|a, v| SOME_2M.walk(a, v), &ops, true);
    }
}

// ------------------------------------------------------------------------------------------
// The express path (a whole batch through a single specialized LRU array)
// ------------------------------------------------------------------------------------------

/// The walker of the express tests: [`PageTable::walk`] of `table`'s pages (all of one
/// size), failing from the `fail_at`-th walk on (counting from 0) if set.
struct TestWalker {
    table: PageTable,
    walks: usize,
    fail_at: Option<usize>,
}

/// Every page 2 MiB.
const ALL_2M: PageTable = PageTable { one_in_2m: 1, one_in_1g: 0 };

impl Walker for TestWalker {
    type Error = usize;

    fn walk(&mut self, asid: Asid, vaddr: u64) -> Result<Pfn, usize> {
        self.walks += 1;
        match self.fail_at {
            Some(at) if self.walks > at => Err(self.walks - 1),
            _ => Ok(self.table.walk(asid, vaddr).pfn),
        }
    }

    fn prefetch(&self, _asid: Asid, _vaddr: u64) {}
}

/// [`TlbHierarchy::run_express`] with the associativity chosen at run time, alternating the
/// prefetching form (which must not change results) by batch parity.
fn run_express(h: &mut TlbHierarchy, ways: usize, size: PageSize, refs: &[MemRef], walker: &mut TestWalker, prefetch: bool) -> Result<ExpressRun, usize> {
    macro_rules! dispatch {
        ($($w:literal)*) => {
            match (ways, prefetch) {
                $(($w, false) => h.run_express::<$w, false, _>(size, refs, walker, 3),
                  ($w, true) => h.run_express::<$w, true, _>(size, refs, walker, 3),)*
                _ => unreachable!("not a specialized shape: {ways} ways"),
            }
        };
    }
    dispatch!(1 2 4 8 12 16)
}

/// One unsplit level of one LRU array of `ways` ways and `sets` sets holding `sizes`.
fn single_level(ways: usize, sets: usize, sizes: &[PageSize]) -> Vec<LevelGeometry> {
    vec![level("L1", vec![geometry(ways * sets, ways, Policy::Lru, sizes)], vec![], false)]
}

/// The express path agrees with the reference hierarchy (hit or miss of every page touched,
/// statistics after every batch) and leaves exactly the state the general path leaves
/// (compared through `Debug`, which shows every tag, stamp, counter and the last hit, on
/// every side of every level). The OS maps pages of `os_size` only, as the express path
/// requires.
fn check_express(levels: &[LevelGeometry], os_size: PageSize, refs: &[MemRef], batch: usize) {
    let mut express = TlbHierarchy::new(levels, 1);
    let mut general = TlbHierarchy::new(levels, 1);
    let mut reference = RefHierarchy::new(levels, 1);
    let ways = express.express_ways(os_size).expect("an express hierarchy");
    let table = if os_size == K4 { BASE_ONLY } else { ALL_2M };
    let mut walker = TestWalker { table, walks: 0, fail_at: None };
    for (b, chunk) in refs.chunks(batch).enumerate() {
        let run = run_express(&mut express, ways, os_size, chunk, &mut walker, b % 2 == 1).expect("no walk fails");
        let mut straddles = 0;
        for r in chunk {
            let (first, last) = (r.first_vpn().0, r.last_vpn().0);
            straddles += u64::from(first != last);
            for page in first..=last {
                let va = page << 12;
                let walk = || table.walk(r.asid, va);
                reference.access(r.asid, va, r.kind, walk);
                if general.lookup(r.asid, va, r.kind).is_none() {
                    general.fill_after_walk(&walk(), va, r.kind);
                }
            }
        }
        let shape = format!("{levels:?}, batch {b}");
        assert_eq!(run.straddles, straddles, "{shape}");
        assert_eq!(express.stats(), reference.stats(), "{shape}");
        assert_eq!(format!("{express:?}"), format!("{general:?}"), "{shape}");
        assert_eq!(express.express_ways(os_size), Some(ways), "still express: {shape}");
    }
    // Every miss of the last level walked.
    let last = &levels[levels.len() - 1].name;
    let walks: u64 = reference.stats().iter().filter(|row| &row.level == last).map(|row| row.counters.misses).sum();
    assert_eq!(walker.walks as u64, walks);
}

/// A stream over `pages` pages of a few ASIDs, with runs on one page (the last-hit shortcut),
/// references straddling page boundaries and every access kind.
fn express_stream(pages: u64, n: usize, seed: u64) -> Vec<MemRef> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut page = 0;
    (0..n)
        .map(|_| {
            if rng.random_bool(0.6) {
                page = rng.random_range(0..pages);
            }
            let straddle = rng.random_bool(0.1);
            let offset = if straddle { 4096 - rng.random_range(1..8) } else { rng.random_range(0..4088) };
            let kind = AccessKind::ALL[rng.random_range(0..3)];
            // Now and then a reference larger than a page, covering three or four pages.
            let size = if rng.random_bool(0.02) { 12288 } else { 8 };
            MemRef { vaddr: page << 12 | offset, asid: rng.random_range(0..3), size, kind }
        })
        .collect()
}

#[test]
fn express_matches_reference_every_shape() {
    for ways in [1, 2, 4, 8, 12, 16] {
        for sets in [1, 4, 64] {
            for sizes in [&[K4][..], &[K4, M2], &[M2]] {
                // Pages of 2 MiB span 512 base pages: spread the stream to conflict as often.
                let spread = if sizes[0] == M2 { 512 } else { 1 };
                let refs = express_stream((ways * sets) as u64 * 3 * spread, 3000, (ways * sets) as u64);
                let levels = single_level(ways, sets, sizes);
                assert_eq!(TlbHierarchy::new(&levels, 0).express_ways(G1), None, "entries of another size than the OS maps");
                check_express(&levels, sizes[0], &refs, 257);
            }
        }
    }
}

/// Levels below the first, a split first level, and arrays of other page sizes beside the
/// one the OS fills (empty, so the express path ignores them).
#[test]
fn express_matches_reference_with_levels_below_and_split_sides() {
    let lru = |entries, ways, sizes: &[PageSize]| geometry(entries, ways, Policy::Lru, sizes);
    let shapes = [
        skylake_like(Policy::Lru, false),
        vec![level("L1", vec![lru(16, 4, &[K4]), lru(8, 2, &[M2])], vec![lru(8, 8, &[K4])], true)],
        vec![
            level("L1", vec![lru(8, 2, &[K4])], vec![], false),
            level("L2", vec![lru(32, 4, &[K4]), lru(16, 16, &[G1])], vec![], false),
            level("L3", vec![lru(192, 12, &[K4, M2])], vec![], false),
        ],
        vec![level("L1", vec![lru(4, 1, &[K4])], vec![lru(16, 16, &[K4])], false), level("L2", vec![lru(64, 16, &[K4])], vec![], false)],
    ];
    for (i, levels) in shapes.iter().enumerate() {
        for pages in [40, 400, 4000] {
            check_express(levels, K4, &express_stream(pages, 6000, i as u64 ^ pages), 513);
        }
    }
    let two_mib = [level("L1", vec![lru(16, 4, &[M2])], vec![], false), level("L2", vec![lru(64, 8, &[M2, G1])], vec![], false)];
    check_express(&two_mib, M2, &express_stream(512 * 200, 4000, 9), 300);
}

#[test]
fn express_is_only_for_sides_of_one_specialized_array() {
    let lru = |entries, ways| geometry(entries, ways, Policy::Lru, &[K4]);
    let one = |arrays, instr| TlbHierarchy::new(&[level("L1", arrays, instr, false)], 0);
    assert_eq!(one(vec![lru(64, 4)], vec![]).express_ways(K4), Some(4));
    assert_eq!(one(vec![lru(48, 4)], vec![]).express_ways(K4), None, "12 sets");
    assert_eq!(one(vec![lru(64, 3)], vec![]).express_ways(K4), None, "3 ways");
    assert_eq!(one(vec![geometry(64, 4, Policy::Fifo, &[K4])], vec![]).express_ways(K4), None, "FIFO");
    assert_eq!(one(vec![lru(64, 4)], vec![lru(64, 4)]).express_ways(K4), Some(4), "split");
    assert_eq!(one(vec![lru(64, 4)], vec![lru(48, 4)]).express_ways(K4), None, "an instruction side of 12 sets");
    assert_eq!(one(vec![lru(64, 4)], vec![]).express_ways(M2), None, "no array of the OS's size");
    assert_eq!(one(vec![geometry(64, 4, Policy::Lru, &[M2])], vec![]).express_ways(K4), None, "4 KiB pages splintered");
    assert_eq!(TlbHierarchy::new(&skylake_like(Policy::Lru, false), 0).express_ways(K4), Some(4), "two levels");
    assert_eq!(TlbHierarchy::new(&skylake_like(Policy::Lru, true), 0).express_ways(K4), None, "inclusive L2");
    assert_eq!(TlbHierarchy::new(&skylake_like(Policy::TreePlru, false), 0).express_ways(K4), None, "PLRU");
    let split_l2 = [level("L1", vec![lru(64, 4)], vec![], false), level("L2", vec![lru(64, 4)], vec![lru(64, 4)], false)];
    assert_eq!(TlbHierarchy::new(&split_l2, 0).express_ways(K4), None, "split L2");
    // An array of another page size beside the one the OS fills: express while it is empty.
    let mut h = one(vec![lru(64, 4), geometry(32, 4, Policy::Lru, &[M2])], vec![]);
    assert_eq!(h.express_ways(K4), Some(4), "an empty 2 MiB array");
    let huge = Translation { asid: 0, vpn: Vpn(512), pfn: Pfn(1024), size: M2 };
    h.fill_after_walk(&huge, 2 << 20, AccessKind::Load);
    assert_eq!(h.express_ways(K4), None, "a 2 MiB entry to probe");
}

#[test]
fn express_stops_at_a_failed_walk() {
    for levels in [single_level(4, 4, &[K4]), skylake_like(Policy::Lru, false)] {
        let mut h = TlbHierarchy::new(&levels, 0);
        let refs: Vec<MemRef> = (0..10).map(|p| MemRef::load(p << 12, 8)).collect();
        let mut walker = TestWalker { table: BASE_ONLY, walks: 0, fail_at: Some(4) };
        assert_eq!(run_express(&mut h, 4, K4, &refs, &mut walker, false), Err(4));
        assert_eq!(walker.walks, 5, "no reference after the failed one is simulated");
        let first = &h.stats()[0].counters;
        assert_eq!((first.hits, first.misses), (0, 5), "the failed reference missed, as on the general path");
    }
}

/// [`TlbHierarchy::lookup_single`] with the frame, and on a miss
/// [`TlbHierarchy::fill_single`] of `t`, for the associativity chosen at run time.
fn access_single(h: &mut TlbHierarchy, single: SingleLevel, r: &MemRef, t: &Translation) -> Option<Pfn> {
    macro_rules! dispatch {
        ($($w:literal)*) => {
            match single.ways {
                $($w => {
                    let hit = h.lookup_single::<$w>(single, r.asid, r.vaddr, r.kind, true);
                    if hit.is_none() {
                        h.fill_single::<$w>(single, t, r.vaddr, r.kind);
                    }
                    hit
                })*
                ways => unreachable!("not a specialized shape: {ways} ways"),
            }
        };
    }
    dispatch!(1 2 4 8 12 16)
}

/// The per-reference express forms for one level (used by machines whose loop also drives
/// Mosaic TLBs or an OS that tracks use) agree with the general path: the same hits, the
/// hit's frame, and the same state (every tag, stamp, counter and the last hit), with
/// shootdowns between references; unsplit, and split with an instruction side of the
/// general shape or of a specialized one (which takes the general path there).
#[test]
fn single_level_lookup_and_fill_match_the_general_path() {
    for ways in [1, 2, 4, 8, 12, 16] {
        for sets in [1, 4, 64] {
            for sizes in [&[K4][..], &[K4, M2], &[M2]] {
                let data = geometry(ways * sets, ways, Policy::Lru, sizes);
                for instr in [vec![], vec![geometry(12, 3, Policy::Fifo, sizes)], vec![data.clone()]] {
                    let levels = vec![level("L1", vec![data.clone()], instr, false)];
                    check_single_level(&levels, sizes[0], ways, (ways * sets) as u64);
                }
            }
        }
    }
}

/// Runs a stream through `levels` (one level whose data array has `ways` ways and holds
/// `os_size` pages) on the express forms and on the general path, comparing as
/// [`single_level_lookup_and_fill_match_the_general_path`] says; `entries` sizes the stream.
fn check_single_level(levels: &[LevelGeometry], os_size: PageSize, ways: usize, entries: u64) {
    let (mut single, mut general) = (TlbHierarchy::new(levels, 1), TlbHierarchy::new(levels, 1));
    let table = if os_size == K4 { BASE_ONLY } else { ALL_2M };
    let spread = if os_size == M2 { 512 } else { 1 };
    let refs = express_stream(entries * 3 * spread, 3000, entries);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(ways as u64);
    for (i, r) in refs.iter().enumerate() {
        let array = single.express_single_level(os_size).expect("one level with a specialized data array");
        assert_eq!(array.ways, ways);
        let t = table.walk(r.asid, r.vaddr);
        let hit = access_single(&mut single, array, r, &t);
        let expected = general.lookup_frame_shaped::<true>(r.asid, r.vaddr, r.kind);
        if expected.is_none() {
            general.fill_after_walk_shaped::<true>(&t, r.vaddr, r.kind);
        }
        let shape = format!("{levels:?}, reference {i}");
        assert_eq!(hit, expected, "{shape}");
        assert!(hit.is_none_or(|pfn| pfn == t.pfn_of(r.vaddr)), "{shape}");
        if rng.random_bool(0.05) {
            let victim = refs[rng.random_range(0..refs.len())];
            let page = table.walk(victim.asid, victim.vaddr);
            assert_eq!(single.invalidate(page.asid, page.vpn, page.size), general.invalidate(page.asid, page.vpn, page.size));
        }
        if i % 64 == 0 || i == refs.len() - 1 {
            assert_eq!(format!("{single:?}"), format!("{general:?}"), "{shape}");
        }
    }
}

#[test]
fn single_level_is_for_one_level_with_a_specialized_data_array() {
    let lru = |entries, ways| geometry(entries, ways, Policy::Lru, &[K4]);
    let one = |arrays, instr| TlbHierarchy::new(&[level("L1", arrays, instr, false)], 0);
    assert_eq!(one(vec![lru(64, 4)], vec![]).express_single_level(K4).map(|u| u.ways), Some(4));
    assert_eq!(one(vec![lru(64, 4)], vec![lru(48, 4)]).express_single_level(K4).map(|u| u.ways), Some(4), "split, any instruction side");
    assert_eq!(one(vec![lru(48, 4)], vec![]).express_single_level(K4), None, "12 sets");
    assert_eq!(one(vec![geometry(64, 4, Policy::TreePlru, &[K4])], vec![]).express_single_level(K4), None, "PLRU");
    assert_eq!(TlbHierarchy::new(&skylake_like(Policy::Lru, false), 0).express_single_level(K4), None, "two levels");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Random specialized shapes, streams and batch lengths.
    #[test]
    fn prop_express_matches_reference(
        ways_i in 0usize..6,
        sets_log in 0u32..7,
        sizes_i in 0usize..3,
        pages_per_entry in 1u64..4,
        n in 1usize..2000,
        batch in 1usize..600,
        seed in any::<u64>(),
    ) {
        let ways = [1, 2, 4, 8, 12, 16][ways_i];
        let sets = 1 << sets_log;
        let sizes: &[PageSize] = [&[K4][..], &[K4, M2], &[M2]][sizes_i];
        let spread = if sizes[0] == M2 { 512 } else { 1 };
        let refs = express_stream((ways * sets) as u64 * pages_per_entry * spread, n, seed);
        check_express(&single_level(ways, sets, sizes), sizes[0], &refs, batch);
    }

    /// Random hierarchies of two or three levels, the first one split or not.
    #[test]
    fn prop_express_matches_reference_deep(
        shapes in proptest::collection::vec((0usize..6, 0u32..6), 2..5),
        split in any::<bool>(),
        pages in 1u64..3000,
        n in 1usize..3000,
        batch in 1usize..600,
        seed in any::<u64>(),
    ) {
        let lru = |(ways_i, sets_log): (usize, u32)| {
            let ways = [1, 2, 4, 8, 12, 16][ways_i];
            geometry(ways << sets_log, ways, Policy::Lru, &[K4])
        };
        let instr = if split { vec![lru(shapes[1])] } else { vec![] };
        let mut levels = vec![level("L1", vec![lru(shapes[0])], instr, false)];
        for (i, &shape) in shapes[2..].iter().enumerate() {
            levels.push(level(&format!("L{}", i + 2), vec![lru(shape)], vec![], false));
        }
        check_express(&levels, K4, &express_stream(pages, n, seed), batch);
    }
}
