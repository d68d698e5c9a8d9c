//! `xlat._xlat`: the native half of the `xlat` Python package (python/xlat holds the other).
//!
//! It stays thin: experiments are parsed, run and written by the `xlat` library exactly as the
//! CLI does, and data crosses into Python as text (`results.csv`, JSON) or as packed reference
//! records (module `records`) that the Python side views as NumPy arrays. Long work runs with the
//! GIL released on a thread of its own while the calling thread watches for Ctrl-C
//! (module `detached`).

mod detached;
mod records;
mod simulation;

use detached::{detached, unwinding};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::{Path, PathBuf};
use xlat::config::{self, ExperimentSpec};
use xlat::sim::{self, ExperimentResult};
use xlat::source::{Interruptible, Limited, RefSource};

/// The Python exception for a library error: `OSError` for a file that cannot be read or
/// written, `KeyboardInterrupt` for an interrupted read, `ValueError` for the rest (invalid
/// configurations, malformed traces, simulations that cannot go on), with the library's
/// message, which names the file and field as the CLI prints it.
pub(crate) fn py_err(e: xlat::Error) -> PyErr {
    match e {
        xlat::Error::Io { .. } => PyOSError::new_err(e.to_string()),
        xlat::Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// The results of an experiment run: its validated spec and what the run counted.
#[pyclass(frozen, module = "xlat._xlat")]
struct Results {
    spec: ExperimentSpec,
    result: ExperimentResult,
}

#[pymethods]
impl Results {
    /// The content of `results.csv`, as the library's writer writes it.
    fn csv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        csv_bytes(py, &self.result)
    }

    /// The content of `results.json`, as JSON text.
    fn json_text(&self) -> PyResult<String> {
        serde_json::to_string(&sim::results_json(&self.spec, &self.result)).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Writes the result files into `dir` (created if missing), each atomically, after
    /// checking that every one of them can be written.
    fn write(&self, py: Python<'_>, dir: PathBuf) -> PyResult<()> {
        py.detach(|| unwinding(|| sim::check_outputs(&dir, &self.spec).and_then(|()| sim::write_results(&dir, &self.spec, &self.result))))?
            .map_err(py_err)
    }

    /// True when the run was interrupted.
    #[getter]
    fn partial(&self) -> bool {
        self.result.partial
    }
}

/// `results.csv`'s content for `result` as Python bytes.
pub(crate) fn csv_bytes<'py>(py: Python<'py>, result: &ExperimentResult) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    sim::write_results_csv(&mut out, result).map_err(|e| PyOSError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &out))
}

/// Loads the experiment file at `path`, or parses `text` (relative trace paths resolving
/// against `base_dir`), exactly one of them given.
#[pyfunction]
#[pyo3(signature = (path=None, text=None, base_dir=None))]
fn load(path: Option<PathBuf>, text: Option<&str>, base_dir: Option<PathBuf>) -> PyResult<Experiment> {
    let spec = match (path, text) {
        (Some(path), None) => unwinding(|| config::load_experiment(&path))?,
        (None, Some(text)) => unwinding(|| config::parse_experiment(text, base_dir.as_deref().unwrap_or(Path::new("."))))?,
        _ => return Err(PyValueError::new_err("give an experiment's path or its text, not both")),
    };
    spec.map(|spec| Experiment { spec }).map_err(py_err)
}

/// A validated experiment, ready to run.
#[pyclass(frozen, module = "xlat._xlat")]
struct Experiment {
    spec: ExperimentSpec,
}

