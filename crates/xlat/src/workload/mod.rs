//! Built-in workloads: real computations (GUPS, a B+ tree, XSBench, Graph500 BFS, the GAP
//! kernels, memcached- and Redis-like key-value stores, sysbench's memory test) that run
//! over their own data and emit the loads and stores they perform, at the addresses a 64-bit
//! Linux process using glibc's `malloc` would give that data ([`address_space`]).
//!
//! Each workload has scale presets (`tiny` for tests, `small` ≈ 100 MiB, `paper` the Mosaic
//! paper's footprints) that explicit parameters override, verifies its own result when it
//! finishes (a stream is the trace of a correct computation), and can say beforehand what it
//! will do ([`BuiltinSpec::expected`]: allocations, footprint, references per phase). It runs
//! on its own thread and streams references through a bounded channel ([`source`]). See
//! `docs/workloads.md`.

pub mod address_space;
pub mod btree;
pub mod emit;
pub mod gap;
pub mod graph500;
pub mod kronecker;
pub mod gups;
pub mod keyspace;
pub mod memcached;
pub mod redis;
pub mod source;
pub mod startup;
pub mod sysbench_memory;
pub mod xsbench;

use crate::types::{Asid, BASE_PAGE_SHIFT};
use crate::{Error, Result};
use emit::Emitter;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A scale preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// For tests: well under a second, a few hundred KiB to a few MiB.
    Tiny,
    /// About 100 MiB of footprint.
    Small,
    /// The footprints of the Mosaic paper's workloads (EMT's for the key-value stores and
    /// sysbench).
    Paper,
}

impl Scale {
    /// Every scale, smallest first.
    pub const ALL: [Scale; 3] = [Scale::Tiny, Scale::Small, Scale::Paper];

    /// Parses a scale name.
    pub fn from_name(name: &str) -> Option<Scale> {
        Scale::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The scale's name.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Paper => "paper",
        }
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One allocation of a workload, as planned before it runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Region {
    /// What it holds.
    pub name: String,
    /// Simulated address of its first byte.
    pub addr: u64,
    /// Bytes allocated.
    pub bytes: u64,
    /// Bytes from `addr` the stream is expected to touch.
    pub touched: u64,
}

impl Region {
    /// Where the region lies in the process: `stack`, `library` (the loader's and the
    /// libraries' mappings), `mmap` (an allocation's own mapping), `image` (the program's)
    /// or `heap` (a chunk of the brk heap).
    pub fn place(&self) -> &'static str {
        use address_space::{IMAGE_BYTES, LIBRARY_BYTES, MMAP_AREA_FLOOR, MMAP_BASE, TEXT_BASE};
        match self.addr {
            a if a >= MMAP_BASE => "stack",
            a if a >= MMAP_BASE - LIBRARY_BYTES => "library",
            a if a >= MMAP_AREA_FLOOR => "mmap",
            a if a < TEXT_BASE + IMAGE_BYTES => "image",
            _ => "heap",
        }
    }
}

/// References a phase is expected to perform.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExpectedPhase {
    /// Phase name, as in [`emit::PhaseStats`].
    pub name: &'static str,
    /// Whether the phase's references are emitted with these parameters.
    pub emitted: bool,
    /// Expected references.
    pub refs: u64,
    /// True when `refs` is exact; otherwise an estimate within [`Expected::tolerance`].
    pub exact: bool,
}

/// What a workload will do, known before running it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expected {
    /// Allocations in program order (touched or not).
    pub regions: Vec<Region>,
    /// Phases in program order.
    pub phases: Vec<ExpectedPhase>,
    /// Relative tolerance of the estimates (footprint and inexact reference counts).
    pub tolerance: f64,
}

/// The bytes of a region of `bytes` that `reads` at uniformly random places are expected to
/// touch, as a run of whole 4 KiB pages: each of its pages is read with probability
/// `1 - e^(-reads / pages)`.
pub fn randomly_touched(bytes: u64, reads: f64) -> u64 {
    let pages = bytes.div_ceil(1 << BASE_PAGE_SHIFT) as f64;
    if pages == 0.0 {
        return 0;
    }
    let touched = pages * -(-reads / pages).exp_m1();
    ((touched * (1u64 << BASE_PAGE_SHIFT) as f64) as u64).min(bytes)
}

