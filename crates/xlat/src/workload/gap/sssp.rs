//! GAP's `sssp`: delta-stepping (Meyer and Sanders) as GAP implements it (`DeltaStep`), on the
//! weighted graph (weights uniform in 1..=255), with GAP's default delta = 1.
//!
//! `dist` is filled with infinity (`INT_MAX / 2`) and the source set to 0; the frontier array
//! has one slot per neighbour entry (GAP's bound on the frontier). Each step relaxes the
//! frontier's vertices whose distance still belongs to the current bin, then keeps relaxing
//! the current bin while it holds fewer than 1000 vertices (a copy of the bin is taken and the
//! bin emptied first), then finds the next non-empty bin and copies it into the frontier.
//! Relaxing a vertex reads its bounds, and per neighbour the `{v, w}` entry, `dist[v]` and
//! `dist[u]`; an improvement stores `dist[v]` and pushes `v` on the bin of its new distance
//! (bins are `std::vector`s in the heap: see [`super::bins`]).
//!
//! Verification (GAP's `SSSPVerifier`, not emitted): the distances equal a serial Dijkstra's.

use super::bins::Bins;
use super::graph::{Csr, Dest, WNode};
use super::{Trial, SCAN_INSTRUCTIONS, UPDATE_INSTRUCTIONS, VISIT_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// GAP's `kDistInf`.
pub const INF: i32 = i32::MAX / 2;
/// A bin smaller than this is processed again at once (`kBinSizeThreshold`).
const BIN_SIZE_THRESHOLD: usize = 1000;

/// Per-trial allocations: distances and the frontier.
pub fn plan(space: &mut impl Allocator, n: u64, entries: u64) -> Trial {
    Trial::plan(space, &[("dist", n * 4), ("frontier", entries * 4)])
}

/// The state of one run.
struct Run<'a> {
    g: &'a Csr<WNode>,
    dist: SimVec<i32>,
    bins: Bins,
    delta: u32,
}

impl Run<'_> {
    /// `RelaxEdges(u)`.
    fn relax(&mut self, u: usize, e: &mut Emitter) {
        let (s, t) = self.g.bounds(u, e);
        e.instructions(VISIT_INSTRUCTIONS + SCAN_INSTRUCTIONS * (t - s) as u64);
        for k in s..t {
            let wn = self.g.neigh.ld(k, e);
            let v = wn.v() as usize;
            let old = self.dist.ld(v, e);
            let new = self.dist.ld(u, e) + wn.w() as i32;
            if new < old {
                self.dist.st(v, new, e);
                let bin = (new as u32 / self.delta) as usize;
                self.bins.grow_to(bin + 1, e);
                self.bins.push(bin, v as u32, e);
                e.instructions(UPDATE_INSTRUCTIONS);
            }
        }
    }
}

/// `DeltaStep` from `source`; returns the distances.
pub fn run(g: &Csr<WNode>, source: usize, delta: u32, t: &Trial, e: &mut Emitter) -> Result<Vec<i32>, String> {
    let n = g.vertices();
    let mut dist = SimVec::filled(t.addr(0), n, INF, "the distances")?;
    for v in 0..n {
        dist.st(v, INF, e);
    }
    dist.st(source, 0, e);
    let mut frontier = SimVec::filled(t.addr(1), g.entries().max(1), 0u32, "the frontier")?;
    frontier.st(0, source as u32, e);
    let mut r = Run { g, dist, bins: Bins::default(), delta };
    let (mut shared, mut tails) = ([0usize, usize::MAX], [1usize, 0]);
    let mut iter = 0;
    while shared[iter & 1] != usize::MAX && !e.stopped() {
        let (cur, next) = (iter & 1, (iter + 1) & 1);
        let bin = shared[cur];
        for i in 0..tails[cur] {
            let u = frontier.ld(i, e) as usize;
            if r.dist.ld(u, e) as u64 >= u64::from(delta) * bin as u64 {
                r.relax(u, e);
            }
        }
        while bin < r.bins.len() && (1..BIN_SIZE_THRESHOLD).contains(&r.bins.size(bin, e)) {
            let (copy, buf) = r.bins.copy(bin, e);
            r.bins.clear(bin, e);
            for (k, &u) in copy.iter().enumerate() {
                e.load(buf + 4 * k as u64, 4);
                r.relax(u as usize, e);
            }
            e.free(buf);
        }
        if let Some(i) = (bin..r.bins.len()).find(|&i| r.bins.size(i, e) > 0) {
            shared[next] = shared[next].min(i);
        }
        shared[cur] = usize::MAX;
        tails[cur] = 0;
        let nb = shared[next];
        if nb < r.bins.len() {
            let start = tails[next];
            let size = r.bins.size(nb, e);
            for k in 0..size {
                e.load(r.bins.addr(nb, k), 4);
                frontier.st(start + k, r.bins.items(nb)[k], e);
            }
            tails[next] += size;
            r.bins.clear(nb, e);
        }
        iter += 1;
    }
    r.bins.free(e);
    Ok(r.dist.raw().to_vec())
}

/// Serial Dijkstra distances from `source` (`INF`: unreached).
pub fn dijkstra(g: &Csr<WNode>, source: usize) -> Vec<i32> {
    let mut dist = vec![INF; g.vertices()];
    dist[source] = 0;
    let mut heap = BinaryHeap::from([Reverse((0, source))]);
    while let Some(Reverse((d, u))) = heap.pop() {
        if d > dist[u] {
            continue;
        }
        for wn in g.adj(u) {
            let nd = d + wn.w() as i32;
            if nd < dist[wn.v() as usize] {
                dist[wn.v() as usize] = nd;
                heap.push(Reverse((nd, wn.v() as usize)));
            }
        }
    }
    dist
}

/// GAP's `SSSPVerifier`: every distance equals Dijkstra's.
pub fn verify(g: &Csr<WNode>, source: usize, dist: &[i32]) -> Result<(), String> {
    let want = dijkstra(g, source);
    match want.iter().zip(dist).position(|(a, b)| a != b) {
        Some(v) => Err(format!("vertex {v} has distance {}, Dijkstra finds {}", dist[v], want[v])),
        None => Ok(()),
    }
}
