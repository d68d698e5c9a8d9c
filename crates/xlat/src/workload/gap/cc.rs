//! GAP's `cc`: connected components by Afforest (Sutton, Ben-Nun and Barak), GAP's default
//! `cc` kernel, with two neighbour rounds and 1024 samples.
//!
//! `comp[v] = v` for every vertex; for rounds r = 0, 1 every vertex links with its r-th
//! neighbour (if it has one), then `Compress` points every vertex at its root; the most
//! frequent root among 1024 sampled vertices is taken as the largest component, and every
//! vertex outside it links with its remaining neighbours; a last `Compress` finishes. `Link`
//! walks both roots up (`comp` loads) and hooks the higher under the lower (a store).
//!
//! Verification (GAP's `CCVerifier`, not emitted): a BFS from one vertex of each label reaches
//! only vertices of that label and every vertex is reached; and the number of labels equals
//! the number of components a serial BFS labelling finds.

use super::graph::Csr;
use super::{Trial, SCAN_INSTRUCTIONS, UPDATE_INSTRUCTIONS, VERTEX_PASS_INSTRUCTIONS, VISIT_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;

/// Neighbours per vertex linked before sampling (GAP's default).
const NEIGHBOR_ROUNDS: usize = 2;
/// Vertices sampled to find the largest intermediate component.
const SAMPLES: usize = 1024;

/// Per-trial allocation: the component array.
pub fn plan(space: &mut impl Allocator, n: u64) -> Trial {
    Trial::plan(space, &[("comp", n * 4)])
}

/// `Link(u, v)`: hooks the higher of their roots under the lower.
fn link(u: usize, v: usize, comp: &mut SimVec<u32>, e: &mut Emitter) {
    let mut p1 = comp.ld(u, e);
    let mut p2 = comp.ld(v, e);
    while p1 != p2 {
        let (high, low) = (p1.max(p2), p1.min(p2));
        let p_high = comp.ld(high as usize, e);
        e.instructions(UPDATE_INSTRUCTIONS);
        if p_high == low {
            break;
        }
        if p_high == high {
            comp.st(high as usize, low, e);
            break;
        }
        let c = comp.ld(high as usize, e);
        p1 = comp.ld(c as usize, e);
        p2 = comp.ld(low as usize, e);
    }
}

/// `Compress`: every vertex points at its root.
fn compress(comp: &mut SimVec<u32>, e: &mut Emitter) {
    for v in 0..comp.len() {
        loop {
            let c = comp.ld(v, e);
            let cc = comp.ld(c as usize, e);
            if c == cc {
                break;
            }
            comp.st(v, cc, e);
        }
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * comp.len() as u64);
}

/// The most frequent root among sampled vertices (the samples' loads are emitted).
fn sample_frequent(comp: &SimVec<u32>, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> u32 {
    let mut counts: FxHashMap<u32, u32> = FxHashMap::default();
    for _ in 0..SAMPLES {
        let v = rng.random_range(0..comp.len());
        *counts.entry(comp.ld(v, e)).or_default() += 1;
    }
    e.instructions(VISIT_INSTRUCTIONS * SAMPLES as u64);
    counts.into_iter().max_by_key(|&(c, k)| (k, std::cmp::Reverse(c))).map_or(0, |(c, _)| c)
}

/// `Afforest`; returns the component labels.
pub fn run(g: &Csr<u32>, t: &Trial, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> Result<Vec<u32>, String> {
    let n = g.vertices();
    let mut comp = SimVec::filled(t.addr(0), n, 0u32, "the component array")?;
    for v in 0..n {
        comp.st(v, v as u32, e);
    }
    for r in 0..NEIGHBOR_ROUNDS {
        for u in 0..n {
            let (s, end) = g.bounds(u, e);
            e.instructions(VISIT_INSTRUCTIONS);
            if s + r < end {
                let v = g.neigh.ld(s + r, e) as usize;
                link(u, v, &mut comp, e);
            }
        }
        compress(&mut comp, e);
    }
    let largest = sample_frequent(&comp, rng, e);
    for u in 0..n {
        e.instructions(VERTEX_PASS_INSTRUCTIONS);
        if comp.ld(u, e) == largest {
            continue;
        }
        let (s, end) = g.bounds(u, e);
        e.instructions(VISIT_INSTRUCTIONS + SCAN_INSTRUCTIONS * (end - s) as u64);
        for k in (s + NEIGHBOR_ROUNDS).min(end)..end {
            let v = g.neigh.ld(k, e) as usize;
            link(u, v, &mut comp, e);
        }
    }
    compress(&mut comp, e);
    Ok(comp.raw().to_vec())
}

/// Components found by a serial BFS labelling.
fn count_components(g: &Csr<u32>) -> usize {
    let n = g.vertices();
    let mut seen = vec![false; n];
    let mut count = 0;
    for s in 0..n {
        if seen[s] {
            continue;
        }
        count += 1;
        seen[s] = true;
        let mut stack = vec![s];
        while let Some(u) = stack.pop() {
            for &v in g.adj(u) {
                if !std::mem::replace(&mut seen[v as usize], true) {
                    stack.push(v as usize);
                }
            }
        }
    }
    count
}

/// GAP's `CCVerifier` and the component count against a serial labelling; returns the count.
pub fn verify(g: &Csr<u32>, comp: &[u32]) -> Result<usize, String> {
    let n = g.vertices();
    let mut source_of: FxHashMap<u32, usize> = FxHashMap::default();
    for (v, &c) in comp.iter().enumerate() {
        source_of.insert(c, v);
    }
    // Sorted, so that a failure names the same vertex every run.
    let mut labels: Vec<(u32, usize)> = source_of.iter().map(|(&l, &s)| (l, s)).collect();
    labels.sort_unstable();
    let mut visited = vec![false; n];
    for &(label, source) in &labels {
        visited[source] = true;
        let mut frontier = vec![source];
        while let Some(u) = frontier.pop() {
            for &v in g.adj(u) {
                if comp[v as usize] != label {
                    return Err(format!("edge ({u}, {v}) joins components {label} and {}", comp[v as usize]));
                }
                if !std::mem::replace(&mut visited[v as usize], true) {
                    frontier.push(v as usize);
                }
            }
        }
    }
    if let Some(v) = visited.iter().position(|&s| !s) {
        return Err(format!("vertex {v}'s label {} is shared with a vertex it is not connected to", comp[v]));
    }
    let serial = count_components(g);
    if serial != source_of.len() {
        return Err(format!("{} component labels, but a serial labelling finds {serial} components", source_of.len()));
    }
    Ok(serial)
}
