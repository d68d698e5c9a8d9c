//! Waiting for a source without missing an interrupt. Opening a FIFO blocks until a writer
//! comes, reading one until data does, and a built-in workload may compute its set-up for a
//! minute; a command must still stop at Ctrl-C meanwhile. The blocking work runs on a helper
//! thread, and the caller waits for it looking at the interrupt flag every 100 ms. A helper
//! still blocked when the caller gives up is left behind: it holds nothing the caller needs
//! (outputs are written by the caller), and ends with the process.

use super::RefSource;
use crate::memref::Batch;
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a wait for the source looks at the interrupt flag: short enough that Ctrl-C
/// feels immediate, long enough to cost nothing.
pub(crate) const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// What a wait on a channel gave.
pub(crate) enum Received<T> {
    /// The next item.
    Item(T),
    /// The sender is gone.
    Ended,
    /// The interrupt flag was set while nothing came.
    Interrupted,
}

/// Waits for the next item of `rx`, looking at `interrupt` every [`INTERRUPT_POLL`].
pub(crate) fn receive<T>(rx: &Receiver<T>, interrupt: &AtomicBool) -> Received<T> {
    loop {
        match rx.recv_timeout(INTERRUPT_POLL) {
            Ok(item) => return Received::Item(item),
            Err(RecvTimeoutError::Disconnected) => return Received::Ended,
            Err(RecvTimeoutError::Timeout) if interrupt.load(Ordering::Relaxed) => return Received::Interrupted,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Runs `work` on a helper thread and returns what it gives; `None` when `interrupt` is set
/// first, the helper then being left behind (see the module documentation). A panic of
/// `work` is passed on.
pub fn interruptibly<T: Send + 'static>(interrupt: &AtomicBool, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = channel();
    let helper = std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    match receive(&rx, interrupt) {
        Received::Item(done) => Some(done),
        Received::Interrupted => None,
        // The helper hung up without sending: it panicked, and the panic is passed on.
        Received::Ended => match helper.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the helper sends before it returns"),
        },
    }
}

/// References a helper gathers before handing them over: few hand-overs even when the
/// source is read one reference at a time.
const CHUNK_REFS: usize = 1 << 16;

/// Chunks in flight between the helper and the reader.
const CHUNKS_IN_FLIGHT: usize = 3;

/// The references of consecutive fills of the inner source, each fill kept apart so that the
/// reader gets them as the source gave them, instruction counts and events included.
#[derive(Default)]
struct Chunk {
    /// The references and events of every fill, in order (its `instructions` are unused).
    batch: Batch,
    /// For each fill: the references it gave, and the instructions they span.
    fills: Vec<(usize, u64)>,
    /// The next fill to hand out, where its references start in `batch`, and the first
    /// event of `batch` not handed out.
    next: usize,
    pos: usize,
    event: usize,
}

impl Chunk {
    fn clear(&mut self) {
        self.batch.clear();
        self.fills.clear();
        (self.next, self.pos, self.event) = (0, 0, 0);
    }

    /// Fills `self` from `source`, `step` references a fill, until it holds
    /// [`CHUNK_REFS`] references or events; false when the source ended.
    fn fill_from(&mut self, source: &mut dyn RefSource, step: usize) -> Result<bool> {
        while self.batch.len() < CHUNK_REFS && self.batch.events.len() < CHUNK_REFS {
            self.batch.instructions = 0;
            let events = self.batch.events.len();
            let n = source.fill(&mut self.batch, step)?;
            if n == 0 {
                // The last fill may bring events after the last reference.
                if self.batch.events.len() > events {
                    self.fills.push((0, self.batch.instructions));
                }
                return Ok(false);
            }
            self.fills.push((n, self.batch.instructions));
        }
        Ok(true)
    }

    /// Appends to `batch` the next fill, or its first `max` references if it has more (the
    /// fill's instructions then go with them), with the events before them, and after them
    /// when the fill is taken whole; `None` when every fill was handed out.
    fn take(&mut self, batch: &mut Batch, max: usize) -> Option<usize> {
        let (n, instructions) = self.fills.get_mut(self.next)?;
        let k = (*n).min(max);
        batch.append_from(&self.batch, self.pos..self.pos + k, &mut self.event, k == *n);
        batch.instructions += std::mem::take(instructions);
        *n -= k;
        self.pos += k;
        if *n == 0 {
            self.next += 1;
        }
        Some(k)
    }
}

/// A source read on a helper thread, so that its reader stops when `interrupt` is set even
/// while the source blocks (a FIFO whose writer is silent). Each fill of the reader gets what
/// one fill of the inner source, of the `step` given, gave: ask for `step` references and
/// the stream, batch instruction counts included, is the inner source's. Once `interrupt` is
/// set every fill is an [`Error::Interrupted`]. Its identity and length are the inner
/// source's as they were when reading started (trace readers know both on opening).
pub struct ReadAhead<'a> {
    full: Receiver<Result<Chunk>>,
    empty: Sender<Chunk>,
    current: Chunk,
    helper: Option<JoinHandle<()>>,
    /// Set at an error: a reader that goes on gets errors, not the rest of a broken stream.
    failed: bool,
    identity: serde_json::Value,
    len_hint: Option<u64>,
    counts_instructions: bool,
    interrupt: &'a AtomicBool,
}

