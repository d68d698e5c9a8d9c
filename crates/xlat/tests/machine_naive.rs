//! Differential tests of the whole machine (`xlat::sim::Machine`: conventional TLBs, Mosaic
//! TLBs, the OS with demand paging, placement and eviction) against the naive model of
//! `common/machine_ref.rs`, on random reference streams of several address spaces under
//! heavy memory pressure (footprints 1.5 to 3 times the memory).
//!
//! The OS is also compared alone (`xlat::os::Os` against `common/os_ref.rs`), frame by
//! frame: the machine's statistics do not show which frame or iceberg slot a page takes.
//!
//! Each stream is fed to the machine in batches of random sizes, each through
//! `Machine::process` or `Machine::process_on_two_cores` at random, and to the model one
//! reference at a time; every statistic of `Machine::stats` (per level and side, per Mosaic
//! TLB, every OS counter) must equal the model's after every batch, so the machine's results
//! may not depend on batch boundaries nor on its speed-ups (the express path, the replay of
//! levels on a second core, prefetching). A fault that finds no frame must stop both at the
//! same reference, for the same reason.
//!
//! Covered: placements `sequential`, `set-associative` and `iceberg` (the paper's geometry
//! and two small ones, disjoint and overlapping backyard ranges, both hash kinds), each with
//! the eviction policies it allows (`none`, `lru`, `horizon-lru`, `iceberg-lru`,
//! `lazy-iceberg-lru`), under `recency = "access"` and `"fill"`; hierarchies of 1 to 3 levels
//! (split first levels, inclusive levels, every replacement policy, arrays that also hold
//! 2 MiB pages), 0 to 3 Mosaic TLBs (arities 2 to 16), machines of Mosaic TLBs alone; loads,
//! stores, instruction fetches, references straddling pages or covering several. Without
//! eviction, the express path (LRU arrays of power-of-two sets and 1 to 16 ways).
//!
//! Not covered here (see `common/os_ref.rs`): random placement, `linux` reclaim, the swap
//! cache, readahead, bounded swap, accessed-bit scans, the eviction-age metric, huge pages,
//! iceberg `tie_break = "random"`.

mod common;

use common::machine_ref::RefMachine;
use common::os_ref::{RefNoFrame, RefOom, RefOs};
use proptest::prelude::*;
use proptest::sample::select;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlat::hash::HashSpec;
use xlat::os::eviction::{EvictionSpec, IcebergLruSpec, LazyIcebergLruSpec};
use xlat::os::iceberg::{BackyardRanges, IcebergSpec};
use xlat::mmu::NoReads;
use xlat::os::{Os, OsSpec, OsStats, PlacementSpec, Recency, WalkBy};
use xlat::sim::machine::cpu::loop_path::{LoopPath, LoopUse, SecondCore};
use xlat::sim::{CpuMachine, CpuSpec, Machine, MachineStats, MosaicSpec};
use xlat::tlb::{ArrayGeometry, LevelGeometry, MosaicGeometry, Policy};
use xlat::{AccessKind, Asid, Batch, MemRef, PageSize, Pfn};

const K4: PageSize = PageSize::Size4K;

/// Cases of each property: the six tests take about 9 s of one core in the test profile
/// (5 to 8 s on two).
const CASES: u32 = 500;

/// Bytes of a page.
const PAGE: u64 = 4096;

// ------------------------------------------------------------------------------------------
// Streams
// ------------------------------------------------------------------------------------------

/// A reference stream: `len` references over `asids` address spaces of `pages` pages each
/// (at the same virtual pages in every address space when `shared`), drawn from `seed`.
#[derive(Clone, Debug)]
struct Stream {
    asids: u16,
    pages: u64,
    len: usize,
    seed: u64,
    shared: bool,
}

/// Where a stream is: the address space running, the last page and the next page of the
/// cold sweep over every page of every address space.
struct Cursor {
    running: u16,
    last: u64,
    cold: u64,
}

