//! GAP's `tc`: ordered triangle counting (`Hybrid`): each triangle counted once, as u > v > w,
//! over sorted neighbourhoods, after relabelling the vertices by decreasing degree when GAP's
//! `WorthRelabelling` heuristic says so (average degree at least 10 and the sampled average
//! degree over 1.3 times the sampled median: skewed graphs such as `kron`, not `urand`).
//!
//! `WorthRelabelling` reads the degrees of 1000 random non-isolated vertices into an array of
//! 8-byte samples. `RelabelByDegree` builds `(degree, id)` pairs (16 bytes each), sorts them
//! (modelled as a load and a store per pair), derives `degrees` and `new_ids`, prefix-sums the
//! degrees into `offsets`, and writes a new CSR: per vertex per neighbour its new id, placed
//! at its new vertex's next slot; each new neighbourhood is then sorted (a load and a store per
//! entry). `OrderedCount` then, for every vertex u and neighbour v < u, walks u's neighbours
//! w < v against v's neighbour list (a load per step of either cursor).
//!
//! Verification (not emitted): the count equals a simple reference count that orients each
//! edge from the lower to the higher (degree, id) and intersects out-neighbourhoods with a
//! marker array (GAP's verifier intersects every pair of neighbourhoods, which is quadratic in
//! the hubs' degrees).

