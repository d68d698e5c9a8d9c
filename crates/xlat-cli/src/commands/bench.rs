//! `xlat bench`: fixed benchmark configurations, each timed end to end (source on its reader
//! thread, simulation on the main thread), printing references per second.

use crate::report::thousands;
use crate::Outcome;
use anyhow::Result;
use clap::Args;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use xlat::config::raw::{OneOrMany, RawMachine, RawMosaic, RawOs, RawPwc, RawTiming, RawWays};
use xlat::mmu::PageTableSpec;
use xlat::config::size::ByteSize;
use xlat::os::EvictionSpec;
use xlat::os::Placement;
use xlat::config::validate;
use xlat::sim::experiment::feed;
use xlat::source::synthetic::{Pattern, Synthetic, SyntheticSpec};
use xlat::memref::Batch;
use xlat::sim::experiment::Progress;
use xlat::source::{Limited, RefSource};
use xlat::workload::{BuiltinSpec, Scale};
use xlat::trace::{self, NativeWriter, TraceFormat};
use xlat::MemRef;

/// Arguments of `xlat bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// References per benchmark.
    #[arg(long, default_value_t = 50_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    refs: u64,
    /// Run only the benchmarks whose name contains this text.
    #[arg(long, value_parser = filter_arg)]
    filter: Option<String>,
    /// Rounds: every benchmark runs once per round, round after round, and prints the median
    /// of its runs with their range (a shared host's noise then falls on all alike).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
}

/// One run of a benchmark.
struct Measurement {
    name: &'static str,
    description: &'static str,
    refs: u64,
    refs_per_second: f64,
    /// Built-in workloads: seconds of computation before the first batch (set-up not
    /// emitted), and the rate from the first batch on.
    first_batch_seconds: Option<f64>,
    streaming_refs_per_second: Option<f64>,
}

/// A benchmark's runs, summarized by their medians: what `xlat bench` prints.
#[derive(serde::Serialize)]
struct Summary {
    name: &'static str,
    description: &'static str,
    /// References of each run.
    refs: u64,
    seconds: f64,
    refs_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_batch_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    streaming_refs_per_second: Option<f64>,
    /// The rate of every run, in the order run.
    runs_refs_per_second: Vec<f64>,
}

