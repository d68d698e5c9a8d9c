//! `gpu` machines and `gpu` workloads as written, and their validation into
//! [`GpuSpec`] and lists of [`AppSpec`]. Fields left out take GPU Mosaic's Table 1 (see
//! [`GpuParams`]'s defaults and [`ManagerSpec`]'s).

use super::raw::{RawMachine, RawWorkload};
use super::size::ByteSize;
use crate::gpu::kernels::traced::TraceSpec;
use crate::gpu::kernels::{default_bytes, AppSpec, KernelKind, KernelSpec};
use crate::gpu::memory::{ManagerKind, ManagerSpec};
use crate::gpu::mix::GpuSpec;
use crate::gpu::params::{GpuParams, SmSplit};
use crate::gpu::tlb::LevelShape;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A `gpu` machine's `[machine.gpu]` table.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGpu {
    /// SMs (default 30).
    pub sms: Option<usize>,
    /// Warps resident per SM (default 48).
    pub warps_per_sm: Option<usize>,
    /// Core clock in MHz (default 1020).
    pub clock_mhz: Option<f64>,
    /// Each SM's L1 TLB (default 128 base + 16 large entries, fully associative).
    pub l1_tlb: Option<RawGpuTlb>,
    /// Cycles of an L1 TLB lookup (default 1).
    pub l1_tlb_latency: Option<u32>,
    /// The shared L2 TLB (default 512 base entries 16-way + 256 large fully associative).
    pub l2_tlb: Option<RawGpuTlb>,
    /// Cycles of an L2 TLB lookup (default 10).
    pub l2_tlb_latency: Option<u32>,
    /// L2 TLB ports (default 2).
    pub l2_tlb_ports: Option<usize>,
    /// Walks in flight at most (default 64).
    pub max_walks: Option<usize>,
    /// Bytes of each SM's L1 data cache (default 16KiB).
    pub l1_cache: Option<ByteSize>,
    /// Ways of the L1 data cache (default 4).
    pub l1_cache_ways: Option<usize>,
    /// Cycles of an L1 data-cache hit (default 1).
    pub l1_cache_latency: Option<u32>,
    /// Misses an L1 data cache keeps outstanding (default 32).
    pub l1_cache_mshrs: Option<usize>,
    /// Bytes of the shared L2 cache (default 2MiB).
    pub l2_cache: Option<ByteSize>,
    /// Ways of the L2 cache (default 16).
    pub l2_cache_ways: Option<usize>,
    /// Cycles of an L2 hit (default 10).
    pub l2_cache_latency: Option<u32>,
    /// Cycles of DRAM beyond the L2 (default 200).
    pub dram_latency: Option<u32>,
    /// DRAM bytes per core cycle, all channels (default 157).
    pub dram_bytes_per_cycle: Option<f64>,
    /// `remainder-to-last` (default) or `equal`.
    pub sm_split: Option<SmSplit>,
    /// Microseconds of a 4 KiB far fault (default 55).
    pub far_fault_base_us: Option<f64>,
    /// Microseconds of a 2 MiB far fault (default 318).
    pub far_fault_large_us: Option<f64>,
    /// PCIe bandwidth in GB/s, which far faults' transfers share (default 12).
    pub pcie_gb_per_s: Option<f64>,
    /// Nanoseconds compaction spends per page copied, the whole GPU stalled (default 1000;
    /// 80 for in-DRAM bulk copy).
    pub copy_ns_per_page: Option<f64>,
    /// The memory manager.
    pub manager: Option<RawGpuManager>,
    /// Runs each application alone under GPU-MMU too, for the weighted speedup (default
    /// true).
    pub weighted_speedup: Option<bool>,
}

/// A GPU TLB level's arrays.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGpuTlb {
    /// Entries for 4 KiB pages.
    pub base_entries: Option<usize>,
    /// Ways of the base array (default fully associative at L1, 16 at L2).
    pub base_ways: Option<usize>,
    /// Entries for 2 MiB pages.
    pub large_entries: Option<usize>,
    /// Ways of the large array (default fully associative).
    pub large_ways: Option<usize>,
}