impl Expected {
    /// Distinct 4 KiB pages of the touched parts of every region (pages shared by small
    /// allocations counted once).
    pub fn footprint_pages(&self) -> u64 {
        let mut ranges: Vec<(u64, u64)> = self
            .regions
            .iter()
            .filter(|r| r.touched > 0)
            .map(|r| (r.addr >> BASE_PAGE_SHIFT, (r.addr + r.touched - 1) >> BASE_PAGE_SHIFT))
            .collect();
        ranges.sort_unstable();
        let mut pages = 0;
        let mut covered_to: Option<u64> = None;
        for (first, last) in ranges {
            let from = covered_to.map_or(first, |c| first.max(c + 1));
            if last >= from {
                pages += last - from + 1;
            }
            covered_to = Some(covered_to.map_or(last, |c| c.max(last)));
        }
        pages
    }

    /// Expected footprint in bytes (pages × 4 KiB).
    pub fn footprint_bytes(&self) -> u64 {
        self.footprint_pages() << BASE_PAGE_SHIFT
    }

    /// Expected references of the emitted phases.
    pub fn emitted_refs(&self) -> u64 {
        self.phases.iter().filter(|p| p.emitted).map(|p| p.refs).sum()
    }
}

/// What a workload's self-check found, and what it did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// One line per check passed.
    pub checks: Vec<String>,
    /// References and instructions per phase.
    pub phases: Vec<emit::PhaseStats>,
}

/// The interface every built-in workload implements: its parameters are the implementing
/// type.
pub trait Workload: Clone + fmt::Debug + Serialize + DeserializeOwned + Send + 'static {
    /// Name in configurations and on the command line.
    const NAME: &'static str;
    /// One line on what it computes.
    const ABOUT: &'static str;
    /// The parameters of a scale preset.
    fn preset(scale: Scale) -> Self;
    /// True when the run starts at the program's start: its first phase (the set-up) is
    /// emitted, so the process's start-up ([`startup`]) comes before it.
    fn emits_set_up(&self) -> bool;
    /// Checks the parameters; an error names the parameter.
    fn validate(&self) -> std::result::Result<(), (&'static str, String)>;
    /// Allocations, footprint and references per phase, computed without running.
    fn expected(&self) -> Expected;
    /// Runs the computation, emitting its references to `e`, and verifies the result. Returns
    /// the checks passed, or what failed. It takes all its memory from `e` (its
    /// [`address_space::Allocator`]) where the program allocates and frees, so that the
    /// stream can carry the process's address-space events there.
    fn run(&self, seed: u64, e: &mut Emitter) -> std::result::Result<Vec<String>, String>;
}

/// The parameters of one built-in workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "workload", rename_all = "kebab-case")]
pub enum Params {
    /// HPCC RandomAccess.
    Gups(gups::Gups),
    /// Order-16 B+ tree lookups.
    Btree(btree::Btree),
    /// XSBench cross-section lookups.
    Xsbench(xsbench::Xsbench),
    /// Graph500 breadth-first search.
    Graph500(graph500::Graph500),
    /// A GAP benchmark suite kernel.
    Gap(gap::Gap),
    /// A memcached-like key-value cache.
    Memcached(memcached::Memcached),
    /// A Redis-like key-value store.
    Redis(redis::Redis),
    /// Sysbench's memory test.
    SysbenchMemory(sysbench_memory::SysbenchMemory),
}

/// Calls `$body` with `$p` bound to the workload's parameters, whatever the workload.
macro_rules! dispatch {
    ($params:expr, $p:ident => $body:expr) => {
        match $params {
            Params::Gups($p) => $body,
            Params::Btree($p) => $body,
            Params::Xsbench($p) => $body,
            Params::Graph500($p) => $body,
            Params::Gap($p) => $body,
            Params::Memcached($p) => $body,
            Params::Redis($p) => $body,
            Params::SysbenchMemory($p) => $body,
        }
    };
}

