//! GAP's graphs: the `kron` and `urand` edge-list generators and the builder's CSR
//! construction (`MakeGraph`: `MakeCSR` then `SquishCSR`), over arrays at the addresses glibc's
//! `malloc` gives them, emitting the builder's loads and stores.
//!
//! Layout as GAP's C++ has it: `NodeID` is a 4-byte int; an edge-list entry is two of them (8
//! bytes), or 12 bytes with the 4-byte weight of a weighted graph; a neighbour is a `NodeID`
//! (4 bytes) or a `{NodeID v; int32 w}` pair (8 bytes); the index is `n + 1` 8-byte pointers
//! into the neighbour array. Graphs are undirected (GAP symmetrizes generated graphs), so one
//! CSR serves as both in- and out-neighbours.
//!
//! The builder's order: the edge list; `FindMaxNodeID` (a pass over the edges); for a weighted
//! graph `InsertWeights` (a store per edge, weights uniform in 1..=255); `CountDegrees` into a
//! zeroed `degrees` array (both endpoints of every edge, self-loops included); a prefix sum
//! into `offsets`; the neighbour array and `GenIndex`; the scatter of both directions of every
//! edge; `offsets` and `degrees` freed, then the edge list. `SquishCSR` then sorts each
//! neighbourhood, drops duplicates and self-loops (modelled as one load and one store per
//! entry), stores the kept count in `diffs`, prefix-sums it, and copies the kept entries into a
//! fresh, exactly sized CSR; the old one is freed. Each array is `malloc`ed and `free`d from
//! the process's allocator (the emitter) where the builder does it. A weighted graph's duplicate edges keep the
//! lightest weight (GAP's `unique` keeps a duplicate with a different weight; the brief here is
//! a simple graph).

use super::{EDGE_PASS_INSTRUCTIONS, GEN_BIT_INSTRUCTIONS, SORT_INSTRUCTIONS, VERTEX_PASS_INSTRUCTIONS};
use crate::workload::address_space::Allocator;
use crate::workload::emit::{Emitter, SimVec};
use crate::workload::kronecker::{self, Initiator};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// Bytes of a `NodeID`.
pub const NODE_BYTES: u64 = 4;
/// Bytes of an index entry (a pointer).
pub const INDEX_BYTES: u64 = 8;
/// Bytes of an `SGOffset` (prefix sums).
pub const OFFSET_BYTES: u64 = 8;

/// Which generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphKind {
    /// GAP's `-g`: a Kronecker graph with the Graph500 initiator.
    Kron,
    /// GAP's `-u`: endpoints uniform over the vertices.
    Urand,
}

/// A neighbour entry: a vertex, or a vertex and an edge weight.
pub trait Dest: Copy + Default + Ord + Send + 'static {
    /// Whether entries carry weights.
    const WEIGHTED: bool;
    /// The entry for neighbour `v` over an edge of weight `w`.
    fn new(v: u32, w: u32) -> Self;
    /// The neighbour.
    fn v(self) -> u32;
    /// The edge weight (1 when unweighted).
    fn w(self) -> u32;
}

impl Dest for u32 {
    const WEIGHTED: bool = false;
    fn new(v: u32, _w: u32) -> u32 {
        v
    }
    fn v(self) -> u32 {
        self
    }
    fn w(self) -> u32 {
        1
    }
}

/// GAP's `NodeWeight`: ordered by vertex, then weight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct WNode {
    v: u32,
    w: u32,
}

impl Dest for WNode {
    const WEIGHTED: bool = true;
    fn new(v: u32, w: u32) -> WNode {
        WNode { v, w }
    }
    fn v(self) -> u32 {
        self.v
    }
    fn w(self) -> u32 {
        self.w
    }
}

/// Bytes of one edge-list entry.
pub fn edge_bytes(weighted: bool) -> u64 {
    if weighted { 12 } else { 8 }
}

/// Bytes of one neighbour entry.
pub fn dest_bytes(weighted: bool) -> u64 {
    if weighted { 8 } else { 4 }
}

/// What sizes the builder's allocations.
#[derive(Clone, Copy, Debug)]
pub struct BuildSizes {
    /// Vertices.
    pub n: u64,
    /// Generated (directed) edges.
    pub m: u64,
    /// Whether the graph carries weights.
    pub weighted: bool,
}

impl BuildSizes {
    /// Bytes of the edge list.
    pub fn edge_list(&self) -> u64 {
        self.m * edge_bytes(self.weighted)
    }