impl Cursor {
    /// The next page of `s` and its address space: the running one (or, a tenth of the time,
    /// any), half the time one of the first eighth of its pages (a hot region), a tenth of
    /// the time the page after the last, a tenth of the time any; and 30% of the time the
    /// cold sweep's next page (so that 0.3 × `s.len` references touch that many pages, or
    /// all of them).
    fn next(&mut self, rng: &mut Xoshiro256PlusPlus, s: &Stream) -> (u16, u64) {
        if rng.random_ratio(1, 50) {
            self.running = rng.random_range(0..s.asids);
        }
        let asid = if rng.random_ratio(1, 10) { rng.random_range(0..s.asids) } else { self.running };
        self.last = match rng.random_range(0..10) {
            0..=4 => rng.random_range(0..(s.pages / 8).max(1)),
            5 => (self.last + 1) % s.pages,
            6 => rng.random_range(0..s.pages),
            _ => {
                self.cold += 1;
                let (asid, page) = ((self.cold / s.pages % u64::from(s.asids)) as u16, self.cold % s.pages);
                return (asid, page);
            }
        };
        (asid, self.last)
    }
}

/// The offset and size of a reference: mostly 8 bytes within a page, 4% straddling a page
/// boundary, 1% covering two to four pages, 1% of size 0 (read as 1) at a page's last byte.
fn extent(rng: &mut Xoshiro256PlusPlus) -> (u64, u16) {
    match rng.random_range(0..100) {
        0..=3 => (PAGE - rng.random_range(1..8), 8),
        4 => (rng.random_range(0..PAGE), rng.random_range(4097..=12_000)),
        5 => (PAGE - 1, 0),
        _ => (rng.random_range(0..512) * 8, 8),
    }
}

/// The references of `s`: an address space runs for a while (a scheduler's turn), and
/// pages are drawn as [`Cursor::next`] says.
fn references(s: &Stream) -> Vec<MemRef> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(s.seed);
    let mut cursor = Cursor { running: 0, last: 0, cold: 0 };
    (0..s.len)
        .map(|_| {
            let (asid, page) = cursor.next(&mut rng, s);
            let base = if s.shared { 0x40_0000 } else { 0x40_0000 + u64::from(asid) * 0x10_0000 };
            let (offset, size) = extent(&mut rng);
            let kind = match rng.random_range(0..20) {
                0..=10 => AccessKind::Load,
                11..=16 => AccessKind::Store,
                _ => AccessKind::IFetch,
            };
            MemRef { vaddr: ((base + page) << 12) + offset, asid, size, kind }
        })
        .collect()
}

/// Streams of 2 to 4 address spaces whose pages together are `low` to `high` tenths of
/// `frames`, of `per_frame` references per frame (so that a stream whose pages outnumber
/// the frames touches more pages than there are frames).
fn streams(frames: u64, low: u64, high: u64, per_frame: std::ops::Range<usize>) -> impl Strategy<Value = Stream> {
    (2u16..=4, low..=high, per_frame, any::<u64>(), any::<bool>()).prop_map(move |(asids, tenths, per_frame, seed, shared)| Stream {
        asids,
        pages: (frames * tenths / 10 / u64::from(asids)).max(1),
        len: frames as usize * per_frame,
        seed,
        shared,
    })
}

// ------------------------------------------------------------------------------------------
// Machines
// ------------------------------------------------------------------------------------------

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![Just(Policy::Lru), Just(Policy::TreePlru), Just(Policy::Fifo), Just(Policy::Random)]
}

/// An array of 4 KiB pages (sometimes also holding 2 MiB pages, which the OS never maps) of
/// any policy, associativity (above 32 ways, the TLB model's hashed index) and set count.
fn array() -> impl Strategy<Value = ArrayGeometry> {
    let ways = select(vec![1usize, 2, 3, 4, 6, 8, 12, 16, 48]);
    (ways, select(vec![1usize, 2, 3, 4, 8, 16]), policy(), any::<bool>()).prop_map(|(ways, sets, policy, huge)| {
        let page_sizes = if huge { vec![K4, PageSize::Size2M] } else { vec![K4] };
        ArrayGeometry { entries: ways * sets, ways, policy, page_sizes }
    })
}