impl<'a> ReadAhead<'a> {
    /// Starts reading `source`, `step` references a fill, on a helper thread.
    pub fn new(source: Box<dyn RefSource>, step: usize, interrupt: &'a AtomicBool) -> ReadAhead<'a> {
        let (identity, len_hint, counts_instructions) = (source.identity(), source.len_hint(), source.counts_instructions());
        let (full_tx, full) = sync_channel(CHUNKS_IN_FLIGHT);
        let (empty, empty_rx) = channel();
        for _ in 1..CHUNKS_IN_FLIGHT {
            empty.send(Chunk::default()).expect("receiver alive");
        }
        let helper = std::thread::spawn(move || read_chunks(source, step.max(1), &empty_rx, &full_tx));
        let current = Chunk::default();
        ReadAhead { full, empty, current, helper: Some(helper), failed: false, identity, len_hint, counts_instructions, interrupt }
    }

    /// Takes the next chunk from the helper, handing back the one used up; false at the end
    /// of the stream.
    fn next_chunk(&mut self) -> Result<bool> {
        if self.helper.is_none() {
            return Ok(false);
        }
        let _ = self.empty.send(std::mem::take(&mut self.current));
        match receive(&self.full, self.interrupt) {
            Received::Item(chunk) => {
                self.current = chunk?;
                Ok(true)
            }
            Received::Interrupted => Err(Error::Interrupted),
            Received::Ended => {
                // The stream ended: the helper has returned, or panicked, and its panic is
                // passed on.
                let helper = self.helper.take().expect("checked above");
                helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                Ok(false)
            }
        }
    }
}

impl RefSource for ReadAhead<'_> {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        if self.interrupt.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        if self.failed {
            return Err(Error::Simulation("reading stopped at an earlier error".into()));
        }
        if max == 0 {
            return Ok(0);
        }
        loop {
            if let Some(n) = self.current.take(batch, max) {
                return Ok(n);
            }
            match self.next_chunk() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => {
                    self.failed = !matches!(e, Error::Interrupted);
                    return Err(e);
                }
            }
        }
    }

    fn identity(&self) -> serde_json::Value {
        self.identity.clone()
    }

    fn len_hint(&self) -> Option<u64> {
        self.len_hint
    }

    fn counts_instructions(&self) -> bool {
        self.counts_instructions
    }
}