/// The memory manager as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGpuManager {
    /// `gpu-mmu`, `large-only`, `mosaic` (default) or `ideal`.
    pub policy: Option<ManagerKind>,
    /// GPU memory (default 3GiB; 2 MiB to 8 TiB).
    pub memory: Option<ByteSize>,
    /// Pages cross PCIe on first touch (default false).
    pub demand_paging: Option<bool>,
    /// Mosaic's compaction (default true).
    pub cac: Option<bool>,
    /// Occupancy below which CAC may compact a frame (default 0.5).
    pub cac_threshold: Option<f64>,
    /// Mosaic's emergency frames (default 8).
    pub emergency_frames: Option<u32>,
    /// CAC stress test: the fraction of large frames holding pre-fragmented data (default
    /// 0, none).
    pub fragmentation_index: Option<f64>,
    /// CAC stress test: the fraction of each pre-fragmented large frame its data takes
    /// (default 0.5).
    pub frame_occupancy: Option<f64>,
}

/// One application of a `gpu` workload: a string is a name, a table with `trace` a trace,
/// any other table a built-in application.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RawGpuApp {
    /// Its name, at its default footprint.
    Name(KernelKind),
    /// Its name, footprint and seed.
    Table(RawGpuAppTable),
    /// A real program's Accel-Sim trace.
    Trace(RawGpuTrace),
}