/// An LRU array of 4 KiB pages of a shape the express path takes: a power-of-two number of
/// sets and 1, 2, 4, 8, 12 or 16 ways.
fn express_array() -> impl Strategy<Value = ArrayGeometry> {
    (select(vec![1usize, 2, 4, 8, 12, 16]), select(vec![1usize, 2, 4, 8, 16, 32]))
        .prop_map(|(ways, sets)| ArrayGeometry { entries: ways * sets, ways, policy: Policy::Lru, page_sizes: vec![K4] })
}

fn level(i: usize, data: ArrayGeometry, instr: Option<ArrayGeometry>, inclusive: bool) -> LevelGeometry {
    LevelGeometry { name: format!("L{}", i + 1), arrays: vec![data], instr_arrays: instr.into_iter().collect(), inclusive }
}

/// 1 to 3 levels of any arrays, each level split or not, inclusive or not.
fn hierarchy() -> impl Strategy<Value = Vec<LevelGeometry>> {
    prop::collection::vec((array(), prop::option::weighted(0.3, array()), any::<bool>()), 1..=3)
        .prop_map(|levels| levels.into_iter().enumerate().map(|(i, (data, instr, inclusive))| level(i, data, instr, inclusive)).collect())
}

/// 1 to 3 levels the express path takes: express arrays, a split first level at most, no
/// inclusive level.
fn express_hierarchy() -> impl Strategy<Value = Vec<LevelGeometry>> {
    (express_array(), prop::option::weighted(0.3, express_array()), prop::collection::vec(express_array(), 0..=2)).prop_map(|(first, instr, lower)| {
        let mut levels = vec![level(0, first, instr, false)];
        levels.extend(lower.into_iter().enumerate().map(|(i, data)| level(i + 1, data, None, false)));
        levels
    })
}

/// 0 to 3 Mosaic TLBs of arities 2 to 16.
fn mosaic_tlbs() -> impl Strategy<Value = Vec<MosaicSpec>> {
    let one = (select(vec![2u32, 4, 8, 16]), select(vec![1usize, 2, 4, 8]), select(vec![1usize, 2, 3, 8, 16]), policy());
    prop::collection::vec(one, 0..=3).prop_map(|tlbs| {
        tlbs.into_iter()
            .enumerate()
            .map(|(i, (arity, ways, sets, policy))| MosaicSpec { name: format!("mosaic-{i}"), geometry: MosaicGeometry { entries: ways * sets, ways, policy, arity } })
            .collect()
    })
}

/// An iceberg geometry of `buckets` buckets and its frames: the paper's (6 to 10 buckets of
/// 64 frames), or a small one of 8 frames a bucket (6 front, 3 choices of 2 back, backyard
/// ranges disjoint or not, either hash) or of 16 (12 front, 2 choices of 4 back).
fn iceberg() -> impl Strategy<Value = (IcebergSpec, u64)> {
    let small = |front, back, choices, all: bool, xxhash: bool| {
        let hash = if xxhash { HashSpec::Xxhash64 {} } else { HashSpec::default() };
        let backyard = if all { BackyardRanges::All } else { BackyardRanges::Disjoint };
        let mut spec = IcebergSpec { front, back, choices, backyard, hash, ..IcebergSpec::default() };
        spec.cpfn_bits = spec.min_cpfn_bits();
        spec
    };
    prop_oneof![
        (6u64..=10).prop_map(|buckets| (IcebergSpec::default(), buckets * 64)),
        (12u64..=40, any::<bool>(), any::<bool>()).prop_map(move |(buckets, all, xxhash)| (small(6, 2, 3, all, xxhash), buckets * 8)),
        (4u64..=16, any::<bool>()).prop_map(move |(buckets, all)| (small(12, 4, 2, all, false), buckets * 16)),
    ]
}

