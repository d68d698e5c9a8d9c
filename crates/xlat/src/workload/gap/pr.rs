//! GAP's `pr`: PageRank in the pull direction with Gauss-Seidel updates (`PageRankPullGS`):
//! damping 0.85, at most 20 iterations, stopping when an iteration changes the scores by less
//! than the tolerance 1e-4 in total. Scores are 4-byte floats as in GAP.
//!
//! `scores` is filled with 1/n; `outgoing_contrib[v] = 1/n / degree(v)`. Each iteration, for
//! every vertex: its index bounds, per neighbour the neighbour and its contribution, then its
//! old score, new score and new contribution (a load and two stores).
//!
//! Verification (GAP's `PRVerifier`, not emitted): one serial push-direction iteration from
//! the result changes the scores by less than the tolerance in total.

use super::graph::Csr;
use super::{Trial, SCAN_INSTRUCTIONS, VERTEX_PASS_INSTRUCTIONS, VISIT_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};

/// Damping factor.
pub const DAMP: f32 = 0.85;
/// Total change under which the iteration stops.
pub const TOLERANCE: f64 = 1e-4;
/// Iterations at most.
pub const MAX_ITERS: u32 = 20;

/// Per-trial allocations: scores and outgoing contributions.
pub fn plan(space: &mut impl Allocator, n: u64) -> Trial {
    Trial::plan(space, &[("scores", n * 4), ("outgoing contributions", n * 4)])
}

/// The scores, and the iterations run.
pub fn run(g: &Csr<u32>, t: &Trial, e: &mut Emitter) -> Result<(Vec<f32>, u32), String> {
    let n = g.vertices();
    let init = 1.0f32 / n as f32;
    let base = (1.0f32 - DAMP) / n as f32;
    let mut scores = SimVec::filled(t.addr(0), n, init, "the scores")?;
    for v in 0..n {
        scores.st(v, init, e);
    }
    let mut contrib = SimVec::filled(t.addr(1), n, 0f32, "the contributions")?;
    for v in 0..n {
        let (s, end) = g.bounds(v, e);
        contrib.st(v, init / (end - s) as f32, e);
    }
    e.instructions(2 * VERTEX_PASS_INSTRUCTIONS * n as u64);
    let mut iters = 0;
    while iters < MAX_ITERS {
        iters += 1;
        let mut error = 0f64;
        for u in 0..n {
            let (s, end) = g.bounds(u, e);
            let mut incoming = 0f32;
            for k in s..end {
                let v = g.neigh.ld(k, e) as usize;
                incoming += contrib.ld(v, e);
            }
            let old = scores.ld(u, e);
            let new = base + DAMP * incoming;
            scores.st(u, new, e);
            error += f64::from((new - old).abs());
            contrib.st(u, new / (end - s) as f32, e);
            e.instructions(VISIT_INSTRUCTIONS + SCAN_INSTRUCTIONS * (end - s) as u64);
        }
        if error < TOLERANCE || e.stopped() {
            break;
        }
    }
    Ok((scores.raw().to_vec(), iters))
}

/// GAP's `PRVerifier`: the total change of one serial push iteration.
pub fn verify(g: &Csr<u32>, scores: &[f32]) -> Result<f64, String> {
    let n = g.vertices();
    let base = (1.0f32 - DAMP) / n as f32;
    let mut incoming = vec![0f32; n];
    for (u, &score) in scores.iter().enumerate() {
        let contrib = score / g.degree(u) as f32;
        for &v in g.adj(u) {
            incoming[v as usize] += contrib;
        }
    }
    let error: f64 = (0..n).map(|v| f64::from((base + DAMP * incoming[v] - scores[v]).abs())).sum();
    if error < TOLERANCE {
        Ok(error)
    } else {
        Err(format!("one more iteration changes the scores by {error:.3e} in total, not under {TOLERANCE:e}"))
    }
}