/// Read by hand rather than as an untagged enum, whose only error is "data did not match any
/// variant": a string is read as an application's name and a table as the kind its keys
/// say, so that a bad one gets its own message (an unknown application, an unknown field).
impl<'de> Deserialize<'de> for RawGpuApp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<RawGpuApp, D::Error> {
        use serde::de::{value::MapAccessDeserializer, value::StrDeserializer, Error as _};
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawGpuApp;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an application's name, a table with `app`, or a table with `trace`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<RawGpuApp, E> {
                KernelKind::deserialize(StrDeserializer::new(v)).map(RawGpuApp::Name)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<RawGpuApp, A::Error> {
                let table = toml::Table::deserialize(MapAccessDeserializer::new(map))?;
                let app = if table.contains_key("trace") {
                    RawGpuTrace::deserialize(table).map(RawGpuApp::Trace)
                } else {
                    RawGpuAppTable::deserialize(table).map(RawGpuApp::Table)
                };
                app.map_err(|e| A::Error::custom(e.message()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A traced application: a real program's Accel-Sim trace.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGpuTrace {
    /// The trace: a directory holding `kernelslist.g`, or that file (relative to the
    /// experiment file).
    pub trace: PathBuf,
    /// Its name in results (default the trace directory's name).
    pub name: Option<String>,
}

/// An application given as a table.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGpuAppTable {
    /// The application (`stream`, `stencil`, `spmv`, `bfs`, `gups`, `mm`, `histo`,
    /// `wavefront`).
    pub app: KernelKind,
    /// Its footprint (default the application's own: docs/gpu-workloads.md).
    pub footprint: Option<ByteSize>,
    /// Seed of its data (default the workload's seed, or the experiment's).
    pub seed: Option<u64>,
}

/// Validates a `gpu` machine; errors name the field under `path`. `seed` (the machine's,
/// else the experiment's) places pre-fragmented data.
pub fn gpu_machine(m: &RawMachine, path: &str, seed: u64) -> Result<GpuSpec> {
    let cpu_fields = [
        ("preset", m.preset.is_some()),
        ("entries", m.entries.is_some()),
        ("ways", m.ways.is_some()),
        ("replacement", m.replacement.is_some()),
        ("os", m.os.is_some()),
        ("tlb", m.tlb.is_some()),
        ("mosaic", m.mosaic.is_some()),
        ("pwc", m.pwc.is_some()),
        ("timing", m.timing.is_some()),
    ];
    if let Some((field, _)) = cpu_fields.iter().find(|(_, set)| *set) {
        return Err(Error::config(format!("{path}.{field}"), "a `gpu` machine takes its hardware in `[machine.gpu]`; this field belongs to `cpu` machines"));
    }
    let raw = m.gpu.clone().unwrap_or_default();
    let path = format!("{path}.gpu");
    let params = params(&raw, &path)?;
    let mut manager = manager(raw.manager.as_ref().cloned().unwrap_or_default(), &format!("{path}.manager"))?;
    manager.prefragment_seed = m.seed.unwrap_or(seed);
    Ok(GpuSpec { name: m.name.clone(), params, manager, weighted_speedup: raw.weighted_speedup.unwrap_or(true) })
}

/// The hardware of `raw`, each field checked.
fn params(raw: &RawGpu, path: &str) -> Result<GpuParams> {
    let d = GpuParams::default();
    let mut caches = d.caches;
    caches.l1_bytes = raw.l1_cache.map_or(caches.l1_bytes, |b| b.0);
    caches.l1_ways = raw.l1_cache_ways.unwrap_or(caches.l1_ways);
    caches.l1_latency = raw.l1_cache_latency.unwrap_or(caches.l1_latency);
    caches.l1_mshrs = count(raw.l1_cache_mshrs.unwrap_or(caches.l1_mshrs), 1, 1 << 16, &format!("{path}.l1_cache_mshrs"))?;
    caches.l2_bytes = raw.l2_cache.map_or(caches.l2_bytes, |b| b.0);
    caches.l2_ways = raw.l2_cache_ways.unwrap_or(caches.l2_ways);
    caches.l2_latency = raw.l2_cache_latency.unwrap_or(caches.l2_latency);
    caches.dram_latency = raw.dram_latency.unwrap_or(caches.dram_latency);
    caches.dram_bytes_per_cycle = raw.dram_bytes_per_cycle.unwrap_or(caches.dram_bytes_per_cycle);
    let p = GpuParams {
        sms: count(raw.sms.unwrap_or(d.sms), 1, 4096, &format!("{path}.sms"))?,
        warps_per_sm: count(raw.warps_per_sm.unwrap_or(d.warps_per_sm), 1, 1024, &format!("{path}.warps_per_sm"))?,
        clock_mhz: positive(raw.clock_mhz.unwrap_or(d.clock_mhz), &format!("{path}.clock_mhz"))?,
        l1_tlb: tlb(raw.l1_tlb, d.l1_tlb, &format!("{path}.l1_tlb"))?,
        l1_tlb_latency: raw.l1_tlb_latency.unwrap_or(d.l1_tlb_latency),
        l2_tlb: tlb(raw.l2_tlb, d.l2_tlb, &format!("{path}.l2_tlb"))?,
        l2_tlb_latency: raw.l2_tlb_latency.unwrap_or(d.l2_tlb_latency),
        l2_tlb_ports: count(raw.l2_tlb_ports.unwrap_or(d.l2_tlb_ports), 1, 64, &format!("{path}.l2_tlb_ports"))?,
        max_walks: count(raw.max_walks.unwrap_or(d.max_walks), 1, 1 << 16, &format!("{path}.max_walks"))?,
        caches,
        sm_split: raw.sm_split.unwrap_or(d.sm_split),
        far_fault_base_us: non_negative(raw.far_fault_base_us.unwrap_or(d.far_fault_base_us), &format!("{path}.far_fault_base_us"))?,
        far_fault_large_us: non_negative(raw.far_fault_large_us.unwrap_or(d.far_fault_large_us), &format!("{path}.far_fault_large_us"))?,
        pcie_gb_per_s: positive(raw.pcie_gb_per_s.unwrap_or(d.pcie_gb_per_s), &format!("{path}.pcie_gb_per_s"))?,
        copy_ns_per_page: non_negative(raw.copy_ns_per_page.unwrap_or(d.copy_ns_per_page), &format!("{path}.copy_ns_per_page"))?,
    };
    check_caches(&p, path)?;
    Ok(p)
}

/// Checks the caches' shapes: whole lines in whole sets, a positive bandwidth.
fn check_caches(p: &GpuParams, path: &str) -> Result<()> {
    let c = &p.caches;
    for (field, bytes, ways) in [("l1_cache", c.l1_bytes, c.l1_ways), ("l2_cache", c.l2_bytes, c.l2_ways)] {
        let lines = bytes / c.line;
        if bytes == 0 || bytes % c.line != 0 || ways == 0 || lines % ways as u64 != 0 || lines > 1 << 26 {
            return Err(Error::config(format!("{path}.{field}"), format!("{bytes} bytes in {ways} ways is not whole sets of 128-byte lines (at most 8 GiB)")));
        }
    }
    positive(c.dram_bytes_per_cycle, &format!("{path}.dram_bytes_per_cycle")).map(|_| ())
}

/// A TLB level: the default's arrays with the fields given replaced; ways must divide
/// entries (an array of 0 entries is absent).
fn tlb(raw: Option<RawGpuTlb>, d: LevelShape, path: &str) -> Result<LevelShape> {
    let raw = raw.unwrap_or_default();
    let base_entries = raw.base_entries.unwrap_or(d.base_entries);
    let large_entries = raw.large_entries.unwrap_or(d.large_entries);
    // A fully associative default stays fully associative at a new size.
    let ways = |given: Option<usize>, default_ways: usize, default_entries: usize, entries: usize| {
        given.unwrap_or(if default_ways == default_entries { entries } else { default_ways.min(entries) })
    };
    let shape = LevelShape {
        base_entries,
        base_ways: ways(raw.base_ways, d.base_ways, d.base_entries, base_entries),
        large_entries,
        large_ways: ways(raw.large_ways, d.large_ways, d.large_entries, large_entries),
    };
    for (field, entries, ways) in [("base", shape.base_entries, shape.base_ways), ("large", shape.large_entries, shape.large_ways)] {
        if entries > 1 << 24 || (entries > 0 && (ways == 0 || entries % ways != 0 || !(entries / ways).is_power_of_two() && ways != entries)) {
            return Err(Error::config(format!("{path}.{field}_ways"), format!("{entries} entries in {ways} ways is not a whole number of sets (at most 2^24 entries)")));
        }
    }
    Ok(shape)
}

/// The memory manager of `raw`.
fn manager(raw: RawGpuManager, path: &str) -> Result<ManagerSpec> {
    let d = ManagerSpec::default();
    let memory = raw.memory.map_or(d.memory_bytes, |b| b.0);
    // The managers number frames in 32 bits (`FRAME_LIMIT`): 16 TiB less a frame at most.
    if !(2 << 20..=8 << 40).contains(&memory) {
        return Err(Error::config(format!("{path}.memory"), format!("{memory} bytes: need 2 MiB to 8 TiB")));
    }
    let cac_threshold = raw.cac_threshold.unwrap_or(d.cac_threshold);
    if !(0.0..=1.0).contains(&cac_threshold) {
        return Err(Error::config(format!("{path}.cac_threshold"), format!("{cac_threshold} is not an occupancy between 0 and 1")));
    }
    let fragmentation_index = fraction(raw.fragmentation_index.unwrap_or(d.fragmentation_index), &format!("{path}.fragmentation_index"))?;
    let frame_occupancy = fraction(raw.frame_occupancy.unwrap_or(d.frame_occupancy), &format!("{path}.frame_occupancy"))?;
    Ok(ManagerSpec {
        kind: raw.policy.unwrap_or(d.kind),
        memory_bytes: memory,
        demand_paging: raw.demand_paging.unwrap_or(d.demand_paging),
        cac: raw.cac.unwrap_or(d.cac),
        cac_threshold,
        emergency_frames: raw.emergency_frames.unwrap_or(d.emergency_frames),
        fragmentation_index,
        frame_occupancy,
        prefragment_seed: d.prefragment_seed,
    })
}

/// The applications of a `gpu` workload, each with its footprint and seed; a trace is read
/// whole to check it and learn its footprint, relative to `base_dir`.
pub fn gpu_apps(w: &RawWorkload, path: &str, seed: u64, base_dir: &Path) -> Result<Vec<AppSpec>> {
    let foreign = [
        ("footprint", w.footprint.is_some()),
        ("refs", w.refs.is_some()),
        ("path", w.path.is_some()),
        ("scale", w.scale.is_some()),
        ("params", w.params.is_some()),
        ("skip", w.skip.is_some()),
        ("limit", w.limit.is_some()),
        ("quantum", w.quantum.is_some()),
        ("parts", w.parts.is_some()),
    ];
    if let Some((field, _)) = foreign.iter().find(|(_, set)| *set) {
        return Err(Error::config(format!("{path}.{field}"), "a `gpu` workload takes `apps` (and `seed`); this field belongs to reference-stream workloads"));
    }
    let apps = w.apps.as_ref().filter(|a| !a.is_empty()).ok_or_else(|| Error::config(format!("{path}.apps"), "a `gpu` workload needs one application or more in `apps`"))?;
    let seed = w.seed.unwrap_or(seed);
    apps.iter()
        .enumerate()
        .map(|(i, app)| {
            let field = format!("{path}.apps[{i}]");
            let (kind, bytes, own_seed) = match app {
                RawGpuApp::Name(kind) => (*kind, None, None),
                RawGpuApp::Table(t) => (t.app, t.footprint.map(|b| b.0), t.seed),
                RawGpuApp::Trace(t) => return trace_app(t, &field, base_dir),
            };
            // Copies of one application get different data, as separate runs of it would.
            let spec = KernelSpec { kind, bytes: bytes.unwrap_or_else(|| default_bytes(kind)), seed: own_seed.unwrap_or(seed.wrapping_add(i as u64)) };
            crate::gpu::kernels::check_spec(&spec).map_err(|e| Error::config(format!("{field}.footprint"), e.to_string()))?;
            Ok(AppSpec::Builtin(spec))
        })
        .collect()
}

/// The traced application of `t` (at `field`), its trace read and checked.
fn trace_app(t: &RawGpuTrace, field: &str, base_dir: &Path) -> Result<AppSpec> {
    if t.trace.as_os_str().is_empty() {
        return Err(Error::config(format!("{field}.trace"), "the trace path is empty"));
    }
    if let Some(name) = &t.name {
        super::validate::check_name(name, &format!("{field}.name"))?;
    }
    let spec = TraceSpec::open(&base_dir.join(&t.trace), t.name.clone()).map_err(|e| Error::config(format!("{field}.trace"), e.to_string()))?;
    Ok(AppSpec::Trace(spec))
}

fn count(v: usize, min: usize, max: usize, path: &str) -> Result<usize> {
    if (min..=max).contains(&v) { Ok(v) } else { Err(Error::config(path, format!("{v} is outside {min}..={max}"))) }
}

fn positive(v: f64, path: &str) -> Result<f64> {
    if v.is_finite() && v > 0.0 { Ok(v) } else { Err(Error::config(path, format!("{v} is not a positive number"))) }
}

fn fraction(v: f64, path: &str) -> Result<f64> {
    if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(Error::config(path, format!("{v} is not a fraction between 0 and 1"))) }
}

fn non_negative(v: f64, path: &str) -> Result<f64> {
    if v.is_finite() && v >= 0.0 { Ok(v) } else { Err(Error::config(path, format!("{v} is not a number of 0 or more"))) }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_experiment;
    use std::path::Path;

    /// The error of experiment `text`, as printed.
    fn error(text: &str) -> String {
        parse_experiment(text, Path::new(".")).expect_err("invalid").to_string()
    }

    const GPU: &str = "[[machine]]\nname = \"g\"\nkind = \"gpu\"\n";
    const CPU: &str = "[[machine]]\nname = \"c\"\npreset = \"single-tlb\"\n";

    #[test]
    fn a_gpu_workload_validates_with_table_1_defaults_and_its_applications() {
        let text = format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\", {{ app = \"gups\", footprint = \"8MiB\", seed = 9 }}]\n{GPU}");
        let spec = parse_experiment(&text, Path::new(".")).expect("valid");
        let crate::source::SourceSpec::Gpu { apps } = &spec.workloads[0].source else { panic!("a gpu workload") };
        let crate::gpu::kernels::AppSpec::Builtin(gups) = &apps[1] else { panic!("a built-in application") };
        assert_eq!((gups.bytes, gups.seed), (8 << 20, 9));
        let gpu = spec.machines[0].gpu().expect("a gpu machine");
        assert_eq!((gpu.params.sms, gpu.params.l2_tlb.base_entries, gpu.manager.memory_bytes), (30, 512, 3 << 30));
    }

