//! Criterion benchmarks of the engine's hot paths: one TLB array, one Mosaic TLB array, the
//! machine loop over a reference batch, and synthetic generation; and, as a yardstick of the
//! host, the floor: the least work any simulation of one TLB must do per reference.
//! `xlat bench` measures whole runs end to end.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use xlat::config::raw::{RawMachine, RawWays};
use xlat::config::validate;
use xlat::memref::Batch;
use xlat::source::synthetic::{Pattern, Synthetic, SyntheticSpec};
use xlat::source::RefSource;
use xlat::tlb::{ArrayGeometry, MosaicGeometry, MosaicLookup, MosaicTlb, Policy, TlbArray};
use xlat::{PageSize, Pfn, Translation, Vpn};

const REFS: usize = 1 << 16;

fn uniform(footprint: u64) -> Batch {
    let spec = SyntheticSpec {
        pattern: Pattern::Uniform,
        footprint,
        refs: REFS as u64,
        base: 0x7f00_0000_0000,
        size: 8,
        store_fraction: 0.0,
        asid: 0,
        seed: 7,
    };
    let mut batch = Batch::with_capacity(REFS);
    Synthetic::new(spec).unwrap().fill(&mut batch, REFS).unwrap();
    batch
}

fn tlb_array(c: &mut Criterion) {
    let batch = uniform(16 << 20);
    let mut group = c.benchmark_group("tlb_array");
    group.throughput(Throughput::Elements(REFS as u64));
    for (name, ways, policy) in [("1024x4-lru", 4, Policy::Lru), ("1024x4-plru", 4, Policy::TreePlru), ("1024-full-lru", 1024, Policy::Lru)] {
        let geometry = ArrayGeometry { entries: 1024, ways, policy, page_sizes: vec![PageSize::Size4K] };
        let mut array = TlbArray::new(&geometry, 1);
        group.bench_function(name, |b| {
            b.iter(|| {
                for r in &batch.refs {
                    if array.lookup(0, r.vaddr).is_none() {
                        let vpn = r.vaddr >> 12;
                        array.insert_absent(&Translation { asid: 0, vpn: Vpn(vpn), pfn: Pfn(vpn), size: PageSize::Size4K });
                    }
                }
                black_box(array.occupancy())
            })
        });
    }
    group.finish();
}

/// Lookups, and fills after misses and sub-misses, of Mosaic arrays of arity 4 (ToCs of 7-bit
/// CPFNs with one unmapped sub-page in eight). 16 MiB is 1024 Mosaic pages (fits), 256 MiB
/// 16384 (mostly misses).
fn mosaic_tlb(c: &mut Criterion) {
    let mut group = c.benchmark_group("mosaic_tlb");
    group.throughput(Throughput::Elements(REFS as u64));
    for (footprint_name, footprint) in [("16MiB", 16u64 << 20), ("256MiB", 256 << 20)] {
        let batch = uniform(footprint);
        for (name, ways, policy) in [("1024x4-lru", 4, Policy::Lru), ("1024x4-plru", 4, Policy::TreePlru), ("1024-full-lru", 1024, Policy::Lru)] {
            let geometry = MosaicGeometry { entries: 1024, ways, policy, arity: 4 };
            let mut tlb = MosaicTlb::new(&geometry, 0x7f, 1);
            group.bench_function(format!("{name}/uniform-{footprint_name}"), |b| {
                b.iter(|| {
                    for r in &batch.refs {
                        let vpn = Vpn(r.vaddr >> 12);
                        if !matches!(tlb.lookup(0, vpn), MosaicLookup::Hit(_)) {
                            let toc = [0, 1, 2, 3].map(|i| if (vpn.0 >> 2) % 8 == i { 0x7f } else { i as u8 });
                            tlb.fill(0, vpn, &toc);
                        }
                    }
                    black_box(tlb.counters().hits)
                })
            });
        }
    }
    group.finish();
}

fn machine(c: &mut Criterion) {
    let mut group = c.benchmark_group("machine");
    group.throughput(Throughput::Elements(REFS as u64));
    let presets: [(&str, &str, Option<RawWays>); 2] =
        [("single-tlb-1024x4", "single-tlb", Some(RawWays::Count(4))), ("skylake-like", "skylake-like", None)];
    for (footprint_name, footprint) in FOOTPRINTS {
        let batch = uniform(footprint);
        for (name, preset, ways) in &presets {
            let raw = RawMachine { name: name.to_string(), preset: Some(preset.to_string()), ways: *ways, ..RawMachine::default() };
            let mut m = validate::machine(&raw, "bench", 1).unwrap().build().unwrap();
            m.process(&batch).unwrap();
            group.bench_function(format!("{name}/uniform-{footprint_name}"), |b| b.iter(|| m.process(black_box(&batch)).unwrap()));
        }
    }
    group.finish();
}

/// The footprints of the machine and floor benchmarks: hits once warm, 75% and 98% misses in
/// a 1024-entry TLB.
const FOOTPRINTS: [(&str, u64); 3] = [("2MiB", 2 << 20), ("16MiB", 16 << 20), ("256MiB", 256 << 20)];

/// A bare exact-LRU array of `SETS` sets of `WAYS` ways: tags, frames and stamps, nothing else
/// (fixed lengths, so the compiler drops every bounds check).
struct BareLru<const SETS: usize, const WAYS: usize> {
    tags: Box<[[u64; WAYS]; SETS]>,
    frames: Box<[[u32; WAYS]; SETS]>,
    stamps: Box<[[u64; WAYS]; SETS]>,
}

