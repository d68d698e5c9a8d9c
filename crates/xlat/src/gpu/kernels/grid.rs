//! What every built-in application shares: a virtual-address layout that records the
//! allocation events, the coalescing of a warp instruction's lane addresses into 128-byte
//! lines, and a driver that runs a grid-stride loop over work items with one cursor per warp.

use crate::gpu::kernel::{Kernel, MemEvent, WarpInstr, REQUEST_BYTES};
use crate::memref::AccessKind;

/// First virtual address of an application's allocations: each application has its own
/// address space, so every application may start here, as CUDA processes all map their heap
/// in the same region.
const VA_BASE: u64 = 0x7f00_0000_0000;

/// Alignment of allocation bases: CUDA's driver reserves virtual memory in 2 MiB chunks, so
/// a buffer never shares a large-page-sized virtual region with another one.
const VA_ALIGN: u64 = 2 << 20;

/// Allocation sizes are whole 4 KiB pages.
const PAGE: u64 = 4096;

/// Most warps a launch's grid has: larger data is covered by grid-stride loops, as CUDA
/// codes size their grids to the machine rather than to the data.
pub(crate) const MAX_WARPS: usize = 65_536;

/// Lanes of a warp.
pub(crate) const LANES: usize = 32;

/// cudaMalloc and cudaFree in program order: places buffers first-fit at 2 MiB aligned
/// bases (so a freed range is reused by later allocations, as the driver does) and records
/// the events before each launch.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    events: Vec<Vec<MemEvent>>,
    /// Live allocations, sorted by base.
    live: Vec<(u64, u64)>,
    peak: u64,
}

impl Layout {
    /// Allocates `bytes` (rounded up to whole pages) before launch `before`; returns the base.
    pub(crate) fn alloc(&mut self, before: usize, bytes: u64) -> u64 {
        let bytes = bytes.max(1).div_ceil(PAGE) * PAGE;
        let mut base = VA_BASE;
        let mut at = self.live.len();
        for (i, &(b, s)) in self.live.iter().enumerate() {
            if base + bytes <= b {
                at = i;
                break;
            }
            base = (b + s).next_multiple_of(VA_ALIGN);
        }
        self.live.insert(at, (base, bytes));
        self.peak = self.peak.max(self.live.iter().map(|&(_, s)| s).sum());
        self.event(before, MemEvent::Alloc { base, bytes });
        base
    }

    /// Frees the allocation at `base` before launch `before`.
    pub(crate) fn free(&mut self, before: usize, base: u64) {
        let i = self.live.iter().position(|&(b, _)| b == base).expect("freeing a live allocation");
        let (base, bytes) = self.live.remove(i);
        self.event(before, MemEvent::Free { base, bytes });
    }

    fn event(&mut self, before: usize, event: MemEvent) {
        if self.events.len() <= before {
            self.events.resize_with(before + 1, Vec::new);
        }
        self.events[before].push(event);
    }

    /// Frees what is still live at exit (after launch `launches - 1`).
    fn finish(&mut self, launches: usize) {
        while let Some(&(base, _)) = self.live.last() {
            self.free(launches, base);
        }
        self.events.resize_with(launches + 1, Vec::new);
    }
}

/// One step of a warp as stored: its lines are `lines[start..end]` of the owning [`Steps`].
#[derive(Clone, Copy, Debug)]
struct Step {
    compute: u32,
    kind: AccessKind,
    start: u32,
    end: u32,
}

/// The steps of one work item of one warp, assembled by an application.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    steps: Vec<Step>,
    lines: Vec<u64>,
    /// Compute instructions not yet attached to a memory instruction.
    pending: u32,
}

impl Steps {
    /// Adds `n` non-memory instructions before the next memory instruction (at most
    /// `u32::MAX` of them: a traced warp's longer run saturates).
    pub(crate) fn compute(&mut self, n: u32) {
        self.pending = self.pending.saturating_add(n);
    }

    /// Takes the compute instructions not attached to a memory instruction: a traced warp's
    /// last ones, which its exit issues.
    pub(crate) fn take_pending(&mut self) -> u32 {
        std::mem::take(&mut self.pending)
    }

    /// Steps assembled.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    /// Every step's lines, one after another.
    pub(crate) fn lines(&self) -> &[u64] {
        &self.lines
    }

    /// A warp load of the active lanes' byte addresses `addrs`, in lane order.
    pub(crate) fn load(&mut self, addrs: impl IntoIterator<Item = u64>) {
        self.access(AccessKind::Load, addrs);
    }

    /// A warp store (or atomic) of the active lanes' byte addresses `addrs`, in lane order.
    pub(crate) fn store(&mut self, addrs: impl IntoIterator<Item = u64>) {
        self.access(AccessKind::Store, addrs);
    }

