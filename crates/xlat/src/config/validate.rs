//! Validation: raw configuration in, typed specs out, every error naming the offending field
//! (`machine[1].tlb[0].arrays[0].ways: 1536 entries are not divisible by 7 ways`).

use super::mosaic;
use super::os;
use super::pwc;
use super::timing;
use super::plot::{self, PlotSpec};
use super::presets::{self, PresetParams};
use super::raw::{ExperimentFile, RawArray, RawLevel, RawMachine, RawWays, RawWorkload, WorkloadType};
use crate::sim::{CpuSpec, MachineSpec};
use crate::source::synthetic::{Pattern, SyntheticSpec};
use crate::source::mix::MixPart;
use crate::source::{SourceSpec, WorkloadSpec};
use crate::tlb::{ArrayGeometry, LevelGeometry, Policy};
use crate::trace::TraceFormat;
use crate::types::PageSize;
use crate::units::exact_bytes;
use crate::workload::BuiltinSpec;
use crate::{Error, Result};
use std::path::Path;

/// The validated experiment.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExperimentSpec {
    /// The seed recorded in results.
    pub seed: u64,
    /// References per batch.
    pub batch: usize,
    /// Workloads, each read once.
    pub workloads: Vec<WorkloadSpec>,
    /// Machines, all fed every workload.
    pub machines: Vec<MachineSpec>,
    /// Plots drawn from the results.
    pub plots: Vec<PlotSpec>,
}

/// Default seed when a file gives none.
pub const DEFAULT_SEED: u64 = 1;
/// Default references per batch: large enough to amortize per-batch work, small enough to stay
/// in the L2 cache (64 Ki × 16 bytes = 1 MiB).
pub const DEFAULT_BATCH: usize = 1 << 16;
/// Most references per batch. Three batches of 16 bytes a reference are in flight, so this
/// bounds their host memory (192 MiB) and keeps Ctrl-C prompt, far past the size where larger
/// batches stop paying; a mistyped batch is then an error, not an allocation failure.
pub const MAX_BATCH: usize = 1 << 22;

pub(super) fn err<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T> {
    Err(Error::config(path, message))
}

/// Validates a parsed experiment. Relative trace paths are resolved against `base_dir`.
pub fn experiment(file: &ExperimentFile, base_dir: &Path) -> Result<ExperimentSpec> {
    if let Some(v) = file.schema {
        if v != 1 {
            return err("schema", format!("schema version {v} is not supported (this xlat reads version 1)"));
        }
    }
    let seed = file.seed.unwrap_or(DEFAULT_SEED);
    let batch = file.batch.unwrap_or(DEFAULT_BATCH);
    if batch == 0 {
        return err("batch", "batch must be at least 1 reference");
    }
    if batch > MAX_BATCH {
        return err("batch", format!("{batch} references exceed the {MAX_BATCH} a batch may hold"));
    }
    if file.workloads.is_empty() {
        return err("workload", "the experiment has no [[workload]]");
    }
    if file.machines.is_empty() {
        return err("machine", "the experiment has no [[machine]]");
    }
    let workloads = file
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| workload(w, &format!("workload[{i}]"), seed, base_dir))
        .collect::<Result<Vec<_>>>()?;
    unique_names(workloads.iter().map(|w| w.name.as_str()), "workload", "workload")?;
    let machines = machines(file)?;
    for (i, w) in workloads.iter().enumerate() {
        if w.machines.as_ref().is_some_and(Vec::is_empty) {
            return err(format!("workload[{i}].machines"), "an empty list runs the workload on no machine (leave `machines` out to run it on all)");
        }
        for (j, pattern) in w.machines.iter().flatten().enumerate() {
            let only = WorkloadSpec { machines: Some(vec![pattern.clone()]), ..w.clone() };
            if !machines.iter().any(|m| only.runs_on(m.name())) {
                return err(format!("workload[{i}].machines[{j}]"), format!("`{pattern}` names no machine"));
            }
        }
    }
    for (i, w) in workloads.iter().enumerate() {
        check_kinds(w, &machines, &format!("workload[{i}]"))?;
    }
    let host = crate::host::memory();
    for (i, m) in machines.iter().enumerate() {
        if let Some(os) = m.os() {
            os::machine_fits(os, m.host_bytes(), m.name(), host, &format!("machine[{i}]"))?;
        }
    }
    for (i, w) in workloads.iter().enumerate() {
        let used = machines.iter().filter(|m| w.runs_on(m.name())).filter_map(|m| Some((m.os()?, m.host_bytes())));
        os::fit_together(used, host, &format!("workload[{i}]"))?;
    }
    let plots = file.plots.iter().enumerate().map(|(i, p)| plot::validate(p, &format!("plot[{i}]"))).collect::<Result<Vec<_>>>()?;
    // Checked before simulating, so that a plot that cannot be drawn does not cost a run.
    for (i, p) in plots.iter().enumerate() {
        if plots[..i].iter().any(|q| q.file == p.file) {
            return err(format!("plot[{i}].file"), format!("another plot is already drawn to `{}`", p.file));
        }
        if p.data == plot::PlotData::EvictionAge && machines.iter().all(|m| m.os().is_none_or(|os| os.age_window.is_none())) {
            return err(format!("plot[{i}].data"), "no machine sets `os.age_window`, so there is no eviction-age data to plot");
        }
        if p.data == plot::PlotData::Gpu && machines.iter().all(|m| m.gpu().is_none()) {
            return err(format!("plot[{i}].data"), "no machine is a `gpu` machine, so there is no GPU data to plot");
        }
        if p.data == plot::PlotData::Timing && machines.iter().all(|m| !m.timed()) {
            return err(format!("plot[{i}].data"), "no machine sets `[machine.timing]`, so there is no timing data to plot");
        }
    }
    Ok(ExperimentSpec { seed, batch, workloads, machines, plots })
}

