//! An application whose warps' instructions are generated on another thread, ahead of the
//! machine that issues them.
//!
//! Generating a warp's steps (a BFS's frontier, a histogram's bins, coalescing 32 lanes) is
//! about a quarter of a GPU run's work, and [`Kernel::next`] for one warp never depends on
//! how far the others have gone. So a worker thread runs the application warp by warp, in
//! launch and warp order (the order the machine admits warps in), and hands the warps'
//! whole lists of steps over a bounded channel, many warps a message (a message a warp made
//! the two threads wait on each other more than they worked); the machine's thread only
//! replays them. The steps, and so every result, are the same as the application's own.
//!
//! A message keeps its warps' steps in one array of words, each step a header word and its
//! lines: a warp's next step is then one host cache line or a few, which the machine asks
//! the host to load while the warp waits for its previous one (the words were written on the
//! worker's core, so a first read of them otherwise waits for the other core's cache), and
//! a message's memory is freed once, when its last warp exits, not warp by warp.

use super::kernel::{Kernel, MemEvent, WarpInstr};
use crate::host::prefetch;
use crate::memref::AccessKind;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Messages the worker may have generated ahead of the machine.
const AHEAD: usize = 4;

/// A message's warps at most: a launch's first round admits up to 48 a SM.
const CHUNK_WARPS: usize = 1024;

/// A message's requests at most, past which it goes without waiting for more warps (a few
/// warps of long loops).
const CHUNK_LINES: usize = 1 << 16;

/// The header word of a step: its compute instructions in the low 32 bits, its lines' count
/// in the next 24, its kind in the top 8 (0 for none, else the kind's number + 1).
fn header(instr: &WarpInstr) -> u64 {
    let lines = u64::try_from(instr.lines.len()).ok().filter(|&n| n < 1 << 24).expect("a step of fewer than 2^24 requests");
    let kind = instr.kind.map_or(0, |k| k as u64 + 1);
    u64::from(instr.compute) | lines << 32 | kind << 56
}

/// The compute, kind and count of lines a [`header`] word holds.
fn step_of(header: u64) -> (u32, Option<AccessKind>, usize) {
    let kind = (header >> 56) as u8;
    ((header & 0xFFFF_FFFF) as u32, kind.checked_sub(1).and_then(AccessKind::from_u8), (header >> 32 & 0xFF_FFFF) as usize)
}

/// Consecutive warps of one launch: every step of each, a [`header`] word then its lines,
/// warp after warp.
#[derive(Debug)]
struct Chunk {
    launch: usize,
    first: usize,
    words: Vec<u64>,
    /// Per warp, where its steps start in `words`; then `words`' length.
    starts: Vec<usize>,
}

/// A received message's words, until every one of its warps has exited.
#[derive(Debug)]
struct Held {
    words: Vec<u64>,
    /// Its warps that have not exited.
    live: usize,
}

/// Where the machine is in one warp's steps: the word of its next step in message `chunk`'s
/// words, and the end of the warp's words.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    chunk: usize,
    at: usize,
    end: usize,
}

/// A [`Kernel`] replaying the steps a worker thread generates from the application.
pub struct Prefetched {
    name: String,
    events: Vec<Vec<MemEvent>>,
    warps: Vec<usize>,
    footprint: u64,
    received: Receiver<Chunk>,
    worker: Option<JoinHandle<()>>,
    /// The launch whose warps are in `cursors`.
    launch: usize,
    /// The messages of `launch` received so far, in order.
    chunks: Vec<Held>,
    /// Per warp of `launch`: its cursor once received, until it exits.
    cursors: Vec<Option<Cursor>>,
    /// Warps of `launch` received so far.
    received_warps: usize,
}

impl Prefetched {
    /// Starts generating `kernel`'s steps on a thread of its own.
    pub fn start(kernel: Box<dyn Kernel>) -> Prefetched {
        let launches = kernel.launches();
        let events = (0..=launches).map(|l| kernel.events(l).to_vec()).collect();
        let warps = (0..launches).map(|l| kernel.warps(l)).collect();
        let (name, footprint) = (kernel.name().to_string(), kernel.footprint());
        let (send, received) = sync_channel(AHEAD);
        let worker = std::thread::Builder::new()
            .name(format!("xlat-gpu-{name}"))
            .spawn(move || generate(kernel, &send))
            .expect("spawning a thread (the host is out of threads)");
        let (launch, chunks, cursors) = (usize::MAX, Vec::new(), Vec::new());
        Prefetched { name, events, warps, footprint, received, worker: Some(worker), launch, chunks, cursors, received_warps: 0 }
    }

    /// The cursor of `warp` of `launch` (`None` once it exited), receiving warps until it
    /// has come. The machine asks for a launch's warps only once the previous launch's
    /// have all exited, so a message of a new launch replaces the messages and cursors.
    fn cursor(&mut self, launch: usize, warp: usize) -> Option<Cursor> {
        while self.launch != launch || self.received_warps <= warp {
            let chunk = self.receive();
            if chunk.launch != self.launch {
                self.launch = chunk.launch;
                self.chunks.clear();
                self.cursors.clear();
                self.cursors.resize(self.warps[chunk.launch], None);
                self.received_warps = 0;
            }
            debug_assert_eq!(chunk.first, self.received_warps, "warps arrive in order");
            let index = self.chunks.len();
            for (i, span) in chunk.starts.windows(2).enumerate() {
                self.cursors[chunk.first + i] = Some(Cursor { chunk: index, at: span[0], end: span[1] });
            }
            let live = chunk.starts.len() - 1;
            self.received_warps = chunk.first + live;
            self.chunks.push(Held { words: chunk.words, live });
        }
        self.cursors[warp]
    }