    /// Coalesces the lane addresses into distinct 128-byte lines in order of their first
    /// lane; an instruction with no active lane issues no request, so its compute carries on.
    /// (A traced lane whose bytes cross into the next line gives an address in each.)
    pub(crate) fn access(&mut self, kind: AccessKind, addrs: impl IntoIterator<Item = u64>) {
        let start = self.lines.len();
        for (lane, addr) in addrs.into_iter().enumerate() {
            debug_assert!(lane < 2 * LANES, "a warp instruction has at most 32 lanes, each in one or two lines");
            let line = addr - addr % REQUEST_BYTES;
            if !self.lines[start..].contains(&line) {
                self.lines.push(line);
            }
        }
        if self.lines.len() > start {
            let step = Step { compute: self.pending, kind, start: start as u32, end: self.lines.len() as u32 };
            self.steps.push(step);
            self.pending = 0;
        }
    }

    /// Forgets the steps already handed out, keeping pending compute and the buffers.
    fn clear_steps(&mut self) {
        self.steps.clear();
        self.lines.clear();
    }

    /// Writes step `i` into `out`.
    pub(crate) fn write(&self, i: usize, out: &mut WarpInstr) {
        let step = self.steps[i];
        out.compute = step.compute;
        out.kind = Some(step.kind);
        out.lines.extend_from_slice(&self.lines[step.start as usize..step.end as usize]);
    }
}

/// An application as a sequence of launches, each a set of warp-sized work items that a
/// grid-stride loop distributes over the launch's warps (item `i` goes to warp `i % warps`).
/// What an item does is a function of the launch and the item only, which keeps every
/// warp's instructions independent of the other warps' progress.
pub(crate) trait Program: Send {
    /// Kernel launches.
    fn launches(&self) -> usize;

    /// Work items of launch `launch` (at least one).
    fn items(&self, launch: usize) -> usize;

    /// Warps of launch `launch`'s grid: one per item up to [`MAX_WARPS`].
    fn warps(&self, launch: usize) -> usize {
        self.items(launch).min(MAX_WARPS)
    }

    /// Appends the steps of item `item` of launch `launch`.
    fn emit(&self, launch: usize, item: usize, out: &mut Steps);
}

/// Compute instructions of a warp's exit (the loop test that fails and the return).
const EXIT_COMPUTE: u32 = 2;

/// Where one warp is in its grid-stride loop.
#[derive(Debug, Default)]
struct Cursor {
    /// Items of this warp begun so far.
    begun: usize,
    steps: Steps,
    /// Next step of `steps` to hand out.
    at: usize,
    exited: bool,
}

/// A [`Program`] with its allocations, driven as a [`Kernel`] with one cursor per warp of
/// the current launch.
pub(crate) struct Grid<P> {
    name: &'static str,
    program: P,
    layout: Layout,
    launch: usize,
    cursors: Vec<Cursor>,
}

impl<P: Program> Grid<P> {
    /// Wraps `program`, whose buffers `layout` allocated; frees what is live at exit.
    pub(crate) fn new(name: &'static str, program: P, mut layout: Layout) -> Self {
        layout.finish(program.launches());
        Grid { name, program, layout, launch: usize::MAX, cursors: Vec::new() }
    }

    /// The application, for its computed result.
    #[cfg(test)]
    pub(crate) fn program(&self) -> &P {
        &self.program
    }

    /// Gives every warp of `launch` a fresh cursor when the machine moves to that launch.
    fn enter(&mut self, launch: usize) {
        if self.launch != launch {
            self.launch = launch;
            self.cursors.clear();
            self.cursors.resize_with(self.program.warps(launch), Cursor::default);
        }
    }
}

impl<P: Program> Kernel for Grid<P> {
    fn name(&self) -> &str {
        self.name
    }

    fn events(&self, launch: usize) -> &[MemEvent] {
        &self.layout.events[launch]
    }

    fn launches(&self) -> usize {
        self.program.launches()
    }

    fn warps(&self, launch: usize) -> usize {
        self.program.warps(launch)
    }

    fn next(&mut self, launch: usize, warp: usize, out: &mut WarpInstr) -> bool {
        self.enter(launch);
        let warps = self.cursors.len();
        let items = self.program.items(launch);
        let cursor = &mut self.cursors[warp];
        loop {
            if cursor.at < cursor.steps.steps.len() {
                cursor.steps.write(cursor.at, out);
                cursor.at += 1;
                return true;
            }
            if cursor.exited {
                return false;
            }
            let item = warp + cursor.begun * warps;
            if item >= items {
                out.compute = cursor.steps.pending + EXIT_COMPUTE;
                // The warp is done: release its buffers, as many warps of a launch finish
                // while others still run.
                *cursor = Cursor { exited: true, ..Cursor::default() };
                return true;
            }
            cursor.steps.clear_steps();
            cursor.at = 0;
            cursor.begun += 1;
            self.program.emit(launch, item, &mut cursor.steps);
        }
    }

    fn footprint(&self) -> u64 {
        self.layout.peak
    }
}
