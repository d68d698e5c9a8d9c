//! GAP's `bc`: betweenness centrality by Brandes' algorithm from a few sources per trial
//! (GAP's `-i`), with Madduri et al.'s successor bitmap (`Brandes`, `PBFS`).
//!
//! Per trial: `scores` (zeroed), `path_counts` (doubles), the `succ` bitmap (a bit per
//! neighbour entry) and the queue. Per source: `path_counts` zeroed, `succ` cleared, then a
//! breadth-first search into a fresh `depths` array (set to -1) that counts shortest paths —
//! per neighbour entry the neighbour and its depth, claiming it when unvisited, and for a
//! successor (one level deeper) its bit in `succ` and `path_counts[v] += path_counts[u]` —
//! and a back-propagation over a fresh, zeroed `deltas` array, level by level from the
//! deepest: per queued vertex per neighbour entry its `succ` bit, and for successors both path
//! counts and the successor's delta; then `deltas[u]` and `scores[u]`. Scores are finally
//! normalized by the largest.
//!
//! Verification (GAP's `BCVerifier`, not emitted): a serial Brandes from the same sources,
//! normalized, differs from every score by at most a float's epsilon.

use super::bitmap::Bitmap;
use super::graph::Csr;
use super::{Trial, SCAN_INSTRUCTIONS, UPDATE_INSTRUCTIONS, VERTEX_PASS_INSTRUCTIONS, VISIT_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};

/// Allowed difference from the serial scores (GAP's: a float's epsilon).
const TOLERANCE: f32 = f32::EPSILON;

/// Per-trial allocations made before the first source: scores, path counts, successor
/// bitmap, queue.
pub fn plan(space: &mut impl Allocator, n: u64, entries: u64) -> Trial {
    Trial::plan(space, &[
        ("scores", n * 4),
        ("path counts", n * 8),
        ("successor bitmap", Bitmap::bytes(entries)),
        ("queue", n * 4),
    ])
}

/// The name of source `s`'s `depths` or `deltas` array.
fn per_source(s: usize, array: &str) -> String {
    format!("source {s}: {array}")
}

/// The allocations of `sources` sources after [`plan`]'s (as the run makes them): per source
/// the `depths` array, freed before the `deltas` array is allocated, then that freed.
pub fn plan_sources(t: &mut Trial, space: &mut impl Allocator, n: u64, sources: u32) {
    for s in 0..sources as usize {
        t.transient(space, &per_source(s, "depths"), n * 4);
        t.transient(space, &per_source(s, "deltas"), n * 4);
    }
}

/// Search state shared by the two passes of one source.
struct Pass<'a> {
    g: &'a Csr<u32>,
    path_counts: SimVec<f64>,
    succ: Bitmap,
    queue: SimVec<u32>,
}

impl Pass<'_> {
    /// `PBFS` from `source` into `depths`; returns the queue's level boundaries.
    fn search(&mut self, source: usize, depths: &mut SimVec<i32>, e: &mut Emitter) -> Vec<usize> {
        depths.st(source, 0, e);
        self.path_counts.st(source, 1.0, e);
        self.queue.st(0, source as u32, e);
        let mut levels = vec![0, 1];
        let mut depth = 0;
        while levels[levels.len() - 1] > levels[levels.len() - 2] {
            depth += 1;
            let (start, end) = (levels[levels.len() - 2], levels[levels.len() - 1]);
            let mut tail = end;
            for q in start..end {
                let u = self.queue.ld(q, e) as usize;
                let (s, t) = self.g.bounds(u, e);
                e.instructions(VISIT_INSTRUCTIONS + SCAN_INSTRUCTIONS * (t - s) as u64);
                for k in s..t {
                    let v = self.g.neigh.ld(k, e) as usize;
                    if depths.ld(v, e) == -1 {
                        depths.st(v, depth, e);
                        self.queue.st(tail, v as u32, e);
                        tail += 1;
                    }
                    if depths.ld(v, e) == depth {
                        self.succ.set(k, e);
                        let add = self.path_counts.ld(u, e);
                        let pv = self.path_counts.ld(v, e);
                        self.path_counts.st(v, pv + add, e);
                        e.instructions(UPDATE_INSTRUCTIONS);
                    }
                }
            }
            levels.push(tail);
        }
        levels
    }

    /// Back-propagation of dependencies into `deltas`, adding them to `scores`.
    fn accumulate(&self, levels: &[usize], deltas: &mut SimVec<f32>, scores: &mut SimVec<f32>, e: &mut Emitter) {
        for w in levels.windows(2).rev() {
            for q in w[0]..w[1] {
                let u = self.queue.ld(q, e) as usize;
                let (s, t) = self.g.bounds(u, e);
                e.instructions(VISIT_INSTRUCTIONS + SCAN_INSTRUCTIONS * (t - s) as u64);
                let mut delta_u = 0f32;
                for k in s..t {
                    let v = self.g.neigh.ld(k, e) as usize;
                    if self.succ.get(k, e) {
                        let ratio = self.path_counts.ld(u, e) / self.path_counts.ld(v, e);
                        delta_u = (f64::from(delta_u) + ratio * f64::from(1.0 + deltas.ld(v, e))) as f32;
                    }
                }
                deltas.st(u, delta_u, e);
                let old = scores.ld(u, e);
                scores.st(u, old + delta_u, e);
            }
        }
    }
}

