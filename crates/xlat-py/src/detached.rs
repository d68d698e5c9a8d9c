//! Running library work with the GIL released, while the calling thread answers Ctrl-C and
//! draws progress.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;
use xlat::sim::Progress;

/// How often the waiting thread checks for signals and reports progress: often enough that
/// Ctrl-C feels immediate, rarely enough to cost nothing.
const POLL: Duration = Duration::from_millis(100);

/// Where the work is: the workload being run, references done, references expected.
#[derive(Clone, Default, PartialEq)]
struct Position {
    workload: String,
    refs: u64,
    expected: Option<u64>,
}

/// Progress reported by the work, read by the waiting thread.
#[derive(Default)]
pub struct Meter(Mutex<Position>);

impl Meter {
    /// Records a run's progress report.
    pub fn record(&self, p: Progress) {
        let Ok(mut at) = self.0.lock() else { return };
        match p {
            Progress::Start { workload, expected } => *at = Position { workload: workload.to_string(), refs: 0, expected },
            Progress::Advance { refs } => at.refs = refs,
            Progress::Finish => at.expected = Some(at.refs),
        }
    }

    fn position(&self) -> Position {
        self.0.lock().map(|at| at.clone()).unwrap_or_default()
    }
}

/// Runs `work` on a thread of its own with the GIL released. Every [`POLL`] the calling
/// thread takes the GIL back to check for signals (Python runs its signal handlers only on
/// the main thread, and only when asked while native code runs) and to call `progress` with
/// `(workload, refs, expected)` when it moved. A signal's exception (`KeyboardInterrupt` for
/// Ctrl-C) sets the interrupt flag `work` is given, waits for `work` to stop, and is
/// returned; a panic in `work` becomes a `RuntimeError` instead of ending the interpreter.
pub fn detached<T, F>(py: Python<'_>, progress: Option<Py<PyAny>>, work: F) -> PyResult<T>
where
    F: FnOnce(&AtomicBool, &Meter) -> T + Send,
    T: Send,
{
    let interrupt = AtomicBool::new(false);
    let meter = Meter::default();
    py.detach(|| {
        let (done_tx, done_rx) = channel();
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let out = work(&interrupt, &meter);
                let _ = done_tx.send(());
                out
            });
            let mut raised = None;
            let mut shown = None;
            loop {
                match done_rx.recv_timeout(POLL) {
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) if raised.is_none() => raised = poll(&progress, &meter, &mut shown).err(),
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if raised.is_some() {
                    interrupt.store(true, Ordering::Relaxed);
                }
            }
            let out = worker.join().map_err(|panic| internal(&panic));
            if raised.is_none() {
                // The end, shown once the work is done so that a bar closes at 100%.
                raised = poll(&progress, &meter, &mut shown).err();
            }
            raised.map_or(out, Err)
        })
    })
}

/// Checks for signals and reports progress if it moved since `shown`.
fn poll(progress: &Option<Py<PyAny>>, meter: &Meter, shown: &mut Option<Position>) -> PyResult<()> {
    Python::attach(|py| {
        py.check_signals()?;
        let Some(callback) = progress else { return Ok(()) };
        let at = meter.position();
        if shown.as_ref() != Some(&at) && !at.workload.is_empty() {
            callback.call1(py, (at.workload.as_str(), at.refs, at.expected))?;
            *shown = Some(at);
        }
        Ok(())
    })
}

/// `f()`, or a `RuntimeError` when it panics (a bug in xlat): the panic must not unwind into
/// the interpreter, which would see a `PanicException` it cannot catch as an `Exception`.
pub fn unwinding<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| internal(&panic))
}

/// The `RuntimeError` reporting `panic`.
fn internal(panic: &Box<dyn std::any::Any + Send>) -> PyErr {
    PyRuntimeError::new_err(format!("xlat failed: {}", panic_message(panic)))
}

/// The message a panic carried, for the `RuntimeError` that reports it.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_else(|| "a panic".into())
}