/// Names and one-line descriptions of every built-in workload.
pub const WORKLOADS: [(&str, &str); 8] = [
    (gups::Gups::NAME, gups::Gups::ABOUT),
    (btree::Btree::NAME, btree::Btree::ABOUT),
    (xsbench::Xsbench::NAME, xsbench::Xsbench::ABOUT),
    (graph500::Graph500::NAME, graph500::Graph500::ABOUT),
    (gap::Gap::NAME, gap::Gap::ABOUT),
    (memcached::Memcached::NAME, memcached::Memcached::ABOUT),
    (redis::Redis::NAME, redis::Redis::ABOUT),
    (sysbench_memory::SysbenchMemory::NAME, sysbench_memory::SysbenchMemory::ABOUT),
];

/// The name of the start-up's phase.
pub const STARTUP: &str = "startup";

/// A validated built-in workload: parameters, seed and address space.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BuiltinSpec {
    /// The scale the parameters started from.
    pub scale: Scale,
    /// The parameters (the preset's, overridden by explicit ones).
    pub params: Params,
    /// Seed of every random choice.
    pub seed: u64,
    /// Address space of every reference.
    pub asid: Asid,
    /// Whether the process's start-up pages ([`startup`]) come first, as in a run from the
    /// program's start.
    pub startup: bool,
    /// Whether the stream carries the process's address-space events: its mappings first,
    /// then what its allocations map and unmap (on unless the configuration turns them off).
    pub events: bool,
}

fn names() -> String {
    WORKLOADS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// The preset of `W` at `scale` with `overrides` applied, validated; errors name the field
/// under `path`.
fn build<W: Workload>(scale: Scale, overrides: Option<&toml::Table>, path: &str) -> Result<W> {
    let mut params = W::preset(scale);
    let mut table = toml::Table::try_from(&params).expect("parameters serialize to a table");
    for (key, value) in overrides.into_iter().flatten() {
        let Some(current) = table.get(key) else {
            let known = table.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(Error::config(format!("{path}.{key}"), format!("{} has no parameter `{key}` (it has: {known})", W::NAME)));
        };
        let (want, got) = (current.type_str(), value.type_str());
        let numeric = |t: &str| t == "integer" || t == "float";
        if want != got && !(want == "float" && numeric(got)) {
            return Err(Error::config(format!("{path}.{key}"), format!("expected {want}, found {got}")));
        }
        let value = match (current, value) {
            (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(*i as f64),
            _ => value.clone(),
        };
        table.insert(key.clone(), value);
        // Read back after each override, so that an error (a name an enumerated parameter
        // does not take) names the parameter; the last reading is the result.
        params = table.clone().try_into().map_err(|e: toml::de::Error| {
            let message = e.to_string();
            let message = message.trim_end().trim_end_matches(&format!("in `{key}`")).trim_end();
            Error::config(format!("{path}.{key}"), message.to_string())
        })?;
    }
    params.validate().map_err(|(field, message)| Error::config(format!("{path}.{field}"), message))?;
    Ok(params)
}

impl BuiltinSpec {
    /// The workload `name` at `scale` with explicit `overrides`; errors name the field under
    /// `path` (`workload[0]`).
    pub fn new(name: &str, scale: Scale, overrides: Option<&toml::Table>, seed: u64, asid: Asid, path: &str) -> Result<BuiltinSpec> {
        let params_path = format!("{path}.params");
        let params = match name {
            gups::Gups::NAME => Params::Gups(build(scale, overrides, &params_path)?),
            btree::Btree::NAME => Params::Btree(build(scale, overrides, &params_path)?),
            xsbench::Xsbench::NAME => Params::Xsbench(build(scale, overrides, &params_path)?),
            graph500::Graph500::NAME => Params::Graph500(build(scale, overrides, &params_path)?),
            gap::Gap::NAME => Params::Gap(build(scale, overrides, &params_path)?),
            memcached::Memcached::NAME => Params::Memcached(build(scale, overrides, &params_path)?),
            redis::Redis::NAME => Params::Redis(build(scale, overrides, &params_path)?),
            sysbench_memory::SysbenchMemory::NAME => Params::SysbenchMemory(build(scale, overrides, &params_path)?),
            _ => return Err(Error::config(format!("{path}.type"), format!("unknown workload `{name}` (built-in: {})", names()))),
        };
        let startup = dispatch!(&params, p => p.emits_set_up());
        Ok(BuiltinSpec { scale, params, seed, asid, startup, events: true })
    }

    /// The workload's name.
    pub fn name(&self) -> &'static str {
        fn of<W: Workload>(_: &W) -> &'static str {
            W::NAME
        }
        dispatch!(&self.params, p => of(p))
    }

    /// What the workload will allocate and do, its start-up first when it has one.
    pub fn expected(&self) -> Expected {
        let mut expected = dispatch!(&self.params, p => p.expected());
        if self.startup {
            expected.regions.splice(0..0, startup::regions());
            expected.phases.insert(0, ExpectedPhase { name: STARTUP, emitted: true, refs: startup::refs(), exact: true });
        }
        expected
    }

    /// Runs the workload to the end into `sink` on this thread; fails if its self-check does.
    pub fn run(&self, sink: &mut dyn emit::Sink) -> Result<Report> {
        let mut e = Emitter::new(self.asid, sink);
        if self.events {
            e.map_process();
        }
        if self.startup {
            e.phase(STARTUP, true);
            startup::emit(&mut e);
        }
        let checked = dispatch!(&self.params, p => p.run(self.seed, &mut e));
        let phases = e.finish();
        match checked {
            Ok(checks) => Ok(Report { checks, phases }),
            Err(message) => Err(Error::Simulation(format!("workload {}: {message}", self.name()))),
        }
    }

    /// Starts the workload on its own thread, as a reference source.
    pub fn open(&self) -> Result<source::BuiltinSource> {
        source::BuiltinSource::start(self.clone())
    }
}