    /// Bytes of a per-vertex count array (`NodeID`s: degrees, kept counts).
    pub fn counts(&self) -> u64 {
        self.n * NODE_BYTES
    }

    /// Bytes of a prefix-sum array (`n + 1` offsets).
    pub fn offsets(&self) -> u64 {
        (self.n + 1) * OFFSET_BYTES
    }

    /// Bytes of an index (`n + 1` pointers).
    pub fn index(&self) -> u64 {
        (self.n + 1) * INDEX_BYTES
    }

    /// Bytes of a neighbour array of `entries` entries.
    pub fn neighbours(&self, entries: u64) -> u64 {
        entries * dest_bytes(self.weighted)
    }
}

/// Simulated addresses of the builder's allocations.
#[derive(Clone, Copy, Debug)]
pub struct BuildLayout {
    /// The edge list.
    pub el: u64,
    /// `CountDegrees`' counts.
    pub degrees: u64,
    /// `MakeCSR`'s offsets (prefix sums).
    pub offsets: u64,
    /// The unsquished neighbours.
    pub neigh: u64,
    /// The unsquished index.
    pub index: u64,
    /// `SquishCSR`'s kept counts.
    pub diffs: u64,
    /// `SquishCSR`'s offsets.
    pub sq_offsets: u64,
    /// The graph's neighbours.
    pub sq_neigh: u64,
    /// The graph's index.
    pub sq_index: u64,
}

impl BuildLayout {
    /// Makes the builder's `malloc`s and `free`s in program order (as [`build`] makes them
    /// among its references), for a graph of `entries` neighbour entries after squishing.
    pub fn plan(space: &mut impl Allocator, s: BuildSizes, entries: u64) -> BuildLayout {
        let el = space.malloc(s.edge_list());
        let degrees = space.malloc(s.counts());
        let offsets = space.malloc(s.offsets());
        let neigh = space.malloc(s.neighbours(2 * s.m));
        let index = space.malloc(s.index());
        space.free(offsets);
        space.free(degrees);
        space.free(el);
        let diffs = space.malloc(s.counts());
        let sq_offsets = space.malloc(s.offsets());
        let sq_neigh = space.malloc(s.neighbours(entries));
        let sq_index = space.malloc(s.index());
        space.free(sq_offsets);
        space.free(diffs);
        space.free(index);
        space.free(neigh);
        BuildLayout { el, degrees, offsets, neigh, index, diffs, sq_offsets, sq_neigh, sq_index }
    }
}

/// An undirected graph in CSR form: `index[u]..index[u + 1]` are `u`'s entries in `neigh`,
/// sorted by neighbour.
pub struct Csr<D> {
    /// Entry offsets (GAP stores pointers; an offset is the same 8 bytes).
    pub index: SimVec<u64>,
    /// Neighbour entries.
    pub neigh: SimVec<D>,
}

impl<D: Dest> Csr<D> {
    /// Vertices.
    pub fn vertices(&self) -> usize {
        self.index.len() - 1
    }

    /// Neighbour entries (both directions of every edge).
    pub fn entries(&self) -> usize {
        self.neigh.len()
    }

    /// `u`'s entry range, reading `index[u]` and `index[u + 1]` (GAP's `out_neigh(u)`).
    #[inline]
    pub fn bounds(&self, u: usize, e: &mut Emitter) -> (usize, usize) {
        (self.index.ld(u, e) as usize, self.index.ld(u + 1, e) as usize)
    }

    /// `u`'s neighbour entries, without emitting (for checks).
    pub fn adj(&self, u: usize) -> &[D] {
        let x = self.index.raw();
        &self.neigh.raw()[x[u] as usize..x[u + 1] as usize]
    }

    /// `u`'s degree, without emitting.
    pub fn degree(&self, u: usize) -> usize {
        let x = self.index.raw();
        (x[u + 1] - x[u]) as usize
    }
}

/// The generated edge list: `(u, v)` pairs and, for a weighted graph, weights; entry `k` at
/// `base + k × stride`.
struct EdgeList {
    pairs: Vec<(u32, u32)>,
    weights: Vec<u32>,
    base: u64,
    stride: u64,
}

impl EdgeList {
    /// Reads the endpoints of edge `k` (8 bytes).
    #[inline]
    fn ends(&self, k: usize, e: &mut Emitter) -> (u32, u32) {
        e.load(self.base + k as u64 * self.stride, 8);
        self.pairs[k]
    }