/// The OS of `frames` frames placed by `placement`, evicting by `eviction`, seeing use by
/// `recency`, with no swap cache.
fn os(frames: u64, placement: PlacementSpec, eviction: EvictionSpec, recency: Recency) -> OsSpec {
    OsSpec { eviction, recency, ..OsSpec::simple(frames * PAGE, placement) }
}

fn recency() -> impl Strategy<Value = Recency> {
    prop_oneof![Just(Recency::Access), Just(Recency::Fill)]
}

/// The eviction policies of an iceberg memory, with deltas whose share of memory is not
/// always a whole number of frames.
fn iceberg_eviction() -> impl Strategy<Value = EvictionSpec> {
    let delta = select(vec![0.05, 0.1, 0.13, 0.25]);
    prop_oneof![
        Just(EvictionSpec::Lru(Default::default())),
        Just(EvictionSpec::HorizonLru(Default::default())),
        delta.clone().prop_map(|delta| EvictionSpec::IcebergLru(IcebergLruSpec { delta })),
        delta.prop_map(|delta| EvictionSpec::LazyIcebergLru(LazyIcebergLruSpec { delta })),
    ]
}

/// An OS that evicts: sequential or set-associative placement under `lru`, or iceberg
/// placement under any policy it allows.
fn evicting_os() -> impl Strategy<Value = OsSpec> {
    let lru = EvictionSpec::Lru(Default::default());
    prop_oneof![
        1 => (64u64..=384, recency()).prop_map(move |(frames, r)| os(frames, PlacementSpec::Sequential, lru, r)),
        1 => (select(vec![1u64, 2, 4, 8, 16]), 8u64..=32, recency()).prop_map(move |(ways, sets, r)| os(ways * sets, PlacementSpec::SetAssociative { ways }, lru, r)),
        2 => (iceberg(), iceberg_eviction(), recency()).prop_map(|((spec, frames), eviction, r)| os(frames, PlacementSpec::Iceberg(spec), eviction, r)),
    ]
}

/// An OS that never evicts, of `frames` frames (iceberg: about that many).
fn lasting_os(frames: u64) -> impl Strategy<Value = OsSpec> {
    let none = EvictionSpec::default();
    prop_oneof![
        1 => Just(os(frames, PlacementSpec::Sequential, none, Recency::Access)),
        1 => select(vec![4u64, 8, 16]).prop_map(move |ways| os(frames.div_ceil(ways) * ways, PlacementSpec::SetAssociative { ways }, none, Recency::Access)),
        2 => iceberg().prop_map(move |(spec, _)| {
            let per_bucket = spec.bucket_frames();
            let buckets = frames.div_ceil(per_bucket).max(u64::from(spec.choices));
            os(buckets * per_bucket, PlacementSpec::Iceberg(spec), none, Recency::Access)
        }),
    ]
}

/// The machine of `os` with the hierarchy `tlb` (if any) and the Mosaic TLBs `mosaic` (if
/// the placement is iceberg); a machine left without a TLB gets one level.
fn machine(os: OsSpec, tlb: Option<Vec<LevelGeometry>>, mosaic: Vec<MosaicSpec>, seed: u64) -> CpuSpec {
    let mosaic = if matches!(os.placement, PlacementSpec::Iceberg(_)) { mosaic } else { Vec::new() };
    let tlb = match tlb {
        Some(levels) => levels,
        None if !mosaic.is_empty() => Vec::new(),
        None => vec![level(0, ArrayGeometry { entries: 16, ways: 4, policy: Policy::Lru, page_sizes: vec![K4] }, None, false)],
    };
    CpuSpec { name: "m".into(), seed, os, tlb, mosaic, pwc: None, timing: None }
}

/// Machines of any TLBs (Mosaic TLBs over iceberg memory) over the OSes of `oses`.
fn machines(oses: impl Strategy<Value = OsSpec>) -> impl Strategy<Value = CpuSpec> {
    (oses, prop::option::weighted(0.8, hierarchy()), mosaic_tlbs(), any::<u64>()).prop_map(|(os, tlb, mosaic, seed)| machine(os, tlb, mosaic, seed))
}