/// The helper of [`ReadAhead`]: fills the chunks `empty` hands back and sends them on
/// `full`, then an error if reading failed. Ends when the stream ends, fails, or the reader
/// hangs up.
fn read_chunks(mut source: Box<dyn RefSource>, step: usize, empty: &Receiver<Chunk>, full: &SyncSender<Result<Chunk>>) {
    while let Ok(mut chunk) = empty.recv() {
        chunk.clear();
        let filled = chunk.fill_from(&mut *source, step);
        if !chunk.fills.is_empty() && full.send(Ok(chunk)).is_err() {
            return;
        }
        match filled {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = full.send(Err(e));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memref::AddressSpaceEvent;
    use crate::source::{collect, VecSource};
    use crate::MemRef;

    /// A source that gives one reference per fill with `i` instructions for the `i`th.
    struct Counting(u64, u64);

    impl RefSource for Counting {
        fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
            if self.0 == self.1 || max == 0 {
                return Ok(0);
            }
            batch.refs.push(MemRef::load(self.0 * 8, 8));
            batch.instructions += self.0;
            self.0 += 1;
            Ok(1)
        }
        fn identity(&self) -> serde_json::Value {
            serde_json::json!({ "kind": "counting" })
        }
    }

    /// A source that never gives anything: a FIFO whose writer is silent.
    struct Stuck;

    impl RefSource for Stuck {
        fn fill(&mut self, _: &mut Batch, _: usize) -> Result<usize> {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(0)
        }
        fn identity(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    #[test]
    fn each_fill_is_one_fill_of_the_source() {
        let flag = AtomicBool::new(false);
        let mut ahead = ReadAhead::new(Box::new(Counting(0, 200_000)), 1, &flag);
        let mut batch = Batch::default();
        for i in 0..200_000 {
            batch.clear();
            assert_eq!(ahead.fill(&mut batch, 1).unwrap(), 1);
            assert_eq!((batch.refs[0], batch.instructions), (MemRef::load(i * 8, 8), i));
        }
        assert_eq!(ahead.fill(&mut batch, 1).unwrap(), 0);
        assert_eq!(ahead.identity()["kind"], "counting");
    }

    #[test]
    fn the_stream_is_the_sources_whatever_the_reader_asks() {
        let refs: Vec<MemRef> = (0..100_000).map(|i| MemRef::load(i * 64, 8)).collect();
        let flag = AtomicBool::new(false);
        let mut ahead = ReadAhead::new(Box::new(VecSource::new(refs.clone())), 1000, &flag);
        assert_eq!(ahead.len_hint(), Some(100_000));
        let mut batch = Batch::default();
        assert_eq!(ahead.fill(&mut batch, 300).unwrap(), 300, "a fill is cut to what the reader asks");
        let (rest, _) = collect(&mut ahead).unwrap();
        assert_eq!([&batch.refs[..], &rest[..]].concat(), refs);
    }

    /// Gives references `0..end` (at most `max` a fill), an unmap event before every third,
    /// and a map event after the last, with it (alone with the end when `end` is 0).
    struct Eventful {
        next: u64,
        end: u64,
        mapped: bool,
    }

    impl RefSource for Eventful {
        fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
            let n = (max as u64).min(self.end - self.next) as usize;
            for _ in 0..n {
                if self.next % 3 == 0 {
                    batch.push_event(AddressSpaceEvent::unmap(self.next << 12, 4096));
                }
                batch.refs.push(MemRef::load(self.next << 12, 8));
                self.next += 1;
            }
            if self.next == self.end && !std::mem::replace(&mut self.mapped, true) {
                batch.push_event(AddressSpaceEvent::map(0, 4096));
            }
            Ok(n)
        }
        fn identity(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    /// The stream of `source` read `max` references a fill: references as `('r', address)`
    /// and events as `('e', start)`, in order.
    fn items(source: &mut dyn RefSource, max: usize) -> Vec<(char, u64)> {
        let (mut out, mut batch) = (Vec::new(), Batch::default());
        loop {
            batch.clear();
            let n = source.fill(&mut batch, max).unwrap();
            for (run, event) in batch.runs() {
                out.extend(run.iter().map(|r| ('r', r.vaddr)));
                out.extend(event.map(|e| ('e', e.start)));
            }
            if n == 0 {
                return out;
            }
        }
    }

    #[test]
    fn events_come_where_the_source_put_them() {
        let flag = AtomicBool::new(false);
        for (end, step, max) in [(0, 1, 1), (10, 1, 1), (10, 3, 2), (200_000, 1000, 777), (100_000, 1, 5)] {
            let source = || Eventful { next: 0, end, mapped: false };
            let want = items(&mut source(), usize::MAX);
            assert_eq!(want.len() as u64, end + end.div_ceil(3) + 1);
            let mut ahead = ReadAhead::new(Box::new(source()), step, &flag);
            assert_eq!(items(&mut ahead, max), want, "{end} references, step {step}, max {max}");
        }
    }

    #[test]
    fn an_interrupt_stops_a_reader_waiting_for_a_stuck_source() {
        let flag = AtomicBool::new(false);
        let mut ahead = ReadAhead::new(Box::new(Stuck), 1, &flag);
        let started = std::time::Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                flag.store(true, Ordering::Relaxed);
            });
            assert!(matches!(ahead.fill(&mut Batch::default(), 1), Err(Error::Interrupted)));
        });
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn an_interrupt_stops_a_wait_for_work_that_blocks() {
        let flag = AtomicBool::new(true);
        assert!(interruptibly(&flag, || std::thread::sleep(Duration::from_secs(3600))).is_none());
        assert_eq!(interruptibly(&AtomicBool::new(false), || 42), Some(42));
    }
}
