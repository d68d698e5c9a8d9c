//! Differential tests of `xlat::tlb::MosaicTlb` against the naive reference in
//! `common/mosaic_ref.rs`: every lookup outcome (hit with its CPFN, sub-miss, miss), every
//! invalidation result, occupancy and counters must agree after every operation, for every
//! policy, associativity and arity. Also adversarial streams with known outcomes, and
//! properties relating the Mosaic array to the vanilla `TlbArray`.

mod common;

use common::mosaic_ref::RefMosaic;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;
use xlat::tlb::{ArrayGeometry, MosaicGeometry, MosaicLookup, MosaicTlb, Policy, TlbArray};
use xlat::{Asid, PageSize, Pfn, Translation, Vpn};

const POLICIES: [Policy; 4] = [Policy::Lru, Policy::TreePlru, Policy::Fifo, Policy::Random];

const ARITIES: [u32; 4] = [2, 4, 16, 64];

/// The unmapped code of 7-bit CPFNs (the paper's iceberg layout), the default width here.
const UNMAPPED: u8 = 0x7f;

/// (entries, ways): associativities 1, 2, 3, 4, 8, 16, 33, 64 and fully associative, mostly with
/// set counts that are not powers of two; and the specialized shapes (power-of-two set counts,
/// 1, 2, 4, 8, 12 or 16 ways), whose LRU lookups and fills are compiled for their ways. Ways
/// above 32 use the model's hash index.
const SHAPES: &[(usize, usize)] = &[
    (10, 1),
    (12, 2),
    (21, 3),
    (32, 4),
    (24, 8),
    (80, 16),
    (66, 33),
    (128, 64),
    (48, 48),
    (1024, 1024),
    (8, 1),
    (16, 2),
    (64, 8),
    (48, 12),
    (32, 16),
];

