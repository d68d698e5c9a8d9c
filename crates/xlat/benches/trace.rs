//! Native trace read speed: decodes ~10M-reference files of mixed streams (sequential code
//! with branches, stack traffic, strided arrays, heap accesses). Two heap models bracket real
//! programs: `uniform_heap` draws every heap address uniformly from 1 GiB (incompressible,
//! the worst case); `hot_heap` draws 97% of heap accesses from 64 hot objects.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use xlat::source::RefSource;
use xlat::trace::{NativeReader, NativeWriter};
use xlat::{Batch, MemRef};

const INSTRUCTIONS: u64 = 6_000_000;
/// References per `fill`, as the engine's sources use (16 Ki x 16 bytes stays in L2).
const BATCH: usize = 1 << 14;

/// Writes the stream: per instruction one fetch, and with some probability a load or store.
/// With `hot`, heap accesses mostly go to a small set of hot objects.
fn write_trace(path: &std::path::Path, hot: bool) -> u64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let mut w = NativeWriter::create(path, &serde_json::json!({"program": "synthetic bench"})).unwrap();
    let (mut pc, mut sp, mut arr) = (0x40_0000u64, 0x7fff_ffff_e000u64, 0x10_0000_0000u64);
    let mut objects: Vec<u64> = (0..64).map(|_| 0x5555_0000_0000 + rng.random_range(0..1u64 << 30)).collect();
    let mut refs = 0;
    for _ in 0..INSTRUCTIONS {
        pc = if rng.random_ratio(1, 8) {
            0x40_0000 + rng.random_range(0..1u64 << 20)
        } else {
            pc + rng.random_range(1..8u64)
        };
        w.write(&MemRef::ifetch(pc, 4), 1).unwrap();
        refs += 1;
        let heap = |rng: &mut Xoshiro256PlusPlus, objects: &mut Vec<u64>| {
            if hot && !rng.random_ratio(3, 100) {
                objects[rng.random_range(0..64)] + rng.random_range(0..8u64) * 8
            } else {
                let a = 0x5555_0000_0000 + rng.random_range(0..1u64 << 30);
                objects[rng.random_range(0..64)] = a;
                a
            }
        };
        let r = match rng.random_range(0..10u32) {
            0..=1 => MemRef::load(sp - rng.random_range(0..32u64) * 8, 8),
            2 => MemRef::store(sp - rng.random_range(0..32u64) * 8, 8),
            3..=4 => {
                arr += 8;
                MemRef::load(arr, 8)
            }
            5 => MemRef::load(heap(&mut rng, &mut objects), 4),
            6 => MemRef::store(heap(&mut rng, &mut objects), 4),
            _ => continue,
        };
        if rng.random_ratio(1, 1000) {
            sp -= 64;
        }
        w.write(&r, 0).unwrap();
        refs += 1;
    }
    w.finish().unwrap();
    refs
}

fn read_all(path: &std::path::Path, batch: &mut Batch) -> u64 {
    let mut r = NativeReader::open(path).unwrap();
    let mut n = 0;
    loop {
        batch.clear();
        let got = r.fill(batch, BATCH).unwrap();
        if got == 0 {
            return n;
        }
        n += got as u64;
        black_box(&batch.refs);
    }
}

/// User+system CPU time of this process in seconds (Linux, 10 ms ticks), so the figure holds
/// on a machine shared with other jobs, where wall time includes waiting for a core.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn report_cpu_throughput(path: &std::path::Path, refs: u64, batch: &mut Batch) {
    let rounds = 10;
    let (Some(t0), w0) = (cpu_seconds(), std::time::Instant::now()) else { return };
    for _ in 0..rounds {
        assert_eq!(read_all(path, batch), refs);
    }
    let cpu = cpu_seconds().unwrap_or(t0) - t0;
    let wall = w0.elapsed().as_secs_f64();
    let m = (refs * rounds) as f64 / 1e6;
    eprintln!("native read: {:.1} M refs/s per CPU second, {:.1} M refs/s wall", m / cpu, m / wall);
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("native_read");
    g.sample_size(20);
    let mut batch = Batch::with_capacity(BATCH);
    for (name, hot) in [("uniform_heap", false), ("hot_heap", true)] {
        let path = dir.path().join(format!("{name}.xlat"));
        let refs = write_trace(&path, hot);
        let size = std::fs::metadata(&path).unwrap().len();
        eprintln!("{name}: {refs} references, {size} bytes ({:.2} bytes/reference)", size as f64 / refs as f64);
        report_cpu_throughput(&path, refs, &mut batch);
        g.throughput(Throughput::Elements(refs));
        g.bench_function(name, |b| b.iter(|| assert_eq!(read_all(&path, &mut batch), refs)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