    #[test]
    fn kinds_that_do_not_match_are_errors_naming_the_field() {
        let gpu_workload = "[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\"]\n";
        assert!(error(&format!("{gpu_workload}{CPU}")).contains("no `gpu` machine runs workload `w`"));
        let named = format!("{gpu_workload}machines = [\"c\"]\n{CPU}{GPU}");
        assert!(error(&named).contains("workload[0].machines: a `gpu` workload cannot run on `cpu` machine `c`"), "{}", error(&named));
        let stream = format!("[[workload]]\nname = \"s\"\ntype = \"uniform\"\nfootprint = \"1MiB\"\nrefs = 10\nmachines = [\"g\"]\n{GPU}");
        assert!(error(&stream).contains("a reference stream cannot run on `gpu` machine `g`"), "{}", error(&stream));
        assert!(error(&format!("{gpu_workload}{GPU}os = {{ memory = \"1GiB\" }}\n")).contains("machine[0].os: a `gpu` machine"));
        assert!(error(&format!("{gpu_workload}{CPU}gpu = {{ sms = 2 }}\n")).contains("machine[0].gpu: only `kind = \"gpu\"`"));
        assert!(error(&format!("{gpu_workload}refs = 5\n{GPU}")).contains("workload[0].refs"));
    }

    #[test]
    fn mixes_that_do_not_fit_the_machine_are_refused_before_running() {
        let small = format!("{GPU}gpu = {{ sms = 2, manager = {{ memory = \"16MiB\" }} }}\n");
        let three = format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\", \"bfs\", \"bfs\"]\n{small}");
        assert!(error(&three).contains("workload[0].apps: 3 applications cannot share machine `g`'s 2 SMs"), "{}", error(&three));
        let big = format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"gups\"]\n{small}");
        assert!(error(&big).contains("more than machine `g`'s 16777216 bytes of GPU memory"), "{}", error(&big));
        let huge = format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\"]\n{GPU}gpu = {{ manager = {{ memory = \"16TiB\" }} }}\n");
        assert!(error(&huge).contains("machine[0].gpu.manager.memory: 17592186044416 bytes: need 2 MiB to 8 TiB"), "{}", error(&huge));
        let odd = format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\"]\n{GPU}gpu = {{ l2_tlb = {{ base_ways = 7 }} }}\n");
        assert!(error(&odd).contains("machine[0].gpu.l2_tlb.base_ways"), "{}", error(&odd));
    }

    #[test]
    fn a_bad_application_gets_its_own_message() {
        let apps = |list: &str| error(&format!("[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [{list}]\n{GPU}"));
        let cases = [
            ("\"lulesh\"", "unknown variant `lulesh`, expected one of `stream`"),
            ("{ app = \"bfs\", sed = 3 }", "unknown field `sed`, expected one of `app`, `footprint`, `seed`"),
            ("{ footprint = \"1MiB\" }", "missing field `app`"),
            ("{ app = \"bfs\", footprint = \"lots\" }", "lots"),
            ("{ trace = \"t\", nme = \"x\" }", "unknown field `nme`, expected `trace` or `name`"),
            ("3", "expected an application's name, a table with `app`, or a table with `trace`"),
        ];
        for (list, message) in cases {
            let e = apps(list);
            assert!(e.contains(message) && !e.contains("untagged"), "{list}: {e}");
        }
    }

    #[test]
    fn pre_fragmentation_is_a_fraction_placed_by_the_machine_seed() {
        let w = "seed = 7\n[[workload]]\nname = \"w\"\ntype = \"gpu\"\napps = [\"bfs\"]\n";
        for (field, bad) in [("fragmentation_index", "1.5"), ("frame_occupancy", "-0.1"), ("frame_occupancy", "nan")] {
            let text = format!("{w}{GPU}gpu = {{ manager = {{ {field} = {bad} }} }}\n");
            assert!(error(&text).contains(&format!("machine[0].gpu.manager.{field}: ")) && error(&text).contains("between 0 and 1"), "{}", error(&text));
        }
        let text = format!("{w}{GPU}gpu = {{ manager = {{ fragmentation_index = 1.0, frame_occupancy = 0.25 }} }}\n[[machine]]\nname = \"h\"\nkind = \"gpu\"\nseed = 3\n");
        let spec = parse_experiment(&text, Path::new(".")).expect("valid");
        let (a, b) = (&spec.machines[0].gpu().expect("gpu").manager, &spec.machines[1].gpu().expect("gpu").manager);
        assert_eq!((a.fragmentation_index, a.frame_occupancy, a.prefragment_seed), (1.0, 0.25, 7));
        assert_eq!((b.fragmentation_index, b.frame_occupancy, b.prefragment_seed), (0.0, 0.5, 3));
    }
}