#[pymethods]
impl Experiment {
    /// Runs every workload through every machine with the GIL released. `progress`, when
    /// given, is called now and then with `(workload, refs, expected)`. Ctrl-C stops the run
    /// after the current batch and raises `KeyboardInterrupt`.
    #[pyo3(signature = (progress=None))]
    fn run(&self, py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<Results> {
        let spec = &self.spec;
        let result = detached(py, progress, |interrupt, meter| sim::run_experiment(spec, interrupt, &mut |p| meter.record(p)))?;
        Ok(Results { spec: spec.clone(), result: result.map_err(py_err)? })
    }
}

/// TOML text of the JSON object `json`: how a Python dict becomes an experiment, so that it
/// goes through the same parser and validation as a file.
#[pyfunction]
fn toml_from_json(json: &str) -> PyResult<String> {
    let mut value: serde_json::Value = serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    drop_nulls(&mut value);
    let table = toml::Value::try_from(value).map_err(|e| PyValueError::new_err(format!("the experiment cannot be written as TOML: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(format!("the experiment cannot be written as TOML: {e}")))
}

/// Removes the null members of every object in `value`: Python's `None` is a field not given
/// (as a preset's dict has them), which TOML has no way to write.
fn drop_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// JSON text of the TOML `text`: an experiment file as the dict a sweep changes fields of.
#[pyfunction]
fn json_from_toml(text: &str) -> PyResult<String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&table).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The names of the built-in machines.
#[pyfunction]
fn presets() -> Vec<&'static str> {
    config::presets::NAMES.to_vec()
}

/// The preset `name` as a `[[machine]]` table, as JSON text (what `xlat presets NAME` prints).
#[pyfunction]
fn preset_json(name: &str) -> PyResult<String> {
    let machine = config::presets::machine(name).map_err(PyValueError::new_err)?;
    serde_json::to_string(&machine).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Opens the trace at `path` (format detected, or `format`'s name).
fn open_trace(path: &Path, format: Option<&str>) -> PyResult<Box<dyn RefSource>> {
    let format = match format {
        Some(name) => Some(xlat::trace::TraceFormat::from_name(name).ok_or_else(|| PyValueError::new_err(format!("unknown trace format `{name}`")))?),
        None => None,
    };
    xlat::trace::open(path, format).map_err(py_err)
}

/// `xlat trace info` of the trace at `path`, as JSON text. Reads the whole trace with the GIL
/// released; Ctrl-C stops it.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
fn trace_info(py: Python<'_>, path: PathBuf, format: Option<&str>) -> PyResult<String> {
    let mut source = open_trace(&path, format)?;
    let info = detached(py, None, |interrupt, _| xlat::trace::info::info(&mut Interruptible::new(&mut source, interrupt)))?;
    serde_json::to_string(&info.map_err(py_err)?).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The first `limit` references (all without one) of the trace at `path`, as packed records
/// ([`records`]), and the instructions they span (0 when the format does not count them).
#[pyfunction]
#[pyo3(signature = (path, limit=None, format=None))]
fn trace_read<'py>(py: Python<'py>, path: PathBuf, limit: Option<u64>, format: Option<&str>) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let source = open_trace(&path, format)?;
    let mut limited = Limited::new(source, 0, limit);
    let read = detached(py, None, |interrupt, _| xlat::source::collect(&mut Interruptible::new(&mut limited, interrupt)))?;
    let (refs, instructions) = read.map_err(py_err)?;
    Ok((PyBytes::new(py, &records::encode(&refs)), instructions))
}

/// Writes packed reference `records` as a trace at `path`, its format taken from the
/// extension (`.xlat`, `.lackey`, `.champsim`), atomically.
#[pyfunction]
fn trace_write(py: Python<'_>, path: PathBuf, records: &[u8]) -> PyResult<()> {
    let refs = records::decode(records)?;
    let format = xlat::trace::TraceFormat::from_extension(&path)
        .ok_or_else(|| PyValueError::new_err(format!("{}: cannot tell the trace format from the extension (.xlat, .lackey, .champsim)", path.display())))?;
    let batch = xlat::Batch::new(refs, 0);
    let write = || {
        xlat::atomic::check_output(&path)?;
        let mut writer = xlat::trace::create_writer(&path, format, &serde_json::json!({"source": "python"}))?;
        writer.write_batch(&batch)?;
        writer.finish()
    };
    py.detach(|| unwinding(write))?.map_err(py_err)
}

/// The extension module.
#[pymodule]
fn _xlat(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", xlat::VERSION)?;
    m.add("RECORD_BYTES", records::RECORD_BYTES)?;
    m.add_class::<Results>()?;
    m.add_class::<Experiment>()?;
    m.add_class::<simulation::Simulation>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(json_from_toml, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_json, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_read, m)?)?;
    m.add_function(wrap_pyfunction!(trace_write, m)?)?;
    Ok(())
}