/// Checks that workload `w` (at `path`) runs on machines of its kind: a `gpu` workload on
/// `gpu` machines, which fit its applications; a reference stream on the others. A machine
/// of the other kind is passed over when the workload names no machines, and an error when
/// it names it.
fn check_kinds(w: &WorkloadSpec, machines: &[MachineSpec], path: &str) -> Result<()> {
    let gpu_workload = matches!(w.source, SourceSpec::Gpu { .. });
    let mut runs = 0;
    for m in machines.iter().filter(|m| w.runs_on(m.name())) {
        match (gpu_workload, m.gpu()) {
            (true, Some(gpu)) => {
                let SourceSpec::Gpu { apps } = &w.source else { unreachable!("a gpu workload") };
                crate::gpu::mix::check_mix(gpu, apps, &format!("{path}.apps"))?;
                runs += 1;
            }
            (false, None) => runs += 1,
            _ if w.machines.is_some() => {
                let (what, kind) = if gpu_workload { ("a `gpu` workload", "`cpu`") } else { ("a reference stream", "`gpu`") };
                return err(format!("{path}.machines"), format!("{what} cannot run on {kind} machine `{}`", m.name()));
            }
            _ => {}
        }
    }
    if runs == 0 {
        let kind = if gpu_workload { "`gpu`" } else { "`cpu`" };
        return err(path, format!("no {kind} machine runs workload `{}`", w.name));
    }
    Ok(())
}

/// Validates the `[[machine]]` tables of `file` alone (their names distinct), each taking the
/// file's seed unless it gives its own: what a stream fed from outside an experiment runs on.
pub fn machines(file: &ExperimentFile) -> Result<Vec<MachineSpec>> {
    if file.machines.is_empty() {
        return err("machine", "the experiment has no [[machine]]");
    }
    let seed = file.seed.unwrap_or(DEFAULT_SEED);
    let machines = file
        .machines
        .iter()
        .enumerate()
        .map(|(i, m)| machine(m, &format!("machine[{i}]"), seed))
        .collect::<Result<Vec<_>>>()?;
    unique_names(machines.iter().map(MachineSpec::name), "machine", "machine")?;
    Ok(machines)
}

/// Checks that the `name`s of the list at `path` are printable (see [`check_name`]) and
/// distinct: a name is a key of result rows, so two equal ones would make rows that cannot be
/// told apart.
fn unique_names<'a>(names: impl Iterator<Item = &'a str>, path: &str, what: &str) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, name) in names.enumerate() {
        check_name(name, &format!("{path}[{i}].name"))?;
        if !seen.insert(name) {
            return err(format!("{path}[{i}].name"), format!("another {what} is already named `{name}`"));
        }
    }
    Ok(())
}

/// Checks that the name at `path` shows something and contains no control character: names
/// head the rows of the printed tables, where a newline or tab would break the columns.
pub(super) fn check_name(name: &str, path: &str) -> Result<()> {
    if name.trim().is_empty() {
        return err(path, "names must not be empty");
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return err(path, format!("names must not contain control characters (found {:?})", c));
    }
    Ok(())
}

