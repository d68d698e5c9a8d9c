//! GAP's `bfs`: Beamer's direction-optimizing breadth-first search (`DOBFS`, alpha = 15,
//! beta = 18), emitting its accesses to the graph, the parent array, the sliding queue and the
//! two frontier bitmaps.
//!
//! `InitParent` stores `-degree` (or -1) per vertex. Top-down steps scan the queue window's
//! vertices' neighbours and claim unvisited ones (parent store, enqueue), counting the claimed
//! vertices' degrees (`scout_count`). When `scout_count` exceeds the edges left to check over
//! alpha, the queue becomes the `front` bitmap and bottom-up steps run — every unvisited
//! vertex scans its neighbours until one is in `front`, then takes it as parent and sets its
//! bit in `next` — until the frontier shrinks and is under `n / beta`; the bitmap then becomes
//! the queue again. Finally parents still negative are set to -1.
//!
//! GAP's per-thread `QueueBuffer` (a 16 Ki-entry staging array flushed to the shared queue) is
//! not modelled: an enqueue is a store to the shared queue. Its 64 KiB stay cache- and
//! TLB-resident, so the model leaves out a copy per enqueued vertex, not pages.
//!
//! Verification (GAP's `BFSVerifier`, not emitted): a serial BFS gives depths; every vertex
//! the serial search reaches has a parent, the source is its own, and every other parent is a
//! neighbour one level nearer; unreached vertices have parent -1.

use super::bitmap::Bitmap;
use super::graph::Csr;
use super::{Trial, SCAN_INSTRUCTIONS, UPDATE_INSTRUCTIONS, VERTEX_PASS_INSTRUCTIONS, VISIT_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};

/// Direction-switch parameters (GAP's defaults).
const ALPHA: u64 = 15;
const BETA: u64 = 18;

/// Per-trial allocations: parent, queue, `curr` and `front` bitmaps.
pub fn plan(space: &mut impl Allocator, n: u64) -> Trial {
    Trial::plan(space, &[
        ("parent", n * 4),
        ("queue", n * 4),
        ("bitmap curr", Bitmap::bytes(n)),
        ("bitmap front", Bitmap::bytes(n)),
    ])
}

/// The search state.
struct Search<'g> {
    g: &'g Csr<u32>,
    parent: SimVec<i32>,
    queue: SimVec<u32>,
    /// Queue window `[head, window_end)`; `tail` is where the next vertex goes.
    head: usize,
    window_end: usize,
    tail: usize,
}

impl Search<'_> {
    fn slide_window(&mut self) {
        self.head = self.window_end;
        self.window_end = self.tail;
    }

    fn enqueue(&mut self, v: usize, e: &mut Emitter) {
        self.queue.st(self.tail, v as u32, e);
        self.tail += 1;
    }

    /// One top-down step over the queue window; returns the scout count.
    fn top_down(&mut self, e: &mut Emitter) -> u64 {
        let mut scout = 0;
        for q in self.head..self.window_end {
            let u = self.queue.ld(q, e) as usize;
            let (s, t) = self.g.bounds(u, e);
            e.instructions(VISIT_INSTRUCTIONS + SCAN_INSTRUCTIONS * (t - s) as u64);
            for k in s..t {
                let v = self.g.neigh.ld(k, e) as usize;
                let curr = self.parent.ld(v, e);
                if curr < 0 {
                    self.parent.st(v, u as i32, e);
                    self.enqueue(v, e);
                    scout += u64::from(curr.unsigned_abs());
                    e.instructions(UPDATE_INSTRUCTIONS);
                }
            }
        }
        scout
    }

    /// One bottom-up step; returns the vertices awakened.
    fn bottom_up(&mut self, front: &Bitmap, next: &mut Bitmap, e: &mut Emitter) -> u64 {
        let mut awake = 0;
        next.reset(e);
        let n = self.g.vertices();
        e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64);
        for u in 0..n {
            if self.parent.ld(u, e) >= 0 {
                continue;
            }
            let (s, t) = self.g.bounds(u, e);
            e.instructions(VISIT_INSTRUCTIONS);
            for k in s..t {
                let v = self.g.neigh.ld(k, e) as usize;
                e.instructions(SCAN_INSTRUCTIONS);
                if front.get(v, e) {
                    self.parent.st(u, v as i32, e);
                    next.set(u, e);
                    awake += 1;
                    e.instructions(UPDATE_INSTRUCTIONS);
                    break;
                }
            }
        }
        awake
    }

    fn queue_to_bitmap(&mut self, bm: &mut Bitmap, e: &mut Emitter) {
        for q in self.head..self.window_end {
            let u = self.queue.ld(q, e) as usize;
            bm.set(u, e);
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS * (self.window_end - self.head) as u64);
    }

    fn bitmap_to_queue(&mut self, bm: &Bitmap, e: &mut Emitter) {
        let n = self.g.vertices();
        for v in 0..n {
            if bm.get(v, e) {
                self.enqueue(v, e);
            }
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64);
        self.slide_window();
    }
}

