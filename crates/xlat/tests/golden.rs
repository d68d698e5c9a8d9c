//! Snapshot tests: reduced versions of every experiment in `experiments/` give byte-identical
//! `results.csv` files (and `timing.csv`, for timed machines) to the ones in `tests/golden/`,
//! so that a change meant to leave results alone (a refactoring, a faster loop) is shown to.
//!
//! A reduced experiment is the file with every workload cut to its first [`REFS`] references
//! and built-in workloads at `paper` scale run at `small` (their set-up alone would take
//! minutes); a `gpu` workload keeps its first two applications, each at its tiny footprint,
//! and its `gpu.csv` is compared too. `tests/golden/pressure.toml`, run whole, adds what the cut experiments reach too
//! briefly: every eviction policy and recency mode under heavy pressure, with Mosaic TLBs and
//! several address spaces.
//!
//! After a change that is meant to change results, regenerate the files with
//! `XLAT_BLESS=1 cargo test --test golden` and say in the commit why they changed.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use xlat::config::{load_experiment, parse_experiment, ExperimentSpec};
use xlat::gpu::kernels::{AppSpec, TINY_BYTES};
use xlat::sim::{run_experiment, write_results};
use xlat::source::SourceSpec;

/// References per workload of a reduced experiment.
const REFS: u64 = 300_000;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The experiment file `path` reduced: built-in workloads at `paper` scale run at `small`, and
/// every workload is cut to [`REFS`] references.
fn reduced(path: &Path) -> ExperimentSpec {
    let text = std::fs::read_to_string(path).unwrap().replace(r#"scale = "paper""#, r#"scale = "small""#);
    let mut spec = parse_experiment(&text, path.parent().unwrap()).unwrap();
    for w in &mut spec.workloads {
        w.limit = Some(w.limit.map_or(REFS, |limit| limit.min(REFS)));
        if let SourceSpec::Gpu { apps } = &mut w.source {
            apps.truncate(2);
            // A trace is as large as it is; built-in applications shrink.
            for app in apps.iter_mut() {
                if let AppSpec::Builtin(spec) = app {
                    spec.bytes = TINY_BYTES;
                }
            }
        }
    }
    spec
}

/// The results.csv of `spec`, its timing.csv when a machine is timed, and its gpu.csv when
/// a `gpu` machine ran.
fn results_csv(spec: &ExperimentSpec) -> (String, Option<String>, Option<String>) {
    let result = run_experiment(spec, &AtomicBool::new(false), &mut |_| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path(), spec, &result).unwrap();
    let read = |file: &str| std::fs::read_to_string(dir.path().join(file));
    (read("results.csv").unwrap(), read("timing.csv").ok(), read("gpu.csv").ok())
}

/// Checks the tables of `name` (see [`check`]).
fn check_all(name: &str, (results, timing, gpu): (String, Option<String>, Option<String>)) {
    check(name, &results);
    if let Some(timing) = timing {
        check(&format!("{name}.timing"), &timing);
    }
    if let Some(gpu) = gpu {
        check(&format!("{name}.gpu"), &gpu);
    }
}

/// Compares `csv` with the golden file `name`, or writes it there under `XLAT_BLESS`.
fn check(name: &str, csv: &str) {
    let path = golden_dir().join(format!("{name}.csv"));
    if std::env::var_os("XLAT_BLESS").is_some() {
        std::fs::write(&path, csv).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (bless with XLAT_BLESS=1)", path.display()));
    if csv != expected {
        let differing = csv.lines().zip(expected.lines()).position(|(a, b)| a != b);
        panic!(
            "{name}: results.csv differs from {} (first differing row {differing:?}; {} rows against {})\ngot:\n{csv}",
            path.display(),
            csv.lines().count(),
            expected.lines().count()
        );
    }
}

/// Every experiment of `experiments/`, reduced, gives its golden results.
#[test]
fn reduced_experiments_give_their_golden_results() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repository().join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "experiments/ holds the papers' experiments");
    for file in files {
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        check_all(&name, results_csv(&reduced(&file)));
    }
}

/// Every eviction policy and recency mode under pressure, with Mosaic TLBs and a mix of
/// address spaces, gives its golden results.
#[test]
fn pressure_experiment_gives_its_golden_results() {
    let spec = load_experiment(&golden_dir().join("pressure.toml")).unwrap();
    check_all("pressure", results_csv(&spec));
}