/// Machines of any TLBs over an OS that never evicts, of about `frames` frames.
fn lasting_machines(frames: std::ops::RangeInclusive<u64>) -> impl Strategy<Value = CpuSpec> {
    machines(frames.prop_flat_map(lasting_os))
}

/// Each machine of `machines` with a stream of `low` to `high` tenths of its frames and
/// `per_frame` references per frame (see [`streams`]), and the seed of its batches.
fn with_streams(machines: impl Strategy<Value = CpuSpec>, low: u64, high: u64, per_frame: std::ops::Range<usize>) -> impl Strategy<Value = (CpuSpec, Stream, u64)> {
    machines.prop_flat_map(move |spec| {
        let frames = spec.os.memory / PAGE;
        (Just(spec), streams(frames, low, high, per_frame.clone()), any::<u64>())
    })
}

// ------------------------------------------------------------------------------------------
// The comparison
// ------------------------------------------------------------------------------------------

/// Whether the machine's error `err` names the page and the reason of the model's `oom`.
/// The address named is the reference's on the general path and its page's first on the
/// express path (which walks by page), so either is taken.
fn names(err: &xlat::Error, oom: &RefOom) -> bool {
    let text = err.to_string();
    let (reason, words) = match oom.reason {
        RefNoFrame::Full => ("out of physical memory", "touches"),
        RefNoFrame::Conflict => ("associativity conflict", "may use for"),
    };
    let at = |vaddr: u64| text.contains(&format!("asid {} {words} {vaddr:#x}", oom.asid));
    text.contains(reason) && (at(oom.vaddr) || at(oom.vaddr & !(PAGE - 1)))
}

/// Feeds `refs` to the machine of `spec` and to the model, in batches of 1 to 1000
/// references (sizes, instruction counts and whether a batch goes through
/// `process_on_two_cores` drawn from `seed`), comparing every statistic after each batch.
/// A fault without a frame must stop both in the same batch, naming the same reference.
/// Returns the model's last statistics and its error, if any, and the loops the machine ran.
fn check(spec: &CpuSpec, refs: &[MemRef], seed: u64) -> Result<(MachineStats, Option<RefOom>, Vec<LoopUse>), TestCaseError> {
    let mut real = CpuMachine::new(spec);
    let mut model = RefMachine::new(spec);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut rest = refs;
    let mut done = 0;
    while !rest.is_empty() {
        let most = if rng.random_ratio(1, 4) { 16 } else { 1000 };
        let (refs, tail) = rest.split_at(rng.random_range(1..=most).min(rest.len()));
        rest = tail;
        let batch = Batch::new(refs.to_vec(), rng.random_range(0..3 * refs.len() as u64));
        let result = if rng.random_bool(0.5) { real.process_on_two_cores(&batch) } else { real.process(&batch) };
        let at = format!("batch of references {done}..{}", done + refs.len());
        if let Err(oom) = model.process(&batch.refs, batch.instructions) {
            let err = result.err();
            prop_assert!(err.as_ref().is_some_and(|e| names(e, &oom)), "{}: the model found no frame ({:?}), the machine: {:?}", at, oom, err);
            return Ok((model.stats(), Some(oom), real.stats().loops));
        }
        prop_assert!(result.is_ok(), "{}: the machine failed where the model did not: {:?}", at, result);
        prop_assert_eq!(MachineStats { loops: Vec::new(), kernel_work: None, ..real.stats() }, model.stats(), "{}", at);
        done += refs.len();
    }
    Ok((model.stats(), None, real.stats().loops))
}

