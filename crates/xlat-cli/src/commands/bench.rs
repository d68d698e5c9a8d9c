//! `xlat bench`: fixed benchmark configurations, each timed end to end (source on its reader
//! thread, simulation on the main thread), printing references per second.

use crate::report::thousands;
use crate::Outcome;
use anyhow::Result;
use clap::Args;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use xlat::config::raw::{RawMachine, RawWays};
use xlat::config::validate;
use xlat::sim::experiment::feed;
use xlat::sim::Machine;
use xlat::source::synthetic::{Pattern, Synthetic, SyntheticSpec};
use xlat::source::RefSource;

/// Arguments of `xlat bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// References per benchmark.
    #[arg(long, default_value_t = 50_000_000)]
    refs: u64,
    /// Run only the benchmarks whose name contains this text.
    #[arg(long)]
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

fn skylake() -> RawMachine {
    RawMachine { name: "skylake".into(), preset: Some("skylake-like".into()), ..RawMachine::default() }
}

const CASES: [Case; 4] = [
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
        name: "skylake-uniform-256MiB",
        description: "skylake-like two-level preset, uniform random 8-byte loads over 256 MiB",
        pattern: Pattern::Uniform,
        footprint: 256 << 20,
        machine: skylake,
    },
    Case {
        name: "skylake-zipf-1GiB",
        description: "skylake-like two-level preset, Zipf(0.99) 8-byte loads over 1 GiB",
        pattern: Pattern::Zipf { exponent: 0.99 },
        footprint: 1 << 30,
        machine: skylake,
    },
];

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
    let machine = validate::machine(&(case.machine)(), "bench", 1)?;
    let mut machines = vec![Machine::new(&machine)];
    let started = Instant::now();
    let (done, _) = feed(source, &mut machines, validate::DEFAULT_BATCH, &AtomicBool::new(false), &mut |_| {})?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Measurement {
        name: case.name,
        description: case.description,
        refs: done,
        seconds,
        refs_per_second: done as f64 / seconds,
    })
}

/// Runs the benchmarks and prints their speed.
pub fn run(args: &BenchArgs) -> Result<Outcome> {
    let mut results = Vec::new();
    for case in CASES.iter().filter(|c| args.filter.as_ref().is_none_or(|f| c.name.contains(f.as_str()))) {
        let m = measure(case, args.refs)?;
        if !args.json {
            println!("{:<28} {:>8.1} M refs/s  ({} refs in {:.2} s)  {}", m.name, m.refs_per_second / 1e6,
                thousands(m.refs), m.seconds, m.description);
        }
        results.push(m);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    }
    Ok(Outcome::Done)
}