/// A boxed `[[T; W]; S]` filled with `value`.
fn boxed<T: Copy, const S: usize, const W: usize>(value: T) -> Box<[[T; W]; S]> {
    vec![[value; W]; S].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("S sets"))
}

impl<const SETS: usize, const WAYS: usize> BareLru<SETS, WAYS> {
    fn new() -> Self {
        BareLru { tags: boxed(u64::MAX), frames: boxed(0), stamps: boxed(0) }
    }

    /// The frame of page `tag`, stamping it with `clock` on a hit.
    #[inline(always)]
    fn probe(&mut self, tag: u64, clock: u64) -> Option<u32> {
        let set = tag as usize % SETS;
        let way = (0..WAYS).find(|&w| self.tags[set][w] == tag)?;
        self.stamps[set][way] = clock;
        Some(self.frames[set][way])
    }

    /// Puts page `tag` at `frame` in place of its set's least recently used way.
    #[inline(always)]
    fn insert(&mut self, tag: u64, frame: u32, clock: u64) {
        let set = tag as usize % SETS;
        let way = (0..WAYS).min_by_key(|&w| self.stamps[set][w]).unwrap_or(0);
        (self.tags[set][way], self.frames[set][way], self.stamps[set][way]) = (tag, frame, clock);
    }
}

/// A flat page table over the pages of `batch` that maps on first touch.
struct BarePageTable {
    first_page: u64,
    frames: Vec<u32>,
    next_frame: u32,
}

impl BarePageTable {
    fn new(batch: &Batch, footprint: u64) -> Self {
        let first_page = batch.refs.iter().map(|r| r.vaddr >> 12).min().unwrap_or(0);
        BarePageTable { first_page, frames: vec![u32::MAX; (footprint >> 12) as usize], next_frame: 0 }
    }

    #[inline(always)]
    fn walk(&mut self, page: u64) -> u32 {
        let pte = &mut self.frames[(page - self.first_page) as usize];
        if *pte == u32::MAX {
            *pte = self.next_frame;
            self.next_frame += 1;
        }
        *pte
    }
}

/// The floors under `machine/single-tlb-1024x4` and `machine/skylake-like`: bare exact-LRU
/// arrays of tags, frames and stamps (one 1024-entry 4-way array; or Skylake's 64-entry
/// 4-way L1 in front of its 1536-entry 12-way L2, not inclusive) over a flat page table that
/// maps on first touch, counting misses, and nothing else (no ASIDs, page sizes, statistics
/// per level, straddling references, configurable geometry or policy). How far a machine is
/// from its floor is the cost of xlat's generality; the floor itself is what the host allows.
fn floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("floor");
    group.throughput(Throughput::Elements(REFS as u64));
    for (footprint_name, footprint) in FOOTPRINTS {
        let batch = uniform(footprint);
        let mut table = BarePageTable::new(&batch, footprint);
        let mut tlb = BareLru::<256, 4>::new();
        let (mut clock, mut misses) = (0u64, 0u64);
        group.bench_function(format!("1024x4-lru/uniform-{footprint_name}"), |b| {
            b.iter(|| {
                for r in &batch.refs {
                    let tag = r.vaddr >> 12;
                    clock += 1;
                    if tlb.probe(tag, clock).is_none() {
                        misses += 1;
                        tlb.insert(tag, table.walk(tag), clock);
                    }
                }
                black_box((misses, tlb.frames[0][0]))
            })
        });
        let mut table = BarePageTable::new(&batch, footprint);
        let (mut l1, mut l2) = (BareLru::<16, 4>::new(), BareLru::<128, 12>::new());
        group.bench_function(format!("skylake-like/uniform-{footprint_name}"), |b| {
            b.iter(|| {
                for r in &batch.refs {
                    let tag = r.vaddr >> 12;
                    clock += 1;
                    if l1.probe(tag, clock).is_some() {
                        continue;
                    }
                    let frame = match l2.probe(tag, clock) {
                        Some(frame) => frame,
                        None => {
                            misses += 1;
                            let frame = table.walk(tag);
                            l2.insert(tag, frame, clock);
                            frame
                        }
                    };
                    l1.insert(tag, frame, clock);
                }
                black_box((misses, l1.frames[0][0]))
            })
        });
    }
    group.finish();
}

fn synthetic(c: &mut Criterion) {
    let mut group = c.benchmark_group("synthetic");
    group.throughput(Throughput::Elements(REFS as u64));
    group.bench_function("uniform-256MiB", |b| b.iter(|| black_box(uniform(256 << 20).len())));
    // Zipf's alias table is built once (for 1 GiB of pages it takes a while); each iteration
    // draws one batch from the running stream.
    let spec = SyntheticSpec {
        pattern: Pattern::Zipf { exponent: 0.99 },
        footprint: 1 << 30,
        refs: u64::MAX,
        base: 0x7f00_0000_0000,
        size: 8,
        store_fraction: 0.0,
        asid: 0,
        seed: 7,
    };
    let mut zipf = Synthetic::new(spec).unwrap();
    let mut batch = Batch::with_capacity(REFS);
    group.bench_function("zipf-1GiB", |b| {
        b.iter(|| {
            batch.clear();
            black_box(zipf.fill(&mut batch, REFS).unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, tlb_array, mosaic_tlb, machine, floor, synthetic);
criterion_main!(benches);