    /// Reads the whole of edge `k` (`Edge e = *it`): endpoints and weight.
    #[inline]
    fn whole(&self, k: usize, e: &mut Emitter) -> (u32, u32, u32) {
        e.load(self.base + k as u64 * self.stride, self.stride as u16);
        let (u, v) = self.pairs[k];
        (u, v, self.weights.get(k).copied().unwrap_or(1))
    }
}

/// Draws the endpoints of `m` edges over `2^scale` vertices (`kron` graphs with initiator
/// `init`).
pub fn generate(kind: GraphKind, scale: u32, m: u64, init: Initiator, rng: &mut Xoshiro256PlusPlus) -> Result<Vec<(u32, u32)>, String> {
    let pairs = match kind {
        GraphKind::Kron => kronecker::edges(scale, m, init, rng)?,
        GraphKind::Urand => {
            let mut pairs = Vec::new();
            pairs.try_reserve_exact(m as usize).map_err(|_| "cannot allocate host memory for generating the edges".to_string())?;
            let n = 1u64 << scale;
            pairs.extend((0..m).map(|_| (rng.random_range(0..n), rng.random_range(0..n))));
            pairs
        }
    };
    Ok(pairs.into_iter().map(|(u, v)| (u as u32, v as u32)).collect())
}

/// Per-generated-edge instructions of a generator.
fn generation_instructions(kind: GraphKind, scale: u32) -> u64 {
    match kind {
        GraphKind::Kron => GEN_BIT_INSTRUCTIONS * u64::from(scale),
        GraphKind::Urand => 2 * GEN_BIT_INSTRUCTIONS,
    }
}

/// Builds the graph as GAP's builder does, its arrays allocated from `e`, emitting the
/// generator's stores (each edge once; the Kronecker relabelling pass is not emitted) and
/// every access of the construction.
pub fn build<D: Dest>(kind: GraphKind, scale: u32, pairs: Vec<(u32, u32)>, rng: &mut Xoshiro256PlusPlus, e: &mut Emitter) -> Result<Csr<D>, String> {
    let n = 1usize << scale;
    let stride = edge_bytes(D::WEIGHTED);
    let s = BuildSizes { n: n as u64, m: pairs.len() as u64, weighted: D::WEIGHTED };
    let mut el = EdgeList { pairs, weights: Vec::new(), base: e.malloc(s.edge_list()), stride };
    for k in 0..el.pairs.len() {
        e.store(el.base + k as u64 * stride, 8);
    }
    let m = el.pairs.len();
    e.instructions(generation_instructions(kind, scale) * m as u64);
    let mut max = 0;
    for k in 0..m {
        let (u, v) = el.ends(k, e);
        max = max.max(u).max(v);
    }
    e.instructions(EDGE_PASS_INSTRUCTIONS * m as u64);
    if max as usize >= n {
        return Err(format!("vertex {max} is out of range"));
    }
    if D::WEIGHTED {
        el.weights = (0..m).map(|_| rng.random_range(1..=255)).collect();
        for k in 0..m {
            e.store(el.base + k as u64 * stride + 8, 4);
        }
        e.instructions(EDGE_PASS_INSTRUCTIONS * m as u64);
    }
    let (index, neigh) = make_csr::<D>(&el, n, s, e)?;
    e.free(el.base);
    drop(el);
    squish(&index, neigh, s, e)
}

/// `CountDegrees`, `ParallelPrefixSum`, `GenIndex` and the scatter of `MakeCSR`; the
/// offsets and degrees are freed at its end.
fn make_csr<D: Dest>(el: &EdgeList, n: usize, s: BuildSizes, e: &mut Emitter) -> Result<(SimVec<u64>, SimVec<D>), String> {
    let m = el.pairs.len();
    let mut degrees = SimVec::filled(e.malloc(s.counts()), n, 0u32, "the degree counts")?;
    for v in 0..n {
        degrees.st(v, 0, e);
    }
    for k in 0..m {
        let (u, v) = el.ends(k, e);
        for x in [u as usize, v as usize] {
            let d = degrees.ld(x, e);
            degrees.st(x, d + 1, e);
        }
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64 + EDGE_PASS_INSTRUCTIONS * m as u64);
    let mut offsets = prefix_sum(&degrees, e.malloc(s.offsets()), e)?;
    let mut neigh = SimVec::filled(e.malloc(s.neighbours(2 * m as u64)), 2 * m, D::default(), "the unsquished neighbours")?;
    let index = gen_index(&offsets, e.malloc(s.index()), e)?;
    for k in 0..m {
        let (u, v, w) = el.whole(k, e);
        for (a, b) in [(u as usize, v), (v as usize, u)] {
            let p = offsets.ld(a, e);
            offsets.st(a, p + 1, e);
            neigh.st(p as usize, D::new(b, w), e);
        }
    }
    e.instructions(EDGE_PASS_INSTRUCTIONS * m as u64);
    e.free(offsets.addr(0));
    e.free(degrees.addr(0));
    Ok((index, neigh))
}