/// Validates one workload.
pub fn workload(w: &RawWorkload, path: &str, seed: u64, base_dir: &Path) -> Result<WorkloadSpec> {
    let builtin_only = [("scale", w.scale.is_some()), ("params", w.params.is_some()), ("startup", w.startup.is_some()), ("address_space_events", w.address_space_events.is_some())];
    if let (false, Some((field, _))) = (w.kind.is_builtin(), builtin_only.iter().find(|(_, set)| *set)) {
        return err(format!("{path}.{field}"), "only built-in workloads (gups, btree, xsbench, graph500, gap, memcached, redis, sysbench-memory) take this field");
    }
    if w.kind == WorkloadType::Gpu {
        let apps = super::gpu::gpu_apps(w, path, seed, base_dir)?;
        return Ok(WorkloadSpec { name: w.name.clone(), source: SourceSpec::Gpu { apps }, skip: 0, limit: None, machines: w.machines.clone() });
    }
    if w.apps.is_some() {
        return err(format!("{path}.apps"), "only `type = \"gpu\"` workloads take this field");
    }
    if w.kind != WorkloadType::Mix && (w.quantum.is_some() || w.parts.is_some()) {
        let field = if w.quantum.is_some() { "quantum" } else { "parts" };
        return err(format!("{path}.{field}"), "only `type = \"mix\"` workloads take this field");
    }
    let source = match w.kind {
        WorkloadType::Trace => trace_source(w, path, base_dir)?,
        WorkloadType::Mix => mix_source(w, path, seed, base_dir)?,
        kind if kind.is_builtin() => SourceSpec::Builtin(builtin(w, path, seed)?),
        _ => SourceSpec::Synthetic(synthetic(w, path, seed)?),
    };
    Ok(WorkloadSpec { name: w.name.clone(), source, skip: w.skip.unwrap_or(0), limit: w.limit, machines: w.machines.clone() })
}

/// References per turn of a mix when `quantum` is not given: about a scheduler's time slice
/// (a few milliseconds) of a core issuing a few hundred million references a second.
pub const DEFAULT_QUANTUM: u64 = 1_000_000;

/// A mix's parts, each validated as a workload of its own under `path.parts[j]`, in the
/// address space its `asid` names (by default its position in the list).
fn mix_source(w: &RawWorkload, path: &str, seed: u64, base_dir: &Path) -> Result<SourceSpec> {
    let own = [("asid", w.asid.is_some()), ("seed", w.seed.is_some()), ("path", w.path.is_some()), ("format", w.format.is_some())];
    if let Some((field, _)) = pattern_fields(w).iter().chain(&own).find(|(_, set)| *set) {
        return err(format!("{path}.{field}"), "a mix takes `parts` and `quantum`; this field belongs in a part");
    }
    let quantum = w.quantum.unwrap_or(DEFAULT_QUANTUM);
    if quantum == 0 {
        return err(format!("{path}.quantum"), "a turn must be at least one reference");
    }
    let Some(raw_parts) = w.parts.as_deref().filter(|parts| !parts.is_empty()) else {
        return err(format!("{path}.parts"), "a mix needs at least one part");
    };
    let parts = raw_parts.iter().enumerate().map(|(j, raw)| mix_part(raw, &format!("{path}.parts[{j}]"), j, seed, base_dir));
    let parts = parts.collect::<Result<Vec<_>>>()?;
    unique_names(parts.iter().map(|p| p.workload.name.as_str()), &format!("{path}.parts"), "part")?;
    check_shared_asids(raw_parts, path)?;
    Ok(SourceSpec::Mix { quantum, parts })
}

/// Checks that no part's `asid` is another part's default (its position): parts share their
/// pages only when both say so, not because one was given the number of the other's place.
fn check_shared_asids(raw_parts: &[RawWorkload], path: &str) -> Result<()> {
    for (j, raw) in raw_parts.iter().enumerate() {
        let Some(asid) = raw.asid else { continue };
        let i = usize::from(asid);
        if let Some(other) = raw_parts.get(i).filter(|other| i != j && other.asid.is_none()) {
            let message = format!(
                "ASID {asid} is part `{}`'s, by its position; give that part `asid = {asid}` too if the two are to share their pages",
                other.name
            );
            return err(format!("{path}.parts[{j}].asid"), message);
        }
    }
    Ok(())
}

