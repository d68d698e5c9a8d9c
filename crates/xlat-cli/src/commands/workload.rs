//! `xlat workload`: the built-in workloads — list them, show what one will do at a scale, or
//! run one without simulating to see its self-check and measured footprint.

use crate::report::thousands;
use super::UsageError;
use crate::Outcome;
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use xlat::source::Interruptible;
use xlat::units::format_bytes;
use xlat::workload::{startup, BuiltinSpec, Expected, Scale, WORKLOADS};

/// Subcommands of `xlat workload`.
#[derive(Subcommand)]
pub enum WorkloadCommand {
    /// List the built-in workloads.
    List,
    /// Show a workload's parameters, allocations, expected footprint and references at a scale.
    Info(Selection),
    /// Run a workload without simulating: its self-check, references, footprint and speed,
    /// against what `info` expects.
    Check(Selection),
}

/// Which workload, at which scale, with which explicit parameters.
#[derive(Args)]
pub struct Selection {
    /// Workload name (see `xlat workload list`).
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(xlat::workload::WORKLOADS.map(|(name, _)| name)))]
    name: String,
    /// Scale preset: tiny, small or paper.
    #[arg(long, value_parser = scale_arg)]
    scale: Scale,
    /// Override a parameter, e.g. `--set roots=16` or `--set grid=hash` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    set: Vec<(String, toml::Value)>,
    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = xlat::config::validate::DEFAULT_SEED)]
    seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Parses `--scale`, so that a bad value is a usage error (exit code 2).
fn scale_arg(name: &str) -> Result<Scale, String> {
    let names: Vec<&str> = Scale::ALL.iter().map(|s| s.name()).collect();
    Scale::from_name(name).ok_or_else(|| format!("unknown scale (the scales are {})", names.join(", ")))
}

/// Parses a `KEY=VALUE` override, the value as TOML (bare words are strings).
fn key_value(item: &str) -> Result<(String, toml::Value), String> {
    let (key, value) = item.split_once('=').ok_or("expected KEY=VALUE")?;
    let (key, value) = (key.trim(), value.trim());
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}")).ok().and_then(|mut t| t.remove("v"));
    // An integer TOML cannot hold would otherwise pass on as a string, and be reported as one.
    let digits = value.strip_prefix(['-', '+']).unwrap_or(value).replace('_', "");
    let too_long = digits.len() > 19 && !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit());
    let too_large = value.replace('_', "").parse::<i128>().is_ok_and(|n| i64::try_from(n).is_err());
    if parsed.is_none() && (too_long || too_large) {
        return Err(format!("{value} is out of range: integers are 64-bit signed, from {} to {}", i64::MIN, i64::MAX));
    }
    Ok((key.to_string(), parsed.unwrap_or_else(|| toml::Value::String(value.to_string()))))
}

impl Selection {
    fn spec(&self) -> Result<BuiltinSpec> {
        let table: toml::Table = self.set.iter().cloned().collect();
        let spec = BuiltinSpec::new(&self.name, self.scale, Some(&table), self.seed, 0, &self.name);
        // Field paths read `NAME.params.KEY` here; `--set KEY` says the same to a command line.
        spec.map_err(|e| {
            let text = e.to_string();
            let text = text.replace(&format!("{}.params.", self.name), "--set ").replace(&format!("{}.type", self.name), "workload");
            anyhow::Error::new(UsageError(text))
        })
    }
}

/// Runs a workload subcommand.
pub fn run(cmd: &WorkloadCommand, interrupt: &AtomicBool) -> Result<Outcome> {
    match cmd {
        WorkloadCommand::List => {
            for (name, about) in WORKLOADS {
                outln!("{name:<16} {about}")?;
            }
            Ok(Outcome::Done)
        }
        WorkloadCommand::Info(sel) => info(sel),
        WorkloadCommand::Check(sel) => check(sel, interrupt),
    }
}

fn parameters(spec: &BuiltinSpec) -> Vec<(String, String)> {
    let value = serde_json::to_value(&spec.params).unwrap_or_default();
    let map = value.as_object().cloned().unwrap_or_default();
    map.into_iter().filter(|(k, _)| k != "workload").map(|(k, v)| (k, v.to_string().trim_matches('"').to_string())).collect()
}

