//! Writing results: `results.csv` (one row per workload × machine × TLB level) and
//! `results.json` (the resolved configuration, xlat version, input identities, seed and every
//! statistic), `eviction_age.csv` when some machine tracked eviction ages and evictions
//! happened, and `timing.csv` (one row per workload × timed machine: EMT's cycle model) when
//! some machine is timed. Each file is written to a temporary file in the output directory and renamed
//! into place, so an interrupted or failed write never leaves a half-written result.

use super::experiment::ExperimentResult;
use super::stats::ResultRow;
use crate::config::ExperimentSpec;
use crate::source::SourceSpec;
use crate::trace::TraceFormat;
use crate::atomic::{check_output, check_output_dir, Staged};
use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

const RESULTS_CSV: &str = "results.csv";
const EVICTION_AGE_CSV: &str = "eviction_age.csv";
const TIMING_CSV: &str = "timing.csv";
const GPU_CSV: &str = "gpu.csv";
const RESULTS_JSON: &str = "results.json";

/// The result files [`write_results`] writes (or, for eviction ages and timing, may remove).
const RESULT_FILES: [&str; 5] = [RESULTS_CSV, EVICTION_AGE_CSV, TIMING_CSV, GPU_CSV, RESULTS_JSON];

/// Checks, before a run, that every file it will write into `dir` can be written: `dir` (created
/// if missing) takes files, and none of the result files or `spec`'s plots exists as anything
/// but a regular file (a directory, a FIFO, a link). Found only when writing, after hours of
/// simulation, such a path would fail the run halfway through its files, leaving new ones
/// beside old or missing ones.
pub fn check_outputs(dir: &Path, spec: &ExperimentSpec) -> Result<()> {
    check_output_dir(dir)?;
    let plots = spec.plots.iter().map(|p| dir.join(&p.file));
    RESULT_FILES.iter().map(|f| dir.join(f)).chain(plots).try_for_each(|p| check_output(&p))
}

/// Writes the result files into `dir` (created if missing), all or none: they are renamed
/// into place together once every one is written ([`Staged`]), so that a failure (a full
/// disk) leaves an earlier run's files as they were rather than mixed with this run's.
pub fn write_results(dir: &Path, spec: &ExperimentSpec, result: &ExperimentResult) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut set = Staged::default();
    set.write(&dir.join(RESULTS_CSV), |out| write_results_csv(out, result))?;
    write_eviction_ages(&mut set, dir, result)?;
    write_timing(&mut set, dir, result)?;
    let gpu: Vec<_> = result.workloads.iter().flat_map(|w| w.gpu.iter().flat_map(|m| m.rows(&w.workload))).collect();
    write_table(&mut set, &dir.join(GPU_CSV), &gpu)?;
    let json = results_json(spec, result);
    set.write(&dir.join(RESULTS_JSON), |out| {
        serde_json::to_writer_pretty(&mut *out, &json)?;
        out.write_all(b"\n")
    })?;
    set.persist()
}

/// Writes `results.csv`'s content for `result` to `out`: the one definition of its columns,
/// shared by [`write_results`] and the Python package's data frames.
pub fn write_results_csv(out: &mut dyn Write, result: &ExperimentResult) -> std::io::Result<()> {
    write_rows(out, result.rows())
}

/// `results.json`'s content for `result` of `spec`: version, seed, the experiment as it ran
/// and every statistic.
pub fn results_json(spec: &ExperimentSpec, result: &ExperimentResult) -> serde_json::Value {
    serde_json::json!({
        "xlat_version": crate::VERSION,
        "seed": spec.seed,
        "partial": result.partial,
        "experiment": as_run(spec, result),
        "results": result.workloads,
    })
}

/// Writes `rows` as CSV to `out`, with a `unit` column when some row names its unit (the
/// others then get an empty one), and without one otherwise.
fn write_rows(out: &mut dyn Write, mut rows: Vec<ResultRow>) -> std::io::Result<()> {
    if rows.iter().any(|row| row.unit.is_some()) {
        rows.iter_mut().for_each(|row| {
            row.unit.get_or_insert_default();
        });
    }
    let mut w = csv::Writer::from_writer(out);
    for row in rows {
        w.serialize(row).map_err(std::io::Error::other)?;
    }
    w.flush()
}

/// `spec` as it ran: a trace whose format was left to detection gets the format its input
/// was read in, so that the resolved experiment replays the same way.
fn as_run(spec: &ExperimentSpec, result: &ExperimentResult) -> ExperimentSpec {
    let mut spec = spec.clone();
    for w in &mut spec.workloads {
        if let Some(read) = result.workloads.iter().find(|r| r.workload == w.name) {
            record_formats(&mut w.source, &read.input);
        }
    }
    spec
}

/// Sets the format of every trace of `source` left to detection from `input`, the identity
/// of the input as read (a mix's gives each part's).
fn record_formats(source: &mut SourceSpec, input: &serde_json::Value) {
    match source {
        SourceSpec::Trace { format: format @ None, .. } => *format = input["format"].as_str().and_then(TraceFormat::from_name),
        SourceSpec::Mix { parts, .. } => {
            for (j, part) in parts.iter_mut().enumerate() {
                record_formats(&mut part.workload.source, &input["parts"][j]["input"]);
            }
        }
        _ => {}
    }
}

