//! Running an experiment: every workload is read once, and each batch it yields is fed to
//! every machine configuration before the next batch is read.
//!
//! The source is read on its own thread, two batches ahead, so decoding a trace or generating
//! a synthetic stream overlaps with simulation on the machine's other core. It is also opened
//! on a thread of its own: opening a FIFO blocks until a writer comes, and the run must still
//! notice an interrupt meanwhile.

use super::machine::Machine;
use super::stats::{MachineStats, ResultRow};
use crate::config::ExperimentSpec;
use crate::memref::Batch;
use crate::source::background::{interruptibly, receive, Received};
use crate::gpu::mix::{AloneRuns, MixResult};
use crate::source::{RefSource, SourceSpec, WorkloadSpec};
use crate::sim::MachineSpec;
use crate::{Error, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::time::Instant;

/// Batches in flight between the reader thread and the simulation.
const BATCHES_IN_FLIGHT: usize = 3;

/// What a run reports as it goes, for progress bars.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// A workload starts; `expected` references when the source knows.
    Start {
        /// Workload name.
        workload: &'a str,
        /// References expected, if known.
        expected: Option<u64>,
    },
    /// `refs` references of the current workload are done.
    Advance {
        /// References simulated so far in this workload.
        refs: u64,
    },
    /// The current workload is done.
    Finish,
}

/// The outcome of one workload on every machine.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadResult {
    /// Workload name.
    pub workload: String,
    /// Identity of the input (trace path and size, or synthetic parameters).
    pub input: serde_json::Value,
    /// True when interrupted before the end of the stream.
    pub partial: bool,
    /// References simulated.
    pub refs: u64,
    /// Wall-clock seconds for the workload.
    pub seconds: f64,
    /// Per machine statistics (reference-stream workloads).
    pub machines: Vec<MachineStats>,
    /// Per `gpu` machine, what the mix did (`gpu` workloads).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu: Vec<MixResult>,
}

/// The outcome of an experiment.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    /// True when the run was interrupted; later workloads were not run.
    pub partial: bool,
    /// Results of the workloads run, in order.
    pub workloads: Vec<WorkloadResult>,
}

impl ExperimentResult {
    /// All rows for `results.csv`.
    pub fn rows(&self) -> Vec<ResultRow> {
        self.workloads
            .iter()
            .flat_map(|w| w.machines.iter().flat_map(|m| m.rows(&w.workload, w.partial)))
            .collect()
    }
}