/// Drives the OS of `spec` alone and the model's, as a machine whose TLBs hit at random
/// (only on mapped pages) and whose walks are its first TLB's three times in four: the frame
/// and CPFN of every walk, the pages left for a shootdown after every reference and, at the
/// end, every counter must be the model's. This sees what a machine's statistics cannot:
/// which frame (and iceberg slot) each page takes.
fn check_os(spec: &OsSpec, refs: &[MemRef], seed: u64) -> Result<OsStats, TestCaseError> {
    let mut os = Os::new(spec, seed);
    let mut model = RefOs::new(spec);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for (i, r) in refs.iter().enumerate() {
        let (asid, vaddr, vpn) = (r.asid, r.vaddr, r.vaddr >> 12);
        if model.frame(asid, vpn).is_none() || rng.random_bool(0.5) {
            let first = rng.random_ratio(3, 4);
            let by = if first { WalkBy::FirstTlb } else { WalkBy::OtherTlb };
            let frame = os.walk(asid, vaddr, by, &mut NoReads).map(|w| w.translation.pfn.0).ok();
            prop_assert_eq!(frame, model.walk(asid, vaddr, first).ok(), "reference {}: frame", i);
            prop_assert_eq!(os.cpfn(asid, vaddr), model.cpfn(asid, vpn), "reference {}: CPFN", i);
        }
        if os.tracks_use() {
            let frame = model.frame(asid, vpn).expect("walked or hit: mapped");
            os.access(Pfn(frame), r.kind == AccessKind::Store).expect("no copy without the swap cache");
            model.access(asid, vpn);
        }
        let shot: Vec<(Asid, u64)> = os.take_shootdowns().map(|pages| pages.map(|p| (p.asid, p.vpn.0)).collect()).unwrap_or_default();
        prop_assert_eq!(shot, model.take_shootdowns(), "reference {}: pages evicted", i);
    }
    prop_assert_eq!(os.stats(), model.stats());
    Ok(model.stats())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// The OS alone under memory pressure: every frame, CPFN and eviction.
    #[test]
    fn prop_os_places_and_evicts_every_page_as_the_naive_model_does(
        (spec, stream, seed) in evicting_os().prop_flat_map(|os| { let f = os.memory / PAGE; (Just(os), streams(f, 15, 30, 6..10), any::<u64>()) })
    ) {
        let stats = check_os(&spec, &references(&stream), seed)?;
        prop_assert!(stats.evictions > 0, "no pressure: {:?}", stats);
    }

    /// Under memory pressure, every OS that evicts, with conventional and Mosaic TLBs.
    #[test]
    fn prop_machine_under_pressure_matches_the_naive_model(
        (spec, stream, seed) in with_streams(machines(evicting_os()), 15, 30, 6..10)
    ) {
        let (stats, oom, _) = check(&spec, &references(&stream), seed)?;
        prop_assert_eq!(oom, None);
        prop_assert!(stats.os.evictions > 0, "no pressure: {:?}", stats.os);
    }

    /// Without eviction (memory twice the footprint or more), any TLBs: walks, faults and
    /// every TLB's counters.
    #[test]
    fn prop_machine_without_eviction_matches_the_naive_model(
        (spec, stream, seed) in with_streams(lasting_machines(256..=1024), 2, 5, 2..5)
    ) {
        check(&spec, &references(&stream), seed)?;
    }

    /// The express path: no Mosaic TLB, an OS that never evicts, LRU arrays of the shapes it
    /// takes (and the levels below the first replayed on a second core).
    #[test]
    fn prop_express_path_matches_the_naive_model(
        (spec, stream, seed) in with_streams(
            ((256u64..=1024).prop_flat_map(lasting_os), express_hierarchy(), any::<u64>()).prop_map(|(os, tlb, seed)| machine(os, Some(tlb), Vec::new(), seed)),
            2, 5, 3..8,
        )
    ) {
        check(&spec, &references(&stream), seed)?;
    }

    /// Without eviction and with memory smaller than the footprint: the fault that finds no
    /// frame is the same, in the same batch, for the same reason.
    #[test]
    fn prop_a_fault_without_a_frame_fails_where_the_naive_model_does(
        (spec, stream, seed) in with_streams(lasting_machines(64..=256), 20, 40, 8..16)
    ) {
        let (_, oom, _) = check(&spec, &references(&stream), seed)?;
        prop_assert!(oom.is_some(), "the footprint fitted");
    }
}