fn geometry(entries: usize, ways: usize, policy: Policy, arity: u32) -> MosaicGeometry {
    MosaicGeometry { entries, ways, policy, arity }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

// ------------------------------------------------------------------------------------------
// The OS the tests run against
// ------------------------------------------------------------------------------------------

/// Page tables reduced to what a Mosaic TLB sees: the CPFN of every mapped 4 KiB page.
/// Unless listed in `codes`, a page is mapped (with a code hashed from its number, epoch 0)
/// when `all_mapped`, unmapped otherwise.
struct Os {
    arity: u64,
    /// The unmapped code (all ones of the CPFN width); mapped codes are below it.
    unmapped: u8,
    all_mapped: bool,
    /// Whether an access that misses maps its page first (demand paging).
    demand: bool,
    codes: HashMap<(Asid, u64), u8>,
    /// Changes the codes handed out, so that a remapped page gets a new one.
    epoch: u64,
}

impl Os {
    /// 7-bit CPFNs.
    fn new(arity: u32, all_mapped: bool, demand: bool) -> Os {
        Os { arity: u64::from(arity), unmapped: UNMAPPED, all_mapped, demand, codes: HashMap::new(), epoch: 0 }
    }

    fn with_unmapped(self, unmapped: u8) -> Os {
        Os { unmapped, ..self }
    }

    fn hashed_code(&self, asid: Asid, vpn: u64, epoch: u64) -> u8 {
        (splitmix(vpn ^ u64::from(asid) << 48 ^ epoch << 56) % u64::from(self.unmapped)) as u8
    }

    /// A code for a page being (re)mapped now; usually differs from the page's last one.
    fn fresh_code(&mut self, asid: Asid, vpn: u64) -> u8 {
        self.epoch += 1;
        self.hashed_code(asid, vpn, self.epoch)
    }

    fn code(&self, asid: Asid, vpn: u64) -> u8 {
        match self.codes.get(&(asid, vpn)) {
            Some(&c) => c,
            None if self.all_mapped => self.hashed_code(asid, vpn, 0),
            None => self.unmapped,
        }
    }

    /// The ToC of the Mosaic page holding `vpn`.
    fn toc(&self, asid: Asid, vpn: u64) -> Vec<u8> {
        let first = vpn / self.arity * self.arity;
        (first..first + self.arity).map(|v| self.code(asid, v)).collect()
    }

    fn is_mapped(&self, asid: Asid, vpn: u64) -> bool {
        self.code(asid, vpn) != self.unmapped
    }

    /// Maps `vpn` if it is not: a TLB never holds a valid sub-entry for an unmapped page, so
    /// no shootdown is needed.
    fn map(&mut self, asid: Asid, vpn: u64) {
        if !self.is_mapped(asid, vpn) {
            let code = self.fresh_code(asid, vpn);
            self.codes.insert((asid, vpn), code);
        }
    }

    /// Gives `vpn` a new code (or none); the caller shoots the page down.
    fn remap(&mut self, asid: Asid, vpn: u64, mapped: bool) {
        let code = if mapped { self.fresh_code(asid, vpn) } else { self.unmapped };
        self.codes.insert((asid, vpn), code);
    }
}

// ------------------------------------------------------------------------------------------
// Driver
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Op {
    /// Lookup; on a miss or sub-miss, map the page if the OS pages on demand, then fill the
    /// Mosaic page's ToC (what a machine does).
    Access(Asid, u64),
    /// Lookup only.
    Lookup(Asid, u64),
    /// Fill only (possibly of a present entry, possibly with no valid sub-page).
    Fill(Asid, u64),
    /// The OS maps the page if it is not mapped (no shootdown: the page becomes mapped).
    Map(Asid, u64),
    /// The OS unmaps the page and shoots it down.
    Unmap(Asid, u64),
    /// The OS moves the page to another frame (a new CPFN) and shoots it down.
    Remap(Asid, u64),
    /// A shootdown with no change to the page tables.
    Shootdown(Asid, u64),
}

/// Runs `ops` on the model and the reference, asserting agreement after every step, and that
/// every hit returns the page's current CPFN. Returns the outcome of every `Access`.
fn run(g: &MosaicGeometry, seed: u64, os: &mut Os, ops: &[Op]) -> Vec<MosaicLookup> {
    let mut model = MosaicTlb::new(g, os.unmapped, seed);
    let mut reference = RefMosaic::new(g, os.unmapped, seed);
    let mut outcomes = Vec::new();
    // The reference's O(ways^2) self-check is run often for small arrays only.
    let check_every = if g.entries <= 128 { 1 } else { 509 };
    for (i, &op) in ops.iter().enumerate() {
        let ctx = || format!("{g:?} seed {seed} op #{i} {op:?}");
        let lookup = |model: &mut MosaicTlb, reference: &mut RefMosaic, os: &Os, asid: Asid, vpn: u64| {
            let m = model.lookup(asid, Vpn(vpn));
            assert_eq!(m, reference.lookup(asid, vpn), "lookup: {}", ctx());
            if let MosaicLookup::Hit(code) = m {
                assert_eq!(code, os.code(asid, vpn), "stale CPFN: {}", ctx());
            }
            m
        };
        let shootdown = |model: &mut MosaicTlb, reference: &mut RefMosaic, asid: Asid, vpn: u64| {
            let m = model.invalidate_page(asid, Vpn(vpn));
            assert_eq!(m, reference.invalidate_page(asid, vpn), "invalidate: {}", ctx());
        };
        match op {
            Op::Access(asid, vpn) => {
                let m = lookup(&mut model, &mut reference, os, asid, vpn);
                outcomes.push(m);
                if !matches!(m, MosaicLookup::Hit(_)) {
                    if os.demand {
                        os.map(asid, vpn);
                    }
                    let toc = os.toc(asid, vpn);
                    model.fill(asid, Vpn(vpn), &toc);
                    reference.fill(asid, vpn, &toc);
                }
            }
            Op::Lookup(asid, vpn) => {
                lookup(&mut model, &mut reference, os, asid, vpn);
            }
            Op::Fill(asid, vpn) => {
                let toc = os.toc(asid, vpn);
                model.fill(asid, Vpn(vpn), &toc);
                reference.fill(asid, vpn, &toc);
            }
            Op::Map(asid, vpn) => os.map(asid, vpn),
            Op::Unmap(asid, vpn) | Op::Remap(asid, vpn) => {
                os.remap(asid, vpn, matches!(op, Op::Remap(..)));
                shootdown(&mut model, &mut reference, asid, vpn);
            }
            Op::Shootdown(asid, vpn) => shootdown(&mut model, &mut reference, asid, vpn),
        }
        assert_eq!(model.occupancy(), reference.occupancy(), "occupancy: {}", ctx());
        assert_eq!(model.counters(), reference.counters(), "counters: {}", ctx());
        if i % check_every == 0 {
            reference.check_invariants();
        }
    }
    reference.check_invariants();
    outcomes
}

// ------------------------------------------------------------------------------------------
// Streams
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Stream {
    /// Uniform over `entries / 2` consecutive Mosaic pages of one ASID: fits in any geometry.
    Fits,
    /// 85% over a hot set of `2 * entries` Mosaic pages, 15% uniform over 2^20.
    Hot,
    /// Uniform over 2^22 Mosaic pages.
    Large,
    /// Walks with locality: half the references stay within two Mosaic pages of the last.
    Local,
    /// Runs: 70% repeat the previous page or another sub-page of its Mosaic page (as most
    /// references of a real stream do), else a page of a hot set; exercises the model's
    /// repeated-hit shortcut.
    Runs,
}

struct Spec {
    kind: Stream,
    asids: u16,
    /// OS: every page mapped from the start (else pages are mapped on demand).
    all_mapped: bool,
    /// Percent of operations that change the page tables or shoot down.
    churn_pct: u32,
    /// Percent of operations that are bare lookups / bare fills (each).
    raw_pct: u32,
    /// The CPFN width, as its unmapped code: 7 bits as the paper, 8 (codes may have the top
    /// bit set), 2, and 1 (a single mapped code).
    unmapped: u8,
}

const STREAMS: [Spec; 5] = [
    Spec { kind: Stream::Fits, asids: 1, all_mapped: false, churn_pct: 0, raw_pct: 0, unmapped: 0x7f },
    Spec { kind: Stream::Hot, asids: 3, all_mapped: false, churn_pct: 6, raw_pct: 5, unmapped: 0xff },
    Spec { kind: Stream::Large, asids: 2, all_mapped: true, churn_pct: 2, raw_pct: 5, unmapped: 0x03 },
    Spec { kind: Stream::Local, asids: 2, all_mapped: false, churn_pct: 4, raw_pct: 3, unmapped: 0x7f },
    Spec { kind: Stream::Runs, asids: 1, all_mapped: false, churn_pct: 3, raw_pct: 3, unmapped: 0x01 },
];

/// The next 4 KiB page of a `kind` stream after `last`.
fn next_vpn(kind: Stream, rng: &mut Xoshiro256PlusPlus, last: u64, entries: u64, arity: u64) -> u64 {
    let sub = rng.random_range(0..arity);
    let mosaic_page = match kind {
        Stream::Fits => rng.random_range(0..(entries / 2).max(1)),
        Stream::Hot if rng.random_range(0..100) < 85 => rng.random_range(0..2 * entries),
        Stream::Hot => rng.random_range(0..1 << 20),
        Stream::Large => rng.random_range(0..1 << 22),
        Stream::Local if rng.random_bool(0.5) => {
            return last.saturating_add_signed(rng.random_range(-2 * arity as i64..=2 * arity as i64))
        }
        Stream::Local => rng.random_range(0..1 << 22),
        Stream::Runs if rng.random_bool(0.4) => return last,
        Stream::Runs if rng.random_bool(0.5) => last / arity,
        Stream::Runs => rng.random_range(0..2 * entries),
    };
    mosaic_page * arity + sub
}

fn gen_ops(spec: &Spec, g: &MosaicGeometry, n: usize, seed: u64) -> Vec<Op> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut last = 0;
    (0..n)
        .map(|_| {
            let vpn = next_vpn(spec.kind, &mut rng, last, g.entries as u64, u64::from(g.arity));
            last = vpn;
            let asid = rng.random_range(0..spec.asids);
            let r = rng.random_range(0..100);
            if r < spec.churn_pct {
                [Op::Map, Op::Unmap, Op::Remap, Op::Shootdown][rng.random_range(0..4)](asid, vpn)
            } else if r < spec.churn_pct + spec.raw_pct {
                Op::Lookup(asid, vpn)
            } else if r < spec.churn_pct + 2 * spec.raw_pct {
                Op::Fill(asid, vpn)
            } else {
                Op::Access(asid, vpn)
            }
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Sanity checks of the reference itself against hand-worked sequences, so that the reference
// is not merely "the same code written twice".
// ------------------------------------------------------------------------------------------

#[test]
fn reference_hand_worked_sequences() {
    use MosaicLookup::{Hit, Miss, SubMiss};
    // One set of 4 ways, arity 2: Mosaic pages 0..4 (VPNs 0..8) fill ways 0..3.
    let fill4 = |policy| {
        let mut r = RefMosaic::new(&geometry(4, 4, policy, 2), UNMAPPED, 7);
        for p in 0..4 {
            r.fill(0, 2 * p, &[p as u8, UNMAPPED]);
        }
        r
    };
    // LRU: a sub-miss on page 0 (VPN 1) makes it most recent; refilling page 1 in place does
    // not, so page 1 is the victim of page 4, then page 2 of page 5.
    let mut lru = fill4(Policy::Lru);
    assert_eq!(lru.lookup(0, 1), SubMiss);
    lru.fill(0, 2, &[1, 1]);
    lru.fill(0, 8, &[4, 4]);
    assert_eq!(lru.lookup(0, 2), Miss);
    assert_eq!(lru.lookup(0, 0), Hit(0));
    lru.fill(0, 10, &[5, 5]);
    assert_eq!(lru.lookup(0, 4), Miss);
    assert_eq!(lru.lookup(0, 6), Hit(3));
    // FIFO: neither hits nor in-place refills matter; page 0 went in first.
    let mut fifo = fill4(Policy::Fifo);
    fifo.lookup(0, 0);
    fifo.fill(0, 1, &[0, 1]);
    fifo.fill(0, 8, &[8, 8]);
    assert_eq!(fifo.lookup(0, 1), Miss);
    assert_eq!(fifo.lookup(0, 2), Hit(1));
    // Tree-PLRU over 4 ways: after filling 0..3 the victim is way 0; a sub-miss on page 0
    // points the root right, at way 2 (away from 3).
    let mut plru = fill4(Policy::TreePlru);
    assert_eq!(plru.lookup(0, 1), SubMiss);
    plru.fill(0, 8, &[8, 8]);
    assert_eq!(plru.lookup(0, 4), Miss);
    assert_eq!(plru.lookup(0, 0), Hit(0));
    assert_eq!(plru.occupancy(), 4);
    // Invalidation clears one sub-page; the entry stays and still takes its way.
    let mut inv = fill4(Policy::Lru);
    assert!(inv.invalidate_page(0, 2));
    assert!(!inv.invalidate_page(0, 2));
    assert!(!inv.invalidate_page(0, 3), "never valid");
    assert_eq!(inv.lookup(0, 2), SubMiss);
    assert_eq!(inv.occupancy(), 4);
    let c = inv.counters();
    assert_eq!((c.accesses, c.hits, c.misses, c.tag_misses, c.sub_misses), (1, 0, 1, 0, 1));
}

// ------------------------------------------------------------------------------------------
// Differential tests over the whole matrix
// ------------------------------------------------------------------------------------------

/// Every shape × arity × stream for one policy (one test per policy, so that they run in
/// parallel and a failure names its policy).
fn matrix(policy: Policy) {
    for (s, &(entries, ways)) in SHAPES.iter().enumerate() {
        for arity in ARITIES {
            let g = geometry(entries, ways, policy, arity);
            for (k, spec) in STREAMS.iter().enumerate() {
                let seed = 1000 * s as u64 + 10 * u64::from(arity) + k as u64;
                // The reference scans all ways per operation: fewer operations for the
                // 1024-way array, but still enough to evict many times over.
                let n = if entries >= 1024 { 2500 } else { 1200 };
                let ops = gen_ops(spec, &g, n, seed);
                let mut os = Os::new(arity, spec.all_mapped, true).with_unmapped(spec.unmapped);
                run(&g, seed ^ 0xfeed, &mut os, &ops);
            }
        }
    }
}

#[test]
fn matrix_lru() {
    matrix(Policy::Lru);
}

#[test]
fn matrix_tree_plru() {
    matrix(Policy::TreePlru);
}

#[test]
fn matrix_fifo() {
    matrix(Policy::Fifo);
}

#[test]
fn matrix_random() {
    matrix(Policy::Random);
}

// ------------------------------------------------------------------------------------------
// Adversarial streams with known outcomes (and differential agreement throughout)
// ------------------------------------------------------------------------------------------

fn count(outcomes: &[MosaicLookup], f: impl Fn(&MosaicLookup) -> bool) -> usize {
    outcomes.iter().filter(|o| f(o)).count()
}

/// `ways + 1` Mosaic pages of one set, accessed cyclically: under LRU and FIFO every access
/// misses. Touching all `a` sub-pages of each Mosaic page in turn, only the first of each
/// misses, under every policy (nothing is inserted in between).
#[test]
fn conflict_cycle_of_ways_plus_one() {
    for policy in POLICIES {
        for &(entries, ways) in SHAPES {
            for arity in ARITIES {
                let sets = (entries / ways) as u64;
                let a = u64::from(arity);
                let pages: Vec<u64> = (0..=ways as u64).map(|k| 5 % sets + k * sets).collect();
                let g = geometry(entries, ways, policy, arity);
                let one_sub: Vec<Op> =
                    (0..4).flat_map(|r| pages.iter().map(move |p| Op::Access(0, p * a + r % a))).collect();
                let outcomes = run(&g, 3, &mut Os::new(arity, true, false), &one_sub);
                if matches!(policy, Policy::Lru | Policy::Fifo) {
                    assert_eq!(count(&outcomes, |o| *o == MosaicLookup::Miss), one_sub.len(), "{g:?}");
                }
                if ways > 64 {
                    continue; // every sub-page of 1025 pages is too slow for the reference
                }
                let all_subs: Vec<Op> = (0..3)
                    .flat_map(|_| pages.iter().flat_map(move |p| (0..a).map(move |s| Op::Access(0, p * a + s))))
                    .collect();
                let outcomes = run(&g, 3, &mut Os::new(arity, true, false), &all_subs);
                for group in outcomes.chunks(arity as usize) {
                    assert!(group[1..].iter().all(|o| matches!(o, MosaicLookup::Hit(_))), "{g:?}: {group:?}");
                    if matches!(policy, Policy::Lru | Policy::Fifo) {
                        assert_eq!(group[0], MosaicLookup::Miss, "{g:?}");
                    }
                }
            }
        }
    }
}

/// Mosaic pages with only their even sub-pages mapped, then all mapped, in a stream that fits
/// (`entries` consecutive Mosaic pages fill every set exactly). Pass 1: one miss per page and
/// a sub-miss per odd sub-page. The OS then maps the odd sub-pages (no shootdown). Pass 2: one
/// sub-miss per page (its first odd sub-page; the refill then validates the others). Pass 3:
/// all hits. The same under every policy, since nothing is evicted.
#[test]
fn partly_mapped_pages_become_mapped() {
    for policy in POLICIES {
        for &(entries, ways) in SHAPES {
            for arity in ARITIES {
                if entries * arity as usize > 4096 {
                    continue; // 3 passes over every sub-page: enough with the smaller shapes
                }
                let g = geometry(entries, ways, policy, arity);
                let a = u64::from(arity);
                let pass: Vec<Op> = (0..entries as u64 * a).map(|v| Op::Access(1, v)).collect();
                let mut os = Os::new(arity, false, false);
                for v in (0..entries as u64 * a).step_by(2) {
                    os.map(1, v);
                }
                let mut ops = pass.clone();
                ops.extend((0..entries as u64 * a).skip(1).step_by(2).map(|v| Op::Map(1, v)));
                ops.extend(pass.iter().chain(&pass));
                let outcomes = run(&g, 9, &mut os, &ops);
                let (n, half) = (entries, entries * arity as usize / 2);
                let [p1, p2, p3] = [0, 1, 2].map(|k| &outcomes[k * 2 * half..(k + 1) * 2 * half]);
                let tally = |o: &[MosaicLookup]| {
                    let hits = count(o, |x| matches!(x, MosaicLookup::Hit(_)));
                    (hits, count(o, |x| *x == MosaicLookup::Miss), count(o, |x| *x == MosaicLookup::SubMiss))
                };
                assert_eq!(tally(p1), (half - n, n, half), "pass 1 {g:?}");
                assert_eq!(tally(p2), (2 * half - n, 0, n), "pass 2 {g:?}");
                assert_eq!(tally(p3), (2 * half, 0, 0), "pass 3 {g:?}");
            }
        }
    }
}

/// One hot Mosaic page whose sub-page 1 is unmapped, probed there (a sub-miss, then an in-place
/// refill) between accesses to the `ways` other pages of its set, cyclically. A sub-miss is an
/// access to the entry, so LRU and tree-PLRU never evict it: after the first access every hot
/// probe sub-misses, and under LRU the others always miss.
#[test]
fn sub_misses_keep_an_entry_recent() {
    for policy in POLICIES {
        for &(entries, ways) in SHAPES {
            if !(2..=64).contains(&ways) {
                continue;
            }
            let arity = 4;
            let sets = (entries / ways) as u64;
            let hot = 2 % sets;
            let mut os = Os::new(arity, true, false);
            os.remap(0, hot * 4 + 1, false);
            let mut ops = Vec::new();
            for round in 0..4 {
                for k in 1..=ways as u64 {
                    ops.push(Op::Access(0, hot * 4 + 1));
                    ops.push(Op::Access(0, (hot + k * sets) * 4 + round));
                }
            }
            let g = geometry(entries, ways, policy, arity);
            let outcomes = run(&g, 11, &mut os, &ops);
            if matches!(policy, Policy::Lru | Policy::TreePlru) {
                let hot: Vec<MosaicLookup> = outcomes.iter().step_by(2).copied().collect();
                assert_eq!(hot[0], MosaicLookup::Miss);
                assert!(hot[1..].iter().all(|&o| o == MosaicLookup::SubMiss), "{g:?}: hot entry evicted");
            }
            if policy == Policy::Lru {
                assert!(outcomes.iter().skip(1).step_by(2).all(|&o| o == MosaicLookup::Miss), "{g:?}: cold hit");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Property tests
// ------------------------------------------------------------------------------------------

const PROP_WAYS: [usize; 11] = [1, 2, 3, 4, 5, 8, 12, 16, 33, 40, 64];
const PROP_ARITIES: [u32; 6] = [2, 4, 8, 16, 32, 64];

fn policy_strategy() -> impl Strategy<Value = Policy> {
    prop_oneof![Just(Policy::Lru), Just(Policy::TreePlru), Just(Policy::Fifo), Just(Policy::Random)]
}

/// Operations over Mosaic-page numbers mostly below 48 (so that sets conflict and entries
/// are found again), sometimes anywhere; `sub` is reduced modulo the arity by the caller.
fn raw_op_strategy() -> impl Strategy<Value = (u8, Asid, u64, u64)> {
    (0u8..20, 0u16..2, prop_oneof![4 => 0u64..48, 1 => 0u64..(1 << 20)], 0u64..64)
}

fn to_op((k, asid, page, sub): (u8, Asid, u64, u64), arity: u32) -> Op {
    let vpn = page * u64::from(arity) + sub % u64::from(arity);
    match k {
        0 => Op::Map(asid, vpn),
        1 => Op::Unmap(asid, vpn),
        2 => Op::Remap(asid, vpn),
        3 => Op::Shootdown(asid, vpn),
        4 | 5 => Op::Lookup(asid, vpn),
        6 | 7 => Op::Fill(asid, vpn),
        _ => Op::Access(asid, vpn),
    }
}

/// A vanilla 4 KiB array of the same shape, policy and seed.
fn vanilla(entries: usize, ways: usize, policy: Policy, seed: u64) -> TlbArray {
    TlbArray::new(&ArrayGeometry { entries, ways, policy, page_sizes: vec![PageSize::Size4K] }, seed)
}

/// A vanilla access to 4 KiB page `page`: true on a hit; fills on a miss.
fn vanilla_access(array: &mut TlbArray, asid: Asid, page: u64) -> bool {
    if array.lookup(asid, page << 12).is_some() {
        return true;
    }
    array.insert_absent(&Translation { asid, vpn: Vpn(page), pfn: Pfn(page), size: PageSize::Size4K });
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Random geometry (non-power-of-two set counts, hash-indexed ways), arity, CPFN width,
    /// policy, seed, OS and operation stream: exact agreement at every step.
    #[test]
    fn prop_matches_reference(
        policy in policy_strategy(),
        ways_i in 0..PROP_WAYS.len(),
        sets in 1usize..=6,
        arity_i in 0..PROP_ARITIES.len(),
        all_mapped in any::<bool>(),
        demand in any::<bool>(),
        cpfn_bits in 1u32..=8,
        seed in any::<u64>(),
        raw in proptest::collection::vec(raw_op_strategy(), 1..400),
    ) {
        let (ways, arity) = (PROP_WAYS[ways_i], PROP_ARITIES[arity_i]);
        let ops: Vec<Op> = raw.into_iter().map(|r| to_op(r, arity)).collect();
        let mut os = Os::new(arity, all_mapped, demand).with_unmapped(((1u32 << cpfn_bits) - 1) as u8);
        run(&geometry(ways * sets, ways, policy, arity), seed, &mut os, &ops);
    }

    /// The tags of a Mosaic array behave as a vanilla array of the same shape, policy and seed
    /// run on Mosaic page numbers, whatever the sub-pages' state: a tag hit (hit or sub-miss)
    /// exactly when the vanilla array hits. (Fills follow tag misses only here, and an in-place
    /// refill changes no replacement state, so even the random draws line up.)
    #[test]
    fn prop_tags_behave_as_a_vanilla_array_over_mosaic_pages(
        policy in policy_strategy(),
        ways_i in 0..PROP_WAYS.len(),
        sets in 1usize..=6,
        arity_i in 0..PROP_ARITIES.len(),
        seed in any::<u64>(),
        raw in proptest::collection::vec(raw_op_strategy(), 1..400),
    ) {
        let (ways, arity) = (PROP_WAYS[ways_i], PROP_ARITIES[arity_i]);
        let mut mosaic = MosaicTlb::new(&geometry(ways * sets, ways, policy, arity), UNMAPPED, seed);
        let mut array = vanilla(ways * sets, ways, policy, seed);
        let mut os = Os::new(arity, false, true);
        for (k, asid, page, sub) in raw {
            let vpn = page * u64::from(arity) + sub % u64::from(arity);
            if k < 3 {
                // Shootdowns change sub-pages only, never the tags.
                os.remap(asid, vpn, k == 0);
                mosaic.invalidate_page(asid, Vpn(vpn));
                continue;
            }
            let outcome = mosaic.lookup(asid, Vpn(vpn));
            prop_assert_eq!(outcome != MosaicLookup::Miss, vanilla_access(&mut array, asid, page));
            if !matches!(outcome, MosaicLookup::Hit(_)) {
                os.map(asid, vpn);
                mosaic.fill(asid, Vpn(vpn), &os.toc(asid, vpn));
            }
        }
        prop_assert_eq!(mosaic.occupancy(), array.occupancy());
    }

    /// Fully associative LRU of E entries, pages mapped on first touch, nothing unmapped: every
    /// access that misses in the Mosaic array (tag miss or sub-miss) also misses in a vanilla
    /// array of E entries. A tag miss on page v of Mosaic page M means at least E other Mosaic
    /// pages were touched since M was, hence at least E other pages since v was; a sub-miss
    /// means v was never touched (it was unmapped when M's ToC was last written, and a touch
    /// since would have rewritten it).
    #[test]
    fn prop_fully_associative_lru_misses_only_where_vanilla_misses(
        entries in 1usize..=40,
        arity_i in 0..PROP_ARITIES.len(),
        asids in 1u16..=2,
        pages in proptest::collection::vec((0u16..2, prop_oneof![3 => 0u64..160, 1 => 0u64..4096]), 1..600),
    ) {
        let arity = PROP_ARITIES[arity_i];
        let mut mosaic = MosaicTlb::new(&geometry(entries, entries, Policy::Lru, arity), UNMAPPED, 0);
        let mut array = vanilla(entries, entries, Policy::Lru, 0);
        let mut os = Os::new(arity, false, true);
        for (i, (asid, vpn)) in pages.into_iter().enumerate() {
            let asid = asid % asids;
            let outcome = mosaic.lookup(asid, Vpn(vpn));
            let vanilla_hit = vanilla_access(&mut array, asid, vpn);
            prop_assert!(matches!(outcome, MosaicLookup::Hit(_)) || !vanilla_hit, "access #{}: {:?} where vanilla hit", i, outcome);
            if !matches!(outcome, MosaicLookup::Hit(_)) {
                os.map(asid, vpn);
                mosaic.fill(asid, Vpn(vpn), &os.toc(asid, vpn));
            }
        }
    }

    /// Fully associative LRU of E entries, every page mapped, a stream of complete groups (the
    /// `a` sub-pages of one Mosaic page, each once, in any order): the Mosaic array misses at
    /// most once per group, and only when the group's Mosaic page was not among the E most
    /// recent; then each of its pages is at least `a * E` distinct pages away in the vanilla
    /// stream, so a vanilla array of E entries misses on all `a` of them. Hence
    /// `a * mosaic misses <= vanilla misses`.
    #[test]
    fn prop_complete_groups_miss_a_times_less_than_vanilla(
        entries in 1usize..=48,
        arity_i in 0..4usize,
        groups in proptest::collection::vec((prop_oneof![3 => 0u64..48, 1 => 0u64..1024], any::<u64>()), 1..120),
    ) {
        let arity = PROP_ARITIES[arity_i];
        let a = u64::from(arity);
        let mut mosaic = MosaicTlb::new(&geometry(entries, entries, Policy::Lru, arity), UNMAPPED, 0);
        let mut array = vanilla(entries, entries, Policy::Lru, 0);
        let os = Os::new(arity, true, false);
        let mut vanilla_misses = 0;
        for (page, order) in groups {
            let mut subs: Vec<u64> = (0..a).collect();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(order);
            for i in (1..subs.len()).rev() {
                subs.swap(i, rng.random_range(0..=i));
            }
            for s in subs {
                let vpn = page * a + s;
                if mosaic.lookup(0, Vpn(vpn)) == MosaicLookup::Miss {
                    mosaic.fill(0, Vpn(vpn), &os.toc(0, vpn));
                }
                vanilla_misses += u64::from(!vanilla_access(&mut array, 0, vpn));
            }
        }
        let c = mosaic.counters();
        prop_assert_eq!(c.sub_misses, 0);
        prop_assert!(a * c.misses <= vanilla_misses, "{} Mosaic misses, {} vanilla", c.misses, vanilla_misses);
    }

    /// Invariants on the model alone: after a fill every sub-page of the Mosaic page hits with
    /// its code or sub-misses if unmapped; a refill never changes occupancy; after an
    /// invalidation the page sub-misses (the entry stays) and a second one reports nothing.
    #[test]
    fn prop_model_invariants(
        policy in policy_strategy(),
        ways_i in 0..PROP_WAYS.len(),
        sets in 1usize..=5,
        arity_i in 0..PROP_ARITIES.len(),
        seed in any::<u64>(),
        raw in proptest::collection::vec(raw_op_strategy(), 1..200),
    ) {
        let (ways, arity) = (PROP_WAYS[ways_i], PROP_ARITIES[arity_i]);
        let a = u64::from(arity);
        let g = geometry(ways * sets, ways, policy, arity);
        let mut model = MosaicTlb::new(&g, UNMAPPED, seed);
        let mut os = Os::new(arity, false, true);
        for (k, asid, page, sub) in raw {
            let vpn = page * a + sub % a;
            if k < 4 {
                let present = model.lookup(asid, Vpn(vpn)) != MosaicLookup::Miss;
                model.invalidate_page(asid, Vpn(vpn));
                let expected = if present { MosaicLookup::SubMiss } else { MosaicLookup::Miss };
                prop_assert_eq!(model.lookup(asid, Vpn(vpn)), expected);
                prop_assert!(!model.invalidate_page(asid, Vpn(vpn)));
                continue;
            }
            if k < 12 {
                os.map(asid, vpn);
            }
            let present = model.lookup(asid, Vpn(vpn)) != MosaicLookup::Miss;
            let before = model.occupancy();
            let toc = os.toc(asid, vpn);
            model.fill(asid, Vpn(vpn), &toc);
            let grown = model.occupancy() - before;
            prop_assert!(grown == 0 || (grown == 1 && !present), "occupancy {} -> {}", before, before + grown);
            for s in 0..a {
                let v = page * a + s;
                let expected = if toc[s as usize] == UNMAPPED { MosaicLookup::SubMiss } else { MosaicLookup::Hit(toc[s as usize]) };
                prop_assert_eq!(model.lookup(asid, Vpn(v)), expected);
            }
            prop_assert!(model.occupancy() <= g.entries);
        }
    }
}
