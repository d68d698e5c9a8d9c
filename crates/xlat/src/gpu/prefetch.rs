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

use super::kernel::{Kernel, MemEvent, WarpInstr};
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

/// One step of a warp: its compute, its kind and how many lines follow in [`WarpSteps`].
#[derive(Clone, Copy, Debug)]
struct Step {
    compute: u32,
    kind: Option<AccessKind>,
    lines: u32,
}

/// Every step of one warp, in order.
#[derive(Debug, Default)]
struct WarpSteps {
    steps: Vec<Step>,
    lines: Vec<u64>,
}

/// Consecutive warps of one launch.
#[derive(Debug)]
struct Chunk {
    launch: usize,
    first: usize,
    warps: Vec<WarpSteps>,
}

/// Where the machine is in one warp's steps.
#[derive(Debug)]
struct Cursor {
    warp: WarpSteps,
    step: usize,
    line: usize,
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
        Prefetched { name, events, warps, footprint, received, worker: Some(worker), launch: usize::MAX, cursors: Vec::new(), received_warps: 0 }
    }

    /// The cursor of `warp` of `launch` (`None` once it exited), receiving warps until it
    /// has come. The machine asks for a launch's warps only once the previous launch's
    /// have all exited, so a message of a new launch replaces the cursors.
    fn cursor(&mut self, launch: usize, warp: usize) -> &mut Option<Cursor> {
        while self.launch != launch || self.received_warps <= warp {
            let chunk = self.receive();
            if chunk.launch != self.launch {
                self.launch = chunk.launch;
                self.cursors.clear();
                self.cursors.resize_with(self.warps[chunk.launch], || None);
                self.received_warps = 0;
            }
            debug_assert_eq!(chunk.first, self.received_warps, "warps arrive in order");
            self.received_warps = chunk.first + chunk.warps.len();
            for (i, steps) in chunk.warps.into_iter().enumerate() {
                self.cursors[chunk.first + i] = Some(Cursor { warp: steps, step: 0, line: 0 });
            }
        }
        &mut self.cursors[warp]
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
}

/// Runs `kernel` warp by warp, sending the warps' steps until the machine hangs up.
fn generate(mut kernel: Box<dyn Kernel>, send: &SyncSender<Chunk>) {
    for launch in 0..kernel.launches() {
        let mut chunk = Chunk { launch, first: 0, warps: Vec::new() };
        let mut lines = 0;
        for warp in 0..kernel.warps(launch) {
            let steps = warp_steps(kernel.as_mut(), launch, warp);
            lines += steps.lines.len();
            chunk.warps.push(steps);
            if chunk.warps.len() == CHUNK_WARPS || lines >= CHUNK_LINES {
                let next = Chunk { launch, first: warp + 1, warps: Vec::new() };
                if send.send(std::mem::replace(&mut chunk, next)).is_err() {
                    return;
                }
                lines = 0;
            }
        }
        if !chunk.warps.is_empty() && send.send(chunk).is_err() {
            return;
        }
    }
}

/// Every step of `warp` of `launch`.
fn warp_steps(kernel: &mut dyn Kernel, launch: usize, warp: usize) -> WarpSteps {
    let mut steps = WarpSteps::default();
    let mut instr = WarpInstr::default();
    while kernel.next(launch, warp, &mut instr) {
        steps.steps.push(Step { compute: instr.compute, kind: instr.kind, lines: instr.lines.len() as u32 });
        steps.lines.extend_from_slice(&instr.lines);
        instr.clear();
    }
    steps
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
        let slot = self.cursor(launch, warp);
        let Some(cursor) = slot else { return false };
        let Some(&step) = cursor.warp.steps.get(cursor.step) else {
            // Exited: its steps are freed now, as many warps finish while others run.
            *slot = None;
            return false;
        };
        let end = cursor.line + step.lines as usize;
        out.compute = step.compute;
        out.kind = step.kind;
        out.lines.extend_from_slice(&cursor.warp.lines[cursor.line..end]);
        cursor.step += 1;
        cursor.line = end;
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