/// Every placement with every eviction policy it allows, under both recencies, with a
/// split, inclusive two-level hierarchy and two Mosaic TLBs (iceberg), with Mosaic TLBs
/// alone (whose first TLB's walks are the uses under `recency = "fill"`) and with the
/// hierarchy alone: each at least once in every run, whatever proptest draws.
#[test]
fn every_policy_and_recency_matches_the_naive_model() {
    let array = |entries, ways, policy| ArrayGeometry { entries, ways, policy, page_sizes: vec![K4] };
    let tlb = vec![level(0, array(16, 4, Policy::TreePlru), Some(array(8, 2, Policy::Fifo)), false), level(1, array(64, 8, Policy::Lru), None, true)];
    let mosaic = |arity, policy| MosaicSpec { name: format!("mosaic-{arity}"), geometry: MosaicGeometry { entries: 32, ways: 4, policy, arity } };
    let mosaics = vec![mosaic(4, Policy::Lru), mosaic(16, Policy::Random)];
    let lru = EvictionSpec::Lru(Default::default());
    let paper = PlacementSpec::Iceberg(IcebergSpec::default());
    let placements = [(PlacementSpec::Sequential, lru, 256), (PlacementSpec::SetAssociative { ways: 4 }, lru, 256)];
    let iceberg = [
        lru,
        EvictionSpec::HorizonLru(Default::default()),
        EvictionSpec::IcebergLru(IcebergLruSpec { delta: 0.13 }),
        EvictionSpec::LazyIcebergLru(LazyIcebergLruSpec { delta: 0.13 }),
    ];
    let all = placements.into_iter().chain(iceberg.into_iter().map(|e| (paper, e, 384)));
    for (placement, eviction, frames) in all {
        for recency in [Recency::Access, Recency::Fill] {
            let shapes = [(Some(tlb.clone()), Vec::new()), (Some(tlb.clone()), mosaics.clone()), (None, mosaics.clone())];
            for (levels, mosaic) in shapes {
                if !mosaic.is_empty() && !matches!(placement, PlacementSpec::Iceberg(_)) {
                    continue;
                }
                let spec = machine(os(frames, placement, eviction, recency), levels, mosaic, 7);
                let stream = Stream { asids: 3, pages: frames * 2 / 3, len: 4000, seed: 11, shared: true };
                let (stats, _, _) = check(&spec, &references(&stream), 5).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
                assert!(stats.os.evictions > 100, "{spec:?}: {:?}", stats.os);
            }
        }
    }
}

/// The ways of the arrays the loops are compiled for.
const SPECIALIZED_WAYS: [usize; 6] = [1, 2, 4, 8, 12, 16];