/// Part `j` of a mix, at `path`.
fn mix_part(raw: &RawWorkload, path: &str, j: usize, seed: u64, base_dir: &Path) -> Result<MixPart> {
    if raw.kind == WorkloadType::Mix {
        return err(format!("{path}.type"), "a mix cannot be a part of a mix");
    }
    if raw.machines.is_some() {
        return err(format!("{path}.machines"), "a part runs wherever its mix runs: set `machines` on the mix");
    }
    let Some(asid) = raw.asid.or_else(|| u16::try_from(j).ok()) else {
        return err(format!("{path}.asid"), "parts past the 65,536th need an explicit `asid`");
    };
    // A generated part takes the ASID itself, so that its resolved spec shows it; a trace's
    // references get it as they are read.
    let mut raw = raw.clone();
    raw.asid = (raw.kind != WorkloadType::Trace).then_some(asid);
    Ok(MixPart { workload: workload(&raw, path, seed, base_dir)?, asid })
}

/// The fields that describe a synthetic stream's pattern, and whether each is set.
fn pattern_fields(w: &RawWorkload) -> [(&'static str, bool); 7] {
    [
        ("footprint", w.footprint.is_some()),
        ("refs", w.refs.is_some()),
        ("base", w.base.is_some()),
        ("size", w.size.is_some()),
        ("store_fraction", w.store_fraction.is_some()),
        ("stride", w.stride.is_some()),
        ("exponent", w.exponent.is_some()),
    ]
}

fn trace_source(w: &RawWorkload, path: &str, base_dir: &Path) -> Result<SourceSpec> {
    let generated = [("asid", w.asid.is_some()), ("seed", w.seed.is_some())];
    if let Some((field, _)) = pattern_fields(w).iter().chain(&generated).find(|(_, set)| *set) {
        return err(format!("{path}.{field}"), "only synthetic workloads take this field (use `limit` to cut a trace)");
    }
    let Some(file) = &w.path else {
        return err(format!("{path}.path"), "a trace workload needs a `path`");
    };
    if file.as_os_str().is_empty() {
        return err(format!("{path}.path"), "the trace path is empty");
    }
    let format = match &w.format {
        None => None,
        Some(name) => Some(TraceFormat::from_name(name).ok_or_else(|| {
            Error::config(format!("{path}.format"), format!("unknown trace format `{name}` (native, lackey, champsim)"))
        })?),
    };
    Ok(SourceSpec::Trace { path: base_dir.join(file), format })
}

fn builtin(w: &RawWorkload, path: &str, seed: u64) -> Result<BuiltinSpec> {
    let file = [("path", w.path.is_some()), ("format", w.format.is_some())];
    if let Some((field, _)) = pattern_fields(w).iter().chain(&file).find(|(_, set)| *set) {
        return err(format!("{path}.{field}"), format!("a {} workload does not take this field (its parameters go in `params`)", w.kind.name()));
    }
    let Some(scale_name) = &w.scale else {
        return err(format!("{path}.scale"), "a built-in workload needs a `scale` (tiny, small or paper)");
    };
    let scale = crate::workload::scale(scale_name, &format!("{path}.scale"))?;
    let mut spec = BuiltinSpec::new(w.kind.name(), scale, w.params.as_ref(), w.seed.unwrap_or(seed), w.asid.unwrap_or(0), path)?;
    spec.startup = w.startup.unwrap_or(spec.startup);
    spec.events = w.address_space_events.unwrap_or(spec.events);
    Ok(spec)
}

fn synthetic(w: &RawWorkload, path: &str, seed: u64) -> Result<SyntheticSpec> {
    if w.path.is_some() || w.format.is_some() {
        return err(format!("{path}.path"), "only `type = \"trace\"` workloads read a file");
    }
    if w.stride.is_some() && w.kind != WorkloadType::Strided {
        return err(format!("{path}.stride"), "only strided workloads take a stride");
    }
    if w.exponent.is_some() && w.kind != WorkloadType::Zipf {
        return err(format!("{path}.exponent"), "only zipf workloads take an exponent");
    }
    let pattern = match w.kind {
        WorkloadType::Sequential => Pattern::Sequential,
        WorkloadType::Strided => Pattern::Strided {
            stride: w.stride.ok_or_else(|| Error::config(format!("{path}.stride"), "a strided workload needs a stride"))?.0,
        },
        WorkloadType::Uniform => Pattern::Uniform,
        WorkloadType::Zipf => Pattern::Zipf { exponent: w.exponent.unwrap_or(0.99) },
        _ => unreachable!("trace and built-in workloads are validated elsewhere"),
    };
    let spec = SyntheticSpec {
        pattern,
        footprint: w.footprint.ok_or_else(|| Error::config(format!("{path}.footprint"), "a synthetic workload needs a footprint"))?.0,
        refs: w.refs.ok_or_else(|| Error::config(format!("{path}.refs"), "a synthetic workload needs a reference count"))?,
        base: w.base.unwrap_or(0x1000_0000),
        size: w.size.unwrap_or(8),
        store_fraction: w.store_fraction.unwrap_or(0.0),
        asid: w.asid.unwrap_or(0),
        seed: w.seed.unwrap_or(seed),
    };
    spec.validate(path)?;
    Ok(spec)
}

/// Validates one machine of the kind it names (a CPU machine when it names none).
pub fn machine(m: &RawMachine, path: &str, seed: u64) -> Result<MachineSpec> {
    MachineSpec::from_raw(m.kind.unwrap_or(crate::sim::machine::DEFAULT_KIND), m, path, seed)
}

/// Validates a CPU machine, starting from its preset when it names one.
pub fn cpu_machine(m: &RawMachine, path: &str, seed: u64) -> Result<CpuSpec> {
    if m.gpu.is_some() {
        return err(format!("{path}.gpu"), "only `kind = \"gpu\"` machines take this table");
    }
    let params = PresetParams { entries: m.entries, ways: m.ways, replacement: m.replacement };
    let param_fields = [("entries", m.entries.is_some()), ("ways", m.ways.is_some()), ("replacement", m.replacement.is_some())];
    if let Some((field, _)) = param_fields.iter().find(|(_, given)| *given) {
        if m.preset.is_none() {
            return err(format!("{path}.{field}"), "entries/ways/replacement at machine level are preset parameters; name a `preset` or put them in a `tlb` array");
        }
        // They shape the preset's levels, which `tlb` replaces: accepting them would ignore them.
        if m.tlb.is_some() {
            return err(format!("{path}.{field}"), format!("`{field}` sets the preset's TLB, which the `[[machine.tlb]]` levels replace; put it in a `tlb` array"));
        }
    }
    let (preset_tlb, preset_os) = match &m.preset {
        Some(name) => {
            let p = presets::preset(name, params).map_err(|e| Error::config(format!("{path}.preset"), e))?;
            (Some(p.tlb), p.os)
        }
        None => (None, presets::default_os()),
    };
    let levels = match (&m.tlb, preset_tlb) {
        (Some(tlb), _) => tlb.clone(),
        (None, Some(tlb)) => tlb,
        (None, None) => Vec::new(),
    };
    let os_raw = os::merge(preset_os, m.os.as_ref());
    let os = os::validate(&os_raw, &format!("{path}.os"))?;
    let tlb = tlb(&levels, &format!("{path}.tlb")).map_err(|e| preset_param_error(e, m, path))?;
    let level_names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
    let mosaic = mosaic::validate(m.mosaic.as_deref().unwrap_or_default(), &format!("{path}.mosaic"), &level_names)?;
    if tlb.is_empty() && mosaic.is_empty() {
        // A machine without a TLB would give no result rows, and so an empty results file.
        return match (&m.tlb, &m.mosaic) {
            (Some(_), _) => err(format!("{path}.tlb"), "`tlb = []` leaves the machine without a TLB; give it levels or `[[machine.mosaic]]` TLBs"),
            (None, Some(_)) => err(format!("{path}.mosaic"), "`mosaic = []` leaves the machine without a TLB; give it Mosaic TLBs, `tlb` levels or a `preset`"),
            (None, None) => err(format!("{path}.tlb"), "a machine needs a `preset`, a `tlb` section or `mosaic` TLBs"),
        };
    }
    if !mosaic.is_empty() && !matches!(os.placement, crate::os::PlacementSpec::Iceberg(_)) {
        return err(format!("{path}.mosaic"), "Mosaic TLBs store CPFNs, which need `os.placement = \"iceberg\"`");
    }
    let pwc = m.pwc.as_ref().map(|raw| pwc::validate(raw, &os, &format!("{path}.pwc"))).transpose()?;
    let timing = m.timing.as_ref().map(|raw| timing::validate(raw, &format!("{path}.timing"))).transpose()?;
    Ok(CpuSpec { name: m.name.clone(), seed: m.seed.unwrap_or(seed), os, tlb, mosaic, pwc, timing })
}

/// An error in the levels a preset built from the machine's `entries`, `ways` or
/// `replacement`, named by the field the user wrote rather than the preset's array.
fn preset_param_error(e: Error, m: &RawMachine, path: &str) -> Error {
    let Error::Config { path: field, message } = e else { return e };
    let given = [("entries", m.entries.is_some()), ("ways", m.ways.is_some()), ("replacement", m.replacement.is_some())];
    let param = given.iter().find(|(name, given)| *given && m.tlb.is_none() && field.ends_with(&format!(".{name}")));
    match (param, &m.preset) {
        (Some((name, _)), Some(preset)) => Error::config(format!("{path}.{name}"), format!("{message} (in the `{preset}` preset's TLB)")),
        _ => Error::Config { path: field, message },
    }
}

pub(super) fn page_size_of(bytes: u64, path: &str) -> Result<PageSize> {
    PageSize::ALL
        .into_iter()
        .find(|s| s.bytes() == bytes)
        .ok_or_else(|| Error::config(path, format!("{} is not a page size (4KiB, 2MiB or 1GiB)", exact_bytes(bytes))))
}

/// The levels at `path` (none for a machine of Mosaic TLBs only).
fn tlb(levels: &[RawLevel], path: &str) -> Result<Vec<LevelGeometry>> {
    unique_names(levels.iter().map(|l| l.name.as_str()), path, "level")?;
    levels.iter().enumerate().map(|(i, l)| level(l, &format!("{path}[{i}]"))).collect()
}

fn level(l: &RawLevel, path: &str) -> Result<LevelGeometry> {
    if l.arrays.is_empty() {
        return err(format!("{path}.arrays"), "a level needs at least one array");
    }
    let arrays = |list: &[RawArray], field: &str| {
        list.iter()
            .enumerate()
            .map(|(i, a)| array(a, &format!("{path}.{field}[{i}]")))
            .collect::<Result<Vec<_>>>()
    };
    let geometry = LevelGeometry {
        name: l.name.clone(),
        arrays: arrays(&l.arrays, "arrays")?,
        instr_arrays: arrays(&l.instr_arrays, "instr_arrays")?,
        inclusive: l.inclusive.unwrap_or(false),
    };
    for (field, list) in [("arrays", &geometry.arrays), ("instr_arrays", &geometry.instr_arrays)] {
        for size in PageSize::ALL {
            let holders = list.iter().filter(|a| a.page_sizes.contains(&size)).count();
            if holders > 1 {
                return err(format!("{path}.{field}"), format!("{holders} arrays hold {size} pages; at most one may"));
            }
        }
    }
    Ok(geometry)
}

/// Most entries a TLB array may have: far beyond any real TLB, and small enough that slots
/// are 32-bit numbers and a mistyped size is an error rather than an allocation of the
/// host's whole memory.
pub(super) const MAX_ARRAY_ENTRIES: usize = 1 << 24;

fn array(a: &RawArray, path: &str) -> Result<ArrayGeometry> {
    if a.entries == 0 {
        return err(format!("{path}.entries"), "an array needs at least one entry");
    }
    if a.entries > MAX_ARRAY_ENTRIES {
        return err(format!("{path}.entries"), format!("{} entries exceed the {MAX_ARRAY_ENTRIES} an array may have", a.entries));
    }
    let ways = match a.ways {
        RawWays::Full => a.entries,
        RawWays::Count(0) => return err(format!("{path}.ways"), "an array needs at least one way"),
        RawWays::Count(w) if w > a.entries => {
            return err(format!("{path}.ways"), format!("{w} ways exceed the {} entries", a.entries))
        }
        RawWays::Count(w) if a.entries % w != 0 => {
            return err(format!("{path}.ways"), format!("{} entries are not divisible by {w} ways", a.entries))
        }
        RawWays::Count(w) => w,
    };
    if ways > u16::MAX as usize {
        return err(format!("{path}.ways"), format!("{ways} ways exceed the supported 65535"));
    }
    let sizes = a.page_sizes.clone().unwrap_or_else(|| vec![super::size::ByteSize(4096)]);
    if sizes.is_empty() {
        return err(format!("{path}.page_sizes"), "an array must hold at least one page size");
    }
    let mut page_sizes = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| page_size_of(s.0, &format!("{path}.page_sizes[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    page_sizes.sort();
    page_sizes.dedup();
    Ok(ArrayGeometry { entries: a.entries, ways, policy: a.replacement.unwrap_or(Policy::Lru), page_sizes })
}
