//! A built-in workload as a [`RefSource`]: the computation runs on its own thread and hands
//! chunks of references through a bounded channel, so it needs no resumable state machine and
//! overlaps with the simulation. Chunks are recycled, and a chunk that fits an empty batch is
//! swapped into it rather than copied.

use super::emit::{Marks, Sink, CHUNK};
use super::{BuiltinSpec, Report};
use crate::memref::{Batch, MemRef};
use crate::source::RefSource;
use crate::{Error, Result};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

/// Chunks in flight between the workload thread and the reader.
const CHUNKS_IN_FLIGHT: usize = 2;

/// A chunk's references and the marks of its instructions.
type Chunk = (Vec<MemRef>, Marks);

enum Msg {
    Refs(Chunk),
    Done(Result<Report>),
}

struct ChannelSink {
    full: SyncSender<Msg>,
    empty: Receiver<Chunk>,
}

impl Sink for ChannelSink {
    fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks) -> bool {
        let (mut next, mut next_marks) = self.empty.try_recv().unwrap_or_default();
        next.clear();
        next.reserve(CHUNK);
        next_marks.clear();
        std::mem::swap(refs, &mut next);
        std::mem::swap(marks, &mut next_marks);
        if next.is_empty() && next_marks.is_empty() {
            return true;
        }
        self.full.send(Msg::Refs((next, next_marks))).is_ok()
    }
}

/// A running built-in workload.
pub struct BuiltinSource {
    spec: BuiltinSpec,
    expected_refs: u64,
    full: Receiver<Msg>,
    empty: Sender<Chunk>,
    current: Vec<MemRef>,
    pos: usize,
    marks: Marks,
    /// The first mark of `marks` not yet handed out.
    mark: usize,
    finished: bool,
    report: Arc<Mutex<Option<Report>>>,
}

impl BuiltinSource {
    /// Starts `spec` on a new thread.
    pub fn start(spec: BuiltinSpec) -> Result<BuiltinSource> {
        let (full_tx, full) = sync_channel(CHUNKS_IN_FLIGHT);
        let (empty, empty_rx) = channel();
        let thread_spec = spec.clone();
        std::thread::Builder::new()
            .name(format!("workload-{}", spec.name()))
            .spawn(move || {
                let mut sink = ChannelSink { full: full_tx, empty: empty_rx };
                let outcome = thread_spec.run(&mut sink);
                let _ = sink.full.send(Msg::Done(outcome));
            })
            .map_err(|e| Error::Simulation(format!("cannot start the workload thread: {e}")))?;
        let expected_refs = spec.expected().emitted_refs();
        Ok(BuiltinSource {
            spec,
            expected_refs,
            full,
            empty,
            current: Vec::new(),
            pos: 0,
            marks: Vec::new(),
            mark: 0,
            finished: false,
            report: Arc::default(),
        })
    }

    /// The self-check report, once the stream has ended.
    pub fn report(&self) -> Option<Report> {
        self.report.lock().ok().and_then(|r| r.clone())
    }

    /// Waits for the next chunk; false at the end of the stream.
    fn next_chunk(&mut self) -> Result<bool> {
        let msg = self.full.recv().map_err(|_| {
            Error::Simulation(format!("workload {}: its thread stopped without a result", self.spec.name()))
        })?;
        match msg {
            Msg::Refs((refs, marks)) => {
                let old = (std::mem::replace(&mut self.current, refs), std::mem::replace(&mut self.marks, marks));
                let _ = self.empty.send(old);
                self.pos = 0;
                self.mark = 0;
                Ok(true)
            }
            Msg::Done(outcome) => {
                self.finished = true;
                if let Ok(mut slot) = self.report.lock() {
                    *slot = Some(outcome?);
                }
                Ok(false)
            }
        }
    }
}

impl BuiltinSource {
    /// The instructions of the current chunk not yet handed out that go with its references
    /// before `end` (see [`Marks`]).
    fn instructions_until(&mut self, end: usize) -> u64 {
        let start = self.mark;
        while self.marks.get(self.mark).is_some_and(|&(at, _)| at as usize <= end) {
            self.mark += 1;
        }
        self.marks[start..self.mark].iter().map(|&(_, n)| n).sum()
    }
}

impl RefSource for BuiltinSource {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let mut appended = 0;
        while appended < max {
            if self.pos == self.current.len() && (self.finished || !self.next_chunk()?) {
                break;
            }
            let rest = self.current.len() - self.pos;
            if self.pos == 0 && batch.refs.is_empty() && rest <= max {
                // Hand over the whole chunk; the batch's old buffer is recycled.
                batch.instructions += self.instructions_until(rest);
                std::mem::swap(&mut batch.refs, &mut self.current);
                self.current.clear();
                appended = rest;
                continue;
            }
            let n = rest.min(max - appended);
            batch.refs.extend_from_slice(&self.current[self.pos..self.pos + n]);
            self.pos += n;
            appended += n;
            batch.instructions += self.instructions_until(self.pos);
        }
        Ok(appended)
    }

    fn identity(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "builtin", "spec": self.spec })
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.expected_refs)
    }

    /// Every workload estimates the instructions of its operations.
    fn counts_instructions(&self) -> bool {
        true
    }
}