use super::graph::{self, Csr, INDEX_BYTES, NODE_BYTES, OFFSET_BYTES};
use super::{Trial, SCAN_INSTRUCTIONS, SORT_INSTRUCTIONS, UPDATE_INSTRUCTIONS, VERTEX_PASS_INSTRUCTIONS, VISIT_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Degrees sampled by the relabelling heuristic.
const SAMPLES: usize = 1000;
/// Bytes of a `std::pair<int64_t, NodeID>`.
const PAIR_BYTES: u64 = 16;

/// The degree samples' array, the trial's first (freed by [`Trial::release`] when the
/// heuristic has decided).
pub fn plan_samples(space: &mut impl Allocator, n: u64) -> Trial {
    Trial::plan(space, &[("degree samples", SAMPLES.min(n as usize) as u64 * 8)])
}

/// The relabelling's arrays in allocation order (after the samples): its temporaries, then the
/// relabelled graph's, which live on until the count is done.
fn relabel_arrays(n: u64, entries: u64) -> [(&'static str, u64); 6] {
    [
        ("relabel: (degree, id) pairs", n * PAIR_BYTES),
        ("relabel: degrees", n * NODE_BYTES),
        ("relabel: new ids", n * NODE_BYTES),
        ("relabel: offsets", (n + 1) * OFFSET_BYTES),
        ("relabelled neighbours", entries * NODE_BYTES),
        ("relabelled index", (n + 1) * INDEX_BYTES),
    ]
}

/// The relabelling's temporaries (offsets, new ids, degrees, pairs: their indices in the
/// trial), in the order they are freed when it ends.
const RELABEL_TEMPORARIES: [usize; 4] = [4, 3, 2, 1];

/// The relabelling's allocations and frees, as [`run`] makes them.
pub fn plan_relabel(t: &mut Trial, space: &mut impl Allocator, n: u64, entries: u64) {
    t.extend(space, &relabel_arrays(n, entries));
    t.free_only(space, &RELABEL_TEMPORARIES);
}

/// GAP's `WorthRelabelling`, reading sampled degrees (the samples' index loads and stores are
/// emitted).
pub fn worth_relabelling(g: &Csr<u32>, t: &Trial, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> Result<bool, String> {
    let n = g.vertices();
    if g.entries() / 2 / n < 10 {
        return Ok(false);
    }
    let count = SAMPLES.min(n);
    let mut samples = SimVec::filled(t.addr(0), count, 0u64, "the degree samples")?;
    for k in 0..count {
        let v = loop {
            let v = rng.random_range(0..n);
            if g.degree(v) > 0 {
                break v;
            }
        };
        let (s, end) = g.bounds(v, e);
        samples.st(k, (end - s) as u64, e);
    }
    e.instructions(VISIT_INSTRUCTIONS * count as u64);
    let mut sorted = samples.raw().to_vec();
    sorted.sort_unstable();
    let average = sorted.iter().sum::<u64>() as f64 / count as f64;
    Ok(average / 1.3 > sorted[count / 2] as f64)
}

/// `RelabelByDegree`: a new CSR with vertices numbered by decreasing degree, its arrays
/// allocated from `e` into `t` (the temporaries freed at its end).
fn relabel(g: &Csr<u32>, t: &mut Trial, e: &mut Emitter) -> Result<Csr<u32>, String> {
    let n = g.vertices();
    let [pairs_at, degrees_at, new_ids_at, offsets_at, neigh_at, index_at] = relabel_arrays(n as u64, g.entries() as u64);
    let mut pairs = SimVec::filled(t.alloc(e, pairs_at.0, pairs_at.1), n, (0u64, 0u64), "the (degree, id) pairs")?;
    for v in 0..n {
        let (s, end) = g.bounds(v, e);
        pairs.st(v, ((end - s) as u64, v as u64), e);
    }
    pairs.raw_mut().sort_unstable_by(|a, b| b.cmp(a));
    for v in 0..n {
        e.load(pairs.addr(v), PAIR_BYTES as u16);
        e.store(pairs.addr(v), PAIR_BYTES as u16);
    }
    e.instructions((VERTEX_PASS_INSTRUCTIONS + SORT_INSTRUCTIONS) * n as u64);
    let mut degrees = SimVec::filled(t.alloc(e, degrees_at.0, degrees_at.1), n, 0u32, "the degrees")?;
    let mut new_ids = SimVec::filled(t.alloc(e, new_ids_at.0, new_ids_at.1), n, 0u32, "the new ids")?;
    for v in 0..n {
        let (d, id) = pairs.ld(v, e);
        degrees.st(v, d as u32, e);
        new_ids.st(id as usize, v as u32, e);
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64);
    let mut offsets = graph::prefix_sum(&degrees, t.alloc(e, offsets_at.0, offsets_at.1), e)?;
    let mut neigh = SimVec::filled(t.alloc(e, neigh_at.0, neigh_at.1), g.entries(), 0u32, "the relabelled neighbours")?;
    let index = graph::gen_index(&offsets, t.alloc(e, index_at.0, index_at.1), e)?;
    for u in 0..n {
        let nu = new_ids.ld(u, e) as usize;
        let (s, end) = g.bounds(u, e);
        for k in s..end {
            let v = g.neigh.ld(k, e) as usize;
            let nv = new_ids.ld(v, e);
            let p = offsets.ld(nu, e);
            offsets.st(nu, p + 1, e);
            neigh.st(p as usize, nv, e);
        }
        let (a, b) = (index.ld(nu, e) as usize, index.ld(nu + 1, e) as usize);
        neigh.raw_mut()[a..b].sort_unstable();
        for k in a..b {
            e.load(neigh.addr(k), NODE_BYTES as u16);
            e.store(neigh.addr(k), NODE_BYTES as u16);
        }
        e.instructions(VISIT_INSTRUCTIONS + (EDGE_INSTRUCTIONS + SORT_INSTRUCTIONS) * (end - s) as u64);
    }
    t.free_only(e, &RELABEL_TEMPORARIES);
    Ok(Csr { index, neigh })
}

/// Per entry placed by the relabelling: its new id and slot.
const EDGE_INSTRUCTIONS: u64 = 6;

/// `OrderedCount`.
fn ordered_count(g: &Csr<u32>, e: &mut Emitter) -> u64 {
    let mut total = 0;
    for u in 0..g.vertices() {
        let (s, end) = g.bounds(u, e);
        e.instructions(VISIT_INSTRUCTIONS);
        for k in s..end {
            let v = g.neigh.ld(k, e) as usize;
            e.instructions(SCAN_INSTRUCTIONS);
            if v > u {
                break;
            }
            let mut it = g.index.ld(v, e) as usize;
            for j in s..end {
                let w = g.neigh.ld(j, e);
                e.instructions(SCAN_INSTRUCTIONS);
                if w as usize > v {
                    break;
                }
                while g.neigh.ld(it, e) < w {
                    it += 1;
                    e.instructions(UPDATE_INSTRUCTIONS);
                }
                if g.neigh.raw()[it] == w {
                    total += 1;
                }
            }
        }
    }
    total
}

/// `Hybrid`: relabels when worthwhile (its arrays allocated from `e` into `t`, after the
/// samples), then counts; returns the count.
pub fn run(g: &Csr<u32>, relabelled: bool, t: &mut Trial, e: &mut Emitter) -> Result<u64, String> {
    if relabelled {
        let r = relabel(g, t, e)?;
        Ok(ordered_count(&r, e))
    } else {
        Ok(ordered_count(g, e))
    }
}

/// A simple reference count: edges oriented from lower to higher (degree, id), out-
/// neighbourhoods intersected through a marker array.
pub fn reference(g: &Csr<u32>) -> u64 {
    let n = g.vertices();
    let rank = |v: usize| (g.degree(v), v);
    let out: Vec<Vec<u32>> = (0..n).map(|u| g.adj(u).iter().copied().filter(|&v| rank(v as usize) > rank(u)).collect()).collect();
    let mut mark = vec![false; n];
    let mut total = 0;
    for u in 0..n {
        for &v in &out[u] {
            mark[v as usize] = true;
        }
        for &v in &out[u] {
            total += out[v as usize].iter().filter(|&&w| mark[w as usize]).count() as u64;
        }
        for &v in &out[u] {
            mark[v as usize] = false;
        }
    }
    total
}

/// Compares the count with the reference count.
pub fn verify(g: &Csr<u32>, count: u64) -> Result<(), String> {
    let want = reference(g);
    if count == want { Ok(()) } else { Err(format!("{count} triangles counted, the reference count is {want}")) }
}
