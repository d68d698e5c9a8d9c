//! A built-in workload as a [`RefSource`]: the computation runs on its own thread and hands
//! chunks of references through a bounded channel, so it needs no resumable state machine and
//! overlaps with the simulation. Chunks are recycled, and a chunk that fits an empty batch is
//! swapped into it rather than copied.

use super::emit::{Events, Marks, Sink, CHUNK};
use super::{BuiltinSpec, Report};
use crate::memref::{Batch, MemRef};
use crate::source::RefSource;
use crate::{Error, Result};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

/// Chunks in flight between the workload thread and the reader.
const CHUNKS_IN_FLIGHT: usize = 2;

/// A chunk's references, the marks of its instructions and its address-space events.
type Chunk = (Vec<MemRef>, Marks, Events);

enum Msg {
    Refs(Chunk),
    Done(Result<Report>),
}

struct ChannelSink {
    full: SyncSender<Msg>,
    empty: Receiver<Chunk>,
}

impl Sink for ChannelSink {
    fn take(&mut self, refs: &mut Vec<MemRef>, marks: &mut Marks, events: &mut Events) -> bool {
        let (mut next, mut next_marks, mut next_events) = self.empty.try_recv().unwrap_or_default();
        next.clear();
        next.reserve(CHUNK);
        next_marks.clear();
        next_events.clear();
        std::mem::swap(refs, &mut next);
        std::mem::swap(marks, &mut next_marks);
        std::mem::swap(events, &mut next_events);
        if next.is_empty() && next_marks.is_empty() && next_events.is_empty() {
            return true;
        }
        self.full.send(Msg::Refs((next, next_marks, next_events))).is_ok()
    }
}

/// A running built-in workload.
pub struct BuiltinSource {
    spec: BuiltinSpec,
    expected_refs: u64,
    full: Receiver<Msg>,
    empty: Sender<Chunk>,
    /// The chunk being handed out: its references and events (its `instructions` unused).
    current: Batch,
    /// The first reference of `current` not yet handed out.
    pos: usize,
    /// The first event of `current` not yet handed out.
    event: usize,
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
            current: Batch::default(),
            pos: 0,
            event: 0,
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
            Msg::Refs((refs, marks, events)) => {
                let old = (
                    std::mem::replace(&mut self.current.refs, refs),
                    std::mem::replace(&mut self.marks, marks),
                    std::mem::replace(&mut self.current.events, events),
                );
                let _ = self.empty.send(old);
                (self.pos, self.event, self.mark) = (0, 0, 0);
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
            let handed_out = self.pos == self.current.refs.len() && self.event == self.current.events.len();
            if handed_out && (self.finished || !self.next_chunk()?) {
                break;
            }
            let len = self.current.refs.len();
            let rest = len - self.pos;
            if self.pos == 0 && batch.refs.is_empty() && rest <= max {
                // Hand over the whole chunk; the batch's old buffer is recycled.
                batch.instructions += self.instructions_until(rest);
                std::mem::swap(&mut batch.refs, &mut self.current.refs);
                self.current.refs.clear();
                batch.events.append(&mut self.current.events);
                appended = rest;
                continue;
            }
            let n = rest.min(max - appended);
            batch.append_from(&self.current, self.pos..self.pos + n, &mut self.event, self.pos + n == len);
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