/// `ParallelPrefixSum`: `out[v]` is the sum of `counts[..v]`, `out[n]` the total (a load and a
/// store per vertex).
pub fn prefix_sum(counts: &SimVec<u32>, addr: u64, e: &mut Emitter) -> Result<SimVec<u64>, String> {
    let n = counts.len();
    let mut out = SimVec::filled(addr, n + 1, 0u64, "the prefix sums")?;
    let mut acc = 0;
    for v in 0..n {
        out.st(v, acc, e);
        acc += u64::from(counts.ld(v, e));
    }
    out.st(n, acc, e);
    e.instructions(VERTEX_PASS_INSTRUCTIONS * n as u64);
    Ok(out)
}

/// `GenIndex`: the index (pointers into the neighbour array) from the offsets.
pub fn gen_index(offsets: &SimVec<u64>, addr: u64, e: &mut Emitter) -> Result<SimVec<u64>, String> {
    let mut index = SimVec::filled(addr, offsets.len(), 0u64, "the CSR index")?;
    for v in 0..offsets.len() {
        let o = offsets.ld(v, e);
        index.st(v, o, e);
    }
    e.instructions(VERTEX_PASS_INSTRUCTIONS * offsets.len() as u64);
    Ok(index)
}

/// Sorts `list`, drops duplicate neighbours (keeping the lightest weight) and entries equal
/// to `own` (self-loops); returns the count kept, at the front.
pub fn sort_dedup<D: Dest>(list: &mut [D], own: u32) -> usize {
    list.sort_unstable();
    let mut kept = 0;
    for k in 0..list.len() {
        let x = list[k];
        if x.v() != own && (kept == 0 || list[kept - 1].v() != x.v()) {
            list[kept] = x;
            kept += 1;
        }
    }
    kept
}

/// `SquishCSR`: per vertex sort, deduplicate and drop self-loops, then copy into an exactly
/// sized CSR; the old one is freed.
fn squish<D: Dest>(index: &SimVec<u64>, mut neigh: SimVec<D>, s: BuildSizes, e: &mut Emitter) -> Result<Csr<D>, String> {
    let n = index.len() - 1;
    let mut diffs = SimVec::filled(e.malloc(s.counts()), n, 0u32, "the squished degrees")?;
    for u in 0..n {
        let (s, t) = (index.ld(u, e) as usize, index.ld(u + 1, e) as usize);
        let kept = sort_dedup(&mut neigh.raw_mut()[s..t], u as u32);
        for k in s..t {
            e.load(neigh.addr(k), dest_bytes(D::WEIGHTED) as u16);
            e.store(neigh.addr(k), dest_bytes(D::WEIGHTED) as u16);
        }
        diffs.st(u, kept as u32, e);
        e.instructions(VERTEX_PASS_INSTRUCTIONS + SORT_INSTRUCTIONS * (t - s) as u64);
    }
    let sq_offsets = prefix_sum(&diffs, e.malloc(s.offsets()), e)?;
    let total = sq_offsets.raw()[n] as usize;
    let mut sq_neigh = SimVec::filled(e.malloc(s.neighbours(total as u64)), total, D::default(), "the neighbours")?;
    let sq_index = gen_index(&sq_offsets, e.malloc(s.index()), e)?;
    for u in 0..n {
        let s = index.ld(u, e) as usize;
        let dst = sq_index.ld(u, e) as usize;
        let kept = diffs.ld(u, e) as usize;
        for k in 0..kept {
            let x = neigh.ld(s + k, e);
            sq_neigh.st(dst + k, x, e);
        }
        e.instructions(VERTEX_PASS_INSTRUCTIONS + EDGE_PASS_INSTRUCTIONS * kept as u64);
    }
    for array in [sq_offsets.addr(0), diffs.addr(0), index.addr(0), neigh.addr(0)] {
        e.free(array);
    }
    Ok(Csr { index: sq_index, neigh: sq_neigh })
}