/// Runs every workload of `spec` through every machine. Setting `interrupt` stops the run
/// after the current batch; the result is then marked partial.
pub fn run_experiment(
    spec: &ExperimentSpec,
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<ExperimentResult> {
    let mut workloads = Vec::new();
    let alone = AloneRuns::default();
    for w in &spec.workloads {
        let result = run_workload(w, &spec.machines, spec.batch, &alone, interrupt, progress)?;
        let partial = result.partial;
        workloads.push(result);
        if partial {
            return Ok(ExperimentResult { partial: true, workloads });
        }
    }
    Ok(ExperimentResult { partial: false, workloads })
}

/// Runs one workload through fresh machines built from `machines`; `gpu` machines take the
/// applications' alone runs that `alone` holds (from earlier workloads of the experiment)
/// and add theirs.
pub fn run_workload(
    workload: &WorkloadSpec,
    machines: &[MachineSpec],
    batch: usize,
    alone: &AloneRuns,
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<WorkloadResult> {
    if let SourceSpec::Gpu { apps } = &workload.source {
        return run_gpu_workload(workload, apps, machines, alone, interrupt, progress);
    }
    let opened = open_interruptibly(workload, interrupt)?;
    let mut sims: Vec<Box<dyn Machine>> =
        machines.iter().filter(|m| workload.runs_on(m.name()) && m.gpu().is_none()).map(MachineSpec::build).collect::<Result<_>>()?;
    let started = Instant::now();
    let Some(source) = opened else {
        // Interrupted before the input opened: its spec is all that is known of it.
        let input = serde_json::to_value(&workload.source).unwrap_or_default();
        return Ok(workload_result(workload, input, (0, true), started, &sims));
    };
    let input = source.identity();
    progress(Progress::Start { workload: &workload.name, expected: source.len_hint() });
    let fed = feed(source, &mut sims, batch, interrupt, progress).map_err(|e| match e {
        Error::Simulation(message) => Error::Simulation(format!("workload `{}`: {message}", workload.name)),
        other => other,
    })?;
    progress(Progress::Finish);
    Ok(workload_result(workload, input, fed, started, &sims))
}

/// The result of `workload` on `sims`, given `(refs, partial)` as [`feed`] returns them.
fn workload_result(
    workload: &WorkloadSpec,
    input: serde_json::Value,
    (refs, partial): (u64, bool),
    started: Instant,
    sims: &[Box<dyn Machine>],
) -> WorkloadResult {
    WorkloadResult {
        workload: workload.name.clone(),
        input,
        partial,
        refs,
        seconds: started.elapsed().as_secs_f64(),
        machines: sims.iter().map(|m| m.stats()).collect(),
        gpu: Vec::new(),
    }
}

/// Runs the GPU applications `apps` of `workload` on each `gpu` machine it runs on; progress
/// counts machines done.
fn run_gpu_workload(
    workload: &WorkloadSpec,
    apps: &[crate::gpu::kernels::AppSpec],
    machines: &[MachineSpec],
    alone: &AloneRuns,
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<WorkloadResult> {
    let started = Instant::now();
    let gpus: Vec<_> = machines.iter().filter(|m| workload.runs_on(m.name())).filter_map(MachineSpec::gpu).collect();
    progress(Progress::Start { workload: &workload.name, expected: Some(gpus.len() as u64) });
    let mut results = Vec::new();
    for gpu in gpus {
        let result = crate::gpu::mix::run_mix(gpu, apps, alone, interrupt).map_err(|e| Error::Simulation(format!("workload `{}` on machine `{}`: {e}", workload.name, gpu.name)))?;
        let partial = result.run.partial;
        results.push(result);
        progress(Progress::Advance { refs: results.len() as u64 });
        if partial || interrupt.load(Ordering::Relaxed) {
            break;
        }
    }
    progress(Progress::Finish);
    let partial = results.iter().any(|r| r.run.partial) || interrupt.load(Ordering::Relaxed);
    let refs = results.iter().map(|r| r.apps.iter().map(|a| a.shared.requests).sum::<u64>()).sum();
    Ok(WorkloadResult {
        workload: workload.name.clone(),
        input: serde_json::json!({ "kind": "gpu", "apps": apps }),
        partial,
        refs,
        seconds: started.elapsed().as_secs_f64(),
        machines: Vec::new(),
        gpu: results,
    })
}

/// Opens `workload`'s source on a helper thread; `None` when `interrupt` is set first (see
/// [`interruptibly`]).
fn open_interruptibly(workload: &WorkloadSpec, interrupt: &AtomicBool) -> Result<Option<Box<dyn RefSource>>> {
    let workload = workload.clone();
    interruptibly(interrupt, move || workload.open()).transpose()
}

/// Batches shorter than this are simulated on one thread: handing half of it to another
/// would cost more than the half it takes over.
const PARALLEL_MIN_BATCH: usize = 4096;

/// Feeds `batch` to every machine. With two or more machines, `parallel` (two cores) and a
/// batch of at least `PARALLEL_MIN_BATCH` (4096) references, the two halves of the machines
/// run on rayon's two persistent workers; machines share nothing, so results are the same as
/// in sequence. (A thread spawned per batch was measured to start on the busy core and
/// migrate, losing a third of the speed in some runs.) One machine given two cores may use
/// the second itself ([`Machine::process_on_two_cores`]).
pub fn process_all(machines: &mut [Box<dyn Machine>], batch: &Batch, parallel: bool) -> Result<()> {
    if let ([machine], true) = (&mut *machines, parallel && batch.len() >= PARALLEL_MIN_BATCH) {
        return machine.process_on_two_cores(batch);
    }
    if machines.len() < 2 || !parallel || batch.len() < PARALLEL_MIN_BATCH {
        return machines.iter_mut().try_for_each(|m| m.process(batch));
    }
    let (first, second) = machines.split_at_mut(machines.len() / 2);
    let (mine, theirs) = rayon::join(|| first.iter_mut().try_for_each(|m| m.process(batch)), || second.iter_mut().try_for_each(|m| m.process(batch)));
    mine.and(theirs)
}

/// Reads `source` on a helper thread and feeds each batch to every machine. Returns the
/// references simulated and whether the run was interrupted.
///
/// The reader thread is not scoped: when an interrupt comes while it waits for its source
/// (a built-in workload's set-up may take a minute), the run ends without waiting for it. It
/// ends by itself once its source yields and finds no one listening.
pub fn feed(
    source: Box<dyn RefSource>,
    machines: &mut [Box<dyn Machine>],
    batch: usize,
    interrupt: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<(u64, bool)> {
    let (full_tx, full_rx) = sync_channel::<Result<Batch>>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = channel::<Batch>();
    for _ in 0..BATCHES_IN_FLIGHT {
        empty_tx.send(Batch::with_capacity(batch)).expect("receiver alive");
    }
    let reader = std::thread::spawn(move || read_ahead(source, batch, &empty_rx, &full_tx));
    // Asked once per run: it reads the CPU affinity, which is not free.
    let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    let mut refs = 0;
    loop {
        let b = match receive(&full_rx, interrupt) {
            Received::Item(item) => item?,
            Received::Interrupted => return Ok((refs, true)),
            Received::Ended => break,
        };
        process_all(machines, &b, parallel)?;
        refs += b.len() as u64;
        progress(Progress::Advance { refs });
        if interrupt.load(Ordering::Relaxed) {
            return Ok((refs, true));
        }
        let _ = empty_tx.send(b);
    }
    // The stream ended: the reader has returned, or panicked, and its panic is passed on.
    reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    Ok((refs, false))
}

/// The reader thread: fills the batches `empty` hands back and sends them on `full`. Ends
/// when the stream ends, fails, or the consumer hangs up.
fn read_ahead(mut source: Box<dyn RefSource>, batch: usize, empty: &Receiver<Batch>, full: &SyncSender<Result<Batch>>) {
    while let Ok(mut b) = empty.recv() {
        b.clear();
        let filled = source.fill(&mut b, batch);
        let done = !matches!(filled, Ok(n) if n > 0);
        // The last fill may bring events after the last reference.
        let empty = matches!(filled, Ok(0)) && b.events.is_empty();
        if empty || full.send(filled.map(|_| b)).is_err() || done {
            return;
        }
    }
}
