//! `xlat bench`: fixed benchmark configurations, each timed end to end (source on its reader
//! thread, simulation on the main thread), printing references per second.

use crate::report::thousands;
use crate::Outcome;
use anyhow::Result;
use clap::Args;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use xlat::config::raw::{OneOrMany, RawMachine, RawMosaic, RawOs, RawWays};
use xlat::config::size::ByteSize;
use xlat::os::eviction::EvictionKind;
use xlat::os::Placement;
use xlat::config::validate;
use xlat::sim::experiment::feed;
use xlat::sim::Machine;
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
}

/// One measured benchmark.
#[derive(serde::Serialize)]
struct Measurement {
    name: &'static str,
    description: &'static str,
    refs: u64,
    seconds: f64,
    refs_per_second: f64,
    /// Built-in workloads: seconds of computation before the first batch (set-up not
    /// emitted), and the rate from the first batch on.
    #[serde(skip_serializing_if = "Option::is_none")]
    first_batch_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    streaming_refs_per_second: Option<f64>,
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

/// A 1024-entry 4-way vanilla TLB and a Mosaic-4 TLB of the same shape over a 768 MiB
/// iceberg memory with Horizon LRU: the Mosaic paper's simulated machine under pressure.
fn mosaic_horizon() -> RawMachine {
    RawMachine {
        os: Some(RawOs {
            memory: Some(ByteSize(768 << 20)),
            placement: Some(Placement::Iceberg),
            eviction: Some(EvictionKind::HorizonLru),
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

const CASES: [Case; 10] = [
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

const WORKLOAD_CASES: [WorkloadCase; 6] = [
    WorkloadCase {
        name: "gups-small-tlb1024x4",
        description: "GUPS at small scale (128 MiB table, initialization and updates) into one 1024-entry 4-way TLB",
        workload: "gups",
        params: "",
        machine: single_tlb,
    },
    WorkloadCase {
        name: "graph500-bfs-small-tlb1024x4",
        description: "Graph500 BFS at small scale (2^18 vertices, 8 roots; set-up computed, not emitted) into one 1024-entry 4-way TLB",
        workload: "graph500",
        params: "setup = false",
        machine: single_tlb,
    },
    WorkloadCase {
        name: "graph500-bfs-small-mosaic",
        description: "Graph500 BFS at small scale into the default experiment's mosaic-paper machine (1024-entry 4-way vanilla, Mosaic-4 and Mosaic-16 TLBs, iceberg memory)",
        workload: "graph500",
        params: "setup = false",
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
    let mut machines = vec![Machine::new(&machine)];
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
        seconds,
        refs_per_second: done as f64 / seconds,
        first_batch_seconds: Some(first_seconds),
        streaming_refs_per_second: Some((done - first_refs) as f64 / (seconds - first_seconds).max(1e-9)),
    })
}

/// Writes a native trace of `refs` references (a uniform 8-byte heap stream over 1 GiB with
/// one instruction fetch per three data references, the shape of real traces) and times
/// reading it back without simulating.
fn measure_native_read(refs: u64) -> Result<Measurement> {
    let dir = tempfile::tempdir()?;
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
    let mut reader = trace::open(&path, Some(TraceFormat::Native))?;
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
        seconds,
        refs_per_second: done as f64 / seconds,
        first_batch_seconds: None,
        streaming_refs_per_second: None,
    })
}

/// Name of the trace-reading benchmark.
const NATIVE_READ: &str = "native-read";

/// Every benchmark's name.
fn names() -> impl Iterator<Item = &'static str> {
    CASES.iter().map(|c| c.name).chain(WORKLOAD_CASES.iter().map(|c| c.name)).chain([NATIVE_READ])
}

/// Parses `--filter`: a text no benchmark name contains is a usage error (exit code 2)
/// rather than an empty, successful run.
fn filter_arg(text: &str) -> Result<String, String> {
    if names().any(|n| n.contains(text)) {
        Ok(text.to_string())
    } else {
        Err(format!("no benchmark name contains it (the benchmarks are {})", names().collect::<Vec<_>>().join(", ")))
    }
}

/// Runs the benchmarks and prints their speed. Setting `interrupt` stops them once the
/// current one is measured (a benchmark cut short would measure something else); what was
/// measured is printed, and the outcome is [`Outcome::Interrupted`].
pub fn run(args: &BenchArgs, interrupt: &AtomicBool) -> Result<Outcome> {
    let selected = |name: &str| args.filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
    let mut results = Vec::new();
    let simulations = CASES.iter().filter(|c| selected(c.name)).map(|case| measure(case, args.refs));
    let workloads = WORKLOAD_CASES.iter().filter(|c| selected(c.name)).map(|case| measure_workload(case, args.refs));
    // Lazy like the others, so that it too runs only if no interrupt came before it.
    let reads = std::iter::once(NATIVE_READ).filter(|n| selected(n)).map(|_| measure_native_read(args.refs));
    let mut interrupted = false;
    for m in simulations.chain(workloads).chain(reads) {
        let m = m?;
        if !args.json {
            print_measurement(&m)?;
        }
        results.push(m);
        interrupted = interrupt.load(Ordering::Relaxed);
        if interrupted {
            break;
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&results)?)?;
    }
    if interrupted {
        eprintln!("interrupted: {} benchmarks measured, the others not run", results.len());
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Done)
}

/// Prints one measurement as a table line (two for built-in workloads).
fn print_measurement(m: &Measurement) -> Result<()> {
    outln!("{:<30} {:>8.1} M refs/s  ({} refs in {:.2} s)  {}", m.name, m.refs_per_second / 1e6,
        thousands(m.refs), m.seconds, m.description)?;
    if let (Some(first), Some(rate)) = (m.first_batch_seconds, m.streaming_refs_per_second) {
        outln!("{:<30} {:>8.1} M refs/s  after the first batch ({first:.2} s of computation before it)", "", rate / 1e6)?;
    }
    Ok(())
}