/// `DOBFS` from `source`; returns the parent array.
pub fn run(g: &Csr<u32>, source: usize, t: &Trial, e: &mut Emitter) -> Result<Vec<i32>, String> {
    let n = g.vertices();
    let mut parent = SimVec::filled(t.addr(0), n, -1i32, "the parent array")?;
    for v in 0..n {
        let (s, end) = g.bounds(v, e);
        parent.st(v, if end > s { -((end - s) as i32) } else { -1 }, e);
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64);
    parent.st(source, source as i32, e);
    let queue = SimVec::filled(t.addr(1), n, 0u32, "the BFS queue")?;
    let mut curr = Bitmap::new(t.addr(2), n, "a frontier bitmap")?;
    let mut front = Bitmap::new(t.addr(3), n, "a frontier bitmap")?;
    curr.reset(e);
    front.reset(e);
    let mut q = Search { g, parent, queue, head: 0, window_end: 0, tail: 0 };
    q.enqueue(source, e);
    q.slide_window();
    let mut edges_to_check = g.entries() as u64;
    let (s, end) = g.bounds(source, e);
    let mut scout = (end - s) as u64;
    while q.window_end > q.head {
        if scout > edges_to_check / ALPHA {
            q.queue_to_bitmap(&mut front, e);
            let mut awake = (q.window_end - q.head) as u64;
            q.slide_window();
            loop {
                let old = awake;
                awake = q.bottom_up(&front, &mut curr, e);
                std::mem::swap(&mut front, &mut curr);
                if awake < old && awake <= n as u64 / BETA {
                    break;
                }
            }
            q.bitmap_to_queue(&front, e);
            scout = 1;
        } else {
            edges_to_check = edges_to_check.saturating_sub(scout);
            scout = q.top_down(e);
            q.slide_window();
        }
        if e.stopped() {
            break;
        }
    }
    for v in 0..n {
        if q.parent.ld(v, e) < -1 {
            q.parent.st(v, -1, e);
        }
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64);
    Ok(q.parent.raw().to_vec())
}

/// Serial BFS depths from `source` (-1: unreached).
pub fn depths(g: &Csr<u32>, source: usize) -> Vec<i32> {
    let mut depth = vec![-1; g.vertices()];
    depth[source] = 0;
    let mut queue = std::collections::VecDeque::from([source]);
    while let Some(u) = queue.pop_front() {
        for &v in g.adj(u) {
            if depth[v as usize] == -1 {
                depth[v as usize] = depth[u] + 1;
                queue.push_back(v as usize);
            }
        }
    }
    depth
}

/// GAP's `BFSVerifier`.
pub fn verify(g: &Csr<u32>, source: usize, parent: &[i32]) -> Result<(), String> {
    let depth = depths(g, source);
    for (u, (&d, &p)) in depth.iter().zip(parent).enumerate() {
        if d == -1 {
            if p != -1 {
                return Err(format!("vertex {u} is unreachable but has parent {p}"));
            }
        } else if u == source {
            if p != source as i32 {
                return Err(format!("source {source} has parent {p}, not itself"));
            }
        } else if p < 0 {
            return Err(format!("vertex {u} is reachable (depth {d}) but has no parent"));
        } else if depth[p as usize] != d - 1 || g.adj(u).binary_search(&(p as u32)).is_err() {
            return Err(format!("vertex {u} at depth {d} has parent {p}, not a neighbour at depth {}", d - 1));
        }
    }
    Ok(())
}