/// A machine for each of the CPU machine's loops, and the loop it must take: the express
/// path for each specialized associativity (alone and over a second level, which a second
/// core may replay); one level of each specialized associativity with use tracked or not and
/// Mosaic TLBs or not; the general path for each combination of one level or several, use
/// tracked or not, Mosaic TLBs or not.
fn one_machine_per_loop() -> Vec<(CpuSpec, LoopPath)> {
    let lru = |entries, ways| ArrayGeometry { entries, ways, policy: Policy::Lru, page_sizes: vec![K4] };
    let fifo = ArrayGeometry { policy: Policy::Fifo, ..lru(16, 4) };
    let second = level(1, lru(256, 8), None, false);
    let mosaic = vec![MosaicSpec { name: "mosaic-4".into(), geometry: MosaicGeometry { entries: 32, ways: 4, policy: Policy::Lru, arity: 4 } }];
    let iceberg = PlacementSpec::Iceberg(IcebergSpec::default());
    // Use is tracked under eviction; Mosaic TLBs need iceberg memory.
    let os_of = |track: bool, mosaic: bool| {
        let placement = if mosaic { iceberg } else { PlacementSpec::Sequential };
        let eviction = match (track, mosaic) {
            (false, _) => EvictionSpec::default(),
            (true, false) => EvictionSpec::Lru(Default::default()),
            (true, true) => EvictionSpec::HorizonLru(Default::default()),
        };
        os(if track { 384 } else { 4096 }, placement, eviction, Recency::Access)
    };
    let with = |track, mosaic_tlbs: bool, tlb| machine(os_of(track, mosaic_tlbs), tlb, if mosaic_tlbs { mosaic.clone() } else { Vec::new() }, 3);
    let mut machines = Vec::new();
    for ways in SPECIALIZED_WAYS {
        let first = level(0, lru(16 * ways, ways), None, false);
        machines.push((with(false, false, Some(vec![first.clone()])), LoopPath::Express { ways }));
        machines.push((with(false, false, Some(vec![first.clone(), second.clone()])), LoopPath::Express { ways }));
        for (track, mosaic) in [(false, false), (true, false), (false, true), (true, true)] {
            // Without tracking or Mosaic TLBs, an instruction side the express path declines.
            let instr = (!track && !mosaic).then(|| fifo.clone());
            let spec = with(track, mosaic, Some(vec![level(0, lru(16 * ways, ways), instr, false)]));
            let level = CpuMachine::new(&spec).loop_path();
            assert!(matches!(level, LoopPath::SingleLevel { level, .. } if level.ways == ways), "{ways} ways: {level:?}");
            machines.push((spec, LoopPath::SingleLevel { level: single_level(level), track, mosaic }));
        }
    }
    for (track, mosaic) in [(false, false), (true, false), (false, true), (true, true)] {
        let general = level(0, lru(48, 3), None, false);
        machines.push((with(track, mosaic, Some(vec![general.clone()])), LoopPath::General { one_level: true, track, mosaic }));
        machines.push((with(track, mosaic, Some(vec![general, second.clone()])), LoopPath::General { one_level: false, track, mosaic }));
    }
    machines
}

/// The single level of `path`, a [`LoopPath::SingleLevel`].
fn single_level(path: LoopPath) -> xlat::tlb::SingleLevel {
    match path {
        LoopPath::SingleLevel { level, .. } => level,
        other => panic!("not a single level: {other:?}"),
    }
}

/// Every loop of the CPU machine (each of the 38 compiled forms, with and without a second
/// core where it may use one) gives the naive model's statistics on streams of several
/// address spaces, with eviction where use is tracked and Mosaic TLBs where the loop has
/// them.
#[test]
fn every_loop_matches_the_naive_model() {
    let mut second_cores = Vec::new();
    let machines = one_machine_per_loop();
    assert_eq!(machines.len(), 2 * 6 + 4 * 6 + 8);
    for (spec, path) in machines {
        assert_eq!(CpuMachine::new(&spec).loop_path(), path, "{spec:?}");
        let frames = spec.os.memory / PAGE;
        let pages = if spec.os.eviction.evicts() { frames * 2 } else { frames / 8 };
        let stream = Stream { asids: 3, pages: pages / 3, len: 6000, seed: 17, shared: false };
        let (stats, oom, loops) = check(&spec, &references(&stream), 9).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert_eq!(oom, None, "{path:?}");
        assert_eq!(stats.os.evictions > 0, spec.os.eviction.evicts(), "{path:?}: {:?}", stats.os);
        // The machine ran on its path, in sequence and, where it may, with a second core.
        let lead = |u: &&LoopUse| u.path == path || (u.second_core == SecondCore::Hierarchy && matches!(u.path, LoopPath::General { one_level: false, .. }));
        assert!(loops.iter().filter(lead).count() == loops.len(), "{path:?}: ran {loops:?}");
        second_cores.extend(loops.iter().map(|u| u.second_core));
    }
    for mode in [SecondCore::None, SecondCore::Hierarchy, SecondCore::LowerLevels] {
        assert!(second_cores.contains(&mode), "no machine used {mode:?}");
    }
}