/// One row of `eviction_age.csv`: the relative age of one window of evictions.
#[derive(serde::Serialize)]
struct AgeRow<'a> {
    workload: &'a str,
    config: &'a str,
    window: usize,
    mean_age: f64,
    max_age: f64,
}

/// Writes `eviction_age.csv` when some machine tracked eviction ages, else removes a stale
/// one.
fn write_eviction_ages(set: &mut Staged, dir: &Path, result: &ExperimentResult) -> Result<()> {
    let tracked = result.workloads.iter().flat_map(|w| w.machines.iter().map(move |m| (w, m)));
    let mut rows = Vec::new();
    for (w, m) in tracked {
        if let Some(age) = &m.os.eviction_age {
            for (i, (&mean_age, &max_age)) in age.window_means.iter().zip(&age.window_maxes).enumerate() {
                rows.push(AgeRow { workload: &w.workload, config: &m.machine, window: i, mean_age, max_age });
            }
        }
    }
    write_table(set, &dir.join(EVICTION_AGE_CSV), &rows)
}

/// Writes `rows` as CSV to `path`, or when there are none, removes a file an earlier run left
/// there: it would sit beside this run's results, and be plotted, as if it were theirs.
fn write_table<T: serde::Serialize>(set: &mut Staged, path: &Path, rows: &[T]) -> Result<()> {
    if rows.is_empty() {
        return set.remove(path);
    }
    set.write(path, |out| {
        let mut w = csv::Writer::from_writer(out);
        for row in rows {
            w.serialize(row).map_err(std::io::Error::other)?;
        }
        w.flush()
    })
}

/// One row of `timing.csv`: where a timed machine's cycles went on one workload.
#[derive(serde::Serialize)]
struct TimingRow<'a> {
    workload: &'a str,
    config: &'a str,
    walks: u64,
    mean_walk_cycles: Option<f64>,
    walk_cycles: f64,
    tlb_cycles: f64,
    data_cycles: f64,
    instruction_cycles: f64,
    total_cycles: f64,
    kernel_cycles: f64,
    cycles_with_kernel: f64,
    ipc: Option<f64>,
}

/// Writes `timing.csv` when some machine is timed, else removes a stale one.
fn write_timing(set: &mut Staged, dir: &Path, result: &ExperimentResult) -> Result<()> {
    let timed = result.workloads.iter().flat_map(|w| w.machines.iter().filter_map(move |m| Some((w, m, m.timing.as_ref()?))));
    let rows: Vec<TimingRow> = timed
        .map(|(w, m, t)| TimingRow {
            workload: &w.workload,
            config: &m.machine,
            walks: t.walks,
            mean_walk_cycles: t.mean_walk_cycles,
            walk_cycles: t.walk_cycles,
            tlb_cycles: t.tlb_cycles,
            data_cycles: t.data_cycles,
            instruction_cycles: t.instruction_cycles,
            total_cycles: t.total_cycles,
            kernel_cycles: t.kernel_cycles,
            cycles_with_kernel: t.cycles_with_kernel,
            ipc: t.ipc,
        })
        .collect();
    write_table(set, &dir.join(TIMING_CSV), &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of `config` counting `unit`, if any.
    fn row(config: &str, unit: Option<&str>) -> ResultRow {
        let stats = crate::sim::MachineStats {
            machine: config.into(),
            counters: Default::default(),
            levels: vec![crate::tlb::LevelStats { level: "L1".into(), side: crate::tlb::Side::Unified, entries: 4, ways: 4, counters: Default::default() }],
            mosaic: vec![],
            os: Default::default(),
            walker: Default::default(),
            page_table: Default::default(),
            kernel_work: None,
            timing: None,
            loops: vec![],
        };
        ResultRow { unit: unit.map(str::to_string), ..stats.rows("w", false).remove(0) }
    }

    fn csv(rows: Vec<ResultRow>) -> String {
        let mut out = Vec::new();
        write_rows(&mut out, rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_unit_column_appears_only_when_some_row_has_a_unit() {
        let without = csv(vec![row("cpu", None), row("cpu2", None)]);
        assert!(without.lines().next().unwrap().ends_with(",partial"), "{without}");
        assert!(without.lines().all(|line| !line.ends_with(',')), "{without}");
        let with = csv(vec![row("cpu", None), row("gpu", Some("app1"))]);
        let lines: Vec<&str> = with.lines().collect();
        assert!(lines[0].ends_with(",partial,unit"), "{with}");
        assert!(lines[1].ends_with(",false,"), "a row without a unit has an empty one: {with}");
        assert!(lines[2].ends_with(",false,app1"), "{with}");
        // The columns before it are the same either way.
        assert_eq!(without.lines().nth(1).unwrap(), lines[1].strip_suffix(',').unwrap());
    }
}