/// Parses a scale name, naming the field under `path` on error.
pub fn scale(name: &str, path: &str) -> Result<Scale> {
    Scale::from_name(name).ok_or_else(|| Error::config(path, format!("unknown scale `{name}` (tiny, small or paper)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(addr: u64, touched: u64) -> Region {
        Region { name: String::new(), addr, bytes: touched, touched }
    }

    #[test]
    fn footprint_counts_shared_pages_once() {
        let e = Expected {
            regions: vec![region(0x1000, 0x10), region(0x1010, 0x1000), region(0x5000, 0), region(0x9ff0, 0x20)],
            phases: vec![],
            tolerance: 0.0,
        };
        assert_eq!(e.footprint_pages(), 2 + 2);
    }

    #[test]
    fn overrides_are_checked_by_name_and_type() {
        let t: toml::Table = toml::from_str("nope = 1").unwrap();
        let e = BuiltinSpec::new("gups", Scale::Tiny, Some(&t), 1, 0, "workload[0]").unwrap_err().to_string();
        assert!(e.contains("workload[0].params.nope") && e.contains("no parameter"), "{e}");
        let t: toml::Table = toml::from_str("table_log2 = \"big\"").unwrap();
        let e = BuiltinSpec::new("gups", Scale::Tiny, Some(&t), 1, 0, "workload[0]").unwrap_err().to_string();
        assert!(e.contains("workload[0].params.table_log2: expected integer, found string"), "{e}");
        let t: toml::Table = toml::from_str("kernel = \"foo\"").unwrap();
        let e = BuiltinSpec::new("gap", Scale::Tiny, Some(&t), 1, 0, "workload[0]").unwrap_err().to_string();
        assert!(e.starts_with("workload[0].params.kernel: unknown variant `foo`") && !e.contains("in `kernel`"), "{e}");
        let e = BuiltinSpec::new("nbody", Scale::Tiny, None, 1, 0, "workload[0]").unwrap_err().to_string();
        assert!(e.contains("workload[0].type") && e.contains("gups"), "{e}");
    }
}