impl Summary {
    /// The medians of `runs`, runs of one benchmark (at least one, all of the same length):
    /// `seconds` is the time the median rate takes.
    fn of(runs: &[Measurement]) -> Summary {
        let median_of = |value: fn(&Measurement) -> Option<f64>| -> Option<f64> {
            median(&runs.iter().map(value).collect::<Option<Vec<f64>>>()?)
        };
        let refs_per_second = median_of(|m| Some(m.refs_per_second)).expect("at least one run");
        Summary {
            name: runs[0].name,
            description: runs[0].description,
            refs: runs[0].refs,
            seconds: runs[0].refs as f64 / refs_per_second,
            refs_per_second,
            first_batch_seconds: median_of(|m| m.first_batch_seconds),
            streaming_refs_per_second: median_of(|m| m.streaming_refs_per_second),
            runs_refs_per_second: runs.iter().map(|m| m.refs_per_second).collect(),
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// A benchmark: a name, what it measures, and how to build its source and machines.
struct Case {
    name: &'static str,
    description: &'static str,
    pattern: Pattern,
    footprint: u64,
    machine: fn() -> RawMachine,
}

fn single_tlb() -> RawMachine {
    RawMachine { name: "single".into(), preset: Some("single-tlb".into()), ways: Some(RawWays::Count(4)), ..RawMachine::default() }
}

/// `single-tlb` over radix tables with EMT's walk caches and cycle model (every parameter at
/// EMT's value): walks and data references through the caches.
fn radix_timed() -> RawMachine {
    RawMachine {
        os: Some(RawOs { page_table: PageTableSpec::named("radix"), ..RawOs::default() }),
        pwc: Some(RawPwc::default()),
        timing: Some(RawTiming::default()),
        ..single_tlb()
    }
}

/// A 1024-entry 4-way vanilla TLB and a Mosaic-4 TLB of the same shape over a 768 MiB
/// iceberg memory with Horizon LRU: the Mosaic paper's simulated machine under pressure.
fn mosaic_horizon() -> RawMachine {
    RawMachine {
        os: Some(RawOs {
            memory: Some(ByteSize(768 << 20)),
            placement: Some(Placement::Iceberg),
            eviction: EvictionSpec::named("horizon-lru"),
            ..RawOs::default()
        }),
        mosaic: Some(vec![RawMosaic { arity: Some(OneOrMany::One(4)), ways: Some(OneOrMany::One(RawWays::Count(4))), ..RawMosaic::default() }]),
        ..single_tlb()
    }
}

/// The `mosaic-paper` machine of the built-in default experiment: a 1024-entry 4-way vanilla
/// TLB and Mosaic-4 and Mosaic-16 TLBs of the same shape over an iceberg memory.
fn mosaic_paper() -> RawMachine {
    RawMachine {
        name: "mosaic-paper".into(),
        preset: Some("mosaic-paper".into()),
        ways: Some(RawWays::Count(4)),
        os: Some(RawOs { placement: Some(Placement::Iceberg), ..RawOs::default() }),
        mosaic: Some(vec![RawMosaic { arity: Some(OneOrMany::Many(vec![4, 16])), ways: Some(OneOrMany::One(RawWays::Count(4))), ..RawMosaic::default() }]),
        ..RawMachine::default()
    }
}

fn skylake() -> RawMachine {
    RawMachine { name: "skylake".into(), preset: Some("skylake-like".into()), ..RawMachine::default() }
}

/// The skylake-like preset with transparent huge pages (sequential placement, which keeps
/// runs of free frames for them).
fn skylake_thp() -> RawMachine {
    let os = RawOs { placement: Some(Placement::Sequential), thp: Some(xlat::os::Thp::Always), ..RawOs::default() };
    RawMachine { name: "skylake-thp".into(), os: Some(os), ..skylake() }
}

const CASES: [Case; 11] = [
    Case {
        name: "tlb1024x4-uniform-256MiB",
        description: "one 1024-entry 4-way LRU TLB, uniform random 8-byte loads over 256 MiB (98% misses)",
        pattern: Pattern::Uniform,
        footprint: 256 << 20,
        machine: single_tlb,
    },
    Case {
        name: "tlb1024x4-uniform-16MiB",
        description: "one 1024-entry 4-way LRU TLB, uniform random 8-byte loads over 16 MiB (75% misses)",
        pattern: Pattern::Uniform,
        footprint: 16 << 20,
        machine: single_tlb,
    },
    Case {
        name: "tlb1024x4-uniform-2MiB",
        description: "one 1024-entry 4-way LRU TLB, uniform random 8-byte loads over 2 MiB (hits once warm)",
        pattern: Pattern::Uniform,
        footprint: 2 << 20,
        machine: single_tlb,
    },
    Case {
        name: "tlb1024x4-sequential-1GiB",
        description: "one 1024-entry 4-way LRU TLB, sequential 8-byte loads over 1 GiB (one miss per 512 refs)",
        pattern: Pattern::Sequential,
        footprint: 1 << 30,
        machine: single_tlb,
    },
    Case {
        name: "tlb1024x4-zipf-1GiB",
        description: "one 1024-entry 4-way LRU TLB, Zipf(0.99) 8-byte loads over 1 GiB",
        pattern: Pattern::Zipf { exponent: 0.99 },
        footprint: 1 << 30,
        machine: single_tlb,
    },
    Case {
        name: "skylake-uniform-256MiB",
        description: "skylake-like two-level preset, uniform random 8-byte loads over 256 MiB",
        pattern: Pattern::Uniform,
        footprint: 256 << 20,
        machine: skylake,
    },
    Case {
        name: "skylake-sequential-1GiB",
        description: "skylake-like two-level preset, sequential 8-byte loads over 1 GiB",
        pattern: Pattern::Sequential,
        footprint: 1 << 30,
        machine: skylake,
    },
    Case {
        name: "skylake-zipf-1GiB",
        description: "skylake-like two-level preset, Zipf(0.99) 8-byte loads over 1 GiB",
        pattern: Pattern::Zipf { exponent: 0.99 },
        footprint: 1 << 30,
        machine: skylake,
    },
    Case {
        name: "mosaic4-horizon-zipf-1GiB",
        description: "vanilla + Mosaic-4 1024-entry 4-way TLBs, iceberg memory of 768 MiB with Horizon LRU, Zipf(0.99) loads over 1 GiB",
        pattern: Pattern::Zipf { exponent: 0.99 },
        footprint: 1 << 30,
        machine: mosaic_horizon,
    },
    Case {
        name: "mosaic4-horizon-sequential-1GiB",
        description: "vanilla + Mosaic-4 1024-entry 4-way TLBs, iceberg memory of 768 MiB with Horizon LRU, sequential loads over 1 GiB",
        pattern: Pattern::Sequential,
        footprint: 1 << 30,
        machine: mosaic_horizon,
    },
    Case {
        name: "radix-pwc-timed-uniform-256MiB",
        description: "one 1024-entry 4-way LRU TLB over 4-level radix tables with EMT's walk caches and cycle model (three cache levels), uniform random 8-byte loads over 256 MiB",
        pattern: Pattern::Uniform,
        footprint: 256 << 20,
        machine: radix_timed,
    },
];

/// A benchmark of a built-in workload at `small` scale.
struct WorkloadCase {
    name: &'static str,
    description: &'static str,
    workload: &'static str,
    /// Parameters overriding the `small` preset, as TOML.
    params: &'static str,
    machine: fn() -> RawMachine,
}

const WORKLOAD_CASES: [WorkloadCase; 7] = [
    WorkloadCase {
        name: "gups-small-tlb1024x4",
        description: "GUPS at small scale (128 MiB table, initialization and updates) into one 1024-entry 4-way TLB",
        workload: "gups",
        params: "",
        machine: single_tlb,
    },
    WorkloadCase {
        name: "gups-small-skylake-thp",
        description: "GUPS at small scale into the skylake-like preset with transparent huge pages (its STLB holds 4 KiB and 2 MiB pages; the general path)",
        workload: "gups",
        params: "",
        machine: skylake_thp,
    },
    WorkloadCase {
        name: "graph500-bfs-small-tlb1024x4",
        description: "Graph500 BFS at small scale (2^18 vertices, 8 roots; set-up and validation computed, not emitted) into one 1024-entry 4-way TLB",
        workload: "graph500",
        params: "setup = false\nvalidation = false",
        machine: single_tlb,
    },
    WorkloadCase {
        name: "graph500-bfs-small-mosaic",
        description: "Graph500 BFS at small scale into the default experiment's mosaic-paper machine (1024-entry 4-way vanilla, Mosaic-4 and Mosaic-16 TLBs, iceberg memory)",
        workload: "graph500",
        params: "setup = false\nvalidation = false",
        machine: mosaic_paper,
    },
    WorkloadCase {
        name: "btree-lookup-small-tlb1024x4",
        description: "BTree lookups at small scale (3.2 M keys; build computed, not emitted) into one 1024-entry 4-way TLB",
        workload: "btree",
        params: "build = false",
        machine: single_tlb,
    },
    WorkloadCase {
        name: "xsbench-lookup-small-tlb1024x4",
        description: "XSBench unionized lookups at small scale (grids computed, not emitted) into one 1024-entry 4-way TLB",
        workload: "xsbench",
        params: "setup = false",
        machine: single_tlb,
    },
    WorkloadCase {
        name: "gap-pr-kron-small-tlb1024x4",
        description: "GAP PageRank on a kron graph at small scale (2^18 vertices, one trial; build computed, not emitted) into one 1024-entry 4-way TLB",
        workload: "gap",
        params: "kernel = \"pr\"\nsetup = false",
        machine: single_tlb,
    },
];

fn measure_workload(case: &WorkloadCase, refs: u64) -> Result<Measurement> {
    let params: toml::Table = toml::from_str(case.params)?;
    let spec = BuiltinSpec::new(case.workload, Scale::Small, Some(&params), 42, 0, case.name)?;
    let source: Box<dyn RefSource> = Box::new(Limited::new(spec.open()?, 0, Some(refs)));
    simulate(source, (case.machine)(), case.name, case.description)
}

fn measure(case: &Case, refs: u64) -> Result<Measurement> {
    let spec = SyntheticSpec {
        pattern: case.pattern.clone(),
        footprint: case.footprint,
        refs,
        base: 0x7f00_0000_0000,
        size: 8,
        store_fraction: 0.0,
        asid: 0,
        seed: 42,
    };
    let source: Box<dyn RefSource> = Box::new(Synthetic::new(spec)?);
    let m = simulate(source, (case.machine)(), case.name, case.description)?;
    Ok(Measurement { first_batch_seconds: None, streaming_refs_per_second: None, ..m })
}

/// Times `source` fed to one `machine`, end to end and from the first batch on.
fn simulate(source: Box<dyn RefSource>, machine: RawMachine, name: &'static str, description: &'static str) -> Result<Measurement> {
    let machine = validate::machine(&machine, "bench", 1)?;
    let mut machines = vec![machine.build()?];
    let started = Instant::now();
    let mut first: Option<(f64, u64)> = None;
    let mut progress = |p: Progress| {
        if let (Progress::Advance { refs }, None) = (p, first) {
            first = Some((started.elapsed().as_secs_f64(), refs));
        }
    };
    let (done, _) = feed(source, &mut machines, validate::DEFAULT_BATCH, &AtomicBool::new(false), &mut progress)?;
    let seconds = started.elapsed().as_secs_f64();
    let (first_seconds, first_refs) = first.unwrap_or((seconds, done));
    Ok(Measurement {
        name,
        description,
        refs: done,
        refs_per_second: done as f64 / seconds,
        first_batch_seconds: Some(first_seconds),
        streaming_refs_per_second: Some((done - first_refs) as f64 / (seconds - first_seconds).max(1e-9)),
    })
}

/// The trace `native-read` reads: written once (a uniform 8-byte heap stream over 1 GiB with
/// one instruction fetch per three data references, the shape of real traces), read by
/// every round.
struct NativeTrace {
    /// Holds the file; removed with it.
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl NativeTrace {
    /// Writes a trace of `refs` data references and their instruction fetches.
    fn write(refs: u64) -> Result<NativeTrace> {
        let dir = xlat::atomic::scratch_dir()?;
        let path = dir.path().join("bench.xlat");
        let spec = SyntheticSpec {
            pattern: Pattern::Uniform,
            footprint: 1 << 30,
            refs,
            base: 0x7f00_0000_0000,
            size: 8,
            store_fraction: 0.3,
            asid: 0,
            seed: 42,
        };
        let mut source = Synthetic::new(spec)?;
        let mut writer = NativeWriter::create(&path, &serde_json::json!({ "bench": NATIVE_READ }))?;
        let mut batch = Batch::with_capacity(1 << 16);
        let mut pc = 0x40_0000u64;
        while source.fill(&mut batch, 1 << 16)? > 0 {
            for (i, r) in batch.refs.iter().enumerate() {
                if i % 3 == 0 {
                    pc = 0x40_0000 + (pc + 4 - 0x40_0000) % (1 << 20);
                    writer.write(&MemRef::ifetch(pc, 4), 1)?;
                }
                writer.write(r, 0)?;
            }
            batch.clear();
        }
        writer.finish()?;
        Ok(NativeTrace { _dir: dir, path })
    }

    /// Times reading the trace without simulating.
    fn read(&self) -> Result<Measurement> {
        let mut reader = trace::open(&self.path, Some(TraceFormat::Native))?;
        let mut batch = Batch::with_capacity(validate::DEFAULT_BATCH);
        let started = Instant::now();
        let mut done = 0u64;
        loop {
            batch.clear();
            let n = reader.fill(&mut batch, validate::DEFAULT_BATCH)?;
            if n == 0 {
                break;
            }
            done += n as u64;
        }
        let seconds = started.elapsed().as_secs_f64();
        Ok(Measurement {
            name: NATIVE_READ,
            description: "reading a native trace (uniform heap stream over 1 GiB + instruction fetches), no simulation",
            refs: done,
            refs_per_second: done as f64 / seconds,
            first_batch_seconds: None,
            streaming_refs_per_second: None,
        })
    }
}

/// Name of the trace-reading benchmark.
const NATIVE_READ: &str = "native-read";

/// A benchmark of the suite.
#[derive(Clone, Copy)]
enum Bench {
    Synthetic(&'static Case),
    Workload(&'static WorkloadCase),
    NativeRead,
    GpuMix,
}

/// The GPU benchmark's name.
const GPU_MIX: &str = "gpu-5-app-mix-gpu-mmu";

/// The GPU benchmark: a heterogeneous mix of five built-in GPU applications at their default
/// footprints on Table 1's 30-SM GPU under GPU-MMU (whose TLBs miss most, so walks are
/// exercised), run whole: `--refs` does not apply. Its rate counts warp memory requests;
/// building the applications (computing their results) is timed apart, as a built-in
/// workload's set-up is.
fn measure_gpu_mix() -> Result<Measurement> {
    use xlat::gpu::kernels::{build_all, default_bytes, AppSpec, KernelKind, KernelSpec};
    let kinds = [KernelKind::Stream, KernelKind::Spmv, KernelKind::Bfs, KernelKind::Histo, KernelKind::Gups];
    let started = Instant::now();
    let specs: Vec<AppSpec> = kinds.iter().map(|&kind| AppSpec::Builtin(KernelSpec { kind, bytes: default_bytes(kind), seed: 42 })).collect();
    let apps = build_all(&specs)?;
    let built = started.elapsed().as_secs_f64();
    let manager = xlat::gpu::memory::ManagerSpec { kind: xlat::gpu::memory::ManagerKind::GpuMmu, ..Default::default() };
    let params = xlat::gpu::params::GpuParams::default();
    let stats = xlat::gpu::machine::run(&params, xlat::gpu::memory::build(&manager, apps.len()), apps, &AtomicBool::new(false))?;
    let seconds = started.elapsed().as_secs_f64();
    let requests: u64 = stats.apps.iter().map(|a| a.requests).sum();
    Ok(Measurement {
        name: GPU_MIX,
        description: "5 GPU applications on 30 SMs, GPU-MMU: warp memory requests",
        refs: requests,
        refs_per_second: requests as f64 / seconds,
        first_batch_seconds: Some(built),
        streaming_refs_per_second: Some(requests as f64 / (seconds - built).max(1e-9)),
    })
}

impl Bench {
    fn name(self) -> &'static str {
        match self {
            Bench::Synthetic(case) => case.name,
            Bench::Workload(case) => case.name,
            Bench::NativeRead => NATIVE_READ,
            Bench::GpuMix => GPU_MIX,
        }
    }

    /// One run of `refs` references. `native-read` writes its trace into `trace` on its first
    /// run; later rounds read the same file.
    fn measure(self, refs: u64, trace: &mut Option<NativeTrace>) -> Result<Measurement> {
        match self {
            Bench::Synthetic(case) => measure(case, refs),
            Bench::Workload(case) => measure_workload(case, refs),
            Bench::NativeRead => {
                if trace.is_none() {
                    *trace = Some(NativeTrace::write(refs)?);
                }
                trace.as_ref().expect("written above").read()
            }
            Bench::GpuMix => measure_gpu_mix(),
        }
    }
}

/// Every benchmark, in the order they run.
fn suite() -> impl Iterator<Item = Bench> {
    CASES.iter().map(Bench::Synthetic).chain(WORKLOAD_CASES.iter().map(Bench::Workload)).chain([Bench::NativeRead, Bench::GpuMix])
}

/// Parses `--filter`: a text no benchmark name contains is a usage error (exit code 2)
/// rather than an empty, successful run.
fn filter_arg(text: &str) -> Result<String, String> {
    if suite().any(|b| b.name().contains(text)) {
        Ok(text.to_string())
    } else {
        Err(format!("no benchmark name contains it (the benchmarks are {})", suite().map(Bench::name).collect::<Vec<_>>().join(", ")))
    }
}

/// Runs the benchmarks, `--repeat` rounds of each, and prints their speed: a benchmark's line
/// comes once its last round is measured. Setting `interrupt` stops them once the current one
/// is measured (a benchmark cut short would measure something else); the medians of what was
/// measured are printed, and the outcome is [`Outcome::Interrupted`].
pub fn run(args: &BenchArgs, interrupt: &AtomicBool) -> Result<Outcome> {
    let selected: Vec<Bench> = suite().filter(|b| args.filter.as_ref().is_none_or(|f| b.name().contains(f.as_str()))).collect();
    let mut runs: Vec<Vec<Measurement>> = selected.iter().map(|_| Vec::new()).collect();
    let mut trace = None;
    let rounds = args.repeat;
    let mut printed = 0;
    let mut interrupted = None;
    'rounds: for round in 1..=rounds {
        for (i, bench) in selected.iter().enumerate() {
            let m = bench.measure(args.refs, &mut trace)?;
            if rounds > 1 && std::io::stderr().is_terminal() {
                eprintln!("round {round} of {rounds}: {:<30} {:>8.1} M refs/s", m.name, m.refs_per_second / 1e6);
            }
            runs[i].push(m);
            // Looked at before the benchmark's line is printed: an interrupt that comes once
            // the line is out always finds the next benchmark started, and is seen after it
            // (a line printed before the look let a reader's interrupt land in between).
            if interrupt.load(Ordering::Relaxed) {
                interrupted = Some(round);
                break 'rounds;
            }
            if round == rounds && !args.json {
                print_summary(&Summary::of(&runs[i]))?;
                printed = i + 1;
            }
        }
    }
    let summaries: Vec<Summary> = runs.iter().filter(|r| !r.is_empty()).map(|r| Summary::of(r)).collect();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&summaries)?)?;
    } else {
        summaries.iter().skip(printed).try_for_each(print_summary)?;
    }
    let Some(round) = interrupted else { return Ok(Outcome::Done) };
    let not_run = selected.len() - summaries.len();
    if rounds == 1 {
        eprintln!("interrupted: {} benchmarks measured, the others not run", summaries.len());
    } else if not_run > 0 {
        eprintln!("interrupted in round {round} of {rounds}: the medians printed are of the runs measured so far; {not_run} benchmarks were not run");
    } else {
        eprintln!("interrupted in round {round} of {rounds}: the medians printed are of the runs measured so far");
    }
    Ok(Outcome::Interrupted)
}

/// Prints one benchmark as a table line (two for built-in workloads): with several runs,
/// their median and range.
fn print_summary(s: &Summary) -> Result<()> {
    let runs = &s.runs_refs_per_second;
    let rate = s.refs_per_second / 1e6;
    if let [_] = runs[..] {
        outln!("{:<30} {rate:>8.1} M refs/s  ({} refs in {:.2} s)  {}", s.name, thousands(s.refs), s.seconds, s.description)?;
    } else {
        let (low, high) = runs.iter().fold((f64::INFINITY, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
        outln!("{:<30} {rate:>8.1} M refs/s  (median of {} runs, {:.1}–{:.1}; {} refs each)  {}",
            s.name, runs.len(), low / 1e6, high / 1e6, thousands(s.refs), s.description)?;
    }
    if let (Some(first), Some(rate)) = (s.first_batch_seconds, s.streaming_refs_per_second) {
        let median = if runs.len() > 1 { "median " } else { "" };
        outln!("{:<30} {:>8.1} M refs/s  after the first batch ({median}{first:.2} s of computation before it)", "", rate / 1e6)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rate: f64, streaming: Option<f64>) -> Measurement {
        Measurement {
            name: "b",
            description: "d",
            refs: 10,
            refs_per_second: rate,
            first_batch_seconds: streaming.map(|_| rate / 100.0),
            streaming_refs_per_second: streaming,
        }
    }

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn a_summary_takes_each_field_s_median_and_keeps_every_rate_in_order() {
        let s = Summary::of(&[run(5.0, Some(50.0)), run(1.0, Some(70.0)), run(3.0, Some(60.0))]);
        assert_eq!((s.refs_per_second, s.seconds), (3.0, 10.0 / 3.0));
        let even = Summary::of(&[run(1.0, None), run(4.0, None)]);
        assert_eq!((even.refs_per_second, even.seconds), (2.5, 4.0), "the time of the median rate");
        assert_eq!((s.streaming_refs_per_second, s.first_batch_seconds), (Some(60.0), Some(0.03)));
        assert_eq!(s.runs_refs_per_second, [5.0, 1.0, 3.0]);
        let synthetic = Summary::of(&[run(2.0, None), run(4.0, None)]);
        assert_eq!((synthetic.refs_per_second, synthetic.streaming_refs_per_second), (3.0, None));
    }
}