fn info(sel: &Selection) -> Result<Outcome> {
    let spec = sel.spec()?;
    let expected = spec.expected();
    if sel.json {
        let json = serde_json::json!({
            "spec": spec,
            "footprint_bytes": expected.footprint_bytes(),
            "footprint_pages": expected.footprint_pages(),
            "expected": expected,
        });
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(Outcome::Done);
    }
    let about = WORKLOADS.iter().find(|(n, _)| *n == spec.name()).map_or("", |(_, a)| a);
    outln!("{} at scale {}: {about}", spec.name(), spec.scale)?;
    outln!("parameters:")?;
    for (k, v) in parameters(&spec) {
        outln!("  {k} = {v}")?;
    }
    print_expected(&expected)?;
    Ok(Outcome::Done)
}

fn print_expected(expected: &Expected) -> std::io::Result<()> {
    let pages = expected.footprint_pages();
    outln!("expected footprint: {} ({} pages of 4 KiB touched)", format_bytes(pages << 12), thousands(pages))?;
    outln!("expected references (estimates within ±{:.0}%):", 100.0 * expected.tolerance)?;
    for p in &expected.phases {
        let emitted = if p.emitted { "emitted" } else { "not emitted" };
        let exact = if p.exact { "exact" } else { "estimate" };
        outln!("  {:<8} {:>16} ({exact}, {emitted})", p.name, thousands(p.refs))?;
    }
    outln!("allocations, in program order:")?;
    // The process's start-up is one line: its pages are the same for every workload.
    let (startup, own): (Vec<_>, Vec<_>) = expected.regions.iter().filter(|r| r.bytes > 0).partition(|r| startup::is_startup(r));
    if !startup.is_empty() {
        let bytes = startup.iter().map(|r| r.touched).sum::<u64>();
        outln!("  process start-up: {} in {} places (stack, loader, libraries, heap)", format_bytes(bytes), startup.len())?;
    }
    const SHOWN: usize = 12;
    for r in own.iter().take(SHOWN) {
        let place = r.place();
        outln!("  {:#014x} {place:<7} {:>12} touched {:>12}  {}", r.addr, format_bytes(r.bytes), format_bytes(r.touched), r.name)?;
    }
    let more = own.len().saturating_sub(SHOWN);
    if more > 0 {
        outln!("  ... and {more} more (--json lists all)")?;
    }
    Ok(())
}

fn check(sel: &Selection, interrupt: &AtomicBool) -> Result<Outcome> {
    let spec = sel.spec()?;
    let expected = spec.expected();
    let mut source = spec.open()?;
    let started = Instant::now();
    let summary = xlat::trace::info(&mut Interruptible::new(&mut source, interrupt))?;
    let seconds = started.elapsed().as_secs_f64();
    let report = source.report().ok_or_else(|| anyhow!("the workload ended without a report"))?;
    if sel.json {
        let json = serde_json::json!({ "spec": spec, "report": report, "stream": summary, "seconds": seconds,
            "expected": expected, "expected_footprint_pages": expected.footprint_pages() });
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(Outcome::Done);
    }
    outln!("{} at scale {}: self-check passed", spec.name(), spec.scale)?;
    for c in &report.checks {
        outln!("  {c}")?;
    }
    outln!("phases:")?;
    for (p, want) in report.phases.iter().zip(&expected.phases) {
        let emitted = if p.emitted { "emitted" } else { "not emitted" };
        outln!("  {:<8} {:>16} references (expected {}), {:>16} instructions, {emitted}",
            p.name, thousands(p.refs), thousands(want.refs), thousands(p.instructions))?;
    }
    outln!("footprint: {} pages touched (expected {})", thousands(summary.pages), thousands(expected.footprint_pages()))?;
    outln!("{} references emitted in {seconds:.2} s ({:.1} M refs/s; the time includes phases computed but not emitted)", thousands(summary.references),
        summary.references as f64 / seconds.max(1e-9) / 1e6)?;
    Ok(Outcome::Done)
}
