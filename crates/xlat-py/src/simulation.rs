//! `Simulation`: machines fed references from Python (NumPy arrays) instead of a workload.

use crate::detached::unwinding;
use crate::{csv_bytes, py_err, records};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;
use xlat::sim::{process_all, ExperimentResult, Machine, MachineSpec, WorkloadResult};
use xlat::{AddressSpaceEvent, Batch, RangeOp};

/// Machines and what they were fed so far.
struct Fed {
    machines: Vec<Box<dyn Machine>>,
    workload: String,
    refs: u64,
    seconds: f64,
}

/// Machines that references are fed to directly, batch by batch, in the order given.
#[pyclass(frozen, module = "xlat._xlat")]
pub struct Simulation {
    fed: Mutex<Fed>,
}

impl Simulation {
    /// The state, or a `RuntimeError` when an earlier feed panicked while holding it.
    fn lock(&self) -> PyResult<MutexGuard<'_, Fed>> {
        self.fed.lock().map_err(|_| PyRuntimeError::new_err("an earlier feed failed inside xlat; start a new Simulation"))
    }
}

#[pymethods]
impl Simulation {
    /// Fresh machines built from the `[[machine]]` tables of the TOML `text`, validated as an
    /// experiment's are; results name the stream `workload`.
    #[new]
    fn new(text: &str, workload: String) -> PyResult<Simulation> {
        let specs = unwinding(|| xlat::config::parse_machines(text))?.map_err(py_err)?;
        let machines = unwinding(|| specs.iter().map(MachineSpec::build).collect::<xlat::Result<Vec<_>>>())?.map_err(py_err)?;
        Ok(Simulation { fed: Mutex::new(Fed { machines, workload, refs: 0, seconds: 0.0 }) })
    }

    /// Feeds packed reference `records` (see `records`), spanning `instructions`
    /// instructions, to every machine, with the GIL released.
    fn feed(&self, py: Python<'_>, records: &[u8], instructions: u64) -> PyResult<()> {
        let batch = Batch::new(records::decode(records)?, instructions);
        let mut fed = self.lock()?;
        // As a run does: the machines' halves on the two cores when there are two.
        let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let started = Instant::now();
        let machines = &mut fed.machines;
        py.detach(|| unwinding(|| process_all(machines, &batch, parallel)))?.map_err(py_err)?;
        fed.refs += batch.len() as u64;
        fed.seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Applies an address-space event (`unmap` false: a map; true: an unmap) of `length` bytes
    /// from `start` in address space `asid` to every machine, after the references fed so far.
    fn event(&self, py: Python<'_>, unmap: bool, start: u64, length: u64, asid: u16) -> PyResult<()> {
        let op = if unmap { RangeOp::Unmap } else { RangeOp::Map };
        let event = AddressSpaceEvent { asid, op, start, len: length };
        if let Some(why) = event.malformed() {
            return Err(PyValueError::new_err(format!("address-space event at {start:#x} of {length} bytes: {why}")));
        }
        let mut batch = Batch::default();
        batch.push_event(event);
        let mut fed = self.lock()?;
        let machines = &mut fed.machines;
        py.detach(|| unwinding(|| process_all(machines, &batch, false)))?.map_err(py_err)
    }

    /// References fed so far.
    #[getter]
    fn refs(&self) -> PyResult<u64> {
        Ok(self.lock()?.refs)
    }

    /// `results.csv`'s content for what was fed so far.
    fn csv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        csv_bytes(py, &self.result()?)
    }

    /// The statistics of every machine, as `results.json` lists them under `results`.
    fn json_text(&self) -> PyResult<String> {
        serde_json::to_string(&self.result()?.workloads).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }
}

impl Simulation {
    /// What the machines counted so far, as the result of one whole workload.
    fn result(&self) -> PyResult<ExperimentResult> {
        let fed = self.lock()?;
        let workload = WorkloadResult {
            workload: fed.workload.clone(),
            input: serde_json::json!({ "source": "python" }),
            partial: false,
            refs: fed.refs,
            seconds: fed.seconds,
            machines: fed.machines.iter().map(|m| m.stats()).collect(),
            gpu: Vec::new(),
        };
        Ok(ExperimentResult { partial: false, workloads: vec![workload] })
    }
}