/// `Brandes` from `sources`, with [`plan`]'s arrays in `t` (each source's are allocated and
/// freed from `e` on the way); returns the normalized scores.
pub fn run(g: &Csr<u32>, sources: &[usize], t: &mut Trial, e: &mut Emitter) -> Result<Vec<f32>, String> {
    let n = g.vertices();
    let mut scores = SimVec::filled(t.addr(0), n, 0f32, "the scores")?;
    for v in 0..n {
        scores.st(v, 0.0, e);
    }
    let mut pass = Pass {
        g,
        path_counts: SimVec::filled(t.addr(1), n, 0f64, "the path counts")?,
        succ: Bitmap::new(t.addr(2), g.entries(), "the successor bitmap")?,
        queue: SimVec::filled(t.addr(3), n, 0u32, "the queue")?,
    };
    for (j, &source) in sources.iter().enumerate() {
        for v in 0..n {
            pass.path_counts.st(v, 0.0, e);
        }
        pass.succ.reset(e);
        let mut depths = SimVec::filled(t.alloc(e, &per_source(j, "depths"), n as u64 * 4), n, -1i32, "the depths")?;
        for v in 0..n {
            depths.st(v, -1, e);
        }
        e.instructions(2 * VERTEX_PASS_INSTRUCTIONS * n as u64);
        let levels = pass.search(source, &mut depths, e);
        drop(depths);
        t.free_last(e);
        let mut deltas = SimVec::filled(t.alloc(e, &per_source(j, "deltas"), n as u64 * 4), n, 0f32, "the deltas")?;
        for v in 0..n {
            deltas.st(v, 0.0, e);
        }
        pass.accumulate(&levels, &mut deltas, &mut scores, e);
        t.free_last(e);
        if e.stopped() {
            break;
        }
    }
    let mut biggest = 0f32;
    for v in 0..n {
        biggest = biggest.max(scores.ld(v, e));
    }
    for v in 0..n {
        let s = scores.ld(v, e);
        scores.st(v, s / biggest, e);
    }
    e.instructions(2 * VERTEX_PASS_INSTRUCTIONS * n as u64);
    Ok(scores.raw().to_vec())
}

/// Serial Brandes from `sources`, normalized (GAP's verifier's computation).
pub fn reference(g: &Csr<u32>, sources: &[usize]) -> Vec<f32> {
    let n = g.vertices();
    let mut scores = vec![0f32; n];
    for &source in sources {
        let mut depths = vec![-1i32; n];
        let mut paths = vec![0f64; n];
        depths[source] = 0;
        paths[source] = 1.0;
        let mut order = vec![source];
        let mut k = 0;
        while k < order.len() {
            let u = order[k];
            k += 1;
            for &v in g.adj(u) {
                let v = v as usize;
                if depths[v] == -1 {
                    depths[v] = depths[u] + 1;
                    order.push(v);
                }
                if depths[v] == depths[u] + 1 {
                    paths[v] += paths[u];
                }
            }
        }
        let mut deltas = vec![0f32; n];
        for &u in order.iter().rev() {
            for &v in g.adj(u) {
                let v = v as usize;
                if depths[v] == depths[u] + 1 {
                    deltas[u] = (f64::from(deltas[u]) + paths[u] / paths[v] * f64::from(1.0 + deltas[v])) as f32;
                }
            }
            scores[u] += deltas[u];
        }
    }
    let biggest = scores.iter().copied().fold(0f32, f32::max);
    scores.iter().map(|s| s / biggest).collect()
}

/// GAP's `BCVerifier`.
pub fn verify(g: &Csr<u32>, sources: &[usize], scores: &[f32]) -> Result<(), String> {
    let want = reference(g, sources);
    match want.iter().zip(scores).position(|(a, b)| (a - b).abs() > TOLERANCE) {
        Some(v) => Err(format!("vertex {v} has score {}, serial Brandes gives {}", scores[v], want[v])),
        None => Ok(()),
    }
}