    /// The next message. The worker sends every warp the machine can ask for unless it
    /// panicked: its panic is raised here then.
    fn receive(&mut self) -> Chunk {
        match self.received.recv() {
            Ok(chunk) => chunk,
            Err(_) => {
                let worker = self.worker.take().expect("a worker ends once");
                std::panic::resume_unwind(worker.join().expect_err("the worker sends every warp"))
            }
        }
    }

    /// Records that `warp`, of message `chunk`, exited: the message's words are freed with
    /// its last warp.
    fn exit(&mut self, warp: usize, chunk: usize) {
        self.cursors[warp] = None;
        let held = &mut self.chunks[chunk];
        held.live -= 1;
        if held.live == 0 {
            held.words = Vec::new();
        }
    }
}

/// Runs `kernel` warp by warp, sending the warps' steps until the machine hangs up.
fn generate(mut kernel: Box<dyn Kernel>, send: &SyncSender<Chunk>) {
    let mut instr = WarpInstr::default();
    for launch in 0..kernel.launches() {
        let mut chunk = Chunk { launch, first: 0, words: Vec::new(), starts: vec![0] };
        let mut lines = 0;
        for warp in 0..kernel.warps(launch) {
            while kernel.next(launch, warp, &mut instr) {
                chunk.words.push(header(&instr));
                chunk.words.extend_from_slice(&instr.lines);
                lines += instr.lines.len();
                instr.clear();
            }
            chunk.starts.push(chunk.words.len());
            if chunk.starts.len() > CHUNK_WARPS || lines >= CHUNK_LINES {
                let next = Chunk { launch, first: warp + 1, words: Vec::new(), starts: vec![0] };
                if send.send(std::mem::replace(&mut chunk, next)).is_err() {
                    return;
                }
                lines = 0;
            }
        }
        if chunk.starts.len() > 1 && send.send(chunk).is_err() {
            return;
        }
    }
}

impl Kernel for Prefetched {
    fn name(&self) -> &str {
        &self.name
    }

    fn events(&self, launch: usize) -> &[MemEvent] {
        &self.events[launch]
    }

    fn launches(&self) -> usize {
        self.warps.len()
    }

    fn warps(&self, launch: usize) -> usize {
        self.warps[launch]
    }

    fn next(&mut self, launch: usize, warp: usize, out: &mut WarpInstr) -> bool {
        let Some(cursor) = self.cursor(launch, warp) else { return false };
        if cursor.at == cursor.end {
            self.exit(warp, cursor.chunk);
            return false;
        }
        let words = &self.chunks[cursor.chunk].words;
        let (compute, kind, lines) = step_of(words[cursor.at]);
        let end = cursor.at + 1 + lines;
        out.compute = compute;
        out.kind = kind;
        out.lines.extend_from_slice(&words[cursor.at + 1..end]);
        if end < cursor.end {
            // The warp's next step, asked for once this one's requests are served: loaded
            // meanwhile.
            prefetch(&words[end]);
        }
        self.cursors[warp] = Some(Cursor { at: end, ..cursor });
        true
    }

    fn footprint(&self) -> u64 {
        self.footprint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::kernels::{build, KernelKind, KernelSpec, TINY_BYTES};

    /// Every step of every warp of `kernel`, asking for the warps in the order `order`
    /// gives for each launch's warp count.
    fn steps(kernel: &mut dyn Kernel, order: impl Fn(usize) -> Vec<usize>) -> Vec<(usize, usize, WarpInstr)> {
        let mut all = Vec::new();
        for launch in 0..kernel.launches() {
            for warp in order(kernel.warps(launch)) {
                let mut instr = WarpInstr::default();
                while kernel.next(launch, warp, &mut instr) {
                    all.push((launch, warp, std::mem::take(&mut instr)));
                }
            }
        }
        all.sort_by_key(|(l, w, _)| (*l, *w));
        all
    }

    #[test]
    fn a_prefetched_application_gives_every_warp_the_steps_the_application_gives() {
        for kind in [KernelKind::Bfs, KernelKind::Histo, KernelKind::Wavefront] {
            let spec = KernelSpec { kind, bytes: TINY_BYTES, seed: 3 };
            let direct = steps(build(&spec).unwrap().as_mut(), |w| (0..w).collect());
            let mut prefetched = Prefetched::start(build(&spec).unwrap());
            assert_eq!(prefetched.events(0), build(&spec).unwrap().events(0), "{kind:?}");
            // The machine asks for warps out of order once they are resident: newest first.
            let replayed = steps(&mut prefetched, |w| (0..w).rev().collect());
            assert!(!direct.is_empty());
            assert_eq!(direct, replayed, "{kind:?}");
        }
    }

    #[test]
    fn a_step_header_gives_back_its_compute_kind_and_count_of_lines() {
        for kind in [None, Some(AccessKind::Load), Some(AccessKind::Store), Some(AccessKind::IFetch)] {
            for (compute, lines) in [(0, 0), (1, 1), (u32::MAX, 32), (7, (1 << 24) - 1)] {
                let instr = WarpInstr { compute, kind, lines: vec![0; lines] };
                assert_eq!(step_of(header(&instr)), (compute, kind, lines));
            }
        }
    }

    #[test]
    fn dropping_a_prefetched_application_early_stops_its_worker() {
        let spec = KernelSpec { kind: KernelKind::Stream, bytes: TINY_BYTES, seed: 1 };
        let mut prefetched = Prefetched::start(build(&spec).unwrap());
        let mut instr = WarpInstr::default();
        assert!(prefetched.next(0, 0, &mut instr));
        let worker = prefetched.worker.take().unwrap();
        drop(prefetched);
        worker.join().expect("the worker returns once the machine hangs up");
    }
}
